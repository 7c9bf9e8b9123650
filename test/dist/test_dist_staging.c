/* test/dist/test_dist_staging.c: how a GPU rank's blocks reach MPI
 * (dist/staging.c), on the fake CUDA driver (test/unit/cuda_mock.c, loaded
 * through ARRAYC_LIBCUDA) under mpirun -np 2 (ctest dist.staging).
 *
 * The fake driver's "device memory" is host memory, so MPI can read and
 * write it whichever way the layer passes it, and its counters show which
 * way that was:
 *   - staged (ARRAYC_DIST_CUDA_AWARE=0, what a GPU rank does when MPI is
 *     not CUDA-aware): a scattered block lands in a pinned buffer of the
 *     runtime and is copied up (a host-to-device copy from pinned memory),
 *     a device-only block is sent through a pinned copy (device-to-host);
 *   - direct (ARRAYC_DIST_CUDA_AWARE=1, as with a CUDA-aware MPI): blocks
 *     are received into device memory and sent from it, with no copies.
 * Either way the round trip and a call of a function on the distributed
 * data (the fake driver's real extern kernel, out = a * x + y, by the
 * gather strategy: its allgather lands on the device) give the right
 * values, no pinned buffer is written while a copy may still read it, and
 * nothing is left in the driver when the runtime goes.
 */
#define _POSIX_C_SOURCE 200809L /* setenv, unsetenv */

#include "arrayc/arrayc.h"
#include "arrayc/dist.h"
#include "cuda_mock.h"
#include "unit.h"

#include <dlfcn.h>
#include <math.h>

static const char prog[] = "extern kernel axpy(a: f32, xs: f32[], ys: f32[]) -> f32[len(xs)]\n"
                           "  threads len(xs) block 32\n"
                           "  ptx \".version 7.0\\n.target sm_70\\n.address_size 64\\n"
                           ".visible .entry arrayc_mock_axpy() { ret; }\\n\"\n"
                           "  entry \"arrayc_mock_axpy\";\n"
                           "fn g(a: f32, xs: f32[], ys: f32[]) -> f32[] { axpy(a, xs, ys) }\n";

/* Blocks larger than the CUDA device's own pinned staging takes (64 KiB
 * up, 4 KiB down: gpu_cuda.c), so that the pinned copies counted are the
 * distributed layer's. */
enum { N = 40000 };
static int me, nranks;
static ac_context *ctx;
static cuda_mock_get_stats_fn *stats;

static cuda_mock_stats now(void) {
  cuda_mock_stats s;
  stats(&s);
  return s;
}

/* A GPU runtime on the fake driver with ARRAYC_DIST_CUDA_AWARE=aware. */
static ac_dist_runtime *gpu_runtime(const char *aware) {
  ac_dist_runtime *rt = NULL;
  ac_error *e = NULL;
  setenv("ARRAYC_DIST_CUDA_AWARE", aware, 1);
  ac_status st = ac_dist_runtime_create(ctx, MPI_COMM_WORLD, AC_BACKEND_GPU, &rt, &e);
  unsetenv("ARRAYC_DIST_CUDA_AWARE");
  CHECK(st == AC_OK);
  if (st != AC_OK)
    fprintf(stderr, "rank %d: %s", me, e ? ac_error_text(e) : "no error\n");
  ac_error_destroy(e);
  return rt;
}

static bool same_floats(const ac_array *a, const float *want, int64_t n) {
  const float *v = a ? ac_array_data(a) : NULL;
  if (!v || ac_array_size(a) != n)
    return false;
  for (int64_t i = 0; i < n; i++)
    if (fabsf(v[i] - want[i]) > 1e-5f * fabsf(want[i]))
      return false;
  return true;
}

/* Scatter, gather and a call on one runtime; `direct`: the runtime passes
 * device memory to MPI. */
static void check_transfers(ac_dist_runtime *rt, bool direct) {
  CHECK(ac_dist_runtime_backend(rt) == AC_BACKEND_GPU);
  CHECK(ac_dist_runtime_cuda_aware(rt) == direct);
  static float x[N], y[N], want[N];
  for (int i = 0; i < N; i++) {
    x[i] = (float)i + 0.5f;
    y[i] = 100.0f - (float)i;
    want[i] = 2.0f * x[i] + y[i];
  }
  int64_t n = N;
  ac_array *xa = ac_array_create(ctx, AC_F32, 1, &n, x, NULL);
  ac_array *ya = ac_array_create(ctx, AC_F32, 1, &n, y, NULL);
  ac_dist_array *xd = NULL, *yd = NULL;
  ac_error *e = NULL;

  /* the scatter's blocks are received for the device */
  cuda_mock_stats s0 = now();
  CHECK(ac_dist_array_scatter_from(rt, me == 0 ? xa : NULL, 0, &xd, &e) == AC_OK);
  cuda_mock_stats s1 = now();
  CHECK(s1.allocs > s0.allocs); /* the block is a device buffer */
  if (direct) {
    CHECK_EQ_INT(s1.htod, s0.htod); /* MPI wrote it there */
  } else {
    CHECK(s1.htod > s0.htod); /* copied up from the pinned buffer */
    CHECK(s1.pinned_copies > s0.pinned_copies);
    CHECK(s1.pinned >= 2); /* the device's own ring and the runtime's buffer */
  }

  /* and sent from the device (a device-only block) to rank 0's host array */
  ac_array *back = NULL;
  CHECK(ac_dist_array_gather(rt, xd, 0, &back, &e) == AC_OK);
  cuda_mock_stats s2 = now();
  if (direct)
    CHECK_EQ_INT(s2.dtoh, s1.dtoh);
  else
    CHECK(s2.dtoh > s1.dtoh && s2.pinned_copies > s1.pinned_copies);
  CHECK(me == 0 ? same_floats(back, x, N) : back == NULL);
  ac_array_release(back);

  /* a function on the distributed data: the gather strategy allgathers
   * the blocks into device memory, the kernel runs on them */
  ac_module *m = NULL;
  ac_dist_function *f = NULL;
  CHECK(ac_module_parse(ctx, "staging.ac", prog, strlen(prog), &m, &e) == AC_OK);
  if (m && ac_dist_function_create(rt, m, "g", &f, &e) == AC_OK &&
      ac_dist_array_from_full(rt, ya, &yd, &e) == AC_OK) {
    ac_dist_datum args[3] = {{AC_DIST_SCALAR, {AC_DATUM_SCALAR, AC_F32, {.f = 2}, NULL}, NULL},
                             {AC_DIST_DISTRIBUTED, {0}, xd},
                             {AC_DIST_DISTRIBUTED, {0}, yd}};
    ac_dist_datum res = {AC_DIST_SCALAR, {0}, NULL};
    CHECK(ac_dist_function_call(f, args, 3, &res, 1, &e) == AC_OK);
    if (e)
      fprintf(stderr, "rank %d: %s", me, ac_error_text(e));
    back = NULL;
    CHECK(res.dist && ac_dist_array_gather(rt, res.dist, AC_DIST_ALL, &back, &e) == AC_OK);
    CHECK(same_floats(back, want, N));
    ac_array_release(back);
    ac_dist_datum_release(&res);
  } else {
    CHECK(f != NULL && yd != NULL); /* fails: the function or y's distribution */
    if (e)
      fprintf(stderr, "rank %d: %s", me, ac_error_text(e));
  }
  CHECK_EQ_INT(now().pinned_races, 0);
  ac_error_destroy(e);
  if (f)
    ac_dist_function_destroy(f);
  if (m)
    ac_module_destroy(m);
  ac_dist_array_destroy(xd);
  ac_dist_array_destroy(yd);
  ac_array_release(xa);
  ac_array_release(ya);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  /* the same file the GPU backend loads, so the same instance */
  void *lib = dlopen(ARRAYC_CUDA_MOCK, RTLD_NOW | RTLD_LOCAL);
  void *sym = lib ? dlsym(lib, "cuda_mock_get_stats") : NULL;
  memcpy(&stats, &sym, sizeof stats);
  if (!stats) {
    fprintf(stderr, "rank %d: cannot load the fake driver %s\n", me, ARRAYC_CUDA_MOCK);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  setenv("ARRAYC_LIBCUDA", ARRAYC_CUDA_MOCK, 1);
  setenv("ARRAYC_CACHE", "0", 1); /* modules from fresh PTX, not a cache on disk */
  ctx = ac_context_create();
  const char *modes[2] = {"0", "1"};
  for (int k = 0; k < 2; k++) {
    ac_dist_runtime *rt = gpu_runtime(modes[k]);
    if (rt)
      check_transfers(rt, k == 1);
    ac_dist_runtime_destroy(rt);
    cuda_mock_stats s = now();
    CHECK_EQ_INT(s.pinned, 0);
    CHECK_EQ_INT(s.allocs, 0);
  }
  ac_context_destroy(ctx);
  int failed = 0;
  MPI_Allreduce(&unit_failed_checks, &failed, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (me == 0)
    printf("dist staging on %d rank%s: %d failed check%s\n", nranks, nranks == 1 ? "" : "s", failed,
           failed == 1 ? "" : "s");
  MPI_Finalize();
  return failed ? 1 : 0;
}
