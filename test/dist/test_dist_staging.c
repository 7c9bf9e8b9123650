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
#include "dist_impl.h"
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
static cuda_mock_fail_fn *fail;

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

/* ---- the exchanges of the staged strategy on device blocks ---- */

/* What the fake driver did between two snapshots: copies and their bytes
 * per direction, and how many host copies touched pinned memory. */
typedef struct copies {
  int htod, dtoh, dtod, pinned;
  uint64_t htod_bytes, dtoh_bytes, dtod_bytes;
} copies;

static copies since(cuda_mock_stats a) {
  cuda_mock_stats b = now();
  return (copies){b.htod - a.htod,
                  b.dtoh - a.dtoh,
                  b.dtod - a.dtod,
                  b.pinned_copies - a.pinned_copies,
                  b.htod_bytes - a.htod_bytes,
                  b.dtoh_bytes - a.dtoh_bytes,
                  b.dtod_bytes - a.dtod_bytes};
}

/* Exact counts: calls and bytes of each direction. */
static void check_copies(const char *what, copies c, int htod, uint64_t htod_bytes, int dtoh,
                         uint64_t dtoh_bytes, int dtod, uint64_t dtod_bytes) {
  bool ok = c.htod == htod && c.htod_bytes == htod_bytes && c.dtoh == dtoh &&
            c.dtoh_bytes == dtoh_bytes && c.dtod == dtod && c.dtod_bytes == dtod_bytes;
  CHECK(ok);
  if (!ok)
    fprintf(
        stderr,
        "rank %d: %s: htod %d (%llu bytes), dtoh %d (%llu), dtod %d (%llu); expected %d (%llu), "
        "%d (%llu), %d (%llu)\n",
        me, what, c.htod, (unsigned long long)c.htod_bytes, c.dtoh,
        (unsigned long long)c.dtoh_bytes, c.dtod, (unsigned long long)c.dtod_bytes, htod,
        (unsigned long long)htod_bytes, dtoh, (unsigned long long)dtoh_bytes, dtod,
        (unsigned long long)dtod_bytes);
}

/* An array made for the device: on it only, its host copy never made. */
static bool device_only(ac_dist_runtime *rt, const ac_array *a) {
  return a && rt_resid_dptr(a, rt->gpu) != 0 && !rt_resid_host_valid(a);
}

/* The matrix the exchanges move: element (i, j) of R x C is i * C + j. */
enum { R = 40, C = 1000 }; /* R * C == N; a row is 4000 bytes, more than 4 KiB */
static float elem(int64_t lin) {
  return (float)lin;
}

/* Whether a (host elements fetched now) holds the elements lin[0..n). */
static bool holds(const ac_array *a, const int64_t *lin, int64_t n) {
  const float *v = a ? ac_array_data(a) : NULL;
  if (!v || ac_array_size(a) != n)
    return false;
  for (int64_t k = 0; k < n; k++)
    if (v[k] != elem(lin[k]))
      return false;
  return true;
}

/* dist_fetch_rows, dist_fetch_elems, dist_repartition and dist_rows on
 * device blocks (2 ranks, 20 rows each): each copies only the bytes it
 * moves, exactly as many as the counts below say, staged through pinned
 * memory or (direct) device to device, and makes its result for the
 * device. The units a rank sends in one run go in one copy; scattered
 * units (many runs, dist_few_runs) are picked from one copy of the block. */
static void check_exchanges(ac_dist_runtime *rt, bool direct) {
  static float full[N];
  for (int i = 0; i < N; i++)
    full[i] = elem(i);
  int64_t ext[2] = {R, C};
  ac_array *fa = ac_array_create(ctx, AC_F32, 2, ext, full, NULL);
  ac_dist_array *xd = NULL;
  ac_error *e = NULL;
  CHECK(ac_dist_array_scatter_from(rt, me == 0 ? fa : NULL, 0, &xd, &e) == AC_OK);
  ac_array_release(fa);
  if (!xd || nranks != 2) {
    CHECK(xd != NULL && nranks == 2);
    ac_dist_array_destroy(xd);
    ac_error_destroy(e);
    return;
  }
  const size_t row = C * sizeof(float), block = (R / 2) * row;
  const int64_t lo = me * (R / 2), other = (1 - me) * (R / 2); /* first rows */
  CHECK(device_only(rt, xd->block));
  int64_t lin[2000];

  /* halo rows: rank 0 its rows and the next 2, rank 1 the 2 before and its
   * rows; 2 rows (one run) go each way */
  int64_t rows[22];
  for (int k = 0; k < 22; k++)
    rows[k] = me == 0 ? k : R / 2 - 2 + k;
  cuda_mock_stats s0 = now();
  uint64_t sent0 = ac_dist_runtime_bytes_sent(rt);
  ac_array *got = NULL;
  CHECK(dist_fetch_rows(rt, xd, rows, 22, &got, &e) == AC_OK);
  copies c = since(s0);
  CHECK(ac_dist_runtime_bytes_sent(rt) - sent0 == 2 * row);
  if (direct) /* the 2 rows into a device buffer MPI reads; the result: received, own */
    check_copies("fetch_rows, direct", c, 0, 0, 0, 0, 3, 2 * row + 2 * row + block);
  else /* 2 rows down to the pinned buffer, 2 rows up from the other one; own */
    check_copies("fetch_rows, staged", c, 1, 2 * row, 1, 2 * row, 1, block);
  CHECK_EQ_INT(c.pinned, c.htod + c.dtoh);
  CHECK(device_only(rt, got));
  const float *v = got ? ac_array_data(got) : NULL;
  bool right = v && ac_array_size(got) == 22 * C;
  for (int64_t k = 0; right && k < 22 * C; k++)
    right = v[k] == elem(rows[k / C] * C + k % C);
  CHECK(right);
  ac_array_release(got);

  /* elements in two runs: 1500 of the other block (6000 bytes, one run
   * each way) and 10 of this rank's own */
  for (int k = 0; k < 1500; k++)
    lin[k] = other * C + 5 + k;
  for (int k = 0; k < 10; k++)
    lin[1500 + k] = lo * C + 10 + k;
  s0 = now();
  CHECK(dist_fetch_elems(rt, xd, lin, 1510, &got, &e) == AC_OK);
  c = since(s0);
  if (direct)
    check_copies("fetch_elems, direct", c, 0, 0, 0, 0, 3, 6000 + 6000 + 40);
  else
    check_copies("fetch_elems, staged", c, 1, 6000, 1, 6000, 1, 40);
  CHECK_EQ_INT(c.pinned, c.htod + c.dtoh);
  CHECK(device_only(rt, got));
  CHECK(holds(got, lin, 1510));
  ac_array_release(got);

  /* scattered elements, the other block's and this one's alternating:
   * 1000 runs each way and 2000 in the result, too many for a copy each:
   * the sender picks its units from one copy of its block, the receiver
   * picks its own the same way, assembles the result on the host and
   * copies it up at once (direct or not) */
  for (int k = 0; k < 2000; k++)
    lin[k] = k % 2 ? lo * C + 5 * (k / 2) : other * C + 3 * (k / 2);
  s0 = now();
  CHECK(dist_fetch_elems(rt, xd, lin, 2000, &got, &e) == AC_OK);
  c = since(s0);
  check_copies("fetch_elems, scattered", c, 1, 8000, 2, 2 * block, 0, 0);
  CHECK_EQ_INT(c.pinned, c.htod + c.dtoh);
  CHECK(device_only(rt, got));
  CHECK(holds(got, lin, 2000));
  ac_array_release(got);

  /* a repartition to blocks of 15 and 25 rows: rank 0 keeps 15 rows and
   * sends 5, rank 1 keeps its 20 and receives them */
  int64_t off[3] = {0, 15, R};
  ac_dist_array *yd = NULL;
  s0 = now();
  sent0 = ac_dist_runtime_bytes_sent(rt);
  CHECK(dist_repartition(rt, xd, off, &yd, &e) == AC_OK);
  c = since(s0);
  CHECK(ac_dist_runtime_bytes_sent(rt) - sent0 == (me == 0 ? 5 * row : 0));
  if (direct) /* MPI reads the old block and writes the new one */
    check_copies("repartition, direct", c, 0, 0, 0, 0, 1, me == 0 ? 15 * row : 20 * row);
  else if (me == 0)
    check_copies("repartition, staged", c, 0, 0, 1, 5 * row, 1, 15 * row);
  else
    check_copies("repartition, staged", c, 1, 5 * row, 0, 0, 1, 20 * row);
  CHECK_EQ_INT(c.pinned, c.htod + c.dtoh);
  if (yd) {
    CHECK(device_only(rt, yd->block));
    int64_t n = (me == 0 ? 15 : 25) * C, first = me == 0 ? 0 : 15 * C;
    v = ac_array_data(yd->block);
    right = v && ac_array_size(yd->block) == n;
    for (int64_t k = 0; right && k < n; k++)
      right = v[k] == elem(first + k);
    CHECK(right);
  }
  ac_dist_array_destroy(yd);

  /* rows of a device array: device to device, a device array */
  s0 = now();
  got = dist_rows(ctx, xd->block, 2, 5, &e);
  c = since(s0);
  check_copies("dist_rows", c, 0, 0, 0, 0, 1, 3 * row);
  CHECK(device_only(rt, got));
  v = got ? ac_array_data(got) : NULL;
  right = v && ac_array_size(got) == 3 * C;
  for (int64_t k = 0; right && k < 3 * C; k++)
    right = v[k] == elem((lo + 2) * C + k);
  CHECK(right);
  ac_array_release(got);

  /* a copy that fails on one rank once the rows are moving (the sender's
   * copy down on rank 0, staged; the first device copy on rank 1, direct):
   * the same error on every rank, no rank left waiting, and the next
   * fetch works */
  if (me == (direct ? 1 : 0))
    fail(direct ? "cuMemcpyDtoDAsync_v2" : "cuMemcpyDtoHAsync_v2", CUDA_ERROR_INVALID_VALUE, 0, 1);
  got = NULL;
  ac_status st = dist_fetch_rows(rt, xd, rows, 22, &got, &e);
  fail("", CUDA_SUCCESS, 0, 0);
  CHECK(st != AC_OK && got == NULL);
  CHECK(e && strstr(ac_error_text(e), direct ? "cuMemcpyDtoDAsync" : "cuMemcpyDtoHAsync"));
  ac_error_destroy(e);
  e = NULL;
  CHECK(dist_fetch_rows(rt, xd, rows, 22, &got, &e) == AC_OK);
  v = got ? ac_array_data(got) : NULL;
  right = v && ac_array_size(got) == 22 * C;
  for (int64_t k = 0; right && k < 22 * C; k++)
    right = v[k] == elem(rows[k / C] * C + k % C);
  CHECK(right);
  ac_array_release(got);

  if (!direct) /* the runtime's buffers are pinned */
    CHECK(rt->stage[DIST_STAGE_SEND].pinned && rt->stage[DIST_STAGE_RECV].pinned &&
          rt->stage[DIST_STAGE_BLOCK].pinned);
  CHECK_EQ_INT(now().pinned_races, 0);
  if (e)
    fprintf(stderr, "rank %d: %s", me, ac_error_text(e));
  ac_error_destroy(e);
  ac_dist_array_destroy(xd);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  /* the same file the GPU backend loads, so the same instance */
  void *lib = dlopen(ARRAYC_CUDA_MOCK, RTLD_NOW | RTLD_LOCAL);
  void *sym = lib ? dlsym(lib, "cuda_mock_get_stats") : NULL;
  memcpy(&stats, &sym, sizeof stats);
  sym = lib ? dlsym(lib, "cuda_mock_fail") : NULL;
  memcpy(&fail, &sym, sizeof fail);
  if (!stats || !fail) {
    fprintf(stderr, "rank %d: cannot load the fake driver %s\n", me, ARRAYC_CUDA_MOCK);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  setenv("ARRAYC_LIBCUDA", ARRAYC_CUDA_MOCK, 1);
  setenv("ARRAYC_CACHE", "0", 1); /* modules from fresh PTX, not a cache on disk */
  ctx = ac_context_create();
  const char *modes[2] = {"0", "1"};
  for (int k = 0; k < 2; k++) {
    ac_dist_runtime *rt = gpu_runtime(modes[k]);
    if (rt) {
      check_transfers(rt, k == 1);
      check_exchanges(rt, k == 1);
    }
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
