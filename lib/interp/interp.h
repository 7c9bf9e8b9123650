/* lib/interp/interp.h: internals of the reference interpreter.
 *
 * The interpreter walks verified IR directly. Values are kept FLATTENED, in
 * the order of ir_ty_leaves: a value of type (f32, (i32[], bool)) is three
 * leaves, a scalar, an array and a scalar. Flattening is what makes tuples
 * free (no allocation to build, project or destructure one) and makes the
 * structure-of-arrays rule trivial: a tuple of arrays is just several array
 * leaves, and an element of it is the same number of scalar leaves.
 *
 * Evaluation is a stack machine over leaves. interp_eval(r) pushes the
 * leaves of r's value on I->stk. Variables are an environment of (offset,
 * count) ranges into that stack, one per de Bruijn binder, the innermost
 * last: variable i is I->env[nenv - 1 - i]. Every array leaf on the stack
 * owns one reference, so popping releases and copying retains; when an
 * evaluation fails the caller releases everything above its base, which is
 * why operations push the arrays they create at once and fill them in
 * place (nothing is ever owned outside the stack except short-lived
 * scratch buffers that the operation frees itself).
 *
 * The stack may move when it grows: code holds offsets, never leaf pointers,
 * across anything that can push.
 *
 * Files: interp.c (the stack, environment, lambdas and the expression forms),
 * scalar.c (the scalar semantics of docs/language.md §6), extern.c (calls of
 * extern functions through libffi), build.c
 * (construction, map, filter, array loops), reduce.c (folds and scans),
 * permute.c (permutations and index-space changes), stencil.c, rec.c.
 */
#ifndef ARRAYC_LIB_INTERP_INTERP_H
#define ARRAYC_LIB_INTERP_INTERP_H

#include "interp/rtarray.h"

/* A scalar: integers as their value in their type (sign-extended to 64 bits
 * for signed kinds, zero-extended for unsigned ones), bool as 0/1, floats as
 * a double (an f32 holds a value exactly representable as float). */
typedef union interp_scalar {
  uint64_t u;
  int64_t i;
  double f;
} interp_scalar;

typedef enum interp_leaf_kind {
  LK_SCALAR, /* v.s */
  LK_ARRAY,  /* v.a, one reference owned by the stack slot */
  LK_WINDOW, /* v.w: a stencil window (borrowed; lives while its stencil runs) */
  LK_REC     /* v.r: field `field` of the array a rec is defining (borrowed) */
} interp_leaf_kind;

struct interp_window;
struct interp_rec;

typedef struct interp_leaf {
  uint32_t kind;
  uint32_t field;
  union {
    interp_scalar s;
    ac_array *a;
    struct interp_window *w;
    struct interp_rec *r;
  } v;
} interp_leaf;

typedef struct interp_env {
  size_t off, n; /* leaves [off, off + n) of the stack */
} interp_env;

typedef struct interp {
  const ac_module *m;
  ac_context *ctx;
  interp_leaf *stk;
  size_t sp, cap;
  interp_env *env;
  size_t nenv, capenv;
  uint32_t depth; /* nesting of interp_eval, bounded to protect the C stack */
  ac_error *err;  /* the first failure */
  ac_status st;
} interp;

/* Node r of the module being run and its i-th child. Plain indexing rather
 * than ir_node_get/ir_kid: these are on every evaluation path, and debug
 * builds do not inline. */
#define INODE(I, r) (&(I)->m->nodes[(r)])
#define IKID(I, r, i) ((I)->m->kids[(I)->m->nodes[(r)].kids + (i)])

struct interp_ffi;

/* A lambda (LAM node) or a function used as one (FNREF) with the number of
 * leaves of each parameter, which the operation applying it knows from the
 * values it passes. An extern function (docs/language.md §3.3) has no body:
 * `ext` holds its prepared libffi call instead (extern.c). */
typedef struct interp_lam {
  ir_ref fn, body;
  ir_type ret; /* type of the body's value */
  uint32_t nparams;
  size_t *counts;
  size_t small[4];
  struct interp_ffi *ext; /* extern functions only; owned, freed by interp_lam_free */
  int64_t kernel;         /* an extern kernel named by FNREF (iterate, while): its index + 1 */
} interp_lam;

/* ---- interp.c ---- */
bool interp_eval(interp *I, ir_ref r);
bool interp_reserve(interp *I, size_t n);
bool interp_push(interp *I, interp_leaf l);
/* Pushes copies of leaves [off, off + n) (retaining arrays). */
bool interp_push_copy(interp *I, size_t off, size_t n);
/* Releases leaves [base, sp) and pops them. */
void interp_drop(interp *I, size_t base);
/* Releases leaves [base, keep) and moves [keep, sp) down to base. */
void interp_collapse(interp *I, size_t base, size_t keep);
/* Records a runtime error at node `at` (AC_ERR_RUNTIME); returns false. */
bool interp_fail(interp *I, ir_ref at, const char *fmt, ...) IR_PRINTF(3, 4);
/* AC_ERR_NOMEM, at node `at` when it is known (0 otherwise). */
bool interp_nomem(interp *I, ir_ref at);
/* AC_ERR_INTERNAL at node `at`: the IR breaks an invariant the verifier
 * guarantees. It keeps malformed input from crashing the interpreter. */
bool interp_internal(interp *I, ir_ref at, const char *fmt, ...) IR_PRINTF(3, 4);
/* Scratch memory of n elements of `size` bytes; fails with "array too large"
 * at `at` beyond the array size limit, or with AC_ERR_NOMEM. */
void *interp_scratch(interp *I, ir_ref at, int64_t n, size_t size);

/* Binds the leaves [off, off + n) as the innermost variable. */
bool interp_env_push(interp *I, size_t off, size_t n);

bool interp_lam_init(interp *I, interp_lam *l, ir_ref fn, uint32_t nparams);
void interp_lam_free(interp *I, interp_lam *l);
/* Applies l to the arguments occupying [base, sp): they are bound, the body
 * is evaluated, the arguments are released and the result is left at base. */
bool interp_apply(interp *I, const interp_lam *l, size_t base);
/* Runs `while cond(state) { state = step(state) }` on the state at base..top
 * (the scalar loop and the array-level while). */
bool interp_run_while(interp *I, const interp_lam *cond, const interp_lam *step, size_t base);

/* Number of leaves of a value of type t (windows count one). */
size_t interp_ty_nleaves(const ac_context *ctx, ir_type t);
/* Writes the scalar kind of each leaf of t (element kind for arrays) to out,
 * up to max entries; returns the number of leaves. */
size_t interp_ty_scalars(const ac_context *ctx, ir_type t, ac_scalar *out, size_t max);
/* Reads the first n integer leaves of a value of type t sitting at off as
 * int64 (u64 values above INT64_MAX saturate). */
bool interp_read_ints(interp *I, ir_ref at, ir_type t, size_t off, size_t n, int64_t *out);
/* Reads a shape argument (an integer, or a tuple of rank integers) whose
 * value sits at off and whose node is `shape`; negative extents fail at `at`. */
bool interp_read_shape(interp *I, ir_ref at, ir_ref shape, size_t off, unsigned rank, int64_t *ext);
/* Checks that leaves [off, off + n) are arrays of one shape (a tuple of
 * arrays used as an array) and returns the first one; `what` prefixes the
 * mismatch message ("map"), or is "" for none. */
const ac_array *interp_view(interp *I, ir_ref at, const char *what, size_t off, size_t n);
/* Allocates and pushes one array per leaf of the array type t, all of the
 * given extents. */
bool interp_new_arrays(interp *I, ir_ref at, ir_type t, unsigned rank, const int64_t *ext);
/* Pushes the n scalar leaves of element k of the arrays at [arrs, arrs + n). */
bool interp_load(interp *I, size_t arrs, size_t n, int64_t k);
/* Stores the n scalar leaves at src into element k of the arrays at outs. */
void interp_store(interp *I, size_t outs, size_t n, int64_t k, size_t src);
/* "[3, 4]" and "7" / "(1, 7)" for messages. */
void interp_fmt_shape(char *buf, size_t size, unsigned rank, const int64_t *ext);
void interp_fmt_index(char *buf, size_t size, unsigned rank, const int64_t *idx);
/* Element k of a row-major array with these extents as a multi-index. */
void interp_unravel(unsigned rank, const int64_t *ext, int64_t k, int64_t *idx);
/* Advances a multi-index to the next element in row-major order. */
void interp_next_index(unsigned rank, const int64_t *ext, int64_t *idx);
/* Rank of an array type or tuple of arrays (0 for anything else). */
unsigned interp_ty_rank(const ac_context *ctx, ir_type t);

/* A vector of n int64 (indices, extents) that lives on the C stack when
 * small. interp_ints_init fails like interp_scratch. */
typedef struct interp_ints {
  int64_t *p;
  int64_t small[8];
} interp_ints;
bool interp_ints_init(interp *I, ir_ref at, interp_ints *v, size_t n);
void interp_ints_free(interp *I, interp_ints *v);

/* ---- extern.c: calls of extern functions through libffi ---- */
/* interp_lam_init for a CALL or FNREF node `at` of extern function fi. */
bool interp_extern_init(interp *I, interp_lam *l, ir_ref at, uint32_t fi, uint32_t nparams);
/* interp_apply for an extern: calls it on the scalar arguments at
 * [base, sp) and leaves its result at base. */
bool interp_extern_apply(interp *I, const interp_lam *l, size_t base);
/* A CALL node r of an extern kernel (§3.4): pushes its results. */
bool interp_kernel_call(interp *I, ir_ref r);
/* Extern kernel fi (called at node r) on the arguments at [base, sp), one
 * leaf each: they are replaced by its results. */
bool interp_kernel_apply(interp *I, ir_ref r, uint32_t fi, size_t base);

/* ---- scalar.c ---- */
interp_scalar interp_sc_norm(ac_scalar sc, interp_scalar v);
interp_scalar interp_sc_lit(ac_scalar sc, ir_litval v);
interp_scalar interp_sc_load(ac_scalar sc, const void *data, int64_t k);
void interp_sc_store(ac_scalar sc, void *data, int64_t k, interp_scalar v);
/* Unary operators, one-argument math builtins and float predicates; sc is
 * the operand's kind. */
interp_scalar interp_sc_unary(ir_op op, ac_scalar sc, interp_scalar a);
/* Binary operators and two-argument builtins; sc is the operands' kind
 * (comparisons return a bool 0/1). LAND/LOR are handled by the evaluator. */
interp_scalar interp_sc_binary(ir_op op, ac_scalar sc, interp_scalar a, interp_scalar b);
interp_scalar interp_sc_fma(ac_scalar sc, interp_scalar a, interp_scalar b, interp_scalar c);
interp_scalar interp_sc_cast(ac_scalar to, ac_scalar from, interp_scalar a);
/* An integer of kind sc as int64 (u64 above INT64_MAX saturates). */
int64_t interp_sc_to_i64(ac_scalar sc, interp_scalar a);
bool interp_sc_is_signed(ac_scalar sc);
/* Flattened API values. */
interp_scalar interp_sc_from_datum(const ac_datum *d);
void interp_sc_to_datum(ac_scalar sc, interp_scalar v, ac_datum *d);

/* ---- operations (build.c, reduce.c, permute.c, stencil.c, rec.c) ----
 * Each evaluates node r of its kind and pushes the result. */
bool interp_generate(interp *I, ir_ref r);
bool interp_iota(interp *I, ir_ref r);
bool interp_fill(interp *I, ir_ref r);
bool interp_arrlit(interp *I, ir_ref r);
bool interp_map(interp *I, ir_ref r);
bool interp_filter(interp *I, ir_ref r);
bool interp_iterate(interp *I, ir_ref r);
bool interp_while(interp *I, ir_ref r);
bool interp_fold(interp *I, ir_ref r);
bool interp_fold_seg(interp *I, ir_ref r);
bool interp_scan(interp *I, ir_ref r);
bool interp_scan_seg(interp *I, ir_ref r);
bool interp_gather(interp *I, ir_ref r);
bool interp_backpermute(interp *I, ir_ref r);
bool interp_scatter(interp *I, ir_ref r);
bool interp_permute(interp *I, ir_ref r);
bool interp_slice(interp *I, ir_ref r);
bool interp_reshape(interp *I, ir_ref r);
bool interp_transpose(interp *I, ir_ref r);
bool interp_reverse(interp *I, ir_ref r);
bool interp_replicate(interp *I, ir_ref r);
bool interp_stencil(interp *I, ir_ref r);
bool interp_rec(interp *I, ir_ref r);
/* Reads through a window / a rec's self reference: pushes the element at
 * the nidx offsets / logical indices idx for the leaves [off, off + n) (a
 * window, or fields of the rec's array). `at` is the INDEX node. */
bool interp_window_read(interp *I, ir_ref at, size_t off, size_t n, unsigned nidx,
                        const int64_t *idx);
bool interp_rec_read(interp *I, ir_ref at, size_t off, size_t n, unsigned nidx, const int64_t *idx);

#endif
