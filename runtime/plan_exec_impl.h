/* runtime/plan_exec_impl.h: the plan executor's state, shared by
 * plan_exec.c (the executor) and plan_gpu.c (what differs on a GPU).
 *
 * One executor runs CPU and GPU plans. On a GPU the frame words the host
 * keeps are in DEVICE form (a data word holds a device address) and a copy
 * of the frame lives in device memory, after the call's control block
 * (gpu.h: rt_gctl), where kernels read and write it. Two bits per word keep
 * the copies straight:
 *   PL_W_DIRTY    the host wrote the word since it was last uploaded: it is
 *                 uploaded before the next launch of a kernel that uses it;
 *   PL_W_PENDING  a kernel wrote it (the kernel's `writes`): the host's
 *                 value is stale until fetched. A host read of a pending
 *                 word (pl_wget) synchronises with the device, fetches every
 *                 pending word and the control block in one copy, and
 *                 reports a kernel failure recorded there.
 * So launches are queued without waiting, and the host waits only when it
 * needs a value a kernel computed (a filter's count, a while loop's
 * condition) and at the end of the call.
 */
#ifndef ARRAYC_RUNTIME_PLAN_EXEC_IMPL_H
#define ARRAYC_RUNTIME_PLAN_EXEC_IMPL_H

#include "runtime/gpu.h"
#include "runtime/plan_impl.h"

typedef struct pl_loop {
  int64_t i, hi;
  bool batch; /* GPU: each iteration is a launch batch (pl_gpu_batch_begin) */
} pl_loop;

#define PL_W_DIRTY 1u
#define PL_W_PENDING 2u

/* Device buffers a GPU call keeps for reuse (an iterate step's state). */
#define PL_GPU_SPARE 8

typedef struct pl_exec {
  const pl_plan *p;
  rt_pool *pool;
  uint64_t *frame;
  ac_array **owner; /* per word */
  pl_loop *loops;   /* per instruction (FOR only) */
  rt_call call;
  ac_error *err;
  ac_status st;
  /* GPU (plan_gpu.c); g == NULL on the CPU */
  rt_gpu *g;
  rt_gkernel *const *gk;
  uint8_t *wstate;    /* per word: PL_W_* */
  uint32_t npending;  /* words with PL_W_PENDING */
  uint32_t maxpending;
  rt_dptr dctl;       /* control block, then the device frame */
  bool scoped;        /* the device's scope_enter opened a scope for the call */
  bool ctl_fresh;     /* the device's control block is unwritten (a fresh allocation) */
  bool launched;      /* an arrayc kernel was queued */
  bool failing;       /* pl_fail_at is reading back an earlier kernel's failure */
  bool ctl_clean;     /* the device's control block has `failed` clear and no kernel is
                       * queued after the read-back that saw it (rt_gpu's pool) */
  bool ctl_poolable;  /* dctl has the pool's size */
  rt_gctl ctl;        /* host copy of the control block's settings */
  rt_gtmp *tmp;       /* what the plan needs of temporary memory (pl_run_gpu_tmp) */
  int64_t tmp_given;  /* the most bytes per thread a launch of the call had */
  int64_t tmp_need;   /* the most the kernels asked for (read back from ctl) */
  bool need_sent;     /* the device's ctl.tmp_need holds the call's starting value */
  rt_dptr scratch;    /* zeroed before a launch as its kernel needs (plan.h: scratch, counters) */
  size_t scratch_cap;
  /* Bytes at the start of scratch known to be zero (plan.h's `counters`:
   * kernels that reset their counters leave that prefix zero, and the
   * next such launch needs no memset). */
  uint64_t scratch_zero;
  unsigned batches; /* launch batches open (pl_gpu_batch_begin) */
  /* device buffers of intermediate arrays the call dropped, for its later
   * allocations of the same size (pl_gpu_recycle) */
  struct {
    rt_dptr d;
    size_t bytes;
  } spare[PL_GPU_SPARE];
  uint32_t nspare;
} pl_exec;

/* Evaluates plan expression e (host reads of pending words fetch them). */
int64_t pl_eval_expr(pl_exec *X, uint32_t e);
/* Errors: record and return false. */
bool pl_fail_at(pl_exec *X, ac_status st, uint32_t site, const char *fmt, ...) IR_PRINTF(4, 5);
/* A failure at `site` whose format's k-th %lld prints vals[k] (0 past n). */
bool pl_fail_site(pl_exec *X, uint32_t site, uint32_t n, const int64_t *vals);
/* Records error e of status st (e may be NULL: out of memory or unknown). */
bool pl_fail_err(pl_exec *X, ac_status st, ac_error *e);

/* ---- plan_gpu.c ---- */
/* Fetches every pending word (and checks the control block). */
bool pl_gpu_fetch(pl_exec *X);
static inline uint64_t pl_wget(pl_exec *X, uint32_t w) {
  if (X->wstate && (X->wstate[w] & PL_W_PENDING))
    pl_gpu_fetch(X); /* a failure is in X->st; the executor checks it */
  return X->frame[w];
}
static inline void pl_wset(pl_exec *X, uint32_t w, uint64_t v) {
  X->frame[w] = v;
  if (X->wstate) {
    if (X->wstate[w] & PL_W_PENDING)
      X->npending--;
    X->wstate[w] = PL_W_DIRTY;
  }
}
bool pl_gpu_begin(pl_exec *X);  /* device frame and control block */
void pl_gpu_end(pl_exec *X);    /* frees them (stream-ordered) */
/* a, about to be released by the call: keep its device buffer for reuse if
 * nothing else holds a (rt_resid_take) */
void pl_gpu_recycle(pl_exec *X, ac_array *a);
bool pl_gpu_sync(pl_exec *X);   /* waits for everything; reports a kernel failure */
bool pl_gpu_launch(pl_exec *X, const pl_inst *in);
/* Around one iteration of a loop that may launch two or more kernels
 * (counting an if's larger arm) and holds no loop (rt_gpu_ops.batch_begin/end: the device may launch the
 * iteration's kernels as one CUDA graph). pl_gpu_batch_end reports a
 * failure to launch; pl_gpu_end closes a batch a failure left open. */
bool pl_gpu_batchable(const pl_plan *p, uint32_t pc);
void pl_gpu_batch_begin(pl_exec *X);
bool pl_gpu_batch_end(pl_exec *X);
/* A fresh device array for an ALLOC (extents checked >= 0); with `quiet`
 * (a `try` alloc) a failure returns false and records nothing. */
bool pl_gpu_alloc(pl_exec *X, const pl_inst *in, const int64_t *ext, ac_array **out, rt_dptr *d,
                  bool quiet);
/* A result that is part of an array: a device copy of its `bytes`. */
bool pl_gpu_copy_out(pl_exec *X, ac_scalar sc, uint32_t rank, const int64_t *ext, size_t bytes,
                     uintptr_t src, ac_array **out);
/* chunks(n, grain) on the device. */
int64_t pl_gpu_chunks(pl_exec *X, int64_t n, int64_t grain);

#endif
