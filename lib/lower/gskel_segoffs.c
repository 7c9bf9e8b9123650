/* lib/lower/gskel_segoffs.c: segment offsets on GPU targets (sk_seg_offsets
 * of skel_red.h calls lw_gpu_seg_offsets when L->gpu), for fold_seg
 * (gskel_fold.c) and the segmented scans.
 *
 * The offsets are the exclusive prefix sum of the lengths, offs[s] = len[0]
 * + .. + len[s-1] and offs[nseg] = the total; the interpreter also checks
 * that no length is negative (reporting the first negative one in order)
 * and that the lengths sum to the array's length (a sum that saturates at
 * INT64_MAX: only the message sees it). The CPU skeleton chains its pieces,
 * which needs chunks that run in claim order; through the chunk adapter a
 * GPU thread would walk 16K lengths alone, and blocks do not run in order
 * without a ticket. Here
 * it is ONE single-pass scan kernel (the decoupled look-back of
 * gskel_lookback.c, Merrill & Garland 2016) over the operator
 *     (s1, n1) (+) (s2, n2) = (min(INT64_MAX, s1 + s2), n1 != 0 ? n1 : n2)
 * on pairs (sum of the non-negative lengths, first negative length or 0),
 * which is associative, so the scan's aggregate of everything carries both
 * checks: the thread that holds the whole sequence's total (thread 0 of
 * the last tile) stores offs[nseg] and makes the checks in the
 * interpreter's order, with the CPU skeleton's messages and sites. Each
 * thread reads GSO_ITEMS consecutive lengths (the blocked arrangement the
 * scan wants), scans them, and writes their offsets after the block scan
 * gives it its exclusive prefix. The launch has exactly one block per tile
 * (at least one: an empty lens still gets offs[0] = 0 and the total check).
 * The kernels that read the offsets run after it and leave at once if the
 * checks failed (lw_gpu_guard), so garbage offsets are never used. With a
 * delayed operand whose elements can fail (`replay`), the last tile's
 * block computes all of them before the checks, which it then makes only
 * if no element failed (the interpreter computes the operand first). The
 * "ahead" form (lw_hoist_offsets) makes no check: thread 0 of the last
 * tile stores the pair (first negative length, total) in two words.
 */
#include "lower/gskel_scan.h"
#include "lower/skel_red.h"

#include <stdio.h>

/* Lengths per thread: a tile is GS_BLOCK * GSO_ITEMS lengths. */
#define GSO_ITEMS 8

/* (s1, n1) (+) (s2, n2): see the file comment. */
static void gso_comb(cg_fn *f, const gs_op *op, const LLVMValueRef *a, const LLVMValueRef *b,
                     LLVMValueRef *out) {
  cg_module *M = f->M;
  (void)op;
  LLVMValueRef room = LLVMBuildSub(M->b, cg_i64(M, INT64_MAX), a[0], "");
  LLVMValueRef over = LLVMBuildICmp(M->b, LLVMIntSGT, b[0], room, "");
  out[0] = LLVMBuildSelect(M->b, over, cg_i64(M, INT64_MAX), LLVMBuildAdd(M->b, a[0], b[0], ""), "");
  LLVMValueRef has = LLVMBuildICmp(M->b, LLVMIntNE, a[1], cg_i64(M, 0), "");
  out[1] = LLVMBuildSelect(M->b, has, a[1], b[1], "");
}

/* A length as a partial: (max(v, 0), min(v, 0)). */
static void gso_part(cg_fn *f, const gs_op *op, LLVMValueRef v, gs_part *out) {
  cg_module *M = f->M;
  LLVMValueRef neg = LLVMBuildICmp(M->b, LLVMIntSLT, v, cg_i64(M, 0), "");
  LLVMValueRef pv[2] = {LLVMBuildSelect(M->b, neg, cg_i64(M, 0), v, ""),
                        LLVMBuildSelect(M->b, neg, v, cg_i64(M, 0), "")};
  gs_value(f, op, pv, NULL, out);
}

/* The kernel and its launch; `rec` (two words: neg, sum) asks for the
 * pair to be stored instead of checked. */
static bool gso_offsets(lw *L, ir_ref at, const char *what, const lw_val *lens, uint32_t n_x,
                        const lw_val *replay, lw_val *offs, const uint32_t *rec) {
  cg_module *M = L->M;
  LLVMBuilderRef B = M->b;
  uint32_t nseg_x = lw_extent(L, lens, 0, 0);
  sk_scratch(L, ir_ty_scalar(L->ctx, AC_I64), lw_x_bin(L, PX_ADD, nseg_x, lw_x_const(L, 1)), at,
             offs);
  uint32_t sneg = 0, ssum = 0;
  if (!rec) {
    char fneg[120], fsum[160];
    snprintf(fneg, sizeof fneg, "%s: negative segment length %%lld", what);
    snprintf(fsum, sizeof fsum,
             "%s: segment lengths sum to %%lld but the array has %%lld elements", what);
    sneg = cg_site(M, at, fneg);
    ssum = cg_site(M, at, fsum);
  }
  LLVMTypeRef ty[2] = {M->t_i64, M->t_i64};
  gs_op op = {.n = 2, .ty = ty, .comb = gso_comb};
  const int64_t tile_len = (int64_t)GS_BLOCK * GSO_ITEMS;

  uint32_t k;
  cg_fn *f = lw_gpu_kernel_begin(L, at, "seg.offsets", GSO_ITEMS, GS_BLOCK, &k);
  gs_scratch(L, k, &op);
  cg_val lv, ov;
  lw_load(L, f, k, lens, &lv);
  lw_load(L, f, k, offs, &ov);
  LLVMValueRef n = rec ? cg_i64(M, 0) : lw_x_in_kernel(L, f, k, n_x);
  lw_gpu_guard(f);
  gs_tiles tl;
  gs_tiles_begin(f, &op, &tl);
  LLVMValueRef tile = tl.tile;
  LLVMValueRef nseg = lv.l[0].ext[0], TILE = cg_i64(M, tile_len);
  LLVMValueRef T0 = LLVMBuildMul(B, tile, TILE, "");
  LLVMValueRef tid = LLVMBuildZExt(B, simt_tid(f), M->t_i64, "");
  LLVMValueRef q0 = LLVMBuildAdd(B, T0, LLVMBuildMul(B, tid, cg_i64(M, GSO_ITEMS), ""), "");
  LLVMValueRef q1 = LLVMBuildAdd(B, q0, cg_i64(M, GSO_ITEMS), "");
  q1 = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, q1, nseg, ""), q1, nseg, "");

  /* the thread's lengths [q0, q1), folded */
  gs_var acc;
  gs_var_new(f, &op, &acc);
  gs_part e, x, cur, r;
  gs_empty(f, &op, &e);
  gs_var_store(f, &op, &acc, &e);
  cg_loop ql;
  LLVMValueRef q = cg_loop_begin(f, &ql, q0, q1);
  LLVMValueRef v = lw_cg_int64(f, cg_load_elem(f, &lv.l[0], q), (ac_scalar)lv.l[0].sc);
  gso_part(f, &op, v, &x);
  gs_var_load(f, &op, &acc, &cur);
  gs_comb(f, &op, &cur, &x, &r);
  gs_var_store(f, &op, &acc, &r);
  cg_loop_end(f, &ql);

  gs_part mine, pre, tpre, agg;
  gs_var_load(f, &op, &acc, &mine);
  gs_block_scan(f, &op, tl.scratch, tile, &mine, &pre, &tpre, &agg);

  /* the offsets of [q0, q1) from the prefix */
  sk_run_offsets(f, &lv.l[0], &ov.l[0], q0, q1,
                 LLVMBuildSelect(B, pre.valid, pre.v[0], cg_i64(M, 0), ""));

  /* the total, in the last tile (tile 0 when there are no lengths) */
  LLVMValueRef ntiles = LLVMBuildUDiv(B, LLVMBuildAdd(B, nseg, cg_i64(M, tile_len - 1), ""), TILE, "");
  LLVMValueRef last = LLVMBuildICmp(
      B, LLVMIntEQ, tile,
      LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSGT, ntiles, cg_i64(M, 0), ""),
                      LLVMBuildSub(B, ntiles, cg_i64(M, 1), ""), cg_i64(M, 0), ""),
      "");
  LLVMValueRef t0 = LLVMBuildICmp(B, LLVMIntEQ, tid, cg_i64(M, 0), "");
  /* every thread of the last tile has its prefix and aggregate: the total
   * and the verdict are block-uniform there */
  LLVMBasicBlockRef jl = sk_if(f, last);
  gs_part tot;
  gs_comb(f, &op, &tpre, &agg, &tot);
  LLVMValueRef sum = LLVMBuildSelect(B, tot.valid, tot.v[0], cg_i64(M, 0), "");
  LLVMValueRef neg = LLVMBuildSelect(B, tot.valid, tot.v[1], cg_i64(M, 0), "");
  LLVMValueRef isneg = LLVMBuildICmp(B, LLVMIntNE, neg, cg_i64(M, 0), "");
  LLVMValueRef report = NULL;
  if (replay) {
    /* lengths that fail their checks: the block computes the delayed
     * operand's elements first, so that an element's error is the one
     * reported (the interpreter computes the operand before the checks) */
    LLVMValueRef bad = LLVMBuildOr(B, isneg, LLVMBuildICmp(B, LLVMIntNE, sum, n, ""), "");
    LLVMBasicBlockRef jb = sk_if(f, bad);
    ir_type elem;
    uint32_t rank;
    ir_ty_array_view(L->ctx, replay->type, &elem, &rank);
    cg_val rv, rx;
    lw_load(L, f, k, replay, &rv);
    sk_row rr;
    sk_row_init(f, &rv, elem, 1, &rr);
    sk_row_at(f, &rr, cg_i64(M, 0));
    lw_gloop gl;
    LLVMValueRef jx = lw_gloop_begin(f, &gl, tid, n, cg_i64(M, GS_BLOCK));
    sk_row_read(f, &rr, jx, at, &rx);
    lw_gloop_end(f, &gl);
    sk_endif(f, jb);
    simt_barrier(f); /* the block's element errors are recorded */
    report = LLVMBuildNot(B, cg_failed(f), "");
  }
  LLVMBasicBlockRef j = sk_if(f, t0);
  cg_store_elem(f, &ov.l[0], nseg, sum);
  if (rec) { /* the pair, for checks made where the offsets are used */
    ir_type i64 = ir_ty_scalar(L->ctx, AC_I64);
    cg_val cv;
    for (int w = 0; w < 2; w++) {
      lw_val wv = {i64, 1, (uint32_t *)&rec[w]};
      sk_i64_val(f, w == 0 ? neg : sum, &cv);
      lw_store(L, f, k, &wv, &cv);
    }
  } else {
    LLVMBasicBlockRef jr = report ? sk_if(f, report) : NULL;
    cg_check(f, LLVMBuildNot(B, isneg, ""), sneg, neg, NULL);
    cg_check(f, LLVMBuildOr(B, isneg, LLVMBuildICmp(B, LLVMIntEQ, sum, n, ""), ""), ssum, sum,
             n);
    if (jr)
      sk_endif(f, jr);
  }
  sk_endif(f, j);
  sk_endif(f, jl);
  gs_tiles_end(f, &tl);
  lw_gpu_kernel_end(L, f, k);

  uint32_t tiles_x = lw_x_bin(L, PX_DIV, lw_x_bin(L, PX_ADD, nseg_x, lw_x_const(L, tile_len - 1)),
                              lw_x_const(L, tile_len));
  lw_launch(L, k, nseg_x, lw_x_bin(L, PX_MAX, tiles_x, lw_x_const(L, 1)));
  return M->st == AC_OK;
}

bool lw_gpu_seg_offsets(lw *L, ir_ref at, const char *what, const lw_val *lens, uint32_t n_x,
                        const lw_val *replay, lw_val *offs) {
  return gso_offsets(L, at, what, lens, n_x, replay, offs, NULL);
}

void lw_gpu_seg_offsets_ahead(lw *L, ir_ref at, const lw_val *lens, lw_val *offs, uint32_t neg,
                              uint32_t sum) {
  uint32_t rec[2] = {neg, sum};
  gso_offsets(L, at, "", lens, lw_x_const(L, 0), NULL, offs, rec);
}
