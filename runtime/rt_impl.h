/* runtime/rt_impl.h: the runtime's internals shared by pool.c, services.c
 * and plan_exec.c (not for kernels or the compiler, which see only rt.h).
 *
 * A thread context (rt_tctx) is what a kernel receives as its last
 * argument: the call whose error state it reports into, the id of the
 * thread running it (0 = the launching thread, 1.. = pool workers) and that
 * thread's temporary arena. The pool owns one context per worker and one
 * for the thread that launches multi-chunk work; a launch that runs inline
 * (one chunk, or a pool of one thread) uses a context on its own stack, so
 * inline launches from several host threads never share anything.
 *
 * The arena is a chain of blocks with a bump pointer. Positions are
 * LOGICAL offsets that grow monotonically along the chain (a block's base is
 * the previous block's base plus its capacity), so a mark is one int64 and
 * releasing to a mark is finding the block that holds it. Blocks past the
 * current one are kept for reuse after a release; at the end of a launch the
 * arena rewinds to zero and frees blocks beyond a small retained budget, so
 * a steady stream of launches allocates nothing.
 */
#ifndef ARRAYC_RUNTIME_RT_IMPL_H
#define ARRAYC_RUNTIME_RT_IMPL_H

#include "runtime/rt.h"

#include <stddef.h>

typedef struct rt_block rt_block;

typedef struct rt_arena {
  ac_context *ctx; /* allocator of the blocks */
  rt_block *first; /* chain of blocks; NULL until the first allocation */
  rt_block *cur;   /* block holding the current position (NULL: position 0) */
  int64_t grow;    /* capacity of the next regular block */
} rt_arena;

struct rt_tctx {
  rt_call *call;
  unsigned id;
  rt_arena arena;
  /* What a failed ac_rt_tmp_alloc returns: zeroed again on every failure,
   * so a kernel that carries on reads zeros and writes nowhere that matters. */
  _Alignas(16) unsigned char dummy[64];
};

/* A fresh context with an empty arena allocating through ctx. */
void rt_tctx_init(rt_tctx *t, ac_context *ctx, unsigned id);
/* End of a launch: rewinds the arena and frees the blocks beyond the
 * retained budget. */
void rt_arena_reset(rt_arena *a);
/* Frees every block (the context is going away). */
void rt_arena_free(rt_arena *a);

#endif
