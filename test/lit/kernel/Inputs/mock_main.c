/* Calls mock.ac's functions through the header arrayc wrote for the GPU
 * (test/lit/kernel/aot.test), on the fake CUDA driver. */
#include "mk.h"

#include <stdio.h>

int main(void) {
  ac_context *ctx = ac_context_create();
  mk_lib lib;
  ac_error *err = NULL;
  if (mk_open(ctx, NULL, &lib, &err) != AC_OK) {
    printf("error: %s\n", ac_error_message(err));
    return 1;
  }
  float xs[5] = {1, 2, 3, 4, 5}, ys[5] = {10, 20, 30, 40, 50};
  int64_t n = 5;
  ac_array *ax = ac_array_create(ctx, AC_F32, 1, &n, xs, &err);
  ac_array *ay = ac_array_create(ctx, AC_F32, 1, &n, ys, &err);
  ac_array *r = NULL;
  if (mk_g(&lib, 2.0f, ax, ay, &r, &err) != AC_OK) {
    printf("error: %s\n", ac_error_message(err));
    return 1;
  }
  const float *d = ac_array_data(r);
  printf("g:");
  for (int i = 0; i < 5; i++)
    printf(" %g", d[i]);
  printf("\n");
  ac_array_release(r);
  ac_array_release(ax);
  ac_array_release(ay);
  mk_close(&lib);
  ac_context_destroy(ctx);
  return 0;
}
