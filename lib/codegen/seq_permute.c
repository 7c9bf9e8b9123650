/* lib/codegen/seq_permute.c: permutations and index-space changes in
 * element code (docs/language.md §7.6 - §7.8), following
 * lib/interp/permute.c.
 *
 * gather, backpermute, scatter and permute move elements by computed
 * indices; every index is checked in the interpreter's order with its
 * messages (reads name the first offending dimension, writes the whole
 * index against the destination's shape), and an element is moved only
 * when its index is in range. scatter keeps a bitmap of written positions
 * in temporary memory to refuse a second write, as the interpreter does.
 *
 * The index-space changes copy through one loop nest over the result
 * (remap), except where the result is the input's memory unchanged: a
 * reshape of manifest arrays and a rank-1 slice without a stride are views
 * (same data, new extents), which costs nothing and is safe because arrays
 * are immutable once built.
 */
#include "codegen/seq_impl.h"
#include "interp/rtarray.h" /* RT_ARRAY_MAX_BYTES: the size limit reshape checks against */

#include <stdio.h>

static const char *op_name(cg_module *M, ir_ref e) {
  return ir_ops[ir_node_get(M->m, e)->op].spelling;
}

/* The checks of interp's locate for index pos in extents ext, in its
 * order; returns the condition that pos is inside. */
static LLVMValueRef locate(cg_fn *f, ir_ref at, bool write, uint32_t rank, LLVMValueRef *ext,
                           LLVMValueRef *pos) {
  cg_module *M = f->M;
  const char *what = op_name(M, at);
  LLVMValueRef all = LLVMConstInt(M->t_i1, 1, 0);
  LLVMValueRef *vals = cg_new(M, (2 * (size_t)rank + 2) * sizeof *vals);
  for (uint32_t j = 0; j < rank; j++) {
    vals[2 + j] = pos[j];
    vals[2 + rank + j] = ext[j];
  }
  for (uint32_t d = 0; d < rank; d++) {
    vals[0] = pos[d];
    vals[1] = ext[d];
    /* 0 <= pos < ext in one unsigned comparison (ext >= 0) */
    LLVMValueRef ok = LLVMBuildICmp(M->b, LLVMIntULT, pos[d], ext[d], "");
    ir_buf b;
    ir_buf_init(&b, M->ctx);
    if (!write) {
      ir_buf_printf(&b, "%s: index {0} out of bounds for dimension %u of extent {1}", what, d);
    } else {
      ir_buf_printf(&b, "%s: index ", what);
      cg_seq_put_list(&b, '(', ')', rank, d, 0, 2);
      ir_buf_puts(&b, rank == 1 ? " out of range for extent " : " out of range for shape ");
      if (rank == 1)
        ir_buf_puts(&b, "{1}");
      else
        cg_seq_put_list(&b, '[', ']', rank, d, 1, 2 + rank);
    }
    cg_seq_check_buf(f, at, ok, &b, 2 + 2 * rank, vals);
    all = LLVMBuildAnd(M->b, all, ok, "");
  }
  return all;
}

/* dst[dlin] = src[sidx] for every leaf. */
static void move_elem(cg_fn *f, const seq_arr *src, LLVMValueRef *sidx, const seq_arr *dst,
                      LLVMValueRef dlin) {
  for (uint32_t i = 0; i < src->n && i < dst->n; i++)
    cg_store_elem(f, &dst->l[i], dlin, cg_read(f, &src->l[i], sidx, false, 0));
}

/* Applies index function lam to the q indices idx and reads the result as
 * r integers (i64); the application's scratch is released before return,
 * the integers being registers. */
static void index_fn(cg_fn *f, ir_ref lam, uint32_t q, LLVMValueRef *idx, uint32_t r,
                     LLVMValueRef *pos) {
  cg_module *M = f->M;
  cg_val *args = cg_new(M, (q + 1) * sizeof *args), res;
  cg_seq_index_args(f, lam, q, idx, args);
  LLVMValueRef mark = cg_seq_mark(f, cg_needs_tmp(M->m, lam));
  cg_apply(f, lam, q, args, &res);
  cg_seq_ints(f, &res, r, pos);
  cg_seq_release(f, mark);
}

/* gather(idx, a): out[k] = a[idx[k]], out of idx's shape. */
void cg_seq_gather(cg_fn *f, ir_ref e, cg_val *out) {
  cg_module *M = f->M;
  cg_val iv, av, ix;
  cg_seq_operand(f, ir_kid(M->m, e, 0), &iv);
  cg_seq_operand(f, ir_kid(M->m, e, 1), &av);
  seq_arr I, A, o;
  cg_seq_view(f, e, "gather", &iv, &I);
  cg_seq_view(f, e, "gather", &av, &A);
  if (M->st == AC_OK && A.rank != I.n)
    cg_error(M, AC_ERR_INTERNAL, e, "gather with %u indices into rank %u", I.n, A.rank);
  if (M->st != AC_OK)
    return;
  cg_seq_alloc_elems(f, e, ir_node_get(M->m, e)->type, I.rank, I.ext, out, &o);
  seq_nest n;
  cg_seq_elems_begin(f, &n, o.rank, o.ext);
  LLVMValueRef lin = cg_linear(f, o.rank, o.ext, n.idx);
  LLVMValueRef *pos = cg_new(M, (A.rank + 1) * sizeof *pos);
  cg_seq_load(f, &I, n.idx, lin, IR_TY_NONE, &ix);
  cg_seq_ints(f, &ix, A.rank, pos);
  LLVMBasicBlockRef after = cg_seq_if(f, locate(f, e, false, A.rank, A.ext, pos));
  move_elem(f, &A, pos, &o, lin);
  cg_seq_endif(f, after);
  cg_seq_elems_end(f, &n);
}

/* backpermute(shape, |i..| src, a): out[ix] = a[src(ix)]. */
void cg_seq_backpermute(cg_fn *f, ir_ref e, cg_val *out) {
  cg_module *M = f->M;
  ir_type t = ir_node_get(M->m, e)->type;
  ir_ref lam = ir_kid(M->m, e, 1);
  uint32_t q = cg_seq_rank(M, t);
  LLVMValueRef *ext = cg_new(M, (q + 1) * sizeof *ext);
  cg_seq_shape(f, e, ir_kid(M->m, e, 0), q, ext);
  cg_val av;
  cg_seq_operand(f, ir_kid(M->m, e, 2), &av);
  seq_arr A, o;
  cg_seq_view(f, e, "backpermute", &av, &A);
  if (M->st != AC_OK)
    return;
  cg_seq_alloc_elems(f, e, t, q, ext, out, &o);
  seq_nest n;
  cg_seq_elems_begin(f, &n, q, o.ext);
  LLVMValueRef *pos = cg_new(M, (A.rank + 1) * sizeof *pos);
  index_fn(f, lam, q, n.idx, A.rank, pos);
  LLVMBasicBlockRef after = cg_seq_if(f, locate(f, e, false, A.rank, A.ext, pos));
  move_elem(f, &A, pos, &o, cg_linear(f, q, o.ext, n.idx));
  cg_seq_endif(f, after);
  cg_seq_elems_end(f, &n);
}

/* The destination of scatter and permute: a copy of dest's arrays. */
static void copy_dest(cg_fn *f, const seq_arr *D, const seq_arr *o) {
  for (uint32_t i = 0; i < D->n && i < o->n; i++)
    cg_seq_copy(f, &D->l[i], &o->l[i]);
}

/* scatter(idx, vals, dest): a copy of dest with out[idx[k]] = vals[k]; an
 * index out of range or written twice is an error. */
void cg_seq_scatter(cg_fn *f, ir_ref e, cg_val *out) {
  cg_module *M = f->M;
  LLVMBuilderRef B = M->b;
  cg_val iv, vv, dv, ix;
  cg_seq_operand(f, ir_kid(M->m, e, 0), &iv);
  cg_seq_operand(f, ir_kid(M->m, e, 1), &vv);
  cg_seq_operand(f, ir_kid(M->m, e, 2), &dv);
  /* idx and vals side by side: one view checks that all their arrays agree */
  cg_leaf *iv_l = cg_seq_leaves(M, iv.n + vv.n);
  for (uint32_t i = 0; i < iv.n + vv.n; i++)
    iv_l[i] = i < iv.n ? iv.l[i] : vv.l[i - iv.n];
  seq_arr IV, D, o;
  cg_seq_view_leaves(f, e, "scatter", iv.n + vv.n, iv_l, &IV);
  cg_seq_view(f, e, "scatter", &dv, &D);
  if (M->st == AC_OK && D.rank != iv.n)
    cg_error(M, AC_ERR_INTERNAL, e, "scatter with %u indices into rank %u", iv.n, D.rank);
  if (M->st != AC_OK)
    return;
  uint32_t r = D.rank;
  LLVMValueRef eight = cg_i64(M, 8);
  LLVMValueRef bits = cg_tmp_alloc(
      f, LLVMBuildAdd(B, LLVMBuildUDiv(B, cg_seq_size(f, r, D.ext), eight, ""), cg_i64(M, 1), ""),
      e);
  cg_seq_alloc(f, e, ir_node_get(M->m, e)->type, r, D.ext, out, &o);
  /* sized from o's extents, which are 0 if an allocation failed */
  LLVMValueRef nbits = cg_seq_size(f, r, o.ext);
  LLVMBuildMemSet(B, bits, LLVMConstInt(M->t_i8, 0, 0),
                  LLVMBuildAdd(B, LLVMBuildUDiv(B, nbits, eight, ""), cg_i64(M, 1), ""), 1);
  copy_dest(f, &D, &o);
  seq_arr I = {iv.n, IV.l, IV.rank, IV.ext}, V = {vv.n, IV.l + iv.n, IV.rank, IV.ext};
  seq_nest n;
  cg_seq_nest_begin(f, &n, IV.rank, IV.ext);
  LLVMValueRef *pos = cg_new(M, (r + 1) * sizeof *pos);
  cg_seq_load(f, &I, n.idx, NULL, IR_TY_NONE, &ix);
  cg_seq_ints(f, &ix, r, pos);
  LLVMBasicBlockRef after = cg_seq_if(f, locate(f, e, true, r, o.ext, pos));
  LLVMValueRef lin = cg_linear(f, r, o.ext, pos);
  LLVMValueRef at_byte = LLVMBuildUDiv(B, lin, eight, "");
  LLVMValueRef byte = LLVMBuildGEP2(B, M->t_i8, bits, &at_byte, 1, "");
  LLVMValueRef mask =
      LLVMBuildShl(B, LLVMConstInt(M->t_i8, 1, 0),
                   LLVMBuildTrunc(B, LLVMBuildURem(B, lin, eight, ""), M->t_i8, ""), "");
  LLVMValueRef old = LLVMBuildLoad2(B, M->t_i8, byte, "");
  LLVMValueRef fresh =
      LLVMBuildICmp(B, LLVMIntEQ, LLVMBuildAnd(B, old, mask, ""), LLVMConstInt(M->t_i8, 0, 0), "");
  ir_buf b;
  ir_buf_init(&b, M->ctx);
  ir_buf_puts(&b, "scatter: index ");
  cg_seq_put_list(&b, '(', ')', r, UINT32_MAX, 0, 0);
  ir_buf_puts(&b, " written twice");
  cg_seq_check_buf(f, e, fresh, &b, r, pos);
  LLVMBuildStore(B, LLVMBuildOr(B, old, mask, ""), byte);
  move_elem(f, &V, n.idx, &o, lin);
  cg_seq_endif(f, after);
  cg_seq_nest_end(f, &n);
}

/* permute(comb, dest, |i..| dst, a): a copy of dest, then for each ix of a
 * in row-major order out[d] = comb(out[d], a[ix]) with d = dst(ix). */
void cg_seq_permute(cg_fn *f, ir_ref e, cg_val *out) {
  cg_module *M = f->M;
  ir_ref comb = ir_kid(M->m, e, 0), dst = ir_kid(M->m, e, 2);
  cg_val dv, av, cur, x, res;
  cg_seq_operand(f, ir_kid(M->m, e, 1), &dv);
  cg_seq_operand(f, ir_kid(M->m, e, 3), &av);
  seq_arr D, A, o;
  cg_seq_view(f, e, "permute", &dv, &D);
  cg_seq_view(f, e, "permute", &av, &A);
  if (M->st != AC_OK)
    return;
  cg_seq_alloc(f, e, ir_node_get(M->m, e)->type, D.rank, D.ext, out, &o);
  copy_dest(f, &D, &o);
  seq_nest n;
  cg_seq_nest_begin(f, &n, A.rank, A.ext);
  LLVMValueRef *pos = cg_new(M, (D.rank + 1) * sizeof *pos);
  index_fn(f, dst, A.rank, n.idx, D.rank, pos);
  LLVMBasicBlockRef after = cg_seq_if(f, locate(f, e, true, D.rank, o.ext, pos));
  LLVMValueRef lin = cg_linear(f, D.rank, o.ext, pos);
  cg_seq_load(f, &o, pos, lin, cg_seq_param(M, comb, 0), &cur);
  cg_seq_load(f, &A, n.idx, NULL, cg_seq_param(M, comb, 1), &x);
  cg_val args[2] = {cur, x};
  LLVMValueRef mark = cg_seq_mark(f, cg_needs_tmp(M->m, comb));
  cg_apply(f, comb, 2, args, &res);
  cg_seq_store(f, &o, lin, &res);
  cg_seq_release(f, mark);
  cg_seq_endif(f, after);
  cg_seq_nest_end(f, &n);
}

/* ---- index space ---- */

typedef enum seq_remap { RM_SLICE, RM_TRANSPOSE, RM_REVERSE, RM_REPLICATE } seq_remap;

/* dst[ix] = src[map(ix)] over dst's extents; start and stride are the
 * slice's (safe: in range whenever dst is not empty). */
static void remap(cg_fn *f, seq_remap kind, const seq_arr *src, const seq_arr *dst,
                  LLVMValueRef *start, LLVMValueRef *stride) {
  cg_module *M = f->M;
  LLVMBuilderRef B = M->b;
  seq_nest n;
  cg_seq_nest_begin(f, &n, dst->rank, dst->ext);
  uint32_t r = src->rank;
  LLVMValueRef *sidx = cg_new(M, (r + 1) * sizeof *sidx);
  for (uint32_t d = 0; d < r; d++)
    sidx[d] = n.idx[kind == RM_REPLICATE ? d + 1 : d];
  if (kind == RM_SLICE) {
    for (uint32_t d = 0; d < r; d++)
      sidx[d] = LLVMBuildAdd(B, start[d], LLVMBuildMul(B, n.idx[d], stride[d], ""), "");
  } else if (kind == RM_TRANSPOSE) {
    sidx[r - 2] = n.idx[r - 1];
    sidx[r - 1] = n.idx[r - 2];
  } else if (kind == RM_REVERSE) {
    LLVMValueRef last = LLVMBuildSub(B, src->ext[r - 1], cg_i64(M, 1), "");
    sidx[r - 1] = LLVMBuildSub(B, last, n.idx[r - 1], "");
  }
  move_elem(f, src, sidx, dst, cg_linear(f, dst->rank, dst->ext, n.idx));
  cg_seq_nest_end(f, &n);
}

static bool all_manifest(const seq_arr *a) {
  for (uint32_t i = 0; i < a->n; i++)
    if (!cg_is_manifest(&a->l[i]))
      return false;
  return true;
}

/* Result leaves sharing the memory of a's leaves from element `off` on
 * (NULL: from 0), with extents ext. */
static void view_of(cg_fn *f, const seq_arr *a, ir_type t, uint32_t rank, LLVMValueRef *ext,
                    LLVMValueRef off, cg_val *out) {
  cg_module *M = f->M;
  out->type = t;
  out->n = a->n;
  out->l = cg_seq_leaves(M, a->n);
  for (uint32_t i = 0; i < a->n; i++) {
    cg_leaf *l = &out->l[i];
    *l = a->l[i];
    l->rank = rank;
    l->ext = cg_new(M, (rank + 1) * sizeof *l->ext);
    for (uint32_t d = 0; d < rank; d++)
      l->ext[d] = ext[d];
    if (off)
      l->v = LLVMBuildGEP2(M->b, cg_mem_type(M, (ac_scalar)l->sc), l->v, &off, 1, "");
  }
}

void cg_seq_slice_bounds(cg_fn *f, ir_ref e, const seq_arr *A, LLVMValueRef *start,
                         LLVMValueRef *stride, LLVMValueRef *ext) {
  cg_module *M = f->M;
  LLVMBuilderRef B = M->b;
  uint32_t nk = ir_node_get(M->m, e)->nkids, r = A->rank;
  LLVMValueRef *stop = cg_new(M, (r + 1) * sizeof *stop);
  LLVMValueRef *dst[3] = {start, stop, stride};
  for (uint32_t i = 1; i < nk && i <= 3; i++) {
    cg_val b;
    cg_expr(f, ir_kid(M->m, e, i), &b);
    cg_seq_ints(f, &b, r, dst[i - 1]);
  }
  LLVMValueRef zero = cg_i64(M, 0), one = cg_i64(M, 1);
  for (uint32_t d = 0; d < r; d++) {
    char dim[48] = "", msg[160];
    if (r > 1)
      snprintf(dim, sizeof dim, " in dimension %u", d);
    if (nk < 4)
      stride[d] = one;
    /* one check per cause (they exclude each other), each naming first
     * the values that explain it */
    LLVMValueRef neg = LLVMBuildICmp(B, LLVMIntSLT, start[d], zero, "");
    LLVMValueRef cross = LLVMBuildICmp(B, LLVMIntSGT, start[d], stop[d], "");
    LLVMValueRef past = LLVMBuildICmp(B, LLVMIntSGT, stop[d], A->ext[d], "");
    LLVMValueRef bad = LLVMBuildOr(B, neg, LLVMBuildOr(B, cross, past, ""), "");
    LLVMValueRef early[3] = {start[d], stop[d], A->ext[d]},
                 late[3] = {stop[d], A->ext[d], start[d]};
    snprintf(msg, sizeof msg, "slice: bounds {0}..{1} out of range for extent {2}%s", dim);
    cg_seq_check(f, e, LLVMBuildNot(B, LLVMBuildOr(B, neg, cross, ""), ""), msg, 3, early);
    snprintf(msg, sizeof msg, "slice: bounds {2}..{0} out of range for extent {1}%s", dim);
    cg_seq_check(f, e, LLVMBuildNot(B, past, ""), msg, 3, late);
    LLVMValueRef ok = LLVMBuildNot(B, bad, "");
    LLVMValueRef pos = LLVMBuildICmp(B, LLVMIntSGE, stride[d], one, "");
    snprintf(msg, sizeof msg, "slice: stride {0} is not positive%s", dim);
    cg_seq_check(f, e, LLVMBuildOr(B, bad, pos, ""), msg, 1, &stride[d]);
    ok = LLVMBuildAnd(B, ok, pos, "");
    /* safe values: a failed dimension is empty and starts at 0 */
    start[d] = LLVMBuildSelect(B, ok, start[d], zero, "");
    stop[d] = LLVMBuildSelect(B, ok, stop[d], zero, "");
    stride[d] = LLVMBuildSelect(B, ok, stride[d], one, "");
    LLVMValueRef span = LLVMBuildSub(B, stop[d], start[d], "");
    LLVMValueRef q =
        LLVMBuildAdd(B, LLVMBuildSDiv(B, LLVMBuildSub(B, span, one, ""), stride[d], ""), one, "");
    ext[d] = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntEQ, span, zero, ""), zero, q, "");
  }
}

/* slice(a, start, stop[, stride]): per dimension 0 <= start <= stop <=
 * extent and stride >= 1; extent ceil((stop - start) / stride). */
void cg_seq_slice(cg_fn *f, ir_ref e, cg_val *out) {
  cg_module *M = f->M;
  const ir_node *nd = ir_node_get(M->m, e);
  uint32_t nk = nd->nkids;
  ir_type t = nd->type;
  cg_val av;
  cg_seq_operand(f, ir_kid(M->m, e, 0), &av);
  seq_arr A, o;
  cg_seq_view(f, e, "slice", &av, &A);
  if (M->st != AC_OK || (nk != 3 && nk != 4)) {
    if (M->st == AC_OK)
      cg_error(M, AC_ERR_INTERNAL, e, "slice with %u children", nk);
    return;
  }
  uint32_t r = A.rank;
  LLVMValueRef *start = cg_new(M, (r + 1) * sizeof *start);
  LLVMValueRef *stride = cg_new(M, (r + 1) * sizeof *stride);
  LLVMValueRef *ext = cg_new(M, (r + 1) * sizeof *ext);
  cg_seq_slice_bounds(f, e, &A, start, stride, ext);
  if (nk == 3 && r == 1 && all_manifest(&A)) {
    view_of(f, &A, t, 1, ext, start[0], out);
    return;
  }
  cg_seq_alloc(f, e, t, r, ext, out, &o);
  remap(f, RM_SLICE, &A, &o, start, stride);
}

void cg_seq_reshape_check(cg_fn *f, ir_ref e, const seq_arr *A, uint32_t q, LLVMValueRef *ext) {
  cg_module *M = f->M;
  LLVMBuilderRef B = M->b;
  LLVMValueRef zero = cg_i64(M, 0), fls = LLVMConstInt(M->t_i1, 0, 0);
  LLVMValueRef limit = cg_i64(M, RT_ARRAY_MAX_BYTES);
  LLVMValueRef big = fls, anyzero = fls, count = cg_i64(M, 1);
  for (uint32_t d = 0; d < q; d++) {
    big = LLVMBuildOr(B, big, LLVMBuildICmp(B, LLVMIntSGT, ext[d], limit, ""), "");
    anyzero = LLVMBuildOr(B, anyzero, LLVMBuildICmp(B, LLVMIntEQ, ext[d], zero, ""), "");
    /* count * ext > limit, tested without overflowing (ext >= 1 here) */
    LLVMValueRef e1 = cg_smax(f->M, ext[d], cg_i64(M, 1));
    big = LLVMBuildOr(B, big,
                      LLVMBuildICmp(B, LLVMIntSGT, count, LLVMBuildSDiv(B, limit, e1, ""), ""), "");
    count = LLVMBuildSelect(B, big, zero, LLVMBuildMul(B, count, e1, ""), "");
  }
  /* an empty dimension makes the count 0 whatever the others are, but
   * every extent must still be below the limit */
  LLVMValueRef anybig = fls;
  for (uint32_t d = 0; d < q; d++)
    anybig = LLVMBuildOr(B, anybig, LLVMBuildICmp(B, LLVMIntSGT, ext[d], limit, ""), "");
  LLVMValueRef valid = LLVMBuildAnd(B, LLVMBuildNot(B, anybig, ""),
                                    LLVMBuildOr(B, anyzero, LLVMBuildNot(B, big, ""), ""), "");
  count = LLVMBuildSelect(B, anyzero, zero, count, "");
  /* the message's values: the element count, then the extents */
  LLVMValueRef *vals = cg_new(M, (q + 1) * sizeof *vals);
  vals[0] = cg_seq_size(f, A->rank, A->ext);
  for (uint32_t d = 0; d < q; d++)
    vals[d + 1] = ext[d];
  LLVMValueRef ok = LLVMBuildAnd(B, valid, LLVMBuildICmp(B, LLVMIntEQ, count, vals[0], ""), "");
  ir_buf b;
  ir_buf_init(&b, M->ctx);
  ir_buf_puts(&b, "reshape: cannot reshape {0} elements to ");
  cg_seq_put_list(&b, '[', ']', q, UINT32_MAX, 0, 1);
  cg_seq_check_buf(f, e, ok, &b, q + 1, vals);
  for (uint32_t d = 0; d < q; d++)
    ext[d] = LLVMBuildSelect(B, ok, ext[d], zero, "");
}

/* reshape(shape, a): the same elements in row-major order; a view of
 * manifest arrays. The element count is checked as rt_array_count does. */
void cg_seq_reshape(cg_fn *f, ir_ref e, cg_val *out) {
  cg_module *M = f->M;
  ir_type t = ir_node_get(M->m, e)->type;
  uint32_t q = cg_seq_rank(M, t);
  LLVMValueRef *ext = cg_new(M, (q + 1) * sizeof *ext);
  cg_seq_shape(f, e, ir_kid(M->m, e, 0), q, ext);
  cg_val av;
  cg_seq_operand(f, ir_kid(M->m, e, 1), &av);
  seq_arr A, o;
  cg_seq_view(f, e, "reshape", &av, &A);
  if (M->st != AC_OK)
    return;
  cg_seq_reshape_check(f, e, &A, q, ext);
  if (all_manifest(&A)) {
    view_of(f, &A, t, q, ext, NULL, out);
    return;
  }
  cg_seq_alloc(f, e, t, q, ext, out, &o);
  for (uint32_t i = 0; i < A.n && i < o.n; i++)
    cg_seq_copy(f, &A.l[i], &o.l[i]);
}

/* transpose(a), reverse(a), replicate(n, a): a copy through remap. */
void cg_seq_reorder(cg_fn *f, ir_ref e, cg_val *out) {
  cg_module *M = f->M;
  ir_op op = (ir_op)ir_node_get(M->m, e)->op;
  ir_type t = ir_node_get(M->m, e)->type;
  LLVMValueRef n = NULL;
  if (op == IR_REPLICATE)
    cg_seq_shape(f, e, ir_kid(M->m, e, 0), 1, &n);
  cg_val av;
  cg_seq_operand(f, ir_kid(M->m, e, op == IR_REPLICATE ? 1 : 0), &av);
  seq_arr A, o;
  cg_seq_view(f, e, ir_ops[op].spelling, &av, &A);
  if (M->st == AC_OK && op == IR_TRANSPOSE && A.rank < 2)
    cg_error(M, AC_ERR_INTERNAL, e, "transpose of an array of rank %u", A.rank);
  if (M->st != AC_OK)
    return;
  uint32_t r = A.rank, q = op == IR_REPLICATE ? r + 1 : r;
  LLVMValueRef *ext = cg_new(M, (q + 1) * sizeof *ext);
  for (uint32_t d = 0; d < r; d++)
    ext[op == IR_REPLICATE ? d + 1 : d] = A.ext[d];
  if (op == IR_REPLICATE)
    ext[0] = n;
  if (op == IR_TRANSPOSE) {
    ext[r - 2] = A.ext[r - 1];
    ext[r - 1] = A.ext[r - 2];
  }
  cg_seq_alloc(f, e, t, q, ext, out, &o);
  remap(f,
        op == IR_TRANSPOSE ? RM_TRANSPOSE
        : op == IR_REVERSE ? RM_REVERSE
                           : RM_REPLICATE,
        &A, &o, NULL, NULL);
}
