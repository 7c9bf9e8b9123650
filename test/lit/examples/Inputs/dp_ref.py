#!/usr/bin/env python3
"""Checks examples/recurrences against plain-Python dynamic programming.

    dp_ref.py ARRAYC_RUN EXAMPLES_DIR BACKEND [SEED]
    dp_ref.py ARRAYC_RUN EXAMPLES_DIR BACKEND --args

With --args, runs every `// ARGS:` line of nussinov.ac and matrix_chain.ac
on BACKEND and prints the results (the known answers, checked by the test).
Otherwise, for random inputs (RNA sequences of 0..60 bases and chains of 1..24
matrices) computes Nussinov's pair count and the matrix-chain cost and split
table by the textbook loops (shortest intervals first), runs the examples
with arrayc-run on BACKEND, and compares. Prints one line per mismatch and
a summary; exit status 1 on any mismatch. Standard library only.
"""
import math
import random
import shlex
import subprocess
import sys

PAIRS = {(65, 85), (85, 65), (67, 71), (71, 67), (71, 85), (85, 71)}


def nussinov(s, h):
    n = len(s)
    d = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            if j - i <= h:
                continue
            best = max(d[i + 1][j], d[i][j - 1], d[i + 1][j - 1] + ((s[i], s[j]) in PAIRS))
            for k in range(i + 1, j):
                best = max(best, d[i][k] + d[k + 1][j])
            d[i][j] = best
    return d[0][n - 1] if n else 0


def chain(p):
    n = len(p) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[-1] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            best = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + p[i] * p[k + 1] * p[j + 1]
                if best is None or c < best:
                    best, split[i][j] = c, k
            cost[i][j] = best
    return cost[0][n - 1], split


CASINO_PI = [0.5, 0.5]
CASINO_A = [[0.95, 0.05], [0.1, 0.9]]
CASINO_B = [[1.0 / 6] * 6, [0.1] * 5 + [0.5]]


def rolls(rnd, count):
    """Observations drawn from the casino model."""
    s = 0 if rnd.random() < CASINO_PI[0] else 1
    out = []
    for _ in range(count):
        u, face = rnd.random(), 0
        while face < 5 and u >= CASINO_B[s][face]:
            u -= CASINO_B[s][face]
            face += 1
        out.append(face)
        s = s if rnd.random() < CASINO_A[s][s] else 1 - s
    return out


def forward_scaled(pi, a, b, obs):
    """log P(obs) by the forward algorithm, rescaling alpha at every step."""
    n = len(pi)
    alpha = [pi[s] * b[s][obs[0]] for s in range(n)]
    total = 0.0
    for t in range(len(obs)):
        if t > 0:
            alpha = [b[s][obs[t]] * sum(alpha[k] * a[k][s] for k in range(n)) for s in range(n)]
        c = sum(alpha)
        total += math.log(c)
        alpha = [x / c for x in alpha]
    return total


def viterbi(pi, a, b, obs):
    """The example's own recurrence, operation for operation."""
    n, m = len(pi), len(obs)
    v = [[None] * n for _ in range(m)]
    for t in range(m):
        for s in range(n):
            e = math.log(b[s][obs[t]])
            if t == 0:
                v[t][s] = (math.log(pi[s]) + e, -1)
                continue
            best = (-math.inf, -1)
            for k in range(n):
                q = (v[t - 1][k][0] + math.log(a[k][s]), k)
                if q[0] > best[0] or (q[0] == best[0] and q[1] < best[1]):
                    best = q
            v[t][s] = (e + best[0], best[1])
    last = (-math.inf, -1)
    for s in range(n):
        q = (v[m - 1][s][0], s)
        if q[0] > last[0] or (q[0] == last[0] and q[1] < last[1]):
            last = q
    path = [0] * m
    path[m - 1] = last[1]
    for t in range(m - 2, -1, -1):
        path[t] = v[t + 1][path[t + 1]][1]
    return last[0], path


def close(got, want, rtol):
    try:
        return abs(float(got) - want) <= rtol * abs(want)
    except ValueError:
        return False


AMINO = "ARNDCQEGHILKMFPSTWYV"


def blosum62(example):
    """The matrix as protein.ac writes it (its literal is the reference's
    input: the test checks the recurrence, not the transcription)."""
    with open(example, encoding="utf-8") as f:
        text = f.read()
    body = text[text.index("fn blosum62()"):]
    body = body[body.index("[["):body.index("]]") + 2]
    return [[int(v) for v in row.strip(" []\n").split(",")] for row in body[1:-1].split("],")]


def gotoh(m, a, b, gap_open=12, extend=1):
    none = -1000000
    n, k = len(a), len(b)
    H = [[0] * (k + 1) for _ in range(n + 1)]
    E = [[none] * (k + 1) for _ in range(n + 1)]
    F = [[none] * (k + 1) for _ in range(n + 1)]
    for i in range(1, n + 1):
        for j in range(1, k + 1):
            E[i][j] = max(E[i][j - 1] - extend, H[i][j - 1] - gap_open)
            F[i][j] = max(F[i - 1][j] - extend, H[i - 1][j] - gap_open)
            H[i][j] = max(0, H[i - 1][j - 1] + m[a[i - 1]][b[j - 1]], E[i][j], F[i][j])
    return H, E, F


def residues(s):
    return [AMINO.index(chr(c)) if chr(c) in AMINO else 20 for c in s]


def local_align(m, s, t, gap_open=12):
    a, b = residues(s), residues(t)
    H, E, F = gotoh(m, a, b)
    top = (0, 0, 0)
    for i in range(len(a) + 1):
        for j in range(len(b) + 1):
            if H[i][j] > top[0]:
                top = (H[i][j], i, j)
    i, j, st = top[1], top[2], 3 if top[0] == 0 else 0
    cols = []
    while st != 3:
        if st == 0:
            if H[i][j] == 0:
                st = 3
            elif i > 0 and j > 0 and H[i][j] == H[i - 1][j - 1] + m[a[i - 1]][b[j - 1]]:
                cols.append((i - 1, j - 1))
                i, j, st = i - 1, j - 1, 3 if H[i - 1][j - 1] == 0 else 0
            else:
                st = 1 if H[i][j] == E[i][j] else 2
        elif st == 1:
            cols.append((-1, j - 1))
            st = 0 if E[i][j] == H[i][j - 1] - gap_open else 1
            j -= 1
        else:
            cols.append((i - 1, -1))
            st = 0 if F[i][j] == H[i - 1][j] - gap_open else 2
            i -= 1
    cols.reverse()
    return top[0], [c[0] for c in cols], [c[1] for c in cols]


def global_align(s, t, gap=1):
    """Needleman-Wunsch and global.ac's traceback, rule for rule."""
    n, m = len(s), len(t)
    sc = lambda a, b: 1 if a == b else -1
    d = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n + 1):
        for j in range(m + 1):
            if i == 0:
                d[i][j] = -gap * j
            elif j == 0:
                d[i][j] = -gap * i
            else:
                d[i][j] = max(d[i - 1][j - 1] + sc(s[i - 1], t[j - 1]),
                              max(d[i - 1][j] - gap, d[i][j - 1] - gap))
    i, j, cols = n, m, []
    while i or j:
        if i > 0 and j > 0 and d[i][j] == d[i - 1][j - 1] + sc(s[i - 1], t[j - 1]):
            cols.append((i - 1, j - 1))
            i, j = i - 1, j - 1
        elif i > 0 and d[i][j] == d[i - 1][j] - gap:
            cols.append((i - 1, -1))
            i -= 1
        else:
            cols.append((-1, j - 1))
            j -= 1
    cols.reverse()
    return d[n][m], [c[0] for c in cols], [c[1] for c in cols]


def protein(rnd, lo, hi):
    return [ord(rnd.choice(AMINO + "X")) for _ in range(rnd.randint(lo, hi))]


def run(tool, path, backend, args):
    r = subprocess.run([tool, "-w", "--backend=" + backend, path] + args,
                       capture_output=True, text=True, timeout=300)
    return r.stdout.strip() + ("" if r.returncode == 0 else " [exit %d: %s]" % (r.returncode, r.stderr.strip()))


def lit(xs):
    return "[" + ", ".join(str(x) for x in xs) + "]"


def args_lines(tool, ex, backend):
    for name in ("nussinov.ac", "matrix_chain.ac", "hmm.ac", "protein.ac", "global.ac"):
        with open(ex + "/" + name, encoding="utf-8") as f:
            for line in f:
                if line.startswith("// ARGS: "):
                    print(run(tool, ex + "/" + name, backend, shlex.split(line[len("// ARGS: "):])))
    return 0


def main():
    tool, ex, backend = sys.argv[1], sys.argv[2], sys.argv[3]
    if sys.argv[4:] == ["--args"]:
        return args_lines(tool, ex, backend)
    rnd = random.Random(int(sys.argv[4]) if len(sys.argv) > 4 else 16)
    bad = runs = 0
    for _ in range(8):
        s = [rnd.choice([65, 67, 71, 85]) for _ in range(rnd.randint(0, 60))]
        h = rnd.randint(0, 3)
        want = str(nussinov(s, h))
        got = run(tool, ex + "/nussinov.ac", backend, ["--fn", "nussinov", lit(s), str(h)])
        runs += 1
        if got != want:
            bad += 1
            print("MISMATCH nussinov %s %d: want %s, got %s" % (lit(s), h, want, got))
    for _ in range(8):
        p = [rnd.randint(1, 60) for _ in range(rnd.randint(2, 25))]
        cost, split = chain(p)
        want = "%d\n%s" % (cost, "[" + ", ".join(lit(r) for r in split) + "]")
        got = run(tool, ex + "/matrix_chain.ac", backend, ["--fn", "chain", lit(p)])
        runs += 1
        if got != want:
            bad += 1
            print("MISMATCH chain %s: want %s, got %s" % (lit(p), want, got))
    model = [lit(CASINO_PI), "[" + ", ".join(lit(r) for r in CASINO_A) + "]",
             "[" + ", ".join(lit(r) for r in CASINO_B) + "]"]
    for count in (1, 3000):
        obs = rolls(rnd, count)
        want = forward_scaled(CASINO_PI, CASINO_A, CASINO_B, obs)
        got = run(tool, ex + "/hmm.ac", backend, ["--fn", "log_likelihood"] + model + [lit(obs)])
        runs += 1
        if not close(got, want, 1e-9):
            bad += 1
            print("MISMATCH log_likelihood of %d rolls: want %r, got %s" % (count, want, got))
        score, path = viterbi(CASINO_PI, CASINO_A, CASINO_B, obs)
        got = run(tool, ex + "/hmm.ac", backend, ["--fn", "viterbi"] + model + [lit(obs)]).split("\n")
        runs += 1
        if len(got) != 2 or not close(got[0], score, 1e-12) or got[1] != lit(path):
            bad += 1
            print("MISMATCH viterbi of %d rolls: want %r %s, got %s" % (count, score, lit(path)[:80], got))
    m = blosum62(ex + "/protein.ac")
    dna = lambda: [rnd.choice(b"ACGT") for _ in range(rnd.randint(0, 50))]
    cases = [("protein.ac", lambda x, y: local_align(m, x, y), lambda: protein(rnd, 0, 60)),
             ("global.ac", global_align, dna)]
    for name, aligner, sequence in cases:
        for _ in range(4):
            s1, s2 = sequence(), sequence()
            score, ca, cb = aligner(s1, s2)
            want = "%d\n%s\n%s" % (score, lit(ca), lit(cb))
            got = run(tool, ex + "/" + name, backend, ["--fn", "align", lit(s1), lit(s2)])
            runs += 1
            if got != want:
                bad += 1
                print("MISMATCH %s align %s %s: want %s, got %s" % (name, lit(s1), lit(s2), want, got))
    pairs = [(protein(rnd, 0, 40), protein(rnd, 0, 40)) for _ in range(30)]
    want = lit([local_align(m, x, y)[0] for x, y in pairs])
    so, to = [0], [0]
    for x, y in pairs:
        so.append(so[-1] + len(x))
        to.append(to[-1] + len(y))
    got = run(tool, ex + "/protein.ac", backend,
              ["--fn", "scores", lit([c for x, _ in pairs for c in x]), lit(so),
               lit([c for _, y in pairs for c in y]), lit(to)])
    runs += 1
    if got != want:
        bad += 1
        print("MISMATCH scores of %d pairs: want %s, got %s" % (len(pairs), want, got))
    print("dp_ref: %d runs on %s, %d mismatches" % (runs, backend, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
