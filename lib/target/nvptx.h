/* lib/target/nvptx.h: the NVPTX target: LLVM IR to PTX text.
 *
 * A GPU compile (lib/api/compile.c) makes a cg_module with target
 * CG_TARGET_NVPTX, calls nv_prepare before generating code (triple
 * nvptx64-nvidia-cuda and the target machine's data layout), lowers the
 * function (GPU kernels, lib/codegen/simt.h), and calls nv_emit, which
 *   - links libdevice when the module calls __nv_* functions and
 *     libdevice.10.bc is found (nv_libdevice_path), internalises every
 *     linked function, folds __nvvm_reflect("__CUDA_FTZ") to 0 and
 *     ("__CUDA_ARCH") to sm * 10, and drops what is unused;
 *   - runs the O3 pipeline for the target;
 *   - emits PTX for `sm_XY` with the PTX ISA version nv_ptx_version picks.
 * Math functions (cg_gpu_math in lib/codegen/math_gpu.c) call libdevice's
 * __nv_* when libdevice is present and fall back to code of documented
 * accuracy (docs/architecture.md, "GPU math") when it is not.
 *
 * Thread safety: LLVM target initialisation is done once (pthread_once);
 * separate cg_modules may be emitted on separate threads.
 */
#ifndef ARRAYC_LIB_TARGET_NVPTX_H
#define ARRAYC_LIB_TARGET_NVPTX_H

#include "codegen/cg.h"

/* Lowest and default GPU architectures (compute capability * 10). */
#define NV_SM_MIN 75
#define NV_SM_DEFAULT 75

/* Sets M->mod's triple and data layout for NVPTX (sm is not needed for
 * the layout). Fails only if LLVM was built without NVPTX. */
ac_status nv_prepare(cg_module *M, ac_error **err);
/* PTX ISA version (e.g. 63 for 6.3) for architecture sm and a driver of
 * CUDA version driver_version (cuDriverGetVersion: 12040 = 12.4; 0 = no
 * driver, ahead-of-time: the lowest version that supports sm): the lowest
 * version that sm needs, raised to what the features used need, and never
 * above what the driver accepts or LLVM 19 can emit. 0 if none fits
 * (the driver is too old for sm): nv_emit then fails with a message. */
unsigned nv_ptx_version(unsigned sm, int driver_version);
/* Path of libdevice.10.bc ($CUDA_HOME/nvvm/libdevice, then
 * /usr/local/cuda/nvvm/libdevice), or NULL; computed once. */
const char *nv_libdevice_path(void);
/* Optimises and emits M->mod as PTX text (NUL-terminated, malloc'd through
 * the context allocator: ac_free) for sm_<sm>. The LLVM module is consumed
 * (M->mod may be changed). With `ir_out`, the optimised LLVM IR text too
 * (for --emit=llvm). */
ac_status nv_emit(cg_module *M, unsigned sm, int driver_version, char **ptx, size_t *len,
                  char **ir_out, ac_error **err);
/* nv_emit with libdevice taken from `libdevice` (a path to libdevice.10.bc,
 * or NULL: none) instead of nv_libdevice_path(), so that tests and tools
 * can compile with and without it in one process. */
ac_status nv_emit_with(cg_module *M, const char *libdevice, unsigned sm, int driver_version,
                       char **ptx, size_t *len, char **ir_out, ac_error **err);
/* nv_emit of an LLVM module that is not a cg_module's (ahead of time:
 * the kernels of several functions linked into one module). mod stays the
 * caller's; it is changed (libdevice linked in, optimised). */
ac_status nv_emit_module(ac_context *ctx, LLVMModuleRef mod, unsigned sm, int driver_version,
                         char **ptx, size_t *len, char **ir_out, ac_error **err);
/* Is sm a valid architecture (75, 80, 86, 87, 89, 90, ... as LLVM 19 knows
 * them)? For `--gpu=sm_XX` validation. */
bool nv_sm_valid(unsigned sm);

#endif
