/* arrayc/runtime.h: arrays, values and calling compiled functions.
 *
 * Arguments and results of a function are passed flattened: a parameter of
 * type (f32[], i32) is two leaves, an f32 array and an i32 scalar, in order.
 * Each leaf is an ac_datum: a scalar or an array handle. Arrays are
 * reference-counted; the library retains what it keeps and the caller
 * releases what it created or received.
 *
 * Threads: ac_function_call may run on several threads at once, on the same
 * or different functions of one module, provided no thread modifies the
 * module meanwhile (building, verifying) and the context's allocator hook is
 * thread-safe (the default one is). ac_array_retain and ac_array_release are
 * atomic, so an array may be shared between threads that only read it.
 *
 * Backends: the interpreter is the reference (it defines what every program
 * means); the CPU, GPU and SIMT-emulation backends are added later, and asking
 * for one that is not built gives AC_ERR_UNSUPPORTED.
 */
#ifndef ARRAYC_RUNTIME_H
#define ARRAYC_RUNTIME_H

#include "arrayc/core.h"
#include "arrayc/module.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- arrays ---- */
typedef struct ac_array ac_array;

/* Creates an array of `rank` dimensions (rank >= 1) with the given extents,
 * copying row-major elements from `data` (zeros when data is NULL). bool
 * elements are one byte, 0 or 1. Returns NULL on error. The caller owns one
 * reference. */
AC_API ac_array *ac_array_create(ac_context *ctx, ac_scalar type, unsigned rank,
                                 const int64_t *extents, const void *data, ac_error **err);
AC_API void ac_array_retain(ac_array *a);
AC_API void ac_array_release(ac_array *a);
AC_API ac_scalar ac_array_type(const ac_array *a);
AC_API unsigned ac_array_rank(const ac_array *a);
AC_API const int64_t *ac_array_extents(const ac_array *a); /* borrowed, rank entries */
AC_API int64_t ac_array_size(const ac_array *a);           /* number of elements */
/* Host copy of the elements, row-major (borrowed; valid while a is alive). */
AC_API const void *ac_array_data(const ac_array *a);

/* ---- flattened values ---- */
typedef enum ac_datum_kind { AC_DATUM_SCALAR = 0, AC_DATUM_ARRAY = 1 } ac_datum_kind;

typedef struct ac_datum {
  ac_datum_kind kind;
  ac_scalar type; /* scalar type, or element type of the array */
  union {
    bool b;
    int64_t i;  /* signed integer kinds */
    uint64_t u; /* unsigned integer kinds */
    double f;   /* f32 and f64 */
  } s;
  ac_array *array; /* AC_DATUM_ARRAY: one reference owned by whoever holds the datum */
} ac_datum;

/* ---- functions ---- */
typedef enum ac_backend {
  AC_BACKEND_AUTO = 0,   /* fastest available: GPU, then CPU, then interpreter */
  AC_BACKEND_INTERP = 1, /* reference interpreter */
  AC_BACKEND_CPU = 2,    /* LLVM ORC JIT on all cores */
  AC_BACKEND_GPU = 3,    /* NVPTX + CUDA driver */
  AC_BACKEND_SIMT_EMU = 4 /* GPU kernels run by the SIMT emulator on the CPU */
} ac_backend;

/* Parses a backend name ("interp", "cpu", "gpu", "simt-emu", "auto"); returns
 * false if unknown. */
AC_API bool ac_backend_from_name(const char *name, ac_backend *out);
AC_API const char *ac_backend_name(ac_backend b);

typedef struct ac_function ac_function;

/* Prepares function `name` of module m for calls on backend `be`. The module
 * must outlive the function. Free with ac_function_destroy. */
AC_API ac_status ac_function_create(ac_module *m, const char *name, ac_backend be,
                                    ac_function **out, ac_error **err);
AC_API void ac_function_destroy(ac_function *f);
AC_API ac_backend ac_function_backend(const ac_function *f);

/* Number and kinds of the flattened parameters and results. For leaf i,
 * *type is its scalar type and *rank is 0 for a scalar or its array rank;
 * for i out of range nothing is written. */
AC_API size_t ac_function_num_args(const ac_function *f);
AC_API size_t ac_function_num_results(const ac_function *f);
AC_API void ac_function_arg_info(const ac_function *f, size_t i, ac_scalar *type, unsigned *rank);
AC_API void ac_function_result_info(const ac_function *f, size_t i, ac_scalar *type,
                                    unsigned *rank);
/* Number of kernels in the compiled plan (0 for the interpreter). */
AC_API size_t ac_function_num_kernels(const ac_function *f);

/* Calls f. args has ac_function_num_args leaves (borrowed); on success the
 * results are written to results[0..num_results-1], each array with one
 * reference for the caller. On failure results are untouched and *err says
 * why, naming the operation's source position for runtime errors. */
AC_API ac_status ac_function_call(ac_function *f, const ac_datum *args, size_t nargs,
                                  ac_datum *results, size_t nresults, ac_error **err);

/* Releases the array reference held by a datum (no-op for scalars). */
AC_API void ac_datum_release(ac_datum *d);

#ifdef __cplusplus
}
#endif
#endif
