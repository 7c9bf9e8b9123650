/* lib/api/aot_impl.h: ahead-of-time code for several functions of a module.
 *
 * `arrayc` writes, ahead of time, one code file for all the functions of a
 * module it is asked for: for the CPU an ELF relocatable object (position
 * independent, to be linked into a shared library), for the GPU one PTX
 * text. The runtime library later loads the plans (runtime/plan.h, text
 * form) and finds each plan kernel in that code by its `symbol`.
 *
 * Pipeline (aot_emit.c), per requested function, then once for all:
 *
 *   api_generate ─► rename kernels ─► internalise ─► bitcode ─┐  (per function:
 *   (compile.c: passes,  PREFIX_FN_kN_kind  helpers and        │   own LLVM context)
 *    plan, kernels)      (plan + LLVM)      globals            │
 *                                                              ▼
 *   one LLVM context: parse + link every module ─► [embed] ─► O3 + object (native.c)
 *                                                          or nv_emit's PTX (nvptx.c)
 *
 * Kernels call extern host functions (`extern fn`) through an undefined
 * symbol of the extern's name (the JIT calls the address bound in its own
 * process), so the program that links or loads the code defines them; on
 * the GPU they are refused (host code).
 *
 * Thread safety: as compiling (compile.c): one thread at a time per context.
 */
#ifndef ARRAYC_LIB_API_AOT_IMPL_H
#define ARRAYC_LIB_API_AOT_IMPL_H

#include "runtime/plan.h"
#include "target/native.h"

#include <stdbool.h>

/* What to emit and how (the caller's; read only). */
typedef struct api_aot_opts {
  bool gpu;           /* PTX for NVPTX sm_<sm>, else an object for the host's triple */
  unsigned sm;        /* gpu: architecture (NV_SM_MIN..), as arrayc --gpu=sm_XY */
  const char *cpu;    /* cpu: LLVM CPU name for the object: NULL = this host's CPU and features
                         (what the JIT uses); "generic" = the triple's baseline (x86-64 on
                         x86_64), no extra features; any other name = that CPU with its default
                         features (an unknown name is AC_ERR_INVALID) */
  const char *passes; /* optimisation pipeline (as ac_runtime_set_passes); "" or NULL = none */
  const char *prefix; /* C identifier; kernel symbols become PREFIX_FUNCNAME_kN_kind */
  /* Optional: called once with the finished plans (symbols already
   * renamed), before the code is emitted; when it returns data (*data not
   * NULL), that data is put into the CPU object as a read-only global
   * `embed_symbol` (a C identifier; external linkage, [len x i8], no NUL
   * added) plus a global `<embed_symbol>_size` of type i64 holding len
   * and a global `<embed_symbol>_hash` of type i64 holding the data's
   * checksum (rt_bundle_hash: the runtime verifies it before it reads the
   * data, runtime/bundle.h). Not called for the GPU. Returns false on
   * failure (out of memory), which fails the emission with AC_ERR_NOMEM.
   * The data is freed by the emitter with ac_free(ctx, data), also when
   * the callback fails. */
  const char *embed_symbol;
  bool (*embed)(void *ud, pl_plan *const *plans, size_t nplans, char **data, size_t *len);
  void *embed_ud;
  bool want_llvm; /* also return the optimised LLVM IR text of the combined module */
} api_aot_opts;

/* The result; api_aot_out_free frees everything in it. */
typedef struct api_aot_out {
  pl_plan **plans; /* one per requested function, same order; owned */
  size_t nplans;
  char *code; /* PTX text (NUL-terminated) or the object file's bytes */
  size_t len;
  char *llvm; /* want_llvm: NUL-terminated IR text, else NULL */
} api_aot_out;

/* Compiles functions fns[0..nfns) of the verified module m (each must have
 * a body, and appear once) for the target: passes, lowering to a plan and
 * kernels per function (exactly what the JIT backends do: api_generate),
 * kernel symbols renamed, all kernel modules combined into one LLVM module,
 * optimised once (O3 for the CPU named by o->cpu, or nv_emit's pipeline for
 * NVPTX with driver version 0) and emitted. Errors: AC_ERR_INVALID for bad
 * options (prefix or embed symbol not a C identifier, unknown CPU or
 * architecture), a function index out of range, repeated, without a body
 * or not verified, or kernel symbols of two functions that clash (function
 * names that differ only in characters other than [A-Za-z0-9_]);
 * AC_ERR_UNSUPPORTED "extern function 'NAME' is host code and cannot be
 * called on the GPU" for a GPU function that reaches an extern; AC_ERR_NOMEM; and
 * whatever generation and emission report. On failure *out is empty. */
ac_status api_emit_aot(ac_module *m, const uint32_t *fns, size_t nfns, const api_aot_opts *o,
                       api_aot_out *out, ac_error **err);
/* Frees what api_emit_aot put in *out and empties it. */
void api_aot_out_free(ac_context *ctx, api_aot_out *out);

/* ---- compile.c ---- */
/* Runs the pipeline of function fn of m up to an LLVM module holding every
 * kernel of its plan: with a non-empty `passes`, the passes transform a
 * copy of m returned in *opt (destroy it after M); then a plan (*plan) and
 * a cg_module (*M, dispose of it) for `target`, prepared by nat_prepare(jit)
 * on the CPU (jit may be NULL for NVPTX), lowered and the plan finished.
 * flags: API_GEN_* below (0 for the JIT). The caller destroys *plan, also
 * on failure. */
#define API_GEN_EXTERNS_BY_NAME 1u /* cg_module.externs_by_name: ahead of time */
#define API_GEN_PROFILE 2u /* cg_module.profile: SIMT emulator kernels counted */
/* the passes' warnings cover every function, not only fn and what it
 * calls: several functions are lowered into M (api_emit_ptx) */
#define API_GEN_ALL_WARNINGS 4u
ac_status api_generate(nat_jit *jit, cg_target target, ac_module *m, uint32_t fn,
                       const char *passes, unsigned flags, pl_plan **plan, cg_module *M,
                       ac_module **opt, ac_error **err);

#endif
