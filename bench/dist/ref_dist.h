/* bench/dist/ref_dist.h: the hand-written C+MPI references of the
 * strong-scaling benchmark (ref_dist.c, gcc -O3 -march=native, plain
 * loops, one thread per rank). Every function that communicates adds the
 * bytes it hands to MPI for other ranks to *bytes. */
#ifndef ARRAYC_BENCH_REF_DIST_H
#define ARRAYC_BENCH_REF_DIST_H

#include <mpi.h>
#include <stdint.h>

/* out = a * x + y over this rank's n elements: no communication. */
void refd_saxpy(int64_t n, float a, const float *x, const float *y, float *out);
/* The sum of every rank's x (a local loop in double, then MPI_Allreduce). */
double refd_sum(int64_t n, const double *x, MPI_Comm comm, uint64_t *bytes);

/* A row block of a 2-D grid with one ghost row above and below: rows x
 * cols cells at cells + cols, the ghosts at cells and cells + (rows + 1) *
 * cols (zero at the grid's top and bottom edges). */
typedef struct refd_grid {
  int64_t rows, cols;
  float *cells;
} refd_grid;

/* `steps` Jacobi steps (four neighbours times 0.25, zero boundary: as
 * bench/dist/dist.ac's jacobi) of the grid distributed over comm in row
 * blocks (every rank at least one row): each step sends the block's first
 * and last rows to the neighbouring ranks (MPI_Sendrecv), then computes.
 * The first step reads in (whose cells stay as they were; its ghost rows
 * are written) and writes a, the next ones go from a to b and back.
 * Returns the grid that holds the result (in when steps is 0). */
refd_grid *refd_jacobi(int64_t steps, refd_grid *in, refd_grid *a, refd_grid *b, MPI_Comm comm,
                       uint64_t *bytes);

/* The local steps of the sample sort (the harness does the sampling and the
 * exchange for both sides). An LSD radix sort, 8-bit digits (four counting
 * passes), of n keys in place (tmp: n keys of scratch). */
void refd_radix_sort(int64_t n, uint32_t *keys, uint32_t *tmp);
/* bounds[j]: the number of the sorted keys below splitters[j] (binary search). */
void refd_bucket_bounds(int64_t n, const uint32_t *keys, int nsplit, const uint32_t *splitters,
                        int64_t *bounds);
/* Merges the sorted runs c[off[j] .. off[j+1]), j < nruns, into out,
 * equal keys in run order. */
void refd_merge_runs(int nruns, const int64_t *off, const uint32_t *c, uint32_t *out);

/* The edit distance of s (n bytes) and t (m bytes), every rank holding
 * both: the rows 1..n of the table split over comm's ranks in near-equal
 * blocks, the columns in `tiles` tiles; for each tile a rank receives the
 * last row of the block above (the tile's columns, MPI_Recv), computes its
 * rows two at a time in a rolling buffer, and sends its last row on
 * (MPI_Isend): a wavefront pipelined across ranks. The result on every
 * rank. */
int32_t refd_edit_distance(int64_t n, const uint8_t *s, int64_t m, const uint8_t *t, int tiles,
                           MPI_Comm comm, uint64_t *bytes);

/* STREAM triad a = b + 3c over n doubles; returns seconds. */
double refd_stream_triad(int64_t n, double *a, const double *b, const double *c);

#endif
