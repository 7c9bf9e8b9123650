/* lib/lower/skel_scan.c: the six scans on the CPU (scan, scan_incl, scanr,
 * scanr_incl along the innermost dimension of any rank; scan_seg and
 * scan_incl_seg over segments of a rank-1 array).
 *
 * Meaning (docs/language.md §7.5, lib/interp/reduce.c): for a row a0..a(n-1)
 * an exclusive scan gives out[0] = z, out[k] = f(out[k-1], a[k-1]); an
 * inclusive one out[0] = a0, out[k] = f(out[k-1], a[k]); the right scans do
 * the same from the other end with f's arguments swapped (f(a[k], acc)).
 * So a right scan is a left scan over the row read backwards with
 * comb(acc, x) = f(x, acc), and everything below is written once for
 * "positions" t = 0..n-1 of a row, position t being element t (left) or
 * n-1-t (right). An exclusive scan never applies f to the last element, as
 * the interpreter (its result would be dropped, and an error it raised
 * would not be the program's).
 *
 * Parallelism is Blelloch's reduce-then-scan (as Accelerate's and CUB's CPU
 * paths use it) over the pieces of skel_red.h, in one launch: each piece
 * but a row's last reduces its positions; the carries then pass from piece
 * to piece along a chain (sk_wait_turn: the carry into piece p is z, then
 * z (+) partial(0) (+) .. (+) partial(p-1); inclusive scans start from
 * partial(0) instead, piece 0 having no carry; the carry of piece p lands at
 * index p - 1); every piece rescans its positions from its carry. With
 * C = 1 (many rows, or short ones) there is no chain: a sequential scan per
 * row, rows in parallel. Segmented scans use the
 * segment offsets of skel_fold.c and scan each segment sequentially, the
 * segments in parallel. Combining calls carry the `reassoc` flag (cg.h), so
 * float results differ from the interpreter's only by reassociation.
 */
#include "lower/skel.h"
#include "lower/skel_red.h"

#define SC_GRAIN LW_GRAIN

typedef struct sc_ctx {
  lw *L;
  ir_ref e, fn;
  ir_type elem;
  uint32_t rank;
  bool excl, right, tmp;
  lw_val a, z, part, Cw, out;
} sc_ctx;

/* acc = comb(acc, x): f(acc, x), or f(x, acc) for a right scan. */
static void sc_combine(cg_fn *f, const sc_ctx *c, cg_var *acc, const cg_val *x) {
  cg_val cur, next;
  cg_var_load(f, acc, &cur);
  f->reassoc = true;
  sk_apply2(f, c->fn, &cur, x, c->right, c->tmp, &next);
  f->reassoc = false;
  cg_var_store(f, acc, &next);
}

/* Element index of position t of a row of n. */
static LLVMValueRef sc_pos(cg_fn *f, const sc_ctx *c, LLVMValueRef t, LLVMValueRef n) {
  if (!c->right)
    return t;
  LLVMBuilderRef b = f->M->b;
  return LLVMBuildSub(b, LLVMBuildSub(b, n, cg_i64(f->M, 1), ""), t, "");
}

/* acc = the reduction of positions [lo, hi) (lo < hi) of the row r is at,
 * in position order: a piece's partial. */
static void sc_reduce(cg_fn *f, const sc_ctx *c, sk_row *r, LLVMValueRef lo, LLVMValueRef hi,
                      cg_var *acc) {
  cg_val x;
  sk_row_read(f, r, sc_pos(f, c, lo, r->n), c->e, &x);
  cg_var_store(f, acc, &x);
  cg_loop tl;
  LLVMValueRef t = cg_loop_begin(f, &tl, LLVMBuildAdd(f->M->b, lo, cg_i64(f->M, 1), ""), hi);
  sk_row_read(f, r, sc_pos(f, c, t, r->n), c->e, &x);
  sc_combine(f, c, acc, &x);
  cg_loop_end(f, &tl);
}

/* The scan of positions [lo, hi) of the row r is at, written to ov at the
 * same positions. Without a carry the run starts from z (exclusive) or its
 * first element (inclusive); when `hascarry` holds, from the carry at index
 * ci of the partials pv. */
static void sc_run(cg_fn *f, const sc_ctx *c, sk_row *r, const cg_val *zv, const cg_val *pv,
                   const cg_val *ov, LLVMValueRef lo, LLVMValueRef hi, LLVMValueRef hascarry,
                   LLVMValueRef ci) {
  cg_module *M = f->M;
  LLVMValueRef one = cg_i64(M, 1);
  LLVMBasicBlockRef done = sk_if(f, LLVMBuildICmp(M->b, LLVMIntSLT, lo, hi, ""));
  cg_var acc;
  cg_var_new(f, c->elem, &acc);
  cg_val x, carry;
  if (c->excl) {
    cg_var_store(f, &acc, zv);
  } else {
    sk_row_read(f, r, sc_pos(f, c, lo, r->n), c->e, &x);
    cg_var_store(f, &acc, &x);
  }
  if (hascarry) {
    LLVMBasicBlockRef join = sk_if(f, hascarry);
    sk_load(f, pv, c->elem, ci, &carry);
    if (c->excl) {
      cg_var_store(f, &acc, &carry);
    } else { /* comb(carry, first element) */
      cg_var_store(f, &acc, &carry);
      sc_combine(f, c, &acc, &x);
    }
    sk_endif(f, join);
  }
  cg_var_load(f, &acc, &x);
  sk_store(f, ov, LLVMBuildAdd(M->b, r->base, sc_pos(f, c, lo, r->n), ""), &x);
  cg_loop tl;
  LLVMValueRef t = cg_loop_begin(f, &tl, LLVMBuildAdd(M->b, lo, one, ""), hi);
  LLVMValueRef src = c->excl ? LLVMBuildSub(M->b, t, one, "") : t;
  sk_row_read(f, r, sc_pos(f, c, src, r->n), c->e, &x);
  sc_combine(f, c, &acc, &x);
  cg_var_load(f, &acc, &x);
  sk_store(f, ov, LLVMBuildAdd(M->b, r->base, sc_pos(f, c, t, r->n), ""), &x);
  cg_loop_end(f, &tl);
  sk_endif(f, done);
}

/* On GPU targets (a scan the SIMT skeleton does not take, through the chunk
 * adapter) chunks do not run in claim order, so the carries cannot chain:
 * three launches instead. "scan.partial": piece i % C of row i / C reduced
 * in position order, for every piece but a row's last (whose total nobody
 * needs). */
static uint32_t sc_partial_kernel(const sc_ctx *c) {
  lw *L = c->L;
  cg_module *M = L->M;
  uint32_t k;
  cg_fn *f = lw_kernel_begin(L, c->e, "scan.partial", 1, &k);
  cg_val av, pv, x;
  lw_load(L, f, k, &c->a, &av);
  lw_load(L, f, k, &c->part, &pv);
  LLVMValueRef C = sk_ld(L, f, k, &c->Cw), one = cg_i64(M, 1);
  sk_row r;
  sk_row_init(f, &av, c->elem, c->rank, &r);
  cg_var acc;
  cg_var_new(f, c->elem, &acc);
  cg_loop il;
  LLVMValueRef i = cg_loop_begin(f, &il, f->lo, f->hi);
  LLVMValueRef p = LLVMBuildURem(M->b, i, C, "");
  LLVMValueRef p1 = LLVMBuildAdd(M->b, p, one, "");
  LLVMBasicBlockRef skip = sk_if(f, LLVMBuildICmp(M->b, LLVMIntULT, p1, C, ""));
  sk_row_at(f, &r, LLVMBuildUDiv(M->b, i, C, ""));
  LLVMValueRef lo = sk_piece_start(f, p, r.n, C), hi = sk_piece_start(f, p1, r.n, C);
  sc_reduce(f, c, &r, lo, hi, &acc);
  cg_var_load(f, &acc, &x);
  sk_store(f, &pv, i, &x);
  sk_endif(f, skip);
  cg_loop_end(f, &il);
  lw_kernel_end(L, f);
  return k;
}

/* "scan.carry": per row, the carries into pieces 1..C-1, carry p stored at
 * index p - 1 over the partial it consumed. */
static uint32_t sc_carry_kernel(const sc_ctx *c) {
  lw *L = c->L;
  cg_module *M = L->M;
  uint32_t k;
  cg_fn *f = lw_kernel_begin(L, c->e, "scan.carry", 1, &k);
  cg_val pv, zv, x;
  lw_load(L, f, k, &c->part, &pv);
  if (c->excl)
    lw_load(L, f, k, &c->z, &zv);
  LLVMValueRef C = sk_ld(L, f, k, &c->Cw), one = cg_i64(M, 1);
  cg_var acc;
  cg_var_new(f, c->elem, &acc);
  cg_loop rl, pl;
  LLVMValueRef row = cg_loop_begin(f, &rl, f->lo, f->hi);
  LLVMValueRef base = LLVMBuildMul(M->b, row, C, "");
  if (c->excl) {
    cg_var_store(f, &acc, &zv);
  } else {
    sk_load(f, &pv, c->elem, base, &x);
    cg_var_store(f, &acc, &x);
  }
  LLVMValueRef p = cg_loop_begin(f, &pl, cg_i64(M, c->excl ? 1 : 2), C);
  LLVMValueRef at = LLVMBuildSub(M->b, LLVMBuildAdd(M->b, base, p, ""), one, "");
  sk_load(f, &pv, c->elem, at, &x);
  sc_combine(f, c, &acc, &x);
  cg_var_load(f, &acc, &x);
  sk_store(f, &pv, at, &x);
  cg_loop_end(f, &pl);
  cg_loop_end(f, &rl);
  lw_kernel_end(L, f);
  return k;
}

/* "scan", one launch: iteration i is piece p = i % C of row i / C. With
 * C == 1 the piece is the row, scanned from z or its first element. With
 * C > 1 the pieces form one chain (sk_wait_turn on the frame word `turn`):
 * piece p < C - 1 first reduces its positions in order (an exclusive scan's
 * last piece, whose total nobody needs, does not: f never sees the last
 * element); waits for its turn; stores the carry out of it, carry(p) (+)
 * partial (z (+) partial, or the partial alone for an inclusive scan, when
 * p == 0), at index i of the partials, where piece p + 1 finds it; passes
 * the turn; then rescans its positions from the carry into it (index
 * i - 1). Only the carries are sequential, so the pieces' reductions and
 * rescans run in parallel, in one launch instead of three (reduce, carry,
 * rescan). */
static uint32_t sc_scan_kernel(const sc_ctx *c, const lw_val *turn, bool chained) {
  lw *L = c->L;
  cg_module *M = L->M;
  LLVMBuilderRef B = M->b;
  uint32_t k;
  cg_fn *f = lw_kernel_begin(L, c->e, "scan", SC_GRAIN, &k);
  cg_val av, pv, zv, ov, x;
  lw_load(L, f, k, &c->a, &av);
  lw_load(L, f, k, &c->part, &pv);
  lw_load(L, f, k, &c->out, &ov);
  if (c->excl)
    lw_load(L, f, k, &c->z, &zv);
  LLVMValueRef C = sk_ld(L, f, k, &c->Cw), one = cg_i64(M, 1);
  LLVMValueRef multi = LLVMBuildICmp(B, LLVMIntNE, C, one, "");
  sk_row r;
  sk_row_init(f, &av, c->elem, c->rank, &r);
  cg_var acc;
  cg_var_new(f, c->elem, &acc);
  cg_loop il;
  LLVMValueRef i = cg_loop_begin(f, &il, f->lo, f->hi);
  LLVMValueRef p = LLVMBuildURem(B, i, C, "");
  LLVMValueRef p1 = LLVMBuildAdd(B, p, one, "");
  sk_row_at(f, &r, LLVMBuildUDiv(B, i, C, ""));
  LLVMValueRef lo = sk_piece_start(f, p, r.n, C), hi = sk_piece_start(f, p1, r.n, C);
  LLVMValueRef first = LLVMBuildICmp(B, LLVMIntEQ, p, cg_i64(M, 0), "");
  LLVMValueRef has = LLVMBuildAnd(B, multi, LLVMBuildNot(B, first, ""), "");
  if (!chained) { /* the carries are there already (sc_carry_kernel) */
    sc_run(f, c, &r, &zv, &pv, &ov, lo, hi, has, LLVMBuildSub(B, i, one, ""));
    cg_loop_end(f, &il);
    lw_kernel_end(L, f);
    return k;
  }
  LLVMValueRef done_p = sk_turn_word(L, f, k, turn);
  LLVMBasicBlockRef chain = sk_if(f, multi);
  LLVMValueRef carries = LLVMBuildICmp(B, LLVMIntULT, p1, C, "");
  /* the piece's partial, when a carry leaves it */
  LLVMBasicBlockRef red = sk_if(f, carries);
  sc_reduce(f, c, &r, lo, hi, &acc);
  sk_endif(f, red);
  sk_wait_turn(f, done_p, i);
  LLVMBasicBlockRef out = sk_if(f, carries);
  cg_val part, cin;
  cg_var_load(f, &acc, &part);
  cg_var car;
  cg_var_new(f, c->elem, &car);
  /* carry(p) (+) partial: carry(0) is z for an exclusive scan, nothing for
   * an inclusive one */
  LLVMBasicBlockRef cold = cg_block(f, "scan.first"), cmid = cg_block(f, "scan.later"),
                    cjoin = cg_block(f, "scan.carried");
  LLVMBuildCondBr(B, first, cold, cmid);
  LLVMPositionBuilderAtEnd(B, cold);
  if (c->excl) {
    cg_var_store(f, &car, &zv);
    sc_combine(f, c, &car, &part);
  } else {
    cg_var_store(f, &car, &part);
  }
  LLVMBuildBr(B, cjoin);
  LLVMPositionBuilderAtEnd(B, cmid);
  sk_load(f, &pv, c->elem, LLVMBuildSub(B, i, one, ""), &cin);
  cg_var_store(f, &car, &cin);
  sc_combine(f, c, &car, &part);
  LLVMBuildBr(B, cjoin);
  LLVMPositionBuilderAtEnd(B, cjoin);
  cg_var_load(f, &car, &x);
  sk_store(f, &pv, i, &x);
  sk_endif(f, out);
  sk_pass_turn(f, done_p, LLVMBuildAdd(B, i, one, ""));
  sk_endif(f, chain);
  sc_run(f, c, &r, &zv, &pv, &ov, lo, hi, has, LLVMBuildSub(B, i, one, ""));
  cg_loop_end(f, &il);
  lw_kernel_end(L, f);
  return k;
}

/* scan, scan_incl, scanr, scanr_incl. */
static bool sc_rows(sc_ctx *c, lw_val *out) {
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
  c->tmp = cg_needs_tmp(m, c->fn);
  lw_check_shapes(L, e, ir_ops[ir_node_get(m, e)->op].spelling, 1, &c->a);
  uint32_t *ext = cg_new(M, c->rank * sizeof *ext);
  for (uint32_t d = 0; d < c->rank; d++)
    ext[d] = lw_extent(L, &c->a, 0, d);
  uint32_t n_x = ext[c->rank - 1], rows_x = sk_extent_product(L, &c->a, 0, c->rank - 1);
  lw_fresh(L, ir_node_get(m, e)->type, out);
  lw_alloc_arrays(L, out, ext, e);
  c->out = *out;
  lw_val multi;
  sk_word(L, sk_pieces(L, rows_x, n_x, SC_GRAIN), &c->Cw);
  sk_word(L, lw_x_bin(L, PX_NE, sk_xw(L, &c->Cw), lw_x_const(L, 1)), &multi);
  uint32_t npieces = lw_x_bin(L, PX_MUL, rows_x, sk_xw(L, &c->Cw));
  sk_scratch(L, c->elem, lw_x_bin(L, PX_MUL, npieces, sk_xw(L, &multi)), e, &c->part);
  lw_val turn;
  sk_word(L, lw_x_const(L, 0), &turn);
  if (L->gpu) {
    uint32_t k1 = sc_partial_kernel(c), k2 = sc_carry_kernel(c);
    pl_if(L->p, multi.words[0]);
    lw_launch(L, k1, npieces, PL_AUTO);
    lw_launch(L, k2, rows_x, lw_x_const(L, 1));
    pl_end(L->p);
  }
  uint32_t k = sc_scan_kernel(c, &turn, !L->gpu);
  uint32_t chunks =
      lw_x_bin(L, PX_CHUNKS, lw_x_bin(L, PX_MUL, rows_x, n_x), lw_x_const(L, SC_GRAIN));
  chunks = lw_x_bin(L, PX_MAX, lw_x_const(L, 1), lw_x_bin(L, PX_MIN, npieces, chunks));
  lw_launch(L, k, npieces, chunks);
  sk_free(L, &c->part);
  return M->st == AC_OK;
}

/* "scan_seg": one iteration per segment, scanned sequentially. */
static uint32_t sc_seg_kernel(const sc_ctx *c, const lw_val *offs) {
  lw *L = c->L;
  cg_module *M = L->M;
  uint32_t k;
  cg_fn *f = lw_kernel_begin(L, c->e, ir_ops[ir_node_get(L->m, c->e)->op].spelling, 1, &k);
  cg_val av, zv, ov, sv;
  lw_load(L, f, k, &c->a, &av);
  lw_load(L, f, k, &c->out, &ov);
  lw_load(L, f, k, offs, &sv);
  if (c->excl)
    lw_load(L, f, k, &c->z, &zv);
  sk_row r;
  sk_row_init(f, &av, c->elem, 1, &r);
  sk_row_at(f, &r, cg_i64(M, 0));
  cg_loop sl;
  LLVMValueRef s = cg_loop_begin(f, &sl, f->lo, f->hi);
  LLVMValueRef lo = cg_load_elem(f, &sv.l[0], s);
  LLVMValueRef hi = cg_load_elem(f, &sv.l[0], LLVMBuildAdd(M->b, s, cg_i64(M, 1), ""));
  sc_run(f, c, &r, &zv, NULL, &ov, lo, hi, NULL, NULL);
  cg_loop_end(f, &sl);
  lw_kernel_end(L, f);
  return k;
}

/* scan_seg, scan_incl_seg. */
static bool sc_segments(sc_ctx *c, lw_val *out) {
  lw *L = c->L;
  cg_module *M = L->M;
  ac_module *m = L->m;
  ir_ref e = c->e;
  const char *what = ir_ops[ir_node_get(m, e)->op].spelling;
  lw_val lens, offs;
  uint32_t ka = c->excl ? 2 : 1;
  if (c->excl && !lw_expr(L, ir_kid(m, e, 1), &c->z))
    return false;
  if (!lw_operand(L, e, ka, &c->a) || !lw_expr(L, ir_kid(m, e, ka + 1), &lens))
    return false;
  if (!ir_ty_array_view(L->ctx, c->a.type, &c->elem, &c->rank) || c->rank != 1) {
    cg_error(M, AC_ERR_INTERNAL, e, "%s of a value that is not a rank-1 array", what);
    return false;
  }
  c->tmp = cg_needs_tmp(m, c->fn);
  lw_check_shapes(L, e, what, 1, &c->a);
  uint32_t n_x = lw_extent(L, &c->a, 0, 0), nseg_x = lw_extent(L, &lens, 0, 0);
  if (!sk_seg_offsets(L, e, what, &lens, n_x, &c->a, &offs))
    return false;
  lw_fresh(L, ir_node_get(m, e)->type, out);
  lw_alloc_arrays(L, out, &n_x, e);
  c->out = *out;
  uint32_t k = sc_seg_kernel(c, &offs);
  uint32_t chunks =
      lw_x_bin(L, PX_MAX, lw_x_const(L, 1),
               lw_x_bin(L, PX_MIN, nseg_x, lw_x_bin(L, PX_CHUNKS, n_x, lw_x_const(L, SC_GRAIN))));
  lw_launch(L, k, nseg_x, chunks);
  sk_free_offsets(L, &offs);
  return M->st == AC_OK;
}

bool lw_skel_scan(lw *L, ir_ref e, lw_val *out) {
  ir_op op = (ir_op)ir_node_get(L->m, e)->op;
  sc_ctx c = {.L = L, .e = e, .fn = ir_kid(L->m, e, 0)};
  c.excl = op == IR_SCAN || op == IR_SCANR || op == IR_SCAN_SEG;
  c.right = op == IR_SCANR || op == IR_SCANR_INCL;
  switch (op) {
  case IR_SCAN:
  case IR_SCAN_INCL:
  case IR_SCANR:
  case IR_SCANR_INCL:
    return sc_rows(&c, out);
  case IR_SCAN_SEG:
  case IR_SCAN_INCL_SEG:
    return sc_segments(&c, out);
  default:
    cg_error(L->M, AC_ERR_INTERNAL, e, "lw_skel_scan on a %s node", ir_ops[op].name);
    return false;
  }
}
