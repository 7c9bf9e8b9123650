/* lib/ir/rec.c: exact schedule search for recurrences.
 *
 * The problem (see rec.h): given dependence distance vectors v_j, find an
 * integer vector a with a . v_j >= 1 for all j (at every point, for split
 * points), a_k = 0 in free dimensions, and the smallest sum |a_k|. This file knows nothing about the IR: the
 * verifier (check_rec.c) extracts the vectors and stores the result.
 *
 * Method.
 *  1. Free dimensions are dropped; a dependency that becomes the zero vector
 *     can never be satisfied (a . v = 0): it reads itself (REC_SELF) or may
 *     read itself through a free dimension (REC_NONE).
 *  2. Existence: Fourier-Motzkin elimination of every variable from the rows
 *     v_j . a >= 1. Rows are kept as integer vectors divided by the gcd of
 *     their coefficients, the right-hand side rounded up: a cut valid for
 *     integer points, and harmless for existence because the system has an
 *     integer solution whenever it has a rational one (scale by the common
 *     denominator; every right-hand side is positive). When there is no
 *     solution, a deletion filter shrinks the dependencies to a minimal
 *     conflicting set, which the diagnostic names.
 *  3. Minimisation: for each sign orthant a = sigma * b, b >= 0, the integer
 *     program "sum b = s, (sigma * v_j) . b >= 1" is projected onto (s),
 *     (s, b_1), .., (s, b_1..b_n) by Fourier-Motzkin. The lower bound of s in
 *     the first projection starts the search; for each s in increasing order
 *     the integer points are enumerated coordinate by coordinate inside the
 *     projected bounds (the last projection is the system itself, so a point
 *     that reaches the last level is a solution). The first s with a
 *     solution is the optimum. Within each orthant values are tried from the
 *     largest a_k down, so the first point found is the orthant's
 *     lexicographically largest; the largest over all orthants is chosen.
 *     Bounded enumeration alone would not be complete (the optimum can be
 *     far from the origin, e.g. (11, 2) for the vectors (1, -5), (-1, 6));
 *     the projections make the search start at the optimum's level.
 *
 * Split-point dependencies (rec_range) enter as rows with other right-hand
 * sides than 1: farkas_rows builds the system in (a, l) of rec.h and
 * eliminates the multipliers l over the rationals; steps 2 and 3 then run on
 * the rows of all dependencies (a rowset, each row tagged with its
 * dependency for the deletion filter).
 *
 * All arithmetic is checked; overflow, more than REC_MAX_ROWS rows in a
 * projection or more than REC_BUDGET search steps give REC_TOO_COMPLEX.
 */
#include "rec.h"

#include <string.h>

enum {
  REC_MAX_DIMS = 8,                              /* non-free dimensions handled by the search (2^8 orthants) */
  REC_MAX_CONS = 8,                              /* constraints of one split-point dependency */
  FM_MAX_VARS = REC_MAX_DIMS + REC_MAX_CONS + 1, /* variables of one Fourier-Motzkin system */
  REC_MAX_ROWS = 4096,                           /* rows of one Fourier-Motzkin system */
  REC_BUDGET = 1u << 22                          /* enumeration steps of one search */
};

/* ---- checked arithmetic (INT64_MIN is never produced, so negation is safe) ---- */

static bool ck_add(int64_t a, int64_t b, int64_t *r) {
  if ((b > 0 && a > INT64_MAX - b) || (b < 0 && a <= INT64_MIN - b))
    return false;
  *r = a + b;
  return true;
}

static bool ck_mul(int64_t a, int64_t b, int64_t *r) {
  if (a == 0 || b == 0) {
    *r = 0;
    return true;
  }
  if (a == INT64_MIN || b == INT64_MIN)
    return false;
  int64_t ua = a < 0 ? -a : a, ub = b < 0 ? -b : b;
  if (ua > INT64_MAX / ub)
    return false;
  *r = a * b;
  return true;
}

static int64_t gcd64(int64_t a, int64_t b) { /* a, b >= 0 */
  while (b) {
    int64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/* floor(a / b) and ceil(a / b) for b != 0, a and b not INT64_MIN. */
static int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0)))
    q--;
  return q;
}

static int64_t ceil_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if (a % b != 0 && ((a < 0) == (b < 0)))
    q++;
  return q;
}

/* ---- Fourier-Motzkin systems ----
 * A row holds nv coefficients and a right-hand side: sum c_k x_k >= rhs. */

typedef struct fm_sys {
  uint32_t nv, nr;
  size_t cap;      /* rows allocated */
  int64_t *c;      /* nr * (nv + 1) */
  bool infeasible; /* a row 0 >= r with r > 0 was derived */
  bool rational;   /* variables are rational: rows are scaled exactly, never rounded */
} fm_sys;

static void fm_init(fm_sys *s, uint32_t nv) {
  memset(s, 0, sizeof *s);
  s->nv = nv;
}

static void fm_free(ac_context *ctx, fm_sys *s) {
  ac_free(ctx, s->c);
  s->c = NULL;
  s->nr = 0;
  s->cap = 0;
}

static int64_t *fm_row(const fm_sys *s, uint32_t r) {
  return s->c + (size_t)r * (s->nv + 1);
}

/* Adds `row` (modified in place: normalised). Constant rows are not stored:
 * they either hold trivially or make the system infeasible. Rows with equal
 * coefficients are merged keeping the stronger bound. Over integer variables
 * a row is divided by the gcd of its coefficients and its bound rounded up
 * (a cut no integer point violates); over rational ones only by a divisor
 * of the bound as well. */
static rec_status fm_push(ac_context *ctx, fm_sys *s, int64_t *row) {
  uint32_t nv = s->nv;
  int64_t g = 0;
  for (uint32_t k = 0; k < nv; k++)
    g = gcd64(g, row[k] < 0 ? -row[k] : row[k]);
  if (g == 0) {
    if (row[nv] > 0)
      s->infeasible = true;
    return REC_OK;
  }
  if (s->rational)
    g = gcd64(g, row[nv] < 0 ? -row[nv] : row[nv]);
  if (g > 1) {
    for (uint32_t k = 0; k < nv; k++)
      row[k] /= g;
    row[nv] = ceil_div(row[nv], g);
  }
  for (uint32_t r = 0; r < s->nr; r++) {
    int64_t *o = fm_row(s, r);
    if (memcmp(o, row, nv * sizeof *row) == 0) {
      if (row[nv] > o[nv])
        o[nv] = row[nv];
      return REC_OK;
    }
  }
  if (s->nr >= REC_MAX_ROWS)
    return REC_TOO_COMPLEX;
  if (!ac_grow(ctx, (void **)&s->c, &s->cap, ((size_t)s->nr + 1) * (nv + 1), sizeof *s->c))
    return REC_NOMEM;
  memcpy(fm_row(s, s->nr), row, (nv + 1) * sizeof *row);
  s->nr++;
  return REC_OK;
}

/* out := in with variable v eliminated (its coefficient is 0 in every row). */
static rec_status fm_eliminate(ac_context *ctx, const fm_sys *in, uint32_t v, fm_sys *out) {
  uint32_t nv = in->nv;
  fm_init(out, nv);
  out->infeasible = in->infeasible;
  out->rational = in->rational;
  int64_t tmp[FM_MAX_VARS + 1];
  rec_status st = REC_OK;
  for (uint32_t r = 0; r < in->nr && st == REC_OK; r++) {
    const int64_t *p = fm_row(in, r);
    if (p[v] == 0) {
      memcpy(tmp, p, (nv + 1) * sizeof *p);
      st = fm_push(ctx, out, tmp);
    }
  }
  for (uint32_t r = 0; r < in->nr && st == REC_OK; r++) {
    const int64_t *p = fm_row(in, r);
    if (p[v] <= 0)
      continue;
    for (uint32_t q = 0; q < in->nr && st == REC_OK; q++) {
      const int64_t *n = fm_row(in, q);
      if (n[v] >= 0)
        continue;
      /* (-n_v) * p + p_v * n: the v coefficients cancel, both multipliers > 0 */
      for (uint32_t k = 0; k <= nv; k++) {
        int64_t a, b;
        if (!ck_mul(-n[v], p[k], &a) || !ck_mul(p[v], n[k], &b) || !ck_add(a, b, &tmp[k]))
          return REC_TOO_COMPLEX;
      }
      tmp[v] = 0;
      st = fm_push(ctx, out, tmp);
    }
  }
  return st;
}

/* Eliminates every variable of a (freed); is the system feasible? */
static rec_status fm_decide(ac_context *ctx, fm_sys *a, bool *feasible) {
  rec_status st = REC_OK;
  fm_sys b;
  for (uint32_t v = 0; v < a->nv && st == REC_OK && !a->infeasible; v++) {
    st = fm_eliminate(ctx, a, v, &b);
    fm_free(ctx, a);
    *a = b;
  }
  if (st == REC_OK)
    *feasible = !a->infeasible;
  fm_free(ctx, a);
  return st;
}

/* Is {x : rows . x >= 1} non-empty? */
rec_status rec_feasible(ac_context *ctx, uint32_t nvars, uint32_t nrows, const int64_t *rows,
                        bool *feasible) {
  if (nvars > REC_MAX_DIMS)
    return REC_TOO_COMPLEX;
  for (size_t i = 0; i < (size_t)nrows * nvars; i++)
    if (rows[i] == INT64_MIN)
      return REC_TOO_COMPLEX;
  fm_sys a;
  fm_init(&a, nvars);
  int64_t tmp[FM_MAX_VARS + 1];
  rec_status st = REC_OK;
  for (uint32_t j = 0; j < nrows && st == REC_OK; j++) {
    memcpy(tmp, rows + (size_t)j * nvars, nvars * sizeof *tmp);
    tmp[nvars] = 1;
    st = fm_push(ctx, &a, tmp);
  }
  if (st != REC_OK) {
    fm_free(ctx, &a);
    return st;
  }
  return fm_decide(ctx, &a, feasible);
}

/* ---- the rows a schedule must satisfy ----
 * Over the n scheduled dimensions: row r is w[r] . a >= w[r][n], from the
 * dependency owner[r]. A uniform dependency gives one row (its distance,
 * bound 1); a split-point one the rows Farkas' lemma leaves (rec.h). */

typedef struct rowset {
  uint32_t n, nr;
  size_t capw, capo;
  int64_t *w;      /* nr * (n + 1) */
  uint32_t *owner; /* nr */
} rowset;

static void rows_free(ac_context *ctx, rowset *rs) {
  ac_free(ctx, rs->w);
  ac_free(ctx, rs->owner);
  memset(rs, 0, sizeof *rs);
}

static rec_status rows_add(ac_context *ctx, rowset *rs, const int64_t *row, uint32_t owner) {
  if (!ac_grow(ctx, (void **)&rs->w, &rs->capw, ((size_t)rs->nr + 1) * (rs->n + 1), sizeof *rs->w) ||
      !ac_grow(ctx, (void **)&rs->owner, &rs->capo, (size_t)rs->nr + 1, sizeof *rs->owner))
    return REC_NOMEM;
  memcpy(rs->w + (size_t)rs->nr * (rs->n + 1), row, (rs->n + 1) * sizeof *row);
  rs->owner[rs->nr++] = owner;
  return REC_OK;
}

/* The rows over a (dimensions map[0..n-1]) that hold exactly when a . v >= 1
 * at every point of range dependency r: the system in (a, l) of rec.h, l
 * eliminated over the rationals. */
static rec_status farkas_rows(ac_context *ctx, const rec_problem *p, const rec_range *r,
                              const uint32_t *map, uint32_t n, rowset *out) {
  uint32_t d = p->ndims, nt = r->nt, nc = r->ncons, nv = n + nc;
  size_t cw = (size_t)d + nt + 1;
  if (nc > REC_MAX_CONS || n > REC_MAX_DIMS)
    return REC_TOO_COMPLEX;
  for (size_t i = 0; i < (size_t)nc * cw; i++)
    if (r->cons[i] == INT64_MIN)
      return REC_TOO_COMPLEX; /* keeps every negation in range */
  if (d + nt > FM_MAX_VARS)
    return REC_TOO_COMPLEX;
  int64_t row[FM_MAX_VARS + 1];
  rec_status st = REC_OK;
  /* a dependency whose polyhedron is empty never happens: no rows (Farkas'
   * lemma in this form needs a non-empty polyhedron) */
  fm_sys a;
  fm_init(&a, d + nt);
  a.rational = true;
  for (uint32_t i = 0; i < nc && st == REC_OK; i++) {
    memcpy(row, r->cons + i * cw, (d + nt) * sizeof *row);
    row[d + nt] = -r->cons[i * cw + d + nt];
    st = fm_push(ctx, &a, row);
  }
  bool happens = true;
  if (st != REC_OK) {
    fm_free(ctx, &a);
    return st;
  }
  if ((st = fm_decide(ctx, &a, &happens)) != REC_OK || !happens)
    return st;
  fm_init(&a, nv);
  a.rational = true; /* the multipliers l need not be integers */
  /* coefficient of every coordinate y of (x, t): sum_k a_k v_k,y = sum_i l_i cons_i,y */
  for (uint32_t y = 0; y < d + nt && st == REC_OK; y++) {
    for (int sign = 1; sign >= -1 && st == REC_OK; sign -= 2) {
      for (uint32_t i = 0; i < n; i++) {
        int64_t v = y < d ? r->vx[(size_t)map[i] * d + y] : r->vt[(size_t)map[i] * nt + (y - d)];
        if (v == INT64_MIN)
          st = REC_TOO_COMPLEX;
        row[i] = sign * v;
      }
      for (uint32_t i = 0; i < nc; i++)
        row[n + i] = -sign * r->cons[i * cw + y];
      row[nv] = 0;
      if (st == REC_OK)
        st = fm_push(ctx, &a, row);
    }
  }
  /* the constant: sum_k a_k c_k - sum_i l_i c_i >= 1 */
  for (uint32_t i = 0; i < n; i++)
    row[i] = p->dist[(size_t)r->dep * d + map[i]];
  for (uint32_t i = 0; i < nc; i++)
    row[n + i] = -r->cons[i * cw + d + nt];
  row[nv] = 1;
  if (st == REC_OK)
    st = fm_push(ctx, &a, row);
  for (uint32_t i = 0; i < nc && st == REC_OK; i++) { /* l_i >= 0 */
    memset(row, 0, (nv + 1) * sizeof *row);
    row[n + i] = 1;
    st = fm_push(ctx, &a, row);
  }
  fm_sys b;
  for (uint32_t v = n; v < nv && st == REC_OK && !a.infeasible; v++) {
    st = fm_eliminate(ctx, &a, v, &b);
    fm_free(ctx, &a);
    a = b;
  }
  if (st == REC_OK && a.infeasible) { /* no schedule satisfies this dependency */
    memset(row, 0, (n + 1) * sizeof *row);
    row[n] = 1;
    st = rows_add(ctx, out, row, r->dep);
  }
  for (uint32_t q = 0; q < a.nr && st == REC_OK && !a.infeasible; q++) {
    const int64_t *fr = fm_row(&a, q);
    memcpy(row, fr, n * sizeof *row);
    row[n] = fr[nv];
    st = rows_add(ctx, out, row, r->dep);
  }
  fm_free(ctx, &a);
  return st;
}

/* The rows of p's dependencies over the dimensions map[0..n-1]. */
static rec_status build_rows(ac_context *ctx, const rec_problem *p, const rec_range *const *rof,
                             const uint32_t *map, uint32_t n, rowset *out) {
  memset(out, 0, sizeof *out);
  out->n = n;
  int64_t row[REC_MAX_DIMS + 1];
  rec_status st = REC_OK;
  for (uint32_t j = 0; j < p->ndeps && st == REC_OK; j++) {
    if (rof[j]) {
      st = farkas_rows(ctx, p, rof[j], map, n, out);
      continue;
    }
    for (uint32_t i = 0; i < n; i++)
      row[i] = p->dist[(size_t)j * p->ndims + map[i]];
    row[n] = 1;
    st = rows_add(ctx, out, row, j);
  }
  return st;
}

/* Is there an integer a satisfying the rows of the dependencies in `in`
 * (all when NULL)? Rational and integer feasibility agree: the set of valid
 * schedules is closed under scaling by integers >= 1. */
static rec_status rows_feasible(ac_context *ctx, const rowset *rs, const bool *in, bool *feasible) {
  fm_sys a;
  fm_init(&a, rs->n);
  int64_t tmp[FM_MAX_VARS + 1];
  rec_status st = REC_OK;
  for (uint32_t r = 0; r < rs->nr && st == REC_OK; r++) {
    if (in && !in[rs->owner[r]])
      continue;
    memcpy(tmp, rs->w + (size_t)r * (rs->n + 1), (rs->n + 1) * sizeof *tmp);
    st = fm_push(ctx, &a, tmp);
  }
  if (st != REC_OK) {
    fm_free(ctx, &a);
    return st;
  }
  return fm_decide(ctx, &a, feasible);
}

/* For each dependency, its range or NULL (*out is allocated: ndeps entries). */
static rec_status range_of(ac_context *ctx, const rec_problem *p, const rec_range ***out) {
  const rec_range **rof = ac_alloc(ctx, (p->ndeps ? p->ndeps : 1) * sizeof *rof);
  if (!rof)
    return REC_NOMEM;
  memset(rof, 0, (p->ndeps ? p->ndeps : 1) * sizeof *rof);
  for (uint32_t i = 0; i < p->nranges; i++)
    if (p->ranges[i].dep < p->ndeps)
      rof[p->ranges[i].dep] = &p->ranges[i];
  *out = rof;
  return REC_OK;
}

/* Does component k of dependency j vary with the point? */
static bool varies(const rec_problem *p, const rec_range *r, uint32_t k) {
  if (!r)
    return false;
  for (uint32_t m = 0; m < p->ndims; m++)
    if (r->vx[(size_t)k * p->ndims + m] != 0)
      return true;
  for (uint32_t q = 0; q < r->nt; q++)
    if (r->vt[(size_t)k * r->nt + q] != 0)
      return true;
  return false;
}

bool rec_schedule_valid(ac_context *ctx, const rec_problem *p, const int64_t *sched) {
  const rec_range **rof = NULL;
  if (range_of(ctx, p, &rof) != REC_OK)
    return false;
  bool ok = true;
  for (uint32_t j = 0; j < p->ndeps && ok; j++) {
    int64_t dot = 0;
    for (uint32_t k = 0; k < p->ndims && ok; k++) {
      size_t i = (size_t)j * p->ndims + k;
      int64_t t;
      if (p->isfree[i])
        ok = sched[k] == 0;
      else
        ok = ck_mul(sched[k], p->dist[i], &t) && ck_add(dot, t, &dot);
    }
    ok = ok && (rof[j] || dot >= 1);
  }
  /* a split-point dependency: a must satisfy its Farkas rows over all dimensions */
  uint32_t map[REC_MAX_DIMS];
  for (uint32_t k = 0; k < p->ndims && k < REC_MAX_DIMS; k++)
    map[k] = k;
  for (uint32_t j = 0; j < p->ndeps && ok; j++) {
    if (!rof[j])
      continue;
    rowset rs = {.n = p->ndims};
    ok = p->ndims <= REC_MAX_DIMS && farkas_rows(ctx, p, rof[j], map, p->ndims, &rs) == REC_OK;
    for (uint32_t r = 0; r < rs.nr && ok; r++) {
      const int64_t *w = rs.w + (size_t)r * (rs.n + 1);
      int64_t dot = 0, t;
      for (uint32_t k = 0; k < rs.n && ok; k++)
        ok = ck_mul(sched[k], w[k], &t) && ck_add(dot, t, &dot);
      ok = ok && dot >= w[rs.n];
    }
    rows_free(ctx, &rs);
  }
  ac_free(ctx, rof);
  return ok;
}

/* ---- the minimum search ---- */

typedef struct search {
  ac_context *ctx;
  uint32_t n;                  /* reduced dimensions */
  uint32_t north;              /* 2^n orthants */
  fm_sys *chain;               /* chain[o * (n + 1) + k]: orthant o projected onto (s, b_1..b_k) */
  bool *alive;                 /* orthant o has rational points */
  int64_t x[REC_MAX_DIMS + 1]; /* x[0] = s, x[k] = b_k */
  int64_t best[REC_MAX_DIMS];  /* best a so far (reduced) */
  bool found;
  uint64_t steps;
  rec_status st;
} search;

static int64_t sigma(uint32_t o, uint32_t k) {
  return (o >> (k - 1)) & 1u ? -1 : 1;
}

/* Bounds of x[k] from the rows of S_k that mention it, given x[0..k-1]. */
static bool level_bounds(search *sr, const fm_sys *s, uint32_t k, int64_t *lo, int64_t *hi) {
  for (uint32_t r = 0; r < s->nr; r++) {
    const int64_t *row = fm_row(s, r);
    if (row[k] == 0)
      continue;
    int64_t rest = row[s->nv];
    for (uint32_t i = 0; i < k; i++) {
      int64_t t;
      if (!ck_mul(row[i], sr->x[i], &t) || !ck_add(rest, -t, &rest)) {
        sr->st = REC_TOO_COMPLEX;
        return false;
      }
    }
    if (row[k] > 0) {
      int64_t b = ceil_div(rest, row[k]);
      if (b > *lo)
        *lo = b;
    } else {
      int64_t b = floor_div(rest, row[k]);
      if (b < *hi)
        *hi = b;
    }
  }
  return true;
}

/* Enumerates level k of orthant o; returns true when a point was found (the
 * first one is the orthant's lexicographically largest) or the search must
 * stop (sr->st != REC_OK). */
static bool dfs(search *sr, uint32_t o, uint32_t k) {
  if (k > sr->n) {
    int64_t a[REC_MAX_DIMS];
    for (uint32_t i = 1; i <= sr->n; i++)
      a[i - 1] = sigma(o, i) * sr->x[i];
    bool better = !sr->found;
    for (uint32_t i = 0; i < sr->n && !better; i++) {
      if (a[i] != sr->best[i]) {
        better = a[i] > sr->best[i];
        break;
      }
    }
    if (better)
      memcpy(sr->best, a, sr->n * sizeof *a);
    sr->found = true;
    return true;
  }
  int64_t lo = 0, hi = sr->x[0]; /* 0 <= b_k <= s, also implied by the rows */
  if (!level_bounds(sr, &sr->chain[(size_t)o * (sr->n + 1) + k], k, &lo, &hi))
    return true;
  for (int64_t i = 0; i <= hi - lo; i++) {
    if (++sr->steps > REC_BUDGET) {
      sr->st = REC_TOO_COMPLEX;
      return true;
    }
    sr->x[k] = sigma(o, k) > 0 ? hi - i : lo + i;
    if (dfs(sr, o, k + 1))
      return true;
  }
  return false;
}

/* Builds the projections of orthant o: S_n is the integer program itself,
 * S_{k-1} eliminates b_k from S_k. */
static rec_status build_chain(search *sr, uint32_t o, const rowset *rs) {
  uint32_t n = sr->n, nv = n + 1;
  fm_sys *ch = &sr->chain[(size_t)o * nv];
  fm_init(&ch[n], nv);
  int64_t row[REC_MAX_DIMS + 2];
  rec_status st = REC_OK;
  for (uint32_t j = 0; j < rs->nr && st == REC_OK; j++) { /* (sigma * w_j) . b >= bound_j */
    const int64_t *w = rs->w + (size_t)j * (n + 1);
    row[0] = 0;
    for (uint32_t k = 1; k <= n; k++)
      row[k] = sigma(o, k) * w[k - 1];
    row[nv] = w[n];
    st = fm_push(sr->ctx, &ch[n], row);
  }
  for (uint32_t k = 1; k <= n && st == REC_OK; k++) { /* b_k >= 0 */
    memset(row, 0, sizeof row);
    row[k] = 1;
    st = fm_push(sr->ctx, &ch[n], row);
  }
  for (int sign = 1; sign >= -1 && st == REC_OK; sign -= 2) { /* sum b = s */
    row[0] = -sign;
    for (uint32_t k = 1; k <= n; k++)
      row[k] = sign;
    row[nv] = 0;
    st = fm_push(sr->ctx, &ch[n], row);
  }
  for (uint32_t k = n; k >= 1 && st == REC_OK; k--)
    st = fm_eliminate(sr->ctx, &ch[k], k, &ch[k - 1]);
  return st;
}

/* Does s satisfy the rows of S_0 of orthant o? Also gives its lower bound. */
static bool s_admits(const fm_sys *s0, int64_t s, int64_t *lower) {
  bool ok = !s0->infeasible;
  for (uint32_t r = 0; r < s0->nr; r++) {
    const int64_t *row = fm_row(s0, r);
    if (row[0] > 0) {
      int64_t b = ceil_div(row[1], row[0]);
      if (lower && b > *lower)
        *lower = b;
      ok = ok && s >= b;
    } else if (row[0] < 0) {
      ok = ok && s <= floor_div(row[1], row[0]);
    }
  }
  return ok;
}

/* Minimum of sum |a_k| over integer a satisfying the rows (known feasible). */
static rec_status minimise(ac_context *ctx, const rowset *rs, int64_t *out) {
  uint32_t n = rs->n;
  search sr;
  memset(&sr, 0, sizeof sr);
  sr.ctx = ctx;
  sr.n = n;
  sr.north = 1u << n;
  sr.st = REC_OK;
  size_t nsys = (size_t)sr.north * (n + 1);
  sr.chain = ac_alloc(ctx, nsys * sizeof *sr.chain);
  sr.alive = ac_alloc(ctx, sr.north * sizeof *sr.alive);
  if (!sr.chain || !sr.alive) {
    ac_free(ctx, sr.chain);
    ac_free(ctx, sr.alive);
    return REC_NOMEM;
  }
  for (size_t i = 0; i < nsys; i++)
    fm_init(&sr.chain[i], n + 1);
  int64_t start = INT64_MAX;
  for (uint32_t o = 0; o < sr.north && sr.st == REC_OK; o++) {
    sr.st = build_chain(&sr, o, rs);
    const fm_sys *s0 = &sr.chain[(size_t)o * (n + 1)];
    int64_t lower = 1; /* a = 0 satisfies no dependency that can happen */
    sr.alive[o] = sr.st == REC_OK && !s0->infeasible;
    if (sr.alive[o]) {
      s_admits(s0, 0, &lower);
      if (lower < start)
        start = lower;
    }
  }
  for (int64_t s = start; sr.st == REC_OK && !sr.found; s++) {
    if (++sr.steps > REC_BUDGET || s == INT64_MAX) {
      sr.st = REC_TOO_COMPLEX;
      break;
    }
    sr.x[0] = s;
    for (uint32_t o = 0; o < sr.north && sr.st == REC_OK; o++)
      if (sr.alive[o] && s_admits(&sr.chain[(size_t)o * (n + 1)], s, NULL))
        dfs(&sr, o, 1);
  }
  if (sr.st == REC_OK)
    memcpy(out, sr.best, n * sizeof *out);
  for (size_t i = 0; i < nsys; i++)
    fm_free(ctx, &sr.chain[i]);
  ac_free(ctx, sr.chain);
  ac_free(ctx, sr.alive);
  return sr.st;
}

/* Shrinks the infeasible set `in` (flags over the m dependencies) to a
 * minimal one. */
static rec_status deletion_filter(ac_context *ctx, const rowset *rs, uint32_t m, bool *in) {
  rec_status st = REC_OK;
  for (uint32_t j = 0; j < m && st == REC_OK; j++) {
    in[j] = false;
    bool feasible = true;
    st = rows_feasible(ctx, rs, in, &feasible);
    if (feasible)
      in[j] = true; /* needed for the conflict */
  }
  return st;
}

rec_status rec_schedule(ac_context *ctx, const rec_problem *p, int64_t *sched, uint32_t *culprits,
                        uint32_t *nculprits) {
  uint32_t d = p->ndims, m = p->ndeps;
  *nculprits = 0;
  bool isfree[64];
  if (d > 64)
    return REC_TOO_COMPLEX;
  for (size_t i = 0; i < (size_t)m * d; i++)
    if (!p->isfree[i] && p->dist[i] == INT64_MIN)
      return REC_TOO_COMPLEX; /* keeps every negation in range */
  memset(isfree, 0, sizeof isfree);
  for (uint32_t j = 0; j < m; j++)
    for (uint32_t k = 0; k < d; k++)
      if (p->isfree[(size_t)j * d + k])
        isfree[k] = true;
  for (uint32_t k = 0; k < d; k++)
    sched[k] = 0;
  const rec_range **rof = NULL;
  rec_status st = range_of(ctx, p, &rof);
  if (st != REC_OK)
    return st;
  /* 1. dependencies that cannot advance: zero in every component that is
   * not free (a component that varies with the point is not zero) */
  for (uint32_t j = 0; j < m; j++) {
    bool zero = true, ownfree = false;
    for (uint32_t k = 0; k < d; k++) {
      size_t i = (size_t)j * d + k;
      ownfree |= p->isfree[i] != 0;
      zero &= p->isfree[i] || (p->dist[i] == 0 && !varies(p, rof[j], k));
    }
    if (zero) {
      culprits[(*nculprits)++] = j;
      ac_free(ctx, rof);
      return ownfree ? REC_NONE : REC_SELF;
    }
  }
  for (uint32_t j = 0; j < m; j++) {
    bool zero = true;
    for (uint32_t k = 0; k < d; k++)
      zero &= isfree[k] || (p->dist[(size_t)j * d + k] == 0 && !varies(p, rof[j], k));
    if (!zero)
      continue;
    /* j advances only in dimensions that other dependencies leave free: name
     * j and, for each such dimension, the first dependency freeing it */
    bool *blame = ac_alloc(ctx, m * sizeof *blame);
    if (!blame) {
      ac_free(ctx, rof);
      return REC_NOMEM;
    }
    memset(blame, 0, m * sizeof *blame);
    blame[j] = true;
    for (uint32_t k = 0; k < d; k++) {
      size_t i = (size_t)j * d + k;
      if (p->isfree[i] || (p->dist[i] == 0 && !varies(p, rof[j], k)))
        continue;
      uint32_t l = 0;
      while (l < m && !p->isfree[(size_t)l * d + k])
        l++;
      if (l < m)
        blame[l] = true;
    }
    for (uint32_t l = 0; l < m; l++)
      if (blame[l])
        culprits[(*nculprits)++] = l;
    ac_free(ctx, blame);
    ac_free(ctx, rof);
    return REC_NONE;
  }
  if (m == 0) {
    ac_free(ctx, rof);
    return REC_OK; /* no dependency: one wavefront */
  }
  /* 2. reduce to the scheduled dimensions and decide existence */
  uint32_t n = 0, map[64];
  for (uint32_t k = 0; k < d; k++)
    if (!isfree[k])
      map[n++] = k;
  bool *in = NULL;
  rowset rs = {.n = n};
  if (n > REC_MAX_DIMS)
    st = REC_TOO_COMPLEX;
  else if (!(in = ac_alloc(ctx, m * sizeof *in)))
    st = REC_NOMEM;
  else
    st = build_rows(ctx, p, rof, map, n, &rs);
  bool feasible = false;
  if (st == REC_OK)
    st = rows_feasible(ctx, &rs, NULL, &feasible);
  if (st == REC_OK && !feasible) {
    for (uint32_t j = 0; j < m; j++)
      in[j] = true;
    st = deletion_filter(ctx, &rs, m, in);
    if (st == REC_OK) {
      /* the conflict needs the dimensions it advances in to stay free:
       * add the first dependency freeing each of them */
      for (uint32_t k = 0; k < d; k++) {
        bool needed = false;
        for (uint32_t j = 0; j < m; j++) {
          size_t i = (size_t)j * d + k;
          needed |= in[j] && isfree[k] && !p->isfree[i] &&
                    (p->dist[i] != 0 || varies(p, rof[j], k));
        }
        for (uint32_t l = 0; l < m && needed; l++)
          if (p->isfree[(size_t)l * d + k]) {
            in[l] = true;
            needed = false;
          }
      }
      for (uint32_t j = 0; j < m; j++)
        if (in[j])
          culprits[(*nculprits)++] = j;
      st = REC_NONE;
    }
  } else if (st == REC_OK && rs.nr > 0) {
    /* 3. the smallest schedule (without rows every dependency has an empty
     * range and never happens: one wavefront, a = 0) */
    int64_t a[REC_MAX_DIMS];
    st = minimise(ctx, &rs, a);
    if (st == REC_OK)
      for (uint32_t i = 0; i < n; i++)
        sched[map[i]] = a[i];
  }
  rows_free(ctx, &rs);
  ac_free(ctx, in);
  ac_free(ctx, rof);
  return st;
}
