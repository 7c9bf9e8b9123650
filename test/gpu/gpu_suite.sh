#!/bin/sh
# test/gpu/gpu_suite.sh BUILD_DIR SOURCE_DIR: the GPU test suite (ctest -L gpu).
#
# On a machine with an NVIDIA GPU and its driver, runs the whole
# differential suite (test programs, examples, the examples of
# docs/language.md and 200 random programs) on the interpreter and the GPU,
# and the C examples (which pick the GPU through AC_BACKEND_AUTO). Without a
# GPU it prints why and exits 77, which ctest reports as skipped.
set -u
build=$1
src=$2
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf 'fn probe(xs: f32[]) -> f32[] = map(|x| x + 1.0, xs);\n' > "$probe/p.ac"
if ! out=$("$build/arrayc-run" --backend=gpu "$probe/p.ac" --fn probe '[1]' 2>&1); then
  echo "SKIPPED: no GPU to test on: $out"
  exit 77
fi
if [ "$out" != "[2.0]" ]; then
  echo "FAIL: the GPU computed $out for map(+1) of [1]"
  exit 1
fi
status=0
python3 "$src/test/diff/diff_backends.py" --run "$build/arrayc-run" --backends interp,gpu \
  --docs "$src/docs/language.md" --tmp "$probe" \
  "$src/test/e2e" "$src/examples" "$src/test/lit" || status=1
python3 "$src/test/gen/genprog.py" --seed 9001 --count 200 --out "$probe/gen" &&
  python3 "$src/test/diff/diff_backends.py" --run "$build/arrayc-run" --backends interp,gpu \
    "$probe/gen" || status=1
for ex in "$build"/example-*; do
  [ -x "$ex" ] || continue
  if ! "$ex" > "$probe/ex.out" 2>&1; then
    echo "FAIL: $ex"; cat "$probe/ex.out"; status=1
  fi
done
[ $status -eq 0 ] && echo "gpu suite: passed"
exit $status
