/* lib/codegen/cg_gpu.c: GPU kernels and the runtime services element code
 * uses inside them (errors, temporary memory), for both GPU targets.
 *
 * A GPU kernel has the runtime/gpu.h signature `void k(ptr frame, ptr ctl,
 * i64 n)`. On NVPTX it is a PTX `.entry` (LLVM 19 makes a function an entry
 * from the ptx_kernel calling convention alone; the old nvvm.annotations
 * "kernel" entry is not needed). Its launch bound (`.maxntid`) is the one
 * thing LLVM 19 still reads only from `!nvvm.annotations` metadata
 * ({ptr @k, !"maxntidx", i32 N}): the "nvvm.maxntid" function attribute the
 * contract names is what LLVM 20 and later read instead (they upgrade the
 * metadata into it), so both are emitted and either LLVM gets the bound.
 * Both facts were checked by running llc-19 on such modules (see the unit
 * test test_simt_cg.c, which checks `.entry` and `.maxntid` in the PTX).
 *
 * The services follow the CPU runtime (runtime/services.c) with the control
 * block in place of the thread context, as the usual GPU runtimes do it
 * (CUDA's own device-side assert, CUB's temp storage):
 *   - fail: the first failure wins through a compare-and-swap on
 *     ctl->failed; the winner alone stores site, a, b. Relaxed ordering is
 *     enough: the runtime reads the block only after the kernel has ended;
 *   - failed: a volatile load of ctl->failed (other threads set it);
 *   - temporary memory: each global thread owns tmp_per_thread bytes at
 *     ctl->tmp + gtid * tmp_per_thread and bump-allocates from them in LIFO
 *     order (code generation brackets every element with mark/release, as
 *     on the CPU). The offset lives in an alloca, so LLVM keeps it in a
 *     register; base and budget are computed once, in the entry block,
 *     when a kernel first asks for temporary memory. A request beyond the
 *     budget fails with "temporary memory exhausted" (the CPU would grow
 *     its arena; a GPU thread cannot) and gets ctl's 64-byte dummy, as a
 *     failed CPU request gets the thread context's dummy. A request whose
 *     end (offset + size) is above what the thread last saw in
 *     ctl->tmp_need raises it with an atomic max, failed ones included: the
 *     runtime sizes temporary memory by it and reruns a call that ran out
 *     (plan_gpu.c). The thread reads tmp_need once, so where the need is
 *     known from earlier calls no atomic is made.
 */
#include "codegen/cg_gpu.h"
#include "codegen/simt.h"
#include "interp/rtarray.h" /* RT_ARRAY_MAX_BYTES: the CPU's size limit, kept on the GPU */
#include "runtime/gpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Temporary memory requests are rounded up to this (as the CPU arena). */
#define CG_GPU_TMP_ALIGN 16

static void cg_gpu_attr(cg_module *M, LLVMValueRef fn, LLVMAttributeIndex idx, const char *name) {
  unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
  LLVMAddAttributeAtIndex(fn, idx, LLVMCreateEnumAttribute(M->llctx, kind, 0));
}

/* A launch property in both forms (see the file comment): the function
 * attribute `attr` that LLVM 20 and later read, and the !nvvm.annotations
 * entry `key` that LLVM 19 reads. */
static void cg_gpu_annotate(cg_module *M, LLVMValueRef fn, const char *attr, const char *key,
                            unsigned value) {
  char val[16];
  int len = snprintf(val, sizeof val, "%u", value);
  LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                          LLVMCreateStringAttribute(M->llctx, attr, (unsigned)strlen(attr), val,
                                                    (unsigned)len));
  LLVMMetadataRef ops[3] = {
      LLVMValueAsMetadata(fn),
      LLVMMDStringInContext2(M->llctx, key, strlen(key)),
      LLVMValueAsMetadata(LLVMConstInt(M->t_i32, value, 0)),
  };
  LLVMValueRef node = LLVMMetadataAsValue(M->llctx, LLVMMDNodeInContext2(M->llctx, ops, 3));
  LLVMAddNamedMetadataOperand(M->mod, "nvvm.annotations", node);
}

static void cg_gpu_maxntid(cg_module *M, LLVMValueRef fn, unsigned block) {
  cg_gpu_annotate(M, fn, "nvvm.maxntid", "maxntidx", block);
}

void cg_gpu_min_blocks(cg_fn *f, unsigned blocks) {
  if (f->M->target == CG_TARGET_NVPTX && blocks > 0)
    cg_gpu_annotate(f->M, f->fn, "nvvm.minctasm", "minctasm", blocks);
}

cg_fn *cg_gpu_kernel_begin(cg_module *M, const char *name, unsigned block) {
  cg_fn *f = cg_new(M, sizeof *f);
  f->M = M;
  if (M->target == CG_TARGET_CPU)
    cg_error(M, AC_ERR_INTERNAL, 0, "code generation: GPU kernel %s in a CPU module", name);
  /* NVPTX: the parameter block as RT_GPU_PARAMS scalar parameters (mask
   * first), which the kernel uses as values: a .param array passed by
   * value (byval) would do, but LLVM merges the two loads of a word (block
   * or frame) into one load through a selected pointer, and NVPTX then
   * copies the whole array to local memory. The emulator: a pointer to the
   * block (a host call takes few arguments). */
  bool nv = M->target == CG_TARGET_NVPTX;
  LLVMTypeRef ps[3 + RT_GPU_PARAMS] = {M->t_ptr, M->t_ptr, M->t_i64, M->t_ptr};
  unsigned np = nv ? 3 + RT_GPU_PARAMS : 4;
  for (unsigned i = 3; nv && i < np; i++)
    ps[i] = M->t_i64;
  LLVMTypeRef ft = LLVMFunctionType(M->t_void, ps, np, 0);
  if (LLVMGetNamedFunction(M->mod, name))
    cg_error(M, AC_ERR_INTERNAL, 0, "code generation: two kernels named %s", name);
  f->fn = LLVMAddFunction(M->mod, name, ft);
  LLVMSetLinkage(f->fn, LLVMExternalLinkage);
  cg_gpu_attr(M, f->fn, LLVMAttributeFunctionIndex, "nounwind");
  /* As cg_kernel_begin: the frame is an allocation of its own that no
   * array points into (the device copy of the frame here). ctl gets no
   * such promise: failed temporary requests hand out memory inside it. */
  cg_gpu_attr(M, f->fn, 1, "noalias");
  cg_gpu_attr(M, f->fn, 1, "nocapture");
  if (nv) {
    LLVMSetFunctionCallConv(f->fn, LLVMPTXKernelCallConv);
    if (block != 0)
      cg_gpu_maxntid(M, f->fn, block);
  } else {
    cg_gpu_attr(M, f->fn, 4, "noalias");
    cg_gpu_attr(M, f->fn, 4, "nocapture");
    cg_gpu_attr(M, f->fn, 4, "readonly");
  }
  f->gparams = LLVMGetParam(f->fn, 3);
  LLVMSetValueName2(f->gparams, "params", 6);
  f->frame = LLVMGetParam(f->fn, 0);
  f->tctx = LLVMGetParam(f->fn, 1);
  f->hi = LLVMGetParam(f->fn, 2);
  f->lo = cg_i64(M, 0);
  f->chunk = NULL;
  LLVMSetValueName2(f->frame, "frame", 5);
  LLVMSetValueName2(f->tctx, "ctl", 3);
  LLVMSetValueName2(f->hi, "n", 1);
  f->entry = LLVMAppendBasicBlockInContext(M->llctx, f->fn, "entry");
  LLVMPositionBuilderAtEnd(M->b, f->entry);
  return f;
}

/* ---- frame words through the parameter block ---- */

/* A frame word read through the parameter block (cg_gpu_word): the
 * instructions that cg_gpu_params_resolve points at its slot. */
typedef struct cg_gword {
  uint32_t w;
  LLVMValueRef pv, shift, br;
} cg_gword;

LLVMValueRef cg_gpu_word(cg_fn *f, uint32_t w) {
  cg_module *M = f->M;
  bool nv = M->target == CG_TARGET_NVPTX;
  if (!f->gmask) {
    if (nv) {
      f->gmask = f->gparams;
    } else {
      LLVMBuilderRef saved = cg_gpu_entry_begin(f);
      f->gmask = LLVMBuildLoad2(M->b, M->t_i64, f->gparams, "params.mask");
      cg_gpu_entry_end(f, saved);
    }
  }
  cg_grow(M, (void **)&f->gwords, f->ngwords, &f->capgwords, sizeof *f->gwords, 16);
  cg_gword *g = &f->gwords[f->ngwords++];
  g->w = w;
  /* slot 0 until resolved: the parameter after the mask, or the block's
   * word 1 (a load whose index cg_gpu_params_resolve changes) */
  LLVMValueRef one = cg_i64(M, 1);
  g->pv = nv ? LLVMGetParam(f->fn, 4)
             : LLVMBuildInBoundsGEP2(M->b, M->t_i64, f->gparams, &one, 1, "");
  LLVMValueRef pv = nv ? g->pv : LLVMBuildLoad2(M->b, M->t_i64, g->pv, "");
  g->shift = LLVMBuildLShr(M->b, f->gmask, cg_i64(M, 0), "");
  LLVMValueRef has = LLVMBuildTrunc(M->b, g->shift, M->t_i1, "");
  LLVMBasicBlockRef from = LLVMGetInsertBlock(M->b), dev = cg_block(f, "word.frame"),
                    join = cg_block(f, "word");
  g->br = LLVMBuildCondBr(M->b, has, join, dev);
  LLVMPositionBuilderAtEnd(M->b, dev);
  LLVMValueRef idx = cg_i64(M, w);
  LLVMValueRef dv = LLVMBuildLoad2(M->b, M->t_i64,
                                   LLVMBuildInBoundsGEP2(M->b, M->t_i64, f->frame, &idx, 1, ""), "");
  LLVMBuildBr(M->b, join);
  LLVMPositionBuilderAtEnd(M->b, join);
  LLVMValueRef v = LLVMBuildPhi(M->b, M->t_i64, "");
  LLVMValueRef vals[2] = {pv, dv};
  LLVMBasicBlockRef bbs[2] = {from, dev};
  LLVMAddIncoming(v, vals, bbs, 2);
  if (nv)
    g->pv = v; /* the phi: its incoming value 0 is the parameter */
  return v;
}

static int cg_gpu_word_cmp(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

void cg_gpu_params_resolve(cg_fn *f, const uint32_t *uses, uint32_t nuses) {
  cg_module *M = f->M;
  bool nv = M->target == CG_TARGET_NVPTX;
  for (uint32_t i = 0; i < f->ngwords; i++) {
    cg_gword *g = &f->gwords[i];
    const uint32_t *at = nuses ? bsearch(&g->w, uses, nuses, sizeof *uses, cg_gpu_word_cmp) : NULL;
    uint32_t lo = at ? (uint32_t)(at - uses) : UINT32_MAX;
    if (lo < RT_GPU_PARAMS - 1) {
      if (nv)
        LLVMSetOperand(g->pv, 0, LLVMGetParam(f->fn, 4 + lo));
      else
        LLVMSetOperand(g->pv, 1, cg_i64(M, 1 + (int64_t)lo));
      LLVMSetOperand(g->shift, 1, cg_i64(M, lo));
    } else {
      /* not among the uses, or past the block: always the frame */
      LLVMSetCondition(g->br, LLVMConstInt(M->t_i1, 0, 0));
    }
  }
}

uint64_t cg_gpu_smem(const cg_fn *f) {
  return f->smem;
}

/* ---- building in the entry block ---- */

LLVMBuilderRef cg_gpu_entry_begin(cg_fn *f) {
  cg_module *M = f->M;
  LLVMBuilderRef eb = LLVMCreateBuilderInContext(M->llctx);
  LLVMValueRef i = LLVMGetFirstInstruction(f->entry);
  while (i && LLVMIsAAllocaInst(i))
    i = LLVMGetNextInstruction(i);
  if (i)
    LLVMPositionBuilderBefore(eb, i);
  else
    LLVMPositionBuilderAtEnd(eb, f->entry);
  LLVMBuilderRef saved = M->b;
  M->b = eb;
  return saved;
}

void cg_gpu_entry_end(cg_fn *f, LLVMBuilderRef saved) {
  cg_module *M = f->M;
  LLVMDisposeBuilder(M->b);
  M->b = saved;
}

/* ---- the control block ---- */

/* Pointer to the field at byte offset `off` of ctl (runtime/gpu.h). */
static LLVMValueRef cg_gpu_ctl(cg_fn *f, unsigned off) {
  cg_module *M = f->M;
  LLVMValueRef o = cg_i64(M, off);
  return LLVMBuildInBoundsGEP2(M->b, M->t_i8, f->tctx, &o, 1, "");
}

static LLVMValueRef cg_gpu_i64(cg_module *M, LLVMValueRef v) {
  if (!v)
    return cg_i64(M, 0);
  if (LLVMTypeOf(v) == M->t_i64)
    return v;
  return LLVMBuildSExtOrBitCast(M->b, v, M->t_i64, "");
}

void cg_gpu_fail(cg_fn *f, LLVMValueRef site, LLVMValueRef a, LLVMValueRef b) {
  LLVMValueRef v[2] = {a, b};
  cg_gpu_fail_n(f, site, 2, v);
}

void cg_gpu_fail_n(cg_fn *f, LLVMValueRef site, uint32_t n, const LLVMValueRef *vals) {
  cg_module *M = f->M;
  if (n > RT_FAIL_VALS)
    n = RT_FAIL_VALS;
  LLVMValueRef zero = LLVMConstInt(M->t_i32, 0, 0), one = LLVMConstInt(M->t_i32, 1, 0);
  LLVMValueRef r =
      LLVMBuildAtomicCmpXchg(M->b, cg_gpu_ctl(f, RT_GCTL_FAILED), zero, one,
                             LLVMAtomicOrderingMonotonic, LLVMAtomicOrderingMonotonic, 0);
  LLVMValueRef won = LLVMBuildExtractValue(M->b, r, 1, "");
  LLVMBasicBlockRef rec = cg_block(f, "fail.record"), done = cg_block(f, "fail.done");
  LLVMBuildCondBr(M->b, won, rec, done);
  LLVMPositionBuilderAtEnd(M->b, rec);
  LLVMBuildStore(M->b, site, cg_gpu_ctl(f, RT_GCTL_SITE));
  /* a and b always (a message with fewer values ignores them), then the rest */
  for (uint32_t k = 0; k < (n > 2 ? n : 2); k++) {
    unsigned off = k == 0 ? RT_GCTL_A : k == 1 ? RT_GCTL_B : RT_GCTL_MORE + 8 * (k - 2);
    LLVMBuildStore(M->b, cg_gpu_i64(M, k < n ? vals[k] : NULL), cg_gpu_ctl(f, off));
  }
  LLVMBuildBr(M->b, done);
  LLVMPositionBuilderAtEnd(M->b, done);
}

LLVMValueRef cg_gpu_failed(cg_fn *f) {
  cg_module *M = f->M;
  LLVMValueRef v = simt_load_volatile(f, M->t_i32, cg_gpu_ctl(f, RT_GCTL_FAILED));
  /* one answer for a group that runs element code together (seq_coop.c) */
  return cg_coop_any(f, LLVMBuildICmp(M->b, LLVMIntNE, v, LLVMConstInt(M->t_i32, 0, 0), ""));
}

/* ---- temporary memory ---- */

/* The thread's offset slot, base and budget, made on first use (entry
 * block). With no temporary memory in the launch (ctl->tmp == 0) the base
 * is the dummy and the budget 0, so only empty requests succeed. */
static void cg_gpu_tmp_init(cg_fn *f) {
  if (f->gtmp_off)
    return;
  cg_module *M = f->M;
  LLVMBuilderRef saved = cg_gpu_entry_begin(f);
  f->gtmp_off = cg_alloca(f, M->t_i64);
  LLVMBuildStore(M->b, cg_i64(M, 0), f->gtmp_off);
  LLVMValueRef tmp = LLVMBuildLoad2(M->b, M->t_i64, cg_gpu_ctl(f, RT_GCTL_TMP), "tmp");
  LLVMValueRef per = LLVMBuildLoad2(M->b, M->t_i64, cg_gpu_ctl(f, RT_GCTL_TMP_PER_THREAD), "");
  LLVMValueRef none = LLVMBuildICmp(M->b, LLVMIntEQ, tmp, cg_i64(M, 0), "");
  /* The runtime allocated grid * block * per bytes, so the product fits. */
  LLVMValueRef off = LLVMBuildMul(M->b, simt_gtid(f), per, "");
  LLVMValueRef mine =
      LLVMBuildGEP2(M->b, M->t_i8, LLVMBuildIntToPtr(M->b, tmp, M->t_ptr, ""), &off, 1, "");
  f->gtmp_base = LLVMBuildSelect(M->b, none, cg_gpu_ctl(f, RT_GCTL_DUMMY), mine, "tmp.base");
  f->gtmp_lim = LLVMBuildSelect(M->b, none, cg_i64(M, 0), per, "tmp.lim");
  f->gtmp_known = cg_alloca(f, M->t_i64);
  LLVMBuildStore(M->b, LLVMBuildLoad2(M->b, M->t_i64, cg_gpu_ctl(f, RT_GCTL_TMP_NEED), "tmp.need"),
                 f->gtmp_known);
  cg_gpu_entry_end(f, saved);
}

LLVMValueRef cg_gpu_tmp_alloc(cg_fn *f, LLVMValueRef bytes, ir_ref at) {
  cg_module *M = f->M;
  cg_gpu_tmp_init(f);
  f->gtmp_alloc = true;
  bytes = cg_gpu_i64(M, bytes);
  /* Absurd sizes fail as on the CPU (the same site and value); then the
   * budget: a request that does not fit in what is left of it. size is
   * only used when bytes is sane, so its rounding cannot overflow. */
  LLVMValueRef huge = LLVMBuildICmp(M->b, LLVMIntUGT, bytes, cg_i64(M, RT_ARRAY_MAX_BYTES), "");
  LLVMValueRef size =
      LLVMBuildAnd(M->b, LLVMBuildAdd(M->b, bytes, cg_i64(M, CG_GPU_TMP_ALIGN - 1), ""),
                   cg_i64(M, -CG_GPU_TMP_ALIGN), "");
  LLVMValueRef off = LLVMBuildLoad2(M->b, M->t_i64, f->gtmp_off, "tmp.off");
  LLVMValueRef left = LLVMBuildSub(M->b, f->gtmp_lim, off, "");
  LLVMValueRef full = LLVMBuildICmp(M->b, LLVMIntSGT, size, left, "");
  LLVMValueRef bad = LLVMBuildOr(M->b, huge, full, "");

  /* the need, reported when it grows past what the thread knows */
  LLVMValueRef end = LLVMBuildAdd(M->b, off, size, "tmp.end");
  LLVMValueRef known = LLVMBuildLoad2(M->b, M->t_i64, f->gtmp_known, "");
  LLVMValueRef grow = LLVMBuildAnd(M->b, LLVMBuildNot(M->b, huge, ""),
                                   LLVMBuildICmp(M->b, LLVMIntSGT, end, known, ""), "");
  LLVMBasicBlockRef report = cg_block(f, "tmp.report"), reported = cg_block(f, "tmp.reported");
  LLVMBuildCondBr(M->b, grow, report, reported);
  LLVMPositionBuilderAtEnd(M->b, report);
  simt_atomic_relaxed(f, LLVMAtomicRMWBinOpMax, cg_gpu_ctl(f, RT_GCTL_TMP_NEED), end);
  LLVMBuildStore(M->b, end, f->gtmp_known);
  LLVMBuildBr(M->b, reported);
  LLVMPositionBuilderAtEnd(M->b, reported);

  LLVMBasicBlockRef fail = cg_block(f, "tmp.fail"), join = cg_block(f, "tmp.join");
  LLVMBuildCondBr(M->b, bad, fail, join);
  LLVMPositionBuilderAtEnd(M->b, fail);
  LLVMValueRef s_big = LLVMConstInt(M->t_i32, cg_site(M, at, "array too large"), 0);
  LLVMValueRef s_full = LLVMConstInt(
      M->t_i32,
      cg_site(M, at,
              "temporary memory exhausted: %lld bytes requested with %lld bytes per GPU thread"),
      0);
  cg_gpu_fail(f, LLVMBuildSelect(M->b, huge, s_big, s_full, ""), bytes,
              LLVMBuildSelect(M->b, huge, cg_i64(M, 0), f->gtmp_lim, ""));
  LLVMBuildBr(M->b, join);
  LLVMPositionBuilderAtEnd(M->b, join);

  LLVMValueRef p = LLVMBuildGEP2(M->b, M->t_i8, f->gtmp_base, &off, 1, "");
  LLVMBuildStore(M->b, LLVMBuildSelect(M->b, bad, off, LLVMBuildAdd(M->b, off, size, ""), ""),
                 f->gtmp_off);
  return LLVMBuildSelect(M->b, bad, cg_gpu_ctl(f, RT_GCTL_DUMMY), p, "tmp");
}

LLVMValueRef cg_gpu_tmp_mark(cg_fn *f) {
  cg_gpu_tmp_init(f);
  return LLVMBuildLoad2(f->M->b, f->M->t_i64, f->gtmp_off, "tmp.mark");
}

void cg_gpu_tmp_release(cg_fn *f, LLVMValueRef mark) {
  cg_gpu_tmp_init(f);
  LLVMBuildStore(f->M->b, mark, f->gtmp_off);
}
