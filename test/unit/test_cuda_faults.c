/* test/unit/test_cuda_faults.c: device faults on the fake CUDA driver
 * (cuda_mock.c), through the public API: compiled functions called on a
 * GPU runtime while the driver runs out of memory, refuses a launch,
 * reports a kernel's failure at a synchronisation, rejects a module, or
 * loses its context (docs/runtime.md, "Device faults").
 *
 * Each fault must give its status and a message that says what failed,
 * leave the caller's results untouched, leak nothing in the driver (the
 * fake counts live allocations, modules, streams, pinned blocks and graphs;
 * host memory is LeakSanitizer's in the sanitizer build) and leave the
 * runtime as it was: the next call on the same function gives the right
 * answer. A lost context cannot be used again: every later operation on
 * that runtime fails with an error that says so, and once the runtime and
 * its arrays are gone a new runtime gets a fresh context.
 *
 * The fake driver runs arrayc's own kernels as stand-ins (they compute
 * nothing), but its `arrayc_mock_axpy` is a real extern kernel (out = a * x
 * + y), so `g` below, two launches of it, has an answer to check. Calls of
 * functions with arrayc kernels (an iterate of a fold and a map: scratch,
 * control blocks, graphs) check statuses and leaks only.
 */
#define _POSIX_C_SOURCE 200809L /* setenv, unsetenv */

#include "arrayc/arrayc.h"
#include "cuda_mock.h"
#include "unit.h"

#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char prog[] =
    "extern kernel axpy(a: f32, xs: f32[], ys: f32[]) -> f32[len(xs)]\n"
    "  threads len(xs) block 32\n"
    "  ptx \".version 7.0\\n.target sm_70\\n.address_size 64\\n"
    ".visible .entry arrayc_mock_axpy() { ret; }\\n\"\n"
    "  entry \"arrayc_mock_axpy\";\n"
    "fn g(a: f32, xs: f32[], ys: f32[]) -> f32[] { axpy(a, axpy(a, xs, ys), ys) }\n"
    "fn own(a: f32, xs: f32[], ys: f32[]) -> f32[] { map(|x, y| a * x + y, xs, ys) }\n"
    "fn mixed(a: f32, xs: f32[], ys: f32[]) -> f32[] { axpy(a, map(|x| x * 2.0, xs), ys) }\n"
    "fn steps(a: f32, xs: f32[], ys: f32[]) -> f32[] {\n"
    "  iterate(3, |x| { let t = fold(|p, q| p + q, 0.0, x); map(|v| v * 0.5 + t, x) }, xs)\n"
    "}\n";

enum { N = 100 };
static const float A = 2.0f;

typedef struct fx {
  void *lib;
  cuda_mock_reset_fn *reset;
  cuda_mock_config_fn *config;
  cuda_mock_fail_fn *fail;
  cuda_mock_get_stats_fn *stats;
  cuda_mock_lose_fn *lose;
  ac_context *ctx;
  ac_runtime *rt;
  ac_module *mod;
  ac_function *g;
} fx;

static bool contains(const char *s, const char *needle) {
  if (s && strstr(s, needle))
    return true;
  fprintf(stderr, "  message: %s\n  expected to contain: %s\n", s ? s : "(none)", needle);
  return false;
}

/* A GPU runtime on a fresh context and `name` compiled on it. */
static bool fx_runtime(fx *f, ac_error **err) {
  setenv("ARRAYC_LIBCUDA", ARRAYC_CUDA_MOCK, 1);
  ac_status st = ac_runtime_create(f->ctx, AC_BACKEND_GPU, &f->rt, err);
  unsetenv("ARRAYC_LIBCUDA");
  return st == AC_OK;
}

static bool fx_compile_in(fx *f, ac_module *m, const char *name, ac_function **out) {
  ac_error *err = NULL;
  ac_status st = ac_runtime_compile(f->rt, m, name, out, &err);
  CHECK_EQ_INT(st, AC_OK);
  if (st != AC_OK)
    fprintf(stderr, "  compiling %s: %s\n", name, err ? ac_error_message(err) : "no error");
  ac_error_destroy(err);
  return st == AC_OK;
}

static bool fx_compile(fx *f, const char *name, ac_function **out) {
  return fx_compile_in(f, f->mod, name, out);
}

/* The fake driver, a context, a GPU runtime and `g` compiled; false after
 * a failed CHECK. pools: whether the device has memory pools. */
static bool fx_open(fx *f, bool pools) {
  memset(f, 0, sizeof *f);
  f->lib = dlopen(ARRAYC_CUDA_MOCK, RTLD_NOW | RTLD_LOCAL);
  CHECK(f->lib != NULL);
  if (!f->lib)
    return false;
  void *p[6] = {dlsym(f->lib, "cuda_mock_reset"), dlsym(f->lib, "cuda_mock_config"),
                dlsym(f->lib, "cuda_mock_fail"),  dlsym(f->lib, "cuda_mock_get_stats"),
                dlsym(f->lib, "cuda_mock_lose"),  NULL};
  memcpy(&f->reset, &p[0], sizeof p[0]);
  memcpy(&f->config, &p[1], sizeof p[1]);
  memcpy(&f->fail, &p[2], sizeof p[2]);
  memcpy(&f->stats, &p[3], sizeof p[3]);
  memcpy(&f->lose, &p[4], sizeof p[4]);
  CHECK(p[0] && p[1] && p[2] && p[3] && p[4]);
  if (!(p[0] && p[1] && p[2] && p[3] && p[4])) {
    dlclose(f->lib);
    return false;
  }
  f->reset();
  f->config(1, pools ? 1 : 0);
  setenv("ARRAYC_CACHE", "0", 1); /* every module is loaded from fresh PTX */
  f->ctx = ac_context_create();
  ac_error *err = NULL;
  bool ok = fx_runtime(f, &err) &&
            ac_module_parse(f->ctx, "faults.ac", prog, strlen(prog), &f->mod, &err) == AC_OK;
  CHECK(ok);
  if (!ok)
    fprintf(stderr, "  (%s)\n", err ? ac_error_message(err) : "no error");
  ac_error_destroy(err);
  return ok && fx_compile(f, "g", &f->g);
}

/* Nothing of the runtime's is left in the fake driver. */
static void check_nothing_live(fx *f) {
  cuda_mock_stats s;
  f->stats(&s);
  CHECK_EQ_INT(s.allocs, 0);
  CHECK_EQ_INT(s.streams, 0);
  CHECK_EQ_INT(s.modules, 0);
  CHECK_EQ_INT(s.graphs, 0);
  CHECK_EQ_INT(s.pinned, 0);
  CHECK_EQ_INT(s.retains, 0);
  CHECK_EQ_INT(s.depth, 0);
}

static void fx_close(fx *f) {
  ac_function_destroy(f->g);
  ac_module_destroy(f->mod);
  ac_runtime_destroy(f->rt);
  ac_context_destroy(f->ctx);
  if (f->lib) {
    check_nothing_live(f);
    f->reset();
    f->config(1, 1);
    dlclose(f->lib);
  }
  unsetenv("ARRAYC_CACHE");
}

/* Host arrays xs[i] = i + seed / 8, ys[i] = 100 - i. */
static void make_args(fx *f, int seed, ac_array **xs, ac_array **ys) {
  float x[N], y[N];
  for (int i = 0; i < N; i++) {
    x[i] = (float)i + (float)seed / 8.0f;
    y[i] = 100.0f - (float)i;
  }
  int64_t n = N;
  *xs = ac_array_create(f->ctx, AC_F32, 1, &n, x, NULL);
  *ys = ac_array_create(f->ctx, AC_F32, 1, &n, y, NULL);
  CHECK(*xs && *ys);
}

/* A result datum the call must leave as it is when it fails. */
static const ac_datum sentinel = {AC_DATUM_SCALAR, AC_I64, {.i = 0x5EA1}, NULL};

static ac_status call(ac_function *fn, ac_array *xs, ac_array *ys, ac_datum *res, ac_error **err) {
  ac_datum args[3] = {{AC_DATUM_SCALAR, AC_F32, {.f = A}, NULL},
                      {AC_DATUM_ARRAY, AC_F32, {0}, xs},
                      {AC_DATUM_ARRAY, AC_F32, {0}, ys}};
  *res = sentinel;
  return ac_function_call(fn, args, 3, res, 1, err);
}

static bool untouched(const ac_datum *res) {
  return memcmp(res, &sentinel, sizeof *res) == 0;
}

/* Calls g and checks its answer, a * (a * x + y) + y. */
static void call_g_right(fx *f, ac_array *xs, ac_array *ys) {
  ac_datum res;
  ac_error *err = NULL;
  ac_status st = call(f->g, xs, ys, &res, &err);
  CHECK_EQ_INT(st, AC_OK);
  if (st != AC_OK) {
    fprintf(stderr, "  (%s)\n", err ? ac_error_message(err) : "no error");
    ac_error_destroy(err);
    return;
  }
  const float *x = ac_array_data(xs), *y = ac_array_data(ys), *r = ac_array_data(res.array);
  CHECK(x && y && r && ac_array_size(res.array) == N);
  int wrong = 0;
  for (int i = 0; x && y && r && i < N; i++)
    wrong += fabsf(r[i] - (A * (A * x[i] + y[i]) + y[i])) > 1e-3f;
  CHECK_EQ_INT(wrong, 0);
  ac_datum_release(&res);
}

/* A failed call: status st, a message containing each of needles (NULL
 * ends them), the result untouched. */
static void check_failed(ac_status got, ac_status st, ac_error *err, const ac_datum *res,
                         const char *const *needles) {
  CHECK_EQ_INT(got, st);
  CHECK(err != NULL);
  for (size_t i = 0; needles[i]; i++)
    CHECK(contains(err ? ac_error_message(err) : NULL, needles[i]));
  CHECK(untouched(res));
  if (got == AC_OK && !untouched(res))
    ac_datum_release((ac_datum *)res);
  ac_error_destroy(err);
}

static int live_allocs(fx *f) {
  cuda_mock_stats s;
  f->stats(&s);
  return s.allocs;
}

/* After a fault was injected: a call of fn fails with st and the messages
 * `needles` (check_failed); once the fault is cleared nothing beyond `base`
 * stays allocated (a failed call's control block is freed, not kept for
 * reuse), and the next calls are right (g's first when with_g, then s's),
 * with the allocations back at `base`. */
static void fails_then_recovers(fx *f, ac_function *fn, ac_function *s, ac_array *xs, ac_array *ys,
                                ac_status st, const char *const *needles, int base, bool with_g) {
  ac_datum res;
  ac_error *err = NULL;
  ac_status got = call(fn, xs, ys, &res, &err);
  check_failed(got, st, err, &res, needles);
  f->reset();
  CHECK(live_allocs(f) <= base);
  if (with_g)
    call_g_right(f, xs, ys);
  got = call(s, xs, ys, &res, NULL);
  CHECK_EQ_INT(got, AC_OK);
  if (got == AC_OK) {
    CHECK(ac_array_data(res.array) != NULL && ac_array_size(res.array) == N);
    ac_datum_release(&res);
  }
  CHECK_EQ_INT(live_allocs(f), base);
}

/* ---- out of device memory ---- */

/* The first allocation of a runtime's first call fails (the call's
 * control block: nothing else exists yet), then everything works. With
 * pools the allocator trims the pool and tries again, so the fault is
 * every attempt. */
static void oom_first(bool pools) {
  fx f;
  if (fx_open(&f, pools)) {
    ac_array *xs, *ys;
    make_args(&f, 1, &xs, &ys);
    const char *sym = pools ? "cuMemAllocAsync" : "cuMemAlloc_v2";
    f.fail(sym, CUDA_ERROR_OUT_OF_MEMORY, 0, -1);
    ac_datum res;
    ac_error *err = NULL;
    ac_status st = call(f.g, xs, ys, &res, &err);
    const char *want[] = {pools ? "CUDA error in cuMemAllocAsync (" : "CUDA error in cuMemAlloc (",
                          " bytes): CUDA_ERROR_OUT_OF_MEMORY: out of memory", NULL};
    check_failed(st, AC_ERR_NOMEM, err, &res, want);
    f.reset();
    f.config(1, pools ? 1 : 0);
    CHECK_EQ_INT(live_allocs(&f), 0);
    call_g_right(&f, xs, ys);
    ac_array_release(xs);
    ac_array_release(ys);
  }
  fx_close(&f);
}

UNIT_TEST(oom_at_the_first_allocation) {
  oom_first(true);
}

UNIT_TEST(oom_at_the_first_allocation_without_pools) {
  oom_first(false);
}

/* Every allocation of a call in turn fails (arguments copied in, the
 * intermediate, the result after the first launch): the call fails with
 * AC_ERR_NOMEM, the allocations it made are freed (the arguments keep the
 * device copies they got, freed with them), and the next call is right. */
static void oom_every_allocation(bool pools) {
  fx f;
  if (fx_open(&f, pools)) {
    const char *sym = pools ? "cuMemAllocAsync" : "cuMemAlloc_v2";
    ac_array *xs, *ys;
    make_args(&f, 0, &xs, &ys);
    cuda_mock_stats a, b;
    f.stats(&a);
    call_g_right(&f, xs, ys); /* warm: a control block stays in the device's pool */
    f.stats(&b);
    ac_array_release(xs);
    ac_array_release(ys);
    int base = live_allocs(&f), per_call = b.alloc_calls - a.alloc_calls;
    CHECK(per_call >= 4); /* xs, ys, the intermediate, the result */
    for (int k = 0; k < per_call; k++) {
      make_args(&f, k + 1, &xs, &ys);
      f.stats(&a);
      f.fail(sym, CUDA_ERROR_OUT_OF_MEMORY, k, -1);
      ac_datum res;
      ac_error *err = NULL;
      ac_status st = call(f.g, xs, ys, &res, &err);
      f.stats(&b);
      const char *want[] = {"CUDA_ERROR_OUT_OF_MEMORY: out of memory", NULL};
      check_failed(st, AC_ERR_NOMEM, err, &res, want);
      if (k == per_call - 1)
        CHECK_EQ_INT(b.launches - a.launches, 1); /* mid-plan: one launch made */
      f.reset();
      f.config(1, pools ? 1 : 0);
      call_g_right(&f, xs, ys); /* the same arguments, the same runtime */
      ac_array_release(xs);
      ac_array_release(ys);
      CHECK_EQ_INT(live_allocs(&f), base);
    }
  }
  fx_close(&f);
}

UNIT_TEST(oom_at_every_allocation_of_a_call) {
  oom_every_allocation(true);
}

UNIT_TEST(oom_at_every_allocation_without_pools) {
  oom_every_allocation(false);
}

/* The same for a function of arrayc's own kernels (scratch, a control
 * block, launch batches that become graphs): each allocation in turn. */
UNIT_TEST(oom_in_a_loop_of_arrayc_kernels) {
  fx f;
  ac_function *s = NULL;
  if (fx_open(&f, true) && fx_compile(&f, "steps", &s)) {
    ac_array *xs, *ys;
    make_args(&f, 0, &xs, &ys);
    ac_datum res;
    cuda_mock_stats a, b;
    CHECK_EQ_INT(call(s, xs, ys, &res, NULL), AC_OK); /* warm */
    ac_datum_release(&res);
    f.stats(&a);
    CHECK_EQ_INT(call(s, xs, ys, &res, NULL), AC_OK);
    ac_datum_release(&res);
    f.stats(&b);
    int base = b.allocs, per_call = b.alloc_calls - a.alloc_calls;
    CHECK(per_call >= 2);
    const char *want[] = {"CUDA_ERROR_OUT_OF_MEMORY: out of memory", NULL};
    for (int k = 0; k < per_call; k++) {
      f.fail("cuMemAllocAsync", CUDA_ERROR_OUT_OF_MEMORY, k, -1);
      fails_then_recovers(&f, s, s, xs, ys, AC_ERR_NOMEM, want, base, false);
    }
    ac_array_release(xs);
    ac_array_release(ys);
  }
  ac_function_destroy(s);
  fx_close(&f);
}

/* ---- a failed launch ---- */

/* The driver refuses a launch: the first, or the second after the first
 * ran (CUDA_ERROR_LAUNCH_FAILED here passes: the fake's context is not
 * lost, which the device checks), and the next call is right. */
UNIT_TEST(a_failed_launch) {
  fx f;
  if (fx_open(&f, true)) {
    ac_array *xs, *ys;
    make_args(&f, 0, &xs, &ys);
    call_g_right(&f, xs, ys);
    int base = live_allocs(&f);
    static const struct {
      CUresult code;
      int skip;
      const char *msg;
    } cases[] = {
        {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, 0,
         "CUDA error in cuLaunchKernel (arrayc_mock_axpy): CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: "
         "too many resources requested for launch"},
        {CUDA_ERROR_LAUNCH_FAILED, 1,
         "CUDA error in cuLaunchKernel (arrayc_mock_axpy): CUDA_ERROR_LAUNCH_FAILED: unspecified "
         "launch failure"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
      cuda_mock_stats a, b;
      f.stats(&a);
      f.fail("cuLaunchKernel", cases[i].code, cases[i].skip, 1);
      ac_datum res;
      ac_error *err = NULL;
      ac_status st = call(f.g, xs, ys, &res, &err);
      f.stats(&b);
      CHECK_EQ_INT(b.launches - a.launches, cases[i].skip);
      const char *want[] = {cases[i].msg, NULL};
      check_failed(st, AC_ERR_RUNTIME, err, &res, want);
      if (st != AC_OK && err == NULL)
        fprintf(stderr, "  (no error)\n");
      f.reset();
      CHECK_EQ_INT(live_allocs(&f), base);
      call_g_right(&f, xs, ys);
      CHECK_EQ_INT(live_allocs(&f), base);
    }
    ac_array_release(xs);
    ac_array_release(ys);
  }
  fx_close(&f);
}

/* A launch the driver accepted fails later, and the call's synchronisation
 * reports it (the fake's context survives); the next call is right. For a
 * function of arrayc's kernels too, whose end reads the control block
 * back. */
UNIT_TEST(a_failure_reported_at_synchronisation) {
  fx f;
  ac_function *s = NULL;
  if (fx_open(&f, true) && fx_compile(&f, "steps", &s)) {
    ac_array *xs, *ys;
    make_args(&f, 0, &xs, &ys);
    call_g_right(&f, xs, ys);
    ac_datum res;
    CHECK_EQ_INT(call(s, xs, ys, &res, NULL), AC_OK);
    ac_datum_release(&res);
    int base = live_allocs(&f);
    const char *want[] = {"CUDA error in cuStreamSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS: an "
                          "illegal memory access was encountered",
                          NULL};
    for (int which = 0; which < 2; which++) {
      f.fail("cuStreamSynchronize", CUDA_ERROR_ILLEGAL_ADDRESS, 0, 1);
      fails_then_recovers(&f, which ? s : f.g, s, xs, ys, AC_ERR_RUNTIME, want, base, true);
    }
    ac_array_release(xs);
    ac_array_release(ys);
  }
  ac_function_destroy(s);
  fx_close(&f);
}

/* ---- a module the driver cannot load ---- */

/* Compiling loads the function's modules: arrayc's own (one for all its
 * kernels) and one per extern kernel. A load that fails fails the compile
 * (PTX arrayc made and the driver rejects is arrayc's bug; an extern
 * kernel's is the program's; no binary for this GPU is unsupported),
 * leaves no module loaded (the function's other module is unloaded) and
 * caches nothing: compiling again works, and so do calls of the functions
 * compiled before. */
UNIT_TEST(a_module_the_driver_cannot_load) {
  fx f;
  if (fx_open(&f, true)) {
    ac_array *xs, *ys;
    make_args(&f, 0, &xs, &ys);
    call_g_right(&f, xs, ys);
    static const struct {
      const char *fn;
      CUresult code;
      int skip;
      ac_status st;
      const char *msg;
    } cases[] = {
        {"own", CUDA_ERROR_INVALID_PTX, 0, AC_ERR_INTERNAL,
         "CUDA error in cuModuleLoadDataEx: CUDA_ERROR_INVALID_PTX: a PTX JIT compilation failed"},
        {"own", CUDA_ERROR_NO_BINARY_FOR_GPU, 0, AC_ERR_UNSUPPORTED,
         "CUDA error in cuModuleLoadDataEx: CUDA_ERROR_NO_BINARY_FOR_GPU: no kernel image is "
         "available for execution on the device"},
        {"mixed", CUDA_ERROR_INVALID_PTX, 1, AC_ERR_INVALID,
         "the PTX of extern kernel 'arrayc_mock_axpy': CUDA error in cuModuleLoadDataEx: "
         "CUDA_ERROR_INVALID_PTX"},
        {"mixed", CUDA_ERROR_OUT_OF_MEMORY, 0, AC_ERR_NOMEM,
         "CUDA error in cuModuleLoadDataEx: CUDA_ERROR_OUT_OF_MEMORY: out of memory"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
      /* a function of its own (t0, t1, ...: the compile cache has not
       * seen it) calling own or mixed */
      char text[sizeof prog + 128], name[16];
      snprintf(name, sizeof name, "t%zu", i);
      snprintf(text, sizeof text,
               "%sfn %s(a: f32, xs: f32[], ys: f32[]) -> f32[] { %s(a, xs, ys) }\n", prog, name,
               cases[i].fn);
      ac_module *m = NULL;
      CHECK_EQ_INT(ac_module_parse(f.ctx, "faults.ac", text, strlen(text), &m, NULL), AC_OK);
      if (!m)
        continue;
      cuda_mock_stats a, b;
      f.stats(&a);
      size_t compiled = ac_runtime_num_compilations(f.rt);
      f.fail("cuModuleLoadDataEx", cases[i].code, cases[i].skip, 1);
      ac_function *fn = (ac_function *)&f; /* must become NULL */
      ac_error *err = NULL;
      ac_status st = ac_runtime_compile(f.rt, m, name, &fn, &err);
      CHECK_EQ_INT(st, cases[i].st);
      CHECK(fn == NULL);
      CHECK(contains(err ? ac_error_message(err) : NULL, cases[i].msg));
      ac_error_destroy(err);
      f.reset();
      f.stats(&b);
      CHECK_EQ_INT(b.modules, a.modules);
      CHECK_EQ_INT(b.allocs, a.allocs);
      CHECK_EQ_INT(ac_runtime_num_compilations(f.rt), compiled);
      call_g_right(&f, xs, ys); /* compiled before: still works */
      if (st == AC_OK)
        ac_function_destroy(fn);
      fn = NULL;
      if (fx_compile_in(&f, m, name, &fn)) {
        ac_datum res;
        CHECK_EQ_INT(call(fn, xs, ys, &res, NULL), AC_OK);
        ac_datum_release(&res);
      }
      CHECK_EQ_INT(ac_runtime_num_compilations(f.rt), compiled + 1);
      ac_function_destroy(fn);
      ac_module_destroy(m);
    }
    ac_array_release(xs);
    ac_array_release(ys);
  }
  fx_close(&f);
}

/* ---- a lost context ---- */

/* The context is lost in a call (a kernel's fault: every later driver call
 * fails with the same error) or between calls (destroyed). The call that
 * meets it fails with AC_ERR_RUNTIME and says that the context is lost;
 * from then on every operation on the runtime fails the same way at once
 * (a call, a compile, reading a result still on the device) while host
 * arrays stay readable; nothing crashes. Destroying the runtime and its
 * arrays releases the context, which the driver then destroys with what
 * was in it, and a new runtime works. */
static void lost(const char *sym, int skip, CUresult code, const char *first) {
  fx f;
  if (!fx_open(&f, true)) {
    fx_close(&f);
    return;
  }
  ac_function *s = NULL;
  ac_array *xs, *ys;
  make_args(&f, 0, &xs, &ys);
  call_g_right(&f, xs, ys);
  ac_datum kept; /* a result left on the device */
  CHECK_EQ_INT(call(f.g, xs, ys, &kept, NULL), AC_OK);
  f.lose(sym, code, skip);
  ac_datum res;
  ac_error *err = NULL;
  ac_status st = call(f.g, xs, ys, &res, &err);
  const char *want[] = {first, "the GPU's CUDA context is lost", NULL};
  check_failed(st, AC_ERR_RUNTIME, err, &res, want);

  /* every later operation says so, at once */
  const char *later[] = {"the GPU's CUDA context was lost earlier (", first,
                         "destroy the runtime and the arrays on its GPU", NULL};
  cuda_mock_stats a, b;
  f.stats(&a);
  for (int i = 0; i < 2; i++) {
    err = NULL;
    st = call(f.g, xs, ys, &res, &err);
    check_failed(st, AC_ERR_RUNTIME, err, &res, later);
  }
  err = NULL;
  st = ac_runtime_compile(f.rt, f.mod, "steps", &s, &err);
  check_failed(st, AC_ERR_RUNTIME, err, &sentinel, later);
  CHECK(s == NULL);
  CHECK(ac_array_data(kept.array) == NULL);
  float back[N];
  err = NULL;
  st = ac_array_read(kept.array, back, sizeof back, &err);
  check_failed(st, AC_ERR_RUNTIME, err, &sentinel, later);
  f.stats(&b);
  CHECK_EQ_INT(b.pushes, a.pushes); /* the driver was not asked again */
  CHECK(ac_array_data(xs) != NULL); /* host arrays are the caller's */

  /* a new runtime while the old one holds the context: the same context */
  ac_runtime *rt2 = NULL;
  err = NULL;
  setenv("ARRAYC_LIBCUDA", ARRAYC_CUDA_MOCK, 1);
  st = ac_runtime_create(f.ctx, AC_BACKEND_GPU, &rt2, &err);
  unsetenv("ARRAYC_LIBCUDA");
  CHECK_EQ_INT(st, AC_ERR_UNSUPPORTED);
  CHECK(rt2 == NULL);
  CHECK(contains(err ? ac_error_message(err) : NULL, "no GPU: "));
  ac_error_destroy(err);

  /* gone with the runtime and its arrays: the context too */
  ac_datum_release(&kept);
  ac_function_destroy(f.g);
  f.g = NULL;
  ac_runtime_destroy(f.rt);
  f.rt = NULL;
  f.stats(&a);
  CHECK(a.retains > 0); /* the arguments' device copies hold the device */
  ac_array_release(xs);
  ac_array_release(ys);
  f.stats(&b);
  CHECK_EQ_INT(b.lost, CUDA_SUCCESS);
  CHECK(b.reclaimed > a.reclaimed);
  check_nothing_live(&f);

  /* a new runtime gets a new context */
  err = NULL;
  CHECK(fx_runtime(&f, &err));
  ac_error_destroy(err);
  if (f.rt && fx_compile(&f, "g", &f.g)) {
    make_args(&f, 3, &xs, &ys);
    call_g_right(&f, xs, ys);
    ac_array_release(xs);
    ac_array_release(ys);
  }
  fx_close(&f);
}

UNIT_TEST(a_kernel_fault_loses_the_context) {
  lost("cuLaunchKernel", 0, CUDA_ERROR_ILLEGAL_ADDRESS,
       "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered");
}

UNIT_TEST(a_fault_after_the_first_launch_loses_the_context) {
  lost("cuLaunchKernel", 1, CUDA_ERROR_LAUNCH_FAILED,
       "CUDA_ERROR_LAUNCH_FAILED: unspecified launch failure");
}

UNIT_TEST(a_destroyed_context) {
  lost(NULL, 0, CUDA_ERROR_CONTEXT_IS_DESTROYED,
       "CUDA_ERROR_CONTEXT_IS_DESTROYED: context is destroyed");
}

UNIT_MAIN(oom_at_the_first_allocation, oom_at_the_first_allocation_without_pools,
          oom_at_every_allocation_of_a_call, oom_at_every_allocation_without_pools,
          oom_in_a_loop_of_arrayc_kernels, a_failed_launch, a_failure_reported_at_synchronisation,
          a_module_the_driver_cannot_load, a_kernel_fault_loses_the_context,
          a_fault_after_the_first_launch_loses_the_context, a_destroyed_context)
