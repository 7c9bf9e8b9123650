/* lib/interp/interp.c: the reference interpreter's core.
 *
 * interp_call binds a function's flattened arguments and evaluates its body;
 * interp_eval dispatches on the operation table. This file holds the value
 * stack and environment (see interp.h for the representation), lambdas, the
 * expression forms (variables, literals, tuples, let, if, calls, loop,
 * casts, indexing, the scalar operators) and helpers shared by the array
 * operations, which live in build.c, reduce.c, permute.c, stencil.c and
 * rec.c.
 *
 * The interpreter is the executable specification (Accelerate's role for
 * its interpreter): it favours the obvious reading of docs/language.md over
 * speed, but it never allocates per scalar operation or element read, and
 * every array operation is linear in its input and output (plus a sort in
 * rec), so it handles arrays of millions of elements.
 *
 * Requirements: the module has been verified (every node has its type, rec
 * schedules are set). The interpreter never writes to the module or interns
 * types, so several threads may evaluate functions of one module at once.
 * Recursion follows the nesting of the program (bounded by the parser) and
 * calls (the call graph is acyclic); INTERP_MAX_DEPTH turns an extreme case
 * into an error rather than a stack overflow.
 */
#include "interp/interp.h"

#include <stdio.h>
#include <string.h>

/* Nested interp_eval calls allowed: each level costs a few hundred bytes of
 * C stack (more under sanitizers), and the parser already limits a
 * function's tree depth to 2000. */
#define INTERP_MAX_DEPTH 6000u

/* ---- errors ---- */

static bool fail_v(interp *I, ac_status st, ir_ref at, const char *fmt, va_list ap) {
  if (I->st == AC_OK) {
    I->err = ir_verror(I->ctx, st, I->m, at ? INODE(I, at)->loc : (ir_loc){0, 0}, fmt, ap);
    I->st = I->err ? st : AC_ERR_NOMEM;
  }
  return false;
}

bool interp_fail(interp *I, ir_ref at, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fail_v(I, AC_ERR_RUNTIME, at, fmt, ap);
  va_end(ap);
  return false;
}

bool interp_internal(interp *I, ir_ref at, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fail_v(I, AC_ERR_INTERNAL, at, fmt, ap);
  va_end(ap);
  return false;
}

bool interp_nomem(interp *I, ir_ref at) {
  if (I->st == AC_OK) {
    I->err = ir_error(I->ctx, AC_ERR_NOMEM, at ? I->m : NULL,
                      at ? INODE(I, at)->loc : (ir_loc){0, 0}, "out of memory");
    I->st = AC_ERR_NOMEM;
  }
  return false;
}

void *interp_scratch(interp *I, ir_ref at, int64_t n, size_t size) {
  if (n < 0 || (n > 0 && n > RT_ARRAY_MAX_BYTES / (int64_t)size)) {
    interp_fail(I, at, "array too large");
    return NULL;
  }
  void *p = ac_alloc(I->ctx, (size_t)n * size);
  if (!p)
    interp_nomem(I, at);
  return p;
}

/* ---- the stack ---- */

bool interp_reserve(interp *I, size_t n) {
  if (I->cap - I->sp >= n)
    return true;
  if (!ac_grow(I->ctx, (void **)&I->stk, &I->cap, I->sp + n, sizeof *I->stk))
    return interp_nomem(I, 0);
  return true;
}

bool interp_push(interp *I, interp_leaf l) {
  if (!interp_reserve(I, 1))
    return false;
  I->stk[I->sp++] = l;
  return true;
}

static bool push_scalar(interp *I, interp_scalar s) {
  interp_leaf l = {LK_SCALAR, 0, {.s = s}};
  return interp_push(I, l);
}

static bool push_i64(interp *I, int64_t v) {
  interp_scalar s;
  s.i = v;
  return push_scalar(I, s);
}

bool interp_push_copy(interp *I, size_t off, size_t n) {
  if (!interp_reserve(I, n))
    return false;
  for (size_t i = 0; i < n; i++) {
    interp_leaf l = I->stk[off + i];
    if (l.kind == LK_ARRAY)
      ac_array_retain(l.v.a);
    I->stk[I->sp++] = l;
  }
  return true;
}

static void release_range(interp *I, size_t from, size_t to) {
  for (size_t i = from; i < to; i++)
    if (I->stk[i].kind == LK_ARRAY)
      ac_array_release(I->stk[i].v.a);
}

void interp_drop(interp *I, size_t base) {
  release_range(I, base, I->sp);
  I->sp = base;
}

void interp_collapse(interp *I, size_t base, size_t keep) {
  if (keep == base)
    return;
  release_range(I, base, keep);
  memmove(I->stk + base, I->stk + keep, (I->sp - keep) * sizeof *I->stk);
  I->sp = base + (I->sp - keep);
}

bool interp_env_push(interp *I, size_t off, size_t n) {
  if (!ac_grow(I->ctx, (void **)&I->env, &I->capenv, I->nenv + 1, sizeof *I->env))
    return interp_nomem(I, 0);
  I->env[I->nenv].off = off;
  I->env[I->nenv].n = n;
  I->nenv++;
  return true;
}

/* ---- types (read-only: nothing here interns) ---- */

size_t interp_ty_nleaves(const ac_context *ctx, ir_type t) {
  ir_typeinfo ti = ir_ty_info(ctx, t);
  if (ti.kind == TK_SCALAR || ti.kind == TK_ARRAY || ti.kind == TK_WINDOW)
    return 1;
  size_t n = 0;
  if (ti.kind == TK_TUPLE)
    for (uint32_t i = 0; i < ti.n; i++)
      n += interp_ty_nleaves(ctx, ti.fields[i]);
  return n;
}

static size_t ty_scalars(const ac_context *ctx, ir_type t, ac_scalar *out, size_t max, size_t i) {
  ir_typeinfo ti = ir_ty_info(ctx, t);
  if (ti.kind == TK_SCALAR || ti.kind == TK_ARRAY || ti.kind == TK_WINDOW) {
    if (i < max)
      out[i] = ti.sc;
    return i + 1;
  }
  if (ti.kind == TK_TUPLE)
    for (uint32_t f = 0; f < ti.n; f++)
      i = ty_scalars(ctx, ti.fields[f], out, max, i);
  return i;
}

size_t interp_ty_scalars(const ac_context *ctx, ir_type t, ac_scalar *out, size_t max) {
  return ty_scalars(ctx, t, out, max, 0);
}

static ac_scalar scalar_of(const interp *I, ir_ref r) {
  ac_scalar sc = AC_BOOL;
  ir_ty_is_scalar(I->ctx, INODE(I, r)->type, &sc);
  return sc;
}

bool interp_read_ints(interp *I, ir_ref at, ir_type t, size_t off, size_t n, int64_t *out) {
  ac_scalar small[8], *sc = small;
  size_t nl = interp_ty_scalars(I->ctx, t, small, 8);
  if (nl < n)
    return interp_internal(I, at, "%zu integers expected, the value has %zu", n, nl);
  if (nl > 8) {
    if (!(sc = interp_scratch(I, at, (int64_t)nl, sizeof *sc)))
      return false;
    interp_ty_scalars(I->ctx, t, sc, nl);
  }
  for (size_t i = 0; i < n; i++)
    out[i] = interp_sc_to_i64(sc[i], I->stk[off + i].v.s);
  if (sc != small)
    ac_free(I->ctx, sc);
  return true;
}

bool interp_read_shape(interp *I, ir_ref at, ir_ref shape, size_t off, unsigned rank,
                       int64_t *ext) {
  if (!interp_read_ints(I, at, INODE(I, shape)->type, off, rank, ext))
    return false;
  for (unsigned d = 0; d < rank; d++)
    if (ext[d] < 0)
      return interp_fail(I, at, "negative extent %lld", (long long)ext[d]);
  return true;
}

/* ---- arrays as values ---- */

void interp_fmt_shape(char *buf, size_t size, unsigned rank, const int64_t *ext) {
  size_t n = 0;
  n += (size_t)snprintf(buf, size, "[");
  for (unsigned d = 0; d < rank && n < size; d++)
    n += (size_t)snprintf(buf + n, size - n, d ? ", %lld" : "%lld", (long long)ext[d]);
  if (n < size)
    snprintf(buf + n, size - n, "]");
}

void interp_fmt_index(char *buf, size_t size, unsigned rank, const int64_t *idx) {
  if (rank == 1) {
    snprintf(buf, size, "%lld", (long long)idx[0]);
    return;
  }
  interp_fmt_shape(buf, size, rank, idx);
  buf[0] = '(';
  size_t n = strlen(buf);
  if (n > 0 && buf[n - 1] == ']')
    buf[n - 1] = ')';
}

void interp_unravel(unsigned rank, const int64_t *ext, int64_t k, int64_t *idx) {
  for (unsigned d = rank; d-- > 0;) {
    idx[d] = k % ext[d];
    k /= ext[d];
  }
}

void interp_next_index(unsigned rank, const int64_t *ext, int64_t *idx) {
  for (unsigned d = rank; d-- > 0;) {
    if (++idx[d] < ext[d])
      return;
    idx[d] = 0;
  }
}

unsigned interp_ty_rank(const ac_context *ctx, ir_type t) {
  ir_typeinfo ti = ir_ty_info(ctx, t);
  if (ti.kind == TK_ARRAY)
    return ti.rank;
  return ti.kind == TK_TUPLE && ti.n > 0 ? interp_ty_rank(ctx, ti.fields[0]) : 0;
}

bool interp_ints_init(interp *I, ir_ref at, interp_ints *v, size_t n) {
  v->p = v->small;
  if (n > sizeof v->small / sizeof v->small[0] && !(v->p = interp_scratch(I, at, (int64_t)n, 8))) {
    v->p = v->small;
    return false;
  }
  memset(v->p, 0, n * sizeof *v->p);
  return true;
}

void interp_ints_free(interp *I, interp_ints *v) {
  if (v->p != v->small)
    ac_free(I->ctx, v->p);
  v->p = v->small;
}

const ac_array *interp_view(interp *I, ir_ref at, const char *what, size_t off, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (I->stk[off + i].kind != LK_ARRAY) {
      interp_fail(I, at, "%s%sa stencil window or the array a rec defines may only be indexed",
                  what, *what ? ": " : "");
      return NULL;
    }
  if (n == 0) {
    interp_internal(I, at, "array value without leaves");
    return NULL;
  }
  const ac_array *a = I->stk[off].v.a;
  for (size_t i = 1; i < n; i++) {
    const ac_array *b = I->stk[off + i].v.a;
    if (b->rank != a->rank || memcmp(b->extents, a->extents, a->rank * sizeof *a->extents)) {
      char sa[128], sb[128];
      interp_fmt_shape(sa, sizeof sa, a->rank, a->extents);
      interp_fmt_shape(sb, sizeof sb, b->rank, b->extents);
      interp_fail(I, at, "%s%sarrays have different shapes: %s and %s", what, *what ? ": " : "", sa,
                  sb);
      return NULL;
    }
  }
  return a;
}

static bool new_arrays_rec(interp *I, ir_ref at, ir_type t, unsigned rank, const int64_t *ext) {
  ir_typeinfo ti = ir_ty_info(I->ctx, t);
  if (ti.kind == TK_TUPLE) {
    for (uint32_t f = 0; f < ti.n; f++)
      if (!new_arrays_rec(I, at, ti.fields[f], rank, ext))
        return false;
    return true;
  }
  if (ti.kind != TK_ARRAY)
    return interp_internal(I, at, "array operation with a result that is not an array");
  ac_array *a;
  if (!interp_reserve(I, 1))
    return false;
  ac_status st = rt_array_alloc(I->ctx, ti.sc, rank, ext, &a);
  if (st == AC_ERR_RUNTIME)
    return interp_fail(I, at, "array too large");
  if (st != AC_OK)
    return interp_nomem(I, at);
  interp_leaf l = {LK_ARRAY, 0, {.a = a}};
  I->stk[I->sp++] = l;
  return true;
}

bool interp_new_arrays(interp *I, ir_ref at, ir_type t, unsigned rank, const int64_t *ext) {
  return new_arrays_rec(I, at, t, rank, ext);
}

bool interp_load(interp *I, size_t arrs, size_t n, int64_t k) {
  if (!interp_reserve(I, n))
    return false;
  for (size_t i = 0; i < n; i++) {
    const ac_array *a = I->stk[arrs + i].v.a;
    interp_leaf l = {LK_SCALAR, 0, {.s = interp_sc_load(a->type, a->data, k)}};
    I->stk[I->sp++] = l;
  }
  return true;
}

void interp_store(interp *I, size_t outs, size_t n, int64_t k, size_t src) {
  for (size_t i = 0; i < n; i++) {
    ac_array *a = I->stk[outs + i].v.a;
    interp_sc_store(a->type, a->data, k, I->stk[src + i].v.s);
  }
}

/* ---- lambdas ---- */

static bool lam_setup(interp *I, interp_lam *l, ir_ref at, ir_ref body, uint32_t expected,
                      uint32_t nparams) {
  memset(l, 0, sizeof *l);
  l->fn = at;
  l->body = body;
  l->ret = body ? INODE(I, body)->type : IR_TY_NONE;
  l->nparams = nparams;
  l->counts = l->small;
  if (!body || expected != nparams)
    return interp_internal(I, at, "function of %u parameters applied to %u arguments", expected,
                           nparams);
  if (nparams > sizeof l->small / sizeof l->small[0]) {
    l->counts = interp_scratch(I, at, nparams, sizeof *l->counts);
    if (!l->counts) {
      l->counts = l->small;
      return false;
    }
  }
  return true;
}

bool interp_lam_init(interp *I, interp_lam *l, ir_ref fn, uint32_t nparams) {
  const ir_node *n = INODE(I, fn);
  if (n->op == IR_LAM)
    return lam_setup(I, l, fn, IKID(I, fn, 0), (uint32_t)n->attr, nparams);
  if ((n->op == IR_FNREF || n->op == IR_CALL) && n->attr >= 0 && (uint64_t)n->attr < I->m->nfuncs) {
    const ir_func *f = &I->m->funcs[n->attr];
    if (f->is_kernel) { /* launched through the host function (extern.c) */
      memset(l, 0, sizeof *l);
      l->fn = fn;
      l->counts = l->small;
      l->nparams = nparams;
      l->ret = f->result;
      l->kernel = n->attr + 1;
      if (nparams <= sizeof l->small / sizeof l->small[0])
        return true;
      l->counts = interp_scratch(I, fn, nparams, sizeof *l->counts);
      if (!l->counts)
        l->counts = l->small;
      return l->counts != l->small;
    }
    if (f->is_extern) /* no body: called through libffi (extern.c) */
      return interp_extern_init(I, l, fn, (uint32_t)n->attr, nparams);
    return lam_setup(I, l, fn, f->body, f->nparams, nparams);
  }
  memset(l, 0, sizeof *l);
  l->counts = l->small;
  return interp_internal(I, fn, "expected a lambda or a function");
}

void interp_lam_free(interp *I, interp_lam *l) {
  if (l->counts != l->small)
    ac_free(I->ctx, l->counts);
  l->counts = l->small;
  ac_free(I->ctx, l->ext);
  l->ext = NULL;
}

bool interp_apply(interp *I, const interp_lam *l, size_t base) {
  if (l->ext)
    return interp_extern_apply(I, l, base);
  if (l->kernel)
    return interp_kernel_apply(I, l->fn, (uint32_t)(l->kernel - 1), base);
  size_t env0 = I->nenv, off = base;
  for (uint32_t i = 0; i < l->nparams; i++) {
    if (!interp_env_push(I, off, l->counts[i])) {
      I->nenv = env0;
      return false;
    }
    off += l->counts[i];
  }
  size_t top = I->sp;
  bool ok = off == top ? interp_eval(I, l->body)
                       : interp_internal(I, l->fn, "arguments do not match the parameters");
  I->nenv = env0;
  if (ok)
    interp_collapse(I, base, top);
  return ok;
}

/* ---- expression forms ---- */

/* Finds the leaves of r's value: a variable's are borrowed from the
 * environment (no copy, nothing to release); anything else is evaluated
 * onto the stack. */
static bool eval_ref(interp *I, ir_ref r, size_t *off, size_t *n) {
  const ir_node *nd = INODE(I, r);
  if (nd->op == IR_VAR) {
    if (nd->attr < 0 || (uint64_t)nd->attr >= I->nenv)
      return interp_internal(I, r, "unbound variable %lld", (long long)nd->attr);
    const interp_env *e = &I->env[I->nenv - 1 - (size_t)nd->attr];
    *off = e->off;
    *n = e->n;
    return true;
  }
  size_t b = I->sp;
  if (!interp_eval(I, r))
    return false;
  *off = b;
  *n = I->sp - b;
  return true;
}

static bool eval_var(interp *I, ir_ref r) {
  size_t off, n;
  return eval_ref(I, r, &off, &n) && interp_push_copy(I, off, n);
}

static bool eval_lit(interp *I, ir_ref r) {
  return push_scalar(I, interp_sc_lit(scalar_of(I, r), INODE(I, r)->lit));
}

static bool eval_proj(interp *I, ir_ref r) {
  ir_ref kid = IKID(I, r, 0);
  ir_typeinfo ti = ir_ty_info(I->ctx, INODE(I, kid)->type);
  int64_t field = INODE(I, r)->attr;
  if (ti.kind != TK_TUPLE || field < 0 || (uint64_t)field >= ti.n)
    return interp_internal(I, r, "projection of a field the value does not have");
  size_t pre = 0;
  for (int64_t f = 0; f < field; f++)
    pre += interp_ty_nleaves(I->ctx, ti.fields[f]);
  size_t cnt = interp_ty_nleaves(I->ctx, ti.fields[field]);
  size_t base = I->sp, off, n;
  if (!eval_ref(I, kid, &off, &n))
    return false;
  if (pre + cnt > n)
    return interp_internal(I, r, "tuple value with too few leaves");
  if (INODE(I, kid)->op == IR_VAR) /* borrowed: copy just the field */
    return interp_push_copy(I, off + pre, cnt);
  interp_drop(I, base + pre + cnt);
  interp_collapse(I, base, base + pre);
  return true;
}

static bool eval_let(interp *I, ir_ref r) {
  size_t base = I->sp;
  if (!interp_eval(I, IKID(I, r, 0)) || !interp_env_push(I, base, I->sp - base))
    return false;
  size_t top = I->sp;
  bool ok = interp_eval(I, IKID(I, r, 1));
  I->nenv--;
  if (ok)
    interp_collapse(I, base, top);
  return ok;
}

static bool eval_lettup(interp *I, ir_ref r) {
  size_t base = I->sp, env0 = I->nenv;
  ir_ref rhs = IKID(I, r, 0);
  if (!interp_eval(I, rhs))
    return false;
  ir_typeinfo ti = ir_ty_info(I->ctx, INODE(I, rhs)->type);
  int64_t nf = INODE(I, r)->attr;
  if (ti.kind != TK_TUPLE || nf < 0 || (uint64_t)nf != ti.n)
    return interp_internal(I, r, "destructuring a value that is not a tuple of %lld",
                           (long long)nf);
  size_t off = base;
  for (uint32_t f = 0; f < ti.n; f++) {
    size_t cnt = interp_ty_nleaves(I->ctx, ti.fields[f]);
    if (!interp_env_push(I, off, cnt)) {
      I->nenv = env0;
      return false;
    }
    off += cnt;
  }
  size_t top = I->sp;
  bool ok = interp_eval(I, IKID(I, r, 1));
  I->nenv = env0;
  if (ok)
    interp_collapse(I, base, top);
  return ok;
}

static bool eval_if(interp *I, ir_ref r) {
  size_t base = I->sp;
  if (!interp_eval(I, IKID(I, r, 0)))
    return false;
  bool c = I->stk[base].v.s.u != 0;
  I->sp = base;
  return interp_eval(I, IKID(I, r, c ? 1 : 2));
}

static bool eval_call(interp *I, ir_ref r) {
  const ir_node *n = INODE(I, r);
  if (n->attr >= 0 && (uint64_t)n->attr < I->m->nfuncs && I->m->funcs[n->attr].is_kernel)
    return interp_kernel_call(I, r);
  interp_lam l;
  if (!interp_lam_init(I, &l, r, n->nkids))
    return false;
  size_t base = I->sp;
  bool ok = true;
  for (uint32_t i = 0; i < n->nkids && ok; i++) {
    size_t b = I->sp;
    ok = interp_eval(I, IKID(I, r, i));
    l.counts[i] = I->sp - b;
  }
  ok = ok && interp_apply(I, &l, base);
  interp_lam_free(I, &l);
  return ok;
}

/* The loop shared by `loop` and the array-level `while`: the state occupies
 * the stack from base to the top; cond gets a copy of it, step consumes it
 * and leaves the next state in its place. */
bool interp_run_while(interp *I, const interp_lam *cond, const interp_lam *step, size_t base) {
  for (;;) {
    size_t top = I->sp;
    if (!interp_push_copy(I, base, top - base) || !interp_apply(I, cond, top))
      return false;
    bool go = I->stk[top].v.s.u != 0;
    I->sp = top;
    if (!go)
      return true;
    if (!interp_apply(I, step, base))
      return false;
  }
}

/* loop (x1 = e1, .., xk = ek) while cond { step }: the state stays at base;
 * cond gets a copy of it, step consumes it and leaves the next state. */
static bool eval_loop(interp *I, ir_ref r) {
  const ir_node *n = INODE(I, r);
  uint32_t k = n->nkids - 2;
  interp_lam cond, step;
  bool ok = interp_lam_init(I, &cond, IKID(I, r, k), k);
  ok = interp_lam_init(I, &step, IKID(I, r, k + 1), k) && ok;
  size_t base = I->sp;
  for (uint32_t i = 0; i < k && ok; i++) {
    size_t b = I->sp;
    ok = interp_eval(I, IKID(I, r, i));
    cond.counts[i] = step.counts[i] = I->sp - b;
  }
  ok = ok && interp_run_while(I, &cond, &step, base);
  interp_lam_free(I, &cond);
  interp_lam_free(I, &step);
  return ok;
}

static bool eval_cast(interp *I, ir_ref r) {
  ir_ref kid = IKID(I, r, 0);
  if (!interp_eval(I, kid))
    return false;
  interp_leaf *l = &I->stk[I->sp - 1];
  l->v.s = interp_sc_cast(scalar_of(I, r), scalar_of(I, kid), l->v.s);
  return true;
}

/* a[i1, .., ir] on an array (or tuple of arrays), a stencil window or the
 * array a rec is defining. */
static bool eval_index(interp *I, ir_ref r) {
  const ir_node *n = INODE(I, r);
  unsigned rank = n->nkids - 1;
  size_t base = I->sp, aoff = 0, an = 0;
  if (!eval_ref(I, IKID(I, r, 0), &aoff, &an))
    return false;
  size_t ioff = I->sp;
  interp_ints iv;
  if (!interp_ints_init(I, r, &iv, rank))
    return false;
  int64_t *idx = iv.p;
  bool ok = true;
  for (unsigned d = 0; d < rank && ok; d++)
    ok = interp_eval(I, IKID(I, r, d + 1));
  for (unsigned d = 0; d < rank && ok; d++)
    idx[d] = interp_sc_to_i64(scalar_of(I, IKID(I, r, d + 1)), I->stk[ioff + d].v.s);
  if (ok)
    I->sp = ioff;
  if (ok && an > 0 && I->stk[aoff].kind == LK_WINDOW) {
    ok = interp_window_read(I, r, aoff, an, rank, idx);
  } else if (ok && an > 0 && I->stk[aoff].kind == LK_REC) {
    ok = interp_rec_read(I, r, aoff, an, rank, idx);
  } else if (ok) {
    const ac_array *a = interp_view(I, r, "", aoff, an);
    ok = a != NULL;
    if (ok && a->rank != rank)
      ok = interp_internal(I, r, "%u indices for an array of rank %u", rank, a->rank);
    int64_t lin = 0;
    for (unsigned d = 0; d < rank && ok; d++) {
      if (idx[d] < 0 || idx[d] >= a->extents[d])
        ok = interp_fail(I, r, "index %lld out of bounds for dimension %u of extent %lld",
                         (long long)idx[d], d, (long long)a->extents[d]);
      else
        lin = lin * a->extents[d] + idx[d];
    }
    ok = ok && interp_load(I, aoff, an, lin);
  }
  interp_ints_free(I, &iv);
  if (ok)
    interp_collapse(I, base, ioff);
  return ok;
}

static bool eval_len_shape(interp *I, ir_ref r) {
  size_t base = I->sp, off, n;
  if (!eval_ref(I, IKID(I, r, 0), &off, &n))
    return false;
  const ir_node *nd = INODE(I, r);
  const ac_array *a = interp_view(I, r, ir_ops[nd->op].spelling, off, n);
  if (!a)
    return false;
  size_t top = I->sp;
  unsigned dims = nd->op == IR_LEN ? 1 : a->rank;
  if (!interp_reserve(I, dims))
    return false;
  for (unsigned d = 0; d < dims; d++) /* reserved: a stays valid */
    push_i64(I, a->extents[d]);
  interp_collapse(I, base, top);
  return true;
}

static bool eval_unary(interp *I, ir_ref r) {
  ir_ref kid = IKID(I, r, 0);
  if (!interp_eval(I, kid))
    return false;
  interp_leaf *l = &I->stk[I->sp - 1];
  l->v.s = interp_sc_unary((ir_op)INODE(I, r)->op, scalar_of(I, kid), l->v.s);
  return true;
}

static bool eval_binary(interp *I, ir_ref r) {
  ir_ref k0 = IKID(I, r, 0);
  if (!interp_eval(I, k0) || !interp_eval(I, IKID(I, r, 1)))
    return false;
  interp_leaf *l = &I->stk[I->sp - 2];
  l->v.s = interp_sc_binary((ir_op)INODE(I, r)->op, scalar_of(I, k0), l->v.s, l[1].v.s);
  I->sp--;
  return true;
}

/* && and ||: the right operand only when the left does not decide. */
static bool eval_logic(interp *I, ir_ref r) {
  size_t base = I->sp;
  if (!interp_eval(I, IKID(I, r, 0)))
    return false;
  bool left = I->stk[base].v.s.u != 0;
  if (left == (INODE(I, r)->op == IR_LOR))
    return true;
  I->sp = base;
  return interp_eval(I, IKID(I, r, 1));
}

static bool eval_fma(interp *I, ir_ref r) {
  for (uint32_t i = 0; i < 3; i++)
    if (!interp_eval(I, IKID(I, r, i)))
      return false;
  interp_leaf *l = &I->stk[I->sp - 3];
  l->v.s = interp_sc_fma(scalar_of(I, r), l[0].v.s, l[1].v.s, l[2].v.s);
  I->sp -= 2;
  return true;
}

static bool eval_node(interp *I, ir_ref r) {
  ir_op op = (ir_op)INODE(I, r)->op;
  switch (op) {
  case IR_VAR:
    return eval_var(I, r);
  case IR_LIT:
    return eval_lit(I, r);
  case IR_TUPLE:
    for (uint32_t i = 0; i < INODE(I, r)->nkids; i++)
      if (!interp_eval(I, IKID(I, r, i)))
        return false;
    return true;
  case IR_PROJ:
    return eval_proj(I, r);
  case IR_LET:
    return eval_let(I, r);
  case IR_LETTUP:
    return eval_lettup(I, r);
  case IR_IF:
    return eval_if(I, r);
  case IR_CALL:
    return eval_call(I, r);
  case IR_CAST:
    return eval_cast(I, r);
  case IR_LOOP:
    return eval_loop(I, r);
  case IR_INDEX:
    return eval_index(I, r);
  case IR_ARRLIT:
    return interp_arrlit(I, r);
  case IR_REC:
    return interp_rec(I, r);
  case IR_LOR:
  case IR_LAND:
    return eval_logic(I, r);
  case IR_FMA:
    return eval_fma(I, r);
  case IR_LEN:
  case IR_SHAPE:
    return eval_len_shape(I, r);
  case IR_GENERATE:
    return interp_generate(I, r);
  case IR_IOTA:
    return interp_iota(I, r);
  case IR_FILL:
    return interp_fill(I, r);
  case IR_MAP:
    return interp_map(I, r);
  case IR_FOLD:
    return interp_fold(I, r);
  case IR_FOLD_SEG:
    return interp_fold_seg(I, r);
  case IR_SCAN:
  case IR_SCAN_INCL:
  case IR_SCANR:
  case IR_SCANR_INCL:
    return interp_scan(I, r);
  case IR_SCAN_SEG:
  case IR_SCAN_INCL_SEG:
    return interp_scan_seg(I, r);
  case IR_GATHER:
    return interp_gather(I, r);
  case IR_BACKPERMUTE:
    return interp_backpermute(I, r);
  case IR_SCATTER:
    return interp_scatter(I, r);
  case IR_PERMUTE:
    return interp_permute(I, r);
  case IR_SLICE:
    return interp_slice(I, r);
  case IR_RESHAPE:
    return interp_reshape(I, r);
  case IR_TRANSPOSE:
    return interp_transpose(I, r);
  case IR_REVERSE:
    return interp_reverse(I, r);
  case IR_REPLICATE:
    return interp_replicate(I, r);
  case IR_STENCIL:
    return interp_stencil(I, r);
  case IR_FILTER:
    return interp_filter(I, r);
  case IR_ITERATE:
    return interp_iterate(I, r);
  case IR_WHILE:
    return interp_while(I, r);
  case IR_DELAY: /* optimisation hints: their operand's value (sized's
                  * shape is a statement about it, not evaluated) */
  case IR_TILED:
  case IR_SIZED:
    return interp_eval(I, IKID(I, r, 0));
  default:
    break;
  }
  if (op < IR_NUM_OPS) {
    switch (ir_ops[op].typing) {
    case TC_NEG:
    case TC_NOT:
    case TC_BNOT:
    case TC_NUM1:
    case TC_FLT1:
    case TC_FPRED:
      return eval_unary(I, r);
    case TC_ARITH:
    case TC_INT:
    case TC_SHIFT:
    case TC_CMP:
    case TC_ORD:
    case TC_NUM2:
    case TC_FLT2:
      return eval_binary(I, r);
    default:
      break;
    }
  }
  return interp_internal(I, r, "cannot evaluate a %s node here",
                         op < IR_NUM_OPS ? ir_ops[op].name : "?");
}

bool interp_eval(interp *I, ir_ref r) {
  if (I->depth >= INTERP_MAX_DEPTH)
    return interp_fail(I, r, "evaluation nested too deeply");
  I->depth++;
  bool ok = eval_node(I, r);
  I->depth--;
  return ok;
}

/* ---- entry point ---- */

/* Converts the result leaves at [0, sp) to datums; arrays move to them. */
static bool take_results(interp *I, ir_type t, ac_datum *results, size_t nresults) {
  ac_scalar *sc = NULL;
  if (nresults && !(sc = interp_scratch(I, 0, (int64_t)nresults, sizeof *sc)))
    return false;
  interp_ty_scalars(I->ctx, t, sc, nresults);
  bool ok = true;
  for (size_t i = 0; i < nresults && ok; i++)
    if (I->stk[i].kind != LK_SCALAR && I->stk[i].kind != LK_ARRAY)
      ok = interp_internal(I, 0, "result %zu is not a value", i);
  for (size_t i = 0; i < nresults && ok; i++) {
    interp_leaf *l = &I->stk[i];
    if (l->kind == LK_SCALAR) {
      interp_sc_to_datum(sc[i], l->v.s, &results[i]);
    } else {
      memset(&results[i], 0, sizeof results[i]);
      results[i].kind = AC_DATUM_ARRAY;
      results[i].type = l->v.a->type;
      results[i].array = l->v.a;
      l->kind = LK_SCALAR; /* the reference now belongs to the datum */
    }
  }
  ac_free(I->ctx, sc);
  if (ok)
    I->sp = 0;
  return ok;
}

ac_status interp_call(ac_module *m, uint32_t fn, const ac_datum *args, size_t nargs,
                      ac_datum *results, size_t nresults, ac_error **err) {
  interp I;
  memset(&I, 0, sizeof I);
  I.m = m;
  I.ctx = m->ctx;
  bool ok = true;
  if (fn >= m->nfuncs || !m->funcs[fn].body)
    ok = interp_internal(&I, 0, "no function %u with a body", fn);
  const ir_func *f = ok ? &m->funcs[fn] : NULL;
  interp_lam l;
  ok = ok && lam_setup(&I, &l, 0, f->body, f->nparams, f->nparams);
  size_t want = 0;
  for (uint32_t i = 0; ok && i < f->nparams; i++) {
    l.counts[i] = interp_ty_nleaves(I.ctx, ir_func_param(m, f, i));
    want += l.counts[i];
  }
  if (ok && (want != nargs || interp_ty_nleaves(I.ctx, f->result) != nresults))
    ok = interp_internal(&I, 0, "call with %zu arguments and %zu results", nargs, nresults);
  ok = ok && interp_reserve(&I, nargs);
  for (size_t i = 0; ok && i < nargs; i++) {
    interp_leaf leaf = {LK_SCALAR, 0, {.s = {0}}};
    if (args[i].kind == AC_DATUM_ARRAY) {
      leaf.kind = LK_ARRAY;
      leaf.v.a = args[i].array;
      ac_array_retain(leaf.v.a);
    } else {
      leaf.v.s = interp_sc_from_datum(&args[i]);
    }
    I.stk[I.sp++] = leaf;
  }
  ok = ok && interp_apply(&I, &l, 0);
  if (ok && I.sp != nresults)
    ok = interp_internal(&I, f->body, "the body gave %zu values for %zu results", I.sp, nresults);
  ok = ok && take_results(&I, f->result, results, nresults);
  if (f)
    interp_lam_free(&I, &l);
  interp_drop(&I, 0);
  ac_free(I.ctx, I.stk);
  ac_free(I.ctx, I.env);
  if (ok)
    return AC_OK;
  return ir_report(err, I.err, I.st);
}
