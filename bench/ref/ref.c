/* bench/ref/ref.c: hand-written reference implementations of the CPU
 * benchmarks, compiled with gcc -O3 -march=native -fopenmp (see
 * bench/CMakeLists.txt). They are what a careful C programmer writes with
 * OpenMP: one parallel loop per benchmark, static schedule, reductions
 * through OpenMP's reduction clause (RMSE in one pass: no temporary), the
 * prefix sum as the classic three-phase blocked scan, the neighbour reads
 * (forward differences, the moving average, the Jacobi step) straight
 * from the input, the caches catching the reuse. They write into
 * preallocated outputs, as such code usually does.
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

float ref_rmse(int64_t n, const float *x, const float *y) {
  float s = 0.0f;
#pragma omp parallel for schedule(static) reduction(+ : s)
  for (int64_t i = 0; i < n; i++) {
    const float d = x[i] - y[i];
    s += d * d;
  }
  return sqrtf(s / (float)n);
}

void ref_forward_diff(int64_t n, const float *x, float *out) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n - 1; i++)
    out[i] = x[i + 1] - x[i];
}

/* The weights in the program's order, summed in that order. */
static const float ma15_w[15] = {0.01f, 0.02f, 0.04f, 0.07f, 0.10f, 0.12f, 0.14f, 0.00f,
                                 0.14f, 0.12f, 0.10f, 0.07f, 0.04f, 0.02f, 0.01f};

void ref_ma15(int64_t n, const float *x, float *out) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n - 14; i++) {
    float s = ma15_w[0] * x[i];
    for (int k = 1; k < 15; k++)
      s += ma15_w[k] * x[i + k];
    out[i] = s;
  }
}

/* Element (r, c) of the grid, 0 outside it: for the edges only. */
static inline float jacobi_at(int64_t rows, int64_t cols, const float *g, int64_t r, int64_t c) {
  return r < 0 || r >= rows || c < 0 || c >= cols ? 0.0f : g[r * cols + c];
}

static inline float jacobi_edge(int64_t rows, int64_t cols, const float *g, int64_t r, int64_t c) {
  return 0.25f * (jacobi_at(rows, cols, g, r - 1, c) + jacobi_at(rows, cols, g, r + 1, c) +
                  jacobi_at(rows, cols, g, r, c - 1) + jacobi_at(rows, cols, g, r, c + 1));
}

/* Interior rows take a branch-free loop that gcc vectorises; the first and
 * last rows and columns go through the bounds-checked jacobi_edge. */
void ref_jacobi2d(int64_t rows, int64_t cols, const float *g, float *out) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; r++) {
    float *o = out + r * cols;
    if (r == 0 || r == rows - 1 || cols < 3) {
      for (int64_t c = 0; c < cols; c++)
        o[c] = jacobi_edge(rows, cols, g, r, c);
      continue;
    }
    const float *n = g + (r - 1) * cols, *m = g + r * cols, *s = g + (r + 1) * cols;
    o[0] = jacobi_edge(rows, cols, g, r, 0);
    for (int64_t c = 1; c < cols - 1; c++)
      o[c] = 0.25f * (n[c] + s[c] + m[c - 1] + m[c + 1]);
    o[cols - 1] = jacobi_edge(rows, cols, g, r, cols - 1);
  }
}

double ref_stream_triad(int64_t n, double *a, const double *b, const double *c) {
  double t0 = omp_get_wtime();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i++)
    a[i] = b[i] + 3.0 * c[i];
  return omp_get_wtime() - t0;
}
