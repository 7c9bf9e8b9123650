/* SIMT interface code generation and GPU kernels (lib/codegen/simt.c,
 * lib/codegen/cg_gpu.c, the GPU branches of cg.c's runtime services).
 *
 * The same hand-built kernels (simt_* calls plus LLVMBuild*, no cg_expr) are
 * generated for both GPU targets:
 *   - CG_TARGET_SIMT: compiled for the host by the ORC JIT and run by the
 *     SIMT emulator (rt_simt_run) on real data: a block reduction through
 *     shuffles, shared memory and a barrier for five element types, a warp
 *     scan with shfl_up, reversal with shfl_idx, shuffles of narrow, bool,
 *     double and pointer values, ballot / any / all, atomics (seq_cst,
 *     relaxed, max, compare-and-swap loops on integers and floats, fadd, a
 *     shared-memory counter), a spin-wait chain across blocks (yield,
 *     fence, volatile loads and stores), runtime failures through ctl
 *     (cg_fail, cg_check, cg_failed, bounds-checked cg_read, cg_new_array's
 *     size checks) and per-thread temporary memory (within the budget,
 *     with mark/release reuse, beyond it, absurd sizes, and a launch
 *     without temporary memory);
 *   - CG_TARGET_NVPTX: the module is verified, compiled to PTX twice, by
 *     llc-19 from our IR as it is and by nv_emit (the O3 pipeline), each
 *     assembled by ptxas for sm_75 (llc-19 and ptxas are skipped with a
 *     message when not installed), and the PTX is checked for what
 *     LLVM 19 must make of our IR: `.entry` from the calling convention,
 *     `.maxntid` from the launch bound, the shfl `c` operands (31 for
 *     idx/down/bfly, 0 for up), full-warp masks, bar.sync, membar.gl,
 *     nanosleep, shared arrays, atomics and volatile accesses.
 */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#include "unit.h"

#include "codegen/simt.h"
#include "runtime/gpu.h"
#include "runtime/simt_emu.h"
#include "target/native.h"
#include "target/nvptx.h"

#include <llvm-c/Analysis.h>

#include <math.h>
#include <stdalign.h>
#include <stdlib.h>
#include <unistd.h>

/* ---- fixture ---- */

typedef struct fx {
  ac_context *ctx;
  ac_module *m;
  pl_plan *plan;
  nat_jit *J; /* SIMT only */
  cg_module M;
} fx;

static bool fx_init(fx *x, cg_target target) {
  memset(x, 0, sizeof *x);
  x->ctx = ac_context_create();
  ac_error *err = NULL;
  const char *src = "fn f(a: i64) -> i64 { a }\n";
  if (ac_module_parse(x->ctx, "t.ac", src, strlen(src), &x->m, &err) != AC_OK ||
      (target == CG_TARGET_SIMT && nat_jit_create(x->ctx, &x->J, &err) != AC_OK)) {
    fprintf(stderr, "setup: %s\n", ac_error_message(err));
    ac_error_destroy(err);
    return false;
  }
  x->plan = pl_create(x->ctx, "t", "t.ac");
  if (cg_module_init(&x->M, x->m, x->plan, target, &err) != AC_OK) {
    ac_error_destroy(err);
    return false;
  }
  if (target == CG_TARGET_SIMT)
    nat_prepare(x->J, &x->M);
  else if (nv_prepare(&x->M, &err) != AC_OK) {
    fprintf(stderr, "nv_prepare: %s\n", ac_error_message(err));
    ac_error_destroy(err);
    return false;
  }
  return true;
}

static void fx_fini(fx *x) {
  if (x->M.arena)
    cg_module_dispose(&x->M);
  if (x->plan)
    pl_destroy(x->plan);
  if (x->J)
    nat_jit_destroy(x->J);
  if (x->m)
    ac_module_destroy(x->m);
  ac_context_destroy(x->ctx);
}

/* JIT-compiles the module (SIMT) and returns kernel `name`, or NULL. */
static rt_gkernel_fn fx_compile(fx *x, const char *name) {
  CHECK_EQ_INT(x->M.st, AC_OK);
  void *addr = NULL;
  ac_error *err = NULL;
  if (x->M.st != AC_OK || nat_compile(x->J, &x->M, &name, 1, &addr, &err) != AC_OK) {
    fprintf(stderr, "compile %s: %s\n", name, err ? ac_error_message(err) : "code generation");
    ac_error_destroy(err);
    return NULL;
  }
  rt_gkernel_fn fn;
  memcpy(&fn, &addr, sizeof fn);
  return fn;
}

/* Runs fn on the emulator; ctl is zeroed first unless keep_ctl. */
static bool fx_run(fx *x, rt_gkernel_fn fn, unsigned grid, unsigned block, uint64_t smem,
                   uint64_t *frame, rt_gctl *ctl, int64_t n) {
  ac_error *err = NULL;
  if (!fn)
    return false;
  if (rt_simt_run(x->ctx, fn, grid, block, smem, frame, ctl, n, &err) != AC_OK) {
    fprintf(stderr, "run: %s\n", ac_error_message(err));
    ac_error_destroy(err);
    return false;
  }
  return true;
}

static uint64_t ptr_word(const void *p) {
  return (uint64_t)(uintptr_t)p;
}

/* ---- building blocks for kernels ---- */

static LLVMValueRef c32(cg_module *M, int64_t v) {
  return LLVMConstInt(M->t_i32, (unsigned long long)v, 1);
}

/* Frame word i as a value of type t (a pointer or an i64). */
static LLVMValueRef word(cg_fn *f, unsigned i, LLVMTypeRef t) {
  cg_module *M = f->M;
  LLVMValueRef ix = cg_i64(M, i);
  return LLVMBuildLoad2(M->b, t, LLVMBuildGEP2(M->b, M->t_i64, f->frame, &ix, 1, ""), "");
}

static LLVMValueRef at(cg_fn *f, LLVMTypeRef t, LLVMValueRef p, LLVMValueRef i) {
  return LLVMBuildGEP2(f->M->b, t, p, &i, 1, "");
}

/* if (c) { ... } */
typedef struct ifb {
  LLVMBasicBlockRef join;
} ifb;

static void if_begin(cg_fn *f, LLVMValueRef c, ifb *b) {
  LLVMBasicBlockRef then = cg_block(f, "then");
  b->join = cg_block(f, "join");
  LLVMBuildCondBr(f->M->b, c, then, b->join);
  LLVMPositionBuilderAtEnd(f->M->b, then);
}

static void if_end(cg_fn *f, ifb *b) {
  LLVMBuildBr(f->M->b, b->join);
  LLVMPositionBuilderAtEnd(f->M->b, b->join);
}

static LLVMValueRef add(cg_module *M, LLVMValueRef a, LLVMValueRef b) {
  LLVMTypeKind k = LLVMGetTypeKind(LLVMTypeOf(a));
  if (k == LLVMFloatTypeKind || k == LLVMDoubleTypeKind)
    return LLVMBuildFAdd(M->b, a, b, "");
  return LLVMBuildAdd(M->b, a, b, "");
}

/* ---- kernels ---- */

/* out[ctaid] = sum of in[gtid] over the block (0 past n): a shfl_down tree
 * per warp, warp sums through shared memory and a barrier, then a
 * shfl_xor butterfly in warp 0. frame: in, out. */
static cg_fn *k_reduce(cg_module *M, const char *name, LLVMTypeRef t, unsigned block) {
  cg_fn *f = cg_gpu_kernel_begin(M, name, block);
  LLVMValueRef in = word(f, 0, M->t_ptr), out = word(f, 1, M->t_ptr);
  LLVMValueRef gtid = simt_gtid(f), zero = LLVMConstNull(t);
  LLVMValueRef slot = cg_alloca(f, t);
  LLVMBuildStore(M->b, zero, slot);
  ifb b;
  if_begin(f, LLVMBuildICmp(M->b, LLVMIntSLT, gtid, f->hi, ""), &b);
  LLVMBuildStore(M->b, LLVMBuildLoad2(M->b, t, at(f, t, in, gtid), ""), slot);
  if_end(f, &b);
  LLVMValueRef x = LLVMBuildLoad2(M->b, t, slot, "");
  for (int off = 16; off > 0; off /= 2)
    x = add(M, x, simt_shfl(f, SIMT_SHFL_DOWN, x, c32(M, off)));
  LLVMValueRef sm = simt_shared(f, t, block / SIMT_WARP, "partial");
  LLVMValueRef lane = simt_lane(f), warp = simt_warp(f);
  if_begin(f, LLVMBuildICmp(M->b, LLVMIntEQ, lane, c32(M, 0), ""), &b);
  LLVMBuildStore(M->b, x, at(f, t, sm, warp));
  if_end(f, &b);
  simt_barrier(f);
  if_begin(f, LLVMBuildICmp(M->b, LLVMIntEQ, warp, c32(M, 0), ""), &b);
  LLVMValueRef nw = LLVMBuildLShr(M->b, simt_ntid(f), c32(M, 5), "");
  LLVMValueRef have = LLVMBuildICmp(M->b, LLVMIntULT, lane, nw, "");
  LLVMValueRef y =
      LLVMBuildLoad2(M->b, t, at(f, t, sm, LLVMBuildSelect(M->b, have, lane, c32(M, 0), "")), "");
  y = LLVMBuildSelect(M->b, have, y, zero, "");
  for (int off = 16; off > 0; off /= 2)
    y = add(M, y, simt_shfl(f, SIMT_SHFL_XOR, y, c32(M, off)));
  ifb b2;
  if_begin(f, LLVMBuildICmp(M->b, LLVMIntEQ, lane, c32(M, 0), ""), &b2);
  LLVMBuildStore(M->b, y, at(f, t, out, simt_ctaid(f)));
  if_end(f, &b2);
  if_end(f, &b);
  cg_kernel_end(f);
  return f;
}

/* scan[gtid] = inclusive prefix sum of in over the warp (shfl_up), and
 * rev[gtid] = in[warp's lane 31 - lane] (shfl_idx); i64 values, so both
 * halves move. frame: in, scan, rev. */
static cg_fn *k_scan(cg_module *M) {
  cg_fn *f = cg_gpu_kernel_begin(M, "scan", 64);
  LLVMTypeRef t = M->t_i64;
  LLVMValueRef in = word(f, 0, M->t_ptr), scan = word(f, 1, M->t_ptr), rev = word(f, 2, M->t_ptr);
  LLVMValueRef gtid = simt_gtid(f), lane = simt_lane(f);
  LLVMValueRef v = LLVMBuildLoad2(M->b, t, at(f, t, in, gtid), "");
  LLVMValueRef x = v;
  for (int d = 1; d < SIMT_WARP; d *= 2) {
    LLVMValueRef y = simt_shfl(f, SIMT_SHFL_UP, x, c32(M, d));
    LLVMValueRef ok = LLVMBuildICmp(M->b, LLVMIntUGE, lane, c32(M, d), "");
    x = LLVMBuildSelect(M->b, ok, LLVMBuildAdd(M->b, x, y, ""), x, "");
  }
  LLVMBuildStore(M->b, x, at(f, t, scan, gtid));
  LLVMValueRef src = LLVMBuildSub(M->b, c32(M, SIMT_WARP - 1), lane, "");
  LLVMBuildStore(M->b, simt_shfl(f, SIMT_SHFL_IDX, v, src), at(f, t, rev, gtid));
  cg_kernel_end(f);
  return f;
}

/* Shuffles of other types, each from a value made from gtid: u8 down 1,
 * bool xor 1, f64 up 2, f32 idx 0 and a pointer idx lane^3 (stored as its
 * offset from `base`). frame: out8, outb, outd, outf, outp, base. */
static cg_fn *k_types(cg_module *M) {
  cg_fn *f = cg_gpu_kernel_begin(M, "types", 0);
  LLVMValueRef g = simt_gtid(f), lane = simt_lane(f);
  LLVMValueRef g8 = LLVMBuildTrunc(M->b, LLVMBuildMul(M->b, g, cg_i64(M, 7), ""), M->t_i8, "");
  LLVMValueRef odd = LLVMBuildTrunc(M->b, g, M->t_i1, "");
  LLVMValueRef gd =
      LLVMBuildFAdd(M->b, LLVMBuildSIToFP(M->b, g, M->t_f64, ""), LLVMConstReal(M->t_f64, 0.5), "");
  LLVMValueRef gf = LLVMBuildSIToFP(M->b, g, M->t_f32, "");
  LLVMValueRef base = word(f, 5, M->t_ptr);
  LLVMValueRef gp = at(f, M->t_i8, base, g);
  LLVMValueRef r8 = simt_shfl(f, SIMT_SHFL_DOWN, g8, c32(M, 1));
  LLVMValueRef rb = simt_shfl(f, SIMT_SHFL_XOR, odd, c32(M, 1));
  LLVMValueRef rd = simt_shfl(f, SIMT_SHFL_UP, gd, c32(M, 2));
  LLVMValueRef rf = simt_shfl(f, SIMT_SHFL_IDX, gf, c32(M, 0));
  LLVMValueRef rp = simt_shfl(f, SIMT_SHFL_IDX, gp, LLVMBuildXor(M->b, lane, c32(M, 3), ""));
  LLVMBuildStore(M->b, r8, at(f, M->t_i8, word(f, 0, M->t_ptr), g));
  LLVMBuildStore(M->b, LLVMBuildZExt(M->b, rb, M->t_i8, ""),
                 at(f, M->t_i8, word(f, 1, M->t_ptr), g));
  LLVMBuildStore(M->b, rd, at(f, M->t_f64, word(f, 2, M->t_ptr), g));
  LLVMBuildStore(M->b, rf, at(f, M->t_f32, word(f, 3, M->t_ptr), g));
  LLVMValueRef po = LLVMBuildSub(M->b, LLVMBuildPtrToInt(M->b, rp, M->t_i64, ""),
                                 LLVMBuildPtrToInt(M->b, base, M->t_i64, ""), "");
  LLVMBuildStore(M->b, po, at(f, M->t_i64, word(f, 4, M->t_ptr), g));
  cg_kernel_end(f);
  return f;
}

/* ballot[gtid] = ballot(in[gtid] > 0); anyall[gtid] = any | all << 1.
 * frame: in (i32), ballot (u32), anyall (u8). */
static cg_fn *k_vote(cg_module *M) {
  cg_fn *f = cg_gpu_kernel_begin(M, "vote", 0);
  LLVMValueRef g = simt_gtid(f);
  LLVMValueRef v = LLVMBuildLoad2(M->b, M->t_i32, at(f, M->t_i32, word(f, 0, M->t_ptr), g), "");
  LLVMValueRef p = LLVMBuildICmp(M->b, LLVMIntSGT, v, c32(M, 0), "");
  LLVMBuildStore(M->b, simt_vote(f, SIMT_VOTE_BALLOT, p), at(f, M->t_i32, word(f, 1, M->t_ptr), g));
  LLVMValueRef any = LLVMBuildZExt(M->b, simt_vote(f, SIMT_VOTE_ANY, p), M->t_i8, "");
  /* an i32 predicate: votes take any integer as "nonzero" */
  LLVMValueRef all = LLVMBuildZExt(M->b, simt_vote(f, SIMT_VOTE_ALL, v), M->t_i8, "");
  LLVMValueRef r =
      LLVMBuildOr(M->b, any, LLVMBuildShl(M->b, all, LLVMConstInt(M->t_i8, 1, 0), ""), "");
  LLVMBuildStore(M->b, r, at(f, M->t_i8, word(f, 2, M->t_ptr), g));
  cg_kernel_end(f);
  return f;
}

/* Increments *p (of integer or float type t) by `inc` with a CAS loop. */
static void cas_add(cg_fn *f, LLVMTypeRef t, LLVMValueRef p, LLVMValueRef inc) {
  cg_module *M = f->M;
  LLVMValueRef slot = cg_alloca(f, t);
  LLVMBuildStore(M->b, simt_load_volatile(f, t, p), slot);
  LLVMBasicBlockRef loop = cg_block(f, "cas"), done = cg_block(f, "cas.done");
  LLVMBuildBr(M->b, loop);
  LLVMPositionBuilderAtEnd(M->b, loop);
  LLVMValueRef old = LLVMBuildLoad2(M->b, t, slot, "");
  LLVMValueRef got = simt_cas(f, p, old, add(M, old, inc));
  LLVMBuildStore(M->b, got, slot);
  /* compared as bits, as the CAS compares */
  LLVMTypeRef it = LLVMIntTypeInContext(M->llctx, LLVMGetTypeKind(t) == LLVMFloatTypeKind ? 32
                                                  : LLVMGetTypeKind(t) == LLVMIntegerTypeKind
                                                      ? LLVMGetIntTypeWidth(t)
                                                      : 64);
  LLVMValueRef same = LLVMBuildICmp(M->b, LLVMIntEQ, LLVMBuildBitCast(M->b, got, it, ""),
                                    LLVMBuildBitCast(M->b, old, it, ""), "");
  LLVMBuildCondBr(M->b, same, done, loop);
  LLVMPositionBuilderAtEnd(M->b, done);
}

/* ctr[0] += 1 (seq_cst), ctr[1] += 1 (relaxed), ctr[2] = max(gtid),
 * ctr[4] = max(gsize) (relaxed),
 * ctr[3] += 1 (CAS loop), *facc += 0.5 (fadd), *fcas += 1 (f32 CAS loop),
 * blk[ctaid] = threads that incremented a shared counter.
 * frame: ctr (i64[5]), facc (f64), fcas (f32), blk (i32[grid]). */
static cg_fn *k_atomic(cg_module *M) {
  cg_fn *f = cg_gpu_kernel_begin(M, "atomic", 128);
  LLVMValueRef ctr = word(f, 0, M->t_ptr), g = simt_gtid(f), one = cg_i64(M, 1);
  simt_atomic(f, LLVMAtomicRMWBinOpAdd, ctr, one);
  simt_atomic_relaxed(f, LLVMAtomicRMWBinOpAdd, at(f, M->t_i64, ctr, one), one);
  simt_atomic(f, LLVMAtomicRMWBinOpMax, at(f, M->t_i64, ctr, cg_i64(M, 2)), g);
  simt_atomic_relaxed(f, LLVMAtomicRMWBinOpUMax, at(f, M->t_i64, ctr, cg_i64(M, 4)), simt_gsize(f));
  cas_add(f, M->t_i64, at(f, M->t_i64, ctr, cg_i64(M, 3)), one);
  simt_atomic(f, LLVMAtomicRMWBinOpFAdd, word(f, 1, M->t_ptr), LLVMConstReal(M->t_f64, 0.5));
  cas_add(f, M->t_f32, word(f, 2, M->t_ptr), LLVMConstReal(M->t_f32, 1.0));
  /* two shared arrays: the counter starts 16 bytes after pad, so the
   * bytes stored into pad must not reach it */
  LLVMValueRef pad = simt_shared(f, M->t_i8, 3, "pad");
  LLVMValueRef sc = simt_shared(f, M->t_i32, 1, "count");
  LLVMValueRef first = LLVMBuildICmp(M->b, LLVMIntEQ, simt_tid(f), c32(M, 0), "");
  ifb b;
  if_begin(f, first, &b);
  LLVMBuildStore(M->b, c32(M, 0), sc);
  for (int i = 0; i < 3; i++)
    LLVMBuildStore(M->b, LLVMConstInt(M->t_i8, 0x7f, 0), at(f, M->t_i8, pad, cg_i64(M, i)));
  if_end(f, &b);
  simt_barrier(f);
  simt_atomic(f, LLVMAtomicRMWBinOpAdd, sc, c32(M, 1));
  simt_barrier(f);
  if_begin(f, first, &b);
  LLVMBuildStore(M->b, LLVMBuildLoad2(M->b, M->t_i32, sc, ""),
                 at(f, M->t_i32, word(f, 3, M->t_ptr), simt_ctaid(f)));
  if_end(f, &b);
  cg_kernel_end(f);
  return f;
}

/* Thread 0 of block b waits until block b-1 has published, then publishes
 * vals[b] = vals[b-1] + 1 (fence before the flag). frame: flags (i32),
 * vals (i64). */
static cg_fn *k_chain(cg_module *M) {
  cg_fn *f = cg_gpu_kernel_begin(M, "chain", 32);
  LLVMValueRef flags = word(f, 0, M->t_ptr), vals = word(f, 1, M->t_ptr);
  ifb b;
  if_begin(f, LLVMBuildICmp(M->b, LLVMIntEQ, simt_tid(f), c32(M, 0), ""), &b);
  LLVMValueRef blk = LLVMBuildZExt(M->b, simt_ctaid(f), M->t_i64, "");
  LLVMValueRef prev = LLVMBuildSub(M->b, blk, cg_i64(M, 1), "");
  LLVMValueRef v = cg_alloca(f, M->t_i64);
  LLVMBuildStore(M->b, cg_i64(M, 0), v);
  ifb w;
  if_begin(f, LLVMBuildICmp(M->b, LLVMIntUGT, blk, cg_i64(M, 0), ""), &w);
  LLVMBasicBlockRef spin = cg_block(f, "spin"), wait = cg_block(f, "wait"),
                    ready = cg_block(f, "ready");
  LLVMBuildBr(M->b, spin);
  LLVMPositionBuilderAtEnd(M->b, spin);
  LLVMValueRef fl = simt_load_volatile(f, M->t_i32, at(f, M->t_i32, flags, prev));
  LLVMBuildCondBr(M->b, LLVMBuildICmp(M->b, LLVMIntNE, fl, c32(M, 0), ""), ready, wait);
  LLVMPositionBuilderAtEnd(M->b, wait);
  simt_yield(f);
  LLVMBuildBr(M->b, spin);
  LLVMPositionBuilderAtEnd(M->b, ready);
  simt_fence(f);
  LLVMBuildStore(M->b, simt_load_volatile(f, M->t_i64, at(f, M->t_i64, vals, prev)), v);
  if_end(f, &w);
  LLVMValueRef nv = LLVMBuildAdd(M->b, LLVMBuildLoad2(M->b, M->t_i64, v, ""), cg_i64(M, 1), "");
  simt_store_volatile(f, nv, at(f, M->t_i64, vals, blk));
  simt_fence(f);
  simt_store_volatile(f, c32(M, 1), at(f, M->t_i32, flags, blk));
  if_end(f, &b);
  cg_kernel_end(f);
  return f;
}

/* Threads gtid == frame[1] and gtid == frame[2] fail through cg_fail with
 * (gtid, 99) and (gtid, 7); gtid == frame[3] fails a cg_check with
 * (gtid, 5); after a barrier every thread stores cg_failed() to out.
 * frame: out (u8), the three indices. */
static cg_fn *k_fail(cg_module *M, uint32_t site, uint32_t site2) {
  cg_fn *f = cg_gpu_kernel_begin(M, "fail", 64);
  LLVMValueRef g = simt_gtid(f);
  ifb b;
  if_begin(f, LLVMBuildICmp(M->b, LLVMIntEQ, g, word(f, 1, M->t_i64), ""), &b);
  cg_fail(f, site, g, cg_i64(M, 99));
  if_end(f, &b);
  if_begin(f, LLVMBuildICmp(M->b, LLVMIntEQ, g, word(f, 2, M->t_i64), ""), &b);
  cg_fail(f, site, g, LLVMConstInt(M->t_i32, 7, 0)); /* an i32 value widens */
  if_end(f, &b);
  cg_check(f, LLVMBuildICmp(M->b, LLVMIntNE, g, word(f, 3, M->t_i64), ""), site2, g, cg_i64(M, 5));
  simt_barrier(f);
  LLVMBuildStore(M->b, LLVMBuildZExt(M->b, cg_failed(f), M->t_i8, ""),
                 at(f, M->t_i8, word(f, 0, M->t_ptr), g));
  cg_kernel_end(f);
  return f;
}

/* `iters` times: mark; p = tmp_alloc(bytes); q = tmp_alloc(bytes); when
 * bytes >= 16, p[0] = gtid and q[0] = i, and sum += p[0] + q[0]; release.
 * Then sum[gtid] = sum and off[gtid] = (char *)q - (char *)ctl (the last
 * q). The first allocation happens inside a loop, so the lazily built
 * base must dominate from the entry block. frame: bytes, iters, sum, off. */
static cg_fn *k_tmp(cg_module *M) {
  cg_fn *f = cg_gpu_kernel_begin(M, "tmp", 0);
  LLVMValueRef bytes = word(f, 0, M->t_i64), g = simt_gtid(f);
  LLVMValueRef sum = cg_alloca(f, M->t_i64), last = cg_alloca(f, M->t_ptr);
  LLVMBuildStore(M->b, cg_i64(M, 0), sum);
  LLVMBuildStore(M->b, f->tctx, last);
  cg_loop l;
  LLVMValueRef i = cg_loop_begin(f, &l, cg_i64(M, 0), word(f, 1, M->t_i64));
  LLVMValueRef mark = cg_tmp_mark(f);
  LLVMValueRef p = cg_tmp_alloc(f, bytes, IR_NONE);
  LLVMValueRef q = cg_tmp_alloc(f, bytes, IR_NONE);
  ifb b;
  if_begin(f, LLVMBuildICmp(M->b, LLVMIntSGE, bytes, cg_i64(M, 16), ""), &b);
  LLVMBuildStore(M->b, g, p);
  LLVMBuildStore(M->b, i, q);
  LLVMValueRef s = LLVMBuildAdd(M->b, LLVMBuildLoad2(M->b, M->t_i64, p, ""),
                                LLVMBuildLoad2(M->b, M->t_i64, q, ""), "");
  LLVMBuildStore(M->b, LLVMBuildAdd(M->b, LLVMBuildLoad2(M->b, M->t_i64, sum, ""), s, ""), sum);
  if_end(f, &b);
  LLVMBuildStore(M->b, q, last);
  cg_tmp_release(f, mark);
  cg_loop_end(f, &l);
  LLVMBuildStore(M->b, LLVMBuildLoad2(M->b, M->t_i64, sum, ""),
                 at(f, M->t_i64, word(f, 2, M->t_ptr), g));
  LLVMValueRef off = LLVMBuildSub(
      M->b, LLVMBuildPtrToInt(M->b, LLVMBuildLoad2(M->b, M->t_ptr, last, ""), M->t_i64, ""),
      LLVMBuildPtrToInt(M->b, f->tctx, M->t_i64, ""), "");
  LLVMBuildStore(M->b, off, at(f, M->t_i64, word(f, 3, M->t_ptr), g));
  cg_kernel_end(f);
  return f;
}

/* out[gtid] = in[gtid - shift] through a bounds-checked cg_read (indices
 * out of range fail and read 0); then a fresh i64 array of
 * `len` elements (cg_new_array, temporary memory), element 0 = gtid when
 * it has one, and len2[gtid] = its extent, sum2[gtid] = its element 0 (or
 * -1). frame: in (i32), extent, out (i32), len, len2, sum2, shift. */
static cg_fn *k_read(cg_module *M) {
  cg_fn *f = cg_gpu_kernel_begin(M, "read", 0);
  LLVMValueRef g = simt_gtid(f);
  cg_leaf a = {.kind = CL_ARRAY, .sc = AC_I32, .rank = 1};
  LLVMValueRef ext = word(f, 1, M->t_i64);
  a.v = word(f, 0, M->t_ptr);
  a.ext = &ext;
  LLVMValueRef idx = LLVMBuildSub(M->b, g, word(f, 6, M->t_i64), "");
  LLVMValueRef v = cg_read(f, &a, &idx, true, IR_NONE);
  LLVMBuildStore(M->b, v, at(f, M->t_i32, word(f, 2, M->t_ptr), g));
  cg_leaf n;
  LLVMValueRef len = word(f, 3, M->t_i64);
  cg_new_array(f, AC_I64, 1, &len, IR_NONE, &n);
  LLVMValueRef first = cg_alloca(f, M->t_i64);
  LLVMBuildStore(M->b, cg_i64(M, -1), first);
  ifb b;
  if_begin(f, LLVMBuildICmp(M->b, LLVMIntSGT, n.ext[0], cg_i64(M, 0), ""), &b);
  cg_store_elem(f, &n, cg_i64(M, 0), g);
  LLVMBuildStore(M->b, cg_load_elem(f, &n, cg_i64(M, 0)), first);
  if_end(f, &b);
  LLVMBuildStore(M->b, n.ext[0], at(f, M->t_i64, word(f, 4, M->t_ptr), g));
  LLVMBuildStore(M->b, LLVMBuildLoad2(M->b, M->t_i64, first, ""),
                 at(f, M->t_i64, word(f, 5, M->t_ptr), g));
  cg_kernel_end(f);
  return f;
}

/* ---- the SIMT emulator runs ---- */

static const char *const reduce_names[] = {"reduce_i8", "reduce_i32", "reduce_i64", "reduce_f32",
                                           "reduce_f64"};

UNIT_TEST(block_reduction_with_shuffles_and_shared_memory) {
  enum { BLOCK = 128, GRID = 3, N = BLOCK * GRID - 17 };
  for (unsigned ty = 0; ty < 5; ty++) {
    fx x;
    if (!fx_init(&x, CG_TARGET_SIMT)) {
      CHECK(false);
      fx_fini(&x);
      return;
    }
    cg_module *M = &x.M;
    LLVMTypeRef ts[5] = {M->t_i8, M->t_i32, M->t_i64, M->t_f32, M->t_f64};
    cg_fn *f = k_reduce(M, reduce_names[ty], ts[ty], BLOCK);
    CHECK_EQ_INT(cg_gpu_smem(f), ty == 0 ? 16 : ty == 2 || ty == 4 ? 32 : 16);
    uint64_t smem = cg_gpu_smem(f);
    rt_gkernel_fn fn = fx_compile(&x, reduce_names[ty]);
    alignas(16) unsigned char in[N * 8], out[GRID * 8];
    double want[GRID] = {0};
    for (int i = 0; i < N; i++) {
      int v = (i * 37) % 11 - 3; /* exact in every type; i8 sums wrap as the kernel's do */
      want[i / BLOCK] += v;
      switch (ty) {
      case 0:
        in[i] = (unsigned char)(int8_t)v;
        break;
      case 1:
        ((int32_t *)in)[i] = v * 1000;
        break;
      case 2:
        ((int64_t *)in)[i] = v * ((int64_t)1 << 33);
        break;
      case 3:
        ((float *)in)[i] = (float)v * 0.25f;
        break;
      default:
        ((double *)in)[i] = v * 0.125;
        break;
      }
    }
    memset(out, 0xee, sizeof out);
    uint64_t frame[2] = {ptr_word(in), ptr_word(out)};
    rt_gctl ctl;
    memset(&ctl, 0, sizeof ctl);
    CHECK(fx_run(&x, fn, GRID, BLOCK, smem, frame, &ctl, N));
    for (int b = 0; b < GRID; b++) {
      switch (ty) {
      case 0:
        CHECK_EQ_INT(((int8_t *)out)[b], (int8_t)(int64_t)want[b]);
        break;
      case 1:
        CHECK_EQ_INT(((int32_t *)out)[b], (int64_t)want[b] * 1000);
        break;
      case 2:
        CHECK_EQ_INT(((int64_t *)out)[b], (int64_t)want[b] * ((int64_t)1 << 33));
        break;
      case 3:
        CHECK(((float *)out)[b] == (float)want[b] * 0.25f);
        break;
      default:
        CHECK(((double *)out)[b] == want[b] * 0.125);
        break;
      }
    }
    CHECK_EQ_INT(ctl.failed, 0);
    fx_fini(&x);
  }
}

UNIT_TEST(warp_scan_with_shfl_up_and_reverse_with_shfl_idx) {
  enum { BLOCK = 64, GRID = 2, N = BLOCK * GRID };
  fx x;
  if (!fx_init(&x, CG_TARGET_SIMT)) {
    CHECK(false);
    fx_fini(&x);
    return;
  }
  cg_fn *f = k_scan(&x.M);
  CHECK_EQ_INT(cg_gpu_smem(f), 0);
  rt_gkernel_fn fn = fx_compile(&x, "scan");
  int64_t in[N], scan[N], rev[N];
  for (int i = 0; i < N; i++)
    in[i] = ((int64_t)(i % 5) << 32) + i * 3 - 40; /* high halves matter */
  uint64_t frame[3] = {ptr_word(in), ptr_word(scan), ptr_word(rev)};
  rt_gctl ctl;
  memset(&ctl, 0, sizeof ctl);
  CHECK(fx_run(&x, fn, GRID, BLOCK, 0, frame, &ctl, N));
  for (int w = 0; w < N / 32; w++) {
    int64_t acc = 0;
    for (int l = 0; l < 32; l++) {
      acc += in[w * 32 + l];
      CHECK_EQ_INT(scan[w * 32 + l], acc);
      CHECK_EQ_INT(rev[w * 32 + l], in[w * 32 + 31 - l]);
    }
  }
  fx_fini(&x);
}

UNIT_TEST(shuffles_of_narrow_bool_float_and_pointer_values) {
  enum { BLOCK = 64, N = BLOCK };
  fx x;
  if (!fx_init(&x, CG_TARGET_SIMT)) {
    CHECK(false);
    fx_fini(&x);
    return;
  }
  k_types(&x.M);
  rt_gkernel_fn fn = fx_compile(&x, "types");
  uint8_t o8[N], ob[N];
  double od[N];
  float of[N];
  int64_t op[N];
  char base[1];
  uint64_t frame[6] = {ptr_word(o8), ptr_word(ob), ptr_word(od),
                       ptr_word(of), ptr_word(op), ptr_word(base)};
  rt_gctl ctl;
  memset(&ctl, 0, sizeof ctl);
  CHECK(fx_run(&x, fn, 1, BLOCK, 0, frame, &ctl, N));
  for (int g = 0; g < N; g++) {
    int lane = g % 32, w0 = g - lane;
    int down = lane + 1 > 31 ? g : g + 1, up = lane < 2 ? g : g - 2;
    CHECK_EQ_INT(o8[g], (uint8_t)(down * 7));
    CHECK_EQ_INT(ob[g], (g ^ 1) & 1);
    CHECK(od[g] == up + 0.5);
    CHECK(of[g] == (float)w0);
    CHECK_EQ_INT(op[g], w0 + (lane ^ 3));
  }
  fx_fini(&x);
}

UNIT_TEST(ballot_any_and_all) {
  enum { BLOCK = 96, N = BLOCK };
  fx x;
  if (!fx_init(&x, CG_TARGET_SIMT)) {
    CHECK(false);
    fx_fini(&x);
    return;
  }
  k_vote(&x.M);
  rt_gkernel_fn fn = fx_compile(&x, "vote");
  /* warp 0: a pattern without zeros; warp 1: all positive; warp 2: none
   * positive and one zero */
  int32_t in[N];
  uint32_t ballot[N];
  uint8_t anyall[N];
  uint32_t want0 = 0;
  for (int g = 0; g < N; g++) {
    if (g < 32) {
      in[g] = (g * 5) % 7 < 3 ? g + 1 : -g;
      if (in[g] > 0)
        want0 |= 1u << g;
    } else {
      in[g] = g < 64 ? 100 + g : g == 70 ? 0 : -1 - g;
    }
  }
  uint64_t frame[3] = {ptr_word(in), ptr_word(ballot), ptr_word(anyall)};
  rt_gctl ctl;
  memset(&ctl, 0, sizeof ctl);
  CHECK(fx_run(&x, fn, 1, BLOCK, 0, frame, &ctl, N));
  for (int g = 0; g < N; g++) {
    uint32_t want = g < 32 ? want0 : g < 64 ? 0xffffffffu : 0;
    CHECK_EQ_INT(ballot[g], want);
    /* all() of the raw i32 (nonzero): false only in warp 2, which has a 0 */
    CHECK_EQ_INT(anyall[g], (want != 0) | (g < 64 ? 2 : 0));
  }
  fx_fini(&x);
}

UNIT_TEST(atomics_count_every_thread) {
  enum { BLOCK = 128, GRID = 5, T = BLOCK * GRID };
  fx x;
  if (!fx_init(&x, CG_TARGET_SIMT)) {
    CHECK(false);
    fx_fini(&x);
    return;
  }
  cg_fn *f = k_atomic(&x.M);
  CHECK_EQ_INT(cg_gpu_smem(f), 32); /* 3 bytes rounded to 16, then 4 */
  uint64_t smem = cg_gpu_smem(f);
  rt_gkernel_fn fn = fx_compile(&x, "atomic");
  int64_t ctr[5] = {0, 0, -1, 0, 0};
  double facc = 0;
  float fcas = 0;
  int32_t blk[GRID] = {0};
  uint64_t frame[4] = {ptr_word(ctr), ptr_word(&facc), ptr_word(&fcas), ptr_word(blk)};
  rt_gctl ctl;
  memset(&ctl, 0, sizeof ctl);
  CHECK(fx_run(&x, fn, GRID, BLOCK, smem, frame, &ctl, T));
  CHECK_EQ_INT(ctr[0], T);
  CHECK_EQ_INT(ctr[1], T);
  CHECK_EQ_INT(ctr[2], T - 1);
  CHECK_EQ_INT(ctr[3], T);
  CHECK_EQ_INT(ctr[4], T);
  CHECK(facc == T * 0.5);
  CHECK(fcas == (float)T);
  for (int b = 0; b < GRID; b++)
    CHECK_EQ_INT(blk[b], BLOCK);
  fx_fini(&x);
}

UNIT_TEST(spin_wait_chain_across_blocks) {
  enum { GRID = 6 };
  fx x;
  if (!fx_init(&x, CG_TARGET_SIMT)) {
    CHECK(false);
    fx_fini(&x);
    return;
  }
  k_chain(&x.M);
  rt_gkernel_fn fn = fx_compile(&x, "chain");
  int32_t flags[GRID] = {0};
  int64_t vals[GRID] = {0};
  uint64_t frame[2] = {ptr_word(flags), ptr_word(vals)};
  rt_gctl ctl;
  memset(&ctl, 0, sizeof ctl);
  CHECK(fx_run(&x, fn, GRID, 32, 0, frame, &ctl, 0));
  for (int b = 0; b < GRID; b++) {
    CHECK_EQ_INT(vals[b], b + 1);
    CHECK_EQ_INT(flags[b], 1);
  }
  fx_fini(&x);
}

UNIT_TEST(failures_go_to_the_control_block_first_one_wins) {
  enum { BLOCK = 64, GRID = 2, T = BLOCK * GRID };
  fx x;
  if (!fx_init(&x, CG_TARGET_SIMT)) {
    CHECK(false);
    fx_fini(&x);
    return;
  }
  uint32_t site = cg_site(&x.M, IR_NONE, "boom %lld %lld");
  uint32_t site2 = cg_site(&x.M, IR_NONE, "check %lld %lld");
  k_fail(&x.M, site, site2);
  rt_gkernel_fn fn = fx_compile(&x, "fail");
  uint8_t out[T];
  rt_gctl ctl;
  struct {
    int64_t i1, i2, i3; /* failing threads (-1: none) */
    int32_t site;
    int64_t a, b; /* the first failure in the emulator's order */
  } cases[] = {
      {-1, -1, -1, -1, 0, 0},      {80, 37, 90, site, 37, 7},    {90, -1, 70, site2, 70, 5},
      {-1, 100, -1, site, 100, 7}, {-1, -1, 127, site2, 127, 5},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    uint64_t frame[4] = {ptr_word(out), (uint64_t)cases[c].i1, (uint64_t)cases[c].i2,
                         (uint64_t)cases[c].i3};
    memset(&ctl, 0, sizeof ctl);
    memset(out, 0xee, sizeof out);
    CHECK(fx_run(&x, fn, GRID, BLOCK, 0, frame, &ctl, T));
    CHECK_EQ_INT(ctl.failed, cases[c].site >= 0);
    if (cases[c].site >= 0) {
      CHECK_EQ_INT(ctl.site, cases[c].site);
      CHECK_EQ_INT(ctl.a, cases[c].a);
      CHECK_EQ_INT(ctl.b, cases[c].b);
    }
    /* cg_failed after the barrier: the whole block that failed and every
     * block after it see the failure, blocks before it do not */
    int64_t first = cases[c].site >= 0 ? cases[c].a : -1;
    for (int g = 0; g < T; g++)
      CHECK_EQ_INT(out[g], first >= 0 && g / BLOCK >= first / BLOCK);
  }
  fx_fini(&x);
}

/* Runs k_tmp over T threads with per-thread budget `per` of the launch's
 * temporary memory `tmp` (NULL: none), filling *ctl. */
static void tmp_run(fx *x, rt_gkernel_fn fn, rt_gctl *ctl, int64_t bytes, int64_t iters,
                    unsigned char *tmp, int64_t per, int64_t *sum, int64_t *off, int threads) {
  memset(ctl, 0, sizeof *ctl);
  ctl->tmp = ptr_word(tmp);
  ctl->tmp_per_thread = per;
  uint64_t frame[4] = {(uint64_t)bytes, (uint64_t)iters, ptr_word(sum), ptr_word(off)};
  CHECK(fx_run(x, fn, (unsigned)threads / 64, 64, 0, frame, ctl, threads));
}

UNIT_TEST(temporary_memory_per_thread) {
  enum { T = 128 };
  fx x;
  if (!fx_init(&x, CG_TARGET_SIMT)) {
    CHECK(false);
    fx_fini(&x);
    return;
  }
  k_tmp(&x.M);
  rt_gkernel_fn fn = fx_compile(&x, "tmp");
  uint32_t nsites0 = x.plan->nsites;
  int64_t sum[T], off[T];
  const int64_t per = 64;
  unsigned char *tmp = aligned_alloc(16, T * per);
  int64_t tmpoff = (int64_t)ptr_word(tmp);
  rt_gctl ctl;
  if (tmp && fn) {
    /* 20 bytes round to 32: two fit in 64, and release makes room for the
     * next iteration (3 iterations would need 192 bytes without it) */
    tmp_run(&x, fn, &ctl, 20, 3, tmp, per, sum, off, T);
    CHECK_EQ_INT(ctl.failed, 0);
    for (int g = 0; g < T; g++) {
      CHECK_EQ_INT(sum[g], 3 * g + 0 + 1 + 2);
      /* q = ctl->tmp + g * per + 32, as an offset from ctl */
      CHECK_EQ_INT(off[g] + (int64_t)ptr_word(&ctl), tmpoff + g * per + 32);
    }
    /* 40 bytes round to 48: the second request does not fit */
    tmp_run(&x, fn, &ctl, 40, 1, tmp, per, sum, off, T);
    CHECK_EQ_INT(ctl.failed, 1);
    CHECK(ctl.site >= 0 && (uint32_t)ctl.site < x.plan->nsites);
    if (ctl.site >= 0 && (uint32_t)ctl.site < x.plan->nsites)
      CHECK_STR(x.plan->sites[ctl.site].fmt,
                "temporary memory exhausted: %lld bytes requested with %lld bytes per GPU thread");
    CHECK_EQ_INT(ctl.a, 40);
    CHECK_EQ_INT(ctl.b, per);
    for (int g = 0; g < T; g++)
      CHECK_EQ_INT(off[g], RT_GCTL_DUMMY); /* the failed request got the dummy */
    /* an absurd size fails as on the CPU */
    tmp_run(&x, fn, &ctl, -8, 1, tmp, per, sum, off, T);
    CHECK_EQ_INT(ctl.failed, 1);
    if (ctl.site >= 0 && (uint32_t)ctl.site < x.plan->nsites)
      CHECK_STR(x.plan->sites[ctl.site].fmt, "array too large");
    CHECK_EQ_INT(ctl.a, -8);
    CHECK_EQ_INT(ctl.b, 0);
    /* no temporary memory in the launch: empty requests still succeed */
    tmp_run(&x, fn, &ctl, 0, 2, NULL, 0, sum, off, T);
    CHECK_EQ_INT(ctl.failed, 0);
    tmp_run(&x, fn, &ctl, 16, 1, NULL, 0, sum, off, T);
    CHECK_EQ_INT(ctl.failed, 1);
    CHECK_EQ_INT(ctl.a, 16);
    CHECK_EQ_INT(ctl.b, 0);
  }
  CHECK_EQ_INT(nsites0, 2); /* both sites made at code generation */
  free(tmp);
  fx_fini(&x);
}

UNIT_TEST(checked_reads_and_new_arrays_fail_through_ctl) {
  enum { T = 64, EXT = 50 };
  fx x;
  if (!fx_init(&x, CG_TARGET_SIMT)) {
    CHECK(false);
    fx_fini(&x);
    return;
  }
  k_read(&x.M);
  rt_gkernel_fn fn = fx_compile(&x, "read");
  int32_t in[T], out[T];
  int64_t len2[T], sum2[T];
  for (int i = 0; i < T; i++)
    in[i] = 1000 + i;
  alignas(16) unsigned char tmp[T * 64];
  /* No barrier in the kernel: the emulator runs thread 0 to its end first,
   * so its failure is the one recorded, and every later thread's array is
   * empty because the call has failed by then. */
  struct {
    int64_t shift, ext, len;
    const char *fmt; /* NULL: no failure */
    int64_t a, b;
  } cases[] = {
      {3, EXT, 4, "index %lld out of bounds for dimension 0 of extent %lld", -3, EXT},
      {0, T, -2, "negative extent %lld", -2, 0},
      {0, T, 9, "temporary memory exhausted: %lld bytes requested with %lld bytes per GPU thread",
       72, 64},
      {0, T, 4, NULL, 0, 0},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    uint64_t frame[7] = {
        ptr_word(in),   (uint64_t)cases[c].ext, ptr_word(out),           (uint64_t)cases[c].len,
        ptr_word(len2), ptr_word(sum2),         (uint64_t)cases[c].shift};
    rt_gctl ctl;
    memset(&ctl, 0, sizeof ctl);
    ctl.tmp = ptr_word(tmp);
    ctl.tmp_per_thread = 64;
    CHECK(fx_run(&x, fn, 1, T, 0, frame, &ctl, T));
    CHECK_EQ_INT(ctl.failed, cases[c].fmt != NULL);
    if (cases[c].fmt) {
      if (ctl.site >= 0 && (uint32_t)ctl.site < x.plan->nsites)
        CHECK_STR(x.plan->sites[ctl.site].fmt, cases[c].fmt);
      CHECK_EQ_INT(ctl.a, cases[c].a);
      CHECK_EQ_INT(ctl.b, cases[c].b);
    }
    for (int g = 0; g < T; g++) {
      int64_t i = g - cases[c].shift;
      CHECK_EQ_INT(out[g], i >= 0 && i < cases[c].ext ? 1000 + i : 0);
      CHECK_EQ_INT(len2[g], cases[c].fmt ? 0 : cases[c].len);
      CHECK_EQ_INT(sum2[g], cases[c].fmt ? -1 : g);
    }
  }
  fx_fini(&x);
}

/* ---- NVPTX: verified IR, PTX from llc-19, ptxas ---- */

static const char *find_tool(const char *const *paths) {
  for (size_t i = 0; paths[i]; i++)
    if (access(paths[i], X_OK) == 0)
      return paths[i];
  return NULL;
}

static int count(const char *text, const char *needle) {
  int n = 0;
  for (const char *p = text; (p = strstr(p, needle)) != NULL; p += strlen(needle))
    n++;
  return n;
}

/* Lines of text containing `a` that end in `tail`. */
static int count_lines(const char *text, const char *a, const char *tail) {
  int n = 0;
  size_t tl = strlen(tail);
  for (const char *p = text; *p;) {
    const char *e = strchr(p, '\n');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    char line[512];
    if (len < sizeof line) {
      memcpy(line, p, len);
      line[len] = 0;
      if (strstr(line, a) && len >= tl && strcmp(line + len - tl, tail) == 0)
        n++;
    }
    p += len + (e ? 1 : 0);
  }
  return n;
}

/* Every kernel of the SIMT tests, for NVPTX. */
static void build_all(cg_module *M) {
  LLVMTypeRef ts[5] = {M->t_i8, M->t_i32, M->t_i64, M->t_f32, M->t_f64};
  for (unsigned ty = 0; ty < 5; ty++)
    k_reduce(M, reduce_names[ty], ts[ty], 128);
  k_scan(M);
  k_types(M);
  k_vote(M);
  k_atomic(M);
  k_chain(M);
  k_fail(M, cg_site(M, IR_NONE, "boom %lld %lld"), cg_site(M, IR_NONE, "check %lld %lld"));
  k_tmp(M);
  k_read(M);
}

/* What LLVM 19 must make of build_all's kernels, in PTX from llc-19
 * (unoptimised IR) and from nv_emit (the O3 pipeline). */
static void check_ptx(const char *text) {
  /* `.entry` from the calling convention alone; `.maxntid` from the
   * metadata (LLVM 19 ignores the attribute) */
  CHECK_EQ_INT(count(text, ".entry "), 13);
  CHECK(strstr(text, ".visible .entry reduce_f64("));
  CHECK_EQ_INT(count(text, ".maxntid 128, 1, 1"), 6);
  CHECK_EQ_INT(count(text, ".maxntid "), 9);
  /* shuffles: full mask, c = 31 except for up (0) */
  CHECK(count_lines(text, "shfl.sync.down.b32", ", 31, -1;") > 0);
  CHECK(count_lines(text, "shfl.sync.bfly.b32", ", 31, -1;") > 0);
  CHECK(count_lines(text, "shfl.sync.idx.b32", ", 31, -1;") > 0);
  CHECK(count_lines(text, "shfl.sync.up.b32", ", 0, -1;") > 0);
  CHECK_EQ_INT(count(text, "shfl.sync.up"), count_lines(text, "shfl.sync.up", ", 0, -1;"));
  CHECK_EQ_INT(count(text, "shfl.sync") - count(text, "shfl.sync.up"),
               count_lines(text, "shfl.sync", ", 31, -1;"));
  CHECK(count_lines(text, "vote.sync.ballot.b32", ", -1;") > 0);
  CHECK(count_lines(text, "vote.sync.any.pred", ", -1;") > 0);
  CHECK(count_lines(text, "vote.sync.all.pred", ", -1;") > 0);
  CHECK(strstr(text, "bar.sync"));
  CHECK(strstr(text, "membar.gl;"));
  CHECK(strstr(text, "nanosleep.u32"));
  CHECK(strstr(text, ".shared .align 16 .b8"));
  CHECK(strstr(text, "atom.global.cas.b32")); /* ctl->failed */
  CHECK(strstr(text, "ld.volatile"));
  CHECK(strstr(text, "st.volatile"));
  CHECK(strstr(text, "%tid.x") && strstr(text, "%ntid.x") && strstr(text, "%ctaid.x") &&
        strstr(text, "%nctaid.x"));
}

/* Assembles PTX file `ptx` for sm_75 when ptxas exists. */
static void assemble(const char *ptxas, const char *ptx, const char *cubin) {
  if (!ptxas) {
    printf("SKIPPED: ptxas (not found)\n");
    return;
  }
  char cmd[512];
  snprintf(cmd, sizeof cmd, "%s -arch=sm_75 %s -o %s", ptxas, ptx, cubin);
  CHECK_EQ_INT(system(cmd), 0);
  unlink(cubin);
}

UNIT_TEST(nvptx_kernels_verify_and_assemble) {
  fx x;
  if (!fx_init(&x, CG_TARGET_NVPTX)) {
    CHECK(false);
    fx_fini(&x);
    return;
  }
  cg_module *M = &x.M;
  build_all(M);
  CHECK_EQ_INT(M->st, AC_OK);
  if (M->st != AC_OK)
    fprintf(stderr, "%s\n", ac_error_message(M->err));
  char *msg = NULL;
  CHECK(!LLVMVerifyModule(M->mod, LLVMReturnStatusAction, &msg));
  if (msg && *msg)
    fprintf(stderr, "%s\n", msg);
  LLVMDisposeMessage(msg);
  /* the IR: PTX kernels with both forms of the launch bound, no calls to
   * host services */
  char *ir = LLVMPrintModuleToString(M->mod);
  /* frame, ctl, n, then the parameter block's mask and 63 words */
  CHECK(strstr(ir, "define ptx_kernel void @scan(ptr noalias nocapture %frame, ptr %ctl, i64 %n, "
                   "i64 %params, i64 %0, i64 %1, "));
  CHECK(strstr(ir, ", i64 %61, i64 %62)"));
  CHECK_EQ_INT(count(ir, "\"nvvm.maxntid\"=\"128\""), 1); /* one attribute group */
  CHECK_EQ_INT(count(ir, "!\"maxntidx\", i32 128}"), 6);
  CHECK_EQ_INT(count(ir, "!\"maxntidx\", i32 "), 9);
  CHECK(!strstr(ir, "!\"kernel\""));
  CHECK(!strstr(ir, "ac_simt_") && !strstr(ir, "ac_rt_"));
  CHECK(strstr(ir, "addrspace(3) global [4 x i32] undef, align 16"));
  LLVMDisposeMessage(ir);

  static const char *const llcs[] = {"/usr/lib/llvm-19/bin/llc", "/usr/bin/llc-19", NULL};
  static const char *const ptxases[] = {"/usr/local/cuda/bin/ptxas", NULL};
  const char *llc = find_tool(llcs), *ptxas = find_tool(ptxases);
  char dir[] = "/tmp/simt_cgXXXXXX";
  if (!mkdtemp(dir)) {
    CHECK(false);
    fx_fini(&x);
    return;
  }
  char ll[64], ptx[64], cubin[64], cmd[512];
  snprintf(ll, sizeof ll, "%s/k.ll", dir);
  snprintf(ptx, sizeof ptx, "%s/k.ptx", dir);
  snprintf(cubin, sizeof cubin, "%s/k.cubin", dir);
  if (!llc) {
    printf("SKIPPED: PTX from llc-19 (not found)\n");
  } else {
    CHECK(!LLVMPrintModuleToFile(M->mod, ll, NULL));
    snprintf(cmd, sizeof cmd, "%s -mcpu=sm_75 %s -o %s", llc, ll, ptx);
    CHECK_EQ_INT(system(cmd), 0);
    char *text = unit_read_file(ptx, NULL);
    CHECK(text != NULL);
    if (text)
      check_ptx(text);
    free(text);
    assemble(ptxas, ptx, cubin);
    unlink(ll);
    unlink(ptx);
  }
  /* the real pipeline: nv_emit (O3) */
  char *text = NULL;
  size_t len = 0;
  ac_error *err = NULL;
  CHECK_EQ_INT(nv_emit(M, 75, 0, &text, &len, NULL, &err), AC_OK);
  if (err)
    fprintf(stderr, "nv_emit: %s\n", ac_error_message(err));
  ac_error_destroy(err);
  if (text) {
    check_ptx(text);
    FILE *fp = fopen(ptx, "wb");
    CHECK(fp && fwrite(text, 1, len, fp) == len);
    if (fp)
      fclose(fp);
    assemble(ptxas, ptx, cubin);
    unlink(ptx);
  }
  ac_free(x.ctx, text);
  rmdir(dir);
  fx_fini(&x);
}

UNIT_TEST(simt_functions_in_a_cpu_kernel_are_internal_errors) {
  ac_context *ctx = ac_context_create();
  ac_module *m = NULL;
  ac_error *err = NULL;
  const char *src = "fn f(a: i64) -> i64 { a }\n";
  CHECK_EQ_INT(ac_module_parse(ctx, "t.ac", src, strlen(src), &m, &err), AC_OK);
  cg_module M;
  if (m && cg_module_init(&M, m, NULL, CG_TARGET_CPU, &err) == AC_OK) {
    cg_fn *f = cg_kernel_begin(&M, "k");
    simt_barrier(f);
    CHECK_EQ_INT(M.st, AC_ERR_INTERNAL);
    CHECK(strstr(ac_error_message(M.err), "a barrier in a CPU kernel"));
    cg_module_dispose(&M);
    cg_module_init(&M, m, NULL, CG_TARGET_CPU, &err);
    cg_gpu_kernel_begin(&M, "g", 0);
    CHECK_EQ_INT(M.st, AC_ERR_INTERNAL);
    cg_module_dispose(&M);
  }
  ac_error_destroy(err);
  ac_module_destroy(m);
  ac_context_destroy(ctx);
}

UNIT_MAIN(block_reduction_with_shuffles_and_shared_memory,
          warp_scan_with_shfl_up_and_reverse_with_shfl_idx,
          shuffles_of_narrow_bool_float_and_pointer_values, ballot_any_and_all,
          atomics_count_every_thread, spin_wait_chain_across_blocks,
          failures_go_to_the_control_block_first_one_wins, temporary_memory_per_thread,
          checked_reads_and_new_arrays_fail_through_ctl, nvptx_kernels_verify_and_assemble,
          simt_functions_in_a_cpu_kernel_are_internal_errors)
