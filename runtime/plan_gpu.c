/* runtime/plan_gpu.c: what running a plan on a GPU device adds to the
 * executor (plan_exec.c; the state and the word protocol are described in
 * plan_exec_impl.h).
 *
 * Per call: one device block holding the control block (rt_gctl) followed
 * by the device frame, from the device's pool (rt_gpu.ctl_pool: `failed`
 * clear, nothing to write) or allocated, in which case the first launch
 * writes the whole control block (no failure yet) and the words it reads
 * from the frame in one copy (pg_upload_first); at the end of the call the
 * block goes back to the pool when the last read-back found no failure
 * and nothing was queued after it. Per launch:
 *   1. the grid: a kernel with a fixed block gets it; otherwise the device's
 *      occupancy-based choice (rt_gpu_ops.limits). `chunks C` gives C
 *      blocks; `chunks auto` gives enough blocks for ceil(n / grain)
 *      threads, at most the blocks the device holds at once (the kernels
 *      are grid-stride loops); `warps W` shrinks the block to W warps
 *      (pg_cap_block);
 *   2. temporary memory for kernels that build arrays per element (k->tmp):
 *      tmp_per_thread bytes for each thread of the grid (ARRAYC_GPU_TMP,
 *      default 16 KiB), the grid of an auto launch shrunk so that all of it
 *      stays within 256 MiB; allocated and freed in stream order around
 *      the launch;
 *   3. zeroed scratch (k->scratch_*), one buffer per call grown as needed;
 *   4. the words the kernel uses go in its parameter block by value
 *      (runtime/gpu.h: its first 63 uses, those whose current value the
 *      host has and that the kernel does not write); the control block's
 *      settings and the other host-written words it uses are uploaded
 *      (runs of consecutive words in one copy each);
 *   5. the launch is queued; the words the kernel writes become pending.
 * An extern kernel (a hand-written PTX .entry; plan.h) has none of this:
 * ceil(n / block) blocks of its block, its parameters by value from the
 * host's words (fetching pending ones first), no frame, no control block.
 * Nothing waits for the device except pl_gpu_fetch (a host read of a
 * pending word) and pl_gpu_sync (the end of the call), which also read the
 * control block and turn a recorded kernel failure into the call's error.
 */
#include "runtime/plan_exec_impl.h"

#include "interp/rtarray.h"

#include <stdlib.h>
#include <string.h>

#define PG_TMP_DEFAULT ((int64_t)16 << 10)
#define PG_TMP_MAX ((int64_t)1 << 24)
#define PG_TMP_BUDGET ((int64_t)256 << 20)
#define PG_MAX_GRID ((int64_t)INT32_MAX)

static bool pg_err(pl_exec *X, ac_status st, ac_error *e) {
  return pl_fail_err(X, st, e);
}

/* ARRAYC_GPU_TMP: bytes of temporary memory per GPU thread before the
 * plan's need is known. */
static int64_t pg_tmp_default(void) {
  const char *s = getenv("ARRAYC_GPU_TMP");
  if (s && *s) {
    char *end;
    long long v = strtoll(s, &end, 10);
    if (*end == 0 && v >= 256 && v <= PG_TMP_MAX)
      return (v + 15) & ~(long long)15;
  }
  return PG_TMP_DEFAULT;
}

void rt_gpu_init(rt_gpu *g, const rt_gpu_ops *ops, ac_context *ctx) {
  g->ops = ops;
  g->ctx = ctx;
  atomic_init(&g->refs, 1);
}

/* The bytes per thread the plan is known to need (rt_gtmp's need - 1), or
 * -1 when nothing is known yet. */
static int64_t pg_tmp_known(const pl_exec *X) {
  return (X->tmp ? atomic_load(&X->tmp->need) : 0) - 1;
}

bool pl_gpu_begin(pl_exec *X) {
  rt_gpu *g = X->g;
  /* one scope for the whole call (the CUDA context made current once) */
  X->scoped = g->ops->scope_enter && g->ops->scope_enter(g);
  memset(&X->ctl, 0, sizeof X->ctl);
  int64_t known = pg_tmp_known(X);
  X->ctl.tmp_need = known > 0 ? known : 0;
  X->launched = false;
  /* A block from the device's pool: `failed` is clear and its settings are
   * stale but harmless (a launch uploads tmp and scratch whenever its
   * kernel uses them and they differ from X->ctl, and a kernel that does
   * not use them never reads them), so nothing is written up front. */
  X->ctl_poolable = X->p->nslots <= RT_GPU_CTL_WORDS;
  for (unsigned i = 0; X->ctl_poolable && i < RT_GPU_CTL_POOL; i++)
    if ((X->dctl = atomic_exchange(&g->ctl_pool[i], 0)) != 0) {
      X->ctl_fresh = false;
      X->ctl_clean = true;
      X->need_sent = false; /* another call's value */
      return true;
    }
  size_t words = X->ctl_poolable ? RT_GPU_CTL_WORDS : X->p->nslots;
  ac_error *e = NULL;
  ac_status st = g->ops->alloc(g, sizeof(rt_gctl) + words * sizeof(uint64_t), &X->dctl, &e);
  if (st != AC_OK)
    return pg_err(X, st, e);
  /* The device copy is written by the first launch, in one copy with the
   * frame words (pg_upload_first); a call that launches nothing never
   * reads it. */
  X->ctl_fresh = true;
  X->ctl_clean = false;
  return true;
}

/* The most launches one pass over instructions [a, b) makes (an if
 * counts its larger arm: a rank-2 element-wise operation's two index
 * variants are one launch); *loop is set if they hold a loop. */
static uint32_t pg_path_launches(const pl_plan *p, uint32_t a, uint32_t b, bool *loop) {
  uint32_t n = 0;
  for (uint32_t i = a; i < b && !*loop; i++) {
    const pl_inst *in = &p->insts[i];
    if (in->op == PI_FOR || in->op == PI_WHILE) {
      *loop = true;
    } else if (in->op == PI_LAUNCH) {
      n++;
    } else if (in->op == PI_IF) {
      uint32_t m = in->match, end = m; /* the else, or the end */
      uint32_t t = pg_path_launches(p, i + 1, m, loop), e = 0;
      if (p->insts[m].op == PI_ELSE) {
        end = p->insts[m].match;
        e = pg_path_launches(p, m + 1, end, loop);
      }
      n += t > e ? t : e;
      i = end;
    }
  }
  return n;
}

bool pl_gpu_batchable(const pl_plan *p, uint32_t pc) {
  bool loop = false;
  uint32_t n = pg_path_launches(p, pc + 1, p->insts[pc].match, &loop);
  return !loop && n >= 2;
}

void pl_gpu_batch_begin(pl_exec *X) {
  if (X->g->ops->batch_begin) {
    X->g->ops->batch_begin(X->g);
    X->batches++;
  }
}

bool pl_gpu_batch_end(pl_exec *X) {
  if (!X->g->ops->batch_end || !X->batches)
    return true;
  X->batches--;
  ac_error *e = NULL;
  ac_status st = X->g->ops->batch_end(X->g, &e);
  return st == AC_OK || pg_err(X, st, e);
}

void pl_gpu_end(pl_exec *X) {
  rt_gpu *g = X->g;
  while (X->batches) /* a failure left the body (its error is the call's) */
    (void)pl_gpu_batch_end(X);
  for (uint32_t i = 0; i < X->nspare; i++)
    g->ops->free(g, X->spare[i].d);
  X->nspare = 0;
  g->ops->free(g, X->scratch);
  bool kept = false;
  for (unsigned i = 0; X->ctl_clean && X->ctl_poolable && !kept && i < RT_GPU_CTL_POOL; i++) {
    rt_dptr none = 0;
    kept = atomic_compare_exchange_strong(&g->ctl_pool[i], &none, X->dctl);
  }
  if (!kept)
    g->ops->free(g, X->dctl);
  if (X->scoped)
    g->ops->scope_leave(g);
}

/* Reads the control block (and words [0, upto) of the device frame into
 * buf) after everything queued; reports a failure recorded there. */
static bool pg_read_back(pl_exec *X, uint32_t upto) {
  rt_gpu *g = X->g;
  if (!X->launched) {
    /* no kernel of ours ran: no failure to read, no word pending; wait for
     * what is queued (copies, extern kernels) as a read-back would */
    ac_error *e = NULL;
    ac_status st = g->ops->sync(g, &e);
    return st == AC_OK || pg_err(X, st, e);
  }
  size_t bytes = sizeof(rt_gctl) + (size_t)upto * sizeof(uint64_t);
  rt_gctl *buf = ac_alloc(X->p->ctx, bytes);
  if (!buf)
    return pg_err(X, AC_ERR_NOMEM, NULL);
  ac_error *e = NULL;
  ac_status st = g->ops->dtoh(g, buf, X->dctl, bytes, &e);
  if (st != AC_OK) {
    ac_free(X->p->ctx, buf);
    return pg_err(X, st, e);
  }
  const uint64_t *dframe = (const uint64_t *)(const void *)(buf + 1);
  for (uint32_t w = 0; w < upto; w++)
    if (X->wstate[w] & PL_W_PENDING) {
      X->frame[w] = dframe[w];
      X->wstate[w] = 0;
    }
  if (upto) {
    X->npending = 0;
    X->maxpending = 0;
  }
  int32_t failed = buf->failed, site = buf->site;
  int64_t vals[RT_FAIL_VALS] = {buf->a, buf->b};
  memcpy(vals + 2, buf->more, sizeof buf->more);
  if (buf->tmp_need > X->tmp_need)
    X->tmp_need = buf->tmp_need;
  ac_free(X->p->ctx, buf);
  if (!failed)
    return X->ctl_clean = true;
  if (X->tmp && X->tmp_need > X->tmp_given && site >= 0 && (uint32_t)site < X->p->nsites)
    atomic_store(&X->tmp->site, site + 1); /* short of temporary memory there */
  if (site < 0 || (uint32_t)site >= X->p->nsites)
    return pl_fail_at(X, AC_ERR_INTERNAL, PL_AUTO, "plan '%s': a kernel failed at site %d",
                      X->p->name, (int)site);
  X->failing = true; /* this is the kernels' failure (pl_fail_at) */
  pl_fail_site(X, (uint32_t)site, RT_FAIL_VALS, vals);
  X->failing = false;
  return false;
}

bool pl_gpu_fetch(pl_exec *X) {
  if (X->st != AC_OK)
    return false;
  return pg_read_back(X, X->npending ? X->maxpending + 1 : 0);
}

bool pl_gpu_sync(pl_exec *X) {
  return pl_gpu_fetch(X);
}

int64_t pl_gpu_chunks(pl_exec *X, int64_t n, int64_t grain) {
  int64_t par = X->g->ops->parallelism(X->g);
  if (n <= 0 || grain < 1)
    return 1;
  int64_t c = n / grain + (n % grain != 0);
  return c < 1 ? 1 : c > par ? (par < 1 ? 1 : par) : c;
}

/* Uploads the host-written words among k's uses, in as few copies as it
 * may: one copy spans dirty words that are at most PG_GAP words apart
 * (an iterate step's counter and its new buffer's word, say), the words
 * in between included, unless one of those is pending (the device holds
 * its value; the host copy is stale). A clean word in between has the
 * same value on both sides, and a word nothing has written yet is a
 * don't-care, so copying them changes nothing. */
#define PG_GAP 32u

/* Whether use u of k travels in the launch's parameter block (mask: its
 * params[0]); such a use needs no copy even when it is dirty. */
static bool pg_by_value(uint64_t mask, uint32_t u) {
  return u < RT_GPU_PARAMS - 1 && ((mask >> u) & 1) != 0;
}

/* The launch's parameter block (runtime/gpu.h): use u < RT_GPU_PARAMS - 1
 * of k goes by value unless its current value is on the device only (a
 * pending word) or k writes it (the kernel then reads it where it writes
 * it); returns the mask, params[0]. */
static uint64_t pg_params(const pl_exec *X, const pl_kernel *k, uint64_t *pb) {
  uint64_t mask = 0;
  uint32_t n = k->nuses < RT_GPU_PARAMS - 1 ? k->nuses : RT_GPU_PARAMS - 1, wi = 0;
  memset(pb, 0, RT_GPU_PARAMS * sizeof *pb);
  for (uint32_t u = 0; u < n; u++) {
    uint32_t w = k->uses[u];
    while (wi < k->nwrites && k->writes[wi] < w) /* writes ascend too (plan.h) */
      wi++;
    if ((wi < k->nwrites && k->writes[wi] == w) || (X->wstate[w] & PL_W_PENDING))
      continue;
    pb[1 + u] = X->frame[w];
    mask |= (uint64_t)1 << u;
  }
  pb[0] = mask;
  return mask;
}

static bool pg_upload_uses(pl_exec *X, const pl_kernel *k, uint64_t mask) {
  rt_gpu *g = X->g;
  for (uint32_t u = 0; u < k->nuses;) {
    uint32_t w = k->uses[u];
    if (!(X->wstate[w] & PL_W_DIRTY) || pg_by_value(mask, u)) {
      u++;
      continue;
    }
    /* extend over later dirty uses while the gap holds nothing pending */
    uint32_t last = w, end = u + 1;
    for (uint32_t v = u + 1; v < k->nuses; v++) {
      uint32_t x = k->uses[v];
      if (!(X->wstate[x] & PL_W_DIRTY) || pg_by_value(mask, v))
        continue;
      if (x - last > PG_GAP)
        break;
      bool pending = false;
      for (uint32_t y = last + 1; y < x && !pending; y++)
        pending = (X->wstate[y] & PL_W_PENDING) != 0;
      if (pending)
        break;
      last = x;
      end = v + 1;
    }
    uint32_t n = last - w + 1;
    ac_error *e = NULL;
    ac_status st = g->ops->htod(g, X->dctl + sizeof(rt_gctl) + (size_t)w * sizeof(uint64_t),
                                &X->frame[w], (size_t)n * sizeof(uint64_t), &e);
    if (st != AC_OK)
      return pg_err(X, st, e);
    for (uint32_t y = w; y <= last; y++)
      X->wstate[y] &= (uint8_t)~PL_W_DIRTY;
    u = end;
  }
  return true;
}

/* The call's first launch of an arrayc kernel: the whole control block
 * (no failure yet, this launch's settings) and the frame words up to the
 * last one k reads from the frame (not by value), in one copy (they are
 * adjacent on the device). No word is pending before a kernel of ours has
 * run, so every word uploaded has its current value on the host (words
 * never written are don't-cares). */
static bool pg_upload_first(pl_exec *X, const pl_kernel *k, uint64_t mask) {
  uint32_t hi = 0;
  for (uint32_t u = k->nuses; u-- > 0;) /* uses ascend (plan.h) */
    if (!pg_by_value(mask, u)) {
      hi = k->uses[u] + 1;
      break;
    }
  size_t bytes = sizeof(rt_gctl) + (size_t)hi * sizeof(uint64_t);
  enum { PG_FIRST_SMALL = 1024 };
  uint64_t small[PG_FIRST_SMALL / sizeof(uint64_t)];
  char *buf = bytes <= sizeof small ? (char *)small : ac_alloc(X->p->ctx, bytes);
  if (!buf)
    return pg_err(X, AC_ERR_NOMEM, NULL);
  memcpy(buf, &X->ctl, sizeof(rt_gctl));
  if (hi)
    memcpy(buf + sizeof(rt_gctl), X->frame, (size_t)hi * sizeof(uint64_t));
  ac_error *e = NULL;
  ac_status st = X->g->ops->htod(X->g, X->dctl, buf, bytes, &e);
  if (buf != (char *)small)
    ac_free(X->p->ctx, buf);
  if (st != AC_OK)
    return pg_err(X, st, e);
  for (uint32_t w = 0; w < hi; w++)
    X->wstate[w] &= (uint8_t)~PL_W_DIRTY;
  X->ctl_fresh = false;
  X->need_sent = true;
  return true;
}

/* Uploads the control block's settings (tmp, scratch), not its failure;
 * tmp_need too the first time (the kernels raise it from there). */
static bool pg_upload_ctl(pl_exec *X) {
  ac_error *e = NULL;
  size_t end = X->need_sent ? RT_GCTL_TMP_NEED : RT_GCTL_DUMMY;
  ac_status st = X->g->ops->htod(X->g, X->dctl + RT_GCTL_TMP, (const char *)&X->ctl + RT_GCTL_TMP,
                                 end - RT_GCTL_TMP, &e);
  X->need_sent = true;
  return st == AC_OK || pg_err(X, st, e);
}

/* An extern kernel (plan.h): n threads in blocks of k->block, its
 * parameters read from the host's frame words. pl_wget fetches a word a
 * kernel wrote (a pending word: say, a length a filter computed) before
 * its value is used, so the host copy is current. Nothing is uploaded to
 * the device frame: the kernel gets its parameters by value and never
 * reads the frame (dirty words stay dirty for the next arrayc kernel). */
static bool pg_launch_extern(pl_exec *X, const pl_inst *in, rt_gkernel *gk) {
  rt_gpu *g = X->g;
  const pl_plan *p = X->p;
  const pl_kernel *k = &p->kernels[in->k];
  int64_t n = pl_eval_expr(X, in->e);
  if (X->st != AC_OK)
    return false;
  if (n <= 0)
    return true;
  int64_t grid = n / k->block + (n % k->block != 0);
  if (grid > PG_MAX_GRID)
    return pl_fail_at(X, AC_ERR_RUNTIME, PL_AUTO,
                      "plan '%s': extern kernel k%u (%s): %lld threads need %lld blocks of %u, "
                      "more than the %lld a launch may have",
                      p->name, in->k, k->symbol, (long long)n, (long long)grid, k->block,
                      (long long)PG_MAX_GRID);
  /* values and pointers to them; the driver copies them before returning */
  enum { PG_SMALL = 16 };
  uint64_t vsmall[PG_SMALL];
  void *psmall[PG_SMALL];
  uint64_t *vals = vsmall;
  void **params = psmall;
  void *heap = NULL;
  if (k->nkargs > PG_SMALL) {
    heap = ac_alloc(p->ctx, (size_t)k->nkargs * (sizeof *vals + sizeof *params));
    if (!heap)
      return pg_err(X, AC_ERR_NOMEM, NULL);
    params = heap;
    vals = (uint64_t *)(void *)(params + k->nkargs);
  }
  /* A data word holds the array's device address; a scalar word holds the
   * value in its low bytes (rt.h: little-endian), and the driver reads the
   * parameter's size from its start. */
  for (uint32_t a = 0; a < k->nkargs && X->st == AC_OK; a++) {
    vals[a] = pl_wget(X, k->kargs[a].word);
    params[a] = &vals[a];
  }
  bool ok = X->st == AC_OK;
  if (ok) {
    ac_error *e = NULL;
    ac_status st = g->ops->launch_params(g, gk, (unsigned)grid, k->block, params, &e);
    if (st == AC_ERR_UNSUPPORTED && e) { /* the emulator's kernels have no names */
      ok = pl_fail_at(X, st, PL_AUTO, "plan '%s': extern kernel k%u (%s): %s", p->name, in->k,
                      k->symbol, e->message);
      ac_error_destroy(e);
    } else {
      ok = st == AC_OK || pg_err(X, st, e);
    }
  }
  ac_free(p->ctx, heap);
  return ok;
}

/* Bytes of temporary memory per thread for a launch: what the plan is
 * known to need (X->tmp, pl_run_gpu_tmp; possibly 0), else the default. */
static int64_t pg_tmp_per_thread(pl_exec *X) {
  int64_t known = pg_tmp_known(X);
  if (known < 0)
    return pg_tmp_default();
  return (known + 15) & ~(int64_t)15;
}

/* The grid (and, unless the kernel has a fixed block, the block) of an
 * auto launch whose threads get `per` bytes each: all of it within
 * PG_TMP_BUDGET, down to one block of one warp (which may exceed it). */
static void pg_tmp_grid(int64_t per, bool fixed, unsigned *block, int64_t *grid) {
  int64_t threads = PG_TMP_BUDGET / per;
  if (!fixed && threads < (int64_t)*block)
    *block = threads < 32 ? 32 : (unsigned)(threads & ~(int64_t)31);
  int64_t fit = threads / (int64_t)*block;
  if (*grid > fit)
    *grid = fit < 1 ? 1 : fit;
}

/* `warps W` (plan.h): blocks of at most W warps (W < 1 counts as 1), and
 * the cap on the grid scaled by the ratio of the block sizes, as the
 * blocks a device holds at once grow when each takes fewer threads and
 * registers (it may overstate the blocks an SM holds at once when blocks
 * are tiny; the grid-stride kernels are correct with any grid). */
static void pg_cap_block(int64_t warps, unsigned *block, rt_glimits *lim) {
  int64_t cap = (warps < 1 ? 1 : warps > 32 ? 32 : warps) * 32;
  if ((int64_t)*block <= cap)
    return;
  uint64_t grid = (uint64_t)lim->max_grid * *block / (unsigned)cap;
  lim->max_grid = grid > (uint64_t)INT32_MAX ? INT32_MAX : (unsigned)grid;
  *block = (unsigned)cap;
}

bool pl_gpu_launch(pl_exec *X, const pl_inst *in) {
  rt_gpu *g = X->g;
  const pl_plan *p = X->p;
  const pl_kernel *k = &p->kernels[in->k];
  rt_gkernel *gk = X->gk ? X->gk[in->k] : NULL;
  if (!gk)
    return pl_fail_at(X, AC_ERR_INTERNAL, PL_AUTO, "plan '%s': kernel k%u (%s) is not loaded",
                      p->name, in->k, k->symbol);
  if (k->ptx)
    return pg_launch_extern(X, in, gk);
  int64_t n = pl_eval_expr(X, in->e);
  rt_glimits lim;
  g->ops->limits(g, gk, &lim);
  unsigned block = k->block ? k->block : lim.block;
  if (block == 0 || block > lim.max_block)
    return pl_fail_at(X, AC_ERR_INTERNAL, PL_AUTO,
                      "plan '%s': kernel k%u needs blocks of %u threads; the device allows %u",
                      p->name, in->k, block, lim.max_block);
  if (in->e3 != PL_AUTO) /* `warps W`: smaller blocks, more of them resident */
    pg_cap_block(pl_eval_expr(X, in->e3), &block, &lim);
  int64_t grid;
  if (in->e2 != PL_AUTO) {
    grid = pl_eval_expr(X, in->e2);
  } else {
    int64_t threads = n <= 0 ? 1 : n / k->grain + (n % k->grain != 0);
    grid = threads / block + (threads % block != 0);
    if (grid > (int64_t)lim.max_grid)
      grid = lim.max_grid;
  }
  if (X->st != AC_OK)
    return false;
  grid = grid < 1 ? 1 : grid > PG_MAX_GRID ? PG_MAX_GRID : grid;

  rt_dptr tmp = 0;
  ac_error *e = NULL;
  ac_status st;
  bool settings = false;
  if (k->tmp) {
    int64_t per = pg_tmp_per_thread(X);
    if (per > 0) {
      if (in->e2 == PL_AUTO)
        pg_tmp_grid(per, k->block != 0, &block, &grid);
      st = g->ops->alloc(g, (size_t)(grid * block * per), &tmp, &e);
      int32_t site = X->tmp ? atomic_load(&X->tmp->site) - 1 : -1;
      if (st == AC_ERR_NOMEM && site >= 0) { /* at the operation that needs it, as on the CPU */
        pl_fail_at(X, st, (uint32_t)site, "%s", e ? ac_error_message(e) : "out of device memory");
        ac_error_destroy(e);
        return false;
      }
      if (st != AC_OK)
        return pg_err(X, st, e);
      if (per > X->tmp_given)
        X->tmp_given = per;
    }
    /* a plan known to need none gets none, and its grid is not capped */
    settings = !X->need_sent || tmp != X->ctl.tmp || per != X->ctl.tmp_per_thread;
    X->ctl.tmp = tmp;
    X->ctl.tmp_per_thread = per;
  } else if (X->ctl.tmp) { /* freed after its launch: never left behind */
    X->ctl.tmp = 0;
    X->ctl.tmp_per_thread = 0;
    settings = true;
  }
  uint64_t sbytes = k->scratch_fixed + k->scratch_block * (uint64_t)grid;
  /* the prefix that must be zero: the counters, or all of it */
  bool counters = k->counters_fixed || k->counters_block;
  uint64_t zbytes = counters ? k->counters_fixed + k->counters_block * (uint64_t)grid : sbytes;
  if (sbytes) {
    if (sbytes > X->scratch_cap) {
      g->ops->free(g, X->scratch);
      X->scratch = 0;
      X->scratch_cap = 0;
      X->scratch_zero = 0;
      if ((st = g->ops->alloc(g, (size_t)sbytes, &X->scratch, &e)) != AC_OK) {
        g->ops->free(g, tmp);
        return pg_err(X, st, e);
      }
      X->scratch_cap = (size_t)sbytes;
    }
    if (X->scratch_zero < zbytes) {
      if ((st = g->ops->memset0(g, X->scratch, (size_t)zbytes, &e)) != AC_OK) {
        g->ops->free(g, tmp);
        return pg_err(X, st, e);
      }
    }
    /* after the launch: its counters are zero again, the rest written */
    X->scratch_zero = counters ? zbytes : 0;
  }
  /* A kernel without scratch never reads ctl->scratch (lw_gpu_scratch_ptr
   * is only in kernels with scratch), and X->scratch lives until the end
   * of the call or a larger one replaces it, so the setting is left as it
   * is: no upload between a fold and the map after it. */
  if (sbytes && (X->ctl.scratch != X->scratch || X->ctl.scratch_bytes != (int64_t)sbytes)) {
    X->ctl.scratch = X->scratch;
    X->ctl.scratch_bytes = (int64_t)sbytes;
    settings = true;
  }
  uint64_t pb[RT_GPU_PARAMS];
  uint64_t mask = pg_params(X, k, pb);
  bool ok = X->ctl_fresh ? pg_upload_first(X, k, mask)
                         : (!settings || pg_upload_ctl(X)) && pg_upload_uses(X, k, mask);
  if (ok) {
    X->launched = true;
    X->ctl_clean = false;
    st = g->ops->launch(g, gk, (unsigned)grid, block, 0, X->dctl + sizeof(rt_gctl), X->dctl, n,
                        pb, &e);
    ok = st == AC_OK || pg_err(X, st, e);
  }
  g->ops->free(g, tmp); /* stream-ordered: after the kernel */
  if (!ok)
    return false;
  for (uint32_t i = 0; i < k->nwrites; i++) {
    uint32_t w = k->writes[i];
    if (!(X->wstate[w] & PL_W_PENDING))
      X->npending++;
    X->wstate[w] = PL_W_PENDING;
    if (w > X->maxpending) /* reset when everything is fetched */
      X->maxpending = w;
  }
  return true;
}

/* Buffers of intermediate arrays: an array the call drops while nothing
 * else holds it gives its device buffer to the call's spares, and the
 * call's next allocation of the same size takes it instead of allocating
 * (an iterate step's new state reuses the state two steps back). Reuse is
 * ordered as cuMemFreeAsync's is: everything runs on the device's one
 * stream, so kernels queued later write the buffer only after the earlier
 * ones that read it. The spares are freed at the end of the call. */
void pl_gpu_recycle(pl_exec *X, ac_array *a) {
  if (X->nspare == PL_GPU_SPARE)
    return;
  rt_dptr d;
  size_t bytes;
  if (rt_resid_take(a, X->g, &d, &bytes)) {
    X->spare[X->nspare].d = d;
    X->spare[X->nspare].bytes = bytes ? bytes : 1;
    X->nspare++;
  }
}

bool pl_gpu_alloc(pl_exec *X, const pl_inst *in, const int64_t *ext, ac_array **out, rt_dptr *d,
                  bool quiet) {
  rt_gpu *g = X->g;
  int64_t count;
  size_t elsize = ac_scalar_size((ac_scalar)in->sc);
  if (!rt_array_count(in->rank, ext, elsize, &count))
    return !quiet && pl_fail_at(X, AC_ERR_RUNTIME, in->k, "array too large");
  ac_error *e = NULL;
  size_t bytes = (size_t)count * elsize;
  ac_status st = AC_ERR_NOMEM;
  for (uint32_t i = 0; i < X->nspare; i++)
    if (X->spare[i].bytes == (bytes ? bytes : 1)) {
      *d = X->spare[i].d;
      X->spare[i] = X->spare[--X->nspare];
      st = AC_OK;
      break;
    }
  if (st != AC_OK)
    st = g->ops->alloc(g, bytes ? bytes : 1, d, &e);
  if (st != AC_OK && quiet) {
    ac_error_destroy(e);
    return false;
  }
  if (st == AC_ERR_NOMEM) { /* at the operation's position, as on the CPU */
    pl_fail_at(X, st, in->k, "%s", e ? ac_error_message(e) : "out of device memory");
    ac_error_destroy(e);
    return false;
  }
  if (st != AC_OK)
    return pg_err(X, st, e);
  st = rt_resid_wrap(X->p->ctx, g, (ac_scalar)in->sc, in->rank, ext, *d, out, &e);
  if (st != AC_OK && quiet) { /* rt_resid_wrap freed d */
    ac_error_destroy(e);
    return false;
  }
  return st == AC_OK || pg_err(X, st, e);
}

bool pl_gpu_copy_out(pl_exec *X, ac_scalar sc, uint32_t rank, const int64_t *ext, size_t bytes,
                     uintptr_t src, ac_array **out) {
  rt_gpu *g = X->g;
  rt_dptr d;
  ac_error *e = NULL;
  ac_status st = g->ops->alloc(g, bytes ? bytes : 1, &d, &e);
  if (st != AC_OK)
    return pg_err(X, st, e);
  if (bytes && (st = g->ops->dtod(g, d, (rt_dptr)src, bytes, &e)) != AC_OK) {
    g->ops->free(g, d);
    return pg_err(X, st, e);
  }
  st = rt_resid_wrap(X->p->ctx, g, sc, rank, ext, d, out, &e);
  return st == AC_OK || pg_err(X, st, e);
}
