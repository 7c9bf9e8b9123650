/* test/unit/cuda_mock.h: the control interface of the fake CUDA driver
 * (cuda_mock.c) that test_cuda loads through ARRAYC_LIBCUDA.
 *
 * The fake driver implements the entry points of runtime/cuda_drv.h on the
 * host ("device memory" is malloc'd) and checks how they are called: every
 * call that needs a context fails with CUDA_ERROR_INVALID_CONTEXT unless
 * the primary context is current on the calling thread, copies must stay
 * inside live allocations, cuMemFree must not run while work is queued, and
 * so on. The test reaches these functions with dlsym on its own dlopen
 * handle of the same file (so it is the same instance the device uses).
 */
#ifndef ARRAYC_TEST_CUDA_MOCK_H
#define ARRAYC_TEST_CUDA_MOCK_H

#include "runtime/cuda_drv.h"

#include <stdint.h>

typedef struct cuda_mock_stats {
  int inits;               /* successful cuInit calls */
  int allocs;              /* live device allocations */
  int async_allocs;        /* cuMemAllocAsync calls that succeeded (total) */
  int streams, modules;    /* live (the runtime uses no events) */
  int retains;             /* primary context references */
  int depth;               /* context stack depth of the calling thread */
  int launches;            /* successful launches (total) */
  unsigned grid, block;    /* of the last launch */
  unsigned smem;           /* of the last launch */
  uint64_t param_mask;     /* of the last launch of an arrayc kernel: its parameter block's mask */
  uint64_t pool_threshold; /* the pool's release threshold */
  int trims;               /* cuMemPoolTrimTo calls */
  /* successful calls (totals): what a call of a compiled function costs
   * in driver work (test_cuda's iterate_step_driver_calls) */
  int alloc_calls;         /* cuMemAlloc and cuMemAllocAsync */
  int htod, dtoh, dtod;    /* copies */
  uint64_t htod_bytes, dtoh_bytes, dtod_bytes; /* the bytes those copies moved */
  int memsets;             /* cuMemsetD8Async */
  int frees;               /* cuMemFree and cuMemFreeAsync */
  int syncs;               /* cuStreamSynchronize */
  int pushes;              /* cuCtxPushCurrent (total) */
  int pinned;              /* live cuMemHostAlloc blocks */
  int pinned_copies;       /* htod and dtoh whose host side is pinned memory (total) */
  int pinned_races;        /* pinned sources changed before the copy's stream was synchronised */
  int graphs;              /* live executable graphs */
  int graph_launches;      /* cuGraphLaunch (total) */
  int graph_kernels;       /* kernel nodes run by graph launches (total; not in launches) */
  CUresult lost;           /* the sticky error of a lost context (cuda_mock_lose), else 0 */
  int reclaimed;           /* objects a lost context took with it when destroyed (total) */
} cuda_mock_stats;

/* Back to one device with memory pools, no failures (live objects stay). */
typedef void cuda_mock_reset_fn(void);
/* devices: what cuDeviceGetCount says; pools: MEMORY_POOLS_SUPPORTED. */
typedef void cuda_mock_config_fn(int devices, int pools);
/* The next `times` calls of the entry point exported as `sym` (after
 * `skip` calls that succeed) return `code`; times < 0: every call. */
typedef void cuda_mock_fail_fn(const char *sym, CUresult code, int skip, int times);
typedef void cuda_mock_get_stats_fn(cuda_mock_stats *out);
/* The context is lost after the call of the entry point exported as `sym`
 * that follows `skip` others (that call itself succeeds: a kernel's fault
 * shows later, as on a GPU): from then on every call that needs the
 * context returns `code`, as the driver's sticky errors do (pushing and
 * popping it still work). Releasing the last reference to the primary
 * context destroys it with everything in it (allocations, modules,
 * streams, pinned blocks, graphs: st.reclaimed counts them) and the next
 * retain makes a fresh one. sym NULL: lost at once. */
typedef void cuda_mock_lose_fn(const char *sym, CUresult code, int skip);

cuda_mock_reset_fn cuda_mock_reset;
cuda_mock_config_fn cuda_mock_config;
cuda_mock_fail_fn cuda_mock_fail;
cuda_mock_get_stats_fn cuda_mock_get_stats;
cuda_mock_lose_fn cuda_mock_lose;

#endif
