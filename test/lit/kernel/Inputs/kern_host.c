/* Host functions of the extern kernels of kern.ac (docs/language.md §3.4):
 * per parameter a scalar or an array's elements and extents, then each
 * result's elements and extents. */
#include <stdbool.h>
#include <stdint.h>

void axpy(float a, const float *xs, int64_t nx, const float *ys, int64_t ny, float *out,
          int64_t nout) {
  for (int64_t i = 0; i < nout && i < nx && i < ny; i++)
    out[i] = a * xs[i] + ys[i];
}

void split_rows(int64_t n, const double *xs, int64_t nx, double *vals, int64_t nv, int64_t *idx,
                int64_t r, int64_t c) {
  (void)n;
  for (int64_t i = 0; i < nv; i++)
    vals[i] = i < nx ? xs[i] * 10.0 : -1.0;
  for (int64_t i = 0; i < r; i++) {
    idx[i * c] = i;
    idx[i * c + 1] = r * 100 + c;
  }
}

void row_sums(const double *m, int64_t rows, int64_t cols, double *out, int64_t n) {
  for (int64_t i = 0; i < n && i < rows; i++) {
    double s = 0;
    for (int64_t j = 0; j < cols; j++)
      s += m[i * cols + j];
    out[i] = s;
  }
}

void fill_flags(bool b, int8_t k, uint16_t u, int32_t n, int32_t *out, int64_t len) {
  for (int64_t i = 0; i < len; i++)
    out[i] = (b ? 1000 : 0) + k * (int32_t)i + (int32_t)u + n * 0;
}
