/* lib/api/runtime.c: runtimes, the backend instances that compiled functions
 * run on.
 *
 * A runtime is what a compiled backend needs once rather than per function:
 * on the CPU, the thread pool (runtime/rt.h) whose workers run the kernels
 * and the LLVM ORC JIT (lib/target/native.h) that holds their code, plus the
 * cache of compiled entries (compile.c). Accelerate and Copperhead keep the
 * same split: a long-lived backend object with a kernel cache, and cheap
 * per-function handles that point into it.
 *
 * Backends: CPU is built; INTERP makes a runtime whose functions run on the
 * reference interpreter (no pool, no JIT), so that code written against
 * runtimes can switch backends by name; AUTO picks the CPU until the GPU
 * backend exists (issue 4); GPU and SIMT-EMU are refused with
 * AC_ERR_UNSUPPORTED.
 *
 * Default runtimes: ac_function_create takes a backend, not a runtime, so
 * the context owns one runtime per backend, made on first use and released
 * when the context is destroyed (through the hook ir_ctx_set_runtimes: lib/ir
 * stores the pointer and calls back, knowing nothing of runtimes).
 *
 * Lifetime: runtimes are reference counted (function_impl.h); destroying
 * one drops its creator's reference and the pool and JIT go with the last
 * function compiled on it. Retain and release are atomic because functions
 * on several threads may be destroyed at once.
 */
#include "api/function_impl.h"
#include "api/runtime_dev.h"
#include "passes/pass.h"

#include "target/nvptx.h"

#include <stdlib.h>
#include <string.h>

/* Number of ac_backend values: the default runtimes are indexed by them. */
#define API_NUM_BACKENDS 5

typedef struct api_defaults {
  ac_runtime *rt[API_NUM_BACKENDS];
} api_defaults;

static void runtime_free(ac_runtime *rt) {
  ac_context *ctx = rt->ctx;
  /* the cache's plans and the kernels' addresses go before the JIT and the
   * device that hold their code */
  api_cache_free(rt);
  nat_jit_destroy(rt->jit);
  rt_pool_destroy(rt->pool);
  rt_gpu_release(rt->gpu); /* arrays with device copies may keep it alive */
  ac_free(ctx, rt->passes);
  ac_free(ctx, rt);
}

/* A GPU runtime's device: the first CUDA device (ARRAYC_GPU_DEVICE picks
 * another ordinal). */
static ac_status runtime_gpu(ac_runtime *rt, ac_error **err) {
  int ordinal = 0;
  const char *s = getenv("ARRAYC_GPU_DEVICE");
  if (s && *s) {
    char *end;
    long v = strtol(s, &end, 10);
    if (*end || v < 0 || v > 1024)
      return api_fail(rt->ctx, err, AC_ERR_INVALID,
                      "ARRAYC_GPU_DEVICE=%s is not a device number", s);
    ordinal = (int)v;
  }
  ac_status st = rt_cuda_create(rt->ctx, ordinal, &rt->gpu, err);
  if (st != AC_OK)
    return st;
  char name[128];
  rt_cuda_info(rt->gpu, &rt->sm, &rt->driver, name, sizeof name);
  if (rt->sm < NV_SM_MIN)
    return api_fail(rt->ctx, err, AC_ERR_UNSUPPORTED,
                    "no GPU: %s has compute capability %u.%u; arrayc needs %u.%u or newer", name,
                    rt->sm / 10, rt->sm % 10, NV_SM_MIN / 10, NV_SM_MIN % 10);
  return AC_OK;
}

void api_runtime_retain(ac_runtime *rt) {
  if (rt)
    atomic_fetch_add_explicit(&rt->refs, 1, memory_order_relaxed);
}

void api_runtime_release(ac_runtime *rt) {
  if (rt && atomic_fetch_sub_explicit(&rt->refs, 1, memory_order_acq_rel) == 1)
    runtime_free(rt);
}

ac_status ac_runtime_create(ac_context *ctx, ac_backend be, ac_runtime **out, ac_error **err) {
  if (err)
    *err = NULL;
  if (!ctx)
    return AC_ERR_INVALID;
  if (!out)
    return api_fail(ctx, err, AC_ERR_INVALID, "ac_runtime_create: out is NULL");
  *out = NULL;
  if (be == AC_BACKEND_AUTO) { /* the GPU when there is one, else the CPU */
    ac_status st = ac_runtime_create(ctx, AC_BACKEND_GPU, out, NULL);
    if (st == AC_OK)
      return st;
    be = AC_BACKEND_CPU;
  }
  if ((unsigned)be > AC_BACKEND_SIMT_EMU)
    return api_fail(ctx, err, AC_ERR_INVALID, "unknown backend %d", (int)be);
  ac_runtime *rt = ac_alloc(ctx, sizeof *rt);
  if (!rt)
    return ir_report(err, NULL, AC_ERR_NOMEM);
  memset(rt, 0, sizeof *rt);
  rt->ctx = ctx;
  rt->backend = be;
  atomic_init(&rt->refs, 1);
  atomic_init(&rt->ncompiled, 0);
  ac_status st = AC_OK;
  char level[3] = {'O', (char)('0' + PS_DEFAULT_LEVEL), 0};
  if (!(rt->passes = ac_strdup(ctx, level)))
    st = ir_report(err, NULL, AC_ERR_NOMEM);
  if (st == AC_OK && be == AC_BACKEND_CPU) {
    rt->pool = rt_pool_create(ctx, 0);
    if (!rt->pool)
      st = api_fail(ctx, err, AC_ERR_NOMEM, "cannot create the CPU thread pool");
  }
  if (st == AC_OK && be == AC_BACKEND_GPU)
    st = runtime_gpu(rt, err);
  if (st == AC_OK && be == AC_BACKEND_SIMT_EMU)
    st = rt_emu_create(ctx, &rt->gpu, err);
  if (st == AC_OK && (be == AC_BACKEND_CPU || be == AC_BACKEND_SIMT_EMU))
    st = nat_jit_create(ctx, &rt->jit, err);
  if (st != AC_OK) {
    runtime_free(rt);
    return st;
  }
  *out = rt;
  return AC_OK;
}

void ac_runtime_destroy(ac_runtime *rt) {
  api_runtime_release(rt);
}

ac_backend ac_runtime_backend(const ac_runtime *rt) {
  return rt->backend;
}

rt_gpu *api_runtime_cuda(const ac_runtime *rt) {
  return rt && rt->backend == AC_BACKEND_GPU ? rt->gpu : NULL;
}

unsigned ac_runtime_num_threads(const ac_runtime *rt) {
  return rt->pool ? rt_pool_size(rt->pool) : 1;
}

size_t ac_runtime_num_compilations(const ac_runtime *rt) {
  return atomic_load(&rt->ncompiled);
}

ac_status ac_runtime_set_passes(ac_runtime *rt, const char *passes, ac_error **err) {
  if (err)
    *err = NULL;
  if (!rt)
    return AC_ERR_INVALID;
  const char *p = passes ? passes : "";
  ac_status st = ps_check_pipeline(rt->ctx, p, err);
  if (st != AC_OK)
    return st;
  char *copy = ac_strdup(rt->ctx, p);
  if (!copy)
    return ir_report(err, NULL, AC_ERR_NOMEM);
  ac_free(rt->ctx, rt->passes);
  rt->passes = copy;
  return AC_OK;
}

ac_status ac_runtime_set_profiling(ac_runtime *rt, bool on, ac_error **err) {
  if (err)
    *err = NULL;
  if (!rt)
    return AC_ERR_INVALID;
  if (rt->backend != AC_BACKEND_SIMT_EMU)
    return api_fail(rt->ctx, err, AC_ERR_UNSUPPORTED,
                    "profiling needs the SIMT emulator (simt-emu), not the %s backend",
                    ac_backend_name(rt->backend));
  rt->profile = on;
  return AC_OK;
}

const char *ac_runtime_passes(const ac_runtime *rt) {
  return rt && rt->passes ? rt->passes : "";
}

ac_status ac_runtime_compile(ac_runtime *rt, ac_module *m, const char *name, ac_function **out,
                             ac_error **err) {
  if (err)
    *err = NULL;
  if (!rt)
    return AC_ERR_INVALID;
  if (!out || !m)
    return api_fail(rt->ctx, err, AC_ERR_INVALID, "ac_runtime_compile: %s is NULL",
                    out ? "the module" : "out");
  *out = NULL;
  /* type ids and the allocator of plans and results are the context's */
  if (m->ctx != rt->ctx)
    return api_fail(rt->ctx, err, AC_ERR_INVALID,
                    "the module and the runtime belong to different contexts");
  return api_function_new(m, name, rt, out, err);
}

/* ---- the context's default runtimes ---- */

static void defaults_free(ac_context *ctx, void *p) {
  api_defaults *d = p;
  for (size_t i = 0; i < API_NUM_BACKENDS; i++)
    api_runtime_release(d->rt[i]);
  ac_free(ctx, d);
}

ac_status api_default_runtime(ac_context *ctx, ac_backend be, ac_runtime **out, ac_error **err) {
  *out = NULL;
  if ((unsigned)be >= API_NUM_BACKENDS)
    return api_fail(ctx, err, AC_ERR_INVALID, "unknown backend %d", (int)be);
  api_defaults *d = ir_ctx_runtimes(ctx);
  if (!d) {
    d = ac_alloc(ctx, sizeof *d);
    if (!d)
      return ir_report(err, NULL, AC_ERR_NOMEM);
    memset(d, 0, sizeof *d);
    ir_ctx_set_runtimes(ctx, d, defaults_free);
  }
  if (!d->rt[be]) {
    ac_status st = ac_runtime_create(ctx, be, &d->rt[be], err);
    if (st != AC_OK)
      return st;
  }
  *out = d->rt[be];
  return AC_OK;
}
