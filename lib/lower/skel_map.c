/* lib/lower/skel_map.c: the element-wise skeleton and the operations that
 * are instances of it (docs/language.md §7.2, 7.3, 7.6, 7.8).
 *
 * generate, iota, fill, map, gather, backpermute, slice, transpose, reverse
 * and replicate all compute "out[ix] = element(ix)" independently per
 * element: Accelerate's generate skeleton, of which the others are
 * instances with a particular element function. lw_elementwise is that
 * skeleton, written once: it allocates the result, and one kernel, launched
 * over all elements in chunks (chunks(n, LW_GRAIN), so small arrays run in
 * one chunk on the calling thread; chunks(n, 1) when the element code
 * holds an array operation or a loop, so that a few heavy elements, a
 * 4-row matrix of 4 million columns summed per row, still spread over
 * the pool), walks each chunk row by row: the outer
 * index of a row is computed once, and the row's part of the chunk is a
 * counted loop over the innermost index whose body reads consecutive
 * elements and stores consecutive elements. That is the shape the loop
 * vectoriser wants, so a saxpy-like map becomes vector code (with runtime
 * alias checks: array data may share memory). Elements that build arrays
 * (nested operations) are bracketed by tmp_mark/tmp_release.
 *
 * Operands are read with cg_read, so a later fusion pass can hand any of
 * them as a CL_FUNC producer. The checks are the interpreter's, in its
 * order, with its messages where a two-value site can hold them: shapes of
 * operands and shape arguments are checked on the host (pl_check) before
 * the kernel runs; index checks of gather and backpermute are per element,
 * in the kernel. reshape needs no kernel: it is a view of its operand.
 * Array literals get a one-chunk kernel that stores each element.
 */
#include "lower/skel.h"
#include "interp/rtarray.h" /* RT_ARRAY_MAX_BYTES: the interpreter's size limit */

#include <stdio.h>
#include <string.h>

/* ---- the skeleton ---- */

void lw_unravel(cg_module *M, LLVMValueRef lin, LLVMValueRef *ext, uint32_t dims,
                LLVMValueRef *idx) {
  for (uint32_t d = dims; d-- > 1;) {
    idx[d] = LLVMBuildURem(M->b, lin, ext[d], "");
    lin = LLVMBuildUDiv(M->b, lin, ext[d], "");
  }
  if (dims > 0)
    idx[0] = lin;
}

/* The elements [a, b) of the row whose first element is at rowbase. */
static void ew_segment(lw *L, cg_fn *f, lw_ew *w, const cg_val *ov, LLVMValueRef *idx,
                       LLVMValueRef rowbase, LLVMValueRef a, LLVMValueRef b, unsigned variant,
                       bool tmp) {
  cg_module *M = L->M;
  cg_loop l;
  LLVMValueRef j = cg_loop_begin(f, &l, a, b);
  idx[w->rank - 1] = j;
  LLVMValueRef mark = tmp ? cg_tmp_mark(f) : NULL;
  cg_val ev;
  w->elem(L, f, w, idx, variant, &ev);
  if (ev.n != ov->n) {
    cg_error(M, AC_ERR_INTERNAL, w->at, "lowering: %s element of %u leaves for %u arrays", w->kind,
             ev.n, ov->n);
  } else {
    LLVMValueRef lin = LLVMBuildNSWAdd(M->b, rowbase, j, "");
    for (uint32_t i = 0; i < ov->n; i++)
      cg_store_elem(f, &ov->l[i], lin, ev.l[i].v);
  }
  if (tmp)
    cg_tmp_release(f, mark);
  cg_loop_end(f, &l);
}

/* A row cut at s1 and s2: border, interior, border. */
static void ew_row_split(lw *L, cg_fn *f, lw_ew *w, const cg_val *ov, LLVMValueRef *idx,
                         LLVMValueRef rowbase, LLVMValueRef a, LLVMValueRef s1, LLVMValueRef s2,
                         LLVMValueRef b, unsigned variant, bool tmp) {
  ew_segment(L, f, w, ov, idx, rowbase, a, s1, variant, tmp);
  ew_segment(L, f, w, ov, idx, rowbase, s1, s2, variant | 1u, tmp);
  ew_segment(L, f, w, ov, idx, rowbase, s2, b, variant, tmp);
}

bool lw_elementwise(lw *L, lw_ew *w, lw_val *out) {
  cg_module *M = L->M;
  uint32_t rank = w->rank;
  lw_fresh(L, w->type, out);
  if (rank == 0) {
    cg_error(M, AC_ERR_INTERNAL, w->at, "lowering: %s of rank 0", w->kind);
    return false;
  }
  lw_alloc_arrays(L, out, w->ext, w->at);
  uint32_t total = w->ext[0];
  for (uint32_t d = 1; d < rank; d++)
    total = lw_x_bin(L, PX_MUL, total, w->ext[d]);
  int64_t k0;
  if (lw_x_is_const(L, total, &k0) && k0 == 0)
    return M->st == AC_OK; /* nothing to compute */
  if (M->st != AC_OK)
    return false;
  if (L->gpu && w->ntiles && lw_tile_fits(L, w))
    return lw_gpu_tiled(L, w, out, total);
  w->ntiles = 0;
  if (L->gpu)
    return lw_gpu_elementwise(L, w, out, total);

  uint32_t k;
  /* heavy elements (nested operations, loops): as many chunks as the pool
   * takes, whatever n */
  int64_t grain = w->code && cg_has_loops(L->m, w->code) ? 1 : LW_GRAIN;
  cg_fn *f = lw_kernel_begin(L, w->at, w->kind, grain, &k);
  cg_val ov;
  lw_load(L, f, k, out, &ov);
  LLVMValueRef *ext = cg_new(M, rank * sizeof *ext), *idx = cg_new(M, rank * sizeof *idx);
  for (uint32_t d = 0; d < rank; d++)
    ext[d] = ov.n ? ov.l[0].ext[d] : lw_x_in_kernel(L, f, k, w->ext[d]);
  if (w->setup)
    w->setup(L, f, k, w);
  bool tmp = w->code && cg_needs_tmp(L->m, w->code);

  /* rows [lo / n, ceil(hi / n)) of the chunk [lo, hi), n the row length */
  LLVMValueRef inner = ext[rank - 1], zero = cg_i64(M, 0);
  LLVMValueRef n1 = cg_smax(M, inner, cg_i64(M, 1));
  LLVMValueRef rbeg = LLVMBuildUDiv(M->b, f->lo, n1, "");
  LLVMValueRef rend = LLVMBuildUDiv(
      M->b, LLVMBuildNSWAdd(M->b, f->hi, LLVMBuildNSWSub(M->b, n1, cg_i64(M, 1), ""), ""), n1,
      "");
  cg_loop rl;
  LLVMValueRef r = cg_loop_begin(f, &rl, rbeg, rend);
  LLVMValueRef rowbase = LLVMBuildNSWMul(M->b, r, n1, "");
  LLVMValueRef a = cg_smax(M, LLVMBuildNSWSub(M->b, f->lo, rowbase, ""), zero);
  LLVMValueRef b = cg_smin(M, LLVMBuildNSWSub(M->b, f->hi, rowbase, ""), inner);
  /* the row's outer index: r in the extents of all but the last dimension */
  lw_unravel(M, r, ext, rank - 1, idx);
  if (!w->split) {
    ew_segment(L, f, w, &ov, idx, rowbase, a, b, 0, tmp);
  } else {
    LLVMValueRef ilo = zero, ihi = zero, rowint = NULL;
    w->split(L, f, w, idx, &ilo, &ihi, &rowint);
    LLVMValueRef s1 = cg_smin(M, cg_smax(M, ilo, a), b);
    LLVMValueRef s2 = cg_smin(M, cg_smax(M, ihi, s1), b);
    if (!rowint) {
      ew_row_split(L, f, w, &ov, idx, rowbase, a, s1, s2, b, 2u, tmp);
    } else {
      LLVMBasicBlockRef yes = cg_block(f, "row.interior"), no = cg_block(f, "row.border"),
                        join = cg_block(f, "row.done");
      LLVMBuildCondBr(M->b, rowint, yes, no);
      LLVMPositionBuilderAtEnd(M->b, yes);
      ew_row_split(L, f, w, &ov, idx, rowbase, a, s1, s2, b, 2u, tmp);
      LLVMBuildBr(M->b, join);
      LLVMPositionBuilderAtEnd(M->b, no);
      ew_row_split(L, f, w, &ov, idx, rowbase, a, s1, s2, b, 0u, tmp);
      LLVMBuildBr(M->b, join);
      LLVMPositionBuilderAtEnd(M->b, join);
    }
  }
  cg_loop_end(f, &rl);
  lw_kernel_end(L, f);
  lw_launch(L, k, total, lw_x_bin(L, PX_CHUNKS, total, lw_x_const(L, grain)));
  return M->st == AC_OK;
}

/* ---- shared pieces of the instances ---- */

static uint32_t sm_rank(lw *L, ir_type t) {
  ir_type elem;
  uint32_t rank = 0;
  if (!ir_ty_array_view(L->ctx, t, &elem, &rank))
    cg_error(L->M, AC_ERR_INTERNAL, 0, "lowering: an array operation of a non-array type");
  return rank;
}

static ir_type sm_elem(lw *L, ir_type t) {
  ir_type elem = IR_TY_NONE;
  uint32_t rank;
  ir_ty_array_view(L->ctx, t, &elem, &rank);
  return elem;
}

/* An i64 scalar value (index parameters of lambdas). */
static void sm_i64(cg_module *M, LLVMValueRef v, cg_val *out) {
  ac_scalar sc = AC_I64;
  lw_cg_elem(M, ir_ty_scalar(M->ctx, AC_I64), 1, &v, &sc, out);
}

/* The element of the arrays in v (loaded, one shape) at idx, unchecked
 * (check: checked, failing at `at` with the plain index message; used
 * after the operation's own check has reported the problem). */
static void sm_read(cg_fn *f, const cg_val *v, ir_type elem, LLVMValueRef *idx, bool check,
                    ir_ref at, cg_val *out) {
  cg_module *M = f->M;
  LLVMValueRef *vs = cg_new(M, (v->n ? v->n : 1) * sizeof *vs);
  ac_scalar *sc = cg_new(M, (v->n ? v->n : 1) * sizeof *sc);
  for (uint32_t i = 0; i < v->n; i++) {
    vs[i] = cg_read(f, &v->l[i], idx, check, at);
    sc[i] = (ac_scalar)v->l[i].sc;
  }
  lw_cg_elem(M, elem, v->n, vs, sc, out);
}

/* Extents of leaf 0 of array value v. */
static uint32_t *sm_extents(lw *L, const lw_val *v, uint32_t rank) {
  uint32_t *ext = cg_new(L->M, (rank ? rank : 1) * sizeof *ext);
  for (uint32_t d = 0; d < rank; d++)
    ext[d] = lw_extent(L, v, 0, d);
  return ext;
}

/* ---- generate, iota, fill, map ---- */

typedef struct sm_fn {
  ir_ref fn;      /* the element function (generate, map) */
  uint32_t n;     /* map: operands */
  lw_val *ops;    /* map: operands; fill: the value */
  cg_val *ld;     /* ... loaded in the kernel */
  ir_type *elems; /* map: element types of the operands */
  int32_t *tile;  /* map: the shared-memory tile operand i reads, or -1 */
} sm_fn;

static void fn_setup(lw *L, cg_fn *f, uint32_t kernel, lw_ew *w) {
  sm_fn *s = w->ud;
  for (uint32_t i = 0; i < s->n; i++)
    lw_load(L, f, kernel, &s->ops[i], &s->ld[i]);
  /* a tiled slice reads its source through the tile (gskel_tile.c) */
  for (uint32_t i = 0; w->ntiles && i < s->n; i++) {
    cg_delayed *d = s->tile[i] >= 0 && s->ld[i].n ? cg_delayed_of(&s->ld[i].l[0]) : NULL;
    if (!d || d->nops != 1) {
      if (s->tile[i] >= 0)
        cg_error(L->M, AC_ERR_INTERNAL, w->at, "lowering: a tiled operand that is not a slice");
      continue;
    }
    lw_tile *t = &w->tiles[s->tile[i]];
    if (!t->src.n)
      t->src = d->ops[0];
    d->ops[0] = t->val;
  }
}

/* The slices of one array among map's operands (rank 1 or 2, stride 1,
 * constant starts) become a shared-memory tile when they start at two or
 * more different places: the tile's window spans the starts. */
static void map_tiles(lw *L, sm_fn *s, lw_ew *w) {
  cg_module *M = L->M;
  lw_val *src = cg_new(M, (s->n + 1) * sizeof *src);
  lw_tile *tiles = cg_new(M, (s->n + 1) * sizeof *tiles);
  bool *several = cg_new(M, (s->n + 1) * sizeof *several);
  uint32_t ng = 0;
  for (uint32_t i = 0; i < s->n; i++) {
    lw_val a;
    int64_t st[LW_TILE_MAX_RANK];
    s->tile[i] = -1;
    if (w->rank > LW_TILE_MAX_RANK || !lw_delayed_slice(L, &s->ops[i], &a, st))
      continue;
    uint32_t g = 0;
    while (g < ng && !(src[g].nwords == a.nwords &&
                       memcmp(src[g].words, a.words, a.nwords * sizeof *a.words) == 0))
      g++;
    if (g == ng) {
      src[ng] = a;
      tiles[ng] = (lw_tile){.type = a.type};
      for (uint32_t d = 0; d < w->rank; d++)
        tiles[ng].lo[d] = tiles[ng].hi[d] = st[d];
      ng++;
    }
    for (uint32_t d = 0; d < w->rank; d++) {
      several[g] = several[g] || st[d] != tiles[g].lo[d] || st[d] != tiles[g].hi[d];
      if (st[d] < tiles[g].lo[d])
        tiles[g].lo[d] = st[d];
      if (st[d] > tiles[g].hi[d])
        tiles[g].hi[d] = st[d];
    }
    s->tile[i] = (int32_t)g;
  }
  /* keep the groups with two or more starts, at most LW_TILE_MAX */
  int32_t *keep = cg_new(M, (ng + 1) * sizeof *keep);
  w->tiles = cg_new(M, (ng + 1) * sizeof *w->tiles);
  w->ntiles = 0;
  for (uint32_t g = 0; g < ng; g++) {
    keep[g] = -1;
    if (several[g] && w->ntiles < LW_TILE_MAX) {
      keep[g] = (int32_t)w->ntiles;
      w->tiles[w->ntiles++] = tiles[g];
    }
  }
  for (uint32_t i = 0; i < s->n; i++)
    if (s->tile[i] >= 0)
      s->tile[i] = keep[s->tile[i]];
}

static void generate_elem(lw *L, cg_fn *f, lw_ew *w, LLVMValueRef *idx, unsigned variant,
                          cg_val *out) {
  (void)variant;
  sm_fn *s = w->ud;
  cg_val *args = cg_new(L->M, w->rank * sizeof *args);
  for (uint32_t d = 0; d < w->rank; d++)
    sm_i64(L->M, idx[d], &args[d]);
  cg_apply(f, s->fn, w->rank, args, out);
}

static void iota_elem(lw *L, cg_fn *f, lw_ew *w, LLVMValueRef *idx, unsigned variant,
                      cg_val *out) {
  (void)f;
  (void)w;
  (void)variant;
  sm_i64(L->M, idx[0], out);
}

static void fill_elem(lw *L, cg_fn *f, lw_ew *w, LLVMValueRef *idx, unsigned variant,
                      cg_val *out) {
  (void)L;
  (void)f;
  (void)idx;
  (void)variant;
  *out = ((sm_fn *)w->ud)->ld[0];
}

static void map_elem(lw *L, cg_fn *f, lw_ew *w, LLVMValueRef *idx, unsigned variant,
                     cg_val *out) {
  (void)variant;
  sm_fn *s = w->ud;
  cg_val *args = cg_new(L->M, s->n * sizeof *args);
  for (uint32_t i = 0; i < s->n; i++)
    sm_read(f, &s->ld[i], s->elems[i], idx, false, w->at, &args[i]);
  cg_apply(f, s->fn, s->n, args, out);
}

static sm_fn *sm_new_fn(lw *L, ir_ref fn, uint32_t n) {
  sm_fn *s = cg_new(L->M, sizeof *s);
  s->fn = fn;
  s->n = n;
  s->ops = cg_new(L->M, (n ? n : 1) * sizeof *s->ops);
  s->ld = cg_new(L->M, (n ? n : 1) * sizeof *s->ld);
  s->elems = cg_new(L->M, (n ? n : 1) * sizeof *s->elems);
  s->tile = cg_new(L->M, (n ? n : 1) * sizeof *s->tile);
  for (uint32_t i = 0; i < n; i++)
    s->tile[i] = -1;
  return s;
}

bool lw_skel_generate(lw *L, ir_ref e, lw_val *out) {
  ir_type t = ir_node_get(L->m, e)->type;
  uint32_t rank = sm_rank(L, t);
  uint32_t *ext = cg_new(L->M, (rank ? rank : 1) * sizeof *ext);
  /* the allocation follows at once and checks the extents itself */
  lw_shape(L, ir_kid(L->m, e, 0), rank, ext, e, false);
  sm_fn *s = sm_new_fn(L, ir_kid(L->m, e, 1), 0);
  lw_ew w = {e, "generate", t, rank, ext, s->fn, NULL, generate_elem, NULL, s, 0, NULL};
  return L->M->st == AC_OK && lw_elementwise(L, &w, out);
}

bool lw_skel_iota(lw *L, ir_ref e, lw_val *out) {
  uint32_t ext;
  lw_shape(L, ir_kid(L->m, e, 0), 1, &ext, e, false);
  lw_ew w = {e, "iota", ir_node_get(L->m, e)->type, 1, &ext, 0, NULL, iota_elem, NULL, NULL, 0, NULL};
  return L->M->st == AC_OK && lw_elementwise(L, &w, out);
}

bool lw_skel_fill(lw *L, ir_ref e, lw_val *out) {
  ir_type t = ir_node_get(L->m, e)->type;
  uint32_t rank = sm_rank(L, t);
  uint32_t *ext = cg_new(L->M, (rank ? rank : 1) * sizeof *ext);
  /* the value is evaluated between the shape and the allocation */
  lw_shape(L, ir_kid(L->m, e, 0), rank, ext, e, true);
  sm_fn *s = sm_new_fn(L, 0, 1);
  if (!lw_expr(L, ir_kid(L->m, e, 1), &s->ops[0]))
    return false;
  lw_ew w = {e, "fill", t, rank, ext, 0, fn_setup, fill_elem, NULL, s, 0, NULL};
  return lw_elementwise(L, &w, out);
}

bool lw_skel_map(lw *L, ir_ref e, lw_val *out) {
  const ir_node *nd = ir_node_get(L->m, e);
  uint32_t n = nd->nkids - 1;
  ir_type t = nd->type;
  bool tiled = lw_tile_wanted(L, e);
  sm_fn *s = sm_new_fn(L, ir_kid(L->m, e, 0), n);
  for (uint32_t i = 0; i < n; i++) {
    if (!lw_operand(L, e, i + 1, &s->ops[i]))
      return false;
    s->elems[i] = sm_elem(L, s->ops[i].type);
  }
  lw_check_shapes(L, e, "map", n, s->ops);
  uint32_t rank = sm_rank(L, t);
  lw_ew w = {e, "map", t, rank, sm_extents(L, &s->ops[0], rank), s->fn, fn_setup, map_elem,
             NULL, s, 0, NULL};
  if (tiled && L->M->st == AC_OK)
    map_tiles(L, s, &w);
  return L->M->st == AC_OK && lw_elementwise(L, &w, out);
}

/* ---- operations that copy elements of an array from computed places ---- */

typedef struct sm_src {
  ir_op op;
  lw_val a, idx;      /* the source; gather's index arrays */
  cg_val ald, ild;    /* ... loaded */
  ir_type elem, ielem; /* element types of a and of idx */
  uint32_t arank;
  ir_ref fn;                   /* backpermute's index function */
  uint32_t *start, *stride;    /* slice: plan expressions, arank each */
  LLVMValueRef *kstart, *kstride; /* ... in the kernel */
} sm_src;

static void src_setup(lw *L, cg_fn *f, uint32_t kernel, lw_ew *w) {
  sm_src *s = w->ud;
  lw_load(L, f, kernel, &s->a, &s->ald);
  if (s->op == IR_GATHER)
    lw_load(L, f, kernel, &s->idx, &s->ild);
  if (s->op == IR_SLICE) {
    s->kstart = cg_new(L->M, s->arank * sizeof *s->kstart);
    s->kstride = cg_new(L->M, s->arank * sizeof *s->kstride);
    for (uint32_t d = 0; d < s->arank; d++) {
      s->kstart[d] = lw_x_in_kernel(L, f, kernel, s->start[d]);
      s->kstride[d] = lw_x_in_kernel(L, f, kernel, s->stride[d]);
    }
  }
}

/* pos (arank int64 values) checked against a's extents as the interpreter's
 * gather and backpermute do: the first dimension out of range is named. */
static void src_check(lw *L, cg_fn *f, sm_src *s, LLVMValueRef *pos, ir_ref at) {
  cg_module *M = L->M;
  const cg_leaf *a0 = &s->ald.l[0];
  for (uint32_t d = 0; d < s->arank; d++) {
    char fmt[128];
    snprintf(fmt, sizeof fmt, "%s: index %%lld out of bounds for dimension %u of extent %%lld",
             ir_ops[s->op].spelling, d);
    LLVMValueRef ok = LLVMBuildICmp(M->b, LLVMIntULT, pos[d], a0->ext[d], "");
    cg_check(f, ok, cg_site(M, at, fmt), pos[d], a0->ext[d]);
  }
}

static void src_elem(lw *L, cg_fn *f, lw_ew *w, LLVMValueRef *idx, unsigned variant,
                     cg_val *out) {
  (void)variant;
  cg_module *M = L->M;
  sm_src *s = w->ud;
  uint32_t r = s->arank, q = w->rank;
  LLVMValueRef *pos = cg_new(M, (r ? r : 1) * sizeof *pos);
  bool checked = false;
  switch (s->op) {
  case IR_GATHER:
    for (uint32_t d = 0; d < r; d++)
      pos[d] = lw_cg_int64(f, cg_read(f, &s->ild.l[d], idx, false, w->at), s->ild.l[d].sc);
    checked = true;
    break;
  case IR_BACKPERMUTE: {
    cg_val *args = cg_new(M, q * sizeof *args), p;
    for (uint32_t d = 0; d < q; d++)
      sm_i64(M, idx[d], &args[d]);
    cg_apply(f, s->fn, q, args, &p);
    for (uint32_t d = 0; d < r; d++)
      pos[d] = d < p.n ? lw_cg_int64(f, p.l[d].v, p.l[d].sc) : cg_i64(M, 0);
    checked = true;
    break;
  }
  case IR_SLICE:
    for (uint32_t d = 0; d < r; d++)
      pos[d] = LLVMBuildNSWAdd(M->b, s->kstart[d], LLVMBuildNSWMul(M->b, idx[d], s->kstride[d], ""),
                               "");
    break;
  case IR_TRANSPOSE:
    memcpy(pos, idx, r * sizeof *pos);
    pos[r - 1] = idx[r - 2];
    pos[r - 2] = idx[r - 1];
    break;
  case IR_REVERSE: {
    memcpy(pos, idx, r * sizeof *pos);
    LLVMValueRef last = LLVMBuildNSWSub(M->b, s->ald.l[0].ext[r - 1], cg_i64(M, 1), "");
    pos[r - 1] = LLVMBuildNSWSub(M->b, last, idx[r - 1], "");
    break;
  }
  default: /* IR_REPLICATE */
    memcpy(pos, idx + 1, r * sizeof *pos);
    break;
  }
  if (checked)
    src_check(L, f, s, pos, w->at);
  sm_read(f, &s->ald, s->elem, pos, checked, w->at, out);
}

static sm_src *sm_new_src(lw *L, ir_op op) {
  sm_src *s = cg_new(L->M, sizeof *s);
  s->op = op;
  return s;
}

/* Lowers the source array (kid k of e) and checks that its arrays agree. */
static bool src_array(lw *L, ir_ref e, uint32_t k, sm_src *s) {
  if (!lw_operand(L, e, k, &s->a))
    return false;
  lw_check_shapes(L, e, ir_ops[s->op].spelling, 1, &s->a);
  s->elem = sm_elem(L, s->a.type);
  s->arank = sm_rank(L, s->a.type);
  return L->M->st == AC_OK;
}

static bool src_run(lw *L, ir_ref e, sm_src *s, uint32_t rank, const uint32_t *ext,
                    lw_val *out) {
  lw_ew w = {e, ir_ops[s->op].spelling, ir_node_get(L->m, e)->type, rank, ext, s->fn,
             src_setup, src_elem, NULL, s, 0, NULL};
  return L->M->st == AC_OK && lw_elementwise(L, &w, out);
}

bool lw_skel_gather(lw *L, ir_ref e, lw_val *out) {
  sm_src *s = sm_new_src(L, IR_GATHER);
  if (!lw_operand(L, e, 0, &s->idx))
    return false;
  /* the interpreter evaluates both operands, then checks idx, then a */
  if (!lw_operand(L, e, 1, &s->a))
    return false;
  lw_check_shapes(L, e, "gather", 1, &s->idx);
  lw_check_shapes(L, e, "gather", 1, &s->a);
  s->elem = sm_elem(L, s->a.type);
  s->arank = sm_rank(L, s->a.type);
  uint32_t q = sm_rank(L, s->idx.type);
  if (lw_num_leaves(L, &s->idx) != s->arank) {
    cg_error(L->M, AC_ERR_INTERNAL, e, "lowering: gather with %u indices into rank %u",
             lw_num_leaves(L, &s->idx), s->arank);
    return false;
  }
  return src_run(L, e, s, q, sm_extents(L, &s->idx, q), out);
}

bool lw_skel_backpermute(lw *L, ir_ref e, lw_val *out) {
  sm_src *s = sm_new_src(L, IR_BACKPERMUTE);
  ir_type t = ir_node_get(L->m, e)->type;
  uint32_t q = sm_rank(L, t);
  uint32_t *ext = cg_new(L->M, (q ? q : 1) * sizeof *ext);
  lw_shape(L, ir_kid(L->m, e, 0), q, ext, e, true);
  s->fn = ir_kid(L->m, e, 1);
  return src_array(L, e, 2, s) && src_run(L, e, s, q, ext, out);
}

bool lw_skel_transpose(lw *L, ir_ref e, lw_val *out) {
  sm_src *s = sm_new_src(L, IR_TRANSPOSE);
  if (!src_array(L, e, 0, s))
    return false;
  if (s->arank < 2) {
    cg_error(L->M, AC_ERR_INTERNAL, e, "lowering: transpose of rank %u", s->arank);
    return false;
  }
  uint32_t *ext = sm_extents(L, &s->a, s->arank);
  uint32_t t = ext[s->arank - 1];
  ext[s->arank - 1] = ext[s->arank - 2];
  ext[s->arank - 2] = t;
  return src_run(L, e, s, s->arank, ext, out);
}

bool lw_skel_reverse(lw *L, ir_ref e, lw_val *out) {
  sm_src *s = sm_new_src(L, IR_REVERSE);
  return src_array(L, e, 0, s) && src_run(L, e, s, s->arank, sm_extents(L, &s->a, s->arank), out);
}

bool lw_skel_replicate(lw *L, ir_ref e, lw_val *out) {
  sm_src *s = sm_new_src(L, IR_REPLICATE);
  uint32_t n;
  lw_shape(L, ir_kid(L->m, e, 0), 1, &n, e, true);
  if (!src_array(L, e, 1, s))
    return false;
  uint32_t *ext = cg_new(L->M, (s->arank + 1) * sizeof *ext);
  ext[0] = n;
  for (uint32_t d = 0; d < s->arank; d++)
    ext[d + 1] = lw_extent(L, &s->a, 0, d);
  return src_run(L, e, s, s->arank + 1, ext, out);
}

void lw_slice_bounds(lw *L, ir_ref e, const lw_val *a, uint32_t r, uint32_t *start,
                     uint32_t *stride, uint32_t *ext) {
  const ir_node *nd = ir_node_get(L->m, e);
  uint32_t *stop = cg_new(L->M, (r ? r : 1) * sizeof *stop);
  uint32_t *dst[3] = {start, stop, stride};
  for (uint32_t i = 1; i < nd->nkids && i <= 3; i++)
    lw_ints(L, ir_kid(L->m, e, i), r, dst[i - 1]);
  for (uint32_t d = 0; d < r; d++) {
    if (nd->nkids < 4)
      stride[d] = lw_x_const(L, 1);
    char dim[48] = "";
    if (r > 1)
      snprintf(dim, sizeof dim, " in dimension %u", d);
    uint32_t st = start[d], sp = stop[d], ex = lw_extent(L, a, 0, d);
    uint32_t ok =
        lw_x_bin(L, PX_MIN, lw_x_bin(L, PX_LE, lw_x_const(L, 0), st),
                 lw_x_bin(L, PX_MIN, lw_x_bin(L, PX_LE, st, sp), lw_x_bin(L, PX_LE, sp, ex)));
    lw_piece pc[7] = {LW_TEXT("slice: bounds "), LW_VAL(st), LW_TEXT(".."), LW_VAL(sp),
                      LW_TEXT(" out of range for extent "), LW_VAL(ex), LW_TEXT(dim)};
    lw_check(L, ok, e, 7, pc, 0, NULL);
    if (nd->nkids >= 4) {
      lw_piece sc[3] = {LW_TEXT("slice: stride "), LW_VAL(stride[d]),
                        LW_TEXT(" is not positive")};
      lw_piece sd[4] = {sc[0], sc[1], sc[2], LW_TEXT(dim)};
      lw_check(L, lw_x_bin(L, PX_LE, lw_x_const(L, 1), stride[d]), e, 4, sd, 0, NULL);
    }
    /* d = stop - start >= 0 here: (d - 1) / stride + 1 elements, 0 if d == 0 */
    uint32_t len = lw_x_bin(L, PX_SUB, sp, st);
    int64_t k1;
    if (lw_x_is_const(L, stride[d], &k1) && k1 == 1)
      ext[d] = len;
    else
      ext[d] = lw_x_bin(
          L, PX_MUL, lw_x_bin(L, PX_MIN, len, lw_x_const(L, 1)),
          lw_x_bin(L, PX_ADD,
                   lw_x_bin(L, PX_DIV, lw_x_bin(L, PX_SUB, len, lw_x_const(L, 1)), stride[d]),
                   lw_x_const(L, 1)));
  }
}

/* slice(a, start, stop[, stride]): the interpreter's checks per dimension
 * (bounds, then stride), then ceil((stop - start) / stride) elements. */
bool lw_skel_slice(lw *L, ir_ref e, lw_val *out) {
  sm_src *s = sm_new_src(L, IR_SLICE);
  if (!src_array(L, e, 0, s))
    return false;
  uint32_t r = s->arank;
  s->start = cg_new(L->M, (r ? r : 1) * sizeof *s->start);
  s->stride = cg_new(L->M, (r ? r : 1) * sizeof *s->stride);
  uint32_t *ext = cg_new(L->M, (r ? r : 1) * sizeof *ext);
  lw_slice_bounds(L, e, &s->a, r, s->start, s->stride, ext);
  return src_run(L, e, s, r, ext, out);
}

void lw_reshape_check(lw *L, ir_ref e, const lw_val *a, uint32_t q, const uint32_t *ext) {
  uint32_t ar = sm_rank(L, a->type);
  uint32_t size = lw_extent(L, a, 0, 0);
  for (uint32_t d = 1; d < ar; d++)
    size = lw_x_bin(L, PX_MUL, size, lw_extent(L, a, 0, d));
  uint32_t ok;
  if (q == 1) {
    ok = lw_x_bin(L, PX_EQ, ext[0], size);
  } else {
    uint32_t zeros = lw_x_const(L, 0), big = lw_x_const(L, 0), left = size;
    uint32_t divides = lw_x_const(L, 1), limit = lw_x_const(L, RT_ARRAY_MAX_BYTES);
    for (uint32_t d = 0; d < q; d++) {
      zeros = lw_x_bin(L, PX_ADD, zeros, lw_x_bin(L, PX_EQ, ext[d], lw_x_const(L, 0)));
      big = lw_x_bin(L, PX_ADD, big, lw_x_bin(L, PX_LT, limit, ext[d]));
      divides = lw_x_bin(L, PX_MIN, divides,
                         lw_x_bin(L, PX_EQ, lw_x_bin(L, PX_REM, left, ext[d]), lw_x_const(L, 0)));
      left = lw_x_bin(L, PX_DIV, left, ext[d]);
    }
    uint32_t empty_ok = lw_x_bin(L, PX_MIN, lw_x_bin(L, PX_LT, lw_x_const(L, 0), zeros),
                                 lw_x_bin(L, PX_EQ, big, lw_x_const(L, 0)));
    uint32_t full_ok = lw_x_bin(L, PX_MIN, lw_x_bin(L, PX_EQ, zeros, lw_x_const(L, 0)),
                                lw_x_bin(L, PX_MIN, divides,
                                         lw_x_bin(L, PX_EQ, left, lw_x_const(L, 1))));
    uint32_t is_empty = lw_x_bin(L, PX_EQ, size, lw_x_const(L, 0));
    ok = lw_x_bin(L, PX_ADD, lw_x_bin(L, PX_MUL, is_empty, empty_ok),
                  lw_x_bin(L, PX_MUL, lw_x_bin(L, PX_SUB, lw_x_const(L, 1), is_empty), full_ok));
  }
  lw_piece *pc = cg_new(L->M, (2 * q + 4) * sizeof *pc);
  uint32_t np = 0;
  pc[np++] = LW_TEXT("reshape: cannot reshape ");
  pc[np++] = LW_VAL(size);
  pc[np++] = LW_TEXT(" elements to [");
  for (uint32_t d = 0; d < q; d++) {
    if (d)
      pc[np++] = LW_TEXT(", ");
    pc[np++] = LW_VAL(ext[d]);
  }
  pc[np++] = LW_TEXT("]");
  lw_piece fb[3] = {LW_TEXT("reshape: cannot reshape "), LW_VAL(size),
                    LW_TEXT(" elements to the shape asked for")};
  lw_check(L, ok, e, np, pc, 3, fb);
}

/* reshape(shape, a): a view of a's buffers with the new extents, after the
 * interpreter's check that the counts agree (rt_array_count semantics:
 * each extent at most the size limit, the product equal to a's size). The
 * product is checked by division, which cannot overflow: with size > 0,
 * e1 * .. * eq == size iff each e divides what is left and 1 remains. */
bool lw_skel_reshape(lw *L, ir_ref e, lw_val *out) {
  ir_type t = ir_node_get(L->m, e)->type;
  uint32_t q = sm_rank(L, t);
  uint32_t *ext = cg_new(L->M, (q ? q : 1) * sizeof *ext);
  lw_shape(L, ir_kid(L->m, e, 0), q, ext, e, true);
  lw_val a;
  /* a view needs a's buffers: a delayed operand is made manifest */
  if (!lw_expr(L, ir_kid(L->m, e, 1), &a))
    return false;
  lw_check_shapes(L, e, "reshape", 1, &a);
  lw_reshape_check(L, e, &a, q, ext);
  lw_fresh(L, t, out);
  const lw_leaf *lv;
  uint32_t n = lw_leaves(L, t, &lv);
  for (uint32_t i = 0; i < n; i++)
    pl_view(L->p, out->words[lv[i].word], a.words[lw_leaf_word(L, a.type, i)], lv[i].sc, q, ext);
  return L->M->st == AC_OK;
}

/* ---- array literals ---- */

/* [e1, e2, ..]: the elements, in order, by one one-chunk kernel (their
 * plan-level subterms lowered first). */
bool lw_skel_arrlit(lw *L, ir_ref e, lw_val *out) {
  cg_module *M = L->M;
  const ir_node *nd = ir_node_get(L->m, e);
  uint32_t rank = (uint32_t)nd->attr, nk = nd->nkids;
  if (rank == 0 || nd->aux == 0 || nd->aux + (uint64_t)rank > L->m->nints) {
    cg_error(M, AC_ERR_INTERNAL, e, "lowering: array literal without extents");
    return false;
  }
  uint32_t *ext = cg_new(M, rank * sizeof *ext);
  for (uint32_t d = 0; d < rank; d++)
    ext[d] = lw_x_const(L, L->m->ints[nd->aux + d]);
  lw_pre P = {NULL, NULL, 0, 0};
  lw_pre_collect(L, e, &P);
  lw_fresh(L, nd->type, out);
  lw_alloc_arrays(L, out, ext, e);
  if (nk == 0 || M->st != AC_OK)
    return M->st == AC_OK;
  uint32_t k;
  cg_fn *f = lw_kernel_begin(L, e, "arrlit", 1, &k);
  lw_pre_install(L, f, k, &P);
  cg_val ov;
  lw_load(L, f, k, out, &ov);
  for (uint32_t i = 0; i < nk; i++) {
    cg_val v;
    cg_expr(f, ir_kid(L->m, e, i), &v);
    for (uint32_t j = 0; j < v.n && j < ov.n; j++)
      cg_store_elem(f, &ov.l[j], cg_i64(M, i), v.l[j].v);
  }
  lw_kernel_end(L, f);
  lw_launch(L, k, lw_x_const(L, 1), lw_x_const(L, 1));
  return M->st == AC_OK;
}
