/* lib/passes/cse.c: common subexpression elimination (the `cse` pass).
 *
 * What: within each function body, equal subterms (scalar or array) are
 * computed once: the first occurrence is bound with a `let` at the lowest
 * node that contains every occurrence, and every occurrence becomes that
 * variable. Two identical `map(f, xs)` thus become one array, so lowering
 * makes one kernel instead of two. When the first occurrence already is the
 * value of a `let` whose body holds the others (`let a = e; .. e ..`), that
 * `let` is reused and no new one is made.
 *
 * Why and where from: Accelerate's sharing recovery (Chakravarty et al.,
 * §3.3, and its Black-Scholes measurement: the cumulative normal computed
 * once instead of twice) and Barracuda's `slet` recover sharing that
 * writing terms as trees loses; this pass recovers it after the fact, for
 * programs written without lets and for what inlining duplicates.
 *
 * How: the body is flattened in preorder; every position gets a hash of its
 * subterm in which a variable bound inside the subterm counts by its
 * distance from the subterm's root and a free one by the binder it refers
 * to, so that `x + 1` under one more `let` hashes like `x + 1` above it
 * (plain de Bruijn terms differ there). The hash is polynomial over the
 * preorder token sequence, computed for all positions at once from prefix
 * sums in O(n); equal hashes are confirmed by comparing tokens. Classes are
 * taken largest first, so a repeated `f(g(x))` is shared whole before `g(x)`;
 * rounds repeat until nothing changes (CSE_MAX_ROUNDS).
 *
 * Which occurrences may share (meaning is the interpreter's; language.md
 * §6.3 and §8): the value is computed where the let is, before the node
 * that holds all occurrences. If the term may fail or not end (ps_may_fail),
 * its first occurrence in evaluation order must run whenever that node runs
 * (no `if` branch, `&&`/`||` right side, lambda or rec body between them)
 * and nothing that may fail may run between the two (so the same error, at
 * the same position, is reported first); the let value is that first
 * occurrence, locations included. A term that cannot fail may be hoisted
 * out of lambdas (it then runs once, where it ran once per element), and
 * out of branches when every path computes it anyway or when it is small
 * (CSE_CHEAP_SIZE, counting the values of earlier cse lets it uses): it
 * never adds more than that work where it did not run before.
 *
 * Requires a verified module (node types, in-scope variables). Preserves
 * meaning, errors and the IR's invariants: literals moved into a let value
 * get fixed types (IR_F_SUFFIX), since a let's right side is synthesised
 * while the occurrence may have taken its literals' types from context
 * (language.md §5). Terms with no variable and no array operation
 * (constants: simplify's job), variables, literals, lambdas, field
 * accesses of variables, and `delay(p)` and its producer p (fuse's choice
 * to compute p inside its consumer, language.md §7.15) are never shared.
 * A round whose result would print as text the parser cannot read back
 * (ps_printable) is dropped.
 */
#include "passes/pass.h"

#include <string.h>

#define CSE_NONE UINT32_MAX
/* Rounds per function: each shares the terms that the previous one left
 * blocked (a term inside another shared one, an error that a term now let
 * bound used to guard); real programs settle in two or three. */
#define CSE_MAX_ROUNDS 16
/* A term that cannot fail is hoisted out of a branch only at this size. */
#define CSE_CHEAP_SIZE 8
/* Functions with more tree positions (a body whose shared subtrees unfold
 * into a huge tree) are left alone. */
#define CSE_MAX_POSITIONS (1u << 22)
/* Recursion bound of the rebuild and of cse_covers (a verified tree is at
 * most CHK_MAX_DEPTH deep; this is above it with room for the new lets). */
#define CSE_MAX_NEST 6000u

/* ---- arithmetic modulo the prime 2^61 - 1 ---- */

#define CSE_P ((UINT64_C(1) << 61) - 1)
/* Arbitrary constants below CSE_P: the base of the polynomial hash, the
 * weight of a variable's level, and the tag of a bound variable. */
#define CSE_W UINT64_C(0x1d8e4e27c47d124f)
#define CSE_B UINT64_C(0x0a0761d6478bd642)
#define CSE_C UINT64_C(0x1bbd1c4a59d0f7e3)
#define CSE_VTAG UINT64_C(0x15f3a1e2d4c6b809)

static uint64_t cse_mod(uint64_t x) {
  x = (x & CSE_P) + (x >> 61);
  return x >= CSE_P ? x - CSE_P : x;
}

/* a * b mod P for a, b < P, in 64-bit arithmetic: with a = a1*2^31 + a0,
 * 2^61 == 1, so 2^62 == 2 and mid*2^31 == (mid >> 30) + (mid & (2^30-1))*2^31. */
static uint64_t cse_mul(uint64_t a, uint64_t b) {
  uint64_t a1 = a >> 31, a0 = a & 0x7fffffffu, b1 = b >> 31, b0 = b & 0x7fffffffu;
  uint64_t mid = a0 * b1 + a1 * b0;
  return cse_mod(a1 * b1 * 2 + (mid >> 30) + ((mid & 0x3fffffffu) << 31) + a0 * b0);
}

static uint64_t cse_add(uint64_t a, uint64_t b) {
  return cse_mod(a + b);
}
static uint64_t cse_sub(uint64_t a, uint64_t b) {
  return cse_mod(a + CSE_P - b);
}

static uint64_t cse_pow(uint64_t a, uint64_t e) {
  uint64_t r = 1;
  for (; e; e >>= 1, a = cse_mul(a, a))
    if (e & 1)
      r = cse_mul(r, a);
  return r;
}

static uint64_t cse_mix(uint64_t h, uint64_t v) {
  h ^= v + UINT64_C(0x9e3779b97f4a7c15) + (h << 6) + (h >> 2);
  h ^= h >> 31;
  h *= UINT64_C(0xbf58476d1ce4e5b9);
  return h ^ (h >> 29);
}

/* ---- the flattened body ---- */

typedef struct cse_pos {
  ir_ref ref;
  uint32_t parent, kid; /* parent position (CSE_NONE at the root), child index there */
  uint32_t end;         /* last position of the subtree */
  uint32_t bdepth;      /* variables in scope (parameters included) */
  uint32_t tdepth;      /* ancestors */
  uint32_t evo;         /* rank in evaluation order */
  uint32_t level;       /* VAR: level of its binder (the first parameter is 0) */
  uint32_t bind;        /* VAR: position of its binder, CSE_NONE for a parameter */
  uint32_t cls;         /* class of equal terms, or CSE_NONE */
  uint32_t mnext;       /* next member of the class */
  uint32_t sel;         /* selection that replaces this position, or CSE_NONE */
  uint32_t xsel;        /* first selection bound at this node, or CSE_NONE */
  uint32_t seen;        /* cse_worth_hoisting's marks (S->stamp) */
  bool taken;           /* inside a member of a selection of this round */
} cse_pos;

typedef struct cse_cls {
  uint64_t h;
  uint32_t rep, last, n, size;
} cse_cls;

/* One class chosen in a round: its let goes at x (or reuses the let at x
 * whose value is o1, when oldlevel is that let's level). */
typedef struct cse_sel {
  uint32_t x, o1, oldlevel, newlevel, xnext;
} cse_sel;

/* Per position k: W^k, W^-k, and the prefix sums below k of the token
 * terms and of the bound-variable terms (pw, ipw, p1, pq; n + 1 of them),
 * and the hash of k's subterm. */
typedef struct cse_hv {
  uint64_t pw, ipw, p1, pq, h;
} cse_hv;

typedef struct cse_frame {
  ir_ref r;
  uint32_t parent, kid;
} cse_frame;

typedef struct cse {
  ac_module *m;
  uint32_t nparams;
  cse_pos *pos;
  size_t npos, cappos;
  cse_hv *hv;
  size_t caphv;
  uint32_t *nint; /* prefix counts of variables and array operations */
  size_t capnint;
  uint32_t *binder; /* level -> position of its binder during the walk */
  size_t capbinder;
  uint32_t *lmap; /* old level -> new level during the rebuild */
  size_t caplmap;
  cse_frame *stk;
  size_t capstk;
  uint32_t *ustk;
  size_t capustk;
  cse_cls *cls;
  size_t ncls, capcls;
  uint32_t *slots;
  size_t capslots;
  uint32_t *order, *mem;
  size_t caporder, capmem;
  cse_sel *sel;
  size_t nsel, capsel;
  uint32_t names; /* binder-name slot holding "cse", the hint of the lets made */
  uint32_t stamp; /* current marks of cse_worth_hoisting */
  uint64_t winv;
  bool oom, bad; /* out of memory / give up on this function */
} cse;

static bool cse_grow(cse *S, void *vec, size_t *cap, size_t need, size_t size) {
  if (need <= *cap)
    return true;
  if (!ac_grow(S->m->ctx, (void **)vec, cap, need, size)) {
    S->oom = true;
    return false;
  }
  return true;
}

static const ir_node *cse_node(const cse *S, uint32_t p) {
  return ir_node_get(S->m, S->pos[p].ref);
}

/* ---- evaluation order and the kinds of edges (lib/interp is the model) ---- */

/* Children that run after the others, or never: lambdas (applied once the
 * operation's arrays are known) and the body of a rec. */
static bool cse_deferred(const ac_module *m, ir_ref r, uint32_t j) {
  const ir_node *n = ir_node_get(m, r);
  ir_ref k = ir_kid(m, r, j);
  if (k && (ir_node_get(m, k)->op == IR_LAM || ir_node_get(m, k)->op == IR_FNREF))
    return true;
  return n->op == IR_REC && j + 1 == n->nkids;
}

/* The rank of child j among r's children in evaluation order: stencil
 * evaluates its boundary value before its array; deferred children last. */
static uint32_t cse_rank(const ac_module *m, ir_ref r, uint32_t j) {
  const ir_node *n = ir_node_get(m, r);
  if (cse_deferred(m, r, j))
    return n->nkids + j;
  if (n->op == IR_STENCIL && n->nkids == 3 && (j == 1 || j == 2))
    return 3 - j;
  return j;
}

typedef enum cse_edge { CSE_PLAIN, CSE_BRANCH, CSE_BODY } cse_edge;

static cse_edge cse_edge_kind(const ac_module *m, ir_ref r, uint32_t j) {
  const ir_node *n = ir_node_get(m, r);
  switch ((ir_op)n->op) {
  case IR_IF:
    return j > 0 ? CSE_BRANCH : CSE_PLAIN;
  case IR_LAND:
  case IR_LOR:
    return j == 1 ? CSE_BRANCH : CSE_PLAIN;
  case IR_LAM:
    return CSE_BODY;
  case IR_REC:
    return j + 1 == n->nkids ? CSE_BODY : CSE_PLAIN;
  default:
    return CSE_PLAIN;
  }
}

/* Operations that check something of their first argument before they
 * evaluate the next ones (a shape, a slice's array, a rec's bounds, the
 * count of iterate), so that an error of theirs may come in between. */
static bool cse_checks_between(ir_op op) {
  switch (op) {
  case IR_SLICE:
  case IR_FILL:
  case IR_BACKPERMUTE:
  case IR_RESHAPE:
  case IR_REPLICATE:
  case IR_ITERATE:
  case IR_REC:
    return true;
  default:
    return false;
  }
}

/* ---- flattening ---- */

/* Preorder walk of the body: parents, depths, variable levels and binders. */
static bool cse_flatten(cse *S, ir_ref body) {
  const ac_module *m = S->m;
  size_t nstk = 0;
  S->npos = 0;
  if (!cse_grow(S, &S->stk, &S->capstk, 1, sizeof *S->stk))
    return false;
  S->stk[nstk++] = (cse_frame){body, CSE_NONE, 0};
  while (nstk) {
    cse_frame f = S->stk[--nstk];
    if (S->npos >= CSE_MAX_POSITIONS) {
      S->bad = true;
      return false;
    }
    if (!cse_grow(S, &S->pos, &S->cappos, S->npos + 1, sizeof *S->pos))
      return false;
    uint32_t k = (uint32_t)S->npos++;
    cse_pos *p = &S->pos[k];
    memset(p, 0, sizeof *p);
    p->ref = f.r;
    p->parent = f.parent;
    p->kid = f.kid;
    p->bind = p->cls = p->mnext = p->sel = p->xsel = CSE_NONE;
    p->bdepth = S->nparams;
    if (f.parent != CSE_NONE) {
      const cse_pos *q = &S->pos[f.parent];
      uint32_t b = ir_binders(m, q->ref, f.kid), base = q->bdepth, qpos = f.parent;
      p->bdepth = base + b;
      p->tdepth = q->tdepth + 1;
      if (!cse_grow(S, &S->binder, &S->capbinder, (size_t)base + b, sizeof *S->binder))
        return false;
      for (uint32_t t = 0; t < b; t++)
        S->binder[base + t] = qpos;
    }
    const ir_node *n = ir_node_get(m, f.r);
    if (n->op == IR_VAR) {
      if (n->attr < 0 || (uint64_t)n->attr >= p->bdepth) {
        S->bad = true; /* not verified IR: leave it to the verifier */
        return false;
      }
      p->level = p->bdepth - 1 - (uint32_t)n->attr;
      p->bind = p->level >= S->nparams ? S->binder[p->level] : CSE_NONE;
    }
    if (!cse_grow(S, &S->stk, &S->capstk, nstk + n->nkids, sizeof *S->stk))
      return false;
    n = ir_node_get(m, f.r);
    for (uint32_t j = n->nkids; j-- > 0;)
      if (ir_kid(m, f.r, j))
        S->stk[nstk++] = (cse_frame){ir_kid(m, f.r, j), k, j};
  }
  /* subtree ends: a position's subtree is itself and its children's */
  for (size_t k = 0; k < S->npos; k++)
    S->pos[k].end = (uint32_t)k;
  for (size_t k = S->npos; k-- > 1;) {
    uint32_t par = S->pos[k].parent;
    if (S->pos[k].end > S->pos[par].end)
      S->pos[par].end = S->pos[k].end;
  }
  return true;
}

/* Ranks positions in evaluation order (children by cse_rank). */
static bool cse_order(cse *S) {
  const ac_module *m = S->m;
  size_t nstk = 0;
  uint32_t next = 0;
  if (!cse_grow(S, &S->ustk, &S->capustk, 1, sizeof *S->ustk))
    return false;
  S->ustk[nstk++] = 0;
  while (nstk) {
    uint32_t p = S->ustk[--nstk];
    S->pos[p].evo = next++;
    /* children, pushed so that the lowest rank pops first: in reverse
     * order of position (ranks then descend already but for stencil and
     * deferred children), then an insertion sort by descending rank */
    size_t first = nstk;
    for (uint32_t k = p + 1; k <= S->pos[p].end; k = S->pos[k].end + 1) {
      if (!cse_grow(S, &S->ustk, &S->capustk, nstk + 1, sizeof *S->ustk))
        return false;
      S->ustk[nstk++] = k;
    }
    for (size_t i = first, j = nstk; i + 1 < j; i++, j--) {
      uint32_t t = S->ustk[i];
      S->ustk[i] = S->ustk[j - 1];
      S->ustk[j - 1] = t;
    }
    ir_ref r = S->pos[p].ref;
    for (size_t i = first + 1; i < nstk; i++) {
      uint32_t v = S->ustk[i], rv = cse_rank(m, r, S->pos[v].kid);
      size_t j = i;
      while (j > first && cse_rank(m, r, S->pos[S->ustk[j - 1]].kid) < rv) {
        S->ustk[j] = S->ustk[j - 1];
        j--;
      }
      S->ustk[j] = v;
    }
  }
  return true;
}

/* ---- hashing ---- */

/* The hash of one preorder token; a variable's level is added by the caller. */
static uint64_t cse_token(const ac_module *m, ir_ref r) {
  const ir_node *n = ir_node_get(m, r);
  uint64_t h = cse_mix(cse_mix(n->op, n->nkids), (uint64_t)n->attr);
  switch ((ir_op)n->op) {
  case IR_LIT:
  case IR_REC:
    h = cse_mix(cse_mix(h, n->lit.u), n->type);
    break;
  case IR_CAST:
    h = cse_mix(h, n->type);
    break;
  case IR_ARRLIT:
    for (int64_t i = 0; i < n->attr; i++)
      h = cse_mix(h, (uint64_t)m->ints[n->aux + (uint64_t)i]);
    break;
  default:
    break;
  }
  return cse_mod(h);
}

/* Hashes every position: H(p) = sum over the tokens k of p's range of
 * t_k W^(k-p), where a variable's token is tag + B*level, plus, for each
 * variable bound inside the range, (C - B*bdepth(p)) W^(k-p): so a bound
 * variable counts by its level relative to p and a free one by its own
 * level. The bound variables of a range are those whose binder lies in
 * it, so their sum is a range sum over binder positions (pq). */
static bool cse_hash(cse *S) {
  size_t n = S->npos;
  if (!cse_grow(S, &S->hv, &S->caphv, n + 1, sizeof *S->hv) ||
      !cse_grow(S, &S->nint, &S->capnint, n + 1, sizeof *S->nint))
    return false;
  cse_hv *hv = S->hv;
  hv[0].pw = hv[0].ipw = 1;
  for (size_t k = 1; k <= n; k++) {
    hv[k].pw = cse_mul(hv[k - 1].pw, CSE_W);
    hv[k].ipw = cse_mul(hv[k - 1].ipw, S->winv);
  }
  for (size_t k = 0; k <= n; k++)
    hv[k].pq = 0;
  hv[0].p1 = 0;
  S->nint[0] = 0;
  for (size_t k = 0; k < n; k++) {
    const cse_pos *p = &S->pos[k];
    const ir_node *nd = ir_node_get(S->m, p->ref);
    uint64_t t;
    if (nd->op == IR_VAR) {
      t = cse_add(CSE_VTAG, cse_mul(CSE_B, p->level));
      if (p->bind != CSE_NONE) /* summed at the binder for now */
        hv[p->bind].pq = cse_add(hv[p->bind].pq, hv[k].pw);
    } else {
      t = cse_token(S->m, p->ref);
    }
    hv[k + 1].p1 = cse_add(hv[k].p1, cse_mul(t, hv[k].pw));
    S->nint[k + 1] = S->nint[k] + (nd->op == IR_VAR || ps_is_array_op(S->m, p->ref));
  }
  /* per-binder sums -> prefix sums (pq of k: the sum below k) */
  uint64_t acc = 0;
  for (size_t k = 0; k <= n; k++) {
    uint64_t v = hv[k].pq;
    hv[k].pq = acc;
    acc = cse_add(acc, v);
  }
  for (size_t k = 0; k < n; k++) {
    const cse_pos *p = &S->pos[k];
    uint64_t sum = cse_sub(hv[p->end + 1].p1, hv[k].p1);
    uint64_t bound = cse_sub(hv[p->end + 1].pq, hv[k].pq);
    uint64_t corr = cse_sub(CSE_C, cse_mul(CSE_B, p->bdepth));
    hv[k].h = cse_mul(cse_add(sum, cse_mul(corr, bound)), hv[k].ipw);
  }
  return true;
}

/* Whether the subterms at a and b are equal as computations: the same
 * tokens, variables bound inside at the same relative level, free ones
 * referring to the same level (ir_equal up to the depth of each). */
static bool cse_same(const cse *S, uint32_t a, uint32_t b) {
  const ac_module *m = S->m;
  uint32_t size = S->pos[a].end - a;
  if (S->pos[b].end - b != size)
    return false;
  uint32_t da = S->pos[a].bdepth, db = S->pos[b].bdepth;
  for (uint32_t j = 0; j <= size; j++) {
    const cse_pos *pa = &S->pos[a + j], *pb = &S->pos[b + j];
    const ir_node *x = ir_node_get(m, pa->ref), *y = ir_node_get(m, pb->ref);
    /* a variable's index depends on where it is; its level is compared */
    if (x->op != y->op || x->nkids != y->nkids || (x->op != IR_VAR && x->attr != y->attr))
      return false;
    switch ((ir_op)x->op) {
    case IR_VAR: {
      bool ba = pa->level >= da, bb = pb->level >= db;
      if (ba != bb || (ba ? pa->level - da != pb->level - db : pa->level != pb->level))
        return false;
      break;
    }
    case IR_LIT:
      if (x->lit.u != y->lit.u || x->type != y->type)
        return false;
      break;
    case IR_REC: /* and the same schedule asked for, if any (`by`) */
      if (x->lit.u != y->lit.u || x->type != y->type ||
          (x->flags & IR_F_SCHED) != (y->flags & IR_F_SCHED) ||
          ((x->flags & IR_F_SCHED) &&
           memcmp(&m->ints[x->aux], &m->ints[y->aux], (size_t)x->attr * sizeof(int64_t)) != 0))
        return false;
      break;
    case IR_CAST:
      if (x->type != y->type)
        return false;
      break;
    case IR_ARRLIT: /* the type too: `[]` of i32 is not `[]` of f64 */
      if (x->type != y->type ||
          memcmp(&m->ints[x->aux], &m->ints[y->aux], (size_t)x->attr * sizeof(int64_t)) != 0)
        return false;
      break;
    default:
      break;
    }
  }
  return true;
}

/* A term that costs nothing to repeat: a variable, a literal, a field of a
 * variable, or a tuple of such terms (the shape `(n, m, k)` two
 * backpermutes share: bound by a let it would only hide them from fuse). */
static bool cse_trivial(const ac_module *m, ir_ref r, unsigned depth) {
  const ir_node *n = ir_node_get(m, r);
  switch ((ir_op)n->op) {
  case IR_VAR:
  case IR_LIT:
    return true;
  case IR_PROJ:
    return cse_trivial(m, ir_kid(m, r, 0), depth);
  case IR_TUPLE:
    if (depth > 8)
      return false;
    for (uint32_t i = 0; i < n->nkids; i++)
      if (!cse_trivial(m, ir_kid(m, r, i), depth + 1))
        return false;
    return true;
  default:
    return false;
  }
}

/* Terms worth sharing: not a variable, literal, lambda, function name, unit,
 * field of a variable, tuple of such terms or delay; not a constant; of a
 * type a let can bind. */
static bool cse_candidate(const cse *S, uint32_t k) {
  const ac_module *m = S->m;
  ir_ref r = S->pos[k].ref;
  const ir_node *n = ir_node_get(m, r);
  uint32_t par = S->pos[k].parent;
  /* a delay's operand is a producer fuse chose to compute inside its
   * consumer (language.md §7.15): binding it would build the array */
  if (par != CSE_NONE && cse_node(S, par)->op == IR_DELAY)
    return false;
  /* tiled's operand is the kernel smem-stencil chose to tile: bound by a
   * let it would no longer be one the lowering can see */
  if (par != CSE_NONE && cse_node(S, par)->op == IR_TILED)
    return false;
  /* likewise sized(e, s): lowering allocates e early at s, an expression
   * of the arguments */
  if (par != CSE_NONE && cse_node(S, par)->op == IR_SIZED)
    return false;
  switch ((ir_op)n->op) {
  case IR_VAR:
  case IR_LIT:
  case IR_LAM:
  case IR_FNREF:
  case IR_DELAY:
    return false;
  case IR_TUPLE:
    if (n->nkids == 0 || cse_trivial(m, r, 0))
      return false;
    break;
  case IR_ARRLIT: /* `[]` takes its type from its place */
    if (n->nkids == 0)
      return false;
    break;
  case IR_PROJ:
    if (cse_trivial(m, r, 0))
      return false;
    break;
  default:
    break;
  }
  if (n->type == IR_TY_NONE)
    return false;
  ir_typeinfo ti = ir_ty_info(m->ctx, n->type);
  if (ti.kind == TK_FN || ti.kind == TK_WINDOW)
    return false;
  return S->nint[S->pos[k].end + 1] - S->nint[k] > 0;
}

/* Groups the candidate positions into classes of equal terms. */
static bool cse_classes(cse *S) {
  size_t n = S->npos, cap = 16;
  while (cap < 2 * n)
    cap *= 2;
  if (!cse_grow(S, &S->slots, &S->capslots, cap, sizeof *S->slots))
    return false;
  for (size_t i = 0; i < cap; i++)
    S->slots[i] = CSE_NONE;
  S->ncls = 0;
  for (uint32_t k = 0; k < n; k++) {
    if (!cse_candidate(S, k))
      continue;
    uint64_t h = S->hv[k].h;
    size_t slot = (size_t)h & (cap - 1);
    uint32_t c;
    while ((c = S->slots[slot]) != CSE_NONE && !(S->cls[c].h == h && cse_same(S, S->cls[c].rep, k)))
      slot = (slot + 1) & (cap - 1);
    if (c == CSE_NONE) {
      if (!cse_grow(S, &S->cls, &S->capcls, S->ncls + 1, sizeof *S->cls))
        return false;
      c = (uint32_t)S->ncls++;
      S->cls[c] = (cse_cls){h, k, k, 1, S->pos[k].end - k + 1};
      S->slots[slot] = c;
    } else {
      S->pos[S->cls[c].last].mnext = k;
      S->cls[c].last = k;
      S->cls[c].n++;
    }
    S->pos[k].cls = c;
  }
  return true;
}

/* ---- choosing what to share ---- */

static uint32_t cse_lca(const cse *S, uint32_t a, uint32_t b) {
  while (S->pos[a].tdepth > S->pos[b].tdepth)
    a = S->pos[a].parent;
  while (S->pos[b].tdepth > S->pos[a].tdepth)
    b = S->pos[b].parent;
  while (a != b) {
    a = S->pos[a].parent;
    b = S->pos[b].parent;
  }
  return a;
}

/* The deepest level a free variable of the term at p refers to, plus one
 * (0 when the term is closed). */
static uint32_t cse_free_top(const cse *S, uint32_t p) {
  uint32_t top = 0, d = S->pos[p].bdepth;
  for (uint32_t k = p; k <= S->pos[p].end; k++)
    if (ir_node_get(S->m, S->pos[k].ref)->op == IR_VAR && S->pos[k].level < d &&
        S->pos[k].level + 1 > top)
      top = S->pos[k].level + 1;
  return top;
}

/* Whether the value at o1 may be computed at x instead, for a term that may
 * fail: o1 runs whenever x does, and nothing that may fail runs in x before
 * it (also not a check of an operation between its arguments). */
static bool cse_may_move(const cse *S, uint32_t o1, uint32_t x) {
  const ac_module *m = S->m;
  for (uint32_t q = o1; q != x; q = S->pos[q].parent) {
    uint32_t par = S->pos[q].parent, j = S->pos[q].kid;
    ir_ref r = S->pos[par].ref;
    if (cse_edge_kind(m, r, j) != CSE_PLAIN)
      return false;
    uint32_t rj = cse_rank(m, r, j), nk = ir_node_get(m, r)->nkids;
    bool before = false;
    for (uint32_t i = 0; i < nk; i++) {
      ir_ref k = ir_kid(m, r, i);
      if (i == j || !k || cse_deferred(m, r, i) || cse_rank(m, r, i) > rj)
        continue;
      before = true;
      if (ps_may_fail(m, k))
        return false;
    }
    if (before && cse_checks_between((ir_op)ir_node_get(m, r)->op))
      return false;
  }
  return true;
}

/* Whether every evaluation of p evaluates an occurrence: positions on the
 * paths from x to the occurrences carry S->stamp, occurrences S->stamp + 1.
 * Both branches of an `if` may cover it; a lambda or rec body, or the right
 * side of `&&` and `||`, may not run. */
static bool cse_covers(const cse *S, uint32_t p, unsigned nest) {
  if (S->pos[p].seen == S->stamp + 1)
    return true;
  if (nest > CSE_MAX_NEST)
    return false;
  const ac_module *m = S->m;
  ir_ref r = S->pos[p].ref;
  bool is_if = ir_node_get(m, r)->op == IR_IF, branches = is_if;
  for (uint32_t k = p + 1; k <= S->pos[p].end; k = S->pos[k].end + 1) {
    if (S->pos[k].seen != S->stamp && S->pos[k].seen != S->stamp + 1) {
      if (is_if && S->pos[k].kid > 0)
        branches = false;
      continue;
    }
    cse_edge e = cse_edge_kind(m, r, S->pos[k].kid);
    bool c = cse_covers(S, k, nest + 1);
    if (e == CSE_PLAIN && c)
      return true;
    if (e == CSE_BRANCH && is_if)
      branches &= c;
  }
  return branches;
}

/* Whether the let at b is one this pass made (in this run or an earlier
 * one, whose lets print as cse, cse_1, ...). A user's let so named only
 * makes cse_cost more careful. */
static bool cse_made(const cse *S, uint32_t b) {
  const ac_module *m = S->m;
  const ir_node *n = cse_node(S, b);
  if (n->op != IR_LET || n->names == 0 || n->names >= m->nsyms)
    return false;
  const char *s = ir_sym_str(m->ctx, m->syms[n->names]);
  if (strncmp(s, "cse", 3) != 0)
    return false;
  if (s[3] == 0)
    return true;
  if (s[3] != '_' || s[4] == 0)
    return false;
  for (s += 4; *s; s++)
    if (*s < '0' || *s > '9')
      return false;
  return true;
}

/* The size of the term at p, where a free variable bound by a let of this
 * pass counts as the size of its value: the work computing p does, however
 * earlier rounds (or runs) split it. Stops past `limit`; each step down (to
 * an earlier position) costs at least two, so the recursion is short. */
static uint32_t cse_cost(const cse *S, uint32_t p, uint32_t limit) {
  uint32_t cost = 0;
  for (uint32_t k = p; k <= S->pos[p].end && cost <= limit; k++) {
    uint32_t b = S->pos[k].bind;
    if (ir_node_get(S->m, S->pos[k].ref)->op == IR_VAR && b != CSE_NONE && b < p && cse_made(S, b))
      cost += cse_cost(S, b + 1, limit - cost);
    else
      cost++;
  }
  return cost;
}

/* For a term that cannot fail: computing it at x costs nothing new if x
 * always evaluates an occurrence; out of lambda bodies only, it runs once
 * where it ran any number of times; out of a branch, it must be cheap. */
static bool cse_worth_hoisting(cse *S, const uint32_t *mem, uint32_t nm, uint32_t x) {
  bool branch = false;
  S->stamp += 2;
  for (uint32_t i = 0; i < nm; i++) {
    S->pos[mem[i]].seen = S->stamp + 1;
    for (uint32_t q = mem[i]; q != x; q = S->pos[q].parent) {
      uint32_t par = S->pos[q].parent;
      branch |= cse_edge_kind(S->m, S->pos[par].ref, S->pos[q].kid) == CSE_BRANCH;
      S->pos[par].seen = S->stamp;
    }
  }
  if (cse_covers(S, x, 0) || !branch)
    return true;
  return cse_cost(S, mem[0], CSE_CHEAP_SIZE) <= CSE_CHEAP_SIZE;
}

/* Class x goes before class y: larger terms first, then by position. */
static bool cse_before(uint32_t x, uint32_t y, const cse_cls *cls) {
  return cls[x].size != cls[y].size ? cls[x].size > cls[y].size : cls[x].rep < cls[y].rep;
}

/* Sorts class ids with cse_before: a bottom-up merge sort (qsort has no
 * context argument for the class table). */
static void cse_sort(uint32_t *v, uint32_t *tmp, size_t n, const cse_cls *cls) {
  for (size_t w = 1; w < n; w *= 2) {
    for (size_t lo = 0; lo < n; lo += 2 * w) {
      size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
      size_t i = lo, j = mid, o = lo;
      while (i < mid && j < hi)
        tmp[o++] = cse_before(v[j], v[i], cls) ? v[j++] : v[i++];
      while (i < mid)
        tmp[o++] = v[i++];
      while (j < hi)
        tmp[o++] = v[j++];
    }
    memcpy(v, tmp, n * sizeof *v);
  }
}

/* Chooses the classes to share in this round; returns the occurrences
 * removed. */
static uint64_t cse_select(cse *S) {
  const ac_module *m = S->m;
  size_t nc = 0;
  S->nsel = 0;
  if (!cse_grow(S, &S->order, &S->caporder, 2 * S->ncls + 1, sizeof *S->order))
    return 0;
  for (uint32_t c = 0; c < S->ncls; c++)
    if (S->cls[c].n >= 2)
      S->order[nc++] = c;
  cse_sort(S->order, S->order + S->ncls, nc, S->cls);
  uint64_t removed = 0;
  for (size_t oi = 0; oi < nc; oi++) {
    const cse_cls *cl = &S->cls[S->order[oi]];
    if (!cse_grow(S, &S->mem, &S->capmem, cl->n, sizeof *S->mem))
      return removed;
    uint32_t nm = 0, o1 = CSE_NONE;
    for (uint32_t k = cl->rep; k != CSE_NONE; k = S->pos[k].mnext)
      if (!S->pos[k].taken) {
        S->mem[nm++] = k;
        if (o1 == CSE_NONE || S->pos[k].evo < S->pos[o1].evo)
          o1 = k;
      }
    if (nm < 2)
      continue;
    uint32_t x = cse_lca(S, S->mem[0], S->mem[nm - 1]);
    if (cse_free_top(S, S->mem[0]) > S->pos[x].bdepth)
      continue; /* the occurrences see different binders */
    bool reuse = S->pos[o1].parent == x && S->pos[o1].kid == 0 && cse_node(S, x)->op == IR_LET;
    if (!reuse && (ps_may_fail(m, S->pos[o1].ref) ? !cse_may_move(S, o1, x)
                                                  : !cse_worth_hoisting(S, S->mem, nm, x)))
      continue;
    if (!cse_grow(S, &S->sel, &S->capsel, S->nsel + 1, sizeof *S->sel))
      return removed;
    uint32_t s = (uint32_t)S->nsel++;
    S->sel[s] = (cse_sel){x, o1, reuse ? S->pos[x].bdepth : CSE_NONE, 0, CSE_NONE};
    for (uint32_t i = 0; i < nm; i++) {
      uint32_t k = S->mem[i];
      for (uint32_t q = k; q <= S->pos[k].end; q++)
        S->pos[q].taken = true;
      if (!(reuse && k == o1))
        S->pos[k].sel = s;
    }
    if (!reuse) {
      /* lets at one node in the order their values ran before */
      uint32_t *link = &S->pos[x].xsel;
      while (*link != CSE_NONE && S->pos[S->sel[*link].o1].evo < S->pos[o1].evo)
        link = &S->sel[*link].xnext;
      S->sel[s].xnext = *link;
      *link = s;
    }
    removed += nm - 1;
  }
  return removed;
}

/* ---- rebuilding ---- */

static ir_ref cse_build(cse *S, uint32_t p, uint32_t nd, bool fix, unsigned nest);

/* Rebuilds the node at p at new depth nd (its variables re-indexed through
 * lmap); `fix` gives unsuffixed literals their type for good. */
static ir_ref cse_build_node(cse *S, uint32_t p, uint32_t nd, bool fix, unsigned nest) {
  ac_module *m = S->m;
  ir_ref r = S->pos[p].ref;
  ir_node n = *ir_node_get(m, r);
  if (n.op == IR_VAR) {
    uint32_t idx = nd - 1 - S->lmap[S->pos[p].level];
    if (idx == (uint32_t)n.attr)
      return r;
    ir_ref v = ir_var(m, n.loc, idx);
    if (v)
      ir_node_get(m, v)->type = n.type;
    return v;
  }
  if (n.op == IR_LIT) {
    if (!fix || (n.flags & IR_F_SUFFIX))
      return r;
    ir_ref l = ps_rebuild(m, r, 0, NULL);
    if (l)
      ir_node_get(m, l)->flags = (uint16_t)((n.flags | IR_F_SUFFIX) & ~IR_F_CTX);
    return l;
  }
  ir_ref small[8];
  ir_ref *kids = n.nkids <= 8 ? small : ac_alloc(m->ctx, n.nkids * sizeof *kids);
  if (!kids) {
    S->oom = true;
    return IR_NONE;
  }
  for (uint32_t j = 0; j < n.nkids; j++)
    kids[j] = ir_kid(m, r, j);
  bool ok = true;
  for (uint32_t k = p + 1; ok && k <= S->pos[p].end; k = S->pos[k].end + 1) {
    uint32_t j = S->pos[k].kid, b = ir_binders(m, r, j), base = S->pos[p].bdepth;
    for (uint32_t t = 0; t < b; t++)
      S->lmap[base + t] = nd + t;
    kids[j] = cse_build(S, k, nd + b, fix, nest + 1);
    ok = kids[j] != IR_NONE;
  }
  ir_ref res = ok ? ps_rebuild_if_changed(m, r, kids) : IR_NONE;
  if (kids != small)
    ac_free(m->ctx, kids);
  return res;
}

/* Rebuilds position p: a shared occurrence becomes its variable; the lets
 * chosen for p wrap it. */
static ir_ref cse_build(cse *S, uint32_t p, uint32_t nd, bool fix, unsigned nest) {
  ac_module *m = S->m;
  if (nest > CSE_MAX_NEST) {
    S->bad = true;
    return IR_NONE;
  }
  const cse_pos *ps = &S->pos[p];
  if (ps->sel != CSE_NONE) {
    const cse_sel *s = &S->sel[ps->sel];
    uint32_t lv = s->oldlevel != CSE_NONE ? S->lmap[s->oldlevel] : s->newlevel;
    return ir_var(m, ir_node_get(m, ps->ref)->loc, nd - 1 - lv);
  }
  uint32_t nlets = 0;
  for (uint32_t s = ps->xsel; s != CSE_NONE; s = S->sel[s].xnext)
    nlets++;
  if (nlets == 0)
    return cse_build_node(S, p, nd, fix, nest);
  ir_ref small[4];
  ir_ref *vals = nlets <= 4 ? small : ac_alloc(m->ctx, nlets * sizeof *vals);
  if (!vals) {
    S->oom = true;
    return IR_NONE;
  }
  uint32_t i = 0, d = nd;
  ir_ref body = IR_NONE;
  for (uint32_t s = S->pos[p].xsel; s != CSE_NONE; s = S->sel[s].xnext, i++, d++) {
    vals[i] = cse_build_node(S, S->sel[s].o1, d, true, nest + 1);
    S->sel[s].newlevel = d;
    if (!vals[i])
      goto done;
  }
  body = cse_build_node(S, p, d, fix, nest + nlets);
  ir_loc loc = ir_node_get(m, S->pos[p].ref)->loc;
  while (body && i-- > 0) {
    ir_ref kids[2] = {vals[i], body};
    body = ir_node_new(m, IR_LET, loc, 2, kids);
    if (body)
      ir_node_get(m, body)->names = S->names;
  }
done:
  if (vals != small)
    ac_free(m->ctx, vals);
  return body;
}

/* One round over function f: true if it shared something. */
static bool cse_round(cse *S, ir_func *f, uint64_t *eliminated) {
  S->nparams = f->nparams;
  if (!cse_flatten(S, f->body) || !cse_order(S) || !cse_hash(S) || !cse_classes(S))
    return false;
  uint64_t removed = cse_select(S);
  if (S->oom || S->nsel == 0)
    return false;
  uint32_t maxd = 0;
  for (size_t k = 0; k < S->npos; k++)
    if (S->pos[k].bdepth > maxd)
      maxd = S->pos[k].bdepth;
  /* new levels stay below old ones plus the lets made */
  if (!cse_grow(S, &S->lmap, &S->caplmap, (size_t)maxd + 1, sizeof *S->lmap))
    return false;
  for (uint32_t i = 0; i < S->nparams; i++)
    S->lmap[i] = i;
  ir_ref body = cse_build(S, 0, S->nparams, false, 0);
  if (!body || !ps_printable(S->m, body)) {
    S->bad |= body != IR_NONE;
    return false;
  }
  f->body = body;
  *eliminated += removed;
  return true;
}

static void cse_free(cse *S) {
  ac_context *ctx = S->m->ctx;
  void *vs[] = {S->pos,  S->hv,  S->nint,  S->binder, S->lmap, S->stk,
                S->ustk, S->cls, S->slots, S->order,  S->mem,  S->sel};
  for (size_t i = 0; i < sizeof vs / sizeof vs[0]; i++)
    ac_free(ctx, vs[i]);
}

/* The entry point (registered in passes_list.h). */
ac_status ps_cse(ps_ctx *c);
ac_status ps_cse(ps_ctx *c) {
  ac_module *m = c->m;
  cse S;
  memset(&S, 0, sizeof S);
  S.m = m;
  S.winv = cse_pow(CSE_W, CSE_P - 2);
  ir_sym name = ir_sym_intern(m->ctx, "cse", 3);
  S.names = name ? ir_syms_push(m, 1, &name) : 0;
  if (!S.names)
    return ir_report(c->err, NULL, AC_ERR_NOMEM);
  uint64_t eliminated = 0;
  for (size_t fi = 0; fi < m->nfuncs && !S.oom && !m->oom; fi++) {
    ir_func *f = &m->funcs[fi];
    if (f->is_extern || f->body == IR_NONE)
      continue;
    S.bad = false;
    for (int round = 0; round < CSE_MAX_ROUNDS && !S.bad; round++) {
      if (!cse_round(&S, &m->funcs[fi], &eliminated))
        break;
    }
  }
  cse_free(&S);
  c->counters[0] += eliminated;
  if (S.oom || m->oom)
    return ir_report(c->err, NULL, AC_ERR_NOMEM);
  return AC_OK;
}
