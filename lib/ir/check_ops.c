/* lib/ir/check_ops.c: typing of operators, math builtins and array operations.
 *
 * Scalar operators and math builtins are typed from their TYPING class in
 * include/arrayc/ops.def: their operands share one type (docs/language.md
 * §5.2), which must then belong to the class (numeric, integer, float,
 * bool). Where the operands have the result's type (arithmetic, bitwise and
 * shift operators, unary - and ~, the math functions but isnan, isinf and
 * isfinite) an expected type is passed down to each operand; the others
 * (comparisons, &&, ||, !, the float predicates) synthesise the first
 * non-flexible operand and check the rest against its type.
 *
 * Array operations are typed by hand, following §7: their arrays are
 * synthesised first and give the element type E and rank r, which then give
 * the types of the lambda parameters (chk_lambda), the expected types of
 * initial values and combining functions, and the result. Wherever an array
 * is expected, a tuple of arrays of equal rank is accepted as an array of
 * tuples (ir_ty_array_view, the structure-of-arrays rule of §2.4).
 */
#include "check.h"

#include <stdio.h>
#include <string.h>

static const char *spelling(const chk *c, ir_ref r) {
  return ir_ops[ir_node_get(c->m, r)->op].spelling;
}

static const char *plural(uint64_t n) {
  return n == 1 ? "" : "s";
}

/* "1 array", "2 arrays", "3 indices": what an operation passes a lambda. */
static void count_noun(char *buf, size_t size, uint32_t n, const char *noun) {
  if (n == 1)
    snprintf(buf, size, "1 %s", noun);
  else if (strcmp(noun, "index") == 0)
    snprintf(buf, size, "%u indices", n);
  else
    snprintf(buf, size, "%u %ss", n, noun);
}

/* ---- scalar operators ---- */

static ir_type binary(chk *c, ir_ref r, ir_type expect, ir_typing cls) {
  ir_ref ops[2] = {ir_kid(c->m, r, 0), ir_kid(c->m, r, 1)};
  /* operands of the result's type are checked against an expected one */
  bool same = cls == TC_ARITH || cls == TC_INT || cls == TC_SHIFT;
  ir_type e = same ? expect : IR_TY_NONE;
  ir_type t;
  if (cls == TC_LOGIC) {
    for (int i = 0; i < 2; i++) {
      if (!(t = chk_synth(c, ops[i])))
        return IR_TY_NONE;
      if (t != c->t_bool)
        return chk_fail(c, ops[i], "operand of '%s' must be bool, found %s", spelling(c, r),
                        chk_tyname(c, t)),
               IR_TY_NONE;
    }
    return c->t_bool;
  }
  if (!(t = chk_share(c, 2, ops, e)))
    return IR_TY_NONE;
  ir_op op = (ir_op)ir_node_get(c->m, r)->op;
  if (chk_is_prob(c, t) && (cls == TC_ORD || (cls == TC_ARITH && op != IR_REM)))
    return cls == TC_ORD ? c->t_bool : t; /* §6.7: + - * / and comparisons */
  switch (cls) {
  case TC_ARITH:
  case TC_ORD:
    if (chk_is_prob(c, t))
      return chk_fail(c, r,
                      "operator '%%' is not defined on prob (§6.7: a prob has + - * / and "
                      "comparisons)"),
             IR_TY_NONE;
    if (!ir_ty_is_numeric(c->ctx, t))
      return chk_fail(c, r, "operator '%s' expects numeric operands, found %s", spelling(c, r),
                      chk_tyname(c, t)),
             IR_TY_NONE;
    return cls == TC_ORD ? c->t_bool : t;
  case TC_INT:
  case TC_SHIFT:
    if (!ir_ty_is_int(c->ctx, t))
      return chk_fail(c, r, "operator '%s' expects integer operands, found %s", spelling(c, r),
                      chk_tyname(c, t)),
             IR_TY_NONE;
    return t;
  default: /* TC_CMP */
    if (!ir_ty_is_scalar(c->ctx, t, NULL))
      return chk_fail(c, r, "comparison operands must be numeric or bool, found %s",
                      chk_tyname(c, t)),
             IR_TY_NONE;
    return c->t_bool;
  }
}

static ir_type unary(chk *c, ir_ref r, ir_type expect, ir_typing cls) {
  ir_ref x = ir_kid(c->m, r, 0);
  ir_type t;
  if (cls != TC_NOT && expect)
    t = chk_check(c, x, expect) ? expect : IR_TY_NONE;
  else
    t = chk_synth(c, x);
  if (!t)
    return IR_TY_NONE;
  bool ok = cls == TC_NOT   ? t == c->t_bool
            : cls == TC_NEG ? ir_ty_is_numeric(c->ctx, t)
                            : ir_ty_is_int(c->ctx, t);
  if (!ok && chk_is_prob(c, t))
    return chk_fail(c, r, "operator '%s' is not defined on prob (§6.7)", spelling(c, r)),
           IR_TY_NONE;
  if (!ok)
    return chk_fail(c, r, "operator '%s' expects %s operand, found %s", spelling(c, r),
                    cls == TC_NOT   ? "a bool"
                    : cls == TC_NEG ? "a numeric"
                                    : "an integer",
                    chk_tyname(c, t)),
           IR_TY_NONE;
  return t;
}

/* abs, min, max and the float functions: arguments share one type, and an
 * expected type reaches them when the result has their type (§5.2: all but
 * isnan, isinf and isfinite), so `x * sqrt(2.0)` with x: f32 takes the f32
 * square root of 2. */
static ir_type math(chk *c, ir_ref r, ir_typing cls, ir_type expect) {
  uint32_t n = ir_node_get(c->m, r)->nkids;
  ir_op op = (ir_op)ir_node_get(c->m, r)->op;
  ir_ref ks[3];
  for (uint32_t i = 0; i < n; i++)
    ks[i] = ir_kid(c->m, r, i);
  /* log(p) of a prob p is the f64 it is stored as (§6.7): its argument
   * is synthesised unless it is flexible (then it takes the expected type as
   * every float function's does) */
  if (op == IR_LOG && expect != IR_TY_NONE && !chk_flexible(c, ks[0])) {
    ir_type a = chk_synth(c, ks[0]);
    if (!a)
      return IR_TY_NONE;
    if (chk_is_prob(c, a))
      return c->t_f64;
    if (a != expect)
      return chk_fail(c, ks[0], "type mismatch: expected %s, found %s", chk_tyname(c, expect),
                      chk_tyname(c, a)),
             IR_TY_NONE;
  }
  ir_type t = chk_share(c, n, ks, cls == TC_FPRED ? IR_TY_NONE : expect);
  if (!t)
    return IR_TY_NONE;
  if (chk_is_prob(c, t)) {
    if (op == IR_LOG)
      return c->t_f64;
    if (op == IR_MIN || op == IR_MAX)
      return t;
    return chk_fail(c, r,
                    "%s is not defined on prob (§6.7: a prob has + - * /, comparisons, min, "
                    "max and log; convert with f64(p) for the rest)",
                    spelling(c, r)),
           IR_TY_NONE;
  }
  bool numeric = cls == TC_NUM1 || cls == TC_NUM2;
  if (numeric ? !ir_ty_is_numeric(c->ctx, t) : !ir_ty_is_float(c->ctx, t))
    return chk_fail(c, r, "%s expects %s argument%s, found %s", spelling(c, r),
                    n == 1 ? (numeric ? "a numeric" : "a float") : (numeric ? "numeric" : "float"),
                    plural(n), chk_tyname(c, t)),
           IR_TY_NONE;
  return cls == TC_FPRED ? c->t_bool : t;
}

/* ---- lambdas ---- */

/* Arrays do not nest: what to write instead of a generate or map whose
 * function returns an array (docs/language.md §7.11). */
static const char *nest_hint(chk *c, const chk_lam *l, ir_type t) {
  if (ir_ty_info(c->ctx, t).kind != TK_ARRAY)
    return "";
  if (strcmp(l->op, "generate") == 0)
    return " (arrays do not nest: for a rank-2 array write generate((n, m), |i, j| ..), "
           "one function of both indices)";
  if (strcmp(l->op, "map") == 0)
    return " (arrays do not nest: map is element-wise on arrays of any rank; for one result "
           "per element and row, use generate((n, m), |i, j| ..))";
  return " (arrays do not nest)";
}

static ir_type lam_body(chk *c, ir_ref body, const chk_lam *l) {
  ir_type t;
  switch (l->mode) {
  case LAM_CHECK:
    return chk_check(c, body, l->ret) ? l->ret : IR_TY_NONE;
  case LAM_INDEX:
    return chk_index_tuple(c, body, l->rank, l->what);
  case LAM_BOOL:
    if ((t = chk_synth(c, body)) && t != c->t_bool)
      return chk_fail(c, body, "%s must be bool, found %s", l->what, chk_tyname(c, t)), IR_TY_NONE;
    return t;
  default: /* LAM_ELEMENT */
    /* generate(n, |i| 1.0) where an f32[] is expected: a flexible body
     * takes the expected element type (docs/language.md §5.1) */
    if (l->ret && chk_flexible(c, body)) {
      if (!chk_check(c, body, l->ret))
        return IR_TY_NONE;
      /* a type other than the default must survive passes that bind the
       * operation to a let, where nothing is expected of it */
      ir_type deflt = chk_flex_lits(c, body) & FLEX_FLOAT ? c->t_f64 : c->t_i32;
      if (l->ret != deflt)
        chk_fix_lits(c, body, 0);
      return l->ret;
    }
    if ((t = chk_synth(c, body)) && !ir_ty_is_element(c->ctx, t))
      return chk_fail(c, body, "%s must return a scalar or tuple, found %s%s", l->what,
                      chk_tyname(c, t), nest_hint(c, l, t)),
             IR_TY_NONE;
    return t;
  }
}

/* A top-level function named where a lambda is expected: its signature must
 * be exactly what the operation passes and needs. */
static ir_type fnref(chk *c, ir_ref f, const chk_lam *l) {
  int64_t fi = ir_node_get(c->m, f)->attr;
  if (fi < 0 || (uint64_t)fi >= c->m->nfuncs)
    return chk_fail(c, f, "malformed IR: reference to function %lld of %zu", (long long)fi,
                    c->m->nfuncs),
           IR_TY_NONE;
  const ir_func *fn = &c->m->funcs[fi];
  const char *name = ir_sym_str(c->ctx, fn->name);
  char what[64];
  count_noun(what, sizeof what, l->n, l->noun);
  if (fn->nparams != l->n)
    return chk_fail(c, f, "function '%s' takes %u parameter%s but %s passes %s", name, fn->nparams,
                    plural(fn->nparams), l->op, what),
           IR_TY_NONE;
  for (uint32_t i = 0; i < l->n; i++) {
    ir_type p = ir_func_param(c->m, fn, i);
    if (p != l->params[i])
      return chk_fail(c, f, "function '%s' takes %s as parameter %u but %s passes %s", name,
                      chk_tyname(c, p), i + 1, l->op, chk_tyname(c, l->params[i])),
             IR_TY_NONE;
  }
  ir_type ret = chk_func_result(c, (uint32_t)fi, f);
  if (!ret)
    return IR_TY_NONE;
  bool ok = true;
  switch (l->mode) {
  case LAM_CHECK:
    if (ret != l->ret)
      return chk_fail(c, f, "function '%s' returns %s but %s needs %s", name, chk_tyname(c, ret),
                      l->op, chk_tyname(c, l->ret)),
             IR_TY_NONE;
    break;
  case LAM_BOOL:
    ok = ret == c->t_bool;
    break;
  case LAM_INDEX: {
    ir_typeinfo ti = ir_ty_info(c->ctx, ret);
    ok = l->rank == 1 ? ir_ty_is_int(c->ctx, ret) : ti.kind == TK_TUPLE && ti.n == l->rank;
    for (uint32_t i = 0; ok && l->rank > 1 && i < l->rank; i++)
      ok = ir_ty_is_int(c->ctx, ir_ty_info(c->ctx, ret).fields[i]);
    break;
  }
  default: /* LAM_ELEMENT */
    ok = ir_ty_is_element(c->ctx, ret);
    break;
  }
  if (!ok)
    return chk_fail(c, f, "function '%s' returns %s, which cannot be the %s", name,
                    chk_tyname(c, ret), l->what),
           IR_TY_NONE;
  return chk_edge_add(c, (uint32_t)fi, ir_node_get(c->m, f)->loc) ? ret : IR_TY_NONE;
}

ir_type chk_lambda(chk *c, ir_ref owner, uint32_t kid, const chk_lam *l) {
  ir_ref f = ir_kid(c->m, owner, kid);
  if (c->st != AC_OK || !chk_well_formed(c, f))
    return IR_TY_NONE;
  ir_node *fn = ir_node_get(c->m, f);
  ir_type ret;
  if (fn->op == IR_FNREF) {
    ret = fnref(c, f, l);
  } else if (fn->op == IR_LAM) {
    if (fn->attr != (int64_t)l->n) {
      char what[64];
      count_noun(what, sizeof what, l->n, l->noun);
      return chk_fail(c, f, "%s function takes %lld parameter%s but %s passes %s", l->op,
                      (long long)fn->attr, plural((uint64_t)fn->attr), l->op, what),
             IR_TY_NONE;
    }
    for (uint32_t i = 0; i < l->n; i++) {
      if (!chk_push_flex(c, l->params[i], chk_node_name(c, f, i), l->flex ? l->flex[i] : 0))
        return IR_TY_NONE;
      if (l->mode == LAM_ELEMENT)
        c->env[c->nenv - 1].maprank = l->rank;
    }
    unsigned soft = c->soft;
    c->soft = l->soft;
    ret = lam_body(c, ir_kid(c->m, f, 0), l);
    c->soft = soft;
    chk_pop(c, l->n);
  } else {
    return chk_fail(c, f, "%s expects a function (a lambda or a function name) as argument %u",
                    l->op, kid + 1),
           IR_TY_NONE;
  }
  if (!ret || c->st != AC_OK)
    return IR_TY_NONE;
  ir_type ft = ir_ty_fn(c->ctx, l->n, l->params, ret);
  if (!ft)
    return chk_oom(c), IR_TY_NONE;
  ir_node_get(c->m, f)->type = ft;
  return ret;
}

/* ---- array operations ---- */

/* An array argument: its type, element type and rank. */
typedef struct arr {
  ir_type t, elem;
  uint32_t rank;
} arr;

/* Synthesises child k of r, which must be an array (or a tuple of arrays of
 * equal rank); rank1 requires rank 1. */
static bool array_arg(chk *c, ir_ref r, uint32_t k, bool rank1, arr *a) {
  ir_ref x = ir_kid(c->m, r, k);
  if (!(a->t = chk_synth(c, x)))
    return false;
  if (!ir_ty_array_view(c->ctx, a->t, &a->elem, &a->rank)) {
    /* map(|row| fold(.., row), m) with m of rank 2: row is an element */
    const ir_node *xn = ir_node_get(c->m, x);
    const chk_entry *e = xn->op == IR_VAR && xn->attr >= 0 && (uint64_t)xn->attr < c->nenv
                             ? &c->env[c->nenv - 1 - (size_t)xn->attr]
                             : NULL;
    bool rows = strcmp(spelling(c, r), "fold") == 0 || strcmp(spelling(c, r), "scan") == 0;
    if (e && e->maprank >= 2)
      return chk_fail(c, x,
                      "%s expects an array, found %s ('%s' is one element: map is element-wise "
                      "on its rank-%u array; %s)",
                      spelling(c, r), chk_tyname(c, a->t), ir_sym_str(c->ctx, e->name),
                      e->maprank,
                      rows ? "fold and scan already work on each row: write fold(f, z, m) "
                             "on the whole array"
                           : "to work on each row, write generate(n, |i| ..) indexing m[i, j]");
    return chk_fail(c, x, "%s expects an array, found %s", spelling(c, r), chk_tyname(c, a->t));
  }
  if (rank1 && a->rank != 1)
    return chk_fail(c, x, "%s expects a rank-1 array, found %s", spelling(c, r),
                    chk_tyname(c, a->t));
  return true;
}

/* The array type of rank `rank` with elements `elem`, made by operation r.
 * Elements must contain a scalar: an array of () (or of tuples of ()) has
 * no leaf to hold its shape, so it is refused as a type error. */
static bool has_unit(ac_context *ctx, ir_type t, unsigned depth) {
  ir_typeinfo ti = ir_ty_info(ctx, t);
  if (ti.kind != TK_TUPLE)
    return false;
  if (ti.n == 0)
    return true;
  for (uint32_t i = 0; i < ti.n && depth < 1000; i++)
    if (has_unit(ctx, ir_ty_info(ctx, t).fields[i], depth + 1))
      return true;
  return false;
}

ir_type chk_array_of(chk *c, ir_ref r, ir_type elem, uint32_t rank) {
  ir_type t = ir_ty_array(c->ctx, elem, rank);
  if (t)
    return t;
  if (!elem || !has_unit(c->ctx, elem, 0))
    return chk_oom(c), IR_TY_NONE;
  const char *op = *spelling(c, r) ? spelling(c, r) : "this array literal";
  return chk_fail(c, r, "%s would build an array of %s: array elements need at least one scalar",
                  op, chk_tyname(c, elem)),
         IR_TY_NONE;
}

/* Segment lengths: a rank-1 integer array. */
static bool lens_arg(chk *c, ir_ref r, uint32_t k) {
  ir_ref x = ir_kid(c->m, r, k);
  ir_type t = chk_synth(c, x), e;
  uint32_t rank;
  if (t && !(ir_ty_array_view(c->ctx, t, &e, &rank) && rank == 1 && ir_ty_is_int(c->ctx, e)))
    return chk_fail(c, x, "%s segment lengths must be a rank-1 integer array, found %s",
                    spelling(c, r), chk_tyname(c, t));
  return t != IR_TY_NONE;
}

/* Index arrays of gather and scatter: elements are integers for a rank-1
 * target, r-tuples of integers for rank r. */
static bool index_array(chk *c, ir_ref r, uint32_t k, uint32_t target_rank, uint32_t *rank) {
  ir_ref x = ir_kid(c->m, r, k);
  ir_type t = chk_synth(c, x), e;
  if (!t)
    return false;
  bool ok = ir_ty_array_view(c->ctx, t, &e, rank);
  if (ok && target_rank == 1) {
    ok = ir_ty_is_int(c->ctx, e);
  } else if (ok) {
    ir_typeinfo ti = ir_ty_info(c->ctx, e);
    ok = ti.kind == TK_TUPLE && ti.n == target_rank;
    for (uint32_t i = 0; ok && i < target_rank; i++)
      ok = ir_ty_is_int(c->ctx, ir_ty_info(c->ctx, e).fields[i]);
  }
  if (ok)
    return true;
  if (target_rank == 1)
    return chk_fail(c, x, "%s indices must be an integer array for a rank-1 array, found %s",
                    spelling(c, r), chk_tyname(c, t));
  return chk_fail(c, x,
                  "%s indices must be an array of %u-tuples of integers for a rank-%u "
                  "array, found %s",
                  spelling(c, r), target_rank, target_rank, chk_tyname(c, t));
}

/* The combining function of a reduction or scan: (E, E) -> E. */
static bool combiner(chk *c, ir_ref r, uint32_t k, ir_type e) {
  ir_type ps[2] = {e, e};
  chk_lam l = {spelling(c, r), "argument", 2, ps, LAM_CHECK, e, 0, NULL, NULL, false};
  return chk_lambda(c, r, k, &l) != IR_TY_NONE;
}

static ir_type reduction(chk *c, ir_ref r, ir_op op) {
  arr a;
  bool seg = op == IR_FOLD_SEG || op == IR_SCAN_SEG || op == IR_SCAN_INCL_SEG;
  bool init =
      op == IR_FOLD || op == IR_FOLD_SEG || op == IR_SCAN || op == IR_SCANR || op == IR_SCAN_SEG;
  uint32_t ak = init ? 2 : 1; /* (f, z, a, ..) or (f, a, ..) */
  if (!array_arg(c, r, ak, seg, &a))
    return IR_TY_NONE;
  if (seg && !lens_arg(c, r, ak + 1))
    return IR_TY_NONE;
  if (init && !chk_check(c, ir_kid(c->m, r, 1), a.elem))
    return IR_TY_NONE;
  if (!combiner(c, r, 0, a.elem))
    return IR_TY_NONE;
  if (op == IR_FOLD)
    return a.rank == 1 ? a.elem : chk_array_of(c, r, a.elem, a.rank - 1);
  return a.t; /* fold_seg keeps rank 1; scans keep the shape */
}

/* Parameter types of an index function: q times i64. */
static ir_type *index_params(chk *c, uint32_t q, ir_type *small, size_t nsmall) {
  ir_type *ps = q <= nsmall ? small : ac_alloc(c->ctx, q * sizeof *ps);
  if (!ps)
    return chk_oom(c), NULL;
  for (uint32_t i = 0; i < q; i++)
    ps[i] = c->t_i64;
  return ps;
}

/* The element type an expected array type of rank `rank` gives a map's or
 * generate's function, or IR_TY_NONE. */
static ir_type expected_elem(chk *c, ir_type expect, uint32_t rank) {
  ir_type e;
  uint32_t er;
  return expect && ir_ty_array_view(c->ctx, expect, &e, &er) && er == rank ? e : IR_TY_NONE;
}

static ir_type generate(chk *c, ir_ref r, ir_type expect) {
  uint32_t q;
  if (!chk_shape(c, ir_kid(c->m, r, 0), &q))
    return IR_TY_NONE;
  ir_type small[8], *ps = index_params(c, q, small, 8);
  if (!ps)
    return IR_TY_NONE;
  chk_lam l = {"generate", "index", q,  ps, LAM_ELEMENT, expected_elem(c, expect, q), 0,
               "generate function", NULL, false};
  ir_type e = chk_lambda(c, r, 1, &l);
  if (ps != small)
    ac_free(c->ctx, ps);
  return e ? chk_array_of(c, r, e, q) : IR_TY_NONE;
}

static ir_type map(chk *c, ir_ref r, ir_type expect) {
  uint32_t n = ir_node_get(c->m, r)->nkids - 1;
  ir_type small[8];
  ir_type *es = n <= 8 ? small : ac_alloc(c->ctx, n * sizeof *es);
  if (!es)
    return chk_oom(c), IR_TY_NONE;
  uint32_t rank = 0;
  ir_type res = IR_TY_NONE;
  uint32_t i = 0;
  for (; i < n; i++) {
    arr a;
    if (!array_arg(c, r, i + 1, false, &a))
      break;
    if (i > 0 && a.rank != rank) {
      chk_fail(c, ir_kid(c->m, r, i + 1),
               "map arrays must have the same rank: array %u has rank %u, array 1 has rank %u",
               i + 1, a.rank, rank);
      break;
    }
    rank = a.rank;
    es[i] = a.elem;
  }
  if (i == n) {
    chk_lam l = {"map", "array", n,  es, LAM_ELEMENT, expected_elem(c, expect, rank), rank,
                 "map function", NULL, false};
    ir_type e = chk_lambda(c, r, 0, &l);
    if (e)
      res = chk_array_of(c, r, e, rank);
  }
  if (es != small)
    ac_free(c->ctx, es);
  return res;
}

static ir_type gather(chk *c, ir_ref r) {
  arr a;
  uint32_t q;
  if (!array_arg(c, r, 1, false, &a) || !index_array(c, r, 0, a.rank, &q))
    return IR_TY_NONE;
  return chk_array_of(c, r, a.elem, q);
}

static ir_type backpermute(chk *c, ir_ref r) {
  uint32_t q;
  arr a;
  if (!chk_shape(c, ir_kid(c->m, r, 0), &q) || !array_arg(c, r, 2, false, &a))
    return IR_TY_NONE;
  ir_type small[8], *ps = index_params(c, q, small, 8);
  if (!ps)
    return IR_TY_NONE;
  chk_lam l = {"backpermute", "index", q, ps, LAM_INDEX, IR_TY_NONE, a.rank, "backpermute index", NULL, false};
  ir_type ok = chk_lambda(c, r, 1, &l);
  if (ps != small)
    ac_free(c->ctx, ps);
  return ok ? chk_array_of(c, r, a.elem, q) : IR_TY_NONE;
}

static ir_type scatter(chk *c, ir_ref r) {
  arr d, v;
  uint32_t q;
  if (!array_arg(c, r, 2, false, &d) || !index_array(c, r, 0, d.rank, &q) ||
      !array_arg(c, r, 1, false, &v))
    return IR_TY_NONE;
  ir_ref vk = ir_kid(c->m, r, 1);
  if (v.elem != d.elem)
    return chk_fail(c, vk, "scatter values have element type %s but the destination has %s",
                    chk_tyname(c, v.elem), chk_tyname(c, d.elem)),
           IR_TY_NONE;
  if (v.rank != q)
    return chk_fail(c, vk, "scatter values have rank %u but the indices have rank %u", v.rank, q),
           IR_TY_NONE;
  return d.t;
}

static ir_type permute(chk *c, ir_ref r) {
  arr d, a;
  if (!array_arg(c, r, 1, false, &d) || !array_arg(c, r, 3, false, &a))
    return IR_TY_NONE;
  if (a.elem != d.elem)
    return chk_fail(c, ir_kid(c->m, r, 3),
                    "permute source has element type %s but the destination has %s",
                    chk_tyname(c, a.elem), chk_tyname(c, d.elem)),
           IR_TY_NONE;
  ir_type small[8], *ps = index_params(c, a.rank, small, 8);
  if (!ps)
    return IR_TY_NONE;
  chk_lam l = {"permute", "index", a.rank, ps, LAM_INDEX, IR_TY_NONE, d.rank, "permute index", NULL, false};
  ir_type ok = chk_lambda(c, r, 2, &l);
  if (ps != small)
    ac_free(c->ctx, ps);
  return ok && combiner(c, r, 0, d.elem) ? d.t : IR_TY_NONE;
}

static ir_type slice(chk *c, ir_ref r) {
  uint32_t nk = ir_node_get(c->m, r)->nkids;
  static const char *const what[4] = {"", "slice start", "slice stop", "slice stride"};
  arr a;
  if (nk != 3 && nk != 4)
    return chk_fail(c, r, "malformed IR: slice with %u children", nk), IR_TY_NONE;
  if (!array_arg(c, r, 0, false, &a))
    return IR_TY_NONE;
  for (uint32_t i = 1; i < nk; i++)
    if (!chk_index_tuple(c, ir_kid(c->m, r, i), a.rank, what[i]))
      return IR_TY_NONE;
  return a.t;
}

static ir_type stencil(chk *c, ir_ref r) {
  ir_node *n = ir_node_get(c->m, r);
  int64_t b = n->attr;
  uint32_t want = b == AC_BOUNDARY_CONST ? 3 : 2;
  if (b < AC_BOUNDARY_CLAMP || b > AC_BOUNDARY_CONST || n->nkids != want)
    return chk_fail(c, r, "malformed IR: stencil with boundary %lld and %u children", (long long)b,
                    n->nkids),
           IR_TY_NONE;
  arr a;
  if (!array_arg(c, r, 1, false, &a))
    return IR_TY_NONE;
  ir_type w = ir_ty_window(c->ctx, a.elem, a.rank);
  if (!w)
    return chk_oom(c), IR_TY_NONE;
  chk_lam l = {"stencil", "window", 1, &w, LAM_ELEMENT, IR_TY_NONE, 0, "stencil function", NULL, false};
  ir_type e = chk_lambda(c, r, 0, &l);
  if (!e || (want == 3 && !chk_check(c, ir_kid(c->m, r, 2), a.elem)))
    return IR_TY_NONE;
  return chk_array_of(c, r, e, a.rank);
}

/* iterate(n, f, x) and while(c, f, x): f maps the state type to itself. */
static ir_type array_loop(chk *c, ir_ref r, ir_op op) {
  if (op == IR_ITERATE && !chk_index_pos(c, ir_kid(c->m, r, 0), "count", "counts"))
    return IR_TY_NONE;
  ir_type t = chk_synth(c, ir_kid(c->m, r, 2));
  if (!t)
    return IR_TY_NONE;
  const char *name = spelling(c, r);
  if (op == IR_WHILE) {
    chk_lam cond = {name, "value", 1, &t, LAM_BOOL, IR_TY_NONE, 0, "while condition", NULL, false};
    if (!chk_lambda(c, r, 0, &cond))
      return IR_TY_NONE;
  }
  chk_lam f = {name, "value", 1, &t, LAM_CHECK, t, 0, NULL, NULL, false};
  return chk_lambda(c, r, 1, &f);
}

static ir_type array_op(chk *c, ir_ref r, ir_op op, ir_type expect) {
  arr a;
  uint32_t q;
  ir_type t;
  switch (op) {
  case IR_LEN:
    return array_arg(c, r, 0, false, &a) ? c->t_i64 : IR_TY_NONE;
  case IR_SHAPE: {
    if (!array_arg(c, r, 0, false, &a))
      return IR_TY_NONE;
    if (a.rank == 1)
      return c->t_i64;
    ir_type small[8], *ps = index_params(c, a.rank, small, 8);
    if (!ps)
      return IR_TY_NONE;
    t = ir_ty_tuple(c->ctx, a.rank, ps);
    if (ps != small)
      ac_free(c->ctx, ps);
    return t ? t : (chk_oom(c), IR_TY_NONE);
  }
  case IR_GENERATE:
    return generate(c, r, expect);
  case IR_IOTA:
    return chk_index_pos(c, ir_kid(c->m, r, 0), "count", "counts") ? chk_array_of(c, r, c->t_i64, 1)
                                                                   : IR_TY_NONE;
  case IR_FILL:
    if (!chk_shape(c, ir_kid(c->m, r, 0), &q) || !(t = chk_synth(c, ir_kid(c->m, r, 1))))
      return IR_TY_NONE;
    if (!ir_ty_is_element(c->ctx, t))
      return chk_fail(c, ir_kid(c->m, r, 1), "fill value must be a scalar or tuple, found %s",
                      chk_tyname(c, t)),
             IR_TY_NONE;
    return chk_array_of(c, r, t, q);
  case IR_MAP:
    if (ir_node_get(c->m, r)->nkids < 2)
      return chk_fail(c, r, "malformed IR: map without arrays"), IR_TY_NONE;
    return map(c, r, expect);
  case IR_FOLD:
  case IR_FOLD_SEG:
  case IR_SCAN:
  case IR_SCAN_INCL:
  case IR_SCANR:
  case IR_SCANR_INCL:
  case IR_SCAN_SEG:
  case IR_SCAN_INCL_SEG:
    return reduction(c, r, op);
  case IR_GATHER:
    return gather(c, r);
  case IR_BACKPERMUTE:
    return backpermute(c, r);
  case IR_SCATTER:
    return scatter(c, r);
  case IR_PERMUTE:
    return permute(c, r);
  case IR_SLICE:
    return slice(c, r);
  case IR_RESHAPE:
    if (!chk_shape(c, ir_kid(c->m, r, 0), &q) || !array_arg(c, r, 1, false, &a))
      return IR_TY_NONE;
    return chk_array_of(c, r, a.elem, q);
  case IR_TRANSPOSE:
    if (!array_arg(c, r, 0, false, &a))
      return IR_TY_NONE;
    if (a.rank < 2)
      return chk_fail(c, ir_kid(c->m, r, 0),
                      "transpose expects an array of rank 2 or more, found %s", chk_tyname(c, a.t)),
             IR_TY_NONE;
    return a.t;
  case IR_REVERSE:
    return array_arg(c, r, 0, false, &a) ? a.t : IR_TY_NONE;
  case IR_REPLICATE:
    if (!chk_index_pos(c, ir_kid(c->m, r, 0), "count", "counts") || !array_arg(c, r, 1, false, &a))
      return IR_TY_NONE;
    return chk_array_of(c, r, a.elem, a.rank + 1);
  case IR_STENCIL:
    return stencil(c, r);
  case IR_FILTER: {
    if (!array_arg(c, r, 1, true, &a))
      return IR_TY_NONE;
    chk_lam l = {"filter", "element", 1, &a.elem, LAM_BOOL, IR_TY_NONE, 0, "filter predicate", NULL, false};
    return chk_lambda(c, r, 0, &l) ? a.t : IR_TY_NONE;
  }
  case IR_ITERATE:
  case IR_WHILE:
    return array_loop(c, r, op);
  case IR_DELAY: /* the identity on arrays (docs/language.md §7.15) */
  case IR_TILED: /* likewise (§7.16) */
    return array_arg(c, r, 0, false, &a) ? a.t : IR_TY_NONE;
  case IR_SIZED: { /* e, with its shape as a shape argument of e's rank (§7.17) */
    if (!array_arg(c, r, 0, false, &a) || !chk_shape(c, ir_kid(c->m, r, 1), &q))
      return IR_TY_NONE;
    if (q != a.rank)
      return chk_fail(c, ir_kid(c->m, r, 1), "sized: a shape of rank %u for an array of rank %u",
                      q, a.rank),
             IR_TY_NONE;
    return a.t;
  }
  default:
    return chk_fail(c, r, "malformed IR: %s cannot appear here", ir_ops[op].name), IR_TY_NONE;
  }
}

ir_type chk_op(chk *c, ir_ref r, ir_type expect) {
  ir_op op = (ir_op)ir_node_get(c->m, r)->op;
  ir_typing cls = ir_ops[op].typing;
  if (op == IR_FROM_LOG) /* from_log(l): f64 -> prob (§6.7) */
    return chk_check(c, ir_kid(c->m, r, 0), c->t_f64) ? c->t_prob : IR_TY_NONE;
  switch (cls) {
  case TC_ARITH:
  case TC_INT:
  case TC_SHIFT:
  case TC_CMP:
  case TC_ORD:
  case TC_LOGIC:
    return binary(c, r, expect, cls);
  case TC_NEG:
  case TC_NOT:
  case TC_BNOT:
    return unary(c, r, expect, cls);
  case TC_NUM1:
  case TC_NUM2:
  case TC_FLT1:
  case TC_FLT2:
  case TC_FLT3:
  case TC_FPRED:
    return math(c, r, cls, expect);
  default:
    return array_op(c, r, op, expect);
  }
}
