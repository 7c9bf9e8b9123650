/* Unit tests of the fuse pass (lib/passes/fuse.c) for what lit tests
 * cannot show: chains of producers long enough that fusing them would nest
 * the text deeper than the parser reads (the function keeps its form),
 * allocation failures at every point (reported, nothing leaks), and the
 * pass on a tree as deep as the verifier allows. test/lit/passes/fuse.test
 * checks the rewrites themselves. */
#include "passes/pass.h"
#include "unit.h"
#include "unit_oom.h"

#include <stdlib.h>

/* The entry point (passes.c declares it for the registry). */
ac_status ps_fuse(ps_ctx *c);

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

/* Runs fuse with --verify-each's round trip; the "fused" counter, or -1. */
static long run_fuse(ac_module *m) {
  ps_options o;
  memset(&o, 0, sizeof o);
  o.verify_each = true;
  ps_report rep = {0};
  ac_error *err = NULL;
  ac_status st = ps_run_pipeline(m, "fuse", &o, &rep, &err);
  long n = st == AC_OK && rep.nrows ? (long)rep.rows[rep.nrows - 1].counters[0] : -1;
  if (st != AC_OK)
    fprintf(stderr, "fuse: %s\n", err ? ac_error_message(err) : "?");
  ac_error_destroy(err);
  ps_report_free(m->ctx, &rep);
  return n;
}

/* fn f(xs) { let a1 = map(.., xs); let a2 = map(.., a1); ..; fold(.., an) } */
static char *chain_source(unsigned n) {
  size_t cap = 128 + (size_t)n * 64;
  char *s = malloc(cap);
  if (!s)
    return NULL;
  size_t len = (size_t)snprintf(s, cap, "fn f(xs: i64[]) -> i64 {\n  let a0 = xs;\n");
  for (unsigned i = 1; i <= n; i++)
    len += (size_t)snprintf(s + len, cap - len, "  let a%u = map(|x| x + %u, a%u);\n", i, i % 7,
                            i - 1);
  snprintf(s + len, cap - len, "  fold(|p, q| p + q, 0, a%u)\n}\n", n);
  return s;
}

/* Every map of a chain of 100 moves into its consumer; a chain of 300
 * would nest delay(map(.., delay(map(.. 300 levels of parentheses, more
 * than the parser reads (PARSE_MAX_NEST): its lets stay, so the fold's
 * operand is a variable and nothing is fused. */
UNIT_TEST(chains_stay_printable) {
  static const unsigned lens[2] = {100, 300};
  for (int i = 0; i < 2; i++) {
    ac_context *ctx = ac_context_create();
    char *src = chain_source(lens[i]);
    ac_module *m = src ? parse_ok(ctx, src) : NULL;
    CHECK(m != NULL);
    if (m) {
      long fused = run_fuse(m);
      CHECK_EQ_INT(fused, i == 0 ? 100 : 0);
      CHECK(ps_printable(m, m->funcs[0].body));
    }
    ac_module_destroy(m);
    free(src);
    ac_context_destroy(ctx);
  }
}

/* A tree deeper than any text (only the C API builds one): 1500 nested
 * maps. Delaying each into the next would not print, so the body is kept;
 * nothing overflows on the way. */
UNIT_TEST(deep_trees_are_left_alone) {
  ac_context *ctx = ac_context_create();
  ac_module *m = parse_ok(ctx, "fn f(xs: i64[]) -> i64[] { map(|x| x + 1, xs) }");
  CHECK(m != NULL);
  if (!m) {
    ac_context_destroy(ctx);
    return;
  }
  ir_ref body = m->funcs[0].body, lam = ir_kid(m, body, 0);
  for (int i = 0; i < 1500; i++) {
    ir_ref kids[2] = {lam, body};
    body = ir_node_new(m, IR_MAP, (ir_loc){1, 1}, 2, kids);
  }
  m->funcs[0].body = body;
  CHECK_EQ_INT(ir_check_module(m, NULL), AC_OK);
  ps_ctx c;
  memset(&c, 0, sizeof c);
  c.m = m;
  c.ctx = ctx;
  CHECK_EQ_INT(ps_fuse(&c), AC_OK);
  CHECK(m->funcs[0].body == body);
  CHECK_EQ_INT(c.counters[0], 0);
  CHECK_EQ_INT(ir_check_module(m, NULL), AC_OK);
  ac_module_destroy(m);
  ac_context_destroy(ctx);
}

/* ---- allocation failures: every one is reported, nothing leaks ---- */

UNIT_TEST(allocation_failures_are_reported) {
  static const char *src =
      "fn sq(x: f32) -> f32 { x * x }\n"
      "fn f(xs: f32[], ys: f32[]) -> (f32, f32[], f32[]) {\n"
      "  let d = map(|x, y| x - y, xs, ys);\n"
      "  let n = len(xs);\n"
      "  (fold(|a, b| a + b, 0.0, map(sq, d)), map(|a, b| a - b, slice(xs, 1, n), slice(xs, 0, n - 1)),\n"
      "   map(|x| x + 1.0, xs))\n}\n"
      "fn g(s: f32[], x: f32[]) -> (f32[], f32[]) {\n"
      "  let c = map(|s, x| s - x, s, x);\n"
      "  let p = map(|s, x| x - s, s, x);\n"
      "  (c, p)\n}\n";
  CHECK(unit_oom_runs(src, 3000, 3, parse_ok, unit_oom_pipeline, NULL, (void *)"fuse", NULL) > 0);
}

UNIT_MAIN(chains_stay_printable, deep_trees_are_left_alone, allocation_failures_are_reported)
