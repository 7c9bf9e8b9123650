/* bench/gpu/gpubench.h: what the parts of arrayc-gpubench share.
 *
 * arrayc-gpubench times arrayc's GPU backend against the CUDA toolkit's
 * libraries and hand-written CUDA on the same device and the same input
 * data, in one process. Its files:
 *   gpubench.cu  options, the device, the copy bandwidth, the table;
 *   measure.cu   timing (device events and host wall clock), results
 *                checks, the arrayc side (compiling and calling programs);
 *   kernels.cu   the hand-written CUDA references (Black-Scholes, vector
 *                CSR SpMV, the small kernel of the iterate loop, the
 *                neighbour reads: forward differences, the 15-point moving
 *                average, a 2-D Jacobi step);
 *   benches.cu   the benchmarks: data, checks, what is timed.
 *
 * It is a harness, not a library: failures are C++ exceptions (Failure)
 * caught per benchmark, so one broken benchmark becomes a FAILED row and
 * the others still run. Device and arrayc objects are held by small RAII
 * types so that an exception frees them.
 */
#ifndef ARRAYC_GPUBENCH_H
#define ARRAYC_GPUBENCH_H

#include "arrayc/arrayc.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

/* ---- failures ---- */
struct Failure : std::runtime_error {
  explicit Failure(const std::string &what) : std::runtime_error(what) {}
};

[[noreturn]] void cuda_fail(cudaError_t e, const char *expr, const char *file, int line);
[[noreturn]] void cublas_fail(cublasStatus_t s, const char *expr, const char *file, int line);
/* Turns an arrayc error into a Failure (destroying the error). */
[[noreturn]] void ac_fail(const std::string &what, ac_error *e);

#define CK(expr)                                                                                   \
  do {                                                                                             \
    cudaError_t ck_e_ = (expr);                                                                    \
    if (ck_e_ != cudaSuccess)                                                                      \
      cuda_fail(ck_e_, #expr, __FILE__, __LINE__);                                                 \
  } while (0)
/* After a kernel launch: launch errors now, execution errors at the next
 * synchronisation (which is also checked). */
#define CK_LAUNCH() CK(cudaGetLastError())
#define CKB(expr)                                                                                  \
  do {                                                                                             \
    cublasStatus_t ck_s_ = (expr);                                                                 \
    if (ck_s_ != CUBLAS_STATUS_SUCCESS)                                                            \
      cublas_fail(ck_s_, #expr, __FILE__, __LINE__);                                               \
  } while (0)

/* ---- device memory ---- */
/* One cudaMalloc'd array of n T, freed by the destructor (errors there are
 * ignored: after a sticky device error nothing can be freed anyway). */
template <class T> struct DevBuf {
  T *p = nullptr;
  size_t n = 0;
  DevBuf() = default;
  explicit DevBuf(size_t count) { alloc(count); }
  DevBuf(const DevBuf &) = delete;
  DevBuf &operator=(const DevBuf &) = delete;
  ~DevBuf() { release(); }
  void alloc(size_t count) {
    release();
    CK(cudaMalloc((void **)&p, (count ? count : 1) * sizeof(T)));
    n = count;
  }
  void release() {
    if (p)
      (void)cudaFree(p);
    p = nullptr;
    n = 0;
  }
  size_t bytes() const { return n * sizeof(T); }
  /* upload and poison run on the legacy default stream, with which the
   * references' non-blocking stream does not synchronise, and a copy from
   * pageable memory may return before its DMA is done: both wait for the
   * device before returning. download waits for the copy itself; callers
   * synchronise their stream first. */
  void upload(const T *src) {
    CK(cudaMemcpy(p, src, n * sizeof(T), cudaMemcpyHostToDevice));
    CK(cudaDeviceSynchronize());
  }
  void download(T *dst) const { CK(cudaMemcpy(dst, p, n * sizeof(T), cudaMemcpyDeviceToHost)); }
  std::vector<T> host() const {
    std::vector<T> v(n);
    download(v.data());
    return v;
  }
  /* Fills every byte with 0xff (NaN for floats, -1 for integers), so an
   * element the reference fails to write shows up in the check. */
  void poison() {
    CK(cudaMemset(p, 0xff, n * sizeof(T)));
    CK(cudaDeviceSynchronize());
  }
};

/* ---- the run ---- */
struct Options {
  int log2n = 26;
  int repeat = 31;
  std::vector<std::string> only; /* empty: all */
  std::string out;               /* --out FILE ("" : stdout only) */
  std::string programs;          /* directory of the .ac programs */
};

struct Env {
  Options opt;
  int device = 0;
  cudaDeviceProp prop{};
  cudaStream_t stream = nullptr;       /* the references' stream */
  cublasHandle_t blas = nullptr;       /* nullptr if cublasCreate failed */
  std::string blas_error;              /* why, then */
  double copy_bw = NAN;                /* measured D2D copy, bytes per second (read + written) */
  ac_context *ctx = nullptr;           /* arrayc's context */
  ac_backend backend = AC_BACKEND_GPU; /* arrayc's side (another only to test the harness) */
  ac_runtime *rt = nullptr;            /* every program is compiled on it; made on first use */
  std::string default_passes;          /* rt's pipeline as created (O2) */
  std::vector<std::string> notes;      /* lines printed after the table (the tile speedups) */
};

/* ---- timing ---- */
double now_s();                           /* monotonic host clock, seconds */
double median(std::vector<double> v);     /* NaN for an empty vector */

/* A reference operation: queues its work on E.stream and returns. */
using RefOp = std::function<void()>;
/* An arrayc operation: one call, returning when its results are ready. */
using AcOp = std::function<void()>;

struct RefTime {
  double events = NAN; /* median seconds between events around the op on E.stream */
  double wall = NAN;   /* median seconds of host wall clock around op + cudaStreamSynchronize */
};
/* Warm-up (at least 3 runs and 0.2 s), then E.opt.repeat runs timed with
 * events, then E.opt.repeat runs timed with the wall clock. */
RefTime time_ref(Env &E, const RefOp &op, int repeat);
/* Warm-up as above, then `repeat` calls timed with the wall clock. */
double time_ac(Env &E, const AcOp &op, int repeat);

/* ---- the arrayc side ---- */
/* One program of bench/programs compiled for E.backend (the GPU) on E.rt,
 * with pass pipeline `passes` (nullptr: the runtime's default, O2). One
 * runtime serves every program, so the arrays one program's calls made
 * resident on the device serve the others too. */
struct AcProgram {
  ac_module *m = nullptr;
  ac_function *f = nullptr;
  AcProgram(Env &E, const std::string &name); /* NAME.ac, function NAME, default passes */
  AcProgram(Env &E, const std::string &file, const std::string &fn, const char *passes);
  AcProgram(const AcProgram &) = delete;
  AcProgram &operator=(const AcProgram &) = delete;
  ~AcProgram();
  /* Calls f; results go to res (res.size() leaves). */
  void call(const std::vector<ac_datum> &args, std::vector<ac_datum> &res) const;
};

/* Datums the harness owns: released (arrays) by the destructor. */
struct AcData {
  std::vector<ac_datum> d;
  AcData() = default;
  explicit AcData(size_t n) : d(n) {}
  AcData(const AcData &) = delete;
  AcData &operator=(const AcData &) = delete;
  ~AcData() { clear(); }
  void clear() {
    for (auto &x : d)
      ac_datum_release(&x);
    d.clear();
  }
};

/* A host array for arrayc (copied from `data`): the argument datum. */
ac_datum ac_array_arg(Env &E, ac_scalar t, unsigned rank, const int64_t *extents, const void *data);
ac_datum ac_array_arg(Env &E, ac_scalar t, int64_t n, const void *data); /* a vector */
ac_datum ac_f32_arg(float x);
ac_datum ac_i32_arg(int32_t x);
/* Host elements of a result array (fetched from the device on first use). */
const void *ac_result_data(const ac_datum &d, const char *what);

/* ---- checks ---- */
/* Largest |a - b| / max(1, |a|, |b|); infinity if any is NaN (as bench.c). */
double max_rel_diff(const float *a, const float *b, int64_t n);

/* ---- results ---- */
struct Goal {
  double min_ratio = 0;      /* reference time / arrayc time at least this (0: none) */
  double min_copy_frac = 0;  /* arrayc bandwidth / copy bandwidth at least this (0: none) */
  double max_iter_us = 0;    /* per loop iteration at most this (0: none) */
  std::string text() const;
};

struct Row {
  std::string name, size, reference;
  double bytes = 0;     /* bytes counted per run (0: not bandwidth-bound; no GB/s) */
  bool per_iter = false; /* times are per loop iteration (the iterate row) */
  double ac = NAN;      /* arrayc, wall clock, seconds (median) */
  RefTime ref;
  std::string check;    /* how the check went */
  bool check_ok = false;
  std::string error;    /* why a side is missing */
  Goal goal;
};

/* The table: header and separator, one line per row. */
std::string table_header();
std::string table_row(const Env &E, const Row &r);

/* ---- the references (kernels.cu) ---- */
void ref_blackscholes(cudaStream_t s, int64_t n, const float *S, const float *X, const float *T,
                      float r, float v, float *call, float *put);
void ref_spmv_csr_vector(cudaStream_t s, int64_t rows, const int64_t *rowptr, const int32_t *cols,
                         const float *vals, const float *x, float *y);
void ref_iterate_map(cudaStream_t s, int n, int steps, float *a, float *b, float **result);
/* steps of: *sum = sum of x; y = x * 0.5 + *sum * 0.0001 (bench/programs/iterate_fold.ac) */
void ref_iterate_fold(cudaStream_t s, int n, int steps, float *a, float *b, float *sum,
                      float **result);
/* out[i] = x[i + 1] - x[i] for i < n - 1 */
void ref_forward_diff(cudaStream_t s, int64_t n, const float *x, float *out);
/* out[i] = sum over k < 15 of w[k] * x[i + k] for i < n - 14 (bench/programs/ma15.ac) */
void ref_ma15(cudaStream_t s, int64_t n, const float *x, float *out);
/* one Jacobi step over a rows x cols grid, zero boundary (bench/programs/jacobi2d.ac) */
void ref_jacobi2d(cudaStream_t s, int64_t rows, int64_t cols, const float *g, float *out);

/* ---- the benchmarks (benches.cu) ---- */
struct Benchmark {
  const char *name;
  /* Fills rows, which holds one row named `name` on entry; a benchmark
   * with variants (with and without shared-memory tiles) renames it and
   * appends one row per further variant. Throws Failure for what it
   * cannot do. */
  void (*run)(Env &E, std::vector<Row> &rows);
};
const std::vector<Benchmark> &all_benchmarks();

#endif
