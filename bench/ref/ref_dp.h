/* bench/ref/ref_dp.h: the recurrence references (ref_dp.c), for
 * arrayc-bench and the test suite. */
#ifndef ARRAYC_BENCH_REF_DP_H
#define ARRAYC_BENCH_REF_DP_H

#include <stdbool.h>
#include <stdint.h>

/* Edit distance (unit costs) and the Smith-Waterman score (match 3,
 * mismatch -3, linear gap 2) of s (n bytes) and t (m bytes), one thread,
 * row by row in prev and cur (m + 1 elements each). */
int32_t ref_edit_distance(int64_t n, const uint8_t *s, int64_t m, const uint8_t *t, int32_t *prev,
                          int32_t *cur);
int32_t ref_smith_waterman(int64_t n, const uint8_t *s, int64_t m, const uint8_t *t, int32_t *prev,
                           int32_t *cur);
/* The Smith-Waterman score and the first cell in row-major order that
 * reaches it (*at: i, j; (0, 0) when every cell is 0), as
 * bench/programs/smith_waterman_at.ac. */
int32_t ref_smith_waterman_at(int64_t n, const uint8_t *s, int64_t m, const uint8_t *t,
                              int32_t *prev, int32_t *cur, int64_t *at);
/* Smith-Waterman scores of a batch of protein pairs with a 21 x 21
 * substitution matrix (row-major, residues ARNDCQEGHILKMFPSTWYV then X for
 * any other letter) and affine gaps (Gotoh: a gap of length k costs
 * gap_open + (k - 1) * extend), as examples/recurrences/protein.ac's
 * `scores`: pair p is s[so[p]..so[p + 1]] against t[to[p]..to[p + 1]],
 * letters in ASCII. One thread, each pair row by row in two rows; h and f
 * need room for the longest t plus one, ra and rb for the longest s and t. */
void ref_protein_scores(int64_t npairs, const uint8_t *s, const int64_t *so, const uint8_t *t,
                        const int64_t *to, const int32_t *matrix, int32_t gap_open, int32_t extend,
                        int32_t *out, int32_t *h, int32_t *f, uint8_t *ra, uint8_t *rb);

/* A batch of random protein pairs: pair p is s[so[p]..so[p + 1]] against
 * t[to[p]..to[p + 1]], letters of ARNDCQEGHILKMFPSTWYV in ASCII, each
 * length uniform in lo..hi, all of it fixed by the seed. cells is the sum
 * of n m over the pairs, longest the longest sequence. */
typedef struct ref_pairs {
  int64_t npairs;
  uint8_t *s, *t;
  int64_t *so, *to;
  double cells;
  int64_t longest;
} ref_pairs;
/* false (and nothing allocated) if memory runs out. */
bool ref_pairs_make(ref_pairs *p, int64_t npairs, int64_t lo, int64_t hi, uint64_t seed);
void ref_pairs_free(ref_pairs *p);
/* ref_protein_scores of the batch, with its own rows; false if memory runs
 * out. */
bool ref_pairs_scores(const ref_pairs *p, const int32_t *matrix, int32_t gap_open, int32_t extend,
                      int32_t *out);

#endif
