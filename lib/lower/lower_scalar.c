/* lib/lower/lower_scalar.c: scalars at plan level.
 *
 * Three things the host side of a plan needs that are not array
 * operations:
 *   - PLAN EXPRESSIONS built with constant folding (lw_x_*): extents,
 *     counts and checks. Folding follows the plan's i64 arithmetic, which
 *     is the language's (docs/language.md §6.1), so folding never changes a
 *     result. Expressions deeper than LW_XDEPTH are cut by storing a part
 *     into a word (plans bound expression depth, runtime/plan_impl.h).
 *   - SIZE INFERENCE (Nikola's): an i64 expression made of literals, i64
 *     words, lengths and extents of plan-level arrays and + - * / % min max
 *     is moved into the plan as an expression, so `generate(len(xs) - 1,
 *     ..)` allocates `[(%1 - 1)]` and no kernel runs. Integers of other
 *     types (shapes and counts may have any integer type) are read as the
 *     interpreter reads them (interp_sc_to_i64): from a variable's word by
 *     plan arithmetic, computed once into a word; from scalar code by its
 *     kernel, which stores the converted value. Literals of any type are a
 *     `set` of their bits.
 *   - SCALAR KERNELS: any other scalar expression is computed by a
 *     one-chunk kernel that stores its value into fresh words. Its
 *     plan-level subterms (a fold, a map whose length is taken, an array
 *     literal that is indexed) are lowered first and handed to the kernel
 *     through cg_fn.pre_ref/pre_val; only subterms that are always
 *     evaluated are lifted (not the right operand of && / ||, nor a
 *     branch), so lifting changes nothing but the order of evaluation.
 * Runtime messages (lw_check) are built here too: a site format carries two
 * int64 values, so constant parts of a message are printed into the format.
 */
#include "lower/skel.h"

#include <stdio.h>
#include <string.h>

/* Expressions deeper than this are split by a `set` (plans allow 200). */
#define LW_XDEPTH 48u

/* ---- plan expressions ---- */

static uint8_t x_depth(lw *L, uint32_t x) {
  return x < L->capxdepth && L->xdepth[x] ? L->xdepth[x] : 1;
}

static void x_note_depth(lw *L, uint32_t x, unsigned d) {
  if (x == PL_AUTO) /* the plan ran out of memory: pl_finish reports it */
    return;
  size_t old = L->capxdepth;
  if (x >= old) {
    if (!ac_grow(L->ctx, (void **)&L->xdepth, &L->capxdepth, (size_t)x + 1, sizeof *L->xdepth)) {
      cg_error(L->M, AC_ERR_NOMEM, 0, "out of memory");
      return;
    }
    memset(L->xdepth + old, 0, L->capxdepth - old); /* 0: not recorded, depth 1 */
  }
  L->xdepth[x] = (uint8_t)(d > 255 ? 255 : d);
}

uint32_t lw_x_const(lw *L, int64_t k) {
  return pl_x_const(L->p, k);
}

uint32_t lw_x_word(lw *L, uint32_t slot) {
  return pl_x_word(L->p, slot);
}

bool lw_x_is_const(lw *L, uint32_t x, int64_t *k) {
  if (x >= L->p->nexprs || L->p->exprs[x].op != PX_CONST)
    return false;
  if (k)
    *k = L->p->exprs[x].k;
  return true;
}

/* The plan's (and the language's) i64 operations on constants. */
static int64_t x_fold(pl_xop op, int64_t a, int64_t b) {
  uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
  switch (op) {
  case PX_ADD: return (int64_t)(ua + ub);
  case PX_SUB: return (int64_t)(ua - ub);
  case PX_MUL: return (int64_t)(ua * ub);
  case PX_DIV: return b == 0 ? 0 : (a == INT64_MIN && b == -1) ? INT64_MIN : a / b;
  case PX_REM: return b == 0 ? a : b == -1 ? 0 : a % b;
  case PX_EQ: return a == b;
  case PX_NE: return a != b;
  case PX_LT: return a < b;
  case PX_LE: return a <= b;
  case PX_MIN: return a < b ? a : b;
  default: return a > b ? a : b; /* PX_MAX */
  }
}

uint32_t lw_x_to_word(lw *L, uint32_t x) {
  if (x < L->p->nexprs && L->p->exprs[x].op == PX_WORD)
    return L->p->exprs[x].a;
  uint32_t w = pl_slots(L->p, 1);
  pl_set(L->p, w, x);
  return w;
}

uint32_t lw_x_hoist(lw *L, uint32_t x) {
  return lw_x_is_const(L, x, NULL) ? x : lw_x_word(L, lw_x_to_word(L, x));
}

/* x itself if it reads a word, else a read of a word set to x. */
static uint32_t x_in_word(lw *L, uint32_t x) {
  if (x < L->p->nexprs && L->p->exprs[x].op == PX_WORD)
    return x;
  return lw_x_word(L, lw_x_to_word(L, x));
}

uint32_t lw_x_bin(lw *L, pl_xop op, uint32_t a, uint32_t b) {
  int64_t ka = 0, kb = 0;
  bool ca = lw_x_is_const(L, a, &ka), cb = lw_x_is_const(L, b, &kb);
  if (ca && cb && op != PX_CHUNKS)
    return lw_x_const(L, x_fold(op, ka, kb));
  /* identities that keep printed plans readable */
  if ((op == PX_ADD && cb && kb == 0) || (op == PX_SUB && cb && kb == 0) ||
      (op == PX_MUL && cb && kb == 1) || (op == PX_DIV && cb && kb == 1))
    return a;
  if ((op == PX_ADD && ca && ka == 0) || (op == PX_MUL && ca && ka == 1))
    return b;
  unsigned da = x_depth(L, a), db = x_depth(L, b);
  if (da + 1 > LW_XDEPTH) {
    a = x_in_word(L, a);
    da = 1;
  }
  if (db + 1 > LW_XDEPTH) {
    b = x_in_word(L, b);
    db = 1;
  }
  uint32_t x = pl_x_bin(L->p, op, a, b);
  x_note_depth(L, x, 1 + (da > db ? da : db));
  return x;
}

/* Structural equality of two expressions (shared nodes or equal trees). */
static bool x_equal(const pl_plan *p, uint32_t a, uint32_t b, unsigned depth) {
  if (a == b)
    return true;
  if (a >= p->nexprs || b >= p->nexprs || depth > LW_XDEPTH)
    return false;
  const pl_expr *x = &p->exprs[a], *y = &p->exprs[b];
  if (x->op != y->op)
    return false;
  switch (x->op) {
  case PX_CONST: return x->k == y->k;
  case PX_WORD: return x->a == y->a;
  default:
    return x_equal(p, x->a, y->a, depth + 1) && x_equal(p, x->b, y->b, depth + 1);
  }
}

LLVMValueRef lw_x_in_kernel(lw *L, cg_fn *f, uint32_t kernel, uint32_t x) {
  int64_t k;
  if (lw_x_is_const(L, x, &k))
    return cg_i64(L->M, k);
  lw_val w = {ir_ty_scalar(L->ctx, AC_I64), 1, NULL};
  uint32_t slot = lw_x_to_word(L, x);
  w.words = &slot;
  cg_val v;
  lw_load(L, f, kernel, &w, &v);
  return v.l[0].v;
}

/* ---- integers ---- */

/* x, an exact i64 result of arithmetic on values of kind sc, wrapped to
 * sc's range as the language's arithmetic wraps (docs/language.md §6.1):
 * modulo 2^bits, signed kinds then centred (a bool as the byte it
 * lives in). i64 wraps by itself. */
static uint32_t sz_wrap(lw *L, uint32_t x, ac_scalar sc) {
  if (sc == AC_I64)
    return x;
  int64_t bits = 8 * (int64_t)ac_scalar_size(sc), mod = (int64_t)1 << bits;
  uint32_t km = lw_x_const(L, mod);
  uint32_t u = lw_x_bin(L, PX_REM, lw_x_bin(L, PX_ADD, lw_x_bin(L, PX_REM, x, km), km), km);
  if (sc == AC_U8 || sc == AC_U16 || sc == AC_U32 || sc == AC_BOOL)
    return u;
  uint32_t high = lw_x_bin(L, PX_LE, lw_x_const(L, mod / 2), u);
  return lw_x_bin(L, PX_SUB, u, lw_x_bin(L, PX_MUL, high, km));
}

/* The conversion of lw_word_int as an expression (not materialised). With
 * `wrap`, a u64 is taken as its bits (the cast i64(x)) instead of
 * saturating. */
static uint32_t word_int_x(lw *L, uint32_t word, ac_scalar sc, bool wrap) {
  uint32_t x = lw_x_word(L, word);
  if (sc == AC_I64 || (sc == AC_U64 && wrap))
    return x;
  if (sc == AC_U64) { /* saturate: x < 0 ? MAX : x, in wrapping arithmetic */
    uint32_t neg = lw_x_bin(L, PX_LT, x, lw_x_const(L, 0));
    uint32_t gap = lw_x_bin(L, PX_SUB, lw_x_const(L, INT64_MAX), x);
    return lw_x_bin(L, PX_ADD, x, lw_x_bin(L, PX_MUL, neg, gap));
  }
  /* Narrower kinds live in the word's low bytes; the others are
   * unspecified (rt.h): the value modulo 2^bits, then signed */
  return sz_wrap(L, x, sc);
}

/* Conversions are computed once, into a word, rather than repeated in
 * every expression that uses the value. */
uint32_t lw_word_int(lw *L, uint32_t word, ac_scalar sc) {
  return x_in_word(L, word_int_x(L, word, sc, false));
}

static bool node_is_int(lw *L, ir_ref e, ac_scalar *sc) {
  return ir_ty_is_scalar(L->ctx, ir_node_get(L->m, e)->type, sc) && *sc != AC_BOOL &&
         *sc != AC_F32 && *sc != AC_F64;
}

/* A variable or a projection chain down to one: a frame word, no code. */
static bool is_word(lw *L, ir_ref e) {
  while (ir_node_get(L->m, e)->op == IR_PROJ)
    e = ir_kid(L->m, e, 0);
  return ir_node_get(L->m, e)->op == IR_VAR;
}

/* The scalar kinds size expressions compute exactly with the plan's i64
 * arithmetic: every integer kind but u64 (whose values above INT64_MAX an
 * i64 cannot hold), and bool (comparisons and logic, as 0 and 1). */
static bool sz_kind(lw *L, ir_ref e, ac_scalar *sc) {
  return ir_ty_is_scalar(L->ctx, ir_node_get(L->m, e)->type, sc) && *sc != AC_U64 &&
         *sc != AC_F32 && *sc != AC_F64;
}

static bool sz_arith(ir_op op) {
  return op == IR_ADD || op == IR_SUB || op == IR_MUL || op == IR_DIV || op == IR_REM ||
         op == IR_MIN || op == IR_MAX;
}

static bool sz_compare(ir_op op) {
  return op == IR_EQ || op == IR_NE || op == IR_LT || op == IR_LE || op == IR_GT || op == IR_GE;
}

/* A size expression: see the file comment. Besides i64 arithmetic it
 * takes the other integer kinds but u64 (computed in i64 and wrapped to
 * the kind: exact, since 2^bits divides 2^64, and division and remainder
 * see operands in range), comparisons of such integers, and && || ! over
 * such booleans (no operand can fail or has an effect, so evaluating both
 * sides is the same as short-circuiting): the scalar steps of a loop, a
 * `u32` counter or an `i32` bound test, stay on the host. PROJ chains down
 * to a variable are words too. */
static bool sz_ok(lw *L, ir_ref e, unsigned depth) {
  const ir_node *n = ir_node_get(L->m, e);
  ac_scalar sc;
  if (depth > LW_XDEPTH || !sz_kind(L, e, &sc))
    return false;
  switch ((ir_op)n->op) {
  case IR_LIT:
  case IR_VAR:
    return true;
  case IR_LEN:
  case IR_SHAPE:
    return sc == AC_I64;
  case IR_PROJ: {
    ir_ref k = ir_kid(L->m, e, 0);
    return is_word(L, k) || (sc == AC_I64 && ir_node_get(L->m, k)->op == IR_SHAPE);
  }
  case IR_CAST: { /* i64(x) of an integer word: the conversion in the plan */
    ac_scalar kc;
    ir_ref k = ir_kid(L->m, e, 0);
    return sc == AC_I64 && node_is_int(L, k, &kc) && is_word(L, k);
  }
  case IR_NOT:
  case IR_NEG:
    return sz_ok(L, ir_kid(L->m, e, 0), depth + 1);
  default: {
    ac_scalar kc;
    ir_op op = (ir_op)n->op;
    /* arithmetic gives its operands' kind, a comparison compares two of
     * a kind (sz_kind), && and || take bools */
    if (!(sz_arith(op) ? sc != AC_BOOL
                       : sz_compare(op) ? sz_kind(L, ir_kid(L->m, e, 0), &kc)
                                        : op == IR_LAND || op == IR_LOR))
      return false;
    return sz_ok(L, ir_kid(L->m, e, 0), depth + 1) && sz_ok(L, ir_kid(L->m, e, 1), depth + 1);
  }
  }
}

static pl_xop sz_op(ir_op op) {
  switch (op) {
  case IR_ADD: return PX_ADD;
  case IR_SUB: return PX_SUB;
  case IR_MUL: return PX_MUL;
  case IR_DIV: return PX_DIV;
  case IR_REM: return PX_REM;
  case IR_MIN: case IR_LAND: return PX_MIN;
  case IR_EQ: return PX_EQ;
  case IR_NE: return PX_NE;
  case IR_LT: case IR_GT: return PX_LT;
  case IR_LE: case IR_GE: return PX_LE;
  default: return PX_MAX; /* IR_MAX, IR_LOR */
  }
}

/* The value of size expression e as the interpreter reads it: an integer
 * of any kind as its i64 value, a bool as 0 or 1. */
static uint32_t sz_emit(lw *L, ir_ref e) {
  const ir_node *n = ir_node_get(L->m, e);
  ir_op op = (ir_op)n->op;
  ac_scalar sc = AC_I64;
  sz_kind(L, e, &sc);
  if (op == IR_LIT) { /* two's-complement bits sign-extended: wrap to the kind */
    int64_t bits = 8 * (int64_t)ac_scalar_size(sc), v = n->lit.i;
    if (sc == AC_BOOL)
      return lw_x_const(L, v != 0);
    if (bits < 64) {
      uint64_t mask = ((uint64_t)1 << bits) - 1, u = (uint64_t)v & mask;
      bool sgn = sc == AC_I8 || sc == AC_I16 || sc == AC_I32;
      v = sgn && (u >> (bits - 1)) ? (int64_t)(u | ~mask) : (int64_t)u;
    }
    return lw_x_const(L, v);
  }
  if (sz_arith(op) || sz_compare(op) || op == IR_LAND || op == IR_LOR) {
    uint32_t a = sz_emit(L, ir_kid(L->m, e, 0));
    uint32_t b = sz_emit(L, ir_kid(L->m, e, 1));
    if (op == IR_GT || op == IR_GE) { /* a > b is b < a */
      uint32_t t = a;
      a = b;
      b = t;
    }
    uint32_t x = lw_x_bin(L, sz_op(op), a, b);
    return op == IR_MIN || op == IR_MAX || sc == AC_BOOL ? x : sz_wrap(L, x, sc);
  }
  if (op == IR_NOT)
    return lw_x_bin(L, PX_EQ, sz_emit(L, ir_kid(L->m, e, 0)), lw_x_const(L, 0));
  if (op == IR_NEG)
    return sz_wrap(L, lw_x_bin(L, PX_SUB, lw_x_const(L, 0), sz_emit(L, ir_kid(L->m, e, 0))), sc);
  /* VAR, PROJ chains, LEN, SHAPE, PROJ(SHAPE): lw_expr gives the word
   * (lengths and shapes are the array's extent words); a word of another
   * kind is read as lw_word_int reads it */
  lw_val v;
  if (op == IR_CAST) { /* an integer word converted as the cast does */
    ir_ref k = ir_kid(L->m, e, 0);
    node_is_int(L, k, &sc);
    if (!lw_expr(L, k, &v) || v.nwords < 1)
      return lw_x_const(L, 0);
    return x_in_word(L, word_int_x(L, v.words[0], sc, true));
  }
  if (!lw_expr(L, e, &v) || v.nwords < 1)
    return lw_x_const(L, 0);
  if (sc == AC_BOOL)
    return lw_x_bin(L, PX_NE, lw_x_bin(L, PX_REM, lw_x_word(L, v.words[0]), lw_x_const(L, 256)),
                    lw_x_const(L, 0));
  return sc == AC_I64 ? lw_x_word(L, v.words[0]) : lw_word_int(L, v.words[0], sc);
}

static bool scalar_kernel(lw *L, ir_ref e, bool to_i64, lw_val *out);

bool lw_is_size(lw *L, ir_ref e) { return sz_ok(L, e, 0); }

bool lw_int_under(lw *L, ir_ref e, uint32_t nb, uint32_t *out) {
  if (!sz_ok(L, e, 0))
    return false;
  for (uint32_t j = 0; j < nb; j++)
    if (ir_occurs(L->m, e, j))
      return false;
  uint32_t saved = L->vshift;
  L->vshift = nb;
  *out = sz_emit(L, e);
  L->vshift = saved;
  return true;
}

uint32_t lw_int(lw *L, ir_ref e) {
  if (sz_ok(L, e, 0))
    return sz_emit(L, e);
  ac_scalar sc = AC_I64;
  ir_ty_is_scalar(L->ctx, ir_node_get(L->m, e)->type, &sc);
  lw_val v;
  bool ok;
  if (sc != AC_I64 && !is_word(L, e) && !lw_has_work(L, e)) {
    /* scalar code anyway: its kernel stores the converted value */
    ok = scalar_kernel(L, e, true, &v);
    sc = AC_I64;
  } else {
    ok = lw_expr(L, e, &v);
  }
  if (!ok || v.nwords < 1)
    return lw_x_const(L, 0);
  return lw_word_int(L, v.words[0], sc);
}

void lw_ints(lw *L, ir_ref e, uint32_t n, uint32_t *out) {
  const ir_node *nd = ir_node_get(L->m, e);
  if (n == 1) {
    out[0] = lw_int(L, e);
    return;
  }
  if (nd->op == IR_TUPLE && nd->nkids == n) {
    for (uint32_t i = 0; i < n; i++)
      out[i] = lw_int(L, ir_kid(L->m, e, i));
    return;
  }
  lw_val v;
  bool ok = lw_expr(L, e, &v);
  const lw_leaf *lv;
  uint32_t nl = lw_leaves(L, v.type, &lv);
  for (uint32_t i = 0; i < n; i++)
    out[i] = ok && i < nl && lv[i].rank == 0 ? lw_word_int(L, v.words[lv[i].word], lv[i].sc)
                                             : lw_x_const(L, 0);
  if (ok && nl < n)
    cg_error(L->M, AC_ERR_INTERNAL, e, "lowering: %u integers expected, the value has %u", n, nl);
}

void lw_shape(lw *L, ir_ref e, uint32_t n, uint32_t *ext, ir_ref at, bool check) {
  lw_ints(L, e, n, ext);
  for (uint32_t d = 0; check && d < n; d++) {
    int64_t k;
    if (lw_x_is_const(L, ext[d], &k) && k >= 0)
      continue;
    lw_piece pc[2] = {LW_TEXT("negative extent "), LW_VAL(ext[d])};
    lw_check(L, lw_x_bin(L, PX_LE, lw_x_const(L, 0), ext[d]), at, 2, pc, 0, NULL);
  }
}

/* ---- messages ---- */

/* The site for message pieces pc, or PL_AUTO when they need more than
 * RT_FAIL_VALS values; vals[0..*nv) get the values' expressions (a
 * repeated expression counts again: the format's k-th %lld is value k). */
static uint32_t msg_site(lw *L, ir_ref at, uint32_t n, const lw_piece *pc, uint32_t *vals,
                         uint32_t *nv) {
  ir_buf b;
  ir_buf_init(&b, L->ctx);
  bool ok = true;
  *nv = 0;
  for (uint32_t i = 0; i < n && ok; i++) {
    int64_t k;
    if (pc[i].text) {
      for (const char *s = pc[i].text; *s; s++)
        ir_buf_puts(&b, *s == '%' ? "%%" : (char[2]){*s, 0});
    } else if (lw_x_is_const(L, pc[i].x, &k)) {
      ir_buf_printf(&b, "%lld", (long long)k);
    } else if (*nv < RT_FAIL_VALS) {
      vals[(*nv)++] = pc[i].x;
      ir_buf_puts(&b, "%lld");
    } else {
      ok = false;
    }
  }
  uint32_t site = PL_AUTO;
  if (ok && b.oom)
    cg_error(L->M, AC_ERR_NOMEM, at, "out of memory");
  else if (ok)
    site = cg_site(L->M, at, ir_buf_cstr(&b));
  ir_buf_free(&b);
  return site;
}

void lw_check(lw *L, uint32_t cond, ir_ref at, uint32_t n, const lw_piece *pc, uint32_t nfb,
              const lw_piece *fb) {
  int64_t k;
  if (lw_x_is_const(L, cond, &k) && k != 0)
    return;
  uint32_t vals[RT_FAIL_VALS], nv, site = msg_site(L, at, n, pc, vals, &nv);
  if (site == PL_AUTO && nfb)
    site = msg_site(L, at, nfb, fb, vals, &nv);
  if (site == PL_AUTO) {
    cg_error(L->M, AC_ERR_INTERNAL, at, "lowering: a runtime message with too many values");
    return;
  }
  pl_check_n(L->p, cond, site, nv, vals);
}

void lw_check_shapes(lw *L, ir_ref at, const char *what, uint32_t n, const lw_val *vals) {
  const lw_val *v0 = NULL;
  uint32_t leaf0 = 0, rank = 0;
  char head[96];
  snprintf(head, sizeof head, "%s%sarrays have different shapes: ", what, *what ? ": " : "");
  for (uint32_t i = 0; i < n; i++) {
    const lw_leaf *lv;
    uint32_t nl = lw_leaves(L, vals[i].type, &lv);
    for (uint32_t j = 0; j < nl; j++) {
      if (lv[j].rank == 0)
        continue;
      if (!v0) {
        v0 = &vals[i];
        leaf0 = j;
        rank = lv[j].rank;
        continue;
      }
      if (lv[j].rank != rank) {
        cg_error(L->M, AC_ERR_INTERNAL, at, "lowering: arrays of ranks %u and %u as one", rank,
                 lv[j].rank);
        return;
      }
      for (uint32_t d = 0; d < rank; d++) {
        uint32_t a = lw_extent(L, v0, leaf0, d), b = lw_extent(L, &vals[i], j, d);
        if (x_equal(L->p, a, b, 0))
          continue;
        /* the whole shapes when they fit, else the differing dimension */
        lw_piece pc[4 * 64 + 4];
        uint32_t np = 0;
        if (rank <= 64) {
          pc[np++] = LW_TEXT(head);
          for (uint32_t s = 0; s < 2; s++) {
            pc[np++] = LW_TEXT(s ? "] and [" : "[");
            for (uint32_t q = 0; q < rank; q++) {
              if (q)
                pc[np++] = LW_TEXT(", ");
              pc[np++] = LW_VAL(s ? lw_extent(L, &vals[i], j, q) : lw_extent(L, v0, leaf0, q));
            }
          }
          pc[np++] = LW_TEXT("]");
        }
        char tail[64];
        snprintf(tail, sizeof tail, " in dimension %u", d);
        lw_piece fb[6] = {LW_TEXT(head), LW_TEXT(rank == 1 ? "[" : "extent "), LW_VAL(a),
                          LW_TEXT(rank == 1 ? "] and [" : " and "), LW_VAL(b),
                          LW_TEXT(rank == 1 ? "]" : tail)};
        lw_check(L, lw_x_bin(L, PX_EQ, a, b), at, np ? np : 6, np ? pc : fb, 6, fb);
      }
    }
  }
}

/* ---- in kernels ---- */

LLVMValueRef lw_cg_int64(cg_fn *f, LLVMValueRef v, ac_scalar sc) {
  cg_module *M = f->M;
  switch (sc) {
  case AC_I64:
    return v;
  case AC_U64: {
    LLVMValueRef neg = LLVMBuildICmp(M->b, LLVMIntSLT, v, cg_i64(M, 0), "");
    return LLVMBuildSelect(M->b, neg, cg_i64(M, INT64_MAX), v, "");
  }
  case AC_I8:
  case AC_I16:
  case AC_I32:
    return LLVMBuildSExt(M->b, v, M->t_i64, "");
  default:
    return LLVMBuildZExt(M->b, v, M->t_i64, "");
  }
}

void lw_cg_elem(cg_module *M, ir_type t, uint32_t n, const LLVMValueRef *v, const ac_scalar *sc,
                cg_val *out) {
  out->type = t;
  out->n = n;
  out->l = cg_new(M, (n ? n : 1) * sizeof *out->l);
  for (uint32_t i = 0; i < n; i++) {
    out->l[i].kind = CL_SCALAR;
    out->l[i].sc = (uint8_t)sc[i];
    out->l[i].v = v[i];
  }
}

/* ---- scalar kernels ---- */

static void pre_add(lw *L, lw_pre *P, ir_ref r, const lw_val *v) {
  if (P->n == P->cap) {
    uint32_t cap = P->cap ? 2 * P->cap : 8;
    ir_ref *refs = cg_new(L->M, cap * sizeof *refs);
    lw_val *vals = cg_new(L->M, cap * sizeof *vals);
    if (P->n) {
      memcpy(refs, P->refs, P->n * sizeof *refs);
      memcpy(vals, P->vals, P->n * sizeof *vals);
    }
    P->refs = refs;
    P->vals = vals;
    P->cap = cap;
  }
  P->refs[P->n] = r;
  P->vals[P->n++] = *v;
}

/* Number of leading kids of e that are always evaluated, before anything
 * conditional, and outside every binder (so they can be lifted). */
static uint32_t pre_kids(lw *L, ir_ref e) {
  const ir_node *n = ir_node_get(L->m, e);
  switch ((ir_op)n->op) {
  case IR_LAND:
  case IR_LOR:
  case IR_IF:
  case IR_LET:
  case IR_LETTUP:
    return 1; /* the condition, the left operand, the bound value */
  case IR_LAM:
  case IR_FNREF:
  case IR_REC:
    return 0;
  case IR_LOOP:
    return n->nkids >= 2 ? n->nkids - 2 : 0;
  case IR_ITERATE:
    return 1; /* the count; the initial value comes after the function */
  case IR_WHILE:
    return 0;
  default:
    return n->nkids;
  }
}

/* Operations whose own work is scalar code: their plan-level kids are
 * lifted one by one rather than lowering the operation as a whole. */
static bool pre_descend(lw *L, ir_ref e) {
  ir_op op = (ir_op)ir_node_get(L->m, e)->op;
  if (op == IR_LAND || op == IR_LOR)
    return !lw_has_work(L, ir_kid(L->m, e, 1));
  switch (op) {
  case IR_TUPLE: case IR_PROJ: case IR_CAST: case IR_INDEX: case IR_LEN: case IR_SHAPE:
  case IR_FMA:
    return true;
  default:
    return op < IR_NUM_OPS && ir_ops[op].typing != TC_SPECIAL;
  }
}

void lw_pre_collect(lw *L, ir_ref e, lw_pre *P) {
  uint32_t nk = pre_kids(L, e);
  for (uint32_t i = 0; i < nk && L->M->st == AC_OK; i++) {
    ir_ref c = ir_kid(L->m, e, i);
    if (!lw_has_work(L, c))
      continue;
    if (pre_descend(L, c)) {
      lw_pre_collect(L, c, P);
    } else {
      lw_val v;
      if (lw_expr(L, c, &v))
        pre_add(L, P, c, &v);
    }
  }
  /* iterate's initial value is evaluated after its count */
  if (ir_node_get(L->m, e)->op == IR_ITERATE || ir_node_get(L->m, e)->op == IR_WHILE) {
    ir_ref c = ir_kid(L->m, e, 2);
    lw_val v;
    if (L->M->st == AC_OK && lw_has_work(L, c) && lw_expr(L, c, &v))
      pre_add(L, P, c, &v);
  }
}

void lw_pre_install(lw *L, cg_fn *f, uint32_t kernel, const lw_pre *P) {
  uint32_t n = P->n;
  f->pre_ref = cg_new(L->M, (n ? n : 1) * sizeof *f->pre_ref);
  f->pre_val = cg_new(L->M, (n ? n : 1) * sizeof *f->pre_val);
  for (uint32_t i = 0; i < n; i++) {
    f->pre_ref[i] = P->refs[i];
    lw_load(L, f, kernel, &P->vals[i], &f->pre_val[i]);
  }
  f->npre = n;
}

bool lw_scalar(lw *L, ir_ref e, lw_val *out) {
  return scalar_kernel(L, e, false, out);
}

/* ---- epilogues ---- */

/* The one plan-level subterm lw_pre_collect would lower for e (the same
 * walk), or 0 when there are none or several. */
static void epi_find(lw *L, ir_ref e, ir_ref *found, uint32_t *n, unsigned depth) {
  uint32_t nk = pre_kids(L, e);
  if (depth > LW_MAX_DEPTH || ir_node_get(L->m, e)->op == IR_ITERATE ||
      ir_node_get(L->m, e)->op == IR_WHILE) {
    *n = 2;
    return;
  }
  for (uint32_t i = 0; i < nk && *n < 2; i++) {
    ir_ref c = ir_kid(L->m, e, i);
    if (!lw_has_work(L, c))
      continue;
    if (pre_descend(L, c)) {
      epi_find(L, c, found, n, depth + 1);
    } else {
      *found = c;
      (*n)++;
    }
  }
}

/* No array operation in e outside `skip` (so that the epilogue is plain
 * scalar code: no temporary memory, nothing sequential). */
static bool epi_plain(lw *L, ir_ref e, ir_ref skip, unsigned depth) {
  if (e == skip)
    return true;
  const ir_node *n = ir_node_get(L->m, e);
  ir_op op = (ir_op)n->op;
  if (depth > LW_MAX_DEPTH || op == IR_ARRLIT || op == IR_REC || op == IR_DELAY ||
      op == IR_TILED || op == IR_SIZED ||
      (op >= IR_GENERATE && op <= IR_WHILE) || (op == IR_CALL && lw_has_work(L, e)))
    return false;
  for (uint32_t i = 0; i < n->nkids; i++)
    if (!epi_plain(L, ir_kid(L->m, e, i), skip, depth + 1))
      return false;
  return true;
}

/* The fold whose kernel can compute scalar expression e, or 0. */
static ir_ref epi_fold(lw *L, ir_ref e) {
  ir_ref c = IR_NONE;
  uint32_t n = 0;
  epi_find(L, e, &c, &n, 0);
  if (n != 1 || ir_node_get(L->m, c)->op != IR_FOLD || lw_has_array(L, ir_node_get(L->m, c)->type))
    return IR_NONE;
  return epi_plain(L, e, c, 0) ? c : IR_NONE;
}

ir_ref lw_epilogue_at(lw *L, ir_ref e) {
  return L->epi.fold == e && !L->epi.done ? L->epi.expr : e;
}

bool lw_epilogue_wanted(lw *L, ir_ref e) {
  return L->epi.fold == e && !L->epi.done;
}

void lw_epilogue(lw *L, cg_fn *f, uint32_t kernel, const cg_val *v) {
  ir_ref *ref = cg_new(L->M, sizeof *ref);
  cg_val *val = cg_new(L->M, sizeof *val);
  *ref = L->epi.fold;
  *val = *v;
  ir_ref *oref = f->pre_ref;
  cg_val *oval = f->pre_val;
  uint32_t on = f->npre;
  f->pre_ref = ref;
  f->pre_val = val;
  f->npre = 1;
  cg_val r;
  cg_expr(f, L->epi.expr, &r);
  lw_store(L, f, kernel, &L->epi.out, &r);
  f->pre_ref = oref;
  f->pre_val = oval;
  f->npre = on;
  L->epi.done = true;
}

/* A word for literal e: `set` to its bits (rt.h layout: the value in the
 * low bytes), so constants need no kernel. */
static void literal(lw *L, ir_ref e, lw_val *out) {
  const ir_node *n = ir_node_get(L->m, e);
  ac_scalar sc = AC_I64;
  ir_ty_is_scalar(L->ctx, n->type, &sc);
  int64_t bits = n->lit.i;
  if (sc == AC_F32) {
    float f = (float)n->lit.f;
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    bits = (int64_t)u;
  } else if (sc == AC_F64) {
    memcpy(&bits, &n->lit.f, sizeof bits);
  }
  lw_fresh(L, n->type, out);
  if (out->nwords == 1)
    pl_set(L->p, out->words[0], lw_x_const(L, bits));
}

/* With to_i64, the value (an integer) is stored converted to i64 as the
 * interpreter reads indices and extents. */
static bool scalar_kernel(lw *L, ir_ref e, bool to_i64, lw_val *out) {
  ir_type t = ir_node_get(L->m, e)->type;
  if (ir_node_get(L->m, e)->op == IR_LIT && !to_i64) {
    literal(L, e, out);
    return L->M->st == AC_OK;
  }
  if (sz_ok(L, e, 0)) {
    uint32_t x = sz_emit(L, e);
    if (L->p->exprs[x].op == PX_WORD) {
      out->type = t;
      out->nwords = 1;
      out->words = cg_new(L->M, sizeof *out->words);
      out->words[0] = L->p->exprs[x].a;
    } else {
      lw_fresh(L, t, out);
      pl_set(L->p, out->words[0], x);
    }
    return L->M->st == AC_OK;
  }
  /* one fold and scalar code around it: the fold's kernel finishes it */
  ir_ref fold = to_i64 ? IR_NONE : epi_fold(L, e);
  if (fold) {
    struct lw_epi saved = L->epi;
    L->epi = (struct lw_epi){fold, e, {0, 0, NULL}, false};
    lw_fresh(L, t, &L->epi.out);
    lw_val fv;
    bool ok = lw_expr(L, fold, &fv);
    bool done = L->epi.done;
    *out = L->epi.out;
    L->epi = saved;
    if (!ok || done)
      return ok && L->M->st == AC_OK;
    /* the fold's skeleton had no epilogue: a kernel of its own, as below */
    lw_pre P = {NULL, NULL, 0, 0};
    pre_add(L, &P, fold, &fv);
    uint32_t k;
    cg_fn *f = lw_kernel_begin(L, e, "scalar", 1, &k);
    lw_pre_install(L, f, k, &P);
    cg_val v;
    cg_expr(f, e, &v);
    lw_store(L, f, k, out, &v);
    lw_kernel_end(L, f);
    lw_launch(L, k, lw_x_const(L, 1), lw_x_const(L, 1));
    return L->M->st == AC_OK;
  }
  lw_pre P = {NULL, NULL, 0, 0};
  lw_pre_collect(L, e, &P);
  ac_scalar sc = AC_I64;
  if (to_i64) {
    ir_ty_is_scalar(L->ctx, t, &sc);
    t = ir_ty_scalar(L->ctx, AC_I64);
  }
  lw_fresh(L, t, out);
  if (L->M->st != AC_OK)
    return false;
  uint32_t k;
  cg_fn *f = lw_kernel_begin(L, e, "scalar", 1, &k);
  lw_pre_install(L, f, k, &P);
  cg_val v;
  cg_expr(f, e, &v);
  if (to_i64 && v.n == 1) {
    LLVMValueRef x = lw_cg_int64(f, v.l[0].v, sc);
    ac_scalar i64 = AC_I64;
    lw_cg_elem(L->M, t, 1, &x, &i64, &v);
  }
  lw_store(L, f, k, out, &v);
  lw_kernel_end(L, f);
  lw_launch(L, k, lw_x_const(L, 1), lw_x_const(L, 1));
  return L->M->st == AC_OK;
}
