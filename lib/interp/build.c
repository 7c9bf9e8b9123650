/* lib/interp/build.c: array construction, map, filter and the array loops.
 *
 * generate, iota, fill, array literals, map (docs/language.md §7
 * "Construction", "Element-wise"), filter ("Compaction") and iterate/while
 * ("Array loops"). Each operation follows one pattern: evaluate the
 * arguments onto the stack, allocate the result arrays and push them (so an
 * error anywhere releases them with the rest of the stack), fill them
 * element by element in row-major order, then collapse the stack so that
 * only the result remains. Elements are visited in row-major order, so the
 * first failing element (in that order) is the one reported.
 */
#include "interp/interp.h"

#include <string.h>

/* Fills the arrays at outs (nout leaves, extents ext) with lam applied to
 * each multi-index: generate's loop, shared with nothing else but kept apart
 * from argument handling for clarity. */
static bool fill_by_index(interp *I, ir_ref r, const interp_lam *lam, size_t outs, size_t nout,
                          unsigned rank, const int64_t *ext) {
  interp_ints iv;
  if (!interp_ints_init(I, r, &iv, rank))
    return false;
  bool ok = true;
  int64_t size = I->stk[outs].v.a->size;
  for (int64_t k = 0; k < size && ok; k++) {
    size_t args = I->sp;
    ok = interp_reserve(I, rank);
    for (unsigned d = 0; d < rank && ok; d++) {
      interp_leaf l = {LK_SCALAR, 0, {.s = {.i = iv.p[d]}}};
      I->stk[I->sp++] = l;
    }
    ok = ok && interp_apply(I, lam, args);
    if (ok) {
      interp_store(I, outs, nout, k, args);
      interp_drop(I, args);
      interp_next_index(rank, ext, iv.p);
    }
  }
  interp_ints_free(I, &iv);
  return ok;
}

/* generate(shape, |i1, .., ir| e) */
bool interp_generate(interp *I, ir_ref r) {
  unsigned rank = interp_ty_rank(I->ctx, INODE(I, r)->type);
  size_t base = I->sp;
  interp_ints ext;
  if (!interp_ints_init(I, r, &ext, rank))
    return false;
  interp_lam lam;
  bool ok = interp_lam_init(I, &lam, IKID(I, r, 1), rank);
  ok = ok && interp_eval(I, IKID(I, r, 0)) &&
       interp_read_shape(I, r, IKID(I, r, 0), base, rank, ext.p);
  if (ok)
    I->sp = base; /* the shape was scalars */
  ok = ok && interp_new_arrays(I, r, INODE(I, r)->type, rank, ext.p);
  for (unsigned d = 0; d < rank && ok; d++)
    lam.counts[d] = 1;
  ok = ok && fill_by_index(I, r, &lam, base, I->sp - base, rank, ext.p);
  interp_lam_free(I, &lam);
  interp_ints_free(I, &ext);
  return ok;
}

/* iota(n) = [0, 1, .., n-1] : i64[] */
bool interp_iota(interp *I, ir_ref r) {
  size_t base = I->sp;
  ir_ref n = IKID(I, r, 0);
  if (!interp_eval(I, n))
    return false;
  int64_t ext;
  if (!interp_read_shape(I, r, n, base, 1, &ext))
    return false;
  I->sp = base;
  if (!interp_new_arrays(I, r, INODE(I, r)->type, 1, &ext))
    return false;
  int64_t *data = I->stk[base].v.a->data;
  for (int64_t k = 0; k < ext; k++)
    data[k] = k;
  return true;
}

/* fill(shape, x) */
bool interp_fill(interp *I, ir_ref r) {
  unsigned rank = interp_ty_rank(I->ctx, INODE(I, r)->type);
  size_t base = I->sp;
  interp_ints ext;
  if (!interp_ints_init(I, r, &ext, rank))
    return false;
  bool ok =
      interp_eval(I, IKID(I, r, 0)) && interp_read_shape(I, r, IKID(I, r, 0), base, rank, ext.p);
  if (ok)
    I->sp = base;
  ok = ok && interp_eval(I, IKID(I, r, 1));
  size_t outs = I->sp, ne = outs - base;
  ok = ok && interp_new_arrays(I, r, INODE(I, r)->type, rank, ext.p);
  if (ok) {
    int64_t size = I->stk[outs].v.a->size;
    for (int64_t k = 0; k < size; k++)
      interp_store(I, outs, ne, k, base);
    interp_collapse(I, base, outs);
  }
  interp_ints_free(I, &ext);
  return ok;
}

/* [e1, e2, ..]: kids are the elements in row-major order, attr the rank,
 * m->ints[aux..] the extents. */
bool interp_arrlit(interp *I, ir_ref r) {
  const ir_node *n = INODE(I, r);
  unsigned rank = (unsigned)n->attr;
  if (n->aux == 0 || n->aux + (uint64_t)rank > I->m->nints)
    return interp_internal(I, r, "array literal without extents");
  const int64_t *ext = &I->m->ints[n->aux];
  size_t outs = I->sp;
  if (!interp_new_arrays(I, r, n->type, rank, ext))
    return false;
  size_t nout = I->sp - outs;
  if (I->stk[outs].v.a->size != (int64_t)n->nkids)
    return interp_internal(I, r, "array literal with %u elements for its extents", n->nkids);
  for (uint32_t k = 0; k < n->nkids; k++) {
    size_t e = I->sp;
    if (!interp_eval(I, IKID(I, r, k)))
      return false;
    interp_store(I, outs, nout, k, e);
    interp_drop(I, e);
  }
  return true;
}

/* map(f, a1, .., an): all arrays (and the arrays of tuples) of one shape. */
bool interp_map(interp *I, ir_ref r) {
  uint32_t n = INODE(I, r)->nkids - 1;
  size_t base = I->sp;
  interp_lam lam;
  if (!interp_lam_init(I, &lam, IKID(I, r, 0), n))
    return false;
  bool ok = true;
  for (uint32_t i = 0; i < n && ok; i++) {
    size_t b = I->sp;
    ok = interp_eval(I, IKID(I, r, i + 1));
    lam.counts[i] = I->sp - b;
  }
  const ac_array *a = ok ? interp_view(I, r, "map", base, I->sp - base) : NULL;
  size_t outs = I->sp;
  ok = a && interp_new_arrays(I, r, INODE(I, r)->type, a->rank, a->extents);
  size_t nout = I->sp - outs;
  for (int64_t k = 0; ok && k < a->size; k++) {
    size_t args = I->sp, off = base;
    for (uint32_t i = 0; i < n && ok; i++) {
      ok = interp_load(I, off, lam.counts[i], k);
      off += lam.counts[i];
    }
    ok = ok && interp_apply(I, &lam, args);
    if (ok) {
      interp_store(I, outs, nout, k, args);
      interp_drop(I, args);
    }
  }
  interp_lam_free(I, &lam);
  if (ok)
    interp_collapse(I, base, outs);
  return ok;
}

static void copy_elem(ac_array *dst, int64_t dk, const ac_array *src, int64_t sk) {
  size_t es = rt_array_elsize(src);
  memcpy((char *)dst->data + (size_t)dk * es, (const char *)src->data + (size_t)sk * es, es);
}

/* filter(p, a): p is evaluated once per element, in order; the kept
 * elements are then copied. */
bool interp_filter(interp *I, ir_ref r) {
  size_t base = I->sp;
  interp_lam lam;
  if (!interp_lam_init(I, &lam, IKID(I, r, 0), 1))
    return false;
  bool ok = interp_eval(I, IKID(I, r, 1));
  size_t na = I->sp - base;
  lam.counts[0] = na;
  const ac_array *a = ok ? interp_view(I, r, "filter", base, na) : NULL;
  unsigned char *keep = a ? interp_scratch(I, r, a->size, 1) : NULL;
  ok = keep != NULL;
  int64_t count = 0;
  for (int64_t k = 0; ok && k < a->size; k++) {
    size_t args = I->sp;
    ok = interp_load(I, base, na, k) && interp_apply(I, &lam, args);
    if (ok) {
      keep[k] = I->stk[args].v.s.u != 0;
      count += keep[k];
      I->sp = args;
    }
  }
  size_t outs = I->sp;
  ok = ok && interp_new_arrays(I, r, INODE(I, r)->type, 1, &count);
  if (ok) {
    int64_t j = 0;
    for (int64_t k = 0; k < a->size; k++) {
      if (!keep[k])
        continue;
      for (size_t i = 0; i < na; i++)
        copy_elem(I->stk[outs + i].v.a, j, I->stk[base + i].v.a, k);
      j++;
    }
    interp_collapse(I, base, outs);
  }
  ac_free(I->ctx, keep);
  interp_lam_free(I, &lam);
  return ok;
}

/* iterate(n, f, x): the state lives at base; each application consumes it
 * and leaves the next one, so only one state is alive between steps. */
bool interp_iterate(interp *I, ir_ref r) {
  size_t base = I->sp;
  ir_ref nk = IKID(I, r, 0);
  if (!interp_eval(I, nk))
    return false;
  int64_t n;
  if (!interp_read_ints(I, r, INODE(I, nk)->type, base, 1, &n))
    return false;
  I->sp = base;
  interp_lam lam;
  if (!interp_lam_init(I, &lam, IKID(I, r, 1), 1))
    return false;
  bool ok = interp_eval(I, IKID(I, r, 2));
  lam.counts[0] = I->sp - base;
  for (int64_t i = 0; i < n && ok; i++)
    ok = interp_apply(I, &lam, base);
  interp_lam_free(I, &lam);
  return ok;
}

/* while(c, f, x): c gets a copy of the state, f consumes it. */
bool interp_while(interp *I, ir_ref r) {
  size_t base = I->sp;
  interp_lam cond, step;
  bool ok = interp_lam_init(I, &cond, IKID(I, r, 0), 1);
  ok = interp_lam_init(I, &step, IKID(I, r, 1), 1) && ok;
  ok = ok && interp_eval(I, IKID(I, r, 2));
  cond.counts[0] = step.counts[0] = I->sp - base;
  ok = ok && interp_run_while(I, &cond, &step, base);
  interp_lam_free(I, &cond);
  interp_lam_free(I, &step);
  return ok;
}
