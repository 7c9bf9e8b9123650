/* examples/aot/smvm_aot.c: sparse matrix times vector (CSR), compiled ahead
 * of time.
 *
 * `arrayc examples/smvm.ac [--target=cpu] -o smvm` wrote smvm.ptx (GPU) or smvm.o (CPU) and
 * smvm.h, which declares
 *
 *   ac_status smvm_smvm(const smvm_lib *lib, ac_array *vals, ac_array *cols,
 *                       ac_array *rowlens, ac_array *x, ac_array **out,
 *                       ac_error **err);
 *
 * for `fn smvm(vals: f32[], cols: i32[], rowlens: i32[], x: f32[]) ->
 * f32[]`: the matrix in compressed sparse row form (the non-zero values row
 * by row, their columns, the number in each row) times the vector x. This
 * program includes smvm.h and links libarrayc_rt (and smvm.o) alone.
 *
 * It first multiplies the 3x3 matrix of examples/smvm.c, then an N x N
 * matrix (default N = 1,000,000) made up from a fixed seed: 0 to 8
 * non-zeros per row (so some rows are empty, and their product is 0) at
 * random columns, small integer values, and x[j] = j mod 7 - 3. Every
 * product and partial sum is then a small integer, which f32 holds exactly
 * in any order of addition, so the result must equal that of a plain C
 * loop exactly, element for element. It prints the sizes, the sum of y,
 * the time of the call (the first, and the best of five: on the GPU the
 * first one also copies the matrix to the device), then "ok"; a
 * difference is reported and makes it exit 1.
 *
 *   aot-smvm-cpu [N]     aot-smvm-gpu [N]
 */
#include "aot_example.h"
#include "smvm.h"

#include <math.h>

#define REPEATS 5

/* A CSR matrix and a vector, in the program's memory. */
typedef struct csr {
  int64_t rows, nnz;
  float *vals;
  int32_t *cols, *rowlens;
  float *x;
} csr;

static uint32_t next(uint32_t *state) {
  *state = *state * 1664525u + 1013904223u;
  return *state >> 8;
}

/* The made-up n x n matrix and vector; false when out of memory. */
static bool make_matrix(int64_t n, csr *m) {
  memset(m, 0, sizeof *m);
  m->rows = n;
  m->rowlens = malloc((size_t)n * sizeof *m->rowlens);
  m->x = malloc((size_t)n * sizeof *m->x);
  if (!m->rowlens || !m->x)
    return false;
  uint32_t state = 7;
  for (int64_t i = 0; i < n; i++) {
    m->rowlens[i] = (int32_t)(next(&state) % 9);
    m->nnz += m->rowlens[i];
    m->x[i] = (float)(i % 7 - 3);
  }
  m->vals = malloc((size_t)(m->nnz ? m->nnz : 1) * sizeof *m->vals);
  m->cols = malloc((size_t)(m->nnz ? m->nnz : 1) * sizeof *m->cols);
  if (!m->vals || !m->cols)
    return false;
  for (int64_t k = 0; k < m->nnz; k++) {
    m->cols[k] = (int32_t)(next(&state) % (uint32_t)n);
    m->vals[k] = (float)(1 + next(&state) % 4);
  }
  return true;
}

static void free_matrix(csr *m) {
  free(m->vals), free(m->cols), free(m->rowlens), free(m->x);
}

/* The product with the plain loop over the rows. */
static void smvm_ref(const csr *m, float *y) {
  int64_t k = 0;
  for (int64_t i = 0; i < m->rows; i++) {
    float sum = 0;
    for (int32_t j = 0; j < m->rowlens[i]; j++, k++)
      sum += m->vals[k] * m->x[m->cols[k]];
    y[i] = sum;
  }
}

/* y = m * x with the compiled function, into y (m->rows floats); the best
 * and first of `repeats` call times in *best_s and *first_s. Wraps the
 * program's memory as arrays (no copy). */
static ac_status multiply(ac_context *ctx, const smvm_lib *lib, const csr *m, int repeats, float *y,
                          double *first_s, double *best_s, ac_error **err) {
  int64_t nnz = m->nnz, rows = m->rows;
  ac_array *vals = ac_array_borrow(ctx, AC_F32, 1, &nnz, m->vals, NULL, NULL, err);
  ac_array *cols = vals ? ac_array_borrow(ctx, AC_I32, 1, &nnz, m->cols, NULL, NULL, err) : NULL;
  ac_array *rowlens =
      cols ? ac_array_borrow(ctx, AC_I32, 1, &rows, m->rowlens, NULL, NULL, err) : NULL;
  ac_array *x = rowlens ? ac_array_borrow(ctx, AC_F32, 1, &rows, m->x, NULL, NULL, err) : NULL;
  ac_status st = x ? AC_OK : AC_ERR_NOMEM;
  ac_array *out = NULL;
  *first_s = 0, *best_s = INFINITY;
  for (int i = 0; st == AC_OK && i < repeats; i++) {
    ac_array_release(out);
    out = NULL;
    double t0 = aot_seconds();
    st = smvm_smvm(lib, vals, cols, rowlens, x, &out, err);
    double dt = aot_seconds() - t0;
    *first_s = i == 0 ? dt : *first_s;
    *best_s = fmin(*best_s, dt);
  }
  if (st == AC_OK) /* from the device, on the GPU */
    st = ac_array_read(out, y, (size_t)rows * sizeof *y, err);
  ac_array *all[] = {vals, cols, rowlens, x, out};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    ac_array_release(all[i]);
  return st;
}

int main(int argc, char **argv) {
  long long n = aot_size_arg(argc, argv, "smvm", 1000000, 1, 50000000);
  if (n < 0)
    return 2;
  printf("smvm ahead of time (" AOT_TARGET "): %lld x %lld\n", n, n);
  ac_context *ctx = ac_context_create();
  smvm_lib lib;
  ac_error *err = NULL;
  ac_status st = ctx ? smvm_open(ctx, NULL, &lib, &err) : AC_ERR_NOMEM;
  if (st != AC_OK) {
    int rc = aot_open_failed(st, err);
    ac_context_destroy(ctx);
    return rc;
  }

  /* [[1, 0, 2], [0, 3, 0], [4, 5, 6]] * [1, 2, 3], as examples/smvm.c */
  csr small = {.rows = 3,
               .nnz = 6,
               .vals = (float[]){1, 2, 3, 4, 5, 6},
               .cols = (int32_t[]){0, 2, 1, 0, 1, 2},
               .rowlens = (int32_t[]){2, 1, 3},
               .x = (float[]){1, 2, 3}};
  float y3[3];
  double first_s, best_s;
  int rc = 0;
  if (multiply(ctx, &lib, &small, 1, y3, &first_s, &best_s, &err) != AC_OK) {
    rc = aot_fail("smvm", err);
  } else {
    printf("[[1, 0, 2], [0, 3, 0], [4, 5, 6]] * [1, 2, 3] = [%g, %g, %g]\n", y3[0], y3[1], y3[2]);
    if (y3[0] != 7 || y3[1] != 6 || y3[2] != 32) {
      printf("FAIL: expected [7, 6, 32]\n");
      rc = 1;
    }
  }

  csr m = {0};
  float *y = malloc((size_t)n * sizeof *y), *ref = malloc((size_t)n * sizeof *ref);
  if (rc == 0 && (!make_matrix(n, &m) || !y || !ref))
    rc = aot_fail("matrix", NULL);
  if (rc == 0 && multiply(ctx, &lib, &m, REPEATS, y, &first_s, &best_s, &err) != AC_OK)
    rc = aot_fail("smvm", err);
  if (rc == 0) {
    smvm_ref(&m, ref);
    long long sum = 0, empty = 0, wrong = 0, first_wrong = -1;
    for (int64_t i = 0; i < n; i++) {
      sum += (long long)y[i];
      empty += m.rowlens[i] == 0;
      if (y[i] != ref[i] && wrong++ == 0)
        first_wrong = i;
    }
    printf("%lld non-zeros, %lld empty rows: y sums to %lld\n", (long long)m.nnz, empty, sum);
    printf("time: first call %.2f ms, best of %d calls %.2f ms (%.1f M non-zeros/s)\n",
           1e3 * first_s, REPEATS, 1e3 * best_s, m.nnz / best_s * 1e-6);
    if (wrong) {
      printf("FAIL: %lld of %lld rows differ from the C loop; row %lld: %.9g, expected %.9g\n",
             wrong, n, first_wrong, y[first_wrong], ref[first_wrong]);
      rc = 1;
    } else {
      printf("ok: the %lld rows equal the C loop's exactly\n", n);
    }
  }
  free_matrix(&m);
  free(y), free(ref);
  smvm_close(&lib);
  ac_context_destroy(ctx);
  return rc;
}
