# lit configuration for arrayc: every .ac and .test file under test/ (except
# unit/, install/ (ctest's install.consumer) and Inputs/ directories) with
# RUN lines is a test.
#
# Substitutions:
#   %arrayc-opt  %arrayc-run   the tools of this build
#   %arrayc-bin                the `arrayc` driver (named so that %arrayc-opt
#                              and %arrayc-run are not prefixes of it)
#   FileCheck, not             from LLVM 19's tools
#   %python                    the Python that CMake found
#   %srcroot                   the source tree (examples/ etc.)
#   %bindir                    the build tree (example-NAME programs live there)
#   %check-output              test/e2e/check_output.py: compares printed results with
#                              expected ones (exact for integers/bools, tolerant for floats)
import os
import lit.formats

config.name = "arrayc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".ac", ".test"]
config.test_source_root = os.path.join(config.arrayc_src_root, "test")
config.test_exec_root = os.path.join(config.arrayc_obj_root, "test")
config.excludes = ["unit", "Inputs", "install", "CMakeLists.txt"]

tools = config.arrayc_obj_root
config.substitutions.append(("%arrayc-opt", os.path.join(tools, "arrayc-opt")))
config.substitutions.append(("%arrayc-bin", os.path.join(tools, "arrayc")))
config.substitutions.append(("%arrayc-run", os.path.join(tools, "arrayc-run")))
config.substitutions.append(("%python", config.python))
config.substitutions.append(("%srcroot", config.arrayc_src_root))
config.substitutions.append(("%bindir", config.arrayc_obj_root))
config.substitutions.append(
    ("%check-output", config.python + " " +
     os.path.join(config.arrayc_src_root, "test", "e2e", "check_output.py")))
config.substitutions.append(("FileCheck", config.filecheck))
if config.not_tool:
    config.substitutions.append((r"\bnot\b", config.not_tool))
config.environment["ARRAYC_SOURCE_DIR"] = config.arrayc_src_root
# arrayc-run's backend when no --backend is given (docs/tools.md): the
# interpreter, the reference the expected outputs come from, rather than the
# users' default (auto). A test of that default says `env ARRAYC_BACKEND=`.
config.environment["ARRAYC_BACKEND"] = "interp"

# ptxas (from a CUDA toolkit: PATH, $CUDA_HOME/bin or /usr/local/cuda/bin)
# assembles the PTX the GPU backend writes; tests that need it say
# `REQUIRES: ptxas` and are reported UNSUPPORTED (with this reason) without it.
import shutil
_ptxas = shutil.which("ptxas")
for _home in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
    if not _ptxas and _home and os.path.isfile(os.path.join(_home, "bin", "ptxas")):
        _ptxas = os.path.join(_home, "bin", "ptxas")
if _ptxas:
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", _ptxas))
else:
    lit_config.note("ptxas not found (no CUDA toolkit): PTX assembly tests are unsupported")
    # for ctest's list of skips (test/skips.sh)
    if os.environ.get("ARRAYC_SKIP_LOG"):
        with open(os.environ["ARRAYC_SKIP_LOG"], "a") as _log:
            _log.write("lit tests that need ptxas (REQUIRES: ptxas): ptxas not found "
                       "(no CUDA toolkit)\n")

# A C compiler for the ahead-of-time tests, which compile C programs
# against generated headers: `REQUIRES: cc`. It is the compiler this build
# was made with (a program must link the same sanitizer runtime as
# libarrayc_rt), else $CC, else cc.
#   %cc       the compiler, with this build's -fsanitize option
#   %incdir   the public headers (include/)
#   %rtlink   the link flags of libarrayc_rt in this build (with an rpath)
#   %cuda-mock  the fake CUDA driver of test/unit/cuda_mock.c (for
#             ARRAYC_LIBCUDA): loads PTX modules without a GPU
#   %san-preload  the sanitizer's shared runtime (for LD_PRELOAD), or
#             nothing in a plain build
# In a sanitizer build (-DARRAYC_SANITIZE=ON: feature `asan`;
# -DARRAYC_TSAN=ON: `tsan`) libarrayc_rt is instrumented, so the programs
# linking it are too (%cc carries the flags), and an uninstrumented
# process (Python) that loads it must preload the sanitizer's runtime:
# `env LD_PRELOAD=%san-preload`.
_cc = getattr(config, "cc", "")
if not (_cc and os.path.isfile(_cc)):
    _cc = shutil.which(os.environ.get("CC") or "cc")
_sanitize = getattr(config, "sanitize", "").upper() in ("ON", "1", "TRUE", "YES")
_san_flags = getattr(config, "sanitizer_flags", "")
if _sanitize or "address" in _san_flags:
    config.available_features.add("asan")
if "thread" in _san_flags:
    config.available_features.add("tsan")
_san_preload = ""
if _cc and _san_flags:
    import subprocess
    # GCC's libasan.so / libtsan.so, or Clang's shared runtime
    _names = (["libtsan.so", "libclang_rt.tsan.so", "libclang_rt.tsan-x86_64.so"]
              if "thread" in _san_flags else
              ["libasan.so", "libclang_rt.asan.so", "libclang_rt.asan-x86_64.so"])
    for _name in _names:
        try:
            _path = subprocess.run([_cc, "-print-file-name=" + _name], capture_output=True,
                                   text=True).stdout.strip()
        except OSError:
            _path = ""
        if os.path.isabs(_path) and os.path.exists(_path):
            _san_preload = os.path.realpath(_path)
            break
    if _san_preload:
        config.available_features.add("san-preload")
    else:
        lit_config.note("no shared sanitizer runtime found: tests that preload it are "
                        "unsupported")
config.substitutions.append(("%san-preload", _san_preload))
if _cc:
    config.available_features.add("cc")
    config.substitutions.append(("%cc", _cc + (" " + _san_flags if _san_flags else "")))
else:
    lit_config.note("no C compiler (cc, or $CC): ahead-of-time tests are unsupported")
config.substitutions.append(("%incdir", os.path.join(config.arrayc_src_root, "include")))
config.substitutions.append(
    ("%rtlink", "-L%s -larrayc_rt -Wl,-rpath,%s -lm" % (tools, tools)))
config.substitutions.append(("%cuda-mock", os.path.join(tools, "test", "libcuda_mock.so")))
