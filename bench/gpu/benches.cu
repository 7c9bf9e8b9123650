/* bench/gpu/benches.cu: the benchmarks of arrayc-gpubench.
 *
 * Each builds its input data once on the host (the generators and value
 * ranges of bench/bench.c, so the CPU and GPU suites measure the same
 * problems), then, in this order:
 *   1. the reference: the data copied to device buffers of its own, one run,
 *      its output (poisoned first) read back;
 *   2. arrayc: the program bench/programs/NAME.ac compiled for the GPU, the
 *      same host data as its arguments (the first call makes them resident
 *      on the device, where they stay), one call, its results read back;
 *   3. the check of arrayc's results against the reference's, with the
 *      tolerances of bench.c (float sums also against a double-precision
 *      sum on the host);
 *   4. the timing (measure.cu): the reference, then arrayc.
 * A side that fails is recorded in the row and the rest goes on: a
 * reference that fails still leaves arrayc's time, and the reverse.
 *
 * Bytes counted per run are those of bench.c (each input read once, each
 * output written once); the goals are those of issue 4.
 *
 * The neighbour benchmarks (forward_diff, ma15, jacobi2d) run arrayc twice,
 * with the default pipeline, whose smem-stencil pass stages the input in
 * shared-memory tiles, and without that pass, against one hand-written
 * kernel; their rows are "NAME (tile)" and "NAME (no tile)", and the tile
 * speedup is a note under the table.
 */
#include "gpubench.h"

#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>

#include <cstdio>
#include <cstring>
#include <memory>

namespace {

/* xorshift64*, as bench.c: deterministic data for every run */
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed * 0x9e3779b97f4a7c15ull + 1) {}
  uint64_t next() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 0x2545f4914f6cdd1dull;
  }
  float uniform(float lo, float hi) {
    return lo + (hi - lo) * (float)((double)(next() >> 11) / 9007199254740992.0);
  }
};

std::string pow2(int64_t n) {
  int k = 0;
  while (((int64_t)1 << k) < n)
    k++;
  char buf[32];
  if (((int64_t)1 << k) == n)
    snprintf(buf, sizeof buf, "n=2^%d", k);
  else
    snprintf(buf, sizeof buf, "n=%lld", (long long)n);
  return buf;
}

void progress(const Row &r, const char *what) {
  fprintf(stderr, "arrayc-gpubench: %s: %s\n", r.name.c_str(), what);
}

/* Runs f; a Failure becomes "SIDE: message" in r.error. */
bool attempt(Row &r, const char *side, const std::function<void()> &f) {
  try {
    f();
    return true;
  } catch (const Failure &e) {
    fprintf(stderr, "arrayc-gpubench: %s: %s: %s\n", r.name.c_str(), side, e.what());
    if (!r.error.empty())
      r.error += "; ";
    r.error += std::string(side) + ": " + e.what();
    return false;
  }
}

void need_blas(const Env &E) {
  if (!E.blas)
    throw Failure("cuBLAS is not available: " + E.blas_error);
}

/* The relative error of a float sum against the exact one. */
double rel_err(double got, double exact) {
  return std::fabs(got - exact) / std::fmax(std::fabs(exact), 1e-30);
}

/* A check of two float vectors: identical, or within tol. */
void check_floats(Row &r, const std::vector<float> &got, const std::vector<float> &want,
                  double tol) {
  double d = max_rel_diff(got.data(), want.data(), (int64_t)want.size());
  char buf[96];
  if (d == 0)
    snprintf(buf, sizeof buf, "exact");
  else
    snprintf(buf, sizeof buf, "%s (rel %.1e)", d <= tol ? "ok" : "DIFFERS", d);
  r.check = buf;
  r.check_ok = d <= tol;
}

std::vector<float> host_floats(const ac_datum &d, int64_t n, const char *what) {
  const float *p = (const float *)ac_result_data(d, what);
  return std::vector<float>(p, p + n);
}

/* Times both sides that work: the reference, then arrayc. */
void time_both(Env &E, Row &r, bool ref_ok, const RefOp &ref, bool ac_ok, const AcOp &ac) {
  if (ref_ok) {
    progress(r, "timing the reference");
    attempt(r, "reference (timing)", [&] { r.ref = time_ref(E, ref, E.opt.repeat); });
  }
  if (ac_ok) {
    progress(r, "timing arrayc");
    attempt(r, "arrayc (timing)", [&] { r.ac = time_ac(E, ac, E.opt.repeat); });
  }
}

/* ---- SAXPY: z = a * x + y ---- */
void bench_saxpy(Env &E, Row &r) {
  const int64_t n = (int64_t)1 << E.opt.log2n;
  const float alpha = 2.5f;
  r.size = pow2(n);
  r.reference = "cuBLAS Saxpy";
  r.bytes = 12.0 * (double)n;
  r.goal.min_ratio = 1.0;
  r.goal.min_copy_frac = 0.90;
  Rng g(1);
  std::vector<float> x(n), y(n);
  for (int64_t i = 0; i < n; i++) {
    x[i] = g.uniform(-1, 1);
    y[i] = g.uniform(-1, 1);
  }
  /* cublasSaxpy updates y in place: it works on z, a copy of y, which the
   * timed runs keep updating (the values stay small: |z| < 2.5 * runs) */
  DevBuf<float> dx, dy, dz;
  std::vector<float> want, got;
  bool ref_ok = attempt(r, "reference", [&] {
    need_blas(E);
    dx.alloc(n), dy.alloc(n), dz.alloc(n);
    dx.upload(x.data()), dy.upload(y.data());
    dz.poison();
    CK(cudaMemcpyAsync(dz.p, dy.p, dy.bytes(), cudaMemcpyDeviceToDevice, E.stream));
    CKB(cublasSaxpy(E.blas, (int)n, &alpha, dx.p, 1, dz.p, 1));
    CK(cudaStreamSynchronize(E.stream));
    want = dz.host();
  });
  std::unique_ptr<AcProgram> P;
  AcData args;
  bool ac_ok = attempt(r, "arrayc", [&] {
    P.reset(new AcProgram(E, "saxpy"));
    args.d.push_back(ac_f32_arg(alpha));
    args.d.push_back(ac_array_arg(E, AC_F32, n, x.data()));
    args.d.push_back(ac_array_arg(E, AC_F32, n, y.data()));
    AcData res(1);
    P->call(args.d, res.d);
    got = host_floats(res.d[0], n, "saxpy");
  });
  if (ref_ok && ac_ok)
    check_floats(r, got, want, 1e-6); /* fused or not, one rounding apart */
  time_both(
      E, r, ref_ok, [&] { CKB(cublasSaxpy(E.blas, (int)n, &alpha, dx.p, 1, dz.p, 1)); }, ac_ok,
      [&] {
        AcData res(1);
        P->call(args.d, res.d);
      });
}

/* cuBLAS returns dot products to device memory for the time of a guard,
 * so that the timed runs queue only the kernels (no copy to the host). */
struct DevicePointerMode {
  cublasHandle_t h;
  explicit DevicePointerMode(cublasHandle_t handle) : h(handle) {
    CKB(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_DEVICE));
  }
  ~DevicePointerMode() { (void)cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST); }
};

/* ---- SDOT ---- */
void bench_sdot(Env &E, Row &r) {
  const int64_t n = (int64_t)1 << E.opt.log2n;
  r.size = pow2(n);
  r.reference = "cuBLAS Sdot";
  r.bytes = 8.0 * (double)n;
  r.goal.min_ratio = 1.0;
  r.goal.min_copy_frac = 0.90;
  Rng g(2);
  std::vector<float> x(n), y(n);
  double exact = 0;
  for (int64_t i = 0; i < n; i++) {
    x[i] = g.uniform(0, 1);
    y[i] = g.uniform(0, 1);
    exact += (double)x[i] * (double)y[i];
  }
  DevBuf<float> dx, dy, dres;
  std::unique_ptr<DevicePointerMode> mode;
  float want = NAN;
  bool ref_ok = attempt(r, "reference", [&] {
    need_blas(E);
    dx.alloc(n), dy.alloc(n), dres.alloc(1);
    dx.upload(x.data()), dy.upload(y.data());
    dres.poison();
    mode.reset(new DevicePointerMode(E.blas));
    CKB(cublasSdot(E.blas, (int)n, dx.p, 1, dy.p, 1, dres.p));
    CK(cudaStreamSynchronize(E.stream));
    dres.download(&want);
  });
  std::unique_ptr<AcProgram> P;
  AcData args;
  double got = NAN;
  bool ac_ok = attempt(r, "arrayc", [&] {
    P.reset(new AcProgram(E, "sdot"));
    args.d.push_back(ac_array_arg(E, AC_F32, n, x.data()));
    args.d.push_back(ac_array_arg(E, AC_F32, n, y.data()));
    AcData res(1);
    P->call(args.d, res.d);
    got = res.d[0].s.f;
  });
  if (ac_ok) {
    /* against the double-precision sum, as bench.c, with cuBLAS's error */
    double d = rel_err(got, exact), dref = rel_err(want, exact);
    char buf[96];
    snprintf(buf, sizeof buf, "%s (rel %.1e, ref %.1e)", d < 1e-3 ? "ok" : "DIFFERS", d, dref);
    r.check = buf;
    r.check_ok = d < 1e-3;
  }
  time_both(
      E, r, ref_ok, [&] { CKB(cublasSdot(E.blas, (int)n, dx.p, 1, dy.p, 1, dres.p)); }, ac_ok,
      [&] {
        AcData res(1);
        P->call(args.d, res.d);
      });
}

/* ---- Black-Scholes ---- */
void bench_blackscholes(Env &E, Row &r) {
  const int64_t n = (int64_t)1 << E.opt.log2n;
  const float rate = 0.02f, vol = 0.30f;
  r.size = pow2(n);
  r.reference = "hand-written CUDA";
  r.bytes = 20.0 * (double)n;
  r.goal.min_ratio = 0.95;
  Rng g(3);
  std::vector<float> s(n), x(n), t(n);
  for (int64_t i = 0; i < n; i++) {
    s[i] = g.uniform(5, 30);
    x[i] = g.uniform(1, 100);
    t[i] = g.uniform(0.25f, 10);
  }
  DevBuf<float> ds, dx, dt, dc, dp;
  std::vector<float> want_c, want_p;
  bool ref_ok = attempt(r, "reference", [&] {
    ds.alloc(n), dx.alloc(n), dt.alloc(n), dc.alloc(n), dp.alloc(n);
    ds.upload(s.data()), dx.upload(x.data()), dt.upload(t.data());
    dc.poison(), dp.poison();
    ref_blackscholes(E.stream, n, ds.p, dx.p, dt.p, rate, vol, dc.p, dp.p);
    CK(cudaStreamSynchronize(E.stream));
    want_c = dc.host();
    want_p = dp.host();
  });
  std::unique_ptr<AcProgram> P;
  AcData args;
  std::vector<float> got_c, got_p;
  bool ac_ok = attempt(r, "arrayc", [&] {
    P.reset(new AcProgram(E, "blackscholes"));
    args.d.push_back(ac_array_arg(E, AC_F32, n, s.data()));
    args.d.push_back(ac_array_arg(E, AC_F32, n, x.data()));
    args.d.push_back(ac_array_arg(E, AC_F32, n, t.data()));
    args.d.push_back(ac_f32_arg(rate));
    args.d.push_back(ac_f32_arg(vol));
    AcData res(2);
    P->call(args.d, res.d);
    got_c = host_floats(res.d[0], n, "call prices");
    got_p = host_floats(res.d[1], n, "put prices");
  });
  if (ref_ok && ac_ok) {
    /* libdevice and CUDA's expf/logf may round differently (bench.c: 1e-4) */
    double d = std::fmax(max_rel_diff(got_c.data(), want_c.data(), n),
                         max_rel_diff(got_p.data(), want_p.data(), n));
    char buf[96];
    snprintf(buf, sizeof buf, "%s (rel %.1e)", d < 1e-4 ? "ok" : "DIFFERS", d);
    r.check = buf;
    r.check_ok = d < 1e-4;
  }
  time_both(
      E, r, ref_ok,
      [&] { ref_blackscholes(E.stream, n, ds.p, dx.p, dt.p, rate, vol, dc.p, dp.p); }, ac_ok,
      [&] {
        AcData res(2);
        P->call(args.d, res.d);
      });
}

/* CUB's temporary storage, sized by the first (query) call. */
struct CubTemp {
  DevBuf<unsigned char> buf;
  size_t bytes = 0;
};

/* ---- inclusive prefix sum of i32 ---- */
void bench_prefix_sum(Env &E, Row &r) {
  const int64_t n = (int64_t)1 << E.opt.log2n;
  r.size = pow2(n);
  r.reference = "CUB DeviceScan::InclusiveSum";
  r.bytes = 8.0 * (double)n;
  r.goal.min_ratio = 0.95;
  r.goal.min_copy_frac = 0.90;
  Rng g(4);
  std::vector<int32_t> x(n);
  for (int64_t i = 0; i < n; i++)
    x[i] = (int32_t)(g.next() % 1000) - 500;
  DevBuf<int32_t> dx, dy;
  CubTemp tmp;
  std::vector<int32_t> want;
  auto scan = [&] {
    CK(cub::DeviceScan::InclusiveSum(tmp.buf.p, tmp.bytes, dx.p, dy.p, n, E.stream));
  };
  bool ref_ok = attempt(r, "reference", [&] {
    dx.alloc(n), dy.alloc(n);
    dx.upload(x.data());
    dy.poison();
    CK(cub::DeviceScan::InclusiveSum(nullptr, tmp.bytes, dx.p, dy.p, n, E.stream));
    tmp.buf.alloc(tmp.bytes);
    scan();
    CK(cudaStreamSynchronize(E.stream));
    want = dy.host();
  });
  std::unique_ptr<AcProgram> P;
  AcData args;
  bool ac_ok = attempt(r, "arrayc", [&] {
    P.reset(new AcProgram(E, "prefix_sum"));
    args.d.push_back(ac_array_arg(E, AC_I32, n, x.data()));
    AcData res(1);
    P->call(args.d, res.d);
    const void *p = ac_result_data(res.d[0], "prefix sums");
    if (ref_ok) {
      r.check_ok = memcmp(p, want.data(), (size_t)n * sizeof(int32_t)) == 0;
      r.check = r.check_ok ? "exact" : "DIFFERS";
    }
  });
  time_both(E, r, ref_ok, scan, ac_ok, [&] {
    AcData res(1);
    P->call(args.d, res.d);
  });
}

/* ---- full reduction: the sum of f32 ---- */
void bench_reduce_sum(Env &E, Row &r) {
  const int64_t n = (int64_t)1 << E.opt.log2n;
  r.size = pow2(n);
  r.reference = "CUB DeviceReduce::Sum";
  r.bytes = 4.0 * (double)n;
  r.goal.min_ratio = 0.95;
  r.goal.min_copy_frac = 0.90;
  Rng g(5);
  std::vector<float> x(n);
  double exact = 0;
  for (int64_t i = 0; i < n; i++) {
    x[i] = g.uniform(0, 1);
    exact += x[i];
  }
  DevBuf<float> dx, dsum;
  CubTemp tmp;
  float want = NAN;
  auto reduce = [&] { CK(cub::DeviceReduce::Sum(tmp.buf.p, tmp.bytes, dx.p, dsum.p, n, E.stream)); };
  bool ref_ok = attempt(r, "reference", [&] {
    dx.alloc(n), dsum.alloc(1);
    dx.upload(x.data());
    dsum.poison();
    CK(cub::DeviceReduce::Sum(nullptr, tmp.bytes, dx.p, dsum.p, n, E.stream));
    tmp.buf.alloc(tmp.bytes);
    reduce();
    CK(cudaStreamSynchronize(E.stream));
    dsum.download(&want);
  });
  std::unique_ptr<AcProgram> P;
  AcData args;
  double got = NAN;
  bool ac_ok = attempt(r, "arrayc", [&] {
    P.reset(new AcProgram(E, "reduce_sum"));
    args.d.push_back(ac_array_arg(E, AC_F32, n, x.data()));
    AcData res(1);
    P->call(args.d, res.d);
    got = res.d[0].s.f;
  });
  if (ac_ok) {
    double d = rel_err(got, exact), dref = rel_err(want, exact);
    char buf[96];
    snprintf(buf, sizeof buf, "%s (rel %.1e, ref %.1e)", d < 1e-3 ? "ok" : "DIFFERS", d, dref);
    r.check = buf;
    r.check_ok = d < 1e-3;
  }
  time_both(E, r, ref_ok, reduce, ac_ok, [&] {
    AcData res(1);
    P->call(args.d, res.d);
  });
}

/* ---- SpMV, CSR: 8 to 24 entries per row (16 on average), square ---- */
void bench_spmv_csr(Env &E, Row &r) {
  const int64_t rows = ((int64_t)1 << E.opt.log2n) / 16;
  Rng g(6);
  std::vector<int64_t> lens(rows), rowptr(rows + 1);
  rowptr[0] = 0;
  for (int64_t i = 0; i < rows; i++) {
    lens[i] = 8 + (int64_t)(g.next() % 17);
    rowptr[i + 1] = rowptr[i] + lens[i];
  }
  const int64_t nnz = rowptr[rows];
  std::vector<int32_t> cols(nnz);
  std::vector<float> vals(nnz), x(rows);
  for (int64_t k = 0; k < nnz; k++) {
    cols[k] = (int32_t)(g.next() % (uint64_t)rows);
    vals[k] = g.uniform(-1, 1);
  }
  for (int64_t i = 0; i < rows; i++)
    x[i] = g.uniform(-1, 1);
  char size[64];
  snprintf(size, sizeof size, "nnz=%.1fM, rows=%s", (double)nnz / 1e6, pow2(rows).substr(2).c_str());
  r.size = size;
  r.reference = "hand-written CUDA (vector CSR)";
  /* values, columns, one vector element per entry; row pointers, y */
  r.bytes = 12.0 * (double)nnz + 16.0 * (double)rows;
  r.goal.min_copy_frac = 0.90;
  DevBuf<int64_t> drowptr;
  DevBuf<int32_t> dcols;
  DevBuf<float> dvals, dx, dy;
  std::vector<float> want, got;
  bool ref_ok = attempt(r, "reference", [&] {
    drowptr.alloc(rows + 1), dcols.alloc(nnz), dvals.alloc(nnz), dx.alloc(rows), dy.alloc(rows);
    drowptr.upload(rowptr.data()), dcols.upload(cols.data()), dvals.upload(vals.data());
    dx.upload(x.data());
    dy.poison();
    ref_spmv_csr_vector(E.stream, rows, drowptr.p, dcols.p, dvals.p, dx.p, dy.p);
    CK(cudaStreamSynchronize(E.stream));
    want = dy.host();
  });
  std::unique_ptr<AcProgram> P;
  AcData args;
  bool ac_ok = attempt(r, "arrayc", [&] {
    P.reset(new AcProgram(E, "spmv_csr"));
    args.d.push_back(ac_array_arg(E, AC_I64, rows, lens.data()));
    args.d.push_back(ac_array_arg(E, AC_I32, nnz, cols.data()));
    args.d.push_back(ac_array_arg(E, AC_F32, nnz, vals.data()));
    args.d.push_back(ac_array_arg(E, AC_F32, rows, x.data()));
    AcData res(1);
    P->call(args.d, res.d);
    got = host_floats(res.d[0], rows, "y");
  });
  if (ref_ok && ac_ok)
    check_floats(r, got, want, 1e-4);
  time_both(
      E, r, ref_ok,
      [&] { ref_spmv_csr_vector(E.stream, rows, drowptr.p, dcols.p, dvals.p, dx.p, dy.p); },
      ac_ok, [&] {
        AcData res(1);
        P->call(args.d, res.d);
      });
}

/* ---- neighbour reads, with and without shared-memory tiles ----
 * One f32 array in, one out, every element reading the input at a few
 * constant offsets: the programs of test/lit/passes/Inputs that the
 * smem-stencil pass tiles. A 2-D grid is square (8192 x 8192 for 2^26). */
struct NbrSpec {
  const char *name, *file, *fn; /* rows, programs/FILE.ac, function */
  bool grid;                    /* a 2-D grid of 2^K cells (else a vector) */
  int64_t shrink;               /* output elements fewer than input's */
  uint64_t seed;
  double tol; /* check_floats's */
  void (*ref)(cudaStream_t s, const int64_t *ext, const float *in, float *out);
};

/* The default pipeline with smem-stencil (in no default pipeline since
 * the first H200 run, docs/passes.md §2): tiles; and without: none. */
const char *const kTile = "O2,smem-stencil";
const char *const kNoTile = "O2,-smem-stencil";

void bench_neighbours(Env &E, std::vector<Row> &rows, const NbrSpec &sp) {
  const int64_t n = (int64_t)1 << E.opt.log2n;
  int64_t ext[2] = {n, 1};
  std::string size = pow2(n);
  if (sp.grid) {
    ext[1] = (int64_t)1 << ((E.opt.log2n + 1) / 2);
    ext[0] = n / ext[1];
    size = std::to_string(ext[0]) + "x" + std::to_string(ext[1]);
  }
  const unsigned rank = sp.grid ? 2 : 1;
  const int64_t nout = n - sp.shrink;
  rows.resize(2);
  const char *variant[2] = {" (tile)", " (no tile)"};
  for (int v = 0; v < 2; v++) {
    rows[v].name = std::string(sp.name) + variant[v];
    rows[v].size = size;
    rows[v].reference = "hand-written CUDA (global memory)";
    rows[v].bytes = 4.0 * (double)(n + nout);
  }
  Rng g(sp.seed);
  std::vector<float> x(n);
  for (int64_t i = 0; i < n; i++)
    x[i] = g.uniform(-1, 1);
  DevBuf<float> din, dout;
  std::vector<float> want;
  auto ref = [&] { sp.ref(E.stream, ext, din.p, dout.p); };
  bool ref_ok = attempt(rows[0], "reference", [&] {
    din.alloc(n), dout.alloc(nout);
    din.upload(x.data());
    dout.poison();
    ref();
    CK(cudaStreamSynchronize(E.stream));
    want = dout.host();
  });
  if (!ref_ok)
    rows[1].error = rows[0].error;
  AcData args; /* one array for both: resident after the first call */
  for (int v = 0; v < 2; v++) {
    Row &r = rows[v];
    std::unique_ptr<AcProgram> P;
    std::vector<float> got;
    bool ac_ok = attempt(r, "arrayc", [&] {
      P.reset(new AcProgram(E, sp.file, sp.fn, v == 0 ? kTile : kNoTile));
      if (args.d.empty())
        args.d.push_back(ac_array_arg(E, AC_F32, rank, ext, x.data()));
      AcData res(1);
      P->call(args.d, res.d);
      if (res.d[0].kind != AC_DATUM_ARRAY || ac_array_size(res.d[0].array) != nout)
        throw Failure("arrayc: the result does not have " + std::to_string(nout) + " elements");
      got = host_floats(res.d[0], nout, "the result");
    });
    if (ref_ok && ac_ok)
      check_floats(r, got, want, sp.tol);
    /* the reference is timed once, with the first row */
    time_both(E, r, v == 0 && ref_ok, ref, ac_ok, [&] {
      AcData res(1);
      P->call(args.d, res.d);
    });
  }
  rows[1].ref = rows[0].ref;
  char note[160];
  if (std::isnan(rows[0].ac) || std::isnan(rows[1].ac))
    snprintf(note, sizeof note, "tile speedup, %s: — (a variant failed)", sp.name);
  else
    snprintf(note, sizeof note,
             "tile speedup, %s: %.2f× (arrayc without smem-stencil / with: %.3f / %.3f ms)",
             sp.name, rows[1].ac / rows[0].ac, 1e3 * rows[1].ac, 1e3 * rows[0].ac);
  E.notes.push_back(note);
}

/* Forward differences round once, like the reference; the sums may
 * differ by a rounding per term (contraction into FMAs, order). */
void forward_diff_ref(cudaStream_t s, const int64_t *ext, const float *in, float *out) {
  ref_forward_diff(s, ext[0], in, out);
}
void ma15_ref(cudaStream_t s, const int64_t *ext, const float *in, float *out) {
  ref_ma15(s, ext[0], in, out);
}
void jacobi2d_ref(cudaStream_t s, const int64_t *ext, const float *in, float *out) {
  ref_jacobi2d(s, ext[0], ext[1], in, out);
}
const NbrSpec kForwardDiff = {"forward_diff", "forward_diff", "forward_diff", false, 1, 8, 0,
                              forward_diff_ref};
const NbrSpec kMa15 = {"ma15", "ma15", "ma15", false, 14, 9, 1e-5, ma15_ref};
const NbrSpec kJacobi2d = {"jacobi2d", "jacobi2d", "jacobi", true, 0, 10, 1e-6, jacobi2d_ref};

void bench_forward_diff(Env &E, std::vector<Row> &rows) {
  bench_neighbours(E, rows, kForwardDiff);
}
void bench_ma15(Env &E, std::vector<Row> &rows) {
  bench_neighbours(E, rows, kMa15);
}
void bench_jacobi2d(Env &E, std::vector<Row> &rows) {
  bench_neighbours(E, rows, kJacobi2d);
}

/* ---- array loops over small kernels ----
 * The cost of one iteration is the difference between calls of S2 and S1
 * steps over S2 - S1, so the per-call costs cancel out. `ref(steps, &last)`
 * runs the reference loop from the input in da (db the other buffer) and
 * leaves where its result is. */
template <typename Ref>
void bench_loop(Env &E, Row &r, const char *program, const char *reference, double tol,
                DevBuf<float> &da, DevBuf<float> &db, Ref ref) {
  const int n = 4096, s1 = 10, s2 = 1010;
  r.size = "n=2^12, 1000 steps";
  r.reference = reference;
  r.per_iter = true;
  r.goal.max_iter_us = 10;
  Rng g(7);
  std::vector<float> x(n);
  for (int i = 0; i < n; i++)
    x[i] = g.uniform(0, 10);
  float *last = nullptr;
  std::vector<float> want(n), got;
  bool ref_ok = attempt(r, "reference", [&] {
    da.alloc(n), db.alloc(n);
    da.upload(x.data());
    db.poison();
    ref(s1, &last);
    CK(cudaStreamSynchronize(E.stream));
    CK(cudaMemcpy(want.data(), last, n * sizeof(float), cudaMemcpyDeviceToHost));
  });
  std::unique_ptr<AcProgram> P;
  AcData args;
  bool ac_ok = attempt(r, "arrayc", [&] {
    P.reset(new AcProgram(E, program));
    args.d.push_back(ac_array_arg(E, AC_F32, n, x.data()));
    args.d.push_back(ac_i32_arg(s1));
    AcData res(1);
    P->call(args.d, res.d);
    got = host_floats(res.d[0], n, "the loop's result");
  });
  if (ref_ok && ac_ok)
    check_floats(r, got, want, tol);
  /* the timed reference runs overwrite da: the values converge, the time
   * does not depend on them */
  RefTime t1, t2;
  if (ref_ok) {
    progress(r, "timing the reference");
    attempt(r, "reference (timing)", [&] {
      t1 = time_ref(E, [&] { ref(s1, &last); }, E.opt.repeat);
      t2 = time_ref(E, [&] { ref(s2, &last); }, E.opt.repeat);
      r.ref.events = (t2.events - t1.events) / (s2 - s1);
      r.ref.wall = (t2.wall - t1.wall) / (s2 - s1);
    });
  }
  if (ac_ok) {
    progress(r, "timing arrayc");
    attempt(r, "arrayc (timing)", [&] {
      auto call = [&] {
        AcData res(1);
        P->call(args.d, res.d);
      };
      double a1 = time_ac(E, call, E.opt.repeat);
      args.d[1] = ac_i32_arg(s2);
      double a2 = time_ac(E, call, E.opt.repeat);
      r.ac = (a2 - a1) / (s2 - s1);
    });
  }
}

/* One map per step: a launch per step (no graph: one kernel). */
void bench_iterate(Env &E, Row &r) {
  DevBuf<float> da, db;
  bench_loop(E, r, "iterate_map", "CUDA launch loop", 1e-5, da, db, [&](int steps, float **last) {
    ref_iterate_map(E.stream, 4096, steps, da.p, db.p, last);
  });
}

/* A fold and a map per step: one CUDA graph per step once it repeats. */
void bench_iterate_fold(Env &E, Row &r) {
  DevBuf<float> da, db, sum;
  attempt(r, "reference", [&] { sum.alloc(1); });
  bench_loop(E, r, "iterate_fold", "CUDA launch loop (memset, sum, map)", 1e-4, da, db,
             [&](int steps, float **last) {
               ref_iterate_fold(E.stream, 4096, steps, da.p, db.p, sum.p, last);
             });
}

/* A benchmark of one row. */
template <void (*F)(Env &, Row &)> void one_row(Env &E, std::vector<Row> &rows) {
  F(E, rows[0]);
}

} // namespace

const std::vector<Benchmark> &all_benchmarks() {
  static const std::vector<Benchmark> all = {
      {"saxpy", one_row<bench_saxpy>},
      {"sdot", one_row<bench_sdot>},
      {"blackscholes", one_row<bench_blackscholes>},
      {"prefix_sum", one_row<bench_prefix_sum>},
      {"reduce_sum", one_row<bench_reduce_sum>},
      {"spmv_csr", one_row<bench_spmv_csr>},
      {"iterate", one_row<bench_iterate>},
      {"iterate_fold", one_row<bench_iterate_fold>},
      {"forward_diff", bench_forward_diff},
      {"ma15", bench_ma15},
      {"jacobi2d", bench_jacobi2d},
  };
  return all;
}
