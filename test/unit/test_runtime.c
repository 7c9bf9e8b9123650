/* Runtime API tests (include/arrayc/runtime.h, lib/api/runtime.c, array.c,
 * function.c): runtimes of every backend, copied and borrowed arrays with
 * their release callbacks, reading arrays back, compiling and calling
 * functions generically on the interpreter and the CPU backend with equal
 * results, errors that leave the runtime usable (and name the same source
 * position as the interpreter), the context's default runtimes, plan and
 * LLVM printing, and four threads calling one CPU function at once. */
#include "unit.h"

#include "arrayc/arrayc.h"

#include <stdlib.h>
#include <threads.h>

static const char *prog = "fn saxpy(a: f32, xs: f32[], ys: f32[]) -> f32[] {\n"
                          "  map(|x, y| a * x + y, xs, ys)\n"
                          "}\n"
                          "fn stats(xs: i64[]) -> (i64, i64[]) {\n"
                          "  (fold(|a, b| a + b, 0, xs), map(|x| x * x, xs))\n"
                          "}\n"
                          "fn at(xs: i32[], i: i64) -> i32 {\n"
                          "  xs[i]\n"
                          "}\n"
                          "fn flags(b: bool[]) -> i64 {\n"
                          "  fold(|s, t| s + t, 0, map(|x| if x { 1i64 } else { 0i64 }, b))\n"
                          "}\n";

static ac_module *parse(ac_context *ctx, const char *text) {
  ac_module *m = NULL;
  ac_error *err = NULL;
  if (ac_module_parse(ctx, "prog.ac", text, strlen(text), &m, &err) != AC_OK) {
    fprintf(stderr, "parse: %s", ac_error_text(err));
    ac_error_destroy(err);
    return NULL;
  }
  return m;
}

/* Prints a compile or call error so that a failing check shows why, and
 * frees it. It takes the error's address: `show(call(&err), &err)` reads
 * the error only after the call, whatever order the arguments go in. */
static ac_status show(ac_status st, ac_error **err) {
  if (st != AC_OK)
    fprintf(stderr, "  (%s)\n", *err ? ac_error_text(*err) : "no error object");
  ac_error_destroy(*err);
  *err = NULL;
  return st;
}

static ac_datum scalar_f32(float v) {
  ac_datum d = {AC_DATUM_SCALAR, AC_F32, {.f = v}, NULL};
  return d;
}
static ac_datum scalar_i64(int64_t v) {
  ac_datum d = {AC_DATUM_SCALAR, AC_I64, {.i = v}, NULL};
  return d;
}
static ac_datum array_datum(ac_array *a) {
  ac_datum d = {AC_DATUM_ARRAY, a ? ac_array_type(a) : AC_BOOL, {0}, a};
  return d;
}

UNIT_TEST(runtimes_of_each_backend) {
  ac_context *ctx = ac_context_create();
  ac_runtime *rt = NULL;
  ac_error *err = NULL;
  CHECK_EQ_INT(ac_runtime_create(ctx, AC_BACKEND_INTERP, &rt, &err), AC_OK);
  CHECK_EQ_INT(ac_runtime_backend(rt), AC_BACKEND_INTERP);
  CHECK_EQ_INT(ac_runtime_num_threads(rt), 1);
  CHECK_EQ_INT(ac_runtime_num_compilations(rt), 0);
  ac_runtime_destroy(rt);

  CHECK_EQ_INT(show(ac_runtime_create(ctx, AC_BACKEND_CPU, &rt, &err), &err), AC_OK);
  if (rt) {
    CHECK_EQ_INT(ac_runtime_backend(rt), AC_BACKEND_CPU);
    CHECK(ac_runtime_num_threads(rt) >= 1);
    ac_runtime_destroy(rt);
  }
  /* AUTO is the GPU when there is one (driver and device), else the CPU;
   * without one, asking for the GPU says "no GPU: " and why */
  ac_runtime *grt = NULL;
  ac_status gst = ac_runtime_create(ctx, AC_BACKEND_GPU, &grt, &err);
  if (gst == AC_OK) {
    CHECK_EQ_INT(ac_runtime_backend(grt), AC_BACKEND_GPU);
    ac_runtime_destroy(grt);
  } else {
    CHECK_EQ_INT(gst, AC_ERR_UNSUPPORTED);
    CHECK(grt == NULL);
    CHECK(err && strncmp(ac_error_message(err), "no GPU: ", 8) == 0);
    ac_error_destroy(err);
  }
  CHECK_EQ_INT(show(ac_runtime_create(ctx, AC_BACKEND_AUTO, &rt, &err), &err), AC_OK);
  if (rt) {
    CHECK_EQ_INT(ac_runtime_backend(rt), gst == AC_OK ? AC_BACKEND_GPU : AC_BACKEND_CPU);
    ac_runtime_destroy(rt);
  }
  /* the SIMT emulator is always there */
  CHECK_EQ_INT(show(ac_runtime_create(ctx, AC_BACKEND_SIMT_EMU, &rt, &err), &err), AC_OK);
  if (rt) {
    CHECK_EQ_INT(ac_runtime_backend(rt), AC_BACKEND_SIMT_EMU);
    ac_runtime_destroy(rt);
  }

  rt = (ac_runtime *)&err; /* overwritten with NULL on failure */
  CHECK_EQ_INT(ac_runtime_create(ctx, (ac_backend)7, &rt, &err), AC_ERR_INVALID);
  CHECK_STR(ac_error_message(err), "unknown backend 7");
  ac_error_destroy(err);
  CHECK_EQ_INT(ac_runtime_create(ctx, AC_BACKEND_CPU, NULL, &err), AC_ERR_INVALID);
  ac_error_destroy(err);
  ac_context_destroy(ctx);
}

static void count_release(void *user) {
  (*(int *)user)++;
}

UNIT_TEST(arrays_copy_or_borrow) {
  ac_context *ctx = ac_context_create();
  ac_error *err = NULL;
  int32_t host[6] = {1, 2, 3, 4, 5, 6};
  int64_t ext[2] = {2, 3};

  /* a copy does not see later changes to the host memory */
  ac_array *copy = ac_array_create(ctx, AC_I32, 2, ext, host, &err);
  CHECK(copy && ac_array_data(copy) != (const void *)host);
  host[0] = 100;
  CHECK_EQ_INT(((const int32_t *)ac_array_data(copy))[0], 1);
  ac_array_release(copy);

  /* a borrowed array is the host memory; release runs once, at the end */
  int released = 0;
  ac_array *b = ac_array_borrow(ctx, AC_I32, 2, ext, host, count_release, &released, &err);
  CHECK(b != NULL);
  CHECK(ac_array_data(b) == (const void *)host);
  CHECK_EQ_INT(ac_array_rank(b), 2);
  CHECK_EQ_INT(ac_array_extents(b)[1], 3);
  CHECK_EQ_INT(ac_array_size(b), 6);
  CHECK_EQ_INT(((const int32_t *)ac_array_data(b))[0], 100);
  ac_array_retain(b);
  ac_array_release(b);
  CHECK_EQ_INT(released, 0);
  ac_array_release(b);
  CHECK_EQ_INT(released, 1);

  /* no callback at all, and an empty array with no memory */
  b = ac_array_borrow(ctx, AC_F64, 1, (int64_t[]){0}, NULL, NULL, NULL, &err);
  CHECK(b && ac_array_size(b) == 0);
  ac_array_release(b);

  /* refused: the callback is not called, nothing is wrapped */
  released = 0;
  CHECK(!ac_array_borrow(ctx, AC_I32, 1, (int64_t[]){2}, (char *)host + 1, count_release,
                         &released, &err));
  CHECK_STR(ac_error_message(err), "borrowed i32 data is not aligned to 4 bytes");
  ac_error_destroy(err);
  unsigned char bools[3] = {0, 1, 2};
  CHECK(!ac_array_borrow(ctx, AC_BOOL, 1, (int64_t[]){3}, bools, count_release, &released, &err));
  CHECK_STR(ac_error_message(err), "borrowed bool element 2 is 2, not 0 or 1");
  ac_error_destroy(err);
  CHECK(!ac_array_borrow(ctx, AC_I32, 1, (int64_t[]){-1}, host, count_release, &released, &err));
  CHECK_STR(ac_error_message(err), "negative extent -1");
  ac_error_destroy(err);
  CHECK(!ac_array_borrow(ctx, AC_I32, 1, (int64_t[]){2}, NULL, count_release, &released, &err));
  CHECK_STR(ac_error_message(err), "borrowed array data is NULL");
  ac_error_destroy(err);
  CHECK(!ac_array_borrow(ctx, AC_I32, 0, ext, host, count_release, &released, &err));
  CHECK_STR(ac_error_message(err), "array rank must be at least 1");
  ac_error_destroy(err);
  CHECK(!ac_array_borrow(ctx, AC_I8, 1, (int64_t[]){(int64_t)1 << 50}, host, count_release,
                         &released, &err));
  CHECK_STR(ac_error_message(err), "array too large");
  ac_error_destroy(err);
  CHECK_EQ_INT(released, 0);
  ac_context_destroy(ctx);
}

UNIT_TEST(arrays_read_back) {
  ac_context *ctx = ac_context_create();
  ac_error *err = NULL;
  double v[4] = {1.5, -2, 3, 0.25}, out[5] = {0, 0, 0, 0, 9};
  ac_array *a = ac_array_create(ctx, AC_F64, 1, (int64_t[]){4}, v, &err);
  CHECK_EQ_INT(ac_array_read(a, out, sizeof out, &err), AC_OK);
  CHECK(memcmp(out, v, sizeof v) == 0 && out[4] == 9);
  CHECK_EQ_INT(ac_array_read(a, out, 4 * sizeof(double), &err), AC_OK);
  CHECK_EQ_INT(ac_array_read(a, out, 4 * sizeof(double) - 1, &err), AC_ERR_INVALID);
  CHECK_STR(ac_error_message(err), "ac_array_read: the array has 32 bytes, the buffer 31");
  ac_error_destroy(err);
  CHECK_EQ_INT(ac_array_read(a, NULL, 64, &err), AC_ERR_INVALID);
  ac_error_destroy(err);
  ac_array_release(a);
  /* an empty array reads into nothing */
  a = ac_array_create(ctx, AC_U8, 2, (int64_t[]){3, 0}, NULL, &err);
  CHECK_EQ_INT(ac_array_read(a, NULL, 0, &err), AC_OK);
  ac_array_release(a);
  ac_context_destroy(ctx);
}

/* Calls saxpy and stats on runtime rt and checks the results. */
static void run_programs(ac_context *ctx, ac_runtime *rt, ac_module *m) {
  ac_function *saxpy = NULL, *stats = NULL;
  ac_error *err = NULL;
  if (show(ac_runtime_compile(rt, m, "saxpy", &saxpy, &err), &err) != AC_OK) {
    CHECK(!"saxpy compiles");
    return;
  }
  CHECK_EQ_INT(ac_function_backend(saxpy), ac_runtime_backend(rt));
  CHECK_EQ_INT(ac_function_num_args(saxpy), 3);
  CHECK_EQ_INT(ac_function_num_results(saxpy), 1);
  CHECK((ac_function_num_kernels(saxpy) > 0) == (ac_runtime_backend(rt) == AC_BACKEND_CPU));

  enum { N = 1000 };
  float *xs = malloc(N * sizeof *xs), ys[N];
  for (int i = 0; i < N; i++) {
    xs[i] = (float)i * 0.5f;
    ys[i] = (float)(N - i);
  }
  int released = 0;
  /* a borrowed argument: the call reads the host memory in place */
  ac_array *xa = ac_array_borrow(ctx, AC_F32, 1, (int64_t[]){N}, xs, count_release, &released,
                                 &err);
  ac_array *ya = ac_array_create(ctx, AC_F32, 1, (int64_t[]){N}, ys, &err);
  ac_datum args[3] = {scalar_f32(2.0f), array_datum(xa), array_datum(ya)};
  ac_datum res[1];
  CHECK_EQ_INT(show(ac_function_call(saxpy, args, 3, res, 1, &err), &err), AC_OK);
  if (res[0].kind == AC_DATUM_ARRAY && res[0].array) {
    float out[N];
    CHECK_EQ_INT(ac_array_size(res[0].array), N);
    CHECK_EQ_INT(ac_array_read(res[0].array, out, sizeof out, NULL), AC_OK);
    int bad = 0;
    for (int i = 0; i < N; i++)
      bad += out[i] != 2.0f * xs[i] + ys[i];
    CHECK_EQ_INT(bad, 0);
    ac_datum_release(&res[0]);
  }
  ac_array_release(ya);
  ac_array_release(xa);
  CHECK_EQ_INT(released, 1); /* the call kept no reference */
  free(xs);

  if (show(ac_runtime_compile(rt, m, "stats", &stats, &err), &err) == AC_OK) {
    int64_t v[5] = {3, -1, 4, 1, -5};
    ac_array *va = ac_array_create(ctx, AC_I64, 1, (int64_t[]){5}, v, NULL);
    ac_datum a1[1] = {array_datum(va)}, r2[2];
    CHECK_EQ_INT(show(ac_function_call(stats, a1, 1, r2, 2, &err), &err), AC_OK);
    CHECK_EQ_INT(r2[0].kind, AC_DATUM_SCALAR);
    CHECK_EQ_INT(r2[0].type, AC_I64);
    CHECK_EQ_INT(r2[0].s.i, 2);
    CHECK_EQ_INT(r2[1].kind, AC_DATUM_ARRAY);
    if (r2[1].array) {
      int64_t sq[5];
      CHECK_EQ_INT(ac_array_read(r2[1].array, sq, sizeof sq, NULL), AC_OK);
      CHECK(sq[0] == 9 && sq[1] == 1 && sq[2] == 16 && sq[3] == 1 && sq[4] == 25);
    }
    ac_datum_release(&r2[1]);
    ac_array_release(va);
  }
  ac_function_destroy(stats);
  ac_function_destroy(saxpy);
}

UNIT_TEST(compile_and_call_on_each_backend) {
  ac_context *ctx = ac_context_create();
  ac_module *m = parse(ctx, prog);
  ac_error *err = NULL;
  ac_backend bes[2] = {AC_BACKEND_INTERP, AC_BACKEND_CPU};
  for (int i = 0; m && i < 2; i++) {
    ac_runtime *rt = NULL;
    if (show(ac_runtime_create(ctx, bes[i], &rt, &err), &err) != AC_OK) {
      CHECK(!"runtime created");
      continue;
    }
    run_programs(ctx, rt, m);
    ac_runtime_destroy(rt);
  }
  ac_module_destroy(m);
  ac_context_destroy(ctx);
}

/* The signature as declared (runtime.h, ac_function_param_* and friends)
 * of functions compiled from source, on the interpreter and the CPU: the
 * same lines test/lit/aot/signature.test expects of ahead-of-time
 * libraries. */
static void signature_text(const ac_function *f, char *buf, size_t size) {
  size_t n = (size_t)snprintf(buf, size, "%s:", ac_function_name(f));
  for (size_t p = 0; p < ac_function_num_params(f) && n < size; p++) {
    size_t first = 99, count = 99;
    ac_function_param_leaves(f, p, &first, &count);
    n += (size_t)snprintf(buf + n, size - n, " %s: %s %zu+%zu", ac_function_param_name(f, p),
                          ac_function_param_type(f, p), first, count);
    for (size_t k = first; k < first + count && n < size; k++)
      n += (size_t)snprintf(buf + n, size - n, " [%s]", ac_function_arg_name(f, k));
    n += n < size ? (size_t)snprintf(buf + n, size - n, ";") : 0;
  }
  if (n < size)
    n += (size_t)snprintf(buf + n, size - n, " -> %s", ac_function_result_type(f));
  for (size_t k = 0; k < ac_function_num_results(f) && n < size; k++)
    n += (size_t)snprintf(buf + n, size - n, " ['%s']", ac_function_result_name(f, k));
}

UNIT_TEST(signature_from_source) {
  static const char *text =
      "fn mix(xs: f32[,], p: (i32, (f64, bool)), u: (), k: u8) -> (f32[,], i64) {\n"
      "  (map(|x| x * 2.0, xs), if p.1.1 { i64(p.0) } else { i64(k) })\n"
      "}\n"
      "fn pairs(ps: (i32, f32)[]) -> f32 {\n"
      "  fold(|a, b| a + b, 0.0, map(|q| q.1, ps))\n"
      "}\n"
      "fn none() -> i32 {\n  7\n}\n";
  static const char *const want[] = {
      "mix: xs: f32[,] 0+1 [xs]; p: (i32, (f64, bool)) 1+3 [p.0] [p.1.0] [p.1.1]; u: () 4+0; "
      "k: u8 4+1 [k]; -> (f32[,], i64) ['0'] ['1']",
      "pairs: ps: (i32[], f32[]) 0+2 [ps.0] [ps.1]; -> f32 ['']", "none: -> i32 ['']"};
  ac_context *ctx = ac_context_create();
  ac_module *m = parse(ctx, text);
  ac_error *err = NULL;
  CHECK(m && show(ac_module_verify(m, &err), &err) == AC_OK);
  ac_backend bes[2] = {AC_BACKEND_INTERP, AC_BACKEND_CPU};
  for (int b = 0; m && b < 2; b++) {
    for (size_t i = 0; i < 3; i++) {
      ac_function *f = NULL;
      const char *name = i == 0 ? "mix" : i == 1 ? "pairs" : "none";
      if (show(ac_function_create(m, name, bes[b], &f, &err), &err) != AC_OK) {
        CHECK(!"function created");
        continue;
      }
      char buf[512];
      signature_text(f, buf, sizeof buf);
      CHECK_STR(buf, want[i]);
      /* out of range: NULL, nothing written */
      size_t first = 7, count = 7;
      ac_function_param_leaves(f, ac_function_num_params(f), &first, &count);
      CHECK(first == 7 && count == 7);
      CHECK(!ac_function_param_name(f, 9) && !ac_function_param_type(f, 9));
      CHECK(!ac_function_arg_name(f, ac_function_num_args(f)));
      CHECK(!ac_function_result_name(f, ac_function_num_results(f)));
      ac_function_destroy(f);
    }
  }
  ac_module_destroy(m);
  ac_context_destroy(ctx);
}

/* A result written `_` (docs/language.md §3) is inferred when the module is
 * verified: the C API reports the inferred type like a written one. */
UNIT_TEST(signature_of_an_inferred_result) {
  static const char *text = "fn mix(xs: f32[], k: i64) -> _ {\n"
                            "  (map(|x| (x * 2, k), xs), 1, scale(k))\n"
                            "}\n"
                            "fn scale(k: i64) -> _ {\n  f64(k) * 0.5\n}\n";
  ac_context *ctx = ac_context_create();
  ac_module *m = parse(ctx, text);
  ac_error *err = NULL;
  CHECK(m && show(ac_module_verify(m, &err), &err) == AC_OK);
  ac_backend bes[2] = {AC_BACKEND_INTERP, AC_BACKEND_CPU};
  for (int b = 0; m && b < 2; b++) {
    ac_function *f = NULL;
    if (show(ac_function_create(m, "mix", bes[b], &f, &err), &err) != AC_OK) {
      CHECK(!"function created");
      continue;
    }
    char buf[512];
    signature_text(f, buf, sizeof buf);
    CHECK_STR(buf, "mix: xs: f32[] 0+1 [xs]; k: i64 1+1 [k]; -> ((f32[], i64[]), i32, f64) "
                   "['0.0'] ['0.1'] ['1'] ['2']");
    CHECK_STR(ac_function_result_type(f), "((f32[], i64[]), i32, f64)");
    ac_function_destroy(f);
  }
  ac_module_destroy(m);
  ac_context_destroy(ctx);
}

/* Warnings (core.h's ac_context_set_warning_handler): compiling for the
 * SIMT emulator warns about a nested fold that each GPU thread runs
 * sequentially, once per source position across functions that both
 * reach it; on the CPU, and without a handler, nothing. */
typedef struct warn_log {
  int n;
  unsigned line, col;
  char file[32];
} warn_log;

static void log_warning(void *ud, const char *file, unsigned line, unsigned col, const char *msg) {
  warn_log *w = ud;
  w->n++;
  w->line = line;
  w->col = col;
  snprintf(w->file, sizeof w->file, "%s", file ? file : "");
  CHECK(strstr(msg, "nested fold runs sequentially") != NULL);
}

UNIT_TEST(warnings_once_per_position) {
  /* m[0, j] * f32(i): every element reads row 0, which a thread per element
   * reads well (no warp or block kernels: lib/passes/nesting.c), so the
   * fold stays sequential and is reported */
  static const char src[] = "fn rs(m: f32[,], i: i64) -> f32 {\n"
                            "  fold(|a, b| a + b, 0.0, generate(shape(m).1, |j| m[0, j] * f32(i)))\n"
                            "}\n"
                            "fn f(m: f32[,]) -> f32[] { generate(shape(m).0, |i| rs(m, i)) }\n"
                            "fn g(m: f32[,]) -> f32[] { generate(shape(m).0, |i| rs(m, i) + 1.0) }\n";
  ac_context *ctx = ac_context_create();
  ac_module *m = parse(ctx, src);
  ac_error *err = NULL;
  ac_backend bes[2] = {AC_BACKEND_CPU, AC_BACKEND_SIMT_EMU};
  warn_log w = {0};
  for (int i = 0; m && i < 2; i++) {
    ac_runtime *rt = NULL;
    if (show(ac_runtime_create(ctx, bes[i], &rt, &err), &err) != AC_OK) {
      CHECK(!"runtime created");
      continue;
    }
    ac_context_set_warning_handler(ctx, log_warning, &w);
    ac_function *ff = NULL, *fg = NULL;
    CHECK_EQ_INT(show(ac_runtime_compile(rt, m, "f", &ff, &err), &err), AC_OK);
    CHECK_EQ_INT(show(ac_runtime_compile(rt, m, "g", &fg, &err), &err), AC_OK);
    CHECK_EQ_INT(w.n, i); /* none on the CPU, then one for both functions */
    ac_function_destroy(ff);
    ac_function_destroy(fg);
    ac_runtime_destroy(rt);
  }
  CHECK_EQ_INT(w.line, 2);
  CHECK_EQ_INT(w.col, 3);
  ac_module_destroy(m);
  /* without a handler: nothing (and nothing remembered) */
  ac_context_set_warning_handler(ctx, NULL, NULL);
  m = parse(ctx, src);
  ac_runtime *rt = NULL;
  ac_function *ff = NULL;
  if (m && show(ac_runtime_create(ctx, AC_BACKEND_SIMT_EMU, &rt, &err), &err) == AC_OK)
    CHECK_EQ_INT(show(ac_runtime_compile(rt, m, "f", &ff, &err), &err), AC_OK);
  CHECK_EQ_INT(w.n, 1);
  ac_function_destroy(ff);
  ac_runtime_destroy(rt);
  ac_module_destroy(m);
  ac_context_destroy(ctx);
}

/* The runtime keeps working after errors of every kind. */
UNIT_TEST(errors_then_success) {
  ac_context *ctx = ac_context_create();
  ac_context *other = ac_context_create();
  ac_module *m = parse(ctx, prog), *mo = parse(other, prog);
  ac_runtime *rt = NULL;
  ac_error *err = NULL;
  if (!m || !mo || show(ac_runtime_create(ctx, AC_BACKEND_CPU, &rt, &err), &err) != AC_OK) {
    CHECK(!"set up");
    goto out;
  }
  ac_function *f = NULL, *fi = NULL;
  CHECK_EQ_INT(ac_runtime_compile(rt, m, "nothing", &f, &err), AC_ERR_INVALID);
  CHECK_STR(ac_error_message(err), "no function named 'nothing'");
  ac_error_destroy(err);
  CHECK_EQ_INT(ac_runtime_compile(rt, mo, "at", &f, &err), AC_ERR_INVALID);
  CHECK_STR(ac_error_message(err), "the module and the runtime belong to different contexts");
  ac_error_destroy(err);
  CHECK(f == NULL);
  if (show(ac_runtime_compile(rt, m, "at", &f, &err), &err) != AC_OK ||
      ac_function_create(m, "at", AC_BACKEND_INTERP, &fi, NULL) != AC_OK) {
    CHECK(!"at compiles");
    goto out;
  }
  int32_t v[3] = {10, 20, 30};
  ac_array *va = ac_array_create(ctx, AC_I32, 1, (int64_t[]){3}, v, NULL);
  ac_datum args[2] = {array_datum(va), scalar_i64(3)}, res[1];
  for (int round = 0; round < 3; round++) {
    /* out of bounds: the same message and position as the interpreter */
    ac_error *ei = NULL;
    args[1] = scalar_i64(3 + round);
    CHECK_EQ_INT(ac_function_call(f, args, 2, res, 1, &err), AC_ERR_RUNTIME);
    CHECK_EQ_INT(ac_function_call(fi, args, 2, res, 1, &ei), AC_ERR_RUNTIME);
    CHECK_STR(ac_error_text(err), ac_error_text(ei));
    CHECK_EQ_INT(ac_error_line(err), 8);
    CHECK_STR(ac_error_file(err), "prog.ac");
    ac_error_destroy(err);
    ac_error_destroy(ei);
    /* bad arguments are refused before running */
    ac_datum wrong[2] = {scalar_i64(1), scalar_i64(1)};
    CHECK_EQ_INT(ac_function_call(f, wrong, 2, res, 1, &err), AC_ERR_INVALID);
    CHECK_STR(ac_error_message(err), "argument 1 (xs): expected i32[], got i64");
    ac_error_destroy(err);
    CHECK_EQ_INT(ac_function_call(f, args, 1, res, 1, &err), AC_ERR_INVALID);
    CHECK_STR(ac_error_message(err), "expected 2 arguments, got 1");
    ac_error_destroy(err);
    /* and then it works */
    for (int64_t i = 0; i < 3; i++) {
      args[1] = scalar_i64(i);
      res[0].s.i = -1;
      CHECK_EQ_INT(show(ac_function_call(f, args, 2, res, 1, &err), &err), AC_OK);
      CHECK_EQ_INT(res[0].s.i, v[i]);
    }
  }
  ac_array_release(va);
  ac_function_destroy(f);
  ac_function_destroy(fi);
out:
  ac_runtime_destroy(rt);
  ac_module_destroy(m);
  ac_module_destroy(mo);
  ac_context_destroy(other);
  ac_context_destroy(ctx);
}

/* Arguments are checked alike on every backend before anything runs, and a
 * failed call leaves the caller's results as they were (docs/runtime.md
 * §4): an array datum whose type disagrees with its array, a run-time
 * error, and one after a first result was already made. */
UNIT_TEST(failed_calls_leave_results_untouched) {
  static const char *text = "fn two(xs: i64[], i: i64) -> (i64[], i64) {\n"
                            "  (map(|x| x + 1, xs), xs[i])\n"
                            "}\n";
  ac_context *ctx = ac_context_create();
  ac_module *m = parse(ctx, text);
  ac_backend bes[3] = {AC_BACKEND_INTERP, AC_BACKEND_CPU, AC_BACKEND_SIMT_EMU};
  for (int b = 0; m && b < 3; b++) {
    ac_runtime *rt = NULL;
    ac_function *f = NULL;
    ac_error *err = NULL;
    if (show(ac_runtime_create(ctx, bes[b], &rt, &err), &err) != AC_OK ||
        show(ac_runtime_compile(rt, m, "two", &f, &err), &err) != AC_OK) {
      CHECK(!"two compiles");
      ac_runtime_destroy(rt);
      continue;
    }
    int64_t v[3] = {10, 20, 30};
    ac_array *va = ac_array_create(ctx, AC_I64, 1, (int64_t[]){3}, v, NULL);
    ac_datum args[2] = {array_datum(va), scalar_i64(1)}, res[2], before[2];
    memset(res, 0xa5, sizeof res);
    memcpy(before, res, sizeof res);
    /* the datum says f64, its array holds i64 */
    args[0].type = AC_F64;
    CHECK_EQ_INT(ac_function_call(f, args, 2, res, 2, &err), AC_ERR_INVALID);
    CHECK_STR(ac_error_message(err),
              "argument 1 (xs): the datum's type f64 is not its array's element type i64");
    ac_error_destroy(err);
    CHECK(memcmp(res, before, sizeof res) == 0);
    args[0].type = AC_I64;
    /* out of bounds: the map's result exists when the index fails */
    args[1] = scalar_i64(7);
    CHECK_EQ_INT(ac_function_call(f, args, 2, res, 2, &err), AC_ERR_RUNTIME);
    CHECK_EQ_INT(ac_error_line(err), 2);
    ac_error_destroy(err);
    CHECK(memcmp(res, before, sizeof res) == 0);
    /* and the next call works */
    args[1] = scalar_i64(2);
    CHECK_EQ_INT(show(ac_function_call(f, args, 2, res, 2, &err), &err), AC_OK);
    CHECK_EQ_INT(res[1].s.i, 30);
    int64_t out[3] = {0};
    CHECK_EQ_INT(ac_array_read(res[0].array, out, sizeof out, NULL), AC_OK);
    CHECK(out[0] == 11 && out[1] == 21 && out[2] == 31);
    ac_datum_release(&res[0]);
    ac_array_release(va);
    ac_function_destroy(f);
    ac_runtime_destroy(rt);
  }
  ac_module_destroy(m);
  ac_context_destroy(ctx);
}

/* ac_function_create without a runtime: CPU and AUTO compile on the
 * context's default runtime, which the context frees. */
UNIT_TEST(default_runtime_and_printing) {
  ac_context *ctx = ac_context_create();
  ac_module *m = parse(ctx, prog);
  ac_function *f = NULL, *g = NULL, *fi = NULL;
  ac_error *err = NULL;
  CHECK_EQ_INT(show(ac_function_create(m, "saxpy", AC_BACKEND_CPU, &f, &err), &err), AC_OK);
  CHECK_EQ_INT(show(ac_function_create(m, "saxpy", AC_BACKEND_AUTO, &g, &err), &err), AC_OK);
  CHECK_EQ_INT(ac_function_create(m, "saxpy", AC_BACKEND_INTERP, &fi, &err), AC_OK);
  CHECK(f && ac_function_backend(f) == AC_BACKEND_CPU);
  ac_function *gg = NULL;
  ac_status gst = ac_function_create(m, "saxpy", AC_BACKEND_GPU, &gg, &err);
  CHECK(g && ac_function_backend(g) == (gst == AC_OK ? AC_BACKEND_GPU : AC_BACKEND_CPU));
  ac_function_destroy(g);
  ac_function_destroy(gg);
  if (gst != AC_OK) {
    CHECK_EQ_INT(gst, AC_ERR_UNSUPPORTED);
    CHECK(err && strncmp(ac_error_message(err), "no GPU: ", 8) == 0);
    ac_error_destroy(err);
  }
  g = NULL;

  char *text = NULL;
  if (f) {
    CHECK_EQ_INT(show(ac_function_print_plan(f, &text, &err), &err), AC_OK);
    CHECK(text && strstr(text, "plan saxpy\n") && strstr(text, "launch k0"));
    ac_string_destroy(ctx, text);
    CHECK_EQ_INT(show(ac_function_print_llvm(f, &text, &err), &err), AC_OK);
    CHECK(text && strstr(text, "define") && strstr(text, "fmul"));
    ac_string_destroy(ctx, text);
  }
  CHECK_EQ_INT(ac_function_print_plan(fi, &text, &err), AC_ERR_INVALID);
  CHECK_STR(ac_error_message(err),
            "function 'saxpy' runs on the interp backend, which has no kernel plan");
  ac_error_destroy(err);
  CHECK(text == NULL);
  CHECK_EQ_INT(ac_function_print_llvm(fi, &text, &err), AC_ERR_INVALID);
  ac_error_destroy(err);

  /* bool arrays cross as bytes 0/1, borrowed or copied */
  ac_function *fl = NULL;
  if (show(ac_function_create(m, "flags", AC_BACKEND_CPU, &fl, &err), &err) == AC_OK) {
    bool bv[5] = {true, false, true, true, false};
    ac_array *ba = ac_array_borrow(ctx, AC_BOOL, 1, (int64_t[]){5}, bv, NULL, NULL, NULL);
    ac_datum a1[1] = {array_datum(ba)}, r1[1];
    CHECK_EQ_INT(show(ac_function_call(fl, a1, 1, r1, 1, &err), &err), AC_OK);
    CHECK_EQ_INT(r1[0].s.i, 3);
    ac_array_release(ba);
    ac_function_destroy(fl);
  }
  ac_function_destroy(f);
  ac_function_destroy(fi);
  ac_module_destroy(m);
  ac_context_destroy(ctx); /* frees the default runtime (checked by LSan) */
}

/* ---- threads ---- */

typedef struct worker {
  ac_context *ctx;
  ac_function *f;
  int id;
  int failures;
} worker;

static int call_many(void *p) {
  worker *w = p;
  enum { N = 3000 };
  float *xs = malloc(N * sizeof *xs), *ys = malloc(N * sizeof *ys), *out = malloc(N * sizeof *out);
  for (int round = 0; round < 40; round++) {
    float a = (float)(w->id * 100 + round);
    for (int i = 0; i < N; i++) {
      xs[i] = (float)(i % 97);
      ys[i] = (float)w->id;
    }
    ac_array *xa = ac_array_create(w->ctx, AC_F32, 1, (int64_t[]){N}, xs, NULL);
    ac_array *ya = ac_array_borrow(w->ctx, AC_F32, 1, (int64_t[]){N}, ys, NULL, NULL, NULL);
    ac_datum args[3] = {scalar_f32(a), array_datum(xa), array_datum(ya)}, res[1];
    ac_error *err = NULL;
    if (ac_function_call(w->f, args, 3, res, 1, &err) != AC_OK ||
        ac_array_read(res[0].array, out, N * sizeof *out, NULL) != AC_OK) {
      w->failures++;
      ac_error_destroy(err);
    } else {
      for (int i = 0; i < N; i++)
        w->failures += out[i] != a * xs[i] + ys[i];
      ac_datum_release(&res[0]);
    }
    /* every fourth call fails (shapes differ) and must not disturb others */
    if (round % 4 == 0) {
      ac_array *short_ = ac_array_create(w->ctx, AC_F32, 1, (int64_t[]){N - 1}, NULL, NULL);
      args[2] = array_datum(short_);
      if (ac_function_call(w->f, args, 3, res, 1, &err) != AC_ERR_RUNTIME)
        w->failures++;
      ac_error_destroy(err);
      ac_array_release(short_);
    }
    ac_array_release(xa);
    ac_array_release(ya);
  }
  free(xs);
  free(ys);
  free(out);
  return 0;
}

UNIT_TEST(four_threads_call_one_function) {
  ac_context *ctx = ac_context_create();
  ac_module *m = parse(ctx, prog);
  ac_runtime *rt = NULL;
  ac_function *f = NULL;
  ac_error *err = NULL;
  if (!m || show(ac_runtime_create(ctx, AC_BACKEND_CPU, &rt, &err), &err) != AC_OK ||
      show(ac_runtime_compile(rt, m, "saxpy", &f, &err), &err) != AC_OK) {
    CHECK(!"set up");
  } else {
    worker w[4];
    thrd_t t[4];
    for (int i = 0; i < 4; i++) {
      w[i] = (worker){ctx, f, i + 1, 0};
      CHECK_EQ_INT(thrd_create(&t[i], call_many, &w[i]), thrd_success);
    }
    for (int i = 0; i < 4; i++) {
      thrd_join(t[i], NULL);
      CHECK_EQ_INT(w[i].failures, 0);
    }
  }
  /* the runtime outlives its creator's reference while f uses it: it goes
   * with the function */
  ac_runtime_destroy(rt);
  ac_function_destroy(f);
  ac_module_destroy(m);
  ac_context_destroy(ctx);
}

/* ---- allocation failures ---- */

typedef struct failing {
  long n, fail_at; /* allocations so far; the one that fails */
} failing;

static void *failing_realloc(void *ud, void *p, size_t n) {
  failing *h = ud;
  if (n == 0) {
    free(p);
    return NULL;
  }
  if (++h->n == h->fail_at)
    return NULL;
  return realloc(p, n);
}

/* AC_OK, or AC_ERR_NOMEM while an allocation was refused; counts others. */
static int bad_status(ac_status st) {
  return st != AC_OK && st != AC_ERR_NOMEM;
}

/* Fails each allocation of a whole session in turn (parse, runtime,
 * compile, calls generic and through the pointer): every step must report
 * AC_ERR_NOMEM or succeed, and nothing may leak or crash (ASan/LSan). */
UNIT_TEST(allocation_failures_are_errors) {
  const char *src = "fn saxpy(a: f32, xs: f32[], ys: f32[]) -> f32[] {\n"
                    "  map(|x, y| a * x + y, xs, ys)\n"
                    "}\n";
  int bad = 0;
  for (long k = 1; k < 100000; k++) {
    failing h = {0, k};
    ac_context *ctx = ac_context_create_with_allocator(failing_realloc, &h);
    if (!ctx)
      continue;
    ac_module *m = NULL;
    ac_runtime *rt = NULL;
    ac_function *f = NULL;
    ac_error *err = NULL;
    float x[4] = {1, 2, 3, 4}, r[4] = {0};
    ac_status st = ac_module_parse(ctx, "p.ac", src, strlen(src), &m, &err);
    if (st == AC_OK)
      st = ac_runtime_create(ctx, AC_BACKEND_CPU, &rt, &err);
    if (st == AC_OK)
      st = ac_runtime_compile(rt, m, "saxpy", &f, &err);
    bad += bad_status(st);
    ac_error_destroy(err);
    err = NULL;
    ac_array *xa = f ? ac_array_create(ctx, AC_F32, 1, (int64_t[]){4}, x, NULL) : NULL;
    ac_array *ya = f ? ac_array_borrow(ctx, AC_F32, 1, (int64_t[]){4}, x, NULL, NULL, NULL) : NULL;
    bool done = false;
    if (xa && ya) {
      ac_datum args[3] = {{AC_DATUM_SCALAR, AC_F32, {.f = 2}, NULL},
                          {AC_DATUM_ARRAY, AC_F32, {0}, xa},
                          {AC_DATUM_ARRAY, AC_F32, {0}, ya}},
               res[1];
      st = ac_function_call(f, args, 3, res, 1, &err);
      bad += bad_status(st);
      if (st == AC_OK)
        ac_datum_release(&res[0]);
      ac_error_destroy(err);
      err = NULL;
      void (*fp)(void) = NULL;
      st = ac_function_pointer(f, &fp, &err);
      bad += bad_status(st);
      ac_error_destroy(err);
      err = NULL;
      if (st == AC_OK) {
        ac_array *out = NULL;
        st = ((ac_status(*)(float, ac_array *, ac_array *, ac_array **, ac_error **))fp)(
            1.0f, xa, ya, &out, &err);
        bad += bad_status(st);
        ac_error_destroy(err);
        done = st == AC_OK && ac_array_read(out, r, sizeof r, NULL) == AC_OK;
        ac_array_release(out);
      }
    }
    ac_array_release(xa);
    ac_array_release(ya);
    ac_function_destroy(f);
    ac_runtime_destroy(rt);
    ac_module_destroy(m);
    ac_context_destroy(ctx);
    if (h.n < k) { /* nothing was refused: the whole session ran */
      CHECK(done && r[0] == 2.0f && r[3] == 8.0f);
      break;
    }
  }
  CHECK_EQ_INT(bad, 0);
}

UNIT_MAIN(runtimes_of_each_backend, arrays_copy_or_borrow, arrays_read_back,
          compile_and_call_on_each_backend, errors_then_success,
          failed_calls_leave_results_untouched, default_runtime_and_printing,
          four_threads_call_one_function, allocation_failures_are_errors,
          warnings_once_per_position, signature_from_source, signature_of_an_inferred_result)
