#!/bin/sh
# test/install/consumer.sh BUILD SOURCE LIBDIR VERSION [CMAKE [CC [FLAGS]]]:
# the install test (ctest -R install.consumer; docs/install.md).
#
# Installs the build BUILD of arrayc into a fresh prefix
# (`cmake --install BUILD --prefix P`) and uses it from outside, as another
# project would:
#   1. the files are where docs/install.md says (LIBDIR is the build's
#      CMAKE_INSTALL_LIBDIR, VERSION its release);
#   2. test/install/consumer, configured with CMAKE_PREFIX_PATH=P, finds
#      arrayc with find_package, compiles demo.ac with the installed tool
#      and links the runtime (shared, static, and through arrayc_add_aot) and
#      the compiler library (JIT); each program prints exactly what it must;
#   3. the same programs built with plain CC and pkg-config
#      (PKG_CONFIG_PATH=P/LIBDIR/pkgconfig), the runtime shared and static;
#   4. the installed `arrayc --shared` writes a shared object that names
#      libarrayc_rt (DT_NEEDED), finds it in P/LIBDIR (its run path), and
#      loads and runs in a program that links nothing of arrayc;
#   5. with ARRAYC_MPIEXEC set (the build has the distributed layer), the
#      installed arrayc/dist.h, libarrayc_dist.a and arrayc_dist.pc, and
#      dist_main.c built through arrayc::dist (find_package(arrayc
#      COMPONENTS dist) in step 2) and through pkg-config, each
#      run on 2 ranks ($ARRAYC_MPIEXEC -n 2) printing the gathered SAXPY
#      (skipped, saying why, without ARRAYC_MPIEXEC);
#   6. the installed Python package (P/$ARRAYC_PYTHON_INSTALL_DIR/arrayc),
#      run by $ARRAYC_PYTHON (both from the environment): it loads the
#      installed libarrayc, compiles a program and an @arrayc.jit function
#      (skipped, saying why, without them, without NumPy, or in a sanitizer
#      build).
# CC and FLAGS (the sanitizer options of a sanitizer build) are used for
# every compile and link. Prints "ok: ..." per check and "FAIL: ..." with
# the output that differed; exits 1 on any failure, 77 ("SKIPPED: why")
# when cmake, pkg-config or the C compiler is missing. The prefix and the
# consumer's build are left in BUILD/test/install-consumer when a check
# fails, and removed when all pass.
set -u
build=$1
src=$2
libdir=$3
version=$4
cmake=${5:-cmake}
cc=${6:-cc}
flags=${7:-}

skip() {
  echo "SKIPPED: $*"
  exit 77
}
command -v "$cmake" > /dev/null 2>&1 || skip "cmake not found ($cmake)"
command -v pkg-config > /dev/null 2>&1 || skip "pkg-config not found (apt-get install pkg-config)"
command -v "$cc" > /dev/null 2>&1 || skip "no C compiler ($cc)"

work=$build/test/install-consumer
prefix=$work/prefix
consumer=$src/test/install/consumer
rm -rf "$work"
mkdir -p "$work/pc" "$work/so"
status=0

fail() {
  echo "FAIL: $*"
  status=1
}
# runs a command quietly into LOG; on failure says so and shows the log
step() {
  name=$1
  log=$2
  shift 2
  if "$@" > "$log" 2>&1; then
    echo "ok: $name"
    return 0
  fi
  fail "$name (log: $log)"
  tail -n 40 "$log"
  return 1
}
# compares what a program printed with what it must print
expect() {
  name=$1
  want=$2
  shift 2
  got=$("$@" 2>&1)
  if [ "$got" = "$want" ]; then
    echo "ok: $name"
  else
    fail "$name: $*"
    printf -- '--- expected\n%s\n--- got\n%s\n' "$want" "$got"
  fi
}
# asserts that TEXT contains WORD
contains() {
  case " $2 " in
    *"$3"*) echo "ok: $1" ;;
    *) fail "$1: '$3' not in: $2" ;;
  esac
}
finish() {
  if [ $status -eq 0 ]; then
    rm -rf "$work"
    echo "install test: passed"
  fi
  exit $status
}

aot_out='functions 2
dotp 32
scale [2.5, 5, 10]'
jit_out='jit cpu dotp 32'

# ---- 1. install ---------------------------------------------------------------
step "cmake --install into $prefix" "$work/install.log" \
  "$cmake" --install "$build" --prefix "$prefix" || finish
for f in bin/arrayc bin/arrayc-opt bin/arrayc-run include/arrayc/arrayc.h include/arrayc/ops.def \
  "$libdir/libarrayc_rt.so.0" "$libdir/libarrayc_rt.so" "$libdir/libarrayc_rt.a" \
  "$libdir/cmake/arrayc/arrayc-config.cmake" "$libdir/cmake/arrayc/arrayc-config-version.cmake" \
  "$libdir/pkgconfig/arrayc_rt.pc" "$libdir/pkgconfig/arrayc.pc"; do
  [ -e "$prefix/$f" ] || fail "not installed: $f"
done
ls "$prefix/$libdir"/libarrayc.* > /dev/null 2>&1 || fail "not installed: $libdir/libarrayc.*"
grep -q "prefix=$prefix\$" "$prefix/$libdir/pkgconfig/arrayc_rt.pc" ||
  fail "arrayc_rt.pc does not name the prefix $prefix"

# ---- 2. find_package(arrayc) ----------------------------------------------------
consumer_dist=OFF
[ -n "${ARRAYC_MPIEXEC:-}" ] && consumer_dist=ON
if step "consumer: configure (find_package)" "$work/configure.log" \
  "$cmake" -S "$consumer" -B "$work/consumer" -DCMAKE_BUILD_TYPE=Release \
  -DCONSUMER_DIST=$consumer_dist \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
  -DCMAKE_C_COMPILER="$cc" -DCMAKE_C_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags"; then
  grep -q "^arrayc_DIR:PATH=$prefix/" "$work/consumer/CMakeCache.txt" ||
    fail "find_package found another arrayc: $(grep '^arrayc_DIR' "$work/consumer/CMakeCache.txt")"
  if step "consumer: build" "$work/build.log" "$cmake" --build "$work/consumer" -j2; then
    expect "aot_shared (arrayc::arrayc_rt)" "$aot_out" "$work/consumer/aot_shared"
    expect "aot_static (arrayc::arrayc_rt_static)" "$aot_out" "$work/consumer/aot_static"
    if [ -e "$src/cmake/ArraycAot.cmake" ]; then
      expect "aot_helper (arrayc_add_aot)" "$aot_out" "$work/consumer/aot_helper"
    fi
    expect "jit (arrayc::arrayc)" "$jit_out" "$work/consumer/jit"
    deps=$(ldd "$work/consumer/aot_shared" 2>&1)
    contains "aot_shared links the installed libarrayc_rt" "$deps" \
      "libarrayc_rt.so.0 => $prefix/$libdir/libarrayc_rt.so.0"
    case $deps in
      *LLVM*) fail "aot_shared links LLVM: $deps" ;;
    esac
  fi
fi

# ---- 3. pkg-config -------------------------------------------------------------
PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig
export PKG_CONFIG_PATH
expect "pkg-config --modversion arrayc_rt arrayc" "$version
$version" pkg-config --modversion arrayc_rt arrayc
rt_libdir=$(pkg-config --variable=libdir arrayc_rt)
[ "$rt_libdir" = "$prefix/$libdir" ] || fail "arrayc_rt.pc: libdir is $rt_libdir"
contains "pkg-config --static --libs arrayc_rt" "$(pkg-config --static --libs arrayc_rt)" \
  "-larrayc_rt"
for l in -lffi -lm -lpthread -ldl; do
  contains "pkg-config --static --libs arrayc_rt has $l" \
    "$(pkg-config --static --libs arrayc_rt)" "$l"
done
arrayc_libs=$(pkg-config --libs arrayc)
contains "pkg-config --libs arrayc names libarrayc" "$arrayc_libs" "-larrayc "
contains "pkg-config --libs arrayc names LLVM" "$arrayc_libs" "-lLLVM"
if step "installed arrayc: demo.ac -> demo.o, demo.h" "$work/pc/arrayc.log" \
  "$prefix/bin/arrayc" "$consumer/demo.ac" --target=cpu -o "$work/pc/demo"; then
  # shellcheck disable=SC2046,SC2086 # pkg-config's output is word-split
  step "cc with pkg-config arrayc_rt" "$work/pc/cc.log" \
    "$cc" $flags -o "$work/pc/aot" "$consumer/aot_main.c" "$work/pc/demo.o" -I"$work/pc" \
    $(pkg-config --cflags --libs arrayc_rt) -Wl,-rpath,"$rt_libdir" &&
    expect "pkg-config program (shared runtime)" "$aot_out" "$work/pc/aot"
  # the static runtime's link line (docs/install.md)
  # shellcheck disable=SC2046,SC2086
  step "cc with libarrayc_rt.a" "$work/pc/cc-static.log" \
    "$cc" $flags -o "$work/pc/aot_static" "$consumer/aot_main.c" "$work/pc/demo.o" -I"$work/pc" \
    $(pkg-config --cflags arrayc_rt) "$rt_libdir/libarrayc_rt.a" -lffi -lm -lpthread -ldl &&
    expect "pkg-config program (static runtime)" "$aot_out" "$work/pc/aot_static"
fi
# the compiler library; LLVM's directory goes on the run path in case it is
# not the system's
rpaths=
for d in $(pkg-config --libs-only-L arrayc); do
  rpaths="$rpaths -Wl,-rpath,${d#-L}"
done
# shellcheck disable=SC2046,SC2086
step "cc with pkg-config arrayc" "$work/pc/cc-jit.log" \
  "$cc" $flags -o "$work/pc/jit" "$consumer/jit_main.c" $(pkg-config --cflags --libs arrayc) \
  $rpaths &&
  expect "pkg-config program (compiler library)" "$jit_out" "$work/pc/jit"

# ---- 4. arrayc --shared ------------------------------------------------------------
if step "installed arrayc --shared" "$work/so/arrayc.log" \
  "$prefix/bin/arrayc" "$consumer/demo.ac" --shared -o "$work/so/libdemo"; then
  if grep -q "not found" "$work/so/arrayc.log"; then
    fail "the installed arrayc did not find libarrayc_rt: $(cat "$work/so/arrayc.log")"
  fi
  real_libdir=$(cd "$prefix/$libdir" && pwd -P)
  if command -v readelf > /dev/null 2>&1; then
    dyn=$(readelf -d "$work/so/libdemo.so")
    contains "libdemo.so needs libarrayc_rt" "$dyn" "[libarrayc_rt.so.0]"
    contains "libdemo.so's run path is the installed library directory" "$dyn" \
      "path: [$real_libdir"
  fi
  if [ -x "$work/consumer/shared_check" ]; then
    expect "libdemo.so loads and runs (dlopen)" "loaded
functions 2: dotp scale
dotp 32" "$work/consumer/shared_check" "$work/so/libdemo.so"
  else
    fail "no shared_check program (the consumer did not build)"
  fi
fi

# ---- 5. the distributed layer ------------------------------------------------------
mpiexec=${ARRAYC_MPIEXEC:-}
dist_out='dist 2 ranks local saxpy [3, 6, 9, 12, 15]'
if [ -z "$mpiexec" ]; then
  echo "skipped: the distributed layer (ARRAYC_MPIEXEC not set: built without MPI)"
else
  for f in include/arrayc/dist.h "$libdir/libarrayc_dist.a" "$libdir/pkgconfig/arrayc_dist.pc"; do
    [ -e "$prefix/$f" ] || fail "not installed: $f"
  done
  if [ -x "$work/consumer/dist_saxpy" ]; then
    expect "dist_saxpy (arrayc::dist) on 2 ranks" "$dist_out" \
      "$mpiexec" -n 2 "$work/consumer/dist_saxpy"
  else
    fail "no dist_saxpy program (the consumer did not build it: ARRAYC_DIST_FOUND?)"
  fi
  # pkg-config: arrayc_dist.pc names libarrayc_dist, then arrayc.pc's libraries and MPI's
  dist_libs=$(pkg-config --libs arrayc_dist)
  contains "pkg-config --libs arrayc_dist names libarrayc_dist" "$dist_libs" \
    "-larrayc_dist"
  contains "pkg-config --libs arrayc_dist names libarrayc" "$dist_libs" "-larrayc "
  # shellcheck disable=SC2046,SC2086
  step "cc with pkg-config arrayc_dist" "$work/pc/cc-dist.log" \
    "$cc" $flags -o "$work/pc/dist" "$consumer/dist_main.c" \
    $(pkg-config --cflags --libs arrayc_dist) $rpaths &&
    expect "pkg-config program (distributed layer) on 2 ranks" "$dist_out" \
      "$mpiexec" -n 2 "$work/pc/dist"
fi

# ---- 6. the Python package -------------------------------------------------------
py=${ARRAYC_PYTHON:-}
if [ -z "$py" ] || [ -z "${ARRAYC_PYTHON_INSTALL_DIR:-}" ]; then
  echo "skipped: the Python package (ARRAYC_PYTHON or ARRAYC_PYTHON_INSTALL_DIR not set)"
elif [ -n "$flags" ]; then
  echo "skipped: the Python package (a sanitizer build: python3 is not instrumented)"
elif ! "$py" -c "import numpy" > /dev/null 2>&1; then
  echo "skipped: the Python package ($py has no NumPy: apt-get install python3-numpy)"
else
  mkdir -p "$work/py"
  cat > "$work/py/check.py" << 'PY'
import os, sys
import numpy as np
import arrayc
from arrayc import _capi

prefix = os.path.realpath(sys.argv[1])
assert os.path.realpath(arrayc.__file__).startswith(prefix + os.sep), arrayc.__file__
assert os.path.realpath(_capi.LIBRARY_PATH).startswith(prefix + os.sep), _capi.LIBRARY_PATH
m = arrayc.compile("fn f(x: f32[]) -> f32 { fold(|a, b| a + b, 0.0, x) }", backend="cpu")


@arrayc.jit(backend="cpu")
def saxpy(a, x, y):
    return arrayc.map(lambda xi, yi: a * xi + yi, x, y)


x = np.arange(4, dtype=np.float32)
print(m.f(x), saxpy(np.float32(2), x, x).tolist())
PY
  expect "the installed Python package (compile, @arrayc.jit)" "6.0 [0.0, 3.0, 6.0, 9.0]" \
    env -u ARRAYC_LIBRARY PYTHONPATH="$prefix/$ARRAYC_PYTHON_INSTALL_DIR" "$py" \
    "$work/py/check.py" "$prefix"
fi
finish
