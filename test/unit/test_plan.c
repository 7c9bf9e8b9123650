/* Unit tests of kernel plans (runtime/plan.c, plan_text.c, plan_exec.c):
 * plans built by hand with kernels written in C (rt_kernel_fn, reading and
 * writing the frame as rt.h lays it out) and run by pl_run on real arrays:
 * a saxpy, per-chunk partial sums, host loops with assign (no leaks, counted
 * by an allocator hook), while/break, if/else, views and result hand-out,
 * checks and kernel failures with their messages and positions, negative
 * and overflowing extents, zero-size arrays, scalar words of every type,
 * the i64 expression semantics, concurrent calls; then the text form:
 * print -> parse -> pl_equal -> print against a golden text (and one of a
 * GPU plan with extern kernels, plus a PTX module of hundreds of KB), a
 * table of malformed texts with their FILE:LINE:COL messages, and a
 * mutation sweep that must never crash the parser; the checks of extern
 * kernels (pl_finish). Running extern kernels: test_extern_kernel.c.
 */
#include "runtime/plan.h"
#include "unit.h"

#include <pthread.h>
#include <stdlib.h>

/* ---- helpers ---- */

typedef struct counting {
  _Atomic int64_t live;
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

static float word_f32(uint64_t w) {
  uint32_t bits = (uint32_t)w;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

#define PTR(T, w) ((T *)(uintptr_t)(w))

static ac_datum arr_datum(ac_array *a) {
  ac_datum d;
  memset(&d, 0, sizeof d);
  d.kind = AC_DATUM_ARRAY;
  d.type = ac_array_type(a);
  d.array = a;
  return d;
}

static ac_datum scalar_i(ac_scalar t, int64_t v) {
  ac_datum d;
  memset(&d, 0, sizeof d);
  d.kind = AC_DATUM_SCALAR;
  d.type = t;
  d.s.i = v;
  return d;
}

/* Finishes p and checks it worked. */
static void finish(pl_plan *p) {
  ac_error *err = NULL;
  CHECK_EQ_INT(pl_finish(p, &err), AC_OK);
  if (err) {
    fprintf(stderr, "%s", ac_error_text(err));
    ac_error_destroy(err);
  }
}

/* The first line of an error's text. */
static const char *first_line(const ac_error *e, char *buf, size_t n) {
  const char *t = ac_error_text(e);
  size_t len = strcspn(t, "\n");
  if (len >= n)
    len = n - 1;
  memcpy(buf, t, len);
  buf[len] = 0;
  return buf;
}

static void check_error(ac_status st, ac_error *err, ac_status want, const char *line) {
  char buf[256];
  CHECK_EQ_INT(st, want);
  CHECK(err != NULL);
  if (err)
    CHECK_STR(first_line(err, buf, sizeof buf), line);
  ac_error_destroy(err);
}

/* ---- saxpy ---- */

/* z = a * x + y; frame: x %0 %1, y %2 %3, a %4, z %5 %6 */
static void saxpy_kernel(uint64_t *f, int64_t chunk, int64_t lo, int64_t hi, rt_tctx *t) {
  const float *x = PTR(const float, f[0]), *y = PTR(const float, f[2]);
  float a = word_f32(f[4]), *z = PTR(float, f[5]);
  for (int64_t i = lo; i < hi; i++)
    z[i] = a * x[i] + y[i];
}

static pl_plan *saxpy_plan(ac_context *ctx) {
  pl_plan *p = pl_create(ctx, "saxpy", "test.ac");
  uint32_t x = pl_slots(p, 2), y = pl_slots(p, 2), a = pl_slots(p, 1), z = pl_slots(p, 2);
  pl_param(p, x, AC_F32, 1);
  pl_param(p, y, AC_F32, 1);
  pl_param(p, a, AC_F32, 0);
  pl_result(p, z, AC_F32, 1);
  uint32_t s0 = pl_site_add(p, 3, 7, "map: arrays have different shapes: %lld and %lld");
  uint32_t k = pl_kernel_add(p, "map", "saxpy_k0", 1000);
  uint32_t uses[] = {z + 1, x, z, y, a, x + 1, y + 1, x}; /* unsorted, one twice */
  for (size_t i = 0; i < sizeof uses / sizeof uses[0]; i++)
    pl_kernel_use(p, k, uses[i]);
  uint32_t nx = pl_x_word(p, x + 1), ny = pl_x_word(p, y + 1);
  pl_check(p, pl_x_bin(p, PX_EQ, nx, ny), s0, nx, ny);
  pl_alloc(p, z, AC_F32, 1, &nx, PL_AUTO);
  pl_launch(p, k, nx, PL_AUTO);
  finish(p);
  return p;
}

static const rt_kernel_fn saxpy_kernels[] = {saxpy_kernel};

UNIT_TEST(saxpy_runs_on_the_pool) {
  ac_context *ctx = ac_context_create();
  rt_pool *pool = rt_pool_create(ctx, 4);
  pl_plan *p = saxpy_plan(ctx);
  CHECK_EQ_INT(p->kernels[0].nuses, 7);
  for (uint32_t i = 0; i < 7; i++)
    CHECK_EQ_INT(p->kernels[0].uses[i], i);
  enum { N = 100003 };
  float *xs = malloc(N * sizeof *xs), *ys = malloc(N * sizeof *ys);
  for (int i = 0; i < N; i++) {
    xs[i] = (float)(i % 1000);
    ys[i] = (float)(i % 7);
  }
  int64_t n = N;
  ac_array *x = ac_array_create(ctx, AC_F32, 1, &n, xs, NULL);
  ac_array *y = ac_array_create(ctx, AC_F32, 1, &n, ys, NULL);
  ac_datum args[3] = {arr_datum(x), arr_datum(y), {.kind = AC_DATUM_SCALAR, .type = AC_F32}};
  args[2].s.f = 2.5;
  ac_datum res;
  ac_error *err = NULL;
  CHECK_EQ_INT(pl_run(p, pool, saxpy_kernels, args, 3, &res, 1, &err), AC_OK);
  CHECK(err == NULL);
  CHECK_EQ_INT(res.kind, AC_DATUM_ARRAY);
  CHECK_EQ_INT(ac_array_size(res.array), N);
  const float *z = ac_array_data(res.array);
  int bad = 0;
  for (int i = 0; i < N; i++)
    bad += z[i] != 2.5f * xs[i] + ys[i];
  CHECK_EQ_INT(bad, 0);
  ac_datum_release(&res);

  /* different lengths: the check fails at site 0 with both extents */
  int64_t m = 5;
  ac_array *y5 = ac_array_create(ctx, AC_F32, 1, &m, NULL, NULL);
  args[1] = arr_datum(y5);
  ac_status st = pl_run(p, pool, saxpy_kernels, args, 3, &res, 1, &err);
  CHECK_EQ_INT(ac_error_line(err), 3);
  CHECK_EQ_INT(ac_error_column(err), 7);
  CHECK_STR(ac_error_file(err), "test.ac");
  check_error(st, err, AC_ERR_RUNTIME,
              "test.ac:3:7: error: map: arrays have different shapes: 100003 and 5");
  CHECK(res.array == NULL);
  ac_array_release(y5);
  ac_array_release(x);
  ac_array_release(y);
  free(xs);
  free(ys);
  pl_destroy(p);
  rt_pool_destroy(pool);
  ac_context_destroy(ctx);
}

/* A check with more than two values (pl_check_n): the message prints every
 * one, in order, and a value used twice is passed twice. */
UNIT_TEST(check_with_many_values) {
  ac_context *ctx = ac_context_create();
  pl_plan *p = pl_create(ctx, "many", "test.ac");
  uint32_t x = pl_slots(p, 2);
  pl_param(p, x, AC_F32, 1);
  uint32_t s = pl_site_add(p, 2, 5, "bounds %lld..%lld out of range for extent %lld (%lld%%)");
  uint32_t n = pl_x_word(p, x + 1);
  uint32_t vals[4] = {pl_x_const(p, -1), pl_x_bin(p, PX_ADD, n, pl_x_const(p, 2)), n, n};
  pl_check_n(p, pl_x_bin(p, PX_LT, n, pl_x_const(p, 3)), s, 4, vals);
  finish(p);
  int64_t m = 4;
  ac_array *a = ac_array_create(ctx, AC_F32, 1, &m, NULL, NULL);
  ac_datum arg = arr_datum(a);
  ac_error *err = NULL;
  ac_status st = pl_run(p, NULL, NULL, &arg, 1, NULL, 0, &err);
  check_error(st, err, AC_ERR_RUNTIME,
              "test.ac:2:5: error: bounds -1..6 out of range for extent 4 (4%)");
  ac_array_release(a);
  pl_destroy(p);
  ac_context_destroy(ctx);
}

/* ---- per-chunk partial sums ---- */

/* x %0 %1, c %2, partial %3 %4, s %5 */
static void partial_kernel(uint64_t *f, int64_t chunk, int64_t lo, int64_t hi, rt_tctx *t) {
  const int64_t *x = PTR(const int64_t, f[0]);
  int64_t *part = PTR(int64_t, f[3]), s = 0;
  for (int64_t i = lo; i < hi; i++)
    s += x[i];
  part[chunk] = s;
}

static void combine_kernel(uint64_t *f, int64_t chunk, int64_t lo, int64_t hi, rt_tctx *t) {
  const int64_t *part = PTR(const int64_t, f[3]);
  int64_t s = 0;
  for (int64_t i = 0; i < (int64_t)f[4]; i++)
    s += part[i];
  f[5] = (uint64_t)s;
}

UNIT_TEST(partial_sums_use_the_chunk_index) {
  ac_context *ctx = ac_context_create();
  rt_pool *pool = rt_pool_create(ctx, 4);
  pl_plan *p = pl_create(ctx, "sum", "sum.ac");
  pl_slots(p, 6);
  pl_param(p, 0, AC_I64, 1);
  pl_result(p, 5, AC_I64, 0);
  pl_result(p, 2, AC_I64, 0);
  uint32_t k0 = pl_kernel_add(p, "fold.partial", "sum_k0", 1000);
  uint32_t k1 = pl_kernel_add(p, "fold.combine", "sum_k1", 1);
  pl_kernel_write(p, k1, 5); /* s: a word read (a result) is written somewhere */
  uint32_t n = pl_x_word(p, 1), c = pl_x_word(p, 2), one = pl_x_const(p, 1);
  pl_set(p, 2, pl_x_bin(p, PX_CHUNKS, n, pl_x_const(p, 1000)));
  pl_alloc(p, 3, AC_I64, 1, &c, PL_AUTO);
  pl_launch(p, k0, n, c);
  pl_launch(p, k1, one, one);
  pl_free(p, 3);
  finish(p);
  rt_kernel_fn ks[] = {partial_kernel, combine_kernel};
  static const int64_t sizes[] = {0, 1, 999, 1000, 1001, 123457};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    int64_t len = sizes[s], want = 0;
    int64_t *xs = malloc((size_t)(len ? len : 1) * sizeof *xs);
    for (int64_t i = 0; i < len; i++) {
      xs[i] = (i * 7919) % 1013 - 500;
      want += xs[i];
    }
    ac_array *x = ac_array_create(ctx, AC_I64, 1, &len, xs, NULL);
    ac_datum arg = arr_datum(x), res[2];
    CHECK_EQ_INT(pl_run(p, pool, ks, &arg, 1, res, 2, NULL), AC_OK);
    CHECK_EQ_INT(res[0].s.i, want);
    CHECK_EQ_INT(res[1].s.i, rt_pool_chunks(pool, len, 1000));
    ac_array_release(x);
    free(xs);
  }
  pl_destroy(p);
  rt_pool_destroy(pool);
  ac_context_destroy(ctx);
}

/* ---- loops ---- */

/* n %0, s %1 %2, next %3 %4, it %5 */
static void init_kernel(uint64_t *f, int64_t chunk, int64_t lo, int64_t hi, rt_tctx *t) {
  double *s = PTR(double, f[1]);
  for (int64_t i = lo; i < hi; i++)
    s[i] = (double)i;
}

static void step_kernel(uint64_t *f, int64_t chunk, int64_t lo, int64_t hi, rt_tctx *t) {
  const double *s = PTR(const double, f[1]);
  double *nx = PTR(double, f[3]);
  for (int64_t i = lo; i < hi; i++)
    nx[i] = s[i] * 2 + (double)(int64_t)f[5];
}

UNIT_TEST(for_loop_with_assign_does_not_leak) {
  counting cnt;
  atomic_init(&cnt.live, 0);
  ac_context *ctx = ac_context_create_with_allocator(counting_realloc, &cnt);
  rt_pool *pool = rt_pool_create(ctx, 3);
  pl_plan *p = pl_create(ctx, "iter", "iter.ac");
  pl_slots(p, 6);
  pl_param(p, 0, AC_I64, 0);
  pl_result(p, 1, AC_F64, 1);
  uint32_t k0 = pl_kernel_add(p, "map", "init", 100);
  uint32_t k1 = pl_kernel_add(p, "map", "step", 100);
  uint32_t n = pl_x_word(p, 0), len = pl_x_word(p, 2);
  pl_alloc(p, 1, AC_F64, 1, &n, PL_AUTO);
  pl_launch(p, k0, n, PL_AUTO);
  pl_for(p, 5, pl_x_const(p, 0), pl_x_const(p, 10));
  pl_alloc(p, 3, AC_F64, 1, &len, PL_AUTO);
  pl_launch(p, k1, len, PL_AUTO);
  pl_assign(p, 1, 3, AC_F64, 1);
  pl_end(p);
  finish(p);
  rt_kernel_fn ks[] = {init_kernel, step_kernel};
  int64_t before = cnt.live;
  ac_datum arg = scalar_i(AC_I64, 1000), res;
  CHECK_EQ_INT(pl_run(p, pool, ks, &arg, 1, &res, 1, NULL), AC_OK);
  const double *s = ac_array_data(res.array);
  int bad = 0;
  for (int64_t i = 0; i < 1000; i++) {
    double want = (double)i;
    for (int it = 0; it < 10; it++)
      want = want * 2 + it;
    bad += s[i] != want;
  }
  CHECK_EQ_INT(bad, 0);
  CHECK_EQ_INT(cnt.live, before + 1); /* only the result is alive */
  ac_datum_release(&res);
  CHECK_EQ_INT(cnt.live, before);
  pl_destroy(p);
  rt_pool_destroy(pool);
  ac_context_destroy(ctx);
  CHECK_EQ_INT(cnt.live, 0);
}

/* Runs a finished kernel-less plan with no params and returns its i64 results. */
static void run_scalars(pl_plan *p, int64_t *out, size_t n) {
  ac_datum res[16];
  ac_error *err = NULL;
  CHECK_EQ_INT(pl_run(p, NULL, NULL, NULL, 0, res, n, &err), AC_OK);
  if (err) {
    fprintf(stderr, "%s", ac_error_text(err));
    ac_error_destroy(err);
  }
  for (size_t i = 0; i < n; i++)
    out[i] = res[i].s.i;
}

UNIT_TEST(while_break_and_for_bodies) {
  ac_context *ctx = ac_context_create();
  pl_plan *p = pl_create(ctx, "loops", NULL);
  pl_slots(p, 8);
  pl_result(p, 0, AC_I64, 0);
  pl_result(p, 1, AC_I64, 0);
  pl_result(p, 3, AC_I64, 0);
  pl_result(p, 6, AC_I64, 0);
  uint32_t zero = pl_x_const(p, 0), one = pl_x_const(p, 1);
  /* %0 counts to 5 in a while */
  pl_set(p, 0, zero);
  pl_while(p);
  pl_set(p, 2, pl_x_bin(p, PX_LT, pl_x_word(p, 0), pl_x_const(p, 5)));
  pl_break_unless(p, 2);
  pl_set(p, 0, pl_x_bin(p, PX_ADD, pl_x_word(p, 0), one));
  pl_end(p);
  /* a break inside a for inside a while leaves the while: %1 stops at 25 */
  pl_set(p, 1, zero);
  pl_while(p);
  pl_for(p, 4, zero, pl_x_const(p, 10));
  pl_set(p, 1, pl_x_bin(p, PX_ADD, pl_x_word(p, 1), one));
  pl_set(p, 2, pl_x_bin(p, PX_LT, pl_x_word(p, 1), pl_x_const(p, 25)));
  pl_break_unless(p, 2);
  pl_end(p);
  pl_end(p);
  /* the body writing the loop word does not change the iteration: 5 rounds */
  pl_set(p, 3, zero);
  pl_for(p, 5, pl_x_const(p, -2), pl_x_const(p, 3));
  pl_set(p, 5, pl_x_const(p, 100));
  pl_set(p, 3, pl_x_bin(p, PX_ADD, pl_x_word(p, 3), one));
  pl_end(p);
  /* an empty range runs nothing; nested fors multiply */
  pl_set(p, 6, zero);
  pl_for(p, 4, pl_x_const(p, 3), pl_x_const(p, 3));
  pl_set(p, 6, pl_x_const(p, 999));
  pl_end(p);
  pl_for(p, 4, zero, pl_x_const(p, 4));
  pl_for(p, 7, zero, pl_x_word(p, 4));
  pl_set(p, 6, pl_x_bin(p, PX_ADD, pl_x_word(p, 6), one));
  pl_end(p);
  pl_end(p);
  finish(p);
  int64_t r[4];
  run_scalars(p, r, 4);
  CHECK_EQ_INT(r[0], 5);
  CHECK_EQ_INT(r[1], 25);
  CHECK_EQ_INT(r[2], 5);
  CHECK_EQ_INT(r[3], 0 + 1 + 2 + 3);
  pl_destroy(p);
  ac_context_destroy(ctx);
}

UNIT_TEST(if_else_follow_the_bool_byte) {
  ac_context *ctx = ac_context_create();
  pl_plan *p = pl_create(ctx, "branches", NULL);
  pl_slots(p, 4);
  pl_param(p, 0, AC_BOOL, 0);
  pl_result(p, 1, AC_I64, 0);
  pl_result(p, 2, AC_I64, 0);
  pl_if(p, 0);
  pl_set(p, 1, pl_x_const(p, 1));
  pl_else(p);
  pl_set(p, 1, pl_x_const(p, 2));
  pl_end(p);
  /* only byte 0 of a bool word counts */
  pl_set(p, 3, pl_x_const(p, 256));
  pl_set(p, 2, pl_x_const(p, 7));
  pl_if(p, 3);
  pl_set(p, 2, pl_x_const(p, 8));
  pl_end(p);
  finish(p);
  for (int b = 0; b < 2; b++) {
    ac_datum arg = {.kind = AC_DATUM_SCALAR, .type = AC_BOOL}, res[2];
    arg.s.b = b;
    CHECK_EQ_INT(pl_run(p, NULL, NULL, &arg, 1, res, 2, NULL), AC_OK);
    CHECK_EQ_INT(res[0].s.i, b ? 1 : 2);
    CHECK_EQ_INT(res[1].s.i, 7);
  }
  pl_destroy(p);
  ac_context_destroy(ctx);
}

/* ---- views and results ---- */

/* fills %0 (6 floats) with 0..5 and copies its data pointer to %20 */
static void fill_kernel(uint64_t *f, int64_t chunk, int64_t lo, int64_t hi, rt_tctx *t) {
  float *d = PTR(float, f[0]);
  for (int64_t i = lo; i < hi; i++)
    d[i] = (float)i;
  f[20] = f[0];
}

UNIT_TEST(views_and_result_hand_out) {
  counting cnt;
  atomic_init(&cnt.live, 0);
  ac_context *ctx = ac_context_create_with_allocator(counting_realloc, &cnt);
  pl_plan *p = pl_create(ctx, "views", "v.ac");
  pl_slots(p, 21);
  pl_param(p, 12, AC_I32, 1);
  pl_result(p, 0, AC_F32, 2);
  pl_result(p, 3, AC_F32, 1);
  pl_result(p, 5, AC_F32, 2);
  pl_result(p, 20, AC_U64, 0);
  pl_result(p, 12, AC_I32, 1);
  pl_result(p, 14, AC_F32, 1);
  uint32_t k = pl_kernel_add(p, "map", "fill", 1);
  pl_kernel_write(p, k, 20); /* the kernel stores the data's address there */
  uint32_t e23[] = {pl_x_const(p, 2), pl_x_const(p, 3)};
  uint32_t e6 = pl_x_const(p, 6), e32[] = {pl_x_const(p, 3), pl_x_const(p, 2)};
  uint32_t e4 = pl_x_const(p, 4);
  pl_alloc(p, 0, AC_F32, 2, e23, PL_AUTO);
  pl_launch(p, k, e6, pl_x_const(p, 1));
  pl_view(p, 3, 0, AC_F32, 1, &e6);
  pl_view(p, 5, 0, AC_F32, 2, e32);
  pl_view(p, 10, 0, AC_F32, 1, &e4);
  pl_assign(p, 14, 10, AC_F32, 1);
  finish(p);
  rt_kernel_fn ks[] = {fill_kernel};
  int64_t before = cnt.live;
  int64_t n = 3;
  int32_t iv[3] = {4, 5, 6};
  ac_array *in = ac_array_create(ctx, AC_I32, 1, &n, iv, NULL);
  ac_datum arg = arr_datum(in), res[6];
  ac_error *err = NULL;
  CHECK_EQ_INT(pl_run(p, NULL, ks, &arg, 1, res, 6, &err), AC_OK);
  CHECK(err == NULL);
  /* the alloc itself is handed out (its data is what the kernel saw) */
  CHECK(ac_array_data(res[0].array) == (const void *)(uintptr_t)res[3].s.u);
  CHECK_EQ_INT(ac_array_rank(res[0].array), 2);
  /* views are copies with their own extents */
  CHECK(ac_array_data(res[1].array) != ac_array_data(res[0].array));
  CHECK_EQ_INT(ac_array_extents(res[1].array)[0], 6);
  CHECK_EQ_INT(ac_array_extents(res[2].array)[0], 3);
  CHECK_EQ_INT(ac_array_extents(res[2].array)[1], 2);
  CHECK_EQ_INT(ac_array_extents(res[5].array)[0], 4);
  for (int i = 0; i < 6; i++) {
    CHECK(((const float *)ac_array_data(res[1].array))[i] == (float)i);
    CHECK(((const float *)ac_array_data(res[2].array))[i] == (float)i);
  }
  CHECK(((const float *)ac_array_data(res[5].array))[3] == 3.0f);
  /* a parameter passed through is the caller's array */
  CHECK(res[4].array == in);
  for (int i = 0; i < 6; i++)
    ac_datum_release(&res[i]);
  ac_array_release(in);
  CHECK_EQ_INT(cnt.live, before);
  pl_destroy(p);
  ac_context_destroy(ctx);
  CHECK_EQ_INT(cnt.live, 0);
}

UNIT_TEST(views_must_stay_inside_their_array) {
  ac_context *ctx = ac_context_create();
  pl_plan *p = pl_create(ctx, "badview", "v.ac");
  pl_slots(p, 6);
  pl_result(p, 4, AC_F32, 1);
  uint32_t e3 = pl_x_const(p, 3), e4 = pl_x_const(p, 4), e0 = pl_x_const(p, 0);
  pl_alloc(p, 0, AC_F32, 1, &e3, PL_AUTO);
  pl_view(p, 2, 0, AC_F32, 1, &e0); /* empty views are always fine */
  pl_free(p, 0);
  pl_view(p, 4, 0, AC_F32, 1, &e0);
  pl_alloc(p, 0, AC_F32, 1, &e3, PL_AUTO);
  pl_view(p, 2, 0, AC_F32, 1, &e4);
  finish(p);
  ac_datum res;
  ac_error *err = NULL;
  ac_status st = pl_run(p, NULL, NULL, NULL, 0, &res, 1, &err);
  check_error(st, err, AC_ERR_INTERNAL,
              "v.ac: error: plan 'badview': view of %0 is larger than its array");
  pl_destroy(p);
  ac_context_destroy(ctx);
}

/* ---- failures ---- */

UNIT_TEST(checks_fail_with_the_site_message) {
  ac_context *ctx = ac_context_create();
  pl_plan *p = pl_create(ctx, "checks", "c.ac");
  pl_slots(p, 1);
  pl_param(p, 0, AC_I64, 0);
  pl_site_add(p, 0, 0, "unused");
  uint32_t s = pl_site_add(p, 12, 4, "100%% sure");
  pl_check(p, pl_x_bin(p, PX_LT, pl_x_word(p, 0), pl_x_const(p, 10)), s, PL_AUTO, PL_AUTO);
  finish(p);
  ac_datum arg = scalar_i(AC_I64, 3);
  CHECK_EQ_INT(pl_run(p, NULL, NULL, &arg, 1, NULL, 0, NULL), AC_OK);
  arg.s.i = 10;
  ac_error *err = NULL;
  ac_status st = pl_run(p, NULL, NULL, &arg, 1, NULL, 0, &err);
  check_error(st, err, AC_ERR_RUNTIME, "c.ac:12:4: error: 100% sure");
  pl_destroy(p);
  ac_context_destroy(ctx);
}

/* n %0; buffer %1 %2; fails at i == 5 with (i, n) */
static void bounds_kernel(uint64_t *f, int64_t chunk, int64_t lo, int64_t hi, rt_tctx *t) {
  int32_t *d = PTR(int32_t, f[1]);
  for (int64_t i = lo; i < hi && !ac_rt_failed(t); i++) {
    if (i == 5) {
      ac_rt_fail(t, 1, i + 100, 3);
      break;
    }
    d[i] = 1;
  }
}

UNIT_TEST(kernel_failures_become_runtime_errors) {
  counting cnt;
  atomic_init(&cnt.live, 0);
  ac_context *ctx = ac_context_create_with_allocator(counting_realloc, &cnt);
  rt_pool *pool = rt_pool_create(ctx, 4);
  pl_plan *p = pl_create(ctx, "fails", "f.ac");
  pl_slots(p, 3);
  pl_param(p, 0, AC_I64, 0);
  pl_result(p, 1, AC_I32, 1);
  pl_site_add(p, 1, 1, "other");
  pl_site_add(p, 8, 15, "index %lld out of bounds for extent %lld");
  uint32_t k = pl_kernel_add(p, "map", "bounds", 2);
  uint32_t n = pl_x_word(p, 0);
  pl_alloc(p, 1, AC_I32, 1, &n, PL_AUTO);
  pl_launch(p, k, n, PL_AUTO);
  finish(p);
  rt_kernel_fn ks[] = {bounds_kernel};
  int64_t before = cnt.live;
  for (int rep = 0; rep < 20; rep++) {
    ac_datum arg = scalar_i(AC_I64, 1000), res;
    ac_error *err = NULL;
    ac_status st = pl_run(p, pool, ks, &arg, 1, &res, 1, &err);
    check_error(st, err, AC_ERR_RUNTIME, "f.ac:8:15: error: index 105 out of bounds for extent 3");
    CHECK(res.array == NULL);
    CHECK_EQ_INT(cnt.live, before);
  }
  /* fewer iterations: no failure */
  ac_datum arg = scalar_i(AC_I64, 5), res;
  CHECK_EQ_INT(pl_run(p, pool, ks, &arg, 1, &res, 1, NULL), AC_OK);
  ac_datum_release(&res);
  /* a missing compiled kernel is a compiler bug */
  rt_kernel_fn none[] = {NULL};
  ac_error *err = NULL;
  ac_status st = pl_run(p, pool, none, &arg, 1, &res, 1, &err);
  check_error(st, err, AC_ERR_INTERNAL,
              "f.ac: error: plan 'fails': kernel k0 (bounds) is not compiled");
  CHECK_EQ_INT(cnt.live, before);
  pl_destroy(p);
  rt_pool_destroy(pool);
  ac_context_destroy(ctx);
  CHECK_EQ_INT(cnt.live, 0);
}

UNIT_TEST(bad_extents_fail_at_the_alloc_site) {
  ac_context *ctx = ac_context_create();
  pl_plan *p = pl_create(ctx, "extents", "e.ac");
  pl_slots(p, 7);
  pl_param(p, 0, AC_I64, 0);
  pl_param(p, 1, AC_BOOL, 0);
  uint32_t s = pl_site_add(p, 5, 3, "generate: the site's own message is not used here");
  uint32_t n = pl_x_word(p, 0), ns[2] = {n, n};
  pl_if(p, 1);
  pl_alloc(p, 2, AC_F64, 2, ns, s);
  pl_else(p);
  pl_alloc(p, 5, AC_U8, 1, &n, PL_AUTO);
  pl_end(p);
  finish(p);
  struct {
    int64_t n;
    bool site;
    ac_status st;
    const char *line;
  } cases[] = {
      {-3, true, AC_ERR_RUNTIME, "e.ac:5:3: error: negative extent -3"},
      {-4, false, AC_ERR_RUNTIME, "e.ac: error: negative extent -4"},
      {(int64_t)1 << 20, true, AC_ERR_RUNTIME, "e.ac:5:3: error: array too large"},
      {(int64_t)1 << 32, true, AC_ERR_RUNTIME, "e.ac:5:3: error: array too large"},
      {INT64_MAX, false, AC_ERR_RUNTIME, "e.ac: error: array too large"},
      {0, true, AC_OK, NULL},
      {1000, true, AC_OK, NULL},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ac_datum args[2] = {scalar_i(AC_I64, cases[i].n), {.kind = AC_DATUM_SCALAR, .type = AC_BOOL}};
    args[1].s.b = cases[i].site;
    ac_error *err = NULL;
    ac_status st = pl_run(p, NULL, NULL, args, 2, NULL, 0, &err);
    if (cases[i].st == AC_OK)
      CHECK_EQ_INT(st, AC_OK);
    else
      check_error(st, err, cases[i].st, cases[i].line);
  }
  pl_destroy(p);
  ac_context_destroy(ctx);
}

/* ---- zero sizes, scalars, expressions ---- */

static void never_kernel(uint64_t *f, int64_t chunk, int64_t lo, int64_t hi, rt_tctx *t) {
  f[4] = (uint64_t)(hi - lo + 1000); /* records that it ran, with an empty range */
}

UNIT_TEST(zero_size_arrays_work) {
  ac_context *ctx = ac_context_create();
  pl_plan *p = pl_create(ctx, "empty", NULL);
  pl_slots(p, 8);
  pl_param(p, 0, AC_F32, 1);
  pl_result(p, 2, AC_F32, 1);
  pl_result(p, 4, AC_I64, 0);
  pl_result(p, 5, AC_I16, 2);
  uint32_t k = pl_kernel_add(p, "map", "never", 64);
  pl_kernel_write(p, k, 4);
  uint32_t n = pl_x_word(p, 1), e[2] = {pl_x_const(p, 7), n};
  pl_alloc(p, 2, AC_F32, 1, &n, PL_AUTO);
  pl_launch(p, k, n, PL_AUTO);
  pl_alloc(p, 5, AC_I16, 2, e, PL_AUTO);
  pl_free(p, 5); /* an empty result needs no array behind it */
  finish(p);
  rt_kernel_fn ks[] = {never_kernel};
  int64_t zero = 0;
  ac_array *x = ac_array_create(ctx, AC_F32, 1, &zero, NULL, NULL);
  ac_datum arg = arr_datum(x), res[3];
  CHECK_EQ_INT(pl_run(p, NULL, ks, &arg, 1, res, 3, NULL), AC_OK);
  CHECK_EQ_INT(ac_array_size(res[0].array), 0);
  CHECK_EQ_INT(ac_array_extents(res[0].array)[0], 0);
  CHECK_EQ_INT(res[1].s.i, 1000);
  CHECK_EQ_INT(ac_array_extents(res[2].array)[0], 7);
  CHECK_EQ_INT(ac_array_extents(res[2].array)[1], 0);
  for (int i = 0; i < 3; i++)
    ac_datum_release(&res[i]);
  ac_array_release(x);
  pl_destroy(p);
  ac_context_destroy(ctx);
}

UNIT_TEST(scalar_words_of_every_type) {
  ac_context *ctx = ac_context_create();
  pl_plan *p = pl_create(ctx, "scalars", NULL);
  static const ac_scalar types[] = {AC_BOOL, AC_I8,  AC_I16, AC_I32, AC_I64, AC_U8,
                                    AC_U16,  AC_U32, AC_U64, AC_F32, AC_F64};
  enum { T = sizeof types / sizeof types[0] };
  pl_slots(p, 2 * T + 2);
  for (uint32_t i = 0; i < T; i++) {
    pl_param(p, i, types[i], 0);
    pl_assign(p, T + i, i, types[i], 0);
    pl_result(p, T + i, types[i], 0);
  }
  /* signed parameters read as int64 in expressions */
  pl_set(p, 2 * T, pl_x_bin(p, PX_MUL, pl_x_word(p, 1), pl_x_word(p, 3)));
  pl_result(p, 2 * T, AC_I64, 0);
  finish(p);
  ac_datum args[T], res[T + 1];
  memset(args, 0, sizeof args);
  for (uint32_t i = 0; i < T; i++) {
    args[i].kind = AC_DATUM_SCALAR;
    args[i].type = types[i];
  }
  args[0].s.b = true;
  args[1].s.i = -5;
  args[2].s.i = -300;
  args[3].s.i = -7;
  args[4].s.i = INT64_MIN;
  args[5].s.u = 200;
  args[6].s.u = 65535;
  args[7].s.u = 4000000000u;
  args[8].s.u = UINT64_MAX;
  args[9].s.f = 1.5;
  args[10].s.f = -2.25e300;
  CHECK_EQ_INT(pl_run(p, NULL, NULL, args, T, res, T + 1, NULL), AC_OK);
  for (uint32_t i = 0; i < T; i++) {
    CHECK_EQ_INT(res[i].kind, AC_DATUM_SCALAR);
    CHECK_EQ_INT(res[i].type, types[i]);
  }
  CHECK(res[0].s.b == true);
  CHECK_EQ_INT(res[1].s.i, -5);
  CHECK_EQ_INT(res[2].s.i, -300);
  CHECK_EQ_INT(res[3].s.i, -7);
  CHECK(res[4].s.i == INT64_MIN);
  CHECK(res[5].s.u == 200);
  CHECK(res[6].s.u == 65535);
  CHECK(res[7].s.u == 4000000000u);
  CHECK(res[8].s.u == UINT64_MAX);
  CHECK(res[9].s.f == 1.5);
  CHECK(res[10].s.f == -2.25e300);
  CHECK_EQ_INT(res[T].s.i, 35);
  pl_destroy(p);
  ac_context_destroy(ctx);
}

UNIT_TEST(expressions_use_wrapping_i64_arithmetic) {
  ac_context *ctx = ac_context_create();
  rt_pool *pool = rt_pool_create(ctx, 4);
  pl_plan *p = pl_create(ctx, "exprs", NULL);
  struct {
    pl_xop op;
    int64_t a, b, want;
  } cases[] = {
      {PX_ADD, INT64_MAX, 1, INT64_MIN},  {PX_SUB, INT64_MIN, 1, INT64_MAX},
      {PX_MUL, INT64_MAX, 3, INT64_MAX - 2}, {PX_DIV, -7, 2, -3},
      {PX_REM, -7, 2, -1},                {PX_DIV, 7, 0, 0},
      {PX_REM, 7, 0, 7},                  {PX_DIV, INT64_MIN, -1, INT64_MIN},
      {PX_REM, INT64_MIN, -1, 0},         {PX_DIV, 9, -1, -9},
      {PX_EQ, 3, 3, 1},                   {PX_NE, 3, 3, 0},
      {PX_LT, -1, 0, 1},                  {PX_LE, 1, 0, 0},
      {PX_MIN, -4, 2, -4},                {PX_MAX, -4, 2, 2},
      {PX_CHUNKS, 100, 10, 10},           {PX_CHUNKS, 1000000, 1, 16},
      {PX_CHUNKS, 0, 10, 1},
  };
  enum { N = sizeof cases / sizeof cases[0] };
  pl_slots(p, N);
  for (uint32_t i = 0; i < N; i++) {
    pl_set(p, i, pl_x_bin(p, cases[i].op, pl_x_const(p, cases[i].a), pl_x_const(p, cases[i].b)));
    pl_result(p, i, AC_I64, 0);
  }
  finish(p);
  ac_datum res[N];
  CHECK_EQ_INT(pl_run(p, pool, NULL, NULL, 0, res, N, NULL), AC_OK);
  for (uint32_t i = 0; i < N; i++)
    if (res[i].s.i != cases[i].want) {
      fprintf(stderr, "case %u: got %lld\n", i, (long long)res[i].s.i);
      CHECK(false);
    }
  pl_destroy(p);
  rt_pool_destroy(pool);
  ac_context_destroy(ctx);
}

/* ---- concurrent calls ---- */

typedef struct caller {
  pl_plan *p;
  rt_pool *pool;
  ac_context *ctx;
  int bad;
} caller;

static void *call_thread(void *arg) {
  caller *c = arg;
  for (int rep = 0; rep < 40; rep++) {
    int64_t n = 2000 + rep;
    ac_array *x = ac_array_create(c->ctx, AC_F32, 1, &n, NULL, NULL);
    ac_datum args[3] = {arr_datum(x), arr_datum(x), {.kind = AC_DATUM_SCALAR, .type = AC_F32}};
    args[2].s.f = rep;
    ac_datum res;
    if (pl_run(c->p, c->pool, saxpy_kernels, args, 3, &res, 1, NULL) != AC_OK ||
        ac_array_size(res.array) != n)
      c->bad++;
    else
      ac_datum_release(&res);
    ac_array_release(x);
  }
  return NULL;
}

UNIT_TEST(calls_from_several_threads_share_a_plan) {
  ac_context *ctx = ac_context_create();
  rt_pool *pool = rt_pool_create(ctx, 4);
  pl_plan *p = saxpy_plan(ctx);
  enum { T = 4 };
  caller cs[T];
  pthread_t th[T];
  for (int i = 0; i < T; i++) {
    cs[i] = (caller){p, pool, ctx, 0};
    pthread_create(&th[i], NULL, call_thread, &cs[i]);
  }
  for (int i = 0; i < T; i++) {
    pthread_join(th[i], NULL);
    CHECK_EQ_INT(cs[i].bad, 0);
  }
  pl_destroy(p);
  rt_pool_destroy(pool);
  ac_context_destroy(ctx);
}

/* ---- malformed plans from the builders ---- */

static void expect_finish_error(pl_plan *p, const char *want) {
  ac_error *err = NULL;
  CHECK_EQ_INT(pl_finish(p, &err), AC_ERR_INTERNAL);
  CHECK(err != NULL);
  if (err && !strstr(ac_error_message(err), want)) {
    fprintf(stderr, "got: %s\nwant: %s\n", ac_error_message(err), want);
    CHECK(false);
  }
  ac_error_destroy(err);
  CHECK(!p->finished);
  pl_destroy(p);
}

UNIT_TEST(finish_rejects_malformed_plans) {
  ac_context *ctx = ac_context_create();
  pl_plan *p = pl_create(ctx, "m", NULL);
  pl_slots(p, 2);
  pl_break_unless(p, 0);
  expect_finish_error(p, "(instruction 0): 'break unless' outside a while loop");

  p = pl_create(ctx, "m", NULL);
  pl_slots(p, 2);
  pl_if(p, 0);
  pl_while(p);
  pl_end(p);
  expect_finish_error(p, "(instruction 0): block is not closed");

  p = pl_create(ctx, "m", NULL);
  pl_while(p);
  pl_else(p);
  pl_end(p);
  expect_finish_error(p, "'else' without an 'if' block");

  p = pl_create(ctx, "m", NULL);
  pl_end(p);
  expect_finish_error(p, "'end' without an open block");

  p = pl_create(ctx, "m", NULL);
  pl_slots(p, 3);
  pl_param(p, 1, AC_F32, 2);
  expect_finish_error(p, "(param 0): leaf at %1 does not fit in 3 slots");

  p = pl_create(ctx, "m", NULL);
  pl_slots(p, 3);
  pl_set(p, 3, pl_x_const(p, 1));
  expect_finish_error(p, "word %3 is not below the 3 slots");

  p = pl_create(ctx, "m", NULL);
  pl_site_add(p, 1, 1, "bad %s");
  expect_finish_error(p, "(site 0): site 0: the message may only contain %% and up to 130 %lld");

  p = pl_create(ctx, "m", NULL);
  {
    /* one more value than a failure carries (RT_FAIL_VALS) */
    char fmt[4 * (RT_FAIL_VALS + 1) + 1] = "";
    for (int i = 0; i <= RT_FAIL_VALS; i++)
      strcat(fmt, "%lld");
    pl_site_add(p, 1, 1, fmt);
  }
  expect_finish_error(p, "up to 130 %lld");

  p = pl_create(ctx, "m", NULL);
  pl_kernel_use(p, 0, 0);
  expect_finish_error(p, "a builder was given a kernel that does not exist");

  p = pl_create(ctx, "m", NULL);
  pl_slots(p, 1);
  pl_launch(p, 0, pl_x_const(p, 1), PL_AUTO);
  expect_finish_error(p, "kernel k0 does not exist");

  p = pl_create(ctx, "m", NULL);
  pl_slots(p, 1);
  pl_set(p, 0, 5); /* no expression 5 */
  expect_finish_error(p, "expression 5 does not exist");

  p = pl_create(ctx, "m", NULL);
  pl_slots(p, 1);
  pl_set(p, 0, pl_x_bin(p, PX_ADD, 0, 0)); /* refers to itself */
  expect_finish_error(p, "operand of expression 0 is not defined before it");

  p = pl_create(ctx, "m", NULL);
  pl_slots(p, 1);
  uint32_t e = pl_x_const(p, 1);
  for (int i = 0; i < 300; i++)
    e = pl_x_bin(p, PX_ADD, e, pl_x_const(p, 1));
  pl_set(p, 0, e);
  expect_finish_error(p, "expression nested deeper than 200");

  p = pl_create(ctx, "m", NULL);
  pl_slots(p, 1);
  e = pl_x_const(p, 1);
  for (int i = 0; i < 20; i++)
    e = pl_x_bin(p, PX_ADD, e, e); /* a small graph, a huge tree */
  pl_set(p, 0, e);
  expect_finish_error(p, "expression larger than 65536 nodes when written out");

  p = pl_create(ctx, "m", NULL);
  pl_slots(p, 4);
  uint32_t one = pl_x_const(p, 1);
  pl_alloc(p, 0, AC_F32, 0, &one, PL_AUTO);
  expect_finish_error(p, "invalid rank 0");

  p = pl_create(ctx, "m", NULL);
  pl_kernel_add(p, "map", "k", 0);
  expect_finish_error(p, "kernel k0 has grain 0 (must be at least 1)");

  /* an unfinished plan does not run, and adding to a finished one unfinishes it */
  p = pl_create(ctx, "m", "u.ac");
  pl_slots(p, 1);
  finish(p);
  CHECK(p->finished);
  pl_set(p, 0, pl_x_const(p, 1));
  CHECK(!p->finished);
  ac_error *err = NULL;
  ac_status st = pl_run(p, NULL, NULL, NULL, 0, NULL, 0, &err);
  check_error(st, err, AC_ERR_INTERNAL, "u.ac: error: plan 'm' was not finished");
  pl_destroy(p);
  ac_context_destroy(ctx);
}

/* ---- text ---- */

static const char golden[] =
    "plan \"my plan\"\n"
    "slots 20\n"
    "param %0 : f32[]\n"
    "param %2 : i32\n"
    "result %9 : f32[,]\n"
    "result %12 : bool\n"
    "site 0 at 3:7 \"map: arrays have different shapes: %lld and %lld\"\n"
    "site 1 at 0:0 \"tab\\there \\\"quoted\\\" back\\\\slash\\nnl \\x01\\xc3\\xa9 100%%\"\n"
    "site 2 at 4:1 \"slice: bounds %lld..%lld out of range for extent %lld\"\n"
    "kernel k0 map \"f_k0\" grain 4096 uses %0 %1 %9\n"
    "kernel k1 fold.partial \"f k1\" grain 1 uses\n"
    "body {\n"
    "  set %3 = ((%1 + -1) * 2)\n"
    "  check (%1 == %1) site 0 (%1, -9223372036854775808)\n"
    "  check (%2 != 0) site 1\n"
    "  check (%1 < 3) site 2 (0, %1, 3)\n"
    "  alloc %9 : f32[,] = [%1, max(%2, 0)] site 0\n"
    "  alloc %13 : i64[] = [chunks(%1, 4096)]\n"
    "  view %15 : f32[] = %9 [(%10 * %11)]\n"
    "  launch k0 n %1 chunks auto\n"
    "  launch k1 n (%1 / 3) chunks min(%3, (5 % 2))\n"
    "  for %4 = 0 to %3 {\n"
    "    while {\n"
    "      set %5 = (%4 <= 2)\n"
    "      break unless %5\n"
    "      if %5 {\n"
    "        assign %6 = %2 : i32\n"
    "      } else {\n"
    "        free %13\n"
    "      }\n"
    "    }\n"
    "  }\n"
    "  if %12 {\n"
    "    assign %17 = %15 : f32[]\n"
    "  }\n"
    "  set %12 = (%4 < 9223372036854775807)\n"
    "}\n";

/* The golden plan, built with the builders. */
static pl_plan *golden_plan(ac_context *ctx) {
  pl_plan *p = pl_create(ctx, "my plan", "g.plan");
  pl_slots(p, 20);
  pl_param(p, 0, AC_F32, 1);
  pl_param(p, 2, AC_I32, 0);
  pl_result(p, 9, AC_F32, 2);
  pl_result(p, 12, AC_BOOL, 0);
  pl_site_add(p, 3, 7, "map: arrays have different shapes: %lld and %lld");
  pl_site_add(p, 0, 0, "tab\there \"quoted\" back\\slash\nnl \x01\xc3\xa9 100%%");
  pl_site_add(p, 4, 1, "slice: bounds %lld..%lld out of range for extent %lld");
  pl_kernel_add(p, "map", "f_k0", 4096);
  pl_kernel_add(p, "fold.partial", "f k1", 1);
  pl_kernel_use(p, 0, 9);
  pl_kernel_use(p, 0, 0);
  pl_kernel_use(p, 0, 1);
  uint32_t w1 = pl_x_word(p, 1);
  pl_set(p, 3, pl_x_bin(p, PX_MUL, pl_x_bin(p, PX_ADD, w1, pl_x_const(p, -1)), pl_x_const(p, 2)));
  pl_check(p, pl_x_bin(p, PX_EQ, w1, w1), 0, w1, pl_x_const(p, INT64_MIN));
  pl_check(p, pl_x_bin(p, PX_NE, pl_x_word(p, 2), pl_x_const(p, 0)), 1, PL_AUTO, PL_AUTO);
  uint32_t three[3] = {pl_x_const(p, 0), w1, pl_x_const(p, 3)};
  pl_check_n(p, pl_x_bin(p, PX_LT, w1, pl_x_const(p, 3)), 2, 3, three);
  uint32_t ext[2] = {w1, pl_x_bin(p, PX_MAX, pl_x_word(p, 2), pl_x_const(p, 0))};
  pl_alloc(p, 9, AC_F32, 2, ext, 0);
  uint32_t c = pl_x_bin(p, PX_CHUNKS, w1, pl_x_const(p, 4096));
  pl_alloc(p, 13, AC_I64, 1, &c, PL_AUTO);
  uint32_t prod = pl_x_bin(p, PX_MUL, pl_x_word(p, 10), pl_x_word(p, 11));
  pl_view(p, 15, 9, AC_F32, 1, &prod);
  pl_launch(p, 0, w1, PL_AUTO);
  pl_launch(p, 1, pl_x_bin(p, PX_DIV, w1, pl_x_const(p, 3)),
            pl_x_bin(p, PX_MIN, pl_x_word(p, 3),
                     pl_x_bin(p, PX_REM, pl_x_const(p, 5), pl_x_const(p, 2))));
  pl_for(p, 4, pl_x_const(p, 0), pl_x_word(p, 3));
  pl_while(p);
  pl_set(p, 5, pl_x_bin(p, PX_LE, pl_x_word(p, 4), pl_x_const(p, 2)));
  pl_break_unless(p, 5);
  pl_if(p, 5);
  pl_assign(p, 6, 2, AC_I32, 0);
  pl_else(p);
  pl_free(p, 13);
  pl_end(p);
  pl_end(p);
  pl_end(p);
  pl_if(p, 12);
  pl_assign(p, 17, 15, AC_F32, 1);
  pl_end(p);
  pl_set(p, 12, pl_x_bin(p, PX_LT, pl_x_word(p, 4), pl_x_const(p, INT64_MAX)));
  finish(p);
  return p;
}

UNIT_TEST(print_parse_round_trip) {
  ac_context *ctx = ac_context_create();
  pl_plan *p = golden_plan(ctx);
  char *text = NULL;
  ac_error *err = NULL;
  CHECK_EQ_INT(pl_print(p, &text, &err), AC_OK);
  CHECK_STR(text, golden);
  pl_plan *q = NULL;
  CHECK_EQ_INT(pl_parse(ctx, "g.plan", text, strlen(text), &q, &err), AC_OK);
  if (err) {
    fprintf(stderr, "%s", ac_error_text(err));
    ac_error_destroy(err);
    err = NULL;
  }
  CHECK(q != NULL);
  if (q) {
    CHECK(q->finished);
    CHECK(pl_equal(p, q));
    CHECK(pl_equal(q, p));
    char *again = NULL;
    CHECK_EQ_INT(pl_print(q, &again, NULL), AC_OK);
    CHECK_STR(again, text);
    ac_string_destroy(ctx, again);
    /* the links agree too */
    for (uint32_t i = 0; i < p->ninsts; i++)
      CHECK_EQ_INT(q->insts[i].match, p->insts[i].match);
    pl_destroy(q);
  }
  /* comments and free layout are accepted */
  const char *loose = "// a plan\nplan x slots 2 param %0 : i64 // the input\nresult %1 : i64\n"
                      "body { set %1 = ( %0 * -2 ) }  // trailing\n";
  CHECK_EQ_INT(pl_parse(ctx, NULL, loose, strlen(loose), &q, NULL), AC_OK);
  ac_datum arg = scalar_i(AC_I64, 21), res;
  CHECK_EQ_INT(pl_run(q, NULL, NULL, &arg, 1, &res, 1, NULL), AC_OK);
  CHECK_EQ_INT(res.s.i, -42);
  /* different plans are not equal */
  CHECK(!pl_equal(p, q));
  pl_destroy(q);
  const char *other = "plan \"my plan\" slots 20 body { set %3 = 1 }";
  CHECK_EQ_INT(pl_parse(ctx, NULL, other, strlen(other), &q, NULL), AC_OK);
  CHECK(!pl_equal(p, q));
  pl_destroy(q);
  ac_string_destroy(ctx, text);
  pl_destroy(p);
  ac_context_destroy(ctx);
}

/* ---- extern kernels (GPU plans) ---- */

static const char golden_extern[] =
    "plan ext\n"
    "slots 8\n"
    "target gpu\n"
    "param %0 : f32[]\n"
    "param %2 : f32\n"
    "result %3 : f32[]\n"
    "kernel k0 map \"f_k0\" grain 1 block 64 uses %0 %1 %3\n"
    "kernel k1 extern \"saxpy_entry\" block 96 args %2:f32 %0:ptr %1:i64 %3:ptr %4:i64 %1:i64\n"
    "  ptx \".version 7.0\\n\"\n"
    "      \"\\t.target sm_70 // \\\"quoted\\\" \\\\ \\x01\\n\"\n"
    "      \"\\n\"\n"
    "      \"no newline at the end\"\n"
    "kernel k2 extern \"empty\" block 1 args\n"
    "  ptx \"\"\n"
    "body {\n"
    "  alloc %3 : f32[] = [%1]\n"
    "  launch k0 n %1 chunks auto\n"
    "  launch k1 n %1 chunks auto\n"
    "  launch k2 n 0 chunks auto\n"
    "}\n";

static const char golden_extern_ptx[] =
    ".version 7.0\n\t.target sm_70 // \"quoted\" \\ \x01\n\nno newline at the end";

static pl_plan *golden_extern_plan(ac_context *ctx) {
  pl_plan *p = pl_create(ctx, "ext", "e.plan");
  p->gpu = true;
  pl_slots(p, 8);
  pl_param(p, 0, AC_F32, 1);
  pl_param(p, 2, AC_F32, 0);
  pl_result(p, 3, AC_F32, 1);
  uint32_t k0 = pl_kernel_add(p, "map", "f_k0", 1);
  p->kernels[k0].block = 64;
  pl_kernel_use(p, k0, 3);
  pl_kernel_use(p, k0, 0);
  pl_kernel_use(p, k0, 1);
  uint32_t k1 =
      pl_kernel_add_extern(p, "saxpy_entry", golden_extern_ptx, strlen(golden_extern_ptx), 96);
  pl_kernel_arg(p, k1, 2, AC_F32, false);
  pl_kernel_arg(p, k1, 0, AC_I8, true); /* the type of a pointer does not count */
  pl_kernel_arg(p, k1, 1, AC_I64, false);
  pl_kernel_arg(p, k1, 3, AC_F32, true);
  pl_kernel_arg(p, k1, 4, AC_I64, false);
  pl_kernel_arg(p, k1, 1, AC_I64, false); /* a word twice */
  uint32_t k2 = pl_kernel_add_extern(p, "empty", "", 0, 1);
  uint32_t n = pl_x_word(p, 1);
  pl_alloc(p, 3, AC_F32, 1, &n, PL_AUTO);
  pl_launch(p, k0, n, PL_AUTO);
  pl_launch(p, k1, n, PL_AUTO);
  pl_launch(p, k2, pl_x_const(p, 0), PL_AUTO);
  finish(p);
  return p;
}

/* print -> text -> parse -> an equal plan that prints the same text. */
static void check_round_trip(ac_context *ctx, const pl_plan *p, const char *want) {
  char *text = NULL;
  ac_error *err = NULL;
  CHECK_EQ_INT(pl_print(p, &text, &err), AC_OK);
  if (want)
    CHECK_STR(text, want);
  pl_plan *q = NULL;
  CHECK_EQ_INT(pl_parse(ctx, "r.plan", text, text ? strlen(text) : 0, &q, &err), AC_OK);
  if (err) {
    fprintf(stderr, "%s", ac_error_text(err));
    ac_error_destroy(err);
  }
  if (q) {
    CHECK(pl_equal(p, q));
    CHECK(pl_equal(q, p));
    char *again = NULL;
    CHECK_EQ_INT(pl_print(q, &again, NULL), AC_OK);
    CHECK(again && text && strcmp(again, text) == 0);
    ac_string_destroy(ctx, again);
    pl_destroy(q);
  }
  ac_string_destroy(ctx, text);
}

UNIT_TEST(extern_kernels_round_trip) {
  ac_context *ctx = ac_context_create();
  pl_plan *p = golden_extern_plan(ctx);
  const pl_kernel *k = &p->kernels[1];
  CHECK_STR(k->kind, "extern");
  CHECK_EQ_INT(k->grain, 1);
  CHECK_EQ_INT(k->block, 96);
  CHECK_EQ_INT(k->nkargs, 6);
  CHECK_EQ_INT(k->kargs[1].sc, 0); /* pointers carry no type */
  CHECK_EQ_INT(k->kargs[1].ptr, 1);
  CHECK_EQ_INT(k->nuses, 5); /* the argument words, sorted, once each */
  for (uint32_t i = 0; i < 5; i++)
    CHECK_EQ_INT(k->uses[i], i);
  CHECK_EQ_INT(k->nwrites, 0);
  CHECK_STR(k->ptx, golden_extern_ptx);
  check_round_trip(ctx, p, golden_extern);

  /* what tells plans apart */
  pl_plan *q = golden_extern_plan(ctx);
  CHECK(pl_equal(p, q));
  q->kernels[1].kargs[0].sc = AC_F64;
  CHECK(!pl_equal(p, q));
  q->kernels[1].kargs[0].sc = AC_F32;
  q->kernels[1].ptx[0] = ',';
  CHECK(!pl_equal(p, q));
  pl_destroy(q);
  pl_destroy(p);

  /* a large module (hundreds of KB, a line of 100 KB among many short
   * ones) comes back whole */
  size_t lines = 20000, big = 100000, len = lines * 16 + big + 1;
  char *ptx = malloc(len + 1), *c = ptx;
  for (size_t i = 0; i < lines; i++)
    c += sprintf(c, "\tadd.s64 %%r%zu;\n", i % 1000);
  for (size_t i = 0; i < big; i++)
    *c++ = (char)(' ' + i % 95);
  *c++ = '\n';
  *c = 0;
  p = pl_create(ctx, "big", NULL);
  p->gpu = true;
  pl_slots(p, 1);
  pl_param(p, 0, AC_BOOL, 0); /* its argument: a word the plan writes */
  uint32_t kb = pl_kernel_add_extern(p, "big", ptx, (size_t)(c - ptx), 1024);
  pl_kernel_arg(p, kb, 0, AC_BOOL, false);
  pl_launch(p, kb, pl_x_const(p, 1), PL_AUTO);
  finish(p);
  CHECK(p->kernels[kb].ptx && strlen(p->kernels[kb].ptx) == (size_t)(c - ptx));
  check_round_trip(ctx, p, NULL);
  pl_destroy(p);
  free(ptx);
  ac_context_destroy(ctx);
}

UNIT_TEST(extern_kernels_are_checked) {
  ac_context *ctx = ac_context_create();
  static const char ptx[] = ".entry e() { ret; }";
#define GPU_PLAN(nslots)                                                                           \
  p = pl_create(ctx, "m", NULL);                                                                   \
  p->gpu = true;                                                                                   \
  pl_slots(p, nslots)
  pl_plan *p;
  uint32_t k;

  GPU_PLAN(2);
  pl_kernel_add(p, "extern", "e", 1);
  expect_finish_error(p, "(kernel 0): extern kernel k0 has no PTX");

  GPU_PLAN(2);
  k = pl_kernel_add_extern(p, "e", ptx, strlen(ptx), 32);
  strcpy(p->kernels[k].kind, "map"); /* "extern" has room for it */
  expect_finish_error(p, "kernel k0 has PTX, but its kind is 'map', not 'extern'");

  p = pl_create(ctx, "m", NULL);
  pl_slots(p, 2);
  pl_kernel_add_extern(p, "e", ptx, strlen(ptx), 32);
  expect_finish_error(p, "extern kernel k0 in a CPU plan (only GPU plans have them)");

  GPU_PLAN(2);
  pl_kernel_add_extern(p, "e", ptx, strlen(ptx), 0);
  expect_finish_error(p, "extern kernel k0: block 0 is not between 1 and 1024");

  GPU_PLAN(2);
  pl_kernel_add_extern(p, "e", ptx, strlen(ptx), 1025);
  expect_finish_error(p, "extern kernel k0: block 1025 is not between 1 and 1024");

  GPU_PLAN(2);
  k = pl_kernel_add_extern(p, "e", ptx, strlen(ptx), 32);
  pl_kernel_arg(p, k, 2, AC_I64, false);
  expect_finish_error(p, "kernel k0 uses %2, beyond the 2 slots");

  GPU_PLAN(2);
  k = pl_kernel_add_extern(p, "e", ptx, strlen(ptx), 32);
  pl_kernel_arg(p, k, 0, (ac_scalar)99, false);
  expect_finish_error(p, "extern kernel k0: argument 0 has invalid scalar type 99");

  GPU_PLAN(2);
  k = pl_kernel_add_extern(p, "e", ptx, strlen(ptx), 32);
  pl_kernel_arg(p, k, 0, AC_I64, false);
  pl_kernel_write(p, k, 0);
  expect_finish_error(p, "extern kernel k0 writes a word (it writes array elements only)");

  GPU_PLAN(2);
  k = pl_kernel_add_extern(p, "e", ptx, strlen(ptx), 32);
  pl_kernel_arg(p, k, 0, AC_I64, false);
  pl_kernel_use(p, k, 1);
  expect_finish_error(p, "extern kernel k0 uses words that are not its arguments");

  GPU_PLAN(2);
  k = pl_kernel_add_extern(p, "e", ptx, strlen(ptx), 32);
  p->kernels[k].smem = 16;
  expect_finish_error(p, "extern kernel k0 has shared, scratch or temporary memory");

  GPU_PLAN(2);
  k = pl_kernel_add(p, "map", "f", 1);
  pl_kernel_arg(p, k, 0, AC_I64, false);
  expect_finish_error(p, "kernel k0 has arguments, but only extern kernels take them");

  GPU_PLAN(2);
  k = pl_kernel_add_extern(p, "e", ptx, strlen(ptx), 32);
  uint32_t one = pl_x_const(p, 1);
  pl_launch(p, k, one, one);
  expect_finish_error(p, "(instruction 0): launch of extern kernel k0 gives chunks (extern "
                         "kernels take 'chunks auto')");

  GPU_PLAN(2);
  pl_kernel_arg(p, 0, 0, AC_I64, false);
  expect_finish_error(p, "a builder was given a kernel that does not exist");

  /* pl_print refuses what pl_finish refuses */
  GPU_PLAN(2);
  pl_kernel_add_extern(p, "e", ptx, strlen(ptx), 0);
  char *text = NULL;
  CHECK_EQ_INT(pl_print(p, &text, NULL), AC_ERR_INTERNAL);
  CHECK(text == NULL);
  pl_destroy(p);
#undef GPU_PLAN
  ac_context_destroy(ctx);
}

UNIT_TEST(print_refuses_malformed_plans) {
  ac_context *ctx = ac_context_create();
  pl_plan *p = pl_create(ctx, "m", NULL);
  pl_slots(p, 1);
  pl_set(p, 0, 42);
  char *text = (char *)"untouched";
  ac_error *err = NULL;
  CHECK_EQ_INT(pl_print(p, &text, &err), AC_ERR_INTERNAL);
  CHECK(text == NULL);
  CHECK_STR(ac_error_message(err), "cannot print malformed plan 'm': expression 42 does not exist");
  ac_error_destroy(err);
  pl_destroy(p);
  ac_context_destroy(ctx);
}

/* A malformed text and the first line of its diagnostic. */
typedef struct bad_text {
  const char *text;
  const char *line;
} bad_text;

#define HDR "plan p\nslots 4\n"
#define K0 "kernel k0 map \"f\" grain 1 uses\n"
#define S0 "site 0 at 1:2 \"oops\"\n"
#define GPU HDR "target gpu\n"
#define EXT "kernel k0 extern \"e\" "

static const bad_text bad_texts[] = {
    {"", "t.plan:1:1: error: expected 'plan', found end of input"},
    {"plan", "t.plan:1:5: error: expected the plan's name, found end of input"},
    {"plan p\nslots x", "t.plan:2:7: error: expected the number of slots, found 'x'"},
    {"plan p\nslots 99999999999999999999", "t.plan:2:7: error: number out of range"},
    {"plan p\nslots 16777217",
     "t.plan:2:7: error: the number of slots must be between 0 and 16777216"},
    {HDR "param %4 : f32", "t.plan:3:7: error: word %4 is not below the 4 slots"},
    {HDR "param %3 : f32[]\nbody {\n}", "t.plan:3:1: error: leaf at %3 does not fit in 4 slots"},
    {HDR "result %0 : f33", "t.plan:3:13: error: unknown scalar type 'f33'"},
    {HDR "param %0 : f32[,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,]",
     "t.plan:3:15: error: rank larger than 64"},
    {HDR "param %0 i32", "t.plan:3:10: error: expected ':', found 'i32'"},
    {HDR "site 1 at 0:0 \"x\"",
     "t.plan:3:6: error: sites must be numbered in order: expected site 0"},
    {HDR "site 0 at 0:0 \"%s\"\nbody {\n}",
     "t.plan:3:1: error: site 0: the message may only contain %% and up to 130 %lld"},
    {HDR "site 0 at 0:0 \"abc", "t.plan:3:15: error: unterminated string"},
    {HDR "site 0 at 0:0 \"a\\qb\"", "t.plan:3:17: error: unknown escape sequence in a string"},
    {HDR "site 0 at 0:0 \"a\\x4\"", "t.plan:3:17: error: \\x needs two hexadecimal digits"},
    {HDR "site 0 at 0:0 \"a\\x00\"", "t.plan:3:17: error: a string cannot contain \\x00"},
    {HDR "site 0 at 0:0 \"a\tb\"",
     "t.plan:3:17: error: control character 0x09 in a string (write it as \\x09)"},
    {HDR "site 0 at 4294967296:1 \"x\"",
     "t.plan:3:11: error: a line number must be between 0 and 4294967295"},
    {HDR "kernel k1 map \"f\" grain 1 uses",
     "t.plan:3:8: error: kernels must be numbered in order: expected k0"},
    {HDR "kernel k0 map f grain 1 uses",
     "t.plan:3:15: error: expected the kernel's symbol (a string), found 'f'"},
    {HDR "kernel k0 map \"f\" grain 0 uses",
     "t.plan:3:25: error: a grain must be between 1 and 9223372036854775807"},
    {HDR "kernel k0 map \"f\" grain 1 uses %2 %1",
     "t.plan:3:35: error: kernel uses must be ascending and distinct"},
    {HDR "kernel k0 map \"\" grain 1 uses\nbody {\n}",
     "t.plan:3:1: error: kernel k0 has no symbol"},
    {HDR "frob",
     "t.plan:3:1: error: expected 'param', 'result', 'site', 'kernel' or 'body', found 'frob'"},
    {HDR "body {\n  launch k0 n 1 chunks auto\n}", "t.plan:4:10: error: kernel k0 is not defined"},
    {HDR "body {\n  check 1 site 0\n}", "t.plan:4:16: error: site 0 is not defined"},
    {HDR S0 "body {\n  alloc %0 : f32[] = [1] site 3\n}",
     "t.plan:5:31: error: site 3 is not defined"},
    {HDR "body {\n  break unless %0\n}", "t.plan:4:3: error: 'break unless' outside a while loop"},
    {HDR "body {\n  while {\n  } else {\n  }\n}",
     "t.plan:5:3: error: 'else' without an 'if' block"},
    {HDR "body {\n  if %0 {\n  }\n", "t.plan:6:1: error: expected '}', found end of input"},
    {HDR "body {\n}\nfoo", "t.plan:5:1: error: expected end of input after the body, found 'foo'"},
    {HDR "body {\n  set %0 = (1 ^ 2)\n}", "t.plan:4:15: error: unexpected character '^'"},
    {HDR "body {\n  set %0 = (1 2)\n}",
     "t.plan:4:15: error: expected an operator (+ - * / % == != < <=), found '2'"},
    {HDR "body {\n  set %0 = 9223372036854775808\n}", "t.plan:4:12: error: number out of range"},
    {HDR "body {\n  set %0 = -9223372036854775809\n}", "t.plan:4:12: error: number out of range"},
    {HDR "body {\n  set %0 = \x01\n}", "t.plan:4:12: error: unexpected byte 0x01"},
    {HDR "body {\n  set %0 = foo(1, 2)\n}",
     "t.plan:4:12: error: expected an expression, found 'foo'"},
    {HDR "body {\n  set %0 = min(1 2)\n}", "t.plan:4:18: error: expected ',', found '2'"},
    {HDR "body {\n  alloc %0 : f32[,] = [1]\n}", "t.plan:4:25: error: 1 extents given for rank 2"},
    {HDR "body {\n  alloc %0 : f32[] = [1, 2]\n}",
     "t.plan:4:26: error: 2 extents given for rank 1"},
    {HDR "body {\n  alloc %0 : f32 = [1]\n}", "t.plan:4:3: error: alloc needs an array type"},
    {HDR "body {\n  alloc %2 : f32[,] = [1, 1]\n}",
     "t.plan:4:3: error: leaf at %2 does not fit in 4 slots"},
    {HDR "body {\n  view %0 : f32[] = %9 [1]\n}",
     "t.plan:4:21: error: word %9 is not below the 4 slots"},
    {HDR "body {\n  assign %2 = %0 : f32[,]\n}",
     "t.plan:4:3: error: leaf at %2 does not fit in 4 slots"},
    {HDR "body {\n  frobnicate %0\n}", "t.plan:4:3: error: unknown instruction 'frobnicate'"},
    {HDR "body {\n  launch k00 n 1 chunks auto\n}",
     "t.plan:4:10: error: expected a kernel (k0, k1, ...), found 'k00'"},
    {HDR "body {\n  break %0\n}", "t.plan:4:9: error: expected 'unless', found '%0'"},
    {HDR "body {\n  for %0 = 0 to 1\n  }\n}", "t.plan:5:3: error: expected '{', found '}'"},
    /* extern kernels */
    {GPU EXT "block 0 args ptx \"\"",
     "t.plan:4:28: error: a block size must be between 1 and 1024"},
    {GPU EXT "args ptx \"\"", "t.plan:4:22: error: expected 'block', found 'args'"},
    {GPU EXT "block 32 args %0:f32[] ptx \"\"",
     "t.plan:4:39: error: an extern kernel's argument is 'ptr' (an array's data) or a scalar"},
    {GPU EXT "block 32 args %0:foo ptx \"\"", "t.plan:4:39: error: unknown scalar type 'foo'"},
    {GPU EXT "block 32 args %0:[ ptx \"\"",
     "t.plan:4:39: error: expected 'ptr' or a scalar type, found '['"},
    {GPU EXT "block 32 args %0 ptx \"\"", "t.plan:4:39: error: expected ':', found 'ptx'"},
    {GPU EXT "block 32 args %9:ptr ptx \"\"",
     "t.plan:4:36: error: word %9 is not below the 4 slots"},
    {GPU EXT "block 32 args %0:ptr", "t.plan:4:42: error: expected 'ptx', found end of input"},
    {GPU EXT "block 32 args ptx body {\n}",
     "t.plan:4:40: error: expected the kernel's PTX (strings), found 'body'"},
    {GPU EXT "block 32 args ptx \"a\" 5",
     "t.plan:4:44: error: expected 'param', 'result', 'site', 'kernel' or 'body', found '5'"},
    {GPU EXT "block 32 args ptx \"a\\qb\"",
     "t.plan:4:42: error: unknown escape sequence in a string"},
    {HDR EXT "block 32 args ptx \"\"\nbody {\n}",
     "t.plan:3:1: error: extern kernel k0 in a CPU plan (only GPU plans have them)"},
    {GPU EXT "block 32 args ptx \"\"\nbody {\n  launch k0 n 1 chunks 2\n}",
     "t.plan:6:3: error: launch of extern kernel k0 gives chunks (extern kernels take 'chunks "
     "auto')"},
    {GPU "kernel k0 extern \"e\" grain 1 uses\nbody {\n}",
     "t.plan:4:22: error: expected 'block', found 'grain'"},
};

UNIT_TEST(malformed_texts_are_rejected_with_positions) {
  ac_context *ctx = ac_context_create();
  char buf[256];
  for (size_t i = 0; i < sizeof bad_texts / sizeof bad_texts[0]; i++) {
    pl_plan *p = (pl_plan *)(uintptr_t)1;
    ac_error *err = NULL;
    const char *t = bad_texts[i].text;
    ac_status st = pl_parse(ctx, "t.plan", t, strlen(t), &p, &err);
    CHECK(p == NULL);
    CHECK_EQ_INT(st, AC_ERR_SYNTAX);
    CHECK(err != NULL);
    if (err && strcmp(first_line(err, buf, sizeof buf), bad_texts[i].line) != 0) {
      fprintf(stderr, "bad text %zu:\n  got:      %s\n  expected: %s\n", i, buf,
              bad_texts[i].line);
      CHECK(false);
    }
    ac_error_destroy(err);
    pl_destroy(p);
  }
  /* the error names the source line with a caret */
  const char *t = HDR "body {\n  set %0 = (1 ^ 2)\n}";
  ac_error *err = NULL;
  pl_plan *p;
  CHECK_EQ_INT(pl_parse(ctx, "t.plan", t, strlen(t), &p, &err), AC_ERR_SYNTAX);
  CHECK_STR(ac_error_text(err),
            "t.plan:4:15: error: unexpected character '^'\n  set %0 = (1 ^ 2)\n              ^\n");
  ac_error_destroy(err);
  /* a nested expression deeper than the limit */
  char deep[1200] = HDR "body {\n  set %0 = ";
  size_t n = strlen(deep);
  for (int i = 0; i < 201; i++)
    deep[n++] = '(';
  strcpy(deep + n, "1");
  CHECK_EQ_INT(pl_parse(ctx, "t.plan", deep, strlen(deep), &p, &err), AC_ERR_SYNTAX);
  CHECK_STR(ac_error_message(err), "expression nested deeper than 200");
  CHECK_EQ_INT(ac_error_column(err), 212);
  ac_error_destroy(err);
  ac_context_destroy(ctx);
}

/* Every truncation and a few substitutions at every byte of `golden`:
 * each parse either succeeds (and then round-trips) or fails with a syntax
 * error at a position; ASan and UBSan watch the rest. */
static void mutation_sweep(const char *text0) {
  ac_context *ctx = ac_context_create();
  size_t len = strlen(text0);
  char *buf = malloc(len + 1);
  static const char subs[] = {'\0', '{', '}', '%', '9', '"', '\\', '-', ' ', '\n', '(', 'x'};
  int parsed = 0, rejected = 0, bad = 0;
  for (size_t pos = 0; pos <= len; pos++) {
    for (size_t s = 0; s <= sizeof subs; s++) {
      memcpy(buf, text0, len + 1);
      size_t n = len;
      if (s == sizeof subs)
        n = pos; /* truncation */
      else if (pos < len)
        buf[pos] = subs[s];
      else
        continue;
      pl_plan *p = NULL;
      ac_error *err = NULL;
      ac_status st = pl_parse(ctx, "m.plan", buf, n, &p, &err);
      if (st == AC_OK) {
        parsed++;
        char *text = NULL;
        pl_plan *q = NULL;
        if (pl_print(p, &text, NULL) != AC_OK ||
            pl_parse(ctx, "m.plan", text, strlen(text), &q, NULL) != AC_OK || !pl_equal(p, q))
          bad++;
        pl_destroy(q);
        ac_string_destroy(ctx, text);
      } else {
        rejected++;
        if (st != AC_ERR_SYNTAX || !err || ac_error_line(err) == 0)
          bad++;
      }
      ac_error_destroy(err);
      pl_destroy(p);
    }
  }
  CHECK_EQ_INT(bad, 0);
  CHECK(parsed > 0);
  CHECK(rejected > 0);
  free(buf);
  ac_context_destroy(ctx);
}

UNIT_TEST(mutated_texts_never_crash_the_parser) {
  mutation_sweep(golden);
  mutation_sweep(golden_extern);
}

UNIT_MAIN(saxpy_runs_on_the_pool, check_with_many_values, partial_sums_use_the_chunk_index,
          for_loop_with_assign_does_not_leak, while_break_and_for_bodies,
          if_else_follow_the_bool_byte, views_and_result_hand_out,
          views_must_stay_inside_their_array, checks_fail_with_the_site_message,
          kernel_failures_become_runtime_errors, bad_extents_fail_at_the_alloc_site,
          zero_size_arrays_work, scalar_words_of_every_type,
          expressions_use_wrapping_i64_arithmetic, calls_from_several_threads_share_a_plan,
          finish_rejects_malformed_plans, print_parse_round_trip, extern_kernels_round_trip,
          extern_kernels_are_checked, print_refuses_malformed_plans,
          malformed_texts_are_rejected_with_positions, mutated_texts_never_crash_the_parser)
