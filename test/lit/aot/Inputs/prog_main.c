/* test/lit/aot/Inputs/prog_main.c: calls every function of prog.ac through
 * the header arrayc generated (prog.h, either target) and prints the
 * results; the lit tests compare them with the interpreter's. With
 * AOT_OPEN_ONLY set it only opens and closes the library. */
#include "prog.h"

#include <stdio.h>
#include <stdlib.h>

static ac_context *ctx;

static void die(ac_error *err) {
  fputs(err ? ac_error_text(err) : "error without a message\n", stdout);
  ac_error_destroy(err);
  exit(1);
}

static ac_array *arr(ac_scalar sc, unsigned rank, const int64_t *ext, const void *data) {
  ac_error *err = NULL;
  ac_array *a = ac_array_create(ctx, sc, rank, ext, data, &err);
  if (!a)
    die(err);
  return a;
}

int main(void) {
  ctx = ac_context_create();
  prog_lib lib;
  ac_error *err = NULL;
  if (prog_open(ctx, NULL, &lib, &err) != AC_OK)
    die(err);
  printf("functions %d\n", PROG_NUM_FUNCTIONS);
  if (getenv("AOT_OPEN_ONLY")) { /* loading alone (a fake CUDA driver runs no kernels) */
    prog_close(&lib);
    ac_context_destroy(ctx);
    return 0;
  }

  float x[5] = {1, 2, 3, 4, 5}, y[5] = {1, 1, 1, 1, 2};
  int64_t n5 = 5, n3 = 3, n2 = 2, e23[2] = {2, 3};
  ac_array *xs = arr(AC_F32, 1, &n5, x), *ys = arr(AC_F32, 1, &n5, y);
  float d = 0;
  if (prog_dotp(&lib, xs, ys, &d, &err) != AC_OK)
    die(err);
  printf("dotp %.9g\n", d);

  double v[3] = {1, 2, 4};
  ac_array *vs = arr(AC_F64, 1, &n3, v), *scaled = NULL;
  int64_t len = 0;
  if (prog_scale(&lib, vs, 2.5, &scaled, &len, &err) != AC_OK)
    die(err);
  const double *sd = ac_array_data(scaled);
  printf("scale [%.17g, %.17g, %.17g] %lld\n", sd[0], sd[1], sd[2], (long long)len);
  /* a result nobody wants */
  if (prog_scale(&lib, vs, 2.5, NULL, &len, &err) != AC_OK)
    die(err);

  double p = 0;
  if (prog_pick(&lib, 3, 4.25, true, &p, &err) != AC_OK)
    die(err);
  printf("pick %.17g\n", p);

  int32_t iv[3] = {10, 20, 30};
  int64_t good[3] = {2, 0, 1}, bad[3] = {2, 0, 5};
  ac_array *is = arr(AC_I32, 1, &n3, iv), *g = arr(AC_I64, 1, &n3, good),
           *b = arr(AC_I64, 1, &n3, bad), *at = NULL;
  if (prog_at(&lib, is, g, &at, &err) != AC_OK)
    die(err);
  const int32_t *ad = ac_array_data(at);
  printf("at [%d, %d, %d]\n", ad[0], ad[1], ad[2]);
  ac_array *untouched = at;
  if (prog_at(&lib, is, b, &at, &err) == AC_OK || at != untouched)
    printf("at: the bad index was not reported\n");
  else
    printf("at error: %s", ac_error_text(err));
  ac_error_destroy(err);
  err = NULL;

  double s[2] = {0, 1};
  ac_array *ss = arr(AC_F64, 1, &n2, s), *sn = NULL;
  if (prog_sines(&lib, ss, &sn, &err) != AC_OK)
    die(err);
  const double *snd = ac_array_data(sn);
  printf("sines [%.17g, %.17g]\n", snd[0], snd[1]);

  int32_t m[6] = {1, 2, 3, 4, 5, 6};
  ac_array *ms = arr(AC_I32, 2, e23, m), *tw = NULL;
  if (prog_twice(&lib, ms, &tw, &err) != AC_OK)
    die(err);
  const int32_t *td = ac_array_data(tw);
  const int64_t *te = ac_array_extents(tw);
  printf("twice %lldx%lld [%d, %d, %d, %d, %d, %d]\n", (long long)te[0], (long long)te[1], td[0],
         td[1], td[2], td[3], td[4], td[5]);

  /* a wrong argument is the runtime's error, not a crash */
  if (prog_dotp(&lib, xs, vs, &d, &err) == AC_OK)
    printf("dotp: the f64 argument was accepted\n");
  else
    printf("dotp error: %s", ac_error_text(err));
  ac_error_destroy(err);

  ac_array *all[] = {xs, ys, vs, scaled, is, g, b, at, ss, sn, ms, tw};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    ac_array_release(all[i]);
  prog_close(&lib);
  ac_context_destroy(ctx);
  printf("done\n");
  return 0;
}
