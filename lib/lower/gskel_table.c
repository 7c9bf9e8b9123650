/* lib/lower/gskel_table.c: which GPU skeleton lowers which array operation
 * on GPU targets.
 *
 * An operation without an entry here runs its CPU skeleton through the
 * chunk adapter (gpu.c): correct, one GPU thread per CPU chunk. The
 * element-wise operations need no entry: their CPU skeleton functions call
 * lw_elementwise, which has a GPU form of its own (lw_gpu_elementwise).
 */
#include "lower/skel.h"

static const lw_skel_fn lw_gpu_table[IR_NUM_OPS] = {
    [IR_GENERATE] = NULL, /* (a table with no entry yet must still be an array) */
    [IR_REC] = lw_gskel_rec,
    [IR_FOLD] = lw_gskel_fold,
    [IR_FOLD_SEG] = lw_gskel_fold_seg,
    [IR_SCATTER] = lw_gskel_scatter,
    [IR_PERMUTE] = lw_gskel_permute,
    [IR_SCAN] = lw_gskel_scan,
    [IR_SCAN_INCL] = lw_gskel_scan,
    [IR_SCANR] = lw_gskel_scan,
    [IR_SCANR_INCL] = lw_gskel_scan,
    [IR_SCAN_SEG] = lw_gskel_scan,
    [IR_SCAN_INCL_SEG] = lw_gskel_scan,
    [IR_FILTER] = lw_gskel_filter,
};

lw_skel_fn lw_gpu_skeleton(ir_op op) {
  return (unsigned)op < IR_NUM_OPS ? lw_gpu_table[op] : NULL;
}
