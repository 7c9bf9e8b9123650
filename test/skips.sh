#!/bin/sh
# test/skips.sh begin LOG CONFIGURED | end LOG: why tests did not run.
#
# ctest shows no output of a skipped test, even with --output-on-failure.
# So a test that skips appends "NAME: reason" to $ARRAYC_SKIP_LOG (LOG), and
# ctest runs this script before the tests (begin: LOG starts with the skips
# decided when CMake configured, the file CONFIGURED) and after its summary
# (end: LOG's lines, each once), through CTestCustom.cmake
# (test/CMakeLists.txt).
set -u
case $1 in
begin)
  mkdir -p "$(dirname "$2")"
  if [ -f "$3" ]; then cp "$3" "$2"; else : > "$2"; fi
  ;;
end)
  if [ -s "$2" ]; then
    echo "Skipped, and why:"
    sort -u "$2" | sed 's/^/  /'
  fi
  ;;
esac
exit 0
