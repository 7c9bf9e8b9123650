/* examples/forward_diff.c: forward differences with the C API.
 *
 * Builds the module of examples/forward_diff.ac: out[k] = xs[k+1] - xs[k],
 * written as a map over two slices of the same array (Barracuda's slices:
 * no copy is made, the slices become index functions when fused). len(xs)
 * is used twice, so sharing recovery binds it once as `n`.
 *
 * Without arguments it differentiates [1, 4, 9, 16, 25] on the best backend
 * (AUTO) and prints [3.0, 5.0, 7.0, 9.0]; with --print it prints the
 * module, exactly as `arrayc-opt examples/forward_diff.ac` does.
 */
#include "arrayc/arrayc.h"
#include "example_main.h"

#include <stdio.h>
#include <string.h>

#define AT(b) ac_builder_set_location((b), __LINE__, 1)

static ac_status build(ac_module *m, ac_error **err) {
  ac_context *ctx = ac_module_context(m);
  ac_builder *b = ac_builder_create(m);
  if (!b)
    return AC_ERR_NOMEM;
  ac_type vec = ac_type_array(ctx, ac_type_scalar(ctx, AC_F32), 1);
  AT(b);
  ac_fn fd = ac_fn_declare(b, "forward_diff", 1, &vec, (const char *[]){"xs"}, vec);
  ac_value xs = ac_fn_param(b, fd, 0);

  AT(b);
  ac_value n = ac_name(b, ac_unary(b, AC_OP_LEN, xs), "n");
  ac_value one = ac_lit_int(b, AC_I64, 1), zero = ac_lit_int(b, AC_I64, 0);
  ac_value next = ac_apply(b, AC_OP_SLICE, 3, (ac_value[]){xs, one, n});
  ac_value prev =
      ac_apply(b, AC_OP_SLICE, 3, (ac_value[]){xs, zero, ac_binary(b, AC_OP_SUB, n, one)});

  AT(b);
  ac_value ab[2];
  ac_lambda minus = ac_lambda_begin(b, 2, (const char *[]){"a", "b"}, ab);
  ac_value diff = ac_lambda_end(b, minus, ac_binary(b, AC_OP_SUB, ab[0], ab[1]));
  ac_value body = ac_apply(b, AC_OP_MAP, 3, (ac_value[]){diff, next, prev});
  ac_status st = ac_fn_finish(b, fd, body, err);
  ac_builder_destroy(b);
  return st;
}

static ac_status run(ac_module *m, ac_error **err) {
  ac_context *ctx = ac_module_context(m);
  static const float xs[] = {1, 4, 9, 16, 25};
  const int64_t n[1] = {5};
  ac_function *fn = NULL;
  ac_datum arg = {.kind = AC_DATUM_ARRAY, .type = AC_F32}, out;
  ac_status st = AC_ERR_NOMEM;
  if ((arg.array = ac_array_create(ctx, AC_F32, 1, n, xs, err)) &&
      (st = ac_function_create(m, "forward_diff", AC_BACKEND_AUTO, &fn, err)) == AC_OK &&
      (st = ac_function_call(fn, &arg, 1, &out, 1, err)) == AC_OK) {
    example_print_floats(out.array);
    ac_datum_release(&out);
  }
  if (fn)
    ac_function_destroy(fn);
  ac_datum_release(&arg);
  return st;
}

int main(int argc, char **argv) { return example_main(argc, argv, "forward_diff", build, run); }
