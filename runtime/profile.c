/* runtime/profile.c: the profile of a function's kernels (runtime.h's
 * ac_function_profile family), read from the SIMT emulator's per-kernel
 * counts (simt_prof.h). Whether a function is profiled is decided when it
 * is compiled (ac_runtime_set_profiling): its emulator kernels then carry
 * a profile each, which this file only reads, resets and formats.
 */
#include "runtime/function.h"
#include "runtime/simt_prof.h"

#include "ir.h"

#include <string.h>

/* Kernel i's profile, or NULL with *err set (st says why). */
static rt_simt_prof *prof_of(const ac_function *f, size_t i, ac_status *st, ac_error **err) {
  *st = AC_OK;
  if (f->backend != AC_BACKEND_SIMT_EMU) {
    *st = rt_fail(f->ctx, err, AC_ERR_UNSUPPORTED,
                  "function '%s' runs on the %s backend: only the SIMT emulator (simt-emu) "
                  "profiles kernels",
                  f->name, ac_backend_name(f->backend));
    return NULL;
  }
  if (!f->plan || i >= f->plan->nkernels) {
    *st = rt_fail(f->ctx, err, AC_ERR_INVALID, "function '%s' has no kernel %zu (kernels: %u)",
                  f->name, i, f->plan ? f->plan->nkernels : 0u);
    return NULL;
  }
  rt_simt_prof *p = f->gkernels ? rt_emu_kernel_prof(f->gpu, f->gkernels[i]) : NULL;
  if (!p)
    *st = rt_fail(f->ctx, err, AC_ERR_INVALID,
                  "function '%s' was compiled without profiling (ac_runtime_set_profiling, "
                  "arrayc-run --profile)",
                  f->name);
  return p;
}

ac_status ac_function_profile(const ac_function *f, size_t kernel, ac_kernel_profile *out,
                              size_t out_size, ac_error **err) {
  if (err)
    *err = NULL;
  if (!f)
    return AC_ERR_INVALID;
  if (!out)
    return rt_fail(f->ctx, err, AC_ERR_INVALID, "ac_function_profile: out is NULL");
  ac_status st;
  rt_simt_prof *p = prof_of(f, kernel, &st, err);
  if (!p)
    return st;
  ac_kernel_profile all;
  memset(&all, 0, sizeof all);
  rt_simt_prof_read(p, &all);
  all.kernel = f->plan->kernels[kernel].symbol;
  memcpy(out, &all, out_size < sizeof all ? out_size : sizeof all);
  return AC_OK;
}

void ac_function_profile_reset(ac_function *f) {
  for (uint32_t i = 0; f && f->plan && f->gkernels && i < f->plan->nkernels; i++) {
    rt_simt_prof *p = rt_emu_kernel_prof(f->gpu, f->gkernels[i]);
    if (p)
      rt_simt_prof_reset(p);
  }
}

static double ratio(uint64_t a, uint64_t b) {
  return b ? (double)a / (double)b : 0.0;
}

ac_status ac_function_print_profile(const ac_function *f, char **out, ac_error **err) {
  if (err)
    *err = NULL;
  if (!f)
    return AC_ERR_INVALID;
  if (!out)
    return rt_fail(f->ctx, err, AC_ERR_INVALID, "ac_function_print_profile: out is NULL");
  *out = NULL;
  ac_status st = AC_OK;
  /* (a plan without kernels, which only moves words, reports nothing) */
  if (f->backend != AC_BACKEND_SIMT_EMU && !prof_of(f, 0, &st, err))
    return st;
  ir_buf b;
  ir_buf_init(&b, f->ctx);
  for (uint32_t i = 0; f->plan && i < f->plan->nkernels; i++) {
    ac_kernel_profile k;
    if ((st = ac_function_profile(f, i, &k, sizeof k, err)) != AC_OK) {
      ir_buf_free(&b);
      return st;
    }
    if (!k.launches)
      continue;
    ir_buf_printf(&b,
                  "profile: %s launches=%llu ld_req=%llu ld_sectors_per_req=%.2f st_req=%llu "
                  "st_sectors_per_req=%.2f bytes=%llu min_bytes=%llu smem_conflicts=%llu "
                  "lanes_active=%.2f barriers=%llu atomics=%llu ld_insts=%llu st_insts=%llu "
                  "smem_insts=%llu param_insts=%llu warp_insts=%llu%s\n",
                  k.kernel, (unsigned long long)k.launches, (unsigned long long)k.ld_req,
                  ratio(k.ld_sectors, k.ld_req), (unsigned long long)k.st_req,
                  ratio(k.st_sectors, k.st_req), (unsigned long long)k.bytes,
                  (unsigned long long)k.min_bytes, (unsigned long long)k.smem_conflicts,
                  ratio(k.lane_insts, 32 * k.warp_insts), (unsigned long long)k.barriers,
                  (unsigned long long)k.atomics, (unsigned long long)k.ld_insts,
                  (unsigned long long)k.st_insts, (unsigned long long)k.smem_insts,
                  (unsigned long long)k.param_insts, (unsigned long long)k.warp_insts,
                  k.approximate ? " approximate" : "");
  }
  if (b.oom) {
    ir_buf_free(&b);
    return ir_report(err, NULL, AC_ERR_NOMEM);
  }
  *out = ir_buf_take(&b);
  ir_buf_free(&b);
  if (!*out)
    return ir_report(err, NULL, AC_ERR_NOMEM);
  return AC_OK;
}
