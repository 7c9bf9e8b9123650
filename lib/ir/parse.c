/* lib/ir/parse.c: text -> unchecked IR (docs/language.md §1-4), including
 * `extern fn` declarations of host functions (§3.3), which become ir_funcs
 * without a body marked is_extern, and `extern kernel` declarations of
 * hand-written kernels (§3.4), marked is_kernel too, whose result extents
 * and launch rule are expressions over the parameters.
 *
 * A recursive-descent parser over the lexer of lex.h, one token of
 * lookahead plus one of peek. It resolves names while it parses: local names
 * become de Bruijn indices through a scope stack (with, per interned name,
 * the innermost binding, so that lookups and duplicate checks are O(1)), and
 * function names through a table filled by a first, cheap pass over the
 * tokens (`prescan`), so that a call may name a function defined later and
 * every error is still reported in source order.
 *
 * What it produces follows the conventions of ir.h: literals are typed only
 * when suffixed (IR_F_SUFFIX; IR_F_NEG / IR_F_FLOATLIT / IR_F_INFNAN mark the
 * others for the verifier), a '-' before a numeric literal is folded into
 * it, `let d = rec ...` names both the LET and the REC `d`, and every node
 * carries the location of its operator token (unary/binary operators) or of
 * its first token.
 *
 * Robustness: the parser stops at the first error (one diagnostic), never
 * recurses more than PARSE_MAX_NEST levels of syntax (each parenthesis,
 * bracket, block, prefix operator or type level is one), and refuses trees
 * deeper than PARSE_MAX_DEPTH, computed node by node, so that `1+1+...+1`
 * (parsed by a loop) cannot make later recursive passes overflow the stack.
 * Syntax errors are AC_ERR_SYNTAX, scoping errors AC_ERR_TYPE (core.h). On
 * failure the module keeps the functions parsed before the error; callers
 * discard it (ac_module_parse does).
 */
#include "lex.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

typedef struct scope_ent {
  ir_sym sym;
  int32_t prev; /* previous binding of sym (scope index + 1), 0 if none */
} scope_ent;

typedef struct open_br {
  lex_kind kind; /* TOK_LPAREN, TOK_LBRACK or TOK_LBRACE */
  ir_loc loc;
} open_br;

typedef struct pending_let {
  ir_loc loc;
  ir_ref rhs;
  uint32_t names, n; /* n names at offset `names` in m->syms */
  bool tup;          /* a LETTUP (`let (a, b) = ...`) rather than a LET */
  ir_type ann;       /* the type written after the pattern, or IR_TY_NONE */
} pending_let;

typedef struct name_loc {
  ir_sym sym;
  ir_loc loc;
} name_loc;

/* A local function (`let f = |x| e;`, docs/language.md §4.7): no binder in
 * the IR; each use gets a copy of the lambda (or the function reference)
 * moved from the scope depth where it was defined. */
typedef struct local_fn {
  ir_sym sym;
  ir_ref fn;    /* a LAM parsed at `depth`, or an FNREF */
  size_t depth; /* p->nscope where it was defined */
} local_fn;

/* Most nodes the uses of local functions may copy in one module: a local
 * function calling another twice, ten deep, would otherwise copy the
 * innermost one 1024 times. */
#define PARSE_MAX_EXPANSION (1u << 20)

typedef struct parser {
  ac_module *m;
  ac_context *ctx;
  lexer lx;
  lex_token tok, nxt; /* current token; next one when has_nxt */
  bool has_nxt;
  bool failed;
  ac_status status;
  ac_error *error;
  int nest;
  ir_op infix[TOK_NUM_KINDS], prefix[TOK_NUM_KINDS]; /* from ops.def spellings */
  scope_ent *scope;
  size_t nscope, capscope;
  int32_t *bind; /* sym -> scope index + 1 of its innermost binding */
  size_t capbind;
  int32_t *fnidx; /* sym -> function index + 1 */
  size_t capfnidx;
  uint16_t *depth; /* node -> depth of its tree */
  size_t capdepth;
  ir_ref *stk; /* operands being collected (arguments, elements, fields) */
  size_t nstk, capstk;
  ir_loc *locs; /* locations of the `if`s of an else-if chain */
  size_t nlocs, caplocs;
  pending_let *lets;
  size_t nlets, caplets;
  name_loc *names; /* names being collected (patterns, loop variables, params) */
  size_t nnames, capnames;
  ir_type *types; /* types being collected (tuple types, parameters) */
  size_t ntypes, captypes;
  open_br *br;
  size_t nbr, capbr;
  local_fn *lfns; /* local functions in scope, innermost last */
  size_t nlfns, caplfns;
  bool fn_types;    /* parsing a top-level function's parameter types */
  bool templates;   /* some function has function parameters (ir_specialise) */
  size_t nfuncs0;   /* functions in the module before this text */
  size_t expanded; /* nodes made by copying local functions */
} parser;

/* ---- errors ------------------------------------------------------------ */

static void fail_v(parser *p, ac_status st, ir_loc loc, const char *fmt, va_list ap) {
  if (p->failed)
    return;
  p->failed = true;
  p->error = ir_verror(p->ctx, st, p->m, loc, fmt, ap);
  p->status = p->error ? st : AC_ERR_NOMEM;
  p->tok.kind = TOK_ERROR; /* matches nothing: every loop ends */
}

static void syntax_error(parser *p, ir_loc loc, const char *fmt, ...) IR_PRINTF(3, 4);
static void syntax_error(parser *p, ir_loc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fail_v(p, AC_ERR_SYNTAX, loc, fmt, ap);
  va_end(ap);
}

static void scope_error(parser *p, ir_loc loc, const char *fmt, ...) IR_PRINTF(3, 4);
static void scope_error(parser *p, ir_loc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fail_v(p, AC_ERR_TYPE, loc, fmt, ap);
  va_end(ap);
}

static void fail_oom(parser *p) {
  if (p->failed)
    return;
  p->failed = true;
  p->status = AC_ERR_NOMEM;
  p->error = NULL;
  p->tok.kind = TOK_ERROR;
}

/* Grows a vector and zeroes the new part. */
static bool grow_zero(parser *p, void **vec, size_t *cap, size_t need, size_t size) {
  size_t old = *cap;
  if (!ac_grow(p->ctx, vec, cap, need, size)) {
    fail_oom(p);
    return false;
  }
  if (*cap > old)
    memset((char *)*vec + old * size, 0, (*cap - old) * size);
  return true;
}

/* Grows a vector for one more element. */
#define PUSH(p, vec, n, cap, val)                                                                  \
  (ac_grow((p)->ctx, (void **)&(vec), &(cap), (n) + 1, sizeof *(vec))                              \
       ? ((vec)[(n)++] = (val), true)                                                              \
       : (fail_oom(p), false))

/* ---- tokens -------------------------------------------------------------- */

static void lex_failed(parser *p) {
  if (p->lx.status == AC_ERR_NOMEM)
    fail_oom(p);
  else
    syntax_error(p, p->lx.err_loc, "%s", p->lx.err_msg);
}

static void advance(parser *p) {
  if (p->failed)
    return;
  if (p->has_nxt) {
    p->tok = p->nxt;
    p->has_nxt = false;
  } else {
    lex_next(&p->lx, &p->tok);
  }
  if (p->tok.kind == TOK_ERROR)
    lex_failed(p);
}

static lex_kind peek(parser *p) {
  if (!p->has_nxt) {
    lex_next(&p->lx, &p->nxt); /* a lexical error here is reported when reached */
    p->has_nxt = true;
  }
  return p->nxt.kind;
}

static const char *tok_text(const parser *p, const lex_token *t) {
  return p->lx.src + t->off;
}

/* Describes a token for "found ..." in messages. */
static const char *describe(const parser *p, const lex_token *t, char *buf, size_t cap) {
  int n = t->len > 32 ? 32 : (int)t->len;
  if (t->kind == TOK_IDENT)
    snprintf(buf, cap, "identifier '%.*s'", n, tok_text(p, t));
  else if (t->kind == TOK_INT || t->kind == TOK_FLOAT)
    snprintf(buf, cap, "number '%.*s'", n, tok_text(p, t));
  else if (lex_kind_spelling(t->kind))
    snprintf(buf, cap, "'%s'", lex_kind_spelling(t->kind));
  else
    snprintf(buf, cap, "%s", lex_kind_name(t->kind));
  return buf;
}

static bool is_closer(lex_kind k) {
  return k == TOK_RPAREN || k == TOK_RBRACK || k == TOK_RBRACE;
}

static lex_kind opener_of(lex_kind closer) {
  return closer == TOK_RPAREN ? TOK_LPAREN : closer == TOK_RBRACK ? TOK_LBRACK : TOK_LBRACE;
}

static bool is_open(const parser *p, lex_kind closer) {
  for (size_t i = p->nbr; i-- > 0;)
    if (p->br[i].kind == opener_of(closer))
      return true;
  return false;
}

/* "expected WHAT, found X"; a closing bracket that closes nothing is
 * reported as stray instead. */
static void expected(parser *p, const char *what) {
  if (p->failed)
    return;
  char buf[64];
  if (is_closer(p->tok.kind) && !is_open(p, p->tok.kind))
    syntax_error(p, p->tok.loc, "stray '%s'", lex_kind_spelling(p->tok.kind));
  else
    syntax_error(p, p->tok.loc, "expected %s, found %s", what,
                 describe(p, &p->tok, buf, sizeof buf));
}

static bool accept(parser *p, lex_kind k) {
  if (p->tok.kind != k)
    return false;
  advance(p);
  return true;
}

static bool expect(parser *p, lex_kind k, const char *what) {
  if (accept(p, k))
    return true;
  expected(p, what);
  return false;
}

/* Consumes an opening bracket and remembers it for messages. */
static bool open_bracket(parser *p) {
  open_br b = {p->tok.kind, p->tok.loc};
  if (!PUSH(p, p->br, p->nbr, p->capbr, b))
    return false;
  advance(p);
  return !p->failed;
}

/* Consumes the closing bracket of the innermost open one. At the end of the
 * input, or at another closer that some open bracket matches, the innermost
 * opener is the one left unclosed. */
static bool close_bracket(parser *p, lex_kind closer, const char *what) {
  if (p->failed)
    return false;
  open_br o = p->br[p->nbr - 1];
  if (p->tok.kind == closer) {
    p->nbr--;
    advance(p);
    return !p->failed;
  }
  if (p->tok.kind == TOK_EOF || (is_closer(p->tok.kind) && is_open(p, p->tok.kind)))
    syntax_error(p, o.loc, "unclosed '%s'", lex_kind_spelling(o.kind));
  else
    expected(p, what);
  return false;
}

/* ---- names and scopes ------------------------------------------------------ */

static ir_sym intern_tok(parser *p, const lex_token *t) {
  ir_sym s = ir_sym_intern(p->ctx, tok_text(p, t), t->len);
  if (!s)
    fail_oom(p);
  return s;
}

static bool ensure_sym(parser *p, ir_sym s) {
  return s < p->capbind ||
         grow_zero(p, (void **)&p->bind, &p->capbind, (size_t)s + 1, sizeof *p->bind);
}

/* Binds sym (IR_SYM_NONE binds an unnamed variable). A name already bound at
 * or after scope index `group` is a duplicate within one binding group. */
static bool bind_name(parser *p, ir_sym sym, ir_loc loc, size_t group, const char *what) {
  if (p->failed || !ensure_sym(p, sym))
    return false;
  scope_ent e = {sym, 0};
  if (sym != IR_SYM_NONE) {
    if (p->bind[sym] > 0 && (size_t)(p->bind[sym] - 1) >= group) {
      scope_error(p, loc, "duplicate %s '%s'", what, ir_sym_str(p->ctx, sym));
      return false;
    }
    e.prev = p->bind[sym];
  }
  if (p->nscope >= INT32_MAX - 1 || !PUSH(p, p->scope, p->nscope, p->capscope, e))
    return false;
  if (sym != IR_SYM_NONE)
    p->bind[sym] = (int32_t)p->nscope;
  return true;
}

static void unbind_to(parser *p, size_t n) {
  while (p->nscope > n) {
    scope_ent e = p->scope[--p->nscope];
    if (e.sym != IR_SYM_NONE)
      p->bind[e.sym] = e.prev;
  }
}

/* De Bruijn index of sym, or -1 if it is not bound. */
static int64_t lookup(const parser *p, ir_sym s) {
  if (s >= p->capbind || p->bind[s] == 0)
    return -1;
  return (int64_t)p->nscope - p->bind[s];
}

static int32_t find_fn(const parser *p, ir_sym s) {
  return s < p->capfnidx ? p->fnidx[s] - 1 : -1;
}

static bool is_scalar_name(const char *s, size_t n, ac_scalar *sc) {
  for (int i = 0; i <= (int)AC_PROB; i++) {
    const char *name = ac_scalar_name((ac_scalar)i);
    if (strlen(name) == n && memcmp(name, s, n) == 0) {
      if (sc)
        *sc = (ac_scalar)i;
      return true;
    }
  }
  return false;
}

/* ---- nodes ------------------------------------------------------------------- */

static unsigned depth_of(const parser *p, ir_ref r) {
  return r < p->capdepth ? p->depth[r] : 1;
}

/* Creates a node, tracking the depth of its tree. */
static ir_ref mk(parser *p, ir_op op, ir_loc loc, uint32_t n, const ir_ref *kids) {
  if (p->failed)
    return IR_NONE;
  unsigned d = 0;
  for (uint32_t i = 0; i < n; i++)
    if (depth_of(p, kids[i]) > d)
      d = depth_of(p, kids[i]);
  if (d + 1 > PARSE_MAX_DEPTH) {
    syntax_error(p, loc, "expression too deep (more than %d nested operations)", PARSE_MAX_DEPTH);
    return IR_NONE;
  }
  ir_ref r = ir_node_new(p->m, op, loc, n, kids);
  if (!r || !grow_zero(p, (void **)&p->depth, &p->capdepth, (size_t)r + 1, sizeof *p->depth)) {
    fail_oom(p);
    return IR_NONE;
  }
  p->depth[r] = (uint16_t)(d + 1);
  return r;
}

static ir_node *node(parser *p, ir_ref r) {
  return ir_node_get(p->m, r);
}

/* Makes a node from the operands p->stk[base..] and pops them. */
static ir_ref mk_from_stack(parser *p, ir_op op, ir_loc loc, size_t base) {
  size_t n = p->nstk - base;
  ir_ref r = n > UINT32_MAX ? IR_NONE : mk(p, op, loc, (uint32_t)n, p->stk + base);
  if (n > UINT32_MAX)
    fail_oom(p);
  p->nstk = base;
  return r;
}

static uint32_t push_names(parser *p, size_t first, size_t n) {
  ir_sym small[16] = {0};
  ir_sym *s = n <= 16 ? small : ac_alloc(p->ctx, n * sizeof *s);
  if (!s) {
    fail_oom(p);
    return 0;
  }
  for (size_t i = 0; i < n; i++)
    s[i] = p->names[first + i].sym;
  uint32_t off = ir_syms_push(p->m, (uint32_t)n, s);
  if (s != small)
    ac_free(p->ctx, s);
  if (p->m->oom)
    fail_oom(p);
  return off;
}

/* ---- nesting --------------------------------------------------------------------- */

/* Every call is matched by a `p->nest--` in the caller. */
static bool enter(parser *p) {
  if (++p->nest > PARSE_MAX_NEST && !p->failed) {
    syntax_error(p, p->tok.loc, "nesting too deep (more than %d levels)", PARSE_MAX_NEST);
  }
  return !p->failed;
}

/* ---- types ------------------------------------------------------------------------- */

static ir_type parse_type(parser *p);

/* `fn(T1, .., Tn) -> R`: the type of a function parameter (§4.7), allowed
 * only there. */
static ir_type parse_fn_type(parser *p) {
  ir_loc loc = p->tok.loc;
  if (!p->fn_types) {
    syntax_error(p, loc,
                 "a function type is only allowed as the type of a parameter of a top-level "
                 "function");
    return IR_TY_NONE;
  }
  advance(p); /* 'fn' */
  size_t base = p->ntypes;
  p->fn_types = false; /* fn(fn(..) -> ..) -> ..: not specialised */
  if (open_bracket(p)) {
    while (p->tok.kind != TOK_RPAREN && !p->failed) {
      ir_type f = parse_type(p);
      if (!f || !PUSH(p, p->types, p->ntypes, p->captypes, f) || !accept(p, TOK_COMMA))
        break;
    }
    if (close_bracket(p, TOK_RPAREN, "',' or ')' in a function type"))
      expect(p, TOK_ARROW, "'->' and the result type of a function type");
  }
  ir_type ret = p->failed ? IR_TY_NONE : parse_type(p);
  p->fn_types = true;
  ir_type t = ret ? ir_ty_fn(p->ctx, (uint32_t)(p->ntypes - base), p->types + base, ret)
                  : IR_TY_NONE;
  p->ntypes = base;
  if (ret && !t)
    fail_oom(p);
  return t;
}

static ir_type parse_type_inner(parser *p) {
  ir_loc start = p->tok.loc;
  ir_type t = IR_TY_NONE;
  ac_scalar sc;
  if (p->tok.kind == TOK_IDENT) {
    if (p->tok.len == 1 && tok_text(p, &p->tok)[0] == '_') {
      syntax_error(p, start, "`_` (an inferred type) is only allowed as a function's result type");
      return IR_TY_NONE;
    }
    if (!is_scalar_name(tok_text(p, &p->tok), p->tok.len, &sc)) {
      syntax_error(p, start, "unknown type '%.*s'", (int)p->tok.len, tok_text(p, &p->tok));
      return IR_TY_NONE;
    }
    advance(p);
    t = ir_ty_scalar(p->ctx, sc);
  } else if (p->tok.kind == TOK_FN) {
    return parse_fn_type(p);
  } else if (p->tok.kind == TOK_LPAREN) {
    if (!open_bracket(p))
      return IR_TY_NONE;
    size_t base = p->ntypes;
    while (p->tok.kind != TOK_RPAREN && !p->failed) {
      ir_type f = parse_type(p);
      if (!f || !PUSH(p, p->types, p->ntypes, p->captypes, f) || !accept(p, TOK_COMMA))
        break;
      /* `(T,)` is reported as a 1-tuple below; no other trailing comma */
      if (p->tok.kind == TOK_RPAREN && p->ntypes - base > 1)
        expected(p, "a type");
    }
    if (!close_bracket(p, TOK_RPAREN, "',' or ')' in a tuple type"))
      return IR_TY_NONE;
    size_t n = p->ntypes - base;
    if (n == 1) {
      syntax_error(p, start,
                   "1-element tuple types do not exist: write the field type "
                   "without parentheses");
      return IR_TY_NONE;
    }
    t = ir_ty_tuple(p->ctx, (uint32_t)n, p->types + base);
    p->ntypes = base;
  } else {
    expected(p, "a type");
    return IR_TY_NONE;
  }
  if (!t) {
    fail_oom(p);
    return IR_TY_NONE;
  }
  if (p->tok.kind != TOK_LBRACK)
    return t;
  ir_loc bloc = p->tok.loc;
  if (!open_bracket(p))
    return IR_TY_NONE;
  uint32_t rank = 1;
  while (accept(p, TOK_COMMA))
    if (++rank > PARSE_MAX_RANK) {
      syntax_error(p, bloc, "array rank above %d", PARSE_MAX_RANK);
      return IR_TY_NONE;
    }
  if (!close_bracket(p, TOK_RBRACK, "',' or ']' in an array type"))
    return IR_TY_NONE;
  if (p->tok.kind == TOK_LBRACK || !ir_ty_is_element(p->ctx, t)) {
    syntax_error(p, bloc,
                 "arrays of arrays do not exist: array elements are scalars or "
                 "tuples of scalars");
    return IR_TY_NONE;
  }
  ir_type a = ir_ty_array(p->ctx, t, rank);
  if (!a)
    syntax_error(p, bloc, "arrays of the unit type do not exist");
  return a;
}

static ir_type parse_type(parser *p) {
  ir_type t = enter(p) ? parse_type_inner(p) : IR_TY_NONE;
  p->nest--;
  return p->failed ? IR_TY_NONE : t;
}

/* The current token is `_`: an inferred type, which only a function's result
 * may be (docs/language.md §3). */
static bool is_infer_mark(const parser *p) {
  return p->tok.kind == TOK_IDENT && p->tok.len == 1 && tok_text(p, &p->tok)[0] == '_';
}

/* ---- literals ------------------------------------------------------------------------ */

static bool is_numeric_tok(lex_kind k) {
  return k == TOK_INT || k == TOK_FLOAT || k == TOK_INF || k == TOK_NAN;
}

static bool int_fits(ac_scalar sc, uint64_t mag, bool neg) {
  unsigned bits = 8 * (unsigned)ac_scalar_size(sc);
  if (sc >= AC_I8 && sc <= AC_I64) {
    uint64_t lim = (uint64_t)1 << (bits - 1);
    return neg ? mag <= lim : mag < lim;
  }
  uint64_t max = bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
  return neg ? mag == 0 : mag <= max;
}

/* The numeric literal at the current token, negated when a '-' at `loc`
 * was folded into it. */
static ir_ref parse_number(parser *p, bool neg, ir_loc loc) {
  lex_token t = p->tok;
  advance(p);
  ir_ref r = mk(p, IR_LIT, loc, 0, NULL);
  if (!r)
    return IR_NONE;
  ir_node *n = node(p, r);
  if (t.kind == TOK_INF || t.kind == TOK_NAN) {
    double v = t.kind == TOK_INF ? INFINITY : NAN;
    n->flags = IR_F_FLOATLIT | IR_F_INFNAN;
    n->lit.f = neg ? -v : v;
  } else if (t.kind == TOK_FLOAT) {
    n->flags = IR_F_FLOATLIT;
    n->lit.f = neg ? -t.f : t.f;
  } else if (t.suffix == LEX_NO_SUFFIX) {
    n->flags = neg ? IR_F_NEG : 0;
    n->lit.u = t.u;
  } else {
    if (!int_fits((ac_scalar)t.suffix, t.u, neg)) {
      syntax_error(p, loc, "integer literal %s%llu out of range for %s", neg ? "-" : "",
                   (unsigned long long)t.u, ac_scalar_name((ac_scalar)t.suffix));
      return IR_NONE;
    }
    n->lit.u = neg ? 0 - t.u : t.u; /* two's complement, sign-extended to 64 bits */
  }
  if (t.suffix != LEX_NO_SUFFIX) {
    n->flags |= IR_F_SUFFIX;
    n->type = ir_ty_scalar(p->ctx, (ac_scalar)t.suffix);
  }
  return r;
}

/* ---- expressions ----------------------------------------------------------------------- */

static ir_ref parse_expr(parser *p);
static ir_ref parse_unary(parser *p);
static ir_ref parse_block(parser *p);
static ir_ref parse_rec(parser *p, ir_sym selfname);

/* Functions of the library written with the operations (docs/language.md
 * §7.17); a function or variable of the program with the same name wins. */
enum { LIB_SUM, LIB_PRODUCT, LIB_MAXIMUM, LIB_MINIMUM, LIB_ZIP, LIB_UNZIP, LIB_NUM };
static const char *const lib_names[LIB_NUM] = {"sum",     "product", "maximum",
                                               "minimum", "zip",     "unzip"};

static int lib_of(const char *s, size_t len) {
  for (int i = 0; i < LIB_NUM; i++)
    if (strlen(lib_names[i]) == len && memcmp(lib_names[i], s, len) == 0)
      return i;
  return -1;
}

/* " (did you mean 'X'?)" for an unknown name s[0..len), X the closest of
 * the variables in scope and the functions (with `calls`, also the
 * builtin operations and conversions, which are called), or "". */
static const char *suggest(const parser *p, const char *s, size_t len, bool calls, char *buf,
                           size_t size) {
  size_t n = 0, cap = p->nscope + p->capfnidx + IR_NUM_OPS + AC_PROB + 1 + LIB_NUM;
  const char **names = ac_alloc(p->ctx, cap * sizeof *names);
  buf[0] = 0;
  if (!names)
    return buf;
  for (size_t i = 0; i < p->nscope; i++) {
    ir_sym v = p->scope[i].sym;
    if (v != IR_SYM_NONE && p->bind[v] == (int32_t)(i + 1))
      names[n++] = ir_sym_str(p->ctx, v);
  }
  for (size_t v = 0; v < p->capfnidx; v++)
    if (p->fnidx[v] > 0)
      names[n++] = ir_sym_str(p->ctx, (ir_sym)v);
  for (int o = 0; calls && o < IR_NUM_OPS; o++)
    if (ir_ops[o].syntax == SX_CALL && ir_ops[o].spelling[0])
      names[n++] = ir_ops[o].spelling;
  for (int i = 0; calls && i <= (int)AC_PROB; i++)
    names[n++] = ac_scalar_name((ac_scalar)i);
  for (int i = 0; calls && i < LIB_NUM; i++)
    names[n++] = lib_names[i];
  const char *near = ir_closest(s, len, names, n);
  if (near)
    snprintf(buf, size, " (did you mean '%s'?)", near);
  ac_free(p->ctx, names);
  return buf;
}

/* The local function named s if it is the innermost binding of s. */
static const local_fn *find_local(const parser *p, ir_sym s) {
  for (size_t i = p->nlfns; i-- > 0;)
    if (p->lfns[i].sym == s) {
      int32_t pos = s < p->capbind ? p->bind[s] : 0;
      return pos <= 0 || (size_t)pos <= p->lfns[i].depth ? &p->lfns[i] : NULL;
    }
  return NULL;
}

/* Counts nodes made by a copy since `before` nodes; false (an error at
 * loc) past PARSE_MAX_EXPANSION. */
static bool expansion_ok(parser *p, size_t before, ir_loc loc) {
  p->expanded += p->m->nnodes - before;
  if (p->m->oom)
    fail_oom(p);
  else if (p->expanded > PARSE_MAX_EXPANSION)
    syntax_error(p, loc,
                 "the uses of local functions copy more than %u operations; make the "
                 "largest ones top-level functions",
                 PARSE_MAX_EXPANSION);
  return !p->failed;
}

/* A copy of local function lf for a use at the current depth. */
static ir_ref local_copy(parser *p, const local_fn *lf, ir_loc loc) {
  if (p->failed)
    return IR_NONE;
  size_t before = p->m->nnodes;
  ir_ref r = ir_copy_shift(p->m, lf->fn, (int32_t)(p->nscope - lf->depth), 0);
  if (!r)
    fail_oom(p);
  return expansion_ok(p, before, loc) ? r : IR_NONE;
}

/* An operator or a scalar builtin named where a function is expected
 * (`fold(+, 0, xs)`, `map(sqrt, xs)`, `map(f32, xs)`): the lambda
 * `|a, b| a + b`, `|a| sqrt(a)`, `|a| f32(a)` (docs/language.md §4.7). `cast`
 * is the target type of a conversion, else IR_TY_NONE. */
static ir_ref op_lambda(parser *p, ir_op op, ir_type cast, uint32_t n, ir_loc loc) {
  static const char pn[3][2] = {"a", "b", "c"};
  ir_ref vars[3];
  ir_sym syms[3];
  if (n < 1 || n > 3)
    return IR_NONE;
  for (uint32_t i = 0; i < n && !p->failed; i++) {
    syms[i] = ir_sym_intern(p->ctx, pn[i], 1);
    vars[i] = mk(p, IR_VAR, loc, 0, NULL);
    if (!syms[i])
      fail_oom(p);
    else if (vars[i])
      node(p, vars[i])->attr = n - 1 - i;
  }
  ir_ref body = mk(p, cast ? IR_CAST : op, loc, n, vars);
  if (body && cast)
    node(p, body)->type = cast;
  ir_ref r = body ? mk(p, IR_LAM, loc, 1, &body) : IR_NONE;
  if (r) {
    node(p, r)->attr = n;
    node(p, r)->names = ir_syms_push(p->m, n, syms);
    if (p->m->oom)
      fail_oom(p);
  }
  return p->failed ? IR_NONE : r;
}

/* A builtin named as a function value: its lambda, or IR_NONE (no error)
 * if s[0..len) names none. */
static ir_ref builtin_value(parser *p, const char *s, size_t len, ir_loc loc, bool *found) {
  ac_scalar sc;
  *found = true;
  if (is_scalar_name(s, len, &sc))
    return op_lambda(p, IR_NUM_OPS, ir_ty_scalar(p->ctx, sc), 1, loc);
  ir_op op = ir_op_by_call_name(s, len);
  if (op != IR_NUM_OPS && ir_op_is_scalar(op) && ir_ops[op].nkids >= 1)
    return op_lambda(p, op, IR_TY_NONE, (uint32_t)ir_ops[op].nkids, loc);
  if (op != IR_NUM_OPS) {
    syntax_error(p, loc,
                 "'%.*s' is an array operation, not a function: pass a lambda that "
                 "applies it",
                 (int)len, s);
    return IR_NONE;
  }
  *found = false;
  return IR_NONE;
}

/* A bare name: a variable, or a function where a lambda may stand. */
static ir_ref parse_name(parser *p, bool arg) {
  lex_token t = p->tok;
  ir_sym s = intern_tok(p, &t);
  if (!s)
    return IR_NONE;
  advance(p);
  const local_fn *lf = find_local(p, s);
  if (lf && arg)
    return local_copy(p, lf, t.loc);
  if (lf) {
    scope_error(p, t.loc,
                "'%s' is a local function, not a value: call it, or pass it to an array "
                "operation",
                ir_sym_str(p->ctx, s));
    return IR_NONE;
  }
  int64_t idx = lookup(p, s);
  if (idx >= 0) {
    ir_ref r = mk(p, IR_VAR, t.loc, 0, NULL);
    if (r)
      node(p, r)->attr = idx;
    return r;
  }
  int32_t f = find_fn(p, s);
  if (f >= 0 && arg) {
    ir_ref r = mk(p, IR_FNREF, t.loc, 0, NULL);
    if (r)
      node(p, r)->attr = f;
    return r;
  }
  bool found = false;
  ir_ref b = f < 0 && arg ? builtin_value(p, tok_text(p, &t), t.len, t.loc, &found) : IR_NONE;
  if (found)
    return b;
  if (f >= 0)
    scope_error(p, t.loc,
                "'%s' is a function, not a value: call it, or pass it to an array "
                "operation",
                ir_sym_str(p->ctx, s));
  else {
    char hint[96];
    const char *name = ir_sym_str(p->ctx, s);
    scope_error(p, t.loc, "unknown name '%s'%s", name,
                suggest(p, name, strlen(name), arg, hint, sizeof hint));
  }
  return IR_NONE;
}

/* |x, y| e  (or || e): binds its parameters around e. */
static ir_ref parse_lambda(parser *p) {
  ir_loc loc = p->tok.loc;
  size_t nbase = p->nnames, sbase = p->nscope;
  if (!accept(p, TOK_OROR)) {
    advance(p); /* '|' */
    if (p->tok.kind != TOK_BAR) {
      do {
        if (p->tok.kind != TOK_IDENT) {
          expected(p, "a parameter name");
          break;
        }
        name_loc nl = {intern_tok(p, &p->tok), p->tok.loc};
        if (!nl.sym || !bind_name(p, nl.sym, nl.loc, sbase, "lambda parameter") ||
            !PUSH(p, p->names, p->nnames, p->capnames, nl))
          break;
        advance(p);
      } while (accept(p, TOK_COMMA));
    }
    expect(p, TOK_BAR, "',' or '|' after a lambda parameter");
  }
  ir_ref body = parse_expr(p);
  unbind_to(p, sbase);
  size_t n = p->nnames - nbase;
  ir_ref r = mk(p, IR_LAM, loc, 1, &body);
  if (r) {
    node(p, r)->attr = (int64_t)n;
    node(p, r)->names = push_names(p, nbase, n);
  }
  p->nnames = nbase;
  return p->failed ? IR_NONE : r;
}

/* Boundary keywords of stencil, as AC_BOUNDARY_* values. */
static int boundary_of(lex_kind k) {
  return k == TOK_CLAMP    ? AC_BOUNDARY_CLAMP
         : k == TOK_MIRROR ? AC_BOUNDARY_MIRROR
         : k == TOK_WRAP   ? AC_BOUNDARY_WRAP
                           : -1;
}

/* "(" args ")": pushes the arguments on the operand stack and returns how
 * many were written. For stencil, a boundary keyword as the second argument
 * is stored in *boundary instead of being pushed. */
static size_t parse_args(parser *p, bool lambdas, bool stencil, int *boundary) {
  size_t written = 0;
  if (!open_bracket(p))
    return 0;
  while (p->tok.kind != TOK_RPAREN && !p->failed) {
    ir_ref a = IR_NONE;
    lex_kind k = p->tok.kind;
    if (stencil && written == 1 && boundary_of(k) >= 0) {
      *boundary = boundary_of(k);
      advance(p);
    } else {
      bool alone = peek(p) == TOK_COMMA || peek(p) == TOK_RPAREN;
      ir_op op = p->infix[k] != IR_NUM_OPS ? p->infix[k] : p->prefix[k];
      if (lambdas && alone && op != IR_NUM_OPS) {
        /* an operator as a function: fold(+, 0, xs) */
        a = op_lambda(p, op, IR_TY_NONE, p->infix[k] != IR_NUM_OPS ? 2 : 1, p->tok.loc);
        advance(p);
      } else if (lambdas && (k == TOK_BAR || k == TOK_OROR))
        a = parse_lambda(p);
      else if (lambdas && k == TOK_IDENT && (peek(p) == TOK_COMMA || peek(p) == TOK_RPAREN))
        a = parse_name(p, true);
      else
        a = parse_expr(p);
      if (!a || !PUSH(p, p->stk, p->nstk, p->capstk, a))
        break;
    }
    written++;
    if (!accept(p, TOK_COMMA))
      break;
    if (p->tok.kind == TOK_RPAREN) {
      expected(p, "an argument");
      break;
    }
  }
  close_bracket(p, TOK_RPAREN, "',' or ')' after an argument");
  return written;
}

/* Checks the number of arguments of a builtin (ops.def NKIDS, or the
 * documented counts of the variadic rows). */
static bool check_arity(parser *p, ir_op op, size_t n, ir_loc loc) {
  const char *name = ir_ops[op].spelling;
  switch (op) {
  case IR_MAP:
    if (n >= 2)
      return true;
    syntax_error(p, loc, "'map' takes a function and at least one array, got %zu argument%s", n,
                 n == 1 ? "" : "s");
    return false;
  case IR_SLICE:
    if (n == 3 || n == 4)
      return true;
    syntax_error(p, loc, "'slice' takes 3 or 4 arguments, got %zu", n);
    return false;
  case IR_STENCIL:
    if (n == 3)
      return true;
    syntax_error(p, loc, "'stencil' takes 3 arguments (function, boundary, array), got %zu", n);
    return false;
  default:
    if (ir_ops[op].nkids < 0 || (size_t)ir_ops[op].nkids == n)
      return true;
    syntax_error(p, loc, "'%s' takes %d argument%s, got %zu", name, ir_ops[op].nkids,
                 ir_ops[op].nkids == 1 ? "" : "s", n);
    return false;
  }
}

/* f(args) of local function lf: `let (x, y) = (a, b); e` for
 * `let f = |x, y| e`, e moved to this depth (an FNREF's function is called). */
static ir_ref local_call(parser *p, const local_fn *lf, lex_token t, size_t base) {
  size_t n = parse_args(p, false, false, NULL);
  if (p->failed)
    return IR_NONE;
  const ir_node *fn = node(p, lf->fn);
  if (fn->op == IR_FNREF && fn->attr < 0 && (size_t)(-fn->attr - 1) < p->ntypes) {
    /* a function parameter, declared fn(T1, .., Tk) -> R */
    ir_typeinfo ti = ir_ty_info(p->ctx, p->types[-fn->attr - 1]);
    if (ti.kind == TK_FN && n != ti.n) {
      syntax_error(p, t.loc, "function parameter '%s' takes %u argument%s, %zu given",
                   ir_sym_str(p->ctx, lf->sym), ti.n, ti.n == 1 ? "" : "s", n);
      return IR_NONE;
    }
  }
  if (fn->op == IR_FNREF) {
    ir_ref r = mk_from_stack(p, IR_CALL, t.loc, base);
    if (r)
      node(p, r)->attr = node(p, lf->fn)->attr;
    return r;
  }
  uint32_t np = (uint32_t)fn->attr, names = fn->names;
  if (n != np) {
    syntax_error(p, t.loc, "local function '%s' takes %u argument%s, %zu given",
                 ir_sym_str(p->ctx, lf->sym), np, np == 1 ? "" : "s", n);
    return IR_NONE;
  }
  size_t before = p->m->nnodes;
  ir_ref body = ir_copy_shift(p->m, ir_kid(p->m, lf->fn, 0), (int32_t)(p->nscope - lf->depth), np);
  if (!body)
    fail_oom(p);
  if (!expansion_ok(p, before, t.loc))
    return IR_NONE;
  if (np == 0)
    return body;
  ir_ref v = np == 1 ? p->stk[base] : mk_from_stack(p, IR_TUPLE, t.loc, base);
  p->nstk = base;
  ir_ref kids[2] = {v, body};
  ir_ref r = v ? mk(p, np == 1 ? IR_LET : IR_LETTUP, t.loc, 2, kids) : IR_NONE;
  if (r) {
    node(p, r)->names = names;
    if (np > 1)
      node(p, r)->attr = np;
  }
  return r;
}

/* sum(a) is fold(+, 0, a); product(a) fold(*, 1, a); maximum(a) fold(max,
 * lowest, a) and minimum(a) fold(min, highest, a), the bound of the
 * element type (IR_F_LOWEST / IR_F_HIGHEST); zip(a, b, ..) is
 * map(|x, y, ..| (x, y, ..), a, b, ..) and unzip(a) map(|x| x, a): the
 * identity, an array of tuples being a tuple of arrays. */
static ir_ref lib_call(parser *p, int lib, lex_token t, size_t base) {
  size_t n = parse_args(p, false, false, NULL);
  if (p->failed)
    return IR_NONE;
  const char *name = lib_names[lib];
  if (lib == LIB_ZIP ? n < 2 : n != 1) {
    syntax_error(p, t.loc, lib == LIB_ZIP ? "'%s' takes at least 2 arrays, got %zu"
                                          : "'%s' takes 1 array, got %zu",
                 name, n);
    return IR_NONE;
  }
  ir_ref f = IR_NONE;
  if (lib == LIB_ZIP || lib == LIB_UNZIP) {
    size_t nb = p->nnames;
    for (size_t i = 0; i < n && !p->failed; i++) {
      char pn[24];
      snprintf(pn, sizeof pn, "x%zu", i);
      name_loc nl = {ir_sym_intern(p->ctx, pn, strlen(pn)), t.loc};
      if (!nl.sym)
        fail_oom(p);
      else
        PUSH(p, p->names, p->nnames, p->capnames, nl);
    }
    size_t vb = p->nstk;
    for (size_t i = 0; i < n && !p->failed; i++) {
      ir_ref v = mk(p, IR_VAR, t.loc, 0, NULL);
      if (v)
        node(p, v)->attr = (int64_t)(n - 1 - i);
      if (!v || !PUSH(p, p->stk, p->nstk, p->capstk, v))
        break;
    }
    ir_ref body = p->failed ? IR_NONE : n == 1 ? p->stk[vb] : mk_from_stack(p, IR_TUPLE, t.loc, vb);
    p->nstk = vb;
    f = body ? mk(p, IR_LAM, t.loc, 1, &body) : IR_NONE;
    if (f) {
      node(p, f)->attr = (int64_t)n;
      node(p, f)->names = push_names(p, nb, n);
    }
    p->nnames = nb;
  } else {
    static const lex_kind ops[4] = {TOK_PLUS, TOK_STAR, TOK_NUM_KINDS, TOK_NUM_KINDS};
    ir_op op = lib == LIB_MAXIMUM ? IR_MAX : lib == LIB_MINIMUM ? IR_MIN : p->infix[ops[lib]];
    f = op_lambda(p, op, IR_TY_NONE, 2, t.loc);
  }
  if (!f || !PUSH(p, p->stk, p->nstk, p->capstk, f))
    return IR_NONE;
  /* the function goes first: rotate it in front of the arrays */
  for (size_t i = p->nstk - 1; i > base; i--)
    p->stk[i] = p->stk[i - 1];
  p->stk[base] = f;
  if (lib == LIB_ZIP || lib == LIB_UNZIP)
    return mk_from_stack(p, IR_MAP, t.loc, base);
  ir_ref z = mk(p, IR_LIT, t.loc, 0, NULL);
  if (!z || !PUSH(p, p->stk, p->nstk, p->capstk, z))
    return IR_NONE;
  node(p, z)->flags = lib == LIB_MAXIMUM   ? IR_F_LOWEST
                      : lib == LIB_MINIMUM ? IR_F_HIGHEST
                                           : 0;
  node(p, z)->lit.u = lib == LIB_PRODUCT;
  /* fold(f, z, a): z between the function and the array */
  p->stk[p->nstk - 1] = p->stk[p->nstk - 2];
  p->stk[p->nstk - 2] = z;
  return mk_from_stack(p, IR_FOLD, t.loc, base);
}

/* NAME(args): a conversion, a builtin operation or a call. */
static ir_ref parse_call(parser *p) {
  lex_token t = p->tok;
  const char *s = tok_text(p, &t);
  size_t base = p->nstk;
  ac_scalar sc;
  advance(p);
  ir_sym lsym = t.kind == TOK_IDENT ? intern_tok(p, &t) : IR_SYM_NONE;
  const local_fn *lf = lsym ? find_local(p, lsym) : NULL;
  if (lf)
    return local_call(p, lf, t, base);
  if (t.kind == TOK_IDENT && is_scalar_name(s, t.len, &sc)) {
    size_t n = parse_args(p, false, false, NULL);
    if (!p->failed && n != 1)
      syntax_error(p, t.loc, "conversion to %s takes 1 argument, got %zu", ac_scalar_name(sc), n);
    ir_ref r = mk_from_stack(p, IR_CAST, t.loc, base);
    if (r)
      node(p, r)->type = ir_ty_scalar(p->ctx, sc);
    return r;
  }
  ir_op op = ir_op_by_call_name(s, t.len);
  if (op != IR_NUM_OPS) {
    int boundary = -1;
    size_t n = parse_args(p, true, op == IR_STENCIL, &boundary);
    if (p->failed || !check_arity(p, op, n, t.loc))
      return IR_NONE;
    if (op == IR_STENCIL && boundary < 0) {
      /* text order f, value, a; kid order f, a, value */
      ir_ref v = p->stk[base + 1];
      p->stk[base + 1] = p->stk[base + 2];
      p->stk[base + 2] = v;
      boundary = AC_BOUNDARY_CONST;
    }
    ir_ref r = mk_from_stack(p, op, t.loc, base);
    if (r && op == IR_STENCIL)
      node(p, r)->attr = boundary;
    return r;
  }
  ir_sym sym = intern_tok(p, &t);
  int32_t f = sym ? find_fn(p, sym) : -1;
  int lib = lib_of(s, t.len);
  if (f < 0 && lib >= 0 && !(sym && lookup(p, sym) >= 0))
    return lib_call(p, lib, t, base);
  if (f < 0) {
    if (sym && lookup(p, sym) >= 0)
      scope_error(p, t.loc, "'%.*s' is a variable, not a function", (int)t.len, s);
    else if (sym) {
      char hint[96];
      scope_error(p, t.loc, "unknown function '%.*s'%s", (int)t.len, s,
                  suggest(p, s, t.len, true, hint, sizeof hint));
    }
    return IR_NONE;
  }
  parse_args(p, true, false, NULL);
  ir_ref r = mk_from_stack(p, IR_CALL, t.loc, base);
  if (r)
    node(p, r)->attr = f;
  return r;
}

/* "(" ")" | "(" expr ")" | "(" expr "," ... ")". */
static ir_ref parse_paren(parser *p) {
  ir_loc loc = p->tok.loc;
  size_t base = p->nstk;
  if (!open_bracket(p))
    return IR_NONE;
  if (p->tok.kind == TOK_RPAREN) {
    close_bracket(p, TOK_RPAREN, "')'");
    return mk(p, IR_TUPLE, loc, 0, NULL);
  }
  ir_ref e = parse_expr(p);
  if (p->tok.kind != TOK_COMMA) {
    close_bracket(p, TOK_RPAREN, "',' or ')'");
    return p->failed ? IR_NONE : e;
  }
  if (!PUSH(p, p->stk, p->nstk, p->capstk, e))
    return IR_NONE;
  while (accept(p, TOK_COMMA) && p->tok.kind != TOK_RPAREN) {
    ir_ref f = parse_expr(p);
    if (!f || !PUSH(p, p->stk, p->nstk, p->capstk, f))
      break;
  }
  if (!close_bracket(p, TOK_RPAREN, "',' or ')' in a tuple"))
    return IR_NONE;
  if (p->nstk - base == 1) {
    syntax_error(p, loc,
                 "1-element tuples do not exist: write the expression without the "
                 "parentheses and comma");
    return IR_NONE;
  }
  return mk_from_stack(p, IR_TUPLE, loc, base);
}

/* "[" elements "]": rank 1, or rank r+1 when every element is itself a
 * written array literal of rank r with the same extents (rectangular). */
static ir_ref parse_arrlit(parser *p) {
  ir_loc loc = p->tok.loc;
  size_t base = p->nstk, nested = 0;
  ir_loc flat_loc = loc;
  if (!open_bracket(p))
    return IR_NONE;
  while (p->tok.kind != TOK_RBRACK && !p->failed) {
    lex_token start = p->tok;
    ir_ref e = parse_expr(p);
    if (!e || !PUSH(p, p->stk, p->nstk, p->capstk, e))
      break;
    ir_node *en = node(p, e);
    if (start.kind == TOK_LBRACK && en->op == IR_ARRLIT && en->loc.line == start.loc.line &&
        en->loc.col == start.loc.col)
      nested++;
    else if (p->nstk - base - 1 == nested)
      flat_loc = start.loc; /* the first element that is not a literal */
    if (!accept(p, TOK_COMMA))
      break;
  }
  if (!close_bracket(p, TOK_RBRACK, "',' or ']' in an array literal"))
    return IR_NONE;
  size_t n = p->nstk - base;
  int64_t ext[PARSE_MAX_RANK];
  uint32_t rank = 1;
  ext[0] = (int64_t)n;
  if (nested > 0 && nested < n) {
    syntax_error(p, flat_loc, "array literal mixes nested array literals and other elements");
    return IR_NONE;
  }
  if (nested > 0) {
    ir_node first = *node(p, p->stk[base]);
    rank = (uint32_t)first.attr + 1;
    if (rank > PARSE_MAX_RANK) {
      syntax_error(p, loc, "array rank above %d", PARSE_MAX_RANK);
      return IR_NONE;
    }
    memcpy(ext + 1, &p->m->ints[first.aux], (rank - 1) * sizeof *ext);
    size_t top = p->nstk;
    for (size_t i = base; i < top && !p->failed; i++) {
      ir_node sub = *node(p, p->stk[i]);
      if (sub.attr != first.attr ||
          memcmp(ext + 1, &p->m->ints[sub.aux], (rank - 1) * sizeof *ext) != 0) {
        syntax_error(p, sub.loc, "array literal is not rectangular");
        return IR_NONE;
      }
      for (uint32_t k = 0; k < sub.nkids; k++)
        PUSH(p, p->stk, p->nstk, p->capstk, p->m->kids[sub.kids + k]);
    }
    /* the flattened elements sit above the sub-literals; move them down */
    memmove(p->stk + base, p->stk + top, (p->nstk - top) * sizeof *p->stk);
    p->nstk -= top - base;
  }
  ir_ref r = mk_from_stack(p, IR_ARRLIT, loc, base);
  if (r) {
    uint32_t aux = ir_ints_push(p->m, rank, ext);
    if (p->m->oom) {
      fail_oom(p);
      return IR_NONE;
    }
    node(p, r)->attr = rank;
    node(p, r)->aux = aux;
  }
  return r;
}

static ir_ref parse_primary(parser *p) {
  lex_token t = p->tok;
  switch (t.kind) {
  case TOK_INT:
  case TOK_FLOAT:
  case TOK_INF:
  case TOK_NAN:
    return parse_number(p, false, t.loc);
  case TOK_TRUE:
  case TOK_FALSE: {
    advance(p);
    ir_ref r = mk(p, IR_LIT, t.loc, 0, NULL);
    if (r) {
      node(p, r)->flags = IR_F_SUFFIX;
      node(p, r)->type = ir_ty_scalar(p->ctx, AC_BOOL);
      node(p, r)->lit.u = t.kind == TOK_TRUE;
    }
    return r;
  }
  case TOK_IDENT:
    return peek(p) == TOK_LPAREN ? parse_call(p) : parse_name(p, false);
  case TOK_WHILE:
    if (peek(p) == TOK_LPAREN)
      return parse_call(p);
    break;
  case TOK_LPAREN:
    return parse_paren(p);
  case TOK_LBRACK:
    return parse_arrlit(p);
  case TOK_LBRACE:
    return parse_block(p);
  case TOK_BAR:
  case TOK_OROR:
    syntax_error(p, t.loc,
                 "a lambda is only allowed as the argument of an array operation or as a "
                 "local function (let f = |x| ...;)");
    return IR_NONE;
  case TOK_IF:
  case TOK_LOOP:
  case TOK_REC:
    syntax_error(p, t.loc, "'%s' cannot be an operand: put it in parentheses",
                 lex_kind_spelling(t.kind));
    return IR_NONE;
  case TOK_CLAMP:
  case TOK_MIRROR:
  case TOK_WRAP:
    syntax_error(p, t.loc, "'%s' is only allowed as the boundary argument of stencil",
                 lex_kind_spelling(t.kind));
    return IR_NONE;
  default:
    break;
  }
  expected(p, "an expression");
  return IR_NONE;
}

/* Postfix indexing and projection after `e`, which started at `start`. */
static ir_ref parse_postfix(parser *p, ir_ref e, ir_loc start) {
  while (e && !p->failed) {
    if (p->tok.kind == TOK_LBRACK) {
      size_t base = p->nstk;
      if (!PUSH(p, p->stk, p->nstk, p->capstk, e) || !open_bracket(p))
        return IR_NONE;
      do {
        ir_ref i = parse_expr(p);
        if (!i || !PUSH(p, p->stk, p->nstk, p->capstk, i))
          return IR_NONE;
      } while (accept(p, TOK_COMMA));
      if (!close_bracket(p, TOK_RBRACK, "',' or ']' after an index"))
        return IR_NONE;
      e = mk_from_stack(p, IR_INDEX, start, base);
    } else if (p->tok.kind == TOK_DOT) {
      advance(p);
      if (p->tok.kind != TOK_INT) {
        expected(p, "a field number after '.'");
        return IR_NONE;
      }
      if (p->tok.u > INT32_MAX) {
        syntax_error(p, p->tok.loc, "field number too large");
        return IR_NONE;
      }
      int64_t k = (int64_t)p->tok.u;
      advance(p);
      e = mk(p, IR_PROJ, start, 1, &e);
      if (e)
        node(p, e)->attr = k;
    } else {
      break;
    }
  }
  return p->failed ? IR_NONE : e;
}

static ir_ref parse_unary(parser *p) {
  lex_token t = p->tok;
  if (t.kind == TOK_MINUS && is_numeric_tok(peek(p))) {
    advance(p);
    return parse_postfix(p, parse_number(p, true, t.loc), t.loc);
  }
  ir_op op = p->prefix[t.kind];
  if (op == IR_NUM_OPS)
    return parse_postfix(p, parse_primary(p), t.loc);
  ir_ref e = IR_NONE;
  if (enter(p)) {
    advance(p);
    e = parse_unary(p);
  }
  p->nest--;
  return e ? mk(p, op, t.loc, 1, &e) : IR_NONE;
}

static bool is_comparison(ir_op op) {
  return ir_ops[op].typing == TC_CMP || ir_ops[op].typing == TC_ORD;
}

/* Precedence climbing: iterative along one precedence level, recursive only
 * across levels (at most 9 deep per level of syntax). */
static ir_ref parse_binary(parser *p, int minprec) {
  ir_ref lhs = parse_unary(p);
  bool chained = false;
  while (lhs && !p->failed) {
    ir_op op = p->infix[p->tok.kind];
    if (op == IR_NUM_OPS || ir_ops[op].prec < minprec)
      break;
    lex_token t = p->tok;
    if (chained && is_comparison(op)) {
      syntax_error(p, t.loc, "comparisons do not chain; use parentheses or &&");
      return IR_NONE;
    }
    advance(p);
    ir_ref rhs = parse_binary(p, ir_ops[op].prec + 1);
    if (!rhs)
      return IR_NONE;
    ir_ref kids[2] = {lhs, rhs};
    lhs = mk(p, op, t.loc, 2, kids);
    chained = is_comparison(op);
  }
  return p->failed ? IR_NONE : lhs;
}

/* if c { a } else if d { b } else { c }: the chain is read in a loop and
 * built from its end, so long chains do not recurse. */
static ir_ref parse_if(parser *p) {
  size_t base = p->nstk, lbase = p->nlocs;
  ir_ref e = IR_NONE;
  for (;;) {
    ir_loc loc = p->tok.loc;
    advance(p); /* 'if' */
    ir_ref c = parse_expr(p);
    ir_ref t = c ? parse_block(p) : IR_NONE;
    if (!t || !PUSH(p, p->stk, p->nstk, p->capstk, c) || !PUSH(p, p->stk, p->nstk, p->capstk, t) ||
        !PUSH(p, p->locs, p->nlocs, p->caplocs, loc))
      break;
    if (!accept(p, TOK_ELSE)) {
      syntax_error(p, loc, "'if' without 'else': an if is an expression and needs both branches");
      break;
    }
    if (p->tok.kind != TOK_IF) {
      e = parse_block(p);
      break;
    }
  }
  for (size_t i = p->nlocs; e && i-- > lbase;) {
    ir_ref kids[3] = {p->stk[base + 2 * (i - lbase)], p->stk[base + 2 * (i - lbase) + 1], e};
    e = mk(p, IR_IF, p->locs[i], 3, kids);
  }
  p->nstk = base;
  p->nlocs = lbase;
  return p->failed ? IR_NONE : e;
}

/* loop (x = e, ...) while cond { step }: cond and step become lambdas over
 * the loop variables. */
static ir_ref parse_loop(parser *p) {
  ir_loc loc = p->tok.loc;
  size_t base = p->nstk, nbase = p->nnames, sbase = p->nscope;
  advance(p); /* 'loop' */
  if (p->tok.kind != TOK_LPAREN) {
    expected(p, "'(' after 'loop'");
    return IR_NONE;
  }
  if (!open_bracket(p))
    return IR_NONE;
  do {
    if (p->tok.kind != TOK_IDENT) {
      expected(p, "a loop variable");
      break;
    }
    name_loc nl = {intern_tok(p, &p->tok), p->tok.loc};
    if (!nl.sym || !PUSH(p, p->names, p->nnames, p->capnames, nl))
      break;
    advance(p);
    if (!expect(p, TOK_ASSIGN, "'=' after a loop variable"))
      break;
    ir_ref init = parse_expr(p);
    if (!init || !PUSH(p, p->stk, p->nstk, p->capstk, init))
      break;
  } while (accept(p, TOK_COMMA));
  close_bracket(p, TOK_RPAREN, "',' or ')' after a loop variable");
  expect(p, TOK_WHILE, "'while' after the loop variables");
  for (size_t i = nbase; i < p->nnames && !p->failed; i++)
    bind_name(p, p->names[i].sym, p->names[i].loc, sbase, "loop variable");
  ir_loc cloc = p->tok.loc;
  ir_ref cond = parse_expr(p);
  ir_loc sloc = p->tok.loc;
  ir_ref step = cond ? parse_block(p) : IR_NONE;
  unbind_to(p, sbase);
  size_t k = p->nnames - nbase;
  ir_ref lc = mk(p, IR_LAM, cloc, 1, &cond), ls = mk(p, IR_LAM, sloc, 1, &step);
  if (lc && ls) {
    node(p, lc)->attr = node(p, ls)->attr = (int64_t)k;
    node(p, lc)->names = push_names(p, nbase, k);
    node(p, ls)->names = push_names(p, nbase, k);
  }
  p->nnames = nbase;
  if (!PUSH(p, p->stk, p->nstk, p->capstk, lc) || !PUSH(p, p->stk, p->nstk, p->capstk, ls)) {
    p->nstk = base;
    return IR_NONE;
  }
  return mk_from_stack(p, IR_LOOP, loc, base);
}

/* rec [d] (i in lo..=hi, ...) -> T { body }; `selfname` is the name of an
 * enclosing `let d = `, used when the rec names no array itself. */
static ir_ref parse_rec(parser *p, ir_sym selfname) {
  ir_loc loc = p->tok.loc;
  size_t base = p->nstk, nbase = p->nnames, sbase = p->nscope;
  name_loc self = {selfname, loc};
  uint64_t excl = 0;
  advance(p); /* 'rec' */
  if (p->tok.kind == TOK_IDENT) {
    self.sym = intern_tok(p, &p->tok);
    self.loc = p->tok.loc;
    advance(p);
  }
  if (p->tok.kind != TOK_LPAREN) {
    expected(p, "'(' before the dimensions of rec");
    return IR_NONE;
  }
  if (!open_bracket(p) || !PUSH(p, p->names, p->nnames, p->capnames, self))
    return IR_NONE;
  do {
    if (p->tok.kind != TOK_IDENT) {
      expected(p, "an index name");
      break;
    }
    if (p->nnames - nbase > PARSE_MAX_RANK) {
      syntax_error(p, p->tok.loc, "rec with more than %d dimensions", PARSE_MAX_RANK);
      break;
    }
    name_loc nl = {intern_tok(p, &p->tok), p->tok.loc};
    if (!nl.sym || !PUSH(p, p->names, p->nnames, p->capnames, nl))
      break;
    advance(p);
    if (!expect(p, TOK_IN, "'in' after the index name"))
      break;
    ir_ref lo = parse_expr(p);
    if (!lo)
      break;
    if (p->tok.kind == TOK_DOTDOT)
      excl |= (uint64_t)1 << (p->nnames - nbase - 2);
    else if (p->tok.kind != TOK_DOTDOTEQ) {
      expected(p, "'..=' or '..'");
      break;
    }
    advance(p);
    ir_ref hi = parse_expr(p);
    if (!hi || !PUSH(p, p->stk, p->nstk, p->capstk, lo) || !PUSH(p, p->stk, p->nstk, p->capstk, hi))
      break;
  } while (accept(p, TOK_COMMA));
  close_bracket(p, TOK_RPAREN, "',' or ')' after a dimension");
  uint32_t n = (uint32_t)(p->nnames - nbase - 1);
  /* by (a1, .., an): the schedule the user asks for (docs/language.md
   * §7.14); `by` means this only here */
  int64_t sched[PARSE_MAX_RANK + 1];
  bool has_sched = false;
  if (!p->failed && p->tok.kind == TOK_IDENT && p->tok.len == 2 &&
      memcmp(tok_text(p, &p->tok), "by", 2) == 0) {
    ir_loc sloc = p->tok.loc;
    advance(p);
    has_sched = true;
    uint32_t k = 0;
    if (p->tok.kind != TOK_LPAREN)
      expected(p, "'(' and the schedule's coefficients after 'by'");
    else if (open_bracket(p)) {
      do {
        bool neg = accept(p, TOK_MINUS);
        if (p->tok.kind != TOK_INT || p->tok.suffix != LEX_NO_SUFFIX) {
          expected(p, "an integer coefficient without suffix");
          break;
        }
        if (p->tok.u > (uint64_t)INT64_MAX) {
          syntax_error(p, p->tok.loc, "schedule coefficient out of range");
          break;
        }
        if (k < n)
          sched[k] = neg ? -(int64_t)p->tok.u : (int64_t)p->tok.u;
        k++;
        advance(p);
      } while (accept(p, TOK_COMMA));
      close_bracket(p, TOK_RPAREN, "',' or ')' in the schedule");
    }
    if (!p->failed && k != n)
      syntax_error(p, sloc, "a schedule of %u coefficient%s for a rec of rank %u", k,
                   k == 1 ? "" : "s", n);
  }
  ir_loc tloc = p->tok.loc;
  expect(p, TOK_ARROW, "'->' and the element type");
  ir_type elem = p->failed ? IR_TY_NONE : parse_type(p);
  ir_type ty = IR_TY_NONE;
  if (elem && !(ir_ty_is_element(p->ctx, elem) && (ty = ir_ty_array(p->ctx, elem, n))))
    syntax_error(p, tloc, "the element type of a rec must be a scalar or a tuple of scalars");
  for (size_t i = nbase; i < p->nnames && !p->failed; i++)
    bind_name(p, p->names[i].sym, p->names[i].loc, sbase, i == nbase ? "rec name" : "rec index");
  ir_ref body = p->failed ? IR_NONE : parse_block(p);
  unbind_to(p, sbase);
  if (!body || !PUSH(p, p->stk, p->nstk, p->capstk, body)) {
    p->nstk = base;
    p->nnames = nbase;
    return IR_NONE;
  }
  ir_ref r = mk_from_stack(p, IR_REC, loc, base);
  if (r) {
    ir_node *rn = node(p, r);
    rn->attr = n;
    rn->lit.u = excl;
    rn->type = ty;
    rn->names = push_names(p, nbase, n + 1);
    if (has_sched) {
      uint32_t off = ir_ints_push(p->m, n, sched);
      node(p, r)->aux = off;
      node(p, r)->flags |= IR_F_SCHED;
      if (!off)
        fail_oom(p);
    }
  }
  p->nnames = nbase;
  return p->failed ? IR_NONE : r;
}

static ir_ref parse_expr_inner(parser *p) {
  switch (p->tok.kind) {
  case TOK_IF:
    return parse_if(p);
  case TOK_LOOP:
    return parse_loop(p);
  case TOK_REC:
    return parse_rec(p, IR_SYM_NONE);
  default:
    return parse_binary(p, 1);
  }
}

static ir_ref parse_expr(parser *p) {
  ir_ref r = enter(p) ? parse_expr_inner(p) : IR_NONE;
  p->nest--;
  return p->failed ? IR_NONE : r;
}

/* let x = e;  |  let (a, b) = e;  — parses the statement and binds its names. */
/* Marks let e as written with type t (IR_F_TYPED). */
static bool set_let_type(parser *p, ir_ref e, ir_type t) {
  int64_t v = (int64_t)t;
  uint32_t off = ir_ints_push(p->m, 1, &v);
  if (p->m->oom) {
    fail_oom(p);
    return false;
  }
  node(p, e)->flags |= IR_F_TYPED;
  node(p, e)->aux = off;
  return true;
}

/* After `let NAME =`: a lambda, or the name of a function or builtin alone
 * (`let f = max;`), which make NAME a local function. */
static bool is_function_value(parser *p) {
  lex_kind k = p->tok.kind;
  if (k == TOK_BAR || k == TOK_OROR)
    return true;
  if (k != TOK_IDENT || peek(p) != TOK_SEMI)
    return false;
  ir_sym s = intern_tok(p, &p->tok);
  if (!s || lookup(p, s) >= 0)
    return s && find_local(p, s);
  ac_scalar sc;
  const char *text = tok_text(p, &p->tok);
  ir_op op = ir_op_by_call_name(text, p->tok.len);
  return find_local(p, s) || find_fn(p, s) >= 0 || is_scalar_name(text, p->tok.len, &sc) ||
         (op != IR_NUM_OPS && ir_op_is_scalar(op));
}

/* `let NAME = |x| e;` (or a function's name): NAME is a local function
 * until the end of the block (docs/language.md §4.7). */
static bool parse_local_fn(parser *p, ir_sym sym, size_t nbase) {
  p->nnames = nbase;
  ir_ref fn = p->tok.kind == TOK_IDENT ? parse_name(p, true) : parse_lambda(p);
  if (!fn || !expect(p, TOK_SEMI, "';' after a let"))
    return false;
  local_fn lf = {sym, fn, p->nscope};
  return PUSH(p, p->lfns, p->nlfns, p->caplfns, lf);
}

/* `fn NAME(x: T, ..) -> R { body }` in a block: a local function whose
 * parameters and result have the types written (§4.7). Its lambda is
 * `|x, ..| let (x, ..): (T, ..) = (x, ..); let result: R = body; result`:
 * the parameters are bound twice, unnamed for the lambda and named for the
 * typed let, so the body is parsed where it ends up. */
/* A parameter's name and the ':' after it, pushed on p->names; one already
 * pushed since nbase (the function's others) is a duplicate. */
static bool parse_param_name(parser *p, size_t nbase) {
  if (p->tok.kind != TOK_IDENT) {
    expected(p, "a parameter name");
    return false;
  }
  name_loc nl = {intern_tok(p, &p->tok), p->tok.loc};
  for (size_t j = nbase; nl.sym && j < p->nnames; j++)
    if (p->names[j].sym == nl.sym) {
      scope_error(p, nl.loc, "duplicate parameter '%s'", ir_sym_str(p->ctx, nl.sym));
      return false;
    }
  if (!nl.sym || !PUSH(p, p->names, p->nnames, p->capnames, nl))
    return false;
  advance(p);
  return expect(p, TOK_COLON, "':' and the parameter's type");
}

static bool parse_local_def(parser *p) {
  ir_loc loc = p->tok.loc;
  advance(p); /* 'fn' */
  if (p->tok.kind != TOK_IDENT) {
    expected(p, "a function name");
    return false;
  }
  ir_sym sym = intern_tok(p, &p->tok);
  advance(p);
  size_t nbase = p->nnames, sbase = p->nscope, tbase = p->ntypes;
  if (!sym || !open_bracket(p))
    return false;
  while (p->tok.kind != TOK_RPAREN && !p->failed) {
    if (!parse_param_name(p, nbase))
      return false;
    ir_type t = parse_type(p);
    if (!t || !PUSH(p, p->types, p->ntypes, p->captypes, t) || !accept(p, TOK_COMMA))
      break;
  }
  if (!close_bracket(p, TOK_RPAREN, "',' or ')' after a parameter") ||
      !expect(p, TOK_ARROW, "'->' and the result type"))
    return false;
  /* `-> _`: the result is the body's type at each use (an untyped let) */
  bool infer = is_infer_mark(p);
  if (infer)
    advance(p);
  ir_type result = infer ? IR_TY_NONE : parse_type(p);
  uint32_t np = (uint32_t)(p->nnames - nbase);
  ir_type ptype = np == 0   ? IR_TY_NONE
                  : np == 1 ? p->types[tbase]
                            : ir_ty_tuple(p->ctx, np, p->types + tbase);
  p->ntypes = tbase;
  if ((!infer && !result) || (np && !ptype)) {
    if (!p->failed)
      fail_oom(p);
    return false;
  }
  for (uint32_t i = 0; i < np; i++)
    if (!bind_name(p, IR_SYM_NONE, loc, p->nscope, "parameter"))
      return false;
  for (uint32_t i = 0; i < np; i++)
    if (!bind_name(p, p->names[nbase + i].sym, p->names[nbase + i].loc, sbase + np, "parameter"))
      return false;
  ir_ref body = p->tok.kind == TOK_LBRACE ? parse_block(p) : (expected(p, "'{'"), IR_NONE);
  unbind_to(p, sbase);
  uint32_t names = push_names(p, nbase, np);
  p->nnames = nbase;
  if (!body)
    return false;
  /* let result: R = body; result */
  ir_sym rs = ir_sym_intern(p->ctx, "result", 6);
  ir_ref v0 = mk(p, IR_VAR, loc, 0, NULL);
  ir_ref kids[2] = {body, v0};
  ir_ref e = v0 ? mk(p, IR_LET, loc, 2, kids) : IR_NONE;
  if (!rs)
    fail_oom(p);
  if (!e || (!infer && !set_let_type(p, e, result)))
    return false;
  node(p, e)->names = ir_syms_push(p->m, 1, &rs);
  if (p->m->oom) {
    fail_oom(p);
    return false;
  }
  if (np) {
    size_t vbase = p->nstk;
    for (uint32_t i = 0; i < np; i++) {
      ir_ref v = mk(p, IR_VAR, loc, 0, NULL);
      if (!v || !PUSH(p, p->stk, p->nstk, p->capstk, v))
        return false;
      node(p, v)->attr = np - 1 - i;
    }
    ir_ref val = np == 1 ? p->stk[vbase] : mk_from_stack(p, IR_TUPLE, loc, vbase);
    p->nstk = vbase;
    ir_ref lk[2] = {val, e};
    e = val ? mk(p, np == 1 ? IR_LET : IR_LETTUP, loc, 2, lk) : IR_NONE;
    if (!e || !set_let_type(p, e, ptype))
      return false;
    node(p, e)->names = names;
    if (np > 1)
      node(p, e)->attr = np;
  }
  ir_ref lam = mk(p, IR_LAM, loc, 1, &e);
  if (!lam)
    return false;
  node(p, lam)->attr = np;
  node(p, lam)->names = names;
  local_fn lf = {sym, lam, sbase};
  return PUSH(p, p->lfns, p->nlfns, p->caplfns, lf);
}

static bool parse_let(parser *p) {
  pending_let pl = {p->tok.loc, IR_NONE, 0, 1, false, IR_TY_NONE};
  size_t nbase = p->nnames, sbase = p->nscope;
  advance(p); /* 'let' */
  if (p->tok.kind == TOK_LPAREN) {
    pl.tup = true;
    if (!open_bracket(p))
      return false;
    do {
      if (p->tok.kind != TOK_IDENT) {
        expected(p, "a name in the tuple pattern");
        return false;
      }
      name_loc nl = {intern_tok(p, &p->tok), p->tok.loc};
      /* bound only to find duplicates; unbound before the right side */
      if (!nl.sym || !bind_name(p, nl.sym, nl.loc, sbase, "tuple pattern name") ||
          !PUSH(p, p->names, p->nnames, p->capnames, nl))
        return false;
      advance(p);
    } while (accept(p, TOK_COMMA));
    unbind_to(p, sbase);
    if (!close_bracket(p, TOK_RPAREN, "',' or ')' in a tuple pattern"))
      return false;
    if (p->nnames - nbase < 2) {
      syntax_error(p, pl.loc, "a tuple pattern binds at least two names");
      return false;
    }
  } else if (p->tok.kind == TOK_IDENT) {
    name_loc nl = {intern_tok(p, &p->tok), p->tok.loc};
    if (!nl.sym || !PUSH(p, p->names, p->nnames, p->capnames, nl))
      return false;
    advance(p);
  } else {
    expected(p, "a name or '(' after 'let'");
    return false;
  }
  if (accept(p, TOK_COLON) && !(pl.ann = parse_type(p)))
    return false;
  if (!expect(p, TOK_ASSIGN, pl.ann ? "'=' in a let" : "':' or '=' in a let"))
    return false;
  if (!pl.tup && !pl.ann && is_function_value(p))
    return parse_local_fn(p, p->names[nbase].sym, nbase);
  pl.rhs = !pl.tup && p->tok.kind == TOK_REC ? parse_rec(p, p->names[nbase].sym) : parse_expr(p);
  if (!pl.rhs || !expect(p, TOK_SEMI, "';' after a let"))
    return false;
  pl.n = (uint32_t)(p->nnames - nbase);
  pl.names = push_names(p, nbase, pl.n);
  for (size_t i = nbase; i < p->nnames && !p->failed; i++)
    bind_name(p, p->names[i].sym, p->names[i].loc, p->nscope, "name");
  p->nnames = nbase;
  return !p->failed && PUSH(p, p->lets, p->nlets, p->caplets, pl);
}

/* "{" let* expr "}": the lets nest to the right, built from the last one. */
static ir_ref parse_block(parser *p) {
  size_t lbase = p->nlets, sbase = p->nscope, fbase = p->nlfns;
  if (p->tok.kind != TOK_LBRACE) {
    expected(p, "'{'");
    return IR_NONE;
  }
  if (!open_bracket(p))
    return IR_NONE;
  while ((p->tok.kind == TOK_LET && parse_let(p)) || (p->tok.kind == TOK_FN && parse_local_def(p)))
    ;
  ir_ref e = p->failed ? IR_NONE : parse_expr(p);
  if (e && p->tok.kind == TOK_SEMI)
    syntax_error(p, p->tok.loc,
                 "expected '}' after the result of the block, found ';' (only "
                 "'let' statements end with ';')");
  else if (e)
    close_bracket(p, TOK_RBRACE, "'}' after the result of the block");
  unbind_to(p, sbase);
  p->nlfns = fbase;
  for (size_t i = p->nlets; e && !p->failed && i-- > lbase;) {
    pending_let pl = p->lets[i];
    ir_ref kids[2] = {pl.rhs, e};
    e = mk(p, pl.tup ? IR_LETTUP : IR_LET, pl.loc, 2, kids);
    if (e && pl.ann && !set_let_type(p, e, pl.ann))
      e = IR_NONE;
    if (e) {
      node(p, e)->names = pl.names;
      if (pl.tup)
        node(p, e)->attr = pl.n;
    }
  }
  p->nlets = lbase;
  return p->failed ? IR_NONE : e;
}

/* ---- functions ----------------------------------------------------------------------- */

/* An extern function passes and returns C scalars only (§3.3): checks the
 * type written at `loc`. */
static bool extern_type_ok(parser *p, ir_type t, ir_loc loc, const char *what) {
  if (ir_ty_is_scalar(p->ctx, t, NULL))
    return true;
  ir_buf b;
  ir_buf_init(&b, p->ctx);
  ir_ty_print(p->ctx, t, &b);
  if (b.oom)
    fail_oom(p);
  else
    scope_error(p, loc,
                "%s of an extern function must be a scalar (bool, an integer or a "
                "float), not %s",
                what, ir_buf_cstr(&b));
  ir_buf_free(&b);
  return false;
}

/* A parameter of an extern kernel is a scalar or an array of scalars
 * (§3.4): it crosses as a value, or as a pointer plus its extents. */
static bool kernel_param_ok(parser *p, ir_type t, ir_loc loc) {
  if (ir_ty_is_kernel_value(p->ctx, t, true))
    return true;
  scope_error(p, loc,
              "a parameter of an extern kernel must be a scalar or an array of scalars");
  return false;
}

/* True if the current token is the identifier `word` (the clause words of
 * an extern kernel are not keywords). */
static bool at_word(const parser *p, const char *word) {
  size_t n = strlen(word);
  return p->tok.kind == TOK_IDENT && p->tok.len == n && memcmp(tok_text(p, &p->tok), word, n) == 0;
}

/* The value of the current string token, interned; advances past it. */
static ir_sym take_string(parser *p, const char *what) {
  if (p->tok.kind != TOK_STRING) {
    expected(p, what);
    return IR_SYM_NONE;
  }
  size_t len = 0;
  char *v = lex_string(p->ctx, p->lx.src, &p->tok, &len);
  ir_sym s = v ? ir_sym_intern(p->ctx, v, len) : IR_SYM_NONE;
  ac_free(p->ctx, v);
  if (!s) {
    fail_oom(p);
    return IR_SYM_NONE;
  }
  if (len == 0 || memchr(ir_sym_str(p->ctx, s), 0, len)) {
    syntax_error(p, p->tok.loc, "%s must not be empty or hold a NUL byte", what);
    return IR_SYM_NONE;
  }
  advance(p);
  return s;
}

/* One result of an extern kernel: SCALAR '[' EXPR {',' EXPR} ']' (its
 * extents pushed on p->stk), or a parenthesised tuple of them. */
static ir_type parse_kernel_result(parser *p, bool top) {
  ir_loc start = p->tok.loc;
  if (top && p->tok.kind == TOK_LPAREN) {
    if (!open_bracket(p))
      return IR_TY_NONE;
    size_t base = p->ntypes;
    do {
      ir_type f = parse_kernel_result(p, false);
      if (!f || !PUSH(p, p->types, p->ntypes, p->captypes, f))
        return IR_TY_NONE;
    } while (accept(p, TOK_COMMA));
    if (!close_bracket(p, TOK_RPAREN, "',' or ')' in the results of an extern kernel"))
      return IR_TY_NONE;
    size_t n = p->ntypes - base;
    ir_type t = n == 1 ? p->types[base] : ir_ty_tuple(p->ctx, (uint32_t)n, p->types + base);
    p->ntypes = base;
    if (!t)
      fail_oom(p);
    return t;
  }
  ac_scalar sc;
  if (p->tok.kind != TOK_IDENT || !is_scalar_name(tok_text(p, &p->tok), p->tok.len, &sc)) {
    expected(p, "a result of the form f32[EXTENT, ...] (an extern kernel's results are arrays "
                "of scalars whose extents are expressions of its parameters)");
    return IR_TY_NONE;
  }
  advance(p);
  if (p->tok.kind != TOK_LBRACK) {
    expected(p, "'[' and the result's extents (an extern kernel returns arrays)");
    return IR_TY_NONE;
  }
  if (!open_bracket(p))
    return IR_TY_NONE;
  uint32_t rank = 0;
  do {
    ir_ref e = parse_expr(p);
    if (!e || !PUSH(p, p->stk, p->nstk, p->capstk, e))
      return IR_TY_NONE;
    if (++rank > PARSE_MAX_RANK) {
      syntax_error(p, start, "array rank above %d", PARSE_MAX_RANK);
      return IR_TY_NONE;
    }
  } while (accept(p, TOK_COMMA));
  if (!close_bracket(p, TOK_RBRACK, "',' or ']' after an extent"))
    return IR_TY_NONE;
  ir_type t = ir_ty_array(p->ctx, ir_ty_scalar(p->ctx, sc), rank);
  if (!t)
    fail_oom(p);
  return t;
}

/* What follows `->` in an extern kernel (§3.4): the results with their
 * extents, then the clauses `threads E`, `block N`, `ptx "TEXT"` or
 * `ptx file "PATH"`, `entry "NAME"` and `host "NAME"` in any order, each at
 * most once, then ';'. Fills function fi's kernel fields. */
static ir_type parse_kernel_tail(parser *p, ir_func *k) {
  size_t base = p->nstk;
  ir_type result = parse_kernel_result(p, true);
  if (!result)
    return IR_TY_NONE;
  k->nkext = (uint32_t)(p->nstk - base);
  int64_t *refs = ac_alloc(p->ctx, (k->nkext ? k->nkext : 1) * sizeof *refs);
  if (!refs) {
    fail_oom(p);
    return IR_TY_NONE;
  }
  for (uint32_t j = 0; j < k->nkext; j++)
    refs[j] = p->stk[base + j];
  p->nstk = base;
  k->kext = ir_ints_push(p->m, k->nkext, refs);
  ac_free(p->ctx, refs);
  if (p->m->oom) {
    fail_oom(p);
    return IR_TY_NONE;
  }
  bool seen[5] = {false};
  static const char *const words[5] = {"threads", "block", "ptx", "entry", "host"};
  ir_loc ptx_at = {0, 0};
  while (!p->failed && p->tok.kind != TOK_SEMI) {
    int w = 0;
    while (w < 5 && !at_word(p, words[w]))
      w++;
    if (w == 5) {
      expected(p, k->kptx ? "'threads', 'block', 'entry', 'host' or ';'"
                          : "'threads', 'block', 'ptx', 'entry', 'host' or ';'");
      return IR_TY_NONE;
    }
    if (seen[w]) {
      syntax_error(p, p->tok.loc, "the extern kernel already has a '%s' clause", words[w]);
      return IR_TY_NONE;
    }
    seen[w] = true;
    ir_loc at = p->tok.loc;
    advance(p);
    switch (w) {
    case 0:
      k->kthreads = parse_expr(p);
      break;
    case 1:
      if (p->tok.kind != TOK_INT || p->tok.suffix != LEX_NO_SUFFIX || p->tok.u < 1 ||
          p->tok.u > 1024) {
        expected(p, "the threads per block, an integer from 1 to 1024");
        return IR_TY_NONE;
      }
      k->kblock = (uint32_t)p->tok.u;
      advance(p);
      break;
    case 2:
      ptx_at = at;
      if (at_word(p, "file")) {
        advance(p);
        k->kptx_file = true;
        k->kptx = take_string(p, "the PTX file's path as a string");
      } else {
        k->kptx = take_string(p, "the PTX text as a string, or 'file' and a path");
      }
      break;
    case 3:
      k->kentry = take_string(p, "the name of the PTX .entry as a string");
      break;
    default:
      k->khost = take_string(p, "the name of the host function as a string");
      break;
    }
  }
  if (p->failed)
    return IR_TY_NONE;
  if (k->kptx && !k->kthreads) {
    syntax_error(p, ptx_at, "an extern kernel with PTX needs a launch rule: 'threads EXPR' "
                            "(and optionally 'block N')");
    return IR_TY_NONE;
  }
  if (!k->kptx && (seen[0] || seen[1] || seen[3])) {
    syntax_error(p, p->tok.loc, "'threads', 'block' and 'entry' describe the GPU launch of a "
                                "kernel with PTX: add a 'ptx' clause");
    return IR_TY_NONE;
  }
  if (!k->kblock)
    k->kblock = 256;
  expect(p, TOK_SEMI, "';' at the end of the extern kernel");
  return p->failed ? IR_TY_NONE : result;
}

/* fn NAME(PARAMS) -> T { BODY }, or, after `extern`, fn NAME(PARAMS) -> T;
 * (a host function: scalar types, no body). */
static bool parse_fn(parser *p) {
  bool ext = p->tok.kind == TOK_EXTERN, kern = false;
  if (ext) {
    advance(p);
    kern = at_word(p, "kernel");
    if (p->tok.kind != TOK_FN && !kern) {
      expected(p, "'fn' or 'kernel' after 'extern'");
      return false;
    }
  }
  advance(p); /* 'fn' or 'kernel' */
  if (p->tok.kind != TOK_IDENT) {
    expected(p, "a function name");
    return false;
  }
  lex_token nt = p->tok;
  const char *name = tok_text(p, &nt);
  if (ir_op_by_call_name(name, nt.len) != IR_NUM_OPS || is_scalar_name(name, nt.len, NULL)) {
    scope_error(p, nt.loc, "'%.*s' is a %s and cannot name a function", (int)nt.len, name,
                is_scalar_name(name, nt.len, NULL) ? "scalar type" : "builtin operation");
    return false;
  }
  ir_sym sym = intern_tok(p, &nt);
  if (!sym)
    return false;
  if (find_fn(p, sym) != (int32_t)p->m->nfuncs) {
    scope_error(p, nt.loc, "duplicate function '%.*s'", (int)nt.len, name);
    return false;
  }
  advance(p);
  size_t sbase = p->nscope, nbase = p->nnames, fbase = p->nlfns;
  bool is_template = false;
  p->ntypes = 0;
  if (p->tok.kind != TOK_LPAREN) {
    expected(p, "'(' after the function name");
    return false;
  }
  if (!open_bracket(p))
    return false;
  if (p->tok.kind != TOK_RPAREN) {
    do {
      if (!parse_param_name(p, nbase))
        return false;
      name_loc nl = p->names[p->nnames - 1];
      ir_loc tloc = p->tok.loc;
      p->fn_types = !ext;
      ir_type t = parse_type(p);
      p->fn_types = false;
      if (!t || (ext && !kern && !extern_type_ok(p, t, tloc, "a parameter")) ||
          (kern && !kernel_param_ok(p, t, tloc)) ||
          !PUSH(p, p->types, p->ntypes, p->captypes, t))
        return false;
      if (ir_ty_info(p->ctx, t).kind == TK_FN) {
        /* a function parameter: a local function whose uses are filled in
         * at each call (ir_specialise) */
        ir_ref ph = mk(p, IR_FNREF, nl.loc, 0, NULL);
        local_fn lf = {nl.sym, ph, p->nscope};
        if (!ph || !PUSH(p, p->lfns, p->nlfns, p->caplfns, lf))
          return false;
        node(p, ph)->attr = -(int64_t)(p->nnames - nbase);
        is_template = true;
      } else if (!bind_name(p, nl.sym, nl.loc, sbase, "parameter")) {
        return false;
      }
    } while (accept(p, TOK_COMMA));
  }
  if (!close_bracket(p, TOK_RPAREN, "',' or ')' after a parameter") ||
      !expect(p, TOK_ARROW, "'->' and the result type"))
    return false;
  ir_loc rloc = p->tok.loc;
  ir_func kf;
  memset(&kf, 0, sizeof kf);
  bool infer = is_infer_mark(p);
  if (infer && ext) {
    syntax_error(p, rloc,
                 "the result type of extern %s '%.*s' must be written: `_` (an inferred type) is "
                 "only allowed for a function with a body",
                 kern ? "kernel" : "function", (int)nt.len, name);
    return false;
  }
  if (infer)
    advance(p); /* the checker infers the result from the body */
  ir_type result = kern ? parse_kernel_tail(p, &kf) : infer ? IR_TY_NONE : parse_type(p);
  ir_ref body = IR_NONE;
  if (kern) {
    /* parse_kernel_tail read up to the ';' */
  } else if (result && ext && extern_type_ok(p, result, rloc, "the result")) {
    if (p->tok.kind == TOK_LBRACE)
      syntax_error(p, p->tok.loc,
                   "extern function '%.*s' is implemented by the host and cannot "
                   "have a body",
                   (int)nt.len, name);
    else
      expect(p, TOK_SEMI, "';' after the result type of an extern function");
  } else if ((result || infer) && !ext) {
    body = parse_block(p);
  }
  unbind_to(p, sbase);
  p->nlfns = fbase;
  if (p->failed || (!ext && !body))
    return false;
  size_t np = p->nnames - nbase;
  ir_sym small[16];
  ir_sym *pn = np <= 16 ? small : ac_alloc(p->ctx, np * sizeof *pn);
  if (!pn) {
    fail_oom(p);
    return false;
  }
  for (size_t i = 0; i < np; i++)
    pn[i] = p->names[nbase + i].sym;
  int32_t fi = ir_func_add(p->m, sym, nt.loc, (uint32_t)np, p->types, pn, result);
  if (pn != small)
    ac_free(p->ctx, pn);
  p->nnames = nbase;
  if (fi < 0) {
    fail_oom(p);
    return false;
  }
  ir_func *f = &p->m->funcs[fi];
  f->body = body;
  f->is_extern = ext;
  f->infer_result = infer;
  f->is_template = is_template;
  p->templates |= is_template;
  if (kern) {
    f->is_kernel = true;
    f->kext = kf.kext;
    f->nkext = kf.nkext;
    f->kthreads = kf.kthreads;
    f->kblock = kf.kblock;
    f->kptx = kf.kptx;
    f->kptx_file = kf.kptx_file;
    f->kentry = kf.kentry;
    f->khost = kf.khost;
  }
  return true;
}

/* Registers every `fn NAME` (and `extern fn NAME`) of the text in definition
 * order, so that calls may name functions defined further down. Lexical
 * errors end the scan quietly: the parser reports them when it reaches them. */
static void prescan(parser *p, const char *text, size_t len) {
  lexer lx;
  lex_init(&lx, p->ctx, text, len);
  lex_token t;
  lex_kind prev = TOK_EOF;
  size_t k = p->m->nfuncs;
  long braces = 0; /* a `fn` inside a block is local (parse_local_def) */
  while (lex_next(&lx, &t) && t.kind != TOK_EOF && !p->failed) {
    braces += t.kind == TOK_LBRACE ? 1 : t.kind == TOK_RBRACE ? -1 : 0;
    if (braces > 0 && t.kind != TOK_RBRACE) {
      prev = t.kind;
      continue;
    }
    bool kernel_word = prev == TOK_EXTERN && t.kind == TOK_IDENT && t.len == 6 &&
                       memcmp(text + t.off, "kernel", 6) == 0;
    if (kernel_word) {
      prev = TOK_FN; /* `extern kernel NAME` registers NAME like `fn NAME` */
      continue;
    }
    if (prev == TOK_FN && t.kind == TOK_IDENT) {
      ir_sym s = ir_sym_intern(p->ctx, text + t.off, t.len);
      if (!s)
        fail_oom(p);
      if (s && (s < p->capfnidx ||
                grow_zero(p, (void **)&p->fnidx, &p->capfnidx, (size_t)s + 1, sizeof *p->fnidx))) {
        if (p->fnidx[s] == 0 && k < INT32_MAX)
          p->fnidx[s] = (int32_t)k + 1;
        k++;
      }
    }
    prev = t.kind;
  }
  if (lx.status == AC_ERR_NOMEM)
    fail_oom(p);
}

static void parser_free(parser *p) {
  ac_context *ctx = p->ctx;
  ac_free(ctx, p->scope);
  ac_free(ctx, p->lfns);
  ac_free(ctx, p->bind);
  ac_free(ctx, p->fnidx);
  ac_free(ctx, p->depth);
  ac_free(ctx, p->stk);
  ac_free(ctx, p->locs);
  ac_free(ctx, p->lets);
  ac_free(ctx, p->names);
  ac_free(ctx, p->types);
  ac_free(ctx, p->br);
}

ac_status ir_parse(ac_module *m, const char *text, size_t len, ac_error **err) {
  parser p;
  memset(&p, 0, sizeof p);
  p.m = m;
  p.ctx = m->ctx;
  p.nfuncs0 = m->nfuncs;
  if (m->oom)
    return ir_report(err, NULL, AC_ERR_NOMEM);
  if (!text)
    text = "", len = 0;
  /* operators from the one op table, matched by spelling */
  for (int k = 0; k < TOK_NUM_KINDS; k++) {
    p.infix[k] = p.prefix[k] = IR_NUM_OPS;
    const char *sp = lex_kind_spelling((lex_kind)k);
    for (int o = 0; sp && o < IR_NUM_OPS; o++) {
      if (strcmp(ir_ops[o].spelling, sp) != 0)
        continue;
      if (ir_ops[o].syntax == SX_INFIX)
        p.infix[k] = (ir_op)o;
      else if (ir_ops[o].syntax == SX_PREFIX)
        p.prefix[k] = (ir_op)o;
    }
  }
  /* functions already in the module can be called too */
  for (size_t i = 0; i < m->nfuncs && !p.failed; i++) {
    ir_sym s = m->funcs[i].name;
    if (grow_zero(&p, (void **)&p.fnidx, &p.capfnidx, (size_t)s + 1, sizeof *p.fnidx) &&
        p.fnidx[s] == 0)
      p.fnidx[s] = (int32_t)i + 1;
  }
  prescan(&p, text, len);
  lex_init(&p.lx, p.ctx, text, len);
  advance(&p);
  while (!p.failed && p.tok.kind != TOK_EOF) {
    if (p.tok.kind != TOK_FN && p.tok.kind != TOK_EXTERN) {
      expected(&p, "'fn' at the start of a function definition");
      break;
    }
    parse_fn(&p);
  }
  if (!p.failed && p.templates) {
    p.status = ir_specialise(m, p.nfuncs0, &p.error);
    p.failed = p.status != AC_OK;
  }
  parser_free(&p);
  if (!p.failed && m->oom)
    fail_oom(&p);
  return p.failed ? ir_report(err, p.error, p.status) : AC_OK;
}
