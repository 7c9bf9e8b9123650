/* lib/lower/skel_fold.c: fold and fold_seg on the CPU, and the helpers the
 * reduction-family skeletons share (skel_red.h).
 *
 * fold(f, z, a) reduces each row of a (the innermost dimension). The
 * interpreter computes f(..f(f(z, a0), a1).., a(n-1)) strictly in order;
 * f is required to be associative (docs/language.md §7.4), so a parallel
 * backend may regroup the applications, as Accelerate's fold skeleton does
 * (a per-block reduction, then a reduction of the block results). Here:
 *   - rows are cut into C pieces (skel_red.h): the plan computes C from the
 *     row count and length, so many short rows give C = 1 and few long rows
 *     (the important case: rank 1, sum and dot products) give several;
 *   - one kernel, "fold": with C = 1 each iteration folds a row from z;
 *     with C > 1 each iteration reduces one piece on its own, starting from
 *     the piece's FIRST element rather than from z (z need not be an
 *     identity, and the interpreter applies f to it exactly once per row),
 *     and the chunk that finishes last (a ticket on a frame word, as the
 *     GPU fold's last block) combines each row's partials in piece order
 *     from z. One launch, so a fold over a fused map (a dot product) is
 *     one kernel, and a scalar epilogue of a full reduction (RMSE's
 *     sqrt(s / n), lw_epilogue) runs in that last chunk too.
 * The combining loops carry LLVM's `reassoc` flag on float + - * (cg.h), so
 * a float sum vectorises; results then differ from the interpreter's only
 * by reassociation.
 *
 * fold_seg(f, z, a, lens) first turns the segment lengths into offsets
 * (sk_seg_offsets: one launch, a chained scan over pieces of the lengths,
 * that also makes the interpreter's checks: no negative length, lengths
 * summing to len(a), the first offender in order reported; deferred past
 * the elements of a fused operand that can fail, and computed once ahead
 * of a plan loop whose step uses lengths bound outside it; on GPU targets
 * a look-back scan kernel instead, gskel_segoffs.c), then folds the
 * segments in parallel, each one sequentially from z.
 * The host side of both (operands, checks, result arrays: sk_fold_operands,
 * sk_fold_seg_operands, sk_fold_result) is shared with the GPU skeletons
 * (gskel_fold.c), which replace only the kernels.
 */
#include "lower/skel.h"
#include "lower/skel_red.h"

#include <stdio.h>

/* Iterations (elements) per chunk at least, for the element loops here. */
#define FD_GRAIN LW_GRAIN

/* ---- plan-level helpers ---- */

static ir_type sk_ty_i64(lw *L) {
  return ir_ty_scalar(L->ctx, AC_I64);
}

void sk_word(lw *L, uint32_t x, lw_val *out) {
  lw_fresh(L, sk_ty_i64(L), out);
  pl_set(L->p, out->words[0], x);
}

uint32_t sk_xw(lw *L, const lw_val *w) {
  return lw_x_word(L, w->words[0]);
}

uint32_t sk_extent_product(lw *L, const lw_val *a, uint32_t d0, uint32_t d1) {
  uint32_t x = lw_x_const(L, 1);
  for (uint32_t d = d0; d < d1; d++)
    x = d == d0 ? lw_extent(L, a, 0, d) : lw_x_bin(L, PX_MUL, x, lw_extent(L, a, 0, d));
  return x;
}

uint32_t sk_pieces(lw *L, uint32_t rows_x, uint32_t n_x, int64_t grain) {
  uint32_t total = lw_x_bin(L, PX_MUL, rows_x, n_x);
  /* rows = 0 gives x / 0 = 0 in plan arithmetic, hence C = 1 */
  uint32_t per = lw_x_bin(L, PX_DIV, lw_x_bin(L, PX_CHUNKS, total, lw_x_const(L, grain)), rows_x);
  return lw_x_bin(L, PX_MAX, lw_x_const(L, 1), lw_x_bin(L, PX_MIN, n_x, per));
}

void sk_scratch(lw *L, ir_type elem, uint32_t ext_x, ir_ref at, lw_val *out) {
  lw_fresh(L, ir_ty_array(L->ctx, elem, 1), out);
  lw_alloc_arrays(L, out, &ext_x, at);
}

void sk_free(lw *L, const lw_val *v) {
  uint32_t n = lw_num_leaves(L, v);
  for (uint32_t i = 0; i < n; i++)
    pl_free(L->p, v->words[lw_leaf_word(L, v->type, i)]);
}

void sk_launch1(lw *L, uint32_t k) {
  lw_launch(L, k, lw_x_const(L, 1), lw_x_const(L, 1));
}

/* ---- kernel-level helpers ---- */

LLVMValueRef sk_ld(lw *L, cg_fn *f, uint32_t kernel, const lw_val *w) {
  cg_val v;
  lw_load(L, f, kernel, w, &v);
  return v.l[0].v;
}

LLVMValueRef sk_piece_start(cg_fn *f, LLVMValueRef p, LLVMValueRef n, LLVMValueRef C) {
  LLVMBuilderRef b = f->M->b;
  return LLVMBuildUDiv(b, LLVMBuildMul(b, p, n, ""), C, "");
}

void sk_row_init(cg_fn *f, const cg_val *a, ir_type elem, uint32_t rank, sk_row *r) {
  cg_module *M = f->M;
  r->a = a;
  r->rank = rank;
  r->elem = elem;
  r->n = a->n && a->l[0].ext ? a->l[0].ext[rank - 1] : cg_i64(M, 0);
  r->base = cg_i64(M, 0);
  r->idx = cg_new(M, rank * sizeof *r->idx);
  for (uint32_t d = 0; d < rank; d++)
    r->idx[d] = cg_i64(M, 0);
  r->manifest = true;
  for (uint32_t i = 0; i < a->n; i++)
    r->manifest = r->manifest && cg_is_manifest(&a->l[i]);
}

void sk_row_at(cg_fn *f, sk_row *r, LLVMValueRef row) {
  LLVMBuilderRef b = f->M->b;
  r->base = LLVMBuildMul(b, row, r->n, "");
  if (r->manifest || r->rank < 2)
    return;
  LLVMValueRef rest = row;
  for (uint32_t d = r->rank - 1; d-- > 0;) {
    if (d == 0) {
      r->idx[0] = rest;
      break;
    }
    r->idx[d] = LLVMBuildURem(b, rest, r->a->l[0].ext[d], "");
    rest = LLVMBuildUDiv(b, rest, r->a->l[0].ext[d], "");
  }
}

void sk_row_read(cg_fn *f, sk_row *r, LLVMValueRef j, ir_ref at, cg_val *out) {
  cg_val_alloc(f->M, r->elem, out);
  LLVMValueRef lin = LLVMBuildAdd(f->M->b, r->base, j, "");
  r->idx[r->rank - 1] = j;
  for (uint32_t i = 0; i < r->a->n && i < out->n; i++) {
    const cg_leaf *l = &r->a->l[i];
    out->l[i].v = cg_is_manifest(l) ? cg_load_elem(f, l, lin) : cg_read(f, l, r->idx, false, at);
  }
}

void sk_load(cg_fn *f, const cg_val *v, ir_type elem, LLVMValueRef lin, cg_val *out) {
  cg_val_alloc(f->M, elem, out);
  for (uint32_t i = 0; i < v->n && i < out->n; i++)
    out->l[i].v = cg_load_elem(f, &v->l[i], lin);
}

void sk_store(cg_fn *f, const cg_val *v, LLVMValueRef lin, const cg_val *x) {
  for (uint32_t i = 0; i < v->n && i < x->n; i++)
    cg_store_elem(f, &v->l[i], lin, x->l[i].v);
}

void sk_apply2(cg_fn *f, ir_ref fn, const cg_val *x, const cg_val *y, bool swap, bool tmp,
               cg_val *out) {
  cg_val args[2];
  args[0] = swap ? *y : *x;
  args[1] = swap ? *x : *y;
  LLVMValueRef mark = tmp ? cg_tmp_mark(f) : NULL;
  cg_apply(f, fn, 2, args, out);
  if (tmp) /* elements are scalars: nothing of the result lives in the arena */
    cg_tmp_release(f, mark);
}

void sk_i64_val(cg_fn *f, LLVMValueRef v, cg_val *out) {
  cg_val_alloc(f->M, ir_ty_scalar(f->M->ctx, AC_I64), out);
  out->l[0].v = v;
}

LLVMBasicBlockRef sk_if(cg_fn *f, LLVMValueRef cond) {
  LLVMBasicBlockRef then = cg_block(f, "sk.then"), join = cg_block(f, "sk.join");
  LLVMBuildCondBr(f->M->b, cond, then, join);
  LLVMPositionBuilderAtEnd(f->M->b, then);
  return join;
}

void sk_endif(cg_fn *f, LLVMBasicBlockRef join) {
  LLVMBuildBr(f->M->b, join);
  LLVMPositionBuilderAtEnd(f->M->b, join);
}

/* ---- segment offsets ---- */

/* min(INT64_MAX, s + v) for s, v >= 0: the interpreter's saturating sum,
 * which only its message ever sees. */
static LLVMValueRef sk_sat_add(cg_fn *f, LLVMValueRef s, LLVMValueRef v) {
  LLVMBuilderRef b = f->M->b;
  LLVMValueRef room = LLVMBuildSub(b, cg_i64(f->M, INT64_MAX), s, "");
  LLVMValueRef over = LLVMBuildICmp(b, LLVMIntSGT, v, room, "");
  return LLVMBuildSelect(b, over, cg_i64(f->M, INT64_MAX), LLVMBuildAdd(b, s, v, ""), "");
}

/* (s1, n1) (+) (s2, n2) = (min(INT64_MAX, s1 + s2), n1 != 0 ? n1 : n2): the
 * pairs (sum of the non-negative lengths, first negative length or 0) of a
 * run of lengths, combined in order (gskel_segoffs.c scans the same). */
static void seg_comb(cg_fn *f, LLVMValueRef s1, LLVMValueRef n1, LLVMValueRef s2,
                     LLVMValueRef n2, LLVMValueRef *s, LLVMValueRef *n) {
  LLVMBuilderRef b = f->M->b;
  *s = sk_sat_add(f, s1, s2);
  *n = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntNE, n1, cg_i64(f->M, 0), ""), n1, n2, "");
}

/* The sites of the interpreter's two segment checks. */
static void seg_sites(cg_module *M, ir_ref at, const char *what, uint32_t *sneg,
                      uint32_t *ssum) {
  char fneg[120], fsum[160];
  snprintf(fneg, sizeof fneg, "%s: negative segment length %%lld", what);
  snprintf(fsum, sizeof fsum, "%s: segment lengths sum to %%lld but the array has %%lld elements",
           what);
  *sneg = cg_site(M, at, fneg);
  *ssum = cg_site(M, at, fsum);
}

void sk_run_offsets(cg_fn *f, const cg_leaf *lens, const cg_leaf *offs, LLVMValueRef lo,
                    LLVMValueRef hi, LLVMValueRef start) {
  cg_module *M = f->M;
  LLVMBuilderRef B = M->b;
  LLVMValueRef run = cg_alloca(f, M->t_i64);
  LLVMBuildStore(B, start, run);
  cg_loop l;
  LLVMValueRef q = cg_loop_begin(f, &l, lo, hi);
  LLVMValueRef o = LLVMBuildLoad2(B, M->t_i64, run, "");
  cg_store_elem(f, offs, q, o);
  LLVMValueRef v = lw_cg_int64(f, cg_load_elem(f, lens, q), (ac_scalar)lens->sc);
  LLVMBuildStore(B, LLVMBuildAdd(B, o, v, ""), run);
  cg_loop_end(f, &l);
}

/* Rounds of polling between two yields of a waiting chunk. */
#define SK_SPIN 64

void sk_wait_turn(cg_fn *f, LLVMValueRef done_p, LLVMValueRef turn) {
  cg_module *M = f->M;
  LLVMBuilderRef B = M->b;
  LLVMValueRef spins = cg_alloca(f, M->t_i64), one = cg_i64(M, 1);
  LLVMBuildStore(B, cg_i64(M, 0), spins);
  LLVMBasicBlockRef wait = cg_block(f, "turn.wait"), idle = cg_block(f, "turn.idle"),
                    nap = cg_block(f, "turn.yield"), go = cg_block(f, "turn.go");
  LLVMBuildBr(B, wait);
  LLVMPositionBuilderAtEnd(B, wait);
  LLVMValueRef d = LLVMBuildLoad2(B, M->t_i64, done_p, "");
  LLVMSetOrdering(d, LLVMAtomicOrderingAcquire);
  LLVMSetAlignment(d, 8);
  LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntSGE, d, turn, ""), go, idle);
  LLVMPositionBuilderAtEnd(B, idle);
  LLVMValueRef sp = LLVMBuildAdd(B, LLVMBuildLoad2(B, M->t_i64, spins, ""), one, "");
  LLVMBuildStore(B, sp, spins);
  LLVMValueRef due =
      LLVMBuildICmp(B, LLVMIntEQ, LLVMBuildAnd(B, sp, cg_i64(M, SK_SPIN - 1), ""), cg_i64(M, 0), "");
  LLVMBuildCondBr(B, due, nap, wait);
  LLVMPositionBuilderAtEnd(B, nap);
  cg_cpu_yield(f);
  LLVMBuildBr(B, wait);
  LLVMPositionBuilderAtEnd(B, go);
}

void sk_pass_turn(cg_fn *f, LLVMValueRef done_p, LLVMValueRef next) {
  LLVMValueRef st = LLVMBuildStore(f->M->b, next, done_p);
  LLVMSetOrdering(st, LLVMAtomicOrderingRelease);
  LLVMSetAlignment(st, 8);
}

LLVMValueRef sk_turn_word(lw *L, cg_fn *f, uint32_t k, const lw_val *w) {
  pl_kernel_use(L->p, k, w->words[0]);
  pl_kernel_write(L->p, k, w->words[0]);
  return cg_frame_word(f, w->words[0]);
}

/* "seg.offsets", one iteration per piece of lens, a chained scan in one
 * launch. Piece p sums its lengths (seg_comb's pair), waits until the frame
 * word `done` says that pieces 0..p-1 have added theirs to the running pair
 * (sum, neg) in the frame, adds its own, bumps `done` (release; the wait is
 * an acquire), and writes its offsets from the running sum it found. The
 * pool claims chunks in increasing order and a chunk runs its iterations in
 * order, so the piece waited for is running or done: no deadlock, and the
 * wait is short (the piece before only sums its lengths first). The last
 * piece holds the total: offs[nseg], then the checks in the interpreter's
 * order, unless `defer` (the caller checks the pair after replaying a
 * delayed operand's elements). */
static uint32_t seg_offsets_kernel(lw *L, ir_ref at, const char *what, const lw_val *lens,
                                   const lw_val *offs, const lw_val *Cw, const lw_val *nw,
                                   const lw_val *run, bool defer) {
  cg_module *M = L->M;
  LLVMBuilderRef B = M->b;
  uint32_t sneg = 0, ssum = 0;
  if (!defer)
    seg_sites(M, at, what, &sneg, &ssum);
  uint32_t k;
  cg_fn *f = lw_kernel_begin(L, at, "seg.offsets", 1, &k);
  cg_val lv, ov;
  lw_load(L, f, k, lens, &lv);
  lw_load(L, f, k, offs, &ov);
  LLVMValueRef C = sk_ld(L, f, k, Cw), n = sk_ld(L, f, k, nw), nseg = lv.l[0].ext[0];
  LLVMValueRef sum_p = sk_turn_word(L, f, k, &run[0]), neg_p = sk_turn_word(L, f, k, &run[1]),
               done_p = sk_turn_word(L, f, k, &run[2]);
  LLVMValueRef sum = cg_alloca(f, M->t_i64), neg = cg_alloca(f, M->t_i64);
  LLVMValueRef zero = cg_i64(M, 0), one = cg_i64(M, 1);
  cg_loop pl, kl;
  LLVMValueRef p = cg_loop_begin(f, &pl, f->lo, f->hi);
  LLVMValueRef lo = sk_piece_start(f, p, nseg, C);
  LLVMValueRef hi = sk_piece_start(f, LLVMBuildAdd(B, p, one, ""), nseg, C);
  /* the piece's own pair */
  LLVMBuildStore(B, zero, sum);
  LLVMBuildStore(B, zero, neg);
  LLVMValueRef kk = cg_loop_begin(f, &kl, lo, hi);
  LLVMValueRef v = lw_cg_int64(f, cg_load_elem(f, &lv.l[0], kk), (ac_scalar)lv.l[0].sc);
  LLVMValueRef isneg = LLVMBuildICmp(B, LLVMIntSLT, v, zero, "");
  LLVMValueRef s2, n2;
  seg_comb(f, LLVMBuildLoad2(B, M->t_i64, sum, ""), LLVMBuildLoad2(B, M->t_i64, neg, ""),
           LLVMBuildSelect(B, isneg, zero, v, ""), LLVMBuildSelect(B, isneg, v, zero, ""), &s2,
           &n2);
  LLVMBuildStore(B, s2, sum);
  LLVMBuildStore(B, n2, neg);
  cg_loop_end(f, &kl);
  /* wait for pieces 0..p-1 */
  sk_wait_turn(f, done_p, p);
  /* add the piece's pair to the running one, publish */
  LLVMValueRef cs = LLVMBuildLoad2(B, M->t_i64, sum_p, ""),
               cn = LLVMBuildLoad2(B, M->t_i64, neg_p, ""), ts, tn;
  seg_comb(f, cs, cn, LLVMBuildLoad2(B, M->t_i64, sum, ""), LLVMBuildLoad2(B, M->t_i64, neg, ""),
           &ts, &tn);
  LLVMBuildStore(B, ts, sum_p);
  LLVMBuildStore(B, tn, neg_p);
  sk_pass_turn(f, done_p, LLVMBuildAdd(B, p, one, ""));
  sk_run_offsets(f, &lv.l[0], &ov.l[0], lo, hi, cs);
  /* the last piece: the total and the checks */
  LLVMBasicBlockRef j = sk_if(f, LLVMBuildICmp(B, LLVMIntEQ, p, LLVMBuildSub(B, C, one, ""), ""));
  cg_store_elem(f, &ov.l[0], nseg, ts);
  if (!defer) {
    LLVMValueRef bad = LLVMBuildICmp(B, LLVMIntNE, tn, zero, "");
    cg_check(f, LLVMBuildNot(B, bad, ""), sneg, tn, NULL);
    cg_check(f, LLVMBuildOr(B, bad, LLVMBuildICmp(B, LLVMIntEQ, ts, n, ""), ""), ssum, ts, n);
  }
  sk_endif(f, j);
  cg_loop_end(f, &pl);
  lw_kernel_end(L, f);
  return k;
}

/* "seg.replay", one iteration per element: computes every element of the
 * delayed operand a (rank 1) and drops it, so that an element error is
 * raised, as the interpreter raises it before any segment check. */
static uint32_t seg_replay_kernel(lw *L, ir_ref at, const lw_val *a) {
  uint32_t k;
  ir_type elem;
  uint32_t rank;
  ir_ty_array_view(L->ctx, a->type, &elem, &rank);
  cg_fn *f = lw_kernel_begin(L, at, "seg.replay", 1, &k);
  cg_val av, x;
  lw_load(L, f, k, a, &av);
  sk_row r;
  sk_row_init(f, &av, elem, 1, &r);
  sk_row_at(f, &r, cg_i64(L->M, 0));
  cg_loop jl;
  LLVMValueRef j = cg_loop_begin(f, &jl, f->lo, f->hi);
  sk_row_read(f, &r, j, at, &x);
  cg_loop_end(f, &jl);
  lw_kernel_end(L, f);
  return k;
}

/* The checks seg_offsets_kernel deferred, from its pair (neg_x, sum_x):
 * when they fail, the delayed operand a's elements (a may be NULL) are
 * replayed first, so an element error is the one reported, as the
 * interpreter computes a before it looks at the lengths. At plan level:
 * on the CPU the pair's words are the host's at once; on a GPU (offsets
 * computed ahead of a loop) the first use fetches them. */
static void seg_deferred_checks(lw *L, ir_ref at, const char *what, const lw_val *a,
                                uint32_t n_x, uint32_t neg_x, uint32_t sum_x) {
  uint32_t zero = lw_x_const(L, 0);
  uint32_t bad = lw_x_bin(L, PX_MAX, lw_x_bin(L, PX_NE, neg_x, zero),
                          lw_x_bin(L, PX_NE, sum_x, n_x));
  char hneg[96], hsum[96];
  snprintf(hneg, sizeof hneg, "%s: negative segment length ", what);
  snprintf(hsum, sizeof hsum, "%s: segment lengths sum to ", what);
  lw_piece pneg[2] = {LW_TEXT(hneg), LW_VAL(neg_x)};
  lw_piece psum[5] = {LW_TEXT(hsum), LW_VAL(sum_x), LW_TEXT(" but the array has "), LW_VAL(n_x),
                      LW_TEXT(" elements")};
  pl_if(L->p, lw_x_to_word(L, bad));
  if (a) {
    uint32_t k = seg_replay_kernel(L, at, a);
    lw_launch(L, k, n_x,
              lw_x_bin(L, PX_MAX, lw_x_const(L, 1),
                       lw_x_bin(L, PX_CHUNKS, n_x, lw_x_const(L, FD_GRAIN))));
  }
  lw_check(L, lw_x_bin(L, PX_EQ, neg_x, zero), at, 2, pneg, 0, NULL);
  lw_check(L, lw_x_bin(L, PX_EQ, sum_x, n_x), at, 5, psum, 0, NULL);
  pl_end(L->p);
}

/* ---- offsets computed ahead of a loop ---- */

struct lw_hoisted {
  ir_ref at;     /* the segmented operation */
  lw_val offs;   /* its offsets */
  uint32_t neg;  /* words: the first negative length (or 0), the total */
  uint32_t sum;
  struct lw_hoisted *next;
};

static const struct lw_hoisted *seg_hoisted(lw *L, ir_ref at) {
  for (const struct lw_hoisted *h = L->hoisted; h; h = h->next)
    if (h->at == at)
      return h;
  return NULL;
}

void sk_free_offsets(lw *L, const lw_val *offs) {
  for (const struct lw_hoisted *h = L->hoisted; h; h = h->next)
    if (h->offs.words[0] == offs->words[0])
      return;
  sk_free(L, offs);
}

/* The offsets of lens with no check: the pair's words *neg and *sum. */
/* The CPU's offsets: the words run[3] (the pair and the turn), the
 * scratch *offs and one launch of seg_offsets_kernel (checks against n_x
 * unless `defer`). */
static void seg_offsets_cpu(lw *L, ir_ref at, const char *what, const lw_val *lens, uint32_t n_x,
                            bool defer, lw_val *offs, lw_val *run) {
  uint32_t nseg_x = lw_extent(L, lens, 0, 0);
  lw_val Cw, nw;
  sk_word(L, sk_pieces(L, lw_x_const(L, 1), nseg_x, FD_GRAIN), &Cw);
  sk_word(L, n_x, &nw);
  for (int i = 0; i < 3; i++)
    sk_word(L, lw_x_const(L, 0), &run[i]);
  sk_scratch(L, sk_ty_i64(L), lw_x_bin(L, PX_ADD, nseg_x, lw_x_const(L, 1)), at, offs);
  uint32_t k = seg_offsets_kernel(L, at, what, lens, offs, &Cw, &nw, run, defer);
  lw_launch(L, k, sk_xw(L, &Cw), sk_xw(L, &Cw));
}

static void seg_offsets_ahead(lw *L, ir_ref at, const lw_val *lens, lw_val *offs, uint32_t *neg,
                              uint32_t *sum) {
  if (L->gpu) {
    lw_val w[2];
    for (int i = 0; i < 2; i++)
      sk_word(L, lw_x_const(L, 0), &w[i]);
    *neg = w[0].words[0];
    *sum = w[1].words[0];
    lw_gpu_seg_offsets_ahead(L, at, lens, offs, *neg, *sum);
    return;
  }
  lw_val run[3];
  seg_offsets_cpu(L, at, "", lens, lw_x_const(L, 0), true, offs, run); /* n_x unused */
  *sum = run[0].words[0];
  *neg = run[1].words[0];
}

/* The lengths operand of a segmented operation, or 0. */
static ir_ref seg_lens(const ac_module *m, ir_ref e) {
  switch ((ir_op)ir_node_get(m, e)->op) {
  case IR_FOLD_SEG:
  case IR_SCAN_SEG:
    return ir_kid(m, e, 3);
  case IR_SCAN_INCL_SEG:
    return ir_kid(m, e, 2);
  default:
    return IR_NONE;
  }
}

/* The walk of lw_hoist_offsets: e under nb binders of the step; what is
 * evaluated at plan level each time the step runs (not lambdas: element
 * code and nested loops; not the branches of an if). */
static void seg_hoist_walk(lw *L, ir_ref e, uint32_t nb, unsigned depth) {
  const ac_module *m = L->m;
  const ir_node *n = ir_node_get(m, e);
  if (depth > 200 || n->op == IR_LAM || L->M->st != AC_OK)
    return;
  ir_ref lens = seg_lens(m, e);
  const ir_node *ln = lens ? ir_node_get(m, lens) : NULL;
  if (ln && ln->op == IR_VAR && ln->attr >= (int64_t)nb &&
      (uint64_t)(ln->attr - nb) < L->nenv && !seg_hoisted(L, e)) {
    /* bound outside the loop: the same lengths every time */
    const lw_val *lv = &L->env[L->nenv - 1 - (uint32_t)(ln->attr - nb)];
    struct lw_hoisted *h = cg_new(L->M, sizeof *h);
    h->at = e;
    seg_offsets_ahead(L, e, lv, &h->offs, &h->neg, &h->sum);
    h->next = L->hoisted;
    L->hoisted = h;
  }
  uint32_t nk = n->op == IR_IF ? 1 : n->nkids;
  for (uint32_t i = 0; i < nk; i++)
    seg_hoist_walk(L, ir_kid(m, e, i), nb + ir_binders(m, e, i), depth + 1);
}

struct lw_hoisted *lw_hoist_offsets(lw *L, ir_ref step, uint32_t nb) {
  struct lw_hoisted *mark = L->hoisted;
  const ir_node *n = ir_node_get(L->m, step);
  if (n->op == IR_LAM)
    seg_hoist_walk(L, ir_kid(L->m, step, 0), (uint32_t)n->attr, 0);
  else if (nb)
    seg_hoist_walk(L, step, nb, 0);
  return mark;
}

void lw_hoist_end(lw *L, struct lw_hoisted *mark) {
  while (L->hoisted && L->hoisted != mark) {
    sk_free(L, &L->hoisted->offs);
    L->hoisted = L->hoisted->next;
  }
}

bool sk_seg_offsets(lw *L, ir_ref at, const char *what, const lw_val *lens, uint32_t n_x,
                    const lw_val *data, lw_val *offs) {
  const struct lw_hoisted *h = seg_hoisted(L, at);
  if (h) { /* computed ahead of the loop: the checks, here */
    *offs = h->offs;
    seg_deferred_checks(L, at, what, data && lw_delayed_may_fail(L, data) ? data : NULL, n_x,
                        lw_x_word(L, h->neg), lw_x_word(L, h->sum));
    return L->M->st == AC_OK;
  }
  bool defer = data && lw_delayed_may_fail(L, data);
  if (L->gpu) /* one decoupled look-back scan kernel instead (gskel_segoffs.c) */
    return lw_gpu_seg_offsets(L, at, what, lens, n_x, defer ? data : NULL, offs);
  lw_val run[3];
  seg_offsets_cpu(L, at, what, lens, n_x, defer, offs, run);
  if (defer)
    seg_deferred_checks(L, at, what, data, n_x, sk_xw(L, &run[1]), sk_xw(L, &run[0]));
  return L->M->st == AC_OK;
}

/* ---- fold ---- */

typedef struct fd_ctx {
  lw *L;
  ir_ref e, fn;
  ir_type elem;
  uint32_t rank;
  bool tmp; /* f allocates temporary memory: bracket each application */
  lw_val a, z, part, Cw, rows, out;
} fd_ctx;

/* acc = f(acc, x) with the reassociation flag (fold and scan loops). */
static void fd_combine(cg_fn *f, const fd_ctx *c, cg_var *acc, const cg_val *x) {
  cg_val cur, next;
  cg_var_load(f, acc, &cur);
  f->reassoc = true;
  sk_apply2(f, c->fn, &cur, x, false, c->tmp, &next);
  f->reassoc = false;
  cg_var_store(f, acc, &next);
}

/* Row `row` folded from z, its partials part[row*C ..) combined in piece
 * order, its result stored (out[row], or the frame for rank 1) and
 * returned in *res. */
static void fd_combine_row(cg_fn *f, const fd_ctx *c, uint32_t k, cg_var *acc, const cg_val *pv,
                           const cg_val *zv, const cg_val *ov, LLVMValueRef row, LLVMValueRef C,
                           cg_val *res) {
  cg_module *M = f->M;
  cg_val x;
  cg_var_store(f, acc, zv);
  cg_loop pl;
  LLVMValueRef first = LLVMBuildMul(M->b, row, C, "");
  LLVMValueRef p = cg_loop_begin(f, &pl, cg_i64(M, 0), C);
  sk_load(f, pv, c->elem, LLVMBuildAdd(M->b, first, p, ""), &x);
  fd_combine(f, c, acc, &x);
  cg_loop_end(f, &pl);
  cg_var_load(f, acc, res);
  if (c->rank > 1)
    sk_store(f, ov, row, res);
  else
    lw_store(c->L, f, k, &c->out, res);
}

/* "fold", one kernel. With C == 1, iteration r folds row r from z and
 * stores it. With C > 1, iteration i folds piece i % C of row i / C from
 * its first element into part[i]; then every chunk takes a ticket (an
 * atomic add on a frame word, release and acquire), and the chunk that
 * takes the last one, when every piece is done, combines each row's
 * partials in piece order from z (the GPU fold's last-block ticket, on the
 * CPU's chunks): deterministic, and no second launch. A scalar epilogue
 * (lw_epilogue) runs after the rank-1 result, in the thread that made it. */
static uint32_t fd_kernel(const fd_ctx *c, const lw_val *ticket, const lw_val *nchunks) {
  lw *L = c->L;
  cg_module *M = L->M;
  uint32_t k;
  bool epi = c->rank == 1 && lw_epilogue_wanted(L, c->e);
  cg_fn *f = lw_kernel_begin(L, lw_epilogue_at(L, c->e), "fold", 1, &k);
  cg_val av, pv, zv, ov = {0, 0, NULL}, x, res;
  lw_load(L, f, k, &c->a, &av);
  lw_load(L, f, k, &c->part, &pv);
  lw_load(L, f, k, &c->z, &zv);
  if (c->rank > 1)
    lw_load(L, f, k, &c->out, &ov);
  LLVMValueRef C = sk_ld(L, f, k, &c->Cw), one = cg_i64(M, 1);
  LLVMValueRef multi = LLVMBuildICmp(M->b, LLVMIntNE, C, one, "");
  sk_row r;
  sk_row_init(f, &av, c->elem, c->rank, &r);
  cg_var acc;
  cg_var_new(f, c->elem, &acc);
  cg_loop il, jl;
  LLVMValueRef i = cg_loop_begin(f, &il, f->lo, f->hi);
  LLVMBasicBlockRef whole = cg_block(f, "fold.row"), piece = cg_block(f, "fold.piece"),
                    next = cg_block(f, "fold.next");
  LLVMBuildCondBr(M->b, multi, piece, whole);
  /* C == 1: the row from z */
  LLVMPositionBuilderAtEnd(M->b, whole);
  sk_row_at(f, &r, i);
  cg_var_store(f, &acc, &zv);
  LLVMValueRef j = cg_loop_begin(f, &jl, cg_i64(M, 0), r.n);
  sk_row_read(f, &r, j, c->e, &x);
  fd_combine(f, c, &acc, &x);
  cg_loop_end(f, &jl);
  cg_var_load(f, &acc, &res);
  if (c->rank > 1)
    sk_store(f, &ov, i, &res);
  else
    lw_store(L, f, k, &c->out, &res);
  if (epi) /* rank 1, C == 1: one row, one iteration, one chunk */
    lw_epilogue(L, f, k, &res);
  LLVMBuildBr(M->b, next);
  /* C > 1: a piece from its first element */
  LLVMPositionBuilderAtEnd(M->b, piece);
  LLVMValueRef p = LLVMBuildURem(M->b, i, C, "");
  sk_row_at(f, &r, LLVMBuildUDiv(M->b, i, C, ""));
  LLVMValueRef lo = sk_piece_start(f, p, r.n, C);
  LLVMValueRef hi = sk_piece_start(f, LLVMBuildAdd(M->b, p, one, ""), r.n, C);
  sk_row_read(f, &r, lo, c->e, &x);
  cg_var_store(f, &acc, &x);
  j = cg_loop_begin(f, &jl, LLVMBuildAdd(M->b, lo, one, ""), hi);
  sk_row_read(f, &r, j, c->e, &x);
  fd_combine(f, c, &acc, &x);
  cg_loop_end(f, &jl);
  cg_var_load(f, &acc, &x);
  sk_store(f, &pv, i, &x);
  LLVMBuildBr(M->b, next);
  LLVMPositionBuilderAtEnd(M->b, next);
  cg_loop_end(f, &il);
  /* C > 1: the last chunk to finish combines */
  LLVMBasicBlockRef join = sk_if(f, multi);
  LLVMValueRef tp = cg_frame_word(f, ticket->words[0]);
  pl_kernel_use(L->p, k, ticket->words[0]);
  pl_kernel_write(L->p, k, ticket->words[0]);
  LLVMValueRef old =
      LLVMBuildAtomicRMW(M->b, LLVMAtomicRMWBinOpAdd, tp, one, LLVMAtomicOrderingAcquireRelease, 0);
  LLVMValueRef last =
      LLVMBuildICmp(M->b, LLVMIntEQ, old, LLVMBuildSub(M->b, sk_ld(L, f, k, nchunks), one, ""), "");
  LLVMBasicBlockRef lj = sk_if(f, last);
  cg_loop rl;
  LLVMValueRef row = cg_loop_begin(f, &rl, cg_i64(M, 0), sk_ld(L, f, k, &c->rows));
  fd_combine_row(f, c, k, &acc, &pv, &zv, &ov, row, C, &res);
  cg_loop_end(f, &rl);
  if (epi) { /* the one row's value, left in the accumulator */
    cg_var_load(f, &acc, &res);
    lw_epilogue(L, f, k, &res);
  }
  sk_endif(f, lj);
  sk_endif(f, join);
  lw_kernel_end(L, f);
  return k;
}

/* ---- the host side of fold and fold_seg (skel_red.h; also the GPU's) ---- */

bool sk_fold_operands(lw *L, ir_ref e, sk_fold *s) {
  ac_module *m = L->m;
  *s = (sk_fold){.fn = ir_kid(m, e, 0)};
  if (!lw_expr(L, ir_kid(m, e, 1), &s->z) || !lw_operand(L, e, 2, &s->a))
    return false;
  if (!ir_ty_array_view(L->ctx, s->a.type, &s->elem, &s->rank)) {
    cg_error(L->M, AC_ERR_INTERNAL, e, "fold of a value that is not an array");
    return false;
  }
  s->tmp = cg_needs_tmp(m, s->fn);
  lw_check_shapes(L, e, "fold", 1, &s->a);
  s->n_x = lw_extent(L, &s->a, 0, s->rank - 1);
  s->rows_x = sk_extent_product(L, &s->a, 0, s->rank - 1);
  return true;
}

bool sk_fold_seg_operands(lw *L, ir_ref e, sk_fold *s, lw_val *offs) {
  ac_module *m = L->m;
  *s = (sk_fold){.fn = ir_kid(m, e, 0), .seg = true};
  if (!lw_expr(L, ir_kid(m, e, 1), &s->z) || !lw_operand(L, e, 2, &s->a) ||
      !lw_expr(L, ir_kid(m, e, 3), &s->lens))
    return false;
  if (!ir_ty_array_view(L->ctx, s->a.type, &s->elem, &s->rank) || s->rank != 1) {
    cg_error(L->M, AC_ERR_INTERNAL, e, "fold_seg of a value that is not a rank-1 array");
    return false;
  }
  s->tmp = cg_needs_tmp(m, s->fn);
  lw_check_shapes(L, e, "fold_seg", 1, &s->a);
  s->n_x = lw_extent(L, &s->a, 0, 0);
  s->rows_x = lw_extent(L, &s->lens, 0, 0);
  return sk_seg_offsets(L, e, "fold_seg", &s->lens, s->n_x, &s->a, offs);
}

void sk_fold_result(lw *L, ir_ref e, const sk_fold *s, lw_val *out) {
  lw_fresh(L, ir_node_get(L->m, e)->type, out);
  if (s->seg) {
    lw_alloc_arrays(L, out, &s->rows_x, e);
  } else if (s->rank > 1) {
    uint32_t *ext = cg_new(L->M, (s->rank - 1) * sizeof *ext);
    for (uint32_t d = 0; d + 1 < s->rank; d++)
      ext[d] = lw_extent(L, &s->a, 0, d);
    lw_alloc_arrays(L, out, ext, e);
  }
}

bool lw_skel_fold(lw *L, ir_ref e, lw_val *out) {
  cg_module *M = L->M;
  sk_fold s;
  if (!sk_fold_operands(L, e, &s))
    return false;
  fd_ctx c = {
      .L = L, .e = e, .fn = s.fn, .elem = s.elem, .rank = s.rank, .tmp = s.tmp, .a = s.a, .z = s.z};
  uint32_t n_x = s.n_x, rows_x = s.rows_x;
  lw_val multi, ticket, nchunks;
  sk_word(L, sk_pieces(L, rows_x, n_x, FD_GRAIN), &c.Cw);
  sk_word(L, lw_x_bin(L, PX_NE, sk_xw(L, &c.Cw), lw_x_const(L, 1)), &multi);
  sk_word(L, rows_x, &c.rows);
  /* partials only when C > 1 (an empty scratch otherwise) */
  uint32_t iters = lw_x_bin(L, PX_MUL, rows_x, sk_xw(L, &c.Cw));
  sk_scratch(L, c.elem, lw_x_bin(L, PX_MUL, iters, sk_xw(L, &multi)), e, &c.part);
  sk_fold_result(L, e, &s, out);
  c.out = *out;
  /* as many chunks as the elements justify, at most one per iteration: C
   * pieces of a long row in parallel, or many short rows */
  uint32_t chunks = lw_x_bin(
      L, PX_MAX, lw_x_const(L, 1),
      lw_x_bin(L, PX_MIN, iters,
               lw_x_bin(L, PX_CHUNKS, lw_x_bin(L, PX_MUL, rows_x, n_x), lw_x_const(L, FD_GRAIN))));
  sk_word(L, chunks, &nchunks);
  sk_word(L, lw_x_const(L, 0), &ticket);
  uint32_t k = fd_kernel(&c, &ticket, &nchunks);
  lw_launch(L, k, iters, sk_xw(L, &nchunks));
  sk_free(L, &c.part);
  return M->st == AC_OK;
}

/* ---- fold_seg ---- */

/* "fold_seg": one iteration per segment, folded from z in order. */
static uint32_t fd_seg_kernel(const fd_ctx *c, const lw_val *offs) {
  lw *L = c->L;
  cg_module *M = L->M;
  uint32_t k;
  cg_fn *f = lw_kernel_begin(L, c->e, "fold_seg", 1, &k);
  cg_val av, zv, ov, sv, x;
  lw_load(L, f, k, &c->a, &av);
  lw_load(L, f, k, &c->z, &zv);
  lw_load(L, f, k, &c->out, &ov);
  lw_load(L, f, k, offs, &sv);
  sk_row r;
  sk_row_init(f, &av, c->elem, 1, &r);
  sk_row_at(f, &r, cg_i64(M, 0));
  cg_var acc;
  cg_var_new(f, c->elem, &acc);
  cg_loop sl, jl;
  LLVMValueRef s = cg_loop_begin(f, &sl, f->lo, f->hi);
  LLVMValueRef lo = cg_load_elem(f, &sv.l[0], s);
  LLVMValueRef hi = cg_load_elem(f, &sv.l[0], LLVMBuildAdd(M->b, s, cg_i64(M, 1), ""));
  cg_var_store(f, &acc, &zv);
  LLVMValueRef j = cg_loop_begin(f, &jl, lo, hi);
  sk_row_read(f, &r, j, c->e, &x);
  fd_combine(f, c, &acc, &x);
  cg_loop_end(f, &jl);
  cg_var_load(f, &acc, &x);
  sk_store(f, &ov, s, &x);
  cg_loop_end(f, &sl);
  lw_kernel_end(L, f);
  return k;
}

bool lw_skel_fold_seg(lw *L, ir_ref e, lw_val *out) {
  cg_module *M = L->M;
  sk_fold s;
  lw_val offs;
  if (!sk_fold_seg_operands(L, e, &s, &offs))
    return false;
  fd_ctx c = {
      .L = L, .e = e, .fn = s.fn, .elem = s.elem, .rank = s.rank, .tmp = s.tmp, .a = s.a, .z = s.z};
  uint32_t n_x = s.n_x, nseg_x = s.rows_x;
  sk_fold_result(L, e, &s, out);
  c.out = *out;
  uint32_t k = fd_seg_kernel(&c, &offs);
  /* as many chunks as the elements justify, at most one per segment */
  uint32_t chunks =
      lw_x_bin(L, PX_MAX, lw_x_const(L, 1),
               lw_x_bin(L, PX_MIN, nseg_x, lw_x_bin(L, PX_CHUNKS, n_x, lw_x_const(L, FD_GRAIN))));
  lw_launch(L, k, nseg_x, chunks);
  sk_free_offsets(L, &offs);
  return M->st == AC_OK;
}
