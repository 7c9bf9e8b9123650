/* Unit tests of the cse and inline passes (lib/passes/cse.c, inline.c) for
 * what lit tests cannot build: subtrees shared between positions of
 * different scopes, trees at and beyond the printer's depth limit, very wide
 * terms, and allocation failures. test/lit/passes/{cse,inline}.test check
 * the rewrites themselves. */
#include "passes/pass.h"
#include "unit.h"
#include "unit_oom.h"

#include <stdlib.h>

/* The entry points (passes.c declares them for the registry). */
ac_status ps_cse(ps_ctx *c);
ac_status ps_inline(ps_ctx *c);

static ac_module *parse_ok(ac_context *ctx, const char *src) {
  ac_module *m = NULL;
  ac_error *err = NULL;
  if (ac_module_parse(ctx, "t.ac", src, strlen(src), &m, &err) != AC_OK ||
      ir_check_module(m, &err) != AC_OK) {
    fprintf(stderr, "parse failed: %s\n", err ? ac_error_message(err) : "?");
    ac_error_destroy(err);
    ac_module_destroy(m);
    return NULL;
  }
  return m;
}

/* Runs `list` with --verify-each's round trip; returns the last pass's
 * first counter, or -1 on failure. */
static long run(ac_module *m, const char *list) {
  ps_options o;
  memset(&o, 0, sizeof o);
  o.verify_each = true;
  ps_report rep = {0};
  ac_error *err = NULL;
  ac_status st = ps_run_pipeline(m, list, &o, &rep, &err);
  long n = st == AC_OK && rep.nrows ? (long)rep.rows[rep.nrows - 1].counters[0] : -1;
  if (st != AC_OK)
    fprintf(stderr, "pipeline %s: %s\n", list, err ? ac_error_message(err) : "?");
  ac_error_destroy(err);
  ps_report_free(m->ctx, &rep);
  return n;
}

static char *text(ac_module *m) {
  ir_buf b;
  ir_buf_init(&b, m->ctx);
  if (ir_print_module(m, &b, NULL) != AC_OK) {
    ir_buf_free(&b);
    return NULL;
  }
  ir_buf_cstr(&b);
  return ir_buf_take(&b);
}

static ir_ref bin(ac_module *m, ir_op op, ir_ref a, ir_ref b) {
  ir_ref k[2] = {a, b};
  return ir_node_new(m, op, (ir_loc){1, 1}, 2, k);
}

static ir_ref let(ac_module *m, ir_ref rhs, ir_ref body) {
  ir_ref r = bin(m, IR_LET, rhs, body);
  ir_node_get(m, r)->names = m->funcs[0].pnames; /* any name: a hint */
  return r;
}

/* One node used at two positions: at the same depth it is one computation;
 * under a let, the same node means another variable and must stay apart. */
UNIT_TEST(shared_nodes_are_positions) {
  ac_context *ctx = ac_context_create();
  ac_module *m = parse_ok(ctx, "fn f(x: f32) -> f32 { x }");
  CHECK(m != NULL);
  if (!m) {
    ac_context_destroy(ctx);
    return;
  }
  ir_ref t = bin(m, IR_MUL, ir_var(m, (ir_loc){1, 1}, 0), ir_var(m, (ir_loc){1, 1}, 0));
  m->funcs[0].body = bin(m, IR_ADD, t, t);
  CHECK_EQ_INT(ir_check_module(m, NULL), AC_OK);
  CHECK_EQ_INT(run(m, "cse"), 1);
  char *s = text(m);
  CHECK_STR(s, "fn f(x: f32) -> f32 {\n  let cse = x * x;\n  cse + cse\n}\n");
  ac_free(ctx, s);

  m->funcs[0].body = let(m, t, t); /* let x_1 = x * x; x_1 * x_1 */
  CHECK_EQ_INT(ir_check_module(m, NULL), AC_OK);
  CHECK_EQ_INT(run(m, "cse"), 0);
  s = text(m);
  CHECK_STR(s, "fn f(x: f32) -> f32 {\n  let x = x * x;\n  x * x\n}\n");
  ac_free(ctx, s);
  ac_module_destroy(m);
  ac_context_destroy(ctx);
}

/* A tree deeper than the printer's limit (only the C API can build one):
 * sharing would keep it too deep to print, so cse leaves it; neither pass
 * overflows anything on a tree as deep as the verifier allows. */
UNIT_TEST(deep_trees_stay_valid) {
  ac_context *ctx = ac_context_create();
  ac_module *m = parse_ok(ctx, "fn f(x: f32) -> f32 { x }");
  CHECK(m != NULL);
  if (!m) {
    ac_context_destroy(ctx);
    return;
  }
  for (uint32_t depth = 1990; depth <= 3990; depth += 1000) {
    ir_ref one = ir_lit_typed(m, (ir_loc){1, 1}, ir_ty_scalar(ctx, AC_F32), (ir_litval){.f = 1.0});
    uint32_t lets = depth - 4;
    ir_ref v = ir_var(m, (ir_loc){1, 1}, lets);
    ir_ref sq = bin(m, IR_MUL, v, v), body = bin(m, IR_ADD, sq, bin(m, IR_MUL, v, v));
    for (uint32_t i = 0; i < lets; i++)
      body = let(m, one, body);
    m->funcs[0].body = body;
    CHECK_EQ_INT(ir_check_module(m, NULL), AC_OK);
    ps_ctx c;
    memset(&c, 0, sizeof c);
    c.m = m;
    c.ctx = ctx;
    ac_status st = ps_cse(&c);
    CHECK_EQ_INT(st, AC_OK);
    /* 1990 + the let fits; 2990 and 3990 do not print either way */
    CHECK_EQ_INT(c.counters[0], depth < 2000 ? 1 : 0);
    CHECK_EQ_INT(ir_check_module(m, NULL), AC_OK);
    memset(c.counters, 0, sizeof c.counters);
    CHECK_EQ_INT(ps_inline(&c), AC_OK);
    CHECK_EQ_INT(ir_check_module(m, NULL), AC_OK);
  }
  ac_module_destroy(m);
  ac_context_destroy(ctx);
}

/* A chain of functions, each called once, each calling the next under two
 * parenthesised minus signs: inlining everything would nest the text far
 * deeper than the parser reads. Some calls stay, the text still reads back
 * (run's round trip), and the program means the same. */
UNIT_TEST(inline_keeps_text_within_limits) {
  enum { N = 200 };
  ir_buf src;
  ac_context *ctx = ac_context_create();
  ir_buf_init(&src, ctx);
  for (int k = 0; k < N; k++)
    ir_buf_printf(&src, "fn g%d(x: i64) -> i64 {\n  -(-(g%d(x) + 1) + 1)\n}\n", k, k + 1);
  ir_buf_printf(&src, "fn g%d(x: i64) -> i64 {\n  x * 2\n}\n", N);
  ac_module *m = parse_ok(ctx, ir_buf_cstr(&src));
  CHECK(m != NULL);
  if (m) {
    ac_datum arg = {AC_DATUM_SCALAR, AC_I64, {.i = 5}, NULL}, before = {0}, after = {0};
    CHECK_EQ_INT(interp_call(m, 0, &arg, 1, &before, 1, NULL), AC_OK);
    long n = run(m, "inline");
    CHECK(n > N / 2 && n < N);
    CHECK_EQ_INT(interp_call(m, 0, &arg, 1, &after, 1, NULL), AC_OK);
    CHECK_EQ_INT(before.s.i, 10);
    CHECK_EQ_INT(after.s.i, 10);
  }
  ir_buf_free(&src);
  ac_module_destroy(m);
  ac_context_destroy(ctx);
}

/* ps_printable counts syntax the way the parser does: `- - .. x` nests one
 * level per minus, `-(a + -(a + ..))` two (the operator and the
 * parentheses); the parser takes 256. */
UNIT_TEST(printable_counts_nesting) {
  ac_context *ctx = ac_context_create();
  ac_module *m = parse_ok(ctx, "fn f(x: i32) -> i32 { x }");
  CHECK(m != NULL);
  static const struct {
    int levels;
    bool paren, ok;
  } cases[] = {{200, false, true}, {300, false, false}, {120, true, true}, {140, true, false}};
  for (size_t c = 0; m && c < sizeof cases / sizeof cases[0]; c++) {
    ir_ref e = ir_var(m, (ir_loc){1, 1}, 0);
    for (int i = 0; i < cases[c].levels; i++) {
      if (cases[c].paren)
        e = bin(m, IR_ADD, ir_var(m, (ir_loc){1, 1}, 0), e);
      e = ir_node_new(m, IR_NEG, (ir_loc){1, 1}, 1, &e);
    }
    CHECK_EQ_INT(ps_printable(m, e), cases[c].ok);
    m->funcs[0].body = e;
    CHECK_EQ_INT(ir_check_module(m, NULL), AC_OK);
    char *s = text(m);
    ac_module *back = NULL;
    ac_error *err = NULL;
    CHECK(s != NULL);
    if (s)
      CHECK_EQ_INT(ac_module_parse(ctx, "p.ac", s, strlen(s), &back, &err) == AC_OK, cases[c].ok);
    ac_error_destroy(err);
    ac_module_destroy(back);
    ac_free(ctx, s);
  }
  ac_module_destroy(m);
  ac_context_destroy(ctx);
}

/* 20000 equal elements share one let; 20000 different ones share nothing
 * (and do not make the pass quadratic: the hash tells them apart). */
UNIT_TEST(wide_terms) {
  enum { N = 20000 };
  ac_context *ctx = ac_context_create();
  for (int distinct = 0; distinct < 2; distinct++) {
    ir_buf src;
    ir_buf_init(&src, ctx);
    ir_buf_puts(&src, "fn f(x: f64, y: f64) -> f64[] {\n  [");
    for (int k = 0; k < N; k++)
      ir_buf_printf(&src, "%sx * %d.0 + y", k ? ", " : "", distinct ? k : 3);
    ir_buf_puts(&src, "]\n}\n");
    ac_module *m = parse_ok(ctx, ir_buf_cstr(&src));
    CHECK(m != NULL);
    if (m)
      CHECK_EQ_INT(run(m, "cse"), distinct ? 0 : N - 1);
    ir_buf_free(&src);
    ac_module_destroy(m);
  }
  ac_context_destroy(ctx);
}

/* Running cse twice: the second run finds nothing left, also after inline
 * (whose copies of cnd's body cse then shares: cnd(d1) twice, cnd(d2)
 * twice, v * sq, x * e). */
UNIT_TEST(cse_is_idempotent) {
  static const char *src =
      "fn cnd(d: f32) -> f32 {\n  let k = 1.0 / (1.0 + 0.2316419 * abs(d));\n  k * k\n}\n"
      "fn bs(s: f32[], x: f32[], t: f32[], r: f32, v: f32) -> (f32[], f32[]) {\n"
      "  map(|s, x, t| {\n    let sq = sqrt(t);\n"
      "    let d1 = (log(s / x) + (r + 0.5 * v * v) * t) / (v * sq);\n"
      "    let d2 = d1 - v * sq;\n    let e = exp(-r * t);\n"
      "    (s * cnd(d1) - x * e * cnd(d2), x * e * (1.0 - cnd(d2)) - s * (1.0 - cnd(d1)))\n"
      "  }, s, x, t)\n}\n";
  ac_context *ctx = ac_context_create();
  for (int inl = 0; inl < 2; inl++) {
    ac_module *m = parse_ok(ctx, src);
    CHECK(m != NULL);
    if (m) {
      CHECK_EQ_INT(run(m, inl ? "inline,cse" : "cse"), 4);
      CHECK_EQ_INT(run(m, "cse"), 0);
    }
    ac_module_destroy(m);
  }
  ac_context_destroy(ctx);
}

/* ---- allocation failures: every one is reported, nothing leaks ---- */

UNIT_TEST(allocation_failures_are_reported) {
  static const char *src = "fn sq(x: f32) -> f32 { x * x }\n"
                           "fn f(xs: f32[], a: f32) -> (f32[], f32[]) {\n"
                           "  (map(|x| sq(x) + a * a, xs), map(|x| sq(x) + a * a, xs))\n}\n";
  static const char *const lists[] = {"cse", "inline"};
  for (size_t l = 0; l < 2; l++)
    CHECK(unit_oom_runs(src, 2000, 3, parse_ok, unit_oom_pipeline, NULL, (void *)lists[l], NULL) > 0);
}

UNIT_MAIN(shared_nodes_are_positions, deep_trees_stay_valid, inline_keeps_text_within_limits,
          printable_counts_nesting, wide_terms, cse_is_idempotent, allocation_failures_are_reported)
