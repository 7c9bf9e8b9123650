/* lib/passes/rec_fuse.c: a recurrence's table read cell by cell, computed
 * inside the recurrence (simplify's recs-fused, docs/passes.md §5.1).
 *
 * What. In
 *     let h = rec (i in 0..e0, j in 0..e1) -> T { B };
 *     ... fold(f, z, generate((e0, e1), |i, j| G)) ...
 * where G reads the table h only at its own cell, h[i, j], the table is
 * used one value per cell: G can be computed where the cell is, so that
 * the recurrence's cells become (T, U), U being G's type, and the
 * consumer takes field 1:
 *     let h = rec (i in 0..e0, j in 0..e1) -> (T, U) {
 *       let c = B[h[a, b] := h[a, b].0]; (c, G[h[i, j] := c])
 *     };
 *     ... fold(f, z, h.1) ...
 * ps_rec_fuse builds that recurrence; simplify checks the place (the
 * generate is the operand of a fold, reached from the let with nothing
 * that may fail before it) and floats the let into the fold afterwards.
 *
 * Why. A recurrence whose rows are folded keeps a window of its table
 * instead of the table (docs/language.md §7.14, lib/lower/skel_rec.c):
 * the maximum of a Smith-Waterman table *with its position*,
 * `fold(later, z, fold(later, z, generate(shape, |i, j| (h[i, j], i, j))))`,
 * then runs in memory proportional to the sequences, not their product.
 *
 * Meaning. G cannot fail (checked here, after its reads of the cell, which
 * are in range, are replaced) and is pure, so computing it per cell during
 * the recurrence instead of after it is not observable; the recurrence
 * itself stays where it was. Its cells are larger, so an "array too large"
 * check of its table counts the fused cell.
 */
#include "passes/pass.h"

/* Bounds on the walks: G and B are scalar code of ordinary size. */
#define RF_MAX_DEPTH 2000u
#define RF_MAX_SIZE 4000u

typedef struct rf {
  ac_module *m;
  uint32_t nb; /* binders between the let's body and the generate */
  bool ok;
} rf;

static bool rf_var_is(const ac_module *m, ir_ref r, uint32_t idx) {
  const ir_node *n = ir_node_get(m, r);
  return n->op == IR_VAR && (uint64_t)n->attr == idx;
}

/* Whether a walk goes on at `depth`: nothing failed, not too deep (else
 * it fails). */
static bool rf_go(rf *F, unsigned depth) {
  if (depth > RF_MAX_DEPTH)
    F->ok = false;
  return F->ok;
}

/* Rebuilds r with kids[i] = walk(kid i, d + binders of kid i). */
static ir_ref rf_kids(rf *F, ir_ref r, uint32_t d, unsigned depth,
                      ir_ref (*walk)(rf *, ir_ref, uint32_t, unsigned)) {
  const ir_node *n = ir_node_get(F->m, r);
  uint32_t nk = n->nkids;
  ir_ref small[8] = {0}, *kids = nk <= 8 ? small : ac_alloc(F->m->ctx, nk * sizeof *kids);
  if (!kids) {
    F->ok = false;
    return IR_NONE;
  }
  for (uint32_t i = 0; i < nk && F->ok; i++) {
    ir_ref k = ir_kid(F->m, r, i);
    kids[i] = k ? walk(F, k, d + ir_binders(F->m, r, i), depth + 1) : IR_NONE;
  }
  ir_ref res = F->ok ? ps_rebuild_if_changed(F->m, r, kids) : IR_NONE;
  if (kids != small)
    ac_free(F->m->ctx, kids);
  if (!res)
    F->ok = false;
  return res;
}

/* G, under d binders of its own, then the generate's (i, j), the nb
 * binders, h and the outer scope, moved under (self, i, j, c) and the
 * outer scope: h[i, j] becomes c. */
static ir_ref rf_gen(rf *F, ir_ref r, uint32_t d, unsigned depth) {
  ac_module *m = F->m;
  if (!rf_go(F, depth))
    return IR_NONE;
  const ir_node *n = ir_node_get(m, r);
  uint32_t h = d + 2 + F->nb;
  if (n->op == IR_INDEX && n->nkids == 3 && rf_var_is(m, ir_kid(m, r, 0), h)) {
    if (!rf_var_is(m, ir_kid(m, r, 1), d + 1) || !rf_var_is(m, ir_kid(m, r, 2), d)) {
      F->ok = false; /* another cell than its own */
      return IR_NONE;
    }
    ir_ref v = ir_var(m, n->loc, d);
    F->ok = v != IR_NONE;
    return v;
  }
  if (n->op == IR_VAR) {
    uint32_t v = (uint32_t)n->attr;
    if (v < d)
      return r;
    if (v >= d + 2 && v <= h) { /* a binder after the recurrence, or h itself */
      F->ok = false;
      return IR_NONE;
    }
    /* j -> d + 1, i -> d + 2 (under c); outer k (at h + 1 + k) -> d + 4 + k */
    uint32_t to = v == d ? d + 1 : v == d + 1 ? d + 2 : v - h - 1 + d + 4;
    ir_ref x = ir_var(m, n->loc, to);
    F->ok = x != IR_NONE;
    return x;
  }
  return rf_kids(F, r, d, depth, rf_gen);
}

/* The body B, under d binders of its own and (self, i, j): every read of
 * self becomes field 0 of the read. Self is only ever indexed. */
static ir_ref rf_body(rf *F, ir_ref r, uint32_t d, unsigned depth) {
  ac_module *m = F->m;
  if (!rf_go(F, depth))
    return IR_NONE;
  const ir_node *n = ir_node_get(m, r);
  if (n->op == IR_VAR) {
    if ((uint64_t)n->attr == d + 2)
      F->ok = false;
    return r;
  }
  if (n->op == IR_INDEX && rf_var_is(m, ir_kid(m, r, 0), d + 2)) {
    ir_ref kids[3] = {ir_kid(m, r, 0), IR_NONE, IR_NONE};
    if (n->nkids != 3)
      return F->ok = false, IR_NONE;
    for (uint32_t i = 1; i < 3 && F->ok; i++)
      kids[i] = rf_body(F, ir_kid(m, r, i), d, depth + 1);
    ir_ref idx = F->ok ? ps_rebuild(m, r, 3, kids) : IR_NONE;
    ir_ref p = idx ? ir_node_new(m, IR_PROJ, n->loc, 1, &idx) : IR_NONE;
    if (!p)
      return F->ok = false, IR_NONE;
    ir_node_get(m, idx)->type = IR_TY_NONE;
    ir_node_get(m, p)->attr = 0;
    return p;
  }
  return rf_kids(F, r, d, depth, rf_body);
}

/* Extent d of rec r, under nb + 1 more binders, is the expression s:
 * bounds from the literal 0 to hi, and s is hi (exclusive) or hi + 1. */
static bool rf_extent_is(ac_module *m, ir_ref r, uint32_t d, ir_ref s, uint32_t nb) {
  const ir_node *rn = ir_node_get(m, r);
  const ir_node *lo = ir_node_get(m, ir_kid(m, r, 2 * d));
  if (lo->op != IR_LIT || lo->lit.i != 0)
    return false;
  ir_ref hi = ir_shift(m, ir_kid(m, r, 2 * d + 1), (int32_t)nb + 1, 0);
  if (!hi)
    return false;
  if ((rn->lit.u >> d) & 1)
    return ir_equal(m, s, hi);
  const ir_node *sn = ir_node_get(m, s);
  if (sn->op != IR_ADD)
    return false;
  const ir_node *one = ir_node_get(m, ir_kid(m, s, 1));
  return one->op == IR_LIT && one->lit.i == 1 && ir_equal(m, ir_kid(m, s, 0), hi);
}

ir_ref ps_rec_fuse(ac_module *m, ir_ref rec, ir_ref gen, uint32_t nb) {
  const ir_node *rn = ir_node_get(m, rec), *gn = ir_node_get(m, gen);
  if (rn->op != IR_REC || rn->attr != 2 || rn->nkids != 5 || gn->op != IR_GENERATE ||
      gn->nkids != 2)
    return IR_NONE;
  ir_ref shape = ir_kid(m, gen, 0), lam = ir_kid(m, gen, 1);
  const ir_node *sn = ir_node_get(m, shape), *ln = ir_node_get(m, lam);
  if (sn->op != IR_TUPLE || sn->nkids != 2 || ln->op != IR_LAM || ln->attr != 2)
    return IR_NONE;
  for (uint32_t d = 0; d < 2; d++)
    if (!rf_extent_is(m, rec, d, ir_kid(m, shape, d), nb))
      return IR_NONE;
  ir_ref g = ir_kid(m, lam, 0), body = ir_kid(m, rec, 4);
  if (ps_size(m, g, RF_MAX_SIZE) >= RF_MAX_SIZE || ps_size(m, body, RF_MAX_SIZE) >= RF_MAX_SIZE)
    return IR_NONE;
  ir_type elem, u = ir_node_get(m, g)->type;
  uint32_t rank;
  if (!ir_ty_array_view(m->ctx, rn->type, &elem, &rank) || u == IR_TY_NONE ||
      !ir_ty_is_element(m->ctx, u))
    return IR_NONE;
  rf F = {m, nb, true};
  ir_ref g2 = rf_gen(&F, g, 0, 0);
  ir_ref b2 = F.ok ? rf_body(&F, body, 0, 0) : IR_NONE;
  /* G may not fail: it would now fail inside the recurrence */
  if (!F.ok || !g2 || !b2 || ps_may_fail(m, g2))
    return IR_NONE;
  /* let c = B'; (c, G') */
  ir_ref c = ir_var(m, gn->loc, 0);
  ir_ref pair[2] = {c, g2};
  ir_ref tup = c ? ir_node_new(m, IR_TUPLE, gn->loc, 2, pair) : IR_NONE;
  ir_ref lk[2] = {b2, tup};
  ir_ref let = tup ? ir_node_new(m, IR_LET, gn->loc, 2, lk) : IR_NONE;
  ir_sym name = ir_sym_intern(m->ctx, "cell", 4);
  uint32_t names = let && name ? ir_syms_push(m, 1, &name) : 0;
  if (!let || !names)
    return IR_NONE;
  ir_node_get(m, let)->names = names;
  ir_ref kids[5];
  for (uint32_t i = 0; i < 4; i++)
    kids[i] = ir_kid(m, rec, i);
  kids[4] = let;
  ir_ref r2 = ps_rebuild(m, rec, 5, kids);
  ir_type fields[2] = {elem, u};
  ir_type cell = ir_ty_tuple(m->ctx, 2, fields);
  ir_type arr = cell ? ir_ty_array(m->ctx, cell, 2) : IR_TY_NONE;
  if (!r2 || !arr)
    return IR_NONE;
  ir_node_get(m, r2)->type = arr;
  return r2;
}
