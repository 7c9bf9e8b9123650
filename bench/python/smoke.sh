#!/bin/sh
# bench/python/smoke.sh BUILD SOURCE PYTHON SANITIZER_FLAGS: ctest's
# bench.python.smoke. Runs bench_python.py --quick (small sizes, one
# repetition) with the build tree's package, which checks every result
# against NumPy's before it times anything: the test passes when it runs
# and the checks pass; the times it prints mean nothing. Skips (77), giving
# the reason on standard output and in $ARRAYC_SKIP_LOG (test/skips.sh),
# when PYTHON lacks NumPy or in a sanitizer build (as test/python/run.sh).
# Numba is optional: without it the benchmark leaves its column out.
set -u
build=$1 source=$2 python=$3 san=${4:-}
skip() {
  echo "SKIPPED: $1"
  [ -n "${ARRAYC_SKIP_LOG:-}" ] && echo "bench.python.smoke: $1" >> "$ARRAYC_SKIP_LOG"
  exit 77
}
[ -n "$san" ] && skip "a sanitizer build ($san): the Python benchmark runs in a plain build"
"$python" -c "import numpy" 2>/dev/null ||
  skip "$python has no numpy (apt-get install python3-numpy)"
export PYTHONPATH="$build/python"
unset ARRAYC_LIBRARY
exec "$python" "$source/bench/python/bench_python.py" --quick
