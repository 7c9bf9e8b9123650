/* lib/codegen/simt_prof.c: instrumenting SIMT-emulator kernels for the
 * profiler (runtime/simt_prof.h has the counting model).
 *
 * Runs on a cg_module for CG_TARGET_SIMT with `profile` set, after the O3
 * pipeline (lib/target/native.c runs it without the vectorisers, so each
 * access is one a GPU thread would make): the code is instrumented as it
 * will run, after inlining, promotion of allocas to registers, hoisting
 * and unrolling, so loads the optimiser removed are not counted and those
 * it kept are. Nothing runs after it but machine code generation.
 *
 * Every function defined in the module gets
 *   - at the start of each basic block (after its phis), a call
 *     ac_simt_prof(site, 0, 0) for a site of kind BLOCK whose argument is
 *     the block's instruction count (phis and the instrumentation left
 *     out): the warp instructions it stands for;
 *   - before each load, store, atomic and memory intrinsic (memcpy,
 *     memmove, memset; a gather or scatter, lane by lane) whose address
 *     is not private, a call
 *     ac_simt_prof(site, address, bytes) for a site of the access's kind.
 * Where an address points is decided by walking back to its base
 * (getelementptr, casts, pointer<->integer arithmetic, phis and selects):
 *   alloca                         private: a register or local memory, not
 *                                  counted (the GPU keeps it in registers
 *                                  or per-thread local memory);
 *   the result of ac_simt_shared   shared memory (simt.c's base for the
 *                                  block's static shared arrays);
 *   parameter 0, 1 or 3 of a       the parameter block: the frame of plan
 *   kernel                         words, the control block and the
 *                                  words passed by value (a GPU
 *                                  reads them once per warp through the
 *                                  constant/L1 path; counted apart so they
 *                                  do not dilute the memory metrics);
 *   anything else                  global memory (arrays, scratch, the
 *                                  temporary memory of nested operations).
 * Phis that disagree (a pointer that is shared on one path and global on
 * another) count as global.
 *
 * The site table (kind and static size per site, indexed by the first
 * argument) goes to M->prof_sites; compile.c gives it to the emulated
 * kernels of the module (one table serves all of them).
 */
#include "codegen/simt.h"

#include "runtime/simt_prof.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/Target.h>

#include <string.h>

enum { SP_NONE = -1, SP_GLOBAL = 0, SP_SHARED, SP_PARAM, SP_PRIVATE };

#define SP_MAX_DEPTH 32

typedef struct sp_state {
  cg_module *M;
  LLVMTargetDataRef td;
  LLVMBuilderRef b;
  LLVMTypeRef hook_ty;
  LLVMValueRef hook;
  rt_simt_site *sites;
  size_t nsites, cap;
  bool oom;
  /* phis on the current walk (a pointer induction variable reaches itself) */
  LLVMValueRef seen[SP_MAX_DEPTH];
  unsigned nseen;
} sp_state;

static bool sp_is_kernel(const cg_module *M, LLVMValueRef fn) {
  size_t len = 0;
  const char *name = LLVMGetValueName2(fn, &len);
  for (uint32_t i = 0; M->plan && i < M->plan->nkernels; i++) {
    const char *k = M->plan->kernels[i].symbol;
    if (k && strlen(k) == len && memcmp(k, name, len) == 0)
      return true;
  }
  return false;
}

static bool sp_callee_is(LLVMValueRef call, const char *prefix) {
  LLVMValueRef callee = LLVMGetCalledValue(call);
  if (!callee || !LLVMIsAFunction(callee))
    return false;
  size_t len = 0;
  const char *name = LLVMGetValueName2(callee, &len);
  size_t n = strlen(prefix);
  return len >= n && memcmp(name, prefix, n) == 0;
}

/* Two classes met on different paths. */
static int sp_join(int a, int b) {
  return a == SP_NONE ? b : b == SP_NONE || a == b ? a : SP_GLOBAL;
}

static int sp_class(sp_state *S, LLVMValueRef fn, bool kernel, LLVMValueRef v, unsigned depth);

/* An integer that became a pointer: the class of the pointer it came from,
 * through the arithmetic that aligns or offsets it. */
static int sp_class_int(sp_state *S, LLVMValueRef fn, bool kernel, LLVMValueRef v,
                        unsigned depth) {
  if (depth > SP_MAX_DEPTH)
    return SP_GLOBAL;
  if (LLVMIsAPtrToIntInst(v))
    return sp_class(S, fn, kernel, LLVMGetOperand(v, 0), depth + 1);
  if (LLVMIsAConstantExpr(v) && LLVMGetConstOpcode(v) == LLVMPtrToInt)
    return sp_class(S, fn, kernel, LLVMGetOperand(v, 0), depth + 1);
  if (LLVMIsABinaryOperator(v)) {
    LLVMOpcode op = LLVMGetInstructionOpcode(v);
    if (op == LLVMAdd || op == LLVMSub || op == LLVMAnd || op == LLVMOr || op == LLVMXor) {
      LLVMValueRef a = LLVMGetOperand(v, 0), c = LLVMGetOperand(v, 1);
      if (LLVMIsAConstant(c))
        return sp_class_int(S, fn, kernel, a, depth + 1);
      if (LLVMIsAConstant(a))
        return sp_class_int(S, fn, kernel, c, depth + 1);
      /* base + offset: the side that is a pointer decides */
      int ca = sp_class_int(S, fn, kernel, a, depth + 1);
      return ca != SP_GLOBAL ? ca : sp_class_int(S, fn, kernel, c, depth + 1);
    }
  }
  return SP_GLOBAL;
}

/* Where pointer v points (SP_NONE: only back to a phi on the walk). */
static int sp_class(sp_state *S, LLVMValueRef fn, bool kernel, LLVMValueRef v, unsigned depth) {
  if (depth > SP_MAX_DEPTH)
    return SP_GLOBAL;
  if (LLVMIsAAllocaInst(v))
    return SP_PRIVATE;
  if (LLVMIsAArgument(v)) {
    if (kernel && (v == LLVMGetParam(fn, 0) || v == LLVMGetParam(fn, 1) ||
                   (LLVMCountParams(fn) > 3 && v == LLVMGetParam(fn, 3))))
      return SP_PARAM;
    return SP_GLOBAL;
  }
  if (LLVMIsAGetElementPtrInst(v) || LLVMIsABitCastInst(v) || LLVMIsAAddrSpaceCastInst(v))
    return sp_class(S, fn, kernel, LLVMGetOperand(v, 0), depth + 1);
  if (LLVMIsAIntToPtrInst(v))
    return sp_class_int(S, fn, kernel, LLVMGetOperand(v, 0), depth + 1);
  if (LLVMIsAConstantExpr(v)) {
    LLVMOpcode op = LLVMGetConstOpcode(v);
    if (op == LLVMGetElementPtr || op == LLVMBitCast || op == LLVMAddrSpaceCast)
      return sp_class(S, fn, kernel, LLVMGetOperand(v, 0), depth + 1);
    if (op == LLVMIntToPtr)
      return sp_class_int(S, fn, kernel, LLVMGetOperand(v, 0), depth + 1);
    return SP_GLOBAL;
  }
  if (LLVMIsAPHINode(v) || LLVMIsASelectInst(v)) {
    for (unsigned i = 0; i < S->nseen; i++)
      if (S->seen[i] == v)
        return SP_NONE;
    if (S->nseen == SP_MAX_DEPTH)
      return SP_GLOBAL;
    S->seen[S->nseen++] = v;
    int c = SP_NONE;
    if (LLVMIsAPHINode(v)) {
      for (unsigned i = 0, n = LLVMCountIncoming(v); i < n; i++)
        c = sp_join(c, sp_class(S, fn, kernel, LLVMGetIncomingValue(v, i), depth + 1));
    } else {
      c = sp_join(sp_class(S, fn, kernel, LLVMGetOperand(v, 1), depth + 1),
                  sp_class(S, fn, kernel, LLVMGetOperand(v, 2), depth + 1));
    }
    S->nseen--;
    return c;
  }
  if (LLVMIsACallInst(v) && sp_callee_is(v, "ac_simt_shared"))
    return SP_SHARED;
  return SP_GLOBAL;
}

static uint32_t sp_site(sp_state *S, uint32_t kind, uint64_t arg) {
  if (S->oom || !ac_grow(S->M->ctx, (void **)&S->sites, &S->cap, S->nsites + 1, sizeof *S->sites)) {
    S->oom = true;
    return 0;
  }
  S->sites[S->nsites] = (rt_simt_site){kind, arg > UINT32_MAX ? UINT32_MAX : (uint32_t)arg};
  return (uint32_t)S->nsites++;
}

/* ac_simt_prof(site, addr, bytes) before instruction `at`. */
static void sp_call(sp_state *S, LLVMValueRef at, uint32_t site, LLVMValueRef ptr,
                    LLVMValueRef bytes) {
  cg_module *M = S->M;
  LLVMPositionBuilderBefore(S->b, at);
  LLVMValueRef args[3] = {
      LLVMConstInt(M->t_i32, site, 0),
      ptr ? LLVMBuildPtrToInt(S->b, ptr, M->t_i64, "") : LLVMConstInt(M->t_i64, 0, 0),
      bytes ? bytes : LLVMConstInt(M->t_i32, 0, 0)};
  LLVMBuildCall2(S->b, S->hook_ty, S->hook, args, 3, "");
}

/* Instruments one access of `bytes` (a constant, or a value for memory
 * intrinsics) at ptr, made by instruction at. */
static void sp_access(sp_state *S, LLVMValueRef fn, bool kernel, LLVMValueRef at,
                      LLVMValueRef ptr, bool store, bool atomic, uint64_t bytes,
                      LLVMValueRef dyn) {
  S->nseen = 0;
  int c = sp_class(S, fn, kernel, ptr, 0);
  if (c == SP_NONE)
    c = SP_GLOBAL;
  if (c == SP_PRIVATE)
    return;
  uint32_t kind = atomic           ? RT_SIMT_SITE_ATOMIC
                  : c == SP_PARAM  ? RT_SIMT_SITE_PARAM
                  : c == SP_SHARED ? (store ? RT_SIMT_SITE_SST : RT_SIMT_SITE_SLD)
                                   : (store ? RT_SIMT_SITE_ST : RT_SIMT_SITE_LD);
  uint32_t site = sp_site(S, kind, dyn ? 0 : bytes);
  LLVMValueRef nb = NULL;
  if (dyn) {
    LLVMPositionBuilderBefore(S->b, at);
    /* lengths beyond 4 GiB are clamped: they only feed the sector count */
    LLVMValueRef big = LLVMConstInt(LLVMTypeOf(dyn), UINT32_MAX, 0);
    LLVMValueRef lim = LLVMBuildSelect(S->b, LLVMBuildICmp(S->b, LLVMIntUGT, dyn, big, ""), big,
                                       dyn, "");
    nb = LLVMBuildIntCast2(S->b, lim, S->M->t_i32, 0, "");
  }
  sp_call(S, at, site, ptr, nb);
}

static uint64_t sp_size(sp_state *S, LLVMTypeRef t) {
  return LLVMStoreSizeOfType(S->td, t);
}

/* A load or store of type t at ptr. A vector access aligned to less than
 * its size (the host's optimiser may merge neighbouring loads at any
 * alignment; a GPU cannot: NVPTX makes one access per element) is
 * counted element by element. */
static void sp_plain(sp_state *S, LLVMValueRef fn, bool kernel, LLVMValueRef at, LLVMValueRef ptr,
                     LLVMTypeRef t, bool store) {
  uint64_t bytes = sp_size(S, t);
  if (LLVMGetTypeKind(t) != LLVMVectorTypeKind || LLVMGetAlignment(at) >= bytes) {
    sp_access(S, fn, kernel, at, ptr, store, false, bytes, NULL);
    return;
  }
  unsigned n = LLVMGetVectorSize(t);
  uint64_t esz = sp_size(S, LLVMGetElementType(t));
  for (unsigned k = 0; k < n; k++) {
    LLVMValueRef p = ptr;
    if (k) {
      LLVMPositionBuilderBefore(S->b, at);
      LLVMValueRef off = LLVMConstInt(S->M->t_i64, k * esz, 0);
      p = LLVMBuildGEP2(S->b, S->M->t_i8, ptr, &off, 1, "");
    }
    sp_access(S, fn, kernel, at, p, store, false, esz, NULL);
  }
}

/* A gather or scatter (llvm.masked.gather/scatter: the host's optimiser
 * makes them of neighbouring loads at strided addresses, which a GPU
 * thread makes one by one): an access of each lane's element, the lanes a
 * constant mask turns off left out (a mask known only at run time counts
 * every lane). */
static void sp_lanes(sp_state *S, LLVMValueRef fn, bool kernel, LLVMValueRef at,
                     LLVMValueRef ptrs, LLVMValueRef mask, LLVMTypeRef vt, bool store) {
  if (LLVMGetTypeKind(vt) != LLVMVectorTypeKind)
    return;
  unsigned n = LLVMGetVectorSize(vt);
  uint64_t esz = sp_size(S, LLVMGetElementType(vt));
  for (unsigned k = 0; k < n; k++) {
    LLVMValueRef on = LLVMIsAConstant(mask) ? LLVMGetAggregateElement(mask, k) : NULL;
    if (on && LLVMIsAConstantInt(on) && LLVMConstIntGetZExtValue(on) == 0)
      continue;
    LLVMPositionBuilderBefore(S->b, at);
    LLVMValueRef p = LLVMBuildExtractElement(S->b, ptrs, LLVMConstInt(S->M->t_i32, k, 0), "");
    sp_access(S, fn, kernel, at, p, store, false, esz, NULL);
  }
}

static void sp_block(sp_state *S, LLVMValueRef fn, bool kernel, LLVMBasicBlockRef bb) {
  /* the block's instructions, taken before any call is inserted */
  size_t n = 0;
  for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i))
    n++;
  LLVMValueRef *ins = ac_alloc(S->M->ctx, (n ? n : 1) * sizeof *ins);
  if (!ins) {
    S->oom = true;
    return;
  }
  n = 0;
  uint64_t count = 0;
  LLVMValueRef first = NULL;
  for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i)) {
    ins[n++] = i;
    if (LLVMIsAPHINode(i))
      continue;
    if (!first)
      first = i;
    if (LLVMIsAIntrinsicInst(i) && (sp_callee_is(i, "llvm.lifetime") || sp_callee_is(i, "llvm.dbg") ||
                                    sp_callee_is(i, "llvm.assume")))
      continue;
    count++;
  }
  if (first)
    sp_call(S, first, sp_site(S, RT_SIMT_SITE_BLOCK, count), NULL, NULL);
  for (size_t k = 0; k < n; k++) {
    LLVMValueRef i = ins[k];
    switch (LLVMGetInstructionOpcode(i)) {
    case LLVMLoad:
      sp_plain(S, fn, kernel, i, LLVMGetOperand(i, 0), LLVMTypeOf(i), false);
      break;
    case LLVMStore:
      sp_plain(S, fn, kernel, i, LLVMGetOperand(i, 1), LLVMTypeOf(LLVMGetOperand(i, 0)), true);
      break;
    case LLVMAtomicRMW:
    case LLVMAtomicCmpXchg:
      sp_access(S, fn, kernel, i, LLVMGetOperand(i, 0), true, true,
                sp_size(S, LLVMTypeOf(LLVMGetOperand(i, 1))), NULL);
      break;
    case LLVMCall:
      if (sp_callee_is(i, "llvm.memcpy") || sp_callee_is(i, "llvm.memmove")) {
        sp_access(S, fn, kernel, i, LLVMGetOperand(i, 1), false, false, 0, LLVMGetOperand(i, 2));
        sp_access(S, fn, kernel, i, LLVMGetOperand(i, 0), true, false, 0, LLVMGetOperand(i, 2));
      } else if (sp_callee_is(i, "llvm.memset")) {
        sp_access(S, fn, kernel, i, LLVMGetOperand(i, 0), true, false, 0, LLVMGetOperand(i, 2));
      } else if (sp_callee_is(i, "llvm.masked.gather")) { /* (ptrs, align, mask, passthru) */
        sp_lanes(S, fn, kernel, i, LLVMGetOperand(i, 0), LLVMGetOperand(i, 2), LLVMTypeOf(i), false);
      } else if (sp_callee_is(i, "llvm.masked.scatter")) { /* (values, ptrs, align, mask) */
        sp_lanes(S, fn, kernel, i, LLVMGetOperand(i, 1), LLVMGetOperand(i, 3),
                 LLVMTypeOf(LLVMGetOperand(i, 0)), true);
      }
      break;
    default:
      break;
    }
  }
  ac_free(S->M->ctx, ins);
}

ac_status simt_prof_instrument(cg_module *M, ac_error **err) {
  sp_state S;
  memset(&S, 0, sizeof S);
  S.M = M;
  S.td = LLVMGetModuleDataLayout(M->mod);
  LLVMTypeRef params[3] = {M->t_i32, M->t_i64, M->t_i32};
  S.hook_ty = LLVMFunctionType(M->t_void, params, 3, 0);
  S.hook = LLVMGetNamedFunction(M->mod, "ac_simt_prof");
  if (!S.hook)
    S.hook = LLVMAddFunction(M->mod, "ac_simt_prof", S.hook_ty);
  S.b = LLVMCreateBuilderInContext(M->llctx);
  for (LLVMValueRef fn = LLVMGetFirstFunction(M->mod); fn && !S.oom;
       fn = LLVMGetNextFunction(fn)) {
    if (LLVMIsDeclaration(fn))
      continue;
    bool kernel = sp_is_kernel(M, fn);
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb && !S.oom;
         bb = LLVMGetNextBasicBlock(bb))
      sp_block(&S, fn, kernel, bb);
  }
  LLVMDisposeBuilder(S.b);
  if (S.oom) {
    ac_free(M->ctx, S.sites);
    return ir_report(err, NULL, AC_ERR_NOMEM);
  }
  char *msg = NULL;
  if (LLVMVerifyModule(M->mod, LLVMReturnStatusAction, &msg)) {
    ac_error *e = ir_error(M->ctx, AC_ERR_INTERNAL, NULL, (ir_loc){0, 0},
                           "profiling instrumentation made invalid LLVM IR: %s", msg ? msg : "");
    LLVMDisposeMessage(msg);
    ac_free(M->ctx, S.sites);
    return ir_report(err, e, AC_ERR_INTERNAL);
  }
  LLVMDisposeMessage(msg);
  ac_free(M->ctx, M->prof_sites);
  M->prof_sites = S.sites;
  M->prof_nsites = (uint32_t)S.nsites;
  return AC_OK;
}
