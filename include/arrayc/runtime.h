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
 * means); the CPU backend compiles a function into a kernel plan and kernels
 * run by LLVM's ORC JIT on a thread pool over all cores; the GPU backend
 * compiles the kernels to PTX and runs them through the CUDA driver (loaded
 * at run time; no GPU gives AC_ERR_UNSUPPORTED "no GPU: ..."), keeping
 * arrays on the device between calls; the SIMT emulator runs the GPU
 * backend's kernels on the CPU (for testing).
 *
 * Runtimes (ac_runtime) hold what a compiled backend needs: the thread pool,
 * the JIT and a cache of compiled functions. ac_function_create uses a
 * default runtime per backend owned by the context; ac_runtime_create makes
 * one explicitly. docs/runtime.md is the reference for this header.
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
/* Host copy of the elements, row-major (borrowed; valid while a is alive).
 * An array a GPU call produced is fetched from the device on first use;
 * NULL if that fails (ac_array_read reports why). */
AC_API const void *ac_array_data(const ac_array *a);

/* Wraps caller-owned memory as an array without copying it. `data` holds
 * the row-major elements (ac_scalar_size(type) bytes each, aligned to that
 * size; bool elements must be the bytes 0 or 1, which is checked). The
 * caller must keep the memory alive and unchanged until release(user) runs,
 * which happens once, when the last reference to the array goes (release
 * may be NULL). On error nothing is wrapped and release is not called.
 * Returns NULL on error; the caller owns one reference. */
AC_API ac_array *ac_array_borrow(ac_context *ctx, ac_scalar type, unsigned rank,
                                 const int64_t *extents, void *data, void (*release)(void *user),
                                 void *user, ac_error **err);
/* Copies the elements (row-major, ac_array_size * ac_scalar_size bytes) to
 * dst. A buffer of fewer than that many bytes is AC_ERR_INVALID. */
AC_API ac_status ac_array_read(const ac_array *a, void *dst, size_t dst_bytes, ac_error **err);

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
  AC_BACKEND_AUTO = 0,   /* fastest available: GPU, then CPU (the interpreter only when the
                            CPU backend cannot be set up on this host) */
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
 * must outlive the function. Free with ac_function_destroy. The compiled
 * backends use the context's default runtime for `be` (made on first use,
 * destroyed with the context), so a function compiled twice in one context
 * is generated once. */
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
/* The signature as declared, for binding generators (docs/api.md,
 * "Signatures"). Every string is borrowed from f (valid until
 * ac_function_destroy) and never NULL for an index in range; an index out
 * of range gives NULL and writes nothing. They work the same for functions
 * compiled from source and functions of an ahead-of-time library.
 *
 * Parameters: ac_function_num_params declared parameters, in order. Each
 * has its name, its type spelled as the language prints it ("f32[,]",
 * "(f32[], (i32, bool))", "()"), and the run of flattened argument leaves
 * it covers: leaves first .. first + count - 1 (count is 1 for a scalar or
 * an array, the number of scalar and array fields for a tuple, 0 for
 * unit). A leaf's name is its path: the parameter's name, then ".K" for
 * field K of each tuple level ("p", "p.1", "p.1.0").
 *
 * Results are unnamed in the language: a function returns one value, whose
 * type ac_function_result_type spells; its leaves are positional. A leaf's
 * name is its path in that value: "" for a result that is not a tuple,
 * "0", "1", "1.0", ... for the fields of a tuple result. */
AC_API const char *ac_function_name(const ac_function *f);
AC_API size_t ac_function_num_params(const ac_function *f);
AC_API const char *ac_function_param_name(const ac_function *f, size_t p);
AC_API const char *ac_function_param_type(const ac_function *f, size_t p);
AC_API void ac_function_param_leaves(const ac_function *f, size_t p, size_t *first, size_t *count);
AC_API const char *ac_function_arg_name(const ac_function *f, size_t i);
AC_API const char *ac_function_result_type(const ac_function *f);
AC_API const char *ac_function_result_name(const ac_function *f, size_t i);

/* Number of kernels in the compiled plan (0 for the interpreter). */
AC_API size_t ac_function_num_kernels(const ac_function *f);
/* Kernel `kernel` (0 .. ac_function_num_kernels - 1) of f: its symbol
 * ("k1_generate_warp"), its kind ("generate.warp": the skeleton and, for
 * alternatives, the variant; docs/runtime.md §7), and how many times it
 * has been launched since it was compiled, by every call of every function
 * that runs the same compiled code (a plan's alternatives are kernels of
 * their own, so this says which ran). NULL / 0 for a kernel out of range. */
AC_API const char *ac_function_kernel_name(const ac_function *f, size_t kernel);
AC_API const char *ac_function_kernel_kind(const ac_function *f, size_t kernel);
AC_API uint64_t ac_function_kernel_launches(const ac_function *f, size_t kernel);

/* Calls f. args has ac_function_num_args leaves (borrowed); on success the
 * results are written to results[0..num_results-1], each array with one
 * reference for the caller. On failure results are untouched and *err says
 * why, naming the operation's source position for runtime errors. */
AC_API ac_status ac_function_call(ac_function *f, const ac_datum *args, size_t nargs,
                                  ac_datum *results, size_t nresults, ac_error **err);

/* Releases the array reference held by a datum (no-op for scalars). */
AC_API void ac_datum_release(ac_datum *d);

/* The kernel plan of a CPU function in its text form (runtime/plan.h), for
 * people and tools. AC_ERR_INVALID for an interpreter function. Free the
 * string with ac_string_destroy. */
AC_API ac_status ac_function_print_plan(const ac_function *f, char **out, ac_error **err);
/* The optimised LLVM IR of a CPU function's kernels as text (generated
 * again on each call; nothing is added to the JIT). AC_ERR_INVALID for an
 * interpreter function. Free the string with ac_string_destroy. */
AC_API ac_status ac_function_print_llvm(const ac_function *f, char **out, ac_error **err);

/* A C function pointer with f's own signature (a libffi closure):
 *   ac_status fn(P1 p1, ..., Pn pn, R1 *r1, ..., Rm *rm, ac_error **err)
 * with one parameter per flattened argument leaf, in order: a scalar in
 * its C type (bool, int8_t .. int64_t, uint8_t .. uint64_t, float,
 * double), an array as `ac_array *` (borrowed); then one pointer per result
 * leaf (a scalar's C type, or `ac_array **` receiving one reference; NULL
 * discards that result); then `ac_error **` (may be NULL). Cast it to that
 * exact type before calling. It stays valid until ac_function_destroy(f);
 * asking twice gives the same pointer. Several threads may call it at once,
 * as with ac_function_call. See docs/runtime.md for an example. */
AC_API ac_status ac_function_pointer(ac_function *f, void (**out)(void), ac_error **err);

/* ---- runtimes ---- */
typedef struct ac_runtime ac_runtime;

/* Creates a runtime for backend be: CPU makes a thread pool over all cores
 * and an LLVM JIT for the host; INTERP makes one whose functions run on the
 * interpreter; GPU opens the first CUDA device (AC_ERR_UNSUPPORTED with a
 * message starting "no GPU: " when there is none); SIMT_EMU makes the SIMT
 * emulator; AUTO picks the best available (the GPU when present, else the
 * CPU). Free with ac_runtime_destroy; functions compiled on it keep
 * it alive until they are destroyed, and it must go before its context. */
AC_API ac_status ac_runtime_create(ac_context *ctx, ac_backend be, ac_runtime **out,
                                   ac_error **err);
AC_API void ac_runtime_destroy(ac_runtime *rt);
/* The backend actually chosen (never AUTO). */
AC_API ac_backend ac_runtime_backend(const ac_runtime *rt);
/* Worker threads of the runtime's pool (1 for the interpreter). */
AC_API unsigned ac_runtime_num_threads(const ac_runtime *rt);
/* Prepares function `name` of m (a verified module of the runtime's
 * context) for calls on rt's backend. A function whose code rt has already
 * generated (same text, positions, callees and host) is not compiled again.
 * Free with ac_function_destroy; m must outlive the function. Like parsing,
 * compiling uses the context (it interns names and types there), so it
 * follows the context's rule: one thread at a time, and not while calls
 * run on other threads. */
AC_API ac_status ac_runtime_compile(ac_runtime *rt, ac_module *m, const char *name,
                                    ac_function **out, ac_error **err);
/* How many times rt has generated code (cache misses that compiled). */
AC_API size_t ac_runtime_num_compilations(const ac_runtime *rt);
/* Sets the optimisation pipeline rt's compiled backends apply to a function
 * before generating code (docs/passes.md): pass names separated by commas,
 * where O0 .. O3 stand for the default pipeline of that level and -NAME
 * drops every run of pass NAME listed before it ("O2", "simplify,cse,fuse",
 * "O1,hoist", "O2,-fuse"); "" or NULL runs no passes. The default
 * is "O2". The passes transform a private copy: the module stays as
 * written. An interpreter runtime runs functions as written and ignores it.
 * AC_ERR_INVALID naming an unknown pass; functions compiled before keep
 * their code. */
AC_API ac_status ac_runtime_set_passes(ac_runtime *rt, const char *passes, ac_error **err);
/* The pipeline set on rt (never NULL). */
AC_API const char *ac_runtime_passes(const ac_runtime *rt);

/* ---- profiling GPU kernels without a GPU (the SIMT emulator) ----
 * With profiling on, a SIMT-emulator runtime compiles functions with every
 * memory access and basic block of their kernels counted, and the emulator
 * groups the counts per warp instruction as a GPU's memory system sees
 * them (docs/runtime.md, "Profiling"). Counting never changes results; it
 * is slow (each access is recorded) and costs nothing when off: profiled
 * and plain code are different compilations (the compile cache keeps them
 * apart). Functions compiled while it was on keep counting. Only
 * AC_BACKEND_SIMT_EMU runtimes profile: others give AC_ERR_UNSUPPORTED. */
AC_API ac_status ac_runtime_set_profiling(ac_runtime *rt, bool on, ac_error **err);

/* What one kernel did over all its launches since it was compiled or its
 * counts were reset. Warp-level counts group the lanes of a warp that
 * execute the same instruction the same number of times since the warp's
 * last synchronisation (what lock-step SIMT execution issues together). */
typedef struct ac_kernel_profile {
  const char *kernel;    /* the plan's kernel symbol ("k0_map"), borrowed from the function */
  uint64_t launches;
  /* Global memory. *_insts: warp-level load / store instructions. *_req:
   * requests in 32-bit lane units: an instruction whose lanes access w
   * bytes each counts max(1, w / 4), so sectors / requests is 4.0 for
   * fully coalesced access of any width and 32.0 for 4-byte lanes that
   * each touch a sector of their own. *_sectors: distinct 32-byte sectors
   * each instruction touches, summed over instructions. */
  uint64_t ld_insts, ld_req, ld_sectors;
  uint64_t st_insts, st_req, st_sectors;
  /* bytes = 32 * (ld_sectors + st_sectors): what the kernel asks of the
   * memory system with no reuse across instructions. min_bytes: the
   * distinct bytes each launch reads plus the distinct bytes it writes
   * (each input read once, each output written once), summed over
   * launches. */
  uint64_t bytes, min_bytes;
  /* Warp-level reads and writes of the kernel's parameter block (the
   * plan's frame words and the launch's control block). */
  uint64_t param_insts;
  /* Shared memory: warp-level accesses, the wavefronts they need (one per
   * distinct 4-byte word a bank must deliver, the largest over the 32
   * banks), and the wavefronts beyond the fewest possible (bank
   * conflicts). */
  uint64_t smem_insts, smem_wavefronts, smem_conflicts;
  /* Executed warp instructions and the lanes active in them:
   * lane_insts / (32 * warp_insts) is the active-lane fraction. */
  uint64_t warp_insts, lane_insts;
  uint64_t barriers; /* block-wide barriers completed (per block) */
  uint64_t atomics;  /* atomic operations (per lane, global and shared) */
  /* True when some warp's records outgrew the emulator's buffer before its
   * lanes synchronised, so a few of its instructions were counted as two
   * partial ones (the counts are then slight overestimates). */
  bool approximate;
} ac_kernel_profile;

/* Fills *out (out_size = sizeof(ac_kernel_profile) as compiled into the
 * caller; a smaller size fills that prefix) with the counts of kernel
 * `kernel` (0 .. ac_function_num_kernels - 1) of f. AC_ERR_INVALID for a
 * kernel out of range, or for a function not compiled with profiling on
 * (AC_ERR_UNSUPPORTED when f's backend is not the SIMT emulator). */
AC_API ac_status ac_function_profile(const ac_function *f, size_t kernel, ac_kernel_profile *out,
                                     size_t out_size, ac_error **err);
/* Sets every kernel's counts of f back to zero (no-op when f is not
 * profiled). Not synchronised with calls of f running on other threads. */
AC_API void ac_function_profile_reset(ac_function *f);
/* The profile of every kernel of f as text, one line per kernel:
 *   profile: k0_map launches=1 ld_req=524288 ld_sectors_per_req=4.00 ...
 * (docs/runtime.md lists the fields; kernels never launched are left
 * out). Free *out with ac_string_destroy. Errors as ac_function_profile. */
AC_API ac_status ac_function_print_profile(const ac_function *f, char **out, ac_error **err);

#ifdef __cplusplus
}
#endif
#endif
