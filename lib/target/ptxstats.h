/* lib/target/ptxstats.h: what a PTX module costs on a GPU, without a GPU.
 *
 * `arrayc --emit=ptx --ptx-stats` (docs/tools.md) judges GPU code
 * generation by four kinds of numbers per kernel, and this module makes
 * all of them from the PTX text:
 *
 *   - the PTX analyser (px_analyse): for every .entry and .func, its
 *     declared virtual registers, static shared memory (declared in it, or
 *     at module level and named by it or by a function it calls), .local
 *     bytes, .maxntid/.reqntid, instruction counts, and its hot loop: the
 *     natural loop (found on the control-flow graph: a back edge to a block
 *     that dominates its source) whose own blocks (those in no inner loop)
 *     load and store the most elements through global and generic memory;
 *   - ptxas (px_ptxas_find, px_ptxas_run): `ptxas -v` gives the registers,
 *     stack, spills, barriers and shared memory the hardware will see;
 *   - without ptxas, estimates from the PTX (source=llvm): registers are
 *     the declared virtual registers (32-bit and narrower count 1, 64-bit
 *     2, 128-bit 4, predicates 0), which ptxas normally reduces a lot;
 *     spills are unknown;
 *   - the occupancy calculator (px_occupancy, px_best_block): the rules of
 *     CUDA's cuda_occupancy.h for sm_75, 80, 86, 89 and 90.
 *
 * lib/target/ptxstats.c is the analyser, lib/target/ptxstats_report.c
 * the rest. Everything is allocated from the context; a px_module is used
 * by one thread at a time.
 */
#ifndef ARRAYC_LIB_TARGET_PTXSTATS_H
#define ARRAYC_LIB_TARGET_PTXSTATS_H

#include "ir.h"

/* Counts over a set of instructions (a function, or a loop's own blocks).
 * Loads and stores are split by state space: .global (including
 * .global.nc, which ld_nc counts again), generic (no state space: the
 * address may be global, shared or local; arrayc's kernel pointers point
 * into global memory) and .shared; .param, .local and .const accesses are
 * not memory traffic here. *_elems counts elements: ld.global.v4.f32 is
 * one load of four elements. */
typedef struct px_counts {
  unsigned insts;
  unsigned ld_global, ld_global_elems, ld_nc, ld_nc_elems, ld_gen, ld_gen_elems;
  unsigned st_global, st_global_elems, st_gen, st_gen_elems;
  unsigned ld_shared, st_shared;
  unsigned ld_vec, st_vec; /* .v2/.v4/.v8 loads/stores of global or generic memory */
  unsigned fma;            /* fma.* (floating-point fused multiply-add) */
  unsigned membar;         /* membar.* and fence.* */
  unsigned atom;           /* atom.* and red.* */
  unsigned bar_sync;       /* block barriers: bar.* and barrier.* other than bar.warp.* */
} px_counts;

/* The hot loop of a function. */
typedef struct px_loop {
  bool found;
  char *label;     /* the header block's label; NULL when it has none */
  unsigned depth;  /* 1 for an outermost loop */
  unsigned blocks; /* own basic blocks */
  px_counts own;   /* its own blocks: those of the loop in none of its inner loops */
} px_loop;

/* What `ptxas -v` said about one function. */
typedef struct px_ptxas {
  bool have;          /* a "Function properties" or "Used" line named the function */
  bool have_regs;     /* a "Used N registers" line (ptxas prints none for most .funcs) */
  bool have_barriers; /* "used N barriers" (CUDA 12 and later say it) */
  unsigned regs, barriers;
  uint64_t stack, spill_st, spill_ld, smem;
} px_ptxas;

/* One .entry (kernel) or .func with a body. */
typedef struct px_func {
  char *name;
  bool kernel;
  unsigned block;      /* product of .reqntid's or .maxntid's sizes; 0: none */
  unsigned vregs_32;   /* declared virtual registers of 8, 16 and 32 bits */
  unsigned vregs_64;   /* ... of 64 bits */
  unsigned vregs_128;  /* ... of 128 bits */
  unsigned vregs_pred; /* predicates (their own register file) */
  unsigned reg_est;    /* vregs_32 + 2 * vregs_64 + 4 * vregs_128 */
  unsigned regs_live;  /* the most 32-bit registers live at once (predicates not counted) */
  uint64_t smem;       /* static shared bytes: its own and reachable .shared arrays, laid out
                          in declaration order with their alignment (as ptxas does) */
  bool smem_dyn;       /* it or a callee names an extern .shared array (size set at launch) */
  uint64_t local;      /* .local bytes it declares (ptxas' stack frame before spills) */
  unsigned barriers;   /* distinct immediate barrier ids it uses (1 when not immediate) */
  px_counts all;       /* the whole function */
  px_loop loop;        /* its hot loop (loop.found false: none) */
  px_ptxas ptxas;
} px_func;

typedef struct px_module {
  ac_context *ctx;
  px_func *funcs;
  size_t nfuncs;
  unsigned target_sm; /* from .target sm_XY; 0 if absent */
} px_module;

/* Analyses PTX text (len bytes, need not be NUL-terminated) into *out
 * (free with px_destroy). Tolerant: what it does not understand is
 * skipped, so any PTX gives a result. AC_ERR_NOMEM is the only error. */
ac_status px_analyse(ac_context *ctx, const char *ptx, size_t len, px_module **out, ac_error **err);
void px_destroy(px_module *m);
/* The function named name, or NULL. */
px_func *px_find(px_module *m, const char *name, size_t len);

/* The ptxas to run: $ARRAYC_PTXAS when set and not empty (a path, taken
 * as it is: a path that is not an executable file means "no ptxas"),
 * else $CUDA_HOME/bin/ptxas, /usr/local/cuda/bin/ptxas, then `ptxas` in a
 * $PATH directory. Writes the path to buf (cap bytes) and returns buf, or
 * returns NULL when there is none. */
const char *px_ptxas_find(char *buf, size_t cap);
/* Runs `ptxas -v -arch=sm_<sm> -o /dev/null FILE` on the PTX (written to
 * a mkstemp file in $TMPDIR or /tmp, removed afterwards; no shell) and
 * fills each function's ptxas fields (px_ptxas_parse). AC_ERR_IO when the
 * file cannot be written or ptxas started, AC_ERR_INVALID when ptxas
 * fails (the message quotes its first error line). */
ac_status px_ptxas_run(px_module *m, const char *ptxas, const char *ptx, size_t len, unsigned sm,
                       ac_error **err);
/* Reads the text of `ptxas -v` (CUDA 11 to 13 spell it a little
 * differently; unknown lines and functions are ignored) into m. */
void px_ptxas_parse(px_module *m, const char *text, size_t len);

/* ---- theoretical occupancy (cuda_occupancy.h's rules) ---- */

/* One architecture's per-SM limits. */
typedef struct px_arch {
  unsigned sm;
  unsigned max_threads_sm, max_blocks_sm;
  unsigned regs_sm;          /* 65536; also the most per block */
  uint64_t smem_sm;          /* shared memory per SM */
  uint64_t smem_block_optin; /* the most a block may opt in to */
  uint64_t smem_reserved;    /* the driver's bytes per block (sm_80 and later) */
  unsigned smem_granularity; /* allocation unit of shared memory */
} px_arch;

/* The limits of sm_<sm>, or NULL for an architecture this table lacks. */
const px_arch *px_arch_get(unsigned sm);

/* What limits the resident blocks (a bit set: several can tie). */
enum {
  PX_LIMIT_WARPS = 1,    /* threads (warps) per SM */
  PX_LIMIT_REGS = 2,     /* registers per SM (per sub-partition) or per block */
  PX_LIMIT_SMEM = 4,     /* shared memory per SM or per block */
  PX_LIMIT_BLOCKS = 8,   /* blocks per SM */
  PX_LIMIT_BARRIERS = 16 /* block barriers per SM (sm_90) */
};

typedef struct px_occ {
  unsigned block;     /* threads per block */
  unsigned blocks;    /* resident blocks per SM (0: the block cannot run) */
  unsigned warps;     /* resident warps per SM */
  unsigned max_warps; /* the SM's warp slots */
  unsigned limits;    /* PX_LIMIT_* bits of the binding limits */
  double occupancy;   /* warps / max_warps */
} px_occ;

/* Occupancy of a kernel using `regs` registers per thread, `smem` bytes
 * of shared memory per block (static plus dynamic) and `barriers` block
 * barriers, launched with `block` threads per block (1..1024). */
px_occ px_occupancy(const px_arch *a, unsigned regs, uint64_t smem, unsigned barriers,
                    unsigned block);
/* The block size cuOccupancyMaxPotentialBlockSize picks for the kernel
 * (at most max_block, 0: 1024): it tries max_block rounded up to a
 * multiple of 32, then every multiple of 32 below it, and keeps the first
 * (largest) size with the most resident threads per SM; the runtime
 * (runtime/gpu_cuda.c) launches what the driver's version of it picks. */
px_occ px_best_block(const px_arch *a, unsigned regs, uint64_t smem, unsigned barriers,
                     unsigned max_block);

/* ---- the report ---- */

/* Appends one `ptx-stats:` line per function of m to out (docs/tools.md
 * lists the fields): fn is the arrayc function the PTX was made for;
 * registers, stack, spills and shared memory come from ptxas for the
 * functions it reported on (source=ptxas), else from the PTX
 * (source=llvm); occupancy is for sm_<sm> (`-` for an architecture
 * px_arch_get lacks, and for .funcs). */
void px_print(const px_module *m, const char *fn, unsigned sm, ir_buf *out);

#endif
