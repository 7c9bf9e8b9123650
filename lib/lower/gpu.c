/* lib/lower/gpu.c: lowering for GPU targets (NVPTX, and the SIMT emulator
 * that runs the same kernels on the CPU).
 *
 * A GPU plan is a plan like the CPU's (runtime/plan.h, `target gpu`): the
 * host program is the same, only its kernels are GPU kernels (runtime/gpu.h
 * ABI) and a launch's `chunks` counts blocks. Two kinds of kernel:
 *
 *   SIMT kernels, written for the GPU against codegen/simt.h (thread and
 *   block indices, barriers, shared memory, warp shuffles): the
 *   element-wise skeleton below (a grid-stride loop, so consecutive threads
 *   touch consecutive elements: coalesced), and the GPU skeletons of
 *   gskel_*.c (reductions with warp shuffles, single-pass scans, ...).
 *
 *   The CHUNK ADAPTER, for every operation that has no GPU skeleton yet:
 *   the CPU skeleton's kernel body, which computes chunk k = [k*n/c,
 *   (k+1)*n/c) of a launch in c chunks (runtime/rt.h), is wrapped in a
 *   grid-stride loop over k, one GPU thread per chunk. The chunk count c
 *   becomes a frame word that the launch sets (lw_adapt_launch), and the
 *   boundaries are computed exactly as the CPU's (q*k + r*k/c with n = q*c
 *   + r, which needs no 128-bit division, for c <= 2^31), so kernels that
 *   pass per-chunk partials to each other agree. Chunks run concurrently
 *   in any order on the CPU too, so every CPU skeleton is correct this way;
 *   it is slow where one thread walks a long contiguous run (uncoalesced),
 *   which is what the GPU skeletons replace.
 *
 * Errors: a kernel that fails records the first failure in the control
 * block and the host sees it only when it next synchronises, so kernels
 * launched after a failure must not act on the failed kernel's garbage:
 * every GPU kernel begins by leaving when the call has already failed
 * (per thread where the kernel has no barriers; lw_gpu_guard makes the
 * decision block-uniform where it has).
 */
#include "lower/skel.h"

#include "codegen/simt.h"
#include "passes/pass.h"
#include "runtime/gpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LW_ADAPT_BLOCK 128u
#define LW_ADAPT_MAX_CHUNKS ((int64_t)1 << 31)

void lw_gpu_leave_if_failed(cg_fn *f) {
  cg_module *M = f->M;
  LLVMBasicBlockRef out = cg_block(f, "failed"), go = cg_block(f, "go");
  LLVMBuildCondBr(M->b, cg_failed(f), out, go);
  LLVMPositionBuilderAtEnd(M->b, out);
  LLVMBuildRetVoid(M->b);
  LLVMPositionBuilderAtEnd(M->b, go);
}

LLVMValueRef lw_gloop_begin(cg_fn *f, lw_gloop *l, LLVMValueRef start, LLVMValueRef end,
                            LLVMValueRef step) {
  cg_module *M = f->M;
  LLVMTypeRef t = LLVMTypeOf(start);
  l->slot = cg_alloca(f, t);
  l->step = step;
  LLVMBuildStore(M->b, start, l->slot);
  l->head = cg_block(f, "gloop.head");
  l->exit = cg_block(f, "gloop.exit");
  LLVMBasicBlockRef body = cg_block(f, "gloop.body");
  LLVMBuildBr(M->b, l->head);
  LLVMPositionBuilderAtEnd(M->b, l->head);
  LLVMValueRef i = LLVMBuildLoad2(M->b, t, l->slot, "i");
  LLVMIntPredicate lt = t == M->t_i64 ? LLVMIntSLT : LLVMIntULT;
  LLVMBuildCondBr(M->b, LLVMBuildICmp(M->b, lt, i, end, ""), body, l->exit);
  LLVMPositionBuilderAtEnd(M->b, body);
  return i;
}

void lw_gloop_end(cg_fn *f, lw_gloop *l) {
  cg_module *M = f->M;
  if (!LLVMGetBasicBlockTerminator(LLVMGetInsertBlock(M->b))) {
    LLVMValueRef i = LLVMBuildLoad2(M->b, LLVMTypeOf(l->step), l->slot, "");
    LLVMBuildStore(M->b, LLVMBuildNUWAdd(M->b, i, l->step, ""), l->slot);
    LLVMBuildBr(M->b, l->head);
  }
  LLVMPositionBuilderAtEnd(M->b, l->exit);
}

/* Records kernel k's adapter word (PL_AUTO: a SIMT kernel). */
static void gp_note_adapt(lw *L, uint32_t k, uint32_t word) {
  if (k >= L->nadapt) {
    uint32_t n = k + 1 > 2 * L->nadapt ? k + 1 : 2 * L->nadapt;
    uint32_t *a = ac_realloc(L->ctx, L->adapt, (size_t)n * sizeof *a);
    if (!a) {
      cg_error(L->M, AC_ERR_NOMEM, 0, "out of memory");
      return;
    }
    for (uint32_t i = L->nadapt; i < n; i++)
      a[i] = PL_AUTO;
    L->adapt = a;
    L->nadapt = n;
  }
  L->adapt[k] = word;
}

static void gp_finish(lw *L, cg_fn *f, uint32_t kernel) {
  if (kernel < L->p->nkernels)
    cg_gpu_params_resolve(f, L->p->kernels[kernel].uses, L->p->kernels[kernel].nuses);
  cg_kernel_end(f);
  if (kernel < L->p->nkernels) {
    L->p->kernels[kernel].smem = cg_gpu_smem(f);
    L->p->kernels[kernel].tmp = f->gtmp_alloc; /* marks alone need no memory */
  }
}

/* ---- the chunk adapter ---- */

cg_fn *lw_adapt_begin(lw *L, const char *name, uint32_t kernel) {
  cg_module *M = L->M;
  if (L->open.f)
    cg_error(M, AC_ERR_INTERNAL, 0, "lowering: kernel %s begun inside another kernel", name);
  cg_fn *f = cg_gpu_kernel_begin(M, name, LW_ADAPT_BLOCK);
  if (kernel < L->p->nkernels)
    L->p->kernels[kernel].block = LW_ADAPT_BLOCK;
  lw_gpu_leave_if_failed(f);
  uint32_t cw = pl_slots(L->p, 1);
  gp_note_adapt(L, kernel, cw);
  lw_val w = {ir_ty_scalar(L->ctx, AC_I64), 1, &cw};
  cg_val cv;
  lw_load(L, f, kernel, &w, &cv);
  LLVMValueRef c = cv.l[0].v, zero = cg_i64(M, 0), one = cg_i64(M, 1);
  c = cg_smin(M, cg_smax(M, c, one), cg_i64(M, LW_ADAPT_MAX_CHUNKS));
  LLVMValueRef n = cg_smax(M, f->hi, zero); /* n < 0 is 0 iterations (rt.h) */
  LLVMValueRef q = LLVMBuildUDiv(M->b, n, c, ""), r = LLVMBuildURem(M->b, n, c, "");

  L->open.f = f;
  L->open.kernel = kernel;
  LLVMValueRef k = lw_gloop_begin(f, &L->open.loop, simt_gtid(f), c, simt_gsize(f));
  /* floor(k * n / c) = q*k + floor(r*k / c): r, k < c <= 2^31 */
  LLVMValueRef k1 = LLVMBuildNUWAdd(M->b, k, one, "");
  f->lo = LLVMBuildNUWAdd(M->b, LLVMBuildNUWMul(M->b, q, k, ""),
                          LLVMBuildUDiv(M->b, LLVMBuildNUWMul(M->b, r, k, ""), c, ""), "lo");
  f->hi = LLVMBuildNUWAdd(M->b, LLVMBuildNUWMul(M->b, q, k1, ""),
                          LLVMBuildUDiv(M->b, LLVMBuildNUWMul(M->b, r, k1, ""), c, ""), "hi");
  f->chunk = k;
  return f;
}

void lw_adapt_end(lw *L, cg_fn *f) {
  cg_module *M = L->M;
  if (L->open.f != f) {
    cg_error(M, AC_ERR_INTERNAL, 0, "lowering: adapted kernel ended out of order");
    cg_kernel_end(f);
    return;
  }
  lw_gloop_end(f, &L->open.loop);
  uint32_t kernel = L->open.kernel;
  memset(&L->open, 0, sizeof L->open);
  gp_finish(L, f, kernel);
}

void lw_adapt_launch(lw *L, uint32_t kernel, uint32_t n, uint32_t chunks) {
  uint32_t cw = kernel < L->nadapt ? L->adapt[kernel] : PL_AUTO;
  if (cw == PL_AUTO) { /* a SIMT kernel: chunks are blocks already */
    pl_launch(L->p, kernel, n, chunks);
    return;
  }
  int64_t grain = kernel < L->p->nkernels ? L->p->kernels[kernel].grain : 1;
  uint32_t c = chunks == PL_AUTO ? lw_x_bin(L, PX_CHUNKS, n, lw_x_const(L, grain)) : chunks;
  c = lw_x_bin(L, PX_MIN, lw_x_bin(L, PX_MAX, c, lw_x_const(L, 1)),
               lw_x_const(L, LW_ADAPT_MAX_CHUNKS));
  pl_set(L->p, cw, c);
  uint32_t blocks = lw_x_bin(L, PX_DIV, lw_x_bin(L, PX_ADD, lw_x_word(L, cw),
                                                 lw_x_const(L, LW_ADAPT_BLOCK - 1)),
                             lw_x_const(L, LW_ADAPT_BLOCK));
  pl_launch(L->p, kernel, n, blocks);
}

/* ---- SIMT kernels ---- */

cg_fn *lw_gpu_kernel_begin(lw *L, ir_ref at, const char *kind, int64_t grain, unsigned block,
                           uint32_t *kernel) {
  char name[80];
  *kernel = lw_kernel_new(L, at, kind, grain, name);
  if (*kernel < L->p->nkernels)
    L->p->kernels[*kernel].block = block;
  gp_note_adapt(L, *kernel, PL_AUTO);
  cg_fn *f = cg_gpu_kernel_begin(L->M, name, block);
  lw_kernel_env(L, f, at, *kernel);
  return f;
}

void lw_gpu_kernel_end(lw *L, cg_fn *f, uint32_t kernel) {
  gp_finish(L, f, kernel);
}

void lw_launch_warps(lw *L, uint32_t kernel, uint32_t n, uint32_t warps) {
  pl_launch_warps(L->p, kernel, n, PL_AUTO, warps);
}

void lw_gpu_scratch(lw *L, uint32_t kernel, uint64_t fixed, uint64_t per_block) {
  if (kernel < L->p->nkernels) {
    L->p->kernels[kernel].scratch_fixed = fixed;
    L->p->kernels[kernel].scratch_block = per_block;
  }
}

void lw_gpu_counters(lw *L, uint32_t kernel, uint64_t fixed, uint64_t per_block) {
  if (kernel < L->p->nkernels) {
    L->p->kernels[kernel].counters_fixed = fixed;
    L->p->kernels[kernel].counters_block = per_block;
  }
}

LLVMValueRef lw_gpu_scratch_ptr(cg_fn *f) {
  cg_module *M = f->M;
  LLVMValueRef at = LLVMBuildGEP2(M->b, M->t_i8, f->tctx,
                                  (LLVMValueRef[]){cg_i64(M, RT_GCTL_SCRATCH)}, 1, "");
  return LLVMBuildLoad2(M->b, M->t_ptr, at, "scratch");
}

void lw_gpu_guard(cg_fn *f) {
  cg_module *M = f->M;
  LLVMValueRef flag = simt_shared(f, M->t_i32, 1, "guard");
  LLVMBasicBlockRef t0 = cg_block(f, "guard.read"), join = cg_block(f, "guard.join");
  LLVMBuildCondBr(M->b, LLVMBuildICmp(M->b, LLVMIntEQ, simt_tid(f), LLVMConstInt(M->t_i32, 0, 0), ""),
                  t0, join);
  LLVMPositionBuilderAtEnd(M->b, t0);
  LLVMBuildStore(M->b, LLVMBuildZExt(M->b, cg_failed(f), M->t_i32, ""), flag);
  LLVMBuildBr(M->b, join);
  LLVMPositionBuilderAtEnd(M->b, join);
  simt_barrier(f);
  LLVMBasicBlockRef out = cg_block(f, "failed"), go = cg_block(f, "go");
  LLVMValueRef v = LLVMBuildLoad2(M->b, M->t_i32, flag, "");
  LLVMBuildCondBr(M->b, LLVMBuildICmp(M->b, LLVMIntNE, v, LLVMConstInt(M->t_i32, 0, 0), ""), out,
                  go);
  LLVMPositionBuilderAtEnd(M->b, out);
  LLVMBuildRetVoid(M->b);
  LLVMPositionBuilderAtEnd(M->b, go);
}

/* ---- the element-wise skeleton ----
 * Thread g handles elements g, g + G, g + 2G, ... (G threads in the grid):
 * neighbouring threads store neighbouring elements. The linear index is
 * unravelled into the element's index; for stencils, an element whose
 * neighbourhood lies inside the array takes the unchecked variant (the
 * CPU's split of a row into border and interior, decided per element).
 *
 * Vector groups. Where the elements can be taken LW_VEC at a time (no
 * stencil split; rank 1, or rows whose length is a multiple of LW_VEC, so
 * a group never crosses a row), thread g first handles groups g, g + G,
 * ... of LW_VEC consecutive elements: it computes all of a group's
 * elements, then stores each output leaf's LW_VEC values as one 16-byte
 * vector store (two for 8-byte elements); the elements' reads of arrays at
 * neighbouring indices sit side by side, so NVPTX's load-store vectoriser
 * merges them into vector loads (array bases are 16-byte aligned:
 * cg.c's cg_gpu_array_ptr). Each thread then has LW_VEC elements, and
 * their loads, in flight per iteration: the unrolled, vectorised
 * grid-stride loop nvcc makes of such a loop. The elements past the last
 * whole group (fewer than LW_VEC in rank 1), or all of them when groups do
 * not apply, are done one per thread by the plain loop. The kernel's grain
 * is LW_VEC, so the launch starts a thread per group. Inputs are read
 * through the read-only path (cg_fn.frame_ro): the kernel writes only its
 * outputs, which are fresh allocations. */
#define LW_VEC 4

/* The values of the element at idx (tmp memory, if any, is released
 * after: element values are scalars). */
static void gp_elem_value(lw *L, cg_fn *f, lw_ew *w, LLVMValueRef *idx, unsigned variant,
                          bool tmp, uint32_t nout, cg_val *ev) {
  LLVMValueRef mark = tmp ? cg_tmp_mark(f) : NULL;
  w->elem(L, f, w, idx, variant, ev);
  if (ev->n != nout)
    cg_error(L->M, AC_ERR_INTERNAL, w->at, "lowering: %s element of %u leaves for %u arrays",
             w->kind, ev->n, nout);
  if (tmp)
    cg_tmp_release(f, mark);
}

static void gp_elem_store(lw *L, cg_fn *f, lw_ew *w, const cg_val *ov, LLVMValueRef *idx,
                          LLVMValueRef lin, unsigned variant, bool tmp) {
  cg_val ev;
  gp_elem_value(L, f, w, idx, variant, tmp, ov->n, &ev);
  for (uint32_t i = 0; i < ov->n && i < ev.n; i++)
    cg_store_elem(f, &ov->l[i], lin, ev.l[i].v);
}

/* Stores v[0..LW_VEC) at elements base.. of output leaf o: one vector
 * store per 16 bytes (bool leaves, stored as bytes after a conversion,
 * element by element). */
static void gp_vec_store(cg_fn *f, const cg_leaf *o, LLVMValueRef base, LLVMValueRef *v) {
  cg_module *M = f->M;
  if (o->sc == AC_BOOL) {
    for (unsigned k = 0; k < LW_VEC; k++)
      cg_store_elem(f, o, LLVMBuildNUWAdd(M->b, base, cg_i64(M, k), ""), v[k]);
    return;
  }
  unsigned size = (unsigned)ac_scalar_size((ac_scalar)o->sc);
  unsigned per = size * LW_VEC <= 16 ? LW_VEC : 16 / size; /* elements per store */
  LLVMTypeRef et = cg_mem_type(M, (ac_scalar)o->sc), vt = LLVMVectorType(et, per);
  for (unsigned s = 0; s < LW_VEC; s += per) {
    LLVMValueRef vec = LLVMGetUndef(vt);
    for (unsigned k = 0; k < per; k++)
      vec = LLVMBuildInsertElement(M->b, vec, v[s + k], LLVMConstInt(M->t_i32, k, 0), "");
    LLVMValueRef at = LLVMBuildNUWAdd(M->b, base, cg_i64(M, s), "");
    LLVMValueRef p = LLVMBuildInBoundsGEP2(M->b, et, o->v, &at, 1, "");
    LLVMSetAlignment(LLVMBuildStore(M->b, vec, p), size * per);
  }
}

/* The element-wise loops' index arithmetic: i64, or i32 in the 32-bit
 * variant, launched when n and every array's element count are below
 * 2^31. Its loop compares unsigned: an index is below 2^31 and the grid
 * (`chunks auto`: at most the blocks the device holds at once, some 10^5
 * threads) far smaller, so index + grid size cannot wrap 32 bits, nor
 * can an offset. Indices reach the element function as i64 (the
 * language's index type): widened (zext nneg), which tells LLVM that
 * they are below 2^31. */
typedef struct gp_ix {
  cg_module *M;
  LLVMTypeRef t;
  bool narrow;
} gp_ix;

static LLVMValueRef gp_k(const gp_ix *x, int64_t k) {
  return LLVMConstInt(x->t, (unsigned long long)k, 1);
}

/* An i64 quantity of the kernel (below 2^31 in the narrow variant) as an
 * index of x's type. */
static LLVMValueRef gp_ix_of(const gp_ix *x, LLVMValueRef v) {
  return x->narrow ? LLVMBuildTrunc(x->M->b, v, x->t, "") : v;
}

static LLVMValueRef gp_i64(const gp_ix *x, LLVMValueRef v) {
  return x->narrow ? cg_widen_index(x->M, v) : v;
}

static LLVMValueRef gp_add(const gp_ix *x, LLVMValueRef a, LLVMValueRef b) {
  return x->narrow ? cg_no_wrap(LLVMBuildAdd(x->M->b, a, b, "")) : LLVMBuildNUWAdd(x->M->b, a, b, "");
}

static LLVMValueRef gp_mul(const gp_ix *x, LLVMValueRef a, LLVMValueRef b) {
  return x->narrow ? cg_no_wrap(LLVMBuildMul(x->M->b, a, b, "")) : LLVMBuildNUWMul(x->M->b, a, b, "");
}

/* The unravelled index of element lin, as i64 values. */
static void gp_unravel(const gp_ix *x, LLVMValueRef lin, LLVMValueRef *ext, uint32_t dims,
                       LLVMValueRef *idx) {
  lw_unravel(x->M, lin, ext, dims, idx);
  for (uint32_t d = 0; d < dims; d++)
    idx[d] = gp_i64(x, idx[d]);
}

/* The vector groups [0, ngroups) of the element-wise kernel (see above). */
static void gp_vec_groups(lw *L, cg_fn *f, lw_ew *w, const cg_val *ov, const gp_ix *x,
                          LLVMValueRef *ext, LLVMValueRef ngroups, bool tmp) {
  cg_module *M = L->M;
  uint32_t rank = w->rank;
  LLVMValueRef *idx = cg_new(M, rank * sizeof *idx);
  LLVMValueRef(*vals)[LW_VEC] = cg_new(M, (ov->n ? ov->n : 1) * sizeof *vals);
  lw_gloop gl;
  LLVMValueRef g = lw_gloop_begin(f, &gl, gp_ix_of(x, simt_gtid(f)), ngroups,
                                  gp_ix_of(x, simt_gsize(f)));
  LLVMValueRef base = gp_mul(x, g, gp_k(x, LW_VEC));
  /* the group's row and first column: the row is every element's */
  LLVMValueRef col = base, rr = NULL;
  if (rank > 1) {
    rr = LLVMBuildUDiv(M->b, base, ext[rank - 1], "");
    col = LLVMBuildNUWSub(M->b, base, gp_mul(x, rr, ext[rank - 1]), "");
  }
  for (unsigned k = 0; k < LW_VEC; k++) {
    gp_unravel(x, rr, ext, rank - 1, idx);
    idx[rank - 1] = gp_i64(x, gp_add(x, col, gp_k(x, k)));
    cg_val ev;
    gp_elem_value(L, f, w, idx, 0, tmp, ov->n, &ev);
    for (uint32_t i = 0; i < ov->n && i < ev.n; i++)
      vals[i][k] = ev.l[i].v;
  }
  for (uint32_t i = 0; M->st == AC_OK && i < ov->n; i++)
    gp_vec_store(f, &ov->l[i], gp_i64(x, base), vals[i]);
  lw_gloop_end(f, &gl);
}

/* The element-wise kernel's loops (whole groups, then single elements)
 * with x's index arithmetic; ext64: the result's extents. */
static void gp_elem_loops(lw *L, cg_fn *f, lw_ew *w, const cg_val *ov, const gp_ix *x,
                          LLVMValueRef *ext64, bool tmp) {
  cg_module *M = L->M;
  uint32_t rank = w->rank;
  LLVMValueRef *ext = cg_new(M, rank * sizeof *ext), *idx = cg_new(M, rank * sizeof *idx);
  for (uint32_t d = 0; d < rank; d++)
    ext[d] = gp_ix_of(x, ext64[d]);
  LLVMValueRef n = gp_ix_of(x, f->hi), zero = gp_k(x, 0);

  /* whole groups first (none when rows are not a multiple of LW_VEC) */
  LLVMValueRef first = zero;
  if (!w->split) {
    LLVMValueRef vec = gp_k(x, LW_VEC);
    LLVMValueRef ngroups = LLVMBuildSDiv(M->b, n, vec, "ngroups");
    if (rank > 1) {
      LLVMValueRef whole = LLVMBuildICmp(M->b, LLVMIntEQ, LLVMBuildSRem(M->b, ext[rank - 1], vec, ""),
                                         zero, "");
      ngroups = LLVMBuildSelect(M->b, whole, ngroups, zero, "");
    }
    ngroups = LLVMBuildSelect(M->b, LLVMBuildICmp(M->b, LLVMIntSGT, ngroups, zero, ""), ngroups,
                              zero, "");
    gp_vec_groups(L, f, w, ov, x, ext, ngroups, tmp);
    first = gp_mul(x, ngroups, vec);
  }

  lw_gloop gl;
  LLVMValueRef i = lw_gloop_begin(f, &gl, gp_add(x, first, gp_ix_of(x, simt_gtid(f))), n,
                                  gp_ix_of(x, simt_gsize(f)));
  gp_unravel(x, i, ext, rank, idx);
  LLVMValueRef lin = gp_i64(x, i);
  if (!w->split) {
    gp_elem_store(L, f, w, ov, idx, lin, 0, tmp);
  } else {
    LLVMValueRef j = idx[rank - 1], ilo = cg_i64(M, 0), ihi = cg_i64(M, 0), rowint = NULL;
    w->split(L, f, w, idx, &ilo, &ihi, &rowint);
    idx[rank - 1] = j;
    LLVMValueRef in = LLVMBuildAnd(M->b, LLVMBuildICmp(M->b, LLVMIntSGE, j, ilo, ""),
                                   LLVMBuildICmp(M->b, LLVMIntSLT, j, ihi, ""), "");
    if (rowint)
      in = LLVMBuildAnd(M->b, in, rowint, "");
    LLVMBasicBlockRef yes = cg_block(f, "ew.interior"), no = cg_block(f, "ew.border"),
                      join = cg_block(f, "ew.next");
    LLVMBuildCondBr(M->b, in, yes, no);
    LLVMPositionBuilderAtEnd(M->b, yes);
    gp_elem_store(L, f, w, ov, idx, lin, 3u, tmp);
    LLVMBuildBr(M->b, join);
    LLVMPositionBuilderAtEnd(M->b, no);
    gp_elem_store(L, f, w, ov, idx, lin, 0u, tmp);
    LLVMBuildBr(M->b, join);
    LLVMPositionBuilderAtEnd(M->b, join);
  }
  lw_gloop_end(f, &gl);
}

/* *count: a plan expression for the element count of array i of
 * f->narrow, at most lim (each extent is clamped to lim before it is
 * multiplied, and so is each partial product, so that nothing overflows).
 * False when an array of the same shape comes earlier (arrays of one shape
 * share their extent words) or array i has rank 0. */
static bool gp_count(lw *L, const cg_fn *f, uint32_t i, uint32_t lim, uint32_t *out) {
  const cg_narrow *a = &f->narrow[i];
  for (uint32_t j = 0; j < i; j++)
    if (f->narrow[j].l->rank == a->l->rank &&
        memcmp(f->narrow[j].ext, a->ext, a->l->rank * sizeof *a->ext) == 0)
      return false;
  if (a->l->rank == 0)
    return false;
  uint32_t count = lw_x_bin(L, PX_MIN, lw_x_word(L, a->ext[0]), lim);
  for (uint32_t d = 1; d < a->l->rank; d++)
    count = lw_x_bin(L, PX_MIN,
                     lw_x_bin(L, PX_MUL, count, lw_x_bin(L, PX_MIN, lw_x_word(L, a->ext[d]), lim)),
                     lim);
  *out = count;
  return true;
}

/* Plan expression: 1 when total and the element count of every array
 * kernel f loaded from its frame (cg_fn.narrow) are below 2^31, else 0. */
static uint32_t gp_fits32(lw *L, const cg_fn *f, uint32_t total) {
  uint32_t lim = lw_x_const(L, (int64_t)1 << 31);
  uint32_t ok = lw_x_bin(L, PX_LT, total, lim);
  uint32_t count;
  for (uint32_t i = 0; i < f->nnarrow; i++)
    if (gp_count(L, f, i, lim, &count))
      ok = lw_x_bin(L, PX_MIN, ok, lw_x_bin(L, PX_LT, count, lim));
  return ok;
}

/* One element-wise kernel; narrow: the 32-bit variant, whose condition
 * (gp_fits32) goes to *fits. */
static uint32_t gp_elem_kernel(lw *L, lw_ew *w, const lw_val *out, uint32_t total, bool narrow,
                               uint32_t *fits) {
  cg_module *M = L->M;
  uint32_t rank = w->rank, k;
  char name[80], kind[64];
  snprintf(kind, sizeof kind, "%s%s", w->kind, narrow ? ".i32" : "");
  k = lw_kernel_new(L, w->at, kind, w->split ? 1 : LW_VEC, name);
  gp_note_adapt(L, k, PL_AUTO);
  cg_fn *f = cg_gpu_kernel_begin(M, name, 0);
  lw_gpu_leave_if_failed(f);
  cg_val ov;
  f->narrow_collect = narrow; /* the arrays whose sizes the plan checks */
  lw_load(L, f, k, out, &ov); /* the outputs, the only arrays it writes */
  f->frame_ro = true;
  lw_kernel_env(L, f, w->at, k);
  LLVMValueRef *ext = cg_new(M, rank * sizeof *ext);
  for (uint32_t d = 0; d < rank; d++)
    ext[d] = ov.n ? ov.l[0].ext[d] : lw_x_in_kernel(L, f, k, w->ext[d]);
  if (w->setup)
    w->setup(L, f, k, w);
  f->narrow_collect = false;
  bool tmp = w->code && cg_needs_tmp(L->m, w->code);
  f->idx32 = narrow;
  gp_elem_loops(L, f, w, &ov, &(gp_ix){M, narrow ? M->t_i32 : M->t_i64, narrow}, ext, tmp);
  f->idx32 = false;
  if (narrow)
    *fits = gp_fits32(L, f, total);
  gp_finish(L, f, k);
  return k;
}

/* Whether element-wise kernels get a 32-bit variant (ARRAYC_GPU_WIDE_INDEX
 * unset or "0"; docs/runtime.md §10). */
static bool gp_narrow_wanted(void) {
  const char *s = getenv("ARRAYC_GPU_WIDE_INDEX");
  return !s || !*s || strcmp(s, "0") == 0;
}

/* ---- warp- and block-per-element kernels ----
 * For element code with a fold that reads a row of the element
 * (ps_coop_code, lib/passes/nesting.c: a CSR row's slice, m[i, j] over j),
 * two more kernels, Copperhead's mappings of nested parallelism: a warp
 * per element, or a block of GP_COOP_BLOCK threads per element (each a
 * grid-stride loop over the elements by warps or by blocks). Every thread
 * of the group runs the element code (cg_fn.coop) and the group computes
 * its folds together (lib/codegen/seq_coop.c); the group's first thread
 * stores the element. The plan chooses by an estimate of the inner extent:
 * the largest element count among the arrays the kernel reads (the CSR's
 * values, the matrix) divided by the number of elements, as the GPU fold
 * chooses by its row length: below GP_COOP_WARP_MIN a thread per element,
 * below GP_COOP_BLOCK_MIN a warp, else a block. A fold over a computed
 * row (ps_coop_code_rows) is estimated by that row's extent instead,
 * while the elements are few (GP_COOP_FILL). */
#define GP_COOP_BLOCK 128u
#define GP_COOP_WARP_MIN 16
#define GP_COOP_BLOCK_MIN 1024
/* Computed rows (no array read: generate(m, |j| f(i, j))) gain nothing in
 * coalescing from a group, only parallelism: they take a group only while
 * the elements are fewer than this (a quarter of an H100's resident
 * threads), and then by their extent as above. */
#define GP_COOP_FILL 65536

/* ARRAYC_GPU_NESTED (read when a function is compiled for a GPU; docs/
 * runtime.md §10): "thread", "warp" or "block" makes the plan launch only
 * that mapping for element code with group folds (tests run every mapping
 * on small data with it); unset or "auto", the estimate chooses. */
typedef enum gp_nested { GP_NESTED_AUTO, GP_NESTED_THREAD, GP_NESTED_WARP, GP_NESTED_BLOCK } gp_nested;

static gp_nested gp_nested_wanted(void) {
  const char *s = getenv("ARRAYC_GPU_NESTED");
  if (!s)
    return GP_NESTED_AUTO;
  return strcmp(s, "thread") == 0  ? GP_NESTED_THREAD
         : strcmp(s, "warp") == 0  ? GP_NESTED_WARP
         : strcmp(s, "block") == 0 ? GP_NESTED_BLOCK
                                   : GP_NESTED_AUTO;
}

/* The kernel of mapping `mode` (CG_COOP_WARP or CG_COOP_BLOCK); *est gets
 * the plan's estimate of the inner extent (from the arrays it loads). */
static uint32_t gp_coop_kernel(lw *L, lw_ew *w, const lw_val *out, uint32_t total, uint8_t mode,
                               uint32_t *est) {
  cg_module *M = L->M;
  uint32_t rank = w->rank, k;
  bool block = mode == CG_COOP_BLOCK;
  char name[80], kind[64];
  snprintf(kind, sizeof kind, "%s.%s", w->kind, block ? "block" : "warp");
  k = lw_kernel_new(L, w->at, kind, 1, name);
  gp_note_adapt(L, k, PL_AUTO);
  if (block && k < L->p->nkernels)
    L->p->kernels[k].block = GP_COOP_BLOCK;
  cg_fn *f = cg_gpu_kernel_begin(M, name, block ? GP_COOP_BLOCK : 0);
  f->coop = mode; /* from here on, cg_failed answers for the whole group */
  lw_gpu_leave_if_failed(f);
  cg_val ov;
  f->narrow_collect = true; /* the arrays the estimate looks at */
  lw_load(L, f, k, out, &ov);
  f->frame_ro = true;
  lw_kernel_env(L, f, w->at, k);
  LLVMValueRef *ext = cg_new(M, rank * sizeof *ext), *idx = cg_new(M, rank * sizeof *idx);
  for (uint32_t d = 0; d < rank; d++)
    ext[d] = ov.n ? ov.l[0].ext[d] : lw_x_in_kernel(L, f, k, w->ext[d]);
  if (w->setup)
    w->setup(L, f, k, w);
  f->narrow_collect = false;
  if (est) {
    uint32_t lim = lw_x_const(L, (int64_t)1 << 31), most = lw_x_const(L, 0), count;
    for (uint32_t i = 0; i < f->nnarrow; i++)
      if (gp_count(L, f, i, lim, &count))
        most = lw_x_bin(L, PX_MAX, most, count);
    *est = lw_x_bin(L, PX_DIV, most, lw_x_bin(L, PX_MAX, total, lw_x_const(L, 1)));
  }
  bool tmp = w->code && cg_needs_tmp(L->m, w->code);
  LLVMValueRef n = cg_i64(M, 1);
  for (uint32_t d = 0; d < rank; d++)
    n = LLVMBuildMul(M->b, n, ext[d], "");
  LLVMValueRef g, step, first;
  if (block) {
    g = LLVMBuildZExt(M->b, simt_ctaid(f), M->t_i64, "");
    step = LLVMBuildZExt(M->b, simt_nctaid(f), M->t_i64, "");
    first = LLVMBuildICmp(M->b, LLVMIntEQ, simt_tid(f), LLVMConstInt(M->t_i32, 0, 0), "");
  } else {
    LLVMValueRef w32 = cg_i64(M, SIMT_WARP);
    g = LLVMBuildUDiv(M->b, simt_gtid(f), w32, "");
    step = LLVMBuildUDiv(M->b, simt_gsize(f), w32, "");
    first = LLVMBuildICmp(M->b, LLVMIntEQ, simt_lane(f), LLVMConstInt(M->t_i32, 0, 0), "");
  }
  lw_gloop gl;
  LLVMValueRef e = lw_gloop_begin(f, &gl, g, n, step);
  lw_unravel(M, e, ext, rank, idx);
  cg_val ev;
  gp_elem_value(L, f, w, idx, 0, tmp, ov.n, &ev);
  LLVMBasicBlockRef store = cg_block(f, "coop.store"), next = cg_block(f, "coop.next");
  LLVMBuildCondBr(M->b, first, store, next);
  LLVMPositionBuilderAtEnd(M->b, store);
  for (uint32_t i = 0; i < ov.n && i < ev.n; i++)
    cg_store_elem(f, &ov.l[i], e, ev.l[i].v);
  LLVMBuildBr(M->b, next);
  LLVMPositionBuilderAtEnd(M->b, next);
  lw_gloop_end(f, &gl);
  f->coop = CG_COOP_NONE;
  gp_finish(L, f, k);
  return k;
}

/* Rank 2 and more: two kernels, one with 32-bit index arithmetic, which
 * the plan launches when everything fits, and the 64-bit one otherwise.
 * Unravelling an element's index divides by the extents and reading an
 * array multiplies by them: in 32 bits, a division is one div.u32 where
 * NVPTX makes a 64-bit division a run-time test and a branch, and a
 * multiplication one instruction where a 64-bit one takes three or four.
 * Rank 1: the 64-bit kernel only. LLVM strength-reduces its index
 * arithmetic to pointer increments, which 32 bits do not make shorter
 * (saxpy's and Black-Scholes's loops are the same size with either). */
static void gp_thread_kernels(lw *L, lw_ew *w, const lw_val *out, uint32_t total, uint32_t *k32,
                              uint32_t *k64, uint32_t *fits) {
  *k32 = PL_AUTO;
  if (w->rank >= 2 && gp_narrow_wanted())
    *k32 = gp_elem_kernel(L, w, out, total, true, fits);
  *k64 = gp_elem_kernel(L, w, out, total, false, NULL);
}

static void gp_thread_launch(lw *L, uint32_t total, uint32_t k32, uint32_t k64, uint32_t fits) {
  if (k32 == PL_AUTO) {
    pl_launch(L->p, k64, total, PL_AUTO);
    return;
  }
  pl_if(L->p, lw_x_to_word(L, fits));
  pl_launch(L->p, k32, total, PL_AUTO);
  pl_else(L->p);
  pl_launch(L->p, k64, total, PL_AUTO);
  pl_end(L->p);
}

/* The estimate of a computed row's extent (ps_coop_code_rows: ext under
 * `base` binders of the element code): the extent, computed by the
 * plan, while the elements are fewer than GP_COOP_FILL, since a thread
 * per element fills the device beyond that and needs no reduction. */
static uint32_t gp_computed_estimate(lw *L, ir_ref ext, uint32_t base, uint32_t total) {
  uint32_t m;
  if (!lw_int_under(L, ext, base, &m))
    return lw_x_const(L, 0);
  return lw_x_bin(L, PX_MUL, m, lw_x_bin(L, PX_LT, total, lw_x_const(L, GP_COOP_FILL)));
}

bool lw_gpu_elementwise(lw *L, lw_ew *w, const lw_val *out, uint32_t total) {
  uint32_t k32, k64, fits = 0;
  gp_nested want = gp_nested_wanted();
  ir_op op = (ir_op)ir_node_get(L->m, w->at)->op;
  ir_ref rows = IR_NONE;
  uint32_t rows_base = 0;
  bool coop = (op == IR_MAP || op == IR_GENERATE) && !w->split && w->code &&
              ps_coop_code_rows(L->m, w->code, op == IR_GENERATE, &rows, &rows_base) &&
              want != GP_NESTED_THREAD;
  gp_thread_kernels(L, w, out, total, &k32, &k64, &fits);
  if (!coop) {
    gp_thread_launch(L, total, k32, k64, fits);
    return L->M->st == AC_OK;
  }
  uint32_t est = 0;
  uint32_t kw = gp_coop_kernel(L, w, out, total, CG_COOP_WARP, &est);
  uint32_t kb = gp_coop_kernel(L, w, out, total, CG_COOP_BLOCK, NULL);
  /* a warp's, or a block's, worth of threads per element */
  uint32_t nw = lw_x_bin(L, PX_MUL, total, lw_x_const(L, SIMT_WARP));
  uint32_t nb = lw_x_bin(L, PX_MUL, total, lw_x_const(L, GP_COOP_BLOCK));
  if (want == GP_NESTED_WARP) {
    pl_launch(L->p, kw, nw, PL_AUTO);
  } else if (want == GP_NESTED_BLOCK) {
    pl_launch(L->p, kb, nb, PL_AUTO);
  } else {
    if (rows)
      est = lw_x_bin(L, PX_MAX, est, gp_computed_estimate(L, rows, rows_base, total));
    est = lw_x_word(L, lw_x_to_word(L, est)); /* computed once */
    pl_if(L->p, lw_x_to_word(L, lw_x_bin(L, PX_LT, est, lw_x_const(L, GP_COOP_WARP_MIN))));
    gp_thread_launch(L, total, k32, k64, fits);
    pl_else(L->p);
    pl_if(L->p, lw_x_to_word(L, lw_x_bin(L, PX_LT, est, lw_x_const(L, GP_COOP_BLOCK_MIN))));
    pl_launch(L->p, kw, nw, PL_AUTO);
    pl_else(L->p);
    pl_launch(L->p, kb, nb, PL_AUTO);
    pl_end(L->p);
    pl_end(L->p);
  }
  return L->M->st == AC_OK;
}
