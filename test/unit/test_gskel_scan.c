/* The block scan with decoupled look-back of the GPU scans and filter
 * (lib/lower/gskel_lookback.c), run on the SIMT emulator.
 *
 * The emulator runs blocks one after another, so in whole programs every
 * predecessor of a tile has published its inclusive prefix before the tile
 * starts and the look-back stops at once. The paths a real GPU takes (runs
 * of predecessors that have published only their aggregates, windows of 32
 * that hold no inclusive prefix, a tile that waits while the call has
 * failed) are tested here instead: one block runs gs_block_scan after the
 * test has set the ticket counter to tile T and written the descriptors of
 * tiles 0..T-1 by hand (layout: gskel_lookback.c's file comment). The
 * operator composes affine maps x -> a*x + b (associative, not
 * commutative), so a prefix combined in the wrong order, twice, or across
 * the nearest inclusive prefix is wrong; descriptors beyond that prefix
 * hold garbage that must never be read.
 */
#include "unit.h"

#include "codegen/simt.h"
#include "lower/gskel_scan.h"
#include "runtime/gpu.h"
#include "runtime/simt_emu.h"
#include "target/native.h"

#include <stdlib.h>

enum { B = GS_BLOCK, LEAVES = 2, MAXT = 128 };

/* ---- the operator, in IR and in C (wrapping u64 arithmetic) ---- */

static void k_compose(cg_fn *f, const gs_op *op, const LLVMValueRef *p, const LLVMValueRef *q,
                      LLVMValueRef *out) {
  (void)op;
  LLVMBuilderRef b = f->M->b;
  out[0] = LLVMBuildMul(b, p[0], q[0], "");
  out[1] = LLVMBuildAdd(b, LLVMBuildMul(b, q[0], p[1], ""), q[1], "");
}

typedef struct part {
  bool valid, head;
  uint64_t a, b;
} part;

/* The partial operator of gskel_scan.h. */
static part comb(part x, part y) {
  part r = y;
  if (!y.valid)
    r = x;
  else if (x.valid && !y.head) {
    r.a = x.a * y.a;
    r.b = y.a * x.b + y.b;
  }
  r.valid = x.valid || y.valid;
  r.head = x.head || y.head;
  return r;
}

/* ---- fixture ---- */

typedef struct fx {
  ac_context *ctx;
  ac_module *m;
  pl_plan *plan;
  nat_jit *J;
  cg_module M;
  rt_gkernel_fn fn;
  uint64_t smem;
} fx;

/* The kernel: frame = {a[], b[], head[] (i8), out[] (3 per thread: valid,
 * a, b), tile_out[] (6: prefix valid, a, b; aggregate valid, a, b)}. */
static void k_block_scan(fx *x, bool seg) {
  cg_module *M = &x->M;
  LLVMBuilderRef b = M->b;
  LLVMTypeRef ty[LEAVES] = {M->t_i64, M->t_i64};
  gs_op op = {.n = LEAVES, .ty = ty, .seg = seg, .comb = k_compose, .ud = NULL};
  cg_fn *f = cg_gpu_kernel_begin(M, "lb", B);
  LLVMValueRef w[5];
  for (unsigned i = 0; i < 5; i++) {
    LLVMValueRef ix = cg_i64(M, i);
    w[i] = LLVMBuildLoad2(b, M->t_ptr, LLVMBuildGEP2(b, M->t_i64, f->frame, &ix, 1, ""), "");
  }
  gs_tiles tl; /* the block scan alone: not gs_tiles_end, which would clear */
  gs_tiles_begin(f, &op, &tl);
  LLVMValueRef scratch = tl.scratch, tile = tl.tile;
  LLVMValueRef tid = LLVMBuildZExt(b, simt_tid(f), M->t_i64, "");
  LLVMValueRef v[LEAVES];
  for (unsigned k = 0; k < LEAVES; k++)
    v[k] = LLVMBuildLoad2(b, M->t_i64, LLVMBuildGEP2(b, M->t_i64, w[k], &tid, 1, ""), "");
  LLVMValueRef h = LLVMBuildLoad2(b, M->t_i8, LLVMBuildGEP2(b, M->t_i8, w[2], &tid, 1, ""), "");
  gs_part in, pre, tp, agg;
  gs_value(f, &op, v, LLVMBuildICmp(b, LLVMIntNE, h, LLVMConstInt(M->t_i8, 0, 0), ""), &in);
  gs_block_scan(f, &op, scratch, tile, &in, &pre, &tp, &agg);
  LLVMValueRef o = LLVMBuildMul(b, tid, cg_i64(M, 3), "");
  LLVMValueRef vals[3] = {LLVMBuildZExt(b, pre.valid, M->t_i64, ""), pre.v[0], pre.v[1]};
  for (unsigned k = 0; k < 3; k++) {
    LLVMValueRef ix = LLVMBuildAdd(b, o, cg_i64(M, k), "");
    LLVMBuildStore(b, vals[k], LLVMBuildGEP2(b, M->t_i64, w[3], &ix, 1, ""));
  }
  LLVMValueRef tv[6] = {LLVMBuildZExt(b, tp.valid, M->t_i64, ""),  tp.v[0],  tp.v[1],
                        LLVMBuildZExt(b, agg.valid, M->t_i64, ""), agg.v[0], agg.v[1]};
  for (unsigned k = 0; k < 6; k++) {
    LLVMValueRef ix = cg_i64(M, k);
    LLVMBuildStore(b, tv[k], LLVMBuildGEP2(b, M->t_i64, w[4], &ix, 1, ""));
  }
  LLVMBuildBr(b, tl.fin);
  LLVMPositionBuilderAtEnd(b, tl.fin);
  x->smem = cg_gpu_smem(f);
  cg_kernel_end(f);
}

static bool fx_init(fx *x, bool seg) {
  memset(x, 0, sizeof *x);
  x->ctx = ac_context_create();
  ac_error *err = NULL;
  const char *src = "fn f(a: i64) -> i64 { a }\n";
  if (ac_module_parse(x->ctx, "t.ac", src, strlen(src), &x->m, &err) != AC_OK ||
      nat_jit_create(x->ctx, &x->J, &err) != AC_OK) {
    fprintf(stderr, "setup: %s\n", ac_error_message(err));
    ac_error_destroy(err);
    return false;
  }
  x->plan = pl_create(x->ctx, "t", "t.ac");
  if (cg_module_init(&x->M, x->m, x->plan, CG_TARGET_SIMT, &err) != AC_OK) {
    ac_error_destroy(err);
    return false;
  }
  nat_prepare(x->J, &x->M);
  k_block_scan(x, seg);
  const char *name = "lb";
  void *addr = NULL;
  if (x->M.st != AC_OK || nat_compile(x->J, &x->M, &name, 1, &addr, &err) != AC_OK) {
    fprintf(stderr, "compile: %s\n", err ? ac_error_message(err) : ac_error_message(x->M.err));
    ac_error_destroy(err);
    return false;
  }
  memcpy(&x->fn, &addr, sizeof x->fn);
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

/* ---- one run ---- */

enum { ST_INVALID = 0, ST_AGG = 1, ST_INCL = 2 };
#define DESC (8 + 16 * LEAVES)

typedef struct run {
  int status[MAXT];
  part value[MAXT]; /* the aggregate or inclusive prefix, per status */
  uint64_t a[B], b[B];
  uint8_t head[B];
  uint64_t out[3 * B], tout[6];
  unsigned char scratch[GS_SCRATCH_FIXED + (MAXT + 1) * DESC];
} run;

static uint64_t rnd(uint64_t *s) {
  *s = *s * 6364136223846793005u + 1442695040888963407u;
  return *s >> 33;
}

/* Tile T's block scan over the descriptors of r; failed: the call has
 * already failed (ctl). */
static bool run_tile(fx *x, run *r, int T, bool failed) {
  memset(r->scratch, 0, sizeof r->scratch);
  int32_t ticket = T;
  memcpy(r->scratch, &ticket, sizeof ticket);
  for (int j = 0; j < T; j++) {
    unsigned char *d = r->scratch + GS_SCRATCH_FIXED + j * DESC;
    int32_t st = r->status[j];
    memcpy(d, &st, sizeof st);
    uint64_t v[LEAVES] = {r->value[j].a, r->value[j].b};
    for (int k = 0; k < LEAVES; k++) { /* the other slot gets garbage */
      memcpy(d + (st == ST_INCL ? 16 : 8) + 16 * k, &v[k], 8);
      memset(d + (st == ST_INCL ? 8 : 16) + 16 * k, 0x5a, 8);
    }
  }
  uint64_t frame[5] = {(uint64_t)(uintptr_t)r->a, (uint64_t)(uintptr_t)r->b,
                       (uint64_t)(uintptr_t)r->head, (uint64_t)(uintptr_t)r->out,
                       (uint64_t)(uintptr_t)r->tout};
  rt_gctl ctl;
  memset(&ctl, 0, sizeof ctl);
  ctl.failed = failed;
  ctl.scratch = (uint64_t)(uintptr_t)r->scratch;
  ctl.scratch_bytes = (int64_t)sizeof r->scratch;
  ac_error *err = NULL;
  if (rt_simt_run(x->ctx, x->fn, 1, B, x->smem, frame, &ctl, 0, &err) != AC_OK) {
    fprintf(stderr, "run: %s\n", ac_error_message(err));
    ac_error_destroy(err);
    return false;
  }
  return true;
}

static void fill_threads(run *r, uint64_t seed, const int *heads, int nheads) {
  for (int t = 0; t < B; t++) {
    r->a[t] = 1 + rnd(&seed) % 5;
    r->b[t] = rnd(&seed) % 1000;
    r->head[t] = 0;
  }
  for (int i = 0; i < nheads; i++)
    r->head[heads[i]] = 1;
}

static void check_part(const uint64_t *got, part want) {
  CHECK_EQ_INT(got[0], want.valid);
  if (want.valid && got[0]) {
    CHECK_EQ_INT(got[1], want.a);
    CHECK_EQ_INT(got[2], want.b);
  }
}

/* Checks the outputs against P, the tile's expected exclusive prefix, and
 * the tile's own published descriptor. */
static void check_tile(run *r, int T, part P, bool seg) {
  check_part(r->tout, P);
  part acc = P, agg = {0};
  for (int t = 0; t < B; t++) {
    check_part(&r->out[3 * t], acc);
    part xt = {true, seg && r->head[t], r->a[t], r->b[t]};
    acc = comb(acc, xt);
    agg = comb(agg, xt);
  }
  check_part(&r->tout[3], agg);
  const unsigned char *d = r->scratch + GS_SCRATCH_FIXED + T * DESC;
  int32_t st;
  memcpy(&st, d, sizeof st);
  CHECK_EQ_INT(st, ST_INCL);
  uint64_t v[LEAVES];
  for (int k = 0; k < LEAVES; k++)
    memcpy(&v[k], d + 16 + 16 * k, 8);
  CHECK_EQ_INT(v[0], acc.a);
  CHECK_EQ_INT(v[1], acc.b);
  int32_t ticket;
  memcpy(&ticket, r->scratch, sizeof ticket);
  CHECK_EQ_INT(ticket, T + 1);
}

/* Descriptors of tiles 0..T-1: inclusive prefixes at incl[], aggregates
 * elsewhere, random values. Returns the expected exclusive prefix of tile
 * T: the nearest inclusive prefix, then the aggregates after it. */
static part set_descs(run *r, int T, const int *incl, int nincl, uint64_t seed) {
  int nearest = -1;
  for (int j = 0; j < T; j++) {
    r->status[j] = ST_AGG;
    for (int i = 0; i < nincl; i++)
      if (incl[i] == j)
        r->status[j] = ST_INCL;
    if (r->status[j] == ST_INCL)
      nearest = j;
    r->value[j] = (part){true, false, 1 + rnd(&seed) % 7, rnd(&seed) % 100000};
  }
  part P = {0};
  for (int j = nearest < 0 ? 0 : nearest; j < T; j++)
    P = comb(P, r->value[j]);
  return P;
}

static void case_(int T, const int *incl, int nincl, const int *heads, int nheads, bool seg) {
  fx x;
  run *r = calloc(1, sizeof *r);
  if (!r || !fx_init(&x, seg)) {
    CHECK(false);
    free(r);
    return;
  }
  part P = set_descs(r, T, incl, nincl, 42 + (uint64_t)T);
  fill_threads(r, 7 + (uint64_t)T, heads, nheads);
  CHECK(run_tile(&x, r, T, false));
  check_tile(r, T, P, seg);
  fx_fini(&x);
  free(r);
}

UNIT_TEST(three_windows_of_aggregates_back_to_the_nearest_inclusive_prefix) {
  /* lanes read 69..38 and 37..6 (aggregates only), then 5 (inclusive) */
  const int incl[] = {0, 3, 5};
  case_(70, incl, 3, NULL, 0, false);
}

UNIT_TEST(the_predecessor_inclusive_prefix_ends_the_look_back) {
  const int incl[] = {0, 20, 39};
  case_(40, incl, 3, NULL, 0, false);
}

UNIT_TEST(a_window_reaching_past_tile_0) {
  const int incl[] = {0};
  case_(10, incl, 1, NULL, 0, false);
  case_(1, incl, 1, NULL, 0, false);
}

UNIT_TEST(inclusive_prefix_at_a_window_boundary) {
  const int incl[] = {0, 64}; /* tile 96: lanes 95..64, 64 is lane 31 */
  case_(96, incl, 2, NULL, 0, false);
  const int incl2[] = {0, 63}; /* the second window's lane 0 */
  case_(96, incl2, 2, NULL, 0, false);
}

UNIT_TEST(tile_0_has_no_prefix_and_publishes_its_inclusive_prefix) {
  case_(0, NULL, 0, NULL, 0, false);
}

UNIT_TEST(segment_heads_restart_the_prefix_within_the_tile) {
  const int incl[] = {0, 5};
  const int heads[] = {0, 31, 32, 100, 200, 255};
  case_(70, incl, 2, heads, 6, true);
  const int late[] = {255};
  case_(70, incl, 2, late, 1, true);
  case_(70, incl, 2, NULL, 0, true);
}

UNIT_TEST(a_waiting_tile_gives_up_when_the_call_has_failed) {
  fx x;
  run *r = calloc(1, sizeof *r);
  if (!r || !fx_init(&x, false)) {
    CHECK(false);
    free(r);
    return;
  }
  const int incl[] = {0};
  set_descs(r, 5, incl, 1, 1);
  r->status[4] = ST_INVALID; /* never published: without the failure, a hang */
  fill_threads(r, 3, NULL, 0);
  CHECK(run_tile(&x, r, 5, true));
  fx_fini(&x);
  free(r);
}

UNIT_MAIN(three_windows_of_aggregates_back_to_the_nearest_inclusive_prefix,
          the_predecessor_inclusive_prefix_ends_the_look_back, a_window_reaching_past_tile_0,
          inclusive_prefix_at_a_window_boundary,
          tile_0_has_no_prefix_and_publishes_its_inclusive_prefix,
          segment_heads_restart_the_prefix_within_the_tile,
          a_waiting_tile_gives_up_when_the_call_has_failed)
