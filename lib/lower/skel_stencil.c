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
 * the largest reach below and above the centre in each dimension. The
 * skeleton's split then cuts each row into border / interior / border
 * parts, and rows themselves into interior rows (every outer index far
 * enough from the edges) and border rows; the element function is
 * generated once per combination, with plain reads where the reach cannot
 * leave the array. For the usual small stencils nearly every element takes
 * the plain, vectorisable path (Accelerate and Halide split boundaries the
 * same way).
 */
#include "lower/skel.h"

#include <string.h>

/* Reaches beyond this are clamped (no array is this long), which keeps
 * n - reach from overflowing. */
#define ST_MAX_REACH ((int64_t)1 << 40)

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
} st_state;

typedef struct st_leaf {
  st_state *s;
  uint32_t i;
} st_leaf;

/* ---- the reach of the element function ---- */

static int64_t st_offset(lw *L, ir_ref lit) {
  const ir_node *n = ir_node_get(L->m, lit);
  ac_scalar sc = AC_I64;
  ir_ty_is_scalar(L->ctx, n->type, &sc);
  if (sc == AC_U64 && n->lit.u > (uint64_t)INT64_MAX)
    return INT64_MAX; /* as interp_sc_to_i64 reads it */
  return n->lit.i;
}

/* Visits every read w[o..] of the window, which is variable `depth` at
 * node r; false if the window is used otherwise or with offsets that are
 * not literals (then every read handles the boundary). */
static bool st_scan(lw *L, st_state *s, ir_ref r, uint32_t depth, unsigned nest) {
  const ir_node *n = ir_node_get(L->m, r);
  if (nest > 4000)
    return false;
  if (n->op == IR_VAR)
    return n->attr != (int64_t)depth;
  if (n->op == IR_INDEX && n->nkids == s->rank + 1) {
    const ir_node *k0 = ir_node_get(L->m, ir_kid(L->m, r, 0));
    if (k0->op == IR_VAR && k0->attr == (int64_t)depth) {
      for (uint32_t d = 0; d < s->rank; d++) {
        ir_ref o = ir_kid(L->m, r, d + 1);
        if (ir_node_get(L->m, o)->op != IR_LIT)
          return false;
        int64_t v = st_offset(L, o);
        int64_t lo = v < 0 ? (v < -ST_MAX_REACH ? ST_MAX_REACH : -v) : 0;
        int64_t hi = v > 0 ? (v > ST_MAX_REACH ? ST_MAX_REACH : v) : 0;
        if (lo > s->below[d])
          s->below[d] = lo;
        if (hi > s->above[d])
          s->above[d] = hi;
      }
      return true;
    }
  }
  for (uint32_t i = 0; i < n->nkids; i++)
    if (!st_scan(L, s, ir_kid(L->m, r, i), depth + ir_binders(L->m, r, i), nest + 1))
      return false;
  return true;
}

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
  bool known = body != IR_NONE && st_scan(L, s, body, 0, 0);
  uint32_t *ext = cg_new(L->M, r * sizeof *ext);
  for (uint32_t d = 0; d < r; d++)
    ext[d] = lw_extent(L, &s->a, 0, d);
  lw_ew w = {e, "stencil", nd->type, r, ext, s->fn, st_setup, st_elem, known ? st_split : NULL, s};
  return L->M->st == AC_OK && lw_elementwise(L, &w, out);
}
