/* dist/call.c: distributed functions and their calls.
 *
 * A distributed function is the local backend's compiled function plus the
 * strategy strategy.c decided:
 *   local:  each rank calls the function on its blocks (scalars and
 *           replicated arrays as they are); the array results are the
 *           blocks of results partitioned like the arguments. No array
 *           data moves.
 *   gather: every distributed argument is allgathered, every rank calls
 *           the function on the full arrays, scalar results are rank 0's
 *           (broadcast, so that they are the same everywhere however the
 *           backend computed them) and each rank keeps its block (the
 *           partition rule's) of every array result.
 * Every call checks its arguments, runs, and agrees on the outcome
 * (dist_agree), so a run-time error on one rank's block reaches every rank.
 */
#include "dist_impl.h"

#include <stdlib.h>
#include <string.h>

struct ac_dist_function {
  ac_dist_runtime *rt;
  ac_function *fn;
  ac_dist_strategy strategy;
  bool *mapped; /* per leaf: a parameter the local strategy takes distributed */
  size_t nargs, nres;
  dist_plan *plan; /* the staged strategy's (also a local function's other calls) */
};

void ac_dist_datum_release(ac_dist_datum *d) {
  if (!d)
    return;
  ac_datum_release(&d->local);
  ac_dist_array_destroy(d->dist);
  d->dist = NULL;
}

ac_status ac_dist_function_create(ac_dist_runtime *rt, ac_module *m, const char *name,
                                  ac_dist_function **out, ac_error **err) {
  ac_error *e = NULL;
  if (err)
    *err = NULL;
  *out = NULL;
  ac_function *fn = NULL;
  /* the strategy: local by the rule, else staged when the plan distributes
   * some step, else gather; a staged function's steps are compiled as
   * they are first run, so its own function is only its signature (the
   * interpreter's, which compiles nothing) */
  int32_t idx = name ? ir_func_find(m, ir_sym_intern(m->ctx, name, strlen(name))) : -1;
  bool staged = idx >= 0 && !m->funcs[idx].is_extern && m->funcs[idx].body &&
                dist_plan_distributes(m, (uint32_t)idx);
  /* the rule takes the parameters' leaves; it only accepts scalar and
   * array parameters, one leaf each, so when it holds mapped[] has an entry
   * per leaf (local_call reads it only then) */
  size_t np = idx >= 0 ? m->funcs[idx].nparams : 0;
  bool *mapped = ac_alloc(rt->ctx, np ? np : 1);
  bool local = idx >= 0 && mapped && dist_local_rule(m, name, mapped, np);
  ac_status st = !mapped            ? dist_fail(rt, &e, AC_ERR_NOMEM, "out of memory")
                 : staged && !local ? api_function_signature(m, name, &fn, &e)
                                    : ac_runtime_compile(rt->local, m, name, &fn, &e);
  ac_dist_function *f = NULL;
  if (st == AC_OK) {
    f = ac_alloc(rt->ctx, sizeof *f);
    dist_plan *plan = local || staged ? dist_plan_create(rt, m, (uint32_t)idx) : NULL;
    if (!f || ((local || staged) && !plan)) {
      ac_free(rt->ctx, f);
      dist_plan_destroy(plan);
      f = NULL;
      st = dist_fail(rt, &e, AC_ERR_NOMEM, "out of memory");
    } else {
      *f = (ac_dist_function){rt,
                              fn,
                              local    ? AC_DIST_LOCAL
                              : staged ? AC_DIST_STAGED
                                       : AC_DIST_GATHER,
                              mapped,
                              ac_function_num_args(fn),
                              ac_function_num_results(fn),
                              plan};
      mapped = NULL; /* f's */
    }
  }
  ac_free(rt->ctx, mapped);
  st = dist_agree(rt, st, &e);
  if (st != AC_OK) {
    ac_dist_function_destroy(f);
    if (!f)
      ac_function_destroy(fn);
    return ir_report(err, e, st);
  }
  *out = f;
  return AC_OK;
}

void ac_dist_function_destroy(ac_dist_function *f) {
  if (!f)
    return;
  ac_function_destroy(f->fn);
  dist_plan_destroy(f->plan);
  ac_free(f->rt->ctx, f->mapped);
  ac_free(f->rt->ctx, f);
}

ac_dist_strategy ac_dist_function_strategy(const ac_dist_function *f) {
  return f->strategy;
}
ac_function *ac_dist_function_local(const ac_dist_function *f) {
  return f->fn;
}

/* ---- calls ---- */

/* Argument i against the signature (the same verdict on every rank for a
 * well-formed collective call). */
static ac_status check_arg(ac_dist_function *f, size_t i, const ac_dist_datum *d, ac_error **err) {
  ac_scalar t;
  unsigned r;
  ac_function_arg_info(f->fn, i, &t, &r);
  const char *name = ac_function_arg_name(f->fn, i);
  switch (d->kind) {
  case AC_DIST_SCALAR:
    if (r == 0)
      return AC_OK;
    break;
  case AC_DIST_REPLICATED:
    if (r > 0)
      return AC_OK; /* ac_function_call checks the array itself */
    break;
  case AC_DIST_DISTRIBUTED:
    if (!d->dist)
      return dist_fail(f->rt, err, AC_ERR_INVALID, "argument %zu (%s): no distributed array", i + 1,
                       name);
    if (r > 0 && d->dist->type == t && d->dist->rank == r)
      return AC_OK;
    if (r > 0)
      return dist_fail(f->rt, err, AC_ERR_INVALID,
                       "argument %zu (%s): a distributed %s array of rank %u where the "
                       "parameter is %s of rank %u",
                       i + 1, name, ac_scalar_name(d->dist->type), d->dist->rank, ac_scalar_name(t),
                       r);
    break;
  default:
    return dist_fail(f->rt, err, AC_ERR_INVALID, "argument %zu (%s): unknown datum kind %d", i + 1,
                     name, (int)d->kind);
  }
  return dist_fail(f->rt, err, AC_ERR_INVALID, "argument %zu (%s): the parameter is %s, not %s",
                   i + 1, name, r ? "an array" : "a scalar",
                   d->kind == AC_DIST_SCALAR ? "a scalar" : "an array");
}

/* Whether this call may run locally: the distributed arguments are
 * exactly the mapped parameters, at least one, with one shape and one
 * partition. Depends on global facts only: the same on every rank. */
static const ac_dist_array *local_call(const ac_dist_function *f, const ac_dist_datum *args) {
  if (f->strategy != AC_DIST_LOCAL)
    return NULL;
  const ac_dist_array *first = NULL;
  for (size_t i = 0; i < f->nargs; i++) {
    bool dist = args[i].kind == AC_DIST_DISTRIBUTED;
    if (dist != f->mapped[i])
      return NULL;
    if (!dist)
      continue;
    const ac_dist_array *a = args[i].dist;
    if (!first) {
      first = a;
    } else if (a->rank != first->rank ||
               memcmp(a->extents, first->extents, a->rank * sizeof *a->extents) != 0 ||
               memcmp(a->offsets, first->offsets, ((size_t)f->rt->size + 1) * sizeof *a->offsets) !=
                   0) {
      return NULL;
    }
  }
  return first;
}

/* Makes results[] from this rank's results of the local call, with
 * `like`'s partition for every array; scalars are rank 0's. */
static ac_status local_results(ac_dist_function *f, const ac_dist_array *like, ac_datum *res,
                               ac_dist_datum *results, ac_error **err) {
  ac_dist_runtime *rt = f->rt;
  ac_status st = AC_OK;
  for (size_t i = 0; i < f->nres; i++) {
    results[i] = (ac_dist_datum){AC_DIST_SCALAR, res[i], NULL};
    if (res[i].kind == AC_DATUM_SCALAR)
      continue;
    ac_array *b = res[i].array;
    int64_t ext[64];
    unsigned rank = ac_array_rank(b);
    memcpy(ext, ac_array_extents(b), rank * sizeof *ext);
    ext[0] = like->extents[0];
    results[i].kind = AC_DIST_DISTRIBUTED;
    results[i].local = (ac_datum){0};
    results[i].dist = dist_array_make(rt, ac_array_type(b), rank, ext, like->offsets, b);
    if (!results[i].dist && st == AC_OK)
      st = dist_fail(rt, err, AC_ERR_NOMEM, "out of memory");
  }
  return st;
}

/* The gather strategy's results: rank 0's scalars, this rank's block of
 * every array (full results are released). */
static ac_status gather_results(ac_dist_function *f, ac_datum *res, ac_dist_datum *results,
                                ac_error **err) {
  ac_dist_runtime *rt = f->rt;
  ac_status st = AC_OK;
  int64_t *off = malloc(((size_t)rt->size + 1) * sizeof *off);
  for (size_t i = 0; i < f->nres; i++) {
    results[i] = (ac_dist_datum){AC_DIST_SCALAR, res[i], NULL};
    if (res[i].kind == AC_DATUM_SCALAR) {
      MPI_Bcast(&results[i].local.s, sizeof results[i].local.s, MPI_BYTE, 0, rt->comm);
      continue;
    }
    ac_array *full = res[i].array;
    results[i].kind = AC_DIST_DISTRIBUTED;
    results[i].local = (ac_datum){0};
    if (st != AC_OK)
      goto drop;
    if (!off) {
      st = dist_fail(rt, err, AC_ERR_NOMEM, "out of memory");
      goto drop;
    }
    unsigned rank = ac_array_rank(full);
    const int64_t *ext = ac_array_extents(full);
    for (int r = 0; r < rt->size; r++) {
      int64_t hi;
      ac_dist_partition(ext[0], rt->size, r, &off[r], &hi);
    }
    off[rt->size] = ext[0];
    ac_array *block = dist_rows(rt->ctx, full, off[rt->rank], off[rt->rank + 1], err);
    if (!block) {
      st = *err ? (*err)->status : AC_ERR_NOMEM;
      goto drop;
    }
    results[i].dist = dist_array_make(rt, ac_array_type(full), rank, ext, off, block);
    if (!results[i].dist)
      st = dist_fail(rt, err, AC_ERR_NOMEM, "out of memory");
  drop:
    ac_array_release(full);
  }
  free(off);
  return st;
}

static void release_results(ac_dist_datum *results, size_t n) {
  for (size_t i = 0; i < n; i++)
    ac_dist_datum_release(&results[i]);
}

ac_status ac_dist_function_call(ac_dist_function *f, const ac_dist_datum *args, size_t nargs,
                                ac_dist_datum *results, size_t nresults, ac_error **err) {
  ac_dist_runtime *rt = f->rt;
  ac_error *e = NULL;
  if (err)
    *err = NULL;
  ac_status st = AC_OK;
  if (nargs != f->nargs || nresults != f->nres)
    st = dist_fail(rt, &e, AC_ERR_INVALID,
                   "%s takes %zu argument leaves and gives %zu results; called with %zu and %zu",
                   ac_function_name(f->fn), f->nargs, f->nres, nargs, nresults);
  for (size_t i = 0; st == AC_OK && i < nargs; i++)
    st = check_arg(f, i, &args[i], &e);
  ac_datum *in = calloc(f->nargs ? f->nargs : 1, sizeof *in);
  ac_datum *res = calloc(f->nres ? f->nres : 1, sizeof *res);
  if (st == AC_OK && (!in || !res))
    st = dist_fail(rt, &e, AC_ERR_NOMEM, "out of memory");
  st = dist_agree(rt, st, &e);
  const ac_dist_array *like = st == AC_OK ? local_call(f, args) : NULL;
  if (st == AC_OK && !like && f->plan) {
    free(in);
    free(res);
    st = dist_plan_call(f->plan, args, nargs, results, nresults, &e);
    return ir_report(err, e, st);
  }
  /* the arguments: blocks (local), or full arrays (gather: the allgathers
   * are collective, so every rank makes them all, then agrees) */
  ac_status got = AC_OK;
  for (size_t i = 0; st == AC_OK && i < nargs; i++) {
    in[i] = args[i].local;
    if (args[i].kind != AC_DIST_DISTRIBUTED)
      continue;
    if (like) {
      in[i] = (ac_datum){AC_DATUM_ARRAY, args[i].dist->type, {0}, args[i].dist->block};
    } else {
      ac_array *full = NULL;
      ac_status s = dist_allgather(rt, args[i].dist, &full, &e);
      in[i] = (ac_datum){AC_DATUM_ARRAY, args[i].dist->type, {0}, full};
      if (s != AC_OK) {
        got = s; /* agreed within the allgather: the same on every rank */
        break;
      }
    }
  }
  if (st == AC_OK)
    st = got;
  bool called = false;
  if (st == AC_OK) {
    st = ac_function_call(f->fn, in, nargs, res, f->nres, &e);
    called = st == AC_OK;
  }
  st = dist_agree(rt, st, &e);
  if (called && st != AC_OK) /* another rank failed */
    for (size_t i = 0; i < f->nres; i++)
      ac_datum_release(&res[i]);
  if (st == AC_OK) {
    st = like ? local_results(f, like, res, results, &e) : gather_results(f, res, results, &e);
    st = dist_agree(rt, st, &e);
    if (st != AC_OK)
      release_results(results, f->nres);
  }
  if (!like && in)
    for (size_t i = 0; i < nargs; i++)
      if (args[i].kind == AC_DIST_DISTRIBUTED && in[i].array)
        ac_array_release(in[i].array);
  free(in);
  free(res);
  return ir_report(err, e, st);
}
