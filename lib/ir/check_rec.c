/* lib/ir/check_rec.c: recurrences: typing, dependency analysis, schedules.
 *
 * A REC node (see ir.h) is typed like a generate whose body may read the
 * array being defined: the bounds are index positions, the body sees the
 * array itself (which may only be indexed, enforced by check.c) and the n
 * indices as i64, and is checked against the declared element type.
 *
 * Then every self reference d[e_1, .., e_n] in the body is classified
 * (docs/language.md §7.14, Cartey et al. §4.5): each e_k is
 *   uniform  i_k + c with c an integer constant (through lets, casts to
 *            integer types, + and - of constants): distance -c;
 *   free     an expression that does not mention the indices, or an
 *            affine one that is not i_k + c (i_m + c with m != k, j - i,
 *            2 * i, n - 1 - j: integer constant coefficients, any offset
 *            that does not depend on the indices): any value. That is sound:
 *            the schedule then must not advance along dimension k;
 *   split    affine in the indices and in split points with a constant
 *            offset: a split point is the index t of a generate (or of a
 *            map over iota) in the body whose extent s is affine in the
 *            indices, 0 <= t <= s - 1 (rvar; push_rvar); the reference
 *            becomes a rec_range with those constraints (add_range);
 *   bad      anything else that mentions the indices (products of indices
 *            or by run-time values, division, data): not affine, an error.
 * The walk gives every expression a "form" bottom-up and every variable the
 * form of what it is bound to, so `let k = i - 1; d[k]` is uniform. Lambda
 * parameters and loop variables are free unless the values they take
 * depend on the indices: the arrays and initial values they come from, and
 * for accumulating operations (fold, scan, iterate, ...) also the lambda's
 * own body, which feeds its parameters back (a syntactic scan; backends
 * reassociate folds, so every parameter may receive a partial result). A
 * loop's variables are followed one by one (walk_loop).
 * generate and backpermute indices come from the shape alone, so the k of
 * `generate(m, |k| d[t - 1, k])` is free even though the body mentions t.
 *
 * The distance vectors go to rec_schedule (rec.c), which decides exactly
 * whether a schedule exists and finds the one with the fewest wavefronts;
 * it is stored as n int64 at m->ints[aux], reusing the slot on a re-check.
 * Diagnostics render the references involved from the IR ("d[i - 1] and
 * d[i + 1]"), so they read like the source.
 */
#include "check.h"
#include "rec.h"

#include <string.h>

typedef enum fkind {
  F_CONST, /* an integer constant c */
  F_FREE,  /* a value that does not depend on the indices */
  F_IDX,   /* i_dim + c */
  F_AFF,   /* another affine function of the indices (constant coefficients) */
  F_BAD,   /* depends on the indices in some other way */
  F_RANGE, /* i_dim + c with c out of the int64 range */
  F_SELF   /* the array being defined */
} fkind;

/* Coefficients are tracked for the first FORM_DIMS dimensions, enough for
 * every schedule rec_schedule can search (at most 8 non-free dimensions),
 * and for FORM_RV split-point variables (the indices of generates nested in
 * the body whose extents depend on the rec's indices). */
#define FORM_DIMS 8
#define FORM_RV 4

typedef struct form {
  uint8_t kind;
  uint32_t dim;
  int64_t c;
  /* F_AFF: sum co[k] * i_k + sum rv[q] * t_q + c (+ a value independent of
   * the indices when offfree); wide: coefficients beyond FORM_DIMS, known
   * only to be affine */
  int64_t co[FORM_DIMS];
  int64_t rv[FORM_RV];
  bool offfree, wide;
} form;

static const form FREE = {.kind = F_FREE};
static const form BAD = {.kind = F_BAD};

static bool mentions(form f) {
  return f.kind == F_IDX || f.kind == F_AFF || f.kind == F_BAD || f.kind == F_RANGE;
}

static form taint(bool t) {
  return t ? BAD : FREE;
}

typedef struct rw_entry {
  form f;
  ir_sym name;
} rw_entry;

/* A split-point variable t_q: the index of a generate (or of a map over an
 * iota) nested in the body whose extent s is affine in the rec's indices,
 * so that 0 <= t_q and, when s has a constant offset, t_q <= s - 1. The
 * constraints are rows over (i_1..i_FORM_DIMS, t_1..t_FORM_RV, 1) >= 0. */
#define CONS_W (FORM_DIMS + FORM_RV + 1)
typedef struct rvar {
  int64_t cons[2][CONS_W];
  uint32_t ncons;
} rvar;

/* The split-point information of one dependency (rec.h's rec_range), in
 * rw.rdata from off: vx (n * n), vt (n * nt), cons (ncons * (n + nt + 1)). */
typedef struct dep_range {
  size_t off; /* SIZE_MAX: a uniform dependency */
  uint32_t nt, ncons;
} dep_range;

/* State of the analysis of one REC node. */
typedef struct rw {
  chk *c;
  ac_module *m;
  ir_ref rec;
  uint32_t n;
  rw_entry *env; /* binders inside the body: env[0] is the array itself */
  size_t nenv, capenv;
  int64_t *dist;   /* ndeps * n */
  uint8_t *isfree; /* ndeps * n */
  ir_ref *refs;    /* the INDEX node of each dependency */
  uint32_t *text;  /* offset of each dependency's rendering in texts */
  dep_range *rng;  /* ndeps */
  size_t ndeps, capdist, capfree, caprefs, captext, caprng;
  int64_t *rdata;
  size_t nrdata, caprdata;
  rvar rv[FORM_RV]; /* the split-point variables in scope */
  uint32_t nrv;
  ir_buf texts;
} rw;

static bool rw_ok(const rw *w) {
  return w->c->st == AC_OK;
}

static bool rw_push(rw *w, form f, ir_sym name) {
  if (!ac_grow(w->c->ctx, (void **)&w->env, &w->capenv, w->nenv + 1, sizeof *w->env))
    return chk_oom(w->c);
  w->env[w->nenv++] = (rw_entry){f, name};
  return true;
}

static form lookup(const rw *w, int64_t idx) {
  if (idx >= 0 && (uint64_t)idx < w->nenv)
    return w->env[w->nenv - 1 - (size_t)idx].f;
  return FREE; /* bound outside the recurrence: a constant for it */
}

static ir_sym var_name(const rw *w, int64_t idx) {
  if (idx < 0)
    return IR_SYM_NONE;
  if ((uint64_t)idx < w->nenv)
    return w->env[w->nenv - 1 - (size_t)idx].name;
  size_t j = (size_t)idx - w->nenv;
  return j < w->c->nenv ? w->c->env[w->c->nenv - 1 - j].name : IR_SYM_NONE;
}

/* ---- rendering expressions for diagnostics ---- */

static void render(const rw *w, ir_ref r, ir_buf *b, unsigned depth);

static void render_args(const rw *w, ir_ref r, uint32_t from, ir_buf *b, unsigned depth) {
  uint32_t nk = ir_node_get(w->m, r)->nkids;
  for (uint32_t i = from; i < nk; i++) {
    if (i > from)
      ir_buf_puts(b, ", ");
    render(w, ir_kid(w->m, r, i), b, depth + 1);
  }
}

/* Renders an operand, in parentheses when it binds looser than `prec`. */
static void render_operand(const rw *w, ir_ref r, int prec, ir_buf *b, unsigned depth) {
  const ir_opinfo *oi = &ir_ops[ir_node_get(w->m, r)->op];
  bool paren = oi->syntax == SX_INFIX && oi->prec < prec;
  if (paren)
    ir_buf_putc(b, '(');
  render(w, r, b, depth + 1);
  if (paren)
    ir_buf_putc(b, ')');
}

static void render(const rw *w, ir_ref r, ir_buf *b, unsigned depth) {
  const ac_module *m = w->m;
  const ir_node *n = ir_node_get(m, r);
  const ir_opinfo *oi = &ir_ops[n->op];
  ac_scalar sc;
  if (depth > 8) {
    ir_buf_puts(b, "...");
    return;
  }
  switch ((ir_op)n->op) {
  case IR_VAR: {
    ir_sym s = var_name(w, n->attr);
    ir_buf_puts(b, s ? ir_sym_str(w->c->ctx, s) : "_");
    return;
  }
  case IR_LIT:
    if (!ir_ty_is_scalar(w->c->ctx, n->type, &sc))
      ir_buf_puts(b, "?");
    else if (sc == AC_BOOL)
      ir_buf_puts(b, n->lit.u ? "true" : "false");
    else if (sc == AC_F32 || sc == AC_F64)
      ir_buf_printf(b, "%g", n->lit.f);
    else if (sc >= AC_I8 && sc <= AC_I64)
      ir_buf_printf(b, "%lld", (long long)n->lit.i);
    else
      ir_buf_printf(b, "%llu", (unsigned long long)n->lit.u);
    return;
  case IR_TUPLE:
    ir_buf_putc(b, '(');
    render_args(w, r, 0, b, depth);
    ir_buf_putc(b, ')');
    return;
  case IR_PROJ:
    render_operand(w, ir_kid(m, r, 0), 100, b, depth);
    ir_buf_printf(b, ".%lld", (long long)n->attr);
    return;
  case IR_CAST:
    ir_buf_printf(b, "%s(", ir_ty_is_scalar(w->c->ctx, n->type, &sc) ? ac_scalar_name(sc) : "?");
    render(w, ir_kid(m, r, 0), b, depth + 1);
    ir_buf_putc(b, ')');
    return;
  case IR_INDEX:
    render_operand(w, ir_kid(m, r, 0), 100, b, depth);
    ir_buf_putc(b, '[');
    render_args(w, r, 1, b, depth);
    ir_buf_putc(b, ']');
    return;
  case IR_CALL:
    ir_buf_puts(b, n->attr >= 0 && (uint64_t)n->attr < m->nfuncs
                       ? ir_sym_str(w->c->ctx, m->funcs[n->attr].name)
                       : "?");
    ir_buf_putc(b, '(');
    render_args(w, r, 0, b, depth);
    ir_buf_putc(b, ')');
    return;
  case IR_LAM:
  case IR_FNREF:
    ir_buf_puts(b, "...");
    return;
  default:
    break;
  }
  if (oi->syntax == SX_INFIX) {
    /* comparisons do not chain: parenthesise them on both sides */
    render_operand(w, ir_kid(m, r, 0), oi->prec == 3 ? 4 : oi->prec, b, depth);
    ir_buf_printf(b, " %s ", oi->spelling);
    render_operand(w, ir_kid(m, r, 1), oi->prec + 1, b, depth);
  } else if (oi->syntax == SX_PREFIX) {
    ir_buf_puts(b, oi->spelling);
    render_operand(w, ir_kid(m, r, 0), 100, b, depth);
  } else if (oi->syntax == SX_CALL) {
    ir_buf_printf(b, "%s(", oi->spelling);
    render_args(w, r, 0, b, depth);
    ir_buf_putc(b, ')');
  } else {
    ir_buf_puts(b, "...");
  }
}

/* Where an expression starts in the source: binary operators carry the
 * location of the operator token, so go down their left operands. */
static ir_loc start_loc(const ac_module *m, ir_ref r) {
  while (ir_ops[ir_node_get(m, r)->op].syntax == SX_INFIX)
    r = ir_kid(m, r, 0);
  return ir_node_get(m, r)->loc;
}

/* ---- forms ---- */

static bool ck_add(int64_t a, int64_t b, int64_t *r) {
  if ((b > 0 && a > INT64_MAX - b) || (b < 0 && a <= INT64_MIN - b))
    return false;
  *r = a + b;
  return true;
}

static form lit_form(const rw *w, const ir_node *n) {
  ac_scalar sc;
  if (!ir_ty_is_scalar(w->c->ctx, n->type, &sc) || sc == AC_BOOL || sc == AC_F32 || sc == AC_F64)
    return FREE;
  if (sc >= AC_U8 && n->lit.u > INT64_MAX)
    return FREE;
  return (form){.kind = F_CONST, .dim = 0, .c = n->lit.i};
}

/* Overflow-checked int64 arithmetic for offsets and coefficients. */
static bool ck_mul(int64_t x, int64_t y, int64_t *r) {
  bool ok = x == 0 || y == 0 ||
            (x > 0 ? (y > 0 ? x <= INT64_MAX / y : y >= INT64_MIN / x)
                   : (y > 0 ? x >= INT64_MIN / y : x >= INT64_MAX / y));
  if (ok)
    *r = x * y;
  return ok;
}

/* Any form that is affine in the indices, as coefficients (CONST, FREE, IDX
 * and AFF are; BAD, RANGE and SELF are not). */
static bool to_lin(form f, form *l) {
  form z = {.kind = F_AFF};
  switch (f.kind) {
  case F_CONST:
    z.c = f.c;
    break;
  case F_FREE:
    z.offfree = true;
    break;
  case F_IDX:
    z.c = f.c;
    if (f.dim < FORM_DIMS)
      z.co[f.dim] = 1;
    else
      z.wide = true;
    break;
  case F_AFF:
    z = f;
    break;
  default:
    return false;
  }
  *l = z;
  return true;
}

/* The simplest form of an affine l: a constant, a free value, i_k + c (the
 * uniform shape: one coefficient 1 and a constant offset), or F_AFF. So
 * `2 * i - i - 1` and `-(1 - i)` are the uniform i - 1. */
static bool has_rv(form l) {
  for (uint32_t q = 0; q < FORM_RV; q++)
    if (l.rv[q] != 0)
      return true;
  return false;
}

static form from_lin(form l) {
  if (l.wide || has_rv(l))
    return l;
  uint32_t nz = 0, k = 0;
  for (uint32_t d = 0; d < FORM_DIMS; d++)
    if (l.co[d] != 0) {
      nz++;
      k = d;
    }
  if (nz == 0)
    return l.offfree ? FREE : (form){.kind = F_CONST, .dim = 0, .c = l.c};
  if (nz == 1 && l.co[k] == 1 && !l.offfree)
    return l.c != INT64_MIN ? (form){.kind = F_IDX, .dim = k, .c = l.c}
                            : (form){.kind = F_RANGE, .dim = k, .c = 0};
  return l;
}

/* a*x + b*y over linear forms; an overflowing offset or coefficient makes the
 * reference unusable (F_RANGE: "offset out of range"). */
static form lin_combine(form x, int64_t a, form y, int64_t b) {
  form r = {.kind = F_AFF, .offfree = x.offfree || y.offfree, .wide = x.wide || y.wide};
  int64_t p, q;
  for (uint32_t d = 0; d < FORM_DIMS; d++)
    if (!ck_mul(x.co[d], a, &p) || !ck_mul(y.co[d], b, &q) || !ck_add(p, q, &r.co[d]))
      return (form){.kind = F_RANGE, .dim = 0, .c = 0};
  for (uint32_t d = 0; d < FORM_RV; d++)
    if (!ck_mul(x.rv[d], a, &p) || !ck_mul(y.rv[d], b, &q) || !ck_add(p, q, &r.rv[d]))
      return (form){.kind = F_RANGE, .dim = 0, .c = 0};
  if (!ck_mul(x.c, a, &p) || !ck_mul(y.c, b, &q) || !ck_add(p, q, &r.c))
    return (form){.kind = F_RANGE, .dim = 0, .c = 0};
  return from_lin(r);
}

static form add_form(form a, form b, bool sub) {
  int64_t r;
  if (a.kind == F_CONST && b.kind == F_CONST)
    return b.c != INT64_MIN && ck_add(a.c, sub ? -b.c : b.c, &r)
               ? (form){.kind = F_CONST, .dim = 0, .c = r}
               : FREE;
  form la, lb;
  if (!mentions(a) && !mentions(b))
    return FREE;
  /* Sums and differences of affine forms stay affine (j - i, n - 1 - j). */
  if (to_lin(a, &la) && to_lin(b, &lb))
    return lin_combine(la, 1, lb, sub ? -1 : 1);
  return BAD;
}

/* A product is affine only when one side is an integer constant. */
static form mul_form(form a, form b) {
  int64_t r;
  if (a.kind == F_CONST && b.kind == F_CONST)
    return ck_mul(a.c, b.c, &r) ? (form){.kind = F_CONST, .dim = 0, .c = r}
                                : FREE; /* wraps: some constant */
  if (b.kind == F_CONST) {
    form t = a;
    a = b;
    b = t;
  }
  form lb;
  if (a.kind == F_CONST && to_lin(b, &lb))
    return lin_combine(lb, a.c, lb, 0);
  return taint(mentions(a) || mentions(b));
}

/* A conversion to an integer type keeps i + c (indices are i64 and real
 * extents fit every type they are converted to) and converts constants. */
static form cast_form(const rw *w, form a, ir_type to) {
  ac_scalar sc;
  if (!ir_ty_is_scalar(w->c->ctx, to, &sc) || sc < AC_I8 || sc > AC_U64)
    return taint(mentions(a));
  if (a.kind != F_CONST)
    return a;
  unsigned bits = (unsigned)ac_scalar_size(sc) * 8;
  uint64_t u = (uint64_t)a.c;
  if (bits < 64) {
    uint64_t mask = ((uint64_t)1 << bits) - 1;
    u &= mask;
    if (sc <= AC_I64 && (u >> (bits - 1)))
      u |= ~mask;
  } else if (sc == AC_U64 && u > INT64_MAX) {
    return FREE;
  }
  return (form){.kind = F_CONST, .dim = 0, .c = (int64_t)u};
}

/* Does e mention the indices? A syntactic scan used where a lambda's body
 * feeds its own parameters: `local` binders lie between e and the walk's
 * scope. */
static bool raw_mentions(const rw *w, ir_ref e, size_t local) {
  const ir_node *n = ir_node_get(w->m, e);
  if (n->op == IR_VAR)
    return n->attr >= 0 && (uint64_t)n->attr >= local &&
           mentions(lookup(w, n->attr - (int64_t)local));
  for (uint32_t i = 0; i < n->nkids; i++)
    if (raw_mentions(w, ir_kid(w->m, e, i), local + ir_binders(w->m, e, i)))
      return true;
  return false;
}

static form walk(rw *w, ir_ref r);

/* ---- dependencies ---- */

/* A component through split points: affine in the indices (the first
 * FORM_DIMS, all of them) and in some t_q, with a constant offset. */
static bool ranged_form(const rw *w, form f) {
  return f.kind == F_AFF && !f.offfree && !f.wide && w->n <= FORM_DIMS && has_rv(f);
}

/* -x, or INT64_MIN (which rec_schedule reports as too large) when -x is not
 * representable. */
static int64_t neg_or_min(int64_t x) {
  return x == INT64_MIN ? INT64_MIN : -x;
}

/* Records dependency j's split-point information (dep_range): component k
 * of its distance is i_k - f_k = sum_m (delta_km - co_m) i_m - sum_q rv_q t_q
 * - c for ranged components, a constant for uniform ones, and the
 * constraints of every split-point variable in scope. */
static bool add_range(rw *w, size_t j, const form *fs) {
  uint32_t n = w->n, nt = w->nrv, nc = 0;
  for (uint32_t q = 0; q < nt; q++)
    nc += w->rv[q].ncons;
  size_t need = (size_t)n * n + (size_t)n * nt + (size_t)nc * (n + nt + 1);
  if (!ac_grow(w->c->ctx, (void **)&w->rdata, &w->caprdata, w->nrdata + need, sizeof *w->rdata))
    return chk_oom(w->c);
  int64_t *vx = w->rdata + w->nrdata, *vt = vx + (size_t)n * n, *cons = vt + (size_t)n * nt;
  memset(vx, 0, need * sizeof *vx);
  for (uint32_t k = 0; k < n; k++) {
    if (!ranged_form(w, fs[k]))
      continue;
    for (uint32_t m = 0; m < n; m++) {
      int64_t v = neg_or_min(fs[k].co[m]);
      if (k == m && v != INT64_MIN)
        v = v == INT64_MAX ? INT64_MIN : v + 1;
      vx[k * n + m] = v;
    }
    for (uint32_t q = 0; q < nt; q++)
      vt[k * nt + q] = neg_or_min(fs[k].rv[q]);
  }
  size_t row = 0;
  for (uint32_t q = 0; q < nt; q++)
    for (uint32_t i = 0; i < w->rv[q].ncons; i++, row++) {
      const int64_t *src = w->rv[q].cons[i];
      int64_t *dst = cons + row * (n + nt + 1);
      memcpy(dst, src, n * sizeof *dst);
      memcpy(dst + n, src + FORM_DIMS, nt * sizeof *dst);
      dst[n + nt] = src[CONS_W - 1];
    }
  w->rng[j] = (dep_range){.off = w->nrdata, .nt = nt, .ncons = nc};
  w->nrdata += need;
  return true;
}

static bool add_dep(rw *w, ir_ref ref, const form *fs) {
  chk *c = w->c;
  uint32_t n = w->n;
  size_t j = w->ndeps;
  for (uint32_t k = 0; k < n; k++) {
    if (fs[k].kind != F_BAD && fs[k].kind != F_RANGE)
      continue;
    ir_ref e = ir_kid(w->m, ref, k + 1);
    ir_buf b;
    ir_buf_init(&b, c->ctx);
    render(w, e, &b, 0);
    if (b.oom)
      chk_oom(c);
    else if (fs[k].kind == F_RANGE)
      chk_fail_at(c, start_loc(w->m, e), "rec dependency offset out of range: %s", ir_buf_cstr(&b));
    else
      chk_fail_at(c, start_loc(w->m, e), "rec dependency is not affine in the rec indices: %s",
                  ir_buf_cstr(&b));
    ir_buf_free(&b);
    return false;
  }
  if (!ac_grow(c->ctx, (void **)&w->dist, &w->capdist, (j + 1) * n, sizeof *w->dist) ||
      !ac_grow(c->ctx, (void **)&w->isfree, &w->capfree, (j + 1) * n, sizeof *w->isfree) ||
      !ac_grow(c->ctx, (void **)&w->refs, &w->caprefs, j + 1, sizeof *w->refs) ||
      !ac_grow(c->ctx, (void **)&w->text, &w->captext, j + 1, sizeof *w->text) ||
      !ac_grow(c->ctx, (void **)&w->rng, &w->caprng, j + 1, sizeof *w->rng))
    return chk_oom(c);
  bool any_ranged = false;
  for (uint32_t k = 0; k < n; k++) {
    bool uniform = fs[k].kind == F_IDX && fs[k].dim == k;
    bool ranged = ranged_form(w, fs[k]);
    any_ranged |= ranged;
    w->isfree[j * n + k] = !uniform && !ranged;
    w->dist[j * n + k] = uniform ? -fs[k].c : ranged ? neg_or_min(fs[k].c) : 0;
  }
  w->rng[j] = (dep_range){.off = SIZE_MAX};
  if (any_ranged && !add_range(w, j, fs))
    return false;
  w->refs[j] = ref;
  w->text[j] = (uint32_t)w->texts.len;
  render(w, ref, &w->texts, 0);
  ir_buf_putc(&w->texts, 0);
  if (w->texts.oom)
    return chk_oom(c);
  w->ndeps++;
  return true;
}

static form walk_index(rw *w, ir_ref r) {
  uint32_t nk = ir_node_get(w->m, r)->nkids;
  ir_ref a = ir_kid(w->m, r, 0);
  const ir_node *an = ir_node_get(w->m, a);
  bool self = an->op == IR_VAR && an->attr >= 0 && (uint64_t)an->attr + 1 == w->nenv;
  form fa = an->op == IR_VAR ? lookup(w, an->attr) : walk(w, a);
  form small[8];
  form *fs = nk - 1 <= 8 ? small : ac_alloc(w->c->ctx, (nk - 1) * sizeof *fs);
  if (!fs)
    return chk_oom(w->c), FREE;
  bool any = mentions(fa);
  for (uint32_t i = 1; i < nk && rw_ok(w); i++) {
    fs[i - 1] = walk(w, ir_kid(w->m, r, i));
    any |= mentions(fs[i - 1]);
  }
  if (rw_ok(w) && self && nk - 1 == w->n)
    add_dep(w, r, fs);
  if (fs != small)
    ac_free(w->c->ctx, fs);
  return taint(any);
}

static bool accumulates(ir_op op) {
  return ir_ops[op].acc;
}

/* Do the parameters of the lambda at child `lk` of r take values that
 * depend on the indices? srcmask: which of the first 32 children mention
 * them; any: whether any non-lambda child does. */
static bool params_tainted(const rw *w, ir_ref r, uint32_t lk, uint32_t srcmask, bool any) {
  ir_op op = (ir_op)ir_node_get(w->m, r)->op;
  const ir_node *n = ir_node_get(w->m, r);
  switch (op) {
  case IR_GENERATE:
  case IR_BACKPERMUTE:
    return srcmask & 1u; /* indices range over the shape */
  case IR_PERMUTE:
    if (lk == 2)
      return srcmask & (1u << 3); /* indices of the source array */
    return (srcmask & ((1u << 1) | (1u << 3))) ||
           raw_mentions(w, ir_kid(w->m, ir_kid(w->m, r, lk), 0),
                        (size_t)ir_node_get(w->m, ir_kid(w->m, r, lk))->attr);
  default:
    break;
  }
  if (any || !accumulates(op))
    return any;
  for (uint32_t i = 0; i < n->nkids; i++) {
    ir_ref k = ir_kid(w->m, r, i);
    const ir_node *kn = ir_node_get(w->m, k);
    if (kn->op == IR_LAM && raw_mentions(w, ir_kid(w->m, k, 0), (size_t)kn->attr))
      return true;
  }
  return false;
}

/* The number of parameters of r's lambda, 0 when it has none. */
static uint32_t lam_params(const rw *w, ir_ref r) {
  const ir_node *n = ir_node_get(w->m, r);
  for (uint32_t i = 0; i < n->nkids; i++) {
    const ir_node *k = ir_node_get(w->m, ir_kid(w->m, r, i));
    if (k->op == IR_LAM)
      return (uint32_t)k->attr;
  }
  return 0;
}

/* The form of a generate's extent as the bound of its index's range:
 * max(c, e) with an integer constant c <= 0 lets the index take the same
 * values as extent e would (none when e <= 0), so it has e's form; the
 * guard programs write against negative extents. Else the extent's form. */
static form extent_form(rw *w, ir_ref k) {
  const ir_node *kn = ir_node_get(w->m, k);
  if (kn->op != IR_MAX || kn->nkids != 2)
    return walk(w, k);
  form a = walk(w, ir_kid(w->m, k, 0));
  form b = walk(w, ir_kid(w->m, k, 1));
  if (a.kind == F_CONST && a.c <= 0)
    return b;
  if (b.kind == F_CONST && b.c <= 0)
    return a;
  return taint(mentions(a) || mentions(b));
}

/* Walks child i of r; when it gives the extents the lambda's parameters
 * range over (a generate's shape, the n of a map over iota(n)), also their
 * forms, one per parameter, in shp (*nshp of them, 0 when unknown). */
static form walk_extent(rw *w, ir_ref r, uint32_t i, form *shp, uint32_t *nshp) {
  const ir_node *n = ir_node_get(w->m, r);
  ir_ref k = ir_kid(w->m, r, i);
  uint32_t np = lam_params(w, r);
  if (n->op == IR_GENERATE && i == 0 && np == 1) {
    shp[0] = extent_form(w, k);
    *nshp = 1;
    return shp[0];
  }
  if (n->op == IR_GENERATE && i == 0 && np > 1 && np <= FORM_RV) {
    /* a tuple of extents, maybe under the lets cse makes of its parts */
    size_t pushed = 0;
    ir_ref tk = k;
    bool any = false;
    while (ir_node_get(w->m, tk)->op == IR_LET && rw_ok(w)) {
      form v = walk(w, ir_kid(w->m, tk, 0));
      any |= mentions(v);
      if (!rw_push(w, v, chk_node_name(w->c, tk, 0)))
        break;
      pushed++;
      tk = ir_kid(w->m, tk, 1);
    }
    const ir_node *tn = ir_node_get(w->m, tk);
    if (tn->op == IR_TUPLE && tn->nkids == np && rw_ok(w)) {
      for (uint32_t j = 0; j < np; j++)
        any |= mentions(shp[j] = extent_form(w, ir_kid(w->m, tk, j)));
      *nshp = np;
    } else if (rw_ok(w)) {
      any |= mentions(walk(w, tk));
    }
    w->nenv -= pushed;
    return taint(any);
  }
  ir_ref io = k; /* fusion marks the iota delay(iota(n)) */
  while (ir_node_get(w->m, io)->op == IR_DELAY)
    io = ir_kid(w->m, io, 0);
  if (n->op == IR_MAP && i == 1 && n->nkids == 2 && ir_node_get(w->m, io)->op == IR_IOTA) {
    shp[0] = extent_form(w, ir_kid(w->m, io, 0));
    *nshp = 1;
    return taint(mentions(shp[0]));
  }
  return walk(w, k);
}

/* Makes a parameter ranging over 0..s-1 a split-point variable when s is
 * affine in the indices and mentions them: its form, or taint(s) when it
 * cannot be one (not affine, or FORM_RV variables in scope already). */
static form push_rvar(rw *w, form s) {
  form l;
  if (!mentions(s) || !to_lin(s, &l) || l.wide || w->n > FORM_DIMS || w->nrv >= FORM_RV)
    return taint(mentions(s));
  uint32_t q = w->nrv;
  rvar *v = &w->rv[q];
  memset(v, 0, sizeof *v);
  v->cons[0][FORM_DIMS + q] = 1; /* t_q >= 0 */
  v->ncons = 1;
  int64_t top;
  if (!l.offfree && l.c != INT64_MIN && ck_add(l.c, -1, &top)) { /* s - 1 - t_q >= 0 */
    memcpy(v->cons[1], l.co, sizeof l.co);
    memcpy(v->cons[1] + FORM_DIMS, l.rv, sizeof l.rv);
    v->cons[1][FORM_DIMS + q] = -1;
    v->cons[1][CONS_W - 1] = top;
    v->ncons = 2;
  }
  w->nrv++;
  form t = {.kind = F_AFF};
  t.rv[q] = 1;
  return t;
}

static form walk_generic(rw *w, ir_ref r) {
  uint32_t nk = ir_node_get(w->m, r)->nkids;
  uint32_t mask = 0, nshp = 0;
  form shp[FORM_RV];
  bool any = false;
  for (uint32_t i = 0; i < nk && rw_ok(w); i++) {
    ir_ref k = ir_kid(w->m, r, i);
    uint16_t op = ir_node_get(w->m, k)->op;
    if (op == IR_LAM || op == IR_FNREF)
      continue;
    if (mentions(walk_extent(w, r, i, shp, &nshp))) {
      any = true;
      if (i < 32)
        mask |= 1u << i;
    }
  }
  bool result = any;
  for (uint32_t i = 0; i < nk && rw_ok(w); i++) {
    ir_ref k = ir_kid(w->m, r, i);
    const ir_node *kn = ir_node_get(w->m, k);
    if (kn->op != IR_LAM)
      continue;
    size_t np = (size_t)kn->attr;
    form p = taint(params_tainted(w, r, i, mask, any));
    uint32_t nrv = w->nrv;
    size_t j = 0;
    for (; j < np; j++)
      if (!rw_push(w, nshp == np ? push_rvar(w, shp[j]) : p, chk_node_name(w->c, k, (uint32_t)j)))
        break;
    if (j == np)
      result |= mentions(walk(w, ir_kid(w->m, k, 0)));
    w->nenv -= j;
    w->nrv = nrv;
  }
  return taint(result);
}

/* Which components of a loop step's result mention the indices, given the
 * current forms of the loop variables (pushed by the caller): a step is
 * usually `let ..; (e_1, .., e_k)`, whose fields are scanned one by one. */
static void step_mentions(rw *w, ir_ref body, uint32_t k, bool *out) {
  size_t pushed = 0;
  ir_ref e = body;
  bool ok = true;
  for (;;) {
    const ir_node *n = ir_node_get(w->m, e);
    if (n->op == IR_LET || n->op == IR_LETTUP) {
      form f = taint(raw_mentions(w, ir_kid(w->m, e, 0), 0));
      uint32_t nb = n->op == IR_LET ? 1 : (uint32_t)n->attr;
      for (uint32_t i = 0; ok && i < nb; i++, pushed++)
        ok = rw_push(w, f, IR_SYM_NONE);
      if (!ok) {
        pushed--;
        break;
      }
      e = ir_kid(w->m, e, 1);
      continue;
    }
    bool fields = k > 1 && n->op == IR_TUPLE && n->nkids == k;
    bool all = !fields && raw_mentions(w, e, 0);
    for (uint32_t i = 0; i < k; i++)
      out[i] = fields ? raw_mentions(w, ir_kid(w->m, e, i), 0) : all;
    break;
  }
  w->nenv -= pushed;
}

/* loop (x_1 = e_1, ..) while c { step }: x_j depends on the indices when e_j
 * or component j of the step does, given the others: a fixpoint, at most k
 * rounds, so `loop (k = 0, acc = 0) while k < n { (k + 1, acc + d[i - 1, k]) }`
 * keeps k free although acc is not. */
static form walk_loop(rw *w, ir_ref r) {
  uint32_t k = ir_node_get(w->m, r)->nkids - 2;
  ir_ref cond = ir_kid(w->m, r, k), step = ir_kid(w->m, r, k + 1);
  bool *t = ac_alloc(w->c->ctx, 2 * (size_t)k * sizeof *t);
  if (!t)
    return chk_oom(w->c), FREE;
  bool *fm = t + k, any = false;
  for (uint32_t i = 0; i < k && rw_ok(w); i++)
    any |= t[i] = mentions(walk(w, ir_kid(w->m, r, i)));
  for (bool changed = true; changed && rw_ok(w);) {
    changed = false;
    uint32_t j = 0;
    while (j < k && rw_push(w, taint(t[j]), IR_SYM_NONE))
      j++;
    if (j == k)
      step_mentions(w, ir_kid(w->m, step, 0), k, fm);
    w->nenv -= j;
    for (uint32_t i = 0; i < k && j == k; i++)
      if (fm[i] && !t[i])
        changed = t[i] = true;
  }
  ir_ref lams[2] = {cond, step};
  for (int l = 0; l < 2 && rw_ok(w); l++) {
    uint32_t j = 0;
    while (j < k && rw_push(w, taint(t[j]), chk_node_name(w->c, lams[l], j)))
      j++;
    if (j == k)
      any |= mentions(walk(w, ir_kid(w->m, lams[l], 0)));
    w->nenv -= j;
  }
  ac_free(w->c->ctx, t);
  return taint(any);
}

static form walk_lettup(rw *w, ir_ref r) {
  const ir_node *n = ir_node_get(w->m, r);
  size_t k = (size_t)n->attr;
  ir_ref v = ir_kid(w->m, r, 0);
  const ir_node *vn = ir_node_get(w->m, v);
  bool fields = vn->op == IR_TUPLE && vn->nkids == k;
  form whole = fields ? FREE : walk(w, v);
  /* All fields are walked in the let's own scope before any name is bound:
   * the variables of field j do not see the names bound for fields < j. */
  form small[8];
  form *fs = k <= 8 ? small : ac_alloc(w->c->ctx, k * sizeof *fs);
  if (!fs)
    return chk_oom(w->c), FREE;
  for (size_t j = 0; j < k; j++)
    fs[j] = fields && rw_ok(w) ? walk(w, ir_kid(w->m, v, (uint32_t)j)) : taint(mentions(whole));
  size_t j = 0;
  for (; j < k && rw_ok(w); j++)
    if (!rw_push(w, fs[j], chk_node_name(w->c, r, (uint32_t)j)))
      break;
  form res = j == k && rw_ok(w) ? walk(w, ir_kid(w->m, r, 1)) : FREE;
  w->nenv -= j;
  if (fs != small)
    ac_free(w->c->ctx, fs);
  return res;
}

/* A recurrence nested in the body: its indices range over bounds that may
 * depend on ours, its elements over everything in it. */
static form walk_inner_rec(rw *w, ir_ref r) {
  const ir_node *n = ir_node_get(w->m, r);
  uint32_t nd = (uint32_t)n->attr;
  bool bounds = false;
  for (uint32_t i = 0; i < 2 * nd && rw_ok(w); i++)
    bounds |= mentions(walk(w, ir_kid(w->m, r, i)));
  ir_ref body = ir_kid(w->m, r, 2 * nd);
  bool self = bounds || raw_mentions(w, body, nd + 1);
  bool ok = rw_push(w, taint(self), chk_node_name(w->c, r, 0));
  size_t pushed = ok;
  for (uint32_t j = 0; ok && j < nd; j++) {
    ok = rw_push(w, taint(bounds), chk_node_name(w->c, r, j + 1));
    pushed += ok;
  }
  form res = ok ? walk(w, body) : FREE;
  w->nenv -= pushed;
  return taint(bounds || mentions(res));
}

static form walk(rw *w, ir_ref r) {
  const ir_node *n = ir_node_get(w->m, r);
  form a, b;
  if (!rw_ok(w))
    return FREE;
  switch ((ir_op)n->op) {
  case IR_VAR:
    a = lookup(w, n->attr);
    return a.kind == F_SELF ? FREE : a;
  case IR_LIT:
    return lit_form(w, n);
  case IR_ADD:
  case IR_SUB:
    a = walk(w, ir_kid(w->m, r, 0));
    b = walk(w, ir_kid(w->m, r, 1));
    return add_form(a, b, n->op == IR_SUB);
  case IR_MUL:
    a = walk(w, ir_kid(w->m, r, 0));
    b = walk(w, ir_kid(w->m, r, 1));
    return mul_form(a, b);
  case IR_NEG:
    a = walk(w, ir_kid(w->m, r, 0));
    if (a.kind == F_CONST && a.c != INT64_MIN)
      return (form){.kind = F_CONST, .dim = 0, .c = -a.c};
    if (mentions(a) && to_lin(a, &b))
      return lin_combine(b, -1, b, 0);
    return taint(mentions(a));
  case IR_CAST:
    return cast_form(w, walk(w, ir_kid(w->m, r, 0)), n->type);
  case IR_INDEX:
    return walk_index(w, r);
  case IR_LET:
    a = walk(w, ir_kid(w->m, r, 0));
    if (!rw_push(w, a, chk_node_name(w->c, r, 0)))
      return FREE;
    b = walk(w, ir_kid(w->m, r, 1));
    w->nenv--;
    return b;
  case IR_LETTUP:
    return walk_lettup(w, r);
  case IR_REC:
    return walk_inner_rec(w, r);
  case IR_LOOP:
    return walk_loop(w, r);
  default:
    return walk_generic(w, r);
  }
}

/* ---- the schedule ---- */

static void report_conflict(rw *w, const uint32_t *cul, uint32_t nc) {
  ir_buf b;
  ir_buf_init(&b, w->c->ctx);
  for (uint32_t i = 0; i < nc; i++) {
    if (i > 0)
      ir_buf_puts(&b, i + 1 == nc ? " and " : ", ");
    ir_buf_puts(&b, w->texts.data + w->text[cul[i]]);
  }
  if (b.oom)
    chk_oom(w->c);
  else if (nc == 1 && w->rng[cul[0]].off != SIZE_MAX)
    chk_fail(w->c, w->rec,
             "rec dependency admits no schedule (at some split point it reads the element "
             "itself, or elements on both sides of it): %s",
             ir_buf_cstr(&b));
  else
    chk_fail(w->c, w->rec, "rec dependencies admit no schedule (cycle): %s", ir_buf_cstr(&b));
  ir_buf_free(&b);
}

/* The schedule the user asked for with `by` (want) orders not every read of
 * p: names those it does not (each on its own is a problem of one
 * dependency) and the schedule the search found (found). */
static void report_unordered(rw *w, const rec_problem *p, const int64_t *want,
                             const int64_t *found) {
  uint32_t n = p->ndims;
  ir_buf b;
  ir_buf_init(&b, w->c->ctx);
  ir_buf_puts(&b, "rec schedule by ");
  ir_sched_print(&b, n, want);
  uint32_t bad = 0, *which = ac_alloc(w->c->ctx, (p->ndeps ? p->ndeps : 1) * sizeof *which);
  if (!which) {
    ir_buf_free(&b);
    chk_oom(w->c);
    return;
  }
  for (uint32_t j = 0; j < p->ndeps; j++) {
    rec_range one;
    rec_problem q = {n, 1, p->dist + (size_t)j * n, p->isfree + (size_t)j * n, 0, NULL};
    for (uint32_t i = 0; i < p->nranges; i++)
      if (p->ranges[i].dep == j) {
        one = p->ranges[i];
        one.dep = 0;
        q.nranges = 1;
        q.ranges = &one;
      }
    if (!rec_schedule_valid(w->c->ctx, &q, want))
      which[bad++] = j;
  }
  ir_buf_puts(&b, bad == 1 ? " does not order the read " : " does not order the reads ");
  for (uint32_t i = 0; i < bad; i++) {
    if (i > 0)
      ir_buf_puts(&b, i + 1 == bad ? " and " : ", ");
    ir_buf_puts(&b, w->texts.data + w->text[which[i]]);
  }
  ac_free(w->c->ctx, which);
  ir_buf_puts(&b, ": an element read must lie on an earlier wavefront (a smaller product of the "
                  "schedule with its indices) than the element reading it; by ");
  ir_sched_print(&b, n, found);
  ir_buf_puts(&b, " would do");
  if (b.oom)
    chk_oom(w->c);
  else
    chk_fail(w->c, w->rec, "%s", ir_buf_cstr(&b));
  ir_buf_free(&b);
}

static void schedule(rw *w) {
  chk *c = w->c;
  ac_module *m = w->m;
  uint32_t n = w->n;
  /* equal uniform vectors are one constraint; keep the first reference of
   * each (split-point dependencies are kept as they are) */
  size_t nd = 0, nr = 0;
  for (size_t j = 0; j < w->ndeps; j++) {
    size_t i = 0;
    while (w->rng[j].off == SIZE_MAX && i < nd &&
           (w->rng[i].off != SIZE_MAX ||
            memcmp(w->dist + i * n, w->dist + j * n, n * sizeof *w->dist) ||
            memcmp(w->isfree + i * n, w->isfree + j * n, n)))
      i++;
    if (w->rng[j].off == SIZE_MAX && i < nd)
      continue;
    memmove(w->dist + nd * n, w->dist + j * n, n * sizeof *w->dist);
    memmove(w->isfree + nd * n, w->isfree + j * n, n);
    w->refs[nd] = w->refs[j];
    w->text[nd] = w->text[j];
    w->rng[nd] = w->rng[j];
    nr += w->rng[nd].off != SIZE_MAX;
    nd++;
  }
  if (nd > UINT32_MAX) {
    chk_fail(c, w->rec, "rec has too many dependencies");
    return;
  }
  uint32_t *cul = ac_alloc(c->ctx, (nd ? nd : 1) * sizeof *cul);
  rec_range *rr = ac_alloc(c->ctx, (nr ? nr : 1) * sizeof *rr);
  int64_t small[8];
  int64_t *a = n <= 8 ? small : ac_alloc(c->ctx, n * sizeof *a);
  if (!cul || !a || !rr) {
    chk_oom(c);
  } else {
    nr = 0;
    for (size_t j = 0; j < nd; j++) {
      const dep_range *g = &w->rng[j];
      if (g->off == SIZE_MAX)
        continue;
      const int64_t *vx = w->rdata + g->off, *vt = vx + (size_t)n * n;
      rr[nr++] = (rec_range){(uint32_t)j, g->nt, g->ncons, vx, vt, vt + (size_t)n * g->nt};
    }
    rec_problem p = {n, (uint32_t)nd, w->dist, w->isfree, (uint32_t)nr, rr};
    uint32_t nc = 0;
    switch (rec_schedule(c->ctx, &p, a, cul, &nc)) {
    case REC_OK: {
      ir_node *rn = ir_node_get(m, w->rec);
      if (rn->flags & IR_F_SCHED) { /* asked for with `by`: kept if valid */
        if (rn->aux == 0 || (size_t)rn->aux + n > m->nints)
          chk_fail(c, w->rec, "malformed IR: rec with a requested schedule but no coefficients");
        else if (!rec_schedule_valid(c->ctx, &p, m->ints + rn->aux))
          report_unordered(w, &p, m->ints + rn->aux, a);
        break;
      }
      if (rn->aux != 0 && (size_t)rn->aux + n <= m->nints) {
        memcpy(m->ints + rn->aux, a, n * sizeof *a);
      } else {
        uint32_t off = ir_ints_push(m, n, a);
        if (m->oom)
          chk_oom(c);
        else
          ir_node_get(m, w->rec)->aux = off;
      }
      break;
    }
    case REC_SELF:
      chk_fail(c, w->refs[cul[0]], "rec element depends on itself");
      break;
    case REC_NONE:
      report_conflict(w, cul, nc);
      break;
    case REC_TOO_COMPLEX:
      chk_fail(c, w->rec, "rec dependencies are too large or too many to schedule");
      break;
    default:
      chk_oom(c);
      break;
    }
  }
  ac_free(c->ctx, cul);
  ac_free(c->ctx, rr);
  if (a != small)
    ac_free(c->ctx, a);
}

static void analyse(chk *c, ir_ref r, uint32_t n) {
  rw w;
  memset(&w, 0, sizeof w);
  w.c = c;
  w.m = c->m;
  w.rec = r;
  w.n = n;
  ir_buf_init(&w.texts, c->ctx);
  bool ok = rw_push(&w, (form){.kind = F_SELF, .dim = 0, .c = 0}, chk_node_name(c, r, 0));
  for (uint32_t k = 0; ok && k < n; k++)
    ok = rw_push(&w, (form){.kind = F_IDX, .dim = k, .c = 0}, chk_node_name(c, r, k + 1));
  if (ok)
    walk(&w, ir_kid(c->m, r, 2 * n));
  if (rw_ok(&w))
    schedule(&w);
  ac_free(c->ctx, w.env);
  ac_free(c->ctx, w.dist);
  ac_free(c->ctx, w.isfree);
  ac_free(c->ctx, w.refs);
  ac_free(c->ctx, w.text);
  ac_free(c->ctx, w.rng);
  ac_free(c->ctx, w.rdata);
  ir_buf_free(&w.texts);
}

/* ---- typing ---- */

ir_type chk_rec(chk *c, ir_ref r) {
  ir_node *nd = ir_node_get(c->m, r);
  int64_t n = nd->attr;
  ir_type t = nd->type, elem;
  uint32_t rank;
  if (n < 1 || n > 64 || nd->nkids != 2 * (uint32_t)n + 1)
    return chk_fail(c, r, "malformed IR: rec of rank %lld with %u children", (long long)n,
                    nd->nkids),
           IR_TY_NONE;
  if (!ir_ty_array_view(c->ctx, t, &elem, &rank) || rank != n || !ir_ty_is_element(c->ctx, elem))
    return chk_fail(c, r, "malformed IR: rec without an array type of rank %lld", (long long)n),
           IR_TY_NONE;
  for (uint32_t i = 0; i < 2 * n; i++)
    if (!chk_index_pos(c, ir_kid(c->m, r, i), "rec bound", "rec bounds"))
      return IR_TY_NONE;
  bool ok = chk_push(c, t, chk_node_name(c, r, 0), ENV_SELF);
  size_t pushed = ok;
  for (uint32_t k = 0; ok && k < n; k++) {
    ok = chk_push(c, c->t_i64, chk_node_name(c, r, k + 1), ENV_PLAIN);
    pushed += ok;
  }
  ok = ok && chk_check(c, ir_kid(c->m, r, 2 * (uint32_t)n), elem);
  chk_pop(c, pushed);
  if (!ok)
    return IR_TY_NONE;
  analyse(c, r, (uint32_t)n);
  return c->st == AC_OK ? t : IR_TY_NONE;
}
