#!/usr/bin/env bash
# test/fuzz/run_fuzz.sh [SECONDS]: builds the runtime's libFuzzer targets
# (fuzz_plan: the plan text parser and validator; fuzz_bundle: bundles and
# the .ptx bundle block) with clang in build-fuzz/ and runs each for
# SECONDS (default 60) from its seed corpus, failing on any finding.
#
# Only the runtime is compiled (with AddressSanitizer, UBSan and libFuzzer's
# coverage), not the compiler: about a minute on 2 cores. CC picks the
# compiler (default: clang-19, else clang). Findings (crash-*, timeout-*,
# leak-* files) are left in build-fuzz/findings/ for reproduction:
#   build-fuzz/test/fuzz_plan build-fuzz/findings/crash-...
set -euo pipefail
cd "$(dirname "$0")/../.."

secs=${1:-60}
cc=${CC:-$(command -v clang-19 || command -v clang || true)}
if [ -z "$cc" ]; then
  echo "run_fuzz: no clang found (apt-get install clang-19 libclang-rt-19-dev)" >&2
  exit 1
fi
jobs=${JOBS:-2}

cmake -S . -B build-fuzz -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=Debug -DARRAYC_FUZZ=ON \
  -DARRAYC_BENCH=OFF >/dev/null
cmake --build build-fuzz -j"$jobs" --target fuzz_plan fuzz_bundle

rm -rf build-fuzz/findings build-fuzz/corpus
mkdir -p build-fuzz/findings build-fuzz/corpus/plan build-fuzz/corpus/bundle
# the seeds (real plans) are read from test/fuzz/plans; what the fuzzers
# find goes into build-fuzz/corpus/ (a bundle holds plans, so the plans
# seed fuzz_bundle too)
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
status=0
for t in plan bundle; do
  echo "run_fuzz: fuzz_$t for ${secs}s"
  if ! build-fuzz/test/fuzz_$t -max_total_time="$secs" -max_len=8192 -timeout=10 \
      -artifact_prefix=build-fuzz/findings/ -print_final_stats=1 \
      build-fuzz/corpus/$t test/fuzz/plans; then
    echo "run_fuzz: fuzz_$t found a problem (build-fuzz/findings/)" >&2
    status=1
  fi
done
exit $status
