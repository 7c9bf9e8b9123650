/* bench/bench.c: arrayc-bench, the CPU benchmark harness, and a model of
 * the GPU suite's kernels on the SIMT emulator (--gpu-model, below).
 *
 * For each benchmark it builds the input data once, then in the same
 * process times the hand-written reference (bench/ref/ref.c, gcc -O3
 * -march=native -fopenmp) and the arrayc program (bench/programs/NAME.ac,
 * compiled once through the public API) on the same data, one after the
 * other, and reports medians, the ratio reference/arrayc (above 1: arrayc
 * is faster) and the bandwidth each achieves as a fraction of the memory
 * bandwidth measured at start-up with a STREAM triad. arrayc's results are
 * checked against the reference's before anything is timed.
 *
 * Every program is compiled on one runtime of the chosen backend with the
 * runtime's default pass pipeline (O2), except the unfused RMSE row, which
 * leaves fuse out (docs/passes.md); the line after the table gives what
 * fusion gains there.
 *
 * arrayc's call includes allocating its result arrays (the language is
 * functional); the references write into buffers allocated once, as C
 * code usually does. Both read inputs that are already in memory.
 *
 *   arrayc-bench [--backend=NAME] [--repeat N] [--log2 K] [--only NAME[,NAME...]]
 *   arrayc-bench --gpu-model [--log2 K] [--only NAME[,NAME...]]
 *
 * Prints one Markdown table row per benchmark (two for rmse) plus the
 * compile latency of Black-Scholes (source text to callable code, in
 * process).
 *
 * --gpu-model times nothing. It compiles the GPU suite's programs
 * (bench/gpu/benches.cu: the same files, functions, arguments and pass
 * pipelines, with this file's data generators) on one SIMT-emulator
 * runtime with profiling on (runtime.h, "profiling GPU kernels without a
 * GPU"), calls each once on an H100-shaped emulated device (256 threads per
 * block, 264 resident blocks: 132 SMs x 2, unless ARRAYC_SIMT_BLOCK or
 * ARRAYC_SIMT_GRID say otherwise), checks the results as the CPU suite
 * does, and prints one row per kernel of what Nsight Compute would report:
 * sectors per request, bytes moved over the minimum, bank conflicts, active
 * lanes. The emulator runs some 10-50 million thread instructions a second,
 * so sizes are 2^20 elements by default rather than the GPU suite's 2^26
 * (each benchmark then takes at most a few seconds on two cores); the
 * counts are per kernel over the one call, and the ratios hardly depend on
 * the size once the grid is full.
 */
#define _POSIX_C_SOURCE 200809L /* setenv, clock_gettime */
#include "arrayc/arrayc.h"
#include "ref/ref.h"

#include "api/function_impl.h" /* api_emit_ptx: compile latency to PTX */
#include "target/nvptx.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef ARRAYC_BENCH_DIR
#define ARRAYC_BENCH_DIR "bench"
#endif

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void die(const char *what, ac_error *e) {
  fprintf(stderr, "arrayc-bench: %s: %s\n", what, e ? ac_error_message(e) : "failed");
  if (e && ac_error_line(e))
    fprintf(stderr, "  at %s:%u:%u\n", ac_error_file(e), ac_error_line(e), ac_error_column(e));
  exit(1);
}

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) {
    fprintf(stderr, "arrayc-bench: out of memory (%zu bytes)\n", n);
    exit(1);
  }
  return p;
}

/* Deterministic pseudo-random numbers (xorshift64*), so every run and the
 * reference see the same data. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) {
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 0x2545f4914f6cdd1dull;
}
static float rndf(float lo, float hi) {
  return lo + (hi - lo) * (float)((double)(rnd() >> 11) / 9007199254740992.0);
}

/* ---- the arrayc side ---- */
typedef struct bench_ctx {
  ac_context *ctx;
  ac_runtime *rt;           /* every program is compiled on it */
  char default_passes[256]; /* rt's pipeline as created (O2) */
  ac_backend backend;
  int repeat;
  double bandwidth;    /* bytes per second, measured */
  double rmse_time[2]; /* arrayc's medians, fused and unfused, seconds (NAN: not run) */
  bool gpu_model;      /* --gpu-model: profile the kernels on the emulator, time nothing */
} bench_ctx;

static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "arrayc-bench: cannot open %s\n", path);
    exit(1);
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = xmalloc((size_t)n + 1);
  if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
    fprintf(stderr, "arrayc-bench: cannot read %s\n", path);
    exit(1);
  }
  fclose(f);
  buf[n] = 0;
  *len = (size_t)n;
  return buf;
}

/* Parses and verifies programs/FILE.ac. */
static ac_module *load(bench_ctx *B, const char *file) {
  char path[512];
  snprintf(path, sizeof path, "%s/programs/%s.ac", ARRAYC_BENCH_DIR, file);
  size_t len;
  char *text = read_file(path, &len);
  ac_error *e = NULL;
  ac_module *m = NULL;
  if (ac_module_parse(B->ctx, path, text, len, &m, &e) != AC_OK)
    die(path, e);
  if (ac_module_verify(m, &e) != AC_OK)
    die(path, e);
  free(text);
  return m;
}

/* Compiles function FN of m on the harness's runtime with pipeline
 * `passes` (NULL: the runtime's default). */
static ac_function *compile_fn(bench_ctx *B, ac_module *m, const char *fn, const char *passes) {
  ac_error *e = NULL;
  if (ac_runtime_set_passes(B->rt, passes ? passes : B->default_passes, &e) != AC_OK)
    die("passes", e);
  ac_function *f = NULL;
  if (ac_runtime_compile(B->rt, m, fn, &f, &e) != AC_OK)
    die(fn, e);
  return f;
}

/* Program NAME (programs/NAME.ac, function NAME) with the default
 * pipeline; returns the function and its module (through *mod). */
static ac_function *compile(bench_ctx *B, const char *name, ac_module **mod) {
  *mod = load(B, name);
  return compile_fn(B, *mod, name, NULL);
}

static ac_datum arr(bench_ctx *B, ac_scalar t, unsigned rank, const int64_t *ext, const void *d) {
  ac_error *e = NULL;
  ac_array *a = ac_array_create(B->ctx, t, rank, ext, d, &e);
  if (!a)
    die("array", e);
  ac_datum v = {.kind = AC_DATUM_ARRAY, .type = t, .array = a};
  return v;
}

static ac_datum f32s(float x) {
  ac_datum v = {.kind = AC_DATUM_SCALAR, .type = AC_F32};
  v.s.f = x;
  return v;
}

static void call(ac_function *f, const ac_datum *args, size_t nargs, ac_datum *res, size_t nres) {
  ac_error *e = NULL;
  if (ac_function_call(f, args, nargs, res, nres, &e) != AC_OK)
    die("call", e);
}

static void release_all(ac_datum *d, size_t n) {
  for (size_t i = 0; i < n; i++)
    ac_datum_release(&d[i]);
}

/* Largest relative difference between two float vectors, scaled by the
 * larger magnitude (or 1). */
static double max_rel_diff(const float *a, const float *b, int64_t n) {
  double worst = 0;
  for (int64_t i = 0; i < n; i++) {
    double x = a[i], y = b[i], s = fmax(1.0, fmax(fabs(x), fabs(y)));
    double d = fabs(x - y) / s;
    if (d > worst || isnan(d))
      worst = isnan(d) ? INFINITY : d;
  }
  return worst;
}

/* ---- reporting ---- */
typedef struct timing {
  double ref, ac; /* median seconds */
} timing;

static void report(bench_ctx *B, const char *name, const char *size, double bytes, timing t,
                   const char *check) {
  double gbs_ref = bytes / t.ref / 1e9, gbs_ac = bytes / t.ac / 1e9;
  printf("| %-14s | %-16s | %9.3f | %9.3f | %5.2f | %6.1f | %6.1f | %4.0f%% | %s |\n", name, size,
         1e3 * t.ref, 1e3 * t.ac, t.ref / t.ac, gbs_ref, gbs_ac, 100.0 * bytes / t.ac / B->bandwidth,
         check);
  fflush(stdout);
}

/* The median time of `repeat` calls of run(ud), after a warm-up call. */
static double time_median(bench_ctx *B, void (*run)(void *), void *ud) {
  double *t = xmalloc((size_t)B->repeat * sizeof *t);
  run(ud);
  for (int i = 0; i < B->repeat; i++) {
    double t0 = now();
    run(ud);
    t[i] = now() - t0;
  }
  double med = median(t, B->repeat);
  free(t);
  return med;
}

/* Times `ref` and then `ac` and returns the medians. They run in blocks
 * rather than alternately: OpenMP's threads spin for a while after each
 * parallel region (GOMP_SPINCOUNT), and alternating would make arrayc's
 * pool share the cores with spinning threads, a cost no real program
 * would pay. The closures are spelled as a struct with two callbacks. */
typedef struct runner {
  void (*ref)(void *);
  void (*ac)(void *);
  void *ud;
} runner;

static timing time_both(bench_ctx *B, runner r) {
  timing t = {time_median(B, r.ref, r.ud), time_median(B, r.ac, r.ud)};
  return t;
}

/* "n=2^K" for a power of two n, else "n=N". */
static void size_vec(char *buf, size_t cap, int64_t n) {
  int k = 0;
  while (k < 62 && ((int64_t)1 << k) < n)
    k++;
  if (((int64_t)1 << k) == n)
    snprintf(buf, cap, "n=2^%d", k);
  else
    snprintf(buf, cap, "n=%lld", (long long)n);
}

/* ---- the GPU model (--gpu-model) ---- */
/* "a/b" with two decimals into buf, or "—" when b is 0 (nothing to divide:
 * a kernel without stores has no sectors per store request). */
static void fmt_ratio(char *buf, size_t cap, uint64_t a, uint64_t b) {
  if (b)
    snprintf(buf, cap, "%.2f", (double)a / (double)b);
  else
    snprintf(buf, cap, "—");
}

/* The printf width that pads UTF-8 text s to w columns ("—" is three bytes
 * and one column). */
static int cols(const char *s, int w) {
  int extra = 0;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++)
    extra += (*p & 0xc0) == 0x80;
  return w + extra;
}

/* One Markdown row per kernel of f, which was compiled with profiling on
 * and called once (the check): what its launches asked of the memory
 * system. iterations > 0: the call ran a loop of that many steps, and the
 * notes give launches per step. A kernel the call never launched gets a
 * row of dashes. */
static void profile_rows(const char *name, const char *size, ac_function *f, const char *check,
                         int64_t iterations) {
  size_t nk = ac_function_num_kernels(f);
  if (nk == 0)
    printf("| %-22s | %-16s | (no kernels) | | | | | | | | | %s | |\n", name, size, check);
  for (size_t k = 0; k < nk; k++) {
    ac_kernel_profile p;
    ac_error *e = NULL;
    if (ac_function_profile(f, k, &p, sizeof p, &e) != AC_OK)
      die("profile", e);
    char ld[16], st[16], bytes[16], smem[16], lanes[16], notes[96] = "";
    fmt_ratio(ld, sizeof ld, p.ld_sectors, p.ld_req);
    fmt_ratio(st, sizeof st, p.st_sectors, p.st_req);
    fmt_ratio(bytes, sizeof bytes, p.bytes, p.min_bytes);
    fmt_ratio(smem, sizeof smem, p.smem_conflicts, p.smem_insts);
    fmt_ratio(lanes, sizeof lanes, p.lane_insts, 32 * p.warp_insts);
    size_t len = 0;
    if (iterations > 0)
      len += (size_t)snprintf(notes, sizeof notes, "%.2f launches per iteration (%lld)",
                              (double)p.launches / (double)iterations, (long long)iterations);
    if (p.approximate)
      snprintf(notes + len, sizeof notes - len, "%sapproximate", len ? "; " : "");
    printf("| %-22s | %-16s | %-18s | %8llu | %*s | %*s | %*s | %*s | %*s | %8llu | %7llu | %s | "
           "%s |\n",
           name, size, p.kernel, (unsigned long long)p.launches, cols(ld, 11), ld, cols(st, 11), st,
           cols(bytes, 9), bytes, cols(smem, 15), smem, cols(lanes, 5), lanes,
           (unsigned long long)p.barriers, (unsigned long long)p.atomics, check, notes);
  }
  fflush(stdout);
}

/* What a benchmark does once its result is checked: the CPU suite times
 * both sides and prints a row; --gpu-model prints the kernels' profiles
 * (of the check call, the only one) instead. */
static void conclude(bench_ctx *B, const char *name, const char *size, double bytes, runner r,
                     ac_function *f, const char *check) {
  if (B->gpu_model)
    profile_rows(name, size, f, check, 0);
  else
    report(B, name, size, bytes, time_both(B, r), check);
}

/* ---- the benchmarks ---- */
typedef struct vec_state {
  int64_t n;
  int64_t cols; /* a grid's columns (rows: n / cols) */
  float a, r, v;
  float *x, *y, *z, *o1, *o2;
  ac_function *f;
  ac_datum args[5];
  size_t nargs, nres;
  float dot; /* sdot's and rmse's reference result */
} vec_state;

static void run_ac(void *ud) {
  vec_state *s = ud;
  ac_datum res[2];
  call(s->f, s->args, s->nargs, res, s->nres);
  release_all(res, s->nres);
}

static void saxpy_ref(void *ud) {
  vec_state *s = ud;
  ref_saxpy(s->n, s->a, s->x, s->y, s->o1);
}

static void bench_saxpy(bench_ctx *B, int64_t n) {
  vec_state s = {.n = n, .a = 2.5f};
  s.x = xmalloc((size_t)n * 4);
  s.y = xmalloc((size_t)n * 4);
  s.o1 = xmalloc((size_t)n * 4);
  for (int64_t i = 0; i < n; i++) {
    s.x[i] = rndf(-1, 1);
    s.y[i] = rndf(-1, 1);
  }
  ac_module *m;
  s.f = compile(B, "saxpy", &m);
  s.args[0] = f32s(s.a);
  s.args[1] = arr(B, AC_F32, 1, &n, s.x);
  s.args[2] = arr(B, AC_F32, 1, &n, s.y);
  s.nargs = 3;
  s.nres = 1;
  ac_datum res;
  call(s.f, s.args, 3, &res, 1);
  saxpy_ref(&s);
  double d = max_rel_diff(ac_array_data(res.array), s.o1, n);
  ac_datum_release(&res);
  char size[64];
  size_vec(size, sizeof size, n);
  conclude(B, "saxpy", size, 12.0 * (double)n, (runner){saxpy_ref, run_ac, &s}, s.f,
           d == 0 ? "exact" : "DIFFERS");
  release_all(s.args, 3);
  ac_function_destroy(s.f);
  ac_module_destroy(m);
  free(s.x), free(s.y), free(s.o1);
}

static void sdot_ref(void *ud) {
  vec_state *s = ud;
  s->dot = ref_sdot(s->n, s->x, s->y);
}

static void bench_sdot(bench_ctx *B, int64_t n) {
  vec_state s = {.n = n};
  s.x = xmalloc((size_t)n * 4);
  s.y = xmalloc((size_t)n * 4);
  for (int64_t i = 0; i < n; i++) {
    s.x[i] = rndf(0, 1);
    s.y[i] = rndf(0, 1);
  }
  ac_module *m;
  s.f = compile(B, "sdot", &m);
  s.args[0] = arr(B, AC_F32, 1, &n, s.x);
  s.args[1] = arr(B, AC_F32, 1, &n, s.y);
  s.nargs = 2;
  s.nres = 1;
  ac_datum res;
  call(s.f, s.args, 2, &res, 1);
  sdot_ref(&s);
  /* Both are f32 sums of 2^24 terms in some order; the check is against
   * the sum in double precision, and reports both errors (the reference's
   * long sequential chains lose more than arrayc's chunked ones). */
  double exact = 0;
  for (int64_t i = 0; i < n; i++)
    exact += (double)s.x[i] * (double)s.y[i];
  double d = fabs(res.s.f - exact) / fabs(exact), dref = fabs(s.dot - exact) / fabs(exact);
  char size[64], check[64];
  size_vec(size, sizeof size, n);
  snprintf(check, sizeof check, "%s (rel %.1e, ref %.1e)", d < 1e-3 ? "ok" : "DIFFERS", d, dref);
  conclude(B, "sdot", size, 8.0 * (double)n, (runner){sdot_ref, run_ac, &s}, s.f, check);
  release_all(s.args, 2);
  ac_function_destroy(s.f);
  ac_module_destroy(m);
  free(s.x), free(s.y);
}

static void bs_ref(void *ud) {
  vec_state *s = ud;
  ref_blackscholes(s->n, s->x, s->y, s->z, s->r, s->v, s->o1, s->o2);
}

static void bench_blackscholes(bench_ctx *B, int64_t n) {
  vec_state s = {.n = n, .r = 0.02f, .v = 0.30f};
  s.x = xmalloc((size_t)n * 4);
  s.y = xmalloc((size_t)n * 4);
  s.z = xmalloc((size_t)n * 4);
  s.o1 = xmalloc((size_t)n * 4);
  s.o2 = xmalloc((size_t)n * 4);
  for (int64_t i = 0; i < n; i++) {
    s.x[i] = rndf(5, 30);
    s.y[i] = rndf(1, 100);
    s.z[i] = rndf(0.25f, 10);
  }
  ac_module *m;
  s.f = compile(B, "blackscholes", &m);
  s.args[0] = arr(B, AC_F32, 1, &n, s.x);
  s.args[1] = arr(B, AC_F32, 1, &n, s.y);
  s.args[2] = arr(B, AC_F32, 1, &n, s.z);
  s.args[3] = f32s(s.r);
  s.args[4] = f32s(s.v);
  s.nargs = 5;
  s.nres = 2;
  ac_datum res[2];
  call(s.f, s.args, 5, res, 2);
  bs_ref(&s);
  /* the references use expf/logf, arrayc's f32 math may round differently */
  double d = fmax(max_rel_diff(ac_array_data(res[0].array), s.o1, n),
                  max_rel_diff(ac_array_data(res[1].array), s.o2, n));
  release_all(res, 2);
  char size[64], check[64];
  size_vec(size, sizeof size, n);
  snprintf(check, sizeof check, "%s (rel %.1e)", d < 1e-4 ? "ok" : "DIFFERS", d);
  conclude(B, "blackscholes", size, 20.0 * (double)n, (runner){bs_ref, run_ac, &s}, s.f, check);
  release_all(s.args, 5);
  ac_function_destroy(s.f);
  ac_module_destroy(m);
  free(s.x), free(s.y), free(s.z), free(s.o1), free(s.o2);
}

static void scan_ref(void *ud) {
  vec_state *s = ud;
  ref_prefix_sum(s->n, (const int32_t *)s->x, (int32_t *)s->o1);
}

static void bench_prefix_sum(bench_ctx *B, int64_t n) {
  vec_state s = {.n = n};
  s.x = xmalloc((size_t)n * 4);
  s.o1 = xmalloc((size_t)n * 4);
  int32_t *xi = (int32_t *)s.x;
  for (int64_t i = 0; i < n; i++)
    xi[i] = (int32_t)(rnd() % 1000) - 500;
  ac_module *m;
  s.f = compile(B, "prefix_sum", &m);
  s.args[0] = arr(B, AC_I32, 1, &n, s.x);
  s.nargs = 1;
  s.nres = 1;
  ac_datum res;
  call(s.f, s.args, 1, &res, 1);
  scan_ref(&s);
  bool same = memcmp(ac_array_data(res.array), s.o1, (size_t)n * 4) == 0;
  ac_datum_release(&res);
  char size[64];
  size_vec(size, sizeof size, n);
  conclude(B, "prefix_sum", size, 8.0 * (double)n, (runner){scan_ref, run_ac, &s}, s.f,
           same ? "exact" : "DIFFERS");
  release_all(s.args, 1);
  ac_function_destroy(s.f);
  ac_module_destroy(m);
  free(s.x), free(s.o1);
}

static void rows_ref(void *ud) {
  vec_state *s = ud;
  int64_t cols = 4096;
  ref_row_sums(s->n / cols, cols, s->x, s->o1);
}

static void bench_row_sums(bench_ctx *B, int64_t n) {
  const int64_t cols = 4096, rows = n / cols;
  vec_state s = {.n = rows * cols};
  s.x = xmalloc((size_t)s.n * 4);
  s.o1 = xmalloc((size_t)rows * 4);
  for (int64_t i = 0; i < s.n; i++)
    s.x[i] = rndf(0, 1);
  ac_module *m;
  s.f = compile(B, "row_sums", &m);
  int64_t ext[2] = {rows, cols};
  s.args[0] = arr(B, AC_F32, 2, ext, s.x);
  s.nargs = 1;
  s.nres = 1;
  ac_datum res;
  call(s.f, s.args, 1, &res, 1);
  rows_ref(&s);
  double d = max_rel_diff(ac_array_data(res.array), s.o1, rows);
  ac_datum_release(&res);
  char size[64], check[64];
  snprintf(size, sizeof size, "%lldx%lld", (long long)rows, (long long)cols);
  snprintf(check, sizeof check, "%s (rel %.1e)", d < 1e-4 ? "ok" : "DIFFERS", d);
  conclude(B, "row_sums", size, 4.0 * (double)s.n, (runner){rows_ref, run_ac, &s}, s.f, check);
  release_all(s.args, 1);
  ac_function_destroy(s.f);
  ac_module_destroy(m);
  free(s.x), free(s.o1);
}

/* nested_row_sums: 4 rows (the element code folds a row) timed on the
 * runtime and, as the reference, on a runtime of the same backend with
 * one thread (ARRAYC_NUM_THREADS=1): the ratio is what the pool gains on a
 * few heavy elements. */
typedef struct nested_state {
  vec_state v;
  ac_function *one; /* the same function on the one-thread runtime */
} nested_state;

static void nested_one(void *ud) {
  nested_state *s = ud;
  ac_datum res;
  call(s->one, s->v.args, 1, &res, 1);
  ac_datum_release(&res);
}

static void bench_nested_row_sums(bench_ctx *B, int64_t n) {
  const int64_t rows = 4, cols = n / rows;
  nested_state s = {.v = {.n = rows * cols}};
  s.v.x = xmalloc((size_t)s.v.n * 4);
  s.v.o1 = xmalloc((size_t)rows * 4);
  for (int64_t i = 0; i < s.v.n; i++)
    s.v.x[i] = rndf(0, 1);
  ac_module *m;
  s.v.f = compile(B, "nested_row_sums", &m);
  ac_runtime *rt1 = NULL;
  if (!B->gpu_model) {
    char *old = getenv("ARRAYC_NUM_THREADS") ? strdup(getenv("ARRAYC_NUM_THREADS")) : NULL;
    setenv("ARRAYC_NUM_THREADS", "1", 1);
    ac_error *e = NULL;
    if (ac_runtime_create(B->ctx, B->backend, &rt1, &e) != AC_OK)
      die("one-thread runtime", e);
    if (old)
      setenv("ARRAYC_NUM_THREADS", old, 1);
    else
      unsetenv("ARRAYC_NUM_THREADS");
    free(old);
    if (ac_runtime_compile(rt1, m, "nested_row_sums", &s.one, &e) != AC_OK)
      die("nested_row_sums", e);
  }
  int64_t ext[2] = {rows, cols};
  s.v.args[0] = arr(B, AC_F32, 2, ext, s.v.x);
  s.v.nargs = 1;
  s.v.nres = 1;
  ac_datum res;
  call(s.v.f, s.v.args, 1, &res, 1);
  ref_row_sums(rows, cols, s.v.x, s.v.o1);
  double d = max_rel_diff(ac_array_data(res.array), s.v.o1, rows);
  ac_datum_release(&res);
  char size[64], check[96];
  snprintf(size, sizeof size, "%lldx%lld", (long long)rows, (long long)cols);
  snprintf(check, sizeof check, "%s (rel %.1e; ref: arrayc, one thread)",
           d < 1e-4 ? "ok" : "DIFFERS", d);
  conclude(B, "nested_row_sums", size, 4.0 * (double)s.v.n,
           (runner){nested_one, run_ac, &s.v}, s.v.f, check);
  release_all(s.v.args, 1);
  ac_function_destroy(s.one);
  ac_runtime_destroy(rt1);
  ac_function_destroy(s.v.f);
  ac_module_destroy(m);
  free(s.v.x), free(s.v.o1);
}

typedef struct spmv_state {
  vec_state v;
  int64_t rows, nnz;
  int64_t *rowptr, *lens;
  int32_t *cols;
} spmv_state;

static void spmv_ref(void *ud) {
  spmv_state *s = ud;
  ref_spmv_csr(s->rows, s->rowptr, s->cols, s->v.x, s->v.y, s->v.o1);
}

static void bench_spmv_csr(bench_ctx *B, int64_t nnz_target) {
  spmv_state s = {0};
  s.rows = nnz_target / 16;
  s.rowptr = xmalloc((size_t)(s.rows + 1) * 8);
  s.lens = xmalloc((size_t)s.rows * 8);
  s.rowptr[0] = 0;
  for (int64_t r = 0; r < s.rows; r++) { /* 8..24 entries per row, 16 on average */
    s.lens[r] = 8 + (int64_t)(rnd() % 17);
    s.rowptr[r + 1] = s.rowptr[r] + s.lens[r];
  }
  s.nnz = s.rowptr[s.rows];
  s.cols = xmalloc((size_t)s.nnz * 4);
  s.v.x = xmalloc((size_t)s.nnz * 4);   /* values */
  s.v.y = xmalloc((size_t)s.rows * 4);  /* the vector: square matrix */
  s.v.o1 = xmalloc((size_t)s.rows * 4);
  for (int64_t k = 0; k < s.nnz; k++) {
    s.cols[k] = (int32_t)(rnd() % (uint64_t)s.rows);
    s.v.x[k] = rndf(-1, 1);
  }
  for (int64_t r = 0; r < s.rows; r++)
    s.v.y[r] = rndf(-1, 1);
  ac_module *m;
  s.v.f = compile(B, "spmv_csr", &m);
  s.v.args[0] = arr(B, AC_I64, 1, &s.rows, s.lens);
  s.v.args[1] = arr(B, AC_I32, 1, &s.nnz, s.cols);
  s.v.args[2] = arr(B, AC_F32, 1, &s.nnz, s.v.x);
  s.v.args[3] = arr(B, AC_F32, 1, &s.rows, s.v.y);
  s.v.nargs = 4;
  s.v.nres = 1;
  ac_datum res;
  call(s.v.f, s.v.args, 4, &res, 1);
  spmv_ref(&s);
  double d = max_rel_diff(ac_array_data(res.array), s.v.o1, s.rows);
  ac_datum_release(&res);
  char size[64], check[64];
  snprintf(size, sizeof size, "nnz=%.1fM", (double)s.nnz / 1e6);
  snprintf(check, sizeof check, "%s (rel %.1e)", d < 1e-4 ? "ok" : "DIFFERS", d);
  /* bytes: values, columns, one vector element per entry, row pointers, y;
   * both sides get &s: run_ac reads the vec_state, which is s's first member */
  double bytes = 12.0 * (double)s.nnz + 16.0 * (double)s.rows;
  conclude(B, "spmv_csr", size, bytes, (runner){spmv_ref, run_ac, &s}, s.v.f, check);
  release_all(s.v.args, 4);
  ac_function_destroy(s.v.f);
  ac_module_destroy(m);
  free(s.rowptr), free(s.lens), free(s.cols), free(s.v.x), free(s.v.y), free(s.v.o1);
}

/* ---- RMSE, with and without fusion ----
 * sqrt(fold(+, 0, map(^2, map(-, a, b))) / n). With the default pipeline,
 * fuse makes it one kernel that reads a and b once (8 bytes per element);
 * without fuse the maps write their n-element results and the next
 * operation reads them back. Both rows count the same 8 useful bytes, so
 * "of bw" shows the waste. The reference is timed once for both. */
static const char *const rmse_no_fuse = "O2,-fuse";

static void rmse_ref(void *ud) {
  vec_state *s = ud;
  s->dot = ref_rmse(s->n, s->x, s->y);
}

/* The check of one variant: the error against the double-precision RMSE
 * (the reference's beside it) and the kernel count of the plan: 1 fused,
 * more unfused (the interpreter has no plan). */
static void rmse_check(char *buf, size_t cap, double got, double exact, float ref, size_t kernels,
                       bool fused, bool has_plan) {
  double d = fabs(got - exact) / exact, dref = fabs(ref - exact) / exact;
  bool kernels_ok = !has_plan || (fused ? kernels == 1 : kernels > 1);
  snprintf(buf, cap, "%s (rel %.1e, ref %.1e; %zu kernel%s%s)", d < 1e-3 ? "ok" : "DIFFERS", d,
           dref, kernels, kernels == 1 ? "" : "s", kernels_ok ? "" : ": UNEXPECTED");
}

static void bench_rmse(bench_ctx *B, int64_t n) {
  vec_state s = {.n = n, .nargs = 2, .nres = 1};
  s.x = xmalloc((size_t)n * 4);
  s.y = xmalloc((size_t)n * 4);
  double sum = 0;
  for (int64_t i = 0; i < n; i++) {
    s.x[i] = rndf(-1, 1);
    s.y[i] = rndf(-1, 1);
    double d = (double)s.x[i] - (double)s.y[i];
    sum += d * d;
  }
  const double exact = sqrt(sum / (double)n);
  ac_module *m = load(B, "rmse");
  s.args[0] = arr(B, AC_F32, 1, &n, s.x);
  s.args[1] = arr(B, AC_F32, 1, &n, s.y);
  rmse_ref(&s);
  char size[64];
  size_vec(size, sizeof size, n);
  const struct {
    const char *row, *passes;
  } variant[2] = {{"rmse (fused)", NULL}, {"rmse (unfused)", rmse_no_fuse}};
  timing t = {.ref = time_median(B, rmse_ref, &s)};
  for (int v = 0; v < 2; v++) {
    s.f = compile_fn(B, m, "rmse", variant[v].passes);
    ac_datum res;
    call(s.f, s.args, 2, &res, 1);
    char check[96];
    rmse_check(check, sizeof check, res.s.f, exact, s.dot, ac_function_num_kernels(s.f), v == 0,
               B->backend != AC_BACKEND_INTERP);
    t.ac = B->rmse_time[v] = time_median(B, run_ac, &s);
    report(B, variant[v].row, size, 8.0 * (double)n, t, check);
    ac_function_destroy(s.f);
  }
  release_all(s.args, 2);
  ac_module_destroy(m);
  free(s.x), free(s.y);
}

/* ---- neighbour reads: forward differences, moving average, Jacobi ----
 * One f32 array in, one out, every output element reading the input at a
 * few constant offsets. On the GPU these get shared-memory tiles
 * (smem-stencil); on the CPU, where the caches catch the reuse, the
 * default pipeline makes each of them one kernel, and these rows are the
 * CPU baseline for the GPU suite's. Bytes: the input read once and the
 * output written once. */

/* The default pipeline with smem-stencil (not in it since the H200 run,
 * docs/passes.md §2): shared-memory tiles; and without. */
static const char *const nbr_tile = "O2,smem-stencil";
static const char *const nbr_no_tile = "O2,-smem-stencil";

typedef struct nbr_bench {
  const char *name, *file, *fn; /* row, programs/FILE.ac, function */
  bool grid;                    /* a 2-D grid of n cells (else a vector of n) */
  int64_t shrink;               /* output elements fewer than input's */
  void (*ref)(void *);          /* vec_state: reads x, writes o1 */
  double tol;                   /* relative, as max_rel_diff */
} nbr_bench;

static void forward_diff_ref(void *ud) {
  vec_state *s = ud;
  ref_forward_diff(s->n, s->x, s->o1);
}

static void ma15_ref(void *ud) {
  vec_state *s = ud;
  ref_ma15(s->n, s->x, s->o1);
}

static void jacobi2d_ref(void *ud) {
  vec_state *s = ud;
  ref_jacobi2d(s->n / s->cols, s->cols, s->x, s->o1);
}

static void bench_neighbours(bench_ctx *B, int64_t n, const nbr_bench *nb) {
  vec_state s = {.n = n, .nargs = 1, .nres = 1};
  int64_t ext[2] = {n, 1};
  unsigned rank = 1;
  char size[64];
  if (nb->grid) { /* square when n is an even power of two: 4096x4096 for 2^24 */
    s.cols = 1;
    while (s.cols * s.cols < n)
      s.cols *= 2;
    ext[0] = n / s.cols, ext[1] = s.cols, rank = 2;
    s.n = ext[0] * ext[1];
    snprintf(size, sizeof size, "%lldx%lld", (long long)ext[0], (long long)ext[1]);
  } else {
    size_vec(size, sizeof size, n);
  }
  const int64_t nout = s.n - nb->shrink;
  s.x = xmalloc((size_t)s.n * 4);
  s.o1 = xmalloc((size_t)nout * 4);
  for (int64_t i = 0; i < s.n; i++)
    s.x[i] = rndf(-1, 1);
  nb->ref(&s);
  ac_module *m = load(B, nb->file);
  s.args[0] = arr(B, AC_F32, rank, ext, s.x);
  /* The GPU model has the GPU suite's two rows: with smem-stencil's tiles
   * (benches.cu's kTile) and without (kNoTile, the default pipeline). */
  const struct {
    const char *suffix, *passes;
  } variant[2] = {{" (tile)", nbr_tile}, {" (no tile)", nbr_no_tile}};
  for (int v = 0; v < (B->gpu_model ? 2 : 1); v++) {
    s.f = compile_fn(B, m, nb->fn, variant[v].passes);
    ac_datum res;
    call(s.f, s.args, 1, &res, 1);
    double d = ac_array_size(res.array) != nout
                   ? INFINITY
                   : max_rel_diff(ac_array_data(res.array), s.o1, nout);
    ac_datum_release(&res);
    char check[64], row[64];
    if (d == 0)
      snprintf(check, sizeof check, "exact");
    else
      snprintf(check, sizeof check, "%s (rel %.1e)", d <= nb->tol ? "ok" : "DIFFERS", d);
    snprintf(row, sizeof row, "%s%s", nb->name, B->gpu_model ? variant[v].suffix : "");
    conclude(B, row, size, 4.0 * (double)(s.n + nout), (runner){nb->ref, run_ac, &s}, s.f, check);
    ac_function_destroy(s.f);
  }
  release_all(s.args, 1);
  ac_module_destroy(m);
  free(s.x), free(s.o1);
}

/* Forward differences round once, like the reference; the sums may
 * differ by a rounding per term (contraction, order). */
static const nbr_bench nbr_forward_diff = {.name = "forward_diff",
                                           .file = "forward_diff",
                                           .fn = "forward_diff",
                                           .shrink = 1,
                                           .ref = forward_diff_ref,
                                           .tol = 0};
static const nbr_bench nbr_ma15 = {
    .name = "ma15", .file = "ma15", .fn = "ma15", .shrink = 14, .ref = ma15_ref, .tol = 1e-5};
static const nbr_bench nbr_jacobi2d = {.name = "jacobi2d",
                                       .file = "jacobi2d",
                                       .fn = "jacobi",
                                       .grid = true,
                                       .ref = jacobi2d_ref,
                                       .tol = 1e-6};

static void bench_forward_diff(bench_ctx *B, int64_t n) {
  bench_neighbours(B, n, &nbr_forward_diff);
}
static void bench_ma15(bench_ctx *B, int64_t n) {
  bench_neighbours(B, n, &nbr_ma15);
}
static void bench_jacobi2d(bench_ctx *B, int64_t n) {
  bench_neighbours(B, n, &nbr_jacobi2d);
}

/* ---- the GPU model only: the GPU suite's full reduction and array loop ----
 * The CPU suite has neither (no reference in ref.c): reduce_sum is checked
 * against the double-precision sum, the loop against the same steps in C. */
static void bench_reduce_sum(bench_ctx *B, int64_t n) {
  float *x = xmalloc((size_t)n * 4);
  double exact = 0;
  for (int64_t i = 0; i < n; i++) {
    x[i] = rndf(0, 1);
    exact += x[i];
  }
  ac_module *m;
  ac_function *f = compile(B, "reduce_sum", &m);
  ac_datum arg = arr(B, AC_F32, 1, &n, x), res;
  call(f, &arg, 1, &res, 1);
  double d = fabs(res.s.f - exact) / exact;
  char size[64], check[64];
  size_vec(size, sizeof size, n);
  snprintf(check, sizeof check, "%s (rel %.1e)", d < 1e-3 ? "ok" : "DIFFERS", d);
  profile_rows("reduce_sum", size, f, check, 0);
  ac_datum_release(&arg);
  ac_function_destroy(f);
  ac_module_destroy(m);
  free(x);
}

/* iterate_map.ac over benches.cu's 4096 floats with the step count of its
 * checking call; the notes give launches per step (1.00: one kernel per
 * iteration, nothing else). The size is fixed: what it measures is the
 * loop, not the data. */
static void bench_iterate(bench_ctx *B, int64_t unused) {
  (void)unused;
  const int64_t n = 4096;
  const int32_t steps = 10;
  float *x = xmalloc((size_t)n * 4), *want = xmalloc((size_t)n * 4);
  for (int64_t i = 0; i < n; i++)
    want[i] = x[i] = rndf(0, 10);
  for (int32_t k = 0; k < steps; k++)
    for (int64_t i = 0; i < n; i++)
      want[i] = want[i] * 0.5f + 1.0f;
  ac_module *m;
  ac_function *f = compile(B, "iterate_map", &m);
  ac_datum args[2] = {arr(B, AC_F32, 1, &n, x), {.kind = AC_DATUM_SCALAR, .type = AC_I32}}, res;
  args[1].s.i = steps;
  call(f, args, 2, &res, 1);
  double d =
      ac_array_size(res.array) != n ? INFINITY : max_rel_diff(ac_array_data(res.array), want, n);
  ac_datum_release(&res);
  char size[64], check[64];
  snprintf(size, sizeof size, "n=2^12, %d steps", (int)steps);
  if (d == 0)
    snprintf(check, sizeof check, "exact");
  else
    snprintf(check, sizeof check, "%s (rel %.1e)", d <= 1e-5 ? "ok" : "DIFFERS", d);
  profile_rows("iterate", size, f, check, steps);
  release_all(args, 2);
  ac_function_destroy(f);
  ac_module_destroy(m);
  free(x), free(want);
}

/* Best of ten STREAM triads over three arrays of 2^25 doubles (768 MB). */
static double measure_bandwidth(void) {
  const int64_t n = (int64_t)1 << 25;
  double *a = xmalloc((size_t)n * 8), *b = xmalloc((size_t)n * 8), *c = xmalloc((size_t)n * 8);
  for (int64_t i = 0; i < n; i++)
    a[i] = 0, b[i] = 1, c[i] = 2;
  double best = INFINITY;
  for (int i = 0; i < 10; i++)
    best = fmin(best, ref_stream_triad(n, a, b, c));
  free(a), free(b), free(c);
  return 24.0 * (double)n / best;
}

/* Source text to callable code for Black-Scholes, in process: the median
 * over several fresh contexts (a fresh context has an empty cache). */
static void compile_latency(ac_backend be) {
  char path[512];
  snprintf(path, sizeof path, "%s/programs/blackscholes.ac", ARRAYC_BENCH_DIR);
  size_t len;
  char *text = read_file(path, &len);
  double t[7];
  for (int i = 0; i < 7; i++) {
    ac_context *ctx = ac_context_create();
    ac_error *e = NULL;
    ac_module *m = NULL;
    ac_function *f = NULL;
    double t0 = now();
    if (ac_module_parse(ctx, path, text, len, &m, &e) != AC_OK || ac_module_verify(m, &e) != AC_OK ||
        ac_function_create(m, "blackscholes", be, &f, &e) != AC_OK)
      die("compile", e);
    t[i] = now() - t0;
    ac_function_destroy(f);
    ac_module_destroy(m);
    ac_context_destroy(ctx);
  }
  double med = median(t, 7); /* sorts t */
  printf("\ncompile latency (blackscholes, source to callable code): median %.1f ms, min %.1f ms\n",
         1e3 * med, 1e3 * t[0]);
  free(text);
}

/* Source text to PTX for Black-Scholes, in process and without a device:
 * what a GPU runtime spends on a kernel the on-disk cache has not seen
 * (parse, verify, lower, O3 with libdevice, PTX emission for sm_90). */
static void compile_latency_ptx(void) {
  char path[512];
  snprintf(path, sizeof path, "%s/programs/blackscholes.ac", ARRAYC_BENCH_DIR);
  size_t len;
  char *text = read_file(path, &len);
  double t[7];
  for (int i = 0; i < 7; i++) {
    ac_context *ctx = ac_context_create();
    ac_error *e = NULL;
    ac_module *m = NULL;
    char *ptx = NULL;
    double t0 = now();
    if (ac_module_parse(ctx, path, text, len, &m, &e) != AC_OK || ac_module_verify(m, &e) != AC_OK)
      die("compile", e);
    uint32_t fn = 0;
    while (fn < ac_module_num_functions(m) &&
           strcmp(ac_module_function_name(m, fn), "blackscholes") != 0)
      fn++;
    if (api_emit_ptx(m, &fn, 1, "O2", 90, false, &ptx, &e) != AC_OK)
      die("compile to PTX", e);
    t[i] = now() - t0;
    ac_free(ctx, ptx);
    ac_module_destroy(m);
    ac_context_destroy(ctx);
  }
  double med = median(t, 7); /* sorts t */
  printf("\ncompile latency (blackscholes, source to PTX for sm_90, libdevice %s): median %.1f ms, "
         "min %.1f ms\n",
         nv_libdevice_path() ? "linked" : "absent", 1e3 * med, 1e3 * t[0]);
  free(text);
}

static bool selected(const char *only, const char *name);

/* ---- recurrences: cell updates per second against one C thread ---- */

/* A field of /proc/self/status in kB, or -1. */
static long proc_status_kb(const char *field) {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f)
    return -1;
  char line[256];
  long v = -1;
  size_t len = strlen(field);
  while (fgets(line, sizeof line, f))
    if (strncmp(line, field, len) == 0 && line[len] == ':') {
      v = strtol(line + len + 1, NULL, 10);
      break;
    }
  fclose(f);
  return v;
}

/* How far the process's peak resident set rose above its current size
 * during run(ud), in bytes (Linux: VmHWM, reset through clear_refs), or a
 * negative value when the system does not say. */
static double peak_growth(void (*run)(void *), void *ud) {
  long rss0 = proc_status_kb("VmRSS");
  FILE *f = fopen("/proc/self/clear_refs", "w");
  if (!f || rss0 < 0) {
    if (f)
      fclose(f);
    run(ud);
    return -1;
  }
  fputs("5", f);
  fclose(f);
  run(ud);
  long hwm = proc_status_kb("VmHWM");
  return hwm < 0 ? -1 : 1024.0 * (double)(hwm - rss0);
}

typedef int32_t (*rec_ref_fn)(int64_t, const uint8_t *, int64_t, const uint8_t *, int32_t *,
                              int32_t *);
/* A reference that also gives the best cell (ref_smith_waterman_at). */
typedef int32_t (*rec_ref_at_fn)(int64_t, const uint8_t *, int64_t, const uint8_t *, int32_t *,
                                 int32_t *, int64_t *);

typedef struct rec_state {
  int64_t n;
  uint8_t *s, *t;
  int32_t *prev, *cur, result, ref_result;
  int64_t at[2], ref_at[2]; /* with ref_at_fn: the cell of the result */
  rec_ref_fn ref;
  rec_ref_at_fn ref_at_fn;
  ac_function *f;
  ac_datum args[2];
} rec_state;

static void rec_ref(void *ud) {
  rec_state *s = ud;
  if (s->ref_at_fn)
    s->ref_result = s->ref_at_fn(s->n, s->s, s->n, s->t, s->prev, s->cur, s->ref_at);
  else
    s->ref_result = s->ref(s->n, s->s, s->n, s->t, s->prev, s->cur);
}

static void rec_ac(void *ud) {
  rec_state *s = ud;
  ac_datum res[3];
  size_t nres = s->ref_at_fn ? 3 : 1;
  call(s->f, s->args, 2, res, nres);
  s->result = (int32_t)res[0].s.i;
  for (size_t i = 1; i < nres; i++)
    s->at[i - 1] = res[i].s.i;
  release_all(res, nres);
}

static bool rec_same(const rec_state *s) {
  return s->result == s->ref_result &&
         (!s->ref_at_fn || (s->at[0] == s->ref_at[0] && s->at[1] == s->ref_at[1]));
}

/* Two random DNA sequences of n and the reference's two rows. */
static void rec_setup(rec_state *s, int64_t n, rec_ref_fn ref, rec_ref_at_fn ref_at) {
  *s = (rec_state){.n = n, .ref = ref, .ref_at_fn = ref_at};
  s->s = xmalloc((size_t)n);
  s->t = xmalloc((size_t)n);
  for (int64_t i = 0; i < n; i++) {
    s->s[i] = (uint8_t)"ACGT"[rnd() % 4];
    s->t[i] = (uint8_t)"ACGT"[rnd() % 4];
  }
  s->prev = xmalloc((size_t)(n + 1) * 4);
  s->cur = xmalloc((size_t)(n + 1) * 4);
}

static void rec_teardown(rec_state *s, ac_module *m) {
  release_all(s->args, 2);
  ac_function_destroy(s->f);
  ac_module_destroy(m);
  free(s->s), free(s->t), free(s->prev), free(s->cur);
}

static void bench_rec(bench_ctx *B, const char *name, int64_t n, rec_ref_fn ref,
                      rec_ref_at_fn ref_at) {
  rec_state s;
  rec_setup(&s, n, ref, ref_at);
  int64_t ext[1] = {n};
  /* the memory: the first call on a context and runtime of their own
   * (whose caches hold no blocks freed by earlier benchmarks) */
  double peak;
  {
    bench_ctx fresh = *B;
    ac_error *e = NULL;
    fresh.ctx = ac_context_create();
    if (ac_runtime_create(fresh.ctx, B->backend, &fresh.rt, &e) != AC_OK)
      die("runtime", e);
    ac_module *m1;
    s.f = compile(&fresh, name, &m1);
    s.args[0] = arr(&fresh, AC_U8, 1, ext, s.s);
    s.args[1] = arr(&fresh, AC_U8, 1, ext, s.t);
    peak = peak_growth(rec_ac, &s);
    release_all(s.args, 2);
    ac_function_destroy(s.f);
    ac_module_destroy(m1);
    ac_runtime_destroy(fresh.rt);
    ac_context_destroy(fresh.ctx);
  }
  ac_module *m;
  s.f = compile(B, name, &m);
  s.args[0] = arr(B, AC_U8, 1, ext, s.s);
  s.args[1] = arr(B, AC_U8, 1, ext, s.t);
  rec_ac(&s); /* checked below */
  rec_ref(&s);
  int repeat = B->repeat;
  if (n > 8192 && B->repeat > 5)
    B->repeat = 5;
  timing t = time_both(B, (runner){rec_ref, rec_ac, &s});
  B->repeat = repeat;
  double cells = (double)(n + 1) * (double)(n + 1);
  unsigned threads = ac_runtime_num_threads(B->rt);
  char size[64], mem[64], check[96];
  snprintf(size, sizeof size, "%lldx%lld", (long long)n, (long long)n);
  if (peak < 0)
    snprintf(mem, sizeof mem, "?");
  else
    snprintf(mem, sizeof mem, "%.1f (table %.0f)", peak / 1e6, 4.0 * cells / 1e6);
  if (ref_at)
    snprintf(check, sizeof check, "%s (%d at %lld, %lld)", rec_same(&s) ? "exact" : "DIFFERS",
             (int)s.result, (long long)s.at[0], (long long)s.at[1]);
  else
    snprintf(check, sizeof check, "%s (%d)", rec_same(&s) ? "exact" : "DIFFERS", (int)s.result);
  printf("| %-14s | %-11s | %9.1f | %9.1f | %5.2f | %8.2f | %6.3f | %6.3f | %-18s | %s |\n", name,
         size, 1e3 * t.ref, 1e3 * t.ac, t.ref / t.ac, t.ref / t.ac / (double)threads,
         cells / t.ref / 1e9, cells / t.ac / 1e9, mem, check);
  fflush(stdout);
  rec_teardown(&s, m);
}

/* --gpu-model: the kernels of a recurrence benchmark on one problem of
 * side 2 sqrt(size) (2048 x 2048 for the default 2^20), profiled. */
static void bench_rec_model(bench_ctx *B, const char *name, int64_t size, rec_ref_fn ref) {
  int64_t n = 2 * (int64_t)sqrt((double)size);
  rec_state s;
  rec_setup(&s, n, ref, NULL);
  int64_t ext[1] = {n};
  ac_module *m;
  s.f = compile(B, name, &m);
  s.args[0] = arr(B, AC_U8, 1, ext, s.s);
  s.args[1] = arr(B, AC_U8, 1, ext, s.t);
  rec_ac(&s);
  rec_ref(&s);
  char sz[64], check[96];
  snprintf(sz, sizeof sz, "%lldx%lld", (long long)n, (long long)n);
  snprintf(check, sizeof check, "%s", rec_same(&s) ? "exact" : "DIFFERS");
  profile_rows(name, sz, s.f, check, 0);
  rec_teardown(&s, m);
}

static void bench_edit_model(bench_ctx *B, int64_t size) {
  bench_rec_model(B, "edit_distance", size, ref_edit_distance);
}

static void bench_sw_model(bench_ctx *B, int64_t size) {
  bench_rec_model(B, "smith_waterman", size, ref_smith_waterman);
}

/* ---- a batch of protein alignments ---- */

typedef struct protein_state {
  ref_pairs pairs;
  int32_t *matrix, *ref_out, *ac_out;
  ac_function *f_scores;
  ac_datum args[4];
} protein_state;

static void protein_ref(void *ud) {
  protein_state *p = ud;
  if (!ref_pairs_scores(&p->pairs, p->matrix, 12, 1, p->ref_out))
    die("the protein batch", NULL);
}

static void protein_ac(void *ud) {
  protein_state *p = ud;
  ac_datum res;
  call(p->f_scores, p->args, 4, &res, 1);
  memcpy(p->ac_out, ac_array_data(res.array), (size_t)p->pairs.npairs * sizeof *p->ac_out);
  ac_datum_release(&res);
}

/* examples/recurrences/protein.ac's `scores` on npairs random pairs of
 * lengths 100..500 (Smith-Waterman, BLOSUM62, affine gaps 12/1), against
 * ref_protein_scores with the matrix the program's own blosum62() gives. */
static void bench_protein(bench_ctx *B, int64_t npairs) {
  protein_state p = {0};
  if (!ref_pairs_make(&p.pairs, npairs, 100, 500, rnd()))
    die("the protein batch", NULL);
  int64_t total_s = p.pairs.so[npairs], total_t = p.pairs.to[npairs];
  double cells = p.pairs.cells;
  p.ref_out = xmalloc((size_t)npairs * sizeof *p.ref_out);
  p.ac_out = xmalloc((size_t)npairs * sizeof *p.ac_out);
  /* the program and its matrix */
  ac_module *m = load(B, "../../examples/recurrences/protein");
  ac_function *fm = compile_fn(B, m, "blosum62", NULL);
  ac_datum mat;
  call(fm, NULL, 0, &mat, 1);
  p.matrix = xmalloc(21 * 21 * sizeof *p.matrix);
  memcpy(p.matrix, ac_array_data(mat.array), 21 * 21 * sizeof *p.matrix);
  ac_datum_release(&mat);
  ac_function_destroy(fm);
  p.f_scores = compile_fn(B, m, "scores", NULL);
  int64_t es[1] = {total_s}, et[1] = {total_t}, eo[1] = {npairs + 1};
  p.args[0] = arr(B, AC_U8, 1, es, p.pairs.s);
  p.args[1] = arr(B, AC_I64, 1, eo, p.pairs.so);
  p.args[2] = arr(B, AC_U8, 1, et, p.pairs.t);
  p.args[3] = arr(B, AC_I64, 1, eo, p.pairs.to);
  double peak = peak_growth(protein_ac, &p);
  protein_ref(&p);
  int64_t differ = 0;
  for (int64_t i = 0; i < npairs; i++)
    differ += p.ref_out[i] != p.ac_out[i];
  int repeat = B->repeat;
  if (B->repeat > 5)
    B->repeat = 5;
  timing t = time_both(B, (runner){protein_ref, protein_ac, &p});
  B->repeat = repeat;
  unsigned threads = ac_runtime_num_threads(B->rt);
  char size[64], mem[64], check[96];
  snprintf(size, sizeof size, "%lld pairs", (long long)npairs);
  if (peak < 0)
    snprintf(mem, sizeof mem, "?");
  else
    snprintf(mem, sizeof mem, "%.1f", peak / 1e6);
  if (differ)
    snprintf(check, sizeof check, "DIFFERS (%lld pairs)", (long long)differ);
  else
    snprintf(check, sizeof check, "exact");
  printf("| %-14s | %-11s | %9.1f | %9.1f | %5.2f | %8.2f | %6.3f | %6.3f | %-18s | %s |\n",
         "protein_batch", size, 1e3 * t.ref, 1e3 * t.ac, t.ref / t.ac,
         t.ref / t.ac / (double)threads, cells / t.ref / 1e9, cells / t.ac / 1e9, mem, check);
  fflush(stdout);
  release_all(p.args, 4);
  ac_function_destroy(p.f_scores);
  ac_module_destroy(m);
  ref_pairs_free(&p.pairs);
  free(p.matrix), free(p.ref_out), free(p.ac_out);
}

/* Edit distance and Smith-Waterman at 4096^2 and 16384^2 (their own table:
 * cells, not bytes, are what they move), and the protein batch. */
static void bench_recurrences(bench_ctx *B, const char *only) {
  static const char *const names[3] = {"edit_distance", "smith_waterman", "smith_waterman_at"};
  bool any = selected(only, "protein_batch");
  for (int i = 0; i < 3; i++)
    any = any || selected(only, names[i]);
  if (!any)
    return;
  printf("\nrecurrences: the reference is one thread of gcc -O3 -march=native walking the table "
         "row by row in two rows; arrayc's pool has %u threads (per core = ratio / threads); "
         "GCUPS = (n + 1)^2 cells per second; peak MB = how far the process's peak resident set "
         "rose during arrayc's first call on a fresh context and runtime (the table it would keep "
         "in parentheses). protein_batch: examples/recurrences/protein.ac's scores of 10000 random "
         "pairs of lengths 100-500 (Smith-Waterman, BLOSUM62, affine gaps), GCUPS = sum of n m "
         "over the pairs per second, peak MB during the first call\n\n",
         ac_runtime_num_threads(B->rt));
  printf("| benchmark      | size        |  ref ms   | arrayc ms | ratio | per core | ref GCUPS | ac GCUPS | ac peak MB | check |\n");
  printf("|----------------|-------------|-----------|-----------|-------|----------|--------|--------|------------|-------|\n");
  for (int i = 0; i < 3; i++) {
    if (!selected(only, names[i]))
      continue;
    for (int64_t n = 4096; n <= 16384; n *= 4)
      bench_rec(B, names[i], n, i == 0 ? ref_edit_distance : ref_smith_waterman,
                i == 2 ? ref_smith_waterman_at : NULL);
  }
  if (selected(only, "protein_batch"))
    bench_protein(B, 10000);
}

/* Whether NAME is in the comma-separated list `only` (NULL: everything). */
static bool selected(const char *only, const char *name) {
  if (!only)
    return true;
  size_t len = strlen(name);
  for (const char *p = only; *p;) {
    const char *end = strchr(p, ',');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    if (n == len && strncmp(p, name, len) == 0)
      return true;
    p += n + (end != NULL);
  }
  return false;
}

/* The emulated device of --gpu-model: H100-shaped (132 SMs, two resident
 * blocks of 256 threads each), unless the user's environment already
 * says otherwise. Set before the emulator runtime is created, which is
 * when the device reads them (runtime/simt_dev.c). */
#define GPU_MODEL_BLOCK "256"
#define GPU_MODEL_GRID "264"

/* A benchmark of either suite or both, in the order of the table. */
typedef struct bench_entry {
  const char *name;
  void (*run)(bench_ctx *, int64_t);
  bool cpu, gpu; /* in the CPU suite, in the GPU model */
} bench_entry;

static const bench_entry all_benches[] = {
    {"saxpy", bench_saxpy, true, true},
    {"sdot", bench_sdot, true, true},
    {"blackscholes", bench_blackscholes, true, true},
    {"prefix_sum", bench_prefix_sum, true, true},
    {"reduce_sum", bench_reduce_sum, false, true},
    {"row_sums", bench_row_sums, true, true},
    {"nested_row_sums", bench_nested_row_sums, true, false},
    {"spmv_csr", bench_spmv_csr, true, true},
    {"iterate", bench_iterate, false, true},
    {"rmse", bench_rmse, true, false},
    {"forward_diff", bench_forward_diff, true, true},
    {"ma15", bench_ma15, true, true},
    {"jacobi2d", bench_jacobi2d, true, true},
    {"edit_distance", bench_edit_model, false, true},
    {"smith_waterman", bench_sw_model, false, true},
};

/* Sets up the runtime for --gpu-model and prints the header. */
static void gpu_model_start(bench_ctx *B) {
  setenv("ARRAYC_SIMT_BLOCK", GPU_MODEL_BLOCK, 0);
  setenv("ARRAYC_SIMT_GRID", GPU_MODEL_GRID, 0);
  ac_error *e = NULL;
  if (ac_runtime_create(B->ctx, AC_BACKEND_SIMT_EMU, &B->rt, &e) != AC_OK)
    die("runtime", e);
  if (ac_runtime_set_profiling(B->rt, true, &e) != AC_OK)
    die("profiling", e);
  printf("GPU model: the GPU suite's kernels on the SIMT emulator, profiled; block %s threads "
         "(ARRAYC_SIMT_BLOCK), resident grid %s blocks (ARRAYC_SIMT_GRID), warps of 32, "
         "32-byte sectors, 32 banks of 4 bytes; passes %s, O2,smem-stencil for the (tile) rows and "
         "O2,-smem-stencil for the (no tile) rows\n\n",
         getenv("ARRAYC_SIMT_BLOCK"), getenv("ARRAYC_SIMT_GRID"), ac_runtime_passes(B->rt));
  printf("| benchmark              | size             | kernel             | launches | "
         "ld sect/req | st sect/req | bytes/min | smem confl/inst | lanes | barriers | atomics | "
         "check | notes |\n");
  printf("|------------------------|------------------|--------------------|---------:|"
         "------------:|------------:|----------:|----------------:|------:|---------:|--------:|"
         "-------|-------|\n");
}

int main(int argc, char **argv) {
  bench_ctx B = {.backend = AC_BACKEND_CPU, .repeat = 15, .rmse_time = {NAN, NAN}};
  int log2n = -1; /* -1: the mode's default */
  bool backend_given = false;
  const char *only = NULL;
  for (int i = 1; i < argc; i++) {
    if (strncmp(argv[i], "--backend=", 10) == 0) {
      if (!ac_backend_from_name(argv[i] + 10, &B.backend)) {
        fprintf(stderr, "arrayc-bench: unknown backend %s\n", argv[i] + 10);
        return 2;
      }
      backend_given = true;
    } else if (strcmp(argv[i], "--repeat") == 0 && i + 1 < argc) {
      B.repeat = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--log2") == 0 && i + 1 < argc) {
      log2n = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
      only = argv[++i];
    } else if (strcmp(argv[i], "--gpu-model") == 0) {
      B.gpu_model = true;
    } else {
      fprintf(stderr, "usage: arrayc-bench [--backend=NAME] [--repeat N] [--log2 K] "
                      "[--only NAME[,NAME...]]\n"
                      "       arrayc-bench --gpu-model [--log2 K] [--only NAME[,NAME...]]\n");
      return 2;
    }
  }
  if (B.gpu_model && backend_given && B.backend != AC_BACKEND_SIMT_EMU) {
    fprintf(stderr, "arrayc-bench: --gpu-model runs on the SIMT emulator (--backend=simt-emu)\n");
    return 2;
  }
  if (log2n == -1)
    log2n = B.gpu_model ? 20 : 24;
  if (B.repeat < 1 || log2n < 12 || log2n > 30) {
    fprintf(stderr, "arrayc-bench: --repeat must be >= 1 and --log2 in 12..30\n");
    return 2;
  }
  B.ctx = ac_context_create();
  if (B.gpu_model) {
    B.backend = AC_BACKEND_SIMT_EMU;
    gpu_model_start(&B);
  } else {
    ac_error *e = NULL;
    if (ac_runtime_create(B.ctx, B.backend, &B.rt, &e) != AC_OK)
      die("runtime", e);
  }
  snprintf(B.default_passes, sizeof B.default_passes, "%s", ac_runtime_passes(B.rt));
  if (!B.gpu_model) {
    B.bandwidth = measure_bandwidth();
    printf("memory bandwidth (STREAM triad, best of 10): %.1f GB/s; backend %s; passes %s; "
           "median of %d\n\n",
           B.bandwidth / 1e9, ac_backend_name(B.backend), B.default_passes, B.repeat);
    printf("| benchmark      | size             |  ref ms   | arrayc ms | ratio | ref GB/s | ac GB/s | of bw | check |\n");
    printf("|----------------|------------------|-----------|-----------|-------|--------|--------|------|-------|\n");
  }
  for (size_t i = 0; i < sizeof all_benches / sizeof all_benches[0]; i++) {
    const bench_entry *b = &all_benches[i];
    if (!(B.gpu_model ? b->gpu : b->cpu) || !selected(only, b->name))
      continue;
    double t0 = now();
    b->run(&B, (int64_t)1 << log2n);
    if (B.gpu_model)
      fprintf(stderr, "arrayc-bench: %s: %.1f s\n", b->name, now() - t0);
  }
  if (B.gpu_model) {
    ac_runtime_destroy(B.rt);
    ac_context_destroy(B.ctx);
    return 0;
  }
  if (!isnan(B.rmse_time[0]))
    printf("\nfusion speedup (rmse, unfused / fused arrayc time): %.2fx\n",
           B.rmse_time[1] / B.rmse_time[0]);
  bench_recurrences(&B, only);
  if (selected(only, "compile"))
    compile_latency(B.backend);
  if (selected(only, "compile-ptx"))
    compile_latency_ptx();
  ac_runtime_destroy(B.rt);
  ac_context_destroy(B.ctx);
  return 0;
}
