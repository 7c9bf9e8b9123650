/* lib/ir/specialise.c: functions with function parameters (docs/language.md
 * §4.7), specialised at each call.
 *
 * A top-level function with a parameter of type `fn(..) -> ..` is a template:
 * the parser binds only its value parameters and leaves each use of function
 * parameter k as an FNREF or a CALL whose attr is -(k + 1) (ir_func's
 * is_template). Once the whole text is parsed, every call of a template is
 * replaced by a copy of its body,
 *
 *   let (v1, ..): (T1, ..) = (a1, ..); let result: R = body'; result
 *
 * where body' has each use of a function parameter replaced by the function
 * the call gives: a lambda, moved under the binders in between, or a
 * top-level function's name. A lambda called there becomes `let (x, ..):
 * (P1, ..) = (args); let result: Q = e; result`, typed as the parameter
 * declares; passed on, it is wrapped in a lambda that does the same. Copies
 * are expanded again (a template may call another) to a bounded depth, so
 * no function value exists at run time. Then the templates leave the module
 * and the calls' function indices are renumbered. A template whose result
 * is written `_` (docs/language.md §3) binds `result` without a type, so
 * each copy's result is its body's type there; since this runs before any
 * type is checked, a function whose result is inferred cannot be given to
 * a function parameter by name (its type is not known yet).
 */
#include "ir.h"

#include <stdarg.h>
#include <string.h>

/* Deepest chain of template calls inside template calls, and most nodes
 * the copies may make (a template calling itself twice would otherwise
 * double its size 64 times). */
#define SP_MAX_NEST 64
#define SP_MAX_NODES ((size_t)1 << 22)

typedef struct sp {
  ac_module *m;
  ac_context *ctx;
  ac_error *err;
  ac_status st;
  unsigned nest;
  size_t start; /* m->nnodes before specialising */
} sp;

static ir_ref sp_fail(sp *S, ir_loc loc, const char *fmt, ...) IR_PRINTF(3, 4);
static ir_ref sp_fail(sp *S, ir_loc loc, const char *fmt, ...) {
  if (S->st == AC_OK) {
    va_list ap;
    va_start(ap, fmt);
    S->err = ir_verror(S->ctx, AC_ERR_TYPE, S->m, loc, fmt, ap);
    va_end(ap);
    S->st = S->err ? AC_ERR_TYPE : AC_ERR_NOMEM;
  }
  return IR_NONE;
}

static ir_ref sp_oom(sp *S) {
  if (S->st == AC_OK)
    S->st = AC_ERR_NOMEM;
  return IR_NONE;
}

static bool is_template(const sp *S, int64_t f) {
  return f >= 0 && (uint64_t)f < S->m->nfuncs && S->m->funcs[f].is_template;
}

/* `let (names): t = v; body`, n >= 1 names (t may be IR_TY_NONE). */
static ir_ref sp_let(sp *S, ir_loc loc, uint32_t n, uint32_t names, ir_type t, ir_ref v,
                     ir_ref body) {
  if (!v || !body)
    return IR_NONE;
  ir_ref kids[2] = {v, body};
  ir_ref r = ir_node_new(S->m, n == 1 ? IR_LET : IR_LETTUP, loc, 2, kids);
  int64_t tv = (int64_t)t;
  uint32_t off = t ? ir_ints_push(S->m, 1, &tv) : 0;
  if (!r || S->m->oom)
    return sp_oom(S);
  ir_node *nd = ir_node_get(S->m, r);
  nd->names = names;
  if (n > 1)
    nd->attr = n;
  if (t) {
    nd->flags |= IR_F_TYPED;
    nd->aux = off;
  }
  return r;
}

/* `let result: t = e; result` */
static ir_ref sp_result(sp *S, ir_loc loc, ir_type t, ir_ref e) {
  ir_sym rs = ir_sym_intern(S->ctx, "result", 6);
  uint32_t names = rs ? ir_syms_push(S->m, 1, &rs) : 0;
  ir_ref v = ir_var(S->m, loc, 0);
  if (!rs || !v || S->m->oom)
    return sp_oom(S);
  return sp_let(S, loc, 1, names, t, e, v);
}

/* args[0], or the tuple of the n arguments. */
static ir_ref sp_tuple(sp *S, ir_loc loc, uint32_t n, const ir_ref *args) {
  if (n == 1)
    return args[0];
  ir_ref r = ir_node_new(S->m, IR_TUPLE, loc, n, args);
  return r ? r : sp_oom(S);
}

/* The types of function type ft: params into ps (ft has at most `cap`),
 * their tuple (or the one type) into *pt, the result into *ret. */
static bool fn_parts(sp *S, ir_type ft, ir_type *ps, uint32_t cap, uint32_t *n, ir_type *pt,
                     ir_type *ret) {
  ir_typeinfo ti = ir_ty_info(S->ctx, ft);
  if (ti.kind != TK_FN || ti.n > cap)
    return false;
  *n = ti.n;
  *ret = ti.ret;
  for (uint32_t i = 0; i < ti.n; i++)
    ps[i] = ir_ty_info(S->ctx, ft).fields[i];
  *pt = ti.n == 0 ? IR_TY_NONE : ti.n == 1 ? ps[0] : ir_ty_tuple(S->ctx, ti.n, ps);
  if (ti.n > 1 && !*pt)
    return sp_oom(S), false;
  return true;
}

/* Lambda lam applied to n arguments at a site d binders below where lam
 * was written: `let (x, ..): (P1, ..) = (args); let result: R = e; result`
 * with ft = fn(P1, ..) -> R. */
static ir_ref sp_apply(sp *S, ir_ref lam, int32_t d, ir_type ft, uint32_t n, const ir_ref *args,
                       ir_loc loc) {
  uint32_t np = (uint32_t)ir_node_get(S->m, lam)->attr, names = ir_node_get(S->m, lam)->names;
  ir_type ps[16], pt, ret;
  uint32_t nt;
  if (np != n || !fn_parts(S, ft, ps, 16, &nt, &pt, &ret) || nt != n)
    return S->st ? IR_NONE
                 : sp_fail(S, loc, "this function takes %u argument%s, %u given", np,
                           np == 1 ? "" : "s", n);
  ir_ref body = ir_copy_shift(S->m, ir_kid(S->m, lam, 0), d, np);
  if (!body)
    return sp_oom(S);
  body = sp_result(S, loc, ret, body);
  if (!body || np == 0)
    return body;
  return sp_let(S, loc, np, names, pt, sp_tuple(S, loc, n, args), body);
}

/* Lambda lam passed on from a site d binders below it: `|x, ..| lam(x, ..)`
 * typed as ft declares (sp_apply). */
static ir_ref sp_wrap(sp *S, ir_ref lam, int32_t d, ir_type ft, ir_loc loc) {
  uint32_t np = (uint32_t)ir_node_get(S->m, lam)->attr, names = ir_node_get(S->m, lam)->names;
  ir_ref vars[16];
  if (np > 16)
    return sp_fail(S, loc, "a function parameter takes at most 16 arguments");
  for (uint32_t i = 0; i < np; i++)
    if (!(vars[i] = ir_var(S->m, loc, np - 1 - i)))
      return sp_oom(S);
  ir_ref body = sp_apply(S, lam, d + (int32_t)np, ft, np, vars, loc);
  ir_ref r = body ? ir_node_new(S->m, IR_LAM, loc, 1, &body) : IR_NONE;
  if (!r)
    return body ? sp_oom(S) : IR_NONE;
  ir_node_get(S->m, r)->attr = np;
  ir_node_get(S->m, r)->names = names;
  return r;
}

/* One call's instance of a template body. */
typedef struct inst {
  uint32_t nv;         /* value parameters: binders of the let around the copy */
  uint32_t np;         /* all parameters */
  const ir_ref *fargs; /* per parameter: the function given, or IR_NONE */
  const ir_type *pts;  /* per parameter: its declared type */
} inst;

/* A copy of template body node r, b binders below the body's top, with the
 * function parameters' uses replaced. */
/* The walks' state through ir_map_kids: the binders b below the body's
 * top (sp_subst) or the depth (sp_expand). */
typedef struct sp_walk {
  sp *S;
  const inst *I;
  uint32_t b;
} sp_walk;

static ir_ref subst_kid(ac_module *m, ir_ref k, uint32_t binders, void *ud);
static ir_ref expand_kid(ac_module *m, ir_ref k, uint32_t binders, void *ud);

static ir_ref sp_subst(sp *S, const inst *I, ir_ref r, uint32_t b) {
  if (S->st != AC_OK)
    return IR_NONE;
  ir_node n = *ir_node_get(S->m, r);
  if ((n.op == IR_FNREF || n.op == IR_CALL) && n.attr < 0) {
    uint64_t k = (uint64_t)(-(n.attr + 1));
    if (k >= I->np || !I->fargs[k])
      return sp_fail(S, n.loc, "malformed IR: use of function parameter %llu",
                     (unsigned long long)k + 1);
    ir_ref f = I->fargs[k];
    const ir_node *fn = ir_node_get(S->m, f);
    int32_t d = (int32_t)(I->nv + b);
    if (n.op == IR_FNREF)
      return fn->op == IR_FNREF ? ir_copy_shift(S->m, f, 0, 0) : sp_wrap(S, f, d, I->pts[k], n.loc);
    ir_ref small[16];
    ir_ref *args = n.nkids <= 16 ? small : ac_alloc(S->ctx, n.nkids * sizeof *args);
    if (!args)
      return sp_oom(S);
    ir_ref res = IR_NONE;
    uint32_t i = 0;
    for (; i < n.nkids; i++)
      if (!(args[i] = sp_subst(S, I, ir_kid(S->m, r, i), b)))
        break;
    if (i == n.nkids && ir_node_get(S->m, f)->op == IR_FNREF) {
      res = ir_node_new(S->m, IR_CALL, n.loc, n.nkids, args);
      if (res)
        ir_node_get(S->m, res)->attr = ir_node_get(S->m, f)->attr;
      else
        sp_oom(S);
    } else if (i == n.nkids) {
      res = sp_apply(S, f, d, I->pts[k], n.nkids, args, n.loc);
    }
    if (args != small)
      ac_free(S->ctx, args);
    return res;
  }
  if (n.op == IR_VAR || n.nkids == 0) {
    ir_ref c = ir_copy_shift(S->m, r, 0, 0);
    return c ? c : sp_oom(S);
  }
  sp_walk w = {S, I, b};
  ir_ref res = ir_map_kids(S->m, r, subst_kid, &w, true);
  return res || S->st != AC_OK ? res : sp_oom(S);
}

static ir_ref subst_kid(ac_module *m, ir_ref k, uint32_t binders, void *ud) {
  const sp_walk *w = ud;
  return sp_subst(w->S, w->I, k, w->b + binders);
}

static ir_ref sp_expand(sp *S, ir_ref r, uint32_t depth);

/* The spelling of type t, in buf. */
static const char *tyname(sp *S, ir_type t, ir_buf *buf) {
  buf->len = 0;
  ir_ty_print(S->ctx, t, buf);
  return buf->oom ? "?" : ir_buf_cstr(buf);
}

/* Checks function argument a of parameter k (type pt) of template t. */
static bool sp_fnarg_ok(sp *S, const ir_func *t, uint32_t k, ir_type pt, ir_ref a) {
  const ir_node *an = ir_node_get(S->m, a);
  const char *tn = ir_sym_str(S->ctx, t->name);
  const char *pn = ir_sym_str(S->ctx, S->m->syms[t->pnames + k]);
  ir_typeinfo ti = ir_ty_info(S->ctx, pt);
  if (an->op == IR_LAM) {
    if ((uint64_t)an->attr != ti.n)
      sp_fail(S, an->loc, "parameter '%s' of '%s' takes a function of %u argument%s, given one of %lld",
              pn, tn, ti.n, ti.n == 1 ? "" : "s", (long long)an->attr);
    return S->st == AC_OK;
  }
  if (an->op != IR_FNREF || an->attr < 0 || (uint64_t)an->attr >= S->m->nfuncs) {
    sp_fail(S, an->loc,
            "argument %u of '%s' must be a function: a lambda, a function's name or a local "
            "function",
            k + 1, tn);
    return false;
  }
  const ir_func *g = &S->m->funcs[an->attr];
  if (g->infer_result) {
    /* its type is known only after checking, which comes after this */
    sp_fail(S, an->loc,
            "function '%s' has an inferred result type (`-> _`) and cannot be passed to "
            "parameter '%s' of '%s': write its result type, or pass a lambda that calls it",
            ir_sym_str(S->ctx, g->name), pn, tn);
    return false;
  }
  bool same = !g->is_template && g->nparams == ti.n && g->result == ti.ret;
  for (uint32_t i = 0; same && i < ti.n; i++)
    same = ir_func_param(S->m, g, i) == ir_ty_info(S->ctx, pt).fields[i];
  if (!same) {
    ir_buf b;
    ir_buf_init(&b, S->ctx);
    sp_fail(S, an->loc, "function '%s' does not have the type %s of parameter '%s' of '%s'",
            ir_sym_str(S->ctx, g->name), tyname(S, pt, &b), pn, tn);
    ir_buf_free(&b);
  }
  return same;
}

/* Call r of template function attr, at scope depth `depth`: its body, copied
 * for these arguments. */
static ir_ref sp_call(sp *S, ir_ref r, uint32_t depth) {
  ir_node cn = *ir_node_get(S->m, r);
  ir_func t = S->m->funcs[cn.attr];
  const char *tn = ir_sym_str(S->ctx, t.name);
  if (cn.nkids != t.nparams)
    return sp_fail(S, cn.loc, "function '%s' takes %u argument%s, %u given", tn, t.nparams,
                   t.nparams == 1 ? "" : "s", cn.nkids);
  if (S->m->nnodes - S->start > SP_MAX_NODES)
    return sp_fail(S, cn.loc,
                   "calls of '%s' and the functions with function parameters it calls copy "
                   "more than %zu operations",
                   tn, SP_MAX_NODES);
  if (S->nest >= SP_MAX_NEST)
    return sp_fail(S, cn.loc,
                   "'%s' is specialised %d calls deep: a function with function parameters "
                   "cannot call itself",
                   tn, SP_MAX_NEST);
  uint32_t np = t.nparams, nv = 0;
  ir_ref *fargs = ac_alloc(S->ctx, (2 * (size_t)np + 1) * sizeof *fargs);
  ir_type *pts = ac_alloc(S->ctx, ((size_t)np + 1) * sizeof *pts);
  ir_sym *vnames = ac_alloc(S->ctx, ((size_t)np + 1) * sizeof *vnames);
  ir_type *vts = ac_alloc(S->ctx, ((size_t)np + 1) * sizeof *vts);
  ir_ref res = IR_NONE;
  if (!fargs || !pts || !vnames || !vts) {
    sp_oom(S);
    goto done;
  }
  ir_ref *vals = fargs + np;
  for (uint32_t i = 0; i < np; i++) {
    pts[i] = ir_func_param(S->m, &t, i);
    fargs[i] = IR_NONE;
  }
  S->nest++;
  for (uint32_t i = 0; i < np && S->st == AC_OK; i++) {
    ir_ref a = ir_kid(S->m, r, i);
    if (ir_ty_info(S->ctx, pts[i]).kind == TK_FN) {
      if (sp_fnarg_ok(S, &t, i, pts[i], a))
        fargs[i] = sp_expand(S, a, depth);
    } else {
      vnames[nv] = S->m->syms[t.pnames + i];
      vts[nv] = pts[i];
      vals[nv++] = sp_expand(S, a, depth);
    }
  }
  if (S->st == AC_OK) {
    inst I = {nv, np, fargs, pts};
    res = sp_result(S, cn.loc, t.result, sp_subst(S, &I, t.body, 0));
  }
  if (res && nv) {
    uint32_t names = ir_syms_push(S->m, nv, vnames);
    ir_type vt = nv == 1 ? vts[0] : ir_ty_tuple(S->ctx, nv, vts);
    res = !vt || S->m->oom ? sp_oom(S)
                           : sp_let(S, cn.loc, nv, names, vt, sp_tuple(S, cn.loc, nv, vals), res);
  }
  if (res)
    res = sp_expand(S, res, depth);
  S->nest--;
done:
  ac_free(S->ctx, fargs);
  ac_free(S->ctx, pts);
  ac_free(S->ctx, vnames);
  ac_free(S->ctx, vts);
  return res;
}

/* r at scope depth `depth` with every call of a template replaced; r itself
 * when nothing changed. */
static ir_ref sp_expand(sp *S, ir_ref r, uint32_t depth) {
  if (S->st != AC_OK)
    return IR_NONE;
  ir_node n = *ir_node_get(S->m, r);
  if (n.op == IR_CALL && is_template(S, n.attr))
    return sp_call(S, r, depth);
  if (n.op == IR_FNREF && is_template(S, n.attr))
    return sp_fail(S, n.loc,
                   "'%s' has function parameters: it can only be called, with the functions "
                   "it takes",
                   ir_sym_str(S->ctx, S->m->funcs[n.attr].name));
  sp_walk w = {S, NULL, depth};
  ir_ref res = ir_map_kids(S->m, r, expand_kid, &w, false);
  return res || S->st != AC_OK ? res : sp_oom(S);
}

static ir_ref expand_kid(ac_module *m, ir_ref k, uint32_t binders, void *ud) {
  const sp_walk *w = ud;
  return sp_expand(w->S, k, w->b + binders);
}

ac_status ir_specialise(ac_module *m, size_t first, ac_error **err) {
  sp S = {m, m->ctx, NULL, AC_OK, 0, m->nnodes};
  for (size_t fi = first; fi < m->nfuncs && S.st == AC_OK; fi++) {
    if (m->funcs[fi].is_template || m->funcs[fi].body == IR_NONE)
      continue;
    ir_ref b = sp_expand(&S, m->funcs[fi].body, m->funcs[fi].nparams);
    if (b)
      m->funcs[fi].body = b;
  }
  if (S.st == AC_OK && m->oom)
    S.st = AC_ERR_NOMEM;
  if (S.st != AC_OK) {
    if (err)
      *err = S.err;
    else
      ac_error_destroy(S.err);
    return S.st;
  }
  /* the templates leave; calls and references are renumbered */
  size_t nf = m->nfuncs, next = first;
  uint32_t *map = ac_alloc(m->ctx, (nf + 1) * sizeof *map);
  if (!map)
    return AC_ERR_NOMEM;
  for (size_t fi = 0; fi < nf; fi++) {
    if (fi < first) {
      map[fi] = (uint32_t)fi;
    } else if (m->funcs[fi].is_template) {
      map[fi] = UINT32_MAX;
    } else {
      map[fi] = (uint32_t)next;
      m->funcs[next++] = m->funcs[fi];
    }
  }
  m->nfuncs = next;
  for (size_t r = 1; r < m->nnodes; r++) {
    ir_node *n = &m->nodes[r];
    if ((n->op == IR_CALL || n->op == IR_FNREF) && n->attr >= (int64_t)first &&
        (uint64_t)n->attr < nf && map[n->attr] != UINT32_MAX)
      n->attr = map[n->attr];
  }
  ac_free(m->ctx, map);
  return AC_OK;
}
