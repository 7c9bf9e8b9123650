/* runtime/function.h: callable functions (ac_function), shared by the
 * compiler and the runtime library.
 *
 * An ac_function is made either by the compiler (lib/api/function.c: a
 * function of a module, run by the interpreter or compiled by a runtime's
 * JIT) or by the runtime library from ahead-of-time output
 * (runtime/library.c: a plan loaded from a bundle and kernels from an
 * object or a PTX file). Everything a call needs is here, so calls, the
 * argument checks, ac_function_pointer and the queries live in the runtime
 * (runtime/function.c, runtime/fnptr.c) and work the same on both kinds;
 * what only the maker knows goes through its hooks.
 */
#ifndef ARRAYC_RUNTIME_FUNCTION_H
#define ARRAYC_RUNTIME_FUNCTION_H

#include "runtime/gpu.h"
#include "runtime/plan.h"

/* One flattened parameter or result leaf. */
typedef struct rt_leaf {
  ac_scalar type;
  unsigned rank; /* 0 = scalar */
  char *name;    /* "xs", or "p.1" for field 1 of tuple parameter p (owned) */
} rt_leaf;

/* One declared parameter: its leaves are args[first .. first + nleaves)
 * (a unit parameter has none). */
typedef struct rt_param {
  char *name; /* owned */
  char *type; /* the language's spelling: "f32[]", "(f32[], i32)" (owned) */
  uint32_t first, nleaves;
} rt_param;

typedef struct rt_fnptr rt_fnptr; /* fnptr.c */

/* What the maker of a function supplies. Any hook may be NULL. */
typedef struct rt_fn_hooks {
  /* Runs a function that has no plan (the interpreter). Arguments are
   * checked already. */
  ac_status (*call)(ac_function *f, const ac_datum *args, size_t nargs, ac_datum *results,
                    size_t nresults, ac_error **err);
  /* A runtime error e of the plan (message and position) rebuilt against
   * the function's source (its text with the line and caret), or NULL to
   * keep e as it is. */
  ac_error *(*relocate)(const ac_function *f, const ac_error *e);
  /* ac_function_print_llvm; NULL = the function has no LLVM IR to show */
  ac_status (*print_llvm)(const ac_function *f, char **out, ac_error **err);
  /* Drops what f holds of its maker (called once, from ac_function_destroy). */
  void (*release)(ac_function *f);
} rt_fn_hooks;

struct ac_function {
  ac_context *ctx;
  ac_backend backend; /* the backend actually used (never AUTO) */
  char *name;         /* owned */
  size_t nargs, nres;
  rt_leaf *args, *res;
  /* The declared parameters over the argument leaves, and the result's
   * type spelled as the language does (owned; NULL until the maker sets
   * them, which both makers do). */
  size_t nparams;
  rt_param *params;
  char *result_type;
  /* Compiled functions: the plan and its kernels (borrowed from the maker,
   * which keeps them alive while f lives). plan NULL = the hooks' call. */
  const pl_plan *plan;
  rt_kernel_fn const *kernels; /* CPU */
  rt_pool *pool;               /* CPU (NULL: the calling thread) */
  rt_gkernel *const *gkernels; /* GPU and SIMT emulator */
  rt_gpu *gpu;
  rt_gtmp gtmp; /* temporary memory its GPU kernels need per thread (pl_run_gpu_tmp) */
  const rt_fn_hooks *hooks;
  void *owner; /* the maker's object (an ac_runtime, an ac_library) */
  /* the compiler's: the module and function index (NULL for the runtime library) */
  ac_module *m;
  uint32_t fn;
  _Atomic(rt_fnptr *) fnptr; /* made on first ac_function_pointer */
};

/* An error of status st without a source position (formats like printf). */
ac_status rt_fail(ac_context *ctx, ac_error **err, ac_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* A new function with room for nargs and nres leaves (zeroed, names NULL),
 * or NULL when memory runs out. The caller fills it in; ac_function_destroy
 * frees it at any stage. */
ac_function *rt_function_alloc(ac_context *ctx, size_t nargs, size_t nres);

/* Frees n parameters (rt_param: their names and types) and the array. */
void rt_params_free(ac_context *ctx, rt_param *p, size_t n);

/* "f32", "i32[,]" or "invalid" for a leaf's kind into buf. */
void rt_leaf_spell(char *buf, size_t size, ac_scalar type, unsigned rank);

void rt_fnptr_free(ac_context *ctx, rt_fnptr *p);

/* A scalar of kind sc read from its C representation at p (a bool: one
 * byte, 0 or 1), and a scalar datum written in its kind's C representation
 * to p (fnptr.c: libffi's argument slots and result variables; the
 * distributed layer's elements). */
ac_datum rt_scalar_read(ac_scalar sc, const void *p);
void rt_scalar_write(const ac_datum *d, void *p);

#endif
