/* lib/lower/gskel_scan.c: the six scans on GPU targets (scan, scan_incl,
 * scanr, scanr_incl along the innermost dimension of any rank; scan_seg and
 * scan_incl_seg over segments of a rank-1 array), one single-pass kernel
 * each.
 *
 * Meaning (docs/language.md §7.5, lib/interp/reduce.c; skel_scan.c has the
 * CPU form): every scan is written here as an INCLUSIVE LEFT scan over
 * "positions" q = 0..N-1 (N = all elements, rows one after another) under
 * the segmented operator of gskel_scan.h, segments being the rows (rank
 * >= 2) or the segments of `lens`:
 *   - position q is element (row r, column t) of the row; a right scan
 *     reads column n-1-t (index mirroring) and calls f(x, acc) instead of
 *     f(acc, x);
 *   - an exclusive scan scans the shifted sequence b: b = z at a row's or
 *     segment's first position, else the element one position back. Then
 *     out[q] = z (+) a[..] (+) .. (+) a[q-1] is the inclusive scan of b, and
 *     the last element of a segment is never read nor given to f, as in the
 *     interpreter.
 * So one kernel does all six; the modes differ only in how a position finds
 * its element and whether it starts a segment.
 *
 * The kernel (block of GS_BLOCK threads, one tile of GS_BLOCK * items
 * positions per block, tiles numbered by atomic ticket):
 *   1. segmented scans: the tile's segment heads, from the segment offsets
 *      (a 256-ary search for the segment holding the tile's first position,
 *      then each thread marks every 256th segment start inside the tile);
 *   2. load: thread i reads positions i, i + 256, ... of the tile (each
 *      warp reads consecutive elements: coalesced) into shared memory; in
 *      a full tile all of a thread's reads are issued before its first
 *      store (CUB's full-tile path), the last tile takes a guarded loop;
 *   3. each thread reads its `items` consecutive positions from the tile
 *      (the "blocked" arrangement of CUB's BlockScan, via the shared tile
 *      as CUB's BLOCK_LOAD_TRANSPOSE does) into registers and scans them
 *      there sequentially;
 *   4. the block scan with decoupled look-back over the threads' partials
 *      (gskel_lookback.c) gives each thread its exclusive prefix;
 *   5. each thread combines its prefix into its positions up to its first
 *      segment head, still in registers, and writes them to the tile;
 *   6. store, coalesced like the load.
 * So an element passes through shared memory four times (2's store, 3's
 * read, 5's write, 6's read), as in CUB. items is odd (15 for 4-byte
 * elements, fewer for wider ones: GSC_THREAD_BYTES bytes of them a thread,
 * which also live in registers), so the blocked accesses of steps 3 and 5
 * hit distinct shared-memory banks; a tile of 4-byte elements takes 15 KB
 * of shared memory and its kernel at most 64 registers (four blocks of 256
 * per H100 SM, `items` loads in flight per thread). f is applied about
 * twice per element (steps 3 and 5), as in CUB's reduce-then-scan inside a
 * thread; its calls carry `reassoc` (cg.h).
 *
 * Not here (the CPU skeleton runs through the chunk adapter instead):
 * combining functions that need temporary memory (one 16 KiB slice per
 * thread of a grid of one block per tile would not fit), and elements of
 * more than GSC_MAX_BYTES bytes (the tile would not fit in shared memory).
 * The segment offsets and their checks are sk_seg_offsets' (skel_red.h; on
 * GPU targets one look-back scan kernel, gskel_segoffs.c), so the errors
 * are the CPU skeleton's and the interpreter's.
 */
#include "lower/gskel_scan.h"
#include "lower/skel_red.h"
#include "passes/pass.h"

/* Largest element (bytes, in slot types) a tile keeps in shared memory. */
#define GSC_MAX_BYTES 160u
/* Budget of slot bytes per thread for its items (held in registers). */
#define GSC_THREAD_BYTES 64u
#define GSC_MAX_ITEMS 15u
/* Blocks per SM the scan kernel of a small partial asks ptxas to fit. */
#define GSC_MIN_BLOCKS 4u

typedef enum gsc_mode {
  GSC_PLAIN, /* rank 1: one segment */
  GSC_ROWS,  /* rank >= 2: a segment per row */
  GSC_SEG    /* scan_seg / scan_incl_seg: the segments of lens */
} gsc_mode;

typedef struct gsc_ctx {
  lw *L;
  ir_ref e, fn;
  ir_type elem;
  uint32_t rank;
  const lw_leaf *leaves;
  ac_scalar *sc;
  bool excl, right;
  gsc_mode mode;
  uint32_t items;
  int64_t tile;
  gs_op op;
  lw_val a, z, out, offs;
} gsc_ctx;

/* comb(a, b) = f(a, b), or f(b, a) for a right scan. */
static void gsc_comb(cg_fn *f, const gs_op *op, const LLVMValueRef *a, const LLVMValueRef *b,
                     LLVMValueRef *out) {
  const gsc_ctx *c = op->ud;
  cg_val av, bv, r;
  lw_cg_elem(f->M, c->elem, op->n, a, c->sc, &av);
  lw_cg_elem(f->M, c->elem, op->n, b, c->sc, &bv);
  f->reassoc = true;
  sk_apply2(f, c->fn, &av, &bv, c->right, false, &r);
  f->reassoc = false;
  for (uint32_t i = 0; i < op->n; i++)
    out[i] = i < r.n ? r.l[i].v : LLVMGetUndef(op->ty[i]);
}

/* The tile in shared memory: one array per leaf (slot types). */
typedef struct gsc_tile {
  LLVMValueRef *v;
  LLVMValueRef head; /* i8 per position, or NULL (GSC_PLAIN) */
} gsc_tile;

static LLVMValueRef gsc_at(cg_module *M, LLVMTypeRef t, LLVMValueRef base, LLVMValueRef i) {
  return LLVMBuildGEP2(M->b, t, base, &i, 1, "");
}

static void gsc_put(cg_fn *f, const gsc_ctx *c, const gsc_tile *T, LLVMValueRef i,
                    const LLVMValueRef *v) {
  cg_module *M = f->M;
  for (uint32_t k = 0; k < c->op.n; k++)
    LLVMBuildStore(M->b, gs_to_slot(M, v[k]), gsc_at(M, gs_slot_type(M, c->op.ty[k]), T->v[k], i));
}

static void gsc_get(cg_fn *f, const gsc_ctx *c, const gsc_tile *T, LLVMValueRef i,
                    LLVMValueRef *v) {
  cg_module *M = f->M;
  for (uint32_t k = 0; k < c->op.n; k++) {
    LLVMTypeRef st = gs_slot_type(M, c->op.ty[k]);
    v[k] = gs_from_slot(M, LLVMBuildLoad2(M->b, st, gsc_at(M, st, T->v[k], i), ""), c->op.ty[k]);
  }
}

static LLVMValueRef gsc_is_head(cg_fn *f, const gsc_tile *T, LLVMValueRef i) {
  cg_module *M = f->M;
  if (!T->head)
    return LLVMConstInt(M->t_i1, 0, 0);
  LLVMValueRef h = LLVMBuildLoad2(M->b, M->t_i8, gsc_at(M, M->t_i8, T->head, i), "");
  return LLVMBuildICmp(M->b, LLVMIntNE, h, LLVMConstInt(M->t_i8, 0, 0), "");
}

/* Step 1 (GSC_SEG): head[p] = 1 where a non-empty segment starts at T0 +
 * p. offs (i64, nseg + 1 entries, offs[0] = 0, offs[nseg] = N) is sorted;
 * the tile's first position lies in segment sA, the last s with offs[s] <=
 * T0, found by a 256-ary search: each round, thread i probes the (i+1)-th
 * of 256 evenly spaced points of [lo, hi] and the one thread that sees the
 * predicate change narrows the interval for all (log_256(nseg) rounds). */
static void gsc_seg_heads(cg_fn *f, const gsc_ctx *c, const cg_leaf *offs, const gsc_tile *T,
                          LLVMValueRef T0, LLVMValueRef cnt) {
  cg_module *M = f->M;
  LLVMBuilderRef B = M->b;
  LLVMValueRef tid = LLVMBuildZExt(B, simt_tid(f), M->t_i64, "");
  LLVMValueRef blk = cg_i64(M, GS_BLOCK), one = cg_i64(M, 1);
  LLVMValueRef nseg = LLVMBuildSub(B, offs->ext[0], one, "nseg");
  cg_loop zl;
  LLVMValueRef i = cg_loop_begin(f, &zl, cg_i64(M, 0), cg_i64(M, c->items));
  LLVMValueRef p = LLVMBuildAdd(B, tid, LLVMBuildMul(B, i, blk, ""), "");
  LLVMBuildStore(B, LLVMConstInt(M->t_i8, 0, 0), gsc_at(M, M->t_i8, T->head, p));
  cg_loop_end(f, &zl);

  LLVMValueRef range = simt_shared(f, M->t_i64, 2, "scan.segrange");
  LLVMValueRef rlo = range, rhi = gsc_at(M, M->t_i64, range, one);
  LLVMBasicBlockRef j0 = sk_if(f, LLVMBuildICmp(B, LLVMIntEQ, tid, cg_i64(M, 0), ""));
  LLVMBuildStore(B, cg_i64(M, 0), rlo);
  LLVMBuildStore(B, nseg, rhi);
  sk_endif(f, j0);
  simt_barrier(f);
  LLVMBasicBlockRef head = cg_block(f, "seg.round"), body = cg_block(f, "seg.probe"),
                    done = cg_block(f, "seg.found");
  LLVMBuildBr(B, head);
  LLVMPositionBuilderAtEnd(B, head);
  LLVMValueRef lo = LLVMBuildLoad2(B, M->t_i64, rlo, "lo");
  LLVMValueRef hi = LLVMBuildLoad2(B, M->t_i64, rhi, "hi");
  simt_barrier(f); /* all have read before the round's writes */
  LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntSLT, lo, hi, ""), body, done);
  LLVMPositionBuilderAtEnd(B, body);
  LLVMValueRef span = LLVMBuildSub(B, hi, lo, "");
  LLVMValueRef bm1 = cg_i64(M, GS_BLOCK - 1);
  /* s_i = lo + ceil((i + 1) * span / 256): s_255 = hi, all in (lo, hi] */
  LLVMValueRef i1 = LLVMBuildAdd(B, tid, one, ""), i2 = LLVMBuildAdd(B, i1, one, "");
  LLVMValueRef s1 = LLVMBuildAdd(
      B, lo, LLVMBuildUDiv(B, LLVMBuildAdd(B, LLVMBuildMul(B, i1, span, ""), bm1, ""), blk, ""),
      "");
  LLVMValueRef last = LLVMBuildICmp(B, LLVMIntEQ, tid, bm1, "");
  LLVMValueRef s2 = LLVMBuildAdd(
      B, lo, LLVMBuildUDiv(B, LLVMBuildAdd(B, LLVMBuildMul(B, i2, span, ""), bm1, ""), blk, ""),
      "");
  s2 = LLVMBuildSelect(B, last, hi, s2, "");
  LLVMValueRef p1 = LLVMBuildICmp(B, LLVMIntSLE, cg_load_elem(f, offs, s1), T0, "");
  LLVMValueRef p2 =
      LLVMBuildAnd(B, LLVMBuildNot(B, last, ""),
                   LLVMBuildICmp(B, LLVMIntSLE, cg_load_elem(f, offs, s2), T0, ""), "");
  LLVMBasicBlockRef j1 = sk_if(f, LLVMBuildAnd(B, p1, LLVMBuildNot(B, p2, ""), ""));
  LLVMBuildStore(B, s1, rlo);
  LLVMBuildStore(B, LLVMBuildSelect(B, last, hi, LLVMBuildSub(B, s2, one, ""), ""), rhi);
  sk_endif(f, j1);
  LLVMBasicBlockRef j2 =
      sk_if(f, LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntEQ, tid, cg_i64(M, 0), ""),
                            LLVMBuildNot(B, p1, ""), ""));
  LLVMBuildStore(B, LLVMBuildSub(B, s1, one, ""), rhi);
  sk_endif(f, j2);
  simt_barrier(f);
  LLVMBuildBr(B, head);

  /* Segments sA + tid, sA + tid + 256, ... that start inside the tile. */
  LLVMPositionBuilderAtEnd(B, done);
  LLVMValueRef sslot = cg_alloca(f, M->t_i64);
  LLVMBuildStore(B, LLVMBuildAdd(B, lo, tid, ""), sslot);
  LLVMValueRef T1 = LLVMBuildAdd(B, T0, cnt, "");
  LLVMBasicBlockRef mh = cg_block(f, "seg.mark"), mb = cg_block(f, "seg.mark.body"),
                    mx = cg_block(f, "seg.mark.done");
  LLVMBuildBr(B, mh);
  LLVMPositionBuilderAtEnd(B, mh);
  LLVMValueRef s = LLVMBuildLoad2(B, M->t_i64, sslot, "");
  LLVMBasicBlockRef mt = cg_block(f, "seg.mark.test");
  LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntSLT, s, nseg, ""), mt, mx);
  LLVMPositionBuilderAtEnd(B, mt);
  LLVMValueRef o = cg_load_elem(f, offs, s);
  LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntSLT, o, T1, ""), mb, mx);
  LLVMPositionBuilderAtEnd(B, mb);
  LLVMBasicBlockRef j3 = sk_if(f, LLVMBuildICmp(B, LLVMIntSGE, o, T0, ""));
  LLVMBuildStore(B, LLVMConstInt(M->t_i8, 1, 0),
                 gsc_at(M, M->t_i8, T->head, LLVMBuildSub(B, o, T0, "")));
  sk_endif(f, j3);
  LLVMBuildStore(B, LLVMBuildAdd(B, s, blk, ""), sslot);
  LLVMBuildBr(B, mh);
  LLVMPositionBuilderAtEnd(B, mx);
  simt_barrier(f);
}

/* Where a thread's striped positions are: row r and column t of position
 * T0 + tid, and the step to the next one (+256 positions) as whole rows
 * and columns, so no division is needed per element. Rank 1 (wrap false):
 * one row, t is the position itself. */
typedef struct gsc_walk {
  LLVMValueRef r0, t0, dr, dt, n;
  bool wrap;
  LLVMValueRef r, t; /* allocas */
} gsc_walk;

static void gsc_walk_start(cg_fn *f, gsc_walk *w) {
  cg_module *M = f->M;
  LLVMBuildStore(M->b, w->r0, w->r);
  LLVMBuildStore(M->b, w->t0, w->t);
}

/* (r, t) one step further. */
static void gsc_walk_next(cg_fn *f, const gsc_walk *w, LLVMValueRef *r, LLVMValueRef *t) {
  LLVMBuilderRef B = f->M->b;
  LLVMValueRef t1 = LLVMBuildAdd(B, *t, w->dt, "");
  if (!w->wrap) {
    *t = t1;
    return;
  }
  LLVMValueRef over = LLVMBuildICmp(B, LLVMIntSGE, t1, w->n, "");
  *t = LLVMBuildSelect(B, over, LLVMBuildSub(B, t1, w->n, ""), t1, "");
  *r = LLVMBuildAdd(B, LLVMBuildAdd(B, *r, w->dr, ""), LLVMBuildZExt(B, over, f->M->t_i64, ""), "");
}

static void gsc_walk_step(cg_fn *f, const gsc_walk *w) {
  cg_module *M = f->M;
  LLVMValueRef r = LLVMBuildLoad2(M->b, M->t_i64, w->r, "");
  LLVMValueRef t = LLVMBuildLoad2(M->b, M->t_i64, w->t, "");
  gsc_walk_next(f, w, &r, &t);
  LLVMBuildStore(M->b, r, w->r);
  LLVMBuildStore(M->b, t, w->t);
}

/* Column index of position column t (mirrored for a right scan). */
static LLVMValueRef gsc_col(cg_fn *f, const gsc_ctx *c, LLVMValueRef t, LLVMValueRef n) {
  if (!c->right)
    return t;
  LLVMBuilderRef B = f->M->b;
  return LLVMBuildSub(B, LLVMBuildSub(B, n, cg_i64(f->M, 1), ""), t, "");
}

/* Step 2 for position q = T0 + ql (row r, column t): b(q) into the tile,
 * and for rows its head bit. */
static void gsc_load_one(cg_fn *f, const gsc_ctx *c, sk_row *row, const cg_val *zv,
                         const gsc_tile *T, LLVMValueRef ql, LLVMValueRef r, LLVMValueRef t,
                         LLVMValueRef n) {
  cg_module *M = f->M;
  LLVMBuilderRef B = M->b;
  LLVMValueRef first = LLVMBuildICmp(B, LLVMIntEQ, t, cg_i64(M, 0), "");
  if (c->mode == GSC_ROWS)
    LLVMBuildStore(B, LLVMBuildZExt(B, first, M->t_i8, ""), gsc_at(M, M->t_i8, T->head, ql));
  LLVMValueRef *v = cg_new(M, (c->op.n ? c->op.n : 1) * sizeof *v);
  cg_val x;
  if (!c->excl) {
    sk_row_at(f, row, r);
    sk_row_read(f, row, gsc_col(f, c, t, n), c->e, &x);
    for (uint32_t k = 0; k < c->op.n; k++)
      v[k] = x.l[k].v;
    gsc_put(f, c, T, ql, v);
    return;
  }
  LLVMValueRef isz = c->mode == GSC_SEG ? gsc_is_head(f, T, ql) : first;
  LLVMBasicBlockRef yes = cg_block(f, "scan.z"), no = cg_block(f, "scan.prev"),
                    join = cg_block(f, "scan.loaded");
  LLVMBuildCondBr(B, isz, yes, no);
  LLVMPositionBuilderAtEnd(B, yes);
  for (uint32_t k = 0; k < c->op.n; k++)
    v[k] = zv->l[k].v;
  gsc_put(f, c, T, ql, v);
  LLVMBuildBr(B, join);
  LLVMPositionBuilderAtEnd(B, no);
  sk_row_at(f, row, r);
  sk_row_read(f, row, gsc_col(f, c, LLVMBuildSub(B, t, cg_i64(M, 1), ""), n), c->e, &x);
  for (uint32_t k = 0; k < c->op.n; k++)
    v[k] = x.l[k].v;
  gsc_put(f, c, T, ql, v);
  LLVMBuildBr(B, join);
  LLVMPositionBuilderAtEnd(B, join);
}

/* Step 2 for a full tile of manifest leaves: the reads of all the
 * thread's positions are issued before any shared-memory store, so that
 * `items` loads are in flight at once (in the guarded loop each load would
 * wait for the previous store). The exclusive scans' "one back" read is
 * clamped into the row and replaced by z with a select, which reads memory
 * the program owns and nothing else (manifest leaves have no side
 * effects). */
static void gsc_load_full(cg_fn *f, const gsc_ctx *c, sk_row *row, const cg_val *zv,
                          const gsc_tile *T, const gsc_walk *w, LLVMValueRef tid) {
  cg_module *M = f->M;
  LLVMBuilderRef B = M->b;
  uint32_t n = c->op.n;
  LLVMValueRef *ql = cg_new(M, c->items * sizeof *ql);
  LLVMValueRef *v = cg_new(M, (size_t)c->items * (n ? n : 1) * sizeof *v);
  LLVMValueRef r = w->r0, t = w->t0, zero = cg_i64(M, 0), one = cg_i64(M, 1);
  for (uint32_t i = 0; i < c->items; i++) {
    ql[i] = LLVMBuildAdd(B, tid, cg_i64(M, (int64_t)i * GS_BLOCK), "");
    LLVMValueRef first = LLVMBuildICmp(B, LLVMIntEQ, t, zero, "");
    if (c->mode == GSC_ROWS)
      LLVMBuildStore(B, LLVMBuildZExt(B, first, M->t_i8, ""), gsc_at(M, M->t_i8, T->head, ql[i]));
    LLVMValueRef isz = NULL, col = t;
    if (c->excl) {
      isz = c->mode == GSC_SEG ? gsc_is_head(f, T, ql[i]) : first;
      col = LLVMBuildSelect(B, isz, zero, LLVMBuildSub(B, t, one, ""), "");
    }
    cg_val x;
    sk_row_at(f, row, r);
    sk_row_read(f, row, gsc_col(f, c, col, w->n), c->e, &x);
    for (uint32_t k = 0; k < n; k++)
      v[i * n + k] = isz ? LLVMBuildSelect(B, isz, zv->l[k].v, x.l[k].v, "") : x.l[k].v;
    gsc_walk_next(f, w, &r, &t);
  }
  for (uint32_t i = 0; i < c->items; i++)
    gsc_put(f, c, T, ql[i], &v[i * n]);
}

static uint32_t gsc_kernel(gsc_ctx *c) {
  lw *L = c->L;
  cg_module *M = L->M;
  LLVMBuilderRef B = M->b;
  uint32_t k;
  const char *kind = ir_ops[ir_node_get(L->m, c->e)->op].spelling;
  cg_fn *f = lw_gpu_kernel_begin(L, c->e, kind, c->items, GS_BLOCK, &k);
  gs_scratch(L, k, &c->op);
  /* A partial of one small leaf (packed descriptors, gskel_lookback.c):
   * four blocks of 256 per SM (at most 64 registers: the i32 sum takes
   * 58 with its 15 items in registers, no spills); without the hint ptxas
   * takes 66 and drops to three. */
  if (gs_packed(&c->op))
    cg_gpu_min_blocks(f, GSC_MIN_BLOCKS);
  cg_val av, ov, zv, sv;
  lw_load(L, f, k, &c->a, &av);
  lw_load(L, f, k, &c->out, &ov);
  if (c->excl)
    lw_load(L, f, k, &c->z, &zv);
  if (c->mode == GSC_SEG)
    lw_load(L, f, k, &c->offs, &sv);
  lw_gpu_guard(f);
  gs_tiles tl;
  gs_tiles_begin(f, &c->op, &tl);
  LLVMValueRef tile = tl.tile;
  LLVMValueRef N = f->hi, TILE = cg_i64(M, c->tile), blk = cg_i64(M, GS_BLOCK);
  LLVMValueRef T0 = LLVMBuildMul(B, tile, TILE, "T0");
  gs_exit_if(f, tl.fin, LLVMBuildICmp(B, LLVMIntSGE, T0, N, ""));
  LLVMValueRef rest = LLVMBuildSub(B, N, T0, "");
  LLVMValueRef cnt =
      LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, rest, TILE, ""), rest, TILE, "cnt");
  LLVMValueRef tid = LLVMBuildZExt(B, simt_tid(f), M->t_i64, "tid");
  gsc_tile T;
  T.v = cg_new(M, (c->op.n ? c->op.n : 1) * sizeof *T.v);
  for (uint32_t i = 0; i < c->op.n; i++)
    T.v[i] = simt_shared(f, gs_slot_type(M, c->op.ty[i]), (uint32_t)c->tile, "scan.tile");
  T.head = c->mode == GSC_PLAIN ? NULL : simt_shared(f, M->t_i8, (uint32_t)c->tile, "scan.head");
  if (c->mode == GSC_SEG)
    gsc_seg_heads(f, c, &sv.l[0], &T, T0, cnt);

  /* 2. load */
  gsc_walk w;
  LLVMValueRef q0 = LLVMBuildAdd(B, T0, tid, "");
  w.wrap = c->mode == GSC_ROWS;
  if (w.wrap) {
    w.n = ov.l[0].ext[c->rank - 1];
    w.r0 = LLVMBuildUDiv(B, q0, w.n, "");
    w.t0 = LLVMBuildURem(B, q0, w.n, "");
    w.dr = LLVMBuildUDiv(B, blk, w.n, "");
    w.dt = LLVMBuildURem(B, blk, w.n, "");
  } else {
    w.n = N;
    w.r0 = w.dr = cg_i64(M, 0);
    w.t0 = q0;
    w.dt = blk;
  }
  w.r = cg_alloca(f, M->t_i64);
  w.t = cg_alloca(f, M->t_i64);
  sk_row row;
  sk_row_init(f, &av, c->elem, c->rank, &row);
  LLVMBasicBlockRef lfull = cg_block(f, "load.full"), lpart = cg_block(f, "load.partial"),
                    ldone = cg_block(f, "load.done");
  LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntEQ, cnt, TILE, ""), row.manifest ? lfull : lpart,
                  lpart);
  LLVMPositionBuilderAtEnd(B, lfull);
  if (row.manifest)
    gsc_load_full(f, c, &row, &zv, &T, &w, tid);
  LLVMBuildBr(B, ldone);
  LLVMPositionBuilderAtEnd(B, lpart);
  gsc_walk_start(f, &w);
  cg_loop ll;
  LLVMValueRef i = cg_loop_begin(f, &ll, cg_i64(M, 0), cg_i64(M, c->items));
  LLVMValueRef ql = LLVMBuildAdd(B, tid, LLVMBuildMul(B, i, blk, ""), "ql");
  LLVMBasicBlockRef j1 = sk_if(f, LLVMBuildICmp(B, LLVMIntSLT, ql, cnt, ""));
  gsc_load_one(f, c, &row, &zv, &T, ql, LLVMBuildLoad2(B, M->t_i64, w.r, ""),
               LLVMBuildLoad2(B, M->t_i64, w.t, ""), w.n);
  sk_endif(f, j1);
  gsc_walk_step(f, &w);
  cg_loop_end(f, &ll);
  LLVMBuildBr(B, ldone);
  LLVMPositionBuilderAtEnd(B, ldone);
  simt_barrier(f);

  /* 3. the thread's positions jbase + i, i < items, read from the tile
   * once (all reads first, unguarded: every position is inside the shared
   * tile, and what lies past cnt is never used) and kept in registers (an
   * alloca per item and leaf, at constant indices: SROA promotes them)
   * through the block scan and step 5, which writes them back once: four
   * shared-memory passes per element (step 2's store, this read, step 5's
   * write, step 6's read), as CUB's. nv items are in the tile; stop is the
   * first that takes no prefix (a segment head, or nv). Only nv and stop
   * stay live across the block scan, not a predicate per item. */
  LLVMValueRef jbase = LLVMBuildMul(B, tid, cg_i64(M, c->items), "");
  uint32_t nl = c->op.n ? c->op.n : 1;
  LLVMValueRef its = cg_i64(M, c->items), zero = cg_i64(M, 0);
  LLVMValueRef nv = LLVMBuildSub(B, cnt, jbase, "");
  nv = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, nv, zero, ""), zero, nv, "");
  nv = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSGT, nv, its, ""), its, nv, "nv");
  LLVMValueRef *iv = cg_new(M, (size_t)c->items * nl * sizeof *iv);
  LLVMValueRef *hd = cg_new(M, c->items * sizeof *hd);
  for (uint32_t j = 0; j < c->items; j++) {
    LLVMValueRef jl = LLVMBuildAdd(B, jbase, cg_i64(M, j), "");
    gsc_get(f, c, &T, jl, &iv[j * nl]);
    hd[j] = gsc_is_head(f, &T, jl);
  }
  /* A combining function that cannot fail (ps_may_fail) is applied to
   * step 5's items past nv too, whose results are never stored: then its
   * guard is the heads' alone, and no predicate per item lives across the
   * block scan (in a plain scan, none at all). */
  bool spec = !ps_may_fail(L->m, c->fn);
  LLVMValueRef stop = spec ? its : nv;
  for (uint32_t j = c->items; j-- > 0;)
    stop = LLVMBuildSelect(B,
                           spec ? hd[j]
                                : LLVMBuildAnd(
                                      B, hd[j], LLVMBuildICmp(B, LLVMIntSLT, cg_i64(M, j), nv, ""),
                                      ""),
                           cg_i64(M, j), stop, "");
  gs_var acc;
  gs_var_new(f, &c->op, &acc);
  gs_part e, cur, x, r;
  gs_empty(f, &c->op, &e);
  gs_var_store(f, &c->op, &acc, &e);
  LLVMValueRef *slot = cg_new(M, (size_t)c->items * nl * sizeof *slot);
  for (uint32_t j = 0; j < c->items; j++) {
    for (uint32_t l = 0; l < c->op.n; l++) {
      slot[j * nl + l] = cg_alloca(f, c->op.ty[l]);
      LLVMBuildStore(B, iv[j * nl + l], slot[j * nl + l]);
    }
    LLVMBasicBlockRef j2 = sk_if(f, LLVMBuildICmp(B, LLVMIntSLT, cg_i64(M, j), nv, ""));
    gs_value(f, &c->op, &iv[j * nl], hd[j], &x);
    gs_var_load(f, &c->op, &acc, &cur);
    gs_comb(f, &c->op, &cur, &x, &r);
    gs_var_store(f, &c->op, &acc, &r);
    for (uint32_t l = 0; l < c->op.n; l++)
      LLVMBuildStore(B, r.v[l], slot[j * nl + l]);
    sk_endif(f, j2);
  }

  /* 4. the thread's exclusive prefix */
  gs_part mine, pre;
  gs_var_load(f, &c->op, &acc, &mine);
  gs_block_scan(f, &c->op, tl.scratch, tile, &mine, &pre, NULL, NULL);

  /* 5. pre (+) local scan before stop, then back into the tile */
  LLVMValueRef *v = cg_new(M, nl * sizeof *v), *rv = cg_new(M, nl * sizeof *rv);
  for (uint32_t j = 0; j < c->items; j++) {
    LLVMValueRef go =
        LLVMBuildAnd(B, pre.valid, LLVMBuildICmp(B, LLVMIntSLT, cg_i64(M, j), stop, ""), "");
    LLVMBasicBlockRef j5 = sk_if(f, go);
    for (uint32_t l = 0; l < c->op.n; l++)
      v[l] = LLVMBuildLoad2(B, c->op.ty[l], slot[j * nl + l], "");
    gsc_comb(f, &c->op, pre.v, v, rv);
    for (uint32_t l = 0; l < c->op.n; l++)
      LLVMBuildStore(B, rv[l], slot[j * nl + l]);
    sk_endif(f, j5);
  }
  for (uint32_t j = 0; j < c->items; j++) {
    for (uint32_t l = 0; l < c->op.n; l++)
      v[l] = LLVMBuildLoad2(B, c->op.ty[l], slot[j * nl + l], "");
    gsc_put(f, c, &T, LLVMBuildAdd(B, jbase, cg_i64(M, j), ""), v);
  }
  simt_barrier(f);

  /* 6. store: position tid + i * 256 is in the tile while i * 256 <
   * cnt - tid (a form of its own, so the compiler does not keep step 2's
   * fifteen bounds alive across the block scan to reuse them here) */
  LLVMValueRef rem = LLVMBuildSub(B, cnt, tid, "rem");
  gsc_walk_start(f, &w);
  cg_loop wl;
  i = cg_loop_begin(f, &wl, cg_i64(M, 0), cg_i64(M, c->items));
  ql = LLVMBuildAdd(B, tid, LLVMBuildMul(B, i, blk, ""), "");
  LLVMBasicBlockRef j6 =
      sk_if(f, LLVMBuildICmp(B, LLVMIntSLT, LLVMBuildMul(B, i, blk, ""), rem, ""));
  LLVMValueRef rr = LLVMBuildLoad2(B, M->t_i64, w.r, ""), tt = LLVMBuildLoad2(B, M->t_i64, w.t, "");
  LLVMValueRef lin = LLVMBuildAdd(B, LLVMBuildMul(B, rr, w.n, ""), gsc_col(f, c, tt, w.n), "");
  gsc_get(f, c, &T, ql, v);
  for (uint32_t kk = 0; kk < ov.n && kk < c->op.n; kk++)
    cg_store_elem(f, &ov.l[kk], lin, v[kk]);
  sk_endif(f, j6);
  gsc_walk_step(f, &w);
  cg_loop_end(f, &wl);
  gs_tiles_end(f, &tl);
  lw_gpu_kernel_end(L, f, k);
  return k;
}

/* The element's leaves and the tile size; false when the kernel does not
 * apply (see the file comment). */
static bool gsc_setup(gsc_ctx *c) {
  lw *L = c->L;
  cg_module *M = L->M;
  ir_type at = ir_node_get(L->m, c->e)->type;
  uint32_t rank;
  if (!ir_ty_array_view(L->ctx, at, &c->elem, &rank) || cg_needs_tmp(L->m, c->fn))
    return false;
  c->op.n = lw_leaves(L, c->elem, &c->leaves);
  if (c->op.n == 0)
    return false;
  c->sc = cg_new(M, c->op.n * sizeof *c->sc);
  c->op.ty = cg_new(M, c->op.n * sizeof *c->op.ty);
  for (uint32_t i = 0; i < c->op.n; i++) {
    if (c->leaves[i].rank)
      return false;
    c->sc[i] = c->leaves[i].sc;
    c->op.ty[i] = cg_scalar_type(M, c->sc[i]);
  }
  c->op.seg = c->mode != GSC_PLAIN;
  c->op.comb = gsc_comb;
  c->op.ud = c;
  uint32_t bytes = gs_slot_bytes(M, &c->op);
  if (bytes > GSC_MAX_BYTES)
    return false;
  uint32_t items = GSC_THREAD_BYTES / bytes;
  items = items > GSC_MAX_ITEMS ? GSC_MAX_ITEMS : items < 1 ? 1 : items;
  c->items = items % 2 ? items : items - 1;
  c->tile = (int64_t)GS_BLOCK * c->items;
  return true;
}

/* scan, scan_incl, scanr, scanr_incl: host side as skel_scan.c's. */
static bool gsc_rows(gsc_ctx *c, lw_val *out) {
  lw *L = c->L;
  cg_module *M = L->M;
  ac_module *m = L->m;
  ir_ref e = c->e;
  if (c->excl && !lw_expr(L, ir_kid(m, e, 1), &c->z))
    return false;
  if (!lw_operand(L, e, c->excl ? 2 : 1, &c->a))
    return false;
  if (!ir_ty_array_view(L->ctx, c->a.type, &c->elem, &c->rank)) {
    cg_error(M, AC_ERR_INTERNAL, e, "scan of a value that is not an array");
    return false;
  }
  lw_check_shapes(L, e, ir_ops[ir_node_get(m, e)->op].spelling, 1, &c->a);
  uint32_t *ext = cg_new(M, c->rank * sizeof *ext);
  for (uint32_t d = 0; d < c->rank; d++)
    ext[d] = lw_extent(L, &c->a, 0, d);
  lw_fresh(L, ir_node_get(m, e)->type, out);
  lw_alloc_arrays(L, out, ext, e);
  c->out = *out;
  uint32_t n_x = lw_x_bin(L, PX_MUL, sk_extent_product(L, &c->a, 0, c->rank - 1), ext[c->rank - 1]);
  uint32_t k = gsc_kernel(c);
  uint32_t tiles = lw_x_bin(L, PX_DIV, lw_x_bin(L, PX_ADD, n_x, lw_x_const(L, c->tile - 1)),
                            lw_x_const(L, c->tile));
  lw_launch(L, k, n_x, tiles);
  return M->st == AC_OK;
}

/* scan_seg, scan_incl_seg: host side as skel_scan.c's. */
static bool gsc_segments(gsc_ctx *c, lw_val *out) {
  lw *L = c->L;
  cg_module *M = L->M;
  ac_module *m = L->m;
  ir_ref e = c->e;
  const char *what = ir_ops[ir_node_get(m, e)->op].spelling;
  lw_val lens;
  uint32_t ka = c->excl ? 2 : 1;
  if (c->excl && !lw_expr(L, ir_kid(m, e, 1), &c->z))
    return false;
  if (!lw_operand(L, e, ka, &c->a) || !lw_expr(L, ir_kid(m, e, ka + 1), &lens))
    return false;
  if (!ir_ty_array_view(L->ctx, c->a.type, &c->elem, &c->rank) || c->rank != 1) {
    cg_error(M, AC_ERR_INTERNAL, e, "%s of a value that is not a rank-1 array", what);
    return false;
  }
  lw_check_shapes(L, e, what, 1, &c->a);
  uint32_t n_x = lw_extent(L, &c->a, 0, 0);
  if (!sk_seg_offsets(L, e, what, &lens, n_x, &c->a, &c->offs))
    return false;
  lw_fresh(L, ir_node_get(m, e)->type, out);
  lw_alloc_arrays(L, out, &n_x, e);
  c->out = *out;
  uint32_t k = gsc_kernel(c);
  uint32_t tiles = lw_x_bin(L, PX_DIV, lw_x_bin(L, PX_ADD, n_x, lw_x_const(L, c->tile - 1)),
                            lw_x_const(L, c->tile));
  lw_launch(L, k, n_x, tiles);
  sk_free_offsets(L, &c->offs);
  return M->st == AC_OK;
}

bool lw_gskel_scan(lw *L, ir_ref e, lw_val *out) {
  ir_op op = (ir_op)ir_node_get(L->m, e)->op;
  gsc_ctx c = {.L = L, .e = e, .fn = ir_kid(L->m, e, 0)};
  c.excl = op == IR_SCAN || op == IR_SCANR || op == IR_SCAN_SEG;
  c.right = op == IR_SCANR || op == IR_SCANR_INCL;
  bool seg = op == IR_SCAN_SEG || op == IR_SCAN_INCL_SEG;
  uint32_t rank = 0;
  ir_type elem;
  if (!ir_ty_array_view(L->ctx, ir_node_get(L->m, e)->type, &elem, &rank))
    rank = 0;
  c.mode = seg ? GSC_SEG : rank >= 2 ? GSC_ROWS : GSC_PLAIN;
  if (!gsc_setup(&c))
    return lw_skel_scan(L, e, out);
  return seg ? gsc_segments(&c, out) : gsc_rows(&c, out);
}
