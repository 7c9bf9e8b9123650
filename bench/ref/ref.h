/* bench/ref/ref.h: the hand-written references (ref.c) the harness times
 * against arrayc. */
#ifndef ARRAYC_BENCH_REF_H
#define ARRAYC_BENCH_REF_H

#include <stdint.h>

#include "ref_dp.h" /* the recurrences, also used by the test suite */

void ref_saxpy(int64_t n, float a, const float *x, const float *y, float *out);
float ref_sdot(int64_t n, const float *x, const float *y);
void ref_blackscholes(int64_t n, const float *s, const float *x, const float *t, float r, float v,
                      float *call, float *put);
void ref_prefix_sum(int64_t n, const int32_t *x, int32_t *out);
void ref_row_sums(int64_t rows, int64_t cols, const float *m, float *out);
void ref_spmv_csr(int64_t rows, const int64_t *rowptr, const int32_t *cols, const float *vals,
                  const float *x, float *y);
/* sqrt(sum((x - y)^2) / n) in one pass. */
float ref_rmse(int64_t n, const float *x, const float *y);
/* out[i] = x[i + 1] - x[i] for i < n - 1. */
void ref_forward_diff(int64_t n, const float *x, float *out);
/* The 15-point weighted moving average of bench/programs/ma15.ac:
 * out[i] = sum over k < 15 of w[k] * x[i + k], for i < n - 14. */
void ref_ma15(int64_t n, const float *x, float *out);
/* One 2-D Jacobi step over a rows x cols grid with a zero boundary:
 * out = 0.25 * (north + south + west + east). */
void ref_jacobi2d(int64_t rows, int64_t cols, const float *g, float *out);
/* STREAM triad a = b + 3c over n doubles (first touch done by the caller);
 * returns seconds. The harness's measure of memory bandwidth. */
double ref_stream_triad(int64_t n, double *a, const double *b, const double *c);

#endif
