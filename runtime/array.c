/* lib/api/array.c: host arrays (ac_array), the values that cross the API.
 *
 * An array is a reference-counted, immutable block of row-major elements
 * with its extents (layout in lib/interp/rtarray.h). The public functions
 * check everything a caller can get wrong (scalar kind, rank, negative or
 * overflowing extents) and report it as an error value; the internal
 * rt_array_alloc is what the interpreter uses to make results, leaving the
 * elements for it to fill. bool arrays always hold the bytes 0 and 1:
 * ac_array_create normalises other non-zero bytes to 1 so that consumers
 * may compare bytes directly.
 *
 * ac_array_borrow wraps the caller's memory instead (Nikola and Accelerate
 * both let the host hand its buffers over without a copy): the header and
 * extents are allocated as usual, `data` points at the caller's elements,
 * and the caller's release callback runs when the last reference goes. The
 * same invariants hold, checked once at the door: elements aligned to their
 * size (kernels load them as typed values) and bool bytes 0 or 1.
 *
 * Thread safety: retain and release are atomic, so one array may be shared
 * by calls running on several threads; everything else reads immutable data.
 */
#include "interp/rtarray.h"
#include "runtime/gpu.h"

#include <string.h>

/* Data starts at a multiple of this many bytes after the header, which is
 * enough for every scalar kind. */
#define RT_ALIGN 16u

static size_t data_offset(unsigned rank) {
  size_t off = sizeof(ac_array) + (size_t)rank * sizeof(int64_t);
  return (off + RT_ALIGN - 1) / RT_ALIGN * RT_ALIGN;
}

bool rt_array_count(unsigned rank, const int64_t *extents, size_t elsize, int64_t *count) {
  int64_t limit = RT_ARRAY_MAX_BYTES / (int64_t)(elsize ? elsize : 1);
  int64_t n = 1;
  bool zero = false;
  /* An empty dimension makes the whole array empty whatever the others are,
   * but each extent must still be representable: check them all. */
  for (unsigned i = 0; i < rank; i++) {
    if (extents[i] > limit)
      return false;
    if (extents[i] == 0)
      zero = true;
  }
  if (zero) {
    *count = 0;
    return true;
  }
  for (unsigned i = 0; i < rank; i++) {
    if (extents[i] != 0 && n > limit / extents[i])
      return false;
    n *= extents[i];
  }
  *count = n;
  return true;
}

ac_status rt_array_alloc(ac_context *ctx, ac_scalar type, unsigned rank, const int64_t *extents,
                         ac_array **out) {
  *out = NULL;
  size_t elsize = ac_scalar_size(type);
  int64_t count;
  if (rank > RT_ARRAY_MAX_RANK || !rt_array_count(rank, extents, elsize, &count))
    return AC_ERR_RUNTIME;
  size_t off = data_offset(rank);
  ac_array *a = ir_block_alloc(ctx, off + (size_t)count * elsize);
  if (!a)
    return AC_ERR_NOMEM;
  memset(a, 0, sizeof *a);
  a->ctx = ctx;
  atomic_init(&a->refs, 1);
  a->type = type;
  a->rank = rank;
  a->size = count;
  a->extents = (int64_t *)(void *)(a + 1);
  if (rank)
    memcpy(a->extents, extents, rank * sizeof *extents);
  a->data = (char *)a + off;
  *out = a;
  return AC_OK;
}

/* Checks the element kind, rank and extents that ac_array_create and
 * ac_array_borrow take from the caller: AC_OK, or the error reported. */
static ac_status check_shape(ac_context *ctx, ac_scalar type, unsigned rank,
                             const int64_t *extents, ac_error **err) {
  ac_error *e = NULL;
  if ((unsigned)type >= AC_NUM_SCALARS)
    e = ir_error(ctx, AC_ERR_INVALID, NULL, (ir_loc){0, 0}, "invalid scalar type %d", (int)type);
  else if (rank == 0 || !extents)
    e = ir_error(ctx, AC_ERR_INVALID, NULL, (ir_loc){0, 0},
                 rank == 0 ? "array rank must be at least 1" : "array extents are NULL");
  else
    for (unsigned i = 0; i < rank && !e; i++)
      if (extents[i] < 0)
        e = ir_error(ctx, AC_ERR_INVALID, NULL, (ir_loc){0, 0}, "negative extent %lld",
                     (long long)extents[i]);
  if (!e && (unsigned)type < AC_NUM_SCALARS && rank != 0 && extents)
    return AC_OK;
  return ir_report(err, e, e ? AC_ERR_INVALID : AC_ERR_NOMEM);
}

/* rt_array_alloc with its status made into an error for the API. */
static ac_array *alloc_checked(ac_context *ctx, ac_scalar type, unsigned rank,
                               const int64_t *extents, ac_error **err) {
  ac_array *a;
  ac_status st = rt_array_alloc(ctx, type, rank, extents, &a);
  if (st == AC_OK)
    return a;
  ac_error *e = NULL;
  if (st == AC_ERR_RUNTIME) {
    e = ir_error(ctx, AC_ERR_INVALID, NULL, (ir_loc){0, 0}, "array too large");
    st = e ? AC_ERR_INVALID : AC_ERR_NOMEM;
  }
  ir_report(err, e, st);
  return NULL;
}

ac_array *ac_array_create(ac_context *ctx, ac_scalar type, unsigned rank, const int64_t *extents,
                          const void *data, ac_error **err) {
  if (err)
    *err = NULL;
  if (!ctx || check_shape(ctx, type, rank, extents, err) != AC_OK)
    return NULL;
  ac_array *a = alloc_checked(ctx, type, rank, extents, err);
  if (!a)
    return NULL;
  size_t bytes = (size_t)a->size * ac_scalar_size(type);
  if (!data)
    memset(a->data, 0, bytes);
  else if (type == AC_BOOL) {
    const unsigned char *s = data;
    unsigned char *d = a->data;
    for (size_t i = 0; i < bytes; i++)
      d[i] = s[i] != 0;
  } else if (bytes)
    memcpy(a->data, data, bytes);
  return a;
}

ac_array *ac_array_borrow(ac_context *ctx, ac_scalar type, unsigned rank, const int64_t *extents,
                          void *data, void (*release)(void *user), void *user, ac_error **err) {
  if (err)
    *err = NULL;
  if (!ctx || check_shape(ctx, type, rank, extents, err) != AC_OK)
    return NULL;
  /* The header alone: a zero-element array of the same rank has no data
   * part, and its extents are then replaced by the real ones. */
  int64_t *zeros = ac_alloc(ctx, rank * sizeof *zeros);
  if (!zeros) {
    ir_report(err, NULL, AC_ERR_NOMEM);
    return NULL;
  }
  memset(zeros, 0, rank * sizeof *zeros);
  int64_t count = 0;
  size_t elsize = ac_scalar_size(type);
  ac_error *e = NULL;
  if (rank > RT_ARRAY_MAX_RANK || !rt_array_count(rank, extents, elsize, &count))
    e = ir_error(ctx, AC_ERR_INVALID, NULL, (ir_loc){0, 0}, "array too large");
  else if (!data && count > 0)
    e = ir_error(ctx, AC_ERR_INVALID, NULL, (ir_loc){0, 0}, "borrowed array data is NULL");
  else if ((uintptr_t)data % elsize != 0)
    e = ir_error(ctx, AC_ERR_INVALID, NULL, (ir_loc){0, 0},
                 "borrowed %s data is not aligned to %zu bytes", ac_scalar_name(type), elsize);
  else if (type == AC_BOOL)
    for (int64_t i = 0; i < count && !e; i++)
      if (((const unsigned char *)data)[i] > 1)
        e = ir_error(ctx, AC_ERR_INVALID, NULL, (ir_loc){0, 0},
                     "borrowed bool element %lld is %u, not 0 or 1", (long long)i,
                     ((const unsigned char *)data)[i]);
  ac_array *a = NULL;
  if (e)
    ir_report(err, e, AC_ERR_INVALID);
  else
    a = alloc_checked(ctx, type, rank, zeros, err);
  ac_free(ctx, zeros);
  if (!a)
    return NULL;
  memcpy(a->extents, extents, rank * sizeof *extents);
  a->size = count;
  a->data = data;
  a->release = release;
  a->user = user;
  return a;
}

ac_status ac_array_read(const ac_array *a, void *dst, size_t dst_bytes, ac_error **err) {
  if (err)
    *err = NULL;
  if (!a)
    return AC_ERR_INVALID;
  size_t bytes = (size_t)a->size * rt_array_elsize(a);
  if (dst_bytes < bytes || (!dst && bytes))
    return ir_report(err,
                     ir_error(a->ctx, AC_ERR_INVALID, NULL, (ir_loc){0, 0},
                              "ac_array_read: the array has %zu bytes, the buffer %zu%s", bytes,
                              dst_bytes, dst ? "" : " (NULL)"),
                     AC_ERR_INVALID);
  ac_status st = rt_resid_host(a, err);
  if (st != AC_OK)
    return st;
  if (bytes)
    memcpy(dst, a->data, bytes);
  return AC_OK;
}

void ac_array_retain(ac_array *a) {
  if (a)
    atomic_fetch_add_explicit(&a->refs, 1, memory_order_relaxed);
}

void ac_array_release(ac_array *a) {
  /* acq_rel: the thread that frees must see every write made by the threads
   * that dropped their references before it. */
  if (a && atomic_fetch_sub_explicit(&a->refs, 1, memory_order_acq_rel) == 1) {
    /* A borrowed array is a header alone; others hold their elements, and
     * go back to the context's block cache with the size rt_array_alloc
     * asked for (a reused block may be larger, never smaller). */
    bool owns_data = (char *)a->data == (char *)a + data_offset(a->rank);
    if (atomic_load_explicit(&a->resid, memory_order_relaxed))
      rt_resid_drop(a);
    if (a->release)
      a->release(a->user);
    if (owns_data)
      ir_block_free(a->ctx, a, data_offset(a->rank) + (size_t)a->size * rt_array_elsize(a));
    else
      ac_free(a->ctx, a);
  }
}

ac_scalar ac_array_type(const ac_array *a) {
  return a->type;
}
unsigned ac_array_rank(const ac_array *a) {
  return a->rank;
}
const int64_t *ac_array_extents(const ac_array *a) {
  return a->extents;
}
int64_t ac_array_size(const ac_array *a) {
  return a->size;
}
const void *ac_array_data(const ac_array *a) {
  if (rt_resid_host(a, NULL) != AC_OK)
    return NULL;
  return a->data;
}
