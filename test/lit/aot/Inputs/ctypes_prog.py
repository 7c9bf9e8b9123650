"""test/lit/aot/Inputs/ctypes_prog.py RTLIB CODE: Python calls ahead-of-time
code through ctypes alone: it loads the runtime library, opens the shared
object that `arrayc --shared` wrote for prog.ac and calls `twice` through
the C function pointer of its own signature, and `dotp` likewise."""
import ctypes
import sys

rt = ctypes.CDLL(sys.argv[1])
P = ctypes.c_void_p
rt.ac_context_create.restype = P
rt.ac_context_destroy.argtypes = [P]
rt.ac_library_open.argtypes = [P, ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(P),
                               ctypes.POINTER(P)]
rt.ac_library_function.argtypes = [P, ctypes.c_char_p, ctypes.POINTER(P), ctypes.POINTER(P)]
rt.ac_library_close.argtypes = [P]
rt.ac_function_pointer.argtypes = [P, ctypes.POINTER(P), ctypes.POINTER(P)]
rt.ac_function_destroy.argtypes = [P]
rt.ac_array_create.restype = P
rt.ac_array_create.argtypes = [P, ctypes.c_int, ctypes.c_uint, ctypes.POINTER(ctypes.c_int64),
                               P, ctypes.POINTER(P)]
rt.ac_array_data.restype = P
rt.ac_array_data.argtypes = [P]
rt.ac_array_extents.restype = ctypes.POINTER(ctypes.c_int64)
rt.ac_array_extents.argtypes = [P]
rt.ac_array_release.argtypes = [P]
rt.ac_error_text.restype = ctypes.c_char_p
rt.ac_error_text.argtypes = [P]
AC_I32, AC_F32 = 3, 9

ctx = P(rt.ac_context_create())
err = P()
lib = P()
if rt.ac_library_open(ctx, sys.argv[2].encode(), None, ctypes.byref(lib), ctypes.byref(err)):
    sys.exit("open: " + rt.ac_error_text(err).decode())


def function(name, restype, *argtypes):
    f = P()
    if rt.ac_library_function(lib, name, ctypes.byref(f), ctypes.byref(err)):
        sys.exit(rt.ac_error_text(err).decode())
    fp = P()
    if rt.ac_function_pointer(f, ctypes.byref(fp), ctypes.byref(err)):
        sys.exit(rt.ac_error_text(err).decode())
    return f, ctypes.CFUNCTYPE(ctypes.c_int, *argtypes)(fp.value)


twice_f, twice = function(b"twice", None, P, ctypes.POINTER(P), ctypes.POINTER(P))
dotp_f, dotp = function(b"dotp", None, P, P, ctypes.POINTER(ctypes.c_float), ctypes.POINTER(P))
rt.ac_library_close(lib)

ext = (ctypes.c_int64 * 2)(2, 2)
data = (ctypes.c_int32 * 4)(1, -2, 3, 40)
a = P(rt.ac_array_create(ctx, AC_I32, 2, ext, ctypes.cast(data, P), None))
out = P()
if twice(a, ctypes.byref(out), ctypes.byref(err)):
    sys.exit("twice: " + rt.ac_error_text(err).decode())
e = rt.ac_array_extents(out)
vals = ctypes.cast(rt.ac_array_data(out), ctypes.POINTER(ctypes.c_int32))
print("twice", e[0], e[1], [vals[i] for i in range(4)])

n = (ctypes.c_int64 * 1)(3)
xs = (ctypes.c_float * 3)(1.5, 2, 3)
x = P(rt.ac_array_create(ctx, AC_F32, 1, n, ctypes.cast(xs, P), None))
r = ctypes.c_float()
if dotp(x, x, ctypes.byref(r), ctypes.byref(err)):
    sys.exit("dotp: " + rt.ac_error_text(err).decode())
print("dotp", r.value)
bad = P(rt.ac_array_create(ctx, AC_I32, 2, ext, ctypes.cast(data, P), None))
st = dotp(x, bad, ctypes.byref(r), ctypes.byref(err))
print("dotp error", st, rt.ac_error_text(err).decode().strip())
for arr in (a, out, x, bad):
    rt.ac_array_release(arr)
rt.ac_function_destroy(twice_f)
rt.ac_function_destroy(dotp_f)
rt.ac_context_destroy(ctx)
print("done")
