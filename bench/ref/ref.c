/* bench/ref/ref.c: hand-written reference implementations of the CPU
 * benchmarks, compiled with gcc -O3 -march=native -fopenmp (see
 * bench/CMakeLists.txt). They are what a careful C programmer writes with
 * OpenMP: one parallel loop per benchmark, static schedule, reductions
 * through OpenMP's reduction clause, the prefix sum as the classic
 * three-phase blocked scan. They write into preallocated outputs, as such
 * code usually does.
 */
#include "ref.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>

void ref_saxpy(int64_t n, float a, const float *x, const float *y, float *out) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i++)
    out[i] = a * x[i] + y[i];
}

float ref_sdot(int64_t n, const float *x, const float *y) {
  float s = 0.0f;
#pragma omp parallel for schedule(static) reduction(+ : s)
  for (int64_t i = 0; i < n; i++)
    s += x[i] * y[i];
  return s;
}

static inline float cndf(float d) {
  const float k = 1.0f / (1.0f + 0.2316419f * fabsf(d));
  const float w = 0.3989422804f * expf(-0.5f * d * d) * k *
                  (0.31938153f +
                   k * (-0.356563782f + k * (1.781477937f + k * (-1.821255978f + k * 1.330274429f))));
  return d > 0.0f ? 1.0f - w : w;
}

void ref_blackscholes(int64_t n, const float *s, const float *x, const float *t, float r, float v,
                      float *call, float *put) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i++) {
    const float sq = sqrtf(t[i]);
    const float d1 = (logf(s[i] / x[i]) + (r + 0.5f * v * v) * t[i]) / (v * sq);
    const float d2 = d1 - v * sq;
    const float e = expf(-r * t[i]);
    call[i] = s[i] * cndf(d1) - x[i] * e * cndf(d2);
    put[i] = x[i] * e * (1.0f - cndf(d2)) - s[i] * (1.0f - cndf(d1));
  }
}

void ref_prefix_sum(int64_t n, const int32_t *x, int32_t *out) {
  const int nt = omp_get_max_threads();
  int32_t *sums = calloc((size_t)nt + 1, sizeof *sums);
  if (!sums)
    return;
#pragma omp parallel num_threads(nt)
  {
    const int t = omp_get_thread_num(), p = omp_get_num_threads();
    const int64_t lo = n * t / p, hi = n * (t + 1) / p;
    uint32_t acc = 0; /* unsigned: wrapping like the language's i32 */
    for (int64_t i = lo; i < hi; i++) {
      acc += (uint32_t)x[i];
      out[i] = (int32_t)acc;
    }
    sums[t + 1] = (int32_t)acc;
#pragma omp barrier
#pragma omp single
    for (int k = 1; k <= p; k++)
      sums[k] = (int32_t)((uint32_t)sums[k] + (uint32_t)sums[k - 1]);
    const uint32_t carry = (uint32_t)sums[t];
    for (int64_t i = lo; i < hi; i++)
      out[i] = (int32_t)((uint32_t)out[i] + carry);
  }
  free(sums);
}

void ref_row_sums(int64_t rows, int64_t cols, const float *m, float *out) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; r++) {
    float s = 0.0f;
    for (int64_t c = 0; c < cols; c++)
      s += m[r * cols + c];
    out[r] = s;
  }
}

void ref_spmv_csr(int64_t rows, const int64_t *rowptr, const int32_t *cols, const float *vals,
                  const float *x, float *y) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; r++) {
    float s = 0.0f;
    for (int64_t k = rowptr[r]; k < rowptr[r + 1]; k++)
      s += vals[k] * x[cols[k]];
    y[r] = s;
  }
}

double ref_stream_triad(int64_t n, double *a, const double *b, const double *c) {
  double t0 = omp_get_wtime();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i++)
    a[i] = b[i] + 3.0 * c[i];
  return omp_get_wtime() - t0;
}
