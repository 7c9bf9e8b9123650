/* test/unit/test_blockcache.c: reuse of large array buffers
 * (lib/ir/blockcache.c): freed blocks of 1 MiB or more come back for
 * requests of the same or a slightly smaller size, the cache evicts its
 * oldest block when full, arrays use it, and contexts with their own
 * allocator do not cache. */
#include "unit.h"

#include "interp/rtarray.h"
#include "ir.h"

#include <stdlib.h>
#include <string.h>

#define MB ((size_t)1 << 20)

UNIT_TEST(freed_block_is_reused) {
  ac_context *ctx = ac_context_create();
  char *p = ir_block_alloc(ctx, 2 * MB);
  CHECK(p != NULL);
  memset(p, 1, 2 * MB);
  ir_block_free(ctx, p, 2 * MB);
  char *q = ir_block_alloc(ctx, 2 * MB);
  CHECK(q == p);
  ir_block_free(ctx, q, 2 * MB);
  /* a slightly smaller request takes it too; half the size or less does not */
  char *r = ir_block_alloc(ctx, 2 * MB - 4096);
  CHECK(r == p);
  ir_block_free(ctx, r, 2 * MB - 4096); /* recorded with the smaller size */
  ac_context_destroy(ctx);
  ctx = ac_context_create();
  char *big = ir_block_alloc(ctx, 8 * MB);
  CHECK(big != NULL);
  ir_block_free(ctx, big, 8 * MB);
  char *small = ir_block_alloc(ctx, 3 * MB); /* under half: a new block */
  CHECK(small != big);
  char *half = ir_block_alloc(ctx, 5 * MB); /* over half: the cached one */
  CHECK(half == big);
  ir_block_free(ctx, small, 3 * MB);
  ir_block_free(ctx, half, 5 * MB);
  ac_context_destroy(ctx);
}

UNIT_TEST(full_cache_evicts_the_oldest) {
  ac_context *ctx = ac_context_create();
  enum { N = 17 };
  char *b[N];
  for (int i = 0; i < N; i++) {
    b[i] = ir_block_alloc(ctx, 2 * MB);
    CHECK(b[i] != NULL);
  }
  for (int i = 0; i < N; i++) /* the 17th free evicts b[0] */
    ir_block_free(ctx, b[i], 2 * MB);
  bool got_last = false, got_first = false;
  char *again[N - 1];
  for (int i = 0; i < N - 1; i++) {
    again[i] = ir_block_alloc(ctx, 2 * MB);
    got_last |= again[i] == b[N - 1];
    got_first |= again[i] == b[0];
  }
  CHECK(got_last);
  CHECK(!got_first);
  for (int i = 0; i < N - 1; i++)
    ir_block_free(ctx, again[i], 2 * MB);
  ac_context_destroy(ctx); /* frees the cached blocks: LeakSanitizer checks */
}

UNIT_TEST(arrays_reuse_buffers) {
  ac_context *ctx = ac_context_create();
  int64_t n = 1 << 20; /* 4 MiB of f32 */
  ac_array *a = NULL;
  CHECK_EQ_INT(rt_array_alloc(ctx, AC_F32, 1, &n, &a), AC_OK);
  const void *data = ac_array_data(a);
  ac_array_release(a);
  ac_array *b = NULL;
  CHECK_EQ_INT(rt_array_alloc(ctx, AC_F32, 1, &n, &b), AC_OK);
  CHECK(ac_array_data(b) == data);
  ac_array_release(b);
  /* a borrowed array's header is not a block: releasing it frees only it */
  float *mine = malloc((size_t)n * sizeof *mine);
  ac_array *c = ac_array_borrow(ctx, AC_F32, 1, &n, mine, NULL, NULL, NULL);
  CHECK(c != NULL);
  ac_array_release(c);
  ac_array *d = NULL;
  CHECK_EQ_INT(rt_array_alloc(ctx, AC_F32, 1, &n, &d), AC_OK);
  CHECK(ac_array_data(d) == data);
  CHECK(ac_array_data(d) != (const void *)mine);
  ac_array_release(d);
  free(mine);
  ac_context_destroy(ctx);
}

/* A user allocator sees every free when it happens. */
typedef struct counting {
  long live;
} counting;

static void *count_realloc(void *ud, void *p, size_t n) {
  counting *c = ud;
  if (!p && n)
    c->live++;
  if (p && !n)
    c->live--;
  if (!n) {
    free(p);
    return NULL;
  }
  return realloc(p, n);
}

UNIT_TEST(own_allocator_does_not_cache) {
  counting cnt = {0};
  ac_context *ctx = ac_context_create_with_allocator(count_realloc, &cnt);
  long base = cnt.live;
  int64_t n = 1 << 20;
  ac_array *a = NULL;
  CHECK_EQ_INT(rt_array_alloc(ctx, AC_F32, 1, &n, &a), AC_OK);
  CHECK(cnt.live == base + 1);
  ac_array_release(a);
  CHECK(cnt.live == base);
  ac_context_destroy(ctx);
  CHECK(cnt.live == 0);
}

UNIT_MAIN(freed_block_is_reused, full_cache_evicts_the_oldest, arrays_reuse_buffers,
          own_allocator_does_not_cache)
