/* lib/lower/gskel_fold.c: fold and fold_seg on the GPU (SIMT skeletons,
 * written against codegen/simt.h; lw_gpu_skeleton picks them on GPU
 * targets).
 *
 * fold(f, z, a) reduces each row of a; fold_seg each segment of a rank-1
 * array. Both are "reduce each of R rows [lo, hi)", the row of fold_seg
 * being a segment whose bounds come from the offsets that sk_seg_offsets
 * computes with the interpreter's checks on the lengths (on GPU targets in
 * one scan kernel, gskel_segoffs.c). The host side (operands, checks,
 * result) is the CPU skeleton's (sk_fold_operands, skel_red.h). f must be
 * associative but need NOT be commutative (docs/language.md §7.4: an
 * argmax that keeps the first of equal maxima is a fine fold), so unlike
 * CUB's DeviceReduce, which asks for a commutative operator, every
 * combination here joins two ADJACENT runs, left one first. The result of a
 * row is f(z, f(a0 .. a(n-1)) regrouped): z is applied once, as the
 * interpreter's left fold does, and the CPU skeleton too.
 *
 * The building blocks (Accelerate's and CUB's block reduction, in order):
 *   - a WARP TILE is 32*K consecutive elements; lane l folds elements
 *     [l*K, l*K + K) sequentially (CUB's "blocked" arrangement: K*size is
 *     32 bytes, so a warp reads 1 KiB of contiguous memory per tile, each
 *     sector once through L1, and the K loads of a lane are independent
 *     and in flight together: with a few warps per SM scheduler that keeps
 *     the H100's ~18 KiB per SM of bandwidth-delay product in flight);
 *   - the lanes' values are combined in lane order by a shuffle-down tree
 *     with offsets 1, 2, 4, 8, 16: after the step with offset o, lane l
 *     (l a multiple of 2o) holds lanes [l, l + 2o) in order, so lane 0 ends
 *     with the whole tile; only the lanes that hold a value apply f, so f
 *     never sees garbage (it may index arrays and fail);
 *   - a warp folds a contiguous range of tiles into lane 0;
 *   - a BLOCK gives each warp an even share of contiguous tiles (the first
 *     warps one more, so the warps with work are a prefix), puts the warps'
 *     values in shared memory and warp 0 combines them by the same tree.
 * Commutative operators (the function is `|a, b| a OP b` or `b OP a` with
 * OP one of + * min max & | ^, on a scalar: cg_commutative) take the
 * STRIPED arrangement instead, as CUB's reduction does: lane l folds
 * elements l, l + 32, .., l + 32(K-1) of the warp tile, so each of the K
 * loads of a warp reads 32 consecutive elements (4 sectors per request
 * for 4-byte elements, instead of a sector per lane), and the order in
 * which elements meet no longer matters. Everything after the lanes' runs
 * (the shuffle tree, the block step, the tickets) is the same.
 * Three kernels, chosen by the plan on the row length n (fold) or the mean
 * segment length (fold_seg), as Accelerate and CUB's segmented reduction
 * choose between thread-, warp- and block-per-segment (a rank-1 fold, one
 * row, has fold.block alone, or fold.all for a commutative function, which
 * also compute a scalar epilogue of the result, lw_epilogue, in the thread
 * that stores it):
 *   fold.thread  n < 16: a thread per row (grid-stride over rows), folding
 *                from z in order: the interpreter's own association;
 *   fold.warp    n < 1024: a warp per row (grid-stride over rows);
 *   fold.block   longer rows: P blocks per row, P = max(1, min(G / R,
 *                tiles / warps)) for a grid of G blocks. With P = 1 (many
 *                rows), a block per row, grid-stride. With P > 1 (the FULL
 *                REDUCTION of a rank-1 array, or a few long rows), each of
 *                the P*R <= G blocks reduces an even share of its row's
 *                tiles into scratch, then takes a ticket on its row's
 *                counter (simt_fence, then an atomic add: the
 *                threadFenceReduction of the CUDA samples, where CUB makes
 *                a second launch); the block that draws the row's last ticket
 *                combines the row's P partials in piece order (a block-wide
 *                ordered reduction again) and stores f(z, total). One
 *                launch, no second pass;
 *   fold.all     a rank-1 fold with a commutative function: the order-free
 *                form of the same (gf_all_kernel: groups of 4 consecutive
 *                elements, 16-byte loads, grid-striped, 8 elements in
 *                flight per thread, one shuffle tree per warp), 32
 *                registers for an f32 sum where fold.block takes 63.
 * The grid is the runtime's (`chunks auto`: enough blocks for the work, at
 * most what the device holds at once), and the kernels work for any block
 * size that is a multiple of 32 (up to 1024: 32 warp slots in shared
 * memory), so the emulator's ARRAYC_SIMT_BLOCK / ARRAYC_SIMT_GRID settings
 * exercise other shapes.
 *
 * Floats: regrouping changes rounding (results within a relative 1e-5 of
 * the interpreter's on sums of same-signed terms); combining code carries
 * the reassoc flag as on the CPU. Integers, min and max are exact.
 * Runtime failures inside f: the first failing thread's error is reported
 * (the same node and message as the interpreter's; when several elements
 * would fail, possibly another one's values).
 */
#include "lower/skel.h"
#include "lower/skel_red.h"

#include "codegen/simt.h"

/* Row (mean segment) lengths below GF_THREAD_MAX: a thread per row; below
 * GF_WARP_MAX: a warp per row; otherwise blocks. */
#define GF_THREAD_MAX 16
#define GF_WARP_MAX 1024
/* Bytes a lane reads per warp tile (K elements of the widest leaf). */
#define GF_LANE_BYTES 32
#define GF_MAX_ITEMS 16
/* Elements per thread at least, sizing fold.block's grid (chunks auto): a
 * block of 256 threads gets 4096 elements or more (CUB's reduction tile
 * size), so a million elements already spread over some 250 blocks, and the
 * ticket and the combination of partials are amortised. */
#define GF_BLOCK_GRAIN 16

typedef struct gf_ctx {
  lw *L;
  ir_ref e;
  sk_fold s;
  lw_val out, offs; /* offs: fold_seg's segment offsets */
  int64_t items;    /* K: consecutive elements per lane in a warp tile */
  bool comm;        /* the function is commutative: tiles are read striped */
} gf_ctx;

/* A kernel being generated: its operands and thread indices (i64). */
typedef struct gf_k {
  const gf_ctx *c;
  lw *L;
  cg_module *M;
  cg_fn *f;
  uint32_t k;
  cg_val av, zv, ov, sv;
  sk_row r;
  LLVMValueRef rows, tid, lane, warp;
  LLVMValueRef K, TK; /* items and items * 32 */
} gf_k;

/* ---- small integer helpers (i64) ---- */

/* ceil(a / d) for a >= 0, d > 0. */
static LLVMValueRef gf_ceil_div(cg_module *M, LLVMValueRef a, LLVMValueRef d) {
  LLVMValueRef t = LLVMBuildNSWAdd(M->b, a, LLVMBuildNSWSub(M->b, d, cg_i64(M, 1), ""), "");
  return LLVMBuildUDiv(M->b, t, d, "");
}

static LLVMValueRef gf_i64(cg_module *M, LLVMValueRef v32) {
  return LLVMBuildZExt(M->b, v32, M->t_i64, "");
}

/* The even share of part i of m (m > 0) over [0, T): [i*q + min(i, r), ..
 * + q + (i < r)) with T = q*m + r. The non-empty parts are a prefix. */
static void gf_share(cg_module *M, LLVMValueRef i, LLVMValueRef m, LLVMValueRef T,
                     LLVMValueRef *s, LLVMValueRef *e) {
  LLVMValueRef q = LLVMBuildUDiv(M->b, T, m, ""), r = LLVMBuildURem(M->b, T, m, "");
  *s = LLVMBuildNSWAdd(M->b, LLVMBuildNSWMul(M->b, i, q, ""), cg_smin(M, i, r), "");
  LLVMValueRef more = LLVMBuildZExt(M->b, LLVMBuildICmp(M->b, LLVMIntSLT, i, r, ""), M->t_i64, "");
  *e = LLVMBuildNSWAdd(M->b, *s, LLVMBuildNSWAdd(M->b, q, more, ""), "");
}

static LLVMValueRef gf_is(cg_module *M, LLVMIntPredicate p, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildICmp(M->b, p, a, b, "");
}

/* ---- element code ---- */

/* Row `row`'s bounds: fold reads positions [0, n) of the row (sk_row), a
 * segment the positions [offs[row], offs[row + 1]) of the whole array. */
static void gf_range(gf_k *K, LLVMValueRef row, LLVMValueRef *lo, LLVMValueRef *hi) {
  cg_module *M = K->M;
  if (K->c->s.seg) {
    *lo = cg_load_elem(K->f, &K->sv.l[0], row);
    *hi = cg_load_elem(K->f, &K->sv.l[0], LLVMBuildNSWAdd(M->b, row, cg_i64(M, 1), ""));
    return;
  }
  sk_row_at(K->f, &K->r, row);
  *lo = cg_i64(M, 0);
  *hi = K->r.n;
}

static void gf_read(gf_k *K, LLVMValueRef j, cg_val *out) {
  sk_row_read(K->f, &K->r, j, K->c->e, out);
}

/* f(x, y), float + - * reassociable (cg.h). */
static void gf_apply(gf_k *K, const cg_val *x, const cg_val *y, cg_val *out) {
  K->f->reassoc = true;
  sk_apply2(K->f, K->c->s.fn, x, y, false, K->c->s.tmp, out);
  K->f->reassoc = false;
}

/* var = f(var, x) */
static void gf_acc(gf_k *K, cg_var *var, const cg_val *x) {
  cg_val cur, next;
  cg_var_load(K->f, var, &cur);
  gf_apply(K, &cur, x, &next);
  cg_var_store(K->f, var, &next);
}

/* var = x where `first` (i1) holds, else f(var, x): the start of a
 * running combination or its next step. */
static void gf_put(gf_k *K, cg_var *var, const cg_val *x, LLVMValueRef first) {
  cg_module *M = K->M;
  cg_fn *f = K->f;
  LLVMBasicBlockRef bset = cg_block(f, "put.first"), badd = cg_block(f, "put.next"),
                    bj = cg_block(f, "put.join");
  LLVMBuildCondBr(M->b, first, bset, badd);
  LLVMPositionBuilderAtEnd(M->b, bset);
  cg_var_store(f, var, x);
  LLVMBuildBr(M->b, bj);
  LLVMPositionBuilderAtEnd(M->b, badd);
  gf_acc(K, var, x);
  LLVMBuildBr(M->b, bj);
  LLVMPositionBuilderAtEnd(M->b, bj);
}

/* Stores row `row`'s result: the scalar of a rank-1 fold into its frame
 * words, else element row of the result arrays. */
static void gf_store(gf_k *K, LLVMValueRef row, const cg_val *x) {
  const gf_ctx *c = K->c;
  if (!c->s.seg && c->s.rank == 1)
    lw_store(K->L, K->f, K->k, &c->out, x);
  else
    sk_store(K->f, &K->ov, row, x);
}

/* var = f(..f(a[s], a[s+d]).., a[s+d(c-1)]) for c >= 1: a run of
 * consecutive elements (d = 1), or a lane's elements of a warp tile read
 * striped (d = 32, commutative functions). */
static void gf_run_by(gf_k *K, cg_var *var, LLVMValueRef s, LLVMValueRef c, int64_t d) {
  cg_module *M = K->M;
  cg_val x;
  gf_read(K, s, &x);
  cg_var_store(K->f, var, &x);
  cg_loop jl;
  LLVMValueRef i = cg_loop_begin(K->f, &jl, cg_i64(M, 1), c);
  LLVMValueRef off = d == 1 ? i : LLVMBuildNSWMul(M->b, i, cg_i64(M, d), "");
  gf_read(K, LLVMBuildNSWAdd(M->b, s, off, ""), &x);
  gf_acc(K, var, &x);
  cg_loop_end(K->f, &jl);
}

/* var = f(..f(a[s], a[s+1]).., a[e-1]) for s < e. */
static void gf_run(gf_k *K, cg_var *var, LLVMValueRef s, LLVMValueRef e) {
  gf_run_by(K, var, s, LLVMBuildNSWSub(K->M->b, e, s, ""), 1);
}

/* ---- warp and block reductions (in element order) ---- */

/* Lanes [0, cnt) of the warp hold values in var (cnt <= 32, the same in
 * every lane); afterwards lane 0 holds their combination in lane order.
 * Offsets grow (1, 2, .. 16), so every combination joins adjacent runs;
 * steps at or beyond cnt are skipped (a uniform branch). */
static void gf_warp_reduce(gf_k *K, cg_var *var, LLVMValueRef cnt) {
  cg_module *M = K->M;
  cg_fn *f = K->f;
  LLVMValueRef oslot = cg_alloca(f, M->t_i64);
  LLVMBuildStore(M->b, cg_i64(M, 1), oslot);
  LLVMBasicBlockRef head = cg_block(f, "wred.head"), body = cg_block(f, "wred.step"),
                    exit = cg_block(f, "wred.done");
  LLVMBuildBr(M->b, head);
  LLVMPositionBuilderAtEnd(M->b, head);
  LLVMValueRef o = LLVMBuildLoad2(M->b, M->t_i64, oslot, "o");
  LLVMBuildCondBr(M->b, gf_is(M, LLVMIntSLT, o, cnt), body, exit);
  LLVMPositionBuilderAtEnd(M->b, body);
  cg_val cur, y;
  cg_var_load(f, var, &cur);
  cg_val_alloc(M, cur.type, &y);
  LLVMValueRef o32 = LLVMBuildTrunc(M->b, o, M->t_i32, "");
  for (uint32_t i = 0; i < cur.n; i++)
    y.l[i].v = simt_shfl(f, SIMT_SHFL_DOWN, cur.l[i].v, o32);
  LLVMValueRef o2 = LLVMBuildShl(M->b, o, cg_i64(M, 1), "");
  LLVMValueRef head_lane = gf_is(
      M, LLVMIntEQ, LLVMBuildAnd(M->b, K->lane, LLVMBuildSub(M->b, o2, cg_i64(M, 1), ""), ""),
      cg_i64(M, 0));
  LLVMValueRef has = gf_is(M, LLVMIntSLT, LLVMBuildNSWAdd(M->b, K->lane, o, ""), cnt);
  LLVMBasicBlockRef join = sk_if(f, LLVMBuildAnd(M->b, head_lane, has, ""));
  cg_val next;
  gf_apply(K, &cur, &y, &next);
  cg_var_store(f, var, &next);
  sk_endif(f, join);
  LLVMBuildStore(M->b, o2, oslot);
  LLVMBuildBr(M->b, head);
  LLVMPositionBuilderAtEnd(M->b, exit);
}

/* lv = x if the lane has no value yet (*has false), else f(lv, x); then
 * the lane has one. */
static void gf_lane_merge(gf_k *K, cg_var *lv, cg_var *x, LLVMValueRef has) {
  cg_module *M = K->M;
  cg_val v;
  cg_var_load(K->f, x, &v);
  gf_put(K, lv, &v, LLVMBuildNot(M->b, LLVMBuildLoad2(M->b, M->t_i1, has, ""), ""));
  LLVMBuildStore(M->b, LLVMConstInt(M->t_i1, 1, 0), has);
}

/* gf_warp_tiles for commutative functions: lane l folds its striped
 * elements (l, l + 32, .. of each tile) of ALL the tiles [t0, t1) into a
 * value of its own, and the warp combines its lanes once, at the end, as
 * CUB's reduction does (thread-private partials, then one shuffle tree),
 * rather than once per tile: a tile then costs its loads and applications
 * and a few instructions of index arithmetic, not a shuffle tree. The
 * lanes with a value are a prefix: all 32 when any tile is full (only
 * the row's last tile can be partial), else those that start inside the
 * one partial tile. */
static void gf_warp_tiles_striped(gf_k *K, LLVMValueRef lo, LLVMValueRef hi, LLVMValueRef t0,
                                  LLVMValueRef t1, cg_var *acc) {
  cg_module *M = K->M;
  cg_fn *f = K->f;
  LLVMValueRef has = cg_alloca(f, M->t_i1);
  LLVMBuildStore(M->b, LLVMConstInt(M->t_i1, 0, 0), has);
  cg_var lv, tv;
  cg_var_new(f, K->c->s.elem, &lv);
  cg_var_new(f, K->c->s.elem, &tv);
  cg_loop tl;
  LLVMValueRef t = cg_loop_begin(f, &tl, t0, t1);
  LLVMValueRef s = LLVMBuildNSWAdd(M->b, lo, LLVMBuildNSWMul(M->b, t, K->TK, ""), "");
  LLVMValueRef e = cg_smin(M, LLVMBuildNSWAdd(M->b, s, K->TK, ""), hi);
  LLVMValueRef sl = LLVMBuildNSWAdd(M->b, s, K->lane, ""); /* the lane's first */
  LLVMValueRef full = gf_is(M, LLVMIntEQ, LLVMBuildNSWSub(M->b, e, s, ""), K->TK);
  LLVMBasicBlockRef bfull = cg_block(f, "tile.full"), bpart = cg_block(f, "tile.part"),
                    join = cg_block(f, "tile.next");
  LLVMBuildCondBr(M->b, full, bfull, bpart);
  LLVMPositionBuilderAtEnd(M->b, bfull);
  gf_run_by(K, &tv, sl, K->K, SIMT_WARP);
  gf_lane_merge(K, &lv, &tv, has);
  LLVMBuildBr(M->b, join);
  /* the row's last tile: lanes [0, min(len, 32)) have elements */
  LLVMPositionBuilderAtEnd(M->b, bpart);
  LLVMBasicBlockRef pj = sk_if(f, gf_is(M, LLVMIntSLT, sl, e));
  gf_run_by(K, &tv, sl, gf_ceil_div(M, LLVMBuildNSWSub(M->b, e, sl, ""), cg_i64(M, SIMT_WARP)),
            SIMT_WARP);
  gf_lane_merge(K, &lv, &tv, has);
  sk_endif(f, pj);
  LLVMBuildBr(M->b, join);
  LLVMPositionBuilderAtEnd(M->b, join);
  cg_loop_end(f, &tl);
  /* the lanes holding values: min(32, elements of tiles [t0, t1)) */
  LLVMValueRef s0 = LLVMBuildNSWAdd(M->b, lo, LLVMBuildNSWMul(M->b, t0, K->TK, ""), "");
  LLVMValueRef e1 =
      cg_smin(M, LLVMBuildNSWAdd(M->b, lo, LLVMBuildNSWMul(M->b, t1, K->TK, ""), ""), hi);
  LLVMValueRef cnt =
      cg_smin(M, cg_smax(M, LLVMBuildNSWSub(M->b, e1, s0, ""), cg_i64(M, 0)), cg_i64(M, SIMT_WARP));
  gf_warp_reduce(K, &lv, cnt);
  LLVMValueRef lane0 = gf_is(M, LLVMIntEQ, K->lane, cg_i64(M, 0));
  LLVMBasicBlockRef lj = sk_if(f, LLVMBuildAnd(M->b, lane0, gf_is(M, LLVMIntSGT, cnt, cg_i64(M, 0)), ""));
  cg_val x;
  cg_var_load(f, &lv, &x);
  cg_var_store(f, acc, &x);
  sk_endif(f, lj);
}

/* The warp folds tiles [t0, t1) of the row [lo, hi) into lane 0 of acc
 * (left unset when t0 >= t1). Uniform per warp; no barrier. */
static void gf_warp_tiles(gf_k *K, LLVMValueRef lo, LLVMValueRef hi, LLVMValueRef t0,
                          LLVMValueRef t1, cg_var *acc) {
  if (K->c->comm) {
    gf_warp_tiles_striped(K, lo, hi, t0, t1, acc);
    return;
  }
  cg_module *M = K->M;
  cg_fn *f = K->f;
  LLVMValueRef first = cg_alloca(f, M->t_i1);
  LLVMBuildStore(M->b, LLVMConstInt(M->t_i1, 1, 0), first);
  cg_var lv;
  cg_var_new(f, K->c->s.elem, &lv);
  cg_loop tl;
  LLVMValueRef t = cg_loop_begin(f, &tl, t0, t1);
  LLVMValueRef s = LLVMBuildNSWAdd(M->b, lo, LLVMBuildNSWMul(M->b, t, K->TK, ""), "");
  LLVMValueRef e = cg_smin(M, LLVMBuildNSWAdd(M->b, s, K->TK, ""), hi);
  LLVMValueRef ls = LLVMBuildNSWAdd(M->b, s, LLVMBuildNSWMul(M->b, K->lane, K->K, ""), "");
  LLVMValueRef len = LLVMBuildNSWSub(M->b, e, s, "");
  LLVMValueRef full = gf_is(M, LLVMIntEQ, len, K->TK);
  LLVMBasicBlockRef bfull = cg_block(f, "tile.full"), bpart = cg_block(f, "tile.part"),
                    join = cg_block(f, "tile.reduce");
  LLVMBuildCondBr(M->b, full, bfull, bpart);
  /* a whole tile: K elements per lane, a constant trip count */
  LLVMPositionBuilderAtEnd(M->b, bfull);
  gf_run(K, &lv, ls, LLVMBuildNSWAdd(M->b, ls, K->K, ""));
  LLVMBuildBr(M->b, join);
  /* the row's last tile: the lanes that start inside it */
  LLVMPositionBuilderAtEnd(M->b, bpart);
  LLVMValueRef le = cg_smin(M, LLVMBuildNSWAdd(M->b, ls, K->K, ""), e);
  LLVMBasicBlockRef pj = sk_if(f, gf_is(M, LLVMIntSLT, ls, le));
  gf_run(K, &lv, ls, le);
  sk_endif(f, pj);
  LLVMBuildBr(M->b, join);
  LLVMPositionBuilderAtEnd(M->b, join);
  LLVMValueRef cnt = LLVMBuildSelect(M->b, full, cg_i64(M, SIMT_WARP), gf_ceil_div(M, len, K->K), "");
  gf_warp_reduce(K, &lv, cnt);
  LLVMBasicBlockRef lj = sk_if(f, gf_is(M, LLVMIntEQ, K->lane, cg_i64(M, 0)));
  cg_val tv;
  cg_var_load(f, &lv, &tv);
  gf_put(K, acc, &tv, LLVMBuildLoad2(M->b, M->t_i1, first, ""));
  sk_endif(f, lj);
  LLVMBuildStore(M->b, LLVMConstInt(M->t_i1, 0, 0), first);
  cg_loop_end(f, &tl);
}

/* Shared memory for a block's 32 warp values, one array per leaf (as a
 * value of manifest leaves, for sk_load / sk_store). */
static void gf_smem(gf_k *K, cg_val *out) {
  cg_val_alloc(K->M, K->c->s.elem, out);
  for (uint32_t i = 0; i < out->n; i++) {
    out->l[i].kind = CL_ARRAY;
    out->l[i].rank = 1;
    out->l[i].v = simt_shared(K->f, cg_mem_type(K->M, (ac_scalar)out->l[i].sc), SIMT_WARP,
                              "fold.warps");
  }
}

/* Lane 0 of warps [0, nw) holds values in acc (nw <= warps of the block,
 * block-uniform); afterwards thread 0 holds their combination in warp
 * order. Every thread of the block must call it (two barriers). */
static void gf_block_combine(gf_k *K, const cg_val *smem, cg_var *acc, LLVMValueRef nw) {
  cg_module *M = K->M;
  cg_fn *f = K->f;
  LLVMValueRef lane0 = gf_is(M, LLVMIntEQ, K->lane, cg_i64(M, 0));
  LLVMBasicBlockRef j = sk_if(f, LLVMBuildAnd(M->b, lane0, gf_is(M, LLVMIntSLT, K->warp, nw), ""));
  cg_val x;
  cg_var_load(f, acc, &x);
  sk_store(f, smem, K->warp, &x);
  sk_endif(f, j);
  simt_barrier(f);
  j = sk_if(f, gf_is(M, LLVMIntEQ, K->warp, cg_i64(M, 0)));
  LLVMBasicBlockRef lj = sk_if(f, gf_is(M, LLVMIntSLT, K->lane, nw));
  sk_load(f, smem, K->c->s.elem, K->lane, &x);
  cg_var_store(f, acc, &x);
  sk_endif(f, lj);
  gf_warp_reduce(K, acc, nw);
  sk_endif(f, j);
  simt_barrier(f); /* the slots may be written again */
}

/* ---- kernels ---- */

/* Begins kernel `kind` and loads its operands. With `guard`, the
 * block-uniform failure check (kernels with barriers or warp operations);
 * else each thread leaves by itself. */
static cg_fn *gf_begin(const gf_ctx *c, gf_k *K, const char *kind, int64_t grain, bool guard) {
  lw *L = c->L;
  cg_module *M = L->M;
  *K = (gf_k){.c = c, .L = L, .M = M};
  cg_fn *f = K->f = lw_gpu_kernel_begin(L, lw_epilogue_at(L, c->e), kind, grain, 0, &K->k);
  if (guard) {
    lw_gpu_guard(f);
  } else {
    lw_gpu_leave_if_failed(f);
  }
  f->frame_ro = true; /* the folded array: the kernel writes scratch and results only */
  lw_load(L, f, K->k, &c->s.a, &K->av);
  f->frame_ro = false;
  lw_load(L, f, K->k, &c->s.z, &K->zv);
  if (c->s.seg || c->s.rank > 1)
    lw_load(L, f, K->k, &c->out, &K->ov);
  if (c->s.seg)
    lw_load(L, f, K->k, &c->offs, &K->sv);
  sk_row_init(f, &K->av, c->s.elem, c->s.rank, &K->r);
  if (c->s.seg)
    sk_row_at(f, &K->r, cg_i64(M, 0)); /* segments index the whole array */
  K->rows = lw_x_in_kernel(L, f, K->k, c->s.rows_x);
  K->tid = gf_i64(M, simt_tid(f));
  K->lane = gf_i64(M, simt_lane(f));
  K->warp = gf_i64(M, simt_warp(f));
  K->K = cg_i64(M, c->items);
  K->TK = cg_i64(M, c->items * SIMT_WARP);
  return f;
}

/* "fold.thread": thread g folds rows g, g + G, .. from z, in order. */
static uint32_t gf_thread_kernel(const gf_ctx *c) {
  gf_k K;
  cg_fn *f = gf_begin(c, &K, "fold.thread", 1, false);
  cg_module *M = K.M;
  cg_var acc;
  cg_var_new(f, c->s.elem, &acc);
  LLVMValueRef rslot = cg_alloca(f, M->t_i64);
  LLVMBuildStore(M->b, simt_gtid(f), rslot);
  LLVMBasicBlockRef head = cg_block(f, "rows.head"), body = cg_block(f, "rows.body"),
                    exit = cg_block(f, "rows.exit");
  LLVMBuildBr(M->b, head);
  LLVMPositionBuilderAtEnd(M->b, head);
  LLVMValueRef row = LLVMBuildLoad2(M->b, M->t_i64, rslot, "row");
  LLVMBuildCondBr(M->b, gf_is(M, LLVMIntSLT, row, K.rows), body, exit);
  LLVMPositionBuilderAtEnd(M->b, body);
  LLVMValueRef lo, hi;
  gf_range(&K, row, &lo, &hi);
  cg_var_store(f, &acc, &K.zv);
  cg_loop jl;
  LLVMValueRef j = cg_loop_begin(f, &jl, lo, hi);
  cg_val x;
  gf_read(&K, j, &x);
  gf_acc(&K, &acc, &x);
  cg_loop_end(f, &jl);
  cg_var_load(f, &acc, &x);
  gf_store(&K, row, &x);
  LLVMBuildStore(M->b, LLVMBuildNUWAdd(M->b, row, simt_gsize(f), ""), rslot);
  LLVMBuildBr(M->b, head);
  LLVMPositionBuilderAtEnd(M->b, exit);
  lw_gpu_kernel_end(c->L, f, K.k);
  return K.k;
}

/* Thread 0 (or lane 0): the row's result, f(z, total) or z for an empty
 * row, stored. */
static void gf_finish_row(gf_k *K, LLVMValueRef row, cg_var *tot, LLVMValueRef valid) {
  cg_fn *f = K->f;
  cg_var res;
  cg_var_new(f, K->c->s.elem, &res);
  cg_var_store(f, &res, &K->zv);
  LLVMBasicBlockRef j = sk_if(f, valid);
  cg_val x;
  cg_var_load(f, tot, &x);
  gf_acc(K, &res, &x);
  sk_endif(f, j);
  cg_var_load(f, &res, &x);
  gf_store(K, row, &x);
  /* a full reduction's scalar epilogue (fold.block only, see gf_lower) */
  if (!K->c->s.seg && K->c->s.rank == 1 && lw_epilogue_wanted(K->L, K->c->e))
    lw_epilogue(K->L, f, K->k, &x);
}

/* "fold.warp": warp w of W folds rows w, w + W, .. by warp tiles. */
static uint32_t gf_warp_kernel(const gf_ctx *c) {
  gf_k K;
  cg_fn *f = gf_begin(c, &K, "fold.warp", 1, true);
  cg_module *M = K.M;
  cg_var acc;
  cg_var_new(f, c->s.elem, &acc);
  LLVMValueRef w32 = cg_i64(M, SIMT_WARP);
  LLVMValueRef rslot = cg_alloca(f, M->t_i64);
  LLVMBuildStore(M->b, LLVMBuildUDiv(M->b, simt_gtid(f), w32, ""), rslot);
  LLVMValueRef nwarps = LLVMBuildUDiv(M->b, simt_gsize(f), w32, "");
  LLVMBasicBlockRef head = cg_block(f, "rows.head"), body = cg_block(f, "rows.body"),
                    exit = cg_block(f, "rows.exit");
  LLVMBuildBr(M->b, head);
  LLVMPositionBuilderAtEnd(M->b, head);
  LLVMValueRef row = LLVMBuildLoad2(M->b, M->t_i64, rslot, "row");
  LLVMBuildCondBr(M->b, gf_is(M, LLVMIntSLT, row, K.rows), body, exit);
  LLVMPositionBuilderAtEnd(M->b, body);
  LLVMValueRef lo, hi;
  gf_range(&K, row, &lo, &hi);
  LLVMValueRef T = gf_ceil_div(M, LLVMBuildNSWSub(M->b, hi, lo, ""), K.TK);
  gf_warp_tiles(&K, lo, hi, cg_i64(M, 0), T, &acc);
  LLVMBasicBlockRef j = sk_if(f, gf_is(M, LLVMIntEQ, K.lane, cg_i64(M, 0)));
  gf_finish_row(&K, row, &acc, gf_is(M, LLVMIntSGT, T, cg_i64(M, 0)));
  sk_endif(f, j);
  LLVMBuildStore(M->b, LLVMBuildNUWAdd(M->b, row, nwarps, ""), rslot);
  LLVMBuildBr(M->b, head);
  LLVMPositionBuilderAtEnd(M->b, exit);
  lw_gpu_kernel_end(c->L, f, K.k);
  return K.k;
}

/* A leaf's slot `i` in a scratch region of 8-byte slots at base (for
 * volatile access: other blocks wrote it). */
static LLVMValueRef gf_slot(cg_module *M, LLVMValueRef base, LLVMValueRef i) {
  return LLVMBuildInBoundsGEP2(M->b, M->t_i64, base, &i, 1, "");
}

/* The last block of row `row`: thread t folds an even share of the row's vp
 * valid partials (pieces [0, vp) at part[row * P ..]), then the block
 * combines the threads' values in order; thread 0 gets them in acc. */
static void gf_last_block(gf_k *K, const cg_val *smem, LLVMValueRef *part, LLVMValueRef first,
                          LLVMValueRef vp, cg_var *acc) {
  cg_module *M = K->M;
  cg_fn *f = K->f;
  LLVMValueRef nt = gf_i64(M, simt_ntid(f)), q0, q1;
  gf_share(M, K->tid, nt, vp, &q0, &q1);
  LLVMBasicBlockRef j = sk_if(f, gf_is(M, LLVMIntSLT, q0, q1));
  cg_loop ql;
  LLVMValueRef q = cg_loop_begin(f, &ql, q0, q1);
  LLVMValueRef at = LLVMBuildNSWAdd(M->b, first, q, "");
  cg_val x;
  cg_val_alloc(M, K->c->s.elem, &x);
  for (uint32_t i = 0; i < x.n; i++) {
    ac_scalar sc = (ac_scalar)x.l[i].sc;
    LLVMValueRef v = simt_load_volatile(f, cg_mem_type(M, sc), gf_slot(M, part[i], at));
    x.l[i].v = sc == AC_BOOL ? gf_is(M, LLVMIntNE, v, LLVMConstInt(M->t_i8, 0, 0)) : v;
  }
  gf_put(K, acc, &x, gf_is(M, LLVMIntEQ, q, q0));
  cg_loop_end(f, &ql);
  sk_endif(f, j);
  /* threads [0, min(nt, vp)) hold values: a prefix */
  LLVMValueRef vt = cg_smin(M, nt, vp), w32 = cg_i64(M, SIMT_WARP);
  LLVMValueRef wc = LLVMBuildNSWSub(M->b, vt, LLVMBuildNSWMul(M->b, K->warp, w32, ""), "");
  gf_warp_reduce(K, acc, cg_smin(M, cg_smax(M, wc, cg_i64(M, 0)), w32));
  gf_block_combine(K, smem, acc, gf_ceil_div(M, vt, w32));
}

/* What fold.block and fold.all share: the block's shared slots for its
 * warps' values, the last-block flag, and the scratch: one i64 ticket
 * counter per row (at most G), then per leaf G partial slots of 8 bytes;
 * G is the grid. */
typedef struct gf_blocks {
  cg_val smem;
  LLVMValueRef flag, scratch, G;
  LLVMValueRef *part; /* per leaf, its G slots */
} gf_blocks;

static cg_fn *gf_begin_blocks(const gf_ctx *c, gf_k *K, const char *kind, gf_blocks *b) {
  cg_fn *f = gf_begin(c, K, kind, GF_BLOCK_GRAIN, true);
  cg_module *M = K->M;
  gf_smem(K, &b->smem);
  b->flag = simt_shared(f, M->t_i32, 1, "fold.last");
  uint32_t nleaves = b->smem.n;
  lw_gpu_scratch(K->L, K->k, 0, 8 * ((uint64_t)nleaves + 1));
  lw_gpu_counters(K->L, K->k, 0, 8); /* the row counters: gf_ticket resets them */
  b->G = gf_i64(M, simt_nctaid(f));
  b->scratch = lw_gpu_scratch_ptr(f);
  b->part = cg_new(M, (nleaves + 1) * sizeof *b->part);
  for (uint32_t i = 0; i < nleaves; i++)
    b->part[i] = gf_slot(M, b->scratch, LLVMBuildNSWMul(M->b, b->G, cg_i64(M, i + 1), ""));
  return f;
}

/* Thread 0 publishes the block's value in acc as partial `unit` (when
 * `valid`), then takes a ticket on the counter of `row` (simt_fence, then
 * an atomic add: the CUDA samples' threadFenceReduction), and the block
 * that draws the last ticket resets the counter; every thread of the
 * block calls it (one barrier) and gets the block-uniform i1 "this block
 * drew the last of the row's P tickets". */
static LLVMValueRef gf_ticket(gf_k *K, const gf_blocks *b, cg_var *acc, LLVMValueRef valid,
                              LLVMValueRef unit, LLVMValueRef row, LLVMValueRef P) {
  cg_module *M = K->M;
  cg_fn *f = K->f;
  LLVMValueRef one = cg_i64(M, 1);
  LLVMBasicBlockRef tj = sk_if(f, gf_is(M, LLVMIntEQ, K->tid, cg_i64(M, 0)));
  LLVMBasicBlockRef vj = sk_if(f, valid);
  cg_val x;
  cg_var_load(f, acc, &x);
  for (uint32_t i = 0; i < x.n; i++) {
    ac_scalar sc = (ac_scalar)x.l[i].sc;
    LLVMValueRef v = sc == AC_BOOL ? LLVMBuildZExt(M->b, x.l[i].v, M->t_i8, "") : x.l[i].v;
    LLVMBuildStore(M->b, v, gf_slot(M, b->part[i], unit));
  }
  sk_endif(f, vj);
  simt_fence(f);
  LLVMValueRef ticket = simt_atomic(f, LLVMAtomicRMWBinOpAdd, gf_slot(M, b->scratch, row), one);
  LLVMValueRef last = gf_is(M, LLVMIntEQ, ticket, LLVMBuildNSWSub(M->b, P, one, ""));
  /* every block of the row has drawn its ticket: the counter goes back to
   * zero for the next launch, which then needs no memset (`counters`) */
  LLVMBasicBlockRef lj = sk_if(f, last);
  simt_atomic_relaxed(f, LLVMAtomicRMWBinOpXchg, gf_slot(M, b->scratch, row), cg_i64(M, 0));
  sk_endif(f, lj);
  LLVMBuildStore(M->b, LLVMBuildZExt(M->b, last, M->t_i32, ""), b->flag);
  sk_endif(f, tj);
  simt_barrier(f);
  return gf_is(M, LLVMIntNE, LLVMBuildLoad2(M->b, M->t_i32, b->flag, ""),
               LLVMConstInt(M->t_i32, 0, 0));
}

/* "fold.block": see the file comment. Scratch: R <= G row counters (i64),
 * then per leaf G partial slots of 8 bytes; G is the grid. */
static uint32_t gf_block_kernel(const gf_ctx *c) {
  gf_k K;
  gf_blocks bl;
  cg_fn *f = gf_begin_blocks(c, &K, "fold.block", &bl);
  cg_module *M = K.M;
  LLVMValueRef one = cg_i64(M, 1), zero = cg_i64(M, 0), w32 = cg_i64(M, SIMT_WARP);
  LLVMValueRef G = bl.G, nw = LLVMBuildUDiv(M->b, gf_i64(M, simt_ntid(f)), w32, "");

  /* P pieces per row: enough blocks for all of them, a few tiles per warp */
  LLVMValueRef R1 = cg_smax(M, K.rows, one);
  LLVMValueRef meanlen;
  if (c->s.seg)
    meanlen = LLVMBuildUDiv(M->b, cg_smax(M, K.r.n, zero), R1, "");
  else
    meanlen = K.r.n;
  LLVMValueRef tiles = gf_ceil_div(M, meanlen, K.TK);
  LLVMValueRef P = cg_smax(
      M, one, cg_smin(M, LLVMBuildUDiv(M->b, G, R1, ""), LLVMBuildUDiv(M->b, tiles, nw, "")));
  LLVMValueRef units = LLVMBuildNSWMul(M->b, P, K.rows, "");
  LLVMValueRef multi = gf_is(M, LLVMIntSGT, P, one);

  cg_var acc;
  cg_var_new(f, c->s.elem, &acc);
  LLVMValueRef valid = cg_alloca(f, M->t_i1), store = cg_alloca(f, M->t_i1);
  LLVMValueRef uslot = cg_alloca(f, M->t_i64);
  LLVMBuildStore(M->b, gf_i64(M, simt_ctaid(f)), uslot);
  LLVMBasicBlockRef head = cg_block(f, "units.head"), body = cg_block(f, "units.body"),
                    exit = cg_block(f, "units.exit");
  LLVMBuildBr(M->b, head);
  LLVMPositionBuilderAtEnd(M->b, head);
  LLVMValueRef u = LLVMBuildLoad2(M->b, M->t_i64, uslot, "unit");
  LLVMBuildCondBr(M->b, gf_is(M, LLVMIntSLT, u, units), body, exit);
  LLVMPositionBuilderAtEnd(M->b, body);
  /* one row (a rank-1 fold): units are pieces of row 0, no division */
  bool one_row = !c->s.seg && c->s.rank == 1;
  LLVMValueRef row = one_row ? cg_i64(M, 0) : LLVMBuildUDiv(M->b, u, P, "row");
  LLVMValueRef p = one_row ? u : LLVMBuildURem(M->b, u, P, "piece");
  LLVMValueRef lo, hi, pt0, pt1, wt0, wt1;
  gf_range(&K, row, &lo, &hi);
  LLVMValueRef T = gf_ceil_div(M, LLVMBuildNSWSub(M->b, hi, lo, ""), K.TK);
  gf_share(M, p, P, T, &pt0, &pt1);
  LLVMValueRef pT = LLVMBuildNSWSub(M->b, pt1, pt0, "");
  gf_share(M, K.warp, nw, pT, &wt0, &wt1);
  gf_warp_tiles(&K, lo, hi, LLVMBuildNSWAdd(M->b, pt0, wt0, ""), LLVMBuildNSWAdd(M->b, pt0, wt1, ""),
                &acc);
  gf_block_combine(&K, &bl.smem, &acc, cg_smin(M, nw, pT));
  LLVMBuildStore(M->b, gf_is(M, LLVMIntSGT, pT, zero), valid);
  LLVMBuildStore(M->b, LLVMConstInt(M->t_i1, 1, 0), store);

  /* P > 1: publish the piece's partial, take a ticket; the last block of
   * the row combines the partials (block-uniform branches) */
  LLVMValueRef t0 = gf_is(M, LLVMIntEQ, K.tid, zero);
  LLVMBasicBlockRef mj = sk_if(f, multi);
  LLVMValueRef lastb = gf_ticket(&K, &bl, &acc, gf_is(M, LLVMIntSGT, pT, zero), u, row, P);
  LLVMBuildStore(M->b, lastb, store);
  LLVMBasicBlockRef lj = sk_if(f, lastb);
  simt_fence(f);
  LLVMValueRef vp = cg_smin(M, P, T);
  gf_last_block(&K, &bl.smem, bl.part, LLVMBuildNSWMul(M->b, row, P, ""), vp, &acc);
  LLVMBuildStore(M->b, gf_is(M, LLVMIntSGT, vp, zero), valid);
  sk_endif(f, lj);
  sk_endif(f, mj);

  LLVMValueRef doit = LLVMBuildAnd(M->b, t0, LLVMBuildLoad2(M->b, M->t_i1, store, ""), "");
  LLVMBasicBlockRef sj = sk_if(f, doit);
  gf_finish_row(&K, row, &acc, LLVMBuildLoad2(M->b, M->t_i1, valid, ""));
  sk_endif(f, sj);
  LLVMBuildStore(M->b, LLVMBuildNUWAdd(M->b, u, G, ""), uslot);
  LLVMBuildBr(M->b, head);
  LLVMPositionBuilderAtEnd(M->b, exit);
  lw_gpu_kernel_end(c->L, f, K.k);
  return K.k;
}

/* "fold.all": a rank-1 fold whose function is commutative (cg_commutative)
 * reduces the whole array in the order-free way of CUB's reduction, with
 * less machinery than fold.block (which must keep rows and pieces in
 * order): thread t of the grid folds groups of 4 consecutive elements, t,
 * t + S, t + 2S, .. (S the grid's threads), two groups at a time, so that
 * each thread has 8 elements in flight in two 16-byte loads and every warp
 * instruction reads 512 consecutive bytes (CUB's vectorised loads); the
 * warp combines its lanes once (those that had elements are a prefix), the
 * block its warps, and each block publishes its value as fold.block's
 * pieces do: the block that draws the last ticket combines the blocks'
 * values and stores f(z, total) (z alone for an empty array). Scratch as
 * fold.block's with one row. */
static uint32_t gf_all_kernel(const gf_ctx *c) {
  gf_k K;
  gf_blocks bl;
  cg_fn *f = gf_begin_blocks(c, &K, "fold.all", &bl);
  cg_module *M = K.M;
  LLVMBuilderRef B = M->b;
  LLVMValueRef zero = cg_i64(M, 0), w32 = cg_i64(M, SIMT_WARP);
  LLVMValueRef G = bl.G, nt = gf_i64(M, simt_ntid(f));
  LLVMValueRef nw = LLVMBuildUDiv(B, nt, w32, "");
  LLVMValueRef lo, hi;
  gf_range(&K, zero, &lo, &hi); /* lo is 0 */
  LLVMValueRef gtid = simt_gtid(f), gs = simt_gsize(f);

  /* The thread's elements: groups of 4 consecutive elements (group g is
   * elements 4g .. 4g+3; their reads sit side by side, where NVPTX's
   * load-store vectoriser makes one 16-byte load of them, as in the
   * element-wise kernels' vector groups), groups gtid, gtid + S, ..; two
   * groups per iteration while two remain (8 elements in flight), then
   * one; then the rem = hi % 4 elements after the last group, one each
   * for threads gtid < rem. */
  LLVMValueRef four = cg_i64(M, 4);
  LLVMValueRef ngroups = LLVMBuildSDiv(B, cg_smax(M, hi, zero), four, "groups");
  LLVMValueRef rem = LLVMBuildNSWSub(B, hi, LLVMBuildNSWMul(B, ngroups, four, ""), "rem");
  LLVMValueRef has = cg_alloca(f, M->t_i1);
  LLVMBuildStore(B, LLVMConstInt(M->t_i1, 0, 0), has);
  cg_var lv, tv;
  cg_var_new(f, c->s.elem, &lv);
  cg_var_new(f, c->s.elem, &tv);
  LLVMValueRef gslot = cg_alloca(f, M->t_i64);
  LLVMBuildStore(B, gtid, gslot);
  LLVMBasicBlockRef h2 = cg_block(f, "all.head2"), b2 = cg_block(f, "all.two"),
                    h1 = cg_block(f, "all.head1"), b1 = cg_block(f, "all.one"),
                    tail = cg_block(f, "all.tail"), done = cg_block(f, "all.done");
  LLVMBuildBr(B, h2);
  LLVMPositionBuilderAtEnd(B, h2);
  LLVMValueRef g2 = LLVMBuildLoad2(B, M->t_i64, gslot, "g");
  LLVMBuildCondBr(B, gf_is(M, LLVMIntSLT, LLVMBuildNSWAdd(B, g2, gs, ""), ngroups), b2, h1);
  LLVMPositionBuilderAtEnd(B, b2);
  cg_val x[8], y[8];
  LLVMValueRef e0 = LLVMBuildNSWMul(B, g2, four, "");
  LLVMValueRef e1 = LLVMBuildNSWMul(B, LLVMBuildNSWAdd(B, g2, gs, ""), four, "");
  for (int k = 0; k < 8; k++)
    gf_read(&K, LLVMBuildNSWAdd(B, k < 4 ? e0 : e1, cg_i64(M, k % 4), ""), &x[k]);
  /* a balanced tree: (x0 x1)(x2 x3), (x4 x5)(x6 x7) */
  for (int k = 0; k < 4; k++)
    gf_apply(&K, &x[2 * k], &x[2 * k + 1], &y[k]);
  gf_apply(&K, &y[0], &y[1], &y[4]);
  gf_apply(&K, &y[2], &y[3], &y[5]);
  gf_apply(&K, &y[4], &y[5], &y[6]);
  cg_var_store(f, &tv, &y[6]);
  gf_lane_merge(&K, &lv, &tv, has);
  LLVMBuildStore(B, LLVMBuildNSWAdd(B, g2, LLVMBuildNSWMul(B, gs, cg_i64(M, 2), ""), ""), gslot);
  LLVMBuildBr(B, h2);
  LLVMPositionBuilderAtEnd(B, h1);
  LLVMValueRef g1 = LLVMBuildLoad2(B, M->t_i64, gslot, "g");
  LLVMBuildCondBr(B, gf_is(M, LLVMIntSLT, g1, ngroups), b1, tail);
  LLVMPositionBuilderAtEnd(B, b1);
  LLVMValueRef e = LLVMBuildNSWMul(B, g1, four, "");
  for (int k = 0; k < 4; k++)
    gf_read(&K, LLVMBuildNSWAdd(B, e, cg_i64(M, k), ""), &x[k]);
  gf_apply(&K, &x[0], &x[1], &y[0]);
  gf_apply(&K, &x[2], &x[3], &y[1]);
  gf_apply(&K, &y[0], &y[1], &y[2]);
  cg_var_store(f, &tv, &y[2]);
  gf_lane_merge(&K, &lv, &tv, has);
  LLVMBuildStore(B, LLVMBuildNSWAdd(B, g1, gs, ""), gslot);
  LLVMBuildBr(B, h1);
  LLVMPositionBuilderAtEnd(B, tail);
  LLVMBasicBlockRef rj = sk_if(f, gf_is(M, LLVMIntSLT, gtid, rem));
  gf_read(&K, LLVMBuildNSWAdd(B, LLVMBuildNSWMul(B, ngroups, four, ""), gtid, ""), &x[0]);
  cg_var_store(f, &tv, &x[0]);
  gf_lane_merge(&K, &lv, &tv, has);
  sk_endif(f, rj);
  LLVMBuildBr(B, done);
  LLVMPositionBuilderAtEnd(B, done);
  /* the threads with elements are the prefix gtid < active */
  LLVMValueRef active = cg_smax(M, ngroups, rem);

  /* the warp: its lanes with elements are a prefix (gtid < active) */
  LLVMValueRef wfirst = LLVMBuildNSWSub(B, gtid, K.lane, "");
  LLVMValueRef cnt = cg_smin(M, cg_smax(M, LLVMBuildNSWSub(B, active, wfirst, ""), zero), w32);
  gf_warp_reduce(&K, &lv, cnt);
  cg_var acc;
  cg_var_new(f, c->s.elem, &acc);
  LLVMValueRef lane0 = gf_is(M, LLVMIntEQ, K.lane, zero);
  LLVMBasicBlockRef lj = sk_if(f, LLVMBuildAnd(B, lane0, gf_is(M, LLVMIntSGT, cnt, zero), ""));
  cg_val wv;
  cg_var_load(f, &lv, &wv);
  cg_var_store(f, &acc, &wv);
  sk_endif(f, lj);
  /* the block: its warps with elements are a prefix too */
  LLVMValueRef bfirst = LLVMBuildNSWMul(B, gf_i64(M, simt_ctaid(f)), nt, "");
  LLVMValueRef nwv =
      cg_smin(M, gf_ceil_div(M, cg_smax(M, LLVMBuildNSWSub(B, active, bfirst, ""), zero), w32), nw);
  gf_block_combine(&K, &bl.smem, &acc, nwv);

  /* publish the block's value, take a ticket; the last block combines */
  LLVMValueRef lastb = gf_ticket(&K, &bl, &acc, gf_is(M, LLVMIntSGT, nwv, zero),
                                 gf_i64(M, simt_ctaid(f)), zero, G);
  LLVMBasicBlockRef xj = sk_if(f, lastb);
  simt_fence(f);
  /* the blocks with elements: [0, ceil(active / nt)), at most G */
  LLVMValueRef vp = cg_smin(M, G, gf_ceil_div(M, active, nt));
  gf_last_block(&K, &bl.smem, bl.part, zero, vp, &acc);
  LLVMBasicBlockRef sj = sk_if(f, gf_is(M, LLVMIntEQ, K.tid, zero));
  gf_finish_row(&K, zero, &acc, gf_is(M, LLVMIntSGT, vp, zero));
  sk_endif(f, sj);
  sk_endif(f, xj);
  lw_gpu_kernel_end(c->L, f, K.k);
  return K.k;
}

/* ---- plan level ---- */

/* K: elements per lane in a warp tile, GF_LANE_BYTES of the widest leaf
 * (4 .. 16 elements). */
static int64_t gf_items(lw *L, ir_type elem) {
  cg_val v;
  cg_val_alloc(L->M, elem, &v);
  size_t w = 1;
  for (uint32_t i = 0; i < v.n; i++) {
    size_t b = ac_scalar_size((ac_scalar)v.l[i].sc);
    w = b > w ? b : w;
  }
  int64_t k = (int64_t)(GF_LANE_BYTES / w);
  return k > GF_MAX_ITEMS ? GF_MAX_ITEMS : k;
}

/* Emits the three kernels and the plan that chooses among them by len_x
 * (the row length or the mean segment length); total_x is the number of
 * elements. */
static bool gf_lower(gf_ctx *c, uint32_t len_x, uint32_t total_x) {
  lw *L = c->L;
  c->items = gf_items(L, c->s.elem);
  c->comm = cg_commutative(L->m, c->s.elem, c->s.fn);
  /* fold.block's blocks sized to the row: a warp per warp tile of the row
   * (of the mean segment), so that a row of 1024 f32 (4 tiles of 256) gets
   * blocks of 4 warps rather than the occupancy calculator's 32 with 28
   * idle; rows of 32 tiles or more get the runtime's block */
  int64_t tk = c->items * SIMT_WARP;
  uint32_t warps_x = lw_x_bin(L, PX_DIV, lw_x_bin(L, PX_ADD, len_x, lw_x_const(L, tk - 1)),
                              lw_x_const(L, tk));
  if (!c->s.seg && c->s.rank == 1) {
    /* one row (a full reduction): fold.all for a commutative function,
     * else fold.block, which handles every length (one block for a short
     * row); either is the one kernel of the plan */
    if (c->comm)
      lw_launch(L, gf_all_kernel(c), total_x, PL_AUTO);
    else
      lw_launch_warps(L, gf_block_kernel(c), total_x, warps_x);
    return L->M->st == AC_OK;
  }
  uint32_t kt = gf_thread_kernel(c), kw = gf_warp_kernel(c), kb = gf_block_kernel(c);
  uint32_t rows_x = c->s.rows_x;
  lw_val wt, ww;
  sk_word(L, lw_x_bin(L, PX_LT, len_x, lw_x_const(L, GF_THREAD_MAX)), &wt);
  pl_if(L->p, wt.words[0]);
  lw_launch(L, kt, rows_x, PL_AUTO);
  pl_else(L->p);
  sk_word(L, lw_x_bin(L, PX_LT, len_x, lw_x_const(L, GF_WARP_MAX)), &ww);
  pl_if(L->p, ww.words[0]);
  lw_launch(L, kw, lw_x_bin(L, PX_MUL, rows_x, lw_x_const(L, SIMT_WARP)), PL_AUTO);
  pl_else(L->p);
  lw_launch_warps(L, kb, total_x, warps_x);
  pl_end(L->p);
  pl_end(L->p);
  return L->M->st == AC_OK;
}

bool lw_gskel_fold(lw *L, ir_ref e, lw_val *out) {
  gf_ctx c = {.L = L, .e = e};
  if (!sk_fold_operands(L, e, &c.s))
    return false;
  sk_fold_result(L, e, &c.s, out);
  c.out = *out;
  return gf_lower(&c, c.s.n_x, lw_x_bin(L, PX_MUL, c.s.rows_x, c.s.n_x));
}

bool lw_gskel_fold_seg(lw *L, ir_ref e, lw_val *out) {
  gf_ctx c = {.L = L, .e = e};
  if (!sk_fold_seg_operands(L, e, &c.s, &c.offs))
    return false;
  sk_fold_result(L, e, &c.s, out);
  c.out = *out;
  /* the mean segment length (x / 0 is 0 in plan arithmetic) */
  uint32_t mean_x = lw_x_bin(L, PX_DIV, c.s.n_x, c.s.rows_x);
  bool ok = gf_lower(&c, mean_x, c.s.n_x);
  sk_free_offsets(L, &c.offs);
  return ok;
}
