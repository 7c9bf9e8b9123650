/* lib/interp/stencil.c: stencil(|w| e, boundary, a) (docs/language.md §7
 * "Stencils").
 *
 * The lambda's parameter is a window: a leaf pointing at this stencil's
 * state (the array, the current index, the boundary rule), so reading
 * w[o1, .., or] is a lookup relative to the current element and no
 * neighbourhood is ever copied. Out-of-range positions are resolved per
 * dimension:
 *   clamp   the nearest edge element;
 *   mirror  reflection without repeating the edge (-1 reads 1, n reads
 *           n-2), repeated for offsets beyond one reflection, i.e. periodic
 *           with period 2(n-1); an extent of 1 always reads 0;
 *   wrap    periodic with period n;
 *   const   the boundary value, if any dimension is outside.
 * All of it is computed without forming cur + offset, so huge literal
 * offsets cannot overflow.
 */
#include "interp/interp.h"

struct interp_window {
  unsigned rank;
  int64_t boundary;   /* AC_BOUNDARY_* */
  const int64_t *ext; /* the array's extents */
  const int64_t *cur; /* index of the element being computed */
  size_t aoff, na;    /* the array's leaves on the stack */
  size_t voff;        /* AC_BOUNDARY_CONST: the value's na leaves */
};

static int64_t mod(int64_t a, int64_t n) {
  int64_t m = a % n;
  return m < 0 ? m + n : m;
}

/* Position along a dimension of extent n >= 1 read at offset o from cur;
 * false when it is outside and the boundary is a constant. */
static bool resolve(int64_t boundary, int64_t cur, int64_t o, int64_t n, int64_t *p) {
  switch (boundary) {
  case AC_BOUNDARY_CLAMP:
    *p = o < -cur ? 0 : o > n - 1 - cur ? n - 1 : cur + o;
    return true;
  case AC_BOUNDARY_WRAP:
    *p = (cur + mod(o, n)) % n;
    return true;
  case AC_BOUNDARY_MIRROR: {
    if (n == 1) {
      *p = 0;
      return true;
    }
    int64_t period = 2 * (n - 1), t = (cur + mod(o, period)) % period;
    *p = t < n ? t : period - t;
    return true;
  }
  default:
    if (o < -cur || o > n - 1 - cur)
      return false;
    *p = cur + o;
    return true;
  }
}

bool interp_window_read(interp *I, ir_ref at, size_t off, size_t n, unsigned nidx,
                        const int64_t *idx) {
  const struct interp_window *w = I->stk[off].v.w;
  if (n != 1 || nidx != w->rank)
    return interp_internal(I, at, "window of rank %u read with %u offsets", w->rank, nidx);
  int64_t lin = 0;
  for (unsigned d = 0; d < w->rank; d++) {
    int64_t p;
    if (!resolve(w->boundary, w->cur[d], idx[d], w->ext[d], &p))
      return interp_push_copy(I, w->voff, w->na);
    lin = lin * w->ext[d] + p;
  }
  return interp_load(I, w->aoff, w->na, lin);
}

bool interp_stencil(interp *I, ir_ref r) {
  const ir_node *n = INODE(I, r);
  bool cst = n->attr == AC_BOUNDARY_CONST;
  if ((n->nkids == 3) != cst || n->attr < AC_BOUNDARY_CLAMP || n->attr > AC_BOUNDARY_CONST)
    return interp_internal(I, r, "stencil with boundary %lld and %u arguments", (long long)n->attr,
                           n->nkids);
  size_t base = I->sp;
  interp_lam lam;
  if (!interp_lam_init(I, &lam, IKID(I, r, 0), 1))
    return false;
  lam.counts[0] = 1;
  /* the boundary value comes before the array in the text: evaluate it first */
  bool ok = !cst || interp_eval(I, IKID(I, r, 2));
  size_t aoff = I->sp, nv = aoff - base;
  ok = ok && interp_eval(I, IKID(I, r, 1));
  size_t na = I->sp - aoff, outs = I->sp;
  const ac_array *a = ok ? interp_view(I, r, "stencil", aoff, na) : NULL;
  ok = a != NULL;
  if (ok && cst && nv != na)
    ok = interp_internal(I, r, "stencil boundary value does not match the elements");
  interp_ints cur = {NULL, {0}}; /* freeing is a no-op until it is initialised */
  ok = ok && interp_ints_init(I, r, &cur, a->rank);
  ok = ok && interp_new_arrays(I, r, n->type, a->rank, a->extents);
  if (ok) {
    struct interp_window w = {a->rank, n->attr, a->extents, cur.p, aoff, na, base};
    size_t nout = I->sp - outs;
    for (int64_t k = 0; k < a->size && ok; k++) {
      size_t args = I->sp;
      interp_leaf l = {LK_WINDOW, 0, {.w = &w}};
      ok = interp_push(I, l) && interp_apply(I, &lam, args);
      if (ok) {
        interp_store(I, outs, nout, k, args);
        interp_drop(I, args);
        interp_next_index(a->rank, a->extents, cur.p);
      }
    }
  }
  interp_ints_free(I, &cur);
  interp_lam_free(I, &lam);
  if (ok)
    interp_collapse(I, base, outs);
  return ok;
}
