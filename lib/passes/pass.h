/* lib/passes/pass.h: optimisation passes over the IR and the pass manager
 * that runs them (docs/passes.md is the user's reference).
 *
 * A pass is a named transformation of a whole verified module (lib/ir/ir.h):
 * it rewrites function bodies by building new nodes in the module's arena
 * and storing the new root in ir_func.body (old nodes become garbage that
 * dies with the module; nodes are immutable once a function refers to them,
 * since subtrees are shared, so a pass never edits a node in place: it
 * builds a new one, see ps_rebuild). The manager re-verifies the module
 * after every pass (ir_check_module sets the type of every new node and is
 * idempotent on checked IR), so a pass may leave IR_TY_NONE on the nodes it
 * makes; it must keep the IR valid and the program's meaning, which the
 * interpreter defines (docs/language.md), including which runtime error a
 * failing program reports (a pass may remove an error only where the
 * language reference says an unused value may be skipped, §6.9).
 *
 * Passes are listed in one table (passes.c, ps_passes); arrayc-opt, arrayc,
 * arrayc-run and the runtime API (ac_runtime_set_passes) run them through
 * ps_run_pipeline with a comma-separated list of pass names, where "O0" ..
 * "O3" stand for the default pipeline of that level and "-NAME" drops the
 * runs of NAME listed before it ("O2,-fuse").
 *
 * Counters: each pass names its counters (ps_pass.counters, NULL-terminated)
 * and adds to ps_ctx.counters[i] (index i of its list): nodes removed,
 * producers fused, arrays hoisted, tiles created. `arrayc-opt --stats`
 * prints them.
 */
#ifndef ARRAYC_LIB_PASSES_PASS_H
#define ARRAYC_LIB_PASSES_PASS_H

#include "ir.h"

/* What the code will run on: smem-stencil only acts on GPU code; fuse may
 * weigh recomputation differently. ANY is what arrayc-opt uses by default. */
typedef enum ps_target { PS_TARGET_ANY, PS_TARGET_CPU, PS_TARGET_GPU } ps_target;

#define PS_MAX_COUNTERS 8

/* A diagnostic a pass reports without failing (sequentialise names the
 * nested operations it leaves sequential). */
typedef void (*ps_warn_fn)(void *ud, const ac_module *m, ir_loc loc, const char *msg);

typedef struct ps_ctx {
  ac_module *m;
  ac_context *ctx;
  ps_target target;
  /* this pass's counters, indexed like ps_pass.counters; zeroed by the
   * manager before the pass runs and accumulated into the report after */
  uint64_t counters[PS_MAX_COUNTERS];
  ps_warn_fn warn; /* may be NULL: warnings are dropped */
  void *warn_ud;
  uint32_t entry; /* ps_options.entry */
  ac_error **err; /* where a pass stores its error (ir_error / ir_report) */
} ps_ctx;

typedef struct ps_pass {
  const char *name; /* "simplify" */
  const char *help; /* one line for --list-passes */
  /* Runs over every function of c->m (externs have no body). Returns AC_OK,
   * or an error status with *c->err set (the pipeline stops). */
  ac_status (*run)(ps_ctx *c);
  const char *const *counters; /* NULL-terminated, at most PS_MAX_COUNTERS */
} ps_pass;

/* The registry (passes.c), in the order --list-passes shows. */
extern const ps_pass ps_passes[];
extern const size_t ps_npasses;
const ps_pass *ps_find(const char *name, size_t len);

/* The default pipeline of level 0..3 as a pass list ("" for O0). */
const char *ps_level_pipeline(int level);
/* The level every compiled function gets unless told otherwise. */
#define PS_DEFAULT_LEVEL 2

/* ---- running a pipeline ---- */

typedef enum ps_print_when { PS_PRINT_NEVER, PS_PRINT_AFTER_ALL, PS_PRINT_AFTER_ONE } ps_print_when;

typedef struct ps_options {
  ps_target target;
  bool verify_each;       /* re-verify after each pass (always done; this also
                            * checks print -> parse -> print round trips) */
  ps_print_when print;    /* print the module after passes */
  const char *print_pass; /* PS_PRINT_AFTER_ONE: the pass's name */
  /* where --print-after* output goes: called with "after NAME" and the
   * module text */
  void (*print_fn)(void *ud, const char *pass, const char *text);
  void *print_ud;
  ps_warn_fn warn;
  void *warn_ud;
  /* 1 + the function being compiled: sequentialise reports only the code
   * it reaches; 0 (arrayc-opt): every function */
  uint32_t entry;
} ps_options;

/* A ps_warn_fn that hands the warning to the module's context
 * (ir_ctx_warn: once per position, to the handler of
 * ac_context_set_warning_handler). */
void ps_warn_context(void *ud, const ac_module *m, ir_loc loc, const char *msg);

/* Accumulated counters of a pipeline run: one row per pass run (a pass
 * named twice has two rows). */
typedef struct ps_stat_row {
  const ps_pass *pass;
  uint64_t counters[PS_MAX_COUNTERS];
  double seconds;
} ps_stat_row;

typedef struct ps_report {
  ps_stat_row *rows; /* ac_alloc'd; free with ps_report_free */
  size_t nrows;
} ps_report;
void ps_report_free(ac_context *ctx, ps_report *r);

/* Checks a pass list ("simplify,cse" or "O2,smem-stencil"; empty is no
 * passes) without running it: AC_ERR_INVALID naming the unknown pass. */
ac_status ps_check_pipeline(ac_context *ctx, const char *list, ac_error **err);

/* Runs the passes of `list` over m (verified), in order, re-verifying after
 * each; rep may be NULL. On failure m may hold a partly transformed but
 * valid program; the error names the pass. */
ac_status ps_run_pipeline(ac_module *m, const char *list, const ps_options *o, ps_report *rep,
                          ac_error **err);

/* ---- helpers for writing passes (rewrite.c) ---- */

/* A new node like r (op, flags, loc, attr, names, aux, lit, type) with the
 * given children (count nkids, which may differ from r's only for nodes of
 * variable arity). IR_NONE on OOM (m->oom set). */
ir_ref ps_rebuild(ac_module *m, ir_ref r, uint32_t nkids, const ir_ref *kids);
/* Like ps_rebuild but returns r itself when every child is unchanged, so
 * that untouched subtrees stay shared. */
ir_ref ps_rebuild_if_changed(ac_module *m, ir_ref r, const ir_ref *kids);

/* Counts of the nodes of a tree (a shared subtree is counted at each use):
 * the size measure of inline and of fuse's "duplicate only when cheap". The
 * count stops at `limit` (returns limit) so that the cost is bounded. */
uint32_t ps_size(const ac_module *m, ir_ref r, uint32_t limit);

/* True if evaluating r can fail at run time or never end (an index, a
 * division by an integer zero, an array operation with shape checks, a call,
 * a loop), so that removing or moving it past another effect changes which
 * error a program reports. Conservative: false only when sure. */
bool ps_may_fail(const ac_module *m, ir_ref r);

/* True if applying fn (a LAM or FNREF) can fail or not end: ps_may_fail
 * of its body (an extern function may). */
bool ps_fn_may_fail(const ac_module *m, ir_ref fn);

/* Recurrence fusion (rec_fuse.c; simplify's recs-fused): rec (rank 2,
 * bounds from the literal 0) and gen, a generate over its extents under
 * nb binders below the let that binds rec, whose lambda reads the table
 * only at its own cell h[i, j] and cannot fail otherwise: the recurrence
 * whose cells are (T, U), the lambda's result U computed with each cell
 * (field 1 of its table is the generate). IR_NONE when any of this does
 * not hold. Literals of both should be pinned: the body moves under a let. */
ir_ref ps_rec_fuse(ac_module *m, ir_ref rec, ir_ref gen, uint32_t nb);

/* True if the tree r contains an empty array literal `[]`, whose element
 * type only its context gives (language.md §5): moved out of that context
 * (a function body inlined where the declared result type no longer
 * applies, a let of its own) it no longer verifies, so passes leave such
 * terms where they are. */
bool ps_has_empty_arrlit(const ac_module *m, ir_ref r);

/* True if r is an array operation (GENERATE .. WHILE, REC, ARRLIT in
 * ops.def order; lowering makes kernels of these at plan level). */
bool ps_is_array_op(const ac_module *m, ir_ref r);

/* Nested folds and scans that a warp or a block computes together
 * (nesting.c): node r (a fold, scan or scan_incl), under `base` binders of
 * the element code (the enclosing lambda's parameters and the lets in its
 * body; ex: the de Bruijn index there of the element's innermost index, a
 * generate's last parameter, or -1), reads a row of the element that a
 * thread per element would read badly; and element code `code` (a lambda
 * or a function reference given to map, or to generate when `indexed`)
 * holds such an operation where all threads of a group run it with the
 * same values, and no array operation that each of them would compute in
 * full. */
bool ps_coop_row(const ac_module *m, ir_ref r, uint32_t base, int64_t ex);
bool ps_coop_code(const ac_module *m, ir_ref code, bool indexed);
/* Fold r in element code is the fold of a rank-2 recurrence's rows (or a
 * fold of one) that a warp or block computes together by anti-diagonals;
 * function fn's body is such a fold (lib/codegen/seq_loop.c). */
bool ps_coop_rec_fold(const ac_module *m, ir_ref r);
bool ps_coop_rec_fn(const ac_module *m, int64_t fn);
/* ps_coop_code, and when its first group fold is over a computed row (a
 * generate or iota of the row's index alone, whose extent does not depend
 * on the element: generate(n, |i| fold(+, 0, generate(m, |j| f(i, j))))),
 * that extent in *ext, an expression under *base binders of the code
 * (its parameters and the lets above the fold); else *ext = IR_NONE. */
bool ps_coop_code_rows(const ac_module *m, ir_ref code, bool indexed, ir_ref *ext,
                       uint32_t *base);
/* The array operations that such a group computes together into one
 * array in such element code (the element-wise ones, each thread its share
 * of the elements; left scans, by warp scans). */
bool ps_coop_array_op(const ac_module *m, ir_ref r);

/* True if the function body r prints as text that parses again: at most
 * PARSE_MAX_DEPTH nested operations as the printer counts them, and at most
 * PARSE_MAX_NEST levels of syntax as the parser counts them (rounded up).
 * Passes that deepen trees (a let opening a block in expression position
 * adds to both) keep the old body when the new one fails this. False when
 * memory runs out. Defined in printable.c. */
bool ps_printable(const ac_module *m, ir_ref r);

#endif
