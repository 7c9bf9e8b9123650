/* ac_function_pointer tests (lib/api/fnptr.c): functions of 0 to 12
 * parameters cycling through scalar kinds and arrays, each returning the
 * tuple (i64, f64, i64[]), are generated as program text and called
 * through their closures cast to the exact C function type, on the
 * interpreter and on the CPU backend. Every parameter contributes to a
 * result with a weight of its position, so a value passed in the wrong
 * register, truncated or sign-extended wrongly shows up. Also: errors come
 * back through the status and ac_error **, a NULL result pointer discards
 * that result, and the closure is made once. */
#include "unit.h"

#include "arrayc/arrayc.h"

#include <stdlib.h>

#define NPARAM 12

/* Parameter k of every function has type ptype[k]. */
static const char *const ptype[NPARAM] = {"i8",  "f32", "bool", "u16", "f64", "i32[]",
                                          "i64", "u8",  "f32[]", "i16", "u32", "u64"};

/* Appends function fN (N = n parameters) to buf: the weighted sums of its
 * integer-like and float-like parameters, and an array of n + 1 elements. */
static void gen_function(char *buf, size_t cap, int n) {
  size_t len = strlen(buf);
  len += (size_t)snprintf(buf + len, cap - len, "fn f%d(", n);
  for (int k = 0; k < n; k++)
    len += (size_t)snprintf(buf + len, cap - len, "%sp%d: %s", k ? ", " : "", k, ptype[k]);
  len += (size_t)snprintf(buf + len, cap - len, ") -> (i64, f64, i64[]) {\n  let si = 0i64");
  for (int k = 0; k < n; k++) {
    const char *t = ptype[k];
    if (!strcmp(t, "bool"))
      len += (size_t)snprintf(buf + len, cap - len, " + %d * (if p%d { 1 } else { 0 })", k + 1, k);
    else if (!strcmp(t, "i32[]"))
      len += (size_t)snprintf(buf + len, cap - len,
                              " + %d * fold(|a, b| a + b, 0, map(|x| i64(x), p%d))", k + 1, k);
    else if (t[0] == 'i' || t[0] == 'u')
      len += (size_t)snprintf(buf + len, cap - len, " + %d * i64(p%d)", k + 1, k);
  }
  len += (size_t)snprintf(buf + len, cap - len, ";\n  let sf = 0.0");
  for (int k = 0; k < n; k++) {
    const char *t = ptype[k];
    if (!strcmp(t, "f32[]"))
      len += (size_t)snprintf(buf + len, cap - len,
                              " + %d.0 * f64(fold(|a, b| a + b, 0.0, p%d))", k + 1, k);
    else if (t[0] == 'f')
      len += (size_t)snprintf(buf + len, cap - len, " + %d.0 * f64(p%d)", k + 1, k);
  }
  snprintf(buf + len, cap - len, ";\n  (si, sf, map(|i| i * 10 + %d, iota(%d)))\n}\n", n, n + 1);
}

/* The arguments every call passes (parameter k gets value k). */
typedef struct argv_t {
  int8_t p0;
  float p1;
  bool p2;
  uint16_t p3;
  double p4;
  ac_array *p5;
  int64_t p6;
  uint8_t p7;
  ac_array *p8;
  int16_t p9;
  uint32_t p10;
  uint64_t p11;
} argv_t;

/* Expected results of fN on a (computed as the language does: i64 wraps). */
static void expected(const argv_t *a, int n, int64_t *si, double *sf) {
  uint64_t s = 0;
  double f = 0;
  int32_t arr5[3] = {1, -2, 3};
  int64_t sum5 = arr5[0] + arr5[1] + arr5[2];
  for (int k = 0; k < n; k++) {
    uint64_t w = (uint64_t)k + 1;
    switch (k) {
    case 0: s += w * (uint64_t)(int64_t)a->p0; break;
    case 1: f += (double)w * a->p1; break;
    case 2: s += w * (a->p2 ? 1u : 0u); break;
    case 3: s += w * a->p3; break;
    case 4: f += (double)w * a->p4; break;
    case 5: s += w * (uint64_t)sum5; break;
    case 6: s += w * (uint64_t)a->p6; break;
    case 7: s += w * a->p7; break;
    case 8: f += (double)w * (0.5 + 0.25); break;
    case 9: s += w * (uint64_t)(int64_t)a->p9; break;
    case 10: s += w * a->p10; break;
    case 11: s += w * a->p11; break;
    }
  }
  *si = (int64_t)s;
  *sf = f;
}

/* The C types of the parameters, as lists for 1..12 parameters. */
#define T1 int8_t
#define T2 T1, float
#define T3 T2, bool
#define T4 T3, uint16_t
#define T5 T4, double
#define T6 T5, ac_array *
#define T7 T6, int64_t
#define T8 T7, uint8_t
#define T9 T8, ac_array *
#define T10 T9, int16_t
#define T11 T10, uint32_t
#define T12 T11, uint64_t
#define V1 a.p0
#define V2 V1, a.p1
#define V3 V2, a.p2
#define V4 V3, a.p3
#define V5 V4, a.p4
#define V6 V5, a.p5
#define V7 V6, a.p6
#define V8 V7, a.p7
#define V9 V8, a.p8
#define V10 V9, a.p9
#define V11 V10, a.p10
#define V12 V11, a.p11
#define RES int64_t *, double *, ac_array **, ac_error **

/* Calls the closure of fN with the exact C type for n parameters. */
static ac_status call_n(void (*fp)(void), int n, argv_t a, int64_t *r0, double *r1, ac_array **r2,
                        ac_error **err) {
#define CALL(N) return ((ac_status(*)(T##N, RES))fp)(V##N, r0, r1, r2, err)
  switch (n) {
  case 0: return ((ac_status(*)(RES))fp)(r0, r1, r2, err);
  case 1: CALL(1);
  case 2: CALL(2);
  case 3: CALL(3);
  case 4: CALL(4);
  case 5: CALL(5);
  case 6: CALL(6);
  case 7: CALL(7);
  case 8: CALL(8);
  case 9: CALL(9);
  case 10: CALL(10);
  case 11: CALL(11);
  case 12: CALL(12);
  }
#undef CALL
  return AC_ERR_INTERNAL;
}

/* Checks results (si, sf, the array n*1 + i*10) for fN on a. */
static void check_results(int n, const argv_t *a, int64_t r0, double r1, ac_array *r2) {
  int64_t esi;
  double esf;
  expected(a, n, &esi, &esf);
  CHECK_EQ_INT(r0, esi);
  CHECK(r1 == esf);
  CHECK(r2 != NULL);
  if (r2) {
    CHECK_EQ_INT(ac_array_size(r2), n + 1);
    int64_t out[NPARAM + 1];
    CHECK_EQ_INT(ac_array_read(r2, out, sizeof out, NULL), AC_OK);
    for (int i = 0; i <= n; i++)
      CHECK_EQ_INT(out[i], i * 10 + n);
  }
}

static void run_backend(ac_backend be) {
  ac_context *ctx = ac_context_create();
  char *text = calloc(1, 32768);
  for (int n = 0; n <= NPARAM; n++)
    gen_function(text, 32768, n);
  ac_module *m = NULL;
  ac_error *err = NULL;
  if (ac_module_parse(ctx, "fnptr.ac", text, strlen(text), &m, &err) != AC_OK) {
    fprintf(stderr, "%s\n%s", text, ac_error_text(err));
    CHECK(!"generated text parses");
    ac_error_destroy(err);
    free(text);
    ac_context_destroy(ctx);
    return;
  }
  free(text);
  int32_t v5[3] = {1, -2, 3};
  float v8[2] = {0.5f, 0.25f};
  argv_t a = {-5, 1.5f, true, 65535, -2.25, NULL, -((int64_t)1 << 40), 200, NULL, -300,
              4000000000u, (uint64_t)1 << 62};
  a.p5 = ac_array_create(ctx, AC_I32, 1, (int64_t[]){3}, v5, NULL);
  a.p8 = ac_array_borrow(ctx, AC_F32, 1, (int64_t[]){2}, v8, NULL, NULL, NULL);
  for (int n = 0; n <= NPARAM; n++) {
    char name[8];
    snprintf(name, sizeof name, "f%d", n);
    ac_function *f = NULL;
    if (ac_function_create(m, name, be, &f, &err) != AC_OK) {
      fprintf(stderr, "  %s on %s: %s", name, ac_backend_name(be), ac_error_text(err));
      ac_error_destroy(err);
      CHECK(!"compiles");
      continue;
    }
    CHECK_EQ_INT(ac_function_backend(f), be);
    void (*fp)(void) = NULL, (*again)(void) = NULL;
    CHECK_EQ_INT(ac_function_pointer(f, &fp, &err), AC_OK);
    CHECK_EQ_INT(ac_function_pointer(f, &again, &err), AC_OK);
    CHECK(fp != NULL && fp == again);
    int64_t r0 = -1;
    double r1 = -1;
    ac_array *r2 = NULL;
    err = NULL;
    CHECK_EQ_INT(call_n(fp, n, a, &r0, &r1, &r2, &err), AC_OK);
    CHECK(err == NULL);
    check_results(n, &a, r0, r1, r2);
    ac_array_release(r2);

    /* other values: signs flipped, false, zero; no error pointer; the
     * array result discarded */
    argv_t b = a;
    b.p0 = 127;
    b.p1 = -0.75f;
    b.p2 = false;
    b.p3 = 1;
    b.p6 = INT64_MAX;
    b.p9 = 32767;
    b.p11 = UINT64_MAX;
    CHECK_EQ_INT(call_n(fp, n, b, &r0, &r1, NULL, NULL), AC_OK);
    int64_t esi;
    double esf;
    expected(&b, n, &esi, &esf);
    CHECK_EQ_INT(r0, esi);
    CHECK(r1 == esf);

    /* a wrong argument comes back as a status and an error */
    if (n > 5) {
      argv_t c = a;
      c.p5 = a.p8; /* f32[] where i32[] belongs */
      r0 = 77;
      CHECK_EQ_INT(call_n(fp, n, c, &r0, &r1, &r2, &err), AC_ERR_INVALID);
      CHECK_STR(ac_error_message(err), "argument 6 (p5): expected i32[], got f32[]");
      CHECK_EQ_INT(r0, 77); /* results untouched */
      ac_error_destroy(err);
      c.p5 = NULL;
      CHECK_EQ_INT(call_n(fp, n, c, &r0, &r1, &r2, NULL), AC_ERR_INVALID);
    }
    ac_function_destroy(f); /* frees the closure */
  }
  ac_array_release(a.p5);
  ac_array_release(a.p8);
  ac_module_destroy(m);
  ac_context_destroy(ctx);
}

UNIT_TEST(closures_on_the_interpreter) {
  run_backend(AC_BACKEND_INTERP);
}

UNIT_TEST(closures_on_the_cpu) {
  run_backend(AC_BACKEND_CPU);
}

/* A runtime error inside a call through the pointer names its position. */
UNIT_TEST(runtime_errors_through_the_pointer) {
  static const char *text = "fn at(xs: f32[], i: i64) -> f32 {\n  xs[i]\n}\n";
  ac_backend bes[2] = {AC_BACKEND_INTERP, AC_BACKEND_CPU};
  for (int b = 0; b < 2; b++) {
    ac_context *ctx = ac_context_create();
    ac_module *m = NULL;
    ac_function *f = NULL;
    ac_error *err = NULL;
    void (*fp)(void) = NULL;
    if (ac_module_parse(ctx, "at.ac", text, strlen(text), &m, NULL) != AC_OK ||
        ac_function_create(m, "at", bes[b], &f, NULL) != AC_OK ||
        ac_function_pointer(f, &fp, NULL) != AC_OK) {
      CHECK(!"set up");
    } else {
      ac_status (*at)(ac_array *, int64_t, float *, ac_error **) =
          (ac_status(*)(ac_array *, int64_t, float *, ac_error **))fp;
      float v[2] = {1.5f, 2.5f}, r = 0;
      ac_array *xa = ac_array_create(ctx, AC_F32, 1, (int64_t[]){2}, v, NULL);
      CHECK_EQ_INT(at(xa, 1, &r, &err), AC_OK);
      CHECK(r == 2.5f);
      CHECK_EQ_INT(at(xa, 2, &r, &err), AC_ERR_RUNTIME);
      CHECK_EQ_INT(ac_error_line(err), 2);
      CHECK_EQ_INT(ac_error_column(err), 3);
      ac_error_destroy(err);
      CHECK_EQ_INT(at(xa, -1, &r, &err), AC_ERR_RUNTIME);
      ac_error_destroy(err);
      CHECK_EQ_INT(at(xa, 0, &r, &err), AC_OK);
      CHECK(r == 1.5f);
      ac_array_release(xa);
    }
    ac_function_destroy(f);
    ac_module_destroy(m);
    ac_context_destroy(ctx);
  }
}

UNIT_MAIN(closures_on_the_interpreter, closures_on_the_cpu, runtime_errors_through_the_pointer)
