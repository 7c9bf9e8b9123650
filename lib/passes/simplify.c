/* lib/passes/simplify.c: the simplify pass: constant folding, exact
 * algebraic identities, dead let removal and let floating.
 *
 * What. Bottom-up rewriting of each function body to a fixed point:
 *   - folding: operators, math builtins and conversions of literals, with
 *     the interpreter's own scalar functions (lib/interp/scalar.c: wrapping,
 *     x/0 == 0, shifts modulo the width, f32 rounding, the same libm);
 *     `if` on a literal, `&&`/`||` with a literal left operand, projection
 *     and destructuring of tuple expressions, len/shape of arrays built
 *     with literal extents, integer constants across + and -;
 *   - identities exact for every value: integer x+0, x*1, x*0, x-x, x/1,
 *     x%1, x/0, x%0, x&-1, x|0, x^0, x^x, shifts by a multiple of the width;
 *     float x*1.0, x/1.0, x-(+0.0), x+(-0.0) (not x+0.0: -0.0+0.0 is +0.0);
 *     double negation; !!b, b&&true, b||false; min(x,x); `if c {a} else
 *     {a}`; a conversion to the operand's own type;
 *   - dead lets (let and destructuring) whose value cannot fail;
 *   - let floating: a let used once, where it is evaluated at most once (not
 *     under a lambda, a loop's condition or step, or a rec body), moves into
 *     its use; a let of a variable or literal into all of its uses.
 *
 * Why. Floating puts producers where their consumers take them:
 * `let d = map(f, xs); fold(g, 0, d)` becomes `fold(g, 0, map(f, xs))`,
 * the form Barracuda fuses ("fusion is guaranteed for array primitives that
 * appear as array arguments", seeds/001 §6). Only single-use lets move, so
 * the sharing Accelerate recovers by let-binding (seeds/002 §3.3: never
 * `zipWith g (map f arr) (map f arr)`) is kept. Folding gives the shape
 * pass and the backends literal extents and fewer operations.
 *
 * Requires a verified module (every node typed). Preserves the meaning the
 * interpreter defines: results bit for bit (no NaN is folded: its sign
 * would not survive printing), and which runtime error a failing program
 * reports (docs/language.md §6.3, §8): what may fail (ps_may_fail) is never
 * dropped, and moves only to a place evaluated exactly once,
 * unconditionally, after nothing that may fail (the interpreter's order,
 * sp_rank). Types survive re-verification, which types bare literals from
 * their context: whatever moves or replaces its parent has its literals
 * pinned to their types (sp_pin), and a folded literal is bare only where
 * it replaces a "flexible" expression (check.c) in place. The result is
 * never deeper or more nested than the parser accepts.
 *
 * Shared subtrees are simplified once per round: the memo is keyed by node,
 * as no rewrite looks at the binder context except through relative
 * indices. Recursion follows the tree's depth, bounded by SP_MAX_DEPTH.
 */
#include "passes/pass.h"

#include "interp/interp.h"
#include "lex.h"

#include <math.h>
#include <string.h>

/* Rounds of rewriting per function; one normally reaches the fixed point
 * (every rewrite's result is simplified again at once) and the second
 * confirms it; more are needed only where the depth limits held floats
 * back in a very deep tree. */
#define SP_MAX_ROUNDS 8
/* Recursion bound: deeper than any verified tree (CHK_MAX_DEPTH) plus the
 * re-simplification of rewrite results. Deeper nodes are left as they are. */
#define SP_MAX_DEPTH 6000u
/* Printability: a float may put a node at most this deep in the tree and
 * this deep in nested syntax (sp_measure_at's `nest`: one step may print
 * as two levels, parentheses and braces, and the margin leaves room for a
 * function's own), unless it makes the let's subtree neither taller nor
 * more nested; so the result parses again. */
#define SP_FLOAT_DEPTH ((uint32_t)PARSE_MAX_DEPTH)
#define SP_FLOAT_NEST (((uint32_t)PARSE_MAX_NEST - 56) / 2)
/* "Too tall to know": heights beyond the recursion bound. */
#define SP_TALL 0x40000000u
/* Nodes a function's floats may create (each float copies the path to the
 * use and renumbers the body's free variables): a bound on the quadratic
 * cost of very long let chains, as a multiple of the function's size. */
#define SP_FLOAT_BUDGET 64u
/* len/shape of a built array fold only up to this many elements, far
 * below any allocation limit, so that no "array too large" error is lost. */
#define SP_MAX_KNOWN_ELEMS ((int64_t)1 << 20)

enum { SP_FOLDED, SP_IDENT, SP_LETS_REMOVED, SP_LETS_FLOATED, SP_RECS_FUSED };

/* Facts about a node; all but `simp` depend on the node alone, so they
 * stay valid for the whole pass. */
typedef struct sp_info {
  ir_ref simp;     /* simplified form, valid when epoch matches */
  uint32_t epoch;
  ir_ref pinned;   /* the node with its literals pinned; 0 = not yet */
  uint32_t height; /* 1 + the tallest child; 0 = not yet */
  uint32_t nest;   /* nesting of the printed syntax, valid when height is */
  uint8_t fail;    /* 0 = not yet, 1 = cannot fail, 2 = may fail */
} sp_info;

/* One step of a path down the tree: child `kid` of `node`. */
typedef struct sp_step {
  ir_ref node;
  uint32_t kid;
} sp_step;

typedef struct sp {
  ps_ctx *c;
  ac_module *m;
  ac_context *ctx;
  sp_info *info;
  size_t capinfo;
  uint32_t epoch;
  /* uses of a let's variable (sp_uses): how many (counting stops at 2),
   * the path from the let's body to the first (nuse steps), whether that
   * one is evaluated at most once; `path` is the walk's scratch */
  sp_step *path, *use;
  size_t cappath, capuse, nuse;
  uint32_t nuses;
  bool once;
  size_t budget; /* m->nnodes beyond which this function floats no more */
  bool oom;
} sp;

/* ---- per-node facts ---- */

static sp_info *sp_at(sp *s, ir_ref r) {
  if (r >= s->capinfo) {
    size_t old = s->capinfo;
    size_t need = (size_t)r + 1 > s->m->nnodes ? (size_t)r + 1 : s->m->nnodes;
    if (!ac_grow(s->ctx, (void **)&s->info, &s->capinfo, need, sizeof *s->info)) {
      s->oom = true;
      return NULL;
    }
    memset(s->info + old, 0, (s->capinfo - old) * sizeof *s->info);
  }
  return &s->info[r];
}

static const ir_node *sp_node(const sp *s, ir_ref r) { return ir_node_get(s->m, r); }

static bool sp_may_fail(sp *s, ir_ref r) {
  sp_info *in = sp_at(s, r);
  if (!in)
    return true;
  if (!in->fail)
    in->fail = ps_may_fail(s->m, r) ? 2 : 1;
  return in->fail == 2;
}

/* Levels of nested syntax a child of r adds when printed: a let's
 * value and body print in the let's own block, anything else may need a
 * pair of parentheses, brackets or braces (or two: sp's limits allow for
 * it). */
static uint32_t sp_nest_step(const ac_module *m, ir_ref r) {
  ir_op op = (ir_op)ir_node_get(m, r)->op;
  return op == IR_LET || op == IR_LETTUP ? 0 : 1;
}

/* The height of r (*nest: its syntax nesting), memoised; SP_TALL when
 * deeper than the recursion bound. */
static uint32_t sp_measure_at(sp *s, ir_ref r, uint32_t depth, uint32_t *nest) {
  *nest = SP_TALL;
  sp_info *in = depth > SP_MAX_DEPTH ? NULL : sp_at(s, r);
  if (!in)
    return SP_TALL;
  if (in->height) {
    *nest = in->nest;
    return in->height;
  }
  uint32_t h = 0, ns = 0, nk = sp_node(s, r)->nkids, step = sp_nest_step(s->m, r);
  for (uint32_t i = 0; i < nk; i++) {
    ir_ref k = ir_kid(s->m, r, i);
    uint32_t kn = 0, kh = k ? sp_measure_at(s, k, depth + 1, &kn) : 0;
    h = kh > h ? kh : h;
    ns = kn + step > ns ? kn + step : ns;
  }
  if (h >= SP_TALL || ns >= SP_TALL)
    return SP_TALL;
  s->info[r].height = h + 1; /* re-fetched: the recursion may grow the table */
  s->info[r].nest = *nest = ns;
  return h + 1;
}

static uint32_t sp_height(sp *s, ir_ref r) {
  uint32_t ns;
  return sp_measure_at(s, r, 0, &ns);
}

static uint32_t sp_nest(sp *s, ir_ref r) {
  uint32_t ns;
  return sp_measure_at(s, r, 0, &ns) >= SP_TALL ? SP_TALL : ns;
}

/* ---- literals ---- */

static bool sp_scalar(const sp *s, ir_ref r, ac_scalar *sc) {
  ir_type t = sp_node(s, r)->type;
  return t != IR_TY_NONE && ir_ty_is_scalar(s->ctx, t, sc);
}

static bool sp_is_float(ac_scalar sc) { return sc == AC_F32 || sc == AC_F64; }
static bool sp_is_int(ac_scalar sc) { return sc >= AC_I8 && sc <= AC_U64; }

/* The value of literal r, normalised as the interpreter reads it. */
static bool sp_lit(const sp *s, ir_ref r, ac_scalar *sc, interp_scalar *v) {
  if (!r || sp_node(s, r)->op != IR_LIT || !sp_scalar(s, r, sc))
    return false;
  *v = interp_sc_lit(*sc, sp_node(s, r)->lit);
  return true;
}

/* Integer literal r equal to v in its type (v = -1: all ones). */
static bool sp_int_is(const sp *s, ir_ref r, int64_t v) {
  ac_scalar sc;
  interp_scalar x;
  if (!sp_lit(s, r, &sc, &x) || !sp_is_int(sc))
    return false;
  interp_scalar want;
  want.i = v;
  return interp_sc_norm(sc, want).u == x.u;
}

/* Float literal r with exactly the bits of v (so 0.0 and -0.0 differ). */
static bool sp_float_is(const sp *s, ir_ref r, double v) {
  ac_scalar sc;
  interp_scalar x;
  return sp_lit(s, r, &sc, &x) && sp_is_float(sc) && x.f == v && !signbit(x.f) == !signbit(v);
}

static bool sp_bool_is(const sp *s, ir_ref r, bool b) {
  ac_scalar sc;
  interp_scalar x;
  return sp_lit(s, r, &sc, &x) && sc == AC_BOOL && (x.u != 0) == b;
}

/* A literal of type t and value v at the place of node `at`. Flexible
 * literals (no suffix) are made only where they replace a flexible
 * expression in place, which the verifier types from the same context. */
static ir_ref sp_mklit(sp *s, ir_ref at, ir_type t, interp_scalar v, bool flexible) {
  ac_scalar sc;
  if (!ir_ty_is_scalar(s->ctx, t, &sc))
    return IR_NONE;
  ir_litval lv;
  if (sp_is_float(sc))
    lv.f = v.f;
  else
    lv.u = v.u;
  ir_ref r = ir_lit_typed(s->m, sp_node(s, at)->loc, t, lv);
  if (!r)
    return IR_NONE;
  ir_node *n = ir_node_get(s->m, r);
  if (sp_is_float(sc))
    n->flags |= IR_F_FLOATLIT;
  if (flexible && sc != AC_BOOL)
    n->flags = (uint16_t)((n->flags & ~IR_F_SUFFIX) | IR_F_CTX);
  return r;
}

static ir_ref sp_mkint(sp *s, ir_ref at, ir_type t, int64_t v) {
  interp_scalar x;
  ac_scalar sc;
  if (!ir_ty_is_scalar(s->ctx, t, &sc))
    return IR_NONE;
  x.i = v;
  return sp_mklit(s, at, t, interp_sc_norm(sc, x), false);
}

/* ---- pinning literal types ----
 * The verifier types a literal without suffix from its context (and a
 * "flexible" expression of such literals as a whole: `f32(1 + 2)` adds
 * f32s), so an expression that moves to another place could change type
 * when the module is verified again. Pinning gives every such literal its
 * present type as a suffix; the verifier then takes the type as it is and
 * drops the suffix from the printed text where the context agrees. */
static ir_ref sp_pin_at(sp *s, ir_ref r, uint32_t depth) {
  if (depth > SP_MAX_DEPTH)
    return IR_NONE;
  sp_info *in = sp_at(s, r);
  if (!in)
    return IR_NONE;
  if (in->pinned)
    return in->pinned;
  const ir_node *n = sp_node(s, r);
  ir_ref res = r;
  if (n->op == IR_LIT) {
    if (!(n->flags & IR_F_SUFFIX) && n->type != IR_TY_NONE) {
      res = ps_rebuild(s->m, r, 0, NULL);
      if (!res)
        return IR_NONE;
      ir_node *p = ir_node_get(s->m, res);
      p->flags = (uint16_t)((p->flags | IR_F_SUFFIX) & ~IR_F_CTX);
    }
  } else if (n->nkids) {
    uint32_t nk = n->nkids;
    ir_ref small[8], *kids = nk <= 8 ? small : ac_alloc(s->ctx, nk * sizeof *kids);
    if (!kids) {
      s->oom = true;
      return IR_NONE;
    }
    for (uint32_t i = 0; i < nk && res; i++) {
      ir_ref k = ir_kid(s->m, r, i);
      kids[i] = k ? sp_pin_at(s, k, depth + 1) : IR_NONE;
      if (k && !kids[i])
        res = IR_NONE;
    }
    if (res)
      res = ps_rebuild_if_changed(s->m, r, kids);
    if (kids != small)
      ac_free(s->ctx, kids);
  }
  if (!res)
    return IR_NONE;
  if ((in = sp_at(s, r)) == NULL || !sp_at(s, res))
    return IR_NONE;
  s->info[r].pinned = res;
  s->info[res].pinned = res;
  return res;
}

static ir_ref sp_pin(sp *s, ir_ref r) { return sp_pin_at(s, r, 0); }

/* ---- evaluation order ----
 * Position of child i in the order the interpreter evaluates r's children,
 * counting only children evaluated unconditionally, exactly once, and
 * before r makes a check of its own (a shape, an extent, a bound); -1 for
 * any other child: a lambda (run per element, or not at all), an `if`
 * branch, the right operand of && and ||, or a child evaluated after a
 * check (fill's value comes after its shape is checked for negative
 * extents). The orders are those of lib/interp (build.c, reduce.c,
 * permute.c, stencil.c, rec.c, interp.c). */
static int sp_rank(const ac_module *m, ir_ref r, uint32_t i) {
  const ir_node *n = ir_node_get(m, r);
  uint32_t nk = n->nkids;
  switch ((ir_op)n->op) {
  case IR_IF: case IR_LAND: case IR_LOR:
    return i == 0 ? 0 : -1;
  case IR_LAM:
    return -1;
  case IR_DELAY: /* in compiled code a delayed producer's elements fail when
                  * its consumer reads them (docs/language.md §7.15): fuse
                  * decides where that is harmless, so only what cannot fail
                  * moves into one */
    return -1;
  case IR_LOOP: /* initial values, then cond and step per iteration */
    return i + 2 < nk ? (int)i : -1;
  case IR_REC: /* the first dimension's bounds; each later one after a check */
    return i < 2 && i + 1 < nk ? (int)i : -1;
  case IR_MAP: case IR_FOLD: case IR_FOLD_SEG: case IR_SCAN: case IR_SCAN_INCL: case IR_SCANR:
  case IR_SCANR_INCL: case IR_SCAN_SEG: case IR_SCAN_INCL_SEG: case IR_FILTER:
    return i >= 1 ? (int)i - 1 : -1; /* the function first, then its arguments in order */
  case IR_GATHER: case IR_SCATTER:
    return (int)i;
  case IR_PERMUTE: /* dest, then the source array */
    return i == 1 ? 0 : i == 3 ? 1 : -1;
  case IR_STENCIL: /* a constant boundary value before the array */
    return i == 2 ? 0 : i == 1 ? (nk == 3 ? 1 : 0) : -1;
  case IR_ITERATE:
    return i == 0 ? 0 : i == 2 ? 1 : -1;
  case IR_WHILE:
    return i == 2 ? 0 : -1;
  case IR_GENERATE: case IR_IOTA: case IR_FILL: case IR_BACKPERMUTE: case IR_RESHAPE:
  case IR_REPLICATE: case IR_SLICE: case IR_TRANSPOSE: case IR_REVERSE:
    return i == 0 ? 0 : -1;
  default:
    /* the other array operations are listed above; everything else (let,
     * tuples, calls, indexing, array literals, operators, builtins)
     * evaluates its children left to right before anything else */
    return ps_is_array_op(m, r) && n->op != IR_ARRLIT ? -1 : (int)i;
  }
}

static bool sp_safe(sp *s, ir_ref e);

/* True if child i of r is evaluated exactly once whenever r is, with
 * nothing that may fail evaluated before it. */
static bool sp_strict_kid(sp *s, ir_ref r, uint32_t i) {
  int ri = sp_rank(s->m, r, i);
  if (ri < 0)
    return false;
  uint32_t nk = sp_node(s, r)->nkids;
  for (uint32_t k = 0; k < nk; k++) {
    int rk = k == i ? -1 : sp_rank(s->m, r, k);
    ir_ref kid = ir_kid(s->m, r, k);
    if (rk >= 0 && rk < ri && kid && !sp_safe(s, kid))
      return false;
  }
  return true;
}

/* ---- uses of a let's variable ---- */

/* Counts the uses of variable j in r (up to 2), r being at `depth` below
 * the let's body, and records the path to the first. Too deep or out of
 * memory counts as "many". */
static void sp_uses_at(sp *s, ir_ref r, uint32_t j, uint32_t depth) {
  const ir_node *n = sp_node(s, r);
  if (n->op == IR_VAR) {
    if ((uint64_t)n->attr != j || ++s->nuses > 1)
      return;
    if (!ac_grow(s->ctx, (void **)&s->use, &s->capuse, (size_t)depth + 1, sizeof *s->use)) {
      s->nuses = 2;
      return;
    }
    if (depth)
      memcpy(s->use, s->path, depth * sizeof *s->path);
    s->nuse = depth;
    return;
  }
  if (depth > SP_MAX_DEPTH ||
      !ac_grow(s->ctx, (void **)&s->path, &s->cappath, (size_t)depth + 1, sizeof *s->path)) {
    s->nuses = 2;
    return;
  }
  for (uint32_t i = 0; i < n->nkids && s->nuses < 2; i++) {
    ir_ref k = ir_kid(s->m, r, i);
    s->path[depth] = (sp_step){r, i};
    if (k)
      sp_uses_at(s, k, j + ir_binders(s->m, r, i), depth + 1);
  }
}

/* sp_uses_at from the let's body; then `once` says whether the first use
 * is evaluated at most once per evaluation of the body. */
static void sp_uses(sp *s, ir_ref body, uint32_t j) {
  s->nuses = 0;
  s->nuse = 0;
  sp_uses_at(s, body, j, 0);
  s->once = true;
  for (size_t i = 0; i < s->nuse && s->nuses == 1; i++) {
    const ir_node *n = sp_node(s, s->use[i].node);
    if (n->op == IR_LAM || (n->op == IR_REC && s->use[i].kid + 1 == n->nkids))
      s->once = false;
  }
}

/* The first use is evaluated whenever the body is, with nothing that may
 * fail evaluated before it on the way. */
static bool sp_use_strict(sp *s) {
  for (size_t i = 0; i < s->nuse; i++)
    if (!sp_strict_kid(s, s->use[i].node, s->use[i].kid))
      return false;
  return true;
}

/* ---- the rewrites ---- */

static ir_ref sp_simp(sp *s, ir_ref r, uint32_t depth, uint32_t nest);

/* Operators whose literal operands make a "flexible" expression (check.c):
 * their folded result may stay without suffix. */
static bool sp_flex_op(ir_op op) {
  switch (op) {
  case IR_NEG: case IR_ADD: case IR_SUB: case IR_MUL: case IR_DIV: case IR_REM:
  case IR_BAND: case IR_BOR: case IR_BXOR: case IR_SHL: case IR_SHR:
    return true;
  default:
    return false;
  }
}

/* Folds an operator, builtin or conversion whose operands are all
 * literals, with the interpreter's scalar functions. */
static ir_ref sp_fold_scalar(sp *s, ir_ref r) {
  const ir_node *n = sp_node(s, r);
  ir_op op = (ir_op)n->op;
  uint32_t nk = n->nkids;
  ac_scalar sc, rsc, ksc[3];
  interp_scalar v[3], res;
  if (nk == 0 || nk > 3 || !sp_scalar(s, r, &rsc))
    return IR_NONE;
  bool flexible = sp_flex_op(op);
  for (uint32_t i = 0; i < nk; i++) {
    ir_ref k = ir_kid(s->m, r, i);
    if (!sp_lit(s, k, &ksc[i], &v[i]))
      return IR_NONE;
    if (sp_node(s, k)->flags & IR_F_SUFFIX)
      flexible = false;
  }
  sc = ksc[0];
  if (op == IR_CAST) {
    res = interp_sc_cast(rsc, sc, v[0]);
    flexible = false;
  } else if (op == IR_FMA) {
    if (nk != 3)
      return IR_NONE;
    res = interp_sc_fma(sc, v[0], v[1], v[2]);
  } else if (nk == 1) {
    res = interp_sc_unary(op, sc, v[0]);
  } else if (nk == 2) {
    if (ksc[1] != sc)
      return IR_NONE;
    res = interp_sc_binary(op, sc, v[0], v[1]);
  } else {
    return IR_NONE;
  }
  res = interp_sc_norm(rsc, res);
  /* a NaN's sign and payload do not survive printing ("nan" reads back as
   * one particular NaN), so NaN results stay computed at run time */
  if (sp_is_float(rsc) && isnan(res.f))
    return IR_NONE;
  return sp_mklit(s, r, n->type, res, flexible);
}

/* The result `x` of a rewrite counted in counter `ctr`. */
static ir_ref sp_done(sp *s, ir_ref x, int ctr) {
  if (x)
    s->c->counters[ctr]++;
  return x;
}

/* A literal extent list: an integer literal or a tuple of them, none
 * negative. */
static bool sp_lit_shape(sp *s, ir_ref r, uint32_t rank, int64_t *ext) {
  const ir_node *n = sp_node(s, r);
  uint32_t cnt = n->op == IR_TUPLE ? n->nkids : 1;
  if (cnt != rank || rank == 0)
    return false;
  for (uint32_t d = 0; d < rank; d++) {
    ir_ref k = n->op == IR_TUPLE ? ir_kid(s->m, r, d) : r;
    ac_scalar sc;
    interp_scalar v;
    if (!sp_lit(s, k, &sc, &v) || !sp_is_int(sc))
      return false;
    ext[d] = interp_sc_to_i64(sc, v);
    if (ext[d] < 0)
      return false;
  }
  return true;
}

/* True if a is an array built with literal extents (stored in ext, rank
 * in *rank) by an operation that cannot fail: iota, fill, generate or an
 * array literal, small, whose elements cannot fail. Such an array may be
 * dropped, and its len and shape are known. */
static bool sp_known_build(sp *s, ir_ref a, int64_t *ext, uint32_t *rank) {
  const ir_node *an = sp_node(s, a);
  ir_type elem;
  uint32_t rk;
  /* an array, or a tuple of arrays (arrays of tuples) */
  if (an->type == IR_TY_NONE || !ir_ty_array_view(s->ctx, an->type, &elem, &rk) ||
      rk > PARSE_MAX_RANK)
    return false;
  *rank = rk;
  switch ((ir_op)an->op) {
  case IR_IOTA: case IR_FILL: case IR_GENERATE:
    if (!sp_lit_shape(s, ir_kid(s->m, a, 0), rk, ext) ||
        (an->op != IR_IOTA && sp_may_fail(s, ir_kid(s->m, a, 1))))
      return false;
    break;
  case IR_ARRLIT:
    if ((uint64_t)an->attr != rk || an->aux == 0 || an->aux + (uint64_t)rk > s->m->nints)
      return false;
    for (uint32_t d = 0; d < rk; d++)
      ext[d] = s->m->ints[an->aux + d];
    for (uint32_t k = 0; k < an->nkids; k++)
      if (sp_may_fail(s, ir_kid(s->m, a, k)))
        return false;
    break;
  default:
    return false;
  }
  int64_t total = 1;
  for (uint32_t d = 0; d < rk; d++) {
    if (ext[d] > SP_MAX_KNOWN_ELEMS || (ext[d] && total > SP_MAX_KNOWN_ELEMS / ext[d]))
      return false;
    total *= ext[d];
  }
  return true;
}

/* The value of len(..) or shape(..) (node r) of an array of these extents. */
static ir_ref sp_mkshape(sp *s, ir_ref r, const int64_t *ext, uint32_t rank) {
  const ir_node *n = sp_node(s, r);
  ir_type i64 = ir_ty_scalar(s->ctx, AC_I64), ty = n->type;
  ir_loc loc = n->loc;
  if (n->op == IR_LEN || rank == 1)
    return sp_mkint(s, r, i64, ext[0]);
  ir_ref small[8], *kids = rank <= 8 ? small : ac_alloc(s->ctx, rank * sizeof *kids);
  ir_ref res = kids ? r : IR_NONE;
  for (uint32_t d = 0; d < rank && res; d++)
    res = kids[d] = sp_mkint(s, r, i64, ext[d]);
  if (res && (res = ir_node_new(s->m, IR_TUPLE, loc, rank, kids)) != IR_NONE)
    ir_node_get(s->m, res)->type = ty;
  if (kids != small)
    ac_free(s->ctx, kids);
  return res;
}

/* len(a) / shape(a) of a known build. */
static ir_ref sp_fold_shape(sp *s, ir_ref r) {
  int64_t ext[PARSE_MAX_RANK];
  uint32_t rank;
  if (!sp_known_build(s, ir_kid(s->m, r, 0), ext, &rank))
    return IR_NONE;
  return sp_mkshape(s, r, ext, rank);
}

/* What sp_replace puts at the uses of variable j: a copy of literal `lit`
 * at each (removing j's binder), or else the values of len(j) and
 * shape(j), j being a known build of these extents (j's binder stays). */
typedef struct sp_repl {
  ir_ref lit;
  const int64_t *ext;
  uint32_t rank;
} sp_repl;

/* r with the uses of variable j replaced as rp says; IR_NONE when out of
 * memory or too deep. Copies of a literal, rather than ir_subst's one
 * node everywhere: the verifier keeps per-place facts in a literal
 * (whether its type came from the context, which decides its printed
 * suffix), so a shared literal would print unlike the text it reads back
 * from. */
static ir_ref sp_replace(sp *s, ir_ref r, uint32_t j, const sp_repl *rp, uint32_t depth) {
  const ir_node *n = sp_node(s, r);
  uint32_t nk = n->nkids;
  if (n->op == IR_VAR && rp->lit && (uint64_t)n->attr >= j) {
    if ((uint64_t)n->attr == j)
      return ps_rebuild(s->m, rp->lit, 0, NULL);
    ir_type t = n->type;
    ir_ref v = ir_var(s->m, n->loc, (uint32_t)n->attr - 1);
    if (v)
      ir_node_get(s->m, v)->type = t;
    return v;
  }
  if ((n->op == IR_LEN || n->op == IR_SHAPE) && !rp->lit) {
    const ir_node *v = sp_node(s, ir_kid(s->m, r, 0));
    if (v->op == IR_VAR && (uint64_t)v->attr == j)
      return sp_done(s, sp_mkshape(s, r, rp->ext, rp->rank), SP_FOLDED);
  }
  if (nk == 0)
    return r;
  if (depth > SP_MAX_DEPTH)
    return IR_NONE;
  ir_ref small[8], *kids = nk <= 8 ? small : ac_alloc(s->ctx, nk * sizeof *kids);
  ir_ref res = kids ? r : IR_NONE;
  for (uint32_t i = 0; i < nk && res; i++) {
    ir_ref k = ir_kid(s->m, r, i);
    kids[i] = k ? sp_replace(s, k, j + ir_binders(s->m, r, i), rp, depth + 1) : k;
    if (k && !kids[i])
      res = IR_NONE;
  }
  if (res)
    res = ps_rebuild_if_changed(s->m, r, kids);
  if (kids != small)
    ac_free(s->ctx, kids);
  return res;
}

/* True if evaluating e cannot fail or loop: ps_may_fail, which takes every
 * array operation for one that may, refined for known builds. Such an e
 * may be dropped, moved or evaluated before anything else. */
static bool sp_safe(sp *s, ir_ref e) {
  int64_t ext[PARSE_MAX_RANK];
  uint32_t rank;
  return !sp_may_fail(s, e) || sp_known_build(s, e, ext, &rank);
}

/* Identities of binary operators x OP y. Each holds for every value of
 * its type (wrapping integers; IEEE floats bit for bit, NaNs included),
 * and one that drops an operand requires that it cannot fail. Returns a
 * new literal, or IR_NONE with the index of the operand that is the
 * result in *keep (-1: no identity applies). */
static ir_ref sp_binary_ident(sp *s, ir_ref r, int *keep) {
  const ir_node *n = sp_node(s, r);
  ir_op op = (ir_op)n->op;
  ir_ref x = ir_kid(s->m, r, 0), y = ir_kid(s->m, r, 1);
  ac_scalar sc;
  *keep = -1;
  if (!sp_scalar(s, x, &sc))
    return IR_NONE;
/* x, y that cannot fail; x equal to y (then y cannot fail either) */
#define XF (!sp_may_fail(s, x))
#define YF (!sp_may_fail(s, y))
#define SAME (ir_equal(s->m, x, y))
  switch (op) {
  case IR_MIN: case IR_MAX: /* x once instead of twice: the same value, or the same error */
    *keep = SAME ? 0 : -1;
    return IR_NONE;
  case IR_EQ: case IR_NE: case IR_LE: case IR_GE: case IR_LT: case IR_GT:
    /* not for floats: NaN == NaN is false */
    if (!sp_is_float(sc) && SAME && XF)
      return sp_mkint(s, r, n->type, op == IR_EQ || op == IR_LE || op == IR_GE);
    if (sc == AC_BOOL && (op == IR_EQ || op == IR_NE)) { /* b == true, b != false */
      bool unit = op == IR_EQ;
      *keep = sp_bool_is(s, y, unit) ? 0 : sp_bool_is(s, x, unit) ? 1 : -1;
    }
    return IR_NONE;
  default:
    break;
  }
  if (sp_is_float(sc)) {
    if (op == IR_MUL) /* x * 1.0 == x, also for -0.0, inf and NaN */
      *keep = sp_float_is(s, y, 1.0) ? 0 : sp_float_is(s, x, 1.0) ? 1 : -1;
    else if (op == IR_DIV)
      *keep = sp_float_is(s, y, 1.0) ? 0 : -1;
    else if (op == IR_SUB) /* x - (+0.0) == x; x - (-0.0) is x + 0.0: -0.0 becomes +0.0 */
      *keep = sp_float_is(s, y, 0.0) ? 0 : -1;
    else if (op == IR_ADD) /* x + (-0.0) == x, -0.0 included; x + (+0.0) is not */
      *keep = sp_float_is(s, y, -0.0) ? 0 : sp_float_is(s, x, -0.0) ? 1 : -1;
    return IR_NONE;
  }
  if (!sp_is_int(sc))
    return IR_NONE;
  /* the unit of the operator on either side gives the other operand */
  switch (op) {
  case IR_ADD: case IR_BOR: case IR_BXOR:
    *keep = sp_int_is(s, y, 0) ? 0 : sp_int_is(s, x, 0) ? 1 : -1;
    break;
  case IR_MUL:
    *keep = sp_int_is(s, y, 1) ? 0 : sp_int_is(s, x, 1) ? 1 : -1;
    break;
  case IR_BAND:
    *keep = sp_int_is(s, y, -1) ? 0 : sp_int_is(s, x, -1) ? 1 : -1;
    break;
  case IR_SUB: case IR_REM: /* x % 0 == x (docs/language.md §6.1) */
    *keep = sp_int_is(s, y, 0) ? 0 : -1;
    break;
  case IR_DIV:
    *keep = sp_int_is(s, y, 1) ? 0 : -1;
    break;
  case IR_SHL: case IR_SHR: { /* the amount is taken modulo the width */
    ac_scalar ysc;
    interp_scalar a;
    unsigned bits = 8u * (unsigned)ac_scalar_size(sc);
    if (sp_lit(s, y, &ysc, &a) && (a.u & (bits - 1)) == 0)
      *keep = 0;
    break;
  }
  default:
    break;
  }
  if (*keep >= 0)
    return IR_NONE;
  /* idempotence: x | x == x & x == x */
  if ((op == IR_BOR || op == IR_BAND) && SAME) {
    *keep = 0;
    return IR_NONE;
  }
  /* absorbing values: the other operand is dropped, so it must not fail;
   * x / 0 == 0 == 0 / y, 0 % y == 0 (0 % 0 is 0 too), 0 << y == 0 >> y == 0 */
  bool zero_abs = op == IR_MUL || op == IR_BAND || op == IR_DIV;
  bool zero_left = zero_abs || op == IR_REM || op == IR_SHL || op == IR_SHR;
  if ((zero_abs && sp_int_is(s, y, 0) && XF) || (zero_left && sp_int_is(s, x, 0) && YF))
    return sp_mkint(s, r, n->type, 0);
  if (op == IR_BOR && ((sp_int_is(s, y, -1) && XF) || (sp_int_is(s, x, -1) && YF)))
    return sp_mkint(s, r, n->type, -1);
  if (op == IR_REM && sp_int_is(s, y, 1) && XF) /* MIN % 1 == 0 too */
    return sp_mkint(s, r, n->type, 0);
  if ((op == IR_SUB || op == IR_BXOR) && SAME && XF)
    return sp_mkint(s, r, n->type, 0);
#undef XF
#undef YF
#undef SAME
  return IR_NONE;
}

/* (x + c1) + c2, (x - c1) + c2 and the like: x + c with c = ±c1 ± c2, or x
 * when c is 0, exact in integer arithmetic, which wraps; the sum is
 * written x - |c| when c is negative as a signed value. */
static ir_ref sp_reassoc(sp *s, ir_ref r) {
  /* a copy: making nodes (sp_pin, sp_mklit) may move the node array */
  const ir_node nc = *sp_node(s, r), *n = &nc;
  ir_ref inner = ir_kid(s->m, r, 0);
  const ir_node *in = sp_node(s, inner);
  ac_scalar sc, sc1, sc2;
  interp_scalar c1, c2, c;
  if ((n->op != IR_ADD && n->op != IR_SUB) || (in->op != IR_ADD && in->op != IR_SUB) ||
      !sp_scalar(s, r, &sc) || !sp_is_int(sc) || !sp_lit(s, ir_kid(s->m, r, 1), &sc2, &c2) ||
      !sp_lit(s, ir_kid(s->m, inner, 1), &sc1, &c1))
    return IR_NONE;
  c.u = (in->op == IR_ADD ? c1.u : 0 - c1.u) + (n->op == IR_ADD ? c2.u : 0 - c2.u);
  c = interp_sc_norm(sc, c);
  interp_scalar neg = interp_sc_norm(sc, (interp_scalar){.u = 0 - c.u}), sgn = c;
  if (!interp_sc_is_signed(sc)) /* read as signed to choose the sign */
    sgn.u = (c.u >> (8 * ac_scalar_size(sc) - 1)) ? UINT64_MAX : 0;
  ir_ref x = sp_pin(s, ir_kid(s->m, inner, 0));
  if (!x || c.u == 0)
    return x;
  ir_ref k[2] = {x, sp_mklit(s, r, n->type, sgn.i < 0 ? neg : c, false)};
  ir_ref res = k[1] ? ir_node_new(s->m, sgn.i < 0 ? IR_SUB : IR_ADD, n->loc, 2, k) : IR_NONE;
  if (res)
    ir_node_get(s->m, res)->type = n->type;
  return res;
}

/* Replaces r by its child or subexpression e (pinned: it takes r's place). */
static ir_ref sp_take(sp *s, ir_ref e, int ctr) { return sp_done(s, sp_pin(s, e), ctr); }

/* let x = e; body. `depth` and `nest` place r in the function's tree and
 * syntax (sp_simp). */
/* The path to the use of `let h = rec ...` (sp_uses) rebuilt with its
 * step `to` replaced by x. */
static ir_ref sp_path_replace(sp *s, size_t from, size_t to, ir_ref at, ir_ref x) {
  if (from == to)
    return x;
  const ir_node *n = sp_node(s, at);
  uint32_t nk = n->nkids, kid = s->use[from].kid;
  ir_ref small[8], *kids = nk <= 8 ? small : ac_alloc(s->ctx, nk * sizeof *kids);
  if (!kids)
    return IR_NONE;
  for (uint32_t i = 0; i < nk; i++)
    kids[i] = ir_kid(s->m, at, i);
  kids[kid] = sp_path_replace(s, from + 1, to, kids[kid], x);
  ir_ref res = kids[kid] ? ps_rebuild(s->m, at, nk, kids) : IR_NONE;
  if (kids != small)
    ac_free(s->ctx, kids);
  return res;
}

/* `let h = rec ...; .. fold(f, z, generate(shape, |i, j| G)) ..` with h
 * used once, at h[i, j] in G (sp_uses), the fold reached from the let with
 * nothing that may fail before it and f unable to fail: G computed by the
 * recurrence with each cell, and the fold over field 1 of its table
 * (ps_rec_fuse), which the let then floats into, so that the recurrence
 * keeps only a window of its table (docs/passes.md §5.1). */
static ir_ref sp_rec_fuse(sp *s, ir_ref r) {
  ac_module *m = s->m;
  uint32_t nb = 0;
  for (size_t k = 0; k + 2 < s->nuse; k++) {
    const ir_node *n = sp_node(s, s->use[k].node);
    if (!sp_strict_kid(s, s->use[k].node, s->use[k].kid))
      return IR_NONE;
    if (n->op == IR_FOLD && s->use[k].kid == 2) {
      size_t g = k + 1;
      if (sp_node(s, s->use[g].node)->op == IR_DELAY)
        g++;
      ir_ref gen = s->use[g].node;
      if (g + 1 < s->nuse && sp_node(s, gen)->op == IR_GENERATE && s->use[g].kid == 1 &&
          !ps_fn_may_fail(m, ir_kid(m, s->use[k].node, 0))) {
        ir_ref rec = sp_pin(s, ir_kid(m, r, 0)), pg = sp_pin(s, gen);
        ir_ref fused = rec && pg ? ps_rec_fuse(m, rec, pg, nb) : IR_NONE;
        ir_ref h = fused ? ir_var(m, sp_node(s, gen)->loc, nb) : IR_NONE;
        ir_ref p = h ? ir_node_new(m, IR_PROJ, sp_node(s, gen)->loc, 1, &h) : IR_NONE;
        if (!p)
          return IR_NONE;
        ir_node_get(m, p)->attr = 1;
        ir_ref kids[2] = {fused, sp_path_replace(s, 0, k + 1, ir_kid(m, r, 1), p)};
        return kids[1] ? ps_rebuild(m, r, 2, kids) : IR_NONE;
      }
    }
    nb += ir_binders(m, s->use[k].node, s->use[k].kid);
  }
  return IR_NONE;
}

static ir_ref sp_let(sp *s, ir_ref r, uint32_t depth, uint32_t nest) {
  ir_ref e = ir_kid(s->m, r, 0), body = ir_kid(s->m, r, 1);
  int64_t ext[PARSE_MAX_RANK];
  uint32_t rank;
  if (sp_known_build(s, e, ext, &rank)) { /* let a = iota(5); .. len(a) .. */
    sp_repl rp = {IR_NONE, ext, rank};
    ir_ref nb = sp_replace(s, body, 0, &rp, 0);
    ir_ref kids[2] = {e, nb};
    if (nb != body)
      return nb ? ps_rebuild(s->m, r, 2, kids) : IR_NONE;
  }
  sp_uses(s, body, 0);
  ir_op eop = (ir_op)sp_node(s, e)->op;
  if (s->nuses && s->m->nnodes > s->budget)
    return IR_NONE;
  if (s->nuses == 0) {
    /* The value is computed and thrown away: dropping it is exact unless it
     * could fail or not end; docs/language.md §6.3 and §8 let only code
     * that is not evaluated raise nothing, and a let's value is evaluated,
     * so one that may fail stays. */
    if (!sp_safe(s, e))
      return IR_NONE;
    return sp_done(s, ir_shift(s->m, body, -1, 0), SP_LETS_REMOVED);
  }
  bool copy = eop == IR_VAR || eop == IR_LIT;
  if (!copy && eop == IR_REC && s->nuses == 1 && !s->once)
    return sp_done(s, sp_rec_fuse(s, r), SP_RECS_FUSED);
  if (!copy) {
    if (s->nuses != 1 || !s->once)
      return IR_NONE;
    /* moved later, past what the body evaluates before the use: exact if
     * e cannot fail, or if nothing before the use may fail and the use is
     * evaluated whenever the let is */
    if (!sp_safe(s, e) && !sp_use_strict(s))
      return IR_NONE;
    uint32_t npath = 0;
    for (size_t i = 0; i < s->nuse; i++)
      npath += sp_nest_step(s->m, s->use[i].node);
    uint64_t h = s->nuse + (uint64_t)sp_height(s, e), ns = npath + (uint64_t)sp_nest(s, e);
    if ((h >= sp_height(s, r) && depth + h > SP_FLOAT_DEPTH) ||
        (ns > sp_nest(s, r) && nest + ns > SP_FLOAT_NEST))
      return IR_NONE;
  }
  ir_ref pe = sp_pin(s, e);
  if (!pe)
    return IR_NONE;
  sp_repl rp = {pe, NULL, 0};
  return sp_done(s, eop == IR_LIT ? sp_replace(s, body, 0, &rp, 0) : ir_subst(s->m, body, 0, pe),
                 SP_LETS_FLOATED);
}

/* let (x1, .., xn) = e; body: dropped when no xi is used and e cannot
 * fail; split into n lets when e is a tuple expression (which evaluates
 * its fields in the same order). */
static ir_ref sp_lettup(sp *s, ir_ref r, uint32_t depth) {
  const ir_node *n = sp_node(s, r);
  ir_ref e = ir_kid(s->m, r, 0), body = ir_kid(s->m, r, 1);
  uint32_t nv = (uint32_t)n->attr;
  bool used = false;
  for (uint32_t j = 0; j < nv && !used; j++)
    used = ir_occurs(s->m, body, j);
  if (!used && sp_safe(s, e))
    return sp_done(s, ir_shift(s->m, body, -(int32_t)nv, 0), SP_LETS_REMOVED);
  const ir_node *en = sp_node(s, e);
  if (en->op != IR_TUPLE || en->nkids != nv || nv == 0 ||
      (uint64_t)depth + sp_height(s, r) + nv > SP_FLOAT_DEPTH)
    return IR_NONE;
  /* the body sees x1..xn as n-1..0 both ways; field i moves under the i
   * lets before it */
  ir_ref acc = body;
  ir_type ty = n->type;
  ir_loc loc = n->loc;
  uint32_t names = n->names;
  for (uint32_t k = nv; k-- > 0 && acc;) {
    ir_ref f = sp_pin(s, ir_kid(s->m, e, k));
    ir_ref kids[2] = {f ? ir_shift(s->m, f, (int32_t)k, 0) : IR_NONE, acc};
    ir_sym nm = names ? s->m->syms[names + k] : IR_SYM_NONE;
    acc = kids[0] ? ir_node_new(s->m, IR_LET, loc, 2, kids) : IR_NONE;
    uint32_t off = acc ? ir_syms_push(s->m, 1, &nm) : 0;
    if (acc && !off && s->m->oom)
      acc = IR_NONE;
    if (acc) {
      ir_node_get(s->m, acc)->names = off;
      ir_node_get(s->m, acc)->type = ty;
    }
  }
  return sp_done(s, acc, SP_FOLDED);
}

/* A rewrite of r, whose children are simplified: a new node (not yet
 * simplified), or r or IR_NONE when nothing applies (or memory ran out). */
static ir_ref sp_rewrite(sp *s, ir_ref r, uint32_t depth, uint32_t nest) {
  /* a copy: the rewrites make nodes, which may move the node array */
  const ir_node nc = *sp_node(s, r), *n = &nc;
  ir_op op = (ir_op)n->op;
  uint32_t nk = n->nkids;
  ir_ref k0 = nk > 0 ? ir_kid(s->m, r, 0) : IR_NONE;
  ir_ref k1 = nk > 1 ? ir_kid(s->m, r, 1) : IR_NONE;
  switch (op) {
  case IR_VAR: case IR_LIT: case IR_FNREF: case IR_LAM:
    return r;
  case IR_LET:
    return sp_let(s, r, depth, nest);
  case IR_LETTUP:
    return sp_lettup(s, r, depth);
  case IR_IF: {
    ir_ref k2 = ir_kid(s->m, r, 2);
    if (sp_bool_is(s, k0, true) || sp_bool_is(s, k0, false))
      return sp_take(s, sp_bool_is(s, k0, true) ? k1 : k2, SP_FOLDED);
    if (ir_equal(s->m, k1, k2) && !sp_may_fail(s, k0))
      return sp_take(s, k1, SP_IDENT);
    if (sp_bool_is(s, k1, true) && sp_bool_is(s, k2, false))
      return sp_take(s, k0, SP_IDENT);
    if (sp_bool_is(s, k1, false) && sp_bool_is(s, k2, true)) {
      ir_ref c = sp_pin(s, k0), nt = c ? ir_node_new(s->m, IR_NOT, n->loc, 1, &c) : IR_NONE;
      if (nt)
        ir_node_get(s->m, nt)->type = n->type;
      return sp_done(s, nt, SP_IDENT);
    }
    return r;
  }
  case IR_LAND: case IR_LOR: {
    bool unit = op == IR_LAND; /* true && b == b; false || b == b */
    if (sp_bool_is(s, k0, unit))
      return sp_take(s, k1, SP_FOLDED);
    if (sp_bool_is(s, k0, !unit))
      return sp_take(s, k0, SP_FOLDED);
    if (sp_bool_is(s, k1, unit))
      return sp_take(s, k0, SP_IDENT);
    if (sp_bool_is(s, k1, !unit) && !sp_may_fail(s, k0))
      return sp_take(s, k1, SP_IDENT);
    return r;
  }
  case IR_PROJ: {
    const ir_node *t = sp_node(s, k0);
    if (t->op != IR_TUPLE || n->attr < 0 || (uint64_t)n->attr >= t->nkids)
      return r;
    for (uint32_t i = 0; i < t->nkids; i++)
      if (i != (uint64_t)n->attr && !sp_safe(s, ir_kid(s->m, k0, i)))
        return r;
    return sp_take(s, ir_kid(s->m, k0, (uint32_t)n->attr), SP_FOLDED);
  }
  case IR_LEN: case IR_SHAPE: {
    ir_ref f = sp_fold_shape(s, r);
    return f ? sp_done(s, f, SP_FOLDED) : r;
  }
  case IR_CAST:
    if (sp_node(s, k0)->type == n->type && n->type != IR_TY_NONE)
      return sp_take(s, k0, SP_IDENT);
    break;
  case IR_NEG: case IR_BNOT: case IR_NOT: { /* involutions, for floats too: negation flips the sign bit */
    const ir_node *kn = sp_node(s, k0);
    if (kn->op == op && kn->nkids == 1)
      return sp_take(s, ir_kid(s->m, k0, 0), SP_IDENT);
    break;
  }
  default:
    break;
  }
  if (op == IR_CAST || op == IR_FMA ||
      (ir_ops[op].typing != TC_SPECIAL && nk >= 1 && nk <= 2)) {
    ir_ref f = sp_fold_scalar(s, r);
    if (f)
      return sp_done(s, f, SP_FOLDED);
    if (s->oom || s->m->oom)
      return IR_NONE;
  }
  if (nk == 2 && ir_ops[op].typing != TC_SPECIAL && op != IR_LAND && op != IR_LOR) {
    ir_ref ra = sp_reassoc(s, r);
    if (ra)
      return sp_done(s, ra, SP_FOLDED);
    int keep;
    ir_ref lit = sp_binary_ident(s, r, &keep);
    if (lit)
      return sp_done(s, lit, SP_IDENT);
    if (keep >= 0)
      return sp_take(s, keep ? k1 : k0, SP_IDENT);
  }
  return r;
}

/* The simplified form of r, memoised per node and round. depth counts the
 * recursion (at least r's depth in the tree), nest r's syntax nesting in
 * the function; both only limit floats (sp_let). */
static ir_ref sp_simp(sp *s, ir_ref r, uint32_t depth, uint32_t nest) {
  if (!r || depth > SP_MAX_DEPTH || s->oom)
    return r;
  sp_info *in = sp_at(s, r);
  if (!in)
    return r;
  if (in->epoch == s->epoch && in->simp)
    return in->simp;
  uint32_t nk = sp_node(s, r)->nkids, step = sp_nest_step(s->m, r);
  ir_ref small[8], *kids = nk <= 8 ? small : ac_alloc(s->ctx, nk * sizeof *kids);
  if (!kids) {
    s->oom = true;
    return r;
  }
  for (uint32_t i = 0; i < nk; i++) {
    ir_ref k = ir_kid(s->m, r, i);
    kids[i] = k ? sp_simp(s, k, depth + 1, nest + step) : IR_NONE;
  }
  ir_ref cur = nk ? ps_rebuild_if_changed(s->m, r, kids) : r;
  if (kids != small)
    ac_free(s->ctx, kids);
  if (!cur)
    return r;
  ir_ref next = sp_rewrite(s, cur, depth, nest);
  /* a failed rewrite (out of memory) keeps the node as it is */
  ir_ref res = next && next != cur ? sp_simp(s, next, depth + 1, nest) : cur;
  if (!sp_at(s, r) || !sp_at(s, cur) || !sp_at(s, res))
    return r;
  s->info[r].simp = s->info[cur].simp = s->info[res].simp = res;
  s->info[r].epoch = s->info[cur].epoch = s->info[res].epoch = s->epoch;
  return res;
}

/* The entry point, registered in passes_list.h (passes.c declares it). */
ac_status ps_simplify(ps_ctx *c);

ac_status ps_simplify(ps_ctx *c) {
  sp s;
  memset(&s, 0, sizeof s);
  s.c = c;
  s.m = c->m;
  s.ctx = c->ctx;
  for (size_t f = 0; f < s.m->nfuncs && !s.oom && !s.m->oom; f++) {
    ir_func *fn = &s.m->funcs[f];
    if (fn->is_extern || !fn->body)
      continue;
    bool printable = ps_printable(s.m, fn->body);
    s.budget = s.m->nnodes + (size_t)SP_FLOAT_BUDGET * ps_size(s.m, fn->body, 1u << 20);
    for (int round = 0; round < SP_MAX_ROUNDS; round++) {
      s.epoch++;
      ir_ref nb = sp_simp(&s, fn->body, 0, 0);
      if (s.oom || s.m->oom || nb == fn->body)
        break;
      /* a body that no longer prints as text that parses (sp_let's limits
       * only estimate the printer's nesting) keeps the last good version */
      if (printable && !ps_printable(s.m, nb))
        break;
      fn->body = nb; /* (passes add no functions: fn stays valid) */
    }
  }
  ac_free(s.ctx, s.info);
  ac_free(s.ctx, s.path);
  ac_free(s.ctx, s.use);
  if (s.oom || s.m->oom)
    return ir_report(c->err, NULL, AC_ERR_NOMEM);
  return AC_OK;
}
