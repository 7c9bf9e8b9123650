/* Unit tests of shifting and substitution (lib/ir/debruijn.c), built by hand
 * so that they do not depend on the parser. */
#include "ir.h"
#include "unit.h"

static ac_context *ctx;
static ac_module *m;

static void setup(void) {
  ctx = ac_context_create();
  m = ac_module_create(ctx, "t");
}
static void teardown(void) {
  ac_module_destroy(m);
  ac_context_destroy(ctx);
}

static ir_ref bin(ir_op op, ir_ref a, ir_ref b) {
  ir_ref k[2] = {a, b};
  return ir_node_new(m, op, (ir_loc){0, 0}, 2, k);
}
static ir_ref v(uint32_t i) { return ir_var(m, (ir_loc){0, 0}, i); }
static ir_ref let(ir_ref rhs, ir_ref body) {
  ir_ref k[2] = {rhs, body};
  return ir_node_new(m, IR_LET, (ir_loc){0, 0}, 2, k);
}
static ir_ref lam(uint32_t n, ir_ref body) {
  ir_ref r = ir_node_new(m, IR_LAM, (ir_loc){0, 0}, 1, &body);
  ir_node_get(m, r)->attr = n;
  return r;
}
static int64_t var_of(ir_ref e) {
  CHECK_EQ_INT(ir_node_get(m, e)->op, IR_VAR);
  return ir_node_get(m, e)->attr;
}

UNIT_TEST(shift_free_vars_only) {
  setup();
  /* let x = v0; x + v1   (v1 in the body is the outer v0) */
  ir_ref e = let(v(0), bin(IR_ADD, v(0), v(1)));
  ir_ref s = ir_shift(m, e, 2, 0);
  CHECK(s != e);
  CHECK_EQ_INT(var_of(ir_kid(m, s, 0)), 2);
  ir_ref body = ir_kid(m, s, 1);
  CHECK_EQ_INT(var_of(ir_kid(m, body, 0)), 0); /* bound: unchanged */
  CHECK_EQ_INT(var_of(ir_kid(m, body, 1)), 3); /* free: shifted */
  teardown();
}

UNIT_TEST(shift_reuses_closed_terms) {
  setup();
  ir_ref e = lam(2, bin(IR_MUL, v(0), v(1)));
  CHECK_EQ_INT(ir_shift(m, e, 5, 0), e);
  teardown();
}

UNIT_TEST(shift_down_refuses_capture) {
  setup();
  CHECK_EQ_INT(ir_shift(m, v(0), -1, 0), IR_NONE);
  CHECK_EQ_INT(var_of(ir_shift(m, v(3), -1, 0)), 2);
  teardown();
}

UNIT_TEST(subst_replaces_and_lowers) {
  setup();
  /* (v0 + v1)[0 := v5]  ==>  v5 + v0 */
  ir_ref e = bin(IR_ADD, v(0), v(1));
  ir_ref s = ir_subst(m, e, 0, v(5));
  CHECK_EQ_INT(var_of(ir_kid(m, s, 0)), 5);
  CHECK_EQ_INT(var_of(ir_kid(m, s, 1)), 0);
  teardown();
}

UNIT_TEST(subst_under_binder_shifts_replacement) {
  setup();
  /* (|a| a + v1)[0 := v3]: inside the lambda v1 is the substituted var and
   * the replacement must become v4 there. */
  ir_ref e = lam(1, bin(IR_ADD, v(0), v(1)));
  ir_ref s = ir_subst(m, e, 0, v(3));
  ir_ref body = ir_kid(m, s, 0);
  CHECK_EQ_INT(var_of(ir_kid(m, body, 0)), 0);
  CHECK_EQ_INT(var_of(ir_kid(m, body, 1)), 4);
  teardown();
}

UNIT_TEST(beta_reduces_let) {
  setup();
  /* let x = v2; let y = x * x; y + v3   -- substitute the outer let */
  ir_ref inner = let(bin(IR_MUL, v(0), v(0)), bin(IR_ADD, v(0), v(3)));
  ir_ref s = ir_subst(m, inner, 0, v(2));
  /* result: let y = v2 * v2; y + v2   (v3 inside was the var above x: 3-1 = 2) */
  ir_ref rhs = ir_kid(m, s, 0);
  CHECK_EQ_INT(var_of(ir_kid(m, rhs, 0)), 2);
  CHECK_EQ_INT(var_of(ir_kid(m, rhs, 1)), 2);
  ir_ref body = ir_kid(m, s, 1);
  CHECK_EQ_INT(var_of(ir_kid(m, body, 0)), 0);
  CHECK_EQ_INT(var_of(ir_kid(m, body, 1)), 2);
  teardown();
}

UNIT_TEST(occurs_respects_binders) {
  setup();
  ir_ref e = lam(2, bin(IR_ADD, v(0), v(3)));
  CHECK(ir_occurs(m, e, 1));  /* v3 under 2 binders is outer v1 */
  CHECK(!ir_occurs(m, e, 0));
  teardown();
}

UNIT_TEST(equal_is_structural) {
  setup();
  ir_ref a = bin(IR_ADD, v(0), v(1)), b = bin(IR_ADD, v(0), v(1)), c = bin(IR_SUB, v(0), v(1));
  CHECK(ir_equal(m, a, b));
  CHECK(!ir_equal(m, a, c));
  teardown();
}

UNIT_MAIN(shift_free_vars_only, shift_reuses_closed_terms, shift_down_refuses_capture,
          subst_replaces_and_lowers, subst_under_binder_shifts_replacement, beta_reduces_let,
          occurs_respects_binders, equal_is_structural)
