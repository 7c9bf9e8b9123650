#!/usr/bin/env python3
"""Differential testing: runs programs on two backends and compares them.

    diff_backends.py --run ARRAYC_RUN [--backends interp,cpu] [--passes LIST]
                     [--rtol R] [--atol A] [--jobs N] PATH...

Each PATH is a .ac file or a directory (searched recursively for .ac files).
The invocations come from the file itself:

  * lit RUN lines that call `%arrayc-run %s ARGS...` (the arguments up to the
    first shell operator; `%s` is the file, `%S` its directory; lines with
    other substitutions in the arguments, or with -o, are skipped), and
  * `// ARGS: ARGS...` lines (written by test/gen/genprog.py).

With --docs FILE.md the example programs of a document checked by
test/docs/check_docs.py (an `arrayc` block followed by `<!-- run: ARGS -->`
or `<!-- run-error: ARGS -->` directives) are compared as well.

Every invocation runs on both backends (the first is the reference, the
interpreter by default), each with its default optimisation (none on the
interpreter, -O2 on compiled backends). --passes LIST gives the second one
`--passes=LIST` instead, so `--backends interp,interp --passes fuse` checks
that the fuse pass keeps every program's meaning. The backend name
`simt-emu+profile` runs the SIMT emulator with its profiler on
(`arrayc-run --profile`), whose counting must not change any result. They
must agree:

  * on the exit status;
  * on success, on every printed result: the same shapes, integers and bools
    equal, floats equal or within |a - b| <= max(rtol * max(|a|, |b|), atol)
    (defaults rtol=1e-5, atol=1e-9: element-wise float code is bit-identical
    to the interpreter's, and only reductions and scans, which parallel
    backends regroup, differ by rounding);
  * on failure, on the error's position (FILE:LINE:COL) and its message,
    a number wherever the reference prints one (see error_key).

One outcome is not a mismatch: on the GPU backend, a program that declares
an `extern fn` and fails with "... is host code and cannot be called on the
GPU" where the reference ran it is refused as docs/language.md documents;
such files are listed and counted in the summary line.

On a mismatch the program text, the arguments and both outputs are printed,
so the case can be added as a regression test; the exit status is 1.
Standard library only (check_output.py's parser does the comparison).
"""
import argparse
import concurrent.futures
import os
import re
import shlex
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import check_output  # noqa: E402
sys.path.insert(0, os.path.join(HERE, "..", "docs"))
import check_docs  # noqa: E402

OPERATORS = {">", ">>", "|", "&&", "||", ";", "2>&1", "2>", "<"}


def run_lines(text):
    """Yields the RUN commands of a lit test, continuation lines joined."""
    cmd = None
    for line in text.splitlines():
        m = re.match(r"\s*//\s*RUN:\s?(.*)$", line)
        if not m:
            if cmd is not None:
                yield cmd
                cmd = None
            continue
        part = m.group(1)
        cmd = part if cmd is None else cmd + " " + part
        if cmd.endswith("\\"):
            cmd = cmd[:-1]
        else:
            yield cmd
            cmd = None
    if cmd is not None:
        yield cmd


def invocations(path):
    """The argument lists (after the file name) to run for one .ac file."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    out = []
    for line in text.splitlines():
        m = re.match(r"\s*//\s*ARGS:\s*(.*)$", line)
        if m:
            out.append(shlex.split(m.group(1)))
    for cmd in run_lines(text):
        try:
            toks = shlex.split(cmd)
        except ValueError:
            continue
        while "%arrayc-run" in toks:
            i = toks.index("%arrayc-run")
            args = []
            for t in toks[i + 1:]:
                if t in OPERATORS or t.startswith(">") or t.startswith("2>"):
                    break
                args.append(t)
            toks = toks[i + 1:]
            if not args or args[0] != "%s":
                continue
            args = [a.replace("%S", os.path.dirname(path)) for a in args[1:]]
            if any("%" in a for a in args) or "-o" in args:
                continue
            args = [a for a in args if not a.startswith("--backend")]
            out.append(args)
    return out


def doc_programs(md_path, outdir):
    """Writes the runnable examples of a Markdown document to outdir as .ac
    files with `// ARGS:` lines (so a mismatch names a file one can rerun)."""
    with open(md_path, encoding="utf-8") as f:
        items = check_docs.parse_markdown(f.read(), [])
    files, prog, lines = [], None, []

    def flush():
        if prog is not None and lines:
            path = os.path.join(outdir, "%s_%d.ac" % (os.path.basename(md_path)[:-3], prog[0]))
            with open(path, "w", encoding="utf-8") as f:
                f.write("".join("// ARGS: %s\n" % " ".join(shlex.quote(a) for a in args)
                                for args in lines))
                f.write("// from %s line %d\n" % (md_path, prog[0]))
                f.write(prog[1])
            files.append(path)

    for it in items:
        if it.kind == "block" and it.info == "arrayc":
            flush()
            prog, lines = (it.line, it.text), []
        elif it.kind in ("run", "run-error") and prog is not None:
            lines.append(it.args)
    flush()
    return files


def run(arrayc_run, backend, path, args, passes=None):
    opt = [] if passes is None else ["--passes=" + passes]
    # "simt-emu+profile": the emulator with its profiler on (the counts go
    # to stderr; the results must not change)
    if backend.endswith("+profile"):
        backend = backend[:-len("+profile")]
        opt.append("--profile")
    p = subprocess.run([arrayc_run, "--backend=" + backend] + opt + [path] + args,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def first_error(stderr):
    for line in stderr.splitlines():
        if ": error:" in line:
            return line.strip()
    return stderr.strip().splitlines()[0] if stderr.strip() else ""


def error_key(line):
    """The position and the message with every integer written N: the
    backends must print the same message with a number wherever the
    interpreter prints one (compiled code carries every number of a
    message, runtime/rt.h, not a shortened form of it). The values may
    differ: when several elements fail, a parallel backend reports the one
    that failed first, the interpreter the first in order."""
    m = re.match(r"(.*?:\d+:\d+: error: )(.*)$", line)
    if not m:
        return line
    return m.group(1) + re.sub(r"-?\d+", "N", m.group(2))


def compare_outputs(ref, got, rtol, atol):
    rl = [l for l in ref.splitlines() if l.strip()]
    gl = [l for l in got.splitlines() if l.strip()]
    if len(rl) != len(gl):
        return ["%d result lines, expected %d" % (len(gl), len(rl))]
    diffs = []
    for i, (a, b) in enumerate(zip(rl, gl)):
        try:
            va, vb = check_output.parse_value(a), check_output.parse_value(b)
        except check_output.FormatError as e:
            return ["line %d: %s" % (i + 1, e)]
        out = []
        check_output.compare(va, vb, [], rtol, atol, out)
        diffs += ["line %d: %s" % (i + 1, d) for d in out]
    return diffs


# A backend that cannot call host code refuses a function that reaches an
# `extern fn` (docs/language.md, "Foreign functions"): on the GPU that
# refusal is the documented outcome, not a mismatch, when the reference ran
# the program and the error is exactly that one.
REFUSED = "refused"
HOST_EXTERN_ERROR = "is host code and cannot be called on the GPU"


def host_extern_refused(test_be, path, r, t):
    if not test_be.startswith("gpu") or r[0] != 0 or t[0] == 0:
        return False
    if HOST_EXTERN_ERROR not in first_error(t[2]):
        return False
    with open(path, encoding="utf-8", errors="replace") as f:
        return re.search(r"^\s*extern\s+fn\b", f.read(), re.M) is not None


def check_one(opts, path, args):
    """Returns None when the backends agree, else a report."""
    ref_be, test_be = opts.backends
    r = run(opts.run, ref_be, path, args)
    t = run(opts.run, test_be, path, args, opts.passes)
    problems = []
    if host_extern_refused(test_be, path, r, t):
        return REFUSED
    if r[0] != t[0]:
        problems.append("exit status %d on %s, %d on %s" % (r[0], ref_be, t[0], test_be))
    elif r[0] == 0:
        problems += compare_outputs(r[1], t[1], opts.rtol, opts.atol)
    else:
        er, et = first_error(r[2]), first_error(t[2])
        if error_key(et) != error_key(er):
            problems.append("different errors:\n    %s: %s\n    %s: %s" % (ref_be, er, test_be, et))
    if not problems:
        return None
    with open(path, encoding="utf-8", errors="replace") as f:
        prog = f.read()
    rep = ["MISMATCH %s %s" % (path, " ".join(shlex.quote(a) for a in args)),
           *("  " + p for p in problems[:10]),
           "  --- %s (status %d) ---" % (ref_be, r[0]), r[1].rstrip(), r[2].rstrip(),
           "  --- %s (status %d) ---" % (test_be, t[0]), t[1].rstrip(), t[2].rstrip(),
           "  --- program ---", prog.rstrip()]
    return "\n".join(x for x in rep if x)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--run", required=True, help="the arrayc-run executable")
    ap.add_argument("--backends", default="interp,cpu")
    ap.add_argument("--passes", default=None,
                    help="the pass list the second backend runs (arrayc-run --passes)")
    ap.add_argument("--rtol", type=float, default=1e-5)
    ap.add_argument("--atol", type=float, default=1e-9)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--docs", action="append", default=[], help="a Markdown document")
    ap.add_argument("--tmp", default=None, help="where --docs writes its programs")
    ap.add_argument("paths", nargs="+")
    opts = ap.parse_args()
    opts.backends = opts.backends.split(",")
    if len(opts.backends) != 2:
        ap.error("--backends needs two names")
    files = []
    for p in opts.paths:
        if os.path.isdir(p):
            for root, _, names in os.walk(p):
                files += [os.path.join(root, n) for n in sorted(names) if n.endswith(".ac")]
        else:
            files.append(p)
    if opts.docs:
        tmp = opts.tmp or tempfile.mkdtemp(prefix="arrayc-diff-")
        os.makedirs(tmp, exist_ok=True)
        for md in opts.docs:
            files += doc_programs(md, tmp)
    cases = [(f, a) for f in sorted(files) for a in invocations(f)]
    if not cases:
        print("diff_backends: no invocations found", file=sys.stderr)
        return 1
    failures, refused = 0, []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, opts.jobs)) as ex:
        for case, rep in zip(cases, ex.map(lambda c: check_one(opts, *c), cases)):
            if rep == REFUSED:
                refused.append(case[0])
            elif rep:
                failures += 1
                print(rep)
    test_name = opts.backends[1] + ("" if opts.passes is None else " --passes=" + opts.passes)
    for path in sorted(set(refused)):
        print("refused as documented (calls host code): %s" % path)
    print("diff_backends: %d invocations of %d programs, %d mismatches (%s vs %s)%s"
          % (len(cases), len(files), failures, opts.backends[0], test_name,
             ", %d refused as documented" % len(refused) if refused else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
