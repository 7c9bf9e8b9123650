#!/bin/sh
# test/python/run.sh BUILD SOURCE PYTHON SANITIZER_FLAGS: the Python
# package's tests (ctest's python.pytest), run by pytest with the build
# tree's package (PYTHONPATH=BUILD/python). Skips (77), giving the reason
# on standard output and in $ARRAYC_SKIP_LOG (test/skips.sh), when PYTHON
# lacks NumPy or pytest (apt-get install python3-numpy python3-pytest), or
# in a sanitizer build (Python is not instrumented: libarrayc.so would need
# the sanitizer's runtime preloaded).
set -u
build=$1 source=$2 python=$3 san=${4:-}
skip() {
  echo "SKIPPED: $1"
  [ -n "${ARRAYC_SKIP_LOG:-}" ] && echo "python.pytest: $1" >> "$ARRAYC_SKIP_LOG"
  exit 77
}
[ -n "$san" ] && skip "a sanitizer build ($san): the package's tests run in a plain build"
for m in numpy pytest; do
  "$python" -c "import $m" 2>/dev/null ||
    skip "$python has no $m (apt-get install python3-numpy python3-pytest)"
done
export PYTHONPATH="$build/python" ARRAYC_BUILD="$build" ARRAYC_SOURCE="$source"
unset ARRAYC_LIBRARY
cd "$source/test/python" && exec "$python" -m pytest -q -p no:cacheprovider .
