"""Every example program (examples/*.ac) called from Python on the
interpreter, the CPU backend and the SIMT emulator, with the arguments of
examples/README.md, gives exactly what the C API gives: arrayc-run, which
calls through ac_function_call, writes its results as .npy files (-o) and
they are compared bit for bit (dtype, shape and values)."""
import glob
import os
import subprocess

import numpy as np
import pytest

import arrayc

# example -> (function, arguments as arrayc-run takes them, as NumPy values)
f32, i32, u8 = np.float32, np.int32, np.uint8
CALLS = {
    "dotp": ("dotp", [("[1,2,3]", np.array([1, 2, 3], f32)),
                      ("[4,5,6]", np.array([4, 5, 6], f32))]),
    "forward_diff": ("forward_diff", [("[1,4,9,16,25]", np.array([1, 4, 9, 16, 25], f32))]),
    "smvm": ("smvm", [("[1,2,3,4,5,6]", np.arange(1, 7, dtype=f32)),
                      ("[0,2,1,0,1,2]", np.array([0, 2, 1, 0, 1, 2], i32)),
                      ("[2,1,3]", np.array([2, 1, 3], i32)),
                      ("[1,2,3]", np.array([1, 2, 3], f32))]),
    "blackscholes": ("blackscholes", [("[100,50,30]", np.array([100, 50, 30], f32)),
                                      ("[100,60,25]", np.array([100, 60, 25], f32)),
                                      ("[1,0.5,2]", np.array([1, 0.5, 2], f32)),
                                      ("0.02", f32(0.02)), ("0.3", f32(0.3))]),
    "edit_distance": ("edit_distance", [("[107,105,116,116,101,110]",
                                         np.frombuffer(b"kitten", u8)),
                                        ("[115,105,116,116,105,110,103]",
                                         np.frombuffer(b"sitting", u8))]),
}
# the GPU too where this machine has one
BACKENDS = ["interp", "cpu", "simt-emu"] + (["gpu"] if "gpu" in arrayc.backends() else [])


def test_every_example_is_covered(source):
    found = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(source, "examples",
                                                                           "*.ac")))
    assert found == sorted(CALLS)


def c_api_results(build, path, fn, args, backend, nresults, tmp_path):
    outs = [str(tmp_path / ("r%d.npy" % i)) for i in range(nresults)]
    cmd = [os.path.join(build, "arrayc-run"), "--backend=" + backend, path, "--fn", fn]
    cmd += [a for a, _ in args]
    for o in outs:
        cmd += ["-o", o]
    subprocess.run(cmd, check=True)
    return [np.load(o) for o in outs]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("example", sorted(CALLS))
def test_example_equals_c_api(build, source, tmp_path, example, backend):
    fn, args = CALLS[example]
    path = os.path.join(source, "examples", example + ".ac")
    m = arrayc.compile_file(path, backend=backend)
    assert m.backend == backend
    got = getattr(m, fn)(*[v for _, v in args])
    got = list(got) if isinstance(got, tuple) else [got]
    want = c_api_results(build, path, fn, args, backend, len(got), tmp_path)
    for g, w in zip(got, want):
        g = np.asarray(g)
        assert g.dtype == w.dtype and g.shape == w.shape
        assert g.tobytes() == w.tobytes(), (g, w)


def test_blackscholes_values():
    """The README's numbers, independently of arrayc-run."""
    fn, args = CALLS["blackscholes"]
    m = arrayc.compile_file(os.path.join(os.environ.get("ARRAYC_SOURCE", "."), "examples",
                                         "blackscholes.ac"), backend="cpu")
    call, put = m.blackscholes(*[v for _, v in args])
    np.testing.assert_allclose(call, [12.821564, 1.3552389, 8.124655], rtol=1e-5)
    np.testing.assert_allclose(put, [10.841427, 10.758228, 2.1443906], rtol=1e-5)
