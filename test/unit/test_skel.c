/* Reduction, scan, permutation, filter and recurrence skeletons on the CPU
 * (lib/lower/skel_fold.c, skel_scan.c, skel_permute.c, skel_filter.c,
 * skel_rec.c), tested differentially: every program is compiled for the
 * CPU (ac_function_create with AC_BACKEND_CPU: lowering, O3, the JIT, plans
 * on the thread pool) and run next to the reference interpreter on the same
 * arguments. Integers must match exactly; floats within a relative 1e-5
 * (f32) or 1e-12 (f64) where the skeleton reassociates (folds, scans,
 * atomic permutes), exactly elsewhere. Errors must match the interpreter's
 * message and position. Sizes are both tiny (empty arrays, one element)
 * and large enough (>= 1e5 elements) that the pieces of a row, the chunks of
 * a launch and the atomics of permute really run in parallel. */
#include "unit.h"

#include "arrayc/arrayc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- data ---- */

typedef struct rng {
  uint64_t s;
} rng;

static uint64_t rng_next(rng *r) {
  r->s = r->s * 6364136223846793005ull + 1442695040888963407ull;
  return r->s >> 17;
}

/* A uniform integer in [lo, hi]. */
static int64_t rng_int(rng *r, int64_t lo, int64_t hi) {
  return lo + (int64_t)(rng_next(r) % (uint64_t)(hi - lo + 1));
}

static ac_datum d_scalar_i64(int64_t v) {
  ac_datum d;
  memset(&d, 0, sizeof d);
  d.kind = AC_DATUM_SCALAR;
  d.type = AC_I64;
  d.s.i = v;
  return d;
}

static ac_datum d_array(ac_context *ctx, ac_scalar sc, unsigned rank, const int64_t *ext,
                        const void *data) {
  ac_datum d;
  memset(&d, 0, sizeof d);
  d.kind = AC_DATUM_ARRAY;
  d.type = sc;
  d.array = ac_array_create(ctx, sc, rank, ext, data, NULL);
  return d;
}

/* An array of the given shape whose element k is gen(k) (a double converted
 * to the element type), or a random integer in [lo, hi] when gen is NULL. */
static ac_datum d_gen(ac_context *ctx, ac_scalar sc, unsigned rank, const int64_t *ext, rng *r,
                      int64_t lo, int64_t hi) {
  int64_t n = 1;
  for (unsigned d = 0; d < rank; d++)
    n *= ext[d];
  size_t es = ac_scalar_size(sc);
  unsigned char *buf = malloc((size_t)(n ? n : 1) * es);
  for (int64_t k = 0; k < n; k++) {
    int64_t v = rng_int(r, lo, hi);
    unsigned char *p = buf + (size_t)k * es;
    switch (sc) {
    case AC_BOOL:
      *p = (unsigned char)(v != 0);
      break;
    case AC_I8:
    case AC_U8:
      *p = (unsigned char)v;
      break;
    case AC_I16:
    case AC_U16: {
      uint16_t x = (uint16_t)v;
      memcpy(p, &x, 2);
      break;
    }
    case AC_I32:
    case AC_U32: {
      uint32_t x = (uint32_t)v;
      memcpy(p, &x, 4);
      break;
    }
    case AC_I64:
    case AC_U64:
      memcpy(p, &v, 8);
      break;
    /* floats: multiples of 1/16, so sums of moderate length are exact */
    case AC_F32: {
      float x = (float)v / 16.0f;
      memcpy(p, &x, 4);
      break;
    }
    default: {
      double x = (double)v / 16.0;
      memcpy(p, &x, 8);
      break;
    }
    }
  }
  ac_datum d = d_array(ctx, sc, rank, ext, buf);
  free(buf);
  return d;
}

static ac_datum d_vec(ac_context *ctx, ac_scalar sc, int64_t n, rng *r, int64_t lo, int64_t hi) {
  return d_gen(ctx, sc, 1, &n, r, lo, hi);
}

/* Odd multipliers in [-3, 3] for the affine-map tests: a product of odd
 * numbers never wraps to 0 (nor does a power of 3), so every element keeps
 * mattering to a fold or scan, and a lost or repeated piece shows. */
static ac_datum d_odd(ac_context *ctx, ac_scalar sc, unsigned rank, const int64_t *ext, rng *r) {
  ac_datum d = d_gen(ctx, sc, rank, ext, r, -2, 1);
  int64_t n = ac_array_size(d.array);
  unsigned char *p = (unsigned char *)ac_array_data(d.array);
  for (int64_t k = 0; k < n; k++) {
    if (sc == AC_I32) {
      int32_t v;
      memcpy(&v, p + 4 * k, 4);
      v = 2 * v + 1;
      memcpy(p + 4 * k, &v, 4);
    } else {
      int64_t v;
      memcpy(&v, p + 8 * k, 8);
      v = 2 * v + 1;
      memcpy(p + 8 * k, &v, 8);
    }
  }
  return d;
}

/* An i64 vector from a list. */
static ac_datum d_i64s(ac_context *ctx, int64_t n, const int64_t *v) {
  return d_array(ctx, AC_I64, 1, &n, v);
}

/* Random f64 data in [0, 1) (not exactly summable: tolerance tests). */
static ac_datum d_f64_unit(ac_context *ctx, int64_t n, rng *r) {
  double *buf = malloc((size_t)(n ? n : 1) * sizeof *buf);
  for (int64_t k = 0; k < n; k++)
    buf[k] = (double)(rng_next(r) % 1000003) / 1000003.0;
  ac_datum d = d_array(ctx, AC_F64, 1, &n, buf);
  free(buf);
  return d;
}

/* Segment lengths summing to n, about a fifth of them empty. */
static ac_datum d_segments(ac_context *ctx, ac_scalar sc, int64_t n, int64_t maxlen, rng *r) {
  int64_t *lens = malloc((size_t)(n + 1) * sizeof *lens), cnt = 0, left = n;
  while (left > 0) {
    int64_t l = rng_int(r, 0, 4) == 0 ? 0 : rng_int(r, 1, maxlen);
    l = l > left ? left : l;
    lens[cnt++] = l;
    left -= l;
  }
  lens[cnt++] = 0; /* an empty last segment too */
  ac_datum d = d_gen(ctx, sc, 1, &cnt, &(rng){1}, 0, 0);
  unsigned char *p = (unsigned char *)ac_array_data(d.array);
  for (int64_t k = 0; k < cnt; k++) {
    size_t es = ac_scalar_size(sc);
    uint64_t v = (uint64_t)lens[k];
    memcpy(p + (size_t)k * es, &v, es); /* little endian: the low bytes */
  }
  free(lens);
  return d;
}

static void release_all(ac_datum *d, size_t n) {
  for (size_t i = 0; i < n; i++)
    ac_datum_release(&d[i]);
}

/* ---- the differential harness ---- */

typedef struct pair {
  ac_module *m;
  ac_function *ref, *cpu;
} pair;

static bool pair_open(pair *p, ac_context *ctx, const char *src, const char *fn) {
  ac_error *err = NULL;
  memset(p, 0, sizeof *p);
  if (ac_module_parse(ctx, "t.ac", src, strlen(src), &p->m, &err) != AC_OK ||
      ac_function_create(p->m, fn, AC_BACKEND_INTERP, &p->ref, &err) != AC_OK ||
      ac_function_create(p->m, fn, AC_BACKEND_CPU, &p->cpu, &err) != AC_OK) {
    fprintf(stderr, "%s: %u:%u: %s\n", fn, ac_error_line(err), ac_error_column(err),
            ac_error_message(err));
    ac_error_destroy(err);
    return false;
  }
  return true;
}

static void pair_close(pair *p) {
  ac_function_destroy(p->ref);
  ac_function_destroy(p->cpu);
  ac_module_destroy(p->m);
}

static bool is_float(ac_scalar sc) {
  return sc == AC_F32 || sc == AC_F64;
}

static bool close_enough(double a, double b, double tol) {
  if (isnan(a) || isnan(b))
    return isnan(a) && isnan(b);
  if (a == b)
    return true;
  return fabs(a - b) <= tol * fmax(fabs(a), fabs(b));
}

/* Compares two results; floats within a relative tol (0: exact bits). */
static bool same_datum(const ac_datum *a, const ac_datum *b, double tol, char *why, size_t sz) {
  if (a->kind != b->kind || a->type != b->type) {
    snprintf(why, sz, "kinds differ");
    return false;
  }
  size_t es = ac_scalar_size(a->type);
  if (a->kind == AC_DATUM_SCALAR) {
    if (is_float(a->type) ? close_enough(a->s.f, b->s.f, tol) || (tol == 0 && a->s.f == b->s.f)
                          : a->s.u == b->s.u)
      return true;
    snprintf(why, sz, "scalars %.17g / %lld vs %.17g / %lld", a->s.f, (long long)a->s.i, b->s.f,
             (long long)b->s.i);
    return false;
  }
  unsigned rank = ac_array_rank(a->array);
  if (rank != ac_array_rank(b->array) ||
      memcmp(ac_array_extents(a->array), ac_array_extents(b->array), rank * sizeof(int64_t))) {
    snprintf(why, sz, "shapes differ");
    return false;
  }
  int64_t n = ac_array_size(a->array);
  const unsigned char *pa = ac_array_data(a->array), *pb = ac_array_data(b->array);
  for (int64_t k = 0; k < n; k++) {
    const void *x = pa + (size_t)k * es, *y = pb + (size_t)k * es;
    if (!memcmp(x, y, es))
      continue;
    if (is_float(a->type) && tol > 0) {
      double u, v;
      if (a->type == AC_F32) {
        float fu, fv;
        memcpy(&fu, x, 4);
        memcpy(&fv, y, 4);
        u = fu;
        v = fv;
      } else {
        memcpy(&u, x, 8);
        memcpy(&v, y, 8);
      }
      if (close_enough(u, v, tol))
        continue;
      snprintf(why, sz, "element %lld: %.17g vs %.17g", (long long)k, u, v);
      return false;
    }
    snprintf(why, sz, "element %lld differs", (long long)k);
    return false;
  }
  return true;
}

static void err_text(ac_error *e, char *buf, size_t sz) {
  snprintf(buf, sz, "%u:%u: error: %s", ac_error_line(e), ac_error_column(e), ac_error_message(e));
}

/* Calls both functions on args. With `expect` NULL both must succeed and
 * agree; otherwise both must fail with exactly that text ("L:C: error:
 * MESSAGE"). Returns false (after reporting) on a mismatch. */
static bool pair_run(pair *p, const ac_datum *args, size_t na, double tol, const char *expect,
                     int line) {
  if (!p->ref || !p->cpu)
    return false; /* pair_open failed and said why */
  size_t nr = ac_function_num_results(p->ref);
  ac_datum *r1 = calloc(nr + 1, sizeof *r1), *r2 = calloc(nr + 1, sizeof *r2);
  ac_error *e1 = NULL, *e2 = NULL;
  ac_status s1 = ac_function_call(p->ref, args, na, r1, nr, &e1);
  ac_status s2 = ac_function_call(p->cpu, args, na, r2, nr, &e2);
  char t1[512] = "", t2[512] = "", why[256] = "";
  bool ok = true;
  if (e1)
    err_text(e1, t1, sizeof t1);
  if (e2)
    err_text(e2, t2, sizeof t2);
  if (expect) {
    ok = s1 != AC_OK && s2 != AC_OK && !strcmp(t1, expect) && !strcmp(t2, expect);
    if (!ok)
      fprintf(stderr, "line %d: expected \"%s\"\n  interp: %s\n  cpu:    %s\n", line, expect,
              s1 == AC_OK ? "(ok)" : t1, s2 == AC_OK ? "(ok)" : t2);
  } else if (s1 != AC_OK || s2 != AC_OK) {
    ok = false;
    fprintf(stderr, "line %d: a call failed\n  interp: %s\n  cpu:    %s\n", line,
            s1 == AC_OK ? "(ok)" : t1, s2 == AC_OK ? "(ok)" : t2);
  } else {
    for (size_t i = 0; i < nr && ok; i++)
      if (!same_datum(&r1[i], &r2[i], tol, why, sizeof why)) {
        ok = false;
        fprintf(stderr, "line %d: result %zu: %s\n", line, i, why);
      }
  }
  if (s1 == AC_OK)
    release_all(r1, nr);
  if (s2 == AC_OK)
    release_all(r2, nr);
  ac_error_destroy(e1);
  ac_error_destroy(e2);
  free(r1);
  free(r2);
  return ok;
}

#define DIFF(p, args, tol)                                                                         \
  CHECK(pair_run((p), (args), sizeof(args) / sizeof(args)[0], (tol), NULL, __LINE__))
#define DIFF_ERR(p, args, msg)                                                                     \
  CHECK(pair_run((p), (args), sizeof(args) / sizeof(args)[0], 0, (msg), __LINE__))

/* Sizes every rank-1 test runs at: empty, one, a few, one chunk, many. */
static const int64_t sizes[] = {0, 1, 2, 7, 1000, 100003};
#define NSIZES (sizeof sizes / sizeof sizes[0])

/* ---- fold ---- */

UNIT_TEST(fold_rank1_sums) {
  ac_context *ctx = ac_context_create();
  pair p;
  const char *src = "fn si(xs: i32[]) -> i32 { fold(|a, b| a + b, 0, xs) }\n"
                    "fn sf(xs: f32[]) -> f32 { fold(|a, b| a + b, 0.0, xs) }\n"
                    "fn sd(xs: f64[]) -> f64 { fold(|a, b| a + b, 1.5, xs) }\n"
                    "fn mx(xs: u16[]) -> u16 { fold(|a, b| max(a, b), 3, xs) }\n"
                    "fn all(bs: bool[]) -> (bool, bool[]) {\n"
                    "  (fold(|a, b| a && b, true, bs), scan_incl(|a, b| a || b, bs))\n"
                    "}\n"
                    "fn nest(xs: i8[]) -> i8 {\n"
                    "  fold(|a, b| fold(|p, q| max(p, q), a, generate(1, |k| b)), -128, xs)\n"
                    "}\n";
  rng r = {1};
  const char *fns[] = {"si", "sf", "sd", "mx", "all", "nest"};
  ac_scalar scs[] = {AC_I32, AC_F32, AC_F64, AC_U16, AC_BOOL, AC_I8};
  for (int f = 0; f < 6; f++) {
    if (!pair_open(&p, ctx, src, fns[f])) {
      CHECK(false);
      continue;
    }
    for (size_t s = 0; s < NSIZES; s++) {
      /* bools: mostly true, so that the fold's result varies with the size */
      int64_t lo = scs[f] == AC_I32 ? -1000000 : scs[f] == AC_I8 ? -100 : 0;
      int64_t hi = scs[f] == AC_BOOL ? 50000 : 63;
      ac_datum a[1] = {d_vec(ctx, scs[f], sizes[s], &r, lo, hi)};
      DIFF(&p, a, 0); /* exactly summable data: even the reordered sums agree */
      release_all(a, 1);
    }
    pair_close(&p);
  }
  /* not exactly summable: the parallel sum agrees within the tolerance */
  CHECK(pair_open(&p, ctx, src, "sd"));
  for (size_t s = 0; s < NSIZES; s++) {
    ac_datum a[1] = {d_f64_unit(ctx, sizes[s], &r)};
    DIFF(&p, a, 1e-12);
    release_all(a, 1);
  }
  pair_close(&p);
  ac_context_destroy(ctx);
}

/* Associative but not commutative folds, with a z that is not an identity:
 * composition of affine maps x -> a x + b (wrapping i64), and base-3
 * concatenation of digits as (value, 3^digits) pairs (wrapping u64). */
static const char *noncomm_src =
    "fn aff(as: i64[], bs: i64[]) -> (i64, i64) {\n"
    "  fold(|p, q| (p.0 * q.0, p.1 * q.0 + q.1), (3, 5), (as, bs))\n"
    "}\n"
    "fn cat(ds: u64[], ps: u64[]) -> (u64, u64) {\n"
    "  fold(|p, q| (p.0 * q.1 + q.0, p.1 * q.1), (7u64, 10u64), (ds, ps))\n"
    "}\n"
    "fn aff_rows(as: i64[,], bs: i64[,]) -> (i64[], i64[]) {\n"
    "  fold(|p, q| (p.0 * q.0, p.1 * q.0 + q.1), (3, 5), (as, bs))\n"
    "}\n"
    "fn aff3(as: i32[,,], bs: i32[,,]) -> (i32[,], i32[,]) {\n"
    "  fold(|p, q| (p.0 * q.0, p.1 * q.0 + q.1), (1, 0), (as, bs))\n"
    "}\n";

UNIT_TEST(fold_noncommutative_tuples) {
  ac_context *ctx = ac_context_create();
  rng r = {2};
  pair p;
  CHECK(pair_open(&p, ctx, noncomm_src, "aff"));
  for (size_t s = 0; s < NSIZES; s++) {
    ac_datum a[2] = {d_odd(ctx, AC_I64, 1, &sizes[s], &r),
                     d_vec(ctx, AC_I64, sizes[s], &r, -100, 100)};
    DIFF(&p, a, 0);
    release_all(a, 2);
  }
  pair_close(&p);
  CHECK(pair_open(&p, ctx, noncomm_src, "cat"));
  for (size_t s = 0; s < NSIZES; s++) {
    ac_datum a[2] = {d_vec(ctx, AC_U64, sizes[s], &r, 0, 9),
                     d_vec(ctx, AC_U64, sizes[s], &r, 3, 3)};
    DIFF(&p, a, 0);
    release_all(a, 2);
  }
  pair_close(&p);
  ac_context_destroy(ctx);
}

UNIT_TEST(fold_rows) {
  ac_context *ctx = ac_context_create();
  rng r = {3};
  pair p;
  /* many short rows, few long rows, empty rows, no rows */
  const int64_t shapes[][2] = {{1000, 100}, {3, 150000}, {1, 200001}, {5, 0}, {0, 7}, {2, 1}};
  CHECK(pair_open(&p, ctx, noncomm_src, "aff_rows"));
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    ac_datum a[2] = {d_odd(ctx, AC_I64, 2, shapes[s], &r),
                     d_gen(ctx, AC_I64, 2, shapes[s], &r, -50, 50)};
    DIFF(&p, a, 0);
    release_all(a, 2);
  }
  pair_close(&p);
  const int64_t shapes3[][3] = {{4, 5, 30000}, {200, 30, 20}, {3, 0, 4}, {2, 2, 1}};
  CHECK(pair_open(&p, ctx, noncomm_src, "aff3"));
  for (size_t s = 0; s < sizeof shapes3 / sizeof shapes3[0]; s++) {
    ac_datum a[2] = {d_odd(ctx, AC_I32, 3, shapes3[s], &r),
                     d_gen(ctx, AC_I32, 3, shapes3[s], &r, -50, 50)};
    DIFF(&p, a, 0);
    release_all(a, 2);
  }
  pair_close(&p);
  ac_context_destroy(ctx);
}

UNIT_TEST(fold_errors) {
  ac_context *ctx = ac_context_create();
  rng r = {4};
  pair p;
  const char *src = "fn f(xs: i32[], ys: f32[]) -> (i32, f32) {\n"
                    "  fold(|a, b| (a.0 + b.0, a.1 + b.1), (0, 0.0), (xs, ys))\n"
                    "}\n"
                    "fn g(xs: i64[], k: i64[]) -> i64 {\n"
                    "  fold(|a, b| max(a, b) + k[0] * 0, 0, xs)\n"
                    "}\n";
  CHECK(pair_open(&p, ctx, src, "f"));
  ac_datum a[2] = {d_vec(ctx, AC_I32, 3, &r, 0, 9), d_vec(ctx, AC_F32, 4, &r, 0, 9)};
  DIFF_ERR(&p, a, "2:3: error: fold: arrays have different shapes: [3] and [4]");
  release_all(a, 2);
  pair_close(&p);
  /* an error inside the (associative) combining function, in every piece */
  CHECK(pair_open(&p, ctx, src, "g"));
  ac_datum b[2] = {d_vec(ctx, AC_I64, 200000, &r, 0, 9), d_vec(ctx, AC_I64, 0, &r, 0, 9)};
  DIFF_ERR(&p, b, "5:27: error: index 0 out of bounds for dimension 0 of extent 0");
  release_all(b, 2);
  pair_close(&p);
  ac_context_destroy(ctx);
}

/* ---- fold_seg ---- */

UNIT_TEST(fold_seg_segments) {
  ac_context *ctx = ac_context_create();
  rng r = {5};
  pair p;
  const char *src =
      "fn s(xs: i32[], lens: i64[]) -> i32[] { fold_seg(|a, b| a + b, 1, xs, lens) }\n"
      "fn a(as: i64[], bs: i64[], lens: u8[]) -> (i64[], i64[]) {\n"
      "  fold_seg(|p, q| (p.0 * q.0, p.1 * q.0 + q.1), (1, 0), (as, bs), lens)\n"
      "}\n"
      "fn d(xs: f64[], lens: i32[]) -> f64[] { fold_seg(|a, b| a + b, 0.0, xs, lens) }\n";
  CHECK(pair_open(&p, ctx, src, "s"));
  const int64_t ns[] = {0, 1, 10, 150000};
  for (size_t s = 0; s < 4; s++) {
    ac_datum a[2] = {d_vec(ctx, AC_I32, ns[s], &r, -1000, 1000),
                     d_segments(ctx, AC_I64, ns[s], s == 3 ? 3000 : 4, &r)};
    DIFF(&p, a, 0);
    release_all(a, 2);
  }
  int64_t none = 0;
  ac_datum e[2] = {d_vec(ctx, AC_I32, 0, &r, 0, 0), d_i64s(ctx, 0, &none)};
  DIFF(&p, e, 0); /* no segments at all */
  release_all(e, 2);
  pair_close(&p);
  CHECK(pair_open(&p, ctx, src, "a"));
  for (size_t s = 0; s < 4; s++) {
    ac_datum a[3] = {d_odd(ctx, AC_I64, 1, &ns[s], &r), d_vec(ctx, AC_I64, ns[s], &r, -9, 9),
                     d_segments(ctx, AC_U8, ns[s], 200, &r)};
    DIFF(&p, a, 0);
    release_all(a, 3);
  }
  pair_close(&p);
  CHECK(pair_open(&p, ctx, src, "d"));
  ac_datum f[2] = {d_f64_unit(ctx, 100000, &r), d_segments(ctx, AC_I32, 100000, 50000, &r)};
  DIFF(&p, f, 1e-12);
  release_all(f, 2);
  pair_close(&p);
  ac_context_destroy(ctx);
}

UNIT_TEST(fold_seg_errors) {
  ac_context *ctx = ac_context_create();
  rng r = {6};
  pair p;
  const char *src = "fn s(xs: i32[], lens: i64[]) -> i32[] {\n"
                    "  fold_seg(|a, b| a + b, 0, xs, lens)\n"
                    "}\n";
  CHECK(pair_open(&p, ctx, src, "s"));
  const int64_t bad_sum[] = {2, 2};
  ac_datum a[2] = {d_vec(ctx, AC_I32, 5, &r, 0, 9), d_i64s(ctx, 2, bad_sum)};
  DIFF_ERR(&p, a, "2:3: error: fold_seg: segment lengths sum to 4 but the array has 5 elements");
  release_all(a, 2);
  /* the first negative length in order, even when it is far from the
   * start (a later piece of the offsets scan) */
  int64_t lens[100000];
  for (int64_t k = 0; k < 100000; k++)
    lens[k] = 1;
  lens[70000] = -3;
  lens[90000] = -7;
  ac_datum b[2] = {d_vec(ctx, AC_I32, 100000, &r, 0, 9), d_i64s(ctx, 100000, lens)};
  DIFF_ERR(&p, b, "2:3: error: fold_seg: negative segment length -3");
  release_all(b, 2);
  pair_close(&p);
  ac_context_destroy(ctx);
}

/* ---- scans ---- */

static const char *scan_src =
    "fn four(xs: i32[]) -> (i32[], i32[], i32[], i32[]) {\n"
    "  (scan(|a, b| a + b, 100, xs), scan_incl(|a, b| a + b, xs),\n"
    "   scanr(|a, b| a + b, 100, xs), scanr_incl(|a, b| a + b, xs))\n"
    "}\n"
    "fn aff(as: i64[], bs: i64[]) -> ((i64, i64)[], (i64, i64)[], (i64, i64)[], (i64, i64)[]) {\n"
    "  (scan(|p, q| (p.0 * q.0, p.1 * q.0 + q.1), (3, 5), (as, bs)),\n"
    "   scan_incl(|p, q| (p.0 * q.0, p.1 * q.0 + q.1), (as, bs)),\n"
    "   scanr(|p, q| (p.0 * q.0, p.1 * q.0 + q.1), (3, 5), (as, bs)),\n"
    "   scanr_incl(|p, q| (p.0 * q.0, p.1 * q.0 + q.1), (as, bs)))\n"
    "}\n"
    "fn rows(as: i64[,], bs: i64[,]) -> ((i64, i64)[,], (i64, i64)[,]) {\n"
    "  (scan(|p, q| (p.0 * q.0, p.1 * q.0 + q.1), (3, 5), (as, bs)),\n"
    "   scanr_incl(|p, q| (p.0 * q.0, p.1 * q.0 + q.1), (as, bs)))\n"
    "}\n"
    "fn cube(xs: f64[,,]) -> (f64[,,], f64[,,]) {\n"
    "  (scan_incl(|a, b| a + b, xs), scanr(|a, b| a + b, 0.25, xs))\n"
    "}\n"
    "fn fl(xs: f32[]) -> (f32[], f32[]) {\n"
    "  (scan(|a, b| a + b, 0.0, xs), scanr_incl(|a, b| a + b, xs))\n"
    "}\n";

UNIT_TEST(scan_rank1) {
  ac_context *ctx = ac_context_create();
  rng r = {7};
  pair p;
  CHECK(pair_open(&p, ctx, scan_src, "four"));
  for (size_t s = 0; s < NSIZES; s++) {
    ac_datum a[1] = {d_vec(ctx, AC_I32, sizes[s], &r, -100000, 100000)};
    DIFF(&p, a, 0);
    release_all(a, 1);
  }
  pair_close(&p);
  CHECK(pair_open(&p, ctx, scan_src, "aff"));
  for (size_t s = 0; s < NSIZES; s++) {
    ac_datum a[2] = {d_odd(ctx, AC_I64, 1, &sizes[s], &r), d_vec(ctx, AC_I64, sizes[s], &r, -9, 9)};
    DIFF(&p, a, 0);
    release_all(a, 2);
  }
  pair_close(&p);
  CHECK(pair_open(&p, ctx, scan_src, "fl"));
  for (size_t s = 0; s < NSIZES; s++) {
    ac_datum a[1] = {d_vec(ctx, AC_F32, sizes[s], &r, 0, 15)};
    DIFF(&p, a, 1e-5);
    release_all(a, 1);
  }
  pair_close(&p);
  ac_context_destroy(ctx);
}

UNIT_TEST(scan_rows) {
  ac_context *ctx = ac_context_create();
  rng r = {8};
  pair p;
  const int64_t shapes[][2] = {{2000, 50}, {3, 120000}, {4, 0}, {0, 3}, {1, 1}};
  CHECK(pair_open(&p, ctx, scan_src, "rows"));
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    ac_datum a[2] = {d_odd(ctx, AC_I64, 2, shapes[s], &r),
                     d_gen(ctx, AC_I64, 2, shapes[s], &r, -9, 9)};
    DIFF(&p, a, 0);
    release_all(a, 2);
  }
  pair_close(&p);
  const int64_t shapes3[][3] = {{2, 3, 40000}, {50, 40, 30}, {2, 0, 5}};
  CHECK(pair_open(&p, ctx, scan_src, "cube"));
  for (size_t s = 0; s < sizeof shapes3 / sizeof shapes3[0]; s++) {
    ac_datum a[1] = {d_gen(ctx, AC_F64, 3, shapes3[s], &r, 0, 63)};
    DIFF(&p, a, 1e-12);
    release_all(a, 1);
  }
  pair_close(&p);
  ac_context_destroy(ctx);
}

UNIT_TEST(scan_segments) {
  ac_context *ctx = ac_context_create();
  rng r = {9};
  pair p;
  const char *src =
      "fn s(xs: i32[], lens: i64[]) -> (i32[], i32[]) {\n"
      "  (scan_seg(|a, b| a + b, 7, xs, lens), scan_incl_seg(|a, b| a + b, xs, lens))\n"
      "}\n"
      "fn a(as: i64[], bs: i64[], lens: u16[]) -> ((i64, i64)[], (i64, i64)[]) {\n"
      "  (scan_seg(|p, q| (p.0 * q.0, p.1 * q.0 + q.1), (1, 0), (as, bs), lens),\n"
      "   scan_incl_seg(|p, q| (p.0 * q.0, p.1 * q.0 + q.1), (as, bs), lens))\n"
      "}\n";
  CHECK(pair_open(&p, ctx, src, "s"));
  const int64_t ns[] = {0, 1, 13, 140000};
  for (size_t s = 0; s < 4; s++) {
    ac_datum a[2] = {d_vec(ctx, AC_I32, ns[s], &r, -1000, 1000),
                     d_segments(ctx, AC_I64, ns[s], s == 3 ? 5000 : 3, &r)};
    DIFF(&p, a, 0);
    release_all(a, 2);
  }
  const int64_t neg[] = {2, -1, 4};
  ac_datum e[2] = {d_vec(ctx, AC_I32, 5, &r, 0, 9), d_i64s(ctx, 3, neg)};
  DIFF_ERR(&p, e, "2:4: error: scan_seg: negative segment length -1");
  release_all(e, 2);
  pair_close(&p);
  CHECK(pair_open(&p, ctx, src, "a"));
  for (size_t s = 0; s < 4; s++) {
    ac_datum a[3] = {d_odd(ctx, AC_I64, 1, &ns[s], &r), d_vec(ctx, AC_I64, ns[s], &r, -9, 9),
                     d_segments(ctx, AC_U16, ns[s], 300, &r)};
    DIFF(&p, a, 0);
    release_all(a, 3);
  }
  pair_close(&p);
  ac_context_destroy(ctx);
}

/* ---- scatter ---- */

/* A random permutation of 0..n-1 (Fisher-Yates). */
static void permutation(int64_t *v, int64_t n, rng *r) {
  for (int64_t k = 0; k < n; k++)
    v[k] = k;
  for (int64_t k = n - 1; k > 0; k--) {
    int64_t j = rng_int(r, 0, k), t = v[k];
    v[k] = v[j];
    v[j] = t;
  }
}

UNIT_TEST(scatter_writes) {
  ac_context *ctx = ac_context_create();
  rng r = {10};
  pair p;
  const char *src = "fn put(idx: i64[], vals: i32[], dest: i32[]) -> i32[] {\n"
                    "  scatter(idx, vals, dest)\n"
                    "}\n"
                    "fn put3(idx: i64[,], vals: i32[,], dest: i32[]) -> i32[] {\n"
                    "  scatter(idx, vals, dest)\n"
                    "}\n"
                    "fn put2(is: i32[], js: u16[], v0: f64[], v1: i8[], d0: f64[,], d1: i8[,]) -> "
                    "(f64[,], i8[,]) {\n"
                    "  scatter((is, js), (v0, v1), (d0, d1))\n"
                    "}\n";
  CHECK(pair_open(&p, ctx, src, "put"));
  int64_t *perm = malloc(300000 * sizeof *perm);
  const int64_t dn[] = {0, 1, 10, 300000}, in[] = {0, 1, 6, 200000};
  for (size_t s = 0; s < 4; s++) {
    permutation(perm, dn[s], &r);
    ac_datum a[3] = {d_i64s(ctx, in[s], perm), d_vec(ctx, AC_I32, in[s], &r, -99, 99),
                     d_vec(ctx, AC_I32, dn[s], &r, 1000, 2000)};
    DIFF(&p, a, 0);
    release_all(a, 3);
  }
  /* errors: out of range, written twice (far apart, in different chunks) */
  const int64_t oor[] = {0, 2};
  ac_datum e1[3] = {d_i64s(ctx, 2, oor), d_vec(ctx, AC_I32, 2, &r, 0, 9),
                    d_vec(ctx, AC_I32, 2, &r, 0, 9)};
  DIFF_ERR(&p, e1, "2:3: error: scatter: index 2 out of range for extent 2");
  release_all(e1, 3);
  permutation(perm, 200000, &r);
  perm[199999] = perm[3];
  ac_datum e2[3] = {d_i64s(ctx, 200000, perm), d_vec(ctx, AC_I32, 200000, &r, 0, 9),
                    d_vec(ctx, AC_I32, 200000, &r, 0, 9)};
  char msg[128];
  snprintf(msg, sizeof msg, "2:3: error: scatter: index %lld written twice", (long long)perm[3]);
  DIFF_ERR(&p, e2, msg);
  release_all(e2, 3);
  const int64_t lens2[] = {1, 2, 3};
  ac_datum e3[3] = {d_i64s(ctx, 3, lens2), d_vec(ctx, AC_I32, 2, &r, 0, 9),
                    d_vec(ctx, AC_I32, 5, &r, 0, 9)};
  DIFF_ERR(&p, e3, "2:3: error: scatter: arrays have different shapes: [3] and [2]");
  release_all(e3, 3);
  pair_close(&p);
  /* a rank-2 array of indices into a rank-1 destination */
  CHECK(pair_open(&p, ctx, src, "put3"));
  const int64_t iext[2] = {300, 400};
  permutation(perm, 150000, &r);
  ac_datum c3[3] = {d_array(ctx, AC_I64, 2, iext, perm), d_gen(ctx, AC_I32, 2, iext, &r, -9, 9),
                    d_vec(ctx, AC_I32, 150000, &r, 0, 9)};
  DIFF(&p, c3, 0);
  release_all(c3, 3);
  pair_close(&p);
  /* rank 2, tuples of arrays, index arrays of two integer kinds */
  CHECK(pair_open(&p, ctx, src, "put2"));
  const int64_t dext[2] = {300, 400};
  int64_t n = 50000;
  permutation(perm, 120000, &r);
  int32_t *is = malloc((size_t)n * sizeof *is);
  uint16_t *js = malloc((size_t)n * sizeof *js);
  for (int64_t k = 0; k < n; k++) {
    is[k] = (int32_t)(perm[k] / 400);
    js[k] = (uint16_t)(perm[k] % 400);
  }
  ac_datum a[6] = {d_array(ctx, AC_I32, 1, &n, is),       d_array(ctx, AC_U16, 1, &n, js),
                   d_vec(ctx, AC_F64, n, &r, -50, 50),    d_vec(ctx, AC_I8, n, &r, -100, 100),
                   d_gen(ctx, AC_F64, 2, dext, &r, 0, 9), d_gen(ctx, AC_I8, 2, dext, &r, 0, 9)};
  DIFF(&p, a, 0);
  release_all(a, 6);
  free(is);
  free(js);
  free(perm);
  pair_close(&p);
  ac_context_destroy(ctx);
}

/* ---- permute ---- */

/* permute(|a, b| OP, dest, |k| idx[k], xs) for one element type. */
static void permute_case(ac_context *ctx, const char *type, ac_scalar sc, const char *op,
                         double tol, rng *r) {
  char src[512];
  snprintf(src, sizeof src,
           "fn p(idx: i64[], xs: %s[], dest: %s[]) -> %s[] {\n"
           "  permute(|a, b| %s, dest, |k| idx[k], xs)\n"
           "}\n",
           type, type, type, op);
  pair p;
  if (!pair_open(&p, ctx, src, "p")) {
    CHECK(false);
    return;
  }
  const int64_t nd[] = {1, 5, 1000, 64}, nx[] = {0, 3, 20000, 100000};
  for (size_t s = 0; s < 4; s++) {
    int64_t lo = sc == AC_U32 || sc == AC_U64 ? 0 : -1000;
    ac_datum a[3] = {d_vec(ctx, AC_I64, nx[s], r, 0, nd[s] - 1), d_vec(ctx, sc, nx[s], r, lo, 1000),
                     d_vec(ctx, sc, nd[s], r, lo, 1000)};
    if (!pair_run(&p, a, 3, tol, NULL, __LINE__)) {
      fprintf(stderr, "  permute %s on %s\n", op, type);
      CHECK(false);
    }
    release_all(a, 3);
  }
  pair_close(&p);
}

UNIT_TEST(permute_atomics) {
  ac_context *ctx = ac_context_create();
  rng r = {11};
  const char *ints[] = {"i32", "i64", "u32", "u64"};
  const ac_scalar isc[] = {AC_I32, AC_I64, AC_U32, AC_U64};
  const char *iops[] = {"a + b", "b + a", "min(a, b)", "max(b, a)", "a & b", "a | b", "b ^ a"};
  for (int t = 0; t < 4; t++)
    for (int o = 0; o < 7; o++)
      permute_case(ctx, ints[t], isc[t], iops[o], 0, &r);
  const char *fops[] = {"a + b", "min(a, b)", "max(b, a)"};
  for (int o = 0; o < 3; o++) {
    /* the data are multiples of 1/16: sums are exact whatever the order */
    permute_case(ctx, "f32", AC_F32, fops[o], 0, &r);
    permute_case(ctx, "f64", AC_F64, fops[o], 0, &r);
  }
  ac_context_destroy(ctx);
}

UNIT_TEST(permute_locked) {
  ac_context *ctx = ac_context_create();
  rng r = {12};
  /* combiners without an atomic instruction: under the locks */
  permute_case(ctx, "i64", AC_I64, "a * b", 0, &r);
  permute_case(ctx, "i16", AC_I16, "a + b", 0, &r);
  permute_case(ctx, "u8", AC_U8, "max(a, b)", 0, &r);
  permute_case(ctx, "f64", AC_F64, "a + b + 0.0", 1e-12, &r);
  pair p;
  const char *src =
      "fn t(idx: i64[], xs: f64[], ones: i64[], s: f64[], c: i64[]) -> (f64[], i64[]) {\n"
      "  permute(|a, b| (a.0 + b.0, a.1 + b.1), (s, c), |k| idx[k], (xs, ones))\n"
      "}\n"
      "fn m2(m: i32[,], k: i64) -> i32[,] {\n"
      "  permute(|a, b| a + b, fill((k, k + 1), 0), |i, j| (j % k, i % (k + 1)), m)\n"
      "}\n"
      "fn bad(idx: i64[], xs: i32[], dest: i32[]) -> i32[] {\n"
      "  permute(|a, b| a * b, dest, |k| idx[k], xs)\n"
      "}\n";
  CHECK(pair_open(&p, ctx, src, "t"));
  int64_t n = 200000;
  ac_datum a[5] = {d_vec(ctx, AC_I64, n, &r, 0, 99), d_vec(ctx, AC_F64, n, &r, -100, 100),
                   d_vec(ctx, AC_I64, n, &r, 1, 1), d_vec(ctx, AC_F64, 100, &r, 0, 0),
                   d_vec(ctx, AC_I64, 100, &r, 0, 0)};
  DIFF(&p, a, 0);
  release_all(a, 5);
  pair_close(&p);
  CHECK(pair_open(&p, ctx, src, "m2"));
  const int64_t ms[2] = {500, 400};
  ac_datum b[2] = {d_gen(ctx, AC_I32, 2, ms, &r, -9, 9), d_scalar_i64(7)};
  DIFF(&p, b, 0);
  release_all(b, 2);
  pair_close(&p);
  CHECK(pair_open(&p, ctx, src, "bad"));
  const int64_t idx[] = {1, 4};
  ac_datum e[3] = {d_i64s(ctx, 2, idx), d_vec(ctx, AC_I32, 2, &r, 0, 9),
                   d_vec(ctx, AC_I32, 3, &r, 0, 9)};
  DIFF_ERR(&p, e, "8:3: error: permute: index 4 out of range for extent 3");
  release_all(e, 3);
  pair_close(&p);
  ac_context_destroy(ctx);
}

/* ---- filter ---- */

UNIT_TEST(filter_keeps) {
  ac_context *ctx = ac_context_create();
  rng r = {13};
  pair p;
  const char *src = "fn pos(xs: i32[], ys: f32[]) -> (i32, f32)[] {\n"
                    "  filter(|p| p.0 > 0, (xs, ys))\n"
                    "}\n"
                    "fn none(xs: i64[]) -> i64[] { filter(|x| x > 1000000, xs) }\n"
                    "fn all(xs: bool[]) -> bool[] { filter(|x| x || !x, xs) }\n"
                    "fn nest(xs: i64[]) -> i64[] {\n"
                    "  filter(|x| fold(|a, b| a + b, 0, generate(3, |k| x + k)) > 5, xs)\n"
                    "}\n";
  CHECK(pair_open(&p, ctx, src, "pos"));
  for (size_t s = 0; s < NSIZES; s++) {
    ac_datum a[2] = {d_vec(ctx, AC_I32, sizes[s], &r, -5, 5),
                     d_vec(ctx, AC_F32, sizes[s], &r, 0, 99)};
    DIFF(&p, a, 0);
    release_all(a, 2);
  }
  ac_datum e[2] = {d_vec(ctx, AC_I32, 3, &r, 0, 9), d_vec(ctx, AC_F32, 2, &r, 0, 9)};
  DIFF_ERR(&p, e, "2:3: error: filter: arrays have different shapes: [3] and [2]");
  release_all(e, 2);
  pair_close(&p);
  const char *fns[] = {"none", "all", "nest"};
  const ac_scalar scs[] = {AC_I64, AC_BOOL, AC_I64};
  for (int f = 0; f < 3; f++) {
    CHECK(pair_open(&p, ctx, src, fns[f]));
    for (size_t s = 0; s < NSIZES; s++) {
      ac_datum a[1] = {d_vec(ctx, scs[f], sizes[s], &r, -5, 5)};
      DIFF(&p, a, 0);
      release_all(a, 1);
    }
    pair_close(&p);
  }
  ac_context_destroy(ctx);
}

/* ---- rec ---- */

static const char *rec_src =
    "fn edit(s: u8[], t: u8[]) -> (i32, i32[,]) {\n"
    "  let n = len(s);\n"
    "  let m = len(t);\n"
    "  let d = rec (i in 0..=n, j in 0..=m) -> i32 {\n"
    "    if i == 0 { i32(j) } else if j == 0 { i32(i) } else {\n"
    "      min(min(d[i - 1, j] + 1, d[i, j - 1] + 1),\n"
    "          d[i - 1, j - 1] + (if s[i - 1] == t[j - 1] { 0 } else { 1 }))\n"
    "    }\n"
    "  };\n"
    "  (d[n, m], d)\n"
    "}\n"
    "fn lcs(s: u8[], t: u8[]) -> i32 {\n"
    "  let n = len(s);\n"
    "  let m = len(t);\n"
    "  let d = rec (i in 0..=n, j in 0..=m) -> i32 {\n"
    "    if i == 0 || j == 0 { 0 } else if s[i - 1] == t[j - 1] { d[i - 1, j - 1] + 1 }\n"
    "    else { max(d[i - 1, j], d[i, j - 1]) }\n"
    "  };\n"
    "  d[n, m]\n"
    "}\n"
    "fn fib(n: i64) -> i64[] {\n"
    "  rec f (i in 0..n) -> i64 { if i < 2 { i } else { f[i - 1] + f[i - 2] } }\n"
    "}\n"
    "fn back(n: i64) -> (i64, f64)[] {\n"
    "  rec d (i in 1..=n) -> (i64, f64) {\n"
    "    if i == n { (1, 0.5) } else { let p = d[i + 1]; (p.0 * 3 + i, p.1 / 2.0) }\n"
    "  }\n"
    "}\n"
    "fn cube(n: i64, m: i32) -> i64[,,] {\n"
    "  rec d (i in 0..n, j in 1..=m, k in -2..n) -> i64 {\n"
    "    if i == 0 || j == 1 || k == -2 { i + 10 * j + 100 * k }\n"
    "    else { d[i - 1, j, k] + d[i, j - 1, k] * 2 + d[i, j, k - 1] * 3 + d[i - 1, j - 1, k - 1] "
    "}\n"
    "  }\n"
    "}\n"
    "fn zero(n: i64, m: u8) -> (i64, f64)[,] {\n"
    "  rec (i in 1..=n, j in 0..m) -> (i64, f64) { (i * i64(j), f64(i) / 2.0) }\n"
    "}\n"
    "fn skew(n: i64, m: i64) -> i64[,] {\n"
    "  rec d (i in 0..n, j in 0..m) -> i64 {\n"
    "    if i == 0 || j == 0 || j == m - 1 { i * 7 + j } else { d[i - 1, j + 1] + d[i, j - 1] }\n"
    "  }\n"
    "}\n"
    "fn skew2(n: i64, m: i64) -> i64[,] {\n"
    "  rec d (i in 0..n, j in 0..m) -> i64 {\n"
    "    if i == 0 || i == n - 1 || j < 2 || j == m - 1 { i * 100 + j }\n"
    "    else { d[i - 1, j + 1] + d[i + 1, j - 2] }\n"
    "  }\n"
    "}\n"
    "fn walks(adj: bool[,], n: i64) -> i64[,] {\n"
    "  let m = len(adj);\n"
    "  rec c (t in 0..=n, s in 0..m) -> i64 {\n"
    "    if t == 0 { if s == 0 { 1 } else { 0 } } else {\n"
    "      fold(|a, b| a + b, 0, generate(m, |k| if adj[k, s] { c[t - 1, k] } else { 0 }))\n"
    "    }\n"
    "  }\n"
    "}\n"
    "fn shifted(xs: i64[]) -> i64[] {\n"
    "  let n = len(xs);\n"
    "  rec d (i in 0..n) -> i64 { d[i - 1] + xs[i] }\n"
    "}\n"
    "fn diag(n: i64) -> i64[,] {\n"
    "  rec d (i in 0..n, j in 0..n) -> i64 { if i == 0 { j } else { d[i - 1, j + 1] } }\n"
    "}\n"
    "fn anti(n: i64, m: i64) -> (i64[,], i64[,]) {\n"
    "  (rec d (i in 0..n, j in 0..m) -> i64 {\n"
    "     if i == n - 1 || j == 0 { i + 2 * j } else { d[i + 1, j] * 2 + d[i, j - 1] }\n"
    "   },\n"
    "   rec e (i in 0..n, j in 0..m) -> i64 {\n"
    "     if i == 0 || j == m - 1 { 3 * i - j } else { e[i, j + 1] * 3 - e[i - 1, j] }\n"
    "   })\n"
    "}\n"
    "fn wide(n: i64, m: i64) -> f64[,] {\n"
    "  rec d (t in 0..=n, s in 0..m) -> f64 {\n"
    "    if t == 0 { f64(s % 17) } else if s == m - 1 { d[t - 1, s] }\n"
    "    else { (d[t - 1, s] + d[t - 1, s + 1]) * 0.5 }\n"
    "  }\n"
    "}\n"
    "fn negext(a: i64, b: i64) -> i64[] {\n"
    "  rec (i in a..=b) -> i64 { i }\n"
    "}\n";

/* A random string over a small alphabet (many matches). */
static ac_datum d_text(ac_context *ctx, int64_t n, rng *r) {
  return d_vec(ctx, AC_U8, n, r, 'a', 'd');
}

UNIT_TEST(rec_dynamic_programming) {
  ac_context *ctx = ac_context_create();
  rng r = {14};
  pair p;
  const int64_t ls[][2] = {{0, 0}, {0, 5}, {6, 7}, {31, 257}, {400, 350}};
  const char *fns[] = {"edit", "lcs"};
  for (int f = 0; f < 2; f++) {
    CHECK(pair_open(&p, ctx, rec_src, fns[f]));
    for (size_t s = 0; s < sizeof ls / sizeof ls[0]; s++) {
      ac_datum a[2] = {d_text(ctx, ls[s][0], &r), d_text(ctx, ls[s][1], &r)};
      DIFF(&p, a, 0);
      release_all(a, 2);
    }
    pair_close(&p);
  }
  ac_context_destroy(ctx);
}

UNIT_TEST(rec_schedules) {
  ac_context *ctx = ac_context_create();
  pair p;
  /* rank 1 forwards and backwards (a tuple element), rank 3, skewed
   * schedules (2, 1) and (3, 2), and the all-zero schedule */
  CHECK(pair_open(&p, ctx, rec_src, "fib"));
  const int64_t ns[] = {0, 1, 2, 90, 100000};
  for (size_t s = 0; s < 5; s++) {
    ac_datum a[1] = {d_scalar_i64(ns[s])};
    DIFF(&p, a, 0);
  }
  pair_close(&p);
  CHECK(pair_open(&p, ctx, rec_src, "back"));
  for (size_t s = 0; s < 5; s++) {
    ac_datum a[1] = {d_scalar_i64(ns[s])};
    DIFF(&p, a, 0);
  }
  pair_close(&p);
  CHECK(pair_open(&p, ctx, rec_src, "cube"));
  ac_datum c[2] = {d_scalar_i64(50), {.kind = AC_DATUM_SCALAR, .type = AC_I32, .s.i = 40}};
  DIFF(&p, c, 0);
  c[0] = d_scalar_i64(0);
  DIFF(&p, c, 0);
  pair_close(&p);
  const int64_t dims[][2] = {{1, 1}, {3, 4}, {200, 150}, {60, 500}};
  /* schedules (2, 1), (3, 2), (-1, 1) and (1, -1) */
  const char *fns[] = {"skew", "skew2", "anti"};
  for (int f = 0; f < 3; f++) {
    CHECK(pair_open(&p, ctx, rec_src, fns[f]));
    for (size_t s = 0; s < 4; s++) {
      ac_datum a[2] = {d_scalar_i64(dims[s][0]), d_scalar_i64(dims[s][1])};
      DIFF(&p, a, 0);
    }
    pair_close(&p);
  }
  /* schedule (1, 0) with wavefronts wide enough for several chunks */
  CHECK(pair_open(&p, ctx, rec_src, "wide"));
  ac_datum w[2] = {d_scalar_i64(10), d_scalar_i64(20000)};
  DIFF(&p, w, 0);
  pair_close(&p);
  CHECK(pair_open(&p, ctx, rec_src, "zero"));
  ac_datum z[2] = {d_scalar_i64(700), {.kind = AC_DATUM_SCALAR, .type = AC_U8, .s.u = 250}};
  DIFF(&p, z, 0);
  z[0] = d_scalar_i64(0);
  DIFF(&p, z, 0);
  pair_close(&p);
  ac_context_destroy(ctx);
}

UNIT_TEST(rec_nested_and_errors) {
  ac_context *ctx = ac_context_create();
  rng r = {15};
  pair p;
  CHECK(pair_open(&p, ctx, rec_src, "walks"));
  const int64_t ae[2] = {40, 40};
  ac_datum w[2] = {d_gen(ctx, AC_BOOL, 2, ae, &r, 0, 1), d_scalar_i64(30)};
  DIFF(&p, w, 0);
  release_all(w, 2);
  pair_close(&p);
  CHECK(pair_open(&p, ctx, rec_src, "shifted"));
  ac_datum s[1] = {d_vec(ctx, AC_I64, 3, &r, 0, 9)};
  DIFF_ERR(&p, s, "59:30: error: rec: read of d[-1] outside the domain");
  release_all(s, 1);
  pair_close(&p);
  /* an empty domain with an absurd extent: refused when allocated, before
   * the schedule's overflow check (which arrays small enough to exist
   * cannot reach) */
  CHECK(pair_open(&p, ctx, rec_src, "skew2"));
  ac_datum o[2] = {d_scalar_i64((int64_t)1 << 62), d_scalar_i64(0)};
  DIFF_ERR(&p, o, "44:3: error: array too large");
  pair_close(&p);
  /* only (1, 4) reads outside, so the message does not depend on the
   * order inside the wavefront */
  CHECK(pair_open(&p, ctx, rec_src, "diag"));
  ac_datum e[1] = {d_scalar_i64(5)};
  DIFF_ERR(&p, e, "62:64: error: rec: read of d[0, 5] outside the domain");
  pair_close(&p);
  CHECK(pair_open(&p, ctx, rec_src, "negext"));
  ac_datum n[2] = {d_scalar_i64(5), d_scalar_i64(2)};
  DIFF_ERR(&p, n, "79:3: error: negative extent -2");
  n[0] = d_scalar_i64(-1);
  n[1] = d_scalar_i64(INT64_MAX);
  DIFF_ERR(&p, n, "79:3: error: array too large");
  ac_datum n2[2] = {d_scalar_i64(5), d_scalar_i64(4)};
  DIFF(&p, n2, 0);
  pair_close(&p);
  ac_context_destroy(ctx);
}

UNIT_MAIN(fold_rank1_sums, fold_noncommutative_tuples, fold_rows, fold_errors, fold_seg_segments,
          fold_seg_errors, scan_rank1, scan_rows, scan_segments, scatter_writes, permute_atomics,
          permute_locked, filter_keeps, rec_dynamic_programming, rec_schedules,
          rec_nested_and_errors)
