/* test/dist/test_dist_exchange.c: the distributed layer's all-to-all
 * primitives (dist/exchange.c: dist_owner, dist_fetch_rows,
 * dist_fetch_elems, dist_repartition, dist_route_elems) under mpirun -np 1
 * .. 4 (ctest dist.exchange.npN).
 *
 * Every rank builds the same full arrays and the same pseudo-random
 * requests of every rank (a fixed seed per rank), so each can compute what
 * it must receive. Shapes of rank 1 to 3, n = 0 and n below the number of
 * ranks, partitions by the rule, skewed (every row on one rank) and random
 * (made with ac_dist_array_from_block); requests in any order, with
 * repeats, none on some ranks; an index out of range on one rank only
 * (the same error everywhere, and the next call works); rows too large
 * for MPI's counts; the bytes counted in bytes_sent. Failures of all ranks are summed; rank 0
 * prints the total.
 */
#include "arrayc/arrayc.h"
#include "arrayc/dist.h"
#include "dist_impl.h"

#include "unit.h"

static ac_context *ctx;
static ac_dist_runtime *rt;
static int me, nranks;

/* ---- helpers ---- */

/* splitmix64: the same sequence on every rank for the same state */
static uint64_t next_rand(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

/* n rows of inner[0] x inner[1] (as rank says) elements of type t,
 * element k holding k % 2 (bool) or k + 1 (others, as t). */
static ac_array *make_full(ac_scalar t, unsigned rank, int64_t n) {
  int64_t ext[3] = {n, 3, 2};
  int64_t count = n;
  for (unsigned d = 1; d < rank; d++)
    count *= ext[d];
  size_t es = ac_scalar_size(t);
  unsigned char *buf = calloc(count ? (size_t)count : 1, es);
  for (int64_t k = 0; k < count; k++) {
    unsigned char *p = buf + (size_t)k * es;
    if (t == AC_BOOL) {
      *p = (unsigned char)(k % 2);
    } else if (t == AC_F64) {
      double v = (double)k + 1.5;
      memcpy(p, &v, 8);
    } else {
      uint64_t v = (uint64_t)k + 1;
      memcpy(p, &v, es); /* little-endian host */
    }
  }
  ac_array *a = ac_array_create(ctx, t, rank, ext, buf, NULL);
  free(buf);
  return a;
}

typedef enum part_kind { PART_RULE, PART_FIRST, PART_LAST, PART_RANDOM } part_kind;

/* A partition of n rows (size + 1 entries, the same on every rank). */
static void make_partition(part_kind kind, int64_t n, uint64_t seed, int64_t *off) {
  off[0] = 0;
  for (int r = 0; r < nranks; r++) {
    int64_t lo, hi;
    ac_dist_partition(n, nranks, r, &lo, &hi);
    off[r + 1] = kind == PART_RULE ? hi : kind == PART_FIRST ? n : kind == PART_LAST ? 0 : 0;
  }
  off[nranks] = n;
  if (kind == PART_RANDOM) {
    /* sorted cut points, so some blocks are empty */
    for (int r = 1; r < nranks; r++)
      off[r] = n ? (int64_t)(next_rand(&seed) % (uint64_t)(n + 1)) : 0;
    for (int i = 1; i < nranks; i++)
      for (int j = i; j > 1 && off[j - 1] > off[j]; j--) {
        int64_t t = off[j];
        off[j] = off[j - 1];
        off[j - 1] = t;
      }
  }
}

/* full distributed by the partition off (through from_block, so that the
 * partition need not be the rule's). */
static ac_dist_array *distribute(const ac_array *full, const int64_t *off) {
  ac_error *e = NULL;
  ac_array *block = dist_rows(ctx, full, off[me], off[me + 1], &e);
  ac_dist_array *a = NULL;
  CHECK(block && ac_dist_array_from_block(rt, block, &a, &e) == AC_OK);
  ac_array_release(block);
  if (e)
    fprintf(stderr, "rank %d: %s", me, ac_error_text(e));
  ac_error_destroy(e);
  if (a)
    for (int r = 0; r <= nranks; r++)
      CHECK_EQ_INT(ac_dist_array_offsets(a)[r], off[r]);
  return a;
}

/* Rank r's requests: up to 16 indices in [0, bound) (none on rank 1, and
 * none when bound is 0), in random order with repeats. */
static int64_t requests(uint64_t seed, int r, int64_t bound, int64_t *idx) {
  uint64_t s = seed * 1000003u + (uint64_t)r;
  int64_t count = r == 1 || bound == 0 ? 0 : (int64_t)(next_rand(&s) % 17);
  for (int64_t k = 0; k < count; k++)
    idx[k] = (int64_t)(next_rand(&s) % (uint64_t)bound);
  return count;
}

static size_t row_bytes(const ac_array *a) {
  int64_t n = ac_array_extents(a)[0];
  return n ? (size_t)ac_array_size(a) / (size_t)n * ac_scalar_size(ac_array_type(a)) : 0;
}

static const ac_scalar types[] = {AC_I32, AC_F64, AC_BOOL, AC_I8};
static const part_kind kinds[] = {PART_RULE, PART_FIRST, PART_LAST, PART_RANDOM};

/* ---- dist_owner ---- */

static void test_owner_skips_empty_blocks(void) {
  const int64_t off[6] = {0, 0, 3, 3, 3, 5};
  for (int64_t row = 0; row < 5; row++)
    CHECK_EQ_INT(dist_owner(off, 5, row), row < 3 ? 1 : 4);
  const int64_t one[2] = {0, 7};
  CHECK_EQ_INT(dist_owner(one, 1, 6), 0);
  /* random partitions against a linear search */
  uint64_t s = 7;
  for (int t = 0; t < 200; t++) {
    int64_t p[9];
    int size = 1 + (int)(next_rand(&s) % 8);
    p[0] = 0;
    for (int r = 1; r <= size; r++)
      p[r] = p[r - 1] + (int64_t)(next_rand(&s) % 3);
    for (int64_t row = 0; row < p[size]; row++) {
      int want = 0;
      while (!(p[want] <= row && row < p[want + 1]))
        want++;
      CHECK_EQ_INT(dist_owner(p, size, row), want);
    }
  }
}

/* ---- fetching ---- */

/* Random requests of rows, then of elements, over shapes, types and
 * partitions: what arrives is the full array's, in the order asked. */
static void test_fetch_random_requests_every_partition(void) {
  int64_t sizes[] = {0, 1, nranks > 1 ? nranks - 1 : 2, 13};
  uint64_t seed = 1;
  for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++)
    for (unsigned rank = 1; rank <= 3; rank++)
      for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
        for (size_t ki = 0; ki < sizeof kinds / sizeof kinds[0]; ki++, seed++) {
          int64_t n = sizes[si], off[9];
          make_partition(kinds[ki], n, seed, off);
          ac_array *full = make_full(types[ti], rank, n);
          ac_dist_array *a = distribute(full, off);
          if (!a) {
            ac_array_release(full);
            continue;
          }
          size_t row = row_bytes(full), es = ac_scalar_size(types[ti]);
          const char *all = ac_array_data(full);
          int64_t idx[16];
          ac_error *e = NULL;
          /* rows */
          int64_t count = requests(seed, me, n, idx);
          ac_array *got = NULL;
          CHECK(dist_fetch_rows(rt, a, idx, count, &got, &e) == AC_OK);
          if (got) {
            CHECK(ac_array_type(got) == types[ti] && ac_array_rank(got) == rank);
            CHECK_EQ_INT(ac_array_extents(got)[0], count);
            for (unsigned d = 1; d < rank; d++)
              CHECK_EQ_INT(ac_array_extents(got)[d], ac_array_extents(full)[d]);
            const char *data = ac_array_data(got);
            for (int64_t k = 0; k < count && row; k++)
              CHECK(memcmp(data + (size_t)k * row, all + (size_t)idx[k] * row, row) == 0);
          }
          ac_array_release(got);
          got = NULL;
          /* elements */
          count = requests(seed + 500, me, ac_array_size(full), idx);
          CHECK(dist_fetch_elems(rt, a, idx, count, &got, &e) == AC_OK);
          if (got) {
            CHECK(ac_array_rank(got) == 1 && ac_array_extents(got)[0] == count);
            const char *data = ac_array_data(got);
            for (int64_t k = 0; k < count; k++)
              CHECK(memcmp(data + (size_t)k * es, all + (size_t)idx[k] * es, es) == 0);
          }
          ac_array_release(got);
          if (e)
            fprintf(stderr, "rank %d: %s", me, ac_error_text(e));
          ac_error_destroy(e);
          ac_dist_array_destroy(a);
          ac_array_release(full);
        }
}

/* Rows of no elements (n x 0): the shape alone comes back. */
static void test_fetch_rows_without_elements(void) {
  int64_t ext[2] = {2 * nranks, 0}, idx[3] = {0, 2 * nranks - 1, 0};
  ac_array *full = ac_array_create(ctx, AC_F32, 2, ext, NULL, NULL);
  ac_dist_array *a = NULL;
  CHECK(ac_dist_array_from_full(rt, full, &a, NULL) == AC_OK);
  ac_array *got = NULL;
  ac_error *e = NULL;
  CHECK(a && dist_fetch_rows(rt, a, idx, 3, &got, NULL) == AC_OK);
  CHECK(got && ac_array_extents(got)[0] == 3 && ac_array_extents(got)[1] == 0);
  ac_array_release(got);
  got = NULL;
  /* and no element index is in range */
  CHECK(a && dist_fetch_elems(rt, a, idx, 1, &got, &e) == AC_ERR_RUNTIME && !got);
  ac_error_destroy(e);
  ac_dist_array_destroy(a);
  ac_array_release(full);
}

/* Fetching only your own rows sends nothing; fetching the next rank's
 * first row makes that rank send exactly one row. */
static void test_fetch_bytes_sent(void) {
  int64_t n = 2 * nranks, off[9];
  make_partition(PART_RULE, n, 0, off);
  ac_array *full = make_full(AC_F64, 2, n);
  ac_dist_array *a = distribute(full, off);
  if (!a) {
    ac_array_release(full);
    return;
  }
  size_t row = row_bytes(full);
  const char *all = ac_array_data(full);
  int64_t own[2] = {off[me + 1] - 1, off[me]};
  ac_array *got = NULL;
  uint64_t before = ac_dist_runtime_bytes_sent(rt);
  CHECK(dist_fetch_rows(rt, a, own, 2, &got, NULL) == AC_OK);
  CHECK_EQ_INT(ac_dist_runtime_bytes_sent(rt), before);
  CHECK(got && memcmp(ac_array_data(got), all + (size_t)own[0] * row, row) == 0);
  ac_array_release(got);
  got = NULL;
  int64_t next = off[(me + 1) % nranks];
  before = ac_dist_runtime_bytes_sent(rt);
  CHECK(dist_fetch_rows(rt, a, &next, 1, &got, NULL) == AC_OK);
  CHECK_EQ_INT(ac_dist_runtime_bytes_sent(rt) - before, nranks > 1 ? row : 0);
  CHECK(got && memcmp(ac_array_data(got), all + (size_t)next * row, row) == 0);
  ac_array_release(got);
  ac_dist_array_destroy(a);
  ac_array_release(full);
}

/* The status and message every rank must get, and the same text on all. */
static void check_same_error(ac_status st, ac_error *e, const char *want) {
  CHECK(st == AC_ERR_RUNTIME);
  CHECK(e && strstr(ac_error_message(e), want) != NULL);
  if (e && !strstr(ac_error_message(e), want))
    fprintf(stderr, "rank %d: %s", me, ac_error_text(e));
  char mine[256] = "", root[256];
  if (e)
    snprintf(mine, sizeof mine, "%s", ac_error_message(e));
  memcpy(root, mine, sizeof mine);
  MPI_Bcast(root, sizeof root, MPI_CHAR, 0, MPI_COMM_WORLD);
  CHECK(strcmp(mine, root) == 0);
}

/* An index out of range on the last rank alone: the same error on every
 * rank, nothing moved, and the next call works. */
static void test_out_of_range_on_one_rank_fails_everywhere(void) {
  int64_t n = nranks + 2, off[9];
  make_partition(PART_RULE, n, 0, off);
  ac_array *full = make_full(AC_I32, 2, n);
  ac_dist_array *a = distribute(full, off);
  if (!a) {
    ac_array_release(full);
    return;
  }
  bool last = me == nranks - 1;
  int64_t idx[2] = {0, last ? n : 1};
  ac_array *got = NULL;
  ac_error *e = NULL;
  char want[64];
  snprintf(want, sizeof want, "row index %lld out of bounds (%lld rows)", (long long)n,
           (long long)n);
  ac_status st = dist_fetch_rows(rt, a, idx, 2, &got, &e);
  check_same_error(st, e, want);
  CHECK(got == NULL);
  ac_error_destroy(e);
  e = NULL;
  idx[1] = last ? -1 : 1;
  st = dist_fetch_elems(rt, a, idx, 2, &got, &e);
  check_same_error(st, e, "element index -1");
  CHECK(got == NULL);
  ac_error_destroy(e);
  e = NULL;
  int64_t *ridx = NULL, vals[2] = {5, 6}, nrecv = 7;
  void *rvals = NULL;
  idx[1] = last ? 3 * n : 1;
  st = dist_route_elems(rt, off, 3, 8, idx, vals, 2, &ridx, &rvals, &nrecv, &e);
  check_same_error(st, e, "out of bounds");
  CHECK(ridx == NULL && rvals == NULL && nrecv == 0);
  ac_error_destroy(e);
  /* nobody was left waiting */
  idx[1] = 1;
  CHECK(dist_fetch_rows(rt, a, idx, 2, &got, NULL) == AC_OK);
  CHECK(got && memcmp(ac_array_data(got), ac_array_data(full), 12) == 0);
  ac_array_release(got);
  ac_dist_array_destroy(a);
  ac_array_release(full);
}

/* A row of more bytes than an MPI count holds (an empty array of rows of
 * 2^31 bools): a clear error on every rank, not a truncated count. */
static void test_rows_too_large_for_mpi_fail_clearly(void) {
  int64_t ext[2] = {0, (int64_t)1 << 31};
  ac_array *full = ac_array_create(ctx, AC_BOOL, 2, ext, NULL, NULL);
  ac_dist_array *a = NULL, *b = NULL;
  CHECK(full && ac_dist_array_from_full(rt, full, &a, NULL) == AC_OK);
  if (!a) {
    ac_array_release(full);
    return;
  }
  ac_array *got = NULL;
  ac_error *e = NULL;
  CHECK(dist_fetch_rows(rt, a, NULL, 0, &got, &e) == AC_ERR_UNSUPPORTED && !got);
  CHECK(e && strstr(ac_error_message(e), "too large for one MPI message") != NULL);
  ac_error_destroy(e);
  e = NULL;
  int64_t off[9] = {0};
  CHECK(dist_repartition(rt, a, off, &b, &e) == AC_ERR_UNSUPPORTED && !b);
  CHECK(e && strstr(ac_error_message(e), "too large for one MPI message") != NULL);
  ac_error_destroy(e);
  /* elements are small: fetching none of them works */
  CHECK(dist_fetch_elems(rt, a, NULL, 0, &got, NULL) == AC_OK);
  CHECK(got && ac_array_size(got) == 0);
  ac_array_release(got);
  ac_dist_array_destroy(a);
  ac_array_release(full);
}

/* ---- repartitioning ---- */

/* Every partition to every other (the rule, all rows on the first or the
 * last rank, random ones): the same global contents, the new partition,
 * and bytes_sent counting exactly the rows that leave this rank. */
static void test_repartition_between_partitions(void) {
  int64_t sizes[] = {0, 1, nranks > 1 ? nranks - 1 : 2, 11};
  uint64_t seed = 99;
  for (unsigned rank = 1; rank <= 3; rank++)
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
      for (size_t from = 0; from < 4; from++)
        for (size_t to = 0; to < 4; to++, seed++) {
          int64_t n = sizes[si], src[9], dst[9];
          make_partition(kinds[from], n, seed, src);
          make_partition(kinds[to], n, seed * 7, dst);
          ac_scalar t = types[(si + to) % 4];
          ac_array *full = make_full(t, rank, n);
          ac_dist_array *a = distribute(full, src), *b = NULL;
          if (!a) {
            ac_array_release(full);
            continue;
          }
          ac_error *e = NULL;
          uint64_t before = ac_dist_runtime_bytes_sent(rt);
          CHECK(dist_repartition(rt, a, dst, &b, &e) == AC_OK);
          if (e)
            fprintf(stderr, "rank %d: %s", me, ac_error_text(e));
          ac_error_destroy(e);
          if (b) {
            /* the rows of mine that are someone else's now */
            int64_t lo = src[me], hi = src[me + 1], keep_lo = dst[me], keep_hi = dst[me + 1];
            int64_t kept = (hi < keep_hi ? hi : keep_hi) - (lo > keep_lo ? lo : keep_lo);
            int64_t left = hi - lo - (kept > 0 ? kept : 0);
            CHECK_EQ_INT(ac_dist_runtime_bytes_sent(rt) - before, (uint64_t)left * row_bytes(full));
            for (int r = 0; r <= nranks; r++)
              CHECK_EQ_INT(ac_dist_array_offsets(b)[r], dst[r]);
            CHECK_EQ_INT(ac_array_extents(ac_dist_array_block(b))[0], dst[me + 1] - dst[me]);
            CHECK(ac_dist_array_type(b) == t && ac_dist_array_rank(b) == rank);
            ac_array *back = NULL;
            CHECK(ac_dist_array_gather(rt, b, AC_DIST_ALL, &back, NULL) == AC_OK);
            size_t bytes = (size_t)ac_array_size(full) * ac_scalar_size(t);
            CHECK(back && ac_array_size(back) == ac_array_size(full) &&
                  (bytes == 0 || memcmp(ac_array_data(back), ac_array_data(full), bytes) == 0));
            ac_array_release(back);
          }
          ac_dist_array_destroy(b);
          ac_dist_array_destroy(a);
          ac_array_release(full);
        }
}

/* A partition that does not cover the array is the same error everywhere. */
static void test_repartition_rejects_bad_partition(void) {
  int64_t n = 5, off[9];
  make_partition(PART_RULE, n, 0, off);
  ac_array *full = make_full(AC_I32, 1, n);
  ac_dist_array *a = distribute(full, off), *b = NULL;
  off[nranks] = n + 1;
  ac_error *e = NULL;
  CHECK(a && dist_repartition(rt, a, off, &b, &e) == AC_ERR_INVALID && !b);
  CHECK(e && strstr(ac_error_message(e), "partition") != NULL);
  ac_error_destroy(e);
  ac_dist_array_destroy(a);
  ac_array_release(full);
}

/* ---- routing ---- */

/* Every rank routes random (index, value) pairs, the value naming the
 * sender and the pair's position; each receives exactly the pairs in its
 * block, by sending rank, then in the sender's order, with local indices. */
static void test_route_elems_order(void) {
  uint64_t seed = 4242;
  for (size_t ki = 0; ki < 4; ki++)
    for (int64_t n = 0; n <= 9; n += 3, seed++) {
      int64_t off[9], row_elems = 3, idx[16];
      make_partition(kinds[ki], n, seed, off);
      int64_t count = requests(seed, me, n * row_elems, idx);
      int64_t vals[16];
      for (int64_t k = 0; k < count; k++)
        vals[k] = me * 1000 + k;
      int64_t *ridx = NULL, nrecv = -1;
      void *rvals = NULL;
      uint64_t before = ac_dist_runtime_bytes_sent(rt);
      ac_error *e = NULL;
      CHECK(dist_route_elems(rt, off, row_elems, sizeof(int64_t), idx, vals, count, &ridx, &rvals,
                             &nrecv, &e) == AC_OK);
      ac_error_destroy(e);
      /* what every rank sent, replayed here */
      int64_t want = 0, sent = 0, base = off[me] * row_elems;
      for (int s = 0; s < nranks; s++) {
        int64_t sidx[16], c = requests(seed, s, n * row_elems, sidx);
        for (int64_t k = 0; k < c; k++) {
          int o = dist_owner(off, nranks, sidx[k] / row_elems);
          if (s == me && o != me)
            sent++;
          if (o != me)
            continue;
          if (want < nrecv) {
            CHECK_EQ_INT(ridx[want], sidx[k] - base);
            CHECK_EQ_INT(((const int64_t *)rvals)[want], s * 1000 + k);
          }
          want++;
        }
      }
      CHECK_EQ_INT(nrecv, want);
      CHECK(want > 0 || (ridx == NULL && rvals == NULL));
      CHECK_EQ_INT(ac_dist_runtime_bytes_sent(rt) - before, sent * 8);
      free(ridx);
      free(rvals);
    }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  if (nranks > 8) {
    if (me == 0)
      printf("dist exchange: at most 8 ranks (the partitions are on the stack)\n");
    MPI_Finalize();
    return 1;
  }
  ctx = ac_context_create();
  ac_error *e = NULL;
  if (ac_dist_runtime_create(ctx, MPI_COMM_WORLD, AC_BACKEND_CPU, &rt, &e) != AC_OK) {
    fprintf(stderr, "rank %d: %s", me, ac_error_text(e));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  test_owner_skips_empty_blocks();
  test_fetch_random_requests_every_partition();
  test_fetch_rows_without_elements();
  test_fetch_bytes_sent();
  test_out_of_range_on_one_rank_fails_everywhere();
  test_rows_too_large_for_mpi_fail_clearly();
  test_repartition_between_partitions();
  test_repartition_rejects_bad_partition();
  test_route_elems_order();
  ac_dist_runtime_destroy(rt);
  ac_context_destroy(ctx);
  int failed = 0;
  MPI_Allreduce(&unit_failed_checks, &failed, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (me == 0)
    printf("dist exchange on %d rank%s: %d failed check%s\n", nranks, nranks == 1 ? "" : "s",
           failed, failed == 1 ? "" : "s");
  MPI_Finalize();
  return failed ? 1 : 0;
}
