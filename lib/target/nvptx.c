/* lib/target/nvptx.c: the NVPTX target: LLVM IR to PTX text (nvptx.h).
 *
 * One compile (nv_emit) of a cg_module whose kernels lib/codegen made for
 * CG_TARGET_NVPTX:
 *
 *   module (triple nvptx64-nvidia-cuda, layout from the target machine)
 *     -> verify
 *     -> link libdevice when the module declares __nv_* functions
 *        (lib/codegen/math_gpu.c calls them), make every function that
 *        came from libdevice internal
 *     -> fold __nvvm_reflect
 *     -> LLVMRunPasses("default<O3>") with the NVPTX target machine (its
 *        pipeline starts with NVVMReflect and NVVMIntrRange)
 *     -> check that nothing calls a function the device does not have
 *     -> PTX assembly (LLVMTargetMachineEmitToMemoryBuffer; NVPTX's own IR
 *        passes run there: generic-to-nvvm for globals in the generic
 *        address space, lower-args, infer-address-spaces, lower-alloca;
 *        checked with llc-19 -debug-pass=Structure).
 *
 * This follows how mature LLVM-to-PTX compilers set things up (Julia's
 * GPUCompiler, Numba, Triton; /work/shared/notes/gpu-codegen.md): link
 * libdevice and internalise it, because external libdevice functions would
 * be emitted as device functions and optimised one by one. We go one step
 * further: libdevice is read lazily and its functions are made linkonce_odr
 * before linking, so that the linker reads and copies only the functions
 * the kernels call (and what those call). Reading and linking it whole
 * cost 70 ms and optimising the 350 functions 55 ms more, per compile; a
 * Black-Scholes kernel (exp, log, sqrt, erfc in f32) now compiles to PTX
 * in about 15-20 ms on this (shared, loaded) machine.
 *
 * __nvvm_reflect is folded here, before the pipeline, rather than left to
 * LLVM's NVVMReflect pass (which LLVM 19's NVPTX target machine does add at
 * the start of the O3 pipeline, reading __CUDA_ARCH from the target machine
 * and __CUDA_FTZ from the module flag "nvvm-reflect-ftz"): that pass
 * answers 0 to every other query, and libdevice also asks
 * "__CUDA_PREC_SQRT", for which nvcc's default (-prec-sqrt=true) is 1.
 * Folding it to 0 would make libdevice's internal square roots approximate.
 * We answer: __CUDA_FTZ 0 (denormals are kept, as on the CPU and in the
 * interpreter), __CUDA_ARCH sm * 10, __CUDA_PREC_SQRT 1, anything else 0.
 *
 * PTX ISA versions (nv_ptx_version): each architecture needs a minimum
 * version (LLVM 19's NVPTX.td: sm_75 6.3, sm_80 7.0, sm_86 7.1, sm_87 7.4,
 * sm_89 7.8, sm_90 7.8) and a driver loads only the versions of its CUDA
 * release and older (PTX ISA release history: CUDA 10.0 6.3, 10.1 6.4,
 * 10.2 6.5, 11.x 7.x for x = 0..8, 12.x 8.x for x = 0..5, 12.7 8.6,
 * 12.8 8.7, 12.9 8.8, 13.0 9.0); LLVM 19 emits at most 8.5. We emit the
 * lowest version the architecture needs: nothing the kernels use needs
 * more (warp shuffles and votes with masks need 6.0).
 *
 * Errors become ac_error values with status AC_ERR_INTERNAL and LLVM's
 * message (as lib/target/native.c), except what a user can fix: an
 * unknown architecture or a driver too old (AC_ERR_INVALID) and a missing
 * libdevice (AC_ERR_UNSUPPORTED). LLVM's diagnostics go to a handler that
 * keeps the first error instead of printing or exiting.
 */
#include "target/nvptx.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/BitReader.h>
#include <llvm-c/Linker.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NV_TRIPLE "nvptx64-nvidia-cuda"
/* The newest PTX ISA LLVM 19 knows (its "ptx85" feature). */
#define NV_PTX_LLVM_MAX 85

/* ---- process-wide initialisation ---- */

static pthread_once_t nv_once = PTHREAD_ONCE_INIT;
/* Written once, inside nv_once. */
static LLVMTargetRef nv_target;
static char nv_libdevice[4096];
static bool nv_have_libdevice;

static bool nv_readable(const char *path) {
  FILE *fp = fopen(path, "rb");
  if (!fp)
    return false;
  fclose(fp);
  return true;
}

/* $CUDA_HOME/nvvm/libdevice/libdevice.10.bc when CUDA_HOME names one
 * directory (a PATH-like list is ignored, as other compilers do), then the
 * default installation. */
static void nv_find_libdevice(void) {
  static const char rel[] = "/nvvm/libdevice/libdevice.10.bc";
  const char *home = getenv("CUDA_HOME");
  if (home && *home && !strchr(home, ':') && strlen(home) + sizeof rel < sizeof nv_libdevice) {
    snprintf(nv_libdevice, sizeof nv_libdevice, "%s%s", home, rel);
    if (nv_readable(nv_libdevice)) {
      nv_have_libdevice = true;
      return;
    }
  }
  snprintf(nv_libdevice, sizeof nv_libdevice, "/usr/local/cuda%s", rel);
  nv_have_libdevice = nv_readable(nv_libdevice);
}

static void nv_init(void) {
  LLVMInitializeNVPTXTargetInfo();
  LLVMInitializeNVPTXTarget();
  LLVMInitializeNVPTXTargetMC();
  LLVMInitializeNVPTXAsmPrinter();
  char *msg = NULL;
  if (LLVMGetTargetFromTriple(NV_TRIPLE, &nv_target, &msg))
    nv_target = NULL;
  LLVMDisposeMessage(msg);
  nv_find_libdevice();
}

const char *nv_libdevice_path(void) {
  pthread_once(&nv_once, nv_init);
  return nv_have_libdevice ? nv_libdevice : NULL;
}

/* ---- architectures and PTX versions ---- */

typedef struct nv_arch {
  unsigned sm, ptx; /* the lowest PTX ISA version that knows sm */
} nv_arch;

static const nv_arch nv_archs[] = {
    {75, 63}, {80, 70}, {86, 71}, {87, 74}, {89, 78}, {90, 78},
};

bool nv_sm_valid(unsigned sm) {
  for (size_t i = 0; i < sizeof nv_archs / sizeof nv_archs[0]; i++)
    if (nv_archs[i].sm == sm)
      return true;
  return false;
}

/* The newest PTX ISA a driver of CUDA version v (1000 * major + 10 * minor)
 * loads, or 0 for a driver older than CUDA 10.0. */
static unsigned nv_driver_ptx(int v) {
  int major = v / 1000, minor = (v % 1000) / 10;
  if (major < 10)
    return 0;
  if (major == 10)
    return 63u + (unsigned)(minor < 2 ? minor : 2);
  if (major == 11)
    return 70u + (unsigned)(minor < 8 ? minor : 8);
  if (major == 12 && minor <= 5)
    return 80u + (unsigned)minor;
  if (major == 12) /* 12.6 loads 8.5; 12.7 8.6, 12.8 8.7, 12.9 8.8 */
    return minor == 6 ? 85u : 79u + (unsigned)minor;
  return 90u; /* CUDA 13.0: 9.0, and newer drivers load everything older */
}

unsigned nv_ptx_version(unsigned sm, int driver_version) {
  unsigned need = 0;
  for (size_t i = 0; i < sizeof nv_archs / sizeof nv_archs[0]; i++)
    if (nv_archs[i].sm == sm)
      need = nv_archs[i].ptx;
  if (need == 0 || need > NV_PTX_LLVM_MAX)
    return 0;
  if (driver_version == 0)
    return need;
  unsigned max = nv_driver_ptx(driver_version);
  return need <= max ? need : 0;
}

/* ---- errors ---- */

static ac_status nv_fail(ac_context *ctx, ac_error **err, ac_status st, const char *what,
                         const char *msg) {
  return ir_report(err,
                   ir_error(ctx, st, NULL, (ir_loc){0, 0}, "NVPTX: %s%s%s", what, msg ? ": " : "",
                            msg ? msg : ""),
                   st);
}

/* LLVM diagnostics during one nv_emit: the first error is kept (ac_alloc'd)
 * and reported; warnings and remarks are dropped, never printed. */
typedef struct nv_diag {
  ac_context *ctx;
  char *first_error;
} nv_diag;

static void nv_diag_handler(LLVMDiagnosticInfoRef di, void *ud) {
  nv_diag *D = ud;
  if (LLVMGetDiagInfoSeverity(di) != LLVMDSError || D->first_error)
    return;
  char *msg = LLVMGetDiagInfoDescription(di);
  D->first_error = ac_strdup(D->ctx, msg ? msg : "unknown LLVM error");
  LLVMDisposeMessage(msg);
}

/* ---- module preparation ---- */

static LLVMTargetMachineRef nv_target_machine(unsigned sm, unsigned ptx) {
  char cpu[16], features[16];
  snprintf(cpu, sizeof cpu, "sm_%u", sm);
  snprintf(features, sizeof features, "+ptx%u", ptx);
  return LLVMCreateTargetMachine(nv_target, NV_TRIPLE, cpu, features, LLVMCodeGenLevelAggressive,
                                 LLVMRelocDefault, LLVMCodeModelDefault);
}

/* Sets the triple and the target machine's data layout. */
static void nv_set_layout(LLVMModuleRef mod, LLVMTargetMachineRef tm) {
  LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
  char *layout = LLVMCopyStringRepOfTargetData(td);
  LLVMSetTarget(mod, NV_TRIPLE);
  LLVMSetDataLayout(mod, layout);
  LLVMDisposeMessage(layout);
  LLVMDisposeTargetData(td);
}

ac_status nv_prepare(cg_module *M, ac_error **err) {
  pthread_once(&nv_once, nv_init);
  if (!nv_target)
    return nv_fail(M->ctx, err, AC_ERR_UNSUPPORTED, "this LLVM was built without the NVPTX target",
                   NULL);
  LLVMTargetMachineRef tm = nv_target_machine(NV_SM_DEFAULT, nv_ptx_version(NV_SM_DEFAULT, 0));
  if (!tm)
    return nv_fail(M->ctx, err, AC_ERR_INTERNAL, "cannot create a target machine", NULL);
  nv_set_layout(M->mod, tm);
  LLVMDisposeTargetMachine(tm);
  return AC_OK;
}

/* ---- libdevice ---- */

static bool nv_has_prefix(const char *s, const char *p) {
  return strncmp(s, p, strlen(p)) == 0;
}

/* Does the module declare (call) a libdevice function? */
static bool nv_needs_libdevice(LLVMModuleRef mod) {
  for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn)) {
    size_t n;
    if (LLVMIsDeclaration(fn) && nv_has_prefix(LLVMGetValueName2(fn, &n), "__nv_"))
      return true;
  }
  return false;
}

/* Names of the functions the module defines, so that after linking
 * everything else can be made internal. */
typedef struct nv_names {
  ac_context *ctx;
  char **v;
  size_t n, cap;
  bool oom;
} nv_names;

static void nv_names_add(nv_names *S, const char *s) {
  if (S->oom || !ac_grow(S->ctx, (void **)&S->v, &S->cap, S->n + 1, sizeof *S->v) ||
      !(S->v[S->n] = ac_strdup(S->ctx, s))) {
    S->oom = true;
    return;
  }
  S->n++;
}

static bool nv_names_has(const nv_names *S, const char *s) {
  for (size_t i = 0; i < S->n; i++)
    if (strcmp(S->v[i], s) == 0)
      return true;
  return false;
}

static void nv_names_free(nv_names *S) {
  for (size_t i = 0; i < S->n; i++)
    ac_free(S->ctx, S->v[i]);
  ac_free(S->ctx, S->v);
}

/* Links the libdevice.10.bc at `path` into M->mod: only the functions the
 * module calls and what they call are read and linked (a whole libdevice
 * costs ~60 ms to read and ~50 ms more to optimise), and they become
 * internal, so that the optimiser inlines them and drops the rest. */
static ac_status nv_link_libdevice(cg_module *M, const char *path, ac_error **err) {
  nv_names ours = {.ctx = M->ctx};
  for (LLVMValueRef fn = LLVMGetFirstFunction(M->mod); fn; fn = LLVMGetNextFunction(fn))
    if (!LLVMIsDeclaration(fn)) {
      size_t n;
      nv_names_add(&ours, LLVMGetValueName2(fn, &n));
    }
  if (ours.oom) {
    nv_names_free(&ours);
    return nv_fail(M->ctx, err, AC_ERR_NOMEM, "out of memory", NULL);
  }
  LLVMMemoryBufferRef buf = NULL;
  char *msg = NULL;
  if (LLVMCreateMemoryBufferWithContentsOfFile(path, &buf, &msg)) {
    ac_status st = nv_fail(M->ctx, err, AC_ERR_IO, "cannot read libdevice", msg);
    LLVMDisposeMessage(msg);
    nv_names_free(&ours);
    return st;
  }
  /* Lazily: a function body is read only when the linker takes it (the
   * module owns buf from here on, even on failure) */
  LLVMModuleRef lib = NULL;
  if (LLVMGetBitcodeModuleInContext2(M->llctx, buf, &lib)) {
    nv_names_free(&ours);
    return nv_fail(M->ctx, err, AC_ERR_INTERNAL, "cannot read libdevice's bitcode", path);
  }
  /* libdevice says nvptx64-nvidia-gpulibs and a layout of its own; the
   * linker would warn about the difference */
  LLVMSetTarget(lib, LLVMGetTarget(M->mod));
  LLVMSetDataLayout(lib, LLVMGetDataLayoutStr(M->mod));
  /* linkonce_odr definitions are linked only when something refers to
   * them: our declarations, then what those functions call */
  for (LLVMValueRef fn = LLVMGetFirstFunction(lib); fn; fn = LLVMGetNextFunction(fn))
    if (!LLVMIsDeclaration(fn) && LLVMGetLinkage(fn) == LLVMExternalLinkage)
      LLVMSetLinkage(fn, LLVMLinkOnceODRLinkage);
  if (LLVMLinkModules2(M->mod, lib)) { /* destroys lib either way */
    nv_names_free(&ours);
    return nv_fail(M->ctx, err, AC_ERR_INTERNAL, "cannot link libdevice", path);
  }
  for (LLVMValueRef fn = LLVMGetFirstFunction(M->mod); fn; fn = LLVMGetNextFunction(fn)) {
    size_t n;
    if (!LLVMIsDeclaration(fn) && !nv_names_has(&ours, LLVMGetValueName2(fn, &n)))
      LLVMSetLinkage(fn, LLVMInternalLinkage);
  }
  nv_names_free(&ours);
  return AC_OK;
}

/* The string a __nvvm_reflect call asks about: its argument is a constant
 * global string, possibly behind constant casts or GEPs. NULL if not. */
static const char *nv_reflect_query(LLVMValueRef arg, size_t *len) {
  while (arg && LLVMIsAConstantExpr(arg))
    arg = LLVMGetOperand(arg, 0);
  if (!arg || !LLVMIsAGlobalVariable(arg))
    return NULL;
  LLVMValueRef init = LLVMGetInitializer(arg);
  if (!init || !LLVMIsAConstantDataSequential(init) || !LLVMIsConstantString(init))
    return NULL;
  const char *s = LLVMGetAsString(init, len);
  while (*len > 0 && s[*len - 1] == '\0')
    (*len)--;
  return s;
}

static unsigned nv_reflect_value(const char *q, size_t len, unsigned sm) {
  if (len == 11 && memcmp(q, "__CUDA_ARCH", 11) == 0)
    return sm * 10;
  if (len == 16 && memcmp(q, "__CUDA_PREC_SQRT", 16) == 0)
    return 1;
  return 0; /* __CUDA_FTZ and anything unknown */
}

/* Replaces every call of __nvvm_reflect / llvm.nvvm.reflect by its answer.
 * Returns false on a call whose argument is not a constant string. */
static bool nv_fold_reflect(cg_module *M, unsigned sm) {
  static const char *const names[] = {"__nvvm_reflect", "llvm.nvvm.reflect"};
  bool ok = true;
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
    LLVMValueRef fn = LLVMGetNamedFunction(M->mod, names[k]);
    if (!fn)
      continue;
    /* each step removes the first use, so the walk always restarts */
    LLVMUseRef u;
    while ((u = LLVMGetFirstUse(fn)) != NULL) {
      LLVMValueRef call = LLVMGetUser(u);
      size_t len = 0;
      const char *q = LLVMIsACallInst(call) && LLVMGetCalledValue(call) == fn
                          ? nv_reflect_query(LLVMGetOperand(call, 0), &len)
                          : NULL;
      if (!q) {
        ok = false;
        break;
      }
      LLVMTypeRef rt = LLVMTypeOf(call);
      LLVMReplaceAllUsesWith(call, LLVMConstInt(rt, nv_reflect_value(q, len, sm), 0));
      LLVMInstructionEraseFromParent(call);
    }
    if (ok)
      LLVMDeleteFunction(fn);
  }
  return ok;
}

/* Functions the CUDA driver itself provides to PTX (the device runtime's
 * printf, malloc, free and assert). */
static bool nv_driver_function(const char *name) {
  static const char *const names[] = {"vprintf", "malloc", "free", "__assertfail"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(name, names[i]) == 0)
      return true;
  return false;
}

/* After optimisation: a call of a function that neither the module, LLVM
 * (intrinsics) nor the driver defines would fail only when the driver
 * loads the PTX; say so now. Returns the name, or NULL. */
static const char *nv_unresolved(LLVMModuleRef mod) {
  for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn)) {
    size_t n;
    const char *name = LLVMGetValueName2(fn, &n);
    if (LLVMIsDeclaration(fn) && LLVMGetFirstUse(fn) && LLVMGetIntrinsicID(fn) == 0 &&
        !nv_driver_function(name))
      return name;
  }
  return NULL;
}

/* ---- emission ---- */

static char *nv_copy(ac_context *ctx, const char *s, size_t n) {
  char *p = ac_alloc(ctx, n + 1);
  if (p) {
    memcpy(p, s, n);
    p[n] = '\0';
  }
  return p;
}

static ac_status nv_emit_run(cg_module *M, LLVMTargetMachineRef tm, const char *libdevice,
                             unsigned sm, char **ptx, size_t *len, char **ir_out, ac_error **err) {
  ac_context *ctx = M->ctx;
  nv_set_layout(M->mod, tm);
  char *msg = NULL;
  if (LLVMVerifyModule(M->mod, LLVMReturnStatusAction, &msg)) {
    ac_status st = nv_fail(ctx, err, AC_ERR_INTERNAL, "invalid LLVM IR", msg);
    LLVMDisposeMessage(msg);
    return st;
  }
  LLVMDisposeMessage(msg);
  if (nv_needs_libdevice(M->mod)) {
    if (!libdevice)
      return nv_fail(ctx, err, AC_ERR_UNSUPPORTED,
                     "the kernels call libdevice functions but libdevice.10.bc was not found",
                     "set CUDA_HOME to the CUDA installation");
    ac_status st = nv_link_libdevice(M, libdevice, err);
    if (st != AC_OK)
      return st;
  }
  if (!nv_fold_reflect(M, sm))
    return nv_fail(ctx, err, AC_ERR_INTERNAL, "__nvvm_reflect of something not a constant string",
                   NULL);
  LLVMPassBuilderOptionsRef opts = LLVMCreatePassBuilderOptions();
  LLVMErrorRef e = LLVMRunPasses(M->mod, "function(infer-address-spaces),default<O3>", tm, opts);
  LLVMDisposePassBuilderOptions(opts);
  if (e) {
    char *em = LLVMGetErrorMessage(e);
    ac_status st = nv_fail(ctx, err, AC_ERR_INTERNAL, "optimisation", em);
    LLVMDisposeErrorMessage(em);
    return st;
  }
  const char *missing = nv_unresolved(M->mod);
  if (missing)
    return nv_fail(ctx, err, AC_ERR_UNSUPPORTED, "a kernel calls a function the GPU does not have",
                   missing);
  if (ir_out) {
    char *text = LLVMPrintModuleToString(M->mod);
    *ir_out = nv_copy(ctx, text, strlen(text));
    LLVMDisposeMessage(text);
    if (!*ir_out)
      return nv_fail(ctx, err, AC_ERR_NOMEM, "out of memory", NULL);
  }
  LLVMMemoryBufferRef out = NULL;
  if (LLVMTargetMachineEmitToMemoryBuffer(tm, M->mod, LLVMAssemblyFile, &msg, &out)) {
    ac_status st = nv_fail(ctx, err, AC_ERR_INTERNAL, "PTX emission", msg);
    LLVMDisposeMessage(msg);
    return st;
  }
  size_t n = LLVMGetBufferSize(out);
  *ptx = nv_copy(ctx, LLVMGetBufferStart(out), n);
  LLVMDisposeMemoryBuffer(out);
  if (!*ptx)
    return nv_fail(ctx, err, AC_ERR_NOMEM, "out of memory", NULL);
  *len = n;
  return AC_OK;
}

ac_status nv_emit_with(cg_module *M, const char *libdevice, unsigned sm, int driver_version,
                       char **ptx, size_t *len, char **ir_out, ac_error **err) {
  *ptx = NULL;
  *len = 0;
  if (ir_out)
    *ir_out = NULL;
  pthread_once(&nv_once, nv_init);
  ac_context *ctx = M->ctx;
  if (!nv_target)
    return nv_fail(ctx, err, AC_ERR_UNSUPPORTED, "this LLVM was built without the NVPTX target",
                   NULL);
  if (M->st != AC_OK)
    return nv_fail(ctx, err, AC_ERR_INTERNAL, "module with a code generation error", NULL);
  if (!M->mod)
    return nv_fail(ctx, err, AC_ERR_INTERNAL, "module already compiled", NULL);
  char what[96];
  if (!nv_sm_valid(sm)) {
    snprintf(what, sizeof what, "sm_%u", sm);
    return nv_fail(ctx, err, AC_ERR_INVALID, "unknown GPU architecture (sm_75 or newer)", what);
  }
  unsigned ptxv = nv_ptx_version(sm, driver_version);
  if (ptxv == 0) {
    snprintf(what, sizeof what, "sm_%u needs a newer driver than CUDA %d.%d", sm,
             driver_version / 1000, (driver_version % 1000) / 10);
    return nv_fail(ctx, err, AC_ERR_INVALID, "the CUDA driver is too old", what);
  }
  LLVMTargetMachineRef tm = nv_target_machine(sm, ptxv);
  if (!tm)
    return nv_fail(ctx, err, AC_ERR_INTERNAL, "cannot create a target machine", NULL);
  /* LLVM reports some backend errors through the context: keep them
   * (the default handler would print, or exit on an error) */
  LLVMDiagnosticHandler old = LLVMContextGetDiagnosticHandler(M->llctx);
  void *old_ud = LLVMContextGetDiagnosticContext(M->llctx);
  nv_diag D = {.ctx = ctx, .first_error = NULL};
  LLVMContextSetDiagnosticHandler(M->llctx, nv_diag_handler, &D);
  ac_status st = nv_emit_run(M, tm, libdevice, sm, ptx, len, ir_out, err);
  LLVMContextSetDiagnosticHandler(M->llctx, old, old_ud);
  LLVMDisposeTargetMachine(tm);
  if (st == AC_OK && D.first_error) {
    ac_free(ctx, *ptx);
    *ptx = NULL;
    *len = 0;
    if (ir_out) {
      ac_free(ctx, *ir_out);
      *ir_out = NULL;
    }
    st = nv_fail(ctx, err, AC_ERR_INTERNAL, "LLVM", D.first_error);
  }
  ac_free(ctx, D.first_error);
  return st;
}

ac_status nv_emit(cg_module *M, unsigned sm, int driver_version, char **ptx, size_t *len,
                  char **ir_out, ac_error **err) {
  return nv_emit_with(M, nv_libdevice_path(), sm, driver_version, ptx, len, ir_out, err);
}

ac_status nv_emit_module(ac_context *ctx, LLVMModuleRef mod, unsigned sm, int driver_version,
                         char **ptx, size_t *len, char **ir_out, ac_error **err) {
  /* nv_emit_with needs of a cg_module only its context, LLVM module and
   * context, and status: a shell that owns nothing */
  cg_module M;
  memset(&M, 0, sizeof M);
  M.ctx = ctx;
  M.mod = mod;
  M.llctx = LLVMGetModuleContext(mod);
  M.st = AC_OK;
  return nv_emit(&M, sm, driver_version, ptx, len, ir_out, err);
}
