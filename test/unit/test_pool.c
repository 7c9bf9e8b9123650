/* Unit tests of the runtime's thread pool and kernel services
 * (runtime/pool.c, runtime/services.c): the chunk partition of rt.h, that
 * every iteration runs exactly once under concurrency, the inline path,
 * launches from several host threads at once, first-failure-wins error
 * reporting, and the per-thread temporary arena (alignment, LIFO release,
 * limits, reset after each launch). Kernels are plain C functions of type
 * rt_kernel_fn; frame word 0 points at the test's state.
 */
#define _POSIX_C_SOURCE 200809L /* setenv, unsetenv */
#include "runtime/rt.h"
#include "unit.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

/* ---- a counting allocator (live bytes, thread-safe) ---- */

typedef struct counting {
  _Atomic int64_t live; /* outstanding allocations */
} counting;

static void *counting_realloc(void *ud, void *p, size_t n) {
  counting *c = ud;
  if (n == 0) {
    if (p)
      atomic_fetch_sub(&c->live, 1);
    free(p);
    return NULL;
  }
  void *q = realloc(p, n);
  if (q && !p)
    atomic_fetch_add(&c->live, 1);
  return q;
}

/* ---- chunk partition ---- */

typedef struct chunk_rec {
  int64_t lo, hi;
  _Atomic int calls;
} chunk_rec;

static void record_chunk(uint64_t *frame, int64_t chunk, int64_t lo, int64_t hi, rt_tctx *t) {
  chunk_rec *r = (chunk_rec *)(uintptr_t)frame[0];
  r[chunk].lo = lo;
  r[chunk].hi = hi;
  atomic_fetch_add(&r[chunk].calls, 1);
}

static int64_t ref_bound(int64_t k, int64_t n, int64_t c) {
  __extension__ typedef __int128 i128;
  return (int64_t)((i128)k * n / c);
}

static void check_partition(rt_pool *pool, int64_t n, int64_t c) {
  chunk_rec *r = calloc((size_t)c, sizeof *r);
  uint64_t frame[1] = {(uint64_t)(uintptr_t)r};
  rt_call call = {.ctx = NULL};
  atomic_init(&call.failed, 0);
  rt_pool_launch(pool, &call, frame, record_chunk, n, c);
  int bad = 0;
  for (int64_t k = 0; k < c; k++) {
    if (r[k].calls != 1 || r[k].lo != ref_bound(k, n, c) || r[k].hi != ref_bound(k + 1, n, c))
      bad++;
    if (k && r[k].lo != r[k - 1].hi)
      bad++;
  }
  if (bad)
    fprintf(stderr, "partition of n=%lld in c=%lld: %d bad chunks\n", (long long)n, (long long)c,
            bad);
  CHECK_EQ_INT(bad, 0);
  CHECK_EQ_INT(r[0].lo, 0);
  CHECK_EQ_INT(r[c - 1].hi, n);
  free(r);
}

UNIT_TEST(chunk_partition_is_exact) {
  ac_context *ctx = ac_context_create();
  rt_pool *pool = rt_pool_create(ctx, 4);
  CHECK(pool != NULL);
  CHECK_EQ_INT(rt_pool_size(pool), 4);
  static const int64_t cases[][2] = {
      {0, 1},          {0, 7},       {1, 1},        {3, 8},        {7, 3},
      {10, 10},        {11, 10},     {1000003, 7},  {1000003, 97}, {65536, 64},
      {INT64_MAX, 2},  {INT64_MAX, 3}, {INT64_MAX, 13}, {INT64_MAX - 1, 64},
      {INT64_MAX, 1000}, {((int64_t)1 << 62) + 12345, 17},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    check_partition(pool, cases[i][0], cases[i][1]);
  rt_pool_destroy(pool);
  ac_context_destroy(ctx);
}

UNIT_TEST(partition_without_a_pool_runs_every_chunk) {
  /* NULL pool and a pool of one: every chunk on the caller, in order */
  check_partition(NULL, 10, 4);
  ac_context *ctx = ac_context_create();
  rt_pool *one = rt_pool_create(ctx, 1);
  CHECK_EQ_INT(rt_pool_size(one), 1);
  check_partition(one, 5, 9);
  check_partition(one, INT64_MAX, 5);
  rt_pool_destroy(one);
  ac_context_destroy(ctx);
}

/* ---- every iteration exactly once ---- */

typedef struct visit {
  _Atomic unsigned char *seen;
  _Atomic int64_t chunks_run;
} visit;

static void visit_kernel(uint64_t *frame, int64_t chunk, int64_t lo, int64_t hi, rt_tctx *t) {
  visit *v = (visit *)(uintptr_t)frame[0];
  for (int64_t i = lo; i < hi; i++)
    atomic_fetch_add_explicit(&v->seen[i], 1, memory_order_relaxed);
  atomic_fetch_add(&v->chunks_run, 1);
}

UNIT_TEST(every_iteration_once_over_many_launches) {
  ac_context *ctx = ac_context_create();
  rt_pool *pool = rt_pool_create(ctx, 4);
  enum { N = 100003 };
  visit v;
  v.seen = calloc(N, 1);
  uint64_t frame[1] = {(uint64_t)(uintptr_t)&v};
  int bad = 0;
  for (int rep = 0; rep < 200; rep++) {
    int64_t n = N - rep * 37, c = 1 + rep % 61;
    atomic_init(&v.chunks_run, 0);
    rt_call call = {.ctx = ctx};
    atomic_init(&call.failed, 0);
    rt_pool_launch(pool, &call, frame, visit_kernel, n, c);
    if (v.chunks_run != c)
      bad++;
    for (int64_t i = 0; i < N; i++) {
      if (v.seen[i] != (i < n))
        bad++;
      v.seen[i] = 0;
    }
  }
  CHECK_EQ_INT(bad, 0);
  free((void *)v.seen);
  rt_pool_destroy(pool);
  ac_context_destroy(ctx);
}

/* ---- the inline path ---- */

typedef struct who {
  pthread_t caller;
  _Atomic int on_caller, elsewhere;
  int64_t lo, hi, chunk;
  bool slow;
} who;

static void who_kernel(uint64_t *frame, int64_t chunk, int64_t lo, int64_t hi, rt_tctx *t) {
  who *w = (who *)(uintptr_t)frame[0];
  if (pthread_equal(pthread_self(), w->caller))
    atomic_fetch_add(&w->on_caller, 1);
  else
    atomic_fetch_add(&w->elsewhere, 1);
  w->lo = lo;
  w->hi = hi;
  w->chunk = chunk;
  if (w->slow) {
    struct timespec ts = {0, 200000}; /* long enough for a worker to wake up */
    nanosleep(&ts, NULL);
  }
}

UNIT_TEST(one_chunk_runs_inline_on_the_caller) {
  ac_context *ctx = ac_context_create();
  rt_pool *pool = rt_pool_create(ctx, 4);
  static const int64_t chunks[] = {1, 0, -5};
  for (size_t i = 0; i < 3; i++) {
    who w = {.caller = pthread_self()};
    uint64_t frame[1] = {(uint64_t)(uintptr_t)&w};
    rt_call call = {.ctx = ctx};
    atomic_init(&call.failed, 0);
    rt_pool_launch(pool, &call, frame, who_kernel, 1000, chunks[i]);
    CHECK_EQ_INT(w.on_caller, 1);
    CHECK_EQ_INT(w.elsewhere, 0);
    CHECK_EQ_INT(w.chunk, 0);
    CHECK_EQ_INT(w.lo, 0);
    CHECK_EQ_INT(w.hi, 1000);
  }
  /* negative n is no iterations */
  who w = {.caller = pthread_self()};
  uint64_t frame[1] = {(uint64_t)(uintptr_t)&w};
  rt_call call = {.ctx = ctx};
  atomic_init(&call.failed, 0);
  rt_pool_launch(pool, &call, frame, who_kernel, -7, 1);
  CHECK_EQ_INT(w.lo, 0);
  CHECK_EQ_INT(w.hi, 0);
  /* a pool of one thread runs many chunks on the caller too */
  rt_pool *one = rt_pool_create(ctx, 1);
  who w1 = {.caller = pthread_self()};
  frame[0] = (uint64_t)(uintptr_t)&w1;
  rt_pool_launch(one, &call, frame, who_kernel, 100, 8);
  CHECK_EQ_INT(w1.on_caller, 8);
  CHECK_EQ_INT(w1.elsewhere, 0);
  rt_pool_destroy(one);
  rt_pool_destroy(pool);
  ac_context_destroy(ctx);
}

UNIT_TEST(workers_take_part_in_big_launches) {
  /* With many slow chunks, some run off the caller. */
  ac_context *ctx = ac_context_create();
  rt_pool *pool = rt_pool_create(ctx, 3);
  int elsewhere = 0;
  for (int rep = 0; rep < 50 && !elsewhere; rep++) {
    who w = {.caller = pthread_self(), .slow = true};
    uint64_t frame[1] = {(uint64_t)(uintptr_t)&w};
    rt_call call = {.ctx = ctx};
    atomic_init(&call.failed, 0);
    rt_pool_launch(pool, &call, frame, who_kernel, 1 << 20, 64);
    CHECK_EQ_INT(w.on_caller + w.elsewhere, 64);
    elsewhere = w.elsewhere;
  }
  CHECK(elsewhere > 0);
  rt_pool_destroy(pool);
  ac_context_destroy(ctx);
}

/* ---- several host threads launching at once ---- */

typedef struct host_job {
  rt_pool *pool;
  ac_context *ctx;
  int64_t *out; /* out[i] = i * seed for i < n */
  int64_t n, seed;
  int bad;
} host_job;

static void fill_kernel(uint64_t *frame, int64_t chunk, int64_t lo, int64_t hi, rt_tctx *t) {
  int64_t *out = (int64_t *)(uintptr_t)frame[0];
  int64_t seed = (int64_t)frame[1];
  for (int64_t i = lo; i < hi; i++)
    out[i] = i * seed;
}

static void *host_thread(void *arg) {
  host_job *j = arg;
  for (int rep = 0; rep < 100; rep++) {
    int64_t seed = j->seed + rep;
    uint64_t frame[2] = {(uint64_t)(uintptr_t)j->out, (uint64_t)seed};
    rt_call call = {.ctx = j->ctx};
    atomic_init(&call.failed, 0);
    rt_pool_launch(j->pool, &call, frame, fill_kernel, j->n, 1 + rep % 9);
    for (int64_t i = 0; i < j->n; i++)
      if (j->out[i] != i * seed)
        j->bad++;
  }
  return NULL;
}

UNIT_TEST(launches_from_several_host_threads) {
  ac_context *ctx = ac_context_create();
  rt_pool *pool = rt_pool_create(ctx, 4);
  enum { T = 4 };
  host_job jobs[T];
  pthread_t th[T];
  for (int i = 0; i < T; i++) {
    jobs[i] = (host_job){.pool = pool, .ctx = ctx, .n = 5000 + i, .seed = 1000 * i};
    jobs[i].out = calloc((size_t)jobs[i].n, sizeof(int64_t));
    pthread_create(&th[i], NULL, host_thread, &jobs[i]);
  }
  for (int i = 0; i < T; i++) {
    pthread_join(th[i], NULL);
    CHECK_EQ_INT(jobs[i].bad, 0);
    free(jobs[i].out);
  }
  rt_pool_destroy(pool);
  ac_context_destroy(ctx);
}

/* ---- chunk counts and pool size ---- */

UNIT_TEST(chunks_follow_grain_and_pool_size) {
  ac_context *ctx = ac_context_create();
  rt_pool *pool = rt_pool_create(ctx, 3);
  CHECK_EQ_INT(rt_pool_chunks(pool, 0, 100), 1);
  CHECK_EQ_INT(rt_pool_chunks(pool, -5, 100), 1);
  CHECK_EQ_INT(rt_pool_chunks(pool, 100, 100), 1);
  CHECK_EQ_INT(rt_pool_chunks(pool, 101, 100), 2);
  CHECK_EQ_INT(rt_pool_chunks(pool, 1000, 100), 10);
  CHECK_EQ_INT(rt_pool_chunks(pool, 100000, 100), 12); /* 4 * 3 */
  CHECK_EQ_INT(rt_pool_chunks(pool, INT64_MAX, 1), 12);
  CHECK_EQ_INT(rt_pool_chunks(pool, 5, 0), 5); /* grain < 1 counts as 1 */
  CHECK_EQ_INT(rt_pool_chunks(NULL, 1000, 1), 4);
  rt_pool_destroy(pool);
  ac_context_destroy(ctx);
}

UNIT_TEST(thread_count_from_the_environment) {
  ac_context *ctx = ac_context_create();
  setenv("ARRAYC_NUM_THREADS", "3", 1);
  rt_pool *p = rt_pool_create(ctx, 0);
  CHECK_EQ_INT(rt_pool_size(p), 3);
  rt_pool_destroy(p);
  p = rt_pool_create(ctx, 2); /* an explicit size wins */
  CHECK_EQ_INT(rt_pool_size(p), 2);
  rt_pool_destroy(p);
  setenv("ARRAYC_NUM_THREADS", "junk", 1); /* ignored: all cores */
  p = rt_pool_create(ctx, 0);
  CHECK(rt_pool_size(p) >= 1);
  rt_pool_destroy(p);
  unsetenv("ARRAYC_NUM_THREADS");
  ac_context_destroy(ctx);
}

/* ---- failures ---- */

static void fail_kernel(uint64_t *frame, int64_t chunk, int64_t lo, int64_t hi, rt_tctx *t) {
  if (chunk % 2 == 1)
    ac_rt_fail(t, (int32_t)chunk, chunk * 10, chunk * 100);
  if (chunk % 2 == 1 && !ac_rt_failed(t))
    frame[1] = 1; /* must not happen: the call has failed */
}

UNIT_TEST(first_failure_wins) {
  ac_context *ctx = ac_context_create();
  rt_pool *pool = rt_pool_create(ctx, 4);
  for (int rep = 0; rep < 50; rep++) {
    uint64_t frame[2] = {0, 0};
    rt_call call = {.ctx = ctx};
    atomic_init(&call.failed, 0);
    rt_pool_launch(pool, &call, frame, fail_kernel, 1000, 32);
    CHECK_EQ_INT(call.failed, 1);
    CHECK(call.site % 2 == 1);
    CHECK_EQ_INT(call.a, call.site * 10); /* a and b come from the same failure */
    CHECK_EQ_INT(call.b, call.site * 100);
    CHECK_EQ_INT(frame[1], 0);
  }
  rt_pool_destroy(pool);
  ac_context_destroy(ctx);
}

/* ---- the temporary arena ---- */

typedef struct arena_probe {
  int bad;       /* written by chunk 0 only (inline launches) */
  int64_t mark0; /* mark on entry */
} arena_probe;

static void arena_kernel(uint64_t *frame, int64_t chunk, int64_t lo, int64_t hi, rt_tctx *t) {
  arena_probe *pr = (arena_probe *)(uintptr_t)frame[0];
  int bad = 0;
  pr->mark0 = ac_rt_tmp_mark(t);
  int64_t m0 = ac_rt_tmp_mark(t);
  unsigned char *a = ac_rt_tmp_alloc(t, 24, 0);
  bad += ((uintptr_t)a % 16) != 0;
  memset(a, 0xaa, 24);
  int64_t m1 = ac_rt_tmp_mark(t);
  bad += m1 <= m0;
  /* a request larger than the first block moves to a new one */
  unsigned char *big = ac_rt_tmp_alloc(t, (int64_t)3 << 20, 0);
  bad += ((uintptr_t)big % 16) != 0;
  memset(big, 0x55, (size_t)3 << 20);
  unsigned char *c = ac_rt_tmp_alloc(t, 1, 0);
  *c = 7;
  bad += a[23] != 0xaa; /* earlier memory untouched */
  ac_rt_tmp_release(t, m1);
  bad += ac_rt_tmp_mark(t) != m1;
  /* after the release the same space is handed out again */
  unsigned char *big2 = ac_rt_tmp_alloc(t, (int64_t)3 << 20, 0);
  bad += big2 != big;
  unsigned char *zero = ac_rt_tmp_alloc(t, 0, 0);
  bad += zero == NULL;
  ac_rt_tmp_release(t, m0);
  bad += ac_rt_tmp_mark(t) != m0;
  unsigned char *a2 = ac_rt_tmp_alloc(t, 16, 0);
  bad += a2 != a;
  /* leave something allocated: the launch's end must release it */
  ac_rt_tmp_alloc(t, 100000, 0);
  bad += ac_rt_failed(t) != 0;
  pr->bad += bad;
}

UNIT_TEST(arena_is_lifo_aligned_and_reset_per_launch) {
  counting cnt;
  atomic_init(&cnt.live, 0);
  ac_context *ctx = ac_context_create_with_allocator(counting_realloc, &cnt);
  int64_t base = cnt.live;
  arena_probe pr = {0, 0};
  uint64_t frame[1] = {(uint64_t)(uintptr_t)&pr};
  rt_call call = {.ctx = ctx};
  atomic_init(&call.failed, 0);
  for (int rep = 0; rep < 3; rep++) {
    rt_pool_launch(NULL, &call, frame, arena_kernel, 1, 1);
    CHECK_EQ_INT(pr.mark0, 0);
  }
  CHECK_EQ_INT(pr.bad, 0);
  CHECK_EQ_INT(cnt.live, base); /* inline arenas are freed at the end of the launch */
  rt_pool *pool = rt_pool_create(ctx, 3);
  int64_t with_pool = cnt.live;
  int64_t worst = 0;
  for (int rep = 0; rep < 20; rep++) {
    rt_pool_launch(pool, &call, frame, arena_kernel, 3, 3);
    if (cnt.live - with_pool > worst)
      worst = cnt.live - with_pool;
  }
  CHECK_EQ_INT(call.failed, 0);
  CHECK(worst <= 3 * 3); /* each thread keeps at most a few blocks between launches */
  rt_pool_destroy(pool);
  CHECK_EQ_INT(cnt.live, base);
  ac_context_destroy(ctx);
  CHECK_EQ_INT(cnt.live, 0);
}

typedef struct bad_sizes {
  int64_t size;
  int nonzero; /* dummy bytes that were not zero */
} bad_sizes;

static void bad_alloc_kernel(uint64_t *frame, int64_t chunk, int64_t lo, int64_t hi, rt_tctx *t) {
  bad_sizes *b = (bad_sizes *)(uintptr_t)frame[0];
  unsigned char *p = ac_rt_tmp_alloc(t, b->size, 5);
  for (int i = 0; i < 64; i++)
    b->nonzero += p[i] != 0;
  memset(p, 0xff, 64); /* the kernel may scribble on the dummy */
  p = ac_rt_tmp_alloc(t, b->size, 6);
  for (int i = 0; i < 64; i++)
    b->nonzero += p[i] != 0;
}

UNIT_TEST(arena_refuses_absurd_sizes) {
  ac_context *ctx = ac_context_create();
  static const int64_t sizes[] = {-1, INT64_MIN, ((int64_t)1 << 40), INT64_MAX};
  for (size_t i = 0; i < 4; i++) {
    bad_sizes b = {sizes[i], 0};
    uint64_t frame[1] = {(uint64_t)(uintptr_t)&b};
    rt_call call = {.ctx = ctx};
    atomic_init(&call.failed, 0);
    rt_pool_launch(NULL, &call, frame, bad_alloc_kernel, 1, 1);
    CHECK_EQ_INT(call.failed, 1);
    CHECK_EQ_INT(call.site, 5); /* the first failure */
    CHECK_EQ_INT(call.a, sizes[i]);
    CHECK_EQ_INT(call.b, 0);
    CHECK_EQ_INT(b.nonzero, 0);
  }
  ac_context_destroy(ctx);
}

UNIT_TEST(helper_symbols_name_the_services) {
  static const char *const names[] = {"ac_rt_fail",     "ac_rt_failed",      "ac_rt_tmp_alloc",
                                      "ac_rt_tmp_mark", "ac_rt_tmp_release", "ac_rt_yield",
                                      "ac_rt_fail_n"};
  size_t n = 0;
  for (; rt_helper_symbols[n].name; n++) {
    CHECK(n < 7);
    if (n < 7)
      CHECK_STR(rt_helper_symbols[n].name, names[n]);
    CHECK(rt_helper_symbols[n].addr != NULL);
  }
  CHECK_EQ_INT(n, 7);
  CHECK(rt_helper_symbols[6].addr == (void *)(uintptr_t)ac_rt_fail_n);
  CHECK(rt_helper_symbols[5].addr == (void *)(uintptr_t)ac_rt_yield);
  CHECK(rt_helper_symbols[0].addr == (void *)(uintptr_t)ac_rt_fail);
  CHECK(rt_helper_symbols[2].addr == (void *)(uintptr_t)ac_rt_tmp_alloc);
}

UNIT_MAIN(chunk_partition_is_exact, partition_without_a_pool_runs_every_chunk,
          every_iteration_once_over_many_launches, one_chunk_runs_inline_on_the_caller,
          workers_take_part_in_big_launches, launches_from_several_host_threads,
          chunks_follow_grain_and_pool_size, thread_count_from_the_environment,
          first_failure_wins, arena_is_lifo_aligned_and_reset_per_launch,
          arena_refuses_absurd_sizes, helper_symbols_name_the_services)
