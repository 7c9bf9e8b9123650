#!/bin/sh
# bench/dist/run.sh: runs arrayc-bench-dist (bench/dist/bench_dist.c) under
# mpirun at 1, 2, 3 and 4 ranks and writes the strong-scaling report
# (bench/dist/report.py: speedup and efficiency against 1 rank, the ratio
# against the C+MPI reference, the fraction of the bandwidth, the bytes
# communicated per element against the minimum), with the machine, the
# date, the commit and the load average around each rank count.
#
#   bench/dist/run.sh [--build DIR] [--out FILE.md] [--ranks "1 2 3 4"] [HARNESS ARGS...]
#   bench/dist/run.sh --quick [--build DIR]
#
# DIR is the build tree (default: build beside bench/); FILE.md defaults to
# standard output; HARNESS ARGS go to every run (--repeat 5, --only saxpy,
# --sort-log2 22, ...). --quick is ctest's bench.dist.smoke: tiny sizes,
# checks only, at 1 and 2 ranks; it passes when every check passes, and
# skips (exit 77, the reason on standard output and in $ARRAYC_SKIP_LOG)
# without mpirun or without the harness (built with ARRAYC_MPI and
# ARRAYC_BENCH). $MPIEXEC names another launcher.
#
# Open MPI is told to allow root and more ranks than cores, and each rank's
# pool has one thread, so that ranks, not threads, scale.
set -u
cmd="bench/dist/run.sh $*"
here=$(cd "$(dirname "$0")" && pwd)
build=$here/../../build
out=""
ranks="1 2 3 4"
quick=0
while [ $# -gt 0 ]; do
  case $1 in
  --quick) quick=1 ;;
  --build) build=$2; shift ;;
  --out) out=$2; shift ;;
  --ranks) ranks=$2; shift ;;
  *) break ;;
  esac
  shift
done
skip() {
  echo "SKIPPED: $1"
  [ -n "${ARRAYC_SKIP_LOG:-}" ] && echo "bench.dist.smoke: $1" >> "$ARRAYC_SKIP_LOG"
  exit 77
}
mpiexec=${MPIEXEC:-mpirun}
command -v "$mpiexec" > /dev/null 2>&1 ||
  skip "no $mpiexec: MPI is not installed (apt-get install libopenmpi-dev openmpi-bin)"
bin=$build/arrayc-bench-dist
[ -x "$bin" ] || skip "$bin is not built (it needs MPI: ARRAYC_MPI and ARRAYC_BENCH)"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 ARRAYC_NUM_THREADS=1

if [ $quick = 1 ]; then
  for np in 1 2; do
    "$mpiexec" -np $np "$bin" --quick "$@" || { echo "FAILED at $np ranks"; exit 1; }
  done
  exit 0
fi

tsv=$(mktemp) loads=$(mktemp)
trap 'rm -f "$tsv" "$tsv.md" "$loads"' EXIT
for np in $ranks; do
  before=$(cut -d' ' -f1-3 /proc/loadavg)
  "$mpiexec" -np $np "$bin" --tsv "$tsv" "$@" >&2 || { echo "FAILED at $np ranks" >&2; exit 1; }
  printf '%s\t%s\t%s\n' "$np" "$before" "$(cut -d' ' -f1-3 /proc/loadavg)" >> "$loads"
done
if [ -n "$out" ]; then
  # written beside, then moved: the report looks at whether the work tree
  # has changes, which a half-written $out would be
  python3 "$here/report.py" "$tsv" "$loads" "$here/../.." "$cmd" > "$tsv.md" &&
    mv "$tsv.md" "$out"
else
  python3 "$here/report.py" "$tsv" "$loads" "$here/../.." "$cmd"
fi
