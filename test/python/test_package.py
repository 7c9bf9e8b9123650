"""The package's behaviour: arguments (zero copy, dtype and order checks,
cast=True), results (NumPy arrays, tuples, scalars, arrayc.Array left on the
device), errors (type and position), ahead-of-time libraries through their
manifest, backends() and version()."""
import gc
import os
import subprocess

import numpy as np
import pytest

import arrayc
from arrayc import _capi

SAXPY = """fn saxpy(a: f32, x: f32[], y: f32[]) -> f32[] {
  map(|u, v| a * u + v, x, y)
}
fn both(x: f32[]) -> (f32[], i64) { (map(|u| u + 1.0, x), 7) }
fn pair(p: (f32, i32), x: f32[,]) -> f32[,] { map(|u| u * p.0 + f32(p.1), x) }
fn flag(b: bool, k: u8) -> u8 { if b { k } else { 0u8 } }
"""
BACKENDS = ["interp", "cpu", "simt-emu"]


class Spy:
    """Wraps ac_function_call (and the host reads) of the loaded library to
    see what reaches the runtime: each array argument's handle and the data
    pointer the runtime reports for it (ac_array_data)."""

    def __init__(self, monkeypatch):
        self.calls, self.reads = [], 0
        real_call, real_data, real_read = (_capi.lib.ac_function_call, _capi.lib.ac_array_data,
                                           _capi.lib.ac_array_read)

        def call(f, args, nargs, results, nresults, err):
            seen = []
            for i in range(nargs):
                if args[i].kind == _capi.DATUM["AC_DATUM_ARRAY"]:
                    seen.append((args[i].array, real_data(args[i].array)))
            self.calls.append(seen)
            return real_call(f, args, nargs, results, nresults, err)

        def data(a):
            self.reads += 1
            return real_data(a)

        def read(*a):
            self.reads += 1
            return real_read(*a)

        monkeypatch.setattr(_capi.lib, "ac_function_call", call)
        monkeypatch.setattr(_capi.lib, "ac_array_data", data)
        monkeypatch.setattr(_capi.lib, "ac_array_read", read)


@pytest.mark.parametrize("backend", BACKENDS)
def test_saxpy(backend):
    m = arrayc.compile(SAXPY, backend=backend, resident=False)
    x = np.arange(5, dtype=np.float32)
    y = np.full(5, 0.5, dtype=np.float32)
    r = m.saxpy(np.float32(2), x, y)
    assert isinstance(r, np.ndarray) and r.dtype == np.float32
    assert r.tolist() == [0.5, 2.5, 4.5, 6.5, 8.5]
    assert m.saxpy(2.0, x, y).tolist() == r.tolist()  # a Python float for an f32


def test_the_readme_line():
    m = arrayc.compile("fn f(x: f32[]) -> f32 { fold(|a, b| a + b, 0.0, x) }")
    r = m.f(np.arange(4, dtype=np.float32))
    assert type(r) is np.float32 and str(r) == "6.0"


@pytest.mark.parametrize("backend", BACKENDS)
def test_inputs_are_not_copied(backend, monkeypatch):
    m = arrayc.compile(SAXPY, backend=backend)
    spy = Spy(monkeypatch)
    x = np.arange(6, dtype=np.float32)
    y = np.ones(6, dtype=np.float32)
    before = len(arrayc._context().borrowed)
    m.saxpy(np.float32(3), x, y)
    # the runtime sees the NumPy buffers themselves
    assert [p for _, p in spy.calls[0]] == [x.ctypes.data, y.ctypes.data]
    # and releases them after the call (the borrowed array's release callback)
    gc.collect()
    assert len(arrayc._context().borrowed) == before


def test_cast_copies_and_says_so(monkeypatch):
    m = arrayc.compile(SAXPY, backend="cpu")
    spy = Spy(monkeypatch)
    x64 = np.arange(4, dtype=np.float64)
    strided = np.arange(8, dtype=np.float32)[::2]
    y = np.zeros(4, dtype=np.float32)
    with pytest.raises(TypeError, match=r"parameter 'x' of saxpy\(\) has dtype float64, expects f32"):
        m.saxpy(np.float32(1), x64, y)
    with pytest.raises(TypeError, match=r"parameter 'y' of saxpy\(\) is not C-contiguous"):
        m.saxpy(np.float32(1), y, strided)
    with pytest.raises(TypeError, match=r"parameter 'a' of saxpy\(\) expects f32, got float64"):
        m.saxpy(np.float64(1), y, y)
    with pytest.raises(TypeError, match=r"parameter 'x' of saxpy\(\) expects a NumPy array"):
        m.saxpy(np.float32(1), [1, 2, 3, 4], y)
    with pytest.raises(TypeError, match=r"parameter 'x' of saxpy\(\) expects 1 dimension"):
        m.saxpy(np.float32(1), np.zeros((2, 2), np.float32), y, cast=True)
    with pytest.raises(TypeError, match=r"saxpy\(\) takes 3 arguments"):
        m.saxpy(x64, y)
    assert spy.calls == []  # nothing reached the runtime
    r = m.saxpy(np.float64(2), x64, strided, cast=True)
    assert r.tolist() == [0.0, 4.0, 8.0, 12.0]
    ptrs = [p for _, p in spy.calls[0]]
    assert x64.ctypes.data not in ptrs and strided.ctypes.data not in ptrs
    assert m.saxpy(1, [1, 2], [3, 4], cast=True).tolist() == [4.0, 6.0]


@pytest.mark.parametrize("backend", BACKENDS)
def test_tuples_scalars_and_ranks(backend):
    m = arrayc.compile(SAXPY, backend=backend, resident=False)
    a, n = m.both(np.array([1, 2], np.float32))
    assert a.tolist() == [2.0, 3.0] and type(n) is np.int64 and n == 7
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    r = m.pair((np.float32(2), np.int32(1)), x)
    assert r.shape == (2, 3) and r.tolist() == [[1.0, 3.0, 5.0], [7.0, 9.0, 11.0]]
    with pytest.raises(TypeError, match=r"parameter 'p' of pair\(\) is a \(f32, i32\)"):
        m.pair(np.float32(2), x)
    assert m.flag(True, np.uint8(9)) == 9 and m.flag(False, 9) == 0
    with pytest.raises(TypeError, match=r"parameter 'k' of flag\(\): 300 does not fit in u8"):
        m.flag(True, 300)
    with pytest.raises(TypeError, match=r"parameter 'b' of flag\(\) expects bool, got int"):
        m.flag(1, 2)
    assert m.pair.params == [("p", "(f32, i32)"), ("x", "f32[,]")]
    assert m.pair.result_type == "f32[,]"


@pytest.mark.parametrize("backend", ["simt-emu"] + (["gpu"] if "gpu" in arrayc.backends()
                                                     else []))
def test_device_arrays_stay_until_read(backend, monkeypatch):
    """On the GPU, where there is one, and the SIMT emulator (arrays kept as
    on a GPU) a result is an
    arrayc.Array that the package does not read back (the Spy counts the
    package's ac_array_data and ac_array_read, not its own) until asked,
    and that goes to the next call as the same ac_array."""
    m = arrayc.compile(SAXPY, backend=backend)
    x = np.arange(4, dtype=np.float32)
    spy = Spy(monkeypatch)
    r = m.saxpy(np.float32(2), x, x)
    assert isinstance(r, arrayc.Array)
    assert r.shape == (4,) and r.dtype == np.float32 and r.ndim == 1 and len(r) == 4
    r2 = m.saxpy(np.float32(1), r, r)
    assert [h for h, _ in spy.calls[1]] == [r._h.value, r._h.value]
    assert spy.reads == 0
    assert np.asarray(r2).tolist() == [0.0, 6.0, 12.0, 18.0]
    assert spy.reads == 1
    assert r.numpy().tolist() == [0.0, 3.0, 6.0, 9.0]
    assert r.__array_interface__["shape"] == (4,) and np.array(r, dtype=np.float64)[3] == 9.0
    assert not r.numpy().flags.writeable  # arrays are immutable once shared


def test_resident_on_cpu_on_request():
    m = arrayc.compile(SAXPY, backend="cpu", resident=True)
    r = m.saxpy(np.float32(1), np.ones(3, np.float32), np.ones(3, np.float32))
    assert isinstance(r, arrayc.Array) and np.asarray(r).tolist() == [2.0, 2.0, 2.0]
    with pytest.raises(TypeError, match=r"expects f32\[\], got an arrayc.Array of"):
        ints = arrayc.compile("fn g() -> i32[] { [1, 2, 3] }", backend="cpu", resident=True)
        m.saxpy(np.float32(1), ints.g(), r)


def test_compile_error_has_position():
    with pytest.raises(arrayc.CompileError) as e:
        arrayc.compile("fn f(x: f32) -> f32 {\n  x + y\n}", filename="bad.ac")
    assert (e.value.file, e.value.line, e.value.column) == ("bad.ac", 2, 7)
    assert e.value.status == "AC_ERR_TYPE"
    assert e.value.text == "bad.ac:2:7: error: unknown name 'y'\n  x + y\n      ^\n"
    with pytest.raises(arrayc.CompileError) as e:
        arrayc.compile("fn f(x: f32) -> f32 {\n  x +\n}")
    assert e.value.status == "AC_ERR_SYNTAX" and e.value.line == 3


def test_compile_file_names_the_file(tmp_path):
    p = tmp_path / "prog.ac"
    p.write_text("fn f() -> i32 {\n  1 + true\n}\n")
    with pytest.raises(arrayc.CompileError) as e:
        arrayc.compile_file(p)
    assert e.value.file == str(p) and e.value.line == 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_runtime_error_has_position(backend):
    m = arrayc.compile("fn g(x: f32[], i: i32[]) -> f32[] {\n  gather(i, x)\n}",
                       backend=backend, filename="g.ac")
    with pytest.raises(arrayc.RuntimeError) as e:
        m.g(np.arange(3, dtype=np.float32), np.array([0, 5], np.int32))
    assert isinstance(e.value, RuntimeError)  # the builtin too
    assert (e.value.file, e.value.line, e.value.column) == ("g.ac", 2, 3)
    assert "index 5 out of bounds" in e.value.message
    assert e.value.text.endswith("  gather(i, x)\n  ^\n")
    # nothing is left borrowed after a failed call
    gc.collect()
    assert arrayc._context().borrowed == {}


def test_unknown_function_and_backend():
    m = arrayc.compile(SAXPY, backend="interp")
    with pytest.raises(AttributeError, match="has no function 'nope'"):
        m.nope
    with pytest.raises(ValueError, match="unknown backend 'tpu'"):
        arrayc.compile(SAXPY, backend="tpu")
    assert sorted(m.functions) == ["both", "flag", "pair", "saxpy"]


def test_backends_and_version(build):
    b = arrayc.backends()
    assert {"interp", "cpu", "simt-emu"} <= set(b)
    assert set(b) <= {"interp", "cpu", "simt-emu", "gpu"}
    out = subprocess.run([os.path.join(build, "arrayc"), "--version"], stdout=subprocess.PIPE,
                         universal_newlines=True, check=True).stdout
    assert arrayc.version().split()[0] == arrayc.__version__
    assert arrayc.version() in out
    m = arrayc.compile(SAXPY, backend="auto")
    assert m.backend == ("gpu" if "gpu" in b else "cpu")


def test_the_scalar_table_is_the_headers():
    """Read from core.h by name, and the library agrees (ac_scalar_name)."""
    assert arrayc.SCALARS["f32"][1] == np.float32 and arrayc.SCALARS["bool"][1] == np.bool_
    for name, (value, dtype) in arrayc.SCALARS.items():
        assert _capi.lib.ac_scalar_name(value).decode() == name
        assert _capi.lib.ac_scalar_size(value) == dtype.itemsize


def test_load_a_library_through_its_manifest(build, source, tmp_path):
    prefix = str(tmp_path / "libbs")
    subprocess.run([os.path.join(build, "arrayc"), "--target=cpu", "--shared",
                    "--emit=obj,header,manifest", os.path.join(source, "examples",
                                                               "blackscholes.ac"),
                    "-o", prefix], check=True)
    m = arrayc.load(prefix + ".so")
    assert m.backend == "cpu" and m.manifest["prefix"] == "libbs"
    assert "blackscholes" in m.functions
    f = np.float32
    call, put = m.blackscholes(np.array([100, 50, 30], f), np.array([100, 60, 25], f),
                               np.array([1, 0.5, 2], f), f(0.02), f(0.3))
    c = arrayc.compile_file(os.path.join(source, "examples", "blackscholes.ac"), backend="cpu")
    want = c.blackscholes(np.array([100, 50, 30], f), np.array([100, 60, 25], f),
                          np.array([1, 0.5, 2], f), f(0.02), f(0.3))
    assert call.tobytes() == want[0].tobytes() and put.tobytes() == want[1].tobytes()
    with pytest.raises(TypeError, match=r"parameter 'r' of blackscholes\(\) expects f32"):
        m.blackscholes(np.array([1], f), np.array([1], f), np.array([1], f), np.float64(0.1),
                       f(0.3))
    with pytest.raises(FileNotFoundError):
        arrayc.load(str(tmp_path / "missing.so"))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_function_outlives_its_module(backend):
    """A Function keeps its module's ac_module (and a loaded library) alive:
    the Module object may go first."""
    f = arrayc.compile(SAXPY, backend=backend, resident=False).saxpy
    gc.collect()
    x = np.arange(3, dtype=np.float32)
    assert f(np.float32(2), x, x).tolist() == [0.0, 3.0, 6.0]
    del f
    gc.collect()
    r = arrayc.compile(SAXPY, backend=backend).both(x)[0]
    gc.collect()
    assert np.asarray(r).tolist() == [1.0, 2.0, 3.0]  # an array outlives its function


@pytest.mark.parametrize("backend", BACKENDS)
def test_bool_and_integer_arrays(backend):
    m = arrayc.compile("fn pick(b: bool[], k: u16[], n: i64) -> (u16[], bool[]) {\n"
                       "  (map(|x, y| if x { y } else { u16(n) }, b, k), map(|x| !x, b))\n}",
                       backend=backend, resident=False)
    b = np.array([True, False, True])
    k = np.array([7, 8, 65535], np.uint16)
    r, nb = m.pick(b, k, -1)
    assert r.dtype == np.uint16 and r.tolist() == [7, 65535, 65535]
    assert nb.dtype == np.bool_ and nb.tolist() == [False, True, False]
    with pytest.raises(TypeError, match=r"parameter 'b' of pick\(\) has dtype uint8, expects bool"):
        m.pick(b.view(np.uint8), k, 0)
