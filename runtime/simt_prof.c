/* runtime/simt_prof.c: counting what a GPU would count, from the SIMT
 * emulator's per-thread records (simt_prof.h describes the model).
 *
 * Grouping. A record is (site, k, address, bytes), k being the number of
 * times the thread executed the site since its warp last synchronised.
 * Sorting a warp's buffer by (site, k, address) puts each warp instruction
 * together with its lanes' addresses in ascending order, so:
 *   - active lanes: the group's size (a thread executes a site's k-th time
 *     once);
 *   - global memory: distinct 32-byte sectors over the lanes' byte ranges,
 *     one pass since the ranges come sorted by start; requests in 32-bit
 *     lane units (max(1, widest lane access / 4)), so a coalesced access
 *     is 4.0 sectors per request at any width;
 *   - shared memory: the distinct 4-byte words, and per bank (word mod 32)
 *     how many of them it must deliver: the largest is the instruction's
 *     wavefronts, ceil(words / 32) the fewest possible, the difference its
 *     bank conflicts (a word read by several lanes is a broadcast: one);
 *   - the launch's footprint: per touched sector, which of its bytes were
 *     loaded and which stored (hash set keyed by sector), whose population
 *     counts are the minimum bytes: each input read once, each output
 *     written once.
 * Sorting costs O(r log r) per flush; the buffer of a warp is bounded
 * (RT_SIMT_PROF_WARP_CAP records; past it the emulator flushes early, see
 * rt_simt_pl_flush_warp), so memory stays bounded whatever the kernel.
 *
 * Counters of executions (k) are per thread and site, tagged with the
 * warp's generation, which a synchronising flush advances: a reset costs
 * nothing however many sites the kernel has.
 */
#include "runtime/simt_prof.h"

#include "ir.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Records a warp may buffer before the emulator must flush it (24 bytes
 * each: 24 MiB). */
#define RT_SIMT_PROF_WARP_CAP (1u << 20)
/* And all warps of a block together (96 MiB). */
#define RT_SIMT_PROF_TOTAL_CAP (1u << 22)

struct rt_simt_prof {
  uint32_t nsites;
  rt_simt_site *sites;
  pthread_mutex_t mu;
  ac_kernel_profile tot;
};

typedef struct rt_simt_rec {
  uint64_t addr;
  uint32_t site, k, bytes;
} rt_simt_rec;

typedef struct rt_simt_cnt {
  uint32_t gen, n;
} rt_simt_cnt;

typedef struct rt_simt_wlog {
  rt_simt_rec *r;
  size_t len, cap;
} rt_simt_wlog;

struct rt_simt_plaunch {
  ac_context *ctx;
  rt_simt_prof *p;
  unsigned block, nwarps;
  rt_simt_cnt *cnt; /* block * nsites */
  uint32_t *wgen;   /* per warp */
  rt_simt_wlog *log;
  size_t total; /* records buffered over all warps */
  /* the footprint: sector index + 1 (0 = empty slot), loaded and stored bytes */
  uint64_t *fkey;
  uint32_t *fld, *fst;
  size_t fcap, fn;
  bool foom; /* the footprint set could not grow: min_bytes is a lower bound */
  uint64_t *words; /* scratch: a shared access's words */
  size_t wcap;
  ac_kernel_profile c; /* this launch */
};

/* ---- the kernel's profile ---- */

rt_simt_prof *rt_simt_prof_create(ac_context *ctx, const rt_simt_site *sites, uint32_t nsites) {
  rt_simt_prof *p = ac_alloc(ctx, sizeof *p);
  if (!p)
    return NULL;
  memset(p, 0, sizeof *p);
  p->sites = ac_alloc(ctx, (nsites ? nsites : 1) * sizeof *p->sites);
  if (!p->sites) {
    ac_free(ctx, p);
    return NULL;
  }
  if (nsites)
    memcpy(p->sites, sites, nsites * sizeof *sites);
  p->nsites = nsites;
  pthread_mutex_init(&p->mu, NULL);
  return p;
}

void rt_simt_prof_destroy(ac_context *ctx, rt_simt_prof *p) {
  if (!p)
    return;
  pthread_mutex_destroy(&p->mu);
  ac_free(ctx, p->sites);
  ac_free(ctx, p);
}

void rt_simt_prof_read(rt_simt_prof *p, ac_kernel_profile *out) {
  const char *kernel = out->kernel;
  pthread_mutex_lock(&p->mu);
  *out = p->tot;
  pthread_mutex_unlock(&p->mu);
  out->kernel = kernel;
}

void rt_simt_prof_reset(rt_simt_prof *p) {
  pthread_mutex_lock(&p->mu);
  memset(&p->tot, 0, sizeof p->tot);
  pthread_mutex_unlock(&p->mu);
}

/* ---- a launch ---- */

uint32_t rt_simt_pl_nsites(const rt_simt_plaunch *s) {
  return s->p->nsites;
}

rt_simt_plaunch *rt_simt_pl_begin(ac_context *ctx, rt_simt_prof *p, unsigned block) {
  rt_simt_plaunch *s = ac_alloc(ctx, sizeof *s);
  if (!s)
    return NULL;
  memset(s, 0, sizeof *s);
  s->ctx = ctx;
  s->p = p;
  s->block = block;
  s->nwarps = (block + 31) / 32;
  size_t ncnt = (size_t)block * (p->nsites ? p->nsites : 1);
  s->cnt = ac_alloc(ctx, ncnt * sizeof *s->cnt);
  s->wgen = ac_alloc(ctx, s->nwarps * sizeof *s->wgen);
  s->log = ac_alloc(ctx, s->nwarps * sizeof *s->log);
  if (!s->cnt || !s->wgen || !s->log) {
    rt_simt_pl_end(s, false);
    return NULL;
  }
  memset(s->cnt, 0, ncnt * sizeof *s->cnt);
  /* generation 1: the zeroed counters are stale from the start */
  for (unsigned w = 0; w < s->nwarps; w++)
    s->wgen[w] = 1;
  memset(s->log, 0, s->nwarps * sizeof *s->log);
  return s;
}

bool rt_simt_pl_record(rt_simt_plaunch *s, unsigned t, uint32_t site, uint64_t addr,
                       uint32_t bytes) {
  const rt_simt_site *st = &s->p->sites[site];
  if (st->kind == RT_SIMT_SITE_ATOMIC) {
    s->c.atomics++;
    return true;
  }
  unsigned w = t / 32;
  rt_simt_cnt *c = &s->cnt[(size_t)t * s->p->nsites + site];
  if (c->gen != s->wgen[w]) {
    c->gen = s->wgen[w];
    c->n = 0;
  }
  rt_simt_wlog *L = &s->log[w];
  if (L->len == L->cap) {
    size_t cap = L->cap ? L->cap * 2 : 1024;
    if (cap > RT_SIMT_PROF_WARP_CAP || s->total >= RT_SIMT_PROF_TOTAL_CAP)
      return false;
    rt_simt_rec *r = ac_realloc(s->ctx, L->r, cap * sizeof *r);
    if (!r) {
      s->c.approximate = true; /* the caller flushes; a record may be lost */
      return false;
    }
    L->r = r;
    L->cap = cap;
  }
  L->r[L->len++] = (rt_simt_rec){addr, site, c->n++, st->arg ? st->arg : bytes};
  s->total++;
  return true;
}

/* ---- the footprint ---- */

static size_t rt_simt_fhash(uint64_t key, size_t cap) {
  return (size_t)((key * 0x9E3779B97F4A7C15ull) >> 17) & (cap - 1);
}

static bool rt_simt_fgrow(rt_simt_plaunch *s) {
  size_t cap = s->fcap ? s->fcap * 2 : 4096;
  uint64_t *key = ac_alloc(s->ctx, cap * sizeof *key);
  uint32_t *ld = ac_alloc(s->ctx, cap * sizeof *ld);
  uint32_t *st = ac_alloc(s->ctx, cap * sizeof *st);
  if (!key || !ld || !st) {
    ac_free(s->ctx, key);
    ac_free(s->ctx, ld);
    ac_free(s->ctx, st);
    return false;
  }
  memset(key, 0, cap * sizeof *key);
  for (size_t i = 0; i < s->fcap; i++) {
    if (!s->fkey[i])
      continue;
    size_t j = rt_simt_fhash(s->fkey[i], cap);
    while (key[j])
      j = (j + 1) & (cap - 1);
    key[j] = s->fkey[i];
    ld[j] = s->fld[i];
    st[j] = s->fst[i];
  }
  ac_free(s->ctx, s->fkey);
  ac_free(s->ctx, s->fld);
  ac_free(s->ctx, s->fst);
  s->fkey = key;
  s->fld = ld;
  s->fst = st;
  s->fcap = cap;
  return true;
}

/* Marks bytes [addr, addr + bytes) of the footprint as loaded or stored. */
static void rt_simt_ftouch(rt_simt_plaunch *s, uint64_t addr, uint32_t bytes, bool store) {
  uint64_t end = addr + (bytes ? bytes : 1);
  for (uint64_t sec = addr >> 5; sec <= (end - 1) >> 5; sec++) {
    if (2 * (s->fn + 1) > s->fcap && !rt_simt_fgrow(s)) {
      s->foom = true;
      return;
    }
    uint64_t key = sec + 1;
    size_t j = rt_simt_fhash(key, s->fcap);
    while (s->fkey[j] && s->fkey[j] != key)
      j = (j + 1) & (s->fcap - 1);
    if (!s->fkey[j]) {
      s->fkey[j] = key;
      s->fld[j] = s->fst[j] = 0;
      s->fn++;
    }
    uint64_t lo = sec << 5, a = addr > lo ? addr - lo : 0, b = end < lo + 32 ? end - lo : 32;
    uint32_t mask = (b - a >= 32 ? UINT32_MAX : ((1u << (b - a)) - 1u) << a);
    if (store)
      s->fst[j] |= mask;
    else
      s->fld[j] |= mask;
  }
}

/* ---- grouping ---- */

static int rt_simt_rec_cmp(const void *pa, const void *pb) {
  const rt_simt_rec *a = pa, *b = pb;
  if (a->site != b->site)
    return a->site < b->site ? -1 : 1;
  if (a->k != b->k)
    return a->k < b->k ? -1 : 1;
  return a->addr < b->addr ? -1 : a->addr > b->addr;
}

static int rt_simt_u64_cmp(const void *pa, const void *pb) {
  uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
  return a < b ? -1 : a > b;
}

/* One global-memory warp instruction: records r[0..n), sorted by address. */
static void rt_simt_global(rt_simt_plaunch *s, const rt_simt_rec *r, size_t n, bool store) {
  uint64_t sectors = 0, last = 0;
  bool any = false;
  uint32_t widest = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t lo = r[i].addr >> 5, hi = (r[i].addr + (r[i].bytes ? r[i].bytes : 1) - 1) >> 5;
    if (any && lo <= last)
      lo = last + 1;
    if (lo <= hi) {
      sectors += hi - lo + 1;
      last = hi;
      any = true;
    }
    if (r[i].bytes > widest)
      widest = r[i].bytes;
    rt_simt_ftouch(s, r[i].addr, r[i].bytes, store);
  }
  uint64_t req = widest / 4 > 1 ? widest / 4 : 1;
  if (store) {
    s->c.st_insts++;
    s->c.st_req += req;
    s->c.st_sectors += sectors;
  } else {
    s->c.ld_insts++;
    s->c.ld_req += req;
    s->c.ld_sectors += sectors;
  }
}

/* One shared-memory warp instruction. */
static void rt_simt_shared(rt_simt_plaunch *s, const rt_simt_rec *r, size_t n) {
  size_t nw = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t lo = r[i].addr >> 2, hi = (r[i].addr + (r[i].bytes ? r[i].bytes : 1) - 1) >> 2;
    for (uint64_t w = lo; w <= hi; w++) {
      if (nw == s->wcap) {
        size_t cap = s->wcap ? s->wcap * 2 : 256;
        uint64_t *p = ac_realloc(s->ctx, s->words, cap * sizeof *p);
        if (!p)
          goto count;
        s->words = p;
        s->wcap = cap;
      }
      s->words[nw++] = w;
    }
  }
count:
  qsort(s->words, nw, sizeof *s->words, rt_simt_u64_cmp);
  unsigned per_bank[32] = {0}, uniq = 0, wave = 0;
  for (size_t i = 0; i < nw; i++) {
    if (i && s->words[i] == s->words[i - 1])
      continue; /* broadcast */
    uniq++;
    unsigned *b = &per_bank[s->words[i] & 31];
    if (++*b > wave)
      wave = *b;
  }
  unsigned ideal = (uniq + 31) / 32;
  s->c.smem_insts++;
  s->c.smem_wavefronts += wave;
  s->c.smem_conflicts += wave > ideal ? wave - ideal : 0;
}

void rt_simt_pl_flush_warp(rt_simt_plaunch *s, unsigned w, bool sync, bool exact) {
  rt_simt_wlog *L = &s->log[w];
  if (sync)
    s->wgen[w]++;
  if (!L->len)
    return;
  if (!sync && !exact)
    s->c.approximate = true;
  qsort(L->r, L->len, sizeof *L->r, rt_simt_rec_cmp);
  for (size_t i = 0, j; i < L->len; i = j) {
    for (j = i + 1; j < L->len && L->r[j].site == L->r[i].site && L->r[j].k == L->r[i].k; j++)
      ;
    const rt_simt_site *st = &s->p->sites[L->r[i].site];
    size_t n = j - i;
    switch (st->kind) {
    case RT_SIMT_SITE_BLOCK:
      s->c.warp_insts += st->arg;
      s->c.lane_insts += (uint64_t)st->arg * n;
      break;
    case RT_SIMT_SITE_LD:
    case RT_SIMT_SITE_ST:
      rt_simt_global(s, &L->r[i], n, st->kind == RT_SIMT_SITE_ST);
      break;
    case RT_SIMT_SITE_SLD:
    case RT_SIMT_SITE_SST:
      rt_simt_shared(s, &L->r[i], n);
      break;
    case RT_SIMT_SITE_PARAM:
      s->c.param_insts++;
      break;
    default:
      break;
    }
  }
  s->total -= L->len;
  L->len = 0;
}

void rt_simt_pl_barrier(rt_simt_plaunch *s) {
  s->c.barriers++;
}

void rt_simt_pl_end(rt_simt_plaunch *s, bool ok) {
  if (!s)
    return;
  ac_context *ctx = s->ctx;
  if (ok) {
    uint64_t min = 0;
    for (size_t i = 0; i < s->fcap; i++)
      if (s->fkey[i])
        min += (uint64_t)__builtin_popcount(s->fld[i]) + (uint64_t)__builtin_popcount(s->fst[i]);
    ac_kernel_profile *t = &s->p->tot;
    pthread_mutex_lock(&s->p->mu);
    t->launches++;
    t->ld_insts += s->c.ld_insts;
    t->ld_req += s->c.ld_req;
    t->ld_sectors += s->c.ld_sectors;
    t->st_insts += s->c.st_insts;
    t->st_req += s->c.st_req;
    t->st_sectors += s->c.st_sectors;
    t->bytes += 32 * (s->c.ld_sectors + s->c.st_sectors);
    t->min_bytes += min;
    t->param_insts += s->c.param_insts;
    t->smem_insts += s->c.smem_insts;
    t->smem_wavefronts += s->c.smem_wavefronts;
    t->smem_conflicts += s->c.smem_conflicts;
    t->warp_insts += s->c.warp_insts;
    t->lane_insts += s->c.lane_insts;
    t->barriers += s->c.barriers;
    t->atomics += s->c.atomics;
    t->approximate |= s->c.approximate || s->foom;
    pthread_mutex_unlock(&s->p->mu);
  }
  for (unsigned w = 0; s->log && w < s->nwarps; w++)
    ac_free(ctx, s->log[w].r);
  ac_free(ctx, s->log);
  ac_free(ctx, s->cnt);
  ac_free(ctx, s->wgen);
  ac_free(ctx, s->fkey);
  ac_free(ctx, s->fld);
  ac_free(ctx, s->fst);
  ac_free(ctx, s->words);
  ac_free(ctx, s);
}
