"""test/lit/aot/Inputs/truncate_check.py OPEN LIB.so DIR: truncates LIB.so
at many lengths (the ends of its headers, segments and sections, and
fractions of it) into DIR and opens each copy with OPEN (open_main.c), which
must refuse it with a one-line error, never die of a signal (a truncated
object used to crash inside dlopen with SIGBUS). Prints one line per kind of
refusal and a summary."""
import collections
import os
import re
import struct
import subprocess
import sys


def cut_points(data):
    size = len(data)
    points = {0, 1, 16, 63, 64, 65, size // 4, size // 2, 3 * size // 4, size - 1}
    (phoff, shoff) = struct.unpack_from("<QQ", data, 0x20)
    (phentsize, phnum, shentsize, shnum) = struct.unpack_from("<HHHH", data, 0x36)
    points |= {phoff + phentsize * phnum - 1, shoff, shoff + shentsize * shnum - 1}
    for i in range(phnum):
        (ptype, _flags, off, _va, _pa, filesz) = struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize)
        if ptype == 1 and filesz:  # PT_LOAD: its last byte, and its middle
            points |= {off + filesz - 1, off + filesz // 2}
    for i in range(shnum):
        (_name, stype, _fl, _addr, off, sz) = struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize)
        if stype != 8 and sz:  # not NOBITS
            points.add(off + sz - 1)
    return sorted(p for p in points if 0 <= p < size)


def main():
    opener, lib, out = sys.argv[1:4]
    data = open(lib, "rb").read()
    kinds = collections.Counter()
    bad = 0
    points = cut_points(data)
    for n in points:
        path = os.path.join(out, "libprog.so")  # the prefix stays libprog
        with open(path, "wb") as f:
            f.write(data[:n])
        r = subprocess.run([opener, path], capture_output=True, text=True, timeout=60)
        text = r.stdout.strip().splitlines()
        first = text[0] if text else ""
        if r.returncode != 1 or "cannot load" not in first:
            bad += 1
            print(f"length {n}: status {r.returncode}: {first}")
            continue
        # the reason, without the path and the byte counts
        reason = first.split(": ", 3)[-1]
        kinds[re.sub(r"[0-9]+", "N", reason)] += 1
    for k in sorted(kinds):
        print(f"refused: {k}")
    print(f"{len(points)} lengths, {len(points) - bad} refused, {bad} not refused")
    return 1 if bad else 0


sys.exit(main())
