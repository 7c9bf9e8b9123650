/* test/unit/test_extern_kernel.c: extern kernels in GPU plans (plan.h: a
 * hand-written PTX .entry with its parameters taken from frame words),
 * from the plan to the device.
 *
 * Plans are built by hand with the pl_* builders as lowering builds them
 * for a call of an `extern kernel`: alloc the result, launch the kernel with
 * n = the number of threads. They run with pl_run_gpu on
 *   - the fake CUDA driver (cuda_mock.c, through ARRAYC_LIBCUDA), whose
 *     kernel `arrayc_mock_axpy` computes out = a * x + y from the launch's
 *     parameters as the PTX below does: the values, the grid
 *     (ceil(n / block) blocks of the kernel's block), that n = 0 launches
 *     nothing, that a length a device kernel computed is fetched before it
 *     is passed, and the errors (a block beyond the kernel's .maxntid, a
 *     grid beyond 2^31 - 1, a bad address, PTX the driver rejects, an entry
 *     the module lacks), with nothing left alive in the driver;
 *   - a real GPU when there is one (the same plans and values);
 *   - the SIMT emulator, which refuses them.
 * The PTX is checked with ptxas when the toolkit is installed.
 */
#define _POSIX_C_SOURCE 200809L /* setenv, unsetenv, mkstemp */

#include "cuda_mock.h"
#include "runtime/gpu.h"
#include "unit.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

#define PTXAS "/usr/local/cuda/bin/ptxas"

/* out[i] = a * x[i] + y[i] for every thread i below nout, nx and ny. */
#define AXPY_HEAD                                                                                  \
  ".version 6.3\n.target sm_75\n.address_size 64\n\n"                                              \
  "// out[i] = a * x[i] + y[i] for i below nout, nx and ny\n"                                      \
  ".visible .entry arrayc_mock_axpy(.param .f32 a, .param .u64 x, .param .u64 nx,\n"               \
  "    .param .u64 y, .param .u64 ny, .param .u64 out, .param .u64 nout)\n"
#define AXPY_BODY                                                                                  \
  "{\n"                                                                                            \
  "\t.reg .pred %p<4>;\n"                                                                          \
  "\t.reg .b32 %r<4>;\n"                                                                           \
  "\t.reg .f32 %f<6>;\n"                                                                           \
  "\t.reg .b64 %rd<13>;\n"                                                                         \
  "\tld.param.f32 %f1, [a];\n"                                                                     \
  "\tld.param.u64 %rd1, [x];\n"                                                                    \
  "\tld.param.u64 %rd2, [nx];\n"                                                                   \
  "\tld.param.u64 %rd3, [y];\n"                                                                    \
  "\tld.param.u64 %rd4, [ny];\n"                                                                   \
  "\tld.param.u64 %rd5, [out];\n"                                                                  \
  "\tld.param.u64 %rd6, [nout];\n"                                                                 \
  "\tmov.u32 %r1, %ctaid.x;\n"                                                                     \
  "\tmov.u32 %r2, %ntid.x;\n"                                                                      \
  "\tmov.u32 %r3, %tid.x;\n"                                                                       \
  "\tmul.wide.u32 %rd7, %r1, %r2;\n"                                                               \
  "\tcvt.u64.u32 %rd8, %r3;\n"                                                                     \
  "\tadd.s64 %rd7, %rd7, %rd8;\n"                                                                  \
  "\tsetp.ge.s64 %p1, %rd7, %rd2;\n"                                                               \
  "\tsetp.ge.s64 %p2, %rd7, %rd4;\n"                                                               \
  "\tsetp.ge.s64 %p3, %rd7, %rd6;\n"                                                               \
  "\tor.pred %p1, %p1, %p2;\n"                                                                     \
  "\tor.pred %p1, %p1, %p3;\n"                                                                     \
  "\t@%p1 bra DONE;\n"                                                                             \
  "\tshl.b64 %rd8, %rd7, 2;\n"                                                                     \
  "\tcvta.to.global.u64 %rd9, %rd1;\n"                                                             \
  "\tcvta.to.global.u64 %rd10, %rd3;\n"                                                            \
  "\tcvta.to.global.u64 %rd11, %rd5;\n"                                                            \
  "\tadd.s64 %rd9, %rd9, %rd8;\n"                                                                  \
  "\tadd.s64 %rd10, %rd10, %rd8;\n"                                                                \
  "\tadd.s64 %rd11, %rd11, %rd8;\n"                                                                \
  "\tld.global.f32 %f2, [%rd9];\n"                                                                 \
  "\tld.global.f32 %f3, [%rd10];\n"                                                                \
  "\tmul.rn.f32 %f4, %f1, %f2;\n"                                                                  \
  "\tadd.rn.f32 %f5, %f4, %f3;\n"                                                                  \
  "\tst.global.f32 [%rd11], %f5;\n"                                                                \
  "DONE:\n"                                                                                        \
  "\tret;\n"                                                                                       \
  "}\n"
static const char ptx_axpy[] = AXPY_HEAD AXPY_BODY;
/* The same with at most 64 threads per block. */
static const char ptx_axpy_small[] = AXPY_HEAD ".maxntid 64, 1, 1\n" AXPY_BODY;

/* An arrayc kernel (gpu.h's ABI, as test_cuda's): thread 0 stores n in
 * frame[0], every thread adds 1 to frame[1]. */
static const char ptx_write_n[] =
    ".version 6.3\n.target sm_75\n.address_size 64\n\n"
    ".visible .entry write_n(.param .u64 frame, .param .u64 ctl, .param .u64 n)\n"
    "{\n"
    "  .reg .pred %p<2>;\n"
    "  .reg .b32 %r<4>;\n"
    "  .reg .b64 %rd<5>;\n"
    "  ld.param.u64 %rd1, [frame];\n"
    "  ld.param.u64 %rd2, [n];\n"
    "  cvta.to.global.u64 %rd3, %rd1;\n"
    "  mov.u32 %r1, %tid.x;\n"
    "  mov.u32 %r2, %ctaid.x;\n"
    "  or.b32 %r3, %r1, %r2;\n"
    "  setp.ne.s32 %p1, %r3, 0;\n"
    "  @%p1 bra SKIP;\n"
    "  st.global.u64 [%rd3], %rd2;\n"
    "SKIP:\n"
    "  atom.global.add.u64 %rd4, [%rd3+8], 1;\n"
    "  ret;\n"
    "}\n";

/* Rejected by ptxas and by the fake driver alike. */
static const char ptx_bad[] = ".version 6.3\n.target sm_75\n.address_size 64\n\n"
                              ".visible .entry arrayc_mock_axpy()\n{\n  BADPTX;\n}\n";

static bool starts_with(const char *s, const char *prefix) {
  return s && strncmp(s, prefix, strlen(prefix)) == 0;
}

static bool contains(const char *s, const char *needle) {
  if (s && strstr(s, needle))
    return true;
  fprintf(stderr, "  message: %s\n  expected to contain: %s\n", s ? s : "(none)", needle);
  return false;
}

/* ---- the fake driver ---- */

typedef struct mock {
  void *lib;
  cuda_mock_reset_fn *reset;
  cuda_mock_get_stats_fn *stats;
} mock;

static bool mock_open(mock *m) {
  memset(m, 0, sizeof *m);
  m->lib = dlopen(ARRAYC_CUDA_MOCK, RTLD_NOW | RTLD_LOCAL);
  CHECK(m->lib != NULL);
  if (!m->lib)
    return false;
  void *p[2] = {dlsym(m->lib, "cuda_mock_reset"), dlsym(m->lib, "cuda_mock_get_stats")};
  memcpy(&m->reset, &p[0], sizeof p[0]);
  memcpy(&m->stats, &p[1], sizeof p[1]);
  CHECK(p[0] && p[1]);
  if (!(p[0] && p[1])) {
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

/* rt_cuda_create with ARRAYC_LIBCUDA = lib (NULL: the system's driver). */
static ac_status create_with(ac_context *ctx, const char *lib, rt_gpu **g, ac_error **err) {
  if (lib)
    setenv("ARRAYC_LIBCUDA", lib, 1);
  else
    unsetenv("ARRAYC_LIBCUDA");
  ac_status st = rt_cuda_create(ctx, 0, g, err);
  unsetenv("ARRAYC_LIBCUDA");
  return st;
}

/* ---- plans ---- */

/* out = a * xs + ys by extern kernel k0 (entry arrayc_mock_axpy in ptx,
 * `block` threads per block), n = len(xs) threads, or n_const when it is
 * not negative. Frame: xs %0 %1, ys %2 %3, a %4, out %5 %6. The kernel's x
 * is word xword passed as a pointer (%0). */
static pl_plan *axpy_plan(ac_context *ctx, const char *ptx, unsigned block, uint32_t xword,
                          int64_t n_const) {
  pl_plan *p = pl_create(ctx, "axpy", "axpy.ac");
  p->gpu = true;
  uint32_t xs = pl_slots(p, 2), ys = pl_slots(p, 2), a = pl_slots(p, 1), out = pl_slots(p, 2);
  pl_param(p, xs, AC_F32, 1);
  pl_param(p, ys, AC_F32, 1);
  pl_param(p, a, AC_F32, 0);
  pl_result(p, out, AC_F32, 1);
  uint32_t k = pl_kernel_add_extern(p, "arrayc_mock_axpy", ptx, strlen(ptx), block);
  pl_kernel_arg(p, k, a, AC_F32, false);
  pl_kernel_arg(p, k, xword, AC_F32, true);
  pl_kernel_arg(p, k, xs + 1, AC_I64, false);
  pl_kernel_arg(p, k, ys, AC_F32, true);
  pl_kernel_arg(p, k, ys + 1, AC_I64, false);
  pl_kernel_arg(p, k, out, AC_F32, true);
  pl_kernel_arg(p, k, out + 1, AC_I64, false);
  uint32_t nx = pl_x_word(p, xs + 1);
  pl_alloc(p, out, AC_F32, 1, &nx, PL_AUTO);
  pl_launch(p, k, n_const >= 0 ? pl_x_const(p, n_const) : nx, PL_AUTO);
  ac_error *err = NULL;
  CHECK_EQ_INT(pl_finish(p, &err), AC_OK);
  if (err) {
    fprintf(stderr, "%s", ac_error_text(err));
    ac_error_destroy(err);
  }
  return p;
}

static ac_datum arr_datum(ac_array *a) {
  ac_datum d;
  memset(&d, 0, sizeof d);
  d.kind = AC_DATUM_ARRAY;
  d.type = ac_array_type(a);
  d.array = a;
  return d;
}

/* The inputs of axpy_plan: xs[i] = i % 1000, ys[i] = i % 7 (n of each), a. */
typedef struct axpy_args {
  ac_array *x, *y;
  ac_datum d[3];
} axpy_args;

static void axpy_args_make(ac_context *ctx, axpy_args *A, int64_t n, float a) {
  float *xs = malloc((size_t)(n ? n : 1) * sizeof *xs),
        *ys = malloc((size_t)(n ? n : 1) * sizeof *ys);
  for (int64_t i = 0; i < n; i++) {
    xs[i] = (float)(i % 1000);
    ys[i] = (float)(i % 7);
  }
  A->x = ac_array_create(ctx, AC_F32, 1, &n, xs, NULL);
  A->y = ac_array_create(ctx, AC_F32, 1, &n, ys, NULL);
  A->d[0] = arr_datum(A->x);
  A->d[1] = arr_datum(A->y);
  memset(&A->d[2], 0, sizeof A->d[2]);
  A->d[2].kind = AC_DATUM_SCALAR;
  A->d[2].type = AC_F32;
  A->d[2].s.f = a;
  free(xs);
  free(ys);
}

static void axpy_args_free(axpy_args *A) {
  ac_array_release(A->x);
  ac_array_release(A->y);
}

/* How many of out[0, n) are not a * (i % 1000) + i % 7 (exact in f32). */
static int64_t axpy_wrong(const float *out, int64_t n, float a) {
  int64_t bad = 0;
  for (int64_t i = 0; i < n; i++)
    bad += out[i] != a * (float)(i % 1000) + (float)(i % 7);
  return bad;
}

/* Runs p (kernel k0 loaded from its own PTX) on g with inputs of length n;
 * the status, the result in *res (or nothing), the error in *err. */
static ac_status run_axpy(rt_gpu *g, const pl_plan *p, int64_t n, float a, ac_datum *res,
                          ac_error **err) {
  ac_context *ctx = g->ctx;
  rt_cuda_module *mod = NULL;
  rt_gkernel *k = NULL;
  ac_status st = rt_cuda_load_extern(g, &p->kernels[0], &mod, &k, err);
  CHECK_EQ_INT(st, AC_OK);
  if (st != AC_OK)
    return st;
  axpy_args A;
  axpy_args_make(ctx, &A, n, a);
  st = pl_run_gpu(p, g, &k, A.d, 3, res, 1, err);
  axpy_args_free(&A);
  rt_cuda_module_free(g, mod);
  return st;
}

/* ---- the suite (fake driver or GPU; m == NULL on a GPU) ---- */

static void suite_axpy(rt_gpu *g, mock *m) {
  ac_context *ctx = g->ctx;
  cuda_mock_stats s0, s1;
  if (m)
    m->stats(&s0);
  /* 1000 threads in blocks of 128: 8 blocks */
  pl_plan *p = axpy_plan(ctx, ptx_axpy, 128, 0, -1);
  ac_datum res;
  ac_error *err = NULL;
  ac_status st = run_axpy(g, p, 1000, 2.5f, &res, &err);
  CHECK_EQ_INT(st, AC_OK);
  if (err) {
    fprintf(stderr, "  run: %s\n", ac_error_message(err));
    ac_error_destroy(err);
    err = NULL;
  }
  if (st == AC_OK) {
    CHECK_EQ_INT(ac_array_size(res.array), 1000);
    const float *out = ac_array_data(res.array);
    CHECK(out != NULL);
    if (out)
      CHECK_EQ_INT(axpy_wrong(out, 1000, 2.5f), 0);
    ac_datum_release(&res);
  }
  if (m) {
    m->stats(&s1);
    CHECK_EQ_INT(s1.launches, s0.launches + 1);
    CHECK_EQ_INT(s1.grid, 8);
    CHECK_EQ_INT(s1.block, 128);
    CHECK_EQ_INT(s1.smem, 0);
  }
  /* odd sizes: 1 thread per block, 7 of them; 1 block of 1000 for 1 */
  pl_destroy(p);
  p = axpy_plan(ctx, ptx_axpy, 1, 0, -1);
  st = run_axpy(g, p, 7, -1.5f, &res, NULL);
  CHECK_EQ_INT(st, AC_OK);
  if (st == AC_OK) {
    const float *out = ac_array_data(res.array);
    CHECK(out && axpy_wrong(out, 7, -1.5f) == 0);
    ac_datum_release(&res);
  }
  if (m) {
    m->stats(&s1);
    CHECK_EQ_INT(s1.grid, 7);
    CHECK_EQ_INT(s1.block, 1);
  }
  pl_destroy(p);
  p = axpy_plan(ctx, ptx_axpy, 1000, 0, -1);
  st = run_axpy(g, p, 1, 4.0f, &res, NULL);
  CHECK_EQ_INT(st, AC_OK);
  if (st == AC_OK) {
    const float *out = ac_array_data(res.array);
    CHECK(out && axpy_wrong(out, 1, 4.0f) == 0);
    ac_datum_release(&res);
  }
  if (m) {
    m->stats(&s1);
    CHECK_EQ_INT(s1.grid, 1);
    CHECK_EQ_INT(s1.block, 1000);
  }
  /* n = 0 launches nothing */
  if (m)
    m->stats(&s0);
  st = run_axpy(g, p, 0, 1.0f, &res, NULL);
  CHECK_EQ_INT(st, AC_OK);
  if (st == AC_OK) {
    CHECK_EQ_INT(ac_array_size(res.array), 0);
    ac_datum_release(&res);
  }
  if (m) {
    m->stats(&s1);
    CHECK_EQ_INT(s1.launches, s0.launches);
  }
  pl_destroy(p);
}

/* The kernel's nout is a word an arrayc kernel wrote on the device just
 * before (a pending word): the executor must fetch it before passing it.
 * Frame: count %0 and tally %1 (written by k0), xs %2 %3, ys %4 %5, a %6,
 * out %7 %8. */
static void suite_pending_argument(rt_gpu *g, mock *m) {
  ac_context *ctx = g->ctx;
  pl_plan *p = pl_create(ctx, "pending", "pending.ac");
  p->gpu = true;
  uint32_t count = pl_slots(p, 1), tally = pl_slots(p, 1), xs = pl_slots(p, 2), ys = pl_slots(p, 2),
           a = pl_slots(p, 1), out = pl_slots(p, 2);
  pl_param(p, xs, AC_F32, 1);
  pl_param(p, ys, AC_F32, 1);
  pl_param(p, a, AC_F32, 0);
  pl_result(p, out, AC_F32, 1);
  uint32_t k0 = pl_kernel_add(p, "map", "write_n", 1);
  pl_kernel_write(p, k0, count);
  pl_kernel_write(p, k0, tally);
  uint32_t k1 = pl_kernel_add_extern(p, "arrayc_mock_axpy", ptx_axpy, strlen(ptx_axpy), 256);
  uint32_t argw[7] = {a, xs, xs + 1, ys, ys + 1, out, count};
  for (int i = 0; i < 7; i++)
    pl_kernel_arg(p, k1, argw[i], i == 0 ? AC_F32 : AC_I64, i == 1 || i == 3 || i == 5);
  uint32_t nx = pl_x_word(p, xs + 1);
  pl_set(p, tally, pl_x_const(p, 0));
  pl_launch(p, k0, pl_x_const(p, 600), PL_AUTO);
  pl_alloc(p, out, AC_F32, 1, &nx, PL_AUTO);
  pl_launch(p, k1, nx, PL_AUTO);
  ac_error *err = NULL;
  CHECK_EQ_INT(pl_finish(p, &err), AC_OK);
  if (err) {
    fprintf(stderr, "%s", ac_error_text(err));
    ac_error_destroy(err);
    err = NULL;
  }
  const char *syms[1] = {"write_n"};
  rt_cuda_module *mods[2] = {NULL, NULL};
  rt_gkernel *ks[2] = {NULL, NULL};
  CHECK_EQ_INT(rt_cuda_load(g, ptx_write_n, syms, 1, &mods[0], &ks[0], NULL), AC_OK);
  CHECK_EQ_INT(rt_cuda_load_extern(g, &p->kernels[k1], &mods[1], &ks[1], NULL), AC_OK);
  axpy_args A;
  axpy_args_make(ctx, &A, 1000, 3.0f);
  ac_datum res;
  ac_status st = pl_run_gpu(p, g, ks, A.d, 3, &res, 1, &err);
  CHECK_EQ_INT(st, AC_OK);
  if (err) {
    fprintf(stderr, "  run: %s\n", ac_error_message(err));
    ac_error_destroy(err);
  }
  if (st == AC_OK) {
    CHECK_EQ_INT(ac_array_size(res.array), 1000);
    const float *o = ac_array_data(res.array);
    CHECK(o != NULL);
    if (o) {
      CHECK_EQ_INT(axpy_wrong(o, 600, 3.0f), 0); /* nout = 600, from the device */
      uint32_t bits;
      memcpy(&bits, &o[600], sizeof bits);
      CHECK(!m || bits == 0xA5A5A5A5u); /* the fake driver's fresh memory: not written */
    }
    ac_datum_release(&res);
  }
  axpy_args_free(&A);
  rt_cuda_module_free(g, mods[0]);
  rt_cuda_module_free(g, mods[1]);
  pl_destroy(p);
}

/* What goes wrong, with the kernel's name in the message. */
static void suite_errors(rt_gpu *g, bool real) {
  ac_context *ctx = g->ctx;
  ac_datum res;
  ac_error *err = NULL;
  /* a block beyond the kernel's .maxntid */
  pl_plan *p = axpy_plan(ctx, ptx_axpy_small, 128, 0, -1);
  CHECK_EQ_INT(run_axpy(g, p, 100, 1.0f, &res, &err), AC_ERR_INVALID);
  CHECK(err && contains(ac_error_message(err),
                        "kernel arrayc_mock_axpy launched with blocks of 128 threads; it allows "
                        "at most 64 on "));
  ac_error_destroy(err);
  err = NULL;
  pl_destroy(p);
  /* more blocks than a grid may have */
  p = axpy_plan(ctx, ptx_axpy, 1, 0, (int64_t)1 << 40);
  CHECK_EQ_INT(run_axpy(g, p, 10, 1.0f, &res, &err), AC_ERR_RUNTIME);
  CHECK(err && contains(ac_error_message(err),
                        "plan 'axpy': extern kernel k0 (arrayc_mock_axpy): 1099511627776 threads "
                        "need 1099511627776 blocks of 1, more than the 2147483647 a launch may "
                        "have"));
  ac_error_destroy(err);
  err = NULL;
  pl_destroy(p);
  /* a bad address (the scalar a passed as x): the validator refuses the
   * plan (runtime/plan_slots.c), so it is made after pl_finish to reach the
   * driver, which refuses the launch at once (a GPU would fail
   * asynchronously; not tried on one) */
  if (!real) {
    p = axpy_plan(ctx, ptx_axpy, 128, 0, -1);
    p->kernels[0].kargs[1].word = 4;
    CHECK_EQ_INT(run_axpy(g, p, 100, 1.0f, &res, &err), AC_ERR_RUNTIME);
    CHECK(err && contains(ac_error_message(err), "CUDA error in cuLaunchKernel (arrayc_mock_axpy): "
                                                 "CUDA_ERROR_ILLEGAL_ADDRESS"));
    ac_error_destroy(err);
    err = NULL;
    p->finished = false; /* what pl_finish says of it (the uses no longer match either) */
    CHECK_EQ_INT(pl_finish(p, &err), AC_ERR_INTERNAL);
    CHECK(err && contains(ac_error_message(err), "malformed plan 'axpy' (kernel 0)"));
    ac_error_destroy(err);
    err = NULL;
    pl_destroy(p);
  }
  /* PTX the driver rejects, and a module without the entry */
  p = axpy_plan(ctx, ptx_bad, 128, 0, -1);
  rt_cuda_module *mod = (rt_cuda_module *)1;
  rt_gkernel *k = NULL;
  CHECK_EQ_INT(rt_cuda_load_extern(g, &p->kernels[0], &mod, &k, &err), AC_ERR_INVALID);
  CHECK(mod == NULL);
  CHECK(err && starts_with(ac_error_message(err), "the PTX of extern kernel 'arrayc_mock_axpy': "
                                                  "CUDA error in cuModuleLoadDataEx"));
  CHECK(real || (err && contains(ac_error_message(err), "mock: BADPTX")));
  ac_error_destroy(err);
  err = NULL;
  pl_destroy(p);
  p = axpy_plan(ctx, ptx_write_n, 128, 0, -1);
  CHECK(rt_cuda_load_extern(g, &p->kernels[0], &mod, &k, &err) != AC_OK);
  CHECK(mod == NULL);
  CHECK(err && contains(ac_error_message(err), "cuModuleGetFunction (arrayc_mock_axpy)"));
  ac_error_destroy(err);
  pl_destroy(p);
}

static void device_suite(rt_gpu *g, mock *m) {
  suite_axpy(g, m);
  suite_pending_argument(g, m);
  suite_errors(g, m == NULL);
  CHECK_EQ_INT(g->ops->sync(g, NULL), AC_OK);
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
}

UNIT_TEST(extern_kernels_on_the_fake_driver) {
  mock m;
  if (!mock_open(&m))
    return;
  ac_context *ctx = ac_context_create();
  rt_gpu *g = NULL;
  ac_error *err = NULL;
  CHECK_EQ_INT(create_with(ctx, ARRAYC_CUDA_MOCK, &g, &err), AC_OK);
  if (err)
    ac_error_destroy(err);
  if (g) {
    device_suite(g, &m);
    rt_gpu_release(g);
  }
  check_nothing_live(&m);
  ac_context_destroy(ctx);
  mock_close(&m);
}

UNIT_TEST(extern_kernels_on_a_real_gpu) {
  void *probe = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!probe) {
    printf("SKIPPED extern kernels on a GPU: no CUDA driver on this machine\n");
    return;
  }
  ac_context *ctx = ac_context_create();
  rt_gpu *g = NULL;
  ac_error *err = NULL;
  if (create_with(ctx, NULL, &g, &err) != AC_OK) {
    printf("SKIPPED extern kernels on a GPU: %s\n", err ? ac_error_message(err) : "?");
  } else {
    unsigned sm = 0;
    rt_cuda_info(g, &sm, NULL, NULL, 0);
    if (sm >= 75)
      device_suite(g, NULL);
    else
      printf("SKIPPED extern kernels on a GPU: sm_%u is older than the PTX's sm_75\n", sm);
    rt_gpu_release(g);
  }
  if (err)
    ac_error_destroy(err);
  ac_context_destroy(ctx);
  dlclose(probe);
}

/* The emulator runs host code: it refuses a PTX kernel, directly and in a
 * plan (whose error says which kernel). */
UNIT_TEST(the_emulator_refuses_extern_kernels) {
  ac_context *ctx = ac_context_create();
  rt_gpu *g = NULL;
  CHECK_EQ_INT(rt_emu_create(ctx, &g, NULL), AC_OK);
  if (!g) {
    ac_context_destroy(ctx);
    return;
  }
  rt_gkernel *k = NULL;
  /* any host function stands for the kernel: it is never called */
  CHECK_EQ_INT(rt_emu_kernel(g, (rt_gkernel_fn)(void (*)(void))abort, 0, 0, &k, NULL), AC_OK);
  float a = 1;
  void *params[1] = {&a};
  ac_error *err = NULL;
  CHECK_EQ_INT(g->ops->launch_params(g, k, 1, 32, params, &err), AC_ERR_UNSUPPORTED);
  CHECK(err && contains(ac_error_message(err), "the SIMT emulator cannot run PTX kernels"));
  ac_error_destroy(err);
  err = NULL;
  pl_plan *p = axpy_plan(ctx, ptx_axpy, 128, 0, -1);
  axpy_args A;
  axpy_args_make(ctx, &A, 10, 1.0f);
  ac_datum res;
  CHECK_EQ_INT(pl_run_gpu(p, g, &k, A.d, 3, &res, 1, &err), AC_ERR_UNSUPPORTED);
  CHECK(err && contains(ac_error_message(err), "plan 'axpy': extern kernel k0 (arrayc_mock_axpy): "
                                               "the SIMT emulator cannot run PTX kernels"));
  ac_error_destroy(err);
  axpy_args_free(&A);
  pl_destroy(p);
  rt_emu_kernel_free(g, k);
  rt_gpu_release(g);
  ac_context_destroy(ctx);
}

/* pl_validate keeps extern kernels out of CPU plans; should one get
 * through, the CPU executor refuses it rather than calling no function. */
UNIT_TEST(the_cpu_executor_refuses_extern_kernels) {
  ac_context *ctx = ac_context_create();
  pl_plan *p = axpy_plan(ctx, ptx_axpy, 128, 0, -1);
  p->gpu = false; /* behind pl_finish's back */
  axpy_args A;
  axpy_args_make(ctx, &A, 10, 1.0f);
  ac_datum res;
  ac_error *err = NULL;
  CHECK_EQ_INT(pl_run(p, NULL, NULL, A.d, 3, &res, 1, &err), AC_ERR_INTERNAL);
  CHECK(err && contains(ac_error_message(err),
                        "plan 'axpy': kernel k0 (arrayc_mock_axpy) is an extern PTX kernel, which "
                        "only a GPU plan can launch"));
  ac_error_destroy(err);
  axpy_args_free(&A);
  pl_destroy(p);
  ac_context_destroy(ctx);
}

/* The PTX is what a GPU would get: ptxas must accept it (and reject the
 * bad one), so the GPU-only checks cannot fail on a typo. */
UNIT_TEST(test_ptx_assembles) {
  if (access(PTXAS, X_OK) != 0) {
    printf("SKIPPED test_ptx_assembles: %s not found\n", PTXAS);
    return;
  }
  const char *texts[4] = {ptx_axpy, ptx_axpy_small, ptx_write_n, ptx_bad};
  for (int i = 0; i < 4; i++) {
    char path[] = "/tmp/arrayc_test_extern_XXXXXX";
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
    CHECK(i < 3 ? rc == 0 : rc != 0);
    unlink(path);
  }
}

UNIT_MAIN(extern_kernels_on_the_fake_driver, extern_kernels_on_a_real_gpu,
          the_emulator_refuses_extern_kernels, the_cpu_executor_refuses_extern_kernels,
          test_ptx_assembles)
