/* examples/dotp.c: the dot product, built with the C embedding API.
 *
 * Builds the module of examples/dotp.ac with arrayc/builder.h: a map
 * multiplies two vectors element-wise and a fold adds the products up.
 * Without arguments it calls dotp on two small vectors on the best backend
 * (AC_BACKEND_AUTO: compiled for the CPU) and prints the result the way arrayc-run does (one line per
 * result); with --print it prints the module as text instead, which is
 * exactly what `arrayc-opt examples/dotp.ac` prints.
 */
#include "arrayc/arrayc.h"
#include "example_main.h"

#include <stdio.h>
#include <string.h>

/* Diagnostics from the builder point at lines of this file. */
#define AT(b) ac_builder_set_location((b), __LINE__, 1)

static ac_status build(ac_module *m, ac_error **err) {
  ac_context *ctx = ac_module_context(m);
  ac_builder *b = ac_builder_create(m);
  if (!b)
    return AC_ERR_NOMEM;
  ac_type f32 = ac_type_scalar(ctx, AC_F32);
  ac_type vec = ac_type_array(ctx, f32, 1);

  AT(b);
  ac_fn dotp =
      ac_fn_declare(b, "dotp", 2, (ac_type[]){vec, vec}, (const char *[]){"xs", "ys"}, f32);
  ac_value xs = ac_fn_param(b, dotp, 0), ys = ac_fn_param(b, dotp, 1);

  /* |x, y| x * y: a lambda is opened, its body built from its parameters,
   * and closed; the result is a value to pass to map. */
  AT(b);
  ac_value xy[2];
  ac_lambda mul = ac_lambda_begin(b, 2, (const char *[]){"x", "y"}, xy);
  ac_value times = ac_lambda_end(b, mul, ac_binary(b, AC_OP_MUL, xy[0], xy[1]));

  AT(b);
  ac_value ab[2];
  ac_lambda add = ac_lambda_begin(b, 2, (const char *[]){"a", "b"}, ab);
  ac_value plus = ac_lambda_end(b, add, ac_binary(b, AC_OP_ADD, ab[0], ab[1]));

  AT(b);
  ac_value products = ac_apply(b, AC_OP_MAP, 3, (ac_value[]){times, xs, ys});
  ac_value zero = ac_lit_float(b, AC_F32, 0.0);
  ac_value sum = ac_apply(b, AC_OP_FOLD, 3, (ac_value[]){plus, zero, products});

  /* Converts the graph to IR and verifies it; constructor misuse above would
   * be reported here. */
  ac_status st = ac_fn_finish(b, dotp, sum, err);
  ac_builder_destroy(b);
  return st;
}

static ac_status run(ac_module *m, ac_error **err) {
  ac_context *ctx = ac_module_context(m);
  static const float xs[] = {1, 2, 3}, ys[] = {4, 5, 6};
  const int64_t n[1] = {3};
  ac_function *fn = NULL;
  ac_datum args[2] = {{.kind = AC_DATUM_ARRAY, .type = AC_F32},
                      {.kind = AC_DATUM_ARRAY, .type = AC_F32}};
  ac_datum result;
  ac_status st = AC_ERR_NOMEM;
  if ((args[0].array = ac_array_create(ctx, AC_F32, 1, n, xs, err)) &&
      (args[1].array = ac_array_create(ctx, AC_F32, 1, n, ys, err)) &&
      (st = ac_function_create(m, "dotp", AC_BACKEND_AUTO, &fn, err)) == AC_OK &&
      (st = ac_function_call(fn, args, 2, &result, 1, err)) == AC_OK) {
    example_print_float(result.s.f); /* 1*4 + 2*5 + 3*6 = 32 */
    ac_datum_release(&result);
  }
  if (fn)
    ac_function_destroy(fn);
  ac_datum_release(&args[0]);
  ac_datum_release(&args[1]);
  return st;
}

int main(int argc, char **argv) { return example_main(argc, argv, "dotp", build, run); }
