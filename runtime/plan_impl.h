/* runtime/plan_impl.h: internals shared by plan.c, plan_text.c and
 * plan_exec.c.
 *
 * pl_validate is the ONE statement of what a well-formed plan is: every
 * index in range, every leaf inside the frame, blocks balanced, `break`
 * inside a `while`, extern kernels as plan.h says, site formats that take
 * at most two %lld, expression trees no deeper than PL_MAX_DEPTH and no
 * larger than PL_MAX_NODES written out (so the recursive evaluator,
 * printer and comparer can neither overflow the stack nor blow up on
 * shared subexpressions). pl_finish calls it on plans built by
 * lowering (a failure is a compiler bug: AC_ERR_INTERNAL), pl_parse on plans
 * read from text (a failure is the text's fault: AC_ERR_SYNTAX at the
 * position of the offending line), pl_print before printing. Everything
 * pl_run does without checking follows from it.
 */
#ifndef ARRAYC_RUNTIME_PLAN_IMPL_H
#define ARRAYC_RUNTIME_PLAN_IMPL_H

#include "runtime/plan.h"

#include "ir.h"

/* Most frame words (a call allocates 16 bytes per word; more would be a
 * corrupt plan, not a program). */
#define PL_MAX_SLOTS (1u << 24)
/* Largest rank of a leaf in a plan (the extents are frame words). */
#define PL_MAX_RANK 64u
/* Deepest expression tree, and most nodes of one written out as a tree. */
#define PL_MAX_DEPTH 200u
#define PL_MAX_NODES 65536u
/* GPU kernels: most static shared memory per block (the largest any GPU
 * has), and most scratch bytes a kernel may ask for per block or fixed. */
#define PL_MAX_SMEM (228u * 1024u)
#define PL_MAX_SCRATCH ((uint64_t)1 << 32)
/* Most parameters of an extern kernel: CUDA's parameter space holds at
 * most 32764 bytes, 4095 parameters of 8 bytes. */
#define PL_MAX_KARGS 4096u

/* The part of a plan a fault is about (the parser maps it to a position). */
typedef enum pl_part { PP_PLAN, PP_PARAM, PP_RESULT, PP_SITE, PP_KERNEL, PP_INST, PP_EXPR } pl_part;

typedef struct pl_fault {
  pl_part part;
  uint32_t index; /* which param, result, site, kernel, instruction or expression */
  char msg[160];
} pl_fault;

/* Checks p. Returns AC_OK, AC_ERR_NOMEM (the plan or the check ran out of
 * memory) or AC_ERR_INTERNAL with *f describing the first problem. When
 * `links` is not NULL it receives the `match` of every instruction. */
ac_status pl_validate(const pl_plan *p, pl_fault *f, uint32_t *links);

/* Records a fault in *f (the message from fmt) and returns false. */
bool pl_fail(pl_fault *f, pl_part part, uint32_t index, const char *fmt, ...) IR_PRINTF(4, 5);

/* The words' types (plan_slots.c): every word the plan mentions is a data
 * pointer, an extent or a scalar, and each is used as such. Called by
 * pl_validate once everything else holds (every index in range). Returns
 * AC_OK, AC_ERR_NOMEM or AC_ERR_INTERNAL with *f describing the misuse. */
ac_status pl_check_slots(const pl_plan *p, pl_fault *f);

/* Appends s as a string of the text form: in quotes, with the C escapes
 * \" \\ \n \t and \xNN for other bytes outside printable ASCII. */
void pl_print_quoted(ir_buf *b, const char *s);
/* The same for the n bytes at s (which contain no NUL). */
void pl_print_quoted_n(ir_buf *b, const char *s, size_t n);

/* True if fmt is a site format: text with %% and at most two %lld. */
bool pl_site_format_ok(const char *fmt);

/* An ir_error naming `file` (NULL: none) at line:col (0: no position), with
 * the source line and caret when `src` is given. */
ac_error *pl_error(ac_context *ctx, ac_status st, const char *file, const char *src,
                   size_t srclen, uint32_t line, uint32_t col, const char *fmt, ...)
    IR_PRINTF(8, 9);

#endif
