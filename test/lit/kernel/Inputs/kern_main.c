/* Calls kern.ac's functions through the header arrayc wrote for the CPU
 * (test/lit/kernel/aot.test); the host functions are kern_host.c's, linked
 * into the program and found by name. */
#include "kern.h"

#include <stdio.h>

static void print_f64(const char *what, ac_array *a) {
  const double *d = ac_array_data(a);
  printf("%s:", what);
  for (int64_t i = 0; i < ac_array_size(a); i++)
    printf(" %g", d[i]);
  printf("\n");
}

int main(void) {
  ac_context *ctx = ac_context_create();
  kern_lib lib;
  ac_error *err = NULL;
  if (kern_open(ctx, NULL, &lib, &err) != AC_OK) {
    printf("error: %s\n", ac_error_message(err));
    return 1;
  }
  float xs[3] = {1, 2, 3}, ys[3] = {10, 20, 30}, s = 0;
  int64_t n = 3;
  ac_array *ax = ac_array_create(ctx, AC_F32, 1, &n, xs, &err);
  ac_array *ay = ac_array_create(ctx, AC_F32, 1, &n, ys, &err);
  if (kern_upd(&lib, 2.0f, ax, ay, &s, &err) != AC_OK) {
    printf("error: %s\n", ac_error_message(err));
    return 1;
  }
  printf("upd: %g\n", s);
  int64_t ext[2] = {2, 3};
  ac_array *m = ac_array_create(ctx, AC_F64, 2, ext, (double[]){1, 2, 3, 4, 5, 6}, &err);
  ac_array *r = NULL, *r2 = NULL;
  if (kern_rows(&lib, m, &r, &err) != AC_OK) {
    printf("error: %s\n", ac_error_message(err));
    return 1;
  }
  print_f64("rows", r);
  ac_array_release(r);
  int64_t two = 2;
  ac_array *v = ac_array_create(ctx, AC_F64, 1, &two, (double[]){1.5, 2.5}, &err);
  if (kern_split3(&lib, v, &r2, &r, &err) == AC_OK) {
    print_f64("split3", r2);
    ac_array_release(r2);
    ac_array_release(r);
  }
  if (kern_splitn(&lib, -1, v, &r2, &err) != AC_OK)
    printf("error: %s\n", ac_error_message(err));
  ac_error_destroy(err);
  ac_array_release(v);
  ac_array_release(m);
  ac_array_release(ax);
  ac_array_release(ay);
  kern_close(&lib);
  ac_context_destroy(ctx);
  return 0;
}
