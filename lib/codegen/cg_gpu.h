/* lib/codegen/cg_gpu.h: internal glue between the code generation core
 * (cg.c) and GPU kernels (cg_gpu.c, simt.c).
 *
 * cg.c's runtime services (cg_fail, cg_failed, cg_tmp_alloc, cg_tmp_mark,
 * cg_tmp_release, and the failure paths of cg_read and cg_new_array) call
 * these when M->target is not the CPU: on a GPU there is no rt_tctx, and
 * the same services work through the launch's control block (runtime/gpu.h,
 * rt_gctl) that GPU kernels receive where CPU kernels receive their thread
 * context. Nothing outside lib/codegen includes this header.
 */
#ifndef ARRAYC_LIB_CODEGEN_CG_GPU_H
#define ARRAYC_LIB_CODEGEN_CG_GPU_H

#include "codegen/cg.h"

/* Records a failure in ctl (first one wins): site is an i32 value (it may
 * be a select between sites), a and b are i64. */
void cg_gpu_fail(cg_fn *f, LLVMValueRef site, LLVMValueRef a, LLVMValueRef b);
/* The same with n values (i64 or narrower integers; n <= RT_FAIL_VALS):
 * the first two in a and b, the rest in ctl->more. */
void cg_gpu_fail_n(cg_fn *f, LLVMValueRef site, uint32_t n, const LLVMValueRef *vals);
/* i1: ctl->failed is set (a volatile load: other threads set it). */
LLVMValueRef cg_gpu_failed(cg_fn *f);
/* The thread's slice of ctl->tmp (bytes: i64); a request beyond it fails at
 * `at` and returns ctl's dummy memory. */
LLVMValueRef cg_gpu_tmp_alloc(cg_fn *f, LLVMValueRef bytes, ir_ref at);
LLVMValueRef cg_gpu_tmp_mark(cg_fn *f);
void cg_gpu_tmp_release(cg_fn *f, LLVMValueRef mark);

/* Frame word w (cg_load_frame) as an i64: from the launch's parameter
 * block when the runtime put it there, else from the frame (runtime/gpu.h;
 * its slot is set by cg_gpu_params_resolve, simt.h). */
LLVMValueRef cg_gpu_word(cg_fn *f, uint32_t w);

/* Points M->b into f's entry block, after its allocas and before any other
 * instruction, so that what is built there dominates the whole kernel
 * (values made once per thread on first use); returns the builder to give
 * back to cg_gpu_entry_end, which restores M->b. Generators build at the
 * end of blocks, so nothing else needs restoring. */
LLVMBuilderRef cg_gpu_entry_begin(cg_fn *f);
void cg_gpu_entry_end(cg_fn *f, LLVMBuilderRef saved);

#endif
