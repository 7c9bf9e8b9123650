/* examples/smvm.c: sparse matrix-vector product (CSR) with the C API.
 *
 * Builds the module of examples/smvm.ac. A sparse matrix in compressed
 * sparse row form is its non-zero values, their column indices and the
 * number of non-zeros of each row. The product with a dense vector x gathers
 * x at the column indices, multiplies element-wise by the values (map), and
 * adds up each row's products with a segmented reduction (fold_seg) whose
 * segments are the row lengths: one fused pass over the non-zeros, the
 * formulation of Accelerate's and Copperhead's SpMV.
 *
 * Without arguments it multiplies the 3x3 matrix
 *     [[1, 0, 2], [0, 3, 0], [4, 5, 6]]
 * by [1, 2, 3] on the best backend (AUTO) and prints [7.0, 6.0, 32.0];
 * with --print it prints the module, exactly as
 * `arrayc-opt examples/smvm.ac` does.
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
  ac_type f32 = ac_type_scalar(ctx, AC_F32);
  ac_type fvec = ac_type_array(ctx, f32, 1);
  ac_type ivec = ac_type_array(ctx, ac_type_scalar(ctx, AC_I32), 1);
  AT(b);
  ac_fn smvm = ac_fn_declare(b, "smvm", 4, (ac_type[]){fvec, ivec, ivec, fvec},
                             (const char *[]){"vals", "cols", "rowlens", "x"}, fvec);
  ac_value vals = ac_fn_param(b, smvm, 0), cols = ac_fn_param(b, smvm, 1);
  ac_value rowlens = ac_fn_param(b, smvm, 2), x = ac_fn_param(b, smvm, 3);

  AT(b);
  ac_value vx[2];
  ac_lambda times = ac_lambda_begin(b, 2, (const char *[]){"v", "xc"}, vx);
  ac_value mul = ac_lambda_end(b, times, ac_binary(b, AC_OP_MUL, vx[0], vx[1]));
  ac_value ab[2];
  ac_lambda plus = ac_lambda_begin(b, 2, (const char *[]){"a", "b"}, ab);
  ac_value add = ac_lambda_end(b, plus, ac_binary(b, AC_OP_ADD, ab[0], ab[1]));

  AT(b);
  ac_value xs = ac_apply(b, AC_OP_GATHER, 2, (ac_value[]){cols, x}); /* x[cols[k]] */
  ac_value products = ac_apply(b, AC_OP_MAP, 3, (ac_value[]){mul, vals, xs});
  ac_value zero = ac_lit_float(b, AC_F32, 0.0);
  ac_value rows = ac_apply(b, AC_OP_FOLD_SEG, 4, (ac_value[]){add, zero, products, rowlens});
  ac_status st = ac_fn_finish(b, smvm, rows, err);
  ac_builder_destroy(b);
  return st;
}

static ac_status run(ac_module *m, ac_error **err) {
  ac_context *ctx = ac_module_context(m);
  static const float vals[] = {1, 2, 3, 4, 5, 6}, x[] = {1, 2, 3};
  static const int32_t cols[] = {0, 2, 1, 0, 1, 2}, rowlens[] = {2, 1, 3};
  const int64_t nnz[1] = {6}, n[1] = {3};
  ac_function *fn = NULL;
  ac_datum args[4] = {{.kind = AC_DATUM_ARRAY, .type = AC_F32},
                      {.kind = AC_DATUM_ARRAY, .type = AC_I32},
                      {.kind = AC_DATUM_ARRAY, .type = AC_I32},
                      {.kind = AC_DATUM_ARRAY, .type = AC_F32}};
  ac_datum y;
  ac_status st = AC_ERR_NOMEM;
  if ((args[0].array = ac_array_create(ctx, AC_F32, 1, nnz, vals, err)) &&
      (args[1].array = ac_array_create(ctx, AC_I32, 1, nnz, cols, err)) &&
      (args[2].array = ac_array_create(ctx, AC_I32, 1, n, rowlens, err)) &&
      (args[3].array = ac_array_create(ctx, AC_F32, 1, n, x, err)) &&
      (st = ac_function_create(m, "smvm", AC_BACKEND_AUTO, &fn, err)) == AC_OK &&
      (st = ac_function_call(fn, args, 4, &y, 1, err)) == AC_OK) {
    example_print_floats(y.array);
    ac_datum_release(&y);
  }
  if (fn)
    ac_function_destroy(fn);
  for (int i = 0; i < 4; i++)
    ac_datum_release(&args[i]);
  return st;
}

int main(int argc, char **argv) { return example_main(argc, argv, "smvm", build, run); }
