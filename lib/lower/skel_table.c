/* lib/lower/skel_table.c: which skeleton lowers which array operation.
 *
 * The one place that maps operations (ops.def) to the skeleton functions
 * of skel.h, as QBE and Lua keep dispatch in one table. An operation
 * without an entry is refused by lw_expr with AC_ERR_UNSUPPORTED at the
 * node ("OP is not supported by the cpu backend yet"), so a backend that
 * lacks an operation says so instead of miscompiling.
 */
#include "lower/skel.h"

static const lw_skel_fn lw_table[IR_NUM_OPS] = {
    /* skel_map.c */
    [IR_GENERATE] = lw_skel_generate,
    [IR_IOTA] = lw_skel_iota,
    [IR_FILL] = lw_skel_fill,
    [IR_MAP] = lw_skel_map,
    [IR_GATHER] = lw_skel_gather,
    [IR_BACKPERMUTE] = lw_skel_backpermute,
    [IR_SLICE] = lw_skel_slice,
    [IR_RESHAPE] = lw_skel_reshape,
    [IR_TRANSPOSE] = lw_skel_transpose,
    [IR_REVERSE] = lw_skel_reverse,
    [IR_REPLICATE] = lw_skel_replicate,
    [IR_ARRLIT] = lw_skel_arrlit,
    /* skel_stencil.c */
    [IR_STENCIL] = lw_skel_stencil,
    /* skel_fold.c */
    [IR_FOLD] = lw_skel_fold,
    [IR_FOLD_SEG] = lw_skel_fold_seg,
    /* skel_scan.c */
    [IR_SCAN] = lw_skel_scan,
    [IR_SCAN_INCL] = lw_skel_scan,
    [IR_SCANR] = lw_skel_scan,
    [IR_SCANR_INCL] = lw_skel_scan,
    [IR_SCAN_SEG] = lw_skel_scan,
    [IR_SCAN_INCL_SEG] = lw_skel_scan,
    /* skel_permute.c */
    [IR_SCATTER] = lw_skel_scatter,
    [IR_PERMUTE] = lw_skel_permute,
    /* skel_filter.c */
    [IR_FILTER] = lw_skel_filter,
    /* skel_rec.c */
    [IR_REC] = lw_skel_rec,
};

lw_skel_fn lw_skeleton(ir_op op) {
  return (unsigned)op < IR_NUM_OPS ? lw_table[op] : NULL;
}
