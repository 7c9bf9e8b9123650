#!/bin/bash
# bench/gpu/run-on-device.sh: the one command the GPU machine runs.
#
# Run from the repository root with the packed build carried (bench/gpu/
# pack.sh made build-gpu/arrayc-gpu.tar.xz here; the device tool's `carry`
# names build-gpu):
#
#   bash bench/gpu/run-on-device.sh
#
# Nothing is compiled on the GPU machine: it has no LLVM, which arrayc
# needs to configure and build, so the binaries come from this machine,
# statically linked (see pack.sh). In order, each step in the time left:
#   1. unpacks the build into build-gpu/build, rewrites the absolute paths of
#      its ctest files for this checkout, and records the machine (env.log);
#   2. arrayc-gpubench --out $OUT/gpu-h100.md (gpu-h200.md on an H200): the
#      results file, written row by row (gpubench.log: its progress);
#   3. arrayc-bench --only compile-ptx: PTX compile latency of Black-Scholes
#      on this host's CPU, appended to the results (compile-ptx.log);
#   3b. arrayc-bench --backend=cuda on the recurrences (edit distance and
#      Smith-Waterman at 4096^2 and 16384^2, the 10000-pair protein batch:
#      GCUPS against one CPU thread of C), appended (rec-gpu.log; SKIP_REC=1);
#   4. ctest -L gpu: the GPU differential suite, with what is left of the
#      time budget, its summary appended to the results (ctest-gpu.log).
# Everything is also in $OUT/run.log; seven files in all come back.
#
# Environment: OUT (default ./gpu-out), BUDGET_S (whole run, default 570 s:
# the device tool allows 600 s per command), GPUBENCH_ARGS (extra options
# for arrayc-gpubench, e.g. "--repeat 51"), SKIP_SUITE=1, SKIP_BENCH=1.
set -u
cd "$(dirname "$0")/../.." || exit 1
root=$PWD
OUT=${OUT:-$root/gpu-out}
mkdir -p "$OUT"
start=$(date +%s)
budget=${BUDGET_S:-570}
carry=$root/build-gpu
B=$carry/build

left() { echo $((budget - ($(date +%s) - start))); }
say() { echo "run-on-device: $*"; }

main() {
  # ---- 1. the build and the machine ----
  if [ ! -f "$carry/arrayc-gpu.tar.xz" ]; then
    say "no $carry/arrayc-gpu.tar.xz: build and pack it first (bench/README.md), carry build-gpu"
    return 1
  fi
  rm -rf "$B" && mkdir -p "$B"
  if ! tar -C "$B" -xJf "$carry/arrayc-gpu.tar.xz" 2>/dev/null; then
    # no xz program: Python's tarfile reads xz itself
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
      "$carry/arrayc-gpu.tar.xz" "$B" || { say "cannot unpack the build"; return 1; }
  fi
  cat "$B/carry-info.txt"
  old_src=$(sed -n 's/^source_dir=//p' "$B/carry-info.txt")
  old_build=$(sed -n 's/^build_dir=//p' "$B/carry-info.txt")
  # ctest's files name the build and source directories of the packing
  # machine: point them here (the build first, it lies inside the source)
  find "$B" -name CTestTestfile.cmake | while read -r f; do
    sed -i -e "s#$old_build#$B#g" -e "s#$old_src#$root#g" "$f"
  done
  # arrayc-bench reads its programs from the source tree it was built in
  if [ -n "$old_src" ] && [ ! -e "$old_src" ]; then
    if ! { mkdir -p "$(dirname "$old_src")" && ln -s "$root" "$old_src"; } 2>/dev/null; then
      say "cannot link $old_src to $root: arrayc-bench will not find its programs"
    fi
  fi
  # the ahead-of-time examples load their PTX from the packing machine's
  # build directory: where it does not exist, it is this one
  if [ -n "$old_build" ] && [ ! -e "$old_build" ]; then
    if ! { mkdir -p "$(dirname "$old_build")" && ln -s "$B" "$old_build"; } 2>/dev/null; then
      say "cannot link $old_build to $B: the ahead-of-time examples will not find their PTX"
    fi
  fi
  # the ahead-of-time programs' RUNPATH names the packing machine's build
  # directory: they (and the GPU suite's own test program) find the runtime
  # library here instead
  export LD_LIBRARY_PATH="$B${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  # cuBLAS is the toolkit's shared library: add where it is, if the loader
  # does not find it through the binary's RPATH
  if ldd "$B/arrayc-gpubench" | grep -q 'libcublas.*not found'; then
    for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
      $(ls -d /usr/local/cuda-*/lib64 2>/dev/null) \
      $(python3 -c 'import nvidia.cublas, os; print(os.path.join(nvidia.cublas.__path__[0], "lib"))' 2>/dev/null); do
      [ -e "$d/libcublas.so.13" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" && break
    done
  fi
  {
    date -u
    uname -a
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv 2>&1
    nvidia-smi 2>&1 | head -20
    command -v nvcc && nvcc --version | tail -2
    command -v ctest cmake python3
    echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
    for b in "$B"/arrayc-gpubench "$B"/arrayc-run "$B"/libarrayc_rt.so; do echo "== ldd $b"; ldd "$b"; done
  } > "$OUT/env.log" 2>&1
  if grep -q '=> not found' "$OUT/env.log"; then
    say "missing shared libraries:"
    grep '=> not found' "$OUT/env.log"
  fi
  name=gpu-h100.md
  nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | grep -q H200 && name=gpu-h200.md
  results=$OUT/$name

  # ---- 2. the benchmarks ----
  if [ "${SKIP_BENCH:-0}" != 1 ]; then
    t=$(( $(left) - 150 ))   # keep time for steps 3 and 4
    [ $t -gt 360 ] && t=360
    say "arrayc-gpubench (at most ${t} s)"
    # shellcheck disable=SC2086
    timeout -k 10 "$t" "$B/arrayc-gpubench" --out "$results" --programs "$root/bench/programs" \
      ${GPUBENCH_ARGS:-} 2> "$OUT/gpubench.log"
    rc=$?
    say "arrayc-gpubench exit status $rc (0: all ran and checked; 1: a failure; 77: no GPU; 124: timed out)"
    [ $rc -ne 0 ] && tail -5 "$OUT/gpubench.log"
  fi

  # ---- 3. compile latency to PTX ----
  if [ -x "$B/arrayc-bench" ]; then
    say "arrayc-bench --only compile-ptx"
    timeout -k 5 90 "$B/arrayc-bench" --only compile-ptx > "$OUT/compile-ptx.log" 2>&1
    say "arrayc-bench exit status $?"
    cat "$OUT/compile-ptx.log"
    if [ -f "$results" ] && grep -q 'compile latency' "$OUT/compile-ptx.log"; then
      {
        echo
        echo "## Compile latency (arrayc-bench --only compile-ptx, on the GPU machine's CPU)"
        echo
        grep 'compile latency' "$OUT/compile-ptx.log"
      } >> "$results"
    fi
  fi

  # ---- 3b. recurrences on the GPU ----
  if [ -x "$B/arrayc-bench" ] && [ "${SKIP_REC:-0}" != 1 ]; then
    t=$(( $(left) - 120 ))   # keep time for step 4
    [ $t -gt 100 ] && t=100
    if [ $t -ge 30 ]; then
      say "arrayc-bench --backend=cuda recurrences (at most ${t} s)"
      timeout -k 5 "$t" "$B/arrayc-bench" --backend=cuda --repeat 3 \
        --only edit_distance,smith_waterman,smith_waterman_at,protein_batch > "$OUT/rec-gpu.log" 2>&1
      say "arrayc-bench exit status $?"
      cat "$OUT/rec-gpu.log"
      if [ -f "$results" ] && grep -q '^| ' "$OUT/rec-gpu.log"; then
        {
          echo
          echo "## Recurrences (arrayc-bench --backend=cuda, reference: one thread of this machine's CPU)"
          echo
          grep '^| ' "$OUT/rec-gpu.log"
        } >> "$results"
      fi
    fi
  fi

  # ---- 4. the GPU differential suite ----
  if [ "${SKIP_SUITE:-0}" != 1 ]; then
    t=$(( $(left) - 15 ))
    if [ $t -lt 30 ]; then
      say "no time left for ctest -L gpu"
      suite="not run (no time left in this command: run it again with SKIP_BENCH=1)"
    else
      say "ctest -L gpu (at most ${t} s)"
      if command -v ctest > /dev/null; then
        # -V streams the suite's output, so a run cut short still shows how far it got
        (cd "$B" && timeout -k 10 "$t" ctest -L gpu -V) > "$OUT/ctest-gpu.log" 2>&1
      else
        say "no ctest here: running the suite's script directly"
        timeout -k 10 "$t" sh "$root/test/gpu/gpu_suite.sh" "$B" "$root" > "$OUT/ctest-gpu.log" 2>&1
      fi
      rc=$?
      tail -25 "$OUT/ctest-gpu.log"
      case $rc in
        0) suite="passed" ;;
        124|137) suite="TIMED OUT after ${t} s (run it again with SKIP_BENCH=1)" ;;
        *) suite="FAILED (exit status $rc)" ;;
      esac
      grep -q 'Skipped\|SKIPPED' "$OUT/ctest-gpu.log" && [ $rc -eq 0 ] && suite="skipped (see ctest-gpu.log)"
    fi
    if [ -f "$results" ]; then
      printf '\n## GPU differential suite (ctest -L gpu)\n\n%s; %s\n' "$suite" \
        "$(grep -E 'tests passed|tests failed|gpu suite' "$OUT/ctest-gpu.log" 2>/dev/null | tr '\n' ' ')" >> "$results"
    fi
  fi

  echo
  if [ -f "$results" ]; then
    say "results: $results"
    cat "$results"
  else
    say "no results file was written"
    return 1
  fi
}

main 2>&1 | tee "$OUT/run.log"
exit "${PIPESTATUS[0]}"
