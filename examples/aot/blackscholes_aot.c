/* examples/aot/blackscholes_aot.c: Black-Scholes option pricing, compiled
 * ahead of time.
 *
 * `arrayc examples/blackscholes.ac --target=cpu -o bs` wrote bs.o (the CPU's
 * kernels and plans) or, with --target=gpu, bs.ptx, and bs.h, which declares
 *
 *   ac_status bs_blackscholes(const bs_lib *lib, ac_array *s, ac_array *x,
 *                             ac_array *t, float r_, float v,
 *                             ac_array **out_0, ac_array **out_1, ac_error **err);
 *
 * for `fn blackscholes(s: f32[], x: f32[], t: f32[], r: f32, v: f32) ->
 * (f32[], f32[])`. This program includes bs.h and links libarrayc_rt (and
 * bs.o): no compiler, no LLVM, no CUDA toolkit.
 *
 * It prices N options (default 1,000,000) in one call: the first three are
 * those of examples/blackscholes.c, the others are made up from a fixed
 * seed (spot 10 to 200, strike half to one and a half times the spot, 0.1
 * to 3 years). Every call and put price is checked against the same
 * formula evaluated here in double precision, on the same f32 inputs. The
 * measure is the error relative to the price, or the absolute error for
 * prices under 1 (an error of 1e-7 on a price of 1e-6 is no error): the
 * program fails (exit 1) when that exceeds 1e-3. It prints the three known
 * options, the largest errors and the time the call took (the first call,
 * and the best of five: on the GPU the first one also copies the inputs to
 * the device), then "ok".
 *
 *   aot-blackscholes-cpu [N]     aot-blackscholes-gpu [N]
 */
#include "aot_example.h"
#include "bs.h"

#include <math.h>

#define RATE 0.02f      /* interest rate, per year */
#define VOLATILITY 0.3f /* of the underlying, per year */
#define REPEATS 5
#define TOLERANCE 1e-3

/* cnd of examples/blackscholes.ac in double precision, with its constants. */
static double cnd_ref(double d) {
  double k = 1.0 / (1.0 + 0.2316419 * fabs(d));
  double w = 0.3989423 * exp(-0.5 * d * d) * k *
             (0.31938154 + k * (-0.35656378 + k * (1.7814779 + k * (-1.8212559 + k * 1.3302745))));
  return d > 0.0 ? 1.0 - w : w;
}

/* The map's element function of blackscholes, in double precision. */
static void price_ref(double s, double x, double t, double r, double v, double *call, double *put) {
  double sq = sqrt(t);
  double d1 = (log(s / x) + (r + 0.5 * v * v) * t) / (v * sq);
  double e = exp(-r * t);
  double d2 = d1 - v * sq;
  *call = s * cnd_ref(d1) - x * e * cnd_ref(d2);
  *put = x * e * (1.0 - cnd_ref(d2)) - s * (1.0 - cnd_ref(d1));
}

/* The error of got against the reference ref, as TOLERANCE measures it. */
static double rel_error(float got, double ref) {
  return fabs(got - ref) / fmax(fabs(ref), 1.0);
}

/* A linear congruential generator: the same options on every machine. */
static float uniform(uint32_t *state, float lo, float hi) {
  *state = *state * 1664525u + 1013904223u;
  return lo + (hi - lo) * (float)(*state >> 8) / 16777216.0f;
}

static void make_options(int64_t n, float *s, float *x, float *t) {
  static const float known_s[3] = {100, 50, 30}, known_x[3] = {100, 60, 25},
                     known_t[3] = {1, 0.5f, 2};
  uint32_t state = 2024;
  for (int64_t i = 0; i < n; i++) {
    if (i < 3) {
      s[i] = known_s[i], x[i] = known_x[i], t[i] = known_t[i];
      continue;
    }
    s[i] = uniform(&state, 10, 200);
    x[i] = s[i] * uniform(&state, 0.5f, 1.5f);
    t[i] = uniform(&state, 0.1f, 3);
  }
}

/* Checks every price; prints the known options and the largest errors.
 * Returns false (after saying which price) when one is off. */
static bool check(int64_t n, const float *s, const float *x, const float *t, const float *call,
                  const float *put) {
  double max_abs = 0, max_rel = 0;
  int64_t worst = 0;
  for (int64_t i = 0; i < n; i++) {
    double c, p;
    price_ref(s[i], x[i], t[i], RATE, VOLATILITY, &c, &p);
    if (i < 3)
      printf("option %d: spot %g strike %g years %g: call %.4f put %.4f (double: %.4f %.4f)\n",
             (int)i, s[i], x[i], t[i], call[i], put[i], c, p);
    max_abs = fmax(max_abs, fmax(fabs(call[i] - c), fabs(put[i] - p)));
    double rel = fmax(rel_error(call[i], c), rel_error(put[i], p));
    if (rel > max_rel || isnan(rel))
      max_rel = rel, worst = i;
  }
  printf("largest error against double precision: %.2g absolute, %.2g relative\n", max_abs,
         max_rel);
  if (max_rel <= TOLERANCE)
    return true;
  double c, p;
  price_ref(s[worst], x[worst], t[worst], RATE, VOLATILITY, &c, &p);
  printf("FAIL: option %lld (spot %g strike %g years %g): call %.9g put %.9g, expected %.9g "
         "%.9g\n",
         (long long)worst, s[worst], x[worst], t[worst], call[worst], put[worst], c, p);
  return false;
}

int main(int argc, char **argv) {
  long long n = aot_size_arg(argc, argv, "blackscholes", 1000000, 3, 200000000);
  if (n < 0)
    return 2;
  float *s = malloc((size_t)n * sizeof *s), *x = malloc((size_t)n * sizeof *x),
        *t = malloc((size_t)n * sizeof *t);
  ac_context *ctx = ac_context_create();
  if (!s || !x || !t || !ctx) {
    fprintf(stderr, "out of memory\n");
    return 1;
  }
  make_options(n, s, x, t);
  printf("blackscholes ahead of time (" AOT_TARGET "): %lld options, rate %g, volatility %g\n", n,
         RATE, VOLATILITY);

  /* Loading: the linked object's plans (CPU), or bs.ptx through the CUDA
   * driver (GPU), checked against the header. */
  bs_lib lib;
  ac_error *err = NULL;
  double t0 = aot_seconds();
  ac_status st = bs_open(ctx, NULL, &lib, &err);
  double open_s = aot_seconds() - t0;
  if (st != AC_OK) {
    int rc = aot_open_failed(st, err);
    ac_context_destroy(ctx);
    free(s), free(x), free(t);
    return rc;
  }

  /* The arrays wrap the program's memory (no copy): it must stay as it is
   * until they are released. */
  int64_t extent = n;
  ac_array *as = ac_array_borrow(ctx, AC_F32, 1, &extent, s, NULL, NULL, &err);
  ac_array *ax = as ? ac_array_borrow(ctx, AC_F32, 1, &extent, x, NULL, NULL, &err) : NULL;
  ac_array *at = ax ? ac_array_borrow(ctx, AC_F32, 1, &extent, t, NULL, NULL, &err) : NULL;
  int rc = at ? 0 : aot_fail("arrays", err);

  /* Two result arrays, each a new reference per call. */
  ac_array *call = NULL, *put = NULL;
  double first_s = 0, best_s = INFINITY;
  for (int i = 0; rc == 0 && i < REPEATS; i++) {
    ac_array_release(call);
    ac_array_release(put);
    call = put = NULL;
    t0 = aot_seconds();
    st = bs_blackscholes(&lib, as, ax, at, RATE, VOLATILITY, &call, &put, &err);
    double dt = aot_seconds() - t0;
    if (st != AC_OK)
      rc = aot_fail("blackscholes", err);
    first_s = i == 0 ? dt : first_s;
    best_s = fmin(best_s, dt);
  }

  /* The prices into the program's memory (from the device, on the GPU). */
  float *c = malloc((size_t)n * sizeof *c), *p = malloc((size_t)n * sizeof *p);
  double fetch_s = 0;
  if (rc == 0) {
    t0 = aot_seconds();
    if (!c || !p)
      rc = aot_fail("results", NULL);
    else if (ac_array_read(call, c, (size_t)n * sizeof *c, &err) != AC_OK ||
             ac_array_read(put, p, (size_t)n * sizeof *p, &err) != AC_OK)
      rc = aot_fail("results", err);
    fetch_s = aot_seconds() - t0;
  }
  if (rc == 0 && !check(n, s, x, t, c, p))
    rc = 1;
  if (rc == 0) {
    printf("time: open %.2f ms, first call %.2f ms, best of %d calls %.2f ms (%.1f M options/s), "
           "results read %.2f ms\n",
           1e3 * open_s, 1e3 * first_s, REPEATS, 1e3 * best_s, n / best_s * 1e-6, 1e3 * fetch_s);
    printf("ok: %lld options priced within %g of double precision\n", n, TOLERANCE);
  }

  ac_array *all[] = {as, ax, at, call, put};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    ac_array_release(all[i]);
  bs_close(&lib);
  ac_context_destroy(ctx);
  free(s), free(x), free(t), free(c), free(p);
  return rc;
}
