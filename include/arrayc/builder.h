/* arrayc/builder.h: the C embedding API.
 *
 * Programs are built as a graph of values: every constructor returns an
 * ac_value naming one node, and a value used twice is one node. When a
 * function is finished (ac_fn_finish), the graph is turned into IR and sharing
 * is recovered: a value used more than once is let-bound once, at the lowest
 * scope that holds all of its uses (Accelerate's sharing recovery, Nikola's
 * let-sharing). Calls to other functions of the module stay calls
 * (lambda-sharing): a function is compiled once, whatever calls it.
 *
 * Types are checked when the function is finished, not while building, so
 * constructors never fail: they take invalid values (id 0) and give invalid
 * values, and the builder remembers the first misuse; ac_fn_finish reports it.
 *
 * Lambdas: ac_lambda_begin returns parameter values, the body is built from
 * them, ac_lambda_end closes the lambda and returns it as a value that may be
 * passed to an array operation (map, fold, ...). Parameter types are inferred
 * from the operation the lambda is given to. A parameter used outside its
 * lambda is an error at ac_fn_finish. A lambda passed to several operations
 * is duplicated for each (the IR has no function values to let-bind).
 *
 * Thread safety: a builder and its module are used by one thread at a time.
 */
#ifndef ARRAYC_BUILDER_H
#define ARRAYC_BUILDER_H

#include "arrayc/core.h"
#include "arrayc/module.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Operation codes, one per row of arrayc/ops.def (AC_OP_ADD, AC_OP_MAP, ...). */
typedef enum ac_op {
#define AC_OP(id, spelling, syntax, nkids, typing, prec, fnargs, acc) AC_OP_##id,
#include "arrayc/ops.def"
#undef AC_OP
  AC_OP_COUNT_
} ac_op;

/* Interned types; equal types have equal ids. id 0 is "no type". */
typedef struct ac_type {
  uint32_t id;
} ac_type;

/* A node of the value graph of one builder; id 0 is "invalid". */
typedef struct ac_value {
  uint32_t id;
} ac_value;

/* A function declared in a builder. */
typedef struct ac_fn {
  uint32_t id;
} ac_fn;

/* Boundary conditions of stencil. */
typedef enum ac_boundary {
  AC_BOUNDARY_CLAMP = 0,  /* repeat the edge element */
  AC_BOUNDARY_MIRROR = 1, /* reflect without repeating the edge: -1 -> 1 */
  AC_BOUNDARY_WRAP = 2,   /* periodic */
  AC_BOUNDARY_CONST = 3   /* a given value outside the array */
} ac_boundary;

/* ---- types ---- */
AC_API ac_type ac_type_scalar(ac_context *ctx, ac_scalar s);
/* A tuple of n >= 0 fields (n == 1 gives the field type itself). */
AC_API ac_type ac_type_tuple(ac_context *ctx, size_t n, const ac_type *fields);
/* An array of the given rank >= 1. An array whose element is a tuple is the
 * tuple of arrays of its fields (structure of arrays): the two spellings are
 * one type. Returns id 0 if elem contains an array. */
AC_API ac_type ac_type_array(ac_context *ctx, ac_type elem, unsigned rank);
/* Writes the type as the language spells it; returns a string to free with
 * ac_string_destroy. */
AC_API char *ac_type_print(ac_context *ctx, ac_type t);

/* ---- builders and functions ---- */
typedef struct ac_builder ac_builder;

/* Creates a builder adding functions to m. Free with ac_builder_destroy (the
 * module keeps the functions finished with it). */
AC_API ac_builder *ac_builder_create(ac_module *m);
AC_API void ac_builder_destroy(ac_builder *b);

/* Sets the source position attached to the nodes built after this call
 * (0, 0 for none): diagnostics and runtime errors name it. */
AC_API void ac_builder_set_location(ac_builder *b, unsigned line, unsigned column);

/* Declares function `name` with parameters of the given types and names
 * (param_names may be NULL: p0, p1, ... are used) and result type. The
 * function can be called (ac_call) before it is finished. */
AC_API ac_fn ac_fn_declare(ac_builder *b, const char *name, size_t nparams,
                           const ac_type *param_types, const char *const *param_names,
                           ac_type result);
/* Declares function `name` like ac_fn_declare, but with its result type
 * inferred from the body when ac_fn_finish finishes it (`-> _`,
 * docs/language.md §3): the type the verifier synthesises for the body with
 * no expected type. Until then its result is unknown, so a function that
 * calls it (ac_call) or names it (ac_fn_ref) must be finished after it:
 * finishing such a function first fails (AC_ERR_TYPE) and leaves it
 * unfinished. */
AC_API ac_fn ac_fn_declare_inferred(ac_builder *b, const char *name, size_t nparams,
                                    const ac_type *param_types, const char *const *param_names);
AC_API ac_value ac_fn_param(ac_builder *b, ac_fn f, size_t i);
/* Declares an extern function (`extern fn`, docs/language.md §3.3): one the
 * host implements in C, with scalar parameters and a scalar result. It is
 * called with ac_call and named with ac_fn_ref like any function, has no
 * body (ac_fn_param and ac_fn_finish refuse it) and is bound to its C
 * function with ac_module_bind_extern, or found by name in the process when
 * a function that uses it is created (arrayc/runtime.h). param_names may be
 * NULL (p0, p1, ...). */
AC_API ac_fn ac_extern_declare(ac_builder *b, const char *name, size_t nparams,
                               const ac_type *param_types, const char *const *param_names,
                               ac_type result);
/* Declares an extern kernel (`extern kernel`, docs/language.md §3.4): a
 * hand-written kernel, PTX for the GPU and a C host function for the
 * interpreter and the CPU, called with ac_call at the plan's level (never
 * in element code). Parameters are scalars or arrays of scalars; the result
 * an array of scalars or a tuple of them. Its parameter values
 * (ac_fn_param) are the variables of the size expressions that
 * ac_kernel_finish takes. param_names may be NULL (p0, p1, ...). */
AC_API ac_fn ac_kernel_declare(ac_builder *b, const char *name, size_t nparams,
                               const ac_type *param_types, const char *const *param_names,
                               ac_type result);
/* What ac_kernel_finish needs; set `size` to sizeof(ac_kernel_info) (fields
 * may be added at the end). Strings are copied. */
typedef struct ac_kernel_info {
  size_t size;
  /* the extents of each result array in order (rank values each): i64 size
   * expressions over the kernel's parameters (integer literals, the
   * parameters, AC_OP_LEN / AC_OP_SHAPE and projections, casts, negation,
   * + - * / % min max) */
  size_t nextents;
  const ac_value *extents;
  /* the GPU code: PTX text, or the path of a file holding it (read when a
   * function calling the kernel is compiled for the GPU; a relative path
   * from the current directory); both NULL: host code only */
  const char *ptx, *ptx_file;
  const char *entry;  /* the .entry to launch; NULL: the kernel's name */
  ac_value threads;   /* with PTX: the number of threads (an i64 size expression) */
  unsigned block;     /* with PTX: threads per block, 1..1024; 0: 256 */
  const char *host;   /* the host function's name; NULL: the kernel's name */
} ac_kernel_info;
/* Gives kernel k its result extents and launch rule and verifies it. Until
 * then it may be called (ac_call) but a function reaching it cannot be
 * created. */
AC_API ac_status ac_kernel_finish(ac_builder *b, ac_fn k, const ac_kernel_info *info,
                                  ac_error **err);
/* Makes `body` the function's result, converts the graph to IR with sharing
 * recovered and verifies the function. Functions may be finished in any
 * order; calls to a function not finished yet are checked when the module is
 * verified. */
AC_API ac_status ac_fn_finish(ac_builder *b, ac_fn f, ac_value body, ac_error **err);

/* Names a value; a shared value is let-bound under this name (otherwise an
 * automatic name is used). Returns v. */
AC_API ac_value ac_name(ac_builder *b, ac_value v, const char *name);

/* ---- scalars ---- */
AC_API ac_value ac_lit_bool(ac_builder *b, bool x);
AC_API ac_value ac_lit_int(ac_builder *b, ac_scalar type, int64_t x);   /* signed kinds */
AC_API ac_value ac_lit_uint(ac_builder *b, ac_scalar type, uint64_t x); /* unsigned kinds */
AC_API ac_value ac_lit_float(ac_builder *b, ac_scalar type, double x);  /* f32, f64, prob */

/* Any operation whose arguments are plain values, lambdas or function
 * references, in the order of the text syntax: ac_apply(b, AC_OP_ADD, 2, {x, y}),
 * ac_apply(b, AC_OP_MAP, 3, {lam, xs, ys}), ac_apply(b, AC_OP_FOLD, 3, {lam, z, a}).
 * Forms with attributes have their own constructors below. */
AC_API ac_value ac_apply(ac_builder *b, ac_op op, size_t n, const ac_value *args);
AC_API ac_value ac_unary(ac_builder *b, ac_op op, ac_value x);
AC_API ac_value ac_binary(ac_builder *b, ac_op op, ac_value x, ac_value y);

AC_API ac_value ac_tuple(ac_builder *b, size_t n, const ac_value *fields);
AC_API ac_value ac_proj(ac_builder *b, ac_value tuple, unsigned field);
AC_API ac_value ac_if(ac_builder *b, ac_value cond, ac_value then_v, ac_value else_v);
AC_API ac_value ac_cast(ac_builder *b, ac_scalar to, ac_value x);
AC_API ac_value ac_call(ac_builder *b, ac_fn f, size_t n, const ac_value *args);
/* A function used where a lambda is expected: map(f, xs). */
AC_API ac_value ac_fn_ref(ac_builder *b, ac_fn f);
/* a[i, j, ...]; also a stencil window w[-1, 0] (indices must be literals). */
AC_API ac_value ac_index(ac_builder *b, ac_value a, size_t n, const ac_value *idx);
/* Array literal of the given rank and extents; elems in row-major order. */
AC_API ac_value ac_array_lit(ac_builder *b, unsigned rank, const int64_t *extents,
                             size_t n, const ac_value *elems);

/* ---- lambdas ---- */
typedef struct ac_lambda {
  uint32_t id;
} ac_lambda;
/* Opens a lambda of n parameters; writes their values to params[0..n-1].
 * names may be NULL. */
AC_API ac_lambda ac_lambda_begin(ac_builder *b, size_t n, const char *const *names,
                                 ac_value *params);
AC_API ac_value ac_lambda_end(ac_builder *b, ac_lambda l, ac_value body);

/* loop (x1 = init1, ...) while cond(x..) { step(x..) }: cond and step are
 * lambdas of n parameters; step returns an n-tuple (or one value if n == 1). */
AC_API ac_value ac_loop(ac_builder *b, size_t n, const ac_value *inits, ac_value cond,
                        ac_value step);
/* stencil(f, boundary, a); `value` is the constant for AC_BOUNDARY_CONST and
 * ignored otherwise. */
AC_API ac_value ac_stencil(ac_builder *b, ac_value f, ac_boundary boundary, ac_value value,
                           ac_value a);

/* ---- recurrences ----
 * rec (i1 in lo1..=hi1, ..., in in lon..=hin) -> elem { body }
 * ac_rec_begin writes the array being defined to *self and the index values
 * to idx[0..ndims-1]; the body may index *self at affine offsets of the
 * indices. `names` (ndims + 1 entries: the array's name, then the indices)
 * may be NULL. A rec whose array is named is always let-bound under that
 * name (`let d = rec (...)`), even when used once. */
typedef struct ac_rec {
  uint32_t id;
} ac_rec;
AC_API ac_rec ac_rec_begin(ac_builder *b, size_t ndims, const ac_value *lo, const ac_value *hi,
                           ac_type elem, const char *const *names, ac_value *self, ac_value *idx);
/* Asks for the schedule a (ndims coefficients) of the open rec r, as
 * `by (a1, .., an)` does in the text (docs/language.md §7.14): verifying
 * the function then checks that it orders every read, and reports the
 * reads it does not, instead of searching for a schedule. Call it between
 * ac_rec_begin and ac_rec_end. */
AC_API void ac_rec_schedule(ac_builder *b, ac_rec r, const int64_t *a);
AC_API ac_value ac_rec_end(ac_builder *b, ac_rec r, ac_value body);

#ifdef __cplusplus
}
#endif
#endif
