/* lib/codegen/seq_impl.h: helpers shared by the sequential array operations.
 *
 * cg_array_op (seq_core.c) computes an array operation that appears in
 * element code with plain loops in the current LLVM function, following
 * the reference interpreter (lib/interp) step by step: arguments are
 * evaluated in the same order, runtime checks are emitted in the order the
 * interpreter makes them (the first failure of a call wins, so the first
 * emitted check that fails gives the interpreter's message), and functions
 * are applied to elements in the interpreter's order.
 *
 * After a failed check the generated code carries on with harmless values:
 * every loop runs over SAFE extents (the minimum over the leaves of one
 * array, zero after a failed allocation or a failed size check), so no
 * read or write leaves an array whatever the inputs were.
 *
 * Results are always manifest (CL_ARRAY) leaves: in temporary memory, or
 * views of a manifest input (reshape, rank-1 slice); CL_FUNC leaves are
 * only made for stencil windows and the array a rec defines, which the
 * verifier allows to be indexed and nothing else, and for delayed
 * operands (cg_seq_operand), which only the operation they are an operand
 * of ever sees: every operation reads its array operands through cg_read /
 * cg_seq_load, so that a delayed producer is computed where it is read and
 * no temporary array is built for it.
 */
#ifndef ARRAYC_LIB_CODEGEN_SEQ_IMPL_H
#define ARRAYC_LIB_CODEGEN_SEQ_IMPL_H

#include "codegen/cg.h"

/* An array operand or result: n leaves of one shape. ext are extents that
 * are safe for every leaf (equal to the leaves' when the shape check
 * passed). */
typedef struct seq_arr {
  uint32_t n;
  cg_leaf *l;
  uint32_t rank;
  LLVMValueRef *ext;
} seq_arr;

/* A row-major loop nest over `rank` extents; idx are the indices inside
 * the body (rank 0: one iteration). */
typedef struct seq_nest {
  uint32_t rank;
  cg_loop *loops;
  LLVMValueRef *idx;
  uint8_t coop; /* cg_seq_elems_begin in a group: its cg_fn.coop */
} seq_nest;

/* ---- values and types (seq_core.c) ---- */
/* n fresh leaves from the arena. */
cg_leaf *cg_seq_leaves(cg_module *M, uint32_t n);
/* Type of parameter i of a LAM or FNREF node (from its verified type). */
ir_type cg_seq_param(cg_module *M, ir_ref lam, uint32_t i);
/* Rank of an array type or tuple of arrays (0 for anything else). */
uint32_t cg_seq_rank(cg_module *M, ir_type t);
/* A one-leaf scalar value. */
void cg_seq_scalar(cg_module *M, ir_type t, ac_scalar sc, LLVMValueRef v, cg_val *out);
/* Integer leaves [0, n) of v as i64 with the interpreter's reading
 * (interp_sc_to_i64: u64 values above INT64_MAX saturate). */
void cg_seq_ints(cg_fn *f, const cg_val *v, uint32_t n, LLVMValueRef *out);
/* Evaluates a shape argument into rank extents; a negative one fails at
 * `at` ("negative extent") and reads as 0. */
void cg_seq_shape(cg_fn *f, ir_ref at, ir_ref shape, uint32_t rank, LLVMValueRef *ext);
/* The op's array argument(s) as one seq_arr after the interpreter's shape
 * check of those leaves (interp_view, message prefixed with `what`). */
void cg_seq_view(cg_fn *f, ir_ref at, const char *what, const cg_val *v, seq_arr *out);
void cg_seq_view_leaves(cg_fn *f, ir_ref at, const char *what, uint32_t n, cg_leaf *l,
                        seq_arr *out);
/* Fresh arrays for every leaf of array type t with extents ext (values are
 * copied); *view describes them with safe extents. */
void cg_seq_alloc(cg_fn *f, ir_ref at, ir_type t, uint32_t rank, LLVMValueRef *ext, cg_val *out,
                  seq_arr *view);
/* Product of extents. */
LLVMValueRef cg_seq_size(cg_fn *f, uint32_t rank, LLVMValueRef *ext);
/* Bytes of all elements of a leaf. */
LLVMValueRef cg_seq_bytes(cg_fn *f, const cg_leaf *l);
/* Element (idx, lin) of an array as a value of element type `elem`: lin is
 * used for manifest leaves, idx for the others (either may be NULL: it is
 * computed from the other). */
void cg_seq_load(cg_fn *f, const seq_arr *a, LLVMValueRef *idx, LLVMValueRef lin, ir_type elem,
                 cg_val *out);
/* Stores the scalar leaves of elem into element lin of manifest arrays a. */
void cg_seq_store(cg_fn *f, const seq_arr *a, LLVMValueRef lin, const cg_val *elem);
/* Binds q i64 indices as the arguments of index function `lam`. */
void cg_seq_index_args(cg_fn *f, ir_ref lam, uint32_t q, LLVMValueRef *idx, cg_val *args);
/* o[lin] = lam(args), the application's scratch released after the store. */
void cg_seq_apply_store(cg_fn *f, ir_ref lam, uint32_t nargs, const cg_val *args, const seq_arr *o,
                        LLVMValueRef lin);
/* Replaces the CL_FUNC leaves of v by copies in fresh arrays. */
void cg_seq_manifest(cg_fn *f, ir_ref at, cg_val *v);
/* Copies the first size(dst) elements of leaf src, in row-major order, to
 * the manifest leaf dst (memcpy when src is manifest). */
void cg_seq_copy(cg_fn *f, const cg_leaf *src, const cg_leaf *dst);

/* ---- control flow and services (seq_core.c) ---- */
void cg_seq_nest_begin(cg_fn *f, seq_nest *n, uint32_t rank, LLVMValueRef *ext);
void cg_seq_nest_end(cg_fn *f, seq_nest *n);
/* The elements of an array that an element-wise operation (generate, map,
 * gather, backpermute, iota, fill) computes, each independently of the
 * others. Outside groups: cg_seq_alloc and a cg_seq_nest. In a warp or
 * block running element code together (cg_fn.coop; seq_coop.c) the group
 * computes the array ONCE: its first thread allocates it and the others
 * get the address, then thread t of the group computes elements t, t + G,
 * ... (G threads; coop cleared inside, each thread alone) and the group
 * meets at the end (__syncwarp or a barrier), so every thread then reads
 * what the others wrote. */
void cg_seq_alloc_elems(cg_fn *f, ir_ref at, ir_type t, uint32_t rank, LLVMValueRef *ext,
                        cg_val *out, seq_arr *view);
/* In a group (f->coop set): for (i = from + t; i < to; i += G) { ...,
 * thread t of G's share of [from, to), with coop cleared inside (each
 * thread its own elements); returns i. The caller closes the loop and
 * sets coop back. */
LLVMValueRef cg_seq_share_begin(cg_fn *f, cg_loop *l, LLVMValueRef from, LLVMValueRef to);
void cg_seq_elems_begin(cg_fn *f, seq_nest *n, uint32_t rank, LLVMValueRef *ext);
void cg_seq_elems_end(cg_fn *f, seq_nest *n);
/* Starts `if (cond) { ...`; returns the block after it, for cg_seq_endif. */
LLVMBasicBlockRef cg_seq_if(cg_fn *f, LLVMValueRef cond);
void cg_seq_endif(cg_fn *f, LLVMBasicBlockRef after);
/* Marks temporary memory before an application that may allocate
 * (`needed`, from cg_needs_tmp; NULL otherwise) so that its scratch is
 * released once its scalar result is stored; cg_seq_release(NULL) does
 * nothing. */
LLVMValueRef cg_seq_mark(cg_fn *f, bool needed);
void cg_seq_release(cg_fn *f, LLVMValueRef mark);
/* Fails at `at` unless ok (i1). tmpl is the message with placeholders {k}
 * for vals[k] (i64): a constant is written into the message, every run-time
 * value becomes one of the site's values (cg_check_n; a placeholder written
 * twice passes its value twice), so the message is the interpreter's with
 * all its numbers. At most RT_FAIL_VALS run-time placeholders. */
void cg_seq_check(cg_fn *f, ir_ref at, LLVMValueRef ok, const char *tmpl, uint32_t n,
                  const LLVMValueRef *vals);
/* cg_seq_check with a template built in b, which it frees. */
void cg_seq_check_buf(cg_fn *f, ir_ref at, LLVMValueRef ok, struct ir_buf *b, uint32_t n,
                      const LLVMValueRef *vals);
/* Appends a template list for messages: "[{..}, {..}]" (open '[') or an
 * index as interp_fmt_index writes it ("{..}" for rank 1, else "(..)");
 * entry d is placeholder `first`, entry j != d is `others + j`. */
void cg_seq_put_list(struct ir_buf *b, char open, char close, uint32_t rank, uint32_t d,
                     uint32_t first, uint32_t others);
/* The multi-index of row-major offset lin in extents ext. */
void cg_seq_unravel(cg_fn *f, uint32_t rank, LLVMValueRef *ext, LLVMValueRef lin,
                    LLVMValueRef *idx);

/* ---- folds and scans (seq_reduce.c, seq_coop.c) ---- */
/* A position along the innermost dimension of a row or segment: the row's
 * outer indices, the innermost index and the row-major offset of its
 * element 0. */
typedef struct seq_row {
  const seq_arr *a;
  LLVMValueRef *idx; /* a->rank entries; the last is overwritten */
  LLVMValueRef idx0, lin0;
} seq_row;
/* Element t of row r as a value of type elem. */
void cg_seq_row_load(cg_fn *f, seq_row *r, LLVMValueRef t, ir_type elem, cg_val *out);
/* acc = lam(acc, x), or lam(x, acc) when `right` (res: the new value); the
 * application's scratch is released once the accumulator holds it. */
void cg_seq_step(cg_fn *f, ir_ref lam, cg_var *acc, const cg_val *x, bool right, cg_val *res);
/* The fold of row r's n elements from z by lam, computed by all threads
 * of the group f->coop names (they all get the result; seq_coop.c). */
void cg_coop_fold_row(cg_fn *f, ir_ref lam, const cg_val *z, seq_row *r, LLVMValueRef n,
                      cg_val *res);
/* A scan of row r's n elements (z: an exclusive scan's start; `right`: a
 * right scan, the row taken from its end with lam's arguments swapped)
 * into o at the same offsets, computed by the group f->coop names in
 * chunks of its size: each warp scans its 32 elements with shuffles, a
 * block's warps add the totals of the warps before them (shared memory),
 * and the chunks before come in as a carry; the group meets at the end. */
void cg_coop_scan_row(cg_fn *f, ir_ref lam, bool excl, bool right, const cg_val *z, seq_row *r,
                      const seq_arr *o, LLVMValueRef n);
/* filter(lam, a) of the row a (rank 1, n elements) into o, computed by
 * the group f->coop names (chunks of its size, ballots, in a block the
 * warps' counts in shared memory); returns the number kept, the same in
 * every thread. */
LLVMValueRef cg_coop_filter_row(cg_fn *f, ir_ref lam, const seq_arr *a, const seq_arr *o,
                                LLVMValueRef n);
/* n fresh arrays of extents ext for the group f->coop names: its first
 * thread allocates them (its checks, its temporary memory), the others get
 * their addresses (seq_coop.c; cg_seq_alloc_elems). */
void cg_coop_new_arrays(cg_fn *f, ir_ref at, uint32_t rank, LLVMValueRef *ext, uint32_t n,
                        cg_leaf *l);
/* The thread's rank in its group and the group's size (i64). */
void cg_coop_rank(cg_fn *f, uint8_t mode, LLVMValueRef *t, LLVMValueRef *g);
/* The group's threads meet; what each wrote before, all see after. */
void cg_coop_sync(cg_fn *f, uint8_t mode);

/* ---- delayed operands (seq_delay.c) ----
 * Array operand e of an operation: when e is delay(p) with p a producer
 * (cg_delay_producer), p's operands are evaluated and its checks made now,
 * in the interpreter's order, and *out gets p as CL_FUNC leaves (cg.h,
 * cg_delayed); otherwise e's value. */
void cg_seq_operand(cg_fn *f, ir_ref e, cg_val *out);
/* slice's bounds (kids 1.. of slice node e, evaluated here) against the
 * source A, checked in the interpreter's order: start and stride (one per
 * dimension) and the result's extents, all safe after a failed check. */
void cg_seq_slice_bounds(cg_fn *f, ir_ref e, const seq_arr *A, LLVMValueRef *start,
                         LLVMValueRef *stride, LLVMValueRef *ext);
/* reshape's check that the q extents ext hold as many elements as A (as
 * rt_array_count counts them); the extents become 0 when it fails. */
void cg_seq_reshape_check(cg_fn *f, ir_ref e, const seq_arr *A, uint32_t q, LLVMValueRef *ext);

/* ---- the operations (seq_build.c, seq_reduce.c, seq_permute.c, seq_loop.c) ----
 * Each computes node e into *out. */
void cg_seq_generate(cg_fn *f, ir_ref e, cg_val *out);
void cg_seq_iota(cg_fn *f, ir_ref e, cg_val *out);
void cg_seq_fill(cg_fn *f, ir_ref e, cg_val *out);
void cg_seq_arrlit(cg_fn *f, ir_ref e, cg_val *out);
void cg_seq_map(cg_fn *f, ir_ref e, cg_val *out);
void cg_seq_filter(cg_fn *f, ir_ref e, cg_val *out);
void cg_seq_stencil(cg_fn *f, ir_ref e, cg_val *out);
void cg_seq_fold(cg_fn *f, ir_ref e, cg_val *out);
void cg_seq_fold_seg(cg_fn *f, ir_ref e, cg_val *out);
void cg_seq_scan(cg_fn *f, ir_ref e, cg_val *out);
void cg_seq_scan_seg(cg_fn *f, ir_ref e, cg_val *out);
void cg_seq_gather(cg_fn *f, ir_ref e, cg_val *out);
void cg_seq_backpermute(cg_fn *f, ir_ref e, cg_val *out);
void cg_seq_scatter(cg_fn *f, ir_ref e, cg_val *out);
void cg_seq_permute(cg_fn *f, ir_ref e, cg_val *out);
void cg_seq_slice(cg_fn *f, ir_ref e, cg_val *out);
void cg_seq_reshape(cg_fn *f, ir_ref e, cg_val *out);
void cg_seq_reorder(cg_fn *f, ir_ref e, cg_val *out); /* transpose, reverse, replicate */
void cg_seq_loop(cg_fn *f, ir_ref e, cg_val *out);    /* iterate, while */
void cg_seq_rec(cg_fn *f, ir_ref e, cg_val *out);
/* fold(f, z, (rec ...)) computed with a window of the recurrence's rows
 * instead of its table when it can be (seq_loop.c); false, having emitted
 * nothing, when not. */
bool cg_seq_rec_fold(cg_fn *f, ir_ref e, cg_val *out);
/* The check of the allocation of an array of at's type and these extents
 * would make ("array too large", as cg_seq_alloc); after a failure the
 * extents are 0. */
void cg_seq_size_check(cg_fn *f, ir_ref at, uint32_t rank, LLVMValueRef *ext);

#endif
