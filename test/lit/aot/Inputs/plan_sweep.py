"""test/lit/aot/Inputs/plan_sweep.py: the plan-edit sweep (issue 18).

    plan_sweep.py DRIVER LIB PREFIX WORKDIR [--recompute [--max-crashes C]] [--sample K]

LIB is a shared library of examples/dotp.ac (arrayc --target=cpu --shared)
and DRIVER is sweep_main.c built against libarrayc_rt. The script finds the
bundle text inside LIB (runtime/bundle.h: plans and signatures) and its
checksum (the symbol PREFIX_arrayc_bundle_hash, FNV-1a of the text: found
as those 8 bytes), then for every digit of the text and every other digit
writes a copy of LIB with that one byte changed and runs DRIVER on it
(with a timeout). With --recompute the copy's checksum is recomputed too,
so the edit reaches the bundle and plan parsers and the plan validator (as
if someone had edited the file on purpose). --sample K runs a fixed-seed
sample of K edits instead of all of them.

Each edit must be refused at load (DRIVER exits 3 with an error naming the
problem), or give the original answer. Without --recompute every edit
must be refused by the checksum. With --recompute an edit may also fail
the call with a clean error (exit 4: the edited plan says something else,
such as a wrong site, and the runtime reports it) or give another answer
(an edited constant or an integer word read in place of another is a
well-typed plan that computes something else); it must never hang (the
timeout) or exit otherwise, and at most C edits (default 0) may crash: the
values a kernel trusts (a piece count against the size of the buffer of
partial results) are not something the plan validator can know, and C
counts the edits of them that still crash (docs/runtime.md §11). Prints a
summary line per outcome and every offending edit; exits 1 if an edit
breaks these rules.
"""
import os
import random
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor


def fnv1a(data):
    h = 14695981039346656037
    for c in data:
        h ^= c
        h = (h * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def find_bundle(so):
    start = so.find(b"arrayc-bundle 2\ncompiler ")
    if start < 0 or so.find(b"arrayc-bundle 2\ncompiler ", start + 1) >= 0:
        sys.exit("plan_sweep: no single bundle in the library")
    # the text ends with "end\n"; the checksum symbol holds its FNV-1a
    pos = start
    while True:
        end = so.find(b"\nend\n", pos)
        if end < 0:
            sys.exit("plan_sweep: no checksum of the bundle found in the library")
        end += 5
        h = fnv1a(so[start:end]).to_bytes(8, "little")
        at = so.find(h)
        if at >= 0 and so.find(h, at + 1) < 0:
            return start, end, at
        pos = end - 1


def main():
    args = sys.argv[1:]
    recompute = "--recompute" in args
    sample = None
    max_crashes = 0
    if "--max-crashes" in args:
        max_crashes = int(args[args.index("--max-crashes") + 1])
        del args[args.index("--max-crashes"):args.index("--max-crashes") + 2]
    if "--sample" in args:
        sample = int(args[args.index("--sample") + 1])
        del args[args.index("--sample"):args.index("--sample") + 2]
    args = [a for a in args if a != "--recompute"]
    driver, lib, prefix, work = args
    n = "100000"
    so = open(lib, "rb").read()
    start, end, hash_at = find_bundle(so)
    os.makedirs(work, exist_ok=True)
    env = dict(os.environ, ARRAYC_NUM_THREADS="2")

    def run(path):
        try:
            p = subprocess.run([driver, path, prefix, n], capture_output=True, timeout=20,
                               env=env)
            return p.returncode, p.stdout.decode(errors="replace").strip()
        except subprocess.TimeoutExpired:
            return "hang", ""

    code, want = run(lib)
    if code != 0 or not want.startswith("ok "):
        sys.exit("plan_sweep: the unedited library gives %r (status %s)" % (want, code))
    edits = [(i, d) for i in range(start, end) if 48 <= so[i] <= 57
             for d in range(48, 58) if d != so[i]]
    if sample is not None and sample < len(edits):
        edits = random.Random(18).sample(edits, sample)

    def one(k_edit):
        k, (i, d) = k_edit
        data = bytearray(so)
        data[i] = d
        if recompute:
            data[hash_at:hash_at + 8] = fnv1a(bytes(data[start:end])).to_bytes(8, "little")
        # a fresh name per edit: the dynamic loader keeps what it loaded by name
        path = os.path.join(work, "lib%s.%d.so" % (prefix[3:] if prefix.startswith("lib")
                                                   else prefix, k))
        with open(path, "wb") as f:
            f.write(data)
        code, out = run(path)
        os.remove(path)
        return i, d, code, out

    counts = {}
    bad = []
    with ThreadPoolExecutor(max_workers=2) as pool:
        for i, d, code, out in pool.map(one, enumerate(edits)):
            if code == 3 and out.startswith("load: ") and "error: " in out:
                kind = "refused at load"
            elif code == 0 and out == want:
                kind = "original answer"
            elif recompute and code == 4 and out.startswith("call: ") and "error: " in out:
                kind = "error at the call"
            elif recompute and code == 0 and out.startswith("ok "):
                kind = "another answer"
            else:
                kind = ("hang" if code == "hang" else "crash" if isinstance(code, int) and code < 0
                        else "wrong answer or exit")
                ctx = so[max(start, i - 30):i].decode(errors="replace")
                bad.append("%s: byte %d '%c' -> '%c' after %r: status %s: %s" %
                           (kind, i - start, so[i], d, ctx, code, out))
            counts[kind] = counts.get(kind, 0) + 1
    print("%d edits of %d digits%s" % (len(edits), sum(1 for i in range(start, end)
                                                     if 48 <= so[i] <= 57),
                                        ", checksum recomputed" if recompute else ""))
    for kind in sorted(counts):
        print("%s: %d" % (kind, counts[kind]))
    for b in bad:
        print(b)
    crashes = counts.get("crash", 0)
    allowed = recompute and crashes <= max_crashes and len(bad) == crashes
    if recompute and crashes > max_crashes:
        print("more crashes (%d) than the %d allowed" % (crashes, max_crashes))
    sys.exit(0 if not bad or allowed else 1)


if __name__ == "__main__":
    main()
