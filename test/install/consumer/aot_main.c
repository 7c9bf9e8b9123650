/* test/install/consumer/aot_main.c: a program of another project that
 * calls code compiled ahead of time by an installed arrayc, through the
 * header arrayc wrote (demo.h, from demo.ac), linked with the installed
 * libarrayc_rt (shared or static) and nothing of LLVM. The install test
 * (test/install/consumer.sh) builds it with CMake and with pkg-config and
 * compares what it prints:
 *   functions 2
 *   dotp 32
 *   scale [2.5, 5, 10]
 */
#include "demo.h"

#include <stdio.h>

static int fail(ac_error *err) {
  fputs(err ? ac_error_text(err) : "error without a message\n", stdout);
  ac_error_destroy(err);
  return 1;
}

int main(void) {
  ac_context *ctx = ac_context_create();
  if (!ctx)
    return 1;
  demo_lib lib;
  ac_error *err = NULL;
  if (demo_open(ctx, NULL, &lib, &err) != AC_OK)
    return fail(err);
  printf("functions %d\n", DEMO_NUM_FUNCTIONS);

  static const float x[3] = {1, 2, 3}, y[3] = {4, 5, 6};
  static const double v[3] = {1, 2, 4};
  const int64_t n = 3;
  ac_array *xs = ac_array_create(ctx, AC_F32, 1, &n, x, &err);
  ac_array *ys = xs ? ac_array_create(ctx, AC_F32, 1, &n, y, &err) : NULL;
  ac_array *vs = ys ? ac_array_create(ctx, AC_F64, 1, &n, v, &err) : NULL;
  ac_array *scaled = NULL;
  float d = 0;
  int rc = 0;
  if (!vs || demo_dotp(&lib, xs, ys, &d, &err) != AC_OK ||
      demo_scale(&lib, vs, 2.5, &scaled, &err) != AC_OK) {
    rc = fail(err);
  } else {
    const double *s = ac_array_data(scaled);
    printf("dotp %.9g\n", d);
    printf("scale [%.17g, %.17g, %.17g]\n", s[0], s[1], s[2]);
  }
  ac_array_release(scaled);
  ac_array_release(vs);
  ac_array_release(ys);
  ac_array_release(xs);
  demo_close(&lib);
  ac_context_destroy(ctx);
  return rc;
}
