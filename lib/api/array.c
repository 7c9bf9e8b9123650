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
 * Thread safety: retain and release are atomic, so one array may be shared
 * by calls running on several threads; everything else reads immutable data.
 */
#include "interp/rtarray.h"

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
  ac_array *a = ac_alloc(ctx, off + (size_t)count * elsize);
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

ac_array *ac_array_create(ac_context *ctx, ac_scalar type, unsigned rank, const int64_t *extents,
                          const void *data, ac_error **err) {
  if (err)
    *err = NULL;
  if (!ctx)
    return NULL;
  ac_error *e = NULL;
  if ((unsigned)type >= AC_NUM_SCALARS) {
    e = ir_error(ctx, AC_ERR_INVALID, NULL, (ir_loc){0, 0}, "invalid scalar type %d", (int)type);
    ir_report(err, e, AC_ERR_INVALID);
    return NULL;
  }
  if (rank == 0 || !extents) {
    e = ir_error(ctx, AC_ERR_INVALID, NULL, (ir_loc){0, 0},
                 rank == 0 ? "array rank must be at least 1" : "array extents are NULL");
    ir_report(err, e, AC_ERR_INVALID);
    return NULL;
  }
  for (unsigned i = 0; i < rank; i++)
    if (extents[i] < 0) {
      e = ir_error(ctx, AC_ERR_INVALID, NULL, (ir_loc){0, 0}, "negative extent %lld",
                   (long long)extents[i]);
      ir_report(err, e, AC_ERR_INVALID);
      return NULL;
    }
  ac_array *a;
  ac_status st = rt_array_alloc(ctx, type, rank, extents, &a);
  if (st != AC_OK) {
    if (st == AC_ERR_RUNTIME) {
      e = ir_error(ctx, AC_ERR_INVALID, NULL, (ir_loc){0, 0}, "array too large");
      st = e ? AC_ERR_INVALID : AC_ERR_NOMEM;
    }
    ir_report(err, e, st);
    return NULL;
  }
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

void ac_array_retain(ac_array *a) {
  if (a)
    atomic_fetch_add_explicit(&a->refs, 1, memory_order_relaxed);
}

void ac_array_release(ac_array *a) {
  /* acq_rel: the thread that frees must see every write made by the threads
   * that dropped their references before it. */
  if (a && atomic_fetch_sub_explicit(&a->refs, 1, memory_order_acq_rel) == 1)
    ac_free(a->ctx, a);
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
  return a->data;
}
