/* runtime/simt_emu.h: the SIMT emulator's services, called by GPU kernels
 * compiled for the host (CG_TARGET_SIMT; lib/codegen/simt.c emits the
 * calls).
 *
 * A launch runs the grid's blocks one after another, in ascending block
 * index, on the calling thread. Within a block every GPU thread is a
 * coroutine with its own stack; a thread runs until it reaches a barrier, a
 * warp operation, a yield or its end, and then the next runnable thread of
 * the block runs. So:
 *   - ac_simt_barrier returns once every thread of the block has reached
 *     it; a thread that ENDS while others wait at a barrier, or a barrier
 *     that some threads never reach, is "barrier divergence": the launch
 *     fails with that message (a bug in a skeleton, never a user error);
 *   - warp operations (shuffle, vote) exchange values among the 32 lanes of
 *     a warp: each lane deposits its value and waits until all 32 lanes of
 *     its warp have arrived at a warp operation; lanes that ended or wait
 *     at a different kind of operation are "warp divergence" (fails too);
 *   - ac_simt_yield lets the others run (spin loops);
 *   - if every live thread of a block waits and none can proceed, the
 *     launch fails with "deadlock" instead of hanging.
 * The services find the running thread through a thread-local pointer set
 * by the launcher, so they take no context argument. They are given to the
 * JIT as absolute symbols (rt_simt_symbols).
 */
#ifndef ARRAYC_RUNTIME_SIMT_EMU_H
#define ARRAYC_RUNTIME_SIMT_EMU_H

#include "runtime/gpu.h"
#include "runtime/rt.h"

#include <stdint.h>

int32_t ac_simt_tid(void);
int32_t ac_simt_ntid(void);
int32_t ac_simt_ctaid(void);
int32_t ac_simt_nctaid(void);
void ac_simt_barrier(void);
void ac_simt_yield(void);
/* Base of the block's shared memory (the kernel's static bytes, 16-byte
 * aligned, zero-filled at block start to make stale-data bugs repeatable). */
void *ac_simt_shared(void);
/* mode: 0 idx, 1 up, 2 down, 3 xor (simt.h's simt_shfl_mode); the value is
 * carried in 64 bits (the caller widens and narrows). */
uint64_t ac_simt_shfl(uint64_t v, int32_t mode, int32_t arg);
/* mode: 0 any, 1 all, 2 ballot (simt_vote_mode); returns 0/1 or the mask. */
uint32_t ac_simt_vote(int32_t mode, int32_t pred);

/* Profiled kernels (runtime/simt_prof.h) call this before every memory
 * access that is not private and at the start of every basic block: site
 * indexes the kernel's site table; addr and bytes are the access's (0 for
 * a block). Outside a profiled launch it does nothing. */
void ac_simt_prof(uint32_t site, uint64_t addr, uint32_t bytes);

/* The services above, NULL-terminated, for the JIT to define. */
extern const rt_symbol rt_simt_symbols[];

/* Runs fn over grid x block threads (block a multiple of 32, at most
 * 1024) with `smem` bytes of shared memory per block. A divergence or
 * deadlock returns AC_ERR_INTERNAL with the message ("SIMT emulator:
 * barrier divergence in block 3: ..."). Used by the emulated device's
 * launch (rt_emu_create) and directly by unit tests. Not reentrant on one
 * host thread; several host threads may each run a launch. */
ac_status rt_simt_run(ac_context *ctx, rt_gkernel_fn fn, unsigned grid, unsigned block,
                      size_t smem, uint64_t *frame, rt_gctl *ctl, int64_t n, ac_error **err);

/* The threads' stacks (mapped memory with guard pages), kept between
 * launches because mapping and first touching them costs more than a small
 * launch. rt_simt_run_cached is rt_simt_run taking the stacks from
 * *stacks when it holds enough of them (else it frees it and maps a fresh
 * set) and leaving the set it used in *stacks, for the next launch or for
 * rt_simt_stacks_free (NULL-safe). One set serves one launch at a time. */
typedef struct rt_simt_stacks rt_simt_stacks;
ac_status rt_simt_run_cached(ac_context *ctx, rt_gkernel_fn fn, unsigned grid, unsigned block,
                             size_t smem, uint64_t *frame, rt_gctl *ctl, int64_t n,
                             rt_simt_stacks **stacks, ac_error **err);
void rt_simt_stacks_free(ac_context *ctx, rt_simt_stacks *s);
/* rt_simt_run_cached with the kernel's parameter block (runtime/gpu.h;
 * copied, as a launch copies it; NULL, as in rt_simt_run and
 * rt_simt_run_cached: a zero block, every word from the frame), counting
 * into prof (simt_prof.h) when it is not NULL: the kernel must have been
 * instrumented for prof's site table. */
typedef struct rt_simt_prof rt_simt_prof;
ac_status rt_simt_run_prof(ac_context *ctx, rt_gkernel_fn fn, unsigned grid, unsigned block,
                           size_t smem, uint64_t *frame, rt_gctl *ctl, int64_t n,
                           const uint64_t *params, rt_simt_stacks **stacks, rt_simt_prof *prof,
                           ac_error **err);

#endif
