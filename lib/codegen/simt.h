/* lib/codegen/simt.h: the SIMT interface that every GPU skeleton is written
 * against, and GPU kernels.
 *
 * Two implementations behind one set of functions, chosen by M->target:
 *   CG_TARGET_NVPTX  NVPTX intrinsics (llvm.nvvm.read.ptx.sreg.*,
 *                    llvm.nvvm.barrier0, llvm.nvvm.shfl.sync.*,
 *                    llvm.nvvm.vote.sync), shared memory as addrspace(3)
 *                    globals, atomics as LLVM atomicrmw/cmpxchg;
 *   CG_TARGET_SIMT   calls to the SIMT emulator's services
 *                    (runtime/simt_emu.h: ac_simt_tid, ac_simt_barrier,
 *                    ac_simt_shfl, ...), shared memory at offsets from
 *                    ac_simt_shared(), atomics as the same LLVM
 *                    instructions (the emulator runs on one host thread).
 * Skeletons never name an intrinsic or a service: only these functions.
 *
 * Rules the emulator enforces, so skeletons keep them on the GPU too:
 *   - blocks are 1-D and their size is a multiple of 32 (SIMT_WARP);
 *   - every thread of a block reaches every simt_barrier (no barrier in
 *     divergent code), and all 32 lanes of a warp reach every shuffle and
 *     vote (compute a predicate instead of leaving early);
 *   - a thread that waits for another thread (a spin loop on a flag in
 *     global memory, as decoupled look-back does) calls simt_yield in the
 *     loop; the emulator runs blocks in ascending order, so a block may
 *     wait only for lower-numbered blocks (use an atomic ticket for the
 *     block's logical number, as CUB does).
 *
 * All indices are i32. Values passed through shuffles may be any scalar
 * register type (i1, i8..i64, float, double).
 */
#ifndef ARRAYC_LIB_CODEGEN_SIMT_H
#define ARRAYC_LIB_CODEGEN_SIMT_H

#include "codegen/cg.h"

#define SIMT_WARP 32

/* ---- GPU kernels (cg_gpu.c) ----
 * Starts a GPU kernel `void name(ptr frame, ptr ctl, i64 n)` (runtime/gpu.h
 * ABI): PTX kernel calling convention on NVPTX (with "nvvm.maxntid" when
 * block != 0), a plain external function for the emulator. In the returned
 * cg_fn: frame, tctx (= ctl), hi (= n), lo (= i64 0); chunk is NULL. The
 * builder is in the body. cg_kernel_end finishes it as any kernel.
 * cg_fail / cg_check / cg_failed / cg_tmp_alloc / cg_tmp_mark /
 * cg_tmp_release work in GPU kernels through ctl (gpu.h), so element code
 * generates the same way on every target. */
cg_fn *cg_gpu_kernel_begin(cg_module *M, const char *name, unsigned block);
/* NVPTX: asks ptxas to fit at least `blocks` blocks of the kernel's fixed
 * block on one multiprocessor (`.minnctapersm`), which caps its registers
 * (65536 / (blocks * block), rounded down to ptxas's granularity); ptxas
 * spills rather than exceed the cap. For kernels whose register use is
 * known to fit (gskel_scan.c). Nothing on the emulator. */
void cg_gpu_min_blocks(cg_fn *f, unsigned blocks);
/* Static shared memory bytes the kernel has allocated so far (simt_shared);
 * lowering records it in the plan's kernel table. */
uint64_t cg_gpu_smem(const cg_fn *f);
/* Once a GPU kernel's uses (ascending) are complete: gives each frame word
 * it reads through its parameter block (cg_gpu_word, cg_gpu.h) its slot,
 * the word's position among the uses (runtime/gpu.h: the first
 * RT_GPU_PARAMS - 1 of them; the others are read from the frame). */
void cg_gpu_params_resolve(cg_fn *f, const uint32_t *uses, uint32_t nuses);

/* ---- indices (i32) ---- */
LLVMValueRef simt_tid(cg_fn *f);    /* thread index in the block */
LLVMValueRef simt_ntid(cg_fn *f);   /* threads per block */
LLVMValueRef simt_ctaid(cg_fn *f);  /* block index */
LLVMValueRef simt_nctaid(cg_fn *f); /* blocks in the grid */
LLVMValueRef simt_lane(cg_fn *f);   /* tid % 32 */
LLVMValueRef simt_warp(cg_fn *f);   /* tid / 32 */
/* i64: ctaid * ntid + tid, and nctaid * ntid (grid-stride loops). */
LLVMValueRef simt_gtid(cg_fn *f);
LLVMValueRef simt_gsize(cg_fn *f);

/* ---- synchronisation ---- */
void simt_barrier(cg_fn *f);    /* __syncthreads() */
void simt_fence(cg_fn *f);      /* __threadfence(): device-wide memory fence */
void simt_yield(cg_fn *f);      /* in spin-wait loops (see above) */
/* __syncwarp(): the 32 lanes of the warp meet, and what each wrote to
 * memory before it the others see after it (all lanes must reach it). */
void simt_syncwarp(cg_fn *f);

/* ---- shared memory ----
 * A per-block array of `count` elements of type `elem`, statically sized,
 * aligned to 16 bytes; a generic pointer to it. Each call makes a new
 * array. */
LLVMValueRef simt_shared(cg_fn *f, LLVMTypeRef elem, uint32_t count, const char *name);

/* ---- warp operations (all 32 lanes) ---- */
typedef enum simt_shfl_mode {
  SIMT_SHFL_IDX,  /* value of lane `arg` */
  SIMT_SHFL_UP,   /* value of lane - arg (own value when lane < arg) */
  SIMT_SHFL_DOWN, /* value of lane + arg (own value when lane + arg > 31) */
  SIMT_SHFL_XOR   /* value of lane ^ arg */
} simt_shfl_mode;
LLVMValueRef simt_shfl(cg_fn *f, simt_shfl_mode mode, LLVMValueRef v, LLVMValueRef arg);
typedef enum simt_vote_mode {
  SIMT_VOTE_ANY,   /* i1 */
  SIMT_VOTE_ALL,   /* i1 */
  SIMT_VOTE_BALLOT /* i32, bit i = lane i's predicate */
} simt_vote_mode;
LLVMValueRef simt_vote(cg_fn *f, simt_vote_mode mode, LLVMValueRef pred);
/* llvm.ctpop.i32: the population count of an i32 (a ballot's). */
LLVMValueRef simt_popc(cg_fn *f, LLVMValueRef v);

/* ---- atomics (device scope, sequentially consistent) ----
 * On any pointer (global or shared memory). Returns the old value. Which
 * operations a type has natively: simt_atomic_native. */
LLVMValueRef simt_atomic(cg_fn *f, LLVMAtomicRMWBinOp op, LLVMValueRef ptr, LLVMValueRef v);
LLVMValueRef simt_cas(cg_fn *f, LLVMValueRef ptr, LLVMValueRef cmp, LLVMValueRef nv);
/* simt_atomic without ordering (relaxed / monotonic): for counters and
 * histograms nobody reads before the kernel ends. On NVPTX a sequentially
 * consistent atomic costs two device-wide fences (LLVM 19 ignores atomic
 * orderings there, so simt.c fences explicitly); this one costs none. */
LLVMValueRef simt_atomic_relaxed(cg_fn *f, LLVMAtomicRMWBinOp op, LLVMValueRef ptr, LLVMValueRef v);
/* True if `op` on elements of type sc is one hardware atomic on sm_75+
 * (integer add/min/max/and/or/xor/xchg of 32 and 64 bits, float add of f32
 * and f64); otherwise skeletons use a compare-and-swap loop. */
bool simt_atomic_native(cg_module *M, LLVMAtomicRMWBinOp op, ac_scalar sc);
/* A volatile load / store (flags other blocks write: look-back, tickets). */
LLVMValueRef simt_load_volatile(cg_fn *f, LLVMTypeRef t, LLVMValueRef ptr);
void simt_store_volatile(cg_fn *f, LLVMValueRef v, LLVMValueRef ptr);

/* ---- profiling (simt_prof.c) ----
 * Instruments every function of M (CG_TARGET_SIMT, optimised) for the
 * SIMT emulator's profiler (runtime/simt_prof.h): a call of ac_simt_prof
 * before each non-private memory access and at the start of each basic
 * block. Fills M->prof_sites. */
ac_status simt_prof_instrument(cg_module *M, ac_error **err);

#endif
