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
 *
 * A rank whose block lives on its GPU only (a GPU call's result, its host
 * elements never fetched: dist_on_device) never brings the whole block to
 * the host for them: fetches and repartitions copy the units they move,
 * in runs of consecutive units (dist_runs), device to device into memory
 * MPI reads and writes when MPI is CUDA-aware, else through the pinned
 * staging buffers (staging.c); the rows and elements it keeps are copied
 * device to device, and what it receives is a device array, for its
 * backend's next call. Scattered units (many runs, dist_few_runs) are
 * picked on the host from one copy of the block instead. Every other rank
 * (the CPU, a block whose host elements are valid) works on host memory
 * as above. Since a copy to or from a device can fail after the
 * agreement, a job in which some rank has a GPU (rt->any_gpu) agrees once
 * more after the data moved.
 */
#include "dist_impl.h"

#include <limits.h>
#include <stdint.h>
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
 * bytes (with room for the kept ones in rank order when self_slot;
 * staged: the send staging buffer, which the caller does not free).
 * Collective; returns the agreed status. */
static ac_status route_indices(ac_dist_runtime *rt, route *r, bool self_slot, bool staged,
                               size_t unit, void **rvals, const char *fn, const char *what,
                               ac_error **err) {
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
    if (!r->ridx)
      st = dist_fail(rt, err, AC_ERR_NOMEM, "%s: out of memory", fn);
    else if (staged) /* the send staging buffer (the runtime's) */
      st = (*rvals = dist_stage_get(rt, DIST_STAGE_SEND, bytes, err)) ? AC_OK : AC_ERR_NOMEM;
    else if (!(*rvals = malloc(bytes ? bytes : 1)))
      st = dist_fail(rt, err, AC_ERR_NOMEM, "%s: out of memory", fn);
  }
  st = dist_agree(rt, st, err);
  if (st == AC_OK)
    MPI_Alltoallv(r->sidx, r->scnt, r->sdisp, MPI_INT64_T, r->ridx, r->rcnt, r->rdisp, MPI_INT64_T,
                  rt->comm);
  return st;
}

/* ---- fetching rows and elements ---- */

/* ---- fetching from a block on the device ---- */

/* The device side of a fetch, on a rank whose block lives on its GPU only
 * (dist_on_device). The result is device memory, wrapped as the result
 * array before any data moves (so that nothing but a copy can fail
 * afterwards); its units come in runs (dist_runs: consecutive units from
 * the same place) from the block (source 0, copied device to device) and
 * from the units other ranks send (source 1). While the runs are few
 * (dist_few_runs) each run is one copy: the received units arrive in
 * device memory (CUDA-aware MPI) or in the receive staging buffer
 * (copied up run by run); else the result is assembled on the host in the
 * receive staging buffer and copied up at once. The units this rank sends
 * are copied from the block run by run, device to device into a buffer MPI
 * reads (CUDA-aware) or device to host into the send staging buffer, or,
 * when their runs are many, picked on the host from one copy of the whole
 * block. */
typedef struct fetch_dev {
  rt_dptr block;  /* the block's device elements */
  size_t bytes;   /* the block's bytes */
  size_t rbytes;  /* the result's bytes */
  dist_runs runs; /* the result's, in its order */
  bool few;       /* copied run by run (else assembled on the host) */
  rt_dptr res;    /* the result's device memory (the result array owns it) */
  rt_dptr got;    /* the received units in device memory (CUDA-aware, few; ours) */
  void *back;     /* or in the receive staging buffer */
  void *image;    /* the result assembled on the host (not few), after back */
  rt_dptr sent;   /* the units sent, in device memory (CUDA-aware; ours) */
} fetch_dev;

/* Before the agreement: the runs, the result (wrapping device memory, in
 * *res) and the place the received units land. Local. */
static ac_status dev_begin(ac_dist_runtime *rt, fetch_dev *x, const route *r, const int64_t *idx,
                           int64_t count, size_t unit, int64_t base, ac_scalar type, unsigned rank,
                           const int64_t *extents, ac_array **res, const char *fn, ac_error **err) {
  rt_gpu *g = rt->gpu;
  size_t R = (size_t)count * unit, Q = (size_t)r->nsend * unit;
  if ((count > 0 && R / (size_t)count != unit) || Q > SIZE_MAX - R)
    return dist_fail(rt, err, AC_ERR_NOMEM, "%s: %lld units do not fit in memory", fn,
                     (long long)count);
  x->rbytes = R;
  for (int64_t k = 0; k < count; k++) {
    bool mine = r->pos[k] < 0;
    size_t from = (size_t)(mine ? idx[k] - base : r->pos[k]) * unit;
    if (!dist_runs_add(&x->runs, mine ? 0 : 1, (size_t)k * unit, from, unit))
      return dist_fail(rt, err, AC_ERR_NOMEM, "%s: out of memory", fn);
  }
  x->few = dist_few_runs(x->runs.n, R);
  ac_status st = R ? g->ops->alloc(g, R, &x->res, err) : AC_OK;
  if (st != AC_OK)
    return st;
  int64_t ext[64];
  memcpy(ext, extents, rank * sizeof *ext);
  ext[0] = count;
  if ((st = rt_resid_wrap(rt->ctx, g, type, rank, ext, x->res, res, err)) != AC_OK)
    return st; /* x->res freed */
  if (x->few && rt->cuda_aware) {
    if (Q > 0 && (st = g->ops->alloc(g, Q, &x->got, err)) == AC_OK)
      st = g->ops->sync(g, err); /* MPI writes once the allocation exists */
    return st;
  }
  if (!(x->back = dist_stage_get(rt, DIST_STAGE_RECV, Q + (x->few ? 0 : R), err)))
    return AC_ERR_NOMEM;
  if (!x->few)
    x->image = (char *)x->back + Q;
  return AC_OK;
}

/* After the agreement, before the values move: the units other ranks
 * asked for (r->ridx), from the block to where MPI reads them (*from;
 * rep, the send staging buffer, unless they are on the device). On
 * failure *from is rep, which MPI may read all the same. Local. */
static ac_status dev_send(ac_dist_runtime *rt, fetch_dev *x, const route *r, int64_t base,
                          size_t unit, void *rep, const void **from, const char *fn,
                          ac_error **err) {
  *from = rep;
  if (r->nrecv == 0)
    return AC_OK;
  rt_gpu *g = rt->gpu;
  dist_runs l = {NULL, 0, 0};
  ac_status st = AC_OK;
  for (int64_t j = 0; st == AC_OK && j < r->nrecv; j++)
    if (!dist_runs_add(&l, 0, (size_t)j * unit, (size_t)(r->ridx[j] - base) * unit, unit))
      st = dist_fail(rt, err, AC_ERR_NOMEM, "%s: out of memory", fn);
  dist_place block = {NULL, x->block}, host = {rep, 0};
  if (st == AC_OK && dist_few_runs(l.n, x->bytes)) {
    if (rt->cuda_aware) {
      st = g->ops->alloc(g, (size_t)r->nrecv * unit, &x->sent, err);
      if (st == AC_OK)
        st = dist_runs_copy(rt, &l, -1, (dist_place){NULL, x->sent}, block, err);
      if (st == AC_OK && (st = g->ops->sync(g, err)) == AC_OK) /* before MPI reads */
        *from = (const void *)(uintptr_t)x->sent;
    } else {
      st = dist_runs_copy(rt, &l, -1, host, block, err);
    }
  } else if (st == AC_OK) {
    void *whole = dist_stage_get(rt, DIST_STAGE_BLOCK, x->bytes, err);
    st = whole ? g->ops->dtoh(g, whole, x->block, x->bytes, err) : AC_ERR_NOMEM;
    if (st == AC_OK)
      st = dist_runs_copy(rt, &l, -1, host, (dist_place){whole, 0}, err);
  }
  dist_runs_free(&l);
  return st;
}

/* After the values moved: the result's runs into its device memory. */
static ac_status dev_finish(ac_dist_runtime *rt, fetch_dev *x, ac_error **err) {
  rt_gpu *g = rt->gpu;
  dist_place res = {NULL, x->res}, block = {NULL, x->block};
  ac_status st;
  if (x->few) {
    dist_place got = x->back ? (dist_place){x->back, 0} : (dist_place){NULL, x->got};
    st = dist_runs_copy(rt, &x->runs, 0, res, block, err);
    if (st == AC_OK)
      st = dist_runs_copy(rt, &x->runs, 1, res, got, err);
    /* the queued copies read the staging buffer: wait before it is reused */
    if (st == AC_OK && x->back && dist_runs_count(&x->runs, 1) > 0)
      st = g->ops->sync(g, err);
    return st;
  }
  dist_place image = {x->image, 0};
  st = dist_runs_copy(rt, &x->runs, 1, image, (dist_place){x->back, 0}, err);
  size_t mine = dist_runs_count(&x->runs, 0);
  if (st == AC_OK && mine > 0) {
    if (dist_few_runs(mine, x->bytes)) {
      st = dist_runs_copy(rt, &x->runs, 0, image, block, err);
    } else {
      void *whole = dist_stage_get(rt, DIST_STAGE_BLOCK, x->bytes, err);
      st = whole ? g->ops->dtoh(g, whole, x->block, x->bytes, err) : AC_ERR_NOMEM;
      if (st == AC_OK)
        st = dist_runs_copy(rt, &x->runs, 0, image, (dist_place){whole, 0}, err);
    }
  }
  if (st == AC_OK && x->rbytes > 0 &&
      (st = g->ops->htod(g, x->res, x->image, x->rbytes, err)) == AC_OK)
    st = g->ops->sync(g, err);
  return st;
}

static void dev_free(ac_dist_runtime *rt, fetch_dev *x) {
  if (x->got)
    rt->gpu->ops->free(rt->gpu, x->got);
  if (x->sent)
    rt->gpu->ops->free(rt->gpu, x->sent);
  dist_runs_free(&x->runs);
}

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
  /* a block on the device only: the device side (fetch_dev above) */
  rt_dptr bd = 0;
  bool dev = st == AC_OK && unit > 0 && dist_on_device(rt, a->block, &bd);
  fetch_dev x = {.block = bd};
  const char *src = NULL;
  if (st == AC_OK && !dev && !(src = ac_array_data(a->block)) && ac_array_size(a->block) > 0)
    st = ac_array_read(a->block, NULL, 0, &e);
  void *dst = NULL, *back = NULL;
  ac_array *res = NULL;
  int64_t one = count;
  int64_t base = st == AC_OK ? a->offsets[rt->rank] * per : 0; /* the block's first unit */
  if (st == AC_OK && dev) {
    x.bytes = (size_t)ac_array_size(a->block) * ac_scalar_size(a->type);
    st = elems ? dev_begin(rt, &x, &r, idx, count, unit, base, a->type, 1, &one, &res, fn, &e)
               : dev_begin(rt, &x, &r, idx, count, unit, base, a->type, a->rank, a->extents, &res,
                           fn, &e);
  } else if (st == AC_OK) {
    res = elems ? dist_new_block(rt, a->type, 1, &one, count, unit, &dst, &e)
                : dist_new_block(rt, a->type, a->rank, a->extents, count, unit, &dst, &e);
    if (!res)
      st = e ? e->status : AC_ERR_NOMEM;
  }
  if (st == AC_OK && !dev && !(back = malloc(r.nsend ? (size_t)r.nsend * unit : 1)))
    st = dist_fail(rt, &e, AC_ERR_NOMEM, "%s: out of memory", fn);
  st = dist_agree(rt, st, &e);
  /* unit 0 (rows without elements): nothing to move, the shape is all */
  void *rep = NULL;
  if (st == AC_OK && unit > 0)
    st = route_indices(rt, &r, false, dev, unit, &rep, fn, what, &e);
  ac_status moved = AC_OK; /* this rank's copies once the exchange began */
  if (st == AC_OK && unit > 0 && dev) {
    const void *from = rep;
    moved = dev_send(rt, &x, &r, base, unit, rep, &from, fn, &e);
    static const char none[1];
    void *to = x.back ? x.back : x.got ? (void *)(uintptr_t)x.got : (void *)none;
    MPI_Datatype dt = unit_type(unit);
    MPI_Alltoallv(from, r.rcnt, r.rdisp, dt, to, r.scnt, r.sdisp, dt, rt->comm);
    MPI_Type_free(&dt);
    rt->bytes_sent += (uint64_t)r.nrecv * unit;
    if (moved == AC_OK)
      moved = dev_finish(rt, &x, &e);
  } else if (st == AC_OK && unit > 0) {
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
  /* with a GPU on some rank, a copy may have failed after the agreement */
  if (st == AC_OK && unit > 0 && rt->any_gpu)
    st = dist_agree(rt, moved, &e);
  if (!dev) /* else the send staging buffer */
    free(rep);
  free(back);
  dev_free(rt, &x);
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
    st = route_indices(rt, &r, true, false, elem_bytes, &got, fn, "element", &e);
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

/* Rows [lo, hi) of a block whose first row is `first`, as a run at the
 * same offset of two images of the block (rows of `row` bytes). */
static bool add_rows(dist_runs *l, int64_t lo, int64_t hi, int64_t first, size_t row) {
  size_t at = (size_t)(lo - first) * row;
  return hi <= lo || dist_runs_add(l, 0, at, at, (size_t)(hi - lo) * row);
}

/* The device side of a repartition, on a rank whose block lives on its
 * GPU only: the new block is device memory (*nd, wrapped as *block before
 * anything moves); with CUDA-aware MPI the rows are sent from the old
 * block's device memory and received into the new one, else the send and
 * receive staging buffers hold images of the old and the new block in
 * which only the rows that leave, or arrive, are copied. Local. */
static ac_status repart_begin(ac_dist_runtime *rt, const ac_dist_array *a, int64_t rows, size_t row,
                              int64_t old_rows, ac_array **block, rt_dptr *nd, void **simg,
                              void **rimg, const char *fn, ac_error **err) {
  rt_gpu *g = rt->gpu;
  size_t bytes = (size_t)rows * row;
  if (rows > 0 && bytes / (size_t)rows != row)
    return dist_fail(rt, err, AC_ERR_NOMEM, "%s: a block of %lld rows does not fit in memory", fn,
                     (long long)rows);
  ac_status st = bytes ? g->ops->alloc(g, bytes, nd, err) : AC_OK;
  if (st != AC_OK)
    return st;
  int64_t ext[64];
  memcpy(ext, a->extents, a->rank * sizeof *ext);
  ext[0] = rows;
  /* on failure rt_resid_wrap frees *nd */
  if ((st = rt_resid_wrap(rt->ctx, g, a->type, a->rank, ext, *nd, block, err)) != AC_OK)
    return st;
  /* CUDA-aware: MPI reads the old block and writes the new one once they exist */
  if (rt->cuda_aware)
    return g->ops->sync(g, err);
  if (!(*simg = dist_stage_get(rt, DIST_STAGE_SEND, (size_t)old_rows * row, err)) ||
      !(*rimg = dist_stage_get(rt, DIST_STAGE_RECV, bytes, err)))
    return AC_ERR_NOMEM;
  return AC_OK;
}

/* After the agreement: this rank's rows of a repartition on the device
 * (the old block [lo, hi) at bd, the new [nlo, nhi) at nd; the counts as
 * MPI takes them, this rank's own entries still set). */
static ac_status repart_move(ac_dist_runtime *rt, rt_dptr bd, rt_dptr nd, void *simg, void *rimg,
                             int64_t lo, int64_t hi, int64_t nlo, int64_t nhi, size_t row,
                             int *scnt, int *sdisp, int *rcnt, int *rdisp, ac_error **err) {
  rt_gpu *g = rt->gpu;
  int me = rt->rank;
  ac_status st = AC_OK;
  /* the rows that stay: device to device */
  if (scnt[me] > 0)
    st = g->ops->dtod(g, nd + (size_t)rdisp[me] * row, bd + (size_t)sdisp[me] * row,
                      (size_t)scnt[me] * row, err);
  scnt[me] = rcnt[me] = 0;
  static const char none[1];
  const void *from = none;
  void *to = (void *)none;
  dist_runs out = {NULL, 0, 0}, in = {NULL, 0, 0};
  if (rt->cuda_aware) {
    if (bd)
      from = (const void *)(uintptr_t)bd;
    if (nd)
      to = (void *)(uintptr_t)nd;
  } else {
    from = simg;
    to = rimg;
    /* the rows that leave: the old block's outside [nlo, nhi); those that
     * arrive: the new block's outside [lo, hi) */
    if (!add_rows(&out, lo, hi < nlo ? hi : nlo, lo, row) ||
        !add_rows(&out, lo > nhi ? lo : nhi, hi, lo, row) ||
        !add_rows(&in, nlo, nhi < lo ? nhi : lo, nlo, row) ||
        !add_rows(&in, nlo > hi ? nlo : hi, nhi, nlo, row))
      st = dist_fail(rt, err, AC_ERR_NOMEM, "dist_repartition: out of memory");
    if (st == AC_OK)
      st = dist_runs_copy(rt, &out, -1, (dist_place){simg, 0}, (dist_place){NULL, bd}, err);
  }
  MPI_Datatype dt = unit_type(row);
  MPI_Alltoallv(from, scnt, sdisp, dt, to, rcnt, rdisp, dt, rt->comm);
  MPI_Type_free(&dt);
  if (st == AC_OK && in.n > 0 &&
      (st = dist_runs_copy(rt, &in, -1, (dist_place){NULL, nd}, (dist_place){rimg, 0}, err)) ==
          AC_OK)
    st = g->ops->sync(g, err); /* the copies read the staging buffer */
  dist_runs_free(&out);
  dist_runs_free(&in);
  return st;
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
  rt_dptr bd = 0, nd = 0;
  bool dev = st == AC_OK && row > 0 && dist_on_device(rt, a->block, &bd);
  void *simg = NULL, *rimg = NULL;
  const char *src = NULL;
  if (st == AC_OK && !dev && !(src = ac_array_data(a->block)) && ac_array_size(a->block) > 0)
    st = ac_array_read(a->block, NULL, 0, &e);
  size_t n = (size_t)size;
  int *scnt = malloc(n * sizeof(int)), *sdisp = malloc(n * sizeof(int));
  int *rcnt = malloc(n * sizeof(int)), *rdisp = malloc(n * sizeof(int));
  if (st == AC_OK && (!scnt || !sdisp || !rcnt || !rdisp))
    st = dist_fail(rt, &e, AC_ERR_NOMEM, "%s: out of memory", fn);
  void *dst = NULL;
  ac_array *block = NULL;
  if (st == AC_OK && dev)
    st = repart_begin(rt, a, nhi - nlo, row, hi - lo, &block, &nd, &simg, &rimg, fn, &e);
  else if (st == AC_OK &&
           !(block = dist_new_block(rt, a->type, a->rank, a->extents, nhi - nlo, row, &dst, &e)))
    st = e ? e->status : AC_ERR_NOMEM;
  /* made now, so that nothing can fail once the rows have moved */
  if (st == AC_OK && !(*out = dist_array_make(rt, a->type, a->rank, a->extents, offsets, block))) {
    block = NULL; /* released by dist_array_make */
    st = dist_fail(rt, &e, AC_ERR_NOMEM, "%s: out of memory", fn);
  }
  st = dist_agree(rt, st, &e);
  ac_status moved = AC_OK; /* this rank's copies once the exchange began */
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
    if (dev) {
      moved =
          repart_move(rt, bd, nd, simg, rimg, lo, hi, nlo, nhi, row, scnt, sdisp, rcnt, rdisp, &e);
    } else {
      /* the rows that stay are copied, not sent */
      if (scnt[me] > 0)
        memcpy((char *)dst + (size_t)rdisp[me] * row, src + (size_t)sdisp[me] * row,
               (size_t)scnt[me] * row);
      scnt[me] = rcnt[me] = 0;
      MPI_Datatype dt = unit_type(row);
      static const char none[1];
      MPI_Alltoallv(src ? src : none, scnt, sdisp, dt, dst, rcnt, rdisp, dt, rt->comm);
      MPI_Type_free(&dt);
    }
    rt->bytes_sent += sent * row;
  }
  /* with a GPU on some rank, a copy may have failed after the agreement */
  if (st == AC_OK && row > 0 && rt->any_gpu)
    st = dist_agree(rt, moved, &e);
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
