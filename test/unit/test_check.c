/* test/unit/test_check.c: the verifier (lib/ir/check*.c).
 *
 * From text: literal types and flags (IR_F_CTX, normalised values), the
 * flexible-operand rule, types given to every node, schedules stored for
 * recurrences, exact diagnostics with positions, idempotency (checking a
 * checked module again changes nothing and print -> parse -> print is a
 * fixpoint). From hand-built IR, as the builder and passes make it: typed
 * literals, functions without bodies, and malformed trees (variables out of
 * scope, wrong child counts, missing children, cycles, misplaced lambdas)
 * that must give "malformed IR" errors rather than crashes. Finally every
 * allocation of a re-check is made to fail in turn.
 */
#include "ir.h"
#include "unit.h"
#include "unit_oom.h"

#include <stdlib.h>

static ac_module *parse(ac_context *ctx, const char *src, ac_error **err) {
  ac_module *m = NULL;
  ac_module_parse(ctx, "t.ac", src, strlen(src), &m, err);
  return m;
}

static ac_module *parse_ok(ac_context *ctx, const char *src) {
  ac_error *err = NULL;
  ac_module *m = parse(ctx, src, &err);
  if (!m)
    fprintf(stderr, "unexpected error: %s", ac_error_text(err));
  CHECK(m != NULL);
  ac_error_destroy(err);
  return m;
}

/* Expects the program to be rejected by the verifier with this first line. */
static void expect_error(const char *src, const char *line) {
  ac_context *ctx = ac_context_create();
  ac_error *err = NULL;
  ac_module *m = parse(ctx, src, &err);
  CHECK(m == NULL);
  CHECK_EQ_INT(ac_error_status(err), AC_ERR_TYPE);
  char buf[512];
  const char *text = ac_error_text(err);
  size_t n = strcspn(text, "\n");
  snprintf(buf, sizeof buf, "%.*s", (int)(n < 500 ? n : 500), text);
  CHECK_STR(buf, line);
  ac_error_destroy(err);
  ac_module_destroy(m);
  ac_context_destroy(ctx);
}

static char *print(ac_module *m) {
  ac_error *err = NULL;
  char *s = ac_module_print(m, &err);
  CHECK(s != NULL);
  ac_error_destroy(err);
  return s;
}

/* The i-th literal node in creation (source) order. */
static ir_node *lit(ac_module *m, int i) {
  for (size_t r = 1; r < m->nnodes; r++)
    if (m->nodes[r].op == IR_LIT && i-- == 0)
      return &m->nodes[r];
  CHECK(!"no such literal");
  return &m->nodes[0];
}

static ir_ref find_op(ac_module *m, ir_op op, int i) {
  for (size_t r = 1; r < m->nnodes; r++)
    if (m->nodes[r].op == op && i-- == 0)
      return (ir_ref)r;
  return IR_NONE;
}

static ir_type sc(ac_context *ctx, ac_scalar s) {
  return ir_ty_scalar(ctx, s);
}

/* ---- literals ---- */

UNIT_TEST(literal_defaults_and_context) {
  ac_context *ctx = ac_context_create();
  ac_module *m = parse_ok(ctx, "fn f(x: f32, n: i64) -> (f32, i64, u8, f64) {\n"
                               "  let a = 5; let b = 2.5;\n"
                               "  (x * 2 + 0.5, 1 + n, 255, b)\n"
                               "}\n");
  if (m) {
    CHECK_EQ_INT(lit(m, 0)->type, sc(ctx, AC_I32)); /* let a = 5 */
    CHECK(!(lit(m, 0)->flags & IR_F_CTX));
    CHECK_EQ_INT(lit(m, 1)->type, sc(ctx, AC_F64)); /* let b = 2.5 */
    CHECK(!(lit(m, 1)->flags & IR_F_CTX));
    CHECK_EQ_INT(lit(m, 2)->type, sc(ctx, AC_F32)); /* x * 2 */
    CHECK(lit(m, 2)->flags & IR_F_CTX);
    CHECK(lit(m, 2)->lit.f == 2.0);
    CHECK_EQ_INT(lit(m, 3)->type, sc(ctx, AC_F32)); /* + 0.5 */
    CHECK_EQ_INT(lit(m, 4)->type, sc(ctx, AC_I64)); /* 1 + n */
    CHECK(lit(m, 4)->flags & IR_F_CTX);
    CHECK_EQ_INT(lit(m, 5)->type, sc(ctx, AC_U8)); /* 255 */
    CHECK_EQ_INT(lit(m, 5)->lit.u, 255);
  }
  ac_module_destroy(m);
  ac_context_destroy(ctx);
}

/* A variable bound to literals takes its type from its uses (§5.6). */
UNIT_TEST(literal_bindings_inferred_from_uses) {
  ac_context *ctx = ac_context_create();
  ac_module *m = parse_ok(ctx, "fn g(a: i64) -> i64 { a }\n"
                               "fn f(cr: f32, n: i32) -> (f32, i64, f64, u8) {\n"
                               "  let (a, b) = (0.5, 2);\n"
                               "  let c = a * 2.0;\n"
                               "  let r = loop (z = 0.0, k = 0) while k < n { (z * z + cr, k + 1) };\n"
                               "  let big = 3000000000;\n"
                               "  let i = 7;\n"
                               "  (c + r.0, g(b) + big, 1 + 2.5, u8(i))\n"
                               "}\n");
  if (m) {
    CHECK_EQ_INT(lit(m, 0)->type, sc(ctx, AC_F32)); /* a = 0.5, through c + r.0 */
    /* fixed for the passes, which may move the uses that gave the type */
    CHECK(lit(m, 0)->flags & IR_F_SUFFIX);
    CHECK(!(lit(m, 0)->flags & IR_F_CTX));
    CHECK_EQ_INT(lit(m, 1)->type, sc(ctx, AC_I64)); /* b = 2, g's parameter */
    CHECK_EQ_INT(lit(m, 2)->type, sc(ctx, AC_F32)); /* 2.0 */
    CHECK_EQ_INT(lit(m, 3)->type, sc(ctx, AC_F32)); /* z = 0.0, from the step */
    CHECK_EQ_INT(lit(m, 4)->type, sc(ctx, AC_I32)); /* k = 0, as n */
    CHECK_EQ_INT(lit(m, 6)->type, sc(ctx, AC_I64)); /* big, from the sum */
    CHECK(lit(m, 6)->lit.u == 3000000000u);
    CHECK_EQ_INT(lit(m, 7)->type, sc(ctx, AC_I32)); /* i: u8(i) converts */
    /* checking again (as after every pass) infers the same types */
    CHECK_EQ_INT(ac_module_verify(m, NULL), AC_OK);
    CHECK_EQ_INT(lit(m, 0)->type, sc(ctx, AC_F32));
    CHECK_EQ_INT(lit(m, 3)->type, sc(ctx, AC_F32));
    CHECK_EQ_INT(lit(m, 6)->type, sc(ctx, AC_I64));
  }
  ac_module_destroy(m);
  ac_context_destroy(ctx);
}

UNIT_TEST(literal_values_are_normalised) {
  ac_context *ctx = ac_context_create();
  ac_module *m = parse_ok(ctx, "fn f() -> (i64, i8, u64, f32, u32, f64) {\n"
                               "  (-1, -128, 18446744073709551615, 0.1, 4294967295, -3)\n"
                               "}\n");
  if (m) {
    CHECK_EQ_INT(lit(m, 0)->lit.i, -1);
    CHECK_EQ_INT(lit(m, 1)->lit.i, -128);
    CHECK(lit(m, 2)->lit.u == UINT64_MAX);
    CHECK(lit(m, 3)->lit.f == (double)0.1f);
    CHECK(lit(m, 4)->lit.u == 4294967295u); /* unsigned: not sign-extended */
    CHECK(lit(m, 5)->lit.f == -3.0);
    /* a second check sees normalised values and must agree */
    CHECK_EQ_INT(ac_module_verify(m, NULL), AC_OK);
    CHECK_EQ_INT(lit(m, 0)->lit.i, -1);
    CHECK_EQ_INT(lit(m, 1)->lit.i, -128);
    CHECK(lit(m, 2)->lit.u == UINT64_MAX);
    CHECK(lit(m, 3)->lit.f == (double)0.1f);
    CHECK(lit(m, 4)->lit.u == 4294967295u);
    CHECK(lit(m, 5)->lit.f == -3.0);
    CHECK(lit(m, 5)->flags & IR_F_CTX);
  }
  ac_module_destroy(m);
  ac_context_destroy(ctx);
}

UNIT_TEST(flexible_operands_share_a_type) {
  ac_context *ctx = ac_context_create();
  ac_module *m = parse_ok(ctx, "fn f(x: f32, n: i64) -> bool {\n"
                               "  let a = 1 + n;\n"                 /* lit 0: i64 */
                               "  let b = x > 0.5;\n"               /* lit 1: f32 */
                               "  let c = 2.5 + 1;\n"               /* lits 2, 3: f64 */
                               "  let e = (1 + 2) * n;\n"           /* lits 4, 5: i64 */
                               "  let g = min(3, x);\n"             /* lit 6: f32 */
                               "  let h = if b { 1 } else { n };\n" /* lit 7: i64 */
                               "  b\n"
                               "}\n");
  if (m) {
    CHECK_EQ_INT(lit(m, 0)->type, sc(ctx, AC_I64));
    CHECK_EQ_INT(lit(m, 1)->type, sc(ctx, AC_F32));
    CHECK_EQ_INT(lit(m, 2)->type, sc(ctx, AC_F64));
    CHECK(!(lit(m, 2)->flags & IR_F_CTX)); /* synthesised: the printer writes 2.5f64 */
    CHECK_EQ_INT(lit(m, 3)->type, sc(ctx, AC_F64));
    CHECK(lit(m, 3)->flags & IR_F_CTX);
    CHECK_EQ_INT(lit(m, 4)->type, sc(ctx, AC_I64));
    CHECK_EQ_INT(lit(m, 5)->type, sc(ctx, AC_I64));
    CHECK_EQ_INT(lit(m, 6)->type, sc(ctx, AC_F32));
    CHECK_EQ_INT(lit(m, 7)->type, sc(ctx, AC_I64));
  }
  ac_module_destroy(m);
  ac_context_destroy(ctx);
}

UNIT_TEST(index_and_shape_positions_are_i64) {
  ac_context *ctx = ac_context_create();
  ac_module *m =
      parse_ok(ctx, "fn f(xs: f32[], k: u8) -> (f32, f32, i64[,], f32[]) {\n"
                    "  (xs[1], xs[k], generate((2, 3), |i, j| i + j), slice(xs, 0, 1 + 1))\n"
                    "}\n");
  if (m) {
    for (int i = 0; i < 6; i++)
      CHECK_EQ_INT(lit(m, i)->type, sc(ctx, AC_I64));
    ir_ref idx = find_op(m, IR_INDEX, 1); /* xs[k] */
    CHECK_EQ_INT(ir_node_get(m, ir_kid(m, idx, 1))->type, sc(ctx, AC_U8));
  }
  ac_module_destroy(m);
  ac_context_destroy(ctx);
}

UNIT_TEST(conversions_type_their_literals) {
  ac_context *ctx = ac_context_create();
  ac_module *m = parse_ok(ctx, "fn f() -> (f32, i32, u8, bool, f64) {\n"
                               "  (f32(1), i32(2.7), u8(300i32), bool(2), f64(1 + 2))\n"
                               "}\n");
  if (m) {
    CHECK_EQ_INT(lit(m, 0)->type, sc(ctx, AC_F32));
    CHECK(lit(m, 0)->flags & IR_F_CTX);
    CHECK_EQ_INT(lit(m, 1)->type, sc(ctx, AC_F64));
    CHECK(!(lit(m, 1)->flags & IR_F_CTX));
    CHECK_EQ_INT(lit(m, 2)->type, sc(ctx, AC_I32));
    CHECK_EQ_INT(lit(m, 3)->type, sc(ctx, AC_I32)); /* bool(2): synthesised */
    CHECK_EQ_INT(lit(m, 4)->type, sc(ctx, AC_F64));
    CHECK_EQ_INT(lit(m, 5)->type, sc(ctx, AC_F64));
  }
  ac_module_destroy(m);
  ac_context_destroy(ctx);
}

/* ---- node types ---- */

UNIT_TEST(every_node_gets_a_type) {
  ac_context *ctx = ac_context_create();
  ac_module *m = parse_ok(ctx, "fn sq(x: f64) -> f64 { x * x }\n"
                               "fn f(xs: f64[], ps: (f64, i32)[]) -> (f64, f64[], i32[]) {\n"
                               "  let (a, b) = ps;\n"
                               "  (fold(|p, q| p + q, 0.0, map(sq, xs)),\n"
                               "   stencil(|w| w[-1] + w[1], clamp, a),\n"
                               "   filter(|v| v > 0, b))\n"
                               "}\n");
  if (m) {
    for (size_t r = 1; r < m->nnodes; r++)
      CHECK(m->nodes[r].type != IR_TY_NONE);
    ir_type f64 = sc(ctx, AC_F64);
    ir_type ps[2] = {f64, f64};
    ir_ref lam = find_op(m, IR_LAM, 0);
    CHECK_EQ_INT(ir_node_get(m, lam)->type, ir_ty_fn(ctx, 2, ps, f64));
    ir_ref fr = find_op(m, IR_FNREF, 0);
    CHECK_EQ_INT(ir_node_get(m, fr)->type, ir_ty_fn(ctx, 1, ps, f64));
    ir_ref st = find_op(m, IR_LAM, 1);
    ir_type win = ir_ty_window(ctx, f64, 1);
    CHECK_EQ_INT(ir_node_get(m, st)->type, ir_ty_fn(ctx, 1, &win, f64));
    ir_ref v = ir_kid(m, find_op(m, IR_INDEX, 0), 0); /* w */
    CHECK_EQ_INT(ir_node_get(m, v)->type, win);
  }
  ac_module_destroy(m);
  ac_context_destroy(ctx);
}

/* ---- recurrences ---- */

static void expect_schedule(const char *src, int n, const int64_t *want) {
  ac_context *ctx = ac_context_create();
  ac_module *m = parse_ok(ctx, src);
  if (m) {
    ir_ref r = IR_NONE; /* the outermost recurrence is built last */
    for (int i = 0; find_op(m, IR_REC, i); i++)
      r = find_op(m, IR_REC, i);
    CHECK(r != IR_NONE);
    const ir_node *rn = ir_node_get(m, r);
    CHECK(rn->aux != 0);
    for (int k = 0; k < n && rn->aux; k++)
      CHECK_EQ_INT(m->ints[rn->aux + k], want[k]);
    /* re-checking reuses the slot */
    uint32_t aux = rn->aux;
    size_t nints = m->nints;
    CHECK_EQ_INT(ac_module_verify(m, NULL), AC_OK);
    CHECK_EQ_INT(ir_node_get(m, r)->aux, aux);
    CHECK_EQ_INT(m->nints, nints);
  }
  ac_module_destroy(m);
  ac_context_destroy(ctx);
}

UNIT_TEST(rec_schedules) {
  expect_schedule(
      "fn f(n: i64, m: i64) -> i32[,] {\n"
      "  rec d (i in 0..=n, j in 0..=m) -> i32 {\n"
      "    if i == 0 || j == 0 { 0 } else { d[i - 1, j] + d[i, j - 1] + d[i - 1, j - 1] }\n"
      "  }\n"
      "}\n",
      2, (int64_t[]){1, 1});
  expect_schedule("fn f(n: i64) -> i64[] {\n"
                  "  rec f (i in 0..n) -> i64 { if i < 2 { i } else { f[i - 1] + f[i - 2] } }\n"
                  "}\n",
                  1, (int64_t[]){1});
  /* reading ahead: the schedule runs backwards */
  expect_schedule("fn f(n: i64) -> i64[] {\n"
                  "  rec d (i in 0..n) -> i64 { if i == n - 1 { 0 } else { d[i + 1] + 1 } }\n"
                  "}\n",
                  1, (int64_t[]){-1});
  /* a free index (loop variable, generate index) zeroes its dimension */
  expect_schedule(
      "fn f(n: i64) -> i64[,] {\n"
      "  rec d (t in 0..n, s in 0..n) -> i64 {\n"
      "    if t == 0 { 1 } else { fold(|a, b| a + b, 0, generate(n, |k| d[t - 1, k])) }\n"
      "  }\n"
      "}\n",
      2, (int64_t[]){1, 0});
  expect_schedule(
      "fn f(n: i64) -> i64[,] {\n"
      "  rec d (t in 0..n, s in 0..n) -> i64 {\n"
      "    if t == 0 { 1 } else {\n"
      "      let r = loop (k = 0i64, acc = 0i64) while k < n { (k + 1, acc + d[t - 1, k]) };\n"
      "      r.1\n"
      "    }\n"
      "  }\n"
      "}\n",
      2, (int64_t[]){1, 0});
  /* lets, casts and constants are seen through */
  expect_schedule(
      "fn f(n: i64) -> i64[,] {\n"
      "  rec d (i in 0..n, j in 0..n) -> i64 {\n"
      "    let k = i - 1; let o = 5;\n"
      "    if i < 1 || j < 5 { 0 } else { d[i64(k), j - i64(o)] + d[k - 1 + 1, j + 2] }\n"
      "  }\n"
      "}\n",
      2, (int64_t[]){1, 0});
  /* the (1, -5) / (-1, 6) pair: the only optimum is (11, 2) */
  expect_schedule("fn f(n: i64) -> i64[,] {\n"
                  "  rec d (i in 0..n, j in 0..n) -> i64 { d[i - 1, j + 5] + d[i + 1, j - 6] }\n"
                  "}\n",
                  2, (int64_t[]){11, 2});
  /* no dependency: one wavefront */
  expect_schedule("fn f(n: i64) -> i64[,] {\n"
                  "  rec d (i in 0..n, j in 0..n) -> i64 { i * j }\n"
                  "}\n",
                  2, (int64_t[]){0, 0});
  /* nested recurrences: the inner one reads the outer one at a constant */
  expect_schedule(
      "fn f(n: i64) -> i64[] {\n"
      "  rec d (i in 0..n) -> i64 {\n"
      "    if i == 0 { 1 } else { let e = rec (k in 0..3) -> i64 { d[i - 1] + k }; e[2] }\n"
      "  }\n"
      "}\n",
      1, (int64_t[]){1});
}

UNIT_TEST(rec_errors) {
  expect_error("fn f(n: i64) -> i64[] {\n"
               "  rec d (i in 0..n) -> i64 {\n"
               "    if i == 0 { 0 } else { d[i] }\n"
               "  }\n"
               "}\n",
               "t.ac:3:28: error: rec element depends on itself");
  expect_error(
      "fn f(n: i64) -> i64[] {\n"
      "  rec d (i in 0..n) -> i64 {\n"
      "    if i == 0 || i == n - 1 { 0 } else { d[i - 1] + d[i + 1] }\n"
      "  }\n"
      "}\n",
      "t.ac:2:3: error: rec dependencies admit no schedule (cycle): d[i - 1] and d[i + 1]");
  expect_error("fn f(n: i64) -> i64[] {\n"
               "  rec d (i in 0..n) -> i64 {\n"
               "    if i == 0 { 1 } else { d[i / 2] + 1 }\n"
               "  }\n"
               "}\n",
               "t.ac:3:30: error: rec dependency is not affine in the rec indices: i / 2");
  expect_error("fn f(n: i64) -> i64[,] {\n"
               "  rec d (i in 0..n, j in 0..n) -> i64 { d[j * i, 0] }\n"
               "}\n",
               "t.ac:2:43: error: rec dependency is not affine in the rec indices: j * i");
  /* a loop variable fed by the indices is not free */
  expect_error("fn f(n: i64) -> i64[] {\n"
               "  rec d (i in 0..n) -> i64 {\n"
               "    loop (k = i) while k > 0 { d[k - 1] }\n"
               "  }\n"
               "}\n",
               "t.ac:3:34: error: rec dependency is not affine in the rec indices: k - 1");
  /* d[j, i] is free in both dimensions: it may read the element itself */
  expect_error("fn f(n: i64) -> i64[,] {\n"
               "  let g = rec d (i in 0..n, j in 0..n) -> i64 { d[j, i] };\n"
               "  g\n"
               "}\n",
               "t.ac:2:11: error: rec dependencies admit no schedule (cycle): d[j, i]");
  expect_error("fn f(n: i64) -> i64[] {\n"
               "  rec d (i in 0..n) -> i64 { len(d) }\n"
               "}\n",
               "t.ac:2:34: error: rec array 'd' may only be indexed");
  expect_error("fn f(n: i64) -> i64[] {\n"
               "  rec d (i in 0..n) -> i64 { d[i - 1, 0] }\n"
               "}\n",
               "t.ac:2:30: error: array of rank 1 indexed with 2 indices");
  expect_error("fn f(n: i64) -> i64[] {\n"
               "  rec d (i in 0..n) -> i64 { d[-9223372036854775808 + i] }\n"
               "}\n",
               "t.ac:2:32: error: rec dependency offset out of range: -9223372036854775808 + i");
  expect_error("fn f(n: i64) -> i64[,] {\n"
               "  rec d (i in 0..n, j in 0..n) -> i64 {\n"
               "    d[i - 4611686018427387904, j + 4611686018427387903] +\n"
               "    d[i + 4611686018427387903, j - 4611686018427387904]\n"
               "  }\n"
               "}\n",
               "t.ac:2:3: error: rec dependencies are too large or too many to schedule");
  expect_error("fn f(n: f64) -> i64[] {\n"
               "  rec d (i in 0..n) -> i64 { 0 }\n"
               "}\n",
               "t.ac:2:18: error: rec bound has type f64; rec bounds must be integers");
}

/* ---- diagnostics ---- */

UNIT_TEST(type_errors) {
  expect_error("fn f(x: i32, y: i64) -> i64 {\n  x + y\n}\n",
               "t.ac:2:3: error: type mismatch: expected i64, found i32");
  expect_error("fn f(x: i32, y: i64) -> bool {\n  x < y\n}\n",
               "t.ac:2:7: error: type mismatch: expected i32, found i64");
  expect_error("fn f(n: i32) -> i32 {\n  if n { 1 } else { 2 }\n}\n",
               "t.ac:2:6: error: condition must be bool, found i32");
  expect_error("fn f(p: (i32, i32)) -> i32 {\n  p.2\n}\n",
               "t.ac:2:3: error: tuple has 2 fields; .2 is out of range");
  expect_error("fn f(p: (i32, i32, i32)) -> i32 {\n  let (a, b) = p;\n  a\n}\n",
               "t.ac:2:16: error: tuple has 3 fields but 2 names are bound");
  expect_error("fn add(a: i32, b: i32) -> i32 { a + b }\nfn f() -> i32 { add(1, 2, 3) }\n",
               "t.ac:2:17: error: function 'add' takes 2 arguments, 3 given");
  /* a variable bound to literals takes its type from its uses
   * (docs/language.md §5.6); a conversion is not such a use */
  expect_error("fn f() -> f64 {\n  let y = 1 + 2.5;\n  f64(y)\n}\n",
               "t.ac:2:15: error: float literal cannot have integer type i32");
  expect_error("fn f() -> i64 {\n  let x = 3000000000;\n  i64(x)\n}\n",
               "t.ac:2:11: error: integer literal 3000000000 out of range for i32");
  expect_error("fn f(a: f32, b: f64) -> f64 {\n  let x = 1.0;\n  f64(x * a) + x * b\n}\n",
               "t.ac:2:11: error: cannot infer the type of 'x': it is used as f32 at 3:7 and as "
               "f64 at 3:16");
  expect_error("fn f(a: f32, b: f64) -> f64 {\n  let x = 1.0;\n  let y = x * a;\n  x * b\n}\n",
               "t.ac:2:11: error: cannot infer the type of 'x': it is used as f32 at 3:11 and as "
               "f64 at 4:3");
  expect_error("fn f(a: f32, b: f64) -> f64 {\n  loop (x = 1.0) while x < a { x * b }\n}\n",
               "t.ac:2:13: error: cannot infer the type of 'x': it is used as f64 at 2:32 and as "
               "f32 at 2:24");
  expect_error("fn f() -> i64 {\n  let x = 3000000000;\n  i64(x)\n}\n",
               "t.ac:2:11: error: integer literal 3000000000 out of range for i32");
  expect_error("fn f() -> u32 {\n  u32(-1)\n}\n",
               "t.ac:2:7: error: integer literal -1 out of range for u32");
  expect_error("fn f() -> f32 {\n  1e39\n}\n",
               "t.ac:2:3: error: float literal 1e+39 out of range for f32");
  expect_error("fn f(xs: f32[], x: f64) -> f32 {\n  xs[x]\n}\n",
               "t.ac:2:6: error: index has type f64; indices must be integers");
  expect_error("fn f(m: i32[,]) -> i32 {\n  m[0]\n}\n",
               "t.ac:2:3: error: array of rank 2 indexed with 1 index");
  expect_error("fn f(n: i32) -> f64 {\n  let r = sqrt(n);\n  r\n}\n",
               "t.ac:2:11: error: sqrt expects a float argument, found i32");
  expect_error("fn f(n: i32) -> f64 {\n  sqrt(n)\n}\n",
               "t.ac:2:8: error: type mismatch: expected f64, found i32");
  expect_error("fn f(x: f32) -> f32 {\n  fold(|a, b| a + b, 0.0, x)\n}\n",
               "t.ac:2:27: error: fold expects an array, found f32");
  expect_error("fn f(xs: f32[], ys: f32[]) -> f32[] {\n  map(|x| x * 2.0, xs, ys)\n}\n",
               "t.ac:2:7: error: map function takes 1 parameter but map passes 2 arrays");
  expect_error("fn f(xs: f32[]) -> f32[] {\n  map(|x| xs, xs)\n}\n",
               "t.ac:2:11: error: map function must return a scalar or tuple, found f32[] (arrays "
               "do not nest: map is element-wise on arrays of any rank; for one result per "
               "element and row, use generate((n, m), |i, j| ..))");
  expect_error("fn f(x: (i32, i32)) -> bool {\n  x == x\n}\n",
               "t.ac:2:5: error: comparison operands must be numeric or bool, found (i32, i32)");
  expect_error("fn f(x: bool) -> bool {\n  x + x\n}\n",
               "t.ac:2:5: error: operator '+' expects numeric operands, found bool");
  expect_error("fn f(x: f32) -> f32 {\n  x & x\n}\n",
               "t.ac:2:5: error: operator '&' expects integer operands, found f32");
  expect_error("fn f(x: i32) -> bool {\n  x && true\n}\n",
               "t.ac:2:3: error: operand of '&&' must be bool, found i32");
  expect_error("fn f(xs: i32[]) -> i32[] {\n  filter(|x| x, xs)\n}\n",
               "t.ac:2:14: error: filter predicate must be bool, found i32");
  expect_error("fn f(n: i32) -> i32 {\n  loop (i = 0) while i { i + 1 }\n}\n",
               "t.ac:2:22: error: condition must be bool, found i32");
  expect_error("fn f(xs: i32[,]) -> i32[,] {\n  map(|x, y| x, xs, iota(3))\n}\n",
               "t.ac:2:21: error: map arrays must have the same rank: array 2 has rank 1, "
               "array 1 has rank 2");
  expect_error("fn f() -> i32 {\n  []\n}\n",
               "t.ac:2:3: error: cannot infer the element type of an empty array literal");
  expect_error("fn f(xs: f32[]) -> f32[] {\n  let a = [xs, xs];\n  xs\n}\n",
               "t.ac:2:12: error: array literal elements must be scalars or tuples, found f32[]");
}

/* One line each; the column counts from the start of that line. */
UNIT_TEST(operation_errors) {
  expect_error("fn f(xs: f32[]) -> f32[] { backpermute(3, |i| 1.5, xs) }\n",
               "t.ac:1:47: error: backpermute index has type f64; indices must be integers");
  expect_error("fn f(m: f32[,]) -> f32[] { backpermute(3, |i| i, m) }\n",
               "t.ac:1:47: error: backpermute index must be a tuple of 2 integers, found i64");
  expect_error(
      "fn f(xs: f32[], is: f32[]) -> f32[] { gather(is, xs) }\n",
      "t.ac:1:46: error: gather indices must be an integer array for a rank-1 array, found f32[]");
  expect_error("fn f(m: f32[,], is: i64[]) -> f32[] { gather(is, m) }\n",
               "t.ac:1:46: error: gather indices must be an array of 2-tuples of integers for a "
               "rank-2 array, found i64[]");
  expect_error(
      "fn f(d: f32[], v: f64[]) -> f32[] { scatter([0], v, d) }\n",
      "t.ac:1:50: error: scatter values have element type f64 but the destination has f32");
  expect_error("fn f(d: f32[], v: f32[,]) -> f32[] { scatter([0], v, d) }\n",
               "t.ac:1:51: error: scatter values have rank 2 but the indices have rank 1");
  expect_error("fn f(d: f32[], v: f64[]) -> f32[] { permute(|a, b| a + b, d, |i| i, v) }\n",
               "t.ac:1:69: error: permute source has element type f64 but the destination has f32");
  expect_error("fn f(xs: f32[]) -> f32[] { transpose(xs) }\n",
               "t.ac:1:38: error: transpose expects an array of rank 2 or more, found f32[]");
  expect_error("fn f(xs: f32[]) -> f32[] { fill(3, xs) }\n",
               "t.ac:1:36: error: fill value must be a scalar or tuple, found f32[]");
  expect_error(
      "fn f(xs: f32[], l: f32[]) -> f32[] { fold_seg(|a, b| a + b, 0.0, xs, l) }\n",
      "t.ac:1:70: error: fold_seg segment lengths must be a rank-1 integer array, found f32[]");
  expect_error("fn f(m: f32[,]) -> f32[,] { slice(m, 0, (1, 1)) }\n",
               "t.ac:1:38: error: slice start must be a tuple of 2 integers, found i32");
  expect_error("fn f(m: f32[,]) -> f32[] { fold_seg(|a, b| a + b, 0.0, m, [1]) }\n",
               "t.ac:1:56: error: fold_seg expects a rank-1 array, found f32[,]");
  expect_error("fn f(x: f32) -> i64 { len(x) }\n",
               "t.ac:1:27: error: len expects an array, found f32");
  expect_error("fn f(m: f32[,]) -> i64 { shape(m) }\n",
               "t.ac:1:26: error: type mismatch: expected i64, found (i64, i64)");
  expect_error("fn f(xs: f32[]) -> f32[] { iterate(2.5, |x| x, xs) }\n",
               "t.ac:1:36: error: count has type f64; counts must be integers");
  expect_error("fn f(xs: f32[]) -> f32[] { iterate(2, |x| 1, xs) }\n",
               "t.ac:1:43: error: type mismatch: expected f32[], found i32");
  expect_error(
      "fn f(xs: f32[]) -> f32 { fold(|a, b| a + b, 0, xs) + fold(|a, b| a + b, 0.0, [1, 2]) }\n",
      "t.ac:1:73: error: float literal cannot have integer type i32");
  expect_error("fn f(xs: f32[]) -> f32[] { reshape((2, 2.5), xs) }\n",
               "t.ac:1:40: error: extent has type f64; extents must be integers");
  expect_error("fn f(x: f32) -> f32[] { replicate(3, x) }\n",
               "t.ac:1:38: error: replicate expects an array, found f32");
  expect_error("fn f(x: f32) -> i32 { ~x }\n",
               "t.ac:1:24: error: type mismatch: expected i32, found f32");
  expect_error("fn f(x: i32) -> i32 { -true }\n",
               "t.ac:1:24: error: type mismatch: expected i32, found bool");
  expect_error("fn f(x: i32) -> bool { !x }\n",
               "t.ac:1:24: error: operator '!' expects a bool operand, found i32");
  expect_error("fn f(x: f32) -> i32 { abs(x > 1.0) }\n",
               "t.ac:1:29: error: type mismatch: expected i32, found bool");
  expect_error("fn f(x: f32, y: f64) -> f64 { pow(x, y) }\n",
               "t.ac:1:35: error: type mismatch: expected f64, found f32");
  expect_error("fn f(x: i32) -> i32 { (x, x).0 + f32(x) }\n",
               "t.ac:1:34: error: type mismatch: expected i32, found f32");
  expect_error("fn f(x: i32) -> i32 { f32((x, x)) }\n",
               "t.ac:1:27: error: conversion to f32 expects a scalar, found (i32, i32)");
  expect_error("fn f(x: (i32, f32)) -> i32 { let (a, b) = x.0; a }\n",
               "t.ac:1:43: error: 2 names are bound but the value has type i32, not a tuple");
}

UNIT_TEST(function_references_and_recursion) {
  expect_error("fn sq(x: f32) -> f32 { x * x }\n"
               "fn f(xs: f64[]) -> f32[] { map(sq, xs) }\n",
               "t.ac:2:32: error: function 'sq' takes f32 as parameter 1 but map passes f64");
  expect_error("fn add(a: i32, b: i32) -> i64 { i64(a + b) }\n"
               "fn f(xs: i32[]) -> i32 { fold(add, 0, xs) }\n",
               "t.ac:2:31: error: function 'add' returns i64 but fold needs i32");
  expect_error("fn f(x: i32) -> i32 {\n  g(x)\n}\n\nfn g(x: i32) -> i32 {\n  f(x) + 1\n}\n",
               "t.ac:2:3: error: recursion between functions is not allowed: f -> g -> f");
  expect_error("fn f(x: i32) -> i32 { f(x) }\n",
               "t.ac:1:23: error: recursion between functions is not allowed: f -> f");
  expect_error("fn p(x: i32) -> i32 { x }\nfn f(xs: i32[]) -> i32[] { filter(p, xs) }\n",
               "t.ac:2:35: error: function 'p' returns i32, which cannot be the filter predicate");
  expect_error("fn a(x: f32) -> f32 { x }\n"
               "fn b(xs: f32[]) -> f32[] { map(c, xs) }\n"
               "fn c(x: f32) -> f32 { fold(|p, q| p + q, x, b([x])) }\n",
               "t.ac:2:32: error: recursion between functions is not allowed: b -> c -> b");
}

UNIT_TEST(stencil_rules) {
  expect_error("fn f(xs: i32[], k: i64) -> i32[] {\n  stencil(|w| w[k], clamp, xs)\n}\n",
               "t.ac:2:17: error: stencil offsets must be integer constants");
  expect_error("fn f(xs: i32[]) -> i32[] {\n  stencil(|w| w[0, 1], clamp, xs)\n}\n",
               "t.ac:2:15: error: stencil window of rank 1 needs 1 offset, found 2");
  expect_error("fn f(xs: i32[]) -> i32[] {\n  stencil(|w| w, clamp, xs)\n}\n",
               "t.ac:2:15: error: stencil window 'w' may only be indexed");
  expect_error("fn f(xs: f32[]) -> f32[] {\n  stencil(|w| w[-1], true, xs)\n}\n",
               "t.ac:2:22: error: type mismatch: expected f32, found bool");
}

/* ---- idempotency and round trips ---- */

static const char *const corpus[] = {
    "fn dotp(xs: f32[], ys: f32[]) -> f32 {\n"
    "  fold(|a, b| a + b, 0.0, map(|x, y| x * y, xs, ys))\n}\n",
    "fn scale(x: f32, n: i64) -> (f32, i64, u8, f64, f32) {\n"
    "  let k = 7;\n  (x * 2 + 0.5, 1 + n, 255, 2.5 + 1, f32(k) - -inf)\n}\n",
    "fn ed(s: u8[], t: u8[]) -> i32 {\n  let n = len(s);\n  let m = len(t);\n"
    "  let d = rec (i in 0..=n, j in 0..=m) -> i32 {\n"
    "    if i == 0 { i32(j) } else if j == 0 { i32(i) } else {\n"
    "      min(min(d[i - 1, j] + 1, d[i, j - 1] + 1),\n"
    "          d[i - 1, j - 1] + (if s[i - 1] == t[j - 1] { 0 } else { 1 }))\n    }\n  };\n"
    "  d[n, m]\n}\n",
    "fn lits() -> (f64[], i32[,], u8[], (i32, bool)[], u64, i8) {\n"
    "  ([1, 2.5], [[1, 2], [3, 4]], [], [(1, true), (2, false)], 0xffffffffffffffff, -128)\n}\n",
    "fn ops(m: f64[,], v: f64[], is: i64[]) -> (f64[], f64[,], f64[], f64[]) {\n"
    "  let (r, c) = shape(m);\n"
    "  (generate(r, |i| fold(|a, b| a + b, 0.0, generate(c, |j| m[i, j] * v[j]))),\n"
    "   stencil(|w| (w[-1, 0] + w[1, 0]) / 2, 0, m), gather(is, v),\n"
    "   iterate(3, |x| map(|e| e * 2, x), v))\n}\n",
    "fn conv(x: u8) -> (f32, i32, bool, u64, u8) {\n"
    "  (f32(1), i32(2.7), bool(2), u64(-1i32), x << 1)\n}\n",
};

UNIT_TEST(checking_twice_changes_nothing) {
  for (size_t i = 0; i < sizeof corpus / sizeof *corpus; i++) {
    ac_context *ctx = ac_context_create();
    ac_module *m = parse_ok(ctx, corpus[i]);
    if (m) {
      char *a = print(m);
      size_t nn = m->nnodes;
      ir_node *copy = malloc(nn * sizeof *copy);
      memcpy(copy, m->nodes, nn * sizeof *copy);
      CHECK_EQ_INT(ac_module_verify(m, NULL), AC_OK);
      CHECK(memcmp(copy, m->nodes, nn * sizeof *copy) == 0);
      char *b = print(m);
      CHECK_STR(b, a);
      /* print -> parse -> print is a fixpoint */
      ac_module *m2 = parse_ok(ctx, a);
      if (m2) {
        char *c2 = print(m2);
        CHECK_STR(c2, a);
        ac_string_destroy(ctx, c2);
      }
      ac_module_destroy(m2);
      free(copy);
      ac_string_destroy(ctx, a);
      ac_string_destroy(ctx, b);
    }
    ac_module_destroy(m);
    ac_context_destroy(ctx);
  }
}

/* ---- hand-built IR (builder and passes) ---- */

static ir_loc L(unsigned line) {
  return (ir_loc){line, 1};
}

static ir_ref mk(ac_module *m, ir_op op, unsigned line, uint32_t n, const ir_ref *kids) {
  return ir_node_new(m, op, L(line), n, kids);
}

/* A module with one function f(x: i32) -> result and the given body. */
static ac_module *one_fn(ac_context *ctx, ir_type result) {
  ac_module *m = ac_module_create(ctx, "built");
  ir_type p = sc(ctx, AC_I32);
  ir_sym x = ir_sym_intern(ctx, "x", 1);
  ir_func_add(m, ir_sym_intern(ctx, "f", 1), L(1), 1, &p, &x, result);
  return m;
}

static void expect_built(ac_module *m, ir_ref body, ac_status st, const char *msg) {
  m->funcs[0].body = body;
  ac_error *err = NULL;
  CHECK_EQ_INT(ac_module_verify(m, &err), st);
  if (msg)
    CHECK_STR(ac_error_message(err), msg);
  ac_error_destroy(err);
}

UNIT_TEST(built_ir_with_typed_literals) {
  ac_context *ctx = ac_context_create();
  ac_module *m = one_fn(ctx, sc(ctx, AC_I32));
  /* x + (i32)7, and an i8 literal stored with stray high bits */
  ir_ref k[2] = {ir_var(m, L(2), 0), ir_lit_typed(m, L(2), sc(ctx, AC_I32), (ir_litval){.u = 7})};
  ir_ref b8 = ir_lit_typed(m, L(3), sc(ctx, AC_I8), (ir_litval){.u = 0x1ff});
  ir_ref cast = mk(m, IR_CAST, 3, 1, &b8);
  ir_node_get(m, cast)->type = sc(ctx, AC_I32);
  ir_ref add = mk(m, IR_ADD, 2, 2, k);
  ir_ref both[2] = {add, cast};
  expect_built(m, mk(m, IR_ADD, 2, 2, both), AC_OK, NULL);
  CHECK(ir_node_get(m, k[1])->flags & IR_F_CTX); /* x + 7: the suffix is redundant */
  CHECK_EQ_INT(ir_node_get(m, b8)->lit.i, -1);
  CHECK_EQ_INT(ir_node_get(m, k[0])->type, sc(ctx, AC_I32));
  /* a typed literal of the wrong type is a mismatch, not a conversion */
  ir_ref f = ir_lit_typed(m, L(4), sc(ctx, AC_F32), (ir_litval){.f = 1.0});
  expect_built(m, f, AC_ERR_TYPE, "type mismatch: expected i32, found f32");
  ac_module_destroy(m);
  ac_context_destroy(ctx);
}

UNIT_TEST(functions_without_body_are_skipped) {
  ac_context *ctx = ac_context_create();
  ac_module *m = one_fn(ctx, sc(ctx, AC_I32));
  CHECK_EQ_INT(ac_module_verify(m, NULL), AC_OK);
  /* a call to it is checked against its signature */
  ir_ref arg = ir_var(m, L(2), 0);
  ir_type p = sc(ctx, AC_I32);
  ir_sym y = ir_sym_intern(ctx, "y", 1);
  ir_func_add(m, ir_sym_intern(ctx, "g", 1), L(2), 1, &p, &y, p);
  ir_ref call = mk(m, IR_CALL, 2, 1, &arg);
  ir_node_get(m, call)->attr = 0;
  m->funcs[1].body = call;
  CHECK_EQ_INT(ac_module_verify(m, NULL), AC_OK);
  ac_module_destroy(m);
  ac_context_destroy(ctx);
}

UNIT_TEST(malformed_ir_is_an_error) {
  ac_context *ctx = ac_context_create();
  ac_module *m = one_fn(ctx, sc(ctx, AC_I32));
  ir_type i32 = sc(ctx, AC_I32);
  expect_built(m, ir_var(m, L(2), 3), AC_ERR_TYPE,
               "malformed IR: variable 3 is not in scope (1 bound)");
  ir_ref v = ir_var(m, L(2), 0);
  expect_built(m, mk(m, IR_ADD, 2, 1, &v), AC_ERR_TYPE,
               "malformed IR: ADD node with 1 children, expected 2");
  expect_built(m, mk(m, IR_NEG, 2, 1, NULL), AC_ERR_TYPE,
               "malformed IR: child 0 of a NEG node is missing");
  /* a node that is its own child */
  ir_ref cyc = mk(m, IR_NEG, 2, 1, NULL);
  ir_set_kid(m, cyc, 0, cyc);
  expect_built(m, cyc, AC_ERR_TYPE,
               "malformed IR: a NEG node is its own descendant (the IR has a cycle)");
  expect_built(m, mk(m, IR_TUPLE, 2, 1, &v), AC_ERR_TYPE, "malformed IR: tuple with one field");
  ir_ref lam = mk(m, IR_LAM, 2, 1, &v);
  ir_node_get(m, lam)->attr = 1;
  expect_built(m, lam, AC_ERR_TYPE,
               "a lambda is only allowed as the argument of an array operation");
  ir_ref fr = mk(m, IR_FNREF, 2, 0, NULL);
  expect_built(m, fr, AC_ERR_TYPE,
               "'f' is a function, not a value: call it, or pass it to an array operation");
  ir_ref call = mk(m, IR_CALL, 2, 1, &v);
  ir_node_get(m, call)->attr = 5;
  expect_built(m, call, AC_ERR_TYPE, "malformed IR: call of function 5 of 1");
  ir_ref cast = mk(m, IR_CAST, 2, 1, &v);
  expect_built(m, cast, AC_ERR_TYPE, "malformed IR: conversion to a non-scalar type");
  ir_ref lit = ir_lit_typed(m, L(2), IR_TY_NONE, (ir_litval){.u = 0});
  expect_built(m, lit, AC_ERR_TYPE, "malformed IR: literal without a scalar type");
  /* an array literal whose extents do not match its elements */
  int64_t ext = 3;
  ir_ref arr = mk(m, IR_ARRLIT, 2, 1, &v);
  ir_node_get(m, arr)->attr = 1;
  ir_node_get(m, arr)->aux = ir_ints_push(m, 1, &ext);
  expect_built(m, arr, AC_ERR_TYPE, "malformed IR: array literal has 1 elements for 3");
  /* a rec without its array type, a stencil with the wrong children */
  ir_ref rk[3] = {v, v, v};
  ir_ref rec = mk(m, IR_REC, 2, 3, rk);
  ir_node_get(m, rec)->attr = 1;
  expect_built(m, rec, AC_ERR_TYPE, "malformed IR: rec without an array type of rank 1");
  ir_ref st = mk(m, IR_STENCIL, 2, 2, rk);
  ir_node_get(m, st)->attr = AC_BOUNDARY_CONST;
  expect_built(m, st, AC_ERR_TYPE, "malformed IR: stencil with boundary 3 and 2 children");
  /* a map whose function is neither a lambda nor a function name */
  ir_ref xs = mk(m, IR_IOTA, 2, 1, &v);
  ir_ref mp[2] = {v, xs};
  expect_built(m, mk(m, IR_MAP, 2, 2, mp), AC_ERR_TYPE,
               "map expects a function (a lambda or a function name) as argument 1");
  /* and a function with an impossible parameter type */
  ir_type fnty = ir_ty_fn(ctx, 1, &i32, i32);
  ir_sym z = ir_sym_intern(ctx, "z", 1);
  ir_func_add(m, ir_sym_intern(ctx, "h", 1), L(9), 1, &fnty, &z, i32);
  m->funcs[0].body = v;
  ac_error *err = NULL;
  CHECK_EQ_INT(ac_module_verify(m, &err), AC_ERR_TYPE);
  CHECK_STR(ac_error_message(err), "malformed IR: parameter 1 of function 'h' has no valid type");
  ac_error_destroy(err);
  ac_module_destroy(m);
  ac_context_destroy(ctx);
}

/* ---- allocation failures ---- */

static ac_status verify_step(ac_module *m, void *ud, ac_error **err) {
  (void)ud;
  return ac_module_verify(m, err);
}

UNIT_TEST(allocation_failures_are_reported) {
  const char *src = corpus[2];
  CHECK(unit_oom_runs(src, 400, 3, parse_ok, verify_step, NULL, NULL, NULL) > 0);
}

UNIT_MAIN(literal_defaults_and_context, literal_bindings_inferred_from_uses,
          literal_values_are_normalised,
          flexible_operands_share_a_type, index_and_shape_positions_are_i64,
          conversions_type_their_literals, every_node_gets_a_type, rec_schedules, rec_errors,
          type_errors, operation_errors, function_references_and_recursion, stencil_rules,
          checking_twice_changes_nothing, built_ir_with_typed_literals,
          functions_without_body_are_skipped, malformed_ir_is_an_error,
          allocation_failures_are_reported)
