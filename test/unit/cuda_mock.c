/* test/unit/cuda_mock.c: a fake CUDA driver, so that test_cuda runs
 * runtime/gpu_cuda.c's every path (creation and its failures, stream-
 * ordered and plain allocation, copies, module loading with a JIT log,
 * launches, limits, error messages, context handling from other threads)
 * on machines without a GPU, under the sanitizers too.
 *
 * It is a shared module exporting the symbols runtime/cuda_drv.h lists,
 * with the types declared there (the compiler checks both agree). Device
 * memory is malloc'd and a CUdeviceptr is its address; every operation
 * runs when it is queued, but the stream remembers that work was queued
 * until a synchronisation, so that a cuMemFree without a sync before it is
 * caught. Every call that needs a context fails with
 * CUDA_ERROR_INVALID_CONTEXT unless the primary context is current on the
 * calling thread (the thread's context stack is thread-local, as in the
 * driver). A module's kernels are its `.entry` names; launching one (all
 * behave as test_cuda's PTX kernel) stores n in frame word 0 and adds
 * grid * block to word 1, except `arrayc_mock_axpy`, an extern kernel
 * (plan.h) that computes out = a * x + y (mk_axpy). Graphs are chains of
 * kernel nodes, run node by node when launched. A kernel's maximum
 * block is its `.maxntid`, else 1024. The state is global and locked: a
 * driver is process state.
 *
 * Device faults: besides failing calls (cuda_mock_fail: an out-of-memory
 * allocation, a launch the driver refuses, a module the JIT rejects, an
 * error reported at a synchronisation), the context can be LOST
 * (cuda_mock_lose), as a kernel's illegal access loses a real one: every
 * later call in it fails with the same sticky error until the last
 * reference to the primary context goes, which destroys the context and
 * everything in it. Live allocations, modules, streams, pinned blocks and
 * graphs are counted (and listed, so that a destroyed context frees them),
 * so the tests can check that a fault leaks nothing.
 */
#define _POSIX_C_SOURCE 200809L

#include "cuda_mock.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every entry point, declared with cuda_drv.h's function types under its
 * exported name (the versioned ones through these macros, which also
 * rename the definitions below). */
#define cuDevicePrimaryCtxRelease cuDevicePrimaryCtxRelease_v2
#define cuCtxPushCurrent cuCtxPushCurrent_v2
#define cuCtxPopCurrent cuCtxPopCurrent_v2
#define cuStreamDestroy cuStreamDestroy_v2
#define cuMemAlloc cuMemAlloc_v2
#define cuMemFree cuMemFree_v2
#define cuMemcpyHtoDAsync cuMemcpyHtoDAsync_v2
#define cuMemcpyDtoHAsync cuMemcpyDtoHAsync_v2
#define cuMemcpyDtoDAsync cuMemcpyDtoDAsync_v2
#define cuGraphAddKernelNode cuGraphAddKernelNode_v2
#define MK_DECLARE(name, sym, required) cu_##name##_fn cu##name;
CU_DRV_API(MK_DECLARE)
#undef MK_DECLARE

struct CUctx_st {
  int unused;
};
struct CUstream_st {
  bool pending;   /* work queued since the last synchronisation */
  uint64_t syncs; /* synchronisations so far */
};
struct CUfunc_st {
  char name[64];
  int max_threads;
  int max_dyn_smem;
  bool axpy; /* the extern kernel arrayc_mock_axpy (see mk_axpy) */
};
struct CUmod_st {
  int n;
  struct CUfunc_st fn[8];
};
struct CUmemPoolHandle_st {
  int unused;
};
/* Graphs: chains of kernel nodes, each keeping what the fake kernels read
 * of their parameters (frame, ctl, n and the parameter block's mask). */
enum { MK_GRAPH_NODES = 64 };
struct CUgraphNode_st {
  struct CUfunc_st *fn;
  unsigned gx, bx, smem;
  uint64_t v[4];
};
struct CUgraph_st {
  int n;
  struct CUgraphNode_st node[MK_GRAPH_NODES];
};
struct CUgraphExec_st {
  int n;
  struct CUgraphNode_st node[MK_GRAPH_NODES];
};

enum {
  MK_MAX_ALLOCS = 4096,
  MK_MAX_STREAMS = 16,
  MK_MAX_DEPTH = 8,
  MK_SMS = 4,
  MK_MAX_INFLIGHT = 1 << 16,
  MK_MAX_OBJS = 1024 /* live modules, live executable graphs */
};

static pthread_mutex_t mk_lock = PTHREAD_MUTEX_INITIALIZER;
static struct CUctx_st mk_ctx;
static struct CUmemPoolHandle_st mk_pool;
static _Thread_local CUcontext mk_stack[MK_MAX_DEPTH];
static _Thread_local int mk_depth;
/* The stream this thread last queued work on, and its synchronisation
 * count then (mk_memfree). */
static _Thread_local CUstream mk_my_stream;
static _Thread_local uint64_t mk_my_syncs;
static struct {
  int devices, pools;
  char fail_sym[64];
  CUresult fail_code;
  int fail_skip, fail_times;
  bool inited;
  struct {
    unsigned char *p;
    size_t bytes;
  } allocs[MK_MAX_ALLOCS];
  int nalloc;
  struct {
    unsigned char *p;
    size_t bytes;
  } host[MK_MAX_STREAMS]; /* live pinned host blocks */
  int nhost;
  struct {
    const void *src;
    unsigned char *snap;
    size_t bytes;
  } inflight[MK_MAX_INFLIGHT]; /* pinned sources of queued copies */
  int ninflight;
  CUstream streams[MK_MAX_STREAMS]; /* live streams */
  CUmodule mods[MK_MAX_OBJS];       /* live modules (st.modules of them) */
  CUgraphExec execs[MK_MAX_OBJS];   /* live executable graphs (st.graphs) */
  /* cuda_mock_lose: the call that loses the context, armed until it comes */
  char lose_sym[64];
  CUresult lose_code;
  int lose_skip;
  bool lose_armed;
  cuda_mock_stats st;
} mk = {.devices = 1, .pools = 1};

/* ---- control ---- */

void cuda_mock_reset(void) {
  pthread_mutex_lock(&mk_lock);
  mk.devices = 1;
  mk.pools = 1;
  mk.fail_sym[0] = '\0';
  mk.lose_armed = false;
  if (mk.st.retains <= 0) /* a lost context lives on while referenced */
    mk.st.lost = CUDA_SUCCESS;
  pthread_mutex_unlock(&mk_lock);
}

void cuda_mock_config(int devices, int pools) {
  pthread_mutex_lock(&mk_lock);
  mk.devices = devices;
  mk.pools = pools;
  pthread_mutex_unlock(&mk_lock);
}

void cuda_mock_fail(const char *sym, CUresult code, int skip, int times) {
  pthread_mutex_lock(&mk_lock);
  strncpy(mk.fail_sym, sym, sizeof mk.fail_sym - 1);
  mk.fail_sym[sizeof mk.fail_sym - 1] = '\0';
  mk.fail_code = code;
  mk.fail_skip = skip;
  mk.fail_times = times;
  pthread_mutex_unlock(&mk_lock);
}

void cuda_mock_lose(const char *sym, CUresult code, int skip) {
  pthread_mutex_lock(&mk_lock);
  if (!sym) {
    mk.st.lost = code;
  } else {
    strncpy(mk.lose_sym, sym, sizeof mk.lose_sym - 1);
    mk.lose_sym[sizeof mk.lose_sym - 1] = '\0';
    mk.lose_code = code;
    mk.lose_skip = skip;
    mk.lose_armed = true;
  }
  pthread_mutex_unlock(&mk_lock);
}

void cuda_mock_get_stats(cuda_mock_stats *out) {
  pthread_mutex_lock(&mk_lock);
  *out = mk.st;
  out->allocs = mk.nalloc;
  out->depth = mk_depth;
  pthread_mutex_unlock(&mk_lock);
}

/* ---- helpers (mk_lock held) ---- */

/* An injected failure for sym, or CUDA_SUCCESS. */
static CUresult mk_injected(const char *sym) {
  if (strcmp(mk.fail_sym, sym) != 0)
    return CUDA_SUCCESS;
  if (mk.fail_skip > 0) {
    mk.fail_skip--;
    return CUDA_SUCCESS;
  }
  if (mk.fail_times == 0)
    return CUDA_SUCCESS;
  if (mk.fail_times > 0)
    mk.fail_times--;
  return mk.fail_code;
}

/* The checks every context-bound call makes: a lost context's sticky
 * error first, then an injected failure; the call that loses the context
 * (cuda_mock_lose) goes on. */
static CUresult mk_enter(const char *sym) {
  if (!mk.inited)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (mk_depth == 0 || mk_stack[mk_depth - 1] != &mk_ctx || mk.st.retains <= 0)
    return CUDA_ERROR_INVALID_CONTEXT;
  if (mk.st.lost != CUDA_SUCCESS)
    return mk.st.lost;
  if (mk.lose_armed && strcmp(mk.lose_sym, sym) == 0 && mk.lose_skip-- <= 0) {
    mk.lose_armed = false;
    mk.st.lost = mk.lose_code;
  }
  return mk_injected(sym);
}

/* Is [p, p + n) inside one live allocation? */
static bool mk_inside(CUdeviceptr p, size_t n) {
  for (int i = 0; i < mk.nalloc; i++) {
    uintptr_t b = (uintptr_t)mk.allocs[i].p;
    if (p >= b && p - b <= mk.allocs[i].bytes && n <= mk.allocs[i].bytes - (p - b))
      return true;
  }
  return false;
}

/* Is [p, p + n) inside one live pinned host block? */
static bool mk_pinned(const void *p, size_t n) {
  for (int i = 0; i < mk.nhost; i++) {
    uintptr_t b = (uintptr_t)mk.host[i].p, q = (uintptr_t)p;
    if (q >= b && q - b <= mk.host[i].bytes && n <= mk.host[i].bytes - (q - b))
      return true;
  }
  return false;
}

static CUresult mk_alloc(CUdeviceptr *p, size_t bytes) {
  if (!p || bytes == 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (mk.nalloc == MK_MAX_ALLOCS)
    return CUDA_ERROR_OUT_OF_MEMORY;
  unsigned char *m = malloc(bytes);
  if (!m)
    return CUDA_ERROR_OUT_OF_MEMORY;
  memset(m, 0xA5, bytes); /* device memory is not zeroed */
  mk.allocs[mk.nalloc].p = m;
  mk.allocs[mk.nalloc].bytes = bytes;
  mk.nalloc++;
  mk.st.alloc_calls++;
  *p = (CUdeviceptr)(uintptr_t)m;
  return CUDA_SUCCESS;
}

static CUresult mk_free(CUdeviceptr p) {
  for (int i = 0; i < mk.nalloc; i++)
    if ((uintptr_t)mk.allocs[i].p == p) {
      free(mk.allocs[i].p);
      mk.allocs[i] = mk.allocs[--mk.nalloc];
      mk.st.frees++;
      return CUDA_SUCCESS;
    }
  return CUDA_ERROR_INVALID_VALUE;
}

#define MK_LOCKED(expr)                                                                            \
  do {                                                                                             \
    pthread_mutex_lock(&mk_lock);                                                                  \
    CUresult mk_r_ = (expr);                                                                       \
    pthread_mutex_unlock(&mk_lock);                                                                \
    return mk_r_;                                                                                  \
  } while (0)

/* ---- errors ---- */

static const struct {
  CUresult r;
  const char *name, *desc;
} mk_names[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_INVALID_PTX, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS",
     "an illegal memory access was encountered"},
    {CUDA_ERROR_NO_BINARY_FOR_GPU, "CUDA_ERROR_NO_BINARY_FOR_GPU",
     "no kernel image is available for execution on the device"},
    {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
     "too many resources requested for launch"},
    {CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {CUDA_ERROR_CONTEXT_IS_DESTROYED, "CUDA_ERROR_CONTEXT_IS_DESTROYED", "context is destroyed"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

static CUresult mk_name(CUresult r, const char **str, bool desc) {
  for (size_t i = 0; i < sizeof mk_names / sizeof mk_names[0]; i++)
    if (mk_names[i].r == r) {
      *str = desc ? mk_names[i].desc : mk_names[i].name;
      return CUDA_SUCCESS;
    }
  *str = NULL;
  return CUDA_ERROR_INVALID_VALUE;
}
CUresult cuGetErrorName(CUresult error, const char **str) {
  return mk_name(error, str, false);
}
CUresult cuGetErrorString(CUresult error, const char **str) {
  return mk_name(error, str, true);
}

/* ---- initialisation and devices ---- */

static CUresult mk_init(unsigned flags) {
  CUresult r = mk_injected("cuInit");
  if (r != CUDA_SUCCESS)
    return r;
  if (flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  mk.inited = true;
  mk.st.inits++;
  return CUDA_SUCCESS;
}
CUresult cuInit(unsigned int flags) {
  MK_LOCKED(mk_init(flags));
}

static CUresult mk_plain(const char *sym) {
  return mk.inited ? mk_injected(sym) : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult cuDriverGetVersion(int *version) {
  *version = 12040; /* works before cuInit, as in the driver */
  MK_LOCKED(mk_injected("cuDriverGetVersion"));
}

static CUresult mk_count(int *count) {
  CUresult r = mk_plain("cuDeviceGetCount");
  if (r == CUDA_SUCCESS)
    *count = mk.devices;
  return r;
}
CUresult cuDeviceGetCount(int *count) {
  MK_LOCKED(mk_count(count));
}

static CUresult mk_get(CUdevice *dev, int ordinal) {
  CUresult r = mk_plain("cuDeviceGet");
  if (r == CUDA_SUCCESS && (ordinal < 0 || ordinal >= mk.devices))
    r = CUDA_ERROR_INVALID_DEVICE;
  if (r == CUDA_SUCCESS)
    *dev = ordinal;
  return r;
}
CUresult cuDeviceGet(CUdevice *dev, int ordinal) {
  MK_LOCKED(mk_get(dev, ordinal));
}

static CUresult mk_devname(char *name, int len, CUdevice dev) {
  CUresult r = mk_plain("cuDeviceGetName");
  if (r == CUDA_SUCCESS && (len <= 0 || dev < 0 || dev >= mk.devices))
    r = CUDA_ERROR_INVALID_VALUE;
  if (r == CUDA_SUCCESS) {
    strncpy(name, "arrayc mock GPU", (size_t)len - 1);
    name[len - 1] = '\0';
  }
  return r;
}
CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
  MK_LOCKED(mk_devname(name, len, dev));
}

static CUresult mk_attr(int *value, CUdevice_attribute attr, CUdevice dev) {
  CUresult r = mk_plain("cuDeviceGetAttribute");
  if (r != CUDA_SUCCESS)
    return r;
  if (dev < 0 || dev >= mk.devices)
    return CUDA_ERROR_INVALID_DEVICE;
  switch (attr) {
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
    *value = 1024;
    break;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
    *value = MK_SMS;
    break;
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
    *value = 2048;
    break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
    *value = 9;
    break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
    *value = 0;
    break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
    *value = 227 * 1024;
    break;
  case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:
    *value = mk.pools;
    break;
  default:
    return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetAttribute(int *value, CUdevice_attribute attr, CUdevice dev) {
  MK_LOCKED(mk_attr(value, attr, dev));
}

/* ---- contexts ---- */

static CUresult mk_retain(CUcontext *ctx, CUdevice dev) {
  CUresult r = mk_plain("cuDevicePrimaryCtxRetain");
  if (r == CUDA_SUCCESS && (dev < 0 || dev >= mk.devices))
    r = CUDA_ERROR_INVALID_DEVICE;
  if (r == CUDA_SUCCESS) {
    mk.st.retains++;
    *ctx = &mk_ctx;
  }
  return r;
}
CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev) {
  MK_LOCKED(mk_retain(ctx, dev));
}

/* The last reference to a lost context is gone: the driver destroys it
 * with everything in it, and the next retain makes a fresh one. (A context
 * that is not lost keeps its objects, so the tests see leaks.) */
static void mk_destroy_lost(void) {
  int n = mk.nalloc + mk.st.streams + mk.st.modules + mk.nhost + mk.st.graphs;
  while (mk.nalloc)
    free(mk.allocs[--mk.nalloc].p);
  while (mk.st.streams)
    free(mk.streams[--mk.st.streams]);
  while (mk.st.modules)
    free(mk.mods[--mk.st.modules]);
  while (mk.nhost)
    free(mk.host[--mk.nhost].p);
  mk.st.pinned = 0;
  while (mk.st.graphs)
    free(mk.execs[--mk.st.graphs]);
  for (int i = 0; i < mk.ninflight; i++)
    free(mk.inflight[i].snap);
  mk.ninflight = 0;
  mk.st.reclaimed += n;
  mk.st.lost = CUDA_SUCCESS;
}

static CUresult mk_release(CUdevice dev) {
  CUresult r = mk_plain("cuDevicePrimaryCtxRelease_v2");
  if (r == CUDA_SUCCESS && mk.st.retains <= 0)
    r = CUDA_ERROR_INVALID_CONTEXT;
  if (r == CUDA_SUCCESS && --mk.st.retains == 0 && mk.st.lost != CUDA_SUCCESS)
    mk_destroy_lost();
  return r;
}
CUresult cuDevicePrimaryCtxRelease(CUdevice dev) {
  MK_LOCKED(mk_release(dev));
}

static CUresult mk_push(CUcontext ctx) {
  CUresult r = mk_plain("cuCtxPushCurrent_v2");
  if (r == CUDA_SUCCESS && (ctx != &mk_ctx || mk.st.retains <= 0 || mk_depth == MK_MAX_DEPTH))
    r = CUDA_ERROR_INVALID_CONTEXT;
  if (r == CUDA_SUCCESS) {
    mk_stack[mk_depth++] = ctx;
    mk.st.pushes++;
  }
  return r;
}
CUresult cuCtxPushCurrent(CUcontext ctx) {
  MK_LOCKED(mk_push(ctx));
}

static CUresult mk_pop(CUcontext *ctx) {
  CUresult r = mk_plain("cuCtxPopCurrent_v2");
  if (r == CUDA_SUCCESS && mk_depth == 0)
    r = CUDA_ERROR_INVALID_CONTEXT;
  if (r == CUDA_SUCCESS)
    *ctx = mk_stack[--mk_depth];
  return r;
}
CUresult cuCtxPopCurrent(CUcontext *ctx) {
  MK_LOCKED(mk_pop(ctx));
}

/* ---- streams ---- */

static CUresult mk_stream_create(CUstream *s, unsigned flags) {
  CUresult r = mk_enter("cuStreamCreate");
  if (r == CUDA_SUCCESS && flags != CU_STREAM_NON_BLOCKING)
    r = CUDA_ERROR_INVALID_VALUE; /* gpu_cuda.c's stream must not sync with stream 0 */
  if (r == CUDA_SUCCESS && (mk.st.streams == MK_MAX_STREAMS || !(*s = calloc(1, sizeof **s))))
    r = CUDA_ERROR_OUT_OF_MEMORY;
  if (r == CUDA_SUCCESS)
    mk.streams[mk.st.streams++] = *s;
  return r;
}
CUresult cuStreamCreate(CUstream *s, unsigned int flags) {
  MK_LOCKED(mk_stream_create(s, flags));
}

/* The index of live stream s, or -1. */
static int mk_stream_index(CUstream s) {
  for (int i = 0; i < mk.st.streams; i++)
    if (mk.streams[i] == s)
      return i;
  return -1;
}

/* A host-to-device copy from pinned memory is queued: a real DMA engine
 * reads the source later, when the stream reaches the copy. The mock
 * copies at once, and keeps what the source held (mk.inflight) until the
 * next synchronisation, which counts a source changed in between as a
 * race (st.pinned_races): the host reused pinned memory still in flight. */
static void mk_inflight_add(const void *src, size_t bytes) {
  if (mk.ninflight == MK_MAX_INFLIGHT)
    return; /* not checked: the test's copies stay far below */
  unsigned char *snap = malloc(bytes);
  if (!snap)
    return;
  memcpy(snap, src, bytes);
  mk.inflight[mk.ninflight].src = src;
  mk.inflight[mk.ninflight].snap = snap;
  mk.inflight[mk.ninflight].bytes = bytes;
  mk.ninflight++;
}

static void mk_inflight_check(void) {
  for (int i = 0; i < mk.ninflight; i++) {
    if (memcmp(mk.inflight[i].src, mk.inflight[i].snap, mk.inflight[i].bytes) != 0)
      mk.st.pinned_races++;
    free(mk.inflight[i].snap);
  }
  mk.ninflight = 0;
}

static CUresult mk_stream_sync(CUstream s) {
  CUresult r = mk_enter("cuStreamSynchronize");
  if (r == CUDA_SUCCESS && mk_stream_index(s) < 0)
    r = CUDA_ERROR_INVALID_HANDLE;
  if (r == CUDA_SUCCESS) {
    s->pending = false;
    s->syncs++;
    mk.st.syncs++;
    mk_inflight_check();
  }
  return r;
}
CUresult cuStreamSynchronize(CUstream s) {
  MK_LOCKED(mk_stream_sync(s));
}

static CUresult mk_stream_destroy(CUstream s) {
  CUresult r = mk_enter("cuStreamDestroy_v2");
  int i = mk_stream_index(s);
  if (r == CUDA_SUCCESS && i < 0)
    r = CUDA_ERROR_INVALID_HANDLE;
  if (r == CUDA_SUCCESS) {
    free(s);
    mk.streams[i] = mk.streams[--mk.st.streams];
  }
  return r;
}
CUresult cuStreamDestroy(CUstream s) {
  MK_LOCKED(mk_stream_destroy(s));
}

/* A queued operation's checks: context, stream; marks the stream busy. */
static CUresult mk_queue(const char *sym, CUstream s) {
  CUresult r = mk_enter(sym);
  if (r == CUDA_SUCCESS && mk_stream_index(s) < 0)
    r = CUDA_ERROR_INVALID_HANDLE; /* everything goes on gpu_cuda.c's own stream */
  if (r == CUDA_SUCCESS) {
    s->pending = true;
    mk_my_stream = s;
    mk_my_syncs = s->syncs;
  }
  return r;
}

/* ---- memory ---- */

static CUresult mk_memalloc(CUdeviceptr *p, size_t bytes) {
  CUresult r = mk_enter("cuMemAlloc_v2");
  return r == CUDA_SUCCESS ? mk_alloc(p, bytes) : r;
}
CUresult cuMemAlloc(CUdeviceptr *p, size_t bytes) {
  MK_LOCKED(mk_memalloc(p, bytes));
}

static CUresult mk_memfree(CUdeviceptr p) {
  CUresult r = mk_enter("cuMemFree_v2");
  if (r != CUDA_SUCCESS)
    return r;
  /* cuMemFree is not stream-ordered: memory that queued work may still
   * use must not be freed. The fake knows which thread queued what: a
   * thread that queued work on a stream nobody has synchronised since
   * fails (work other threads queued meanwhile uses their own memory). */
  if (mk_my_stream && mk_stream_index(mk_my_stream) >= 0 && mk_my_stream->pending &&
      mk_my_stream->syncs == mk_my_syncs)
    return CUDA_ERROR_ILLEGAL_ADDRESS;
  return mk_free(p);
}
CUresult cuMemFree(CUdeviceptr p) {
  MK_LOCKED(mk_memfree(p));
}

static CUresult mk_allocasync(CUdeviceptr *p, size_t bytes, CUstream s) {
  CUresult r = mk_queue("cuMemAllocAsync", s);
  if (r == CUDA_SUCCESS && !mk.pools)
    r = CUDA_ERROR_NOT_SUPPORTED;
  if (r == CUDA_SUCCESS)
    r = mk_alloc(p, bytes);
  if (r == CUDA_SUCCESS)
    mk.st.async_allocs++;
  return r;
}
CUresult cuMemAllocAsync(CUdeviceptr *p, size_t bytes, CUstream s) {
  MK_LOCKED(mk_allocasync(p, bytes, s));
}

static CUresult mk_freeasync(CUdeviceptr p, CUstream s) {
  CUresult r = mk_queue("cuMemFreeAsync", s);
  if (r == CUDA_SUCCESS && !mk.pools)
    r = CUDA_ERROR_NOT_SUPPORTED;
  return r == CUDA_SUCCESS ? mk_free(p) : r;
}
CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s) {
  MK_LOCKED(mk_freeasync(p, s));
}

static CUresult mk_getpool(CUmemoryPool *pool, CUdevice dev) {
  CUresult r = mk_plain("cuDeviceGetMemPool");
  if (r == CUDA_SUCCESS && (!mk.pools || dev < 0 || dev >= mk.devices))
    r = CUDA_ERROR_NOT_SUPPORTED;
  if (r == CUDA_SUCCESS)
    *pool = &mk_pool;
  return r;
}
CUresult cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev) {
  MK_LOCKED(mk_getpool(pool, dev));
}

static CUresult mk_poolattr(CUmemoryPool pool, CUmemPool_attribute attr, void *value) {
  CUresult r = mk_plain("cuMemPoolSetAttribute");
  if (r == CUDA_SUCCESS && (pool != &mk_pool || attr != CU_MEMPOOL_ATTR_RELEASE_THRESHOLD))
    r = CUDA_ERROR_INVALID_VALUE;
  if (r == CUDA_SUCCESS)
    memcpy(&mk.st.pool_threshold, value, sizeof mk.st.pool_threshold);
  return r;
}
CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value) {
  MK_LOCKED(mk_poolattr(pool, attr, value));
}

static CUresult mk_trim(CUmemoryPool pool, size_t keep) {
  CUresult r = mk_plain("cuMemPoolTrimTo");
  if (r == CUDA_SUCCESS && pool != &mk_pool)
    r = CUDA_ERROR_INVALID_VALUE;
  if (r == CUDA_SUCCESS)
    mk.st.trims++;
  return r;
}
CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t keep) {
  MK_LOCKED(mk_trim(pool, keep));
}

/* ---- pinned host memory ---- */

static CUresult mk_hostalloc(void **p, size_t bytes, unsigned flags) {
  CUresult r = mk_enter("cuMemHostAlloc");
  if (r != CUDA_SUCCESS)
    return r;
  if (!p || bytes == 0 || flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (mk.nhost == MK_MAX_STREAMS)
    return CUDA_ERROR_OUT_OF_MEMORY;
  unsigned char *m = malloc(bytes);
  if (!m)
    return CUDA_ERROR_OUT_OF_MEMORY;
  memset(m, 0x5A, bytes);
  mk.host[mk.nhost].p = m;
  mk.host[mk.nhost].bytes = bytes;
  mk.nhost++;
  mk.st.pinned++;
  *p = m;
  return CUDA_SUCCESS;
}
CUresult cuMemHostAlloc(void **p, size_t bytes, unsigned flags) {
  MK_LOCKED(mk_hostalloc(p, bytes, flags));
}

static CUresult mk_freehost(void *p) {
  CUresult r = mk_enter("cuMemFreeHost");
  if (r != CUDA_SUCCESS)
    return r;
  for (int i = 0; i < mk.nhost; i++)
    if (mk.host[i].p == p) {
      free(p);
      mk.host[i] = mk.host[--mk.nhost];
      mk.st.pinned--;
      return CUDA_SUCCESS;
    }
  return CUDA_ERROR_INVALID_VALUE;
}
CUresult cuMemFreeHost(void *p) {
  MK_LOCKED(mk_freehost(p));
}

/* ---- copies ---- */

static CUresult mk_htod(CUdeviceptr dst, const void *src, size_t bytes, CUstream s) {
  CUresult r = mk_queue("cuMemcpyHtoDAsync_v2", s);
  if (r == CUDA_SUCCESS && (!src || !mk_inside(dst, bytes)))
    r = CUDA_ERROR_INVALID_VALUE;
  if (r == CUDA_SUCCESS) {
    memcpy((void *)(uintptr_t)dst, src, bytes);
    mk.st.htod++;
    mk.st.htod_bytes += bytes;
    if (mk_pinned(src, bytes)) {
      mk.st.pinned_copies++;
      mk_inflight_add(src, bytes);
    }
  }
  return r;
}
CUresult cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src, size_t bytes, CUstream s) {
  MK_LOCKED(mk_htod(dst, src, bytes, s));
}

static CUresult mk_dtoh(void *dst, CUdeviceptr src, size_t bytes, CUstream s) {
  CUresult r = mk_queue("cuMemcpyDtoHAsync_v2", s);
  if (r == CUDA_SUCCESS && (!dst || !mk_inside(src, bytes)))
    r = CUDA_ERROR_INVALID_VALUE;
  if (r == CUDA_SUCCESS) {
    memcpy(dst, (const void *)(uintptr_t)src, bytes);
    mk.st.dtoh++;
    mk.st.dtoh_bytes += bytes;
    mk.st.pinned_copies += mk_pinned(dst, bytes);
  }
  return r;
}
CUresult cuMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t bytes, CUstream s) {
  MK_LOCKED(mk_dtoh(dst, src, bytes, s));
}

static CUresult mk_dtod(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream s) {
  CUresult r = mk_queue("cuMemcpyDtoDAsync_v2", s);
  if (r == CUDA_SUCCESS && (!mk_inside(dst, bytes) || !mk_inside(src, bytes)))
    r = CUDA_ERROR_INVALID_VALUE;
  if (r == CUDA_SUCCESS) {
    memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, bytes);
    mk.st.dtod++;
    mk.st.dtod_bytes += bytes;
  }
  return r;
}
CUresult cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream s) {
  MK_LOCKED(mk_dtod(dst, src, bytes, s));
}

static CUresult mk_memset(CUdeviceptr dst, unsigned char value, size_t n, CUstream s) {
  CUresult r = mk_queue("cuMemsetD8Async", s);
  if (r == CUDA_SUCCESS && !mk_inside(dst, n))
    r = CUDA_ERROR_INVALID_VALUE;
  if (r == CUDA_SUCCESS) {
    memset((void *)(uintptr_t)dst, value, n);
    mk.st.memsets++;
  }
  return r;
}
CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t n, CUstream s) {
  MK_LOCKED(mk_memset(dst, value, n, s));
}

/* ---- modules ---- */

/* The option's value, or NULL. */
static void **mk_option(unsigned nopts, CUjit_option *opts, void **values, CUjit_option which) {
  for (unsigned i = 0; i < nopts; i++)
    if (opts[i] == which)
      return &values[i];
  return NULL;
}

/* "Compiles" the PTX: a module of its `.entry` names; text containing
 * BADPTX is rejected with a log, as ptxas would. */
static CUresult mk_load(CUmodule *mod, const void *image, unsigned nopts, CUjit_option *opts,
                        void **values) {
  CUresult r = mk_enter("cuModuleLoadDataEx");
  if (r != CUDA_SUCCESS)
    return r;
  const char *ptx = image;
  void **log = mk_option(nopts, opts, values, CU_JIT_ERROR_LOG_BUFFER);
  void **logsize = mk_option(nopts, opts, values, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES);
  if (strstr(ptx, "BADPTX")) {
    static const char msg[] = "ptxas application ptx input, line 1; error   : mock: BADPTX\n"
                              "ptxas fatal   : Ptx assembly aborted due to errors\n";
    if (log && logsize) {
      size_t cap = (size_t)(uintptr_t)*logsize;
      size_t n = sizeof msg <= cap ? sizeof msg : cap;
      if (n) {
        memcpy(*log, msg, n);
        ((char *)*log)[n - 1] = '\0';
      }
      *logsize = (void *)(uintptr_t)n; /* the driver reports the bytes written */
    }
    return CUDA_ERROR_INVALID_PTX;
  }
  struct CUmod_st *m = calloc(1, sizeof *m);
  if (!m)
    return CUDA_ERROR_OUT_OF_MEMORY;
  for (const char *p = ptx; (p = strstr(p, ".entry ")) && m->n < 8;) {
    p += strlen(".entry ");
    size_t len = strcspn(p, "( \t\n");
    struct CUfunc_st *f = &m->fn[m->n++];
    snprintf(f->name, sizeof f->name, "%.*s", (int)len, p);
    f->max_threads = 1024;
    f->max_dyn_smem = 48 * 1024;
    f->axpy = strcmp(f->name, "arrayc_mock_axpy") == 0;
    const char *body = strchr(p, '{'), *maxntid = strstr(p, ".maxntid ");
    if (maxntid && (!body || maxntid < body))
      f->max_threads = atoi(maxntid + strlen(".maxntid "));
  }
  if (mk.st.modules == MK_MAX_OBJS) {
    free(m);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  *mod = m;
  mk.mods[mk.st.modules++] = m;
  return CUDA_SUCCESS;
}
CUresult cuModuleLoadDataEx(CUmodule *mod, const void *image, unsigned int nopts,
                            CUjit_option *opts, void **values) {
  MK_LOCKED(mk_load(mod, image, nopts, opts, values));
}

static CUresult mk_getfn(CUfunction *fn, CUmodule mod, const char *name) {
  CUresult r = mk_enter("cuModuleGetFunction");
  if (r != CUDA_SUCCESS)
    return r;
  for (int i = 0; i < mod->n; i++)
    if (strcmp(mod->fn[i].name, name) == 0) {
      *fn = &mod->fn[i];
      return CUDA_SUCCESS;
    }
  return CUDA_ERROR_NOT_FOUND;
}
CUresult cuModuleGetFunction(CUfunction *fn, CUmodule mod, const char *name) {
  MK_LOCKED(mk_getfn(fn, mod, name));
}

static CUresult mk_unload(CUmodule mod) {
  CUresult r = mk_enter("cuModuleUnload");
  int i = mk.st.modules - 1;
  while (i >= 0 && mk.mods[i] != mod)
    i--;
  if (r == CUDA_SUCCESS && i < 0)
    r = CUDA_ERROR_INVALID_HANDLE;
  if (r == CUDA_SUCCESS) {
    free(mod);
    mk.mods[i] = mk.mods[--mk.st.modules];
  }
  return r;
}
CUresult cuModuleUnload(CUmodule mod) {
  MK_LOCKED(mk_unload(mod));
}

/* ---- launches ---- */

/* The extern kernel arrayc_mock_axpy(f32 a, u64 x, i64 nx, u64 y, i64 ny,
 * u64 out, i64 nout) over `threads` threads: out[i] = a * x[i] + y[i] for
 * every i below threads, nout, nx and ny, as a hand-written PTX kernel
 * would (test_extern_kernel.c has one); the arrays must lie in device
 * memory. */
static CUresult mk_axpy(uint64_t threads, void **params) {
  float a;
  CUdeviceptr x, y, out;
  int64_t nx, ny, nout;
  memcpy(&a, params[0], sizeof a);
  memcpy(&x, params[1], sizeof x);
  memcpy(&nx, params[2], sizeof nx);
  memcpy(&y, params[3], sizeof y);
  memcpy(&ny, params[4], sizeof ny);
  memcpy(&out, params[5], sizeof out);
  memcpy(&nout, params[6], sizeof nout);
  int64_t n = nout < nx ? nout : nx;
  n = n < ny ? n : ny;
  if (n <= 0)
    return CUDA_SUCCESS;
  n = (uint64_t)n < threads ? n : (int64_t)threads;
  size_t bytes = (size_t)n * sizeof(float);
  if (!mk_inside(x, bytes) || !mk_inside(y, bytes) || !mk_inside(out, bytes))
    return CUDA_ERROR_ILLEGAL_ADDRESS;
  const float *xs = (const float *)(uintptr_t)x, *ys = (const float *)(uintptr_t)y;
  float *os = (float *)(uintptr_t)out;
  for (int64_t i = 0; i < n; i++)
    os[i] = a * xs[i] + ys[i];
  return CUDA_SUCCESS;
}

static bool mk_launch_shape(CUfunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                            unsigned by, unsigned bz, unsigned smem) {
  return fn && gx && gy == 1 && gz == 1 && bx && by == 1 && bz == 1 &&
         bx <= (unsigned)fn->max_threads && smem <= (unsigned)fn->max_dyn_smem;
}

/* Runs an arrayc kernel (every kernel but the axpy one) as test_cuda's PTX
 * kernel would: frame word 0 = n, word 1 += grid * block. */
static CUresult mk_run(CUfunction fn, unsigned gx, unsigned bx, unsigned smem, void **params) {
  CUdeviceptr frame, ctl;
  int64_t n;
  memcpy(&frame, params[0], sizeof frame);
  memcpy(&ctl, params[1], sizeof ctl);
  memcpy(&n, params[2], sizeof n);
  memcpy(&mk.st.param_mask, params[3], sizeof mk.st.param_mask); /* runtime/gpu.h */
  if (!mk_inside(frame, 16) || (ctl && !mk_inside(ctl, 1)))
    return CUDA_ERROR_ILLEGAL_ADDRESS;
  uint64_t *w = (uint64_t *)(uintptr_t)frame;
  w[0] = (uint64_t)n;
  w[1] += (uint64_t)gx * bx;
  (void)fn;
  mk.st.grid = gx;
  mk.st.block = bx;
  mk.st.smem = smem;
  return CUDA_SUCCESS;
}

static CUresult mk_launch(CUfunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                          unsigned by, unsigned bz, unsigned smem, CUstream s, void **params,
                          void **extra) {
  CUresult r = mk_queue("cuLaunchKernel", s);
  if (r != CUDA_SUCCESS)
    return r;
  if (!mk_launch_shape(fn, gx, gy, gz, bx, by, bz, smem) || !params || extra)
    return CUDA_ERROR_INVALID_VALUE;
  if (fn->axpy) {
    if ((r = mk_axpy((uint64_t)gx * bx, params)) == CUDA_SUCCESS) {
      mk.st.grid = gx;
      mk.st.block = bx;
      mk.st.smem = smem;
    }
  } else {
    r = mk_run(fn, gx, bx, smem, params);
  }
  if (r != CUDA_SUCCESS)
    return r;
  mk.st.launches++;
  return CUDA_SUCCESS;
}
CUresult cuLaunchKernel(CUfunction fn, unsigned int gx, unsigned int gy, unsigned int gz,
                        unsigned int bx, unsigned int by, unsigned int bz, unsigned int smem,
                        CUstream s, void **params, void **extra) {
  MK_LOCKED(mk_launch(fn, gx, gy, gz, bx, by, bz, smem, s, params, extra));
}

/* ---- graphs ---- */

static CUresult mk_graph_create(CUgraph *graph, unsigned int flags) {
  CUresult r = mk_enter("cuGraphCreate");
  if (r == CUDA_SUCCESS && (!graph || flags))
    r = CUDA_ERROR_INVALID_VALUE;
  if (r == CUDA_SUCCESS && !(*graph = calloc(1, sizeof **graph)))
    r = CUDA_ERROR_OUT_OF_MEMORY;
  return r;
}
CUresult cuGraphCreate(CUgraph *graph, unsigned int flags) {
  MK_LOCKED(mk_graph_create(graph, flags));
}

/* Nodes form a chain: each depends on the one added before it (what
 * gpu_cuda.c builds), and the axpy kernel, whose parameters the mock does
 * not keep, cannot be a node. */
static CUresult mk_graph_add(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps,
                             size_t ndeps, const CUDA_KERNEL_NODE_PARAMS_v2 *kp) {
  CUresult r = mk_enter("cuGraphAddKernelNode_v2");
  if (r != CUDA_SUCCESS)
    return r;
  if (!node || !graph || !kp || graph->n == MK_GRAPH_NODES || kp->kern || kp->ctx ||
      !mk_launch_shape(kp->func, kp->gridDimX, kp->gridDimY, kp->gridDimZ, kp->blockDimX,
                       kp->blockDimY, kp->blockDimZ, kp->sharedMemBytes) ||
      !kp->kernelParams || kp->extra || kp->func->axpy ||
      ndeps != (graph->n ? 1u : 0u) || (ndeps && (!deps || deps[0] != &graph->node[graph->n - 1])))
    return CUDA_ERROR_INVALID_VALUE;
  struct CUgraphNode_st *nd = &graph->node[graph->n++];
  nd->fn = kp->func;
  nd->gx = kp->gridDimX;
  nd->bx = kp->blockDimX;
  nd->smem = kp->sharedMemBytes;
  for (int i = 0; i < 4; i++) /* the values are copied now, as the driver does */
    memcpy(&nd->v[i], kp->kernelParams[i], sizeof nd->v[i]);
  *node = nd;
  return CUDA_SUCCESS;
}
CUresult cuGraphAddKernelNode(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps,
                              size_t ndeps, const CUDA_KERNEL_NODE_PARAMS_v2 *kp) {
  MK_LOCKED(mk_graph_add(node, graph, deps, ndeps, kp));
}

static CUresult mk_graph_inst(CUgraphExec *exec, CUgraph graph, unsigned long long flags) {
  CUresult r = mk_enter("cuGraphInstantiateWithFlags");
  if (r == CUDA_SUCCESS && (!exec || !graph || flags))
    r = CUDA_ERROR_INVALID_VALUE;
  if (r == CUDA_SUCCESS && (mk.st.graphs == MK_MAX_OBJS || !(*exec = malloc(sizeof **exec))))
    r = CUDA_ERROR_OUT_OF_MEMORY;
  if (r == CUDA_SUCCESS) {
    (*exec)->n = graph->n;
    memcpy((*exec)->node, graph->node, sizeof graph->node);
    mk.execs[mk.st.graphs++] = *exec;
  }
  return r;
}
CUresult cuGraphInstantiateWithFlags(CUgraphExec *exec, CUgraph graph, unsigned long long flags) {
  MK_LOCKED(mk_graph_inst(exec, graph, flags));
}

static CUresult mk_graph_launch(CUgraphExec exec, CUstream s) {
  CUresult r = mk_queue("cuGraphLaunch", s);
  if (r == CUDA_SUCCESS && !exec)
    r = CUDA_ERROR_INVALID_VALUE;
  for (int i = 0; r == CUDA_SUCCESS && exec && i < exec->n; i++) {
    struct CUgraphNode_st *nd = &exec->node[i];
    void *params[4] = {&nd->v[0], &nd->v[1], &nd->v[2], &nd->v[3]};
    if ((r = mk_run(nd->fn, nd->gx, nd->bx, nd->smem, params)) == CUDA_SUCCESS)
      mk.st.graph_kernels++;
  }
  if (r == CUDA_SUCCESS)
    mk.st.graph_launches++;
  return r;
}
CUresult cuGraphLaunch(CUgraphExec exec, CUstream s) {
  MK_LOCKED(mk_graph_launch(exec, s));
}

static CUresult mk_graph_exec_destroy(CUgraphExec exec) {
  CUresult r = mk_enter("cuGraphExecDestroy");
  int i = mk.st.graphs - 1;
  while (i >= 0 && mk.execs[i] != exec)
    i--;
  if (r == CUDA_SUCCESS && i < 0)
    r = CUDA_ERROR_INVALID_VALUE;
  if (r == CUDA_SUCCESS) {
    free(exec);
    mk.execs[i] = mk.execs[--mk.st.graphs];
  }
  return r;
}
CUresult cuGraphExecDestroy(CUgraphExec exec) {
  MK_LOCKED(mk_graph_exec_destroy(exec));
}

static CUresult mk_graph_destroy(CUgraph graph) {
  CUresult r = mk_enter("cuGraphDestroy");
  if (r == CUDA_SUCCESS && !graph)
    r = CUDA_ERROR_INVALID_VALUE;
  if (r == CUDA_SUCCESS)
    free(graph);
  return r;
}
CUresult cuGraphDestroy(CUgraph graph) {
  MK_LOCKED(mk_graph_destroy(graph));
}

/* Occupancy as a GPU with 2048 threads per SM and a preference for 256. */
static CUresult mk_potential(int *min_grid, int *block, CUfunction fn,
                             CUoccupancyB2DSize smem_of_block, size_t smem, int block_limit) {
  CUresult r = mk_enter("cuOccupancyMaxPotentialBlockSize");
  if (r == CUDA_SUCCESS && (!fn || smem_of_block))
    r = CUDA_ERROR_INVALID_VALUE;
  if (r == CUDA_SUCCESS) {
    int b = fn->max_threads < 256 ? fn->max_threads : 256;
    if (block_limit > 0 && b > block_limit)
      b = block_limit;
    *block = b;
    *min_grid = MK_SMS * (2048 / b);
  }
  return r;
}
CUresult cuOccupancyMaxPotentialBlockSize(int *min_grid, int *block, CUfunction fn,
                                          CUoccupancyB2DSize smem_of_block, size_t smem,
                                          int block_limit) {
  MK_LOCKED(mk_potential(min_grid, block, fn, smem_of_block, smem, block_limit));
}

static CUresult mk_active(int *blocks, CUfunction fn, int block, size_t smem) {
  CUresult r = mk_enter("cuOccupancyMaxActiveBlocksPerMultiprocessor");
  if (r == CUDA_SUCCESS && (!fn || block <= 0 || block > fn->max_threads))
    r = CUDA_ERROR_INVALID_VALUE;
  if (r == CUDA_SUCCESS)
    *blocks = 2048 / block;
  return r;
}
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *blocks, CUfunction fn, int block,
                                                     size_t smem) {
  MK_LOCKED(mk_active(blocks, fn, block, smem));
}

static CUresult mk_fnattr(int *value, CUfunction_attribute attr, CUfunction fn) {
  CUresult r = mk_enter("cuFuncGetAttribute");
  if (r != CUDA_SUCCESS)
    return r;
  switch (attr) {
  case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
    *value = fn->max_threads;
    break;
  case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
    *value = 0;
    break;
  case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
    *value = fn->max_dyn_smem;
    break;
  default:
    return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}
CUresult cuFuncGetAttribute(int *value, CUfunction_attribute attr, CUfunction fn) {
  MK_LOCKED(mk_fnattr(value, attr, fn));
}

static CUresult mk_setattr(CUfunction fn, CUfunction_attribute attr, int value) {
  CUresult r = mk_enter("cuFuncSetAttribute");
  if (r == CUDA_SUCCESS &&
      (attr != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES || value < 0 || value > 227 * 1024))
    r = CUDA_ERROR_INVALID_VALUE;
  if (r == CUDA_SUCCESS)
    fn->max_dyn_smem = value;
  return r;
}
CUresult cuFuncSetAttribute(CUfunction fn, CUfunction_attribute attr, int value) {
  MK_LOCKED(mk_setattr(fn, attr, value));
}
