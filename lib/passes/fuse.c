/* lib/passes/fuse.c: the fuse pass (docs/passes.md), array fusion.
 *
 * What. Producers that feed another array operation are marked to be
 * computed where their consumer reads them, instead of being written to
 * memory and read back: a producer (map, generate, iota, fill, gather,
 * backpermute, slice, reshape, transpose, reverse, replicate) that is an
 * array operand of a consuming operation is wrapped in delay()
 * (docs/language.md §7.15), which lowering turns into an index function
 * inside the consumer's kernel (lib/lower/delay.c, lib/codegen/seq_delay.c).
 * So fold(+, 0, map(*, xs, ys)) becomes one reduction over xs and ys, a map
 * of two slices one element-wise kernel, and a chain of maps one loop.
 *   - vertical: a producer in an operand position is delayed when that is
 *     allowed and pays; a producer bound by `let` and used once as such an
 *     operand is moved there first (a beta step, ir_subst); one used
 *     several times is duplicated into every use only when it is cheap;
 *   - horizontal: maps (or generates) over the same operands, bound by
 *     consecutive lets or side by side in a tuple, become one map whose
 *     function returns a tuple (a tuple of arrays, §2.4), bound by a
 *     destructuring let: one kernel with several outputs (Black-Scholes'
 *     call and put prices).
 * Folds, scans, filters, permutations, recurrences and loops are never
 * delayed: their results stay manifest, so a kernel boundary remains
 * exactly where a global dependency needs one (Copperhead's phases) and an
 * element-wise chain becomes one kernel.
 *
 * Which paper. Barracuda (001: fusion of producers into consumers as index
 * functions, measured on RMSE), Accelerate (002: delayed arrays, sharing and
 * its effect on Black-Scholes), Copperhead (003: phases and
 * synchronisation).
 *
 * Requires a verified module. Preserves meaning, including which runtime
 * error a failing program reports: delaying p moves the computation of
 * p's elements into its consumer, so an element of p that can fail (a
 * gather's index, a lambda that indexes or loops) is delayed only into a
 * consumer that reads every element, whose own element code and remaining
 * checks cannot fail, so that p's first error is still the first one; a
 * let is removed only when nothing that can fail runs between it and the
 * use, and producers are never moved into lambdas or conditional branches.
 * Nothing is recomputed that is not cheap: a consumer that reads an element
 * several times (a stencil, replicate) only takes index-space changes, and
 * duplication is bounded by FU_CHEAP nodes. Leaves every existing delay as
 * it is, so the pass is idempotent.
 */
#include "passes/pass.h"

#include <string.h>

/* Producers larger than this (nodes, with the functions they call:
 * fu_cost) are neither duplicated nor recomputed per read by consumers
 * that may read an element more than once. */
#define FU_CHEAP 32u
/* Recursion guard of the walks (the verifier bounds depth at 4000;
 * substitution can deepen a tree by the depth of what it inserts, and
 * ps_printable keeps such results out). Deeper subtrees are left as they
 * are. */
#define FU_MAX_DEPTH 4000u

enum { FU_FUSED, FU_HORIZONTAL, FU_DUPLICATED };

typedef struct fu {
  ps_ctx *c;
  ac_module *m;
  uint8_t *ffail; /* per function: 0 unknown, 1 cannot fail, 2 may fail or loop */
  bool lets;      /* move let-bound producers to their uses */
  bool oom;
  size_t nenv; /* binders in scope: levels count them from the function's
                 first parameter */
  /* Pairs of levels of array variables known to have one extent where
   * the walk is (a map that checked them was evaluated before, by a let
   * whose body this is); dropped with the let. */
  struct fu_fact {
    int64_t a, b;
  } *facts;
  size_t nfacts, capfacts;
} fu;

static void fu_fact(fu *F, int64_t a, int64_t b) {
  if (a < 0 || b < 0 || a == b)
    return;
  if (!ac_grow(F->m->ctx, (void **)&F->facts, &F->capfacts, F->nfacts + 1, sizeof *F->facts)) {
    F->oom = true;
    return;
  }
  F->facts[F->nfacts++] = (struct fu_fact){a, b};
}

static void fu_push(fu *F, uint32_t n) {
  F->nenv += n;
}

static void fu_pop(fu *F, uint32_t n) {
  F->nenv = n <= F->nenv ? F->nenv - n : 0;
}

/* The level of variable r (a VAR in the current scope), or -1. */
static int64_t fu_level(fu *F, ir_ref r) {
  const ir_node *n = ir_node_get(F->m, r);
  if (n->op != IR_VAR || n->attr < 0 || (uint64_t)n->attr >= F->nenv)
    return -1;
  return (int64_t)F->nenv - 1 - n->attr;
}

/* ---- what can fail ---- */

/* Whether evaluating e can raise a runtime error or not end (ps_may_fail,
 * but looking into called functions: an extern cannot fail, §3.3). */
static bool fu_fails(fu *F, ir_ref e);

static bool fu_fn_fails(fu *F, int64_t fi) {
  ac_module *m = F->m;
  if (fi < 0 || (uint64_t)fi >= m->nfuncs)
    return true;
  if (m->funcs[fi].is_extern)
    return false;
  if (!F->ffail[fi]) {
    F->ffail[fi] = 2; /* the call graph is acyclic; this only guards */
    F->ffail[fi] = fu_fails(F, m->funcs[fi].body) ? 2 : 1;
  }
  return F->ffail[fi] == 2;
}

/* Whether node x itself (not its children) can fail. */
static bool fu_node_fails(fu *F, ir_ref x) {
  ac_module *m = F->m;
  const ir_node *n = ir_node_get(m, x);
  switch ((ir_op)n->op) {
  case IR_INDEX: /* bounds */
  case IR_LOOP:  /* may not end */
  case IR_REC:
  case IR_ARRLIT:
    return true;
  case IR_LEN:
  case IR_SHAPE: { /* a tuple of arrays used as an array checks its shapes */
    ir_type t = ir_node_get(m, ir_kid(m, x, 0))->type;
    return t == IR_TY_NONE || ir_ty_num_leaves(m->ctx, t) != 1;
  }
  case IR_CALL:
  case IR_FNREF:
    return fu_fn_fails(F, n->attr);
  default:
    return ps_is_array_op(m, x) || n->op == IR_DELAY || n->op == IR_TILED ||
           n->op == IR_SIZED;
  }
}

static bool fu_fails(fu *F, ir_ref e) {
  ac_module *m = F->m;
  if (!e)
    return false;
  size_t cap = 64, sp = 0;
  ir_ref *st = ac_alloc(m->ctx, cap * sizeof *st);
  if (!st)
    return true;
  st[sp++] = e;
  bool fail = false;
  while (sp && !fail) {
    ir_ref x = st[--sp];
    if (fu_node_fails(F, x)) {
      fail = true;
      break;
    }
    const ir_node *n = ir_node_get(m, x);
    if (!ac_grow(m->ctx, (void **)&st, &cap, sp + n->nkids + 1, sizeof *st)) {
      fail = true; /* unknown is "may fail" */
      break;
    }
    for (uint32_t i = 0; i < n->nkids; i++)
      st[sp++] = ir_kid(m, x, i);
  }
  ac_free(m->ctx, st);
  return fail;
}

/* A LAM or FNREF argument whose application can fail. */
static bool fu_lam_fails(fu *F, ir_ref fn) {
  const ir_node *n = ir_node_get(F->m, fn);
  if (n->op == IR_FNREF)
    return fu_fn_fails(F, n->attr);
  return n->op != IR_LAM || fu_fails(F, ir_kid(F->m, fn, 0));
}

/* The size of r with the bodies of the functions it calls (ps_size
 * counts a call as one node), at most limit. */
static uint32_t fu_cost(fu *F, ir_ref r, uint32_t limit, unsigned depth) {
  ac_module *m = F->m;
  uint32_t n = ps_size(m, r, limit);
  if (n >= limit || depth > 64)
    return limit;
  size_t cap = 64, sp = 0;
  ir_ref *st = ac_alloc(m->ctx, cap * sizeof *st);
  if (!st)
    return limit;
  st[sp++] = r;
  while (sp && n < limit) {
    ir_ref x = st[--sp];
    const ir_node *xn = ir_node_get(m, x);
    if ((xn->op == IR_CALL || xn->op == IR_FNREF) && xn->attr >= 0 &&
        (uint64_t)xn->attr < m->nfuncs && m->funcs[xn->attr].body)
      n += fu_cost(F, m->funcs[xn->attr].body, limit - n, depth + 1);
    if (!ac_grow(m->ctx, (void **)&st, &cap, sp + xn->nkids + 1, sizeof *st)) {
      n = limit;
      break;
    }
    for (uint32_t i = 0; i < xn->nkids; i++)
      st[sp++] = ir_kid(m, x, i);
  }
  ac_free(m->ctx, st);
  return n < limit ? n : limit;
}

static bool fu_cheap(fu *F, ir_ref r) {
  return fu_cost(F, r, FU_CHEAP + 1, 0) <= FU_CHEAP;
}

/* ---- producers and consumers ---- */

/* The operations lowering can delay (cg_delay_producer, seq_delay.c). */
static bool fu_producer(ir_op op) {
  switch (op) {
  case IR_GENERATE:
  case IR_IOTA:
  case IR_FILL:
  case IR_MAP:
  case IR_GATHER:
  case IR_BACKPERMUTE:
  case IR_SLICE:
  case IR_RESHAPE:
  case IR_TRANSPOSE:
  case IR_REVERSE:
  case IR_REPLICATE:
    return true;
  default:
    return false;
  }
}

/* How a consumer reads array operand k (the positions whose skeletons take
 * delayed operands: lw_operand and cg_seq_operand callers). */
typedef enum fu_read {
  FU_NONE,  /* not a position that takes a delayed operand */
  FU_ALL,   /* every element, once */
  FU_SOME,  /* a subset, each element at most once */
  FU_PICK,  /* computed positions: an element may be read several times */
  FU_TWICE, /* every element, twice (the parallel filter: count, then write) */
  FU_MULTI  /* several elements per result element (windows, replication) */
} fu_read;

static fu_read fu_position(ir_op op, uint32_t k) {
  switch (op) {
  case IR_MAP:
    return k >= 1 ? FU_ALL : FU_NONE;
  case IR_FOLD:
  case IR_FOLD_SEG:
    return k == 2 ? FU_ALL : FU_NONE;
  case IR_SCAN:
  case IR_SCANR:
  case IR_SCAN_SEG: /* an exclusive scan never reads its last element */
    return k == 2 ? FU_SOME : FU_NONE;
  case IR_SCAN_INCL:
  case IR_SCANR_INCL:
  case IR_SCAN_INCL_SEG:
    return k == 1 ? FU_ALL : FU_NONE;
  case IR_GATHER:
    return k == 0 ? FU_ALL : k == 1 ? FU_PICK : FU_NONE;
  case IR_BACKPERMUTE:
    return k == 2 ? FU_PICK : FU_NONE;
  case IR_SCATTER:
    return k <= 2 ? FU_ALL : FU_NONE;
  case IR_PERMUTE:
    return k == 1 || k == 3 ? FU_ALL : FU_NONE;
  case IR_SLICE:
    return k == 0 ? FU_SOME : FU_NONE;
  case IR_TRANSPOSE:
  case IR_REVERSE:
    return k == 0 ? FU_ALL : FU_NONE;
  case IR_REPLICATE:
    return k == 1 ? FU_MULTI : FU_NONE;
  case IR_STENCIL:
    return k == 1 ? FU_MULTI : FU_NONE;
  case IR_FILTER:
    return k == 1 ? FU_TWICE : FU_NONE;
  default: /* reshape's operand is a view at plan level: kept manifest */
    return FU_NONE;
  }
}

static bool fu_is_delay(fu *F, ir_ref r) {
  return ir_node_get(F->m, r)->op == IR_DELAY;
}

/* An index-space change without arithmetic on elements (and with only
 * such delayed producers below it): recomputing it per read costs index
 * arithmetic only. */
static bool fu_index_only(fu *F, ir_ref p, unsigned depth) {
  ac_module *m = F->m;
  const ir_node *n = ir_node_get(m, p);
  switch ((ir_op)n->op) {
  case IR_SLICE:
  case IR_RESHAPE:
  case IR_TRANSPOSE:
  case IR_REVERSE:
  case IR_REPLICATE:
  case IR_IOTA:
  case IR_FILL:
    break;
  default:
    return false;
  }
  for (uint32_t i = 0; i < n->nkids; i++) {
    ir_ref k = ir_kid(m, p, i);
    if (fu_is_delay(F, k) && (depth > FU_MAX_DEPTH || !fu_index_only(F, ir_kid(m, k, 0), depth + 1)))
      return false;
  }
  return true;
}

/* Whether computing an element of producer p (with its delayed operands)
 * can fail or not end. */
static bool fu_elem_fails(fu *F, ir_ref p, unsigned depth) {
  ac_module *m = F->m;
  const ir_node *n = ir_node_get(m, p);
  if (depth > FU_MAX_DEPTH)
    return true;
  switch ((ir_op)n->op) {
  case IR_MAP:
    if (fu_lam_fails(F, ir_kid(m, p, 0)))
      return true;
    break;
  case IR_GENERATE:
    if (fu_lam_fails(F, ir_kid(m, p, 1)))
      return true;
    break;
  case IR_GATHER:
    return true; /* the index check */
  case IR_BACKPERMUTE: /* a projection is checked before its elements */
    if (!ir_bp_is_projection(m, p))
      return true;
    break;
  default:
    break;
  }
  for (uint32_t i = 0; i < n->nkids; i++) {
    ir_ref k = ir_kid(m, p, i);
    if (fu_is_delay(F, k) && fu_elem_fails(F, ir_kid(m, k, 0), depth + 1))
      return true;
  }
  return false;
}

/* Classes of array expressions known to have equal extents: a small
 * union-find whose terms are compared structurally (ir_equal), so the same
 * variable is the same term. */
#define FU_EQ_MAX 64u
#define FU_EQ_FULL UINT32_MAX
typedef struct fu_eq {
  ir_ref t[FU_EQ_MAX];   /* a term that is not a variable */
  int64_t lv[FU_EQ_MAX]; /* a variable: its level (else -1) */
  uint32_t up[FU_EQ_MAX];
  uint32_t n;
  bool full; /* a term did not fit: nothing is proven */
} fu_eq;

static uint32_t eq_find(fu_eq *q, uint32_t i) {
  while (q->up[i] != i)
    i = q->up[i];
  return i;
}

static uint32_t eq_add(fu_eq *q, ir_ref t, int64_t lv) {
  if (q->n == FU_EQ_MAX) {
    q->full = true;
    return FU_EQ_FULL;
  }
  q->t[q->n] = t;
  q->lv[q->n] = lv;
  q->up[q->n] = q->n;
  return q->n++;
}

static uint32_t eq_level(fu_eq *q, int64_t lv) {
  for (uint32_t i = 0; i < q->n; i++)
    if (q->lv[i] == lv)
      return i;
  return FU_EQ_FULL;
}

static uint32_t eq_term(fu *F, fu_eq *q, ir_ref e) {
  int64_t lv = fu_level(F, e);
  if (lv >= 0) {
    uint32_t i = eq_level(q, lv);
    return i != FU_EQ_FULL ? i : eq_add(q, IR_NONE, lv);
  }
  for (uint32_t i = 0; i < q->n; i++)
    if (q->lv[i] < 0 && ir_equal(F->m, q->t[i], e))
      return i;
  return eq_add(q, e, -1);
}

static void eq_union(fu_eq *q, uint32_t a, uint32_t b) {
  if (a != FU_EQ_FULL && b != FU_EQ_FULL)
    q->up[eq_find(q, a)] = eq_find(q, b);
}

static bool eq_same(fu_eq *q, uint32_t a, uint32_t b) {
  return !q->full && a != FU_EQ_FULL && b != FU_EQ_FULL && eq_find(q, a) == eq_find(q, b);
}

/* Adds the walk's facts (fu_fact) about the variables among q's terms,
 * and the variables they bring in, until nothing changes. */
static void eq_close(fu *F, fu_eq *q) {
  for (bool grew = true; grew && !q->full;) {
    grew = false;
    for (size_t i = 0; i < F->nfacts; i++) {
      int64_t a = F->facts[i].a, b = F->facts[i].b;
      if ((uint64_t)a >= F->nenv || (uint64_t)b >= F->nenv)
        continue; /* about a binder not in scope here */
      uint32_t ia = eq_level(q, a), ib = eq_level(q, b);
      if (ia == FU_EQ_FULL && ib == FU_EQ_FULL)
        continue;
      if (ia == FU_EQ_FULL)
        ia = eq_add(q, IR_NONE, a), grew = true;
      if (ib == FU_EQ_FULL)
        ib = eq_add(q, IR_NONE, b), grew = true;
      eq_union(q, ia, ib);
    }
  }
}

/* The extent class of array operand e, with the facts its evaluation
 * establishes when it succeeds: a map's (delayed or not) operands all have
 * its extent, since it checks them; a backpermute or generate has the
 * extents its shape expression gives, a gather those of its indices. */
static uint32_t eq_operand(fu *F, fu_eq *q, ir_ref e, unsigned depth) {
  ac_module *m = F->m;
  if (fu_is_delay(F, e))
    e = ir_kid(m, e, 0);
  uint32_t me = eq_term(F, q, e);
  const ir_node *n = ir_node_get(m, e);
  if (n->op == IR_MAP && depth < FU_MAX_DEPTH) {
    uint32_t nk = n->nkids;
    for (uint32_t i = 1; i < nk; i++)
      eq_union(q, me, eq_operand(F, q, ir_kid(m, e, i), depth + 1));
  } else if (n->op == IR_BACKPERMUTE || n->op == IR_GENERATE) {
    eq_union(q, me, eq_term(F, q, ir_kid(m, e, 0))); /* its shape */
  } else if (n->op == IR_GATHER && depth < FU_MAX_DEPTH) {
    eq_union(q, me, eq_operand(F, q, ir_kid(m, e, 0), depth + 1)); /* its indices' */
  }
  return me;
}

/* A map of several operands (kids[1..nk)) may take a producer whose
 * elements can fail as operand k: the map computes them only after it has
 * evaluated every operand and checked their shapes, so that check must be
 * sure to pass (the operands are known to have one extent, fu_eq), no
 * other delayed operand may have elements that can fail, and nothing after
 * operand k may fail while it is evaluated. An Accelerate-style matrix
 * multiply, map(*, backpermute(sh, .., a), backpermute(sh, .., b)), needs
 * none of this: its backpermutes are projections, checked where they are
 * evaluated (ir_bp_projection). */
static bool fu_map_sure(fu *F, uint32_t nk, const ir_ref *kids, uint32_t k) {
  ac_module *m = F->m;
  fu_eq q;
  q.n = 0;
  q.full = false;
  uint32_t c[FU_EQ_MAX];
  if (nk - 1 > FU_EQ_MAX)
    return false;
  for (uint32_t i = 1; i < nk; i++) {
    ir_ref o = kids[i];
    /* the operands before k are decided (fu_expr delays in order): one
     * left manifest is evaluated, with its errors, before the map as
     * before; one after k stays manifest if it can fail at all (its
     * evaluation would move before k's elements) */
    if (i != k) {
      if (fu_is_delay(F, o) && fu_elem_fails(F, ir_kid(m, o, 0), 0))
        return false;
      if (i > k && fu_fails(F, o))
        return false;
    }
    c[i - 1] = eq_operand(F, &q, o, 0);
  }
  eq_close(F, &q);
  for (uint32_t i = 2; i < nk; i++)
    if (!eq_same(&q, c[i - 1], c[0]))
      return false;
  return true;
}

/* May producer p be delayed into operand k of consumer c (whose kids are
 * kids)? Cost first, then the order of errors (see the header). */
static bool fu_fusible(fu *F, ir_ref c, const ir_ref *kids, uint32_t k, ir_ref p) {
  ac_module *m = F->m;
  const ir_node *cn = ir_node_get(m, c);
  ir_op op = (ir_op)cn->op;
  if (!fu_producer((ir_op)ir_node_get(m, p)->op))
    return false;
  fu_read how = fu_position(op, k);
  bool cheap = fu_cheap(F, p);
  switch (how) {
  case FU_NONE:
    return false;
  case FU_PICK:
  case FU_TWICE:
    if (!cheap && !fu_index_only(F, p, 0))
      return false;
    break;
  case FU_MULTI:
    if (!fu_index_only(F, p, 0))
      return false;
    break;
  default:
    break;
  }
  if (!fu_elem_fails(F, p, 0))
    return true;
  /* p's elements can fail: they are computed while c runs, so c must read
   * all of them, and nothing c does after p's evaluation may fail first */
  if (how != FU_ALL)
    return false;
  switch (op) {
  case IR_MAP:
    return !fu_lam_fails(F, kids[0]) && (cn->nkids == 2 || fu_map_sure(F, cn->nkids, kids, k));
  case IR_FOLD:
  case IR_SCAN_INCL:
  case IR_SCANR_INCL:
    return !fu_lam_fails(F, kids[0]);
  case IR_FOLD_SEG:
  case IR_SCAN_INCL_SEG:
    /* the lengths are evaluated before p's elements are computed, and
     * checked before they are read: lowering reports a failed check only
     * after computing every element of p (sk_seg_offsets) */
    return !fu_lam_fails(F, kids[0]) && !fu_fails(F, kids[op == IR_FOLD_SEG ? 3 : 2]);
  case IR_TRANSPOSE:
  case IR_REVERSE:
    return true;
  default:
    return false;
  }
}

static ir_ref fu_delay(fu *F, ir_ref p) {
  ir_ref d = ir_node_new(F->m, IR_DELAY, ir_node_get(F->m, p)->loc, 1, &p);
  if (!d) {
    F->oom = true;
    return p;
  }
  F->c->counters[FU_FUSED]++;
  return d;
}

/* ---- moving a let-bound producer to its uses ---- */

/* Where variable j of a let body is used (scan of the body in evaluation
 * order). */
typedef struct fu_uses {
  uint32_t n;
  bool ok;     /* every use is an operand the producer can be delayed into */
  bool failed; /* something before the first use can fail */
  bool seen;
  ir_ref p;    /* the producer */
} fu_uses;

/* The order in which the interpreter evaluates the children of r that are
 * evaluated at all (function arguments are applied later). */
static uint32_t fu_order(const ac_module *m, ir_ref r, uint32_t *ord) {
  const ir_node *n = ir_node_get(m, r);
  uint32_t k = 0;
  if (n->op == IR_STENCIL && n->nkids == 3) { /* the boundary value comes first */
    ord[k++] = 2;
    ord[k++] = 1;
    ord[k++] = 0;
    return k;
  }
  for (uint32_t i = 0; i < n->nkids; i++)
    ord[k++] = i;
  return k;
}

static void fu_scan(fu *F, fu_uses *u, ir_ref r, uint32_t j, unsigned depth) {
  ac_module *m = F->m;
  const ir_node *n = ir_node_get(m, r);
  ir_op op = (ir_op)n->op;
  if (!u->ok)
    return;
  if (depth > FU_MAX_DEPTH || n->op == IR_VAR) {
    u->ok = false; /* a use that is not an operand */
    return;
  }
  /* element code, a recurrence's body, conditional code: a use there would
   * move the producer to where it runs per element or maybe not at all */
  bool cond = op == IR_IF || op == IR_LAND || op == IR_LOR;
  uint32_t small[8], *ord = n->nkids + 2 <= 8 ? small : ac_alloc(m->ctx, (n->nkids + 2) * sizeof *ord);
  if (!ord) {
    F->oom = true;
    u->ok = false;
    return;
  }
  uint32_t nk = fu_order(m, r, ord);
  for (uint32_t t = 0; t < nk && u->ok; t++) {
    uint32_t i = ord[t];
    ir_ref k = ir_kid(m, r, i);
    uint32_t jj = j + ir_binders(m, r, i);
    const ir_node *kn = ir_node_get(m, k);
    bool fn = kn->op == IR_LAM || kn->op == IR_FNREF;
    if (!ir_occurs(m, k, jj)) {
      if (!u->seen && !fn && fu_fails(F, k))
        u->failed = true;
      continue;
    }
    if (fn || (op == IR_REC && i + 1 == n->nkids) || (cond && i > 0)) {
      u->ok = false;
      break;
    }
    if (kn->op == IR_VAR && kn->attr == (int64_t)jj) {
      ir_ref *kids = ac_alloc(m->ctx, (n->nkids + 1) * sizeof *kids);
      if (!kids) {
        F->oom = true;
        u->ok = false;
        break;
      }
      for (uint32_t q = 0; q < n->nkids; q++)
        kids[q] = ir_kid(m, r, q);
      kids[i] = u->p;
      u->ok = fu_fusible(F, r, kids, i, u->p) && !(u->failed && !u->seen);
      ac_free(m->ctx, kids);
      u->seen = true;
      u->n++;
      continue;
    }
    fu_scan(F, u, k, jj, depth + 1);
  }
  if (ord != small)
    ac_free(m->ctx, ord);
}

/* ---- horizontal fusion ---- */

/* Maps (or generates) a and b over the same operands, b in a's scope? */
static bool fu_same_space(fu *F, ir_ref a, ir_ref b) {
  ac_module *m = F->m;
  const ir_node *na = ir_node_get(m, a), *nb = ir_node_get(m, b);
  if (na->op != nb->op || na->nkids != nb->nkids || (na->op != IR_MAP && na->op != IR_GENERATE))
    return false;
  uint32_t fk = na->op == IR_MAP ? 0 : 1; /* the function's kid */
  for (uint32_t i = 0; i < na->nkids; i++)
    if (i != fk && !ir_equal(m, ir_kid(m, a, i), ir_kid(m, b, i)))
      return false;
  return true;
}

/* The number of parameters of element function fn (a LAM or FNREF). */
static uint32_t fu_arity(fu *F, ir_ref fn) {
  const ir_node *n = ir_node_get(F->m, fn);
  if (n->op == IR_LAM)
    return (uint32_t)n->attr;
  if (n->attr >= 0 && (uint64_t)n->attr < F->m->nfuncs)
    return F->m->funcs[n->attr].nparams;
  return 0;
}

/* The body of element function fn (kid of r) as a term under its q
 * parameters: a lambda's body, or a call of the named function. */
static ir_ref fu_fn_body(fu *F, ir_ref fn, uint32_t q) {
  ac_module *m = F->m;
  /* copies: making nodes may move the node array */
  ir_node n = *ir_node_get(m, fn);
  if (n.op == IR_LAM)
    return ir_kid(m, fn, 0);
  ir_ref small[8], *args = q <= 8 ? small : ac_alloc(m->ctx, q * sizeof *args);
  if (!args)
    return IR_NONE;
  for (uint32_t i = 0; i < q; i++)
    args[i] = ir_var(m, n.loc, q - 1 - i);
  ir_ref call = ir_node_new(m, IR_CALL, n.loc, q, args);
  if (call)
    ir_node_get(m, call)->attr = n.attr;
  if (args != small)
    ac_free(m->ctx, args);
  return call;
}

/* One map computing the group g[0..k) (maps over the same operands, all in
 * the scope of g[0]; fields[i] of them are bound, and when fields[i] > 1
 * g[i]'s function returns a tuple of that many fields which is spliced in):
 * map(|x..| (f0(x..), f1(x..), ..), operands). */
static ir_ref fu_combine(fu *F, const ir_ref *g, const uint32_t *fields, uint32_t k) {
  ac_module *m = F->m;
  ir_ref first = g[0];
  ir_node n = *ir_node_get(m, first); /* a copy: the node array may move */
  uint32_t fk = n.op == IR_MAP ? 0 : 1, q = fu_arity(F, ir_kid(m, first, fk)), total = 0;
  for (uint32_t i = 0; i < k; i++)
    total += fields[i];
  ir_ref *parts = ac_alloc(m->ctx, (total + 1) * sizeof *parts);
  ir_ref *kids = ac_alloc(m->ctx, (n.nkids + 1) * sizeof *kids);
  ir_ref r = IR_NONE;
  if (!parts || !kids)
    goto done;
  uint32_t np = 0;
  for (uint32_t i = 0; i < k; i++) {
    ir_ref b = fu_fn_body(F, ir_kid(m, g[i], fk), q);
    if (!b)
      goto done;
    if (fields[i] == 1) {
      parts[np++] = b;
      continue;
    }
    for (uint32_t f = 0; f < fields[i]; f++) /* a tuple body made by an earlier merge */
      parts[np++] = ir_kid(m, b, f);
  }
  ir_ref tup = ir_node_new(m, IR_TUPLE, n.loc, np, parts);
  ir_ref fn = ir_kid(m, first, fk);
  ir_ref lam;
  if (ir_node_get(m, fn)->op == IR_LAM) {
    lam = tup ? ps_rebuild(m, fn, 1, &tup) : IR_NONE;
  } else { /* a named function: a lambda of q parameters that calls it */
    lam = tup ? ir_node_new(m, IR_LAM, n.loc, 1, &tup) : IR_NONE;
    if (lam)
      ir_node_get(m, lam)->attr = q;
  }
  if (!lam)
    goto done;
  for (uint32_t i = 0; i < n.nkids; i++)
    kids[i] = i == fk ? lam : ir_kid(m, first, i);
  r = ps_rebuild(m, first, n.nkids, kids);
done:
  ac_free(m->ctx, parts);
  ac_free(m->ctx, kids);
  if (!r)
    F->oom = true;
  return r;
}

/* The number of bound fields a destructuring let over a merged map has,
 * when its map's function body is a tuple of exactly that many fields
 * (what fu_combine makes); 0 otherwise. */
static uint32_t fu_merged_fields(fu *F, ir_ref let) {
  ac_module *m = F->m;
  const ir_node *n = ir_node_get(m, let);
  if (n->op == IR_LET)
    return 1;
  if (n->op != IR_LETTUP)
    return 0;
  ir_ref rhs = ir_kid(m, let, 0);
  const ir_node *rn = ir_node_get(m, rhs);
  if (rn->op != IR_MAP && rn->op != IR_GENERATE)
    return 0;
  ir_ref fn = ir_kid(m, rhs, rn->op == IR_MAP ? 0 : 1);
  if (ir_node_get(m, fn)->op != IR_LAM)
    return 0;
  const ir_node *b = ir_node_get(m, ir_kid(m, fn, 0));
  return b->op == IR_TUPLE && b->nkids == (uint32_t)n->attr ? (uint32_t)n->attr : 0;
}

/* At most one of the element functions of g[0..k) can fail: computing
 * them element by element together then reports the same first error. */
static bool fu_one_may_fail(fu *F, const ir_ref *g, uint32_t k) {
  uint32_t nf = 0;
  for (uint32_t i = 0; i < k; i++) {
    const ir_node *n = ir_node_get(F->m, g[i]);
    nf += fu_lam_fails(F, ir_kid(F->m, g[i], n->op == IR_MAP ? 0 : 1));
  }
  return nf <= 1;
}

/* ---- horizontal fusion over different operands ---- */

/* How maps a and b over different operands may become one map
 * (fu_combine_apart). */
typedef enum fu_apart { FU_APART_NO, FU_APART_A_FIRST, FU_APART_B_FIRST } fu_apart;

/* May maps a and b over different operands (b evaluated right after a,
 * written in a's scope) become one map? The merged map computes a's and
 * b's elements together after one shape check over all operands, and it
 * must report what a then b would:
 *   - at most one of them has elements that can fail (computed together,
 *     the first failing element is then the same);
 *   - A FIRST, map(|ya, ys..| .., delay(a), bs..): a's operands and a's own
 *     check come first, as before; then b's operands, then the check. Once
 *     a's checks, those made while evaluating b's operands and the walk's
 *     facts (fu_fact) hold, every operand must be known to have a's extent
 *     (fu_eq), so that neither b's own check nor the merged one can fail
 *     where a and b would not; and when a's elements can fail, evaluating
 *     b's operands must not (it now happens before them);
 *   - B FIRST, map(|ys.., ya| .., bs.., delay(a)) at b's position, when
 *     b's operands cannot fail (a variable each, say: evaluating them
 *     early changes nothing) and a's elements cannot fail: the merged
 *     check compares b's operands with each other first, which is b's own
 *     check with its message, then with a, which must be sure to pass
 *     given b's check, a's checks and the facts. A conjugate-gradient step:
 *     x2 = map(.., x, p), r2 = map(.., r, ap) after a fold over
 *     map(.., p, ap).
 * Copperhead's preconditioner (A first): p_a, p_b and p_c are maps over
 * indets and one of a, b, c each, and indets = map(det_inverse, a, b, c). */
static fu_apart fu_side_by_side(fu *F, ir_ref a, ir_ref b) {
  ac_module *m = F->m;
  const ir_node *na = ir_node_get(m, a), *nb = ir_node_get(m, b);
  if (na->op != IR_MAP || nb->op != IR_MAP)
    return FU_APART_NO;
  uint32_t nka = na->nkids, nkb = nb->nkids;
  bool afail = fu_elem_fails(F, a, 0), bfail = fu_elem_fails(F, b, 0);
  if ((afail && bfail) || nkb - 1 > FU_EQ_MAX)
    return FU_APART_NO;
  fu_eq q;
  q.n = 0;
  q.full = false;
  uint32_t c = eq_operand(F, &q, ir_kid(m, a, 1), 0);
  for (uint32_t i = 2; i < nka; i++)
    eq_union(&q, c, eq_operand(F, &q, ir_kid(m, a, i), 0));
  uint32_t cb[FU_EQ_MAX];
  bool bquiet = true;
  for (uint32_t j = 1; j < nkb; j++) {
    cb[j - 1] = eq_operand(F, &q, ir_kid(m, b, j), 0);
    bquiet = bquiet && !fu_fails(F, ir_kid(m, b, j));
  }
  eq_close(F, &q);
  bool proven = true;
  for (uint32_t j = 1; j < nkb; j++)
    proven = proven && eq_same(&q, cb[j - 1], c);
  if (proven && (!afail || bquiet))
    return FU_APART_A_FIRST;
  if (!bquiet || afail)
    return FU_APART_NO;
  for (uint32_t j = 2; j < nkb; j++) /* b's own check, made first */
    eq_union(&q, cb[0], cb[j - 1]);
  eq_close(F, &q);
  return eq_same(&q, cb[0], c) ? FU_APART_B_FIRST : FU_APART_NO;
}

/* The merged map of fu_side_by_side: map(|ya, ys..| (ya, fb(ys..)),
 * delay(a), bs..) (A first) or map(|ys.., ya| (ya, fb(ys..)), bs..,
 * delay(a)) at b's position (B first). a, delayed, is evaluated as an
 * operand (its operands, its own check) and its elements are computed
 * where the merged map reads them. fields as fu_combine's: a or b may be a
 * merged map whose tuple is spliced in (ya.0, ya.1, ..). */
static ir_ref fu_combine_apart(fu *F, ir_ref a, uint32_t fields_a, ir_ref b, uint32_t fields_b,
                               fu_apart how) {
  ac_module *m = F->m;
  bool bfirst = how == FU_APART_B_FIRST;
  ir_node nb = *ir_node_get(m, b); /* a copy: the node array may move */
  ir_loc loc = bfirst ? nb.loc : ir_node_get(m, a)->loc;
  ir_ref fb = ir_kid(m, b, 0);
  uint32_t qb = fu_arity(F, fb);
  ir_ref *parts = ac_alloc(m->ctx, (fields_a + fields_b) * sizeof *parts);
  ir_ref *kids = ac_alloc(m->ctx, (nb.nkids + 1) * sizeof *kids);
  ir_sym *names = ac_alloc(m->ctx, (qb + 1) * sizeof *names);
  ir_ref r = IR_NONE;
  if (!parts || !kids || !names)
    goto done;
  /* b's body under 1 + qb parameters: A first, its own stay innermost and
   * what it uses from outside moves past ya; B first, ya is innermost and
   * everything moves by one */
  ir_ref bb = fu_fn_body(F, fb, qb);
  bb = bb ? ir_shift(m, bb, 1, bfirst ? 0 : qb) : IR_NONE;
  if (!bb)
    goto done;
  uint32_t np = 0;
  for (uint32_t f = 0; f < fields_a; f++) {
    ir_ref ya = ir_var(m, loc, bfirst ? 0 : qb);
    if (ya && fields_a > 1) {
      ya = ir_node_new(m, IR_PROJ, loc, 1, &ya);
      if (ya)
        ir_node_get(m, ya)->attr = f;
    }
    if (!ya)
      goto done;
    parts[np++] = ya;
  }
  if (fields_b == 1)
    parts[np++] = bb;
  else
    for (uint32_t f = 0; f < fields_b; f++)
      parts[np++] = ir_kid(m, bb, f);
  ir_ref tup = ir_node_new(m, IR_TUPLE, loc, np, parts);
  ir_ref lam = tup ? ir_node_new(m, IR_LAM, loc, 1, &tup) : IR_NONE;
  ir_ref da = lam ? ir_node_new(m, IR_DELAY, loc, 1, &a) : IR_NONE;
  if (!da)
    goto done;
  fb = ir_kid(m, b, 0);
  bool named = false;
  uint32_t o = bfirst ? 0 : 1; /* where b's names go; ya is unnamed */
  names[bfirst ? qb : 0] = IR_SYM_NONE;
  for (uint32_t j = 0; j < qb; j++)
    named |= (names[o + j] = ir_node_get(m, fb)->op == IR_LAM ? ir_binder_name(m, fb, 0, j)
                                                              : IR_SYM_NONE) != IR_SYM_NONE;
  uint32_t off = named ? ir_syms_push(m, 1 + qb, names) : 0;
  if (m->oom)
    goto done;
  ir_node_get(m, lam)->attr = 1 + qb;
  ir_node_get(m, lam)->names = off;
  uint32_t k = 0;
  kids[k++] = lam;
  if (!bfirst)
    kids[k++] = da;
  for (uint32_t i = 1; i < nb.nkids; i++)
    kids[k++] = ir_kid(m, b, i);
  if (bfirst)
    kids[k++] = da;
  r = ir_node_new(m, IR_MAP, loc, k, kids);
done:
  ac_free(m->ctx, parts);
  ac_free(m->ctx, kids);
  ac_free(m->ctx, names);
  if (!r)
    F->oom = true;
  return r;
}

/* let v = a; <let or destructuring let of b>; rest  with a and b maps over
 * the same operands becomes  let (v, ..) = map(|x| (fa, fb..), ops); rest. */
static ir_ref fu_merge_lets(fu *F, ir_ref let1, ir_ref rhs1, ir_ref body) {
  ac_module *m = F->m;
  const ir_node *bn = ir_node_get(m, body);
  uint32_t k2 = fu_merged_fields(F, body);
  if (!k2 || (bn->op != IR_LET && bn->op != IR_LETTUP))
    return IR_NONE;
  ir_ref rhs2 = ir_kid(m, body, 0);
  const ir_node *n1 = ir_node_get(m, rhs1), *n2 = ir_node_get(m, rhs2);
  if (n1->op != n2->op || n1->nkids != n2->nkids || ir_occurs(m, rhs2, 0)) /* b uses a */
    return IR_NONE;
  ir_ref b = ir_shift(m, rhs2, -1, 0);
  if (!b)
    return IR_NONE;
  ir_ref g[2] = {rhs1, b};
  uint32_t fields[2] = {1, k2};
  ir_ref comb;
  fu_apart how;
  if (fu_same_space(F, rhs1, b) && fu_one_may_fail(F, g, 2))
    comb = fu_combine(F, g, fields, 2);
  else if ((how = fu_side_by_side(F, rhs1, b)) != FU_APART_NO)
    comb = fu_combine_apart(F, rhs1, 1, b, k2, how);
  else
    return IR_NONE;
  ir_sym *names = ac_alloc(m->ctx, (k2 + 1) * sizeof *names);
  if (!comb || !names) {
    ac_free(m->ctx, names);
    F->oom = true;
    return IR_NONE;
  }
  names[0] = ir_binder_name(m, let1, 1, 0);
  for (uint32_t i = 0; i < k2; i++)
    names[i + 1] = ir_binder_name(m, body, 1, i);
  ir_ref kids[2] = {comb, ir_kid(m, body, 1)};
  ir_ref r = ir_node_new(m, IR_LETTUP, ir_node_get(m, let1)->loc, 2, kids);
  uint32_t off = r ? ir_syms_push(m, k2 + 1, names) : 0;
  ac_free(m->ctx, names);
  if (!r || m->oom) {
    F->oom = true;
    return IR_NONE;
  }
  ir_node_get(m, r)->attr = k2 + 1;
  ir_node_get(m, r)->names = off;
  F->c->counters[FU_HORIZONTAL]++;
  return r;
}

static ir_ref fu_merge_tuple_apart(fu *F, ir_ref t);

/* (.., map(f, ops), .., map(g, ops), ..) becomes
 * let (h0, h1) = map(|x| (f(x), g(x)), ops); (.., h0, .., h1, ..) for
 * each group of two or more maps over the same operands (first members in
 * order) such that nothing before its last member that is not in it can
 * fail; a tuple that is one group is the merged map itself. */
static ir_ref fu_merge_tuple(fu *F, ir_ref t) {
  if (F->oom)
    return t;
  ac_module *m = F->m;
  uint32_t nk = ir_node_get(m, t)->nkids;
  ir_loc loc = ir_node_get(m, t)->loc; /* nodes made below may move the array */
  ir_ref r = IR_NONE;
  ir_ref *g = ac_alloc(m->ctx, (nk + 1) * sizeof *g);
  uint32_t *pos = ac_alloc(m->ctx, (nk + 1) * sizeof *pos), *fields = NULL;
  ir_ref *kids = ac_alloc(m->ctx, (nk + 1) * sizeof *kids);
  if (!g || !pos || !kids) {
    F->oom = true;
    goto done;
  }
  for (uint32_t i = 0; i + 1 < nk && !r; i++) {
    ir_ref a = ir_kid(m, t, i);
    uint32_t k = 0;
    g[k] = a;
    pos[k++] = i;
    for (uint32_t j = i + 1; j < nk; j++)
      if (fu_same_space(F, a, ir_kid(m, t, j))) {
        g[k] = ir_kid(m, t, j);
        pos[k++] = j;
      }
    if (k < 2 || !fu_one_may_fail(F, g, k))
      continue;
    bool quiet = true; /* the others evaluated before the group's last member */
    for (uint32_t j = 0, p = 0; j < pos[k - 1] && quiet; j++) {
      if (p < k && pos[p] == j) {
        p++;
        continue;
      }
      quiet = !fu_fails(F, ir_kid(m, t, j));
    }
    if (!quiet)
      continue;
    fields = ac_alloc(m->ctx, (k + 1) * sizeof *fields);
    if (!fields) {
      F->oom = true;
      goto done;
    }
    for (uint32_t j = 0; j < k; j++)
      fields[j] = 1;
    ir_ref comb = fu_combine(F, g, fields, k);
    if (!comb)
      goto done;
    if (k == nk) { /* the whole tuple: it is the combined map's value (§2.4) */
      r = comb;
      F->c->counters[FU_HORIZONTAL] += k - 1;
      break;
    }
    for (uint32_t j = 0, p = 0; j < nk; j++) {
      if (p < k && pos[p] == j) {
        kids[j] = ir_var(m, ir_node_get(m, g[p])->loc, k - 1 - p);
        p++;
      } else {
        kids[j] = ir_shift(m, ir_kid(m, t, j), (int32_t)k, 0);
      }
      if (!kids[j]) {
        F->oom = true;
        goto done;
      }
    }
    ir_ref body = ps_rebuild(m, t, nk, kids);
    if (body) /* the next group, if any: VARs are never merged, so this ends */
      body = fu_merge_tuple(F, body);
    ir_ref lk[2] = {comb, body};
    r = body ? ir_node_new(m, IR_LETTUP, loc, 2, lk) : IR_NONE;
    if (!r) {
      F->oom = true;
      goto done;
    }
    ir_node_get(m, r)->attr = k;
    ir_node_get(m, r)->names = 0; /* no hints: the printer chooses names */
    F->c->counters[FU_HORIZONTAL] += k - 1;
  }
done:
  ac_free(m->ctx, g);
  ac_free(m->ctx, pos);
  ac_free(m->ctx, fields);
  ac_free(m->ctx, kids);
  return r ? r : F->oom ? t : fu_merge_tuple_apart(F, t);
}

/* (.., a, b, c, .., z) with a run of maps a, b, c side by side
 * (fu_side_by_side, left to right) becomes
 * let (ha, hb, hc) = map(|..| (fa, fb, fc), ops..); (.., ha, hb, hc, .., z)
 * when nothing before the run can fail (the run is now evaluated first);
 * a tuple that is one run is the merged map itself. The first run only:
 * a tuple of several runs keeps the others apart. */
static ir_ref fu_merge_tuple_apart(fu *F, ir_ref t) {
  ac_module *m = F->m;
  uint32_t nk = ir_node_get(m, t)->nkids;
  ir_loc loc = ir_node_get(m, t)->loc;
  for (uint32_t i = 0; i + 1 < nk && !F->oom; i++) {
    ir_ref comb = ir_kid(m, t, i);
    uint32_t j = i + 1;
    for (fu_apart how; j < nk && (how = fu_side_by_side(F, comb, ir_kid(m, t, j))) != FU_APART_NO;
         j++) {
      comb = fu_combine_apart(F, comb, j - i, ir_kid(m, t, j), 1, how);
      if (!comb)
        return t;
    }
    uint32_t k = j - i;
    if (k < 2) {
      if (fu_fails(F, ir_kid(m, t, i)))
        return t; /* the run would move before it */
      continue;
    }
    F->c->counters[FU_HORIZONTAL] += k - 1;
    if (k == nk) /* the whole tuple: the merged map's value (§2.4) */
      return comb;
    ir_ref *kids = ac_alloc(m->ctx, nk * sizeof *kids);
    if (!kids) {
      F->oom = true;
      return t;
    }
    for (uint32_t q = 0; q < nk; q++) {
      kids[q] = q >= i && q < j ? ir_var(m, ir_node_get(m, ir_kid(m, t, q))->loc, j - 1 - q)
                                : ir_shift(m, ir_kid(m, t, q), (int32_t)k, 0);
      if (!kids[q])
        F->oom = true;
    }
    ir_ref body = F->oom ? IR_NONE : ps_rebuild(m, t, nk, kids);
    ac_free(m->ctx, kids);
    ir_ref lk[2] = {comb, body};
    ir_ref r = body ? ir_node_new(m, IR_LETTUP, loc, 2, lk) : IR_NONE;
    if (!r) {
      F->oom = true;
      return t;
    }
    ir_node_get(m, r)->attr = k;
    ir_node_get(m, r)->names = 0;
    return r;
  }
  return t;
}

/* ---- the walk ---- */

static ir_ref fu_expr(fu *F, ir_ref e, unsigned depth);

/* let v = rhs; body: the producer moved to its uses, or merged with the
 * next let's map, or the two parts rewritten. */
/* Records the facts (fu_fact) that evaluating e establishes when it
 * succeeds: the array variables a map (delayed or not) checks have one
 * extent. Only what is always evaluated counts (not lambdas' bodies, not
 * the branches of an if, not the right operand of && or ||). Returns the
 * level of a variable known to have e's extent when e is such a map, a
 * sized array of rank 1 or a variable, else -1. */
static int64_t fu_facts_of(fu *F, ir_ref e, unsigned depth) {
  ac_module *m = F->m;
  const ir_node *n = ir_node_get(m, e);
  if (depth > 64)
    return -1;
  switch ((ir_op)n->op) {
  case IR_VAR:
    return fu_level(F, e);
  case IR_DELAY:
    return fu_facts_of(F, ir_kid(m, e, 0), depth + 1);
  case IR_MAP: {
    int64_t rep = -1;
    for (uint32_t i = 1; i < n->nkids; i++) {
      int64_t l = fu_facts_of(F, ir_kid(m, e, i), depth + 1);
      if (rep < 0)
        rep = l;
      else
        fu_fact(F, rep, l);
    }
    return rep;
  }
  case IR_SIZED: {
    int64_t r = fu_facts_of(F, ir_kid(m, e, 0), depth + 1);
    ir_ref sh = ir_kid(m, e, 1);
    ir_type elem;
    uint32_t rank = 0;
    if (ir_node_get(m, sh)->op == IR_LEN &&
        ir_ty_array_view(m->ctx, n->type, &elem, &rank) && rank == 1) {
      int64_t l = fu_level(F, ir_kid(m, sh, 0));
      fu_fact(F, r, l);
      return r >= 0 ? r : l;
    }
    return r;
  }
  case IR_IF:
  case IR_LAND:
  case IR_LOR:
    fu_facts_of(F, ir_kid(m, e, 0), depth + 1);
    return -1;
  default:
    for (uint32_t i = 0; i < n->nkids; i++)
      if (ir_binders(m, e, i) == 0)
        fu_facts_of(F, ir_kid(m, e, i), depth + 1);
    return -1;
  }
}

/* The number of binders let e introduces. */
static uint32_t fu_let_binders(fu *F, ir_ref e) {
  const ir_node *n = ir_node_get(F->m, e);
  return n->op == IR_LET ? 1 : (uint32_t)n->attr;
}

static ir_ref fu_let(fu *F, ir_ref e, unsigned depth) {
  ac_module *m = F->m;
  ir_ref rhs = fu_expr(F, ir_kid(m, e, 0), depth + 1);
  ir_ref body = ir_kid(m, e, 1);
  if (F->lets && ir_node_get(m, e)->op == IR_LET && fu_producer((ir_op)ir_node_get(m, rhs)->op)) {
    fu_uses u = {0, true, false, false, rhs};
    fu_scan(F, &u, body, 0, 0);
    bool cheap = fu_cheap(F, rhs) && !fu_elem_fails(F, rhs, 0);
    if (u.ok && u.n >= 1 && (u.n == 1 || cheap)) {
      ir_ref b = ir_subst(m, body, 0, rhs);
      if (b) {
        F->c->counters[FU_DUPLICATED] += u.n - 1;
        return fu_expr(F, b, depth + 1);
      }
      F->oom = true;
    }
  }
  size_t nf = F->nfacts;
  int64_t rep = fu_facts_of(F, rhs, 0);
  uint32_t nb = fu_let_binders(F, e);
  fu_push(F, nb);
  /* the bound array, or each field of a merged map's tuple */
  ir_ref core = rhs;
  while (ir_node_get(m, core)->op == IR_SIZED || ir_node_get(m, core)->op == IR_DELAY)
    core = ir_kid(m, core, 0);
  if (rep >= 0 && (ir_node_get(m, e)->op == IR_LET || ir_node_get(m, core)->op == IR_MAP))
    for (uint32_t i = 0; i < nb; i++)
      fu_fact(F, (int64_t)F->nenv - 1 - i, rep);
  body = fu_expr(F, body, depth + 1);
  fu_pop(F, nb);
  F->nfacts = nf;
  ir_ref kids[2] = {rhs, body};
  ir_ref r = ps_rebuild_if_changed(m, e, kids);
  if (r && ir_node_get(m, r)->op == IR_LET) {
    ir_ref merged = fu_merge_lets(F, r, rhs, body);
    if (merged)
      return merged;
  }
  return r ? r : e;
}

static ir_ref fu_expr(fu *F, ir_ref e, unsigned depth) {
  ac_module *m = F->m;
  if (!e || depth > FU_MAX_DEPTH || F->oom || m->oom)
    return e;
  const ir_node *n = ir_node_get(m, e);
  if (n->op == IR_LET || n->op == IR_LETTUP)
    return fu_let(F, e, depth);
  uint32_t nk = n->nkids;
  if (nk == 0)
    return e;
  ir_ref small[8], *kids = nk <= 8 ? small : ac_alloc(m->ctx, nk * sizeof *kids);
  if (!kids) {
    F->oom = true;
    return e;
  }
  for (uint32_t i = 0; i < nk; i++) {
    uint32_t nb = ir_binders(m, e, i);
    fu_push(F, nb);
    kids[i] = fu_expr(F, ir_kid(m, e, i), depth + 1);
    fu_pop(F, nb);
  }
  ir_op op = (ir_op)ir_node_get(m, e)->op;
  for (uint32_t i = 0; i < nk && !F->oom; i++)
    if (fu_position(op, i) != FU_NONE && fu_fusible(F, e, kids, i, kids[i]))
      kids[i] = fu_delay(F, kids[i]);
  ir_ref r = F->oom ? e : ps_rebuild_if_changed(m, e, kids);
  if (kids != small)
    ac_free(m->ctx, kids);
  if (!r) {
    F->oom = true;
    return e;
  }
  if (ir_node_get(m, r)->op == IR_TUPLE && nk >= 2)
    r = fu_merge_tuple(F, r);
  return r;
}

/* The entry point named in passes_list.h. */
ac_status ps_fuse(ps_ctx *c);
ac_status ps_fuse(ps_ctx *c) {
  ac_module *m = c->m;
  fu F = {c, m, NULL, false, false, 0, NULL, 0, 0};
  F.ffail = ac_alloc(m->ctx, m->nfuncs ? m->nfuncs : 1);
  if (!F.ffail)
    return ir_report(c->err, ir_error(c->ctx, AC_ERR_NOMEM, m, (ir_loc){0, 0}, "out of memory"),
                     AC_ERR_NOMEM);
  memset(F.ffail, 0, m->nfuncs ? m->nfuncs : 1);
  for (size_t i = 0; i < m->nfuncs && !F.oom; i++) {
    ir_func *f = &m->funcs[i];
    if (f->is_extern || !f->body)
      continue;
    /* Fusion deepens the tree (a producer moved into its use, a delay
     * around it): a body whose text would no longer parse is fused without
     * moving lets, and failing that keeps its old form. */
    uint64_t saved[PS_MAX_COUNTERS];
    memcpy(saved, c->counters, sizeof saved);
    ir_ref b = f->body;
    for (int attempt = 0; attempt < 2 && !F.oom && !m->oom; attempt++) {
      F.lets = attempt == 0;
      memcpy(c->counters, saved, sizeof saved);
      F.nenv = 0;
      F.nfacts = 0;
      fu_push(&F, f->nparams); /* the parameters: levels 0 .. */
      b = fu_expr(&F, f->body, 0);
      if (b == f->body || ps_printable(m, b))
        break;
      b = f->body;
    }
    if (F.oom || m->oom)
      break;
    if (b == f->body)
      memcpy(c->counters, saved, sizeof saved);
    m->funcs[i].body = b;
  }
  ac_free(m->ctx, F.ffail);
  ac_free(m->ctx, F.facts);
  if (F.oom || m->oom)
    return ir_report(c->err, ir_error(c->ctx, AC_ERR_NOMEM, m, (ir_loc){0, 0}, "out of memory"),
                     AC_ERR_NOMEM);
  return AC_OK;
}
