/* test/lit/aot/Inputs/infer_main.c: calls stats of infer.ac through the
 * header arrayc generated: its result pointers have the inferred types
 * (float, then two arrays), so this compiles only if they do. */
#include "infer.h"

#include <stdio.h>
#include <stdlib.h>

static void die(ac_error *err) {
  fputs(err ? ac_error_text(err) : "error without a message\n", stdout);
  ac_error_destroy(err);
  exit(1);
}

int main(void) {
  ac_context *ctx = ac_context_create();
  infer_lib lib;
  ac_error *err = NULL;
  if (infer_open(ctx, NULL, &lib, &err) != AC_OK)
    die(err);
  float x[3] = {1.5f, 2.0f, -3.0f};
  int64_t n = 3;
  ac_array *xs = ac_array_create(ctx, AC_F32, 1, &n, x, &err);
  float total = 0;
  ac_array *scaled = NULL, *ints = NULL;
  if (!xs || infer_stats(&lib, xs, &total, &scaled, &ints, &err) != AC_OK)
    die(err);
  const float *s = ac_array_data(scaled);
  const int64_t *k = ac_array_data(ints);
  printf("stats %g [%g, %g, %g] [%lld, %lld, %lld]\n", total, s[0], s[1], s[2], (long long)k[0],
         (long long)k[1], (long long)k[2]);
  ac_array_release(xs);
  ac_array_release(scaled);
  ac_array_release(ints);
  infer_close(&lib);
  ac_context_destroy(ctx);
  return 0;
}
