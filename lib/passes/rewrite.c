/* lib/passes/rewrite.c: small helpers every pass uses (pass.h).
 *
 * Passes never edit a node that a function already refers to: subtrees are
 * shared (ir_shift and ir_subst reuse what they do not change, the builder
 * shares values used twice), so an edit in place would change every use.
 * ps_rebuild makes the new node instead; ps_rebuild_if_changed keeps the
 * old one when nothing changed, which keeps sharing and makes "did this
 * pass change anything" a pointer comparison.
 *
 * ps_size and ps_may_fail are the two judgements passes share: how big a
 * term is (inlining and duplication heuristics) and whether evaluating it
 * can report a runtime error or not end (docs/language.md §8), which is
 * what decides whether a term may be dropped, duplicated or moved.
 */
#include "passes/pass.h"

#include <string.h>

ir_ref ps_rebuild(ac_module *m, ir_ref r, uint32_t nkids, const ir_ref *kids) {
  ir_node old = *ir_node_get(m, r);
  ir_ref c = ir_node_new(m, (ir_op)old.op, old.loc, nkids, kids);
  if (!c)
    return IR_NONE;
  ir_node *n = ir_node_get(m, c);
  uint32_t k = n->kids;
  *n = old;
  n->kids = k;
  n->nkids = nkids;
  return c;
}

ir_ref ps_rebuild_if_changed(ac_module *m, ir_ref r, const ir_ref *kids) {
  uint32_t nk = ir_node_get(m, r)->nkids;
  for (uint32_t i = 0; i < nk; i++)
    if (ir_kid(m, r, i) != kids[i])
      return ps_rebuild(m, r, nk, kids);
  return r;
}

/* Explicit stacks keep both walks free of recursion: trees may be as deep
 * as the parser allows, and ps_size is asked about many subtrees. */
typedef struct ps_stack {
  ac_context *ctx;
  ir_ref small[64];
  ir_ref *v;
  size_t n, cap;
  bool oom;
} ps_stack;

static void st_init(ps_stack *s, ac_context *ctx) {
  s->ctx = ctx;
  s->v = s->small;
  s->n = 0;
  s->cap = sizeof s->small / sizeof s->small[0];
  s->oom = false;
}

static void st_push(ps_stack *s, ir_ref r) {
  if (s->n == s->cap) {
    size_t cap = s->cap * 2;
    ir_ref *v = ac_alloc(s->ctx, cap * sizeof *v);
    if (!v) {
      s->oom = true;
      return;
    }
    memcpy(v, s->v, s->n * sizeof *v);
    if (s->v != s->small)
      ac_free(s->ctx, s->v);
    s->v = v;
    s->cap = cap;
  }
  s->v[s->n++] = r;
}

static void st_free(ps_stack *s) {
  if (s->v != s->small)
    ac_free(s->ctx, s->v);
}

uint32_t ps_size(const ac_module *m, ir_ref r, uint32_t limit) {
  if (!r || limit == 0)
    return 0;
  ps_stack s;
  st_init(&s, m->ctx);
  st_push(&s, r);
  uint32_t count = 0;
  while (s.n && count < limit && !s.oom) {
    ir_ref x = s.v[--s.n];
    count++;
    const ir_node *n = ir_node_get(m, x);
    for (uint32_t i = 0; i < n->nkids; i++)
      if (ir_kid(m, x, i))
        st_push(&s, ir_kid(m, x, i));
  }
  /* out of memory: say "big", the answer that makes passes do nothing */
  if (s.oom)
    count = limit;
  st_free(&s);
  return count < limit ? count : limit;
}

static bool empty_arrlit_at(const ac_module *m, ir_ref r, unsigned depth) {
  const ir_node *n = ir_node_get(m, r);
  if (depth > 10000)
    return true; /* too deep to tell: say yes, which is the careful answer */
  if (n->op == IR_ARRLIT && n->nkids == 0)
    return true;
  for (uint32_t i = 0; i < n->nkids; i++) {
    ir_ref k = ir_kid(m, r, i);
    if (k && empty_arrlit_at(m, k, depth + 1))
      return true;
  }
  return false;
}

bool ps_has_empty_arrlit(const ac_module *m, ir_ref r) { return empty_arrlit_at(m, r, 0); }

bool ps_is_array_op(const ac_module *m, ir_ref r) {
  ir_op op = (ir_op)ir_node_get(m, r)->op;
  return (op >= IR_GENERATE && op <= IR_WHILE) || op == IR_REC || op == IR_ARRLIT;
}

/* Whether node x itself (not its children) can fail or loop. */
static bool node_may_fail(const ac_module *m, ir_ref x) {
  const ir_node *n = ir_node_get(m, x);
  switch ((ir_op)n->op) {
  case IR_VAR: case IR_LIT: case IR_TUPLE: case IR_PROJ: case IR_LET: case IR_LETTUP:
  case IR_IF: case IR_FNREF: case IR_LAM: case IR_CAST:
  case IR_NEG: case IR_NOT: case IR_BNOT: case IR_LOR: case IR_LAND:
  case IR_EQ: case IR_NE: case IR_LT: case IR_LE: case IR_GT: case IR_GE:
  case IR_BOR: case IR_BXOR: case IR_BAND: case IR_SHL: case IR_SHR:
  case IR_ADD: case IR_SUB: case IR_MUL:
  /* x/0 == 0 and x%0 == x (docs/language.md §6): integer division cannot
   * trap, and float division never does */
  case IR_DIV: case IR_REM:
    return false;
  case IR_LEN: case IR_SHAPE: {
    /* of a tuple of arrays, they check that the arrays agree (§8) */
    ir_type t = ir_node_get(m, ir_kid(m, x, 0))->type;
    return t == IR_TY_NONE || ir_ty_info(m->ctx, t).kind != TK_ARRAY;
  }
  default:
    /* math builtins are total on their domain (NaN results, no errors) */
    if (ir_op_is_scalar(n->op))
      return false;
    /* indexing, loops, calls (they may loop or fail inside), every array
     * operation (shape checks, extents, allocation limits), rec */
    return true;
  }
}

bool ps_fn_may_fail(const ac_module *m, ir_ref fn) {
  const ir_node *n = ir_node_get(m, fn);
  if (n->op == IR_LAM)
    return ps_may_fail(m, ir_kid(m, fn, 0));
  if (n->op != IR_FNREF || n->attr < 0 || (uint64_t)n->attr >= m->nfuncs ||
      m->funcs[n->attr].is_extern || !m->funcs[n->attr].body)
    return true;
  return ps_may_fail(m, m->funcs[n->attr].body);
}

bool ps_may_fail(const ac_module *m, ir_ref r) {
  if (!r)
    return false;
  ps_stack s;
  st_init(&s, m->ctx);
  st_push(&s, r);
  bool fail = false;
  while (s.n && !fail && !s.oom) {
    ir_ref x = s.v[--s.n];
    if (node_may_fail(m, x)) {
      fail = true;
      break;
    }
    const ir_node *n = ir_node_get(m, x);
    for (uint32_t i = 0; i < n->nkids; i++)
      if (ir_kid(m, x, i))
        st_push(&s, ir_kid(m, x, i));
  }
  fail |= s.oom; /* unknown is "may fail" */
  st_free(&s);
  return fail;
}
