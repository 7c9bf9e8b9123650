/* runtime/function.c: calling functions, and what every function answers.
 *
 * The part of ac_function that needs no compiler (runtime/function.h):
 * backend names, the flattened signature's queries, the argument checks
 * and the call itself, for functions the compiler made (lib/api/function.c)
 * and for those the runtime library loaded ahead of time
 * (runtime/library.c) alike.
 *
 * ac_function_call checks every argument leaf (kind, scalar type, rank,
 * and that an array datum's type is its array's) against the signature, so the backends may trust
 * their inputs, and then runs the plan (pl_run on the pool, pl_run_gpu on the device) or, for a
 * function without a plan, the maker's call hook (the interpreter). Runtime
 * errors of a plan carry only a position; the maker's relocate hook may
 * rebuild them against the source so that their text shows the source line
 * and caret exactly as the interpreter's do.
 *
 * Thread safety: a call never modifies the function, so several threads may
 * call one function at once (pl_run is safe on one plan from several
 * threads, array reference counts are atomic), provided the context's
 * allocator hook is thread-safe (the default one is). Creating and
 * destroying functions is not synchronised with calls.
 */
#include "runtime/function.h"

#include "interp/rtarray.h"
#include "ir.h"

#include <stdio.h>
#include <string.h>

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

ac_status rt_fail(ac_context *ctx, ac_error **err, ac_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ac_error *e = ir_verror(ctx, st, NULL, (ir_loc){0, 0}, fmt, ap);
  va_end(ap);
  return ir_report(err, e, e ? st : AC_ERR_NOMEM);
}

/* ---- making and destroying ---- */

ac_function *rt_function_alloc(ac_context *ctx, size_t nargs, size_t nres) {
  ac_function *f = ac_alloc(ctx, sizeof *f);
  if (!f)
    return NULL;
  memset(f, 0, sizeof *f);
  atomic_init(&f->fnptr, NULL);
  f->ctx = ctx;
  f->backend = AC_BACKEND_INTERP;
  f->args = ac_alloc(ctx, (nargs ? nargs : 1) * sizeof *f->args);
  f->res = ac_alloc(ctx, (nres ? nres : 1) * sizeof *f->res);
  if (!f->args || !f->res) {
    ac_free(ctx, f->args);
    ac_free(ctx, f->res);
    ac_free(ctx, f);
    return NULL;
  }
  memset(f->args, 0, (nargs ? nargs : 1) * sizeof *f->args);
  memset(f->res, 0, (nres ? nres : 1) * sizeof *f->res);
  f->nargs = nargs;
  f->nres = nres;
  return f;
}

static void free_leaves(ac_context *ctx, rt_leaf *l, size_t n) {
  for (size_t i = 0; l && i < n; i++)
    ac_free(ctx, l[i].name);
  ac_free(ctx, l);
}

void rt_params_free(ac_context *ctx, rt_param *p, size_t n) {
  for (size_t i = 0; p && i < n; i++) {
    ac_free(ctx, p[i].name);
    ac_free(ctx, p[i].type);
  }
  ac_free(ctx, p);
}

void ac_function_destroy(ac_function *f) {
  if (!f)
    return;
  rt_fnptr_free(f->ctx, atomic_load(&f->fnptr));
  if (f->hooks && f->hooks->release)
    f->hooks->release(f);
  free_leaves(f->ctx, f->args, f->nargs);
  free_leaves(f->ctx, f->res, f->nres);
  rt_params_free(f->ctx, f->params, f->nparams);
  ac_free(f->ctx, f->result_type);
  ac_free(f->ctx, f->name);
  ac_free(f->ctx, f);
}

/* ---- queries ---- */

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
  return f->plan ? f->plan->nkernels : 0;
}

const char *ac_function_kernel_name(const ac_function *f, size_t kernel) {
  return f->plan && kernel < f->plan->nkernels ? f->plan->kernels[kernel].symbol : NULL;
}

const char *ac_function_kernel_kind(const ac_function *f, size_t kernel) {
  return f->plan && kernel < f->plan->nkernels ? f->plan->kernels[kernel].kind : NULL;
}

uint64_t ac_function_kernel_launches(const ac_function *f, size_t kernel) {
  if (!f->plan || kernel >= f->plan->nkernels)
    return 0;
  return __atomic_load_n(&f->plan->kernels[kernel].launches, __ATOMIC_RELAXED);
}

void ac_function_arg_info(const ac_function *f, size_t i, ac_scalar *type, unsigned *rank) {
  if (i >= f->nargs)
    return;
  if (type)
    *type = f->args[i].type;
  if (rank)
    *rank = f->args[i].rank;
}

void ac_function_result_info(const ac_function *f, size_t i, ac_scalar *type,
                             unsigned *rank) {
  if (i >= f->nres)
    return;
  if (type)
    *type = f->res[i].type;
  if (rank)
    *rank = f->res[i].rank;
}

/* ---- the signature (binding generators) ---- */

const char *ac_function_name(const ac_function *f) {
  return f->name;
}

size_t ac_function_num_params(const ac_function *f) {
  return f->nparams;
}

const char *ac_function_param_name(const ac_function *f, size_t p) {
  return p < f->nparams ? f->params[p].name : NULL;
}

const char *ac_function_param_type(const ac_function *f, size_t p) {
  return p < f->nparams ? f->params[p].type : NULL;
}

void ac_function_param_leaves(const ac_function *f, size_t p, size_t *first, size_t *count) {
  if (p >= f->nparams)
    return;
  if (first)
    *first = f->params[p].first;
  if (count)
    *count = f->params[p].nleaves;
}

const char *ac_function_arg_name(const ac_function *f, size_t i) {
  return i < f->nargs ? f->args[i].name : NULL;
}

const char *ac_function_result_type(const ac_function *f) {
  return f->result_type;
}

const char *ac_function_result_name(const ac_function *f, size_t i) {
  return i < f->nres ? f->res[i].name : NULL;
}

ac_status ac_function_print_plan(const ac_function *f, char **out, ac_error **err) {
  if (err)
    *err = NULL;
  if (!f || !out)
    return f ? rt_fail(f->ctx, err, AC_ERR_INVALID, "ac_function_print_plan: out is NULL")
             : AC_ERR_INVALID;
  *out = NULL;
  if (!f->plan)
    return rt_fail(f->ctx, err, AC_ERR_INVALID,
                   "function '%s' runs on the %s backend, which has no kernel plan", f->name,
                   ac_backend_name(f->backend));
  return pl_print(f->plan, out, err);
}

ac_status ac_function_print_llvm(const ac_function *f, char **out, ac_error **err) {
  if (err)
    *err = NULL;
  if (!f || !out)
    return f ? rt_fail(f->ctx, err, AC_ERR_INVALID, "ac_function_print_llvm: out is NULL")
             : AC_ERR_INVALID;
  *out = NULL;
  if (!f->plan)
    return rt_fail(f->ctx, err, AC_ERR_INVALID,
                   "function '%s' runs on the %s backend, which generates no LLVM IR", f->name,
                   ac_backend_name(f->backend));
  if (!f->hooks || !f->hooks->print_llvm)
    return rt_fail(f->ctx, err, AC_ERR_UNSUPPORTED,
                   "function '%s' was compiled ahead of time: its LLVM IR is not kept "
                   "(arrayc --emit=llvm prints it)",
                   f->name);
  return f->hooks->print_llvm(f, out, err);
}

/* ---- calls ---- */

void rt_leaf_spell(char *buf, size_t size, ac_scalar type, unsigned rank) {
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
    const rt_leaf *l = &f->args[i];
    const ac_datum *d = &args[i];
    char want[64], got[64];
    rt_leaf_spell(want, sizeof want, l->type, l->rank);
    if (d->kind == AC_DATUM_ARRAY && !d->array)
      return rt_fail(f->ctx, err, AC_ERR_INVALID,
                     "argument %zu (%s): expected %s, got a NULL array", i + 1, l->name, want);
    if (d->kind == AC_DATUM_ARRAY)
      rt_leaf_spell(got, sizeof got, d->array->type, d->array->rank);
    else if (d->kind == AC_DATUM_SCALAR)
      rt_leaf_spell(got, sizeof got, d->type, 0);
    else
      snprintf(got, sizeof got, "an invalid datum kind %d", (int)d->kind);
    if (strcmp(want, got) != 0)
      return rt_fail(f->ctx, err, AC_ERR_INVALID, "argument %zu (%s): expected %s, got %s",
                     i + 1, l->name, want, got);
    /* the datum's own type must say what its array holds: every backend
     * refuses it here, before anything runs */
    if (d->kind == AC_DATUM_ARRAY && d->type != d->array->type) {
      rt_leaf_spell(got, sizeof got, d->type, 0);
      return rt_fail(f->ctx, err, AC_ERR_INVALID,
                     "argument %zu (%s): the datum's type %s is not its array's element type %s",
                     i + 1, l->name, got, ac_scalar_name(d->array->type));
    }
  }
  return AC_OK;
}

ac_status ac_function_call(ac_function *f, const ac_datum *args, size_t nargs,
                           ac_datum *results, size_t nresults, ac_error **err) {
  if (err)
    *err = NULL;
  if (!f)
    return AC_ERR_INVALID;
  if (nargs != f->nargs)
    return rt_fail(f->ctx, err, AC_ERR_INVALID, "expected %zu arguments, got %zu", f->nargs,
                   nargs);
  if (nresults != f->nres)
    return rt_fail(f->ctx, err, AC_ERR_INVALID, "expected room for %zu results, got %zu",
                   f->nres, nresults);
  if ((nargs && !args) || (nresults && !results))
    return rt_fail(f->ctx, err, AC_ERR_INVALID, "arguments or results are NULL");
  ac_status st = check_args(f, args, err);
  if (st != AC_OK)
    return st;
  bool gpu = f->backend == AC_BACKEND_GPU || f->backend == AC_BACKEND_SIMT_EMU;
  for (size_t i = 0; !gpu && i < nargs; i++) /* arrays a GPU call made: fetch them */
    if (args[i].kind == AC_DATUM_ARRAY && (st = rt_resid_host(args[i].array, err)) != AC_OK)
      return st;
  if (!f->plan && (!f->hooks || !f->hooks->call))
    return rt_fail(f->ctx, err, AC_ERR_INTERNAL, "function '%s' has no code", f->name);
  /* The executors write results as they go (and clear them when they
   * fail); the caller's are written only when the call succeeds, so a
   * failed call leaves them untouched (runtime.h). */
  enum { FN_SMALL = 8 };
  ac_datum small[FN_SMALL];
  ac_datum *out = nresults <= FN_SMALL ? small : ac_alloc(f->ctx, nresults * sizeof *out);
  if (!out)
    return ir_report(err, NULL, AC_ERR_NOMEM);
  ac_error *e = NULL;
  if (!f->plan)
    st = f->hooks->call(f, args, nargs, out, nresults, &e);
  else if (gpu)
    st = pl_run_gpu_tmp(f->plan, f->gpu, f->gkernels, &f->gtmp, args, nargs, out, nresults, &e);
  else
    st = pl_run(f->plan, f->pool, f->kernels, args, nargs, out, nresults, &e);
  if (st == AC_OK && nresults)
    memcpy(results, out, nresults * sizeof *out);
  if (out != small)
    ac_free(f->ctx, out);
  if (st != AC_OK && f->plan && e && (e->line || e->file) && f->hooks && f->hooks->relocate) {
    ac_error *here = f->hooks->relocate(f, e);
    if (here) {
      ac_error_destroy(e);
      e = here;
    }
  }
  return ir_report(err, e, st);
}

void ac_datum_release(ac_datum *d) {
  if (d && d->kind == AC_DATUM_ARRAY && d->array) {
    ac_array_release(d->array);
    d->array = NULL;
  }
}
