/* lib/passes/hoist.c: the hoist pass: array operations nested inside a
 * lambda that do not depend on the lambda's variables are computed once,
 * outside the operation that applies the lambda.
 *
 * What. A SITE is a node whose children include lambdas that run many times:
 * an array operation's function arguments (map, generate, fold, scan,
 * permute, stencil, filter, iterate, while, ...), the condition and step of
 * a scalar `loop`, a rec body. In a site's lambda body, a maximal subterm t
 * that mentions none of the variables bound by or inside the lambda, and
 * that contains an array operation, a loop, or a call of a function that
 * does, is replaced by a variable bound by a new `let` just outside the
 * site:
 *
 *   map(|x| x + fold(|a, b| a + b, 0.0, ys), xs)
 *   ==>  let hoisted = fold(|a, b| a + b, 0.0, ys); map(|x| x + hoisted, xs)
 *
 * (t loses the lambda's binders, ir_shift by -(depth + params); everything
 * else that refers outside the site gains the new binder). Equal terms at the
 * same depth share one let; a let inside the lambda whose value is hoisted
 * is substituted (it only names the new variable), which may make its uses
 * hoistable in the next round. Sites are visited bottom-up, so a let made
 * at an inner site is itself a candidate at the enclosing one: terms move
 * outward as far as they are independent. A delay(p) that moves (fuse's
 * hint, docs/language.md §7.15) leaves as p: built once, instead of being
 * recomputed inside a consumer that runs per element.
 *
 * Why. Barracuda (seeds/001 §7, "Hoisting Nested Array Operations"):
 * kernels contain only sequential code, so a nested array operation left in
 * a lambda runs as a loop in every thread; when it does not depend on the
 * element, it is computed once instead (add_sum: one fold kernel and one map
 * kernel, not a fold per element). Operations that do depend on the element
 * stay, and the sequentialise pass reports them.
 *
 * Errors and termination (docs/language.md §6.3, §8). Moving t out of a
 * lambda evaluates it once, before the site, whether or not the lambda is
 * ever applied. That is exact when t can neither fail nor loop, and such
 * terms are hoisted from any position in the body, even a conditional one
 * (they then cost at most one evaluation the original program did not make,
 * and their cost is bounded by the sizes of arrays that exist). The
 * judgement (hs_node_fails) is more precise than ps_may_fail for array
 * operations that check nothing: map of one array, fold, the scans, filter,
 * stencil, reverse and transpose of a plain (non-tuple) array never fail,
 * since their results are no larger than an argument that already exists;
 * it is stricter for len/shape of a tuple of arrays, which check that the
 * arrays agree. A term that MAY fail is hoisted only out of the function of
 * a map over one plain array, and only when it is the first thing the body
 * could fail at: it is evaluated on every application (not under an `if`
 * branch, the right of `&&`/`||`, or a nested lambda), nothing the
 * interpreter evaluates before it in the body can fail, and its ancestors
 * check nothing before evaluating it. It is then guarded by the map's
 * emptiness, with the array bound first when it is not a variable:
 *
 *   map(|x| x + fold(|a, b| a + b, 0, slice(ys, 1, k)), xs)
 *   ==>  let hoisted = if len(xs) > 0 { fold(.., slice(ys, 1, k)) } else { 0 };
 *        map(|x| x + hoisted, xs)
 *
 * so it runs exactly when the original would have run it first, and any
 * error is the same one, at the same place. Elsewhere (generate, whose
 * allocation check comes before the first application; folds, whose rows
 * may all be empty; loops, which may not step) a failing term stays.
 *
 * Requires a verified module (types on every node). Preserves the meaning
 * the interpreter defines, results bit for bit and which error a failing
 * program reports; moved terms have their literals pinned to their types
 * (the verifier retypes unsuffixed literals from their context); a function
 * whose body would grow deeper than the parser's limit is left as it was.
 * Counters: "hoisted" (moves of a term out of a lambda: a term leaving two
 * nested lambdas counts twice), "guarded" (of those, the moves behind an
 * emptiness test).
 */
#include "passes/pass.h"

#include <string.h>

/* Recursion bound of every walk (deeper than any verified tree plus the
 * lets this pass adds). Deeper nodes are left alone. */
#define HS_MAX_DEPTH 6000u
/* Hoists at one site; more are left for another run of the pass. */
#define HS_MAX_ROUNDS 64u
/* Sites with more nodes than this (shared subtrees counted at each use) are
 * left alone, which bounds the work of the walks below. */
#define HS_MAX_SITE 200000u
/* Free variables are tracked exactly below this index (a bit mask). */
#define HS_MASK_BITS 64u

enum { HS_HOISTED, HS_GUARDED };

/* Facts about a node that depend on the node alone (not on where it
 * occurs), so they are computed once per node and kept for the pass. */
enum {
  HI_KNOWN = 1,     /* computed */
  HI_BIG = 2,       /* may have a free variable >= HS_MASK_BITS */
  HI_FAILS = 4,     /* evaluating it may fail or not end */
  HI_WORTH = 8,     /* contains an array operation, a loop or a heavy call */
  HI_NODEFAILS = 16 /* the node itself (not counting its children) may fail */
};
typedef struct hs_info {
  uint64_t fv; /* bit j: variable j (relative to the node) may occur free */
  uint8_t flags;
} hs_info;

/* Per function: facts about its body, for calls and function references. */
enum { HF_VISITING = 1, HF_DONE = 2, HF_FAILS = 4, HF_HEAVY = 8 };

typedef struct hs {
  ac_module *m;
  ac_context *ctx;
  hs_info *info; /* by node; grown to m->nnodes before each query */
  size_t ninfo;
  /* hs_walk: node of the function's old body -> new node, valid where
   * mstamp is the current function's (one allocation for all functions:
   * clearing a module-sized table per function was quadratic) */
  ir_ref *memo;
  uint32_t *mstamp;
  size_t nmemo, capmemo, capstamp;
  uint32_t mcur;
  uint8_t *fn; /* HF_* by function */
  uint64_t hoisted, guarded; /* of the current function */
  ir_sym name_val, name_arr;
  ir_type t_i64, t_bool;
  bool oom;    /* out of memory: the pass fails */
  bool giveup; /* a walk went too deep: the current site is left alone */
} hs;

/* A term to hoist, where it occurs in a site's lambda body. */
typedef struct hs_cand {
  ir_ref t;
  uint32_t key;  /* binders between t and the site: depth in the body + parameters */
  bool guarded;  /* may fail: evaluated behind the map's emptiness test */
  ir_sym name;   /* the name of the let whose value t is, if any */
} hs_cand;

/* Position flags of hs_find. */
enum {
  HP_UNCOND = 1, /* evaluated on every application of the lambda */
  HP_CLEAN = 2,  /* nothing evaluated before it in the body can fail */
  HP_GUARD = 4   /* the site can guard a failing term (map of one array) */
};

/* ---- facts about nodes ---- */

static ir_typeinfo hs_ty(const hs *h, ir_ref r) {
  return ir_ty_info(h->ctx, ir_node_get(h->m, r)->type);
}

/* A plain array: not a tuple of arrays, whose use as an array checks that
 * the arrays agree, and with a known type. */
static bool hs_plain(const hs *h, ir_ref r) {
  return r && ir_node_get(h->m, r)->type != IR_TY_NONE && hs_ty(h, r).kind == TK_ARRAY;
}

static hs_info hs_compute(hs *h, ir_ref r, uint32_t depth);

/* Facts about function f's body (a call of it, or its use as a lambda). */
static uint8_t hs_fn(hs *h, int64_t f, uint32_t depth) {
  const ac_module *m = h->m;
  if (f < 0 || (uint64_t)f >= m->nfuncs || !m->funcs[f].body || m->funcs[f].is_extern)
    return HF_DONE | HF_FAILS; /* an extern is a black box */
  uint8_t st = h->fn[f];
  if (st & HF_DONE)
    return st;
  if (st & HF_VISITING) /* the call graph is acyclic; be safe anyway */
    return HF_DONE | HF_FAILS;
  h->fn[f] = HF_VISITING;
  hs_info b = hs_compute(h, m->funcs[f].body, depth + 1);
  st = HF_DONE;
  if (b.flags & HI_FAILS)
    st |= HF_FAILS;
  if (b.flags & HI_WORTH)
    st |= HF_HEAVY;
  h->fn[f] = st;
  return st;
}

/* Whether node r itself may report a runtime error or not end, once its
 * children are evaluated (docs/language.md §8). */
static bool hs_node_fails(hs *h, ir_ref r, uint32_t depth) {
  const ir_node *n = ir_node_get(h->m, r);
  ir_op op = (ir_op)n->op;
  ir_ref k0 = n->nkids > 0 ? ir_kid(h->m, r, 0) : IR_NONE;
  ir_ref k1 = n->nkids > 1 ? ir_kid(h->m, r, 1) : IR_NONE;
  switch (op) {
  case IR_VAR: case IR_LIT: case IR_TUPLE: case IR_PROJ: case IR_LET: case IR_LETTUP:
  case IR_IF: case IR_LAM: case IR_CAST:
  case IR_ARRLIT: /* extents fixed when compiling */
  case IR_DELAY:  /* its operand's value (docs/language.md §7.15) */
  case IR_TILED:  /* likewise (§7.16) */
  case IR_SIZED:  /* e (§7.17); its shape is not evaluated */
    return false;
  case IR_CALL:
  case IR_FNREF: /* its body runs wherever the operation applies it */
    return (hs_fn(h, n->attr, depth) & HF_FAILS) != 0;
  case IR_LEN:
  case IR_SHAPE:
    return !hs_plain(h, k0);
  case IR_INDEX: /* a window read never fails: the boundary decides */
    return !(k0 && ir_node_get(h->m, k0)->type != IR_TY_NONE && hs_ty(h, k0).kind == TK_WINDOW);
  /* Results no larger than an argument that exists, and no checks on a
   * plain array: nothing to report (their functions are children). */
  case IR_MAP:
    return !(n->nkids == 2 && hs_plain(h, k1));
  case IR_FOLD:
  case IR_SCAN:
  case IR_SCANR:
    return !(n->nkids == 3 && hs_plain(h, ir_kid(h->m, r, 2)));
  case IR_SCAN_INCL:
  case IR_SCANR_INCL:
  case IR_FILTER:
  case IR_STENCIL: /* the array is kid 1, the boundary value kid 2 */
    return !hs_plain(h, k1);
  case IR_REVERSE:
  case IR_TRANSPOSE:
    return !hs_plain(h, k0);
  default:
    /* operators and math builtins never fail (x/0 == 0, NaN results) */
    if (ir_op_is_scalar(op))
      return false;
    /* indexing, loops (they may not end; iterate's count is unbounded),
     * rec, and operations with extents, bounds or index checks */
    return true;
  }
}

static bool hs_node_worth(hs *h, ir_ref r, uint32_t depth) {
  const ir_node *n = ir_node_get(h->m, r);
  if (n->op == IR_ARRLIT && n->nkids == 0) /* its type is its context's */
    return false;
  if (ps_is_array_op(h->m, r) || n->op == IR_LOOP)
    return true;
  return n->op == IR_CALL && (hs_fn(h, n->attr, depth) & HF_HEAVY);
}

/* Computes (and memoises) the facts of r. h->info must already cover every
 * node (hs_info_of), so that no reallocation happens while recursing. */
static hs_info hs_compute(hs *h, ir_ref r, uint32_t depth) {
  if (h->info[r].flags & HI_KNOWN)
    return h->info[r];
  hs_info res = {~(uint64_t)0, HI_KNOWN | HI_BIG | HI_FAILS | HI_NODEFAILS};
  if (depth > HS_MAX_DEPTH) /* "depends on everything, may fail": hoists nothing */
    return res;
  const ir_node *n = ir_node_get(h->m, r);
  res.fv = 0;
  res.flags = HI_KNOWN;
  if (n->op == IR_VAR) {
    if ((uint64_t)n->attr < HS_MASK_BITS)
      res.fv = (uint64_t)1 << n->attr;
    else
      res.flags |= HI_BIG;
  }
  if (hs_node_fails(h, r, depth))
    res.flags |= HI_FAILS | HI_NODEFAILS;
  if (hs_node_worth(h, r, depth))
    res.flags |= HI_WORTH;
  for (uint32_t i = 0; i < n->nkids; i++) {
    ir_ref k = ir_kid(h->m, r, i);
    if (!k)
      continue;
    hs_info ki = hs_compute(h, k, depth + 1);
    uint32_t b = ir_binders(h->m, r, i);
    res.flags |= ki.flags & (HI_FAILS | HI_WORTH);
    if (b < HS_MASK_BITS)
      res.fv |= ki.fv >> b;
    if (ki.flags & HI_BIG) {
      /* a variable >= 64 in the kid is >= 64 - b here: mark that range */
      res.flags |= HI_BIG;
      if (b >= HS_MASK_BITS)
        res.fv = ~(uint64_t)0;
      else if (b > 0)
        res.fv |= ~(uint64_t)0 << (HS_MASK_BITS - b);
    }
  }
  h->info[r] = res;
  return res;
}

static hs_info hs_info_of(hs *h, ir_ref r) {
  size_t old = h->ninfo;
  if (h->m->nnodes > old) {
    if (!ac_grow(h->ctx, (void **)&h->info, &h->ninfo, h->m->nnodes, sizeof *h->info)) {
      h->oom = true;
      hs_info none = {~(uint64_t)0, HI_KNOWN | HI_BIG | HI_FAILS | HI_NODEFAILS};
      return none;
    }
    memset(h->info + old, 0, (h->ninfo - old) * sizeof *h->info);
  }
  return hs_compute(h, r, 0);
}

/* No free variable of r below `key` (relative to r): r does not depend on
 * the `key` innermost binders around it. */
static bool hs_indep(hs_info in, uint32_t key) {
  if (key > HS_MASK_BITS)
    return false; /* not tracked: keep it */
  uint64_t low = key == HS_MASK_BITS ? ~(uint64_t)0 : ((uint64_t)1 << key) - 1;
  return (in.fv & low) == 0;
}

/* No free variable of r at or above `base`: shifting changes nothing. */
static bool hs_closed_below(hs_info in, uint32_t base) {
  if (in.flags & HI_BIG)
    return false;
  return base >= HS_MASK_BITS || (in.fv >> base) == 0;
}

/* ---- finding a candidate ---- */

/* The interpreter's order of evaluation of r's children: kid order, except
 * that stencil evaluates its boundary value (kid 2) before its array. */
static uint32_t hs_eval_kid(const ir_node *n, uint32_t j) {
  if (n->op == IR_STENCIL && n->nkids == 3 && j > 0)
    return j == 1 ? 2 : 1;
  return j;
}

/* Kid i is evaluated whenever r is (lambdas are handled by the caller). */
static bool hs_uncond(const ir_node *n, uint32_t i) {
  switch ((ir_op)n->op) {
  case IR_IF:
  case IR_LAND:
  case IR_LOR:
    return i == 0;
  case IR_REC:
    return i + 1 < n->nkids;
  default:
    return true;
  }
}

/* The first candidate under r in evaluation order. `key` counts the
 * binders between r and the site; `pos` is r's position (HP_*). */
static bool hs_find(hs *h, ir_ref r, uint32_t key, unsigned pos, ir_sym name, uint32_t depth,
                    hs_cand *out) {
  if (depth > HS_MAX_DEPTH || h->oom)
    return false;
  const ir_node *n = ir_node_get(h->m, r);
  if (n->op == IR_LAM) /* a nested function: runs any number of times */
    return hs_find(h, ir_kid(h->m, r, 0), key + (uint32_t)n->attr, 0, IR_SYM_NONE, depth + 1,
                   out);
  if (n->op == IR_FNREF)
    return false;
  hs_info in = hs_info_of(h, r);
  if (!(in.flags & HI_WORTH)) /* no array operation, loop or heavy call below */
    return false;
  if (hs_indep(in, key)) {
    bool fails = (in.flags & HI_FAILS) != 0;
    unsigned all = HP_UNCOND | HP_CLEAN | HP_GUARD;
    if (!fails || (pos & all) == all) {
      *out = (hs_cand){r, key, fails, name};
      return true;
    }
  }
  /* A child is clean when r checks nothing before evaluating it (r cannot
   * fail, or fails only after all its children: an index, a call) and no
   * child evaluated before it can fail. */
  bool anc = (pos & HP_CLEAN) &&
             (!(in.flags & HI_NODEFAILS) || n->op == IR_INDEX || n->op == IR_CALL);
  bool before_ok = true;
  for (uint32_t j = 0; j < n->nkids; j++) {
    uint32_t i = hs_eval_kid(n, j);
    ir_ref k = ir_kid(h->m, r, i);
    if (!k)
      continue;
    unsigned kpos = pos & HP_GUARD;
    if ((pos & HP_UNCOND) && hs_uncond(n, i))
      kpos |= HP_UNCOND;
    if (anc && before_ok)
      kpos |= HP_CLEAN;
    ir_sym kname = n->op == IR_LET && i == 0 ? ir_binder_name(h->m, r, 1, 0) : IR_SYM_NONE;
    if (hs_find(h, k, key + ir_binders(h->m, r, i), kpos, kname, depth + 1, out))
      return true;
    /* functions are applied after every plain argument is evaluated */
    ir_op kop = (ir_op)ir_node_get(h->m, k)->op;
    if (kop != IR_LAM && kop != IR_FNREF && (hs_info_of(h, k).flags & HI_FAILS))
      before_ok = false;
  }
  return false;
}

/* Can a failing term in the lambda of `site` be guarded by its emptiness? */
static bool hs_guardable(const hs *h, ir_ref site) {
  const ir_node *n = ir_node_get(h->m, site);
  return n->op == IR_MAP && n->nkids == 2 && hs_plain(h, ir_kid(h->m, site, 1));
}

/* The first candidate in the lambdas (and rec body) of site. */
static bool hs_site_find(hs *h, ir_ref site, hs_cand *out) {
  const ir_node *n = ir_node_get(h->m, site);
  uint32_t nk = n->nkids;
  for (uint32_t i = 0; i < nk; i++) {
    ir_ref k = ir_kid(h->m, site, i);
    if (!k)
      continue;
    const ir_node *kn = ir_node_get(h->m, k);
    if (n->op == IR_REC && i + 1 == nk) {
      if (hs_find(h, k, (uint32_t)n->attr + 1, 0, IR_SYM_NONE, 1, out))
        return true;
    } else if (kn->op == IR_LAM) {
      unsigned pos = HP_UNCOND | HP_CLEAN | (i == 0 && hs_guardable(h, site) ? HP_GUARD : 0);
      if (hs_find(h, ir_kid(h->m, k, 0), (uint32_t)kn->attr, pos, IR_SYM_NONE, 1, out))
        return true;
    }
  }
  return false;
}

static bool hs_is_site(const hs *h, ir_ref r) {
  const ir_node *n = ir_node_get(h->m, r);
  if (n->op == IR_REC)
    return true;
  for (uint32_t i = 0; i < n->nkids; i++) {
    ir_ref k = ir_kid(h->m, r, i);
    if (k && ir_node_get(h->m, k)->op == IR_LAM)
      return true;
  }
  return false;
}

/* ---- building ---- */

static ir_ref hs_node(hs *h, ir_op op, ir_loc loc, ir_type t, int64_t attr, uint32_t nk,
                      const ir_ref *kids) {
  ir_ref r = ir_node_new(h->m, op, loc, nk, kids);
  if (!r) {
    h->oom = true;
    return IR_NONE;
  }
  ir_node *n = ir_node_get(h->m, r);
  n->type = t;
  n->attr = attr;
  return r;
}

static ir_ref hs_var(hs *h, ir_loc loc, ir_type t, uint32_t index) {
  return hs_node(h, IR_VAR, loc, t, index, 0, NULL);
}

/* The literal 0 (false, 0.0) of scalar type t: all bits clear. */
static ir_ref hs_zero(hs *h, ir_loc loc, ir_type t) {
  ir_litval v;
  memset(&v, 0, sizeof v);
  ir_ref r = ir_lit_typed(h->m, loc, t, v);
  if (!r)
    h->oom = true;
  return r;
}

/* A value of type t that costs nothing and cannot fail: the else branch of
 * a guard, never used (the lambda it stands in for is never applied). */
static ir_ref hs_dummy(hs *h, ir_loc loc, ir_type t, uint32_t depth) {
  ir_typeinfo ti = ir_ty_info(h->ctx, t);
  if (depth > HS_MAX_DEPTH) {
    h->giveup = true;
    return IR_NONE;
  }
  if (ti.kind == TK_SCALAR)
    return hs_zero(h, loc, t);
  if (ti.kind == TK_ARRAY) {
    ir_type elem = ir_ty_scalar(h->ctx, ti.sc);
    uint32_t rank = ti.rank;
    ir_ref kids[2];
    kids[1] = hs_zero(h, loc, elem);
    if (rank == 1) {
      kids[0] = hs_zero(h, loc, h->t_i64);
    } else {
      ir_ref *ext = ac_alloc(h->ctx, rank * sizeof *ext);
      ir_type *ets = ac_alloc(h->ctx, rank * sizeof *ets);
      kids[0] = IR_NONE;
      if (ext && ets) {
        for (uint32_t d = 0; d < rank; d++) {
          ext[d] = hs_zero(h, loc, h->t_i64);
          ets[d] = h->t_i64;
        }
        kids[0] = h->oom ? IR_NONE
                         : hs_node(h, IR_TUPLE, loc, ir_ty_tuple(h->ctx, rank, ets), 0, rank, ext);
      } else {
        h->oom = true;
      }
      ac_free(h->ctx, ext);
      ac_free(h->ctx, ets);
    }
    if (h->oom)
      return IR_NONE;
    return hs_node(h, IR_FILL, loc, t, 0, 2, kids);
  }
  if (ti.kind == TK_TUPLE) {
    uint32_t nf = ti.n;
    /* copy the fields: interning types (above) may move ti.fields */
    ir_type *fs = ac_alloc(h->ctx, (nf ? nf : 1) * sizeof *fs);
    ir_ref *kids = ac_alloc(h->ctx, (nf ? nf : 1) * sizeof *kids);
    ir_ref res = IR_NONE;
    if (fs && kids) {
      memcpy(fs, ti.fields, nf * sizeof *fs);
      bool ok = true;
      for (uint32_t i = 0; i < nf && ok; i++)
        ok = (kids[i] = hs_dummy(h, loc, fs[i], depth + 1)) != IR_NONE;
      if (ok)
        res = hs_node(h, IR_TUPLE, loc, t, 0, nf, kids);
    } else {
      h->oom = true;
    }
    ac_free(h->ctx, fs);
    ac_free(h->ctx, kids);
    return res;
  }
  h->giveup = true; /* windows and functions are not values to hoist */
  return IR_NONE;
}

/* `len(a) > 0` (rank 1) or `shape(a).0 > 0 && ...`: the map over the plain
 * array variable `a` applies its function at least once. */
static ir_ref hs_nonempty(hs *h, ir_ref a, ir_loc loc) {
  ir_typeinfo ti = hs_ty(h, a);
  uint32_t rank = ti.rank;
  ir_ref shape = IR_NONE, cond = IR_NONE;
  if (rank > 1) {
    ir_type *ets = ac_alloc(h->ctx, rank * sizeof *ets);
    if (!ets) {
      h->oom = true;
      return IR_NONE;
    }
    for (uint32_t d = 0; d < rank; d++)
      ets[d] = h->t_i64;
    shape = hs_node(h, IR_SHAPE, loc, ir_ty_tuple(h->ctx, rank, ets), 0, 1, &a);
    ac_free(h->ctx, ets);
  }
  for (uint32_t d = rank; d-- > 0 && !h->oom;) {
    ir_ref ext = rank == 1 ? hs_node(h, IR_LEN, loc, h->t_i64, 0, 1, &a)
                           : hs_node(h, IR_PROJ, loc, h->t_i64, d, 1, &shape);
    ir_ref cmp[2] = {ext, hs_zero(h, loc, h->t_i64)};
    ir_ref gt = h->oom ? IR_NONE : hs_node(h, IR_GT, loc, h->t_bool, 0, 2, cmp);
    ir_ref both[2] = {gt, cond};
    cond = cond == IR_NONE ? gt : h->oom ? IR_NONE : hs_node(h, IR_LAND, loc, h->t_bool, 0, 2, both);
  }
  return h->oom ? IR_NONE : cond;
}

/* r with every literal's type pinned: the verifier types an unsuffixed
 * literal from its context, and a moved term loses its context. */
static ir_ref hs_pin(hs *h, ir_ref r, uint32_t depth) {
  if (depth > HS_MAX_DEPTH) {
    h->giveup = true;
    return IR_NONE;
  }
  const ir_node *n = ir_node_get(h->m, r);
  if (n->op == IR_LIT) {
    if ((n->flags & IR_F_SUFFIX) || n->type == IR_TY_NONE)
      return r;
    ir_ref p = ps_rebuild(h->m, r, 0, NULL);
    if (!p) {
      h->oom = true;
      return IR_NONE;
    }
    ir_node *pn = ir_node_get(h->m, p);
    pn->flags = (uint16_t)((pn->flags | IR_F_SUFFIX) & ~IR_F_CTX);
    return p;
  }
  uint32_t nk = n->nkids;
  if (nk == 0)
    return r;
  ir_ref small[8], *kids = nk <= 8 ? small : ac_alloc(h->ctx, nk * sizeof *kids);
  ir_ref res = IR_NONE;
  if (!kids) {
    h->oom = true;
    return IR_NONE;
  }
  bool ok = true;
  for (uint32_t i = 0; i < nk && ok; i++) {
    ir_ref k = ir_kid(h->m, r, i);
    kids[i] = k ? hs_pin(h, k, depth + 1) : IR_NONE;
    ok = !k || kids[i];
  }
  if (ok && !(res = ps_rebuild_if_changed(h->m, r, kids)))
    h->oom = true;
  if (kids != small)
    ac_free(h->ctx, kids);
  return res;
}

/* c's term at this position: the same depth and the same structure. */
static bool hs_same(hs *h, const hs_cand *c, ir_ref r, uint32_t base) {
  if (base != c->key)
    return false;
  return r == c->t || ((hs_info_of(h, r).flags & HI_WORTH) && ir_equal(h->m, r, c->t));
}

/* r (with `base` binders between it and the site) as it reads under one
 * more binder outside the site, that binder standing for c's term. */
static ir_ref hs_replace(hs *h, const hs_cand *c, ir_ref r, uint32_t base, uint32_t depth) {
  if (depth > HS_MAX_DEPTH) {
    h->giveup = true;
    return IR_NONE;
  }
  /* a copy: making nodes may move the arena */
  const ir_node nd = *ir_node_get(h->m, r), *n = &nd;
  ir_type tt = ir_node_get(h->m, c->t)->type;
  if (hs_same(h, c, r, base))
    return hs_var(h, n->loc, tt, base);
  hs_info in = hs_info_of(h, r);
  if (!(in.flags & HI_WORTH) && hs_closed_below(in, base))
    return r;
  if (n->op == IR_VAR)
    return (uint64_t)n->attr >= base ? hs_var(h, n->loc, n->type, (uint32_t)n->attr + 1) : r;
  if (n->op == IR_LET && hs_same(h, c, ir_kid(h->m, r, 0), base)) {
    /* `let y = t; b`: y only names the new variable */
    ir_ref b = hs_replace(h, c, ir_kid(h->m, r, 1), base + 1, depth + 1);
    ir_ref v = b ? hs_var(h, n->loc, tt, base) : IR_NONE;
    ir_ref s = v ? ir_subst(h->m, b, 0, v) : IR_NONE;
    if (v && !s)
      h->oom = true;
    return s;
  }
  uint32_t nk = n->nkids;
  ir_ref small[8], *kids = nk <= 8 ? small : ac_alloc(h->ctx, nk * sizeof *kids);
  ir_ref res = IR_NONE;
  if (!kids) {
    h->oom = true;
    return IR_NONE;
  }
  bool ok = true;
  for (uint32_t i = 0; i < nk && ok; i++) {
    ir_ref k = ir_kid(h->m, r, i);
    kids[i] = k ? hs_replace(h, c, k, base + ir_binders(h->m, r, i), depth + 1) : IR_NONE;
    ok = !k || kids[i];
  }
  if (ok && !(res = ps_rebuild_if_changed(h->m, r, kids)))
    h->oom = true;
  if (kids != small)
    ac_free(h->ctx, kids);
  return res;
}

/* The site under one more binder outside it, with c's term replaced by it
 * in every lambda (and the rec body). */
static ir_ref hs_rebuild_site(hs *h, ir_ref site, const hs_cand *c) {
  const ir_node nd = *ir_node_get(h->m, site), *n = &nd; /* the arena may move */
  uint32_t nk = n->nkids;
  ir_ref small[8], *kids = nk <= 8 ? small : ac_alloc(h->ctx, nk * sizeof *kids);
  ir_ref res = IR_NONE;
  if (!kids) {
    h->oom = true;
    return IR_NONE;
  }
  bool ok = true;
  for (uint32_t i = 0; i < nk && ok; i++) {
    ir_ref k = ir_kid(h->m, site, i);
    if (!k) {
      kids[i] = IR_NONE;
      continue;
    }
    ir_node kn = *ir_node_get(h->m, k);
    if (n->op == IR_REC && i + 1 == nk) {
      kids[i] = hs_replace(h, c, k, (uint32_t)n->attr + 1, 1);
    } else if (kn.op == IR_LAM) {
      ir_ref body = hs_replace(h, c, ir_kid(h->m, k, 0), (uint32_t)kn.attr, 1);
      kids[i] = body ? ps_rebuild_if_changed(h->m, k, &body) : IR_NONE;
    } else {
      kids[i] = ir_shift(h->m, k, 1, 0);
    }
    ok = kids[i] != IR_NONE;
  }
  if (ok)
    res = ps_rebuild(h->m, site, nk, kids);
  if (!res && !h->giveup)
    h->oom = true;
  if (kids != small)
    ac_free(h->ctx, kids);
  return res;
}

/* `let NAME = v; body`, where v may itself be a chain of lets: those are
 * floated out first (`let y = a; let x = b; body`), an exact rewrite that
 * keeps the order of evaluation and makes the result read as a sequence. */
static ir_ref hs_let(hs *h, ir_ref v, ir_sym name, ir_ref body, ir_loc loc, uint32_t depth) {
  const ir_node *vn = ir_node_get(h->m, v);
  if ((vn->op == IR_LET || vn->op == IR_LETTUP) && depth < HS_MAX_DEPTH) {
    uint32_t nb = ir_binders(h->m, v, 1);
    ir_ref sb = ir_shift(h->m, body, (int32_t)nb, 1);
    ir_ref in = sb ? hs_let(h, ir_kid(h->m, v, 1), name, sb, loc, depth + 1) : IR_NONE;
    ir_ref kids[2] = {ir_kid(h->m, v, 0), in};
    ir_ref r = in ? ps_rebuild(h->m, v, 2, kids) : IR_NONE;
    if (r)
      ir_node_get(h->m, r)->type = ir_node_get(h->m, body)->type;
    else
      h->oom = true;
    return r;
  }
  ir_ref kids[2] = {v, body};
  ir_ref r = hs_node(h, IR_LET, loc, ir_node_get(h->m, body)->type, 0, 2, kids);
  if (r) {
    uint32_t off = ir_syms_push(h->m, 1, &name);
    if (!off)
      h->oom = true;
    ir_node_get(h->m, r)->names = off;
  }
  return h->oom ? IR_NONE : r;
}

/* Hoists what can be hoisted out of site; returns the site itself when
 * nothing moves (or a walk gave up), else the lets around the new site. */
static ir_ref hs_site(hs *h, ir_ref site) {
  if (ps_size(h->m, site, HS_MAX_SITE) >= HS_MAX_SITE)
    return site;
  ir_ref vals[HS_MAX_ROUNDS];
  ir_sym names[HS_MAX_ROUNDS];
  ir_loc locs[HS_MAX_ROUNDS];
  uint32_t nv = 0;
  uint64_t hoisted = 0, guarded = 0;
  ir_ref cur = site;
  h->giveup = false;
  while (nv < HS_MAX_ROUNDS && !h->oom && !h->giveup) {
    hs_cand c;
    if (!hs_site_find(h, cur, &c))
      break;
    ir_loc sloc = ir_node_get(h->m, cur)->loc;
    ir_ref arr = c.guarded ? ir_kid(h->m, cur, 1) : IR_NONE;
    ir_ref val, next;
    if (c.guarded && ir_node_get(h->m, arr)->op != IR_VAR) {
      /* bind the map's array first: it is evaluated before the function
       * runs, and the guard reads its extents */
      ir_ref kids[2] = {ir_shift(h->m, ir_kid(h->m, cur, 0), 1, 0),
                        hs_var(h, sloc, ir_node_get(h->m, arr)->type, 0)};
      val = arr;
      next = kids[0] && kids[1] ? ps_rebuild(h->m, cur, 2, kids) : IR_NONE;
      names[nv] = h->name_arr;
      locs[nv] = ir_node_get(h->m, arr)->loc;
    } else {
      ir_loc tloc = ir_node_get(h->m, c.t)->loc;
      /* a delayed producer that moves is built once, as an array, rather
       * than computed inside a consumer that runs per element */
      ir_ref src = ir_node_get(h->m, c.t)->op == IR_DELAY ? ir_kid(h->m, c.t, 0) : c.t;
      ir_ref v = ir_shift(h->m, src, -(int32_t)c.key, 0);
      val = v ? hs_pin(h, v, 0) : IR_NONE;
      if (val && c.guarded) {
        ir_ref g[3] = {hs_nonempty(h, arr, sloc), val,
                       hs_dummy(h, tloc, ir_node_get(h->m, c.t)->type, 0)};
        val = g[0] && g[2] ? hs_node(h, IR_IF, tloc, ir_node_get(h->m, c.t)->type, 0, 3, g)
                           : IR_NONE;
      }
      next = val ? hs_rebuild_site(h, cur, &c) : IR_NONE;
      names[nv] = c.name ? c.name : h->name_val;
      locs[nv] = tloc;
      hoisted++;
      guarded += c.guarded;
    }
    if (!val || !next) {
      if (!h->oom)
        h->giveup = true;
      break;
    }
    vals[nv++] = val;
    cur = next;
  }
  if (h->oom || h->giveup || nv == 0)
    return site;
  ir_ref res = cur;
  for (uint32_t i = nv; i-- > 0 && res;)
    res = hs_let(h, vals[i], names[i], res, locs[i], 0);
  if (!res)
    return site;
  h->hoisted += hoisted;
  h->guarded += guarded;
  return res;
}

/* ---- the walk ---- */

/* Bottom-up: inner sites first, so what they hoist can move further out. */
static ir_ref hs_walk(hs *h, ir_ref r, uint32_t depth) {
  if (r < h->nmemo && h->mstamp[r] == h->mcur)
    return h->memo[r];
  if (depth > HS_MAX_DEPTH || h->oom)
    return r;
  uint32_t nk = ir_node_get(h->m, r)->nkids;
  ir_ref res = r;
  if (nk) {
    ir_ref small[8], *kids = nk <= 8 ? small : ac_alloc(h->ctx, nk * sizeof *kids);
    if (!kids) {
      h->oom = true;
      return r;
    }
    for (uint32_t i = 0; i < nk; i++) {
      ir_ref k = ir_kid(h->m, r, i);
      kids[i] = k ? hs_walk(h, k, depth + 1) : IR_NONE;
    }
    res = h->oom ? r : ps_rebuild_if_changed(h->m, r, kids);
    if (kids != small)
      ac_free(h->ctx, kids);
    if (!res) {
      h->oom = true;
      return r;
    }
  }
  if (hs_is_site(h, res))
    res = hs_site(h, res);
  if (r < h->nmemo) {
    h->memo[r] = res;
    h->mstamp[r] = h->mcur;
  }
  return res;
}

/* The entry point (passes_list.h registers it). */
ac_status ps_hoist(ps_ctx *c);
ac_status ps_hoist(ps_ctx *c) {
  ac_module *m = c->m;
  hs h;
  memset(&h, 0, sizeof h);
  h.m = m;
  h.ctx = c->ctx;
  h.name_val = ir_sym_intern(h.ctx, "hoisted", 7);
  h.name_arr = ir_sym_intern(h.ctx, "arr", 3);
  h.t_i64 = ir_ty_scalar(h.ctx, AC_I64);
  h.t_bool = ir_ty_scalar(h.ctx, AC_BOOL);
  h.fn = ac_alloc(h.ctx, m->nfuncs ? m->nfuncs : 1);
  if (!h.fn || !h.name_val || !h.name_arr)
    h.oom = true;
  else
    memset(h.fn, 0, m->nfuncs ? m->nfuncs : 1);
  for (size_t f = 0; f < m->nfuncs && !h.oom; f++) {
    ir_ref body = m->funcs[f].body;
    if (!body || m->funcs[f].is_extern)
      continue;
    /* the table covers the nodes made before this function's walk; the
     * stamps of the new tail start at 0, which no function uses */
    size_t old = h.capstamp;
    if (!ac_grow(h.ctx, (void **)&h.memo, &h.capmemo, m->nnodes, sizeof *h.memo) ||
        !ac_grow(h.ctx, (void **)&h.mstamp, &h.capstamp, m->nnodes, sizeof *h.mstamp)) {
      h.oom = true;
      break;
    }
    memset(h.mstamp + old, 0, (h.capstamp - old) * sizeof *h.mstamp);
    h.nmemo = m->nnodes;
    h.mcur = (uint32_t)f + 1;
    h.hoisted = h.guarded = 0;
    ir_ref nb = hs_walk(&h, body, 0);
    if (h.oom || m->oom || nb == body || !ps_printable(m, nb))
      continue;
    m->funcs[f].body = nb;
    c->counters[HS_HOISTED] += h.hoisted;
    c->counters[HS_GUARDED] += h.guarded;
  }
  ac_free(h.ctx, h.info);
  ac_free(h.ctx, h.fn);
  ac_free(h.ctx, h.memo);
  ac_free(h.ctx, h.mstamp);
  if (h.oom || m->oom)
    return ir_report(c->err, NULL, AC_ERR_NOMEM);
  return AC_OK;
}
