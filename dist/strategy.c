/* dist/strategy.c: which functions run without communication (the local
 * strategy), decided once from the verified IR.
 *
 * A function is local when it is element-wise in the outermost dimension
 * over its distributed parameters; the rule is kept conservative (anything
 * it cannot see through is not local, and runs by the gather strategy,
 * which is correct for every program):
 *   - every parameter is a scalar or an array (no tuples: a leaf is then a
 *     parameter);
 *   - the body is map(f, p1, .., pn) or a tuple of such maps, each pj a
 *     parameter of array type named directly;
 *   - f (a lambda or a named function) reads no mapped parameter except
 *     through its own arguments: a mapped parameter that is also a free
 *     variable of a lambda (indexed, len, shape, passed on) makes the
 *     function not local; free scalar parameters and free array parameters
 *     that are not mapped (replicated at the call) are fine.
 * A map is element-wise over every dimension, so each rank may run it on
 * its rows. At the call (call.c) the distributed arguments must then be
 * exactly the mapped parameters, with one shape and one partition.
 * docs/distributed.md states the rule for users.
 */
#include "dist_impl.h"

#include <string.h>

/* Marks in read[] the array parameters of f that e (under `depth` binders
 * of the lambda's own) reads directly: a free variable of index depth + v
 * is f's body variable v, parameter nparams - 1 - v. False for a free
 * variable that is no parameter (conservatively: not local). */
static bool mark_reads(const ac_module *m, const ir_func *f, ir_ref e, uint32_t depth, bool *read) {
  const ir_node *n = ir_node_get(m, e);
  if (n->op == IR_VAR && (uint32_t)n->attr >= depth) {
    uint32_t v = (uint32_t)n->attr - depth;
    if (v >= f->nparams)
      return false;
    uint32_t p = f->nparams - 1 - v;
    if (ir_ty_info(m->ctx, ir_func_param(m, f, p)).kind != TK_SCALAR)
      read[p] = true;
    return true;
  }
  for (uint32_t i = 0; i < n->nkids; i++)
    if (!mark_reads(m, f, ir_kid(m, e, i), depth + ir_binders(m, e, i), read))
      return false;
  return true;
}

/* One map of the body: marks its mapped parameters; false when it breaks
 * the rule. */
static bool local_map(const ac_module *m, const ir_func *f, ir_ref map, bool *mapped, bool *read) {
  const ir_node *n = ir_node_get(m, map);
  if (n->op != IR_MAP || n->nkids < 2)
    return false;
  ir_ref fn = ir_kid(m, map, 0);
  const ir_node *fnode = ir_node_get(m, fn);
  if (fnode->op == IR_LAM) {
    if (!mark_reads(m, f, ir_kid(m, fn, 0), (uint32_t)fnode->attr, read))
      return false;
  } else if (fnode->op != IR_FNREF) {
    return false;
  }
  for (uint32_t i = 1; i < n->nkids; i++) {
    const ir_node *a = ir_node_get(m, ir_kid(m, map, i));
    if (a->op != IR_VAR || (uint32_t)a->attr >= f->nparams)
      return false;
    uint32_t p = f->nparams - 1 - (uint32_t)a->attr;
    if (ir_ty_info(m->ctx, ir_func_param(m, f, p)).kind != TK_ARRAY)
      return false;
    mapped[p] = true;
  }
  return true;
}

bool dist_local_rule(ac_module *m, const char *name, bool *mapped, size_t nargs) {
  memset(mapped, 0, nargs * sizeof *mapped);
  int32_t idx = ir_func_find(m, ir_sym_intern(m->ctx, name, strlen(name)));
  if (idx < 0)
    return false;
  const ir_func *f = &m->funcs[idx];
  if (f->is_extern || !f->body || f->nparams != nargs || nargs == 0)
    return false;
  for (uint32_t p = 0; p < f->nparams; p++) {
    ir_tykind k = ir_ty_info(m->ctx, ir_func_param(m, f, p)).kind;
    if (k != TK_SCALAR && k != TK_ARRAY)
      return false;
  }
  bool *read = ac_alloc(m->ctx, nargs);
  if (!read)
    return false;
  memset(read, 0, nargs);
  const ir_node *b = ir_node_get(m, f->body);
  bool ok = b->op == IR_MAP || (b->op == IR_TUPLE && b->nkids > 0);
  if (b->op == IR_MAP)
    ok = local_map(m, f, f->body, mapped, read);
  for (uint32_t i = 0; ok && b->op == IR_TUPLE && i < b->nkids; i++)
    ok = local_map(m, f, ir_kid(m, f->body, i), mapped, read);
  /* a mapped parameter read otherwise too (indexed, len, shape, passed on)
   * would need all its rows on every rank */
  for (size_t p = 0; ok && p < nargs; p++)
    ok = !(mapped[p] && read[p]);
  ac_free(m->ctx, read);
  return ok;
}
