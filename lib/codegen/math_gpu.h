/* lib/codegen/math_gpu.h: math functions for GPU kernels (math_gpu.c).
 *
 * On CG_TARGET_NVPTX, scalar.c hands every float operation that the CPU
 * takes from libm (the sc_libfns table: cbrt exp exp2 expm1 log log2 log10
 * log1p sin cos tan asin acos atan sinh cosh tanh erf erfc pow atan2 hypot)
 * and float remainder (C's fmod, which NVPTX's `frem` does not compute
 * exactly) to cg_gpu_math. It calls libdevice's __nv_* function when
 * libdevice is installed (lib/target/nvptx.c links it) and otherwise the
 * fallbacks of this file, whose accuracy is stated in math_gpu.c's opening
 * comment and checked by test/unit/test_gpu_math.c.
 */
#ifndef ARRAYC_LIB_CODEGEN_MATH_GPU_H
#define ARRAYC_LIB_CODEGEN_MATH_GPU_H

#include "codegen/cg.h"

/* Is `op` on floats one that cg_gpu_math must generate on the GPU? */
bool cg_gpu_math_op(ir_op op);
/* op (cg_gpu_math_op) on operands of type sc (AC_F32 or AC_F64): libdevice
 * when nv_libdevice_path() finds it, the fallback otherwise. */
LLVMValueRef cg_gpu_math(cg_fn *f, ir_op op, ac_scalar sc, LLVMValueRef *ops);
/* A call of libdevice's __nv_<name>[f] (declared in the module; nv_emit
 * links the definition). */
LLVMValueRef cg_gpu_math_libdevice(cg_fn *f, ir_op op, ac_scalar sc, LLVMValueRef *ops);
/* The fallback: a call of an internal function defined in f's module (once
 * per module and op) by LLVM IR of our own that uses only IEEE arithmetic,
 * fma, sqrt, rint, integer operations and a constant table, so it works in
 * a module of any target (the unit tests run it on the host JIT). f32 is
 * computed in double and rounded. */
LLVMValueRef cg_gpu_math_fallback(cg_fn *f, ir_op op, ac_scalar sc, LLVMValueRef *ops);

#endif
