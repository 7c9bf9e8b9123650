"""The package's core: compiling, loading and calling (arrayc/__init__.py
re-exports what is public). docs/python.md is the reference. The layers:
  _capi      the C API: prototypes, ac_datum, the enums read from the headers;
  _Context   the one ac_context of the process and its runtimes per backend;
  Module     a compiled program (compile, compile_file) or an ahead-of-time
             library (load); its functions are attributes;
  Function   converts arguments to ac_datum leaves (NumPy buffers borrowed,
             not copied) and results back (NumPy arrays, or Array);
  Array      an ac_array left where the call made it (on the GPU) until read.
@arrayc.jit (_jit.py) translates Python to program text and goes through
compile(). The package's namespace also holds arrayc's operations (map,
len, min, ...: _ops.py), which would shadow Python's builtins here; this
module is where the code that uses those builtins lives.
"""
import builtins
import ctypes
import itertools
import json
import os
import threading

import numpy as np

from . import _capi
from ._capi import lib, Datum, P

__version__ = "0.1.0"

# ---- the scalar table: language name -> (ac_scalar value, NumPy dtype) ----------------
_DTYPES = {"bool": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32,
           "i64": np.int64, "u8": np.uint8, "u16": np.uint16, "u32": np.uint32,
           "u64": np.uint64, "f32": np.float32, "f64": np.float64}
SCALARS = {name: (value, np.dtype(_DTYPES[name])) for name, value in _capi.SCALAR.items()}
_BY_VALUE = {value: (name, dtype) for name, (value, dtype) in SCALARS.items()}
_DEVICE_BACKENDS = ("gpu", "simt-emu")


# ---- errors -----------------------------------------------------------------------------
class Error(Exception):
    """An error of the arrayc library: `status` (the ac_status name, e.g.
    "AC_ERR_INVALID"), `message` (bare), `text` (the full diagnostic), and the
    source position `file`, `line`, `column` (None, 0, 0 without one)."""

    def __init__(self, status, message, text, file=None, line=0, column=0):
        super().__init__(text.rstrip("\n"))
        self.status, self.message, self.text = status, message, text
        self.file, self.line, self.column = file, line, column


class CompileError(Error):
    """The program text does not parse or type-check (AC_ERR_SYNTAX,
    AC_ERR_TYPE); `text` has the source line and a caret."""


class RuntimeError(Error, builtins.RuntimeError):
    """A call stopped (AC_ERR_RUNTIME): an index out of bounds, a shape
    mismatch, ...; the position is the operation's in the source."""


_STATUS_NAMES = {v: k for k, v in _capi.STATUS.items()}


def _raise(err):
    """Raises the exception for an ac_error (and frees it)."""
    e = err.value
    status = _STATUS_NAMES.get(lib.ac_error_status(e), "AC_ERR_INTERNAL")
    f = lib.ac_error_file(e)
    args = (status, lib.ac_error_message(e).decode(), lib.ac_error_text(e).decode(),
            f.decode() if f is not None else None, lib.ac_error_line(e), lib.ac_error_column(e))
    lib.ac_error_destroy(e)
    cls = {"AC_ERR_SYNTAX": CompileError, "AC_ERR_TYPE": CompileError,
           "AC_ERR_RUNTIME": RuntimeError}.get(status, Error)
    raise cls(*args)


# ---- the process's context ------------------------------------------------------------
class _Context:
    """One ac_context for the process, so that arrays pass between modules.
    A context is used by one thread at a time: `lock` serialises every use.
    It lives until the process ends (arrays and functions may outlive any
    Python object that would own it)."""

    def __init__(self):
        self.ctx = P(lib.ac_context_create())
        self.lock = threading.RLock()
        self.runtimes = {}  # backend name -> ac_runtime, or the Error it gave
        # borrowed NumPy buffers by token, kept alive until the runtime releases them
        self.borrowed = {}
        self.tokens = itertools.count(1)
        self.release_cb = _capi.RELEASE_FN(self._release)

    def _release(self, user):
        self.borrowed.pop(user, None)

    def runtime(self, backend):
        """(ac_runtime, chosen backend name) for a backend name."""
        with self.lock:
            if backend not in self.runtimes:
                be = ctypes.c_int()
                if not lib.ac_backend_from_name(backend.encode(), ctypes.byref(be)):
                    raise ValueError("unknown backend %r (interp, cpu, simt-emu, gpu, auto)"
                                     % (backend,))
                rt, err = P(), P()
                if lib.ac_runtime_create(self.ctx, be.value, ctypes.byref(rt),
                                         ctypes.byref(err)) != 0:
                    try:
                        _raise(err)
                    except Error as e:
                        self.runtimes[backend] = e
                else:
                    self.runtimes[backend] = rt
            rt = self.runtimes[backend]
            if isinstance(rt, Error):
                raise rt
            return rt, lib.ac_backend_name(lib.ac_runtime_backend(rt)).decode()

    def borrow(self, x, scalar):
        """An ac_array over ndarray x's buffer (C order, aligned), no copy."""
        token = next(self.tokens)
        self.borrowed[token] = x
        ext = (ctypes.c_int64 * x.ndim)(*x.shape)
        err = P()
        a = lib.ac_array_borrow(self.ctx, scalar, x.ndim, ext, x.ctypes.data, self.release_cb,
                                token, ctypes.byref(err))
        if not a:
            self.borrowed.pop(token, None)
            _raise(err)
        return P(a)


_CTX = None


def _context():
    global _CTX
    if _CTX is None:
        _CTX = _Context()
    return _CTX


# ---- arrays left on the device -----------------------------------------------------------
class Array:
    """An array a call made, wrapping its ac_array. On the GPU (and the SIMT
    emulator, which keeps arrays as a GPU does) its elements stay in device
    memory until read: `numpy()`, `np.asarray(a)`, or `__array_interface__`
    fetch them once (then they are cached). Passed to another call it is
    handed over as it is, without a copy. Read-only: arrays are immutable."""

    def __init__(self, handle):
        self._h = handle  # one reference, ours
        self.dtype = _BY_VALUE[lib.ac_array_type(handle)][1]
        rank = lib.ac_array_rank(handle)
        ext = lib.ac_array_extents(handle)
        self.shape = tuple(ext[i] for i in range(rank))

    def __del__(self):
        h, self._h = getattr(self, "_h", None), None
        if h and lib is not None:
            lib.ac_array_release(h)

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))

    def __len__(self):
        return self.shape[0]

    def _data(self):
        ptr = lib.ac_array_data(self._h)
        if not ptr and self.size:
            err = P()
            lib.ac_array_read(self._h, None, 0, ctypes.byref(err))
            _raise(err)
        return ptr or 0

    @property
    def __array_interface__(self):
        return {"shape": self.shape, "typestr": self.dtype.str, "version": 3,
                "data": (self._data(), True)}

    def __array__(self, dtype=None, copy=None):
        a = np.asarray(_Interface(self))
        return a if dtype is None else a.astype(dtype)

    def numpy(self):
        """The elements as a read-only NumPy array (no copy of the host elements)."""
        return np.asarray(_Interface(self))

    def __repr__(self):
        return "arrayc.Array(%r, dtype=%s)" % (self.numpy().tolist(), self.dtype.name)


class _Interface:
    """A NumPy view's base: holds the Array (and so its reference)."""

    def __init__(self, a, writable=False):
        self.a = a
        d = a.__array_interface__
        if writable:
            d = dict(d, data=(d["data"][0], False))
        self.__array_interface__ = d


# ---- functions ------------------------------------------------------------------------
class Function:
    """A function ready for calls: `f(*args, cast=False)`. Attributes: name,
    backend, params (list of (name, type) as the language spells them),
    result_type."""

    def __init__(self, handle, keep, resident):
        # keep: what must outlive the ac_function (its _Source, whose
        # ac_module it uses, or its _Library), held here so that plain
        # reference counting, never a cycle, decides the order
        self._h, self._keep, self._resident = handle, keep, resident
        self.name = None
        f = handle
        self.backend = lib.ac_backend_name(lib.ac_function_backend(f)).decode()
        self.params, self._leaves = [], []
        for p in range(lib.ac_function_num_params(f)):
            first, count = ctypes.c_size_t(), ctypes.c_size_t()
            lib.ac_function_param_leaves(f, p, ctypes.byref(first), ctypes.byref(count))
            self.params.append((lib.ac_function_param_name(f, p).decode(),
                                lib.ac_function_param_type(f, p).decode()))
            self._leaves.append((first.value, count.value))
        self.result_type = lib.ac_function_result_type(f).decode()
        t, r = ctypes.c_int(), ctypes.c_uint()
        self._args = []
        for i in range(lib.ac_function_num_args(f)):
            lib.ac_function_arg_info(f, i, ctypes.byref(t), ctypes.byref(r))
            self._args.append((t.value, r.value, lib.ac_function_arg_name(f, i).decode()))
        self._results = []
        for i in range(lib.ac_function_num_results(f)):
            lib.ac_function_result_info(f, i, ctypes.byref(t), ctypes.byref(r))
            self._results.append((t.value, r.value))

    def __del__(self):
        h, self._h = getattr(self, "_h", None), None
        if h and lib is not None:
            lib.ac_function_destroy(h)

    def __repr__(self):
        return "<arrayc function %s(%s) -> %s on %s>" % (
            self.name, ", ".join("%s: %s" % p for p in self.params), self.result_type,
            self.backend)

    def __call__(self, *args, cast=False):
        if len(args) != len(self.params):
            raise TypeError("%s() takes %d argument%s (%s), got %d" % (
                self.name, len(self.params), "" if len(self.params) == 1 else "s",
                ", ".join(n for n, _ in self.params), len(args)))
        c = _context()
        datums = (Datum * max(1, len(self._args)))()
        made = []  # the ac_arrays made for this call, released after it
        try:
            for (pname, ptype), (first, count), value in zip(self.params, self._leaves, args):
                leaves = list(_flatten(value)) if ptype.startswith("(") else [value]
                if len(leaves) != count:
                    raise TypeError("parameter '%s' of %s() is a %s: expected %d value%s, got %d"
                                    % (pname, self.name, ptype, count,
                                       "" if count == 1 else "s", len(leaves)))
                for k, v in enumerate(leaves):
                    self._leaf(c, datums[first + k], self._args[first + k], v, cast, made)
            results = (Datum * max(1, len(self._results)))()
            err = P()
            with c.lock:
                st = lib.ac_function_call(self._h, datums, len(self._args), results,
                                          len(self._results), ctypes.byref(err))
            if st != 0:
                _raise(err)
        finally:
            for a in made:
                lib.ac_array_release(a)
        out = tuple(self._result(results[i]) for i in range(len(self._results)))
        return out[0] if len(out) == 1 else out

    def _leaf(self, c, d, info, v, cast, made):
        scalar, rank, name = info
        tname, dtype = _BY_VALUE[scalar]
        where = "parameter '%s' of %s()" % (name, self.name)
        d.type = scalar
        if rank == 0:
            d.kind = _capi.DATUM["AC_DATUM_SCALAR"]
            v = _scalar(v, tname, dtype, cast, where)
            if tname == "bool":
                d.s.b = bool(v)
            elif dtype.kind == "i":
                d.s.i = int(v)
            elif dtype.kind == "u":
                d.s.u = int(v)
            else:
                d.s.f = float(v)
            return
        d.kind = _capi.DATUM["AC_DATUM_ARRAY"]
        if isinstance(v, Array):
            if v.dtype == dtype and v.ndim == rank:
                d.array = v._h  # borrowed for the call: no copy, no new reference
                return
            if not cast:
                raise TypeError("%s expects %s[%s], got an arrayc.Array of %s with %d "
                                "dimension%s" % (where, tname, "," * (rank - 1), v.dtype.name,
                                                 v.ndim, "" if v.ndim == 1 else "s"))
            v = v.numpy()
        if not isinstance(v, np.ndarray):
            if not cast:
                raise TypeError("%s expects a NumPy array of %s, got %s (pass cast=True to "
                                "convert)" % (where, tname, type(v).__name__))
            v = np.asarray(v, dtype=dtype)
        if v.ndim != rank:
            raise TypeError("%s expects %d dimension%s, got an array of shape %s"
                            % (where, rank, "" if rank == 1 else "s", v.shape))
        if v.dtype != dtype or not v.flags.c_contiguous or not v.flags.aligned:
            if not cast:
                why = ("has dtype %s, expects %s" % (v.dtype, tname) if v.dtype != dtype
                       else "is not C-contiguous" if not v.flags.c_contiguous
                       else "is not aligned")
                raise TypeError("%s %s (pass cast=True to copy it)" % (where, why))
            v = np.ascontiguousarray(v, dtype=dtype)
            if not v.flags.aligned:
                v = v.copy()
        a = c.borrow(v, scalar)
        made.append(a)
        d.array = a

    def _result(self, d):
        name, dtype = _BY_VALUE[d.type]
        if d.kind == _capi.DATUM["AC_DATUM_SCALAR"]:
            if name == "bool":
                return np.bool_(d.s.b)
            return dtype.type(d.s.i if dtype.kind == "i" else d.s.u if dtype.kind == "u"
                              else d.s.f)
        a = Array(P(d.array))
        if self._resident:
            return a
        # a NumPy array over the runtime's host elements, no copy; writable:
        # nobody else holds this result
        return np.asarray(_Interface(a, writable=True))


def _flatten(v):
    if isinstance(v, tuple):
        for x in v:
            yield from _flatten(x)
    else:
        yield v


def _scalar(v, tname, dtype, cast, where):
    if isinstance(v, np.ndarray) and v.ndim == 0:
        v = v[()]
    if isinstance(v, (np.ndarray, Array, list)):
        raise TypeError("%s expects a %s scalar, got %s" % (where, tname, type(v).__name__))
    if isinstance(v, np.generic):
        ok = v.dtype == dtype
    elif isinstance(v, bool):
        ok = tname == "bool"
    elif isinstance(v, int):
        ok = dtype.kind in "iuf"
        if dtype.kind in "iu" and not (np.iinfo(dtype).min <= v <= np.iinfo(dtype).max):
            if not cast:
                raise TypeError("%s: %d does not fit in %s" % (where, v, tname))
    elif isinstance(v, float):
        ok = dtype.kind == "f"
    else:
        raise TypeError("%s expects a %s scalar, got %s" % (where, tname, type(v).__name__))
    if not ok and not cast:
        got = v.dtype.name if isinstance(v, np.generic) else type(v).__name__
        raise TypeError("%s expects %s, got %s (pass cast=True to convert)" % (where, tname, got))
    return np.array(v).astype(dtype)[()] if cast else v


# ---- modules ----------------------------------------------------------------------------
class Module:
    """A program's functions as attributes (compile, compile_file), or an
    ahead-of-time library's (load). `functions` lists their names; `backend`
    is the backend chosen ("cpu" for backend="auto" without a GPU)."""

    def __init__(self, functions, backend, make, keep, resident):
        self.functions, self.backend = list(functions), backend
        self._make, self._keep, self._resident, self._cache = make, keep, resident, {}

    def __getattr__(self, name):
        if name.startswith("_") or name not in self.functions:
            raise AttributeError("module has no function %r (it has: %s)"
                                 % (name, ", ".join(self.functions)))
        if name not in self._cache:
            with _context().lock:
                f = Function(self._make(name), self._keep, self._resident)
            f.name = name
            self._cache[name] = f
        return self._cache[name]

    def __dir__(self):
        return list(super().__dir__()) + self.functions

    def __repr__(self):
        return "<arrayc module on %s: %s>" % (self.backend, ", ".join(self.functions))


class _Source:
    """A parsed module (ac_module), destroyed after its functions."""

    def __init__(self, text, filename):
        c = _context()
        m, err = P(), P()
        data = text.encode()
        with c.lock:
            if lib.ac_module_parse(c.ctx, filename.encode(), data, len(data), ctypes.byref(m),
                                   ctypes.byref(err)) != 0:
                _raise(err)
        self.m = m
        self.names = [lib.ac_module_function_name(m, i).decode()
                      for i in range(lib.ac_module_num_functions(m))
                      if not lib.ac_module_function_is_extern(m, i)]

    def __del__(self):
        if getattr(self, "m", None) and lib is not None:
            lib.ac_module_destroy(self.m)


def compile(source, backend="auto", filename="<string>", resident=None):
    """Compiles program text. backend: "auto" (the GPU when present, else the
    CPU), "interp", "cpu", "simt-emu" or "gpu". Functions are compiled on
    first use. resident: return arrayc.Array for array results (default:
    on the GPU and the SIMT emulator) instead of NumPy arrays."""
    c = _context()
    rt, chosen = c.runtime(backend)
    src = _Source(source, filename)

    def make(name):
        f, err = P(), P()
        if lib.ac_runtime_compile(rt, src.m, name.encode(), ctypes.byref(f),
                                  ctypes.byref(err)) != 0:
            _raise(err)
        return f

    return Module(src.names, chosen, make, src,
                  chosen in _DEVICE_BACKENDS if resident is None else resident)


def compile_file(path, backend="auto", resident=None):
    """compile() of a file's text; diagnostics name the file."""
    with open(path) as f:
        return compile(f.read(), backend=backend, filename=str(path), resident=resident)


def load(path, manifest=None, resident=None):
    """Loads ahead-of-time code (`arrayc --shared --emit=obj,header,manifest`,
    or a .ptx) through its manifest, PREFIX.json beside it unless given."""
    if manifest is None:
        manifest = os.path.splitext(str(path))[0] + ".json"
    with open(manifest) as f:
        man = json.load(f)
    if man.get("manifest") != 1:
        raise Error("AC_ERR_INVALID", "not an arrayc manifest", "%s: not an arrayc manifest"
                    % manifest)
    c = _context()
    libh, err = P(), P()
    with c.lock:
        if lib.ac_library_open(c.ctx, str(path).encode(), man["prefix"].encode(),
                               ctypes.byref(libh), ctypes.byref(err)) != 0:
            _raise(err)
    backend = lib.ac_backend_name(lib.ac_library_backend(libh)).decode()
    names = [fn["name"] for fn in man["functions"]]

    def make(name):
        f, err = P(), P()
        if lib.ac_library_function(libh, name.encode(), ctypes.byref(f), ctypes.byref(err)) != 0:
            _raise(err)
        n = sum(len(p["leaves"]) for p in man["functions"][names.index(name)]["params"])
        if lib.ac_function_num_args(f) != n:
            lib.ac_function_destroy(f)
            raise Error("AC_ERR_INVALID", "manifest does not match the code",
                        "%s: %s() has %d argument leaves in the manifest, %d in %s"
                        % (manifest, name, n, lib.ac_function_num_args(f), path))
        return f

    mod = Module(names, backend, make, _Library(libh),
                 backend in _DEVICE_BACKENDS if resident is None else resident)
    mod.manifest = man
    return mod


class _Library:
    def __init__(self, h):
        self.h = h

    def __del__(self):
        if lib is not None:
            lib.ac_library_close(self.h)


def backends():
    """The backends this machine can run, by name (always interp; cpu; gpu
    with an NVIDIA driver and device; simt-emu)."""
    out = []
    for name in ("interp", "cpu", "simt-emu", "gpu"):
        try:
            _context().runtime(name)
            out.append(name)
        except Error:
            pass
    return out


def version():
    """The compiler's identity ("0.1.0 5a089d4": release and commit), as
    ahead-of-time files record it."""
    return lib.ac_library_compiler_id().decode()
