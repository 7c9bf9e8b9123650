/* Unit tests of the simplify pass (lib/passes/simplify.c) for what lit
 * tests cannot build or see: subtrees shared between places of different
 * scopes (the builder's graphs), literals that must not be shared between
 * places, let chains at the parser's depth limit, the fixed point, and
 * allocation failures. test/lit/passes/simplify-*.test check the rewrites
 * themselves. */
#include "passes/pass.h"
#include "unit.h"
#include "unit_oom.h"

#include <stdlib.h>

static ac_module *parse_ok(ac_context *ctx, const char *src) {
  ac_module *m = NULL;
  ac_error *err = NULL;
  if (ac_module_parse(ctx, "t.ac", src, strlen(src), &m, &err) != AC_OK) {
    fprintf(stderr, "parse failed: %s\n", err ? ac_error_message(err) : "?");
    ac_error_destroy(err);
    return NULL;
  }
  return m;
}

/* Runs simplify with --verify-each's round trip; returns the sum of its
 * counters, or -1 on failure. */
static long simplify(ac_module *m) {
  ps_options o;
  memset(&o, 0, sizeof o);
  o.verify_each = true;
  ps_report rep = {0};
  ac_error *err = NULL;
  ac_status st = ps_run_pipeline(m, "simplify", &o, &rep, &err);
  long n = st == AC_OK ? 0 : -1;
  for (size_t k = 0; st == AC_OK && k < PS_MAX_COUNTERS && rep.nrows; k++)
    n += (long)rep.rows[0].counters[k];
  if (st != AC_OK)
    fprintf(stderr, "simplify: %s\n", err ? ac_error_message(err) : "?");
  ac_error_destroy(err);
  ps_report_free(m->ctx, &rep);
  return n;
}

/* f(x) of an i64 -> i64 function, or INT64_MIN if the call fails. */
static int64_t call_i64(ac_module *m, int64_t x) {
  ac_datum arg, res;
  memset(&arg, 0, sizeof arg);
  arg.kind = AC_DATUM_SCALAR;
  arg.type = AC_I64;
  arg.s.i = x;
  return interp_call(m, 0, &arg, 1, &res, 1, NULL) == AC_OK ? res.s.i : INT64_MIN;
}

static ir_ref node(ac_module *m, ir_op op, uint32_t n, ir_ref a, ir_ref b) {
  ir_ref k[2] = {a, b};
  return ir_node_new(m, op, (ir_loc){1, 1}, n, k);
}

static ir_ref lit(ac_module *m, int64_t v) {
  ir_litval x;
  x.i = v;
  return ir_lit_typed(m, (ir_loc){1, 1}, ir_ty_scalar(m->ctx, AC_I64), x);
}

/* One node at two places, one of them under a let: there its variable 0 is
 * the let's, elsewhere the parameter. The memo gives both places the same
 * rewrite, which is right because rewrites see variables only relatively:
 * f(x) = (x * 1 + 0) + (let y = 5; y * 1 + 0) = x + 5. */
UNIT_TEST(shared_subtrees_mean_each_place) {
  ac_context *ctx = ac_context_create();
  ac_module *m = parse_ok(ctx, "fn f(x: i64) -> i64 { x }");
  CHECK(m != NULL);
  if (!m) {
    ac_context_destroy(ctx);
    return;
  }
  ir_ref v = ir_var(m, (ir_loc){1, 1}, 0);
  ir_ref t = node(m, IR_ADD, 2, node(m, IR_MUL, 2, v, lit(m, 1)), lit(m, 0));
  ir_ref l = node(m, IR_LET, 2, lit(m, 5), t);
  ir_node_get(m, l)->names = m->funcs[0].pnames;
  m->funcs[0].body = node(m, IR_ADD, 2, t, l);
  CHECK_EQ_INT(ir_check_module(m, NULL), AC_OK);
  CHECK_EQ_INT(call_i64(m, 7), 12);
  CHECK(simplify(m) > 0);
  CHECK_EQ_INT(call_i64(m, 7), 12);
  char *s = ac_module_print(m, NULL);
  CHECK_STR(s, "fn f(x: i64) -> i64 {\n  x + 5\n}\n");
  ac_string_destroy(ctx, s);
  ac_module_destroy(m);
  ac_context_destroy(ctx);
}

/* Counts the uses of each literal node below r into seen[] (nodes ids). */
static int shared_literals(const ac_module *m, ir_ref r, unsigned char *seen) {
  const ir_node *n = ir_node_get(m, r);
  if (n->op == IR_LIT)
    return seen[r]++ ? 1 : 0;
  int k = 0;
  for (uint32_t i = 0; i < n->nkids; i++)
    if (ir_kid(m, r, i))
      k += shared_literals(m, ir_kid(m, r, i), seen);
  return k;
}

/* A literal copied to several places is a node per place: the verifier
 * keeps per-place facts in literals (whether the context gave the type,
 * which decides the printed suffix). */
UNIT_TEST(copied_literals_are_not_shared) {
  static const char *src = "fn f(x: i64) -> i64 {\n  let k = 32i64;\n"
                           "  let (a, b) = loop (a = 0i64, b = k) while a < 3 { (a + 1, k + b) };\n"
                           "  b * k + x\n}\n";
  ac_context *ctx = ac_context_create();
  ac_module *m = parse_ok(ctx, src);
  CHECK(m != NULL);
  if (m) {
    CHECK_EQ_INT(call_i64(m, 1), 128 * 32 + 1);
    CHECK(simplify(m) > 0);
    CHECK_EQ_INT(call_i64(m, 1), 128 * 32 + 1);
    unsigned char *seen = calloc(m->nnodes, 1);
    CHECK(seen != NULL);
    if (seen)
      CHECK_EQ_INT(shared_literals(m, m->funcs[0].body, seen), 0);
    free(seen);
  }
  ac_module_destroy(m);
  ac_context_destroy(ctx);
}

/* A chain of lets as deep as the parser allows: floating turns it into one
 * expression only as far as the text stays within the parser's depth and
 * nesting limits (the round trip of --verify-each checks it), and the value
 * is unchanged. A short chain becomes one expression in one run. */
UNIT_TEST(deep_let_chains_stay_printable) {
  ac_context *ctx = ac_context_create();
  for (int n = 10; n <= 1900; n += 630) {
    ir_buf src;
    ir_buf_init(&src, ctx);
    ir_buf_puts(&src, "fn f(x: i64) -> i64 {\n  let a0 = x;\n");
    for (int k = 1; k < n; k++)
      ir_buf_printf(&src, "  let a%d = a%d * 3 + x;\n", k, k - 1);
    ir_buf_printf(&src, "  a%d\n}\n", n - 1);
    ac_module *m = parse_ok(ctx, ir_buf_cstr(&src));
    CHECK(m != NULL);
    if (m) {
      int64_t before = call_i64(m, 5);
      CHECK(simplify(m) >= (n < 100 ? n - 1 : 100));
      CHECK_EQ_INT(call_i64(m, 5), before);
      if (n < 100)
        CHECK_EQ_INT(simplify(m), 0);
      else
        CHECK(simplify(m) >= 0);
      CHECK_EQ_INT(call_i64(m, 5), before);
    }
    ir_buf_free(&src);
    ac_module_destroy(m);
  }
  ac_context_destroy(ctx);
}

/* The pass reaches its fixed point: a second run changes nothing. */
UNIT_TEST(second_run_finds_nothing) {
  static const char *src =
      "fn g(xs: f64[], c: bool, n: i64) -> (f64, i64) {\n"
      "  let k = 2.0 * 0.5;\n  let d = map(|x| x * k + 0.0, xs);\n"
      "  let (p, q) = (fold(|a, b| a + b, 0.0, d), len(iota(n * 1 + 0)));\n"
      "  let u = if c && true { 3 } else { 3 };\n"
      "  (if !!c { p } else { -(-p) }, q + i64(u) - i64(u))\n}\n";
  ac_context *ctx = ac_context_create();
  ac_module *m = parse_ok(ctx, src);
  CHECK(m != NULL);
  if (m) {
    CHECK(simplify(m) > 5);
    CHECK_EQ_INT(simplify(m), 0);
    char *s = ac_module_print(m, NULL);
    CHECK_STR(s, "fn g(xs: f64[], c: bool, n: i64) -> (f64, i64) {\n"
                 "  (fold(|a, b| a + b, 0.0, map(|x| x + 0.0, xs)), len(iota(n)))\n}\n");
    ac_string_destroy(ctx, s);
  }
  ac_module_destroy(m);
  ac_context_destroy(ctx);
}

/* ---- allocation failures: every one is reported, nothing leaks ---- */

UNIT_TEST(allocation_failures_are_reported) {
  static const char *src = "fn f(xs: i64[], x: i64) -> i64 {\n"
                           "  let (a, b) = (x * 1, 2i64 + 3);\n  let d = map(|v| v + a, xs);\n"
                           "  let e = [1, 2, 3];\n  fold(|p, q| p + q, b, d) + len(e)\n}\n";
  CHECK(unit_oom_runs(src, 4000, 3, parse_ok, unit_oom_pipeline, NULL, (void *)"simplify", NULL) > 0);
}

UNIT_MAIN(shared_subtrees_mean_each_place, copied_literals_are_not_shared,
          deep_let_chains_stay_printable, second_run_finds_nothing,
          allocation_failures_are_reported)
