/* lib/lower/skel_filter.c: filter(p, a) on the CPU, by count-then-allocate
 * (runtime/plan.h: a result whose size is known only at run time).
 *
 * The interpreter (lib/interp/build.c) evaluates p once per element, in
 * order, then copies the kept elements in order. Here, over the pieces of
 * skel_red.h (rank 1, so C = chunks(n, grain) bounded by n):
 *   1. "filter.count": each piece counts its kept elements;
 *   2. "filter.offsets" (one chunk): the counts become each piece's first
 *      output position (an exclusive prefix sum) and their total goes to a
 *      frame word;
 *   3. the plan allocates the result with that extent;
 *   4. "filter.write": each piece copies its kept elements from its offset,
 *      so the order is preserved without any synchronisation.
 * p is pure, so phase 4 may evaluate it again instead of remembering phase
 * 1's answers; that is cheaper than a byte per element for the predicates
 * filters usually have (a comparison), but not for a predicate that runs a
 * nested array operation: then phase 1 keeps a byte mask and phase 4 reads
 * it. This is the stream-compaction scheme of Billeter et al., "Efficient
 * stream compaction on wide SIMD many-core architectures" (count, scan,
 * move), with pieces in the place of SIMD blocks.
 */
#include "lower/skel.h"
#include "lower/skel_red.h"

#define FL_GRAIN LW_GRAIN

typedef struct fl_ctx {
  lw *L;
  ir_ref e, pred;
  ir_type elem;
  bool tmp, mask;
  lw_val a, counts, keep, Cw, total, out;
} fl_ctx;

/* p(x) as an i1. */
static LLVMValueRef fl_test(cg_fn *f, const fl_ctx *c, const cg_val *x) {
  cg_val b;
  LLVMValueRef mark = c->tmp ? cg_tmp_mark(f) : NULL;
  cg_apply(f, c->pred, 1, x, &b);
  if (c->tmp)
    cg_tmp_release(f, mark);
  return b.l[0].v;
}

/* Bounds of the piece p of a row of n. */
static void fl_piece(cg_fn *f, LLVMValueRef p, LLVMValueRef n, LLVMValueRef C, LLVMValueRef *lo,
                     LLVMValueRef *hi) {
  *lo = sk_piece_start(f, p, n, C);
  *hi = sk_piece_start(f, LLVMBuildAdd(f->M->b, p, cg_i64(f->M, 1), ""), n, C);
}

static uint32_t fl_count_kernel(const fl_ctx *c) {
  lw *L = c->L;
  cg_module *M = L->M;
  uint32_t k;
  cg_fn *f = lw_kernel_begin(L, c->e, "filter.count", 1, &k);
  cg_val av, cv, kv, x;
  lw_load(L, f, k, &c->a, &av);
  lw_load(L, f, k, &c->counts, &cv);
  if (c->mask)
    lw_load(L, f, k, &c->keep, &kv);
  LLVMValueRef C = sk_ld(L, f, k, &c->Cw), lo, hi;
  sk_row r;
  sk_row_init(f, &av, c->elem, 1, &r);
  sk_row_at(f, &r, cg_i64(M, 0));
  LLVMValueRef cnt = cg_alloca(f, M->t_i64);
  cg_loop pl, jl;
  LLVMValueRef p = cg_loop_begin(f, &pl, f->lo, f->hi);
  fl_piece(f, p, r.n, C, &lo, &hi);
  LLVMBuildStore(M->b, cg_i64(M, 0), cnt);
  LLVMValueRef j = cg_loop_begin(f, &jl, lo, hi);
  sk_row_read(f, &r, j, c->e, &x);
  LLVMValueRef keep = fl_test(f, c, &x);
  if (c->mask)
    cg_store_elem(f, &kv.l[0], j, keep);
  LLVMValueRef n = LLVMBuildLoad2(M->b, M->t_i64, cnt, "");
  LLVMBuildStore(M->b, LLVMBuildAdd(M->b, n, LLVMBuildZExt(M->b, keep, M->t_i64, ""), ""), cnt);
  cg_loop_end(f, &jl);
  cg_store_elem(f, &cv.l[0], p, LLVMBuildLoad2(M->b, M->t_i64, cnt, ""));
  cg_loop_end(f, &pl);
  lw_kernel_end(L, f);
  return k;
}

static uint32_t fl_offsets_kernel(const fl_ctx *c) {
  lw *L = c->L;
  cg_module *M = L->M;
  uint32_t k;
  cg_fn *f = lw_kernel_begin(L, c->e, "filter.offsets", 1, &k);
  cg_val cv, tv;
  lw_load(L, f, k, &c->counts, &cv);
  LLVMValueRef C = sk_ld(L, f, k, &c->Cw);
  LLVMValueRef run = cg_alloca(f, M->t_i64);
  LLVMBuildStore(M->b, cg_i64(M, 0), run);
  cg_loop pl;
  LLVMValueRef p = cg_loop_begin(f, &pl, cg_i64(M, 0), C);
  LLVMValueRef n = cg_load_elem(f, &cv.l[0], p), s = LLVMBuildLoad2(M->b, M->t_i64, run, "");
  cg_store_elem(f, &cv.l[0], p, s);
  LLVMBuildStore(M->b, LLVMBuildAdd(M->b, s, n, ""), run);
  cg_loop_end(f, &pl);
  sk_i64_val(f, LLVMBuildLoad2(M->b, M->t_i64, run, ""), &tv);
  lw_store(L, f, k, &c->total, &tv);
  lw_kernel_end(L, f);
  return k;
}

static uint32_t fl_write_kernel(const fl_ctx *c) {
  lw *L = c->L;
  cg_module *M = L->M;
  uint32_t k;
  cg_fn *f = lw_kernel_begin(L, c->e, "filter.write", 1, &k);
  cg_val av, cv, kv, ov, x;
  lw_load(L, f, k, &c->a, &av);
  lw_load(L, f, k, &c->counts, &cv);
  lw_load(L, f, k, &c->out, &ov);
  if (c->mask)
    lw_load(L, f, k, &c->keep, &kv);
  LLVMValueRef C = sk_ld(L, f, k, &c->Cw), lo, hi;
  sk_row r;
  sk_row_init(f, &av, c->elem, 1, &r);
  sk_row_at(f, &r, cg_i64(M, 0));
  LLVMValueRef pos = cg_alloca(f, M->t_i64);
  cg_loop pl, jl;
  LLVMValueRef p = cg_loop_begin(f, &pl, f->lo, f->hi);
  fl_piece(f, p, r.n, C, &lo, &hi);
  LLVMBuildStore(M->b, cg_load_elem(f, &cv.l[0], p), pos);
  LLVMValueRef j = cg_loop_begin(f, &jl, lo, hi);
  sk_row_read(f, &r, j, c->e, &x);
  LLVMValueRef keep = c->mask ? cg_load_elem(f, &kv.l[0], j) : fl_test(f, c, &x);
  LLVMBasicBlockRef skip = sk_if(f, keep);
  LLVMValueRef at = LLVMBuildLoad2(M->b, M->t_i64, pos, "");
  sk_store(f, &ov, at, &x);
  LLVMBuildStore(M->b, LLVMBuildAdd(M->b, at, cg_i64(M, 1), ""), pos);
  sk_endif(f, skip);
  cg_loop_end(f, &jl);
  cg_loop_end(f, &pl);
  lw_kernel_end(L, f);
  return k;
}

bool lw_skel_filter(lw *L, ir_ref e, lw_val *out) {
  cg_module *M = L->M;
  ac_module *m = L->m;
  fl_ctx c = {.L = L, .e = e, .pred = ir_kid(m, e, 0)};
  uint32_t rank;
  if (!lw_operand(L, e, 1, &c.a))
    return false;
  if (!ir_ty_array_view(L->ctx, c.a.type, &c.elem, &rank) || rank != 1) {
    cg_error(M, AC_ERR_INTERNAL, e, "filter of a value that is not a rank-1 array");
    return false;
  }
  c.tmp = cg_needs_tmp(m, c.pred);
  c.mask = c.tmp;
  lw_check_shapes(L, e, "filter", 1, &c.a);
  uint32_t n_x = lw_extent(L, &c.a, 0, 0);
  sk_word(L, sk_pieces(L, lw_x_const(L, 1), n_x, FL_GRAIN), &c.Cw);
  sk_scratch(L, ir_ty_scalar(L->ctx, AC_I64), sk_xw(L, &c.Cw), e, &c.counts);
  if (c.mask)
    sk_scratch(L, ir_ty_scalar(L->ctx, AC_BOOL), n_x, e, &c.keep);
  lw_fresh(L, ir_ty_scalar(L->ctx, AC_I64), &c.total);
  uint32_t k1 = fl_count_kernel(&c), k2 = fl_offsets_kernel(&c);
  lw_launch(L, k1, sk_xw(L, &c.Cw), PL_AUTO);
  sk_launch1(L, k2);
  uint32_t ext = sk_xw(L, &c.total);
  lw_fresh(L, ir_node_get(m, e)->type, out);
  lw_alloc_arrays(L, out, &ext, e);
  c.out = *out;
  uint32_t k3 = fl_write_kernel(&c);
  lw_launch(L, k3, sk_xw(L, &c.Cw), PL_AUTO);
  sk_free(L, &c.counts);
  if (c.mask)
    sk_free(L, &c.keep);
  return M->st == AC_OK;
}
