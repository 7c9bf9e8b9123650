#!/bin/bash
# bench/gpu/pack.sh BUILD_DIR [CARRY_DIR]: packs what the GPU machine runs.
#
# The GPU machine has the CUDA toolkit and CMake but no LLVM and no libffi
# headers, so arrayc cannot be configured or built there: everything is
# built here, with LLVM linked statically (-DARRAYC_LLVM_STATIC=ON), and the
# binaries travel in the working tree's carried paths, which hold 64 MiB in
# all. Each static binary is about 48 MB stripped, but they share almost
# all of it (libarrayc and LLVM), so one xz stream with a dictionary larger
# than a binary stores the second and later ones in about 2 MB each: 28 MB
# for the eleven binaries and the runtime library. xz's fast preset 1 finds those long repeats as
# well as preset 9 does (23 MB) in a twelfth of the time (35 s).
#
# Writes CARRY_DIR/arrayc-gpu.tar.xz (CARRY_DIR defaults to build-gpu at the
# repository root, which .gitignore's /build*/ ignores) holding, relative
# to BUILD_DIR: arrayc-gpubench, arrayc-run, arrayc-bench, arrayc, the C
# examples and the GPU ahead-of-time examples (stripped), libarrayc_rt.so
# (which those and the GPU suite's own ahead-of-time test link), the
# CTestTestfile.cmake files (ctest -L gpu) and
# carry-info.txt (where it was built, so run-on-device.sh can rewrite the
# absolute paths that ctest's files hold). bench/gpu/run-on-device.sh
# unpacks and runs it; bench/README.md gives the whole procedure.
set -euo pipefail
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: bench/gpu/pack.sh BUILD_DIR [CARRY_DIR]" >&2
  exit 2
fi
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$1" && pwd)
carry=${2:-$src/build-gpu}
for need in arrayc-gpubench arrayc-run; do
  if [ ! -x "$build/$need" ]; then
    echo "pack.sh: $build/$need is missing: configure with -DARRAYC_LLVM_STATIC=ON" \
      "-DARRAYC_GPU_BENCH=ON and build it (bench/README.md)" >&2
    exit 1
  fi
done
if ldd "$build/arrayc-run" | grep -qi 'libLLVM'; then
  echo "pack.sh: $build links LLVM's shared library, which the GPU machine lacks:" \
    "configure it with -DARRAYC_LLVM_STATIC=ON" >&2
  exit 1
fi

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
bins="arrayc-gpubench arrayc-run"
for b in arrayc-bench arrayc; do
  [ -x "$build/$b" ] && bins="$bins $b"
done
for ex in "$build"/example-* "$build"/examples/aot/aot-*-gpu; do
  [ -x "$ex" ] && bins="$bins ${ex#"$build"/}"
done
for b in $bins; do
  mkdir -p "$stage/$(dirname "$b")"
  strip -o "$stage/$b" "$build/$b"
done
# the PTX of the ahead-of-time examples, which they load at run time from
# the build directory (run-on-device.sh links that path to the unpacked one)
(cd "$build" && find examples/aot -name '*.ptx') | while read -r f; do
  mkdir -p "$stage/$(dirname "$f")"
  cp "$build/$f" "$stage/$f"
done
# the runtime library, with its version links (the GPU suite links its
# ahead-of-time test against it; run-on-device.sh puts it on LD_LIBRARY_PATH)
for lib in "$build"/libarrayc_rt.so*; do
  if [ -L "$lib" ]; then
    cp -P "$lib" "$stage/"
  elif [ -f "$lib" ]; then
    strip --strip-unneeded -o "$stage/$(basename "$lib")" "$lib"
  fi
done
(cd "$build" && find . -name CTestTestfile.cmake) | while read -r f; do
  mkdir -p "$stage/$(dirname "$f")"
  cp "$build/$f" "$stage/$f"
done
{
  echo "source_dir=$src"
  echo "build_dir=$build"
  echo "commit=$(git -C "$src" describe --always --dirty 2>/dev/null || echo unknown)"
  echo "packed=$(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "binaries=$bins"
} > "$stage/carry-info.txt"

mkdir -p "$carry"
rm -f "$carry/arrayc-gpu.tar.xz"
# dict=192MiB: larger than one binary, so the shared parts are stored once
# (one thread: xz's threads would cut the stream into independent blocks)
tar -C "$stage" -cf - . | xz -T1 --lzma2=preset=1,dict=192MiB > "$carry/arrayc-gpu.tar.xz"
echo "pack.sh: $(du -h "$carry/arrayc-gpu.tar.xz" | cut -f1) in $carry/arrayc-gpu.tar.xz:" \
  "$bins"
echo "pack.sh: on the GPU machine, carry '${carry#"$src"/}' and run: bash bench/gpu/run-on-device.sh"
