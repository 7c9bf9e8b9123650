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
} fu;

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
  case IR_BACKPERMUTE:
    return true; /* the index check */
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
    return cn->nkids == 2 && !fu_lam_fails(F, kids[0]);
  case IR_FOLD:
  case IR_SCAN_INCL:
  case IR_SCANR_INCL:
    return !fu_lam_fails(F, kids[0]);
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
  if (!b || !fu_same_space(F, rhs1, b))
    return IR_NONE;
  ir_ref g[2] = {rhs1, b};
  uint32_t fields[2] = {1, k2};
  if (!fu_one_may_fail(F, g, 2))
    return IR_NONE;
  ir_ref comb = fu_combine(F, g, fields, 2);
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
  return r ? r : t;
}

/* ---- the walk ---- */

static ir_ref fu_expr(fu *F, ir_ref e, unsigned depth);

/* let v = rhs; body: the producer moved to its uses, or merged with the
 * next let's map, or the two parts rewritten. */
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
  body = fu_expr(F, body, depth + 1);
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
  for (uint32_t i = 0; i < nk; i++)
    kids[i] = fu_expr(F, ir_kid(m, e, i), depth + 1);
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
  fu F = {c, m, NULL, false, false};
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
  if (F.oom || m->oom)
    return ir_report(c->err, ir_error(c->ctx, AC_ERR_NOMEM, m, (ir_loc){0, 0}, "out of memory"),
                     AC_ERR_NOMEM);
  return AC_OK;
}
