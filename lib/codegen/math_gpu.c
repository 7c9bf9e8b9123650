/* lib/codegen/math_gpu.c: math functions in GPU kernels: libdevice calls,
 * and fallbacks of stated accuracy for when libdevice is not installed.
 *
 * With libdevice (nv_libdevice_path() != NULL), op(x) on f32 / f64 is a
 * call of __nv_<name>f / __nv_<name> (the names libdevice.10.bc defines;
 * float remainder is __nv_fmodf / __nv_fmod), and nv_emit links them.
 *
 * Without it, each operation becomes a call of an internal function
 * "arrayc.gpu.<name>" that this file defines in the module, once, as LLVM
 * IR written from the mathematics (no other library's code). Only IEEE
 * arithmetic, llvm.fma / sqrt / rint / fabs / copysign / ctlz, integer
 * operations and constant tables are used, so the same IR runs on the host
 * JIT, where test/unit/test_gpu_math.c compares it with the C library's
 * long double functions over special values and 100,000 random inputs per
 * domain (several domains per function). Every function works in double;
 * f32 operations convert their operands to double, call the double
 * function and round once to float, which the test finds within 0.5 ulp of
 * float. The method of each double function, and the largest error the
 * test measured (1.2 million inputs or more each; ulps of the exact
 * result). The test's bound is 1 ulp for all of them, 0 for fmod:
 *
 *   exp, exp2    x = k ln2 + r (k = rint(x / ln2); k ln2 exact against a
 *                42-bit ln 2, so r + rl is exact to 2^-100), e^r by its
 *                Taylor series to r^14 summed as 1 + r + (rest), scaled by
 *                2^k in two exact steps.                 0.75, 0.75
 *   expm1        the same reduction; (2^k - 1) + 2^k (e^r - 1) by TwoSums,
 *                one final rounding.                     0.97
 *   log, log2, log10, log1p
 *                x = m 2^e with m in [1/sqrt2, sqrt2), log m = 2 atanh f,
 *                f = (m - 1) / (m + 1), with f, f^3 and e ln2 as
 *                double-doubles: log x to about 2^-66 relative (pow needs
 *                it); log1p adds the rounding error of 1 + x.
 *                                                        0.50, 0.50, 0.50, 0.65
 *   sin, cos, tan
 *                x = q pi/2 + r with r as a double-double: three-part
 *                Cody-Waite with FMA below 2^20, Payne-Hanek (192 bits of
 *                2/pi times the 53-bit mantissa in 32-bit limbs) above, so
 *                the reduction is accurate for every double (the test
 *                includes the hardest cases near multiples of pi/2);
 *                Taylor series to r^21 / r^22; tan = sin / cos as
 *                double-doubles.                         0.77, 0.76, 0.95
 *   atan, asin, acos, atan2
 *                atan t = atan c + atan((t - c) / (1 + t c)), c = i/8
 *                nearest t (or 1/t beyond 1) from a double-double table,
 *                series to u^15; asin x = atan(x / sqrt(1 - x^2)), acos x
 *                = 2 atan(sqrt((1 - x) / (1 + x))), atan2 from atan |y/x|,
 *                each argument a double-double.          0.50, 0.50, 0.50, 0.66
 *   sinh, cosh, tanh
 *                sinh = (E + E / (E + 1)) / 2 with E = expm1 |x|, cosh =
 *                (e + 1/e) / 2, tanh = E / (E + 2) with E = expm1 2|x|, in
 *                double-doubles; beyond 22, e^|x| / 2 = e^(|x| - ln2), so
 *                nothing overflows early.                0.85, 0.62, 0.79
 *   erf, erfc    erf by its Taylor series below 1/2; erfc x = e^(-x^2)
 *                erfcx(x) from 1/2 on, e^(-x^2) from a double-double x^2,
 *                erfcx from Chebyshev fits (mpmath chebyfit, 22 terms on
 *                [1/2,1) [1,2) [2,4) [4,8), fit errors below 2^-58; beyond
 *                8, 11 terms in t = 1/x^2); erf = 1 - erfc from 1/2 on,
 *                erfc = 1 - erf below 1/2, erfc(-x) = 2 - erfc(x).
 *                                                        0.84, 0.86
 *   pow          e^(y log x) with log x and y log x as double-doubles;
 *                every special case of C99 Annex F.      0.74
 *   hypot        scaled by a power of two, sqrt(a^2 + b^2) in
 *                double-doubles.                         0.50
 *   cbrt         exponent trick, three Newton steps, a last step with an
 *                FMA residual.                           0.74
 *   fmod         exact (integer long division of the mantissas, 11 bits
 *                per step, as C requires).               0
 * Results in the subnormal range are rounded twice at most (their error is
 * then up to one subnormal ulp, included above). Special values (zeros,
 * infinities, NaN, domain edges) follow C99 Annex F, as the test checks
 * against libm.
 *
 * The fallbacks are accurate but slow on GPUs with few double units (every
 * f32 call computes in double): install CUDA's libdevice for speed. With
 * libdevice the results are NVIDIA's, within the bounds the CUDA
 * Programming Guide documents (a few ulps for most functions).
 */
#include "codegen/math_gpu.h"

#include "target/nvptx.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- an IR toolkit for the fallbacks ----
 * Each fallback is generated into its own function with its own builder
 * (mg), so it never disturbs the kernel being generated. */

typedef struct mg {
  cg_module *M;
  LLVMBuilderRef b;
  LLVMValueRef fn;
  LLVMTypeRef d, i64, i32, i1;
} mg;

typedef LLVMValueRef V;

/* A double-double: hi + lo with |lo| <= ulp(hi) / 2 (where normalised). */
typedef struct mg_dd {
  V hi, lo;
} mg_dd;

static V mg_k(mg *g, double v) {
  return LLVMConstReal(g->d, v);
}
static V mg_ki(mg *g, int64_t v) {
  return LLVMConstInt(g->i64, (unsigned long long)v, 1);
}
static V mg_add(mg *g, V a, V b) {
  return LLVMBuildFAdd(g->b, a, b, "");
}
static V mg_sub(mg *g, V a, V b) {
  return LLVMBuildFSub(g->b, a, b, "");
}
static V mg_mul(mg *g, V a, V b) {
  return LLVMBuildFMul(g->b, a, b, "");
}
static V mg_div(mg *g, V a, V b) {
  return LLVMBuildFDiv(g->b, a, b, "");
}
static V mg_neg(mg *g, V a) {
  return LLVMBuildFNeg(g->b, a, "");
}
static V mg_sel(mg *g, V c, V a, V b) {
  return LLVMBuildSelect(g->b, c, a, b, "");
}
static V mg_fcmp(mg *g, LLVMRealPredicate p, V a, V b) {
  return LLVMBuildFCmp(g->b, p, a, b, "");
}
static V mg_icmp(mg *g, LLVMIntPredicate p, V a, V b) {
  return LLVMBuildICmp(g->b, p, a, b, "");
}
static V mg_not(mg *g, V a) {
  return LLVMBuildNot(g->b, a, "");
}
static V mg_or(mg *g, V a, V b) {
  return LLVMBuildOr(g->b, a, b, "");
}
static V mg_and(mg *g, V a, V b) {
  return LLVMBuildAnd(g->b, a, b, "");
}
static V mg_iadd(mg *g, V a, V b) {
  return LLVMBuildAdd(g->b, a, b, "");
}
static V mg_isub(mg *g, V a, V b) {
  return LLVMBuildSub(g->b, a, b, "");
}
static V mg_imul(mg *g, V a, V b) {
  return LLVMBuildMul(g->b, a, b, "");
}
static V mg_shl(mg *g, V a, V b) {
  return LLVMBuildShl(g->b, a, b, "");
}
static V mg_lshr(mg *g, V a, V b) {
  return LLVMBuildLShr(g->b, a, b, "");
}
static V mg_ashr(mg *g, V a, V b) {
  return LLVMBuildAShr(g->b, a, b, "");
}

static V mg_intr(mg *g, const char *name, LLVMTypeRef over, V *args, unsigned n) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(g->M->mod, id, &over, 1);
  LLVMTypeRef ty = LLVMIntrinsicGetType(g->M->llctx, id, &over, 1);
  return LLVMBuildCall2(g->b, ty, fn, args, n, "");
}
static V mg_fma(mg *g, V a, V b, V c) {
  V args[3] = {a, b, c};
  return mg_intr(g, "llvm.fma", g->d, args, 3);
}
static V mg_fabs(mg *g, V a) {
  return mg_intr(g, "llvm.fabs", g->d, &a, 1);
}
static V mg_sqrt(mg *g, V a) {
  return mg_intr(g, "llvm.sqrt", g->d, &a, 1);
}
static V mg_rint(mg *g, V a) {
  return mg_intr(g, "llvm.rint", g->d, &a, 1);
}
static V mg_trunc(mg *g, V a) {
  return mg_intr(g, "llvm.trunc", g->d, &a, 1);
}
static V mg_copysign(mg *g, V a, V s) {
  V args[2] = {a, s};
  return mg_intr(g, "llvm.copysign", g->d, args, 2);
}
static V mg_ctlz(mg *g, V a) { /* 64 for 0 */
  V args[2] = {a, LLVMConstInt(g->i1, 0, 0)};
  return mg_intr(g, "llvm.ctlz", g->i64, args, 2);
}
/* Truncation toward zero to i64, saturating, NaN -> 0 (never poison). */
static V mg_toint(mg *g, V a) {
  LLVMTypeRef over[2] = {g->i64, g->d};
  unsigned id = LLVMLookupIntrinsicID("llvm.fptosi.sat", 15);
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(g->M->mod, id, over, 2);
  LLVMTypeRef ty = LLVMIntrinsicGetType(g->M->llctx, id, over, 2);
  return LLVMBuildCall2(g->b, ty, fn, &a, 1, "");
}
static V mg_tod(mg *g, V i) {
  return LLVMBuildSIToFP(g->b, i, g->d, "");
}
static V mg_utod(mg *g, V i) {
  return LLVMBuildUIToFP(g->b, i, g->d, "");
}
static V mg_bits(mg *g, V a) {
  return LLVMBuildBitCast(g->b, a, g->i64, "");
}
static V mg_from_bits(mg *g, V i) {
  return LLVMBuildBitCast(g->b, i, g->d, "");
}
/* 2^k for an i64 k in [-1022, 1023] (1024 gives +inf). */
static V mg_pow2(mg *g, V k) {
  return mg_from_bits(g, mg_shl(g, mg_iadd(g, k, mg_ki(g, 1023)), mg_ki(g, 52)));
}
static V mg_lt(mg *g, V a, V b) {
  return mg_fcmp(g, LLVMRealOLT, a, b);
}
static V mg_gt(mg *g, V a, V b) {
  return mg_fcmp(g, LLVMRealOGT, a, b);
}
static V mg_eq(mg *g, V a, V b) {
  return mg_fcmp(g, LLVMRealOEQ, a, b);
}
static V mg_isnan(mg *g, V a) {
  return mg_fcmp(g, LLVMRealUNO, a, a);
}
static V mg_signbit(mg *g, V a) {
  return mg_icmp(g, LLVMIntSLT, mg_bits(g, a), mg_ki(g, 0));
}

/* c[0] + x (c[1] + x (... c[n-1])) by FMA. */
static V mg_poly(mg *g, V x, const double *c, size_t n) {
  V p = mg_k(g, c[n - 1]);
  for (size_t i = n - 1; i-- > 0;)
    p = mg_fma(g, p, x, mg_k(g, c[i]));
  return p;
}

/* Exact sums and products (Knuth's TwoSum, Dekker's Fast2Sum, FMA). */
static mg_dd mg_two_sum(mg *g, V a, V b) {
  V s = mg_add(g, a, b);
  V a1 = mg_sub(g, s, b), b1 = mg_sub(g, s, a1);
  return (mg_dd){s, mg_add(g, mg_sub(g, a, a1), mg_sub(g, b, b1))};
}
static mg_dd mg_fast_two_sum(mg *g, V a, V b) { /* |a| >= |b| */
  V s = mg_add(g, a, b);
  return (mg_dd){s, mg_sub(g, b, mg_sub(g, s, a))};
}
static mg_dd mg_two_prod(mg *g, V a, V b) {
  V p = mg_mul(g, a, b);
  return (mg_dd){p, mg_fma(g, a, b, mg_neg(g, p))};
}

/* (nh + nl) / (dh + dl) as a double-double (the remainder by FMA). */
static mg_dd mg_div_dd(mg *g, V nh, V nl, V dh, V dl) {
  V q = mg_div(g, nh, dh);
  V rem = mg_fma(g, mg_neg(g, q), dh, nh);
  return (mg_dd){q, mg_div(g, mg_add(g, rem, mg_fma(g, mg_neg(g, q), dl, nl)), dh)};
}

/* sqrt(h + l) as a double-double (low part 0 for 0, inf and NaN). */
static mg_dd mg_sqrt_dd(mg *g, V h, V l) {
  V s = mg_sqrt(g, h);
  V r = mg_add(g, mg_fma(g, mg_neg(g, s), s, h), l);
  V ok = mg_and(g, mg_gt(g, s, mg_k(g, 0)), mg_lt(g, s, mg_k(g, INFINITY)));
  return (mg_dd){s, mg_sel(g, ok, mg_div(g, r, mg_mul(g, mg_k(g, 2), s)), mg_k(g, 0))};
}

/* A private constant table in the module (shared by every fallback). */
static V mg_table_f64(mg *g, const char *name, const double *v, size_t n) {
  LLVMValueRef gv = LLVMGetNamedGlobal(g->M->mod, name);
  if (gv)
    return gv;
  LLVMValueRef *c = cg_new(g->M, n * sizeof *c);
  for (size_t i = 0; i < n; i++)
    c[i] = mg_k(g, v[i]);
  LLVMTypeRef at = LLVMArrayType2(g->d, n);
  gv = LLVMAddGlobal(g->M->mod, at, name);
  LLVMSetInitializer(gv, LLVMConstArray2(g->d, c, n));
  LLVMSetGlobalConstant(gv, 1);
  LLVMSetLinkage(gv, LLVMPrivateLinkage);
  LLVMSetUnnamedAddress(gv, LLVMGlobalUnnamedAddr);
  return gv;
}
static V mg_load_idx(mg *g, V table, LLVMTypeRef elem, V idx) {
  V p = LLVMBuildInBoundsGEP2(g->b, elem, table, &idx, 1, "");
  return LLVMBuildLoad2(g->b, elem, p, "");
}

/* Taylor coefficients 1 / n! for n = from, from + step, ... (count of
 * them), with signs alternating when `alt`. */
static void mg_taylor(double *c, size_t count, unsigned from, unsigned step, bool alt) {
  for (size_t i = 0; i < count; i++) {
    unsigned n = from + (unsigned)i * step;
    double fact = 1;
    for (unsigned k = 2; k <= n; k++)
      fact *= k;
    c[i] = (alt && (i & 1) ? -1.0 : 1.0) / fact;
  }
}

/* ---- constants (mpmath at 1600 bits; hi + lo double-doubles) ---- */

#define LN2_HI 0x1.62e42fefa3800p-1 /* 42 bits: k * LN2_HI is exact */
#define LN2_LO 0x1.ef35793c76730p-45
#define LN2_D 0x1.62e42fefa39efp-1 /* ln 2 as a double-double */
#define LN2_DL 0x1.abc9e3b39803fp-56
#define LOG2E_HI 0x1.71547652b82fep+0
#define LOG2E_LO 0x1.777d0ffda0d24p-56
#define LOG10E_HI 0x1.bcb7b1526e50ep-2
#define LOG10E_LO 0x1.95355baaafad3p-57
#define TWO3_HI 0x1.5555555555555p-1 /* 2/3 */
#define TWO3_LO 0x1.5555555555555p-55
#define PIO2_1 0x1.921fb54442d18p+0 /* pi/2 = PIO2_1 + PIO2_2 + PIO2_3 */
#define PIO2_2 0x1.1a62633145c07p-54
#define PIO2_3 -0x1.f1976b7ed8fbcp-110
#define PI_HI 0x1.921fb54442d18p+1
#define PI_LO 0x1.1a62633145c07p-53
#define TWO_OVER_PI 0x1.45f306dc9c883p-1
#define TWO_SQRTPI_HI 0x1.20dd750429b6dp+0 /* 2 / sqrt(pi) */
#define TWO_SQRTPI_LO 0x1.1ae3a914fed80p-56
#define RSQRTPI_HI 0x1.20dd750429b6dp-1 /* 1 / sqrt(pi) */
#define RSQRTPI_LO 0x1.1ae3a914fed80p-57

/* ---- exp ---- */

/* e^(r + rl) - 1 for |r| <= ~0.35 and a tiny rl, as a double-double:
 * r + (r^2 (1/2 + r/6 + ... + r^12/14!) + rl); the Taylor series is
 * truncated below 2^-63 relative. */
static mg_dd mg_em1_dd(mg *g, V r, V rl) {
  double c[13];
  mg_taylor(c, 13, 2, 1, false);
  mg_dd r2 = mg_two_prod(g, r, r);
  V P = mg_poly(g, r, c, 13);
  V tail = mg_fma(g, r2.hi, P, mg_fma(g, r2.lo, P, rl));
  return mg_fast_two_sum(g, r, tail);
}

/* e^(r + rl) for |r| <= ~0.35 as a double-double: 1 + r exactly, then
 * the rest, so that only the last addition rounds. */
static mg_dd mg_exp_small_dd(mg *g, V r, V rl) {
  double c[13];
  mg_taylor(c, 13, 2, 1, false);
  mg_dd r2 = mg_two_prod(g, r, r);
  V P = mg_poly(g, r, c, 13);
  V tail = mg_fma(g, r2.hi, P, mg_fma(g, r2.lo, P, rl));
  mg_dd s = mg_fast_two_sum(g, mg_k(g, 1), r);
  return mg_fast_two_sum(g, s.hi, mg_add(g, s.lo, tail));
}

/* Reduction for e^(hi + lo): hi + lo = k ln2 + r + rl with |r| <= ~0.35;
 * k (i64). hi is clamped to [-746, 710] (outside, the result is 0 or inf
 * whatever lo is, and lo is then ignored); NaN stays NaN. */
static mg_dd mg_exp_reduce(mg *g, V hi, V lo, V *k) {
  V over = mg_gt(g, hi, mg_k(g, 710)), under = mg_lt(g, hi, mg_k(g, -746));
  V clamped = mg_or(g, over, under);
  hi = mg_sel(g, over, mg_k(g, 710), mg_sel(g, under, mg_k(g, -746), hi));
  lo = mg_sel(g, clamped, mg_k(g, 0), lo);
  V kd = mg_rint(g, mg_mul(g, hi, mg_k(g, LOG2E_HI)));
  V r1 = mg_fma(g, mg_neg(g, kd), mg_k(g, LN2_HI), hi); /* exact (Sterbenz) */
  V c = mg_fma(g, mg_neg(g, kd), mg_k(g, LN2_LO), lo);
  *k = mg_toint(g, kd);
  return mg_two_sum(g, r1, c);
}

/* e^(hi + lo) = p * 2^k, p in [~0.7, ~1.42] as a double-double: returns
 * p, sets k. */
static mg_dd mg_exp_core_dd(mg *g, V hi, V lo, V *k) {
  mg_dd r = mg_exp_reduce(g, hi, lo, k);
  return mg_exp_small_dd(g, r.hi, r.lo);
}
static V mg_exp_core(mg *g, V hi, V lo, V *k) {
  return mg_exp_core_dd(g, hi, lo, k).hi;
}

/* p * 2^k for k in [-1080, 1030], in two exact steps so that neither
 * power overflows; the last multiplication rounds once. */
static V mg_scale(mg *g, V p, V k) {
  V k1 = mg_ashr(g, k, mg_ki(g, 1));
  V k2 = mg_isub(g, k, k1);
  return mg_mul(g, mg_mul(g, p, mg_pow2(g, k1)), mg_pow2(g, k2));
}

static V mg_exp(mg *g, V x) {
  V k, p = mg_exp_core(g, x, mg_k(g, 0), &k);
  return mg_scale(g, p, k);
}

static V mg_exp2(mg *g, V x) {
  V xc = mg_sel(g, mg_gt(g, x, mg_k(g, 1030)), mg_k(g, 1030),
                mg_sel(g, mg_lt(g, x, mg_k(g, -1080)), mg_k(g, -1080), x));
  V kd = mg_rint(g, xc);
  V r = mg_sub(g, xc, kd); /* exact */
  mg_dd t = mg_two_prod(g, r, mg_k(g, LN2_D));
  V tl = mg_fma(g, r, mg_k(g, LN2_DL), t.lo);
  V p = mg_exp_small_dd(g, t.hi, tl).hi;
  return mg_scale(g, p, mg_toint(g, kd));
}

/* expm1 x as a double-double. */
static mg_dd mg_expm1_dd(mg *g, V x) {
  V xc = mg_sel(g, mg_gt(g, x, mg_k(g, 710)), mg_k(g, 710),
                mg_sel(g, mg_lt(g, x, mg_k(g, -45)), mg_k(g, -45), x));
  V k;
  mg_dd r = mg_exp_reduce(g, xc, mg_k(g, 0), &k);
  mg_dd em1 = mg_em1_dd(g, r.hi, r.lo);
  /* k in [-65, 56]: 2^k + 2^k em1 - 1, where 2^k em1 is exact, summed by
   * TwoSums so that only the last addition rounds */
  V big_k = mg_icmp(g, LLVMIntSGT, k, mg_ki(g, 56));
  V tk = mg_pow2(g, mg_sel(g, big_k, mg_ki(g, 56), k));
  mg_dd a = mg_two_sum(g, tk, mg_mul(g, tk, em1.hi));
  mg_dd b = mg_two_sum(g, a.hi, mg_k(g, -1));
  mg_dd mid = mg_two_sum(g, b.hi, mg_add(g, b.lo, mg_fma(g, tk, em1.lo, a.lo)));
  /* beyond, -1 is below half an ulp */
  V big = mg_scale(g, mg_exp_small_dd(g, r.hi, r.lo).hi, k);
  V tiny = mg_lt(g, mg_fabs(g, x), mg_k(g, 0x1p-54)); /* expm1 x = x (-0 too) */
  V hi = mg_sel(g, tiny, x, mg_sel(g, big_k, big, mid.hi));
  V lo = mg_sel(g, mg_or(g, tiny, big_k), mg_k(g, 0), mid.lo);
  return (mg_dd){hi, lo};
}

static V mg_expm1(mg *g, V x) {
  return mg_expm1_dd(g, x).hi;
}

/* ---- log ---- */

/* log x as a double-double for finite x > 0 (callers pass 1 otherwise). */
static mg_dd mg_log_dd(mg *g, V x) {
  V sub_ = mg_lt(g, x, mg_k(g, 0x1p-1022));
  V xs = mg_sel(g, sub_, mg_mul(g, x, mg_k(g, 0x1p54)), x);
  V bx = mg_bits(g, xs);
  V e = mg_isub(g, mg_lshr(g, bx, mg_ki(g, 52)), mg_ki(g, 1023));
  e = mg_sel(g, sub_, mg_isub(g, e, mg_ki(g, 54)), e);
  V mant = mg_and(g, bx, mg_ki(g, 0xFFFFFFFFFFFFF));
  V big = mg_icmp(g, LLVMIntUGT, mant, mg_ki(g, 0x6A09E667F3BCD)); /* m > sqrt 2 */
  V m = mg_from_bits(
      g,
      LLVMBuildOr(g->b, mant, mg_sel(g, big, mg_ki(g, 1022LL << 52), mg_ki(g, 1023LL << 52)), ""));
  e = mg_sel(g, big, mg_iadd(g, e, mg_ki(g, 1)), e);
  /* f = (m - 1) / (m + 1) as fh + fl: m - 1 and the rounding error of
   * m + 1 are exact */
  V u = mg_sub(g, m, mg_k(g, 1));
  V v = mg_add(g, m, mg_k(g, 1));
  V vl = mg_sub(g, m, mg_sub(g, v, mg_k(g, 1)));
  V fh = mg_div(g, u, v);
  V rem = mg_fma(g, mg_neg(g, fh), v, u);
  V fl = mg_div(g, mg_sub(g, rem, mg_mul(g, fh, vl)), v);
  /* log m = 2f + 2f^3/3 + 2f^5 (1/5 + f^2/7 + ...) */
  V z = mg_mul(g, fh, fh);
  V zl = mg_fma(g, fh, fh, mg_neg(g, z));
  mg_dd p = mg_two_prod(g, fh, z); /* f^3 */
  V pl = mg_add(g, p.lo, mg_add(g, mg_mul(g, fh, zl), mg_mul(g, mg_k(g, 3), mg_mul(g, fl, z))));
  mg_dd q = mg_two_prod(g, p.hi, mg_k(g, TWO3_HI)); /* 2f^3/3 */
  V ql = mg_add(g, q.lo,
                mg_add(g, mg_mul(g, p.hi, mg_k(g, TWO3_LO)), mg_mul(g, pl, mg_k(g, TWO3_HI))));
  double c[10];
  for (int i = 0; i < 10; i++)
    c[i] = 1.0 / (5 + 2 * i);
  V R = mg_mul(g, mg_mul(g, mg_mul(g, mg_k(g, 2), fh), mg_mul(g, z, z)), mg_poly(g, z, c, 10));
  mg_dd s = mg_fast_two_sum(g, mg_mul(g, mg_k(g, 2), fh), q.hi);
  V lo = mg_add(g, s.lo, mg_add(g, mg_mul(g, mg_k(g, 2), fl), mg_add(g, ql, R)));
  mg_dd lm = mg_fast_two_sum(g, s.hi, lo);
  /* + e ln 2 (e * LN2_HI exact) */
  V ed = mg_tod(g, e);
  mg_dd h = mg_two_sum(g, mg_mul(g, ed, mg_k(g, LN2_HI)), lm.hi);
  V lo2 = mg_add(g, h.lo, mg_fma(g, ed, mg_k(g, LN2_LO), lm.lo));
  return mg_fast_two_sum(g, h.hi, lo2);
}

/* log_dd on the finite positive x, then C's special cases: log(0) = -inf,
 * log(inf) = inf, log(x < 0) = NaN. r is the finite-case result. */
static V mg_log_special(mg *g, V x, V r) {
  r = mg_sel(g, mg_eq(g, x, mg_k(g, 0)), mg_k(g, -INFINITY), r);
  r = mg_sel(g, mg_eq(g, x, mg_k(g, INFINITY)), mg_k(g, INFINITY), r);
  return mg_sel(g, mg_fcmp(g, LLVMRealULT, x, mg_k(g, 0)), mg_k(g, NAN), r);
}
static V mg_safe_pos(mg *g, V x) { /* x if finite and > 0, else 1 */
  V ok = mg_and(g, mg_gt(g, x, mg_k(g, 0)), mg_lt(g, x, mg_k(g, INFINITY)));
  return mg_sel(g, ok, x, mg_k(g, 1));
}

static V mg_log(mg *g, V x) {
  mg_dd l = mg_log_dd(g, mg_safe_pos(g, x));
  return mg_log_special(g, x, mg_add(g, l.hi, l.lo));
}

/* log x * (c_hi + c_lo) */
static V mg_log_times(mg *g, V x, double c_hi, double c_lo) {
  mg_dd l = mg_log_dd(g, mg_safe_pos(g, x));
  mg_dd r = mg_two_prod(g, l.hi, mg_k(g, c_hi));
  V rl = mg_add(g, r.lo, mg_add(g, mg_mul(g, l.hi, mg_k(g, c_lo)), mg_mul(g, l.lo, mg_k(g, c_hi))));
  return mg_log_special(g, x, mg_add(g, r.hi, rl));
}

static V mg_log2(mg *g, V x) {
  return mg_log_times(g, x, LOG2E_HI, LOG2E_LO);
}
static V mg_log10(mg *g, V x) {
  return mg_log_times(g, x, LOG10E_HI, LOG10E_LO);
}

static V mg_log1p(mg *g, V x) {
  mg_dd u = mg_two_sum(g, mg_k(g, 1), x);
  mg_dd l = mg_log_dd(g, mg_safe_pos(g, u.hi));
  /* log(u + ul) = log u + ul / u */
  V r = mg_add(g, l.hi, mg_add(g, l.lo, mg_div(g, u.lo, u.hi)));
  r = mg_sel(g, mg_eq(g, x, mg_k(g, -1)), mg_k(g, -INFINITY), r);
  r = mg_sel(g, mg_eq(g, x, mg_k(g, INFINITY)), mg_k(g, INFINITY), r);
  r = mg_sel(g, mg_fcmp(g, LLVMRealULT, x, mg_k(g, -1)), mg_k(g, NAN), r);
  return mg_sel(g, mg_lt(g, mg_fabs(g, x), mg_k(g, 0x1p-54)), x, r);
}

/* ---- pow ---- */

static V mg_pow(mg *g, V x, V y) {
  V ax = mg_fabs(g, x);
  mg_dd l = mg_log_dd(g, mg_safe_pos(g, ax));
  mg_dd p = mg_two_prod(g, y, l.hi);
  V pl = mg_fma(g, y, l.lo, p.lo);
  /* an infinite product leaves a NaN low part: exp_core ignores lo when it
   * clamps hi, which covers it */
  V k, e = mg_exp_core(g, p.hi, pl, &k);
  V r = mg_scale(g, e, k);
  V inf = mg_k(g, INFINITY), zero = mg_k(g, 0), one = mg_k(g, 1);
  V yneg = mg_lt(g, y, zero);
  V yint = mg_eq(g, mg_trunc(g, y), y); /* true for +-inf, false for NaN */
  V yodd = mg_and(g, mg_and(g, yint, mg_lt(g, mg_fabs(g, y), mg_k(g, 0x1p53))),
                  LLVMBuildTrunc(g->b, mg_toint(g, y), g->i1, ""));
  r = mg_sel(g, mg_eq(g, ax, zero), mg_sel(g, yneg, inf, zero), r);
  r = mg_sel(g, mg_eq(g, ax, inf), mg_sel(g, yneg, zero, inf), r);
  r = mg_sel(g, mg_eq(g, ax, one), one, r); /* (-1)^(+-inf) = 1 too */
  r = mg_sel(g, mg_and(g, mg_signbit(g, x), yodd), mg_neg(g, r), r);
  V xneg_finite = mg_and(g, mg_lt(g, x, zero), mg_gt(g, x, mg_k(g, -INFINITY)));
  r = mg_sel(g, mg_and(g, xneg_finite, mg_not(g, yint)), mg_k(g, NAN), r);
  r = mg_sel(g, mg_or(g, mg_isnan(g, x), mg_isnan(g, y)), mg_k(g, NAN), r);
  return mg_sel(g, mg_or(g, mg_eq(g, y, zero), mg_eq(g, x, one)), one, r);
}

/* ---- trigonometric functions ---- */

/* 2/pi in 32-bit words after 64 zero bits (word 2 holds the first 32 bits
 * after the binary point): enough for the reduction of every double. */
static const uint32_t mg_two_over_pi[39] = {
    0x00000000, 0x00000000, 0xA2F9836E, 0x4E441529, 0xFC2757D1, 0xF534DDC0, 0xDB629599, 0x3C439041,
    0xFE5163AB, 0xDEBBC561, 0xB7246E3A, 0x424DD2E0, 0x06492EEA, 0x09D1921C, 0xFE1DEB1C, 0xB129A73E,
    0xE88235F5, 0x2EBB4484, 0xE99C7026, 0xB45F7E41, 0x3991D639, 0x835339F4, 0x9C845F8B, 0xBDF9283B,
    0x1FF897FF, 0xDE05980F, 0xEF2F118B, 0x5A0A6D1F, 0x6D367ECF, 0x27CB09B7, 0x4F463F66, 0x9E5FEA2D,
    0x7527BAC7, 0xEBE5F17B, 0x3D0739F7, 0x8A5292EA, 0x6BFB5FB1, 0x1F8D5D08, 0x56033046,
};

static V mg_table_two_over_pi(mg *g) {
  static const char name[] = "arrayc.gpu.two_over_pi";
  LLVMValueRef gv = LLVMGetNamedGlobal(g->M->mod, name);
  if (gv)
    return gv;
  size_t n = sizeof mg_two_over_pi / sizeof mg_two_over_pi[0];
  LLVMValueRef c[sizeof mg_two_over_pi / sizeof mg_two_over_pi[0]];
  for (size_t i = 0; i < n; i++)
    c[i] = LLVMConstInt(g->i32, mg_two_over_pi[i], 0);
  gv = LLVMAddGlobal(g->M->mod, LLVMArrayType2(g->i32, n), name);
  LLVMSetInitializer(gv, LLVMConstArray2(g->i32, c, n));
  LLVMSetGlobalConstant(gv, 1);
  LLVMSetLinkage(gv, LLVMPrivateLinkage);
  LLVMSetUnnamedAddress(gv, LLVMGlobalUnnamedAddr);
  return gv;
}

/* Payne-Hanek for finite ax >= 2^20: ax = m 2^e (m 53 bits, e >= -32);
 * the bits of 2/pi from 2^(1-e) on (earlier ones give multiples of 4) form
 * a 192-bit window W, and m * W (in 32-bit limbs) holds the quadrant in
 * bits 190..191 and the fraction below them. */
static void mg_reduce_ph(mg *g, V ax, mg_dd *r, V *q) {
  V M32 = mg_ki(g, 0xFFFFFFFF);
  V bx = mg_bits(g, ax);
  V e = mg_isub(g, mg_lshr(g, bx, mg_ki(g, 52)), mg_ki(g, 1075));
  V m = LLVMBuildOr(g->b, mg_and(g, bx, mg_ki(g, 0xFFFFFFFFFFFFF)), mg_ki(g, 1LL << 52), "");
  V j0 = mg_iadd(g, e, mg_ki(g, 62)); /* table bit of 2/pi's bit 1 - e ... */
  V w = mg_lshr(g, j0, mg_ki(g, 5)), s = mg_and(g, j0, mg_ki(g, 31));
  V tab = mg_table_two_over_pi(g);
  V word[7];
  for (int t = 0; t < 7; t++)
    word[t] =
        LLVMBuildZExt(g->b, mg_load_idx(g, tab, g->i32, mg_iadd(g, w, mg_ki(g, t))), g->i64, "");
  V ml = mg_and(g, m, M32), mh = mg_lshr(g, m, mg_ki(g, 32));
  V acc[8];
  for (int k = 0; k < 8; k++)
    acc[k] = mg_ki(g, 0);
  for (int t = 0; t < 6; t++) {
    V both = LLVMBuildOr(g->b, mg_shl(g, word[t], mg_ki(g, 32)), word[t + 1], "");
    V limb = mg_and(g, mg_lshr(g, both, mg_isub(g, mg_ki(g, 32), s)), M32);
    int pos = 5 - t;
    V pl = mg_imul(g, ml, limb), ph = mg_imul(g, mh, limb);
    acc[pos] = mg_iadd(g, acc[pos], mg_and(g, pl, M32));
    acc[pos + 1] = mg_iadd(g, acc[pos + 1], mg_lshr(g, pl, mg_ki(g, 32)));
    acc[pos + 1] = mg_iadd(g, acc[pos + 1], mg_and(g, ph, M32));
    acc[pos + 2] = mg_iadd(g, acc[pos + 2], mg_lshr(g, ph, mg_ki(g, 32)));
  }
  V p[8], carry = mg_ki(g, 0);
  for (int k = 0; k < 8; k++) {
    V a = mg_iadd(g, acc[k], carry);
    p[k] = mg_and(g, a, M32);
    carry = mg_lshr(g, a, mg_ki(g, 32));
  }
  V quad = mg_and(g, mg_lshr(g, p[5], mg_ki(g, 30)), mg_ki(g, 3));
  /* the 128 fraction bits below the quadrant */
  V hi = LLVMBuildOr(
      g->b, LLVMBuildOr(g->b, mg_lshr(g, p[3], mg_ki(g, 30)), mg_shl(g, p[4], mg_ki(g, 2)), ""),
      mg_shl(g, p[5], mg_ki(g, 34)), "");
  V lo = LLVMBuildOr(
      g->b, LLVMBuildOr(g->b, mg_lshr(g, p[1], mg_ki(g, 30)), mg_shl(g, p[2], mg_ki(g, 2)), ""),
      mg_shl(g, p[3], mg_ki(g, 34)), "");
  /* a fraction >= 1/2 becomes f - 1 in the next quadrant */
  V negf = mg_icmp(g, LLVMIntSLT, hi, mg_ki(g, 0));
  V nlo = mg_isub(g, mg_ki(g, 0), lo);
  V nhi = mg_iadd(g, LLVMBuildNot(g->b, hi, ""),
                  LLVMBuildZExt(g->b, mg_icmp(g, LLVMIntEQ, lo, mg_ki(g, 0)), g->i64, ""));
  hi = mg_sel(g, negf, nhi, hi);
  lo = mg_sel(g, negf, nlo, lo);
  quad = mg_iadd(g, quad, LLVMBuildZExt(g->b, negf, g->i64, ""));
  /* normalise the 128-bit fraction (never zero: pi is irrational, but
   * nothing below is poison even then) */
  V hz = mg_icmp(g, LLVMIntEQ, hi, mg_ki(g, 0));
  V base = mg_sel(g, hz, mg_ki(g, 64), mg_ki(g, 0));
  hi = mg_sel(g, hz, lo, hi);
  lo = mg_sel(g, hz, mg_ki(g, 0), lo);
  V lz = mg_ctlz(g, hi);
  V lz63 = mg_and(g, lz, mg_ki(g, 63));
  V spill = mg_lshr(g, lo, mg_and(g, mg_isub(g, mg_ki(g, 64), lz), mg_ki(g, 63)));
  spill = mg_sel(g, mg_icmp(g, LLVMIntEQ, lz63, mg_ki(g, 0)), mg_ki(g, 0), spill);
  V H = LLVMBuildOr(g->b, mg_shl(g, hi, lz63), spill, "");
  V L = mg_shl(g, lo, lz63);
  V sh = mg_iadd(g, base, lz63);
  V a = mg_lshr(g, H, mg_ki(g, 11));
  V b = LLVMBuildOr(g->b, mg_shl(g, mg_and(g, H, mg_ki(g, 0x7FF)), mg_ki(g, 42)),
                    mg_lshr(g, L, mg_ki(g, 22)), "");
  V hd = mg_mul(g, mg_utod(g, a), mg_pow2(g, mg_isub(g, mg_ki(g, -53), sh)));
  V ld = mg_mul(g, mg_utod(g, b), mg_pow2(g, mg_isub(g, mg_ki(g, -106), sh)));
  /* r = f * pi/2 */
  mg_dd t = mg_two_prod(g, hd, mg_k(g, PIO2_1));
  V tl = mg_add(g, t.lo, mg_add(g, mg_mul(g, hd, mg_k(g, PIO2_2)), mg_mul(g, ld, mg_k(g, PIO2_1))));
  mg_dd rr = mg_fast_two_sum(g, t.hi, tl);
  r->hi = mg_sel(g, negf, mg_neg(g, rr.hi), rr.hi);
  r->lo = mg_sel(g, negf, mg_neg(g, rr.lo), rr.lo);
  *q = quad;
}

/* ax = q pi/2 + r, |r| <= pi/4 (as a double-double), for ax >= 0; NaN and
 * inf give NaN. Three-part Cody-Waite below 2^20, Payne-Hanek above. */
static void mg_reduce_pio2(mg *g, V ax, mg_dd *r, V *q) {
  LLVMValueRef fn = g->fn;
  LLVMBasicBlockRef bcw = LLVMAppendBasicBlockInContext(g->M->llctx, fn, "cw");
  LLVMBasicBlockRef bph = LLVMAppendBasicBlockInContext(g->M->llctx, fn, "ph");
  LLVMBasicBlockRef bend = LLVMAppendBasicBlockInContext(g->M->llctx, fn, "reduced");
  V use_ph =
      mg_and(g, mg_fcmp(g, LLVMRealOGE, ax, mg_k(g, 0x1p20)), mg_lt(g, ax, mg_k(g, INFINITY)));
  LLVMBuildCondBr(g->b, use_ph, bph, bcw);

  LLVMPositionBuilderAtEnd(g->b, bcw);
  V kd = mg_rint(g, mg_mul(g, ax, mg_k(g, TWO_OVER_PI)));
  V t1 = mg_fma(g, mg_neg(g, kd), mg_k(g, PIO2_1), ax); /* exact */
  mg_dd w = mg_two_prod(g, kd, mg_k(g, PIO2_2));
  mg_dd s = mg_two_sum(g, t1, mg_neg(g, w.hi));
  V l = mg_fma(g, mg_neg(g, kd), mg_k(g, PIO2_3), mg_sub(g, s.lo, w.lo));
  mg_dd cw = mg_fast_two_sum(g, s.hi, l);
  V qcw = mg_toint(g, kd);
  LLVMBuildBr(g->b, bend);
  LLVMBasicBlockRef cw_end = LLVMGetInsertBlock(g->b);

  LLVMPositionBuilderAtEnd(g->b, bph);
  mg_dd ph;
  V qph;
  mg_reduce_ph(g, ax, &ph, &qph);
  LLVMBuildBr(g->b, bend);
  LLVMBasicBlockRef ph_end = LLVMGetInsertBlock(g->b);

  LLVMPositionBuilderAtEnd(g->b, bend);
  LLVMBasicBlockRef from[2] = {cw_end, ph_end};
  V phi_hi = LLVMBuildPhi(g->b, g->d, ""), phi_lo = LLVMBuildPhi(g->b, g->d, "");
  V phi_q = LLVMBuildPhi(g->b, g->i64, "");
  V vh[2] = {cw.hi, ph.hi}, vl[2] = {cw.lo, ph.lo}, vq[2] = {qcw, qph};
  LLVMAddIncoming(phi_hi, vh, from, 2);
  LLVMAddIncoming(phi_lo, vl, from, 2);
  LLVMAddIncoming(phi_q, vq, from, 2);
  r->hi = phi_hi;
  r->lo = phi_lo;
  *q = mg_and(g, phi_q, mg_ki(g, 3));
}

/* sin(r + rl) and cos(r + rl) for |r| <= pi/4, as double-doubles. */
static mg_dd mg_sin_poly(mg *g, V r, V rl) {
  double c[10];
  mg_taylor(c, 10, 3, 2, true); /* 1/3!, -1/5!, ..., -1/21!: negated below */
  for (int i = 0; i < 10; i++)
    c[i] = -c[i];
  V z = mg_mul(g, r, r);
  V tail = mg_fma(g, mg_mul(g, r, z), mg_poly(g, z, c, 10),
                  mg_mul(g, rl, mg_fma(g, mg_k(g, -0.5), z, mg_k(g, 1))));
  return mg_fast_two_sum(g, r, tail);
}
static mg_dd mg_cos_poly(mg *g, V r, V rl) {
  double c[10];
  mg_taylor(c, 10, 4, 2, true); /* 1/4!, -1/6!, ..., -1/22! */
  V z = mg_mul(g, r, r);
  V hz = mg_mul(g, mg_k(g, 0.5), z);
  V w = mg_sub(g, mg_k(g, 1), hz);
  V err = mg_sub(g, mg_sub(g, mg_k(g, 1), w), hz); /* exact rounding error of w */
  V tail = mg_fma(g, mg_mul(g, z, z), mg_poly(g, z, c, 10), mg_fma(g, mg_neg(g, r), rl, err));
  return mg_fast_two_sum(g, w, tail);
}

typedef enum { MG_SIN, MG_COS, MG_TAN } mg_trig_kind;

static V mg_trig(mg *g, V x, mg_trig_kind which) {
  mg_dd r;
  V q;
  mg_reduce_pio2(g, mg_fabs(g, x), &r, &q);
  mg_dd S = mg_sin_poly(g, r.hi, r.lo), C = mg_cos_poly(g, r.hi, r.lo);
  V odd = LLVMBuildTrunc(g->b, q, g->i1, "");
  V upper = mg_icmp(g, LLVMIntUGE, q, mg_ki(g, 2)); /* quadrants 2 and 3 */
  V res;
  if (which == MG_TAN) { /* S / C, or -C / S */
    mg_dd n = {mg_sel(g, odd, C.hi, S.hi), mg_sel(g, odd, C.lo, S.lo)};
    mg_dd d = {mg_sel(g, odd, S.hi, C.hi), mg_sel(g, odd, S.lo, C.lo)};
    mg_dd t = mg_div_dd(g, n.hi, n.lo, d.hi, d.lo);
    res = mg_add(g, t.hi, t.lo);
    res = mg_sel(g, odd, mg_neg(g, res), res);
  } else if (which == MG_SIN) { /* S, C, -S, -C */
    res = mg_sel(g, odd, C.hi, S.hi);
    res = mg_sel(g, upper, mg_neg(g, res), res);
  } else { /* C, -S, -C, S */
    res = mg_sel(g, odd, S.hi, C.hi);
    V negate = LLVMBuildXor(g->b, upper, odd, "");
    return mg_sel(g, negate, mg_neg(g, res), res);
  }
  return mg_sel(g, mg_signbit(g, x), mg_neg(g, res), res);
}

static V mg_sin(mg *g, V x) {
  return mg_trig(g, x, MG_SIN);
}
static V mg_cos(mg *g, V x) {
  return mg_trig(g, x, MG_COS);
}
static V mg_tan(mg *g, V x) {
  return mg_trig(g, x, MG_TAN);
}

/* ---- inverse trigonometric functions ---- */

/* atan(i/8) and pi/2 - atan(i/8), i = 0..8, as double-doubles. */
static const double mg_atan_hi[18] = {
    0x0.0p+0,
    0x1.fd5ba9aac2f6ep-4,
    0x1.f5b75f92c80ddp-3,
    0x1.6f61941e4def1p-2,
    0x1.dac670561bb4fp-2,
    0x1.1e00babdefeb4p-1,
    0x1.4978fa3269ee1p-1,
    0x1.700a7c5784634p-1,
    0x1.921fb54442d18p-1,
    0x1.921fb54442d18p+0,
    0x1.7249faa996a21p+0,
    0x1.5368c951e9cfdp+0,
    0x1.3647503caf55cp+0,
    0x1.1b6e192ebbe44p+0,
    0x1.031f57e54adbep+0,
    0x1.dac670561bb4fp-1,
    0x1.b434ee31013fdp-1,
    0x1.921fb54442d18p-1,
};
static const double mg_atan_lo[18] = {
    0x0.0p+0,
    -0x1.cd37686760c17p-59,
    0x1.8ab6e3cf7afbdp-57,
    -0x1.c63aae6f6e918p-56,
    0x1.a2b7f222f65e2p-56,
    -0x1.928df287a668fp-58,
    0x1.2419a87f2a458p-56,
    -0x1.8c34d25aadef6p-56,
    0x1.1a62633145c07p-55,
    0x1.1a62633145c07p-54,
    0x1.a8cc1e7480c68p-54,
    -0x1.96f47948a99f1p-54,
    0x1.17e21d9a42c9ap-55,
    0x1.b1b466a88828ep-54,
    0x1.338b4259c0270p-54,
    0x1.a2b7f222f65e2p-55,
    -0x1.0520d0701d877p-55,
    0x1.1a62633145c07p-55,
};

/* atan(t + tl) for t >= 0 (inf and NaN included) as a double-double; tl
 * is a small correction of t (ignored unless finite). */
static mg_dd mg_atan_dd(mg *g, V t, V tl) {
  /* atan(t + tl) = atan t + tl / (1 + t^2); beyond 2^60 nothing moves
   * pi/2 - 1/t away from pi/2 */
  V huge = mg_gt(g, t, mg_k(g, 0x1p60));
  V tl_ok = mg_and(g, mg_lt(g, mg_fabs(g, tl), mg_k(g, INFINITY)), mg_not(g, huge));
  V corr = mg_sel(g, tl_ok, mg_div(g, tl, mg_fma(g, t, t, mg_k(g, 1))), mg_k(g, 0));
  t = mg_sel(g, huge, mg_k(g, 0x1p60), t);
  V inv = mg_gt(g, t, mg_k(g, 1));
  V tt = mg_sel(g, inv, mg_div(g, mg_k(g, 1), t), t);
  V i = mg_toint(g, mg_rint(g, mg_mul(g, tt, mg_k(g, 8))));
  V c = mg_mul(g, mg_tod(g, i), mg_k(g, 0.125));
  /* u = (t - c) / (1 + t c) (t - c exact: Sterbenz, or c = 0), or for
   * 1/t: (1 - c t) / (t + c), both as double-doubles */
  mg_dd ct = mg_two_prod(g, c, t);
  mg_dd one_p = mg_two_sum(g, mg_k(g, 1), ct.hi);
  mg_dd one_m = mg_two_sum(g, mg_k(g, 1), mg_neg(g, ct.hi));
  mg_dd tpc = mg_two_sum(g, t, c);
  V nh = mg_sel(g, inv, one_m.hi, mg_sub(g, t, c));
  V nl = mg_sel(g, inv, mg_sub(g, one_m.lo, ct.lo), mg_k(g, 0));
  V dh = mg_sel(g, inv, tpc.hi, one_p.hi);
  V dl = mg_sel(g, inv, tpc.lo, mg_add(g, one_p.lo, ct.lo));
  mg_dd u = mg_div_dd(g, nh, nl, dh, dl);
  V idx = mg_sel(g, inv, mg_iadd(g, i, mg_ki(g, 9)), i);
  V bh = mg_load_idx(g, mg_table_f64(g, "arrayc.gpu.atan_hi", mg_atan_hi, 18), g->d, idx);
  V bl = mg_load_idx(g, mg_table_f64(g, "arrayc.gpu.atan_lo", mg_atan_lo, 18), g->d, idx);
  double c7[7];
  for (int k = 0; k < 7; k++)
    c7[k] = (k & 1 ? 1.0 : -1.0) / (3 + 2 * k); /* -1/3, 1/5, ... */
  V z = mg_mul(g, u.hi, u.hi);
  /* atan(u + ul) = u + (u^3 P(u^2) + ul / (1 + u^2)) */
  V pu = mg_fma(g, mg_mul(g, u.hi, z), mg_poly(g, z, c7, 7),
                mg_div(g, u.lo, mg_add(g, mg_k(g, 1), z)));
  mg_dd a = mg_two_sum(g, u.hi, pu);
  /* base +- atan u, + the correction */
  V ah = mg_sel(g, inv, mg_neg(g, a.hi), a.hi), al = mg_sel(g, inv, mg_neg(g, a.lo), a.lo);
  mg_dd h = mg_two_sum(g, bh, ah);
  return mg_fast_two_sum(g, h.hi, mg_add(g, h.lo, mg_add(g, mg_add(g, bl, al), corr)));
}

static V mg_atan(mg *g, V x) {
  mg_dd a = mg_atan_dd(g, mg_fabs(g, x), mg_k(g, 0));
  return mg_copysign(g, mg_add(g, a.hi, a.lo), x);
}

/* asin x = atan(|x| / sqrt(1 - x^2)) with 1 - x^2 exact as a double-double. */
static V mg_asin(mg *g, V x) {
  V ax = mg_fabs(g, x);
  mg_dd p = mg_two_prod(g, ax, ax);
  mg_dd d = mg_two_sum(g, mg_k(g, 1), mg_neg(g, p.hi));
  mg_dd s = mg_sqrt_dd(g, d.hi, mg_sub(g, d.lo, p.lo));
  mg_dd w = mg_div_dd(g, ax, mg_k(g, 0), s.hi, s.lo);
  mg_dd a = mg_atan_dd(g, w.hi, w.lo);
  return mg_copysign(g, mg_add(g, a.hi, a.lo), x);
}

/* acos x = 2 atan(sqrt((1 - x) / (1 + x))), the quotient as a
 * double-double. */
static V mg_acos(mg *g, V x) {
  mg_dd n = mg_two_sum(g, mg_k(g, 1), mg_neg(g, x));
  mg_dd d = mg_two_sum(g, mg_k(g, 1), x);
  mg_dd q = mg_div_dd(g, n.hi, n.lo, d.hi, d.lo);
  mg_dd w = mg_sqrt_dd(g, q.hi, q.lo);
  mg_dd a = mg_atan_dd(g, w.hi, w.lo);
  return mg_mul(g, mg_k(g, 2), mg_add(g, a.hi, a.lo));
}

static V mg_atan2(mg *g, V y, V x) {
  V ay = mg_fabs(g, y), ax = mg_fabs(g, x);
  mg_dd t = mg_div_dd(g, ay, mg_k(g, 0), ax, mg_k(g, 0));
  V inf = mg_k(g, INFINITY), zero = mg_k(g, 0);
  V both_inf = mg_and(g, mg_eq(g, ay, inf), mg_eq(g, ax, inf));
  V both_zero = mg_and(g, mg_eq(g, ay, zero), mg_eq(g, ax, zero));
  V th = mg_sel(g, both_inf, mg_k(g, 1), mg_sel(g, both_zero, zero, t.hi));
  /* the correction is meaningless when the quotient is not a normal
   * number (overflow, underflow) */
  V normal = mg_and(g, mg_gt(g, th, mg_k(g, 0x1p-1000)), mg_lt(g, th, mg_k(g, 0x1p1000)));
  mg_dd a = mg_atan_dd(g, th, mg_sel(g, normal, t.lo, zero));
  /* x negative (or -0): pi - atan */
  V h2 = mg_sub(g, mg_k(g, PI_HI), a.hi);
  V l2 = mg_add(g, mg_sub(g, mg_sub(g, mg_k(g, PI_HI), h2), a.hi), mg_sub(g, mg_k(g, PI_LO), a.lo));
  V r = mg_sel(g, mg_signbit(g, x), mg_add(g, h2, l2), mg_add(g, a.hi, a.lo));
  return mg_copysign(g, r, y);
}

/* ---- hyperbolic functions ---- */

/* e^a / 2 = e^(a - ln 2) for a >= 22 (finite up to a = 710.47), with
 * a - ln 2 as a double-double. */
static V mg_half_exp_big(mg *g, V a) {
  mg_dd h = mg_two_sum(g, a, mg_k(g, -LN2_D));
  V k, p = mg_exp_core(g, h.hi, mg_sub(g, h.lo, mg_k(g, LN2_DL)), &k);
  return mg_scale(g, p, k);
}

/* sinh x = (E + E / (E + 1)) / 2 with E = expm1 |x| below 22 (no
 * cancellation), in double-doubles. */
static V mg_sinh(mg *g, V x) {
  V a = mg_fabs(g, x);
  V small_a = mg_lt(g, a, mg_k(g, 22));
  mg_dd E = mg_expm1_dd(g, mg_sel(g, small_a, a, mg_k(g, 0)));
  mg_dd d = mg_two_sum(g, E.hi, mg_k(g, 1));
  mg_dd q = mg_div_dd(g, E.hi, E.lo, d.hi, mg_add(g, d.lo, E.lo));
  mg_dd s = mg_two_sum(g, E.hi, q.hi);
  V small = mg_mul(g, mg_k(g, 0.5), mg_add(g, s.hi, mg_add(g, s.lo, mg_add(g, E.lo, q.lo))));
  V r = mg_sel(g, small_a, small, mg_half_exp_big(g, a));
  return mg_copysign(g, r, x);
}

/* cosh x = (e + 1/e) / 2 with e = e^|x| as a double-double below 22. */
static V mg_cosh(mg *g, V x) {
  V a = mg_fabs(g, x);
  V small_a = mg_lt(g, a, mg_k(g, 22));
  V k;
  mg_dd p = mg_exp_core_dd(g, mg_sel(g, small_a, a, mg_k(g, 0)), mg_k(g, 0), &k);
  mg_dd e = {mg_scale(g, p.hi, k), mg_scale(g, p.lo, k)}; /* exact: e >= 1 */
  mg_dd inv = mg_div_dd(g, mg_k(g, 1), mg_k(g, 0), e.hi, e.lo);
  mg_dd s = mg_fast_two_sum(g, e.hi, inv.hi);
  V small = mg_mul(g, mg_k(g, 0.5), mg_add(g, s.hi, mg_add(g, s.lo, mg_add(g, e.lo, inv.lo))));
  return mg_sel(g, small_a, small, mg_half_exp_big(g, a));
}

/* tanh x = E / (E + 2) with E = expm1 2|x|, in double-doubles; 1 beyond
 * 22. */
static V mg_tanh(mg *g, V x) {
  V a = mg_fabs(g, x);
  V big = mg_gt(g, a, mg_k(g, 22));
  mg_dd E = mg_expm1_dd(g, mg_mul(g, mg_k(g, 2), mg_sel(g, big, mg_k(g, 0), a)));
  mg_dd d = mg_two_sum(g, E.hi, mg_k(g, 2));
  mg_dd q = mg_div_dd(g, E.hi, E.lo, d.hi, mg_add(g, d.lo, E.lo));
  V r = mg_sel(g, big, mg_k(g, 1), mg_add(g, q.hi, q.lo));
  return mg_copysign(g, r, x);
}

/* ---- erf, erfc ---- */

/* erfcx(x) = e^(x^2) erfc(x) on [1/2, 8): Chebyshev fits (mpmath chebyfit,
 * 22 terms, fit error < 2^-58 relative) on [1/2,1) [1,2) [2,4) [4,8) in
 * s = x 2^(1-e) - 3 in [-1, 1), lowest degree first. */
#define MG_ERFCX_N 22
static const double mg_erfcx[4 * MG_ERFCX_N] = {
    0x1.038d54ea3d834p-1,  -0x1.78cdd551ee51ap-4,  0x1.d90093ae10928p-7,  -0x1.09e77d40e0239p-9,
    0x1.1192f5bd6877dp-12, -0x1.054d68295b244p-15, 0x1.d43a7c7a661b3p-19, -0x1.8c97dd4ea4906p-22,
    0x1.3f81897ce8652p-25, -0x1.ec0cf4e3344b9p-29, 0x1.6b982c1d4a62bp-32, -0x1.02b1604028e4ap-35,
    0x1.6372355c89955p-39, -0x1.d8bafbaea51b3p-43, 0x1.30ecbdb1ed37cp-46, -0x1.7e469e23c368ap-50,
    0x1.d27f4212186adp-54, -0x1.15777b028f528p-57, 0x1.4214430f1a460p-61, -0x1.6d78fe8f5e6b8p-65,
    0x1.a009a3b3d7466p-69, -0x1.c3cda7d405a3ap-73, 0x1.494daffa2ad68p-2,  -0x1.4f1988444caf7p-4,
    0x1.37ea271bc54bdp-6,  -0x1.0dc51d2941e6dp-8,  0x1.b65944f34f7adp-11, -0x1.513ed7600d1c1p-13,
    0x1.ee705e736463cp-16, -0x1.5b0abfe65a326p-18, 0x1.d4509d0d4281fp-21, -0x1.30c0ec743c47cp-23,
    0x1.7f997922bc632p-26, -0x1.d4157188212dap-29, 0x1.156c93a1e0e3dp-31, -0x1.4004f02a762e3p-34,
    0x1.67cf4505fecb4p-37, -0x1.8adc028c4f895p-40, 0x1.a7815567b6378p-43, -0x1.bc5eab92cd5fep-46,
    0x1.c7329e350d12dp-49, -0x1.caa5b00ad6e34p-52, 0x1.ec5233873d812p-55, -0x1.dc7462edbbc81p-58,
    0x1.6e9827d229d2dp-3,  -0x1.bd6ae4d14b16fp-5,  0x1.043fe1a98c0cdp-6,  -0x1.259061ba85692p-8,
    0x1.409cc2ed3ff31p-10, -0x1.53dec9d08957bp-12, 0x1.5e73930481c7cp-14, -0x1.6025103c17179p-16,
    0x1.595f1b5f62556p-18, -0x1.4b1462877e572p-20, 0x1.3699043f265d5p-22, -0x1.1d7913fabd320p-24,
    0x1.0150a4318885dp-26, -0x1.c75227b0b98a0p-29, 0x1.8bba0e32339d5p-31, -0x1.522424a8e7909p-33,
    0x1.1ca1848ccf70fp-35, -0x1.d702714aa4fe0p-38, 0x1.76b837ca50cd3p-40, -0x1.2d603e8e53abdp-42,
    0x1.2c8a181a21404p-44, -0x1.d30fc9b85e9f7p-47, 0x1.7c0348489d721p-4,  -0x1.ed7f66d9d09fep-6,
    0x1.3c7764a81f453p-7,  -0x1.9106a7cd79e2cp-9,  0x1.f64cd9c07dc28p-11, -0x1.370d06417898fp-12,
    0x1.7d0e03ec8b2b5p-14, -0x1.cde4cecbb11a2p-16, 0x1.151346e8ae22cp-17, -0x1.491bb11845652p-19,
    0x1.832004ec3d6e4p-21, -0x1.c312b391f19fap-23, 0x1.0461f39621b5ap-24, -0x1.29e7ea64ec2e6p-26,
    0x1.519ffa4478e24p-28, -0x1.7ba3218ba50eap-30, 0x1.aba7e0d93601cp-32, -0x1.d8b4cc0837307p-34,
    0x1.d27c095dabbc0p-36, -0x1.fd76e574c83dap-38, 0x1.c2ad9ac6b4efap-39, -0x1.e0432d2d9df09p-41,
};
/* The low parts of the constant terms above (c0 = hi + lo). */
static const double mg_erfcx_c0lo[4] = {
    -0x1.ec2134d8512a3p-55,
    0x1.39bdf16222087p-56,
    -0x1.905ed9b0fb91ep-58,
    0x1.d28d60d8c96ebp-58,
};
/* x sqrt(pi) erfcx(x) for x >= 8 as a polynomial in t = 1/x^2 on
 * (0, 1/64] (chebyfit, 11 terms, error < 2^-65). */
static const double mg_erfcx_tail[11] = {
    0x1.0000000000000p+0,  -0x1.ffffffffffffbp-2,  0x1.7ffffffffe718p-1,  -0x1.dffffffcf1cebp+0,
    0x1.a3fffe74e4787p+2,  -0x1.d87f8b0314f4ep+4,  0x1.44cd20b979902p+7,  -0x1.07479156bc25bp+10,
    0x1.e19cb491d01c9p+12, -0x1.b74e7948d1183p+15, 0x1.137ac145cca99p+18,
};

/* erfc x for x >= 1/2 as a double-double (NaN stays NaN; x is clamped to
 * 30, beyond which erfc is 0). */
static mg_dd mg_erfc_pos(mg *g, V x) {
  x = mg_sel(g, mg_gt(g, x, mg_k(g, 30)), mg_k(g, 30), x);
  /* erfcx from the table: interval i = e + 1 of x = 1.m 2^e */
  V e = mg_isub(g, mg_lshr(g, mg_bits(g, x), mg_ki(g, 52)), mg_ki(g, 1023));
  V i = mg_iadd(g, e, mg_ki(g, 1));
  i = mg_sel(g, mg_icmp(g, LLVMIntSGT, i, mg_ki(g, 3)), mg_ki(g, 3),
             mg_sel(g, mg_icmp(g, LLVMIntSLT, i, mg_ki(g, 0)), mg_ki(g, 0), i));
  V s = mg_sub(g, mg_mul(g, x, mg_pow2(g, mg_isub(g, mg_ki(g, 2), i))), mg_k(g, 3));
  V tab = mg_table_f64(g, "arrayc.gpu.erfcx", mg_erfcx, 4 * MG_ERFCX_N);
  V base = mg_imul(g, i, mg_ki(g, MG_ERFCX_N));
  V q = mg_load_idx(g, tab, g->d, mg_iadd(g, base, mg_ki(g, MG_ERFCX_N - 1)));
  for (int j = MG_ERFCX_N - 1; j-- > 1;)
    q = mg_fma(g, q, s, mg_load_idx(g, tab, g->d, mg_iadd(g, base, mg_ki(g, j))));
  /* the last step c0 + s q in double-double, c0 exact to 2^-106 */
  mg_dd sq = mg_two_prod(g, s, q);
  V c0 = mg_load_idx(g, tab, g->d, base);
  V c0l = mg_load_idx(g, mg_table_f64(g, "arrayc.gpu.erfcx_c0lo", mg_erfcx_c0lo, 4), g->d, i);
  mg_dd pc = mg_two_sum(g, c0, sq.hi);
  mg_dd p = mg_fast_two_sum(g, pc.hi, mg_add(g, pc.lo, mg_add(g, sq.lo, c0l)));
  /* beyond 8: g(t) / (x sqrt(pi)), t = 1/x^2, g = 1 + t (...) */
  V t = mg_div(g, mg_k(g, 1), mg_mul(g, x, x));
  mg_dd gt = mg_fast_two_sum(g, mg_k(g, 1), mg_mul(g, t, mg_poly(g, t, mg_erfcx_tail + 1, 10)));
  mg_dd v = mg_two_prod(g, gt.hi, mg_k(g, RSQRTPI_HI));
  V vl = mg_fma(g, gt.hi, mg_k(g, RSQRTPI_LO), mg_fma(g, gt.lo, mg_k(g, RSQRTPI_HI), v.lo));
  mg_dd w = mg_div_dd(g, v.hi, vl, x, mg_k(g, 0));
  V near = mg_lt(g, x, mg_k(g, 8));
  V fh = mg_sel(g, near, p.hi, w.hi), fl = mg_sel(g, near, p.lo, w.lo);
  /* e^(-x^2) with x^2 as a double-double, times erfcx as double-doubles,
   * before the final scaling so that a subnormal result rounds once */
  mg_dd x2 = mg_two_prod(g, x, x);
  V k;
  mg_dd ex = mg_exp_core_dd(g, mg_neg(g, x2.hi), mg_neg(g, x2.lo), &k);
  mg_dd m = mg_two_prod(g, ex.hi, fh);
  V ml = mg_add(g, m.lo, mg_fma(g, ex.hi, fl, mg_mul(g, ex.lo, fh)));
  mg_dd r = mg_fast_two_sum(g, m.hi, ml);
  return (mg_dd){mg_scale(g, r.hi, k), mg_scale(g, r.lo, k)};
}

/* erf x for |x| < 1 by its Taylor series, 2/sqrt(pi) sum (-1)^n
 * x^(2n+1) / (n! (2n + 1)) to n = 18, as a double-double: x^2, 1 + the
 * rest, and the products carry their rounding errors. */
static mg_dd mg_erf_small(mg *g, V x) {
  double c[18], fact = 1;
  for (int n = 1; n <= 18; n++) {
    fact *= n;
    c[n - 1] = (n & 1 ? -1.0 : 1.0) / (fact * (2 * n + 1));
  }
  mg_dd z = mg_two_prod(g, x, x);
  V p1 = mg_poly(g, z.hi, c, 18);
  V t = mg_fma(g, z.hi, p1, mg_mul(g, z.lo, p1));
  mg_dd S = mg_fast_two_sum(g, mg_k(g, 1), t);
  mg_dd r = mg_two_prod(g, x, S.hi);
  V rl = mg_fma(g, x, S.lo, r.lo);
  mg_dd q = mg_two_prod(g, r.hi, mg_k(g, TWO_SQRTPI_HI));
  V ql = mg_add(g, q.lo,
                mg_fma(g, r.hi, mg_k(g, TWO_SQRTPI_LO), mg_mul(g, rl, mg_k(g, TWO_SQRTPI_HI))));
  return mg_fast_two_sum(g, q.hi, ql);
}

/* 1 - (h + l) */
static V mg_one_minus(mg *g, mg_dd v) {
  mg_dd d = mg_two_sum(g, mg_k(g, 1), mg_neg(g, v.hi));
  return mg_add(g, d.hi, mg_sub(g, d.lo, v.lo));
}

/* erf x: the series below 1/2 (where it barely alternates), 1 - erfc x
 * above (erfc x <= 0.48 there). */
static V mg_erf(mg *g, V x) {
  V ax = mg_fabs(g, x);
  V half = mg_k(g, 0.5);
  V lth = mg_lt(g, ax, half);
  mg_dd small = mg_erf_small(g, mg_sel(g, lth, ax, mg_k(g, 0)));
  V big = mg_one_minus(g, mg_erfc_pos(g, mg_sel(g, lth, half, ax)));
  return mg_copysign(g, mg_sel(g, lth, mg_add(g, small.hi, small.lo), big), x);
}

static V mg_erfc(mg *g, V x) {
  V ax = mg_fabs(g, x);
  V half = mg_k(g, 0.5);
  V lth = mg_lt(g, ax, half);
  V small = mg_one_minus(g, mg_erf_small(g, mg_sel(g, lth, x, mg_k(g, 0))));
  mg_dd E = mg_erfc_pos(g, mg_sel(g, lth, half, ax));
  mg_dd two_m = mg_two_sum(g, mg_k(g, 2), mg_neg(g, E.hi)); /* 2 - erfc(-x) */
  V neg_side = mg_add(g, two_m.hi, mg_sub(g, two_m.lo, E.lo));
  V r = mg_sel(g, mg_gt(g, x, mg_k(g, 0)), mg_add(g, E.hi, E.lo), neg_side);
  return mg_sel(g, lth, small, r);
}

/* ---- hypot, cbrt, fmod ---- */

static V mg_hypot(mg *g, V x, V y) {
  V a = mg_fabs(g, x), b = mg_fabs(g, y);
  V agt = mg_gt(g, a, b);
  V big = mg_sel(g, agt, a, b), small = mg_sel(g, agt, b, a);
  /* scale by 2^-600 / 2^600 so that the squares neither overflow nor
   * lose bits to underflow (the smaller one only when it is negligible) */
  V huge = mg_gt(g, big, mg_k(g, 0x1p500)), tiny = mg_lt(g, big, mg_k(g, 0x1p-500));
  V sc = mg_sel(g, huge, mg_k(g, 0x1p-600), mg_sel(g, tiny, mg_k(g, 0x1p600), mg_k(g, 1)));
  V un = mg_sel(g, huge, mg_k(g, 0x1p600), mg_sel(g, tiny, mg_k(g, 0x1p-600), mg_k(g, 1)));
  V B = mg_mul(g, big, sc), S = mg_mul(g, small, sc);
  /* B^2 + S^2 and its square root as double-doubles */
  mg_dd b2 = mg_two_prod(g, B, B), s2 = mg_two_prod(g, S, S);
  mg_dd q = mg_two_sum(g, b2.hi, s2.hi);
  mg_dd r = mg_sqrt_dd(g, q.hi, mg_add(g, q.lo, mg_add(g, b2.lo, s2.lo)));
  V h = mg_mul(g, mg_add(g, r.hi, r.lo), un);
  V inf = mg_k(g, INFINITY);
  return mg_sel(g, mg_or(g, mg_eq(g, a, inf), mg_eq(g, b, inf)), inf, h);
}

static V mg_cbrt(mg *g, V x) {
  V a = mg_fabs(g, x);
  V sub_ = mg_lt(g, a, mg_k(g, 0x1p-1022));
  V as = mg_sel(g, sub_, mg_mul(g, a, mg_k(g, 0x1p54)), a);
  /* exponent / 3 by integer division of the bits: within 3.2% */
  V y = mg_from_bits(g, mg_iadd(g, LLVMBuildUDiv(g->b, mg_bits(g, as), mg_ki(g, 3), ""),
                                mg_ki(g, 0x2a9f78939b40fa00LL)));
  for (int i = 0; i < 3; i++) /* Newton: y += (a / y^2 - y) / 3 */
    y = mg_fma(g, mg_sub(g, mg_div(g, as, mg_mul(g, y, y)), y), mg_k(g, 1.0 / 3), y);
  /* last step with the residual y^3 - a computed by FMA */
  mg_dd y2 = mg_two_prod(g, y, y);
  V res = mg_fma(g, y2.lo, y, mg_fma(g, y2.hi, y, mg_neg(g, as)));
  y = mg_sub(g, y, mg_div(g, res, mg_mul(g, mg_k(g, 3), y2.hi)));
  y = mg_sel(g, sub_, mg_mul(g, y, mg_k(g, 0x1p-18)), y);
  V special = mg_or(g, mg_eq(g, a, mg_k(g, 0)), mg_fcmp(g, LLVMRealUEQ, a, mg_k(g, INFINITY)));
  return mg_copysign(g, mg_sel(g, special, a, y), x);
}

/* Mantissa (53 bits, normalised) and exponent of finite |v| > 0: |v| =
 * m 2^(e - 1075). */
static void mg_unpack(mg *g, V v, V *m, V *e) {
  V b = mg_bits(g, v);
  V be = mg_lshr(g, b, mg_ki(g, 52));
  V frac = mg_and(g, b, mg_ki(g, 0xFFFFFFFFFFFFF));
  V sub_ = mg_icmp(g, LLVMIntEQ, be, mg_ki(g, 0));
  V lz = mg_isub(g, mg_ctlz(g, frac), mg_ki(g, 11)); /* subnormal: shift to bit 52 */
  V lzs = mg_sel(g, sub_, mg_and(g, lz, mg_ki(g, 63)), mg_ki(g, 0));
  *m = mg_sel(g, sub_, mg_shl(g, frac, lzs), LLVMBuildOr(g->b, frac, mg_ki(g, 1LL << 52), ""));
  *e = mg_sel(g, sub_, mg_isub(g, mg_ki(g, 1), lzs), be);
}

/* fmod x y exactly: |x| = mx 2^ex, |y| = my 2^ey; mx 2^(ex - ey) mod my
 * by steps of 11 bits (mx < my < 2^53, so mx << 11 fits in 64 bits). */
static V mg_fmod(mg *g, V x, V y) {
  LLVMContextRef C = g->M->llctx;
  V ax = mg_fabs(g, x), ay = mg_fabs(g, y);
  LLVMBasicBlockRef bspecial = LLVMAppendBasicBlockInContext(C, g->fn, "special");
  LLVMBasicBlockRef bwork = LLVMAppendBasicBlockInContext(C, g->fn, "work");
  LLVMBasicBlockRef bhead = LLVMAppendBasicBlockInContext(C, g->fn, "head");
  LLVMBasicBlockRef bbody = LLVMAppendBasicBlockInContext(C, g->fn, "body");
  LLVMBasicBlockRef bdone = LLVMAppendBasicBlockInContext(C, g->fn, "done");
  /* NaN operands, x infinite or y zero: NaN; |x| < |y| (y infinite
   * included): x */
  V nan = mg_or(g, mg_or(g, mg_isnan(g, x), mg_isnan(g, y)),
                mg_or(g, mg_eq(g, ax, mg_k(g, INFINITY)), mg_eq(g, ay, mg_k(g, 0))));
  V small = mg_lt(g, ax, ay);
  V easy = mg_or(g, nan, small);
  LLVMBuildCondBr(g->b, easy, bspecial, bwork);

  LLVMPositionBuilderAtEnd(g->b, bspecial);
  LLVMBuildRet(g->b, mg_sel(g, nan, mg_k(g, NAN), x));

  LLVMPositionBuilderAtEnd(g->b, bwork);
  V mx, ex, my, ey;
  mg_unpack(g, ax, &mx, &ex);
  mg_unpack(g, ay, &my, &ey);
  V r0 = LLVMBuildURem(g->b, mx, my, "");
  V d0 = mg_isub(g, ex, ey);
  LLVMBuildBr(g->b, bhead);

  LLVMPositionBuilderAtEnd(g->b, bhead);
  V r = LLVMBuildPhi(g->b, g->i64, "r"), d = LLVMBuildPhi(g->b, g->i64, "d");
  LLVMBuildCondBr(g->b, mg_icmp(g, LLVMIntSGT, d, mg_ki(g, 0)), bbody, bdone);

  LLVMPositionBuilderAtEnd(g->b, bbody);
  V s = mg_sel(g, mg_icmp(g, LLVMIntSGT, d, mg_ki(g, 11)), mg_ki(g, 11), d);
  V r1 = LLVMBuildURem(g->b, mg_shl(g, r, s), my, "");
  V d1 = mg_isub(g, d, s);
  LLVMBuildBr(g->b, bhead);
  V rin[2] = {r0, r1}, din[2] = {d0, d1};
  LLVMBasicBlockRef from[2] = {bwork, bbody};
  LLVMAddIncoming(r, rin, from, 2);
  LLVMAddIncoming(d, din, from, 2);

  LLVMPositionBuilderAtEnd(g->b, bdone);
  /* r 2^(ey - 1075) is the exact result; scale in two steps when 2^(ey -
   * 1075) itself is below the normal range */
  V p = mg_isub(g, ey, mg_ki(g, 1075));
  V low = mg_icmp(g, LLVMIntSLT, p, mg_ki(g, -1000));
  V v = mg_mul(g, mg_utod(g, r), mg_pow2(g, mg_sel(g, low, mg_iadd(g, p, mg_ki(g, 600)), p)));
  v = mg_sel(g, low, mg_mul(g, v, mg_k(g, 0x1p-600)), v);
  return mg_copysign(g, v, x);
}

/* ---- the fallback functions ---- */

typedef V (*mg_fn1)(mg *g, V x);
typedef V (*mg_fn2)(mg *g, V x, V y);

/* The operations: libdevice's name (without __nv_ and the f suffix) and
 * the generator of the fallback "arrayc.gpu.<name>". */
typedef struct mg_op {
  ir_op op;
  const char *name;
  mg_fn1 f1; /* one operand */
  mg_fn2 f2; /* two */
} mg_op;

static const mg_op mg_ops[] = {
    {IR_CBRT, "cbrt", mg_cbrt, NULL},    {IR_EXP, "exp", mg_exp, NULL},
    {IR_EXP2, "exp2", mg_exp2, NULL},    {IR_EXPM1, "expm1", mg_expm1, NULL},
    {IR_LOG, "log", mg_log, NULL},       {IR_LOG2, "log2", mg_log2, NULL},
    {IR_LOG10, "log10", mg_log10, NULL}, {IR_LOG1P, "log1p", mg_log1p, NULL},
    {IR_SIN, "sin", mg_sin, NULL},       {IR_COS, "cos", mg_cos, NULL},
    {IR_TAN, "tan", mg_tan, NULL},       {IR_ASIN, "asin", mg_asin, NULL},
    {IR_ACOS, "acos", mg_acos, NULL},    {IR_ATAN, "atan", mg_atan, NULL},
    {IR_SINH, "sinh", mg_sinh, NULL},    {IR_COSH, "cosh", mg_cosh, NULL},
    {IR_TANH, "tanh", mg_tanh, NULL},    {IR_ERF, "erf", mg_erf, NULL},
    {IR_ERFC, "erfc", mg_erfc, NULL},    {IR_POW, "pow", NULL, mg_pow},
    {IR_ATAN2, "atan2", NULL, mg_atan2}, {IR_HYPOT, "hypot", NULL, mg_hypot},
    {IR_REM, "fmod", NULL, mg_fmod},
};

static const mg_op *mg_find(ir_op op) {
  for (size_t i = 0; i < sizeof mg_ops / sizeof mg_ops[0]; i++)
    if (mg_ops[i].op == op)
      return &mg_ops[i];
  return NULL;
}

bool cg_gpu_math_op(ir_op op) {
  return mg_find(op) != NULL;
}

/* The function `name` of o's arity over type t, declared once; a
 * definition is generated for fallbacks (`gen`). */
static LLVMValueRef mg_function(cg_module *M, const mg_op *o, const char *name, LLVMTypeRef t,
                                bool gen, LLVMTypeRef *fty) {
  unsigned n = o->f2 ? 2u : 1u;
  LLVMTypeRef params[2] = {t, t};
  *fty = LLVMFunctionType(t, params, n, 0);
  LLVMValueRef fn = LLVMGetNamedFunction(M->mod, name);
  if (fn)
    return fn;
  fn = LLVMAddFunction(M->mod, name, *fty);
  unsigned kind = LLVMGetEnumAttributeKindForName("nounwind", 8);
  LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                          LLVMCreateEnumAttribute(M->llctx, kind, 0));
  if (!gen)
    return fn;
  LLVMSetLinkage(fn, LLVMInternalLinkage);
  mg g = {.M = M, .fn = fn, .d = M->t_f64, .i64 = M->t_i64, .i32 = M->t_i32, .i1 = M->t_i1};
  g.b = LLVMCreateBuilderInContext(M->llctx);
  LLVMPositionBuilderAtEnd(g.b, LLVMAppendBasicBlockInContext(M->llctx, fn, "entry"));
  V r =
      o->f2 ? o->f2(&g, LLVMGetParam(fn, 0), LLVMGetParam(fn, 1)) : o->f1(&g, LLVMGetParam(fn, 0));
  LLVMBuildRet(g.b, r);
  LLVMDisposeBuilder(g.b);
  return fn;
}

static const mg_op *mg_lookup(cg_module *M, ir_op op, ac_scalar sc) {
  const mg_op *o = mg_find(op);
  if (!o || (sc != AC_F32 && sc != AC_F64)) {
    cg_error(M, AC_ERR_INTERNAL, 0, "no GPU math function for %s on %s", ir_ops[op].name,
             ac_scalar_name(sc));
    return NULL;
  }
  return o;
}

LLVMValueRef cg_gpu_math_libdevice(cg_fn *f, ir_op op, ac_scalar sc, LLVMValueRef *ops) {
  cg_module *M = f->M;
  LLVMTypeRef t = cg_scalar_type(M, sc);
  const mg_op *o = mg_lookup(M, op, sc);
  if (!o)
    return LLVMGetUndef(t);
  char name[32];
  snprintf(name, sizeof name, "__nv_%s%s", o->name, sc == AC_F32 ? "f" : "");
  LLVMTypeRef fty;
  LLVMValueRef fn = mg_function(M, o, name, t, false, &fty);
  return LLVMBuildCall2(M->b, fty, fn, ops, o->f2 ? 2u : 1u, "");
}

LLVMValueRef cg_gpu_math_fallback(cg_fn *f, ir_op op, ac_scalar sc, LLVMValueRef *ops) {
  cg_module *M = f->M;
  LLVMTypeRef t = cg_scalar_type(M, sc);
  const mg_op *o = mg_lookup(M, op, sc);
  if (!o)
    return LLVMGetUndef(t);
  char name[32];
  snprintf(name, sizeof name, "arrayc.gpu.%s", o->name);
  LLVMTypeRef fty;
  LLVMValueRef fn = mg_function(M, o, name, M->t_f64, true, &fty);
  unsigned n = o->f2 ? 2u : 1u;
  LLVMValueRef args[2];
  for (unsigned i = 0; i < n; i++)
    args[i] = sc == AC_F32 ? LLVMBuildFPExt(M->b, ops[i], M->t_f64, "") : ops[i];
  LLVMValueRef r = LLVMBuildCall2(M->b, fty, fn, args, n, "");
  return sc == AC_F32 ? LLVMBuildFPTrunc(M->b, r, M->t_f32, "") : r;
}

LLVMValueRef cg_gpu_math(cg_fn *f, ir_op op, ac_scalar sc, LLVMValueRef *ops) {
  if (nv_libdevice_path() && !f->M->gpu_fallback_math)
    return cg_gpu_math_libdevice(f, op, sc, ops);
  return cg_gpu_math_fallback(f, op, sc, ops);
}
