/* lib/ir/check.c: the verifier: scoping, types and literal typing.
 *
 * ir_check_module runs on IR from the parser (unsuffixed literals untyped),
 * from the builder (every literal typed) and from passes (fully typed), and
 * gives every node its type: VAR its binder's, LAM and FNREF a TK_FN type.
 * It is idempotent: checking a checked tree again gives the same types, the
 * same literal values and flags, and the same schedules.
 *
 * Typing is bidirectional, as docs/language.md §5 prescribes: a node is
 * either synthesised or checked against an expected type. The expected type
 * reaches literals, the operands of operators whose result has their type
 * (check_ops.c), the branches of `if`, the bodies of `let`, the fields of
 * tuple expressions and the elements of array literals; every other node is
 * synthesised and compared. Without an expected type, operands that must
 * share a type follow the "flexible" rule (chk_share): the first operand that
 * is not a bare literal expression gives its type to the others, so `1 + x`
 * with x: i64 adds i64s. Literals are typed and then
 * normalised in place (integers as 64-bit two's complement, f32 values
 * rounded to float), with IR_F_CTX telling the printer whether the type came
 * from context; a literal already normalised is re-typed from its value, so
 * a second run agrees with the first.
 *
 * Besides types, the verifier rejects what the rest of the compiler must
 * never see: lambdas outside argument positions, stencil windows and rec
 * arrays used other than by indexing, recursion between functions (a cycle
 * in the call graph, reported with its path), and malformed trees from the
 * builder or passes (bad child counts, variables out of scope, trees deeper
 * than CHK_MAX_DEPTH), which become AC_ERR_TYPE "malformed IR" errors rather
 * than crashes. The first error stops the check. Extern functions (§3.3)
 * have no body; only their scalar signature is checked, and calls to them
 * are typed like any call (they cannot take part in recursion: they call
 * nothing the verifier can see).
 *
 * A function whose result is written `_` (docs/language.md §3) has its
 * body synthesised with no expected type, and that type becomes its result.
 * chk_order (check_calls.c) puts such a function before the functions that use it (file
 * order otherwise); once a result is inferred the whole module is checked
 * again against the results, as any later check will check it.
 *
 * Operators and array operations are in check_ops.c, recurrences in
 * check_rec.c, the call graph (the order of checking, cycles) in
 * check_calls.c (see check.h).
 */
#include "check.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- errors ---- */

static bool chk_vfail(chk *c, ir_loc loc, const char *fmt, va_list ap) {
  if (c->st != AC_OK)
    return false;
  c->err = ir_verror(c->ctx, AC_ERR_TYPE, c->m, loc, fmt, ap);
  c->st = c->err ? AC_ERR_TYPE : AC_ERR_NOMEM;
  return false;
}

bool chk_fail_at(chk *c, ir_loc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  chk_vfail(c, loc, fmt, ap);
  va_end(ap);
  return false;
}

bool chk_fail(chk *c, ir_ref r, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  chk_vfail(c, ir_node_get(c->m, r)->loc, fmt, ap);
  va_end(ap);
  return false;
}

bool chk_oom(chk *c) {
  if (c->st == AC_OK)
    c->st = AC_ERR_NOMEM;
  return false;
}

const char *chk_tyname(chk *c, ir_type t) {
  ir_buf *b = &c->names[c->nextname++ % 4];
  b->len = 0;
  if (b->data)
    b->data[0] = 0;
  ir_ty_print(c->ctx, t, b);
  return b->oom ? "?" : ir_buf_cstr(b);
}

/* ---- scopes ---- */

bool chk_push(chk *c, ir_type t, ir_sym name, uint8_t kind) {
  if (!ac_grow(c->ctx, (void **)&c->env, &c->capenv, c->nenv + 1, sizeof *c->env))
    return chk_oom(c);
  c->env[c->nenv++] = (chk_entry){t, name, kind, 0, 0};
  return true;
}

bool chk_push_flex(chk *c, ir_type t, ir_sym name, uint32_t flex) {
  if (!chk_push(c, t, name, ENV_PLAIN))
    return false;
  c->env[c->nenv - 1].flex = flex;
  return true;
}

void chk_pop(chk *c, size_t n) {
  c->nenv -= n <= c->nenv ? n : c->nenv;
}

ir_sym chk_node_name(const chk *c, ir_ref r, uint32_t j) {
  const ir_node *n = ir_node_get(c->m, r);
  if (n->names == 0 || (size_t)n->names + j >= c->m->nsyms)
    return IR_SYM_NONE;
  return c->m->syms[n->names + j];
}

bool chk_edge_add(chk *c, uint32_t callee, ir_loc loc) {
  if (!ac_grow(c->ctx, (void **)&c->edges, &c->capedges, c->nedges + 1, sizeof *c->edges))
    return chk_oom(c);
  c->edges[c->nedges++] = (chk_edge){c->fn, callee, loc};
  return true;
}

ir_type chk_func_result(chk *c, uint32_t fi, ir_ref use) {
  const ir_func *f = &c->m->funcs[fi];
  if (f->result == IR_TY_NONE && f->infer_result) /* chk_order puts callees first */
    chk_fail(c, use,
             "the result type of '%s' is inferred (`-> _`) and not known yet: it is known once "
             "'%s' is finished",
             ir_sym_str(c->ctx, f->name), ir_sym_str(c->ctx, f->name));
  return f->result;
}

bool chk_is_value_type(const chk *c, ir_type t) {
  if (t == IR_TY_NONE)
    return false;
  ir_typeinfo ti = ir_ty_info(c->ctx, t);
  if (ti.kind == TK_SCALAR || ti.kind == TK_ARRAY)
    return true;
  if (ti.kind != TK_TUPLE)
    return false;
  for (uint32_t i = 0; i < ti.n; i++)
    if (!chk_is_value_type(c, ir_ty_info(c->ctx, t).fields[i]))
      return false;
  return true;
}

/* ---- flexible expressions ---- */

static bool is_flex_binop(ir_op op) {
  switch (op) {
  case IR_ADD:
  case IR_SUB:
  case IR_MUL:
  case IR_DIV:
  case IR_REM:
  case IR_BAND:
  case IR_BOR:
  case IR_BXOR:
  case IR_SHL:
  case IR_SHR:
    return true;
  default:
    return false;
  }
}

/* The flexible binding the variable of de Bruijn index k refers to in the
 * environment, or NULL. */
static chk_flex *flex_var_at(const chk *c, uint64_t k) {
  if (k >= c->nenv)
    return NULL;
  uint32_t fx = c->env[c->nenv - 1 - (size_t)k].flex;
  chk_flex *f = fx ? &c->flex[fx - 1] : NULL;
  return f && f->flexible && f->over == IR_TY_NONE ? f : NULL;
}

/* The flexible binding variable r refers to, or NULL (r is well formed). */
static chk_flex *flex_var(const chk *c, ir_ref r) {
  const ir_node *n = ir_node_get(c->m, r);
  return n->attr < 0 ? NULL : flex_var_at(c, (uint64_t)n->attr);
}

/* The bindings of the lets a flexible walk has entered, innermost first:
 * `n` names, the first (de Bruijn index 0) bound to `value` (IR_NONE for the
 * names of a `let (..)` or a typed let, which are not flexible). */
typedef struct flex_scope {
  const struct flex_scope *up;
  ir_ref value;
  uint64_t n;
} flex_scope;

/* Walks a flexible expression; returns false if r is not flexible, else adds
 * the kinds of its literals to *lits. With `vars`, a variable bound to a
 * flexible expression whose type is not inferred yet is flexible too, and so
 * is a block whose value is (`{ let z = 7; z }`: the let's own variable is
 * flexible when its value is). Malformed nodes are not flexible (the type
 * walk reports them); the depth bound guards against cyclic graphs. */
static bool flex_walk_in(const chk *c, ir_ref r, unsigned *lits, unsigned depth, bool vars,
                         const flex_scope *sc) {
  const ac_module *m = c->m;
  if (r == IR_NONE || r >= m->nnodes || depth > CHK_MAX_DEPTH)
    return false;
  const ir_node *n = ir_node_get(m, r);
  if ((size_t)n->kids + n->nkids > m->nkids)
    return false;
  switch ((ir_op)n->op) {
  case IR_LIT:
    if (n->flags & IR_F_SUFFIX)
      return false;
    *lits |= n->flags & IR_F_FLOATLIT ? FLEX_FLOAT : FLEX_INT;
    return true;
  case IR_VAR: {
    if (!vars || n->nkids != 0 || n->attr < 0)
      return false;
    uint64_t k = (uint64_t)n->attr;
    for (; sc; sc = sc->up) {
      if (k < sc->n)
        return k == 0 && sc->value != IR_NONE &&
               flex_walk_in(c, sc->value, lits, depth + 1, vars, sc->up);
      k -= sc->n;
    }
    const chk_flex *f = flex_var_at(c, k);
    if (f)
      *lits |= f->lits;
    return f != NULL;
  }
  case IR_LET:
  case IR_LETTUP: {
    if (!vars || n->nkids != 2 || (n->op == IR_LETTUP && n->attr < 1))
      return false;
    bool plain = n->op == IR_LET && !(n->flags & IR_F_TYPED);
    flex_scope in = {sc, plain ? ir_kid(m, r, 0) : IR_NONE,
                     n->op == IR_LET ? 1 : (uint64_t)n->attr};
    return flex_walk_in(c, ir_kid(m, r, 1), lits, depth + 1, vars, &in);
  }
  case IR_NEG:
    return n->nkids == 1 && flex_walk_in(c, ir_kid(m, r, 0), lits, depth + 1, vars, sc);
  case IR_IF:
    return n->nkids == 3 && flex_walk_in(c, ir_kid(m, r, 1), lits, depth + 1, vars, sc) &&
           flex_walk_in(c, ir_kid(m, r, 2), lits, depth + 1, vars, sc);
  default:
    return is_flex_binop((ir_op)n->op) && n->nkids == 2 &&
           flex_walk_in(c, ir_kid(m, r, 0), lits, depth + 1, vars, sc) &&
           flex_walk_in(c, ir_kid(m, r, 1), lits, depth + 1, vars, sc);
  }
}

static bool flex_walk(const chk *c, ir_ref r, unsigned *lits, unsigned depth, bool vars) {
  return flex_walk_in(c, r, lits, depth, vars, NULL);
}

/* Whether some part of r's value is flexible: r itself, a field of a tuple
 * expression, the value of a block or of either branch of an `if`. Such an
 * operand is synthesised last among operands that share a type. */
static bool flex_part(const chk *c, ir_ref r, unsigned depth, const flex_scope *sc) {
  unsigned lits = 0;
  if (r == IR_NONE || r >= c->m->nnodes || depth > CHK_MAX_DEPTH)
    return false;
  if (flex_walk_in(c, r, &lits, depth, true, sc))
    return true;
  const ir_node *n = ir_node_get(c->m, r);
  if ((size_t)n->kids + n->nkids > c->m->nkids)
    return false;
  switch ((ir_op)n->op) {
  case IR_TUPLE:
    for (uint32_t i = 0; i < n->nkids; i++)
      if (flex_part(c, ir_kid(c->m, r, i), depth + 1, sc))
        return true;
    return false;
  case IR_IF:
    return n->nkids == 3 && (flex_part(c, ir_kid(c->m, r, 1), depth + 1, sc) ||
                             flex_part(c, ir_kid(c->m, r, 2), depth + 1, sc));
  case IR_LET:
  case IR_LETTUP: {
    if (n->nkids != 2 || (n->op == IR_LETTUP && n->attr < 1))
      return false;
    bool plain = n->op == IR_LET && !(n->flags & IR_F_TYPED);
    flex_scope in = {sc, plain ? ir_kid(c->m, r, 0) : IR_NONE,
                     n->op == IR_LET ? 1 : (uint64_t)n->attr};
    return flex_part(c, ir_kid(c->m, r, 1), depth + 1, &in);
  }
  default:
    return false;
  }
}

bool chk_flexible(const chk *c, ir_ref r) {
  unsigned lits = 0;
  return flex_walk(c, r, &lits, 0, true);
}

/* Literal kinds of r if r is flexible without counting variables: index,
 * shape and conversion positions do not give a variable its type (`let k =
 * 300; u8(k)` converts the i32 300). */
unsigned chk_flex_lits(const chk *c, ir_ref r) {
  unsigned lits = 0;
  return flex_walk(c, r, &lits, 0, false) ? lits : 0;
}

/* ---- flexible bindings (check.h: chk_flex) ---- */

void chk_fix_lits(chk *c, ir_ref r, unsigned depth) {
  const ac_module *m = c->m;
  if (r == IR_NONE || r >= m->nnodes || depth > CHK_MAX_DEPTH)
    return;
  ir_node *n = ir_node_get(m, r);
  if ((size_t)n->kids + n->nkids > m->nkids)
    return;
  if (n->op == IR_LIT) {
    if (n->type != IR_TY_NONE)
      n->flags = (uint16_t)((n->flags | IR_F_SUFFIX) & ~IR_F_CTX);
  } else if (n->op == IR_NEG || is_flex_binop((ir_op)n->op)) {
    for (uint32_t i = 0; i < n->nkids; i++)
      chk_fix_lits(c, ir_kid(m, r, i), depth + 1);
  } else if (n->op == IR_IF && n->nkids == 3) {
    chk_fix_lits(c, ir_kid(m, r, 1), depth + 1);
    chk_fix_lits(c, ir_kid(m, r, 2), depth + 1);
  }
}

/* True if a literal of kinds `lits` may take type t (as infer_lit allows). */
static bool lits_fit(const chk *c, unsigned lits, ir_type t) {
  ac_scalar sc;
  if (!ir_ty_is_scalar(c->ctx, t, &sc) || sc == AC_BOOL)
    return false;
  return !(lits & FLEX_FLOAT) || sc == AC_F32 || sc == AC_F64 || sc == AC_PROB;
}

/* The entry of slot `slot` of binder r (which has nslots names), made on
 * first use when `make`; NULL if absent (or out of memory, recorded). */
static chk_flex *flex_entry(chk *c, ir_ref r, uint32_t slot, uint32_t nslots, bool make) {
  if (r >= c->m->nnodes || slot >= nslots)
    return NULL;
  if (!c->flexof) {
    if (!make)
      return NULL;
    c->flexof = ac_alloc(c->ctx, c->m->nnodes * sizeof *c->flexof);
    if (!c->flexof)
      return chk_oom(c), NULL;
    memset(c->flexof, 0, c->m->nnodes * sizeof *c->flexof);
  }
  if (!c->flexof[r]) {
    if (!make)
      return NULL;
    if (!ac_grow(c->ctx, (void **)&c->flex, &c->capflex, c->nflex + nslots, sizeof *c->flex))
      return chk_oom(c), NULL;
    for (uint32_t i = 0; i < nslots; i++)
      c->flex[c->nflex + i] = (chk_flex){.binder = r, .slot = i, .value = IR_NONE};
    c->flexof[r] = (uint32_t)c->nflex + 1;
    c->nflex += nslots;
  }
  chk_flex *f = &c->flex[c->flexof[r] - 1 + slot];
  return f->binder == r && f->slot == slot ? f : NULL;
}

/* Types value v bound as slot `slot` of binder r: with the type an earlier
 * pass inferred if there is one, else synthesised, remembering in *fx
 * whether it is flexible (1 + the entry's index, 0 if not). */
static ir_type bind_value(chk *c, ir_ref r, uint32_t slot, uint32_t nslots, ir_ref v, uint32_t *fx) {
  unsigned lits = 0;
  bool flexible = flex_walk(c, v, &lits, 0, true);
  chk_flex *f = flex_entry(c, r, slot, nslots, flexible);
  *fx = 0;
  if (!f)
    return c->st == AC_OK ? chk_synth(c, v) : IR_TY_NONE;
  *fx = (uint32_t)(f - c->flex) + 1;
  f->value = v;
  if (f->over != IR_TY_NONE) {
    ir_type over = f->over; /* checking v may move c->flex */
    f->flexible = false;
    return chk_check(c, v, over) ? over : IR_TY_NONE;
  }
  f->flexible = flexible;
  f->lits = (uint8_t)lits;
  f->pending = false;
  f->cur = IR_TY_NONE;
  ir_type t = chk_synth(c, v);
  c->flex[*fx - 1].cur = t;
  if (t || !flexible || c->st != AC_ERR_TYPE || c->flexfail)
    return t;
  /* `let x = 3000000000` fails as an i32 but is fine as the i64 a use may
   * need: the error waits for the end of the pass (flex_use) */
  f = &c->flex[*fx - 1];
  f->pending = true;
  f->cur = lits & FLEX_FLOAT ? c->t_f64 : c->t_i32;
  if (!c->pend)
    c->pend = c->err;
  else
    ac_error_destroy(c->err);
  c->err = NULL;
  c->st = AC_OK;
  return lits & FLEX_FLOAT ? c->t_f64 : c->t_i32;
}

/* Two uses need types a and b of binding f: an error at its value. */
static bool flex_conflict(chk *c, const chk_flex *f, ir_type a, ir_loc aloc, ir_type b, ir_loc bloc) {
  /* a loop's variables are named by its step lambda */
  const ir_node *bn = ir_node_get(c->m, f->binder);
  ir_sym name = bn->op == IR_LOOP ? chk_node_name(c, ir_kid(c->m, f->binder, bn->nkids - 1), f->slot)
                                  : chk_node_name(c, f->binder, f->slot);
  const char *as = chk_tyname(c, a), *bs = chk_tyname(c, b);
  c->flexfail = true;
  return chk_fail(c, f->value,
                  "cannot infer the type of '%s': it is used as %s at %u:%u and as %s at %u:%u",
                  name != IR_SYM_NONE ? ir_sym_str(c->ctx, name) : "?", as, aloc.line, aloc.col,
                  bs, bloc.line, bloc.col);
}

/* A use at loc needs type t of flexible binding f: recorded for the next
 * pass. False (and an error at the literal) when another use needs another
 * type. */
static bool flex_want(chk *c, chk_flex *f, ir_type t, ir_loc loc) {
  if (f->want != IR_TY_NONE && f->want != t)
    return flex_conflict(c, f, f->want, f->wantloc, t, loc);
  f->want = t;
  f->wantloc = loc;
  c->flexnew |= t != f->cur || f->pending;
  return true;
}

/* Variable r, of type t so far, checked against `expect`: if it is bound to
 * a flexible expression that can take that type, the use records it and the
 * variable is taken to have it for the rest of this pass. */
static ir_type flex_use(chk *c, ir_ref r, ir_type t, ir_type expect) {
  chk_flex *f = flex_var(c, r);
  if (!f || c->soft || !lits_fit(c, f->lits, expect))
    return t;
  return flex_want(c, f, expect, ir_node_get(c->m, r)->loc) ? expect : IR_TY_NONE;
}

/* After a pass: the types uses needed become the bindings' types. True if
 * any changed, so that the function must be checked again. */
static bool flex_commit(chk *c) {
  bool changed = false;
  for (size_t i = 0; i < c->nflex; i++) {
    chk_flex *f = &c->flex[i];
    if (f->want != IR_TY_NONE && f->over == IR_TY_NONE && (f->want != f->cur || f->pending)) {
      f->over = f->want;
      f->overloc = f->wantloc;
      changed = true;
    }
    f->want = IR_TY_NONE;
  }
  return changed;
}

/* ---- literals ---- */

/* A literal's value independent of its representation: before checking the
 * parser stores a magnitude and a sign flag, after checking the value is
 * normalised to the literal's type. */
typedef struct rawlit {
  bool isfloat; /* written as a float literal */
  bool neg;     /* integer: negative */
  uint64_t mag; /* integer: magnitude */
  double f;     /* float: value */
} rawlit;

static rawlit lit_raw(const chk *c, const ir_node *n) {
  rawlit v = {0};
  v.isfloat = (n->flags & IR_F_FLOATLIT) != 0;
  if (v.isfloat) {
    v.f = n->lit.f;
    return v;
  }
  ac_scalar sc;
  if (n->type == IR_TY_NONE || !ir_ty_is_scalar(c->ctx, n->type, &sc)) {
    v.mag = n->lit.u;
    v.neg = (n->flags & IR_F_NEG) != 0 && v.mag != 0;
  } else if (sc == AC_F32 || sc == AC_F64 || sc == AC_PROB) {
    /* an integer literal typed as a float (or a prob, §6.7) earlier: its
     * value is integral */
    double d = n->lit.f;
    v.neg = d < 0;
    d = fabs(d);
    v.mag = d >= 18446744073709551616.0 ? UINT64_MAX : d >= 0 ? (uint64_t)d : 0;
  } else if (sc >= AC_I8 && sc <= AC_I64) {
    v.neg = n->lit.i < 0;
    v.mag = v.neg ? 0 - n->lit.u : n->lit.u;
  } else {
    v.mag = n->lit.u;
  }
  return v;
}

static unsigned scalar_bits(ac_scalar sc) {
  return (unsigned)ac_scalar_size(sc) * 8;
}
static bool scalar_signed(ac_scalar sc) {
  return sc >= AC_I8 && sc <= AC_I64;
}

/* The shortest %g spelling of d that reads back as d, for messages. */
static void fmt_double(char *buf, size_t size, double d) {
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(buf, size, "%.*g", prec, d);
    if (strtod(buf, NULL) == d)
      return;
  }
}

/* Largest finite double that rounds to a finite float (halfway to 2^128
 * rounds to even, which is infinity). */
#define F32_OVERFLOW 0x1.ffffffp127

/* Gives literal n (raw value v) the scalar type sc and stores the value
 * normalised; reports values that do not fit. */
static bool lit_store(chk *c, ir_ref r, rawlit v, ac_scalar sc) {
  ir_node *n = ir_node_get(c->m, r);
  const char *tn = ac_scalar_name(sc);
  if (sc == AC_F32 || sc == AC_F64 || sc == AC_PROB) {
    double d = v.isfloat ? v.f : v.mag == 0 ? 0.0 : v.neg ? -(double)v.mag : (double)v.mag;
    if (sc == AC_PROB && d < 0) { /* a prob literal holds the probability until erased */
      char num[32];
      fmt_double(num, sizeof num, d);
      return chk_fail(c, r, "a probability cannot be negative: %s as prob", num);
    }
    if (sc == AC_F32) {
      if (isfinite(d) && fabs(d) >= F32_OVERFLOW) {
        char num[32];
        fmt_double(num, sizeof num, d);
        return chk_fail(c, r, "float literal %s out of range for f32", num);
      }
      /* below the overflow threshold but above FLT_MAX rounds to FLT_MAX */
      d = isfinite(d) && fabs(d) > FLT_MAX ? copysign((double)FLT_MAX, d) : (double)(float)d;
    }
    n->lit.f = d;
    return true;
  }
  if (sc == AC_BOOL) {
    n->lit.u = v.mag != 0;
    return true;
  }
  unsigned bits = scalar_bits(sc);
  bool ok;
  if (scalar_signed(sc)) {
    uint64_t lim = (uint64_t)1 << (bits - 1); /* |MIN| */
    ok = v.neg ? v.mag <= lim : v.mag < lim;
  } else {
    ok = !v.neg && (bits == 64 || v.mag < ((uint64_t)1 << bits));
  }
  if (!ok)
    return chk_fail(c, r, "integer literal %s%llu out of range for %s", v.neg ? "-" : "",
                    (unsigned long long)v.mag, tn);
  n->lit.u = v.neg ? 0 - v.mag : v.mag;
  return true;
}

/* Normalises a literal that carries its own type (suffix, builder, pass). */
static ir_type lit_typed(chk *c, ir_ref r) {
  ir_node *n = ir_node_get(c->m, r);
  ac_scalar sc;
  if (!ir_ty_is_scalar(c->ctx, n->type, &sc))
    return chk_fail(c, r, "malformed IR: literal without a scalar type"), IR_TY_NONE;
  if (sc == AC_F32 && isfinite(n->lit.f) && fabs(n->lit.f) >= F32_OVERFLOW) {
    char num[32];
    fmt_double(num, sizeof num, n->lit.f);
    return chk_fail(c, r, "float literal %s out of range for f32", num), IR_TY_NONE;
  }
  if (sc == AC_PROB && n->lit.f < 0) {
    char num[32];
    fmt_double(num, sizeof num, n->lit.f);
    return chk_fail(c, r, "a probability cannot be negative: %s as prob", num), IR_TY_NONE;
  }
  if (sc == AC_F32)
    n->lit.f = fabs(n->lit.f) > FLT_MAX && isfinite(n->lit.f) ? copysign((double)FLT_MAX, n->lit.f)
                                                              : (double)(float)n->lit.f;
  else if (sc == AC_BOOL)
    n->lit.u = n->lit.u != 0;
  else if (sc != AC_F64 && sc != AC_PROB) {
    /* re-extend from the type's width: the bits are what the type holds */
    unsigned bits = scalar_bits(sc);
    if (bits < 64) {
      uint64_t mask = ((uint64_t)1 << bits) - 1, u = n->lit.u & mask;
      if (scalar_signed(sc) && (u >> (bits - 1)))
        u |= ~mask;
      n->lit.u = u;
    }
  }
  return n->type;
}

/* The identity of maximum (the lowest value of the expected type) or of
 * minimum (the highest), written as the literal it is: ±inf for floats, the
 * type's bounds for integers, 0 or 1 for prob (docs/language.md §7.4). */
static bool lit_bound(chk *c, ir_ref r, ir_type expect) {
  ir_node *n = ir_node_get(c->m, r);
  bool low = (n->flags & IR_F_LOWEST) != 0;
  ac_scalar sc;
  if (!ir_ty_is_scalar(c->ctx, expect, &sc) || sc == AC_BOOL)
    return chk_fail(c, r, "%s needs numbers: the elements are %s", low ? "maximum" : "minimum",
                    expect ? chk_tyname(c, expect) : "of no known type");
  n->flags &= (uint16_t)~(IR_F_LOWEST | IR_F_HIGHEST | IR_F_NEG | IR_F_FLOATLIT | IR_F_INFNAN);
  n->type = IR_TY_NONE;
  if (sc == AC_F32 || sc == AC_F64) {
    n->flags |= IR_F_FLOATLIT | IR_F_INFNAN;
    n->lit.f = low ? -INFINITY : INFINITY;
  } else if (sc == AC_PROB) {
    n->flags |= IR_F_FLOATLIT;
    n->lit.f = low ? 0.0 : 1.0;
  } else {
    unsigned bits = scalar_bits(sc);
    uint64_t half = (uint64_t)1 << (bits - 1);
    if (scalar_signed(sc)) {
      n->lit.u = low ? half : half - 1;
      if (low)
        n->flags |= IR_F_NEG;
    } else {
      n->lit.u = low ? 0 : half + (half - 1);
    }
  }
  return true;
}

static ir_type infer_lit(chk *c, ir_ref r, ir_type expect) {
  ir_node *n = ir_node_get(c->m, r);
  ir_type t;
  if ((n->flags & (IR_F_LOWEST | IR_F_HIGHEST)) && !lit_bound(c, r, expect))
    return IR_TY_NONE;
  n = ir_node_get(c->m, r);
  if (n->flags & IR_F_SUFFIX) {
    t = lit_typed(c, r);
  } else {
    rawlit v = lit_raw(c, n);
    ac_scalar want;
    bool fromctx = ir_ty_is_scalar(c->ctx, expect, &want) && want != AC_BOOL;
    if (fromctx && v.isfloat && want != AC_F32 && want != AC_F64 && want != AC_PROB)
      return chk_fail(c, r, "float literal cannot have integer type %s", ac_scalar_name(want)),
             IR_TY_NONE;
    ac_scalar sc = fromctx ? want : v.isfloat ? AC_F64 : AC_I32;
    if (!lit_store(c, r, v, sc))
      return IR_TY_NONE;
    n = ir_node_get(c->m, r);
    n->type = t = fromctx ? expect : sc == AC_F64 ? c->t_f64 : c->t_i32;
  }
  if (t == IR_TY_NONE)
    return IR_TY_NONE;
  /* the suffix is redundant exactly when the context expects this type */
  if (expect == t)
    n->flags |= IR_F_CTX;
  else
    n->flags &= (uint16_t)~IR_F_CTX;
  return t;
}

/* ---- shared operand types, index and shape positions ---- */

ir_type chk_share(chk *c, uint32_t n, const ir_ref *rs, ir_type expect) {
  if (expect != IR_TY_NONE) {
    for (uint32_t i = 0; i < n; i++)
      if (!chk_check(c, rs[i], expect))
        return IR_TY_NONE;
    return expect;
  }
  /* Synthesise the first operand that is neither flexible nor a typed literal,
   * so that typed literals (from the builder, or redundant suffixes) are
   * checked against it and print without their suffix; failing that the first
   * typed literal; failing that the first operand. The printed text re-parses
   * to the same choice: a checked literal prints bare (flexible), a
   * synthesised one keeps its suffix. */
  uint32_t first = n, typed = n;
  /* an operand with no flexible part is the best source of the type: a
   * tuple or block with flexible parts would give them their defaults */
  for (uint32_t i = 0; i < n && first == n; i++)
    if (!chk_typed_lit(c, rs[i]) && !flex_part(c, rs[i], 0, NULL))
      first = i;
  for (uint32_t i = 0; i < n && first == n; i++) {
    if (chk_flexible(c, rs[i]))
      continue;
    if (chk_typed_lit(c, rs[i])) {
      if (typed == n)
        typed = i;
    } else {
      first = i;
    }
  }
  if (first == n)
    first = typed < n ? typed : 0;
  /* all flexible: the others take the first one's type, a default that no
   * variable among them needs (chk_flex) */
  unsigned soft = c->soft;
  ir_type t = chk_synth(c, rs[first]);
  c->soft = first != typed && chk_flexible(c, rs[first]);
  for (uint32_t i = 0; i < n && t; i++)
    if (i != first && !chk_check(c, rs[i], t))
      t = IR_TY_NONE;
  c->soft = soft;
  return t;
}

/* A literal whose type is fixed (suffix, builder, or bool). */
bool chk_typed_lit(const chk *c, ir_ref r) {
  const ir_node *n = ir_node_get(c->m, r);
  return r < c->m->nnodes && n->op == IR_LIT && (n->flags & IR_F_SUFFIX) && n->type != IR_TY_NONE;
}

/* In index and shape positions i64 is expected of a flexible expression, and
 * an i64 literal is checked against it too, so that its suffix is redundant
 * and not printed (it re-parses as a flexible literal checked against i64). */
static bool index_expects_i64(const chk *c, ir_ref r) {
  unsigned lits = chk_flex_lits(c, r);
  if (lits)
    return !(lits & FLEX_FLOAT);
  return chk_typed_lit(c, r) && ir_node_get(c->m, r)->type == c->t_i64;
}

ir_type chk_index_pos(chk *c, ir_ref r, const char *what, const char *whats) {
  if (index_expects_i64(c, r))
    return chk_check(c, r, c->t_i64) ? c->t_i64 : IR_TY_NONE;
  ir_type t = chk_synth(c, r);
  if (t && !ir_ty_is_int(c->ctx, t))
    return chk_fail(c, r, "%s has type %s; %s must be integers", what, chk_tyname(c, t), whats),
           IR_TY_NONE;
  return t;
}

/* True if t is a tuple of exactly n integers (n >= 2). */
static bool int_tuple(chk *c, ir_type t, uint32_t n) {
  ir_typeinfo ti = ir_ty_info(c->ctx, t);
  if (t == IR_TY_NONE || ti.kind != TK_TUPLE || ti.n != n || n < 2)
    return false;
  for (uint32_t i = 0; i < n; i++)
    if (!ir_ty_is_int(c->ctx, ir_ty_info(c->ctx, t).fields[i]))
      return false;
  return true;
}

/* A tuple expression whose fields are index positions. */
static ir_type index_fields(chk *c, ir_ref r, const char *what, const char *whats) {
  if (!chk_well_formed(c, r))
    return IR_TY_NONE;
  uint32_t n = ir_node_get(c->m, r)->nkids;
  ir_type small[8];
  ir_type *ts = n <= 8 ? small : ac_alloc(c->ctx, n * sizeof *ts);
  if (!ts)
    return chk_oom(c), IR_TY_NONE;
  ir_type t = IR_TY_NONE;
  uint32_t i = 0;
  for (; i < n; i++)
    if (!(ts[i] = chk_index_pos(c, ir_kid(c->m, r, i), what, whats)))
      break;
  if (i == n && !(t = ir_ty_tuple(c->ctx, n, ts)))
    chk_oom(c);
  if (ts != small)
    ac_free(c->ctx, ts);
  if (t)
    ir_node_get(c->m, r)->type = t;
  return t;
}

static bool is_tuple_expr(const chk *c, ir_ref r) {
  const ir_node *n = ir_node_get(c->m, r);
  return n->op == IR_TUPLE && n->nkids >= 2;
}

ir_type chk_index_tuple(chk *c, ir_ref r, uint32_t rank, const char *what) {
  if (rank == 1 && !is_tuple_expr(c, r))
    return chk_index_pos(c, r, what, "indices");
  if (is_tuple_expr(c, r) && ir_node_get(c->m, r)->nkids == rank)
    return index_fields(c, r, what, "indices");
  ir_type t = chk_synth(c, r);
  if (!t)
    return IR_TY_NONE;
  if (rank == 1 ? ir_ty_is_int(c->ctx, t) : int_tuple(c, t, rank))
    return t;
  if (rank == 1)
    return chk_fail(c, r, "%s must be an integer, found %s", what, chk_tyname(c, t)), IR_TY_NONE;
  return chk_fail(c, r, "%s must be a tuple of %u integers, found %s", what, rank,
                  chk_tyname(c, t)),
         IR_TY_NONE;
}

bool chk_shape(chk *c, ir_ref r, uint32_t *rank) {
  if (is_tuple_expr(c, r)) {
    *rank = ir_node_get(c->m, r)->nkids;
    return index_fields(c, r, "extent", "extents") != IR_TY_NONE;
  }
  if (index_expects_i64(c, r)) {
    *rank = 1;
    return chk_check(c, r, c->t_i64);
  }
  ir_type t = chk_synth(c, r);
  if (!t)
    return false;
  ir_typeinfo ti = ir_ty_info(c->ctx, t);
  *rank = ti.kind == TK_TUPLE ? ti.n : 1;
  if (ir_ty_is_int(c->ctx, t) || int_tuple(c, t, *rank))
    return true;
  return chk_fail(c, r, "shape must be an integer or a tuple of integers, found %s",
                  chk_tyname(c, t));
}

/* ---- core forms ---- */

static ir_type infer_var(chk *c, ir_ref r, bool indexed) {
  ir_node *n = ir_node_get(c->m, r);
  if (n->attr < 0 || (uint64_t)n->attr >= c->nenv)
    return chk_fail(c, r, "malformed IR: variable %lld is not in scope (%zu bound)",
                    (long long)n->attr, c->nenv),
           IR_TY_NONE;
  const chk_entry *e = &c->env[c->nenv - 1 - (size_t)n->attr];
  if (!indexed && e->kind == ENV_SELF)
    return chk_fail(c, r, "rec array '%s' may only be indexed", ir_sym_str(c->ctx, e->name)),
           IR_TY_NONE;
  if (!indexed && ir_ty_info(c->ctx, e->type).kind == TK_WINDOW)
    return chk_fail(c, r, "stencil window '%s' may only be indexed", ir_sym_str(c->ctx, e->name)),
           IR_TY_NONE;
  return e->type;
}

static ir_type infer_tuple(chk *c, ir_ref r, ir_type expect) {
  uint32_t n = ir_node_get(c->m, r)->nkids;
  if (n == 1)
    return chk_fail(c, r, "malformed IR: tuple with one field"), IR_TY_NONE;
  ir_typeinfo ei = ir_ty_info(c->ctx, expect);
  bool fields = expect != IR_TY_NONE && ei.kind == TK_TUPLE && ei.n == n;
  ir_type small[8];
  ir_type *ts = n <= 8 ? small : ac_alloc(c->ctx, n * sizeof *ts);
  if (!ts && n)
    return chk_oom(c), IR_TY_NONE;
  ir_type t = IR_TY_NONE;
  uint32_t i = 0;
  for (; i < n; i++) {
    ir_ref k = ir_kid(c->m, r, i);
    if (fields) {
      ts[i] = ir_ty_info(c->ctx, expect).fields[i];
      if (!chk_check(c, k, ts[i]))
        break;
    } else if (!(ts[i] = chk_synth(c, k))) {
      break;
    }
  }
  if (i == n && !(t = ir_ty_tuple(c->ctx, n, ts)))
    chk_oom(c);
  if (ts != small)
    ac_free(c->ctx, ts);
  return t;
}

static ir_type infer_proj(chk *c, ir_ref r) {
  ir_node *n = ir_node_get(c->m, r);
  int64_t k = n->attr;
  ir_type t = chk_synth(c, ir_kid(c->m, r, 0));
  if (!t)
    return IR_TY_NONE;
  ir_typeinfo ti = ir_ty_info(c->ctx, t);
  if (ti.kind != TK_TUPLE)
    return chk_fail(c, r, "projection .%lld needs a tuple, found %s", (long long)k,
                    chk_tyname(c, t)),
           IR_TY_NONE;
  if (k < 0 || (uint64_t)k >= ti.n)
    return chk_fail(c, r, "tuple has %u field%s; .%lld is out of range", ti.n, ti.n == 1 ? "" : "s",
                    (long long)k),
           IR_TY_NONE;
  return ti.fields[k];
}

/* The type written in let r, checked to be a value type; IR_TY_NONE (no
 * error) if there is none. */
static ir_type let_type(chk *c, ir_ref r, bool *bad) {
  ir_type t = ir_let_type(c->m, ir_node_get(c->m, r));
  *bad = (ir_node_get(c->m, r)->flags & IR_F_TYPED) && !chk_is_value_type(c, t);
  if (*bad)
    chk_fail(c, r, "malformed IR: a typed let without a valid type");
  return t;
}

static ir_type infer_let(chk *c, ir_ref r, ir_type expect) {
  uint32_t fx = 0, soft = c->soft;
  bool bad;
  c->soft = 0; /* the value is the let's own */
  ir_type ann = let_type(c, r, &bad);
  ir_type t = bad   ? IR_TY_NONE
              : ann ? (chk_check(c, ir_kid(c->m, r, 0), ann) ? ann : IR_TY_NONE)
                    : bind_value(c, r, 0, 1, ir_kid(c->m, r, 0), &fx);
  c->soft = soft;
  if (!t || !chk_push_flex(c, t, chk_node_name(c, r, 0), fx))
    return IR_TY_NONE;
  ir_type b = chk_infer(c, ir_kid(c->m, r, 1), expect);
  chk_pop(c, 1);
  return b;
}

/* The value v of `let (x1, .., xk) = v` (binder r): a tuple expression's
 * fields are bound one by one, each flexible on its own (*fx gets their
 * entries, in `small` when k <= 8, else allocated); anything else is
 * synthesised (*fx stays NULL). */
static ir_type let_tuple(chk *c, ir_ref r, ir_ref v, uint32_t k, uint32_t *small, uint32_t **fx) {
  if (!chk_well_formed(c, v))
    return IR_TY_NONE;
  const ir_node *n = ir_node_get(c->m, v);
  bool any = false;
  for (uint32_t i = 0; n->op == IR_TUPLE && n->nkids == k && k > 1 && i < k && !any; i++) {
    unsigned lits = 0;
    any = flex_walk(c, ir_kid(c->m, v, i), &lits, 0, true) || flex_entry(c, r, i, k, false);
  }
  if (!any)
    return chk_synth(c, v);
  ir_type tsmall[8];
  ir_type *ts = k <= 8 ? tsmall : ac_alloc(c->ctx, k * sizeof *ts);
  *fx = k <= 8 ? small : ac_alloc(c->ctx, k * sizeof **fx);
  ir_type t = IR_TY_NONE;
  uint32_t i = 0;
  if (ts && *fx)
    for (; i < k; i++)
      if (!(ts[i] = bind_value(c, r, i, k, ir_kid(c->m, v, i), &(*fx)[i])))
        break;
  if (!ts || !*fx)
    chk_oom(c);
  else if (i == k && !(t = ir_ty_tuple(c->ctx, k, ts)))
    chk_oom(c);
  if (t)
    ir_node_get(c->m, v)->type = t;
  if (ts != tsmall)
    ac_free(c->ctx, ts);
  if (!t && *fx != small) {
    ac_free(c->ctx, *fx);
    *fx = NULL;
  }
  return t;
}

static ir_type infer_lettup(chk *c, ir_ref r, ir_type expect) {
  ir_node *n = ir_node_get(c->m, r);
  int64_t k = n->attr;
  ir_ref v = ir_kid(c->m, r, 0);
  if (k < 1 || k > UINT32_MAX)
    return chk_fail(c, r, "malformed IR: let binds %lld names", (long long)k), IR_TY_NONE;
  uint32_t small[8], *fx = NULL, soft = c->soft;
  bool bad;
  c->soft = 0;
  ir_type ann = let_type(c, r, &bad);
  ir_type t = bad   ? IR_TY_NONE
              : ann ? (chk_check(c, v, ann) ? ann : IR_TY_NONE)
                    : let_tuple(c, r, v, (uint32_t)k, small, &fx);
  c->soft = soft;
  if (!t)
    return IR_TY_NONE;
  ir_typeinfo ti = ir_ty_info(c->ctx, t);
  if (ti.kind != TK_TUPLE)
    return chk_fail(c, v, "%lld names are bound but the value has type %s, not a tuple",
                    (long long)k, chk_tyname(c, t)),
           IR_TY_NONE;
  if (ti.n != k)
    return chk_fail(c, v, "tuple has %u field%s but %lld name%s bound", ti.n, ti.n == 1 ? "" : "s",
                    (long long)k, k == 1 ? " is" : "s are"),
           IR_TY_NONE;
  for (uint32_t i = 0; i < ti.n; i++)
    if (!chk_push_flex(c, ir_ty_info(c->ctx, t).fields[i], chk_node_name(c, r, i), fx ? fx[i] : 0))
      break;
  if (fx != small)
    ac_free(c->ctx, fx);
  if (c->st != AC_OK)
    return IR_TY_NONE;
  ir_type b = chk_infer(c, ir_kid(c->m, r, 1), expect);
  chk_pop(c, (size_t)k);
  return b;
}

static bool check_cond(chk *c, ir_ref r) {
  unsigned soft = c->soft;
  c->soft = 0; /* a condition inside a flexible `if` is not flexible */
  ir_type t = chk_synth(c, r);
  c->soft = soft;
  if (t && t != c->t_bool)
    return chk_fail(c, r, "condition must be bool, found %s", chk_tyname(c, t));
  return t != IR_TY_NONE;
}

static ir_type infer_if(chk *c, ir_ref r, ir_type expect) {
  if (!check_cond(c, ir_kid(c->m, r, 0)))
    return IR_TY_NONE;
  ir_ref br[2] = {ir_kid(c->m, r, 1), ir_kid(c->m, r, 2)};
  return chk_share(c, 2, br, expect);
}

static ir_type infer_call(chk *c, ir_ref r) {
  ir_node *n = ir_node_get(c->m, r);
  if (n->attr < 0 || (uint64_t)n->attr >= c->m->nfuncs)
    return chk_fail(c, r, "malformed IR: call of function %lld of %zu", (long long)n->attr,
                    c->m->nfuncs),
           IR_TY_NONE;
  uint32_t fi = (uint32_t)n->attr;
  const ir_func *f = &c->m->funcs[fi];
  if (n->nkids != f->nparams)
    return chk_fail(c, r, "function '%s' takes %u argument%s, %u given",
                    ir_sym_str(c->ctx, f->name), f->nparams, f->nparams == 1 ? "" : "s", n->nkids),
           IR_TY_NONE;
  for (uint32_t i = 0; i < f->nparams; i++)
    if (!chk_check(c, ir_kid(c->m, r, i), ir_func_param(c->m, &c->m->funcs[fi], i)))
      return IR_TY_NONE;
  if (!chk_edge_add(c, fi, ir_node_get(c->m, r)->loc))
    return IR_TY_NONE;
  return chk_func_result(c, fi, r);
}

static ir_type infer_cast(chk *c, ir_ref r) {
  ir_type to = ir_node_get(c->m, r)->type;
  ac_scalar sc;
  if (!ir_ty_is_scalar(c->ctx, to, &sc))
    return chk_fail(c, r, "malformed IR: conversion to a non-scalar type"), IR_TY_NONE;
  ir_ref x = ir_kid(c->m, r, 0);
  /* f32(1) is the literal 1.0f32; i32(2.7) converts the f64 2.7 (§5.4) */
  unsigned lits = chk_flex_lits(c, x);
  bool fits =
      sc != AC_BOOL && (!(lits & FLEX_FLOAT) || sc == AC_F32 || sc == AC_F64 || sc == AC_PROB);
  ir_type t;
  if (lits && fits)
    t = chk_check(c, x, to) ? to : IR_TY_NONE;
  else
    t = chk_synth(c, x);
  if (t && !ir_ty_is_scalar(c->ctx, t, NULL))
    return chk_fail(c, x, "conversion to %s expects a scalar, found %s", ac_scalar_name(sc),
                    chk_tyname(c, t)),
           IR_TY_NONE;
  if (t && sc == AC_PROB && t == c->t_bool)
    return chk_fail(c, x, "conversion to prob expects a number, found bool"), IR_TY_NONE;
  return t ? to : IR_TY_NONE;
}

/* A loop variable bound to a flexible value takes its type from the step as
 * well as from its other uses: `loop (z = 0.0) .. { z * z + c }` with c: f32
 * makes z an f32. The step is checked against the variables' types, which
 * would report `c` as a mismatch, so it is first synthesised on trial (errors
 * dropped, never nested, to keep checking linear): the types of its fields
 * and the uses inside it give the variables' types for the next pass. */
static void loop_probe(chk *c, ir_ref r, uint32_t k, const ir_type *ts, const uint32_t *fx) {
  if (c->probing)
    return;
  size_t nedges = c->nedges;
  c->probing++;
  chk_lam trial = {"loop", "variable", k, ts, LAM_ELEMENT, IR_TY_NONE, 0, "loop step", fx, false};
  ir_type got = chk_lambda(c, r, k + 1, &trial);
  c->probing--;
  c->nedges = nedges;
  if (c->st == AC_ERR_NOMEM || c->flexfail)
    return;
  if (c->st != AC_OK) {
    ac_error_destroy(c->err);
    c->err = NULL;
    c->st = AC_OK;
    return;
  }
  ir_typeinfo gi = ir_ty_info(c->ctx, got);
  if (k > 1 && (gi.kind != TK_TUPLE || gi.n != k))
    return;
  ir_loc at = ir_node_get(c->m, ir_kid(c->m, r, k + 1))->loc;
  for (uint32_t i = 0; i < k && c->st == AC_OK; i++) {
    ir_type g = k > 1 ? ir_ty_info(c->ctx, got).fields[i] : got;
    chk_flex *f = fx[i] ? &c->flex[fx[i] - 1] : NULL;
    if (f && f->flexible && g != ts[i] && lits_fit(c, f->lits, g))
      flex_want(c, f, g, at);
  }
}

static ir_type infer_loop(chk *c, ir_ref r) {
  uint32_t nk = ir_node_get(c->m, r)->nkids;
  if (nk < 3)
    return chk_fail(c, r, "malformed IR: loop with %u children", nk), IR_TY_NONE;
  uint32_t k = nk - 2;
  ir_type small[8];
  uint32_t fxsmall[8];
  ir_type *ts = k <= 8 ? small : ac_alloc(c->ctx, k * sizeof *ts);
  uint32_t *fx = k <= 8 ? fxsmall : ac_alloc(c->ctx, k * sizeof *fx);
  ir_type state = IR_TY_NONE;
  uint32_t i = 0, nflex = 0;
  if (!ts || !fx)
    chk_oom(c);
  for (; ts && fx && i < k; i++) {
    if (!(ts[i] = bind_value(c, r, i, k, ir_kid(c->m, r, i), &fx[i])))
      break;
    nflex += fx[i] && c->flex[fx[i] - 1].flexible;
  }
  if (ts && fx && i == k && !(state = ir_ty_tuple(c->ctx, k, ts)))
    chk_oom(c);
  if (state && nflex)
    loop_probe(c, r, k, ts, fx);
  if (state) {
    chk_lam cond = {"loop", "variable", k, ts, LAM_BOOL, IR_TY_NONE, 0, "condition", fx, false};
    chk_lam step = {"loop", "variable", k, ts, LAM_CHECK, state, 0, NULL, fx, nflex > 0};
    if (!chk_lambda(c, r, k, &cond) || !chk_lambda(c, r, k + 1, &step))
      state = IR_TY_NONE;
  }
  if (ts != small)
    ac_free(c->ctx, ts);
  if (fx != fxsmall)
    ac_free(c->ctx, fx);
  return state;
}

/* Integer-literal offsets of a window read, possibly negated (r is well
 * formed). */
static bool is_offset(const chk *c, ir_ref r) {
  const ir_node *n = ir_node_get(c->m, r);
  if (n->op == IR_NEG)
    n = ir_node_get(c->m, ir_kid(c->m, r, 0));
  return n->op == IR_LIT && !(n->flags & IR_F_FLOATLIT) &&
         (!(n->flags & IR_F_SUFFIX) || ir_ty_is_int(c->ctx, n->type));
}

static ir_type infer_index(chk *c, ir_ref r) {
  uint32_t nk = ir_node_get(c->m, r)->nkids;
  if (nk < 2)
    return chk_fail(c, r, "malformed IR: index without indices"), IR_TY_NONE;
  ir_ref a = ir_kid(c->m, r, 0);
  ir_node *an = ir_node_get(c->m, a);
  ir_type t;
  if (an->op == IR_VAR) { /* the one place a window or a rec array may appear */
    t = infer_var(c, a, true);
    if (t)
      ir_node_get(c->m, a)->type = t;
  } else {
    t = chk_synth(c, a);
  }
  if (!t)
    return IR_TY_NONE;
  uint32_t nidx = nk - 1, rank;
  ir_typeinfo ti = ir_ty_info(c->ctx, t);
  if (ti.kind == TK_WINDOW) {
    ir_type elem = ti.elem;
    if (nidx != ti.rank)
      return chk_fail(c, r, "stencil window of rank %u needs %u offset%s, found %u", ti.rank,
                      ti.rank, ti.rank == 1 ? "" : "s", nidx),
             IR_TY_NONE;
    for (uint32_t i = 1; i < nk; i++) {
      ir_ref o = ir_kid(c->m, r, i);
      if (!chk_well_formed(c, o))
        return IR_TY_NONE;
      if (!is_offset(c, o))
        return chk_fail(c, o, "stencil offsets must be integer constants"), IR_TY_NONE;
      if (!chk_index_pos(c, o, "stencil offset", "stencil offsets"))
        return IR_TY_NONE;
    }
    return elem;
  }
  ir_type elem;
  if (!ir_ty_array_view(c->ctx, t, &elem, &rank))
    return chk_fail(c, a, "only arrays can be indexed, found %s", chk_tyname(c, t)), IR_TY_NONE;
  if (nidx != rank)
    return chk_fail(c, r, "array of rank %u indexed with %u ind%s", rank, nidx,
                    nidx == 1 ? "ex" : "ices"),
           IR_TY_NONE;
  for (uint32_t i = 1; i < nk; i++)
    if (!chk_index_pos(c, ir_kid(c->m, r, i), "index", "indices"))
      return IR_TY_NONE;
  return elem;
}

static ir_type infer_arrlit(chk *c, ir_ref r, ir_type expect) {
  ir_node *n = ir_node_get(c->m, r);
  int64_t rank = n->attr;
  uint32_t nk = n->nkids;
  if (rank < 1 || rank > 64 || (size_t)n->aux + (size_t)rank > c->m->nints)
    return chk_fail(c, r, "malformed IR: array literal of rank %lld", (long long)rank), IR_TY_NONE;
  uint64_t count = 1;
  for (int64_t i = 0; i < rank; i++) {
    int64_t e = c->m->ints[n->aux + i];
    if (e < 0 || (e > 0 && count > UINT32_MAX / (uint64_t)e))
      return chk_fail(c, r, "malformed IR: array literal extent %lld", (long long)e), IR_TY_NONE;
    count *= (uint64_t)e;
  }
  if (count != nk)
    return chk_fail(c, r, "malformed IR: array literal has %u elements for %llu", nk,
                    (unsigned long long)count),
           IR_TY_NONE;
  ir_type want = IR_TY_NONE;
  uint32_t er;
  if (expect && !(ir_ty_array_view(c->ctx, expect, &want, &er) && er == rank))
    want = IR_TY_NONE;
  if (nk == 0 && !want)
    return chk_fail(c, r, "cannot infer the element type of an empty array literal"), IR_TY_NONE;
  ir_type elem = want;
  if (nk) {
    ir_ref small[16];
    ir_ref *ks = nk <= 16 ? small : ac_alloc(c->ctx, nk * sizeof *ks);
    if (!ks)
      return chk_oom(c), IR_TY_NONE;
    for (uint32_t i = 0; i < nk; i++)
      ks[i] = ir_kid(c->m, r, i);
    elem = chk_share(c, nk, ks, want);
    if (ks != small)
      ac_free(c->ctx, ks);
  }
  if (!elem)
    return IR_TY_NONE;
  if (!ir_ty_is_element(c->ctx, elem))
    return chk_fail(c, ir_kid(c->m, r, 0),
                    "array literal elements must be scalars or tuples, found %s",
                    chk_tyname(c, elem)),
           IR_TY_NONE;
  return chk_array_of(c, r, elem, (uint32_t)rank);
}

/* ---- dispatch ---- */

/* Operation, child count (from ops.def where fixed) and child references. */
bool chk_well_formed(chk *c, ir_ref r) {
  ac_module *m = c->m;
  ir_node *n = ir_node_get(m, r);
  if (n->op >= IR_NUM_OPS)
    return chk_fail(c, r, "malformed IR: unknown operation %u", n->op);
  if ((size_t)n->kids + n->nkids > m->nkids)
    return chk_fail(c, r, "malformed IR: %s node with children out of range", ir_ops[n->op].name);
  int want = ir_ops[n->op].nkids;
  if (want >= 0 && n->nkids != (uint32_t)want)
    return chk_fail(c, r, "malformed IR: %s node with %u children, expected %d", ir_ops[n->op].name,
                    n->nkids, want);
  for (uint32_t i = 0; i < n->nkids; i++) {
    ir_ref k = ir_kid(m, r, i);
    if (k == IR_NONE || k >= m->nnodes)
      return chk_fail(c, r, "malformed IR: child %u of a %s node is missing", i,
                      ir_ops[n->op].name);
  }
  return true;
}

ir_type chk_infer(chk *c, ir_ref r, ir_type expect) {
  if (c->st != AC_OK)
    return IR_TY_NONE;
  if (r == IR_NONE || r >= c->m->nnodes)
    return chk_fail_at(c, (ir_loc){0, 0}, "malformed IR: reference to node %u of %zu", r,
                       c->m->nnodes),
           IR_TY_NONE;
  if (c->depth >= CHK_MAX_DEPTH)
    return chk_fail(c, r, "malformed IR: expression nested deeper than %d levels", CHK_MAX_DEPTH),
           IR_TY_NONE;
  if (r < c->nonpath && c->onpath[r])
    return chk_fail(c, r, "malformed IR: a %s node is its own descendant (the IR has a cycle)",
                    ir_ops[ir_node_get(c->m, r)->op].name),
           IR_TY_NONE;
  if (!chk_well_formed(c, r))
    return IR_TY_NONE;
  if (r < c->nonpath)
    c->onpath[r] = 1;
  c->depth++;
  ir_type t;
  ir_op op = (ir_op)ir_node_get(c->m, r)->op;
  /* a default type reaches through flexible forms only (chk.soft) */
  unsigned soft = c->soft;
  if (op != IR_VAR && op != IR_TUPLE && op != IR_IF && op != IR_LET && op != IR_LETTUP &&
      !ir_op_is_scalar(op))
    c->soft = 0;
  switch (op) {
  case IR_VAR:
    t = infer_var(c, r, false);
    if (t && expect != IR_TY_NONE)
      t = flex_use(c, r, t, expect);
    break;
  case IR_LIT:
    t = infer_lit(c, r, expect);
    break;
  case IR_TUPLE:
    t = infer_tuple(c, r, expect);
    break;
  case IR_PROJ:
    t = infer_proj(c, r);
    break;
  case IR_LET:
    t = infer_let(c, r, expect);
    break;
  case IR_LETTUP:
    t = infer_lettup(c, r, expect);
    break;
  case IR_IF:
    t = infer_if(c, r, expect);
    break;
  case IR_CALL:
    t = infer_call(c, r);
    break;
  case IR_CAST:
    t = infer_cast(c, r);
    break;
  case IR_LOOP:
    t = infer_loop(c, r);
    break;
  case IR_INDEX:
    t = infer_index(c, r);
    break;
  case IR_ARRLIT:
    t = infer_arrlit(c, r, expect);
    break;
  case IR_REC:
    t = chk_rec(c, r);
    break;
  case IR_LAM:
    t = IR_TY_NONE;
    chk_fail(c, r, "a lambda is only allowed as the argument of an array operation");
    break;
  case IR_FNREF: {
    int64_t f = ir_node_get(c->m, r)->attr;
    t = IR_TY_NONE;
    chk_fail(c, r, "'%s' is a function, not a value: call it, or pass it to an array operation",
             f >= 0 && (uint64_t)f < c->m->nfuncs ? ir_sym_str(c->ctx, c->m->funcs[f].name) : "?");
    break;
  }
  default:
    t = chk_op(c, r, expect);
    break;
  }
  c->soft = soft;
  c->depth--;
  if (r < c->nonpath)
    c->onpath[r] = 0;
  if (t && op != IR_LIT && op != IR_CAST)
    ir_node_get(c->m, r)->type = t;
  return c->st == AC_OK ? t : IR_TY_NONE;
}

bool chk_check(chk *c, ir_ref r, ir_type expect) {
  ir_type t = chk_infer(c, r, expect);
  if (!t)
    return false;
  if (t == expect)
    return true;
  /* a variable whose type was inferred from another use says which */
  const ir_node *n = ir_node_get(c->m, r);
  uint32_t fx = n->op == IR_VAR && n->attr >= 0 && (uint64_t)n->attr < c->nenv
                    ? c->env[c->nenv - 1 - (size_t)n->attr].flex
                    : 0;
  const chk_flex *f = fx ? &c->flex[fx - 1] : NULL;
  if (f && f->over == t && f->value != IR_NONE)
    return flex_conflict(c, f, t, f->overloc, expect, n->loc);
  return chk_fail(c, r, "type mismatch: expected %s, found %s", chk_tyname(c, expect),
                  chk_tyname(c, t));
}

/* ---- extern kernels (docs/language.md §3.4) ---- */

/* A size expression of an extern kernel: integer literals, parameters,
 * len, shape and its fields, casts, negation and + - * / % min max. */
static bool size_expr_ok(chk *c, ir_ref r, unsigned depth) {
  if (r == IR_NONE || r >= c->m->nnodes || depth > CHK_MAX_DEPTH)
    return chk_fail_at(c, c->m->funcs[c->fn].loc, "malformed IR: a bad extent expression");
  const ir_node *n = ir_node_get(c->m, r);
  switch ((ir_op)n->op) {
  case IR_LIT:
  case IR_VAR:
    return true;
  case IR_LET: /* the builder's sharing recovery may bind a shared part */
  case IR_PROJ:
  case IR_LEN:
  case IR_SHAPE:
  case IR_CAST:
  case IR_NEG:
  case IR_ADD:
  case IR_SUB:
  case IR_MUL:
  case IR_DIV:
  case IR_REM:
  case IR_MIN:
  case IR_MAX:
    break;
  default:
    return chk_fail(c, r,
                    "an extern kernel's extents and thread count are size expressions: integer "
                    "literals and parameters, len, shape, casts and + - * / %% min max");
  }
  if ((size_t)n->kids + n->nkids > c->m->nkids)
    return chk_fail(c, r, "malformed IR: bad children");
  for (uint32_t i = 0; i < n->nkids; i++)
    if (!size_expr_ok(c, ir_kid(c->m, r, i), depth + 1))
      return false;
  return true;
}

typedef struct kleaf_acc {
  bool ok;
  uint32_t ext;
} kleaf_acc;

static void kernel_leaf(void *ud, ac_scalar sc, uint32_t rank) {
  (void)sc;
  kleaf_acc *a = ud;
  if (rank == 0)
    a->ok = false;
  a->ext += rank;
}

/* Everything but the calls (check_kernel_calls). The function's
 * parameters are in c->env. */
static void check_kernel(chk *c, uint32_t fi) {
  const ir_func *f = &c->m->funcs[fi];
  const char *name = ir_sym_str(c->ctx, f->name);
  if (f->nkext == 0)
    return; /* declared by the builder, not finished yet (results have extents) */
  for (uint32_t i = 0; i < f->nparams; i++) {
    if (!ir_ty_is_kernel_value(c->ctx, ir_func_param(c->m, f, i), true)) {
      chk_fail_at(c, f->loc, "parameter %u of extern kernel '%s' is neither a scalar nor an array "
                             "of scalars", i + 1, name);
      return;
    }
  }
  kleaf_acc a = {true, 0};
  ir_ty_leaves(c->ctx, f->result, kernel_leaf, &a);
  if (!a.ok || (ir_ty_info(c->ctx, f->result).kind == TK_TUPLE &&
                ir_ty_info(c->ctx, f->result).n == 0)) {
    chk_fail_at(c, f->loc, "the results of extern kernel '%s' must be arrays of scalars", name);
    return;
  }
  if (a.ext != f->nkext || (size_t)f->kext + f->nkext > c->m->nints) {
    chk_fail_at(c, f->loc, "malformed IR: extern kernel '%s' has %u extents for a result of %u",
                name, f->nkext, a.ext);
    return;
  }
  if (f->body != IR_NONE) {
    chk_fail_at(c, f->loc, "malformed IR: extern kernel '%s' has a body", name);
    return;
  }
  if (f->kptx && (!f->kthreads || f->kblock < 1 || f->kblock > 1024)) {
    chk_fail_at(c, f->loc, "malformed IR: extern kernel '%s' has PTX but no valid launch rule",
                name);
    return;
  }
  for (uint32_t j = 0; j <= f->nkext && c->st == AC_OK; j++) {
    ir_ref e = j < f->nkext ? ir_kernel_extent(c->m, f, j) : f->kthreads;
    if (j == f->nkext && !e)
      break;
    if (size_expr_ok(c, e, 0))
      chk_check(c, e, c->t_i64);
    f = &c->m->funcs[fi];
  }
}

/* Extern kernels are launched by the host, so neither they nor functions
 * that call them may be called from element code: the functions given to
 * array operations other than iterate and while (whose functions run at
 * the plan's level when they launch anything) and the bodies of rec. One
 * pass marks the functions that reach a kernel, a second walks every body
 * with a flag "in element code". */
static void check_kernel_calls(chk *c) {
  ac_module *m = c->m;
  size_t nf = m->nfuncs;
  bool any = false;
  for (size_t f = 0; f < nf; f++)
    any |= m->funcs[f].is_kernel;
  if (!any)
    return;
  uint32_t *reach = ac_alloc(c->ctx, nf * sizeof *reach); /* kernel reached + 1, or 0 */
  uint8_t *seen = ac_alloc(c->ctx, m->nnodes ? m->nnodes : 1);
  struct kwalk {
    ir_ref r;
    bool elem;
  } *stack = NULL;
  size_t sp = 0, cap = 0;
  if (!reach || !seen) {
    chk_oom(c);
    goto done;
  }
  for (size_t f = 0; f < nf; f++)
    reach[f] = m->funcs[f].is_kernel ? (uint32_t)f + 1 : 0;
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t e = 0; e < c->nedges; e++)
      if (!reach[c->edges[e].from] && reach[c->edges[e].to]) {
        reach[c->edges[e].from] = reach[c->edges[e].to];
        changed = true;
      }
  }
  memset(seen, 0, m->nnodes ? m->nnodes : 1);
  for (size_t f = 0; f < nf && c->st == AC_OK; f++) {
    if (!m->funcs[f].body || m->funcs[f].is_extern)
      continue;
    sp = 0;
    if (!ac_grow(c->ctx, (void **)&stack, &cap, 1, sizeof *stack)) {
      chk_oom(c);
      break;
    }
    stack[sp++] = (struct kwalk){m->funcs[f].body, false};
    while (sp && c->st == AC_OK) {
      struct kwalk w = stack[--sp];
      if (w.r == IR_NONE || w.r >= m->nnodes || (seen[w.r] & (1u << w.elem)))
        continue;
      seen[w.r] |= (uint8_t)(1u << w.elem);
      const ir_node *n = ir_node_get(m, w.r);
      if (w.elem && (n->op == IR_CALL || n->op == IR_FNREF) && n->attr >= 0 &&
          (uint64_t)n->attr < nf && reach[n->attr]) {
        const char *callee = ir_sym_str(c->ctx, m->funcs[n->attr].name);
        const char *kern = ir_sym_str(c->ctx, m->funcs[reach[n->attr] - 1].name);
        if (m->funcs[n->attr].is_kernel)
          chk_fail(c, w.r,
                   "extern kernel '%s' is launched by the host and cannot be called in element "
                   "code (a function applied by an array operation, or a rec body)",
                   kern);
        else
          chk_fail(c, w.r,
                   "'%s' launches extern kernel '%s' and cannot be called in element code (a "
                   "function applied by an array operation, or a rec body)",
                   callee, kern);
        break;
      }
      if ((size_t)n->kids + n->nkids > m->nkids)
        continue;
      if (!ac_grow(c->ctx, (void **)&stack, &cap, sp + n->nkids, sizeof *stack)) {
        chk_oom(c);
        break;
      }
      bool loop = n->op == IR_ITERATE || n->op == IR_WHILE || n->op == IR_LOOP;
      for (uint32_t i = 0; i < n->nkids; i++) {
        ir_ref k = ir_kid(m, w.r, i);
        bool fnarg = k < m->nnodes && (ir_node_get(m, k)->op == IR_LAM ||
                                       ir_node_get(m, k)->op == IR_FNREF);
        bool elem = w.elem || (fnarg && !loop) || (n->op == IR_REC && i + 1 == n->nkids);
        stack[sp++] = (struct kwalk){k, elem};
      }
    }
  }
done:
  ac_free(c->ctx, reach);
  ac_free(c->ctx, seen);
  ac_free(c->ctx, stack);
}

/* ---- functions and modules ---- */

/* Starts checking function fi: its parameters are the environment (of a
 * body, or of an extern kernel's size expressions). */
static bool enter_function(chk *c, uint32_t fi) {
  c->fn = fi;
  c->nenv = 0;
  c->depth = 0;
  for (uint32_t i = 0; i < c->m->funcs[fi].nparams; i++) {
    const ir_func *f = &c->m->funcs[fi];
    ir_sym pn = (size_t)f->pnames + i < c->m->nsyms ? c->m->syms[f->pnames + i] : IR_SYM_NONE;
    if (!chk_push(c, ir_func_param(c->m, f, i), pn, ENV_PLAIN))
      return false;
  }
  return true;
}

static void check_function(chk *c, uint32_t fi) {
  const ir_func *f = &c->m->funcs[fi];
  const char *name = ir_sym_str(c->ctx, f->name);
  if ((size_t)f->params + f->nparams > c->m->nints) {
    chk_fail_at(c, f->loc, "malformed IR: function '%s' has no parameter types", name);
    return;
  }
  for (uint32_t i = 0; i < f->nparams; i++) {
    if (!chk_is_value_type(c, ir_func_param(c->m, f, i))) {
      chk_fail_at(c, f->loc, "malformed IR: parameter %u of function '%s' has no valid type", i + 1,
                  name);
      return;
    }
  }
  bool infer = f->infer_result && f->result == IR_TY_NONE && !f->is_extern;
  if (!infer && !chk_is_value_type(c, f->result)) {
    chk_fail_at(c, f->loc, "malformed IR: function '%s' has no valid result type", name);
    return;
  }
  if (f->is_kernel) {
    if (enter_function(c, fi))
      check_kernel(c, fi);
    c->nenv = 0;
    return;
  }
  if (f->is_extern) {
    /* the parser and the builder already refuse these with better
     * positions; this keeps passes and hand-made IR honest (§3.3) */
    for (uint32_t i = 0; i < f->nparams; i++)
      if (!ir_ty_is_scalar(c->ctx, ir_func_param(c->m, f, i), NULL)) {
        chk_fail_at(c, f->loc, "parameter %u of extern function '%s' is not a scalar", i + 1, name);
        return;
      }
    if (!ir_ty_is_scalar(c->ctx, f->result, NULL))
      chk_fail_at(c, f->loc, "the result of extern function '%s' is not a scalar", name);
    else if (f->body != IR_NONE)
      chk_fail_at(c, f->loc, "malformed IR: extern function '%s' has a body", name);
    return;
  }
  if (f->body == IR_NONE)
    return; /* declared by the builder, not finished yet */
  /* in passes until the flexible bindings' types are settled (chk_flex);
   * each new pass fixes at least one more binding, so this ends */
  size_t nedges = c->nedges, nflex0 = c->nflex;
  ir_type inferred = IR_TY_NONE;
  for (;;) {
    c->flexnew = false;
    if (!enter_function(c, fi))
      ;
    else if (infer) /* `-> _`: synthesised, as with no expected type (§3) */
      inferred = chk_infer(c, c->m->funcs[fi].body, IR_TY_NONE);
    else
      chk_check(c, c->m->funcs[fi].body, c->m->funcs[fi].result);
    c->nenv = 0;
    if (!c->flexnew || c->flexfail || c->st == AC_ERR_NOMEM || !flex_commit(c)) {
      /* settled: literals typed by their uses keep their types through
       * the passes, which move uses (and print with their suffixes); a
       * default needs nothing, no use needing another type */
      for (size_t i = nflex0; i < c->nflex && c->st == AC_OK; i++)
        if (c->flex[i].over != IR_TY_NONE)
          chk_fix_lits(c, c->flex[i].value, 0);
      if (c->pend && c->st != AC_ERR_NOMEM) { /* it came first */
        ac_error_destroy(c->err);
        c->err = c->pend;
        c->st = AC_ERR_TYPE;
      } else {
        ac_error_destroy(c->pend);
      }
      c->pend = NULL;
      break;
    }
    ac_error_destroy(c->pend);
    c->pend = NULL;
    ac_error_destroy(c->err);
    c->err = NULL;
    c->st = AC_OK;
    c->nedges = nedges;
  }
  if (infer && c->st == AC_OK) {
    ir_ref body = c->m->funcs[fi].body;
    if (!chk_is_value_type(c, inferred))
      chk_fail(c, body, "the body of '%s' has type %s, which cannot be a function's result",
               ir_sym_str(c->ctx, c->m->funcs[fi].name), chk_tyname(c, inferred));
    else
      c->m->funcs[fi].result = inferred; /* from now on, as if written */
    c->inferred = true;
  }
}

ac_status ir_check_module(ac_module *m, ac_error **err) {
  if (m->oom)
    return ir_report(err, NULL, AC_ERR_NOMEM);
  chk c;
  memset(&c, 0, sizeof c);
  c.m = m;
  c.ctx = m->ctx;
  for (int i = 0; i < 4; i++)
    ir_buf_init(&c.names[i], c.ctx);
  c.t_bool = ir_ty_scalar(c.ctx, AC_BOOL);
  c.t_i32 = ir_ty_scalar(c.ctx, AC_I32);
  c.t_i64 = ir_ty_scalar(c.ctx, AC_I64);
  c.t_f64 = ir_ty_scalar(c.ctx, AC_F64);
  c.t_prob = ir_ty_scalar(c.ctx, AC_PROB);
  if (!c.t_bool || !c.t_i32 || !c.t_i64 || !c.t_f64 || !c.t_prob)
    chk_oom(&c);
  c.nonpath = m->nnodes;
  c.onpath = ac_alloc(c.ctx, c.nonpath ? c.nonpath : 1);
  if (c.onpath) {
    memset(c.onpath, 0, c.nonpath ? c.nonpath : 1);
  } else {
    c.nonpath = 0;
    chk_oom(&c);
  }
  bool infer = false; /* some result is still to be inferred */
  for (size_t fi = 0; fi < m->nfuncs; fi++)
    infer |= m->funcs[fi].infer_result && m->funcs[fi].result == IR_TY_NONE;
  uint32_t *order = infer && c.st == AC_OK ? chk_order(&c) : NULL;
  for (uint32_t k = 0; k < m->nfuncs && c.st == AC_OK; k++)
    check_function(&c, order ? order[k] : k);
  ac_free(c.ctx, order);
  if (c.st == AC_OK)
    chk_recursion(&c);
  if (c.st == AC_OK)
    check_kernel_calls(&c);
  int erased = c.st == AC_OK ? chk_erase_prob(m) : 0;
  if (erased < 0)
    chk_oom(&c);
  if (c.st == AC_OK && m->oom)
    c.st = AC_ERR_NOMEM;
  ac_free(c.ctx, c.env);
  ac_free(c.ctx, c.edges);
  ac_free(c.ctx, c.flex);
  ac_free(c.ctx, c.flexof);
  ac_free(c.ctx, c.onpath);
  for (int i = 0; i < 4; i++)
    ir_buf_free(&c.names[i]);
  /* No prob is left, and no result to infer: this does not recurse. After
   * inference the module is checked again against the inferred results, as
   * every later check (and a parse of its print) will check it, so that a
   * second check changes nothing: literals that took a default type are
   * then typed by context and print without suffix. */
  if (c.st == AC_OK && (erased > 0 || c.inferred))
    return ir_check_module(m, err);
  return ir_report(err, c.err, c.st);
}
