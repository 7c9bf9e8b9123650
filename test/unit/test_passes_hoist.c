/* test/unit/test_passes_hoist.c: the hoist and sequentialise passes
 * (lib/passes/hoist.c, lib/passes/sequentialise.c) through the pass
 * manager, where the lit tests (test/lit/passes/hoist*.test,
 * sequentialise.test) cannot look: the exact warnings and their positions as
 * the callback receives them, that sequentialise makes no node at all, the
 * counters in the report, the limit on binders the free-variable masks
 * track, and every allocation made to fail in turn (the pass then reports
 * AC_ERR_NOMEM or succeeds with the same text, never crashes or leaks).
 */
#include "ir.h"
#include "passes/pass.h"
#include "unit.h"
#include "unit_oom.h"

#include <stdlib.h>

static const char *add_sum_src = "fn add_sum(xs: f32[], ys: f32[]) -> f32[] {\n"
                                 "  map(|x| x + fold(|a, b| a + b, 0.0, ys), xs)\n"
                                 "}\n"
                                 "\n"
                                 "fn dep(xs: f32[], ys: f32[]) -> f32[] {\n"
                                 "  map(|x| fold(|a, b| a + b, x, ys), xs)\n"
                                 "}\n";

static const char *add_sum_hoisted = "fn add_sum(xs: f32[], ys: f32[]) -> f32[] {\n"
                                     "  let hoisted = fold(|a, b| a + b, 0.0, ys);\n"
                                     "  map(|x| x + hoisted, xs)\n"
                                     "}\n"
                                     "\n"
                                     "fn dep(xs: f32[], ys: f32[]) -> f32[] {\n"
                                     "  map(|x| fold(|a, b| a + b, x, ys), xs)\n"
                                     "}\n";

static ac_module *parse_ok(ac_context *ctx, const char *src) {
  ac_module *m = NULL;
  ac_error *err = NULL;
  if (ac_module_parse(ctx, "t.ac", src, strlen(src), &m, &err) != AC_OK)
    fprintf(stderr, "unexpected error: %s\n", ac_error_text(err));
  CHECK(m != NULL);
  ac_error_destroy(err);
  return m;
}

/* The module's text (free with free()); NULL on failure. */
static char *text_of(ac_module *m) {
  ir_buf b;
  ir_buf_init(&b, m->ctx);
  char *res = NULL;
  if (ir_print_module(m, &b, NULL) == AC_OK && !b.oom) {
    const char *s = ir_buf_cstr(&b);
    res = malloc(strlen(s) + 1);
    if (res)
      strcpy(res, s);
  }
  ir_buf_free(&b);
  return res;
}

typedef struct warnings {
  int n;
  char text[8][200];
  ir_loc loc[8];
} warnings;

static void collect(void *ud, const ac_module *m, ir_loc loc, const char *msg) {
  warnings *w = ud;
  (void)m;
  if (w->n < 8) {
    snprintf(w->text[w->n], sizeof w->text[w->n], "%s", msg);
    w->loc[w->n] = loc;
  }
  w->n++;
}

UNIT_TEST(hoist_moves_add_sums_fold_and_counts_it) {
  ac_context *ctx = ac_context_create();
  ac_module *m = parse_ok(ctx, add_sum_src);
  ps_options o;
  memset(&o, 0, sizeof o);
  o.verify_each = true;
  ps_report rep = {NULL, 0};
  ac_error *err = NULL;
  CHECK_EQ_INT(ps_run_pipeline(m, "hoist", &o, &rep, &err), AC_OK);
  char *t = text_of(m);
  CHECK_STR(t, add_sum_hoisted);
  CHECK_EQ_INT(rep.nrows, 1);
  if (rep.nrows == 1) {
    CHECK_STR(rep.rows[0].pass->name, "hoist");
    CHECK_STR(rep.rows[0].pass->counters[0], "hoisted");
    CHECK_STR(rep.rows[0].pass->counters[1], "guarded");
    CHECK_EQ_INT(rep.rows[0].counters[0], 1);
    CHECK_EQ_INT(rep.rows[0].counters[1], 0);
  }
  /* a second run finds nothing more */
  CHECK_EQ_INT(ps_run_pipeline(m, "hoist", &o, &rep, &err), AC_OK);
  CHECK_EQ_INT(rep.nrows == 1 ? rep.rows[0].counters[0] : 99, 0);
  char *t2 = text_of(m);
  CHECK_STR(t2, add_sum_hoisted);
  free(t);
  free(t2);
  ps_report_free(ctx, &rep);
  ac_error_destroy(err);
  ac_module_destroy(m);
  ac_context_destroy(ctx);
}

UNIT_TEST(sequentialise_warns_and_makes_nothing) {
  ac_context *ctx = ac_context_create();
  ac_module *m = parse_ok(ctx, add_sum_src);
  char *before = text_of(m);
  size_t nodes = m->nnodes;
  warnings w;
  memset(&w, 0, sizeof w);
  ps_options o;
  memset(&o, 0, sizeof o);
  o.warn = collect;
  o.warn_ud = &w;
  ps_report rep = {NULL, 0};
  ac_error *err = NULL;
  CHECK_EQ_INT(ps_run_pipeline(m, "sequentialise", &o, &rep, &err), AC_OK);
  CHECK_EQ_INT(m->nnodes, nodes);
  char *after = text_of(m);
  CHECK_STR(after, before);
  CHECK_EQ_INT(w.n, 2);
  CHECK_STR(w.text[0], "nested fold runs sequentially inside the enclosing kernel (it does not "
                       "depend on the lambda's variables: see the hoist pass)");
  CHECK_EQ_INT(w.loc[0].line, 2);
  CHECK_EQ_INT(w.loc[0].col, 15);
  CHECK_STR(w.text[1],
            "nested fold runs sequentially inside the enclosing kernel (it depends on the lambda's x)");
  CHECK_EQ_INT(w.loc[1].line, 6);
  CHECK_EQ_INT(w.loc[1].col, 11);
  CHECK_EQ_INT(rep.nrows == 1 ? rep.rows[0].counters[0] : 0, 2);
  /* without a callback the warnings are dropped but still counted */
  o.warn = NULL;
  CHECK_EQ_INT(ps_run_pipeline(m, "hoist,sequentialise", &o, &rep, &err), AC_OK);
  CHECK_EQ_INT(rep.nrows == 2 ? rep.rows[1].counters[0] : 0, 1);
  free(before);
  free(after);
  ps_report_free(ctx, &rep);
  ac_error_destroy(err);
  ac_module_destroy(m);
  ac_context_destroy(ctx);
}

/* A map whose function binds `lets` variables before an independent fold:
 * the fold is under 1 + lets binders of the lambda. */
static char *binders_program(int lets) {
  size_t cap = 200 + (size_t)lets * 40;
  char *s = malloc(cap);
  if (!s)
    return NULL;
  size_t n = (size_t)snprintf(s, cap, "fn f(xs: i64[], ys: i64[]) -> i64[] {\n  map(|x| {\n");
  for (int i = 0; i < lets; i++)
    n += (size_t)snprintf(s + n, cap - n, "    let v%d = x + %d;\n", i, i);
  snprintf(s + n, cap - n, "    v0 + fold(|a, b| a + b, 0, ys)\n  }, xs)\n}\n");
  return s;
}

static uint64_t hoisted_in(const char *src) {
  ac_context *ctx = ac_context_create();
  ac_module *m = parse_ok(ctx, src);
  ps_report rep = {NULL, 0};
  ac_error *err = NULL;
  uint64_t n = 99;
  if (m && ps_run_pipeline(m, "hoist", NULL, &rep, &err) == AC_OK && rep.nrows == 1)
    n = rep.rows[0].counters[0];
  ps_report_free(ctx, &rep);
  ac_error_destroy(err);
  ac_module_destroy(m);
  ac_context_destroy(ctx);
  return n;
}

UNIT_TEST(binders_beyond_the_masks_keep_the_term) {
  /* 63 lets + the parameter: the fold's free variables (ys) are tracked */
  char *near = binders_program(63);
  char *far = binders_program(64);
  CHECK(near && far);
  if (near && far) {
    CHECK_EQ_INT(hoisted_in(near), 1);
    CHECK_EQ_INT(hoisted_in(far), 0);
  }
  free(near);
  free(far);
}

/* ---- allocation failures ---- */

/* Guards on rank 2 with an array as the hoisted value (its dummy is an
 * empty fill), a bound map array, and a guard inside a guard. */
static const char *failing_src =
    "fn g(xs: i64[,], ys: i64[,], k: i64) -> i64[,] {\n"
    "  map(|x| map(|y| y + x, slice(ys, (0, 1), (1, k)))[0, 0] + fold(|a, b| a + b, 0, iota(k)), "
    "m2(xs))\n"
    "}\n"
    "\n"
    "fn m2(xs: i64[,]) -> i64[,] {\n"
    "  map(|x| map(|y| y + x + len(filter(|z| z > 0, iota(3))), [1i64, 2])[0], xs)\n"
    "}\n";

static ac_status hoist_step(ac_module *m, void *ud, ac_error **err) {
  (void)ud;
  return ps_run_pipeline(m, "hoist,sequentialise", NULL, NULL, err);
}

/* Every successful run gives the text ud. */
static void same_text(ac_module *m, void *ud) {
  char *t = text_of(m);
  CHECK_STR(t, (const char *)ud);
  free(t);
}

UNIT_TEST(allocation_failures_are_reported) {
  /* the text every successful run must give */
  ac_context *ref = ac_context_create();
  ac_module *rm = parse_ok(ref, failing_src);
  char *want = NULL;
  if (rm && ps_run_pipeline(rm, "hoist,sequentialise", NULL, NULL, NULL) == AC_OK)
    want = text_of(rm);
  CHECK(want != NULL);
  CHECK(want && strstr(want, "if shape(arr).0 > 0 && shape(arr).1 > 0 { slice(ys, (0, 1), (1, k)) "
                             "} else { fill((0, 0), 0i64) };") != NULL);
  CHECK(want && strstr(want, "if shape(xs).0 > 0 && shape(xs).1 > 0 { if len(arr) > 0 {") != NULL);
  ac_module_destroy(rm);
  ac_context_destroy(ref);
  int failed = 0;
  CHECK(unit_oom_runs(failing_src, 3000, 3, parse_ok, hoist_step, same_text, want, &failed) > 0);
  CHECK(failed > 0);
  free(want);
}

UNIT_MAIN(hoist_moves_add_sums_fold_and_counts_it, sequentialise_warns_and_makes_nothing,
          binders_beyond_the_masks_keep_the_term, allocation_failures_are_reported)
