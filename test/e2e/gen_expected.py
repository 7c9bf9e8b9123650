#!/usr/bin/python3
"""Computes the expected outputs of the end-to-end programs, independently.

    /usr/bin/python3 test/e2e/gen_expected.py [PROGRAM ...]

(with program names, only those programs' files: `functions` for functions.ac).

For every program test/e2e/NAME.ac this script reads the RUN lines

    // RUN: %arrayc-run %s --fn FN ARG ... > %t.x
    // RUN: %check-output %S/expected/EXPECTED.expected %t.x [more pairs]

takes the ARGs exactly as the test passes them to arrayc-run, computes the
function's results with the Python/NumPy implementation registered below as
"NAME.FN" (written from docs/language.md, not from arrayc's code), and writes
test/e2e/expected/EXPECTED.expected in arrayc-run's output format: one result
leaf per line, in the language's literal syntax without suffixes.

Float results are compared with tolerances (see check_output.py): each float
line is preceded by a `# rtol=R atol=A` directive when the tolerance changes;
the defaults are 1e-6 for f32 and 1e-12 for f64, and a program may ask for
more where math libraries legitimately differ.

The outputs are committed, so CI needs neither NumPy nor this script. It
needs Debian's python3-numpy, hence /usr/bin/python3. Integer semantics
(wrapping, C-style division, saturating conversions) are spelled out with
Python integers rather than left to NumPy, whose integer division floors and
whose conversions are undefined out of range.
"""
import fractions
import glob
import math
import os
import re
import shlex
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

BOOL, I8, I16, I32, I64 = np.bool_, np.int8, np.int16, np.int32, np.int64
U8, U16, U32, U64, F32, F64 = np.uint8, np.uint16, np.uint32, np.uint64, np.float32, np.float64

IMPLS = {}


def impl(name):
    """Registers the implementation of function FN of program NAME as 'NAME.FN'."""
    def reg(f):
        assert name not in IMPLS, name
        IMPLS[name] = f
        return f
    return reg


class Leaf:
    """One result leaf: a value (scalar or nested list/array) and its dtype."""

    def __init__(self, value, dtype, rtol=None, atol=0.0):
        self.dtype = np.dtype(dtype)
        self.value = value
        self.rtol = rtol
        self.atol = atol


def leaves(dtype, *values, **tol):
    return [Leaf(v, dtype, **tol) for v in values]


# ---- scalar semantics (docs/language.md section 6) --------------------------

def bits(dt):
    return np.dtype(dt).itemsize * 8


def wrap(v, dt):
    """Two's-complement wrap of a Python int into dtype dt."""
    b = bits(dt)
    v = int(v) & ((1 << b) - 1)
    if np.dtype(dt).kind == "i" and v >= 1 << (b - 1):
        v -= 1 << b
    return v


def tdiv(x, y):
    q = abs(x) // abs(y)
    return q if (x >= 0) == (y >= 0) else -q


def cdiv(x, y, dt):
    return 0 if y == 0 else wrap(tdiv(x, y), dt)


def crem(x, y, dt):
    return x if y == 0 else wrap(x - y * tdiv(x, y), dt)


def shl(x, k, dt):
    return wrap(x << (k % bits(dt)), dt)


def shr(x, k, dt):
    # Python's >> is arithmetic on negative ints and logical on the
    # non-negative values of unsigned types.
    return wrap(x >> (k % bits(dt)), dt)


def f2i(x, dt):
    """float -> int: toward zero, saturating, NaN -> 0."""
    x = float(x)
    info = np.iinfo(dt)
    if math.isnan(x):
        return 0
    if x >= float(info.max):
        return int(info.max)
    if x <= float(info.min):
        return int(info.min)
    return int(math.trunc(x))


def f32_of_int(v):
    """Rounds a Python int to the nearest f32 (ties to even), exactly."""
    return np.float32(fractions.Fraction(int(v)) if abs(v) < 2**53 else round_fraction_f32(v))


def round_fraction_f32(v):
    # Keep 24 significant bits with round-half-even, then the conversion to
    # float64 and float32 is exact.
    sign = -1 if v < 0 else 1
    m = abs(int(v))
    shift = max(m.bit_length() - 24, 0)
    q, r = divmod(m, 1 << shift)
    half = 1 << (shift - 1) if shift else 0
    if shift and (r > half or (r == half and q & 1)):
        q += 1
    return float(sign * q * (1 << shift))


def c_round(x):
    """C round(): half away from zero."""
    x = np.asarray(x)
    return np.where(x >= 0, np.floor(x + x.dtype.type(0.5)), np.ceil(x - x.dtype.type(0.5))).astype(x.dtype)


def exact_fma(a, b, c, dt):
    a, b, c = float(a), float(b), float(c)
    if not all(map(math.isfinite, (a, b, c))):
        return dt(dt(a) * dt(b) + dt(c))
    try:
        r = float(fractions.Fraction(a) * fractions.Fraction(b) + fractions.Fraction(c))
    except OverflowError:
        r = math.copysign(math.inf, a * b)
    return dt(r)


def fmap(f, *arrays):
    """Applies a Python function element-wise (for functions NumPy lacks)."""
    return [f(*xs) for xs in zip(*arrays)]


# ---- programs ---------------------------------------------------------------

def int_arith(a, b, dt):
    cols = [[], [], [], [], []]
    for x, y in zip(a, b):
        for k, v in enumerate((x + y, x - y, x * y, cdiv(x, y, dt), crem(x, y, dt))):
            cols[k].append(wrap(v, dt))
    return leaves(dt, *cols)


for _name, _dt in [("arith32", I32), ("arith8", I8), ("arith_u8", U8), ("arith_u16", U16),
                   ("arith_i16", I16)]:
    impl("int_arith." + _name)(lambda a, b, _dt=_dt: int_arith(a, b, _dt))


@impl("int_arith.arith64")
def _(a, b, c, d):
    return (leaves(I64, wrap(a * b, I64), cdiv(a, b, I64), crem(a, b, I64), wrap(a - 1, I64))
            + leaves(U64, wrap(c + d, U64), wrap(c * d, U64), 0, c, cdiv(c, d, U64)))


@impl("int_arith.unary8")
def _(a):
    return leaves(I8, [wrap(-x, I8) for x in a], [wrap(abs(x), I8) for x in a],
                  [wrap(~x, I8) for x in a])


@impl("int_arith.neg_unsigned")
def _(a, b):
    return [Leaf([wrap(-x, U16) for x in a], U16), Leaf([wrap(-x, U32) for x in b], U32)]


@impl("int_arith.abs64")
def _(a):
    return leaves(I64, [wrap(abs(x), I64) for x in a])


def shifts(a, s, dt):
    return leaves(dt, [shl(x, k, dt) for x, k in zip(a, s)], [shr(x, k, dt) for x, k in zip(a, s)])


impl("int_bits.shifts32")(lambda a, s: shifts(a, s, I32))
impl("int_bits.shifts_u32")(lambda a, s: shifts(a, s, U32))


@impl("int_bits.shifts8")
def _(a, s):
    return shifts(a, s, I8) + [Leaf([shr(wrap(x, U8), wrap(k, U8), U8) for x, k in zip(a, s)], U8)]


@impl("int_bits.shifts64")
def _(one, k, m):
    x = shl(one, k, U64)
    return leaves(U64, x, shr(x, k, U64)) + leaves(I64, shr(m, 63, I64), shr(m, 64, I64))


def bitwise(a, b, dt):
    return leaves(dt, [wrap(x & y, dt) for x, y in zip(a, b)], [wrap(x | y, dt) for x, y in zip(a, b)],
                  [wrap(x ^ y, dt) for x, y in zip(a, b)], [wrap(~x, dt) for x in a])


impl("int_bits.bitwise_u8")(lambda a, b: bitwise(a, b, U8))
impl("int_bits.bitwise_i64")(lambda a, b: bitwise(a, b, I64))


def float_arith(a, b, dt):
    x, y = np.array(a, dt), np.array(b, dt)
    with np.errstate(all="ignore"):
        return leaves(dt, x + y, x - y, x * y, x / y, np.fmod(x, y), np.fmin(x, y), np.fmax(x, y), -x)


impl("float_arith.arith32")(lambda a, b: float_arith(a, b, F32))
impl("float_arith.arith64")(lambda a, b: float_arith(a, b, F64))


def compare6(x, y):
    with np.errstate(all="ignore"):
        return leaves(BOOL, x == y, x != y, x < y, x <= y, x > y, x >= y)


impl("float_arith.compare")(lambda a, b: compare6(np.array(a, F64), np.array(b, F64)))
impl("float_arith.compare_int")(lambda a, b: compare6(np.array(a, I32), np.array(b, I32)))


@impl("float_arith.compare_unsigned")
def _(a, b):
    x, y = np.array(a, U32), np.array(b, U32)
    return leaves(BOOL, x < y, x >= y, x == y)


@impl("float_arith.compare_bool")
def _(a, b):
    x, y = np.array(a, BOOL), np.array(b, BOOL)
    return leaves(BOOL, x == y, x != y)


@impl("casts.from_f64")
def _(a):
    with np.errstate(all="ignore"):
        f32 = np.array(a, F64).astype(F32)
    return [Leaf([f2i(x, I32) for x in a], I32), Leaf([f2i(x, U8) for x in a], U8),
            Leaf([f2i(x, I64) for x in a], I64), Leaf([f2i(x, U64) for x in a], U64),
            Leaf([f2i(x, I8) for x in a], I8), Leaf(f32, F32), Leaf([x != 0 for x in a], BOOL)]


@impl("casts.from_f32")
def _(a):
    x = np.array(a, F32)
    return [Leaf([f2i(v, I32) for v in x], I32), Leaf([f2i(v, U32) for v in x], U32),
            Leaf([f2i(v, I16) for v in x], I16), Leaf([f2i(v, U16) for v in x], U16),
            Leaf(x.astype(F64), F64)]


@impl("casts.from_i32")
def _(a):
    return [Leaf([wrap(x, I8) for x in a], I8), Leaf([wrap(x, U8) for x in a], U8),
            Leaf([wrap(x, U16) for x in a], U16), Leaf(a, I64), Leaf([wrap(x, U64) for x in a], U64),
            Leaf([f32_of_int(x) for x in a], F32), Leaf([float(x) for x in a], F64),
            Leaf([x != 0 for x in a], BOOL)]


@impl("casts.from_u32")
def _(a):
    return [Leaf([wrap(x, I32) for x in a], I32), Leaf(a, I64), Leaf([float(x) for x in a], F64),
            Leaf([wrap(x, I8) for x in a], I8), Leaf(a, U64)]


@impl("casts.from_bool")
def _(a):
    return [Leaf([int(x) for x in a], I32), Leaf([float(x) for x in a], F64),
            Leaf([int(x) for x in a], U8), Leaf(a, BOOL)]


@impl("casts.from_64")
def _(a, b):
    return [Leaf([float(x) for x in a], F64), Leaf([f32_of_int(x) for x in a], F32),
            Leaf([wrap(x, I64) for x in b], I64), Leaf([float(x) for x in b], F64),
            Leaf([wrap(x, U32) for x in b], U32)]


def expfam(x, dt, **tol):
    with np.errstate(all="ignore"):
        one = dt(1)
        return leaves(dt, np.sqrt(x), one / np.sqrt(x), np.cbrt(x), np.exp(x), np.exp2(x),
                      np.expm1(x), np.log(x), np.log2(x), np.log10(x), np.log1p(x), np.abs(x), **tol)


@impl("math_f64.expfam")
def _(a):
    return expfam(np.array(a, F64), F64)


@impl("math_f64.trig")
def _(a):
    x = np.array(a, F64)
    with np.errstate(all="ignore"):
        return leaves(F64, np.sin(x), np.cos(x), np.tan(x), np.arctan(x), np.sinh(x), np.cosh(x),
                      np.tanh(x), fmap(math.erf, x), fmap(math.erfc, x))


@impl("math_f64.inverse")
def _(a):
    x = np.array(a, F64)
    with np.errstate(all="ignore"):
        return leaves(F64, np.arcsin(x), np.arccos(x))


@impl("math_f64.binary")
def _(a, b):
    x, y = np.array(a, F64), np.array(b, F64)
    with np.errstate(all="ignore"):
        return leaves(F64, np.power(x, y), np.arctan2(x, y), np.hypot(x, y), np.copysign(x, y),
                      [exact_fma(p, q, 1.0, F64) for p, q in zip(x, y)], np.fmin(x, y),
                      np.fmax(x, y))


@impl("math_f64.rounding")
def _(a):
    x = np.array(a, F64)
    return leaves(F64, np.floor(x), np.ceil(x), c_round(x), np.trunc(x))


@impl("math_f64.preds")
def _(a):
    x = np.array(a, F64)
    return leaves(BOOL, np.isnan(x), np.isinf(x), np.isfinite(x))


def f32_via_f64(f, x):
    """The f32 result of a math function: computed in f64, rounded once."""
    with np.errstate(all="ignore"):
        return np.array([F32(f(F64(v))) for v in x], F32)


@impl("math_f32.expfam")
def _(a):
    x = np.array(a, F32)
    return [Leaf(f32_via_f64(f, x), F32) for f in
            (np.sqrt, lambda v: 1 / np.sqrt(v), np.cbrt, np.exp, np.exp2, np.expm1, np.log,
             np.log2, np.log10, np.log1p, np.abs)]


@impl("math_f32.trig")
def _(a):
    x = np.array(a, F32)
    q = x / F32(4)
    res = [f32_via_f64(f, x) for f in (np.sin, np.cos, np.tan)]
    res += [f32_via_f64(np.arcsin, q), f32_via_f64(np.arccos, q)]
    res += [f32_via_f64(f, x) for f in (np.arctan, np.sinh, np.cosh, np.tanh)]
    res += [f32_via_f64(lambda v: math.erf(v), x), f32_via_f64(lambda v: math.erfc(v), x)]
    return [Leaf(r, F32) for r in res]


@impl("math_f32.binary")
def _(a, b):
    x, y = np.array(a, F32), np.array(b, F32)
    with np.errstate(all="ignore"):
        res = [np.array([F32(np.power(F64(p), F64(q))) for p, q in zip(x, y)], F32),
               np.array([F32(np.arctan2(F64(p), F64(q))) for p, q in zip(x, y)], F32),
               np.array([F32(np.hypot(F64(p), F64(q))) for p, q in zip(x, y)], F32),
               np.copysign(x, y), [exact_fma(p, q, 0.5, F32) for p, q in zip(x, y)]]
        big = x * F32(1.0e38) * y
    return [Leaf(r, F32) for r in res] + leaves(BOOL, np.isnan(x), np.isfinite(big))


@impl("math_f32.rounding")
def _(a):
    x = np.array(a, F32)
    return leaves(F32, np.floor(x), np.ceil(x), c_round(x), np.trunc(x)) + [Leaf(np.isinf(x), BOOL)]


@impl("math_f32.poly")
def _(a):
    x = np.array(a, F32)
    return [Leaf(F32(0.1) + x * (F32(2) + x * (F32(-0.5) + x * F32(1.0e-3))), F32)]


@impl("logic.logic")
def _(a, b):
    return leaves(BOOL, [x and y for x, y in zip(a, b)], [x or y for x, y in zip(a, b)],
                  [not x for x in a], [(not (x and not y)) or y for x, y in zip(a, b)])


@impl("logic.guarded")
def _(a, i):
    n = len(a)
    last = 0 if i >= n else (-a[i] if a[i] < 0 else a[i] * 2)
    return (leaves(BOOL, i < n and a[i] > 0, i >= n or a[i] > 0)
            + leaves(I32, a[i] if i < n else -1, last))


@impl("logic.classify")
def _(a):
    return [Leaf([-1 if x < 0 else 0 if x == 0 else 1 if x < 10 else 2 for x in a], I32)]


@impl("tuples_let.swap")
def _(p0, p1):
    return [Leaf(p1, F64), Leaf(p0, I32)]


@impl("tuples_let.nested")
def _(a, b):
    s = a + b
    return leaves(I32, b, a, s * b, s - a)


@impl("tuples_let.shadow")
def _(x):
    x1 = x + 1
    return leaves(I32, x1 * 10 + 1, x1)


@impl("tuples_let.with_unit")
def _(x):
    return [Leaf(x + 1, I64)]


@impl("tuples_let.deep")
def _(a, b, c, d):
    return [Leaf(not d, BOOL), Leaf(b * 10, I64), Leaf(a, I32), Leaf(wrap(c + 1, U8), U8)]


@impl("loops.sum")
def _(a):
    acc = 0.0
    for v in a:
        acc += v
    return [Leaf(acc, F64)]


@impl("loops.fib")
def _(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, wrap(a + b, I64)
    return [Leaf(a, I64), Leaf(max(n, 0), I32)]


@impl("loops.collatz")
def _(x):
    steps, top = 0, x
    while x != 1:
        x = x // 2 if x % 2 == 0 else 3 * x + 1
        steps += 1
        top = max(top, x)
    return [Leaf(steps, I32), Leaf(top, U64)]


@impl("loops.single")
def _(x):
    while x < 1000.0:
        x *= 2.0
    return [Leaf(x, F64)]


@impl("loops.gcd")
def _(a, b):
    return [Leaf(math.gcd(a, b), I64)]


@impl("loops.never")
def _(x):
    return [Leaf(x, I32)]


@impl("loops.in_map")
def _(a):
    return [Leaf([n * (n + 1) // 2 for n in a], I32)]


@impl("calls.main")
def _(xs):
    x = np.array(xs, F32)
    sq = x * x
    total = F32(0)
    for v in sq:
        total = F32(total + v)
    return [Leaf(sq, F32), Leaf(np.sqrt(total), F32), Leaf(np.fmin(np.fmax(x, F32(0)), F32(1)), F32)]


@impl("calls.use_pair")
def _(a):
    return leaves(I32, a, [x * x for x in a])


@impl("calls.fold_fn")
def _(a):
    return [Leaf(sum(a), I64)]


@impl("calls.chain")
def _(n):
    return leaves(I32, n + 2, (n + 1) ** 2 + 2 * n)


@impl("infer.stats")
def _(xs):
    x = np.array(xs, F32)
    total = F32(0)
    for v in x:
        total = F32(total + v)
    mean = F32(total / F32(len(x)))
    return [Leaf(total, F32), Leaf(mean, F32), Leaf(x - mean, F32)]


@impl("infer.chain")
def _(n):
    c1 = n + 10
    return leaves(I64, (c1 * 3 + 1) * 2, c1)


@impl("infer.defaults")
def _(k):
    return [Leaf(2 + k, I32), Leaf(0.5, F64), Leaf(7, I32)]


@impl("infer.split")
def _(xs):
    return [Leaf([x for x in xs if x > 0], I32), Leaf(xs, I32), Leaf([x * 2 for x in xs], I64)]


@impl("infer.squares")
def _(xs):
    return [Leaf([x * x for x in xs], F64)]


@impl("construct.gen1")
def _(n):
    return [Leaf([i * i for i in range(n)], I64)]


@impl("construct.gen2")
def _(r, c):
    return [Leaf([[i * 10.0 + j for j in range(c)] for i in range(r)], F64)]


@impl("construct.iota_fill")
def _(n):
    return [Leaf(np.arange(n), I64), Leaf(np.full(n, 1.5), F32), Leaf(np.full((2, 3), 7), I32),
            Leaf(n, I64), Leaf(np.full(n - 2, True), BOOL)]


@impl("construct.shapes")
def _(a, b, c):
    sa, sc = np.array(a).shape, np.array(c).shape
    return leaves(I64, sa[0], sa[1], len(b), sa[0], len(b), *sc)


@impl("construct.tuple_elems")
def _(n):
    return [Leaf([1] * n, I32), Leaf([2.5] * n, F64), Leaf([2 * i for i in range(n)], I64),
            Leaf([i % 2 == 0 for i in range(n)], BOOL)]


@impl("construct.literals")
def _():
    return [Leaf([1, -2, 3], I32), Leaf([[1.5, 2], [3, 4]], F64), Leaf([True, False], BOOL),
            Leaf(np.zeros(0), I64), Leaf([[1, 2, 3]], U8)]


@impl("map.map1")
def _(a):
    return [Leaf(np.array(a, F64) * 2.0 + 1.0, F64)]


@impl("map.map3")
def _(a, b, c):
    return [Leaf([wrap(x * y + z, I32) for x, y, z in zip(a, b, c)], I32)]


@impl("map.map2d")
def _(a, b):
    x, y = np.array(a, F32), np.array(b, F32)
    return leaves(F32, x - y, x * y)


@impl("map.capture")
def _(a, k):
    return [Leaf([x + k * 10 + k for x in a], I64)]


@impl("map.tuple_out")
def _(a):
    return [Leaf([cdiv(x, 2, I32) for x in a], I32), Leaf([crem(x, 2, I32) == 1 for x in a], BOOL),
            Leaf([x / 4.0 for x in a], F64)]


@impl("map.soa")
def _(p0, p1):
    return [Leaf(np.array(p0, F64) * np.array(p1, F64), F64)]


@impl("map.over_iota")
def _(a):
    return [Leaf([3 * i for i in range(len(a))], I64)]


@impl("map.mixed")
def _(a, b, c):
    return [Leaf([x + y if z else y for x, y, z in zip(a, b, c)], F64)]


def fold_left(f, z, xs):
    for x in xs:
        z = f(z, x)
    return z


impl("fold.sum")(lambda a: [Leaf(fold_left(lambda x, y: x + y, 0.0, a), F64)])
impl("fold.prod")(lambda a: [Leaf(fold_left(lambda x, y: wrap(x * y, I64), 1, a), I64)])
impl("fold.maxf")(lambda a: [Leaf(max(a, default=-math.inf), F32)])
impl("fold.rows")(lambda a: [Leaf([sum(r) for r in a], I32)])
impl("fold.rank3")(lambda a: [Leaf([[max(r) for r in m] for m in a], I32)])
impl("fold.all_pos")(lambda a: [Leaf(all(x > 0 for x in a), BOOL)])


@impl("fold.argmax")
def _(a):
    k = int(np.argmax(a))
    return [Leaf(a[k], F64), Leaf(k, I64)]


# The scans, written from their definitions in docs/language.md section 7.
def scan_excl(f, z, a):
    out = [z]
    for x in a[:-1]:
        out.append(f(out[-1], x))
    return out[:len(a)]


def scan_incl(f, a):
    out = []
    for x in a:
        out.append(x if not out else f(out[-1], x))
    return out


def scanr_excl(f, z, a):
    out = [z] * len(a)
    for k in range(len(a) - 2, -1, -1):
        out[k] = f(a[k + 1], out[k + 1])
    return out


def scanr_incl(f, a):
    out = list(a)
    for k in range(len(a) - 2, -1, -1):
        out[k] = f(a[k], out[k + 1])
    return out


add = lambda x, y: x + y
first = lambda x, y: x
second = lambda x, y: y


@impl("scans.scans")
def _(a):
    return leaves(I32, scan_excl(add, 0, a), scan_incl(add, a), scanr_excl(add, 0, a),
                  scanr_incl(add, a))


@impl("scans.scans_max")
def _(a):
    return leaves(F64, scan_incl(max, a), scanr_excl(max, -math.inf, a), scan_excl(max, -math.inf, a))


@impl("scans.scans2d")
def _(a):
    mul = lambda x, y: wrap(x * y, I64)
    return leaves(I64, [scan_excl(add, 100, r) for r in a], [scan_incl(mul, r) for r in a],
                  [scanr_excl(max, 0, r) for r in a], [scanr_incl(add, r) for r in a])


@impl("scans.order")
def _(a):
    return leaves(I32, scan_excl(second, -1, a), scan_incl(first, a), scan_incl(second, a),
                  scanr_excl(first, -1, a), scanr_incl(first, a), scanr_incl(second, a))


@impl("scans.tuple_scan")
def _(a):
    pairs = scan_incl(lambda p, q: (p[0] + q[0], max(p[1], q[1])), [(x, x) for x in a])
    return leaves(I32, [p[0] for p in pairs], [p[1] for p in pairs])


def segments(a, lens):
    out, k = [], 0
    for n in lens:
        out.append(a[k:k + n])
        k += n
    return out


@impl("segmented.seg")
def _(a, lens):
    segs = segments(a, lens)
    return leaves(I32, [sum(s) for s in segs], sum((scan_excl(add, 0, s) for s in segs), []),
                  sum((scan_incl(add, s) for s in segs), []))


@impl("segmented.spmv")
def _(vals, cols, rowlens, x):
    prods = [v * x[c] for v, c in zip(vals, cols)]
    return [Leaf([fold_left(add, 0.0, s) for s in segments(prods, rowlens)], F64)]


@impl("segmented.seg_max")
def _(a, lens):
    return [Leaf([max(s, default=-math.inf) for s in segments(a, lens)], F32)]


@impl("segmented.seg_order")
def _(a, lens):
    segs = segments(a, lens)
    return leaves(I32, sum((scan_incl(first, s) for s in segs), []),
                  sum((scan_incl(second, s) for s in segs), []),
                  sum((scan_excl(second, 0, s) for s in segs), []))


@impl("permutations.gather1")
def _(idx, a):
    return [Leaf(np.array(a, F64)[idx], F64)]


@impl("permutations.gather2")
def _(ii, jj, a):
    return [Leaf(np.array(a)[ii, jj], I32)]


@impl("permutations.gather_shape")
def _(idx, a):
    return [Leaf(np.array(a)[np.array(idx)], I64)]


@impl("permutations.backperm")
def _(a, m):
    n = len(a)
    return [Leaf(a[::-1], I32), Leaf(np.array(m, F32).T, F32), Leaf([a[2 * i + 1] for i in range(n // 2)], I32)]


@impl("permutations.scatter1")
def _(idx, vals, dest):
    out = list(dest)
    for i, v in zip(idx, vals):
        out[i] = v
    return [Leaf(out, F64)]


@impl("permutations.scatter2")
def _(ii, jj, vals, dest):
    out = np.array(dest)
    out[ii, jj] = vals
    return [Leaf(out, I32)]


@impl("permutations.histogram")
def _(xs, nbins):
    out = [0] * nbins
    for x in xs:
        out[min(f2i(x * nbins, I64), nbins - 1)] += 1
    return [Leaf(out, I32)]


@impl("permutations.column_sums")
def _(a):
    return [Leaf(np.array(a).sum(axis=0), I32)]


@impl("permutations.keyed_max")
def _(keys, vals, n):
    out = [-math.inf] * n
    for k, v in zip(keys, vals):
        out[k] = max(out[k], v)
    return [Leaf(out, F64)]


@impl("index_space.slices")
def _(a):
    n = len(a)
    return leaves(I32, a[1:4], a[0:n:2], a[2:2], a[1:n:3], a[0:n:100])


@impl("index_space.slice2d")
def _(a):
    m = np.array(a)
    return leaves(I32, m[1:3, 0:2], m[::2, ::2], m[0:3, 1:3:2])


@impl("index_space.reshapes")
def _(a):
    m = np.array(a).reshape(2, 3)
    return leaves(I32, m, m.T, m.T.reshape(6), np.array(a).reshape(3, 1, 2))


@impl("index_space.reverses")
def _(a, b):
    m = np.array(b)
    return leaves(I32, a[::-1], m[:, ::-1], m[::-1, :])


@impl("index_space.replicates")
def _(a, b):
    return [Leaf([a] * 3, F64), Leaf([b] * 2, I32), Leaf(np.zeros((0, len(a))), F64)]


@impl("index_space.transpose3")
def _(a):
    return [Leaf(np.array(a).transpose(0, 2, 1), I32)]


@impl("index_space.forward_diff")
def _(xs):
    x = np.array(xs, F32)
    return [Leaf(x[1:] - x[:-1], F32)]


def boundary_index(i, n, mode):
    """The index read for position i of an extent-n dimension, or None
    (outside, for a constant boundary)."""
    if 0 <= i < n:
        return i
    if mode == "clamp":
        return min(max(i, 0), n - 1)
    if mode == "mirror":
        return 0 if n == 1 else (-i if i < 0 else 2 * (n - 1) - i)
    if mode == "wrap":
        return i % n
    return None


def stencil1(f, mode, a, const=None):
    n = len(a)

    def w(o, i):
        j = boundary_index(i + o, n, mode)
        return const if j is None else a[j]
    return [f(lambda o, i=i: w(o, i)) for i in range(n)]


def stencil2(f, mode, a, const=None):
    r, c = len(a), len(a[0])

    def w(oi, oj, i, j):
        y, x = boundary_index(i + oi, r, mode), boundary_index(j + oj, c, mode)
        return const if y is None or x is None else a[y][x]
    return [[f(lambda oi, oj, i=i, j=j: w(oi, oj, i, j)) for j in range(c)] for i in range(r)]


@impl("stencils.blur")
def _(a, c):
    f = lambda w: w(-1) + 2.0 * w(0) + w(1)
    return [Leaf(stencil1(f, m, a, c), F64) for m in ("clamp", "mirror", "wrap", "const")]


def digits3(w, lo, hi):
    return wrap(w(lo) * 100 + w(0) * 10 + w(hi), I32)


@impl("stencils.wide")
def _(a):
    f = lambda w: digits3(w, -2, 2)
    return [Leaf(stencil1(f, m, a, 0), I32) for m in ("clamp", "mirror", "wrap", "const")]


@impl("stencils.one")
def _(a):
    f = lambda w: digits3(w, -1, 1)
    return [Leaf(stencil1(f, m, a, 5), I32) for m in ("clamp", "mirror", "wrap", "const")]


@impl("stencils.lap2d")
def _(a):
    m = [[F32(v) for v in row] for row in a]
    f = lambda w: w(-1, 0) + w(1, 0) + w(0, -1) + w(0, 1) - F32(4) * w(0, 0)
    return [Leaf(stencil2(f, mode, m, F32(100)), F32) for mode in ("clamp", "mirror", "wrap", "const")]


@impl("stencils.pairs")
def _(p0, p1):
    p = list(zip(p0, p1))
    return leaves(I32, stencil1(lambda w: w(-1)[0] + w(1)[1], "clamp", p),
                  stencil1(lambda w: w(-1)[0] * w(1)[1], "const", p, (2, 3)))


@impl("stencils.corners")
def _(a):
    return leaves(I64, stencil2(lambda w: w(-1, -1) * 10 + w(1, 1), "mirror", a),
                  stencil2(lambda w: w(1, -1) * 10 + w(-1, 1), "wrap", a))


@impl("filter.evens")
def _(a):
    return [Leaf([x for x in a if x % 2 == 0], I32)]


@impl("filter.none_all")
def _(a):
    return leaves(F64, [x for x in a if x > 100.0], [x for x in a if x > 0.0])


@impl("filter.pairs")
def _(a, b):
    keep = [(x, y) for x, y in zip(a, b) if y > 0.0]
    return [Leaf([x for x, _ in keep], I32), Leaf([y for _, y in keep], F64)]


@impl("filter.drop_nan")
def _(a):
    return [Leaf([x for x in a if not math.isnan(x)], F32)]


@impl("filter.chained")
def _(a):
    pos = [x for x in a if x > 0]
    return leaves(I64, len(pos), sum(pos), [x * 2 for x in pos if x > 6])


@impl("array_loops.smooth")
def _(a, n):
    for _ in range(n):
        a = stencil1(lambda w: (w(-1) + w(0) + w(1)) / 3.0, "clamp", a)
    return [Leaf(a, F64)]


@impl("array_loops.double_until")
def _(a, limit):
    while sum(a) < limit:
        a = [v * 2 for v in a]
    return [Leaf(a, I64)]


@impl("array_loops.fib_pair")
def _(n):
    s = (0, 1)
    for _ in range(n):
        s = (s[1], wrap(s[0] + s[1], I64))
    return leaves(I64, *s)


@impl("array_loops.no_steps")
def _(a):
    return leaves(I32, a, a, a)


@impl("array_loops.while_scalar")
def _(x):
    while x < 100.0:
        x *= 3.0
    return [Leaf(x, F64)]


@impl("array_loops.newton")
def _(c, n):
    x = c
    for _ in range(n):
        x = 0.5 * (x + c / x)
    return [Leaf(x, F64)]


@impl("array_loops.jacobi")
def _(a, n):
    a = [[float(v) for v in row] for row in a]
    for _ in range(n):
        a = stencil2(lambda w: 0.25 * (w(-1, 0) + w(1, 0) + w(0, -1) + w(0, 1)), "const", a, 1.0)
    return [Leaf(a, F64)]


def edit_table(s, t):
    d = [[0] * (len(t) + 1) for _ in range(len(s) + 1)]
    for i in range(len(s) + 1):
        for j in range(len(t) + 1):
            if i == 0:
                d[i][j] = j
            elif j == 0:
                d[i][j] = i
            else:
                d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1,
                              d[i - 1][j - 1] + (0 if s[i - 1] == t[j - 1] else 1))
    return d


@impl("rec_align.edit_distance")
def _(s, t):
    return [Leaf(edit_table(s, t)[len(s)][len(t)], I32)]


@impl("rec_align.lcs_table")
def _(s, t):
    l = [[0] * (len(t) + 1) for _ in range(len(s) + 1)]
    for i in range(1, len(s) + 1):
        for j in range(1, len(t) + 1):
            l[i][j] = l[i - 1][j - 1] + 1 if s[i - 1] == t[j - 1] else max(l[i - 1][j], l[i][j - 1])
    return [Leaf(l, I64)]


@impl("rec_align.smith_waterman")
def _(s, t):
    h = [[0] * (len(t) + 1) for _ in range(len(s) + 1)]
    for i in range(1, len(s) + 1):
        for j in range(1, len(t) + 1):
            h[i][j] = max(0, h[i - 1][j - 1] + (3 if s[i - 1] == t[j - 1] else -3),
                          h[i - 1][j] - 2, h[i][j - 1] - 2)
    return [Leaf(max(max(r) for r in h), I32), Leaf(h, I32)]


@impl("rec_more.fib")
def _(n):
    f = []
    for i in range(n):
        f.append(i if i < 2 else f[i - 1] + f[i - 2])
    return [Leaf(f, I64)]


@impl("rec_more.prefix")
def _(a):
    return [Leaf(scan_incl(add, a), F64)]


@impl("rec_more.from_three")
def _(n):
    d = {3: 1}
    for i in range(4, n + 1):
        d[i] = d[i - 1] * i
    return [Leaf([d[i] for i in range(3, n + 1)], I64)]


@impl("rec_more.suffix")
def _(a):
    return [Leaf(scanr_incl(add, a), I32)]


@impl("rec_more.grid")
def _(n):
    return [Leaf([[math.comb(i + j, i) for j in range(n)] for i in range(n)], I64)]


@impl("rec_more.hmm_forward")
def _(init, trans, emit, obs):
    ns = len(init)
    a = [[init[j] * emit[j][obs[0]] for j in range(ns)]]
    for t in range(1, len(obs)):
        row = []
        for j in range(ns):
            acc = 0.0
            for k in range(ns):
                acc = acc + a[t - 1][k] * trans[k][j]
            row.append(acc * emit[j][obs[t]])
        a.append(row)
    return [Leaf(a, F64), Leaf(fold_left(add, 0.0, a[-1]), F64)]


@impl("rec_more.hmm_folded")
def _(init, trans, emit, obs):
    return IMPLS["rec_more.hmm_forward"](init, trans, emit, obs)[:1]


@impl("rec_more.wavefront")
def _(r, c):
    d = [[0] * c for _ in range(r)]
    for i in range(r):
        for j in range(c):
            if i == 0:
                d[i][j] = j + 1
            elif j == 0:
                d[i][j] = d[i - 1][j + 1] * 2
            elif j == c - 1:
                d[i][j] = d[i][j - 1] + d[i - 1][j]
            else:
                d[i][j] = d[i - 1][j + 1] + d[i][j - 1]
    return [Leaf(d, I64)]


@impl("nested.matvec")
def _(m, x):
    return [Leaf([fold_left(add, 0.0, [v * y for v, y in zip(row, x)]) for row in m], F64)]


@impl("nested.scaled")
def _(a, b):
    s = fold_left(add, 0.0, b)
    return [Leaf([x * s for x in a], F64)]


@impl("nested.triangular")
def _(n):
    return [Leaf([i * (i + 1) // 2 for i in range(n)], I64)]


@impl("nested.ranks")
def _(a):
    return [Leaf([sum(1 for y in a if y < x) for x in a], I64)]


@impl("nested.distances")
def _(xs):
    return [Leaf([fold_left(add, 0.0, [abs(x - y) for y in xs]) for x in xs], F64)]


@impl("nested.row_scans")
def _(a):
    return [Leaf([scan_incl(add, r) for r in a], I32)]


@impl("nested.outer")
def _(a, b):
    return [Leaf([[x * y for y in b] for x in a], I32)]


@impl("soa.swap_fields")
def _(p0, p1):
    return [Leaf(p1, I32), Leaf(p0, F32)]


@impl("soa.index_soa")
def _(p0, p1, k):
    return [Leaf(p0[k], F64), Leaf(p1[k], I64), Leaf(len(p0), I64)]


@impl("soa.zip_unzip")
def _(a, b):
    return [Leaf([x * 2 for x in a], I32), Leaf([y + 1.0 for y in b], F64), Leaf(a, I32), Leaf(b, F64)]


@impl("soa.nested_fields")
def _(a0, a1, b):
    return [Leaf([float(x + y) * z for x, y, z in zip(a0, a1, b)], F64)]


@impl("soa.as_array")
def _(a, b):
    return [Leaf([x - y for x, y in zip(a, b)], I32)]


@impl("soa.rev_fold")
def _(p0, p1):
    return [Leaf(p0[::-1], I32), Leaf(p1[::-1], BOOL), Leaf(sum(p0), I32), Leaf(all(p1), BOOL)]


@impl("soa.grid_pairs")
def _(p0, p1):
    a, b = np.array(p0).T, np.array(p1).T
    return leaves(I64, a * b, b - a)


@impl("blackscholes.blackscholes")
def _(s, x, t, r, v):
    s, x, t = np.array(s, F32), np.array(x, F32), np.array(t, F32)
    r, v, one, half = F32(r), F32(v), F32(1), F32(0.5)

    def cnd(d):
        k = one / (one + F32(0.2316419) * np.abs(d))
        poly = k * (F32(0.31938153) + k * (F32(-0.356563782) + k * (F32(1.781477937) + k * (
            F32(-1.821255978) + k * F32(1.330274429)))))
        w = F32(0.3989422804) * np.exp(-half * d * d) * poly
        return np.where(d > 0, one - w, w)

    sq = np.sqrt(t)
    d1 = (np.log(s / x) + (r + half * v * v) * t) / (v * sq)
    d2 = d1 - v * sq
    e = np.exp(-r * t)
    call = s * cnd(d1) - x * e * cnd(d2)
    put = x * e * (one - cnd(d2)) - s * (one - cnd(d1))
    # exp and log differ between libraries by an ulp, which the subtractions
    # of nearly equal prices amplify.
    return leaves(F32, call, put, rtol=1e-4, atol=1e-4)


@impl("basics.dotp")
def _(xs, ys):
    return [Leaf(np.dot(np.array(xs, F32), np.array(ys, F32)), F32)]


@impl("basics.saxpy")
def _(a, xs, ys):
    # The GPU may contract a * x + y into an fma; the default f32 tolerance
    # covers the difference.
    return [Leaf(F32(a) * np.array(xs, F32) + np.array(ys, F32), F32)]


@impl("basics.rmse")
def _(xs, ys):
    s = fold_left(add, 0.0, [(x - y) * (x - y) for x, y in zip(xs, ys)])
    return [Leaf(math.sqrt(s / len(xs)), F64)]


@impl("basics.moving_average")
def _(xs):
    return [Leaf([0.25 * xs[i] + 0.5 * xs[i + 1] + 0.25 * xs[i + 2] for i in range(len(xs) - 2)], F64)]


@impl("empty.ops1")
def _(a):
    e = np.zeros(0)
    return [Leaf(e, F64), Leaf(7.5, F64)] + leaves(F64, e, e, e, e) + [Leaf(e, I64)] + leaves(F64, e, e)


@impl("empty.ops2")
def _(r, c):
    g = np.zeros((r, c), dtype=I32)
    return leaves(I32, g, g.T, np.full(r, 5), np.zeros((0, r)), np.zeros((2, r, c)))


@impl("empty.ops3")
def _(a):
    e = np.zeros(0)
    return leaves(I32, e, e, e, [0, 0, 0], e, e, e)


@impl("empty.ops4")
def _(a, b):
    m = np.array(b, dtype=I64)
    return leaves(I64, [0] * len(b), m, m, [], len(b))


@impl("literals.ints")
def _():
    return [Leaf(255, I32), Leaf(10**12, I64), Leaf(0b10101010, U8), Leaf(2**64 - 1, U64),
            Leaf(-128, I8), Leaf(-32768, I16), Leaf(2**32 - 1, U32), Leaf(-2**63, I64),
            Leaf(2**64 - 1, U64)]


@impl("literals.floats")
def _():
    return [Leaf(F32("0.1"), F32), Leaf(0.1, F64), Leaf(1e-30, F64), Leaf(2500.0, F64),
            Leaf(f32_of_int(16777217), F32), Leaf(1.0, F64), Leaf(-math.inf, F64),
            Leaf(math.nan, F32), Leaf(math.inf, F64)]


@impl("literals.flexible")
def _(x, y):
    return [Leaf(1 + x, I64), Leaf(F32(2) * F32(y), F32), Leaf(F32(y) + F32(1), F32),
            Leaf(wrap(260, U8), U8), Leaf(-x * 3, I64), Leaf(float(F32(y)) + 0.1, F64)]


@impl("literals.suffixed")
def _(x):
    return [Leaf(x * 2.0, F64), Leaf(F32(1.5) + F32(1.0), F32), Leaf(float(F32("0.1")), F64),
            Leaf(wrap(300 * 200, I16), I16), Leaf(1 << 40, U64)]


@impl("literals.precedence")
def _(x):
    return [Leaf(1 + 2 * 3 - (4 // 2) % 3, I32), Leaf(x, I32), Leaf(True, BOOL),
            Leaf((x & 3) | (8 ^ 1), I32), Leaf(x << 2, I32), Leaf(x == 7 and x != 8, BOOL)]


# ---- argument literals, output format, driver --------------------------------

SUFFIX = re.compile(r"(i8|i16|i32|i64|u8|u16|u32|u64|f32|f64)$")


# ---- fusion.ac: the same functions, written without fusion ------------------

@impl("fusion.map_fold")
def _(xs, ys):
    return [Leaf(wrap(sum(x * y for x, y in zip(xs, ys)), I64), I64)]


@impl("fusion.chain")
def _(xs):
    return [Leaf([x * 2.0 + 1.0 for x in reversed(xs)], F64)]


@impl("fusion.scans")
def _(xs):
    return [Leaf(scan_incl(add, [x * x for x in xs]), I32),
            Leaf(scanr_incl(max, [x - 3 for x in xs]), I32),
            Leaf(scan_excl(add, 0, list(range(len(xs)))), I64)]


@impl("fusion.gen_fold")
def _(n):
    return [Leaf(sum(i * i for i in range(n)), I64),
            Leaf(fold_left(add, 0.0, [i * 0.5 for i in range(n)]), F64)]


@impl("fusion.fill_scatter")
def _(n, idx, vs):
    out = [-1] * n
    for i, v in zip(idx, vs):
        out[i] = v * 2
    return [Leaf(out, I32)]


@impl("fusion.hist")
def _(bins, k):
    out = [0] * k
    for b in bins:
        out[b] += 1
    return [Leaf(out, I32)]


@impl("fusion.gathered")
def _(xs, idx):
    x = np.array(xs, F32)
    return [Leaf(fold_left(add, F32(0.0), [x[i] for i in idx]), F32),
            Leaf([(x[i] + F32(1.0)) * F32(2.0) for i in idx], F32)]


@impl("fusion.gather2d")
def _(m, idx, jdx):
    t = np.array(m).T
    return [Leaf(int(sum(t[i][j] for i, j in zip(idx, jdx))), I64)]


@impl("fusion.backperm")
def _(xs):
    return [Leaf([(x + 1) * 10 for x in reversed(xs)], I64)]


@impl("fusion.slices")
def _(xs):
    x = np.array(xs, F32)
    n = len(x)
    return [Leaf(x[2:] - F32(2.0) * x[1:n - 1] + x[:n - 2], F32),
            Leaf(x[1::2] - x[0:n - 1:2], F32)]


@impl("fusion.stencil_slice")
def _(xs):
    a = xs[1:]
    return [Leaf(stencil1(lambda w: w(-1) + 2 * w(0) + w(1), "clamp", a), I32)]


@impl("fusion.stencil_2d")
def _(m):
    t = np.array(m, F64).T.tolist()
    return [Leaf(stencil2(lambda w: w(0, -1) + w(0, 1) - w(-1, 0), "wrap", t), F64)]


@impl("fusion.reshape_fold")
def _(xs):
    return [Leaf(np.array(xs).reshape(2, 3).sum(axis=1), I64)]


@impl("fusion.replicate_map")
def _(xs, n):
    return [Leaf([[x * x + 1 for x in xs]] * n, I64)]


@impl("fusion.filter_map")
def _(xs):
    return [Leaf([x - 2 for x in xs if x - 2 > 0], I32)]


@impl("fusion.segmented")
def _(xs, lens):
    folds, scans, pos = [], [], 0
    for n in lens:
        seg = xs[pos:pos + n]
        folds.append(sum(x * x for x in seg))
        scans += scan_incl(add, [x + 1 for x in seg])
        pos += n
    return [Leaf(folds, I64), Leaf(scans, I64)]


@impl("fusion.matvec")
def _(m, v):
    return [Leaf([fold_left(add, 0.0, [a * b for a, b in zip(row, v)]) for row in m], F64)]


@impl("fusion.tuple_fold")
def _(xs):
    return [Leaf(sum(xs), I32), Leaf(max([-2147483648] + [2 * x for x in xs]), I32)]


@impl("fusion.horizontal")
def _(s, x):
    return [Leaf([max(a - b, 0.0) for a, b in zip(s, x)], F64),
            Leaf([max(b - a, 0.0) for a, b in zip(s, x)], F64)]


@impl("fusion.twice")
def _(xs):
    return [Leaf(sum(3 * x for x in xs), I64), Leaf(max([-100] + [3 * x for x in xs]), I64)]


@impl("fusion.matmul")
def _(a, b):
    k = len(b)
    return [Leaf([[fold_left(add, 0.0, [a[i][l] * b[l][j] for l in range(k)])
                   for j in range(len(b[0]))] for i in range(len(a))], F64)]


@impl("fusion.nested_map")
def _(xs, ys):
    return [Leaf([x + sum(y * x for y in ys) for x in xs], I64)]


@impl("fusion.nested_slices")
def _(xs):
    return [Leaf([sum(a * b for a, b in zip(xs[:i + 1], reversed(xs[:i + 1])))
                  for i in range(len(xs))], I64)]


@impl("fusion.by_hand")
def _(xs):
    sq = np.array([x * x for x in xs]).reshape(3, 2)
    g = np.array([[10 * i + j for j in range(3)] for i in range(2)]).T
    return [Leaf(sq.sum(axis=1), I64), Leaf(g.sum(axis=1), I64)]


@impl("fusion.rows_and_scan")
def _(m):
    return [Leaf([sum(2 * x for x in row) for row in m], I64),
            Leaf([scan_incl(lambda a, b: a * b, [x + 1 for x in row]) for row in m], I64)]


def parse_arg(text):
    """Parses an arrayc-run ARG (literal syntax) into Python values."""
    toks = re.findall(r"\[|\]|,|[^\s\[\],]+", text)
    pos = 0

    def atom(t):
        neg = t.startswith("-")
        body = t[1:] if neg else t
        if body in ("true", "false") and not neg:
            return body == "true"
        if body in ("inf", "nan"):
            v = float(body)
        else:
            m = SUFFIX.search(body)
            suffix = m.group(1) if m and not body.startswith(("0x", "0X")) else None
            if suffix:
                body = body[:-len(suffix)]
            body = body.replace("_", "")
            if body[:2] in ("0x", "0X"):
                v = int(body, 16)
            elif body[:2] in ("0b", "0B"):
                v = int(body[2:], 2)
            elif "." in body or "e" in body or "E" in body or (suffix or "").startswith("f"):
                v = float(body)
            else:
                v = int(body)
        return -v if neg else v

    def value():
        nonlocal pos
        t = toks[pos]
        pos += 1
        if t != "[":
            return atom(t)
        items = []
        while toks[pos] != "]":
            items.append(value())
            if toks[pos] == ",":
                pos += 1
        pos += 1
        return items

    v = value()
    assert pos == len(toks), text
    return v


def fmt_scalar(v, dt):
    if dt.kind == "b":
        return "true" if v else "false"
    if dt.kind in "iu":
        return str(int(v))
    if dt == np.float32:
        return str(np.float32(v))  # NumPy prints the shortest round-trip f32 text
    return repr(float(v))


def fmt(v, dt):
    if isinstance(v, np.ndarray):
        v = v.tolist()
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(fmt(x, dt) for x in v) + "]"
    return fmt_scalar(v, dt)


def render(leafs, header):
    lines = ["# " + header]
    cur = (1e-12, 0.0)
    for lf in leafs:
        if lf.dtype.kind == "f":
            want = (lf.rtol if lf.rtol is not None else (1e-6 if lf.dtype == np.float32 else 1e-12),
                    lf.atol)
            if want != cur:
                lines.append("# rtol=%g atol=%g" % want)
                cur = want
        lines.append(fmt(lf.value, lf.dtype))
    return "\n".join(lines) + "\n"


# ---- functions.ac: local functions, function values and parameters ---------

def f32_fold(f, z, row):
    acc = F32(z)
    for v in row:
        acc = F32(f(acc, F32(v)))
    return acc


@impl("functions.locals")
def _(xs, k):
    x = np.array(xs, F32)
    clamp = lambda v, lo, hi: F32(min(max(F32(v), F32(lo)), F32(hi)))
    return [Leaf(x * F32(k), F32), Leaf(wrap(2 * k, I32), I32),
            Leaf(clamp(F32(x[0] + x[0]), 0.0, 2.5), F32),
            Leaf([max(clamp(v, -1.0, 1.0), F32(0.5)) for v in x], F32)]


@impl("functions.ops")
def _(xs, ns):
    x = np.array(xs, F32)
    prod = 1
    for v in ns:
        prod = wrap(prod * v, I32)
    return [Leaf(f32_fold(lambda a, b: a + b, 0, x), F32, rtol=1e-6),
            Leaf(f32_fold(max, -np.inf, x), F32), Leaf(np.sqrt(x), F32), Leaf(prod, I32),
            Leaf([wrap(v - abs(v), I32) for v in ns], I32),
            Leaf([bool(v < f2i(w, I32)) for v, w in zip(ns, x)], BOOL)]


@impl("functions.rows")
def _(m):
    m = [np.array(r, F32) for r in m]
    sq = [f32_fold(lambda a, b: a + b * b, 0, r) for r in m]
    h = [f32_fold(lambda a, b: a + b, 0, (r + F32(1)) * F32(2)) for r in m]
    mx = [f32_fold(max, -np.inf, r + F32(1)) for r in m]
    mn = [f32_fold(min, np.inf, F32(0) - r) for r in m]
    return [Leaf(sq, F32, rtol=1e-6), Leaf(h, F32, rtol=1e-6), Leaf(mx, F32), Leaf(mn, F32)]


@impl("functions.library")
def _(xs, m):
    total, prod = 0, 1
    for v in xs:
        total, prod = wrap(total + v, I32), wrap(prod * v, I32)
    doubled = [wrap(2 * v, I32) for v in xs]
    m = [np.array(r, F32) for r in m]
    return [Leaf(total, I32), Leaf(prod, I32), Leaf(max(xs, default=-2**31), I32),
            Leaf(min(doubled, default=2**31 - 1), I32),
            Leaf([f32_fold(lambda a, b: a + b, 0, r) for r in m], F32, rtol=1e-6),
            Leaf([f32_fold(max, -np.inf, r) for r in m], F32),
            Leaf([f32_fold(min, np.inf, r) for r in m], F32), Leaf(xs, I32)]


@impl("functions.mandelbrot")
def _(n, maxit):
    step = F32(3.0) / F32(n)
    out = []
    for i in range(n):
        row = []
        for j in range(n):
            cr, ci = F32(F32(j) * step) - F32(2.0), F32(F32(i) * step) - F32(1.5)
            zr = zi = F32(0)
            it = 0
            while it < maxit and F32(zr * zr) + F32(zi * zi) <= F32(4):
                zr, zi = F32(F32(zr * zr) - F32(zi * zi)) + cr, F32(F32(F32(2) * zr) * zi) + ci
                it += 1
            row.append(it)
        out.append(row)
    return [Leaf(out, I32)]


@impl("functions.shadow")
def _(k):
    return [Leaf(100 + k, I64), Leaf(7, I64), Leaf(100, I64)]


def run_lines(path):
    """The commands of the RUN lines of path, continuation lines joined."""
    cmds, cur = [], ""
    for line in open(path):
        m = re.search(r"RUN:\s*(.*)$", line)
        if not m:
            continue
        text = m.group(1).rstrip()
        if text.endswith("\\"):
            cur += text[:-1] + " "
            continue
        cmds.append(cur + text)
        cur = ""
    return cmds


def collect_runs(path):
    """(function, [ARG text], expected name) for each checked run in path."""
    runs, pending = [], {}
    for cmd in run_lines(path):
        toks = shlex.split(cmd)
        if toks and toks[0] == "env":  # env NAME=VALUE .. %arrayc-run: a setting, not an input
            toks = toks[1:]
            while toks and "=" in toks[0] and not toks[0].startswith("-"):
                toks = toks[1:]
        if toks and toks[0] == "%arrayc-run" and ">" in toks:
            k = toks.index(">")
            words = [w for w in toks[1:k] if w != "%s"]
            i = words.index("--fn")
            fn = words[i + 1]
            # options (--backend, --stats, ...) come before --fn
            pending[toks[k + 1]] = (fn, words[i + 2:])
        elif toks and toks[0] == "%check-output":
            for exp, tmp in zip(toks[1::2], toks[2::2]):
                name = os.path.basename(exp)[:-len(".expected")]
                fn, args = pending[tmp]
                runs.append((fn, args, name))
    return runs


def main():
    outdir = os.path.join(HERE, "expected")
    os.makedirs(outdir, exist_ok=True)
    used, written = set(), 0
    only = set(sys.argv[1:])  # program names: regenerate just those
    for path in sorted(glob.glob(os.path.join(HERE, "*.ac"))):
        prog = os.path.basename(path)[:-3]
        if only and prog not in only:
            continue
        for fn, args, name in collect_runs(path):
            key = prog + "." + fn
            if key not in IMPLS:
                sys.exit("%s: no implementation of %s" % (path, key))
            used.add(key)
            result = IMPLS[key](*[parse_arg(a) for a in args])
            header = "%s.ac --fn %s %s" % (prog, fn, " ".join(args))
            with open(os.path.join(outdir, name + ".expected"), "w") as f:
                f.write(render(result, header))
            written += 1
    unused = sorted(k for k in set(IMPLS) - used if not only or k.split(".")[0] in only)
    if unused:
        sys.exit("implementations without a RUN line: " + ", ".join(unused))
    print("wrote %d expected files" % written)


if __name__ == "__main__":
    main()
