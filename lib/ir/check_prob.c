/* lib/ir/check_prob.c: prob, the probability type, becomes f64 logarithms.
 *
 * docs/language.md §6.7 defines prob by its log-space meaning: a prob p is
 * stored as the f64 l = log(p), and its operations are those of the logs:
 *
 *   p * q      l + m            p / q      l - m
 *   p + q      log_add(l, m)    p - q      log_sub(l, m)
 *   p < q ...  l < m ...        min, max   the same on l, m
 *   prob(x)    log(f64(x))      T(p)       T(exp(l))   (exp(l) for f64)
 *   log(p)     l                from_log(l) l
 *   a literal v where a prob is expected: the f64 literal log(v)
 *
 * The verifier types programs with prob (check_ops.c, check.c) and, once the
 * whole module checked without error, chk_erase_prob rewrites it in place:
 * every node reachable from a function body whose operation depends on prob
 * becomes its log-space form, and prob becomes f64 in every type (nodes,
 * parameters, results; inside tuples, arrays, windows and function types).
 * Nothing after the verifier (passes, the interpreter, code generation,
 * plans, headers, arguments) ever sees prob, and a second check of the
 * rewritten module finds nothing to change: checking stays idempotent.
 *
 * The rewrite reads the types as the checker left them (pass 1 changes
 * operations and makes new nodes, pass 2 the types), so shared nodes and
 * the order of nodes do not matter: each reachable node is visited once.
 */
#include "check.h"

#include <math.h>
#include <string.h>

/* ---- types ---- */

/* t with prob replaced by f64; IR_TY_NONE for IR_TY_NONE, or if memory ran
 * out. */
static ir_type erase_type(ac_context *ctx, ir_type t, ir_type f64) {
  if (t == IR_TY_NONE)
    return t;
  ir_typeinfo ti = ir_ty_info(ctx, t);
  switch (ti.kind) {
  case TK_SCALAR:
    return ti.sc == AC_PROB ? f64 : t;
  case TK_ARRAY:
    return ti.sc == AC_PROB ? ir_ty_array(ctx, f64, ti.rank) : t;
  case TK_WINDOW: {
    ir_type e = erase_type(ctx, ti.elem, f64);
    return e == ti.elem ? t : ir_ty_window(ctx, e, ti.rank);
  }
  case TK_TUPLE:
  case TK_FN: {
    /* the view is borrowed until the next type is interned: copy it */
    uint32_t n = ti.n;
    ir_type ret = ti.ret, small[8];
    ir_type *fs = n <= 8 ? small : ac_alloc(ctx, n * sizeof *fs);
    if (!fs)
      return IR_TY_NONE;
    memcpy(fs, ti.fields, n * sizeof *fs);
    bool changed = false;
    ir_type out = t;
    for (uint32_t i = 0; i < n && out; i++) {
      ir_type e = erase_type(ctx, fs[i], f64);
      changed |= e != fs[i];
      if (!(fs[i] = e))
        out = IR_TY_NONE;
    }
    if (out && ti.kind == TK_FN) {
      ir_type r = erase_type(ctx, ret, f64);
      changed |= r != ret;
      if (!(ret = r))
        out = IR_TY_NONE;
    }
    if (out && changed)
      out = ti.kind == TK_TUPLE ? ir_ty_tuple(ctx, n, fs) : ir_ty_fn(ctx, n, fs, ret);
    if (fs != small)
      ac_free(ctx, fs);
    return out;
  }
  default:
    return t;
  }
}

/* ---- operations ---- */

typedef struct eraser {
  ac_module *m;
  ac_context *ctx;
  ir_type prob, f64;
} eraser;

static bool is_prob(const eraser *e, ir_type t) {
  return t != IR_TY_NONE && t == e->prob;
}

/* A new node of type f64: op applied to x, at r's position. */
static ir_ref make1(eraser *e, ir_op op, ir_ref r, ir_ref x) {
  ir_ref n = ir_node_new(e->m, op, ir_node_get(e->m, r)->loc, 1, &x);
  if (n)
    ir_node_get(e->m, n)->type = e->f64;
  return n;
}

/* Pass 1 for one node: its log-space operation. Sets *ident when the node
 * became the identity on its only child (f64 of an f64), which the walk
 * then bypasses. */
static bool erase_op(eraser *e, ir_ref r, bool *ident) {
  ac_module *m = e->m;
  ir_node *n = ir_node_get(m, r);
  bool p = is_prob(e, n->type);
  switch ((ir_op)n->op) {
  case IR_LIT:
    if (p) {
      double l = log(n->lit.f);
      n->lit.f = l;
      n->flags = (uint16_t)((n->flags | IR_F_FLOATLIT) & ~(IR_F_NEG | IR_F_INFNAN));
      if (isinf(l) || isnan(l))
        n->flags |= IR_F_INFNAN;
    }
    return true;
  case IR_ADD: /* + - * / of probs: log_add, log_sub, + and - of the logs */
  case IR_SUB:
  case IR_MUL:
  case IR_DIV:
    if (p)
      n->op = n->op == IR_ADD   ? IR_LOG_ADD
              : n->op == IR_SUB ? IR_LOG_SUB
              : n->op == IR_MUL ? IR_ADD
                                : IR_SUB;
    return true;
  case IR_FROM_LOG: /* the log is the value */
    *ident = true;
    return true;
  case IR_LOG: /* log(p) is p's stored log */
    *ident = is_prob(e, ir_node_get(m, ir_kid(m, r, 0))->type);
    return true;
  case IR_CAST: {
    ir_ref x = ir_kid(m, r, 0);
    ir_type xt = ir_node_get(m, x)->type;
    if (p && is_prob(e, xt)) { /* prob(p) */
      *ident = true;
    } else if (p) { /* prob(x) = log(f64(x)) */
      if (xt != e->f64 && !(x = make1(e, IR_CAST, r, x)))
        return false;
      n = ir_node_get(m, r);
      n->op = IR_LOG;
      ir_set_kid(m, r, 0, x);
    } else if (!p && is_prob(e, xt)) { /* T(p) = T(exp(l)) */
      if (n->type == e->f64) {
        n->op = IR_EXP;
      } else {
        ir_ref x2 = make1(e, IR_EXP, r, x);
        if (!x2)
          return false;
        ir_set_kid(m, r, 0, x2);
      }
    }
    return true;
  }
  default:
    return true;
  }
}

/* ---- the walk ---- */

/* Appends every node reachable from root that is not yet marked. */
static bool collect(eraser *e, ir_ref root, unsigned char *seen, size_t n0, ir_ref **list,
                    size_t *nlist, size_t *caplist) {
  ac_module *m = e->m;
  if (root == IR_NONE || root >= n0 || seen[root])
    return true;
  size_t start = *nlist;
  seen[root] = 1;
  if (!ac_grow(e->ctx, (void **)list, caplist, *nlist + 1, sizeof **list))
    return false;
  (*list)[(*nlist)++] = root;
  /* the list itself is the work queue: every node added is expanded once */
  for (size_t i = start; i < *nlist; i++) {
    ir_ref r = (*list)[i];
    const ir_node *nd = ir_node_get(m, r);
    for (uint32_t k = 0; k < nd->nkids; k++) {
      ir_ref c = ir_kid(m, r, k);
      if (c == IR_NONE || c >= n0 || seen[c])
        continue;
      seen[c] = 1;
      if (!ac_grow(e->ctx, (void **)list, caplist, *nlist + 1, sizeof **list))
        return false;
      (*list)[(*nlist)++] = c;
    }
  }
  return true;
}

/* r, or the first node below a chain of identities starting at r. */
static ir_ref bypass(const ac_module *m, ir_ref r, const unsigned char *seen, size_t n0) {
  while (r != IR_NONE && r < n0 && seen[r] == 2)
    r = ir_kid(m, r, 0);
  return r;
}

int chk_erase_prob(ac_module *m) {
  eraser e = {m, m->ctx, ir_ty_scalar(m->ctx, AC_PROB), ir_ty_scalar(m->ctx, AC_F64)};
  if (!e.prob || !e.f64)
    return -1;
  /* a module without prob in any function's signature or node is the rule:
   * find out cheaply before allocating anything */
  bool any = false;
  for (size_t i = 1; i < m->nnodes && !any; i++)
    any = ir_ty_has_prob(e.ctx, m->nodes[i].type);
  for (size_t fi = 0; fi < m->nfuncs && !any; fi++) {
    const ir_func *f = &m->funcs[fi];
    any = ir_ty_has_prob(e.ctx, f->result);
    for (uint32_t i = 0; i < f->nparams && !any; i++)
      any = ir_ty_has_prob(e.ctx, ir_func_param(m, f, i));
  }
  if (!any)
    return 0;
  size_t n0 = m->nnodes;
  unsigned char *seen = ac_alloc(e.ctx, n0);
  ir_ref *list = NULL;
  size_t nlist = 0, caplist = 0;
  bool ok = seen != NULL;
  if (ok)
    memset(seen, 0, n0);
  for (size_t fi = 0; fi < m->nfuncs && ok; fi++)
    ok = collect(&e, m->funcs[fi].body, seen, n0, &list, &nlist, &caplist);
  for (size_t i = 0; i < nlist && ok; i++) {
    bool ident = false;
    ok = erase_op(&e, list[i], &ident);
    if (ident)
      seen[list[i]] = 2;
  }
  /* identities are bypassed: every child reference (of the nodes visited
   * and of those pass 1 made) and every body skips them */
  for (size_t i = 0; i < nlist + (m->nnodes - n0) && ok; i++) {
    ir_ref r = i < nlist ? list[i] : (ir_ref)(n0 + (i - nlist));
    if (r < n0 && seen[r] == 2)
      continue;
    for (uint32_t k = 0; k < ir_node_get(m, r)->nkids; k++)
      ir_set_kid(m, r, k, bypass(m, ir_kid(m, r, k), seen, n0));
  }
  for (size_t fi = 0; fi < m->nfuncs && ok; fi++)
    m->funcs[fi].body = bypass(m, m->funcs[fi].body, seen, n0);
  for (size_t i = 0; i < nlist && ok; i++) {
    ir_node *n = ir_node_get(m, list[i]);
    ir_type t = erase_type(e.ctx, n->type, e.f64);
    ok = t != IR_TY_NONE || n->type == IR_TY_NONE;
    n->type = t;
  }
  for (size_t fi = 0; fi < m->nfuncs && ok; fi++) {
    ir_func *f = &m->funcs[fi];
    for (uint32_t i = 0; i < f->nparams && ok; i++) {
      ir_type t = erase_type(e.ctx, ir_func_param(m, f, i), e.f64);
      m->ints[f->params + i] = (int64_t)t;
      ok = t != IR_TY_NONE;
    }
    if (ok)
      ok = (f->result = erase_type(e.ctx, f->result, e.f64)) != IR_TY_NONE;
  }
  ac_free(e.ctx, list);
  ac_free(e.ctx, seen);
  return ok && !m->oom ? 1 : -1;
}
