/* lib/target/native.c: the host CPU target over LLVM's ORC LLJIT.
 *
 * Pipeline of one compile (nat_compile), under the JIT's mutex:
 *
 *   cg_module (LLVM IR in a ThreadSafeContext's context, made by cg.c)
 *     -> target-cpu / target-features on every function (host detection)
 *     -> LLVMRunPasses("default<O3>") with the host TargetMachine
 *     -> a fresh JITDylib: process symbols (libm) through a search
 *        generator, the rt.h helpers as absolute symbols
 *     -> LLJIT IR layer (codegen at -O3 for the same CPU) -> lookup.
 *
 * Everything that does not depend on the module is done once, in
 * nat_jit_create: target initialisation (once per process), host detection,
 * the TargetMachine the optimiser uses (its TargetTransformInfo is what
 * makes the vectoriser choose AVX2 / AVX-512 widths), and the LLJIT itself,
 * whose JITTargetMachineBuilder is made from an identical TargetMachine so
 * that the optimiser and the code generator agree on CPU and features.
 * Each compile then costs the passes and the machine code generation of its
 * own module only.
 *
 * Kernel names need only be unique within a module because each module gets
 * its own JITDylib (named arrayc.N), looked up with an ExecutionSession
 * lookup restricted to that dylib. LLJIT's main JITDylib is never used.
 * The C API has no way to link a new dylib against another, so each dylib
 * gets its own process-symbol generator and its own copies of the helper
 * symbols (a handful of absolute addresses: cheap).
 *
 * Errors from LLVM (LLVMErrorRef) are consumed here and become ac_error
 * values with status AC_ERR_INTERNAL and LLVM's message.
 *
 * Ahead of time (nat_aot_create, nat_emit_object; the last section): the
 * same optimisation for a chosen CPU, emitted as a position-independent
 * object file instead of being added to a JIT.
 */
#include "target/native.h"

#include "codegen/simt.h"
#include "runtime/simt_emu.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Support.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>

struct nat_jit {
  ac_context *ctx;
  LLVMOrcLLJITRef jit;
  LLVMTargetMachineRef tm; /* the optimiser's view of the host */
  char *triple;            /* LLVM messages (LLVMDisposeMessage) */
  char *cpu;
  char *features;
  const char *layout; /* owned by the LLJIT, or layout_owned */
  char *layout_owned; /* ahead of time (no LLJIT): the layout (LLVMDisposeMessage) */
  pthread_mutex_t mu;
  uint64_t ndylibs; /* for unique JITDylib names */
  /* The first error the ExecutionSession reported during the current
   * compile (materialisation failures such as an unresolved symbol reach
   * the session's reporter, not the lookup): ac_alloc'd or NULL. */
  char *session_msg;
};

/* ---- process-wide initialisation ---- */

static pthread_once_t nat_once = PTHREAD_ONCE_INIT;
static bool nat_init_failed; /* written once, inside nat_once */

static void nat_init_targets(void) {
  nat_init_failed = LLVMInitializeNativeTarget() || LLVMInitializeNativeAsmPrinter();
  /* x86 turns a cmov on a loop-carried chain into a branch when it guesses
   * the branch predictable (X86CmovConverter). arrayc's kernels compare
   * data: in a recurrence's row (min(min(up, left) + 1, diag + cost)) the
   * branch mispredicts half the time and the loop ran 2.4x slower than
   * with the cmov. The option is LLVM's, process-wide, set once here, on
   * x86 hosts (whose LLVM has the x86 target: it is the native one). */
  char *triple = LLVMGetDefaultTargetTriple();
  if (!nat_init_failed && triple && (strncmp(triple, "x86_64", 6) == 0 || strncmp(triple, "i686", 4) == 0 ||
                                     strncmp(triple, "i386", 4) == 0)) {
    const char *argv[2] = {"arrayc", "-x86-cmov-converter=false"};
    LLVMParseCommandLineOptions(2, argv, NULL);
  }
  LLVMDisposeMessage(triple);
}

/* ---- errors ---- */

static ac_status nat_fail(ac_context *ctx, ac_error **err, const char *what, const char *msg) {
  return ir_report(err,
                   ir_error(ctx, AC_ERR_INTERNAL, NULL, (ir_loc){0, 0}, "native JIT: %s%s%s", what,
                            msg ? ": " : "", msg ? msg : ""),
                   AC_ERR_INTERNAL);
}

/* Consumes e and reports it. */
static ac_status nat_llvm_fail(ac_context *ctx, ac_error **err, const char *what, LLVMErrorRef e) {
  char *msg = LLVMGetErrorMessage(e);
  ac_status st = nat_fail(ctx, err, what, msg);
  LLVMDisposeErrorMessage(msg);
  return st;
}

/* The ExecutionSession's error reporter: LLVM's default prints to stderr;
 * this one keeps the first message for the compile that is running (the
 * reporter runs under the compile mutex, inside the lookup). */
static void nat_session_error(void *ud, LLVMErrorRef e) {
  nat_jit *J = ud;
  char *msg = LLVMGetErrorMessage(e);
  if (!J->session_msg)
    J->session_msg = ac_strdup(J->ctx, msg);
  LLVMDisposeErrorMessage(msg);
}

/* ---- creation ---- */

static LLVMTargetMachineRef nat_target_machine(nat_jit *J, LLVMTargetRef target) {
  return LLVMCreateTargetMachine(target, J->triple, J->cpu, J->features, LLVMCodeGenLevelAggressive,
                                 LLVMRelocDefault, LLVMCodeModelJITDefault);
}

/* A zeroed nat_jit of ctx with its mutex and the host's triple as ORC
 * detects it for this process: what the JIT (nat_jit_create) and ahead of
 * time (nat_aot_create) both start from. On failure nothing is left. */
static ac_status nat_new(ac_context *ctx, nat_jit **out, ac_error **err) {
  *out = NULL;
  pthread_once(&nat_once, nat_init_targets);
  if (nat_init_failed)
    return nat_fail(ctx, err, "the native target is not available in this LLVM", NULL);
  nat_jit *J = ac_alloc(ctx, sizeof *J);
  if (!J)
    return ir_report(err, ir_error(ctx, AC_ERR_NOMEM, NULL, (ir_loc){0, 0}, "out of memory"),
                     AC_ERR_NOMEM);
  memset(J, 0, sizeof *J);
  J->ctx = ctx;
  if (pthread_mutex_init(&J->mu, NULL) != 0) {
    ac_free(ctx, J);
    return nat_fail(ctx, err, "cannot create a mutex", NULL);
  }
  ac_status st = AC_OK;
  LLVMOrcJITTargetMachineBuilderRef jtmb = NULL;
  LLVMErrorRef e = LLVMOrcJITTargetMachineBuilderDetectHost(&jtmb);
  if (e) {
    st = nat_llvm_fail(ctx, err, "host detection", e);
    nat_jit_destroy(J);
    return st;
  }
  J->triple = LLVMOrcJITTargetMachineBuilderGetTargetTriple(jtmb);
  LLVMOrcDisposeJITTargetMachineBuilder(jtmb);
  *out = J;
  return AC_OK;
}

ac_status nat_jit_create(ac_context *ctx, nat_jit **out, ac_error **err) {
  *out = NULL;
  nat_jit *J = NULL;
  ac_status st = nat_new(ctx, &J, err);
  if (st != AC_OK)
    return st;
  J->cpu = LLVMGetHostCPUName();
  J->features = LLVMGetHostCPUFeatures();
  LLVMTargetRef target;
  char *msg = NULL;
  if (LLVMGetTargetFromTriple(J->triple, &target, &msg)) {
    st = nat_fail(ctx, err, "no target for the host triple", msg);
    LLVMDisposeMessage(msg);
    goto fail;
  }
  J->tm = nat_target_machine(J, target);
  LLVMTargetMachineRef jit_tm = nat_target_machine(J, target);
  if (!J->tm || !jit_tm) {
    if (jit_tm)
      LLVMDisposeTargetMachine(jit_tm);
    st = nat_fail(ctx, err, "cannot create a target machine for the host", NULL);
    goto fail;
  }
  LLVMOrcLLJITBuilderRef builder = LLVMOrcCreateLLJITBuilder();
  LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(
      builder, LLVMOrcJITTargetMachineBuilderCreateFromTargetMachine(jit_tm)); /* takes both */
  LLVMErrorRef e = LLVMOrcCreateLLJIT(&J->jit, builder); /* takes builder */
  if (e) {
    J->jit = NULL;
    st = nat_llvm_fail(ctx, err, "cannot create the JIT", e);
    goto fail;
  }
  J->layout = LLVMOrcLLJITGetDataLayoutStr(J->jit);
  LLVMOrcExecutionSessionSetErrorReporter(LLVMOrcLLJITGetExecutionSession(J->jit),
                                          nat_session_error, J);
  *out = J;
  return AC_OK;
fail:
  nat_jit_destroy(J);
  return st;
}

void nat_jit_destroy(nat_jit *J) {
  if (!J)
    return;
  if (J->jit) {
    LLVMErrorRef e = LLVMOrcDisposeLLJIT(J->jit);
    if (e) /* nobody to tell: the code is gone either way */
      LLVMConsumeError(e);
  }
  if (J->tm)
    LLVMDisposeTargetMachine(J->tm);
  LLVMDisposeMessage(J->triple);
  LLVMDisposeMessage(J->cpu);
  LLVMDisposeMessage(J->features);
  LLVMDisposeMessage(J->layout_owned);
  pthread_mutex_destroy(&J->mu);
  ac_free(J->ctx, J->session_msg);
  ac_free(J->ctx, J);
}

const char *nat_cpu_name(const nat_jit *J) {
  return J->cpu;
}
const char *nat_cpu_features(const nat_jit *J) {
  return J->features;
}

void nat_prepare(nat_jit *J, cg_module *M) {
  LLVMSetTarget(M->mod, J->triple);
  LLVMSetDataLayout(M->mod, J->layout);
}

/* ---- optimisation ---- */

static void nat_set_attr(LLVMContextRef c, LLVMValueRef fn, const char *k, const char *v) {
  LLVMAttributeRef a = LLVMCreateStringAttribute(c, k, (unsigned)strlen(k), v, (unsigned)strlen(v));
  LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, a);
}

/* Marks every function defined in mod with J's CPU and features (none for
 * a named CPU ahead of time: its defaults) and runs the O3 pipeline with
 * J's target machine, vectorisers on unless `vectorise` is false (profiled
 * SIMT kernels: the host's vector widths must not change how a GPU
 * thread's accesses look; NVPTX's pipeline does not vectorise loops
 * either; its code generator's load-store vectoriser, which merges
 * neighbouring accesses into vector ones, runs instead). mod must have
 * been verified. */
static ac_status nat_o3(nat_jit *J, LLVMModuleRef mod, bool vectorise, ac_error **err) {
  LLVMContextRef c = LLVMGetModuleContext(mod);
  for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn)) {
    if (LLVMIsDeclaration(fn))
      continue;
    nat_set_attr(c, fn, "target-cpu", J->cpu);
    if (J->features[0])
      nat_set_attr(c, fn, "target-features", J->features);
  }
  LLVMPassBuilderOptionsRef opts = LLVMCreatePassBuilderOptions();
  LLVMPassBuilderOptionsSetLoopVectorization(opts, vectorise);
  LLVMPassBuilderOptionsSetSLPVectorization(opts, vectorise);
  LLVMPassBuilderOptionsSetLoopInterleaving(opts, vectorise);
  LLVMPassBuilderOptionsSetLoopUnrolling(opts, 1);
  /* without the vectorisers, the load-store vectoriser still merges
   * neighbouring accesses as NVPTX's code generator does (ld.v4) */
  LLVMErrorRef e = LLVMRunPasses(
      mod, vectorise ? "default<O3>" : "default<O3>,function(load-store-vectorizer)", J->tm, opts);
  LLVMDisposePassBuilderOptions(opts);
  if (e)
    return nat_llvm_fail(J->ctx, err, "optimisation", e);
  return AC_OK;
}

/* The module must be valid (cg_kernel_end verified each kernel; the module
 * is verified once more because LLVM's passes crash on invalid IR). */
static ac_status nat_optimise_locked(nat_jit *J, cg_module *M, ac_error **err) {
  if (M->st != AC_OK)
    return nat_fail(J->ctx, err, "module with a code generation error", NULL);
  if (!M->mod)
    return nat_fail(J->ctx, err, "module already compiled", NULL);
  nat_prepare(J, M);
  char *msg = NULL;
  if (LLVMVerifyModule(M->mod, LLVMReturnStatusAction, &msg)) {
    ac_status st = nat_fail(J->ctx, err, "invalid LLVM IR", msg);
    LLVMDisposeMessage(msg);
    return st;
  }
  LLVMDisposeMessage(msg);
  if (!M->profile)
    return nat_o3(J, M->mod, true, err);
  ac_status st = nat_o3(J, M->mod, false, err);
  return st == AC_OK ? simt_prof_instrument(M, err) : st;
}

ac_status nat_optimise(nat_jit *J, cg_module *M, ac_error **err) {
  pthread_mutex_lock(&J->mu);
  ac_status st = nat_optimise_locked(J, M, err);
  pthread_mutex_unlock(&J->mu);
  return st;
}

/* ---- adding and looking up ---- */

/* ExecutionSession lookups answer through a callback; with LLJIT's default
 * in-place dispatcher it runs before the lookup returns, but the wait below
 * does not depend on that. */
typedef struct nat_lookup {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool done;
  char *msg; /* LLVM's error message, or NULL */
  size_t n;
  LLVMOrcSymbolStringPoolEntryRef *names; /* retained by us */
  void **addrs;
} nat_lookup;

static void nat_lookup_done(LLVMErrorRef e, LLVMOrcCSymbolMapPairs res, size_t nres, void *ud) {
  nat_lookup *L = ud;
  pthread_mutex_lock(&L->mu);
  if (e) {
    L->msg = LLVMGetErrorMessage(e);
  } else {
    for (size_t i = 0; i < nres; i++)
      for (size_t k = 0; k < L->n; k++)
        if (res[i].Name == L->names[k])
          L->addrs[k] = (void *)(uintptr_t)res[i].Sym.Address;
  }
  L->done = true;
  pthread_cond_signal(&L->cv);
  pthread_mutex_unlock(&L->mu);
}

/* The runtime's services for kernels (rt.h) and the SIMT emulator's
 * (simt_emu.h), as absolute symbols. */
static ac_status nat_define_helpers(nat_jit *J, LLVMOrcJITDylibRef jd, ac_error **err) {
  const rt_symbol *const tables[] = {rt_helper_symbols, rt_simt_symbols};
  size_t n = 0;
  for (size_t t = 0; t < 2; t++)
    for (size_t i = 0; tables[t][i].name; i++)
      n++;
  LLVMOrcCSymbolMapPair *pairs = ac_alloc(J->ctx, (n ? n : 1) * sizeof *pairs);
  if (!pairs)
    return ir_report(err, ir_error(J->ctx, AC_ERR_NOMEM, NULL, (ir_loc){0, 0}, "out of memory"),
                     AC_ERR_NOMEM);
  n = 0;
  for (size_t t = 0; t < 2; t++)
    for (size_t i = 0; tables[t][i].name; i++, n++) {
      pairs[n].Name = LLVMOrcLLJITMangleAndIntern(J->jit, tables[t][i].name);
      pairs[n].Sym.Address = (LLVMOrcExecutorAddress)(uintptr_t)tables[t][i].addr;
      pairs[n].Sym.Flags.GenericFlags =
          LLVMJITSymbolGenericFlagsExported | LLVMJITSymbolGenericFlagsCallable;
      pairs[n].Sym.Flags.TargetFlags = 0;
    }
  /* The materialisation unit takes the names' references. */
  LLVMOrcMaterializationUnitRef mu = LLVMOrcAbsoluteSymbols(pairs, n);
  ac_free(J->ctx, pairs);
  LLVMErrorRef e = LLVMOrcJITDylibDefine(jd, mu);
  if (e) {
    LLVMOrcDisposeMaterializationUnit(mu);
    return nat_llvm_fail(J->ctx, err, "defining the runtime helpers", e);
  }
  return AC_OK;
}

static ac_status nat_lookup_all(nat_jit *J, LLVMOrcJITDylibRef jd, const char *const *symbols,
                                size_t n, void **addrs, ac_error **err) {
  nat_lookup L;
  memset(&L, 0, sizeof L);
  L.n = n;
  L.addrs = addrs;
  L.names = ac_alloc(J->ctx, n * sizeof *L.names);
  LLVMOrcCLookupSetElement *set = ac_alloc(J->ctx, (n + 1) * sizeof *set);
  if (!L.names || !set) {
    ac_free(J->ctx, L.names);
    ac_free(J->ctx, set);
    return ir_report(err, ir_error(J->ctx, AC_ERR_NOMEM, NULL, (ir_loc){0, 0}, "out of memory"),
                     AC_ERR_NOMEM);
  }
  for (size_t i = 0; i < n; i++) {
    addrs[i] = NULL;
    L.names[i] = LLVMOrcLLJITMangleAndIntern(J->jit, symbols[i]);
    LLVMOrcRetainSymbolStringPoolEntry(L.names[i]); /* one reference goes to the lookup */
    set[i].Name = L.names[i];
    set[i].LookupFlags = LLVMOrcSymbolLookupFlagsRequiredSymbol;
  }
  set[n].Name = NULL;
  set[n].LookupFlags = LLVMOrcSymbolLookupFlagsRequiredSymbol;
  LLVMOrcCJITDylibSearchOrderElement order[2] = {{jd, LLVMOrcJITDylibLookupFlagsMatchAllSymbols},
                                                 {NULL, LLVMOrcJITDylibLookupFlagsMatchAllSymbols}};
  pthread_mutex_init(&L.mu, NULL);
  pthread_cond_init(&L.cv, NULL);
  LLVMOrcExecutionSessionLookup(LLVMOrcLLJITGetExecutionSession(J->jit), LLVMOrcLookupKindStatic,
                                order, 1, set, n, nat_lookup_done, &L);
  pthread_mutex_lock(&L.mu);
  while (!L.done)
    pthread_cond_wait(&L.cv, &L.mu);
  pthread_mutex_unlock(&L.mu);
  pthread_cond_destroy(&L.cv);
  pthread_mutex_destroy(&L.mu);
  ac_free(J->ctx, set);
  for (size_t i = 0; i < n; i++)
    LLVMOrcReleaseSymbolStringPoolEntry(L.names[i]);
  ac_free(J->ctx, L.names);
  ac_status st = AC_OK;
  if (L.msg) {
    /* The session's message says why (say, an unresolved symbol); the
     * lookup's only that materialisation failed. */
    st = nat_fail(J->ctx, err, "symbol lookup", J->session_msg ? J->session_msg : L.msg);
    LLVMDisposeErrorMessage(L.msg);
  } else {
    for (size_t i = 0; i < n && st == AC_OK; i++)
      if (!addrs[i])
        st = nat_fail(J->ctx, err, "symbol not found", symbols[i]);
  }
  return st;
}

static ac_status nat_compile_locked(nat_jit *J, cg_module *M, const char *const *symbols, size_t n,
                                    void **addrs, ac_error **err) {
  ac_status st = nat_optimise_locked(J, M, err);
  if (st != AC_OK)
    return st;
  ac_free(J->ctx, J->session_msg);
  J->session_msg = NULL;
  char name[48];
  snprintf(name, sizeof name, "arrayc.%llu", (unsigned long long)J->ndylibs++);
  LLVMOrcExecutionSessionRef es = LLVMOrcLLJITGetExecutionSession(J->jit);
  LLVMOrcJITDylibRef jd = LLVMOrcExecutionSessionCreateBareJITDylib(es, name);
  LLVMOrcDefinitionGeneratorRef gen = NULL;
  LLVMErrorRef e = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(
      &gen, LLVMOrcLLJITGetGlobalPrefix(J->jit), NULL, NULL);
  if (e)
    return nat_llvm_fail(J->ctx, err, "process symbols", e);
  LLVMOrcJITDylibAddGenerator(jd, gen);
  if ((st = nat_define_helpers(J, jd, err)) != AC_OK)
    return st;
  /* From here on the JIT owns the module and its context. */
  LLVMDisposeBuilder(M->b);
  M->b = NULL;
  LLVMOrcThreadSafeModuleRef tsm = LLVMOrcCreateNewThreadSafeModule(M->mod, M->tsc);
  LLVMOrcDisposeThreadSafeContext(M->tsc); /* the module holds its own reference */
  M->mod = NULL;
  M->llctx = NULL;
  M->tsc = NULL;
  e = LLVMOrcLLJITAddLLVMIRModule(J->jit, jd, tsm);
  if (e) {
    LLVMOrcDisposeThreadSafeModule(tsm);
    return nat_llvm_fail(J->ctx, err, "adding the module", e);
  }
  st = nat_lookup_all(J, jd, symbols, n, addrs, err);
  if (st != AC_OK) {
    /* Drop what was added: nothing of this module may be called. */
    e = LLVMOrcJITDylibClear(jd);
    if (e)
      LLVMConsumeError(e);
  }
  return st;
}

ac_status nat_compile(nat_jit *J, cg_module *M, const char *const *symbols, size_t n, void **addrs,
                      ac_error **err) {
  pthread_mutex_lock(&J->mu);
  ac_status st = nat_compile_locked(J, M, symbols, n, addrs, err);
  pthread_mutex_unlock(&J->mu);
  return st;
}

/* ---- ahead of time ----
 *
 * An object file for the host's triple, optimised as the JIT optimises
 * (nat_o3), with a target machine for position-independent code
 * (LLVMRelocPIC, the default code model) so that it can be linked into a
 * shared library. The nat_jit made for it has no LLJIT: the triple, data
 * layout, CPU, features and target machine are all it needs.
 *
 * A CPU name is checked before LLVM sees it: LLVM accepts any name, prints
 * "'X' is not a recognized processor" on stderr and compiles for the
 * baseline, which the library must neither print nor hide. The C API has
 * no query for valid names, so the x86 names are listed here: LLVM 19's
 * (`llc -mtriple=x86_64-pc-linux-gnu -mcpu=help`). On other hosts only
 * NULL, "generic" and the host's own CPU name are accepted. */

/* clang-format off */
static const char *const nat_x86_cpus[] = {
    "alderlake", "amdfam10", "arrowlake", "arrowlake-s", "arrowlake_s", "athlon", "athlon-4",
    "athlon-fx", "athlon-mp", "athlon-tbird", "athlon-xp", "athlon64", "athlon64-sse3", "atom",
    "atom_sse4_2", "atom_sse4_2_movbe", "barcelona", "bdver1", "bdver2", "bdver3", "bdver4",
    "bonnell", "broadwell", "btver1", "btver2", "c3", "c3-2", "cannonlake", "cascadelake",
    "clearwaterforest", "cooperlake", "core-avx-i", "core-avx2", "core2", "core_2_duo_sse4_1",
    "core_2_duo_ssse3", "core_2nd_gen_avx", "core_3rd_gen_avx", "core_4th_gen_avx",
    "core_4th_gen_avx_tsx", "core_5th_gen_avx", "core_5th_gen_avx_tsx", "core_aes_pclmulqdq",
    "core_i7_sse4_2", "corei7", "corei7-avx", "emeraldrapids", "generic", "geode", "goldmont",
    "goldmont-plus", "goldmont_plus", "gracemont", "grandridge", "graniterapids",
    "graniterapids-d", "graniterapids_d", "haswell", "i386", "i486", "i586", "i686",
    "icelake-client", "icelake-server", "icelake_client", "icelake_server", "ivybridge", "k6",
    "k6-2", "k6-3", "k8", "k8-sse3", "knl", "knm", "lakemont", "lunarlake", "meteorlake",
    "mic_avx512", "nehalem", "nocona", "opteron", "opteron-sse3", "pantherlake", "penryn",
    "pentium", "pentium-m", "pentium-mmx", "pentium2", "pentium3", "pentium3m", "pentium4",
    "pentium4m", "pentium_4", "pentium_4_sse3", "pentium_ii", "pentium_iii",
    "pentium_iii_no_xmm_regs", "pentium_m", "pentium_mmx", "pentium_pro", "pentiumpro",
    "prescott", "raptorlake", "rocketlake", "sandybridge", "sapphirerapids", "sierraforest",
    "silvermont", "skx", "skylake", "skylake-avx512", "skylake_avx512", "slm", "tigerlake",
    "tremont", "westmere", "winchip-c6", "winchip2", "x86-64", "x86-64-v2", "x86-64-v3",
    "x86-64-v4", "yonah", "znver1", "znver2", "znver3", "znver4", "znver5",
};
/* clang-format on */

static bool nat_is_x86(const char *triple) {
  static const char *const archs[] = {"x86_64", "i386", "i486", "i586", "i686"};
  for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
    if (strncmp(triple, archs[i], strlen(archs[i])) == 0 && triple[strlen(archs[i])] == '-')
      return true;
  return false;
}

static bool nat_cpu_known(const char *triple, const char *cpu, const char *host) {
  if (strcmp(cpu, host) == 0)
    return true;
  if (!nat_is_x86(triple))
    return false;
  for (size_t i = 0; i < sizeof nat_x86_cpus / sizeof nat_x86_cpus[0]; i++)
    if (strcmp(cpu, nat_x86_cpus[i]) == 0)
      return true;
  return false;
}

/* LLVM strings (LLVMDisposeMessage) so that nat_jit_destroy frees them as
 * the JIT's own. */
static char *nat_llvm_strdup(const char *s) {
  return LLVMCreateMessage(s);
}

ac_status nat_aot_create(ac_context *ctx, const char *cpu, nat_jit **out, ac_error **err) {
  *out = NULL;
  nat_jit *J = NULL;
  ac_status st = nat_new(ctx, &J, err);
  if (st != AC_OK)
    return st;
  char *host = LLVMGetHostCPUName();
  if (!cpu) {
    J->cpu = host;
    host = NULL;
    J->features = LLVMGetHostCPUFeatures();
  } else if (strcmp(cpu, "generic") == 0) {
    /* the triple's baseline: LLVM's "generic" x86 is older than x86-64 */
    J->cpu = nat_llvm_strdup(strncmp(J->triple, "x86_64-", 7) == 0 ? "x86-64" : "generic");
    J->features = nat_llvm_strdup("");
  } else if (nat_cpu_known(J->triple, cpu, host)) {
    J->cpu = nat_llvm_strdup(cpu);
    J->features = nat_llvm_strdup("");
  } else {
    st = ir_report(err,
                   ir_error(ctx, AC_ERR_INVALID, NULL, (ir_loc){0, 0}, "unknown CPU '%s' for %s%s",
                            cpu, J->triple,
                            nat_is_x86(J->triple)
                                ? " (see llc -mcpu=help)"
                                : " (on this host only \"generic\" and the host's CPU are known)"),
                   AC_ERR_INVALID);
    LLVMDisposeMessage(host);
    goto fail;
  }
  LLVMDisposeMessage(host);
  LLVMTargetRef target;
  char *msg = NULL;
  if (LLVMGetTargetFromTriple(J->triple, &target, &msg)) {
    st = nat_fail(ctx, err, "no target for the host triple", msg);
    LLVMDisposeMessage(msg);
    goto fail;
  }
  J->tm = LLVMCreateTargetMachine(target, J->triple, J->cpu, J->features,
                                  LLVMCodeGenLevelAggressive, LLVMRelocPIC, LLVMCodeModelDefault);
  if (!J->tm) {
    st = nat_fail(ctx, err, "cannot create a target machine for the host", NULL);
    goto fail;
  }
  LLVMTargetDataRef td = LLVMCreateTargetDataLayout(J->tm);
  J->layout_owned = LLVMCopyStringRepOfTargetData(td);
  LLVMDisposeTargetData(td);
  J->layout = J->layout_owned;
  *out = J;
  return AC_OK;
fail:
  nat_jit_destroy(J);
  return st;
}

ac_status nat_emit_object(nat_jit *J, LLVMModuleRef mod, char **obj, size_t *len, char **ir_out,
                          ac_error **err) {
  *obj = NULL;
  *len = 0;
  if (ir_out)
    *ir_out = NULL;
  ac_context *ctx = J->ctx;
  LLVMSetTarget(mod, J->triple);
  LLVMSetDataLayout(mod, J->layout);
  char *msg = NULL;
  if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg)) {
    ac_status st = nat_fail(ctx, err, "invalid LLVM IR", msg);
    LLVMDisposeMessage(msg);
    return st;
  }
  LLVMDisposeMessage(msg);
  pthread_mutex_lock(&J->mu);
  ac_status st = nat_o3(J, mod, true, err);
  pthread_mutex_unlock(&J->mu);
  if (st != AC_OK)
    return st;
  if (ir_out) {
    char *text = LLVMPrintModuleToString(mod);
    *ir_out = text ? ac_strdup(ctx, text) : NULL;
    LLVMDisposeMessage(text);
    if (!*ir_out)
      return ir_report(err, ir_error(ctx, AC_ERR_NOMEM, NULL, (ir_loc){0, 0}, "out of memory"),
                       AC_ERR_NOMEM);
  }
  LLVMMemoryBufferRef buf = NULL;
  msg = NULL;
  if (LLVMTargetMachineEmitToMemoryBuffer(J->tm, mod, LLVMObjectFile, &msg, &buf)) {
    st = nat_fail(ctx, err, "object emission", msg);
    LLVMDisposeMessage(msg);
  } else {
    size_t n = LLVMGetBufferSize(buf);
    *obj = ac_alloc(ctx, n ? n : 1);
    if (*obj) {
      memcpy(*obj, LLVMGetBufferStart(buf), n);
      *len = n;
    } else {
      st = ir_report(err, ir_error(ctx, AC_ERR_NOMEM, NULL, (ir_loc){0, 0}, "out of memory"),
                     AC_ERR_NOMEM);
    }
    LLVMDisposeMemoryBuffer(buf);
  }
  if (st != AC_OK && ir_out) {
    ac_free(ctx, *ir_out);
    *ir_out = NULL;
  }
  return st;
}
