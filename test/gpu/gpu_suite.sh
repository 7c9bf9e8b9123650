#!/bin/sh
# test/gpu/gpu_suite.sh BUILD_DIR SOURCE_DIR: the GPU test suite (ctest -L gpu).
#
# On a machine with an NVIDIA GPU and its driver, runs the whole
# differential suite (test programs, examples, the examples of
# docs/language.md and 200 random programs) on the interpreter and the GPU,
# the C examples (which pick the GPU through AC_BACKEND_AUTO) and the
# ahead-of-time programs (examples/aot, test/lit/aot) built for the GPU, and
# test/lit/kernel's hand-written PTX kernel against its host function. Without a
# GPU it prints why and exits 77, which ctest reports as skipped.
set -u
build=$1
src=$2
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf 'fn probe(xs: f32[]) -> f32[] { map(|x| x + 1.0, xs) }\n' > "$probe/p.ac"
if ! out=$("$build/arrayc-run" --backend=gpu "$probe/p.ac" --fn probe '[1]' 2>&1); then
  case $out in
  *"no GPU"*)
    echo "SKIPPED: no GPU to test on: $out"
    # for ctest's list of skips (test/skips.sh)
    [ -n "${ARRAYC_SKIP_LOG:-}" ] && echo "gpu.suite: no GPU to test on: $out" >> "$ARRAYC_SKIP_LOG"
    exit 77 ;;
  *) echo "FAIL: the GPU probe did not run: $out"; exit 1 ;;
  esac
fi
if [ "$out" != "[2.0]" ]; then
  echo "FAIL: the GPU computed $out for map(+1) of [1]"
  exit 1
fi
status=0
# one arrayc-run per program and backend, most of its time the CUDA context's
# start: run as many at once as there are cores, up to 8 (every process gets
# a context of its own on the one GPU)
jobs=$(nproc 2>/dev/null || echo 2)
[ "$jobs" -gt 8 ] && jobs=8
python3 "$src/test/diff/diff_backends.py" --run "$build/arrayc-run" --backends interp,gpu \
  --jobs "$jobs" --docs "$src/docs/language.md" --tmp "$probe" \
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
# The ahead-of-time examples built for the GPU (examples/aot: the PTX
# arrayc wrote, loaded by libarrayc_rt alone). Each checks its results
# itself and ends with "ok"; without it (SKIPPED: the PTX did not load on
# this GPU, or FAIL) the suite fails. lit only sees them skip.
for name in blackscholes smvm; do
  ex="$build/examples/aot/aot-$name-gpu"
  if [ ! -x "$ex" ]; then
    echo "FAIL: $ex was not built"; status=1; continue
  fi
  if "$ex" > "$probe/aot.out" 2>&1 && grep -q '^ok' "$probe/aot.out"; then
    echo "aot-$name-gpu: $(grep '^time' "$probe/aot.out")"
  else
    echo "FAIL: $ex"; cat "$probe/aot.out"; status=1
  fi
done
# test/lit/aot's program, compiled ahead of time for the GPU and for the
# CPU and called through its generated header: the same output (the GPU's
# sin may differ in the last bits: numbers compare to 1e-12 relative).
aot=$probe/aot
mkdir -p "$aot/cpu" "$aot/gpu"
if ! "$build/arrayc" "$src/test/lit/aot/Inputs/prog.ac" --target=cpu -o "$aot/cpu/prog" ||
   ! "$build/arrayc" "$src/test/lit/aot/Inputs/prog.ac" --target=gpu -o "$aot/gpu/prog" ||
   ! cc -std=c11 -I"$src/include" -I"$aot/cpu" "$src/test/lit/aot/Inputs/prog_main.c" \
        "$aot/cpu/prog.o" -L"$build" -larrayc_rt -Wl,-rpath,"$build" -lm -o "$aot/cpu/main" ||
   ! cc -std=c11 -I"$src/include" -I"$aot/gpu" "$src/test/lit/aot/Inputs/prog_main.c" \
        -L"$build" -larrayc_rt -Wl,-rpath,"$build" -lm -o "$aot/gpu/main"; then
  echo "FAIL: building the ahead-of-time test program"; status=1
elif ! "$aot/cpu/main" > "$aot/cpu.out" 2>&1 || ! "$aot/gpu/main" > "$aot/gpu.out" 2>&1; then
  echo "FAIL: the ahead-of-time test program"; cat "$aot/cpu.out" "$aot/gpu.out"; status=1
elif ! python3 - "$aot/cpu.out" "$aot/gpu.out" <<'PY'
import re, sys
a, b = (open(f).read().split("\n") for f in sys.argv[1:])
num = re.compile(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?")
ok = len(a) == len(b)
for x, y in zip(a, b):
    if num.sub("#", x) != num.sub("#", y):
        ok = False
    for u, v in zip(num.findall(x), num.findall(y)):
        if abs(float(u) - float(v)) > 1e-12 * max(1.0, abs(float(u))):
            ok = False
if not ok:
    print("cpu:\n" + "\n".join(a) + "\ngpu:\n" + "\n".join(b))
sys.exit(0 if ok else 1)
PY
then
  echo "FAIL: the ahead-of-time program computes otherwise on the GPU"; status=1
else
  echo "aot prog: the GPU agrees with the CPU"
fi
# Extern kernels (language.md §3.4): test/lit/kernel's program launches its
# hand-written PTX (axpy.ptx) on the GPU; the interpreter runs the host
# functions of kern_host.c. Every call must agree.
kern=$probe/kern
mkdir -p "$kern"
if ! cc -shared -fPIC -o "$kern/libkern.so" "$src/test/lit/kernel/Inputs/kern_host.c"; then
  echo "FAIL: cannot build the extern kernels' host functions"; status=1
else
  for call in "upd 2 [1,2,3] [10,20,30]" "it 2 [1,2,3]" "lp [1,2,3] 2" "cond [1,2,3] true" \
              "cond [1,2,3] false" "nested [1,-2]" "upd 1 [] []"; do
    # shellcheck disable=SC2086 # the call is split into --fn NAME ARGS on purpose
    want=$("$build/arrayc-run" --backend=interp --load "$kern/libkern.so" "$src/test/lit/kernel/Inputs/kern.ac" \
             --fn $call 2>&1)
    # shellcheck disable=SC2086
    got=$("$build/arrayc-run" --backend=gpu "$src/test/lit/kernel/Inputs/kern.ac" --fn $call 2>&1)
    if [ "$want" != "$got" ]; then
      echo "FAIL: extern kernel call $call: GPU '$got', interpreter '$want'"; status=1
    fi
  done
  # many blocks (element-wise, so exactly equal); 100000 elements are too
  # long for one command-line argument (Linux allows 128 KiB), so they go
  # in a NumPy file (tools.md, "NumPy files")
  python3 - "$kern/big.npy" <<'PY'
import struct, sys
n = 100000
head = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d,), }" % n
head += " " * (63 - (10 + len(head)) % 64) + "\n"
with open(sys.argv[1], "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(head)) + head.encode())
    f.write(struct.pack("<%df" % n, *[float(i % 7) for i in range(n)]))
PY
  want=$("$build/arrayc-run" --load "$kern/libkern.so" "$src/test/lit/kernel/Inputs/kern.ac" \
           --fn it 3 "@$kern/big.npy" 2>&1)
  got=$("$build/arrayc-run" --backend=gpu "$src/test/lit/kernel/Inputs/kern.ac" \
          --fn it 3 "@$kern/big.npy" 2>&1)
  if [ "$want" != "$got" ]; then
    echo "FAIL: extern kernel over 100000 elements: GPU '$got', interpreter '$want'"; status=1
  else
    echo "extern kernels: the GPU's PTX agrees with the host functions"
  fi
fi
[ $status -eq 0 ] && echo "gpu suite: passed"
exit $status
