/* test/unit/test_simt_emu.c: the SIMT emulator (runtime/simt_emu.c) and the
 * emulated device (runtime/simt_dev.c), with kernels written in C against
 * the services (ac_simt_*) the way generated SIMT kernels call them.
 *
 * Each kernel is a GPU idiom the skeletons use (block reduction through
 * shared memory and barriers, warp reductions and scans with shuffles,
 * votes, atomics across blocks, the "last block" ticket, spin-waits with
 * yield), checked against a host computation; and each error the emulator
 * diagnoses (barrier and warp divergence, deadlock, livelock, bad launches)
 * is provoked and its message checked. Kernels find their buffers through
 * frame words holding host pointers, as the runtime's kernels do.
 * The ucontext fallback is run too (ARRAYC_SIMT_SWITCH=ucontext).
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include "runtime/simt_emu.h"

#include "unit.h"

#include "arrayc/arrayc.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define P(w) ((void *)(uintptr_t)(w))
#define W(p) ((uint64_t)(uintptr_t)(p))

static int64_t gtid(void) {
  return (int64_t)ac_simt_ctaid() * ac_simt_ntid() + ac_simt_tid();
}

/* Runs fn and returns its status; *msg gets the error message (or ""). */
static ac_status run(ac_context *ctx, rt_gkernel_fn fn, unsigned grid, unsigned block, size_t smem,
                     uint64_t *frame, int64_t n, char *msg, size_t msglen) {
  ac_error *err = NULL;
  rt_gctl ctl;
  memset(&ctl, 0, sizeof ctl);
  ac_status st = rt_simt_run(ctx, fn, grid, block, smem, frame, &ctl, n, &err);
  if (msg) {
    snprintf(msg, msglen, "%s", err ? ac_error_message(err) : "");
  }
  if (err)
    ac_error_destroy(err);
  return st;
}

/* ---- block reduction ----
 * frame: x, partials. Grid-stride accumulation, then a tree in shared memory
 * (any block size, not only powers of two). */
static void k_reduce(uint64_t *frame, rt_gctl *ctl, int64_t n, const uint64_t *params) {
  (void)params;
  const int64_t *x = P(frame[0]);
  int64_t *part = P(frame[1]);
  int64_t *sh = ac_simt_shared();
  int32_t tid = ac_simt_tid(), nt = ac_simt_ntid();
  int64_t s = 0;
  for (int64_t i = gtid(); i < n; i += (int64_t)ac_simt_nctaid() * nt)
    s += x[i];
  sh[tid] = s;
  ac_simt_barrier();
  for (int32_t w = 1; w < nt; w *= 2) {
    if (tid % (2 * w) == 0 && tid + w < nt)
      sh[tid] += sh[tid + w];
    ac_simt_barrier();
  }
  if (tid == 0)
    part[ac_simt_ctaid()] = sh[0];
}

static void check_reduce(ac_context *ctx, unsigned grid, unsigned block) {
  enum { N = 5000 };
  int64_t *x = malloc(N * sizeof *x), part[8], want[8] = {0};
  for (int64_t i = 0; i < N; i++) {
    x[i] = (i * 7919) % 1000 - 300;
    want[(i / block) % grid] += x[i];
  }
  memset(part, 0, sizeof part);
  uint64_t frame[2] = {W(x), W(part)};
  CHECK_EQ_INT(run(ctx, k_reduce, grid, block, block * sizeof(int64_t), frame, N, NULL, 0), AC_OK);
  for (unsigned b = 0; b < grid; b++)
    CHECK_EQ_INT(part[b], want[b]);
  free(x);
}

UNIT_TEST(block_reduction_through_shared_memory_and_barriers) {
  ac_context *ctx = ac_context_create();
  static const unsigned blocks[] = {32, 64, 96, 256, 1024};
  for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; i++) {
    check_reduce(ctx, 1, blocks[i]);
    check_reduce(ctx, 3, blocks[i]);
  }
  ac_context_destroy(ctx);
}

/* ---- indices and scheduling order ----
 * frame: out (4 words per global thread), order log, log counter. Without
 * waits thread 0 runs to its end, then thread 1, ...: the log is in order. */
static void k_indices(uint64_t *frame, rt_gctl *ctl, int64_t n, const uint64_t *params) {
  (void)params;
  int64_t *out = P(frame[0]);
  int64_t *log = P(frame[1]);
  int64_t *cnt = P(frame[2]);
  int64_t g = gtid();
  out[4 * g] = ac_simt_tid();
  out[4 * g + 1] = ac_simt_ntid();
  out[4 * g + 2] = ac_simt_ctaid();
  out[4 * g + 3] = ac_simt_nctaid();
  log[(*cnt)++] = g;
}

UNIT_TEST(thread_and_block_indices_in_order) {
  ac_context *ctx = ac_context_create();
  enum { G = 3, B = 96 };
  int64_t out[4 * G * B], log[G * B], cnt = 0;
  uint64_t frame[3] = {W(out), W(log), W(&cnt)};
  CHECK_EQ_INT(run(ctx, k_indices, G, B, 0, frame, 0, NULL, 0), AC_OK);
  CHECK_EQ_INT(cnt, G * B);
  int bad = 0;
  for (int64_t g = 0; g < G * B; g++) {
    bad += out[4 * g] != g % B || out[4 * g + 1] != B || out[4 * g + 2] != g / B ||
           out[4 * g + 3] != G;
    bad += log[g] != g;
  }
  CHECK_EQ_INT(bad, 0);
  ac_context_destroy(ctx);
}

/* ---- warp reductions ----
 * frame: x, per-warp sums (shfl down), per-thread sums (shfl xor: every lane
 * ends with the total). 64-bit values check the full width is carried. */
static void k_warp_reduce(uint64_t *frame, rt_gctl *ctl, int64_t n, const uint64_t *params) {
  (void)params;
  const int64_t *x = P(frame[0]);
  int64_t *down = P(frame[1]), *bfly = P(frame[2]);
  int64_t g = gtid();
  int64_t v = x[g], u = x[g];
  for (int32_t off = 16; off > 0; off /= 2)
    v += (int64_t)ac_simt_shfl((uint64_t)v, 2, off);
  for (int32_t m = 16; m > 0; m /= 2)
    u += (int64_t)ac_simt_shfl((uint64_t)u, 3, m);
  if (ac_simt_tid() % 32 == 0)
    down[g / 32] = v;
  bfly[g] = u;
}

UNIT_TEST(warp_reduction_with_shfl_down_and_xor) {
  ac_context *ctx = ac_context_create();
  enum { G = 2, B = 128, T = G * B };
  int64_t x[T], down[T / 32], bfly[T], want[T / 32] = {0};
  for (int64_t i = 0; i < T; i++) {
    x[i] = (i << 33) + i * 3 - 100;
    want[i / 32] += x[i];
  }
  uint64_t frame[3] = {W(x), W(down), W(bfly)};
  CHECK_EQ_INT(run(ctx, k_warp_reduce, G, B, 0, frame, T, NULL, 0), AC_OK);
  int bad = 0;
  for (int64_t w = 0; w < T / 32; w++)
    bad += down[w] != want[w];
  for (int64_t i = 0; i < T; i++)
    bad += bfly[i] != want[i / 32];
  CHECK_EQ_INT(bad, 0);
  ac_context_destroy(ctx);
}

/* ---- inclusive warp scan (Hillis-Steele with shfl up) ---- */
static void k_warp_scan(uint64_t *frame, rt_gctl *ctl, int64_t n, const uint64_t *params) {
  (void)params;
  const int64_t *x = P(frame[0]);
  int64_t *out = P(frame[1]);
  int64_t g = gtid(), v = x[g];
  int32_t lane = ac_simt_tid() % 32;
  for (int32_t d = 1; d < 32; d *= 2) {
    int64_t y = (int64_t)ac_simt_shfl((uint64_t)v, 1, d);
    if (lane >= d)
      v += y;
  }
  out[g] = v;
}

static void check_scan(ac_context *ctx) {
  enum { G = 3, B = 64, T = G * B };
  int64_t x[T], out[T];
  for (int64_t i = 0; i < T; i++)
    x[i] = (i * 37) % 11 - 5;
  uint64_t frame[2] = {W(x), W(out)};
  CHECK_EQ_INT(run(ctx, k_warp_scan, G, B, 0, frame, T, NULL, 0), AC_OK);
  int bad = 0;
  int64_t acc = 0;
  for (int64_t i = 0; i < T; i++) {
    acc = i % 32 ? acc + x[i] : x[i];
    bad += out[i] != acc;
  }
  CHECK_EQ_INT(bad, 0);
}

UNIT_TEST(inclusive_warp_scan_with_shfl_up) {
  ac_context *ctx = ac_context_create();
  check_scan(ctx);
  ac_context_destroy(ctx);
}

/* ---- shuffle semantics, case by case (PTX shfl.sync, width 32) ----
 * Each lane's value is 1000 + lane + 2^40 (the high half must survive);
 * out[k * 64 + g] is case k's result in global thread g. */
enum { SHFL_CASES = 11 };
static void k_shfl_cases(uint64_t *frame, rt_gctl *ctl, int64_t n, const uint64_t *params) {
  (void)params;
  uint64_t *out = P(frame[0]);
  int64_t g = gtid();
  int32_t lane = ac_simt_tid() % 32;
  uint64_t v = 1000 + (uint64_t)lane + ((uint64_t)1 << 40);
  static const int32_t mode[SHFL_CASES] = {0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 0};
  static const int32_t arg[SHFL_CASES] = {5, 37, 3, 0, -1, 3, 33, 32, 1, 31, 0};
  for (int k = 0; k < SHFL_CASES; k++) {
    int32_t a = k == SHFL_CASES - 1 ? 31 - lane : arg[k]; /* last: a per-lane source */
    out[k * 64 + g] = ac_simt_shfl(v, mode[k], a);
  }
}

UNIT_TEST(shuffle_modes_and_out_of_range_lanes) {
  ac_context *ctx = ac_context_create();
  uint64_t out[SHFL_CASES * 64];
  uint64_t frame[1] = {W(out)};
  CHECK_EQ_INT(run(ctx, k_shfl_cases, 1, 64, 0, frame, 0, NULL, 0), AC_OK);
  int bad = 0;
  for (int g = 0; g < 64; g++) {
    int l = g % 32;
    /* the source lane each case should read */
    int want[SHFL_CASES] = {
        5,                   /* idx 5 */
        5,                   /* idx 37: only bits 4..0 of the lane count */
        l < 3 ? l : l - 3,   /* up 3: the first 3 lanes keep their own */
        l,                   /* up 0 */
        l == 31 ? 0 : l,     /* up -1 = up 31: lane 31 reads lane 0 */
        l > 28 ? l : l + 3,  /* down 3: the last 3 lanes keep their own */
        l == 31 ? l : l + 1, /* down 33 = down 1 */
        l,                   /* down 32 = down 0 */
        l ^ 1,               /* xor 1 */
        31 - l,              /* xor 31 */
        31 - l,              /* idx 31 - lane: reversal */
    };
    for (int k = 0; k < SHFL_CASES; k++)
      if (out[k * 64 + g] != 1000 + (uint64_t)want[k] + ((uint64_t)1 << 40)) {
        fprintf(stderr, "shuffle case %d, thread %d: got %llu\n", k, g,
                (unsigned long long)out[k * 64 + g]);
        bad++;
      }
  }
  CHECK_EQ_INT(bad, 0);
  ac_context_destroy(ctx);
}

/* ---- votes ----
 * Pattern p in frame[1] picks each lane's predicate; out gets ballot, any,
 * all of every lane (they must agree across the warp). */
static int32_t vote_pred(int p, int32_t lane) {
  switch (p) {
  case 0:
    return lane % 3 == 0;
  case 1:
    return 2; /* any nonzero counts as true */
  case 2:
    return 0;
  default:
    return lane == 31 ? -7 : 0;
  }
}

static void k_vote(uint64_t *frame, rt_gctl *ctl, int64_t n, const uint64_t *params) {
  (void)params;
  uint32_t *out = P(frame[0]);
  int p = (int)frame[1];
  int64_t g = gtid();
  int32_t pred = vote_pred(p, ac_simt_tid() % 32);
  out[3 * g] = ac_simt_vote(2, pred);
  out[3 * g + 1] = ac_simt_vote(0, pred);
  out[3 * g + 2] = ac_simt_vote(1, pred);
}

UNIT_TEST(ballot_any_all) {
  ac_context *ctx = ac_context_create();
  static const uint32_t ballot[4] = {0x49249249u, 0xFFFFFFFFu, 0, 0x80000000u};
  static const uint32_t any[4] = {1, 1, 0, 1}, all[4] = {0, 1, 0, 0};
  for (int p = 0; p < 4; p++) {
    uint32_t out[3 * 64];
    uint64_t frame[2] = {W(out), (uint64_t)p};
    CHECK_EQ_INT(run(ctx, k_vote, 1, 64, 0, frame, 0, NULL, 0), AC_OK);
    int bad = 0;
    for (int g = 0; g < 64; g++)
      bad += out[3 * g] != ballot[p] || out[3 * g + 1] != any[p] || out[3 * g + 2] != all[p];
    CHECK_EQ_INT(bad, 0);
  }
  ac_context_destroy(ctx);
}

/* ---- atomics across blocks, and the last-block ticket ----
 * frame: counters {count, sum, tickets, finishers}, x, partials, total.
 * Every block reduces its part of x; the block that draws the last ticket
 * adds up the partials (CUB's single-pass reduction without a second
 * launch). */
typedef struct counters {
  _Atomic int64_t count, sum, tickets, finishers;
} counters;

static void k_ticket(uint64_t *frame, rt_gctl *ctl, int64_t n, const uint64_t *params) {
  (void)params;
  counters *c = P(frame[0]);
  const int64_t *x = P(frame[1]);
  int64_t *part = P(frame[2]), *total = P(frame[3]);
  int64_t *sh = ac_simt_shared(); /* ntid partial sums, then the "last" flag */
  int32_t tid = ac_simt_tid(), nt = ac_simt_ntid(), nb = ac_simt_nctaid();
  atomic_fetch_add(&c->count, 1);
  atomic_fetch_add(&c->sum, gtid());
  int64_t s = 0;
  for (int64_t i = gtid(); i < n; i += (int64_t)nb * nt)
    s += x[i];
  sh[tid] = s;
  ac_simt_barrier();
  for (int32_t w = nt / 2; w > 0; w /= 2) {
    if (tid < w)
      sh[tid] += sh[tid + w];
    ac_simt_barrier();
  }
  if (tid == 0) {
    part[ac_simt_ctaid()] = sh[0];
    sh[nt] = atomic_fetch_add(&c->tickets, 1) == nb - 1;
  }
  ac_simt_barrier();
  if (!sh[nt])
    return;
  if (tid == 0)
    atomic_fetch_add(&c->finishers, 1);
  int64_t t = 0;
  for (int32_t b = tid; b < nb; b += nt)
    t += part[b];
  ac_simt_barrier();
  sh[tid] = t;
  ac_simt_barrier();
  for (int32_t w = nt / 2; w > 0; w /= 2) {
    if (tid < w)
      sh[tid] += sh[tid + w];
    ac_simt_barrier();
  }
  if (tid == 0)
    *total = sh[0];
}

UNIT_TEST(atomics_across_blocks_and_last_block_ticket) {
  ac_context *ctx = ac_context_create();
  enum { G = 5, B = 64, N = 3001 };
  counters c;
  atomic_init(&c.count, 0);
  atomic_init(&c.sum, 0);
  atomic_init(&c.tickets, 0);
  atomic_init(&c.finishers, 0);
  int64_t x[N], part[G], total = -1, want = 0;
  for (int64_t i = 0; i < N; i++)
    want += x[i] = i % 17 - 8 + i;
  uint64_t frame[4] = {W(&c), W(x), W(part), W(&total)};
  CHECK_EQ_INT(run(ctx, k_ticket, G, B, (B + 1) * sizeof(int64_t), frame, N, NULL, 0), AC_OK);
  CHECK_EQ_INT(atomic_load(&c.count), G * B);
  CHECK_EQ_INT(atomic_load(&c.sum), (int64_t)G * B * (G * B - 1) / 2);
  CHECK_EQ_INT(atomic_load(&c.tickets), G);
  CHECK_EQ_INT(atomic_load(&c.finishers), 1);
  CHECK_EQ_INT(total, want);
  ac_context_destroy(ctx);
}

/* ---- spin-waits with yield ----
 * frame: flags (one per block), waits (per block, yields thread 0 made),
 * seen (per block). Block b's thread 0 waits for block b-1's flag (already
 * set: lower blocks run first) and sets its own to one more; inside the
 * block, thread 0 also waits for the last thread to publish 42 in shared
 * memory, which needs yield to let it run. */
static void k_spin(uint64_t *frame, rt_gctl *ctl, int64_t n, const uint64_t *params) {
  (void)params;
  _Atomic int64_t *flags = P(frame[0]);
  int64_t *waits = P(frame[1]), *seen = P(frame[2]);
  _Atomic int32_t *sh = ac_simt_shared();
  int32_t tid = ac_simt_tid(), b = ac_simt_ctaid();
  if (tid == 0) {
    int64_t prev = 0, spins = 0;
    if (b > 0)
      while ((prev = atomic_load(&flags[b - 1])) == 0)
        ac_simt_yield();
    while (atomic_load(&sh[0]) == 0) {
      ac_simt_yield();
      spins++;
    }
    waits[b] = spins;
    seen[b] = atomic_load(&sh[0]);
    atomic_store(&flags[b], prev + 1);
  } else if (tid == ac_simt_ntid() - 1) {
    atomic_store(&sh[0], 42);
  }
}

UNIT_TEST(spin_wait_with_yield_on_lower_block_and_same_block) {
  ac_context *ctx = ac_context_create();
  enum { G = 4 };
  _Atomic int64_t flags[G];
  int64_t waits[G], seen[G];
  for (int b = 0; b < G; b++)
    atomic_init(&flags[b], 0);
  uint64_t frame[3] = {W(flags), W(waits), W(seen)};
  CHECK_EQ_INT(run(ctx, k_spin, G, 64, sizeof(int32_t), frame, 0, NULL, 0), AC_OK);
  for (int b = 0; b < G; b++) {
    CHECK_EQ_INT(atomic_load(&flags[b]), b + 1);
    CHECK(waits[b] > 0); /* thread 0 runs first, so it really waited */
    CHECK_EQ_INT(seen[b], 42);
  }
  ac_context_destroy(ctx);
}

/* A spin on a flag that only a LATER block sets can never end. */
static void k_livelock(uint64_t *frame, rt_gctl *ctl, int64_t n, const uint64_t *params) {
  (void)params;
  _Atomic int32_t *flag = P(frame[0]);
  if (ac_simt_ctaid() == 1 && ac_simt_tid() == 0)
    atomic_store(flag, 1);
  if (ac_simt_ctaid() == 0 && ac_simt_tid() == 0)
    while (!atomic_load(flag))
      ac_simt_yield();
}

UNIT_TEST(livelock_on_a_later_block_is_detected) {
  ac_context *ctx = ac_context_create();
  _Atomic int32_t flag;
  atomic_init(&flag, 0);
  uint64_t frame[1] = {W(&flag)};
  char msg[512];
  CHECK_EQ_INT(run(ctx, k_livelock, 2, 32, 0, frame, 0, msg, sizeof msg), AC_ERR_INTERNAL);
  const char *want = "SIMT emulator: livelock in block 0: thread 0 yielded 16777216 times";
  CHECK(strncmp(msg, want, strlen(want)) == 0);
  CHECK_EQ_INT(atomic_load(&flag), 0); /* block 1 never ran */
  ac_context_destroy(ctx);
}

/* ---- errors: divergence, deadlock ----
 * frame[0]: which case; frame[1]: a counter of blocks that started. */
static void k_diverge(uint64_t *frame, rt_gctl *ctl, int64_t n, const uint64_t *params) {
  (void)params;
  int64_t which = (int64_t)frame[0];
  _Atomic int64_t *started = P(frame[1]);
  int32_t tid = ac_simt_tid(), lane = tid % 32, nt = ac_simt_ntid();
  if (tid == 0)
    atomic_fetch_add(started, 1);
  switch (which) {
  case 0: /* the last thread leaves while the others wait at a barrier */
    if (tid == nt - 1)
      return;
    ac_simt_barrier();
    break;
  case 1: /* thread 0 leaves first; the others reach the barrier later */
    if (tid == 0)
      return;
    ac_simt_barrier();
    break;
  case 2: /* only block 1 diverges: block 0 completes, block 2 never runs */
    if (ac_simt_ctaid() == 1 && tid == 5)
      return;
    ac_simt_barrier();
    break;
  case 3: /* half the warp shuffles, half votes */
    if (lane < 16)
      ac_simt_shfl(1, 0, 0);
    else
      ac_simt_vote(0, 1);
    break;
  case 4: /* lane 31 leaves while the rest shuffle */
    if (lane == 31)
      return;
    ac_simt_shfl(1, 2, 1);
    break;
  case 5: /* lane 0 of warp 1 leaves first */
    if (tid == 32)
      return;
    ac_simt_vote(2, 1);
    break;
  case 6: /* lane 0 waits at a barrier, its warp at a shuffle: deadlock */
    if (tid >= 32 || lane == 0)
      ac_simt_barrier();
    else
      ac_simt_shfl(1, 0, 0);
    break;
  case 7: /* a mode no shuffle has */
    ac_simt_shfl(1, 9, 0);
    break;
  default: /* a mode no vote has */
    ac_simt_vote(-1, 1);
    break;
  }
}

static void check_diverge(ac_context *ctx, int64_t which, unsigned grid, const char *want,
                          int64_t want_started) {
  _Atomic int64_t started;
  atomic_init(&started, 0);
  uint64_t frame[2] = {(uint64_t)which, W(&started)};
  char msg[512];
  CHECK_EQ_INT(run(ctx, k_diverge, grid, 64, 0, frame, 0, msg, sizeof msg), AC_ERR_INTERNAL);
  CHECK_STR(msg, want);
  CHECK_EQ_INT(atomic_load(&started), want_started);
}

static void check_all_divergence(ac_context *ctx) {
  check_diverge(ctx, 0, 1,
                "SIMT emulator: barrier divergence in block 0: thread 63 ended while 63 other "
                "threads wait at a barrier",
                1);
  check_diverge(ctx, 1, 1,
                "SIMT emulator: barrier divergence in block 0: thread 1 reached a barrier after "
                "thread 0 ended",
                1);
  check_diverge(ctx, 2, 3,
                "SIMT emulator: barrier divergence in block 1: thread 5 ended while 5 other "
                "threads wait at a barrier",
                2);
  check_diverge(
      ctx, 3, 1,
      "SIMT emulator: warp divergence in block 0, warp 0: lane 16 reached a vote while 16 "
      "other lanes wait at a shuffle",
      1);
  check_diverge(ctx, 4, 1,
                "SIMT emulator: warp divergence in block 0, warp 0: lane 31 ended while 31 other "
                "lanes wait at a shuffle",
                1);
  check_diverge(ctx, 5, 1,
                "SIMT emulator: warp divergence in block 0, warp 1: lane 1 reached a vote after "
                "lane 0 ended",
                1);
  check_diverge(ctx, 6, 2,
                "SIMT emulator: deadlock in block 0: 33 threads wait at a barrier and 31 at warp "
                "operations, and none can proceed",
                1);
  check_diverge(ctx, 7, 1, "SIMT emulator: invalid shuffle mode 9 in block 0, thread 0", 1);
  check_diverge(ctx, 8, 1, "SIMT emulator: invalid vote mode -1 in block 0, thread 0", 1);
}

UNIT_TEST(barrier_and_warp_divergence_and_deadlock_are_reported) {
  ac_context *ctx = ac_context_create();
  check_all_divergence(ctx);
  /* the emulator is usable again after a failed launch */
  check_reduce(ctx, 2, 64);
  ac_context_destroy(ctx);
}

/* ---- barriers really separate phases (1024 threads, 10 rounds) ----
 * Every round each thread reads its right neighbour's value and, after a
 * barrier, stores it as its own: after r rounds thread t holds t + r. */
static void k_rotate(uint64_t *frame, rt_gctl *ctl, int64_t n, const uint64_t *params) {
  (void)params;
  int64_t *out = P(frame[0]);
  int64_t *sh = ac_simt_shared();
  int32_t tid = ac_simt_tid(), nt = ac_simt_ntid();
  sh[tid] = tid;
  for (int r = 0; r < 10; r++) {
    ac_simt_barrier();
    int64_t v = sh[(tid + 1) % nt];
    ac_simt_barrier();
    sh[tid] = v;
  }
  out[gtid()] = sh[tid];
}

UNIT_TEST(barrier_rounds_with_1024_threads) {
  ac_context *ctx = ac_context_create();
  enum { G = 2, B = 1024 };
  int64_t *out = malloc(G * B * sizeof *out);
  uint64_t frame[1] = {W(out)};
  CHECK_EQ_INT(run(ctx, k_rotate, G, B, B * sizeof(int64_t), frame, 0, NULL, 0), AC_OK);
  int bad = 0;
  for (int64_t g = 0; g < G * B; g++)
    bad += out[g] != (g % B + 10) % B;
  CHECK_EQ_INT(bad, 0);
  free(out);
  ac_context_destroy(ctx);
}

/* ---- shared memory: 16-byte aligned, zero at every block's start ----
 * frame: bad counter. Each thread checks its slice, then scribbles on it. */
static void k_smem_zero(uint64_t *frame, rt_gctl *ctl, int64_t n, const uint64_t *params) {
  (void)params;
  int64_t *bad = P(frame[0]);
  unsigned char *sh = ac_simt_shared();
  int32_t tid = ac_simt_tid();
  *bad += (uintptr_t)sh % 16 != 0;
  for (int i = 0; i < 24; i++) {
    *bad += sh[tid * 24 + i] != 0;
    sh[tid * 24 + i] = 0xEE;
  }
}

UNIT_TEST(shared_memory_is_aligned_and_zeroed_per_block) {
  ac_context *ctx = ac_context_create();
  int64_t bad = 0;
  uint64_t frame[1] = {W(&bad)};
  CHECK_EQ_INT(run(ctx, k_smem_zero, 3, 64, 64 * 24, frame, 0, NULL, 0), AC_OK);
  CHECK_EQ_INT(bad, 0);
  ac_context_destroy(ctx);
}

/* ---- every thread has its own, large stack ----
 * A 64 KiB local array per thread filled with the thread's index survives
 * a barrier and a yield (other threads filled theirs meanwhile). */
static void k_stack(uint64_t *frame, rt_gctl *ctl, int64_t n, const uint64_t *params) {
  (void)params;
  _Atomic int64_t *bad = P(frame[0]);
  volatile int32_t buf[16384];
  int32_t tid = ac_simt_tid();
  for (int i = 0; i < 16384; i++)
    buf[i] = tid + i;
  ac_simt_barrier();
  ac_simt_yield();
  int64_t b = 0;
  for (int i = 0; i < 16384; i++)
    b += buf[i] != tid + i;
  atomic_fetch_add(bad, b);
}

UNIT_TEST(threads_have_separate_large_stacks) {
  ac_context *ctx = ac_context_create();
  _Atomic int64_t bad;
  atomic_init(&bad, 0);
  uint64_t frame[1] = {W(&bad)};
  CHECK_EQ_INT(run(ctx, k_stack, 2, 128, 0, frame, 0, NULL, 0), AC_OK);
  CHECK_EQ_INT(atomic_load(&bad), 0);
  ac_context_destroy(ctx);
}

/* Two kernels for the stack-reuse test. k_deep_abandon leaves deep
 * instrumented frames (under ASan: redzones around `a`) abandoned at a
 * barrier that diverges; k_plain_memset is code the sanitizer does not
 * instrument, like JIT-compiled kernels, handing a stack buffer to memset
 * (which ASan checks): stale redzones there would be false errors. */
static void k_deep_abandon(uint64_t *frame, rt_gctl *ctl, int64_t n, const uint64_t *params) {
  (void)params;
  volatile char a[8192];
  for (int i = 0; i < 8192; i += 64)
    a[i] = (char)i;
  if (ac_simt_tid() == ac_simt_ntid() - 1)
    return;
  ac_simt_barrier();
  frame[0] += (uint64_t)a[64];
}

__attribute__((no_sanitize_address)) static void k_plain_memset(uint64_t *frame, rt_gctl *ctl,
                                                                int64_t n,
                                                                const uint64_t *params) {
  (void)params;
  char buf[16384];
  void *(*volatile set)(void *, int, size_t) = memset;
  set(buf, ac_simt_tid() & 0x7f, sizeof buf);
  ac_simt_barrier();
  if (buf[12345] != (ac_simt_tid() & 0x7f))
    (*(_Atomic int64_t *)P(frame[0]))++;
}

/* The stacks a launch used serve the next one (the device keeps them):
 * the same set comes back while it has enough stacks, also after a launch
 * that failed with threads abandoned mid-kernel (under ASan this checks the
 * stale redzones of their frames are cleaned). */
UNIT_TEST(stacks_are_reused_between_launches) {
  ac_context *ctx = ac_context_create();
  rt_simt_stacks *s = NULL;
  rt_gctl ctl;
  memset(&ctl, 0, sizeof ctl);
  _Atomic int64_t bad, started;
  atomic_init(&bad, 0);
  atomic_init(&started, 0);
  uint64_t fstack[1] = {W(&bad)}, fdiv[2] = {6, W(&started)};
  CHECK_EQ_INT(rt_simt_run_cached(ctx, k_stack, 1, 64, 0, fstack, &ctl, 0, &s, NULL), AC_OK);
  rt_simt_stacks *first = s;
  CHECK(first != NULL);
  CHECK_EQ_INT(rt_simt_run_cached(ctx, k_diverge, 1, 64, 0, fdiv, &ctl, 0, &s, NULL),
               AC_ERR_INTERNAL);
  CHECK(s == first);
  CHECK_EQ_INT(rt_simt_run_cached(ctx, k_stack, 2, 32, 0, fstack, &ctl, 0, &s, NULL), AC_OK);
  CHECK(s == first);
  CHECK_EQ_INT(rt_simt_run_cached(ctx, k_stack, 1, 128, 0, fstack, &ctl, 0, &s, NULL), AC_OK);
  CHECK(s != NULL);
  CHECK_EQ_INT(rt_simt_run_cached(ctx, k_stack, 1, 96, 0, fstack, &ctl, 0, &s, NULL), AC_OK);
  uint64_t fdeep[1] = {0};
  CHECK_EQ_INT(rt_simt_run_cached(ctx, k_deep_abandon, 1, 96, 0, fdeep, &ctl, 0, &s, NULL),
               AC_ERR_INTERNAL);
  CHECK_EQ_INT(rt_simt_run_cached(ctx, k_plain_memset, 1, 96, 0, fstack, &ctl, 0, &s, NULL), AC_OK);
  CHECK_EQ_INT(atomic_load(&bad), 0);
  rt_simt_stacks_free(ctx, s);
  rt_simt_stacks_free(ctx, NULL);
  ac_context_destroy(ctx);
}

/* ---- bad launches ---- */
static void k_count(uint64_t *frame, rt_gctl *ctl, int64_t n, const uint64_t *params) {
  (void)params;
  (*(int64_t *)P(frame[0]))++;
}

UNIT_TEST(bad_launch_shapes_are_rejected) {
  ac_context *ctx = ac_context_create();
  int64_t count = 0;
  uint64_t frame[1] = {W(&count)};
  char msg[512];
  static const unsigned bad[] = {0, 16, 48, 1056, 2048};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    CHECK_EQ_INT(run(ctx, k_count, 1, bad[i], 0, frame, 0, msg, sizeof msg), AC_ERR_INTERNAL);
  CHECK_STR(msg, "SIMT emulator: a block of 2048 threads (must be a positive multiple of 32 up to "
                 "1024)");
  CHECK_EQ_INT(run(ctx, NULL, 1, 32, 0, frame, 0, msg, sizeof msg), AC_ERR_INTERNAL);
  CHECK_EQ_INT(count, 0);
  /* an empty grid runs nothing and succeeds */
  CHECK_EQ_INT(run(ctx, k_count, 0, 32, 0, frame, 0, NULL, 0), AC_OK);
  CHECK_EQ_INT(count, 0);
  CHECK_EQ_INT(run(ctx, k_count, 2, 32, 0, frame, 0, NULL, 0), AC_OK);
  CHECK_EQ_INT(count, 64);
  ac_context_destroy(ctx);
}

/* A kernel that launches: the emulator refuses to nest. frame: ctx, status. */
static void k_nested(uint64_t *frame, rt_gctl *ctl, int64_t n, const uint64_t *params) {
  (void)params;
  if (ac_simt_tid() != 0)
    return;
  int64_t count = 0;
  uint64_t inner[1] = {W(&count)};
  ac_error *err = NULL;
  frame[1] = (uint64_t)rt_simt_run(P(frame[0]), k_count, 1, 32, 0, inner, ctl, 0, &err);
  frame[2] = (uint64_t)count;
  ac_error_destroy(err);
}

UNIT_TEST(nested_launch_is_refused) {
  ac_context *ctx = ac_context_create();
  uint64_t frame[3] = {W(ctx), 99, 99};
  CHECK_EQ_INT(run(ctx, k_nested, 1, 32, 0, frame, 0, NULL, 0), AC_OK);
  CHECK_EQ_INT(frame[1], AC_ERR_INTERNAL);
  CHECK_EQ_INT(frame[2], 0);
  ac_context_destroy(ctx);
}

UNIT_TEST(services_outside_a_launch_are_harmless) {
  CHECK_EQ_INT(ac_simt_tid(), 0);
  CHECK_EQ_INT(ac_simt_ntid(), 0);
  CHECK_EQ_INT(ac_simt_ctaid(), 0);
  CHECK_EQ_INT(ac_simt_nctaid(), 0);
  CHECK(ac_simt_shared() == NULL);
  ac_simt_barrier();
  ac_simt_yield();
  CHECK_EQ_INT(ac_simt_shfl(77, 2, 1), 77);
  CHECK_EQ_INT(ac_simt_vote(2, 1), 0);
  ac_simt_prof(0, 0, 0); /* outside a profiled launch: nothing */
}

UNIT_TEST(symbol_table_lists_every_service) {
  static const char *const names[] = {"ac_simt_tid",    "ac_simt_ntid",    "ac_simt_ctaid",
                                      "ac_simt_nctaid", "ac_simt_barrier", "ac_simt_yield",
                                      "ac_simt_shared", "ac_simt_shfl",    "ac_simt_vote",
                                      "ac_simt_prof"};
  size_t n = 0;
  while (rt_simt_symbols[n].name)
    n++;
  CHECK_EQ_INT(n, sizeof names / sizeof names[0]);
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    int found = 0;
    for (size_t j = 0; j < n; j++)
      found += strcmp(rt_simt_symbols[j].name, names[i]) == 0 && rt_simt_symbols[j].addr;
    CHECK_EQ_INT(found, 1);
  }
  CHECK(rt_simt_symbols[0].addr == (void *)(uintptr_t)ac_simt_tid);
}

/* ---- several host threads launch at once (the launch pointer is per thread) ---- */
static void *host_thread(void *arg) {
  ac_context *ctx = arg;
  for (int i = 0; i < 10; i++) {
    check_reduce(ctx, 2, 96);
    check_scan(ctx);
  }
  return NULL;
}

UNIT_TEST(launches_on_several_host_threads) {
  ac_context *ctx = ac_context_create();
  pthread_t th[2];
  for (int i = 0; i < 2; i++)
    CHECK_EQ_INT(pthread_create(&th[i], NULL, host_thread, ctx), 0);
  for (int i = 0; i < 2; i++)
    pthread_join(th[i], NULL);
  ac_context_destroy(ctx);
}

/* ---- the ucontext fallback ---- */
UNIT_TEST(ucontext_fallback_runs_the_same_kernels) {
  ac_context *ctx = ac_context_create();
  setenv("ARRAYC_SIMT_SWITCH", "ucontext", 1);
  check_reduce(ctx, 3, 256);
  check_scan(ctx);
  check_all_divergence(ctx);
  _Atomic int64_t bad;
  atomic_init(&bad, 0);
  uint64_t frame[1] = {W(&bad)};
  CHECK_EQ_INT(run(ctx, k_stack, 1, 64, 0, frame, 0, NULL, 0), AC_OK);
  CHECK_EQ_INT(atomic_load(&bad), 0);
  unsetenv("ARRAYC_SIMT_SWITCH");
  ac_context_destroy(ctx);
}

/* ---- the emulated device ---- */
static void k_dev(uint64_t *frame, rt_gctl *ctl, int64_t n, const uint64_t *params) {
  (void)params;
  /* frame: x (device), out (device); out[g] = x[g] * 2, read back through
   * shared memory, which is the kernel's 64 static bytes plus 64 dynamic
   * ones (16 words) */
  const int64_t *x = P(frame[0]);
  int64_t *out = P(frame[1]);
  int64_t *sh = ac_simt_shared();
  int32_t tid = ac_simt_tid();
  if (tid < 16)
    sh[tid] = tid;
  ac_simt_barrier();
  for (int64_t g = gtid(); g < n; g += (int64_t)ac_simt_nctaid() * ac_simt_ntid())
    out[g] = x[g] * 2 + sh[15 - tid % 16] - (15 - tid % 16);
}

UNIT_TEST(device_memory_copies_and_launch) {
  ac_context *ctx = ac_context_create();
  rt_gpu *g = NULL;
  ac_error *err = NULL;
  CHECK_EQ_INT(rt_emu_create(ctx, &g, &err), AC_OK);
  if (!g)
    return;
  const rt_gpu_ops *o = g->ops;
  CHECK_STR(o->name, "simt-emu");
  CHECK(g->ctx == ctx);
  CHECK_EQ_INT(atomic_load(&g->refs), 1);

  enum { N = 1000 };
  int64_t x[N], back[N];
  for (int i = 0; i < N; i++)
    x[i] = i * 3 - 7;
  rt_dptr dx = 0, dy = 0, dz = 0, dframe = 0, dctl = 0;
  CHECK_EQ_INT(o->alloc(g, N * sizeof(int64_t), &dx, &err), AC_OK);
  CHECK_EQ_INT(o->alloc(g, N * sizeof(int64_t), &dy, &err), AC_OK);
  CHECK_EQ_INT(o->alloc(g, 0, &dz, &err), AC_OK);
  CHECK(dx && dy && dz && dx % 256 == 0 && dy % 256 == 0 && dz % 256 == 0);
  /* fresh device memory is the fill pattern, not zero */
  CHECK_EQ_INT(((unsigned char *)P(dy))[N * 8 - 1], 0xA5);
  CHECK_EQ_INT(o->htod(g, dx, x, sizeof x, &err), AC_OK);
  memset(back, 0, sizeof back);
  CHECK_EQ_INT(o->dtoh(g, back, dx, sizeof back, &err), AC_OK);
  CHECK(memcmp(back, x, sizeof x) == 0);
  CHECK_EQ_INT(o->dtod(g, dy, dx, sizeof x, &err), AC_OK);
  CHECK_EQ_INT(o->dtoh(g, back, dy, sizeof back, &err), AC_OK);
  CHECK(memcmp(back, x, sizeof x) == 0);
  CHECK_EQ_INT(o->memset0(g, dy, 16 * sizeof(int64_t), &err), AC_OK);
  CHECK_EQ_INT(o->dtoh(g, back, dy, sizeof back, &err), AC_OK);
  CHECK(back[0] == 0 && back[15] == 0 && back[16] == x[16]);
  CHECK_EQ_INT(o->htod(g, dz, NULL, 0, &err), AC_OK);

  /* a launch with frame and control block in device memory */
  uint64_t frame[2] = {dx, dy};
  CHECK_EQ_INT(o->alloc(g, sizeof frame, &dframe, &err), AC_OK);
  CHECK_EQ_INT(o->htod(g, dframe, frame, sizeof frame, &err), AC_OK);
  CHECK_EQ_INT(o->alloc(g, sizeof(rt_gctl), &dctl, &err), AC_OK);
  CHECK_EQ_INT(o->memset0(g, dctl, sizeof(rt_gctl), &err), AC_OK);
  rt_gkernel *k = NULL, *kfixed = NULL;
  CHECK_EQ_INT(rt_emu_kernel(g, k_dev, 64, 0, &k, &err), AC_OK);
  CHECK_EQ_INT(rt_emu_kernel(g, k_dev, 64, 128, &kfixed, &err), AC_OK);
  rt_glimits lim;
  o->limits(g, k, &lim);
  CHECK(lim.block == 64 && lim.max_block == 1024 && lim.max_grid == 4);
  o->limits(g, kfixed, &lim);
  CHECK(lim.block == 128 && lim.max_block == 128 && lim.max_grid == 4);
  CHECK_EQ_INT(o->parallelism(g), 4 * 64);
  CHECK_EQ_INT(o->launch(g, k, 4, 64, 64, dframe, dctl, N, NULL, &err), AC_OK);
  CHECK_EQ_INT(o->sync(g, &err), AC_OK);
  CHECK_EQ_INT(o->dtoh(g, back, dy, sizeof back, &err), AC_OK);
  int bad = 0;
  for (int i = 0; i < N; i++)
    bad += back[i] != x[i] * 2;
  CHECK_EQ_INT(bad, 0);
  CHECK_EQ_INT(o->launch(g, kfixed, 2, 128, 64, dframe, dctl, N, NULL, &err), AC_OK);
  /* a fixed-block kernel launched with another block size */
  CHECK_EQ_INT(o->launch(g, kfixed, 2, 64, 0, dframe, dctl, N, NULL, &err), AC_ERR_INTERNAL);
  CHECK_STR(ac_error_message(err),
            "SIMT emulator: a kernel compiled for blocks of 128 threads launched with 64");
  ac_error_destroy(err);
  err = NULL;
  /* a divergence inside a device launch comes back as the launch's error */
  rt_gkernel *kdiv = NULL;
  CHECK_EQ_INT(rt_emu_kernel(g, k_diverge, 0, 0, &kdiv, &err), AC_OK);
  _Atomic int64_t started;
  atomic_init(&started, 0);
  uint64_t dframe2[2] = {0, W(&started)};
  CHECK_EQ_INT(o->launch(g, kdiv, 1, 64, 0, W(dframe2), dctl, 0, NULL, &err), AC_ERR_INTERNAL);
  CHECK(err && strstr(ac_error_message(err), "barrier divergence"));
  ac_error_destroy(err);
  err = NULL;
  /* bad kernels */
  rt_gkernel *kbad = NULL;
  CHECK_EQ_INT(rt_emu_kernel(g, k_dev, 0, 48, &kbad, &err), AC_ERR_INTERNAL);
  CHECK(kbad == NULL);
  ac_error_destroy(err);
  err = NULL;
  CHECK_EQ_INT(rt_emu_kernel(g, NULL, 0, 0, &kbad, &err), AC_ERR_INTERNAL);
  ac_error_destroy(err);
  err = NULL;

  rt_emu_kernel_free(g, k);
  rt_emu_kernel_free(g, kfixed);
  rt_emu_kernel_free(g, kdiv);
  rt_emu_kernel_free(g, NULL);
  o->free(g, dx);
  o->free(g, dy);
  o->free(g, dz);
  o->free(g, dframe);
  o->free(g, dctl);
  o->free(g, 0);
  rt_gpu_retain(g);
  CHECK_EQ_INT(atomic_load(&g->refs), 2);
  rt_gpu_release(g);
  rt_gpu_release(g);
  ac_context_destroy(ctx);
}

/* Device allocations go through the context allocator: a failing one is
 * AC_ERR_NOMEM, and every byte comes back when freed. */
typedef struct alloc_stats {
  int64_t live;
  int fail;
} alloc_stats;

static void *counting_realloc(void *ud, void *p, size_t n) {
  alloc_stats *s = ud;
  if (n == 0) {
    if (p)
      s->live--;
    free(p);
    return NULL;
  }
  if (!p && s->fail)
    return NULL;
  void *q = realloc(p, n);
  if (q && !p)
    s->live++;
  return q;
}

UNIT_TEST(device_memory_uses_the_context_allocator) {
  alloc_stats s = {0, 0};
  ac_context *ctx = ac_context_create_with_allocator(counting_realloc, &s);
  rt_gpu *g = NULL;
  CHECK_EQ_INT(rt_emu_create(ctx, &g, NULL), AC_OK);
  int64_t before = s.live;
  rt_dptr d = 0;
  CHECK_EQ_INT(g->ops->alloc(g, 4096, &d, NULL), AC_OK);
  CHECK_EQ_INT(s.live, before + 1);
  g->ops->free(g, d);
  CHECK_EQ_INT(s.live, before);
  s.fail = 1;
  ac_error *err = NULL;
  CHECK_EQ_INT(g->ops->alloc(g, 4096, &d, &err), AC_ERR_NOMEM);
  CHECK(d == 0);
  /* the error itself needs memory, so it may be missing */
  ac_error_destroy(err);
  s.fail = 0;
  CHECK_EQ_INT(g->ops->alloc(g, SIZE_MAX - 8, &d, &err), AC_ERR_NOMEM);
  ac_error_destroy(err);
  rt_gpu_release(g);
  ac_context_destroy(ctx);
  CHECK_EQ_INT(s.live, 0);
}

/* ---- environment overrides of the device's limits ---- */
static void check_env(const char *block, const char *grid, unsigned want_block,
                      unsigned want_grid) {
  ac_context *ctx = ac_context_create();
  setenv("ARRAYC_SIMT_BLOCK", block, 1);
  setenv("ARRAYC_SIMT_GRID", grid, 1);
  rt_gpu *g = NULL;
  CHECK_EQ_INT(rt_emu_create(ctx, &g, NULL), AC_OK);
  unsetenv("ARRAYC_SIMT_BLOCK");
  unsetenv("ARRAYC_SIMT_GRID");
  rt_glimits lim;
  g->ops->limits(g, NULL, &lim);
  CHECK_EQ_INT(lim.block, want_block);
  CHECK_EQ_INT(lim.max_grid, want_grid);
  CHECK_EQ_INT(lim.max_block, 1024);
  CHECK_EQ_INT(g->ops->parallelism(g), (int64_t)want_block * want_grid);
  rt_gpu_release(g);
  ac_context_destroy(ctx);
}

UNIT_TEST(environment_overrides_block_and_grid) {
  check_env("128", "7", 128, 7);
  check_env("1024", "1", 1024, 1);
  check_env("32", "65535", 32, 65535);
  /* not a positive multiple of 32 up to 1024 / not in 1..65535: defaults */
  check_env("100", "0", 64, 4);
  check_env("2048", "-3", 64, 4);
  check_env("0", "65536", 64, 4);
  check_env("abc", "12x", 64, 4);
  check_env("", "", 64, 4);
}

UNIT_MAIN(block_reduction_through_shared_memory_and_barriers, thread_and_block_indices_in_order,
          warp_reduction_with_shfl_down_and_xor, inclusive_warp_scan_with_shfl_up,
          shuffle_modes_and_out_of_range_lanes, ballot_any_all,
          atomics_across_blocks_and_last_block_ticket,
          spin_wait_with_yield_on_lower_block_and_same_block, livelock_on_a_later_block_is_detected,
          barrier_and_warp_divergence_and_deadlock_are_reported, barrier_rounds_with_1024_threads,
          shared_memory_is_aligned_and_zeroed_per_block, threads_have_separate_large_stacks,
          stacks_are_reused_between_launches, bad_launch_shapes_are_rejected,
          nested_launch_is_refused, services_outside_a_launch_are_harmless,
          symbol_table_lists_every_service, launches_on_several_host_threads,
          ucontext_fallback_runs_the_same_kernels, device_memory_copies_and_launch,
          device_memory_uses_the_context_allocator, environment_overrides_block_and_grid)
