"""arrayc: data-parallel array programs from Python, with NumPy in and out.

    import arrayc, numpy as np
    m = arrayc.compile("fn f(x: f32[]) -> f32 { fold(|a, b| a + b, 0.0, x) }")
    m.f(np.arange(4, dtype=np.float32))          # 6.0

    @arrayc.jit
    def saxpy(a, x, y):
        return arrayc.map(lambda xi, yi: a * xi + yi, x, y)

Pure Python over the C runtime (libarrayc.so) through ctypes. docs/python.md
is the reference. The code lives in _core.py (compile, load, calls, arrays),
_jit.py (@arrayc.jit) and _ops.py (the language's operations as names of
the package: arrayc.map, arrayc.fold, ..., arrayc.len, arrayc.min, which
is why this file holds no code of its own: they shadow Python's builtins).
"""
from ._core import (Array, CompileError, Error, Function, Module, RuntimeError, SCALARS,
                    __version__, _context, backends, compile, compile_file, load, version)
from ._jit import JitFunction, jit
from ._ops import OPERATIONS as _OPERATIONS, Operation

globals().update(_OPERATIONS)

# the operations are left out of `from arrayc import *`: they would hide
# Python's own len, map, min, ... in the importing module
__all__ = ["compile", "compile_file", "load", "jit", "backends", "version", "Array", "Module",
           "Function", "JitFunction", "Operation", "Error", "CompileError", "RuntimeError"]
