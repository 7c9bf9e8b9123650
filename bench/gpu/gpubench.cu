/* bench/gpu/gpubench.cu: arrayc-gpubench, the GPU benchmark harness (issue 4).
 *
 *   arrayc-gpubench [--only NAME[,NAME...]] [--log2 K] [--repeat N]
 *                   [--out FILE] [--programs DIR]
 *
 * In one process and on one device it measures the device-to-device copy
 * bandwidth (the ceiling for bandwidth-bound kernels), then runs each
 * benchmark of benches.cu: arrayc's program from bench/programs against
 * cuBLAS, CUB or a hand-written CUDA kernel on the same input data, checked
 * before timed. It prints a Markdown table headed by the device, driver,
 * runtime, date and host, and how the times were taken, to stdout and to
 * --out FILE (rewritten after every benchmark, so a run cut short still
 * leaves the rows it finished), then the notes the benchmarks left (the
 * shared-memory tile speedups). Progress and failures go to stderr.
 *
 * Exit status: 0 when every benchmark ran and its check passed (goals
 * missed are results, not errors), 1 when one failed or differed, 2 for a
 * usage error, and 77 (the skip code of the test suite) when there is no
 * GPU: no driver, no device, or a driver too old for this CUDA runtime.
 * The device is CUDA device 0, or ARRAYC_GPU_DEVICE=N, which arrayc's GPU
 * runtime also reads, so both sides use the same device.
 */
#include "gpubench.h"

#include <cub/version.cuh>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <unistd.h>

#ifndef ARRAYC_GPUBENCH_PROGRAMS
#define ARRAYC_GPUBENCH_PROGRAMS "bench/programs"
#endif
#ifndef ARRAYC_GPUBENCH_ID
#define ARRAYC_GPUBENCH_ID "unknown"
#endif

namespace {

const char *const kUsage =
    "usage: arrayc-gpubench [--only NAME[,NAME...]] [--log2 K] [--repeat N] [--out FILE]\n"
    "                       [--programs DIR]\n"
    "  --only     run only these benchmarks (saxpy, sdot, blackscholes, prefix_sum,\n"
    "             reduce_sum, spmv_csr, iterate, iterate_fold, forward_diff, ma15,\n"
    "             jacobi2d)\n"
    "  --log2     elements per vector: 2^K (default 26; 12..30)\n"
    "  --repeat   timed runs per measurement, the median is reported (default 31)\n"
    "  --out      also write the Markdown report to FILE\n"
    "  --programs the directory of the .ac programs (default: bench/programs of the\n"
    "             source tree it was built from, else ./bench/programs)\n";

bool file_exists(const std::string &p) {
  std::ifstream f(p);
  return (bool)f;
}

/* Parses the command line into o; returns false (after a message) on a
 * usage error. */
bool parse_options(int argc, char **argv, Options &o) {
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i], v;
    size_t eq = a.find('=');
    bool has_eq = a.rfind("--", 0) == 0 && eq != std::string::npos;
    if (has_eq) {
      v = a.substr(eq + 1);
      a = a.substr(0, eq);
    }
    if (a == "--help" || a == "-h") {
      fputs(kUsage, stdout);
      exit(0);
    }
    bool known = a == "--only" || a == "--log2" || a == "--repeat" || a == "--out" ||
                 a == "--programs";
    if (!known) {
      fprintf(stderr, "arrayc-gpubench: unknown option %s\n%s", argv[i], kUsage);
      return false;
    }
    if (!has_eq) {
      if (i + 1 >= argc) {
        fprintf(stderr, "arrayc-gpubench: %s needs a value\n%s", a.c_str(), kUsage);
        return false;
      }
      v = argv[++i];
    }
    if (a == "--only") {
      std::stringstream s(v);
      std::string name;
      while (std::getline(s, name, ','))
        if (!name.empty())
          o.only.push_back(name);
    } else if (a == "--log2") {
      o.log2n = atoi(v.c_str());
    } else if (a == "--repeat") {
      o.repeat = atoi(v.c_str());
    } else if (a == "--out") {
      o.out = v;
    } else {
      o.programs = v;
    }
  }
  if (o.repeat < 1 || o.log2n < 12 || o.log2n > 30) {
    fprintf(stderr, "arrayc-gpubench: --repeat must be >= 1 and --log2 in 12..30\n");
    return false;
  }
  for (const std::string &name : o.only) {
    bool found = false;
    for (const Benchmark &b : all_benchmarks())
      found = found || name == b.name;
    if (!found) {
      fprintf(stderr, "arrayc-gpubench: unknown benchmark '%s'\n%s", name.c_str(), kUsage);
      return false;
    }
  }
  if (o.programs.empty())
    o.programs = file_exists(std::string(ARRAYC_GPUBENCH_PROGRAMS) + "/saxpy.ac")
                     ? ARRAYC_GPUBENCH_PROGRAMS
                     : "bench/programs";
  return true;
}

bool selected(const Options &o, const char *name) {
  if (o.only.empty())
    return true;
  for (const std::string &n : o.only)
    if (n == name)
      return true;
  return false;
}

std::string cuda_version(int v) {
  char buf[32];
  snprintf(buf, sizeof buf, "%d.%d", v / 1000, (v % 1000) / 10);
  return buf;
}

/* The driver release: the first word of the kernel module's version line
 * ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04
 * Release Build ...") after "Kernel Module" made of digits and dots only;
 * the whole line if there is none, empty where there is no such file. */
std::string driver_release() {
  std::ifstream f("/proc/driver/nvidia/version");
  std::string line;
  if (!f || !std::getline(f, line))
    return "";
  size_t k = line.find("Kernel Module");
  if (k != std::string::npos) {
    std::stringstream s(line.substr(k + 13));
    std::string word;
    while (s >> word)
      if (word.find_first_not_of("0123456789.") == std::string::npos &&
          word.find('.') != std::string::npos)
        return word;
  }
  return line;
}

/* The header of the report: the machine and how everything was measured. */
std::string report_header(const Env &E, double copy_wall_bw) {
  int drv = 0, rt = 0, blas = 0;
  (void)cudaDriverGetVersion(&drv);
  (void)cudaRuntimeGetVersion(&rt);
  if (E.blas)
    (void)cublasGetVersion(E.blas, &blas);
  char host[256] = "unknown";
  (void)gethostname(host, sizeof host - 1);
  char date[64];
  time_t now = time(nullptr);
  strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S UTC", gmtime(&now));
  std::string rel = driver_release();
  std::ostringstream s;
  char buf[512];
  s << "# arrayc on the GPU: arrayc-gpubench\n\n";
  snprintf(buf, sizeof buf,
           "- device %d: %s, compute capability %d.%d, %d SMs, %.1f GiB, L2 %.0f MiB\n",
           E.device, E.prop.name, E.prop.major, E.prop.minor, E.prop.multiProcessorCount,
           (double)E.prop.totalGlobalMem / (1 << 30), (double)E.prop.l2CacheSize / (1 << 20));
  s << buf;
  snprintf(buf, sizeof buf,
           "- driver: %s%s(cuDriverGetVersion: CUDA %s); CUDA runtime %s; cuBLAS %d.%d.%d; CUB "
           "%d.%d.%d\n",
           rel.c_str(), rel.empty() ? "" : " ", cuda_version(drv).c_str(),
           cuda_version(rt).c_str(), blas / 10000, (blas / 100) % 100, blas % 100,
           CUB_VERSION / 100000, (CUB_VERSION / 100) % 1000, CUB_VERSION % 100);
  s << buf;
  snprintf(buf, sizeof buf, "- date: %s; host: %s; arrayc %s\n", date, host, ARRAYC_GPUBENCH_ID);
  s << buf;
  snprintf(buf, sizeof buf,
           "- copy bandwidth (cudaMemcpyAsync device to device, 1 GiB, bytes read + written): "
           "%.0f GB/s by events, %.0f GB/s by wall clock; the fractions below are of the "
           "first\n",
           E.copy_bw / 1e9, copy_wall_bw / 1e9);
  s << buf;
  snprintf(buf, sizeof buf,
           "- every time is the median of %d runs after a warm-up (at least 3 runs and 0.2 s); "
           "vectors of 2^%d elements\n",
           E.opt.repeat, E.opt.log2n);
  s << buf;
  s << "- **arrayc ms**: host wall clock around `ac_function_call` (AC_BACKEND_GPU) plus the "
       "release of its results; the call returns when its kernels are done (arrayc's runtime "
       "synchronises its own stream), the inputs were made resident on the device by the "
       "first call and the results stay there\n"
       "- **ref ms (wall)**: the same clock around the reference's launch plus "
       "`cudaStreamSynchronize`; **ref ms (events)**: `cudaEventElapsedTime` between events "
       "recorded on the reference's stream around it (no host overhead; shown for "
       "information)\n"
       "- **ratio** = ref ms (wall) / arrayc ms: above 1, arrayc is faster; **GB/s**: bytes "
       "counted (each input read once, each output written once, as bench/README.md) over "
       "arrayc's time; **of copy**: that bandwidth over the copy bandwidth (the reference's "
       "likewise, by its wall time)\n"
       "- the iterate rows give microseconds per loop iteration: (t(1010 steps) - t(10 steps)) "
       "/ 1000 over a map of 4096 floats (iterate), or a sum and a map (iterate_fold, whose "
       "two kernels arrayc launches as one CUDA graph per step)\n\n";
  return s.str();
}

/* The copy bandwidth, by device events (the ceiling the fractions use) and
 * by the wall clock (what a wall-timed kernel could reach at best). */
void measure_copy(Env &E, double &wall_bw) {
  const size_t n = (size_t)1 << 28; /* floats: 1 GiB */
  DevBuf<float> a(n), b(n);
  CK(cudaMemset(a.p, 0x3f, a.bytes())); /* legacy stream: wait before E.stream uses it */
  CK(cudaDeviceSynchronize());
  RefTime t = time_ref(
      E,
      [&] { CK(cudaMemcpyAsync(b.p, a.p, a.bytes(), cudaMemcpyDeviceToDevice, E.stream)); },
      E.opt.repeat);
  E.copy_bw = 2.0 * (double)a.bytes() / t.events;
  wall_bw = 2.0 * (double)a.bytes() / t.wall;
}

void write_report(const Env &E, const std::string &text) {
  if (E.opt.out.empty())
    return;
  FILE *f = fopen(E.opt.out.c_str(), "w");
  if (!f || fputs(text.c_str(), f) < 0) {
    fprintf(stderr, "arrayc-gpubench: cannot write %s\n", E.opt.out.c_str());
    if (f)
      fclose(f);
    return;
  }
  fclose(f);
}

} // namespace

int main(int argc, char **argv) {
  Env E;
  if (!parse_options(argc, argv, E.opt))
    return 2;
  setvbuf(stdout, nullptr, _IOLBF, 0);

  /* No GPU (no driver, no device, a driver older than the runtime): skip. */
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    printf("arrayc-gpubench: no GPU: %s\n",
           e != cudaSuccess ? (std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e) +
                               " (is the NVIDIA driver, libcuda.so.1, installed?)")
                                  .c_str()
                            : "the CUDA driver reports no device");
    return 77;
  }
  const char *dev_env = getenv("ARRAYC_GPU_DEVICE");
  E.device = dev_env && *dev_env ? atoi(dev_env) : 0;
  if (E.device < 0 || E.device >= count) {
    printf("arrayc-gpubench: no GPU: ARRAYC_GPU_DEVICE=%d but there are %d devices\n", E.device,
           count);
    return 77;
  }
  double copy_wall_bw = NAN;
  try {
    CK(cudaSetDevice(E.device));
    CK(cudaFree(nullptr)); /* creates the primary context, which arrayc shares */
    CK(cudaGetDeviceProperties(&E.prop, E.device));
    CK(cudaStreamCreateWithFlags(&E.stream, cudaStreamNonBlocking));
  } catch (const Failure &f) {
    fprintf(stderr, "arrayc-gpubench: cannot set up the device: %s\n", f.what());
    return 1;
  }
  cublasStatus_t bs = cublasCreate(&E.blas);
  if (bs != CUBLAS_STATUS_SUCCESS) {
    E.blas = nullptr;
    E.blas_error = std::string(cublasGetStatusName(bs)) + ": " + cublasGetStatusString(bs);
    fprintf(stderr, "arrayc-gpubench: cublasCreate failed (%s); the cuBLAS references are "
                    "skipped\n", E.blas_error.c_str());
  } else if ((bs = cublasSetStream(E.blas, E.stream)) != CUBLAS_STATUS_SUCCESS) {
    fprintf(stderr, "arrayc-gpubench: cublasSetStream failed: %s\n", cublasGetStatusName(bs));
    cublasDestroy(E.blas);
    E.blas = nullptr;
    E.blas_error = "cublasSetStream failed";
  }
  E.ctx = ac_context_create();
  if (!E.ctx) {
    fprintf(stderr, "arrayc-gpubench: ac_context_create failed\n");
    return 1;
  }
  fprintf(stderr, "arrayc-gpubench: measuring the copy bandwidth\n");
  try {
    measure_copy(E, copy_wall_bw);
  } catch (const Failure &f) {
    fprintf(stderr, "arrayc-gpubench: the copy bandwidth could not be measured: %s\n", f.what());
  }

  std::string report = report_header(E, copy_wall_bw) + table_header();
  fputs(report.c_str(), stdout);
  write_report(E, report);
  int ran = 0, failed = 0, met = 0;
  for (const Benchmark &b : all_benchmarks()) {
    if (!selected(E.opt, b.name))
      continue;
    std::vector<Row> rows(1);
    rows[0].name = b.name;
    fprintf(stderr, "arrayc-gpubench: %s: preparing\n", b.name);
    try {
      b.run(E, rows);
    } catch (const std::exception &x) { /* Failure, or bad_alloc on the host */
      fprintf(stderr, "arrayc-gpubench: %s: %s\n", b.name, x.what());
      for (Row &r : rows)
        r.error += (r.error.empty() ? "" : "; ") + std::string(x.what());
    }
    for (const Row &r : rows) {
      std::string line = table_row(E, r);
      ran++;
      failed += !r.error.empty() || !r.check_ok;
      met += line.find("| yes |") != std::string::npos;
      fputs(line.c_str(), stdout);
      report += line;
    }
    write_report(E, report);
  }
  std::string tail = "\n";
  for (const std::string &note : E.notes)
    tail += "- " + note + "\n";
  char summary[160];
  snprintf(summary, sizeof summary, "%s%d rows: %d met their goals, %d failed or differed.\n",
           E.notes.empty() ? "" : "\n", ran, met, failed);
  tail += summary;
  fputs(tail.c_str(), stdout);
  report += tail;
  write_report(E, report);

  if (E.rt)
    ac_runtime_destroy(E.rt);
  ac_context_destroy(E.ctx);
  if (E.blas)
    cublasDestroy(E.blas);
  (void)cudaStreamDestroy(E.stream);
  return failed ? 1 : 0;
}
