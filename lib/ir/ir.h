/* lib/ir/ir.h: the internal IR of arrayc.
 *
 * Layout (see docs/architecture.md):
 *   - ac_context owns the allocator hook, the interned strings (ir_sym) and
 *     the interned types (ir_type). Equal types have equal ids.
 *   - ac_module owns one function table and one node arena. Nodes are
 *     addressed by ir_ref (index into m->nodes; 0 is "no node"), children live
 *     in m->kids, binder name hints in m->syms, variable-length integer
 *     attributes in m->ints. Everything is freed with the module.
 *   - Variables are de Bruijn indices (VAR.attr). A binder of k variables
 *     makes the LAST of them index 0: in `|a, b| e`, b is 0 and a is 1; in a
 *     function f(p0, p1, p2) the body sees p2 as 0 and p0 as 2.
 *   - Names are printing hints only.
 *
 * Which children bind variables (scope of each child):
 *   LET     k0 plain; k1 binds 1 (names[0])
 *   LETTUP  k0 plain; k1 binds attr (names[0..attr-1], names[attr-1] is index 0)
 *   LAM     k0 binds attr parameters
 *   LOOP    kids init_1..init_k plain, then LAM(k) cond, LAM(k) step
 *   REC     lo_1,hi_1..lo_n,hi_n plain; body binds n+1: self (names[0]), then
 *           i_1..i_n (names[1..n]); so i_n is 0 and self is n
 *   everything else binds nothing (lambdas appear as LAM/FNREF children)
 */
#ifndef ARRAYC_LIB_IR_H
#define ARRAYC_LIB_IR_H

#include "arrayc/arrayc.h"

#include <stdarg.h>

#if defined(__GNUC__)
#define IR_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define IR_PRINTF(f, a)
#endif

typedef uint32_t ir_ref;  /* node index; 0 = none */
typedef uint32_t ir_type; /* interned type id; 0 = none/unknown */
typedef uint32_t ir_sym;  /* interned string id; 0 = none */

#define IR_NONE 0u
#define IR_TY_NONE 0u
#define IR_SYM_NONE 0u

/* ---- operations (from the one table) ---- */
typedef enum ir_op {
#define AC_OP(id, spelling, syntax, nkids, typing, prec, fnargs, acc) IR_##id,
#include "arrayc/ops.def"
#undef AC_OP
  IR_NUM_OPS
} ir_op;

typedef enum ir_syntax { SX_NONE, SX_PREFIX, SX_INFIX, SX_CALL, SX_SPECIAL } ir_syntax;
typedef enum ir_typing {
  TC_ARITH, TC_INT, TC_SHIFT, TC_CMP, TC_ORD, TC_LOGIC, TC_NEG, TC_NOT, TC_BNOT,
  TC_NUM1, TC_NUM2, TC_FLT1, TC_FLT2, TC_FLT3, TC_FPRED, TC_SPECIAL
} ir_typing;

typedef struct ir_opinfo {
  const char *name;     /* "ADD" */
  const char *spelling; /* "+" or "map" or "" */
  ir_syntax syntax;
  int nkids; /* -1 = variable */
  ir_typing typing;
  int prec;
  unsigned fnargs; /* bit k: argument k (text order) is a function */
  bool acc;        /* feeds its function's results back into its parameters */
} ir_opinfo;

extern const ir_opinfo ir_ops[IR_NUM_OPS];

/* A scalar operator or math builtin (typed by its TYPING class, never
 * failing): the rows of ops.def whose typing is not TC_SPECIAL. Later rows
 * are appended after the array operations, so ranges of ids do not say it. */
static inline bool ir_op_is_scalar(uint32_t op) {
  return op < IR_NUM_OPS && ir_ops[op].typing != TC_SPECIAL;
}

/* Looks up a builtin by its call spelling ("map", "sqrt"); returns IR_NUM_OPS
 * if there is none. */
ir_op ir_op_by_call_name(const char *name, size_t len);

/* ---- locations and diagnostics ---- */
typedef struct ir_loc {
  uint32_t line, col; /* 1-based; 0 = unknown */
} ir_loc;

/* ---- types ---- */
typedef enum ir_tykind {
  TK_SCALAR, /* scalar: sc */
  TK_TUPLE,  /* fields: n, fields (n == 0 is unit) */
  TK_ARRAY,  /* sc element type, rank >= 1 (elements are always scalars) */
  TK_WINDOW, /* stencil window: elem (any element type), rank */
  TK_FN      /* lambda / function: fields[0..n-1] params, ret */
} ir_tykind;

typedef struct ir_typeinfo {
  ir_tykind kind;
  ac_scalar sc;    /* TK_SCALAR, TK_ARRAY */
  uint32_t rank;   /* TK_ARRAY, TK_WINDOW */
  uint32_t n;      /* TK_TUPLE, TK_FN: number of fields / params */
  const ir_type *fields; /* borrowed, n entries */
  ir_type elem;    /* TK_WINDOW element type */
  ir_type ret;     /* TK_FN result */
} ir_typeinfo;

ir_type ir_ty_scalar(ac_context *ctx, ac_scalar s);
ir_type ir_ty_tuple(ac_context *ctx, uint32_t n, const ir_type *fields); /* n==1 -> fields[0] */
/* Array with normalisation: elem tuple -> tuple of arrays; elem containing an
 * array or a window or a function -> IR_TY_NONE. */
ir_type ir_ty_array(ac_context *ctx, ir_type elem, uint32_t rank);
ir_type ir_ty_window(ac_context *ctx, ir_type elem, uint32_t rank);
ir_type ir_ty_fn(ac_context *ctx, uint32_t n, const ir_type *params, ir_type ret);
ir_type ir_ty_unit(ac_context *ctx);
/* Borrowed view of a type; valid until the next type is interned in ctx. */
ir_typeinfo ir_ty_info(const ac_context *ctx, ir_type t);
bool ir_ty_is_scalar(const ac_context *ctx, ir_type t, ac_scalar *sc);
bool ir_ty_is_int(const ac_context *ctx, ir_type t);   /* any integer scalar */
bool ir_ty_is_float(const ac_context *ctx, ir_type t); /* f32, f64 */
bool ir_ty_is_numeric(const ac_context *ctx, ir_type t); /* int or float (not bool, not prob) */
/* t mentions prob anywhere (docs/language.md §6.7; the verifier removes it). */
bool ir_ty_has_prob(const ac_context *ctx, ir_type t);
/* Array view: t is TK_ARRAY, or a tuple whose fields are all array views of
 * the same rank (structure of arrays). Gives the element type (a scalar or a
 * tuple of element types) and the rank. */
bool ir_ty_array_view(ac_context *ctx, ir_type t, ir_type *elem, uint32_t *rank);
/* True if t contains no array, window or function: a valid element type. */
bool ir_ty_is_element(const ac_context *ctx, ir_type t);
/* t is an array of scalars, or (scalar_ok) a scalar: what an extern
 * kernel's parameters (scalar_ok) and result arrays may be (§3.4). */
bool ir_ty_is_kernel_value(ac_context *ctx, ir_type t, bool scalar_ok);
/* Number of scalar/array leaves when flattened (unit has 0). */
uint32_t ir_ty_num_leaves(const ac_context *ctx, ir_type t);
/* Appends the spelling of t ("(f32[], i32)", "bool", "f64[,]") to buf. */
struct ir_buf;
void ir_ty_print(const ac_context *ctx, ir_type t, struct ir_buf *out);

/* ---- strings ---- */
ir_sym ir_sym_intern(ac_context *ctx, const char *s, size_t len);
const char *ir_sym_str(const ac_context *ctx, ir_sym s); /* "" for IR_SYM_NONE */

/* ---- growable byte buffer (printing, diagnostics) ---- */
typedef struct ir_buf {
  ac_context *ctx;
  char *data; /* always NUL-terminated when len > 0 or after ir_buf_cstr */
  size_t len, cap;
  bool oom;
} ir_buf;
void ir_buf_init(ir_buf *b, ac_context *ctx);
void ir_buf_free(ir_buf *b);
void ir_buf_putc(ir_buf *b, char c);
void ir_buf_puts(ir_buf *b, const char *s);
void ir_buf_putn(ir_buf *b, const char *s, size_t n);
void ir_buf_printf(ir_buf *b, const char *fmt, ...) IR_PRINTF(2, 3);
/* Returns the accumulated string (owned by the buffer; "" if empty). */
const char *ir_buf_cstr(ir_buf *b);
/* Transfers the string to the caller (free with ac_string_destroy); resets b. */
char *ir_buf_take(ir_buf *b);
/* Appends a rec schedule as written after `by`: "(a1, .., an)" (print.c). */
void ir_sched_print(ir_buf *b, uint32_t n, const int64_t *a);

/* ---- memory ---- */
void *ac_alloc(ac_context *ctx, size_t n);           /* NULL on failure */
void *ac_realloc(ac_context *ctx, void *p, size_t n); /* NULL on failure, p kept */
void ac_free(ac_context *ctx, void *p);
char *ac_strdup(ac_context *ctx, const char *s);
char *ac_strndup(ac_context *ctx, const char *s, size_t n);
/* Grows *vec (element size `size`) so that index `need-1` fits. */
bool ac_grow(ac_context *ctx, void **vec, size_t *cap, size_t need, size_t size);

/* ---- the runtime API's state in the context ----
 * The context owns the default runtimes that ac_function_create uses
 * (lib/api/runtime.c). lib/ir knows nothing about them: it keeps one
 * pointer and hands it to `cleanup` first thing in ac_context_destroy. */
/* ---- large blocks (blockcache.c) ----
 * Array buffers of at least IR_BLOCK_MIN_BYTES are cached per context when
 * freed and reused, so that compiled code does not pay the operating
 * system's page faults for every fresh result. ir_block_free must be given
 * the size the block was requested with (or a smaller one). */
#define IR_BLOCK_MIN_BYTES ((size_t)1 << 20)
typedef struct ir_block_cache ir_block_cache;
ir_block_cache *ir_block_cache_create(ac_context *ctx);
void ir_block_cache_destroy(ac_context *ctx, ir_block_cache *c);
ir_block_cache *ir_ctx_block_cache(const ac_context *ctx);
void *ir_block_alloc(ac_context *ctx, size_t bytes);
void ir_block_free(ac_context *ctx, void *p, size_t bytes);

void *ir_ctx_runtimes(const ac_context *ctx);
/* Hands a warning to the context's handler, once per position (core.h's
 * ac_context_set_warning_handler); nothing without a handler. */
void ir_ctx_warn(ac_context *ctx, const char *file, unsigned line, unsigned col, const char *msg);
bool ir_ctx_warns(const ac_context *ctx);
void ir_ctx_set_runtimes(ac_context *ctx, void *p, void (*cleanup)(ac_context *ctx, void *p));

/* ---- nodes ---- */

/* Node flags. */
enum {
  IR_F_SUFFIX = 1u << 0, /* LIT: written with an explicit type suffix (or built by the API) */
  IR_F_CTX = 1u << 1,    /* LIT: type came from context; printer omits the suffix */
  IR_F_NEG = 1u << 2,    /* LIT before checking: integer literal is negative (lit.u = magnitude) */
  IR_F_FLOATLIT = 1u << 3, /* LIT: written as a float literal (has '.' or exponent) */
  IR_F_INFNAN = 1u << 4,   /* LIT: written as inf / nan */
  IR_F_SCHED = 1u << 5,    /* REC: the schedule in aux was asked for (`by`), not searched for */
  IR_F_LOWEST = 1u << 6,   /* LIT before checking: the lowest value of its type (maximum) */
  IR_F_HIGHEST = 1u << 7,  /* LIT before checking: the highest value of its type (minimum) */
  IR_F_TYPED = 1u << 8     /* LET, LETTUP: written with a type (`let x: T = e`), in m->ints[aux] */
};

/* Boundary kinds (STENCIL.attr): AC_BOUNDARY_* of builder.h. */

typedef union ir_litval {
  uint64_t u; /* integers: two's-complement bits, sign-extended to 64; bool 0/1 */
  int64_t i;
  double f; /* f32 values are stored rounded to float precision */
} ir_litval;

typedef struct ir_node {
  uint16_t op;    /* ir_op */
  uint16_t flags; /* IR_F_* */
  uint32_t nkids;
  uint32_t kids;  /* offset of the first child in m->kids */
  ir_type type;   /* set by the verifier for every node (parser/API set LIT with suffix, CAST, REC) */
  ir_loc loc;
  int64_t attr;   /* op-specific, see ops.def */
  uint32_t names; /* offset in m->syms of the binder name hints */
  uint32_t aux;   /* offset in m->ints: ARRLIT extents (attr of them), REC schedule (set by the verifier) */
  ir_litval lit;  /* LIT value; REC: bit k set = dimension k was written `lo..hi` (exclusive) */
} ir_node;

typedef struct ir_func {
  ir_sym name;
  ir_loc loc;
  uint32_t nparams;
  uint32_t params;   /* offset in m->ints of nparams param types (ir_type as int64) */
  uint32_t pnames;   /* offset in m->syms of nparams param names */
  ir_type result;
  ir_ref body;       /* IR_NONE until defined; always IR_NONE for an extern */
  /* The result was written `_` (docs/language.md §3): result is IR_TY_NONE
   * until ir_check_module infers it from the body, and an ordinary type
   * (checked against, like a written one) from then on. */
  bool infer_result;
  /* `extern fn` (docs/language.md §3.3): a host function with scalar
   * parameters and result and no body. extern_addr is the C function to call
   * (cast to its real signature, or called through libffi); NULL until bound
   * by ac_module_bind_extern or found by ir_resolve_externs. */
  bool is_extern;
  void (*extern_addr)(void);
  /* `extern kernel` (docs/language.md §3.4): is_extern and is_kernel. Its
   * parameters are scalars or arrays of scalars; its result an array of
   * scalars or a tuple of them, whose extents are expressions over the
   * parameters: kext is the offset in m->ints of nkext node refs, the rank
   * extents of each result leaf in leaf order. extern_addr is then the host
   * function (named khost, or the kernel's name when khost is
   * IR_SYM_NONE). kptx (IR_SYM_NONE: no GPU code) is the PTX text, or with
   * kptx_file the path of a file holding it (relative to the source file's
   * directory); kentry the .entry to launch (IR_SYM_NONE: the kernel's
   * name); kthreads the expression of the number of threads and kblock the
   * threads per block. */
  bool is_kernel;
  /* Has function parameters (docs/language.md §4.7): only while parsing;
   * ir_specialise copies it into each call and removes it. Its body binds
   * only the value parameters; a use of function parameter k is an FNREF
   * or CALL whose attr is -(k + 1). */
  bool is_template;
  bool kptx_file;
  uint32_t kext, nkext;
  ir_ref kthreads;
  uint32_t kblock;
  ir_sym kptx, kentry, khost;
} ir_func;


struct ac_module {
  ac_context *ctx;
  char *name;     /* file name for diagnostics ("<api>" for built modules) */
  char *src;      /* copy of the source text, or NULL */
  size_t srclen;
  ir_node *nodes; size_t nnodes, capnodes; /* nodes[0] is a dummy */
  ir_ref *kids;   size_t nkids, capkids;
  ir_sym *syms;   size_t nsyms, capsyms;
  int64_t *ints;  size_t nints, capints;
  ir_func *funcs; size_t nfuncs, capfuncs;
  bool oom;       /* an allocation failed; the module is unusable */
};

/* Extent j (in leaf order) of extern kernel f's result. */
static inline ir_ref ir_kernel_extent(const ac_module *m, const ir_func *f, uint32_t j) {
  return (ir_ref)m->ints[f->kext + j];
}

/* Creates a node; kids are copied. Returns IR_NONE (and sets m->oom) if
 * memory runs out. */
ir_ref ir_node_new(ac_module *m, ir_op op, ir_loc loc, uint32_t nkids, const ir_ref *kids);
static inline ir_node *ir_node_get(const ac_module *m, ir_ref r) { return &m->nodes[r]; }
static inline ir_ref ir_kid(const ac_module *m, ir_ref r, uint32_t i) {
  return m->kids[m->nodes[r].kids + i];
}
static inline void ir_set_kid(ac_module *m, ir_ref r, uint32_t i, ir_ref k) {
  m->kids[m->nodes[r].kids + i] = k;
}
/* Allocates binder name slots / integer slots; return offsets (0 on OOM with m->oom). */
uint32_t ir_syms_push(ac_module *m, uint32_t n, const ir_sym *syms);
uint32_t ir_ints_push(ac_module *m, uint32_t n, const int64_t *vals);
/* Number of variables bound around child i of node r (see table above). */
uint32_t ir_binders(const ac_module *m, ir_ref r, uint32_t i);
/* Name hint of the j-th binder (0-based in binding order) introduced around
 * child i of node r; IR_SYM_NONE if none. */
ir_sym ir_binder_name(const ac_module *m, ir_ref r, uint32_t i, uint32_t j);

/* A copy of m (same node refs, function indices, locations and source
 * text; the context, its types and names are shared): what the optimiser
 * transforms when the caller's module must stay as written. NULL on OOM. */
ac_module *ir_module_clone(const ac_module *m);

/* Convenience constructors. */
ir_ref ir_var(ac_module *m, ir_loc loc, uint32_t index);
ir_ref ir_lit_typed(ac_module *m, ir_loc loc, ir_type t, ir_litval v); /* sets IR_F_SUFFIX */

/* Adds a function (body IR_NONE). Returns its index, or -1 on OOM. */
int32_t ir_func_add(ac_module *m, ir_sym name, ir_loc loc, uint32_t nparams,
                    const ir_type *ptypes, const ir_sym *pnames, ir_type result);
int32_t ir_func_find(const ac_module *m, ir_sym name); /* -1 if absent */
static inline ir_type ir_func_param(const ac_module *m, const ir_func *f, uint32_t i) {
  return (ir_type)m->ints[f->params + i];
}

/* ---- de Bruijn operations (debruijn.c) ----
 * Both build new nodes; shared subtrees that need no change are reused. */
/* Adds d to every variable of e whose index is >= cutoff (free variables of
 * e relative to `cutoff` enclosing binders). d may be negative; a variable
 * that would become negative is an internal error (returns IR_NONE). */
ir_ref ir_shift(ac_module *m, ir_ref e, int32_t d, uint32_t cutoff);
/* The same shift applied to a fresh copy of every node of e (no subtree is
 * shared with e, so the copy may be typed differently). */
ir_ref ir_copy_shift(ac_module *m, ir_ref e, int32_t d, uint32_t cutoff);
/* Node r rebuilt with f applied to each child (given the number of
 * binders r puts around it): r itself when no child changed, unless
 * `fresh`, which always makes a new node (a leaf too). IR_NONE when f
 * fails (returns IR_NONE for a child) or memory runs out (m->oom). */
typedef ir_ref (*ir_kid_fn)(ac_module *m, ir_ref kid, uint32_t binders, void *ud);
ir_ref ir_map_kids(ac_module *m, ir_ref r, ir_kid_fn f, void *ud, bool fresh);
/* After parsing the functions from index `first` on: replaces every call of a
 * function with function parameters (is_template) by a copy of its body for
 * the functions given, then removes those functions (lib/ir/specialise.c).
 * A type error (AC_ERR_TYPE) is reported through *err. */
ac_status ir_specialise(ac_module *m, size_t first, ac_error **err);
/* The type written in a LET or LETTUP (`let x: T = e`), or IR_TY_NONE. */
static inline ir_type ir_let_type(const ac_module *m, const ir_node *n) {
  return (n->flags & IR_F_TYPED) && (size_t)n->aux < m->nints ? (ir_type)m->ints[n->aux]
                                                              : IR_TY_NONE;
}
/* e[j := s]: replaces variable j of e by s (shifted under binders) and
 * lowers the variables above j by one, i.e. the binder of j is removed.
 * This is beta-reduction of `let x = s; e` with j = 0. */
ir_ref ir_subst(ac_module *m, ir_ref e, uint32_t j, ir_ref s);
/* True if variable j (relative to e) occurs free in e. */
bool ir_occurs(const ac_module *m, ir_ref e, uint32_t j);
/* Structural equality of two subtrees (types ignored, locations ignored). */
bool ir_equal(const ac_module *m, ir_ref a, ir_ref b);

/* The reach of a stencil's window (docs/language.md §7.9), shared by the
 * stencil skeleton (which reads without boundary checks where the reach
 * cannot leave the array) and the smem-stencil pass (which sizes a tile's
 * halo by it). ir_window_reach visits every read w[o1, .., or] in `body`
 * (the stencil function's body: the window is its variable 0) and widens
 * below[d] / above[d] (>= 0; capped at IR_WINDOW_MAX_REACH, longer than
 * any array) to cover each offset; `offsets` is 0, 1, or 2 for "two or
 * more different offset vectors". False when the window is used other
 * than by such reads or an offset is not a literal (then every read must
 * handle the boundary), or rank exceeds IR_WINDOW_MAX_RANK (the text
 * format's limit). */
#define IR_WINDOW_MAX_RANK 64
#define IR_WINDOW_MAX_REACH ((int64_t)1 << 40)
typedef struct ir_window {
  uint32_t rank;
  int64_t below[IR_WINDOW_MAX_RANK], above[IR_WINDOW_MAX_RANK];
  uint32_t offsets;
  uint64_t reads;
  int64_t first[IR_WINDOW_MAX_RANK];
} ir_window;
bool ir_window_reach(const ac_module *m, ir_ref body, uint32_t rank, ir_window *w);

/* A backpermute(shape, |i1..iq| (i_p1, .., i_pr), src) whose index
 * function only picks its own parameters (Accelerate's replicate and
 * transposes: |i, j, l| (i, l)): component d of every source position is
 * parameter par[d] (0-based, par has room for r entries), so the source
 * position is in range for every element exactly when, with no extent of
 * `shape` zero, extent par[d] of `shape` is at most extent d of src for
 * every d. Such a backpermute's checks need not be made per element: the
 * delayed forms make them once, where the producer is evaluated
 * (lib/lower/delay.c, lib/codegen/seq_delay.c; docs/language.md §7.15).
 * r is src's rank; false for any other index function. */
bool ir_bp_projection(const ac_module *m, ir_ref bp, uint32_t r, uint32_t *par);
/* Whether bp is such a backpermute (its source's rank taken from its type):
 * then its elements cannot fail (fuse's and lowering's question). */
bool ir_bp_is_projection(const ac_module *m, ir_ref bp);

/* ---- errors (diag.c) ---- */
struct ac_error {
  ac_status status;
  char *message;
  char *file;
  unsigned line, col;
  char *text;
  ac_context *ctx;
};
/* Makes an error with position and, when m has source text, the source line
 * and caret. m may be NULL. Returns NULL only on OOM (callers then return
 * AC_ERR_NOMEM). */
ac_error *ir_error(ac_context *ctx, ac_status st, const ac_module *m, ir_loc loc,
                   const char *fmt, ...) IR_PRINTF(5, 6);
ac_error *ir_verror(ac_context *ctx, ac_status st, const ac_module *m, ir_loc loc,
                    const char *fmt, va_list ap);
/* Stores e into *err if err is not NULL, otherwise destroys it; returns st. */
ac_status ir_report(ac_error **err, ac_error *e, ac_status st);
/* For "did you mean": the one of names[0..n) closest to word[0..len) by
 * edit distance (the first of equals), when it is close enough to be what
 * was meant (at most a third of its letters wrong, one for words of up to
 * five), else NULL; NULL for words under three letters. */
const char *ir_closest(const char *word, size_t len, const char *const *names, size_t n);

/* ---- the front end, checker, printer, interpreter ---- */
/* parse.c: text -> unchecked IR (names resolved to indices; literal types
 * unknown unless suffixed). */
ac_status ir_parse(ac_module *m, const char *text, size_t len, ac_error **err);
/* check.c: scoping, types, literal typing from context, rec dependency
 * analysis and schedules; sets node->type everywhere. */
ac_status ir_check_module(ac_module *m, ac_error **err);
/* print.c: canonical text. */
ac_status ir_print_module(ac_module *m, ir_buf *out, ac_error **err);
/* The same text for functions fns[0..n) of m only, in that order (the
 * compile cache's key: a function and the functions it reaches). Local
 * names still avoid every function name of m, as in the whole module. */
ac_status ir_print_functions(ac_module *m, const uint32_t *fns, size_t n, ir_buf *out,
                             ac_error **err);
/* interp/: evaluate function `fn` on flattened args. */
ac_status interp_call(ac_module *m, uint32_t fn, const ac_datum *args, size_t nargs,
                      ac_datum *results, size_t nresults, ac_error **err);

/* lib/api/extern.c: makes every extern function reachable from function fn
 * callable: one not bound with ac_module_bind_extern is looked up with
 * dlsym(RTLD_DEFAULT, name) and the address stored in its ir_func. Fails with
 * AC_ERR_INVALID (at the extern's declaration) when a symbol is missing, or
 * when fn is itself an extern. ac_function_create calls it before checking
 * and compiling, so backends find extern_addr set. The host functions of
 * extern kernels (looked up by their `host` name) only when `kernels` is
 * true: the GPU launches their PTX instead. Modifies the module. */
ac_status ir_resolve_externs(ac_module *m, uint32_t fn, bool kernels, ac_error **err);

/* Walks a type's leaves in order (flattening of arguments/results): calls
 * fn(ud, sc, rank) for each scalar (rank 0) or array leaf. */
void ir_ty_leaves(ac_context *ctx, ir_type t,
                  void (*fn)(void *ud, ac_scalar sc, uint32_t rank), void *ud);

#endif
