/* runtime/plan.h: kernel plans, the host side of a compiled function.
 *
 * Lowering (lib/lower/) turns a verified function into a plan: a small host
 * program over the frame words of rt.h that allocates buffers (sizes are
 * integer expressions of the argument extents and of words computed earlier:
 * Nikola's size inference), launches kernels, runs host loops (iterate,
 * while, recurrence wavefronts) and assembles the results. The runtime
 * interprets the plan (plan_exec.c); the plan is plain data and has a text
 * form (plan_text.c) that prints and parses back to an equal plan, so the
 * ahead-of-time runtime can load it without LLVM.
 *
 * ---- Text form ---------------------------------------------------------------
 *   plan NAME
 *   slots N
 *   param %0 : f32[]            one line per flattened parameter leaf, in order
 *   param %2 : i32
 *   result %9 : f32[]           one line per result leaf, in order
 *   site 0 at 3:7 "map: arrays have different shapes: %lld and %lld"
 *   kernel k0 map "f_k0" grain 4096 uses %0 %1 %9 writes %9
 *   body {
 *     INSTRUCTIONS
 *   }
 * Instructions, one per line, blocks in braces:
 *   set %5 = EXPR
 *   alloc %9 : f32[,] = [EXPR, EXPR]      data in %9, extents in %10 %11
 *   alloc %9 : f32[] = [EXPR] site 2      the same, failing at site 2 (its
 *                                         position) for bad extents
 *   alloc %9 : f32[] = [EXPR] try         allocate if possible: bad extents,
 *                                         too large or no memory leave the
 *                                         words as they were, and no error
 *   alloc %9 : f32[] = [EXPR] site 2 keep nothing if %9 already holds an
 *                                         array of these extents (a `try`
 *                                         alloc made it), else as without
 *                                         `keep`
 *                                         (the shape pass: every buffer whose
 *                                         size is known from the arguments is
 *                                         allocated before the first launch)
 *   view %12 : f32[] = %9 [EXPR]          same data as %9, new extents
 *   assign %3 = %9 : f32[]                the words of one leaf (or of one
 *                                         scalar: `: f32`); %3 shares %9's buffer
 *   free %9                               release the buffer in %9
 *   launch k0 n EXPR chunks EXPR          chunks `auto` = the pool's choice
 *   check EXPR site 0 (EXPR, EXPR)        fail at site 0 unless EXPR != 0, the
 *                                         site's k-th %lld printing the k-th
 *                                         value (any number of values up to
 *                                         RT_FAIL_VALS; none: no parentheses)
 *   for %4 = EXPR to EXPR { ... }         %4 from lo while < hi, step 1
 *   while { ... }                         until a `break unless` leaves it
 *   break unless %6                       leave the innermost while if %6 == 0
 *   if %6 { ... } else { ... }            %6 is a bool word
 * Expressions (int64): decimal integers, %N (a word read as int64),
 * (A + B) (A - B) (A * B) (A / B) (A % B) (A == B) (A != B) (A < B)
 * (A <= B) min(A, B) max(A, B) chunks(A, B). The arithmetic is the
 * language's i64 arithmetic (docs/language.md §6.1): it wraps, division
 * truncates, x / 0 == 0, x % 0 == x, MIN / -1 == MIN; so an i64 expression of
 * the program can be moved into the plan without changing its meaning.
 * A kernel's `writes` clause lists the uses it stores into; it may be left
 * out of a CPU plan only for words nothing else reads (pl_validate: every
 * word that is read is written somewhere, and kernels write scalar words
 * only, never an array's data or extent; plan_slots.c).
 *
 * ---- GPU plans ------------------------------------------------------------------
 * A plan whose kernels are GPU kernels (runtime/gpu.h) says `target gpu`
 * after its `slots` line, and its kernel lines may carry, before `uses`,
 *   block 256          the kernel relies on exactly 256 threads per block
 *   smem 2048          static shared memory per block (bytes)
 *   scratch 16 + 8     zeroed scratch: 16 bytes + 8 per block of the grid
 *   counters 0 + 8     (after scratch) only this prefix of the scratch must be
 *                      zero when the kernel starts, and the kernel leaves it
 *                      zero (its counters reset themselves); it writes the
 *                      rest before reading it. Without it, all of the
 *                      scratch is zeroed before each launch.
 *   tmp                per-thread temporary memory (nested array operations)
 * and `launch k n N chunks C` means: the kernel gets n = N; C is the number
 * of BLOCKS (C must then be given only for kernels with a fixed block), or
 * with `chunks auto` the runtime picks the grid: enough blocks of the
 * kernel's block size for ceil(N / grain) threads, at most the blocks the
 * device can hold at once (grid-stride kernels loop over the rest).
 * `launch k n N chunks auto warps W` (a kernel without a fixed block)
 * launches blocks of at most W warps (W below 1 counts as 1): the runtime's
 * block size, min(block, 32 * W) threads, with the grid sized for that
 * block and its cap scaled up as the block shrinks (a kernel whose work
 * per block is known to occupy only W warps, such as fold.block's rows).
 * A plan expression chunks(n, grain) evaluates against the device's
 * parallelism (rt_gpu_ops.parallelism) instead of the pool's.
 *
 * ---- Extern kernels (GPU plans only) ----------------------------------------------
 * A kernel that is not arrayc's, a hand-written PTX `.entry` of the program
 * (`extern kernel` declarations), has its own kernel line:
 *   kernel k1 extern "saxpy_entry" block 256 args %3:f32 %0:ptr %1:i64 %5:ptr %6:i64
 *     ptx ".version 7.0\n"
 *         ".target sm_70\n"
 *         ...
 * `block B` (1..1024) is its threads per block; `args` lists its
 * parameters in order: `%W:ptr` passes the data word %W (a device address)
 * as a .u64, `%W:T` passes the scalar of type T that word %W holds, by value
 * with T's C size (bool 1 byte, i8 1, ..., f32 4, f64 8; extents are i64
 * words); `ptx` is the text of the PTX module that defines the entry, given
 * as one or more strings that are joined (the printer writes one per PTX
 * line). Its uses are its argument words (not printed: they follow from
 * `args`) and it writes no word: it writes array ELEMENTS in device memory.
 * The kind `extern` is reserved for such kernels. `launch kN n N chunks
 * auto` (chunks must be auto) launches ceil(N / B) blocks of B threads (1-D)
 * with the arguments read from the frame at that point; N <= 0 launches
 * nothing, and more blocks than a grid may have (2^31 - 1) is a run-time
 * error.
 * Comments start with // and run to the end of the line. The plan's NAME
 * and a kernel's kind are bare names ([A-Za-z_][A-Za-z0-9_.]*) or, when
 * they are not, strings; strings use the C escapes \" \\ \n \t and \xNN.
 * Layout is free (line breaks are not significant).
 *
 * ---- Meaning -------------------------------------------------------------------
 * Words hold what rt.h says. The executor also keeps, per data word, the
 * array that holds the memory (one reference per data word, or none): alloc
 * creates a fresh array (and releases what the word held before, so an
 * alloc inside a loop does not accumulate); view and assign make the
 * destination word share the source's array (retain it, releasing what the
 * destination held); free releases the word's reference; a parameter's
 * array is held by the caller for the call (the word holds a reference of
 * its own too, so assigning it around is uniform). Loop state is written
 * with assign, so at most the state and the next state are alive.
 * Allocation of a negative extent fails with "negative extent %lld" at the
 * instruction's site; too large a size fails with "array too large".
 * At the end, each result array leaf is handed out: the owning array itself
 * when the words describe all of it, otherwise a copy. Everything else the
 * frame owns is released, also when the call fails.
 */
#ifndef ARRAYC_RUNTIME_PLAN_H
#define ARRAYC_RUNTIME_PLAN_H

#include "runtime/rt.h"

#include <stdio.h>

typedef enum pl_xop {
  PX_CONST, /* k */
  PX_WORD,  /* frame[a] as int64 */
  PX_ADD, PX_SUB, PX_MUL, PX_DIV, PX_REM, PX_EQ, PX_NE, PX_LT, PX_LE, PX_MIN, PX_MAX,
  PX_CHUNKS /* rt_pool_chunks(n = A, grain = B) */
} pl_xop;

/* An expression node; children are indices into plan->exprs. */
typedef struct pl_expr {
  uint8_t op;
  uint32_t a, b; /* PX_WORD: a = slot; binary ops: child expression indices */
  int64_t k;     /* PX_CONST */
} pl_expr;

typedef enum pl_iop {
  PI_SET,     /* word a = expr e */
  PI_ALLOC,   /* leaf at a: type sc, rank; extents = exprs args[e .. e+rank) */
  PI_VIEW,    /* leaf at a = data of word b, extents args[e .. e+rank) */
  PI_ASSIGN,  /* leaf at a = leaf at b (sc, rank; rank 0 = one scalar word) */
  PI_FREE,    /* release the buffer whose data word is a */
  PI_LAUNCH,  /* kernel k, n = expr e, chunks = expr e2 (PL_AUTO = pool's choice),
                 GPU: at most expr e3 warps per block (PL_AUTO = no limit) */
  PI_CHECK,   /* unless expr e != 0: fail at site k with values args[e2 .. e2+rank) */
  PI_FOR,     /* word a from expr e while < expr e2; body up to the matching PI_END */
  PI_WHILE,   /* body up to the matching PI_END, repeated until a PI_BREAK_UNLESS */
  PI_BREAK_UNLESS, /* leave the innermost PI_WHILE if word a (bool) is 0 */
  PI_IF,      /* word a (bool) nonzero: then-block; PI_ELSE optional; PI_END */
  PI_ELSE,
  PI_END
} pl_iop;

#define PL_AUTO UINT32_MAX /* "no expression": chunks auto, check without values */

/* pl_inst.flags of ALLOC (see the text form above) */
#define PL_ALLOC_TRY 1u
#define PL_ALLOC_KEEP 2u

typedef struct pl_inst {
  uint8_t op;        /* pl_iop */
  uint8_t sc;        /* ac_scalar for ALLOC/VIEW/ASSIGN */
  uint8_t flags;     /* ALLOC: PL_ALLOC_* */
  uint32_t rank;     /* ALLOC/VIEW/ASSIGN; CHECK: number of values */
  uint32_t a, b;     /* slots */
  uint32_t k;        /* kernel (LAUNCH), site (CHECK, ALLOC: site for its errors or PL_AUTO) */
  uint32_t e, e2;    /* expression indices, or for ALLOC/VIEW/CHECK: first index into args */
  uint32_t e3;       /* LAUNCH: warps per block at most (expression), or PL_AUTO */
  uint32_t match;    /* FOR/WHILE/IF/ELSE: index of the matching ELSE/END; END: index of the
                        FOR/WHILE/IF it closes; BREAK_UNLESS: the END of its while; set by
                        pl_finish */
} pl_inst;

typedef struct pl_leaf {
  uint32_t slot;
  uint8_t sc;    /* ac_scalar */
  uint32_t rank; /* 0 = scalar */
} pl_leaf;

typedef struct pl_site {
  uint32_t line, col; /* 0 = unknown */
  char *fmt;          /* printf format: %% and up to RT_FAIL_VALS %lld, nothing else */
} pl_site;

/* A parameter of an extern kernel: frame word `word`, passed as the device
 * address it holds (ptr != 0: an array's data word; a .u64 parameter) or
 * as the scalar of type sc (ac_scalar) in its low bytes, with sc's C size. */
typedef struct pl_karg {
  uint32_t word;
  uint8_t sc; /* ac_scalar; 0 when ptr */
  uint8_t ptr;
} pl_karg;

typedef struct pl_kernel {
  char *kind;     /* skeleton name for people: "map", "fold.partial", ... */
  char *symbol;   /* the compiled function's name */
  int64_t grain;  /* iterations per chunk at least (chunks auto); GPU: per thread */
  uint32_t nuses;
  uint32_t *uses; /* frame words the kernel reads or writes, ascending */
  uint32_t nwrites;
  uint32_t *writes; /* the subset of uses it writes, ascending */
  /* GPU plans only (all 0 on the CPU): */
  uint32_t block;         /* fixed threads per block (the kernel relies on it), 0 = any */
  uint64_t smem;          /* static shared memory bytes per block */
  uint64_t scratch_fixed; /* zeroed scratch bytes: fixed + per block * grid */
  uint64_t scratch_block;
  /* The `counters` clause (0 + 0: none): the prefix that must be zero and
   * that the kernel leaves zero, fixed + per block * grid bytes. */
  uint64_t counters_fixed, counters_block;
  bool tmp;               /* needs per-thread temporary memory (gpu.h) */
  /* Extern kernels (GPU plans only; see the text form above): */
  char *ptx; /* text of the PTX module that defines `symbol` as an .entry (NUL-terminated,
                owned); NULL for arrayc's own kernels */
  uint32_t nkargs;
  pl_karg *kargs; /* its parameters, in order */
  /* Launches so far, by every call of every function that runs the plan
   * (added to atomically, relaxed; ac_function_kernel_launches). Not part
   * of the plan's text. */
  uint64_t launches;
} pl_kernel;

typedef struct pl_plan {
  ac_context *ctx;
  char *name;
  char *file; /* source file name for error positions (may be NULL) */
  uint32_t nslots;
  pl_leaf *params; uint32_t nparams, capparams;
  pl_leaf *results; uint32_t nresults, capresults;
  pl_inst *insts; uint32_t ninsts, capinsts;
  pl_expr *exprs; uint32_t nexprs, capexprs;
  uint32_t *args; uint32_t nargs, capargs; /* expression index lists */
  pl_site *sites; uint32_t nsites, capsites;
  pl_kernel *kernels; uint32_t nkernels, capkernels;
  bool oom; /* an allocation failed while building */
  bool bad; /* a builder got a reference it could not record (pl_kernel_use of a
               kernel that does not exist); pl_finish reports it */
  bool finished; /* pl_finish succeeded and nothing was added since; pl_run needs it */
  bool gpu;      /* kernels are GPU kernels (runtime/gpu.h ABI; launches as below) */
} pl_plan;

/* ---- building (plan.c) ----
 * Builders never fail loudly: on OOM they set plan->oom and return 0/PL_AUTO;
 * pl_finish reports it. */
pl_plan *pl_create(ac_context *ctx, const char *name, const char *file);
void pl_destroy(pl_plan *p);
uint32_t pl_slots(pl_plan *p, uint32_t n); /* reserves n consecutive words, returns the first */
uint32_t pl_x_const(pl_plan *p, int64_t k);
uint32_t pl_x_word(pl_plan *p, uint32_t slot);
uint32_t pl_x_bin(pl_plan *p, pl_xop op, uint32_t a, uint32_t b);
uint32_t pl_site_add(pl_plan *p, uint32_t line, uint32_t col, const char *fmt);
uint32_t pl_kernel_add(pl_plan *p, const char *kind, const char *symbol, int64_t grain);
void pl_kernel_use(pl_plan *p, uint32_t kernel, uint32_t slot); /* keeps uses sorted, unique */
/* A use the kernel writes (also recorded as a use). */
void pl_kernel_write(pl_plan *p, uint32_t kernel, uint32_t slot);
/* A kernel that is not arrayc's: `entry` in the PTX module text ptx[0..len)
 * (copied), launched with `block` threads per block (1..1024). Its kind is
 * "extern", its grain 1. Returns its index. GPU plans only. */
uint32_t pl_kernel_add_extern(pl_plan *p, const char *entry, const char *ptx, size_t len,
                              unsigned block);
/* Appends a parameter to extern kernel `kernel`: frame word `word` (ptr: a
 * data word passed as its device address, sc ignored; else a scalar of
 * type sc). Also records the word in the kernel's uses. */
void pl_kernel_arg(pl_plan *p, uint32_t kernel, uint32_t word, ac_scalar sc, bool ptr);
void pl_param(pl_plan *p, uint32_t slot, ac_scalar sc, uint32_t rank);
void pl_result(pl_plan *p, uint32_t slot, ac_scalar sc, uint32_t rank);
/* Instructions: append; return the instruction index. */
uint32_t pl_set(pl_plan *p, uint32_t slot, uint32_t expr);
uint32_t pl_alloc(pl_plan *p, uint32_t slot, ac_scalar sc, uint32_t rank, const uint32_t *extents,
                  uint32_t site);
uint32_t pl_view(pl_plan *p, uint32_t slot, uint32_t src, ac_scalar sc, uint32_t rank,
                 const uint32_t *extents);
/* Moves the last n instructions to the front of the body (in their order),
 * before any other: for `try` allocations of sizes known from the
 * parameters (whose words are set before the body runs). */
void pl_move_last_to_front(pl_plan *p, uint32_t n);
uint32_t pl_assign(pl_plan *p, uint32_t dst, uint32_t src, ac_scalar sc, uint32_t rank);
uint32_t pl_free(pl_plan *p, uint32_t slot);
uint32_t pl_launch(pl_plan *p, uint32_t kernel, uint32_t n, uint32_t chunks);
/* The same with `warps W` (GPU plans; W an expression). */
uint32_t pl_launch_warps(pl_plan *p, uint32_t kernel, uint32_t n, uint32_t chunks,
                         uint32_t warps);
uint32_t pl_check(pl_plan *p, uint32_t cond, uint32_t site, uint32_t va, uint32_t vb);
/* A site's message: fmt (a site format) with its k-th %lld printing
 * vals[k] (0 for k >= n), written into buf as snprintf does (truncated to
 * size bytes with a NUL; buf may be NULL when size is 0); returns the
 * message's length. */
size_t pl_site_format(char *buf, size_t size, const char *fmt, uint32_t n, const int64_t *vals);
/* A check with n values (expressions vals[0..n), n <= RT_FAIL_VALS; 0: none). */
uint32_t pl_check_n(pl_plan *p, uint32_t cond, uint32_t site, uint32_t n, const uint32_t *vals);
uint32_t pl_for(pl_plan *p, uint32_t slot, uint32_t lo, uint32_t hi);
uint32_t pl_while(pl_plan *p);
uint32_t pl_break_unless(pl_plan *p, uint32_t slot);
uint32_t pl_if(pl_plan *p, uint32_t slot);
uint32_t pl_else(pl_plan *p);
uint32_t pl_end(pl_plan *p);
/* Checks structure (blocks balanced, slots and kernels in range, break
 * inside while, leaves within nslots, extern kernels as described above:
 * PTX, block 1..1024, arguments in range that are exactly their uses, GPU
 * plans only, `chunks auto`) and sets `match`. */
ac_status pl_finish(pl_plan *p, ac_error **err);

/* ---- text (plan_text.c) ---- */
/* Stores the text form in *out (a malloc'd string via the context
 * allocator; free with ac_string_destroy). Refuses (AC_ERR_INTERNAL) a plan
 * that pl_finish would refuse. pl_parse reads it back into a plan that is
 * pl_equal to p. */
ac_status pl_print(const pl_plan *p, char **out, ac_error **err);
/* Parses the text form; errors name `file:line:col`. */
ac_status pl_parse(ac_context *ctx, const char *file, const char *text, size_t len,
                   pl_plan **out, ac_error **err);
/* True if the two plans are equal (the round trip test): same name, slots,
 * leaves, sites, kernels and instructions, expressions compared as trees
 * (not by index); the file name is not part of the plan's text and is not
 * compared. Both must be valid (pl_finish/pl_parse succeeded). */
bool pl_equal(const pl_plan *a, const pl_plan *b);

/* ---- running (plan_exec.c) ----
 * kernels[i] is the compiled function of plan kernel i. args/results are
 * flattened leaves as in ac_function_call (already checked against the
 * params). On failure *err has the message and the site's position in
 * plan->file; everything is released. Safe to call from several threads
 * at once with the same plan. pool may be NULL: everything then runs on the
 * calling thread (as on a pool of one). */
ac_status pl_run(const pl_plan *p, rt_pool *pool, rt_kernel_fn const *kernels,
                 const ac_datum *args, size_t nargs, ac_datum *results, size_t nresults,
                 ac_error **err);

#endif
