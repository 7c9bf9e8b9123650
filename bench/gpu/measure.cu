/* bench/gpu/measure.cu: how arrayc-gpubench times, checks and calls arrayc.
 *
 * Timing. arrayc runs its kernels on a stream of its own inside its
 * runtime (a non-blocking stream of the device's primary context, which
 * the CUDA runtime also uses); the harness cannot put events on it. Its
 * ac_function_call returns when the results are computed (the runtime
 * synchronises its stream at the end of every call), so arrayc is timed
 * with the host's monotonic clock around each call, result release
 * included. To compare like with like, each reference is timed the same
 * way, wall clock around the operation plus cudaStreamSynchronize, and
 * that is the time the ratio uses; the references are also timed with
 * device events on their stream, which leave out the host's launch and
 * synchronisation costs, and both are reported. Every time is the median
 * of --repeat runs after a warm-up of at least three runs and 0.2 s (so
 * module loading, first-touch allocation and clock ramp-up stay out).
 *
 * The arrayc side goes through the public C API only: programs are parsed,
 * verified and compiled with ac_runtime_compile on one runtime of
 * AC_BACKEND_GPU (ac_runtime_set_passes chooses each one's pipeline); input
 * arrays are host arrays that the first call copies to the device and that
 * stay resident there (docs/runtime.md §3), results stay on the device
 * unless the harness reads them (it does so once, for the check).
 */
#include "gpubench.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>

/* ---- failures ---- */
void cuda_fail(cudaError_t e, const char *expr, const char *file, int line) {
  char buf[512];
  snprintf(buf, sizeof buf, "CUDA error %s (%s) in %s at %s:%d", cudaGetErrorName(e),
           cudaGetErrorString(e), expr, file, line);
  throw Failure(buf);
}

void cublas_fail(cublasStatus_t s, const char *expr, const char *file, int line) {
  char buf[512];
  snprintf(buf, sizeof buf, "cuBLAS error %s (%s) in %s at %s:%d", cublasGetStatusName(s),
           cublasGetStatusString(s), expr, file, line);
  throw Failure(buf);
}

void ac_fail(const std::string &what, ac_error *e) {
  std::string msg = "arrayc: " + what + ": ";
  if (e) {
    /* the full diagnostic has the source line and a caret: keep one line */
    msg += ac_error_message(e);
    if (ac_error_line(e)) {
      char pos[64];
      snprintf(pos, sizeof pos, " (at line %u:%u)", ac_error_line(e), ac_error_column(e));
      msg += pos;
    }
    ac_error_destroy(e);
  } else {
    msg += "failed";
  }
  throw Failure(msg);
}

/* ---- timing ---- */
double now_s() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double median(std::vector<double> v) {
  if (v.empty())
    return NAN;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void warm_up(const std::function<void()> &run_and_wait) {
  double t0 = now_s();
  for (int i = 0; i < 3 || now_s() - t0 < 0.2; i++)
    run_and_wait();
}

/* Events are made per measurement, not per run: creating them is not
 * free, and one pair serves every repetition. */
struct EventPair {
  cudaEvent_t a = nullptr, b = nullptr;
  EventPair() {
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
  }
  ~EventPair() {
    (void)cudaEventDestroy(a);
    (void)cudaEventDestroy(b);
  }
};

RefTime time_ref(Env &E, const RefOp &op, int repeat) {
  RefTime t;
  warm_up([&] {
    op();
    CK(cudaStreamSynchronize(E.stream));
  });
  EventPair ev;
  std::vector<double> v;
  for (int i = 0; i < repeat; i++) {
    CK(cudaEventRecord(ev.a, E.stream));
    op();
    CK(cudaEventRecord(ev.b, E.stream));
    CK(cudaEventSynchronize(ev.b));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, ev.a, ev.b));
    v.push_back(1e-3 * ms);
  }
  t.events = median(v);
  v.clear();
  /* Separately, so the event records are not in the wall-clock time. */
  for (int i = 0; i < repeat; i++) {
    double t0 = now_s();
    op();
    CK(cudaStreamSynchronize(E.stream));
    v.push_back(now_s() - t0);
  }
  t.wall = median(v);
  return t;
}

double time_ac(Env &E, const AcOp &op, int repeat) {
  (void)E;
  warm_up(op);
  std::vector<double> v;
  for (int i = 0; i < repeat; i++) {
    double t0 = now_s();
    op();
    v.push_back(now_s() - t0);
  }
  return median(v);
}

/* ---- the arrayc side ---- */
static std::string read_text(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  if (!f)
    throw Failure("cannot open " + path + " (give the programs' directory with --programs)");
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

/* E.rt, made on first use (a failure is the row's, and the next row tries
 * again). */
static ac_runtime *bench_runtime(Env &E) {
  if (!E.rt) {
    ac_error *e = nullptr;
    if (ac_runtime_create(E.ctx, E.backend, &E.rt, &e) != AC_OK)
      ac_fail(std::string("creating the ") + ac_backend_name(E.backend) + " runtime", e);
    E.default_passes = ac_runtime_passes(E.rt);
  }
  return E.rt;
}

AcProgram::AcProgram(Env &E, const std::string &name) : AcProgram(E, name, name, nullptr) {}

AcProgram::AcProgram(Env &E, const std::string &file, const std::string &fn, const char *passes) {
  std::string path = E.opt.programs + "/" + file + ".ac";
  std::string text = read_text(path);
  ac_runtime *rt = bench_runtime(E);
  ac_error *e = nullptr;
  if (ac_module_parse(E.ctx, path.c_str(), text.data(), text.size(), &m, &e) != AC_OK)
    ac_fail("parsing " + path, e);
  try { /* a constructor that throws gets no destructor call */
    if (ac_module_verify(m, &e) != AC_OK)
      ac_fail("verifying " + path, e);
    const char *pipeline = passes ? passes : E.default_passes.c_str();
    if (ac_runtime_set_passes(rt, pipeline, &e) != AC_OK)
      ac_fail(std::string("setting the passes ") + pipeline, e);
    if (ac_runtime_compile(rt, m, fn.c_str(), &f, &e) != AC_OK)
      ac_fail("compiling " + fn + " for " + ac_backend_name(E.backend) + " with passes " + pipeline,
              e);
  } catch (...) {
    ac_module_destroy(m);
    m = nullptr;
    throw;
  }
}

AcProgram::~AcProgram() {
  if (f)
    ac_function_destroy(f);
  if (m)
    ac_module_destroy(m);
}

void AcProgram::call(const std::vector<ac_datum> &args, std::vector<ac_datum> &res) const {
  ac_error *e = nullptr;
  if (ac_function_call(f, args.data(), args.size(), res.data(), res.size(), &e) != AC_OK)
    ac_fail("calling the compiled function", e);
}

ac_datum ac_array_arg(Env &E, ac_scalar t, int64_t n, const void *data) {
  return ac_array_arg(E, t, 1, &n, data);
}

ac_datum ac_array_arg(Env &E, ac_scalar t, unsigned rank, const int64_t *extents,
                      const void *data) {
  ac_error *e = nullptr;
  ac_array *a = ac_array_create(E.ctx, t, rank, extents, data, &e);
  if (!a)
    ac_fail("creating an input array", e);
  ac_datum d;
  memset(&d, 0, sizeof d);
  d.kind = AC_DATUM_ARRAY;
  d.type = t;
  d.array = a;
  return d;
}

ac_datum ac_f32_arg(float x) {
  ac_datum d;
  memset(&d, 0, sizeof d);
  d.kind = AC_DATUM_SCALAR;
  d.type = AC_F32;
  d.s.f = x;
  return d;
}

ac_datum ac_i32_arg(int32_t x) {
  ac_datum d;
  memset(&d, 0, sizeof d);
  d.kind = AC_DATUM_SCALAR;
  d.type = AC_I32;
  d.s.i = x;
  return d;
}

const void *ac_result_data(const ac_datum &d, const char *what) {
  if (d.kind != AC_DATUM_ARRAY || !d.array)
    throw Failure(std::string("arrayc: result ") + what + " is not an array");
  const void *p = ac_array_data(d.array);
  if (!p) {
    /* ac_array_read says why the fetch from the device failed */
    ac_error *e = nullptr;
    std::vector<char> buf((size_t)ac_array_size(d.array) * ac_scalar_size(ac_array_type(d.array)));
    (void)ac_array_read(d.array, buf.data(), buf.size(), &e);
    ac_fail(std::string("reading result ") + what + " back from the device", e);
  }
  return p;
}

/* ---- checks ---- */
double max_rel_diff(const float *a, const float *b, int64_t n) {
  double worst = 0;
  for (int64_t i = 0; i < n; i++) {
    double x = a[i], y = b[i], s = std::fmax(1.0, std::fmax(std::fabs(x), std::fabs(y)));
    double d = std::fabs(x - y) / s;
    if (std::isnan(d))
      return INFINITY;
    worst = std::fmax(worst, d);
  }
  return worst;
}

/* ---- results ---- */
static std::string fmt(const char *f, double x) {
  if (std::isnan(x))
    return "—";
  char buf[64];
  snprintf(buf, sizeof buf, f, x);
  return buf;
}

std::string Goal::text() const {
  std::string s;
  char buf[96];
  if (min_ratio > 0) {
    snprintf(buf, sizeof buf, "≥ %.2f×", min_ratio);
    s += buf;
  }
  if (min_copy_frac > 0) {
    snprintf(buf, sizeof buf, "%s≥ %.0f%% of copy", s.empty() ? "" : ", ", 100 * min_copy_frac);
    s += buf;
  }
  if (max_iter_us > 0) {
    snprintf(buf, sizeof buf, "%s< %.0f µs/iteration", s.empty() ? "" : ", ", max_iter_us);
    s += buf;
  }
  return s.empty() ? "—" : s;
}

std::string table_header() {
  return "| benchmark | size | arrayc ms | reference | ref ms (wall) | ref ms (events) | ratio "
         "ref/arrayc | arrayc GB/s | arrayc of copy | ref of copy | check | goal | met? |\n"
         "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---|---|---|\n";
}

/* Whether r meets its goals, and if not, why ("yes" or "NO: ..."). */
static std::string met(const Env &E, const Row &r) {
  if (!r.error.empty())
    return "NO: failed";
  if (!r.check_ok)
    return "NO: check failed";
  std::string why;
  double ratio = r.ref.wall / r.ac;
  char buf[128];
  if (r.goal.min_ratio > 0 && !(ratio >= r.goal.min_ratio)) {
    snprintf(buf, sizeof buf, "ratio %.2f", ratio);
    why += buf;
  }
  if (r.goal.min_copy_frac > 0) {
    double frac = r.bytes / r.ac / E.copy_bw;
    if (std::isnan(E.copy_bw)) {
      why += why.empty() ? "copy bandwidth unknown" : ", copy bandwidth unknown";
    } else if (!(frac >= r.goal.min_copy_frac)) {
      snprintf(buf, sizeof buf, "%s%.0f%% of copy", why.empty() ? "" : ", ", 100 * frac);
      why += buf;
    }
  }
  if (r.goal.max_iter_us > 0 && !(1e6 * r.ac < r.goal.max_iter_us)) {
    snprintf(buf, sizeof buf, "%s%.1f µs/iteration", why.empty() ? "" : ", ", 1e6 * r.ac);
    why += buf;
  }
  return why.empty() ? "yes" : "NO: " + why;
}

std::string table_row(const Env &E, const Row &r) {
  /* the iterate row reports microseconds per loop iteration */
  auto t = [&](double s) { return r.per_iter ? fmt("%.2f µs/it", 1e6 * s) : fmt("%.3f", 1e3 * s); };
  double gbs = r.bytes > 0 ? r.bytes / r.ac / 1e9 : NAN;
  double frac = r.bytes > 0 ? r.bytes / r.ac / E.copy_bw : NAN;
  double rfrac = r.bytes > 0 ? r.bytes / r.ref.wall / E.copy_bw : NAN;
  std::string check = r.check;
  if (!r.error.empty())
    check += (check.empty() ? "" : "; ") + std::string("FAILED: ") + r.error;
  /* a table cell cannot hold '|' or a newline */
  for (char &c : check)
    if (c == '|' || c == '\n')
      c = ' ';
  std::string s = "| " + r.name + " | " + r.size + " | " + t(r.ac) + " | " + r.reference + " | " +
                  t(r.ref.wall) + " | " + t(r.ref.events) + " | " +
                  fmt("%.2f", r.ref.wall / r.ac) + " | " + fmt("%.0f", gbs) + " | " +
                  fmt("%.0f%%", 100 * frac) + " | " + fmt("%.0f%%", 100 * rfrac) + " | " +
                  (check.empty() ? "—" : check) + " | " + r.goal.text() + " | " + met(E, r) +
                  " |\n";
  return s;
}
