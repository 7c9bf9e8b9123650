/* dist/dist_impl.h: the distributed layer's internals (libarrayc_dist).
 *
 * Three modules: runtime.c (the runtime, collective error agreement, the
 * device choice), array.c (distributed arrays: partitions, scatter, gather)
 * and call.c with strategy.c (functions: the strategy decided from the IR,
 * the calls). Everything here is collective unless it says otherwise, and
 * follows one pattern so that no rank is left waiting: a rank's local work
 * may fail, then every rank calls dist_agree, which makes every rank return
 * the same error when any failed, and only then is data exchanged.
 */
#ifndef ARRAYC_DIST_IMPL_H
#define ARRAYC_DIST_IMPL_H

#include "arrayc/dist.h"

#include "ir.h"

struct ac_dist_runtime {
  ac_context *ctx;
  MPI_Comm comm; /* a duplicate of the caller's */
  int rank, size, local_rank, local_size;
  ac_runtime *local; /* the rank's backend */
  uint64_t bytes_sent;
};

struct ac_dist_array {
  ac_dist_runtime *rt;
  ac_scalar type;
  unsigned rank;
  int64_t *extents; /* global, rank entries */
  int64_t *offsets; /* size + 1 */
  ac_array *block;  /* one reference */
};

/* Makes every rank return the same outcome: st and *err are this rank's;
 * when some rank failed, every rank gets (in *err, replacing its own) a
 * copy of the error of the lowest rank that failed and returns its status.
 * err may be NULL. Collective. */
ac_status dist_agree(ac_dist_runtime *rt, ac_status st, ac_error **err);
/* A fresh error of this layer (no source position). Returns st. */
ac_status dist_fail(ac_dist_runtime *rt, ac_error **err, ac_status st, const char *fmt, ...)
    IR_PRINTF(4, 5);
/* Bytes of one row (the elements below the outermost dimension) of an
 * array of this type and extents, checking for overflow (false then). */
bool dist_row_bytes(ac_scalar type, unsigned rank, const int64_t *extents, size_t *out);
/* A distributed array of the given global shape and partition holding
 * block (the reference is taken); NULL when memory runs out (block is then
 * released). */
ac_dist_array *dist_array_make(ac_dist_runtime *rt, ac_scalar type, unsigned rank,
                               const int64_t *extents, const int64_t *offsets, ac_array *block);
/* Rows [lo, hi) of a (a copy), as a new array; NULL with *err on failure. */
ac_array *dist_rows(ac_context *ctx, const ac_array *a, int64_t lo, int64_t hi, ac_error **err);
/* The full array on every rank (an allgather of the blocks); local work
 * fails before any data moves, so the caller agrees first. */
ac_status dist_allgather(ac_dist_runtime *rt, const ac_dist_array *a, ac_array **full,
                         ac_error **err);

/* Which flattened parameters the local strategy may take distributed
 * (strategy.c): true when the function qualifies; then mapped[i] says
 * whether leaf i is an array parameter that the function only maps. */
bool dist_local_rule(ac_module *m, const char *name, bool *mapped, size_t nargs);

#endif
