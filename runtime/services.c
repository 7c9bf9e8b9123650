/* runtime/services.c: the services compiled kernels call back for.
 *
 * Errors: a kernel that detects a runtime error calls ac_rt_fail. The first
 * failure of a call wins through a compare-exchange on call->failed; the
 * winner alone then stores the site and the values, which the launching
 * thread reads after the launch has joined (the join orders those stores
 * before the read). Later failures, from any chunk, are dropped, so the
 * error reported is one that really happened even when chunks race.
 *
 * Temporary memory: element code that builds arrays takes memory from its
 * thread's arena (rt_impl.h describes the layout) in strict LIFO order:
 * code generation brackets every element that allocates with a mark and a
 * release, so the arena never holds more than one element's arrays per
 * nesting level. Sizes are checked against RT_ARRAY_MAX_BYTES, the same
 * limit host arrays have (lib/interp/rtarray.h), so an absurd request fails
 * the call with the site's message instead of reaching the allocator; on any
 * failure the kernel gets a zeroed 64-byte dummy so it can finish without
 * crashing.
 *
 * rt_helper_symbols gives these functions to the JIT by address, so the
 * library need not export them.
 */
#include "runtime/rt_impl.h"

#include "interp/rtarray.h"

#include <sched.h>
#include <string.h>

/* Blocks start at this size and double; a larger request gets a block of
 * exactly its size. */
#define RT_ARENA_FIRST ((int64_t)64 << 10)
/* Regular blocks stop doubling at this size. */
#define RT_ARENA_MAX_GROW ((int64_t)64 << 20)
/* What an arena keeps across launches (the rest is freed at the reset). */
#define RT_ARENA_KEEP ((int64_t)4 << 20)
#define RT_ARENA_ALIGN 16

struct rt_block {
  rt_block *next;
  int64_t base; /* logical position of mem[0] */
  int64_t cap;  /* usable bytes at mem */
  int64_t used;
  unsigned char *mem; /* RT_ARENA_ALIGN-aligned, inside the same allocation */
};

void rt_tctx_init(rt_tctx *t, ac_context *ctx, unsigned id) {
  t->call = NULL;
  t->id = id;
  t->arena.ctx = ctx;
  t->arena.first = NULL;
  t->arena.cur = NULL;
  t->arena.grow = RT_ARENA_FIRST;
}

/* ---- errors ---- */

void ac_rt_fail(rt_tctx *t, int32_t site, int64_t a, int64_t b) {
  rt_call *c = t->call;
  int32_t expected = 0;
  if (atomic_compare_exchange_strong_explicit(&c->failed, &expected, 1, memory_order_acq_rel,
                                              memory_order_relaxed)) {
    c->site = site;
    c->a = a;
    c->b = b;
    memset(c->more, 0, sizeof c->more);
    c->nomem = false;
  }
}

void ac_rt_fail_n(rt_tctx *t, int32_t site, int32_t n, const int64_t *vals) {
  rt_call *c = t->call;
  int32_t expected = 0;
  if (n > RT_FAIL_VALS)
    n = RT_FAIL_VALS;
  if (atomic_compare_exchange_strong_explicit(&c->failed, &expected, 1, memory_order_acq_rel,
                                              memory_order_relaxed)) {
    c->site = site;
    c->a = n > 0 ? vals[0] : 0;
    c->b = n > 1 ? vals[1] : 0;
    memset(c->more, 0, sizeof c->more);
    for (int32_t k = 2; k < n; k++)
      c->more[k - 2] = vals[k];
    c->nomem = false;
  }
}

void rt_call_values(const rt_call *c, int64_t vals[RT_FAIL_VALS]) {
  vals[0] = c->a;
  vals[1] = c->b;
  memcpy(vals + 2, c->more, sizeof c->more);
}

int32_t ac_rt_failed(rt_tctx *t) {
  return atomic_load_explicit(&t->call->failed, memory_order_relaxed);
}

/* ---- the arena ---- */

static void rt_block_free_chain(ac_context *ctx, rt_block *b) {
  while (b) {
    rt_block *next = b->next;
    ac_free(ctx, b);
    b = next;
  }
}

static rt_block *rt_block_new(ac_context *ctx, int64_t cap) {
  rt_block *b = ac_alloc(ctx, sizeof *b + (size_t)cap + RT_ARENA_ALIGN - 1);
  if (!b)
    return NULL;
  uintptr_t m = (uintptr_t)(b + 1);
  m = (m + RT_ARENA_ALIGN - 1) & ~(uintptr_t)(RT_ARENA_ALIGN - 1);
  b->next = NULL;
  b->base = 0;
  b->cap = cap;
  b->used = 0;
  b->mem = (unsigned char *)b + (m - (uintptr_t)b);
  return b;
}

/* A failed request: too large (the site's own message, "array too large")
 * or, with nomem, no memory for it ("out of memory" at the site's position,
 * AC_ERR_NOMEM, as the interpreter reports a failed allocation). */
static void *rt_tmp_fail(rt_tctx *t, int64_t bytes, int32_t site, bool nomem) {
  rt_call *c = t->call;
  int32_t expected = 0;
  if (atomic_compare_exchange_strong_explicit(&c->failed, &expected, 1, memory_order_acq_rel,
                                              memory_order_relaxed)) {
    c->site = site;
    c->a = bytes;
    c->b = 0;
    memset(c->more, 0, sizeof c->more);
    c->nomem = nomem;
  }
  memset(t->dummy, 0, sizeof t->dummy);
  return t->dummy;
}

void *ac_rt_tmp_alloc(rt_tctx *t, int64_t bytes, int32_t site) {
  if (bytes < 0 || bytes > RT_ARRAY_MAX_BYTES)
    return rt_tmp_fail(t, bytes, site, false);
  rt_arena *a = &t->arena;
  int64_t size = (bytes + RT_ARENA_ALIGN - 1) & ~(int64_t)(RT_ARENA_ALIGN - 1);
  rt_block *cur = a->cur;
  if (cur && cur->cap - cur->used >= size) {
    void *p = cur->mem + cur->used;
    cur->used += size;
    return p;
  }
  if (size == 0)
    return t->dummy; /* nothing to hand out yet: any non-NULL pointer will do */
  /* The request does not fit: move to the next block, reusing the one kept
   * from an earlier release if it is large enough. Blocks past the current
   * one hold nothing alive, so a too-small one is simply replaced. */
  rt_block *next = cur ? cur->next : a->first;
  int64_t base = cur ? cur->base + cur->cap : 0;
  if (!next || next->cap < size) {
    /* Regular blocks grow geometrically with their number; a request larger
     * than that gets a block of its own size, which does not inflate the
     * blocks after it. */
    int64_t cap = a->grow;
    if (cap < RT_ARENA_MAX_GROW)
      a->grow = cap * 2;
    if (cap < size)
      cap = size;
    rt_block *nb = rt_block_new(a->ctx, cap);
    if (!nb)
      return rt_tmp_fail(t, bytes, site, true);
    nb->next = next ? next->next : NULL;
    if (next)
      ac_free(a->ctx, next);
    if (cur)
      cur->next = nb;
    else
      a->first = nb;
    next = nb;
  }
  next->base = base;
  next->used = size;
  a->cur = next;
  return next->mem;
}

int64_t ac_rt_tmp_mark(rt_tctx *t) {
  rt_block *cur = t->arena.cur;
  return cur ? cur->base + cur->used : 0;
}

void ac_rt_tmp_release(rt_tctx *t, int64_t mark) {
  rt_arena *a = &t->arena;
  if (!a->cur || mark >= a->cur->base + a->cur->used)
    return; /* nothing allocated since the mark (or a mark from the future: ignore it) */
  if (mark <= 0) {
    a->cur = a->first;
    a->cur->used = 0;
    return;
  }
  /* Blocks up to the current one have increasing bases: find the last one
   * that starts at or before the mark. */
  rt_block *b = a->first;
  while (b != a->cur && b->next->base <= mark)
    b = b->next;
  a->cur = b;
  b->used = mark - b->base;
}

void rt_arena_reset(rt_arena *a) {
  /* Keep the leading blocks that fit in the budget (usually just the
   * first), so the next launch allocates nothing; one huge request must not
   * pin its memory for the life of the pool. */
  rt_block **link = &a->first;
  int64_t kept = 0;
  while (*link && kept + (*link)->cap <= RT_ARENA_KEEP) {
    kept += (*link)->cap;
    link = &(*link)->next;
  }
  rt_block_free_chain(a->ctx, *link);
  *link = NULL;
  /* the next new block doubles what is kept, as if grown from scratch */
  a->grow = kept > RT_ARENA_FIRST ? kept : RT_ARENA_FIRST;
  a->cur = a->first;
  if (a->first)
    a->first->used = 0;
}

void rt_arena_free(rt_arena *a) {
  rt_block_free_chain(a->ctx, a->first);
  a->first = NULL;
  a->cur = NULL;
}

/* ---- symbols for the JIT ---- */

/* Function addresses go through uintptr_t: ISO C has no direct conversion
 * from a function pointer to void *, but every pointer converts to an
 * integer, and the JIT wants plain addresses. */
void ac_rt_yield(void) {
  sched_yield();
}

const rt_symbol rt_helper_symbols[] = {
    {"ac_rt_fail", (void *)(uintptr_t)ac_rt_fail},
    {"ac_rt_failed", (void *)(uintptr_t)ac_rt_failed},
    {"ac_rt_tmp_alloc", (void *)(uintptr_t)ac_rt_tmp_alloc},
    {"ac_rt_tmp_mark", (void *)(uintptr_t)ac_rt_tmp_mark},
    {"ac_rt_tmp_release", (void *)(uintptr_t)ac_rt_tmp_release},
    {"ac_rt_yield", (void *)(uintptr_t)ac_rt_yield},
    {"ac_rt_fail_n", (void *)(uintptr_t)ac_rt_fail_n},
    {NULL, NULL},
};
