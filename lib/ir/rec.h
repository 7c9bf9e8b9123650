/* lib/ir/rec.h: schedules for recurrences (pure integer algorithms).
 *
 * A recurrence `rec (i1 in .., .., in in ..)` whose body reads itself at
 * d[i1 + c1, .., in + cn] has the dependence distance vector v = -c (current
 * index minus referenced index). Components whose index does not have the
 * form i_k + c are "free": the reference may read any index in that
 * dimension. A schedule is an integer vector a with a_k = 0 in every
 * dimension that some dependency leaves free and a . v >= 1 for every
 * dependency (Cartey et al., "Recursion equations to GPU", sections 4.5-4.6):
 * the elements with equal a . x form one wavefront, and every element is
 * computed after the elements it reads.
 *
 * rec_schedule decides existence exactly (Fourier-Motzkin elimination over the
 * rationals: an integer solution exists iff a rational one does, since the
 * constraints a . v >= 1 survive scaling a by an integer >= 1), then finds
 * the valid schedule with the smallest sum |a_k| (fewest wavefronts when
 * extents are unknown) by an exact search: one integer program per sign
 * orthant, whose integer points are enumerated in order of increasing sum
 * with bounds taken from the Fourier-Motzkin projections. Ties are broken
 * towards the lexicographically largest vector, so (1, 1) gives (1, 0).
 * Without dependencies the schedule is all zeros: one wavefront holds the
 * whole array.
 *
 * Dependencies through split points (rec_range, below) vary with the point;
 * each contributes the rows over a that Farkas' lemma leaves, and the same
 * existence test and search run on all rows.
 *
 * Everything is checked 64-bit arithmetic; a problem whose numbers overflow
 * or whose search passes fixed limits is reported, never guessed.
 */
#ifndef ARRAYC_LIB_REC_H
#define ARRAYC_LIB_REC_H

#include "ir.h"

typedef enum rec_status {
  REC_OK,          /* a schedule was found */
  REC_SELF,        /* culprits[0] is a zero vector without free components */
  REC_NONE,        /* no schedule; culprits = a minimal set of conflicting deps */
  REC_TOO_COMPLEX, /* 64-bit overflow or search limits: undecided */
  REC_NOMEM        /* an allocation failed */
} rec_status;

/* A dependency through split points: the reference's indices are affine in
 * the point x and in nt further variables t (the indices of a generate whose
 * extent depends on x, such as the k of d[i, k] + d[k + 1, j]), and t ranges
 * over the polyhedron cons . (x, t) + c >= 0. Component k of the distance is
 *   sum_m vx[k * ndims + m] x_m + sum_q vt[k * nt + q] t_q + dist[dep * ndims + k]
 * (its constant part is the dependency's ordinary dist row). A schedule must
 * satisfy a . v >= 1 for every (x, t) of the polyhedron: by the affine form of
 * Farkas' lemma that is a . v - 1 = l0 + sum_i l_i (cons_i . (x, t) + c_i) with
 * multipliers l >= 0, a system linear in (a, l) from which Fourier-Motzkin
 * removes l, leaving rows over a (Feautrier's method for affine schedules;
 * Cartey et al. restrict themselves to uniform distances). Only the
 * constraints bounding t are given, not the domain's own bounds: the
 * schedule must then hold for every x, which is stronger, hence safe. */
typedef struct rec_range {
  uint32_t dep;        /* the dependency this describes */
  uint32_t nt, ncons;  /* split-point variables and constraints */
  const int64_t *vx;   /* ndims * ndims */
  const int64_t *vt;   /* ndims * nt */
  const int64_t *cons; /* ncons * (ndims + nt + 1), the constant last */
} rec_range;

/* A dependency problem: ndeps vectors of ndims components, row-major.
 * dist[j * ndims + k] is component k of dependency j (ignored where
 * isfree[j * ndims + k] is non-zero). ranges (nranges of them, at most one
 * per dependency) make some dependencies vary with the point. */
typedef struct rec_problem {
  uint32_t ndims, ndeps;
  const int64_t *dist;
  const uint8_t *isfree;
  uint32_t nranges;
  const rec_range *ranges;
} rec_problem;

/* Finds the schedule of p. On REC_OK writes ndims coefficients to sched. On
 * REC_SELF and REC_NONE writes the indices of the dependencies to blame
 * (increasing, at most ndeps of them) to culprits and their number to
 * *nculprits; culprits must have room for ndeps entries. */
rec_status rec_schedule(ac_context *ctx, const rec_problem *p, int64_t *sched, uint32_t *culprits,
                        uint32_t *nculprits);

/* True if sched (ndims coefficients) is a valid schedule for p; false also
 * when deciding needs memory that cannot be had or overflows. */
bool rec_schedule_valid(ac_context *ctx, const rec_problem *p, const int64_t *sched);

/* Exact test: is there a rational (equivalently, integer) vector x of nvars
 * components with rows[j] . x >= 1 for all j < nrows (rows row-major)?
 * Returns REC_OK and sets *feasible, or REC_TOO_COMPLEX / REC_NOMEM. */
rec_status rec_feasible(ac_context *ctx, uint32_t nvars, uint32_t nrows, const int64_t *rows,
                        bool *feasible);

#endif
