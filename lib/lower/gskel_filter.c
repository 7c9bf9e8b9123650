/* lib/lower/gskel_filter.c: filter(p, a) on GPU targets: stream compaction
 * in two passes over the input with the result allocated in between
 * (runtime/plan.h: its size is known only at run time), as the CPU
 * skeleton (skel_filter.c) does, but with the count pass a single-pass
 * scan:
 *   1. "filter.count" (one block of GS_BLOCK threads per tile of GFL_TILE
 *      elements, tiles by atomic ticket): each thread counts the kept
 *      elements among its GFL_ITEMS (thread i has elements i, i + 256, ...:
 *      coalesced reads); the block scan with decoupled look-back
 *      (gskel_lookback.c, with + on i64 counts) gives the tile's first
 *      output position, which goes to the tile-offset array, and the last
 *      tile writes the total into a frame word;
 *   2. the plan allocates the result (reading the total synchronises with
 *      the device);
 *   3. "filter.write" (the same tiles, by block index: nothing waits for
 *      anything here): p is evaluated again (it is pure, and a comparison
 *      costs less than a stored mask), each warp ballots its kept elements
 *      row by row (row i = elements i*256 .. i*256+255 of the tile), the
 *      ballots' popcounts are scanned over (row, warp) by warp 0, and each
 *      kept element is written at tile offset + its row and warp's prefix +
 *      its rank among the warp's kept lanes. Kept elements of a row land
 *      consecutively: the writes are coalesced and the order is kept.
 * This is the count / scan / move scheme of Billeter et al., "Efficient
 * stream compaction on wide SIMD many-core architectures" (2009), with the
 * scan made single-pass (Merrill & Garland 2016) and the in-tile ranks from
 * warp ballots as in CUB's DeviceSelect.
 *
 * Full tiles take a path that issues all of a thread's reads before
 * evaluating any predicate (and keeps the elements in registers between the
 * passes of the write kernel); the last, partial tile takes guarded loops.
 * Predicates that need temporary memory run the CPU skeleton through the
 * chunk adapter instead (see gskel_scan.c for why).
 */
#include "lower/gskel_scan.h"
#include "lower/skel_red.h"

#define GFL_ITEMS 16u
#define GFL_TILE ((int64_t)GS_BLOCK * GFL_ITEMS)
/* Ballot popcounts per tile: row-major (row, warp), scanned by warp 0 with
 * GFL_PER_LANE consecutive entries per lane. */
#define GFL_COUNTS (GFL_ITEMS * GS_WARPS)
#define GFL_PER_LANE (GFL_COUNTS / SIMT_WARP)

typedef struct gfl_ctx {
  lw *L;
  ir_ref e, pred;
  ir_type elem;
  gs_op op; /* + on one i64 */
  lw_val a, offs, total, out;
} gfl_ctx;

static void gfl_add(cg_fn *f, const gs_op *op, const LLVMValueRef *a, const LLVMValueRef *b,
                    LLVMValueRef *out) {
  (void)op;
  out[0] = LLVMBuildAdd(f->M->b, a[0], b[0], "");
}

/* p(x) as an i1. */
static LLVMValueRef gfl_test(cg_fn *f, const gfl_ctx *c, const cg_val *x) {
  cg_val b;
  cg_apply(f, c->pred, 1, x, &b);
  return b.l[0].v;
}

static LLVMValueRef gfl_i32(cg_module *M, uint32_t k) {
  return LLVMConstInt(M->t_i32, k, 0);
}

/* The tile's (block-uniform) first element and size; goes to block end
 * when there is no such tile (keep_empty: tile 0 of an empty array stays,
 * to write the total). */
static void gfl_tile(cg_fn *f, LLVMValueRef tile, LLVMBasicBlockRef end, bool keep_empty,
                     LLVMValueRef *T0, LLVMValueRef *cnt) {
  cg_module *M = f->M;
  LLVMBuilderRef B = M->b;
  LLVMValueRef N = f->hi, TILE = cg_i64(M, GFL_TILE);
  *T0 = LLVMBuildMul(B, tile, TILE, "T0");
  LLVMValueRef none = LLVMBuildICmp(B, LLVMIntSGE, *T0, N, "");
  if (keep_empty)
    none = LLVMBuildAnd(B, none, LLVMBuildICmp(B, LLVMIntNE, tile, cg_i64(M, 0), ""), "");
  gs_exit_if(f, end, none);
  LLVMValueRef rest = LLVMBuildSub(B, N, *T0, "");
  rest = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, rest, cg_i64(M, 0), ""), cg_i64(M, 0),
                         rest, "");
  *cnt = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, rest, TILE, ""), rest, TILE, "cnt");
}

/* Element T0 + tid + i * 256 of the input. */
static void gfl_read(cg_fn *f, const gfl_ctx *c, sk_row *row, LLVMValueRef T0, LLVMValueRef ql,
                     cg_val *x) {
  sk_row_read(f, row, LLVMBuildAdd(f->M->b, T0, ql, ""), c->e, x);
}

static LLVMValueRef gfl_ql(cg_fn *f, LLVMValueRef tid, LLVMValueRef i) {
  cg_module *M = f->M;
  return LLVMBuildAdd(M->b, tid, LLVMBuildMul(M->b, i, cg_i64(M, GS_BLOCK), ""), "ql");
}

/* ---- 1. filter.count ---- */

static uint32_t gfl_count_kernel(const gfl_ctx *c) {
  lw *L = c->L;
  cg_module *M = L->M;
  LLVMBuilderRef B = M->b;
  uint32_t k;
  cg_fn *f = lw_gpu_kernel_begin(L, c->e, "filter.count", GFL_ITEMS, GS_BLOCK, &k);
  gs_scratch(L, k, &c->op);
  cg_val av, sv;
  lw_load(L, f, k, &c->a, &av);
  lw_load(L, f, k, &c->offs, &sv);
  lw_gpu_guard(f);
  gs_tiles tl;
  gs_tiles_begin(f, &c->op, &tl);
  LLVMValueRef tile = tl.tile, T0, cnt;
  gfl_tile(f, tile, tl.fin, true, &T0, &cnt);
  LLVMValueRef tid = LLVMBuildZExt(B, simt_tid(f), M->t_i64, "tid");
  sk_row row;
  sk_row_init(f, &av, c->elem, 1, &row);
  sk_row_at(f, &row, cg_i64(M, 0));
  LLVMValueRef count = cg_alloca(f, M->t_i64);
  LLVMBuildStore(B, cg_i64(M, 0), count);

  LLVMBasicBlockRef full = cg_block(f, "count.full"), part = cg_block(f, "count.partial"),
                    done = cg_block(f, "count.done");
  LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntEQ, cnt, cg_i64(M, GFL_TILE), ""), full, part);
  LLVMPositionBuilderAtEnd(B, full);
  cg_val *xs = cg_new(M, GFL_ITEMS * sizeof *xs);
  for (uint32_t i = 0; i < GFL_ITEMS; i++)
    gfl_read(f, c, &row, T0, gfl_ql(f, tid, cg_i64(M, i)), &xs[i]);
  LLVMValueRef sum = cg_i64(M, 0);
  for (uint32_t i = 0; i < GFL_ITEMS; i++)
    sum = LLVMBuildAdd(B, sum, LLVMBuildZExt(B, gfl_test(f, c, &xs[i]), M->t_i64, ""), "");
  LLVMBuildStore(B, sum, count);
  LLVMBuildBr(B, done);

  LLVMPositionBuilderAtEnd(B, part);
  cg_loop il;
  LLVMValueRef ql = gfl_ql(f, tid, cg_loop_begin(f, &il, cg_i64(M, 0), cg_i64(M, GFL_ITEMS)));
  LLVMBasicBlockRef j1 = sk_if(f, LLVMBuildICmp(B, LLVMIntSLT, ql, cnt, ""));
  cg_val x;
  gfl_read(f, c, &row, T0, ql, &x);
  LLVMValueRef keep = LLVMBuildZExt(B, gfl_test(f, c, &x), M->t_i64, "");
  LLVMBuildStore(B, LLVMBuildAdd(B, LLVMBuildLoad2(B, M->t_i64, count, ""), keep, ""), count);
  sk_endif(f, j1);
  cg_loop_end(f, &il);
  LLVMBuildBr(B, done);
  LLVMPositionBuilderAtEnd(B, done);

  LLVMValueRef n = LLVMBuildLoad2(B, M->t_i64, count, "");
  gs_part mine, tp, agg;
  gs_value(f, &c->op, &n, NULL, &mine);
  gs_block_scan(f, &c->op, tl.scratch, tile, &mine, NULL, &tp, &agg);
  LLVMBasicBlockRef j2 = sk_if(f, LLVMBuildICmp(B, LLVMIntEQ, tid, cg_i64(M, 0), ""));
  LLVMValueRef off = LLVMBuildSelect(B, tp.valid, tp.v[0], cg_i64(M, 0), "");
  cg_store_elem(f, &sv.l[0], tile, off);
  LLVMValueRef last =
      LLVMBuildICmp(B, LLVMIntSGE, LLVMBuildAdd(B, T0, cg_i64(M, GFL_TILE), ""), f->hi, "");
  LLVMBasicBlockRef j3 = sk_if(f, last);
  cg_val tv;
  sk_i64_val(f, LLVMBuildAdd(B, off, agg.v[0], ""), &tv);
  lw_store(L, f, k, &c->total, &tv);
  sk_endif(f, j3);
  sk_endif(f, j2);
  gs_tiles_end(f, &tl);
  lw_gpu_kernel_end(L, f, k);
  return k;
}

/* ---- 3. filter.write ---- */

/* Warp 0 turns the popcounts into exclusive prefixes in place (row-major
 * order is the elements' order). */
static void gfl_scan_counts(cg_fn *f, LLVMValueRef wc) {
  cg_module *M = f->M;
  LLVMBuilderRef B = M->b;
  LLVMValueRef lane = simt_lane(f);
  LLVMBasicBlockRef j = sk_if(f, LLVMBuildICmp(B, LLVMIntEQ, simt_warp(f), gfl_i32(M, 0), ""));
  LLVMValueRef base = LLVMBuildMul(B, lane, gfl_i32(M, GFL_PER_LANE), "");
  LLVMValueRef s[GFL_PER_LANE], p[GFL_PER_LANE], sum = gfl_i32(M, 0);
  for (uint32_t k = 0; k < GFL_PER_LANE; k++) {
    LLVMValueRef ix = LLVMBuildZExt(B, LLVMBuildAdd(B, base, gfl_i32(M, k), ""), M->t_i64, "");
    p[k] = LLVMBuildGEP2(B, M->t_i32, wc, &ix, 1, "");
    s[k] = LLVMBuildLoad2(B, M->t_i32, p[k], "");
    sum = LLVMBuildAdd(B, sum, s[k], "");
  }
  LLVMValueRef incl = sum;
  for (uint32_t d = 1; d < SIMT_WARP; d *= 2) {
    LLVMValueRef y = simt_shfl(f, SIMT_SHFL_UP, incl, gfl_i32(M, d));
    LLVMValueRef ok = LLVMBuildICmp(B, LLVMIntUGE, lane, gfl_i32(M, d), "");
    incl = LLVMBuildAdd(B, incl, LLVMBuildSelect(B, ok, y, gfl_i32(M, 0), ""), "");
  }
  LLVMValueRef run = LLVMBuildSub(B, incl, sum, "");
  for (uint32_t k = 0; k < GFL_PER_LANE; k++) {
    LLVMBuildStore(B, run, p[k]);
    run = LLVMBuildAdd(B, run, s[k], "");
  }
  sk_endif(f, j);
}

/* Kept lanes below this one in a ballot. */
static LLVMValueRef gfl_rank(cg_fn *f, LLVMValueRef ballot) {
  cg_module *M = f->M;
  LLVMBuilderRef B = M->b;
  LLVMValueRef lt =
      LLVMBuildSub(B, LLVMBuildShl(B, gfl_i32(M, 1), simt_lane(f), ""), gfl_i32(M, 1), "");
  return simt_popc(f, LLVMBuildAnd(B, ballot, lt, ""));
}

/* Counts slot of row i for this warp. */
static LLVMValueRef gfl_slot(cg_fn *f, LLVMValueRef wc, LLVMValueRef i) {
  cg_module *M = f->M;
  LLVMBuilderRef B = M->b;
  LLVMValueRef ix = LLVMBuildAdd(B, LLVMBuildMul(B, i, cg_i64(M, GS_WARPS), ""),
                                 LLVMBuildZExt(B, simt_warp(f), M->t_i64, ""), "");
  return LLVMBuildGEP2(B, M->t_i32, wc, &ix, 1, "");
}

/* Row i's ballot: lane 0 records its popcount. */
static LLVMValueRef gfl_ballot(cg_fn *f, LLVMValueRef wc, LLVMValueRef i, LLVMValueRef keep) {
  cg_module *M = f->M;
  LLVMValueRef b = simt_vote(f, SIMT_VOTE_BALLOT, keep);
  LLVMBasicBlockRef j = sk_if(f, LLVMBuildICmp(M->b, LLVMIntEQ, simt_lane(f), gfl_i32(M, 0), ""));
  LLVMBuildStore(M->b, simt_popc(f, b), gfl_slot(f, wc, i));
  sk_endif(f, j);
  return b;
}

/* Stores kept element x at its place. */
static void gfl_put(cg_fn *f, const cg_val *ov, LLVMValueRef base, LLVMValueRef wc, LLVMValueRef i,
                    LLVMValueRef ballot, const cg_val *x) {
  cg_module *M = f->M;
  LLVMBuilderRef B = M->b;
  LLVMValueRef pre = LLVMBuildLoad2(B, M->t_i32, gfl_slot(f, wc, i), "");
  LLVMValueRef pos = LLVMBuildAdd(
      B, base, LLVMBuildZExt(B, LLVMBuildAdd(B, pre, gfl_rank(f, ballot), ""), M->t_i64, ""), "");
  sk_store(f, ov, pos, x);
}

static uint32_t gfl_write_kernel(const gfl_ctx *c) {
  lw *L = c->L;
  cg_module *M = L->M;
  LLVMBuilderRef B = M->b;
  uint32_t k;
  cg_fn *f = lw_gpu_kernel_begin(L, c->e, "filter.write", GFL_ITEMS, GS_BLOCK, &k);
  cg_val av, sv, ov;
  lw_load(L, f, k, &c->a, &av);
  lw_load(L, f, k, &c->offs, &sv);
  lw_load(L, f, k, &c->out, &ov);
  lw_gpu_guard(f);
  LLVMValueRef tile = LLVMBuildZExt(B, simt_ctaid(f), M->t_i64, "tile"), T0, cnt;
  LLVMBasicBlockRef end = cg_block(f, "write.end");
  gfl_tile(f, tile, end, false, &T0, &cnt);
  LLVMValueRef tid = LLVMBuildZExt(B, simt_tid(f), M->t_i64, "tid");
  LLVMValueRef base = cg_load_elem(f, &sv.l[0], tile);
  LLVMValueRef wc = simt_shared(f, M->t_i32, GFL_COUNTS, "filter.counts");
  sk_row row;
  sk_row_init(f, &av, c->elem, 1, &row);
  sk_row_at(f, &row, cg_i64(M, 0));

  LLVMBasicBlockRef full = cg_block(f, "write.full"), part = cg_block(f, "write.partial"),
                    done = cg_block(f, "write.done");
  LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntEQ, cnt, cg_i64(M, GFL_TILE), ""), full, part);

  /* Full tile: elements and ballots stay in registers across the scan. */
  LLVMPositionBuilderAtEnd(B, full);
  cg_val *xs = cg_new(M, GFL_ITEMS * sizeof *xs);
  LLVMValueRef keep[GFL_ITEMS], bal[GFL_ITEMS];
  for (uint32_t i = 0; i < GFL_ITEMS; i++)
    gfl_read(f, c, &row, T0, gfl_ql(f, tid, cg_i64(M, i)), &xs[i]);
  for (uint32_t i = 0; i < GFL_ITEMS; i++)
    keep[i] = gfl_test(f, c, &xs[i]);
  for (uint32_t i = 0; i < GFL_ITEMS; i++)
    bal[i] = gfl_ballot(f, wc, cg_i64(M, i), keep[i]);
  simt_barrier(f);
  gfl_scan_counts(f, wc);
  simt_barrier(f);
  for (uint32_t i = 0; i < GFL_ITEMS; i++) {
    LLVMBasicBlockRef j = sk_if(f, keep[i]);
    gfl_put(f, &ov, base, wc, cg_i64(M, i), bal[i], &xs[i]);
    sk_endif(f, j);
  }
  LLVMBuildBr(B, done);

  /* Partial tile: the kept bits in a mask, elements read again. */
  LLVMPositionBuilderAtEnd(B, part);
  LLVMValueRef mask = cg_alloca(f, M->t_i32), kslot = cg_alloca(f, M->t_i1);
  LLVMBuildStore(B, gfl_i32(M, 0), mask);
  cg_loop il;
  LLVMValueRef i = cg_loop_begin(f, &il, cg_i64(M, 0), cg_i64(M, GFL_ITEMS));
  LLVMValueRef ql = gfl_ql(f, tid, i);
  LLVMBuildStore(B, LLVMConstInt(M->t_i1, 0, 0), kslot);
  LLVMBasicBlockRef j1 = sk_if(f, LLVMBuildICmp(B, LLVMIntSLT, ql, cnt, ""));
  cg_val x;
  gfl_read(f, c, &row, T0, ql, &x);
  LLVMBuildStore(B, gfl_test(f, c, &x), kslot);
  sk_endif(f, j1);
  LLVMValueRef kp = LLVMBuildLoad2(B, M->t_i1, kslot, "");
  LLVMValueRef bit =
      LLVMBuildShl(B, LLVMBuildZExt(B, kp, M->t_i32, ""), LLVMBuildTrunc(B, i, M->t_i32, ""), "");
  LLVMBuildStore(B, LLVMBuildOr(B, LLVMBuildLoad2(B, M->t_i32, mask, ""), bit, ""), mask);
  gfl_ballot(f, wc, i, kp);
  cg_loop_end(f, &il);
  simt_barrier(f);
  gfl_scan_counts(f, wc);
  simt_barrier(f);
  cg_loop wl;
  i = cg_loop_begin(f, &wl, cg_i64(M, 0), cg_i64(M, GFL_ITEMS));
  LLVMValueRef m = LLVMBuildLoad2(B, M->t_i32, mask, "");
  kp = LLVMBuildTrunc(B, LLVMBuildLShr(B, m, LLVMBuildTrunc(B, i, M->t_i32, ""), ""), M->t_i1, "");
  LLVMValueRef b = simt_vote(f, SIMT_VOTE_BALLOT, kp);
  LLVMBasicBlockRef j2 = sk_if(f, kp);
  gfl_read(f, c, &row, T0, gfl_ql(f, tid, i), &x);
  gfl_put(f, &ov, base, wc, i, b, &x);
  sk_endif(f, j2);
  cg_loop_end(f, &wl);
  LLVMBuildBr(B, done);
  LLVMPositionBuilderAtEnd(B, done);
  LLVMBuildBr(B, end);
  LLVMPositionBuilderAtEnd(B, end);
  lw_gpu_kernel_end(L, f, k);
  return k;
}

bool lw_gskel_filter(lw *L, ir_ref e, lw_val *out) {
  cg_module *M = L->M;
  ac_module *m = L->m;
  gfl_ctx c = {.L = L, .e = e, .pred = ir_kid(m, e, 0)};
  uint32_t rank;
  if (cg_needs_tmp(m, c.pred))
    return lw_skel_filter(L, e, out);
  /* host side as skel_filter.c's */
  if (!lw_operand(L, e, 1, &c.a))
    return false;
  if (!ir_ty_array_view(L->ctx, c.a.type, &c.elem, &rank) || rank != 1) {
    cg_error(M, AC_ERR_INTERNAL, e, "filter of a value that is not a rank-1 array");
    return false;
  }
  lw_check_shapes(L, e, "filter", 1, &c.a);
  LLVMTypeRef i64 = M->t_i64;
  c.op = (gs_op){.n = 1, .ty = &i64, .seg = false, .comb = gfl_add, .ud = &c};
  uint32_t n_x = lw_extent(L, &c.a, 0, 0);
  uint32_t tiles = lw_x_bin(L, PX_DIV, lw_x_bin(L, PX_ADD, n_x, lw_x_const(L, GFL_TILE - 1)),
                            lw_x_const(L, GFL_TILE));
  sk_scratch(L, ir_ty_scalar(L->ctx, AC_I64), lw_x_bin(L, PX_MAX, tiles, lw_x_const(L, 1)), e,
             &c.offs);
  lw_fresh(L, ir_ty_scalar(L->ctx, AC_I64), &c.total);
  uint32_t k1 = gfl_count_kernel(&c);
  lw_launch(L, k1, n_x, tiles);
  uint32_t ext = sk_xw(L, &c.total);
  lw_fresh(L, ir_node_get(m, e)->type, out);
  lw_alloc_arrays(L, out, &ext, e);
  c.out = *out;
  uint32_t k2 = gfl_write_kernel(&c);
  lw_launch(L, k2, n_x, tiles);
  sk_free(L, &c.offs);
  return M->st == AC_OK;
}
