/* The NVPTX target (lib/target/nvptx.c) and GPU math on it: PTX ISA
 * versions per architecture and driver; GPU kernels (cg_gpu_kernel_begin)
 * that use every scalar operation of ops.def on every scalar type and every
 * conversion, emitted for sm_75, sm_80 and sm_90 with libdevice and with
 * the fallbacks; the PTX has the right header, an .entry per kernel, no
 * __nvvm_reflect, no external function left to resolve, and NVIDIA's ptxas
 * assembles it (when installed: the test says so when it skips). Also:
 * __nvvm_reflect's answers, no FMA contraction, errors (unknown
 * architecture, old driver, libdevice missing, invalid IR), libdevice
 * internalised and dropped when unused, emission on two threads at once,
 * and the compile time of a Black-Scholes-like kernel (printed). */
#define _POSIX_C_SOURCE 200809L /* mkstemp, clock_gettime, fdopen */
#include "unit.h"

#include "codegen/cg.h"
#include "codegen/math_gpu.h"
#include "codegen/simt.h"
#include "target/nvptx.h"

#include <stdlib.h>
#include <threads.h>
#include <time.h>
#include <unistd.h>

static const ac_scalar all_scalars[] = {AC_BOOL, AC_I8,  AC_I16, AC_I32, AC_I64, AC_U8,
                                        AC_U16,  AC_U32, AC_U64, AC_F32, AC_F64};
#define NSCALARS (sizeof all_scalars / sizeof all_scalars[0])
static const unsigned test_sms[] = {75, 80, 90};

/* ---- fixture: one module ---- */

typedef struct fx {
  ac_context *ctx;
  ac_module *m;
  pl_plan *plan;
  cg_module M;
} fx;

static bool fx_init(fx *x) {
  memset(x, 0, sizeof *x);
  x->ctx = ac_context_create();
  static const char src[] = "fn f(x: f64) -> f64 { x }\n";
  ac_error *err = NULL;
  if (ac_module_parse(x->ctx, "t.ac", src, strlen(src), &x->m, &err) != AC_OK) {
    ac_error_destroy(err);
    return false;
  }
  x->plan = pl_create(x->ctx, "t", "t.ac");
  if (cg_module_init(&x->M, x->m, x->plan, CG_TARGET_NVPTX, &err) != AC_OK) {
    ac_error_destroy(err);
    return false;
  }
  if (nv_prepare(&x->M, &err) != AC_OK) {
    fprintf(stderr, "nv_prepare: %s\n", ac_error_message(err));
    ac_error_destroy(err);
    return false;
  }
  return true;
}

static void fx_fini(fx *x) {
  if (x->M.arena)
    cg_module_dispose(&x->M);
  if (x->plan)
    pl_destroy(x->plan);
  if (x->m)
    ac_module_destroy(x->m);
  ac_context_destroy(x->ctx);
}

/* Pointer in frame word k. */
static LLVMValueRef frame_ptr(cg_fn *f, unsigned k) {
  cg_module *M = f->M;
  LLVMValueRef idx = LLVMConstInt(M->t_i64, k, 0);
  LLVMValueRef slot = LLVMBuildGEP2(M->b, M->t_i64, f->frame, &idx, 1, "");
  return LLVMBuildIntToPtr(M->b, LLVMBuildLoad2(M->b, M->t_i64, slot, ""), M->t_ptr, "");
}

/* Stores a scalar result (i1 as a byte) at out + slot * 8 (+ gtid * 1024). */
static void store_result(cg_fn *f, LLVMValueRef out, LLVMValueRef gtid, unsigned slot,
                         LLVMValueRef v) {
  cg_module *M = f->M;
  if (LLVMTypeOf(v) == M->t_i1)
    v = LLVMBuildZExt(M->b, v, M->t_i8, "");
  LLVMValueRef off = LLVMBuildAdd(M->b, LLVMBuildMul(M->b, gtid, cg_i64(M, 1024), ""),
                                  cg_i64(M, (int64_t)slot * 8), "");
  LLVMBuildStore(M->b, v, LLVMBuildGEP2(M->b, M->t_i8, out, &off, 1, ""));
}

/* ---- which operations apply to which scalar type ---- */

static bool is_float(ac_scalar sc) {
  return sc == AC_F32 || sc == AC_F64;
}

static bool applies(ir_op op, ac_scalar sc) {
  bool f = is_float(sc), b = sc == AC_BOOL, i = !f && !b;
  switch (ir_ops[op].typing) {
  case TC_ARITH:
  case TC_ORD:
  case TC_NEG:
  case TC_NUM1:
  case TC_NUM2:
    return i || f;
  case TC_INT:
  case TC_SHIFT:
  case TC_BNOT:
    return i;
  case TC_CMP:
    return true;
  case TC_LOGIC:
  case TC_NOT:
    return b;
  case TC_FLT1:
  case TC_FLT2:
  case TC_FLT3:
  case TC_FPRED:
    return f;
  default:
    return false;
  }
}

/* A GPU kernel for type sc: each thread reads three operands of type sc
 * (frame word 0) and stores op(...) for every operation that applies, and
 * the conversion of its first operand to every scalar type (frame word 1).
 * `fallback`: math operations through the generated fallbacks (what
 * cg_gpu_math does without libdevice; M->gpu_fallback_math, which also
 * covers the operations composed of others, such as log_add), else
 * through libdevice when it is installed. Returns the number of results. */
static unsigned build_ops_kernel(cg_module *M, ac_scalar sc, bool fallback) {
  M->gpu_fallback_math = fallback;
  char name[48];
  snprintf(name, sizeof name, "ops_%s", ac_scalar_name(sc));
  cg_fn *f = cg_gpu_kernel_begin(M, name, 256);
  LLVMValueRef in = frame_ptr(f, 0), out = frame_ptr(f, 1);
  LLVMValueRef gtid = simt_gtid(f);
  LLVMTypeRef mt = cg_mem_type(M, sc);
  LLVMValueRef ops[3];
  for (int k = 0; k < 3; k++) {
    LLVMValueRef idx =
        LLVMBuildAdd(M->b, LLVMBuildMul(M->b, gtid, cg_i64(M, 3), ""), cg_i64(M, k), "");
    LLVMValueRef v = LLVMBuildLoad2(M->b, mt, LLVMBuildGEP2(M->b, mt, in, &idx, 1, ""), "");
    ops[k] = sc == AC_BOOL ? LLVMBuildTrunc(M->b, v, M->t_i1, "") : v;
  }
  unsigned slot = 0;
  for (int op = IR_NEG; op < IR_NUM_OPS; op++) {
    if (ir_ops[op].typing == TC_SPECIAL || !applies((ir_op)op, sc))
      continue;
    store_result(f, out, gtid, slot++, cg_scalar_op(f, (ir_op)op, sc, ops));
  }
  for (size_t t = 0; t < NSCALARS; t++)
    store_result(f, out, gtid, slot++, cg_cast(f, ops[0], sc, all_scalars[t]));
  cg_kernel_end(f);
  return slot;
}

/* ---- PTX checks and ptxas ---- */

/* ptxas from $CUDA_HOME/bin, PATH or /usr/local/cuda/bin, or NULL. */
static const char *find_ptxas(char *buf, size_t size) {
  const char *home = getenv("CUDA_HOME");
  if (home && *home && !strchr(home, ':')) {
    snprintf(buf, size, "%s/bin/ptxas", home);
    if (access(buf, X_OK) == 0)
      return buf;
  }
  const char *path = getenv("PATH");
  while (path && *path) {
    const char *end = strchr(path, ':');
    size_t n = end ? (size_t)(end - path) : strlen(path);
    if (n > 0 && n + 8 < size) {
      snprintf(buf, size, "%.*s/ptxas", (int)n, path);
      if (access(buf, X_OK) == 0)
        return buf;
    }
    path = end ? end + 1 : NULL;
  }
  snprintf(buf, size, "/usr/local/cuda/bin/ptxas");
  return access(buf, X_OK) == 0 ? buf : NULL;
}

/* Assembles ptx for sm with ptxas; true if it did (or ptxas is missing:
 * a line says the check was skipped). */
static bool ptxas_ok(const char *ptx, unsigned sm) {
  char tool[512];
  if (!find_ptxas(tool, sizeof tool)) {
    printf("SKIPPED ptxas check: no ptxas in $CUDA_HOME/bin, PATH or /usr/local/cuda/bin\n");
    return true;
  }
  char in[] = "/tmp/arrayc_nvptx_XXXXXX";
  int fd = mkstemp(in);
  if (fd < 0)
    return false;
  FILE *fp = fdopen(fd, "w");
  fputs(ptx, fp);
  fclose(fp);
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "'%s' -arch=sm_%u -o /dev/null '%s' 2>'%s.err'", tool, sm, in, in);
  int rc = system(cmd);
  char errf[64];
  snprintf(errf, sizeof errf, "%s.err", in);
  if (rc != 0) {
    FILE *ef = fopen(errf, "r");
    char line[512];
    fprintf(stderr, "ptxas -arch=sm_%u failed:\n", sm);
    for (int n = 0; ef && n < 20 && fgets(line, sizeof line, ef); n++)
      fputs(line, stderr);
    if (ef)
      fclose(ef);
  }
  remove(errf);
  remove(in);
  return rc == 0;
}

static unsigned count(const char *s, const char *what) {
  unsigned n = 0;
  for (const char *p = strstr(s, what); p; p = strstr(p + 1, what))
    n++;
  return n;
}

/* The header and the things that must never be in our PTX. */
static void check_ptx(const char *ptx, unsigned sm, unsigned entries) {
  char want[32];
  unsigned v = nv_ptx_version(sm, 0);
  snprintf(want, sizeof want, ".version %u.%u\n", v / 10, v % 10);
  CHECK(strstr(ptx, want) != NULL);
  snprintf(want, sizeof want, ".target sm_%u\n", sm);
  CHECK(strstr(ptx, want) != NULL);
  CHECK(strstr(ptx, ".address_size 64") != NULL);
  CHECK_EQ_INT(count(ptx, ".entry "), entries);
  CHECK(strstr(ptx, "__nvvm_reflect") == NULL);
  CHECK(strstr(ptx, ".extern .func") == NULL);  /* nothing left for the driver to find */
  CHECK(strstr(ptx, ".visible .func") == NULL); /* libdevice internalised */
}

/* Emits x's module for sm; returns the PTX (ac_free) or NULL (reported). */
static char *emit(fx *x, const char *libdevice, unsigned sm, double *ms) {
  char *ptx = NULL, *ir = NULL;
  size_t len = 0;
  ac_error *err = NULL;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  ac_status st = nv_emit_with(&x->M, libdevice, sm, 0, &ptx, &len, &ir, &err);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  if (ms)
    *ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
  if (st != AC_OK) {
    fprintf(stderr, "nv_emit sm_%u: %s\n", sm, ac_error_message(err));
    ac_error_destroy(err);
    return NULL;
  }
  CHECK(len == strlen(ptx));
  CHECK(ir != NULL && strstr(ir, "define") != NULL);
  ac_free(x->ctx, ir);
  return ptx;
}

/* ---- tests ---- */

UNIT_TEST(ptx_versions_follow_architecture_and_driver) {
  /* the lowest version each architecture needs (ahead of time) */
  CHECK_EQ_INT(nv_ptx_version(75, 0), 63);
  CHECK_EQ_INT(nv_ptx_version(80, 0), 70);
  CHECK_EQ_INT(nv_ptx_version(86, 0), 71);
  CHECK_EQ_INT(nv_ptx_version(87, 0), 74);
  CHECK_EQ_INT(nv_ptx_version(89, 0), 78);
  CHECK_EQ_INT(nv_ptx_version(90, 0), 78);
  /* a driver loads its own CUDA release's PTX ISA and older */
  CHECK_EQ_INT(nv_ptx_version(75, 10000), 63);
  CHECK_EQ_INT(nv_ptx_version(80, 10020), 0); /* CUDA 10.2 knows PTX 6.5 */
  CHECK_EQ_INT(nv_ptx_version(80, 11000), 70);
  CHECK_EQ_INT(nv_ptx_version(86, 11000), 0);
  CHECK_EQ_INT(nv_ptx_version(86, 11010), 71);
  CHECK_EQ_INT(nv_ptx_version(87, 11040), 74);
  CHECK_EQ_INT(nv_ptx_version(89, 11070), 0);
  CHECK_EQ_INT(nv_ptx_version(90, 11080), 78);
  CHECK_EQ_INT(nv_ptx_version(90, 12040), 78);
  CHECK_EQ_INT(nv_ptx_version(90, 13000), 78);
  CHECK_EQ_INT(nv_ptx_version(75, 9020), 0); /* older than CUDA 10.0 */
  /* architectures LLVM 19 does not know, or below the minimum */
  CHECK_EQ_INT(nv_ptx_version(70, 0), 0);
  CHECK_EQ_INT(nv_ptx_version(100, 0), 0);
  CHECK(nv_sm_valid(75) && nv_sm_valid(80) && nv_sm_valid(86) && nv_sm_valid(87));
  CHECK(nv_sm_valid(89) && nv_sm_valid(90));
  CHECK(!nv_sm_valid(70) && !nv_sm_valid(0) && !nv_sm_valid(91) && !nv_sm_valid(100));
}

UNIT_TEST(libdevice_path_is_a_bitcode_file) {
  const char *p = nv_libdevice_path();
  if (!p) {
    printf("SKIPPED libdevice_path_is_a_bitcode_file: no libdevice.10.bc installed\n");
    return;
  }
  CHECK(strstr(p, "nvvm/libdevice/libdevice.10.bc") != NULL);
  FILE *fp = fopen(p, "rb");
  CHECK(fp != NULL);
  if (fp) {
    unsigned char magic[4] = {0};
    CHECK(fread(magic, 1, 4, fp) == 4);
    CHECK(magic[0] == 'B' && magic[1] == 'C'); /* LLVM bitcode */
    fclose(fp);
  }
  CHECK(nv_libdevice_path() == p); /* computed once */
}

/* Every scalar operation and conversion on every type, for three
 * architectures; math through libdevice when it is installed. */
static void all_ops(const char *libdevice, bool fallback) {
  for (size_t s = 0; s < sizeof test_sms / sizeof test_sms[0]; s++) {
    unsigned sm = test_sms[s];
    fx x;
    if (!fx_init(&x)) {
      CHECK(false);
      fx_fini(&x);
      return;
    }
    unsigned results = 0;
    for (size_t t = 0; t < NSCALARS; t++)
      results += build_ops_kernel(&x.M, all_scalars[t], fallback);
    CHECK(results > 300);
    CHECK_EQ_INT(x.M.st, AC_OK);
    char *ptx = emit(&x, libdevice, sm, NULL);
    CHECK(ptx != NULL);
    if (ptx) {
      check_ptx(ptx, sm, NSCALARS);
      CHECK(strstr(ptx, "__nv_") == NULL); /* inlined or internal, never called by name */
      CHECK(ptxas_ok(ptx, sm));
      ac_free(x.ctx, ptx);
    }
    fx_fini(&x);
  }
}

UNIT_TEST(every_scalar_op_with_libdevice) {
  const char *ld = nv_libdevice_path();
  if (!ld) {
    printf("SKIPPED every_scalar_op_with_libdevice: no libdevice.10.bc installed\n");
    return;
  }
  all_ops(ld, false);
}

UNIT_TEST(every_scalar_op_with_fallback_math) {
  all_ops(NULL, true);
}

/* __nvvm_reflect answers: __CUDA_ARCH = sm * 10, __CUDA_FTZ = 0 (denormals
 * kept), __CUDA_PREC_SQRT = 1 (nvcc's default), anything else 0. */
UNIT_TEST(nvvm_reflect_is_folded) {
  static const char *const q[] = {"__CUDA_ARCH", "__CUDA_FTZ", "__CUDA_PREC_SQRT", "__OTHER"};
  static const unsigned want80[] = {800, 0, 1, 0};
  fx x;
  if (!fx_init(&x)) {
    CHECK(false);
    fx_fini(&x);
    return;
  }
  cg_module *M = &x.M;
  LLVMTypeRef rty = LLVMFunctionType(M->t_i32, &M->t_ptr, 1, 0);
  LLVMValueRef reflect = LLVMAddFunction(M->mod, "__nvvm_reflect", rty);
  cg_fn *f = cg_gpu_kernel_begin(M, "k", 0);
  LLVMValueRef out = frame_ptr(f, 0);
  for (unsigned i = 0; i < 4; i++) {
    LLVMValueRef str = LLVMBuildGlobalStringPtr(M->b, q[i], "");
    LLVMValueRef v = LLVMBuildCall2(M->b, rty, reflect, &str, 1, "");
    /* distinct stores that survive optimisation: out[i] = v * 7 + i */
    v = LLVMBuildAdd(M->b, LLVMBuildMul(M->b, v, LLVMConstInt(M->t_i32, 7, 0), ""),
                     LLVMConstInt(M->t_i32, i, 0), "");
    LLVMValueRef idx = cg_i64(M, i);
    LLVMBuildStore(M->b, v, LLVMBuildGEP2(M->b, M->t_i32, out, &idx, 1, ""));
  }
  cg_kernel_end(f);
  char *ptx = NULL, *ir = NULL;
  size_t len;
  ac_error *err = NULL;
  CHECK_EQ_INT(nv_emit_with(M, NULL, 80, 0, &ptx, &len, &ir, &err), AC_OK);
  if (ptx && ir) {
    CHECK(strstr(ir, "__nvvm_reflect") == NULL);
    for (unsigned i = 0; i < 4; i++) {
      char want[48];
      snprintf(want, sizeof want, "store i32 %u,", want80[i] * 7 + i);
      if (!strstr(ir, want))
        fprintf(stderr, "missing in the IR: %s\n", want);
      CHECK(strstr(ir, want) != NULL);
    }
    CHECK(ptxas_ok(ptx, 80));
  }
  ac_free(x.ctx, ptx);
  ac_free(x.ctx, ir);
  ac_error_destroy(err);
  fx_fini(&x);
}

/* x * y + z is one fma on the GPU (docs/language.md 6.2: the NVPTX code
 * carries `contract` on + - *), with or without the `reassoc` of fold
 * chains; no separately rounded mul.rn / add.rn is left. (The CPU backend
 * and the SIMT emulator never contract: test/lit/gpu/elementwise_ptx.test.) */
static void muladd_is_fma(bool reassoc) {
  fx x;
  if (!fx_init(&x)) {
    CHECK(false);
    fx_fini(&x);
    return;
  }
  cg_module *M = &x.M;
  cg_fn *f = cg_gpu_kernel_begin(M, "muladd", 0);
  LLVMValueRef p = frame_ptr(f, 0);
  LLVMValueRef v[3];
  for (int k = 0; k < 3; k++) {
    LLVMValueRef idx = cg_i64(M, k);
    v[k] = LLVMBuildLoad2(M->b, M->t_f64, LLVMBuildGEP2(M->b, M->t_f64, p, &idx, 1, ""), "");
  }
  f->reassoc = reassoc;
  LLVMValueRef prod = cg_scalar_op(f, IR_MUL, AC_F64, v);
  LLVMValueRef sum_ops[2] = {prod, v[2]};
  LLVMBuildStore(M->b, cg_scalar_op(f, IR_ADD, AC_F64, sum_ops), p);
  cg_kernel_end(f);
  char *ptx = emit(&x, NULL, 75, NULL);
  CHECK(ptx != NULL);
  if (ptx) {
    CHECK(strstr(ptx, "mul.rn.f64") == NULL);
    CHECK(strstr(ptx, "add.rn.f64") == NULL);
    CHECK(strstr(ptx, "fma.rn.f64") != NULL);
    ac_free(x.ctx, ptx);
  }
  fx_fini(&x);
}

UNIT_TEST(fma_contraction) {
  muladd_is_fma(false);
  muladd_is_fma(true);
}

/* A module that calls a libdevice function needs libdevice. */
UNIT_TEST(errors_are_reported) {
  fx x;
  if (!fx_init(&x)) {
    CHECK(false);
    fx_fini(&x);
    return;
  }
  cg_fn *f = cg_gpu_kernel_begin(&x.M, "k", 0);
  LLVMValueRef one = LLVMConstReal(x.M.t_f32, 1.0);
  LLVMValueRef r = cg_gpu_math_libdevice(f, IR_EXP, AC_F32, &one);
  LLVMBuildStore(x.M.b, r, frame_ptr(f, 0));
  cg_kernel_end(f);
  char *ptx = NULL;
  size_t len;
  ac_error *err = NULL;
  /* unknown architecture, driver too old, libdevice missing */
  CHECK_EQ_INT(nv_emit_with(&x.M, NULL, 70, 0, &ptx, &len, NULL, &err), AC_ERR_INVALID);
  CHECK(err && strstr(ac_error_message(err), "sm_70") != NULL);
  ac_error_destroy(err);
  err = NULL;
  CHECK_EQ_INT(nv_emit_with(&x.M, NULL, 90, 11040, &ptx, &len, NULL, &err), AC_ERR_INVALID);
  CHECK(err && strstr(ac_error_message(err), "driver") != NULL);
  ac_error_destroy(err);
  err = NULL;
  CHECK_EQ_INT(nv_emit_with(&x.M, NULL, 75, 0, &ptx, &len, NULL, &err), AC_ERR_UNSUPPORTED);
  CHECK(err && strstr(ac_error_message(err), "libdevice") != NULL);
  CHECK(ptx == NULL);
  ac_error_destroy(err);
  err = NULL;
  /* a libdevice path that is not a file */
  CHECK_EQ_INT(nv_emit_with(&x.M, "/nonexistent/libdevice.10.bc", 75, 0, &ptx, &len, NULL, &err),
               AC_ERR_IO);
  ac_error_destroy(err);
  fx_fini(&x);

  /* invalid IR (a block without a terminator) is an internal error */
  if (!fx_init(&x)) {
    CHECK(false);
    fx_fini(&x);
    return;
  }
  LLVMTypeRef ft = LLVMFunctionType(x.M.t_void, NULL, 0, 0);
  LLVMValueRef fn = LLVMAddFunction(x.M.mod, "bad", ft);
  LLVMAppendBasicBlockInContext(x.M.llctx, fn, "entry");
  err = NULL;
  CHECK_EQ_INT(nv_emit_with(&x.M, NULL, 75, 0, &ptx, &len, NULL, &err), AC_ERR_INTERNAL);
  CHECK(err && strstr(ac_error_message(err), "invalid LLVM IR") != NULL);
  ac_error_destroy(err);
  fx_fini(&x);
}

/* A kernel of the exp/log/sqrt/erf kind of Black-Scholes: libdevice is
 * linked, what is unused is dropped (the PTX stays small), and the compile
 * time is printed (goal: well under 30 ms). */
static void build_black_scholes(cg_module *M, bool fallback) {
  cg_fn *f = cg_gpu_kernel_begin(M, "bs", 256);
  LLVMValueRef in = frame_ptr(f, 0), out = frame_ptr(f, 1);
  LLVMValueRef i = simt_gtid(f);
  LLVMValueRef s = LLVMBuildLoad2(M->b, M->t_f32, LLVMBuildGEP2(M->b, M->t_f32, in, &i, 1, ""), "");
  LLVMValueRef k = LLVMConstReal(M->t_f32, 100.0), t = LLVMConstReal(M->t_f32, 0.5);
  LLVMValueRef r = LLVMConstReal(M->t_f32, 0.02), sig = LLVMConstReal(M->t_f32, 0.3);
#define OP1(op, a)                                                                                 \
  (fallback && cg_gpu_math_op(op) ? cg_gpu_math_fallback(f, op, AC_F32, (LLVMValueRef[]){a, NULL}) \
                                  : cg_scalar_op(f, op, AC_F32, (LLVMValueRef[]){a, NULL}))
#define OP2(op, a, b) cg_scalar_op(f, op, AC_F32, (LLVMValueRef[]){a, b})
  LLVMValueRef sq = OP1(IR_SQRT, t);
  LLVMValueRef d1 = OP2(IR_DIV,
                        OP2(IR_ADD, OP1(IR_LOG, OP2(IR_DIV, s, k)),
                            OP2(IR_MUL, OP2(IR_ADD, r, OP2(IR_MUL, sig, sig)), t)),
                        OP2(IR_MUL, sig, sq));
  LLVMValueRef d2 = OP2(IR_SUB, d1, OP2(IR_MUL, sig, sq));
  LLVMValueRef half = LLVMConstReal(M->t_f32, 0.5), rs2 = LLVMConstReal(M->t_f32, 0.70710678);
  LLVMValueRef n1 = OP2(IR_MUL, half, OP1(IR_ERFC, OP2(IR_MUL, OP1(IR_NEG, d1), rs2)));
  LLVMValueRef n2 = OP2(IR_MUL, half, OP1(IR_ERFC, OP2(IR_MUL, OP1(IR_NEG, d2), rs2)));
  LLVMValueRef disc = OP1(IR_EXP, OP2(IR_MUL, OP1(IR_NEG, r), t));
  LLVMValueRef call = OP2(IR_SUB, OP2(IR_MUL, s, n1), OP2(IR_MUL, OP2(IR_MUL, k, disc), n2));
#undef OP1
#undef OP2
  LLVMBuildStore(M->b, call, LLVMBuildGEP2(M->b, M->t_f32, out, &i, 1, ""));
  cg_kernel_end(f);
}

UNIT_TEST(black_scholes_compile_time) {
  const char *ld = nv_libdevice_path();
  for (int fallback = 0; fallback < 2; fallback++) {
    if (!fallback && !ld) {
      printf("SKIPPED black-scholes with libdevice: no libdevice.10.bc installed\n");
      continue;
    }
    double best = 1e9;
    for (int rep = 0; rep < 3; rep++) {
      fx x;
      if (!fx_init(&x)) {
        CHECK(false);
        fx_fini(&x);
        return;
      }
      build_black_scholes(&x.M, fallback);
      double ms = 0;
      char *ptx = emit(&x, fallback ? NULL : ld, 80, &ms);
      CHECK(ptx != NULL);
      if (ptx) {
        check_ptx(ptx, 80, 1);
        CHECK(strlen(ptx) < 200000); /* libdevice's unused functions are gone */
        if (rep == 0)
          CHECK(ptxas_ok(ptx, 80));
        ac_free(x.ctx, ptx);
      }
      best = ms < best ? ms : best;
      fx_fini(&x);
    }
    printf("  black-scholes f32 kernel to PTX (%s): %.1f ms\n",
           fallback ? "fallback math" : "libdevice", best);
  }
}

/* Two threads emit their own modules at the same time. */
static int emit_thread(void *arg) {
  int *ok = arg;
  fx x;
  *ok = 0;
  if (!fx_init(&x)) {
    fx_fini(&x);
    return 0;
  }
  build_ops_kernel(&x.M, AC_F64, nv_libdevice_path() == NULL);
  char *ptx = emit(&x, nv_libdevice_path(), 86, NULL);
  *ok = ptx != NULL && strstr(ptx, ".target sm_86") != NULL;
  ac_free(x.ctx, ptx);
  fx_fini(&x);
  return 0;
}

UNIT_TEST(emission_on_two_threads) {
  thrd_t t[2];
  int ok[2] = {0, 0};
  for (int i = 0; i < 2; i++)
    CHECK(thrd_create(&t[i], emit_thread, &ok[i]) == thrd_success);
  for (int i = 0; i < 2; i++)
    thrd_join(t[i], NULL);
  CHECK(ok[0] && ok[1]);
}

UNIT_MAIN(ptx_versions_follow_architecture_and_driver, libdevice_path_is_a_bitcode_file,
          every_scalar_op_with_libdevice, every_scalar_op_with_fallback_math,
          nvvm_reflect_is_folded, fma_contraction, errors_are_reported,
          black_scholes_compile_time, emission_on_two_threads)
