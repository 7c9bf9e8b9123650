/* bench/ref/ref.h: the hand-written references (ref.c) the harness times
 * against arrayc. */
#ifndef ARRAYC_BENCH_REF_H
#define ARRAYC_BENCH_REF_H

#include <stdint.h>

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
/* Edit distance (unit costs) and the Smith-Waterman score (match 3,
 * mismatch -3, linear gap 2) of s (n bytes) and t (m bytes), one thread,
 * row by row in prev and cur (m + 1 elements each). */
int32_t ref_edit_distance(int64_t n, const uint8_t *s, int64_t m, const uint8_t *t,
                          int32_t *prev, int32_t *cur);
int32_t ref_smith_waterman(int64_t n, const uint8_t *s, int64_t m, const uint8_t *t,
                           int32_t *prev, int32_t *cur);
/* Smith-Waterman scores of a batch of protein pairs with a 21 x 21
 * substitution matrix (row-major, residues ARNDCQEGHILKMFPSTWYV then X for
 * any other letter) and affine gaps (Gotoh: a gap of length k costs
 * gap_open + (k - 1) * extend), as examples/recurrences/protein.ac's
 * `scores`: pair p is s[so[p]..so[p + 1]] against t[to[p]..to[p + 1]],
 * letters in ASCII. One thread, each pair row by row in two rows; h and f
 * need room for the longest t plus one, ra and rb for the longest s and t. */
void ref_protein_scores(int64_t npairs, const uint8_t *s, const int64_t *so, const uint8_t *t,
                        const int64_t *to, const int32_t *matrix, int32_t gap_open,
                        int32_t extend, int32_t *out, int32_t *h, int32_t *f, uint8_t *ra,
                        uint8_t *rb);
/* STREAM triad a = b + 3c over n doubles (first touch done by the caller);
 * returns seconds. The harness's measure of memory bandwidth. */
double ref_stream_triad(int64_t n, double *a, const double *b, const double *c);

#endif
