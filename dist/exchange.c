/* dist/exchange.c: the all-to-all communication primitives of the
 * distributed layer, on which the distributed operations are planned
 * (stencil halos, repartitioning, gather/backpermute, scatter/permute).
 *
 * Requests by global index (dist_fetch_rows, dist_fetch_elems) and
 * (index, value) pairs (dist_route_elems) travel the same way: each rank
 * finds the owner of each of its indices by binary search in the partition
 * (dist_owner), lays the ones owned elsewhere out by owner with a stable
 * counting sort (remembering each one's slot, so replies are unpacked into
 * the caller's order), exchanges the counts (MPI_Alltoall) and then the
 * indices (MPI_Alltoallv); a fetch sends the owners' values back with a
 * second MPI_Alltoallv, a route sends the values along with the indices.
 * What a rank asks of itself never goes through MPI: it is copied. A
 * repartition needs no requests: both partitions are known everywhere, so
 * the counts are computed and the rows move in one MPI_Alltoallv of
 * contiguous ranges.
 *
 * Values move in units of one row (fetch_rows, repartition) or one element
 * (an MPI contiguous type of that many bytes), so MPI's int counts count
 * units, not bytes; a rank that would send or receive more than INT_MAX
 * units in one exchange fails with an error saying so. As everywhere in
 * this layer, each step checks locally, agrees (dist_agree), and only then
 * moves data: a fetch or route agrees twice (before the counts, then before
 * the data, once every rank knows what it will receive), a repartition
 * once. rt->bytes_sent counts the array bytes (values) sent to other ranks,
 * not the indices nor anything a rank keeps.
 */
#include "dist_impl.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

int dist_owner(const int64_t *offsets, int size, int64_t row) {
  /* the last r with offsets[r] <= row: its block is not empty */
  int lo = 0, hi = size; /* offsets[lo] <= row < offsets[hi] */
  while (hi - lo > 1) {
    int mid = lo + (hi - lo) / 2;
    if (offsets[mid] <= row)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

/* a * b, or INT64_MAX when that overflows (both non-negative) */
static int64_t mul_sat(int64_t a, int64_t b) {
  return b != 0 && a > INT64_MAX / b ? INT64_MAX : a * b;
}

/* An MPI type of one unit of `unit` bytes (unit in [1, INT_MAX]). */
static MPI_Datatype unit_type(size_t unit) {
  MPI_Datatype dt;
  MPI_Type_contiguous((int)unit, MPI_BYTE, &dt);
  MPI_Type_commit(&dt);
  return dt;
}

/* ---- requests by owner ---- */

/* How one rank's indices travel. Index k belongs to the row k / per of the
 * partition; pos[k] is its slot in sidx (the indices owned elsewhere, by
 * owner, in the caller's order within an owner) or -1 when this rank owns
 * it. MPI's counts and displacements are in indices (and value units); a
 * rank's own entry is 0 in both directions. */
typedef struct route {
  int64_t *pos, *sidx, *ridx;
  int64_t nsend, nself, nrecv; /* sent away, kept, received from others */
  int64_t self_at;             /* route_elems: where the kept ones go among the received */
  int *scnt, *sdisp, *rcnt, *rdisp;
  int64_t *cnt; /* 2 * size: counts sent to, received from each rank */
} route;

static void route_free(route *r) {
  free(r->pos);
  free(r->sidx);
  free(r->ridx);
  free(r->scnt);
  free(r->sdisp);
  free(r->rcnt);
  free(r->rdisp);
  free(r->cnt);
}

/* Checks the indices (each in [0, bound)) and lays them out by owner.
 * Local: the caller agrees next. */
static ac_status route_plan(ac_dist_runtime *rt, route *r, const int64_t *offsets, int64_t per,
                            int64_t bound, const int64_t *idx, int64_t count, const char *fn,
                            const char *what, ac_error **err) {
  for (int64_t k = 0; k < count; k++)
    if (idx[k] < 0 || idx[k] >= bound)
      return dist_fail(rt, err, AC_ERR_RUNTIME, "%s: %s index %lld out of bounds (%lld %ss)", fn,
                       what, (long long)idx[k], (long long)bound, what);
  size_t n = (size_t)rt->size;
  r->pos = malloc((count ? (size_t)count : 1) * sizeof *r->pos);
  r->cnt = calloc(2 * n, sizeof *r->cnt);
  r->scnt = malloc(n * sizeof(int));
  r->sdisp = malloc(n * sizeof(int));
  r->rcnt = malloc(n * sizeof(int));
  r->rdisp = malloc(n * sizeof(int));
  if (!r->pos || !r->cnt || !r->scnt || !r->sdisp || !r->rcnt || !r->rdisp)
    return dist_fail(rt, err, AC_ERR_NOMEM, "%s: out of memory", fn);
  /* a stable counting sort: the owners first (in pos), then the slots */
  for (int64_t k = 0; k < count; k++) {
    int o = dist_owner(offsets, rt->size, idx[k] / per);
    r->pos[k] = o;
    r->cnt[o]++;
  }
  r->nself = r->cnt[rt->rank];
  r->cnt[rt->rank] = 0;
  int64_t at = 0;
  for (int o = 0; o < rt->size; o++) {
    int64_t c = r->cnt[o];
    if (c > INT_MAX - at)
      return dist_fail(rt, err, AC_ERR_UNSUPPORTED,
                       "%s: rank %d asks other ranks for more than %d %ss, more than one MPI "
                       "exchange holds",
                       fn, rt->rank, INT_MAX, what);
    r->scnt[o] = (int)c;
    r->sdisp[o] = (int)at;
    at += c;
  }
  r->nsend = at;
  r->sidx = malloc((at ? (size_t)at : 1) * sizeof *r->sidx);
  if (!r->sidx)
    return dist_fail(rt, err, AC_ERR_NOMEM, "%s: out of memory", fn);
  int *next = r->rcnt; /* scratch until the counts arrive */
  memcpy(next, r->sdisp, n * sizeof *next);
  for (int64_t k = 0; k < count; k++) {
    int o = (int)r->pos[k];
    if (o == rt->rank) {
      r->pos[k] = -1;
    } else {
      r->pos[k] = next[o]++;
      r->sidx[r->pos[k]] = idx[k];
    }
  }
  return AC_OK;
}

/* Exchanges the counts, then (after agreeing that every rank can take
 * what comes: at most INT_MAX indices, and its buffers) the indices into
 * r->ridx, and allocates *rvals for the values of nrecv units of `unit`
 * bytes (with room for the kept ones in rank order when self_slot).
 * Collective; returns the agreed status. */
static ac_status route_indices(ac_dist_runtime *rt, route *r, bool self_slot, size_t unit,
                               void **rvals, const char *fn, const char *what, ac_error **err) {
  int64_t *recv = r->cnt + rt->size;
  MPI_Alltoall(r->cnt, 1, MPI_INT64_T, recv, 1, MPI_INT64_T, rt->comm);
  ac_status st = AC_OK;
  int64_t at = 0;
  for (int s = 0; s < rt->size; s++) {
    if (s == rt->rank && self_slot) {
      r->self_at = at;
      at += r->nself;
    }
    if (at > INT_MAX || recv[s] > INT_MAX - at) {
      st = dist_fail(rt, err, AC_ERR_UNSUPPORTED,
                     "%s: rank %d would receive more than %d %ss, more than one MPI exchange "
                     "holds",
                     fn, rt->rank, INT_MAX, what);
      break;
    }
    r->rcnt[s] = (int)recv[s];
    r->rdisp[s] = (int)at;
    at += recv[s];
  }
  if (st == AC_OK) {
    r->nrecv = at - (self_slot ? r->nself : 0);
    size_t bytes = (size_t)at * unit;
    r->ridx = malloc((at ? (size_t)at : 1) * sizeof *r->ridx);
    *rvals = malloc(bytes ? bytes : 1);
    if (!r->ridx || !*rvals)
      st = dist_fail(rt, err, AC_ERR_NOMEM, "%s: out of memory", fn);
  }
  st = dist_agree(rt, st, err);
  if (st == AC_OK)
    MPI_Alltoallv(r->sidx, r->scnt, r->sdisp, MPI_INT64_T, r->ridx, r->rcnt, r->rdisp, MPI_INT64_T,
                  rt->comm);
  return st;
}

/* ---- fetching rows and elements ---- */

/* dist_fetch_rows (elems false: units of rows) and dist_fetch_elems
 * (elems: units of elements). */
static ac_status fetch(ac_dist_runtime *rt, const ac_dist_array *a, bool elems, const int64_t *idx,
                       int64_t count, ac_array **out, ac_error **err) {
  const char *fn = elems ? "dist_fetch_elems" : "dist_fetch_rows";
  const char *what = elems ? "element" : "row";
  ac_error *e = NULL;
  if (err)
    *err = NULL;
  *out = NULL;
  route r = {0};
  size_t row = 0, unit = 0;
  int64_t per = 1, bound = 0;
  ac_status st = AC_OK;
  if (!a || count < 0 || (count > 0 && !idx))
    st = dist_fail(rt, &e, AC_ERR_INVALID, "%s: %s", fn,
                   !a ? "the array is NULL" : "a negative count or no indices");
  else if (!dist_row_bytes(a->type, a->rank, a->extents, &row) ||
           row / ac_scalar_size(a->type) > INT64_MAX)
    st = dist_fail(rt, &e, AC_ERR_INVALID, "%s: the array is too large", fn);
  if (st == AC_OK) {
    unit = elems ? ac_scalar_size(a->type) : row;
    per = elems ? (int64_t)(row / unit) : 1;
    bound = elems ? mul_sat(a->extents[0], per) : a->extents[0];
    if (unit > INT_MAX)
      st = dist_fail(rt, &e, AC_ERR_UNSUPPORTED,
                     "%s: a row of %zu bytes is too large for one MPI message", fn, unit);
  }
  /* per 0: rows without elements, so no element index is in range */
  if (st == AC_OK)
    st = route_plan(rt, &r, a->offsets, per ? per : 1, bound, idx, count, fn, what, &e);
  const char *src = NULL;
  if (st == AC_OK && !(src = ac_array_data(a->block)) && ac_array_size(a->block) > 0)
    st = ac_array_read(a->block, NULL, 0, &e);
  void *dst = NULL, *back = NULL;
  ac_array *res = NULL;
  if (st == AC_OK) {
    int64_t one = count;
    res = elems ? dist_new_block(rt, a->type, 1, &one, count, unit, &dst, &e)
                : dist_new_block(rt, a->type, a->rank, a->extents, count, unit, &dst, &e);
    if (!res)
      st = e ? e->status : AC_ERR_NOMEM;
  }
  if (st == AC_OK && !(back = malloc(r.nsend ? (size_t)r.nsend * unit : 1)))
    st = dist_fail(rt, &e, AC_ERR_NOMEM, "%s: out of memory", fn);
  st = dist_agree(rt, st, &e);
  /* unit 0 (rows without elements): nothing to move, the shape is all */
  void *rep = NULL;
  if (st == AC_OK && unit > 0)
    st = route_indices(rt, &r, false, unit, &rep, fn, what, &e);
  if (st == AC_OK && unit > 0) {
    int64_t base = a->offsets[rt->rank] * per; /* this block's first unit */
    for (int64_t j = 0; j < r.nrecv; j++)
      memcpy((char *)rep + (size_t)j * unit, src + (size_t)(r.ridx[j] - base) * unit, unit);
    MPI_Datatype dt = unit_type(unit);
    MPI_Alltoallv(rep, r.rcnt, r.rdisp, dt, back, r.scnt, r.sdisp, dt, rt->comm);
    MPI_Type_free(&dt);
    rt->bytes_sent += (uint64_t)r.nrecv * unit;
    for (int64_t k = 0; k < count; k++) {
      const char *from = r.pos[k] < 0 ? src + (size_t)(idx[k] - base) * unit
                                      : (const char *)back + (size_t)r.pos[k] * unit;
      memcpy((char *)dst + (size_t)k * unit, from, unit);
    }
  }
  free(rep);
  free(back);
  route_free(&r);
  if (st != AC_OK) {
    ac_array_release(res);
    return ir_report(err, e, st);
  }
  *out = res;
  return AC_OK;
}

ac_status dist_fetch_rows(ac_dist_runtime *rt, const ac_dist_array *a, const int64_t *rows,
                          int64_t count, ac_array **out, ac_error **err) {
  return fetch(rt, a, false, rows, count, out, err);
}

ac_status dist_fetch_elems(ac_dist_runtime *rt, const ac_dist_array *a, const int64_t *idx,
                           int64_t count, ac_array **out, ac_error **err) {
  return fetch(rt, a, true, idx, count, out, err);
}

/* ---- routing pairs to their owners ---- */

ac_status dist_route_elems(ac_dist_runtime *rt, const int64_t *offsets, int64_t row_elems,
                           size_t elem_bytes, const int64_t *idx, const void *vals, int64_t count,
                           int64_t **ridx, void **rvals, int64_t *nrecv, ac_error **err) {
  const char *fn = "dist_route_elems";
  ac_error *e = NULL;
  if (err)
    *err = NULL;
  *ridx = NULL;
  *rvals = NULL;
  *nrecv = 0;
  route r = {0};
  ac_status st = AC_OK;
  if (!offsets || row_elems < 0 || count < 0 || (count > 0 && (!idx || (!vals && elem_bytes))))
    st = dist_fail(rt, &e, AC_ERR_INVALID, "%s: %s", fn,
                   !offsets ? "no partition" : "a negative count or size, or no pairs");
  else if (elem_bytes > INT_MAX)
    st = dist_fail(rt, &e, AC_ERR_UNSUPPORTED,
                   "%s: an element of %zu bytes is too large for one MPI message", fn, elem_bytes);
  int64_t bound = st == AC_OK ? mul_sat(offsets[rt->size], row_elems) : 0;
  if (st == AC_OK)
    st = route_plan(rt, &r, offsets, row_elems ? row_elems : 1, bound, idx, count, fn, "element",
                    &e);
  void *svals = NULL, *got = NULL;
  if (st == AC_OK && !(svals = malloc(r.nsend ? (size_t)r.nsend * elem_bytes : 1)))
    st = dist_fail(rt, &e, AC_ERR_NOMEM, "%s: out of memory", fn);
  st = dist_agree(rt, st, &e);
  if (st == AC_OK)
    st = route_indices(rt, &r, true, elem_bytes, &got, fn, "element", &e);
  if (st == AC_OK) {
    /* the kept pairs go between the lower and the higher ranks' */
    int64_t base = offsets[rt->rank] * row_elems, self = r.self_at;
    for (int64_t k = 0; k < count; k++) {
      const char *v = (const char *)vals + (size_t)k * elem_bytes;
      if (r.pos[k] >= 0) {
        memcpy((char *)svals + (size_t)r.pos[k] * elem_bytes, v, elem_bytes);
      } else {
        r.ridx[self] = idx[k];
        memcpy((char *)got + (size_t)self * elem_bytes, v, elem_bytes);
        self++;
      }
    }
    if (elem_bytes > 0) {
      MPI_Datatype dt = unit_type(elem_bytes);
      MPI_Alltoallv(svals, r.scnt, r.sdisp, dt, got, r.rcnt, r.rdisp, dt, rt->comm);
      MPI_Type_free(&dt);
      rt->bytes_sent += (uint64_t)r.nsend * elem_bytes;
    }
    int64_t n = r.nrecv + r.nself;
    for (int64_t j = 0; j < n; j++)
      r.ridx[j] -= base;
    if (n > 0) {
      *ridx = r.ridx;
      *rvals = got;
      *nrecv = n;
      r.ridx = NULL;
      got = NULL;
    }
  }
  free(got);
  free(svals);
  route_free(&r);
  return ir_report(err, e, st);
}

/* ---- repartitioning ---- */

/* Rows [lo, hi) of one partition that fall in rank r's block of another:
 * their number, and the first's offset from lo. */
static int64_t overlap(const int64_t *other, int r, int64_t lo, int64_t hi, int64_t *from) {
  int64_t a = lo > other[r] ? lo : other[r], b = hi < other[r + 1] ? hi : other[r + 1];
  *from = a - lo;
  return b > a ? b - a : 0;
}

ac_status dist_repartition(ac_dist_runtime *rt, const ac_dist_array *a, const int64_t *offsets,
                           ac_dist_array **out, ac_error **err) {
  const char *fn = "dist_repartition";
  ac_error *e = NULL;
  if (err)
    *err = NULL;
  *out = NULL;
  ac_status st = AC_OK;
  int me = rt->rank, size = rt->size;
  if (!a || !offsets)
    st = dist_fail(rt, &e, AC_ERR_INVALID, "%s: %s", fn, !a ? "the array is NULL" : "no partition");
  for (int r = 0; st == AC_OK && r < size; r++)
    if (offsets[r] > offsets[r + 1])
      st = dist_fail(rt, &e, AC_ERR_INVALID, "%s: the partition decreases at rank %d", fn, r + 1);
  if (st == AC_OK && (offsets[0] != 0 || offsets[size] != a->extents[0]))
    st = dist_fail(rt, &e, AC_ERR_INVALID,
                   "%s: the partition covers rows [%lld, %lld), the array has %lld", fn,
                   (long long)offsets[0], (long long)offsets[size], (long long)a->extents[0]);
  size_t row = 0;
  if (st == AC_OK && !dist_row_bytes(a->type, a->rank, a->extents, &row))
    st = dist_fail(rt, &e, AC_ERR_INVALID, "%s: the array is too large", fn);
  int64_t lo = 0, hi = 0, nlo = 0, nhi = 0;
  if (st == AC_OK) {
    lo = a->offsets[me], hi = a->offsets[me + 1], nlo = offsets[me], nhi = offsets[me + 1];
    if (row > INT_MAX)
      st = dist_fail(rt, &e, AC_ERR_UNSUPPORTED,
                     "%s: a row of %zu bytes is too large for one MPI message", fn, row);
    else if (hi - lo > INT_MAX || nhi - nlo > INT_MAX)
      st = dist_fail(rt, &e, AC_ERR_UNSUPPORTED,
                     "%s: rank %d's block of %lld rows is too large for one MPI exchange", fn, me,
                     (long long)(hi - lo > INT_MAX ? hi - lo : nhi - nlo));
  }
  const char *src = NULL;
  if (st == AC_OK && !(src = ac_array_data(a->block)) && ac_array_size(a->block) > 0)
    st = ac_array_read(a->block, NULL, 0, &e);
  size_t n = (size_t)size;
  int *scnt = malloc(n * sizeof(int)), *sdisp = malloc(n * sizeof(int));
  int *rcnt = malloc(n * sizeof(int)), *rdisp = malloc(n * sizeof(int));
  if (st == AC_OK && (!scnt || !sdisp || !rcnt || !rdisp))
    st = dist_fail(rt, &e, AC_ERR_NOMEM, "%s: out of memory", fn);
  void *dst = NULL;
  ac_array *block = NULL;
  if (st == AC_OK &&
      !(block = dist_new_block(rt, a->type, a->rank, a->extents, nhi - nlo, row, &dst, &e)))
    st = e ? e->status : AC_ERR_NOMEM;
  /* made now, so that nothing can fail once the rows have moved */
  if (st == AC_OK && !(*out = dist_array_make(rt, a->type, a->rank, a->extents, offsets, block))) {
    block = NULL; /* released by dist_array_make */
    st = dist_fail(rt, &e, AC_ERR_NOMEM, "%s: out of memory", fn);
  }
  st = dist_agree(rt, st, &e);
  if (st == AC_OK && row > 0) {
    uint64_t sent = 0;
    for (int r = 0; r < size; r++) {
      int64_t from;
      scnt[r] = (int)overlap(offsets, r, lo, hi, &from); /* my rows that go to r */
      sdisp[r] = (int)from;
      rcnt[r] = (int)overlap(a->offsets, r, nlo, nhi, &from); /* r's rows that come to me */
      rdisp[r] = (int)from;
      if (r != me)
        sent += (uint64_t)scnt[r];
    }
    /* the rows that stay are copied, not sent */
    if (scnt[me] > 0)
      memcpy((char *)dst + (size_t)rdisp[me] * row, src + (size_t)sdisp[me] * row,
             (size_t)scnt[me] * row);
    scnt[me] = rcnt[me] = 0;
    MPI_Datatype dt = unit_type(row);
    static const char none[1];
    MPI_Alltoallv(src ? src : none, scnt, sdisp, dt, dst, rcnt, rdisp, dt, rt->comm);
    MPI_Type_free(&dt);
    rt->bytes_sent += sent * row;
  }
  free(scnt);
  free(sdisp);
  free(rcnt);
  free(rdisp);
  if (st != AC_OK) {
    if (*out)
      ac_dist_array_destroy(*out);
    else
      ac_array_release(block);
    *out = NULL;
  }
  return ir_report(err, e, st);
}
