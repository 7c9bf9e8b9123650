/* lib/codegen/scalar.c: LLVM code for the scalar operations of
 * docs/language.md §6 (constants, operators, math builtins, conversions).
 *
 * The reference is lib/interp/scalar.c, and compiled element-wise code must
 * give bit-identical results, so each rule below is the interpreter's rule
 * written as LLVM IR that never has undefined or poison behaviour:
 *   - integers are iN registers whatever their signedness (the kind says how
 *     to compare, divide, shift, extend); add/sub/mul carry no nsw/nuw
 *     flags, so they wrap as the language says;
 *   - division and remainder select a safe divisor (1) for the two cases C
 *     and LLVM leave undefined (x / 0 and MIN / -1) and then select the
 *     language's result for them (0 or -x for /, x or 0 for %), so LLVM never
 *     sees a division that traps or is poison;
 *   - shift amounts are masked with width - 1 (the interpreter's rule, and
 *     exactly what x86 does, so the mask usually folds into the shift);
 *   - floats use IEEE instructions with no fast-math flags (except `reassoc`
 *     on + - * when the caller sets f->reassoc, see cg.h, and `contract` on
 *     + - * in NVPTX code: docs/language.md §6.2 lets the GPU fuse a * b + c
 *     into one fma, which the NVPTX backend then does; the CPU backend and
 *     the SIMT emulator round each operation, as the interpreter does), and
 *     every math
 *     builtin calls the very C library function the interpreter calls: the
 *     float variant for f32 (expf, not exp), the double one for f64. LLVM
 *     intrinsics are used only where they are exactly the C function
 *     (sqrt, fabs, floor, ceil, trunc, round, fma, copysign: all correctly
 *     rounded or exact), because the vectoriser understands them;
 *   - min and max on floats follow docs/language.md §6.2: a NaN operand is
 *     ignored and -0.0 counts as less than +0.0 (IEEE 754-2019
 *     minimumNumber/maximumNumber), exactly as the interpreter's
 *     float_min_max; built from compares and selects (equal operands: OR of
 *     the bits for min, AND for max, which only changes the sign of a zero),
 *     so they vectorise;
 *   - float -> int conversion is llvm.fpto[su]i.sat: truncation toward zero,
 *     saturation at the target's range and NaN -> 0, which is the
 *     interpreter's float_to_int exactly (its unsigned branch maps every
 *     value below 1 to 0, as fptoui.sat does); int -> float is one rounding
 *     straight to the target precision (sitofp/uitofp), as C's conversion.
 */
#include "codegen/cg.h"
#include "codegen/math_gpu.h"

#include <math.h>
#include <string.h>

static bool sc_is_float(ac_scalar sc) {
  return sc == AC_F32 || sc == AC_F64;
}

static bool sc_is_signed(ac_scalar sc) {
  return sc >= AC_I8 && sc <= AC_I64;
}

static unsigned sc_width(ac_scalar sc) {
  return sc == AC_BOOL ? 1u : (unsigned)ac_scalar_size(sc) * 8u;
}

/* A call of an overloaded LLVM intrinsic ("llvm.sqrt") on the types it is
 * overloaded on (usually just the operand type). */
static LLVMValueRef sc_intrinsic(cg_fn *f, const char *name, LLVMTypeRef *over, unsigned nover,
                                 LLVMValueRef *args, unsigned nargs) {
  cg_module *M = f->M;
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  if (id == 0) {
    cg_error(M, AC_ERR_INTERNAL, 0, "LLVM has no intrinsic %s", name);
    return LLVMGetUndef(over[0]);
  }
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(M->mod, id, over, nover);
  LLVMTypeRef ty = LLVMIntrinsicGetType(M->llctx, id, over, nover);
  return LLVMBuildCall2(M->b, ty, fn, args, nargs, "");
}

/* A call of the C library function `name` of n arguments of type t
 * returning t. It is declared once per module as a pure function (it reads
 * and writes no memory we can see: errno is never read by compiled code),
 * so LLVM may hoist, CSE or scalarise it inside a vectorised loop; the
 * symbol resolves to the process's libm, the one the interpreter calls. */
static LLVMValueRef sc_libm(cg_fn *f, const char *name, LLVMTypeRef t, LLVMValueRef *args,
                            unsigned n) {
  cg_module *M = f->M;
  LLVMTypeRef params[3] = {t, t, t};
  LLVMTypeRef fty = LLVMFunctionType(t, params, n, 0);
  LLVMValueRef fn = LLVMGetNamedFunction(M->mod, name);
  if (!fn) {
    fn = LLVMAddFunction(M->mod, name, fty);
    static const char *const attrs[] = {"nounwind", "willreturn", "nosync", "nofree"};
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
      unsigned kind = LLVMGetEnumAttributeKindForName(attrs[i], strlen(attrs[i]));
      LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                              LLVMCreateEnumAttribute(M->llctx, kind, 0));
    }
    /* memory(none): the encoded MemoryEffects value 0 means no access */
    unsigned mem = LLVMGetEnumAttributeKindForName("memory", 6);
    LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                            LLVMCreateEnumAttribute(M->llctx, mem, 0));
  }
  LLVMValueRef call = LLVMBuildCall2(M->b, fty, fn, args, n, "");
  /* nobuiltin: LLVM must neither fold the call (its constant folder would
   * compute an f32 function in double) nor rewrite it (pow(x, 0.5) to sqrt,
   * a vector library): the result is then whatever libm returns, as in
   * the interpreter */
  unsigned nb = LLVMGetEnumAttributeKindForName("nobuiltin", 9);
  LLVMAddCallSiteAttribute(call, LLVMAttributeFunctionIndex,
                           LLVMCreateEnumAttribute(M->llctx, nb, 0));
  return call;
}

static LLVMValueRef sc_fconst(cg_module *M, ac_scalar sc, double x) {
  return LLVMConstReal(cg_scalar_type(M, sc), x);
}

static LLVMValueRef sc_iconst(cg_module *M, ac_scalar sc, uint64_t k) {
  return LLVMConstInt(cg_scalar_type(M, sc), k, 0);
}

static LLVMValueRef sc_unary_intrinsic(cg_fn *f, const char *name, LLVMValueRef a) {
  LLVMTypeRef t = LLVMTypeOf(a);
  return sc_intrinsic(f, name, &t, 1, &a, 1);
}

/* The math builtins that are a libm call: {op, f32 name, f64 name}. */
typedef struct sc_libfn {
  ir_op op;
  const char *f32, *f64;
} sc_libfn;

static const sc_libfn sc_libfns[] = {
    {IR_CBRT, "cbrtf", "cbrt"},    {IR_EXP, "expf", "exp"},       {IR_EXP2, "exp2f", "exp2"},
    {IR_EXPM1, "expm1f", "expm1"}, {IR_LOG, "logf", "log"},       {IR_LOG2, "log2f", "log2"},
    {IR_LOG10, "log10f", "log10"}, {IR_LOG1P, "log1pf", "log1p"}, {IR_SIN, "sinf", "sin"},
    {IR_COS, "cosf", "cos"},       {IR_TAN, "tanf", "tan"},       {IR_ASIN, "asinf", "asin"},
    {IR_ACOS, "acosf", "acos"},    {IR_ATAN, "atanf", "atan"},    {IR_SINH, "sinhf", "sinh"},
    {IR_COSH, "coshf", "cosh"},    {IR_TANH, "tanhf", "tanh"},    {IR_ERF, "erff", "erf"},
    {IR_ERFC, "erfcf", "erfc"},    {IR_POW, "powf", "pow"},       {IR_ATAN2, "atan2f", "atan2"},
    {IR_HYPOT, "hypotf", "hypot"},
};

/* Intrinsics that are exactly the C function the interpreter calls. */
typedef struct sc_intrfn {
  ir_op op;
  const char *name;
} sc_intrfn;

static const sc_intrfn sc_intrfns[] = {
    {IR_SQRT, "llvm.sqrt"},   {IR_FLOOR, "llvm.floor"}, {IR_CEIL, "llvm.ceil"},
    {IR_ROUND, "llvm.round"}, {IR_TRUNC, "llvm.trunc"}, {IR_COPYSIGN, "llvm.copysign"},
    {IR_FMA, "llvm.fma"},
};

static void sc_reassoc(cg_fn *f, LLVMValueRef v) {
  if (!LLVMIsAInstruction(v))
    return;
  LLVMFastMathFlags fl = f->reassoc ? LLVMFastMathAllowReassoc : 0;
  if (f->M->target == CG_TARGET_NVPTX)
    fl |= LLVMFastMathAllowContract;
  if (fl)
    LLVMSetFastMathFlags(v, fl);
}

/* min/max of floats (see the file comment). */
static LLVMValueRef sc_fminmax(cg_fn *f, bool max, LLVMValueRef x, LLVMValueRef y) {
  LLVMBuilderRef b = f->M->b;
  LLVMTypeRef ft = LLVMTypeOf(x);
  LLVMTypeRef it = LLVMIntTypeInContext(f->M->llctx, LLVMGetTypeKind(ft) == LLVMFloatTypeKind ? 32 : 64);
  LLVMValueRef xnan = LLVMBuildFCmp(b, LLVMRealUNO, x, x, "");
  LLVMValueRef ynan = LLVMBuildFCmp(b, LLVMRealUNO, y, y, "");
  LLVMValueRef xpick = LLVMBuildFCmp(b, max ? LLVMRealOGT : LLVMRealOLT, x, y, "");
  LLVMValueRef eq = LLVMBuildFCmp(b, LLVMRealOEQ, x, y, "");
  LLVMValueRef xi = LLVMBuildBitCast(b, x, it, ""), yi = LLVMBuildBitCast(b, y, it, "");
  LLVMValueRef tie = LLVMBuildBitCast(b, max ? LLVMBuildAnd(b, xi, yi, "") : LLVMBuildOr(b, xi, yi, ""),
                                      ft, "");
  LLVMValueRef m = LLVMBuildSelect(b, xpick, x, y, "");
  m = LLVMBuildSelect(b, eq, tie, m, "");
  m = LLVMBuildSelect(b, ynan, x, m, "");
  return LLVMBuildSelect(b, xnan, y, m, "");
}

static LLVMValueRef sc_float_op(cg_fn *f, ir_op op, ac_scalar sc, LLVMValueRef *ops);

/* log_add(x, y) step by step as the interpreter computes it: NaN if either
 * operand is (x + y), the larger operand if it is infinite, else
 * m + log1p(exp(lo - m)) with the math library's (or the GPU's) exp and
 * log1p, in the operands' type. */
static LLVMValueRef sc_log_add(cg_fn *f, ac_scalar sc, LLVMValueRef x, LLVMValueRef y) {
  LLVMBuilderRef b = f->M->b;
  LLVMValueRef ge = LLVMBuildFCmp(b, LLVMRealOGE, x, y, "");
  LLVMValueRef m = LLVMBuildSelect(b, ge, x, y, ""), lo = LLVMBuildSelect(b, ge, y, x, "");
  /* sc_float_op reads two operands (and fma three) whatever the op */
  LLVMValueRef d[3] = {LLVMBuildFSub(b, lo, m, ""), NULL, NULL};
  LLVMValueRef e[3] = {sc_float_op(f, IR_EXP, sc, d), NULL, NULL};
  LLVMValueRef l = sc_float_op(f, IR_LOG1P, sc, e);
  LLVMValueRef r = LLVMBuildFAdd(b, m, l, "");
  LLVMValueRef inf = LLVMBuildFCmp(b, LLVMRealOEQ, sc_unary_intrinsic(f, "llvm.fabs", m),
                                   sc_fconst(f->M, sc, INFINITY), "");
  r = LLVMBuildSelect(b, inf, m, r, "");
  LLVMValueRef nan = LLVMBuildFCmp(b, LLVMRealUNO, x, y, "");
  return LLVMBuildSelect(b, nan, LLVMBuildFAdd(b, x, y, ""), r, "");
}

/* log_sub(x, y) step by step as the interpreter computes it (NaN if either
 * operand is or if y > x, -inf if x == y but NaN for two +inf, x if it is
 * +inf, else x + log(-expm1(d)) above d = -ln 2 and x + log1p(-exp(d))
 * below, d = y - x). Both sides are computed and one is selected: branches
 * would split the element loop for an operation that is rare in it. */
static LLVMValueRef sc_log_sub(cg_fn *f, ac_scalar sc, LLVMValueRef x, LLVMValueRef y) {
  LLVMBuilderRef b = f->M->b;
  LLVMValueRef d = LLVMBuildFSub(b, y, x, "");
  LLVMValueRef t[3] = {d, NULL, NULL};
  t[0] = LLVMBuildFNeg(b, sc_float_op(f, IR_EXPM1, sc, t), "");
  LLVMValueRef near = sc_float_op(f, IR_LOG, sc, t); /* log(-expm1(d)) */
  t[0] = d;
  t[0] = LLVMBuildFNeg(b, sc_float_op(f, IR_EXP, sc, t), "");
  LLVMValueRef far = sc_float_op(f, IR_LOG1P, sc, t); /* log1p(-exp(d)) */
  LLVMValueRef above =
      LLVMBuildFCmp(b, LLVMRealOGT, d, sc_fconst(f->M, sc, -0.693147180559945309), "");
  LLVMValueRef r = LLVMBuildFAdd(b, x, LLVMBuildSelect(b, above, near, far, ""), "");
  LLVMValueRef inf = sc_fconst(f->M, sc, INFINITY), nan = sc_fconst(f->M, sc, NAN);
  r = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOEQ, x, inf, ""), x, r, "");
  LLVMValueRef same = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOEQ, x, inf, ""), nan,
                                      sc_fconst(f->M, sc, -INFINITY), "");
  r = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOEQ, x, y, ""), same, r, "");
  r = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOGT, y, x, ""), nan, r, "");
  LLVMValueRef unord = LLVMBuildFCmp(b, LLVMRealUNO, x, y, "");
  return LLVMBuildSelect(b, unord, LLVMBuildFAdd(b, x, y, ""), r, "");
}

static LLVMValueRef sc_float_op(cg_fn *f, ir_op op, ac_scalar sc, LLVMValueRef *ops) {
  cg_module *M = f->M;
  LLVMBuilderRef b = M->b;
  LLVMValueRef x = ops[0], y = ops[1], r;
  /* the GPU has no libm, and NVPTX's frem is not C's exact fmod */
  if (M->target == CG_TARGET_NVPTX && cg_gpu_math_op(op))
    return cg_gpu_math(f, op, sc, ops);
  for (size_t i = 0; i < sizeof sc_libfns / sizeof sc_libfns[0]; i++)
    if (sc_libfns[i].op == op) {
      unsigned n = ir_ops[op].nkids > 0 ? (unsigned)ir_ops[op].nkids : 1u;
      return sc_libm(f, sc == AC_F32 ? sc_libfns[i].f32 : sc_libfns[i].f64,
                     cg_scalar_type(M, sc), ops, n);
    }
  for (size_t i = 0; i < sizeof sc_intrfns / sizeof sc_intrfns[0]; i++)
    if (sc_intrfns[i].op == op) {
      LLVMTypeRef t = cg_scalar_type(M, sc);
      return sc_intrinsic(f, sc_intrfns[i].name, &t, 1, ops, (unsigned)ir_ops[op].nkids);
    }
  switch (op) {
  case IR_NEG:
    return LLVMBuildFNeg(b, x, "");
  case IR_ABS:
    return sc_unary_intrinsic(f, "llvm.fabs", x);
  case IR_LOG_ADD:
    return sc_log_add(f, sc, x, y);
  case IR_LOG_SUB:
    return sc_log_sub(f, sc, x, y);
  case IR_RSQRT: /* 1 / sqrt(x): two roundings, as the interpreter */
    return LLVMBuildFDiv(b, sc_fconst(M, sc, 1.0), sc_unary_intrinsic(f, "llvm.sqrt", x), "");
  case IR_ISNAN:
    return LLVMBuildFCmp(b, LLVMRealUNO, x, x, "");
  case IR_ISINF:
    return LLVMBuildFCmp(b, LLVMRealOEQ, sc_unary_intrinsic(f, "llvm.fabs", x),
                         sc_fconst(M, sc, INFINITY), "");
  case IR_ISFINITE:
    return LLVMBuildFCmp(b, LLVMRealOLT, sc_unary_intrinsic(f, "llvm.fabs", x),
                         sc_fconst(M, sc, INFINITY), "");
  case IR_ADD:
    r = LLVMBuildFAdd(b, x, y, "");
    sc_reassoc(f, r);
    return r;
  case IR_SUB:
    r = LLVMBuildFSub(b, x, y, "");
    sc_reassoc(f, r);
    return r;
  case IR_MUL:
    r = LLVMBuildFMul(b, x, y, "");
    sc_reassoc(f, r);
    return r;
  case IR_DIV:
    return LLVMBuildFDiv(b, x, y, "");
  case IR_REM: /* frem is C's fmod (exact), which LLVM calls or folds */
    return LLVMBuildFRem(b, x, y, "");
  case IR_EQ:
    return LLVMBuildFCmp(b, LLVMRealOEQ, x, y, "");
  case IR_NE:
    return LLVMBuildFCmp(b, LLVMRealUNE, x, y, "");
  case IR_LT:
    return LLVMBuildFCmp(b, LLVMRealOLT, x, y, "");
  case IR_LE:
    return LLVMBuildFCmp(b, LLVMRealOLE, x, y, "");
  case IR_GT:
    return LLVMBuildFCmp(b, LLVMRealOGT, x, y, "");
  case IR_GE:
    return LLVMBuildFCmp(b, LLVMRealOGE, x, y, "");
  case IR_MIN:
    return sc_fminmax(f, false, x, y);
  case IR_MAX:
    return sc_fminmax(f, true, x, y);
  default:
    break;
  }
  cg_error(M, AC_ERR_INTERNAL, 0, "no float code for operation %s", ir_ops[op].name);
  return LLVMGetUndef(cg_scalar_type(M, sc));
}

/* x / y and x % y with the language's answers where C has none. */
static LLVMValueRef sc_int_divrem(cg_fn *f, bool rem, ac_scalar sc, LLVMValueRef x,
                                  LLVMValueRef y) {
  cg_module *M = f->M;
  LLVMBuilderRef b = M->b;
  LLVMValueRef zero = sc_iconst(M, sc, 0), one = sc_iconst(M, sc, 1);
  LLVMValueRef y0 = LLVMBuildICmp(b, LLVMIntEQ, y, zero, "");
  if (!sc_is_signed(sc)) {
    LLVMValueRef safe = LLVMBuildSelect(b, y0, one, y, "");
    LLVMValueRef q = rem ? LLVMBuildURem(b, x, safe, "") : LLVMBuildUDiv(b, x, safe, "");
    return LLVMBuildSelect(b, y0, rem ? x : zero, q, "");
  }
  /* y == -1: x / -1 is 0 - x (MIN wraps to MIN), x % -1 is 0 */
  LLVMValueRef ym1 = LLVMBuildICmp(b, LLVMIntEQ, y, LLVMConstAllOnes(LLVMTypeOf(y)), "");
  LLVMValueRef bad = LLVMBuildOr(b, y0, ym1, "");
  LLVMValueRef safe = LLVMBuildSelect(b, bad, one, y, "");
  LLVMValueRef q = rem ? LLVMBuildSRem(b, x, safe, "") : LLVMBuildSDiv(b, x, safe, "");
  LLVMValueRef special = rem ? zero : LLVMBuildSub(b, zero, x, "");
  q = LLVMBuildSelect(b, ym1, special, q, "");
  return LLVMBuildSelect(b, y0, rem ? x : zero, q, "");
}

static LLVMValueRef sc_int_op(cg_fn *f, ir_op op, ac_scalar sc, LLVMValueRef *ops) {
  cg_module *M = f->M;
  LLVMBuilderRef b = M->b;
  LLVMValueRef x = ops[0], y = ops[1];
  bool sg = sc_is_signed(sc);
  switch (op) {
  case IR_NEG:
    return LLVMBuildSub(b, sc_iconst(M, sc, 0), x, "");
  case IR_BNOT:
    return LLVMBuildNot(b, x, "");
  case IR_ABS: {
    if (!sg)
      return x;
    /* llvm.abs with is_int_min_poison = false: abs(MIN) == MIN */
    LLVMValueRef args[2] = {x, LLVMConstInt(M->t_i1, 0, 0)};
    LLVMTypeRef t = LLVMTypeOf(x);
    return sc_intrinsic(f, "llvm.abs", &t, 1, args, 2);
  }
  case IR_ADD:
    return LLVMBuildAdd(b, x, y, "");
  case IR_SUB:
    return LLVMBuildSub(b, x, y, "");
  case IR_MUL:
    return LLVMBuildMul(b, x, y, "");
  case IR_DIV:
    return sc_int_divrem(f, false, sc, x, y);
  case IR_REM:
    return sc_int_divrem(f, true, sc, x, y);
  case IR_BAND:
    return LLVMBuildAnd(b, x, y, "");
  case IR_BOR:
    return LLVMBuildOr(b, x, y, "");
  case IR_BXOR:
    return LLVMBuildXor(b, x, y, "");
  case IR_SHL:
  case IR_SHR: {
    LLVMValueRef s = LLVMBuildAnd(b, y, sc_iconst(M, sc, sc_width(sc) - 1), "");
    if (op == IR_SHL)
      return LLVMBuildShl(b, x, s, "");
    return sg ? LLVMBuildAShr(b, x, s, "") : LLVMBuildLShr(b, x, s, "");
  }
  case IR_EQ:
    return LLVMBuildICmp(b, LLVMIntEQ, x, y, "");
  case IR_NE:
    return LLVMBuildICmp(b, LLVMIntNE, x, y, "");
  case IR_LT:
    return LLVMBuildICmp(b, sg ? LLVMIntSLT : LLVMIntULT, x, y, "");
  case IR_LE:
    return LLVMBuildICmp(b, sg ? LLVMIntSLE : LLVMIntULE, x, y, "");
  case IR_GT:
    return LLVMBuildICmp(b, sg ? LLVMIntSGT : LLVMIntUGT, x, y, "");
  case IR_GE:
    return LLVMBuildICmp(b, sg ? LLVMIntSGE : LLVMIntUGE, x, y, "");
  case IR_MIN:
  case IR_MAX: {
    const char *name = op == IR_MIN ? (sg ? "llvm.smin" : "llvm.umin")
                                    : (sg ? "llvm.smax" : "llvm.umax");
    LLVMTypeRef t = LLVMTypeOf(x);
    return sc_intrinsic(f, name, &t, 1, ops, 2);
  }
  default:
    break;
  }
  cg_error(M, AC_ERR_INTERNAL, 0, "no integer code for operation %s", ir_ops[op].name);
  return LLVMGetUndef(cg_scalar_type(M, sc));
}

/* Operations on bool (i1): ! and the comparisons == and !=; && and || here
 * are the eager forms (expr.c generates the short-circuit ones). */
static LLVMValueRef sc_bool_op(cg_fn *f, ir_op op, LLVMValueRef *ops) {
  LLVMBuilderRef b = f->M->b;
  switch (op) {
  case IR_NOT:
    return LLVMBuildNot(b, ops[0], "");
  case IR_EQ:
    return LLVMBuildICmp(b, LLVMIntEQ, ops[0], ops[1], "");
  case IR_NE:
    return LLVMBuildICmp(b, LLVMIntNE, ops[0], ops[1], "");
  case IR_LAND:
    return LLVMBuildAnd(b, ops[0], ops[1], "");
  case IR_LOR:
    return LLVMBuildOr(b, ops[0], ops[1], "");
  default:
    break;
  }
  cg_error(f->M, AC_ERR_INTERNAL, 0, "no bool code for operation %s", ir_ops[op].name);
  return LLVMGetUndef(f->M->t_i1);
}

LLVMValueRef cg_scalar_op(cg_fn *f, ir_op op, ac_scalar sc, LLVMValueRef *ops) {
  if (op >= IR_NUM_OPS) {
    cg_error(f->M, AC_ERR_INTERNAL, 0, "operation %d is not a scalar operation", (int)op);
    return LLVMGetUndef(f->M->t_i1);
  }
  if (sc == AC_BOOL)
    return sc_bool_op(f, op, ops);
  if (sc_is_float(sc))
    return sc_float_op(f, op, sc, ops);
  return sc_int_op(f, op, sc, ops);
}

LLVMValueRef cg_cast(cg_fn *f, LLVMValueRef v, ac_scalar from, ac_scalar to) {
  cg_module *M = f->M;
  LLVMBuilderRef b = M->b;
  LLVMTypeRef tt = cg_scalar_type(M, to);
  if (from == to)
    return v;
  if (to == AC_BOOL) { /* x != 0; for floats NaN != 0 holds and -0.0 == 0 */
    if (sc_is_float(from))
      return LLVMBuildFCmp(b, LLVMRealUNE, v, sc_fconst(M, from, 0.0), "");
    return LLVMBuildICmp(b, LLVMIntNE, v, sc_iconst(M, from, 0), "");
  }
  if (sc_is_float(from)) {
    if (sc_is_float(to))
      return to == AC_F32 ? LLVMBuildFPTrunc(b, v, tt, "") : LLVMBuildFPExt(b, v, tt, "");
    LLVMTypeRef over[2] = {tt, LLVMTypeOf(v)};
    return sc_intrinsic(f, sc_is_signed(to) ? "llvm.fptosi.sat" : "llvm.fptoui.sat", over, 2,
                        &v, 1);
  }
  /* from is bool (i1, 0/1) or an integer */
  bool sg = sc_is_signed(from);
  if (sc_is_float(to))
    return sg ? LLVMBuildSIToFP(b, v, tt, "") : LLVMBuildUIToFP(b, v, tt, "");
  unsigned wf = sc_width(from), wt = sc_width(to);
  if (wf == wt)
    return v; /* same bits, read in the other signedness */
  if (wf > wt)
    return LLVMBuildTrunc(b, v, tt, "");
  return sg ? LLVMBuildSExt(b, v, tt, "") : LLVMBuildZExt(b, v, tt, "");
}

LLVMValueRef cg_const(cg_module *M, ac_scalar sc, ir_litval v) {
  if (sc_is_float(sc)) /* an f32 literal is stored rounded: the conversion is exact */
    return sc_fconst(M, sc, v.f);
  if (sc == AC_BOOL)
    return LLVMConstInt(M->t_i1, v.u != 0, 0);
  return LLVMConstInt(cg_scalar_type(M, sc), v.u, 0); /* truncated to the width */
}
