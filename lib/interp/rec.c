/* lib/interp/rec.c: recurrences, rec (i1 in lo1..=hi1, ..) -> T { body }
 * (docs/language.md §7 "Recurrences"; Cartey et al.'s recursion equations).
 *
 * The verifier proves the dependencies affine and stores a schedule: n
 * integer coefficients a at m->ints[node->aux] such that every element only
 * depends on elements x' with a.x' < a.x. The interpreter computes the
 * points in order of increasing a.x (wavefronts), row-major within one
 * wavefront, which is an order every parallel backend's wavefronts refine.
 *
 * A read d[e1, .., en] is checked against that order instead of a "computed
 * yet?" bitmap: it must lie in the domain and in a strictly earlier
 * wavefront. So the interpreter never accepts a read that a parallel backend
 * could see unwritten, whatever order it happens to use inside a wavefront.
 *
 * The body sees the array being defined through leaves of kind LK_REC (one
 * per field of the element type, read together by `d[i - 1]`, whose `.1`
 * then picks a field: the verifier allows the array only as the array of an
 * index) pointing at this rec's state; indices in the body are logical:
 * element k of the result is logical index lo + k.
 */
#include "interp/interp.h"

#include <stdlib.h>

struct interp_rec {
  unsigned n;
  const int64_t *lo, *ext;
  const int64_t *sched; /* a, n coefficients */
  int64_t cur;          /* a.x of the point being computed */
  size_t outs;          /* the result arrays on the stack */
  const char *name;
};

typedef struct rec_point {
  int64_t key, lin;
} rec_point;

static int cmp_point(const void *pa, const void *pb) {
  const rec_point *a = pa, *b = pb;
  if (a->key != b->key)
    return a->key < b->key ? -1 : 1;
  return a->lin < b->lin ? -1 : a->lin > b->lin;
}

/* a.k; setup() has checked that no partial sum can overflow. */
static int64_t key_of(const struct interp_rec *s, const int64_t *k) {
  int64_t key = 0;
  for (unsigned d = 0; d < s->n; d++)
    key += s->sched[d] * k[d];
  return key;
}

bool interp_rec_read(interp *I, ir_ref at, size_t off, size_t n, unsigned nidx,
                     const int64_t *idx) {
  const struct interp_rec *s = I->stk[off].v.r;
  if (nidx != s->n)
    return interp_internal(I, at, "rec of rank %u read with %u indices", s->n, nidx);
  interp_ints k;
  if (!interp_ints_init(I, at, &k, nidx))
    return false;
  bool inside = true;
  int64_t lin = 0;
  for (unsigned d = 0; d < nidx && inside; d++) {
    /* idx - lo as unsigned: exact whenever idx >= lo */
    inside = idx[d] >= s->lo[d] && (uint64_t)idx[d] - (uint64_t)s->lo[d] < (uint64_t)s->ext[d];
    k.p[d] = (int64_t)((uint64_t)idx[d] - (uint64_t)s->lo[d]);
    lin = inside ? lin * s->ext[d] + k.p[d] : 0;
  }
  bool ok = inside && key_of(s, k.p) < s->cur;
  if (!ok) {
    char at_s[200];
    interp_fmt_shape(at_s, sizeof at_s, nidx, idx);
    interp_fail(I, at, "rec: read of %s%s %s", s->name, at_s,
                inside ? "before it is computed" : "outside the domain");
  }
  interp_ints_free(I, &k);
  if (ok && interp_reserve(I, n)) {
    for (size_t i = 0; i < n; i++) {
      const ac_array *a = I->stk[s->outs + I->stk[off + i].field].v.a;
      interp_leaf l = {LK_SCALAR, 0, {.s = interp_sc_load(a->type, a->data, lin)}};
      I->stk[I->sp++] = l;
    }
    return true;
  }
  return false;
}

/* Extent of dimension d from its bounds; fails with "negative extent". */
static bool extent(interp *I, ir_ref r, int64_t lo, int64_t hi, bool incl, int64_t *ext) {
  if (hi >= lo) {
    uint64_t e = (uint64_t)hi - (uint64_t)lo + incl;
    if (e > (uint64_t)INT64_MAX)
      return interp_fail(I, r, "array too large");
    *ext = (int64_t)e;
    return true;
  }
  uint64_t neg = (uint64_t)lo - (uint64_t)hi - incl; /* >= 0: the extent is -neg */
  if (neg == 0) {
    *ext = 0;
    return true;
  }
  return interp_fail(I, r, "negative extent -%llu", (unsigned long long)neg);
}

/* Checks that sum |a_d| * (ext_d - 1) fits in int64, so key_of never
 * overflows on points of the domain. */
static bool schedule_fits(const int64_t *a, const int64_t *ext, unsigned n) {
  int64_t bound = 0;
  for (unsigned d = 0; d < n; d++) {
    if (a[d] == INT64_MIN)
      return false;
    int64_t c = a[d] < 0 ? -a[d] : a[d], span = ext[d] > 0 ? ext[d] - 1 : 0;
    if (span && c > (INT64_MAX - bound) / span)
      return false;
    bound += c * span;
  }
  return true;
}

/* The order of evaluation: NULL for row-major (a = 0: no dependencies, a
 * single wavefront), otherwise the points sorted by (a.x, row-major). */
static bool schedule_order(interp *I, ir_ref r, const struct interp_rec *s, int64_t size,
                           rec_point **out) {
  *out = NULL;
  bool zero = true;
  for (unsigned d = 0; d < s->n; d++)
    zero = zero && s->sched[d] == 0;
  if (zero || size == 0)
    return true;
  interp_ints k;
  rec_point *pts = interp_scratch(I, r, size, sizeof *pts);
  if (!pts || !interp_ints_init(I, r, &k, s->n)) {
    ac_free(I->ctx, pts);
    return false;
  }
  for (int64_t lin = 0; lin < size; lin++) {
    pts[lin].key = key_of(s, k.p);
    pts[lin].lin = lin;
    interp_next_index(s->n, s->ext, k.p);
  }
  interp_ints_free(I, &k);
  qsort(pts, (size_t)size, sizeof *pts, cmp_point);
  *out = pts;
  return true;
}

bool interp_rec(interp *I, ir_ref r) {
  const ir_node *nd = INODE(I, r);
  unsigned n = (unsigned)nd->attr;
  if (nd->attr < 1 || nd->nkids != 2 * (uint64_t)n + 1 || nd->aux == 0 ||
      nd->aux + (uint64_t)n > I->m->nints)
    return interp_internal(I, r, "rec without bounds or schedule");
  ir_ref body = IKID(I, r, 2 * n);
  size_t base = I->sp, env0 = I->nenv;
  interp_ints v;
  if (!interp_ints_init(I, r, &v, 3 * (size_t)n))
    return false;
  int64_t *lo = v.p, *ext = v.p + n, *pt = v.p + 2 * n;
  bool ok = true;
  for (unsigned d = 0; d < n && ok; d++) {
    ir_ref lk = IKID(I, r, 2 * d), hk = IKID(I, r, 2 * d + 1);
    ok = interp_eval(I, lk) && interp_eval(I, hk);
    if (!ok)
      break;
    ir_type lt = INODE(I, lk)->type, ht = INODE(I, hk)->type;
    int64_t hi;
    ok = interp_read_ints(I, r, lt, I->sp - 2, 1, &lo[d]) &&
         interp_read_ints(I, r, ht, I->sp - 1, 1, &hi);
    I->sp = base;
    bool incl = d >= 64 || ((nd->lit.u >> d) & 1) == 0;
    ok = ok && extent(I, r, lo[d], hi, incl, &ext[d]);
  }
  ok = ok && interp_new_arrays(I, r, nd->type, n, ext);
  size_t nout = I->sp - base;
  ir_sym name = ir_binder_name(I->m, r, nd->nkids - 1, 0);
  struct interp_rec s = {
      n, lo, ext, &I->m->ints[nd->aux], 0, base, name ? ir_sym_str(I->ctx, name) : "rec"};
  int64_t size = ok ? I->stk[base].v.a->size : 0;
  if (ok && !schedule_fits(s.sched, ext, n))
    ok = interp_fail(I, r, "rec: the schedule overflows on a domain this large");
  rec_point *order = NULL;
  ok = ok && schedule_order(I, r, &s, size, &order);
  /* the body's binders: the array itself, then i1..in (in is variable 0) */
  size_t self = I->sp;
  ok = ok && interp_reserve(I, nout);
  for (size_t f = 0; f < nout && ok; f++) {
    interp_leaf l = {LK_REC, (uint32_t)f, {.r = &s}};
    I->stk[I->sp++] = l;
  }
  ok = ok && interp_env_push(I, self, nout);
  for (int64_t t = 0; t < size && ok; t++) {
    int64_t lin = order ? order[t].lin : t;
    interp_unravel(n, ext, lin, pt);
    s.cur = key_of(&s, pt);
    size_t ioff = I->sp;
    ok = interp_reserve(I, n);
    for (unsigned d = 0; d < n && ok; d++) {
      interp_leaf l = {LK_SCALAR, 0, {.s = {.i = lo[d] + pt[d]}}};
      I->stk[I->sp++] = l;
      ok = interp_env_push(I, ioff + d, 1);
    }
    ok = ok && interp_eval(I, body);
    if (ok) {
      interp_store(I, base, nout, lin, ioff + n);
      interp_drop(I, ioff);
    }
    I->nenv = env0 + 1;
  }
  I->nenv = env0;
  ac_free(I->ctx, order);
  interp_ints_free(I, &v);
  if (ok)
    I->sp = self; /* the self leaves own nothing */
  return ok;
}
