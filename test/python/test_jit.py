"""@arrayc.jit: Python functions in arrayc's subset, compiled per signature
and checked against NumPy on every backend that runs here (docs/python.md §7).
The functions under test are plain module-level defs, wrapped per backend."""
import math

import numpy as np
import pytest

import arrayc

BACKENDS = [b for b in ("interp", "cpu", "simt-emu", "gpu") if b in arrayc.backends()]
RNG = np.random.default_rng(7)


def jit_on(backend, fn):
    return arrayc.jit(fn, backend=backend)


def arr(x):
    return np.asarray(x)  # an arrayc.Array (resident results) or NumPy


# ---- the five programs the issue names ------------------------------------------------
def saxpy(a, x, y):
    return arrayc.map(lambda xi, yi: a * xi + yi, x, y)


def dot(x, y):
    return arrayc.fold(lambda s, t: s + t, 0, arrayc.map(lambda a, b: a * b, x, y))


def dot_builtins(x, y):
    # Copperhead's style: Python's own map and sum
    return sum(map(lambda a, b: a * b, x, y))


@arrayc.jit
def cnd(d):
    """The standard normal distribution function."""
    return 0.5 * (1.0 + math.erf(d / math.sqrt(2.0)))


def black_scholes(S, X, T, r, v):
    def price(s, x, t):
        sq = math.sqrt(t)
        d1 = (math.log(s / x) + (r + 0.5 * v * v) * t) / (v * sq)
        d2 = d1 - v * sq
        e = math.exp(-r * t)
        return s * cnd(d1) - x * e * cnd(d2), x * e * cnd(-d2) - s * cnd(-d1)
    return arrayc.map(price, S, X, T)


def spmv_csr(vals, cols, starts, lens, x):
    # Copperhead's Figure 1: a sparse vector-vector product per row, mapped
    # over the rows (here over CSR's flat arrays: row i is starts[i] ..
    # starts[i] + lens[i])
    def spvv(s, n):
        return sum(map(lambda k: vals[k] * x[cols[k]], range(s, s + n)))
    return map(spvv, starts, lens)


def spmv_seg(vals, cols, lens, x):
    return arrayc.fold_seg(lambda a, b: a + b, 0, arrayc.map(lambda v, c: v * x[c], vals, cols),
                           lens)


def jacobi(g):
    return arrayc.stencil(lambda w: 0.2 * (w[0, 0] + w[-1, 0] + w[1, 0] + w[0, -1] + w[0, 1]),
                          0, g)


def bs_numpy(S, X, T, r, v):
    erf = np.vectorize(math.erf)
    S, X, T = (a.astype(np.float64) for a in (S, X, T))
    c = lambda d: 0.5 * (1 + erf(d / math.sqrt(2)))  # noqa: E731
    d1 = (np.log(S / X) + (r + 0.5 * v * v) * T) / (v * np.sqrt(T))
    d2 = d1 - v * np.sqrt(T)
    e = np.exp(-r * T)
    return S * c(d1) - X * e * c(d2), X * e * c(-d2) - S * c(-d1)


def csr(rows, ncols, per_row):
    lens = RNG.integers(0, 2 * per_row, rows).astype(np.int64)
    starts = np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(np.int64)
    nnz = int(lens.sum())
    cols = RNG.integers(0, ncols, nnz).astype(np.int64)
    vals = RNG.standard_normal(nnz).astype(np.float32)
    dense = np.zeros((rows, ncols))
    for i in range(rows):
        for k in range(starts[i], starts[i] + lens[i]):
            dense[i, cols[k]] += vals[k]
    return vals, cols, starts, lens, dense


@pytest.mark.parametrize("backend", BACKENDS)
def test_saxpy(backend):
    f = jit_on(backend, saxpy)
    x, y = RNG.standard_normal(1000).astype(np.float32), RNG.standard_normal(1000).astype(
        np.float32)
    out = arr(f(np.float32(2.5), x, y))
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, np.float32(2.5) * x + y)
    # a second signature is a second specialisation; the first is reused
    xd, yd = x.astype(np.float64), y.astype(np.float64)
    np.testing.assert_allclose(arr(f(2.5, xd, yd)), 2.5 * xd + yd, rtol=1e-15)
    f(np.float32(1), x, y)
    assert f.signatures == [("f32", "f32[]", "f32[]"), ("f64", "f64[]", "f64[]")]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [dot, dot_builtins])
def test_dot(backend, fn):
    f = jit_on(backend, fn)
    x, y = RNG.standard_normal(5000).astype(np.float32), RNG.standard_normal(5000).astype(
        np.float32)
    got = f(x, y)
    assert isinstance(got, np.float32)
    assert got == pytest.approx(float(np.dot(x.astype(np.float64), y)), rel=1e-4)
    xi = np.arange(100, dtype=np.int32)
    assert f(xi, xi) == int(np.dot(xi, xi))


@pytest.mark.parametrize("backend", BACKENDS)
def test_black_scholes(backend):
    f = jit_on(backend, black_scholes)
    n = 4096
    S = RNG.uniform(5, 30, n).astype(np.float32)
    X = RNG.uniform(1, 100, n).astype(np.float32)
    T = RNG.uniform(0.25, 10, n).astype(np.float32)
    call, put = f(S, X, T, np.float32(0.02), np.float32(0.3))
    rc, rp = bs_numpy(S, X, T, 0.02, 0.3)
    np.testing.assert_allclose(arr(call), rc, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(arr(put), rp, rtol=1e-3, atol=1e-3)
    c64, p64 = f(S.astype(np.float64), X.astype(np.float64), T.astype(np.float64), 0.02, 0.3)
    np.testing.assert_allclose(arr(c64), rc, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(arr(p64), rp, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_spmv(backend):
    vals, cols, starts, lens, dense = csr(300, 200, 8)
    x = RNG.standard_normal(200).astype(np.float32)
    want = dense @ x.astype(np.float64)
    got = arr(jit_on(backend, spmv_csr)(vals, cols, starts, lens, x))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    got = arr(jit_on(backend, spmv_seg)(vals, cols, lens, x))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("backend", BACKENDS)
def test_stencil(backend):
    g = RNG.standard_normal((67, 45)).astype(np.float32)
    p = np.pad(g, 1)
    want = 0.2 * (p[1:-1, 1:-1] + p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:])
    np.testing.assert_allclose(arr(jit_on(backend, jacobi)(g)), want, rtol=1e-5, atol=1e-6)


# ---- the rest of the subset ----------------------------------------------------------------
def sign(x):
    if x > 0:
        return 1
    elif x < 0:
        return -1
    y = x * 2
    if y == 0:
        y = 7
    else:
        y += 1
    return y


def classify(xs, lo, hi):
    return map(lambda x: 2 if lo <= x < hi else (1 if x >= hi and not x == 99 else 0), xs)


def swap_scale(p, k):
    a, b = p
    t = (b * k, a)
    return t[0], t[1] * 2


SCALE = 3


def constants(xs):
    return map(lambda x: x * SCALE + math.pi, xs)


def ops_tour(xs, idx):
    n = len(xs)
    ys = arrayc.scan(lambda a, b: a + b, 0, xs)
    evens = filter(lambda x: x % 2 == 0, xs)
    g = arrayc.gather(idx, xs)
    s = arrayc.scatter(idx, map(lambda k: k * 10, idx), xs)
    it = arrayc.iterate(3, lambda v: map(lambda x: x + 1, v), xs)
    w = arrayc.while_(lambda v: v < 1000, lambda v: v * 2, 1)
    gen = arrayc.generate(n, lambda i: i * i)
    mx, mn = max(xs), min(xs)
    return ys, evens, g, s, it, w, gen, mx, mn, xs[-1], xs[1:-1], xs.shape[0]


def local_functions(xs):
    sq = lambda v: v * v  # noqa: E731

    def norm(v, w):
        return math.sqrt(sq(v) + sq(w))
    return map(norm, xs, map(lambda v: v + 1.0, xs))


def two_dims(m):
    rows, cols = m.shape
    return m.T, m[1:, :2], m[rows - 1, cols - 1], arrayc.sum(m), m[::2], m[-1, -2]


def unicode_names(x):
    δ = x * 2  # arrayc's names are ASCII: spelt by code point
    return δ + 1


def three(x):
    return x * 3


def calls_jit(xs):
    return map(jitted_three, xs)


jitted_three = arrayc.jit(three)


def clamp_code(x, lo, hi):
    if x < lo:
        a = lo
        code = 0
    elif x > hi:
        a = hi
        code = 1
    else:
        a = x
        code = 2
    return a, code


@pytest.mark.parametrize("backend", BACKENDS)
def test_control_flow(backend):
    f = jit_on(backend, sign)
    assert [f(v) for v in (5, -5, 0)] == [1, -1, 7]
    assert f(np.int32(-3)) == -1 and isinstance(f(np.int32(-3)), np.int32)
    g = jit_on(backend, classify)
    xs = np.array([-1, 0, 3, 5, 9, 99, 100], dtype=np.int32)
    np.testing.assert_array_equal(arr(g(xs, np.int32(0), np.int32(5))),
                                  [0, 2, 2, 1, 1, 0, 1])
    c = jit_on(backend, clamp_code)
    assert [c(v, np.int16(0), np.int16(9)) for v in map(np.int16, (-4, 12, 5))] == [
        (0, 0), (9, 1), (5, 2)]
    assert isinstance(c(np.int16(1), np.int16(0), np.int16(9))[0], np.int16)


def test_closure_constants():
    scale, offset = 2.5, np.float32(1)

    @arrayc.jit(backend="cpu")
    def affine(xs):
        return map(lambda x: x * scale + offset, xs)
    xs = np.arange(3, dtype=np.float32)
    np.testing.assert_array_equal(affine(xs), xs * np.float32(2.5) + 1)
    assert "x * 2.5) + 1.0f32" in affine.source(xs)


@pytest.mark.parametrize("backend", BACKENDS)
def test_tuples_constants_locals(backend):
    got = jit_on(backend, swap_scale)((np.int32(2), 5.0), 2.0)
    assert got == (10.0, 4) and isinstance(got[1], np.int32)
    xs = np.array([1.0, 2.0])
    np.testing.assert_allclose(arr(jit_on(backend, constants)(xs)), xs * 3 + math.pi)
    np.testing.assert_allclose(arr(jit_on(backend, local_functions)(xs)),
                               np.sqrt(xs * xs + (xs + 1) ** 2))
    np.testing.assert_array_equal(arr(jit_on(backend, calls_jit)(np.arange(3))), [0, 3, 6])


@pytest.mark.parametrize("backend", BACKENDS)
def test_operations(backend):
    xs = np.array([5, 2, 8, 3, 6], dtype=np.int64)
    idx = np.array([4, 0], dtype=np.int64)
    ys, evens, g, s, it, w, gen, mx, mn, last, mid, n = jit_on(backend, ops_tour)(xs, idx)
    np.testing.assert_array_equal(arr(ys), [0, 5, 7, 15, 18])
    np.testing.assert_array_equal(arr(evens), [2, 8, 6])
    np.testing.assert_array_equal(arr(g), [6, 5])
    np.testing.assert_array_equal(arr(s), [0, 2, 8, 3, 40])
    np.testing.assert_array_equal(arr(it), xs + 3)
    assert (w, mx, mn, last, n) == (1024, 8, 2, 6, 5)
    np.testing.assert_array_equal(arr(gen), [0, 1, 4, 9, 16])
    np.testing.assert_array_equal(arr(mid), [2, 8, 3])
    m = np.arange(12, dtype=np.float32).reshape(3, 4)
    t, sub, corner, rowsums, every_other_row, last = jit_on(backend, two_dims)(m)
    np.testing.assert_array_equal(arr(t), m.T)
    np.testing.assert_array_equal(arr(sub), m[1:, :2])
    assert corner == 11 and last == m[-1, -2]
    np.testing.assert_array_equal(arr(rowsums), m.sum(axis=1))
    np.testing.assert_array_equal(arr(every_other_row), m[::2])
    assert jit_on(backend, unicode_names)(4) == 9


def test_non_contiguous_and_resident():
    f = arrayc.jit(saxpy, backend="cpu")
    x = np.arange(20, dtype=np.float32)[::2]  # a strided view: copied
    np.testing.assert_array_equal(f(np.float32(2), x, x), 3 * x)
    if "simt-emu" in BACKENDS:
        e = arrayc.jit(saxpy, backend="simt-emu")
        r = e(np.float32(1), x, x)
        assert isinstance(r, arrayc.Array)
        r2 = e(np.float32(1), r, r)  # an Array passed back, no copy
        np.testing.assert_array_equal(np.asarray(r2), 4 * x)


def test_source_and_signature():
    f = arrayc.jit(saxpy)
    text = f.source(np.float32(1), np.zeros(2, np.float32), np.zeros(2, np.float32))
    assert text.startswith("fn saxpy(a: f32, x: f32[], y: f32[]) -> _ {")
    assert "map(|xi, yi|" in text
    with pytest.raises(TypeError, match=r"argument 2 \(x\) of saxpy\(\).*list"):
        f(np.float32(1), [1.0], np.zeros(1, np.float32))
    with pytest.raises(TypeError, match="dtype complex128"):
        f(np.float32(1), np.zeros(1, np.complex128), np.zeros(1, np.float32))
    with pytest.raises(TypeError, match="takes 3 arguments, got 2"):
        f(np.float32(1), np.zeros(1, np.float32))
    with pytest.raises(TypeError, match="inside an @arrayc.jit function"):
        arrayc.map(abs, [1])


# ---- errors at the Python line ---------------------------------------------------------------
def has_loop(xs):
    total = 0
    for x in xs:  # LINE: loop
        total += x
    return total


def type_error(xs, flag):
    ys = map(lambda x: x * 2, xs)
    return ys + flag  # LINE: type


def out_of_bounds(xs, i):
    return map(lambda x: x + xs[i], xs)  # LINE: bounds


def recursive(x):
    return recursive(x - 1) if x > 0 else x  # LINE: recursion


recursive = arrayc.jit(recursive)


def comprehension(xs):
    return [x * 2 for x in xs]  # LINE: comprehension


def undefined(xs):
    return map(lambda x: x + nothere, xs)  # noqa: F821  LINE: undefined


def falls_off(x):
    if x > 0:  # LINE: falls off
        return 1


def int_pow(x):
    return x + 10 ** 3  # LINE: int pow


def line_of(tag):
    with open(__file__) as f:
        for k, text in enumerate(f, 1):
            if text.rstrip().endswith("LINE: " + tag):
                return k, text
    raise AssertionError(tag)


@pytest.mark.parametrize("fn,args,tag,message", [
    (has_loop, (np.arange(3),), "loop", "loops are not in @arrayc.jit's subset"),
    (type_error, (np.arange(3), True), "type", "type mismatch|operands|bool"),
    (recursive, (3,), "recursion", "cannot be recursive: recursive -> recursive"),
    (comprehension, (np.arange(3),), "comprehension", "list comprehensions are not"),
    (undefined, (np.arange(3),), "undefined", "name 'nothere' is not defined"),
    (falls_off, (1,), "falls off", "does not return on every path"),
    (int_pow, (1,), "int pow", "pow expects float arguments"),
])
def test_compile_errors(fn, args, tag, message):
    f = arrayc.jit(fn, backend="cpu")
    with pytest.raises(arrayc.CompileError) as ei:
        f(*args)
    e = ei.value
    line, text = line_of(tag)
    assert (e.file, e.line) == (__file__, line)
    assert 1 <= e.column <= len(text)
    assert __file__ + ":%d:" % line in e.text
    assert text.rstrip("\n") in e.text  # the Python line is quoted
    import re
    assert re.search(message, e.message), e.message


@pytest.mark.parametrize("backend", BACKENDS)
def test_runtime_error_position(backend):
    f = arrayc.jit(out_of_bounds, backend=backend)
    with pytest.raises(arrayc.RuntimeError) as ei:
        f(np.arange(3), 7)
    line, text = line_of("bounds")
    assert (ei.value.file, ei.value.line) == (__file__, line)
    assert "out of bounds" in ei.value.message
    np.testing.assert_array_equal(arr(f(np.arange(3), 2)), [2, 3, 4])


def test_star_import_keeps_builtins():
    scope = {}
    exec("from arrayc import *", scope)
    assert "jit" in scope and "compile" in scope
    assert not {"map", "len", "min", "max", "sum", "abs", "zip", "filter"} & set(scope)
