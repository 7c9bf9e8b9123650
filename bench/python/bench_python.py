#!/usr/bin/env python3
"""bench/python/bench_python.py: arrayc from Python against NumPy and Numba,
in one process, on the same data (bench/README.md, "The Python suite").

A benchmark, not a test: it reports times, ratios and the fraction of the
machine's memory bandwidth, and it checks every result against NumPy's
before timing anything (exit status 1 if a check fails). The rows are the
CPU suite's programs (bench/programs/*.ac) written four ways:

- arrayc: `arrayc.compile` of the program's text, on `--backend` (cpu);
- jit: the same as a Python function under `@arrayc.jit`, where the package
  has it (`hasattr(arrayc, "jit")`); otherwise the column says why not;
- NumPy: vectorised, the whole-array expressions a NumPy user writes;
- Numba: `@numba.njit(parallel=True, fastmath=False)` loops with `prange`,
  skipped (with the reason printed) when numba cannot be imported.

Each implementation is timed in a block of its own (warm-up, then
`--repeat` calls; the median is reported), never interleaved with another:
thread pools that spin after a parallel region would otherwise compete for
the cores. The memory bandwidth is measured first, in this process, with a
Numba parallel STREAM triad (best of ten over 3 x 2^25 doubles, 768 MB; a
NumPy copy without Numba). Then the per-call overhead of tiny functions
(the issue's goal: under 20 us per arrayc call; cProfile shows where it
goes when it is over) and the first-call compile times (fresh program text
for arrayc, so its in-memory compile cache cannot answer; a first call for
Numba and the jit).
"""

import argparse
import cProfile
import io
import math
import os
import platform
import pstats
import statistics
import sys
import time

# Numba's default threading layer here is libgomp's, whose threads spin
# after each parallel region before sleeping. On a machine whose cores are
# shared (a 2-vCPU VM with other work), a spinning worker keeps the thread
# that would finish the region off its core for a scheduler tick: Numba's
# times came out in multiples of 4 ms (16.0, 24.0, 36.0 ms), 15-40% above
# the same loops with OMP_WAIT_POLICY=passive or the workqueue layer. So
# passive is the default here; set OMP_WAIT_POLICY to override it. It must
# be set before libgomp is loaded, and arrayc's pool does not read it.
os.environ.setdefault("OMP_WAIT_POLICY", "passive")

try:
    import numpy as np
except ImportError as e:  # the smoke test skips on this (run.sh checks first)
    print("SKIPPED: numpy cannot be imported (%s)" % e)
    sys.exit(77)

import arrayc

try:
    import numba
    from numba import prange
    NUMBA_WHY_NOT = None
except Exception as e:  # ImportError, or a NumPy it does not support
    numba = None
    NUMBA_WHY_NOT = "numba cannot be imported: %s: %s" % (type(e).__name__, e)

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = os.path.join(os.path.dirname(HERE), "programs")
GOAL_CALL_US = 20.0  # the goal for one call of a tiny arrayc function


def program(name):
    with open(os.path.join(PROGRAMS, name + ".ac")) as f:
        return f.read()


# ---- the NumPy versions ---------------------------------------------------------------
# Black-Scholes with blackscholes.ac's CND (Abramowitz-Stegun polynomial, not
# erf), in f32 throughout: NumPy keeps float32 arrays float32 under Python
# float constants and np.float32 scalars.
def np_cnd(d):
    k = 1.0 / (1.0 + 0.2316419 * np.abs(d))
    w = 0.3989422804 * np.exp(-0.5 * d * d) * k * (
        0.31938153 + k * (-0.356563782 + k * (1.781477937 + k * (-1.821255978 + k * 1.330274429))))
    return np.where(d > 0.0, 1.0 - w, w)


def np_blackscholes(s, x, t, r, v):
    sq = np.sqrt(t)
    d1 = (np.log(s / x) + (r + 0.5 * v * v) * t) / (v * sq)
    d2 = d1 - v * sq
    e = np.exp(-r * t)
    c1, c2 = np_cnd(d1), np_cnd(d2)
    return s * c1 - x * e * c2, x * e * (1.0 - c2) - s * (1.0 - c1)


def np_saxpy(a, x, y):
    return a * x + y


def np_dot(x, y):
    return np.dot(x, y)  # BLAS sdot


def np_spmv(lens, cols, vals, x, rowptr):
    # every row has 8 to 24 entries, so reduceat's empty-row rule never applies
    return np.add.reduceat(vals * x[cols], rowptr[:-1])


def np_jacobi(g):
    # the four neighbours added in the program's order, zero outside the grid
    out = np.zeros_like(g)
    out[1:, :] += g[:-1, :]
    out[:-1, :] += g[1:, :]
    out[:, 1:] += g[:, :-1]
    out[:, :-1] += g[:, 1:]
    out *= np.float32(0.25)
    return out


# ---- the Numba versions -------------------------------------------------------------
NB, NB_INTO = {}, {}
if numba is not None:
    njit = numba.njit(parallel=True, fastmath=False)
    # f32 constants: a Python float literal in Numba is f64 and would turn the
    # whole formula into double precision. Globals are frozen as constants
    # of their own type.
    F0, F05, F1 = np.float32(0.0), np.float32(0.5), np.float32(1.0)
    K0, K1 = np.float32(0.2316419), np.float32(0.3989422804)
    A1, A2, A3 = np.float32(0.31938153), np.float32(-0.356563782), np.float32(1.781477937)
    A4, A5 = np.float32(-1.821255978), np.float32(1.330274429)

    @numba.njit(fastmath=False)
    def nb_cnd(d):
        k = F1 / (F1 + K0 * abs(d))
        w = K1 * math.exp(-F05 * d * d) * k * (A1 + k * (A2 + k * (A3 + k * (A4 + k * A5))))
        return F1 - w if d > F0 else w

    # Each kernel writes into outputs it is given (nb_*_into); the allocating
    # versions (what a Numba user writes: np.empty, then the loop) call them.
    # Both are timed: the difference is the allocation, whose fresh pages the
    # kernel faults in on every call (glibc maps blocks this large anew each
    # time), while arrayc's results come from its context's block cache.
    @njit
    def nb_blackscholes_into(s, x, t, r, v, call, put):
        for i in prange(s.shape[0]):
            sq = math.sqrt(t[i])
            d1 = (math.log(s[i] / x[i]) + (r + F05 * v * v) * t[i]) / (v * sq)
            d2 = d1 - v * sq
            e = math.exp(-r * t[i])
            c1, c2 = nb_cnd(d1), nb_cnd(d2)
            call[i] = s[i] * c1 - x[i] * e * c2
            put[i] = x[i] * e * (F1 - c2) - s[i] * (F1 - c1)
        return call, put

    @njit
    def nb_saxpy_into(a, x, y, out):
        for i in prange(x.shape[0]):
            out[i] = a * x[i] + y[i]
        return out

    @njit
    def nb_dot(x, y):
        s = np.float32(0.0)
        for i in prange(x.shape[0]):
            s += x[i] * y[i]
        return s

    @njit
    def nb_spmv_into(lens, cols, vals, x, rowptr, out):
        for r in prange(lens.shape[0]):
            acc = np.float32(0.0)
            for k in range(rowptr[r], rowptr[r + 1]):
                acc += vals[k] * x[cols[k]]
            out[r] = acc
        return out

    @njit
    def nb_jacobi_into(g, out):
        n, m = g.shape
        q = np.float32(0.25)
        for i in prange(n):
            for j in range(m):
                up = g[i - 1, j] if i > 0 else F0
                dn = g[i + 1, j] if i < n - 1 else F0
                lf = g[i, j - 1] if j > 0 else F0
                rt = g[i, j + 1] if j < m - 1 else F0
                out[i, j] = q * (up + dn + lf + rt)
        return out

    @numba.njit
    def nb_blackscholes(s, x, t, r, v):
        n = s.shape[0]
        return nb_blackscholes_into(s, x, t, r, v, np.empty(n, np.float32),
                                    np.empty(n, np.float32))

    @numba.njit
    def nb_saxpy(a, x, y):
        return nb_saxpy_into(a, x, y, np.empty_like(x))

    @numba.njit
    def nb_spmv(lens, cols, vals, x, rowptr):
        return nb_spmv_into(lens, cols, vals, x, rowptr, np.empty(lens.shape[0], np.float32))

    @numba.njit
    def nb_jacobi(g):
        return nb_jacobi_into(g, np.empty_like(g))

    @njit
    def nb_triad(a, b, c, s):
        for i in prange(a.shape[0]):
            a[i] = b[i] + s * c[i]

    @numba.njit
    def nb_tiny1(x):
        return x[0]

    @numba.njit
    def nb_tiny2(a, b):
        return a + b

    NB = dict(blackscholes=nb_blackscholes, saxpy=nb_saxpy, dot=nb_dot, spmv=nb_spmv,
              jacobi=nb_jacobi)
    # the kernels alone: (function, the outputs to give it, made from the inputs)
    NB_INTO = dict(
        blackscholes=(nb_blackscholes_into, lambda s, *_: (np.empty_like(s), np.empty_like(s))),
        saxpy=(nb_saxpy_into, lambda a, x, y: (np.empty_like(x),)),
        spmv=(nb_spmv_into, lambda lens, cols, vals, x, rp: (np.empty(len(lens), np.float32),)),
        jacobi=(nb_jacobi_into, lambda g: (np.empty_like(g),)),
        dot=(nb_dot, lambda x, y: ()))  # no output array: the same function, timed again


# ---- the @arrayc.jit versions ---------------------------------------------------------
# Defined only when the package has the decorator; each jit function is
# compiled on its first call (one specialisation per signature).
JIT = {}
JIT_WHY_NOT = None
if hasattr(arrayc, "jit"):
    try:
        @arrayc.jit
        def jit_blackscholes(s, x, t, r, v):
            def cnd(d):
                k = 1.0 / (1.0 + 0.2316419 * abs(d))
                w = 0.3989422804 * math.exp(-0.5 * d * d) * k * (
                    0.31938153 + k * (-0.356563782 + k * (1.781477937 + k * (
                        -1.821255978 + k * 1.330274429))))
                return 1.0 - w if d > 0.0 else w

            def one(s, x, t):
                sq = math.sqrt(t)
                d1 = (math.log(s / x) + (r + 0.5 * v * v) * t) / (v * sq)
                d2 = d1 - v * sq
                e = math.exp(-r * t)
                return (s * cnd(d1) - x * e * cnd(d2), x * e * (1.0 - cnd(d2)) - s * (1.0 - cnd(d1)))

            return arrayc.map(lambda s, x, t: one(s, x, t), s, x, t)

        @arrayc.jit
        def jit_saxpy(a, x, y):
            return arrayc.map(lambda xi, yi: a * xi + yi, x, y)

        @arrayc.jit
        def jit_dot(x, y):
            return arrayc.fold(lambda s, t: s + t, 0, arrayc.map(lambda a, b: a * b, x, y))

        @arrayc.jit
        def jit_spmv(lens, cols, vals, x):
            return arrayc.fold_seg(lambda a, b: a + b, 0,
                                   arrayc.map(lambda c, v: v * x[c], cols, vals), lens)

        @arrayc.jit
        def jit_jacobi(g):
            return arrayc.stencil(lambda w: 0.25 * (w[-1, 0] + w[1, 0] + w[0, -1] + w[0, 1]),
                                  0, g)

        JIT = dict(blackscholes=jit_blackscholes, saxpy=jit_saxpy, dot=jit_dot,
                   spmv=lambda lens, cols, vals, x, rowptr: jit_spmv(lens, cols, vals, x),
                   jacobi=jit_jacobi)
    except Exception as e:  # the decorator itself refused a function
        JIT_WHY_NOT = "@arrayc.jit failed: %s: %s" % (type(e).__name__, e)
else:
    JIT_WHY_NOT = "this arrayc has no arrayc.jit"


# ---- measuring --------------------------------------------------------------------------
def median_time(f, args, repeat, warmup=1):
    """Median seconds of f(*args) over `repeat` calls after `warmup` calls."""
    for _ in range(warmup):
        f(*args)
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f(*args)
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def settle():
    # let a pool that spins after its parallel region go idle before the next block
    time.sleep(0.05)


def stream_bandwidth(quick):
    """Bytes per second of the best of ten STREAM triads (a = b + s c over
    three arrays of 2^25 doubles: 24 bytes per element, as STREAM counts),
    in Numba's parallel loop; without Numba, NumPy's copy (16 bytes)."""
    n = 1 << (20 if quick else 25)
    b = np.full(n, 1.0)
    c = np.full(n, 2.0)
    a = np.empty(n)
    if numba is not None:
        nb_triad(a, b, c, 3.0)
        best = min(_timed(nb_triad, (a, b, c, 3.0)) for _ in range(10))
        return 24.0 * n / best, "Numba parallel STREAM triad, best of 10 over %d MB" % (
            24 * n >> 20)
    np.copyto(a, b)
    best = min(_timed(np.copyto, (a, b)) for _ in range(10))
    return 16.0 * n / best, "NumPy copy (no Numba), best of 10 over %d MB" % (16 * n >> 20)


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _timed(f, args):
    t0 = time.perf_counter()
    f(*args)
    return time.perf_counter() - t0


def max_rel(got, want):
    """Largest |got - want| over the largest |want| (0 for equal arrays):
    a relative error that elements near zero cannot blow up."""
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    scale = float(np.max(np.abs(want))) if want.size else 1.0
    return float(np.max(np.abs(got - want))) / (scale or 1.0) if want.size else 0.0


def compare(got, want):
    if isinstance(want, tuple):
        return max(max_rel(g, w) for g, w in zip(got, want)) if len(got) == len(want) else 1.0
    return max_rel(got, want)


# ---- the benchmarks ---------------------------------------------------------------------
class Bench:
    """One row: the arrayc program (file and function), its inputs for the
    arrayc call and for the NumPy and Numba versions (which may need
    more: SpMV's row pointers), the bytes it moves, and the check's
    tolerance (relative to the largest element of NumPy's result)."""

    def __init__(self, name, prog, fn, size, ac_args, py_args, nbytes, tol):
        self.name, self.prog, self.fn, self.size = name, prog, fn, size
        self.ac_args, self.py_args, self.nbytes, self.tol = ac_args, py_args, nbytes, tol


def make_benches(n, rng):
    """The rows for a size of n (elements of saxpy and dot; the others scale
    with it: Black-Scholes n/16 options, SpMV about n entries, Jacobi a
    square grid of about n cells)."""
    f32 = np.float32
    out = []

    nbs = max(n // 16, 1024)
    s = rng.uniform(5.0, 30.0, nbs).astype(f32)
    x = rng.uniform(1.0, 100.0, nbs).astype(f32)
    t = rng.uniform(0.25, 10.0, nbs).astype(f32)
    r, v = f32(0.02), f32(0.30)
    out.append(Bench("blackscholes", "blackscholes", "blackscholes", "%s options" % human(nbs),
                     (s, x, t, r, v), (s, x, t, r, v), 20.0 * nbs, 1e-4))

    xs = rng.uniform(-1.0, 1.0, n).astype(f32)
    ys = rng.uniform(-1.0, 1.0, n).astype(f32)
    a = f32(2.5)
    out.append(Bench("saxpy", "saxpy", "saxpy", "n=%s" % human(n), (a, xs, ys), (a, xs, ys),
                     12.0 * n, 1e-6))
    out.append(Bench("dot", "sdot", "sdot", "n=%s" % human(n), (xs, ys), (xs, ys), 8.0 * n,
                     1e-3))

    # bench.c's matrix: square, 8 to 24 entries per row (16 on average), random
    # columns and values in [-1, 1]
    rows = max(n // 16, 64)
    lens = rng.integers(8, 25, rows).astype(np.int64)
    rowptr = np.zeros(rows + 1, np.int64)
    np.cumsum(lens, out=rowptr[1:])
    nnz = int(rowptr[-1])
    cols = rng.integers(0, rows, nnz).astype(np.int32)
    vals = rng.uniform(-1.0, 1.0, nnz).astype(f32)
    vec = rng.uniform(-1.0, 1.0, rows).astype(f32)
    out.append(Bench("spmv_csr", "spmv_csr", "spmv_csr", "nnz=%s" % human(nnz),
                     (lens, cols, vals, vec), (lens, cols, vals, vec, rowptr),
                     12.0 * nnz + 16.0 * rows, 1e-4))

    side = 1 << ((max(n, 16).bit_length()) // 2)  # 4096 for 2^24
    g = rng.uniform(-1.0, 1.0, (side, side)).astype(f32)
    out.append(Bench("jacobi2d", "jacobi2d", "jacobi", "%dx%d" % (side, side), (g,), (g,),
                     8.0 * side * side, 1e-6))
    return out


NP = dict(blackscholes=np_blackscholes, saxpy=np_saxpy, dot=np_dot, spmv_csr=np_spmv,
          jacobi2d=np_jacobi)
KEY = dict(blackscholes="blackscholes", saxpy="saxpy", dot="dot", spmv_csr="spmv",
           jacobi2d="jacobi")


def human(n):
    for p, s in ((30, "G"), (20, "M"), (10, "K")):
        if n >= 1 << p and n % (1 << p) == 0:
            return "%d%s" % (n >> p, s)
    return "%.2fM" % (n / 1e6) if n >= 1e6 else str(n)


def fresh_compile(text, fn, backend, tag):
    """arrayc.compile of the text with the function renamed by tag (the
    runtime's compile cache is keyed by the printed module, so a new name is
    a new compilation), returning (function, seconds to compile). The module
    compiles the function when it is first looked up."""
    text = text.replace("fn %s(" % fn, "fn %s_%s(" % (fn, tag))
    t0 = time.perf_counter()
    m = arrayc.compile(text, backend=backend)
    f = getattr(m, "%s_%s" % (fn, tag))
    return f, time.perf_counter() - t0


def run_bench(b, args, results, compiles):
    """Checks and times one row, appending its results."""
    name, key = b.name, KEY[b.name]
    row = dict(name=name, size=b.size, nbytes=b.nbytes, times={}, checks=[])
    want = NP[name](*b.py_args)

    # arrayc: compile with fresh text, the first call, the check
    f, tc = fresh_compile(program(b.prog), b.fn, args.backend, "b%d" % os.getpid())
    t0 = time.perf_counter()
    got = f(*b.ac_args)
    tfirst = time.perf_counter() - t0
    run_first = {"arrayc": (tc, tfirst)}
    impls = [("arrayc", f, b.ac_args, got)]

    if key in NB:
        t0 = time.perf_counter()
        got_nb = NB[key](*b.py_args)
        run_first["numba"] = (None, time.perf_counter() - t0)
        impls.append(("numba", NB[key], b.py_args, got_nb))
        fn, outs = NB_INTO[key]
        a = b.py_args + outs(*b.py_args)
        impls.append(("numba-out", fn, a, fn(*a)))
    if key in JIT:
        t0 = time.perf_counter()
        try:
            got_jit = JIT[key](*b.py_args)
        except Exception as e:
            row["jit_error"] = "%s: %s" % (type(e).__name__, e)
            print("jit %s failed: %s" % (name, row["jit_error"]), flush=True)
        else:
            run_first["jit"] = (None, time.perf_counter() - t0)
            impls.append(("jit", JIT[key], b.py_args, got_jit))

    ok = True
    for who, _, _, got_w in impls:
        err = compare(got_w, want)
        good = err <= b.tol
        ok &= good
        row["checks"].append("%s %s %.1e" % (who, "ok" if good else "DIFFERS", err))
    row["ok"] = ok

    # the timed blocks, one implementation after the other
    row["times"]["numpy"] = median_time(NP[name], b.py_args, args.repeat)
    for who, fn, a, _ in impls:
        settle()
        row["times"][who] = median_time(fn, a, args.repeat)
    settle()
    results.append(row)
    for who, (tc, tfirst) in run_first.items():  # numba-out: compiled with numba
        compiles.append(dict(name=name, who=who, compile=tc, first=tfirst,
                             run=row["times"][who]))


# ---- per-call overhead ------------------------------------------------------------------
TINY = """
fn first(x: f32[]) -> f32 { x[0] }
fn add(a: f32, b: f32) -> f32 { a + b }
"""


def py_first(x):
    return x[0]


def py_add(a, b):
    return a + b


def per_call(fn, args, quick):
    """Median seconds per call over batches of calls."""
    batch, batches = (200, 5) if quick else (2000, 21)
    fn(*args)
    ts = []
    for _ in range(batches):
        t0 = time.perf_counter()
        for _ in range(batch):
            fn(*args)
        ts.append((time.perf_counter() - t0) / batch)
    return statistics.median(ts)


def overhead(args):
    m = arrayc.compile(TINY, backend=args.backend)
    x1 = np.ones(1, np.float32)
    a, b = np.float32(1.5), np.float32(2.5)
    rows = []
    cases = [("f(x: f32[]) -> f32 { x[0] }, 1 element", "first", (x1,), py_first,
              "nb_tiny1"),
             ("f(a: f32, b: f32) -> f32 { a + b }, np.float32", "add", (a, b), py_add,
              "nb_tiny2")]
    for what, fn, cargs, pyf, nbname in cases:
        row = dict(what=what, arrayc=per_call(getattr(m, fn), cargs, args.quick),
                   python=per_call(pyf, cargs, args.quick))
        if numba is not None:
            row["numba"] = per_call(globals()[nbname], cargs, args.quick)
        if JIT:  # the same Python function under @arrayc.jit: its signature lookup added
            row["jit"] = per_call(arrayc.jit(pyf, backend=args.backend), cargs, args.quick)
        rows.append(row)
    prof = None
    if max(max(r["arrayc"], r.get("jit", 0)) for r in rows) * 1e6 > GOAL_CALL_US:
        prof = profile_call(m.first, (x1,), 2000 if not args.quick else 200)
    return rows, prof


def profile_call(f, cargs, calls):
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(calls):
        f(*cargs)
    pr.disable()
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(18)
    return "%d calls of arrayc first(x):\n%s" % (calls, s.getvalue())


# ---- output -------------------------------------------------------------------------------
def ms(t):
    return "%.3f" % (t * 1e3) if t is not None else "—"


def ratio(a, b):
    return "%.2f" % (a / b) if a is not None and b else "—"


def table(results, bw, have_jit):
    head = ["benchmark", "size", "NumPy ms", "Numba ms", "Numba out= ms", "arrayc ms"]
    if have_jit:
        head.append("jit ms")
    head += ["NumPy/arrayc", "Numba/arrayc", "Numba out=/arrayc"]
    if have_jit:
        head.append("NumPy/jit")
    head += ["arrayc GB/s", "of bw", "Numba out= GB/s", "of bw", "NumPy GB/s", "check"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for r in results:
        t = r["times"]
        ac, npy, nb, jit = t.get("arrayc"), t.get("numpy"), t.get("numba"), t.get("jit")
        nbo = t.get("numba-out")
        cells = [r["name"], r["size"], ms(npy), ms(nb), ms(nbo), ms(ac)]
        if have_jit:
            cells.append(ms(jit) if jit else "failed" if "jit_error" in r else "—")
        cells += [ratio(npy, ac), ratio(nb, ac), ratio(nbo, ac)]
        if have_jit:
            cells.append(ratio(npy, jit))
        gbs = lambda x: "%.1f" % (r["nbytes"] / x / 1e9) if x else "—"
        frac = lambda x: "%.0f%%" % (100 * r["nbytes"] / x / bw) if x else "—"
        cells += [gbs(ac), frac(ac), gbs(nbo), frac(nbo), gbs(npy), ", ".join(r["checks"])]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def overhead_table(rows):
    head = ["call", "arrayc µs", "jit µs", "Numba µs", "Python µs",
            "goal < %.0f µs" % GOAL_CALL_US]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for r in rows:
        us = max(r["arrayc"], r.get("jit", 0)) * 1e6
        lines.append("| %s | %.2f | %s | %s | %.3f | %s |" % (
            r["what"], r["arrayc"] * 1e6, "%.2f" % (r["jit"] * 1e6) if "jit" in r else "—",
            "%.3f" % (r["numba"] * 1e6) if "numba" in r else "—",
            r["python"] * 1e6, "met" if us < GOAL_CALL_US else "NOT MET"))
    return "\n".join(lines)


def compile_table(compiles):
    by = {}
    for c in compiles:
        by.setdefault(c["name"], {})[c["who"]] = c
    head = ["benchmark", "arrayc compile ms", "arrayc first call ms", "arrayc run ms",
            "Numba first call ms", "jit first call ms"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for name, d in by.items():
        ac, nb, jit = d.get("arrayc"), d.get("numba"), d.get("jit")
        lines.append("| %s | %s | %s | %s | %s | %s |" % (
            name, ms(ac["compile"]), ms(ac["compile"] + ac["first"]), ms(ac["run"]),
            ms(nb["first"]) if nb else "—", ms(jit["first"]) if jit else "—"))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="small sizes (2^16), 1 repetition: a smoke test")
    ap.add_argument("--size", type=int, default=None,
                    help="elements of saxpy and dot (default 2^24); the others scale with it")
    ap.add_argument("--repeat", type=int, default=None, help="timed calls per implementation "
                    "(default 15; --quick: 1)")
    ap.add_argument("--backend", default="cpu", help="arrayc backend (default cpu)")
    ap.add_argument("--markdown", metavar="FILE", help="write the tables to FILE")
    ap.add_argument("--seed", type=int, default=19)
    args = ap.parse_args()
    if args.size is None:
        args.size = 1 << 16 if args.quick else 1 << 24
    if args.repeat is None:
        args.repeat = 1 if args.quick else 15

    if NUMBA_WHY_NOT:
        print("Numba column skipped: " + NUMBA_WHY_NOT, flush=True)
    if JIT_WHY_NOT:
        print("jit column skipped: " + JIT_WHY_NOT, flush=True)

    t_start = time.perf_counter()
    bw, bw_how = stream_bandwidth(args.quick)
    rng = np.random.default_rng(args.seed)
    benches = make_benches(args.size, rng)

    header = ["arrayc %s (backend %s), NumPy %s, Numba %s%s, Python %s" % (
        arrayc.version(), args.backend, np.__version__,
        numba.__version__ if numba else "—",
        " (threading layer %s, OMP_WAIT_POLICY=%s)" % (
            numba.threading_layer(), os.environ.get("OMP_WAIT_POLICY")) if numba else "",
        platform.python_version()),
        "%s on %d CPUs; %s; load average %.2f at the start" % (
            cpu_name(), os.cpu_count(),
            time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), os.getloadavg()[0]),
        "memory bandwidth: %.1f GB/s (%s); median of %d after 1 warm-up" % (
            bw / 1e9, bw_how, args.repeat)]
    print("\n".join(header), flush=True)

    results, compiles = [], []
    for b in benches:
        run_bench(b, args, results, compiles)
        print("  %s done (%.1f s)" % (b.name, time.perf_counter() - t_start), file=sys.stderr,
              flush=True)
    over, prof = overhead(args)

    have_jit = bool(JIT)
    out = ["\n".join(header), "",
           table(results, bw, have_jit), "",
           "Ratios are the other's time over arrayc's (above 1: arrayc faster); \"of bw\" is "
           "arrayc's bytes over the measured bandwidth; checks: largest difference from "
           "NumPy's result over NumPy's largest element.", "",
           "Per-call overhead (median over batches of calls, in this process):", "",
           overhead_table(over), ""]
    worst = max(max(r["arrayc"], r.get("jit", 0)) for r in over) * 1e6
    out.append("verdict: an arrayc call (compiled or jit) takes %.1f µs at most: the goal "
               "(< %.0f µs) is %s" % (
        worst, GOAL_CALL_US, "met" if worst < GOAL_CALL_US else "NOT met"))
    out += ["", "First call (compile; arrayc: fresh text, compile = arrayc.compile + lookup, "
            "first call = compile + the first run; Numba and jit: the first call):", "",
            compile_table(compiles)]
    if prof:
        out += ["", "```text", prof.rstrip(), "```"]
    text = "\n".join(out)
    print("\n".join(out[1:]))
    for r in results:
        if "jit_error" in r:
            print("jit %s error: %s" % (r["name"], r["jit_error"]))
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text + "\n")
    failed = [r["name"] for r in results if not r["ok"]]
    if failed:
        print("CHECK FAILED: " + ", ".join(failed))
        return 1
    print("all checks passed (%.1f s; load average %.2f at the end)" % (
        time.perf_counter() - t_start, os.getloadavg()[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
