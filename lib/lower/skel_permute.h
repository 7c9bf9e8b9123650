/* lib/lower/skel_permute.h: the parts of the write permutations (scatter,
 * permute) that the CPU skeletons (skel_permute.c, which defines them) and
 * the GPU skeletons (gskel_permute.c) share. Internal to lib/lower.
 *
 * Both backends do the same host-side work before their kernels (operands
 * lowered, the interpreter's shape checks, the result allocated) and check
 * target indices with the same messages, so only the kernels differ. The
 * host side is split off here rather than copied so that the two cannot
 * drift apart in what they check or in which order.
 */
#ifndef ARRAYC_LIB_LOWER_SKEL_PERMUTE_H
#define ARRAYC_LIB_LOWER_SKEL_PERMUTE_H

#include "lower/skel.h"

/* ---- host side ---- */
/* scatter(idx, vals, dest): operands (v[0] idx, v[1] vals, v[2] dest),
 * element types, rank q of idx/vals and r of dest, and plan expressions for
 * the element counts of dest and idx. */
typedef struct lw_pm_scatter {
  lw_val v[3];
  ir_type ielem, velem, delem;
  uint32_t q, r;
  uint32_t dsize, isize;
} lw_pm_scatter;
/* Lowers e's operands, checks shapes as the interpreter does and allocates
 * *out with dest's extents. false on error (recorded in L->M). */
bool lw_pm_scatter_begin(lw *L, ir_ref e, lw_pm_scatter *s, lw_val *out);

/* permute(comb, dest, |ix| dst, a). tmp: comb or dst may need temporary
 * memory per element. */
typedef struct lw_pm_permute {
  ir_ref comb, dst;
  lw_val dest, a;
  ir_type delem, aelem;
  uint32_t r, q;
  bool tmp;
  uint32_t dsize, asize;
} lw_pm_permute;
bool lw_pm_permute_begin(lw *L, ir_ref e, lw_pm_permute *p, lw_val *out);
/* True if comb's body is one binary operation applied to its two
 * parameters (in either order: *swapped when it is op(x, acc)), e.g.
 * |a, b| a + b or a top-level function max2(a, b) = max(a, b); *op gets it. */
bool lw_pm_comb_op(lw *L, ir_ref comb, ir_op *op, bool *swapped);

/* ---- kernel side ---- */
/* Element lin (row-major) of the array value v of rank `rank` as a value of
 * type elem: manifest leaves by offset, others through cg_read. */
void lw_pm_read_lin(cg_fn *f, const cg_val *v, ir_type elem, uint32_t rank, LLVMValueRef lin,
                    ir_ref at, cg_val *out);
/* The target index pos (rank i64 values) into extents ext: fails at `at`
 * with "WHAT: index .. out of range for extent .." when outside (the first
 * offending dimension reports) and returns the row-major offset, or 0 when
 * outside; *ok says which. */
LLVMValueRef lw_pm_locate(cg_fn *f, ir_ref at, const char *what, uint32_t rank, LLVMValueRef *pos,
                          LLVMValueRef *ext, LLVMValueRef *ok);
/* The site of scatter's "index .. written twice" for a rank-r destination
 * (values: the first two coordinates). */
uint32_t lw_pm_dup_site(cg_module *M, ir_ref e, uint32_t r);

#endif
