/* test/dist/test_dist_api.c: the distributed layer's C API (arrayc/dist.h)
 * under mpirun -np 1 .. 4 (ctest dist.api.npN).
 *
 * Each check runs on every rank; the failures of all ranks are summed at
 * the end (rank 0 prints the total) and every rank exits non-zero when any
 * failed. Named after the behaviour checked: the partition rule (empty
 * blocks when n < ranks, n = 0), scatter / from_full / from_block / gather
 * round trips of every scalar type from every root, the strategies (a local
 * function sends no array data), collective errors (a run-time error on
 * one rank only reaches every rank as the same error), recurrences in
 * wavefronts pipelined across ranks (the halo rows sent, nothing more) and the CUDA-aware
 * query (false off a GPU, whatever ARRAYC_DIST_CUDA_AWARE says; a value of
 * it other than 0 or 1 fails the creation on every rank). Pinned staging
 * and device transfers on a GPU backend: test_dist_staging.c.
 */
#define _POSIX_C_SOURCE 200809L /* setenv, unsetenv */

#include "arrayc/arrayc.h"
#include "arrayc/dist.h"

#include "unit.h"

static ac_context *ctx;
static ac_dist_runtime *rt;
static int me, nranks;

/* An array of n rows of `inner` elements of type t, element k holding
 * k % 2 for bool, else k + 1 (in the type's own representation). */
static ac_array *make_array(ac_scalar t, int64_t n, int64_t inner, unsigned rank) {
  size_t es = ac_scalar_size(t);
  size_t count = (size_t)(n * (rank > 1 ? inner : 1));
  unsigned char *buf = calloc(count ? count : 1, es);
  for (size_t k = 0; k < count; k++) {
    unsigned char *p = buf + k * es;
    switch (t) {
    case AC_BOOL:
      *p = (unsigned char)(k % 2);
      break;
    case AC_F32: {
      float v = (float)k + 1.5f;
      memcpy(p, &v, 4);
      break;
    }
    case AC_F64: {
      double v = (double)k + 1.5;
      memcpy(p, &v, 8);
      break;
    }
    default: {
      uint64_t v = k + 1;
      memcpy(p, &v, es);
      break;
    } /* little-endian host */
    }
  }
  int64_t ext[2] = {n, inner};
  ac_array *a = ac_array_create(ctx, t, rank, ext, buf, NULL);
  free(buf);
  return a;
}

static bool same_array(const ac_array *a, const ac_array *b) {
  if (!a || !b || ac_array_type(a) != ac_array_type(b) || ac_array_rank(a) != ac_array_rank(b))
    return false;
  for (unsigned d = 0; d < ac_array_rank(a); d++)
    if (ac_array_extents(a)[d] != ac_array_extents(b)[d])
      return false;
  size_t bytes = (size_t)ac_array_size(a) * ac_scalar_size(ac_array_type(a));
  return bytes == 0 || memcmp(ac_array_data(a), ac_array_data(b), bytes) == 0;
}

static void test_partition_rule_covers_rows_in_rank_order(void) {
  for (int64_t n = 0; n <= 11; n++)
    for (int R = 1; R <= 5; R++) {
      int64_t prev = 0;
      for (int r = 0; r < R; r++) {
        int64_t lo, hi;
        ac_dist_partition(n, R, r, &lo, &hi);
        CHECK_EQ_INT(lo, prev);
        CHECK_EQ_INT(lo, r * n / R);
        CHECK(hi - lo == n / R || hi - lo == n / R + 1);
        prev = hi;
      }
      CHECK_EQ_INT(prev, n);
    }
}

/* Every scalar type, ranks 1 and 2 (3 through from_block), several row
 * counts (0, fewer than ranks, more), every root. */
static void test_scatter_gather_round_trip_every_type(void) {
  int64_t sizes[] = {0, 1, nranks - 1, 7};
  for (int t = 0; t < AC_NUM_SCALARS; t++)
    for (unsigned rank = 1; rank <= 2; rank++)
      for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        int64_t n = sizes[s];
        ac_array *full = make_array((ac_scalar)t, n, 3, rank);
        int root = (int)((t + s) % (size_t)nranks);
        ac_dist_array *a = NULL, *b = NULL;
        ac_error *e = NULL;
        CHECK(ac_dist_array_scatter_from(rt, me == root ? full : NULL, root, &a, &e) == AC_OK);
        CHECK(ac_dist_array_from_full(rt, full, &b, &e) == AC_OK);
        if (!a || !b) {
          ac_array_release(full);
          continue;
        }
        int64_t lo, hi;
        ac_dist_partition(n, nranks, me, &lo, &hi);
        CHECK_EQ_INT(ac_array_extents(ac_dist_array_block(a))[0], hi - lo);
        CHECK_EQ_INT(ac_dist_array_extents(a)[0], n);
        CHECK_EQ_INT(ac_dist_array_offsets(a)[me], lo);
        CHECK(same_array(ac_dist_array_block(a), ac_dist_array_block(b)));
        ac_array *back = NULL;
        CHECK(ac_dist_array_gather(rt, a, root, &back, &e) == AC_OK);
        CHECK(me == root ? same_array(back, full) : back == NULL);
        ac_array_release(back);
        back = NULL;
        CHECK(ac_dist_array_gather(rt, b, AC_DIST_ALL, &back, &e) == AC_OK);
        CHECK(same_array(back, full));
        ac_array_release(back);
        ac_dist_array_destroy(a);
        ac_dist_array_destroy(b);
        ac_array_release(full);
      }
}

/* A rank-3 block of a rank-dependent number of rows (rank r: r rows). */
static void test_from_block_sums_lengths(void) {
  int64_t ext[3] = {me, 2, 2};
  ac_array *block = ac_array_create(ctx, AC_I16, 3, ext, NULL, NULL);
  ac_dist_array *a = NULL;
  ac_error *e = NULL;
  CHECK(ac_dist_array_from_block(rt, block, &a, &e) == AC_OK);
  ac_array_release(block);
  if (!a)
    return;
  CHECK_EQ_INT(ac_dist_array_extents(a)[0], (int64_t)nranks * (nranks - 1) / 2);
  CHECK_EQ_INT(ac_dist_array_offsets(a)[me], (int64_t)me * (me - 1) / 2);
  ac_array *full = NULL;
  CHECK(ac_dist_array_gather(rt, a, AC_DIST_ALL, &full, &e) == AC_OK);
  CHECK(full && ac_array_extents(full)[0] == ac_dist_array_extents(a)[0]);
  ac_array_release(full);
  ac_dist_array_destroy(a);
}

/* Inner extents that differ on the last rank: the same error everywhere. */
static void test_from_block_mismatch_fails_on_every_rank(void) {
  int64_t ext[2] = {2, me == nranks - 1 && nranks > 1 ? 4 : 3};
  ac_array *block = ac_array_create(ctx, AC_F32, 2, ext, NULL, NULL);
  ac_dist_array *a = NULL;
  ac_error *e = NULL;
  ac_status st = ac_dist_array_from_block(rt, block, &a, &e);
  ac_array_release(block);
  if (nranks > 1) {
    CHECK(st == AC_ERR_INVALID && a == NULL);
    CHECK(e && strstr(ac_error_message(e), "rank") != NULL);
  } else {
    CHECK(st == AC_OK);
  }
  ac_error_destroy(e);
  ac_dist_array_destroy(a);
}

static const char *program =
    "fn saxpy(a: f32, xs: f32[], ys: f32[]) -> f32[] { map(|x, y| a * x + y, xs, ys) }\n"
    "fn square2(m: f64[,]) -> f64[,] { map(|x| x * x, m) }\n"
    "fn pair(xs: i32[]) -> (i32[], i32[]) { (map(|x| x + 1, xs), map(|x| x * 2, xs)) }\n"
    "fn look(xs: i64[], t: i64[]) -> i64[] { map(|x| t[x], xs) }\n"
    "fn dotp(xs: f32[], ys: f32[]) -> f32 {\n"
    "  fold(|a, b| a + b, 0.0, map(|x, y| x * y, xs, ys))\n"
    "}\n"
    "fn shifted(xs: f32[], b: f32[]) -> f32[] { map(|x| x + b[0], xs) }\n"
    "fn rev(a: i32[]) -> i32[] { reverse(a) }\n"
    "fn at(a: i64[], i: i64) -> i64 { a[i] }\n"
    "fn twice(a: i32[]) -> i32[,] { replicate(2, a) }\n"
    "fn smooth(xs: f32[]) -> f32[] { stencil(|w| w[-1] + w[1], clamp, xs) }\n"
    "fn prefix(xs: i32[]) -> (i32[], i32) {\n"
    "  let s = scan_incl(|a, b| a + b, xs);\n"
    "  (s, fold(|a, b| max(a, b), -2147483648, xs))\n"
    "}\n"
    /* a table read one row and one column back (tiles in column order) */
    "fn table(n: i64, m: i64) -> i64[,] {\n"
    "  rec d (i in 0..n, j in 0..m) -> i64 {\n"
    "    if i == 0 || j == 0 { i * 7 + j }\n"
    "    else { (3 * d[i - 1, j] + d[i, j - 1] + 5 * d[i - 1, j - 1]) % 1000003 }\n"
    "  }\n"
    "}\n"
    /* two rows ahead and one column ahead: rows and tiles from the last */
    "fn suffix(n: i64, m: i64) -> (i32[,], f64[,]) {\n"
    "  rec d (i in 1..=n, j in 1..=m) -> (i32, f64) {\n"
    "    if i >= n - 1 || j == m { (i32(i + 2 * j), f64(i) * 0.5) }\n"
    "    else { ((d[i + 2, j].0 + 2 * d[i + 1, j + 1].0 + d[i, j + 1].0) % 10007,\n"
    "            d[i + 1, j].1 + 0.25 * d[i, j + 1].1) }\n"
    "  }\n"
    "}\n"
    /* the last row reads its input out of range at one column */
    "fn broken(s: i64[], m: i64) -> i64[,] {\n"
    "  rec d (i in 0..len(s), j in 0..m) -> i64 {\n"
    "    if i == 0 || j == 0 { s[i] } else if i == len(s) - 1 && j == m - 2 { s[i + 100] }\n"
    "    else { d[i - 1, j] + d[i, j - 1] }\n"
    "  }\n"
    "}\n";

static ac_module *module(void) {
  ac_module *m = NULL;
  ac_error *e = NULL;
  if (ac_module_parse(ctx, "dist_api.ac", program, strlen(program), &m, &e) != AC_OK) {
    fprintf(stderr, "%s", ac_error_text(e));
    ac_error_destroy(e);
  }
  return m;
}

static ac_dist_function *function(ac_module *m, const char *name, ac_dist_strategy want) {
  ac_dist_function *f = NULL;
  ac_error *e = NULL;
  CHECK(ac_dist_function_create(rt, m, name, &f, &e) == AC_OK);
  ac_error_destroy(e);
  if (f && ac_dist_function_strategy(f) != want) {
    fprintf(stderr, "%s: strategy %d, expected %d\n", name, ac_dist_function_strategy(f), want);
    unit_failed_checks++;
  }
  return f;
}

static ac_dist_datum distribute(ac_array *full) {
  ac_dist_datum d = {AC_DIST_DISTRIBUTED, {0}, NULL};
  CHECK(ac_dist_array_from_full(rt, full, &d.dist, NULL) == AC_OK);
  ac_array_release(full);
  return d;
}

static ac_array *collect(const ac_dist_datum *d) {
  ac_array *full = NULL;
  CHECK(d->kind == AC_DIST_DISTRIBUTED);
  CHECK(ac_dist_array_gather(rt, d->dist, AC_DIST_ALL, &full, NULL) == AC_OK);
  return full;
}

/* Local functions run on the blocks: no array byte is sent by the call,
 * whatever the number of rows (empty blocks too), and the results are
 * those of one process. */
static void test_local_functions_send_no_array_data(ac_module *m) {
  ac_dist_function *f = function(m, "saxpy", AC_DIST_LOCAL);
  ac_dist_function *g = function(m, "square2", AC_DIST_LOCAL);
  ac_dist_function *p = function(m, "pair", AC_DIST_LOCAL);
  if (!f || !g || !p)
    goto done;
  for (int64_t n = 0; n <= 9; n += 3) {
    ac_dist_datum args[3] = {{AC_DIST_SCALAR, {AC_DATUM_SCALAR, AC_F32, {.f = 2.0}, NULL}, NULL},
                             distribute(make_array(AC_F32, n, 1, 1)),
                             distribute(make_array(AC_F32, n, 1, 1))};
    ac_dist_datum res[2];
    uint64_t before = ac_dist_runtime_bytes_sent(rt);
    CHECK(ac_dist_function_call(f, args, 3, res, 1, NULL) == AC_OK);
    CHECK_EQ_INT(ac_dist_runtime_bytes_sent(rt), before);
    ac_array *full = collect(&res[0]);
    for (int64_t k = 0; full && k < n; k++)
      CHECK(((const float *)ac_array_data(full))[k] == 3.0f * ((float)k + 1.5f));
    ac_array_release(full);
    ac_dist_datum_release(&res[0]);
    /* two results partitioned like the argument */
    ac_dist_datum xs = distribute(make_array(AC_I32, n, 1, 1));
    before = ac_dist_runtime_bytes_sent(rt);
    CHECK(ac_dist_function_call(p, &xs, 1, res, 2, NULL) == AC_OK);
    CHECK_EQ_INT(ac_dist_runtime_bytes_sent(rt), before);
    ac_array *a = collect(&res[0]), *b = collect(&res[1]);
    for (int64_t k = 0; a && b && k < n; k++) {
      CHECK_EQ_INT(((const int32_t *)ac_array_data(a))[k], k + 2);
      CHECK_EQ_INT(((const int32_t *)ac_array_data(b))[k], 2 * (k + 1));
    }
    ac_array_release(a);
    ac_array_release(b);
    ac_dist_datum_release(&res[0]);
    ac_dist_datum_release(&res[1]);
    ac_dist_datum_release(&xs);
    /* rank 2 */
    ac_dist_datum mm = distribute(make_array(AC_F64, n, 4, 2));
    before = ac_dist_runtime_bytes_sent(rt);
    CHECK(ac_dist_function_call(g, &mm, 1, res, 1, NULL) == AC_OK);
    CHECK_EQ_INT(ac_dist_runtime_bytes_sent(rt), before);
    full = collect(&res[0]);
    CHECK(full && ac_array_rank(full) == 2 && ac_array_extents(full)[1] == 4);
    for (int64_t k = 0; full && k < 4 * n; k++)
      CHECK(((const double *)ac_array_data(full))[k] == ((double)k + 1.5) * ((double)k + 1.5));
    ac_array_release(full);
    ac_dist_datum_release(&res[0]);
    ac_dist_datum_release(&mm);
    for (int i = 0; i < 3; i++)
      ac_dist_datum_release(&args[i]);
  }
done:
  ac_dist_function_destroy(f);
  ac_dist_function_destroy(g);
  ac_dist_function_destroy(p);
}

/* The sum of a counter over the ranks. */
static uint64_t all_ranks(uint64_t mine) {
  uint64_t sum = 0;
  MPI_Allreduce(&mine, &sum, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  return sum;
}

/* The staged strategy: a fold, a scan and a stencil across ranks send
 * what their algorithms need and no more (no array bytes for a fold or a
 * scan, one halo row each way per boundary between nonempty blocks for a
 * stencil), with the results of one process. */
static void test_staged_functions_send_what_they_need(ac_module *m) {
  ac_dist_function *st = function(m, "smooth", AC_DIST_STAGED);
  ac_dist_function *pf = function(m, "prefix", AC_DIST_STAGED);
  if (!st || !pf)
    goto done;
  for (int64_t n = 0; n <= 11; n += 11) {
    ac_dist_datum xs = distribute(make_array(AC_F32, n, 1, 1));
    ac_dist_datum res[2];
    uint64_t before = all_ranks(ac_dist_runtime_bytes_sent(rt));
    CHECK(ac_dist_function_call(st, &xs, 1, res, 1, NULL) == AC_OK);
    uint64_t sent = all_ranks(ac_dist_runtime_bytes_sent(rt)) - before;
    /* n = 11 >= ranks: every block nonempty, 2 (R - 1) rows of 4 bytes */
    CHECK_EQ_INT(sent, n ? 2 * 4 * (nranks - 1) : 0);
    ac_array *full = collect(&res[0]);
    for (int64_t k = 0; full && k < n; k++) {
      float l = (float)(k > 0 ? k - 1 : 0) + 1.5f, r = (float)(k < n - 1 ? k + 1 : n - 1) + 1.5f;
      CHECK(((const float *)ac_array_data(full))[k] == l + r);
    }
    ac_array_release(full);
    ac_dist_datum_release(&res[0]);
    ac_dist_datum_release(&xs);
    ac_dist_datum is = distribute(make_array(AC_I32, n, 1, 1));
    before = all_ranks(ac_dist_runtime_bytes_sent(rt));
    CHECK(ac_dist_function_call(pf, &is, 1, res, 2, NULL) == AC_OK);
    CHECK_EQ_INT(all_ranks(ac_dist_runtime_bytes_sent(rt)) - before, 0);
    full = collect(&res[0]);
    int32_t run = 0;
    for (int64_t k = 0; full && k < n; k++) {
      run += (int32_t)k + 1;
      CHECK_EQ_INT(((const int32_t *)ac_array_data(full))[k], run);
    }
    CHECK(res[1].kind == AC_DIST_SCALAR);
    CHECK_EQ_INT(res[1].local.s.i, n ? n : INT32_MIN);
    ac_array_release(full);
    ac_dist_datum_release(&res[0]);
    ac_dist_datum_release(&is);
  }
done:
  ac_dist_function_destroy(st);
  ac_dist_function_destroy(pf);
}

/* A fold across ranks (staged) and what is not distributed yet (gather):
 * correct, and every rank has the scalar. */
static void test_gather_strategy_functions(ac_module *m) {
  ac_dist_function *d = function(m, "dotp", AC_DIST_STAGED);
  ac_dist_function *s = function(m, "shifted", AC_DIST_LOCAL);
  ac_dist_function *r = function(m, "rev", AC_DIST_STAGED);
  ac_dist_function *t = function(m, "twice", AC_DIST_GATHER);
  if (!d || !s || !r)
    goto done;
  for (int64_t n = 0; n <= 7; n += 7) {
    ac_dist_datum args[2] = {distribute(make_array(AC_F32, n, 1, 1)),
                             distribute(make_array(AC_F32, n, 1, 1))};
    ac_dist_datum res[1];
    uint64_t sent = ac_dist_runtime_bytes_sent(rt);
    CHECK(ac_dist_function_call(d, args, 2, res, 1, NULL) == AC_OK);
    CHECK_EQ_INT(ac_dist_runtime_bytes_sent(rt), sent); /* local folds: partials only */
    double want = 0;
    for (int64_t k = 0; k < n; k++)
      want += ((double)k + 1.5) * ((double)k + 1.5);
    CHECK(res[0].kind == AC_DIST_SCALAR && res[0].local.s.f == want);
    ac_dist_datum_release(&args[0]);
    ac_dist_datum_release(&args[1]);
    ac_dist_datum ri = distribute(make_array(AC_I32, n, 1, 1));
    CHECK(ac_dist_function_call(r, &ri, 1, res, 1, NULL) == AC_OK);
    ac_array *full = collect(&res[0]);
    for (int64_t k = 0; full && k < n; k++)
      CHECK_EQ_INT(((const int32_t *)ac_array_data(full))[k], n - k);
    ac_array_release(full);
    ac_dist_datum_release(&res[0]);
    /* the gather strategy: replicate needs all of a on every rank */
    CHECK(t && ac_dist_function_call(t, &ri, 1, res, 1, NULL) == AC_OK);
    full = t ? collect(&res[0]) : NULL;
    CHECK(!t || (full && ac_array_rank(full) == 2 && ac_array_extents(full)[0] == 2));
    for (int64_t k = 0; full && k < 2 * n; k++)
      CHECK_EQ_INT(((const int32_t *)ac_array_data(full))[k], k % n + 1);
    ac_array_release(full);
    if (t)
      ac_dist_datum_release(&res[0]);
    ac_dist_datum_release(&ri);
  }
  /* b[0] read inside the map: local when b is replicated, but a call with
   * b distributed runs by the gather strategy (b's rows are sent) */
  ac_dist_datum args[2] = {distribute(make_array(AC_F32, 5, 1, 1)),
                           distribute(make_array(AC_F32, 5, 1, 1))};
  ac_dist_datum res[1];
  uint64_t before = ac_dist_runtime_bytes_sent(rt);
  CHECK(ac_dist_function_call(s, args, 2, res, 1, NULL) == AC_OK);
  CHECK(nranks == 1 || ac_dist_runtime_bytes_sent(rt) > before);
  ac_array *full = collect(&res[0]);
  for (int64_t k = 0; full && k < 5; k++)
    CHECK(((const float *)ac_array_data(full))[k] == (float)k + 1.5f + 1.5f);
  ac_array_release(full);
  ac_dist_datum_release(&res[0]);
  ac_dist_datum_release(&args[0]);
  ac_dist_datum_release(&args[1]);
done:
  ac_dist_function_destroy(d);
  ac_dist_function_destroy(s);
  ac_dist_function_destroy(r);
  ac_dist_function_destroy(t);
}

/* Every rank's error agrees with the others': the lowest failing rank's,
 * compared through its message and position on rank 0. */
static void check_same_error(ac_status st, ac_error *e, const char *want) {
  CHECK(st == AC_ERR_RUNTIME);
  CHECK(e && strstr(ac_error_message(e), want) != NULL);
  if (e && !strstr(ac_error_message(e), want))
    fprintf(stderr, "rank %d: %s", me, ac_error_text(e));
  unsigned pos[2] = {e ? ac_error_line(e) : 0, e ? ac_error_column(e) : 0}, root[2];
  memcpy(root, pos, sizeof pos);
  MPI_Bcast(root, 2, MPI_UNSIGNED, 0, MPI_COMM_WORLD);
  CHECK(pos[0] == root[0] && pos[1] == root[1] && pos[0] > 0);
}

/* A run-time error that only one rank meets comes back from every rank. */
static void test_errors_are_collective(ac_module *m) {
  /* local: an index out of bounds in the last rank's block only */
  ac_dist_function *f = function(m, "look", AC_DIST_LOCAL);
  ac_dist_function *g = function(m, "at", AC_DIST_STAGED);
  if (f) {
    int64_t n = 2 * nranks, vals[64];
    for (int64_t k = 0; k < n; k++)
      vals[k] = k == n - 1 ? 99 : 0;
    int64_t ext[1] = {n}, text[1] = {3};
    ac_dist_datum args[2] = {
        distribute(ac_array_create(ctx, AC_I64, 1, ext, vals, NULL)),
        {AC_DIST_REPLICATED,
         {AC_DATUM_ARRAY, AC_I64, {0}, ac_array_create(ctx, AC_I64, 1, text, NULL, NULL)},
         NULL}};
    ac_dist_datum res[1];
    ac_error *e = NULL;
    ac_status st = ac_dist_function_call(f, args, 2, res, 1, &e);
    check_same_error(st, e, "index 99");
    ac_error_destroy(e);
    ac_dist_datum_release(&args[0]);
    ac_dist_datum_release(&args[1]);
  }
  if (g) {
    /* gather: rank 1 alone asks for an index out of range (a scalar that
     * is not the same on every rank, against the contract, to make one
     * rank fail) */
    ac_dist_datum args[2] = {
        distribute(make_array(AC_I64, 4, 1, 1)),
        {AC_DIST_SCALAR, {AC_DATUM_SCALAR, AC_I64, {.i = me == 1 % nranks ? 100 : 0}, NULL}, NULL}};
    ac_dist_datum res[1];
    ac_error *e = NULL;
    ac_status st = ac_dist_function_call(g, args, 2, res, 1, &e);
    check_same_error(st, e, "index 100");
    ac_error_destroy(e);
    /* and a call that works afterwards: nobody was left waiting */
    args[1].local.s.i = 3;
    CHECK(ac_dist_function_call(g, args, 2, res, 1, NULL) == AC_OK);
    CHECK(res[0].local.s.i == 4);
    ac_dist_datum_release(&args[0]);
  }
  /* a wrong argument kind is the same error everywhere too */
  if (g) {
    ac_dist_datum args[2] = {{AC_DIST_SCALAR, {AC_DATUM_SCALAR, AC_I64, {.i = 1}, NULL}, NULL},
                             {AC_DIST_SCALAR, {AC_DATUM_SCALAR, AC_I64, {.i = 1}, NULL}, NULL}};
    ac_dist_datum res[1];
    ac_error *e = NULL;
    CHECK(ac_dist_function_call(g, args, 2, res, 1, &e) == AC_ERR_INVALID);
    ac_error_destroy(e);
  }
  ac_dist_function_destroy(f);
  ac_dist_function_destroy(g);
}

/* Recurrences of rank 2 are computed in wavefronts pipelined across
 * ranks: each rank holds its rows of the table, and the rows its reads
 * reach (one above; two below) are all that is sent, once per boundary
 * between nonempty blocks; the tables are those of one process (computed
 * here in C), whichever direction the reads look. An error that only the
 * last rank's rows meet, mid-pipeline, is the same error on every rank. */
static void test_recurrences_pipeline_across_ranks(ac_module *m) {
  /* strict: a pipeline that failed would be an error, not a run on full
   * data (which gives the same results) */
  setenv("ARRAYC_DIST_STRICT", "1", 1);
  ac_dist_function *t = function(m, "table", AC_DIST_STAGED);
  ac_dist_function *s = function(m, "suffix", AC_DIST_STAGED);
  unsetenv("ARRAYC_DIST_STRICT");
  ac_dist_function *b = function(m, "broken", AC_DIST_STAGED);
  enum { N = 13, M = 37 };
  static int64_t want[N][M];
  static int32_t wi[N + 3][M + 2];
  static double wf[N + 3][M + 2];
  for (int64_t i = 0; i < N; i++)
    for (int64_t j = 0; j < M; j++)
      want[i][j] = i == 0 || j == 0
                       ? i * 7 + j
                       : (3 * want[i - 1][j] + want[i][j - 1] + 5 * want[i - 1][j - 1]) % 1000003;
  for (int64_t i = N; i >= 1; i--)
    for (int64_t j = M; j >= 1; j--) {
      bool edge = i >= N - 1 || j == M;
      wi[i][j] = edge ? (int32_t)(i + 2 * j)
                      : (wi[i + 2][j] + 2 * wi[i + 1][j + 1] + wi[i][j + 1]) % 10007;
      wf[i][j] = edge ? (double)i * 0.5 : wf[i + 1][j] + 0.25 * wf[i][j + 1];
    }
  ac_dist_datum args[2] = {{AC_DIST_SCALAR, {AC_DATUM_SCALAR, AC_I64, {.i = N}, NULL}, NULL},
                           {AC_DIST_SCALAR, {AC_DATUM_SCALAR, AC_I64, {.i = M}, NULL}, NULL}};
  ac_dist_datum res[2];
  uint64_t before = all_ranks(ac_dist_runtime_bytes_sent(rt));
  bool ok = t && ac_dist_function_call(t, args, 2, res, 1, NULL) == AC_OK;
  CHECK(ok);
  if (ok) {
    /* N >= 4 * ranks: every block has rows; one row of M i64 per boundary */
    CHECK_EQ_INT(all_ranks(ac_dist_runtime_bytes_sent(rt)) - before, (nranks - 1) * M * 8);
    ac_array *full = collect(&res[0]);
    const int64_t *v = full ? ac_array_data(full) : NULL;
    CHECK(full && ac_array_size(full) == N * M);
    for (int64_t k = 0; v && k < N * M; k++)
      CHECK_EQ_INT(v[k], want[k / M][k % M]);
    ac_array_release(full);
    ac_dist_datum_release(&res[0]);
  }
  before = all_ranks(ac_dist_runtime_bytes_sent(rt));
  ok = s && ac_dist_function_call(s, args, 2, res, 2, NULL) == AC_OK;
  CHECK(ok);
  if (ok) {
    /* two rows of M (i32, f64) per boundary, every block at least 3 rows */
    CHECK_EQ_INT(all_ranks(ac_dist_runtime_bytes_sent(rt)) - before, (nranks - 1) * 2 * M * 12);
    ac_array *fi = collect(&res[0]), *ff = collect(&res[1]);
    const int32_t *vi = fi ? ac_array_data(fi) : NULL;
    const double *vf = ff ? ac_array_data(ff) : NULL;
    CHECK(vi && vf && ac_array_size(fi) == N * M && ac_array_size(ff) == N * M);
    for (int64_t k = 0; vi && vf && k < N * M; k++) {
      CHECK_EQ_INT(vi[k], wi[k / M + 1][k % M + 1]);
      CHECK(vf[k] == wf[k / M + 1][k % M + 1]);
    }
    ac_array_release(fi);
    ac_array_release(ff);
    ac_dist_datum_release(&res[0]);
    ac_dist_datum_release(&res[1]);
  }
  if (b) {
    ac_dist_datum bargs[2] = {distribute(make_array(AC_I64, N, 1, 1)), args[1]};
    ac_error *e = NULL;
    ac_status st = ac_dist_function_call(b, bargs, 2, res, 1, &e);
    check_same_error(st, e, "index 112 out of bounds");
    ac_error_destroy(e);
    /* and the pipeline works afterwards: nobody was left waiting */
    bargs[1].local.s.i = 1;
    ok = ac_dist_function_call(b, bargs, 2, res, 1, NULL) == AC_OK;
    CHECK(ok);
    if (ok)
      ac_dist_datum_release(&res[0]);
    ac_dist_datum_release(&bargs[0]);
  }
  ac_dist_function_destroy(t);
  ac_dist_function_destroy(s);
  ac_dist_function_destroy(b);
}

/* Off a GPU no rank passes device memory to MPI, even when told MPI could
 * take it; a malformed override is an error on every rank. */
static void test_cuda_aware_only_on_a_gpu(ac_backend backend) {
  if (backend != AC_BACKEND_GPU)
    CHECK(!ac_dist_runtime_cuda_aware(rt));
  ac_dist_runtime *r2 = NULL;
  ac_error *e = NULL;
  setenv("ARRAYC_DIST_CUDA_AWARE", "1", 1);
  CHECK(ac_dist_runtime_create(ctx, MPI_COMM_WORLD, AC_BACKEND_CPU, &r2, &e) == AC_OK);
  CHECK(r2 && !ac_dist_runtime_cuda_aware(r2));
  ac_dist_runtime_destroy(r2);
  r2 = NULL;
  /* rank 0 alone has a bad value: every rank fails with its error */
  setenv("ARRAYC_DIST_CUDA_AWARE", me == 0 ? "yes" : "0", 1);
  CHECK(ac_dist_runtime_create(ctx, MPI_COMM_WORLD, AC_BACKEND_CPU, &r2, &e) == AC_ERR_INVALID);
  CHECK(r2 == NULL);
  CHECK(e && strstr(ac_error_message(e), "ARRAYC_DIST_CUDA_AWARE is 'yes': it must be 0 or 1"));
  ac_error_destroy(e);
  unsetenv("ARRAYC_DIST_CUDA_AWARE");
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  ctx = ac_context_create();
  ac_error *e = NULL;
  const char *be = getenv("ARRAYC_BACKEND");
  ac_backend backend = AC_BACKEND_CPU;
  if (be && *be)
    ac_backend_from_name(be, &backend);
  if (ac_dist_runtime_create(ctx, MPI_COMM_WORLD, backend, &rt, &e) != AC_OK) {
    fprintf(stderr, "rank %d: %s", me, ac_error_text(e));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  CHECK_EQ_INT(ac_dist_runtime_rank(rt), me);
  CHECK_EQ_INT(ac_dist_runtime_size(rt), nranks);
  CHECK(ac_dist_runtime_local_rank(rt) < ac_dist_runtime_local_size(rt));
  test_partition_rule_covers_rows_in_rank_order();
  test_cuda_aware_only_on_a_gpu(backend);
  test_scatter_gather_round_trip_every_type();
  test_from_block_sums_lengths();
  test_from_block_mismatch_fails_on_every_rank();
  ac_module *m = module();
  CHECK(m != NULL);
  if (m) {
    test_local_functions_send_no_array_data(m);
    test_gather_strategy_functions(m);
    test_staged_functions_send_what_they_need(m);
    test_recurrences_pipeline_across_ranks(m);
    test_errors_are_collective(m);
    ac_module_destroy(m);
  }
  ac_dist_runtime_destroy(rt);
  ac_context_destroy(ctx);
  int failed = 0;
  MPI_Allreduce(&unit_failed_checks, &failed, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (me == 0)
    printf("dist api on %d rank%s: %d failed check%s\n", nranks, nranks == 1 ? "" : "s", failed,
           failed == 1 ? "" : "s");
  MPI_Finalize();
  return failed ? 1 : 0;
}
