/* lib/ir/check.h: the verifier's internal interface.
 *
 * The verifier is split by concern: check.c holds the driver (functions, the
 * call graph, the scope stack, errors) and the core forms (variables,
 * literals, let, if, tuples, calls, conversions, loops, indexing, array
 * literals); check_ops.c the operators and array operations; check_rec.c
 * recurrences (typing, dependency analysis, scheduling). They share the state
 * below and a handful of helpers.
 *
 * Typing is bidirectional (docs/language.md §5): chk_infer(c, r, expect)
 * computes the type of r, using `expect` where the form takes its type from
 * context (literals, flexible expressions, if, let, tuples, array literals)
 * and ignoring it elsewhere; chk_check compares the result with the expected
 * type. Every function returns IR_TY_NONE / false after recording the first
 * error in c; callers just propagate failure.
 */
#ifndef ARRAYC_LIB_CHECK_H
#define ARRAYC_LIB_CHECK_H

#include "ir.h"

/* Deepest expression the verifier walks (the parser stops at 2000; deeper
 * trees from the builder or passes are rejected instead of overflowing the
 * C stack). */
#define CHK_MAX_DEPTH 4000

/* Longest chain of nested calls a program may have (docs/language.md §3):
 * calls are inlined or nest on the C stack and in the interpreter's
 * evaluation, so a chain is bounded where it is cheap to find, before any
 * of that work. */
#define CHK_MAX_CALL_DEPTH 1000

/* What a scope entry is: the rec's own array may only be indexed. */
enum { ENV_PLAIN = 0, ENV_SELF = 1 };

typedef struct chk_entry {
  ir_type type;
  ir_sym name;
  uint8_t kind;
  uint32_t flex; /* 1 + index in chk.flex of the binding, 0 for none */
  uint32_t maprank; /* a map lambda's parameter: the rank of its arrays (for hints) */
} chk_entry;

/* A variable bound by `let` or `loop` to a flexible expression (a literal
 * without suffix, arithmetic on such literals and on other such variables):
 * its type is not fixed by the default but inferred from its uses
 * (docs/language.md §5.6). A function is checked in passes: a pass gives each
 * flexible binding its type so far (the default, or what an earlier pass
 * inferred) and records the type a use needs (a call's parameter, the other
 * operand of an operator, ...); if some binding needs another type, the
 * function is checked again with it, until nothing changes. */
typedef struct chk_flex {
  ir_ref binder;  /* the LET, LETTUP or LOOP node */
  uint32_t slot;  /* which of its names */
  ir_ref value;   /* the expression bound (its literal, for messages) */
  uint8_t lits;   /* FLEX_INT / FLEX_FLOAT of the value, this pass */
  bool flexible;  /* the value was flexible this pass (and no type inferred) */
  ir_type over;   /* the type inferred by an earlier pass, or IR_TY_NONE */
  ir_loc overloc; /* the use that gave it */
  bool pending;   /* the value failed with its default type this pass */
  ir_type cur;    /* the type it has this pass */
  ir_type want;   /* the type a use needs, this pass */
  ir_loc wantloc;
} chk_flex;

typedef struct chk_edge {
  uint32_t from, to; /* caller and callee function indices */
  ir_loc loc;        /* the CALL or FNREF node */
} chk_edge;

typedef struct chk {
  ac_module *m;
  ac_context *ctx;
  ac_status st;   /* AC_OK until the first error */
  ac_error *err;  /* the first error */
  chk_entry *env; /* scope stack; the last entry is de Bruijn index 0 */
  size_t nenv, capenv;
  chk_edge *edges; /* call graph, in source order */
  size_t nedges, capedges;
  uint32_t fn;     /* function being checked */
  uint32_t depth;  /* current expression depth */
  /* onpath[r] is 1 while node r is being checked (r < nonpath): a node met
   * again below itself makes the IR a cycle, reported at once instead of
   * recursing CHK_MAX_DEPTH deep (which a sanitizer's larger frames may not
   * survive). */
  unsigned char *onpath;
  size_t nonpath;
  chk_flex *flex; /* flexible bindings of the function being checked */
  size_t nflex, capflex;
  uint32_t *flexof; /* per node: 1 + index of its first binding, 0 for none */
  bool flexnew;     /* a use needed another type of some binding: check again */
  bool flexfail;    /* two uses need different types: final, no new pass */
  ac_error *pend;   /* the first pending binding's error, this pass */
  unsigned probing; /* inside a loop step's trial synthesis (infer_loop) */
  unsigned soft;    /* checking against a default type: uses need nothing */
  ir_buf names[4]; /* ring of buffers for type names in messages */
  unsigned nextname;
  ir_type t_bool, t_i32, t_i64, t_f64, t_prob;
  bool inferred; /* some function's result was inferred (`-> _`) */
} chk;

/* ---- errors ---- */
/* Records an AC_ERR_TYPE error at loc (the first one wins); returns false. */
bool chk_fail_at(chk *c, ir_loc loc, const char *fmt, ...) IR_PRINTF(3, 4);
/* Same, at the location of node r. */
bool chk_fail(chk *c, ir_ref r, const char *fmt, ...) IR_PRINTF(3, 4);
/* The array type of rank `rank` with elements `elem`, made by node r; an
 * element type containing () is a type error at r (check_ops.c). */
ir_type chk_array_of(chk *c, ir_ref r, ir_type elem, uint32_t rank);
/* Records AC_ERR_NOMEM; returns false. */
bool chk_oom(chk *c);
/* The spelling of t for a message; valid until four more names are made. */
const char *chk_tyname(chk *c, ir_type t);

/* ---- scopes ---- */
bool chk_push(chk *c, ir_type t, ir_sym name, uint8_t kind);
/* Same, for a binding with an entry in c->flex (flex = 1 + its index). */
bool chk_push_flex(chk *c, ir_type t, ir_sym name, uint32_t flex);
void chk_pop(chk *c, size_t n);
/* Name hint j of node r's binder names, IR_SYM_NONE if absent or invalid. */
ir_sym chk_node_name(const chk *c, ir_ref r, uint32_t j);

/* ---- typing ---- */
/* Checks r's operation, fixed child count and child references. */
bool chk_well_formed(chk *c, ir_ref r);
ir_type chk_infer(chk *c, ir_ref r, ir_type expect);
static inline ir_type chk_synth(chk *c, ir_ref r) {
  return chk_infer(c, r, IR_TY_NONE);
}
bool chk_check(chk *c, ir_ref r, ir_type expect);
/* Operands that must share one type (docs/language.md §5.2): with `expect`
 * each is checked against it; otherwise the first non-flexible one is
 * synthesised and the others checked against its type. */
ir_type chk_share(chk *c, uint32_t n, const ir_ref *rs, ir_type expect);
/* Gives the literals of flexible expression r their types for good
 * (IR_F_SUFFIX, without IR_F_CTX): a type that came from further away than
 * the literal's own context survives passes that move the context. */
void chk_fix_lits(chk *c, ir_ref r, unsigned depth);
/* Flexible expressions (literals without suffix and arithmetic on them). */
bool chk_flexible(const chk *c, ir_ref r);
/* Bits FLEX_INT / FLEX_FLOAT: the kinds of literal in a flexible r. */
enum { FLEX_INT = 1, FLEX_FLOAT = 2 };
unsigned chk_flex_lits(const chk *c, ir_ref r);
/* True for a literal whose type is fixed: a suffix, the builder, or bool. */
bool chk_typed_lit(const chk *c, ir_ref r);
/* An index, extent, bound or count: a flexible integer expression is checked
 * against i64, anything else synthesised and required to be an integer.
 * what/whats name the position in the message ("index", "indices"). */
ir_type chk_index_pos(chk *c, ir_ref r, const char *what, const char *whats);
/* An index tuple: an integer for rank 1, an r-tuple of integers otherwise
 * (a tuple expression's fields are index positions). */
ir_type chk_index_tuple(chk *c, ir_ref r, uint32_t rank, const char *what);
/* A shape: an integer (rank 1) or a tuple of integers; gives the rank. */
bool chk_shape(chk *c, ir_ref r, uint32_t *rank);
/* True if t is the scalar prob (docs/language.md §6.7). */
static inline bool chk_is_prob(const chk *c, ir_type t) {
  return t != IR_TY_NONE && t == c->t_prob;
}
/* True if t is a value type: no function or window anywhere in it. */
bool chk_is_value_type(const chk *c, ir_type t);
/* Records a call-graph edge from the current function. */
bool chk_edge_add(chk *c, uint32_t callee, ir_loc loc);
/* Function fi's result type, for a call or reference `use`; fails (and gives
 * IR_TY_NONE) if it is inferred and not known yet. */
ir_type chk_func_result(chk *c, uint32_t fi, ir_ref use);

/* ---- lambdas (check_ops.c) ---- */
/* How a lambda's body is typed: checked against `ret`, required to be bool,
 * an index tuple of `rank` integers, or an element (scalar or tuple). */
enum { LAM_CHECK, LAM_BOOL, LAM_INDEX, LAM_ELEMENT };
typedef struct chk_lam {
  const char *op;   /* operation name for messages: "map" */
  const char *noun; /* what the operation passes, singular: "array", "index" */
  uint32_t n;       /* number of parameters passed */
  const ir_type *params;
  int mode;         /* LAM_*: how the body is typed */
  ir_type ret;      /* LAM_CHECK: the expected result; LAM_ELEMENT: the element type
                     * the context expects (a flexible body is checked against it) */
  uint32_t rank;    /* LAM_INDEX: rank of the index tuple; map: of its arrays */
  const char *what; /* LAM_BOOL / LAM_ELEMENT: subject of the message */
  const uint32_t *flex; /* per parameter, its chk_entry.flex (loop variables) */
  bool soft;            /* LAM_CHECK: ret is the loop variables' types so far (chk.soft) */
} chk_lam;
/* Types kid `kid` of `owner` as a lambda (LAM or FNREF) called with the
 * given parameter types; returns the result type. */
ir_type chk_lambda(chk *c, ir_ref owner, uint32_t kid, const chk_lam *l);

/* ---- per-concern entry points ---- */
/* check_ops.c: every operator and array operation. */
ir_type chk_op(chk *c, ir_ref r, ir_type expect);
/* check_rec.c: a REC node, its dependencies and schedule. */
ir_type chk_rec(chk *c, ir_ref r);
/* check_calls.c: the order in which ir_check_module checks the functions
 * (file order, with a function whose result is inferred before those that
 * use it), m->nfuncs entries to free with ac_free; NULL after an error
 * (a cycle through such a function) or when memory runs out. */
uint32_t *chk_order(chk *c);
/* check_calls.c: after every function is checked, a cycle in the recorded
 * calls or a chain of nested calls too long is an error. */
void chk_recursion(chk *c);
/* check_prob.c: after a module checked without error, prob becomes f64
 * holding logarithms and its operations their log-space equivalents
 * (docs/language.md §6.7), in every function's types and reachable nodes.
 * Returns 0 if the module has no prob, 1 if it was rewritten (the caller
 * checks it again, which sets the literals' context flags for the new
 * types), -1 if memory ran out. */
int chk_erase_prob(ac_module *m);

#endif
