/* lib/api/sharing.c: from the builder's value graph to de Bruijn IR, with
 * sharing recovered (the second half of ac_fn_finish).
 *
 * The graph of a C program is a DAG: a value used twice is one node. The IR
 * is a tree, so every non-trivial node reached more than once becomes one
 * `let`, as in Accelerate's sharing recovery (McDonell et al., "Optimising
 * purely functional GPU programs") and Nikola's let-sharing. Variables,
 * literals and function references are trivial: repeating them costs nothing.
 *
 * Where a let goes matters: evaluating a value that only one branch of an `if`
 * needs on both paths changes the cost and may raise an error that the program
 * never asked for, and a value that depends on a lambda's parameter cannot
 * leave the lambda. So lets are placed at the lowest common scope of all their
 * uses, where the scopes form a tree: the function body; each lambda body;
 * the two branches of an `if` and the right operand of && and || (evaluated
 * only on some paths); the body of a rec. The conversion runs in four walks
 * over the body's graph:
 *
 *   1. walk:     depth-first, left to right, post-order: numbers the nodes.
 *                A lambda passed to two operations cannot be let-bound (the IR
 *                has no function values), so every use after the first gets
 *                its own copy of the lambda: the nodes that depend on its
 *                parameters are duplicated, the rest stays shared.
 *   2. place:    in reverse post-order (every parent before its children),
 *                counts each node's parent edges and computes the lowest common
 *                scope of the scopes those edges are in. A node with more than
 *                one edge is let-bound there; so is a rec the caller named,
 *                because the text names a rec's array by binding it
 *                (`let d = rec (...)`).
 *   3. group:    lets of one scope are listed in post-order, the order in which
 *                the walk first completed them (children before parents), which
 *                is the order a programmer would write them.
 *   4. emit:     builds the IR, binding each scope's lets at its start; names
 *                become binder hints (the value's ac_name, else t1, t2, ...).
 *
 * Scoping errors show up in step 4: a parameter of a lambda or rec reached
 * where its binder is not open was used outside it. Calls to other functions
 * stay calls (Nikola's lambda-sharing: compiled once, never inlined here).
 *
 * Every walk recurses along the graph's depth, which the constructors bound
 * by BLD_MAX_DEPTH; the IR's depth (lets nest) is checked after emission.
 */
#include "builder_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NO_SCOPE UINT32_MAX

typedef struct scope {
  uint32_t parent, depth;
  uint32_t first, last; /* lets placed here, linked by bnode.nextlet */
} scope;

typedef struct let_entry {
  ir_ref rhs;
  ir_sym name;
  uint32_t depth;
  ir_loc loc;
} let_entry;

typedef struct conv {
  ac_builder *b;
  ac_module *m;
  ac_context *ctx;
  const bfunc *f;
  uint32_t *order;
  size_t norder, caporder; /* post-order of the body */
  scope *scopes;
  size_t nscopes, capscopes;
  uint32_t *env;
  size_t nenv, capenv; /* bound values, innermost last */
  ir_sym *envname;
  size_t capenvname; /* their names */
  let_entry *lets;
  size_t nlets, caplets; /* lets being emitted (a stack) */
  ir_ref *kids;
  size_t nkids, capkids; /* children being emitted (a stack) */
  uint32_t *copied;
  size_t ncopied, capcopied; /* binders being duplicated */
  uint32_t nauto[4];         /* automatic names: t, x, r, i */
  ac_error *err;
  ac_status st;
} conv;

static bool nomem(conv *c) {
  if (c->st == AC_OK)
    c->st = AC_ERR_NOMEM;
  return false;
}

/* Records an error at loc (the first one wins). */
static void conv_error(conv *c, ac_status st, ir_loc loc, const char *fmt, ...) IR_PRINTF(4, 5);
static void conv_error(conv *c, ac_status st, ir_loc loc, const char *fmt, ...) {
  if (c->st != AC_OK)
    return;
  va_list ap;
  va_start(ap, fmt);
  c->err = ir_verror(c->ctx, st, c->m, loc, fmt, ap);
  va_end(ap);
  c->st = c->err ? st : AC_ERR_NOMEM;
}

static bool is_trivial(const bnode *n) {
  return n->op == IR_VAR || n->op == IR_LIT || n->op == IR_FNREF;
}

/* Which scope child i of n opens (0-based among n's scopes), or -1. */
static int opened_scope(const bnode *n, uint32_t i) {
  switch ((ir_op)n->op) {
  case IR_IF:
    return i == 0 ? -1 : (int)i - 1;
  case IR_LAND:
  case IR_LOR:
    return i == 1 ? 0 : -1;
  case IR_LAM:
    return 0;
  case IR_REC:
    return i == n->nkids - 1 ? 0 : -1;
  default:
    return -1;
  }
}

static uint32_t num_opened_scopes(const bnode *n) {
  switch ((ir_op)n->op) {
  case IR_IF:
    return 2;
  case IR_LAND:
  case IR_LOR:
  case IR_LAM:
  case IR_REC:
    return 1;
  default:
    return 0;
  }
}

/* ---- free binders (for duplicating lambdas) ---- */

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

/* Computes the set of binders (lambdas, recs) whose parameters occur free in
 * v: sorted ids in b->deps[dep .. dep+ndep). */
static bool free_binders(conv *c, uint32_t v) {
  ac_builder *b = c->b;
  bnode *n = bld_get(b, v);
  if (n->depmark == b->gen)
    return true;
  uint32_t nk = n->nkids, total = 0, single = 0, nonempty = 0;
  uint32_t self = (n->op == IR_LAM || n->op == IR_REC) ? (uint32_t)n->attr : 0;
  for (uint32_t i = 0; i < nk; i++) {
    uint32_t k = bld_kid(b, v, i);
    if (!free_binders(c, k))
      return false;
    if (bld_get(b, k)->ndep) {
      total += bld_get(b, k)->ndep;
      single = k;
      nonempty++;
    }
  }
  n = bld_get(b, v);
  if (n->op == IR_VAR) {
    total = n->varkind == BV_BINDER ? 1 : 0;
  } else if (nonempty == 1 && !self) {
    /* one child carries all of them: share its set */
    n->dep = bld_get(b, single)->dep;
    n->ndep = bld_get(b, single)->ndep;
    n->depmark = b->gen;
    return true;
  }
  if (!ac_grow(c->ctx, (void **)&b->deps, &b->capdeps, b->ndeps + total + 1, sizeof *b->deps))
    return nomem(c);
  uint32_t off = (uint32_t)b->ndeps, cnt = 0;
  if (n->op == IR_VAR) {
    if (total)
      b->deps[off + cnt++] = (uint32_t)n->attr;
  } else {
    for (uint32_t i = 0; i < nk; i++) {
      const bnode *kn = bld_get(b, bld_kid(b, v, i));
      memcpy(b->deps + off + cnt, b->deps + kn->dep, kn->ndep * sizeof *b->deps);
      cnt += kn->ndep;
    }
    qsort(b->deps + off, cnt, sizeof *b->deps, cmp_u32);
    uint32_t w = 0;
    for (uint32_t r = 0; r < cnt; r++)
      if (b->deps[off + r] != self && (w == 0 || b->deps[off + w - 1] != b->deps[off + r]))
        b->deps[off + w++] = b->deps[off + r];
    cnt = w;
  }
  b->ndeps += cnt;
  n->dep = off;
  n->ndep = cnt;
  n->depmark = b->gen;
  return true;
}

/* True if v depends on a binder being duplicated. */
static bool needs_copy(conv *c, uint32_t v, bool *out) {
  if (!free_binders(c, v))
    return false;
  const bnode *n = bld_get(c->b, v);
  *out = false;
  for (uint32_t i = 0; i < n->ndep; i++)
    if (c->b->binders[c->b->deps[n->dep + i]].copying)
      *out = true;
  return true;
}

static uint32_t copy_node(conv *c, uint32_t v);

/* Copies node v (a lambda or rec) with a new binder and new parameters. */
static uint32_t copy_binder(conv *c, uint32_t v) {
  ac_builder *b = c->b;
  uint32_t old = (uint32_t)bld_get(b, v)->attr;
  if (!ac_grow(c->ctx, (void **)&b->binders, &b->capbinders, b->nbinders + 1, sizeof *b->binders) ||
      !ac_grow(c->ctx, (void **)&c->copied, &c->capcopied, c->ncopied + 1, sizeof *c->copied))
    return nomem(c), 0;
  uint32_t id = (uint32_t)b->nbinders++;
  b->binders[id] = b->binders[old];
  b->binders[id].param0 = (uint32_t)b->nnodes;
  b->binders[id].copying = false;
  b->binders[old].copying = true;
  c->copied[c->ncopied++] = old;
  for (uint32_t i = 0; i < b->binders[old].nparams; i++) {
    uint32_t p = b->binders[old].param0 + i;
    uint32_t q = bld_node(b, IR_VAR, 0, NULL);
    if (!q)
      return nomem(c), 0;
    bnode *pn = bld_get(b, p), *qn = bld_get(b, q);
    qn->varkind = pn->varkind;
    qn->attr = id;
    qn->aux = pn->aux;
    qn->name = pn->name;
    qn->loc = pn->loc;
    pn->copymark = b->copygen;
    pn->copy = q;
  }
  uint32_t nk = bld_get(b, v)->nkids;
  uint32_t small[16];
  uint32_t *kids = nk <= 16 ? small : ac_alloc(c->ctx, nk * sizeof *kids);
  if (!kids)
    return nomem(c), 0;
  uint32_t res = 0;
  uint32_t i;
  for (i = 0; i < nk; i++)
    if (!(kids[i] = copy_node(c, bld_kid(b, v, i))))
      break;
  if (i == nk) {
    if (bld_get(b, v)->op == IR_REC) {
      /* the bounds are kept with the binder too (ac_rec_end reads them) */
      if (ac_grow(c->ctx, (void **)&b->kids, &b->capkids, b->nkids + nk, sizeof *b->kids)) {
        b->binders[id].bounds = (uint32_t)b->nkids;
        memcpy(b->kids + b->nkids, kids, (nk - 1) * sizeof *kids);
        b->nkids += nk - 1;
      } else {
        nomem(c);
      }
    }
    res = c->st == AC_OK ? bld_node(b, (ir_op)bld_get(b, v)->op, nk, kids) : 0;
  }
  if (kids != small)
    ac_free(c->ctx, kids);
  if (!res)
    return nomem(c), 0;
  bnode *o = bld_get(b, v), *n = bld_get(b, res);
  n->type = o->type;
  n->loc = o->loc;
  n->name = o->name;
  n->attr = id;
  b->binders[id].node = res;
  return res;
}

/* The copy of v in the lambda being duplicated: v itself when it does not
 * depend on a binder being duplicated. */
static uint32_t copy_node(conv *c, uint32_t v) {
  ac_builder *b = c->b;
  bnode *n = bld_get(b, v);
  if (n->copymark == b->copygen)
    return n->copy;
  uint32_t res = v;
  bool dirty;
  if (n->op != IR_VAR) {
    if (!needs_copy(c, v, &dirty))
      return 0;
    n = bld_get(b, v);
    if (dirty && (n->op == IR_LAM || n->op == IR_REC)) {
      res = copy_binder(c, v);
    } else if (dirty) {
      uint32_t nk = n->nkids;
      uint32_t small[16];
      uint32_t *kids = nk <= 16 ? small : ac_alloc(c->ctx, nk * sizeof *kids);
      if (!kids)
        return nomem(c), 0;
      uint32_t i;
      for (i = 0; i < nk; i++)
        if (!(kids[i] = copy_node(c, bld_kid(b, v, i))))
          break;
      res = i == nk ? bld_node(b, (ir_op)bld_get(b, v)->op, nk, kids) : 0;
      if (kids != small)
        ac_free(c->ctx, kids);
      if (res) {
        bnode *o = bld_get(b, v), *nn = bld_get(b, res);
        uint32_t nkids = nn->nkids, koff = nn->kids, depth = nn->depth;
        *nn = *o;
        nn->nkids = nkids;
        nn->kids = koff;
        nn->depth = depth;
        nn->mark = nn->depmark = nn->copymark = 0;
      }
    }
    if (!res)
      return nomem(c), 0;
  }
  n = bld_get(b, v);
  n->copymark = b->copygen;
  n->copy = res;
  return res;
}

/* A fresh copy of lambda v for one more use of it. */
static uint32_t copy_lambda(conv *c, uint32_t v) {
  c->b->copygen++;
  c->ncopied = 0;
  uint32_t r = copy_binder(c, v);
  for (size_t i = 0; i < c->ncopied; i++)
    c->b->binders[c->copied[i]].copying = false;
  return r;
}

/* ---- 1. walk ---- */

static bool walk(conv *c, uint32_t v) {
  ac_builder *b = c->b;
  bnode *n = bld_get(b, v);
  n->mark = b->gen;
  n->uses = 0;
  n->scope = NO_SCOPE;
  n->scope0 = 0;
  n->nextlet = 0;
  for (uint32_t i = 0; i < bld_get(b, v)->nkids; i++) {
    uint32_t k = bld_kid(b, v, i);
    if (bld_get(b, k)->op == IR_LAM && bld_get(b, k)->mark == b->gen) {
      k = copy_lambda(c, k);
      if (!k)
        return false;
      b->kids[bld_get(b, v)->kids + i] = k;
    }
    if (bld_get(b, k)->mark != b->gen && !walk(c, k))
      return false;
  }
  if (!ac_grow(c->ctx, (void **)&c->order, &c->caporder, c->norder + 1, sizeof *c->order))
    return nomem(c);
  bld_get(b, v)->post = (uint32_t)c->norder;
  c->order[c->norder++] = v;
  return true;
}

/* ---- 2. place, 3. group ---- */

static uint32_t lca(const conv *c, uint32_t a, uint32_t b) {
  while (a != b) {
    if (c->scopes[a].depth >= c->scopes[b].depth)
      a = c->scopes[a].parent;
    else
      b = c->scopes[b].parent;
  }
  return a;
}

static bool is_let(const ac_builder *b, const bnode *n) {
  if (is_trivial(n))
    return false;
  return n->uses > 1 || (n->op == IR_REC && b->binders[n->attr].named);
}

static bool place(conv *c, uint32_t body) {
  ac_builder *b = c->b;
  if (!ac_grow(c->ctx, (void **)&c->scopes, &c->capscopes, 1, sizeof *c->scopes))
    return nomem(c);
  c->scopes[0] = (scope){NO_SCOPE, 0, 0, 0};
  c->nscopes = 1;
  bld_get(b, body)->uses = 1;
  bld_get(b, body)->scope = 0;
  for (size_t k = c->norder; k-- > 0;) {
    uint32_t v = c->order[k];
    bnode *n = bld_get(b, v);
    if (is_trivial(n))
      continue;
    uint32_t ns = num_opened_scopes(n);
    if (!ac_grow(c->ctx, (void **)&c->scopes, &c->capscopes, c->nscopes + ns, sizeof *c->scopes))
      return nomem(c);
    n->scope0 = (uint32_t)c->nscopes;
    for (uint32_t s = 0; s < ns; s++)
      c->scopes[c->nscopes++] = (scope){n->scope, c->scopes[n->scope].depth + 1, 0, 0};
    for (uint32_t i = 0; i < n->nkids; i++) {
      bnode *kn = bld_get(b, bld_kid(b, v, i));
      if (is_trivial(kn))
        continue;
      int os = opened_scope(n, i);
      uint32_t es = os < 0 ? n->scope : n->scope0 + (uint32_t)os;
      kn->scope = kn->uses++ == 0 ? es : lca(c, kn->scope, es);
    }
  }
  /* 3. group: append each let to its scope's list in post-order */
  for (size_t k = 0; k < c->norder; k++) {
    uint32_t v = c->order[k];
    bnode *n = bld_get(b, v);
    if (!is_let(b, n))
      continue;
    scope *s = &c->scopes[n->scope];
    if (s->last)
      bld_get(b, s->last)->nextlet = v;
    else
      s->first = v;
    s->last = v;
  }
  return true;
}

/* ---- 4. emit ---- */

/* An automatic name prefixN, N counting per function, skipping names that
 * would hide a binder in scope. */
static ir_sym auto_name(conv *c, int kind) {
  static const char prefixes[4] = {'t', 'x', 'r', 'i'};
  for (;;) {
    char buf[24];
    snprintf(buf, sizeof buf, "%c%u", prefixes[kind], ++c->nauto[kind]);
    ir_sym s = ir_sym_intern(c->ctx, buf, strlen(buf));
    if (s == IR_SYM_NONE) {
      nomem(c);
      return s;
    }
    bool used = false;
    for (size_t i = 0; i < c->nenv && !used; i++)
      used = c->envname[i] == s;
    if (!used)
      return s;
  }
}

static bool env_push(conv *c, uint32_t v, ir_sym name) {
  if (!ac_grow(c->ctx, (void **)&c->env, &c->capenv, c->nenv + 1, sizeof *c->env) ||
      !ac_grow(c->ctx, (void **)&c->envname, &c->capenvname, c->nenv + 1, sizeof *c->envname))
    return nomem(c);
  c->env[c->nenv] = v;
  c->envname[c->nenv] = name;
  c->nenv++;
  bld_get(c->b, v)->envpos = (uint32_t)c->nenv;
  return true;
}

static void env_pop(conv *c, size_t n) {
  for (; n > 0 && c->nenv > 0; n--)
    bld_get(c->b, c->env[--c->nenv])->envpos = 0;
}

static ir_ref emit_use(conv *c, uint32_t v, ir_loc use, uint32_t *depth);
static ir_ref emit_def(conv *c, uint32_t v, uint32_t *depth);

/* Emits expression e of scope s: the lets placed in s around e. */
static ir_ref emit_scope(conv *c, uint32_t s, uint32_t e, ir_loc use, uint32_t *depth) {
  ac_builder *b = c->b;
  size_t base = c->nlets, bound = 0;
  ir_ref body = IR_NONE;
  for (uint32_t y = c->scopes[s].first; y; y = bld_get(b, y)->nextlet) {
    uint32_t d = 0;
    ir_ref rhs = emit_def(c, y, &d);
    const bnode *yn = bld_get(b, y);
    ir_sym name = yn->name;
    if (rhs && !name && yn->op == IR_REC) /* `let d = rec (...)`: one name for both */
      name = c->m->syms[ir_node_get(c->m, rhs)->names];
    if (!name)
      name = auto_name(c, 0);
    if (!rhs || !name ||
        !ac_grow(c->ctx, (void **)&c->lets, &c->caplets, c->nlets + 1, sizeof *c->lets) ||
        !env_push(c, y, name))
      goto out;
    c->lets[c->nlets++] = (let_entry){rhs, name, d, yn->loc};
    bound++;
  }
  body = emit_use(c, e, use, depth);
  for (size_t j = c->nlets; body && j-- > base;) {
    let_entry le = c->lets[j];
    ir_ref kids[2] = {le.rhs, body};
    body = ir_node_new(c->m, IR_LET, le.loc, 2, kids);
    if (body) {
      ir_node_get(c->m, body)->names = ir_syms_push(c->m, 1, &le.name);
      *depth = 1 + (le.depth > *depth ? le.depth : *depth);
    }
  }
out:
  env_pop(c, bound);
  c->nlets = base;
  return body;
}

static void scope_error(conv *c, const bnode *n, ir_loc use) {
  const char *name = ir_sym_str(c->ctx, n->name);
  if (n->varkind == BV_FNPARAM) {
    conv_error(c, AC_ERR_TYPE, use, "parameter '%s' of function '%s' used in function '%s'", name,
               ir_sym_str(c->ctx, c->m->funcs[n->attr].name),
               ir_sym_str(c->ctx, c->m->funcs[c->f->index].name));
    return;
  }
  const bbinder *bb = &c->b->binders[n->attr];
  const char *what = bb->op == IR_LAM ? "lambda parameter"
                     : n->aux == 0    ? "rec array"
                                      : "rec index";
  const char *where = bb->op == IR_LAM ? "lambda" : "rec";
  if (*name)
    conv_error(c, AC_ERR_TYPE, use, "%s '%s' used outside its %s", what, name, where);
  else
    conv_error(c, AC_ERR_TYPE, use, "%s used outside its %s", what, where);
}

/* Binds the parameters of binder id (names chosen now when none was given)
 * and records their names in the module; returns the syms offset, or 0 with
 * nothing bound. */
static uint32_t bind_params(conv *c, uint32_t id) {
  ac_builder *b = c->b;
  const bbinder *bb = &b->binders[id];
  uint32_t np = bb->nparams, p0 = bb->param0;
  uint32_t off = ir_syms_push(c->m, np, NULL);
  if (!off)
    return nomem(c), 0;
  for (uint32_t i = 0; i < np; i++) {
    ir_sym s = bld_get(b, p0 + i)->name;
    if (!s)
      s = auto_name(c, bb->op == IR_LAM ? 1 : i == 0 ? 2 : 3);
    if (!s || !env_push(c, p0 + i, s)) {
      env_pop(c, i);
      return 0;
    }
    c->m->syms[off + i] = s;
  }
  return off;
}

/* Emits the definition of v (never a reference to a let). */
static ir_ref emit_def(conv *c, uint32_t v, uint32_t *depth) {
  ac_builder *b = c->b;
  const bnode *n = bld_get(b, v);
  uint32_t nk = n->nkids;
  size_t base = c->nkids;
  if (!ac_grow(c->ctx, (void **)&c->kids, &c->capkids, base + nk, sizeof *c->kids))
    return nomem(c), IR_NONE;
  c->nkids += nk;
  uint32_t maxd = 0, names = 0;
  bool binds = n->op == IR_LAM || n->op == IR_REC;
  ir_ref res = IR_NONE;
  for (uint32_t i = 0; i < nk; i++) {
    uint32_t d = 0, k = bld_kid(b, v, i);
    if (binds && i == nk - 1 && !(names = bind_params(c, (uint32_t)n->attr)))
      goto out;
    int os = opened_scope(n, i);
    ir_ref r = os < 0 ? emit_use(c, k, n->loc, &d)
                      : emit_scope(c, n->scope0 + (uint32_t)os, k, n->loc, &d);
    if (binds && i == nk - 1)
      env_pop(c, b->binders[n->attr].nparams);
    if (!r)
      goto out;
    c->kids[base + i] = r;
    maxd = d > maxd ? d : maxd;
  }
  res = ir_node_new(c->m, (ir_op)n->op, n->loc, nk, c->kids + base);
  if (!res)
    goto out;
  ir_node *in = ir_node_get(c->m, res);
  in->attr = n->attr;
  in->type = (n->op == IR_CAST || n->op == IR_REC) ? n->type : IR_TY_NONE;
  if (binds) {
    in->names = names;
    in->attr = b->binders[n->attr].nparams - (n->op == IR_REC ? 1 : 0);
    const bbinder *bb = &b->binders[n->attr];
    if (n->op == IR_REC && bb->has_sched) { /* ac_rec_schedule: `by` */
      uint32_t off = ir_ints_push(c->m, bb->nparams - 1, b->ints + bb->sched);
      in = ir_node_get(c->m, res);
      in->aux = off;
      in->flags |= IR_F_SCHED;
    }
  } else if (n->op == IR_ARRLIT) {
    uint32_t rank = (uint32_t)n->attr;
    in->aux = ir_ints_push(c->m, rank, b->ints + n->aux);
  }
  *depth = maxd + 1;
out:
  c->nkids = base;
  if (!res)
    nomem(c);
  return res;
}

/* Emits a use of v from a node at `use`: a variable for parameters and lets,
 * a fresh node for literals and function references, else the definition. */
static ir_ref emit_use(conv *c, uint32_t v, ir_loc use, uint32_t *depth) {
  const bnode *n = bld_get(c->b, v);
  *depth = 1;
  ir_ref r = IR_NONE;
  if (n->envpos) {
    r = ir_var(c->m, n->loc, (uint32_t)(c->nenv - n->envpos));
  } else if (n->op == IR_VAR) {
    scope_error(c, n, use);
    return IR_NONE;
  } else if (n->op == IR_LIT) {
    r = ir_lit_typed(c->m, n->loc, n->type, n->lit);
  } else if (n->op == IR_FNREF) {
    r = ir_node_new(c->m, IR_FNREF, n->loc, 0, NULL);
    if (r)
      ir_node_get(c->m, r)->attr = n->attr;
  } else if (is_let(c->b, n)) {
    /* placement guarantees a let is bound before any use of it */
    conv_error(c, AC_ERR_INTERNAL, n->loc, "sharing recovery: a let is used before it is bound");
    return IR_NONE;
  } else {
    return emit_def(c, v, depth);
  }
  if (!r)
    nomem(c);
  return r;
}

/* ---- driver ---- */

static void conv_free(conv *c) {
  env_pop(c, c->nenv);
  ac_free(c->ctx, c->order);
  ac_free(c->ctx, c->scopes);
  ac_free(c->ctx, c->env);
  ac_free(c->ctx, c->envname);
  ac_free(c->ctx, c->lets);
  ac_free(c->ctx, c->kids);
  ac_free(c->ctx, c->copied);
}

ac_status bld_convert(ac_builder *b, const bfunc *f, uint32_t body, ac_error **err) {
  conv c;
  memset(&c, 0, sizeof c);
  c.b = b;
  c.m = b->m;
  c.ctx = b->ctx;
  c.f = f;
  b->gen++;
  b->ndeps = 0;
  ir_func *irf = &c.m->funcs[f->index];
  ir_ref root = IR_NONE;
  uint32_t depth = 0;
  bool ok = walk(&c, body) && place(&c, body);
  for (uint32_t i = 0; ok && i < f->nparams; i++)
    ok = env_push(&c, f->param0 + i, c.m->syms[irf->pnames + i]);
  if (ok)
    root = emit_scope(&c, 0, body, bld_get(b, body)->loc, &depth);
  if (root && depth > BLD_MAX_DEPTH)
    conv_error(&c, AC_ERR_INVALID, c.m->funcs[f->index].loc,
               "the body of '%s' is nested %u levels deep after sharing recovery (at most %u)",
               ir_sym_str(c.ctx, c.m->funcs[f->index].name), depth, BLD_MAX_DEPTH);
  if (c.st == AC_OK && (!root || c.m->oom))
    c.st = AC_ERR_NOMEM;
  ac_status st = c.st;
  ac_error *e = c.err;
  conv_free(&c);
  if (st != AC_OK) /* the graph is unchanged in meaning: finishing may be retried */
    return ir_report(err, e, st);
  c.m->funcs[f->index].body = root;
  return AC_OK;
}
