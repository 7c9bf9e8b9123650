/* lib/lower/delay.c: delayed operands at plan level, the lowering half of
 * fusion (the fuse pass, lib/passes/fuse.c, writes delay(p); the code half
 * is lib/codegen/seq_delay.c).
 *
 * When an array operand of a plan-level operation (the consumer) is
 * delay(p), p is not made into an array. lw_operand lowers what p's
 * skeleton would lower before its kernel, in the same order and with the
 * same messages: p's operands (themselves possibly delayed: producers
 * nest, so a chain of maps, slices and gathers is one expression), the
 * host-side checks (shapes of map's operands, slice bounds, negative
 * extents, reshape's count, and the size limit of the array p's skeleton
 * would have allocated), and the extents of p's result. The value it
 * returns has p's type and extent words, but the data word of each array
 * leaf is never set: it is recorded in L->dwords, and lw_load, asked to
 * load such a value into a kernel of the consumer, loads p's operands
 * instead and hands the consumer CL_FUNC leaves whose reader computes p's
 * element at the index read (cg_delayed). So the consumer's kernel does
 * p's work, and p's element errors (gather's and backpermute's index
 * checks) are raised there, at p's site; a backpermute that only picks
 * its parameters is checked here instead, once (dl_projection_check).
 *
 * A delay(p) that is not an operand of a consuming skeleton, or whose p is
 * not a producer (cg_delay_producer), is p: lw_expr lowers p (lower.c),
 * and reshape's own operand is always made manifest (a view needs a
 * buffer). Skeletons opt in by calling lw_operand for the operands they
 * read only through lw_load, lw_extent and cg_read.
 *
 * Requirements: verified IR. The consumer's kernels must be begun at the
 * consumer (lw_kernel_begin's `at`), so that the variables p's functions
 * use are loaded; p's functions are applied at the plan-level environment
 * depth recorded here (cg_delayed.nenv).
 */
#include "lower/skel.h"

#include "interp/rtarray.h" /* RT_ARRAY_MAX_BYTES */
#include "passes/pass.h"     /* ps_may_fail */

/* A delayed producer at plan level: its operands and words. */
typedef struct lw_delayed {
  ir_ref at;
  uint32_t nenv;
  uint32_t nops;
  lw_val *ops;     /* as cg_delayed.ops */
  uint32_t rank;
  uint32_t *ext;   /* words of the result's extents */
  uint32_t nsrc;   /* slice: rank of the source, and its words */
  uint32_t *start, *stride;
  uint32_t *xstart, *xstride; /* ... and their plan expressions */
} lw_delayed;

struct lw_dword {
  uint32_t word; /* the data word of leaf `leaf` of d's value */
  lw_delayed *d;
  uint32_t leaf;
};

static const struct lw_dword *dl_find(const lw *L, uint32_t word) {
  for (uint32_t i = 0; i < L->ndwords; i++)
    if (L->dwords[i].word == word)
      return &L->dwords[i];
  return NULL;
}

static void dl_record(lw *L, uint32_t word, lw_delayed *d, uint32_t leaf) {
  size_t cap = L->capdwords;
  if (!ac_grow(L->ctx, (void **)&L->dwords, &cap, (size_t)L->ndwords + 1, sizeof *L->dwords)) {
    cg_error(L->M, AC_ERR_NOMEM, d->at, "out of memory");
    return;
  }
  L->capdwords = (uint32_t)cap;
  L->dwords[L->ndwords++] = (struct lw_dword){word, d, leaf};
}

/* Words for plan expressions x[0..n). */
static uint32_t *dl_words(lw *L, uint32_t n, const uint32_t *x) {
  uint32_t *w = cg_new(L->M, (n ? n : 1) * sizeof *w);
  for (uint32_t i = 0; i < n; i++)
    w[i] = lw_x_to_word(L, x[i]);
  return w;
}

/* The allocation p's skeleton would make (lw_alloc_arrays: extents >= 0
 * were checked already), as rt_array_count: too large when one extent
 * alone or, with no extent zero, the product exceeds the limit of the
 * largest element leaf. `like`, when not NULL, is an operand with the
 * result's extents (map's first, gather's indices). */
void lw_size_check(lw *L, ir_ref p, uint32_t q, const uint32_t *ext, const lw_val *like) {
  const lw_leaf *lv;
  uint32_t n = lw_leaves(L, ir_node_get(L->m, p)->type, &lv);
  int64_t elsize = 1;
  for (uint32_t i = 0; i < n; i++)
    if ((int64_t)ac_scalar_size(lv[i].sc) > elsize)
      elsize = (int64_t)ac_scalar_size(lv[i].sc);
  /* an array `like` of these extents exists (or was checked) with
   * elements at least as large: nothing to check */
  if (like) {
    int64_t least = INT64_MAX;
    uint32_t nl = lw_leaves(L, like->type, &lv);
    for (uint32_t i = 0; i < nl; i++)
      if ((int64_t)ac_scalar_size(lv[i].sc) < least)
        least = (int64_t)ac_scalar_size(lv[i].sc);
    if (nl && elsize <= least)
      return;
  }
  uint32_t limit = lw_x_const(L, RT_ARRAY_MAX_BYTES / elsize), one = lw_x_const(L, 1);
  uint32_t each = one, anyzero = lw_x_const(L, 0), prod = one, count = one;
  for (uint32_t d = 0; d < q; d++) {
    uint32_t e1 = lw_x_bin(L, PX_MAX, ext[d], one);
    each = lw_x_bin(L, PX_MIN, each, lw_x_bin(L, PX_LE, ext[d], limit));
    anyzero = lw_x_bin(L, PX_MAX, anyzero, lw_x_bin(L, PX_EQ, ext[d], lw_x_const(L, 0)));
    /* count <= limit so far: count * e1 <= limit iff count <= limit / e1 */
    prod = lw_x_bin(L, PX_MIN, prod, lw_x_bin(L, PX_LE, count, lw_x_bin(L, PX_DIV, limit, e1)));
    count = lw_x_bin(L, PX_MUL, count, e1);
  }
  uint32_t ok = lw_x_bin(L, PX_MIN, each, lw_x_bin(L, PX_MAX, anyzero, prod));
  lw_piece pc[1] = {LW_TEXT("array too large")};
  lw_check(L, ok, p, 1, pc, 0, NULL);
}

static uint32_t dl_rank(lw *L, ir_type t) {
  ir_type elem;
  uint32_t rank = 0;
  ir_ty_array_view(L->ctx, t, &elem, &rank);
  return rank;
}

/* Operand k of p as ops[i], checked as one array (p's skeleton's
 * lw_check_shapes). */
static bool dl_source(lw *L, lw_delayed *d, uint32_t i, ir_ref p, uint32_t k) {
  if (!lw_operand(L, p, k, &d->ops[i]))
    return false;
  lw_check_shapes(L, p, ir_ops[ir_node_get(L->m, p)->op].spelling, 1, &d->ops[i]);
  return L->M->st == AC_OK;
}

/* A backpermute that only picks its parameters (ir_bp_projection) is
 * checked here, once, instead of per element: the interpreter computes
 * every element, so it fails exactly when, with no extent of the shape
 * zero, some source dimension d is picked by a parameter whose extent
 * exceeds it. The first such d is reported with the smallest index out of
 * range (its extent): the interpreter's message for an element that fails
 * there (every earlier dimension is in range for it). */
static void dl_projection_check(lw *L, ir_ref p, uint32_t q, const uint32_t *ext,
                                const lw_val *src) {
  uint32_t r = dl_rank(L, src->type);
  uint32_t *par = cg_new(L->M, (r + 1) * sizeof *par);
  if (!ir_bp_projection(L->m, p, r, par))
    return;
  uint32_t zero = lw_x_const(L, 0), anyzero = zero;
  for (uint32_t k = 0; k < q; k++)
    anyzero = lw_x_bin(L, PX_MAX, anyzero, lw_x_bin(L, PX_EQ, ext[k], zero));
  for (uint32_t k = 0; k < r && L->M->st == AC_OK; k++) {
    uint32_t e = lw_extent(L, src, 0, k);
    char mid[96];
    snprintf(mid, sizeof mid, " out of bounds for dimension %u of extent ", k);
    lw_piece pc[4] = {LW_TEXT("backpermute: index "), LW_VAL(e), LW_TEXT(mid), LW_VAL(e)};
    lw_check(L, lw_x_bin(L, PX_MAX, anyzero, lw_x_bin(L, PX_LE, ext[par[k]], e)), p, 4, pc, 0,
             NULL);
  }
}

/* p's host side, as its skeleton in skel_map.c: operands, checks, and the
 * result's extents into ext (plan expressions). */
static bool dl_prepare(lw *L, lw_delayed *d, ir_ref p, uint32_t *ext) {
  const ir_node *n = ir_node_get(L->m, p);
  ir_op op = (ir_op)n->op;
  uint32_t q = d->rank;
  bool alloc = true; /* p's skeleton allocates its result */
  switch (op) {
  case IR_MAP:
    for (uint32_t i = 0; i < d->nops; i++)
      if (!lw_operand(L, p, i + 1, &d->ops[i]))
        return false;
    lw_check_shapes(L, p, "map", d->nops, d->ops);
    for (uint32_t k = 0; k < q; k++)
      ext[k] = lw_extent(L, &d->ops[0], 0, k);
    break;
  case IR_GENERATE:
  case IR_IOTA:
    d->nops = 0;
    lw_shape(L, ir_kid(L->m, p, 0), q, ext, p, true);
    break;
  case IR_FILL:
    lw_shape(L, ir_kid(L->m, p, 0), q, ext, p, true);
    if (!lw_expr(L, ir_kid(L->m, p, 1), &d->ops[0]))
      return false;
    break;
  case IR_GATHER:
    /* both operands, then idx's check, then a's (lw_skel_gather) */
    if (!lw_operand(L, p, 0, &d->ops[0]) || !lw_operand(L, p, 1, &d->ops[1]))
      return false;
    lw_check_shapes(L, p, "gather", 1, &d->ops[0]);
    lw_check_shapes(L, p, "gather", 1, &d->ops[1]);
    if (lw_num_leaves(L, &d->ops[0]) != dl_rank(L, d->ops[1].type)) {
      cg_error(L->M, AC_ERR_INTERNAL, p, "lowering: gather with %u indices into rank %u",
               lw_num_leaves(L, &d->ops[0]), dl_rank(L, d->ops[1].type));
      return false;
    }
    for (uint32_t k = 0; k < q; k++)
      ext[k] = lw_extent(L, &d->ops[0], 0, k);
    break;
  case IR_BACKPERMUTE:
    lw_shape(L, ir_kid(L->m, p, 0), q, ext, p, true);
    if (!dl_source(L, d, 0, p, 2))
      return false;
    dl_projection_check(L, p, q, ext, &d->ops[0]);
    break;
  case IR_SLICE:
    alloc = false; /* no larger than its source */
    if (!dl_source(L, d, 0, p, 0))
      return false;
    d->nsrc = dl_rank(L, d->ops[0].type);
    d->start = cg_new(L->M, (d->nsrc + 1) * sizeof *d->start);
    d->stride = cg_new(L->M, (d->nsrc + 1) * sizeof *d->stride);
    lw_slice_bounds(L, p, &d->ops[0], d->nsrc, d->start, d->stride, ext);
    d->xstart = d->start;
    d->xstride = d->stride;
    d->start = dl_words(L, d->nsrc, d->start);
    d->stride = dl_words(L, d->nsrc, d->stride);
    break;
  case IR_RESHAPE:
    alloc = false; /* a view: as many elements as its source */
    lw_shape(L, ir_kid(L->m, p, 0), q, ext, p, true);
    if (!dl_source(L, d, 0, p, 1))
      return false;
    lw_reshape_check(L, p, &d->ops[0], q, ext);
    break;
  case IR_TRANSPOSE:
  case IR_REVERSE:
  case IR_REPLICATE: {
    uint32_t count = 0, off = op == IR_REPLICATE;
    alloc = op == IR_REPLICATE;
    if (op == IR_REPLICATE)
      lw_shape(L, ir_kid(L->m, p, 0), 1, &count, p, true);
    if (!dl_source(L, d, 0, p, off))
      return false;
    uint32_t r = dl_rank(L, d->ops[0].type);
    if (r + off != q || (op == IR_TRANSPOSE && q < 2)) {
      cg_error(L->M, AC_ERR_INTERNAL, p, "lowering: %s of rank %u as rank %u", ir_ops[op].name,
               r, q);
      return false;
    }
    for (uint32_t k = 0; k < r; k++)
      ext[k + off] = lw_extent(L, &d->ops[0], 0, k);
    if (op == IR_REPLICATE)
      ext[0] = count;
    if (op == IR_TRANSPOSE) {
      uint32_t t = ext[q - 1];
      ext[q - 1] = ext[q - 2];
      ext[q - 2] = t;
    }
    break;
  }
  default:
    cg_error(L->M, AC_ERR_INTERNAL, p, "lowering: %s cannot be delayed", ir_ops[op].name);
    return false;
  }
  if (alloc && L->M->st == AC_OK)
    lw_size_check(L, p, q, ext, op == IR_MAP || op == IR_GATHER ? &d->ops[0] : NULL);
  return L->M->st == AC_OK;
}

/* delay(p) = x as a delayed value. */
static bool dl_lower(lw *L, ir_ref x, lw_val *out) {
  ir_ref p = ir_kid(L->m, x, 0);
  const ir_node *n = ir_node_get(L->m, p);
  lw_delayed *d = cg_new(L->M, sizeof *d);
  d->at = p;
  d->nenv = L->nenv;
  d->rank = dl_rank(L, n->type);
  d->nops = n->op == IR_MAP ? n->nkids - 1 : n->op == IR_GATHER ? 2 : 1;
  d->ops = cg_new(L->M, (d->nops + 1) * sizeof *d->ops);
  uint32_t *ext = cg_new(L->M, (d->rank + 1) * sizeof *ext);
  if (d->rank == 0 || !dl_prepare(L, d, p, ext)) {
    if (L->M->st == AC_OK)
      cg_error(L->M, AC_ERR_INTERNAL, p, "lowering: a delayed producer without a rank");
    return false;
  }
  d->ext = dl_words(L, d->rank, ext);
  lw_fresh(L, n->type, out);
  const lw_leaf *lv;
  uint32_t nl = lw_leaves(L, n->type, &lv);
  for (uint32_t i = 0; i < nl; i++) {
    if (lv[i].rank != d->rank) {
      cg_error(L->M, AC_ERR_INTERNAL, p, "lowering: a delayed producer with a scalar leaf");
      return false;
    }
    for (uint32_t k = 0; k < d->rank; k++)
      out->words[lv[i].word + 1 + k] = d->ext[k];
    dl_record(L, out->words[lv[i].word], d, i);
  }
  return L->M->st == AC_OK;
}

bool lw_operand(lw *L, ir_ref e, uint32_t k, lw_val *out) {
  ir_ref x = ir_kid(L->m, e, k);
  const ir_node *n = ir_node_get(L->m, x);
  if (n->op != IR_DELAY || n->nkids != 1 ||
      !cg_delay_producer((ir_op)ir_node_get(L->m, ir_kid(L->m, x, 0))->op))
    return lw_expr(L, x, out);
  bool ok = false;
  if (L->M->st == AC_OK) {
    if (L->depth >= LW_MAX_DEPTH) {
      cg_error(L->M, AC_ERR_UNSUPPORTED, x, "program nested too deeply for the cpu backend");
    } else {
      L->depth++;
      ok = dl_lower(L, x, out) && L->M->st == AC_OK;
      L->depth--;
    }
  }
  if (!ok) /* as lw_expr: harmless words for callers that look */
    lw_fresh(L, n->type, out);
  return ok;
}

/* ---- in kernels ---- */

static LLVMValueRef dl_word(lw *L, cg_fn *f, uint32_t kernel, uint32_t word) {
  lw_val w = {ir_ty_scalar(L->ctx, AC_I64), 1, &word};
  cg_val v;
  lw_load(L, f, kernel, &w, &v);
  return v.l[0].v;
}

/* d's value in kernel f: its operands loaded, its leaves readers. */
static void dl_load(lw *L, cg_fn *f, uint32_t kernel, const lw_delayed *d, cg_val *out) {
  cg_module *M = L->M;
  cg_delayed *c = cg_new(M, sizeof *c);
  c->at = d->at;
  c->nenv = d->nenv;
  c->nops = d->nops;
  c->rank = d->rank;
  c->ops = cg_new(M, (d->nops + 1) * sizeof *c->ops);
  for (uint32_t i = 0; i < d->nops; i++)
    lw_load(L, f, kernel, &d->ops[i], &c->ops[i]);
  c->ext = cg_new(M, (d->rank + 1) * sizeof *c->ext);
  for (uint32_t k = 0; k < d->rank; k++)
    c->ext[k] = dl_word(L, f, kernel, d->ext[k]);
  if (d->start) {
    c->start = cg_new(M, (d->nsrc + 1) * sizeof *c->start);
    c->stride = cg_new(M, (d->nsrc + 1) * sizeof *c->stride);
    /* constants as constants: the reads of slices at literal offsets
     * fold into one address computation (and tiles' reads too) */
    for (uint32_t k = 0; k < d->nsrc; k++) {
      int64_t v;
      c->start[k] = lw_x_is_const(L, d->xstart[k], &v) ? cg_i64(M, v)
                                                       : dl_word(L, f, kernel, d->start[k]);
      c->stride[k] = lw_x_is_const(L, d->xstride[k], &v) ? cg_i64(M, v)
                                                         : dl_word(L, f, kernel, d->stride[k]);
    }
  }
  /* the source's extents (its leaves agree: checked on the host) */
  const cg_val *src = d->nops ? &c->ops[d->nops - 1] : NULL;
  if (src && src->n && src->l[0].kind != CL_SCALAR)
    c->sext = src->l[0].ext;
  cg_delayed_value(f, c, out);
}

bool lw_load_delayed(lw *L, cg_fn *f, uint32_t kernel, const lw_val *v, cg_val *out) {
  if (!L->ndwords)
    return false;
  const lw_leaf *lv;
  uint32_t n = lw_leaves(L, v->type, &lv);
  bool any = false;
  for (uint32_t i = 0; i < n && !any; i++)
    any = lv[i].rank && lv[i].word < v->nwords && dl_find(L, v->words[lv[i].word]);
  if (!any)
    return false;
  cg_module *M = L->M;
  cg_val_alloc(M, v->type, out);
  /* each producer once, whatever number of leaves it has */
  const lw_delayed **done = cg_new(M, (n + 1) * sizeof *done);
  cg_val *vals = cg_new(M, (n + 1) * sizeof *vals);
  uint32_t ndone = 0;
  for (uint32_t i = 0; i < n && i < out->n; i++) {
    const struct lw_dword *dw = lv[i].rank ? dl_find(L, v->words[lv[i].word]) : NULL;
    if (dw) {
      uint32_t j = 0;
      while (j < ndone && done[j] != dw->d)
        j++;
      if (j == ndone) {
        done[ndone] = dw->d;
        dl_load(L, f, kernel, dw->d, &vals[ndone++]);
      }
      if (dw->leaf < vals[j].n)
        out->l[i] = vals[j].l[dw->leaf];
      continue;
    }
    ir_type st = ir_ty_scalar(L->ctx, lv[i].sc);
    ir_type lt = lv[i].rank ? ir_ty_array(L->ctx, st, lv[i].rank) : st;
    cg_val one;
    cg_load_frame(f, lt, v->words + lv[i].word, &one);
    if (one.n == 1)
      out->l[i] = one.l[0];
    for (uint32_t w = 0; w <= lv[i].rank; w++)
      pl_kernel_use(L->p, kernel, v->words[lv[i].word + w]);
  }
  return true;
}

bool lw_delayed_slice(lw *L, const lw_val *v, lw_val *src, int64_t *start) {
  const lw_leaf *lv;
  uint32_t n = lw_leaves(L, v->type, &lv);
  const lw_delayed *d = NULL;
  for (uint32_t i = 0; i < n; i++) {
    const struct lw_dword *dw =
        lv[i].rank && lv[i].word < v->nwords ? dl_find(L, v->words[lv[i].word]) : NULL;
    if (!dw || (d && dw->d != d))
      return false;
    d = dw->d;
  }
  if (!d || !d->xstart || ir_node_get(L->m, d->at)->op != IR_SLICE || d->nsrc != d->rank)
    return false;
  for (uint32_t k = 0; k < d->nsrc; k++) {
    int64_t st;
    if (!lw_x_is_const(L, d->xstride[k], &st) || st != 1 ||
        !lw_x_is_const(L, d->xstart[k], &start[k]))
      return false;
  }
  *src = d->ops[0];
  return true;
}

/* Whether computing an element of producer p (with its delayed operands)
 * can fail: a gather's or backpermute's index, or an element function that
 * may fail (a function reference counts as one that may). */
static bool dl_elem_fails(lw *L, ir_ref p, unsigned depth) {
  ac_module *m = L->m;
  const ir_node *n = ir_node_get(m, p);
  if (depth > LW_MAX_DEPTH)
    return true;
  ir_ref fn = 0;
  switch ((ir_op)n->op) {
  case IR_GATHER:
    return true;
  case IR_BACKPERMUTE: /* a projection is checked before its elements */
    if (!ir_bp_is_projection(m, p))
      return true;
    fn = ir_kid(m, p, 1);
    break;
  case IR_MAP:
    fn = ir_kid(m, p, 0);
    break;
  case IR_GENERATE:
    fn = ir_kid(m, p, 1);
    break;
  default:
    break;
  }
  if (fn && (ir_node_get(m, fn)->op != IR_LAM || ps_may_fail(m, ir_kid(m, fn, 0))))
    return true;
  for (uint32_t i = 0; i < n->nkids; i++) {
    ir_ref k = ir_kid(m, p, i);
    if (k && ir_node_get(m, k)->op == IR_DELAY && dl_elem_fails(L, ir_kid(m, k, 0), depth + 1))
      return true;
  }
  return false;
}

bool lw_delayed_may_fail(lw *L, const lw_val *v) {
  const lw_leaf *lv;
  uint32_t n = lw_leaves(L, v->type, &lv);
  for (uint32_t i = 0; i < n; i++) {
    const struct lw_dword *dw =
        lv[i].rank && lv[i].word < v->nwords ? dl_find(L, v->words[lv[i].word]) : NULL;
    if (dw && dl_elem_fails(L, dw->d->at, 0))
      return true;
  }
  return false;
}
