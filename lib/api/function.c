/* lib/api/function.c: backends, callable functions and flattened values.
 *
 * ac_function_create picks a backend and prepares one function of a module
 * for calls: it checks that the function and everything it calls has a body
 * and has been verified, and records the flattened signature (one leaf per
 * scalar or array, in the order of ir_ty_leaves) with a name per leaf for
 * messages ("xs", or "p.1" for field 1 of a tuple parameter p). For now
 * AUTO and INTERP both run the reference interpreter; the compiled backends
 * (cpu, gpu, simt-emu) are not part of this build and are refused with
 * AC_ERR_UNSUPPORTED.
 *
 * ac_function_call checks every argument leaf (kind, scalar type, rank)
 * against the signature, so the backends may trust their inputs, and then
 * runs the backend.
 *
 * Thread safety: ac_function_call never modifies the module, the function
 * or the context's tables (the interpreter only reads the IR and allocates
 * through the context's allocator hook, and array reference counts are
 * atomic), so several threads may call functions of one module at the same
 * time, provided the allocator hook is thread-safe (the default one is) and
 * no thread modifies the module (builder, passes, verification) meanwhile.
 * Creating and destroying functions is not synchronised with calls.
 */
#include "interp/rtarray.h"

#include <stdio.h>
#include <string.h>

typedef struct leaf_info {
  ac_scalar type;
  unsigned rank; /* 0 = scalar */
  char *name;
} leaf_info;

struct ac_function {
  ac_module *m;
  ac_context *ctx;
  uint32_t fn;
  ac_backend backend; /* the backend actually used */
  size_t nargs, nres;
  leaf_info *args, *res;
};

static const char *const backend_names[] = {"auto", "interp", "cpu", "gpu", "simt-emu"};
#define NUM_BACKENDS (sizeof backend_names / sizeof backend_names[0])

bool ac_backend_from_name(const char *name, ac_backend *out) {
  for (size_t i = 0; name && i < NUM_BACKENDS; i++)
    if (strcmp(name, backend_names[i]) == 0) {
      if (out)
        *out = (ac_backend)i;
      return true;
    }
  return false;
}

const char *ac_backend_name(ac_backend b) {
  return (unsigned)b < NUM_BACKENDS ? backend_names[b] : NULL;
}

static ac_status fail(ac_context *ctx, ac_error **err, ac_status st, const char *fmt, ...)
    IR_PRINTF(4, 5);
static ac_status fail(ac_context *ctx, ac_error **err, ac_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ac_error *e = ir_verror(ctx, st, NULL, (ir_loc){0, 0}, fmt, ap);
  va_end(ap);
  return ir_report(err, e, e ? st : AC_ERR_NOMEM);
}

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
    ir_ref body = m->funcs[f].body;
    if (body == IR_NONE || body >= m->nnodes) {
      st = f == fn ? fail(ctx, err, AC_ERR_INVALID, "function '%s' has no body", fname)
                   : fail(ctx, err, AC_ERR_INVALID, "function '%s' calls '%s', which has no body",
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
        st = fail(ctx, err, AC_ERR_INVALID,
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

static void free_leaves(ac_context *ctx, leaf_info *l, size_t n) {
  for (size_t i = 0; l && i < n; i++)
    ac_free(ctx, l[i].name);
  ac_free(ctx, l);
}

void ac_function_destroy(ac_function *f) {
  if (!f)
    return;
  free_leaves(f->ctx, f->args, f->nargs);
  free_leaves(f->ctx, f->res, f->nres);
  ac_free(f->ctx, f);
}

ac_status ac_function_create(ac_module *m, const char *name, ac_backend be, ac_function **out,
                             ac_error **err) {
  if (err)
    *err = NULL;
  if (!out)
    return m ? fail(m->ctx, err, AC_ERR_INVALID, "ac_function_create: out is NULL")
             : AC_ERR_INVALID;
  *out = NULL;
  if (!m)
    return AC_ERR_INVALID;
  ac_context *ctx = m->ctx;
  if (!name)
    return fail(ctx, err, AC_ERR_INVALID, "ac_function_create: name is NULL");
  if (be == AC_BACKEND_CPU || be == AC_BACKEND_GPU || be == AC_BACKEND_SIMT_EMU)
    return fail(ctx, err, AC_ERR_UNSUPPORTED, "the %s backend is not available in this build",
                ac_backend_name(be));
  if (be != AC_BACKEND_AUTO && be != AC_BACKEND_INTERP)
    return fail(ctx, err, AC_ERR_INVALID, "unknown backend %d", (int)be);
  if (m->oom)
    return ir_report(err, NULL, AC_ERR_NOMEM);
  size_t fn = 0;
  while (fn < m->nfuncs && strcmp(ir_sym_str(ctx, m->funcs[fn].name), name) != 0)
    fn++;
  if (fn == m->nfuncs)
    return fail(ctx, err, AC_ERR_INVALID, "no function named '%s'", name);
  ac_status st = check_reachable(m, (uint32_t)fn, err);
  if (st != AC_OK)
    return st;

  const ir_func *fd = &m->funcs[fn];
  ac_function *f = ac_alloc(ctx, sizeof *f);
  ir_type *ptypes = ac_alloc(ctx, (fd->nparams + 1) * sizeof *ptypes);
  const char **pnames = ac_alloc(ctx, (fd->nparams + 1) * sizeof *pnames);
  bool ok = f && ptypes && pnames;
  if (ok) {
    memset(f, 0, sizeof *f);
    f->m = m;
    f->ctx = ctx;
    f->fn = (uint32_t)fn;
    f->backend = AC_BACKEND_INTERP;
    for (uint32_t i = 0; i < fd->nparams; i++) {
      ptypes[i] = ir_func_param(m, fd, i);
      pnames[i] = ir_sym_str(ctx, m->syms[fd->pnames + i]);
    }
    const char *rname = "";
    ok = make_leaves(ctx, fd->nparams, ptypes, pnames, &f->args, &f->nargs) &&
         make_leaves(ctx, 1, &fd->result, &rname, &f->res, &f->nres);
  }
  ac_free(ctx, ptypes);
  ac_free(ctx, (void *)pnames);
  if (!ok) {
    ac_function_destroy(f);
    return ir_report(err, NULL, AC_ERR_NOMEM);
  }
  *out = f;
  return AC_OK;
}

ac_backend ac_function_backend(const ac_function *f) {
  return f->backend;
}
size_t ac_function_num_args(const ac_function *f) {
  return f->nargs;
}
size_t ac_function_num_results(const ac_function *f) {
  return f->nres;
}
size_t ac_function_num_kernels(const ac_function *f) {
  (void)f;
  return 0;
}

void ac_function_arg_info(const ac_function *f, size_t i, ac_scalar *type, unsigned *rank) {
  if (i >= f->nargs)
    return;
  if (type)
    *type = f->args[i].type;
  if (rank)
    *rank = f->args[i].rank;
}

void ac_function_result_info(const ac_function *f, size_t i, ac_scalar *type, unsigned *rank) {
  if (i >= f->nres)
    return;
  if (type)
    *type = f->res[i].type;
  if (rank)
    *rank = f->res[i].rank;
}

/* "f32", "i32[,]" or "invalid" for a leaf's kind. */
static void spell(char *buf, size_t size, ac_scalar type, unsigned rank) {
  const char *s = ac_scalar_name(type);
  if (!s) {
    snprintf(buf, size, "invalid");
    return;
  }
  size_t n = (size_t)snprintf(buf, size, "%s", s);
  if (rank == 0 || n + rank + 2 > size)
    return;
  buf[n++] = '[';
  for (unsigned i = 1; i < rank; i++)
    buf[n++] = ',';
  buf[n++] = ']';
  buf[n] = 0;
}

static ac_status check_args(const ac_function *f, const ac_datum *args, ac_error **err) {
  for (size_t i = 0; i < f->nargs; i++) {
    const leaf_info *l = &f->args[i];
    const ac_datum *d = &args[i];
    char want[64], got[64];
    spell(want, sizeof want, l->type, l->rank);
    if (d->kind == AC_DATUM_ARRAY && !d->array)
      return fail(f->ctx, err, AC_ERR_INVALID, "argument %zu (%s): expected %s, got a NULL array",
                  i + 1, l->name, want);
    if (d->kind == AC_DATUM_ARRAY)
      spell(got, sizeof got, d->array->type, d->array->rank);
    else if (d->kind == AC_DATUM_SCALAR)
      spell(got, sizeof got, d->type, 0);
    else
      snprintf(got, sizeof got, "an invalid datum kind %d", (int)d->kind);
    if (strcmp(want, got) != 0)
      return fail(f->ctx, err, AC_ERR_INVALID, "argument %zu (%s): expected %s, got %s", i + 1,
                  l->name, want, got);
  }
  return AC_OK;
}

ac_status ac_function_call(ac_function *f, const ac_datum *args, size_t nargs, ac_datum *results,
                           size_t nresults, ac_error **err) {
  if (err)
    *err = NULL;
  if (!f)
    return AC_ERR_INVALID;
  if (nargs != f->nargs)
    return fail(f->ctx, err, AC_ERR_INVALID, "expected %zu arguments, got %zu", f->nargs, nargs);
  if (nresults != f->nres)
    return fail(f->ctx, err, AC_ERR_INVALID, "expected room for %zu results, got %zu", f->nres,
                nresults);
  if ((nargs && !args) || (nresults && !results))
    return fail(f->ctx, err, AC_ERR_INVALID, "arguments or results are NULL");
  ac_status st = check_args(f, args, err);
  if (st != AC_OK)
    return st;
  return interp_call(f->m, f->fn, args, nargs, results, nresults, err);
}

void ac_datum_release(ac_datum *d) {
  if (d && d->kind == AC_DATUM_ARRAY && d->array) {
    ac_array_release(d->array);
    d->array = NULL;
  }
}
