/* lib/interp/scalar.c: the scalar semantics of docs/language.md §6.
 *
 * This file is the definition every backend's scalar code is compared with,
 * so each rule is spelled out rather than left to C:
 *   - integers are kept as their value in their type, sign-extended (signed
 *     kinds) or zero-extended (unsigned kinds) to 64 bits; arithmetic is
 *     done on uint64_t, where C defines wrapping, and the result is cut back
 *     to the type's width (interp_sc_norm). No signed overflow ever happens
 *     in C, and the cases C leaves undefined are given the language's
 *     meaning: x / 0 == 0, x % 0 == x, MIN / -1 == MIN, MIN % -1 == 0;
 *   - shift amounts are taken modulo the width (masking, as hardware does);
 *     >> is arithmetic on signed kinds, written without C's
 *     implementation-defined right shift of negative numbers;
 *   - f32 arithmetic and math functions are computed in float with the C
 *     library's float variants (expf, not exp then rounding), so results are
 *     what a float implementation computes; f32 values are stored in a
 *     double, where they are exact;
 *   - float->int conversion truncates and saturates, NaN gives 0, without
 *     ever converting an out-of-range value in C (undefined behaviour).
 */
#include "interp/interp.h"

#include <math.h>
#include <string.h>

static unsigned width(ac_scalar sc) {
  return (unsigned)ac_scalar_size(sc) * 8u;
}

bool interp_sc_is_signed(ac_scalar sc) {
  return sc >= AC_I8 && sc <= AC_I64;
}

static bool is_float(ac_scalar sc) {
  return sc == AC_F32 || sc == AC_F64;
}

interp_scalar interp_sc_norm(ac_scalar sc, interp_scalar v) {
  if (sc == AC_BOOL) {
    v.u = v.u != 0;
  } else if (sc == AC_F32) {
    v.f = (double)(float)v.f;
  } else if (!is_float(sc) && width(sc) < 64) {
    uint64_t mask = ((uint64_t)1 << width(sc)) - 1;
    v.u &= mask;
    if (interp_sc_is_signed(sc) && (v.u >> (width(sc) - 1)) != 0)
      v.u |= ~mask;
  }
  return v;
}

interp_scalar interp_sc_lit(ac_scalar sc, ir_litval lit) {
  interp_scalar v;
  if (is_float(sc))
    v.f = lit.f;
  else
    v.u = lit.u;
  return interp_sc_norm(sc, v);
}

interp_scalar interp_sc_load(ac_scalar sc, const void *data, int64_t k) {
  interp_scalar v;
  switch (sc) {
  case AC_BOOL:
    v.u = ((const uint8_t *)data)[k] != 0;
    break;
  case AC_I8:
    v.i = ((const int8_t *)data)[k];
    break;
  case AC_I16:
    v.i = ((const int16_t *)data)[k];
    break;
  case AC_I32:
    v.i = ((const int32_t *)data)[k];
    break;
  case AC_I64:
    v.i = ((const int64_t *)data)[k];
    break;
  case AC_U8:
    v.u = ((const uint8_t *)data)[k];
    break;
  case AC_U16:
    v.u = ((const uint16_t *)data)[k];
    break;
  case AC_U32:
    v.u = ((const uint32_t *)data)[k];
    break;
  case AC_U64:
    v.u = ((const uint64_t *)data)[k];
    break;
  case AC_F32:
    v.f = ((const float *)data)[k];
    break;
  default:
    v.f = ((const double *)data)[k];
    break;
  }
  return v;
}

/* Values are normalised, so every narrowing below is in range. */
void interp_sc_store(ac_scalar sc, void *data, int64_t k, interp_scalar v) {
  switch (sc) {
  case AC_BOOL:
    ((uint8_t *)data)[k] = (uint8_t)(v.u != 0);
    break;
  case AC_I8:
    ((int8_t *)data)[k] = (int8_t)v.i;
    break;
  case AC_I16:
    ((int16_t *)data)[k] = (int16_t)v.i;
    break;
  case AC_I32:
    ((int32_t *)data)[k] = (int32_t)v.i;
    break;
  case AC_I64:
    ((int64_t *)data)[k] = v.i;
    break;
  case AC_U8:
    ((uint8_t *)data)[k] = (uint8_t)v.u;
    break;
  case AC_U16:
    ((uint16_t *)data)[k] = (uint16_t)v.u;
    break;
  case AC_U32:
    ((uint32_t *)data)[k] = (uint32_t)v.u;
    break;
  case AC_U64:
    ((uint64_t *)data)[k] = v.u;
    break;
  case AC_F32:
    ((float *)data)[k] = (float)v.f;
    break;
  default:
    ((double *)data)[k] = v.f;
    break;
  }
}

static interp_scalar mk_u(ac_scalar sc, uint64_t u) {
  interp_scalar v;
  v.u = u;
  return interp_sc_norm(sc, v);
}

static interp_scalar mk_bool(bool b) {
  interp_scalar v;
  v.u = b;
  return v;
}

static interp_scalar mk_f(double f) {
  interp_scalar v;
  v.f = f;
  return v;
}

/* min and max of floats (docs/language.md §6.2): a NaN operand is ignored,
 * and -0.0 counts as less than +0.0 (IEEE 754-2019 minimumNumber and
 * maximumNumber). Written out rather than calling fmin/fmax, whose choice
 * between equal zeros differs between C libraries and even between calls
 * that gcc inlines and calls it does not; the CPU backend computes exactly
 * this (lib/codegen/scalar.c). f32 operands are exact in double, so one
 * version serves both. */
static double float_min_max(double x, double y, bool max) {
  if (isnan(x))
    return y;
  if (isnan(y))
    return x;
  if (x == y) /* equal: the same value, or zeros of different signs */
    return (signbit(x) != 0) == !max ? x : y;
  return (x < y) != max ? x : y;
}

/* One-argument math: the float variant for f32, the double one for f64. */
#define MATH1(f32fn, f64fn) mk_f(f32 ? (double)f32fn((float)a.f) : f64fn(a.f))
#define MATH2(f32fn, f64fn) mk_f(f32 ? (double)f32fn((float)a.f, (float)b.f) : f64fn(a.f, b.f))

interp_scalar interp_sc_unary(ir_op op, ac_scalar sc, interp_scalar a) {
  bool f32 = sc == AC_F32;
  switch (op) {
  case IR_NEG:
    return is_float(sc) ? mk_f(-a.f) : mk_u(sc, 0 - a.u);
  case IR_NOT:
    return mk_bool(a.u == 0);
  case IR_BNOT:
    return mk_u(sc, ~a.u);
  case IR_ABS:
    if (is_float(sc))
      return mk_f(fabs(a.f));
    return interp_sc_is_signed(sc) && a.i < 0 ? mk_u(sc, 0 - a.u) : a;
  case IR_SQRT:
    return MATH1(sqrtf, sqrt);
  case IR_RSQRT:
    return mk_f(f32 ? (double)(1.0f / sqrtf((float)a.f)) : 1.0 / sqrt(a.f));
  case IR_CBRT:
    return MATH1(cbrtf, cbrt);
  case IR_EXP:
    return MATH1(expf, exp);
  case IR_EXP2:
    return MATH1(exp2f, exp2);
  case IR_EXPM1:
    return MATH1(expm1f, expm1);
  case IR_LOG:
    return MATH1(logf, log);
  case IR_LOG2:
    return MATH1(log2f, log2);
  case IR_LOG10:
    return MATH1(log10f, log10);
  case IR_LOG1P:
    return MATH1(log1pf, log1p);
  case IR_SIN:
    return MATH1(sinf, sin);
  case IR_COS:
    return MATH1(cosf, cos);
  case IR_TAN:
    return MATH1(tanf, tan);
  case IR_ASIN:
    return MATH1(asinf, asin);
  case IR_ACOS:
    return MATH1(acosf, acos);
  case IR_ATAN:
    return MATH1(atanf, atan);
  case IR_SINH:
    return MATH1(sinhf, sinh);
  case IR_COSH:
    return MATH1(coshf, cosh);
  case IR_TANH:
    return MATH1(tanhf, tanh);
  case IR_FLOOR:
    return MATH1(floorf, floor);
  case IR_CEIL:
    return MATH1(ceilf, ceil);
  case IR_ROUND:
    return MATH1(roundf, round);
  case IR_TRUNC:
    return MATH1(truncf, trunc);
  case IR_ERF:
    return MATH1(erff, erf);
  case IR_ERFC:
    return MATH1(erfcf, erfc);
  case IR_ISNAN:
    return mk_bool(isnan(a.f));
  case IR_ISINF:
    return mk_bool(isinf(a.f));
  case IR_ISFINITE:
    return mk_bool(isfinite(a.f));
  default:
    return mk_u(AC_U64, 0);
  }
}

/* Arithmetic shift right of a sign-extended value, without relying on how
 * C shifts negative numbers. */
static uint64_t sar(uint64_t x, unsigned s) {
  return (x >> 63) ? ~(~x >> s) : x >> s;
}

static interp_scalar int_binary(ir_op op, ac_scalar sc, interp_scalar a, interp_scalar b) {
  bool sg = interp_sc_is_signed(sc);
  unsigned shift = (unsigned)(b.u & (width(sc) - 1));
  switch (op) {
  case IR_ADD:
    return mk_u(sc, a.u + b.u);
  case IR_SUB:
    return mk_u(sc, a.u - b.u);
  case IR_MUL:
    return mk_u(sc, a.u * b.u);
  case IR_DIV:
    if (b.u == 0)
      return mk_u(sc, 0);
    if (sg && b.i == -1) /* MIN / -1 wraps to MIN, as 0 - MIN does */
      return mk_u(sc, 0 - a.u);
    return sg ? mk_u(sc, (uint64_t)(a.i / b.i)) : mk_u(sc, a.u / b.u);
  case IR_REM:
    if (b.u == 0)
      return a;
    if (sg && b.i == -1)
      return mk_u(sc, 0);
    return sg ? mk_u(sc, (uint64_t)(a.i % b.i)) : mk_u(sc, a.u % b.u);
  case IR_BAND:
    return mk_u(sc, a.u & b.u);
  case IR_BOR:
    return mk_u(sc, a.u | b.u);
  case IR_BXOR:
    return mk_u(sc, a.u ^ b.u);
  case IR_SHL:
    return mk_u(sc, a.u << shift);
  case IR_SHR:
    return mk_u(sc, sg ? sar(a.u, shift) : a.u >> shift);
  case IR_EQ:
    return mk_bool(a.u == b.u);
  case IR_NE:
    return mk_bool(a.u != b.u);
  case IR_LT:
    return mk_bool(sg ? a.i < b.i : a.u < b.u);
  case IR_LE:
    return mk_bool(sg ? a.i <= b.i : a.u <= b.u);
  case IR_GT:
    return mk_bool(sg ? a.i > b.i : a.u > b.u);
  case IR_GE:
    return mk_bool(sg ? a.i >= b.i : a.u >= b.u);
  case IR_MIN:
    return (sg ? a.i <= b.i : a.u <= b.u) ? a : b;
  case IR_MAX:
    return (sg ? a.i >= b.i : a.u >= b.u) ? a : b;
  default:
    return mk_u(sc, 0);
  }
}

static interp_scalar float_binary(ir_op op, ac_scalar sc, interp_scalar a, interp_scalar b) {
  bool f32 = sc == AC_F32;
  float x = (float)a.f, y = (float)b.f;
  switch (op) {
  case IR_ADD:
    return mk_f(f32 ? (double)(x + y) : a.f + b.f);
  case IR_SUB:
    return mk_f(f32 ? (double)(x - y) : a.f - b.f);
  case IR_MUL:
    return mk_f(f32 ? (double)(x * y) : a.f * b.f);
  case IR_DIV:
    return mk_f(f32 ? (double)(x / y) : a.f / b.f);
  case IR_REM:
    return MATH2(fmodf, fmod);
  /* f32 values are exact in double, so comparing doubles compares floats */
  case IR_EQ:
    return mk_bool(a.f == b.f);
  case IR_NE:
    return mk_bool(a.f != b.f);
  case IR_LT:
    return mk_bool(a.f < b.f);
  case IR_LE:
    return mk_bool(a.f <= b.f);
  case IR_GT:
    return mk_bool(a.f > b.f);
  case IR_GE:
    return mk_bool(a.f >= b.f);
  case IR_MIN:
    return mk_f(float_min_max(a.f, b.f, false));
  case IR_MAX:
    return mk_f(float_min_max(a.f, b.f, true));
  case IR_POW:
    return MATH2(powf, pow);
  case IR_ATAN2:
    return MATH2(atan2f, atan2);
  case IR_HYPOT:
    return MATH2(hypotf, hypot);
  case IR_COPYSIGN:
    return MATH2(copysignf, copysign);
  case IR_LOG_ADD: {
    /* docs/language.md 6.x: NaN if either operand is; the larger operand
     * if it is infinite; else m + log1p(exp(lo - m)), every step rounded to
     * the operands' type */
    if (isnan(a.f) || isnan(b.f))
      return mk_f(f32 ? (double)(x + y) : a.f + b.f);
    double m = a.f >= b.f ? a.f : b.f, lo = a.f >= b.f ? b.f : a.f;
    if (isinf(m))
      return mk_f(m);
    if (f32) {
      float mf = (float)m, d = (float)lo - mf;
      return mk_f((double)(mf + log1pf(expf(d))));
    }
    return mk_f(m + log1p(exp(lo - m)));
  }
  case IR_LOG_SUB: {
    /* docs/language.md 6.6: NaN if either operand is or if y > x (a
     * negative difference); -inf if x == y (NaN for two +inf); x if it is
     * +inf; else x + log1m(exp(y - x)), where log1m(e^d) is
     * log(-expm1(d)) above -ln 2 and log1p(-exp(d)) below (Maechler's
     * choice, accurate on both sides), every step rounded to the operands'
     * type */
    if (isnan(a.f) || isnan(b.f))
      return mk_f(f32 ? (double)(x + y) : a.f + b.f);
    if (b.f > a.f)
      return mk_f(NAN);
    if (a.f == b.f)
      return mk_f(isinf(a.f) && a.f > 0 ? NAN : -INFINITY);
    if (isinf(a.f))
      return mk_f(a.f);
    if (f32) {
      float d = y - x;
      float l = d > -0.693147180559945309f ? logf(-expm1f(d)) : log1pf(-expf(d));
      return mk_f((double)(x + l));
    }
    double d = b.f - a.f;
    return mk_f(a.f + (d > -0.693147180559945309 ? log(-expm1(d)) : log1p(-exp(d))));
  }
  default:
    return mk_f(0);
  }
}

interp_scalar interp_sc_binary(ir_op op, ac_scalar sc, interp_scalar a, interp_scalar b) {
  if (is_float(sc))
    return float_binary(op, sc, a, b);
  if (sc == AC_BOOL) /* only == and != apply to bool */
    return mk_bool(op == IR_EQ ? a.u == b.u : a.u != b.u);
  return int_binary(op, sc, a, b);
}

interp_scalar interp_sc_fma(ac_scalar sc, interp_scalar a, interp_scalar b, interp_scalar c) {
  if (sc == AC_F32)
    return mk_f((double)fmaf((float)a.f, (float)b.f, (float)c.f));
  return mk_f(fma(a.f, b.f, c.f));
}

/* Float to integer: truncate toward zero, saturate at the type's range, NaN
 * gives 0. Only values known to be in range reach a C conversion. */
static interp_scalar float_to_int(ac_scalar to, double x) {
  unsigned w = width(to);
  interp_scalar r;
  r.u = 0;
  if (isnan(x))
    return r;
  if (interp_sc_is_signed(to)) {
    uint64_t max = UINT64_MAX >> (65 - w); /* 2^(w-1) - 1 */
    double lim = ldexp(1.0, (int)w - 1);
    if (x >= lim)
      r.u = max;
    else if (x <= -lim)
      r.u = ~max; /* -2^(w-1), sign-extended */
    else
      r.i = (int64_t)x;
  } else {
    double lim = ldexp(1.0, (int)w);
    if (x >= lim)
      r.u = UINT64_MAX >> (64 - w);
    else if (x > 0)
      r.u = (uint64_t)x;
  }
  return r;
}

interp_scalar interp_sc_cast(ac_scalar to, ac_scalar from, interp_scalar a) {
  if (to == from)
    return a;
  if (to == AC_BOOL)
    return mk_bool(is_float(from) ? a.f != 0 : a.u != 0);
  if (is_float(from)) {
    if (is_float(to))
      return interp_sc_norm(to, a);
    return float_to_int(to, a.f);
  }
  /* from is bool (0/1) or an integer */
  if (is_float(to)) {
    /* one rounding, straight to the target precision */
    bool sg = interp_sc_is_signed(from);
    if (to == AC_F32)
      return mk_f(sg ? (double)(float)a.i : (double)(float)a.u);
    return mk_f(sg ? (double)a.i : (double)a.u);
  }
  return interp_sc_norm(to, a);
}

int64_t interp_sc_to_i64(ac_scalar sc, interp_scalar a) {
  if (interp_sc_is_signed(sc))
    return a.i;
  return a.u > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)a.u;
}

interp_scalar interp_sc_from_datum(const ac_datum *d) {
  interp_scalar v;
  if (d->type == AC_BOOL)
    v.u = d->s.b;
  else if (is_float(d->type))
    v.f = d->s.f;
  else if (interp_sc_is_signed(d->type))
    v.i = d->s.i;
  else
    v.u = d->s.u;
  return interp_sc_norm(d->type, v);
}

void interp_sc_to_datum(ac_scalar sc, interp_scalar v, ac_datum *d) {
  memset(d, 0, sizeof *d);
  d->kind = AC_DATUM_SCALAR;
  d->type = sc;
  if (sc == AC_BOOL)
    d->s.b = v.u != 0;
  else if (is_float(sc))
    d->s.f = v.f;
  else if (interp_sc_is_signed(sc))
    d->s.i = v.i;
  else
    d->s.u = v.u;
}
