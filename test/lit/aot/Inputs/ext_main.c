/* test/lit/aot/Inputs/ext_main.c: calls ext.ac's functions through the
 * generated header; the kernels call affine, defined here, and libm's
 * logb, by name. */
#include "ext.h"

#include <stdio.h>

double affine(double x, int32_t k) {
  return x * k + 0.5;
}

int main(void) {
  ac_context *ctx = ac_context_create();
  ext_lib lib;
  ac_error *err = NULL;
  if (ext_open(ctx, NULL, &lib, &err) != AC_OK) {
    fputs(ac_error_text(err), stdout);
    return 1;
  }
  double v[4] = {1, 8, 27, 64};
  int64_t n = 4;
  ac_array *xs = ac_array_create(ctx, AC_F64, 1, &n, v, NULL), *ys = NULL;
  double r = 0;
  if (ext_apply(&lib, xs, 3, &ys, &err) != AC_OK || ext_roots(&lib, xs, &r, &err) != AC_OK) {
    fputs(ac_error_text(err), stdout);
    return 1;
  }
  const double *y = ac_array_data(ys);
  printf("apply [%.17g, %.17g, %.17g, %.17g]\nroots %.17g\n", y[0], y[1], y[2], y[3], r);
  ac_array_release(xs);
  ac_array_release(ys);
  ext_close(&lib);
  ac_context_destroy(ctx);
  return 0;
}
