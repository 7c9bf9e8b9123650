/* runtime/simt_dev.c: the emulated GPU device (gpu.h's rt_emu_create), so
 * that everything above the device (the GPU plan executor, residency)
 * runs and is tested on machines without a GPU.
 *
 * "Device memory" is host memory and "device addresses" are host addresses.
 * Allocations come from the context allocator (not malloc), over-allocated
 * and aligned to 256 bytes by hand: the context's hooks are how tests count
 * and fail allocations and how embedders account memory, and device memory
 * is memory too; 256 is what cuMemAlloc guarantees, so kernels that rely on
 * it (vector loads, 128-byte coalescing assumptions) behave the same. Fresh
 * allocations are filled with the byte 0xA5 rather than left with whatever
 * the allocator had: a kernel that reads device memory nobody wrote gets
 * the same wrong bytes on every run, and a skeleton that assumes fresh
 * memory is zero (it is not on a GPU) fails in the emulator too.
 *
 * The stream is trivial: every operation runs synchronously when queued, so
 * sync has nothing to wait for and a launch reports a divergence or
 * deadlock (simt_emu.c) at once. The device keeps the GPU threads' stacks
 * from one launch to the next (rt_simt_run_cached), which makes a small
 * launch cost microseconds instead of milliseconds of page faults. A kernel is a host function plus
 * its static shared-memory size and its fixed block size (0: any); it is represented by
 * rt_emu_kernel, cast to the opaque rt_gkernel (the CUDA device has its own representation; a
 * kernel is only ever used on the device that made it).
 *
 * Limits: the preferred block is the kernel's fixed block, else 64, which
 * ARRAYC_SIMT_BLOCK (a positive multiple of 32 up to 1024) overrides; the
 * largest block is 1024 (the fixed block for kernels that have one); the
 * resident grid is 4 blocks, which ARRAYC_SIMT_GRID (1..65535) overrides.
 * A small grid makes grid-stride loops really stride and still runs several
 * blocks, so the cross-block paths (partials, tickets, look-back) are
 * exercised on small inputs. The environment is read when the device is
 * created; invalid values are ignored.
 */
#include "runtime/simt_emu.h"

#include "runtime/simt_prof.h"

#include "ir.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define RT_EMU_ALIGN 256u
#define RT_EMU_FILL 0xA5
#define RT_EMU_DEFAULT_BLOCK 64u
#define RT_EMU_DEFAULT_GRID 4u
#define RT_EMU_MAX_BLOCK 1024u
#define RT_EMU_MAX_GRID 65535u

typedef struct rt_emu_dev {
  rt_gpu base;       /* first: an rt_gpu * is an rt_emu_dev * */
  unsigned block;    /* preferred threads per block for kernels without a fixed one */
  unsigned max_grid; /* resident blocks */
  /* the threads' stacks of the last launch, for the next (NULL while a
   * launch has them; a launch that finds none maps its own) */
  _Atomic(rt_simt_stacks *) stacks;
} rt_emu_dev;

typedef struct rt_emu_kern {
  rt_gkernel_fn fn;
  size_t smem;        /* static shared bytes */
  unsigned block;     /* fixed block size, 0: any */
  rt_simt_prof *prof; /* an instrumented kernel's counts (simt_prof.h), else NULL */
} rt_emu_kern;

static ac_status rt_emu_report(ac_context *ctx, ac_error **err, ac_status st, const char *fmt,
                               ...) {
  va_list ap;
  va_start(ap, fmt);
  ac_error *e = ir_verror(ctx, st, NULL, (ir_loc){0, 0}, fmt, ap);
  va_end(ap);
  return ir_report(err, e, e ? st : AC_ERR_NOMEM);
}

static void *rt_emu_ptr(rt_dptr p) {
  return (void *)(uintptr_t)p;
}

static void rt_emu_destroy(rt_gpu *g) {
  rt_emu_dev *d = (rt_emu_dev *)(void *)g;
  rt_simt_stacks_free(g->ctx, atomic_load(&d->stacks));
  ac_free(g->ctx, d);
}

/* The allocation's start, for ac_free, is kept in the word before the
 * aligned block. */
static ac_status rt_emu_alloc(rt_gpu *g, size_t bytes, rt_dptr *out, ac_error **err) {
  size_t extra = RT_EMU_ALIGN + sizeof(void *);
  char *raw = bytes <= SIZE_MAX - extra ? ac_alloc(g->ctx, bytes + extra) : NULL;
  if (!raw) {
    *out = 0;
    return rt_emu_report(g->ctx, err, AC_ERR_NOMEM,
                         "SIMT emulator: out of device memory allocating %zu bytes", bytes);
  }
  uintptr_t p =
      ((uintptr_t)raw + sizeof(void *) + RT_EMU_ALIGN - 1) & ~(uintptr_t)(RT_EMU_ALIGN - 1);
  memcpy((char *)p - sizeof(void *), &raw, sizeof raw);
  memset((void *)p, RT_EMU_FILL, bytes);
  *out = (rt_dptr)p;
  return AC_OK;
}

static void rt_emu_free(rt_gpu *g, rt_dptr p) {
  if (!p)
    return;
  void *raw;
  memcpy(&raw, (char *)rt_emu_ptr(p) - sizeof(void *), sizeof raw);
  ac_free(g->ctx, raw);
}

/* Zero-byte copies may come with null addresses, which memcpy must not see. */
static ac_status rt_emu_htod(rt_gpu *g, rt_dptr dst, const void *src, size_t bytes,
                             ac_error **err) {
  if (bytes)
    memcpy(rt_emu_ptr(dst), src, bytes);
  return AC_OK;
}

static ac_status rt_emu_dtoh(rt_gpu *g, void *dst, rt_dptr src, size_t bytes, ac_error **err) {
  if (bytes)
    memcpy(dst, rt_emu_ptr(src), bytes);
  return AC_OK;
}

static ac_status rt_emu_dtod(rt_gpu *g, rt_dptr dst, rt_dptr src, size_t bytes, ac_error **err) {
  if (bytes)
    memmove(rt_emu_ptr(dst), rt_emu_ptr(src), bytes);
  return AC_OK;
}

static ac_status rt_emu_memset0(rt_gpu *g, rt_dptr dst, size_t bytes, ac_error **err) {
  if (bytes)
    memset(rt_emu_ptr(dst), 0, bytes);
  return AC_OK;
}

/* A kernel compiled for a fixed block assumes it (shared arrays sized for
 * it), so it must be launched with exactly that many threads: stricter
 * than CUDA's maxntid, on purpose, to catch an executor that launches a
 * fixed-block kernel with another size. */
static ac_status rt_emu_launch(rt_gpu *g, rt_gkernel *k, unsigned grid, unsigned block, size_t smem,
                               rt_dptr frame, rt_dptr ctl, int64_t n, const uint64_t *params,
                               ac_error **err) {
  const rt_emu_kern *ek = (const rt_emu_kern *)(void *)k;
  if (!ek)
    return rt_emu_report(g->ctx, err, AC_ERR_INTERNAL, "SIMT emulator: launch of no kernel");
  if (ek->block && block != ek->block)
    return rt_emu_report(g->ctx, err, AC_ERR_INTERNAL,
                         "SIMT emulator: a kernel compiled for blocks of %u threads launched with "
                         "%u",
                         ek->block, block);
  if (smem > SIZE_MAX / 4 || ek->smem > SIZE_MAX / 4)
    return rt_emu_report(g->ctx, err, AC_ERR_INTERNAL,
                         "SIMT emulator: %zu + %zu bytes of shared memory", ek->smem, smem);
  /* concurrent launches from several host threads: one takes the cached
   * stacks, the others map their own; one set is kept afterwards */
  rt_emu_dev *d = (rt_emu_dev *)(void *)g;
  rt_simt_stacks *s = atomic_exchange(&d->stacks, NULL);
  ac_status st = rt_simt_run_prof(g->ctx, ek->fn, grid, block, ek->smem + smem, rt_emu_ptr(frame),
                                  rt_emu_ptr(ctl), n, params, &s, ek->prof, err);
  rt_simt_stacks_free(g->ctx, atomic_exchange(&d->stacks, s));
  return st;
}

/* Extern kernels are PTX, and the emulator runs host code only (lowering
 * never gives it one; a hand-written plan could). Its kernels have no
 * name: the plan executor adds which kernel it was. */
static ac_status rt_emu_launch_params(rt_gpu *g, rt_gkernel *k, unsigned grid, unsigned block,
                                      void **params, ac_error **err) {
  return rt_emu_report(g->ctx, err, AC_ERR_UNSUPPORTED,
                       "the SIMT emulator cannot run PTX kernels (an extern kernel needs a CUDA "
                       "device)");
}

static ac_status rt_emu_sync(rt_gpu *g, ac_error **err) {
  return AC_OK;
}

static void rt_emu_limits(rt_gpu *g, rt_gkernel *k, rt_glimits *out) {
  const rt_emu_dev *d = (const rt_emu_dev *)(void *)g;
  const rt_emu_kern *ek = (const rt_emu_kern *)(void *)k;
  unsigned fixed = ek ? ek->block : 0;
  out->block = fixed ? fixed : d->block;
  out->max_block = fixed ? fixed : RT_EMU_MAX_BLOCK;
  out->max_grid = d->max_grid;
}

static int64_t rt_emu_parallelism(rt_gpu *g) {
  const rt_emu_dev *d = (const rt_emu_dev *)(void *)g;
  return (int64_t)d->max_grid * d->block;
}

static const rt_gpu_ops rt_emu_ops = {
    .name = "simt-emu",
    .destroy = rt_emu_destroy,
    .alloc = rt_emu_alloc,
    .free = rt_emu_free,
    .htod = rt_emu_htod,
    .dtoh = rt_emu_dtoh,
    .dtod = rt_emu_dtod,
    .memset0 = rt_emu_memset0,
    .launch = rt_emu_launch,
    .launch_params = rt_emu_launch_params,
    .sync = rt_emu_sync,
    .limits = rt_emu_limits,
    .parallelism = rt_emu_parallelism,
};

/* The environment variable `name` as a number in [1, max] that is a multiple
 * of `mult`, or `def` when it is unset or anything else. */
static unsigned rt_emu_env(const char *name, unsigned mult, unsigned max, unsigned def) {
  const char *s = getenv(name);
  if (!s || !*s)
    return def;
  char *end;
  unsigned long v = strtoul(s, &end, 10);
  if (*end || *s == '-' || *s == '+' || v == 0 || v > max || v % mult)
    return def;
  return (unsigned)v;
}

ac_status rt_emu_create(ac_context *ctx, rt_gpu **out, ac_error **err) {
  *out = NULL;
  rt_emu_dev *d = ac_alloc(ctx, sizeof *d);
  if (!d)
    return rt_emu_report(ctx, err, AC_ERR_NOMEM, "SIMT emulator: out of memory");
  memset(d, 0, sizeof *d);
  rt_gpu_init(&d->base, &rt_emu_ops, ctx);
  atomic_init(&d->stacks, NULL);
  d->block = rt_emu_env("ARRAYC_SIMT_BLOCK", 32, RT_EMU_MAX_BLOCK, RT_EMU_DEFAULT_BLOCK);
  d->max_grid = rt_emu_env("ARRAYC_SIMT_GRID", 1, RT_EMU_MAX_GRID, RT_EMU_DEFAULT_GRID);
  *out = &d->base;
  return AC_OK;
}

ac_status rt_emu_kernel_profiled(rt_gpu *g, rt_gkernel_fn fn, size_t smem, unsigned block,
                                 const rt_simt_site *sites, uint32_t nsites, rt_gkernel **out,
                                 ac_error **err) {
  *out = NULL;
  if (!g) /* no context to make an error with */
    return AC_ERR_INTERNAL;
  if (g->ops != &rt_emu_ops)
    return rt_emu_report(g->ctx, err, AC_ERR_INTERNAL,
                         "SIMT emulator: a kernel for a device that is not the emulator");
  if (!fn || block % 32 || block > RT_EMU_MAX_BLOCK)
    return rt_emu_report(g->ctx, err, AC_ERR_INTERNAL,
                         "SIMT emulator: a kernel with %s and a fixed block of %u threads (must be "
                         "0 or a multiple of 32 up to 1024)",
                         fn ? "a function" : "no function", block);
  rt_emu_kern *k = ac_alloc(g->ctx, sizeof *k);
  if (!k)
    return rt_emu_report(g->ctx, err, AC_ERR_NOMEM, "SIMT emulator: out of memory");
  k->fn = fn;
  k->smem = smem;
  k->block = block;
  k->prof = NULL;
  if (sites && !(k->prof = rt_simt_prof_create(g->ctx, sites, nsites))) {
    ac_free(g->ctx, k);
    return rt_emu_report(g->ctx, err, AC_ERR_NOMEM, "SIMT emulator: out of memory");
  }
  *out = (rt_gkernel *)(void *)k;
  return AC_OK;
}

ac_status rt_emu_kernel(rt_gpu *g, rt_gkernel_fn fn, size_t smem, unsigned block, rt_gkernel **out,
                        ac_error **err) {
  return rt_emu_kernel_profiled(g, fn, smem, block, NULL, 0, out, err);
}

rt_simt_prof *rt_emu_kernel_prof(rt_gpu *g, rt_gkernel *k) {
  if (!g || !k || g->ops != &rt_emu_ops)
    return NULL;
  return ((rt_emu_kern *)(void *)k)->prof;
}

void rt_emu_kernel_free(rt_gpu *g, rt_gkernel *k) {
  if (g && k) {
    rt_simt_prof_destroy(g->ctx, ((rt_emu_kern *)(void *)k)->prof);
    ac_free(g->ctx, k);
  }
}
