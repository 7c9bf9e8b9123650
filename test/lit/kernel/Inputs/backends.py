#!/usr/bin/env python3
"""Runs each call of an extern-kernel program on every backend that can run
host code (the interpreter, the CPU and the SIMT emulator), at -O0, the
default and -O3, and checks that all of them print what the interpreter
prints (the interpreter defines meaning). Prints "CALL => OUTPUT" once per
call, or "MISMATCH ..." and exits 1.

usage: backends.py ARRAYC_RUN LIB.so FILE.ac 'FN ARG ...' ...
"""
import shlex
import subprocess
import sys


def run(tool, lib, src, backend, opt, call):
    cmd = [tool, "--backend=" + backend, "--load", lib, src, "--fn"] + shlex.split(call)
    if opt:
        cmd.append(opt)
    p = subprocess.run(cmd, capture_output=True, text=True)
    out = p.stdout.strip() if p.returncode == 0 else "error: " + p.stderr.strip().splitlines()[0]
    return p.returncode, out


def main():
    tool, lib, src, calls = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    ok = True
    for call in calls:
        rc0, ref = run(tool, lib, src, "interp", None, call)
        for backend in ("interp", "cpu", "simt-emu"):
            for opt in (None, "-O0", "-O3"):
                rc, out = run(tool, lib, src, backend, opt, call)
                same = rc == rc0 and out == ref
                if not same:
                    print("MISMATCH %s on %s %s: %r, interpreter: %r" %
                          (call, backend, opt or "", out, ref))
                    ok = False
        print("%s => %s" % (call, " | ".join(ref.splitlines())))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
