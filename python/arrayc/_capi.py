"""arrayc._capi: the C API of libarrayc.so through ctypes.

ctypes, not cffi: it is in the standard library (nothing to build or
install besides NumPy), and the API is small and C-only (opaque handles,
one struct, ac_datum), so declaring the prototypes by hand is short.

The enumerations (ac_scalar, ac_status, ac_backend, ac_datum_kind) are read
by name from the C headers copied beside this file (arrayc/include/), so no
number of the C API is written here; ac_scalar_name cross-checks the
scalar table against the loaded library. The library is found as
$ARRAYC_LIBRARY, else the path _config.py records (the build tree's or the
installed libarrayc.so), else by its soname.
"""
import ctypes
import os
import re

_HERE = os.path.dirname(os.path.abspath(__file__))


def _read_enums():
    """Every `typedef enum NAME { A = 0, B, ... } NAME;` of the headers,
    as {enum name: {enumerator: value}}."""
    enums = {}
    for h in ("core.h", "runtime.h"):
        with open(os.path.join(_HERE, "include", h)) as f:
            text = re.sub(r"/\*.*?\*/", "", f.read(), flags=re.S)
        for name, body in re.findall(r"typedef\s+enum\s+(\w+)\s*\{(.*?)\}", text, re.S):
            values, nxt = {}, 0
            for item in body.split(","):
                item = item.strip()
                if not item:
                    continue
                key, _, val = item.partition("=")
                nxt = int(val.strip(), 0) if val else nxt
                values[key.strip()] = nxt
                nxt += 1
            enums[name] = values
    return enums


ENUMS = _read_enums()
STATUS = ENUMS["ac_status"]
BACKEND = ENUMS["ac_backend"]
DATUM = ENUMS["ac_datum_kind"]
# AC_F32 -> "f32": the language's names of the storage kinds
SCALAR = {k[3:].lower(): v for k, v in ENUMS["ac_scalar"].items()}


def _find_library():
    path = os.environ.get("ARRAYC_LIBRARY")
    if path:
        return path
    try:
        from . import _config
        if os.path.exists(_config.LIBRARY):
            return _config.LIBRARY
    except ImportError:
        pass
    return "libarrayc.so.0"


LIBRARY_PATH = _find_library()
lib = ctypes.CDLL(LIBRARY_PATH)

P = ctypes.c_void_p
PP = ctypes.POINTER(ctypes.c_void_p)
c_char_p = ctypes.c_char_p
c_size_t = ctypes.c_size_t
c_int = ctypes.c_int
c_uint = ctypes.c_uint


class _Scalar(ctypes.Union):
    _fields_ = [("b", ctypes.c_bool), ("i", ctypes.c_int64), ("u", ctypes.c_uint64),
                ("f", ctypes.c_double)]


class Datum(ctypes.Structure):
    """struct ac_datum (runtime.h): a scalar or an array handle."""
    _fields_ = [("kind", c_int), ("type", c_int), ("s", _Scalar), ("array", P)]


RELEASE_FN = ctypes.CFUNCTYPE(None, P)
WARNING_FN = ctypes.CFUNCTYPE(None, P, c_char_p, c_uint, c_uint, c_char_p)


def _proto(name, restype, *argtypes):
    fn = getattr(lib, name)
    fn.restype = restype
    fn.argtypes = list(argtypes)


for _n, _r, _a in [
    ("ac_context_create", P, ()),
    ("ac_context_destroy", None, (P,)),
    ("ac_error_status", c_int, (P,)),
    ("ac_error_message", c_char_p, (P,)),
    ("ac_error_file", c_char_p, (P,)),
    ("ac_error_line", c_uint, (P,)),
    ("ac_error_column", c_uint, (P,)),
    ("ac_error_text", c_char_p, (P,)),
    ("ac_error_destroy", None, (P,)),
    ("ac_scalar_name", c_char_p, (c_int,)),
    ("ac_scalar_size", c_size_t, (c_int,)),
    ("ac_module_parse", c_int, (P, c_char_p, c_char_p, c_size_t, PP, PP)),
    ("ac_module_destroy", None, (P,)),
    ("ac_module_num_functions", c_size_t, (P,)),
    ("ac_module_function_name", c_char_p, (P, c_size_t)),
    ("ac_module_function_is_extern", ctypes.c_bool, (P, c_size_t)),
    ("ac_backend_from_name", ctypes.c_bool, (c_char_p, ctypes.POINTER(c_int))),
    ("ac_backend_name", c_char_p, (c_int,)),
    ("ac_runtime_create", c_int, (P, c_int, PP, PP)),
    ("ac_runtime_destroy", None, (P,)),
    ("ac_runtime_backend", c_int, (P,)),
    ("ac_runtime_compile", c_int, (P, P, c_char_p, PP, PP)),
    ("ac_function_destroy", None, (P,)),
    ("ac_function_backend", c_int, (P,)),
    ("ac_function_num_args", c_size_t, (P,)),
    ("ac_function_num_results", c_size_t, (P,)),
    ("ac_function_arg_info", None, (P, c_size_t, ctypes.POINTER(c_int), ctypes.POINTER(c_uint))),
    ("ac_function_result_info", None,
     (P, c_size_t, ctypes.POINTER(c_int), ctypes.POINTER(c_uint))),
    ("ac_function_num_params", c_size_t, (P,)),
    ("ac_function_param_name", c_char_p, (P, c_size_t)),
    ("ac_function_param_type", c_char_p, (P, c_size_t)),
    ("ac_function_param_leaves", None,
     (P, c_size_t, ctypes.POINTER(c_size_t), ctypes.POINTER(c_size_t))),
    ("ac_function_arg_name", c_char_p, (P, c_size_t)),
    ("ac_function_result_type", c_char_p, (P,)),
    ("ac_function_call", c_int, (P, ctypes.POINTER(Datum), c_size_t, ctypes.POINTER(Datum),
                                 c_size_t, PP)),
    ("ac_datum_release", None, (ctypes.POINTER(Datum),)),
    ("ac_array_create", P, (P, c_int, c_uint, ctypes.POINTER(ctypes.c_int64), P, PP)),
    ("ac_array_borrow", P, (P, c_int, c_uint, ctypes.POINTER(ctypes.c_int64), P, RELEASE_FN, P,
                            PP)),
    ("ac_array_retain", None, (P,)),
    ("ac_array_release", None, (P,)),
    ("ac_array_type", c_int, (P,)),
    ("ac_array_rank", c_uint, (P,)),
    ("ac_array_extents", ctypes.POINTER(ctypes.c_int64), (P,)),
    ("ac_array_size", ctypes.c_int64, (P,)),
    ("ac_array_data", P, (P,)),
    ("ac_array_read", c_int, (P, P, c_size_t, PP)),
    ("ac_library_open", c_int, (P, c_char_p, c_char_p, PP, PP)),
    ("ac_library_close", None, (P,)),
    ("ac_library_backend", c_int, (P,)),
    ("ac_library_num_functions", c_size_t, (P,)),
    ("ac_library_function_name", c_char_p, (P, c_size_t)),
    ("ac_library_function", c_int, (P, c_char_p, PP, PP)),
    ("ac_library_compiler_id", c_char_p, ()),
]:
    _proto(_n, _r, *_a)

# the table agrees with the library it loaded
for _name, _value in SCALAR.items():
    assert lib.ac_scalar_name(_value).decode() == _name, (_name, _value)
