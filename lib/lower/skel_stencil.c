/* lib/lower/skel_stencil.c: stencil(|w| e, boundary, a) (docs/language.md
 * §7.9), an instance of the element-wise skeleton (skel_map.c).
 *
 * The window parameter is a CL_FUNC value (cg.h): one leaf per leaf of a's
 * elements, whose reader adds the centre index to the constant offsets of
 * w[o1, .., or] and resolves positions outside the array exactly as
 * lib/interp/stencil.c does (clamp, mirror, wrap, or the constant value),
 * never forming cur + offset where it could overflow. No neighbourhood is
 * copied: the element function reads the array directly.
 *
 * Boundary handling is only needed near the edges. The offsets are
 * literals (the verifier insists), so scanning the element function gives
 * the largest reach below and above the centre in each dimension
 * (ir_window_reach; capped, so that n - reach cannot overflow). The
 * skeleton's split then cuts each row into border / interior / border
 * parts, and rows themselves into interior rows (every outer index far
 * enough from the edges) and border rows; the element function is
 * generated once per combination, with plain reads where the reach cannot
 * leave the array. For the usual small stencils nearly every element takes
 * the plain, vectorisable path (Accelerate and Halide split boundaries the
 * same way).
 *
 * On a GPU, when the smem-stencil pass asked for it (tiled(e)), the array
 * is staged per block in a shared-memory tile whose halo is the reach
 * (gskel_tile.c): the tile holds the boundary's values at positions
 * outside the array, resolved once per position (st_fill), so every read
 * of the window is a plain read of the tile.
 */
#include "lower/skel.h"

#include <string.h>

typedef struct st_state {
  lw_val a, cval;   /* the array; the constant boundary value */
  cg_val ald, cld;  /* ... loaded in the kernel */
  cg_val win;       /* the window handed to the element function */
  ir_ref fn;
  int64_t boundary; /* AC_BOUNDARY_* */
  uint32_t rank;
  ir_type elem;
  int64_t *below, *above; /* reach per dimension, >= 0 */
  LLVMValueRef *cur;      /* the element being computed */
  unsigned variant;       /* skel.h: bit 0 inner interior, bit 1 row interior */
  lw_tile *tile;          /* GPU: the array staged in shared memory, or NULL */
} st_state;

typedef struct st_leaf {
  st_state *s;
  uint32_t i;
} st_leaf;

/* ---- reading through the window ---- */

/* Position along dimension d for offset o from the centre c (extent n
 * >= 1, since an element is being computed), as interp/stencil.c's
 * resolve; *inside gets whether it is in the array (constant boundary). */
static LLVMValueRef st_resolve(cg_fn *f, st_state *s, LLVMValueRef c, LLVMValueRef o,
                               LLVMValueRef n, LLVMValueRef *inside) {
  cg_module *M = f->M;
  LLVMBuilderRef b = M->b;
  LLVMValueRef zero = cg_i64(M, 0), one = cg_i64(M, 1);
  LLVMValueRef last = LLVMBuildSub(b, n, one, "");
  if (s->boundary == AC_BOUNDARY_WRAP || s->boundary == AC_BOUNDARY_MIRROR) {
    /* period n (wrap) or 2(n - 1) (mirror; 1 when n == 1, which reads 0) */
    LLVMValueRef per = n;
    if (s->boundary == AC_BOUNDARY_MIRROR) {
      per = LLVMBuildMul(b, last, cg_i64(M, 2), "");
      per = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSGT, per, zero, ""), per, one, "");
    }
    LLVMValueRef m = LLVMBuildSRem(b, o, per, "");
    m = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, m, zero, ""), LLVMBuildAdd(b, m, per, ""),
                        m, "");
    LLVMValueRef t = LLVMBuildAdd(b, c, m, ""); /* < 2 * per */
    t = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSGE, t, per, ""), LLVMBuildSub(b, t, per, ""),
                        t, "");
    if (s->boundary == AC_BOUNDARY_WRAP)
      return t;
    return LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, t, n, ""), t,
                           LLVMBuildSub(b, per, t, ""), "");
  }
  /* clamp, and the constant boundary (which reads the clamped position,
   * always inside, and then selects) */
  LLVMValueRef below = LLVMBuildICmp(b, LLVMIntSLT, o, LLVMBuildSub(b, zero, c, ""), "");
  LLVMValueRef above = LLVMBuildICmp(b, LLVMIntSGT, o, LLVMBuildSub(b, last, c, ""), "");
  if (s->boundary == AC_BOUNDARY_CONST) {
    LLVMValueRef in = LLVMBuildNot(b, LLVMBuildOr(b, below, above, ""), "");
    *inside = *inside ? LLVMBuildAnd(b, *inside, in, "") : in;
  }
  return LLVMBuildSelect(b, below, zero,
                         LLVMBuildSelect(b, above, last, LLVMBuildAdd(b, c, o, ""), ""), "");
}

static LLVMValueRef st_read(cg_fn *f, const cg_leaf *w, LLVMValueRef *offs, ir_ref at) {
  cg_module *M = f->M;
  const st_leaf *sl = w->env;
  st_state *s = sl->s;
  uint32_t r = s->rank;
  LLVMValueRef *pos = cg_new(M, r * sizeof *pos), inside = NULL;
  if (s->tile) { /* the tile holds the boundary's values too */
    for (uint32_t d = 0; d < r; d++)
      pos[d] = LLVMBuildNSWAdd(M->b, s->cur[d], offs[d], "");
    return cg_read(f, &s->tile->val.l[sl->i], pos, false, at);
  }
  for (uint32_t d = 0; d < r; d++) {
    bool interior = d + 1 == r ? (s->variant & 1u) : (s->variant & 2u);
    if (interior)
      pos[d] = LLVMBuildNSWAdd(M->b, s->cur[d], offs[d], "");
    else
      pos[d] = st_resolve(f, s, s->cur[d], offs[d], s->ald.l[0].ext[d], &inside);
  }
  LLVMValueRef v = cg_read(f, &s->ald.l[sl->i], pos, false, at);
  if (inside)
    v = LLVMBuildSelect(M->b, inside, v, s->cld.l[sl->i].v, "");
  return v;
}

/* ---- the skeleton's callbacks ---- */

static void st_setup(lw *L, cg_fn *f, uint32_t kernel, lw_ew *w) {
  st_state *s = w->ud;
  lw_load(L, f, kernel, &s->a, &s->ald);
  if (s->boundary == AC_BOUNDARY_CONST)
    lw_load(L, f, kernel, &s->cval, &s->cld);
  if (w->ntiles) {
    s->tile = &w->tiles[0];
    s->tile->src = s->ald;
  }
  uint32_t n = s->ald.n;
  s->win.type = ir_ty_window(L->ctx, s->elem, s->rank);
  s->win.n = n;
  s->win.l = cg_new(L->M, (n ? n : 1) * sizeof *s->win.l);
  st_leaf *sl = cg_new(L->M, (n ? n : 1) * sizeof *sl);
  for (uint32_t i = 0; i < n; i++) {
    sl[i] = (st_leaf){s, i};
    s->win.l[i] = (cg_leaf){.kind = CL_FUNC,
                            .sc = s->ald.l[i].sc,
                            .rank = s->rank,
                            .read = st_read,
                            .env = &sl[i]};
  }
}

static void st_elem(lw *L, cg_fn *f, lw_ew *w, LLVMValueRef *idx, unsigned variant,
                    cg_val *out) {
  (void)L;
  st_state *s = w->ud;
  s->cur = idx;
  s->variant = variant;
  cg_apply(f, s->fn, 1, &s->win, out);
}

/* The value of the array at global position pos (lw_tile.fill), which may
 * lie outside it: resolved as a read of offset pos from element 0. */
static void st_fill(lw *L, cg_fn *f, lw_ew *w, lw_tile *t, LLVMValueRef *pos, cg_val *out) {
  (void)t;
  cg_module *M = L->M;
  st_state *s = w->ud;
  uint32_t r = s->rank;
  LLVMValueRef *rp = cg_new(M, r * sizeof *rp), inside = NULL, zero = cg_i64(M, 0);
  for (uint32_t d = 0; d < r; d++)
    rp[d] = st_resolve(f, s, zero, pos[d], s->ald.l[0].ext[d], &inside);
  cg_val_alloc(M, s->elem, out);
  for (uint32_t i = 0; i < out->n && i < s->ald.n; i++) {
    out->l[i].v = cg_read(f, &s->ald.l[i], rp, false, w->at);
    if (inside)
      out->l[i].v = LLVMBuildSelect(M->b, inside, out->l[i].v, s->cld.l[i].v, "");
  }
}

/* Interior: below[d] <= i < n - above[d] in every dimension. */
static void st_split(lw *L, cg_fn *f, lw_ew *w, LLVMValueRef *idx, LLVMValueRef *ilo,
                     LLVMValueRef *ihi, LLVMValueRef *rowint) {
  cg_module *M = L->M;
  st_state *s = w->ud;
  uint32_t r = s->rank;
  const LLVMValueRef *ext = s->ald.l[0].ext;
  *ilo = cg_i64(M, s->below[r - 1]);
  *ihi = LLVMBuildSub(M->b, ext[r - 1], cg_i64(M, s->above[r - 1]), "");
  LLVMValueRef all = NULL;
  for (uint32_t d = 0; d + 1 < r; d++) {
    LLVMValueRef ge = LLVMBuildICmp(M->b, LLVMIntSGE, idx[d], cg_i64(M, s->below[d]), "");
    LLVMValueRef lt = LLVMBuildICmp(
        M->b, LLVMIntSLT, idx[d], LLVMBuildSub(M->b, ext[d], cg_i64(M, s->above[d]), ""), "");
    LLVMValueRef in = LLVMBuildAnd(M->b, ge, lt, "");
    all = all ? LLVMBuildAnd(M->b, all, in, "") : in;
  }
  *rowint = all;
}

bool lw_skel_stencil(lw *L, ir_ref e, lw_val *out) {
  const ir_node *nd = ir_node_get(L->m, e);
  bool cst = nd->attr == AC_BOUNDARY_CONST;
  if (nd->attr < AC_BOUNDARY_CLAMP || nd->attr > AC_BOUNDARY_CONST || nd->nkids != (cst ? 3u : 2u)) {
    cg_error(L->M, AC_ERR_INTERNAL, e, "lowering: stencil with boundary %lld and %u arguments",
             (long long)nd->attr, nd->nkids);
    return false;
  }
  bool tiled = lw_tile_wanted(L, e);
  st_state *s = cg_new(L->M, sizeof *s);
  s->fn = ir_kid(L->m, e, 0);
  s->boundary = nd->attr;
  /* the boundary value comes before the array in the text: evaluated first */
  if (cst && !lw_expr(L, ir_kid(L->m, e, 2), &s->cval))
    return false;
  if (!lw_operand(L, e, 1, &s->a))
    return false;
  lw_check_shapes(L, e, "stencil", 1, &s->a);
  if (!ir_ty_array_view(L->ctx, s->a.type, &s->elem, &s->rank) || s->rank == 0) {
    cg_error(L->M, AC_ERR_INTERNAL, e, "lowering: stencil of a value that is not an array");
    return false;
  }
  uint32_t r = s->rank;
  s->below = cg_new(L->M, r * sizeof *s->below);
  s->above = cg_new(L->M, r * sizeof *s->above);
  const ir_node *fnn = ir_node_get(L->m, s->fn);
  ir_ref body = IR_NONE;
  if (fnn->op == IR_LAM)
    body = ir_kid(L->m, s->fn, 0);
  else if (fnn->op == IR_FNREF && fnn->attr >= 0 && (uint64_t)fnn->attr < L->m->nfuncs)
    body = L->m->funcs[fnn->attr].body;
  /* without known reach every read handles the boundary */
  ir_window win;
  bool known = ir_window_reach(L->m, body, r, &win);
  uint32_t *ext = cg_new(L->M, r * sizeof *ext);
  for (uint32_t d = 0; d < r; d++) {
    s->below[d] = known ? win.below[d] : 0;
    s->above[d] = known ? win.above[d] : 0;
    ext[d] = lw_extent(L, &s->a, 0, d);
  }
  lw_ew w = {e,       "stencil", nd->type, r, ext, s->fn, st_setup, st_elem,
             known ? st_split : NULL, s, 0, NULL};
  /* on a GPU, asked to (tiled(e)): the array in shared memory, with a
   * halo as wide as the reach, holding the boundary's values */
  if (tiled && known && win.offsets > 1 && r <= LW_TILE_MAX_RANK) {
    w.ntiles = 1;
    w.tiles = cg_new(L->M, sizeof *w.tiles);
    w.tiles[0] = (lw_tile){.type = s->a.type, .fill = st_fill};
    for (uint32_t d = 0; d < r; d++) {
      w.tiles[0].lo[d] = -s->below[d];
      w.tiles[0].hi[d] = s->above[d];
    }
  }
  return L->M->st == AC_OK && lw_elementwise(L, &w, out);
}
