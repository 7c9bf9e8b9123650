/* lib/codegen/seq_build.c: construction, map, filter and stencils in
 * element code (docs/language.md §7.2, §7.3, §7.9, §7.10), following
 * lib/interp/build.c and stencil.c.
 *
 * Each operation evaluates its arguments in the interpreter's order,
 * allocates its result in temporary memory and fills it in row-major order
 * (so the first failing element is the interpreter's). filter fills a
 * result of the input's length in one pass and then gives it the count as
 * its extent: one evaluation of the predicate per element, no second pass
 * and no keep-mask, at the price of an allocation of the full length.
 *
 * A stencil window is a CL_FUNC value, one leaf per element leaf of the
 * array, whose reader resolves the constant offsets against the element
 * being computed with the boundary rule, as interp_window_read does; the
 * offsets being constants, LLVM folds most of the resolution away.
 */
#include "codegen/seq_impl.h"

#include <string.h>

void cg_seq_generate(cg_fn *f, ir_ref e, cg_val *out) {
  cg_module *M = f->M;
  ir_type t = ir_node_get(M->m, e)->type;
  ir_ref lam = ir_kid(M->m, e, 1);
  uint32_t rank = cg_seq_rank(M, t);
  LLVMValueRef *ext = cg_new(M, (rank + 1) * sizeof *ext);
  cg_seq_shape(f, e, ir_kid(M->m, e, 0), rank, ext);
  seq_arr o;
  cg_seq_alloc_elems(f, e, t, rank, ext, out, &o);
  seq_nest n;
  cg_seq_elems_begin(f, &n, rank, o.ext);
  cg_val *args = cg_new(M, (rank + 1) * sizeof *args);
  cg_seq_index_args(f, lam, rank, n.idx, args);
  cg_seq_apply_store(f, lam, rank, args, &o, cg_linear(f, rank, o.ext, n.idx));
  cg_seq_elems_end(f, &n);
}

void cg_seq_iota(cg_fn *f, ir_ref e, cg_val *out) {
  cg_module *M = f->M;
  LLVMValueRef len;
  cg_seq_shape(f, e, ir_kid(M->m, e, 0), 1, &len);
  seq_arr o;
  cg_seq_alloc_elems(f, e, ir_node_get(M->m, e)->type, 1, &len, out, &o);
  seq_nest n;
  cg_seq_elems_begin(f, &n, 1, o.ext);
  if (o.n == 1)
    cg_store_elem(f, &o.l[0], n.idx[0], n.idx[0]);
  cg_seq_elems_end(f, &n);
}

void cg_seq_fill(cg_fn *f, ir_ref e, cg_val *out) {
  cg_module *M = f->M;
  ir_type t = ir_node_get(M->m, e)->type;
  uint32_t rank = cg_seq_rank(M, t);
  LLVMValueRef *ext = cg_new(M, (rank + 1) * sizeof *ext);
  cg_seq_shape(f, e, ir_kid(M->m, e, 0), rank, ext);
  cg_val x;
  cg_expr(f, ir_kid(M->m, e, 1), &x);
  seq_arr o;
  cg_seq_alloc_elems(f, e, t, rank, ext, out, &o);
  seq_nest n;
  cg_seq_elems_begin(f, &n, rank, o.ext);
  cg_seq_store(f, &o, cg_linear(f, rank, o.ext, n.idx), &x);
  cg_seq_elems_end(f, &n);
}

/* [e1, e2, ..]: kids are the elements in row-major order, attr the rank,
 * m->ints[aux..] the extents. */
void cg_seq_arrlit(cg_fn *f, ir_ref e, cg_val *out) {
  cg_module *M = f->M;
  const ir_node *n = ir_node_get(M->m, e);
  ir_type t = n->type;
  uint32_t rank = (uint32_t)n->attr, nk = n->nkids;
  if (n->attr < 1 || n->aux == 0 || n->aux + (uint64_t)rank > M->m->nints) {
    cg_error(M, AC_ERR_INTERNAL, e, "array literal without extents");
    return;
  }
  LLVMValueRef *ext = cg_new(M, (rank + 1) * sizeof *ext);
  int64_t count = 1;
  for (uint32_t d = 0; d < rank; d++) {
    ext[d] = cg_i64(M, M->m->ints[n->aux + d]);
    count *= M->m->ints[n->aux + d];
  }
  if (count != (int64_t)nk) {
    cg_error(M, AC_ERR_INTERNAL, e, "array literal with %u elements for its extents", nk);
    return;
  }
  seq_arr o;
  cg_seq_alloc(f, e, t, rank, ext, out, &o);
  /* the constant positions below are in range unless the allocation failed */
  LLVMValueRef ok =
      LLVMBuildICmp(M->b, LLVMIntEQ, cg_seq_size(f, rank, o.ext), cg_i64(M, (int64_t)nk), "");
  LLVMBasicBlockRef after = cg_seq_if(f, ok);
  for (uint32_t k = 0; k < nk; k++) {
    ir_ref kid = ir_kid(M->m, e, k);
    LLVMValueRef mark = cg_seq_mark(f, cg_needs_tmp(M->m, kid));
    cg_val x;
    cg_expr(f, kid, &x);
    cg_seq_store(f, &o, cg_i64(M, k), &x);
    cg_seq_release(f, mark);
  }
  cg_seq_endif(f, after);
}

/* map(f, a1, .., an): one shape check over the leaves of all the arrays. */
void cg_seq_map(cg_fn *f, ir_ref e, cg_val *out) {
  cg_module *M = f->M;
  uint32_t na = ir_node_get(M->m, e)->nkids - 1;
  ir_ref lam = ir_kid(M->m, e, 0);
  cg_val *args = cg_new(M, (na + 1) * sizeof *args);
  uint32_t total = 0;
  for (uint32_t i = 0; i < na; i++) {
    cg_seq_operand(f, ir_kid(M->m, e, i + 1), &args[i]);
    total += args[i].n;
  }
  cg_leaf *all = cg_seq_leaves(M, total);
  for (uint32_t i = 0, off = 0; i < na; off += args[i].n, i++)
    memcpy(all + off, args[i].l, args[i].n * sizeof *all);
  seq_arr a, o;
  cg_seq_view_leaves(f, e, "map", total, all, &a);
  if (M->st != AC_OK)
    return;
  cg_seq_alloc_elems(f, e, ir_node_get(M->m, e)->type, a.rank, a.ext, out, &o);
  seq_nest n;
  cg_seq_elems_begin(f, &n, o.rank, o.ext);
  LLVMValueRef lin = cg_linear(f, o.rank, o.ext, n.idx);
  cg_val *el = cg_new(M, (na + 1) * sizeof *el);
  for (uint32_t i = 0, off = 0; i < na; off += args[i].n, i++) {
    seq_arr ai = {args[i].n, all + off, a.rank, a.ext};
    cg_seq_load(f, &ai, n.idx, lin, cg_seq_param(M, lam, i), &el[i]);
  }
  cg_seq_apply_store(f, lam, na, el, &o, lin);
  cg_seq_elems_end(f, &n);
}

/* filter(p, a): kept elements are stored at the running count as they are
 * found. */
void cg_seq_filter(cg_fn *f, ir_ref e, cg_val *out) {
  cg_module *M = f->M;
  LLVMBuilderRef B = M->b;
  ir_ref lam = ir_kid(M->m, e, 0);
  cg_val av;
  cg_seq_operand(f, ir_kid(M->m, e, 1), &av);
  seq_arr a, o;
  cg_seq_view(f, e, "filter", &av, &a);
  if (M->st != AC_OK)
    return;
  if (f->coop != CG_COOP_NONE) { /* a warp or block filters the row together */
    cg_seq_alloc_elems(f, e, ir_node_get(M->m, e)->type, 1, a.ext, out, &o);
    LLVMValueRef kept = cg_coop_filter_row(f, lam, &a, &o, o.ext[0]);
    for (uint32_t i = 0; i < out->n; i++) {
      out->l[i].ext = cg_new(M, sizeof *out->l[i].ext);
      out->l[i].ext[0] = kept;
    }
    return;
  }
  cg_seq_alloc(f, e, ir_node_get(M->m, e)->type, 1, a.ext, out, &o);
  LLVMValueRef count = cg_alloca(f, M->t_i64);
  LLVMBuildStore(B, cg_i64(M, 0), count);
  cg_loop l;
  LLVMValueRef k = cg_loop_begin(f, &l, cg_i64(M, 0), o.ext[0]);
  cg_val el, keep;
  cg_seq_load(f, &a, &k, k, cg_seq_param(M, lam, 0), &el);
  LLVMValueRef mark = cg_seq_mark(f, cg_needs_tmp(M->m, lam));
  cg_apply(f, lam, 1, &el, &keep);
  cg_seq_release(f, mark);
  if (keep.n == 1) {
    LLVMBasicBlockRef after = cg_seq_if(f, keep.l[0].v);
    LLVMValueRef c = LLVMBuildLoad2(B, M->t_i64, count, "");
    cg_seq_store(f, &o, c, &el);
    LLVMBuildStore(B, LLVMBuildAdd(B, c, cg_i64(M, 1), ""), count);
    cg_seq_endif(f, after);
  } else {
    cg_error(M, AC_ERR_INTERNAL, e, "filter predicate without a bool result");
  }
  cg_loop_end(f, &l);
  LLVMValueRef kept = LLVMBuildLoad2(B, M->t_i64, count, "");
  for (uint32_t i = 0; i < out->n; i++) {
    out->l[i].ext = cg_new(M, sizeof *out->l[i].ext);
    out->l[i].ext[0] = kept;
  }
}

/* ---- stencils ---- */

typedef struct seq_window {
  int64_t boundary;  /* AC_BOUNDARY_* */
  seq_arr a;         /* the array (safe extents) */
  LLVMValueRef *cur; /* index of the element being computed */
  cg_val cval;       /* AC_BOUNDARY_CONST: the value */
} seq_window;

typedef struct seq_wleaf {
  const seq_window *w;
  uint32_t leaf;
} seq_wleaf;

/* Position along a dimension of extent n >= 1 read at offset o from cur
 * (interp's resolve), without forming cur + o where it could overflow.
 * *inside: false when outside and the boundary is a constant. */
static LLVMValueRef resolve(cg_fn *f, int64_t boundary, LLVMValueRef cur, LLVMValueRef o,
                            LLVMValueRef n, LLVMValueRef *inside) {
  cg_module *M = f->M;
  LLVMBuilderRef B = M->b;
  LLVMValueRef zero = cg_i64(M, 0), one = cg_i64(M, 1);
  LLVMValueRef below = LLVMBuildICmp(B, LLVMIntSLT, o, LLVMBuildNeg(B, cur, ""), "");
  LLVMValueRef last = LLVMBuildSub(B, n, one, "");
  LLVMValueRef above = LLVMBuildICmp(B, LLVMIntSGT, o, LLVMBuildSub(B, last, cur, ""), "");
  LLVMValueRef sum = LLVMBuildAdd(B, cur, o, ""); /* used only where it is in range */
  *inside = NULL;
  switch (boundary) {
  case AC_BOUNDARY_CLAMP:
    return LLVMBuildSelect(B, below, zero, LLVMBuildSelect(B, above, last, sum, ""), "");
  case AC_BOUNDARY_WRAP:
  case AC_BOUNDARY_MIRROR: {
    /* period n (wrap) or 2(n-1) (mirror; an extent of 1 always reads 0);
     * max(.., 1) keeps the divisions defined */
    bool wrap = boundary == AC_BOUNDARY_WRAP;
    LLVMValueRef period = wrap ? n : LLVMBuildMul(B, last, cg_i64(M, 2), "");
    LLVMValueRef p = cg_smax(f->M, period, one);
    LLVMValueRef m = LLVMBuildSRem(B, o, p, "");
    m = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, m, zero, ""), LLVMBuildAdd(B, m, p, ""), m,
                        "");
    LLVMValueRef t = LLVMBuildSRem(B, LLVMBuildAdd(B, cur, m, ""), p, "");
    if (wrap)
      return t;
    LLVMValueRef refl = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, t, n, ""), t,
                                        LLVMBuildSub(B, period, t, ""), "");
    return LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntEQ, n, one, ""), zero, refl, "");
  }
  default:
    *inside = LLVMBuildNot(B, LLVMBuildOr(B, below, above, ""), "");
    return LLVMBuildSelect(B, *inside, sum, zero, "");
  }
}

static LLVMValueRef window_read(cg_fn *f, const cg_leaf *leaf, LLVMValueRef *idx, ir_ref at) {
  cg_module *M = f->M;
  const seq_wleaf *wl = leaf->env;
  const seq_window *w = wl->w;
  uint32_t rank = w->a.rank;
  LLVMValueRef *pos = cg_new(M, (rank + 1) * sizeof *pos);
  LLVMValueRef all = NULL;
  for (uint32_t d = 0; d < rank; d++) {
    LLVMValueRef inside;
    pos[d] = resolve(f, w->boundary, w->cur[d], idx[d], w->a.ext[d], &inside);
    if (inside)
      all = all ? LLVMBuildAnd(M->b, all, inside, "") : inside;
  }
  LLVMValueRef v = cg_read(f, &w->a.l[wl->leaf], pos, false, at);
  if (all && wl->leaf < w->cval.n)
    v = LLVMBuildSelect(M->b, all, v, w->cval.l[wl->leaf].v, "");
  return v;
}

/* stencil(|w| e, boundary, a[, value]): kids are the function, the array
 * and, for a constant boundary, the value, which the interpreter evaluates
 * first (it comes first in the text). */
void cg_seq_stencil(cg_fn *f, ir_ref e, cg_val *out) {
  cg_module *M = f->M;
  const ir_node *n = ir_node_get(M->m, e);
  int64_t boundary = n->attr;
  ir_type t = n->type;
  bool cst = boundary == AC_BOUNDARY_CONST;
  if ((n->nkids == 3) != cst || boundary < AC_BOUNDARY_CLAMP || boundary > AC_BOUNDARY_CONST) {
    cg_error(M, AC_ERR_INTERNAL, e, "stencil with boundary %lld and %u arguments",
             (long long)boundary, n->nkids);
    return;
  }
  ir_ref lam = ir_kid(M->m, e, 0);
  seq_window *w = cg_new(M, sizeof *w);
  w->boundary = boundary;
  if (cst)
    cg_expr(f, ir_kid(M->m, e, 2), &w->cval);
  cg_val av;
  cg_seq_operand(f, ir_kid(M->m, e, 1), &av);
  seq_arr o;
  cg_seq_view(f, e, "stencil", &av, &w->a);
  if (M->st != AC_OK)
    return;
  if (cst && w->cval.n != w->a.n) {
    cg_error(M, AC_ERR_INTERNAL, e, "stencil boundary value does not match the elements");
    return;
  }
  cg_seq_alloc(f, e, t, w->a.rank, w->a.ext, out, &o);
  cg_val win; /* one CL_FUNC leaf per element leaf (cg_val_alloc of the window type) */
  cg_val_alloc(M, cg_seq_param(M, lam, 0), &win);
  if (win.n != w->a.n) {
    cg_error(M, AC_ERR_INTERNAL, e, "stencil window of %u leaves for %u arrays", win.n, w->a.n);
    return;
  }
  seq_wleaf *wl = cg_new(M, (win.n + 1) * sizeof *wl);
  for (uint32_t i = 0; i < win.n; i++) {
    wl[i].w = w;
    wl[i].leaf = i;
    win.l[i].read = window_read;
    win.l[i].env = &wl[i];
  }
  seq_nest nest;
  cg_seq_nest_begin(f, &nest, o.rank, o.ext);
  w->cur = nest.idx;
  cg_seq_apply_store(f, lam, 1, &win, &o, cg_linear(f, o.rank, o.ext, nest.idx));
  cg_seq_nest_end(f, &nest);
}
