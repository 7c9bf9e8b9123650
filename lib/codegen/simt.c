/* lib/codegen/simt.c: the SIMT interface (simt.h) for both GPU targets.
 *
 * Skeletons are written once against these functions; this file decides
 * what each becomes:
 *   NVPTX  the NVVM intrinsics that CUDA's own headers use for the same
 *          operations (sreg reads for indices, barrier0 for
 *          __syncthreads, membar.gl for __threadfence, nanosleep in spin
 *          loops, shfl.sync / vote.sync with the full-warp mask), shared
 *          memory as internal addrspace(3) globals;
 *   SIMT   calls to the emulator's services (runtime/simt_emu.h), which
 *          the JIT resolves by name; shared memory at fixed offsets from
 *          the block's base, ac_simt_shared().
 * Skeletons therefore run unchanged under the emulator (runtime/simt_emu.c,
 * a coroutine per GPU thread switching at barriers and warp operations),
 * which is how every GPU kernel is tested without a GPU: the kernel IR is
 * the same for both targets, only these few calls differ.
 *
 * Facts about LLVM 19's NVPTX backend this file relies on (each checked
 * with llc-19 and ptxas for sm_75; test_simt_cg.c checks the PTX we get):
 *   - `fence` instructions cannot be selected at all (a fatal "Cannot
 *     select AtomicFence", with or without a syncscope), so the device-wide
 *     fence is llvm.nvvm.membar.gl (fence.sc.gpu on sm_70 and later);
 *   - atomicrmw / cmpxchg ignore their ordering (a seq_cst RMW becomes a
 *     plain `atom`, which PTX defines as relaxed), so a sequentially
 *     consistent atomic is membar.gl; atom; membar.gl, at least as strong
 *     as the PTX memory model's mapping of a seq_cst RMW (fence.sc; then
 *     an acq_rel atom). simt_atomic_relaxed leaves the fences out;
 *   - shfl.sync's `c` operand packs ((32 - width) << 8) | clamp: 0x1f for
 *     idx, down and bfly (clamp at lane 31), 0 for up (clamp at lane 0), as
 *     __shfl_*_sync does for width 32. Only 32-bit values move, so wider
 *     values go as two halves and narrower ones widened.
 */
#include "codegen/simt.h"
#include "codegen/cg_gpu.h"

#include <string.h>

/* ---- helpers ---- */

static bool simt_check_target(cg_fn *f, const char *what) {
  if (f->M->target == CG_TARGET_CPU) {
    cg_error(f->M, AC_ERR_INTERNAL, 0, "code generation: %s in a CPU kernel", what);
    return false;
  }
  return true;
}

/* Calls NVVM intrinsic `name` (not overloaded); res is its result type (for
 * the dummy returned if this LLVM does not know it). */
static LLVMValueRef simt_nvvm(cg_fn *f, const char *name, LLVMTypeRef res, LLVMValueRef *args,
                              unsigned n) {
  cg_module *M = f->M;
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  if (id == 0) {
    cg_error(M, AC_ERR_INTERNAL, 0, "code generation: LLVM has no intrinsic %s", name);
    return res == M->t_void ? NULL : LLVMGetUndef(res);
  }
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(M->mod, id, NULL, 0);
  LLVMTypeRef ty = LLVMIntrinsicGetType(M->llctx, id, NULL, 0);
  return LLVMBuildCall2(M->b, ty, fn, args, n, "");
}

/* Flags for emulator services. */
enum {
  SIMT_PURE = 1,      /* result fixed for the calling GPU thread: memory(none) */
  SIMT_CONVERGENT = 2 /* synchronises with other threads: never duplicated into divergent code */
};

static void simt_attr(cg_module *M, LLVMValueRef fn, const char *name, uint64_t val) {
  unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
  LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                          LLVMCreateEnumAttribute(M->llctx, kind, val));
}

/* Calls emulator service `name` (declared once per module). */
static LLVMValueRef simt_emu(cg_fn *f, const char *name, LLVMTypeRef res, LLVMTypeRef *ps,
                             LLVMValueRef *args, unsigned n, unsigned flags) {
  cg_module *M = f->M;
  LLVMValueRef fn = LLVMGetNamedFunction(M->mod, name);
  if (!fn) {
    fn = LLVMAddFunction(M->mod, name, LLVMFunctionType(res, ps, n, 0));
    simt_attr(M, fn, "nounwind", 0);
    if (flags & SIMT_PURE) {
      simt_attr(M, fn, "memory", 0); /* MemoryEffects::none() encodes as 0 */
      simt_attr(M, fn, "willreturn", 0);
    }
    if (flags & SIMT_CONVERGENT)
      simt_attr(M, fn, "convergent", 0);
  }
  return LLVMBuildCall2(M->b, LLVMGlobalGetValueType(fn), fn, args, n, "");
}

/* ---- indices ---- */

static LLVMValueRef simt_index(cg_fn *f, const char *nvvm, const char *emu) {
  cg_module *M = f->M;
  if (!simt_check_target(f, "a SIMT index"))
    return LLVMConstInt(M->t_i32, 0, 0);
  if (M->target == CG_TARGET_NVPTX)
    return simt_nvvm(f, nvvm, M->t_i32, NULL, 0);
  return simt_emu(f, emu, M->t_i32, NULL, NULL, 0, SIMT_PURE);
}

LLVMValueRef simt_tid(cg_fn *f) {
  return simt_index(f, "llvm.nvvm.read.ptx.sreg.tid.x", "ac_simt_tid");
}

LLVMValueRef simt_ntid(cg_fn *f) {
  return simt_index(f, "llvm.nvvm.read.ptx.sreg.ntid.x", "ac_simt_ntid");
}

LLVMValueRef simt_ctaid(cg_fn *f) {
  return simt_index(f, "llvm.nvvm.read.ptx.sreg.ctaid.x", "ac_simt_ctaid");
}

LLVMValueRef simt_nctaid(cg_fn *f) {
  return simt_index(f, "llvm.nvvm.read.ptx.sreg.nctaid.x", "ac_simt_nctaid");
}

LLVMValueRef simt_lane(cg_fn *f) {
  cg_module *M = f->M;
  return LLVMBuildAnd(M->b, simt_tid(f), LLVMConstInt(M->t_i32, SIMT_WARP - 1, 0), "lane");
}

LLVMValueRef simt_warp(cg_fn *f) {
  cg_module *M = f->M;
  return LLVMBuildLShr(M->b, simt_tid(f), LLVMConstInt(M->t_i32, 5, 0), "warp");
}

/* The indices are non-negative i32, and a grid's thread count fits in i64:
 * zero extension, and products that cannot wrap. */
LLVMValueRef simt_gtid(cg_fn *f) {
  cg_module *M = f->M;
  LLVMValueRef c = LLVMBuildZExt(M->b, simt_ctaid(f), M->t_i64, "");
  LLVMValueRef nt = LLVMBuildZExt(M->b, simt_ntid(f), M->t_i64, "");
  LLVMValueRef t = LLVMBuildZExt(M->b, simt_tid(f), M->t_i64, "");
  return LLVMBuildNUWAdd(M->b, LLVMBuildNUWMul(M->b, c, nt, ""), t, "gtid");
}

LLVMValueRef simt_gsize(cg_fn *f) {
  cg_module *M = f->M;
  LLVMValueRef nc = LLVMBuildZExt(M->b, simt_nctaid(f), M->t_i64, "");
  LLVMValueRef nt = LLVMBuildZExt(M->b, simt_ntid(f), M->t_i64, "");
  return LLVMBuildNUWMul(M->b, nc, nt, "gsize");
}

/* ---- synchronisation ---- */

void simt_barrier(cg_fn *f) {
  if (!simt_check_target(f, "a barrier"))
    return;
  if (f->M->target == CG_TARGET_NVPTX)
    simt_nvvm(f, "llvm.nvvm.barrier0", f->M->t_void, NULL, 0);
  else
    simt_emu(f, "ac_simt_barrier", f->M->t_void, NULL, NULL, 0, SIMT_CONVERGENT);
}

void simt_syncwarp(cg_fn *f) {
  cg_module *M = f->M;
  if (!simt_check_target(f, "a warp barrier"))
    return;
  if (M->target == CG_TARGET_NVPTX) {
    LLVMValueRef mask = LLVMConstInt(M->t_i32, 0xffffffffu, 0);
    simt_nvvm(f, "llvm.nvvm.bar.warp.sync", M->t_void, &mask, 1);
    return;
  }
  /* the emulator's memory is coherent: the lanes only have to meet, which
   * a vote makes them do */
  LLVMTypeRef ps[2] = {M->t_i32, M->t_i32};
  LLVMValueRef args[2] = {LLVMConstInt(M->t_i32, SIMT_VOTE_ANY, 0), LLVMConstInt(M->t_i32, 0, 0)};
  simt_emu(f, "ac_simt_vote", M->t_i32, ps, args, 2, SIMT_CONVERGENT);
}

/* The emulator runs one thread at a time on one host thread, so its
 * memory is always coherent: a compiler barrier is all a fence must be,
 * and the opaque call to ac_simt_yield or the atomic around any spin loop
 * already is one. Nothing is emitted there. */
void simt_fence(cg_fn *f) {
  if (!simt_check_target(f, "a fence"))
    return;
  if (f->M->target == CG_TARGET_NVPTX)
    simt_nvvm(f, "llvm.nvvm.membar.gl", f->M->t_void, NULL, 0);
}

/* nanosleep (sm_70+) backs off a spinning thread so the warps it waits for
 * get the issue slots, as CUB's look-back does. */
#define SIMT_SPIN_NS 32

void simt_yield(cg_fn *f) {
  cg_module *M = f->M;
  if (!simt_check_target(f, "a yield"))
    return;
  if (M->target == CG_TARGET_NVPTX) {
    LLVMValueRef ns = LLVMConstInt(M->t_i32, SIMT_SPIN_NS, 0);
    simt_nvvm(f, "llvm.nvvm.nanosleep", M->t_void, &ns, 1);
  } else {
    simt_emu(f, "ac_simt_yield", M->t_void, NULL, NULL, 0, 0);
  }
}

/* ---- shared memory ---- */

#define SIMT_SMEM_ALIGN 16
#define SIMT_SMEM_MAX ((uint64_t)48 * 1024) /* static shared memory on every GPU */

LLVMValueRef simt_shared(cg_fn *f, LLVMTypeRef elem, uint32_t count, const char *name) {
  cg_module *M = f->M;
  if (!simt_check_target(f, "shared memory"))
    return LLVMConstNull(M->t_ptr);
  LLVMTypeRef at = LLVMArrayType2(elem, count);
  uint64_t bytes = LLVMABISizeOfType(LLVMGetModuleDataLayout(M->mod), at);
  uint64_t off = f->smem;
  f->smem = off + ((bytes + SIMT_SMEM_ALIGN - 1) & ~(uint64_t)(SIMT_SMEM_ALIGN - 1));
  if (f->smem > SIMT_SMEM_MAX)
    cg_error(M, AC_ERR_INTERNAL, 0,
             "code generation: a kernel's static shared memory exceeds %llu bytes",
             (unsigned long long)SIMT_SMEM_MAX);
  if (M->target == CG_TARGET_NVPTX) {
    /* Named after the kernel, so every global of the module is unique. */
    size_t klen;
    const char *kname = LLVMGetValueName2(f->fn, &klen);
    size_t nlen = strlen(name ? name : "smem");
    char *gname = cg_new(M, klen + nlen + 2);
    memcpy(gname, kname, klen);
    gname[klen] = '.';
    memcpy(gname + klen + 1, name ? name : "smem", nlen);
    LLVMValueRef g = LLVMAddGlobalInAddressSpace(M->mod, at, gname, 3);
    LLVMSetLinkage(g, LLVMInternalLinkage);
    LLVMSetInitializer(g, LLVMGetUndef(at));
    LLVMSetAlignment(g, SIMT_SMEM_ALIGN);
    return LLVMConstAddrSpaceCast(g, M->t_ptr);
  }
  if (!f->gsmem_base) {
    LLVMBuilderRef saved = cg_gpu_entry_begin(f);
    f->gsmem_base = simt_emu(f, "ac_simt_shared", M->t_ptr, NULL, NULL, 0, SIMT_PURE);
    cg_gpu_entry_end(f, saved);
  }
  LLVMValueRef o = cg_i64(M, (int64_t)off);
  return LLVMBuildInBoundsGEP2(M->b, M->t_i8, f->gsmem_base, &o, 1, name ? name : "smem");
}

/* ---- warp operations ---- */

/* A shuffled value as the integer type `to` (i32 on NVPTX for values of
 * up to 32 bits; i64 for wider ones and on the emulator), and back. */
static LLVMValueRef simt_to_int(cg_module *M, LLVMValueRef v, LLVMTypeRef to) {
  LLVMTypeRef t = LLVMTypeOf(v);
  switch (LLVMGetTypeKind(t)) {
  case LLVMIntegerTypeKind:
    if (LLVMGetIntTypeWidth(t) > 64)
      break;
    return LLVMGetIntTypeWidth(t) == LLVMGetIntTypeWidth(to) ? v : LLVMBuildZExt(M->b, v, to, "");
  case LLVMFloatTypeKind:
    return LLVMBuildZExtOrBitCast(M->b, LLVMBuildBitCast(M->b, v, M->t_i32, ""), to, "");
  case LLVMDoubleTypeKind:
    return LLVMBuildBitCast(M->b, v, to, "");
  case LLVMPointerTypeKind:
    return LLVMBuildPtrToInt(M->b, v, to, "");
  default:
    break;
  }
  cg_error(M, AC_ERR_INTERNAL, 0, "code generation: shuffle of a value that is not a scalar");
  return LLVMGetUndef(to);
}

static LLVMValueRef simt_from_int(cg_module *M, LLVMValueRef w, LLVMTypeRef t) {
  switch (LLVMGetTypeKind(t)) {
  case LLVMIntegerTypeKind:
    return LLVMGetIntTypeWidth(t) == LLVMGetIntTypeWidth(LLVMTypeOf(w))
               ? w
               : LLVMBuildTrunc(M->b, w, t, "");
  case LLVMFloatTypeKind:
    return LLVMBuildBitCast(M->b, LLVMBuildTruncOrBitCast(M->b, w, M->t_i32, ""), t, "");
  case LLVMDoubleTypeKind:
    return LLVMBuildBitCast(M->b, w, t, "");
  case LLVMPointerTypeKind:
    return LLVMBuildIntToPtr(M->b, w, t, "");
  default:
    return LLVMGetUndef(t);
  }
}

/* Bits a value of type t occupies in a shuffle (> 32: two halves). */
static unsigned simt_bits(LLVMTypeRef t) {
  switch (LLVMGetTypeKind(t)) {
  case LLVMIntegerTypeKind:
    return LLVMGetIntTypeWidth(t);
  case LLVMFloatTypeKind:
    return 32;
  default:
    return 64;
  }
}

static LLVMValueRef simt_shfl32(cg_fn *f, simt_shfl_mode mode, LLVMValueRef v, LLVMValueRef arg) {
  cg_module *M = f->M;
  static const char *const names[] = {
      [SIMT_SHFL_IDX] = "llvm.nvvm.shfl.sync.idx.i32",
      [SIMT_SHFL_UP] = "llvm.nvvm.shfl.sync.up.i32",
      [SIMT_SHFL_DOWN] = "llvm.nvvm.shfl.sync.down.i32",
      [SIMT_SHFL_XOR] = "llvm.nvvm.shfl.sync.bfly.i32",
  };
  unsigned c = mode == SIMT_SHFL_UP ? 0 : SIMT_WARP - 1;
  LLVMValueRef args[4] = {LLVMConstInt(M->t_i32, 0xffffffffu, 0), v, arg,
                          LLVMConstInt(M->t_i32, c, 0)};
  return simt_nvvm(f, names[mode], M->t_i32, args, 4);
}

LLVMValueRef simt_shfl(cg_fn *f, simt_shfl_mode mode, LLVMValueRef v, LLVMValueRef arg) {
  cg_module *M = f->M;
  LLVMTypeRef t = LLVMTypeOf(v);
  if (!simt_check_target(f, "a shuffle") || (unsigned)mode > SIMT_SHFL_XOR)
    return v;
  if (LLVMTypeOf(arg) != M->t_i32)
    arg = LLVMBuildIntCast2(M->b, arg, M->t_i32, 0, "");
  if (M->target == CG_TARGET_SIMT) {
    LLVMTypeRef ps[3] = {M->t_i64, M->t_i32, M->t_i32};
    LLVMValueRef args[3] = {simt_to_int(M, v, M->t_i64), LLVMConstInt(M->t_i32, (unsigned)mode, 0),
                            arg};
    LLVMValueRef r = simt_emu(f, "ac_simt_shfl", M->t_i64, ps, args, 3, SIMT_CONVERGENT);
    return simt_from_int(M, r, t);
  }
  if (simt_bits(t) <= 32)
    return simt_from_int(M, simt_shfl32(f, mode, simt_to_int(M, v, M->t_i32), arg), t);
  LLVMValueRef w = simt_to_int(M, v, M->t_i64);
  LLVMValueRef lo = LLVMBuildTrunc(M->b, w, M->t_i32, "");
  LLVMValueRef hi = LLVMBuildTrunc(M->b, LLVMBuildLShr(M->b, w, cg_i64(M, 32), ""), M->t_i32, "");
  lo = LLVMBuildZExt(M->b, simt_shfl32(f, mode, lo, arg), M->t_i64, "");
  hi = LLVMBuildZExt(M->b, simt_shfl32(f, mode, hi, arg), M->t_i64, "");
  w = LLVMBuildOr(M->b, lo, LLVMBuildShl(M->b, hi, cg_i64(M, 32), ""), "");
  return simt_from_int(M, w, t);
}

LLVMValueRef simt_vote(cg_fn *f, simt_vote_mode mode, LLVMValueRef pred) {
  cg_module *M = f->M;
  LLVMTypeRef res = mode == SIMT_VOTE_BALLOT ? M->t_i32 : M->t_i1;
  if (!simt_check_target(f, "a vote") || (unsigned)mode > SIMT_VOTE_BALLOT)
    return LLVMConstNull(res);
  if (LLVMTypeOf(pred) != M->t_i1)
    pred = LLVMBuildICmp(M->b, LLVMIntNE, pred, LLVMConstNull(LLVMTypeOf(pred)), "");
  if (M->target == CG_TARGET_NVPTX) {
    static const char *const names[] = {
        [SIMT_VOTE_ANY] = "llvm.nvvm.vote.any.sync",
        [SIMT_VOTE_ALL] = "llvm.nvvm.vote.all.sync",
        [SIMT_VOTE_BALLOT] = "llvm.nvvm.vote.ballot.sync",
    };
    LLVMValueRef args[2] = {LLVMConstInt(M->t_i32, 0xffffffffu, 0), pred};
    return simt_nvvm(f, names[mode], res, args, 2);
  }
  LLVMTypeRef ps[2] = {M->t_i32, M->t_i32};
  LLVMValueRef args[2] = {LLVMConstInt(M->t_i32, (unsigned)mode, 0),
                          LLVMBuildZExt(M->b, pred, M->t_i32, "")};
  LLVMValueRef r = simt_emu(f, "ac_simt_vote", M->t_i32, ps, args, 2, SIMT_CONVERGENT);
  if (mode == SIMT_VOTE_BALLOT)
    return r;
  return LLVMBuildICmp(M->b, LLVMIntNE, r, LLVMConstInt(M->t_i32, 0, 0), "");
}

/* ---- atomics ---- */

/* Values of atomics as memory holds them: bool (i1) as its byte. */
static LLVMValueRef simt_atomic_val(cg_module *M, LLVMValueRef v) {
  return LLVMTypeOf(v) == M->t_i1 ? LLVMBuildZExt(M->b, v, M->t_i8, "") : v;
}

static LLVMValueRef simt_atomic_res(cg_module *M, LLVMValueRef r, LLVMTypeRef t) {
  if (t != M->t_i1)
    return r;
  return LLVMBuildICmp(M->b, LLVMIntNE, r, LLVMConstInt(M->t_i8, 0, 0), "");
}

static LLVMValueRef simt_rmw(cg_fn *f, LLVMAtomicRMWBinOp op, LLVMValueRef ptr, LLVMValueRef v,
                             bool sc) {
  cg_module *M = f->M;
  LLVMTypeRef t = LLVMTypeOf(v);
  if (!simt_check_target(f, "a SIMT atomic"))
    return v;
  bool nv = M->target == CG_TARGET_NVPTX;
  /* NVPTX: explicit fences around a relaxed atom (file comment); the
   * emulator's host atomics honour the ordering themselves. */
  if (nv && sc)
    simt_fence(f);
  LLVMValueRef r = LLVMBuildAtomicRMW(
      M->b, op, ptr, simt_atomic_val(M, v),
      sc && !nv ? LLVMAtomicOrderingSequentiallyConsistent : LLVMAtomicOrderingMonotonic, 0);
  if (nv && sc)
    simt_fence(f);
  return simt_atomic_res(M, r, t);
}

LLVMValueRef simt_atomic(cg_fn *f, LLVMAtomicRMWBinOp op, LLVMValueRef ptr, LLVMValueRef v) {
  return simt_rmw(f, op, ptr, v, true);
}

LLVMValueRef simt_atomic_relaxed(cg_fn *f, LLVMAtomicRMWBinOp op, LLVMValueRef ptr,
                                 LLVMValueRef v) {
  return simt_rmw(f, op, ptr, v, false);
}

/* cmpxchg takes integers only: floats go through their bits (so a NaN
 * compares equal to the same NaN, and -0.0 differs from 0.0, which is what
 * a compare-and-swap loop over a location wants). */
LLVMValueRef simt_cas(cg_fn *f, LLVMValueRef ptr, LLVMValueRef cmp, LLVMValueRef nv) {
  cg_module *M = f->M;
  LLVMTypeRef t = LLVMTypeOf(cmp);
  if (!simt_check_target(f, "a SIMT compare-and-swap"))
    return cmp;
  LLVMTypeRef it = t == M->t_i1 ? M->t_i8 : t;
  LLVMTypeKind k = LLVMGetTypeKind(t);
  if (k == LLVMFloatTypeKind || k == LLVMDoubleTypeKind)
    it = k == LLVMFloatTypeKind ? M->t_i32 : M->t_i64;
  LLVMValueRef c =
      t == M->t_i1 ? LLVMBuildZExt(M->b, cmp, it, "") : LLVMBuildBitCast(M->b, cmp, it, "");
  LLVMValueRef n =
      t == M->t_i1 ? LLVMBuildZExt(M->b, nv, it, "") : LLVMBuildBitCast(M->b, nv, it, "");
  bool ptx = M->target == CG_TARGET_NVPTX;
  LLVMAtomicOrdering ord =
      ptx ? LLVMAtomicOrderingMonotonic : LLVMAtomicOrderingSequentiallyConsistent;
  if (ptx)
    simt_fence(f);
  LLVMValueRef r = LLVMBuildAtomicCmpXchg(M->b, ptr, c, n, ord, ord, 0);
  if (ptx)
    simt_fence(f);
  LLVMValueRef old = LLVMBuildExtractValue(M->b, r, 0, "");
  if (t == M->t_i1)
    return simt_atomic_res(M, old, t);
  return LLVMBuildBitCast(M->b, old, t, "");
}

bool simt_atomic_native(cg_module *M, LLVMAtomicRMWBinOp op, ac_scalar sc) {
  (void)M; /* the same answer on every target, so the emulator runs the GPU's code paths */
  switch (sc) {
  case AC_I32:
  case AC_U32:
  case AC_I64:
  case AC_U64:
    switch (op) {
    case LLVMAtomicRMWBinOpXchg:
    case LLVMAtomicRMWBinOpAdd:
    case LLVMAtomicRMWBinOpSub: /* atom.add of the negation */
    case LLVMAtomicRMWBinOpAnd:
    case LLVMAtomicRMWBinOpOr:
    case LLVMAtomicRMWBinOpXor:
    case LLVMAtomicRMWBinOpMax:
    case LLVMAtomicRMWBinOpMin:
    case LLVMAtomicRMWBinOpUMax:
    case LLVMAtomicRMWBinOpUMin:
      return true;
    default:
      return false;
    }
  case AC_F32:
  case AC_F64:
    return op == LLVMAtomicRMWBinOpFAdd;
  default:
    return false;
  }
}

LLVMValueRef simt_load_volatile(cg_fn *f, LLVMTypeRef t, LLVMValueRef ptr) {
  LLVMValueRef v = LLVMBuildLoad2(f->M->b, t, ptr, "");
  LLVMSetVolatile(v, 1);
  return v;
}

void simt_store_volatile(cg_fn *f, LLVMValueRef v, LLVMValueRef ptr) {
  LLVMValueRef s = LLVMBuildStore(f->M->b, v, ptr);
  LLVMSetVolatile(s, 1);
}

LLVMValueRef simt_popc(cg_fn *f, LLVMValueRef v) {
  cg_module *M = f->M;
  static const char name[] = "llvm.ctpop";
  unsigned id = LLVMLookupIntrinsicID(name, sizeof name - 1);
  LLVMTypeRef t = M->t_i32;
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(M->mod, id, &t, 1);
  LLVMTypeRef ft = LLVMIntrinsicGetType(M->llctx, id, &t, 1);
  return LLVMBuildCall2(M->b, ft, fn, &v, 1, "");
}
