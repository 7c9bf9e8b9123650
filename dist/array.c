/* dist/array.c: distributed arrays and the partition rule.
 *
 * A distributed array is its global shape, the partition of its outermost
 * dimension (size + 1 row offsets, in rank order) and this rank's block, an
 * ordinary ac_array of the block's rows. Data moves in units of rows: an
 * MPI contiguous type of one row's bytes, so that counts (MPI's ints) count
 * rows, not bytes. Every function checks locally, agrees (dist_agree), and
 * only then communicates, so that a failure anywhere never leaves a rank
 * waiting in a collective the others skipped.
 */
#include "dist_impl.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

void ac_dist_partition(int64_t n, int nranks, int r, int64_t *lo, int64_t *hi) {
  /* r*n/R without overflow for any n below 2^63 and R below 2^31 */
  int64_t q = n / nranks, m = n % nranks;
  *lo = q * r + m * r / nranks;
  *hi = q * (r + 1) + m * (r + 1) / nranks;
}

bool dist_row_bytes(ac_scalar type, unsigned rank, const int64_t *extents, size_t *out) {
  size_t n = ac_scalar_size(type);
  for (unsigned d = 1; d < rank; d++) {
    if (extents[d] < 0 || (extents[d] > 0 && n > SIZE_MAX / (size_t)extents[d]))
      return false;
    n *= (size_t)extents[d];
  }
  *out = n;
  return true;
}

ac_dist_array *dist_array_make(ac_dist_runtime *rt, ac_scalar type, unsigned rank,
                               const int64_t *extents, const int64_t *offsets, ac_array *block) {
  ac_context *ctx = rt->ctx;
  ac_dist_array *a = ac_alloc(ctx, sizeof *a);
  int64_t *ext = ac_alloc(ctx, rank * sizeof *ext);
  int64_t *off = ac_alloc(ctx, ((size_t)rt->size + 1) * sizeof *off);
  if (!a || !ext || !off) {
    ac_free(ctx, a);
    ac_free(ctx, ext);
    ac_free(ctx, off);
    ac_array_release(block);
    return NULL;
  }
  memcpy(ext, extents, rank * sizeof *ext);
  memcpy(off, offsets, ((size_t)rt->size + 1) * sizeof *off);
  *a = (ac_dist_array){rt, type, rank, ext, off, block};
  return a;
}

void ac_dist_array_destroy(ac_dist_array *a) {
  if (!a)
    return;
  ac_context *ctx = a->rt->ctx;
  ac_array_release(a->block);
  ac_free(ctx, a->extents);
  ac_free(ctx, a->offsets);
  ac_free(ctx, a);
}

ac_scalar ac_dist_array_type(const ac_dist_array *a) {
  return a->type;
}
unsigned ac_dist_array_rank(const ac_dist_array *a) {
  return a->rank;
}
const int64_t *ac_dist_array_extents(const ac_dist_array *a) {
  return a->extents;
}
ac_array *ac_dist_array_block(const ac_dist_array *a) {
  return a->block;
}
const int64_t *ac_dist_array_offsets(const ac_dist_array *a) {
  return a->offsets;
}

/* ---- helpers ---- */

ac_array *dist_rows(ac_context *ctx, const ac_array *a, int64_t lo, int64_t hi, ac_error **err) {
  unsigned rank = ac_array_rank(a);
  int64_t ext[64];
  if (rank > 64) {
    *err = ir_error(ctx, AC_ERR_UNSUPPORTED, NULL, (ir_loc){0, 0},
                    "arrays of more than 64 dimensions are not distributed");
    return NULL;
  }
  memcpy(ext, ac_array_extents(a), rank * sizeof *ext);
  size_t row;
  dist_row_bytes(ac_array_type(a), rank, ext, &row); /* a exists: its size fits */
  /* an array on a device only (a GPU call's result): the rows are copied
   * there, into a new device array, and never cross to the host */
  rt_gpu *g = rt_resid_gpu(a);
  rt_dptr d = g ? rt_resid_dptr(a, g) : 0;
  if (d && !rt_resid_host_valid(a)) {
    size_t bytes = (size_t)(hi - lo) * row;
    rt_dptr to = 0;
    ac_status st = bytes ? g->ops->alloc(g, bytes, &to, err) : AC_OK;
    if (st == AC_OK && bytes &&
        (st = g->ops->dtod(g, to, d + (size_t)lo * row, bytes, err)) != AC_OK)
      g->ops->free(g, to);
    ac_array *out = NULL;
    ext[0] = hi - lo;
    if (st == AC_OK)
      rt_resid_wrap(ctx, g, ac_array_type(a), rank, ext, to, &out, err); /* frees to on failure */
    return out;
  }
  const char *data = ac_array_data(a);
  if (!data && ac_array_size(a) > 0) {
    /* a device array that could not be fetched: ac_array_read says why */
    ac_array_read(a, NULL, 0, err);
    return NULL;
  }
  ext[0] = hi - lo;
  return ac_array_create(ctx, ac_array_type(a), rank, ext, data ? data + (size_t)lo * row : NULL,
                         err);
}

ac_array *dist_new_block(ac_dist_runtime *rt, ac_scalar type, unsigned rank, const int64_t *extents,
                         int64_t rows, size_t row, void **data, ac_error **err) {
  int64_t ext[64];
  memcpy(ext, extents, rank * sizeof *ext);
  ext[0] = rows;
  size_t bytes = (size_t)rows * row;
  if (rows > 0 && bytes / (size_t)rows != row) {
    dist_fail(rt, err, AC_ERR_NOMEM, "a block of %lld rows does not fit in memory",
              (long long)rows);
    return NULL;
  }
  /* the runtime's own arrays come from the context's cache of large
   * blocks (lib/ir/blockcache.c), already mapped: fresh pages cost far
   * more than writing them, step after step */
  ac_array *a = ac_array_create(rt->ctx, type, rank, ext, NULL, err);
  if (!a)
    return NULL;
  *data = (void *)ac_array_data(a); /* a new host array: ours to fill */
  return a;
}

/* Checks that rows of `row` bytes and every rank's row count fit MPI's
 * int counts; the same answer on every rank (it depends only on the shape
 * and the partition). */
static ac_status check_counts(ac_dist_runtime *rt, size_t row, const int64_t *offsets,
                              ac_error **err) {
  if (row > INT_MAX)
    return dist_fail(rt, err, AC_ERR_UNSUPPORTED,
                     "a row of %zu bytes is too large for one MPI message", row);
  for (int r = 0; r < rt->size; r++)
    if (offsets[r + 1] - offsets[r] > INT_MAX)
      return dist_fail(rt, err, AC_ERR_UNSUPPORTED,
                       "a block of %lld rows is too large for one MPI message",
                       (long long)(offsets[r + 1] - offsets[r]));
  return AC_OK;
}

/* Row counts and displacements of the partition, as MPI takes them. */
static bool counts(ac_dist_runtime *rt, const int64_t *offsets, int **cnt, int **disp) {
  *cnt = malloc((size_t)rt->size * sizeof **cnt);
  *disp = malloc((size_t)rt->size * sizeof **disp);
  if (!*cnt || !*disp) {
    free(*cnt);
    free(*disp);
    return false;
  }
  for (int r = 0; r < rt->size; r++) {
    (*cnt)[r] = (int)(offsets[r + 1] - offsets[r]);
    (*disp)[r] = (int)offsets[r]; /* the total fits when the array exists on some rank */
  }
  return true;
}

/* The partition rule's offsets for n rows (size + 1 entries, caller frees). */
static int64_t *rule_offsets(ac_dist_runtime *rt, int64_t n) {
  int64_t *off = malloc(((size_t)rt->size + 1) * sizeof *off);
  if (!off)
    return NULL;
  for (int r = 0; r < rt->size; r++) {
    int64_t hi;
    ac_dist_partition(n, rt->size, r, &off[r], &hi);
  }
  off[rt->size] = n;
  return off;
}

/* The shape header that scatter and from_full exchange: type, rank, extents. */
typedef struct shape {
  int64_t type, rank, ext[64];
} shape;

static ac_status shape_of(ac_dist_runtime *rt, const ac_array *a, shape *s, ac_error **err) {
  if (!a)
    return dist_fail(rt, err, AC_ERR_INVALID, "the array to distribute is NULL");
  s->type = ac_array_type(a);
  s->rank = ac_array_rank(a);
  if (s->rank > 64)
    return dist_fail(rt, err, AC_ERR_UNSUPPORTED,
                     "arrays of more than 64 dimensions are not distributed");
  memcpy(s->ext, ac_array_extents(a), (size_t)s->rank * sizeof *s->ext);
  return AC_OK;
}

/* Sends root's shape to every rank (collective). */
static void bcast_shape(ac_dist_runtime *rt, shape *s, int root) {
  MPI_Bcast(s, (int)(sizeof *s / sizeof(int64_t)), MPI_INT64_T, root, rt->comm);
}

/* The end of making a distributed array: off freed, the outcome agreed on
 * every rank, and *out destroyed unless every rank succeeded. */
static ac_status finish_make(ac_dist_runtime *rt, ac_status st, ac_error *e, int64_t *off,
                             ac_dist_array **out, ac_error **err) {
  free(off);
  st = dist_agree(rt, st, &e);
  if (st != AC_OK) {
    ac_dist_array_destroy(*out);
    *out = NULL;
  }
  return ir_report(err, e, st);
}

/* ---- making and collecting ---- */

/* Gives every rank the block of rows of `full` (root's) its offsets say:
 * the scatter behind ac_dist_array_scatter_from; offsets and shape agree
 * on every rank. Root sends and each rank receives where staging.c says
 * (device memory on a GPU rank: the block is for its backend). A failure
 * after the data moved is local: the caller agrees (finish_make). */
static ac_status scatter_rows(ac_dist_runtime *rt, const ac_array *full, int root, const shape *s,
                              const int64_t *off, ac_dist_array **out, ac_error **err) {
  size_t row = 0;
  ac_status st = dist_row_bytes((ac_scalar)s->type, (unsigned)s->rank, s->ext, &row)
                     ? check_counts(rt, row, off, err)
                     : dist_fail(rt, err, AC_ERR_INVALID, "the array is too large");
  dist_recv r = {0};
  bool receiving = false;
  const void *src = NULL;
  if (st == AC_OK)
    receiving =
        (st = dist_recv_begin(rt, (ac_scalar)s->type, (unsigned)s->rank, s->ext,
                              off[rt->rank + 1] - off[rt->rank], row, true, &r, err)) == AC_OK;
  if (st == AC_OK && rt->rank == root)
    st = dist_send_from(rt, full, &src, err);
  int *cnt = NULL, *disp = NULL;
  if (st == AC_OK && !counts(rt, off, &cnt, &disp))
    st = dist_fail(rt, err, AC_ERR_NOMEM, "out of memory");
  st = dist_agree(rt, st, err);
  if (st == AC_OK && row > 0) {
    MPI_Datatype dt;
    MPI_Type_contiguous((int)row, MPI_BYTE, &dt);
    MPI_Type_commit(&dt);
    static const char none[1];
    MPI_Scatterv(src ? src : none, cnt, disp, dt, r.data ? r.data : (void *)none, cnt[rt->rank], dt,
                 root, rt->comm);
    MPI_Type_free(&dt);
    if (rt->rank == root)
      rt->bytes_sent += (uint64_t)(off[rt->size] - cnt[root]) * row;
  }
  free(cnt);
  free(disp);
  ac_array *block = NULL;
  if (st == AC_OK)
    st = dist_recv_end(rt, &r, &block, err);
  else if (receiving)
    dist_recv_abandon(rt, &r);
  if (st != AC_OK)
    return st;
  *out = dist_array_make(rt, (ac_scalar)s->type, (unsigned)s->rank, s->ext, off, block);
  return *out ? AC_OK : dist_fail(rt, err, AC_ERR_NOMEM, "out of memory");
}

ac_status ac_dist_array_scatter_from(ac_dist_runtime *rt, const ac_array *full, int root,
                                     ac_dist_array **out, ac_error **err) {
  ac_error *e = NULL;
  if (err)
    *err = NULL;
  *out = NULL;
  if (root < 0 || root >= rt->size) /* the same on every rank */
    return dist_fail(rt, err, AC_ERR_INVALID, "scatter from rank %d of %d", root, rt->size);
  shape s = {0, 0, {0}};
  ac_status st = rt->rank == root ? shape_of(rt, full, &s, &e) : AC_OK;
  st = dist_agree(rt, st, &e);
  if (st != AC_OK)
    return ir_report(err, e, st);
  bcast_shape(rt, &s, root);
  int64_t *off = rule_offsets(rt, s.ext[0]);
  st = off ? AC_OK : dist_fail(rt, &e, AC_ERR_NOMEM, "out of memory");
  st = dist_agree(rt, st, &e);
  if (st == AC_OK)
    st = scatter_rows(rt, full, root, &s, off, out, &e);
  return finish_make(rt, st, e, off, out, err);
}

ac_status ac_dist_array_from_full(ac_dist_runtime *rt, const ac_array *full, ac_dist_array **out,
                                  ac_error **err) {
  ac_error *e = NULL;
  if (err)
    *err = NULL;
  *out = NULL;
  shape s = {0, 0, {0}}, first;
  ac_status st = shape_of(rt, full, &s, &e);
  st = dist_agree(rt, st, &e);
  if (st != AC_OK)
    return ir_report(err, e, st);
  first = s;
  bcast_shape(rt, &first, 0);
  if (memcmp(&first, &s, sizeof s) != 0)
    st = dist_fail(rt, &e, AC_ERR_INVALID,
                   "ac_dist_array_from_full: rank %d's array has another shape or type than "
                   "rank 0's",
                   rt->rank);
  int64_t *off = st == AC_OK ? rule_offsets(rt, s.ext[0]) : NULL;
  ac_array *block = NULL;
  if (st == AC_OK && !off)
    st = dist_fail(rt, &e, AC_ERR_NOMEM, "out of memory");
  if (st == AC_OK && !(block = dist_rows(rt->ctx, full, off[rt->rank], off[rt->rank + 1], &e)))
    st = e ? e->status : AC_ERR_NOMEM;
  if (st == AC_OK &&
      !(*out = dist_array_make(rt, (ac_scalar)s.type, (unsigned)s.rank, s.ext, off, block)))
    st = dist_fail(rt, &e, AC_ERR_NOMEM, "out of memory");
  return finish_make(rt, st, e, off, out, err);
}

ac_status ac_dist_array_from_block(ac_dist_runtime *rt, ac_array *block, ac_dist_array **out,
                                   ac_error **err) {
  ac_error *e = NULL;
  if (err)
    *err = NULL;
  *out = NULL;
  shape s = {0, 0, {0}}, first;
  ac_status st = shape_of(rt, block, &s, &e);
  st = dist_agree(rt, st, &e);
  if (st != AC_OK)
    return ir_report(err, e, st);
  /* rank 0's type and inner extents against everyone's, then the rows */
  first = s;
  bcast_shape(rt, &first, 0);
  first.ext[0] = s.ext[0];
  int64_t *off = malloc(((size_t)rt->size + 1) * sizeof *off);
  if (memcmp(&first, &s, sizeof s) != 0)
    st = dist_fail(rt, &e, AC_ERR_INVALID,
                   "ac_dist_array_from_block: rank %d's block has another type, rank or inner "
                   "extents than rank 0's",
                   rt->rank);
  else if (!off)
    st = dist_fail(rt, &e, AC_ERR_NOMEM, "out of memory");
  st = dist_agree(rt, st, &e);
  if (st != AC_OK) {
    free(off);
    return ir_report(err, e, st);
  }
  int64_t rows = s.ext[0];
  MPI_Allgather(&rows, 1, MPI_INT64_T, off + 1, 1, MPI_INT64_T, rt->comm);
  off[0] = 0;
  for (int r = 0; r < rt->size; r++)
    off[r + 1] += off[r];
  s.ext[0] = off[rt->size];
  ac_array_retain(block);
  if (!(*out = dist_array_make(rt, (ac_scalar)s.type, (unsigned)s.rank, s.ext, off, block)))
    st = dist_fail(rt, &e, AC_ERR_NOMEM, "out of memory");
  return finish_make(rt, st, e, off, out, err);
}

/* Collects a's blocks to root, or to every rank (root AC_DIST_ALL); each
 * rank sends from where staging.c says, and the full array is received
 * for the local backend (device memory on a GPU rank) when `device`, else
 * on the host. A failure after the data moved (only possible for the
 * device) is agreed on here, so that every rank returns the same. */
static ac_status collect(ac_dist_runtime *rt, const ac_dist_array *a, int root, bool device,
                         ac_array **full, ac_error **err) {
  size_t row = 0;
  ac_status st = dist_row_bytes(a->type, a->rank, a->extents, &row)
                     ? check_counts(rt, row, a->offsets, err)
                     : dist_fail(rt, err, AC_ERR_INVALID, "the array is too large");
  bool here = root == AC_DIST_ALL || root == rt->rank, receiving = false;
  dist_recv r = {0};
  if (st == AC_OK && here)
    receiving = (st = dist_recv_begin(rt, a->type, a->rank, a->extents, a->extents[0], row, device,
                                      &r, err)) == AC_OK;
  const void *mine = NULL;
  if (st == AC_OK)
    st = dist_send_from(rt, a->block, &mine, err);
  int *cnt = NULL, *disp = NULL;
  if (st == AC_OK && !counts(rt, a->offsets, &cnt, &disp))
    st = dist_fail(rt, err, AC_ERR_NOMEM, "out of memory");
  st = dist_agree(rt, st, err);
  if (st == AC_OK && row > 0) {
    MPI_Datatype dt;
    MPI_Type_contiguous((int)row, MPI_BYTE, &dt);
    MPI_Type_commit(&dt);
    static const char none[1];
    int n = cnt[rt->rank];
    if (root == AC_DIST_ALL) {
      MPI_Allgatherv(mine ? mine : none, n, dt, r.data, cnt, disp, dt, rt->comm);
      rt->bytes_sent += (uint64_t)n * row * (uint64_t)(rt->size - 1);
    } else {
      MPI_Gatherv(mine ? mine : none, n, dt, r.data, cnt, disp, dt, root, rt->comm);
      if (rt->rank != root)
        rt->bytes_sent += (uint64_t)n * row;
    }
    MPI_Type_free(&dt);
  }
  free(cnt);
  free(disp);
  ac_array *whole = NULL;
  if (st == AC_OK && here)
    st = dist_recv_end(rt, &r, &whole, err);
  else if (receiving)
    dist_recv_abandon(rt, &r);
  if (device)
    st = dist_agree(rt, st, err);
  if (st != AC_OK) {
    ac_array_release(whole);
    return st;
  }
  *full = whole;
  return AC_OK;
}

ac_status dist_allgather(ac_dist_runtime *rt, const ac_dist_array *a, ac_array **full,
                         ac_error **err) {
  return collect(rt, a, AC_DIST_ALL, true, full, err);
}

ac_status ac_dist_array_gather(ac_dist_runtime *rt, const ac_dist_array *a, int root,
                               ac_array **full, ac_error **err) {
  ac_error *e = NULL;
  if (err)
    *err = NULL;
  *full = NULL;
  if (!a || (root != AC_DIST_ALL && (root < 0 || root >= rt->size)))
    return dist_fail(rt, err, AC_ERR_INVALID, "ac_dist_array_gather: %s",
                     a ? "no such root rank" : "the array is NULL");
  ac_status st = collect(rt, a, root, false, full, &e);
  return ir_report(err, e, st);
}
