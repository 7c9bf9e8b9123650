/* lib/api/function_impl.h: what the runtime API's files share.
 *
 * The compiler's half of the public runtime API (include/arrayc/runtime.h)
 * is implemented by three files that share the objects below:
 *   function.c  ac_function from a module: the flattened signature, the
 *               interpreter and the compiled entry (calls themselves are
 *               the runtime's: runtime/function.c, runtime/fnptr.c)
 *   runtime.c   ac_runtime: a backend instance (thread pool and JIT on the
 *               CPU), the context's default runtimes, ac_runtime_compile
 *   compile.c   the compile pipeline (plan, lowering, codegen, JIT) and
 *               the runtime's in-memory cache of compiled entries
 *
 * Ownership: a runtime is reference counted. Its creator holds one
 * reference (ac_runtime_destroy drops it) and every function compiled on it
 * holds one, so a runtime lives until its last function is destroyed. The
 * compiled entries (api_code) belong to the runtime's cache: the JIT cannot
 * unload one function's code, so an entry lives as long as its runtime, and
 * functions only borrow it.
 */
#ifndef ARRAYC_LIB_API_FUNCTION_IMPL_H
#define ARRAYC_LIB_API_FUNCTION_IMPL_H

#include "interp/rtarray.h"
#include "runtime/plan.h"
#include "runtime/function.h"
#include "runtime/gpu.h"
#include "target/native.h"

/* The leaves and the function object are the runtime's (runtime/function.h). */
typedef rt_leaf api_leaf;
#define api_fail rt_fail

/* A compiled entry of the cache: the plan, the JIT addresses of its
 * kernels (kernels[i] runs plan->kernels[i]) and the key it was made for. */
typedef struct api_code {
  pl_plan *plan;
  rt_kernel_fn *kernels;   /* CPU */
  rt_gkernel **gkernels;   /* GPU and SIMT emulator: each plan kernel loaded on the device */
  rt_cuda_module *cmod;    /* GPU: the loaded PTX module holding arrayc's kernels */
  rt_cuda_module **xmods;  /* GPU: per plan kernel, the module of an extern kernel (its own
                              PTX), else NULL */
  uint64_t hash;
  char *key; /* the full key text (collisions of the hash are ruled out) */
  size_t keylen;
  struct api_code *next; /* the runtime's cache list */
} api_code;


struct ac_runtime {
  ac_context *ctx;
  ac_backend backend; /* INTERP, CPU, GPU or SIMT_EMU (AUTO resolved at creation) */
  atomic_size_t refs;
  rt_pool *pool; /* CPU */
  nat_jit *jit;  /* CPU, and SIMT_EMU (its kernels are host code) */
  rt_gpu *gpu;   /* GPU and SIMT_EMU: one reference */
  unsigned sm;   /* GPU: the device's architecture (compute capability * 10) */
  int driver;    /* GPU: the driver's CUDA version (cuDriverGetVersion) */
  /* Compiling interns names and types in the context, so compilations on
   * one runtime (one context) never overlap (core.h's context rule) and
   * the cache needs no lock. Calls only read entries already made. */
  api_code *cache;
  atomic_size_t ncompiled; /* cache misses that generated code; read from any thread */
  /* The optimisation pipeline applied before lowering (lib/passes/pass.h;
   * ac_runtime_set_passes): "O2" unless set; "" runs none. Part of the
   * compile cache's key. Owned. */
  char *passes;
  /* SIMT emulator: compile with profiling (ac_runtime_set_profiling); part
   * of the cache key. */
  bool profile;
};


/* ---- function.c ---- */
/* Prepares function `name` of m: on the interpreter when rt is NULL or an
 * interpreter runtime, otherwise compiled on rt (which it retains). */
ac_status api_function_new(ac_module *m, const char *name, ac_runtime *rt, ac_function **out,
                           ac_error **err);

/* The flattened signature of function `name` of m as an interpreter
 * function, without binding the externs it reaches (ahead-of-time output:
 * its kernels call them by name). Only for its leaves: calling it would
 * need the externs bound. */
ac_status api_function_signature(ac_module *m, const char *name, ac_function **out,
                                 ac_error **err);
/* ---- runtime.c ---- */
/* The context's own runtime for backend be (CPU only for now), created on
 * first use and destroyed with the context. Borrowed. */
ac_status api_default_runtime(ac_context *ctx, ac_backend be, ac_runtime **out, ac_error **err);
void api_runtime_retain(ac_runtime *rt);
void api_runtime_release(ac_runtime *rt);

/* ---- compile.c ---- */
/* The compiled entry for function fn of m on CPU runtime rt: from the cache
 * when an equal function was compiled before, otherwise generated, JIT
 * compiled and added to the cache. The entry is borrowed from rt. */
ac_status api_compile(ac_runtime *rt, ac_module *m, uint32_t fn, const api_code **out,
                      ac_error **err);
/* Generates function fn of m again and returns its optimised LLVM IR text
 * (nothing is added to the JIT or the cache). */
ac_status api_print_llvm(ac_runtime *rt, ac_module *m, uint32_t fn, char **out, ac_error **err);
/* Frees every entry of rt's cache. */
void api_cache_free(ac_runtime *rt);
/* PTX text (or, with `llvm`, the optimised NVPTX LLVM IR) of functions
 * fns[0..nfns) of m for architecture sm after the pipeline `passes`,
 * without a device (arrayc --emit=ptx): one module holding every
 * function's kernels, each named once. *out is ac_alloc'd. */
ac_status api_emit_ptx(ac_module *m, const uint32_t *fns, size_t nfns, const char *passes,
                       unsigned sm, bool llvm, char **out, ac_error **err);

#endif
