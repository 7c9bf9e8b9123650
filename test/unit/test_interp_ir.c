/* Interpreter tests on hand-built, typed IR.
 *
 * These build verified-looking IR directly (types set by hand, rec schedules
 * and array-literal extents in m->ints), so they test the interpreter's
 * reading of the IR contract (lib/ir/ir.h: binders, de Bruijn order, node
 * layouts) independently of the parser and verifier, and reach corners that
 * text cannot express (a wrong rec schedule, nesting deeper than the parser
 * allows). The scalar rules are tested directly on lib/interp/scalar.c.
 * test_interp.c tests the same semantics through program text.
 */
#include "interp/interp.h"
#include "test_interp_util.h"

#include <stdarg.h>

static ac_context *ctx;
static ac_module *m;

static void setup(void) {
  ctx = ac_context_create();
  m = ac_module_create(ctx, "t.ac");
}
static void teardown(void) {
  ac_module_destroy(m);
  ac_context_destroy(ctx);
}

static ir_type S(ac_scalar s) {
  return ir_ty_scalar(ctx, s);
}
static ir_type A(ac_scalar s, uint32_t rank) {
  return ir_ty_array(ctx, S(s), rank);
}
static ir_type T2(ir_type a, ir_type b) {
  ir_type f[2] = {a, b};
  return ir_ty_tuple(ctx, 2, f);
}

/* A node of type t with n children, at line 1 column 1 (see at()). */
static ir_ref nd(ir_op op, ir_type t, uint32_t n, ...) {
  ir_ref kids[16];
  va_list ap;
  va_start(ap, n);
  for (uint32_t i = 0; i < n; i++)
    kids[i] = va_arg(ap, ir_ref);
  va_end(ap);
  ir_ref r = ir_node_new(m, op, (ir_loc){1, 1}, n, kids);
  ir_node_get(m, r)->type = t;
  return r;
}
static ir_ref attr(ir_ref r, int64_t a) {
  ir_node_get(m, r)->attr = a;
  return r;
}
static ir_ref at(ir_ref r, unsigned line, unsigned col) {
  ir_node_get(m, r)->loc = (ir_loc){line, col};
  return r;
}
static ir_ref var(uint32_t i, ir_type t) {
  return attr(nd(IR_VAR, t, 0), i);
}
static ir_ref ilit(ac_scalar s, int64_t v) {
  return ir_lit_typed(m, (ir_loc){1, 1}, S(s), (ir_litval){.i = v});
}
static ir_ref flit(ac_scalar s, double v) {
  return ir_lit_typed(m, (ir_loc){1, 1}, S(s), (ir_litval){.f = v});
}
static ir_ref lam(uint32_t n, ir_ref body) {
  return attr(nd(IR_LAM, IR_TY_NONE, 1, body), n);
}
/* |a, b| a + b on scalars of kind s */
static ir_ref plus(ac_scalar s) {
  return lam(2, nd(IR_ADD, S(s), 2, var(1, S(s)), var(0, S(s))));
}

static void fn(const char *name, uint32_t np, const ir_type *pt, ir_type res, ir_ref body) {
  ir_sym names[8];
  for (uint32_t i = 0; i < np; i++) {
    char s[16];
    snprintf(s, sizeof s, "p%u", i);
    names[i] = ir_sym_intern(ctx, s, strlen(s));
  }
  int32_t f =
      ir_func_add(m, ir_sym_intern(ctx, name, strlen(name)), (ir_loc){1, 1}, np, pt, names, res);
  m->funcs[f].body = body;
}

/* ---- scalar semantics, directly ---- */

static interp_scalar si(int64_t v) {
  return (interp_scalar){.i = v};
}
static interp_scalar sf(double v) {
  return (interp_scalar){.f = v};
}
static int64_t bin_i(ir_op op, ac_scalar s, int64_t a, int64_t b) {
  return interp_sc_binary(op, s, interp_sc_norm(s, si(a)), interp_sc_norm(s, si(b))).i;
}

UNIT_TEST(integers_wrap_and_division_is_total) {
  CHECK_EQ_INT(bin_i(IR_ADD, AC_I32, INT32_MAX, 1), INT32_MIN);
  CHECK_EQ_INT(bin_i(IR_ADD, AC_I8, 127, 1), -128);
  CHECK_EQ_INT(bin_i(IR_MUL, AC_I64, INT64_MAX, 2), -2);
  CHECK_EQ_INT(bin_i(IR_SUB, AC_U8, 1, 2), 255);
  CHECK_EQ_INT(bin_i(IR_DIV, AC_I32, -7, 2), -3);
  CHECK_EQ_INT(bin_i(IR_REM, AC_I32, -7, 2), -1);
  CHECK_EQ_INT(bin_i(IR_DIV, AC_I32, 7, 0), 0);
  CHECK_EQ_INT(bin_i(IR_REM, AC_I32, 7, 0), 7);
  CHECK_EQ_INT(bin_i(IR_DIV, AC_U64, 7, 0), 0);
  CHECK_EQ_INT(bin_i(IR_REM, AC_U16, 7, 0), 7);
  CHECK_EQ_INT(bin_i(IR_DIV, AC_I32, INT32_MIN, -1), INT32_MIN);
  CHECK_EQ_INT(bin_i(IR_REM, AC_I32, INT32_MIN, -1), 0);
  CHECK_EQ_INT(bin_i(IR_DIV, AC_I64, INT64_MIN, -1), INT64_MIN);
  CHECK_EQ_INT(bin_i(IR_REM, AC_I64, INT64_MIN, -1), 0);
  CHECK_EQ_INT(bin_i(IR_DIV, AC_U32, 4294967295, 2), 2147483647);
  CHECK_EQ_INT(interp_sc_unary(IR_NEG, AC_I8, si(-128)).i, -128);
  CHECK_EQ_INT(interp_sc_unary(IR_ABS, AC_I32, si(INT32_MIN)).i, INT32_MIN);
  CHECK_EQ_INT(interp_sc_unary(IR_NEG, AC_U8, si(1)).i, 255);
  CHECK_EQ_INT(interp_sc_unary(IR_BNOT, AC_U8, si(12)).i, 243);
  CHECK_EQ_INT(bin_i(IR_MIN, AC_U32, 1, 4294967295), 1);
  CHECK_EQ_INT(bin_i(IR_LT, AC_U64, 1, -1), 1); /* -1 is 2^64-1 as u64 */
  CHECK_EQ_INT(bin_i(IR_LT, AC_I64, 1, -1), 0);
}

UNIT_TEST(shift_amounts_are_masked) {
  CHECK_EQ_INT(bin_i(IR_SHL, AC_I32, 1, 33), 2);
  CHECK_EQ_INT(bin_i(IR_SHL, AC_I32, 1, -1), INT32_MIN);
  CHECK_EQ_INT(bin_i(IR_SHR, AC_I32, -16, 2), -4);
  CHECK_EQ_INT(bin_i(IR_SHR, AC_I32, 1, -1), 0);
  CHECK_EQ_INT(bin_i(IR_SHR, AC_U32, 4294967295, 31), 1);
  CHECK_EQ_INT(bin_i(IR_SHR, AC_I8, -128, 7), -1);
  CHECK_EQ_INT(bin_i(IR_SHR, AC_U8, 128, 7), 1);
  CHECK_EQ_INT(bin_i(IR_SHL, AC_I64, 1, 63), INT64_MIN);
  CHECK_EQ_INT(bin_i(IR_SHR, AC_I64, INT64_MIN, 64), INT64_MIN);
}

static int64_t cast_i(ac_scalar to, double x) {
  return interp_sc_to_i64(to, interp_sc_cast(to, AC_F64, sf(x)));
}

UNIT_TEST(float_to_int_saturates_and_nan_is_zero) {
  CHECK_EQ_INT(cast_i(AC_I32, 300.7), 300);
  CHECK_EQ_INT(cast_i(AC_I32, -2.5), -2);
  CHECK_EQ_INT(cast_i(AC_U8, 300.7), 255);
  CHECK_EQ_INT(cast_i(AC_U8, -2.5), 0);
  CHECK_EQ_INT(cast_i(AC_U8, -0.5), 0);
  CHECK_EQ_INT(cast_i(AC_I8, -1e9), -128);
  CHECK_EQ_INT(cast_i(AC_I64, 1e300), INT64_MAX);
  CHECK_EQ_INT(cast_i(AC_I64, -INFINITY), INT64_MIN);
  CHECK_EQ_INT(cast_i(AC_I64, 9223372036854775807.0), INT64_MAX); /* rounds to 2^63 */
  CHECK_EQ_INT(cast_i(AC_I32, NAN), 0);
  CHECK(interp_sc_cast(AC_U64, AC_F64, sf(1e30)).u == UINT64_MAX);
  CHECK(interp_sc_cast(AC_U64, AC_F64, sf(18446744073709549568.0)).u == 18446744073709549568u);
}

UNIT_TEST(conversions_between_kinds) {
  /* int -> int extends by the source's signedness */
  CHECK_EQ_INT(interp_sc_cast(AC_U8, AC_I32, si(-1)).i, 255);
  CHECK(interp_sc_cast(AC_U64, AC_I32, si(-1)).u == UINT64_MAX);
  CHECK_EQ_INT(interp_sc_cast(AC_I8, AC_I32, si(299)).i, 43);
  CHECK_EQ_INT(interp_sc_cast(AC_I16, AC_U8, si(255)).i, 255);
  /* int -> float rounds once, to the target precision */
  CHECK(interp_sc_cast(AC_F32, AC_I32, si(16777217)).f == 16777216.0);
  CHECK(interp_sc_cast(AC_F32, AC_I64, si(INT64_MAX)).f == 9223372036854775808.0);
  CHECK(interp_sc_cast(AC_F64, AC_U64, (interp_scalar){.u = UINT64_MAX}).f ==
        18446744073709551616.0);
  /* f64 -> f32 rounds, overflowing to inf */
  CHECK(interp_sc_cast(AC_F32, AC_F64, sf(0.1)).f == (double)0.1f);
  CHECK(isinf(interp_sc_cast(AC_F32, AC_F64, sf(1e39)).f));
  /* bool */
  CHECK_EQ_INT(interp_sc_cast(AC_BOOL, AC_F64, sf(NAN)).u, 1);
  CHECK_EQ_INT(interp_sc_cast(AC_BOOL, AC_F64, sf(-0.0)).u, 0);
  CHECK_EQ_INT(interp_sc_cast(AC_BOOL, AC_I8, si(-128)).u, 1);
  CHECK(interp_sc_cast(AC_F32, AC_BOOL, (interp_scalar){.u = 1}).f == 1.0);
  CHECK_EQ_INT(interp_sc_cast(AC_I64, AC_BOOL, (interp_scalar){.u = 1}).i, 1);
}

UNIT_TEST(floats_follow_ieee_and_the_c_library) {
  /* f32 arithmetic rounds to float at every step */
  interp_scalar a = interp_sc_norm(AC_F32, sf(0.1)), b = interp_sc_norm(AC_F32, sf(0.2));
  CHECK(interp_sc_binary(IR_ADD, AC_F32, a, b).f == (double)(0.1f + 0.2f));
  CHECK(interp_sc_binary(IR_ADD, AC_F64, sf(0.1), sf(0.2)).f == 0.1 + 0.2);
  CHECK(interp_sc_unary(IR_EXP, AC_F32, sf(2)).f == (double)expf(2.0f));
  CHECK(interp_sc_unary(IR_SQRT, AC_F32, sf(2)).f == (double)sqrtf(2.0f));
  CHECK(interp_sc_unary(IR_RSQRT, AC_F64, sf(64)).f == 0.125);
  CHECK(interp_sc_binary(IR_MIN, AC_F64, sf(NAN), sf(1)).f == 1.0);
  CHECK(interp_sc_binary(IR_MAX, AC_F32, sf(2), sf(NAN)).f == 2.0);
  CHECK(interp_sc_unary(IR_ROUND, AC_F64, sf(-2.5)).f == -3.0);
  CHECK(interp_sc_unary(IR_ROUND, AC_F32, sf(2.5)).f == 3.0);
  CHECK(isnan(interp_sc_binary(IR_REM, AC_F64, sf(1), sf(0)).f));
  CHECK(interp_sc_binary(IR_REM, AC_F64, sf(-7.5), sf(2)).f == -1.5);
  CHECK(interp_sc_fma(AC_F64, sf(0.1), sf(10), sf(-1)).f == fma(0.1, 10, -1));
  CHECK_EQ_INT(interp_sc_binary(IR_EQ, AC_F64, sf(NAN), sf(NAN)).u, 0);
  CHECK_EQ_INT(interp_sc_binary(IR_NE, AC_F64, sf(NAN), sf(NAN)).u, 1);
  CHECK_EQ_INT(interp_sc_binary(IR_GE, AC_F64, sf(1), sf(NAN)).u, 0);
  CHECK_EQ_INT(interp_sc_unary(IR_ISNAN, AC_F32, sf(NAN)).u, 1);
  CHECK_EQ_INT(interp_sc_unary(IR_ISFINITE, AC_F64, sf(INFINITY)).u, 0);
  CHECK(interp_sc_unary(IR_NEG, AC_F64, sf(0.0)).f == 0.0 &&
        signbit(interp_sc_unary(IR_NEG, AC_F64, sf(0.0)).f));
}

/* ---- expressions and operations on hand-built IR ---- */

UNIT_TEST(map_applies_a_lambda_to_each_element) {
  setup();
  ir_type i32 = S(AC_I32), v = A(AC_I32, 1);
  /* fn f(xs: i32[]) -> i32[] { map(|x| x * 2 + 1, xs) } */
  ir_ref body =
      nd(IR_ADD, i32, 2, nd(IR_MUL, i32, 2, var(0, i32), ilit(AC_I32, 2)), ilit(AC_I32, 1));
  fn("f", 1, &v, v, nd(IR_MAP, v, 2, lam(1, body), var(0, v)));
  /* fn g(xs: i32[], ys: i32[]) -> i32[] { map(|x, y| x + y, xs, ys) } at 2:3 */
  ir_type vv[2] = {v, v};
  fn("g", 2, vv, v, at(nd(IR_MAP, v, 3, plus(AC_I32), var(1, v), var(0, v)), 2, 3));
  CHECK_STR(run_module(m, "f", "[1,2,3]"), "[3, 5, 7]");
  CHECK_STR(run_module(m, "f", "[]"), "[]");
  CHECK_STR(run_module(m, "g", "[1,2,3] [10,20,30]"), "[11, 22, 33]");
  CHECK_STR(run_module(m, "g", "[1,2,3] [1,2]"),
            "2:3: error: map: arrays have different shapes: [3] and [2]");
  teardown();
}

UNIT_TEST(fold_reduces_rows_in_order) {
  setup();
  ir_type i32 = S(AC_I32), m2 = A(AC_I32, 2), v = A(AC_I32, 1), f64 = S(AC_F64);
  fn("rows", 1, &m2, v, nd(IR_FOLD, v, 3, plus(AC_I32), ilit(AC_I32, 0), var(0, m2)));
  fn("sum", 1, &v, i32, nd(IR_FOLD, i32, 3, plus(AC_I32), ilit(AC_I32, 5), var(0, v)));
  /* a non-associative f shows the order: ((z - a0) - a1) ... */
  ir_type fv = A(AC_F64, 1);
  ir_ref sub = lam(2, nd(IR_SUB, f64, 2, var(1, f64), var(0, f64)));
  fn("diff", 1, &fv, f64, nd(IR_FOLD, f64, 3, sub, flit(AC_F64, 100), var(0, fv)));
  CHECK_STR(run_module(m, "rows", "[[1,2,3],[4,5,6]]"), "[6, 15]");
  CHECK_STR(run_module(m, "rows", "[[],[]]"), "[0, 0]");
  CHECK_STR(run_module(m, "sum", "[1,2,3]"), "11");
  CHECK_STR(run_module(m, "sum", "[]"), "5");
  CHECK_STR(run_module(m, "diff", "[1,2,3]"), "94.0");
  teardown();
}

UNIT_TEST(scans_in_all_four_directions) {
  setup();
  ir_type v = A(AC_I32, 1), m2 = A(AC_I32, 2);
  ir_type t4f[4] = {v, v, v, v};
  ir_type t4 = ir_ty_tuple(ctx, 4, t4f);
  ir_ref body = nd(IR_TUPLE, t4, 4, nd(IR_SCAN, v, 3, plus(AC_I32), ilit(AC_I32, 0), var(0, v)),
                   nd(IR_SCAN_INCL, v, 2, plus(AC_I32), var(0, v)),
                   nd(IR_SCANR, v, 3, plus(AC_I32), ilit(AC_I32, 0), var(0, v)),
                   nd(IR_SCANR_INCL, v, 2, plus(AC_I32), var(0, v)));
  fn("prefix", 1, &v, t4, body);
  fn("rows", 1, &m2, m2, nd(IR_SCAN_INCL, m2, 2, plus(AC_I32), var(0, m2)));
  /* scanr passes (element, accumulator): a - b shows the order */
  ir_type i32 = S(AC_I32);
  ir_ref sub = lam(2, nd(IR_SUB, i32, 2, var(1, i32), var(0, i32)));
  fn("rsub", 1, &v, v, nd(IR_SCANR, v, 3, sub, ilit(AC_I32, 0), var(0, v)));
  CHECK_STR(run_module(m, "prefix", "[1,2,3]"), "[0, 1, 3]\n[1, 3, 6]\n[5, 3, 0]\n[6, 5, 3]");
  CHECK_STR(run_module(m, "prefix", "[]"), "[]\n[]\n[]\n[]");
  CHECK_STR(run_module(m, "rows", "[[1,1,1],[2,2,2]]"), "[[1, 2, 3], [2, 4, 6]]");
  /* out[2] = 0, out[1] = a[2] - 0 = 3, out[0] = a[1] - 3 = -1 */
  CHECK_STR(run_module(m, "rsub", "[1,2,3]"), "[-1, 3, 0]");
  teardown();
}

UNIT_TEST(tuples_of_arrays_are_arrays_of_tuples) {
  setup();
  ir_type i32 = S(AC_I32), v = A(AC_I32, 1), p = T2(i32, i32), pv = T2(v, v);
  /* fold(|p, q| (p.0 + q.0, max(p.1, q.1)), (0, MIN), (xs, ys)) */
  ir_ref f = lam(2, nd(IR_TUPLE, p, 2,
                       nd(IR_ADD, i32, 2, attr(nd(IR_PROJ, i32, 1, var(1, p)), 0),
                          attr(nd(IR_PROJ, i32, 1, var(0, p)), 0)),
                       nd(IR_MAX, i32, 2, attr(nd(IR_PROJ, i32, 1, var(1, p)), 1),
                          attr(nd(IR_PROJ, i32, 1, var(0, p)), 1))));
  ir_ref z = nd(IR_TUPLE, p, 2, ilit(AC_I32, 0), ilit(AC_I32, INT32_MIN));
  ir_type vv[2] = {v, v};
  fn("sum_max", 2, vv, p, nd(IR_FOLD, p, 3, f, z, nd(IR_TUPLE, pv, 2, var(1, v), var(0, v))));
  /* map(|q| (q.1, q.0), pts) on a tuple-of-arrays parameter */
  ir_ref swap = lam(1, nd(IR_TUPLE, p, 2, attr(nd(IR_PROJ, i32, 1, var(0, p)), 1),
                          attr(nd(IR_PROJ, i32, 1, var(0, p)), 0)));
  fn("swap", 1, &pv, pv, at(nd(IR_MAP, pv, 2, swap, var(0, pv)), 3, 4));
  CHECK_STR(run_module(m, "sum_max", "[1,2,3] [7,-1,9]"), "6\n9");
  CHECK_STR(run_module(m, "sum_max", "[] []"), "0\n-2147483648");
  CHECK_STR(run_module(m, "sum_max", "[1] [1,2]"),
            "1:1: error: fold: arrays have different shapes: [1] and [2]");
  CHECK_STR(run_module(m, "swap", "[1,2] [3,4]"), "[3, 4]\n[1, 2]");
  CHECK_STR(run_module(m, "swap", "[1,2] [3]"),
            "3:4: error: map: arrays have different shapes: [2] and [1]");
  teardown();
}

UNIT_TEST(indexing_checks_bounds_and_logic_short_circuits) {
  setup();
  ir_type i32 = S(AC_I32), i64 = S(AC_I64), v = A(AC_I32, 1), b = S(AC_BOOL);
  ir_type ps[2] = {v, i64};
  /* positive_at(xs, i) = i < len(xs) && xs[i] > 0 */
  ir_ref cond = nd(IR_LT, b, 2, var(0, i64), nd(IR_LEN, i64, 1, var(1, v)));
  ir_ref get = at(nd(IR_INDEX, i32, 2, var(1, v), var(0, i64)), 2, 31);
  fn("positive_at", 2, ps, b, nd(IR_LAND, b, 2, cond, nd(IR_GT, b, 2, get, ilit(AC_I32, 0))));
  ir_ref get2 = at(nd(IR_INDEX, i32, 2, var(1, v), var(0, i64)), 2, 31);
  fn("get", 2, ps, i32, get2);
  CHECK_STR(run_module(m, "positive_at", "[5,6,7] 3"), "false");
  CHECK_STR(run_module(m, "positive_at", "[5,-6,7] 1"), "false");
  CHECK_STR(run_module(m, "positive_at", "[5,6,7] 2"), "true");
  CHECK_STR(run_module(m, "get", "[5,6,7] 3"),
            "2:31: error: index 3 out of bounds for dimension 0 of extent 3");
  CHECK_STR(run_module(m, "get", "[5,6,7] -1"),
            "2:31: error: index -1 out of bounds for dimension 0 of extent 3");
  teardown();
}

UNIT_TEST(scatter_refuses_duplicates_and_bad_indices) {
  setup();
  ir_type v = A(AC_I32, 1), iv = A(AC_I64, 1);
  ir_type ps[3] = {iv, v, v};
  fn("sc", 3, ps, v, at(nd(IR_SCATTER, v, 3, var(2, iv), var(1, v), var(0, v)), 2, 3));
  CHECK_STR(run_module(m, "sc", "[0,2] [7,9] [1,1,1,1]"), "[7, 1, 9, 1]");
  CHECK_STR(run_module(m, "sc", "[0,2] [7,9] [1,1]"),
            "2:3: error: scatter: index 2 out of range for extent 2");
  CHECK_STR(run_module(m, "sc", "[1,1] [7,9] [1,1]"), "2:3: error: scatter: index 1 written twice");
  CHECK_STR(run_module(m, "sc", "[1] [7,9] [1,1]"),
            "2:3: error: scatter: arrays have different shapes: [1] and [2]");
  teardown();
}

UNIT_TEST(stencil_boundaries) {
  setup();
  ir_type i32 = S(AC_I32), v = A(AC_I32, 1), w = ir_ty_window(ctx, i32, 1);
  ir_type t4f[4] = {v, v, v, v};
  ir_type t4 = ir_ty_tuple(ctx, 4, t4f);
  ir_ref st[4];
  for (int k = 0; k < 4; k++) {
    ir_ref read = nd(IR_INDEX, i32, 2, var(0, w), ilit(AC_I64, k == 3 ? -3 : -1));
    if (k == 3) /* a constant boundary: kids [lambda, array, value] */
      st[k] =
          attr(nd(IR_STENCIL, v, 3, lam(1, read), var(0, v), ilit(AC_I32, 0)), AC_BOUNDARY_CONST);
    else
      st[k] = attr(nd(IR_STENCIL, v, 2, lam(1, read), var(0, v)), k);
  }
  fn("left", 1, &v, t4, nd(IR_TUPLE, t4, 4, st[0], st[1], st[2], st[3]));
  ir_ref far = nd(IR_INDEX, i32, 2, var(0, w), ilit(AC_I64, -3));
  fn("far", 1, &v, v, attr(nd(IR_STENCIL, v, 2, lam(1, far), var(0, v)), AC_BOUNDARY_MIRROR));
  ir_ref huge = nd(IR_INDEX, i32, 2, var(0, w), ilit(AC_I64, INT64_MIN));
  fn("huge", 1, &v, v, attr(nd(IR_STENCIL, v, 2, lam(1, huge), var(0, v)), AC_BOUNDARY_WRAP));
  CHECK_STR(run_module(m, "left", "[10,20,30,40]"),
            "[10, 10, 20, 30]\n[20, 10, 20, 30]\n[40, 10, 20, 30]\n[0, 0, 0, 10]");
  CHECK_STR(run_module(m, "left", "[10]"), "[10]\n[10]\n[10]\n[0]");
  CHECK_STR(run_module(m, "left", "[]"), "[]\n[]\n[]\n[]");
  CHECK_STR(run_module(m, "far", "[5,6,7]"), "[6, 7, 6]");
  CHECK_STR(run_module(m, "far", "[5,6]"), "[6, 5]");
  /* -2^63 mod 3 == 1: index 0 reads 1, 1 reads 2, 2 reads 0 */
  CHECK_STR(run_module(m, "huge", "[5,6,7]"), "[6, 7, 5]");
  teardown();
}

/* rec f (i in 0..n) -> i64 { if i < 2 { i } else { f[i-1] + f[i-2] } }
 * with schedule a = sched (the verifier would choose 1). */
static void def_fib(const char *name, int64_t sched, int64_t lo_off) {
  ir_type i64 = S(AC_I64), v = A(AC_I64, 1), b = S(AC_BOOL);
  ir_ref rd1 =
      at(nd(IR_INDEX, i64, 2, var(1, v), nd(IR_SUB, i64, 2, var(0, i64), ilit(AC_I64, 1))), 3, 30);
  ir_ref rd2 = nd(IR_INDEX, i64, 2, var(1, v), nd(IR_SUB, i64, 2, var(0, i64), ilit(AC_I64, 2)));
  ir_ref body = nd(IR_IF, i64, 3, nd(IR_LT, b, 2, var(0, i64), ilit(AC_I64, 2 + lo_off)),
                   var(0, i64), nd(IR_ADD, i64, 2, rd1, rd2));
  ir_ref rec = attr(nd(IR_REC, v, 3, ilit(AC_I64, lo_off), var(0, i64), body), 1);
  ir_node_get(m, rec)->lit.u = 1; /* exclusive */
  ir_node_get(m, rec)->aux = ir_ints_push(m, 1, &sched);
  ir_sym names[2] = {ir_sym_intern(ctx, "f", 1), ir_sym_intern(ctx, "i", 1)};
  ir_node_get(m, rec)->names = ir_syms_push(m, 2, names);
  fn(name, 1, &i64, v, rec);
}

UNIT_TEST(rec_follows_its_schedule_and_checks_reads) {
  setup();
  def_fib("fib", 1, 0);
  def_fib("unscheduled", 0, 0); /* one wavefront: every read is too early */
  def_fib("backwards", -1, 0);  /* points in decreasing order */
  def_fib("shifted", 1, -1);    /* logical indices start at -1 */
  CHECK_STR(run_module(m, "fib", "10"), "[0, 1, 1, 2, 3, 5, 8, 13, 21, 34]");
  CHECK_STR(run_module(m, "fib", "0"), "[]");
  CHECK_STR(run_module(m, "fib", "-3"), "1:1: error: negative extent -3");
  CHECK_STR(run_module(m, "unscheduled", "3"),
            "3:30: error: rec: read of f[1] before it is computed");
  CHECK_STR(run_module(m, "backwards", "3"),
            "3:30: error: rec: read of f[1] before it is computed");
  CHECK_STR(run_module(m, "shifted", "3"), "[-1, 0, -1, -1]");
  teardown();
}

UNIT_TEST(rec_in_two_dimensions_reads_outside_the_domain) {
  setup();
  /* rec d (i in 0..=n, j in 0..=n) -> i64 { if j == 0 { 1 } else { d[i - 1, j] + d[i, j - 1] } }
   * i == 0 reads d[-1, j]: outside. Schedule (1, 1). */
  ir_type i64 = S(AC_I64), mm = A(AC_I64, 2), b = S(AC_BOOL);
  ir_ref up = at(nd(IR_INDEX, i64, 3, var(2, mm), nd(IR_SUB, i64, 2, var(1, i64), ilit(AC_I64, 1)),
                    var(0, i64)),
                 4, 5);
  ir_ref left = nd(IR_INDEX, i64, 3, var(2, mm), var(1, i64),
                   nd(IR_SUB, i64, 2, var(0, i64), ilit(AC_I64, 1)));
  ir_ref body = nd(IR_IF, i64, 3, nd(IR_EQ, b, 2, var(0, i64), ilit(AC_I64, 0)), ilit(AC_I64, 1),
                   nd(IR_ADD, i64, 2, up, left));
  ir_ref rec =
      attr(nd(IR_REC, mm, 5, ilit(AC_I64, 0), var(0, i64), ilit(AC_I64, 0), var(0, i64), body), 2);
  int64_t sched[2] = {1, 1};
  ir_node_get(m, rec)->aux = ir_ints_push(m, 2, sched);
  ir_sym names[3] = {ir_sym_intern(ctx, "d", 1), ir_sym_intern(ctx, "i", 1),
                     ir_sym_intern(ctx, "j", 1)};
  ir_node_get(m, rec)->names = ir_syms_push(m, 3, names);
  fn("grid", 1, &i64, mm, rec);
  CHECK_STR(run_module(m, "grid", "0"), "[[1]]");
  CHECK_STR(run_module(m, "grid", "1"), "4:5: error: rec: read of d[-1, 1] outside the domain");
  teardown();
}

UNIT_TEST(iterate_keeps_memory_bounded) {
  counting c = {0, 0, -1};
  ctx = ac_context_create_with_allocator(counting_realloc, &c);
  m = ac_module_create(ctx, "t.ac");
  ir_type i32 = S(AC_I32), v = A(AC_I32, 1);
  /* iterate(n, |a| map(|x| x + 1, a), xs) */
  ir_ref inc = lam(1, nd(IR_ADD, i32, 2, var(0, i32), ilit(AC_I32, 1)));
  ir_ref step = lam(1, nd(IR_MAP, v, 2, inc, var(0, v)));
  ir_type ps[2] = {i32, v};
  fn("it", 2, ps, v, nd(IR_ITERATE, v, 3, var(1, i32), step, var(0, v)));
  size_t base = c.live;
  CHECK_STR(run_module(m, "it", "3 [1,2,3]"), "[4, 5, 6]");
  CHECK_STR(run_module(m, "it", "-5 [1,2,3]"), "[1, 2, 3]");
  c.peak = c.live;
  CHECK_STR(run_module(m, "it", "20000 [0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]"),
            "[20000, 20000, 20000, 20000, 20000, 20000, 20000, 20000, 20000, 20000, 20000, 20000, "
            "20000, 20000, 20000, 20000, 20000, 20000, 20000, 20000, 20000, 20000, 20000, 20000, "
            "20000, 20000, 20000, 20000]");
  CHECK(c.peak - base < 16384); /* a few arrays and the stacks, not 20000 arrays */
  CHECK_EQ_INT(c.live, base);   /* nothing leaked */
  teardown();
}

UNIT_TEST(deep_nesting_is_an_error_not_a_crash) {
  setup();
  ir_type i32 = S(AC_I32);
  ir_ref e = var(0, i32);
  for (int k = 0; k < 100000; k++)
    e = nd(IR_NEG, i32, 1, e);
  fn("deep", 1, &i32, i32, e);
  ir_ref e2 = var(0, i32);
  for (int k = 0; k < 1000; k++)
    e2 = nd(IR_NEG, i32, 1, e2);
  fn("ok", 1, &i32, i32, e2);
  CHECK_STR(run_module(m, "deep", "1"), "1:1: error: evaluation nested too deeply");
  CHECK_STR(run_module(m, "ok", "7"), "7");
  teardown();
}

UNIT_TEST(calls_bind_parameters_in_order) {
  setup();
  ir_type i32 = S(AC_I32), ps[3] = {i32, i32, i32};
  /* fn sub3(a, b, c) = a - b - c; fn main(x) = sub3(x, 1, 2) via a let */
  fn("sub3", 3, ps, i32,
     nd(IR_SUB, i32, 2, nd(IR_SUB, i32, 2, var(2, i32), var(1, i32)), var(0, i32)));
  ir_ref call = attr(nd(IR_CALL, i32, 3, var(0, i32), ilit(AC_I32, 1), ilit(AC_I32, 2)), 0);
  ir_ref let = nd(IR_LET, i32, 2, call, nd(IR_MUL, i32, 2, var(0, i32), var(1, i32)));
  ir_sym nm = ir_sym_intern(ctx, "y", 1);
  ir_node_get(m, let)->names = ir_syms_push(m, 1, &nm);
  fn("main", 1, &i32, i32, let);
  CHECK_STR(run_module(m, "sub3", "10 3 2"), "5");
  CHECK_STR(run_module(m, "main", "10"), "70");
  teardown();
}

UNIT_TEST(function_api_checks_arguments) {
  setup();
  ir_type v = A(AC_F32, 1), pt = T2(S(AC_I64), A(AC_I32, 2));
  ir_type ps[2] = {v, pt};
  fn("f", 2, ps, v, var(1, v));
  ir_type i32 = S(AC_I32);
  fn("nobody", 1, &i32, i32, IR_NONE);
  fn("caller", 1, &i32, i32, attr(nd(IR_CALL, i32, 1, var(0, i32)), 1));
  ac_function *f = NULL;
  ac_error *err = NULL;
  CHECK_EQ_INT(ac_function_create(m, "f", AC_BACKEND_INTERP, &f, &err), AC_OK);
  CHECK_EQ_INT(ac_function_backend(f), AC_BACKEND_INTERP);
  CHECK_EQ_INT(ac_function_num_args(f), 3);
  CHECK_EQ_INT(ac_function_num_results(f), 1);
  CHECK_EQ_INT(ac_function_num_kernels(f), 0);
  ac_scalar t;
  unsigned rank;
  ac_function_arg_info(f, 2, &t, &rank);
  CHECK_EQ_INT(t, AC_I32);
  CHECK_EQ_INT(rank, 2);
  int64_t ext = 2;
  ac_datum args[3] = {
      {AC_DATUM_ARRAY, AC_F32, {0}, ac_array_create(ctx, AC_F32, 1, &ext, NULL, NULL)},
      {AC_DATUM_SCALAR, AC_I64, {.i = 1}, NULL},
      {AC_DATUM_ARRAY, AC_I32, {0}, ac_array_create(ctx, AC_I32, 1, &ext, NULL, NULL)}};
  ac_datum res[1];
  CHECK_EQ_INT(ac_function_call(f, args, 3, res, 1, &err), AC_ERR_INVALID);
  CHECK_STR(ac_error_message(err), "argument 3 (p1.1): expected i32[,], got i32[]");
  ac_error_destroy(err);
  CHECK_EQ_INT(ac_function_call(f, args, 2, res, 1, &err), AC_ERR_INVALID);
  CHECK_STR(ac_error_message(err), "expected 3 arguments, got 2");
  ac_error_destroy(err);
  args[1].type = AC_F32;
  CHECK_EQ_INT(ac_function_call(f, args, 3, res, 1, &err), AC_ERR_INVALID);
  CHECK_STR(ac_error_message(err), "argument 2 (p1.0): expected i64, got f32");
  ac_error_destroy(err);
  ac_datum_release(&args[0]);
  ac_datum_release(&args[2]);
  ac_function_destroy(f);

  /* the GPU backend: "no GPU: ..." on a machine without one */
  if (ac_function_create(m, "f", AC_BACKEND_GPU, &f, &err) == AC_OK) {
    CHECK_EQ_INT(ac_function_backend(f), AC_BACKEND_GPU);
    ac_function_destroy(f);
  } else {
    CHECK(err && strncmp(ac_error_message(err), "no GPU: ", 8) == 0);
    ac_error_destroy(err);
  }
  f = NULL;
  CHECK_EQ_INT(ac_function_create(m, "g", AC_BACKEND_INTERP, &f, &err), AC_ERR_INVALID);
  CHECK_STR(ac_error_message(err), "no function named 'g'");
  ac_error_destroy(err);
  CHECK_EQ_INT(ac_function_create(m, "nobody", AC_BACKEND_INTERP, &f, &err), AC_ERR_INVALID);
  CHECK_STR(ac_error_message(err), "function 'nobody' has no body");
  ac_error_destroy(err);
  CHECK_EQ_INT(ac_function_create(m, "caller", AC_BACKEND_INTERP, &f, &err), AC_ERR_INVALID);
  CHECK_STR(ac_error_message(err), "function 'caller' calls 'nobody', which has no body");
  ac_error_destroy(err);
  CHECK(f == NULL);

  ac_backend be;
  CHECK(ac_backend_from_name("simt-emu", &be) && be == AC_BACKEND_SIMT_EMU);
  CHECK(!ac_backend_from_name("tpu", &be));
  CHECK_STR(ac_backend_name(AC_BACKEND_CPU), "cpu");
  CHECK(ac_backend_name((ac_backend)9) == NULL);
  teardown();
}

UNIT_TEST(array_literals_and_generate) {
  setup();
  ir_type i64 = S(AC_I64), m2 = A(AC_I64, 2), b = S(AC_BOOL), bv = A(AC_BOOL, 1);
  ir_type p = T2(i64, b), pv = T2(A(AC_I64, 1), bv);
  /* [(1, true), (2, false)] */
  ir_ref lit = attr(nd(IR_ARRLIT, pv, 2, nd(IR_TUPLE, p, 2, ilit(AC_I64, 1), ilit(AC_BOOL, 1)),
                       nd(IR_TUPLE, p, 2, ilit(AC_I64, 2), ilit(AC_BOOL, 0))),
                    1);
  int64_t ext = 2;
  ir_node_get(m, lit)->aux = ir_ints_push(m, 1, &ext);
  fn("lit", 0, NULL, pv, lit);
  /* generate((2, n), |i, j| 10 * i + j) */
  ir_ref shape = nd(IR_TUPLE, T2(i64, i64), 2, ilit(AC_I64, 2), var(0, i64));
  ir_ref g =
      lam(2, nd(IR_ADD, i64, 2, nd(IR_MUL, i64, 2, ilit(AC_I64, 10), var(1, i64)), var(0, i64)));
  fn("gen", 1, &i64, m2, at(nd(IR_GENERATE, m2, 2, shape, g), 5, 6));
  CHECK_STR(run_module(m, "lit", ""), "[1, 2]\n[true, false]");
  CHECK_STR(run_module(m, "gen", "3"), "[[0, 1, 2], [10, 11, 12]]");
  CHECK_STR(run_module(m, "gen", "0"), "[[], []]");
  CHECK_STR(run_module(m, "gen", "-1"), "5:6: error: negative extent -1");
  CHECK_STR(run_module(m, "gen", "4611686018427387904"), "5:6: error: array too large");
  teardown();
}

UNIT_TEST(allocation_failures_are_reported_and_leak_nothing) {
  /* Fail the k-th allocation of a call, for every k until the call passes. */
  counting c = {0, 0, -1};
  ctx = ac_context_create_with_allocator(counting_realloc, &c);
  m = ac_module_create(ctx, "t.ac");
  ir_type i32 = S(AC_I32), v = A(AC_I32, 1), m2 = A(AC_I32, 2);
  ir_ref inc = lam(1, nd(IR_ADD, i32, 2, var(0, i32), ilit(AC_I32, 1)));
  ir_ref mapped = nd(IR_MAP, v, 2, inc, var(0, v));
  ir_ref rep = nd(IR_REPLICATE, m2, 2, ilit(AC_I64, 3), mapped);
  fn("f", 1, &v, v, nd(IR_FOLD, v, 3, plus(AC_I32), ilit(AC_I32, 0), nd(IR_TRANSPOSE, m2, 1, rep)));
  int64_t ext = 4;
  ac_array *xs = ac_array_create(ctx, AC_I32, 1, &ext, (int32_t[]){1, 2, 3, 4}, NULL);
  ac_function *f = NULL;
  CHECK_EQ_INT(ac_function_create(m, "f", AC_BACKEND_INTERP, &f, NULL), AC_OK);
  size_t base = c.live;
  bool passed = false;
  for (long k = 0; k < 200 && !passed; k++) {
    ac_datum arg = {AC_DATUM_ARRAY, AC_I32, {0}, xs}, res;
    ac_error *err = NULL;
    c.fail_after = k;
    ac_status st = ac_function_call(f, &arg, 1, &res, 1, &err);
    c.fail_after = -1;
    if (st == AC_OK) {
      const int32_t *d = ac_array_data(res.array);
      CHECK_EQ_INT(d[0], 6);
      CHECK_EQ_INT(d[3], 15);
      ac_datum_release(&res);
      passed = true;
    } else {
      CHECK_EQ_INT(st, AC_ERR_NOMEM);
      ac_error_destroy(err);
    }
    CHECK_EQ_INT(c.live, base);
  }
  CHECK(passed);
  ac_function_destroy(f);
  ac_array_release(xs);
  teardown();
}

UNIT_MAIN(integers_wrap_and_division_is_total, shift_amounts_are_masked,
          float_to_int_saturates_and_nan_is_zero, conversions_between_kinds,
          floats_follow_ieee_and_the_c_library, map_applies_a_lambda_to_each_element,
          fold_reduces_rows_in_order, scans_in_all_four_directions,
          tuples_of_arrays_are_arrays_of_tuples, indexing_checks_bounds_and_logic_short_circuits,
          scatter_refuses_duplicates_and_bad_indices, stencil_boundaries,
          rec_follows_its_schedule_and_checks_reads, rec_in_two_dimensions_reads_outside_the_domain,
          iterate_keeps_memory_bounded, deep_nesting_is_an_error_not_a_crash,
          calls_bind_parameters_in_order, function_api_checks_arguments,
          array_literals_and_generate, allocation_failures_are_reported_and_leak_nothing)
