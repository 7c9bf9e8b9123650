/* The SIMT emulator's profiler (runtime/simt_prof.[ch], lib/codegen/simt_prof.c,
 * runtime/profile.c): the counting model on hand-made records (warp
 * instructions from per-lane executions, sectors, 32-bit request units,
 * bank conflicts, broadcasts, the footprint, active lanes), and the public
 * API end to end: coalesced and strided kernels, barriers and shared memory
 * in a block fold, results unchanged by profiling, the compile cache
 * keeping profiled and plain code apart, resets and every refusal. */
#include "unit.h"

#include "arrayc/arrayc.h"
#include "runtime/simt_prof.h"

#include <stdlib.h>

enum { S_BLOCK, S_LD4, S_ST4, S_SLD4, S_SLD8, S_LD16, S_PARAM, S_ATOMIC, S_LDDYN, S_N };

static const rt_simt_site sites[S_N] = {
    [S_BLOCK] = {RT_SIMT_SITE_BLOCK, 5},  [S_LD4] = {RT_SIMT_SITE_LD, 4},
    [S_ST4] = {RT_SIMT_SITE_ST, 4},       [S_SLD4] = {RT_SIMT_SITE_SLD, 4},
    [S_SLD8] = {RT_SIMT_SITE_SLD, 8},     [S_LD16] = {RT_SIMT_SITE_LD, 16},
    [S_PARAM] = {RT_SIMT_SITE_PARAM, 8},  [S_ATOMIC] = {RT_SIMT_SITE_ATOMIC, 4},
    [S_LDDYN] = {RT_SIMT_SITE_LD, 0},
};

/* One launch of one warp over hand-made records; the kernel's totals. */
typedef void (*feed_fn)(rt_simt_plaunch *s);

static ac_kernel_profile model(ac_context *ctx, feed_fn feed) {
  ac_kernel_profile k;
  memset(&k, 0, sizeof k);
  rt_simt_prof *p = rt_simt_prof_create(ctx, sites, S_N);
  CHECK(p != NULL);
  if (!p)
    return k;
  rt_simt_plaunch *s = rt_simt_pl_begin(ctx, p, 64);
  CHECK(s != NULL);
  if (s) {
    feed(s);
    rt_simt_pl_flush_warp(s, 0, true, true);
    rt_simt_pl_flush_warp(s, 1, true, true);
    rt_simt_pl_end(s, true);
  }
  rt_simt_prof_read(p, &k);
  rt_simt_prof_destroy(ctx, p);
  return k;
}

static void feed_coalesced(rt_simt_plaunch *s) {
  for (unsigned t = 0; t < 32; t++) {
    CHECK(rt_simt_pl_record(s, t, S_BLOCK, 0, 0));
    CHECK(rt_simt_pl_record(s, t, S_LD4, 0x10000 + 4 * t, 0));
    CHECK(rt_simt_pl_record(s, t, S_ST4, 0x20000 + 4 * t, 0));
  }
}

UNIT_TEST(coalesced_access_is_four_sectors_per_request) {
  ac_context *ctx = ac_context_create();
  ac_kernel_profile k = model(ctx, feed_coalesced);
  CHECK_EQ_INT(k.launches, 1);
  CHECK_EQ_INT(k.ld_insts, 1);
  CHECK_EQ_INT(k.ld_req, 1);
  CHECK_EQ_INT(k.ld_sectors, 4);
  CHECK_EQ_INT(k.st_insts, 1);
  CHECK_EQ_INT(k.st_sectors, 4);
  CHECK_EQ_INT(k.bytes, 256);
  CHECK_EQ_INT(k.min_bytes, 256); /* 128 bytes read, 128 written */
  CHECK_EQ_INT(k.warp_insts, 5);
  CHECK_EQ_INT(k.lane_insts, 5 * 32);
  CHECK(!k.approximate);
  ac_context_destroy(ctx);
}

/* Each lane reads its own 128-byte row: 32 sectors for one request; the
 * footprint is still 4 bytes a lane. */
static void feed_strided(rt_simt_plaunch *s) {
  for (unsigned t = 0; t < 32; t++)
    CHECK(rt_simt_pl_record(s, t, S_LD4, 0x10000 + 128 * t, 0));
}

UNIT_TEST(strided_access_is_a_sector_per_lane) {
  ac_context *ctx = ac_context_create();
  ac_kernel_profile k = model(ctx, feed_strided);
  CHECK_EQ_INT(k.ld_insts, 1);
  CHECK_EQ_INT(k.ld_req, 1);
  CHECK_EQ_INT(k.ld_sectors, 32);
  CHECK_EQ_INT(k.bytes, 32 * 32);
  CHECK_EQ_INT(k.min_bytes, 128);
  ac_context_destroy(ctx);
}

/* 16-byte lanes: one instruction, four request units, 16 sectors: still
 * 4.0 sectors per request. A misaligned 16-byte access spans two sectors. */
static void feed_vector(rt_simt_plaunch *s) {
  for (unsigned t = 0; t < 32; t++)
    CHECK(rt_simt_pl_record(s, t, S_LD16, 0x10000 + 16 * t, 0));
  CHECK(rt_simt_pl_record(s, 32, S_LD16, 0x30000 + 24, 0)); /* warp 1, one lane */
}

UNIT_TEST(vector_access_counts_request_units) {
  ac_context *ctx = ac_context_create();
  ac_kernel_profile k = model(ctx, feed_vector);
  CHECK_EQ_INT(k.ld_insts, 2);
  CHECK_EQ_INT(k.ld_req, 8);
  CHECK_EQ_INT(k.ld_sectors, 16 + 2);
  CHECK_EQ_INT(k.min_bytes, 512 + 16);
  ac_context_destroy(ctx);
}

/* Lane 0 runs a site three times, the others once: three warp
 * instructions, the last two with one active lane. The same address read
 * by every lane is one sector; a dynamic-size access takes the call's
 * size. */
static void feed_divergent(rt_simt_plaunch *s) {
  for (unsigned t = 0; t < 32; t++) {
    unsigned times = t == 0 ? 3 : 1;
    for (unsigned r = 0; r < times; r++) {
      CHECK(rt_simt_pl_record(s, t, S_BLOCK, 0, 0));
      CHECK(rt_simt_pl_record(s, t, S_LD4, 0x10000, 0));
    }
    CHECK(rt_simt_pl_record(s, t, S_LDDYN, 0x40000 + 100 * t, 100));
    CHECK(rt_simt_pl_record(s, t, S_PARAM, 0x50000, 0));
    CHECK(rt_simt_pl_record(s, t, S_ATOMIC, 0x60000, 0));
  }
}

UNIT_TEST(divergent_lanes_make_partial_instructions) {
  ac_context *ctx = ac_context_create();
  ac_kernel_profile k = model(ctx, feed_divergent);
  CHECK_EQ_INT(k.warp_insts, 3 * 5);
  CHECK_EQ_INT(k.lane_insts, (32 + 1 + 1) * 5);
  CHECK_EQ_INT(k.ld_insts, 3 + 1);
  CHECK_EQ_INT(k.ld_sectors, 3 + 100); /* 3200 contiguous bytes: 100 sectors */
  CHECK_EQ_INT(k.ld_req, 3 + 25);
  CHECK_EQ_INT(k.param_insts, 1);
  CHECK_EQ_INT(k.atomics, 32);
  CHECK_EQ_INT(k.min_bytes, 4 + 3200);
  ac_context_destroy(ctx);
}

/* Shared memory: a stride of two words puts two distinct words in each
 * even bank (one conflict); a broadcast is one wavefront; 8-byte lanes over
 * consecutive words need two wavefronts, the fewest for 256 bytes (none);
 * a stride of 32 words sends all 32 lanes to one bank (31 conflicts). */
static void feed_shared(rt_simt_plaunch *s) {
  for (unsigned t = 0; t < 32; t++) {
    CHECK(rt_simt_pl_record(s, t, S_SLD4, 0x8000 + 8 * t, 0));
    CHECK(rt_simt_pl_record(s, t, S_SLD4, 0x8000, 0));
    CHECK(rt_simt_pl_record(s, t, S_SLD8, 0x8000 + 8 * t, 0));
    CHECK(rt_simt_pl_record(s, t, S_SLD4, 0x8000 + 128 * t, 0));
  }
}

UNIT_TEST(shared_memory_bank_conflicts) {
  ac_context *ctx = ac_context_create();
  ac_kernel_profile k = model(ctx, feed_shared);
  CHECK_EQ_INT(k.smem_insts, 4);
  CHECK_EQ_INT(k.smem_wavefronts, 2 + 1 + 2 + 32);
  CHECK_EQ_INT(k.smem_conflicts, 1 + 0 + 0 + 31);
  CHECK_EQ_INT(k.bytes, 0);
  CHECK_EQ_INT(k.min_bytes, 0);
  ac_context_destroy(ctx);
}

/* A flush before the warp synchronised, with lanes still to run, marks the
 * profile approximate; one with no lane left to run does not. */
UNIT_TEST(early_flush_is_marked_approximate) {
  ac_context *ctx = ac_context_create();
  rt_simt_prof *p = rt_simt_prof_create(ctx, sites, S_N);
  rt_simt_plaunch *s = rt_simt_pl_begin(ctx, p, 32);
  CHECK(rt_simt_pl_record(s, 0, S_LD4, 0x1000, 0));
  rt_simt_pl_flush_warp(s, 0, false, true);
  CHECK(rt_simt_pl_record(s, 1, S_LD4, 0x1004, 0));
  rt_simt_pl_flush_warp(s, 0, true, true);
  rt_simt_pl_end(s, true);
  ac_kernel_profile k;
  memset(&k, 0, sizeof k);
  rt_simt_prof_read(p, &k);
  CHECK(!k.approximate);
  CHECK_EQ_INT(k.ld_insts, 2); /* the early flush split the instruction */
  s = rt_simt_pl_begin(ctx, p, 32);
  CHECK(rt_simt_pl_record(s, 0, S_LD4, 0x1000, 0));
  rt_simt_pl_flush_warp(s, 0, false, false);
  rt_simt_pl_end(s, true);
  rt_simt_prof_read(p, &k);
  CHECK(k.approximate);
  CHECK_EQ_INT(k.launches, 2);
  rt_simt_prof_reset(p);
  rt_simt_prof_read(p, &k);
  CHECK_EQ_INT(k.launches, 0);
  CHECK(!k.approximate);
  /* a failed launch adds nothing */
  s = rt_simt_pl_begin(ctx, p, 32);
  CHECK(rt_simt_pl_record(s, 0, S_LD4, 0x1000, 0));
  rt_simt_pl_end(s, false);
  rt_simt_prof_read(p, &k);
  CHECK_EQ_INT(k.launches, 0);
  rt_simt_prof_destroy(ctx, p);
  ac_context_destroy(ctx);
}

/* ---- the public API, end to end ---- */

static const char *prog = "fn saxpy(a: f32, xs: f32[], ys: f32[]) -> f32[] {\n"
                          "  map(|x, y| a * x + y, xs, ys)\n"
                          "}\n"
                          "fn tr(m: f32[,]) -> f32[,] { map(|x| x + 1.0, transpose(m)) }\n"
                          "fn total(xs: f32[]) -> f32 { fold(|a, b| a + b, 0.0, xs) }\n";

static ac_status show(ac_status st, ac_error **err) {
  if (st != AC_OK)
    fprintf(stderr, "  (%s)\n", *err ? ac_error_text(*err) : "no error object");
  ac_error_destroy(*err);
  *err = NULL;
  return st;
}

static ac_function *compile(ac_runtime *rt, ac_module *m, const char *name) {
  ac_function *f = NULL;
  ac_error *err = NULL;
  CHECK_EQ_INT(show(ac_runtime_compile(rt, m, name, &f, &err), &err), AC_OK);
  return f;
}

static ac_array *floats(ac_context *ctx, unsigned rank, const int64_t *ext, float scale) {
  int64_t n = 1;
  for (unsigned i = 0; i < rank; i++)
    n *= ext[i];
  float *v = malloc((size_t)n * sizeof *v);
  for (int64_t i = 0; i < n; i++)
    v[i] = scale * (float)(i % 13);
  ac_array *a = ac_array_create(ctx, AC_F32, rank, ext, v, NULL);
  free(v);
  return a;
}

static ac_datum arr(ac_array *a) {
  ac_datum d = {AC_DATUM_ARRAY, AC_F32, {0}, a};
  return d;
}

UNIT_TEST(api_counts_coalesced_and_strided_kernels) {
  ac_context *ctx = ac_context_create();
  ac_module *m = NULL;
  ac_error *err = NULL;
  CHECK_EQ_INT(show(ac_module_parse(ctx, "p.ac", prog, strlen(prog), &m, &err), &err), AC_OK);
  ac_runtime *rt = NULL, *plain = NULL;
  CHECK_EQ_INT(show(ac_runtime_create(ctx, AC_BACKEND_SIMT_EMU, &rt, &err), &err), AC_OK);
  CHECK_EQ_INT(show(ac_runtime_create(ctx, AC_BACKEND_SIMT_EMU, &plain, &err), &err), AC_OK);
  CHECK_EQ_INT(show(ac_runtime_set_profiling(rt, true, &err), &err), AC_OK);
  ac_function *f = compile(rt, m, "saxpy"), *g = compile(plain, m, "saxpy");
  const int64_t n = 4096;
  ac_array *xs = floats(ctx, 1, &n, 1.0f), *ys = floats(ctx, 1, &n, 0.5f);
  ac_datum args[3] = {{AC_DATUM_SCALAR, AC_F32, {.f = 2.0}, NULL}, arr(xs), arr(ys)};
  ac_datum r1, r2;
  CHECK_EQ_INT(show(ac_function_call(f, args, 3, &r1, 1, &err), &err), AC_OK);
  CHECK_EQ_INT(show(ac_function_call(g, args, 3, &r2, 1, &err), &err), AC_OK);
  /* counting changes nothing */
  CHECK(memcmp(ac_array_data(r1.array), ac_array_data(r2.array), (size_t)n * 4) == 0);
  ac_kernel_profile k;
  memset(&k, 0xff, sizeof k);
  CHECK_EQ_INT(show(ac_function_profile(f, 0, &k, sizeof k, &err), &err), AC_OK);
  CHECK_STR(k.kernel, "k0_map");
  CHECK_EQ_INT(k.launches, 1);
  CHECK_EQ_INT(k.ld_req, 2 * n / 32);
  CHECK_EQ_INT(k.ld_sectors, 4 * k.ld_req);
  CHECK_EQ_INT(k.st_sectors, 4 * k.st_req);
  CHECK_EQ_INT(k.bytes, 12 * n);
  CHECK_EQ_INT(k.min_bytes, 12 * n);
  CHECK_EQ_INT(k.lane_insts, 32 * k.warp_insts);
  CHECK_EQ_INT(k.barriers, 0);
  CHECK(!k.approximate);
  /* a prefix of the structure (an older caller) */
  ac_kernel_profile small;
  memset(&small, 0, sizeof small);
  CHECK_EQ_INT(show(ac_function_profile(f, 0, &small, offsetof(ac_kernel_profile, ld_insts), &err),
                    &err),
               AC_OK);
  CHECK_EQ_INT(small.launches, 1);
  CHECK_EQ_INT(small.ld_insts, 0);
  char *text = NULL;
  CHECK_EQ_INT(show(ac_function_print_profile(f, &text, &err), &err), AC_OK);
  CHECK(text && strncmp(text, "profile: k0_map launches=1 ld_req=256 ld_sectors_per_req=4.00 ",
                        62) == 0);
  ac_string_destroy(ctx, text);
  ac_function_profile_reset(f);
  CHECK_EQ_INT(show(ac_function_profile(f, 0, &k, sizeof k, &err), &err), AC_OK);
  CHECK_EQ_INT(k.launches, 0);
  CHECK_EQ_INT(k.bytes, 0);
  CHECK_EQ_INT(show(ac_function_print_profile(f, &text, &err), &err), AC_OK);
  CHECK_STR(text, ""); /* kernels never launched are left out */
  ac_string_destroy(ctx, text);

  /* refusals */
  CHECK_EQ_INT(show(ac_function_profile(f, 1, &k, sizeof k, &err), &err), AC_ERR_INVALID);
  CHECK_EQ_INT(show(ac_function_profile(g, 0, &k, sizeof k, &err), &err), AC_ERR_INVALID);
  CHECK_EQ_INT(show(ac_function_profile(f, 0, NULL, sizeof k, &err), &err), AC_ERR_INVALID);
  ac_runtime *cpu = NULL;
  CHECK_EQ_INT(show(ac_runtime_create(ctx, AC_BACKEND_CPU, &cpu, &err), &err), AC_OK);
  CHECK_EQ_INT(show(ac_runtime_set_profiling(cpu, true, &err), &err), AC_ERR_UNSUPPORTED);
  ac_function *h = compile(cpu, m, "saxpy");
  CHECK_EQ_INT(show(ac_function_profile(h, 0, &k, sizeof k, &err), &err), AC_ERR_UNSUPPORTED);
  CHECK_EQ_INT(show(ac_function_print_profile(h, &text, &err), &err), AC_ERR_UNSUPPORTED);
  ac_function_profile_reset(h); /* harmless */
  ac_function_destroy(h);
  ac_runtime_destroy(cpu);

  /* profiled and plain code are different compilations on one runtime */
  size_t before = ac_runtime_num_compilations(rt);
  CHECK_EQ_INT(show(ac_runtime_set_profiling(rt, false, &err), &err), AC_OK);
  ac_function *p2 = compile(rt, m, "saxpy");
  CHECK_EQ_INT(ac_runtime_num_compilations(rt), before + 1);
  CHECK_EQ_INT(show(ac_function_profile(p2, 0, &k, sizeof k, &err), &err), AC_ERR_INVALID);
  ac_function_destroy(p2);
  CHECK_EQ_INT(show(ac_runtime_set_profiling(rt, true, &err), &err), AC_OK);

  /* reading a matrix column by column: a sector per lane */
  ac_function *t = compile(rt, m, "tr");
  const int64_t ext[2] = {256, 128};
  ac_array *mat = floats(ctx, 2, ext, 1.0f);
  ac_datum targ = arr(mat), tres;
  CHECK_EQ_INT(show(ac_function_call(t, &targ, 1, &tres, 1, &err), &err), AC_OK);
  CHECK_EQ_INT(show(ac_function_profile(t, 0, &k, sizeof k, &err), &err), AC_OK);
  CHECK_EQ_INT(k.ld_sectors, 32 * k.ld_req);
  CHECK_EQ_INT(k.st_sectors, 4 * k.st_req);
  CHECK_EQ_INT(k.min_bytes, 2 * 4 * 256 * 128);
  CHECK_EQ_INT(k.bytes, 32 * 256 * 128 + 4 * 256 * 128);
  ac_datum_release(&tres);
  ac_array_release(mat);
  ac_function_destroy(t);

  /* a block fold: barriers and shared memory, the result unchanged */
  ac_function *s1 = compile(rt, m, "total"), *s2 = compile(plain, m, "total");
  ac_datum sarg = arr(xs), o1, o2;
  CHECK_EQ_INT(show(ac_function_call(s1, &sarg, 1, &o1, 1, &err), &err), AC_OK);
  CHECK_EQ_INT(show(ac_function_call(s2, &sarg, 1, &o2, 1, &err), &err), AC_OK);
  CHECK(o1.s.f == o2.s.f);
  uint64_t barriers = 0, smem = 0;
  for (size_t i = 0; i < ac_function_num_kernels(s1); i++) {
    CHECK_EQ_INT(show(ac_function_profile(s1, i, &k, sizeof k, &err), &err), AC_OK);
    barriers += k.barriers;
    smem += k.smem_insts;
  }
  CHECK(barriers > 0);
  CHECK(smem > 0);
  ac_function_destroy(s1);
  ac_function_destroy(s2);

  ac_datum_release(&r1);
  ac_datum_release(&r2);
  ac_array_release(xs);
  ac_array_release(ys);
  ac_function_destroy(f);
  ac_function_destroy(g);
  ac_runtime_destroy(rt);
  ac_runtime_destroy(plain);
  ac_module_destroy(m);
  ac_context_destroy(ctx);
}

UNIT_MAIN(coalesced_access_is_four_sectors_per_request, strided_access_is_a_sector_per_lane,
          vector_access_counts_request_units, divergent_lanes_make_partial_instructions,
          shared_memory_bank_conflicts, early_flush_is_marked_approximate,
          api_counts_coalesced_and_strided_kernels)
