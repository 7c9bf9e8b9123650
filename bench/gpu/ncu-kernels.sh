#!/bin/bash
# bench/gpu/ncu-kernels.sh BUILD_DIR OUT_DIR [BENCH...]: each kernel's own
# time and traffic, read by Nsight Compute on the GPU machine.
#
# arrayc-gpubench times whole calls (bench/README.md): arrayc's time is a
# host clock around ac_function_call, so a fixed cost per call (uploads,
# the control block's read-back, synchronisation) is inside every row. This
# script separates the two: it runs `arrayc-gpubench --only B --repeat 3`
# under `ncu` for each benchmark B and records, for the first launches of
# every kernel (arrayc's, named kN_SKELETON, and the reference's), its
# duration, DRAM bytes, registers, block size, shared memory and achieved
# occupancy. ncu replays each profiled kernel with the caches flushed
# (its default --cache-control all) and never touches the clocks
# (--clock-control none: the device tool's rules).
#
# Writes OUT_DIR/ncu-B.csv per benchmark and OUT_DIR/ncu-summary.md (one
# row per kernel launch). Needs ncu (the CUDA toolkit's Nsight Compute);
# without it prints why and exits 77. Run by hand on the GPU machine after
# run-on-device.sh has unpacked the build:
#
#   bash bench/gpu/ncu-kernels.sh build-gpu/build "$OUT" saxpy sdot reduce_sum
set -u
if [ $# -lt 2 ]; then
  echo "usage: bench/gpu/ncu-kernels.sh BUILD_DIR OUT_DIR [BENCH...]" >&2
  exit 2
fi
B=$1
out=$2
shift 2
root=$(cd "$(dirname "$0")/../.." && pwd)
benches=${*:-saxpy sdot reduce_sum prefix_sum ma15 jacobi2d}
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
if [ -z "$ncu" ] || [ ! -x "$ncu" ]; then
  echo "ncu-kernels: SKIPPED: no ncu (Nsight Compute) on this machine"
  exit 77
fi
mkdir -p "$out"
metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,launch__registers_per_thread,launch__block_size,launch__grid_size,launch__shared_mem_per_block_static,launch__shared_mem_per_block_dynamic,sm__warps_active.avg.pct_of_peak_sustained_active,launch__occupancy_limit_registers
summary=$out/ncu-summary.md
{
  echo "# Kernel times by Nsight Compute ($(date -u '+%Y-%m-%d %H:%M UTC'))"
  echo
  echo "ncu $($ncu --version | tail -1); caches flushed before each replay; clocks as found."
  echo "GB/s: DRAM bytes read + written over the kernel's duration."
  echo
  echo "| benchmark | kernel | grid x block | regs | smem B | occupancy % | µs | DRAM MB | GB/s |"
  echo "|---|---|---|---:|---:|---:|---:|---:|---:|"
} > "$summary"
for b in $benches; do
  csv=$out/ncu-$b.csv
  echo "ncu-kernels: $b"
  timeout -k 5 120 "$ncu" --clock-control none --launch-count "${NCU_LAUNCHES:-8}" --csv --metrics "$metrics" \
    "$B/arrayc-gpubench" --only "$b" --repeat 3 --programs "$root/bench/programs" \
    > "$csv" 2> "$out/ncu-$b.log"
  echo "ncu-kernels: $b: exit status $? ($(grep -c '^"' "$csv") lines)"
  python3 "$root/bench/gpu/ncu_summary.py" "$csv" "$b" >> "$summary"
done
cat "$summary"
