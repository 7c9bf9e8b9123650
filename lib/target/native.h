/* lib/target/native.h: the host CPU target (LLVM ORC LLJIT).
 *
 * One nat_jit per runtime holds an LLJIT instance whose code lives until the
 * runtime is destroyed. Each compiled function's LLVM module is optimised
 * with the O3 pipeline for the host CPU (name and features from LLVM's host
 * detection, so loops vectorise with the widest vectors present) and added
 * in its own JITDylib, so kernel names only need to be unique within one
 * module. The runtime helpers of runtime/rt.h (rt_helper_symbols) are
 * defined as absolute symbols; libm and other process symbols resolve
 * through the process's own symbol table.
 *
 * Thread safety: nat_compile calls on one nat_jit are serialised by a mutex
 * inside it; compiled code may run on any thread.
 */
#ifndef ARRAYC_LIB_TARGET_NATIVE_H
#define ARRAYC_LIB_TARGET_NATIVE_H

#include "codegen/cg.h"

typedef struct nat_jit nat_jit;

ac_status nat_jit_create(ac_context *ctx, nat_jit **out, ac_error **err);
void nat_jit_destroy(nat_jit *J);
/* Sets M->mod's target triple and data layout for the host (call before
 * generating code, so that generators may ask for sizes). */
void nat_prepare(nat_jit *J, cg_module *M);
/* Optimises M->mod (O3, host CPU) and adds it to the JIT, taking ownership
 * of the LLVM module and context (M->mod/M->llctx become NULL). Looks up
 * symbols[0..n) and stores their addresses in addrs. */
ac_status nat_compile(nat_jit *J, cg_module *M, const char *const *symbols, size_t n,
                      void **addrs, ac_error **err);
/* Optimised textual LLVM IR of M->mod without adding it (for --emit=llvm). */
ac_status nat_optimise(nat_jit *J, cg_module *M, ac_error **err);
/* Host CPU name and features (for the cache key and for reports). */
const char *nat_cpu_name(const nat_jit *J);
const char *nat_cpu_features(const nat_jit *J);

/* ---- ahead of time (lib/api/aot_emit.c) ---- */
/* A nat_jit without a JIT, for writing object files: the host's triple
 * (as nat_jit_create detects it), code for `cpu` (NULL: this host's CPU
 * and features, as the JIT; "generic": the triple's baseline, x86-64 on
 * x86_64, no extra features; another name: that CPU with its default
 * features, AC_ERR_INVALID when LLVM does not know it) and a target
 * machine for position-independent code. It serves nat_prepare,
 * nat_cpu_name/features, nat_optimise and nat_emit_object, never
 * nat_compile. The caller destroys it with nat_jit_destroy. */
ac_status nat_aot_create(ac_context *ctx, const char *cpu, nat_jit **out, ac_error **err);
/* Sets mod's triple and layout, verifies it, optimises it as nat_optimise
 * does (O3 for J's CPU) and emits an ELF relocatable object into *obj
 * (ac_alloc'd, *len bytes). With ir_out, the optimised IR text too
 * (ac_alloc'd). mod stays the caller's (it is changed). Undefined symbols
 * (the rt.h helpers, libm) stay undefined in the object. */
ac_status nat_emit_object(nat_jit *J, LLVMModuleRef mod, char **obj, size_t *len, char **ir_out,
                          ac_error **err);

#endif
