#!/usr/bin/env python3
"""Differential test of arrayc-run --distributed against the interpreter.

    diff.py BUILD SOURCE [--ranks 1,2,3,4] [--mpiexec MPIEXEC] [--every K]

Collects calls from the examples (examples/README.md's arrayc-run lines)
and the end-to-end programs (test/e2e/*.ac: the `%arrayc-run %s --fn ...`
RUN lines, including those expected to fail with `not`), runs each once on
the reference interpreter (ARRAYC_BACKEND=interp arrayc-run ...) and then
all of them in one launch per rank count:

    mpiexec -np N arrayc-run --distributed --batch CALLS

(one mpirun start per N, not per call). Every call must give the
interpreter's results, or fail when the interpreter fails. Integers, bools
and shapes must be equal; floats agree within rtol 1e-4 (atol 1e-6): the
compiled backend folds in another order than the interpreter, and f32 sums
differ in their last bits (test/e2e/check_output.py's comparison).

Calls that do not fit a command line of their own are left out: those
with -o, @FILE arguments made by earlier RUN lines, --load, --profile,
--stats, --repeat; backend and pass options are dropped (every rank runs
its default backend, the interpreter runs the program as written).

Exit status 0 when every call agrees, 1 otherwise, 77 (skip) when the
build has no arrayc-run --distributed.
"""
import argparse
import concurrent.futures
import glob
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time

RTOL, ATOL = 1e-4, 1e-6


def e2e_calls(source):
    calls = []
    for path in sorted(glob.glob(os.path.join(source, "test", "e2e", "*.ac"))):
        for line in open(path, encoding="utf-8"):
            m = re.match(r"\s*// RUN:\s*(not\s+)?%arrayc-run\s+(.*)$", line)
            if not m or line.rstrip().endswith("\\"):
                continue
            try:
                words = shlex.split(m.group(2))
            except ValueError:
                continue
            call, ok = [], True
            it = iter(words)
            for w in it:
                if w in (">", "|", "2>&1", "2>", "&&", ">>") or w.startswith(">"):
                    break
                if w in ("--stats", "--profile", "-w") or w.startswith(("--backend", "--passes",
                                                                        "-O")):
                    continue
                if w in ("-o", "--load", "--repeat") or "%t" in w or w.startswith("--load"):
                    ok = False
                    break
                call.append(path if w == "%s" else w.replace("%S", os.path.dirname(path)))
            if ok and "--fn" in call and path in call:
                calls.append(call)
    return calls


def example_calls(source):
    calls = []
    for line in open(os.path.join(source, "examples", "README.md"), encoding="utf-8"):
        m = re.match(r"build/arrayc-run\s+(examples/\S+\.ac\s+--fn\s+.*)$", line.strip())
        if m:
            words = shlex.split(m.group(1))
            words[0] = os.path.join(source, words[0])
            calls.append(words)
    return calls


def reference(run, call):
    env = dict(os.environ, ARRAYC_BACKEND="interp")
    p = subprocess.run([run] + call, capture_output=True, text=True, env=env, timeout=120)
    return p.returncode, p.stdout


def parse_batch(out):
    """{line number: (failed, text)} from --batch's output."""
    got, cur, lines = {}, None, []
    for line in out.splitlines() + ["=== 0"]:
        m = re.match(r"=== (\d+)$", line)
        if m:
            if cur is not None:
                failed = bool(lines) and lines[-1].startswith("error: exit ")
                got[cur] = (failed, "\n".join(lines[:-1] if failed else lines))
            cur, lines = int(m.group(1)), []
        else:
            lines.append(line)
    return got


def same(check, exp, got):
    exp_lines, got_lines = exp.strip().splitlines(), got.strip().splitlines()
    if len(exp_lines) != len(got_lines):
        return False
    for e, g in zip(exp_lines, got_lines):
        out = []
        try:
            check.compare(check.parse_value(e), check.parse_value(g), [], RTOL, ATOL, out)
        except Exception:  # noqa: BLE001 - a malformed line is a difference
            return False
        if out:
            return False
    return True


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("source")
    ap.add_argument("--ranks", default="1,2,3,4")
    ap.add_argument("--mpiexec", default="mpirun")
    ap.add_argument("--every", type=int, default=1,
                    help="of the e2e calls, take every K-th (sanitizer builds: time)")
    ap.add_argument("--all-calls", action="store_true",
                    help="every e2e call, not only the first of each function")
    ap.add_argument("--rotate", action="store_true",
                    help="each e2e call on one rank count (in turn), not on all")
    a = ap.parse_args(argv)
    run = os.path.join(a.build, "arrayc-run")
    probe = subprocess.run([run, "--distributed", "--help"], capture_output=True, text=True)
    if "--distributed" not in probe.stdout or "without MPI" in probe.stderr:
        print("SKIPPED: arrayc-run was built without MPI")
        return 77
    sys.path.insert(0, os.path.join(a.source, "test", "e2e"))
    import check_output as check  # noqa: E402

    # every example; of the e2e programs, the first call of each function
    # (CI's time: the calls of one function mostly differ in their sizes)
    examples = example_calls(a.source)
    calls, seen = [], set()
    for c in examples + e2e_calls(a.source)[::a.every]:
        key = (c[0], c[c.index("--fn") + 1]) if c not in examples and not a.all_calls else tuple(c)
        if key not in seen:
            seen.add(key)
            calls.append(c)
    t0 = time.time()
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        refs = list(pool.map(lambda c: reference(run, c), calls))
    print("%d calls; the interpreter took %.1f s" % (len(calls), time.time() - t0))
    env = dict(os.environ, ARRAYC_NUM_THREADS="1", OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="1",
               OMPI_MCA_mpi_yield_when_idle="1")
    env.pop("ARRAYC_BACKEND", None)
    bad = 0
    ranks = [int(x) for x in a.ranks.split(",")]
    # call i runs on ranks[i % len(ranks)] ranks (the examples on all)
    runs_on = [ranks if c in examples or not a.rotate else [ranks[i % len(ranks)]]
               for i, c in enumerate(calls)]
    bad = 0
    for n in ranks:
        mine = [i for i in range(len(calls)) if n in runs_on[i]]
        with tempfile.NamedTemporaryFile("w", suffix=".calls", delete=False) as f:
            for i in mine:
                f.write(" ".join(shlex.quote(w) for w in calls[i]) + "\n")
            batch = f.name
        try:
            t0 = time.time()
            p = subprocess.run([a.mpiexec, "-np", str(n), run, "--distributed", "--batch", batch],
                               capture_output=True, text=True, env=env, timeout=900)
            got = parse_batch(p.stdout)
            wrong = 0
            for line, i in enumerate(mine, start=1):
                c, (rc, out) = calls[i], refs[i]
                g = got.get(line)
                ok = g is not None and (g[0] if rc != 0 else (not g[0] and same(check, out, g[1])))
                if not ok:
                    wrong += 1
                    if wrong <= 10:
                        print("np %d: %s\n  interpreter (exit %d): %s\n  distributed: %s"
                              % (n, " ".join(shlex.quote(w) for w in c), rc, out.strip()[:300],
                                 "missing" if g is None else
                                 ("error" if g[0] else g[1].strip()[:300])))
            print("np %d: %d of %d calls agree (%.1f s)" % (n, len(mine) - wrong, len(mine),
                                                           time.time() - t0))
            if wrong and p.returncode not in (0, 1, 2):
                print(p.stderr[-2000:])
            bad += wrong
        finally:
            os.unlink(batch)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
