#!/usr/bin/env python3
"""bench/dist/report.py TSV LOADS SOURCE COMMAND: the strong-scaling report.

run.sh runs arrayc-bench-dist once per rank count with --tsv TSV (one line
per benchmark and rank count: name, size, ranks, strategy, arrayc ms,
reference ms, % of bandwidth, arrayc / reference / minimum bytes
communicated per element, STREAM GB/s, check) and records the load
average before and after each run in LOADS (ranks, before, after). This
prints the Markdown report: the machine, the date, the commit, the command,
then one table per benchmark with the speedup and the parallel efficiency
of arrayc and of the reference against their own 1-rank times.
"""
import datetime
import os
import platform
import subprocess
import sys


def sh(cmd, cwd=None):
    try:
        return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def machine():
    model = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
        mem = 0
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal"):
                mem = int(line.split()[1]) / 1024 / 1024
    except OSError:
        mem = 0
    mpi = sh(["mpirun", "--version"]).splitlines()
    return "%s, %d cores (nproc), %.0f GiB of memory, %s %s; %s" % (
        model or platform.processor(), os.cpu_count() or 0, mem, platform.system(),
        platform.release(), mpi[0] if mpi else "MPI version unknown")


def num(x, fmt):
    return "—" if x is None else fmt % x


def main():
    tsv, loads, source, command = sys.argv[1:5]
    rows = [line.rstrip("\n").split("\t") for line in open(tsv) if line.strip()]
    load = [line.rstrip("\n").split("\t") for line in open(loads) if line.strip()]
    commit = sh(["git", "log", "-1", "--format=%h %s"], cwd=source)
    dirty = sh(["git", "status", "--porcelain", "--untracked-files=no"], cwd=source)
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print("# Strong scaling over MPI ranks (bench/dist)\n")
    print("Machine: %s.\n" % machine())
    print("Date: %s. arrayc at %s%s.\n" % (now, commit or "an unknown commit",
                                          " (with local changes)" if dirty else ""))
    print("Command, from a Release build (`-DARRAYC_BENCH=ON`, MPI found):\n")
    print("```sh\n%s\n```\n" % command.strip())
    print("Each rank: one process, the CPU backend with one thread "
          "(`ARRAYC_NUM_THREADS=1`); the reference: plain C loops, gcc -O3 -march=native, "
          "one thread per rank. Times are medians of calls timed between two "
          "`MPI_Barrier`s (the slowest rank's). More ranks than cores "
          "oversubscribe: ranks then share cores, and their times say nothing "
          "about scaling beyond the core count.\n")
    print("| ranks | STREAM triad, all ranks at once | load average before | after |")
    print("|---|---|---|---|")
    triad = {}
    for r in rows:
        triad[int(r[2])] = float(r[10])
    for ranks, before, after in load:
        print("| %s | %s GB/s | %s | %s |" % (ranks, num(triad.get(int(ranks)), "%.1f"),
                                            before, after))
    print()
    names = []
    for r in rows:
        if r[0] not in names:
            names.append(r[0])
    for name in names:
        mine = sorted((r for r in rows if r[0] == name), key=lambda r: int(r[2]))
        base = {int(r[2]): r for r in mine}.get(1)
        print("## %s (%s)\n" % (name, mine[0][1]))
        print("| R | strategy | arrayc ms | speedup | efficiency | ref ms | ref speedup "
              "| ratio ref/ac | of bw | ac B/el | ref B/el | min B/el | check |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for r in mine:
            R = int(r[2])
            ac, ref = float(r[4]), float(r[5])
            sp = float(base[4]) / ac if base else None
            rsp = float(base[5]) / ref if base else None
            print("| %d | %s | %.2f | %s | %s | %.2f | %s | %.2f | %.1f%% | %s | %s | %s | %s |"
                  % (R, r[3], ac, num(sp, "%.2f"), num(sp / R if sp else None, "%.2f"),
                     ref, num(rsp, "%.2f"), ref / ac, float(r[6]), num(float(r[7]), "%.3g"),
                     num(float(r[8]), "%.3g"), num(float(r[9]), "%.3g"), r[11]))
        print()
    print(NOTES)


NOTES = """\
Columns: **strategy**, the distributed layer's choice for the function
(`ac_dist_function_strategy`: `local`, `staged`, `gather`, or the number
of a strategy newer than the harness; the sample sort's steps are called on each
rank's own keys, `local calls`); **speedup** and **efficiency**, arrayc's
1-rank time over its R-rank time, and that over R; **ref speedup**, the
same for the reference; **ratio ref/ac**, the reference's time over
arrayc's (above 1: arrayc faster); **of bw**, the bytes counted per element
(saxpy 12, sum 8, Jacobi 8 per cell and step, sort 8 per key: one read and
one write) over arrayc's time, over the STREAM triad bandwidth of all ranks
at once at that rank count; **ac B/el**, the array bytes arrayc sent,
summed over the ranks (`ac_dist_runtime_bytes_sent`; for the sort the
harness's own MPI bytes), per element and call; **ref B/el**, the bytes
the reference hands to MPI for other ranks; **min B/el**, what the
algorithm needs: saxpy nothing, sum R - 1 partial sums, Jacobi two halo
rows per internal block boundary and step, sample sort (R - 1)/R of the
keys plus every rank's 64 samples to every other rank, edit distance one
row of the table per internal block boundary (arrayc's bytes also count
the allgather of its two distributed strings, which every rank of the
reference is given; edit distance is compute-bound, so its "of bw" is 0
and its check column gives the cells per second).

The sample sort (regular sampling) is the harness's MPI algorithm; its
local steps are arrayc functions in arrayc's column (bench/dist/dist.ac:
`radix_sort`, an LSD radix sort of two bits per pass in an `iterate`, a
`scan` of three counts and a `scatter` each; `bucket_bounds`, a binary search per splitter;
`merge_runs`, the received runs merged by a binary search per key and
one `scatter`) and plain C in the reference's (an 8-bit LSD radix sort,
binary searches, a k-way merge). The sampling (64 regular samples per
rank, `MPI_Allgather`, `qsort` of the samples, R - 1 splitters) and the
exchange (`MPI_Alltoall` of the counts, `MPI_Alltoallv` of the keys) are
the same C code for both.
"""


if __name__ == "__main__":
    main()
