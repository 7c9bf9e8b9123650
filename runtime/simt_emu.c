/* runtime/simt_emu.c: the SIMT emulator, which runs GPU kernels compiled for
 * the host so that every GPU skeleton is tested on machines without a GPU.
 *
 * The model (simt_emu.h is the contract): a launch runs its blocks one after
 * another, in ascending block index, on the calling host thread; inside a
 * block every GPU thread is a COROUTINE with its own stack (user-level
 * threads, "fibers"). Unlike MCUDA-style translation, which splits a kernel
 * at its barriers into loops over the threads, switching stacks needs no
 * compiler transformation and allows barriers anywhere: in loops, in
 * called functions, in divergent code (which it then diagnoses). The
 * price is a context switch per wait. A thread runs until it reaches a
 * barrier, a warp operation (shuffle, vote), a yield or its end; then the
 * next runnable thread of the block runs. Runnable threads wait in a FIFO
 * queue, so scheduling is round robin and every run is deterministic.
 *
 *   barrier    arrivals are counted; the last of the block's threads to
 *              arrive releases the others (queued in thread order) and runs
 *              on. A thread that ends while others wait at a barrier, or a
 *              thread that reaches a barrier after some thread ended, is
 *              barrier divergence (on a GPU that hangs or is undefined).
 *   warp ops   each lane deposits (value, mode, arg) and waits; the 32nd
 *              lane of the warp computes every lane's result exactly as
 *              PTX's shfl.sync / vote.sync do for a full warp, releases the
 *              other 31 and runs on. A lane reaching a shuffle while lanes
 *              of its warp wait at a vote (or the reverse), or a warp op in
 *              a warp where a lane has ended, is warp divergence.
 *   yield      the thread goes to the back of the queue (spin loops).
 *   deadlock   the queue is empty but some threads have not ended: they all
 *              wait at barriers and warp operations that cannot complete
 *              (e.g. a lane at a barrier while its warp waits at a shuffle).
 *   livelock   a spin loop cannot end if the thread it waits for cannot run
 *              (a later block, which starts only after this one ends, or a
 *              thread blocked at a barrier). That is not visible from the
 *              waits, so we count: RT_SIMT_SPIN_LIMIT yields in a row
 *              without any thread of the block reaching a barrier, a warp
 *              operation or its end is reported as a livelock instead of
 *              hanging. A real spin loop waits for a thread that makes
 *              progress, which takes far fewer yields.
 * Every error stops the launch (later blocks do not run), frees everything
 * and returns AC_ERR_INTERNAL "SIMT emulator: ...": kernels are compiler
 * products, so these are compiler bugs, never user errors.
 *
 * Context switching. On x86-64 ELF a 20-instruction hand-written switch
 * (rt_simt_swap below) saves the callee-saved registers, MXCSR and the x87
 * control word on the old stack and pops them from the new one: about as
 * cheap as a function call. ucontext's swapcontext also saves the signal
 * mask with a sigprocmask system call on EVERY switch, which makes it an
 * order of magnitude slower (a 256-thread block with 10 barriers is 2,560
 * switches). swapcontext remains the portable fallback: on other
 * architectures, when the CPU runs a CET shadow stack (our switch does not
 * maintain one; glibc's swapcontext does), and on request with the
 * environment variable ARRAYC_SIMT_SWITCH=ucontext (so the tests cover it
 * on x86-64 too). Threads switch directly to the next runnable thread, not
 * through a scheduler context: one switch per wait instead of two. The
 * launching host thread's own stack is the "host" context, to which a
 * block returns when it has ended, failed or deadlocked.
 *
 * Stacks. Kernels compiled from element code use real stack (allocas,
 * nested sequential loops, spilled registers), so each thread gets
 * RT_SIMT_STACK bytes above a PROT_NONE guard page (an overflow faults
 * instead of silently corrupting the neighbouring thread's stack). One mmap
 * holds all the block's stacks with MAP_NORESERVE: only touched pages cost
 * memory, so 1024 threads x 256 KiB is 256 MiB of address space but
 * typically 8 KiB of memory per thread. Stacks are mmapped rather than
 * taken from the context allocator because they need page alignment and
 * guard pages. The blocks of a launch reuse them one after another, and
 * the emulated device keeps them between launches (rt_simt_run_cached):
 * mapping, protecting and first touching the pages costs far more than a
 * launch (page faults dominate; on the virtual machines the tests run on a
 * 256-thread launch took milliseconds that way).
 *
 * AddressSanitizer. ASan tracks one stack per OS thread; switching stacks
 * behind its back produces false stack-buffer-overflow reports. Every
 * switch is therefore announced with __sanitizer_start_switch_fiber and
 * completed with __sanitizer_finish_switch_fiber (a thread that ends
 * passes NULL to drop its fake stack). And a thread that ends (or is
 * abandoned when a launch fails) never returns from the frames live at its
 * last switch, so their redzones stay poisoned; the next user of the stack
 * (uninstrumented JIT code passing a stack buffer to an intercepted
 * function, say) would get false reports. Each switch records how deep
 * those frames reach, and that part of the stack is unpoisoned before the
 * stack is used again and when the launch ends.
 *
 * Profiling (simt_prof.h). A launch of a profiled kernel carries a
 * profiling state: ac_simt_prof (which the instrumented kernel calls before
 * its memory accesses and at its basic blocks) records into it, and the
 * synchronisation points above, where a warp's lanes are known to meet
 * (a completed warp operation, a completed barrier, the block's end), are
 * where the records are grouped into warp instructions. A launch without
 * profiling pays one NULL test per barrier and warp operation.
 *
 * The one mutable global: `rt_simt_cur`, a thread-local pointer to the
 * launch running on this host thread. The services (ac_simt_*) are called
 * by generated code with no context argument, so they find their launch
 * there; being thread-local, several host threads may run launches at
 * once. Outside a launch it is NULL and the services do nothing harmful
 * (indices 0, barriers and yields no-ops, a shuffle returns its own value,
 * votes 0, no shared memory).
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, MAP_NORESERVE, MAP_STACK, ucontext */
#include "runtime/simt_emu.h"

#include "runtime/simt_prof.h"

#include "ir.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define RT_SIMT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RT_SIMT_ASAN 1
#endif
#endif
#ifndef RT_SIMT_ASAN
#define RT_SIMT_ASAN 0
#endif
#if RT_SIMT_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

#if defined(__x86_64__) && defined(__ELF__)
#define RT_SIMT_X64 1
#else
#define RT_SIMT_X64 0
#endif

#define RT_SIMT_WARP 32u
#define RT_SIMT_MAX_BLOCK 1024u
#define RT_SIMT_STACK (256u * 1024u) /* bytes of stack per GPU thread */
/* Yields in a row without a barrier, warp operation or thread end that mean
 * a livelock (see the file comment): a few tenths of a second of spinning. */
#define RT_SIMT_SPIN_LIMIT (1u << 24)
/* ASan: bytes below rt_simt_switch's frame address that its own frame (and
 * rt_simt_swap's pushes) may occupy. */
#define RT_SIMT_ASAN_SLACK 4096
/* Shared memory is handed out 16-byte aligned (simt_emu.h). */
#define RT_SIMT_SMEM_ALIGN 16u

/* What a thread is doing. The warp-op kinds double as the kind of the warp's
 * pending operation. */
enum { RT_SIMT_RUN, RT_SIMT_BAR, RT_SIMT_SHFL, RT_SIMT_VOTE, RT_SIMT_DONE };

/* A saved execution context: a stack pointer (x86-64 switch) or a ucontext,
 * and the stack's bounds. */
typedef struct rt_simt_ctx {
  void *sp;
  ucontext_t *uc;
  char *lo;
  size_t size;
#if RT_SIMT_ASAN
  void *fake;  /* ASan's fake stack while switched out */
  char *dirty; /* below every frame that was live at the last switch out */
#endif
} rt_simt_ctx;

typedef struct rt_simt_thr {
  rt_simt_ctx c;
  uint64_t in, out; /* a warp op's deposited value (or predicate) and result */
  int32_t mode, arg;
  uint8_t state;
} rt_simt_thr;

typedef struct rt_simt_warp {
  uint8_t arrived; /* lanes waiting at the pending warp op */
  uint8_t kind;    /* RT_SIMT_SHFL or RT_SIMT_VOTE while arrived > 0 */
  uint8_t ended;   /* lanes that have ended */
  uint8_t first;   /* the first lane that ended (messages) */
} rt_simt_warp;

typedef struct rt_simt_launch {
  ac_context *ctx;
  rt_gkernel_fn fn;
  uint64_t *frame;
  rt_gctl *ctl;
  int64_t n;
  uint64_t params[RT_GPU_PARAMS]; /* the parameter block, by value */
  unsigned grid, block, ctaid;
  rt_simt_thr *thr;   /* block */
  rt_simt_warp *warp; /* block / 32 */
  uint16_t *queue;    /* runnable threads, a ring of `block` entries */
  unsigned qhead, qlen;
  unsigned run;  /* the running thread */
  unsigned nbar; /* threads waiting at the barrier */
  unsigned ndone;
  unsigned first_done; /* the first thread that ended (messages) */
  uint32_t spins;      /* yields since a thread last reached a barrier, warp op or end */
  unsigned char *smem_raw, *smem;
  size_t smem_bytes;
  rt_simt_stacks *stk;
  bool uc_mode;
  ucontext_t *ucs; /* uc_mode: block + 1 contexts, the last the host's */
  rt_simt_ctx host;
  uint32_t mxcsr; /* the host's floating-point control state, given to each thread */
  uint16_t fpcw;
  bool failed;
  char msg[256];
  rt_simt_plaunch *prof; /* profiling (simt_prof.h), NULL when off */
} rt_simt_launch;

/* See the file comment: the only mutable global. */
static _Thread_local rt_simt_launch *rt_simt_cur;

/* ---- context switching ---------------------------------------------------------
 * rt_simt_swap(save, to): pushes rbp, rbx, r12-r15 and an 8-byte slot with
 * MXCSR (bytes 0-3) and the x87 control word (bytes 4-5), stores rsp into
 * *save, loads rsp = to and pops the same layout. A new thread's stack is
 * laid out by rt_simt_prepare so that the final `ret` lands in
 * rt_simt_start with rsp 16-byte aligned, which calls the entry function
 * held in r13 (it never returns; ud2 guards the impossible). */
#if RT_SIMT_X64
__asm__(".text\n"
        ".p2align 4\n"
        ".globl rt_simt_swap\n"
        ".hidden rt_simt_swap\n"
        ".type rt_simt_swap,@function\n"
        "rt_simt_swap:\n"
        "  pushq %rbp\n"
        "  pushq %rbx\n"
        "  pushq %r12\n"
        "  pushq %r13\n"
        "  pushq %r14\n"
        "  pushq %r15\n"
        "  subq $8, %rsp\n"
        "  stmxcsr (%rsp)\n"
        "  fnstcw 4(%rsp)\n"
        "  movq %rsp, (%rdi)\n"
        "  movq %rsi, %rsp\n"
        "  ldmxcsr (%rsp)\n"
        "  fldcw 4(%rsp)\n"
        "  addq $8, %rsp\n"
        "  popq %r15\n"
        "  popq %r14\n"
        "  popq %r13\n"
        "  popq %r12\n"
        "  popq %rbx\n"
        "  popq %rbp\n"
        "  ret\n"
        ".size rt_simt_swap, .-rt_simt_swap\n"
        ".p2align 4\n"
        ".globl rt_simt_start\n"
        ".hidden rt_simt_start\n"
        ".type rt_simt_start,@function\n"
        "rt_simt_start:\n"
        "  callq *%r13\n"
        "  ud2\n"
        ".size rt_simt_start, .-rt_simt_start\n");
void rt_simt_swap(void **save, void *to);
void rt_simt_start(void);

/* A CET shadow stack (Linux 6.6+ with a glibc that enables it) would reject
 * the `ret` into another coroutine; rdsspq reads the shadow stack pointer
 * and is a no-op (leaving 0) when none is active or the CPU lacks CET. */
static bool rt_simt_shadow_stack(void) {
  uint64_t ssp = 0;
  __asm__ volatile("rdsspq %0" : "+r"(ssp));
  return ssp != 0;
}
#endif

/* ASan: the running context has just been switched to; `self` is its saved
 * state. Records the host stack's bounds the first time a thread learns
 * them (the first switch of a launch always comes from the host). */
static void rt_simt_arrived(rt_simt_launch *L, rt_simt_ctx *self) {
#if RT_SIMT_ASAN
  const void *lo = NULL;
  size_t size = 0;
  __sanitizer_finish_switch_fiber(self ? self->fake : NULL, &lo, &size);
  if (!L->host.size) {
    L->host.lo = (char *)(uintptr_t)lo;
    L->host.size = size;
  }
#else
  (void)L;
  (void)self;
#endif
}

/* Saves the running context into `from` and resumes `to`; returns when
 * someone switches back to `from`. `dying`: `from` will never be resumed. */
static void rt_simt_switch(rt_simt_launch *L, rt_simt_ctx *from, rt_simt_ctx *to, bool dying) {
#if RT_SIMT_ASAN
  from->dirty = (char *)__builtin_frame_address(0) - RT_SIMT_ASAN_SLACK;
  __sanitizer_start_switch_fiber(dying ? NULL : &from->fake, to->lo, to->size);
#else
  (void)dying;
#endif
#if RT_SIMT_X64
  if (!L->uc_mode)
    rt_simt_swap(&from->sp, to->sp);
  else
#endif
    swapcontext(from->uc, to->uc);
  rt_simt_arrived(L, from);
}

/* ---- the run queue ---- */

static void rt_simt_push(rt_simt_launch *L, unsigned t) {
  unsigned i = L->qhead + L->qlen++;
  L->queue[i >= L->block ? i - L->block : i] = (uint16_t)t;
}

static bool rt_simt_pop(rt_simt_launch *L, unsigned *t) {
  if (!L->qlen)
    return false;
  *t = L->queue[L->qhead];
  L->qhead = L->qhead + 1 == L->block ? 0 : L->qhead + 1;
  L->qlen--;
  return true;
}

/* The running thread stops (it waits, or has ended when `dying`): runs the
 * next runnable thread, or returns to the host when there is none (the
 * block has ended, or deadlocked). */
static void rt_simt_next(rt_simt_launch *L, bool dying) {
  rt_simt_thr *self = &L->thr[L->run];
  unsigned nx;
  rt_simt_ctx *to = &L->host;
  if (rt_simt_pop(L, &nx)) {
    L->run = nx;
    to = &L->thr[nx].c;
  }
  rt_simt_switch(L, &self->c, to, dying);
}

/* Records the launch's error and abandons the running thread: control goes
 * back to the host, which stops the launch. Never returns. */
static void rt_simt_fail(rt_simt_launch *L, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(L->msg, sizeof L->msg, fmt, ap);
  va_end(ap);
  L->failed = true;
  rt_simt_switch(L, &L->thr[L->run].c, &L->host, true);
}

static const char *rt_simt_kind_name(uint8_t kind) {
  return kind == RT_SIMT_SHFL ? "shuffle" : "vote";
}

/* Profiling: every warp of the block is at a common point (a completed
 * barrier, the block's end): their records are grouped and counted. */
static void rt_simt_prof_sync(rt_simt_launch *L) {
  if (!L->prof)
    return;
  for (unsigned w = 0; w < L->block / RT_SIMT_WARP; w++)
    rt_simt_pl_flush_warp(L->prof, w, true, true);
}

/* ---- a thread's life ---- */

/* The running thread's fn has returned. */
static void rt_simt_end(rt_simt_launch *L) {
  unsigned me = L->run;
  rt_simt_warp *w = &L->warp[me / RT_SIMT_WARP];
  L->thr[me].state = RT_SIMT_DONE;
  if (!L->ndone++)
    L->first_done = me;
  if (!w->ended++)
    w->first = (uint8_t)(me % RT_SIMT_WARP);
  L->spins = 0;
  if (L->nbar)
    rt_simt_fail(L,
                 "barrier divergence in block %u: thread %u ended while %u other threads wait "
                 "at a barrier",
                 L->ctaid, me, L->nbar);
  if (w->arrived)
    rt_simt_fail(L,
                 "warp divergence in block %u, warp %u: lane %u ended while %u other lanes wait "
                 "at a %s",
                 L->ctaid, me / RT_SIMT_WARP, me % RT_SIMT_WARP, (unsigned)w->arrived,
                 rt_simt_kind_name(w->kind));
  rt_simt_next(L, true);
}

/* Every thread starts here, on its own stack (x86-64: via rt_simt_start). */
static void rt_simt_entry(void) {
  rt_simt_launch *L = rt_simt_cur;
  rt_simt_arrived(L, NULL);
  L->fn(L->frame, L->ctl, L->n, L->params);
  rt_simt_end(L);
}

/* ASan: a thread that ended (or was abandoned) left the redzones of the
 * frames it never returned from poisoned; they would be false errors for
 * the next thread on this stack. Frames that returned cleaned up after
 * themselves, so only [dirty, top) needs unpoisoning: a few KiB. */
static void rt_simt_clean(rt_simt_thr *t) {
#if RT_SIMT_ASAN
  if (!t->c.dirty)
    return;
  char *from = t->c.dirty < t->c.lo ? t->c.lo : t->c.dirty;
  ASAN_UNPOISON_MEMORY_REGION(from, (size_t)(t->c.lo + t->c.size - from));
  t->c.dirty = NULL;
#else
  (void)t;
#endif
}

/* Makes thread i ready to start from the beginning. */
static void rt_simt_prepare(rt_simt_launch *L, unsigned i) {
  rt_simt_thr *t = &L->thr[i];
  t->state = RT_SIMT_RUN;
  rt_simt_clean(t);
#if RT_SIMT_X64
  if (!L->uc_mode) {
    /* the frame rt_simt_swap pops (see above), the return address at an
     * address that is 8 mod 16 so that rt_simt_start runs 16-aligned */
    uint64_t *top = (uint64_t *)(void *)(t->c.lo + t->c.size);
    top[-1] = top[-2] = 0;
    top[-3] = (uint64_t)(uintptr_t)rt_simt_start;
    top[-4] = top[-5] = top[-6] = 0;              /* rbp, rbx, r12 */
    top[-7] = (uint64_t)(uintptr_t)rt_simt_entry; /* r13 */
    top[-8] = top[-9] = 0;                        /* r14, r15 */
    top[-10] = (uint64_t)L->mxcsr | (uint64_t)L->fpcw << 32;
    t->c.sp = &top[-10];
    return;
  }
#endif
  getcontext(t->c.uc);
  t->c.uc->uc_stack.ss_sp = t->c.lo;
  t->c.uc->uc_stack.ss_size = t->c.size;
  t->c.uc->uc_link = NULL;
  makecontext(t->c.uc, rt_simt_entry, 0);
}

/* ---- services ---- */

int32_t ac_simt_tid(void) {
  rt_simt_launch *L = rt_simt_cur;
  return L ? (int32_t)L->run : 0;
}

int32_t ac_simt_ntid(void) {
  rt_simt_launch *L = rt_simt_cur;
  return L ? (int32_t)L->block : 0;
}

int32_t ac_simt_ctaid(void) {
  rt_simt_launch *L = rt_simt_cur;
  return L ? (int32_t)L->ctaid : 0;
}

int32_t ac_simt_nctaid(void) {
  rt_simt_launch *L = rt_simt_cur;
  return L ? (int32_t)L->grid : 0;
}

void *ac_simt_shared(void) {
  rt_simt_launch *L = rt_simt_cur;
  return L ? L->smem : NULL;
}

void ac_simt_barrier(void) {
  rt_simt_launch *L = rt_simt_cur;
  if (!L)
    return;
  unsigned me = L->run;
  L->spins = 0;
  if (L->ndone)
    rt_simt_fail(L,
                 "barrier divergence in block %u: thread %u reached a barrier after thread %u "
                 "ended",
                 L->ctaid, me, L->first_done);
  if (++L->nbar < L->block) {
    L->thr[me].state = RT_SIMT_BAR;
    rt_simt_next(L, false);
    return;
  }
  /* the last to arrive: everyone else was waiting, so the queue is empty;
   * release them in thread order and run on */
  L->nbar = 0;
  if (L->prof) {
    rt_simt_prof_sync(L);
    rt_simt_pl_barrier(L->prof);
  }
  for (unsigned i = 0; i < L->block; i++)
    if (i != me) {
      L->thr[i].state = RT_SIMT_RUN;
      rt_simt_push(L, i);
    }
}

void ac_simt_yield(void) {
  rt_simt_launch *L = rt_simt_cur;
  if (!L)
    return;
  if (++L->spins > RT_SIMT_SPIN_LIMIT)
    rt_simt_fail(L,
                 "livelock in block %u: thread %u yielded %u times in a row while no thread "
                 "reached a barrier, warp operation or its end (a spin loop waiting for a later "
                 "block or for a blocked thread)",
                 L->ctaid, L->run, (unsigned)RT_SIMT_SPIN_LIMIT);
  if (!L->qlen)
    return;
  rt_simt_push(L, L->run);
  rt_simt_next(L, false);
}

/* PTX shfl.sync for a full warp (width 32): only b[4:0] of the lane operand
 * counts (so an out-of-range offset wraps rather than clamping), and a
 * computed source lane outside the warp yields the lane's own value. */
static unsigned rt_simt_shfl_src(unsigned lane, int32_t mode, int32_t arg) {
  unsigned b = (unsigned)arg & (RT_SIMT_WARP - 1);
  switch (mode) {
  case 0: /* idx */
    return b;
  case 1: /* up */
    return lane >= b ? lane - b : lane;
  case 2: /* down */
    return lane + b < RT_SIMT_WARP ? lane + b : lane;
  default: /* xor (bfly) */
    return lane ^ b;
  }
}

/* The 32 lanes of warp w have deposited their operands: their results. */
static void rt_simt_warp_compute(rt_simt_launch *L, unsigned w, uint8_t kind) {
  rt_simt_thr *lane = &L->thr[w * RT_SIMT_WARP];
  if (kind == RT_SIMT_SHFL) {
    for (unsigned i = 0; i < RT_SIMT_WARP; i++)
      lane[i].out = lane[rt_simt_shfl_src(i, lane[i].mode, lane[i].arg)].in;
    return;
  }
  uint32_t ballot = 0;
  for (unsigned i = 0; i < RT_SIMT_WARP; i++)
    ballot |= (uint32_t)(lane[i].in != 0) << i;
  for (unsigned i = 0; i < RT_SIMT_WARP; i++)
    lane[i].out = lane[i].mode == 0   ? ballot != 0
                  : lane[i].mode == 1 ? ballot == UINT32_MAX
                                      : ballot;
}

/* The running lane reaches a warp operation of `kind`. */
static uint64_t rt_simt_warp_op(rt_simt_launch *L, uint8_t kind, uint64_t v, int32_t mode,
                                int32_t arg) {
  unsigned me = L->run, w = me / RT_SIMT_WARP;
  rt_simt_warp *W = &L->warp[w];
  rt_simt_thr *t = &L->thr[me];
  L->spins = 0;
  if (W->ended)
    rt_simt_fail(L,
                 "warp divergence in block %u, warp %u: lane %u reached a %s after lane %u "
                 "ended",
                 L->ctaid, w, me % RT_SIMT_WARP, rt_simt_kind_name(kind), (unsigned)W->first);
  if (W->arrived && W->kind != kind)
    rt_simt_fail(L,
                 "warp divergence in block %u, warp %u: lane %u reached a %s while %u other "
                 "lanes wait at a %s",
                 L->ctaid, w, me % RT_SIMT_WARP, rt_simt_kind_name(kind), (unsigned)W->arrived,
                 rt_simt_kind_name(W->kind));
  t->in = v;
  t->mode = mode;
  t->arg = arg;
  W->kind = kind;
  if (++W->arrived < RT_SIMT_WARP) {
    t->state = kind;
    rt_simt_next(L, false);
    return t->out;
  }
  W->arrived = 0;
  if (L->prof)
    rt_simt_pl_flush_warp(L->prof, w, true, true);
  rt_simt_warp_compute(L, w, kind);
  for (unsigned i = w * RT_SIMT_WARP; i < (w + 1) * RT_SIMT_WARP; i++)
    if (i != me) {
      L->thr[i].state = RT_SIMT_RUN;
      rt_simt_push(L, i);
    }
  return t->out;
}

uint64_t ac_simt_shfl(uint64_t v, int32_t mode, int32_t arg) {
  rt_simt_launch *L = rt_simt_cur;
  if (!L)
    return v;
  if (mode < 0 || mode > 3)
    rt_simt_fail(L, "invalid shuffle mode %d in block %u, thread %u", (int)mode, L->ctaid, L->run);
  return rt_simt_warp_op(L, RT_SIMT_SHFL, v, mode, arg);
}

uint32_t ac_simt_vote(int32_t mode, int32_t pred) {
  rt_simt_launch *L = rt_simt_cur;
  if (!L)
    return 0;
  if (mode < 0 || mode > 2)
    rt_simt_fail(L, "invalid vote mode %d in block %u, thread %u", (int)mode, L->ctaid, L->run);
  return (uint32_t)rt_simt_warp_op(L, RT_SIMT_VOTE, pred != 0, mode, 0);
}

/* A warp's buffer is full before its lanes synchronised: every warp is
 * flushed; a warp's groups are complete (exact) unless a lane of it other
 * than the running one may still run before the next common point. */
static void rt_simt_prof_spill(rt_simt_launch *L) {
  for (unsigned w = 0; w < L->block / RT_SIMT_WARP; w++) {
    bool exact = true;
    for (unsigned i = w * RT_SIMT_WARP; i < (w + 1) * RT_SIMT_WARP; i++)
      if (i != L->run && L->thr[i].state == RT_SIMT_RUN)
        exact = false;
    rt_simt_pl_flush_warp(L->prof, w, false, exact);
  }
}

void ac_simt_prof(uint32_t site, uint64_t addr, uint32_t bytes) {
  rt_simt_launch *L = rt_simt_cur;
  if (!L || !L->prof)
    return;
  if (site >= rt_simt_pl_nsites(L->prof))
    rt_simt_fail(L, "profiling site %u of a kernel with %u sites (block %u, thread %u)",
                 (unsigned)site, (unsigned)rt_simt_pl_nsites(L->prof), L->ctaid, L->run);
  if (!rt_simt_pl_record(L->prof, L->run, site, addr, bytes)) {
    rt_simt_prof_spill(L);
    (void)rt_simt_pl_record(L->prof, L->run, site, addr, bytes);
  }
}

/* Function addresses go through uintptr_t (ISO C has no direct conversion
 * from a function pointer to void *; see rt_helper_symbols). */
const rt_symbol rt_simt_symbols[] = {
    {"ac_simt_tid", (void *)(uintptr_t)ac_simt_tid},
    {"ac_simt_ntid", (void *)(uintptr_t)ac_simt_ntid},
    {"ac_simt_ctaid", (void *)(uintptr_t)ac_simt_ctaid},
    {"ac_simt_nctaid", (void *)(uintptr_t)ac_simt_nctaid},
    {"ac_simt_barrier", (void *)(uintptr_t)ac_simt_barrier},
    {"ac_simt_yield", (void *)(uintptr_t)ac_simt_yield},
    {"ac_simt_shared", (void *)(uintptr_t)ac_simt_shared},
    {"ac_simt_shfl", (void *)(uintptr_t)ac_simt_shfl},
    {"ac_simt_vote", (void *)(uintptr_t)ac_simt_vote},
    {"ac_simt_prof", (void *)(uintptr_t)ac_simt_prof},
    {NULL, NULL},
};

/* ---- the launcher ---- */

static ac_status rt_simt_report(ac_context *ctx, ac_error **err, ac_status st, const char *fmt,
                                ...) {
  va_list ap;
  va_start(ap, fmt);
  ac_error *e = ir_verror(ctx, st, NULL, (ir_loc){0, 0}, fmt, ap);
  va_end(ap);
  return ir_report(err, e, e ? st : AC_ERR_NOMEM);
}

/* x86-64 switch unless ARRAYC_SIMT_SWITCH=ucontext or a shadow stack is on. */
static bool rt_simt_want_ucontext(void) {
#if RT_SIMT_X64
  const char *env = getenv("ARRAYC_SIMT_SWITCH");
  return (env && strcmp(env, "ucontext") == 0) || rt_simt_shadow_stack();
#else
  return true;
#endif
}

/* ---- stacks ---- */

struct rt_simt_stacks {
  char *base;    /* one mapping: per thread a guard page, then its stack */
  size_t bytes;  /* of the mapping */
  size_t stride; /* guard page + RT_SIMT_STACK */
  size_t page;
  unsigned count; /* threads it has stacks for */
};

void rt_simt_stacks_free(ac_context *ctx, rt_simt_stacks *s) {
  if (!s)
    return;
  munmap(s->base, s->bytes);
  ac_free(ctx, s);
}

static ac_status rt_simt_stacks_map(ac_context *ctx, unsigned count, rt_simt_stacks **out,
                                    ac_error **err) {
  long pg = sysconf(_SC_PAGESIZE);
  size_t page = pg > 0 ? (size_t)pg : 4096, stride = page + RT_SIMT_STACK;
  rt_simt_stacks *s = ac_alloc(ctx, sizeof *s);
  if (!s)
    return rt_simt_report(ctx, err, AC_ERR_NOMEM, "SIMT emulator: out of memory");
  void *m = mmap(NULL, count * stride, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (m == MAP_FAILED) {
    ac_free(ctx, s);
    return rt_simt_report(ctx, err, AC_ERR_NOMEM,
                          "SIMT emulator: cannot map %zu bytes of stacks for %u threads",
                          count * stride, count);
  }
  *s = (rt_simt_stacks){m, count * stride, stride, page, count};
  for (unsigned i = 0; i < count; i++)
    if (mprotect(s->base + i * stride, page, PROT_NONE) != 0) {
      rt_simt_stacks_free(ctx, s);
      return rt_simt_report(ctx, err, AC_ERR_NOMEM,
                            "SIMT emulator: cannot protect the guard page of thread %u's stack", i);
    }
  *out = s;
  return AC_OK;
}

/* ---- the launch ---- */

static void rt_simt_free(rt_simt_launch *L) {
  ac_context *ctx = L->ctx;
  ac_free(ctx, L->thr);
  ac_free(ctx, L->warp);
  ac_free(ctx, L->queue);
  ac_free(ctx, L->smem_raw);
  ac_free(ctx, L->ucs);
  ac_free(ctx, L);
}

/* Allocates the launch's per-block state; takes the stacks from *cache when
 * it has enough of them, else replaces it with a fresh set. */
static ac_status rt_simt_setup(rt_simt_launch *L, size_t smem, rt_simt_stacks **cache,
                               ac_error **err) {
  ac_context *ctx = L->ctx;
  unsigned nt = L->block;
  L->thr = ac_alloc(ctx, nt * sizeof *L->thr);
  L->warp = ac_alloc(ctx, nt / RT_SIMT_WARP * sizeof *L->warp);
  L->queue = ac_alloc(ctx, nt * sizeof *L->queue);
  L->smem_bytes = smem;
  L->smem_raw = ac_alloc(ctx, (smem ? smem : 1) + RT_SIMT_SMEM_ALIGN - 1);
  L->uc_mode = rt_simt_want_ucontext();
  if (L->uc_mode)
    L->ucs = ac_alloc(ctx, (nt + 1) * sizeof *L->ucs);
  if (!L->thr || !L->warp || !L->queue || !L->smem_raw || (L->uc_mode && !L->ucs))
    return rt_simt_report(ctx, err, AC_ERR_NOMEM,
                          "SIMT emulator: out of memory for a launch of %u threads per block", nt);
  memset(L->thr, 0, nt * sizeof *L->thr);
  uintptr_t s = (uintptr_t)L->smem_raw;
  L->smem = L->smem_raw + ((RT_SIMT_SMEM_ALIGN - s % RT_SIMT_SMEM_ALIGN) % RT_SIMT_SMEM_ALIGN);

  if (!*cache || (*cache)->count < nt) {
    rt_simt_stacks_free(ctx, *cache);
    *cache = NULL;
    ac_status st = rt_simt_stacks_map(ctx, nt, cache, err);
    if (st != AC_OK)
      return st;
  }
  L->stk = *cache;
  for (unsigned i = 0; i < nt; i++) {
    L->thr[i].c.lo = L->stk->base + i * L->stk->stride + L->stk->page;
    L->thr[i].c.size = RT_SIMT_STACK;
    L->thr[i].c.uc = L->uc_mode ? &L->ucs[i] : NULL;
  }
  L->host.uc = L->uc_mode ? &L->ucs[nt] : NULL;
#if RT_SIMT_X64
  __asm__ volatile("stmxcsr %0" : "=m"(L->mxcsr));
  __asm__ volatile("fnstcw %0" : "=m"(L->fpcw));
#endif
  return AC_OK;
}

/* Runs block b to its end; false when it failed (L->msg says why). */
static bool rt_simt_block(rt_simt_launch *L, unsigned b) {
  L->ctaid = b;
  if (L->smem_bytes)
    memset(L->smem, 0, L->smem_bytes);
  memset(L->warp, 0, L->block / RT_SIMT_WARP * sizeof *L->warp);
  L->nbar = L->ndone = L->qhead = L->qlen = 0;
  L->spins = 0;
  for (unsigned i = 0; i < L->block; i++) {
    rt_simt_prepare(L, i);
    if (i)
      rt_simt_push(L, i);
  }
  L->run = 0;
  rt_simt_switch(L, &L->host, &L->thr[0].c, false);
  if (L->failed)
    return false;
  if (L->ndone == L->block) {
    rt_simt_prof_sync(L);
    return true;
  }
  unsigned bar = 0, warp = 0;
  for (unsigned i = 0; i < L->block; i++) {
    bar += L->thr[i].state == RT_SIMT_BAR;
    warp += L->thr[i].state == RT_SIMT_SHFL || L->thr[i].state == RT_SIMT_VOTE;
  }
  snprintf(L->msg, sizeof L->msg,
           "deadlock in block %u: %u threads wait at a barrier and %u at warp operations, and "
           "none can proceed",
           b, bar, warp);
  return false;
}

ac_status rt_simt_run_prof(ac_context *ctx, rt_gkernel_fn fn, unsigned grid, unsigned block,
                           size_t smem, uint64_t *frame, rt_gctl *ctl, int64_t n,
                           const uint64_t *params, rt_simt_stacks **stacks, rt_simt_prof *prof,
                           ac_error **err) {
  if (rt_simt_cur)
    return rt_simt_report(ctx, err, AC_ERR_INTERNAL,
                          "SIMT emulator: a launch from inside a "
                          "running kernel (launches do not nest)");
  if (!fn)
    return rt_simt_report(ctx, err, AC_ERR_INTERNAL, "SIMT emulator: launch of a NULL kernel");
  if (block == 0 || block % RT_SIMT_WARP || block > RT_SIMT_MAX_BLOCK)
    return rt_simt_report(ctx, err, AC_ERR_INTERNAL,
                          "SIMT emulator: a block of %u threads (must "
                          "be a positive multiple of 32 up to 1024)",
                          block);
  if (smem > SIZE_MAX / 2)
    return rt_simt_report(ctx, err, AC_ERR_INTERNAL, "SIMT emulator: %zu bytes of shared memory",
                          smem);
  if (grid == 0)
    return AC_OK;
  rt_simt_launch *L = ac_alloc(ctx, sizeof *L);
  if (!L)
    return rt_simt_report(ctx, err, AC_ERR_NOMEM, "SIMT emulator: out of memory");
  memset(L, 0, sizeof *L);
  L->ctx = ctx;
  L->fn = fn;
  L->frame = frame;
  L->ctl = ctl;
  L->n = n;
  if (params)
    memcpy(L->params, params, sizeof L->params);
  L->grid = grid;
  L->block = block;
  ac_status st = rt_simt_setup(L, smem, stacks, err);
  if (st == AC_OK && prof && !(L->prof = rt_simt_pl_begin(ctx, prof, block)))
    st = rt_simt_report(ctx, err, AC_ERR_NOMEM, "SIMT emulator: out of memory for profiling");
  if (st != AC_OK) {
    rt_simt_free(L);
    return st;
  }
  rt_simt_cur = L;
  bool ok = true;
  for (unsigned b = 0; b < grid && ok; b++)
    ok = rt_simt_block(L, b);
  rt_simt_cur = NULL;
  for (unsigned i = 0; i < block; i++) /* stacks go back clean (cache) */
    rt_simt_clean(&L->thr[i]);
  if (!ok)
    st = rt_simt_report(ctx, err, AC_ERR_INTERNAL, "SIMT emulator: %s", L->msg);
  rt_simt_pl_end(L->prof, ok);
  rt_simt_free(L);
  return st;
}

ac_status rt_simt_run_cached(ac_context *ctx, rt_gkernel_fn fn, unsigned grid, unsigned block,
                             size_t smem, uint64_t *frame, rt_gctl *ctl, int64_t n,
                             rt_simt_stacks **stacks, ac_error **err) {
  return rt_simt_run_prof(ctx, fn, grid, block, smem, frame, ctl, n, NULL, stacks, NULL, err);
}

ac_status rt_simt_run(ac_context *ctx, rt_gkernel_fn fn, unsigned grid, unsigned block, size_t smem,
                      uint64_t *frame, rt_gctl *ctl, int64_t n, ac_error **err) {
  rt_simt_stacks *stacks = NULL;
  ac_status st = rt_simt_run_cached(ctx, fn, grid, block, smem, frame, ctl, n, &stacks, err);
  rt_simt_stacks_free(ctx, stacks);
  return st;
}
