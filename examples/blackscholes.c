/* examples/blackscholes.c: Black-Scholes option pricing with the C API.
 *
 * Builds the module of examples/blackscholes.ac: `cnd`, the cumulative normal
 * distribution (the polynomial approximation of Abramowitz and Stegun), is a
 * function of its own that `blackscholes` calls four times inside one map;
 * the calls stay calls (Nikola's lambda-sharing: cnd is compiled once). The
 * map returns a (call, put) pair per option, so the function has two array
 * results. Values used more than once (sqrt(t), d1, d2, exp(-r * t)) are
 * built once and named; sharing recovery turns them into the lets of the
 * text, inside the lambda because they depend on its parameters.
 *
 * Without arguments it prices three options on the best backend (AC_BACKEND_AUTO)
 * and prints the call prices, then the put prices; with --print it prints the
 * module, exactly as `arrayc-opt examples/blackscholes.ac` does.
 */
#include "arrayc/arrayc.h"
#include "example_main.h"

#include <stdio.h>
#include <string.h>

#define AT(b) ac_builder_set_location((b), __LINE__, 1)

static ac_value mul(ac_builder *b, ac_value x, ac_value y) {
  return ac_binary(b, AC_OP_MUL, x, y);
}
static ac_value add(ac_builder *b, ac_value x, ac_value y) {
  return ac_binary(b, AC_OP_ADD, x, y);
}
static ac_value sub(ac_builder *b, ac_value x, ac_value y) {
  return ac_binary(b, AC_OP_SUB, x, y);
}
static ac_value num(ac_builder *b, double x) {
  return ac_lit_float(b, AC_F32, x);
}

/* fn cnd(d: f32) -> f32: returns the body. */
static ac_value build_cnd(ac_builder *b, ac_fn cnd) {
  ac_value d = ac_fn_param(b, cnd, 0);
  AT(b);
  ac_value k = ac_binary(b, AC_OP_DIV, num(b, 1.0),
                         add(b, num(b, 1.0), mul(b, num(b, 0.2316419), ac_unary(b, AC_OP_ABS, d))));
  ac_name(b, k, "k");
  /* a1 + k * (a2 + k * (a3 + k * (a4 + k * a5))), built from the inside out */
  static const double a[5] = {0.31938153, -0.356563782, 1.781477937, -1.821255978, 1.330274429};
  ac_value poly = mul(b, k, num(b, a[4]));
  for (int i = 3; i >= 1; i--)
    poly = mul(b, k, add(b, num(b, a[i]), poly));
  poly = add(b, num(b, a[0]), poly);
  AT(b);
  ac_value gauss = ac_unary(b, AC_OP_EXP, mul(b, mul(b, num(b, -0.5), d), d));
  ac_value w = mul(b, mul(b, mul(b, num(b, 0.3989422804), gauss), k), poly);
  ac_name(b, w, "w");
  AT(b);
  ac_value positive = ac_binary(b, AC_OP_GT, d, num(b, 0.0));
  return ac_if(b, positive, sub(b, num(b, 1.0), w), w);
}

static ac_status build(ac_module *m, ac_error **err) {
  ac_context *ctx = ac_module_context(m);
  ac_builder *b = ac_builder_create(m);
  if (!b)
    return AC_ERR_NOMEM;
  ac_type f32 = ac_type_scalar(ctx, AC_F32);
  ac_type vec = ac_type_array(ctx, f32, 1);
  AT(b);
  ac_fn cnd = ac_fn_declare(b, "cnd", 1, &f32, (const char *[]){"d"}, f32);
  AT(b);
  ac_fn bs = ac_fn_declare(b, "blackscholes", 5, (ac_type[]){vec, vec, vec, f32, f32},
                           (const char *[]){"s", "x", "t", "r", "v"},
                           ac_type_tuple(ctx, 2, (ac_type[]){vec, vec}));
  ac_value r = ac_fn_param(b, bs, 3), v = ac_fn_param(b, bs, 4);

  /* the element function: |s, x, t| (call, put) */
  AT(b);
  ac_value p[3];
  ac_lambda price = ac_lambda_begin(b, 3, (const char *[]){"s", "x", "t"}, p);
  ac_value s = p[0], x = p[1], t = p[2];
  /* sq, d1, d2 and e are each used twice: they become the lets of the text,
   * under these names. v * sq and x * e are written twice, as in the text,
   * so they are repeated rather than shared. */
  ac_value sq = ac_name(b, ac_unary(b, AC_OP_SQRT, t), "sq");
  AT(b);
  ac_value drift = mul(b, add(b, r, mul(b, mul(b, num(b, 0.5), v), v)), t);
  ac_value logsx = ac_unary(b, AC_OP_LOG, ac_binary(b, AC_OP_DIV, s, x));
  ac_value d1 = ac_name(b, ac_binary(b, AC_OP_DIV, add(b, logsx, drift), mul(b, v, sq)), "d1");
  ac_value d2 = ac_name(b, sub(b, d1, mul(b, v, sq)), "d2");
  ac_value e = ac_name(b, ac_unary(b, AC_OP_EXP, mul(b, ac_unary(b, AC_OP_NEG, r), t)), "e");
  /* cnd is called, not inlined: four calls of one compiled function */
  AT(b);
  ac_value call =
      sub(b, mul(b, s, ac_call(b, cnd, 1, &d1)), mul(b, mul(b, x, e), ac_call(b, cnd, 1, &d2)));
  ac_value put = sub(b, mul(b, mul(b, x, e), sub(b, num(b, 1.0), ac_call(b, cnd, 1, &d2))),
                     mul(b, s, sub(b, num(b, 1.0), ac_call(b, cnd, 1, &d1))));
  ac_value lam = ac_lambda_end(b, price, ac_tuple(b, 2, (ac_value[]){call, put}));
  AT(b);
  ac_value body = ac_apply(
      b, AC_OP_MAP, 4,
      (ac_value[]){lam, ac_fn_param(b, bs, 0), ac_fn_param(b, bs, 1), ac_fn_param(b, bs, 2)});
  /* blackscholes is finished before cnd: until cnd has a body, its calls
   * are checked against its declaration */
  ac_status st = ac_fn_finish(b, bs, body, err);
  if (st == AC_OK)
    st = ac_fn_finish(b, cnd, build_cnd(b, cnd), err);
  ac_builder_destroy(b);
  return st;
}

static ac_status run(ac_module *m, ac_error **err) {
  ac_context *ctx = ac_module_context(m);
  /* spot prices, strikes, years to expiry; rate 2%, volatility 30% */
  static const float s[] = {100, 50, 30}, x[] = {100, 60, 25}, t[] = {1, 0.5f, 2};
  const int64_t n[1] = {3};
  ac_function *fn = NULL;
  ac_datum args[5] = {{.kind = AC_DATUM_ARRAY, .type = AC_F32},
                      {.kind = AC_DATUM_ARRAY, .type = AC_F32},
                      {.kind = AC_DATUM_ARRAY, .type = AC_F32},
                      {.kind = AC_DATUM_SCALAR, .type = AC_F32, .s.f = 0.02},
                      {.kind = AC_DATUM_SCALAR, .type = AC_F32, .s.f = 0.3}};
  ac_datum results[2];
  ac_status st = AC_ERR_NOMEM;
  if ((args[0].array = ac_array_create(ctx, AC_F32, 1, n, s, err)) &&
      (args[1].array = ac_array_create(ctx, AC_F32, 1, n, x, err)) &&
      (args[2].array = ac_array_create(ctx, AC_F32, 1, n, t, err)) &&
      (st = ac_function_create(m, "blackscholes", AC_BACKEND_AUTO, &fn, err)) == AC_OK &&
      (st = ac_function_call(fn, args, 5, results, 2, err)) == AC_OK) {
    example_print_floats(results[0].array); /* call prices */
    example_print_floats(results[1].array); /* put prices */
    ac_datum_release(&results[0]);
    ac_datum_release(&results[1]);
  }
  if (fn)
    ac_function_destroy(fn);
  for (int i = 0; i < 3; i++)
    ac_datum_release(&args[i]);
  return st;
}

int main(int argc, char **argv) { return example_main(argc, argv, "blackscholes", build, run); }
