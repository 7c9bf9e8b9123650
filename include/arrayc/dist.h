/* arrayc/dist.h: running arrayc functions over arrays distributed across
 * MPI ranks (docs/distributed.md is the reference for this header).
 *
 * One process per rank, one local backend per rank (the CPU here; a GPU
 * chosen by local rank when present). An array may be partitioned along its
 * outermost dimension into one contiguous block of rows per rank, in rank
 * order: an ac_dist_array. ac_dist_function_call runs a function over such
 * arrays, replicated arrays and scalars; how it does that (the strategy) is
 * decided once per function from its IR when it is created.
 *
 * This header and libarrayc_dist need MPI; libarrayc and libarrayc_rt do
 * not. Link arrayc::dist (find_package(arrayc); it brings libarrayc and
 * MPI) or `pkg-config --libs arrayc_dist` (docs/install.md section 6).
 *
 * Collectives: every function here that takes a runtime is collective over
 * its communicator (every rank must call it, in the same order, with the
 * same function, scalars and replicated arrays), except the queries. Errors
 * are collective too: when any rank fails, every rank returns the error of
 * the lowest rank that failed (same status, message and position), and no
 * rank is left waiting.
 *
 * Threads: a runtime and what is made from it are used by one thread at a
 * time, the thread that calls MPI for it (MPI_THREAD_SINGLE is enough; the
 * local backend's own worker threads never call MPI).
 */
#ifndef ARRAYC_DIST_H
#define ARRAYC_DIST_H

#include "arrayc/module.h"
#include "arrayc/runtime.h"

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ac_dist_runtime ac_dist_runtime;
typedef struct ac_dist_array ac_dist_array;
typedef struct ac_dist_function ac_dist_function;

/* ac_dist_array_gather's root for "every rank". */
#define AC_DIST_ALL (-1)

/* The partition rule: of n rows over nranks ranks, rank r holds rows
 * [r*n/nranks, (r+1)*n/nranks) (integer division; every block has
 * floor(n/nranks) or that plus one rows, the larger ones last; when n <
 * nranks some blocks are empty). Writes the first row to *lo and one past
 * the last to *hi. */
AC_API void ac_dist_partition(int64_t n, int nranks, int r, int64_t *lo, int64_t *hi);

/* ---- runtimes ---- */

/* Creates a distributed runtime over comm (duplicated: the caller's
 * communicator is not used for arrayc's messages, and may be freed). The
 * local rank (the rank among the processes of this node, found with
 * MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)) picks the device:
 * local_backend AC_BACKEND_AUTO takes GPU (local rank % number of GPUs)
 * when the node has GPUs, else the CPU; any other backend is used as
 * given. MPI must be initialised. Collective. Free with
 * ac_dist_runtime_destroy (collective too: it frees the communicator),
 * after everything made from it and before ctx. */
AC_API ac_status ac_dist_runtime_create(ac_context *ctx, MPI_Comm comm, ac_backend local_backend,
                                        ac_dist_runtime **out, ac_error **err);
AC_API void ac_dist_runtime_destroy(ac_dist_runtime *rt);
AC_API int ac_dist_runtime_rank(const ac_dist_runtime *rt);
AC_API int ac_dist_runtime_size(const ac_dist_runtime *rt);
/* The rank among the ranks of this node, and how many share it. */
AC_API int ac_dist_runtime_local_rank(const ac_dist_runtime *rt);
AC_API int ac_dist_runtime_local_size(const ac_dist_runtime *rt);
/* The local backend actually chosen (never AUTO). */
AC_API ac_backend ac_dist_runtime_backend(const ac_dist_runtime *rt);
/* Whether this rank passes device memory to MPI directly: true only when
 * its local backend is a GPU (AC_BACKEND_GPU) and the MPI library takes
 * device pointers (CUDA-aware: asked of Open MPI with
 * MPIX_Query_cuda_support(), or ARRAYC_DIST_CUDA_AWARE=1; =0 says no).
 * Otherwise a GPU rank stages its blocks through pinned host memory, and
 * a CPU rank sends host memory (docs/distributed.md, "GPUs and MPI"). */
AC_API bool ac_dist_runtime_cuda_aware(const ac_dist_runtime *rt);
/* Bytes of array elements this rank has sent to other ranks since the
 * runtime was made (scatters, gathers, the gather strategy's allgathers;
 * not the small messages that agree on errors and shapes): how tests see
 * that a function ran without moving data. */
AC_API uint64_t ac_dist_runtime_bytes_sent(const ac_dist_runtime *rt);

/* ---- distributed arrays ---- */

/* Makes a distributed array from root's array `full` (ignored, and may be
 * NULL, on the other ranks): the partition rule's blocks are sent to their
 * ranks. Collective. Free with ac_dist_array_destroy. */
AC_API ac_status ac_dist_array_scatter_from(ac_dist_runtime *rt, const ac_array *full, int root,
                                            ac_dist_array **out, ac_error **err);
/* Makes a distributed array from an array `full` that every rank holds
 * (the same on all): each rank keeps its block by the partition rule; no
 * array data is sent (only the extents are checked to agree). */
AC_API ac_status ac_dist_array_from_full(ac_dist_runtime *rt, const ac_array *full,
                                         ac_dist_array **out, ac_error **err);
/* Makes a distributed array from this rank's block alone (retained, not
 * copied): the global outermost extent is the sum of the blocks' (an
 * allgather of their lengths), rank r's rows following rank r-1's; the
 * blocks' element type, rank and inner extents must agree. The partition
 * need not follow the rule. Collective. */
AC_API ac_status ac_dist_array_from_block(ac_dist_runtime *rt, ac_array *block, ac_dist_array **out,
                                          ac_error **err);
/* Collects a to rank `root` (*full set there, NULL elsewhere) or, with
 * root AC_DIST_ALL, to every rank. The caller owns one reference to
 * *full. Collective. */
AC_API ac_status ac_dist_array_gather(ac_dist_runtime *rt, const ac_dist_array *a, int root,
                                      ac_array **full, ac_error **err);
AC_API void ac_dist_array_destroy(ac_dist_array *a);
AC_API ac_scalar ac_dist_array_type(const ac_dist_array *a);
AC_API unsigned ac_dist_array_rank(const ac_dist_array *a);
/* The global extents (rank entries; borrowed). */
AC_API const int64_t *ac_dist_array_extents(const ac_dist_array *a);
/* This rank's block: extents as the global ones but the outermost, which
 * is this rank's number of rows (borrowed; retain it to keep it). */
AC_API ac_array *ac_dist_array_block(const ac_dist_array *a);
/* The partition: size + 1 row offsets, rank r holding rows
 * [offsets[r], offsets[r+1]) (borrowed). */
AC_API const int64_t *ac_dist_array_offsets(const ac_dist_array *a);

/* ---- calling functions ---- */

typedef enum ac_dist_datum_kind {
  AC_DIST_SCALAR = 0,     /* local.kind AC_DATUM_SCALAR: the same value on every rank */
  AC_DIST_REPLICATED = 1, /* local.array: the same array on every rank */
  AC_DIST_DISTRIBUTED = 2 /* dist: a distributed array */
} ac_dist_datum_kind;

typedef struct ac_dist_datum {
  ac_dist_datum_kind kind;
  ac_datum local;      /* AC_DIST_SCALAR, AC_DIST_REPLICATED */
  ac_dist_array *dist; /* AC_DIST_DISTRIBUTED: owned by whoever holds the datum */
} ac_dist_datum;

/* Frees what a datum holds (its array reference or distributed array). */
AC_API void ac_dist_datum_release(ac_dist_datum *d);

/* How a function runs (docs/distributed.md, "Strategies"). */
typedef enum ac_dist_strategy {
  /* element-wise in the outermost dimension: each rank runs the function
   * on its blocks, nothing is sent */
  AC_DIST_LOCAL = 1,
  /* every distributed argument is allgathered, each rank runs the function
   * on the full data and keeps its block of each array result: correct for
   * every program, not scalable */
  AC_DIST_GATHER = 2,
  /* the body is evaluated step by step (docs/distributed.md, "The staged
   * strategy"): element-wise steps on blocks, folds and scans across
   * ranks, stencils with halo exchanges, loops and branches run by every
   * rank, and the steps it does not distribute on allgathered data */
  AC_DIST_STAGED = 3
} ac_dist_strategy;

/* Prepares function `name` of the verified module m (which must outlive
 * it) on rt's local backend and decides its strategy. Collective. Free with
 * ac_dist_function_destroy. */
AC_API ac_status ac_dist_function_create(ac_dist_runtime *rt, ac_module *m, const char *name,
                                         ac_dist_function **out, ac_error **err);
AC_API void ac_dist_function_destroy(ac_dist_function *f);
/* The strategy decided at creation. A call of an AC_DIST_LOCAL function
 * whose distributed arguments do not share one partition and one shape, or
 * that maps a replicated array, runs by the gather strategy. */
AC_API ac_dist_strategy ac_dist_function_strategy(const ac_dist_function *f);
/* The local function (borrowed): its signature (ac_function_num_args,
 * ac_function_arg_info, ...) is the distributed function's. */
AC_API ac_function *ac_dist_function_local(const ac_dist_function *f);
/* Calls f. args: ac_function_num_args leaves (borrowed), each a scalar, a
 * replicated array or a distributed array (an array of rank >= 1 either
 * way). On success results[0..nresults) receive scalars (AC_DIST_SCALAR,
 * the same on every rank: rank 0's value) and arrays as distributed arrays
 * (AC_DIST_DISTRIBUTED), owned by the caller. Collective; on failure every
 * rank returns the same error and results are untouched. */
AC_API ac_status ac_dist_function_call(ac_dist_function *f, const ac_dist_datum *args, size_t nargs,
                                       ac_dist_datum *results, size_t nresults, ac_error **err);

#ifdef __cplusplus
}
#endif
#endif
