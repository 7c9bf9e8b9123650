/* The PTX statistics of lib/target/ptxstats.c (arrayc --ptx-stats):
 *   - the analyser on hand-written PTX: instruction classes and element
 *     counts, declared registers and register pressure, natural loops
 *     (rotated and nested, as LLVM lays them out, and through brx.idx) and
 *     the hot-loop rule, .maxntid/.reqntid, and static shared memory with
 *     ptxas' layout (probed with ptxas 13.0; checked against it again here
 *     when a ptxas is installed);
 *   - `ptxas -v` output as CUDA 11, 12 and 13 print it, and running ptxas
 *     (when installed: the test says so when it skips);
 *   - the occupancy calculator: cases derived by hand below for each
 *     architecture, cuOccupancyMaxPotentialBlockSize's choice, and, when
 *     a CUDA toolkit's cuda_occupancy.h is found (ARRAYC_HAVE_CUDA_OCC),
 *     agreement with NVIDIA's own calculator over every register count
 *     and many block and shared memory sizes;
 *   - the report line, and out-of-memory handling.
 */
#define _POSIX_C_SOURCE 200809L /* setenv, unsetenv */
#include "unit.h"

#include "target/ptxstats.h"

#include "unit_oom.h"

#include <stdlib.h>

#ifdef ARRAYC_HAVE_CUDA_OCC
#include <cuda_occupancy.h>
#endif

/* ---- PTX samples ---- */

/* A vectorised loop: 16 instructions, the loop's 9 in one block. */
static const char VEC[] = ".version 7.8\n"
                          ".target sm_90\n"
                          ".address_size 64\n"
                          "\n"
                          "\t// .globl\tvec_loop\n"
                          ".visible .entry vec_loop(\n"
                          "\t.param .u64 vec_loop_param_0,\n"
                          "\t.param .u64 vec_loop_param_1\n"
                          ")\n"
                          ".maxntid 128, 2, 1\n"
                          "{\n"
                          "\t.reg .pred \t%p<2>;\n"
                          "\t.reg .b32 \t%r<4>;\n"
                          "\t.reg .f32 \t%f<10>;\n"
                          "\t.reg .b64 \t%rd<6>;\n"
                          "\n"
                          "\tld.param.u64 \t%rd1, [vec_loop_param_0];\n"
                          "\tld.param.u64 \t%rd2, [vec_loop_param_1];\n"
                          "\tcvta.to.global.u64 \t%rd3, %rd1;\n"
                          "\tcvta.to.global.u64 \t%rd4, %rd2;\n"
                          "\tmov.u32 \t%r1, 0;\n"
                          "$L__BB0_1:\n"
                          "\tld.global.nc.v4.f32 \t{%f1, %f2, %f3, %f4}, [%rd3];\n"
                          "\tld.global.v2.f32 \t{%f5, %f6}, [%rd4];\n"
                          "\tfma.rn.f32 \t%f7, %f1, %f5, %f2;\n"
                          "\tfma.rn.f32 \t%f8, %f3, %f6, %f4;\n"
                          "\tst.global.v2.f32 \t[%rd4], {%f7, %f8};\n"
                          "\tadd.s64 \t%rd3, %rd3, 16;\n"
                          "\tadd.s32 \t%r1, %r1, 1;\n"
                          "\tsetp.lt.u32 \t%p1, %r1, 100;\n"
                          "\t@%p1 bra \t$L__BB0_1;\n"
                          "\tmembar.gl;\n"
                          "\tret;\n"
                          "\n"
                          "}\n";

/* Shared arrays at module level and in a function, an .extern array, a
 * callee; and (kernel nest) an outer loop laid out as LLVM rotates it:
 * its latch $L__BB1_1 sits above its header $L__BB1_2, so no branch in it
 * goes back in the text. */
static const char SHARED_NEST[] = ".version 7.8\n"
                                  ".target sm_90\n"
                                  ".address_size 64\n"
                                  "\n"
                                  ".shared .align 4 .b8 buf[64];\n"
                                  ".shared .align 8 .b8 other[100];\n"
                                  ".extern .shared .align 16 .b8 dyn[];\n"
                                  "\n"
                                  ".func helper(\n"
                                  "\t.param .b64 helper_param_0\n"
                                  ")\n"
                                  "{\n"
                                  "\t.reg .b32 \t%r<3>;\n"
                                  "\t.reg .b64 \t%rd<3>;\n"
                                  "\tld.param.u64 \t%rd1, [helper_param_0];\n"
                                  "\tmov.u64 \t%rd2, other;\n"
                                  "\tld.shared.u32 \t%r1, [%rd2];\n"
                                  "\tst.global.u32 \t[%rd1], %r1;\n"
                                  "\tret;\n"
                                  "}\n"
                                  "\n"
                                  ".visible .entry caller(\n"
                                  "\t.param .u64 caller_param_0\n"
                                  ")\n"
                                  ".reqntid 64\n"
                                  "{\n"
                                  "\t.reg .b32 \t%r<3>;\n"
                                  "\t.reg .b64 \t%rd<3>;\n"
                                  "\t.shared .align 16 .u32 flag;\n"
                                  "\tld.param.u64 \t%rd1, [caller_param_0];\n"
                                  "\tld.shared.u32 \t%r1, [dyn];\n"
                                  "\tst.shared.u32 \t[flag], %r1;\n"
                                  "\tbar.sync \t0;\n"
                                  "\t{ // callseq 0, 0\n"
                                  "\t.param .b64 param0;\n"
                                  "\tst.param.b64 \t[param0+0], %rd1;\n"
                                  "\tcall.uni \n"
                                  "\thelper, \n"
                                  "\t(\n"
                                  "\tparam0\n"
                                  "\t);\n"
                                  "\t} // callseq 0\n"
                                  "\tret;\n"
                                  "}\n"
                                  "\n"
                                  ".visible .entry nest(\n"
                                  "\t.param .u64 nest_param_0\n"
                                  ")\n"
                                  "{\n"
                                  "\t.reg .pred \t%p<4>;\n"
                                  "\t.reg .b32 \t%r<8>;\n"
                                  "\t.reg .f32 \t%f<8>;\n"
                                  "\t.reg .b64 \t%rd<8>;\n"
                                  "\n"
                                  "\tld.param.u64 \t%rd1, [nest_param_0];\n"
                                  "\tmov.u32 \t%r1, 0;\n"
                                  "\tbra.uni \t$L__BB1_2;\n"
                                  "$L__BB1_1:\n"
                                  "\tadd.s32 \t%r1, %r1, 1;\n"
                                  "\tsetp.lt.u32 \t%p1, %r1, 10;\n"
                                  "\t@%p1 bra \t$L__BB1_2;\n"
                                  "\tbra.uni \t$L__BB1_5;\n"
                                  "$L__BB1_2:\n"
                                  "\tld.f32 \t%f1, [%rd1];\n"
                                  "\tld.f32 \t%f2, [%rd1+4];\n"
                                  "\tld.f32 \t%f3, [%rd1+8];\n"
                                  "\tld.f32 \t%f4, [%rd1+12];\n"
                                  "\tmov.u32 \t%r2, 0;\n"
                                  "$L__BB1_3:\n"
                                  "\tld.global.f32 \t%f5, [%rd1];\n"
                                  "\tst.shared.f32 \t[buf], %f5;\n"
                                  "\tadd.s32 \t%r2, %r2, 1;\n"
                                  "\tsetp.lt.u32 \t%p2, %r2, 4;\n"
                                  "\t@%p2 bra \t$L__BB1_3;\n"
                                  "\tadd.f32 \t%f6, %f1, %f2;\n"
                                  "\tadd.f32 \t%f7, %f3, %f4;\n"
                                  "\tadd.f32 \t%f6, %f6, %f7;\n"
                                  "\tst.f32 \t[%rd1], %f6;\n"
                                  "\tbra.uni \t$L__BB1_1;\n"
                                  "$L__BB1_5:\n"
                                  "\tret;\n"
                                  "}\n";

static px_module *analyse(ac_context *ctx, const char *ptx) {
  px_module *m = NULL;
  ac_error *err = NULL;
  ac_status st = px_analyse(ctx, ptx, strlen(ptx), &m, &err);
  CHECK_EQ_INT(st, AC_OK);
  ac_error_destroy(err);
  return m;
}

static px_func *find(px_module *m, const char *name) {
  px_func *f = m ? px_find(m, name, strlen(name)) : NULL;
  if (!f)
    fprintf(stderr, "no function %s\n", name);
  return f;
}

/* ---- the analyser ---- */

UNIT_TEST(vector_loop_counts) {
  ac_context *ctx = ac_context_create();
  px_module *m = analyse(ctx, VEC);
  px_func *f = find(m, "vec_loop");
  CHECK(m && m->nfuncs == 1 && m->target_sm == 90);
  if (f) {
    CHECK(f->kernel);
    CHECK_EQ_INT(f->block, 256); /* .maxntid 128, 2, 1 */
    CHECK_EQ_INT(f->all.insts, 16);
    CHECK_EQ_INT(f->all.ld_global, 2);
    CHECK_EQ_INT(f->all.ld_global_elems, 6);
    CHECK_EQ_INT(f->all.ld_nc, 1);
    CHECK_EQ_INT(f->all.ld_nc_elems, 4);
    CHECK_EQ_INT(f->all.st_global, 1);
    CHECK_EQ_INT(f->all.st_global_elems, 2);
    CHECK_EQ_INT(f->all.ld_vec, 2);
    CHECK_EQ_INT(f->all.st_vec, 1);
    CHECK_EQ_INT(f->all.fma, 2);
    CHECK_EQ_INT(f->all.membar, 1);
    CHECK(f->loop.found);
    CHECK_STR(f->loop.label, "$L__BB0_1");
    CHECK_EQ_INT(f->loop.depth, 1);
    CHECK_EQ_INT(f->loop.blocks, 1);
    CHECK_EQ_INT(f->loop.own.insts, 9);
    CHECK_EQ_INT(f->loop.own.ld_global, 2);
    CHECK_EQ_INT(f->loop.own.ld_global_elems, 6);
    CHECK_EQ_INT(f->loop.own.ld_nc, 1);
    CHECK_EQ_INT(f->loop.own.st_global_elems, 2);
    CHECK_EQ_INT(f->loop.own.fma, 2);
    CHECK_EQ_INT(f->loop.own.membar, 0);
    /* %r<4> + %f<10> + 2 * %rd<6>; predicates have their own registers */
    CHECK_EQ_INT(f->vregs_pred, 2);
    CHECK_EQ_INT(f->reg_est, 26);
    /* most live: after the two vector loads, %rd3 %rd4 (2 each), %r1 and
     * %f1..%f6 (%f7 is written after %f1, %f2, %f5 die) */
    CHECK_EQ_INT(f->regs_live, 11);
    CHECK_EQ_INT(f->smem, 0);
    CHECK(!f->smem_dyn);
  }
  px_destroy(m);
  ac_context_destroy(ctx);
}

UNIT_TEST(rotated_outer_loop_is_hot) {
  ac_context *ctx = ac_context_create();
  px_module *m = analyse(ctx, SHARED_NEST);
  px_func *f = find(m, "nest");
  if (f) {
    CHECK_EQ_INT(f->all.insts, 23);
    CHECK(f->loop.found);
    /* the outer loop's own blocks ($L__BB1_2, the block after the inner
     * loop, $L__BB1_1) hold 5 generic accesses; the inner loop 1 global */
    CHECK_STR(f->loop.label, "$L__BB1_2");
    CHECK_EQ_INT(f->loop.depth, 1);
    CHECK_EQ_INT(f->loop.blocks, 3);
    CHECK_EQ_INT(f->loop.own.insts, 13);
    CHECK_EQ_INT(f->loop.own.ld_gen, 4);
    CHECK_EQ_INT(f->loop.own.st_gen, 1);
    CHECK_EQ_INT(f->loop.own.ld_global, 0);
    CHECK_EQ_INT(f->loop.own.st_shared, 0);
    CHECK_EQ_INT(f->all.st_shared, 1);
    CHECK_EQ_INT(f->block, 0);
  }
  px_destroy(m);
  ac_context_destroy(ctx);
}

UNIT_TEST(hot_loop_ties_and_branch_tables) {
  static const char TIES[] = ".visible .entry ties(.param .u64 ties_param_0)\n"
                             "{\n"
                             "  .reg .pred %p<3>; .reg .b32 %r<3>; .reg .b64 %rd<2>;\n"
                             "  ld.param.u64 %rd1, [ties_param_0];\n"
                             "  mov.u32 %r1, 0;\n"
                             "$L__BB0_1: // one load, 4 instructions\n"
                             "  ld.global.u32 %r2, [%rd1];\n"
                             "  add.s32 %r1, %r1, %r2;\n"
                             "  setp.lt.u32 %p1, %r1, 8;\n"
                             "  @%p1 bra $L__BB0_1;\n"
                             "$L__BB0_2: // one store, 6 instructions: the hot one\n"
                             "  st.global.u32 [%rd1], %r1;\n"
                             "  add.s32 %r1, %r1, 1;\n"
                             "  mul.lo.s32 %r2, %r1, 3;\n"
                             "  add.s32 %r1, %r2, 1;\n"
                             "  setp.lt.u32 %p2, %r1, 100;\n"
                             "  @%p2 bra $L__BB0_2;\n"
                             "$L__BB0_3: // the largest, without memory instructions\n"
                             "  add.s32 %r1, %r1, 1; add.s32 %r1, %r1, 1; add.s32 %r1, %r1, 1;\n"
                             "  add.s32 %r1, %r1, 1; add.s32 %r1, %r1, 1; add.s32 %r1, %r1, 1;\n"
                             "  setp.lt.u32 %p2, %r1, 1000;\n"
                             "  @%p2 bra $L__BB0_3;\n"
                             "  ret;\n"
                             "}\n"
                             /* a loop only through a branch table */
                             ".visible .entry sw(.param .u32 sw_param_0)\n"
                             "{\n"
                             "  .reg .b32 %r<3>;\n"
                             "  ld.param.u32 %r1, [sw_param_0];\n"
                             "$L__BB1_1:\n"
                             "  and.b32 %r2, %r1, 1;\n"
                             "  $L_brx_0: .branchtargets\n"
                             "    $L__BB1_2,\n"
                             "    $L__BB1_3;\n"
                             "  brx.idx %r2, $L_brx_0;\n"
                             "$L__BB1_2:\n"
                             "  add.s32 %r1, %r1, 1;\n"
                             "  bra.uni $L__BB1_1;\n"
                             "$L__BB1_3:\n"
                             "  ret;\n"
                             "}\n"
                             /* a vector load outweighs two scalar ones */
                             ".visible .entry vec(.param .u64 vec_param_0)\n"
                             "{\n"
                             "  .reg .pred %p<3>; .reg .f32 %f<9>; .reg .b64 %rd<2>;\n"
                             "  ld.param.u64 %rd1, [vec_param_0];\n"
                             "$L__BB3_1: // two loads, two elements, more instructions\n"
                             "  ld.global.f32 %f1, [%rd1]; ld.global.f32 %f2, [%rd1+4];\n"
                             "  add.f32 %f3, %f1, %f2; add.f32 %f3, %f3, %f2;\n"
                             "  setp.lt.f32 %p1, %f3, 0f00000000; @%p1 bra $L__BB3_1;\n"
                             "$L__BB3_2: // one load of four elements\n"
                             "  ld.global.v4.f32 {%f4, %f5, %f6, %f7}, [%rd1];\n"
                             "  setp.lt.f32 %p2, %f4, %f5; @%p2 bra $L__BB3_2;\n"
                             "  ret;\n"
                             "}\n"
                             /* no loop */
                             ".visible .entry flat()\n"
                             "{\n"
                             "  ret;\n"
                             "}\n";
  ac_context *ctx = ac_context_create();
  px_module *m = analyse(ctx, TIES);
  px_func *f = find(m, "ties"), *s = find(m, "sw"), *fl = find(m, "flat"), *v = find(m, "vec");
  if (f) {
    CHECK_STR(f->loop.label, "$L__BB0_2");
    CHECK_EQ_INT(f->loop.own.insts, 6);
    CHECK_EQ_INT(f->loop.own.st_global, 1);
  }
  if (s) {
    CHECK(s->loop.found);
    CHECK_STR(s->loop.label, "$L__BB1_1");
    CHECK_EQ_INT(s->loop.own.insts, 4);
    CHECK_EQ_INT(s->all.insts, 6);
  }
  if (v) {
    CHECK_STR(v->loop.label, "$L__BB3_2");
    CHECK_EQ_INT(v->loop.own.ld_global, 1);
    CHECK_EQ_INT(v->loop.own.ld_global_elems, 4);
  }
  if (fl) {
    CHECK(!fl->loop.found);
    CHECK_EQ_INT(fl->all.insts, 1);
  }
  px_destroy(m);
  ac_context_destroy(ctx);
}

UNIT_TEST(instruction_classes) {
  static const char CLS[] = ".version 7.8 .target sm_80 .address_size 64\n"
                            ".visible .entry cls(.param .u64 cls_param_0)\n"
                            "{\n"
                            "  .reg .b32 %r<20>;\n"
                            "  .reg .b64 %rd<4>;\n"
                            "  .reg .f64 %fd<4>;\n"
                            "  .local .align 8 .b8 __local_depot0[24];\n"
                            "  .shared .align 4 .b8 sm[16];\n"
                            "  ld.param.u64 %rd1, [cls_param_0]; // .param: not memory traffic\n"
                            "  ld.volatile.global.u32 %r1, [%rd1]; /* global */\n"
                            "  ld.global.nc.v2.u32 {%r2, %r3}, [%rd1+8];\n"
                            "  ldu.global.u32 %r4, [%rd1+16];\n"
                            "  ld.shared::cta.u32 %r5, [sm];\n"
                            "  st.shared.u32 [sm+4], %r5;\n"
                            "  ld.local.u32 %r6, [__local_depot0];\n"
                            "  st.local.u32 [__local_depot0+4], %r6;\n"
                            "  ld.u32 %r7, [%rd1]; st.u32 [%rd1], %r7;\n"
                            "  ld.v4.u32 {%r8, %r9, %r10, %r11}, [%rd1];\n"
                            "  atom.global.add.u32 %r12, [%rd1], 1;\n"
                            "  red.global.add.u32 [%rd1], 1;\n"
                            "  membar.gl;\n"
                            "  fence.sc.gpu;\n"
                            "  bar.sync 0;\n"
                            "  barrier.sync 1;\n"
                            "  bar.warp.sync -1;\n"
                            "  fma.rn.f64 %fd1, %fd2, %fd3, %fd1;\n"
                            "  ret;\n"
                            "}\n";
  ac_context *ctx = ac_context_create();
  px_module *m = analyse(ctx, CLS);
  px_func *f = find(m, "cls");
  CHECK(m && m->target_sm == 80);
  if (f) {
    const px_counts *c = &f->all;
    CHECK_EQ_INT(c->insts, 20);
    CHECK_EQ_INT(c->ld_global, 3); /* volatile, nc.v2, ldu */
    CHECK_EQ_INT(c->ld_global_elems, 4);
    CHECK_EQ_INT(c->ld_nc, 1);
    CHECK_EQ_INT(c->ld_nc_elems, 2);
    CHECK_EQ_INT(c->ld_gen, 2);
    CHECK_EQ_INT(c->ld_gen_elems, 5);
    CHECK_EQ_INT(c->st_global, 0);
    CHECK_EQ_INT(c->st_gen, 1);
    CHECK_EQ_INT(c->ld_shared, 1);
    CHECK_EQ_INT(c->st_shared, 1);
    CHECK_EQ_INT(c->ld_vec, 2);
    CHECK_EQ_INT(c->st_vec, 0);
    CHECK_EQ_INT(c->fma, 1);
    CHECK_EQ_INT(c->membar, 2);
    CHECK_EQ_INT(c->atom, 2);
    CHECK_EQ_INT(c->bar_sync, 2); /* bar.warp.sync is a warp's */
    CHECK_EQ_INT(f->barriers, 2);
    CHECK_EQ_INT(f->local, 24);
    CHECK_EQ_INT(f->smem, 16);
    CHECK_EQ_INT(f->reg_est, 36);
    CHECK(!f->loop.found);
  }
  px_destroy(m);
  ac_context_destroy(ctx);
}

UNIT_TEST(register_declarations_and_pressure) {
  static const char REGS[] = ".visible .func regs()\n"
                             "{\n"
                             "  .reg .pred %p<3>;\n"
                             "  .reg .b16 %rs<5>;\n"
                             "  .reg .b32 %r<7>, %extra;\n"
                             "  .reg .b64 %rd<4>;\n"
                             "  .reg .b128 %rq<2>;\n"
                             "  .reg .v2 .f32 %v<3>;\n"
                             "  ret;\n"
                             "}\n"
                             ".visible .entry live(.param .u64 live_param_0)\n"
                             ".reqntid 32 .maxntid 64\n"
                             "{\n"
                             "  .reg .pred %p<2>;\n"
                             "  .reg .b32 %r<8>;\n"
                             "  .reg .b64 %rd<4>;\n"
                             "  ld.param.u64 %rd1, [live_param_0];\n"
                             "  ld.global.u32 %r1, [%rd1];\n"
                             "  ld.global.u32 %r2, [%rd1+4];\n"
                             "  ld.global.u32 %r3, [%rd1+8]; // live: %rd1 (2), %r1, %r2, %r3\n"
                             "  add.s32 %r4, %r1, %r2;\n"
                             "  add.s32 %r5, %r4, %r3;\n"
                             "  setp.eq.s32 %p1, %r5, 0;\n"
                             "  @%p1 mov.u32 %r5, 7; // a predicated write: %r5 stays live\n"
                             "  st.global.u32 [%rd1], %r5;\n"
                             "  mov.u32 %r6, %tid.x; // a special register is no register\n"
                             "  ret;\n"
                             "}\n";
  ac_context *ctx = ac_context_create();
  px_module *m = analyse(ctx, REGS);
  px_func *f = find(m, "regs"), *l = find(m, "live");
  if (f) {
    CHECK(!f->kernel);
    CHECK_EQ_INT(f->vregs_pred, 3);
    CHECK_EQ_INT(f->vregs_32, 5 + 7 + 1 + 6);
    CHECK_EQ_INT(f->vregs_64, 4);
    CHECK_EQ_INT(f->vregs_128, 2);
    CHECK_EQ_INT(f->reg_est, 19 + 2 * 4 + 4 * 2);
    CHECK_EQ_INT(f->regs_live, 0);
  }
  if (l) {
    CHECK_EQ_INT(l->block, 32); /* .reqntid wins over .maxntid */
    CHECK_EQ_INT(l->regs_live, 5);
    CHECK_EQ_INT(l->reg_est, 16);
  }
  px_destroy(m);
  ac_context_destroy(ctx);
}

/* Static shared memory: kernel k's declarations (module level, then in
 * the function) and references, with the sizes ptxas 13.0 reported for
 * them (sm_90); each case checks one part of the layout rule. */
typedef struct smem_case {
  const char *what, *module, *local, *refs;
  uint64_t smem;
} smem_case;

static const smem_case smem_cases[] = {
    {"declaration order, not by alignment",
     ".shared .align 4 .b8 x[4];\n"
     ".shared .align 16 .b8 y[4];",
     "", "mov.u64 %rd2, x; mov.u64 %rd3, y;", 20},
    {"the other order", ".shared .align 16 .b8 y[4];\n.shared .align 4 .b8 x[4];", "",
     "mov.u64 %rd2, x; mov.u64 %rd3, y;", 8},
    {"in-function arrays first", ".shared .align 8 .b8 m[100];", ".shared .align 16 .b8 a[20];",
     "mov.u64 %rd2, a; mov.u64 %rd3, m;", 124},
    {"in-function first (no alignment padding at the end)", ".shared .align 1 .b8 m[3];",
     ".shared .align 4 .b8 a[2];", "mov.u64 %rd2, a; mov.u64 %rd3, m;", 5},
    {"only named arrays count", ".shared .align 4 .b8 unused[1000];\n.shared .align 4 .b8 m[6];",
     ".shared .align 4 .b8 a[6];", "mov.u64 %rd2, a; mov.u64 %rd3, m;", 14},
    {"declared .extern pads to its alignment",
     ".shared .align 8 .b8 m[100];\n"
     ".extern .shared .align 16 .b8 dyn[];",
     ".shared .align 4 .u32 flag;", "mov.u64 %rd2, flag; mov.u64 %rd3, m;", 112},
    {"scalars and multi-dimensional arrays", "",
     ".shared .align 8 .f64 s;\n"
     ".shared .align 4 .u32 t[3][5];",
     "mov.u64 %rd2, s; mov.u64 %rd3, t;", 68},
};

static char *smem_ptx(const smem_case *c) {
  static char buf[2048];
  snprintf(buf, sizeof buf,
           ".version 7.8\n.target sm_90\n.address_size 64\n%s\n"
           ".visible .entry k(.param .u64 k_param_0)\n{\n"
           "\t.reg .b32 %%r<3>;\n\t.reg .b64 %%rd<9>;\n%s\n"
           "\tld.param.u64 %%rd1, [k_param_0];\n\t%s\n"
           "\tld.shared.u32 %%r1, [%%rd2];\n\tst.shared.u32 [%%rd3], %%r1;\n"
           "\tst.global.u32 [%%rd1], %%r1;\n\tret;\n}\n",
           c->module, c->local, c->refs);
  return buf;
}

UNIT_TEST(shared_memory_layout) {
  ac_context *ctx = ac_context_create();
  char path[4096];
  const char *ptxas = px_ptxas_find(path, sizeof path);
  for (size_t i = 0; i < sizeof smem_cases / sizeof smem_cases[0]; i++) {
    const smem_case *c = &smem_cases[i];
    const char *ptx = smem_ptx(c);
    px_module *m = analyse(ctx, ptx);
    px_func *f = find(m, "k");
    if (f && f->smem != c->smem)
      fprintf(stderr, "case '%s': smem %llu, want %llu\n", c->what, (unsigned long long)f->smem,
              (unsigned long long)c->smem);
    CHECK(f && f->smem == c->smem);
    if (f && ptxas) {
      ac_error *err = NULL;
      ac_status st = px_ptxas_run(m, ptxas, ptx, strlen(ptx), 90, &err);
      CHECK_EQ_INT(st, AC_OK);
      if (st != AC_OK)
        fprintf(stderr, "%s\n", ac_error_message(err));
      ac_error_destroy(err);
      if (f->ptxas.smem != c->smem)
        fprintf(stderr, "case '%s': ptxas says %llu bytes\n", c->what,
                (unsigned long long)f->ptxas.smem);
      CHECK(f->ptxas.smem == c->smem);
    }
    px_destroy(m);
  }
  /* attribution: caller names dyn and flag and calls helper, which names
   * other (so other counts for caller); nest names buf */
  px_module *m = analyse(ctx, SHARED_NEST);
  px_func *caller = find(m, "caller"), *nest = find(m, "nest"), *helper = find(m, "helper");
  if (caller && nest && helper) {
    CHECK_EQ_INT(caller->block, 64);
    CHECK_EQ_INT(caller->smem, 112); /* flag 0..4, other 8..108, padded to dyn's 16 */
    CHECK(caller->smem_dyn);
    CHECK_EQ_INT(caller->barriers, 1);
    CHECK_EQ_INT(nest->smem, 64);
    CHECK(!nest->smem_dyn);
    CHECK_EQ_INT(helper->smem, 112); /* other, padded */
    CHECK(!helper->kernel);
  }
  if (m && ptxas) {
    ac_error *err = NULL;
    CHECK_EQ_INT(px_ptxas_run(m, ptxas, SHARED_NEST, strlen(SHARED_NEST), 90, &err), AC_OK);
    ac_error_destroy(err);
    if (caller && nest) {
      CHECK_EQ_INT(caller->ptxas.smem, 112);
      CHECK_EQ_INT(nest->ptxas.smem, 64);
      CHECK(caller->ptxas.have_regs && nest->ptxas.have_regs);
      CHECK(helper && helper->ptxas.have && !helper->ptxas.have_regs);
    }
  }
  if (!ptxas)
    printf("note: no ptxas found: shared_memory_layout checked the analysis only\n");
  px_destroy(m);
  ac_context_destroy(ctx);
}

/* ---- ptxas ---- */

UNIT_TEST(ptxas_output_formats) {
  static const char PTX[] = ".visible .entry k() { ret; }\n.func f() { ret; }\n";
  /* CUDA 13.0, as run by hand; the last line without its newline */
  static const char V13[] = "ptxas info    : 0 bytes gmem\n"
                            "ptxas info    : Compiling entry function 'k' for 'sm_90'\n"
                            "ptxas info    : Function properties for k\n"
                            "    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n"
                            "ptxas info    : Used 40 registers, used 1 barriers, 256 bytes smem\n"
                            "ptxas info    : Compile time = 1.000 ms\n"
                            "ptxas info    : Function properties for zzz\n"
                            "ptxas info    : Used 99 registers, used 9 barriers, 999 bytes smem\n"
                            "ptxas info    : Function properties for f\n"
                            "    16 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads";
  /* CUDA 11: no barriers; CUDA 12: smem before the barriers, CRLF */
  static const char V11[] = "ptxas info    : Compiling entry function 'k' for 'sm_80'\n"
                            "ptxas info    : Function properties for k\n"
                            "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
                            "ptxas info    : Used 10 registers, 356 bytes cmem[0]\n";
  static const char V12[] =
      "ptxas info    : Compiling entry function 'k' for 'sm_86'\r\n"
      "ptxas info    : Function properties for k\r\n"
      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\r\n"
      "ptxas info    : Used 72 registers, 1024 bytes smem, used 2 barriers, 360 bytes cmem[0]\r\n";
  /* very old: local and shared memory as sums */
  static const char OLD[] =
      "ptxas info    : Compiling entry function 'k' for 'sm_13'\n"
      "ptxas info    : Used 4 registers, 8+0 bytes lmem, 4+16 bytes smem, 20 bytes cmem[1]\n";
  ac_context *ctx = ac_context_create();
  px_module *m = analyse(ctx, PTX);
  px_func *k = find(m, "k"), *f = find(m, "f");
  if (k && f) {
    px_ptxas_parse(m, V13, strlen(V13));
    CHECK(k->ptxas.have && k->ptxas.have_regs && k->ptxas.have_barriers);
    CHECK_EQ_INT(k->ptxas.regs, 40);
    CHECK_EQ_INT(k->ptxas.barriers, 1);
    CHECK_EQ_INT(k->ptxas.smem, 256);
    CHECK_EQ_INT(k->ptxas.stack, 8);
    CHECK_EQ_INT(k->ptxas.spill_st, 4);
    CHECK_EQ_INT(k->ptxas.spill_ld, 12);
    CHECK(f->ptxas.have && !f->ptxas.have_regs);
    CHECK_EQ_INT(f->ptxas.stack, 16);
    memset(&k->ptxas, 0, sizeof k->ptxas);
    px_ptxas_parse(m, V11, strlen(V11));
    CHECK(k->ptxas.have_regs && !k->ptxas.have_barriers);
    CHECK_EQ_INT(k->ptxas.regs, 10);
    CHECK_EQ_INT(k->ptxas.smem, 0);
    memset(&k->ptxas, 0, sizeof k->ptxas);
    px_ptxas_parse(m, V12, strlen(V12));
    CHECK_EQ_INT(k->ptxas.regs, 72);
    CHECK_EQ_INT(k->ptxas.smem, 1024);
    CHECK_EQ_INT(k->ptxas.barriers, 2);
    memset(&k->ptxas, 0, sizeof k->ptxas);
    px_ptxas_parse(m, OLD, strlen(OLD));
    CHECK_EQ_INT(k->ptxas.regs, 4);
    CHECK_EQ_INT(k->ptxas.smem, 20);
    CHECK_EQ_INT(k->ptxas.stack, 8);
  }
  px_destroy(m);
  ac_context_destroy(ctx);
}

UNIT_TEST(ptxas_found_and_run) {
  char buf[4096];
  const char *saved = getenv("ARRAYC_PTXAS");
  char *keep = saved ? strdup(saved) : NULL;
  setenv("ARRAYC_PTXAS", "/nonexistent/ptxas", 1);
  CHECK(px_ptxas_find(buf, sizeof buf) == NULL); /* named, but not there: none */
  setenv("ARRAYC_PTXAS", "/bin/sh", 1);
  CHECK_STR(px_ptxas_find(buf, sizeof buf), "/bin/sh");
  if (keep)
    setenv("ARRAYC_PTXAS", keep, 1);
  else
    unsetenv("ARRAYC_PTXAS");
  free(keep);
  const char *ptxas = px_ptxas_find(buf, sizeof buf);
  if (!ptxas) {
    printf("note: no ptxas found: ptxas_found_and_run checked the search only\n");
    return;
  }
  ac_context *ctx = ac_context_create();
  px_module *m = analyse(ctx, VEC);
  ac_error *err = NULL;
  CHECK_EQ_INT(px_ptxas_run(m, ptxas, VEC, strlen(VEC), 90, &err), AC_OK);
  ac_error_destroy(err);
  px_func *f = find(m, "vec_loop");
  if (f) {
    CHECK(f->ptxas.have && f->ptxas.have_regs);
    /* no bound on it from the PTX: ptxas 13.0 unrolls this loop for
     * sm_80 and later and takes 38 registers, 26 declared */
    CHECK(f->ptxas.regs > 0);
    CHECK_EQ_INT(f->ptxas.spill_st, 0);
    CHECK_EQ_INT(f->ptxas.smem, 0);
  }
  px_destroy(m);
  /* ptxas rejecting the PTX is an error quoting it */
  static const char BAD[] = ".version 7.8\n.target sm_90\n.address_size 64\n"
                            ".visible .entry k() { bogus.instruction; }\n";
  m = analyse(ctx, BAD);
  err = NULL;
  CHECK_EQ_INT(px_ptxas_run(m, ptxas, BAD, strlen(BAD), 90, &err), AC_ERR_INVALID);
  CHECK(err && strstr(ac_error_message(err), "ptxas") != NULL);
  CHECK(err && strstr(ac_error_message(err), "exit status") != NULL);
  ac_error_destroy(err);
  px_destroy(m);
  ac_context_destroy(ctx);
}

/* ---- occupancy ---- */

static void check_occ(unsigned sm, unsigned regs, uint64_t smem, unsigned bars, unsigned block,
                      unsigned blocks, double occ, unsigned limits) {
  const px_arch *a = px_arch_get(sm);
  CHECK(a != NULL);
  if (!a)
    return;
  px_occ o = px_occupancy(a, regs, smem, bars, block);
  if (o.blocks != blocks || o.occupancy < occ - 1e-9 || o.occupancy > occ + 1e-9 ||
      o.limits != limits)
    fprintf(stderr,
            "sm_%u regs %u smem %llu barriers %u block %u: %u blocks, occupancy %.4f, limits %#x; "
            "want %u, %.4f, %#x\n",
            sm, regs, (unsigned long long)smem, bars, block, o.blocks, o.occupancy, o.limits,
            blocks, occ, limits);
  CHECK_EQ_INT(o.blocks, blocks);
  CHECK(o.occupancy > occ - 1e-9 && o.occupancy < occ + 1e-9);
  CHECK_EQ_INT(o.limits, limits);
}

enum {
  W = PX_LIMIT_WARPS,
  R = PX_LIMIT_REGS,
  S = PX_LIMIT_SMEM,
  B = PX_LIMIT_BLOCKS,
  BAR = PX_LIMIT_BARRIERS
};

/* Registers are given to a warp in units of 256 (so per thread in units
 * of 8) and each of an SM's 4 sub-partitions has 16384 of them; shared
 * memory is allocated in units of 128 bytes (256 on sm_75) with 1 KiB
 * reserved per block from sm_80 on. */
UNIT_TEST(occupancy_by_hand) {
  /* sm_90: 64 warps, 32 blocks, 228 KiB per SM */
  /* 32 regs: 1024 a warp, 16 warps a sub-partition, 64 an SM: 8 blocks of
   * 8 warps, as many as the warp slots allow */
  check_occ(90, 32, 0, 0, 256, 8, 1.0, W | R);
  /* 64 regs: 2048 a warp, 8 per sub-partition, 32 an SM: 4 blocks */
  check_occ(90, 64, 0, 0, 256, 4, 0.5, R);
  /* 40 regs: 1280 a warp, 16384 / 1280 = 12 per sub-partition, 48 an SM:
   * 6 blocks of 8 warps = 48 warps (65536 / 1280 = 51 warps would give the
   * same 6 blocks) */
  check_occ(90, 40, 0, 0, 256, 6, 0.75, R);
  /* 48 regs: 1536 a warp, 10 per sub-partition, 40 an SM: 20 blocks of 2
   * warps. Counting the SM's registers whole (65536 / 1536 = 42 warps)
   * would give 21 blocks, 65.6% */
  check_occ(90, 48, 0, 0, 64, 20, 0.625, R);
  /* 255 regs: 8192 a warp, 2 per sub-partition: one block of 8 warps; a
   * block of 16 warps needs 131072 registers, more than a block may have */
  check_occ(90, 255, 0, 0, 256, 1, 0.125, R);
  check_occ(90, 255, 0, 0, 512, 0, 0.0, R);
  check_occ(90, 256, 0, 0, 32, 0, 0.0, R);
  /* 48 KiB of shared memory: 49152 + 1024 reserved = 50176 (a multiple of
   * 128); 233472 / 50176 = 4 blocks of 4 warps */
  check_occ(90, 32, 49152, 0, 128, 4, 0.25, S);
  /* more than a block may have (227 KiB + the reserve) */
  check_occ(90, 32, 232449, 0, 128, 0, 0.0, S);
  /* 1-warp blocks: 32 blocks at most */
  check_occ(90, 16, 0, 0, 32, 32, 0.5, B);
  /* 16 barriers per block: 64 barrier slots / 16 = 4 blocks; one barrier
   * does not limit */
  check_occ(90, 32, 0, 16, 128, 4, 0.25, BAR);
  check_occ(90, 32, 0, 1, 128, 16, 1.0, W | R);
  /* blocks that are not whole warps take whole warps */
  check_occ(90, 32, 0, 0, 96, 21, 63.0 / 64, W | R);
  check_occ(90, 32, 0, 0, 100, 16, 1.0, W | R);
  check_occ(90, 0, 0, 0, 1024, 2, 1.0, W);
  check_occ(90, 32, 0, 0, 1025, 0, 0.0, W);

  /* sm_75: 32 warps, 16 blocks, 64 KiB, no reserve, 256-byte units */
  check_occ(75, 32, 0, 0, 256, 4, 1.0, W);
  check_occ(75, 64, 0, 0, 256, 4, 1.0, W | R);
  /* 72 regs: 2304 a warp, 16384 / 2304 = 7 per sub-partition, 28 an SM */
  check_occ(75, 72, 0, 0, 128, 7, 0.875, R);
  /* 1000 bytes take 1024: 64 blocks by memory, 16 by the block limit */
  check_occ(75, 16, 1000, 0, 32, 16, 0.5, B);
  /* 20000 bytes take 20224: 3 blocks of 2 warps */
  check_occ(75, 16, 20000, 0, 64, 3, 0.1875, S);

  /* sm_80: 64 warps, 32 blocks, 164 KiB */
  check_occ(80, 32, 0, 0, 256, 8, 1.0, W | R);
  /* 40 KiB: 40960 + 1024 = 41984; 167936 / 41984 = 4 blocks */
  check_occ(80, 32, 40960, 0, 256, 4, 0.5, S);

  /* sm_86: 48 warps, 16 blocks, 100 KiB */
  check_occ(86, 32, 0, 0, 256, 6, 1.0, W);
  check_occ(86, 32, 0, 0, 1024, 1, 32.0 / 48, W);
  /* 102400 / 50176 = 2 blocks */
  check_occ(86, 32, 49152, 0, 256, 2, 16.0 / 48, S);
  check_occ(86, 16, 0, 0, 32, 16, 16.0 / 48, B);

  /* sm_89: as sm_86 but 24 blocks */
  check_occ(89, 16, 0, 0, 32, 24, 0.5, B);
  check_occ(89, 40, 0, 0, 256, 6, 1.0, W | R); /* 12 per sub-partition: 48 warps */
  CHECK(px_arch_get(87) == NULL && px_arch_get(70) == NULL);
}

static void check_best(unsigned sm, unsigned regs, uint64_t smem, unsigned max_block,
                       unsigned block, double occ) {
  px_occ o = px_best_block(px_arch_get(sm), regs, smem, 0, max_block);
  if (o.block != block || o.occupancy < occ - 1e-9 || o.occupancy > occ + 1e-9)
    fprintf(stderr, "best block sm_%u regs %u max %u: %u at %.4f, want %u at %.4f\n", sm, regs,
            max_block, o.block, o.occupancy, block, occ);
  CHECK_EQ_INT(o.block, block);
  CHECK(o.occupancy > occ - 1e-9 && o.occupancy < occ + 1e-9);
}

/* cuOccupancyMaxPotentialBlockSize: from the largest size down, the first
 * with the most resident threads. */
UNIT_TEST(occupancy_best_block) {
  check_best(90, 26, 0, 0, 1024, 1.0); /* 2 blocks of 1024 fill the SM */
  /* 40 regs: 48 warps at most: 768 (2 blocks) is the first to reach them;
   * 512, 384, 256, ... 64 reach them too, later */
  check_best(90, 40, 0, 0, 768, 0.75);
  check_best(86, 32, 0, 0, 768, 1.0);
  check_best(90, 64, 0, 0, 1024, 0.5);
  /* 255 regs: nothing above 256 threads can launch */
  check_best(90, 255, 0, 0, 256, 0.125);
  /* .maxntid 100: 100 (16 blocks, 1600 threads), 96 (21, 2016), 64 (32,
   * 2048: full, done) */
  check_best(90, 32, 0, 100, 64, 1.0);
  /* 48 KiB of shared memory a block: 4 blocks an SM. 1024-thread blocks
   * still fill it (2 blocks); at most 256 threads, 4 blocks of 256 are the
   * best (8 warps each: 32 warps) */
  check_best(90, 32, 49152, 0, 1024, 1.0);
  check_best(90, 32, 49152, 256, 256, 0.5);
}

#ifdef ARRAYC_HAVE_CUDA_OCC
/* NVIDIA's calculator for one of our architectures, with the function
 * attributes the runtime gives a kernel (dynamic shared memory opted in up
 * to the block's maximum). */
static void cuda_props(const px_arch *a, cudaOccDeviceProp *p) {
  memset(p, 0, sizeof *p);
  p->computeMajor = (int)a->sm / 10;
  p->computeMinor = (int)a->sm % 10;
  p->maxThreadsPerBlock = 1024;
  p->maxThreadsPerMultiprocessor = (int)a->max_threads_sm;
  p->regsPerBlock = 65536;
  p->regsPerMultiprocessor = 65536;
  p->warpSize = 32;
  p->sharedMemPerBlock = 49152;
  p->sharedMemPerMultiprocessor = a->smem_sm;
  p->numSms = 132;
  p->sharedMemPerBlockOptin = a->smem_block_optin;
  p->reservedSharedMemPerBlock = a->smem_reserved;
}

static void cuda_attrs(const px_arch *a, int regs, size_t smem, int bars, int max_block,
                       cudaOccFuncAttributes *f) {
  memset(f, 0, sizeof *f);
  f->maxThreadsPerBlock = max_block;
  f->numRegs = regs;
  f->sharedSizeBytes = smem;
  f->partitionedGCConfig = PARTITIONED_GC_OFF;
  f->shmemLimitConfig = FUNC_SHMEM_LIMIT_OPTIN;
  f->maxDynamicSharedSizeBytes = smem < a->smem_block_optin ? a->smem_block_optin - smem : 0;
  f->numBlockBarriers = bars;
  f->virtualResourceCount = 0;
}
#endif

UNIT_TEST(occupancy_matches_cuda_occupancy_h) {
#ifdef ARRAYC_HAVE_CUDA_OCC
  static const unsigned sms[] = {75, 80, 86, 89, 90};
  static const uint64_t smems[] = {0, 4, 148, 1000, 4116, 15544, 20000, 32788, 40960, 49152};
  static const unsigned bars[] = {0, 1, 3, 16};
  static const unsigned blocks[] = {1,   31,  32,  33,  64,  96,  100, 128,
                                    192, 256, 384, 512, 640, 768, 992, 1024};
  static const unsigned maxes[] = {1024, 256, 100};
  cudaOccDeviceState state;
  memset(&state, 0, sizeof state);
  state.cacheConfig = CACHE_PREFER_NONE;
  state.carveoutConfig = SHAREDMEM_CARVEOUT_DEFAULT;
  long compared = 0, differ = 0;
  for (size_t s = 0; s < sizeof sms / sizeof sms[0]; s++) {
    const px_arch *a = px_arch_get(sms[s]);
    cudaOccDeviceProp prop;
    cuda_props(a, &prop);
    for (unsigned regs = 0; regs <= 255; regs++)
      for (size_t m = 0; m < sizeof smems / sizeof smems[0]; m++)
        for (size_t b = 0; b < sizeof bars / sizeof bars[0]; b++) {
          cudaOccFuncAttributes attr;
          cuda_attrs(a, (int)regs, smems[m], (int)bars[b], 1024, &attr);
          for (size_t k = 0; k < sizeof blocks / sizeof blocks[0]; k++) {
            cudaOccResult res;
            memset(&res, 0, sizeof res);
            if (cudaOccMaxActiveBlocksPerMultiprocessor(&res, &prop, &attr, &state, (int)blocks[k],
                                                        0) != CUDA_OCC_SUCCESS) {
              differ++;
              continue;
            }
            px_occ o = px_occupancy(a, regs, smems[m], bars[b], blocks[k]);
            compared++;
            /* when the barriers bind, NVIDIA's flags also name the limits
             * that bound the count before barriers were counted; ours name
             * only what binds the result */
            unsigned want = res.limitingFactors & 0x1f;
            bool limits_ok = want & OCC_LIMIT_BARRIERS
                                 ? o.limits == PX_LIMIT_BARRIERS || (o.limits & ~want) == 0
                                 : o.limits == want;
            if ((int)o.blocks != res.activeBlocksPerMultiprocessor || !limits_ok) {
              if (differ++ < 5)
                fprintf(stderr,
                        "sm_%u regs %u smem %llu bars %u block %u: %u blocks (limits %#x), "
                        "cuda_occupancy.h %d (%#x)\n",
                        sms[s], regs, (unsigned long long)smems[m], bars[b], blocks[k], o.blocks,
                        o.limits, res.activeBlocksPerMultiprocessor, res.limitingFactors);
            }
          }
          for (size_t x = 0; x < sizeof maxes / sizeof maxes[0]; x++) {
            cuda_attrs(a, (int)regs, smems[m], (int)bars[b], (int)maxes[x], &attr);
            int grid = 0, block = 0;
            if (cudaOccMaxPotentialOccupancyBlockSize(&grid, &block, &prop, &attr, &state, NULL,
                                                      0) != CUDA_OCC_SUCCESS) {
              differ++;
              continue;
            }
            px_occ o = px_best_block(a, regs, smems[m], bars[b], maxes[x]);
            compared++;
            /* with no size that can run, NVIDIA's answers block 0 */
            if ((int)(o.blocks ? o.block : 0) != block) {
              if (differ++ < 5)
                fprintf(stderr,
                        "best block sm_%u regs %u smem %llu bars %u max %u: %u, "
                        "cuda_occupancy.h %d\n",
                        sms[s], regs, (unsigned long long)smems[m], bars[b], maxes[x], o.block,
                        block);
            }
          }
        }
  }
  printf("occupancy: %ld cases compared with cuda_occupancy.h, %ld differ\n", compared, differ);
  CHECK(compared > 100000);
  CHECK_EQ_INT(differ, 0);
#else
  printf("note: no cuda_occupancy.h (CUDA toolkit) at build time: occupancy_matches_cuda_"
         "occupancy_h checks nothing\n");
#endif
}

/* ---- the report line ---- */

UNIT_TEST(report_line) {
  ac_context *ctx = ac_context_create();
  px_module *m = analyse(ctx, VEC);
  ir_buf b;
  ir_buf_init(&b, ctx);
  px_print(m, "f", 90, &b);
  CHECK_STR(ir_buf_cstr(&b),
            "ptx-stats: f vec_loop regs=26 regs_live=11 spill_st=- spill_ld=- stack=0 smem=0 "
            "block=256 block_from=maxntid occupancy=1.000 occ_limit=warps+regs insts=16 "
            "loop=$L__BB0_1 loop_insts=9 loop_ld=2 loop_ld_elems=6 loop_ld_nc=1 loop_ld_gen=0 "
            "loop_st=1 loop_st_elems=2 loop_st_gen=0 loop_ld_sh=0 loop_st_sh=0 loop_fma=2 "
            "loop_membar=0 ld_global=2 ld_nc=1 ld_gen=0 st_global=1 st_gen=0 ld_vec=2 st_vec=1 "
            "membar=1 atom=0 bar_sync=0 kind=kernel source=llvm\n");
  ir_buf_free(&b);
  /* what ptxas said wins; an architecture without a table has no occupancy */
  static const char OUT[] = "ptxas info    : Function properties for vec_loop\n"
                            "    0 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\n"
                            "ptxas info    : Used 72 registers, used 0 barriers, 16 bytes smem\n";
  px_ptxas_parse(m, OUT, strlen(OUT));
  ir_buf_init(&b, ctx);
  px_print(m, "f", 87, &b);
  CHECK(strstr(ir_buf_cstr(&b), " regs=72 regs_live=11 spill_st=8 spill_ld=4 stack=0 smem=16 "
                                "block=256 block_from=maxntid occupancy=- occ_limit=- ") != NULL);
  CHECK(strstr(ir_buf_cstr(&b), " source=ptxas\n") != NULL);
  ir_buf_free(&b);
  /* sm_90, 72 regs: 2304 a warp, 7 per sub-partition, 28 warps: 3 blocks of 8 */
  ir_buf_init(&b, ctx);
  px_print(m, "f", 90, &b);
  CHECK(strstr(ir_buf_cstr(&b), " occupancy=0.375 occ_limit=regs ") != NULL);
  ir_buf_free(&b);
  px_destroy(m);
  ac_context_destroy(ctx);
}

/* ---- robustness ---- */

UNIT_TEST(analyse_reports_oom) {
  unit_failing fl = {-1};
  ac_context *ctx = ac_context_create_with_allocator(unit_fail_realloc, &fl);
  int ok = 0, failed = 0;
  for (long k = 0; k < 5000 && !ok; k++) {
    px_module *m = NULL;
    ac_error *err = NULL;
    fl.left = k;
    ac_status st = px_analyse(ctx, SHARED_NEST, strlen(SHARED_NEST), &m, &err);
    fl.left = -1;
    CHECK(st == AC_OK || st == AC_ERR_NOMEM);
    if (st == AC_OK) {
      ok++;
      CHECK(m && m->nfuncs == 3);
    } else {
      failed++;
      CHECK(m == NULL);
    }
    ac_error_destroy(err);
    px_destroy(m);
  }
  CHECK(ok == 1);
  CHECK(failed > 10);
  ac_context_destroy(ctx);
}

UNIT_TEST(anything_is_analysed) {
  /* not PTX, truncated PTX, unbalanced braces: no crash, a result */
  static const char *const junk[] = {"",
                                     "}}}{{{",
                                     ".entry",
                                     ".func (",
                                     ".visible .entry k(",
                                     ".visible .entry k() { bra.uni $L; $L: bra.uni",
                                     ".visible .entry k() { .reg .b32 %r<99999999999>; ret; }",
                                     (".shared .align 99999999999999 .b8 x[99999999999999999];\n"
                                      ".visible .entry k() { mov.u64 %rd1, x; }"),
                                     "/* unterminated",
                                     "\"unterminated"};
  ac_context *ctx = ac_context_create();
  for (size_t i = 0; i < sizeof junk / sizeof junk[0]; i++) {
    px_module *m = analyse(ctx, junk[i]);
    CHECK(m != NULL);
    ir_buf b;
    ir_buf_init(&b, ctx);
    if (m)
      px_print(m, "f", 90, &b);
    ir_buf_free(&b);
    px_destroy(m);
  }
  ac_context_destroy(ctx);
}

UNIT_MAIN(vector_loop_counts, rotated_outer_loop_is_hot, hot_loop_ties_and_branch_tables,
          instruction_classes, register_declarations_and_pressure, shared_memory_layout,
          ptxas_output_formats, ptxas_found_and_run, occupancy_by_hand, occupancy_best_block,
          occupancy_matches_cuda_occupancy_h, report_line, analyse_reports_oom,
          anything_is_analysed)
