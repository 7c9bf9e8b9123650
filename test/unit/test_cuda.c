/* test/unit/test_cuda.c: the CUDA device (runtime/gpu_cuda.c).
 *
 * Three kinds of driver:
 *   - none or not a driver (a path that does not exist, a library without
 *     the entry points, the toolkit's stub libcuda.so whose every call
 *     fails with CUDA_ERROR_STUB_LIBRARY): creation fails cleanly with
 *     AC_ERR_UNSUPPORTED and "no GPU: ...";
 *   - the fake driver cuda_mock.c (ARRAYC_CUDA_MOCK, built next to this
 *     test): the whole device suite below plus what only a fake can do:
 *     failures injected into every step of creation (nothing may leak: the
 *     fake counts live allocations, streams, modules and context
 *     references), the allocator's retry after running out of memory, the
 *     path without memory pools, error messages for results the driver
 *     cannot name;
 *   - a real GPU, when libcuda.so.1 loads and a device is present: the same
 *     device suite on the hardware (allocation, copies, memset, a
 *     hand-written PTX kernel loaded and launched, a module the JIT
 *     rejects, several host threads at once). Without one those checks are
 *     reported as skipped.
 * The PTX kernel is also checked with ptxas when the toolkit is installed.
 */
#define _POSIX_C_SOURCE 200809L /* setenv, unsetenv, mkstemp */

#include "cuda_mock.h"
#include "arrayc/arrayc.h"
#include "runtime/gpu.h"
#include "unit.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STUB_LIBCUDA "/usr/local/cuda/lib64/stubs/libcuda.so"
#define PTXAS "/usr/local/cuda/bin/ptxas"

/* void k(uint64_t *frame, rt_gctl *ctl, int64_t n) (gpu.h's ABI): thread 0
 * of block 0 stores n in frame[0]; every thread adds 1 to frame[1]. The
 * second kernel is the same with at most 100 threads per block. */
#define KERNEL_BODY                                                                                \
  "{\n"                                                                                            \
  "  .reg .pred %p<2>;\n"                                                                          \
  "  .reg .b32 %r<4>;\n"                                                                           \
  "  .reg .b64 %rd<5>;\n"                                                                          \
  "  ld.param.u64 %rd1, [frame];\n"                                                                \
  "  ld.param.u64 %rd2, [n];\n"                                                                    \
  "  cvta.to.global.u64 %rd3, %rd1;\n"                                                             \
  "  mov.u32 %r1, %tid.x;\n"                                                                       \
  "  mov.u32 %r2, %ctaid.x;\n"                                                                     \
  "  or.b32 %r3, %r1, %r2;\n"                                                                      \
  "  setp.ne.s32 %p1, %r3, 0;\n"                                                                   \
  "  @%p1 bra SKIP;\n"                                                                             \
  "  st.global.u64 [%rd3], %rd2;\n"                                                                \
  "SKIP:\n"                                                                                        \
  "  atom.global.add.u64 %rd4, [%rd3+8], 1;\n"                                                     \
  "  ret;\n"                                                                                       \
  "}\n"
static const char ptx_ok[] =
    ".version 6.3\n.target sm_75\n.address_size 64\n\n"
    ".visible .entry write_n(.param .u64 frame, .param .u64 ctl, .param .u64 n)\n" KERNEL_BODY
    "\n.visible .entry write_n_small(.param .u64 frame, .param .u64 ctl, .param .u64 n)\n"
    ".maxntid 100, 1, 1\n" KERNEL_BODY;
/* Rejected by ptxas and by the fake driver alike. */
static const char ptx_bad[] = ".version 6.3\n.target sm_75\n.address_size 64\n\n"
                              ".visible .entry broken()\n{\n  BADPTX;\n}\n";

static bool starts_with(const char *s, const char *prefix) {
  return s && strncmp(s, prefix, strlen(prefix)) == 0;
}

/* rt_cuda_create with ARRAYC_LIBCUDA = lib (NULL: unset). */
static ac_status create_with(ac_context *ctx, const char *lib, int ordinal, rt_gpu **g,
                             ac_error **err) {
  if (lib)
    setenv("ARRAYC_LIBCUDA", lib, 1);
  else
    unsetenv("ARRAYC_LIBCUDA");
  ac_status st = rt_cuda_create(ctx, ordinal, g, err);
  unsetenv("ARRAYC_LIBCUDA");
  return st;
}

/* Creation through lib must fail with AC_ERR_UNSUPPORTED, no device and a
 * message that starts "no GPU: " and contains needle. */
static void expect_no_gpu(const char *lib, int ordinal, const char *needle) {
  ac_context *ctx = ac_context_create();
  rt_gpu *g = (rt_gpu *)1;
  ac_error *err = NULL;
  ac_status st = create_with(ctx, lib, ordinal, &g, &err);
  CHECK_EQ_INT(st, AC_ERR_UNSUPPORTED);
  CHECK(g == NULL);
  CHECK(err != NULL);
  const char *msg = err ? ac_error_message(err) : NULL;
  CHECK(starts_with(msg, "no GPU: "));
  if (needle && !(msg && strstr(msg, needle))) {
    fprintf(stderr, "  message: %s\n  expected to contain: %s\n", msg ? msg : "(none)", needle);
    CHECK(!"message lacks the expected text");
  }
  if (err)
    ac_error_destroy(err);
  ac_context_destroy(ctx);
}

/* ---- no driver ---- */

UNIT_TEST(no_library_at_the_named_path) {
  expect_no_gpu("/nonexistent/libcuda.so.1", 0, "cannot load /nonexistent/libcuda.so.1");
}

UNIT_TEST(library_without_the_driver_api) {
  expect_no_gpu("libm.so.6", 0, "has no cuGetErrorName");
}

UNIT_TEST(stub_driver_fails_cleanly) {
  if (access(STUB_LIBCUDA, R_OK) != 0) {
    printf("SKIPPED stub_driver_fails_cleanly: %s not found\n", STUB_LIBCUDA);
    return;
  }
  expect_no_gpu(STUB_LIBCUDA, 0, "CUDA error in cuInit: CUDA_ERROR_STUB_LIBRARY");
}

UNIT_TEST(invalid_ordinal) {
  ac_context *ctx = ac_context_create();
  rt_gpu *g = NULL;
  ac_error *err = NULL;
  CHECK_EQ_INT(rt_cuda_create(ctx, -1, &g, &err), AC_ERR_INVALID);
  CHECK(g == NULL);
  if (err)
    ac_error_destroy(err);
  ac_context_destroy(ctx);
}

/* ---- the device suite (fake driver or GPU) ---- */

/* Allocation, copies both ways, memset, device-to-device copy. */
static void suite_memory(rt_gpu *g) {
  const rt_gpu_ops *o = g->ops;
  enum { N = 1000 };
  int64_t host[N], back[N];
  for (int i = 0; i < N; i++)
    host[i] = i * 7 - 300;
  rt_dptr a = 0, b = 0, z = 0;
  CHECK_EQ_INT(o->alloc(g, sizeof host, &a, NULL), AC_OK);
  CHECK_EQ_INT(o->alloc(g, sizeof host, &b, NULL), AC_OK);
  CHECK_EQ_INT(o->alloc(g, 0, &z, NULL), AC_OK);
  CHECK(a && b && z && a != b && z != a && z != b);
  CHECK_EQ_INT(o->htod(g, a, host, sizeof host, NULL), AC_OK);
  CHECK_EQ_INT(o->dtod(g, b, a, sizeof host, NULL), AC_OK);
  memset(back, 0, sizeof back);
  CHECK_EQ_INT(o->dtoh(g, back, b, sizeof back, NULL), AC_OK);
  CHECK(memcmp(host, back, sizeof host) == 0);
  CHECK_EQ_INT(o->memset0(g, b + 8 * 10, 8 * 20, NULL), AC_OK);
  CHECK_EQ_INT(o->dtoh(g, back, b, sizeof back, NULL), AC_OK);
  for (int i = 0; i < N; i++)
    CHECK_EQ_INT(back[i], i >= 10 && i < 30 ? 0 : host[i]);
  /* zero-byte operations are no-ops */
  CHECK_EQ_INT(o->htod(g, z, host, 0, NULL), AC_OK);
  CHECK_EQ_INT(o->dtoh(g, back, z, 0, NULL), AC_OK);
  CHECK_EQ_INT(o->memset0(g, z, 0, NULL), AC_OK);
  CHECK_EQ_INT(o->sync(g, NULL), AC_OK);
  o->free(g, a);
  o->free(g, b);
  o->free(g, z);
  o->free(g, 0);
  CHECK_EQ_INT(o->sync(g, NULL), AC_OK);
}

/* htod's source may be reused as soon as htod returns (gpu.h): overwrite
 * a large pageable buffer right after queueing its copy. */
static void suite_htod_source_reuse(rt_gpu *g) {
  const rt_gpu_ops *o = g->ops;
  size_t n = (size_t)64 << 20, words = n / sizeof(uint64_t);
  uint64_t *buf = malloc(n), *back = malloc(n);
  rt_dptr d = 0;
  CHECK(buf && back);
  if (!buf || !back || o->alloc(g, n, &d, NULL) != AC_OK) {
    free(buf);
    free(back);
    CHECK(!"cannot set up the 64 MiB copy");
    return;
  }
  for (size_t i = 0; i < words; i++)
    buf[i] = i * 0x9e3779b97f4a7c15u;
  CHECK_EQ_INT(o->htod(g, d, buf, n, NULL), AC_OK);
  memset(buf, 0xEE, n);
  CHECK_EQ_INT(o->dtoh(g, back, d, n, NULL), AC_OK);
  size_t bad = 0;
  for (size_t i = 0; i < words; i++)
    bad += back[i] != i * 0x9e3779b97f4a7c15u;
  CHECK_EQ_INT(bad, 0);
  o->free(g, d);
  free(buf);
  free(back);
}

/* Runs k on frame words {0, 0} over grid x block with smem; checks. */
static void launch_and_check(rt_gpu *g, rt_gkernel *k, unsigned grid, unsigned block, size_t smem,
                             int64_t n) {
  const rt_gpu_ops *o = g->ops;
  uint64_t w[2] = {0, 0};
  rt_dptr frame = 0;
  CHECK_EQ_INT(o->alloc(g, sizeof w, &frame, NULL), AC_OK);
  CHECK_EQ_INT(o->htod(g, frame, w, sizeof w, NULL), AC_OK);
  ac_error *err = NULL;
  ac_status st = o->launch(g, k, grid, block, smem, frame, 0, n, NULL, &err);
  CHECK_EQ_INT(st, AC_OK);
  if (err) {
    fprintf(stderr, "  launch: %s\n", ac_error_message(err));
    ac_error_destroy(err);
  }
  CHECK_EQ_INT(o->dtoh(g, w, frame, sizeof w, NULL), AC_OK);
  CHECK_EQ_INT(w[0], n);
  CHECK_EQ_INT(w[1], (uint64_t)grid * block);
  o->free(g, frame);
}

/* Launch batches (gpu.h's batch_begin/end): launches held back run before
 * any other operation of the thread, in order (a read-back inside a batch
 * sees them; a free after them does not take their memory away first, which
 * the fake driver would report as an illegal address), and a batch that
 * repeats, which runs as one graph from its second repeat on, does what its
 * launches do. */
static void suite_batches(rt_gpu *g, rt_gkernel *k) {
  const rt_gpu_ops *o = g->ops;
  if (!o->batch_begin)
    return;
  uint64_t w[2] = {0, 0};
  rt_dptr frame = 0, other = 0;
  CHECK_EQ_INT(o->alloc(g, sizeof w, &frame, NULL), AC_OK);
  CHECK_EQ_INT(o->htod(g, frame, w, sizeof w, NULL), AC_OK);
  o->batch_begin(g);
  CHECK_EQ_INT(o->launch(g, k, 1, 32, 0, frame, 0, 99, NULL, NULL), AC_OK);
  CHECK_EQ_INT(o->dtoh(g, w, frame, sizeof w, NULL), AC_OK);
  CHECK_EQ_INT(w[0], 99);
  CHECK_EQ_INT(w[1], 32);
  CHECK_EQ_INT(o->alloc(g, sizeof w, &other, NULL), AC_OK);
  CHECK_EQ_INT(o->htod(g, other, w, sizeof w, NULL), AC_OK);
  CHECK_EQ_INT(o->launch(g, k, 1, 32, 0, other, 0, 5, NULL, NULL), AC_OK);
  CHECK_EQ_INT(o->launch(g, k, 1, 32, 0, other, 0, 6, NULL, NULL), AC_OK);
  o->free(g, other);
  CHECK_EQ_INT(o->batch_end(g, NULL), AC_OK);
  /* six equal batches of two launches: the same effect as twelve */
  for (int it = 0; it < 6; it++) {
    o->batch_begin(g);
    CHECK_EQ_INT(o->launch(g, k, 2, 32, 0, frame, 0, 7, NULL, NULL), AC_OK);
    CHECK_EQ_INT(o->launch(g, k, 3, 32, 0, frame, 0, 8, NULL, NULL), AC_OK);
    CHECK_EQ_INT(o->batch_end(g, NULL), AC_OK);
  }
  CHECK_EQ_INT(o->dtoh(g, w, frame, sizeof w, NULL), AC_OK);
  CHECK_EQ_INT(w[0], 8);
  CHECK_EQ_INT(w[1], 32 + 6 * (64 + 96));
  o->free(g, frame);
  CHECK_EQ_INT(o->sync(g, NULL), AC_OK);
}

static void suite_kernels(rt_gpu *g, bool real) {
  const rt_gpu_ops *o = g->ops;
  const char *syms[2] = {"write_n", "write_n_small"};
  rt_gkernel *ks[2] = {NULL, NULL};
  rt_cuda_module *mod = NULL;
  ac_error *err = NULL;
  ac_status st = rt_cuda_load(g, ptx_ok, syms, 2, &mod, ks, &err);
  CHECK_EQ_INT(st, AC_OK);
  if (st != AC_OK) {
    fprintf(stderr, "  load: %s\n", err ? ac_error_message(err) : "?");
    if (err)
      ac_error_destroy(err);
    return;
  }
  CHECK(mod && ks[0] && ks[1] && ks[0] != ks[1]);
  rt_glimits lim, lim_small;
  o->limits(g, ks[0], &lim);
  o->limits(g, ks[1], &lim_small);
  CHECK(lim.block >= 32 && lim.block % 32 == 0 && lim.block <= lim.max_block);
  CHECK(lim.max_block >= 256 && lim.max_grid >= 1);
  CHECK(lim_small.max_block <= 100 && lim_small.block % 32 == 0 && lim_small.block >= 32);
  CHECK(lim_small.block <= lim_small.max_block);

  launch_and_check(g, ks[0], 3, 64, 0, 42);
  launch_and_check(g, ks[0], lim.max_grid, lim.block, 0, -5);
  launch_and_check(g, ks[1], 2, lim_small.block, 0, INT64_MAX);
  suite_batches(g, ks[0]);
  /* beyond the 48 KiB default: the device opted the kernel in at load */
  launch_and_check(g, ks[0], 2, 32, 60 * 1024, 7);
  /* no blocks: nothing runs, nothing fails */
  CHECK_EQ_INT(o->launch(g, ks[0], 0, 32, 0, 0, 0, 1, NULL, NULL), AC_OK);

  /* a block the kernel cannot have: the driver's error, named (the fake
   * driver's is CUDA_ERROR_INVALID_VALUE) */
  rt_dptr frame = 0;
  CHECK_EQ_INT(o->alloc(g, 16, &frame, NULL), AC_OK);
  st = o->launch(g, ks[1], 1, 128, 0, frame, 0, 1, NULL, &err);
  CHECK_EQ_INT(st, AC_ERR_RUNTIME);
  CHECK(err &&
        starts_with(ac_error_message(err), "CUDA error in cuLaunchKernel (write_n_small): "));
  CHECK(real || (err && strstr(ac_error_message(err), "CUDA_ERROR_INVALID_VALUE")));
  if (err)
    ac_error_destroy(err);
  err = NULL;
  o->free(g, frame);
  CHECK_EQ_INT(o->sync(g, NULL), AC_OK);
  rt_cuda_module_free(g, mod);
}

static void suite_load_errors(rt_gpu *g) {
  const char *syms[1] = {"broken"};
  rt_gkernel *k = NULL;
  rt_cuda_module *mod = (rt_cuda_module *)1;
  ac_error *err = NULL;
  ac_status st = rt_cuda_load(g, ptx_bad, syms, 1, &mod, &k, &err);
  CHECK_EQ_INT(st, AC_ERR_INTERNAL);
  CHECK(mod == NULL);
  const char *msg = err ? ac_error_message(err) : "";
  CHECK(starts_with(msg, "CUDA error in cuModuleLoadDataEx: CUDA_ERROR_INVALID_PTX: "));
  CHECK(strstr(msg, "\nptxas") != NULL); /* the JIT's log follows */
  if (err)
    ac_error_destroy(err);

  const char *missing[2] = {"write_n", "no_such_kernel"};
  rt_gkernel *ks[2] = {NULL, NULL};
  err = NULL;
  st = rt_cuda_load(g, ptx_ok, missing, 2, &mod, ks, &err);
  CHECK_EQ_INT(st, AC_ERR_RUNTIME);
  CHECK(mod == NULL);
  CHECK(err && strstr(ac_error_message(err),
                      "CUDA error in cuModuleGetFunction (no_such_kernel): CUDA_ERROR_NOT_FOUND"));
  if (err)
    ac_error_destroy(err);
}

/* Several host threads use the device at once: every operation must make
 * the device's context current on its own thread. */
typedef struct worker {
  rt_gpu *g;
  int id;
  bool ok;
} worker;

static void *worker_main(void *arg) {
  worker *w = arg;
  const rt_gpu_ops *o = w->g->ops;
  int32_t v[256], back[256];
  for (int i = 0; i < 256; i++)
    v[i] = w->id * 1000 + i;
  w->ok = true;
  for (int rep = 0; rep < 20 && w->ok; rep++) {
    rt_dptr d = 0;
    w->ok = o->alloc(w->g, sizeof v, &d, NULL) == AC_OK &&
            o->htod(w->g, d, v, sizeof v, NULL) == AC_OK &&
            o->dtoh(w->g, back, d, sizeof back, NULL) == AC_OK && memcmp(v, back, sizeof v) == 0;
    o->free(w->g, d);
  }
  return NULL;
}

static void suite_threads(rt_gpu *g) {
  enum { T = 4 };
  pthread_t th[T];
  worker w[T];
  for (int i = 0; i < T; i++) {
    w[i] = (worker){g, i, false};
    CHECK(pthread_create(&th[i], NULL, worker_main, &w[i]) == 0);
  }
  for (int i = 0; i < T; i++) {
    pthread_join(th[i], NULL);
    CHECK(w[i].ok);
  }
}

static void device_suite(rt_gpu *g, bool real) {
  unsigned sm = 0;
  int drv = 0;
  char name[64] = "";
  rt_cuda_info(g, &sm, &drv, name, sizeof name);
  CHECK(sm >= 30 && drv >= 11000 && name[0]);
  CHECK_STR(g->ops->name, "cuda");
  CHECK(g->ops->parallelism(g) >= 1024);
  if (real)
    printf("GPU: %s, sm_%u, driver %d\n", name, sm, drv);
  suite_memory(g);
  suite_htod_source_reuse(g);
  if (sm >= 75) {
    suite_kernels(g, real);
    suite_load_errors(g);
  } else {
    printf("SKIPPED kernels: sm_%u is older than the test's PTX target sm_75\n", sm);
  }
  suite_threads(g);
}

UNIT_TEST(real_gpu_or_no_driver) {
  void *probe = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  ac_context *ctx = ac_context_create();
  rt_gpu *g = NULL;
  ac_error *err = NULL;
  ac_status st = create_with(ctx, NULL, 0, &g, &err);
  if (!probe) {
    CHECK_EQ_INT(st, AC_ERR_UNSUPPORTED);
    CHECK(err && strcmp(ac_error_message(err),
                        "no GPU: libcuda.so.1 not found (is the NVIDIA driver installed?)") == 0);
    printf("SKIPPED real GPU suite: no CUDA driver on this machine\n");
  } else if (st != AC_OK) {
    /* a driver but no usable device */
    CHECK_EQ_INT(st, AC_ERR_UNSUPPORTED);
    CHECK(err && starts_with(ac_error_message(err), "no GPU: "));
    printf("SKIPPED real GPU suite: %s\n", err ? ac_error_message(err) : "?");
  } else {
    device_suite(g, true);
    rt_gpu_release(g);
  }
  if (err)
    ac_error_destroy(err);
  if (probe)
    dlclose(probe);
  ac_context_destroy(ctx);
}

/* ---- the fake driver ---- */

typedef struct mock {
  void *lib;
  cuda_mock_reset_fn *reset;
  cuda_mock_config_fn *config;
  cuda_mock_fail_fn *fail;
  cuda_mock_get_stats_fn *stats;
} mock;

static bool mock_open(mock *m) {
  memset(m, 0, sizeof *m);
  m->lib = dlopen(ARRAYC_CUDA_MOCK, RTLD_NOW | RTLD_LOCAL);
  CHECK(m->lib != NULL);
  if (!m->lib)
    return false;
  void *p[4] = {dlsym(m->lib, "cuda_mock_reset"), dlsym(m->lib, "cuda_mock_config"),
                dlsym(m->lib, "cuda_mock_fail"), dlsym(m->lib, "cuda_mock_get_stats")};
  memcpy(&m->reset, &p[0], sizeof p[0]);
  memcpy(&m->config, &p[1], sizeof p[1]);
  memcpy(&m->fail, &p[2], sizeof p[2]);
  memcpy(&m->stats, &p[3], sizeof p[3]);
  CHECK(p[0] && p[1] && p[2] && p[3]);
  if (!(p[0] && p[1] && p[2] && p[3])) {
    dlclose(m->lib);
    return false;
  }
  m->reset();
  return true;
}

static void mock_close(mock *m) {
  m->reset();
  dlclose(m->lib);
}

/* Nothing of the device's is left in the fake driver. */
static void check_nothing_live(mock *m) {
  cuda_mock_stats s;
  m->stats(&s);
  CHECK_EQ_INT(s.allocs, 0);
  CHECK_EQ_INT(s.streams, 0);
  CHECK_EQ_INT(s.modules, 0);
  CHECK_EQ_INT(s.retains, 0);
  CHECK_EQ_INT(s.depth, 0);
  CHECK_EQ_INT(s.pinned, 0);
}

UNIT_TEST(mock_device_suite) {
  mock m;
  if (!mock_open(&m))
    return;
  ac_context *ctx = ac_context_create();
  rt_gpu *g = NULL;
  ac_error *err = NULL;
  CHECK_EQ_INT(create_with(ctx, ARRAYC_CUDA_MOCK, 0, &g, &err), AC_OK);
  if (g) {
    cuda_mock_stats s;
    m.stats(&s);
    CHECK_EQ_INT(s.retains, 1);
    CHECK_EQ_INT(s.streams, 1);
    CHECK_EQ_INT(s.depth, 0); /* creation left no context current */
    CHECK(s.pool_threshold == UINT64_MAX);
    unsigned sm = 0;
    int drv = 0;
    char name[8];
    rt_cuda_info(g, &sm, &drv, name, sizeof name);
    CHECK_EQ_INT(sm, 90);
    CHECK_EQ_INT(drv, 12040);
    CHECK_STR(name, "arrayc "); /* truncated to the buffer */
    CHECK_EQ_INT(g->ops->parallelism(g), 4 * 2048);
    int before = s.async_allocs;
    device_suite(g, false);
    m.stats(&s);
    CHECK(s.async_allocs > before);  /* the stream-ordered allocator */
    CHECK_EQ_INT(s.smem, 60 * 1024); /* the last launch that ran */
    rt_gpu_release(g);
  }
  if (err)
    ac_error_destroy(err);
  check_nothing_live(&m);
  ac_context_destroy(ctx);
  mock_close(&m);
}

/* ARRAYC_GPU_TRACE=1: the device counts and times its operations and
 * prints them to stderr when it is destroyed (docs/runtime.md); a freed
 * null pointer is not an operation. Off, nothing is printed. */
static int traced_run(const char *trace, char *out, size_t cap) {
  char path[] = "/tmp/arrayc-trace-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0)
    return -1;
  fflush(stderr);
  int saved = dup(2);
  dup2(fd, 2);
  if (trace)
    setenv("ARRAYC_GPU_TRACE", trace, 1);
  ac_context *ctx = ac_context_create();
  rt_gpu *g = NULL;
  ac_status st = create_with(ctx, ARRAYC_CUDA_MOCK, 0, &g, NULL);
  unsetenv("ARRAYC_GPU_TRACE");
  if (st == AC_OK) {
    const rt_gpu_ops *o = g->ops;
    rt_dptr a = 0, b = 0;
    uint64_t host[4] = {1, 2, 3, 4};
    if (o->alloc(g, sizeof host, &a, NULL) == AC_OK && o->alloc(g, sizeof host, &b, NULL) == AC_OK) {
      (void)o->htod(g, a, host, sizeof host, NULL);
      (void)o->htod(g, a, host, sizeof host, NULL);
      (void)o->dtoh(g, host, a, sizeof host, NULL);
      (void)o->sync(g, NULL);
    }
    o->free(g, a);
    o->free(g, b);
    o->free(g, 0);
    rt_gpu_release(g);
  }
  ac_context_destroy(ctx);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  ssize_t n = pread(fd, out, cap - 1, 0);
  out[n > 0 ? n : 0] = '\0';
  close(fd);
  unlink(path);
  return st == AC_OK ? 0 : -1;
}

static bool trace_line(const char *text, const char *op, int calls) {
  const char *p = strstr(text, op);
  int n = 0;
  return p && sscanf(p + strlen(op), "%d", &n) == 1 && n == calls;
}

UNIT_TEST(mock_trace) {
  mock m;
  if (!mock_open(&m))
    return;
  char out[4096];
  CHECK_EQ_INT(traced_run("1", out, sizeof out), 0);
  CHECK(strstr(out, "arrayc: GPU operations on arrayc mock GPU") != NULL);
  CHECK(trace_line(out, "  alloc ", 2));
  CHECK(trace_line(out, "  free ", 2)); /* not the null pointer */
  CHECK(trace_line(out, "  htod (copy in) ", 2));
  CHECK(trace_line(out, "  dtoh (copy out, waits) ", 1));
  CHECK(trace_line(out, "  sync (waits) ", 1));
  CHECK(strstr(out, "launch") == NULL); /* operations never made are left out */
  CHECK_EQ_INT(traced_run("0", out, sizeof out), 0);
  CHECK_STR(out, "");
  CHECK_EQ_INT(traced_run(NULL, out, sizeof out), 0);
  CHECK_STR(out, "");
  mock_close(&m);
}

/* Pinned staging (gpu_cuda.c, "Copies"): small host-to-device copies go
 * through the pinned ring and may reuse their source at once; 3.6 MB of
 * them wrap the 1 MiB ring several times with no synchronisation of ours
 * in between, and the mock finds no pinned byte changed before its copy
 * was synchronised; every copy arrives. A small read-back uses a pinned
 * slot, large copies do not, and ARRAYC_GPU_PINNED=0 turns it all off. */
UNIT_TEST(mock_pinned_staging) {
  mock m;
  if (!mock_open(&m))
    return;
  for (int pinned = 1; pinned >= 0; pinned--) {
    if (!pinned)
      setenv("ARRAYC_GPU_PINNED", "0", 1);
    ac_context *ctx = ac_context_create();
    rt_gpu *g = NULL;
    CHECK_EQ_INT(create_with(ctx, ARRAYC_CUDA_MOCK, 0, &g, NULL), AC_OK);
    unsetenv("ARRAYC_GPU_PINNED");
    if (!g) {
      ac_context_destroy(ctx);
      continue;
    }
    const rt_gpu_ops *o = g->ops;
    cuda_mock_stats s0, s1;
    m.stats(&s0);
    CHECK_EQ_INT(s0.pinned, pinned);
    enum { PIECE = 3000, SLOTS = 600, COPIES = 1200 };
    rt_dptr d = 0;
    CHECK_EQ_INT(o->alloc(g, (size_t)PIECE * SLOTS, &d, NULL), AC_OK);
    unsigned char *host = malloc(PIECE), *back = malloc((size_t)PIECE * SLOTS);
    if (d && host && back) {
      for (int i = 0; i < COPIES; i++) {
        memset(host, i & 0xff, PIECE); /* the source, reused after each call */
        CHECK_EQ_INT(o->htod(g, d + (rt_dptr)(i % SLOTS) * PIECE, host, PIECE, NULL), AC_OK);
      }
      unsigned char small[64];
      CHECK_EQ_INT(o->dtoh(g, small, d + PIECE, sizeof small, NULL), AC_OK);
      CHECK_EQ_INT(small[0], (SLOTS + 1) & 0xff);
      CHECK_EQ_INT(small[63], (SLOTS + 1) & 0xff);
      CHECK_EQ_INT(o->dtoh(g, back, d, (size_t)PIECE * SLOTS, NULL), AC_OK);
      int wrong = 0;
      for (int k = 0; k < SLOTS; k++)
        wrong += back[(size_t)k * PIECE] != ((SLOTS + k) & 0xff) ||
                 back[(size_t)k * PIECE + PIECE - 1] != ((SLOTS + k) & 0xff);
      CHECK_EQ_INT(wrong, 0);
      m.stats(&s1);
      CHECK_EQ_INT(s1.pinned_races, s0.pinned_races);
      CHECK_EQ_INT(s1.pinned_copies - s0.pinned_copies, pinned ? COPIES + 1 : 0);
      CHECK(s1.syncs - s0.syncs >= (pinned ? 4 : 2)); /* the ring waited when full */
    }
    free(host);
    free(back);
    o->free(g, d);
    rt_gpu_release(g);
    ac_context_destroy(ctx);
  }
  check_nothing_live(&m);
  mock_close(&m);
}

UNIT_TEST(mock_without_memory_pools) {
  mock m;
  if (!mock_open(&m))
    return;
  m.config(1, 0);
  ac_context *ctx = ac_context_create();
  rt_gpu *g = NULL;
  CHECK_EQ_INT(create_with(ctx, ARRAYC_CUDA_MOCK, 0, &g, NULL), AC_OK);
  if (g) {
    cuda_mock_stats s;
    m.stats(&s);
    int before = s.async_allocs;
    /* the fake fails cuMemFree while work is queued: free must sync first */
    device_suite(g, false);
    m.stats(&s);
    CHECK_EQ_INT(s.async_allocs, before);
    rt_gpu_release(g);
  }
  check_nothing_live(&m);
  ac_context_destroy(ctx);
  mock_close(&m);
}

UNIT_TEST(mock_creation_failures_leak_nothing) {
  mock m;
  if (!mock_open(&m))
    return;
  static const struct {
    const char *sym, *needle;
  } steps[] = {
      {"cuInit", "no GPU: CUDA error in cuInit: CUDA_ERROR_UNKNOWN: unknown error"},
      {"cuDeviceGetCount", "no GPU: CUDA error in cuDeviceGetCount: CUDA_ERROR_UNKNOWN"},
      {"cuDeviceGet", "no GPU: CUDA error in cuDeviceGet: CUDA_ERROR_UNKNOWN"},
      {"cuDeviceGetAttribute", "no GPU: CUDA error in cuDeviceGetAttribute: CUDA_ERROR_UNKNOWN"},
      {"cuDriverGetVersion", "no GPU: CUDA error in cuDriverGetVersion: CUDA_ERROR_UNKNOWN"},
      {"cuDeviceGetName", "no GPU: CUDA error in cuDeviceGetName: CUDA_ERROR_UNKNOWN"},
      {"cuDevicePrimaryCtxRetain",
       "no GPU: CUDA error in cuDevicePrimaryCtxRetain: CUDA_ERROR_UNKNOWN"},
      {"cuCtxPushCurrent_v2", "no GPU: CUDA error in cuCtxPushCurrent: CUDA_ERROR_UNKNOWN"},
      {"cuStreamCreate", "no GPU: CUDA error in cuStreamCreate: CUDA_ERROR_UNKNOWN"},
  };
  for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
    m.fail(steps[i].sym, CUDA_ERROR_UNKNOWN, 0, -1);
    expect_no_gpu(ARRAYC_CUDA_MOCK, 0, steps[i].needle);
    check_nothing_live(&m);
  }
  /* the memory pool is an optimisation: a pool that cannot be configured
   * means plain allocation, not failure */
  m.fail("cuMemPoolSetAttribute", CUDA_ERROR_UNKNOWN, 0, -1);
  ac_context *ctx = ac_context_create();
  rt_gpu *g = NULL;
  CHECK_EQ_INT(create_with(ctx, ARRAYC_CUDA_MOCK, 0, &g, NULL), AC_OK);
  if (g) {
    cuda_mock_stats s;
    m.stats(&s);
    int before = s.async_allocs;
    suite_memory(g);
    m.stats(&s);
    CHECK_EQ_INT(s.async_allocs, before);
    rt_gpu_release(g);
  }
  ac_context_destroy(ctx);
  check_nothing_live(&m);

  m.reset();
  m.fail("cuInit", CUDA_ERROR_NO_DEVICE, 0, -1);
  expect_no_gpu(ARRAYC_CUDA_MOCK, 0, "no GPU: no CUDA device");
  m.reset();
  m.config(0, 1);
  expect_no_gpu(ARRAYC_CUDA_MOCK, 0, "no GPU: no CUDA device");
  m.config(2, 1);
  expect_no_gpu(ARRAYC_CUDA_MOCK, 2, "no GPU: no CUDA device 2 (2 present)");
  check_nothing_live(&m);
  mock_close(&m);
}

UNIT_TEST(mock_operation_errors) {
  mock m;
  if (!mock_open(&m))
    return;
  ac_context *ctx = ac_context_create();
  rt_gpu *g = NULL;
  CHECK_EQ_INT(create_with(ctx, ARRAYC_CUDA_MOCK, 0, &g, NULL), AC_OK);
  if (!g) {
    ac_context_destroy(ctx);
    mock_close(&m);
    return;
  }
  const rt_gpu_ops *o = g->ops;
  cuda_mock_stats s;
  ac_error *err = NULL;
  rt_dptr d = 0;

  /* out of memory once: the pool is trimmed and the allocation retried */
  m.fail("cuMemAllocAsync", CUDA_ERROR_OUT_OF_MEMORY, 0, 1);
  CHECK_EQ_INT(o->alloc(g, 16, &d, NULL), AC_OK);
  CHECK(d != 0);
  m.stats(&s);
  CHECK_EQ_INT(s.trims, 1);
  o->free(g, d);
  /* ... and again: a NOMEM error */
  m.fail("cuMemAllocAsync", CUDA_ERROR_OUT_OF_MEMORY, 0, 2);
  CHECK_EQ_INT(o->alloc(g, 16, &d, &err), AC_ERR_NOMEM);
  CHECK(d == 0);
  CHECK(err && strcmp(ac_error_message(err), "CUDA error in cuMemAllocAsync (16 bytes): "
                                             "CUDA_ERROR_OUT_OF_MEMORY: out of memory") == 0);
  if (err)
    ac_error_destroy(err);

  /* a result the driver cannot name */
  CHECK_EQ_INT(o->alloc(g, 64, &d, NULL), AC_OK);
  m.fail("cuMemsetD8Async", (CUresult)12345, 0, 1);
  err = NULL;
  CHECK_EQ_INT(o->memset0(g, d, 64, &err), AC_ERR_RUNTIME);
  CHECK(err && strcmp(ac_error_message(err),
                      "CUDA error in cuMemsetD8Async: CUresult 12345: unknown error") == 0);
  if (err)
    ac_error_destroy(err);

  /* a failure found at synchronisation (a kernel's illegal access) */
  m.fail("cuStreamSynchronize", CUDA_ERROR_ILLEGAL_ADDRESS, 0, 1);
  err = NULL;
  CHECK_EQ_INT(o->sync(g, &err), AC_ERR_RUNTIME);
  CHECK(err && strcmp(ac_error_message(err),
                      "CUDA error in cuStreamSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS: an illegal "
                      "memory access was encountered") == 0);
  if (err)
    ac_error_destroy(err);
  m.fail("cuMemcpyHtoDAsync_v2", CUDA_ERROR_UNKNOWN, 0, 1);
  CHECK_EQ_INT(o->htod(g, d, &s, 8, NULL), AC_ERR_RUNTIME);
  m.fail("cuMemcpyDtoHAsync_v2", CUDA_ERROR_UNKNOWN, 0, 1);
  CHECK_EQ_INT(o->dtoh(g, &s, d, 8, NULL), AC_ERR_RUNTIME);
  m.fail("cuMemcpyDtoDAsync_v2", CUDA_ERROR_UNKNOWN, 0, 1);
  CHECK_EQ_INT(o->dtod(g, d, d + 32, 8, NULL), AC_ERR_RUNTIME);
  /* a context that cannot be made current */
  m.fail("cuCtxPushCurrent_v2", CUDA_ERROR_UNKNOWN, 0, 1);
  err = NULL;
  CHECK_EQ_INT(o->sync(g, &err), AC_ERR_RUNTIME);
  CHECK(err && starts_with(ac_error_message(err), "CUDA error in cuCtxPushCurrent: "));
  if (err)
    ac_error_destroy(err);
  o->free(g, d);

  /* a module whose kernel's limits cannot be computed is not loaded */
  const char *syms[1] = {"write_n"};
  rt_gkernel *k = NULL;
  rt_cuda_module *mod = NULL;
  m.fail("cuOccupancyMaxPotentialBlockSize", CUDA_ERROR_UNKNOWN, 0, 1);
  err = NULL;
  CHECK_EQ_INT(rt_cuda_load(g, ptx_ok, syms, 1, &mod, &k, &err), AC_ERR_RUNTIME);
  CHECK(err && strstr(ac_error_message(err), "cuOccupancyMaxPotentialBlockSize (write_n)"));
  if (err)
    ac_error_destroy(err);
  CHECK(mod == NULL);
  /* dynamic shared memory beyond the kernel's: the driver's error */
  CHECK_EQ_INT(rt_cuda_load(g, ptx_ok, syms, 1, &mod, &k, NULL), AC_OK);
  CHECK_EQ_INT(o->alloc(g, 16, &d, NULL), AC_OK);
  CHECK_EQ_INT(o->launch(g, k, 1, 32, 300 * 1024, d, 0, 1, NULL, NULL), AC_ERR_RUNTIME);
  CHECK_EQ_INT(o->launch(g, k, 1, 32, (size_t)1 << 33, d, 0, 1, NULL, NULL), AC_ERR_INVALID);
  o->free(g, d);
  rt_cuda_module_free(g, mod);
  m.stats(&s);
  CHECK_EQ_INT(s.modules, 0);

  rt_gpu_release(g);
  check_nothing_live(&m);
  ac_context_destroy(ctx);
  mock_close(&m);
}

UNIT_TEST(load_on_another_device_is_invalid) {
  ac_context *ctx = ac_context_create();
  rt_gpu *emu = NULL;
  CHECK_EQ_INT(rt_emu_create(ctx, &emu, NULL), AC_OK);
  if (emu) {
    const char *syms[1] = {"write_n"};
    rt_gkernel *k = NULL;
    rt_cuda_module *mod = NULL;
    ac_error *err = NULL;
    CHECK_EQ_INT(rt_cuda_load(emu, ptx_ok, syms, 1, &mod, &k, &err), AC_ERR_INVALID);
    CHECK(err && strstr(ac_error_message(err), "not a CUDA device"));
    if (err)
      ac_error_destroy(err);
    unsigned sm = 1;
    rt_cuda_info(emu, &sm, NULL, NULL, 0);
    CHECK_EQ_INT(sm, 0);
    rt_gpu_release(emu);
  }
  ac_context_destroy(ctx);
}

/* The test's PTX is what a GPU would get: ptxas must accept it (and
 * reject the bad one), so the GPU-only checks cannot fail on a typo. */
UNIT_TEST(test_ptx_assembles) {
  if (access(PTXAS, X_OK) != 0) {
    printf("SKIPPED test_ptx_assembles: %s not found\n", PTXAS);
    return;
  }
  const char *texts[2] = {ptx_ok, ptx_bad};
  for (int i = 0; i < 2; i++) {
    char path[] = "/tmp/arrayc_test_cuda_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd < 0)
      return;
    size_t len = strlen(texts[i]);
    CHECK(write(fd, texts[i], len) == (ssize_t)len);
    close(fd);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "%s -arch=sm_75 -o /dev/null %s >/dev/null 2>&1", PTXAS, path);
    int rc = system(cmd);
    CHECK(i == 0 ? rc == 0 : rc != 0);
    unlink(path);
  }
}

/* ---- what a step of an array loop costs in driver work ----
 * A compiled `iterate` of one map, called with 10 and with 30 steps on the
 * fake driver: the difference of the two calls' driver operations, over
 * the 20 extra steps, is what one step costs. Issue 14's target is one
 * launch and no allocation, copy or memset per step (the loop's state
 * buffers and the counter reused in place). The counts are printed, and
 * checked as they are today so that a change that adds driver work to a
 * step fails here: lower them as steps get cheaper. */
typedef struct step_cost {
  double launches, allocs, frees, copies, memsets, syncs, pushes;
} step_cost;

static void call_steps(ac_function *f, ac_array *xs, int64_t steps, cuda_mock_stats *before,
                       cuda_mock_stats *after, mock *m) {
  ac_datum args[2] = {{AC_DATUM_SCALAR, AC_I64, {.i = steps}, NULL},
                      {AC_DATUM_ARRAY, AC_F32, {0}, xs}};
  ac_datum res;
  ac_error *err = NULL;
  m->stats(before);
  ac_status st = ac_function_call(f, args, 2, &res, 1, &err);
  CHECK_EQ_INT(st, AC_OK);
  if (st != AC_OK) {
    fprintf(stderr, "  (%s)\n", err ? ac_error_message(err) : "no error");
    ac_error_destroy(err);
    memset(after, 0, sizeof *after);
    return;
  }
  CHECK(ac_array_data(res.array) != NULL); /* the result comes back */
  ac_datum_release(&res);
  m->stats(after);
}

static double per_step(int a0, int a1, int b0, int b1) {
  return ((b1 - b0) - (a1 - a0)) / 20.0;
}

/* Compiles `steps(n: i64, xs: f32[]) -> f32[]` of prog on the fake driver
 * (NULL after a failed CHECK); steps_close frees what it made. */
typedef struct steps_fn {
  ac_context *ctx;
  ac_runtime *rt;
  ac_module *mod;
  ac_function *f;
} steps_fn;

static bool steps_compile(const char *prog, steps_fn *s) {
  memset(s, 0, sizeof *s);
  setenv("ARRAYC_LIBCUDA", ARRAYC_CUDA_MOCK, 1);
  setenv("ARRAYC_CACHE", "0", 1); /* no disk cache of the PTX */
  s->ctx = ac_context_create();
  ac_error *err = NULL;
  ac_status st = ac_runtime_create(s->ctx, AC_BACKEND_GPU, &s->rt, &err);
  unsetenv("ARRAYC_LIBCUDA");
  if (st == AC_OK)
    st = ac_module_parse(s->ctx, "steps.ac", prog, strlen(prog), &s->mod, &err);
  if (st == AC_OK)
    st = ac_runtime_compile(s->rt, s->mod, "steps", &s->f, &err);
  CHECK_EQ_INT(st, AC_OK);
  if (st != AC_OK)
    fprintf(stderr, "  (%s)\n", err ? ac_error_message(err) : "no error");
  ac_error_destroy(err);
  return s->f != NULL;
}

static void steps_close(steps_fn *s) {
  ac_function_destroy(s->f);
  ac_module_destroy(s->mod);
  ac_runtime_destroy(s->rt);
  ac_context_destroy(s->ctx);
}

/* Compiles prog's `steps` and calls it on 4096 elements with 1, 10 and 30
 * steps: s[0..1] are the driver's counts before and after the first
 * call, s[2..3] the second's, s[4..5] the third's, and *c the calls per
 * step (the difference between 30 and 10 steps, over 20). False (after a
 * failed CHECK) if it could not. */
static bool steps_cost(mock *m, const char *prog, step_cost *c, cuda_mock_stats s[6]) {
  steps_fn sf;
  bool ok = steps_compile(prog, &sf);
  if (ok) {
    const int64_t n = 4096;
    ac_array *xs = ac_array_create(sf.ctx, AC_F32, 1, &n, NULL, NULL);
    call_steps(sf.f, xs, 1, &s[0], &s[1], m); /* uploads xs, leaves a control block in the pool */
    call_steps(sf.f, xs, 10, &s[2], &s[3], m);
    call_steps(sf.f, xs, 30, &s[4], &s[5], m);
    const cuda_mock_stats *a0 = &s[2], *a1 = &s[3], *b0 = &s[4], *b1 = &s[5];
    *c = (step_cost){
        per_step(a0->launches, a1->launches, b0->launches, b1->launches),
        per_step(a0->alloc_calls, a1->alloc_calls, b0->alloc_calls, b1->alloc_calls),
        per_step(a0->frees, a1->frees, b0->frees, b1->frees),
        per_step(a0->htod + a0->dtoh + a0->dtod, a1->htod + a1->dtoh + a1->dtod,
                 b0->htod + b0->dtoh + b0->dtod, b1->htod + b1->dtoh + b1->dtod),
        per_step(a0->memsets, a1->memsets, b0->memsets, b1->memsets),
        per_step(a0->syncs, a1->syncs, b0->syncs, b1->syncs),
        per_step(a0->pushes, a1->pushes, b0->pushes, b1->pushes)};
    fprintf(stderr,
            "per step: %.2f launches, %.2f allocations, %.2f frees, %.2f copies, %.2f memsets, "
            "%.2f synchronisations, %.2f context pushes\n",
            c->launches, c->allocs, c->frees, c->copies, c->memsets, c->syncs, c->pushes);
    ac_array_release(xs);
  }
  steps_close(&sf);
  return ok;
}

UNIT_TEST(iterate_step_driver_calls) {
  mock m;
  if (!mock_open(&m))
    return;
  static const char prog[] = "fn steps(n: i64, xs: f32[]) -> f32[] {\n"
                             "  iterate(n, |x| map(|v| v * 0.5 + 1.0, x), xs)\n"
                             "}\n";
  step_cost c;
  cuda_mock_stats s[6];
  if (steps_cost(&m, prog, &c, s)) {
    const cuda_mock_stats *w0 = &s[0], *w1 = &s[1], *a0 = &s[2], *a1 = &s[3], *b0 = &s[4],
                          *b1 = &s[5];
    fprintf(stderr,
            "an iterate of one map; a call after the first: %d allocations, %d uploads, %d "
            "read-backs, %d frees\n",
            b1->alloc_calls - b0->alloc_calls, b1->htod - b0->htod, b1->dtoh - b0->dtoh,
            b1->frees - b0->frees);
    /* the first call allocates its control block and uploads it; later
     * ones take it from the device's pool (rt_gpu.ctl_pool) and, with the
     * input resident and the words by value, upload nothing */
    CHECK_EQ_INT(w1->htod - w0->htod, 2); /* xs, then the control block */
    CHECK_EQ_INT(b1->htod - b0->htod, 0);
    CHECK_EQ_INT(a1->htod - a0->htod, 0);
    CHECK(c.launches == 1.0);
    CHECK(c.memsets == 0.0);
    CHECK(c.syncs == 0.0);
    CHECK(c.pushes == 0.0); /* the call's scope made the context current once */
    /* the whole call zeroes nothing: the first launch writes the control
     * block with its frame words (plan_gpu.c, pg_upload_first) */
    CHECK_EQ_INT(b1->memsets - b0->memsets, 0);
    /* call_steps' pushes: the call's scope (none per operation inside
     * it), then reading the result (ac_array_data) and releasing it, each
     * an operation of its own outside any call */
    CHECK_EQ_INT(b1->pushes - b0->pushes, 3);
    CHECK(c.allocs == 0.0); /* the state two steps back is reused (pl_gpu_recycle) */
    CHECK(c.frees == 0.0);
    /* the counter and the new buffer's word travel with the launch, in
     * its parameter block (runtime/gpu.h): no copy */
    CHECK(c.copies == 0.0);
    /* the step's map kernel got all its words in its parameter block
     * (the buffers' data words and extents): the mask's low bits, one per
     * use, all set */
    CHECK(b1->param_mask != 0 && (b1->param_mask & (b1->param_mask + 1)) == 0);
  }
}

/* An iterate whose step is a fold and a map. */
static const char fold_steps[] =
    "fn steps(n: i64, xs: f32[]) -> f32[] {\n"
    "  iterate(n, |x| { let t = fold(|a, b| a + b, 0.0, x); map(|v| v * 0.5 + t, x) }, xs)\n"
    "}\n";

/* A step of a fold (fold.all, whose blocks count themselves in a scratch
 * word) and a map: no memset (the fold's last block resets the counter,
 * plan.h's `counters`, so the scratch is zeroed once per call), no copy
 * and no allocation; and the two launches go as one CUDA graph once the
 * step's batch of launches has repeated (gpu_cuda.c, "Graphs"): the
 * state's buffers alternate, so after at most four steps of warm-up each
 * step is one cuGraphLaunch. ARRAYC_GPU_GRAPHS=0: two launches per step. */
UNIT_TEST(iterate_fold_step_driver_calls) {
  mock m;
  if (!mock_open(&m))
    return;
  step_cost c;
  cuda_mock_stats s[6], end;
  if (steps_cost(&m, fold_steps, &c, s)) {
    for (int i = 0; i < 6; i += 2)
      fprintf(stderr, "call %d: %d launches, %d graph launches of %d kernels, %d graphs\n", i / 2,
              s[i + 1].launches - s[i].launches, s[i + 1].graph_launches - s[i].graph_launches,
              s[i + 1].graph_kernels - s[i].graph_kernels, s[i + 1].graphs);
    int direct = s[5].launches - s[4].launches, graphs = s[5].graph_launches - s[4].graph_launches;
    CHECK_EQ_INT(direct + s[5].graph_kernels - s[4].graph_kernels, 2 * 30); /* every kernel, once */
    CHECK(graphs >= 30 - 4 && direct <= 2 * 4);
    CHECK(s[5].graphs >= 2 && s[5].graphs <= 8); /* the cache: both buffers' batches */
    CHECK(c.memsets == 0.0);
    CHECK_EQ_INT(s[5].memsets - s[4].memsets, 1); /* the scratch, when it is allocated */
    CHECK(c.syncs == 0.0);
    CHECK(c.allocs == 0.0);
    CHECK(c.frees == 0.0);
    CHECK(c.copies == 0.0);
  }
  m.stats(&end);
  CHECK_EQ_INT(end.graphs, 0); /* destroyed with the device */
  setenv("ARRAYC_GPU_GRAPHS", "0", 1);
  if (steps_cost(&m, fold_steps, &c, s)) {
    CHECK(c.launches == 2.0);
    CHECK_EQ_INT(s[5].graph_launches - s[0].graph_launches, 0);
    CHECK(c.memsets == 0.0 && c.copies == 0.0);
  }
  unsetenv("ARRAYC_GPU_GRAPHS");
}

static const char scan_steps[] =
    "fn steps(n: i64, xs: f32[]) -> f32[] {\n"
    "  iterate(n, |x| map(|v| v * 0.001, scan_incl(|a, b| a + b, x)), xs)\n"
    "}\n";

/* A step of a scan: the look-back kernel's tickets and descriptors are
 * counters that its last block clears (gskel_lookback.c's gs_tiles_end),
 * so after the scratch's first memset in a call no step needs one: one
 * kernel per step (a launch or a graph's node) and no other driver call. */
UNIT_TEST(iterate_scan_step_driver_calls) {
  mock m;
  if (!mock_open(&m))
    return;
  step_cost c;
  cuda_mock_stats s[6];
  setenv("ARRAYC_GPU_GRAPHS", "0", 1);
  if (steps_cost(&m, scan_steps, &c, s)) {
    CHECK(c.launches == 2.0); /* the scan and the map */
    CHECK(c.memsets == 0.0);
    CHECK_EQ_INT(s[5].memsets - s[4].memsets, 1); /* the scratch, when it is allocated */
    CHECK(c.copies == 0.0 && c.allocs == 0.0 && c.frees == 0.0 && c.syncs == 0.0);
  }
  unsetenv("ARRAYC_GPU_GRAPHS");
  if (steps_cost(&m, scan_steps, &c, s)) { /* batches: no memset breaks them */
    int direct = s[5].launches - s[4].launches, graphs = s[5].graph_launches - s[4].graph_launches;
    CHECK_EQ_INT(direct + s[5].graph_kernels - s[4].graph_kernels, 2 * 30);
    CHECK(graphs >= 30 - 4);
    CHECK(c.memsets == 0.0);
  }
}

/* fold.block over rows gets blocks sized to the row (plan.h's `warps`): a
 * warp per warp tile of 256 f32, up to the device's preferred block (the
 * fake driver's is 256 threads), and a grid sized for that block. */
UNIT_TEST(row_fold_blocks_fit_the_row) {
  mock m;
  if (!mock_open(&m))
    return;
  static const char prog[] =
      "fn steps(n: i64, xs: f32[]) -> f32[] {\n"
      "  fold(|a, b| a + b, 0.0, generate((64, n), |i, j| xs[(i * n + j) % len(xs)]))\n"
      "}\n";
  steps_fn sf;
  if (!steps_compile(prog, &sf))
    return;
  const int64_t n = 4096;
  ac_array *xs = ac_array_create(sf.ctx, AC_F32, 1, &n, NULL, NULL);
  static const struct {
    int64_t cols;
    unsigned block;
  } want[] = {{1024, 128}, {1500, 192}, {2047, 256}, {4096, 256}, {100000, 256}};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    cuda_mock_stats a, b;
    call_steps(sf.f, xs, want[i].cols, &a, &b, &m);
    CHECK_EQ_INT(b.launches - a.launches, 1);
    CHECK_EQ_INT(b.block, want[i].block);
    /* 16 elements a thread at least (GF_BLOCK_GRAIN): 64 rows of 1024
     * in 128-thread blocks are 32 blocks */
    if (want[i].cols == 1024)
      CHECK_EQ_INT(b.grid, 32);
  }
  ac_array_release(xs);
  steps_close(&sf);
}

/* Temporary memory is sized by what the function's kernels are known to
 * need (pl_run_gpu_tmp): before anything is known, ARRAYC_GPU_TMP per
 * thread (here 1 MiB) with the grid capped to fit 256 MiB (one block of
 * 256); the fake driver runs no kernel, so the call reports no need, and
 * the next calls get no temporary memory and the device's grid (the fake
 * device holds 32 blocks). (The e2e test gpu_tmp.ac covers a need that
 * grows, on the emulator.) */
UNIT_TEST(tmp_sized_by_need) {
  mock m;
  if (!mock_open(&m))
    return;
  static const char prog[] =
      "fn steps(n: i64, xs: f32[]) -> f32[] {\n"
      "  generate(n * 1000, |i| { let r = scan(|a, b| a + b, 0.0, map(|v| v + f32(i), xs)); "
      "r[i % len(xs)] })\n"
      "}\n";
  steps_fn sf;
  if (!steps_compile(prog, &sf))
    return;
  const int64_t n = 64;
  ac_array *xs = ac_array_create(sf.ctx, AC_F32, 1, &n, NULL, NULL);
  cuda_mock_stats a, b, c, d, e, f;
  setenv("ARRAYC_GPU_TMP", "1048576", 1);
  call_steps(sf.f, xs, 1000, &a, &b, &m); /* 10^6 elements */
  unsetenv("ARRAYC_GPU_TMP");
  CHECK_EQ_INT(b.launches - a.launches, 1);
  CHECK_EQ_INT(b.grid, 1);
  CHECK_EQ_INT(b.block, 256);
  call_steps(sf.f, xs, 1000, &c, &d, &m);
  call_steps(sf.f, xs, 1000, &e, &f, &m);
  CHECK_EQ_INT(d.launches - c.launches, 1);
  CHECK_EQ_INT(d.grid, 32);
  CHECK_EQ_INT(f.grid, 32);
  /* no allocation for temporary memory: the result and nothing else
   * (the control block comes from the device's pool) */
  CHECK_EQ_INT(f.alloc_calls - e.alloc_calls, 1);
  ac_array_release(xs);
  steps_close(&sf);
}

/* Graphs that cannot be made leave the kernels to be launched one by one
 * (the call still succeeds); a graph launch that fails is the call's
 * error, naming cuGraphLaunch. */
UNIT_TEST(graph_failures) {
  mock m;
  if (!mock_open(&m))
    return;
  steps_fn sf;
  if (steps_compile(fold_steps, &sf)) {
    const int64_t n = 4096;
    ac_array *xs = ac_array_create(sf.ctx, AC_F32, 1, &n, NULL, NULL);
    ac_datum args[2] = {{AC_DATUM_SCALAR, AC_I64, {.i = 20}, NULL},
                        {AC_DATUM_ARRAY, AC_F32, {0}, xs}};
    ac_datum res;
    ac_error *err = NULL;
    cuda_mock_stats a, b;
    m.fail("cuGraphInstantiateWithFlags", CUDA_ERROR_OUT_OF_MEMORY, 0, -1);
    m.stats(&a);
    CHECK_EQ_INT(ac_function_call(sf.f, args, 2, &res, 1, &err), AC_OK);
    m.stats(&b);
    CHECK_EQ_INT(b.launches - a.launches, 40);
    CHECK_EQ_INT(b.graph_launches - a.graph_launches, 0);
    CHECK_EQ_INT(b.graphs, 0);
    ac_datum_release(&res);
    m.reset();
    m.fail("cuGraphLaunch", CUDA_ERROR_LAUNCH_FAILED, 0, -1);
    ac_status st = ac_function_call(sf.f, args, 2, &res, 1, &err);
    CHECK(st != AC_OK);
    CHECK(err && strstr(ac_error_message(err), "cuGraphLaunch") != NULL);
    if (err)
      fprintf(stderr, "a failed graph launch: %s\n", ac_error_message(err));
    ac_error_destroy(err);
    if (st == AC_OK)
      ac_datum_release(&res);
    m.reset();
    ac_array_release(xs);
  }
  steps_close(&sf);
}

UNIT_MAIN(no_library_at_the_named_path, library_without_the_driver_api, stub_driver_fails_cleanly,
          invalid_ordinal, real_gpu_or_no_driver, mock_device_suite, mock_trace, mock_pinned_staging, mock_without_memory_pools,
          mock_creation_failures_leak_nothing, mock_operation_errors,
          load_on_another_device_is_invalid, test_ptx_assembles, iterate_step_driver_calls,
          iterate_fold_step_driver_calls, iterate_scan_step_driver_calls, row_fold_blocks_fit_the_row,
          tmp_sized_by_need, graph_failures)
