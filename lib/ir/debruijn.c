/* lib/ir/debruijn.c: shifting and substitution of de Bruijn indices.
 *
 * Variables are indices counting binders outward from the use (the innermost
 * binder is 0). Moving an expression under k new binders adds k to its free
 * variables (ir_shift); replacing a bound variable by an expression removes
 * the binder (ir_subst), the textbook operations of de Bruijn's notation
 * (Pierce, TAPL ch. 6). Both are pure: they build new nodes and reuse every
 * subtree that does not change, so sharing inside the arena is preserved.
 *
 * The recursion follows the expression's depth; the parser bounds nesting, and
 * the builder produces trees of the same depth as the program the user wrote.
 */
#include "ir.h"

#include <string.h>

/* Copies node r with new children (kids[] has the same count). */
static ir_ref clone_with_kids(ac_module *m, ir_ref r, const ir_ref *kids) {
  ir_node old = *ir_node_get(m, r);
  ir_ref c = ir_node_new(m, (ir_op)old.op, old.loc, old.nkids, kids);
  if (!c)
    return IR_NONE;
  ir_node *n = ir_node_get(m, c);
  uint32_t k = n->kids;
  *n = old;
  n->kids = k;
  return c;
}

ir_ref ir_map_kids(ac_module *m, ir_ref r, ir_kid_fn f, void *ud, bool fresh) {
  uint32_t nk = ir_node_get(m, r)->nkids;
  if (nk == 0)
    return fresh ? clone_with_kids(m, r, NULL) : r;
  ir_ref small[16];
  ir_ref *nkids = nk <= 16 ? small : ac_alloc(m->ctx, nk * sizeof *nkids);
  if (!nkids) {
    m->oom = true;
    return IR_NONE;
  }
  bool changed = fresh, failed = false;
  for (uint32_t i = 0; i < nk && !failed; i++) {
    ir_ref k = ir_kid(m, r, i);
    nkids[i] = k ? f(m, k, ir_binders(m, r, i), ud) : IR_NONE;
    if (k && !nkids[i])
      failed = true;
    changed |= nkids[i] != k;
  }
  ir_ref res = failed ? IR_NONE : changed ? clone_with_kids(m, r, nkids) : r;
  if (nkids != small)
    ac_free(m->ctx, nkids);
  return res;
}

typedef struct shift_st {
  int32_t d;
  uint32_t cutoff;
} shift_st;

static ir_ref shift_rec(ac_module *m, ir_ref e, uint32_t binders, void *ud);

static ir_ref shift_at(ac_module *m, ir_ref e, int32_t d, uint32_t cutoff) {
  ir_node *n = ir_node_get(m, e);
  if (n->op == IR_VAR) {
    int64_t idx = n->attr;
    if (idx < (int64_t)cutoff)
      return e;
    if (idx + d < (int64_t)cutoff)
      return IR_NONE; /* the variable would be captured or vanish */
    ir_ref v = ir_var(m, n->loc, (uint32_t)(idx + d));
    if (v)
      ir_node_get(m, v)->type = ir_node_get(m, e)->type;
    return v;
  }
  shift_st st = {d, cutoff};
  return ir_map_kids(m, e, shift_rec, &st, false);
}

static ir_ref shift_rec(ac_module *m, ir_ref e, uint32_t binders, void *ud) {
  shift_st *st = ud;
  return shift_at(m, e, st->d, st->cutoff + binders);
}

ir_ref ir_shift(ac_module *m, ir_ref e, int32_t d, uint32_t cutoff) {
  if (d == 0 || e == IR_NONE)
    return e;
  return shift_at(m, e, d, cutoff);
}

/* Like shift_at, but every node is new: the copy may be typed apart from
 * the original (a local function's body at each of its uses). */
static ir_ref copy_rec(ac_module *m, ir_ref e, uint32_t binders, void *ud);

static ir_ref copy_at(ac_module *m, ir_ref e, int32_t d, uint32_t cutoff) {
  ir_node *n = ir_node_get(m, e);
  if (n->op == IR_VAR) {
    int64_t idx = n->attr;
    if (idx >= (int64_t)cutoff && idx + d < (int64_t)cutoff)
      return IR_NONE;
    ir_ref v = ir_var(m, n->loc, (uint32_t)(idx >= (int64_t)cutoff ? idx + d : idx));
    if (v)
      ir_node_get(m, v)->type = ir_node_get(m, e)->type;
    return v;
  }
  shift_st st = {d, cutoff};
  return ir_map_kids(m, e, copy_rec, &st, true);
}

static ir_ref copy_rec(ac_module *m, ir_ref e, uint32_t binders, void *ud) {
  shift_st *st = ud;
  return copy_at(m, e, st->d, st->cutoff + binders);
}

ir_ref ir_copy_shift(ac_module *m, ir_ref e, int32_t d, uint32_t cutoff) {
  return e == IR_NONE ? IR_NONE : copy_at(m, e, d, cutoff);
}

typedef struct subst_st {
  uint32_t j; /* index of the variable being replaced, at this depth */
  ir_ref s;   /* replacement, valid at the depth of the original binder */
  uint32_t depth; /* binders crossed since the substitution started */
} subst_st;

static ir_ref subst_at(ac_module *m, ir_ref e, subst_st st);

static ir_ref subst_rec(ac_module *m, ir_ref e, uint32_t binders, void *ud) {
  subst_st st = *(subst_st *)ud;
  st.j += binders;
  st.depth += binders;
  return subst_at(m, e, st);
}

static ir_ref subst_at(ac_module *m, ir_ref e, subst_st st) {
  ir_node *n = ir_node_get(m, e);
  if (n->op == IR_VAR) {
    uint32_t idx = (uint32_t)n->attr;
    if (idx == st.j)
      return ir_shift(m, st.s, (int32_t)st.depth, 0);
    if (idx > st.j) {
      ir_ref v = ir_var(m, n->loc, idx - 1);
      if (v)
        ir_node_get(m, v)->type = ir_node_get(m, e)->type;
      return v;
    }
    return e;
  }
  return ir_map_kids(m, e, subst_rec, &st, false);
}

ir_ref ir_subst(ac_module *m, ir_ref e, uint32_t j, ir_ref s) {
  subst_st st = {j, s, 0};
  return subst_at(m, e, st);
}

static bool occurs_at(const ac_module *m, ir_ref e, uint32_t j) {
  const ir_node *n = ir_node_get(m, e);
  if (n->op == IR_VAR)
    return (uint32_t)n->attr == j;
  for (uint32_t i = 0; i < n->nkids; i++) {
    ir_ref k = ir_kid(m, e, i);
    if (k && occurs_at(m, k, j + ir_binders(m, e, i)))
      return true;
  }
  return false;
}

bool ir_occurs(const ac_module *m, ir_ref e, uint32_t j) { return occurs_at(m, e, j); }

bool ir_equal(const ac_module *m, ir_ref a, ir_ref b) {
  if (a == b)
    return true;
  if (!a || !b)
    return false;
  const ir_node *x = ir_node_get(m, a), *y = ir_node_get(m, b);
  if (x->op != y->op || x->nkids != y->nkids || x->attr != y->attr)
    return false;
  if (x->op == IR_LIT && (x->lit.u != y->lit.u || x->type != y->type))
    return false;
  if (x->op == IR_CAST && x->type != y->type)
    return false;
  if (x->op == IR_REC &&
      (x->lit.u != y->lit.u || x->type != y->type ||
       (x->flags & IR_F_SCHED) != (y->flags & IR_F_SCHED) ||
       ((x->flags & IR_F_SCHED) &&
        memcmp(&m->ints[x->aux], &m->ints[y->aux], (size_t)x->attr * sizeof(int64_t)) != 0)))
    return false;
  if (x->op == IR_ARRLIT &&
      memcmp(&m->ints[x->aux], &m->ints[y->aux], (size_t)x->attr * sizeof(int64_t)) != 0)
    return false;
  for (uint32_t i = 0; i < x->nkids; i++)
    if (!ir_equal(m, ir_kid(m, a, i), ir_kid(m, b, i)))
      return false;
  return true;
}

/* ---- stencil windows ---- */

/* A window offset literal as the interpreter reads it (interp_sc_to_i64: a
 * u64 above INT64_MAX saturates). */
static int64_t window_offset(const ac_module *m, const ir_node *n) {
  ac_scalar sc = AC_I64;
  ir_ty_is_scalar(m->ctx, n->type, &sc);
  if (sc == AC_U64 && n->lit.u > (uint64_t)INT64_MAX)
    return INT64_MAX;
  return n->lit.i;
}

static int64_t window_cap(int64_t v) {
  return v > IR_WINDOW_MAX_REACH ? IR_WINDOW_MAX_REACH : v;
}

static bool window_scan(const ac_module *m, ir_ref r, uint32_t depth, ir_window *w,
                        unsigned nest) {
  const ir_node *n = ir_node_get(m, r);
  if (nest > 4000)
    return false;
  if (n->op == IR_VAR)
    return n->attr != (int64_t)depth;
  if (n->op == IR_INDEX && n->nkids == w->rank + 1) {
    const ir_node *k0 = ir_node_get(m, ir_kid(m, r, 0));
    if (k0->op == IR_VAR && k0->attr == (int64_t)depth) {
      int64_t off[IR_WINDOW_MAX_RANK];
      for (uint32_t d = 0; d < w->rank; d++) {
        const ir_node *o = ir_node_get(m, ir_kid(m, r, d + 1));
        if (o->op != IR_LIT)
          return false;
        int64_t v = window_offset(m, o);
        int64_t lo = v < 0 ? window_cap(v == INT64_MIN ? INT64_MAX : -v) : 0;
        int64_t hi = v > 0 ? window_cap(v) : 0;
        if (lo > w->below[d])
          w->below[d] = lo;
        if (hi > w->above[d])
          w->above[d] = hi;
        off[d] = v;
      }
      if (w->reads++ == 0) {
        memcpy(w->first, off, w->rank * sizeof *off);
        w->offsets = 1;
      } else if (memcmp(w->first, off, w->rank * sizeof *off) != 0) {
        w->offsets = 2;
      }
      return true;
    }
  }
  for (uint32_t i = 0; i < n->nkids; i++)
    if (!window_scan(m, ir_kid(m, r, i), depth + ir_binders(m, r, i), w, nest + 1))
      return false;
  return true;
}

bool ir_window_reach(const ac_module *m, ir_ref body, uint32_t rank, ir_window *w) {
  memset(w, 0, sizeof *w);
  w->rank = rank;
  if (rank == 0 || rank > IR_WINDOW_MAX_RANK || body == IR_NONE)
    return false;
  return window_scan(m, body, 0, w, 0);
}

bool ir_bp_projection(const ac_module *m, ir_ref bp, uint32_t r, uint32_t *par) {
  const ir_node *n = ir_node_get(m, bp);
  if (n->op != IR_BACKPERMUTE || n->nkids != 3 || r == 0)
    return false;
  ir_ref fn = ir_kid(m, bp, 1);
  const ir_node *fnn = ir_node_get(m, fn);
  if (fnn->op != IR_LAM || fnn->attr <= 0)
    return false;
  uint32_t q = (uint32_t)fnn->attr;
  ir_ref body = ir_kid(m, fn, 0);
  const ir_node *bn = ir_node_get(m, body);
  if (r > 1 && (bn->op != IR_TUPLE || bn->nkids != r))
    return false;
  for (uint32_t d = 0; d < r; d++) {
    const ir_node *cn = ir_node_get(m, r > 1 ? ir_kid(m, body, d) : body);
    if (cn->op != IR_VAR || cn->attr < 0 || (uint64_t)cn->attr >= q)
      return false;
    par[d] = q - 1 - (uint32_t)cn->attr;
  }
  return true;
}

bool ir_bp_is_projection(const ac_module *m, ir_ref bp) {
  ir_type elem;
  uint32_t r = 0, par[IR_WINDOW_MAX_RANK];
  const ir_node *n = ir_node_get(m, bp);
  return n->op == IR_BACKPERMUTE && n->nkids == 3 &&
         ir_ty_array_view(m->ctx, ir_node_get(m, ir_kid(m, bp, 2))->type, &elem, &r) &&
         r <= IR_WINDOW_MAX_RANK && ir_bp_projection(m, bp, r, par);
}
