/* runtime/resid.c: where an array's elements live (Copperhead's places,
 * Accelerate's device memory table).
 *
 * An ac_array may carry an rt_resid: a copy of its elements in the memory
 * of one GPU device (real or emulated). Arrays are immutable once shared,
 * so the host and device copies never disagree and no copy is ever written
 * back; the only questions are which copies exist:
 *   - a host array passed to a GPU call gets a device copy on first use,
 *     which it keeps: the next call on that device does not copy again;
 *   - an array made by a GPU call (rt_resid_wrap) has ONLY the device copy;
 *     its host elements are allocated and fetched the first time a host
 *     reader asks (rt_resid_host), so results that feed the next GPU call
 *     never cross the bus.
 * The rt_resid is installed once (compare-and-swap on the array's resid
 * pointer) and then only its host side changes, under its own mutex. A
 * resid holds a reference on its device, so device memory is freed on a
 * live device when the last reference to the array goes.
 *
 * An array whose copy lives on ANOTHER device than the one a call runs on
 * is handed to that call through a temporary array (host elements fetched,
 * then copied to the call's device), which the call holds and releases.
 */
#include "runtime/gpu.h"

#include "interp/rtarray.h"

#include <pthread.h>
#include <string.h>

struct rt_resid {
  rt_gpu *g;
  rt_dptr d;
  pthread_mutex_t lock; /* guards host_valid and the array's data pointer */
  bool host_valid;
  void *host; /* host elements allocated here (device-made arrays), or NULL */
};

static size_t rs_bytes(const ac_array *a) {
  return (size_t)a->size * rt_array_elsize(a);
}

static struct rt_resid *rs_new(ac_context *ctx, rt_gpu *g, rt_dptr d, bool host_valid) {
  struct rt_resid *r = ac_alloc(ctx, sizeof *r);
  if (!r)
    return NULL;
  memset(r, 0, sizeof *r);
  pthread_mutex_init(&r->lock, NULL);
  r->g = g;
  r->d = d;
  r->host_valid = host_valid;
  rt_gpu_retain(g);
  return r;
}

/* Frees a resid that was never installed, or whose array is gone. */
static void rs_free(ac_context *ctx, struct rt_resid *r) {
  if (!r)
    return;
  r->g->ops->free(r->g, r->d);
  rt_gpu_release(r->g);
  ac_free(ctx, r->host);
  pthread_mutex_destroy(&r->lock);
  ac_free(ctx, r);
}

void rt_resid_drop(ac_array *a) {
  struct rt_resid *r = atomic_exchange(&a->resid, NULL);
  if (r && r->host && a->data == r->host)
    a->data = NULL;
  rs_free(a->ctx, r);
}

bool rt_resid_take(ac_array *a, rt_gpu *g, rt_dptr *d, size_t *bytes) {
  struct rt_resid *r = a ? atomic_load(&a->resid) : NULL;
  if (!r || r->g != g || !r->d || atomic_load(&a->refs) != 1)
    return false;
  pthread_mutex_lock(&r->lock);
  bool device_only = !r->host_valid && !r->host;
  pthread_mutex_unlock(&r->lock);
  if (!device_only)
    return false;
  *d = r->d;
  *bytes = rs_bytes(a);
  r->d = 0; /* ops->free(g, 0) frees nothing */
  return true;
}

rt_dptr rt_resid_dptr(const ac_array *a, const rt_gpu *g) {
  struct rt_resid *r = a ? atomic_load(&((ac_array *)a)->resid) : NULL;
  return r && r->g == g ? r->d : 0;
}

rt_gpu *rt_resid_gpu(const ac_array *a) {
  struct rt_resid *r = a ? atomic_load(&((ac_array *)a)->resid) : NULL;
  return r ? r->g : NULL;
}

bool rt_resid_host_valid(const ac_array *ca) {
  ac_array *a = (ac_array *)ca; /* the lock is taken, nothing changes */
  struct rt_resid *r = a ? atomic_load(&a->resid) : NULL;
  if (!r)
    return true;
  pthread_mutex_lock(&r->lock);
  bool valid = r->host_valid;
  pthread_mutex_unlock(&r->lock);
  return valid;
}

ac_status rt_resid_host(const ac_array *ca, ac_error **err) {
  ac_array *a = (ac_array *)ca; /* the elements' host copy is filled in, not changed */
  struct rt_resid *r = a ? atomic_load(&a->resid) : NULL;
  if (!r)
    return AC_OK;
  ac_status st = AC_OK;
  pthread_mutex_lock(&r->lock);
  if (!r->host_valid) {
    size_t bytes = rs_bytes(a);
    void *h = ac_alloc(a->ctx, bytes ? bytes : 1);
    if (!h) {
      st = AC_ERR_NOMEM;
      if (err)
        *err = NULL;
    } else if (bytes && (st = r->g->ops->dtoh(r->g, h, r->d, bytes, err)) != AC_OK) {
      ac_free(a->ctx, h);
    } else {
      r->host = h;
      a->data = h;
      r->host_valid = true;
    }
  }
  pthread_mutex_unlock(&r->lock);
  return st;
}

ac_status rt_resid_wrap(ac_context *ctx, rt_gpu *g, ac_scalar type, unsigned rank,
                        const int64_t *extents, rt_dptr d, ac_array **out, ac_error **err) {
  *out = NULL;
  int64_t count;
  size_t elsize = ac_scalar_size(type);
  if (!rt_array_count(rank, extents, elsize, &count)) {
    g->ops->free(g, d);
    return ir_report(err, NULL, AC_ERR_RUNTIME);
  }
  /* a header and extents alone, as a borrowed array: the elements are on
   * the device until asked for */
  ac_array *a = ac_alloc(ctx, sizeof *a + (size_t)rank * sizeof(int64_t));
  struct rt_resid *r = a ? rs_new(ctx, g, d, false) : NULL;
  if (!r) {
    ac_free(ctx, a);
    g->ops->free(g, d);
    return ir_report(err, NULL, AC_ERR_NOMEM);
  }
  memset(a, 0, sizeof *a);
  a->ctx = ctx;
  atomic_init(&a->refs, 1);
  a->type = type;
  a->rank = rank;
  a->size = count;
  a->extents = (int64_t *)(void *)(a + 1);
  if (rank)
    memcpy(a->extents, extents, rank * sizeof *extents);
  atomic_init(&a->resid, r);
  *out = a;
  return AC_OK;
}

ac_status rt_resid_device(ac_array *a, rt_gpu *g, rt_dptr *out, ac_array **holder,
                          ac_error **err) {
  *out = 0;
  *holder = NULL;
  struct rt_resid *r = atomic_load(&a->resid);
  if (r && r->g == g) {
    *out = r->d;
    *holder = a;
    ac_array_retain(a);
    return AC_OK;
  }
  ac_status st = rt_resid_host(a, err); /* the elements to copy */
  if (st != AC_OK)
    return st;
  size_t bytes = rs_bytes(a);
  rt_dptr d = 0;
  if ((st = g->ops->alloc(g, bytes ? bytes : 1, &d, err)) != AC_OK)
    return st;
  if (bytes && (st = g->ops->htod(g, d, a->data, bytes, err)) != AC_OK) {
    g->ops->free(g, d);
    return st;
  }
  if (!r) { /* keep the copy with the array for later calls */
    struct rt_resid *nr = rs_new(a->ctx, g, d, true);
    if (!nr) {
      g->ops->free(g, d);
      return ir_report(err, NULL, AC_ERR_NOMEM);
    }
    struct rt_resid *expect = NULL;
    if (atomic_compare_exchange_strong(&a->resid, &expect, nr)) {
      *out = d;
      *holder = a;
      ac_array_retain(a);
      return AC_OK;
    }
    rs_free(a->ctx, nr); /* another call installed one meanwhile */
    return rt_resid_device(a, g, out, holder, err);
  }
  /* the array lives on another device: a temporary array holds the copy */
  ac_array *t;
  if ((st = rt_resid_wrap(a->ctx, g, a->type, a->rank, a->extents, d, &t, err)) != AC_OK)
    return st;
  *out = d;
  *holder = t;
  return AC_OK;
}
