/* lib/lower/gskel_rec.c: recurrences, rec (i1 in lo1..=hi1, ..) -> T { body },
 * on GPU targets (Cartey et al., "Recursion equations to GPU": per-wavefront
 * parallel code under an affine schedule, §4.7 "many small problems" mapped
 * one problem per multiprocessor, §4.8 / §5.1 small tables in shared memory).
 *
 * The host side is the CPU skeleton's (skel_rec.c, lw_rec_begin: bounds,
 * extents, allocation, schedule overflow, with the interpreter's checks);
 * only the kernels and the choice among them differ. With the schedule a
 * (every point reads only points of smaller a . x):
 *
 *   a = 0 (no dependencies): "rec", a grid-stride loop over all points, as
 *     the element-wise skeleton (no read of the array exists then: it would
 *     be a dependency).
 *
 *   PROBLEMS. A dimension d is a BATCH dimension when a_d = 0 and every
 *     self reference indexes it with exactly i_d (d[b, i - 1, j]: found by
 *     gr_batch, a syntactic walk of the body; anything else, a let or a
 *     cast around i_d included, conservatively is not one). The slices at
 *     fixed batch coordinates are then independent problems: no point of
 *     one ever reads another. The other dimensions P span a problem. (A
 *     rec inside element code, say a map's function, is not lowered here:
 *     it runs sequentially in its element's thread, lib/codegen/seq_*.c.)
 *
 *   |P| = 1: "rec.seq", ONE THREAD PER PROBLEM (a grid-stride loop over
 *     the problems), walking its points in schedule order: every wavefront
 *     of a one-dimensional problem holds a single point, so a block per
 *     problem would leave all but one thread idle. A plain 1-D rec is one
 *     problem, one thread (it is sequential by nature).
 *
 *   |P| >= 2, decided per call by a plan `if` on the average wavefront
 *     width w = (cells of a problem) / (wavefronts):
 *     - w <= GR_BLOCK * GR_PER_THREAD: "rec.block", A BLOCK PER PROBLEM,
 *       or for narrow problems a GROUP of warps per problem: the block's
 *       GR_BLOCK threads form G = 1, 2, 4 or 8 groups (8 when a wavefront
 *       averages at most 32 points, 4 up to 64, 2 up to 128; never more
 *       groups than problems), each group takes a problem and the blocks
 *       loop over the problems (grid-stride). A group walks its problem's
 *       wavefronts itself, its threads sharing the points of each (thread
 *       k of the group takes points k, k + size, ..), and a barrier of the
 *       block separates consecutive wavefronts (all problems of a rec have
 *       the same extents, hence the same wavefronts, so the groups stay in
 *       step). This trades a kernel launch per wavefront (a few
 *       microseconds each on an H100, launch plus drain) for a barrier
 *       (tens of nanoseconds): while each thread has at most a few points
 *       per wavefront, a block finishes a wavefront before a launch could
 *       even start; and groups keep the threads busy when many problems
 *       are small (Cartey's sequence alignments: hundreds of short pairs).
 *       The table lives in global memory (it is the result), and when a
 *       problem's whole table fits in its group's part of GR_SMEM bytes of
 *       shared memory the group also keeps a copy there and reads the
 *       dependencies from it: after the wavefront's barrier the cells
 *       other threads wrote are one shared-memory load away instead of an
 *       L1/L2 round trip, on the critical path of every wavefront. The
 *       copy is written along with the global store (no copy-out phase)
 *       and chosen at run time (the same kernel reads through a generic
 *       pointer to either), so every table size works;
 *     - wider wavefronts: one launch per wavefront (the CPU skeleton's
 *       plan loop, lw_rec_fronts) of "rec.front", a grid-stride kernel over
 *       the points of the wavefront (all problems at once), which spreads
 *       a wide wavefront over the whole device.
 *
 * Points of a wavefront are enumerated as on the CPU (skel.h,
 * lw_rec_fronts_setup): a dimension s with a_s != 0 is solved for, one
 * dimension u is restricted to the range where x_s can lie inside the box,
 * the others run over their extents; in two dimensions with |a_s| = 1
 * every enumerated point exists, so threads do no divisions and none idles.
 *
 * Errors. Reads of the array go through gr_read, the interpreter's check
 * (inside the domain, then in an earlier wavefront) with its messages. A
 * failure in wavefront t is recorded before any thread starts wavefront
 * t + 1 (a barrier or a launch separates them) and stops the work: every
 * kernel starts by leaving when the call has failed, and the block kernel
 * looks again after each wavefront (thread 0 loads the failure flag at the
 * start of the wavefront, so the load's latency hides behind its points,
 * and shares it through a shared word double-buffered by wavefront parity,
 * which makes the exit block-uniform without a second barrier). So the
 * error reported is one of the failing wavefront's, as the interpreter's
 * (which reports the first of them in row-major order; parallel points of
 * one wavefront, or concurrent problems of "rec.seq", may report another
 * failing point first, as the CPU's chunks may).
 */
#include "lower/skel.h"
#include "lower/skel_red.h"

#include "codegen/simt.h"

/* Threads of a "rec.block" block (a multiple of 32; 256 leaves ptxas up to
 * 255 registers per thread for bodies with nested array operations). */
#define GR_BLOCK 256u
#define GR_BLOCK_LG 8
/* The block path is taken while the average wavefront holds at most this
 * many points per thread of the block. */
#define GR_PER_THREAD 8
/* Shared memory for the table's copy (all leaves), under the 48 KB of static
 * shared memory every GPU has: 8192 i32 cells, enough for the "few thousand
 * cells" of typical alignment problems, and 7 blocks per H100 SM. */
#define GR_SMEM 32768u
/* Nodes the batch analysis looks at before giving up (bodies are DAGs). */
#define GR_WALK_BUDGET 100000

/* What a kernel knows while generating points (the readers' data): the
 * CPU kernels' (skel.h; r.out in global memory), and for "rec.block" the
 * shared copy (sm.n == 0: none), whether this problem's table fits in it,
 * and the problem dimensions it is indexed by. r comes first: a reader's
 * lw_rec_leafenv points at it. */
typedef struct gr_kernel {
  lw_rec_kern r;
  cg_val sm;
  LLVMValueRef fits;
  uint64_t pmask;
} gr_kernel;

/* Dimension masks: bit d for dimension d (ranks are at most 64). */
static bool gr_has(uint64_t mask, uint32_t d) {
  return ((mask >> d) & 1) != 0;
}

/* ---- batch dimensions ---- */

typedef struct gr_walk {
  const ac_module *m;
  uint32_t n;
  uint64_t mask; /* candidates still standing */
  uint32_t budget;
} gr_walk;

/* Clears the candidates that node r (under `depth` binders of the body)
 * disqualifies: a self reference whose index k is not exactly i_k clears k;
 * any other use of the array itself clears everything. */
static void gr_batch_walk(gr_walk *w, ir_ref r, uint64_t depth) {
  if (w->mask == 0)
    return;
  if (w->budget == 0) {
    w->mask = 0;
    return;
  }
  w->budget--;
  const ir_node *nd = ir_node_get(w->m, r);
  uint64_t self = depth + w->n;
  if (nd->op == IR_VAR && (uint64_t)nd->attr == self) {
    w->mask = 0; /* the array not as an indexed operand */
    return;
  }
  uint32_t from = 0;
  if (nd->op == IR_INDEX && nd->nkids >= 1) {
    const ir_node *an = ir_node_get(w->m, ir_kid(w->m, r, 0));
    if (an->op == IR_VAR && (uint64_t)an->attr == self) {
      if (nd->nkids != w->n + 1) {
        w->mask = 0;
        return;
      }
      for (uint32_t k = 0; k < w->n; k++) {
        const ir_node *ik = ir_node_get(w->m, ir_kid(w->m, r, k + 1));
        bool exact = ik->op == IR_VAR && (uint64_t)ik->attr == depth + (w->n - 1 - k);
        if (!exact)
          w->mask &= ~((uint64_t)1 << k);
      }
      from = 1; /* the indices may still hold references */
    }
  }
  for (uint32_t i = from; i < nd->nkids; i++)
    gr_batch_walk(w, ir_kid(w->m, r, i), depth + ir_binders(w->m, r, i));
}

/* The batch dimensions of c (a bit per dimension, see the file comment). */
static uint64_t gr_batch(const lw_rec *c) {
  gr_walk w = {c->L->m, c->n, 0, GR_WALK_BUDGET};
  for (uint32_t d = 0; d < c->n; d++)
    if (c->a[d] == 0)
      w.mask |= (uint64_t)1 << d;
  gr_batch_walk(&w, c->body, 0);
  return w.mask;
}

/* ---- the array inside the body ---- */

/* d[idx] for leaf l of the array being defined: the interpreter's checks
 * (lw_rec_read: the order check only for reads the schedule does not
 * order by their form), then a load from the shared copy when the
 * problem's table is there, else from the result. */
static LLVMValueRef gr_read(cg_fn *f, const cg_leaf *l, LLVMValueRef *idx, ir_ref at) {
  cg_module *M = f->M;
  const lw_rec_leafenv *le = l->env;
  const gr_kernel *k = (const gr_kernel *)(const void *)le->k;
  const lw_rec *c = k->r.c;
  LLVMValueRef *kd = cg_new(M, c->n * sizeof *kd), lin = cg_i64(M, 0), llin = cg_i64(M, 0);
  LLVMValueRef ok = lw_rec_read(f, &k->r, idx, at, kd);
  for (uint32_t d = 0; d < c->n; d++) {
    lin = LLVMBuildAdd(M->b, LLVMBuildMul(M->b, lin, k->r.ext[d], ""), kd[d], "");
    if (k->sm.n && gr_has(k->pmask, d))
      llin = LLVMBuildAdd(M->b, LLVMBuildMul(M->b, llin, k->r.ext[d], ""), kd[d], "");
  }
  LLVMValueRef zero = cg_i64(M, 0);
  lin = LLVMBuildSelect(M->b, ok, lin, zero, "");
  if (!k->sm.n)
    return cg_load_elem(f, &k->r.out.l[le->leaf], lin);
  cg_leaf from = k->r.out.l[le->leaf];
  from.v = LLVMBuildSelect(M->b, k->fits, k->sm.l[le->leaf].v, from.v, "");
  llin = LLVMBuildSelect(M->b, ok, llin, zero, "");
  return cg_load_elem(f, &from, LLVMBuildSelect(M->b, k->fits, llin, lin, ""));
}

/* ---- one point ---- */

/* Computes the point of 0-based coordinates x whose a . x is t: binds the
 * array and the logical indices, generates the body and stores its leaves
 * (in the shared copy too when the table is there). */
static void gr_point(cg_fn *f, gr_kernel *k, const cg_val *self, LLVMValueRef *x, LLVMValueRef t) {
  cg_module *M = f->M;
  const lw_rec *c = k->r.c;
  LLVMValueRef mark;
  LLVMValueRef lin = lw_rec_point_begin(f, &k->r, self, x, t, &mark), llin = cg_i64(M, 0);
  for (uint32_t d = 0; k->sm.n && d < c->n; d++)
    if (gr_has(k->pmask, d))
      llin = LLVMBuildAdd(M->b, LLVMBuildMul(M->b, llin, k->r.ext[d], ""), x[d], "");
  cg_val v;
  cg_expr(f, c->body, &v);
  sk_store(f, &k->r.out, lin, &v);
  if (k->sm.n) {
    LLVMBasicBlockRef join = sk_if(f, k->fits);
    sk_store(f, &k->sm, llin, &v);
    sk_endif(f, join);
  }
  lw_rec_point_end(f, &k->r, mark);
}

/* Starts a point kernel (block: fixed block size or 0): loads the result
 * and the bounds and builds the array value the body sees. */
static cg_fn *gr_begin(const lw_rec *c, const char *kind, unsigned block, uint32_t *kernel,
                       gr_kernel *k, cg_val *self) {
  *k = (gr_kernel){0};
  cg_fn *f = lw_gpu_kernel_begin(c->L, c->e, kind, 1, block, kernel);
  lw_rec_kern_setup(c, f, *kernel, &k->r, gr_read, self);
  return f;
}

/* ---- kernel helpers ---- */


static LLVMValueRef gr_i64(cg_fn *f, LLVMValueRef v32) {
  return LLVMBuildZExt(f->M->b, v32, f->M->t_i64, "");
}

static LLVMValueRef gr_smax(cg_module *M, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildSelect(M->b, LLVMBuildICmp(M->b, LLVMIntSGT, a, b, ""), a, b, "");
}

static LLVMValueRef gr_smin(cg_module *M, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildSelect(M->b, LLVMBuildICmp(M->b, LLVMIntSLT, a, b, ""), a, b, "");
}

/* floor(x / q) and ceil(x / q) for a constant q > 0. */
static LLVMValueRef gr_floor_div(cg_module *M, LLVMValueRef x, int64_t q) {
  if (q == 1)
    return x;
  LLVMValueRef kq = cg_i64(M, q);
  LLVMValueRef neg =
      LLVMBuildICmp(M->b, LLVMIntSLT, LLVMBuildSRem(M->b, x, kq, ""), cg_i64(M, 0), "");
  return LLVMBuildSub(M->b, LLVMBuildSDiv(M->b, x, kq, ""), LLVMBuildZExt(M->b, neg, M->t_i64, ""),
                      "");
}

static LLVMValueRef gr_ceil_div(cg_module *M, LLVMValueRef x, int64_t q) {
  LLVMValueRef zero = cg_i64(M, 0);
  return LLVMBuildSub(M->b, zero, gr_floor_div(M, LLVMBuildSub(M->b, zero, x, ""), q), "");
}

/* Product of ext[d] over the dimensions d of mask (1 for none). */
static LLVMValueRef gr_product(cg_fn *f, const lw_rec *c, LLVMValueRef *ext, uint64_t mask) {
  LLVMValueRef p = cg_i64(f->M, 1);
  for (uint32_t d = 0; d < c->n; d++)
    if (gr_has(mask, d))
      p = LLVMBuildMul(f->M->b, p, ext[d], "");
  return p;
}

/* Sum over the dimensions of mask of a_d * (ext_d - 1) where that has the
 * sign of `sign` (the extremes of a . x). */
static LLVMValueRef gr_extreme(cg_fn *f, const lw_rec *c, LLVMValueRef *ext, uint64_t mask,
                               int sign) {
  cg_module *M = f->M;
  LLVMValueRef sum = cg_i64(M, 0);
  for (uint32_t d = 0; d < c->n; d++)
    if (gr_has(mask, d) && c->a[d] != 0 && (c->a[d] > 0) == (sign > 0))
      sum = LLVMBuildAdd(
          M->b, sum,
          LLVMBuildMul(M->b, cg_i64(M, c->a[d]), LLVMBuildSub(M->b, ext[d], cg_i64(M, 1), ""), ""),
          "");
  return sum;
}

/* The values of x_u that wavefront t can hold: *from and *cnt (>= 0),
 * given that the other dimensions' contributions lie in [rlo, rhi]. */
static void gr_urange(cg_fn *f, const lw_rec *c, LLVMValueRef *ext, uint32_t u, LLVMValueRef t,
                      LLVMValueRef rlo, LLVMValueRef rhi, LLVMValueRef *from, LLVMValueRef *cnt) {
  cg_module *M = f->M;
  int64_t au = c->a[u];
  LLVMValueRef zero = cg_i64(M, 0), one = cg_i64(M, 1), lo = zero;
  LLVMValueRef last = LLVMBuildSub(M->b, ext[u], one, ""), hi = last;
  if (au != 0) {
    LLVMValueRef x1 = LLVMBuildSub(M->b, t, rhi, ""), x2 = LLVMBuildSub(M->b, t, rlo, "");
    if (au > 0) {
      lo = gr_ceil_div(M, x1, au);
      hi = gr_floor_div(M, x2, au);
    } else {
      lo = gr_ceil_div(M, LLVMBuildSub(M->b, zero, x2, ""), -au);
      hi = gr_floor_div(M, LLVMBuildSub(M->b, zero, x1, ""), -au);
    }
    lo = gr_smax(M, lo, zero);
    hi = gr_smin(M, hi, last);
  }
  *from = lo;
  *cnt = gr_smax(M, zero, LLVMBuildAdd(M->b, LLVMBuildSub(M->b, hi, lo, ""), one, ""));
}

/* Point i of wavefront t: sets x[d] for the dimensions of `dims` (which
 * holds s; the others keep what the caller put in x), enumerating dims
 * without s in increasing order, u over cnt values from `from` and the
 * others over their extents, and solving a . x = t for x_s. Returns i1:
 * that point exists (x_s integral and inside). */
static LLVMValueRef gr_decode(cg_fn *f, const lw_rec *c, LLVMValueRef *ext, uint64_t dims,
                              uint32_t s, uint32_t u, LLVMValueRef i, LLVMValueRef t,
                              LLVMValueRef from, LLVMValueRef cnt, LLVMValueRef *x) {
  cg_module *M = f->M;
  uint32_t first = c->n; /* the outermost enumerated dimension takes the rest */
  for (uint32_t d = c->n; d-- > 0;)
    if (d != s && gr_has(dims, d))
      first = d;
  LLVMValueRef rest = i, rem = t;
  for (uint32_t d = c->n; d-- > 0;) {
    if (d == s || !gr_has(dims, d))
      continue;
    LLVMValueRef span = d == u ? cnt : ext[d];
    if (d == first) {
      x[d] = rest;
    } else {
      x[d] = LLVMBuildURem(M->b, rest, span, "");
      rest = LLVMBuildUDiv(M->b, rest, span, "");
    }
    if (d == u)
      x[d] = LLVMBuildAdd(M->b, x[d], from, "");
    if (c->a[d])
      rem = LLVMBuildSub(M->b, rem, LLVMBuildMul(M->b, cg_i64(M, c->a[d]), x[d], ""), "");
  }
  int64_t as = c->a[s];
  LLVMValueRef valid = LLVMConstInt(M->t_i1, 1, 0);
  if (as == 1) {
    x[s] = rem;
  } else if (as == -1) {
    x[s] = LLVMBuildSub(M->b, cg_i64(M, 0), rem, "");
  } else {
    LLVMValueRef r = LLVMBuildSRem(M->b, rem, cg_i64(M, as), "");
    valid = LLVMBuildICmp(M->b, LLVMIntEQ, r, cg_i64(M, 0), "");
    x[s] = LLVMBuildSDiv(M->b, rem, cg_i64(M, as), "");
  }
  return LLVMBuildAnd(M->b, valid, LLVMBuildICmp(M->b, LLVMIntULT, x[s], ext[s], ""), "");
}

/* Sets x[d] for the dimensions of mask from p, row-major over them (the
 * last one varies fastest). */
static void gr_unravel(cg_fn *f, const lw_rec *c, LLVMValueRef *ext, uint64_t mask, LLVMValueRef p,
                       LLVMValueRef *x) {
  cg_module *M = f->M;
  uint32_t first = c->n;
  for (uint32_t d = c->n; d-- > 0;)
    if (gr_has(mask, d))
      first = d;
  for (uint32_t d = c->n; d-- > 0;) {
    if (!gr_has(mask, d))
      continue;
    if (d == first) {
      x[d] = p;
    } else {
      x[d] = LLVMBuildURem(M->b, p, ext[d], "");
      p = LLVMBuildUDiv(M->b, p, ext[d], "");
    }
  }
}

/* The solved and restricted dimensions among those of mask (at least two,
 * one with a_d != 0), chosen as lw_rec_fronts_setup chooses them. */
static void gr_axes(const lw_rec *c, uint64_t mask, uint32_t *s, uint32_t *u) {
  *s = c->n;
  for (uint32_t d = c->n; d-- > 0 && *s == c->n;)
    if (gr_has(mask, d) && (c->a[d] == 1 || c->a[d] == -1))
      *s = d;
  for (uint32_t d = c->n; d-- > 0 && *s == c->n;)
    if (gr_has(mask, d) && c->a[d])
      *s = d;
  *u = c->n;
  for (uint32_t d = 0; d < c->n && *u == c->n; d++)
    if (d != *s && gr_has(mask, d) && c->a[d])
      *u = d;
  for (uint32_t d = 0; d < c->n && *u == c->n; d++)
    if (d != *s && gr_has(mask, d))
      *u = d;
}

static uint64_t gr_all(uint32_t n) {
  return n >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << n) - 1;
}

/* ---- kernels ---- */

/* "rec": all-zero schedule, every point at once (a . x = 0 everywhere). */
static uint32_t gr_all_kernel(const lw_rec *c) {
  cg_module *M = c->L->M;
  uint32_t kern;
  gr_kernel k;
  cg_val self;
  cg_fn *f = gr_begin(c, "rec", 0, &kern, &k, &self);
  lw_gpu_leave_if_failed(f);
  LLVMValueRef *x = cg_new(M, c->n * sizeof *x);
  lw_gloop il;
  LLVMValueRef i = lw_gloop_begin(f, &il, simt_gtid(f), f->hi, simt_gsize(f));
  gr_unravel(f, c, k.r.ext, gr_all(c->n), i, x);
  gr_point(f, &k, &self, x, cg_i64(M, 0));
  lw_gloop_end(f, &il);
  lw_gpu_kernel_end(c->L, f, kern);
  return kern;
}

/* "rec.seq": one problem of dimension s (the only one not in batch) per
 * thread, its points in order of a . x; n = the number of problems. */
static uint32_t gr_seq_kernel(const lw_rec *c, uint64_t batch, uint32_t s) {
  cg_module *M = c->L->M;
  uint32_t kern;
  gr_kernel k;
  cg_val self;
  cg_fn *f = gr_begin(c, "rec.seq", 0, &kern, &k, &self);
  lw_gpu_leave_if_failed(f);
  LLVMValueRef *x = cg_new(M, c->n * sizeof *x);
  lw_gloop pl;
  LLVMValueRef p = lw_gloop_begin(f, &pl, simt_gtid(f), f->hi, simt_gsize(f));
  gr_unravel(f, c, k.r.ext, batch, p, x);
  cg_loop jl;
  LLVMValueRef j = cg_loop_begin(f, &jl, cg_i64(M, 0), k.r.ext[s]);
  x[s] =
      c->a[s] > 0 ? j : LLVMBuildSub(M->b, LLVMBuildSub(M->b, k.r.ext[s], cg_i64(M, 1), ""), j, "");
  gr_point(f, &k, &self, x, LLVMBuildMul(M->b, cg_i64(M, c->a[s]), x[s], ""));
  cg_loop_end(f, &jl);
  lw_gloop_end(f, &pl);
  lw_gpu_kernel_end(c->L, f, kern);
  return kern;
}

/* "rec.front": the points of wavefront t (words t, kulo, cnt), all
 * problems at once; n = their count. */
static uint32_t gr_front_kernel(const lw_rec *c) {
  lw *L = c->L;
  cg_module *M = L->M;
  uint32_t kern;
  gr_kernel k;
  cg_val self;
  cg_fn *f = gr_begin(c, "rec.front", 0, &kern, &k, &self);
  lw_gpu_leave_if_failed(f);
  LLVMValueRef t = sk_ld(L, f, kern, &c->t), kulo = sk_ld(L, f, kern, &c->kulo);
  LLVMValueRef cnt = sk_ld(L, f, kern, &c->cnt);
  LLVMValueRef *x = cg_new(M, c->n * sizeof *x);
  lw_gloop il;
  LLVMValueRef i = lw_gloop_begin(f, &il, simt_gtid(f), f->hi, simt_gsize(f));
  LLVMValueRef valid = gr_decode(f, c, k.r.ext, gr_all(c->n), c->s, c->u, i, t, kulo, cnt, x);
  LLVMBasicBlockRef skip = sk_if(f, valid);
  gr_point(f, &k, &self, x, t);
  sk_endif(f, skip);
  lw_gloop_end(f, &il);
  lw_gpu_kernel_end(L, f, kern);
  return kern;
}

/* The shared copy of the table for "rec.block": one array per leaf, as
 * many cells as GR_SMEM holds for all leaves together, cut into 2^lg
 * equal parts; each thread's leaves point at its group's part. */
static void gr_shared_table(cg_fn *f, gr_kernel *k, LLVMValueRef cells, LLVMValueRef lg,
                            LLVMValueRef grp) {
  cg_module *M = f->M;
  uint64_t bytes = 0;
  for (uint32_t i = 0; i < k->r.out.n; i++)
    bytes += ac_scalar_size((ac_scalar)k->r.out.l[i].sc);
  if (bytes == 0)
    return;
  uint32_t cap = (uint32_t)(GR_SMEM / bytes);
  LLVMValueRef part = LLVMBuildLShr(M->b, cg_i64(M, cap), lg, "");
  LLVMValueRef first = LLVMBuildMul(M->b, grp, part, "");
  k->sm = k->r.out;
  k->sm.l = cg_new(M, k->r.out.n * sizeof *k->sm.l);
  for (uint32_t i = 0; i < k->r.out.n; i++) {
    LLVMTypeRef et = cg_mem_type(M, (ac_scalar)k->r.out.l[i].sc);
    k->sm.l[i] = k->r.out.l[i];
    k->sm.l[i].v = LLVMBuildGEP2(M->b, et, simt_shared(f, et, cap, "rec.table"), &first, 1, "");
  }
  k->fits = LLVMBuildICmp(M->b, LLVMIntULE, cells, part, "fits");
}

/* "rec.block": GR_BLOCK threads per block in G groups (the word `gw`: 1,
 * 2, 4 or 8), a problem per group, the blocks' groups spread over the
 * problems; each group walks the wavefronts of its problem, and a barrier
 * of the whole block separates consecutive wavefronts (the problems of a
 * recurrence all have the same extents, hence the same wavefronts). A
 * group is GR_BLOCK / G >= 32 threads: whole warps, so a group without a
 * problem idles without diverging any warp. pmask: the problem dimensions. */
static uint32_t gr_block_kernel(const lw_rec *c, uint64_t pmask, const lw_val *gw) {
  lw *L = c->L;
  cg_module *M = L->M;
  uint32_t kern;
  gr_kernel k;
  cg_val self;
  cg_fn *f = gr_begin(c, "rec.block", GR_BLOCK, &kern, &k, &self);
  k.pmask = pmask;
  LLVMValueRef zero = cg_i64(M, 0), one = cg_i64(M, 1);
  LLVMValueRef flags = simt_shared(f, M->t_i32, 2, "rec.failed");
  /* G = 2^lg: shifts, not divisions (64-bit division is a subroutine call
   * in PTX) */
  LLVMValueRef gv = sk_ld(L, f, kern, gw), lg = zero;
  for (int64_t q = 2; q <= 8; q *= 2)
    lg = LLVMBuildAdd(
        M->b, lg,
        LLVMBuildZExt(M->b, LLVMBuildICmp(M->b, LLVMIntSGE, gv, cg_i64(M, q), ""), M->t_i64, ""),
        "");
  LLVMValueRef groups = LLVMBuildShl(M->b, one, lg, "groups");
  LLVMValueRef tid = gr_i64(f, simt_tid(f));
  LLVMValueRef gsize = LLVMBuildLShr(M->b, cg_i64(M, GR_BLOCK), lg, "group.size");
  LLVMValueRef grp =
      LLVMBuildLShr(M->b, tid, LLVMBuildSub(M->b, cg_i64(M, GR_BLOCK_LG), lg, ""), "group");
  LLVMValueRef lane = LLVMBuildAnd(M->b, tid, LLVMBuildSub(M->b, gsize, one, ""), "");
  LLVMValueRef cells = gr_product(f, c, k.r.ext, pmask);
  gr_shared_table(f, &k, cells, lg, grp);
  lw_gpu_guard(f);

  uint32_t s, u;
  gr_axes(c, pmask, &s, &u);
  uint64_t umask = pmask & ~((uint64_t)1 << u), omask = umask & ~((uint64_t)1 << s);
  /* no problem at all when a problem has no points */
  LLVMValueRef nprob = gr_product(f, c, k.r.ext, gr_all(c->n) & ~pmask);
  nprob = LLVMBuildSelect(M->b, LLVMBuildICmp(M->b, LLVMIntEQ, cells, zero, ""), zero, nprob, "");
  LLVMValueRef tmin = gr_extreme(f, c, k.r.ext, pmask, -1);
  LLVMValueRef tend = LLVMBuildAdd(M->b, gr_extreme(f, c, k.r.ext, pmask, 1), one, "");
  LLVMValueRef rlo = gr_extreme(f, c, k.r.ext, umask, -1), rhi = gr_extreme(f, c, k.r.ext, umask, 1);
  LLVMValueRef other = gr_product(f, c, k.r.ext, omask);
  LLVMValueRef thread0 = LLVMBuildICmp(M->b, LLVMIntEQ, tid, zero, "");
  LLVMValueRef step = cg_alloca(f, M->t_i64), seen = cg_alloca(f, M->t_i32);
  LLVMBuildStore(M->b, zero, step);
  LLVMBuildStore(M->b, LLVMConstInt(M->t_i32, 0, 0), seen);
  LLVMValueRef *x = cg_new(M, c->n * sizeof *x);

  /* the block's first problems, uniform; then the group's own */
  lw_gloop pl;
  LLVMValueRef pb = lw_gloop_begin(f, &pl, LLVMBuildMul(M->b, gr_i64(f, simt_ctaid(f)), groups, ""),
                                  nprob, LLVMBuildMul(M->b, gr_i64(f, simt_nctaid(f)), groups, ""));
  LLVMValueRef p = LLVMBuildAdd(M->b, pb, grp, "problem");
  LLVMValueRef active = LLVMBuildICmp(M->b, LLVMIntULT, p, nprob, "");
  gr_unravel(f, c, k.r.ext, gr_all(c->n) & ~pmask, p, x);
  cg_loop tl;
  LLVMValueRef t = cg_loop_begin(f, &tl, tmin, tend);
  /* thread 0 looks at the failure flag now, uses it after its points */
  LLVMBasicBlockRef join = sk_if(f, thread0);
  LLVMBuildStore(M->b, LLVMBuildZExt(M->b, cg_failed(f), M->t_i32, ""), seen);
  sk_endif(f, join);
  LLVMValueRef from, cnt;
  gr_urange(f, c, k.r.ext, u, t, rlo, rhi, &from, &cnt);
  LLVMValueRef count = LLVMBuildSelect(M->b, active, LLVMBuildMul(M->b, cnt, other, ""), zero, "");
  lw_gloop il;
  LLVMValueRef i = lw_gloop_begin(f, &il, lane, count, gsize);
  LLVMValueRef valid = gr_decode(f, c, k.r.ext, pmask, s, u, i, t, from, cnt, x);
  LLVMBasicBlockRef skip = sk_if(f, valid);
  gr_point(f, &k, &self, x, t);
  sk_endif(f, skip);
  lw_gloop_end(f, &il);
  /* flags[step & 1]: the slot thread 0 writes next is two barriers away
   * from every read of it */
  LLVMValueRef st = LLVMBuildLoad2(M->b, M->t_i64, step, "");
  LLVMValueRef slot = LLVMBuildGEP2(M->b, M->t_i32, flags,
                                    (LLVMValueRef[]){LLVMBuildAnd(M->b, st, one, "")}, 1, "");
  join = sk_if(f, thread0);
  LLVMBuildStore(M->b, LLVMBuildLoad2(M->b, M->t_i32, seen, ""), slot);
  sk_endif(f, join);
  simt_barrier(f);
  LLVMBuildStore(M->b, LLVMBuildAdd(M->b, st, one, ""), step);
  LLVMValueRef failed = LLVMBuildICmp(M->b, LLVMIntNE, LLVMBuildLoad2(M->b, M->t_i32, slot, ""),
                                      LLVMConstInt(M->t_i32, 0, 0), "");
  LLVMBasicBlockRef out = cg_block(f, "rec.failed"), go = cg_block(f, "rec.next");
  LLVMBuildCondBr(M->b, failed, out, go);
  LLVMPositionBuilderAtEnd(M->b, out);
  LLVMBuildRetVoid(M->b);
  LLVMPositionBuilderAtEnd(M->b, go);
  cg_loop_end(f, &tl);
  lw_gloop_end(f, &pl);
  lw_gpu_kernel_end(L, f, kern);
  return kern;
}

/* ---- the plan ---- */

/* Plan expression: the product of the extents of the dimensions of mask. */
static uint32_t gr_xproduct(const lw_rec *c, uint64_t mask) {
  lw *L = c->L;
  uint32_t p = lw_x_const(L, 1);
  for (uint32_t d = 0; d < c->n; d++)
    if (gr_has(mask, d))
      p = lw_x_bin(L, PX_MUL, p, sk_xw(L, &c->ext[d]));
  return p;
}

/* Plan expression: the number of wavefronts, 1 + sum |a_d| (ext_d - 1). */
static uint32_t gr_xwavefronts(const lw_rec *c) {
  lw *L = c->L;
  uint32_t w = lw_x_const(L, 1);
  for (uint32_t d = 0; d < c->n; d++)
    if (c->a[d] != 0)
      w = lw_x_bin(L, PX_ADD, w,
                   lw_x_bin(L, PX_MUL, lw_x_const(L, c->a[d] < 0 ? -c->a[d] : c->a[d]),
                            lw_x_bin(L, PX_SUB, sk_xw(L, &c->ext[d]), lw_x_const(L, 1))));
  return w;
}

/* x in a word, so that the expressions using it do not repeat it. */
static uint32_t gr_hoist(lw *L, uint32_t x) {
  return lw_x_is_const(L, x, NULL) ? x : lw_x_word(L, lw_x_to_word(L, x));
}

/* 1 + (x > k1) + 2 (x > k2) + 4 (x > k4): a power of two from 1 to 8
 * picked by thresholds (plan expression). */
static uint32_t gr_xsteps(lw *L, uint32_t x, int64_t k1, int64_t k2, int64_t k4) {
  uint32_t r = lw_x_const(L, 1);
  r = lw_x_bin(L, PX_ADD, r, lw_x_bin(L, PX_LT, lw_x_const(L, k1), x));
  r = lw_x_bin(L, PX_ADD, r,
               lw_x_bin(L, PX_MUL, lw_x_const(L, 2), lw_x_bin(L, PX_LT, lw_x_const(L, k2), x)));
  return lw_x_bin(L, PX_ADD, r,
                  lw_x_bin(L, PX_MUL, lw_x_const(L, 4), lw_x_bin(L, PX_LT, lw_x_const(L, k4), x)));
}

/* Problems of two or more dimensions: blocks while the wavefronts are
 * narrow, else a launch per wavefront. */
static void gr_wide(lw_rec *c, uint64_t pmask) {
  lw *L = c->L;
  lw_val gw;
  lw_fresh(L, ir_ty_scalar(L->ctx, AC_I64), &gw);
  uint32_t kb = gr_block_kernel(c, pmask, &gw);
  lw_rec_fronts_setup(c);
  uint32_t kf = gr_front_kernel(c);
  /* w = ceil(cells / wavefronts) - 1, the average wavefront's points less
   * one; an empty domain (which makes it meaningless) takes the block
   * path, which does nothing */
  uint32_t cells = gr_xproduct(c, pmask);
  uint32_t waves = lw_x_bin(L, PX_MAX, gr_xwavefronts(c), lw_x_const(L, 1));
  uint32_t w =
      gr_hoist(L, lw_x_bin(L, PX_DIV, lw_x_bin(L, PX_SUB, cells, lw_x_const(L, 1)), waves));
  lw_val narrow;
  sk_word(L, lw_x_bin(L, PX_LT, w, lw_x_const(L, (int64_t)GR_BLOCK * GR_PER_THREAD)), &narrow);
  pl_if(L->p, narrow.words[0]);
  /* groups per block: as many as fit problems of w + 1 points per
   * wavefront into a warp each (w < 32: 8 groups of 32 threads; w < 64: 4
   * of 64; w < 128: 2), but not more than there are problems */
  uint32_t nprob = gr_hoist(L, gr_xproduct(c, gr_all(c->n) & ~pmask));
  uint32_t by_width =
      lw_x_bin(L, PX_DIV, lw_x_const(L, 8),
               gr_xsteps(L, w, SIMT_WARP - 1, 2 * SIMT_WARP - 1, 4 * SIMT_WARP - 1));
  uint32_t by_count = gr_xsteps(L, nprob, 1, 2, 4);
  pl_set(L->p, gw.words[0], lw_x_bin(L, PX_MIN, by_width, by_count));
  uint32_t g = sk_xw(L, &gw);
  uint32_t blocks =
      lw_x_bin(L, PX_DIV, lw_x_bin(L, PX_ADD, nprob, lw_x_bin(L, PX_SUB, g, lw_x_const(L, 1))), g);
  lw_launch(L, kb, lw_x_bin(L, PX_MUL, blocks, lw_x_const(L, GR_BLOCK)), PL_AUTO);
  pl_else(L->p);
  lw_rec_fronts(c, kf);
  pl_end(L->p);
}

bool lw_gskel_rec(lw *L, ir_ref e, lw_val *out) {
  /* dimension masks are 64 bits, as the verifier's limit on the rank */
  if (ir_node_get(L->m, e)->attr > 64) {
    cg_error(L->M, AC_ERR_INTERNAL, e, "rec with more than 64 dimensions");
    return false;
  }
  lw_rec c;
  if (!lw_rec_begin(L, e, &c, out))
    return false;
  bool zero = true;
  for (uint32_t d = 0; d < c.n; d++)
    zero = zero && c.a[d] == 0;
  if (zero) {
    lw_launch(L, gr_all_kernel(&c), gr_xproduct(&c, gr_all(c.n)), PL_AUTO);
    return L->M->st == AC_OK;
  }
  uint64_t batch = gr_batch(&c), pmask = gr_all(c.n) & ~batch;
  uint32_t np = 0, s = 0;
  for (uint32_t d = 0; d < c.n; d++)
    if (gr_has(pmask, d)) {
      np++;
      s = d;
    }
  if (np == 1)
    lw_launch(L, gr_seq_kernel(&c, batch, s), gr_xproduct(&c, batch), PL_AUTO);
  else
    gr_wide(&c, pmask);
  return L->M->st == AC_OK;
}
