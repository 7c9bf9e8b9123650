#!/usr/bin/env python3
"""Seeded generator of random, well-typed, runtime-safe arrayc programs.

    genprog.py --seed N [--count K] [--out DIR]
        writes K programs DIR/gN_K.ac; the first line of each is
        `// ARGS: --fn main ARG...` (the arrayc-run arguments after the file),
        and the same arguments are written one per line to DIR/gN_K.args.
    genprog.py --check --seed N --count K --opt ARRAYC_OPT --run ARRAYC_RUN
        generates the programs into a temporary directory and checks each one
        (see README.md). Exits 1 on the first failure, printing the program,
        its arguments and the failing step.

Standard library only. Generation is deterministic for a given seed: program
k of seed N depends only on (N, k).
"""
import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

INTS = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"]
SINTS = ["i8", "i16", "i32", "i64"]
FLOATS = ["f32", "f64"]
NUMS = INTS + FLOATS
SCALARS = ["bool"] + NUMS
BITS = {"i8": 8, "i16": 16, "i32": 32, "i64": 64, "u8": 8, "u16": 16, "u32": 32, "u64": 64}

FLT1 = ["sqrt", "rsqrt", "cbrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p",
        "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh",
        "floor", "ceil", "round", "trunc", "erf", "erfc", "abs"]
FLT2 = ["pow", "atan2", "hypot", "copysign", "min", "max"]


# Constructs that trigger bugs already reported (each has a regression test
# under test/lit/gen/) and not yet fixed go in AVOID: they are left out unless
# --include-known-bugs, so that long runs find new bugs instead of the same
# ones again. Known names:
#   rec-lettup: a rec self reference inside field >= 1 of the value of a
#               `let (a, b) = (.., ..)` (rec-lettup-dependency.ac,
#               rec-lettup-index.ac; fixed in 8843cb1, so generated again).
AVOID = set()


def imin(t):
    return -(1 << (BITS[t] - 1)) if t[0] == "i" else 0


def imax(t):
    return (1 << (BITS[t] - 1)) - 1 if t[0] == "i" else (1 << BITS[t]) - 1


# Types: a scalar is its name; ('T', [types]) a tuple; ('A', elem, rank) an
# array (elem a scalar or a tuple of element types).
def is_scalar(t):
    return isinstance(t, str)


def is_tup(t):
    return isinstance(t, tuple) and t[0] == "T"


def is_arr(t):
    return isinstance(t, tuple) and t[0] == "A"


def fmt_type(t):
    if is_scalar(t):
        return t
    if is_tup(t):
        return "(" + ", ".join(fmt_type(x) for x in t[1]) + ")"
    return fmt_type(t[1]) + "[" + "," * (t[2] - 1) + "]"


def arr(e, r):
    return ("A", e, r)


def tup(*ts):
    return ("T", tuple(ts))


def leaves_of(t):
    """Flattened leaves of a type (for arguments): list of (scalar, rank)."""
    if is_scalar(t):
        return [(t, 0)]
    if is_tup(t):
        out = []
        for x in t[1]:
            out += leaves_of(x)
        return out
    return [(s, t[2]) for s, _ in leaves_of(t[1])]


def fmt_float(v, t):
    if v != v:
        return "nan"
    if v in (float("inf"), float("-inf")):
        return "inf" if v > 0 else "-inf"
    return repr(float(v))


class Gen:
    def __init__(self, rng):
        self.r = rng
        self.n = 0
        self.helpers = []  # (name, [param types], result type)
        self.combs = {}  # scalar type -> (name of an associative function, identity)
        self.locals_ok = False  # rank-3 types only for let-bound values
        self.pool = list(self.BUILTIN_NAMES)
        rng.shuffle(self.pool)

    BUILTIN_NAMES = ["len", "shape", "map", "fold", "sqrt", "abs", "min", "max", "f32", "i64", "u8",
                     "bool", "iota", "fill", "generate", "filter", "scan", "stencil", "gather", "exp",
                     "reverse", "slice", "iterate", "isnan", "pow", "fma", "permute", "u64", "_", "_x1"]

    def fresh(self, p="v"):
        """A name unique in the program: usually p + a number, sometimes the
        name of a builtin operation or type (legal as a variable name)."""
        self.n += 1
        if self.pool and self.r.random() < 0.08:
            return self.pool.pop()
        return "%s%d" % (p, self.n)

    def chance(self, p):
        return self.r.random() < p

    # ---- literals -------------------------------------------------------
    def int_value(self, t):
        r = self.r
        c = r.random()
        if c < 0.25:
            return r.choice([imin(t), imax(t), imin(t) + 1, imax(t) - 1, 0])
        if c < 0.4:
            return r.choice([0, 1, BITS[t], BITS[t] + 1, BITS[t] - 1, 2])
        lo, hi = max(imin(t), -100), min(imax(t), 100)
        return r.randint(lo, hi)

    def float_value(self):
        r = self.r
        c = r.random()
        if c < 0.2:
            return r.choice([0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1e30, -3e9,
                             2.5e9, 1e-30, 0.5, -1.5])
        return round(r.uniform(-20, 20), r.choice([0, 1, 2]))

    def lit(self, t, flex=False):
        """A literal of type t; with flex (the context gives type t) often
        without suffix, in any of the literal spellings."""
        if flex and self.r.random() < 0.6:
            return self.flex_lit(t)
        suffix = True
        if t == "bool":
            return self.r.choice(["true", "false"])
        if t in INTS:
            v = self.int_value(t)
            return "%d%s" % (v, t) if suffix else str(v)
        v = self.float_value()
        if v != v or v in (float("inf"), float("-inf")):
            s = "%s(%s)" % (t, "nan" if v != v else "inf")
            return s if v != float("-inf") else "(-%s)" % s
        s = repr(v)
        if "e" in s and "." not in s.split("e")[0]:
            s = s.replace("e", ".0e")
        return s + t if suffix else s

    def flex_lit(self, t):
        r = self.r
        if t == "bool":
            return r.choice(["true", "false"])
        if t in INTS or r.random() < 0.2:
            v = self.int_value(t) if t in INTS else r.randint(-5, 300)
            c = r.random()
            if v >= 0 and c < 0.15:
                return "0x%x" % v if r.random() < 0.5 else "0X%X" % v
            if v >= 0 and c < 0.25:
                return "0b" + bin(v)[2:]
            if c < 0.35 and abs(v) >= 10:
                sv = str(abs(v))
                return ("-" if v < 0 else "") + sv[0] + "_" + sv[1:]
            return str(v)
        v = self.float_value()
        if v != v:
            return "nan"
        if v in (float("inf"), float("-inf")):
            return "inf" if v > 0 else "-inf"
        c = r.random()
        if c < 0.1:
            return "%.3e" % v
        if c < 0.15:
            return ("%.2E" % v).replace("E", "E")
        if c < 0.2 and v == int(v) and abs(v) < 1e15:
            return "%d." % v if v != 0 or str(v)[0] != "-" else "-0."
        return repr(v) if "e" not in repr(v) or "." in repr(v).split("e")[0] else repr(v).replace("e", ".0e")

    def arg_value(self, t):
        if t == "bool":
            return self.r.choice(["true", "false"])
        if t in INTS:
            return str(self.int_value(t))
        return fmt_float(self.float_value(), t)

    # ---- defaults -------------------------------------------------------
    def dflt(self, t):
        if is_scalar(t):
            return self.lit(t)
        if is_tup(t):
            return "(" + ", ".join(self.dflt(x) for x in t[1]) + ")"
        shp = "0" if t[2] == 1 else "(" + ", ".join(["0"] * t[2]) + ")"
        return "fill(%s, %s)" % (shp, self.dflt(t[1]))

    # ---- environment lookups ------------------------------------------
    @staticmethod
    def paths(name, t, want):
        """Expressions reading something of type `want` from variable name:t
        by tuple projection (for arrays of tuples, .k gives an array)."""
        out = []
        if t == want:
            out.append(name)
        if is_tup(t):
            for k, x in enumerate(t[1]):
                out += Gen.paths("%s.%d" % (name, k), x, want)
        if is_arr(t) and is_tup(t[1]) and is_arr(want) and want[2] == t[2]:
            for k, x in enumerate(t[1][1]):
                out += Gen.paths("%s.%d" % (name, k), arr(x, t[2]), want)
        return out

    def pick_var(self, env, t):
        c, recent = [], []
        for k, (name, vt) in enumerate(env):
            ps = self.paths(name, vt, t)
            c += ps
            if k >= len(env) - 3:
                recent += ps
        if recent and self.r.random() < 0.5:
            return self.r.choice(recent)
        return self.r.choice(c) if c else None

    def cast_var(self, env, t):
        """t(x) for some scalar variable x of another type, or None."""
        c = []
        for name, vt in env[-4:]:
            for s in SCALARS:
                c += self.paths(name, vt, s)
        if not c:
            return None
        return "%s(%s)" % (t, self.r.choice(c))

    # ---- random types -----------------------------------------------------
    def rand_scalar(self):
        return self.r.choice(SCALARS)

    def rand_elem(self, tuples=0.2):
        if self.chance(tuples):
            return tup(*[self.rand_scalar() for _ in range(self.r.choice([2, 2, 3]))])
        return self.rand_scalar()

    def rand_type(self):
        c = self.r.random()
        if c < 0.35:
            return self.rand_scalar()
        if c < 0.45:
            return tup(self.rand_scalar(), self.rand_scalar())
        return arr(self.rand_elem(), self.r.choice([1, 1, 1, 2, 2, 3]) if self.locals_ok else
                   self.r.choice([1, 1, 1, 2]))

    # ---- expressions ------------------------------------------------------
    def gen(self, t, env, d, e=False):
        if is_scalar(t):
            return self.scalar(t, env, d, e)
        if is_tup(t):
            return self.tuple_(t, env, d, e)
        return self.array(t[1], t[2], env, d)

    def tuple_(self, t, env, d, e=False):
        e = e is True
        v = self.pick_var(env, t)
        c = self.r.random()
        if v and c < 0.3:
            return v
        if c < 0.4 and d > 0:
            return "(if %s { %s } else { %s })" % (self.scalar("bool", env, d - 1),
                                                    self.gen(t, env, d - 1), self.gen(t, env, d - 1))
        if c < 0.5 and d > 0 and all(is_scalar(x) for x in t[1]):
            # fold over a tuple-of-arrays
            return self.fold_expr(t, env, d)
        return "(" + ", ".join(self.gen(x, env, d - 1, e) for x in t[1]) + (",)" if self.chance(0.05) else ")")

    def int_index(self, env, d, bound):
        """A non-negative i64 expression < bound (bound: text of a positive i64)."""
        t = self.r.choice(INTS)
        return "(i64(%s) & 1023) %% %s" % (self.scalar(t, env, max(d - 1, 0)), bound)

    def scalar(self, t, env, d, e=False):
        r = self.r
        v = self.pick_var(env, t)
        if d <= 0 or r.random() < 0.12:
            if v and r.random() < 0.85:
                return v
            cv = self.cast_var(env, t)
            if cv and r.random() < 0.7:
                return cv
            return self.lit(t, e)
        choices = ["lit", "var", "var", "var", "castvar", "bin", "bin", "bin", "un", "cmp", "cast", "math", "if", "let",
                   "index", "fold", "loop", "call", "varlit", "letup", "proj", "loop1"]
        if t == "i64":
            choices += ["len"]
        k = r.choice(choices)
        # e: True when the context checks against t; "rhs" when the operand
        # is checked against the type of an earlier, non-flexible operand: then
        # only flexible expressions (literals, -, binary operators) may leave
        # their type open (a call such as min(1, 2) is synthesised on its own).
        if e == "rhs" and k not in ("lit", "bin", "un"):
            e = False
        rhs = True if e is True else "rhs"
        if k == "lit":
            return self.lit(t, e)
        if k == "var":
            return v or self.lit(t)
        if k == "castvar":
            return self.cast_var(env, t) or v or self.lit(t)
        if k == "varlit" and v and t != "bool":
            op = r.choice(["+", "-", "*", "/", "%"] + (["&", "|", "^", "<<", ">>"] if t in INTS else []))
            return "(%s %s %s)" % (v, op, r.choice(["0", "1", "2", "3", "7", "64"]) if t in INTS
                                   else r.choice(["0", "2", "0.5", "1.5", "1e3"]))
        if k == "bin" or k == "varlit":
            if t == "bool":
                op = r.choice(["&&", "||", "==", "!="])
                return "(%s %s %s)" % (self.scalar("bool", env, d - 1), op, self.scalar("bool", env, d - 1))
            ops = ["+", "-", "*", "/", "%"]
            if t in INTS:
                ops += ["&", "|", "^", "<<", ">>"]
            return "(%s %s %s)" % (self.scalar(t, env, d - 1, e), r.choice(ops), self.scalar(t, env, d - 1, rhs))
        if k == "un":
            if t == "bool":
                return "!(%s)" % self.scalar(t, env, d - 1)
            if t in INTS and r.random() < 0.5:
                return "~(%s)" % self.scalar(t, env, d - 1, e is True)
            return "-(%s)" % self.scalar(t, env, d - 1, e)
        if k == "cmp":
            if t != "bool":
                return "%s(%s)" % (t, self.scalar("bool", env, d - 1))
            s = r.choice(SCALARS)
            ops = ["==", "!="] + (["<", "<=", ">", ">="] if s != "bool" else [])
            return "(%s %s %s)" % (self.scalar(s, env, d - 1), r.choice(ops), self.scalar(s, env, d - 1, "rhs"))
        if k == "cast":
            s = r.choice(SCALARS)
            return "%s(%s)" % (t, self.scalar(s, env, d - 1))
        if k == "math":
            if t == "bool":
                s = r.choice(FLOATS)
                return "%s(%s)" % (r.choice(["isnan", "isinf", "isfinite"]), self.scalar(s, env, d - 1))
            if t in INTS:
                f = r.choice(["abs", "min", "max"])
                n = 1 if f == "abs" else 2
            else:
                if r.random() < 0.6:
                    f, n = r.choice(FLT1), 1
                elif r.random() < 0.85:
                    f, n = r.choice(FLT2), 2
                else:
                    f, n = "fma", 3
            return "%s(%s)" % (f, ", ".join(self.scalar(t, env, d - 1, e if q == 0 else rhs) for q in range(n)))
        if k == "if":
            return "(if %s { %s } else if %s { %s } else { %s })" % (
                self.scalar("bool", env, d - 1), self.scalar(t, env, d - 1, e),
                self.scalar("bool", env, d - 1), self.scalar(t, env, d - 1, rhs),
                self.scalar(t, env, d - 1, rhs)) if r.random() < 0.3 else \
                "(if %s { %s } else { %s })" % (self.scalar("bool", env, d - 1),
                                                self.scalar(t, env, d - 1, e), self.scalar(t, env, d - 1, rhs))
        if k == "let":
            bt = self.rand_type()
            name = self.fresh()
            return "{ let %s = %s; %s }" % (name, self.gen(bt, env, d - 1),
                                            self.scalar(t, env + [(name, bt)], d - 1, e))
        if k == "letup":
            a, b = self.rand_scalar(), self.rand_elem(0.1)
            n1, n2 = self.fresh(), self.fresh()
            venv = [x for x in env if "[" not in x[0]] if "rec-lettup" in AVOID else env
            return "{ let (%s, %s) = %s; %s }" % (n1, n2, self.gen(tup(a, b), venv, d - 1),
                                                  self.scalar(t, env + [(n1, a), (n2, b)], d - 1, e))
        if k == "proj":
            # a field of a tuple expression (a literal tuple, an if, a call ...)
            other = self.rand_elem(0.2)
            pos = r.randint(0, 1)
            tt = tup(t, other) if pos == 0 else tup(other, t)
            return "(%s).%d" % (self.tuple_(tt, env, d - 1), pos)
        if k == "loop1":
            v = self.fresh("lv")
            n = r.randint(0, 4)
            cnt = self.fresh("n")
            return "{ let (%s, %s) = loop (%s = 0i64, %s = %s) while %s < %d { (%s + 1, { let %s = loop (%s = %s) while false { %s }; %s }) }; %s }" % (
                cnt, v, cnt, v, self.scalar(t, env, d - 1), cnt, n, cnt, v + "b", v + "c", v,
                self.scalar(t, env + [(v + "c", t)], d - 1), self.scalar(t, env + [(v, t), (v + "b", t)], d - 1, True), v)
        if k == "len":
            if r.random() < 0.5:
                return "len(%s)" % self.array(self.rand_elem(), r.choice([1, 2]), env, d - 1)
            return "shape(%s).1" % self.array(self.rand_elem(), 2, env, d - 1)
        if k == "index":
            rank = r.choice([1, 1, 2])
            a = self.array(t, rank, env, d - 1)
            s = self.fresh("s")
            if rank == 1:
                return "{ let %s = %s; if len(%s) > 0 { %s[%s] } else { %s } }" % (
                    s, a, s, s, self.int_index(env, d - 1, "len(%s)" % s), self.lit(t))
            rr, cc = self.fresh("r"), self.fresh("c")
            return "{ let %s = %s; let (%s, %s) = shape(%s); if %s > 0 && %s > 0 { %s[%s, %s] } else { %s } }" % (
                s, a, rr, cc, s, rr, cc, s, self.int_index(env, d - 1, rr),
                self.int_index(env, d - 1, cc), self.lit(t))
        if k == "fold":
            return self.fold_expr(t, env, d)
        if k == "loop":
            i, acc = self.fresh("i"), self.fresh("acc")
            n = r.randint(0, 5)
            env2 = env + [(i, "i64"), (acc, t)]
            return "{ let (%s, %s) = loop (%s = 0i64, %s = %s) while %s < %d { (%s + 1, %s) }; %s }" % (
                i, acc, i, acc, self.scalar(t, env, d - 1), i, n, i, self.scalar(t, env2, d - 1, True), acc)
        if k == "call":
            hs = [h for h in self.helpers if h[2] == t]
            if hs:
                h = r.choice(hs)
                return "%s(%s)" % (h[0], ", ".join(self.gen(p, env, d - 1, True) for p in h[1]))
        return self.lit(t, e)

    # ---- combining functions: associative + commutative with identity ----
    def comb(self, t, a, b):
        """Returns (body text, identity text) for elements of type t."""
        if is_tup(t):
            parts = [self.comb(x, "%s.%d" % (a, k), "%s.%d" % (b, k)) for k, x in enumerate(t[1])]
            return ("(" + ", ".join(p[0] for p in parts) + ")",
                    "(" + ", ".join(p[1] for p in parts) + ")")
        r = self.r
        if t in self.combs and r.random() < 0.3:
            # a top-level function named where the lambda goes (FNREF)
            if "." in a or a == "x":  # inside a tuple combiner or a function: call it
                return "%s(%s, %s)" % (self.combs[t][0], a, b), self.combs[t][1]
            return "@FN:" + self.combs[t][0], self.combs[t][1]
        if t == "bool":
            op, z = r.choice([("&&", "true"), ("||", "false"), ("!=", "false"), ("==", "true")])
            return "(%s %s %s)" % (a, op, b), z
        if t in FLOATS:
            f, z = r.choice([("min", "inf"), ("max", "-inf")])
            return "%s(%s, %s)" % (f, a, b), z
        op, z = r.choice([("+", 0), ("*", 1), ("&", -1), ("|", 0), ("^", 0), ("min", imax(t)),
                          ("max", imin(t))])
        if op == "&" and t[0] == "u":
            z = imax(t)
        if op in ("min", "max"):
            return "%s(%s, %s)" % (op, a, b), str(z)
        return "(%s %s %s)" % (a, op, b), str(z)

    def fold_expr(self, t, env, d):
        """fold producing a scalar/tuple t from a rank-1 array, or fold_seg
        producing an array (see array())."""
        a, b = self.fresh("a"), self.fresh("b")
        body, z = self.comb(t, a, b)
        src = self.array(t, 1, env, d - 1)
        return "fold(|%s, %s| %s, %s, %s)" % (a, b, body, z, src)

    # ---- arrays -----------------------------------------------------------
    def shape_lit(self, rank, maxn=8):
        if rank == 1:
            return str(self.r.randint(0, maxn))
        return "(" + ", ".join(str(self.r.randint(0, 5)) for _ in range(rank)) + ")"

    def like(self, src, st, elem, env, d):
        """An array of element type elem with the same shape as variable src
        (of array type st)."""
        r = self.r
        rank = st[2]
        c = r.random()
        if elem == st[1] and c < 0.25:
            k = r.choice(["id", "rev", "scan", "stencil", "iter"])
            if k == "id":
                return src
            if k == "rev":
                return "reverse(%s)" % src
            if k == "scan":
                return self.scan_expr(st[1], src, env, d)
            if k == "iter":
                v = self.fresh("it")
                return "iterate(%d, |%s| %s, %s)" % (r.randint(0, 3), v,
                                                     self.like(v, st, elem, env, d - 1), src)
        if c < 0.45:
            x = self.fresh("x")
            return "map(|%s| %s, %s)" % (x, self.gen(elem, env + [(x, st[1])], d - 1), src)
        if c < 0.6:
            return "fill(shape(%s), %s)" % (src, self.gen(elem, env, d - 1))
        if c < 0.8:
            return self.stencil(elem, src, st, env, d)
        idx = [self.fresh("i") for _ in range(rank)]
        return "generate(shape(%s), |%s| %s)" % (src, ", ".join(idx),
                                                 self.gen(elem, env + [(i, "i64") for i in idx], d - 1))

    def scan_expr(self, e, src, env, d):
        a, b = self.fresh("a"), self.fresh("b")
        k = self.r.choice(["scan", "scan_incl", "scanr", "scanr_incl"])
        if k in ("scan", "scanr"):
            body, z = self.comb(e, a, b)
            return "%s(|%s, %s| %s, %s, %s)" % (k, a, b, body, z, src)
        if self.r.random() < 0.5 and not is_tup(e):
            # a non-commutative but associative function is fine for inclusive scans? keep
            # associative+commutative to stay backend-independent.
            pass
        body, _ = self.comb(e, a, b)
        return "%s(|%s, %s| %s, %s)" % (k, a, b, body, src)

    def stencil(self, elem, src, st, env, d):
        r = self.r
        w = self.fresh("w")
        rank = st[2]
        reads = []
        for _ in range(r.randint(1, 3)):
            offs = [r.randint(-3, 3) if r.random() < 0.3 else r.randint(-1, 1) for _ in range(rank)]
            reads.append("%s[%s]" % (w, ", ".join(str(o) for o in offs)))
        env2 = env + [(x, st[1]) for x in reads]
        c0 = self.fresh("c")
        body = "{ let %s = %s; %s }" % (c0, reads[0], self.gen(elem, env2 + [(c0, st[1])], d - 1))
        bnd = r.choice(["clamp", "mirror", "wrap", "CONST"])
        if bnd == "CONST":
            bnd = self.gen(st[1], env, max(d - 2, 0), True)
        return "stencil(|%s| %s, %s, %s)" % (w, body, bnd, src)

    def bind_src(self, elem, rank, env, d):
        name = self.fresh("s")
        st = arr(elem, rank)
        return name, st, "let %s = %s; " % (name, self.array(elem, rank, env, d - 1))

    def array(self, elem, rank, env, d):
        r = self.r
        v = self.pick_var(env, arr(elem, rank))
        if d <= 0:
            if v and r.random() < 0.9:
                return v
            if r.random() < 0.5:
                idx = [self.fresh("i") for _ in range(rank)]
                return "generate(%s, |%s| %s)" % (self.shape_lit(rank, 12), ", ".join(idx),
                                                  self.gen(elem, env + [(i, "i64") for i in idx], 0))
            if rank == 1 and elem == "i64" and r.random() < 0.5:
                return "iota(%d)" % r.randint(0, 10)
            if rank == 1 and is_scalar(elem) and r.random() < 0.5:
                return "[%s]" % ", ".join(self.lit(elem) for _ in range(r.randint(1, 6)))
            return "fill(%s, %s)" % (self.shape_lit(rank), self.gen(elem, env, 0))
        ks = ["var", "var", "gen", "fill", "map", "map", "map", "like", "if", "call", "gather",
              "backpermute", "permute", "iterate", "while", "rec", "lit", "let"]
        if rank == 1:
            ks += ["fold2", "foldseg", "scan", "scan", "scanseg", "filter", "slice", "reshape", "scatter", "iota"]
        if rank == 2:
            ks += ["transpose", "replicate", "reshape", "slice", "scatter", "fold2"]
        if rank == 3:
            ks = ["var", "gen", "fill", "map", "like", "if", "replicate", "transpose", "scan", "iterate",
                  "while", "let", "call"]
        k = r.choice(ks)
        if k == "var" and v:
            return v
        if k == "scan":
            s0, st0, pre = self.bind_src(elem, rank, env, d)
            return "{ %s%s }" % (pre, self.scan_expr(elem, s0, env, d))
        if k == "iota" and elem == "i64":
            return "iota(%s)" % r.choice([str(r.randint(0, 12)), "min(len(%s), 20)" %
                                          self.array(self.rand_elem(), 1, env, d - 1)])
        if k == "let":
            bt = self.rand_type()
            name = self.fresh()
            return "{ let %s = %s; %s }" % (name, self.gen(bt, env, d - 1),
                                            self.array(elem, rank, env + [(name, bt)], d - 1))
        if k == "gen":
            idx = [self.fresh("i") for _ in range(rank)]
            return "generate(%s, |%s| %s)" % (self.shape_lit(rank), ", ".join(idx),
                                              self.gen(elem, env + [(i, "i64") for i in idx], d - 1))
        if k == "fill":
            return "fill(%s, %s)" % (self.shape_lit(rank), self.gen(elem, env, d - 1))
        if k == "lit":
            if rank == 1:
                n = r.randint(1, 6)
                return "[%s%s]" % (", ".join(self.gen(elem, env, min(d - 1, 1), "rhs" if q > 0 else False)
                                             for q in range(n)), "," if self.chance(0.1) else "")
            rows, cols = r.randint(1, 3), r.randint(1, 3)
            return "[%s]" % ", ".join("[%s]" % ", ".join(self.gen(elem, env, 0) for _ in range(cols))
                                      for _ in range(rows))
        if k == "if":
            return "(if %s { %s } else { %s })" % (self.scalar("bool", env, d - 1),
                                                   self.array(elem, rank, env, d - 1),
                                                   self.array(elem, rank, env, d - 1))
        if k == "call":
            hs = [h for h in self.helpers if h[2] == arr(elem, rank)]
            if hs:
                h = r.choice(hs)
                return "%s(%s)" % (h[0], ", ".join(self.gen(p, env, d - 1) for p in h[1]))
        if k == "map":
            # map with one to three arrays of one shape; sometimes a helper by name
            hs = [h for h in self.helpers if h[2] == elem and h[1] and all(is_scalar(p) for p in h[1])]
            if hs and r.random() < 0.3:
                h = r.choice(hs)
                ets = list(h[1])
                fn = h[0]
            else:
                ets = [self.rand_elem() for _ in range(r.choice([1, 1, 2, 3]))]
                fn = None
            s0, st0, pre = self.bind_src(ets[0], rank, env, d)
            env2 = env + [(s0, st0)]
            srcs = [s0]
            for e in ets[1:]:
                srcs.append(self.like(s0, st0, e, env2, d - 1))
            if fn is None:
                xs = [self.fresh("x") for _ in ets]
                fn = "|%s| %s" % (", ".join(xs), self.gen(elem, env2 + list(zip(xs, ets)), d - 1))
            return "{ %smap(%s, %s) }" % (pre, fn, ", ".join(srcs))
        if k == "like":
            s0, st0, pre = self.bind_src(self.rand_elem(), rank, env, d)
            return "{ %s%s }" % (pre, self.like(s0, st0, elem, env + [(s0, st0)], d - 1))
        if k == "fold2":
            a, b = self.fresh("a"), self.fresh("b")
            body, z = self.comb(elem, a, b)
            return "fold(|%s, %s| %s, %s, %s)" % (a, b, body, z, self.array(elem, rank + 1, env, d - 1))
        if k in ("foldseg", "scanseg"):
            s0, st0, pre = self.bind_src(elem, 1, env, d)
            n, m, sidx = self.fresh("n"), r.randint(1, 4), self.fresh("k")
            lt = r.choice(INTS)
            style = r.randint(0, 2)
            if style == 0:
                lens = "generate(%d, |%s| %s(if %s == %d { %s - %d * (%s / %d) } else { %s / %d }))" % (
                    m, sidx, lt, sidx, m - 1, n, m - 1, n, m, n, m)
            elif style == 1:
                lens = "[0, %s(%s), 0]" % (lt, n) if lt not in ("i8", "u8") else \
                    "generate(1, |%s| %s)" % (sidx, n)
            else:
                lens = "map(|%s| 1, iota(%s))" % (sidx, n)
            if lt in ("i8", "u8", "i16", "u16"):
                # the count must fit the lens type: the source has <= 127 elements? keep it safe
                lens = lens.replace("%s(" % lt, "i64(")
            a, b = self.fresh("a"), self.fresh("b")
            body, z = self.comb(elem, a, b)
            if k == "foldseg":
                op = "fold_seg(|%s, %s| %s, %s, %s, %s)" % (a, b, body, z, s0, lens)
            elif r.random() < 0.5:
                op = "scan_seg(|%s, %s| %s, %s, %s, %s)" % (a, b, body, z, s0, lens)
            else:
                op = "scan_incl_seg(|%s, %s| %s, %s, %s)" % (a, b, body, s0, lens)
            return "{ %slet %s = len(%s); %s }" % (pre, n, s0, op)
        if k == "filter":
            x = self.fresh("x")
            return "filter(|%s| %s, %s)" % (x, self.scalar("bool", env + [(x, elem)], d - 1),
                                            self.array(elem, 1, env, d - 1))
        if k == "slice":
            s0, st0, pre = self.bind_src(elem, rank, env, d)
            if rank == 1:
                n = self.fresh("n")
                stride = "" if r.random() < 0.3 else ", %d" % r.randint(1, 3)
                return "{ %slet %s = len(%s); slice(%s, %s / 4, %s - %s / 3%s) }" % (
                    pre, n, s0, s0, n, n, n, stride)
            rr, cc = self.fresh("r"), self.fresh("c")
            stride = "" if r.random() < 0.3 else ", (%d, %d)" % (r.randint(1, 3), r.randint(1, 3))
            return "{ %slet (%s, %s) = shape(%s); slice(%s, (%s / 3, %s / 4), (%s, %s - %s / 2)%s) }" % (
                pre, rr, cc, s0, s0, rr, cc, rr, cc, cc, stride)
        if k == "reshape":
            if rank == 1:
                s0, st0, pre = self.bind_src(elem, 2, env, d)
                rr, cc = self.fresh("r"), self.fresh("c")
                return "{ %slet (%s, %s) = shape(%s); reshape(%s * %s, %s) }" % (pre, rr, cc, s0, rr, cc, s0)
            s0, st0, pre = self.bind_src(elem, 1, env, d)
            n, h = self.fresh("n"), r.randint(1, 3)
            return "{ %slet %s = len(%s) / %d; reshape((%s, %d), slice(%s, 0, %s * %d)) }" % (
                pre, n, s0, h, n, h, s0, n, h)
        if k == "transpose":
            return "transpose(%s)" % self.array(elem, rank, env, d - 1)
        if k == "replicate":
            return "replicate(%d, %s)" % (r.randint(0, 3), self.array(elem, rank - 1, env, d - 1))
        if k == "gather":
            s0, st0, pre = self.bind_src(elem, r.choice([1, 2]), env, d)
            ix, ixt = self.fresh("ix"), arr(r.choice(INTS), rank)
            pre += "let %s = %s; " % (ix, self.array(ixt[1], rank, env, d - 1))
            k2 = self.fresh("k")
            if st0[2] == 1:
                return "{ %sif len(%s) > 0 { gather(map(|%s| (i64(%s) & 1023) %% len(%s), %s), %s) } else { fill(shape(%s), %s) } }" % (
                    pre, s0, k2, k2, s0, ix, s0, ix, self.gen(elem, env, 0))
            rr, cc = self.fresh("r"), self.fresh("c")
            return ("{ %slet (%s, %s) = shape(%s); if %s > 0 && %s > 0 { gather(map(|%s| ((i64(%s) & 1023) %% %s, "
                    "(i64(%s) >> 3 & 1023) %% %s), %s), %s) } else { fill(shape(%s), %s) } }") % (
                pre, rr, cc, s0, rr, cc, k2, k2, rr, k2, cc, ix, s0, ix, self.gen(elem, env, 0))
        if k == "backpermute":
            s0, st0, pre = self.bind_src(elem, r.choice([1, 2]), env, d)
            idx = [self.fresh("i") for _ in range(rank)]
            lin = " + ".join("%d * %s" % (r.randint(1, 7), i) for i in idx) + " + %d" % r.randint(0, 5)
            shp = self.shape_lit(rank)
            if st0[2] == 1:
                return "{ %sif len(%s) > 0 { backpermute(%s, |%s| (%s) %% len(%s), %s) } else { fill(%s, %s) } }" % (
                    pre, s0, shp, ", ".join(idx), lin, s0, s0, shp, self.gen(elem, env, 0))
            rr, cc = self.fresh("r"), self.fresh("c")
            return ("{ %slet (%s, %s) = shape(%s); if %s > 0 && %s > 0 { backpermute(%s, |%s| ((%s) %% %s, "
                    "(%s + %s) %% %s), %s) } else { fill(%s, %s) } }") % (
                pre, rr, cc, s0, rr, cc, shp, ", ".join(idx), lin, rr, idx[0], idx[-1], cc, s0,
                shp, self.gen(elem, env, 0))
        if k == "scatter":
            s0, st0, pre = self.bind_src(elem, rank, env, d)
            kk, x = self.fresh("k"), self.fresh("x")
            env2 = env + [(s0, st0), (kk, "i64")]
            if rank == 1:
                n = self.fresh("n")
                ids = r.choice(["filter(|%s| %s %% 2 == %d, iota(%s))" % (x, x, r.randint(0, 1), n),
                                "reverse(iota(%s))" % n, "slice(iota(%s), 0, %s, 3)" % (n, n)])
                return "{ %slet %s = len(%s); let %s = %s; scatter(%s, map(|%s| %s, %s), %s) }" % (
                    pre, n, s0, kk + "s", ids, kk + "s", kk, self.gen(elem, env2, d - 1), kk + "s", s0)
            rr, cc = self.fresh("r"), self.fresh("c")
            return ("{ %slet (%s, %s) = shape(%s); let %ss = filter(|%s| %s %% 3 != 1, iota(%s * %s)); "
                    "scatter(map(|%s| (%s / %s, %s %% %s), %ss), map(|%s| %s, %ss), %s) }") % (
                pre, rr, cc, s0, kk, x, x, rr, cc, x, x, cc, x, cc, kk, kk,
                self.gen(elem, env2, d - 1), kk, s0)
        if k == "permute":
            dest, dt, pre = self.bind_src(elem, rank, env, d)
            src, srt, pre2 = self.bind_src(elem, r.choice([1, 2]), env + [(dest, dt)], d)
            a, b = self.fresh("a"), self.fresh("b")
            body, _ = self.comb(elem, a, b)
            idx = [self.fresh("i") for _ in range(srt[2])]
            lin = " + ".join("%d * %s" % (r.randint(1, 7), i) for i in idx)
            if rank == 1:
                return "{ %s%sif len(%s) > 0 { permute(|%s, %s| %s, %s, |%s| (%s) %% len(%s), %s) } else { %s } }" % (
                    pre, pre2, dest, a, b, body, dest, ", ".join(idx), lin, dest, src, dest)
            rr, cc = self.fresh("r"), self.fresh("c")
            return ("{ %s%slet (%s, %s) = shape(%s); if %s > 0 && %s > 0 { permute(|%s, %s| %s, %s, |%s| ((%s) %% %s, "
                    "%s %% %s), %s) } else { %s } }") % (
                pre, pre2, rr, cc, dest, rr, cc, a, b, body, dest, ", ".join(idx), lin, rr, idx[-1], cc,
                src, dest)
        if k == "iterate":
            s0, st0, pre = self.bind_src(elem, rank, env, d)
            v = self.fresh("it")
            vt = arr(elem, rank)
            step = self.like(v, vt, elem, env, d - 1)
            if rank == 1 and r.random() < 0.3:
                x = self.fresh("x")
                step = "filter(|%s| %s, %s)" % (x, self.scalar("bool", env + [(x, elem)], d - 1), v)
            return "{ %siterate(%d, |%s| %s, %s) }" % (pre, r.randint(0, 4), v, step, s0)
        if k == "while":
            s0, st0, pre = self.bind_src(elem, rank, env, d)
            v = self.fresh("st")
            a = self.fresh("av")
            step = self.like(a, st0, elem, env + [(v + ".0", "i64")], d - 1)
            return "{ %swhile(|%s| %s.0 < %d, |%s| { let %s = %s.1; (%s.0 + 1, %s) }, (0i64, %s)).1 }" % (
                pre, v, v, r.randint(0, 4), v, a, v, v, step, s0)
        if k == "rec":
            return self.rec(elem, rank, env, d)
        # fallback
        if v:
            return v
        return "fill(%s, %s)" % (self.shape_lit(rank), self.gen(elem, env, d - 1))

    def rec(self, elem, rank, env, d):
        r = self.r
        dn = self.fresh("d")
        if rank == 1:
            i, n = self.fresh("i"), self.fresh("n")
            bound = r.choice([str(r.randint(0, 12)),
                              "min(len(%s), 30)" % self.array(self.rand_elem(), 1, env, d - 1)])
            named = r.random() < 0.5
            lo = 0 if named else 1
            env2 = env + [(i, "i64")]
            base = self.gen(elem, env2, d - 1, True)
            step = self.gen(elem, env2 + [("%s[%s - 1]" % (dn, i), elem)] +
                            ([("%s[%s - 2]" % (dn, i), elem)] if named else []), d - 1, True)
            if named:
                return "{ let %s = %s; rec %s (%s in 0..%s) -> %s { if %s < 2 { %s } else { %s } } }" % (
                    n, bound, dn, i, n, fmt_type(elem), i, base, step)
            return "{ let %s = %s; let %s = rec (%s in 1..=%s) -> %s { if %s == 1 { %s } else { %s } }; %s }" % (
                n, bound, dn, i, n, fmt_type(elem), i, base, step, dn)
        i, j = self.fresh("i"), self.fresh("j")
        n, m = r.randint(0, 5), r.randint(0, 5)
        env2 = env + [(i, "i64"), (j, "i64")]
        base = self.gen(elem, env2, d - 1, True)
        reads = [("%s[%s - 1, %s]" % (dn, i, j), elem), ("%s[%s, %s - 1]" % (dn, i, j), elem),
                 ("%s[%s - 1, %s - 1]" % (dn, i, j), elem)]
        step = self.gen(elem, env2 + reads, d - 1, True)
        return "rec %s (%s in 0..=%d, %s in 0..%d) -> %s { if %s == 0 || %s == 0 { %s } else { { let %s = %s; %s } } }" % (
            dn, i, n, j, m, fmt_type(elem), i, j, base, self.fresh("u"), reads[0][0], step)

    # ---- whole programs ---------------------------------------------------
    def function(self, name, params, res, depth):
        env = list(params)
        lets = []
        for _ in range(self.r.randint(0, 3)):
            self.locals_ok = True
            t = self.rand_type()
            self.locals_ok = False
            v = self.fresh()
            lets.append("  let %s = %s;%s\n" % (v, self.gen(t, env, depth),
                                               self.r.choice(["", "", " // c", " /* c */"])))
            env.append((v, t))
        body = self.gen(res, env, depth, True)
        if is_arr(res) and res[2] == 1 and self.r.random() < 0.15:
            body = "if %s { [] } else { %s }" % (self.scalar("bool", env, 1), body)
        ps = ", ".join("%s: %s" % (p, fmt_type(t)) for p, t in params)
        return "fn %s(%s) -> %s {\n%s  %s\n}\n" % (name, ps, fmt_type(res), "".join(lets), body)

    def program(self):
        r = self.r
        out = []
        for c in range(r.randint(0, 2)):
            t = r.choice(SCALARS)
            body, z = self.comb(t, "x", "y")
            name = "c%d" % c
            out.append("fn %s(x: %s, y: %s) -> %s {\n  %s\n}\n" % (name, t, t, t, body))
            self.combs[t] = (name, z)
            self.helpers.append((name, [t, t], t))
        for h in range(r.randint(0, 3)):
            name = "h%d" % h
            if r.random() < 0.6:
                params = [("p%d" % k, self.rand_scalar()) for k in range(r.randint(1, 2))]
                res = self.rand_scalar()
            else:
                params = [("p%d" % k, self.rand_type()) for k in range(r.randint(1, 2))]
                res = self.rand_type()
            out.append(self.function(name, params, res, r.randint(1, 3)))
            self.helpers.append((name, [t for _, t in params], res))
        params = [("a%d" % k, self.rand_type()) for k in range(r.randint(1, 4))]
        ress = [self.rand_type() for _ in range(r.randint(1, 3))]
        res = ress[0] if len(ress) == 1 else tup(*ress)
        out.append(self.function("main", params, res, r.randint(2, 4)))
        out = [re.sub(r"\|\w+, \w+\| @FN:(\w+)", r"\1", f) for f in out]
        args = []
        for _, t in params:
            args += self.args_for(t)
        return "\n".join(out), ["--fn", "main"] + args

    def args_for(self, t):
        r = self.r
        if is_scalar(t):
            return [self.arg_value(t)]
        if is_tup(t):
            out = []
            for x in t[1]:
                out += self.args_for(x)
            return out
        rank = t[2]
        if rank == 1:
            shp = [r.choice([0, 1, 2, 3, 5, 8, 12, 17, r.randint(0, 50)])]
        else:
            shp = [r.choice([0, 1, 2, 3, 4, 5, 6]), r.choice([0, 1, 2, 3, 4, 5, 6, 7])]
        out = []
        for s, _ in leaves_of(t[1]):
            if rank == 1:
                out.append("[" + ",".join(self.arg_value(s) for _ in range(shp[0])) + "]")
            else:
                out.append("[" + ",".join("[" + ",".join(self.arg_value(s) for _ in range(shp[1])) + "]"
                                          for _ in range(shp[0])) + "]")
        return out


# ---- oracle programs: small programs whose result is computed here too --------
import math
import struct


def wrapi(v, t):
    b = BITS[t]
    v &= (1 << b) - 1
    if t[0] == "i" and v >= 1 << (b - 1):
        v -= 1 << b
    return v


def tdiv(a, b):
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def int_ops(t, a, b):
    bits = BITS[t]
    div = 0 if b == 0 else wrapi(tdiv(a, b), t)
    rem = a if b == 0 else wrapi(a - tdiv(a, b) * b, t)
    sh = b & (bits - 1)
    ua = a & ((1 << bits) - 1)
    shr = (a >> sh) if t[0] == "i" else (ua >> sh)
    return [wrapi(a + b, t), wrapi(a - b, t), wrapi(a * b, t), div, rem, wrapi(a & b, t),
            wrapi(a | b, t), wrapi(a ^ b, t), wrapi(a << sh, t), wrapi(shr, t), wrapi(-a, t),
            wrapi(~a, t), wrapi(abs(a), t), min(a, b), max(a, b), a < b, a == b, a >= b]


INT_OPS_TEXT = ("(a + b, a - b, a * b, a / b, a % b, a & b, a | b, a ^ b, a << b, a >> b, -a, ~a, "
                "abs(a), min(a, b), max(a, b), a < b, a == b, a >= b)")


FLT_MAX = 3.4028234663852886e38


def f32r(v):
    """v rounded to the nearest f32 (overflowing to infinity as C does)."""
    try:
        return struct.unpack("<f", struct.pack("<f", v))[0]
    except OverflowError:
        # above FLT_MAX: rounds down to it below FLT_MAX + half an ulp (2^103)
        return math.copysign(FLT_MAX if abs(v) < FLT_MAX + 2.0 ** 103 else float("inf"), v)


def conv(x, src, dst):
    """Convert Python value x of scalar type src to dst (no float targets)."""
    if dst == "bool":
        return x != 0 if src != "bool" else x
    if src == "bool":
        return 1 if x else 0
    if src in FLOATS:
        if x != x:
            return 0
        if x in (float("inf"), float("-inf")):
            return imax(dst) if x > 0 else imin(dst)
        v = int(x)  # truncates toward zero
        return max(imin(dst), min(imax(dst), v))
    return wrapi(x, dst)


def fround(v, t):
    if t == "f64" or v != v:
        return v
    try:
        return f32r(v)
    except OverflowError:
        return math.copysign(float("inf"), v)


class F:
    def __init__(self, text):
        self.text = text


def fshow(v, t):
    """The text arrayc-run prints for float v of type t (shortest round trip,
    laid out as Python's repr)."""
    if v != v:
        return F("nan")
    if v in (float("inf"), float("-inf")):
        return F("inf" if v > 0 else "-inf")
    if t == "f64":
        return F(repr(v))
    for p in range(1, 10):
        s = "%.*e" % (p - 1, v)
        if f32r(float(s)) == v:
            return F(repr(float(s)))
    return F(repr(v))


def show(v):
    if isinstance(v, F):
        return v.text
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, list):
        return "[" + ", ".join(show(x) for x in v) + "]"
    return str(v)


def mirror(i, n):
    if n == 1:
        return 0
    p = 2 * (n - 1)
    m = i % p
    return p - m if m >= n else m


class Oracle:
    def __init__(self, rng):
        self.r = rng
        self.g = Gen(rng)

    def ints(self):
        t = self.r.choice(INTS)
        a, b = self.g.int_value(t), self.g.int_value(t)
        if self.r.random() < 0.2:
            b = self.r.choice([0, -1 if t[0] == "i" else 0, -BITS[t] - 1 if t[0] == "i" else 1])
        text = "fn main(a: %s, b: %s) -> (%s) {\n  %s\n}\n" % (
            t, t, ", ".join([t] * 15 + ["bool"] * 3), INT_OPS_TEXT)
        return text, ["--fn", "main", str(a), str(b)], int_ops(t, a, b)

    def convs(self):
        r = self.r
        src = r.choice(SCALARS)
        if src in FLOATS:
            x = r.choice([0.0, -0.0, 300.5, -2.5, -129.75, 255.99, 65535.5, 1e30, -1e30, float("nan"),
                          float("inf"), float("-inf"), 2147483648.0, -2147483649.0, 4294967296.0,
                          9223372036854775808.0, -9223372036854775808.0, 18446744073709549568.0,
                          18446744073709551616.0, 0.75, -0.75, round(r.uniform(-1e6, 1e6), 2)])
            if src == "f32":
                x = f32r(x) if x == x and abs(x) < 3e38 else x
            arg = fmt_float(x, src)
        elif src == "bool":
            x = r.choice([True, False])
            arg = show(x)
        else:
            x = self.g.int_value(src)
            arg = str(x)
        dsts = INTS + ["bool"]
        text = "fn main(x: %s) -> (%s) {\n  (%s)\n}\n" % (
            src, ", ".join(dsts), ", ".join("%s(x)" % d for d in dsts))
        return text, ["--fn", "main", arg], [conv(x, src, d) for d in dsts]

    def stencils(self):
        r = self.r
        n = r.randint(1, 7)
        xs = [r.randint(-50, 50) for _ in range(n)]
        o = r.randint(-9, 9)
        c = r.randint(-5, 5)
        exp = [[xs[min(max(i + o, 0), n - 1)] for i in range(n)],
               [xs[mirror(i + o, n)] for i in range(n)],
               [xs[(i + o) % n] for i in range(n)],
               [xs[i + o] if 0 <= i + o < n else c for i in range(n)]]
        text = ("fn main(xs: i32[]) -> (i32[], i32[], i32[], i32[]) {\n"
                "  (stencil(|w| w[%d], clamp, xs), stencil(|w| w[%d], mirror, xs), "
                "stencil(|w| w[%d], wrap, xs), stencil(|w| w[%d], %d, xs))\n}\n") % (o, o, o, o, c)
        return text, ["--fn", "main", show(xs).replace(" ", "")], exp

    def stencil2(self):
        r = self.r
        R, C = r.randint(1, 4), r.randint(1, 4)
        m = [[r.randint(-50, 50) for _ in range(C)] for _ in range(R)]
        o1, o2 = r.randint(-5, 5), r.randint(-5, 5)
        bnd = r.choice(["clamp", "mirror", "wrap", "7"])
        def rd(i, j):
            a, b = i + o1, j + o2
            if bnd == "clamp":
                return m[min(max(a, 0), R - 1)][min(max(b, 0), C - 1)]
            if bnd == "mirror":
                return m[mirror(a, R)][mirror(b, C)]
            if bnd == "wrap":
                return m[a % R][b % C]
            return m[a][b] if 0 <= a < R and 0 <= b < C else 7
        exp = [[[rd(i, j) for j in range(C)] for i in range(R)]]
        text = "fn main(m: i64[,]) -> i64[,] {\n  stencil(|w| w[%d, %d], %s, m)\n}\n" % (o1, o2, bnd)
        return text, ["--fn", "main", show(m).replace(" ", "")], exp

    def scans(self):
        r = self.r
        n = r.randint(0, 9)
        xs = [r.randint(-100, 100) for _ in range(n)]
        lens, left = [], n
        while left > 0 or r.random() < 0.3:
            k = r.randint(0, left)
            lens.append(k)
            left -= k
            if len(lens) > 6:
                lens.append(left)
                left = 0
        acc, ex, inc = 0, [], []
        for x in xs:
            ex.append(acc)
            acc += x
            inc.append(acc)
        rex, rin, acc = [0] * n, [0] * n, 0
        for k in range(n - 1, -1, -1):
            rex[k] = acc
            acc += xs[k]
            rin[k] = acc
        fs, ss, si, pos = [], [], [], 0
        for L in lens:
            seg = xs[pos:pos + L]
            pos += L
            fs.append(sum(seg))
            a = 0
            for x in seg:
                ss.append(a)
                a += x
                si.append(a)
        text = ("fn main(xs: i64[], lens: i32[]) -> (i64[], i64[], i64[], i64[], i64, i64[], i64[], i64[]) {\n"
                "  (scan(|a, b| a + b, 0, xs), scan_incl(|a, b| a + b, xs), scanr(|a, b| a + b, 0, xs),\n"
                "   scanr_incl(|a, b| a + b, xs), fold(|a, b| a + b, 0, xs), fold_seg(|a, b| a + b, 0, xs, lens),\n"
                "   scan_seg(|a, b| a + b, 0, xs, lens), scan_incl_seg(|a, b| a + b, xs, lens))\n}\n")
        return (text, ["--fn", "main", show(xs).replace(" ", ""), show(lens).replace(" ", "")],
                [ex, inc, rex, rin, sum(xs), fs, ss, si])

    def reshapes(self):
        r = self.r
        R, C = r.randint(1, 5), r.randint(0, 5)
        m = [[r.randint(-9, 99) for _ in range(C)] for _ in range(R)]
        r0, r1 = r.randint(0, R), r.randint(0, R)
        c0, c1 = r.randint(0, C), r.randint(0, C)
        r0, r1, c0, c1 = min(r0, r1), max(r0, r1), min(c0, c1), max(c0, c1)
        s1, s2 = r.randint(1, 3), r.randint(1, 3)
        k = r.randint(0, 3)
        flat = [x for row in m for x in row]
        sl = [row[c0:c1:s2] for row in m[r0:r1:s1]]
        tr = [[m[i][j] for i in range(R)] for j in range(C)]
        text = ("fn main(m: i32[,]) -> (i32[,], i32[,], i32[,], i32[], i32[,,], i32[,], i32[]) {\n"
                "  (slice(m, (%d, %d), (%d, %d), (%d, %d)), transpose(m), reverse(m), reshape(%d, m),\n"
                "   replicate(%d, m), reshape((%d, %d), reshape(%d, m)), gather(iota(%d), reshape(%d, m)))\n}\n") % (
            r0, c0, r1, c1, s1, s2, R * C, k, C, R, R * C, R * C, R * C)
        exp = [sl, tr, [row[::-1] for row in m], flat, [m] * k,
               [[flat[i * R + j] for j in range(R)] for i in range(C)], flat]
        def fix(v, rank):  # a rank-2 array with zero rows prints as []
            return v
        return text, ["--fn", "main", show(m).replace(" ", "")], exp

    def floats(self):
        r = self.r
        t = r.choice(FLOATS)
        rnd = (lambda v: fround(v, t))
        pool = [0.0, -0.0, 1.5, -2.5, 0.1, 3.0, -7.25, 1e30, -1e-30, float("inf"), float("-inf"),
                float("nan"), 2.5, 0.5, -0.5, 1e300, 123456.789]
        a, b = r.choice(pool), r.choice(pool)
        if r.random() < 0.5:
            a, b = round(r.uniform(-100, 100), r.randint(0, 3)), round(r.uniform(-100, 100), r.randint(0, 3))
        a, b = rnd(a), rnd(b)
        if a == 0 and b == 0:
            b = 1.0
        def fdiv(x, y):
            if y == 0:
                if x == 0 or x != x:
                    return float("nan")
                return math.copysign(float("inf"), x) * math.copysign(1.0, y)
            return x / y
        def fmod(x, y):
            try:
                return math.fmod(x, y)
            except ValueError:
                return float("nan")
        def fminmax(f, x, y):
            # language.md §6.2: NaN ignored, -0.0 < 0.0
            if x != x:
                return y
            if y != y:
                return x
            if x == 0 and y == 0:
                negs = [v for v in (x, y) if math.copysign(1.0, v) < 0]
                if f is min:
                    return -0.0 if negs else 0.0
                return 0.0 if len(negs) < 2 else -0.0
            return f(x, y)
        def croundf(x):
            if x != x or abs(x) >= 2.0 ** 52:
                return x
            tr = math.trunc(x)
            if abs(x - tr) >= 0.5:
                tr += 1 if x > 0 else -1
            return math.copysign(float(tr), x)
        def csqrt(x):
            return float("nan") if x < 0 or x != x else math.sqrt(x)
        def cfl(f, x):
            return x if x != x or x in (float("inf"), float("-inf")) else math.copysign(float(f(x)), x)
        vals = [a + b, a - b, a * b, fdiv(a, b), fmod(a, b), fminmax(min, a, b), fminmax(max, a, b),
                csqrt(a), cfl(math.floor, a), cfl(math.ceil, a), croundf(a), cfl(math.trunc, a), abs(a),
                math.copysign(a, b), -a]
        fx = [rnd(v) for v in vals]
        bools = [a < b, a <= b, a == b, a != b, a != a, a in (float("inf"), float("-inf")),
                 a == a and a not in (float("inf"), float("-inf"))]
        ints = [conv(a, t, "i32"), conv(b, t, "u64")]
        text = ("fn main(a: %s, b: %s) -> (%s, bool, bool, bool, bool, bool, bool, bool, i32, u64) {\n"
                "  (a + b, a - b, a * b, a / b, a %% b, min(a, b), max(a, b), sqrt(a), floor(a), ceil(a),\n"
                "   round(a), trunc(a), abs(a), copysign(a, b), -a,\n"
                "   a < b, a <= b, a == b, a != b, isnan(a), isinf(a), isfinite(a), i32(a), u64(b))\n}\n") % (
            t, t, ", ".join([t] * 15))
        exp = [fshow(v, t) for v in fx] + bools + ints
        return text, ["--fn", "main", fshow(a, t).text, fshow(b, t).text], exp

    def recs(self):
        """A 2-D recurrence with random uniform dependencies (and sometimes a
        free index) that admit a schedule; evaluated here by memoised
        recursion, independent of any schedule."""
        r = self.r
        n, m = r.randint(0, 6), r.randint(1, 6)
        lo = r.choice([0, 0, 1])
        free = r.random() < 0.25
        rowdep = r.random() < 0.3
        while True:
            a1, a2 = r.randint(-2, 2), r.randint(-2, 2)
            if free or rowdep:
                a2 = 0
            if a1 or a2:
                break
        deps = []
        for _ in range(r.randint(1, 4)):
            for _ in range(50):
                di, dj = r.randint(-2, 2), r.randint(-2, 2)
                if a1 * di + a2 * dj >= 1 and (di, dj) not in deps:
                    deps.append((di, dj))
                    break
        if not deps:
            deps = [(1, 0) if a1 > 0 else (-1, 0) if a1 < 0 else (0, 1 if a2 > 0 else -1)]
        if free and not any(a1 * di >= 1 for di, _ in deps):
            deps.append((1 if a1 > 0 else -1, 0))
        c1, c2 = r.randint(1, 9), r.randint(0, 9)
        hi = n + lo  # logical i in lo..=hi (n + 1 values); j in 0..m
        def off(v, c):
            return v if c == 0 else "%s %s %d" % (v, "-" if c > 0 else "+", abs(c))
        def wrapread(ie, je):
            """d[ie, je] inside a binding construct that keeps its value (the
            dependency analysis must see through it)."""
            rd = "d[%s, %s]" % (ie, je)
            w = r.randint(0, 12)
            if "rec-lettup" in AVOID and w in (2, 8, 11, 12):
                w = 0
            if w == 1:
                return "{ let t = %s; t }" % rd
            if w == 2:
                return "{ let (u, t) = (1, %s); t }" % rd
            if w == 3:
                return "{ let (t, u) = (%s, 1); t }" % rd
            if w == 4:
                return "{ let q = (i, %s); q.1 }" % rd
            if w == 5:
                return "fold(|a, b| a + b, 0, generate(1, |k| %s))" % rd
            if w == 6:
                return "{ let (c, t) = loop (c = 0, t = 0i64) while c < 1 { (c + 1, %s) }; t }" % rd
            if w == 7:
                return "map(|x| x + %s, [0i64])[0]" % rd
            if w == 8:
                return "{ let (u, v, t) = (true, 2.5, %s); t }" % rd
            if w == 9:
                return "(if true { %s } else { 0 })" % rd
            if w == 10:
                return "{ let ki = %s; let kj = %s; d[ki, kj] }" % (ie, je)
            if w == 11:
                return "{ let (ki, kj) = (%s, %s); d[ki, kj] }" % (ie, je)
            if w == 12:
                return "{ let (z, ki) = (0, %s); d[ki, %s] }" % (ie, je)
            return rd
        terms = []
        for di, dj in deps:
            terms.append("(if i - %d >= %d && i - %d <= %d && j - %d >= 0 && j - %d < %d { %s } else { %d })" % (
                di, lo, di, hi, dj, dj, m, wrapread(off("i", di), off("j", dj)), c2))
        if free:
            fdi = next(di for di, _ in deps if a1 * di >= 1)
            terms.append("(if i - %d >= %d && i - %d <= %d { d[%s, %d - 1 - j] } else { 1 })" % (
                fdi, lo, fdi, hi, off("i", fdi), m))
        rdi = 1 if a1 > 0 else -1
        if rowdep:
            if r.random() < 0.5:
                terms.append("(if i - %d >= %d && i - %d <= %d { fold(|a, b| a + b, 0, generate(%d, |k| d[%s, k])) } else { 2 })" % (
                    rdi, lo, rdi, hi, m, off("i", rdi)))
            else:
                terms.append("(if i - %d >= %d && i - %d <= %d { { let (k, acc) = loop (k = 0i64, acc = 0i64) while k < %d { (k + 1, acc + d[%s, k]) }; acc } } else { 2 })" % (
                    rdi, lo, rdi, hi, m, off("i", rdi)))
        body = "(i * %d + j + %s) %% 1000" % (c1, " + ".join(terms))
        text = "fn main() -> i64[,] {\n  let d = rec (i in %d..=%d, j in 0..%d) -> i64 {\n    %s\n  };\n  d\n}\n" % (
            lo, hi, m, body)
        memo = {}
        def val(i, j):
            if (i, j) not in memo:
                tot = i * c1 + j
                for di, dj in deps:
                    if lo <= i - di <= hi and 0 <= j - dj < m:
                        tot += val(i - di, j - dj)
                    else:
                        tot += c2
                if rowdep:
                    if lo <= i - rdi <= hi:
                        tot += sum(val(i - rdi, k) for k in range(m))
                    else:
                        tot += 2
                if free:
                    if lo <= i - fdi <= hi:
                        tot += val(i - fdi, m - 1 - j)
                    else:
                        tot += 1
                memo[(i, j)] = tot % 1000 if tot >= 0 else -((-tot) % 1000)
            return memo[(i, j)]
        sys.setrecursionlimit(10000)
        exp = [[[val(i, j) for j in range(m)] for i in range(lo, hi + 1)]]
        return text, ["--fn", "main"], exp

    def lits(self):
        """Literals in every spelling, typed by context or by suffix."""
        r = self.r
        items = []  # (type, text, expected)
        for _ in range(r.randint(3, 8)):
            t = r.choice(NUMS)
            c = r.random()
            if t in INTS:
                v = self.g.int_value(t)
                if v >= 0 and c < 0.3:
                    text = r.choice(["0x%x", "0X%X", "0x%X"]) % v
                elif v >= 0 and c < 0.45:
                    text = "0b" + bin(v)[2:]
                elif c < 0.6 and abs(v) >= 10:
                    sv = str(abs(v))
                    text = ("-" if v < 0 else "") + sv[:1] + "_" + sv[1:]
                else:
                    text = str(v)
                if r.random() < 0.3:
                    text += t
                items.append((t, text, v))
                continue
            v = r.choice([0.1, 2.5e3, 1e5, 1e16, 1e-5, 1e-4, 123456.75, 3.4028234663852886e38, 1e-45, 7e-46,
                          1e-50, 5e-324, 1.7976931348623157e308, 0.3, 16777217.0, 9007199254740993.0,
                          -2.0, -0.0, 1.0])
            if t == "f32" and abs(v) > 3.5e38:
                v = 1.5
            text = r.choice(["%r", "%.17g", "%.6e", "%.3E"]) % v
            if "." not in text and "e" not in text.lower():
                text += "."
            if text.lstrip("-")[0] == "." or ("e" in text.lower() and "." not in text and r.random() < 0.5):
                pass
            val = float(text)
            if val in (float("inf"), float("-inf")) or (t == "f32" and abs(val) > 3.4028234663852886e38):
                text, val = "1.5", 1.5  # out of range is an error (§1.5)
            if r.random() < 0.3:
                text += t
            items.append((t, text, fround(val, t)))
        if r.random() < 0.5:
            items.append(("i32", "0x1f32", 0x1f32))
        text = "fn main() -> (%s) {\n  (%s)\n}\n" % (", ".join(t for t, _, _ in items),
                                                    ", ".join(x for _, x, _ in items))
        if len(items) == 1:
            items.append(("bool", "true", True))
            text = "fn main() -> (%s, bool) {\n  (%s, true)\n}\n" % (items[0][0], items[0][1])
        exp = [fshow(v, t) if t in FLOATS else v for t, _, v in items]
        return text, ["--fn", "main"], exp

    def perms(self):
        """gather, backpermute, scatter, permute and filter on rank 1 and 2."""
        r = self.r
        n = r.randint(1, 8)
        xs = [r.randint(-50, 50) for _ in range(n)]
        R, C = r.randint(1, 4), r.randint(1, 4)
        m = [[r.randint(-9, 99) for _ in range(C)] for _ in range(R)]
        idx = [r.randint(0, n - 1) for _ in range(r.randint(0, 8))]
        ri = [r.randint(0, R - 1) for _ in range(len(idx))]
        ci = [r.randint(0, C - 1) for _ in range(len(idx))]
        a1, b1, q = r.randint(1, 5), r.randint(0, 5), r.randint(0, 9)
        perm = list(range(n))
        r.shuffle(perm)
        k = r.randint(0, n)
        sidx, svals = perm[:k], [r.randint(-9, 9) for _ in range(k)]
        sc = list(xs)
        for i, v in zip(sidx, svals):
            sc[i] = v
        pm = [0] * n
        for i, x in enumerate(xs):
            pm[(a1 * i + b1) % n] += x
        pm2 = [[0] * C for _ in range(R)]
        for i in range(n):
            pm2[(i * a1) % R][(i + b1) % C] = max(pm2[(i * a1) % R][(i + b1) % C], xs[i])
        cells = [(i, j) for i in range(R) for j in range(C)]
        r.shuffle(cells)
        cells = cells[:r.randint(0, len(cells))]
        sc2 = [row[:] for row in m]
        for t, (i, j) in enumerate(cells):
            sc2[i][j] = 1000 + t
        text = ("fn main(xs: i64[], m: i64[,], idx: i64[], ri: i64[], ci: i64[], sidx: i64[], svals: i64[],\n"
                "        cr: i64[], cc: i64[], cv: i64[]) -> (i64[], i64[], i64[], i64[], i64[], i64[], i64[,], i64[,], i64[]) {\n"
                "  (gather(idx, xs), gather((ri, ci), m), backpermute(%d, |i| (%d * i + %d) %% len(xs), xs),\n"
                "   scatter(sidx, svals, xs), permute(|a, b| a + b, fill(len(xs), 0i64), |i| (%d * i + %d) %% len(xs), xs),\n"
                "   filter(|x| x %% 3 == 0 || x > %d, xs), permute(|a, b| max(a, b), fill(shape(m), 0i64), |i| ((i * %d) %% %d, (i + %d) %% %d), xs),\n"
                "   scatter((cr, cc), cv, m), filter(|p| p.0 > 0, (xs, iota(len(xs)))).1)\n}\n") % (
            q, a1, b1, a1, b1, q, a1, R, b1, C)
        exp = [[xs[i] for i in idx], [m[i][j] for i, j in zip(ri, ci)],
               [xs[(a1 * i + b1) % n] for i in range(q)], sc, pm,
               [x for x in xs if (x % 3 == 0 if x >= 0 else -((-x) % 3) == 0) or x > q],
               pm2, sc2, [i for i, x in enumerate(xs) if x > 0]]
        def lst(v):
            return "[" + ",".join(str(x) for x in v) + "]"
        args = ["--fn", "main", lst(xs), "[" + ",".join(lst(row) for row in m) + "]", lst(idx), lst(ri),
                lst(ci), lst(sidx), lst(svals), lst([i for i, _ in cells]), lst([j for _, j in cells]),
                lst([1000 + t for t in range(len(cells))])]
        return text, args, exp

    def program(self):
        k = self.r.choice(["perms", "perms", "lits", "recs", "recs", "ints", "ints", "convs", "convs", "stencils", "stencil2", "scans", "reshapes",
                           "floats", "floats"])
        text, args, exp = getattr(self, k)()
        return text, args, "".join(show(v) + "\n" for v in exp)


def generate_oracle(seed, k):
    return Oracle(random.Random("arrayc-oracle-%d-%d" % (seed, k))).program()


def generate(seed, k):
    g = Gen(random.Random("arrayc-gen-%d-%d" % (seed, k)))
    return g.program()


def write(seed, count, out):
    os.makedirs(out, exist_ok=True)
    files = []
    for k in range(count):
        expected = None
        if k % 4 == 3:
            text, args, expected = generate_oracle(seed, k)
        else:
            text, args = generate(seed, k)
        name = "g%d_%d" % (seed, k)
        path = os.path.join(out, name + ".ac")
        with open(path, "w") as f:
            f.write("// ARGS: %s\n%s" % (" ".join(args), text))
        with open(os.path.join(out, name + ".args"), "w") as f:
            f.write("\n".join(args) + "\n")
        if expected is not None:
            with open(os.path.join(out, name + ".expected"), "w") as f:
                f.write(expected)
        files.append((path, args, expected))
    return files


def run(cmd, timeout=60):
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
        return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        return 124, "", "timeout after %ds" % timeout


def check_one(path, args, expected, opt, runner):
    def fail(step, rc, out, err):
        return "%s: step '%s' failed (exit %d)\n--- stdout ---\n%s--- stderr ---\n%s" % (
            path, step, rc, out[-4000:], err[-4000:])
    rc, p1, err = run([opt, path])
    if rc != 0 or err.strip():  # a sanitizer report may come with exit status 0
        return fail("arrayc-opt accepts the program", rc, p1, err)
    pp = path + ".p1.ac"
    with open(pp, "w") as f:
        f.write(p1)
    rc, p2, err = run([opt, pp])
    if rc != 0 or err.strip():
        return fail("arrayc-opt accepts its own print", rc, p2, err)
    if p1 != p2:
        import difflib
        diff = "".join(difflib.unified_diff(p1.splitlines(True), p2.splitlines(True), "print1", "print2"))
        return fail("print is a fixpoint", 1, diff, "")
    rc, o1, err = run([runner, path] + args)
    if rc != 0 or err.strip():
        return fail("arrayc-run exits 0 with no diagnostics", rc, o1, err)
    if not o1.strip():
        return fail("arrayc-run prints results", rc, o1, err)
    rc, o2, err = run([runner, pp] + args)
    if rc != 0 or err.strip():
        return fail("arrayc-run on the printed program", rc, o2, err)
    if o1 != o2:
        return fail("printed program gives identical output", 1, "original:\n%s\nprinted:\n%s" % (o1, o2), "")
    if expected is not None and o1 != expected:
        return fail("output equals the generator's expected output", 1,
                    "got:\n%s\nexpected:\n%s" % (o1, expected), "")
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--count", type=int, default=1)
    ap.add_argument("--out", default=".")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--opt")
    ap.add_argument("--run")
    ap.add_argument("--include-known-bugs", action="store_true",
                    help="also generate constructs that trigger already reported bugs")
    ap.add_argument("--keep-going", action="store_true", help="check every program, report all failures")
    a = ap.parse_args()
    if a.include_known_bugs:
        AVOID.clear()
    if not a.check:
        write(a.seed, a.count, a.out)
        return 0
    if not a.opt or not a.run:
        ap.error("--check needs --opt and --run")
    tmp = tempfile.mkdtemp(prefix="genprog-")
    nfail = 0
    try:
        for path, args, expected in write(a.seed, a.count, tmp):
            msg = check_one(path, args, expected, a.opt, a.run)
            if msg:
                nfail += 1
                with open(path) as f:
                    prog = f.read()
                print("FAIL seed %d program %s\n%s\n--- program ---\n%s\n--- arguments ---\n%s\n" % (
                    a.seed, os.path.basename(path), msg, prog, " ".join(args)))
                if not a.keep_going:
                    return 1
        print("checked %d programs (seed %d): %d failed" % (a.count, a.seed, nfail))
        return 1 if nfail else 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
