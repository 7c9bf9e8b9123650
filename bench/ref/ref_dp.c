/* bench/ref/ref_dp.c: hand-written dynamic programming in C, the references
 * of arrayc-bench's recurrence rows and of the test suite's protein batch
 * (test/unit/test_protein_batch.c). One thread each, without OpenMP, so
 * that the tests can link them; compiled -O3 -march=native as the other
 * references (CMakeLists.txt).
 */
#include "ref_dp.h"

#include <stdlib.h>

/* ---- recurrences: one thread, row by row over two rows, as a C
 * programmer writes them (bench/programs/edit_distance.ac and
 * smith_waterman.ac) ---- */

int32_t ref_edit_distance(int64_t n, const uint8_t *s, int64_t m, const uint8_t *t, int32_t *prev,
                          int32_t *cur) {
  for (int64_t j = 0; j <= m; j++)
    prev[j] = (int32_t)j;
  for (int64_t i = 1; i <= n; i++) {
    cur[0] = (int32_t)i;
    for (int64_t j = 1; j <= m; j++) {
      int32_t a = prev[j] + 1, b = cur[j - 1] + 1, c = prev[j - 1] + (s[i - 1] != t[j - 1]);
      int32_t r = a < b ? a : b;
      cur[j] = r < c ? r : c;
    }
    int32_t *x = prev;
    prev = cur;
    cur = x;
  }
  return prev[m];
}

/* Both Smith-Waterman references: with `track`, the first best cell in
 * row-major order too, in at[0..1]. Inlined into each with `track` a
 * constant, so that each compiles to its own loop (the score's keeps its
 * max; the other its branch). */
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
static inline int32_t ref_sw_rows(int64_t n, const uint8_t *s, int64_t m, const uint8_t *t,
                                  int32_t *prev, int32_t *cur, bool track, int64_t *at) {
  int32_t best = 0;
  int64_t bi = 0, bj = 0;
  for (int64_t j = 0; j <= m; j++)
    prev[j] = 0;
  for (int64_t i = 1; i <= n; i++) {
    cur[0] = 0;
    for (int64_t j = 1; j <= m; j++) {
      int32_t d = prev[j - 1] + (s[i - 1] == t[j - 1] ? 3 : -3);
      int32_t up = prev[j] - 2, left = cur[j - 1] - 2;
      int32_t g = up > left ? up : left;
      int32_t h = d > g ? d : g;
      h = h > 0 ? h : 0;
      cur[j] = h;
      if (!track) {
        best = h > best ? h : best;
      } else if (h > best) {
        best = h;
        bi = i;
        bj = j;
      }
    }
    int32_t *x = prev;
    prev = cur;
    cur = x;
  }
  if (track) {
    at[0] = bi;
    at[1] = bj;
  }
  return best;
}

int32_t ref_smith_waterman(int64_t n, const uint8_t *s, int64_t m, const uint8_t *t, int32_t *prev,
                           int32_t *cur) {
  return ref_sw_rows(n, s, m, t, prev, cur, false, NULL);
}

int32_t ref_smith_waterman_at(int64_t n, const uint8_t *s, int64_t m, const uint8_t *t,
                              int32_t *prev, int32_t *cur, int64_t *at) {
  return ref_sw_rows(n, s, m, t, prev, cur, true, at);
}

/* The residue index of an ASCII letter (ref.h). */
static uint8_t ref_residue(uint8_t c) {
  static const char amino[] = "ARNDCQEGHILKMFPSTWYV";
  for (int k = 0; k < 20; k++)
    if (amino[k] == c)
      return (uint8_t)k;
  return 20;
}

void ref_protein_scores(int64_t npairs, const uint8_t *s, const int64_t *so, const uint8_t *t,
                        const int64_t *to, const int32_t *matrix, int32_t gap_open, int32_t extend,
                        int32_t *out, int32_t *h, int32_t *f, uint8_t *ra, uint8_t *rb) {
  const int32_t none = -1000000;
  uint8_t map[256];
  for (int c = 0; c < 256; c++)
    map[c] = ref_residue((uint8_t)c);
  for (int64_t p = 0; p < npairs; p++) {
    int64_t n = so[p + 1] - so[p], m = to[p + 1] - to[p];
    for (int64_t i = 0; i < n; i++)
      ra[i] = map[s[so[p] + i]];
    for (int64_t j = 0; j < m; j++)
      rb[j] = map[t[to[p] + j]];
    for (int64_t j = 0; j <= m; j++) {
      h[j] = 0; /* row i - 1 of H, F */
      f[j] = none;
    }
    int32_t best = 0;
    for (int64_t i = 1; i <= n; i++) {
      const int32_t *row = matrix + 21 * ra[i - 1];
      int32_t diag = 0, left = 0, e = none; /* H[i-1][j-1], H[i][j-1], E[i][j-1] */
      for (int64_t j = 1; j <= m; j++) {
        int32_t ee = e - extend, eo = left - gap_open;
        e = ee > eo ? ee : eo;
        int32_t fe = f[j] - extend, fo = h[j] - gap_open;
        int32_t ff = fe > fo ? fe : fo;
        int32_t d = diag + row[rb[j - 1]];
        int32_t v = d > 0 ? d : 0;
        v = v > e ? v : e;
        v = v > ff ? v : ff;
        diag = h[j];
        h[j] = v;
        f[j] = ff;
        left = v;
        best = v > best ? v : best;
      }
    }
    out[p] = best;
  }
}

/* ---- random pairs ---- */

/* xorshift64*: the pairs depend on the seed only. */
static uint64_t ref_next(uint64_t *st) {
  uint64_t x = *st;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *st = x;
  return x * 0x2545F4914F6CDD1Dull;
}

bool ref_pairs_make(ref_pairs *p, int64_t npairs, int64_t lo, int64_t hi, uint64_t seed) {
  static const char amino[] = "ARNDCQEGHILKMFPSTWYV";
  uint64_t st = seed ? seed : 1;
  *p = (ref_pairs){.npairs = npairs};
  p->so = malloc((size_t)(npairs + 1) * sizeof *p->so);
  p->to = malloc((size_t)(npairs + 1) * sizeof *p->to);
  if (!p->so || !p->to) {
    ref_pairs_free(p);
    return false;
  }
  int64_t total_s = 0, total_t = 0, span = hi - lo + 1;
  p->so[0] = p->to[0] = 0;
  for (int64_t i = 0; i < npairs; i++) {
    int64_t n = lo + (int64_t)(ref_next(&st) % (uint64_t)span);
    int64_t m = lo + (int64_t)(ref_next(&st) % (uint64_t)span);
    p->so[i + 1] = total_s += n;
    p->to[i + 1] = total_t += m;
    p->cells += (double)n * (double)m;
    p->longest = n > p->longest ? n : p->longest;
    p->longest = m > p->longest ? m : p->longest;
  }
  p->s = malloc((size_t)total_s + 1);
  p->t = malloc((size_t)total_t + 1);
  if (!p->s || !p->t) {
    ref_pairs_free(p);
    return false;
  }
  for (int64_t i = 0; i < total_s; i++)
    p->s[i] = (uint8_t)amino[ref_next(&st) % 20];
  for (int64_t i = 0; i < total_t; i++)
    p->t[i] = (uint8_t)amino[ref_next(&st) % 20];
  return true;
}

void ref_pairs_free(ref_pairs *p) {
  free(p->s), free(p->t), free(p->so), free(p->to);
  *p = (ref_pairs){0};
}

bool ref_pairs_scores(const ref_pairs *p, const int32_t *matrix, int32_t gap_open, int32_t extend,
                      int32_t *out) {
  size_t room = (size_t)p->longest + 1;
  int32_t *h = malloc(room * sizeof *h), *f = malloc(room * sizeof *f);
  uint8_t *ra = malloc(room), *rb = malloc(room);
  bool ok = h && f && ra && rb;
  if (ok)
    ref_protein_scores(p->npairs, p->s, p->so, p->t, p->to, matrix, gap_open, extend, out, h, f, ra,
                       rb);
  free(h), free(f), free(ra), free(rb);
  return ok;
}
