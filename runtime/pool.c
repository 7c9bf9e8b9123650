/* runtime/pool.c: the thread pool that runs CPU kernels over all cores.
 *
 * A launch of n iterations in c chunks is a bag of c independent tasks;
 * chunk k covers [k*n/c, (k+1)*n/c) (rt.h). The launching thread publishes
 * the launch as a JOB, wakes as many sleeping workers as there are chunks
 * beyond its own, and then claims chunks itself; everybody claims the next
 * chunk with one atomic fetch-add, so uneven chunks balance dynamically
 * (the self-scheduling loop of OpenMP's `schedule(dynamic)`). Workers that
 * finish a job spin briefly watching the job generation before sleeping on
 * the condition variable, so a sequence of short launches (a host loop of
 * small kernels) usually finds them awake; nobody spins for long.
 *
 * Lifetime of a job: it lives on the launcher's stack. A worker joins it
 * under the pool mutex (incrementing job->active) only while it is
 * published; when the launcher has run out of chunks to claim it
 * unpublishes the job under the mutex and waits until the workers that
 * joined have left. After that no thread can touch the job, so the next
 * launch can reuse everything. Once the call has failed, nobody claims more
 * chunks (the call is abandoned anyway).
 *
 * Launches with one chunk, and all launches on a pool of one thread, run
 * inline on the caller: no wake-up, and several host threads may do so at
 * once. Such a launch takes the launcher's context (slot 0) when
 * `launch_mu` is free (trylock), so that its arena's first blocks serve
 * the next launch too; when another thread holds it, a context on its own
 * stack, whose arena it frees. Multi-chunk launches from several host
 * threads are serialised by `launch_mu`, because the workers (and the
 * launcher's context) are shared.
 *
 * Threads: nthreads 0 means all online cores (sysconf), or the environment
 * variable ARRAYC_NUM_THREADS when it holds a positive number; an explicit
 * nthreads is taken as given. The size counts the launching thread, so a
 * pool of 4 has 3 workers.
 *
 * Testing knob: ARRAYC_MAX_GRAIN=G (a positive number) caps every grain
 * rt_pool_chunks is given at G, so that small arrays are split into as many
 * chunks as large ones would be. The differential tests run the programs
 * once more that way (with several threads) to exercise the multi-chunk
 * paths of every skeleton (partials, carries, atomics) on small inputs.
 */
#define _POSIX_C_SOURCE 200809L /* sysconf */
#include "runtime/rt_impl.h"

#include "ir.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

/* Largest pool (more threads than this only adds overhead). */
#define RT_POOL_MAX_THREADS 1024u
/* Rounds of pause a worker spends watching for the next job before sleeping. */
#define RT_POOL_SPIN 2000

typedef struct rt_job {
  rt_kernel_fn fn;
  uint64_t *frame;
  rt_call *call;
  int64_t n, chunks;
  _Atomic int64_t next; /* next chunk to claim */
  unsigned active;      /* workers inside the job (pool mutex) */
} rt_job;

typedef struct rt_worker {
  rt_pool *pool;
  pthread_t thread;
  rt_tctx t;
} rt_worker;

struct rt_pool {
  ac_context *ctx;
  unsigned size;     /* threads including the launcher */
  unsigned nworkers; /* threads started (size - 1) */
  rt_worker *workers;
  rt_tctx launcher;  /* context of the thread running a multi-chunk launch */
  pthread_mutex_t launch_mu; /* serialises multi-chunk launches */
  pthread_mutex_t mu;        /* guards job, sleeping, stop, active counts */
  pthread_cond_t work_cv;    /* workers wait here for a job */
  pthread_cond_t done_cv;    /* the launcher waits here for workers to leave */
  rt_job *job;               /* published job, or NULL */
  _Atomic uint64_t gen;      /* bumped on every publication (read while spinning) */
  unsigned sleeping;
  bool stop;
  int64_t max_grain; /* ARRAYC_MAX_GRAIN, or 0 */
};

static void rt_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* Chunk k of n iterations in c chunks: [k*n/c, (k+1)*n/c). With n = q*c + r
 * that is k*q + k*r/c, where k*r < c*c needs 128 bits. */
static int64_t rt_chunk_start(int64_t k, int64_t n, int64_t c) {
  int64_t q = n / c, r = n % c;
  __extension__ typedef unsigned __int128 u128;
  return k * q + (int64_t)(((u128)k * (u128)r) / (u128)c);
}

static void rt_run_chunk(const rt_job *j, rt_tctx *t, int64_t k) {
  int64_t lo = rt_chunk_start(k, j->n, j->chunks);
  int64_t hi = k + 1 == j->chunks ? j->n : rt_chunk_start(k + 1, j->n, j->chunks);
  j->fn(j->frame, k, lo, hi, t);
}

/* Claims and runs chunks until none are left or the call has failed. */
static void rt_claim_chunks(rt_job *j, rt_tctx *t) {
  t->call = j->call;
  for (;;) {
    if (atomic_load_explicit(&j->call->failed, memory_order_relaxed))
      return;
    int64_t k = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed);
    if (k >= j->chunks)
      return;
    rt_run_chunk(j, t, k);
  }
}

static void *rt_worker_main(void *arg) {
  rt_worker *w = arg;
  rt_pool *p = w->pool;
  uint64_t seen = 0;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (!p->stop && (!p->job || atomic_load_explicit(&p->gen, memory_order_relaxed) == seen)) {
      p->sleeping++;
      pthread_cond_wait(&p->work_cv, &p->mu);
      p->sleeping--;
    }
    if (p->stop)
      break;
    rt_job *j = p->job;
    seen = atomic_load_explicit(&p->gen, memory_order_relaxed);
    j->active++;
    pthread_mutex_unlock(&p->mu);

    rt_claim_chunks(j, &w->t);
    rt_arena_reset(&w->t.arena);

    pthread_mutex_lock(&p->mu);
    if (--j->active == 0 && p->job != j)
      pthread_cond_signal(&p->done_cv);
    /* Watch for the next job for a moment before going to sleep. */
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < RT_POOL_SPIN; i++) {
      if (atomic_load_explicit(&p->gen, memory_order_acquire) != seen)
        break;
      rt_pause();
    }
    pthread_mutex_lock(&p->mu);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

/* The default size: ARRAYC_NUM_THREADS, else the online cores. */
static unsigned rt_default_threads(void) {
  const char *env = getenv("ARRAYC_NUM_THREADS");
  if (env && *env) {
    char *end;
    long v = strtol(env, &end, 10);
    if (*end == 0 && v > 0)
      return v > (long)RT_POOL_MAX_THREADS ? RT_POOL_MAX_THREADS : (unsigned)v;
  }
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (unsigned)(n > (long)RT_POOL_MAX_THREADS ? RT_POOL_MAX_THREADS : n) : 1u;
}

/* ARRAYC_MAX_GRAIN (see the file comment), or 0. */
static int64_t rt_env_max_grain(void) {
  const char *env = getenv("ARRAYC_MAX_GRAIN");
  if (env && *env) {
    char *end;
    long long v = strtoll(env, &end, 10);
    if (*end == 0 && v > 0)
      return (int64_t)v;
  }
  return 0;
}

rt_pool *rt_pool_create(ac_context *ctx, unsigned nthreads) {
  if (!ctx)
    return NULL;
  unsigned size = nthreads ? nthreads : rt_default_threads();
  if (size > RT_POOL_MAX_THREADS)
    size = RT_POOL_MAX_THREADS;
  rt_pool *p = ac_alloc(ctx, sizeof *p);
  if (!p)
    return NULL;
  p->ctx = ctx;
  p->size = 1;
  p->nworkers = 0;
  p->job = NULL;
  atomic_init(&p->gen, 0);
  p->sleeping = 0;
  p->stop = false;
  p->max_grain = rt_env_max_grain();
  rt_tctx_init(&p->launcher, ctx, 0);
  p->workers = size > 1 ? ac_alloc(ctx, (size - 1) * sizeof *p->workers) : NULL;
  if (size > 1 && !p->workers) {
    ac_free(ctx, p);
    return NULL;
  }
  /* Default attributes: these initialisations cannot fail on POSIX systems
   * that accept the attributes (EINVAL/ENOMEM are for robust or shared ones). */
  pthread_mutex_init(&p->launch_mu, NULL);
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->work_cv, NULL);
  pthread_cond_init(&p->done_cv, NULL);
  /* A thread that cannot be started leaves a smaller pool, which is still
   * correct: the size is what actually runs. */
  for (unsigned i = 0; i + 1 < size; i++) {
    rt_worker *w = &p->workers[i];
    w->pool = p;
    rt_tctx_init(&w->t, ctx, i + 1);
    if (pthread_create(&w->thread, NULL, rt_worker_main, w) != 0)
      break;
    p->nworkers++;
  }
  p->size = p->nworkers + 1;
  return p;
}

void rt_pool_destroy(rt_pool *p) {
  if (!p)
    return;
  pthread_mutex_lock(&p->mu);
  p->stop = true;
  pthread_cond_broadcast(&p->work_cv);
  pthread_mutex_unlock(&p->mu);
  for (unsigned i = 0; i < p->nworkers; i++) {
    pthread_join(p->workers[i].thread, NULL);
    rt_arena_free(&p->workers[i].t.arena);
  }
  rt_arena_free(&p->launcher.arena);
  pthread_cond_destroy(&p->done_cv);
  pthread_cond_destroy(&p->work_cv);
  pthread_mutex_destroy(&p->mu);
  pthread_mutex_destroy(&p->launch_mu);
  ac_context *ctx = p->ctx;
  ac_free(ctx, p->workers);
  ac_free(ctx, p);
}

unsigned rt_pool_size(const rt_pool *p) {
  return p ? p->size : 1;
}

int64_t rt_pool_chunks(const rt_pool *p, int64_t n, int64_t grain) {
  if (p && p->max_grain && grain > p->max_grain)
    grain = p->max_grain;
  if (grain < 1)
    grain = 1;
  if (n <= 0)
    return 1;
  int64_t want = n / grain + (n % grain != 0);
  int64_t most = 4 * (int64_t)rt_pool_size(p);
  return want < 1 ? 1 : want < most ? want : most;
}

/* One chunk, or no workers: everything on the caller. With the pool's
 * launcher context when no other thread is launching, whose arena keeps
 * its first blocks between launches (a plan that launches a kernel per
 * wavefront on one thread would otherwise allocate and fault in its
 * temporary memory every time); else with a context of its own. */
static void rt_launch_inline(rt_pool *p, rt_job *j, ac_context *ctx) {
  if (p && pthread_mutex_trylock(&p->launch_mu) == 0) {
    rt_claim_chunks(j, &p->launcher);
    rt_arena_reset(&p->launcher.arena);
    pthread_mutex_unlock(&p->launch_mu);
    return;
  }
  rt_tctx t;
  rt_tctx_init(&t, p ? p->ctx : ctx, 0);
  rt_claim_chunks(j, &t);
  rt_arena_free(&t.arena);
}

void rt_pool_launch(rt_pool *p, rt_call *call, uint64_t *frame, rt_kernel_fn fn, int64_t n,
                    int64_t chunks) {
  rt_job j;
  j.fn = fn;
  j.frame = frame;
  j.call = call;
  j.n = n > 0 ? n : 0;
  j.chunks = chunks > 1 ? chunks : 1;
  atomic_init(&j.next, 0);
  j.active = 0;
  if (j.chunks == 1 || !p || p->nworkers == 0) {
    rt_launch_inline(p, &j, call->ctx);
    return;
  }
  pthread_mutex_lock(&p->launch_mu);
  pthread_mutex_lock(&p->mu);
  p->job = &j;
  atomic_fetch_add_explicit(&p->gen, 1, memory_order_release);
  /* Wake only as many sleepers as there are chunks beyond the launcher's;
   * spinning workers notice the new generation by themselves. */
  int64_t want = j.chunks - 1;
  for (unsigned i = 0; i < p->sleeping && (int64_t)i < want; i++)
    pthread_cond_signal(&p->work_cv);
  pthread_mutex_unlock(&p->mu);

  rt_claim_chunks(&j, &p->launcher);
  rt_arena_reset(&p->launcher.arena);

  pthread_mutex_lock(&p->mu);
  p->job = NULL;
  while (j.active > 0)
    pthread_cond_wait(&p->done_cv, &p->mu);
  pthread_mutex_unlock(&p->mu);
  pthread_mutex_unlock(&p->launch_mu);
}
