/* lib/lower/skel_rec.c: recurrences, rec (i1 in lo1..=hi1, ..) -> T { body },
 * on the CPU, by wavefronts (Cartey et al., "Recursion equations to GPU":
 * per-wavefront parallel code under an affine schedule) or by tiles, and
 * with a window instead of the table when only a few elements (a let's
 * reads at size expressions) or the rows' folds are used (the sections
 * "tiles" and "windows" below).
 *
 * The verifier stores a schedule a (n coefficients at m->ints[node->aux],
 * lib/ir/rec.h) such that every element only reads elements of a strictly
 * smaller a . x, x being the 0-based coordinates; the points of equal
 * a . x (a wavefront) are independent. The interpreter (lib/interp/rec.c)
 * computes them in order of a . x and checks every read against that order.
 * The plan here:
 *   1. per dimension, in the interpreter's order, the bounds become i64
 *      plan expressions (lw_int: any integer kinds, read as the interpreter
 *      reads them) and the extent is checked at once ("array too large",
 *      "negative extent"); no kernel is needed;
 *   2. the result is allocated (0-based storage of the logical domain),
 *      then the plan checks that a . x cannot overflow on this domain;
 *   3. the points are computed:
 *      - all-zero schedule (no dependencies): "rec", one parallel launch
 *        over the whole domain;
 *      - rank 1: "rec.seq", one chunk walking the points in schedule order
 *        (each wavefront of a 1-D recurrence holds one point, so launches
 *        would be pure overhead);
 *      - rank >= 2 with uniform reads of one sign per dimension: tiles in
 *        tile wavefronts, "rec.tile" (below), the interior ones of rank 2
 *        walked by anti-diagonals in SIMD ("anti-diagonals" below);
 *      - other ranks >= 2: a plan loop over the wavefront times t from tmin to
 *        tmax, each launching "rec.front" over the points of that
 *        hyperplane. One dimension s (|a_s| = 1 preferred) is solved for:
 *        x_s = (t - sum of the others) / a_s, skipped when outside the box
 *        or not integral; the others are enumerated, and one of them, u, is
 *        restricted per wavefront to the range where x_s can be inside
 *        (exact for 2-D; for higher ranks the other dimensions' full spans
 *        widen it). The launch size is that count, so tiny wavefronts get
 *        one chunk from the pool's automatic chunking and run inline.
 * The body is cg_expr'd with the index variables bound to LOGICAL
 * coordinates (lo + x) and the array itself bound as CL_FUNC leaves whose
 * reader (rc_read) loads the output buffer after the interpreter's check:
 * inside the domain and in an earlier wavefront, else "rec: read of d[..]
 * outside the domain" / "before it is computed" (the index is printed
 * exactly for ranks 1 and 2; a site takes two numbers).
 * Steps 1 and 2 (lw_rec_begin), the read errors' formats and the wavefront
 * loop of step 3 (lw_rec_fronts) are shared with the GPU skeleton
 * (gskel_rec.c), which brings its own kernels.
 */
#include "lower/skel.h"
#include "lower/skel_red.h"
#include "passes/pass.h" /* ps_may_fail */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Points per chunk at least: rec bodies are a few operations (edit
 * distance), so a wavefront needs hundreds of points before waking the pool
 * pays; bodies that run nested array operations get a small grain. */
#define RC_GRAIN 1024
#define RC_GRAIN_NESTED 16

/* The recurrence's host-side state (skel.h: shared with the GPU skeleton). */
typedef lw_rec rc_ctx;

/* What a kernel knows while generating points (the readers' data). */
typedef lw_rec_kern rc_kernel;

/* ---- the array inside the body ---- */

/* The formats of the two read errors ("rec: read of d[%lld, %lld] outside
 * the domain" / "... before it is computed": the whole index, one value a
 * dimension), `size` bytes each. */
static void rc_formats(const lw_rec *c, char *out, char *early, size_t size) {
  char dims[6 * 64 + 8] = "["; /* ", %lld" per dimension */
  for (uint32_t d = 0; d < c->n && d < 64; d++)
    strcat(dims, d ? ", %lld" : "%lld");
  strcat(dims, "]");
  snprintf(out, size, "rec: read of %s%s outside the domain", c->name, dims);
  snprintf(early, size, "rec: read of %s%s before it is computed", c->name, dims);
}

/* The lower bound of dimension d as an i64 constant when the program
 * writes it as an integer literal (then the kernels need not load it, and
 * the optimiser sees what `i == 0` says about the index), else NULL. */
static LLVMValueRef rc_lo(const lw_rec *c, uint32_t d) {
  const ac_module *m = c->L->m;
  const ir_node *nd = ir_node_get(m, ir_kid(m, c->e, 2 * d));
  ac_scalar sc;
  /* a value the interpreter reads the same as an i64 (lw_int): any signed
   * literal, an unsigned one below 2^63 */
  if (nd->op != IR_LIT || !ir_ty_is_scalar(m->ctx, nd->type, &sc) || sc == AC_BOOL || sc > AC_U64 ||
      (sc >= AC_U8 && nd->lit.i < 0))
    return NULL;
  return cg_i64(c->L->M, nd->lit.i);
}

LLVMValueRef lw_rec_read(cg_fn *f, const lw_rec_kern *k, LLVMValueRef *idx, ir_ref at,
                         LLVMValueRef *kd) {
  cg_module *M = f->M;
  const lw_rec *c = k->c;
  bool ordered = cg_rec_read_ordered(&c->rd, at);
  LLVMValueRef inside = LLVMConstInt(M->t_i1, 1, 0), key = cg_i64(M, 0);
  for (uint32_t d = 0; d < c->n; d++) {
    kd[d] = LLVMBuildSub(M->b, idx[d], k->lo[d], "");
    if (!ordered || d >= 64 || !((k->proven >> d) & 1)) {
      LLVMValueRef in = LLVMBuildAnd(M->b, LLVMBuildICmp(M->b, LLVMIntSGE, idx[d], k->lo[d], ""),
                                     LLVMBuildICmp(M->b, LLVMIntULT, kd[d], k->ext[d], ""), "");
      inside = LLVMBuildAnd(M->b, inside, in, "");
    }
    if (c->a[d] && !ordered)
      key = LLVMBuildAdd(M->b, key, LLVMBuildMul(M->b, cg_i64(M, c->a[d]), kd[d], ""), "");
  }
  cg_check_n(f, inside, cg_site(M, at, k->fmt_out), c->n, idx);
  if (ordered)
    return inside;
  /* when !ok exactly one fails: "outside" when outside, else "before" */
  LLVMValueRef t = LLVMBuildLoad2(M->b, M->t_i64, k->tcur, "");
  LLVMValueRef ok = LLVMBuildAnd(M->b, inside, LLVMBuildICmp(M->b, LLVMIntSLT, key, t, ""), "");
  cg_check_n(f, LLVMBuildOr(M->b, ok, LLVMBuildNot(M->b, inside, ""), ""),
             cg_site(M, at, k->fmt_early), c->n, idx);
  return ok;
}

LLVMValueRef lw_rec_walking(cg_fn *f, const lw_rec_kern *k, uint32_t d, LLVMValueRef x) {
  cg_module *M = f->M;
  if (lw_rec_sigma(k->c, d) > 0)
    return x;
  return LLVMBuildSub(M->b, LLVMBuildSub(M->b, k->ext[d], cg_i64(M, 1), ""), x, "");
}

/* Windows: the scratch element of walking coordinates (y0, y1). */
static LLVMValueRef rc_local(cg_fn *f, const rc_kernel *k, LLVMValueRef y0, LLVMValueRef y1) {
  cg_module *M = f->M;
  LLVMValueRef r = LLVMBuildAdd(M->b, LLVMBuildSub(M->b, y0, k->wb[0], ""), cg_i64(M, k->wdr), "");
  LLVMValueRef c = LLVMBuildAdd(M->b, LLVMBuildSub(M->b, y1, k->wb[1], ""), cg_i64(M, k->wdc), "");
  return LLVMBuildAdd(M->b, LLVMBuildMul(M->b, r, k->wsw, ""), c, "");
}

LLVMValueRef lw_rec_local_at(cg_fn *f, const lw_rec_kern *k, LLVMValueRef x0, LLVMValueRef x1) {
  return rc_local(f, k, lw_rec_walking(f, k, 0, x0), lw_rec_walking(f, k, 1, x1));
}

/* Windows of rank > 2: the scratch element of walking coordinates (y0,
 * y1) and 0-based coordinates x[2..n) in the inner dimensions. */
static LLVMValueRef rc_local_n(cg_fn *f, const rc_kernel *k, LLVMValueRef y0, LLVMValueRef y1,
                               const LLVMValueRef *x) {
  cg_module *M = f->M;
  LLVMValueRef lin = rc_local(f, k, y0, y1);
  if (!k->winner)
    return lin;
  for (uint32_t d = 2; d < k->c->n; d++)
    lin = LLVMBuildAdd(M->b, LLVMBuildMul(M->b, lin, k->ext[d], ""), x[d], "");
  return lin;
}

/* The element of k->out holding the point of walking coordinates (y0,
 * y1): the table's, or with a window the scratch's. */
static LLVMValueRef rc_cell(cg_fn *f, const rc_kernel *k, LLVMValueRef y0, LLVMValueRef y1) {
  if (k->window)
    return rc_local(f, k, y0, y1);
  LLVMValueRef x[2] = {lw_rec_walking(f, k, 0, y0), lw_rec_walking(f, k, 1, y1)};
  return cg_linear(f, 2, k->ext, x);
}

/* The walking offsets (o0, o1) of the read `at` of a uniform rank-2
 * recurrence (a read of c->rd.offat). */
static void rc_walk_offsets(const lw_rec *c, ir_ref at, int64_t *o) {
  cg_rec_read_offsets(&c->rd, at, 2, o);
  for (uint32_t d = 0; d < 2; d++)
    o[d] *= lw_rec_sigma(c, d);
}


/* Anti-diagonal tiles: dst[dlin] = x, the leaves of the ring only. */
static void rc_ring_store(cg_fn *f, const rc_kernel *k, const cg_val *dst, LLVMValueRef dlin,
                          const cg_val *x) {
  for (uint32_t l = 0; l < dst->n && l < x->n; l++)
    if (!cg_leaf_in(k->dead, l))
      cg_store_elem(f, &dst->l[l], dlin, x->l[l].v);
}

/* Anti-diagonal tiles: the ring's element for the read `at` (skel.h). */
static LLVMValueRef rc_diag_at(cg_fn *f, const rc_kernel *k, ir_ref at) {
  cg_module *M = f->M;
  int64_t o[2];
  rc_walk_offsets(k->c, at, o);
  LLVMValueRef r = LLVMBuildAdd(M->b, k->drow, cg_i64(M, o[0] + k->ddr), "");
  return LLVMBuildAdd(M->b, k->dslot[-(o[0] + o[1])], r, "");
}

/* d[idx] for leaf l of the array being defined (see the header). */
LLVMValueRef lw_rec_kern_read(cg_fn *f, const cg_leaf *l, LLVMValueRef *idx, ir_ref at) {
  cg_module *M = f->M;
  const lw_rec_leafenv *le = l->env;
  const rc_kernel *k = le->k;
  LLVMValueRef *kd = cg_new(M, k->c->n * sizeof *kd), lin = cg_i64(M, 0);
  LLVMValueRef ok = lw_rec_read(f, k, idx, at, kd);
  if (k->carry && bsearch(&at, k->carried, k->ncarried, sizeof at, cg_ref_cmp)) {
    cg_val v;
    cg_var_load(f, k->carry, &v);
    return v.l[le->leaf].v;
  }
  for (uint32_t j = 0; k->lane_val && j < k->c->rd.noffs; j++)
    if (k->c->rd.offat[j] == at) { /* the GPU's lanes: fetched before the point */
      cg_val v;
      cg_var_load(f, &k->lane_val[j], &v);
      return v.l[le->leaf].v;
    }
  if (k->diag && cg_leaf_in(k->dead, le->leaf)) /* never used: the body projects it away */
    return LLVMConstNull(cg_scalar_type(M, (ac_scalar)l->sc));
  if (k->diag)
    return cg_load_elem(f, &k->ring.l[le->leaf], rc_diag_at(f, k, at));
  if (k->window) {
    lin = rc_local_n(f, k, lw_rec_walking(f, k, 0, kd[0]), lw_rec_walking(f, k, 1, kd[1]), kd);
    lin = LLVMBuildSelect(M->b, ok, lin, cg_i64(M, 0), "");
    return cg_load_elem(f, &k->out.l[le->leaf], lin);
  }
  for (uint32_t d = 0; d < k->c->n; d++)
    lin = LLVMBuildAdd(M->b, LLVMBuildMul(M->b, lin, k->ext[d], ""), kd[d], "");
  lin = LLVMBuildSelect(M->b, ok, lin, cg_i64(M, 0), "");
  return cg_load_elem(f, &k->out.l[le->leaf], lin);
}

/* ---- one point ---- */

LLVMValueRef lw_rec_point_begin(cg_fn *f, const lw_rec_kern *k, const cg_val *self, LLVMValueRef *x,
                                LLVMValueRef t, LLVMValueRef *mark) {
  cg_module *M = f->M;
  const lw_rec *c = k->c;
  LLVMBuildStore(M->b, t, k->tcur);
  *mark = c->tmp ? cg_tmp_mark(f) : NULL;
  cg_env_push(f, self);
  LLVMValueRef lin = cg_i64(M, 0);
  for (uint32_t d = 0; d < c->n; d++) {
    cg_val iv;
    cg_assume(f, LLVMBuildICmp(M->b, LLVMIntULT, x[d], k->ext[d], ""));
    sk_i64_val(f, LLVMBuildAdd(M->b, k->lo[d], x[d], ""), &iv);
    cg_env_push(f, &iv);
    lin = LLVMBuildAdd(M->b, LLVMBuildMul(M->b, lin, k->ext[d], ""), x[d], "");
  }
  return lin;
}

void lw_rec_point_end(cg_fn *f, const lw_rec_kern *k, LLVMValueRef mark) {
  cg_env_pop(f, k->c->n + 1);
  if (k->c->tmp)
    cg_tmp_release(f, mark);
}

/* Computes the point of 0-based coordinates x (n values) whose a . x is
 * t: binds the array and the logical indices, generates the body and stores
 * its leaves. */
static void rc_point(cg_fn *f, rc_kernel *k, const cg_val *self, LLVMValueRef *x, LLVMValueRef t) {
  LLVMValueRef mark;
  LLVMValueRef lin = lw_rec_point_begin(f, k, self, x, t, &mark);
  cg_val v;
  cg_expr(f, k->c->body, &v);
  sk_store(f, &k->out, lin, &v);
  lw_rec_point_end(f, k, mark);
}

void lw_rec_kern_setup(const lw_rec *c, cg_fn *f, uint32_t kernel, lw_rec_kern *k, cg_read_fn read,
                       cg_val *self) {
  lw *L = c->L;
  cg_module *M = L->M;
  memset(k, 0, sizeof *k);
  k->c = c;
  rc_formats(c, k->fmt_out, k->fmt_early, sizeof k->fmt_out);
  lw_load(L, f, kernel, &c->out, &k->out);
  k->lo = cg_new(M, c->n * sizeof *k->lo);
  k->ext = cg_new(M, c->n * sizeof *k->ext);
  for (uint32_t d = 0; d < c->n; d++) {
    k->lo[d] = rc_lo(c, d) ? rc_lo(c, d) : sk_ld(L, f, kernel, &c->lo[d]);
    k->ext[d] = sk_ld(L, f, kernel, &c->ext[d]);
  }
  k->tcur = cg_alloca(f, M->t_i64);
  cg_val_alloc(M, ir_node_get(L->m, c->e)->type, self);
  for (uint32_t i = 0; i < self->n; i++) {
    lw_rec_leafenv *le = cg_new(M, sizeof *le);
    le->k = k;
    le->leaf = i;
    cg_leaf *l = &self->l[i];
    l->kind = CL_FUNC;
    l->sc = k->out.l[i].sc;
    l->rank = c->n;
    l->v = NULL;
    l->ext = NULL; /* indices are logical: the reader checks them itself (cg_read) */
    l->read = read;
    l->env = le;
  }
}

/* Starts a point kernel: loads the result and the bounds and builds the
 * array value the body sees. */
static cg_fn *rc_kernel_begin(const rc_ctx *c, const char *kind, int64_t grain, uint32_t *kernel,
                              rc_kernel *k, cg_val *self) {
  cg_fn *f = lw_kernel_begin(c->L, c->e, kind, grain, kernel);
  lw_rec_kern_setup(c, f, *kernel, k, lw_rec_kern_read, self);
  return f;
}

/* ---- kernels ---- */

/* "rec": all-zero schedule, every point at once (a . x = 0 everywhere, so
 * any read of the array fails as "before it is computed", as it must). */
static uint32_t rc_all_kernel(const rc_ctx *c) {
  cg_module *M = c->L->M;
  uint32_t kern;
  rc_kernel k;
  cg_val self;
  cg_fn *f = rc_kernel_begin(c, "rec", c->tmp ? RC_GRAIN_NESTED : RC_GRAIN, &kern, &k, &self);
  LLVMValueRef *x = cg_new(M, c->n * sizeof *x);
  cg_loop il;
  LLVMValueRef i = cg_loop_begin(f, &il, f->lo, f->hi), rest = i;
  for (uint32_t d = c->n; d-- > 1;) {
    x[d] = LLVMBuildURem(M->b, rest, k.ext[d], "");
    rest = LLVMBuildUDiv(M->b, rest, k.ext[d], "");
  }
  x[0] = rest;
  rc_point(f, &k, &self, x, cg_i64(M, 0));
  cg_loop_end(f, &il);
  lw_kernel_end(c->L, f);
  return kern;
}

/* "rec.seq": rank 1, one chunk, the points in order of a . x. */
static uint32_t rc_seq_kernel(const rc_ctx *c) {
  cg_module *M = c->L->M;
  uint32_t kern;
  rc_kernel k;
  cg_val self;
  cg_fn *f = rc_kernel_begin(c, "rec.seq", 1, &kern, &k, &self);
  cg_loop jl;
  LLVMValueRef j = cg_loop_begin(f, &jl, cg_i64(M, 0), k.ext[0]);
  LLVMValueRef x =
      c->a[0] > 0 ? j : LLVMBuildSub(M->b, LLVMBuildSub(M->b, k.ext[0], cg_i64(M, 1), ""), j, "");
  rc_point(f, &k, &self, &x, LLVMBuildMul(M->b, cg_i64(M, c->a[0]), x, ""));
  cg_loop_end(f, &jl);
  lw_kernel_end(c->L, f);
  return kern;
}

/* "rec.front": the points of wavefront t. Iteration i enumerates the
 * dimensions other than s in increasing order, u over the cnt values from
 * kulo, the others over their extents. */
static uint32_t rc_front_kernel(const rc_ctx *c) {
  lw *L = c->L;
  cg_module *M = L->M;
  uint32_t kern;
  rc_kernel k;
  cg_val self;
  cg_fn *f = rc_kernel_begin(c, "rec.front", c->tmp ? RC_GRAIN_NESTED : RC_GRAIN, &kern, &k, &self);
  LLVMValueRef t = sk_ld(L, f, kern, &c->t), kulo = sk_ld(L, f, kern, &c->kulo);
  LLVMValueRef cnt = sk_ld(L, f, kern, &c->cnt);
  uint32_t first = c->s == 0 ? 1 : 0; /* the outermost enumerated dimension */
  LLVMValueRef *x = cg_new(M, c->n * sizeof *x);
  cg_loop il;
  LLVMValueRef i = cg_loop_begin(f, &il, f->lo, f->hi), rest = i;
  LLVMValueRef rem = t;
  for (uint32_t d = c->n; d-- > 0;) {
    if (d == c->s)
      continue;
    LLVMValueRef span = d == c->u ? cnt : k.ext[d];
    if (d == first) {
      x[d] = rest;
    } else {
      x[d] = LLVMBuildURem(M->b, rest, span, "");
      rest = LLVMBuildUDiv(M->b, rest, span, "");
    }
    if (d == c->u)
      x[d] = LLVMBuildAdd(M->b, x[d], kulo, "");
    if (c->a[d])
      rem = LLVMBuildSub(M->b, rem, LLVMBuildMul(M->b, cg_i64(M, c->a[d]), x[d], ""), "");
  }
  int64_t as = c->a[c->s];
  LLVMValueRef valid = LLVMConstInt(M->t_i1, 1, 0);
  if (as == 1) {
    x[c->s] = rem;
  } else if (as == -1) {
    x[c->s] = LLVMBuildSub(M->b, cg_i64(M, 0), rem, "");
  } else {
    LLVMValueRef r = LLVMBuildSRem(M->b, rem, cg_i64(M, as), "");
    valid = LLVMBuildICmp(M->b, LLVMIntEQ, r, cg_i64(M, 0), "");
    x[c->s] = LLVMBuildSDiv(M->b, rem, cg_i64(M, as), "");
  }
  valid = LLVMBuildAnd(M->b, valid, LLVMBuildICmp(M->b, LLVMIntULT, x[c->s], k.ext[c->s], ""), "");
  LLVMBasicBlockRef skip = sk_if(f, valid);
  rc_point(f, &k, &self, x, t);
  sk_endif(f, skip);
  cg_loop_end(f, &il);
  lw_kernel_end(L, f);
  return kern;
}

/* ---- tiles ----
 * When every read is uniform (c->rd.uniform) and the offsets of each dimension
 * have one sign, walking dimension k upwards (sigma_k = +1, offsets <= 0)
 * or downwards (sigma_k = -1, offsets >= 0) computes every read before its
 * reader: in the walking coordinates y_k (x_k or ext_k - 1 - x_k) every
 * read lies at y + o with o <= 0 componentwise and o != 0, so it is
 * lexicographically earlier. The first two dimensions are cut into tiles
 * (the others stay whole); tile (I, J) reads only tiles (I', J') with
 * I' <= I and J' <= J, so the tiles of one tile wavefront I + J are
 * independent: one launch per tile wavefront, each tile one task computing
 * its points row by row in y order (rows of the row-major table: every
 * read is a recent cache line). A tile whose first y_k is at least the
 * largest |o_k| (k = 0, 1) reads inside the domain in those dimensions
 * whatever the point, so its body is generated a second time without
 * those checks (interior tiles, almost all of them). The point computed
 * last is kept in registers for the reads of the innermost neighbour
 * (cg_fn.late: the operations waiting for it are regrouped to come last). */

/* Tile edges (rc_tile_sizes): a sixteenth of the extent within
 * [RC_TILE_MIN, RC_TILE_ROWS] rows and [RC_TILE_MIN, RC_TILE_COLS] columns
 * for rank 2 (large tiles: each is one task of the pool, and each
 * anti-diagonal of an interior tile costs a few halo copies besides its
 * up to RC_TILE_ROWS points), [4, 16] for higher ranks, whose tiles hold
 * the inner dimensions whole. The first tile of a dimension is only as
 * deep as the reads reach (rc_tiles_of), so only it needs checks. */
#define RC_TILE_ROWS 512
#define RC_TILE_COLS 1024
#define RC_TILE_MIN 32

/* (skel.h) the largest |offset|; 0 when no read moves along k. */
int64_t lw_rec_reach(const lw_rec *c, uint32_t k) {
  return lw_rec_sigma(c, k) > 0 ? -c->rd.offmin[k] : c->rd.offmax[k];
}

/* (skel.h) +1 wins when all offsets are 0; 0 for both signs (no tiling). */
int lw_rec_sigma(const lw_rec *c, uint32_t k) {
  return c->rd.offmax[k] <= 0 ? 1 : c->rd.offmin[k] >= 0 ? -1 : 0;
}

bool lw_rec_tileable(const lw_rec *c) {
  if (!c->rd.uniform || c->n < 2 || c->n > 64)
    return false;
  for (uint32_t k = 0; k < c->n; k++)
    if (lw_rec_sigma(c, k) == 0)
      return false;
  return true;
}

/* The points of the tile whose first walking coordinates are b[0], b[1]
 * (ends e[0], e[1]), in y order; the reads' checks are left out in the
 * dimensions of k->proven. */
static void rc_tile_points(cg_fn *f, rc_kernel *k, const cg_val *self, LLVMValueRef *b,
                           LLVMValueRef *e) {
  cg_module *M = f->M;
  const lw_rec *c = k->c;
  cg_loop *loops = cg_new(M, c->n * sizeof *loops);
  LLVMValueRef *x = cg_new(M, c->n * sizeof *x), t = cg_i64(M, 0);
  LLVMValueRef *y = cg_new(M, c->n * sizeof *y);
  uint32_t last = c->n - 1;
  ir_type elem = ir_node_get(c->L->m, c->body)->type;
  cg_var acc;
  if (k->fold)
    cg_var_new(f, k->fold_z->type, &acc);
  for (uint32_t d = 0; d < c->n; d++) {
    if (d == last && k->fold) {
      /* the row's fold so far: z in its first tile */
      cg_val prev, start;
      sk_load(f, k->fold_rows, k->fold_z->type, x[0], &prev);
      cg_val_select(f, k->fold_first, k->fold_z, &prev, &start);
      cg_var_store(f, &acc, &start);
    }
    if (d == last && k->carry && last < 2) {
      /* the point before the row's first: in the tile before, if any */
      LLVMBasicBlockRef join = sk_if(f, LLVMBuildICmp(M->b, LLVMIntSGT, b[d], cg_i64(M, 0), ""));
      LLVMValueRef yp = LLVMBuildSub(M->b, b[d], cg_i64(M, 1), "");
      cg_val pv;
      sk_load(f, &k->out, elem, rc_cell(f, k, y[0], yp), &pv);
      cg_var_store(f, k->carry, &pv);
      sk_endif(f, join);
    }
    y[d] = d < 2 ? cg_loop_begin(f, &loops[d], b[d], e[d])
                 : cg_loop_begin(f, &loops[d], cg_i64(M, 0), k->ext[d]);
    x[d] = lw_rec_walking(f, k, d, y[d]);
    t = LLVMBuildAdd(M->b, t, LLVMBuildMul(M->b, cg_i64(M, c->a[d]), x[d], ""), "");
  }
  LLVMValueRef mark;
  LLVMValueRef lin = lw_rec_point_begin(f, k, self, x, t, &mark);
  if (k->window)
    lin = rc_local_n(f, k, y[0], y[1], x);
  cg_val v;
  cg_expr(f, c->body, &v);
  sk_store(f, &k->out, lin, &v);
  if (k->carry)
    cg_var_store(f, k->carry, &v);
  lw_rec_point_end(f, k, mark);
  if (k->fold) { /* in the fold's scope: the point's binders are gone */
    cg_val a, part, next;
    cg_var_load(f, &acc, &a);
    lw_rec_fold_part(f, k->fold, &v, &part);
    sk_apply2(f, k->fold->fn, &a, &part, false, k->fold->tmp, &next);
    cg_var_store(f, &acc, &next);
  }
  for (uint32_t d = c->n; d-- > 0;) {
    cg_loop_end(f, &loops[d]);
    if (d == last && k->fold) {
      cg_val done;
      cg_var_load(f, &acc, &done);
      sk_store(f, k->fold_rows, x[0], &done);
    }
  }
}

/* A window (lw_skel_rec_at, lw_skel_rec_fold; skel.h's lw_rec_window):
 * instead of the table, each CPU tile is computed in a scratch of (dr +
 * T0) x (dc + T1) points of the worker's temporary memory, rows and
 * columns in walking order, dr and dc the reaches of the reads in
 * dimensions 0 and 1: the tile (I, J) at local (dr, dc), its halo above
 * and to the left. The halo comes from `v`, the last dc columns of tile row
 * I's tile before (with the rows above it: the corner), and from `h`, dr
 * rows of the whole width holding the last rows of the tile row above.
 * Once computed, the tile leaves its own last columns in v and its last
 * rows in h. Tile (I, J) is the only one of its tile wavefront to touch row
 * I of v and columns J of h. */
typedef lw_rec_window rc_window;

/* dst[dbase + r * dstride + q] = src[sbase + r * sstride + q] for the rows
 * r in [0, nr) and the columns q in [0, nq), in cells of W elements each
 * (NULL: one). */
static void rc_copy(cg_fn *f, ir_type elem, LLVMValueRef W, const cg_val *dst, LLVMValueRef dbase,
                    LLVMValueRef dstride, const cg_val *src, LLVMValueRef sbase,
                    LLVMValueRef sstride, LLVMValueRef nr, LLVMValueRef nq) {
  cg_module *M = f->M;
  if (W) {
    dbase = LLVMBuildMul(M->b, dbase, W, "");
    dstride = LLVMBuildMul(M->b, dstride, W, "");
    sbase = LLVMBuildMul(M->b, sbase, W, "");
    sstride = LLVMBuildMul(M->b, sstride, W, "");
    nq = LLVMBuildMul(M->b, nq, W, "");
  }
  cg_loop rl, ql;
  LLVMValueRef r = cg_loop_begin(f, &rl, cg_i64(M, 0), nr);
  LLVMValueRef q = cg_loop_begin(f, &ql, cg_i64(M, 0), nq);
  cg_val v;
  sk_load(
      f, src, elem,
      LLVMBuildAdd(M->b, sbase, LLVMBuildAdd(M->b, LLVMBuildMul(M->b, r, sstride, ""), q, ""), ""),
      &v);
  sk_store(
      f, dst,
      LLVMBuildAdd(M->b, dbase, LLVMBuildAdd(M->b, LLVMBuildMul(M->b, r, dstride, ""), q, ""), ""),
      &v);
  cg_loop_end(f, &ql);
  cg_loop_end(f, &rl);
}

/* A window's tile before its points: the scratch (k->out), then its halo
 * from v (when the tile has one before it in its row) and h (when it has
 * one above). Returns the temporary memory's mark. */
static LLVMValueRef rc_window_in(cg_fn *f, rc_kernel *k, const rc_window *win, const cg_val *vv,
                                 const cg_val *hv, LLVMValueRef ti, LLVMValueRef tj,
                                 LLVMValueRef *T, LLVMValueRef *b, LLVMValueRef rows,
                                 LLVMValueRef cols, LLVMValueRef vsize) {
  cg_module *M = f->M;
  const lw_rec *c = k->c;
  ir_type elem = ir_node_get(c->L->m, c->body)->type;
  LLVMValueRef zero = cg_i64(M, 0), dc = cg_i64(M, win->dc);
  k->window = true;
  k->wdr = win->dr;
  k->wdc = win->dc;
  k->wsw = LLVMBuildAdd(M->b, T[1], dc, "");
  k->wb[0] = b[0];
  k->wb[1] = b[1];
  /* rank > 2: cells of the inner dimensions' elements */
  k->winner = NULL;
  for (uint32_t d = 2; d < c->n; d++)
    k->winner = k->winner ? LLVMBuildMul(M->b, k->winner, k->ext[d], "") : k->ext[d];
  LLVMValueRef mark = cg_tmp_mark(f);
  LLVMValueRef n = LLVMBuildMul(M->b, LLVMBuildAdd(M->b, T[0], cg_i64(M, win->dr), ""), k->wsw, "");
  if (k->winner)
    n = LLVMBuildMul(M->b, n, k->winner, "");
  for (uint32_t l = 0; l < k->out.n; l++)
    cg_new_array(f, k->out.l[l].sc, 1, &n, c->e, &k->out.l[l]);
  if (win->dc) { /* the tile before's last columns, with the corner */
    LLVMBasicBlockRef join = sk_if(f, LLVMBuildICmp(M->b, LLVMIntSGT, tj, zero, ""));
    rc_copy(f, elem, k->winner, &k->out, zero, k->wsw, vv, LLVMBuildMul(M->b, ti, vsize, ""), dc,
            LLVMBuildAdd(M->b, rows, cg_i64(M, win->dr), ""), dc);
    sk_endif(f, join);
  }
  if (win->dr) { /* the tile above's last rows */
    LLVMBasicBlockRef join = sk_if(f, LLVMBuildICmp(M->b, LLVMIntSGT, ti, zero, ""));
    rc_copy(f, elem, k->winner, &k->out, dc, k->wsw, hv, b[1], k->ext[1], cg_i64(M, win->dr), cols);
    sk_endif(f, join);
  }
  return mark;
}

/* A window's tile after its points: its last rows to h, its last columns
 * to v, the point wanted if it is here; then the scratch is released. */
static void rc_window_out(cg_fn *f, rc_kernel *k, const rc_window *win, uint32_t kern,
                          const cg_val *vv, const cg_val *hv, LLVMValueRef ti, LLVMValueRef *at,
                          LLVMValueRef *b, LLVMValueRef *e, LLVMValueRef rows, LLVMValueRef cols,
                          LLVMValueRef vsize, LLVMValueRef mark) {
  cg_module *M = f->M;
  const lw_rec *c = k->c;
  lw *L = c->L;
  ir_type elem = ir_node_get(L->m, c->body)->type;
  LLVMValueRef dc = cg_i64(M, win->dc);
  if (win->dr)
    rc_copy(f, elem, k->winner, hv, b[1], k->ext[1], &k->out,
            LLVMBuildAdd(M->b, LLVMBuildMul(M->b, rows, k->wsw, ""), dc, ""), k->wsw,
            cg_i64(M, win->dr), cols);
  if (win->dc)
    rc_copy(f, elem, k->winner, vv, LLVMBuildMul(M->b, ti, vsize, ""), dc, &k->out, cols, k->wsw,
            LLVMBuildAdd(M->b, rows, cg_i64(M, win->dr), ""), dc);
  for (uint32_t p = 0; p < win->npoints; p++) {
    /* in the tile, and in range in the inner dimensions (a point out of
     * range is never stored: its read fails) */
    const LLVMValueRef *pt = at + (size_t)p * c->n;
    LLVMValueRef in = LLVMConstInt(M->t_i1, 1, 0);
    for (uint32_t d = 0; d < c->n; d++)
      in = LLVMBuildAnd(M->b, in,
                        d < 2 ? LLVMBuildAnd(M->b, LLVMBuildICmp(M->b, LLVMIntSGE, pt[d], b[d], ""),
                                             LLVMBuildICmp(M->b, LLVMIntSLT, pt[d], e[d], ""), "")
                              : LLVMBuildICmp(M->b, LLVMIntULT, pt[d], k->ext[d], ""),
                        "");
    LLVMBasicBlockRef join = sk_if(f, in);
    cg_val v;
    sk_load(f, &k->out, elem, rc_local_n(f, k, pt[0], pt[1], pt), &v);
    lw_store(L, f, kern, &win->out[p], &v);
    sk_endif(f, join);
  }
  cg_tmp_release(f, mark);
}

/* ---- anti-diagonals ----
 * An interior tile of a rank-2 recurrence whose body is plain scalar code
 * (rc_diag_ok) is walked by the anti-diagonals r + c = s of its local
 * walking coordinates (r, c) = (y0 - b0, y1 - b1): every read lies at
 * walking offsets o <= 0, o != 0, so on an earlier anti-diagonal, and the
 * points of one anti-diagonal are independent. Its last K = 1 + max -(o0
 * + o1) anti-diagonals live in a ring of K slots of ddr + rows elements,
 * slot element ddr + r holding the point of row r (rows -ddr .. -1 are
 * the halo above): a read at offsets o of the point of row r is element r
 * + o0 of the slot -(o0 + o1) back, so the points of one anti-diagonal
 * read and write consecutive elements and LLVM vectorises their loop
 * (SIMD Smith-Waterman's anti-diagonal layout). Before its points, an
 * anti-diagonal's halo cells (above the tile or left of it, within the
 * reaches) are copied into its slot from the table or the window's
 * scratch, where the tiles around left them; after them, its points go
 * to the table, or with a window only those the window keeps (the last
 * rows and columns, the point wanted). Each row's points arrive in column
 * order, so the rows' folds stay in order, kept per row in `acc`. */

/* (reads reaching at most RC_DIAG_REACH back in each dimension: the ring
 * has at most 2 RC_DIAG_REACH + 1 slots, each slot's pointer computed per
 * anti-diagonal) */
#define RC_DIAG_REACH 64

static bool rc_diag_ok(const lw_rec *c, const rc_window *win) {
  return c->n == 2 && c->rd.uniform && !c->tmp && !(win && win->fold && win->tmp) &&
         lw_rec_reach(c, 0) <= RC_DIAG_REACH && lw_rec_reach(c, 1) <= RC_DIAG_REACH &&
         cg_rec_body_plain(c->L->m, &c->rd, c->body, true);
}

/* Copies the points of anti-diagonal s in rows [rlo, rhi) between its
 * ring slot (element base + ddr + r) and k->out: into the slot with
 * `in`, else out of it. At most `most` rows (a constant, < 0: unknown):
 * the halo's and the window's few cells are copied by straight-line code
 * (a loop of a point or two per anti-diagonal costs more than its copy). */
static void rc_diag_copy(cg_fn *f, rc_kernel *k, LLVMValueRef *b, LLVMValueRef s, LLVMValueRef base,
                         LLVMValueRef rlo, LLVMValueRef rhi, int64_t most, bool in) {
  cg_module *M = f->M;
  ir_type elem = ir_node_get(k->c->L->m, k->c->body)->type;
  bool unroll = most >= 0 && most <= 4;
  cg_loop l;
  for (int64_t i = 0; i < (unroll ? most : 1); i++) {
    LLVMValueRef r;
    LLVMBasicBlockRef join = NULL;
    if (unroll) {
      r = LLVMBuildAdd(M->b, rlo, cg_i64(M, i), "");
      join = sk_if(f, LLVMBuildICmp(M->b, LLVMIntSLT, r, rhi, ""));
    } else {
      r = cg_loop_begin(f, &l, rlo, rhi);
    }
    LLVMValueRef y0 = LLVMBuildAdd(M->b, b[0], r, "");
    LLVMValueRef y1 = LLVMBuildAdd(M->b, b[1], LLVMBuildSub(M->b, s, r, ""), "");
    LLVMValueRef cell = rc_cell(f, k, y0, y1);
    LLVMValueRef slot = LLVMBuildAdd(M->b, base, LLVMBuildAdd(M->b, r, cg_i64(M, k->ddr), ""), "");
    cg_val v;
    sk_load(f, in ? &k->out : &k->ring, elem, in ? cell : slot, &v);
    rc_ring_store(f, k, in ? &k->ring : &k->out, in ? slot : cell, &v);
    if (unroll)
      sk_endif(f, join);
    else
      cg_loop_end(f, &l);
  }
}

/* The points of anti-diagonal s of an interior tile at b in rows [rlo,
 * rhi) into its ring slot; the rows' folds so far in acc (k->fold). */
static void rc_diag_points(cg_fn *f, rc_kernel *k, const cg_val *self, LLVMValueRef *b,
                           LLVMValueRef s, LLVMValueRef rlo, LLVMValueRef rhi, const cg_val *acc) {
  cg_module *M = f->M;
  const lw_rec *c = k->c;
  cg_loop pl;
  LLVMValueRef r = cg_loop_begin(f, &pl, rlo, rhi);
  LLVMValueRef y[2] = {LLVMBuildAdd(M->b, b[0], r, ""),
                       LLVMBuildAdd(M->b, b[1], LLVMBuildSub(M->b, s, r, ""), "")};
  LLVMValueRef x[2], t = cg_i64(M, 0);
  for (uint32_t d = 0; d < 2; d++) {
    /* interior: the reads stay inside in both dimensions */
    cg_assume(f, LLVMBuildICmp(M->b, LLVMIntSGE, y[d], cg_i64(M, lw_rec_reach(c, d)), ""));
    x[d] = lw_rec_walking(f, k, d, y[d]);
    t = LLVMBuildAdd(M->b, t, LLVMBuildMul(M->b, cg_i64(M, c->a[d]), x[d], ""), "");
  }
  k->drow = r;
  LLVMValueRef pmark;
  lw_rec_point_begin(f, k, self, x, t, &pmark);
  cg_val v;
  cg_expr(f, c->body, &v);
  rc_ring_store(f, k, &k->ring,
                LLVMBuildAdd(M->b, k->dslot[0], LLVMBuildAdd(M->b, r, cg_i64(M, k->ddr), ""), ""),
                &v);
  lw_rec_point_end(f, k, pmark);
  if (k->fold) {
    cg_val a, part, next;
    sk_load(f, acc, k->fold_z->type, r, &a);
    lw_rec_fold_part(f, k->fold, &v, &part);
    sk_apply2(f, k->fold->fn, &a, &part, false, k->fold->tmp, &next);
    sk_store(f, acc, r, &next);
  }
  cg_loop_end(f, &pl);
}

/* The interior tile from b to e (walking coordinates) by anti-diagonals;
 * with a window, `at` is the point wanted (walking, or NULLs). */
static void rc_tile_diag(cg_fn *f, rc_kernel *k, const cg_val *self, LLVMValueRef *b,
                         LLVMValueRef *e, const rc_window *win, LLVMValueRef *at) {
  cg_module *M = f->M;
  const lw_rec *c = k->c;
  int sigma[2] = {lw_rec_sigma(c, 0), lw_rec_sigma(c, 1)};
  int64_t dr = lw_rec_reach(c, 0), dc = lw_rec_reach(c, 1),
          depth = cg_rec_diag_depth(&c->rd, sigma);
  LLVMValueRef zero = cg_i64(M, 0), one = cg_i64(M, 1), kk = cg_i64(M, depth + 1);
  LLVMValueRef rows = LLVMBuildSub(M->b, e[0], b[0], ""), cols = LLVMBuildSub(M->b, e[1], b[1], "");
  LLVMValueRef len = LLVMBuildAdd(M->b, rows, cg_i64(M, dr), "");
  LLVMValueRef mark = cg_tmp_mark(f);
  /* the ring, and the rows' folds so far */
  LLVMValueRef size = LLVMBuildMul(M->b, len, kk, "");
  k->ring = k->out;
  k->ring.l = cg_new(M, k->out.n * sizeof *k->ring.l);
  /* a window's fold takes its part of each point as it is computed: the
   * ring needs only the leaves the reads use (a fused cell's (T, U) keeps
   * U out, docs/passes.md §5.1) */
  k->dead = win && win->fold
                ? ~cg_rec_live_leaves(c->L->m, &c->rd, c->body, ir_node_get(c->L->m, c->body)->type)
                : 0;
  for (uint32_t l = 0; l < k->out.n; l++) {
    k->ring.l[l] = k->out.l[l];
    if (!cg_leaf_in(k->dead, l))
      cg_new_array(f, k->out.l[l].sc, 1, &size, c->e, &k->ring.l[l]);
  }
  cg_val acc = {0};
  if (k->fold) {
    cg_val_alloc(M, k->fold_z->type, &acc);
    for (uint32_t l = 0; l < acc.n; l++)
      cg_new_array(f, acc.l[l].sc, 1, &rows, c->e, &acc.l[l]);
    cg_loop il;
    LLVMValueRef r = cg_loop_begin(f, &il, zero, rows);
    cg_val prev, start;
    LLVMValueRef x0 = lw_rec_walking(f, k, 0, LLVMBuildAdd(M->b, b[0], r, ""));
    sk_load(f, k->fold_rows, k->fold_z->type, x0, &prev);
    cg_val_select(f, k->fold_first, k->fold_z, &prev, &start);
    sk_store(f, &acc, r, &start);
    cg_loop_end(f, &il);
  }
  k->diag = true;
  k->ddr = dr;
  k->dslot = cg_new(M, (size_t)(depth + 1) * sizeof *k->dslot);
  /* the anti-diagonals s from -depth (the halo's first) */
  cg_loop sl;
  LLVMValueRef last = LLVMBuildSub(M->b, LLVMBuildAdd(M->b, rows, cols, ""), one, "");
  LLVMValueRef s = cg_loop_begin(f, &sl, cg_i64(M, -depth), last);
  LLVMValueRef sq = LLVMBuildAdd(M->b, s, cg_i64(M, depth), ""); /* >= 0 */
  for (int64_t q = 0; q <= depth; q++) {
    LLVMValueRef at_q = LLVMBuildAdd(M->b, sq, cg_i64(M, depth + 1 - q), "");
    k->dslot[q] = LLVMBuildMul(M->b, LLVMBuildURem(M->b, at_q, kk, ""), len, "");
  }
  /* the halo: above the tile (r < 0, c = s - r within [-dc, cols)), and
   * left of it (0 <= r < rows, -dc <= c < 0) */
  LLVMValueRef cnext = LLVMBuildAdd(M->b, s, cg_i64(M, dc + 1), ""); /* r <= s + dc */
  rc_diag_copy(
      f, k, b, s, k->dslot[0],
      cg_smax(M, cg_i64(M, -dr), LLVMBuildAdd(M->b, LLVMBuildSub(M->b, s, cols, ""), one, "")),
      cg_smin(M, zero, cnext), dr, true);
  rc_diag_copy(f, k, b, s, k->dslot[0], cg_smax(M, zero, LLVMBuildAdd(M->b, s, one, "")),
               cg_smin(M, rows, cnext), dc, true);
  /* the points: rows max(0, s - cols + 1) .. min(rows, s + 1) */
  LLVMValueRef rlo = cg_smax(M, zero, LLVMBuildAdd(M->b, LLVMBuildSub(M->b, s, cols, ""), one, ""));
  LLVMValueRef rhi = cg_smin(M, rows, LLVMBuildAdd(M->b, s, one, ""));
  /* with the index checks of the reads not proven deferred (cg_fn.defer):
   * when one fails, the anti-diagonal's points again, with the checks */
  cg_defer defer;
  cg_defer_begin(f, &defer);
  rc_diag_points(f, k, self, b, s, rlo, rhi, &acc);
  LLVMBasicBlockRef again = sk_if(f, cg_defer_end(f, &defer));
  rc_diag_points(f, k, self, b, s, rlo, rhi, &acc);
  sk_endif(f, again);
  /* the points out of the ring: all of them to the table; to a window's
   * scratch its last rows, its last columns and the point wanted */
  if (!win) {
    rc_diag_copy(f, k, b, s, k->dslot[0], rlo, rhi, -1, false);
  } else {
    rc_diag_copy(f, k, b, s, k->dslot[0],
                 cg_smax(M, rlo, LLVMBuildSub(M->b, rows, cg_i64(M, win->dr), "")), rhi, win->dr,
                 false);
    LLVMValueRef chi =
        LLVMBuildAdd(M->b, LLVMBuildSub(M->b, s, cols, ""), cg_i64(M, win->dc + 1), "");
    rc_diag_copy(f, k, b, s, k->dslot[0], rlo, cg_smin(M, rhi, chi), win->dc, false);
    for (uint32_t p = 0; p < win->npoints; p++) {
      LLVMValueRef pr = LLVMBuildSub(M->b, at[2 * p], b[0], "");
      LLVMValueRef ps = LLVMBuildAdd(M->b, pr, LLVMBuildSub(M->b, at[2 * p + 1], b[1], ""), "");
      LLVMValueRef here = LLVMBuildICmp(M->b, LLVMIntEQ, ps, s, "");
      LLVMValueRef phi = LLVMBuildSelect(M->b, here, LLVMBuildAdd(M->b, pr, one, ""), pr, "");
      rc_diag_copy(f, k, b, s, k->dslot[0], cg_smax(M, rlo, pr), cg_smin(M, rhi, phi), 1, false);
    }
  }
  cg_loop_end(f, &sl);
  k->diag = false;
  k->dead = 0;
  if (k->fold) {
    cg_loop il;
    LLVMValueRef r2 = cg_loop_begin(f, &il, zero, rows);
    cg_val done;
    sk_load(f, &acc, k->fold_z->type, r2, &done);
    sk_store(f, k->fold_rows, lw_rec_walking(f, k, 0, LLVMBuildAdd(M->b, b[0], r2, "")), &done);
    cg_loop_end(f, &il);
  }
  cg_tmp_release(f, mark);
}

/* The reads of arrays from outside (c->rd.inputs) that stay in range on the
 * whole tile from b to e (walking coordinates), for interior tiles to read
 * them without checks: *interior is and-ed with the condition that they
 * do, and *out gets them, ascending (their number is returned). */
static uint32_t rc_inputs_proven(cg_fn *f, const rc_kernel *k, LLVMValueRef *b, LLVMValueRef *e,
                                 LLVMValueRef *interior, ir_ref **out) {
  cg_module *M = f->M;
  const lw_rec *c = k->c;
  LLVMValueRef one = cg_i64(M, 1);
  /* the 0-based coordinates the tile covers, per dimension */
  LLVMValueRef *xmin = cg_new(M, c->n * sizeof *xmin), *xmax = cg_new(M, c->n * sizeof *xmax);
  for (uint32_t d = 0; d < c->n; d++) {
    if (d >= 2) {
      xmin[d] = cg_i64(M, 0);
      xmax[d] = LLVMBuildSub(M->b, k->ext[d], one, "");
    } else if (lw_rec_sigma(c, d) > 0) {
      xmin[d] = b[d];
      xmax[d] = LLVMBuildSub(M->b, e[d], one, "");
    } else {
      xmin[d] = LLVMBuildSub(M->b, k->ext[d], e[d], "");
      xmax[d] = LLVMBuildSub(M->b, LLVMBuildSub(M->b, k->ext[d], one, ""), b[d], "");
    }
  }
  uint32_t n;
  *out = cg_rec_inputs_proven(f, &c->rd, k->lo, xmin, xmax, interior, &n);
  return n;
}

/* "rec.tile" (or "rec.window" with a window): tile i of the tile
 * wavefront w is (ilo + i, w - ilo - i). */
static uint32_t rc_tile_kernel(const rc_ctx *c, const rc_window *win) {
  lw *L = c->L;
  cg_module *M = L->M;
  uint32_t kern;
  rc_kernel k;
  cg_val self;
  cg_fn *f = rc_kernel_begin(c, win ? "rec.window" : "rec.tile", 1, &kern, &k, &self);
  LLVMValueRef w = sk_ld(L, f, kern, &c->t), ilo = sk_ld(L, f, kern, &c->kulo);
  LLVMValueRef b[2], e[2], T[2], interior = LLVMConstInt(M->t_i1, 1, 0);
  for (uint32_t d = 0; d < 2; d++)
    T[d] = sk_ld(L, f, kern, &c->tile[d]);
  ir_type elem = ir_node_get(L->m, c->body)->type;
  cg_val hv, vv, zv, rv;
  LLVMValueRef *at = NULL, vsize = NULL;
  if (win) {
    lw_load(L, f, kern, &win->h, &hv);
    lw_load(L, f, kern, &win->v, &vv);
    at = cg_new(M, ((size_t)win->npoints * c->n + 1) * sizeof *at);
    for (uint32_t p = 0; p < win->npoints * c->n; p++)
      at[p] = sk_ld(L, f, kern, &win->at[p]);
    if (win->fold) {
      lw_load(L, f, kern, &win->z, &zv);
      lw_load(L, f, kern, &win->rows, &rv);
    }
    vsize = LLVMBuildMul(M->b, LLVMBuildAdd(M->b, T[0], cg_i64(M, win->dr), ""), cg_i64(M, win->dc),
                         "");
  }
  cg_loop il;
  LLVMValueRef i = cg_loop_begin(f, &il, f->lo, f->hi);
  LLVMValueRef ti = LLVMBuildAdd(M->b, ilo, i, "");
  LLVMValueRef tj = LLVMBuildSub(M->b, w, ti, "");
  for (uint32_t d = 0; d < 2; d++) {
    /* tile I covers [I * T - shift, (I + 1) * T - shift) within the extent */
    LLVMValueRef shift = cg_i64(M, 0);
    if (lw_rec_reach(c, d) > 0)
      shift = cg_smax(M, shift, LLVMBuildSub(M->b, T[d], cg_i64(M, lw_rec_reach(c, d)), ""));
    b[d] = LLVMBuildSub(M->b, LLVMBuildMul(M->b, d == 0 ? ti : tj, T[d], ""), shift, "");
    e[d] = cg_smin(M, LLVMBuildAdd(M->b, b[d], T[d], ""), k.ext[d]);
    b[d] = cg_smax(M, b[d], cg_i64(M, 0));
    interior =
        LLVMBuildAnd(M->b, interior,
                     LLVMBuildICmp(M->b, LLVMIntSGE, b[d], cg_i64(M, lw_rec_reach(c, d)), ""), "");
  }
  LLVMValueRef rows = LLVMBuildSub(M->b, e[0], b[0], ""), cols = LLVMBuildSub(M->b, e[1], b[1], "");
  LLVMValueRef mark = NULL;
  if (win)
    mark = rc_window_in(f, &k, win, &vv, &hv, ti, tj, T, b, rows, cols, vsize);
  /* the inner dimensions are proven where no read moves along them */
  uint64_t inner = 0;
  for (uint32_t d = 2; d < c->n; d++)
    if (c->rd.offmin[d] == 0 && c->rd.offmax[d] == 0)
      inner |= (uint64_t)1 << d;
  /* the innermost neighbour before in the walking order: the last point */
  if (lw_rec_sigma(c, c->n - 1) > 0 ? c->rd.nprev : c->rd.nnext) {
    k.carry = cg_new(M, sizeof *k.carry);
    cg_var_new(f, elem, k.carry);
    k.carried = lw_rec_sigma(c, c->n - 1) > 0 ? c->rd.prev : c->rd.next;
    k.ncarried = lw_rec_sigma(c, c->n - 1) > 0 ? c->rd.nprev : c->rd.nnext;
  }
  if (win && win->fold) {
    k.fold = win;
    k.fold_z = &zv;
    k.fold_rows = &rv;
    k.fold_first = LLVMBuildICmp(M->b, LLVMIntEQ, tj, cg_i64(M, 0), "");
  }
  if (k.carry) { /* what waits for the carried point, last */
    f->late = k.carried;
    f->nlate = k.ncarried;
  }
  /* the reads of arrays from outside, proven in range on the tile */
  ir_ref *unchecked;
  uint32_t nunchecked = rc_inputs_proven(f, &k, b, e, &interior, &unchecked);
  LLVMBasicBlockRef join = sk_if(f, interior);
  k.proven = inner | 3;
  f->unchecked = unchecked;
  f->nunchecked = nunchecked;
  if (rc_diag_ok(c, win)) { /* no carried point: the reads load the ring */
    cg_fn_wide_vectors(f);
    cg_var *carry = k.carry;
    k.carry = NULL;
    f->late = NULL;
    f->nlate = 0;
    rc_tile_diag(f, &k, &self, b, e, win, at);
    k.carry = carry;
    if (carry) {
      f->late = k.carried;
      f->nlate = k.ncarried;
    }
  } else {
    rc_tile_points(f, &k, &self, b, e);
  }
  f->unchecked = NULL;
  f->nunchecked = 0;
  sk_endif(f, join);
  join = sk_if(f, LLVMBuildNot(M->b, interior, ""));
  k.proven = inner;
  rc_tile_points(f, &k, &self, b, e);
  sk_endif(f, join);
  f->late = NULL;
  f->nlate = 0;
  if (win)
    rc_window_out(f, &k, win, kern, &vv, &hv, ti, at, b, e, rows, cols, vsize, mark);
  cg_loop_end(f, &il);
  lw_kernel_end(L, f);
  return kern;
}

/* ---- the plan ---- */

/* floor(x / q) for a constant q > 0 in plan arithmetic (which truncates). */
static uint32_t rc_floor_div(lw *L, uint32_t x, int64_t q) {
  if (q == 1)
    return x;
  uint32_t kq = lw_x_const(L, q);
  uint32_t mod = lw_x_bin(L, PX_REM, lw_x_bin(L, PX_ADD, lw_x_bin(L, PX_REM, x, kq), kq), kq);
  return lw_x_bin(L, PX_DIV, lw_x_bin(L, PX_SUB, x, mod), kq);
}

static uint32_t rc_ceil_div(lw *L, uint32_t x, int64_t q) {
  if (q == 1)
    return x;
  uint32_t zero = lw_x_const(L, 0);
  return lw_x_bin(L, PX_SUB, zero, rc_floor_div(L, lw_x_bin(L, PX_SUB, zero, x), q));
}

/* a_d * (ext_d - 1) when its sign is `sign` (> 0 or < 0), else 0: the
 * extreme contributions of dimension d to a . x. */
static uint32_t rc_term(const rc_ctx *c, uint32_t d, int sign) {
  lw *L = c->L;
  if (c->a[d] == 0 || (c->a[d] > 0) != (sign > 0))
    return lw_x_const(L, 0);
  return lw_x_bin(L, PX_MUL, lw_x_const(L, c->a[d]),
                  lw_x_bin(L, PX_SUB, sk_xw(L, &c->ext[d]), lw_x_const(L, 1)));
}

void lw_rec_fronts_setup(lw_rec *c) {
  lw *L = c->L;
  /* s: the solved dimension, |a_s| = 1 preferred, innermost first; u: the
   * first other dimension that moves with t (or just the first other) */
  c->s = c->n;
  for (uint32_t d = c->n; d-- > 0 && c->s == c->n;)
    if (c->a[d] == 1 || c->a[d] == -1)
      c->s = d;
  for (uint32_t d = c->n; d-- > 0 && c->s == c->n;)
    if (c->a[d])
      c->s = d;
  c->u = c->n;
  for (uint32_t d = 0; d < c->n && c->u == c->n; d++)
    if (d != c->s && c->a[d])
      c->u = d;
  for (uint32_t d = 0; d < c->n && c->u == c->n; d++)
    if (d != c->s)
      c->u = d;
  lw_fresh(L, ir_ty_scalar(L->ctx, AC_I64), &c->t);
  lw_fresh(L, ir_ty_scalar(L->ctx, AC_I64), &c->kulo);
  lw_fresh(L, ir_ty_scalar(L->ctx, AC_I64), &c->cnt);
}

/* The number of points of the domain (a plan expression). */
static uint32_t rc_size(const rc_ctx *c) {
  lw *L = c->L;
  uint32_t size = lw_x_const(L, 1);
  for (uint32_t d = 0; d < c->n; d++)
    size = lw_x_bin(L, PX_MUL, size, sk_xw(L, &c->ext[d]));
  return size;
}

/* Opens `if the domain has points` in the plan (pl_end closes it). */
static void rc_if_nonempty(const rc_ctx *c) {
  lw *L = c->L;
  lw_val nonempty;
  sk_word(L, lw_x_bin(L, PX_NE, rc_size(c), lw_x_const(L, 0)), &nonempty);
  pl_if(L->p, nonempty.words[0]);
}

void lw_rec_fronts(lw_rec *c, uint32_t kf) {
  lw *L = c->L;
  rc_if_nonempty(c);
  uint32_t tmin = lw_x_const(L, 0), tmax = lw_x_const(L, 0), rlo = lw_x_const(L, 0);
  uint32_t rhi = lw_x_const(L, 0), other = lw_x_const(L, 1);
  for (uint32_t d = 0; d < c->n; d++) {
    tmin = lw_x_bin(L, PX_ADD, tmin, rc_term(c, d, -1));
    tmax = lw_x_bin(L, PX_ADD, tmax, rc_term(c, d, 1));
    if (d == c->u)
      continue;
    rlo = lw_x_bin(L, PX_ADD, rlo, rc_term(c, d, -1));
    rhi = lw_x_bin(L, PX_ADD, rhi, rc_term(c, d, 1));
    if (d != c->s)
      other = lw_x_bin(L, PX_MUL, other, sk_xw(L, &c->ext[d]));
  }
  /* evaluated once per wavefront: kept in words */
  rlo = lw_x_hoist(L, rlo);
  rhi = lw_x_hoist(L, rhi);
  other = lw_x_hoist(L, other);
  pl_for(L->p, c->t.words[0], tmin, lw_x_bin(L, PX_ADD, tmax, lw_x_const(L, 1)));
  /* a_u * x_u = t - (the rest), the rest within [rlo, rhi] */
  int64_t au = c->a[c->u];
  uint32_t ext_u = sk_xw(L, &c->ext[c->u]), from, to;
  if (au == 0) {
    from = lw_x_const(L, 0);
    to = lw_x_bin(L, PX_SUB, ext_u, lw_x_const(L, 1));
  } else {
    uint32_t t = sk_xw(L, &c->t);
    uint32_t x1 = lw_x_bin(L, PX_SUB, t, rhi), x2 = lw_x_bin(L, PX_SUB, t, rlo);
    if (au > 0) {
      from = rc_ceil_div(L, x1, au);
      to = rc_floor_div(L, x2, au);
    } else {
      from = rc_ceil_div(L, lw_x_bin(L, PX_SUB, lw_x_const(L, 0), x2), -au);
      to = rc_floor_div(L, lw_x_bin(L, PX_SUB, lw_x_const(L, 0), x1), -au);
    }
    from = lw_x_bin(L, PX_MAX, from, lw_x_const(L, 0));
    to = lw_x_bin(L, PX_MIN, to, lw_x_bin(L, PX_SUB, ext_u, lw_x_const(L, 1)));
  }
  pl_set(L->p, c->kulo.words[0], from);
  uint32_t cnt = lw_x_bin(L, PX_ADD, lw_x_bin(L, PX_SUB, to, sk_xw(L, &c->kulo)), lw_x_const(L, 1));
  pl_set(L->p, c->cnt.words[0], lw_x_bin(L, PX_MAX, lw_x_const(L, 0), cnt));
  lw_launch(L, kf, lw_x_bin(L, PX_MUL, sk_xw(L, &c->cnt), other), PL_AUTO);
  pl_end(L->p);
  pl_end(L->p);
}

/* The number of tiles along dimension d (0 or 1), ceil((ext_d + shift) /
 * T), tile I covering [I * T - shift, (I + 1) * T - shift) within the
 * extent: with a reach r along d, shift = max(0, T - r), so that the first
 * tile, whose reads need checks, holds only r rows (columns) and every
 * other tile starts at r or later (interior; rc_tile_kernel). */
static uint32_t rc_tiles_of(const rc_ctx *c, uint32_t d) {
  lw *L = c->L;
  uint32_t t = sk_xw(L, &c->tile[d]), shift = lw_x_const(L, 0);
  if (lw_rec_reach(c, d) > 0)
    shift = lw_x_bin(L, PX_MAX, shift, lw_x_bin(L, PX_SUB, t, lw_x_const(L, lw_rec_reach(c, d))));
  uint32_t span = lw_x_bin(L, PX_ADD, sk_xw(L, &c->ext[d]), shift);
  return lw_x_bin(L, PX_DIV, lw_x_bin(L, PX_SUB, lw_x_bin(L, PX_ADD, span, t), lw_x_const(L, 1)),
                  t);
}

/* The tiles' edges in the plan (c->tile): a sixteenth of the extent (a
 * small table still has tile wavefronts of several tiles for the pool)
 * within the bounds given with RC_TILE_ROWS. */
static void rc_tile_sizes(rc_ctx *c) {
  lw *L = c->L;
  for (uint32_t d = 0; d < 2; d++) {
    int64_t lo = c->n == 2 ? RC_TILE_MIN : 4;
    int64_t hi = c->n == 2 ? (d == 0 ? RC_TILE_ROWS : RC_TILE_COLS) : 16;
    uint32_t part = lw_x_bin(
        L, PX_DIV, lw_x_bin(L, PX_ADD, sk_xw(L, &c->ext[d]), lw_x_const(L, 15)), lw_x_const(L, 16));
    sk_word(L, lw_x_bin(L, PX_MAX, lw_x_const(L, lo), lw_x_bin(L, PX_MIN, lw_x_const(L, hi), part)),
            &c->tile[d]);
  }
}

/* The tile wavefronts: w from 0 to nt0 + nt1 - 2, the tiles (I, w - I)
 * with I from max(0, w - nt1 + 1) to min(nt0 - 1, w), computed by kernel
 * `kern` (c->t holds w, c->kulo the first I). */
static void rc_tile_loop(rc_ctx *c, uint32_t kern) {
  lw *L = c->L;
  uint32_t nt[2];
  rc_if_nonempty(c);
  uint32_t one = lw_x_const(L, 1);
  for (uint32_t d = 0; d < 2; d++)
    nt[d] = lw_x_hoist(L, rc_tiles_of(c, d));
  pl_for(L->p, c->t.words[0], lw_x_const(L, 0),
         lw_x_bin(L, PX_SUB, lw_x_bin(L, PX_ADD, nt[0], nt[1]), one));
  uint32_t w = sk_xw(L, &c->t);
  uint32_t from = lw_x_bin(L, PX_MAX, lw_x_const(L, 0),
                           lw_x_bin(L, PX_ADD, lw_x_bin(L, PX_SUB, w, nt[1]), one));
  uint32_t to = lw_x_bin(L, PX_MIN, lw_x_bin(L, PX_SUB, nt[0], one), w);
  pl_set(L->p, c->kulo.words[0], from);
  lw_launch(L, kern, lw_x_bin(L, PX_ADD, lw_x_bin(L, PX_SUB, to, sk_xw(L, &c->kulo)), one),
            PL_AUTO);
  pl_end(L->p);
  pl_end(L->p);
}

static void rc_tiles(rc_ctx *c) {
  lw *L = c->L;
  rc_tile_sizes(c);
  lw_fresh(L, ir_ty_scalar(L->ctx, AC_I64), &c->t);
  lw_fresh(L, ir_ty_scalar(L->ctx, AC_I64), &c->kulo);
  rc_tile_loop(c, rc_tile_kernel(c, NULL));
}

/* The wavefront loop (rank >= 2, a not all zero). */
static void rc_wavefronts_of(lw_rec *c, void *ud) {
  (void)ud;
  lw_rec_fronts_setup(c);
  lw_rec_fronts(c, rc_front_kernel(c));
}

static void rc_wavefronts(rc_ctx *c) {
  lw_rec_by_schedule(c, rc_wavefronts_of, NULL);
}

uint32_t lw_rec_xwaves(const lw_rec *c, const int64_t *b) {
  lw *L = c->L;
  uint32_t w = lw_x_const(L, 1);
  for (uint32_t d = 0; d < c->n; d++)
    if (b[d] != 0)
      w = lw_x_bin(
          L, PX_ADD, w,
          lw_x_bin(L, PX_MUL, lw_x_const(L, b[d] < 0 ? -b[d] : b[d]),
                   lw_x_bin(L, PX_MAX, lw_x_bin(L, PX_SUB, sk_xw(L, &c->ext[d]), lw_x_const(L, 1)),
                            lw_x_const(L, 0))));
  return w;
}

uint32_t lw_rec_candidates(const lw_rec *c, const int64_t **out) {
  lw *L = c->L;
  if (ir_node_get(L->m, c->e)->flags & IR_F_SCHED) { /* asked for with `by` */
    *out = c->a;
    return 1;
  }
  return cg_rec_schedules(L->M, &c->rd, c->n, c->a, out);
}

void lw_rec_by_schedule(lw_rec *c, void (*emit)(lw_rec *c, void *ud), void *ud) {
  lw *L = c->L;
  const int64_t *cand;
  uint32_t k = lw_rec_candidates(c, &cand);
  if (k == 1) {
    emit(c, ud);
    return;
  }
  uint32_t *waves = cg_new(L->M, k * sizeof *waves);
  for (uint32_t i = 0; i < k; i++)
    waves[i] = lw_x_hoist(L, lw_rec_xwaves(c, cand + (size_t)i * c->n));
  /* the first candidate with no more wavefronts than any later one is the
   * first of the fewest */
  for (uint32_t i = 0; i < k; i++) {
    lw_rec *ci = cg_new(L->M, sizeof *ci);
    *ci = *c;
    ci->a = cand + (size_t)i * c->n;
    if (i + 1 < k) {
      uint32_t best = lw_x_const(L, 1);
      for (uint32_t j = i + 1; j < k; j++)
        best = lw_x_bin(L, PX_MIN, best, lw_x_bin(L, PX_LE, waves[i], waves[j]));
      lw_val w;
      sk_word(L, best, &w);
      pl_if(L->p, w.words[0]);
      emit(ci, ud);
      pl_else(L->p);
    } else {
      emit(ci, ud);
    }
  }
  for (uint32_t i = 0; i + 1 < k; i++)
    pl_end(L->p);
}

/* The extent of dimension d from its bounds (i64 plan expressions), with
 * the interpreter's checks made at once, in its order: "array too large"
 * when hi - lo + 1 overflows, "negative extent" below -0. */
static uint32_t rc_extent(const rc_ctx *c, uint32_t d, uint32_t lo, uint32_t hi) {
  lw *L = c->L;
  uint64_t excl = ir_node_get(L->m, c->e)->lit.u;
  uint32_t incl = lw_x_const(L, d >= 64 || ((excl >> d) & 1) == 0), zero = lw_x_const(L, 0);
  uint32_t ge = lw_x_bin(L, PX_LE, lo, hi);
  /* wrapping differences, exact as the interpreter's unsigned ones */
  uint32_t up = lw_x_bin(L, PX_ADD, lw_x_bin(L, PX_SUB, hi, lo), incl);
  uint32_t down = lw_x_bin(L, PX_SUB, lw_x_bin(L, PX_SUB, lo, hi), incl);
  uint32_t big = lw_x_bin(L, PX_MUL, ge, lw_x_bin(L, PX_LT, up, zero));
  uint32_t neg = lw_x_bin(L, PX_MUL, lw_x_bin(L, PX_SUB, lw_x_const(L, 1), ge),
                          lw_x_bin(L, PX_NE, down, zero));
  lw_piece tbig[1] = {LW_TEXT("array too large")};
  lw_piece tneg[2] = {LW_TEXT("negative extent "), LW_VAL(lw_x_bin(L, PX_SUB, zero, down))};
  lw_check(L, lw_x_bin(L, PX_EQ, big, zero), c->e, 1, tbig, 0, NULL);
  lw_check(L, lw_x_bin(L, PX_EQ, neg, zero), c->e, 2, tneg, 0, NULL);
  return lw_x_bin(L, PX_MUL, ge, up);
}

/* Nonzero when a . x fits in int64 on the whole domain (the interpreter's
 * schedule_fits: sum |a_d| * (ext_d - 1) <= INT64_MAX, summed in order). */
static uint32_t rc_fits(const rc_ctx *c) {
  lw *L = c->L;
  uint32_t zero = lw_x_const(L, 0), one = lw_x_const(L, 1);
  uint32_t bound = zero, fits = one;
  for (uint32_t d = 0; d < c->n; d++) {
    if (c->a[d] == 0)
      continue;
    if (c->a[d] == INT64_MIN)
      return zero;
    uint32_t coef = lw_x_const(L, c->a[d] < 0 ? -c->a[d] : c->a[d]);
    uint32_t span = lw_x_bin(L, PX_MAX, lw_x_bin(L, PX_SUB, sk_xw(L, &c->ext[d]), one), zero);
    uint32_t room = lw_x_bin(L, PX_DIV, lw_x_bin(L, PX_SUB, lw_x_const(L, INT64_MAX), bound),
                             lw_x_bin(L, PX_MAX, span, one));
    uint32_t over =
        lw_x_bin(L, PX_MUL, lw_x_bin(L, PX_NE, span, zero), lw_x_bin(L, PX_LT, room, coef));
    fits = lw_x_bin(L, PX_MUL, fits, lw_x_bin(L, PX_SUB, one, over));
    bound = lw_x_bin(L, PX_ADD, bound, lw_x_bin(L, PX_MUL, coef, span));
  }
  return fits;
}

/* *c for rec node e, its reads classified; nothing emitted. */
static bool rc_init(lw *L, ir_ref e, lw_rec *c) {
  ac_module *m = L->m;
  const ir_node *nd = ir_node_get(m, e);
  uint32_t n = (uint32_t)nd->attr;
  if (nd->op != IR_REC || nd->attr < 1 || nd->nkids != 2 * (uint64_t)n + 1 || nd->aux == 0 ||
      nd->aux + (uint64_t)n > m->nints) {
    cg_error(L->M, AC_ERR_INTERNAL, e, "rec without bounds or schedule");
    return false;
  }
  *c = (lw_rec){.L = L, .e = e, .n = n, .a = &m->ints[nd->aux], .body = ir_kid(m, e, 2 * n)};
  ir_sym name = ir_binder_name(m, e, nd->nkids - 1, 0);
  c->name = name ? ir_sym_str(L->ctx, name) : "rec";
  c->tmp = cg_needs_tmp(m, c->body);
  cg_rec_reads_find(L->M, m, c->body, n, c->a, &c->rd);
  return true;
}

/* The bounds and extents (step 1 of the header); *ext gets the extents'
 * plan expressions. */
static bool rc_bounds(lw_rec *c, uint32_t **ext_out) {
  lw *L = c->L;
  cg_module *M = L->M;
  ac_module *m = L->m;
  ir_ref e = c->e;
  uint32_t n = c->n;
  c->lo = cg_new(M, n * sizeof *c->lo);
  c->ext = cg_new(M, n * sizeof *c->ext);
  uint32_t *ext = cg_new(M, n * sizeof *ext);
  for (uint32_t d = 0; d < n; d++) {
    uint32_t lo = lw_int(L, ir_kid(m, e, 2 * d)), hi = lw_int(L, ir_kid(m, e, 2 * d + 1));
    if (M->st != AC_OK)
      return false;
    sk_word(L, lo, &c->lo[d]);
    sk_word(L, rc_extent(c, d, lo, hi), &c->ext[d]);
    ext[d] = sk_xw(L, &c->ext[d]);
  }
  *ext_out = ext;
  return M->st == AC_OK;
}

static void rc_fits_check(const lw_rec *c) {
  lw_piece over[1] = {LW_TEXT("rec: the schedule overflows on a domain this large")};
  lw_check(c->L, rc_fits(c), c->e, 1, over, 0, NULL);
}

bool lw_rec_begin(lw *L, ir_ref e, lw_rec *c, lw_val *out) {
  uint32_t *ext;
  if (!rc_init(L, e, c) || !rc_bounds(c, &ext))
    return false;
  lw_fresh(L, ir_node_get(L->m, e)->type, out);
  lw_alloc_arrays(L, out, ext, e);
  c->out = *out;
  rc_fits_check(c);
  return L->M->st == AC_OK;
}

bool lw_skel_rec(lw *L, ir_ref e, lw_val *out) {
  cg_module *M = L->M;
  rc_ctx c;
  if (!lw_rec_begin(L, e, &c, out))
    return false;
  uint32_t n = c.n;
  bool zero = true;
  for (uint32_t d = 0; d < n; d++)
    zero = zero && c.a[d] == 0;
  if (zero) {
    lw_launch(L, rc_all_kernel(&c), rc_size(&c), PL_AUTO);
  } else if (n == 1) {
    sk_launch1(L, rc_seq_kernel(&c));
  } else if (lw_rec_tileable(&c)) {
    rc_tiles(&c);
  } else {
    rc_wavefronts(&c);
  }
  return M->st == AC_OK;
}

/* ---- windows: one element of a recurrence, or its rows' folds ---- */

/* The reach (in either dimension) up to which a window is kept: beyond
 * it, h (reach rows of the width) and v would grow like the table (and a
 * read 2^62 back would make h's size overflow). */
#define RC_WINDOW_REACH 64

/* Whether r is a recurrence whose window the target can keep (tiled,
 * reads within RC_WINDOW_REACH in the tiles' dimensions; on the GPU, rank
 * 2 with cells that its tiles hold); *c gets it. */
static bool rc_window_ok(lw *L, ir_ref r, lw_rec *c) {
  ac_module *m = L->m;
  const ir_node *rn = ir_node_get(m, r);
  return rn->op == IR_REC && rn->attr >= 2 && rn->attr <= 64 &&
         (uint64_t)rn->nkids == 2 * (uint64_t)rn->attr + 1 && rn->aux != 0 &&
         rn->aux + (uint64_t)rn->attr <= m->nints && rc_init(L, r, c) && lw_rec_tileable(c) &&
         lw_rec_reach(c, 0) <= RC_WINDOW_REACH && lw_rec_reach(c, 1) <= RC_WINDOW_REACH &&
         (!L->gpu || lw_gskel_rec_tile_cols(c) > 0);
}

/* The host side of a window for recurrence c (rc_window_ok): the bounds
 * and their checks, the size check of the table the interpreter would
 * allocate (it is never allocated here), h, and on the CPU the tiles'
 * edges and v; *ext gets the extents. */
static bool rc_window_begin(lw *L, rc_ctx *c, rc_window *win, uint32_t **ext) {
  ir_ref r = c->e;
  if (!rc_bounds(c, ext))
    return false;
  lw_size_check(L, r, c->n, *ext, NULL);
  rc_fits_check(c);
  win->dr = lw_rec_reach(c, 0);
  win->dc = lw_rec_reach(c, 1);
  ir_type elem = ir_node_get(L->m, c->body)->type, row = ir_ty_array(L->ctx, elem, 1);
  /* rank > 2: cells of the inner dimensions' elements; none when the
   * domain is empty (the other extents may then be as large as one extent
   * alone may be) */
  uint32_t W = lw_x_const(L, 1);
  for (uint32_t d = 0; d < c->n; d++)
    W = d >= 2 ? lw_x_bin(L, PX_MUL, W, (*ext)[d])
               : lw_x_bin(L, PX_MIN, W, lw_x_bin(L, PX_LT, lw_x_const(L, 0), (*ext)[d]));
  uint32_t n = lw_x_bin(L, PX_MUL, lw_x_bin(L, PX_MUL, lw_x_const(L, win->dr), (*ext)[1]), W);
  lw_fresh(L, row, &win->h);
  lw_alloc_arrays(L, &win->h, &n, r);
  /* the kernel's `out` becomes each tile's scratch (the GPU's needs only
   * the leaves) */
  c->out = win->h;
  if (!L->gpu) {
    rc_tile_sizes(c);
    n = lw_x_bin(L, PX_MUL, rc_tiles_of(c, 0),
                 lw_x_bin(L, PX_MUL,
                          lw_x_bin(L, PX_ADD, sk_xw(L, &c->tile[0]), lw_x_const(L, win->dr)),
                          lw_x_bin(L, PX_MUL, lw_x_const(L, win->dc), W)));
    lw_fresh(L, row, &win->v);
    lw_alloc_arrays(L, &win->v, &n, r);
    c->out = win->v;
  }
  lw_fresh(L, ir_ty_scalar(L->ctx, AC_I64), &c->t);
  lw_fresh(L, ir_ty_scalar(L->ctx, AC_I64), &c->kulo);
  return L->M->st == AC_OK;
}

/* The tiles with window win: the CPU's tile wavefronts, or the GPU's. */
static void rc_window_run(rc_ctx *c, const rc_window *win) {
  if (c->L->gpu)
    lw_gskel_rec_window(c, win);
  else
    rc_tile_loop(c, rc_tile_kernel(c, win));
}

/* Room for n points wanted in win. */
static void rc_points_init(const rc_ctx *c, rc_window *win, uint32_t n) {
  win->npoints = n;
  win->at = cg_new(c->L->M, ((size_t)n * c->n + 1) * sizeof *win->at);
  win->out = cg_new(c->L->M, (n + 1) * sizeof *win->out);
}

/* Point k of win: p[0..rank) its 0-based indices (plan expressions), ext
 * the extents; its value gets fresh words. */
static void rc_point_set(const rc_ctx *c, rc_window *win, uint32_t k, const uint32_t *p,
                         const uint32_t *ext) {
  lw *L = c->L;
  uint32_t one = lw_x_const(L, 1);
  for (uint32_t d = 0; d < c->n; d++) {
    uint32_t y = d >= 2 || lw_rec_sigma(c, d) > 0
                     ? p[d]
                     : lw_x_bin(L, PX_SUB, lw_x_bin(L, PX_SUB, ext[d], one), p[d]);
    sk_word(L, y, &win->at[(size_t)k * c->n + d]);
  }
  lw_fresh(L, ir_node_get(L->m, c->body)->type, &win->out[k]);
}

/* True if e is a read of a recurrence: index kids as many as its rank. */
static bool rc_read_of(const ac_module *m, ir_ref e, ir_ref rec) {
  const ir_node *nd = ir_node_get(m, e), *rn = ir_node_get(m, rec);
  return nd->op == IR_INDEX && rn->op == IR_REC && nd->nkids == rn->attr + 1;
}

bool lw_rec_at_ok(lw *L, ir_ref e, lw_rec *c) {
  ac_module *m = L->m;
  const ir_node *nd = ir_node_get(m, e);
  if (nd->op != IR_INDEX || nd->nkids < 2 || !rc_read_of(m, e, ir_kid(m, e, 0)))
    return false;
  for (uint32_t d = 1; d < nd->nkids; d++)
    if (!lw_is_size(L, ir_kid(m, e, d)))
      return false;
  return rc_window_ok(L, ir_kid(m, e, 0), c);
}

bool lw_skel_rec_at(lw *L, ir_ref e, lw_rec *rec, lw_val *out) {
  ac_module *m = L->m;
  rc_ctx c = *rec;
  rc_window win;
  memset(&win, 0, sizeof win);
  uint32_t *ext;
  if (!rc_window_begin(L, &c, &win, &ext))
    return false;
  /* the indices: size expressions, which cannot fail, so evaluating them
   * before the recurrence rather than after is not observable */
  uint32_t *p = cg_new(L->M, c.n * sizeof *p);
  rc_points_init(&c, &win, 1);
  for (uint32_t d = 0; d < c.n; d++)
    p[d] = lw_x_hoist(L, lw_int(L, ir_kid(m, e, 1 + d)));
  rc_point_set(&c, &win, 0, p, ext);
  rc_window_run(&c, &win);
  /* the read's checks, as cg_read makes them (the first dimension out of
   * range is the one reported) */
  uint32_t zero = lw_x_const(L, 0);
  for (uint32_t d = 0; d < c.n; d++) {
    char text[64];
    snprintf(text, sizeof text, " out of bounds for dimension %u of extent ", d);
    lw_piece pc[4] = {LW_TEXT("index "), LW_VAL(p[d]), LW_TEXT(text), LW_VAL(ext[d])};
    uint32_t in =
        lw_x_bin(L, PX_MIN, lw_x_bin(L, PX_LE, zero, p[d]), lw_x_bin(L, PX_LT, p[d], ext[d]));
    lw_check(L, in, e, 4, pc, 0, NULL);
  }
  *out = win.out[0];
  return L->M->st == AC_OK;
}

/* ---- a let-bound recurrence read at a few points (lw_skel_rec_let) ---- */

/* The reads d[p, q] of a let's body (d its variable) whose indices are
 * size expressions of the let's scope: their variables are bound outside
 * the let, or by lets of the body whose values are themselves such
 * expressions (cse's `let cse = m - 1; d[n - 1, cse]`). The walk keeps
 * the body's binders from the let's inwards: binder s is such a let
 * (let[s] its node) or not (let[s] = 0: d itself, a lambda's parameter, a
 * tuple's fields). Each point keeps its indices and a copy of the binders
 * they are under. ok stays true while every use of d is such a read, of at
 * most LW_REC_POINTS different points. */
#define RC_READS_STEPS 100000u /* nodes visited: a body shared as a DAG is walked as a tree */
#define RC_READS_BINDERS 256u

typedef struct rc_reads {
  lw *L;
  uint32_t rank, n;
  ir_ref read[LW_REC_POINTS]; /* the INDEX nodes */
  uint32_t under[LW_REC_POINTS];
  ir_ref *lets[LW_REC_POINTS];
  ir_ref let[RC_READS_BINDERS];
  uint32_t steps;
  bool ok;
} rc_reads;

/* True if size expression e, under binders 0..j of the body (e's
 * variable v < j + 1 is binder j - v), uses only variables of the let's
 * scope and the body's size lets. */
static bool rc_reads_closed(const rc_reads *R, ir_ref e, uint32_t j, unsigned depth) {
  const ac_module *m = R->L->m;
  const ir_node *n = ir_node_get(m, e);
  if (depth > LW_MAX_DEPTH)
    return false;
  if (n->op == IR_VAR)
    return n->attr > j || R->let[j - n->attr] != IR_NONE;
  for (uint32_t i = 0; i < n->nkids; i++) {
    ir_ref kid = ir_kid(m, e, i);
    if (kid && !rc_reads_closed(R, kid, j, depth + 1))
      return false;
  }
  return true;
}

static bool rc_reads_size(const rc_reads *R, ir_ref e, uint32_t j) {
  return lw_is_size(R->L, e) && rc_reads_closed(R, e, j, 0);
}

static void rc_reads_walk(rc_reads *R, ir_ref e, uint32_t j, unsigned depth) {
  const ac_module *m = R->L->m;
  const ir_node *n = ir_node_get(m, e);
  if (!R->ok || depth > LW_MAX_DEPTH || ++R->steps > RC_READS_STEPS) {
    R->ok = false;
    return;
  }
  if (n->op == IR_VAR) { /* d anywhere but as the array of a read */
    R->ok = n->attr != j;
    return;
  }
  ir_ref a = n->op == IR_INDEX ? ir_kid(m, e, 0) : IR_NONE;
  if (a && ir_node_get(m, a)->op == IR_VAR && ir_node_get(m, a)->attr == j) {
    R->ok = n->nkids == R->rank + 1;
    for (uint32_t d = 1; d < n->nkids && R->ok; d++)
      R->ok = rc_reads_size(R, ir_kid(m, e, d), j);
    uint32_t k = 0;
    while (k < R->n && !(R->read[k] == e && R->under[k] == j + 1 &&
                         !memcmp(R->lets[k], R->let, (j + 1) * sizeof *R->let)))
      k++;
    if (R->ok && k == R->n) {
      R->ok = k < LW_REC_POINTS;
      if (!R->ok)
        return;
      R->read[k] = e;
      R->under[k] = j + 1;
      R->lets[k] = cg_new(R->L->M, (j + 1) * sizeof *R->lets[k]);
      memcpy(R->lets[k], R->let, (j + 1) * sizeof *R->let);
      R->n++;
    }
    return;
  }
  for (uint32_t i = 0; i < n->nkids && R->ok; i++) {
    ir_ref kid = ir_kid(m, e, i);
    uint32_t nb = kid ? ir_binders(m, e, i) : 0;
    if (j + nb >= RC_READS_BINDERS) {
      R->ok = false;
      return;
    }
    for (uint32_t b = 1; b <= nb; b++)
      R->let[j + b] = IR_NONE;
    if (n->op == IR_LET && i == 1 && rc_reads_size(R, ir_kid(m, e, 0), j))
      R->let[j + 1] = e;
    if (kid)
      rc_reads_walk(R, kid, j + nb, depth + 1);
  }
}

/* The reads of the let e's variable, a recurrence of rank `rank`, in its
 * body (R->ok: all are points). */
static void rc_reads_of(lw *L, ir_ref e, uint32_t rank, rc_reads *R) {
  memset(R, 0, sizeof *R);
  R->L = L;
  R->rank = rank;
  R->ok = true;
  rc_reads_walk(R, ir_kid(L->m, e, 1), 0, 0);
}

/* Index expression x of point k as a plan expression: the body's size
 * lets it is under are evaluated on the way (they cannot fail), its other
 * binders pushed as placeholders that x does not read. */
static uint32_t rc_reads_emit(const rc_reads *R, uint32_t k, ir_ref x) {
  lw *L = R->L;
  for (uint32_t s = 0; s < R->under[k]; s++) {
    lw_val v;
    ir_ref let = R->lets[k][s];
    if (let) /* a size expression: words, no kernel */
      lw_expr(L, ir_kid(L->m, let, 0), &v);
    else
      lw_fresh(L, ir_ty_unit(L->ctx), &v);
    lw_env_push(L, &v);
  }
  uint32_t out = lw_x_hoist(L, lw_int(L, x));
  lw_env_pop(L, R->under[k]);
  return out;
}

bool lw_rec_let_ok(lw *L, ir_ref e, lw_rec *c) {
  const ir_node *nd = ir_node_get(L->m, e);
  /* (rc_reads_emit pushes the body's binders onto L->env: not under
   * binders that env leaves out, lw_int_under's) */
  if (nd->op != IR_LET || nd->nkids != 2 || L->vshift || !rc_window_ok(L, ir_kid(L->m, e, 0), c))
    return false;
  rc_reads R;
  rc_reads_of(L, e, c->n, &R);
  return R.ok && R.n > 0;
}

/* The readers' data (lw_load_points): one per leaf of d. */
typedef struct rc_pleaf {
  uint32_t n;
  const LLVMValueRef *at; /* the points' 0-based indices, rank per point */
  LLVMValueRef *v;        /* the leaf of each point's value */
} rc_pleaf;

/* d[i, j, ..]: the value of the last point kept at (i, j, ..), checked in
 * range by cg_read (every read of d is at one of them). */
static LLVMValueRef rc_points_read(cg_fn *f, const cg_leaf *a, LLVMValueRef *idx, ir_ref at) {
  (void)at;
  LLVMBuilderRef b = f->M->b;
  const rc_pleaf *pl = a->env;
  LLVMValueRef v = pl->v[0];
  for (uint32_t k = 1; k < pl->n; k++) {
    LLVMValueRef here = NULL;
    for (uint32_t d = 0; d < a->rank; d++) {
      LLVMValueRef eq = LLVMBuildICmp(b, LLVMIntEQ, idx[d], pl->at[(size_t)k * a->rank + d], "");
      here = here ? LLVMBuildAnd(b, here, eq, "") : eq;
    }
    v = LLVMBuildSelect(b, here, pl->v[k], v, "");
  }
  return v;
}

/* The points of one let-bound recurrence: d's data word (leaf 0), the
 * points' 0-based indices (rank per point) and values. */
struct lw_pword {
  uint32_t word;
  uint32_t n, rank;
  const lw_val *at;
  const lw_val *out;
};

bool lw_skel_rec_let(lw *L, ir_ref e, lw_rec *rec, lw_val *dv) {
  ac_module *m = L->m;
  rc_ctx c = *rec;
  rc_window win;
  memset(&win, 0, sizeof win);
  uint32_t *ext;
  if (!rc_window_begin(L, &c, &win, &ext))
    return false;
  /* the points' indices: size expressions, which cannot fail, so
   * evaluating them before the recurrence rather than where the body reads
   * them is not observable */
  rc_reads R;
  rc_reads_of(L, e, c.n, &R);
  rc_points_init(&c, &win, R.n);
  lw_val *at = cg_new(L->M, ((size_t)R.n * c.n + 1) * sizeof *at);
  uint32_t *p = cg_new(L->M, c.n * sizeof *p);
  for (uint32_t k = 0; k < R.n; k++) {
    for (uint32_t d = 0; d < c.n; d++) {
      p[d] = rc_reads_emit(&R, k, ir_kid(m, R.read[k], 1 + d));
      sk_word(L, p[d], &at[(size_t)k * c.n + d]);
    }
    rc_point_set(&c, &win, k, p, ext);
  }
  rc_window_run(&c, &win);
  /* d: the table's extents, and a data word never set */
  ir_type t = ir_node_get(m, c.e)->type;
  lw_fresh(L, t, dv);
  const lw_leaf *lv;
  uint32_t nl = lw_leaves(L, t, &lv);
  for (uint32_t l = 0; l < nl; l++)
    for (uint32_t d = 0; d < c.n && lv[l].rank == c.n; d++)
      dv->words[lv[l].word + 1 + d] = c.ext[d].words[0];
  size_t cap = L->cappwords;
  if (!nl ||
      !ac_grow(L->ctx, (void **)&L->pwords, &cap, (size_t)L->npwords + 1, sizeof *L->pwords)) {
    cg_error(L->M, AC_ERR_NOMEM, e, "out of memory");
    return false;
  }
  L->cappwords = (uint32_t)cap;
  L->pwords[L->npwords++] = (struct lw_pword){dv->words[lv[0].word], R.n, c.n, at, win.out};
  return L->M->st == AC_OK;
}

bool lw_load_points(lw *L, cg_fn *f, uint32_t kernel, const lw_val *v, cg_val *out) {
  if (!L->npwords || !lw_has_array(L, v->type))
    return false;
  const lw_leaf *lv;
  uint32_t nl = lw_leaves(L, v->type, &lv);
  const struct lw_pword *pw = NULL;
  for (uint32_t i = 0; i < L->npwords && nl && !pw; i++)
    if (lv[0].rank && L->pwords[i].word == v->words[lv[0].word])
      pw = &L->pwords[i];
  if (!pw)
    return false;
  cg_module *M = L->M;
  LLVMValueRef *at = cg_new(M, ((size_t)pw->n * pw->rank + 1) * sizeof *at);
  cg_val *vals = cg_new(M, (pw->n + 1) * sizeof *vals);
  for (uint32_t k = 0; k < pw->n; k++) {
    for (uint32_t d = 0; d < pw->rank; d++)
      at[(size_t)k * pw->rank + d] = sk_ld(L, f, kernel, &pw->at[(size_t)k * pw->rank + d]);
    lw_load(L, f, kernel, &pw->out[k], &vals[k]);
  }
  cg_val_alloc(M, v->type, out);
  ir_type i64 = ir_ty_scalar(L->ctx, AC_I64);
  for (uint32_t l = 0; l < nl && l < out->n; l++) {
    cg_leaf *a = &out->l[l];
    rc_pleaf *pl = cg_new(M, sizeof *pl);
    pl->n = pw->n;
    pl->at = at;
    pl->v = cg_new(M, pw->n * sizeof *pl->v);
    for (uint32_t k = 0; k < pw->n; k++)
      pl->v[k] = l < vals[k].n ? vals[k].l[l].v : NULL;
    a->kind = CL_FUNC;
    a->read = rc_points_read;
    a->env = pl;
    for (uint32_t d = 0; d < a->rank; d++) {
      lw_val w = {i64, 1, &v->words[lv[l].word + 1 + d]};
      a->ext[d] = sk_ld(L, f, kernel, &w);
    }
  }
  return M->st == AC_OK;
}

void lw_rec_fold_part(cg_fn *f, const lw_rec_window *w, const cg_val *v, cg_val *out) {
  if (w->field == UINT32_MAX)
    *out = *v;
  else
    cg_val_field(f->M, v, w->field, out);
}

/* The recurrence fold e folds, through a field ((rec ...).k), and that
 * field's number (UINT32_MAX: the whole cell). */
static ir_ref rc_fold_rec(const ac_module *m, ir_ref e, uint32_t *field) {
  ir_ref r = ir_kid(m, e, 2);
  *field = UINT32_MAX;
  if (ir_node_get(m, r)->op == IR_PROJ) {
    *field = (uint32_t)ir_node_get(m, r)->attr;
    r = ir_kid(m, r, 0);
  }
  return r;
}

bool lw_rec_fold_ok(lw *L, ir_ref e, lw_rec *rec) {
  ac_module *m = L->m;
  const ir_node *nd = ir_node_get(m, e);
  uint32_t field;
  if (nd->op != IR_FOLD || nd->nkids != 3 || !rc_window_ok(L, rc_fold_rec(m, e, &field), rec) ||
      rec->n != 2)
    return false;
  const lw_rec c = *rec;
  /* fn cannot fail (a recurrence that fails leaves values that the
   * interpreter never folds), and combines in any order unless the rows
   * are walked in their order */
  ir_ref fn = ir_kid(m, e, 0);
  bool comm = cg_commutative(m, ir_node_get(m, ir_kid(m, e, 1))->type, fn);
  return (comm || !ps_fn_may_fail(m, fn)) && (comm || lw_rec_sigma(&c, 1) > 0);
}

/* "rec.fold.empty": rows[i] = z, for the rows of a recurrence without
 * columns (no tile folds them). */
static uint32_t rc_fold_empty_kernel(const rc_ctx *c, const rc_window *win) {
  lw *L = c->L;
  uint32_t kern;
  cg_fn *f = lw_kernel_begin(L, c->e, "rec.fold.empty", LW_GRAIN, &kern);
  cg_val zv, rv;
  lw_load(L, f, kern, &win->z, &zv);
  lw_load(L, f, kern, &win->rows, &rv);
  cg_loop il;
  LLVMValueRef i = cg_loop_begin(f, &il, f->lo, f->hi);
  sk_store(f, &rv, i, &zv);
  cg_loop_end(f, &il);
  lw_kernel_end(L, f);
  return kern;
}

bool lw_skel_rec_fold(lw *L, ir_ref e, lw_rec *rec, lw_val *out) {
  ac_module *m = L->m;
  rc_ctx c = *rec;
  rc_window win;
  memset(&win, 0, sizeof win);
  uint32_t *ext;
  /* z first, as the interpreter evaluates it */
  if (!lw_expr(L, ir_kid(m, e, 1), &win.z) || !rc_window_begin(L, &c, &win, &ext))
    return false;
  win.fold = true;
  win.fn = ir_kid(m, e, 0);
  win.tmp = cg_needs_tmp(m, win.fn);
  rc_fold_rec(m, e, &win.field); /* the part of each cell folded */
  lw_fresh(L, ir_node_get(m, e)->type, &win.rows);
  lw_alloc_arrays(L, &win.rows, &ext[0], e);
  rc_window_run(&c, &win);
  uint32_t none = lw_x_bin(L, PX_EQ, ext[1], lw_x_const(L, 0));
  lw_val empty;
  sk_word(L, none, &empty);
  pl_if(L->p, empty.words[0]);
  lw_launch(L, rc_fold_empty_kernel(&c, &win), ext[0], PL_AUTO);
  pl_end(L->p);
  *out = win.rows;
  return L->M->st == AC_OK;
}
