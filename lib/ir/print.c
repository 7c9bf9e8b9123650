/* lib/ir/print.c: canonical text of a module (the inverse of parse.c).
 *
 * The text is a function of the IR alone, so that print -> parse -> print is
 * a fixed point: the parser rebuilds the same tree, and the tree prints the
 * same text. The rules that make it so:
 *
 *  - Layout is fixed, never width-dependent: functions separated by a blank
 *    line (an `extern fn` declaration is one line ending in ';'), bodies
 *    indented by two spaces, one `let` per line. A block whose
 *    result is a LET is written over several lines (`{`, statements, `}` at
 *    the indentation of the line that opened it); any other block is `{ e }`.
 *    A LET whose right side is a REC prints as `let d = rec (...) -> T {`.
 *  - Parentheses exactly where precedence (ops.def PREC) needs them;
 *    comparisons never chain; `if`, `loop` and `rec` as operands are
 *    parenthesised; a literal before `.K` or `[..]`, and a numeric literal
 *    under unary minus, too (`-(5)` is NEG of 5, `-5` a negative literal).
 *  - Names: the hint of each binder, unless it is empty, not an identifier,
 *    a keyword, the name of a sibling (`|x, x|`), or would capture something:
 *    shadowing an enclosing binder is fine unless the binder's scope refers
 *    to that outer variable, and a local may take a function's name unless
 *    its scope passes that function as a bare argument. Otherwise the name
 *    gets a numeric suffix (x_1, x_2, ...) that is visible nowhere. Either
 *    way the second print finds every name of the first acceptable again.
 *  - Literals: a suffix exactly when IR_F_CTX is clear (bool never needs
 *    one; an unchecked literal without type has none); floats with the
 *    fewest significant digits that read back to the same value in their
 *    type (via strtof and via strtod then rounding, the two ways a reader
 *    may convert), always with '.' or an exponent. A suffixed infinity or
 *    NaN has no literal spelling and prints as a conversion, `f32(inf)`.
 *
 * Malformed trees (a variable bound nowhere, a node with the wrong number
 * of children) make the printer fail with AC_ERR_INVALID at the node rather
 * than write text that would not read back; trees deeper than the parser's
 * limit are refused the same way, which also bounds the recursion.
 */
#include "lex.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct printer {
  ac_module *m;
  ac_context *ctx;
  ir_buf *out;
  ir_sym *scope; /* printed name of each bound variable, outermost first */
  size_t nscope, capscope;
  uint32_t *vis; /* sym -> how many visible binders (and functions) are so named */
  size_t capvis;
  uint32_t *hard; /* sym -> chosen for a sibling binder: never reusable */
  size_t caphard;
  uint32_t *next; /* base name -> last numeric suffix handed out in this function */
  size_t capnext;
  ir_sym *touched; /* bases whose `next` must be reset after the function */
  size_t ntouched, captouched;
  unsigned depth;
  bool failed;
  ac_status status;
  ac_error *error;
} printer;

static void fail(printer *pr, ir_loc loc, const char *fmt, ...) IR_PRINTF(3, 4);
static void fail(printer *pr, ir_loc loc, const char *fmt, ...) {
  if (pr->failed)
    return;
  va_list ap;
  va_start(ap, fmt);
  pr->failed = true;
  pr->error = ir_verror(pr->ctx, AC_ERR_INVALID, pr->m, loc, fmt, ap);
  pr->status = pr->error ? AC_ERR_INVALID : AC_ERR_NOMEM;
  va_end(ap);
}

static void fail_oom(printer *pr) {
  if (!pr->failed) {
    pr->failed = true;
    pr->status = AC_ERR_NOMEM;
    pr->error = NULL;
  }
}

static bool grow_zero(printer *pr, void **vec, size_t *cap, size_t need, size_t size) {
  size_t old = *cap;
  if (!ac_grow(pr->ctx, vec, cap, need, size)) {
    fail_oom(pr);
    return false;
  }
  if (*cap > old)
    memset((char *)*vec + old * size, 0, (*cap - old) * size);
  return true;
}

static void puts_(printer *pr, const char *s) {
  ir_buf_puts(pr->out, s);
}
static void putc_(printer *pr, char c) {
  ir_buf_putc(pr->out, c);
}
static void indent(printer *pr, unsigned ind) {
  for (unsigned i = 0; i < ind; i++)
    putc_(pr, ' ');
}

static const ir_node *node(const printer *pr, ir_ref r) {
  return ir_node_get(pr->m, r);
}
static bool is_let(const printer *pr, ir_ref r) {
  return node(pr, r)->op == IR_LET || node(pr, r)->op == IR_LETTUP;
}

/* ---- names ---------------------------------------------------------------- */

/* Name hint j of a name list at offset off in m->syms (0: none). */
static ir_sym hint_at(const printer *pr, uint32_t off, uint32_t j) {
  if (off == 0 || (size_t)off + j >= pr->m->nsyms)
    return IR_SYM_NONE;
  return pr->m->syms[off + j];
}

static bool visible(const printer *pr, ir_sym s) {
  return s < pr->capvis && pr->vis[s] > 0;
}
static bool taken(const printer *pr, ir_sym s) {
  return s < pr->caphard && pr->hard[s] > 0;
}

/* Adds d to a per-name counter. */
static void count(printer *pr, uint32_t **vec, size_t *cap, ir_sym s, int d) {
  if (s != IR_SYM_NONE && grow_zero(pr, (void **)vec, cap, (size_t)s + 1, sizeof **vec))
    (*vec)[s] += (uint32_t)d;
}
static void show(printer *pr, ir_sym s, int d) {
  count(pr, &pr->vis, &pr->capvis, s, d);
}
static void take(printer *pr, ir_sym s, int d) {
  count(pr, &pr->hard, &pr->caphard, s, d);
}

static void bind(printer *pr, ir_sym s) {
  if (!ac_grow(pr->ctx, (void **)&pr->scope, &pr->capscope, pr->nscope + 1, sizeof *pr->scope)) {
    fail_oom(pr);
    return;
  }
  pr->scope[pr->nscope++] = s;
  show(pr, s, 1);
}

static void unbind(printer *pr, size_t n) {
  for (; n > 0 && pr->nscope > 0; n--)
    show(pr, pr->scope[--pr->nscope], -1);
}

static ir_sym intern(printer *pr, const char *s, size_t n) {
  ir_sym r = ir_sym_intern(pr->ctx, s, n);
  if (!r)
    fail_oom(pr);
  return r;
}

static bool is_alnum_(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* The scope of a binder being named: up to two bodies, each entered under
 * nb[i] binders (the binder itself and its siblings). */
typedef struct scope_of {
  ir_ref body[2];
  uint32_t nb[2];
} scope_of;

/* Whether printing `h` for a binder around e (d binders deep) would capture
 * a reference in e: a free variable printed as h, or a function h named as
 * a bare argument. The walk is bounded like the printer's recursion. */
static bool captures(printer *pr, ir_ref e, uint32_t d, ir_sym h, unsigned depth) {
  if (e == IR_NONE || e >= pr->m->nnodes || depth > PARSE_MAX_DEPTH)
    return true; /* malformed or too deep: the printer reports it anyway */
  const ir_node *n = node(pr, e);
  if (n->op == IR_VAR) {
    uint64_t i = (uint64_t)n->attr;
    return n->attr >= (int64_t)d && i - d < pr->nscope && pr->scope[pr->nscope - 1 - (i - d)] == h;
  }
  if (n->op == IR_FNREF)
    return n->attr >= 0 && (uint64_t)n->attr < pr->m->nfuncs && pr->m->funcs[n->attr].name == h;
  for (uint32_t i = 0; i < n->nkids; i++)
    if (captures(pr, ir_kid(pr->m, e, i), d + ir_binders(pr->m, e, i), h, depth + 1))
      return true;
  return false;
}

/* The name to print for a binder with this hint (see the file comment): the
 * hint itself when it is an identifier that is not taken by a sibling and,
 * if it shadows an enclosing binder or a function, captures nothing in the
 * binder's scope; otherwise the hint made an identifier, with a suffix. */
static ir_sym choose(printer *pr, ir_sym hint, const scope_of *sc) {
  const char *h = ir_sym_str(pr->ctx, hint);
  size_t n = strlen(h);
  if (lex_is_plain_ident(h, n) && !taken(pr, hint)) {
    bool ok = true;
    for (int i = 0; i < 2 && ok && visible(pr, hint); i++)
      ok = !sc->body[i] || !captures(pr, sc->body[i], sc->nb[i], hint, 0);
    if (ok)
      return hint;
  }
  char base[LEX_MAX_IDENT + 1];
  size_t bn = 0;
  if (n == 0 || (h[0] >= '0' && h[0] <= '9'))
    base[bn++] = n == 0 ? 'x' : '_';
  for (size_t i = 0; i < n && bn < LEX_MAX_IDENT - 12; i++)
    base[bn++] = is_alnum_(h[i]) ? h[i] : '_';
  ir_sym b = intern(pr, base, bn);
  if (!b)
    return IR_SYM_NONE;
  if (b != hint && lex_is_plain_ident(base, bn) && !visible(pr, b) && !taken(pr, b))
    return b;
  if (!grow_zero(pr, (void **)&pr->next, &pr->capnext, (size_t)b + 1, sizeof *pr->next))
    return IR_SYM_NONE;
  if (pr->next[b] == 0 && !ac_grow(pr->ctx, (void **)&pr->touched, &pr->captouched,
                                   pr->ntouched + 1, sizeof *pr->touched)) {
    fail_oom(pr);
    return IR_SYM_NONE;
  }
  if (pr->next[b] == 0)
    pr->touched[pr->ntouched++] = b;
  for (uint32_t k = pr->next[b] + 1;; k++) {
    char cand[LEX_MAX_IDENT + 1];
    int cn = snprintf(cand, sizeof cand, "%.*s_%u", (int)bn, base, k);
    ir_sym s = intern(pr, cand, (size_t)cn);
    if (!s)
      return IR_SYM_NONE;
    if (!visible(pr, s) && !taken(pr, s)) {
      pr->next[b] = k;
      return s;
    }
  }
}

/* Chooses the names of binders bound together (hints[0..n)), distinct from
 * each other and from `also` (a name bound with them), without binding them. */
static void choose_group(printer *pr, const ir_sym *hints, size_t n, const scope_of *sc,
                         ir_sym also, ir_sym *out) {
  take(pr, also, 1);
  for (size_t i = 0; i < n && !pr->failed; i++) {
    out[i] = choose(pr, hints[i], sc);
    take(pr, out[i], 1);
  }
  for (size_t i = 0; i < n && !pr->failed; i++)
    take(pr, out[i], -1);
  take(pr, also, -1);
}

static void put_sym(printer *pr, ir_sym s) {
  puts_(pr, ir_sym_str(pr->ctx, s));
}

/* A names array of n entries: on the stack when small. */
typedef struct names {
  ir_sym small[16];
  ir_sym *v;
} names;

static ir_sym *names_alloc(printer *pr, names *nm, size_t n) {
  nm->v = n <= 16 ? nm->small : ac_alloc(pr->ctx, n * sizeof *nm->v);
  if (!nm->v)
    fail_oom(pr);
  return nm->v;
}

static void names_free(printer *pr, names *nm) {
  if (nm->v && nm->v != nm->small)
    ac_free(pr->ctx, nm->v);
}

/* ---- literals ---------------------------------------------------------------- */

static bool same_f64(double a, double b) {
  return memcmp(&a, &b, sizeof a) == 0;
}
static bool same_f32(float a, float b) {
  return memcmp(&a, &b, sizeof a) == 0;
}

/* Shortest decimal that reads back as v (as a float when f32). */
static void fmt_float(double v, bool f32, char *out, size_t cap) {
  const char *sign = signbit(v) ? "-" : "";
  if (isnan(v) || isinf(v)) {
    snprintf(out, cap, "%s%s", sign, isnan(v) ? "nan" : "inf");
    return;
  }
  if (f32 && fabs(v) > FLT_MAX)
    f32 = false; /* not an f32 value (malformed IR): show the double as it is */
  char tmp[48], chk[48], dig[24];
  int nd = 0, e10 = 0;
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(tmp, sizeof tmp, "%.*e", prec - 1, v);
    const char *q = tmp;
    nd = 0;
    for (; *q && *q != 'e'; q++)
      if (*q >= '0' && *q <= '9' && nd < 20)
        dig[nd++] = *q;
    e10 = *q ? atoi(q + 1) : 0;
    /* an integer mantissa and no decimal point: read the same in every locale */
    snprintf(chk, sizeof chk, "%s%.*se%d", sign, nd, dig, e10 - (nd - 1));
    bool ok =
        f32 ? same_f32(strtof(chk, NULL), (float)v) && same_f32((float)strtod(chk, NULL), (float)v)
            : same_f64(strtod(chk, NULL), v);
    if (ok)
      break;
  }
  while (nd > 1 && dig[nd - 1] == '0')
    nd--;
  size_t o = 0;
#define OUT(c) (o + 1 < cap ? (void)(out[o++] = (c)) : (void)0)
  for (const char *s = sign; *s; s++)
    OUT(*s);
  if (e10 >= -5 && e10 < 16) {
    if (e10 >= 0) {
      for (int i = 0; i <= e10; i++)
        OUT(i < nd ? dig[i] : '0');
      OUT('.');
      if (nd > e10 + 1)
        for (int i = e10 + 1; i < nd; i++)
          OUT(dig[i]);
      else
        OUT('0');
    } else {
      OUT('0');
      OUT('.');
      for (int i = 0; i < -e10 - 1; i++)
        OUT('0');
      for (int i = 0; i < nd; i++)
        OUT(dig[i]);
    }
    out[o] = 0;
  } else {
    OUT(dig[0]);
    if (nd > 1) {
      OUT('.');
      for (int i = 1; i < nd; i++)
        OUT(dig[i]);
    }
    out[o] = 0;
    snprintf(out + o, cap - o, "e%d", e10);
  }
#undef OUT
}

enum { LIT_NUMBER, LIT_CAST, LIT_BOOL };

/* Writes the text of literal n to buf; returns how it reads (a plain number,
 * a conversion, a bool). */
static int lit_text(printer *pr, const ir_node *n, char *buf, size_t cap) {
  ac_scalar sc;
  if (n->type == IR_TY_NONE) {
    if (n->flags & IR_F_FLOATLIT)
      fmt_float(n->lit.f, false, buf, cap);
    else
      snprintf(buf, cap, "%s%llu", (n->flags & IR_F_NEG) ? "-" : "", (unsigned long long)n->lit.u);
    return LIT_NUMBER;
  }
  if (!ir_ty_is_scalar(pr->ctx, n->type, &sc)) {
    fail(pr, n->loc, "cannot print a literal whose type is not a scalar");
    snprintf(buf, cap, "0");
    return LIT_NUMBER;
  }
  const char *suffix = (n->flags & IR_F_CTX) ? "" : ac_scalar_name(sc);
  if (sc == AC_BOOL) {
    snprintf(buf, cap, "%s", n->lit.u ? "true" : "false");
    return LIT_BOOL;
  }
  if (sc == AC_F32 || sc == AC_F64) {
    char num[64];
    fmt_float(n->lit.f, sc == AC_F32, num, sizeof num);
    if (*suffix && (isinf(n->lit.f) || isnan(n->lit.f))) {
      snprintf(buf, cap, "%s(%s)", suffix, num);
      return LIT_CAST;
    }
    snprintf(buf, cap, "%s%s", num, suffix);
    return LIT_NUMBER;
  }
  unsigned bits = 8 * (unsigned)ac_scalar_size(sc);
  uint64_t mask = bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1, x = n->lit.u & mask;
  if (sc >= AC_I8 && sc <= AC_I64 && (x >> (bits - 1)))
    snprintf(buf, cap, "-%llu%s", (unsigned long long)((~x & mask) + 1), suffix);
  else
    snprintf(buf, cap, "%llu%s", (unsigned long long)x, suffix);
  return LIT_NUMBER;
}

/* ---- expressions ----------------------------------------------------------------- */

/* Binding levels: what an operand position requires of the node there. */
enum { LV_EXPR = 0, LV_PREFIX = 10, LV_POSTFIX = 11, LV_NEVER = 12 };

static int level(printer *pr, ir_ref e) {
  const ir_node *n = node(pr, e);
  switch (ir_ops[n->op].syntax) {
  case SX_INFIX:
    return ir_ops[n->op].prec;
  case SX_PREFIX:
    return LV_PREFIX;
  default:
    break;
  }
  if (n->op == IR_IF || n->op == IR_LOOP || n->op == IR_REC || n->op == IR_LAM)
    return LV_EXPR;
  if (n->op == IR_LIT) {
    char buf[80];
    return lit_text(pr, n, buf, sizeof buf) == LIT_NUMBER && buf[0] == '-' ? LV_PREFIX : LV_POSTFIX;
  }
  return LV_POSTFIX;
}

/* Checks the number of children (and the attributes that index things) so
 * that printing never reads outside the node. */
static bool shape_ok(printer *pr, ir_ref e) {
  const ir_node *n = node(pr, e);
  uint32_t k = n->nkids;
  bool ok;
  if (n->op >= IR_NUM_OPS)
    ok = false;
  else if (ir_ops[n->op].syntax == SX_INFIX || ir_ops[n->op].syntax == SX_PREFIX ||
           (ir_ops[n->op].syntax == SX_CALL && ir_ops[n->op].nkids >= 0))
    ok = k == (uint32_t)ir_ops[n->op].nkids;
  else {
    switch ((ir_op)n->op) {
    case IR_VAR:
    case IR_LIT:
      ok = k == 0;
      break;
    case IR_FNREF:
      ok = k == 0 && n->attr >= 0 && (uint64_t)n->attr < pr->m->nfuncs;
      break;
    case IR_CALL:
      ok = n->attr >= 0 && (uint64_t)n->attr < pr->m->nfuncs;
      break;
    case IR_PROJ:
    case IR_CAST:
      ok = k == 1;
      break;
    case IR_LAM:
      ok = k == 1 && n->attr >= 0 && n->attr <= UINT32_MAX;
      break;
    case IR_LET:
      ok = k == 2;
      break;
    case IR_LETTUP:
      ok = k == 2 && n->attr >= 0 && n->attr <= UINT32_MAX;
      break;
    case IR_IF:
      ok = k == 3;
      break;
    case IR_INDEX:
      ok = k >= 1;
      break;
    case IR_LOOP:
      ok = k >= 2;
      for (uint32_t i = k - 2; ok && i < k; i++) {
        ir_ref l = ir_kid(pr->m, e, i);
        ok = l && l < pr->m->nnodes && node(pr, l)->op == IR_LAM && node(pr, l)->nkids == 1 &&
             node(pr, l)->attr == (int64_t)(k - 2);
      }
      break;
    case IR_REC:
      ok = n->attr >= 1 && n->attr <= PARSE_MAX_RANK && k == 2 * (uint32_t)n->attr + 1;
      break;
    case IR_STENCIL:
      ok = (k == 2 && n->attr >= AC_BOUNDARY_CLAMP && n->attr <= AC_BOUNDARY_WRAP) ||
           (k == 3 && n->attr == AC_BOUNDARY_CONST);
      break;
    case IR_ARRLIT:
      ok = n->attr >= 1 && n->attr <= PARSE_MAX_RANK &&
           (size_t)n->aux + (size_t)n->attr <= pr->m->nints;
      if (ok) {
        uint64_t prod = 1;
        for (int64_t i = 0; i < n->attr && ok; i++) {
          int64_t x = pr->m->ints[n->aux + i];
          ok = x >= 0 && (x == 0 || prod <= UINT32_MAX / (uint64_t)x);
          prod *= (uint64_t)(x < 0 ? 0 : x);
        }
        ok = ok && prod == k;
      }
      break;
    default: /* TUPLE and the variadic builtins */
      ok = true;
      break;
    }
  }
  for (uint32_t i = 0; ok && i < k; i++) {
    ir_ref kid = ir_kid(pr->m, e, i);
    ok = kid != IR_NONE && kid < pr->m->nnodes;
  }
  if (!ok)
    fail(pr, n->loc, "cannot print a malformed %s node",
         n->op < IR_NUM_OPS ? ir_ops[n->op].name : "unknown");
  return ok;
}

static void print_expr(printer *pr, ir_ref e, unsigned ind, int need);
static void print_body(printer *pr, ir_ref e, unsigned ind);

/* Counts one level of printing recursion; refuses trees deeper than the
 * parser would build. Matched by pr->depth--. */
static bool deeper(printer *pr, ir_ref e) {
  if (++pr->depth > PARSE_MAX_DEPTH)
    fail(pr, node(pr, e)->loc, "expression too deep to print (more than %d nested operations)",
         PARSE_MAX_DEPTH);
  return !pr->failed;
}

/* { e } on one line, or over several when e starts with a let. */
static void print_block(printer *pr, ir_ref e, unsigned ind) {
  if (is_let(pr, e)) {
    puts_(pr, "{\n");
    print_body(pr, e, ind + 2);
    indent(pr, ind);
    putc_(pr, '}');
  } else {
    puts_(pr, "{ ");
    print_expr(pr, e, ind, LV_EXPR);
    puts_(pr, " }");
  }
}

/* Children from..end of e between `open` and `close`, separated by ", ". */
static void print_list(printer *pr, ir_ref e, uint32_t from, unsigned ind, char open, char close) {
  putc_(pr, open);
  for (uint32_t i = from; i < node(pr, e)->nkids; i++) {
    if (i > from)
      puts_(pr, ", ");
    print_expr(pr, ir_kid(pr->m, e, i), ind, LV_EXPR);
  }
  putc_(pr, close);
}

static void print_args(printer *pr, ir_ref e, uint32_t from, unsigned ind) {
  print_list(pr, e, from, ind, '(', ')');
}

/* if c { a } else if d { b } else { c }: the chain is printed in a loop. */
static void print_if(printer *pr, ir_ref e, unsigned ind) {
  unsigned extra = 0;
  for (;;) {
    puts_(pr, "if ");
    print_expr(pr, ir_kid(pr->m, e, 0), ind, LV_EXPR);
    putc_(pr, ' ');
    print_block(pr, ir_kid(pr->m, e, 1), ind);
    puts_(pr, " else ");
    e = ir_kid(pr->m, e, 2);
    if (pr->failed || node(pr, e)->op != IR_IF)
      break;
    extra++;
    if (!deeper(pr, e) || !shape_ok(pr, e))
      break;
  }
  if (!pr->failed)
    print_block(pr, e, ind);
  pr->depth -= extra;
}

static void print_lambda(printer *pr, ir_ref e, unsigned ind) {
  const ir_node *n = node(pr, e);
  size_t k = (size_t)n->attr;
  names h, c;
  if (!names_alloc(pr, &h, k) || !names_alloc(pr, &c, k)) {
    names_free(pr, &h);
    return;
  }
  for (size_t i = 0; i < k; i++)
    h.v[i] = hint_at(pr, n->names, (uint32_t)i);
  scope_of sc = {{ir_kid(pr->m, e, 0), IR_NONE}, {(uint32_t)k, 0}};
  choose_group(pr, h.v, k, &sc, IR_SYM_NONE, c.v);
  putc_(pr, '|');
  for (size_t i = 0; i < k; i++) {
    if (i)
      puts_(pr, ", ");
    put_sym(pr, c.v[i]);
    bind(pr, c.v[i]);
  }
  puts_(pr, "| ");
  ir_ref body = ir_kid(pr->m, e, 0);
  if (is_let(pr, body))
    print_block(pr, body, ind);
  else
    print_expr(pr, body, ind, LV_EXPR);
  unbind(pr, k);
  names_free(pr, &h);
  names_free(pr, &c);
}

static void print_loop(printer *pr, ir_ref e, unsigned ind) {
  const ir_node *n = node(pr, e);
  uint32_t k = n->nkids - 2;
  ir_ref cond = ir_kid(pr->m, e, k), step = ir_kid(pr->m, e, k + 1);
  names h, c;
  if (!names_alloc(pr, &h, k) || !names_alloc(pr, &c, k)) {
    names_free(pr, &h);
    return;
  }
  for (uint32_t i = 0; i < k; i++) {
    h.v[i] = hint_at(pr, node(pr, cond)->names, i);
    if (h.v[i] == IR_SYM_NONE)
      h.v[i] = hint_at(pr, node(pr, step)->names, i);
  }
  scope_of sc = {{ir_kid(pr->m, cond, 0), ir_kid(pr->m, step, 0)}, {k, k}};
  choose_group(pr, h.v, k, &sc, IR_SYM_NONE, c.v);
  puts_(pr, "loop (");
  for (uint32_t i = 0; i < k; i++) {
    if (i)
      puts_(pr, ", ");
    put_sym(pr, c.v[i]);
    puts_(pr, " = ");
    print_expr(pr, ir_kid(pr->m, e, i), ind, LV_EXPR);
  }
  puts_(pr, ") while ");
  for (uint32_t i = 0; i < k; i++)
    bind(pr, c.v[i]);
  print_expr(pr, ir_kid(pr->m, cond, 0), ind, LV_EXPR);
  putc_(pr, ' ');
  print_block(pr, ir_kid(pr->m, step, 0), ind);
  unbind(pr, k);
  names_free(pr, &h);
  names_free(pr, &c);
}

/* Whether variable j occurs in e (bounded like the printer's recursion). */
static bool occurs(printer *pr, ir_ref e, uint32_t j, unsigned depth) {
  if (e == IR_NONE || e >= pr->m->nnodes || depth > PARSE_MAX_DEPTH)
    return true; /* the printer itself will report the problem */
  const ir_node *n = node(pr, e);
  if (n->op == IR_VAR)
    return n->attr == (int64_t)j;
  for (uint32_t i = 0; i < n->nkids; i++)
    if (occurs(pr, ir_kid(pr->m, e, i), j + ir_binders(pr->m, e, i), depth + 1))
      return true;
  return false;
}

/* rec [d] (i in lo..=hi, ...) -> T { body }. In the `let d = rec` form the
 * let has chosen the name `self` and the rec prints no name of its own. */
static void print_rec(printer *pr, ir_ref e, unsigned ind, ir_sym self, bool let_form) {
  const ir_node *n = node(pr, e);
  uint32_t dims = (uint32_t)n->attr;
  ir_ref body = ir_kid(pr->m, e, 2 * dims);
  ir_type elem = IR_TY_NONE;
  uint32_t rank = 0;
  if (!ir_ty_array_view(pr->ctx, n->type, &elem, &rank) || rank != dims) {
    fail(pr, n->loc, "cannot print a rec without its array type");
    return;
  }
  scope_of sc = {{body, IR_NONE}, {dims + 1, 0}};
  if (!let_form) {
    ir_sym h = hint_at(pr, n->names, 0);
    bool named = *ir_sym_str(pr->ctx, h) || occurs(pr, body, dims, 0);
    self = named ? choose(pr, h, &sc) : IR_SYM_NONE;
  }
  ir_sym hints[PARSE_MAX_RANK] = {0}, idx[PARSE_MAX_RANK];
  for (uint32_t k = 0; k < dims; k++)
    hints[k] = hint_at(pr, n->names, k + 1);
  choose_group(pr, hints, dims, &sc, self, idx);
  puts_(pr, "rec ");
  if (!let_form && self != IR_SYM_NONE) {
    put_sym(pr, self);
    putc_(pr, ' ');
  }
  putc_(pr, '(');
  for (uint32_t k = 0; k < dims; k++) {
    if (k)
      puts_(pr, ", ");
    put_sym(pr, idx[k]);
    puts_(pr, " in ");
    print_expr(pr, ir_kid(pr->m, e, 2 * k), ind, LV_EXPR);
    puts_(pr, k < 64 && ((n->lit.u >> k) & 1) ? ".." : "..=");
    print_expr(pr, ir_kid(pr->m, e, 2 * k + 1), ind, LV_EXPR);
  }
  putc_(pr, ')');
  if (n->flags & IR_F_SCHED) { /* the schedule asked for (by) */
    if (n->aux == 0 || (size_t)n->aux + dims > pr->m->nints) {
      fail(pr, n->loc, "cannot print a rec whose requested schedule is missing");
      return;
    }
    puts_(pr, " by ");
    ir_sched_print(pr->out, dims, pr->m->ints + n->aux);
  }
  puts_(pr, " -> ");
  ir_ty_print(pr->ctx, elem, pr->out);
  puts_(pr, " {\n");
  bind(pr, self);
  for (uint32_t k = 0; k < dims; k++)
    bind(pr, idx[k]);
  print_body(pr, body, ind + 2);
  unbind(pr, dims + 1);
  indent(pr, ind);
  putc_(pr, '}');
}

/* [..] of any rank, from the extents in m->ints. */
static void print_arrlit(printer *pr, ir_ref e, unsigned ind, uint32_t dim, uint32_t *pos) {
  const ir_node *n = node(pr, e);
  int64_t ext = pr->m->ints[n->aux + dim];
  putc_(pr, '[');
  for (int64_t i = 0; i < ext && !pr->failed; i++) {
    if (i)
      puts_(pr, ", ");
    if (dim + 1 < (uint32_t)n->attr) {
      print_arrlit(pr, e, ind, dim + 1, pos);
      continue;
    }
    ir_ref k = ir_kid(pr->m, e, (*pos)++);
    /* a literal element would read as one more dimension */
    print_expr(pr, k, ind, node(pr, k)->op == IR_ARRLIT ? LV_NEVER : LV_EXPR);
  }
  putc_(pr, ']');
}

static void print_var(printer *pr, const ir_node *n) {
  if (n->attr < 0 || (uint64_t)n->attr >= pr->nscope) {
    fail(pr, n->loc, "cannot print variable %lld: it is not bound here", (long long)n->attr);
    return;
  }
  ir_sym s = pr->scope[pr->nscope - 1 - (size_t)n->attr];
  if (s == IR_SYM_NONE)
    fail(pr, n->loc, "cannot print a reference to an unnamed binder");
  put_sym(pr, s);
}

static void print_inner(printer *pr, ir_ref e, unsigned ind) {
  const ir_node *n = node(pr, e);
  ir_op op = (ir_op)n->op;
  char buf[80];
  switch (ir_ops[op].syntax) {
  case SX_INFIX: {
    int prec = ir_ops[op].prec;
    bool cmp = ir_ops[op].typing == TC_CMP || ir_ops[op].typing == TC_ORD;
    print_expr(pr, ir_kid(pr->m, e, 0), ind, cmp ? prec + 1 : prec);
    putc_(pr, ' ');
    puts_(pr, ir_ops[op].spelling);
    putc_(pr, ' ');
    print_expr(pr, ir_kid(pr->m, e, 1), ind, prec + 1);
    return;
  }
  case SX_PREFIX: {
    ir_ref k = ir_kid(pr->m, e, 0);
    bool numlit = op == IR_NEG && node(pr, k)->op == IR_LIT &&
                  lit_text(pr, node(pr, k), buf, sizeof buf) == LIT_NUMBER;
    puts_(pr, ir_ops[op].spelling);
    print_expr(pr, k, ind, numlit ? LV_NEVER : LV_PREFIX);
    return;
  }
  default:
    break;
  }
  switch (op) {
  case IR_VAR:
    print_var(pr, n);
    return;
  case IR_LIT:
    lit_text(pr, n, buf, sizeof buf);
    puts_(pr, buf);
    return;
  case IR_TUPLE:
    if (n->nkids == 1) { /* not a valid tuple: printed so that it cannot read back as one */
      putc_(pr, '(');
      print_expr(pr, ir_kid(pr->m, e, 0), ind, LV_EXPR);
      puts_(pr, ",)");
    } else {
      print_args(pr, e, 0, ind);
    }
    return;
  case IR_PROJ:
  case IR_INDEX: {
    ir_ref k = ir_kid(pr->m, e, 0);
    /* `5.0` would read as a float, and a literal operand is rare: always (5) */
    print_expr(pr, k, ind, node(pr, k)->op == IR_LIT ? LV_NEVER : LV_POSTFIX);
    if (op == IR_PROJ)
      ir_buf_printf(pr->out, ".%lld", (long long)n->attr);
    else
      print_list(pr, e, 1, ind, '[', ']');
    return;
  }
  case IR_LET:
  case IR_LETTUP:
    puts_(pr, "{\n");
    print_body(pr, e, ind + 2);
    indent(pr, ind);
    putc_(pr, '}');
    return;
  case IR_IF:
    print_if(pr, e, ind);
    return;
  case IR_CALL:
    put_sym(pr, pr->m->funcs[n->attr].name);
    print_args(pr, e, 0, ind);
    return;
  case IR_FNREF:
    put_sym(pr, pr->m->funcs[n->attr].name);
    return;
  case IR_LAM:
    print_lambda(pr, e, ind);
    return;
  case IR_CAST: {
    ac_scalar sc;
    if (!ir_ty_is_scalar(pr->ctx, n->type, &sc)) {
      fail(pr, n->loc, "cannot print a conversion to a type that is not a scalar");
      return;
    }
    puts_(pr, ac_scalar_name(sc));
    print_args(pr, e, 0, ind);
    return;
  }
  case IR_LOOP:
    print_loop(pr, e, ind);
    return;
  case IR_ARRLIT: {
    uint32_t pos = 0;
    print_arrlit(pr, e, ind, 0, &pos);
    return;
  }
  case IR_REC:
    print_rec(pr, e, ind, IR_SYM_NONE, false);
    return;
  case IR_STENCIL: {
    static const char *const kw[] = {"clamp", "mirror", "wrap"};
    puts_(pr, "stencil(");
    print_expr(pr, ir_kid(pr->m, e, 0), ind, LV_EXPR);
    puts_(pr, ", ");
    if (n->attr == AC_BOUNDARY_CONST)
      print_expr(pr, ir_kid(pr->m, e, 2), ind, LV_EXPR);
    else
      puts_(pr, kw[n->attr]);
    puts_(pr, ", ");
    print_expr(pr, ir_kid(pr->m, e, 1), ind, LV_EXPR);
    putc_(pr, ')');
    return;
  }
  default: /* the other builtins: name(args) */
    puts_(pr, ir_ops[op].spelling);
    print_args(pr, e, 0, ind);
    return;
  }
}

static void print_expr(printer *pr, ir_ref e, unsigned ind, int need) {
  if (pr->failed)
    return;
  if (e == IR_NONE || e >= pr->m->nnodes) {
    fail(pr, (ir_loc){0, 0}, "cannot print a missing expression");
    return;
  }
  if (deeper(pr, e) && shape_ok(pr, e)) {
    bool paren = level(pr, e) < need;
    if (paren)
      putc_(pr, '(');
    print_inner(pr, e, ind);
    if (paren)
      putc_(pr, ')');
  }
  pr->depth--;
}

/* `: T` after a let's pattern when the program wrote the type. */
static void put_let_type(printer *pr, const ir_node *n) {
  ir_type t = ir_let_type(pr->m, n);
  if (t == IR_TY_NONE)
    return;
  puts_(pr, ": ");
  ir_ty_print(pr->ctx, t, pr->out);
}

/* The statements of a block (its lets, one per line) and its result. */
static void print_body(printer *pr, ir_ref e, unsigned ind) {
  size_t bound = 0;
  unsigned lets = 0;
  while (!pr->failed && e && e < pr->m->nnodes && is_let(pr, e)) {
    lets++;
    if (!deeper(pr, e) || !shape_ok(pr, e))
      break;
    const ir_node *n = node(pr, e);
    ir_ref rhs = ir_kid(pr->m, e, 0);
    indent(pr, ind);
    puts_(pr, "let ");
    if (n->op == IR_LET) {
      bool rec = node(pr, rhs)->op == IR_REC;
      if (rec && (!deeper(pr, rhs) || !shape_ok(pr, rhs))) {
        pr->depth--;
        break;
      }
      ir_sym h = hint_at(pr, n->names, 0);
      if (rec && !*ir_sym_str(pr->ctx, h))
        h = hint_at(pr, node(pr, rhs)->names, 0);
      scope_of sc = {
          {ir_kid(pr->m, e, 1), rec ? ir_kid(pr->m, rhs, node(pr, rhs)->nkids - 1) : IR_NONE},
          {1, rec ? (uint32_t)node(pr, rhs)->attr + 1 : 0}};
      ir_sym s = choose(pr, h, &sc);
      put_sym(pr, s);
      put_let_type(pr, n);
      puts_(pr, " = ");
      if (rec)
        print_rec(pr, rhs, ind, s, true);
      else
        print_expr(pr, rhs, ind, LV_EXPR);
      pr->depth -= rec;
      bind(pr, s);
      bound++;
    } else {
      size_t k = (size_t)n->attr;
      names h, c;
      if (!names_alloc(pr, &h, k) || !names_alloc(pr, &c, k)) {
        names_free(pr, &h);
        break;
      }
      for (size_t i = 0; i < k; i++)
        h.v[i] = hint_at(pr, n->names, (uint32_t)i);
      scope_of sc = {{ir_kid(pr->m, e, 1), IR_NONE}, {(uint32_t)k, 0}};
      choose_group(pr, h.v, k, &sc, IR_SYM_NONE, c.v);
      putc_(pr, '(');
      for (size_t i = 0; i < k; i++) {
        if (i)
          puts_(pr, ", ");
        put_sym(pr, c.v[i]);
      }
      putc_(pr, ')');
      put_let_type(pr, n);
      puts_(pr, " = ");
      print_expr(pr, rhs, ind, LV_EXPR);
      for (size_t i = 0; i < k; i++)
        bind(pr, c.v[i]);
      bound += k;
      names_free(pr, &h);
      names_free(pr, &c);
    }
    puts_(pr, ";\n");
    e = ir_kid(pr->m, e, 1);
  }
  indent(pr, ind);
  print_expr(pr, e, ind, LV_EXPR);
  putc_(pr, '\n');
  unbind(pr, bound);
  pr->depth -= lets;
}

/* ---- functions and modules ---------------------------------------------------- */

/* A string literal of the text format (lex.c reads it back). */
static void put_string(printer *pr, const char *s) {
  putc_(pr, '"');
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') {
      putc_(pr, '\\');
      putc_(pr, (char)c);
    } else if (c == '\n') {
      puts_(pr, "\\n");
    } else if (c == '\t') {
      puts_(pr, "\\t");
    } else if (c < 0x20 || c == 0x7f || c >= 0x80) {
      char buf[8];
      snprintf(buf, sizeof buf, "\\x%02x", c);
      puts_(pr, buf);
    } else {
      putc_(pr, (char)c);
    }
  }
  putc_(pr, '"');
}

/* The result type of an extern kernel with its extents, one leaf at a
 * time: f32[len(xs)] or (f32[n], i32[n, m]). */
typedef struct kres_acc {
  printer *pr;
  const ir_func *f;
  uint32_t leaf, ext;
} kres_acc;

static void kres_leaf(void *ud, ac_scalar sc, uint32_t rank) {
  kres_acc *a = ud;
  if (a->leaf++)
    puts_(a->pr, ", ");
  puts_(a->pr, ac_scalar_name(sc));
  putc_(a->pr, '[');
  for (uint32_t d = 0; d < rank && a->ext < a->f->nkext; d++) {
    if (d)
      puts_(a->pr, ", ");
    print_expr(a->pr, ir_kernel_extent(a->pr->m, a->f, a->ext++), 0, LV_EXPR);
  }
  putc_(a->pr, ']');
}

static void print_kernel_tail(printer *pr, const ir_func *f) {
  uint32_t nleaves = ir_ty_num_leaves(pr->ctx, f->result);
  kres_acc a = {pr, f, 0, 0};
  if (nleaves != 1)
    putc_(pr, '(');
  ir_ty_leaves(pr->ctx, f->result, kres_leaf, &a);
  if (nleaves != 1)
    putc_(pr, ')');
  if (f->kthreads) {
    puts_(pr, " threads ");
    print_expr(pr, f->kthreads, 0, LV_EXPR);
  }
  if (f->kptx) {
    char buf[32];
    snprintf(buf, sizeof buf, " block %u", f->kblock);
    puts_(pr, buf);
    puts_(pr, f->kptx_file ? " ptx file " : " ptx ");
    put_string(pr, ir_sym_str(pr->ctx, f->kptx));
  }
  if (f->kentry) {
    puts_(pr, " entry ");
    put_string(pr, ir_sym_str(pr->ctx, f->kentry));
  }
  if (f->khost) {
    puts_(pr, " host ");
    put_string(pr, ir_sym_str(pr->ctx, f->khost));
  }
  puts_(pr, ";\n");
}

static void print_fn(printer *pr, const ir_func *f) {
  size_t np = f->nparams;
  bool defined = f->body != IR_NONE && f->body < pr->m->nnodes;
  names h, c;
  if (!names_alloc(pr, &h, np) || !names_alloc(pr, &c, np)) {
    names_free(pr, &h);
    return;
  }
  for (size_t i = 0; i < np; i++)
    h.v[i] = hint_at(pr, f->pnames, (uint32_t)i);
  scope_of sc = {{defined ? f->body : IR_NONE, IR_NONE}, {(uint32_t)np, 0}};
  choose_group(pr, h.v, np, &sc, IR_SYM_NONE, c.v);
  if (f->is_kernel)
    puts_(pr, "extern kernel ");
  else if (f->is_extern)
    puts_(pr, "extern fn ");
  else
    puts_(pr, defined ? "fn " : "// fn ");
  put_sym(pr, f->name);
  putc_(pr, '(');
  for (size_t i = 0; i < np && !pr->failed; i++) {
    if (i)
      puts_(pr, ", ");
    put_sym(pr, c.v[i]);
    bind(pr, c.v[i]);
    puts_(pr, ": ");
    ir_ty_print(pr->ctx, ir_func_param(pr->m, f, (uint32_t)i), pr->out);
  }
  puts_(pr, ") -> ");
  if (f->is_kernel)
    print_kernel_tail(pr, f);
  else if (f->infer_result && !f->result)
    putc_(pr, '_'); /* not checked yet: reparses as the same module */
  else
    ir_ty_print(pr->ctx, f->result, pr->out);
  if (f->is_kernel) {
    /* print_kernel_tail ended the line */
  } else if (f->is_extern) {
    puts_(pr, ";\n");
  } else if (!defined) {
    puts_(pr, " (declared, not defined)\n");
  } else {
    puts_(pr, " {\n");
    print_body(pr, f->body, 2);
    puts_(pr, "}\n");
  }
  unbind(pr, np);
  names_free(pr, &h);
  names_free(pr, &c);
  for (size_t i = 0; i < pr->ntouched; i++)
    pr->next[pr->touched[i]] = 0;
  pr->ntouched = 0;
}

/* Prints functions fns[0..n) of m (all of them, in order, when fns is NULL). */
static ac_status print_funcs(ac_module *m, const uint32_t *fns, size_t n, ir_buf *out,
                             ac_error **err) {
  printer pr;
  memset(&pr, 0, sizeof pr);
  pr.m = m;
  pr.ctx = m->ctx;
  pr.out = out;
  if (m->oom)
    return ir_report(err, NULL, AC_ERR_NOMEM);
  /* a bare function name in argument position means the function unless a
   * local of that name is visible: locals never take function names */
  for (size_t i = 0; i < m->nfuncs; i++)
    show(&pr, m->funcs[i].name, 1);
  for (size_t k = 0; k < n && !pr.failed; k++) {
    if (k)
      putc_(&pr, '\n');
    print_fn(&pr, &m->funcs[fns ? fns[k] : k]);
  }
  ac_free(pr.ctx, pr.scope);
  ac_free(pr.ctx, pr.vis);
  ac_free(pr.ctx, pr.hard);
  ac_free(pr.ctx, pr.next);
  ac_free(pr.ctx, pr.touched);
  if (!pr.failed && out->oom)
    fail_oom(&pr);
  return pr.failed ? ir_report(err, pr.error, pr.status) : AC_OK;
}

ac_status ir_print_module(ac_module *m, ir_buf *out, ac_error **err) {
  return print_funcs(m, NULL, m->nfuncs, out, err);
}

ac_status ir_print_functions(ac_module *m, const uint32_t *fns, size_t n, ir_buf *out,
                             ac_error **err) {
  return print_funcs(m, fns, n, out, err);
}

void ir_sched_print(ir_buf *b, uint32_t n, const int64_t *a) {
  ir_buf_putc(b, '(');
  for (uint32_t k = 0; k < n; k++)
    ir_buf_printf(b, k ? ", %lld" : "%lld", (long long)a[k]);
  ir_buf_putc(b, ')');
}
