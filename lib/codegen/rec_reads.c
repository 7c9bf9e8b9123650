/* lib/codegen/rec_reads.c: how a recurrence's body reads its own array
 * (docs/language.md §7.14), for the code that computes it: the CPU and GPU
 * skeletons (lib/lower/skel_rec.c, gskel_rec.c) and a recurrence nested in
 * element code (seq_loop.c).
 *
 * The walk is syntactic and works on the IR as it is lowered (after every
 * pass), which is why it does not reuse the verifier's forms
 * (lib/ir/check_rec.c): only reads of exactly the shapes below qualify, so
 * whatever a pass did, a qualifying read means what the walk says.
 */
#include "codegen/cg.h"

#include <stdlib.h>
#include <string.h>

/* Reads that need no order check. A read d[e_1, .., e_n] is ORDERED when
 * every e_k with a_k != 0 is i_k, i_k + c or i_k - c (c an i64 literal,
 * the arithmetic in i64) and the sum of a_k * (its offset) is negative:
 * then, whatever the data, an element read inside the domain lies on a
 * wavefront a . x smaller than the reading point's by that sum (the e_k
 * with a_k = 0 do not move a . x), so it is computed already; outside the
 * domain the first check fails. The verifier's schedule makes every read
 * it classifies as uniform satisfy this (check_rec.c); the walk checks it
 * again on the IR as it is lowered, and only reads of exactly these forms
 * qualify (a cast, a let or any other form keeps its check: a narrowing
 * cast may wrap an index onto a later wavefront). */
typedef struct rr_walk {
  cg_module *M;
  const ac_module *m;
  uint32_t rn;      /* the recurrence's rank */
  const int64_t *a; /* its schedule */
  ir_ref *v;
  uint32_t n, cap, budget;
  /* bind[b]: the value of the body's b-th binder (outermost first) when
   * it is a let, else 0; depth binders are open at a node */
  ir_ref *bind;
  uint32_t nbind;
  /* uses of the array (any), and ordered reads with an offset in every
   * dimension, whose ranges are offmin/offmax */
  uint32_t uses, exact;
  int64_t *offmin, *offmax;
  int64_t *offs; /* rn offsets per exact read, in walk order */
  ir_ref *offat; /* the exact reads, in walk order */
  uint32_t capoffs, capoffat;
  ir_ref *next, *prev; /* cg_rec_reads' */
  uint32_t nnext, nprev, capnext, capprev;
  cg_rec_input *inputs;
  uint32_t ninputs, capinputs;
} rr_walk;

/* e (under *depth binders of the body) with let-bound variables replaced
 * by their values, and *depth the binders open at that value. */
static ir_ref rr_resolve(const rr_walk *w, ir_ref e, uint64_t *depth) {
  for (;;) {
    const ir_node *nd = ir_node_get(w->m, e);
    if (nd->op != IR_VAR || (uint64_t)nd->attr >= *depth)
      return e;
    uint64_t b = *depth - 1 - (uint64_t)nd->attr;
    if (b >= w->nbind || !w->bind[b])
      return e;
    e = w->bind[b];
    *depth = b;
  }
}

/* Whether e (under depth binders of the body) is i_k itself. */
static bool rr_is_index(const rr_walk *w, ir_ref e, uint32_t k, uint64_t depth) {
  e = rr_resolve(w, e, &depth);
  const ir_node *nd = ir_node_get(w->m, e);
  return nd->op == IR_VAR && (uint64_t)nd->attr == depth + (w->rn - 1 - k) &&
         nd->type == ir_ty_scalar(w->m->ctx, AC_I64);
}

/* The offset of e as i_k + offset (depth binders inside the body). */
static bool rr_offset(const rr_walk *w, ir_ref e, uint32_t k, uint64_t depth, int64_t *off) {
  const ac_module *m = w->m;
  e = rr_resolve(w, e, &depth);
  const ir_node *nd = ir_node_get(m, e);
  ir_type i64 = ir_ty_scalar(m->ctx, AC_I64);
  if (rr_is_index(w, e, k, depth)) {
    *off = 0;
    return true;
  }
  if ((nd->op != IR_ADD && nd->op != IR_SUB) || nd->type != i64 || nd->nkids != 2)
    return false;
  ir_ref x = ir_kid(m, e, 0), y = ir_kid(m, e, 1);
  uint64_t dy = depth;
  if (nd->op == IR_ADD && ir_node_get(m, rr_resolve(w, x, &dy))->op == IR_LIT) {
    ir_ref t = x;
    x = y;
    y = t;
  }
  dy = depth;
  const ir_node *yn = ir_node_get(m, rr_resolve(w, y, &dy));
  if (!rr_is_index(w, x, k, depth) || yn->op != IR_LIT || yn->type != i64)
    return false;
  int64_t c = yn->lit.i;
  if (nd->op == IR_SUB && c == INT64_MIN)
    return false;
  *off = nd->op == IR_SUB ? -c : c;
  return true;
}

static bool rr_is_ordered(const rr_walk *w, ir_ref r, uint64_t depth) {
  int64_t key = 0;
  for (uint32_t k = 0; k < w->rn; k++) {
    if (w->a[k] == 0)
      continue;
    int64_t off, t;
    if (!rr_offset(w, ir_kid(w->m, r, k + 1), k, depth, &off) ||
        __builtin_mul_overflow(w->a[k], off, &t) || __builtin_add_overflow(key, t, &key))
      return false;
  }
  return key < 0;
}

/* An ordered read r: when every index is i_k + c_k, counts it as exact
 * and widens the offsets' ranges. */
static void rr_note_offsets(rr_walk *w, ir_ref r, uint64_t depth) {
  int64_t off[64];
  if (w->rn > 64)
    return;
  for (uint32_t k = 0; k < w->rn; k++)
    if (!rr_offset(w, ir_kid(w->m, r, k + 1), k, depth, &off[k]))
      return;
  bool inner = true;
  for (uint32_t k = 0; k + 1 < w->rn; k++)
    inner = inner && off[k] == 0;
  if (inner && off[w->rn - 1] == 1) {
    cg_grow(w->M, (void **)&w->next, w->nnext, &w->capnext, sizeof *w->next, 4);
    w->next[w->nnext++] = r;
  }
  if (inner && off[w->rn - 1] == -1) {
    cg_grow(w->M, (void **)&w->prev, w->nprev, &w->capprev, sizeof *w->prev, 4);
    w->prev[w->nprev++] = r;
  }
  cg_grow(w->M, (void **)&w->offs, w->exact * w->rn, &w->capoffs, sizeof *w->offs, 8 * w->rn);
  memcpy(w->offs + (size_t)w->exact * w->rn, off, w->rn * sizeof *off);
  cg_grow(w->M, (void **)&w->offat, w->exact, &w->capoffat, sizeof *w->offat, 8);
  w->offat[w->exact] = r;
  for (uint32_t k = 0; k < w->rn; k++) {
    if (w->exact == 0 || off[k] < w->offmin[k])
      w->offmin[k] = off[k];
    if (w->exact == 0 || off[k] > w->offmax[k])
      w->offmax[k] = off[k];
  }
  w->exact++;
}

/* A read r of an array from outside the recurrence, every index i_k + c:
 * recorded in w->inputs. */
static void rr_note_input(rr_walk *w, ir_ref r, uint64_t depth) {
  const ac_module *m = w->m;
  const ir_node *nd = ir_node_get(m, r), *an = ir_node_get(m, ir_kid(m, r, 0));
  uint32_t rank = nd->nkids - 1;
  ir_type elem;
  uint32_t arank;
  if (an->op != IR_VAR || (uint64_t)an->attr < depth + w->rn + 1 ||
      !ir_ty_array_view(m->ctx, an->type, &elem, &arank) || arank != rank ||
      ir_ty_num_leaves(m->ctx, an->type) != 1 || w->ninputs >= 64)
    return;
  cg_rec_input in = {
      .at = r, .var = (uint32_t)((uint64_t)an->attr - depth - w->rn - 1), .rank = rank};
  for (uint32_t j = 0; j < rank; j++) {
    uint32_t k = 0;
    while (k < w->rn && !rr_offset(w, ir_kid(m, r, j + 1), k, depth, &in.off[j]))
      k++;
    if (k == w->rn)
      return;
    in.dim[j] = k;
  }
  cg_grow(w->M, (void **)&w->inputs, w->ninputs, &w->capinputs, sizeof *w->inputs, 4);
  w->inputs[w->ninputs++] = in;
}

static void rr_walk_node(rr_walk *w, ir_ref r, uint64_t depth) {
  if (w->budget == 0)
    return;
  w->budget--;
  const ac_module *m = w->m;
  const ir_node *nd = ir_node_get(m, r);
  if (nd->op == IR_INDEX && nd->nkids == w->rn + 1 && depth <= w->nbind) {
    const ir_node *an = ir_node_get(m, ir_kid(m, r, 0));
    if (an->op == IR_VAR && (uint64_t)an->attr == depth + w->rn && rr_is_ordered(w, r, depth)) {
      cg_grow(w->M, (void **)&w->v, w->n, &w->cap, sizeof *w->v, 8);
      w->v[w->n++] = r;
      rr_note_offsets(w, r, depth);
    }
  }
  if (nd->op == IR_VAR && (uint64_t)nd->attr == depth + w->rn)
    w->uses++;
  if (nd->op == IR_INDEX && nd->nkids >= 2 && nd->nkids <= 9 && depth <= w->nbind)
    rr_note_input(w, r, depth);
  for (uint32_t i = 0; i < nd->nkids; i++) {
    if (!ir_kid(m, r, i))
      continue;
    uint32_t nb = ir_binders(m, r, i);
    if (depth + nb > w->nbind) {
      uint32_t cap = (uint32_t)(depth + nb) * 2 + 8;
      ir_ref *bind = cg_new(w->M, cap * sizeof *bind);
      if (w->nbind)
        memcpy(bind, w->bind, w->nbind * sizeof *bind);
      memset(bind + w->nbind, 0, (cap - w->nbind) * sizeof *bind);
      w->bind = bind;
      w->nbind = cap;
    }
    for (uint32_t j = 0; j < nb; j++)
      w->bind[depth + j] = nd->op == IR_LET && nb == 1 ? ir_kid(m, r, 0) : 0;
    rr_walk_node(w, ir_kid(m, r, i), depth + nb);
  }
}

void cg_rec_reads_find(cg_module *M, const ac_module *m, ir_ref body, uint32_t n, const int64_t *a,
                       cg_rec_reads *out) {
  rr_walk w = {.M = M, .m = m, .rn = n, .a = a, .budget = 1u << 16};
  w.offmin = cg_new(M, n * sizeof *w.offmin);
  w.offmax = cg_new(M, n * sizeof *w.offmax);
  rr_walk_node(&w, body, 0);
  if (w.n)
    qsort(w.v, w.n, sizeof *w.v, cg_ref_cmp);
  if (w.nnext)
    qsort(w.next, w.nnext, sizeof *w.next, cg_ref_cmp);
  if (w.nprev)
    qsort(w.prev, w.nprev, sizeof *w.prev, cg_ref_cmp);
  /* every use of the array is the array of a counted read (a walk cut
   * short by its budget proves nothing) */
  *out = (cg_rec_reads){.ordered = w.v,
                        .nordered = w.n,
                        .uniform = w.budget > 0 && w.uses == w.exact,
                        .offmin = w.offmin,
                        .offmax = w.offmax,
                        .offs = w.offs,
                        .offat = w.offat,
                        .noffs = w.exact,
                        .next = w.next,
                        .prev = w.prev,
                        .nnext = w.nnext,
                        .nprev = w.nprev,
                        .inputs = w.inputs,
                        .ninputs = w.ninputs};
}

/* ---- schedules to choose from at run time ----
 * Cartey et al.'s conditional schedules (§4.7): a recurrence may have
 * several minimal schedules, which one gives the fewest wavefronts
 * depending on the extents (reads of d[i - 1, j - 1] alone: rows when
 * there are fewer rows, columns otherwise). For uniform reads the valid
 * schedules are exactly the vectors b with b . o <= -1 for every read's
 * offsets o (all reads are then ordered under each of them, as under a).
 * The candidates are those whose |b| no other valid vector's |b| bounds
 * from below in every component with a difference somewhere (wavefronts,
 * 1 + sum |b_k| (ext_k - 1), grow with each |b_k|, so the best for any
 * extents is among them), one per |b|, coefficients within
 * [-CG_SCHED_COEF, CG_SCHED_COEF]; the verifier's a comes first. */
#define CG_SCHED_COEF 3
#define CG_SCHED_RANK 4
#define CG_SCHED_MAX 4 /* candidates at most */

/* (offsets that overflow the products make b no candidate) */
static bool rs_valid(const cg_rec_reads *r, uint32_t n, const int64_t *b) {
  for (uint32_t j = 0; j < r->noffs; j++) {
    int64_t dot = 0, t;
    for (uint32_t k = 0; k < n; k++)
      if (__builtin_mul_overflow(b[k], r->offs[(size_t)j * n + k], &t) ||
          __builtin_add_overflow(dot, t, &dot))
        return false;
    if (dot > -1)
      return false;
  }
  return true;
}

/* -1: |x| <= |y| in every component and differs (x dominates); 0 equal
 * magnitudes; 1 otherwise. */
static int rs_dominates(uint32_t n, const int64_t *x, const int64_t *y) {
  bool differs = false;
  for (uint32_t k = 0; k < n; k++) {
    int64_t ax = x[k] < 0 ? -x[k] : x[k], ay = y[k] < 0 ? -y[k] : y[k];
    if (ax > ay)
      return 1;
    differs = differs || ax != ay;
  }
  return differs ? -1 : 0;
}

uint32_t cg_rec_schedules(cg_module *M, const cg_rec_reads *r, uint32_t n, const int64_t *a,
                          const int64_t **out) {
  *out = a;
  if (!r->uniform || r->noffs == 0 || n > CG_SCHED_RANK)
    return 1;
  for (uint32_t k = 0; k < n; k++)
    if (a[k] > CG_SCHED_COEF || a[k] < -CG_SCHED_COEF)
      return 1;
  /* the valid vectors, then the undominated ones */
  uint32_t side = 2 * CG_SCHED_COEF + 1, total = 1;
  for (uint32_t k = 0; k < n; k++)
    total *= side;
  int64_t *valid = cg_new(M, (size_t)total * n * sizeof *valid), b[CG_SCHED_RANK];
  uint32_t nvalid = 0;
  for (uint32_t code = 0; code < total; code++) {
    uint32_t rest = code;
    for (uint32_t k = 0; k < n; k++) {
      b[k] = (int64_t)(rest % side) - CG_SCHED_COEF;
      rest /= side;
    }
    if (rs_valid(r, n, b))
      memcpy(valid + (size_t)nvalid++ * n, b, n * sizeof *b);
  }
  int64_t *best = cg_new(M, (size_t)CG_SCHED_MAX * n * sizeof *best);
  memcpy(best, a, n * sizeof *a);
  uint32_t nbest = 1;
  for (uint32_t i = 0; i < nvalid && nbest < CG_SCHED_MAX; i++) {
    const int64_t *x = valid + (size_t)i * n;
    bool keep = true;
    for (uint32_t j = 0; j < nvalid && keep; j++)
      keep = rs_dominates(n, valid + (size_t)j * n, x) != -1;
    for (uint32_t j = 0; j < nbest && keep; j++)
      keep = rs_dominates(n, best + (size_t)j * n, x) == 1;
    if (keep)
      memcpy(best + (size_t)nbest++ * n, x, n * sizeof *x);
  }
  *out = best;
  return nbest;
}

bool cg_rec_read_ordered(const cg_rec_reads *r, ir_ref at) {
  return r->nordered && bsearch(&at, r->ordered, r->nordered, sizeof at, cg_ref_cmp);
}

ir_ref *cg_rec_inputs_proven(cg_fn *f, const cg_rec_reads *r, const LLVMValueRef *lo,
                             const LLVMValueRef *xmin, const LLVMValueRef *xmax,
                             LLVMValueRef *ok, uint32_t *count) {
  cg_module *M = f->M;
  LLVMBuilderRef B = M->b;
  ir_ref *proven = cg_new(M, (r->ninputs + 1) * sizeof *proven);
  uint32_t n = 0;
  for (uint32_t i = 0; i < r->ninputs; i++) {
    const cg_rec_input *in = &r->inputs[i];
    const cg_val *av = in->var < f->nenv ? &f->env[f->nenv - 1 - in->var] : NULL;
    if (!av || av->n != 1 || !av->l[0].ext || av->l[0].rank != in->rank)
      continue;
    for (uint32_t j = 0; j < in->rank; j++) {
      uint32_t d = in->dim[j];
      LLVMValueRef base = LLVMBuildAdd(B, lo[d], cg_i64(M, in->off[j]), "");
      LLVMValueRef a = LLVMBuildAdd(B, base, xmin[d], "");
      LLVMValueRef b = LLVMBuildAdd(B, base, xmax[d], "");
      /* a <= b: i + c does not wrap over the box */
      LLVMValueRef in_range =
          LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntSLE, a, b, ""),
                       LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntSGE, a, cg_i64(M, 0), ""),
                                    LLVMBuildICmp(B, LLVMIntSLT, b, av->l[0].ext[j], ""), ""),
                       "");
      *ok = LLVMBuildAnd(B, *ok, in_range, "");
    }
    proven[n++] = in->at;
  }
  if (n)
    qsort(proven, n, sizeof *proven, cg_ref_cmp);
  *count = n;
  return proven;
}

/* ---- anti-diagonal walks ---- */

bool cg_rec_read_offsets(const cg_rec_reads *r, ir_ref at, uint32_t n, int64_t *off) {
  for (uint32_t j = 0; j < r->noffs; j++)
    if (r->offat[j] == at) {
      memcpy(off, r->offs + (size_t)j * n, n * sizeof *off);
      return true;
    }
  memset(off, 0, n * sizeof *off);
  return false;
}

int64_t cg_rec_diag_depth(const cg_rec_reads *r, const int *sigma) {
  int64_t q = 1;
  for (uint32_t j = 0; j < r->noffs; j++) {
    int64_t back = -(sigma[0] * r->offs[2 * (size_t)j] + sigma[1] * r->offs[2 * (size_t)j + 1]);
    if (back > q)
      q = back;
  }
  return q;
}

static bool rr_plain(const ac_module *m, const cg_rec_reads *r, ir_ref e, bool any_input,
                     unsigned depth) {
  const ir_node *nd = ir_node_get(m, e);
  if (depth > 200)
    return false;
  switch ((ir_op)nd->op) {
  case IR_INDEX: {
    bool input = any_input && ir_node_get(m, ir_kid(m, e, 0))->op == IR_VAR;
    for (uint32_t j = 0; j < r->ninputs; j++)
      input = input || r->inputs[j].at == e;
    if (!input && !cg_rec_read_ordered(r, e))
      return false;
    break;
  }
  case IR_VAR:
  case IR_LIT:
  case IR_TUPLE:
  case IR_PROJ:
  case IR_LET:
  case IR_LETTUP:
  case IR_IF:
  case IR_CAST:
    break;
  default:
    if (!ir_op_is_scalar(nd->op))
      return false;
  }
  for (uint32_t i = 0; i < nd->nkids; i++)
    if (ir_kid(m, e, i) && !rr_plain(m, r, ir_kid(m, e, i), any_input, depth + 1))
      return false;
  return true;
}

bool cg_rec_body_plain(const ac_module *m, const cg_rec_reads *r, ir_ref body, bool any_input) {
  return r->uniform && rr_plain(m, r, body, any_input, 0);
}

static void rr_live(const ac_module *m, const cg_rec_reads *r, ir_ref e, uint64_t *live,
                    unsigned depth) {
  const ir_node *nd = ir_node_get(m, e);
  if (depth > 200 || *live == UINT64_MAX) {
    *live = UINT64_MAX;
    return;
  }
  if (nd->op == IR_PROJ && cg_rec_read_ordered(r, ir_kid(m, e, 0))) {
    /* d[..].k: field k's leaves */
    ir_ref at = ir_kid(m, e, 0);
    ir_typeinfo ti = ir_ty_info(m->ctx, ir_node_get(m, at)->type);
    uint32_t first = 0, k = (uint32_t)nd->attr;
    if (ti.kind != TK_TUPLE || k >= ti.n) {
      *live = UINT64_MAX;
      return;
    }
    for (uint32_t i = 0; i < k; i++)
      first += ir_ty_num_leaves(m->ctx, ti.fields[i]);
    for (uint32_t l = first; l < first + ir_ty_num_leaves(m->ctx, ti.fields[k]) && l < 64; l++)
      *live |= (uint64_t)1 << l;
    for (uint32_t i = 1; i < ir_node_get(m, at)->nkids; i++)
      rr_live(m, r, ir_kid(m, at, i), live, depth + 1);
    return;
  }
  if (nd->op == IR_INDEX && cg_rec_read_ordered(r, e)) {
    *live = UINT64_MAX; /* the whole cell */
    return;
  }
  for (uint32_t i = 0; i < nd->nkids; i++)
    if (ir_kid(m, e, i))
      rr_live(m, r, ir_kid(m, e, i), live, depth + 1);
}

uint64_t cg_rec_live_leaves(const ac_module *m, const cg_rec_reads *r, ir_ref body, ir_type elem) {
  uint32_t n = ir_ty_num_leaves(m->ctx, elem);
  uint64_t live = 0;
  if (n > 64)
    return UINT64_MAX;
  rr_live(m, r, body, &live, 0);
  return n == 64 ? live : live & (((uint64_t)1 << n) - 1);
}
