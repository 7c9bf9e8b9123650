/* bench/dist/bench_dist.c: arrayc-bench-dist, the strong-scaling benchmark
 * of the distributed layer (docs/distributed.md), one rank count per run.
 *
 * Run under mpirun at R ranks (bench/dist/run.sh runs R = 1..4 and writes
 * the report). For a fixed global size it times, through arrayc's
 * distributed C API (arrayc/dist.h) and against the hand-written C+MPI
 * references of ref_dist.c on the same data:
 *   saxpy         dist.ac's saxpy over two distributed f32 vectors
 *   sum           dist.ac's sum (a fold) of a distributed f64 vector
 *   jacobi        one stencil step over an f32 grid distributed by rows
 *   jacobi_steps  `steps` of them in one call (iterate)
 *   sample_sort   u32 keys: the harness's sample sort (below), whose local
 *                 steps are arrayc functions called on each rank's keys
 *   edit_distance dist.ac's edit_distance of two distributed strings: a
 *                 recurrence, in wavefronts pipelined across ranks
 * Every rank makes its own block of the inputs (the data is a hash of the
 * global index, so no rank needs the whole input), the distributed arrays
 * are made once and stay distributed between calls, and each call is
 * timed alone between two MPI_Barriers: one warm-up call, then the median
 * of --repeat. Before anything is timed, arrayc's results and the
 * reference's are gathered to rank 0 and checked against a sequential
 * computation there (exact for the sort, a relative tolerance for floats).
 *
 * The sample sort (regular sampling), the same for both sides except the
 * three local steps:
 *   1. sort the local keys                 arrayc radix_sort | ref radix sort
 *   2. S regular samples per rank, MPI_Allgather, every rank sorts the R*S
 *      samples (qsort) and takes R-1 splitters          harness C and MPI
 *   3. bucket bounds by the splitters     arrayc bucket_bounds | ref binary search
 *   4. MPI_Alltoall of the counts, MPI_Alltoallv of the keys        harness
 *   5. merge the R received sorted runs   arrayc merge_runs | ref k-way merge
 * arrayc's three are compiled on a CPU runtime of the harness's own and
 * called by each rank on its keys (the distributed layer plays no part).
 *
 * Reported per benchmark (rank 0, one Markdown row, and with --tsv FILE a
 * tab-separated line for run.sh's report): the strategy the distributed
 * layer chose (ac_dist_function_strategy, unknown values as numbers), the
 * medians, the ratio reference / arrayc (above 1: arrayc faster), the
 * fraction of the memory bandwidth that a STREAM triad run on every rank at
 * once reaches at this rank count (bytes counted per element over the
 * time, over that bandwidth), and the bytes communicated per element:
 * arrayc's measured with ac_dist_runtime_bytes_sent summed over the ranks
 * (plus the harness's own MPI bytes for the sort), the reference's counted
 * by the reference, beside the minimum the algorithm needs.
 *
 *   arrayc-bench-dist [--quick] [--repeat N] [--sort-repeat N] [--only NAME[,NAME...]]
 *                     [--tsv FILE]
 *                     [--saxpy-log2 K] [--sum-log2 K] [--grid N] [--steps S]
 *                     [--sort-log2 K] [--stream-log2 K] [--edit-len N]
 *
 * Defaults: saxpy and sum 2^25 elements, a 4096 x 4096 grid, 10 steps,
 * 2^24 keys, strings of 8192 and 9216 letters, the triad over 2^25 doubles (three arrays, split
 * over the ranks), 7 repetitions (3 for the sort, whose calls take seconds).
 * --quick: tiny sizes, checks only (nothing timed): ctest's bench.dist.smoke.
 * The exit status is 1 when a check fails.
 */
#define _POSIX_C_SOURCE 200809L
#include "arrayc/arrayc.h"
#include "arrayc/dist.h"
#include "ref_dist.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef ARRAYC_BENCH_DIST_DIR
#define ARRAYC_BENCH_DIST_DIR "bench/dist"
#endif

/* Samples per rank for the sample sort's splitters. */
enum { SORT_SAMPLES = 64 };

typedef struct bench {
  ac_context *ctx;
  ac_dist_runtime *rt;
  ac_module *m;
  MPI_Comm comm; /* the harness's own messages (the runtime has a duplicate) */
  int me, size;
  bool quick;
  int repeat, sort_repeat;
  const char *only;
  FILE *tsv;
  double bandwidth; /* bytes per second, all ranks together */
  int failures;
} bench;

/* ---- helpers ---- */

static void die(bench *B, const char *what, ac_error *e) {
  fprintf(stderr, "arrayc-bench-dist: rank %d: %s: %s\n", B->me, what,
          e ? ac_error_text(e) : "failed");
  MPI_Abort(MPI_COMM_WORLD, 2);
}

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) {
    fprintf(stderr, "arrayc-bench-dist: out of memory (%zu bytes)\n", n);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  return p;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

/* The input data: a hash of the global index (splitmix64), so that each
 * rank makes its block alone and rank 0 can remake any element. */
static uint64_t hash(uint64_t i, uint64_t seed) {
  uint64_t z = i + seed * 0x9e3779b97f4a7c15ull + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static double unit(uint64_t i, uint64_t seed) { /* [0, 1) */
  return (double)(hash(i, seed) >> 11) / 9007199254740992.0;
}

static bool wanted(const bench *B, const char *name) {
  if (!B->only)
    return true;
  size_t n = strlen(name);
  for (const char *p = B->only; *p;) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len == n && strncmp(p, name, n) == 0)
      return true;
    p += len + (end != NULL);
  }
  return false;
}

/* A timed step: called between two barriers. */
typedef void (*step_fn)(bench *B, void *state);

/* One warm-up call, then the median of B->repeat calls, each timed
 * between barriers (so the time is the slowest rank's). */
static double time_median(bench *B, step_fn f, void *state) {
  f(B, state);
  double *t = xmalloc((size_t)B->repeat * sizeof *t);
  for (int k = 0; k < B->repeat; k++) {
    MPI_Barrier(B->comm);
    double t0 = MPI_Wtime();
    f(B, state);
    MPI_Barrier(B->comm);
    t[k] = MPI_Wtime() - t0;
  }
  qsort(t, (size_t)B->repeat, sizeof *t, cmp_double);
  double med = B->repeat % 2 ? t[B->repeat / 2] : 0.5 * (t[B->repeat / 2 - 1] + t[B->repeat / 2]);
  free(t);
  return med;
}

/* The sum over the ranks of a counter (every rank gets it). */
static uint64_t sum_ranks(bench *B, uint64_t x) {
  unsigned long long in = x, out = 0;
  MPI_Allreduce(&in, &out, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, B->comm);
  return out;
}

/* The strategy's name in buf; a strategy newer than this harness as its
 * number. */
static void strategy_name(ac_dist_strategy s, char *buf, size_t n) {
  switch ((int)s) {
  case AC_DIST_LOCAL:
    snprintf(buf, n, "local");
    break;
  case AC_DIST_GATHER:
    snprintf(buf, n, "gather");
    break;
  case AC_DIST_STAGED:
    snprintf(buf, n, "staged");
    break;
  default:
    snprintf(buf, n, "%d", (int)s);
    break;
  }
}

/* What one benchmark reports. Times in seconds, bytes per element. */
typedef struct result {
  const char *name;
  char size[48];
  char strategy[32];
  double ac, ref;                        /* medians (NAN with --quick) */
  double elems;                          /* global elements (cells, keys) */
  double counted;                        /* bytes moved per element, for "of bw" */
  double ac_bytes, ref_bytes, min_bytes; /* communicated per element */
  char check[96];
} result;

/* A benchmark of n = 2^log2n elements (quick_n with --quick): its result
 * record and size text. */
static result vector_result(bench *B, const char *name, int log2n, int64_t quick_n, double counted,
                            int64_t *n) {
  *n = B->quick ? quick_n : (int64_t)1 << log2n;
  result r = {.name = name, .elems = (double)*n, .counted = counted};
  snprintf(r.size, sizeof r.size, B->quick ? "n=%lld" : "n=2^%lld",
           B->quick ? (long long)*n : (long long)log2n);
  return r;
}

static void report(bench *B, const result *r) {
  if (B->me != 0)
    return;
  double ratio = r->ref / r->ac;
  double of_bw = r->counted * r->elems / r->ac / B->bandwidth;
  char times[64] = "        - |         - |     - |     -";
  if (!B->quick)
    snprintf(times, sizeof times, "%9.3f | %9.3f | %5.2f | %4.0f%%", 1e3 * r->ac, 1e3 * r->ref,
             ratio, 100 * of_bw);
  printf("| %-12s | %-11s | %d | %-8s | %s | %9.3g | %9.3g | %9.3g | %s |\n", r->name, r->size,
         B->size, r->strategy, times, r->ac_bytes, r->ref_bytes, r->min_bytes, r->check);
  fflush(stdout);
  if (B->tsv)
    fprintf(B->tsv, "%s\t%s\t%d\t%s\t%.6f\t%.6f\t%.4f\t%.6g\t%.6g\t%.6g\t%.3f\t%s\n", r->name,
            r->size, B->size, r->strategy, 1e3 * r->ac, 1e3 * r->ref, 100 * of_bw, r->ac_bytes,
            r->ref_bytes, r->min_bytes, B->bandwidth / 1e9, r->check);
}

/* Rank 0's verdict on a check, shared with every rank; counts failures. */
static bool agree_check(bench *B, bool ok, result *r, const char *what, const char *detail) {
  int v = ok;
  MPI_Bcast(&v, 1, MPI_INT, 0, B->comm);
  if (!v) {
    B->failures++;
    if (B->me == 0)
      fprintf(stderr, "arrayc-bench-dist: %s at %d ranks: %s FAILED: %s\n", r->name, B->size, what,
              detail);
    snprintf(r->check, sizeof r->check, "FAILED (%s)", what);
  }
  return v;
}

/* ---- the arrayc side ---- */

static ac_dist_function *function(bench *B, const char *name, result *r) {
  ac_dist_function *f = NULL;
  ac_error *e = NULL;
  if (ac_dist_function_create(B->rt, B->m, name, &f, &e) != AC_OK)
    die(B, name, e);
  strategy_name(ac_dist_function_strategy(f), r->strategy, sizeof r->strategy);
  return f;
}

static void free_block(void *p) {
  free(p);
}

/* A distributed array from a block this rank filled (malloc'd, handed
 * over): rows [lo, hi) of a rows x inner array (inner 0: rank 1). */
static ac_dist_array *dist_from(bench *B, ac_scalar t, int64_t rows, int64_t inner, void *data) {
  int64_t ext[2] = {rows, inner};
  ac_error *e = NULL;
  ac_array *a = ac_array_borrow(B->ctx, t, inner ? 2 : 1, ext, data, free_block, data, &e);
  if (!a)
    die(B, "array", e);
  ac_dist_array *d = NULL;
  if (ac_dist_array_from_block(B->rt, a, &d, &e) != AC_OK)
    die(B, "from_block", e);
  ac_array_release(a);
  return d;
}

static ac_dist_datum distributed(ac_dist_array *a) {
  return (ac_dist_datum){AC_DIST_DISTRIBUTED, {0}, a};
}

static ac_dist_datum scalar(ac_scalar t, double f, int64_t i) {
  ac_dist_datum d = {AC_DIST_SCALAR, {AC_DATUM_SCALAR, t, {0}, NULL}, NULL};
  if (t == AC_F32 || t == AC_F64)
    d.local.s.f = f;
  else
    d.local.s.i = i;
  return d;
}

/* The call the timed steps make: results released at once. */
typedef struct dcall {
  ac_dist_function *f;
  ac_dist_datum *args;
  size_t nargs;
  ac_dist_datum res; /* the last result, when kept */
  bool keep;
} dcall;

static void ac_step(bench *B, void *state) {
  dcall *c = state;
  ac_error *e = NULL;
  ac_dist_datum res;
  if (ac_dist_function_call(c->f, c->args, c->nargs, &res, 1, &e) != AC_OK)
    die(B, ac_function_name(ac_dist_function_local(c->f)), e);
  if (c->keep) {
    ac_dist_datum_release(&c->res);
    c->res = res;
  } else {
    ac_dist_datum_release(&res);
  }
}

/* Times c and measures the array bytes it sends per call (over the timed
 * calls, summed over the ranks). */
static double time_ac(bench *B, dcall *c, double *bytes_per_call) {
  c->keep = false;
  uint64_t before = ac_dist_runtime_bytes_sent(B->rt);
  double t = NAN;
  int calls = 1;
  if (B->quick) {
    ac_step(B, c);
  } else {
    t = time_median(B, ac_step, c);
    calls = B->repeat + 1; /* with time_median's warm-up */
  }
  *bytes_per_call = (double)sum_ranks(B, ac_dist_runtime_bytes_sent(B->rt) - before) / calls;
  return t;
}

/* The whole of a distributed result on rank 0 (NULL elsewhere). */
/* Times arrayc's call c and the reference's step: the medians in r->ac
 * and r->ref (with --quick the reference runs once, untimed), and the
 * bytes each sends per element and call (the reference step adds its own
 * to *ref_bytes). */
static void time_both(bench *B, result *r, dcall *c, step_fn ref, void *state,
                      uint64_t *ref_bytes) {
  double per_call;
  r->ac = time_ac(B, c, &per_call);
  r->ac_bytes = per_call / r->elems;
  *ref_bytes = 0;
  r->ref = B->quick ? NAN : time_median(B, ref, state);
  int ref_calls = B->quick ? 1 : B->repeat + 1;
  if (B->quick)
    ref(B, state);
  r->ref_bytes = (double)sum_ranks(B, *ref_bytes) / ref_calls / r->elems;
}

static ac_array *gather0(bench *B, ac_dist_array *a) {
  ac_array *full = NULL;
  ac_error *e = NULL;
  if (ac_dist_array_gather(B->rt, a, 0, &full, &e) != AC_OK)
    die(B, "gather", e);
  return full;
}

/* Rank 0 collects every rank's n local floats or doubles (elem bytes each). */
static void *gather_blocks(bench *B, const void *local, int64_t n, size_t elem, int64_t *total) {
  long long mine = n;
  long long *counts = xmalloc((size_t)B->size * sizeof *counts);
  MPI_Gather(&mine, 1, MPI_LONG_LONG, counts, 1, MPI_LONG_LONG, 0, B->comm);
  int *rc = xmalloc((size_t)B->size * sizeof *rc), *rd = xmalloc((size_t)B->size * sizeof *rd);
  int64_t sum = 0;
  if (B->me == 0)
    for (int r = 0; r < B->size; r++) {
      rc[r] = (int)(counts[r] * (long long)elem);
      rd[r] = (int)(sum * (int64_t)elem);
      sum += counts[r];
    }
  void *all = B->me == 0 ? xmalloc((size_t)sum * elem) : NULL;
  MPI_Gatherv(local, (int)(n * (int64_t)elem), MPI_BYTE, all, rc, rd, MPI_BYTE, 0, B->comm);
  free(counts);
  free(rc);
  free(rd);
  *total = sum;
  return all;
}

/* Largest |x - want| over the largest |want|, floats against doubles. */
static double rel_err_f32(const float *x, const double *want, int64_t n) {
  double err = 0, scale = 0;
  for (int64_t i = 0; i < n; i++) {
    err = fmax(err, fabs((double)x[i] - want[i]));
    scale = fmax(scale, fabs(want[i]));
  }
  return scale > 0 ? err / scale : err;
}

/* Rank 0 compares arrayc's and the reference's f32 results (got, ref_all)
 * with want (n values, computed in double) within tol, writes the check
 * column, and every rank agrees on the verdict. want is freed. */
static void check_f32(bench *B, result *r, const ac_array *got, const float *ref_all, double *want,
                      int64_t n, double tol) {
  bool ok = true;
  char detail[96] = "";
  if (B->me == 0) {
    double e1 = rel_err_f32(ac_array_data(got), want, n), e2 = rel_err_f32(ref_all, want, n);
    ok = ac_array_size(got) == n && e1 <= tol && e2 <= tol;
    snprintf(r->check, sizeof r->check, "ok (rel %.1e, ref %.1e)", e1, e2);
    snprintf(detail, sizeof detail, "relative error %.3g, reference's %.3g", e1, e2);
  }
  free(want);
  agree_check(B, ok, r, "result", detail);
}

static void partition(bench *B, int64_t n, int64_t *lo, int64_t *hi) {
  ac_dist_partition(n, B->size, B->me, lo, hi);
}

/* ---- STREAM triad at this rank count ---- */

static void measure_bandwidth(bench *B, int log2n) {
  int64_t n = ((int64_t)1 << log2n) / B->size; /* per rank: the total is fixed */
  double *a = xmalloc((size_t)n * 8), *b = xmalloc((size_t)n * 8), *c = xmalloc((size_t)n * 8);
  for (int64_t i = 0; i < n; i++)
    a[i] = 0, b[i] = 1, c[i] = 2;
  double best = INFINITY;
  for (int k = 0; k < (B->quick ? 2 : 10); k++) {
    MPI_Barrier(B->comm);
    double t0 = MPI_Wtime();
    refd_stream_triad(n, a, b, c);
    MPI_Barrier(B->comm);
    best = fmin(best, MPI_Wtime() - t0);
  }
  B->bandwidth = 24.0 * (double)n * B->size / best;
  free(a);
  free(b);
  free(c);
}

/* ---- saxpy ---- */

typedef struct saxpy_ref {
  int64_t n;
  const float *x, *y;
  float *out;
} saxpy_ref;

static void saxpy_ref_step(bench *B, void *state) {
  (void)B;
  saxpy_ref *s = state;
  refd_saxpy(s->n, 2.5f, s->x, s->y, s->out);
}

static void bench_saxpy(bench *B, int log2n) {
  int64_t n, lo, hi;
  result r = vector_result(B, "saxpy", log2n, 1003, 12, &n);
  partition(B, n, &lo, &hi);
  int64_t nl = hi - lo;
  float *x = xmalloc((size_t)nl * 4), *y = xmalloc((size_t)nl * 4);
  for (int64_t i = 0; i < nl; i++) {
    x[i] = (float)unit((uint64_t)(lo + i), 1);
    y[i] = (float)unit((uint64_t)(lo + i), 2);
  }
  float *rx = xmalloc((size_t)nl * 4), *ry = xmalloc((size_t)nl * 4),
        *rout = xmalloc((size_t)nl * 4);
  memcpy(rx, x, (size_t)nl * 4);
  memcpy(ry, y, (size_t)nl * 4);
  ac_dist_function *f = function(B, "saxpy", &r);
  ac_dist_datum args[3] = {scalar(AC_F32, 2.5, 0), distributed(dist_from(B, AC_F32, nl, 0, x)),
                           distributed(dist_from(B, AC_F32, nl, 0, y))};
  dcall c = {f, args, 3, {0}, true};
  ac_step(B, &c);
  saxpy_ref sr = {nl, rx, ry, rout};
  saxpy_ref_step(B, &sr);

  /* check: a * x + y in double on rank 0 */
  ac_array *got = gather0(B, c.res.dist);
  int64_t total;
  float *ref_all = gather_blocks(B, rout, nl, 4, &total);
  double *want = NULL;
  if (B->me == 0) {
    want = xmalloc((size_t)n * 8);
    for (int64_t i = 0; i < n; i++)
      want[i] = 2.5 * (double)(float)unit((uint64_t)i, 1) + (double)(float)unit((uint64_t)i, 2);
  }
  check_f32(B, &r, got, ref_all, want, n, 1e-6);
  ac_array_release(got);
  free(ref_all);
  ac_dist_datum_release(&c.res);

  double per_call;
  r.ac = time_ac(B, &c, &per_call);
  r.ac_bytes = per_call / (double)n;
  r.ref = B->quick ? NAN : time_median(B, saxpy_ref_step, &sr);
  r.ref_bytes = 0; /* the reference sends nothing */
  r.min_bytes = 0;
  report(B, &r);
  for (int i = 1; i < 3; i++)
    ac_dist_datum_release(&args[i]);
  ac_dist_function_destroy(f);
  free(rx);
  free(ry);
  free(rout);
}

/* ---- sum ---- */

typedef struct sum_ref {
  int64_t n;
  const double *x;
  double out;
  uint64_t bytes;
} sum_ref;

static void sum_ref_step(bench *B, void *state) {
  sum_ref *s = state;
  s->out = refd_sum(s->n, s->x, B->comm, &s->bytes);
}

static void bench_sum(bench *B, int log2n) {
  int64_t n, lo, hi;
  result r = vector_result(B, "sum", log2n, 1001, 8, &n);
  partition(B, n, &lo, &hi);
  int64_t nl = hi - lo;
  double *x = xmalloc((size_t)nl * 8), *rx = xmalloc((size_t)nl * 8);
  for (int64_t i = 0; i < nl; i++)
    x[i] = rx[i] = unit((uint64_t)(lo + i), 3);
  ac_dist_function *f = function(B, "sum", &r);
  ac_dist_datum args[1] = {distributed(dist_from(B, AC_F64, nl, 0, x))};
  dcall c = {f, args, 1, {0}, true};
  ac_step(B, &c);
  sum_ref s = {nl, rx, 0, 0};
  sum_ref_step(B, &s);

  /* check: a sequential sum on rank 0 in long double */
  long double want = 0;
  for (int64_t i = 0; B->me == 0 && i < n; i++)
    want += unit((uint64_t)i, 3);
  double got = c.res.local.s.f;
  double e1 = fabs(got - (double)want) / fabs((double)want),
         e2 = fabs(s.out - (double)want) / fabs((double)want);
  char detail[128];
  snprintf(r.check, sizeof r.check, "ok (rel %.1e, ref %.1e)", e1, e2);
  snprintf(detail, sizeof detail, "%.17g and the reference's %.17g, want %.17g", got, s.out,
           (double)want);
  agree_check(B, e1 <= 1e-9 && e2 <= 1e-9, &r, "result", detail);

  time_both(B, &r, &c, sum_ref_step, &s, &s.bytes);
  r.min_bytes = 8.0 * (B->size - 1) / (double)n; /* R - 1 partial sums */
  report(B, &r);
  ac_dist_datum_release(&args[0]);
  ac_dist_function_destroy(f);
  free(rx);
}

/* ---- Jacobi ---- */

typedef struct jacobi_ref {
  int64_t steps;
  refd_grid in, a, b; /* the input (unchanged by a call), two buffers */
  const refd_grid *out;
  uint64_t bytes;
} jacobi_ref;

static void jacobi_ref_step(bench *B, void *state) {
  jacobi_ref *j = state;
  j->out = refd_jacobi(j->steps, &j->in, &j->a, &j->b, B->comm, &j->bytes);
}

/* `steps` Jacobi steps of the whole grid on rank 0, written apart from the
 * reference: every neighbour read checks the grid's bounds (0 outside), the
 * sum in the program's order (north, south, west, east). */
static float *jacobi_seq(int64_t rows, int64_t cols, int64_t steps) {
  float *g = xmalloc((size_t)(rows * cols) * 4), *h = xmalloc((size_t)(rows * cols) * 4);
  for (int64_t i = 0; i < rows * cols; i++)
    g[i] = (float)unit((uint64_t)i, 4);
  for (int64_t k = 0; k < steps; k++) {
    for (int64_t r = 0; r < rows; r++)
      for (int64_t c = 0; c < cols; c++) {
        float n = r > 0 ? g[(r - 1) * cols + c] : 0.0f,
              s = r < rows - 1 ? g[(r + 1) * cols + c] : 0.0f,
              w = c > 0 ? g[r * cols + c - 1] : 0.0f, e = c < cols - 1 ? g[r * cols + c + 1] : 0.0f;
        h[r * cols + c] = 0.25f * (n + s + w + e);
      }
    float *t = g;
    g = h;
    h = t;
  }
  free(h);
  return g;
}

static void bench_jacobi(bench *B, int64_t side, int64_t steps) {
  int64_t rows = B->quick ? 37 : side, cols = B->quick ? 29 : side, lo, hi;
  partition(B, rows, &lo, &hi);
  if (rows < B->size) {
    if (B->me == 0)
      fprintf(stderr, "arrayc-bench-dist: jacobi needs at least one row per rank\n");
    B->failures++;
    return;
  }
  int64_t nl = hi - lo;
  result r = {.name = steps == 1 ? "jacobi" : "jacobi_steps",
              .elems = (double)(rows * cols),
              .counted = 8.0 * (double)steps};
  snprintf(r.size, sizeof r.size, steps == 1 ? "%lldx%lld" : "%lldx%lld x%lld", (long long)rows,
           (long long)cols, (long long)steps);
  float *g = xmalloc((size_t)(nl * cols) * 4);
  for (int64_t i = 0; i < nl * cols; i++)
    g[i] = (float)unit((uint64_t)(lo * cols + i), 4);
  jacobi_ref j = {steps, {nl, cols, NULL}, {nl, cols, NULL}, {nl, cols, NULL}, NULL, 0};
  size_t gb = (size_t)((nl + 2) * cols) * 4;
  j.a.cells = xmalloc(gb), j.b.cells = xmalloc(gb), j.in.cells = xmalloc(gb);
  memset(j.a.cells, 0, gb);
  memset(j.b.cells, 0, gb);
  memset(j.in.cells, 0, gb);
  memcpy(j.in.cells + cols, g, (size_t)(nl * cols) * 4);

  ac_dist_function *f = function(B, steps == 1 ? "jacobi" : "jacobi_steps", &r);
  ac_dist_datum args[2] = {distributed(dist_from(B, AC_F32, nl, cols, g)),
                           scalar(AC_I32, 0, steps)};
  dcall c = {f, args, steps == 1 ? 1 : 2, {0}, true};
  ac_step(B, &c);
  jacobi_ref_step(B, &j);
  const float *ref_out = j.out->cells + cols;

  ac_array *got = gather0(B, c.res.dist);
  int64_t total;
  float *ref_all = gather_blocks(B, ref_out, nl * cols, 4, &total);
  double *wd = NULL;
  if (B->me == 0) {
    float *want = jacobi_seq(rows, cols, steps);
    wd = xmalloc((size_t)(rows * cols) * 8);
    for (int64_t i = 0; i < rows * cols; i++)
      wd[i] = want[i];
    free(want);
  }
  check_f32(B, &r, got, ref_all, wd, rows * cols, 1e-5);
  ac_array_release(got);
  free(ref_all);
  ac_dist_datum_release(&c.res);

  time_both(B, &r, &c, jacobi_ref_step, &j, &j.bytes);
  /* two halo rows per internal block boundary per step */
  r.min_bytes = 2.0 * (B->size - 1) * (double)cols * 4 * (double)steps / r.elems;
  report(B, &r);
  ac_dist_datum_release(&args[0]);
  ac_dist_function_destroy(f);
  free(j.a.cells);
  free(j.b.cells);
  free(j.in.cells);
}

/* ---- edit distance: a recurrence in pipelined wavefronts ---- */

typedef struct edit_ref {
  int64_t n, m;
  const uint8_t *s, *t;
  int tiles;
  int32_t out;
  uint64_t bytes;
} edit_ref;

static void edit_ref_step(bench *B, void *state) {
  edit_ref *e = state;
  e->out = refd_edit_distance(e->n, e->s, e->m, e->t, e->tiles, B->comm, &e->bytes);
}

/* The edit distance on rank 0, two rows at a time, apart from both. */
static int32_t edit_seq(int64_t n, const uint8_t *s, int64_t m, const uint8_t *t) {
  int32_t *a = xmalloc((size_t)(m + 1) * 4), *b = xmalloc((size_t)(m + 1) * 4);
  for (int64_t j = 0; j <= m; j++)
    a[j] = (int32_t)j;
  for (int64_t i = 1; i <= n; i++) {
    b[0] = (int32_t)i;
    for (int64_t j = 1; j <= m; j++) {
      int32_t v = a[j] + 1 < b[j - 1] + 1 ? a[j] + 1 : b[j - 1] + 1;
      int32_t dg = a[j - 1] + (s[i - 1] != t[j - 1]);
      b[j] = v < dg ? v : dg;
    }
    int32_t *x = a;
    a = b;
    b = x;
  }
  int32_t d = a[m];
  free(a);
  free(b);
  return d;
}

/* This rank's block (the partition rule's) of a string of n letters from
 * {A, C, G, T}, made from the global index. */
static uint8_t *letters(bench *B, int64_t n, uint64_t seed, int64_t *rows, bool whole) {
  int64_t lo = 0, hi = n;
  if (!whole)
    partition(B, n, &lo, &hi);
  uint8_t *x = xmalloc((size_t)(hi - lo ? hi - lo : 1));
  for (int64_t i = lo; i < hi; i++)
    x[i - lo] = (uint8_t)"ACGT"[hash((uint64_t)i, seed) % 4];
  *rows = hi - lo;
  return x;
}

static void bench_edit(bench *B, int64_t len) {
  int64_t n = B->quick ? 61 : len, m = B->quick ? 47 : len + len / 8, ns, nt;
  result r = {.name = "edit_distance", .elems = (double)((n + 1) * (m + 1)), .counted = 0};
  snprintf(r.size, sizeof r.size, "%lldx%lld", (long long)n + 1, (long long)m + 1);
  ac_dist_function *f = function(B, "edit_distance", &r);
  uint8_t *sb = letters(B, n, 7, &ns, false), *tb = letters(B, m, 8, &nt, false);
  ac_dist_datum args[2] = {distributed(dist_from(B, AC_U8, ns, 0, sb)),
                           distributed(dist_from(B, AC_U8, nt, 0, tb))};
  dcall c = {f, args, 2, {0}, true};
  ac_step(B, &c);
  edit_ref e = {n, m, NULL, NULL, 4 * B->size, 0, 0};
  uint8_t *s = letters(B, n, 7, &ns, true), *t = letters(B, m, 8, &nt, true);
  e.s = s;
  e.t = t;
  edit_ref_step(B, &e);

  int32_t want = B->me == 0 ? edit_seq(n, s, m, t) : 0, got = (int32_t)c.res.local.s.i;
  char detail[128];
  snprintf(r.check, sizeof r.check, "ok (%d)", (int)want);
  snprintf(detail, sizeof detail, "%d and the reference's %d, want %d", (int)got, (int)e.out,
           (int)want);
  agree_check(B, got == want && e.out == want, &r, "result", detail);

  time_both(B, &r, &c, edit_ref_step, &e, &e.bytes);
  /* one row of the table per internal block boundary */
  r.min_bytes = 4.0 * (B->size - 1) * (double)m / r.elems;
  if (!B->quick && B->me == 0)
    snprintf(r.check, sizeof r.check, "ok (%d; %.2f Gcell/s)", (int)want, r.elems / r.ac / 1e9);
  report(B, &r);
  ac_dist_datum_release(&args[0]);
  ac_dist_datum_release(&args[1]);
  ac_dist_function_destroy(f);
  free(s);
  free(t);
}

/* ---- sample sort ---- */

/* One side's local steps and buffers. */
typedef struct sorter {
  bool arrayc;
  /* arrayc */
  ac_function *sort, *bounds, *merge;
  ac_array *keys; /* this rank's input keys */
  /* reference */
  uint32_t *in, *work, *tmp; /* input, the sorted copy, scratch */
  int64_t nl;
  /* both */
  uint32_t *recv; /* received runs, grown to fit */
  int64_t recv_cap;
  uint64_t bytes; /* the harness's MPI bytes to other ranks */
  ac_array *out;  /* arrayc's result */
  uint32_t *rout; /* the reference's result */
  int64_t nout;
} sorter;

static ac_array *call1(bench *B, ac_function *f, ac_datum *args, size_t nargs) {
  ac_datum res;
  ac_error *e = NULL;
  if (ac_function_call(f, args, nargs, &res, 1, &e) != AC_OK)
    die(B, ac_function_name(f), e);
  return res.array;
}

static ac_datum arr_datum(ac_array *a) {
  return (ac_datum){AC_DATUM_ARRAY, ac_array_type(a), {0}, a};
}

static ac_array *borrow1(bench *B, ac_scalar t, int64_t n, void *data) {
  ac_error *e = NULL;
  ac_array *a = ac_array_borrow(B->ctx, t, 1, &n, data, NULL, NULL, &e);
  if (!a)
    die(B, "array", e);
  return a;
}

static void sort_step(bench *B, void *state) {
  sorter *s = state;
  int R = B->size;
  /* 1. the local sort */
  ac_array *sorted = NULL;
  const uint32_t *keys;
  int64_t n = s->nl;
  if (s->arrayc) {
    ac_datum a = arr_datum(s->keys);
    sorted = call1(B, s->sort, &a, 1);
    keys = ac_array_data(sorted);
  } else {
    memcpy(s->work, s->in, (size_t)n * 4);
    refd_radix_sort(n, s->work, s->tmp);
    keys = s->work;
  }
  /* 2. regular samples, splitters */
  uint32_t samples[SORT_SAMPLES], *all = xmalloc((size_t)R * SORT_SAMPLES * 4);
  for (int k = 0; k < SORT_SAMPLES; k++)
    samples[k] = n ? keys[(int64_t)k * n / SORT_SAMPLES] : UINT32_MAX;
  MPI_Allgather(samples, SORT_SAMPLES, MPI_UINT32_T, all, SORT_SAMPLES, MPI_UINT32_T, B->comm);
  s->bytes += (uint64_t)(R - 1) * SORT_SAMPLES * 4;
  qsort(all, (size_t)R * SORT_SAMPLES, 4, cmp_u32);
  uint32_t splitters[64];
  for (int j = 0; j < R - 1; j++)
    splitters[j] = all[(int64_t)(j + 1) * SORT_SAMPLES];
  free(all);
  /* 3. the bucket bounds */
  int64_t bounds[65];
  bounds[0] = 0;
  bounds[R] = n;
  if (s->arrayc) {
    ac_array *sp = borrow1(B, AC_U32, R - 1, splitters);
    ac_datum a[2] = {arr_datum(sorted), arr_datum(sp)};
    ac_array *b = call1(B, s->bounds, a, 2);
    memcpy(bounds + 1, ac_array_data(b), (size_t)(R - 1) * 8);
    ac_array_release(b);
    ac_array_release(sp);
  } else {
    refd_bucket_bounds(n, keys, R - 1, splitters, bounds + 1);
  }
  /* 4. the exchange */
  int sc[64], sd[64], rc[64], rd[64];
  for (int j = 0; j < R; j++) {
    sc[j] = (int)(bounds[j + 1] - bounds[j]);
    sd[j] = (int)bounds[j];
  }
  MPI_Alltoall(sc, 1, MPI_INT, rc, 1, MPI_INT, B->comm);
  s->bytes += (uint64_t)(R - 1) * sizeof(int);
  int64_t got = 0;
  int64_t off[65];
  for (int j = 0; j < R; j++) {
    rd[j] = (int)got;
    off[j] = got;
    got += rc[j];
    if (j != B->me)
      s->bytes += (uint64_t)sc[j] * 4;
  }
  off[R] = got;
  if (got > s->recv_cap) {
    free(s->recv);
    s->recv = xmalloc((size_t)got * 4);
    s->recv_cap = got;
  }
  MPI_Alltoallv(keys, sc, sd, MPI_UINT32_T, s->recv, rc, rd, MPI_UINT32_T, B->comm);
  /* 5. the merge of the received runs */
  s->nout = got;
  if (s->arrayc) {
    ac_array_release(sorted);
    ac_array *c = borrow1(B, AC_U32, got, s->recv);
    ac_array *o = borrow1(B, AC_I64, R + 1, off);
    ac_datum a[2] = {arr_datum(c), arr_datum(o)};
    ac_array_release(s->out);
    s->out = call1(B, s->merge, a, 2);
    ac_array_release(c);
    ac_array_release(o);
  } else {
    refd_merge_runs(R, off, s->recv, s->rout);
  }
}

/* Checks one side's sorted blocks against the whole input sorted by qsort. */
static bool sort_check(bench *B, sorter *s, const uint32_t *want, int64_t n, char *detail,
                       size_t dn) {
  const uint32_t *mine = s->arrayc ? ac_array_data(s->out) : s->rout;
  int64_t total;
  uint32_t *all = gather_blocks(B, mine, s->nout, 4, &total);
  bool ok = true;
  if (B->me == 0) {
    ok = total == n && (n == 0 || memcmp(all, want, (size_t)n * 4) == 0);
    if (!ok)
      snprintf(detail, dn, "%s: %lld keys back of %lld, or out of order",
               s->arrayc ? "arrayc" : "reference", (long long)total, (long long)n);
  }
  free(all);
  return ok;
}

/* The sample sort's local steps are compiled on a CPU runtime of the
 * harness's own, not taken from distributed functions: a function the
 * distributed layer stages step by step need not have a compiled local
 * function (ac_dist_function_local is then its signature). Each rank
 * calls them on its own keys. */
static ac_function *local_fn(bench *B, ac_runtime *rt, const char *name) {
  ac_function *f = NULL;
  ac_error *e = NULL;
  if (ac_runtime_compile(rt, B->m, name, &f, &e) != AC_OK)
    die(B, name, e);
  return f;
}

/* Key i: 32 random bits; with --quick one of 997 values spread over the
 * range, so that equal keys meet in the merge. */
static uint32_t sort_key(const bench *B, int64_t i) {
  uint32_t k = (uint32_t)hash((uint64_t)i, 5);
  return B->quick ? k % 997 * 4307717u : k;
}

static void bench_sort(bench *B, int log2n) {
  int R = B->size;
  int64_t n, lo, hi;
  result r = vector_result(B, "sample_sort", log2n, 5003, 8, &n);
  if (R > 64 || n / R > INT32_MAX / 2) {
    if (B->me == 0)
      fprintf(stderr, "arrayc-bench-dist: sample_sort takes at most 64 ranks and 2^30 keys each\n");
    B->failures++;
    return;
  }
  partition(B, n, &lo, &hi);
  int64_t nl = hi - lo;
  uint32_t *keys = xmalloc((size_t)nl * 4);
  for (int64_t i = 0; i < nl; i++)
    keys[i] = sort_key(B, lo + i);
  ac_runtime *lrt = NULL;
  ac_error *e = NULL;
  if (ac_runtime_create(B->ctx, AC_BACKEND_CPU, &lrt, &e) != AC_OK)
    die(B, "runtime", e);
  sorter ac = {.arrayc = true, .nl = nl};
  ac.sort = local_fn(B, lrt, "radix_sort");
  ac.bounds = local_fn(B, lrt, "bucket_bounds");
  ac.merge = local_fn(B, lrt, "merge_runs");
  snprintf(r.strategy, sizeof r.strategy, "local calls");
  ac.keys = borrow1(B, AC_U32, nl, keys);
  sorter rf = {.arrayc = false, .nl = nl};
  rf.in = keys;
  rf.work = xmalloc((size_t)nl * 4);
  rf.tmp = xmalloc((size_t)nl * 4);
  /* the merged block: at most every key */
  rf.rout = xmalloc((size_t)n * 4);

  sort_step(B, &ac);
  sort_step(B, &rf);
  uint32_t *want = NULL;
  if (B->me == 0) {
    want = xmalloc((size_t)n * 4);
    for (int64_t i = 0; i < n; i++)
      want[i] = sort_key(B, i);
    qsort(want, (size_t)n, 4, cmp_u32);
  }
  char detail[96] = "";
  bool ok = sort_check(B, &ac, want, n, detail, sizeof detail);
  ok = sort_check(B, &rf, want, n, detail, sizeof detail) && ok;
  free(want);
  snprintf(r.check, sizeof r.check, "exact");
  agree_check(B, ok, &r, "sorted keys", detail);

  ac.bytes = rf.bytes = 0;
  int calls = 1;
  if (B->quick) {
    sort_step(B, &ac);
    sort_step(B, &rf);
    r.ac = r.ref = NAN;
  } else {
    int repeat = B->repeat;
    B->repeat = B->sort_repeat; /* seconds per call on one rank */
    r.ac = time_median(B, sort_step, &ac);
    r.ref = time_median(B, sort_step, &rf);
    calls = B->repeat + 1;
    B->repeat = repeat;
  }
  r.ac_bytes = (double)sum_ranks(B, ac.bytes) / calls / (double)n;
  r.ref_bytes = (double)sum_ranks(B, rf.bytes) / calls / (double)n;
  /* (R-1)/R of the keys, plus every rank's samples to every other */
  r.min_bytes = 4.0 * (R - 1) / R + (double)R * (R - 1) * SORT_SAMPLES * 4 / (double)n;
  report(B, &r);
  ac_array_release(ac.out);
  ac_array_release(ac.keys);
  ac_function_destroy(ac.sort);
  ac_function_destroy(ac.bounds);
  ac_function_destroy(ac.merge);
  ac_runtime_destroy(lrt);
  free(ac.recv);
  free(rf.recv);
  free(rf.work);
  free(rf.tmp);
  free(rf.rout);
  free(keys);
}

/* ---- main ---- */

static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = xmalloc((size_t)n + 1);
  size_t got = fread(buf, 1, (size_t)n, f);
  fclose(f);
  buf[got] = 0;
  *len = got;
  return buf;
}

static int arg_int(int argc, char **argv, int *i) {
  if (*i + 1 >= argc) {
    fprintf(stderr, "arrayc-bench-dist: %s needs a number\n", argv[*i]);
    exit(2);
  }
  return atoi(argv[++*i]);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  bench B = {.repeat = 7, .sort_repeat = 3, .comm = MPI_COMM_WORLD};
  MPI_Comm_rank(MPI_COMM_WORLD, &B.me);
  MPI_Comm_size(MPI_COMM_WORLD, &B.size);
  int saxpy_log2 = 25, sum_log2 = 25, sort_log2 = 24, stream_log2 = 25;
  int64_t grid = 4096, steps = 10, edit_len = 8192;
  const char *tsv = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--quick"))
      B.quick = true;
    else if (!strcmp(a, "--repeat"))
      B.repeat = arg_int(argc, argv, &i);
    else if (!strcmp(a, "--sort-repeat"))
      B.sort_repeat = arg_int(argc, argv, &i);
    else if (!strcmp(a, "--saxpy-log2"))
      saxpy_log2 = arg_int(argc, argv, &i);
    else if (!strcmp(a, "--sum-log2"))
      sum_log2 = arg_int(argc, argv, &i);
    else if (!strcmp(a, "--sort-log2"))
      sort_log2 = arg_int(argc, argv, &i);
    else if (!strcmp(a, "--stream-log2"))
      stream_log2 = arg_int(argc, argv, &i);
    else if (!strcmp(a, "--grid"))
      grid = arg_int(argc, argv, &i);
    else if (!strcmp(a, "--edit-len"))
      edit_len = arg_int(argc, argv, &i);
    else if (!strcmp(a, "--steps"))
      steps = arg_int(argc, argv, &i);
    else if (!strcmp(a, "--only") && i + 1 < argc)
      B.only = argv[++i];
    else if (!strcmp(a, "--tsv") && i + 1 < argc)
      tsv = argv[++i];
    else {
      if (B.me == 0)
        fprintf(
            stderr,
            "usage: arrayc-bench-dist [--quick] [--repeat N] [--sort-repeat N] [--only NAME,..]\n"
            "         [--tsv FILE] [--saxpy-log2 K] [--sum-log2 K] [--grid N] [--steps S]\n"
            "         [--sort-log2 K] [--stream-log2 K] [--edit-len N]\n");
      MPI_Finalize();
      return 2;
    }
  }
  if (B.repeat < 1 || B.sort_repeat < 1 || grid < 1 || steps < 2 || edit_len < 1) {
    if (B.me == 0)
      fprintf(stderr, "arrayc-bench-dist: --repeat, --sort-repeat, --grid and --edit-len take "
                      "N >= 1, --steps S >= 2\n");
    MPI_Finalize();
    return 2;
  }
  /* the checks gather each result whole to rank 0, counted in bytes by an
   * int (MPI_Gatherv) */
  if (saxpy_log2 < 0 || saxpy_log2 > 28 || sum_log2 < 0 || sum_log2 > 27 || sort_log2 < 0 ||
      sort_log2 > 28 || grid > 23170 || stream_log2 < 4 || stream_log2 > 34) {
    if (B.me == 0)
      fprintf(stderr, "arrayc-bench-dist: sizes up to --saxpy-log2 28, --sum-log2 27, "
                      "--sort-log2 28, --grid 23170 (a result checked on rank 0 is under 2 GB), "
                      "--stream-log2 4..34\n");
    MPI_Finalize();
    return 2;
  }
  if (B.quick)
    stream_log2 = 16, steps = 3;
  if (tsv && B.me == 0 && !(B.tsv = fopen(tsv, "a"))) {
    fprintf(stderr, "arrayc-bench-dist: cannot write %s\n", tsv);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }

  ac_error *e = NULL;
  B.ctx = ac_context_create();
  if (ac_dist_runtime_create(B.ctx, MPI_COMM_WORLD, AC_BACKEND_CPU, &B.rt, &e) != AC_OK)
    die(&B, "runtime", e);
  size_t len = 0;
  const char *path = ARRAYC_BENCH_DIST_DIR "/dist.ac";
  char *text = read_file(path, &len);
  if (!text) {
    fprintf(stderr, "arrayc-bench-dist: cannot read %s\n", path);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  if (ac_module_parse(B.ctx, path, text, len, &B.m, &e) != AC_OK ||
      ac_module_verify(B.m, &e) != AC_OK)
    die(&B, path, e);
  free(text);

  measure_bandwidth(&B, stream_log2);
  if (B.me == 0) {
    printf("ranks %d; memory bandwidth at %d ranks (STREAM triad on every rank, best of %d): "
           "%.1f GB/s; local backend %s, %s\n\n",
           B.size, B.size, B.quick ? 2 : 10, B.bandwidth / 1e9, "cpu",
           B.quick ? "--quick: checks only, nothing timed" : "medians");
    printf("| benchmark    | size        | R | strategy |     ac ms |    ref ms | ratio | of bw "
           "| ac B/el    | ref B/el   | min B/el   | check |\n");
    printf("|--------------|-------------|---|----------|-----------|-----------|-------|------"
           "-|-----------|-----------|-----------|-------|\n");
    fflush(stdout);
  }
  if (wanted(&B, "saxpy"))
    bench_saxpy(&B, saxpy_log2);
  if (wanted(&B, "sum"))
    bench_sum(&B, sum_log2);
  if (wanted(&B, "jacobi"))
    bench_jacobi(&B, grid, 1);
  if (wanted(&B, "jacobi_steps"))
    bench_jacobi(&B, grid, steps);
  if (wanted(&B, "sample_sort"))
    bench_sort(&B, sort_log2);
  if (wanted(&B, "edit_distance"))
    bench_edit(&B, edit_len);

  int failures = B.failures;
  if (B.tsv)
    fclose(B.tsv);
  ac_module_destroy(B.m);
  ac_dist_runtime_destroy(B.rt);
  ac_context_destroy(B.ctx);
  if (B.me == 0 && failures)
    fprintf(stderr, "arrayc-bench-dist: %d check(s) failed\n", failures);
  MPI_Finalize();
  return failures ? 1 : 0;
}
