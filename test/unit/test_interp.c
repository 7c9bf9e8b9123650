/* Interpreter tests through program text: scalar semantics (docs/language.md
 * §6), expressions, calls, loops, runtime-error positions, and concurrent
 * calls. Each test parses a program, calls a function and compares the
 * printed results (test_interp_util.h). Array operations are in
 * test_interp_ops.c; hand-built IR in test_interp_ir.c. */
#include "test_interp_util.h"

#include <threads.h>

UNIT_TEST(integer_arithmetic_wraps_and_never_fails) {
  const char *src = "fn divs(a: i32, b: i32) -> (i32, i32, i32, i32, i32) {\n"
                    "  (a + b, a - b, a * b, a / b, a % b)\n"
                    "}\n"
                    "fn wrap8(x: i8, y: u8) -> (i8, i8, i8, u8, u8) {\n"
                    "  (x + 1, -x, abs(x), y - 2, y * 2)\n"
                    "}\n"
                    "fn big(x: i64, y: u64) -> (i64, i64, u64, u64) {\n"
                    "  (x / -1, x % -1, y / 0, y % 0)\n"
                    "}\n";
  CHECK_STR(run(src, "divs", "-7 2"), "-5\n-9\n-14\n-3\n-1");
  CHECK_STR(run(src, "divs", "7 0"), "7\n7\n0\n0\n7");
  CHECK_STR(run(src, "divs", "-2147483648 -1"),
            "2147483647\n-2147483647\n-2147483648\n-2147483648\n0");
  CHECK_STR(run(src, "wrap8", "-128 1"), "-127\n-128\n-128\n255\n2");
  CHECK_STR(run(src, "wrap8", "127 200"), "-128\n-127\n127\n198\n144");
  CHECK_STR(run(src, "big", "-9223372036854775808 18446744073709551615"),
            "-9223372036854775808\n0\n0\n18446744073709551615");
}

UNIT_TEST(shifts_and_bit_operations) {
  const char *src = "fn shifts(x: i32, n: i32, u: u32) -> (i32, i32, u32) {\n"
                    "  (x << n, x >> n, u >> u32(n))\n"
                    "}\n"
                    "fn bits(a: u8, b: u8) -> (u8, u8, u8, u8, bool) {\n"
                    "  (a & b, a | b, a ^ b, ~a, !(a == b))\n"
                    "}\n";
  CHECK_STR(run(src, "shifts", "-16 2 4294967295"), "-64\n-4\n1073741823");
  CHECK_STR(run(src, "shifts", "1 33 8"), "2\n0\n4");
  CHECK_STR(run(src, "shifts", "1 -1 4294967295"), "-2147483648\n0\n1");
  CHECK_STR(run(src, "bits", "12 10"), "8\n14\n6\n243\ntrue");
}

UNIT_TEST(floats_are_ieee) {
  const char *src = "fn sums() -> (f64, f32) {\n"
                    "  (0.1 + 0.2, 0.1f32 + 0.2f32)\n"
                    "}\n"
                    "fn fdiv(a: f64, b: f64) -> (f64, f64, bool, bool, f64) {\n"
                    "  (a / b, a % b, a / b == a / b, a / b != a / b, min(a / b, 1.0))\n"
                    "}\n"
                    "fn compare(a: f64, b: f64) -> (bool, bool, bool, bool, bool, bool) {\n"
                    "  (a == b, a != b, a < b, a <= b, a > b, a >= b)\n"
                    "}\n";
  CHECK_STR(run(src, "sums", ""), "0.30000000000000004\n0.3");
  CHECK_STR(run(src, "fdiv", "-7.5 2"), "-3.75\n-1.5\ntrue\nfalse\n-3.75");
  CHECK_STR(run(src, "fdiv", "0 0"), "nan\nnan\nfalse\ntrue\n1.0");
  CHECK_STR(run(src, "fdiv", "-1 0"), "-inf\nnan\ntrue\nfalse\n-inf");
  CHECK_STR(run(src, "compare", "2 1"), "false\ntrue\nfalse\nfalse\ntrue\ntrue");
  CHECK_STR(run(src, "compare", "1 nan"), "false\ntrue\nfalse\nfalse\nfalse\nfalse");
}

UNIT_TEST(conversions_saturate_and_round_once) {
  const char *src = "fn from_f64(x: f64) -> (i32, u8, i64, bool) {\n"
                    "  (i32(x), u8(x), i64(x), bool(x))\n"
                    "}\n"
                    "fn from_i32(x: i32) -> (i8, u8, i64, u64, f32) {\n"
                    "  (i8(x), u8(x), i64(x), u64(x), f32(x))\n"
                    "}\n"
                    "fn round_trip(x: i32) -> i32 {\n"
                    "  i32(f32(x))\n"
                    "}\n"
                    "fn narrow(x: f64, b: bool) -> (f32, i32, f64, bool) {\n"
                    "  (f32(x), i32(b), f64(b), bool(-0.0))\n"
                    "}\n";
  CHECK_STR(run(src, "from_f64", "300.7"), "300\n255\n300\ntrue");
  CHECK_STR(run(src, "from_f64", "-2.5"), "-2\n0\n-2\ntrue");
  CHECK_STR(run(src, "from_f64", "nan"), "0\n0\n0\ntrue");
  CHECK_STR(run(src, "from_f64", "1e300"), "2147483647\n255\n9223372036854775807\ntrue");
  CHECK_STR(run(src, "from_f64", "-inf"), "-2147483648\n0\n-9223372036854775808\ntrue");
  CHECK_STR(run(src, "from_i32", "299"), "43\n43\n299\n299\n299.0");
  CHECK_STR(run(src, "from_i32", "-1"), "-1\n255\n-1\n18446744073709551615\n-1.0");
  CHECK_STR(run(src, "round_trip", "16777217"), "16777216");
  CHECK_STR(run(src, "narrow", "1e39 true"), "inf\n1\n1.0\nfalse");
  CHECK_STR(run(src, "narrow", "0.1 false"), "0.1\n0\n0.0\nfalse");
}

UNIT_TEST(math_functions_use_the_c_library) {
  const char *src =
      "fn minmax(a: i32, b: i32, x: f64) -> (i32, i32, i32, f64, f64) {\n"
      "  (abs(a), min(a, b), max(a, b), min(x, 1.0), max(x, 1.0))\n"
      "}\n"
      "fn roots(x: f64) -> (f64, f64, f64, f64) { (sqrt(x), rsqrt(x), cbrt(x), sqrt(-x)) }\n"
      "fn exps(x: f64) -> (f64, f64, f64, f64, f64, f64, f64) {\n"
      "  (exp(x), exp2(x), expm1(x), log(x), log2(x), log10(x), log1p(x))\n"
      "}\n"
      "fn trig(x: f64) -> (f64, f64, f64, f64, f64, f64) {\n"
      "  (sin(x), cos(x), tan(x), asin(x), acos(x), atan(x))\n"
      "}\n"
      "fn hyperbolic(x: f64) -> (f64, f64, f64, f64, f64) {\n"
      "  (sinh(x), cosh(x), tanh(x), erf(x), erfc(x))\n"
      "}\n"
      "fn binary_math(x: f64, y: f64) -> (f64, f64, f64, f64) {\n"
      "  (pow(x, y), atan2(y, x), hypot(x, y), copysign(x, -y))\n"
      "}\n"
      "fn fused(x: f64, y: f64, z: f64) -> (f64, f64) { (fma(x, y, z), x * y + z) }\n"
      "fn rounding(x: f64) -> (f64, f64, f64, f64) { (floor(x), ceil(x), round(x), trunc(x)) }\n"
      "fn classify(x: f32) -> (bool, bool, bool) { (isnan(x), isinf(x), isfinite(x)) }\n"
      "fn single(x: f32) -> (f32, f32, f32, f32) { (sqrt(x), exp(x), sin(x), pow(x, 0.5)) }\n";
  CHECK_STR(run(src, "minmax", "-3 2 nan"), "3\n-3\n2\n1.0\n1.0");
  CHECK_STR(run(src, "roots", "64"), "8.0\n0.125\n4.0\nnan");
  CHECK_STR(run(src, "exps", "8"), "2980.9579870417283\n256.0\n2979.9579870417283\n"
                                   "2.0794415416798357\n3.0\n0.9030899869919435\n"
                                   "2.1972245773362196");
  CHECK_STR(run(src, "trig", "0.5"), "0.479425538604203\n0.8775825618903728\n"
                                     "0.5463024898437905\n0.5235987755982989\n"
                                     "1.0471975511965979\n0.4636476090008061");
  CHECK_STR(run(src, "hyperbolic", "0.5"), "0.5210953054937474\n1.1276259652063807\n"
                                           "0.46211715726000974\n0.5204998778130465\n"
                                           "0.4795001221869535");
  CHECK_STR(run(src, "binary_math", "3 4"), "81.0\n0.9272952180016122\n5.0\n-3.0");
  CHECK_STR(run(src, "fused", "0.1 10 -1"), "5.551115123125783e-17\n0.0");
  CHECK_STR(run(src, "rounding", "-2.5"), "-3.0\n-2.0\n-3.0\n-2.0");
  CHECK_STR(run(src, "rounding", "2.5"), "2.0\n3.0\n3.0\n2.0");
  CHECK_STR(run(src, "classify", "-inf"), "false\ntrue\nfalse");
  CHECK_STR(run(src, "classify", "nan"), "true\nfalse\nfalse");
  /* f32 math is computed in float: sqrtf(2), expf(2), sinf(2), powf(2, 0.5) */
  CHECK_STR(run(src, "single", "2"), "1.4142135\n7.389056\n0.9092974\n1.4142135");
}

UNIT_TEST(only_the_needed_operands_are_evaluated) {
  const char *src = "fn safe_get(xs: i32[], i: i64) -> i32 {\n"
                    "  if i >= 0 && i < len(xs) { xs[i] } else { -1 }\n"
                    "}\n"
                    "fn either(xs: i32[], i: i64) -> bool {\n"
                    "  i >= len(xs) || xs[i] > 0\n"
                    "}\n";
  CHECK_STR(run(src, "safe_get", "[5,6,7] 7"), "-1");
  CHECK_STR(run(src, "safe_get", "[5,6,7] -1"), "-1");
  CHECK_STR(run(src, "safe_get", "[5,6,7] 2"), "7");
  CHECK_STR(run(src, "either", "[5,6,7] 3"), "true");
  CHECK_STR(run(src, "either", "[5,-6,7] 1"), "false");
}

UNIT_TEST(lets_tuples_and_projections) {
  const char *src = "fn f(p: (i32, (f64, bool)), q: i32) -> ((f64, bool), i32, bool) {\n"
                    "  let (a, b) = p;\n"
                    "  let q = q * 2;\n"
                    "  let t = (b, a + q);\n"
                    "  (t.0, t.1, p.1.1)\n"
                    "}\n"
                    "fn unit() -> () { () }\n"
                    "fn arrays(xs: i32[], ys: f64[]) -> (f64[], i32[]) {\n"
                    "  let p = (xs, ys);\n"
                    "  let (a, b) = p;\n"
                    "  (b, p.0)\n"
                    "}\n";
  CHECK_STR(run(src, "f", "1 2.5 true 10"), "2.5\ntrue\n21\ntrue");
  CHECK_STR(run(src, "unit", ""), "");
  CHECK_STR(run(src, "arrays", "[1,2] [0.5]"), "[0.5]\n[1, 2]");
}

UNIT_TEST(calls_and_scalar_loops) {
  const char *src = "fn sq(x: f64) -> f64 { x * x }\n"
                    "fn sum_squares(xs: f64[]) -> f64 {\n"
                    "  let (acc, i) = loop (acc = 0.0, i = 0i64) while i < len(xs) {\n"
                    "    (acc + sq(xs[i]), i + 1)\n"
                    "  };\n"
                    "  acc\n"
                    "}\n"
                    "fn collatz(xs: i64[]) -> i32[] {\n"
                    "  map(|x| {\n"
                    "    let (v, n) = loop (v = x, n = 0) while v != 1 {\n"
                    "      (if v % 2 == 0 { v / 2 } else { 3 * v + 1 }, n + 1)\n"
                    "    };\n"
                    "    n\n"
                    "  }, xs)\n"
                    "}\n"
                    "fn count(n: i32) -> i32 { loop (i = 0) while i < n { i + 1 } }\n"
                    "fn grow(xs: i32[], n: i64) -> i32[] {\n"
                    "  loop (a = xs) while len(a) < n { map(|x| i32(x), iota(len(a) + 1)) }\n"
                    "}\n";
  CHECK_STR(run(src, "sum_squares", "[1,2,3]"), "14.0");
  CHECK_STR(run(src, "sum_squares", "[]"), "0.0");
  CHECK_STR(run(src, "collatz", "[1,6,7]"), "[0, 8, 16]");
  CHECK_STR(run(src, "count", "5"), "5");
  CHECK_STR(run(src, "count", "-5"), "0");
  CHECK_STR(run(src, "grow", "[7] 3"), "[0, 1, 2]");
  CHECK_STR(run(src, "grow", "[7] 0"), "[7]");
}

UNIT_TEST(runtime_errors_name_the_operation) {
  const char *src = "fn queries(m: i32[,], xs: u8[]) -> (i64, (i64, i64), i64, i32, u8) {\n"
                    "  (len(m), shape(m), len(xs), m[1, 0], xs[len(xs) - 1])\n"
                    "}\n"
                    "fn count_to(n: i64) -> i64[] {\n"
                    "  iota(n)\n"
                    "}\n"
                    "fn at_u(xs: i32[], i: u64, j: i8) -> (i32, i32) {\n"
                    "  (xs[j], xs[i])\n"
                    "}\n"
                    "fn pair_len(p: (i32, f32)[]) -> i64 {\n"
                    "  len(p)\n"
                    "}\n";
  CHECK_STR(run(src, "queries", "[[1,2,3],[4,5,6]] [7,8]"), "2\n2\n3\n2\n4\n8");
  CHECK_STR(run(src, "queries", "[[1,2,3]] [7,8]"),
            "2:31: error: index 1 out of bounds for dimension 0 of extent 1");
  CHECK_STR(run(src, "queries", "[[1,2,3]] []"),
            "2:31: error: index 1 out of bounds for dimension 0 of extent 1");
  CHECK_STR(run(src, "count_to", "-1"), "5:3: error: negative extent -1");
  CHECK_STR(run(src, "count_to", "0"), "[]");
  CHECK_STR(run(src, "count_to", "9223372036854775807"), "5:3: error: array too large");
  CHECK_STR(run(src, "at_u", "[1,2] 1 -1"),
            "8:4: error: index -1 out of bounds for dimension 0 of extent 2");
  CHECK_STR(run(src, "at_u", "[1,2] 18446744073709551615 0"),
            "8:11: error: index 9223372036854775807 out of bounds for dimension 0 of extent 2");
  CHECK_STR(run(src, "at_u", "[1,2] 1 0"), "1\n2");
  CHECK_STR(run(src, "pair_len", "[1,2] [0.5]"),
            "11:3: error: len: arrays have different shapes: [2] and [1]");
  CHECK_STR(run(src, "pair_len", "[1,2] [0.5,1]"), "2");
}

/* ---- concurrent calls of one module ---- */

typedef struct worker {
  ac_function *f;
  ac_array *xs;
  int64_t expect;
  int bad;
} worker;

static int work(void *p) {
  worker *w = p;
  for (int k = 0; k < 20; k++) {
    ac_datum arg = {AC_DATUM_ARRAY, AC_I64, {0}, w->xs}, res;
    if (ac_function_call(w->f, &arg, 1, &res, 1, NULL) != AC_OK || res.s.i != w->expect)
      w->bad++;
  }
  return 0;
}

UNIT_TEST(functions_of_one_module_may_be_called_from_several_threads) {
  ac_context *ctx = ac_context_create();
  const char *src = "fn f(xs: i64[]) -> i64 {\n"
                    "  fold(|a, b| a + b, 0, scan_incl(|a, b| a + b, map(|x| x * 2, xs)))\n"
                    "}\n";
  ac_module *m = NULL;
  ac_function *f = NULL;
  CHECK_EQ_INT(ac_module_parse(ctx, "t.ac", src, strlen(src), &m, NULL), AC_OK);
  CHECK(m && ac_function_create(m, "f", AC_BACKEND_INTERP, &f, NULL) == AC_OK);
  if (!f) {
    ac_module_destroy(m);
    ac_context_destroy(ctx);
    return;
  }
  int64_t n = 10000;
  ac_array *xs = ac_array_create(ctx, AC_I64, 1, &n, NULL, NULL);
  int64_t *d = (int64_t *)ac_array_data(xs), expect = 0, run_sum = 0;
  for (int64_t i = 0; i < n; i++) {
    d[i] = i % 7;
    run_sum += 2 * d[i];
    expect += run_sum;
  }
  worker w[4];
  thrd_t t[4];
  for (int i = 0; i < 4; i++) {
    w[i] = (worker){f, xs, expect, 0};
    CHECK_EQ_INT(thrd_create(&t[i], work, &w[i]), thrd_success);
  }
  for (int i = 0; i < 4; i++) {
    thrd_join(t[i], NULL);
    CHECK_EQ_INT(w[i].bad, 0);
  }
  ac_array_release(xs);
  ac_function_destroy(f);
  ac_module_destroy(m);
  ac_context_destroy(ctx);
}

UNIT_MAIN(integer_arithmetic_wraps_and_never_fails, shifts_and_bit_operations, floats_are_ieee,
          conversions_saturate_and_round_once, math_functions_use_the_c_library,
          only_the_needed_operands_are_evaluated, lets_tuples_and_projections,
          calls_and_scalar_loops, runtime_errors_name_the_operation,
          functions_of_one_module_may_be_called_from_several_threads)
