/* lib/interp/rtarray.h: the layout of ac_array, shared inside the library.
 *
 * An ac_array is one allocation: this header, the extents and the row-major
 * elements, made through the allocator of the context that created it (so
 * it may outlive calls and modules, and arrays from different contexts may
 * be mixed in one call). Arrays are immutable once they have been handed to
 * anyone: the interpreter fills a fresh array (reference count 1) and only
 * then lets it be seen. The reference count is atomic because several
 * threads may pass the same array to concurrent calls (lib/api/function.c).
 *
 * Borrowed arrays (ac_array_borrow) are the exception to "one allocation":
 * their elements are the caller's memory, and `release(user)` runs when the
 * last reference goes. rt_array_alloc always makes an owning array
 * (release NULL), so the interpreter and the plan executor need not care.
 *
 * Sizes: an array holds at most RT_ARRAY_MAX_BYTES bytes of elements. The
 * limit keeps every size and offset computation far from int64/size_t
 * overflow and makes absurd requests (a typo'd extent of 1 << 50) fail with
 * "array too large" instead of reaching the allocator, which under
 * sanitizers aborts on impossible sizes rather than returning NULL.
 */
#ifndef ARRAYC_LIB_INTERP_RTARRAY_H
#define ARRAYC_LIB_INTERP_RTARRAY_H

#include "ir.h"

#include <stdatomic.h>

#define RT_ARRAY_MAX_BYTES (((int64_t)1 << 40) - ((int64_t)1 << 20))
/* Ranks beyond this are refused as too large (the extents alone would be
 * megabytes); the type system has no limit of its own. */
#define RT_ARRAY_MAX_RANK 65536u

struct ac_array {
  ac_context *ctx; /* allocator that frees it */
  atomic_size_t refs;
  ac_scalar type;
  unsigned rank;
  int64_t size;     /* number of elements: product of the extents */
  int64_t *extents; /* rank entries, inside the same allocation */
  void *data;       /* size * ac_scalar_size(type) bytes, inside the same allocation
                       (or the caller's memory for a borrowed array) */
  void (*release)(void *user); /* borrowed arrays: called when the last reference goes */
  void *user;
  /* A copy in GPU memory (runtime/resid.c), or NULL. An array made on the
   * device has data == NULL until its host elements are first needed:
   * every host-side reader of data calls rt_resid_host first (ac_array_data,
   * ac_array_read and the call paths of function.c do). */
  _Atomic(struct rt_resid *) resid;
};

/* Number of elements of an array of the given extents (all >= 0) with
 * elements of `elsize` bytes. Returns false when the product overflows or
 * the bytes exceed RT_ARRAY_MAX_BYTES. */
bool rt_array_count(unsigned rank, const int64_t *extents, size_t elsize, int64_t *count);

/* Allocates an array with uninitialised elements (the caller fills every
 * element before sharing it). Extents must be >= 0. Returns AC_OK,
 * AC_ERR_RUNTIME when the array is too large (see rt_array_count) or
 * AC_ERR_NOMEM. The caller owns the one reference. */
ac_status rt_array_alloc(ac_context *ctx, ac_scalar type, unsigned rank, const int64_t *extents,
                         ac_array **out);

static inline size_t rt_array_elsize(const ac_array *a) {
  return ac_scalar_size(a->type);
}

#endif
