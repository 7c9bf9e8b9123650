/* runtime/gpu_cuda.c: the CUDA device: rt_gpu on a real NVIDIA GPU through
 * the CUDA driver API, loaded at run time.
 *
 * As Halide's CUDA runtime, Blender's cuew and CUDA.jl do, libcuda.so.1 is
 * opened with dlopen (ARRAYC_LIBCUDA may name another file: the tests load
 * the toolkit's stub library, whose every call fails, and a fake driver)
 * and each entry point is looked up by its exact exported name with dlsym
 * (runtime/cuda_drv.h lists them, versioned names included). We do not use
 * cuGetProcAddress: it would need a per-symbol CUDA version to ask for,
 * is itself versioned (_v2 since 12.0) and missing from drivers before
 * 11.3, while the exact names pin the ABI just as well (NVIDIA keeps every
 * exported name and its signature; a changed signature gets a new `_v2`
 * name) and work against the stub library. A missing required symbol is a
 * "no GPU: ..." error; the stream-ordered allocator is optional.
 *
 * The device uses the PRIMARY context of its GPU (what the CUDA runtime
 * uses, so arrayc shares memory and modules with any CUDA code in the same
 * process) and one non-blocking stream, on which everything is queued in
 * order. Calls come from any host thread, and a driver call acts on the
 * calling thread's current context, so every operation pushes our context
 * and pops it again (cuCtxPushCurrent/PopCurrent rather than SetCurrent: a
 * host program's own current context on that thread is left as it was).
 * The driver API is thread-safe, and this file's state is written only
 * while the device is created (each kernel's limits are computed when its
 * module is loaded), except the pinned staging ring's two counters, which
 * a mutex guards, and the read-back slots' bit mask (atomic). Operations from several host threads
 * on one device interleave on the one stream in the order the driver sees
 * them; ordering between threads is the callers' business.
 *
 * Memory: stream-ordered allocation (cuMemAllocAsync/cuMemFreeAsync) on
 * devices that support memory pools, so a buffer freed by one call is reused
 * by the next without a synchronisation. The pool's release threshold is
 * raised so that freed memory stays in the pool across synchronisations
 * (the default, 0, returns it to the OS at every stream sync, which makes
 * every call map its temporaries anew); an allocation that fails waits
 * for the stream, trims the pool and tries once more. Other devices use
 * cuMemAlloc and, since cuMemFree is not stream-ordered, a stream sync
 * before each cuMemFree.
 *
 * Copies: small ones go through pinned host memory that the device
 * allocates once (cuMemHostAlloc, 1 MiB + 32 KiB): a host-to-device copy
 * of up to 64 KiB (the frame words and control settings every launch
 * uploads) is copied into the next bytes of a ring and queued from there,
 * so the DMA engine reads it later without the driver staging anything
 * and the call returns at once; a byte of the ring is handed out again
 * only after a wait for the stream that began after its copy was queued
 * (every dtoh and sync is such a wait; a full ring waits itself). A
 * device-to-host copy of up to 4 KiB (the control block and the words a
 * kernel wrote, read back at the end of every call) lands in one of 8
 * pinned read-back slots and is copied out after the wait. Without pinned
 * memory (a failed allocation, or ARRAYC_GPU_PINNED=0), and for larger
 * copies, host-to-device copies come from pageable memory (the caller's
 * arrays), queued with cuMemcpyHtoDAsync. The contract (gpu.h) lets the
 * caller reuse the source as soon as htod returns. The driver's "API
 * synchronization behavior" section says of the Async copies that a
 * transfer between device and pageable host memory "might be synchronous
 * with respect to host" and that "if pageable memory must first be staged
 * to pinned memory, the driver may synchronize with the stream and stage
 * the copy into pinned memory": the driver cannot let the DMA engine read
 * pageable memory later, so it copies the source into its pinned staging
 * buffers before returning, which is what we rely on (test_cuda checks it
 * on a GPU by overwriting the source right after the call). Device-to-host
 * copies are queued and followed by a stream sync, so they return when the
 * bytes are in place and everything queued before them has run.
 *
 * Graphs: the plan executor wraps each iteration of a loop whose body
 * launches two or more kernels in a batch (rt_gpu_ops.batch_begin/end).
 * The calling thread's launches are then held back (a thread-local
 * record of up to CU_BATCH_MAX) and queued at the batch's end: as one
 * CUDA graph when the same batch (the same kernels, grids and parameter
 * values, so the same work) has been seen before on the device, else one
 * by one. A batch seen a second time becomes a graph (cuGraphCreate, a
 * chain of kernel nodes, cuGraphInstantiateWithFlags) kept in a cache of
 * CU_GRAPHS per device (least recently used replaced; cuGraphExecDestroy
 * of a graph in flight frees it when it completes); later ones launch it
 * (cuGraphLaunch: one call for the whole body). A loop whose buffers
 * alternate between two (an iterate's state) has two such batches, both
 * cached after four iterations; a batch that never repeats (a kernel that
 * reads the step number by value) is launched kernel by kernel, at the
 * cost of hashing it. Every other operation of the thread on the device
 * first queues the launches it holds back, so nothing is reordered; the
 * graph functions are optional (CUDA 12.0), and ARRAYC_GPU_GRAPHS=0 turns
 * batches off. The cache is the device's, behind a mutex (graph objects
 * are not thread-safe); unloading a module empties it.
 *
 * Errors: every CUresult other than CUDA_SUCCESS becomes an ac_error
 * "CUDA error in cuXxx: CUDA_ERROR_NAME: description", with the driver's
 * own name and description (cuGetErrorName/String), or ours when the driver
 * cannot give them (the stub library fails those calls too).
 *
 * Device faults (docs/runtime.md, "Device faults"): most failures concern
 * one operation, and the device stays usable (out of memory, a launch the
 * driver refuses, a module it cannot load). Some lose the CONTEXT: a
 * kernel's illegal access or other exception, and the driver's own
 * failures, are "sticky": CUDA reports the same error for every later call
 * in that context, until the last reference to it goes and the driver
 * destroys it with all its memory and modules. After a failure whose code
 * may be sticky (cu_sticky), the device asks the driver whether the context
 * still works (one synchronisation of the stream); if not, the device is
 * LOST: the failure's message says so, and from then on every operation
 * fails at once, without calling the driver, with "the GPU's CUDA context
 * was lost earlier (first error)" and what to do (AC_ERR_RUNTIME). Frees,
 * unloads and the device's destruction skip the driver too (the context
 * takes everything with it) but free our host memory. The device cannot
 * recover by itself: the primary context is shared with every array and
 * function on it (and any other CUDA code in the process), and retaining
 * it again gives the same lost context until all of them release it. So a
 * program destroys the runtime and its arrays, and a new runtime then gets
 * a fresh context.
 */
#define _POSIX_C_SOURCE 200809L /* dlopen */

#include "runtime/cuda_drv.h"
#include "runtime/gpu.h"

#include "ir.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Pinned staging: host-to-device copies up to CU_STAGE_MAX bytes go
 * through a ring of CU_RING_BYTES, device-to-host copies up to CU_RB_BYTES
 * through one of CU_RB_SLOTS read-back slots (one pinned block holds both). */
#define CU_RING_BYTES ((size_t)1 << 20)
#define CU_STAGE_MAX ((size_t)64 << 10)
#define CU_RB_SLOTS 8
#define CU_RB_BYTES ((size_t)4 << 10)

/* Launch batches (see "Graphs" above): launches held back per batch at
 * most (more are queued as they come), executable graphs cached per
 * device, and hashes of recent batches remembered (a batch becomes a
 * graph when it is seen again). */
#define CU_BATCH_MAX 32
#define CU_GRAPHS 8
#define CU_SEEN 16

/* The driver entry points (cuda_drv.h's list). */
typedef struct cu_api {
#define CU_FIELD(name, sym, required) cu_##name##_fn *name;
  CU_DRV_API(CU_FIELD)
#undef CU_FIELD
} cu_api;

static const struct {
  const char *sym;
  size_t off;
  bool required;
} cu_syms[] = {
#define CU_SYM(name, sym, required) {sym, offsetof(cu_api, name), required},
    CU_DRV_API(CU_SYM)
#undef CU_SYM
};

typedef struct cu_gpu {
  rt_gpu base; /* first: an rt_gpu * of this device points here */
  cu_api cu;
  void *lib; /* the driver library (dlopen handle) */
  CUdevice dev;
  CUcontext pctx;    /* the primary context (retained) */
  CUstream stream;   /* every operation is queued here */
  bool pools;        /* stream-ordered allocation */
  CUmemoryPool pool; /* the pool cuMemAllocAsync uses (pools only) */
  int sms, threads_per_sm, smem_optin;
  unsigned sm; /* compute capability * 10 */
  int driver;  /* cuDriverGetVersion */
  char name[256];
  /* Pinned staging (see "Copies" at the top of the file): NULL without */
  char *stage;
  pthread_mutex_t stage_mu;  /* the ring's counters */
  uint64_t produced, done;   /* ring bytes handed out / known consumed */
  _Atomic uint32_t rb_busy;  /* read-back slots in use (bit i: slot i) */
  /* ARRAYC_GPU_TRACE: calls and nanoseconds per device operation */
  _Atomic uint64_t tr_calls[9], tr_ns[9];
  /* Graphs (see "Graphs" at the top): whether batches are made, and the
   * cache of executable graphs and recent batch hashes, under graph_mu */
  bool graphs;
  pthread_mutex_t graph_mu;
  struct cu_graph *graph; /* CU_GRAPHS entries (NULL without graphs) */
  uint64_t seen[CU_SEEN];
  unsigned seen_next;
  uint64_t tick;
  /* A lost context (see "Device faults" at the top): 0 no, 1 being
   * recorded, 2 lost, with the failure that found it in lost_why */
  _Atomic int lost;
  char lost_why[512];
} cu_gpu;

/* One launch held back in a batch: everything that decides what it does
 * (records are zeroed first, so that equal launches compare equal). */
typedef struct cu_rec {
  rt_gkernel *k;
  unsigned grid, block, smem;
  CUdeviceptr frame, ctl;
  int64_t n;
  uint64_t p[RT_GPU_PARAMS];
} cu_rec;

/* The batch open on this thread (one at a time, for one device). */
typedef struct cu_batch {
  struct cu_gpu *g;
  unsigned depth, n;
  CUresult failed; /* the first launch a flush without an error return could not queue */
  rt_gkernel *failed_k;
  cu_rec l[CU_BATCH_MAX];
} cu_batch;

/* A cached executable graph: the batch it runs, in a chain. */
struct cu_graph {
  CUgraphExec exec; /* NULL: an empty entry */
  uint64_t hash, used;
  unsigned n;
  cu_rec *l;
};

/* A loaded kernel: its function, its launch limits (computed at load time)
 * and its name for messages. Lives in its module's array. */
struct rt_gkernel {
  CUfunction fn;
  rt_glimits lim;
  char name[96];
};

struct rt_cuda_module {
  CUmodule mod;
  size_t n;
  rt_gkernel k[]; /* n kernels */
};

static const rt_gpu_ops cu_ops, cu_trace_ops;

/* ---- errors ---- */

static ac_status cu_report(ac_context *ctx, ac_status st, ac_error **err, const char *fmt, ...)
    IR_PRINTF(4, 5);
static ac_status cu_report(ac_context *ctx, ac_status st, ac_error **err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ac_error *e = ir_verror(ctx, st, NULL, (ir_loc){0, 0}, fmt, ap);
  va_end(ap);
  return ir_report(err, e, e ? st : AC_ERR_NOMEM);
}

/* Names and descriptions of the results cuda_drv.h declares, for when the
 * driver cannot name its own result (the stub library). */
static const struct {
  CUresult r;
  const char *name, *desc;
} cu_known[] = {
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_DEINITIALIZED, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {CUDA_ERROR_STUB_LIBRARY, "CUDA_ERROR_STUB_LIBRARY",
     "CUDA driver is a stub library (no NVIDIA driver installed)"},
    {CUDA_ERROR_DEVICE_UNAVAILABLE, "CUDA_ERROR_DEVICE_UNAVAILABLE",
     "CUDA-capable device(s) is/are busy or unavailable"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_NO_BINARY_FOR_GPU, "CUDA_ERROR_NO_BINARY_FOR_GPU",
     "no kernel image is available for execution on the device"},
    {CUDA_ERROR_INVALID_PTX, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {CUDA_ERROR_JIT_COMPILER_NOT_FOUND, "CUDA_ERROR_JIT_COMPILER_NOT_FOUND",
     "PTX JIT compiler library not found"},
    {CUDA_ERROR_UNSUPPORTED_PTX_VERSION, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
     "the provided PTX was compiled with an unsupported toolchain"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS",
     "an illegal memory access was encountered"},
    {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
     "too many resources requested for launch"},
    {CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

/* A driver failure as an ac_error: "[no GPU: ]CUDA error in FN[ (what)]:
 * NAME: description". `creating`: the device is being created, when every
 * failure means "no GPU" (AC_ERR_UNSUPPORTED). */
static ac_status cu_fail(ac_context *ctx, const cu_api *cu, CUresult r, const char *fn,
                         const char *what, bool creating, ac_error **err) {
  const char *name = NULL, *desc = NULL;
  if (cu->GetErrorName && cu->GetErrorName(r, &name) != CUDA_SUCCESS)
    name = NULL;
  if (cu->GetErrorString && cu->GetErrorString(r, &desc) != CUDA_SUCCESS)
    desc = NULL;
  for (size_t i = 0; i < sizeof cu_known / sizeof cu_known[0] && (!name || !desc); i++)
    if (cu_known[i].r == r) {
      name = name ? name : cu_known[i].name;
      desc = desc ? desc : cu_known[i].desc;
    }
  char num[32];
  if (!name) {
    snprintf(num, sizeof num, "CUresult %d", (int)r);
    name = num;
  }
  ac_status st = AC_ERR_RUNTIME;
  if (creating)
    st = AC_ERR_UNSUPPORTED;
  else if (r == CUDA_ERROR_OUT_OF_MEMORY)
    st = AC_ERR_NOMEM;
  else if (r == CUDA_ERROR_UNSUPPORTED_PTX_VERSION || r == CUDA_ERROR_NO_BINARY_FOR_GPU ||
           r == CUDA_ERROR_JIT_COMPILER_NOT_FOUND)
    st = AC_ERR_UNSUPPORTED;
  else if (r == CUDA_ERROR_INVALID_PTX)
    st = AC_ERR_INTERNAL; /* we generated PTX the driver rejects */
  return cu_report(ctx, st, err, "%sCUDA error in %s%s%s%s: %s: %s", creating ? "no GPU: " : "", fn,
                   what ? " (" : "", what ? what : "", what ? ")" : "", name,
                   desc ? desc : "unknown error");
}

/* Failures after which the context may be lost (CUDA's "sticky" errors:
 * the process's context is left in an inconsistent state and every later
 * call fails the same way), or not usable at all; cu_dev_fail asks. */
static bool cu_sticky(CUresult r) {
  switch (r) {
  case CUDA_ERROR_ECC_UNCORRECTABLE:
  case CUDA_ERROR_ILLEGAL_ADDRESS:
  case CUDA_ERROR_LAUNCH_TIMEOUT:
  case CUDA_ERROR_CONTEXT_IS_DESTROYED:
  case CUDA_ERROR_ASSERT:
  case CUDA_ERROR_HARDWARE_STACK_ERROR:
  case CUDA_ERROR_ILLEGAL_INSTRUCTION:
  case CUDA_ERROR_MISALIGNED_ADDRESS:
  case CUDA_ERROR_INVALID_ADDRESS_SPACE:
  case CUDA_ERROR_INVALID_PC:
  case CUDA_ERROR_LAUNCH_FAILED:
  case CUDA_ERROR_INVALID_CONTEXT:
  case CUDA_ERROR_DEINITIALIZED:
  case CUDA_ERROR_UNKNOWN:
    return true;
  default:
    return false;
  }
}

static bool cu_is_lost(cu_gpu *g) {
  return atomic_load_explicit(&g->lost, memory_order_acquire) != 0;
}

/* The error of an operation on a lost device (no driver call). */
static ac_status cu_lost_error(cu_gpu *g, ac_error **err) {
  bool why = atomic_load_explicit(&g->lost, memory_order_acquire) == 2;
  return cu_report(g->base.ctx, AC_ERR_RUNTIME, err,
                   "the GPU's CUDA context was lost earlier (%s): destroy the runtime and the "
                   "arrays on its GPU, then create a new runtime",
                   why ? g->lost_why : "a fault in another thread's operation");
}

/* Whether g's context no longer works: after a failure that may be
 * sticky, the driver fails a synchronisation of our stream too. Makes the
 * context current itself (a push nests inside a caller's). */
static bool cu_context_gone(cu_gpu *g) {
  if (g->cu.CtxPushCurrent(g->pctx) != CUDA_SUCCESS)
    return true;
  CUresult r = g->cu.StreamSynchronize(g->stream);
  CUcontext popped;
  (void)g->cu.CtxPopCurrent(&popped);
  return r != CUDA_SUCCESS;
}

/* A failure of a device operation: cu_fail, and when the failure lost the
 * context (see "Device faults" at the top), the device is marked lost and
 * the message says so. */
static ac_status cu_dev_fail(cu_gpu *g, CUresult r, const char *fn, const char *what,
                             ac_error **err) {
  ac_context *ctx = g->base.ctx;
  if (!cu_sticky(r) || cu_is_lost(g) || !cu_context_gone(g))
    return cu_fail(ctx, &g->cu, r, fn, what, false, err);
  ac_error *e = NULL;
  ac_status st = cu_fail(ctx, &g->cu, r, fn, what, false, &e);
  int none = 0;
  if (atomic_compare_exchange_strong(&g->lost, &none, 1)) {
    snprintf(g->lost_why, sizeof g->lost_why, "%s", e ? e->message : "CUDA error");
    atomic_store_explicit(&g->lost, 2, memory_order_release);
  }
  if (!e)
    return ir_report(err, NULL, st);
  ac_status lost = cu_report(ctx, AC_ERR_RUNTIME, err,
                             "%s; the GPU's CUDA context is lost: every later operation on this "
                             "runtime fails (destroy the runtime and the arrays on its GPU, then "
                             "create a new runtime)",
                             e->message);
  ac_error_destroy(e);
  return lost;
}

#define CU_FAIL(g, r, fn, what, err) cu_dev_fail(g, r, fn, what, err)

/* Makes the device's context current on the calling thread (see the top of
 * the file); every successful cu_enter is paired with a cu_leave. */
/* The device whose scope (cu_scope_enter) this thread is in, and how deep:
 * inside it, our context is current and operations on that device skip
 * their push and pop (two driver calls each). Operations do not nest, so
 * an operation on another device inside the scope, which pushes and pops
 * its own context, has left ours current again before the next one. */
static _Thread_local cu_gpu *cu_scoped;
static _Thread_local unsigned cu_scope_depth;

static ac_status cu_enter(cu_gpu *g, ac_error **err) {
  if (cu_is_lost(g))
    return cu_lost_error(g, err);
  if (cu_scoped == g)
    return AC_OK;
  CUresult r = g->cu.CtxPushCurrent(g->pctx);
  return r == CUDA_SUCCESS ? AC_OK : CU_FAIL(g, r, "cuCtxPushCurrent", NULL, err);
}
static void cu_leave(cu_gpu *g) {
  if (cu_scoped == g)
    return;
  CUcontext popped;
  /* Cannot fail after a successful push on the same thread. */
  (void)g->cu.CtxPopCurrent(&popped);
}

static bool cu_scope_enter(rt_gpu *gp) {
  cu_gpu *g = (cu_gpu *)gp;
  if (cu_scoped == g) {
    cu_scope_depth++;
    return true;
  }
  if (cu_scoped || cu_is_lost(g)) /* another device's scope: no nesting across devices */
    return false;
  if (g->cu.CtxPushCurrent(g->pctx) != CUDA_SUCCESS)
    return false; /* the operations push for themselves and report */
  cu_scoped = g;
  cu_scope_depth = 1;
  return true;
}

static void cu_scope_leave(rt_gpu *gp) {
  cu_gpu *g = (cu_gpu *)gp;
  if (cu_scoped != g || --cu_scope_depth > 0)
    return;
  cu_scoped = NULL;
  CUcontext popped;
  (void)g->cu.CtxPopCurrent(&popped);
}

static cu_gpu *cu_of(rt_gpu *g) {
  return g && (g->ops == &cu_ops || g->ops == &cu_trace_ops) ? (cu_gpu *)g : NULL;
}

/* ---- launch batches and graphs (see "Graphs" at the top) ---- */

static _Thread_local cu_batch *cu_tb; /* the batch open on this thread, or NULL */

/* The kernelParams of launch l: one pointer per parameter of void
 * k(uint64_t *frame, rt_gctl *ctl, int64_t n, uint64_t p0, .., uint64_t
 * p63) (on NVPTX the parameter block is RT_GPU_PARAMS parameters,
 * lib/codegen/cg_gpu.c); the driver copies the values at the call. */
static void cu_rec_params(cu_rec *l, void *params[3 + RT_GPU_PARAMS]) {
  params[0] = &l->frame;
  params[1] = &l->ctl;
  params[2] = &l->n;
  for (unsigned i = 0; i < RT_GPU_PARAMS; i++)
    params[3 + i] = &l->p[i];
}

/* Queues launch l (in g's context). */
static CUresult cu_launch_rec(cu_gpu *g, cu_rec *l) {
  void *params[3 + RT_GPU_PARAMS];
  cu_rec_params(l, params);
  return g->cu.LaunchKernel(l->k->fn, l->grid, 1, 1, l->block, 1, 1, l->smem, g->stream, params,
                            NULL);
}

/* Queues, in order, the launches this thread's batch holds back for g (in
 * g's context); the kernel of a launch that fails goes to *failed. */
static CUresult cu_flush(cu_gpu *g, rt_gkernel **failed) {
  cu_batch *b = cu_tb;
  CUresult r = CUDA_SUCCESS;
  if (!b || b->g != g)
    return r;
  for (unsigned i = 0; i < b->n && r == CUDA_SUCCESS; i++)
    if ((r = cu_launch_rec(g, &b->l[i])) != CUDA_SUCCESS)
      *failed = b->l[i].k;
  b->n = 0;
  return r;
}

/* cu_enter for an operation other than a launch: the launches held back
 * go first. */
static ac_status cu_op(cu_gpu *g, ac_error **err) {
  ac_status st = cu_enter(g, err);
  if (st != AC_OK)
    return st;
  rt_gkernel *k = NULL;
  CUresult r = cu_flush(g, &k);
  if (r == CUDA_SUCCESS)
    return AC_OK;
  cu_leave(g);
  return CU_FAIL(g, r, "cuLaunchKernel", k->name, err);
}

static uint64_t cu_hash(const cu_rec *l, unsigned n) {
  const unsigned char *p = (const unsigned char *)l;
  uint64_t h = 0x9E3779B97F4A7C15ull;
  for (size_t i = 0; i + 8 <= (size_t)n * sizeof *l; i += 8) {
    uint64_t w;
    memcpy(&w, p + i, sizeof w);
    h = (h ^ w) * 0x100000001B3ull;
    h ^= h >> 29;
  }
  return h;
}

/* An executable graph running l[0..n) in order, or NULL. */
static CUgraphExec cu_graph_make(cu_gpu *g, cu_rec *l, unsigned n) {
  CUgraph graph = NULL;
  CUgraphExec exec = NULL;
  if (g->cu.GraphCreate(&graph, 0) != CUDA_SUCCESS)
    return NULL;
  CUgraphNode prev = NULL;
  bool ok = true;
  for (unsigned i = 0; i < n && ok; i++) {
    void *params[3 + RT_GPU_PARAMS];
    cu_rec_params(&l[i], params);
    CUDA_KERNEL_NODE_PARAMS_v2 kp = {.func = l[i].k->fn,
                                     .gridDimX = l[i].grid,
                                     .gridDimY = 1,
                                     .gridDimZ = 1,
                                     .blockDimX = l[i].block,
                                     .blockDimY = 1,
                                     .blockDimZ = 1,
                                     .sharedMemBytes = l[i].smem,
                                     .kernelParams = params};
    CUgraphNode node = NULL;
    ok = g->cu.GraphAddKernelNode(&node, graph, prev ? &prev : NULL, prev ? 1 : 0, &kp) ==
         CUDA_SUCCESS;
    prev = node;
  }
  if (ok && g->cu.GraphInstantiateWithFlags(&exec, graph, 0) != CUDA_SUCCESS)
    exec = NULL;
  (void)g->cu.GraphDestroy(graph);
  return ok ? exec : NULL;
}

/* Queues batch b as a graph if it has one, or if it was seen before and
 * one can be made; true then, with the launch's result in *r. */
static bool cu_graph_run(cu_gpu *g, cu_batch *b, CUresult *r) {
  uint64_t h = cu_hash(b->l, b->n);
  bool done = false;
  pthread_mutex_lock(&g->graph_mu);
  struct cu_graph *e = NULL, *slot = &g->graph[0];
  for (unsigned i = 0; i < CU_GRAPHS && !e; i++) {
    struct cu_graph *x = &g->graph[i];
    if (x->exec && x->hash == h && x->n == b->n && memcmp(x->l, b->l, b->n * sizeof *b->l) == 0)
      e = x;
    else if (slot->exec && (!x->exec || x->used < slot->used))
      slot = x; /* an empty entry, else the least recently used */
  }
  if (!e) {
    bool seen = false;
    for (unsigned i = 0; i < CU_SEEN && !seen; i++)
      seen = g->seen[i] == h;
    cu_rec *copy = seen ? ac_alloc(g->base.ctx, b->n * sizeof *copy) : NULL;
    CUgraphExec x = copy ? cu_graph_make(g, b->l, b->n) : NULL;
    if (x) {
      if (slot->exec) {
        (void)g->cu.GraphExecDestroy(slot->exec);
        ac_free(g->base.ctx, slot->l);
      }
      memcpy(copy, b->l, b->n * sizeof *copy);
      *slot = (struct cu_graph){x, h, 0, b->n, copy};
      e = slot;
    } else {
      ac_free(g->base.ctx, copy);
      if (!seen)
        g->seen[g->seen_next++ % CU_SEEN] = h;
    }
  }
  if (e) {
    e->used = ++g->tick;
    *r = g->cu.GraphLaunch(e->exec, g->stream);
    done = true;
  }
  pthread_mutex_unlock(&g->graph_mu);
  return done;
}

/* Destroys every cached graph (its kernels' module is going away); on a
 * lost device only our records of them (the context took the graphs). */
static void cu_graphs_clear(cu_gpu *g) {
  if (!g->graph)
    return;
  bool lost = cu_is_lost(g);
  pthread_mutex_lock(&g->graph_mu);
  for (unsigned i = 0; i < CU_GRAPHS; i++)
    if (g->graph[i].exec) {
      if (!lost)
        (void)g->cu.GraphExecDestroy(g->graph[i].exec);
      ac_free(g->base.ctx, g->graph[i].l);
      g->graph[i] = (struct cu_graph){0};
    }
  memset(g->seen, 0, sizeof g->seen);
  pthread_mutex_unlock(&g->graph_mu);
}

static void cu_batch_begin(rt_gpu *gp) {
  cu_gpu *g = (cu_gpu *)gp;
  cu_batch *b = cu_tb;
  if (!g->graphs || (b && b->g != g)) /* one device's batch at a time */
    return;
  if (b) {
    b->depth++;
    return;
  }
  if (!(b = ac_alloc(g->base.ctx, sizeof *b)))
    return; /* no batch: the launches are queued as they come */
  b->g = g;
  b->depth = 1;
  b->n = 0;
  b->failed = CUDA_SUCCESS;
  b->failed_k = NULL;
  cu_tb = b;
}

static ac_status cu_batch_end(rt_gpu *gp, ac_error **err) {
  cu_gpu *g = (cu_gpu *)gp;
  cu_batch *b = cu_tb;
  if (!b || b->g != g || --b->depth > 0)
    return AC_OK;
  ac_status st = AC_OK;
  if (b->failed != CUDA_SUCCESS) {
    st = CU_FAIL(g, b->failed, "cuLaunchKernel", b->failed_k->name, err);
  } else if (b->n && (st = cu_enter(g, err)) == AC_OK) {
    CUresult r;
    rt_gkernel *k = NULL;
    if (b->n >= 2 && cu_graph_run(g, b, &r)) {
      if (r != CUDA_SUCCESS)
        st = CU_FAIL(g, r, "cuGraphLaunch", b->l[0].k->name, err);
    } else if ((r = cu_flush(g, &k)) != CUDA_SUCCESS) {
      st = CU_FAIL(g, r, "cuLaunchKernel", k->name, err);
    }
    cu_leave(g);
  }
  cu_tb = NULL;
  ac_free(g->base.ctx, b);
  return st;
}

/* ---- the device operations ---- */

static void cu_trace_report(const cu_gpu *g);

static void cu_destroy(rt_gpu *gp) {
  cu_gpu *g = (cu_gpu *)gp;
  if (gp->ops == &cu_trace_ops)
    cu_trace_report(g);
  if (!cu_is_lost(g) && cu_enter(g, NULL) == AC_OK) {
    rt_gkernel *k;
    (void)cu_flush(g, &k);
    (void)g->cu.StreamSynchronize(g->stream);
    cu_graphs_clear(g);
    (void)g->cu.StreamDestroy(g->stream);
    if (g->stage)
      (void)g->cu.MemFreeHost(g->stage);
    cu_leave(g);
  } else {
    cu_graphs_clear(g); /* our records (a lost context took the rest) */
  }
  if (g->stage)
    pthread_mutex_destroy(&g->stage_mu);
  if (g->graph) {
    pthread_mutex_destroy(&g->graph_mu);
    ac_free(g->base.ctx, g->graph);
  }
  (void)g->cu.DevicePrimaryCtxRelease(g->dev);
  /* The library stays loaded: once cuInit has succeeded, the driver has
   * threads and handlers of its own that must not lose their code, and no
   * program using CUDA unloads it (dlopen counts references, so creating
   * devices again does not load it again). */
  ac_free(g->base.ctx, g);
}

static ac_status cu_alloc(rt_gpu *gp, size_t bytes, rt_dptr *out, ac_error **err) {
  cu_gpu *g = (cu_gpu *)gp;
  *out = 0;
  /* Every allocation gets an address of its own, never 0 ("none"). */
  if (bytes == 0)
    bytes = 1;
  ac_status st = cu_op(g, err);
  if (st != AC_OK)
    return st;
  CUdeviceptr p = 0;
  CUresult r;
  const char *fn = "cuMemAllocAsync";
  if (g->pools) {
    r = g->cu.MemAllocAsync(&p, bytes, g->stream);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {
      /* Memory freed on the stream is reusable once the frees have run;
       * give what the pool keeps back to the device and try again. */
      r = g->cu.StreamSynchronize(g->stream);
      fn = "cuStreamSynchronize";
      if (r == CUDA_SUCCESS) {
        (void)g->cu.MemPoolTrimTo(g->pool, 0);
        r = g->cu.MemAllocAsync(&p, bytes, g->stream);
        fn = "cuMemAllocAsync";
      }
    }
  } else {
    r = g->cu.MemAlloc(&p, bytes);
    fn = "cuMemAlloc";
  }
  cu_leave(g);
  if (r != CUDA_SUCCESS) {
    char what[48];
    snprintf(what, sizeof what, "%zu bytes", bytes);
    return CU_FAIL(g, r, fn, what, err);
  }
  *out = p;
  return AC_OK;
}

static void cu_free(rt_gpu *gp, rt_dptr p) {
  cu_gpu *g = (cu_gpu *)gp;
  if (!p || cu_is_lost(g) || cu_enter(g, NULL) != AC_OK)
    return; /* a lost context takes its memory with it */
  /* the launches held back may use p: they go first, and a failure is
   * the batch's to report */
  rt_gkernel *k = NULL;
  CUresult fr = cu_flush(g, &k);
  if (fr != CUDA_SUCCESS && cu_tb && cu_tb->failed == CUDA_SUCCESS) {
    cu_tb->failed = fr;
    cu_tb->failed_k = k;
  }
  if (g->pools) {
    (void)g->cu.MemFreeAsync(p, g->stream);
  } else {
    /* cuMemFree is not ordered with our stream: let the queued work that
     * may still use p finish first. */
    (void)g->cu.StreamSynchronize(g->stream);
    (void)g->cu.MemFree(p);
  }
  cu_leave(g);
}

/* ---- pinned staging (g->stage; see "Copies" at the top of the file) ---- */

/* Waits for the stream, and then knows that every ring byte handed out
 * before the wait began has been read by its copy. */
static CUresult cu_wait(cu_gpu *g) {
  if (!g->stage)
    return g->cu.StreamSynchronize(g->stream);
  pthread_mutex_lock(&g->stage_mu);
  uint64_t mark = g->produced;
  pthread_mutex_unlock(&g->stage_mu);
  CUresult r = g->cu.StreamSynchronize(g->stream);
  if (r == CUDA_SUCCESS) {
    pthread_mutex_lock(&g->stage_mu);
    if (mark > g->done)
      g->done = mark;
    pthread_mutex_unlock(&g->stage_mu);
  }
  return r;
}

/* A small host-to-device copy through the ring (stage_mu held, our
 * context current): src is copied into the next free bytes, which the
 * queued copy reads later, so the caller may reuse src at once. A full
 * ring first waits for the stream (every byte handed out is then read). */
static CUresult cu_htod_staged(cu_gpu *g, rt_dptr dst, const void *src, size_t bytes) {
  uint64_t pos = g->produced % CU_RING_BYTES;
  uint64_t skip = pos + bytes > CU_RING_BYTES ? CU_RING_BYTES - pos : 0; /* no wrapping */
  if (g->produced + skip + bytes - g->done > CU_RING_BYTES) {
    uint64_t mark = g->produced;
    CUresult r = g->cu.StreamSynchronize(g->stream);
    if (r != CUDA_SUCCESS)
      return r;
    g->done = mark;
  }
  g->produced += skip;
  char *p = g->stage + g->produced % CU_RING_BYTES;
  memcpy(p, src, bytes);
  CUresult r = g->cu.MemcpyHtoDAsync(dst, p, bytes, g->stream);
  if (r == CUDA_SUCCESS)
    g->produced += bytes;
  return r;
}

static ac_status cu_htod(rt_gpu *gp, rt_dptr dst, const void *src, size_t bytes, ac_error **err) {
  cu_gpu *g = (cu_gpu *)gp;
  if (bytes == 0)
    return AC_OK;
  ac_status st = cu_op(g, err);
  if (st != AC_OK)
    return st;
  CUresult r;
  if (g->stage && bytes <= CU_STAGE_MAX) {
    pthread_mutex_lock(&g->stage_mu);
    r = cu_htod_staged(g, dst, src, bytes);
    pthread_mutex_unlock(&g->stage_mu);
  } else {
    /* Returns once src is staged by the driver (pageable memory). */
    r = g->cu.MemcpyHtoDAsync(dst, src, bytes, g->stream);
  }
  cu_leave(g);
  return r == CUDA_SUCCESS ? AC_OK : CU_FAIL(g, r, "cuMemcpyHtoDAsync", NULL, err);
}

/* A free read-back slot (its index), or -1. */
static int cu_rb_take(cu_gpu *g) {
  uint32_t busy = atomic_load(&g->rb_busy);
  for (;;) {
    int i = 0;
    while (i < CU_RB_SLOTS && (busy >> i & 1u))
      i++;
    if (i == CU_RB_SLOTS)
      return -1;
    if (atomic_compare_exchange_weak(&g->rb_busy, &busy, busy | 1u << i))
      return i;
  }
}

static ac_status cu_dtoh(rt_gpu *gp, void *dst, rt_dptr src, size_t bytes, ac_error **err) {
  cu_gpu *g = (cu_gpu *)gp;
  ac_status st = cu_op(g, err);
  if (st != AC_OK)
    return st;
  /* small copies land in a pinned read-back slot: the DMA writes it
   * directly, and we copy out after the wait */
  int slot = g->stage && bytes && bytes <= CU_RB_BYTES ? cu_rb_take(g) : -1;
  char *via = slot >= 0 ? g->stage + CU_RING_BYTES + (size_t)slot * CU_RB_BYTES : dst;
  const char *fn = "cuMemcpyDtoHAsync";
  CUresult r = bytes ? g->cu.MemcpyDtoHAsync(via, src, bytes, g->stream) : CUDA_SUCCESS;
  if (r == CUDA_SUCCESS) {
    /* Even for no bytes: dtoh also waits for everything queued before it. */
    r = cu_wait(g);
    fn = "cuStreamSynchronize";
  }
  if (slot >= 0) {
    if (r == CUDA_SUCCESS)
      memcpy(dst, via, bytes);
    atomic_fetch_and(&g->rb_busy, ~(1u << slot));
  }
  cu_leave(g);
  return r == CUDA_SUCCESS ? AC_OK : CU_FAIL(g, r, fn, NULL, err);
}

static ac_status cu_dtod(rt_gpu *gp, rt_dptr dst, rt_dptr src, size_t bytes, ac_error **err) {
  cu_gpu *g = (cu_gpu *)gp;
  if (bytes == 0)
    return AC_OK;
  ac_status st = cu_op(g, err);
  if (st != AC_OK)
    return st;
  CUresult r = g->cu.MemcpyDtoDAsync(dst, src, bytes, g->stream);
  cu_leave(g);
  return r == CUDA_SUCCESS ? AC_OK : CU_FAIL(g, r, "cuMemcpyDtoDAsync", NULL, err);
}

static ac_status cu_memset0(rt_gpu *gp, rt_dptr dst, size_t bytes, ac_error **err) {
  cu_gpu *g = (cu_gpu *)gp;
  if (bytes == 0)
    return AC_OK;
  ac_status st = cu_op(g, err);
  if (st != AC_OK)
    return st;
  CUresult r = g->cu.MemsetD8Async(dst, 0, bytes, g->stream);
  cu_leave(g);
  return r == CUDA_SUCCESS ? AC_OK : CU_FAIL(g, r, "cuMemsetD8Async", NULL, err);
}

static ac_status cu_launch(rt_gpu *gp, rt_gkernel *k, unsigned grid, unsigned block, size_t smem,
                           rt_dptr frame, rt_dptr ctl, int64_t n, const uint64_t *pblock,
                           ac_error **err) {
  cu_gpu *g = (cu_gpu *)gp;
  if (grid == 0)
    return AC_OK; /* no blocks: nothing to run */
  if (smem > UINT_MAX)
    return cu_report(g->base.ctx, AC_ERR_INVALID, err,
                     "kernel %s: %zu bytes of dynamic shared memory requested", k->name, smem);
  cu_batch *b = cu_tb;
  bool held = b && b->g == g;
  ac_status st = AC_OK;
  if (held && b->n == CU_BATCH_MAX && (st = cu_op(g, err)) == AC_OK) /* full: queue it */
    cu_leave(g);
  if (st != AC_OK)
    return st;
  cu_rec one, *l = held ? &b->l[b->n] : &one;
  memset(l, 0, sizeof *l); /* equal launches compare equal, padding included */
  l->k = k;
  l->grid = grid;
  l->block = block;
  l->smem = (unsigned)smem;
  l->frame = frame;
  l->ctl = ctl;
  l->n = n;
  if (pblock)
    memcpy(l->p, pblock, sizeof l->p);
  if (held) { /* queued at the batch's end, or before the next other operation */
    b->n++;
    return AC_OK;
  }
  if ((st = cu_enter(g, err)) != AC_OK)
    return st;
  CUresult r = cu_launch_rec(g, l);
  cu_leave(g);
  return r == CUDA_SUCCESS ? AC_OK : CU_FAIL(g, r, "cuLaunchKernel", k->name, err);
}

static ac_status cu_launch_params(rt_gpu *gp, rt_gkernel *k, unsigned grid, unsigned block,
                                  void **params, ac_error **err) {
  cu_gpu *g = (cu_gpu *)gp;
  if (grid == 0)
    return AC_OK;
  /* The driver would say CUDA_ERROR_INVALID_VALUE; say why (the limit is
   * the PTX's .maxntid, or what its registers allow; cuFuncGetAttribute at
   * load time). */
  if (block == 0 || block > k->lim.max_block)
    return cu_report(g->base.ctx, AC_ERR_INVALID, err,
                     "kernel %s launched with blocks of %u threads; it allows at most %u on %s",
                     k->name, block, k->lim.max_block, g->name);
  ac_status st = cu_op(g, err);
  if (st != AC_OK)
    return st;
  CUresult r = g->cu.LaunchKernel(k->fn, grid, 1, 1, block, 1, 1, 0, g->stream, params, NULL);
  cu_leave(g);
  return r == CUDA_SUCCESS ? AC_OK : CU_FAIL(g, r, "cuLaunchKernel", k->name, err);
}

static ac_status cu_sync(rt_gpu *gp, ac_error **err) {
  cu_gpu *g = (cu_gpu *)gp;
  ac_status st = cu_op(g, err);
  if (st != AC_OK)
    return st;
  CUresult r = cu_wait(g);
  cu_leave(g);
  return r == CUDA_SUCCESS ? AC_OK : CU_FAIL(g, r, "cuStreamSynchronize", NULL, err);
}

/* Pinned blocks for callers (gpu.h: host_alloc): cuMemHostAlloc in our
 * context, NULL when the driver lacks it, refuses, or the context is lost. */
static void *cu_host_alloc(rt_gpu *gp, size_t bytes) {
  cu_gpu *g = (cu_gpu *)gp;
  void *p = NULL;
  if (!g->cu.MemHostAlloc || !g->cu.MemFreeHost || cu_enter(g, NULL) != AC_OK)
    return NULL;
  if (g->cu.MemHostAlloc(&p, bytes ? bytes : 1, 0) != CUDA_SUCCESS)
    p = NULL;
  cu_leave(g);
  return p;
}

static void cu_host_free(rt_gpu *gp, void *p) {
  cu_gpu *g = (cu_gpu *)gp;
  if (!p || cu_is_lost(g) || cu_enter(g, NULL) != AC_OK)
    return; /* a lost context takes its pinned blocks with it */
  (void)g->cu.MemFreeHost(p);
  cu_leave(g);
}

static void cu_limits(rt_gpu *gp, rt_gkernel *k, rt_glimits *out) {
  (void)gp;
  *out = k->lim;
}

static int64_t cu_parallelism(rt_gpu *gp) {
  cu_gpu *g = (cu_gpu *)gp;
  return (int64_t)g->sms * g->threads_per_sm;
}

/* ---- ARRAYC_GPU_TRACE: where a call's time goes on the host ----
 * With ARRAYC_GPU_TRACE=1 a device gets cu_trace_ops, whose operations
 * time the plain ones with the host's monotonic clock (everything from
 * entering our context to leaving it: the driver call, its staging, and
 * for dtoh and sync the wait for the stream) and count them; the device
 * prints the totals to stderr when it is destroyed. Off, the plain table
 * is used and nothing is measured. */
enum { TR_ALLOC, TR_FREE, TR_HTOD, TR_DTOH, TR_DTOD, TR_MEMSET, TR_LAUNCH, TR_LAUNCHP, TR_SYNC };
static const char *const cu_trace_names[9] = {
    "alloc",  "free",   "htod (copy in)", "dtoh (copy out, waits)", "dtod",
    "memset", "launch", "launch (extern)", "sync (waits)"};

static uint64_t tr_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void tr_add(rt_gpu *gp, int op, uint64_t t0) {
  cu_gpu *g = (cu_gpu *)gp;
  atomic_fetch_add_explicit(&g->tr_calls[op], 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&g->tr_ns[op], tr_now() - t0, memory_order_relaxed);
}

static void cu_trace_report(const cu_gpu *g) {
  fprintf(stderr, "arrayc: GPU operations on %s (ARRAYC_GPU_TRACE; host time, waits included)\n",
          g->name);
  fprintf(stderr, "  %-24s %10s %12s %10s\n", "operation", "calls", "total ms", "mean us");
  for (int i = 0; i < 9; i++) {
    uint64_t n = atomic_load(&g->tr_calls[i]), ns = atomic_load(&g->tr_ns[i]);
    if (n)
      fprintf(stderr, "  %-24s %10llu %12.3f %10.2f\n", cu_trace_names[i], (unsigned long long)n,
              (double)ns / 1e6, (double)ns / 1e3 / (double)n);
  }
}

static ac_status tr_alloc(rt_gpu *g, size_t bytes, rt_dptr *out, ac_error **err) {
  uint64_t t = tr_now();
  ac_status st = cu_alloc(g, bytes, out, err);
  tr_add(g, TR_ALLOC, t);
  return st;
}
static void tr_free(rt_gpu *g, rt_dptr p) {
  if (!p)
    return; /* nothing to free, nothing to count */
  uint64_t t = tr_now();
  cu_free(g, p);
  tr_add(g, TR_FREE, t);
}
static ac_status tr_htod(rt_gpu *g, rt_dptr dst, const void *src, size_t bytes, ac_error **err) {
  uint64_t t = tr_now();
  ac_status st = cu_htod(g, dst, src, bytes, err);
  tr_add(g, TR_HTOD, t);
  return st;
}
static ac_status tr_dtoh(rt_gpu *g, void *dst, rt_dptr src, size_t bytes, ac_error **err) {
  uint64_t t = tr_now();
  ac_status st = cu_dtoh(g, dst, src, bytes, err);
  tr_add(g, TR_DTOH, t);
  return st;
}
static ac_status tr_dtod(rt_gpu *g, rt_dptr dst, rt_dptr src, size_t bytes, ac_error **err) {
  uint64_t t = tr_now();
  ac_status st = cu_dtod(g, dst, src, bytes, err);
  tr_add(g, TR_DTOD, t);
  return st;
}
static ac_status tr_memset0(rt_gpu *g, rt_dptr dst, size_t bytes, ac_error **err) {
  uint64_t t = tr_now();
  ac_status st = cu_memset0(g, dst, bytes, err);
  tr_add(g, TR_MEMSET, t);
  return st;
}
static ac_status tr_launch(rt_gpu *g, rt_gkernel *k, unsigned grid, unsigned block, size_t smem,
                           rt_dptr frame, rt_dptr ctl, int64_t n, const uint64_t *params,
                           ac_error **err) {
  uint64_t t = tr_now();
  ac_status st = cu_launch(g, k, grid, block, smem, frame, ctl, n, params, err);
  tr_add(g, TR_LAUNCH, t);
  return st;
}
static ac_status tr_launch_params(rt_gpu *g, rt_gkernel *k, unsigned grid, unsigned block,
                                  void **params, ac_error **err) {
  uint64_t t = tr_now();
  ac_status st = cu_launch_params(g, k, grid, block, params, err);
  tr_add(g, TR_LAUNCHP, t);
  return st;
}
static ac_status tr_sync(rt_gpu *g, ac_error **err) {
  uint64_t t = tr_now();
  ac_status st = cu_sync(g, err);
  tr_add(g, TR_SYNC, t);
  return st;
}

static const rt_gpu_ops cu_trace_ops = {
    .name = "cuda",
    .destroy = cu_destroy,
    .alloc = tr_alloc,
    .free = tr_free,
    .htod = tr_htod,
    .dtoh = tr_dtoh,
    .dtod = tr_dtod,
    .memset0 = tr_memset0,
    .launch = tr_launch,
    .launch_params = tr_launch_params,
    .sync = tr_sync,
    .limits = cu_limits,
    .parallelism = cu_parallelism,
    .scope_enter = cu_scope_enter,
    .scope_leave = cu_scope_leave,
    .batch_begin = cu_batch_begin,
    .batch_end = cu_batch_end,
    .host_alloc = cu_host_alloc,
    .host_free = cu_host_free,
};

static const rt_gpu_ops cu_ops = {
    .name = "cuda",
    .destroy = cu_destroy,
    .alloc = cu_alloc,
    .free = cu_free,
    .htod = cu_htod,
    .dtoh = cu_dtoh,
    .dtod = cu_dtod,
    .memset0 = cu_memset0,
    .launch = cu_launch,
    .launch_params = cu_launch_params,
    .sync = cu_sync,
    .limits = cu_limits,
    .parallelism = cu_parallelism,
    .scope_enter = cu_scope_enter,
    .scope_leave = cu_scope_leave,
    .batch_begin = cu_batch_begin,
    .batch_end = cu_batch_end,
    .host_alloc = cu_host_alloc,
    .host_free = cu_host_free,
};

/* ---- creating a device ---- */

/* Opens the driver library and resolves the entry points into g->cu. */
static ac_status cu_open(ac_context *ctx, cu_gpu *g, ac_error **err) {
  const char *env = getenv("ARRAYC_LIBCUDA");
  const char *path = env && *env ? env : "libcuda.so.1";
  g->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!g->lib) {
    const char *why = dlerror();
    if (env && *env)
      return cu_report(ctx, AC_ERR_UNSUPPORTED, err,
                       "no GPU: cannot load %s (named by ARRAYC_LIBCUDA): %s", path,
                       why ? why : "unknown reason");
    return cu_report(ctx, AC_ERR_UNSUPPORTED, err,
                     "no GPU: libcuda.so.1 not found (is the NVIDIA driver installed?)");
  }
  for (size_t i = 0; i < sizeof cu_syms / sizeof cu_syms[0]; i++) {
    void *p = dlsym(g->lib, cu_syms[i].sym);
    if (!p && cu_syms[i].required)
      return cu_report(ctx, AC_ERR_UNSUPPORTED, err,
                       "no GPU: %s has no %s (CUDA driver too old, or not a CUDA driver)", path,
                       cu_syms[i].sym);
    /* A function pointer from dlsym's object pointer (POSIX guarantees
     * they convert; memcpy avoids ISO C's complaint about the cast). */
    memcpy((char *)&g->cu + cu_syms[i].off, &p, sizeof p);
  }
  return AC_OK;
}

/* Queries the device's properties into g. */
static ac_status cu_query(cu_gpu *g, ac_error **err) {
  static const struct {
    CUdevice_attribute attr;
    size_t off;
  } attrs[] = {
      {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, offsetof(cu_gpu, sms)},
      {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, offsetof(cu_gpu, threads_per_sm)},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, offsetof(cu_gpu, smem_optin)},
  };
  CUresult r;
  for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
    int v = 0;
    if ((r = g->cu.DeviceGetAttribute(&v, attrs[i].attr, g->dev)) != CUDA_SUCCESS)
      return cu_fail(g->base.ctx, &g->cu, r, "cuDeviceGetAttribute", NULL, true, err);
    memcpy((char *)g + attrs[i].off, &v, sizeof v);
  }
  int major = 0, minor = 0, pools = 0;
  if ((r = g->cu.DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                    g->dev)) != CUDA_SUCCESS ||
      (r = g->cu.DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                    g->dev)) != CUDA_SUCCESS)
    return cu_fail(g->base.ctx, &g->cu, r, "cuDeviceGetAttribute", NULL, true, err);
  g->sm = (unsigned)(major * 10 + minor);
  /* Drivers before 11.2 do not know the attribute: no pools then. */
  if (g->cu.MemAllocAsync && g->cu.MemFreeAsync && g->cu.DeviceGetMemPool &&
      g->cu.MemPoolSetAttribute && g->cu.MemPoolTrimTo &&
      g->cu.DeviceGetAttribute(&pools, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, g->dev) ==
          CUDA_SUCCESS)
    g->pools = pools != 0;
  if ((r = g->cu.DriverGetVersion(&g->driver)) != CUDA_SUCCESS)
    return cu_fail(g->base.ctx, &g->cu, r, "cuDriverGetVersion", NULL, true, err);
  if ((r = g->cu.DeviceGetName(g->name, (int)sizeof g->name, g->dev)) != CUDA_SUCCESS)
    return cu_fail(g->base.ctx, &g->cu, r, "cuDeviceGetName", NULL, true, err);
  g->name[sizeof g->name - 1] = '\0';
  if (g->sms <= 0 || g->threads_per_sm <= 0)
    return cu_report(g->base.ctx, AC_ERR_UNSUPPORTED, err,
                     "no GPU: CUDA device %s reports %d multiprocessors of %d threads", g->name,
                     g->sms, g->threads_per_sm);
  return AC_OK;
}

/* With g's context current: the stream and the memory pool's setting. */
static ac_status cu_setup(cu_gpu *g, ac_error **err) {
  CUresult r = g->cu.StreamCreate(&g->stream, CU_STREAM_NON_BLOCKING);
  if (r != CUDA_SUCCESS) {
    g->stream = NULL;
    return cu_fail(g->base.ctx, &g->cu, r, "cuStreamCreate", NULL, true, err);
  }
  /* Pinned staging: optional (a failure leaves pageable copies), and
   * ARRAYC_GPU_PINNED=0 turns it off. */
  const char *pin = getenv("ARRAYC_GPU_PINNED");
  void *stage = NULL;
  if (g->cu.MemHostAlloc && g->cu.MemFreeHost && !(pin && strcmp(pin, "0") == 0) &&
      g->cu.MemHostAlloc(&stage, CU_RING_BYTES + CU_RB_SLOTS * CU_RB_BYTES, 0) == CUDA_SUCCESS) {
    if (pthread_mutex_init(&g->stage_mu, NULL) == 0)
      g->stage = stage;
    else
      (void)g->cu.MemFreeHost(stage);
  }
  if (g->pools) {
    /* Keep freed memory in the pool (see the top of the file); a pool we
     * cannot configure is still usable as it is. */
    uint64_t keep = UINT64_MAX;
    if (g->cu.DeviceGetMemPool(&g->pool, g->dev) != CUDA_SUCCESS ||
        g->cu.MemPoolSetAttribute(g->pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep) !=
            CUDA_SUCCESS)
      g->pool = NULL;
    if (!g->pool)
      g->pools = false; /* without the pool's handle there is no trimming on OOM */
  }
  /* Graphs: optional (the driver's functions, a cache and its mutex), and
   * ARRAYC_GPU_GRAPHS=0 turns them off. */
  const char *graphs = getenv("ARRAYC_GPU_GRAPHS");
  if (g->cu.GraphCreate && g->cu.GraphAddKernelNode && g->cu.GraphInstantiateWithFlags &&
      g->cu.GraphLaunch && g->cu.GraphExecDestroy && g->cu.GraphDestroy &&
      !(graphs && strcmp(graphs, "0") == 0)) {
    struct cu_graph *cache = ac_alloc(g->base.ctx, CU_GRAPHS * sizeof *cache);
    if (cache && pthread_mutex_init(&g->graph_mu, NULL) == 0) {
      memset(cache, 0, CU_GRAPHS * sizeof *cache);
      g->graph = cache;
      g->graphs = true;
    } else {
      ac_free(g->base.ctx, cache);
    }
  }
  return AC_OK;
}

ac_status rt_cuda_create(ac_context *ctx, int ordinal, rt_gpu **out, ac_error **err) {
  if (!out)
    return cu_report(ctx, AC_ERR_INVALID, err, "rt_cuda_create: no place for the device");
  *out = NULL;
  if (ordinal < 0)
    return cu_report(ctx, AC_ERR_INVALID, err, "invalid GPU ordinal %d", ordinal);
  cu_gpu *g = ac_alloc(ctx, sizeof *g);
  if (!g)
    return ir_report(err, NULL, AC_ERR_NOMEM);
  memset(g, 0, sizeof *g);
  const char *trace = getenv("ARRAYC_GPU_TRACE");
  rt_gpu_init(&g->base, trace && *trace && strcmp(trace, "0") != 0 ? &cu_trace_ops : &cu_ops, ctx);

  bool initialised = false, retained = false;
  ac_status st = cu_open(ctx, g, err);
  if (st != AC_OK)
    goto fail;
  CUresult r = g->cu.Init(0);
  if (r == CUDA_ERROR_NO_DEVICE) {
    st = cu_report(ctx, AC_ERR_UNSUPPORTED, err, "no GPU: no CUDA device");
    goto fail;
  }
  if (r != CUDA_SUCCESS) {
    st = cu_fail(ctx, &g->cu, r, "cuInit", NULL, true, err);
    goto fail;
  }
  initialised = true;
  int count = 0;
  if ((r = g->cu.DeviceGetCount(&count)) != CUDA_SUCCESS) {
    st = cu_fail(ctx, &g->cu, r, "cuDeviceGetCount", NULL, true, err);
    goto fail;
  }
  if (count <= 0 || ordinal >= count) {
    st = count <= 0 ? cu_report(ctx, AC_ERR_UNSUPPORTED, err, "no GPU: no CUDA device")
                    : cu_report(ctx, AC_ERR_UNSUPPORTED, err,
                                "no GPU: no CUDA device %d (%d present)", ordinal, count);
    goto fail;
  }
  if ((r = g->cu.DeviceGet(&g->dev, ordinal)) != CUDA_SUCCESS) {
    st = cu_fail(ctx, &g->cu, r, "cuDeviceGet", NULL, true, err);
    goto fail;
  }
  if ((st = cu_query(g, err)) != AC_OK)
    goto fail;
  if ((r = g->cu.DevicePrimaryCtxRetain(&g->pctx, g->dev)) != CUDA_SUCCESS) {
    st = cu_fail(ctx, &g->cu, r, "cuDevicePrimaryCtxRetain", NULL, true, err);
    goto fail;
  }
  retained = true;
  if ((r = g->cu.CtxPushCurrent(g->pctx)) != CUDA_SUCCESS) {
    st = cu_fail(ctx, &g->cu, r, "cuCtxPushCurrent", NULL, true, err);
    goto fail;
  }
  st = cu_setup(g, err);
  cu_leave(g);
  if (st != AC_OK)
    goto fail;
  *out = &g->base;
  return AC_OK;

fail:
  /* Nothing that fails leaves a stream behind (cu_setup fails only when
   * cuStreamCreate does). */
  if (retained)
    (void)g->cu.DevicePrimaryCtxRelease(g->dev);
  /* Before a successful cuInit the library may go (see cu_destroy). */
  if (g->lib && !initialised)
    dlclose(g->lib);
  ac_free(ctx, g);
  return st;
}

void rt_cuda_info(rt_gpu *gp, unsigned *sm, int *driver_version, char *name, size_t namelen) {
  cu_gpu *g = cu_of(gp);
  if (sm)
    *sm = g ? g->sm : 0;
  if (driver_version)
    *driver_version = g ? g->driver : 0;
  if (name && namelen)
    snprintf(name, namelen, "%s", g ? g->name : "");
}

/* ---- modules ---- */

/* The driver's JIT logs: the error log is where ptxas explains a
 * rejected module, and can be long; the info log is short without
 * CU_JIT_LOG_VERBOSE. */
enum { CU_ERROR_LOG = 1 << 20, CU_INFO_LOG = 1 << 14 };

/* Launch limits of k->fn (its context current). */
static ac_status cu_kernel_limits(cu_gpu *g, rt_gkernel *k, ac_error **err) {
  int max_block = 0, static_smem = 0, min_grid = 0, block = 0, per_sm = 0;
  CUresult r;
  const char *fn = "cuFuncGetAttribute";
  if ((r = g->cu.FuncGetAttribute(&max_block, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, k->fn)) !=
          CUDA_SUCCESS ||
      (r = g->cu.FuncGetAttribute(&static_smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, k->fn)) !=
          CUDA_SUCCESS)
    return CU_FAIL(g, r, fn, k->name, err);
  /* The block size that maximises occupancy with no dynamic shared memory
   * (the calculator accounts for registers and static shared memory). */
  fn = "cuOccupancyMaxPotentialBlockSize";
  if ((r = g->cu.OccupancyMaxPotentialBlockSize(&min_grid, &block, k->fn, NULL, 0, 0)) !=
      CUDA_SUCCESS)
    return CU_FAIL(g, r, fn, k->name, err);
  if (block > max_block)
    block = max_block;
  if (block >= 32)
    block -= block % 32;
  if (block <= 0)
    return cu_report(g->base.ctx, AC_ERR_INTERNAL, err,
                     "kernel %s cannot be launched on %s (%d threads per block at most)", k->name,
                     g->name, max_block);
  fn = "cuOccupancyMaxActiveBlocksPerMultiprocessor";
  if ((r = g->cu.OccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k->fn, block, 0)) !=
      CUDA_SUCCESS)
    return CU_FAIL(g, r, fn, k->name, err);
  /* Allow dynamic shared memory up to what the device can give a block
   * (beyond the 48 KiB default one must opt in). Set once here so that
   * launches never have to change the function's attributes. */
  int dyn = g->smem_optin - static_smem;
  if (g->smem_optin > CU_SMEM_DEFAULT_LIMIT && dyn > 0 &&
      (r = g->cu.FuncSetAttribute(k->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, dyn)) !=
          CUDA_SUCCESS)
    return CU_FAIL(g, r, "cuFuncSetAttribute", k->name, err);
  k->lim.block = (unsigned)block;
  k->lim.max_block = (unsigned)max_block;
  k->lim.max_grid = (unsigned)(per_sm > 0 ? per_sm : 1) * (unsigned)g->sms;
  return AC_OK;
}

/* The JIT log text, without trailing blank lines ("" if none). */
static const char *cu_log(char *log, size_t cap) {
  log[cap - 1] = '\0';
  size_t n = strlen(log);
  while (n && (log[n - 1] == '\n' || log[n - 1] == ' '))
    log[--n] = '\0';
  return log;
}

/* Loads ptx with g's context current; on failure *mod stays NULL. */
static ac_status cu_load_module(cu_gpu *g, const char *ptx, CUmodule *mod, ac_error **err) {
  ac_context *ctx = g->base.ctx;
  char *elog = ac_alloc(ctx, CU_ERROR_LOG), *ilog = ac_alloc(ctx, CU_INFO_LOG);
  if (!elog || !ilog) {
    ac_free(ctx, elog);
    ac_free(ctx, ilog);
    return ir_report(err, NULL, AC_ERR_NOMEM);
  }
  elog[0] = ilog[0] = '\0';
  CUjit_option opts[4] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                          CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
  void *vals[4] = {elog, (void *)(uintptr_t)CU_ERROR_LOG, ilog, (void *)(uintptr_t)CU_INFO_LOG};
  CUresult r = g->cu.ModuleLoadDataEx(mod, ptx, 4, opts, vals);
  ac_status st = AC_OK;
  if (r != CUDA_SUCCESS) {
    *mod = NULL;
    ac_error *e = NULL;
    st = cu_dev_fail(g, r, "cuModuleLoadDataEx", NULL, &e);
    const char *el = cu_log(elog, CU_ERROR_LOG), *il = cu_log(ilog, CU_INFO_LOG);
    if (e && (*el || *il)) {
      /* The log says which line of the PTX and why: append it. */
      ac_error *full = ir_error(ctx, st, NULL, (ir_loc){0, 0}, "%s\n%s%s%s", e->message, el,
                                *el && *il ? "\n" : "", il);
      if (full) {
        ac_error_destroy(e);
        e = full;
      }
    }
    st = ir_report(err, e, e ? st : AC_ERR_NOMEM);
  }
  ac_free(ctx, elog);
  ac_free(ctx, ilog);
  return st;
}

ac_status rt_cuda_load(rt_gpu *gp, const char *ptx, const char *const *syms, size_t n,
                       rt_cuda_module **modp, rt_gkernel **out, ac_error **err) {
  cu_gpu *g = cu_of(gp);
  if (!gp)
    return ir_report(err, NULL, AC_ERR_INVALID);
  if (!g || !ptx || !modp || (n && (!syms || !out)))
    return cu_report(gp->ctx, AC_ERR_INVALID, err, "rt_cuda_load: %s",
                     g ? "missing argument" : "not a CUDA device");
  *modp = NULL;
  ac_context *ctx = g->base.ctx;
  if (n > (SIZE_MAX - sizeof(rt_cuda_module)) / sizeof(rt_gkernel))
    return ir_report(err, NULL, AC_ERR_NOMEM);
  rt_cuda_module *m = ac_alloc(ctx, sizeof *m + n * sizeof(rt_gkernel));
  if (!m)
    return ir_report(err, NULL, AC_ERR_NOMEM);
  memset(m, 0, sizeof *m + n * sizeof(rt_gkernel));
  m->n = n;
  ac_status st = cu_enter(g, err);
  if (st != AC_OK) {
    ac_free(ctx, m);
    return st;
  }
  st = cu_load_module(g, ptx, &m->mod, err);
  for (size_t i = 0; st == AC_OK && i < n; i++) {
    rt_gkernel *k = &m->k[i];
    snprintf(k->name, sizeof k->name, "%s", syms[i] ? syms[i] : "(null)");
    CUresult r = syms[i] ? g->cu.ModuleGetFunction(&k->fn, m->mod, syms[i]) : CUDA_ERROR_NOT_FOUND;
    st = r == CUDA_SUCCESS ? cu_kernel_limits(g, k, err)
                           : CU_FAIL(g, r, "cuModuleGetFunction", k->name, err);
  }
  if (st != AC_OK && m->mod)
    (void)g->cu.ModuleUnload(m->mod);
  cu_leave(g);
  if (st != AC_OK) {
    ac_free(ctx, m);
    return st;
  }
  for (size_t i = 0; i < n; i++)
    out[i] = &m->k[i];
  *modp = m;
  return AC_OK;
}

void rt_cuda_module_free(rt_gpu *gp, rt_cuda_module *m) {
  cu_gpu *g = cu_of(gp);
  if (!g || !m)
    return;
  if (!cu_is_lost(g) && cu_enter(g, NULL) == AC_OK) {
    /* Launches of its kernels may still be held back or queued, and
     * cached graphs may name them. */
    rt_gkernel *k;
    (void)cu_flush(g, &k);
    (void)g->cu.StreamSynchronize(g->stream);
    cu_graphs_clear(g);
    (void)g->cu.ModuleUnload(m->mod);
    cu_leave(g);
  } else {
    cu_graphs_clear(g); /* records naming its kernels (a lost context took the module) */
  }
  ac_free(g->base.ctx, m);
}

ac_status rt_cuda_load_extern(rt_gpu *gp, const pl_kernel *k, rt_cuda_module **mod,
                              rt_gkernel **out, ac_error **err) {
  if (!gp)
    return ir_report(err, NULL, AC_ERR_INVALID);
  if (!k || !k->ptx || !k->symbol)
    return cu_report(gp->ctx, AC_ERR_INVALID, err, "rt_cuda_load_extern: not an extern kernel");
  const char *syms[1] = {k->symbol};
  ac_error *e = NULL;
  ac_status st = rt_cuda_load(gp, k->ptx, syms, 1, mod, out, &e);
  if (st == AC_OK || !e)
    return ir_report(err, e, st);
  /* ptxas's complaint is about the program's PTX, not ours */
  ac_status st2 = st == AC_ERR_INTERNAL ? AC_ERR_INVALID : st;
  ac_error *full = ir_error(gp->ctx, st2, NULL, (ir_loc){0, 0}, "the PTX of extern kernel '%s': %s",
                            k->symbol, e->message);
  if (!full)
    return ir_report(err, e, st);
  ac_error_destroy(e);
  return ir_report(err, full, st2);
}
