/* lib/lower/skel_red.h: helpers shared by the reduction-family skeletons
 * (skel_fold.c, skel_scan.c, skel_permute.c, skel_filter.c, skel_rec.c);
 * they are defined in skel_fold.c. Internal to lib/lower.
 *
 * The CPU skeletons of this family split work into PIECES: a row of n
 * elements is cut into C pieces, piece p covering [p*n/C, (p+1)*n/C). The
 * plan chooses C = max(1, min(n, chunks(rows*n, grain) / rows)), so many rows
 * give C = 1 (one sequential loop per row, rows in parallel) and few long
 * rows give several pieces per row (the two- and three-phase algorithms of
 * fold and scan); C <= n makes every piece non-empty when C > 1, so no piece
 * needs an "empty" flag. The same piece scheme chunks the counting passes of
 * filter and of segment offsets.
 */
#ifndef ARRAYC_LIB_LOWER_SKEL_RED_H
#define ARRAYC_LIB_LOWER_SKEL_RED_H

#include "lower/skel.h"

/* ---- plan level ---- */
/* A fresh i64 word set to plan expression x (its value for kernels: sk_ld;
 * for other expressions: sk_xw). */
void sk_word(lw *L, uint32_t x, lw_val *out);
uint32_t sk_xw(lw *L, const lw_val *w);
/* Product of the extents of leaf 0 of array value a in dimensions [d0, d1). */
uint32_t sk_extent_product(lw *L, const lw_val *a, uint32_t d0, uint32_t d1);
/* The plan's piece count for rows of n elements (see above). */
uint32_t sk_pieces(lw *L, uint32_t rows_x, uint32_t n_x, int64_t grain);
/* Scratch: a fresh value of type "array of elem" (rank 1, a tuple of arrays
 * for a tuple elem) allocated with extent ext_x; sk_free releases it. */
void sk_scratch(lw *L, ir_type elem, uint32_t ext_x, ir_ref at, lw_val *out);
void sk_free(lw *L, const lw_val *v);
/* One-chunk launch of kernel k (a single iteration). */
void sk_launch1(lw *L, uint32_t k);
/* Segment offsets for fold_seg and the segmented scans: lens is a rank-1
 * integer array whose lengths must be >= 0 and sum to n_x (else the
 * interpreter's errors, named `what`, at node at); *offs gets an i64 array of
 * nseg + 1 entries, offs[s] the start of segment s and offs[nseg] = n. One
 * launch: a chained scan over pieces on the CPU, a decoupled look-back scan
 * on GPU targets (lw_gpu_seg_offsets). `data` is the segmented operand (or
 * NULL): when its elements are delayed and may fail (lw_delayed_may_fail),
 * a failed check is reported only after every element has been computed
 * once, so that an element's error wins, as in the interpreter, which
 * computes the operand before it reads the lengths (the CPU replays the
 * elements in a kernel of their own, launched only then). Offsets computed
 * ahead of a loop (lw_hoist_offsets) are taken as they are, with their
 * checks (and that replay) made here. */
bool sk_seg_offsets(lw *L, ir_ref at, const char *what, const lw_val *lens, uint32_t n_x,
                    const lw_val *data, lw_val *offs);
/* Its GPU form (gskel_segoffs.c), which sk_seg_offsets calls on GPU
 * targets: the same offsets, checks and messages from one scan kernel;
 * with `replay` (a delayed operand whose elements may fail), the last
 * tile's block computes its elements before the checks. */
bool lw_gpu_seg_offsets(lw *L, ir_ref at, const char *what, const lw_val *lens, uint32_t n_x,
                        const lw_val *replay, lw_val *offs);
/* The same kernel making no check: it stores the first negative length (or
 * 0) and the saturated total in the words neg and sum (lw_hoist_offsets). */
void lw_gpu_seg_offsets_ahead(lw *L, ir_ref at, const lw_val *lens, lw_val *offs, uint32_t neg,
                              uint32_t sum);
/* Frees offsets from sk_seg_offsets unless they were computed ahead of a
 * loop (lw_hoist_end frees those). */
void sk_free_offsets(lw *L, const lw_val *offs);
/* The host side of fold and fold_seg, shared by the CPU skeleton and the
 * GPU one (gskel_fold.c), so both make the same checks in the same order:
 * sk_fold_operands evaluates z and a and checks a's leaves (fold's
 * messages); sk_fold_seg_operands also evaluates lens and computes the
 * segment offsets (sk_seg_offsets, with fold_seg's checks); sk_fold_result
 * makes the result's words and allocates its arrays (nothing for the scalar
 * of a rank-1 fold). */
typedef struct sk_fold {
  ir_ref fn;     /* the combining function */
  ir_type elem;  /* the element type */
  uint32_t rank; /* of a */
  bool tmp;      /* fn allocates temporary memory: bracket each application */
  bool seg;      /* fold_seg */
  lw_val z, a, lens;
  uint32_t n_x;    /* fold: the row length; fold_seg: len(a) */
  uint32_t rows_x; /* fold: the number of rows; fold_seg: of segments */
} sk_fold;
bool sk_fold_operands(lw *L, ir_ref e, sk_fold *s);
bool sk_fold_seg_operands(lw *L, ir_ref e, sk_fold *s, lw_val *offs);
void sk_fold_result(lw *L, ir_ref e, const sk_fold *s, lw_val *out);

/* ---- kernel level ---- */
/* offs[q] = start + lens[lo] + .. + lens[q - 1] for q in [lo, hi) (plain
 * adds: the values matter only when the length checks pass). */
void sk_run_offsets(cg_fn *f, const cg_leaf *lens, const cg_leaf *offs, LLVMValueRef lo,
                    LLVMValueRef hi, LLVMValueRef start);
/* Chained chunks on the CPU (the segment offsets, the scans): iteration
 * `turn` of a launch waits until the frame word at done_p (sk_turn_word:
 * set to 0 by the plan before the launch) reaches turn (an acquire load,
 * polled, yielding the core now and then), and passes the turn on by
 * storing next (a release store). The pool claims chunks in increasing
 * order and a chunk runs its iterations in order, so the iteration waited
 * for is running or done: no deadlock. */
LLVMValueRef sk_turn_word(lw *L, cg_fn *f, uint32_t k, const lw_val *w);
void sk_wait_turn(cg_fn *f, LLVMValueRef done_p, LLVMValueRef turn);
void sk_pass_turn(cg_fn *f, LLVMValueRef done_p, LLVMValueRef next);
LLVMValueRef sk_ld(lw *L, cg_fn *f, uint32_t kernel, const lw_val *w); /* an i64 word */
/* Start of piece p of C over n: p * n / C (all non-negative, no overflow:
 * C is at most a few times the pool size and n below 2^40). */
LLVMValueRef sk_piece_start(cg_fn *f, LLVMValueRef p, LLVMValueRef n, LLVMValueRef C);
/* Element reads from an array value a (leaves of one shape) along rows: a
 * row's base offset and outer index are computed once (sk_row_at), then
 * sk_row_read gives the element at position j of the row as a value of type
 * elem. Manifest leaves are read by offset, others through cg_read. */
typedef struct sk_row {
  const cg_val *a;
  uint32_t rank;
  ir_type elem;
  LLVMValueRef n;    /* the row length (innermost extent) */
  LLVMValueRef base; /* row * n */
  LLVMValueRef *idx; /* rank entries; the last is set per read */
  bool manifest;     /* every leaf manifest: idx unused */
} sk_row;
void sk_row_init(cg_fn *f, const cg_val *a, ir_type elem, uint32_t rank, sk_row *r);
void sk_row_at(cg_fn *f, sk_row *r, LLVMValueRef row);
void sk_row_read(cg_fn *f, sk_row *r, LLVMValueRef j, ir_ref at, cg_val *out);
/* Element lin of manifest leaves v (scratch and outputs) as a value of type
 * elem, and the store of value x there. */
void sk_load(cg_fn *f, const cg_val *v, ir_type elem, LLVMValueRef lin, cg_val *out);
void sk_store(cg_fn *f, const cg_val *v, LLVMValueRef lin, const cg_val *x);
/* fn applied to (x, y), or (y, x) when `swap`, with the per-element
 * temporary-memory bracket when `tmp`. */
void sk_apply2(cg_fn *f, ir_ref fn, const cg_val *x, const cg_val *y, bool swap, bool tmp,
               cg_val *out);
/* A one-leaf i64 value (an index variable for a lambda). */
void sk_i64_val(cg_fn *f, LLVMValueRef v, cg_val *out);
/* if (cond) { ...: opens the then-block; sk_endif closes it. */
LLVMBasicBlockRef sk_if(cg_fn *f, LLVMValueRef cond);
void sk_endif(cg_fn *f, LLVMBasicBlockRef join);

#endif
