/* dist/staging.c: where a block's bytes are when MPI sends or receives
 * them, and whether MPI may touch GPU memory (CUDA-aware MPI).
 *
 * Three ways, chosen per transfer and per rank (MPI does not need the
 * ranks to agree: each passes its own buffers):
 *   (a) device: the local backend is a GPU (AC_BACKEND_GPU) and MPI is
 *       CUDA-aware: a block that lives on the device is sent from its
 *       device copy, and a block received for the device is received into
 *       fresh device memory, without crossing the host;
 *   (b) staged: the local backend is a GPU but MPI is not CUDA-aware: a
 *       device-only block is copied into a page-locked (pinned) host
 *       buffer and sent from there, and a block received for the device
 *       lands in a second pinned buffer and is copied up. The two buffers
 *       (send, receive) belong to the runtime, are allocated with the CUDA
 *       driver (cuMemHostAlloc, rt_gpu_ops.host_alloc) on first use and
 *       grow to the largest block (pageable memory when pinning fails);
 *   (c) host: every other case, as on the CPU: MPI reads an array's host
 *       elements and writes into a new host array. A GPU block whose host
 *       elements are valid is sent from them too (no copy at all).
 * Receiving for the device is asked for by the caller: the scatter's
 * blocks and the gather strategy's allgathered arrays, which the local
 * backend uses next; a gather to the user (ac_dist_array_gather) lands on
 * the host.
 *
 * The exchanges (exchange.c) move parts of blocks: for them this file
 * says whether a block lives on the device only (dist_on_device), lends
 * its staging buffers (dist_stage_get; a third one holds a whole block
 * when scattered units are picked from it on the host) and copies lists
 * of runs (dist_runs) between device and host memory, with the rule that
 * decides between one copy per run and one copy of the whole
 * (dist_few_runs).
 *
 * Whether MPI is CUDA-aware: Open MPI says so at compile time
 * (<mpi-ext.h>, MPIX_CUDA_AWARE_SUPPORT) and at run time
 * (MPIX_Query_cuda_support(), which depends on the transport the job
 * runs on); ARRAYC_DIST_CUDA_AWARE=0 or 1 overrides both (1: trust that
 * the library takes device pointers, e.g. an MPI we cannot ask). Other MPI
 * libraries are asked nothing: (b) unless the variable says 1.
 */
#include "dist_impl.h"

#include "api/runtime_dev.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif

/* ---- CUDA-aware MPI ---- */

/* What the MPI library says about device pointers. */
static bool mpi_reports_cuda(void) {
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  return MPIX_Query_cuda_support() == 1;
#else
  return false; /* not built with CUDA (or not Open MPI): no device pointers */
#endif
}

ac_status dist_staging_init(ac_dist_runtime *rt, ac_error **err) {
  rt->gpu = rt->local ? api_runtime_cuda(rt->local) : NULL;
  const char *env = getenv("ARRAYC_DIST_CUDA_AWARE");
  bool aware;
  if (env && *env) {
    if (strcmp(env, "0") != 0 && strcmp(env, "1") != 0)
      return dist_fail(rt, err, AC_ERR_INVALID,
                       "ARRAYC_DIST_CUDA_AWARE is '%s': it must be 0 or 1 (unset: ask the MPI "
                       "library)",
                       env);
    aware = env[0] == '1';
  } else {
    aware = mpi_reports_cuda();
  }
  rt->cuda_aware = rt->gpu && aware;
  return AC_OK;
}

static void stage_free(ac_dist_runtime *rt, dist_stage *s) {
  if (s->pinned)
    rt->gpu->ops->host_free(rt->gpu, s->p);
  else
    free(s->p);
  *s = (dist_stage){NULL, 0, false};
}

void dist_staging_free(ac_dist_runtime *rt) {
  for (int k = 0; k < DIST_STAGES; k++)
    stage_free(rt, &rt->stage[k]);
}

/* Stage buffer k (DIST_STAGE_SEND or _RECV) of at least `bytes`: kept,
 * grown to the larger of bytes and twice the old size, pinned when the
 * device can. NULL with *err when memory runs out. */
static void *stage_get(ac_dist_runtime *rt, int k, size_t bytes, ac_error **err) {
  dist_stage *s = &rt->stage[k];
  if (s->p && s->bytes >= bytes)
    return s->p;
  size_t want = s->bytes > SIZE_MAX / 2 ? bytes : s->bytes * 2;
  if (want < bytes)
    want = bytes;
  stage_free(rt, s);
  const rt_gpu_ops *ops = rt->gpu->ops;
  void *p = ops->host_alloc ? ops->host_alloc(rt->gpu, want) : NULL;
  s->pinned = p != NULL;
  if (!p && !(p = malloc(want))) {
    s->pinned = false;
    dist_fail(rt, err, AC_ERR_NOMEM, "out of memory (a staging buffer of %zu bytes)", want);
    return NULL;
  }
  s->p = p;
  s->bytes = want;
  return p;
}

/* ---- sending ---- */

ac_status dist_send_from(ac_dist_runtime *rt, const ac_array *a, const void **out, ac_error **err) {
  *out = NULL;
  size_t bytes = (size_t)ac_array_size(a) * ac_scalar_size(ac_array_type(a));
  if (bytes == 0)
    return AC_OK;
  rt_gpu *g = rt->gpu;
  rt_dptr d = g ? rt_resid_dptr(a, g) : 0;
  if (d && !rt_resid_host_valid(a)) {
    if (rt->cuda_aware) { /* (a): what the device queued must have run first */
      ac_status st = g->ops->sync(g, err);
      if (st == AC_OK)
        *out = (const void *)(uintptr_t)d;
      return st;
    }
    void *s = stage_get(rt, DIST_STAGE_SEND, bytes, err); /* (b) */
    if (!s)
      return AC_ERR_NOMEM;
    ac_status st = g->ops->dtoh(g, s, d, bytes, err); /* returns with the bytes in s */
    if (st == AC_OK)
      *out = s;
    return st;
  }
  /* (c) */
  const void *h = ac_array_data(a);
  if (!h)
    return ac_array_read(a, NULL, 0, err); /* a device array that could not be fetched */
  *out = h;
  return AC_OK;
}

/* ---- receiving ---- */

ac_status dist_recv_begin(ac_dist_runtime *rt, ac_scalar type, unsigned rank,
                          const int64_t *extents, int64_t rows, size_t row, bool device,
                          dist_recv *r, ac_error **err) {
  *r = (dist_recv){NULL, NULL, 0, false, type, rank, extents, rows, 0};
  size_t bytes = (size_t)rows * row;
  if (rows > 0 && bytes / (size_t)rows != row)
    return dist_fail(rt, err, AC_ERR_NOMEM, "a block of %lld rows does not fit in memory",
                     (long long)rows);
  r->bytes = bytes;
  rt_gpu *g = rt->gpu;
  if (device && g && bytes > 0) {
    ac_status st = g->ops->alloc(g, bytes, &r->dev, err);
    if (st == AC_OK && rt->cuda_aware) /* (a): MPI writes once the allocation exists */
      st = g->ops->sync(g, err);
    if (st != AC_OK) {
      dist_recv_abandon(rt, r);
      return st;
    }
    if (rt->cuda_aware) {
      r->data = (void *)(uintptr_t)r->dev;
      return AC_OK;
    }
    r->staged = true; /* (b) */
    if (!(r->data = stage_get(rt, DIST_STAGE_RECV, bytes, err))) {
      dist_recv_abandon(rt, r);
      return AC_ERR_NOMEM;
    }
    return AC_OK;
  }
  /* (c) */
  if (!(r->host = dist_new_block(rt, type, rank, extents, rows, row, &r->data, err)))
    return err && *err ? (*err)->status : AC_ERR_NOMEM;
  return AC_OK;
}

ac_status dist_recv_end(ac_dist_runtime *rt, dist_recv *r, ac_array **out, ac_error **err) {
  *out = NULL;
  if (r->host) {
    *out = r->host;
    r->host = NULL;
    return AC_OK;
  }
  rt_gpu *g = rt->gpu;
  if (r->staged) {
    /* the copy reads the pinned buffer after htod returns: wait for it
     * before the buffer can be written again */
    ac_status st = g->ops->htod(g, r->dev, r->data, r->bytes, err);
    if (st == AC_OK)
      st = g->ops->sync(g, err);
    if (st != AC_OK) {
      dist_recv_abandon(rt, r);
      return st;
    }
  }
  int64_t ext[64];
  memcpy(ext, r->extents, r->rank * sizeof *ext);
  ext[0] = r->rows;
  rt_dptr d = r->dev;
  r->dev = 0;
  return rt_resid_wrap(rt->ctx, g, r->type, r->rank, ext, d, out, err); /* frees d on failure */
}

void dist_recv_abandon(ac_dist_runtime *rt, dist_recv *r) {
  ac_array_release(r->host);
  r->host = NULL;
  if (r->dev)
    rt->gpu->ops->free(rt->gpu, r->dev);
  r->dev = 0;
}

/* ---- parts of device blocks (the exchanges, exchange.c) ---- */

bool dist_on_device(ac_dist_runtime *rt, const ac_array *a, rt_dptr *d) {
  rt_gpu *g = rt->gpu;
  *d = 0;
  if (!g || !a || rt_resid_gpu(a) != g)
    return false;
  *d = rt_resid_dptr(a, g);
  return (*d || ac_array_size(a) == 0) && !rt_resid_host_valid(a);
}

void *dist_stage_get(ac_dist_runtime *rt, int k, size_t bytes, ac_error **err) {
  return stage_get(rt, k, bytes ? bytes : 1, err);
}

bool dist_runs_add(dist_runs *l, int src, size_t to, size_t from, size_t bytes) {
  dist_run *last = l->n ? &l->r[l->n - 1] : NULL;
  if (last && last->src == src && last->to + last->bytes == to &&
      last->from + last->bytes == from) {
    last->bytes += bytes;
    return true;
  }
  if (l->n == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 16;
    dist_run *r = realloc(l->r, cap * sizeof *r);
    if (!r)
      return false;
    l->r = r;
    l->cap = cap;
  }
  l->r[l->n++] = (dist_run){to, from, bytes, src};
  return true;
}

void dist_runs_free(dist_runs *l) {
  free(l->r);
  *l = (dist_runs){NULL, 0, 0};
}

size_t dist_runs_count(const dist_runs *l, int src) {
  if (src < 0)
    return l->n;
  size_t n = 0;
  for (size_t i = 0; i < l->n; i++)
    n += l->r[i].src == src;
  return n;
}

bool dist_few_runs(size_t runs, size_t whole) {
  return runs <= DIST_RUNS_FEW || runs <= whole / DIST_RUN_BYTES;
}

ac_status dist_runs_copy(ac_dist_runtime *rt, const dist_runs *l, int src, dist_place dst_at,
                         dist_place src_at, ac_error **err) {
  rt_gpu *g = rt->gpu;
  ac_status st = AC_OK;
  for (size_t i = 0; st == AC_OK && i < l->n; i++) {
    const dist_run *c = &l->r[i];
    if (src >= 0 && c->src != src)
      continue;
    if (!dst_at.host && !src_at.host)
      st = g->ops->dtod(g, dst_at.dev + c->to, src_at.dev + c->from, c->bytes, err);
    else if (!dst_at.host)
      st = g->ops->htod(g, dst_at.dev + c->to, (const char *)src_at.host + c->from, c->bytes, err);
    else if (!src_at.host)
      st = g->ops->dtoh(g, (char *)dst_at.host + c->to, src_at.dev + c->from, c->bytes, err);
    else
      memcpy((char *)dst_at.host + c->to, (const char *)src_at.host + c->from, c->bytes);
  }
  return st;
}

/* ---- queries ---- */

bool ac_dist_runtime_cuda_aware(const ac_dist_runtime *rt) {
  return rt->cuda_aware;
}
