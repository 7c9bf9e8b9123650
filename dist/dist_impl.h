/* dist/dist_impl.h: the distributed layer's internals (libarrayc_dist).
 *
 * Six modules: runtime.c (the runtime, collective error agreement, the
 * device choice), array.c (distributed arrays: partitions, scatter,
 * gather), staging.c (where blocks are for MPI on a GPU: device memory
 * with CUDA-aware MPI, else pinned host buffers), exchange.c (the
 * all-to-all primitives the distributed operations are made of: fetching
 * rows and elements by global index, repartitioning, routing values to the
 * owners of their indices), call.c with strategy.c (functions: the
 * strategy decided from the IR, the calls) and plan.c (the staged
 * strategy: a function's body evaluated step by step, each step in its
 * distributed form or on allgathered data). Everything here is collective
 * unless it says otherwise, and follows one pattern so that no rank is
 * left waiting: a rank's local work may fail, then every rank calls
 * dist_agree, which makes every rank return the same error when any
 * failed, and only then is data exchanged.
 */
#ifndef ARRAYC_DIST_IMPL_H
#define ARRAYC_DIST_IMPL_H

#include "arrayc/dist.h"

#include "ir.h"
#include "runtime/gpu.h"

/* A staging buffer (staging.c): pinned host memory of the local GPU, or
 * malloc'd when pinning failed. */
typedef struct dist_stage {
  void *p;
  size_t bytes;
  bool pinned;
} dist_stage;
/* send, receive, and a whole device block brought to the host to pick
 * scattered units from (exchange.c) */
enum { DIST_STAGE_SEND = 0, DIST_STAGE_RECV = 1, DIST_STAGE_BLOCK = 2, DIST_STAGES = 3 };

struct ac_dist_runtime {
  ac_context *ctx;
  MPI_Comm comm; /* a duplicate of the caller's */
  int rank, size, local_rank, local_size;
  ac_runtime *local; /* the rank's backend */
  uint64_t bytes_sent;
  /* staging.c: the local CUDA device (NULL unless the backend is
   * AC_BACKEND_GPU; the local runtime's), whether this rank hands device
   * memory to MPI (a GPU and a CUDA-aware MPI), the staging buffers;
   * whether any rank has a GPU (the same on every rank: the exchanges
   * agree once more after their data moved, since a copy to or from a
   * device may fail there) */
  rt_gpu *gpu;
  bool cuda_aware, any_gpu;
  dist_stage stage[DIST_STAGES];
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
/* Rows [lo, hi) of a (a copy), as a new array: on a's device when a lives
 * there only (copied device to device), else on the host; NULL with *err
 * on failure. Not collective. */
ac_array *dist_rows(ac_context *ctx, const ac_array *a, int64_t lo, int64_t hi, ac_error **err);
/* A new array of `rows` rows shaped like extents (the outermost replaced),
 * of `row` bytes per row, zeroed (from the context's block cache), whose
 * elements the caller fills before anyone reads them (*data); NULL with
 * *err when it does not fit in memory. Not collective. */
ac_array *dist_new_block(ac_dist_runtime *rt, ac_scalar type, unsigned rank, const int64_t *extents,
                         int64_t rows, size_t row, void **data, ac_error **err);
/* The full array on every rank (an allgather of the blocks), for the
 * local backend (in device memory on a GPU rank). The caller agrees
 * before (local work of its own); this agrees after the data moved (a
 * copy to the device may fail), so every rank returns the same. */
ac_status dist_allgather(ac_dist_runtime *rt, const ac_dist_array *a, ac_array **full,
                         ac_error **err);

/* ---- staging.c: where a block's bytes are for MPI ---- */
/* Finds the local CUDA device and decides whether MPI is CUDA-aware
 * (ARRAYC_DIST_CUDA_AWARE, else the MPI library); an invalid value of the
 * variable is an error. Local (the caller agrees). */
ac_status dist_staging_init(ac_dist_runtime *rt, ac_error **err);
/* Frees the staging buffers (before the local runtime goes). */
void dist_staging_free(ac_dist_runtime *rt);
/* Where MPI reads all of a's elements: its device copy (cuda_aware), the
 * send staging buffer holding a copy of it (a GPU backend, device-only
 * elements), or its host elements; NULL when a has none. Valid until the
 * next staging call. Local. */
ac_status dist_send_from(ac_dist_runtime *rt, const ac_array *a, const void **out, ac_error **err);
/* A block being received: begin gives MPI the place to write (data), end
 * makes the array once MPI has written it, abandon frees it unfinished. */
typedef struct dist_recv {
  ac_array *host; /* a host block: MPI writes its elements */
  void *data;     /* where MPI writes */
  rt_dptr dev;    /* the device buffer of a block received for the device */
  bool staged;    /* data is the receive staging buffer: end copies it up */
  ac_scalar type;
  unsigned rank;
  const int64_t *extents; /* the caller's, rows aside; live until end */
  int64_t rows;
  size_t bytes;
} dist_recv;
/* A block of `rows` rows of `row` bytes shaped like extents; device: the
 * local backend uses it next, so on a GPU it is received into (or copied
 * up to) device memory. Local. */
ac_status dist_recv_begin(ac_dist_runtime *rt, ac_scalar type, unsigned rank,
                          const int64_t *extents, int64_t rows, size_t row, bool device,
                          dist_recv *r, ac_error **err);
/* The received block (one reference to the caller); on failure r is
 * abandoned. Local: a failure here comes after the data moved, so the
 * caller agrees afterwards. */
ac_status dist_recv_end(ac_dist_runtime *rt, dist_recv *r, ac_array **out, ac_error **err);
void dist_recv_abandon(ac_dist_runtime *rt, dist_recv *r);

/* ---- staging.c: parts of device blocks (the exchanges) ---- */
/* Whether a lives on the local device only (a GPU rank's result whose
 * host elements were never fetched): then an exchange moves only the
 * units it needs (below) and makes what the rank receives for the device.
 * *d: a's device address (0 when a is empty). Local, no copy. */
bool dist_on_device(ac_dist_runtime *rt, const ac_array *a, rt_dptr *d);
/* Staging buffer k (DIST_STAGE_*) of at least `bytes` (at least 1),
 * pinned when the device can; it stays the runtime's, valid until the
 * next request for k. NULL with *err when memory runs out. Local. */
void *dist_stage_get(ac_dist_runtime *rt, int k, size_t bytes, ac_error **err);
/* A list of copies, each `bytes` from offset `from` of a source (src: 0,
 * the rank's block; 1, the units received from other ranks) to offset
 * `to` of a destination; dist_runs_add coalesces a copy that continues
 * the last one into it (false when memory runs out). */
typedef struct dist_run {
  size_t to, from, bytes;
  int src;
} dist_run;
typedef struct dist_runs {
  dist_run *r;
  size_t n, cap;
} dist_runs;
bool dist_runs_add(dist_runs *l, int src, size_t to, size_t from, size_t bytes);
void dist_runs_free(dist_runs *l);
/* The runs of l with source src, or all of them (src -1). */
size_t dist_runs_count(const dist_runs *l, int src);
/* The rule for scattered units: copy run by run while the runs are few,
 * at most DIST_RUNS_FEW or one per DIST_RUN_BYTES of `whole` (the bytes
 * one copy of everything would move, whose fixed cost, a driver call and
 * for a device-to-host copy a wait for the stream, is about that of
 * moving 64 KiB); else make one copy of the whole and pick the units from
 * it on the host. */
enum { DIST_RUNS_FEW = 16 };
#define DIST_RUN_BYTES ((size_t)64 << 10)
bool dist_few_runs(size_t runs, size_t whole);
/* Where a copy reads or writes: device memory (dev, host NULL) or host
 * memory (host). */
typedef struct dist_place {
  void *host;
  rt_dptr dev;
} dist_place;
/* Queues the runs of l with source src (-1: all) from src_at to dst_at:
 * device to device, host to device, device to host (which returns with
 * the bytes there) or host to host. Local. */
ac_status dist_runs_copy(ac_dist_runtime *rt, const dist_runs *l, int src, dist_place dst_at,
                         dist_place src_at, ac_error **err);

/* ---- exchange.c: all-to-all primitives (docs/distributed.md,
 * "Communication primitives (internal)") ----
 * Each is collective; an index out of range on any rank is the same
 * AC_ERR_RUNTIME error on every rank, before any data moves. A rank may ask
 * for nothing (count 0); what it asks of itself is copied, not sent, and
 * rt->bytes_sent counts the values sent to other ranks. At most INT_MAX
 * units (rows, or elements) per rank and exchange (an error otherwise).
 * On a rank whose block lives on its GPU only (dist_on_device), fetches
 * and repartitions copy only the units they move and return device arrays
 * (exchange.c's header). */

/* The rank that holds global row `row` under the partition `offsets`
 * (size + 1 entries, non-decreasing, offsets[0] = 0): the r with
 * offsets[r] <= row < offsets[r+1] (binary search; empty blocks skipped).
 * row must be in [0, offsets[size]). Not collective. */
int dist_owner(const int64_t *offsets, int size, int64_t row);

/* Every rank asks for `count` rows of a by global row index (rows[k] in
 * [0, extents[0]); any order, repeats allowed) and receives them, in that
 * order, as a new array of `count` rows with a's inner extents in *out
 * (rank a->rank; the caller owns one reference). */
ac_status dist_fetch_rows(ac_dist_runtime *rt, const ac_dist_array *a, const int64_t *rows,
                          int64_t count, ac_array **out, ac_error **err);

/* The same for single elements: idx[k] is a linear element index into the
 * global array in row-major order (in [0, product of extents)); *out is a
 * rank-1 array of count elements. */
ac_status dist_fetch_elems(ac_dist_runtime *rt, const ac_dist_array *a, const int64_t *idx,
                           int64_t count, ac_array **out, ac_error **err);

/* a redistributed to the partition `offsets` (size + 1 entries, the same
 * on every rank, offsets[size] == extents[0]): a new distributed array
 * with the same global contents; each rank receives its rows
 * [offsets[r], offsets[r+1]) from their owners with one MPI_Alltoallv
 * (contiguous ranges, no per-row requests). A rank whose rows stay sends
 * nothing for them. */
ac_status dist_repartition(ac_dist_runtime *rt, const ac_dist_array *a, const int64_t *offsets,
                           ac_dist_array **out, ac_error **err);

/* Routes (index, value) pairs to the owners of the indices: every rank
 * sends `count` pairs, idx[k] a global linear element index into an array
 * of partition `offsets` (rows, the same on every rank) with `row_elems`
 * elements per row, value k being elem_bytes bytes at
 * (char *)vals + k * elem_bytes. Each rank receives the pairs whose index
 * falls in its block: *nrecv pairs, their indices made local (relative to
 * the block's first element) in *ridx and their values in *rvals (both
 * malloc'd; free() them; NULL when *nrecv is 0), ordered by sending rank,
 * then by the sender's order (so a receiver that applies them in order
 * applies them in global order when each sender's pairs are in its own
 * order). row_elems 0: no element exists, every index is out of range. */
ac_status dist_route_elems(ac_dist_runtime *rt, const int64_t *offsets, int64_t row_elems,
                           size_t elem_bytes, const int64_t *idx, const void *vals, int64_t count,
                           int64_t **ridx, void **rvals, int64_t *nrecv, ac_error **err);

/* Which flattened parameters the local strategy may take distributed
 * (strategy.c): true when the function qualifies; then mapped[i] says
 * whether leaf i is an array parameter that the function only maps. */
bool dist_local_rule(ac_module *m, const char *name, bool *mapped, size_t nargs);

/* lib/api/function.c: a function of m that is only its signature (the
 * interpreter's, compiling and binding nothing): a staged function's own. */
ac_status api_function_signature(ac_module *m, const char *name, ac_function **out,
                                 ac_error **err);

/* The staged strategy (plan.c): a distributed evaluation of a function's
 * body, step by step. */
typedef struct dist_plan dist_plan;
/* A plan for function fn of the verified module m (copied). NULL when
 * memory runs out. Not collective. */
dist_plan *dist_plan_create(ac_dist_runtime *rt, const ac_module *m, uint32_t fn);
void dist_plan_destroy(dist_plan *p);
/* Whether the staged strategy distributes some step of fn's body (else it
 * would run the whole body on full data: the gather strategy). */
bool dist_plan_distributes(const ac_module *m, uint32_t fn);
/* Calls the planned function: args and results as ac_dist_function_call's
 * (checked by the caller). Collective. */
ac_status dist_plan_call(dist_plan *p, const ac_dist_datum *args, size_t nargs,
                         ac_dist_datum *results, size_t nresults, ac_error **err);

#endif
