/* runtime/plan_exec.c: running a kernel plan (pl_run).
 *
 * A call allocates its state in one block: the frame (nslots words, zeroed),
 * the owner table (per word, the array whose memory a data word points
 * into, holding one reference) and per-instruction loop state (a FOR keeps
 * its counter and bound there, evaluated once at entry, so the body may
 * write the loop word without changing the iteration). The instructions are
 * a flat array whose blocks pl_finish/pl_parse linked (`match`), so control
 * flow is a program counter and jumps: no recursion and no stack.
 *
 * Memory safety does not depend on the plan being produced by lowering: a
 * plan read from text passed pl_validate (indices and leaves in range), and
 * the few things the validator cannot know are checked here against the
 * owner table: a view or a copied-out result must lie inside the array its
 * data word's owner holds, unless it is empty (a kernel never dereferences
 * an empty array, so its data pointer may be anything). The kernels
 * themselves are trusted: they come from the same compilation as the plan.
 *
 * Results are handed out without copying when the words describe a whole
 * owning array (the usual case: a fresh alloc filled by kernels, or a
 * parameter passed through); otherwise (a view, a reshaped array) the
 * described elements are copied into a fresh array. Every reference the
 * frame holds is released at the end, on success and on failure alike.
 *
 * Per launch the executor evaluates two small expressions and calls
 * rt_pool_launch; nothing is allocated. Everything mutable is in the call's
 * block, so any number of threads may run the same plan at once.
 */
#include "runtime/plan_exec_impl.h"

#include "interp/rtarray.h"

#include <stdarg.h>
#include <string.h>

static int64_t pl_eval(pl_exec *X, uint32_t e) {
  const pl_expr *x = &X->p->exprs[e];
  if (x->op == PX_CONST)
    return x->k;
  if (x->op == PX_WORD)
    return (int64_t)pl_wget(X, x->a);
  int64_t a = pl_eval(X, x->a), b = pl_eval(X, x->b);
  /* The language's i64 arithmetic (docs/language.md §6.1): wrapping, and
   * every division defined. */
  switch ((pl_xop)x->op) {
  case PX_ADD:
    return (int64_t)((uint64_t)a + (uint64_t)b);
  case PX_SUB:
    return (int64_t)((uint64_t)a - (uint64_t)b);
  case PX_MUL:
    return (int64_t)((uint64_t)a * (uint64_t)b);
  case PX_DIV:
    return b == 0 ? 0 : b == -1 ? (int64_t)(0 - (uint64_t)a) : a / b;
  case PX_REM:
    return b == 0 ? a : b == -1 ? 0 : a % b;
  case PX_EQ:
    return a == b;
  case PX_NE:
    return a != b;
  case PX_LT:
    return a < b;
  case PX_LE:
    return a <= b;
  case PX_MIN:
    return a < b ? a : b;
  case PX_MAX:
    return a > b ? a : b;
  case PX_CHUNKS:
    return X->g ? pl_gpu_chunks(X, a, b) : rt_pool_chunks(X->pool, a, b);
  case PX_CONST:
  case PX_WORD:
    break;
  }
  return 0;
}

int64_t pl_eval_expr(pl_exec *X, uint32_t e) {
  return pl_eval(X, e);
}

/* ---- errors ---- */

/* Records the call's error at site `site` (PL_AUTO: no position). */
bool pl_fail_at(pl_exec *X, ac_status st, uint32_t site, const char *fmt, ...) {
  if (X->st != AC_OK) /* the first error stands */
    return false;
  /* On a GPU the kernels queued so far may have failed already, out of the
   * host's sight: their error comes first (the interpreter's order: a map
   * whose element fails, then another map's shape check). */
  if (X->g && X->launched && st == AC_ERR_RUNTIME && !X->failing) {
    X->failing = true;
    bool ok = pl_gpu_sync(X);
    X->failing = false;
    if (!ok)
      return false;
  }
  /* the whole message: one with two shapes of a high rank is long */
  char small[256], *msg = small;
  va_list ap;
  va_start(ap, fmt);
  int len = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (len >= (int)sizeof small && (msg = ac_alloc(X->p->ctx, (size_t)len + 1)) != NULL) {
    va_start(ap, fmt);
    vsnprintf(msg, (size_t)len + 1, fmt, ap);
    va_end(ap);
  }
  const pl_site *s = site != PL_AUTO ? &X->p->sites[site] : NULL;
  X->err =
      msg ? pl_error(X->p->ctx, st, X->p->file, NULL, 0, s ? s->line : 0, s ? s->col : 0, "%s", msg)
          : NULL;
  X->st = X->err ? st : AC_ERR_NOMEM;
  if (msg != small)
    ac_free(X->p->ctx, msg);
  return false;
}

bool pl_fail_err(pl_exec *X, ac_status st, ac_error *e) {
  if (X->st == AC_OK) {
    X->err = e;
    X->st = st == AC_OK ? AC_ERR_INTERNAL : st;
  } else {
    ac_error_destroy(e);
  }
  return false;
}

/* A runtime error whose message is the site's own format with its values:
 * the k-th %lld prints vals[k] (k < n; pl_validate has checked that the
 * format takes at most RT_FAIL_VALS of them, and nothing else but %%). */
bool pl_fail_site(pl_exec *X, uint32_t site, uint32_t n, const int64_t *vals) {
  const pl_site *s = &X->p->sites[site];
  size_t len = pl_site_format(NULL, 0, s->fmt, n, vals);
  char *msg = ac_alloc(X->p->ctx, len + 1);
  if (!msg) {
    X->err = NULL;
    X->st = AC_ERR_NOMEM;
    return false;
  }
  pl_site_format(msg, len + 1, s->fmt, n, vals);
  pl_fail_at(X, AC_ERR_RUNTIME, site, "%s", msg);
  ac_free(X->p->ctx, msg);
  return false;
}

/* ---- ownership ---- */

/* Word w now points into `a` (which may be NULL): retain, then release the
 * old owner (in that order, so a == old is safe). */
static void pl_own(pl_exec *X, uint32_t w, ac_array *a) {
  ac_array_retain(a);
  if (X->g && X->owner[w] && X->owner[w] != a)
    pl_gpu_recycle(X, X->owner[w]);
  ac_array_release(X->owner[w]);
  X->owner[w] = a;
}

/* True if `bytes` bytes at address `data` lie inside array a's elements. */
static bool pl_inside(const pl_exec *X, const ac_array *a, uintptr_t data, int64_t bytes) {
  if (!a)
    return false;
  uintptr_t lo = X->g ? (uintptr_t)rt_resid_dptr(a, X->g) : (uintptr_t)a->data;
  uintptr_t have = (uintptr_t)a->size * rt_array_elsize(a);
  return data >= lo && data - lo <= have && (uintptr_t)bytes <= have - (data - lo);
}

/* ---- parameters and results ---- */

static uint64_t pl_word_of(const ac_datum *d) {
  switch (d->type) {
  case AC_BOOL:
    return d->s.b ? 1 : 0;
  /* Integers are stored sign- or zero-extended to the whole word, so an
   * integer parameter reads correctly as an int64 in plan expressions. */
  case AC_I8:
    return (uint64_t)(int64_t)(int8_t)d->s.i;
  case AC_I16:
    return (uint64_t)(int64_t)(int16_t)d->s.i;
  case AC_I32:
    return (uint64_t)(int64_t)(int32_t)d->s.i;
  case AC_I64:
    return (uint64_t)d->s.i;
  case AC_U8:
    return (uint8_t)d->s.u;
  case AC_U16:
    return (uint16_t)d->s.u;
  case AC_U32:
    return (uint32_t)d->s.u;
  case AC_U64:
    return d->s.u;
  case AC_F32: {
    float f = (float)d->s.f;
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    return bits;
  }
  case AC_F64: {
    uint64_t bits;
    memcpy(&bits, &d->s.f, sizeof bits);
    return bits;
  }
  }
  return 0;
}

/* The scalar in the low bytes of w (rt.h: little-endian words). */
static void pl_datum_of(ac_scalar sc, uint64_t w, ac_datum *d) {
  memset(d, 0, sizeof *d);
  d->kind = AC_DATUM_SCALAR;
  d->type = sc;
  switch (sc) {
  case AC_BOOL:
    d->s.b = (uint8_t)w != 0;
    break;
  case AC_I8:
    d->s.i = (int8_t)(uint8_t)w;
    break;
  case AC_I16:
    d->s.i = (int16_t)(uint16_t)w;
    break;
  case AC_I32:
    d->s.i = (int32_t)(uint32_t)w;
    break;
  case AC_I64:
    d->s.i = (int64_t)w;
    break;
  case AC_U8:
    d->s.u = (uint8_t)w;
    break;
  case AC_U16:
    d->s.u = (uint16_t)w;
    break;
  case AC_U32:
    d->s.u = (uint32_t)w;
    break;
  case AC_U64:
    d->s.u = w;
    break;
  case AC_F32: {
    uint32_t bits = (uint32_t)w;
    float f;
    memcpy(&f, &bits, sizeof f);
    d->s.f = f;
    break;
  }
  case AC_F64:
    memcpy(&d->s.f, &w, sizeof w);
    break;
  }
}

static bool pl_bind_params(pl_exec *X, const ac_datum *args) {
  const pl_plan *p = X->p;
  for (uint32_t i = 0; i < p->nparams; i++) {
    const pl_leaf *l = &p->params[i];
    const ac_datum *d = &args[i];
    bool scalar = d->kind == AC_DATUM_SCALAR;
    if (d->type != (ac_scalar)l->sc || scalar != (l->rank == 0) ||
        (!scalar && (!d->array || d->array->type != (ac_scalar)l->sc ||
                     d->array->rank != l->rank)))
      return pl_fail_at(X, AC_ERR_INTERNAL, PL_AUTO,
                        "plan '%s': argument %u does not match its parameter", p->name, i);
    if (scalar) {
      pl_wset(X, l->slot, pl_word_of(d));
      continue;
    }
    uint64_t data;
    if (X->g) { /* the device copy, made now if there is none */
      rt_dptr dp;
      ac_array *holder;
      ac_error *e = NULL;
      ac_status st = rt_resid_device(d->array, X->g, &dp, &holder, &e);
      if (st != AC_OK)
        return pl_fail_err(X, st, e);
      data = dp;
      ac_array_release(X->owner[l->slot]);
      X->owner[l->slot] = holder; /* holder came with a reference */
    } else {
      ac_error *e = NULL;
      ac_status st = rt_resid_host(d->array, &e); /* made on a GPU: fetch it */
      if (st != AC_OK)
        return pl_fail_err(X, st, e);
      data = (uint64_t)(uintptr_t)d->array->data;
      pl_own(X, l->slot, d->array);
    }
    pl_wset(X, l->slot, data);
    for (uint32_t r = 0; r < l->rank; r++)
      pl_wset(X, l->slot + 1 + r, (uint64_t)d->array->extents[r]);
  }
  return true;
}

/* Result leaf i into *d: the owning array itself, or a copy of what the
 * words describe. */
static bool pl_take_result(pl_exec *X, uint32_t i, ac_datum *d) {
  const pl_plan *p = X->p;
  const pl_leaf *l = &p->results[i];
  ac_scalar sc = (ac_scalar)l->sc;
  if (l->rank == 0) {
    pl_datum_of(sc, pl_wget(X, l->slot), d);
    return true;
  }
  int64_t ext[PL_MAX_RANK], count;
  for (uint32_t r = 0; r < l->rank; r++)
    ext[r] = (int64_t)pl_wget(X, l->slot + 1 + r);
  for (uint32_t r = 0; r < l->rank; r++)
    if (ext[r] < 0)
      return pl_fail_at(X, AC_ERR_INTERNAL, PL_AUTO, "plan '%s': result %u has extent %lld",
                        p->name, i, (long long)ext[r]);
  size_t elsize = ac_scalar_size(sc);
  if (!rt_array_count(l->rank, ext, elsize, &count))
    return pl_fail_at(X, AC_ERR_INTERNAL, PL_AUTO, "plan '%s': result %u is too large", p->name,
                      i);
  uintptr_t data = (uintptr_t)pl_wget(X, l->slot);
  ac_array *own = X->owner[l->slot];
  ac_array *a = NULL;
  uintptr_t own_base = !own ? 0 : X->g ? (uintptr_t)rt_resid_dptr(own, X->g) : (uintptr_t)own->data;
  if (own && own_base == data && own->type == sc && own->rank == l->rank &&
      memcmp(own->extents, ext, l->rank * sizeof *ext) == 0) {
    ac_array_retain(own);
    a = own;
  } else if (count > 0 && !pl_inside(X, own, data, count * (int64_t)elsize)) {
    return pl_fail_at(X, AC_ERR_INTERNAL, PL_AUTO,
                      "plan '%s': result %u does not lie in an array the plan holds", p->name, i);
  } else if (X->g) {
    if (!pl_gpu_copy_out(X, sc, l->rank, ext, (size_t)count * elsize, data, &a))
      return false;
  } else {
    ac_status st = rt_array_alloc(p->ctx, sc, l->rank, ext, &a);
    if (st != AC_OK)
      return pl_fail_at(X, st, PL_AUTO, "plan '%s': cannot allocate result %u", p->name, i);
    if (count > 0)
      memcpy(a->data, (const void *)data, (size_t)count * elsize);
  }
  memset(d, 0, sizeof *d);
  d->kind = AC_DATUM_ARRAY;
  d->type = sc;
  d->array = a;
  return true;
}

/* ---- instructions ---- */

/* Evaluates the rank extents of an ALLOC/VIEW. */
static void pl_eval_extents(pl_exec *X, const pl_inst *in, int64_t *ext) {
  for (uint32_t r = 0; r < in->rank; r++)
    ext[r] = pl_eval(X, X->p->args[in->e + r]);
}

static void pl_set_leaf(pl_exec *X, uint32_t slot, uintptr_t data, uint32_t rank,
                        const int64_t *ext) {
  pl_wset(X, slot, (uint64_t)data);
  for (uint32_t r = 0; r < rank; r++)
    pl_wset(X, slot + 1 + r, (uint64_t)ext[r]);
}

/* `keep`: the word holds an array (made by a `try` alloc) of extents ext. */
static bool pl_alloc_kept(pl_exec *X, const pl_inst *in, const int64_t *ext) {
  if (!X->owner[in->a])
    return false;
  for (uint32_t r = 0; r < in->rank; r++)
    if ((int64_t)pl_wget(X, in->a + 1 + r) != ext[r])
      return false;
  return true;
}

static bool pl_do_alloc(pl_exec *X, const pl_inst *in) {
  int64_t ext[PL_MAX_RANK];
  bool quiet = (in->flags & PL_ALLOC_TRY) != 0; /* failing is not an error */
  pl_eval_extents(X, in, ext);
  if ((in->flags & PL_ALLOC_KEEP) && pl_alloc_kept(X, in, ext))
    return true;
  for (uint32_t r = 0; r < in->rank; r++)
    if (ext[r] < 0)
      return quiet || pl_fail_at(X, AC_ERR_RUNTIME, in->k, "negative extent %lld", (long long)ext[r]);
  ac_array *a;
  uintptr_t data;
  if (X->g) {
    rt_dptr d;
    if (!pl_gpu_alloc(X, in, ext, &a, &d, quiet))
      return quiet && X->st == AC_OK;
    data = (uintptr_t)d;
  } else {
    ac_status st = rt_array_alloc(X->p->ctx, (ac_scalar)in->sc, in->rank, ext, &a);
    if (st != AC_OK && quiet)
      return true;
    if (st == AC_ERR_RUNTIME)
      return pl_fail_at(X, st, in->k, "array too large");
    if (st != AC_OK) /* at the operation's position, as the interpreter reports it */
      return pl_fail_at(X, st, in->k, "out of memory");
    data = (uintptr_t)a->data;
  }
  pl_own(X, in->a, a);
  ac_array_release(a); /* the word holds the one reference */
  pl_set_leaf(X, in->a, data, in->rank, ext);
  return true;
}

static bool pl_do_view(pl_exec *X, const pl_inst *in) {
  const char *name = X->p->name;
  int64_t ext[PL_MAX_RANK], count;
  pl_eval_extents(X, in, ext);
  for (uint32_t r = 0; r < in->rank; r++)
    if (ext[r] < 0)
      return pl_fail_at(X, AC_ERR_INTERNAL, PL_AUTO, "plan '%s': view with extent %lld", name,
                        (long long)ext[r]);
  size_t elsize = ac_scalar_size((ac_scalar)in->sc);
  uintptr_t data = (uintptr_t)pl_wget(X, in->b);
  ac_array *own = X->owner[in->b];
  if (!rt_array_count(in->rank, ext, elsize, &count) ||
      (count > 0 && !pl_inside(X, own, data, count * (int64_t)elsize)))
    return pl_fail_at(X, AC_ERR_INTERNAL, PL_AUTO,
                      "plan '%s': view of %%%u is larger than its array", name, in->b);
  pl_own(X, in->a, own);
  pl_set_leaf(X, in->a, data, in->rank, ext);
  return true;
}

static void pl_do_assign(pl_exec *X, const pl_inst *in) {
  if (in->a == in->b)
    return;
  if (in->rank == 0) {
    pl_wset(X, in->a, pl_wget(X, in->b));
    return;
  }
  /* leaves may overlap: copy through a buffer in the right direction */
  uint32_t n = 1 + in->rank;
  if (in->a < in->b)
    for (uint32_t r = 0; r < n; r++)
      pl_wset(X, in->a + r, pl_wget(X, in->b + r));
  else
    for (uint32_t r = n; r-- > 0;)
      pl_wset(X, in->a + r, pl_wget(X, in->b + r));
  pl_own(X, in->a, X->owner[in->b]);
}

static bool pl_do_launch(pl_exec *X, const pl_inst *in, rt_kernel_fn const *kernels) {
  if (X->g)
    return pl_gpu_launch(X, in);
  const pl_kernel *k = &X->p->kernels[in->k];
  rt_kernel_fn fn = kernels ? kernels[in->k] : NULL;
  if (k->ptx) /* pl_validate keeps them out of CPU plans; a second line of defence */
    return pl_fail_at(X, AC_ERR_INTERNAL, PL_AUTO,
                      "plan '%s': kernel k%u (%s) is an extern PTX kernel, which only a GPU plan "
                      "can launch",
                      X->p->name, in->k, k->symbol);
  if (!fn)
    return pl_fail_at(X, AC_ERR_INTERNAL, PL_AUTO, "plan '%s': kernel k%u (%s) is not compiled",
                      X->p->name, in->k, k->symbol);
  int64_t n = pl_eval(X, in->e);
  int64_t chunks = in->e2 == PL_AUTO ? rt_pool_chunks(X->pool, n, k->grain) : pl_eval(X, in->e2);
  rt_pool_launch(X->pool, &X->call, X->frame, fn, n, chunks);
  if (!atomic_load_explicit(&X->call.failed, memory_order_acquire))
    return true;
  int32_t site = X->call.site;
  if (site < 0 || (uint32_t)site >= X->p->nsites)
    return pl_fail_at(X, AC_ERR_INTERNAL, PL_AUTO, "plan '%s': kernel k%u failed at site %d",
                      X->p->name, in->k, (int)site);
  if (X->call.nomem) /* the interpreter's report of a failed allocation */
    return pl_fail_at(X, AC_ERR_NOMEM, (uint32_t)site, "out of memory");
  int64_t vals[RT_FAIL_VALS];
  rt_call_values(&X->call, vals);
  return pl_fail_site(X, (uint32_t)site, RT_FAIL_VALS, vals);
}

static bool pl_bool(pl_exec *X, uint32_t w) {
  return (uint8_t)pl_wget(X, w) != 0; /* a bool is byte 0 of its word */
}

static bool pl_exec_body(pl_exec *X, rt_kernel_fn const *kernels) {
  const pl_plan *p = X->p;
  uint32_t pc = 0;
  while (pc < p->ninsts) {
    if (X->st != AC_OK) /* a word fetched from the device reported a failure */
      return false;
    const pl_inst *in = &p->insts[pc];
    switch ((pl_iop)in->op) {
    case PI_SET:
      pl_wset(X, in->a, (uint64_t)pl_eval(X, in->e));
      break;
    case PI_ALLOC:
      if (!pl_do_alloc(X, in))
        return false;
      break;
    case PI_VIEW:
      if (!pl_do_view(X, in))
        return false;
      break;
    case PI_ASSIGN:
      pl_do_assign(X, in);
      break;
    case PI_FREE:
      pl_own(X, in->a, NULL);
      break;
    case PI_LAUNCH:
      if (in->k < p->nkernels) /* a counter, not the plan: `const` does not cover it */
        __atomic_fetch_add(&((pl_kernel *)&p->kernels[in->k])->launches, 1, __ATOMIC_RELAXED);
      if (!pl_do_launch(X, in, kernels))
        return false;
      break;
    case PI_CHECK:
      if (pl_eval(X, in->e) == 0) {
        int64_t vals[RT_FAIL_VALS];
        uint32_t n = in->e2 == PL_AUTO ? 0 : in->rank;
        for (uint32_t v = 0; v < n && v < RT_FAIL_VALS; v++)
          vals[v] = pl_eval(X, p->args[in->e2 + v]);
        return pl_fail_site(X, in->k, n < RT_FAIL_VALS ? n : RT_FAIL_VALS, vals);
      }
      break;
    case PI_FOR: {
      int64_t lo = pl_eval(X, in->e), hi = pl_eval(X, in->e2);
      if (lo >= hi) {
        pc = in->match + 1;
        continue;
      }
      X->loops[pc] = (pl_loop){lo, hi, X->g && pl_gpu_batchable(p, pc)};
      pl_wset(X, in->a, (uint64_t)lo);
      if (X->loops[pc].batch)
        pl_gpu_batch_begin(X);
      break;
    }
    case PI_WHILE:
      break;
    case PI_BREAK_UNLESS:
      if (!pl_bool(X, in->a)) {
        pc = in->match + 1;
        continue;
      }
      break;
    case PI_IF:
      if (!pl_bool(X, in->a)) {
        pc = in->match + 1; /* into the else block, or past the end */
        continue;
      }
      break;
    case PI_ELSE:
      pc = in->match + 1; /* the then block is done */
      continue;
    case PI_END: {
      uint32_t o = in->match;
      const pl_inst *open = &p->insts[o];
      if (open->op == PI_WHILE) {
        pc = o + 1;
        continue;
      }
      if (open->op == PI_FOR && X->loops[o].batch && !pl_gpu_batch_end(X))
        return false;
      if (open->op == PI_FOR && X->loops[o].i + 1 < X->loops[o].hi) {
        pl_wset(X, open->a, (uint64_t)++X->loops[o].i);
        if (X->loops[o].batch)
          pl_gpu_batch_begin(X);
        pc = o + 1;
        continue;
      }
      break;
    }
    }
    pc++;
  }
  return true;
}

/* Runs p once; on a GPU, *tmp_given and *tmp_need report the call's
 * temporary memory (plan_exec_impl.h). */
static ac_status pl_run_on(const pl_plan *p, rt_pool *pool, rt_gpu *g, rt_kernel_fn const *kernels,
                           rt_gkernel *const *gkernels, rt_gtmp *tmp, const ac_datum *args,
                           size_t nargs, ac_datum *results, size_t nresults, ac_error **err,
                           int64_t *tmp_given, int64_t *tmp_need) {
  if (err)
    *err = NULL;
  if (results && nresults)
    memset(results, 0, nresults * sizeof *results);
  pl_exec X;
  memset(&X, 0, sizeof X);
  X.p = p;
  X.pool = pool;
  X.g = g;
  X.gk = gkernels;
  X.tmp = tmp;
  X.call.ctx = p->ctx;
  atomic_init(&X.call.failed, 0);
  if (!p->finished || nargs != p->nparams || nresults != p->nresults ||
      (nargs && !args) || (nresults && !results) || p->gpu != (g != NULL)) {
    pl_fail_at(&X, AC_ERR_INTERNAL, PL_AUTO,
               !p->finished          ? "plan '%s' was not finished"
               : p->gpu != (g != NULL) ? "plan '%s' run on the wrong kind of device"
                                     : "plan '%s' called with wrong arity",
               p->name);
    return ir_report(err, X.err, X.st);
  }
  size_t bytes = (size_t)p->nslots * (sizeof *X.frame + sizeof *X.owner + (g ? 1 : 0)) +
                 (size_t)p->ninsts * sizeof *X.loops;
  void *block = ac_alloc(p->ctx, bytes);
  if (!block)
    return ir_report(err, NULL, AC_ERR_NOMEM);
  X.loops = block;
  X.frame = (uint64_t *)(void *)(X.loops + p->ninsts);
  X.owner = (ac_array **)(void *)(X.frame + p->nslots);
  memset(X.frame, 0, (size_t)p->nslots * (sizeof *X.frame + sizeof *X.owner + (g ? 1 : 0)));
  if (g)
    X.wstate = (uint8_t *)(void *)(X.owner + p->nslots);

  bool ok = (!g || pl_gpu_begin(&X)) && pl_bind_params(&X, args) && pl_exec_body(&X, kernels) &&
            (!g || pl_gpu_sync(&X));
  uint32_t taken = 0;
  for (; ok && taken < p->nresults; taken++)
    ok = pl_take_result(&X, taken, &results[taken]);
  if (!ok)
    for (uint32_t i = 0; i < taken; i++)
      ac_datum_release(&results[i]);
  for (uint32_t w = 0; w < p->nslots; w++)
    ac_array_release(X.owner[w]);
  if (g)
    pl_gpu_end(&X);
  ac_free(p->ctx, block);
  if (tmp_given) {
    *tmp_given = X.tmp_given;
    *tmp_need = X.tmp_need;
  }
  if (ok)
    return AC_OK;
  if (results && nresults)
    memset(results, 0, nresults * sizeof *results);
  return ir_report(err, X.err, X.st);
}

ac_status pl_run(const pl_plan *p, rt_pool *pool, rt_kernel_fn const *kernels,
                 const ac_datum *args, size_t nargs, ac_datum *results, size_t nresults,
                 ac_error **err) {
  return pl_run_on(p, pool, NULL, kernels, NULL, NULL, args, nargs, results, nresults, err, NULL,
                   NULL);
}

ac_status pl_run_gpu(const pl_plan *p, rt_gpu *g, rt_gkernel *const *kernels,
                     const ac_datum *args, size_t nargs, ac_datum *results, size_t nresults,
                     ac_error **err) {
  return pl_run_gpu_tmp(p, g, kernels, NULL, args, nargs, results, nresults, err);
}

/* Runs of a call that ran out of temporary memory, at most (each grows
 * the memory per thread at least twofold, so 40 runs pass any size a
 * device could hold). */
#define PL_TMP_RUNS 40

ac_status pl_run_gpu_tmp(const pl_plan *p, rt_gpu *g, rt_gkernel *const *kernels, rt_gtmp *tmp,
                         const ac_datum *args, size_t nargs, ac_datum *results, size_t nresults,
                         ac_error **err) {
  if (err)
    *err = NULL;
  if (!g)
    return AC_ERR_INVALID;
  rt_gtmp mine;
  atomic_init(&mine.need, 0);
  atomic_init(&mine.site, 0);
  if (!tmp)
    tmp = &mine;
  for (int run = 1;; run++) {
    ac_error *e = NULL;
    int64_t given = 0, need = 0;
    ac_status st = pl_run_on(p, NULL, g, NULL, kernels, tmp, args, nargs, results, nresults, &e,
                             &given, &need);
    /* the next run gets what the threads asked for, at least twice what
     * they had (so runs are few), rounded to 256 bytes */
    bool short_of_tmp = st != AC_OK && need > given;
    if (short_of_tmp && need < 2 * given)
      need = 2 * given;
    if ((given > 0 || need > 0) && need < INT64_MAX - 512) {
      need = (need + 255) & ~(int64_t)255;
      int64_t old = atomic_load(&tmp->need);
      while (old < need + 1 && !atomic_compare_exchange_weak(&tmp->need, &old, need + 1)) {
      }
    }
    if (!short_of_tmp || run == PL_TMP_RUNS)
      return ir_report(err, e, st);
    ac_error_destroy(e);
  }
}
