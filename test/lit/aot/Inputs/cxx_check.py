"""cxx_check.py FILE.c FLAGS...: compiles FILE as C++11 with warnings as errors
when a C++ compiler ($CXX, c++, g++, clang++) is present; says SKIPPED
otherwise (the generated header must also be valid C++)."""
import os
import shutil
import subprocess
import sys

cxx = None
for name in (os.environ.get("CXX"), "c++", "g++", "clang++"):
    if name and shutil.which(name):
        cxx = shutil.which(name)
        break
if not cxx:
    print("SKIPPED: no C++ compiler")
    sys.exit(0)
src = sys.argv[1]
out = src + ".cxx.o"
cmd = [cxx, "-std=c++11", "-Wall", "-Wextra", "-Wpedantic", "-Werror", "-x", "c++", "-c", src,
       "-o", out] + sys.argv[2:]
sys.exit(subprocess.call(cmd))
