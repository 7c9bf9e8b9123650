/* lib/api/extern.c: binding extern functions to host code.
 *
 * An `extern fn` (docs/language.md §3.3) is a top-level function whose body
 * is C code in the host process: Nikola's "embedding hand-written code" for
 * the CPU. The IR keeps only its scalar signature; the address to call lives
 * in its ir_func (extern_addr). It gets there in one of two ways:
 *
 *   - ac_module_bind_extern(m, name, addr): the host names the C function
 *     explicitly (a static function, a function in a library opened with
 *     RTLD_LOCAL, a different name);
 *   - ir_resolve_externs, called by ac_function_create: every extern the
 *     function can reach that is still unbound is looked up by its own name
 *     with dlsym(RTLD_DEFAULT, name), which finds the exported symbols of the
 *     executable (linked with -rdynamic) and of the libraries loaded
 *     globally (libm's functions, for instance).
 *
 * Resolution happens before a backend compiles anything, so the CPU backend
 * can call the address directly and the interpreter through libffi
 * (lib/interp/extern.c); the address found is stored in the module, so a
 * second ac_function_create finds it bound. Nothing here calls the
 * function: whether the address has the declared C type is the host's
 * promise (a wrong binding is undefined behaviour, as in C).
 */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include "ir.h"

#include <dlfcn.h>
#include <string.h>

ac_status ac_module_bind_extern(ac_module *m, const char *name, void (*addr)(void),
                                ac_error **err) {
  if (err)
    *err = NULL;
  if (!m)
    return AC_ERR_INVALID;
  const char *why = !name ? "the name is NULL" : !addr ? "the address is NULL" : NULL;
  ir_sym s = name ? ir_sym_intern(m->ctx, name, strlen(name)) : IR_SYM_NONE;
  if (name && s == IR_SYM_NONE)
    return ir_report(err, NULL, AC_ERR_NOMEM);
  int32_t fi = why ? -1 : ir_func_find(m, s);
  if (!why && fi < 0)
    why = "the module has no extern function of that name";
  else if (!why && !m->funcs[fi].is_extern)
    why = "it is a function with a body, not an extern function";
  if (why) {
    ac_error *e =
        ir_error(m->ctx, AC_ERR_INVALID, NULL, (ir_loc){0, 0},
                 "ac_module_bind_extern: cannot bind '%s': %s", name ? name : "(null)", why);
    return ir_report(err, e, e ? AC_ERR_INVALID : AC_ERR_NOMEM);
  }
  m->funcs[fi].extern_addr = addr;
  return AC_OK;
}

bool ac_module_function_is_extern(const ac_module *m, size_t i) {
  return m && i < m->nfuncs && m->funcs[i].is_extern;
}

/* Looks up an extern's own name in the process. dlsym returns an object
 * pointer; POSIX guarantees it converts to a function pointer, which memcpy
 * does without the cast ISO C leaves undefined. */
static void (*lookup_symbol(const char *name))(void) {
  void *sym = dlsym(RTLD_DEFAULT, name);
  void (*fp)(void) = NULL;
  _Static_assert(sizeof sym == sizeof fp, "function and object pointers differ in size");
  if (sym)
    memcpy(&fp, &sym, sizeof fp);
  return fp;
}

/* Binds extern fi by its name, or fails at its declaration. */
static ac_status resolve_one(ac_module *m, uint32_t fi, ac_error **err) {
  ir_func *f = &m->funcs[fi];
  if (f->extern_addr)
    return AC_OK;
  const char *name = ir_sym_str(m->ctx, f->name);
  const char *sym = f->khost ? ir_sym_str(m->ctx, f->khost) : name;
  f->extern_addr = lookup_symbol(sym);
  if (f->extern_addr)
    return AC_OK;
  ac_error *e = f->is_kernel
                    ? ir_error(m->ctx, AC_ERR_INVALID, m, f->loc,
                               "extern kernel '%s' has no host function: it is not bound and the "
                               "process has no symbol '%s' (see ac_module_bind_extern; the "
                               "interpreter and the CPU call the host function, the GPU the PTX)",
                               name, sym)
                    : ir_error(m->ctx, AC_ERR_INVALID, m, f->loc,
                         "extern function '%s' is not bound and the process has no symbol '%s' "
                         "(see ac_module_bind_extern)",
                         name, name);
  return ir_report(err, e, e ? AC_ERR_INVALID : AC_ERR_NOMEM);
}

ac_status ir_resolve_externs(ac_module *m, uint32_t fn, bool kernels, ac_error **err) {
  ac_context *ctx = m->ctx;
  if (fn >= m->nfuncs)
    return ir_report(err,
                     ir_error(ctx, AC_ERR_INTERNAL, NULL, (ir_loc){0, 0},
                              "ir_resolve_externs: no function %u", fn),
                     AC_ERR_INTERNAL);
  if (m->funcs[fn].is_extern)
    return ir_report(err,
                     ir_error(ctx, AC_ERR_INVALID, m, m->funcs[fn].loc,
                              "'%s' is an extern function: the host implements it, so call it "
                              "directly, or from a function with a body",
                              ir_sym_str(ctx, m->funcs[fn].name)),
                     AC_ERR_INVALID);
  /* The functions reachable from fn, through calls and function references
   * (FNREF), each body walked once with explicit stacks: the same walk as
   * ac_function_create's own check, which reports bodies that are missing
   * or unverified; here a malformed reference is simply not followed. */
  bool *seen_fn = ac_alloc(ctx, m->nfuncs * sizeof *seen_fn);
  unsigned char *seen = ac_alloc(ctx, m->nnodes);
  uint32_t *fstack = ac_alloc(ctx, m->nfuncs * sizeof *fstack);
  ir_ref *stack = NULL;
  size_t sp = 0, cap = 0, fsp = 0;
  ac_status st = seen_fn && seen && fstack ? AC_OK : AC_ERR_NOMEM;
  if (st == AC_OK) {
    memset(seen_fn, 0, m->nfuncs * sizeof *seen_fn);
    memset(seen, 0, m->nnodes);
    seen_fn[fn] = true;
    fstack[fsp++] = fn;
  }
  while (st == AC_OK && fsp > 0) {
    uint32_t f = fstack[--fsp];
    if (m->funcs[f].is_extern) {
      /* an unfinished kernel (the builder's) is reported by the caller's check */
      if ((kernels && m->funcs[f].nkext) || !m->funcs[f].is_kernel)
        st = resolve_one(m, f, err);
      continue;
    }
    ir_ref body = m->funcs[f].body;
    if (body == IR_NONE || body >= m->nnodes)
      continue;
    if (!ac_grow(ctx, (void **)&stack, &cap, sp + 1, sizeof *stack)) {
      st = AC_ERR_NOMEM;
      break;
    }
    stack[sp++] = body;
    while (st == AC_OK && sp > 0) {
      ir_ref r = stack[--sp];
      if (r == IR_NONE || r >= m->nnodes || seen[r])
        continue;
      seen[r] = 1;
      const ir_node *n = ir_node_get(m, r);
      if ((n->op == IR_CALL || n->op == IR_FNREF) && n->attr >= 0 &&
          (uint64_t)n->attr < m->nfuncs && !seen_fn[n->attr]) {
        seen_fn[n->attr] = true;
        fstack[fsp++] = (uint32_t)n->attr; /* each function at most once: fits */
      }
      if ((size_t)n->kids + n->nkids > m->nkids)
        continue; /* malformed children: not followed */
      if (!ac_grow(ctx, (void **)&stack, &cap, sp + n->nkids, sizeof *stack)) {
        st = AC_ERR_NOMEM;
        break;
      }
      for (uint32_t i = 0; i < n->nkids; i++)
        stack[sp++] = ir_kid(m, r, i);
    }
  }
  if (st == AC_ERR_NOMEM)
    ir_report(err, NULL, st);
  ac_free(ctx, stack);
  ac_free(ctx, fstack);
  ac_free(ctx, seen);
  ac_free(ctx, seen_fn);
  return st;
}
