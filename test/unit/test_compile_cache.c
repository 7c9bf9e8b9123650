/* Compile cache tests (lib/api/compile.c): a runtime generates code for a
 * function once; compiling it again, from the same module or from another
 * module object with the same text, generates nothing
 * (ac_runtime_num_compilations is unchanged) and gives a function that
 * works after the first module is gone; a different function, different
 * text, the same text at other source positions (error sites differ) or an
 * extern bound to another address compiles anew. */
#include "unit.h"

#include "arrayc/arrayc.h"

#include <math.h>
#include <stdlib.h>

static const char *text_a = "fn scale(xs: f64[], k: f64) -> f64[] {\n"
                            "  map(|x| x * k, xs)\n"
                            "}\n"
                            "fn at(xs: f64[], i: i64) -> f64 {\n"
                            "  xs[i]\n"
                            "}\n";
/* one constant differs */
static const char *text_b = "fn scale(xs: f64[], k: f64) -> f64[] {\n"
                            "  map(|x| x * k + 1.0, xs)\n"
                            "}\n"
                            "fn at(xs: f64[], i: i64) -> f64 {\n"
                            "  xs[i]\n"
                            "}\n";
/* text_a two lines further down */
static const char *text_c = "// moved\n"
                            "\n"
                            "fn scale(xs: f64[], k: f64) -> f64[] {\n"
                            "  map(|x| x * k, xs)\n"
                            "}\n"
                            "fn at(xs: f64[], i: i64) -> f64 {\n"
                            "  xs[i]\n"
                            "}\n";

static ac_module *parse(ac_context *ctx, const char *text) {
  ac_module *m = NULL;
  ac_error *err = NULL;
  if (ac_module_parse(ctx, "cache.ac", text, strlen(text), &m, &err) != AC_OK) {
    fprintf(stderr, "parse: %s", ac_error_text(err));
    ac_error_destroy(err);
  }
  return m;
}

/* Compiles fn of m on rt; NULL (and a failed check) on error. */
static ac_function *compile(ac_runtime *rt, ac_module *m, const char *fn) {
  ac_function *f = NULL;
  ac_error *err = NULL;
  if (!m || ac_runtime_compile(rt, m, fn, &f, &err) != AC_OK) {
    fprintf(stderr, "  compile %s: %s", fn, err ? ac_error_text(err) : "no module\n");
    CHECK(!"compiles");
  }
  ac_error_destroy(err);
  return f;
}

/* scale([1, 2, 3], k)[1], or NAN on failure. */
static double scale_1(ac_context *ctx, ac_function *f, double k) {
  if (!f)
    return NAN;
  double v[3] = {1, 2, 3}, out[3];
  ac_array *a = ac_array_create(ctx, AC_F64, 1, (int64_t[]){3}, v, NULL);
  ac_datum args[2] = {{AC_DATUM_ARRAY, AC_F64, {0}, a}, {AC_DATUM_SCALAR, AC_F64, {.f = k}, NULL}};
  ac_datum res[1];
  double r = NAN;
  if (ac_function_call(f, args, 2, res, 1, NULL) == AC_OK &&
      ac_array_read(res[0].array, out, sizeof out, NULL) == AC_OK)
    r = out[1];
  ac_datum_release(&res[0]);
  ac_array_release(a);
  return r;
}

/* Line of the out-of-bounds error of at(xs, 5), or 0. */
static unsigned at_error_line(ac_context *ctx, ac_function *f) {
  if (!f)
    return 0;
  ac_array *a = ac_array_create(ctx, AC_F64, 1, (int64_t[]){2}, NULL, NULL);
  ac_datum args[2] = {{AC_DATUM_ARRAY, AC_F64, {0}, a}, {AC_DATUM_SCALAR, AC_I64, {.i = 5}, NULL}};
  ac_datum res[1];
  ac_error *err = NULL;
  unsigned line = 0;
  if (ac_function_call(f, args, 2, res, 1, &err) == AC_ERR_RUNTIME)
    line = ac_error_line(err);
  ac_error_destroy(err);
  ac_array_release(a);
  return line;
}

UNIT_TEST(second_compile_generates_nothing) {
  ac_context *ctx = ac_context_create();
  ac_runtime *rt = NULL;
  if (ac_runtime_create(ctx, AC_BACKEND_CPU, &rt, NULL) != AC_OK) {
    CHECK(!"CPU runtime");
    ac_context_destroy(ctx);
    return;
  }
  ac_module *m1 = parse(ctx, text_a), *m2 = parse(ctx, text_a);
  CHECK_EQ_INT(ac_runtime_num_compilations(rt), 0);
  ac_function *f1 = compile(rt, m1, "scale");
  CHECK_EQ_INT(ac_runtime_num_compilations(rt), 1);
  ac_function *f2 = compile(rt, m1, "scale");
  CHECK_EQ_INT(ac_runtime_num_compilations(rt), 1);
  ac_function *f3 = compile(rt, m2, "scale"); /* another module object, same text */
  CHECK_EQ_INT(ac_runtime_num_compilations(rt), 1);
  CHECK(scale_1(ctx, f1, 2.0) == 4.0);
  CHECK(scale_1(ctx, f2, 3.0) == 6.0);
  /* the entry does not depend on the module it was first made from */
  ac_function_destroy(f1);
  ac_function_destroy(f2);
  ac_module_destroy(m1);
  CHECK(scale_1(ctx, f3, 0.5) == 1.0);
  ac_function_destroy(f3);

  /* the interpreter generates nothing */
  ac_runtime *ri = NULL;
  CHECK_EQ_INT(ac_runtime_create(ctx, AC_BACKEND_INTERP, &ri, NULL), AC_OK);
  ac_function *fi = compile(ri, m2, "scale");
  CHECK(scale_1(ctx, fi, 2.0) == 4.0);
  CHECK_EQ_INT(ac_runtime_num_compilations(ri), 0);
  ac_function_destroy(fi);
  ac_runtime_destroy(ri);

  ac_module_destroy(m2);
  ac_runtime_destroy(rt);
  ac_context_destroy(ctx);
}

UNIT_TEST(different_function_or_text_compiles) {
  ac_context *ctx = ac_context_create();
  ac_runtime *rt = NULL;
  if (ac_runtime_create(ctx, AC_BACKEND_CPU, &rt, NULL) != AC_OK) {
    CHECK(!"CPU runtime");
    ac_context_destroy(ctx);
    return;
  }
  ac_module *ma = parse(ctx, text_a), *mb = parse(ctx, text_b), *mc = parse(ctx, text_c);
  ac_function *fa = compile(rt, ma, "scale");
  ac_function *ga = compile(rt, ma, "at");
  CHECK_EQ_INT(ac_runtime_num_compilations(rt), 2);
  ac_function *fb = compile(rt, mb, "scale");
  CHECK_EQ_INT(ac_runtime_num_compilations(rt), 3);
  CHECK(scale_1(ctx, fa, 2.0) == 4.0);
  CHECK(scale_1(ctx, fb, 2.0) == 5.0);
  /* `at` is the same text in mb: cached; in mc it sits two lines lower,
   * and its errors must say so */
  ac_function *gb = compile(rt, mb, "at");
  CHECK_EQ_INT(ac_runtime_num_compilations(rt), 3);
  ac_function *gc = compile(rt, mc, "at");
  CHECK_EQ_INT(ac_runtime_num_compilations(rt), 4);
  CHECK_EQ_INT(at_error_line(ctx, ga), 5);
  CHECK_EQ_INT(at_error_line(ctx, gb), 5);
  CHECK_EQ_INT(at_error_line(ctx, gc), 7);
  /* a second runtime has a cache of its own */
  ac_runtime *rt2 = NULL;
  CHECK_EQ_INT(ac_runtime_create(ctx, AC_BACKEND_CPU, &rt2, NULL), AC_OK);
  ac_function *f2 = rt2 ? compile(rt2, ma, "scale") : NULL;
  CHECK(rt2 && ac_runtime_num_compilations(rt2) == 1);
  CHECK_EQ_INT(ac_runtime_num_compilations(rt), 4);
  ac_function_destroy(f2);
  ac_runtime_destroy(rt2);
  ac_function *fs[] = {fa, ga, fb, gb, gc};
  for (size_t i = 0; i < sizeof fs / sizeof fs[0]; i++)
    ac_function_destroy(fs[i]);
  ac_module_destroy(ma);
  ac_module_destroy(mb);
  ac_module_destroy(mc);
  ac_runtime_destroy(rt);
  ac_context_destroy(ctx);
}

static double twice(double x) {
  return 2 * x;
}
static double thrice(double x) {
  return 3 * x;
}

/* Kernels call externs at their address: another address is other code. */
UNIT_TEST(extern_address_is_part_of_the_key) {
  static const char *text = "extern fn ext(x: f64) -> f64;\n"
                            "fn scale(xs: f64[], k: f64) -> f64[] {\n"
                            "  map(|x| ext(x) * k, xs)\n"
                            "}\n";
  ac_context *ctx = ac_context_create();
  ac_runtime *rt = NULL;
  ac_module *m1 = parse(ctx, text), *m2 = parse(ctx, text), *m3 = parse(ctx, text);
  if (!m1 || !m2 || !m3 || ac_runtime_create(ctx, AC_BACKEND_CPU, &rt, NULL) != AC_OK) {
    CHECK(!"set up");
  } else {
    CHECK_EQ_INT(ac_module_bind_extern(m1, "ext", (void (*)(void))twice, NULL), AC_OK);
    CHECK_EQ_INT(ac_module_bind_extern(m2, "ext", (void (*)(void))thrice, NULL), AC_OK);
    CHECK_EQ_INT(ac_module_bind_extern(m3, "ext", (void (*)(void))twice, NULL), AC_OK);
    ac_function *f1 = compile(rt, m1, "scale");
    ac_function *f2 = compile(rt, m2, "scale");
    CHECK_EQ_INT(ac_runtime_num_compilations(rt), 2);
    ac_function *f3 = compile(rt, m3, "scale");
    CHECK_EQ_INT(ac_runtime_num_compilations(rt), 2);
    CHECK(scale_1(ctx, f1, 1.0) == 4.0);
    CHECK(scale_1(ctx, f2, 1.0) == 6.0);
    CHECK(scale_1(ctx, f3, 0.5) == 2.0);
    ac_function_destroy(f1);
    ac_function_destroy(f2);
    ac_function_destroy(f3);
  }
  ac_runtime_destroy(rt);
  ac_module_destroy(m1);
  ac_module_destroy(m2);
  ac_module_destroy(m3);
  ac_context_destroy(ctx);
}

UNIT_MAIN(second_compile_generates_nothing, different_function_or_text_compiles,
          extern_address_is_part_of_the_key)
