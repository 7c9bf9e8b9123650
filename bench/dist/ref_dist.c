/* bench/dist/ref_dist.c: the C+MPI references of the strong-scaling
 * benchmark (bench/dist/bench_dist.c times arrayc against them).
 *
 * The loops a careful C programmer writes for one rank of an MPI program,
 * compiled -O3 -march=native whatever arrayc's build type, one thread per
 * rank. The Jacobi step exchanges halo rows with its neighbours (two rows
 * per internal block boundary: the minimum); the sum reduces one double per
 * rank; the sample sort's local steps are an 8-bit LSD radix sort, binary
 * searches and a merge of the received runs. Bytes handed to MPI for other
 * ranks are counted, so the report can set them beside arrayc's.
 */
#include "ref_dist.h"

#include <stdlib.h>
#include <string.h>

void refd_saxpy(int64_t n, float a, const float *x, const float *y, float *out) {
  for (int64_t i = 0; i < n; i++)
    out[i] = a * x[i] + y[i];
}

double refd_sum(int64_t n, const double *x, MPI_Comm comm, uint64_t *bytes) {
  double s = 0;
  for (int64_t i = 0; i < n; i++)
    s += x[i];
  int size;
  MPI_Comm_size(comm, &size);
  double total;
  MPI_Allreduce(&s, &total, 1, MPI_DOUBLE, MPI_SUM, comm);
  if (size > 1)
    *bytes += sizeof s;
  return total;
}

/* Sends the first and last rows to the neighbours and receives their
 * edge rows into the ghosts; at the grid's edges the ghosts stay zero. */
static void halo_exchange(refd_grid *g, MPI_Comm comm, uint64_t *bytes) {
  int me, size;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &size);
  int up = me > 0 ? me - 1 : MPI_PROC_NULL, down = me < size - 1 ? me + 1 : MPI_PROC_NULL;
  int64_t c = g->cols;
  float *first = g->cells + c, *last = g->cells + g->rows * c;
  /* the first row goes up while the row below's first row comes into the
   * lower ghost, then the other way */
  MPI_Sendrecv(first, (int)c, MPI_FLOAT, up, 0, last + c, (int)c, MPI_FLOAT, down, 0, comm,
               MPI_STATUS_IGNORE);
  MPI_Sendrecv(last, (int)c, MPI_FLOAT, down, 1, g->cells, (int)c, MPI_FLOAT, up, 1, comm,
               MPI_STATUS_IGNORE);
  *bytes += (uint64_t)((up != MPI_PROC_NULL) + (down != MPI_PROC_NULL)) * (uint64_t)c * 4;
}

static void jacobi_step(const refd_grid *in, refd_grid *out) {
  int64_t c = in->cols;
  for (int64_t r = 1; r <= in->rows; r++) {
    const float *n = in->cells + (r - 1) * c, *m = in->cells + r * c, *s = in->cells + (r + 1) * c;
    float *o = out->cells + r * c;
    /* north + south + west + east, the program's order; 0 outside */
    if (c == 1) {
      o[0] = 0.25f * (n[0] + s[0] + 0.0f + 0.0f);
      continue;
    }
    o[0] = 0.25f * (n[0] + s[0] + 0.0f + m[1]);
    for (int64_t j = 1; j < c - 1; j++)
      o[j] = 0.25f * (n[j] + s[j] + m[j - 1] + m[j + 1]);
    o[c - 1] = 0.25f * (n[c - 1] + s[c - 1] + m[c - 2] + 0.0f);
  }
}

refd_grid *refd_jacobi(int64_t steps, refd_grid *in, refd_grid *a, refd_grid *b, MPI_Comm comm,
                       uint64_t *bytes) {
  refd_grid *src = in;
  for (int64_t k = 0; k < steps; k++) {
    refd_grid *dst = k % 2 ? b : a;
    halo_exchange(src, comm, bytes);
    jacobi_step(src, dst);
    src = dst;
  }
  return src;
}

void refd_radix_sort(int64_t n, uint32_t *keys, uint32_t *tmp) {
  uint32_t *src = keys, *dst = tmp;
  for (int shift = 0; shift < 32; shift += 8) {
    int64_t count[257] = {0};
    for (int64_t i = 0; i < n; i++)
      count[((src[i] >> shift) & 255) + 1]++;
    for (int d = 0; d < 256; d++)
      count[d + 1] += count[d];
    for (int64_t i = 0; i < n; i++)
      dst[count[(src[i] >> shift) & 255]++] = src[i];
    uint32_t *t = src;
    src = dst;
    dst = t;
  }
  /* four passes: the keys are back in `keys` */
}

void refd_bucket_bounds(int64_t n, const uint32_t *keys, int nsplit, const uint32_t *splitters,
                        int64_t *bounds) {
  for (int j = 0; j < nsplit; j++) {
    int64_t lo = 0, hi = n;
    while (lo < hi) {
      int64_t mid = (lo + hi) / 2;
      if (keys[mid] < splitters[j])
        lo = mid + 1;
      else
        hi = mid;
    }
    bounds[j] = lo;
  }
}

void refd_merge_runs(int nruns, const int64_t *off, const uint32_t *c, uint32_t *out) {
  int64_t head[64], k = 0;
  for (int j = 0; j < nruns; j++)
    head[j] = off[j];
  for (;;) {
    /* the smallest head, the earliest run on ties (few runs: a scan) */
    int best = -1;
    for (int j = 0; j < nruns; j++)
      if (head[j] < off[j + 1] && (best < 0 || c[head[j]] < c[head[best]]))
        best = j;
    if (best < 0)
      break;
    out[k++] = c[head[best]++];
  }
}

double refd_stream_triad(int64_t n, double *a, const double *b, const double *c) {
  double t0 = MPI_Wtime();
  for (int64_t i = 0; i < n; i++)
    a[i] = b[i] + 3.0 * c[i];
  return MPI_Wtime() - t0;
}

int32_t refd_edit_distance(int64_t n, const uint8_t *s, int64_t m, const uint8_t *t, int tiles,
                           MPI_Comm comm, uint64_t *bytes) {
  int R, me;
  MPI_Comm_size(comm, &R);
  MPI_Comm_rank(comm, &me);
  int64_t base = n / R, rem = n % R;
  int64_t lo = 1 + me * base + (me < rem ? me : rem), rows = base + (me < rem ? 1 : 0);
  int prev = me - 1, next = me + 1; /* the neighbours holding rows (n < R: some hold none) */
  while (prev >= 0 && base == 0 && prev >= rem)
    prev--;
  if (base == 0 && next >= rem)
    next = R;
  if (tiles > m)
    tiles = m > 0 ? (int)m : 1;
  int64_t wide = (m + tiles - 1) / tiles;
  int32_t *left = malloc((size_t)(rows ? rows : 1) * 4);
  int32_t *seg = malloc((size_t)(wide + 1) * 4), *cur = malloc((size_t)(wide + 1) * 4);
  int32_t *out = malloc((size_t)(m ? m : 1) * 4); /* the last row, sent tile by tile */
  MPI_Request *req = malloc((size_t)tiles * sizeof *req);
  int nreq = 0;
  for (int64_t k = 0; k < rows; k++)
    left[k] = (int32_t)(lo + k); /* d[i][0] = i */
  int32_t corner = (int32_t)(lo - 1), last = 0;
  for (int k = 0; k < tiles && rows > 0; k++) {
    int64_t c0 = 1 + k * (m / tiles) + (k < m % tiles ? k : m % tiles);
    int64_t w = m / tiles + (k < m % tiles ? 1 : 0);
    /* the row above the block: d[0][c] = c on the first rank */
    if (prev < 0) {
      for (int64_t x = 1; x <= w; x++)
        seg[x] = (int32_t)(c0 + x - 1);
    } else {
      MPI_Recv(seg + 1, (int)w, MPI_INT32_T, prev, k, comm, MPI_STATUS_IGNORE);
    }
    seg[0] = corner;
    corner = seg[w];
    for (int64_t r = 0; r < rows; r++) {
      uint8_t a = s[lo + r - 1];
      cur[0] = left[r];
      for (int64_t x = 1; x <= w; x++) {
        int32_t up = seg[x] + 1, lf = cur[x - 1] + 1, dg = seg[x - 1] + (a != t[c0 + x - 2]);
        int32_t v = up < lf ? up : lf;
        cur[x] = v < dg ? v : dg;
      }
      left[r] = cur[w];
      int32_t *tmp = seg;
      seg = cur;
      cur = tmp;
    }
    last = seg[w];
    if (next < R) {
      memcpy(out + (c0 - 1), seg + 1, (size_t)w * 4);
      MPI_Isend(out + (c0 - 1), (int)w, MPI_INT32_T, next, k, comm, &req[nreq++]);
      *bytes += (uint64_t)w * 4;
    }
  }
  MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE);
  /* d[n][m]: the last rank holding rows (m = 0: n; n = 0: m) */
  int32_t mine = rows > 0 && next >= R ? (m > 0 ? last : (int32_t)n) : INT32_MIN, d = 0;
  MPI_Allreduce(&mine, &d, 1, MPI_INT32_T, MPI_MAX, comm);
  free(left);
  free(seg);
  free(cur);
  free(out);
  free(req);
  return n == 0 ? (int32_t)m : d;
}
