/* runtime/gpu.h: GPU devices, real (CUDA driver) and emulated (SIMT
 * emulator), as the plan executor sees them; and the contract between GPU
 * kernels and the runtime.
 *
 * ---- GPU kernels ---------------------------------------------------------------
 * A GPU kernel (NVPTX or SIMT-emulated; lib/codegen/simt.h makes them) has
 * the signature
 *     void k(uint64_t *frame, rt_gctl *ctl, int64_t n,
 *            uint64_t params[RT_GPU_PARAMS])
 * run by a grid of `grid` blocks of `block` threads (1-D). `frame` is a
 * device copy of the plan's frame words (rt.h layout; an array's data word
 * holds its DEVICE address); the kernel reads the words the plan kernel
 * `uses` and writes the ones it `writes` (plan.h). `n` is the launch's n.
 * `params` is passed BY VALUE (on NVPTX a .param array, copied into the
 * launch by the driver; on the emulator a pointer to host memory that stays
 * valid during the launch): when bit u (u < RT_GPU_PARAMS - 1) of
 * params[0] is set, params[1 + u] holds the value of the kernel's u-th use
 * (uses[u], ascending) and the kernel reads that instead of the frame; when
 * it is clear the kernel reads the word from `frame`. So the words the host
 * knows (scalars, extents, array addresses) reach a kernel with its launch,
 * and need no copy to the device frame: only words a kernel wrote (pending
 * on the device) or will write, and uses past the first 63, are read from
 * the frame. A zero params[0] reads everything from the frame.
 * `ctl` is the launch's control block, in device memory:
 *   - errors: the first failing thread sets `failed` 0 -> 1 with an atomic
 *     compare-and-swap and then stores site, a, b (rt.h's site table and
 *     message values) and, for a message with more numbers, values 2.. in
 *     `more` (rt_call's layout); later failures are ignored. After failing a thread
 *     carries on harmlessly. The runtime reads the block back when it next
 *     synchronises (before any host read of a device-written word and at
 *     the end of the call) and reports the failure then;
 *   - temporary memory (nested array operations in element code): global
 *     thread g owns bytes [tmp + g * tmp_per_thread, + tmp_per_thread); a
 *     request beyond that fails with "temporary memory exhausted"; `dummy`
 *     is the harmless memory handed out after such a failure. Every request
 *     that takes a thread's use (its bump offset after the request) above
 *     `tmp_need` raises `tmp_need` to it (an atomic max), failed requests
 *     included, so the runtime learns how much a thread needs: it sizes
 *     later launches by it and runs a call that ran out again with that
 *     much (plan_gpu.c);
 *   - scratch: at least the kernel's scratch_fixed + grid * scratch_block
 *     bytes (plan.h) of device memory, ZEROED before the launch, for block
 *     partials, tickets, look-back descriptors.
 * Extern kernels (plan.h: a program's hand-written PTX .entry) are not
 * arrayc's: they take their own parameters, by value, and get neither the
 * frame nor the control block (rt_gpu_ops.launch_params).
 *
 * ---- Devices -------------------------------------------------------------------
 * An rt_gpu is one device with one stream: operations are queued in order
 * and run asynchronously; rt_gpu_sync waits for all of them. Two
 * implementations: CUDA (gpu_cuda.c: libcuda.so.1 through dlopen, primary
 * context, a stream per rt_gpu, stream-ordered allocation) and the SIMT
 * emulator (simt_emu.c: "device memory" is host memory, a launch runs the
 * grid's blocks one after another, each thread a coroutine). Everything
 * above the device (the plan executor, array residency) is shared, so the
 * emulator tests it too.
 */
#ifndef ARRAYC_RUNTIME_GPU_H
#define ARRAYC_RUNTIME_GPU_H

#include "runtime/plan.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

typedef uint64_t rt_dptr; /* a device address (emulator: a host address); 0 = none */

/* The control block (device memory, 128 bytes and the extra values of a
 * failure). Offsets are part of the kernel ABI (lib/codegen/cg_gpu.c reads
 * them). */
typedef struct rt_gctl {
  int32_t failed;         /* 0: offset 0 */
  int32_t site;           /* 4 */
  int64_t a, b;           /* 8, 16 */
  uint64_t tmp;           /* 24: device base of temporary memory (0: none) */
  int64_t tmp_per_thread; /* 32: bytes per global thread */
  uint64_t scratch;       /* 40: the launch's scratch, zeroed as plan.h says (0: none) */
  int64_t scratch_bytes;  /* 48 */
  int64_t tmp_need;       /* 56: bytes per thread that temporary memory requests reached */
  uint8_t dummy[64];      /* 64: harmless memory after a failed tmp request */
  int64_t more[RT_FAIL_VALS - 2]; /* 128: a failure's values 2.. (rt.h, ac_rt_fail_n) */
} rt_gctl;
#define RT_GCTL_FAILED 0
#define RT_GCTL_SITE 4
#define RT_GCTL_A 8
#define RT_GCTL_B 16
#define RT_GCTL_TMP 24
#define RT_GCTL_TMP_PER_THREAD 32
#define RT_GCTL_SCRATCH 40
#define RT_GCTL_TMP_NEED 56
#define RT_GCTL_DUMMY 64
#define RT_GCTL_MORE 128

/* Words of a kernel's parameter block: the mask, then up to 63 values
 * (see the kernel signature above). */
#define RT_GPU_PARAMS 64

typedef struct rt_gpu rt_gpu;
typedef struct rt_gkernel rt_gkernel; /* a loaded kernel of some device */

/* What a device can do for a kernel (filled at load time). */
typedef struct rt_glimits {
  unsigned block;      /* preferred threads per block (occupancy calculator), multiple of 32 */
  unsigned max_block;  /* most threads per block the kernel can be launched with */
  unsigned max_grid;   /* blocks that can be resident at once over the whole device */
} rt_glimits;

typedef struct rt_gpu_ops {
  const char *name; /* "cuda" or "simt-emu" */
  void (*destroy)(rt_gpu *g);
  /* Stream-ordered: usable by operations queued after it. */
  ac_status (*alloc)(rt_gpu *g, size_t bytes, rt_dptr *out, ac_error **err);
  /* Stream-ordered free (NULL-safe for 0). Never fails loudly. */
  void (*free)(rt_gpu *g, rt_dptr p);
  /* Queued copies. htod may return before the copy ran, but `src` may be
   * reused as soon as it returns. dtoh returns when the bytes are in dst
   * (it waits for everything queued before it). */
  ac_status (*htod)(rt_gpu *g, rt_dptr dst, const void *src, size_t bytes, ac_error **err);
  ac_status (*dtoh)(rt_gpu *g, void *dst, rt_dptr src, size_t bytes, ac_error **err);
  ac_status (*dtod)(rt_gpu *g, rt_dptr dst, rt_dptr src, size_t bytes, ac_error **err);
  ac_status (*memset0)(rt_gpu *g, rt_dptr dst, size_t bytes, ac_error **err);
  /* Queues k over grid x block threads with `smem` bytes of dynamic shared
   * memory (on top of the kernel's static shared memory); params: the
   * RT_GPU_PARAMS words of its parameter block, copied before it returns
   * (NULL: a zero block). */
  ac_status (*launch)(rt_gpu *g, rt_gkernel *k, unsigned grid, unsigned block, size_t smem,
                      rt_dptr frame, rt_dptr ctl, int64_t n, const uint64_t *params,
                      ac_error **err);
  /* Queues an extern kernel (plan.h: a hand-written PTX .entry) over grid x
   * block threads: params[i] points at the value of parameter i (the
   * driver's kernelParams convention; the values are copied before it
   * returns). A block beyond what the kernel allows is refused with a
   * message naming the kernel. */
  ac_status (*launch_params)(rt_gpu *g, rt_gkernel *k, unsigned grid, unsigned block, void **params,
                             ac_error **err);
  /* Waits for everything queued. */
  ac_status (*sync)(rt_gpu *g, ac_error **err);
  void (*limits)(rt_gpu *g, rt_gkernel *k, rt_glimits *out);
  /* Parallelism for plan `chunks(n, grain)` expressions (resident threads). */
  int64_t (*parallelism)(rt_gpu *g);
  /* Optional (NULL: nothing to do). A scope around many operations from
   * one host thread, such as a whole call of a plan: the CUDA device makes
   * its context current once for the scope instead of once per operation.
   * scope_enter returns true if it opened one, and then exactly one
   * scope_leave on the same thread must follow; scopes nest on one device;
   * operations on other devices inside a scope work as usual. */
  bool (*scope_enter)(rt_gpu *g);
  void (*scope_leave)(rt_gpu *g);
  /* Optional (NULL: launches are queued as they come). A batch around the
   * launches of one iteration of a loop, from one host thread: between
   * batch_begin and batch_end the device may hold back that thread's
   * launches, and batch_end queues what it held, as one CUDA graph when
   * the same launches (kernels, grids, parameters) came before
   * (gpu_cuda.c, "Graphs"). Any other operation of the thread on the
   * device first queues the launches held back, so the stream runs
   * everything in the order of the calls. Pairs nest; batch_end reports
   * a failure to queue any launch of the batch. */
  void (*batch_begin)(rt_gpu *g);
  ac_status (*batch_end)(rt_gpu *g, ac_error **err);
  /* Optional (NULL: the device has none, use malloc). Page-locked host
   * memory for a caller that moves large blocks through it (the
   * distributed layer's staging, dist/staging.c): copies from and to it
   * run at the bus's full speed without the driver staging them. Returns
   * NULL when it cannot (the caller then uses pageable memory);
   * host_free(g, NULL) does nothing. */
  void *(*host_alloc)(rt_gpu *g, size_t bytes);
  void (*host_free)(rt_gpu *g, void *p);
} rt_gpu_ops;

/* Control blocks kept between calls (plan_gpu.c): a call whose plan has
 * at most RT_GPU_CTL_WORDS frame words takes one (a block of
 * sizeof(rt_gctl) + RT_GPU_CTL_WORDS words, `failed` clear) instead of
 * allocating and writing its own, and gives it back when its last
 * read-back found no failure. */
#define RT_GPU_CTL_POOL 4
#define RT_GPU_CTL_WORDS 256

struct rt_gpu {
  const rt_gpu_ops *ops;
  ac_context *ctx;
  /* References: the runtime that created it holds one, and every array with
   * a device copy on it holds one (so device memory outlives neither the
   * device nor the arrays). rt_gpu_release calls ops->destroy at zero. */
  atomic_size_t refs;
  _Atomic rt_dptr ctl_pool[RT_GPU_CTL_POOL]; /* 0: empty (zeroed by the create functions) */
};

/* What both create functions set in a new (zeroed) device (plan_gpu.c):
 * its operations, its context and one reference. */
void rt_gpu_init(rt_gpu *g, const rt_gpu_ops *ops, ac_context *ctx);

/* ---- CUDA (gpu_cuda.c) ----
 * Loads libcuda.so.1, initialises the driver, retains device `ordinal`'s
 * primary context and creates a stream. No driver, no device or a driver
 * error: AC_ERR_UNSUPPORTED with a message that starts "no GPU: " and says
 * which (e.g. "no GPU: libcuda.so.1 not found (is the NVIDIA driver
 * installed?)"). */
ac_status rt_cuda_create(ac_context *ctx, int ordinal, rt_gpu **out, ac_error **err);
/* The device's compute capability (major * 10 + minor, e.g. 90) and the
 * driver's CUDA version (e.g. 12040 for 12.4), for choosing the PTX target. */
void rt_cuda_info(rt_gpu *g, unsigned *sm, int *driver_version, char *name, size_t namelen);
/* Loads a PTX module (NUL-terminated text) and looks up kernels syms[0..n)
 * into out[] (freed with the module: rt_cuda_module_free). A load error
 * carries the driver's JIT log. smem_static[i]: each kernel's static shared
 * bytes (for the occupancy calculator; the driver also knows). */
typedef struct rt_cuda_module rt_cuda_module;
ac_status rt_cuda_load(rt_gpu *g, const char *ptx, const char *const *syms, size_t n,
                       rt_cuda_module **mod, rt_gkernel **out, ac_error **err);
void rt_cuda_module_free(rt_gpu *g, rt_cuda_module *mod);
/* Loads extern kernel k of a plan (k->ptx defines k->symbol) as a module
 * of its own: rt_cuda_load with its one symbol, errors saying which extern
 * kernel's PTX failed (a module the driver rejects is the program's fault:
 * AC_ERR_INVALID, not an internal error). */
ac_status rt_cuda_load_extern(rt_gpu *g, const pl_kernel *k, rt_cuda_module **mod, rt_gkernel **out,
                              ac_error **err);

/* ---- SIMT emulator (simt_emu.c; see simt_emu.h for the kernels' side) ----
 * An emulated device. Its kernels are host functions of the kernel
 * signature above (compiled for the SIMT target by the ORC JIT). */
ac_status rt_emu_create(ac_context *ctx, rt_gpu **out, ac_error **err);
typedef void (*rt_gkernel_fn)(uint64_t *frame, rt_gctl *ctl, int64_t n, const uint64_t *params);
/* Wraps a host function as a kernel of device g; smem: its static shared
 * bytes (the emulator allocates them per block); block: the kernel's fixed
 * block size (0: any). Freed by rt_emu_kernel_free. */
ac_status rt_emu_kernel(rt_gpu *g, rt_gkernel_fn fn, size_t smem, unsigned block,
                        rt_gkernel **out, ac_error **err);
void rt_emu_kernel_free(rt_gpu *g, rt_gkernel *k);
/* rt_emu_kernel for a kernel instrumented for profiling (simt_prof.h):
 * sites[0..nsites) is its module's site table (copied), and its launches
 * count into a profile of its own (sites NULL: rt_emu_kernel). */
typedef struct rt_simt_site rt_simt_site;
typedef struct rt_simt_prof rt_simt_prof;
ac_status rt_emu_kernel_profiled(rt_gpu *g, rt_gkernel_fn fn, size_t smem, unsigned block,
                                 const rt_simt_site *sites, uint32_t nsites, rt_gkernel **out,
                                 ac_error **err);
/* The profile of an emulator kernel made by rt_emu_kernel_profiled, NULL
 * for any other kernel or device. */
rt_simt_prof *rt_emu_kernel_prof(rt_gpu *g, rt_gkernel *k);

/* Both create functions return a device holding one reference. */
static inline void rt_gpu_retain(rt_gpu *g) {
  if (g)
    atomic_fetch_add_explicit(&g->refs, 1, memory_order_relaxed);
}
static inline void rt_gpu_release(rt_gpu *g) {
  if (g && atomic_fetch_sub_explicit(&g->refs, 1, memory_order_acq_rel) == 1) {
    for (unsigned i = 0; i < RT_GPU_CTL_POOL; i++) {
      rt_dptr d = atomic_exchange(&g->ctl_pool[i], 0);
      if (d)
        g->ops->free(g, d);
    }
    g->ops->destroy(g);
  }
}

/* ---- running a GPU plan (plan_gpu.c) ----
 * As pl_run (plan.h), for a plan whose kernels are GPU kernels (the plan's
 * `target gpu`), on device g; kernels[i] is plan kernel i loaded on g.
 * Arguments are made resident on g (array residency, below); results stay
 * on the device until read. */
ac_status pl_run_gpu(const pl_plan *p, rt_gpu *g, rt_gkernel *const *kernels,
                     const ac_datum *args, size_t nargs, ac_datum *results, size_t nresults,
                     ac_error **err);
/* What a plan's kernels have needed of temporary memory per thread on a
 * device, learned from its calls: 0 = nothing known yet, else the bytes
 * plus 1. One per compiled function and device (ac_function), shared by
 * calls on any thread; it only grows. */
typedef struct rt_gtmp {
  _Atomic int64_t need;
  /* A site of the plan where a thread ran short of temporary memory, plus
   * 1 (0: none yet): where a later run that cannot allocate the memory
   * reports it, at the operation that needed it. */
  _Atomic int32_t site;
} rt_gtmp;
/* pl_run_gpu, sizing temporary memory by what *tmp knows (NULL: a fresh
 * rt_gtmp for this call) and teaching it what the call needed. A call
 * whose kernels ran out of temporary memory runs again, from the start,
 * with at least what they asked for (arrayc functions are pure: the
 * arguments are unchanged and the results are new), until it succeeds,
 * fails otherwise, or the memory cannot be allocated. */
ac_status pl_run_gpu_tmp(const pl_plan *p, rt_gpu *g, rt_gkernel *const *kernels, rt_gtmp *tmp,
                         const ac_datum *args, size_t nargs, ac_datum *results, size_t nresults,
                         ac_error **err);

/* ---- array residency (resid.c) ----
 * An ac_array may have a device copy on one rt_gpu besides (or instead of)
 * its host elements. Arrays are immutable once shared, so the copies never
 * disagree: a result computed on the device has a device copy only, and
 * its host elements are fetched the first time anyone reads them
 * (ac_array_data, ac_array_read, a call on another backend). An argument
 * already on the device is not copied again; one on the host is copied
 * when a GPU call needs it and keeps the device copy for later calls. */
/* The device address of a's elements on g, copying them there if needed;
 * *holder gets a reference to the array that owns that device memory (a
 * itself, or, when a's device copy is on another device, a temporary
 * array): the caller keeps it for as long as it uses the address. */
ac_status rt_resid_device(ac_array *a, rt_gpu *g, rt_dptr *out, ac_array **holder,
                          ac_error **err);
/* a's device address on g, or 0 when it has no copy there. */
rt_dptr rt_resid_dptr(const ac_array *a, const rt_gpu *g);
/* The device that holds a's device copy, or NULL when it has none. */
rt_gpu *rt_resid_gpu(const ac_array *a);
/* Frees a's device copy and lazily fetched host elements (array release). */
void rt_resid_drop(ac_array *a);
/* A fresh array whose elements are the device buffer d on g (taken over:
 * freed with the array); its host elements are fetched on first use. */
ac_status rt_resid_wrap(ac_context *ctx, rt_gpu *g, ac_scalar type, unsigned rank,
                        const int64_t *extents, rt_dptr d, ac_array **out, ac_error **err);
/* Takes the device buffer of an array that only its caller holds (one
 * reference), that lives only on g (made there by rt_resid_wrap, its host
 * elements never fetched): *d and its size in *bytes, and true; the array
 * keeps no buffer then (its release frees nothing on the device). Else
 * false and nothing changes. For the plan executor's reuse of the buffers
 * its own intermediate arrays drop (plan_gpu.c). */
bool rt_resid_take(ac_array *a, rt_gpu *g, rt_dptr *d, size_t *bytes);
/* Makes a's host elements valid (fetching them from the device when the
 * array was produced there). Every host-side reader of a->data calls it. */
ac_status rt_resid_host(const ac_array *a, ac_error **err);
/* Whether a's host elements are valid now (an array without a device copy,
 * or one whose host copy was made or fetched), without fetching anything. */
bool rt_resid_host_valid(const ac_array *a);

#endif
