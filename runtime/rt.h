/* runtime/rt.h: the runtime's internal contract with compiled kernels.
 *
 * The runtime (everything under runtime/) needs neither LLVM nor the CUDA
 * toolkit: it interprets kernel plans (plan.h), runs CPU kernels on a thread
 * pool, and gives kernels the few services they call back for (errors,
 * temporary memory). The compiler (lib/) produces plans and kernels that
 * follow the conventions below; the ahead-of-time runtime will load the same
 * plans from text.
 *
 * ---- The frame -------------------------------------------------------------
 * A running plan owns a FRAME: an array of 64-bit words (uint64_t), indexed
 * by slot number. Every value the host side of a plan knows lives in frame
 * words, laid out by its type's leaves (ir_ty_leaves order):
 *   - a scalar leaf is ONE word holding the value in its natural C
 *     representation in the word's low bytes (little endian): an f32 is the
 *     float's 4 bytes in bytes 0..3, an i8 is byte 0, a bool is byte 0 (0/1).
 *     The other bytes are unspecified: read exactly the scalar's size.
 *   - an array leaf of rank r is 1 + r words: the data pointer (row-major,
 *     elements of ac_scalar_size bytes; bool elements are bytes 0/1), then
 *     the r extents as int64_t.
 * So a value of type (f32[], i32) occupies 3 words: data, extent, scalar.
 *
 * ---- CPU kernels --------------------------------------------------------------
 * A CPU kernel is a C-callable function of type rt_kernel_fn. A launch of n
 * iterations split into c chunks calls it once per chunk; chunk k covers
 * iterations [lo, hi) = [k*n/c, (k+1)*n/c) exactly (computed in 128-bit or
 * with care against overflow), so a kernel may write per-chunk partial
 * results into a buffer of c entries indexed by `chunk`. Chunks run
 * concurrently on the pool's workers, in any order; a launch returns when
 * every chunk has finished. Kernels read and write the frame directly
 * (scalar results of a one-chunk kernel are stored into frame words).
 *
 * ---- Errors from kernels -----------------------------------------------------
 * A kernel that detects a runtime error (index out of bounds, ...) calls
 * ac_rt_fail(t, site, a, b): `site` indexes the plan's site table, which
 * holds the source position and a printf format taking the two int64
 * values a and b (in that order; a format may use none, one or both, always
 * as %lld). A message with more numbers (a slice's bounds and extent, two
 * shapes of rank 3) is reported with ac_rt_fail_n(t, site, n, vals): the
 * format's k-th %lld prints vals[k], up to RT_FAIL_VALS of them, so
 * compiled code prints every number the interpreter prints. The first
 * failure of a call wins; later ones are ignored. After
 * failing, a kernel carries on with a harmless value (it must not read or
 * write out of bounds) and may stop early; the runtime checks for a failure
 * after each launch and abandons the call with AC_ERR_RUNTIME, the message
 * and the site's position.
 *
 * ---- Temporary memory ----------------------------------------------------------
 * Element code that builds arrays (nested array operations) takes memory
 * from its worker's arena: ac_rt_tmp_alloc. It is released in LIFO order
 * with ac_rt_tmp_mark/ac_rt_tmp_release (code generation brackets each
 * element that allocates), and everything is released when the launch ends.
 * An absurd size fails the call with the site's message ("array too
 * large"), an allocation that fails with "out of memory" (AC_ERR_NOMEM) at
 * the site's position, as the interpreter reports both; either returns a
 * pointer to a small zeroed dummy so the kernel can finish without
 * crashing (it must not use more than 64 bytes of it).
 */
#ifndef ARRAYC_RUNTIME_RT_H
#define ARRAYC_RUNTIME_RT_H

#include "arrayc/arrayc.h"

#include <stdatomic.h>
#include <stdint.h>

typedef struct rt_tctx rt_tctx; /* one per worker thread during a launch */
typedef struct rt_pool rt_pool;
typedef struct rt_call rt_call; /* state of one running plan (first error, frame) */

typedef void (*rt_kernel_fn)(uint64_t *frame, int64_t chunk, int64_t lo, int64_t hi, rt_tctx *t);

/* ---- services for kernels (called from generated code) ----
 * Their addresses are given to the JIT as absolute symbols under these
 * names (rt_helper_symbols). They are exported (AC_API) because kernels
 * compiled ahead of time (host objects, runtime/bundle.h) call them by
 * name: libarrayc_rt defines them for the linker and the dynamic loader. */
AC_API void ac_rt_fail(rt_tctx *t, int32_t site, int64_t a, int64_t b);
/* Most values one failure carries: two shapes of the largest rank
 * (PL_MAX_RANK, plan_impl.h) and two more. */
#define RT_FAIL_VALS 130
/* ac_rt_fail with n values (0 <= n <= RT_FAIL_VALS; more are dropped):
 * vals[0] and vals[1] are a and b, the rest go to rt_call.more. */
AC_API void ac_rt_fail_n(rt_tctx *t, int32_t site, int32_t n, const int64_t *vals);
/* Nonzero once the current call has failed (lets long loops stop early). */
AC_API int32_t ac_rt_failed(rt_tctx *t);
AC_API void *ac_rt_tmp_alloc(rt_tctx *t, int64_t bytes, int32_t site);
AC_API int64_t ac_rt_tmp_mark(rt_tctx *t);
AC_API void ac_rt_tmp_release(rt_tctx *t, int64_t mark);
/* Gives up the processor once (sched_yield): a chunk that waits for an
 * earlier chunk of the same launch (the chained scan of segment offsets)
 * calls it between rounds of polling, so a waiting chunk never holds a core
 * the chunk it waits for needs. */
AC_API void ac_rt_yield(void);

typedef struct rt_symbol {
  const char *name;
  void *addr;
} rt_symbol;
/* The helpers above, NULL-terminated, for the JIT to define. */
extern const rt_symbol rt_helper_symbols[];

/* ---- thread pool ----
 * One pool per runtime; workers are created once and sleep between
 * launches. A pool of 1 thread runs everything on the caller, and so does a
 * NULL pool (size 1) in the functions below. nthreads 0 = all online cores,
 * or ARRAYC_NUM_THREADS when that environment variable is a positive
 * number. n < 0 counts as 0 iterations and chunks < 1 as 1 chunk. */
rt_pool *rt_pool_create(ac_context *ctx, unsigned nthreads); /* 0 = all cores */
void rt_pool_destroy(rt_pool *p);
unsigned rt_pool_size(const rt_pool *p);
/* Number of chunks to use for n iterations when each chunk should hold at
 * least `grain` of them: max(1, min(ceil(n / grain), 4 * pool size)). */
int64_t rt_pool_chunks(const rt_pool *p, int64_t n, int64_t grain);
/* Runs fn over n iterations in `chunks` chunks (as described above) and
 * waits. chunks <= 1 runs on the calling thread without waking anyone.
 * Launches from several host threads at once are serialised (the pool is
 * shared); the call's error state is in `call`. */
void rt_pool_launch(rt_pool *p, rt_call *call, uint64_t *frame, rt_kernel_fn fn, int64_t n,
                    int64_t chunks);

/* ---- calls ---- */
struct rt_call {
  ac_context *ctx;
  _Atomic int32_t failed;     /* 0, or 1 once a failure is recorded */
  int32_t site;               /* first failure */
  int64_t a, b;               /* its values */
  int64_t more[RT_FAIL_VALS - 2]; /* values 2.. (ac_rt_fail_n; unset ones are 0) */
  bool nomem; /* the failure is an allocation that failed: "out of memory" at the site's
                 position (AC_ERR_NOMEM) instead of the site's message */
};
/* The values of c's failure in order: a, b, then more. */
void rt_call_values(const rt_call *c, int64_t vals[RT_FAIL_VALS]);

#endif
