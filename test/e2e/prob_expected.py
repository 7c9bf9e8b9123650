#!/usr/bin/env python3
"""Writes test/e2e/expected/prob.*.expected, independently of arrayc.

    python3 test/e2e/prob_expected.py

The values of test/e2e/prob.ac computed from docs/language.md §6.7's
definitions with Python's decimal module (50 digits) where a result is a
logarithm of something an f64 cannot hold, and with ordinary floats where it
can: the HMM likelihood by the scaled forward algorithm (Rabiner), not in log
space, so that it checks arrayc's log-space sums by another route. Only the
standard library is used.
"""
import decimal
import math
import os

D = decimal.Decimal
decimal.getcontext().prec = 50
HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "expected")


def fmt(x):
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, int):
        return str(x)
    if isinstance(x, list):
        return "[" + ", ".join(fmt(v) for v in x) + "]"
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return repr(x)


def write(name, header, *lines):
    with open(os.path.join(HERE, "prob.%s.expected" % name), "w") as f:
        f.write("# prob.ac --fn %s\n" % header)
        for line in lines:
            f.write(line if isinstance(line, str) else fmt(line))
            f.write("\n")


def dlog(x):
    """log of a non-negative Decimal or float, -inf for 0."""
    x = D(x)
    return float("-inf") if x == 0 else float(x.ln())


def log_sub(x, y):
    """log(e^x - e^y) exactly (then rounded), with §6.7's special cases."""
    if math.isnan(x) or math.isnan(y) or y > x:
        return float("nan")
    if x == y:
        return float("nan") if x == float("inf") else float("-inf")
    if math.isinf(x) or math.isinf(y):
        return x
    # e^x - e^y = e^x (1 - e^(y-x))
    return float(D(x) + (1 - (D(y) - D(x)).exp()).ln())


# ---- ops 0.5 0.25 ----
p, q = D("0.5"), D("0.25")
write("ops", "ops 0.5 0.25",
      dlog(p * q), dlog(p + q), dlog(p - q), "nan", 2.0, dlog(q / p),
      False, True, False, True,
      dlog(max(p, q)), dlog(min(p, q)),
      dlog(p * D("0.5")), dlog(p + 1), float("-inf"),
      "# rtol=1e-07 atol=0", 0.25,
      15, float("-inf"), "# rtol=1e-12 atol=0",
      float(2 * D("1e-300").ln()), float(D("-1234.5") + p.ln()))

# ---- log_sub_edges ----
inf, nan = float("inf"), float("nan")
xs = [0.0, -inf, 1.0, inf, inf, nan, 0.0, 0.0, 0.0, 3.0, -700.0]
ys = [0.0, -inf, 2.0, 1.0, inf, 1.0, -1.0e-10, -50.0, -0.5, -inf, -701.0]
f64 = [log_sub(x, y) for x, y in zip(xs, ys)]
write("log_sub_edges", "log_sub_edges", "# rtol=1e-14 atol=0", f64, "# rtol=1e-06 atol=0", f64)

# ---- sums 200: e^(-1000 - i) ----
n = 200
ps = [(D(-1000) - i).exp() for i in range(n)]
prefix, acc = [], D(0)
for v in ps:
    acc += v
    prefix.append(dlog(acc))
write("sums", "sums 200", "# rtol=1e-13 atol=0", dlog(sum(ps)), prefix,
      dlog(sum(v * v for v in ps)))


# ---- the casino ----
def roll(t):
    return 5 if 1000 <= t < 2000 and t % 3 == 0 else (t * 7919 + 13) % 6


def emit(s, o):
    return 1.0 / 6.0 if s == 0 else (0.5 if o == 5 else 0.1)


TRANS = [[0.95, 0.05], [0.1, 0.9]]


def forward_scaled(T):
    alpha = [0.5 * emit(s, roll(0)) for s in range(2)]
    logscale = 0.0
    for t in range(1, T):
        c = sum(alpha)
        logscale += math.log(c)
        alpha = [a / c for a in alpha]
        alpha = [emit(s, roll(t)) * sum(alpha[k] * TRANS[k][s] for k in range(2)) for s in range(2)]
    return logscale + math.log(sum(alpha))


def forward_plain(T):
    alpha = [0.5 * emit(s, roll(0)) for s in range(2)]
    for t in range(1, T):
        alpha = [emit(s, roll(t)) * sum(alpha[k] * TRANS[k][s] for k in range(2)) for s in range(2)]
    return alpha[0] + alpha[1]


write("casino", "casino 3000", "# rtol=1e-10 atol=0", forward_scaled(3000))
write("casino_plain", "casino_plain 3000", forward_plain(3000))


def viterbi(T):
    lg = math.log
    v = [(lg(0.5) + lg(emit(s, roll(0))), -1) for s in range(2)]
    back = [[-1, -1]]
    for t in range(1, T):
        nv, nb = [], []
        for s in range(2):
            best = max(range(2), key=lambda k: (v[k][0] + lg(TRANS[k][s]), -k))
            nv.append((v[best][0] + lg(TRANS[best][s]) + lg(emit(s, roll(t))), best))
            nb.append(best)
        v = nv
        back.append(nb)
    last = 1 if v[1][0] > v[0][0] else 0
    score, s, loaded = v[last][0], last, 0
    for t in range(T - 1, -1, -1):
        loaded += s
        s = back[t][s]
    return score, loaded


score, loaded = viterbi(3000)
write("viterbi", "viterbi 3000", "# rtol=1e-10 atol=0", score, loaded)

# ---- boundary: logs in, logs out ----
ls = [0.0, -1.0, -800.0, -inf]
write("boundary", "boundary '[0.0, -1.0, -800.0, -inf]' -2.0", "# rtol=1e-14 atol=0",
      [l - 2.0 for l in ls], dlog(sum(D(l).exp() if l != -inf else D(0) for l in ls)),
      [math.exp(l) for l in ls])
