/* lib/api/aot_emit.c: one code file for several functions, ahead of time
 * (aot_impl.h).
 *
 * Each function goes through the JIT's own pipeline (api_generate in
 * compile.c), so a plan loaded from a file later runs exactly the kernels
 * the JIT would have made. What differs is what happens to the kernels:
 *
 *   - names: lowering names kernels k0_map, k1_fold, ... (lw_kernel_new),
 *     unique only within one function's module. Each kernel becomes
 *     PREFIX_FUNCNAME_kN_kind (FUNCNAME with every character outside
 *     [A-Za-z0-9_] written as '_'), in the LLVM module and in the plan's
 *     kernel table, the runtime's only way to find it; an extern kernel
 *     (hand-written PTX that its plan carries) keeps its symbol, the name
 *     of an .entry of that PTX, and is no part of the module;
 *   - linkage: every other function and global the module defines (helpers,
 *     constant tables) is made internal, so that the helpers of two
 *     functions cannot clash and the file exports the kernels alone;
 *   - one module: each cg_module has its own LLVM context, so each is
 *     written to bitcode in memory, parsed into one common context and
 *     linked into the combined module, then disposed of before the next
 *     function is generated (one function's LLVM context alive at a time);
 *   - one optimisation: the combined module is optimised once and emitted
 *     (native.c: O3 for the chosen CPU and a position-independent object;
 *     nvptx.c: nv_emit's pipeline and PTX, driver version 0).
 *
 * The runtime helpers (rt.h: ac_rt_fail, ac_rt_tmp_alloc, ...) and libm
 * stay undefined symbols of the object: the runtime library that loads it
 * defines them. Extern host functions cannot be reached that way (kernels
 * call them through an address of this process), so functions that reach
 * one are refused before anything is generated.
 *
 * LLVM reports linker errors (a symbol defined twice) through the context's
 * diagnostic handler, whose default prints and exits; the common context
 * gets a handler that keeps the first error. Kernel names are checked for
 * clashes before linking so that the usual error is ours, with names.
 */
#include "api/aot_impl.h"
#include "runtime/bundle.h"
#include "target/nvptx.h"

#include <llvm-c/BitReader.h>
#include <llvm-c/BitWriter.h>
#include <llvm-c/Linker.h>

#include <stdarg.h>
#include <string.h>

/* ---- errors ---- */

static ac_status aot_fail(ac_context *ctx, ac_error **err, ac_status st, const char *fmt, ...)
    IR_PRINTF(4, 5);
static ac_status aot_fail(ac_context *ctx, ac_error **err, ac_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ac_error *e = ir_verror(ctx, st, NULL, (ir_loc){0, 0}, fmt, ap);
  va_end(ap);
  return ir_report(err, e, st);
}

static ac_status aot_nomem(ac_error **err) {
  return ir_report(err, NULL, AC_ERR_NOMEM);
}

/* LLVM diagnostics of the common context: the first error is kept
 * (ac_alloc'd), everything else dropped, nothing printed. */
typedef struct aot_diag {
  ac_context *ctx;
  char *first_error;
  bool any_error;
} aot_diag;

static void aot_diag_handler(LLVMDiagnosticInfoRef di, void *ud) {
  aot_diag *D = ud;
  if (LLVMGetDiagInfoSeverity(di) != LLVMDSError || D->any_error)
    return;
  D->any_error = true;
  char *msg = LLVMGetDiagInfoDescription(di);
  D->first_error = ac_strdup(D->ctx, msg ? msg : "unknown LLVM error");
  LLVMDisposeMessage(msg);
}

/* ---- checks before any work ---- */

static bool aot_is_ident(const char *s) {
  if (!s || !*s || (*s >= '0' && *s <= '9'))
    return false;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
          *s == '_'))
      return false;
  return true;
}

/* Each requested function exists once and has a body, and nothing any of
 * them reaches (through CALL and FNREF) lacks a body, is unverified or is
 * an extern on the GPU. One walk over all of them: a node or function seen from an
 * earlier one was checked already. */
static ac_status aot_check(ac_module *m, const uint32_t *fns, size_t nfns, bool gpu,
                           ac_error **err) {
  ac_context *ctx = m->ctx;
  bool *seen_fn = ac_alloc(ctx, (m->nfuncs ? m->nfuncs : 1) * sizeof *seen_fn);
  unsigned char *seen = ac_alloc(ctx, m->nnodes ? m->nnodes : 1);
  ir_ref *stack = NULL;    /* nodes still to visit */
  uint32_t *fstack = NULL; /* functions still to visit */
  size_t sp = 0, cap = 0, fsp = 0, fcap = 0;
  ac_status st = AC_OK;
  if (!seen_fn || !seen) {
    st = aot_nomem(err);
    goto done;
  }
  memset(seen_fn, 0, m->nfuncs * sizeof *seen_fn);
  memset(seen, 0, m->nnodes);
  for (size_t i = 0; i < nfns && st == AC_OK; i++) {
    if (fns[i] >= m->nfuncs) {
      st = aot_fail(ctx, err, AC_ERR_INVALID, "no function %u in the module (it has %zu)", fns[i],
                    m->nfuncs);
      break;
    }
    const char *top = ir_sym_str(ctx, m->funcs[fns[i]].name);
    for (size_t k = 0; k < i && st == AC_OK; k++)
      if (fns[k] == fns[i])
        st = aot_fail(ctx, err, AC_ERR_INVALID, "function '%s' is asked for twice", top);
    if (st == AC_OK && (m->funcs[fns[i]].is_extern || m->funcs[fns[i]].body == IR_NONE))
      st = aot_fail(ctx, err, AC_ERR_INVALID, "function '%s' has no body", top);
    if (st != AC_OK || seen_fn[fns[i]])
      continue; /* reached from an earlier function: checked */
    if (!ac_grow(ctx, (void **)&fstack, &fcap, fsp + 1, sizeof *fstack)) {
      st = aot_nomem(err);
      break;
    }
    fstack[fsp++] = fns[i];
    seen_fn[fns[i]] = true;
    while (fsp > 0 && st == AC_OK) {
      uint32_t f = fstack[--fsp];
      const char *fname = ir_sym_str(ctx, m->funcs[f].name);
      if (m->funcs[f].is_kernel && m->funcs[f].nkext == 0) {
        st = aot_fail(ctx, err, AC_ERR_INVALID,
                      "function '%s' calls extern kernel '%s', which is not finished "
                      "(ac_kernel_finish)",
                      top, fname);
        break;
      }
      if (m->funcs[f].is_kernel && gpu && !m->funcs[f].kptx) {
        st = aot_fail(ctx, err, AC_ERR_UNSUPPORTED,
                      "extern kernel '%s' has no PTX, so it cannot run on the GPU (reached from "
                      "'%s'; give it a 'ptx' clause)",
                      fname, top);
        break;
      }
      if (m->funcs[f].is_extern && gpu && !m->funcs[f].is_kernel) {
        st = aot_fail(ctx, err, AC_ERR_UNSUPPORTED,
                      "extern function '%s' is host code and cannot be called on the GPU "
                      "(reached from '%s')",
                      fname, top);
        break;
      }
      if (m->funcs[f].is_extern)
        continue; /* called by name: the program that loads the code defines it */
      ir_ref body = m->funcs[f].body;
      if (body == IR_NONE || body >= m->nnodes) {
        st = aot_fail(ctx, err, AC_ERR_INVALID, "function '%s' calls '%s', which has no body", top,
                      fname);
        break;
      }
      if (!ac_grow(ctx, (void **)&stack, &cap, sp + 1, sizeof *stack)) {
        st = aot_nomem(err);
        break;
      }
      stack[sp++] = body;
      while (sp > 0 && st == AC_OK) {
        ir_ref r = stack[--sp];
        if (r == IR_NONE || r >= m->nnodes || seen[r])
          continue;
        seen[r] = 1;
        const ir_node *n = ir_node_get(m, r);
        /* as function.c: lambdas and function references carry no type */
        if (n->type == IR_TY_NONE && n->op != IR_LAM && n->op != IR_FNREF) {
          st = aot_fail(ctx, err, AC_ERR_INVALID,
                        "function '%s' has not been verified (see ac_module_verify)", fname);
          break;
        }
        if ((n->op == IR_CALL || n->op == IR_FNREF) && n->attr >= 0 &&
            (uint64_t)n->attr < m->nfuncs && !seen_fn[n->attr]) {
          seen_fn[n->attr] = true;
          if (!ac_grow(ctx, (void **)&fstack, &fcap, fsp + 1, sizeof *fstack)) {
            st = aot_nomem(err);
            break;
          }
          fstack[fsp++] = (uint32_t)n->attr;
        }
        if (!ac_grow(ctx, (void **)&stack, &cap, sp + n->nkids, sizeof *stack)) {
          st = aot_nomem(err);
          break;
        }
        for (uint32_t k = 0; k < n->nkids; k++)
          stack[sp++] = ir_kid(m, r, k);
      }
      sp = 0;
    }
    fsp = 0;
  }
done:
  ac_free(ctx, fstack);
  ac_free(ctx, stack);
  ac_free(ctx, seen);
  ac_free(ctx, seen_fn);
  return st;
}

/* ---- one function ---- */

typedef struct aot {
  ac_context *ctx;
  ac_module *m;
  const api_aot_opts *o;
  nat_jit *jit; /* CPU: the ahead-of-time target (no LLJIT) */
  LLVMContextRef llctx;
  LLVMModuleRef mod; /* the combined module */
  aot_diag diag;
} aot;

/* Renames the kernels of plan in mod to PREFIX_FUNCNAME_<old>, in both. */
static ac_status aot_rename(aot *A, uint32_t fn, pl_plan *plan, LLVMModuleRef mod, ac_error **err) {
  ac_context *ctx = A->ctx;
  const char *fname = ir_sym_str(ctx, A->m->funcs[fn].name);
  size_t np = strlen(A->o->prefix), nf = strlen(fname);
  for (uint32_t i = 0; i < plan->nkernels; i++) {
    pl_kernel *k = &plan->kernels[i];
    if (k->ptx)
      continue; /* an extern kernel: its symbol names an .entry of the program's own PTX */
    LLVMValueRef f = LLVMGetNamedFunction(mod, k->symbol);
    if (!f || LLVMIsDeclaration(f))
      return aot_fail(ctx, err, AC_ERR_INTERNAL, "kernel '%s' of function '%s' was not generated",
                      k->symbol, fname);
    size_t ns = strlen(k->symbol), n = np + 1 + nf + 1 + ns;
    char *name = ac_alloc(ctx, n + 1);
    if (!name)
      return aot_nomem(err);
    memcpy(name, A->o->prefix, np);
    name[np] = '_';
    for (size_t c = 0; c < nf; c++) {
      char ch = fname[c];
      bool keep = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                  (ch >= '0' && ch <= '9') || ch == '_';
      name[np + 1 + c] = keep ? ch : '_';
    }
    name[np + 1 + nf] = '_';
    memcpy(name + np + 1 + nf + 1, k->symbol, ns + 1);
    LLVMSetValueName2(f, name, n);
    ac_free(ctx, k->symbol);
    k->symbol = name;
  }
  return AC_OK;
}

static bool aot_is_kernel(const pl_plan *plan, const char *name) {
  for (uint32_t i = 0; i < plan->nkernels; i++)
    if (!plan->kernels[i].ptx && strcmp(plan->kernels[i].symbol, name) == 0)
      return true;
  return false;
}

static bool aot_has_prefix(const char *s, const char *p) {
  return strncmp(s, p, strlen(p)) == 0;
}

/* Every definition of mod other than plan's kernels becomes internal
 * (LLVM's own globals, llvm.*, keep their appending linkage). */
static void aot_internalise(LLVMModuleRef mod, const pl_plan *plan) {
  size_t n;
  for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f))
    if (!LLVMIsDeclaration(f) && !aot_is_kernel(plan, LLVMGetValueName2(f, &n))) {
      LLVMSetLinkage(f, LLVMInternalLinkage);
      LLVMSetVisibility(f, LLVMDefaultVisibility); /* local linkage requires it */
    }
  for (LLVMValueRef g = LLVMGetFirstGlobal(mod); g; g = LLVMGetNextGlobal(g)) {
    LLVMLinkage l = LLVMGetLinkage(g);
    if (LLVMIsDeclaration(g) || l == LLVMPrivateLinkage || l == LLVMInternalLinkage ||
        aot_has_prefix(LLVMGetValueName2(g, &n), "llvm."))
      continue;
    LLVMSetLinkage(g, LLVMInternalLinkage);
    LLVMSetVisibility(g, LLVMDefaultVisibility);
  }
}

/* Is `name` defined or declared in the combined module already? */
static bool aot_taken(aot *A, const char *name) {
  return LLVMGetNamedFunction(A->mod, name) || LLVMGetNamedGlobal(A->mod, name);
}

/* Parses bitcode buf into the common context and links it into A->mod.
 * The kernels' names must be new there. */
static ac_status aot_link(aot *A, uint32_t fn, const pl_plan *plan, LLVMMemoryBufferRef buf,
                          ac_error **err) {
  ac_context *ctx = A->ctx;
  const char *fname = ir_sym_str(ctx, A->m->funcs[fn].name);
  for (uint32_t i = 0; i < plan->nkernels; i++)
    if (!plan->kernels[i].ptx && aot_taken(A, plan->kernels[i].symbol))
      return aot_fail(ctx, err, AC_ERR_INVALID,
                      "kernel symbol '%s' of function '%s' clashes with another function's "
                      "(function names that differ only outside [A-Za-z0-9_]?)",
                      plan->kernels[i].symbol, fname);
  LLVMModuleRef mod = NULL;
  if (LLVMParseBitcodeInContext2(A->llctx, buf, &mod) || A->diag.any_error) {
    if (mod)
      LLVMDisposeModule(mod);
    return aot_fail(ctx, err, AC_ERR_INTERNAL, "cannot read back the kernels of '%s': %s", fname,
                    A->diag.first_error ? A->diag.first_error : "bad bitcode");
  }
  /* the first module gives the combined one its triple and layout (the
   * linker warns about a difference otherwise) */
  if (!LLVMGetTarget(A->mod)[0]) {
    LLVMSetTarget(A->mod, LLVMGetTarget(mod));
    LLVMSetDataLayout(A->mod, LLVMGetDataLayoutStr(mod));
  }
  if (LLVMLinkModules2(A->mod, mod) || A->diag.any_error) /* destroys mod either way */
    return aot_fail(ctx, err, AC_ERR_INTERNAL, "cannot link the kernels of '%s': %s", fname,
                    A->diag.first_error ? A->diag.first_error : "unknown error");
  return AC_OK;
}

/* Generates function fn, renames and internalises its kernels and links
 * them into the combined module; the plan into *plan (NULL on failure). */
static ac_status aot_function(aot *A, uint32_t fn, pl_plan **plan, ac_error **err) {
  cg_module M;
  ac_module *opt = NULL;
  *plan = NULL;
  ac_status st = api_generate(A->jit, A->o->gpu ? CG_TARGET_NVPTX : CG_TARGET_CPU, A->m, fn,
                              A->o->passes, API_GEN_EXTERNS_BY_NAME, plan, &M, &opt, err);
  if (st == AC_OK)
    st = aot_rename(A, fn, *plan, M.mod, err);
  LLVMMemoryBufferRef buf = NULL;
  if (st == AC_OK) {
    aot_internalise(M.mod, *plan);
    if (!(buf = LLVMWriteBitcodeToMemoryBuffer(M.mod)))
      st = aot_fail(A->ctx, err, AC_ERR_INTERNAL, "cannot write the kernels of '%s' as bitcode",
                    ir_sym_str(A->ctx, A->m->funcs[fn].name));
  }
  /* the function's LLVM context goes before the next one is made */
  cg_module_dispose(&M);
  ac_module_destroy(opt);
  if (st == AC_OK)
    st = aot_link(A, fn, *plan, buf, err);
  if (buf)
    LLVMDisposeMemoryBuffer(buf); /* parsing copies what it needs */
  if (st != AC_OK) {
    pl_destroy(*plan);
    *plan = NULL;
  }
  return st;
}

/* ---- the file ---- */

/* Adds the embedded data: `sym` ([len x i8], constant), `sym`_size (i64,
 * constant) and `sym`_hash (i64, constant: rt_bundle_hash of the data, which
 * the runtime checks before it parses anything, so that an edited file is
 * refused rather than run), all exported. */
static ac_status aot_embed_globals(aot *A, const char *sym, const char *data, size_t len,
                                   ac_error **err) {
  ac_context *ctx = A->ctx;
  size_t ns = strlen(sym);
  char *size_sym = ac_alloc(ctx, ns + sizeof "_size");
  char *hash_sym = ac_alloc(ctx, ns + sizeof "_hash");
  if (!size_sym || !hash_sym) {
    ac_free(ctx, size_sym);
    ac_free(ctx, hash_sym);
    return aot_nomem(err);
  }
  memcpy(size_sym, sym, ns);
  memcpy(size_sym + ns, "_size", sizeof "_size");
  memcpy(hash_sym, sym, ns);
  memcpy(hash_sym + ns, "_hash", sizeof "_hash");
  ac_status st = AC_OK;
  if (aot_taken(A, sym) || aot_taken(A, size_sym) || aot_taken(A, hash_sym)) {
    st = aot_fail(ctx, err, AC_ERR_INVALID, "embed symbol '%s' clashes with a symbol of the code",
                  aot_taken(A, sym)        ? sym
                  : aot_taken(A, size_sym) ? size_sym
                                           : hash_sym);
  } else {
    LLVMTypeRef i8 = LLVMInt8TypeInContext(A->llctx), i64 = LLVMInt64TypeInContext(A->llctx);
    LLVMValueRef g = LLVMAddGlobal(A->mod, LLVMArrayType2(i8, len), sym);
    LLVMSetInitializer(g, LLVMConstStringInContext2(A->llctx, data, len, 1));
    LLVMSetGlobalConstant(g, 1);
    LLVMSetLinkage(g, LLVMExternalLinkage);
    LLVMValueRef s = LLVMAddGlobal(A->mod, i64, size_sym);
    LLVMSetInitializer(s, LLVMConstInt(i64, (unsigned long long)len, 0));
    LLVMSetGlobalConstant(s, 1);
    LLVMSetLinkage(s, LLVMExternalLinkage);
    LLVMValueRef h = LLVMAddGlobal(A->mod, i64, hash_sym);
    LLVMSetInitializer(h, LLVMConstInt(i64, (unsigned long long)rt_bundle_hash(data, len), 0));
    LLVMSetGlobalConstant(h, 1);
    LLVMSetLinkage(h, LLVMExternalLinkage);
  }
  ac_free(ctx, hash_sym);
  ac_free(ctx, size_sym);
  return st;
}

/* The embed callback and its globals (CPU). */
static ac_status aot_embed(aot *A, api_aot_out *out, ac_error **err) {
  const api_aot_opts *o = A->o;
  char *data = NULL;
  size_t len = 0;
  ac_status st = AC_OK;
  if (!o->embed(o->embed_ud, out->plans, out->nplans, &data, &len))
    st = aot_nomem(err);
  else if (data)
    st = aot_embed_globals(A, o->embed_symbol, data, len, err);
  ac_free(A->ctx, data);
  return st;
}

ac_status api_emit_aot(ac_module *m, const uint32_t *fns, size_t nfns, const api_aot_opts *o,
                       api_aot_out *out, ac_error **err) {
  ac_context *ctx = m->ctx;
  memset(out, 0, sizeof *out);
  if (!o || !aot_is_ident(o->prefix))
    return aot_fail(ctx, err, AC_ERR_INVALID, "ahead-of-time prefix '%s' is not a C identifier",
                    o && o->prefix ? o->prefix : "(null)");
  if (!o->gpu && o->embed && !aot_is_ident(o->embed_symbol))
    return aot_fail(ctx, err, AC_ERR_INVALID, "embed symbol '%s' is not a C identifier",
                    o->embed_symbol ? o->embed_symbol : "(null)");
  if (o->gpu && !nv_sm_valid(o->sm))
    return aot_fail(ctx, err, AC_ERR_INVALID, "unknown GPU architecture sm_%u (sm_%u or newer)",
                    o->sm, NV_SM_MIN);
  if (nfns > 0 && !fns)
    return aot_fail(ctx, err, AC_ERR_INVALID, "no function list");
  ac_status st = aot_check(m, fns, nfns, o->gpu, err);
  if (st != AC_OK)
    return st;

  aot A;
  memset(&A, 0, sizeof A);
  A.ctx = ctx;
  A.m = m;
  A.o = o;
  A.diag.ctx = ctx;
  if (!o->gpu && (st = nat_aot_create(ctx, o->cpu, &A.jit, err)) != AC_OK)
    return st;
  out->plans = ac_alloc(ctx, (nfns ? nfns : 1) * sizeof *out->plans);
  if (!out->plans) {
    nat_jit_destroy(A.jit);
    return aot_nomem(err);
  }
  memset(out->plans, 0, (nfns ? nfns : 1) * sizeof *out->plans);
  A.llctx = LLVMContextCreate();
  LLVMContextSetDiagnosticHandler(A.llctx, aot_diag_handler, &A.diag);
  A.mod = LLVMModuleCreateWithNameInContext(o->prefix, A.llctx);

  for (size_t i = 0; i < nfns && st == AC_OK; i++) {
    st = aot_function(&A, fns[i], &out->plans[i], err);
    if (st == AC_OK)
      out->nplans = i + 1;
  }
  if (st == AC_OK && !o->gpu && o->embed)
    st = aot_embed(&A, out, err);
  if (st == AC_OK && o->gpu)
    st = nv_emit_module(ctx, A.mod, o->sm, 0, &out->code, &out->len,
                        o->want_llvm ? &out->llvm : NULL, err);
  else if (st == AC_OK)
    st =
        nat_emit_object(A.jit, A.mod, &out->code, &out->len, o->want_llvm ? &out->llvm : NULL, err);
  if (st == AC_OK && A.diag.any_error) /* reported to the handler only */
    st = aot_fail(ctx, err, AC_ERR_INTERNAL, "LLVM: %s",
                  A.diag.first_error ? A.diag.first_error : "unknown error");

  LLVMDisposeModule(A.mod);
  LLVMContextDispose(A.llctx);
  ac_free(ctx, A.diag.first_error);
  nat_jit_destroy(A.jit);
  if (st != AC_OK)
    api_aot_out_free(ctx, out);
  return st;
}

void api_aot_out_free(ac_context *ctx, api_aot_out *out) {
  if (out->plans)
    for (size_t i = 0; i < out->nplans; i++)
      pl_destroy(out->plans[i]);
  ac_free(ctx, out->plans);
  ac_free(ctx, out->code);
  ac_free(ctx, out->llvm);
  memset(out, 0, sizeof *out);
}
