/* runtime/simt_prof.h: the SIMT emulator as a profiler (counts per kernel
 * of what Nsight Compute would report on a GPU: memory requests and
 * sectors, bytes against the minimum, shared-memory bank conflicts,
 * active lanes, barriers, atomics).
 *
 * The compiler (lib/codegen/simt_prof.c) instruments a profiled kernel
 * after optimisation: before every memory access that is not private
 * (allocas) and at the start of every basic block it calls
 *     ac_simt_prof(site, address, bytes)
 * where `site` indexes the kernel module's site table: what the site is
 * (rt_simt_site: a global / shared / parameter load or store, an atomic, a
 * basic block) and its static size (bytes of the access, instructions of
 * the block). The emulator (simt_emu.c) runs the threads of a block one
 * after another between synchronisation points, so a warp's instruction is
 * not executed by its lanes at once; it is recovered afterwards. Each
 * record is tagged with how many times its thread has executed that site
 * since its warp last synchronised (k): on a GPU in lock-step, the lanes'
 * k-th executions of one site are one warp instruction (lanes that skip it
 * are inactive lanes). Records are buffered per warp and grouped when all
 * lanes of the warp have reached a common point (a completed warp
 * operation, a completed barrier, the block's end), by sorting on (site,
 * k, address); each group is one warp instruction, whose records give its
 * active lanes, the distinct 32-byte sectors it touches (global memory) or
 * the wavefronts its banks need (shared memory).
 *
 * One rt_simt_prof per profiled kernel holds its site table and its
 * totals (merged under a mutex at the end of each launch, so launches on
 * several host threads may overlap). A launch's working state
 * (rt_simt_plaunch) is private to the launching host thread.
 */
#ifndef ARRAYC_RUNTIME_SIMT_PROF_H
#define ARRAYC_RUNTIME_SIMT_PROF_H

#include "arrayc/runtime.h"

#include <stdbool.h>
#include <stdint.h>

/* Kinds of instrumented sites (the compiler writes them into the table). */
enum {
  RT_SIMT_SITE_BLOCK = 0, /* a basic block of `arg` instructions */
  RT_SIMT_SITE_LD,        /* global load of `arg` bytes (0: size given per call) */
  RT_SIMT_SITE_ST,        /* global store */
  RT_SIMT_SITE_SLD,       /* shared-memory load */
  RT_SIMT_SITE_SST,       /* shared-memory store */
  RT_SIMT_SITE_PARAM,     /* a load or store of the frame or the control block */
  RT_SIMT_SITE_ATOMIC,    /* an atomic read-modify-write or compare-and-swap */
  RT_SIMT_SITE_KINDS
};

typedef struct rt_simt_site {
  uint32_t kind;
  uint32_t arg;
} rt_simt_site;

typedef struct rt_simt_prof rt_simt_prof;

/* A profile for a kernel with the given site table (copied). NULL when
 * memory runs out. */
rt_simt_prof *rt_simt_prof_create(ac_context *ctx, const rt_simt_site *sites, uint32_t nsites);
void rt_simt_prof_destroy(ac_context *ctx, rt_simt_prof *p);
/* The totals so far (out->kernel is left alone). */
void rt_simt_prof_read(rt_simt_prof *p, ac_kernel_profile *out);
void rt_simt_prof_reset(rt_simt_prof *p);

/* ---- a launch (simt_emu.c) ---- */
typedef struct rt_simt_plaunch rt_simt_plaunch;
/* Working state for a launch of `block` threads per block; NULL when
 * memory runs out (the launch then fails). */
rt_simt_plaunch *rt_simt_pl_begin(ac_context *ctx, rt_simt_prof *p, unsigned block);
/* A record from thread t (ac_simt_prof). false: the warp's buffer is full
 * and the caller must flush (rt_simt_pl_flush_warp, exact or not). */
bool rt_simt_pl_record(rt_simt_plaunch *s, unsigned t, uint32_t site, uint64_t addr,
                       uint32_t bytes);
/* Groups and counts warp w's buffered records. `sync`: every live lane of
 * the warp is at a common point, so the groups are complete and the
 * lanes' execution counts start again from zero; otherwise (a full
 * buffer) the counts go on and the profile is marked approximate unless
 * `exact` (no other lane of the warp can still add to the groups). */
void rt_simt_pl_flush_warp(rt_simt_plaunch *s, unsigned w, bool sync, bool exact);
/* A barrier of the block completed. */
void rt_simt_pl_barrier(rt_simt_plaunch *s);
/* The launch has ended (ok: every block ran): adds its counts to the
 * kernel's totals and frees the state. NULL-safe. */
void rt_simt_pl_end(rt_simt_plaunch *s, bool ok);
/* Sites of the profile (ac_simt_prof checks its argument against it). */
uint32_t rt_simt_pl_nsites(const rt_simt_plaunch *s);

#endif
