"""The values of test/e2e/rec_rows_apart.ac by plain Python loops; checks the
interpreter's outputs (the files given: up, then down)."""
import sys

NN, MM = [0, 1, 7, 19], [3, 0, 9, 23]


def table(n, m, p, down):
    d = {}
    iis = range(n, -1, -1) if down else range(n + 1)
    for i in iis:
        jjs = range(m, -1, -1) if down else range(m + 1)
        for j in jjs:
            if (i == n or j + 2 > m) if down else (i == 0 or j < 2):
                d[i, j] = (i + 2 * j + p, j)
            else:
                s = -1 if down else 1
                d[i, j] = ((d[i - s, j - 2 * s][0] + 3 * d[i - s, j - s][0] + 5 * d[i - s, j][1]
                            + d[i, j - s][0]) % 1000003, d[i - s, j][0] % 11)
    total = 0
    for i in range(n + 1):
        row = 0
        for j in range(m + 1):
            row = (row + d[i, j][0]) % 1000003
        total = (total + row) % 1000003
    return total


for path, down in zip(sys.argv[1:], (False, True)):
    want = [table(NN[p], MM[p], p, down) for p in range(4)]
    got = open(path).read().strip()
    if got != str(want).replace("'", ""):
        print("rec_rows_apart: %s: got %s, want %s" % ("down" if down else "up", got, want))
        sys.exit(1)
