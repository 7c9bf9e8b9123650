/* lib/ir/blockcache.c: reuse of large array buffers.
 *
 * Compiled code produces a fresh array for every result and every
 * intermediate; for large arrays the cost is then not the kernel but the
 * operating system handing out fresh pages: the first write to each page
 * faults, and on this project's test machines that costs about 3 ms per
 * megabyte, thirty times the cost of writing the memory (a saxpy over 2^24
 * floats took 140 ms instead of 5). GPU runtimes solve the same problem
 * with caching allocators (CUDA's stream-ordered pools, PyTorch's caching
 * allocator); this is the host version: blocks of at least
 * IR_BLOCK_MIN_BYTES that are freed go into a small per-context cache and
 * are handed out again for a request of the same or a slightly smaller
 * size, already mapped.
 *
 * Bounds: at most IR_BLOCK_SLOTS blocks and IR_BLOCK_MAX_TOTAL bytes are
 * kept; a block is reused only for a request of at least half its size, so
 * little memory is wasted. The environment variable ARRAYC_BLOCK_CACHE=0
 * turns the cache off (every block goes back to the allocator at once).
 * Cached blocks belong to the context and are freed with it.
 *
 * Thread safety: arrays are released on any thread, so the cache is
 * guarded by a spin lock (held for a few dozen instructions).
 */
#include "ir.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define IR_BLOCK_SLOTS 16
#define IR_BLOCK_MAX_TOTAL ((size_t)2 << 30)

struct ir_block_cache {
  atomic_flag lock;
  bool enabled;
  size_t total;
  uint64_t clock; /* for evicting the least recently cached block */
  struct {
    void *p;
    size_t bytes;
    uint64_t stamp;
  } slot[IR_BLOCK_SLOTS];
};

static void bc_lock(ir_block_cache *c) {
  while (atomic_flag_test_and_set_explicit(&c->lock, memory_order_acquire))
    ;
}

static void bc_unlock(ir_block_cache *c) {
  atomic_flag_clear_explicit(&c->lock, memory_order_release);
}

ir_block_cache *ir_block_cache_create(ac_context *ctx) {
  ir_block_cache *c = ac_alloc(ctx, sizeof *c);
  if (!c)
    return NULL;
  memset(c, 0, sizeof *c);
  atomic_flag_clear(&c->lock);
  const char *env = getenv("ARRAYC_BLOCK_CACHE");
  c->enabled = !(env && strcmp(env, "0") == 0);
  return c;
}

void ir_block_cache_destroy(ac_context *ctx, ir_block_cache *c) {
  if (!c)
    return;
  for (int i = 0; i < IR_BLOCK_SLOTS; i++)
    ac_free(ctx, c->slot[i].p);
  ac_free(ctx, c);
}

void *ir_block_alloc(ac_context *ctx, size_t bytes) {
  ir_block_cache *c = ir_ctx_block_cache(ctx);
  if (c && c->enabled && bytes >= IR_BLOCK_MIN_BYTES) {
    bc_lock(c);
    int best = -1;
    for (int i = 0; i < IR_BLOCK_SLOTS; i++)
      if (c->slot[i].p && c->slot[i].bytes >= bytes && c->slot[i].bytes / 2 <= bytes &&
          (best < 0 || c->slot[i].bytes < c->slot[best].bytes))
        best = i;
    void *p = NULL;
    if (best >= 0) {
      p = c->slot[best].p;
      c->total -= c->slot[best].bytes;
      c->slot[best].p = NULL;
    }
    bc_unlock(c);
    if (p)
      return p;
  }
  return ac_alloc(ctx, bytes);
}

void ir_block_free(ac_context *ctx, void *p, size_t bytes) {
  ir_block_cache *c = ir_ctx_block_cache(ctx);
  if (!p)
    return;
  if (!c || !c->enabled || bytes < IR_BLOCK_MIN_BYTES || bytes > IR_BLOCK_MAX_TOTAL) {
    ac_free(ctx, p);
    return;
  }
  void *evict[IR_BLOCK_SLOTS];
  int nevict = 0;
  bc_lock(c);
  /* make room: evict the least recently cached blocks until p fits */
  for (;;) {
    int free_slot = -1, oldest = -1;
    for (int i = 0; i < IR_BLOCK_SLOTS; i++) {
      if (!c->slot[i].p)
        free_slot = free_slot < 0 ? i : free_slot;
      else if (oldest < 0 || c->slot[i].stamp < c->slot[oldest].stamp)
        oldest = i;
    }
    if (free_slot >= 0 && c->total + bytes <= IR_BLOCK_MAX_TOTAL) {
      c->slot[free_slot].p = p;
      c->slot[free_slot].bytes = bytes;
      c->slot[free_slot].stamp = ++c->clock;
      c->total += bytes;
      p = NULL;
      break;
    }
    if (oldest < 0)
      break;
    evict[nevict++] = c->slot[oldest].p;
    c->total -= c->slot[oldest].bytes;
    c->slot[oldest].p = NULL;
  }
  bc_unlock(c);
  for (int i = 0; i < nevict; i++)
    ac_free(ctx, evict[i]);
  if (p)
    ac_free(ctx, p);
}
