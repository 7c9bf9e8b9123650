/* lib/api/function.c: functions of a module, ready for calls.
 *
 * A function is prepared for calls either by ac_function_create (backend by
 * name; the compiled backends use the context's default runtime, see
 * runtime.c) or by ac_runtime_compile (an explicit runtime). Both come to
 * api_function_new, which binds the extern functions it reaches
 * (ir_resolve_externs), checks that the function and everything it calls
 * has a body (or is an extern) and has been verified, records the flattened
 * signature (one leaf per scalar or array, in the order of ir_ty_leaves)
 * with a name per leaf for messages ("xs", or "p.1" for field 1 of a tuple
 * parameter p), and on a compiled backend fetches the compiled entry (plan
 * and kernels) from the runtime's cache, compiling it on a miss
 * (compile.c).
 *
 * Calls are the runtime's (runtime/function.c): the hooks below give it
 * the interpreter for functions without a plan, and rebuild the plan's
 * runtime errors (which carry only a position) against the caller's module
 * so that their text shows the source line and caret exactly as the
 * interpreter's do (the compiled entry may have been made from another
 * module object with the same text).
 *
 * Thread safety: calls never modify the module, the function or the
 * context's tables (runtime/function.c), so several threads may call
 * functions of one module at the same time, provided no thread modifies the
 * module meanwhile (builder, passes, verification).
 */
#include "api/function_impl.h"

#include <stdio.h>
#include <string.h>

typedef api_leaf leaf_info;

/* ---- checking what a function needs ---- */

/* Visits the bodies of function fn and of every function it calls or names
 * (FNREF), with an explicit stack so that deep trees cannot overflow the C
 * stack. Each node is seen once even where subtrees are shared. */
static ac_status check_reachable(ac_module *m, uint32_t fn, ac_error **err) {
  ac_context *ctx = m->ctx;
  const char *top = ir_sym_str(ctx, m->funcs[fn].name);
  bool *seen_fn = ac_alloc(ctx, m->nfuncs * sizeof *seen_fn);
  unsigned char *seen = ac_alloc(ctx, m->nnodes);
  ir_ref *stack = NULL;    /* nodes still to visit */
  uint32_t *fstack = NULL; /* functions still to visit */
  size_t sp = 0, cap = 0, fsp = 0, fcap = 0;
  ac_status st = AC_OK;
  if (!seen_fn || !seen || !ac_grow(ctx, (void **)&fstack, &fcap, 1, sizeof *fstack)) {
    st = AC_ERR_NOMEM;
    goto done;
  }
  memset(seen_fn, 0, m->nfuncs * sizeof *seen_fn);
  memset(seen, 0, m->nnodes);
  fstack[fsp++] = fn;
  seen_fn[fn] = true;
  while (fsp > 0 && st == AC_OK) {
    uint32_t f = fstack[--fsp];
    const char *fname = ir_sym_str(ctx, m->funcs[f].name);
    if (m->funcs[f].is_kernel && m->funcs[f].nkext == 0) {
      st = api_fail(ctx, err, AC_ERR_INVALID,
                    "function '%s' calls extern kernel '%s', which is not finished "
                    "(ac_kernel_finish)",
                    top, fname);
      break;
    }
    if (m->funcs[f].is_extern)
      continue; /* host code: bound by ir_resolve_externs, nothing to check */
    ir_ref body = m->funcs[f].body;
    if (body == IR_NONE || body >= m->nnodes) {
      st = f == fn ? api_fail(ctx, err, AC_ERR_INVALID, "function '%s' has no body", fname)
                   : api_fail(ctx, err, AC_ERR_INVALID, "function '%s' calls '%s', which has no body",
                          top, fname);
      break;
    }
    if (!ac_grow(ctx, (void **)&stack, &cap, sp + 1, sizeof *stack)) {
      st = AC_ERR_NOMEM;
      break;
    }
    stack[sp++] = body;
    while (sp > 0 && st == AC_OK) {
      ir_ref r = stack[--sp];
      if (r == IR_NONE || r >= m->nnodes || seen[r])
        continue;
      seen[r] = 1;
      const ir_node *n = ir_node_get(m, r);
      /* lambdas and function references are not values the interpreter
       * types; every other node must carry its type */
      if (n->type == IR_TY_NONE && n->op != IR_LAM && n->op != IR_FNREF) {
        st = api_fail(ctx, err, AC_ERR_INVALID,
                  "function '%s' has not been verified (see ac_module_verify)", fname);
        break;
      }
      if ((n->op == IR_CALL || n->op == IR_FNREF) && n->attr >= 0 &&
          (uint64_t)n->attr < m->nfuncs && !seen_fn[n->attr]) {
        seen_fn[n->attr] = true;
        if (!ac_grow(ctx, (void **)&fstack, &fcap, fsp + 1, sizeof *fstack)) {
          st = AC_ERR_NOMEM;
          break;
        }
        fstack[fsp++] = (uint32_t)n->attr;
      }
      if (!ac_grow(ctx, (void **)&stack, &cap, sp + n->nkids, sizeof *stack)) {
        st = AC_ERR_NOMEM;
        break;
      }
      for (uint32_t i = 0; i < n->nkids; i++)
        stack[sp++] = ir_kid(m, r, i);
    }
  }
done:
  if (st == AC_ERR_NOMEM)
    ir_report(err, NULL, st);
  ac_free(ctx, fstack);
  ac_free(ctx, stack);
  ac_free(ctx, seen);
  ac_free(ctx, seen_fn);
  return st;
}

/* ---- the flattened signature ---- */

typedef struct leaf_walk {
  ac_context *ctx;
  leaf_info *out;
  size_t n;
  const char *name; /* leaf name while walking one parameter */
  bool oom;
} leaf_walk;

/* Names the leaves of a value of type t: the name itself for a scalar or
 * array, name.K for field K of a tuple, recursively. */
static void walk_leaves(leaf_walk *w, ir_type t, const char *name) {
  ir_typeinfo ti = ir_ty_info(w->ctx, t);
  if (ti.kind == TK_TUPLE) {
    for (uint32_t f = 0; f < ti.n && !w->oom; f++) {
      char *sub = ac_alloc(w->ctx, strlen(name) + 16);
      if (!sub) {
        w->oom = true;
        return;
      }
      sprintf(sub, "%s%s%u", name, *name ? "." : "", f);
      walk_leaves(w, ti.fields[f], sub);
      ac_free(w->ctx, sub);
    }
    return;
  }
  if (ti.kind != TK_SCALAR && ti.kind != TK_ARRAY)
    return;
  if (w->out) {
    leaf_info *l = &w->out[w->n];
    l->type = ti.sc;
    l->rank = ti.kind == TK_ARRAY ? ti.rank : 0;
    l->name = ac_strdup(w->ctx, name);
    if (!l->name)
      w->oom = true;
  }
  w->n++;
}

/* Fills *out with the leaves of the given types (names[i] for type i). */
static bool make_leaves(ac_context *ctx, size_t ntypes, const ir_type *types,
                        const char *const *names, leaf_info **out, size_t *n) {
  leaf_walk w = {ctx, NULL, 0, NULL, false};
  for (size_t i = 0; i < ntypes; i++)
    walk_leaves(&w, types[i], names[i]);
  *n = w.n;
  *out = ac_alloc(ctx, (w.n ? w.n : 1) * sizeof **out);
  if (!*out)
    return false;
  memset(*out, 0, (w.n ? w.n : 1) * sizeof **out);
  w.out = *out;
  w.n = 0;
  for (size_t i = 0; i < ntypes && !w.oom; i++)
    walk_leaves(&w, types[i], names[i]);
  return !w.oom;
}

/* The type t spelled as the language prints it (ac_alloc'd), or NULL. */
static char *type_text(ac_context *ctx, ir_type t) {
  ir_buf b;
  ir_buf_init(&b, ctx);
  ir_ty_print(ctx, t, &b);
  ir_buf_cstr(&b);
  char *s = b.oom ? NULL : ir_buf_take(&b);
  ir_buf_free(&b);
  return s;
}

/* f's declared parameters (names[i] of type types[i]) over its leaves, and
 * its result type: what ac_function_param_* report. */
static bool make_params(ac_function *f, size_t n, const ir_type *types, const char *const *names,
                        ir_type result) {
  ac_context *ctx = f->ctx;
  f->params = ac_alloc(ctx, (n ? n : 1) * sizeof *f->params);
  if (!f->params)
    return false;
  memset(f->params, 0, (n ? n : 1) * sizeof *f->params);
  f->nparams = n;
  uint32_t first = 0;
  for (size_t i = 0; i < n; i++) {
    leaf_walk w = {ctx, NULL, 0, NULL, false};
    walk_leaves(&w, types[i], names[i]);
    rt_param *p = &f->params[i];
    p->first = first;
    p->nleaves = (uint32_t)w.n;
    first += p->nleaves;
    if (w.oom || !(p->name = ac_strdup(ctx, names[i])) || !(p->type = type_text(ctx, types[i])))
      return false;
  }
  return (f->result_type = type_text(ctx, result)) != NULL;
}

/* ---- the hooks the runtime calls (runtime/function.h) ---- */

static ac_status fn_interp(ac_function *f, const ac_datum *args, size_t nargs, ac_datum *results,
                           size_t nresults, ac_error **err) {
  return interp_call(f->m, f->fn, args, nargs, results, nresults, err);
}

/* the interpreter's text: this module's name, its source line */
static ac_error *fn_relocate(const ac_function *f, const ac_error *e) {
  return ir_error(f->ctx, e->status, f->m, (ir_loc){e->line, e->col}, "%s", e->message);
}

static ac_status fn_print_llvm(const ac_function *f, char **out, ac_error **err) {
  return api_print_llvm(f->owner, f->m, f->fn, out, err);
}

static void fn_release(ac_function *f) {
  api_runtime_release(f->owner);
}

static const rt_fn_hooks fn_hooks = {fn_interp, fn_relocate, fn_print_llvm, fn_release};

/* api_function_new, and with `bind` false api_function_signature. */
static ac_status function_new(ac_module *m, const char *name, ac_runtime *rt, bool bind,
                              ac_function **out, ac_error **err) {
  ac_context *ctx = m->ctx;
  if (!name)
    return api_fail(ctx, err, AC_ERR_INVALID, "no function name given (NULL)");
  if (m->oom)
    return ir_report(err, NULL, AC_ERR_NOMEM);
  size_t fn = 0;
  while (fn < m->nfuncs && strcmp(ir_sym_str(ctx, m->funcs[fn].name), name) != 0)
    fn++;
  if (fn == m->nfuncs)
    return api_fail(ctx, err, AC_ERR_INVALID, "no function named '%s'", name);
  /* binds the externs fn reaches (lib/api/extern.c) before anything runs or
   * is compiled: the backends call extern_addr directly */
  bool host_kernels = !(rt && rt->backend == AC_BACKEND_GPU);
  ac_status st = bind ? ir_resolve_externs(m, (uint32_t)fn, host_kernels, err) : AC_OK;
  if (st != AC_OK)
    return st;
  st = check_reachable(m, (uint32_t)fn, err);
  if (st != AC_OK)
    return st;

  const ir_func *fd = &m->funcs[fn];
  ac_function *f = ac_alloc(ctx, sizeof *f);
  ir_type *ptypes = ac_alloc(ctx, (fd->nparams + 1) * sizeof *ptypes);
  const char **pnames = ac_alloc(ctx, (fd->nparams + 1) * sizeof *pnames);
  if (f) { /* zeroed first: a failure below destroys it */
    memset(f, 0, sizeof *f);
    atomic_init(&f->fnptr, NULL);
    f->ctx = ctx;
    f->hooks = &fn_hooks;
    f->name = ac_strdup(ctx, name);
  }
  bool ok = f && f->name && ptypes && pnames;
  if (ok) {
    f->m = m;
    f->fn = (uint32_t)fn;
    f->backend = AC_BACKEND_INTERP;
    for (uint32_t i = 0; i < fd->nparams; i++) {
      ptypes[i] = ir_func_param(m, fd, i);
      pnames[i] = ir_sym_str(ctx, m->syms[fd->pnames + i]);
    }
    const char *rname = "";
    ok = make_leaves(ctx, fd->nparams, ptypes, pnames, &f->args, &f->nargs) &&
         make_leaves(ctx, 1, &fd->result, &rname, &f->res, &f->nres) &&
         make_params(f, fd->nparams, ptypes, pnames, fd->result);
  }
  ac_free(ctx, ptypes);
  ac_free(ctx, (void *)pnames);
  if (!ok) {
    ac_function_destroy(f);
    return ir_report(err, NULL, AC_ERR_NOMEM);
  }
  if (rt && rt->backend != AC_BACKEND_INTERP) {
    const api_code *code = NULL;
    st = api_compile(rt, m, f->fn, &code, err);
    if (st != AC_OK) {
      ac_function_destroy(f);
      return st;
    }
    f->backend = rt->backend;
    f->plan = code->plan;
    f->kernels = code->kernels;
    f->pool = rt->pool;
    f->gkernels = code->gkernels;
    f->gpu = rt->gpu;
    f->owner = rt;
    api_runtime_retain(rt);
  }
  *out = f;
  return AC_OK;
}

ac_status api_function_new(ac_module *m, const char *name, ac_runtime *rt, ac_function **out,
                           ac_error **err) {
  return function_new(m, name, rt, true, out, err);
}

ac_status api_function_signature(ac_module *m, const char *name, ac_function **out,
                                 ac_error **err) {
  if (m->funcs && name) {
    int32_t fi = ir_func_find(m, ir_sym_intern(m->ctx, name, strlen(name)));
    if (fi >= 0 && m->funcs[fi].is_extern)
      return api_fail(m->ctx, err, AC_ERR_INVALID, "'%s' is an extern function", name);
  }
  return function_new(m, name, NULL, false, out, err);
}

ac_status ac_function_create(ac_module *m, const char *name, ac_backend be, ac_function **out,
                             ac_error **err) {
  if (err)
    *err = NULL;
  if (!out)
    return m ? api_fail(m->ctx, err, AC_ERR_INVALID, "ac_function_create: out is NULL")
             : AC_ERR_INVALID;
  *out = NULL;
  if (!m)
    return AC_ERR_INVALID;
  ac_context *ctx = m->ctx;
  if (!name)
    return api_fail(ctx, err, AC_ERR_INVALID, "ac_function_create: name is NULL");
  if ((unsigned)be > AC_BACKEND_SIMT_EMU)
    return api_fail(ctx, err, AC_ERR_INVALID, "unknown backend %d", (int)be);
  ac_runtime *rt = NULL;
  if (be != AC_BACKEND_INTERP) {
    /* AUTO is the best compiled backend there is: the GPU when a driver and
     * a device are present, else the CPU; only when the CPU backend itself
     * cannot be set up (no LLVM target for this host, no memory for the
     * pool) does it fall back to the interpreter. A function the chosen
     * backend cannot compile is an error either way: falling back would
     * hide it. */
    ac_error *e = NULL;
    ac_status st = api_default_runtime(ctx, be, &rt, &e);
    if (st != AC_OK && be != AC_BACKEND_AUTO)
      return ir_report(err, e, st);
    ac_error_destroy(e);
  }
  return api_function_new(m, name, rt, out, err);
}
