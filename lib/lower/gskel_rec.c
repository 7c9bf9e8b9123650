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
 *   |P| >= 2, decided per call by plan `if`s on the average wavefront
 *     width w = (cells of a problem) / (wavefronts):
 *     - one problem of two dimensions whose reads are uniform with one
 *       sign per dimension (the CPU's tiles, lw_rec_tileable) and whose
 *       cells fit: "rec.tiles", TILES ACROSS THE DEVICE when their critical
 *       path is the shorter (gr_xtiles_win, gr_tiles_kernel): a band of 32
 *       rows per block, drawn by ticket, its tiles computed in shared
 *       memory and published to the band below through a flag, in one
 *       launch;
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
  uint64_t dead; /* "rec.tiles": leaves the shared tile leaves out (gr_tile_dead) */
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
 * and the bounds and builds the array value the body sees, read by gr_read
 * (or by `read`, when not NULL). */
static cg_fn *gr_begin(const lw_rec *c, const char *kind, unsigned block, uint32_t *kernel,
                       gr_kernel *k, cg_val *self, cg_read_fn read) {
  *k = (gr_kernel){0};
  cg_fn *f = lw_gpu_kernel_begin(c->L, c->e, kind, 1, block, kernel);
  lw_rec_kern_setup(c, f, *kernel, &k->r, read ? read : gr_read, self);
  return f;
}

/* ---- kernel helpers ---- */


static LLVMValueRef gr_i64(cg_fn *f, LLVMValueRef v32) {
  return LLVMBuildZExt(f->M->b, v32, f->M->t_i64, "");
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
    lo = cg_smax(M, lo, zero);
    hi = cg_smin(M, hi, last);
  }
  *from = lo;
  *cnt = cg_smax(M, zero, LLVMBuildAdd(M->b, LLVMBuildSub(M->b, hi, lo, ""), one, ""));
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
  cg_fn *f = gr_begin(c, "rec", 0, &kern, &k, &self, NULL);
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
  cg_fn *f = gr_begin(c, "rec.seq", 0, &kern, &k, &self, NULL);
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
  cg_fn *f = gr_begin(c, "rec.front", 0, &kern, &k, &self, NULL);
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
  cg_fn *f = gr_begin(c, "rec.block", GR_BLOCK, &kern, &k, &self, NULL);
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

/* ---- tiles: one large problem over the whole device ---- */

/* The tile of "rec.tiles" (see gr_tiles_kernel): GR_TILE_ROWS rows, one
 * thread of its block (a warp) each, and a number of columns set at
 * compile time from the size of a cell (gr_tile_cols). */
#define GR_TILE_ROWS 32u
/* Reach (in either dimension) up to which a tile's halo is loaded. */
#define GR_TILE_REACH 8

typedef struct gr_tiles {
  /* i32[bands + 1]: [0] the next band's ticket, [1 + I] how many tiles
   * band I has finished; zero before the launch (gr_clear_kernel) */
  lw_val flags;
  int64_t cols;
} gr_tiles;

/* The shared tile's row length for `cols` columns and a reach of r1:
 * even, so that the threads of a wavefront, one per row, which touch cells
 * (p + k, q - k), stride an odd number of words apart and hit 32
 * different banks (with a row of 129 words, every lane hit the same
 * bank). */
static int64_t gr_tile_stride(int64_t cols, int64_t r1) {
  return (cols + r1 + 1) / 2 * 2;
}

/* Bytes of one cell in the shared tile: its leaves but the dead ones. */
static uint64_t gr_cell_bytes(const lw_rec *c, uint64_t dead) {
  cg_val v;
  cg_val_alloc(c->L->M, ir_node_get(c->L->m, c->body)->type, &v);
  uint64_t bytes = 0;
  for (uint32_t i = 0; i < v.n; i++)
    if (!cg_leaf_in(dead, i))
      bytes += ac_scalar_size((ac_scalar)v.l[i].sc);
  return bytes;
}

/* The columns of a tile: the most of 128, 64 and 32 whose tile and halo
 * (the leaves but `dead`) fit in GR_SMEM bytes of shared memory; 0 when
 * none does, or when the recurrence cannot be tiled (a two-dimensional
 * problem, reads of one sign per dimension reaching at most GR_TILE_REACH
 * back). */
static int64_t gr_tile_cols(const lw_rec *c, uint64_t dead) {
  if (c->n != 2 || !lw_rec_tileable(c))
    return 0;
  int64_t r0 = lw_rec_reach(c, 0), r1 = lw_rec_reach(c, 1);
  uint64_t bytes = gr_cell_bytes(c, dead);
  if (r0 > GR_TILE_REACH || r1 > GR_TILE_REACH || bytes == 0)
    return 0;
  for (int64_t cols = 128; cols >= 32; cols /= 2)
    if ((uint64_t)(GR_TILE_ROWS + r0) * (uint64_t)gr_tile_stride(cols, r1) * bytes <= GR_SMEM)
      return cols;
  return 0;
}

/* "rec.tiles.clear": the flags to zero (n words). */
static uint32_t gr_clear_kernel(const lw_rec *c, const lw_val *flags) {
  lw *L = c->L;
  cg_module *M = L->M;
  uint32_t kern;
  cg_fn *f = lw_gpu_kernel_begin(L, c->e, "rec.tiles.clear", LW_GRAIN, 0, &kern);
  cg_val fv;
  lw_load(L, f, kern, flags, &fv);
  lw_gloop il;
  LLVMValueRef i = lw_gloop_begin(f, &il, simt_gtid(f), f->hi, simt_gsize(f));
  LLVMBuildStore(M->b, LLVMConstInt(M->t_i32, 0, 0),
                 LLVMBuildGEP2(M->b, M->t_i32, fv.l[0].v, &i, 1, ""));
  lw_gloop_end(f, &il);
  lw_gpu_kernel_end(L, f, kern);
  return kern;
}

/* The 0-based coordinate of walking coordinate y (rows of `len` from y)
 * in dimension d: where a box of that many starts. */
static LLVMValueRef gr_box_start(cg_fn *f, const lw_rec *c, uint32_t d, LLVMValueRef ext,
                                 LLVMValueRef y, LLVMValueRef len) {
  cg_module *M = f->M;
  if (lw_rec_sigma(c, d) > 0)
    return y;
  return LLVMBuildSub(M->b, LLVMBuildSub(M->b, ext, y, ""), len, "");
}

/* dst[di] = src[si], every leaf but `dead`; `vol`: volatile loads (memory
 * another block wrote). */
static void gr_copy_cell(cg_fn *f, const cg_val *dst, LLVMValueRef di, const cg_val *src,
                         LLVMValueRef si, bool vol, uint64_t dead) {
  for (uint32_t i = 0; i < dst->n; i++)
    if (!cg_leaf_in(dead, i))
      cg_store_elem(f, &dst->l[i], di,
                    vol ? cg_load_elem_volatile(f, &src->l[i], si)
                        : cg_load_elem(f, &src->l[i], si));
}

/* Copies cell (x0, x1) (0-based) of the table into the tile's shared
 * copy, if it lies inside the table (walking coordinates y0, y1 >= 0). */
static void gr_halo_cell(cg_fn *f, gr_kernel *k, const cg_val *table, LLVMValueRef y0,
                         LLVMValueRef y1) {
  cg_module *M = f->M;
  LLVMValueRef zero = cg_i64(M, 0);
  LLVMValueRef in = LLVMBuildAnd(M->b, LLVMBuildICmp(M->b, LLVMIntSGE, y0, zero, ""),
                                 LLVMBuildICmp(M->b, LLVMIntSGE, y1, zero, ""), "");
  LLVMBasicBlockRef join = sk_if(f, in);
  LLVMValueRef x0 = lw_rec_walking(f, &k->r, 0, y0), x1 = lw_rec_walking(f, &k->r, 1, y1);
  LLVMValueRef lin = LLVMBuildAdd(M->b, LLVMBuildMul(M->b, x0, k->r.ext[1], ""), x1, "");
  gr_copy_cell(f, &k->r.out, lw_rec_local_at(f, &k->r, x0, x1), table, lin, true, 0);
  sk_endif(f, join);
}

/* thread 0 of the block stores v (i1) in the shared word w; after the
 * barrier every thread has it (returned). */
static LLVMValueRef gr_share(cg_fn *f, LLVMValueRef w, LLVMValueRef thread0, LLVMValueRef v) {
  cg_module *M = f->M;
  LLVMBasicBlockRef join = sk_if(f, thread0);
  LLVMBuildStore(M->b, LLVMBuildZExt(M->b, v, M->t_i32, ""), w);
  sk_endif(f, join);
  simt_barrier(f);
  return LLVMBuildICmp(M->b, LLVMIntNE, LLVMBuildLoad2(M->b, M->t_i32, w, ""),
                       LLVMConstInt(M->t_i32, 0, 0), "");
}

/* Leaves the kernel (block-uniform) when `stop`. */
static void gr_leave_if(cg_fn *f, LLVMValueRef stop) {
  cg_module *M = f->M;
  LLVMBasicBlockRef out = cg_block(f, "rec.stop"), go = cg_block(f, "rec.go");
  LLVMBuildCondBr(M->b, stop, out, go);
  LLVMPositionBuilderAtEnd(M->b, out);
  LLVMBuildRetVoid(M->b);
  LLVMPositionBuilderAtEnd(M->b, go);
}

/* The tile's halo from the table: the reach's rows above (with the
 * corner), then the columns to the left. */
static void gr_table_halo(cg_fn *f, gr_kernel *k, const cg_val *table, LLVMValueRef tid,
                          LLVMValueRef *Y, LLVMValueRef *len) {
  cg_module *M = f->M;
  int64_t r0 = k->r.wdr, r1 = k->r.wdc;
  lw_gloop hl;
  LLVMValueRef q = lw_gloop_begin(f, &hl, tid, LLVMBuildAdd(M->b, len[1], cg_i64(M, r1), ""),
                                  cg_i64(M, GR_TILE_ROWS));
  LLVMValueRef y1 = LLVMBuildSub(M->b, LLVMBuildAdd(M->b, Y[1], q, ""), cg_i64(M, r1), "");
  for (int64_t dr = 1; dr <= r0; dr++)
    gr_halo_cell(f, k, table, LLVMBuildSub(M->b, Y[0], cg_i64(M, dr), ""), y1);
  lw_gloop_end(f, &hl);
  if (r1 > 0) {
    LLVMBasicBlockRef hj = sk_if(f, LLVMBuildICmp(M->b, LLVMIntULT, tid, len[0], ""));
    LLVMValueRef y0 = LLVMBuildAdd(M->b, Y[0], tid, "");
    for (int64_t dc = 1; dc <= r1; dc++)
      gr_halo_cell(f, k, table, y0, LLVMBuildSub(M->b, Y[1], cg_i64(M, dc), ""));
    sk_endif(f, hj);
  }
}

/* The computed tile to the table, row by row (coalesced stores). */
static void gr_table_out(cg_fn *f, gr_kernel *k, const cg_val *table, LLVMValueRef tid,
                         LLVMValueRef *X, LLVMValueRef *len) {
  cg_module *M = f->M;
  cg_loop rl;
  LLVMValueRef p = cg_loop_begin(f, &rl, cg_i64(M, 0), len[0]);
  lw_gloop cl;
  LLVMValueRef q = lw_gloop_begin(f, &cl, tid, len[1], cg_i64(M, GR_TILE_ROWS));
  LLVMValueRef x0 = LLVMBuildAdd(M->b, X[0], p, ""), x1 = LLVMBuildAdd(M->b, X[1], q, "");
  LLVMValueRef lin = LLVMBuildAdd(M->b, LLVMBuildMul(M->b, x0, k->r.ext[1], ""), x1, "");
  gr_copy_cell(f, table, lin, &k->r.out, lw_rec_local_at(f, &k->r, x0, x1), false, 0);
  lw_gloop_end(f, &cl);
  cg_loop_end(f, &rl);
}

/* ---- tiles with a window (lw_gskel_rec_window) ----
 * No table: a tile's halo comes from h (the last dr rows of the band
 * above, whole width, walking order: row k of h is the band's walking row
 * Y0 - dr + k) and from the block's own tile before, whose last dc columns
 * (with the rows above them, the corner) are still in shared memory; once
 * computed, a tile of a whole band leaves its last dr rows in h for the
 * band below. Band I + 1 reads h's columns of tile J after band I wrote
 * them (its flag) and overwrites them only after reading them, and no
 * other band touches them in between, so one h serves every band. The
 * point wanted is stored by the thread 0 of the tile holding it; lane p
 * folds row p of each tile into an accumulator the band keeps from its
 * first tile to its last, then stores it. */
typedef struct gr_win {
  const lw_rec_window *w;
  cg_val hv, z, rows;
  LLVMValueRef *at; /* the points wanted (lw_rec_window.at) */
  cg_var acc;
  bool folded; /* the lanes fold the rows as they go (gr_tile_lanes) */
} gr_win;

static void gr_win_load(lw *L, cg_fn *f, uint32_t kern, gr_win *wk) {
  const lw_rec_window *w = wk->w;
  lw_load(L, f, kern, &w->h, &wk->hv);
  wk->at = cg_new(L->M, (2 * w->npoints + 1) * sizeof *wk->at);
  for (uint32_t p = 0; p < 2 * w->npoints; p++)
    wk->at[p] = sk_ld(L, f, kern, &w->at[p]);
  if (w->fold) {
    lw_load(L, f, kern, &w->z, &wk->z);
    lw_load(L, f, kern, &w->rows, &wk->rows);
    cg_var_new(f, wk->z.type, &wk->acc);
  }
}

/* Element (row, col) of the tile's shared copy (local coordinates, the
 * halo's included). */
static LLVMValueRef gr_loc(cg_fn *f, const gr_kernel *k, LLVMValueRef row, LLVMValueRef col) {
  return LLVMBuildAdd(f->M->b, LLVMBuildMul(f->M->b, row, k->r.wsw, ""), col, "");
}

static void gr_win_halo(cg_fn *f, gr_kernel *k, const gr_win *wk, LLVMValueRef tid, LLVMValueRef I,
                        LLVMValueRef J, LLVMValueRef *Y, LLVMValueRef *len, int64_t TW) {
  cg_module *M = f->M;
  int64_t r0 = k->r.wdr, r1 = k->r.wdc;
  LLVMValueRef zero = cg_i64(M, 0), step = cg_i64(M, GR_TILE_ROWS);
  if (r1) { /* the tile before's last columns, whole height, to the left */
    LLVMBasicBlockRef join = sk_if(f, LLVMBuildICmp(M->b, LLVMIntUGT, J, zero, ""));
    lw_gloop sl;
    LLVMValueRef n = cg_i64(M, (GR_TILE_ROWS + r0) * r1);
    LLVMValueRef idx = lw_gloop_begin(f, &sl, tid, n, step);
    LLVMValueRef row = LLVMBuildUDiv(M->b, idx, cg_i64(M, r1), "");
    LLVMValueRef col = LLVMBuildURem(M->b, idx, cg_i64(M, r1), "");
    gr_copy_cell(f, &k->r.out, gr_loc(f, k, row, col), &k->r.out,
                 gr_loc(f, k, row, LLVMBuildAdd(M->b, col, cg_i64(M, TW), "")), false, k->dead);
    lw_gloop_end(f, &sl);
    sk_endif(f, join);
    simt_barrier(f); /* before the rows above overwrite what was read */
  }
  if (r0) { /* the band above's last rows */
    LLVMBasicBlockRef join = sk_if(f, LLVMBuildICmp(M->b, LLVMIntUGT, I, zero, ""));
    lw_gloop ql;
    LLVMValueRef q = lw_gloop_begin(f, &ql, tid, len[1], step);
    LLVMValueRef y1 = LLVMBuildAdd(M->b, Y[1], q, ""),
                 col = LLVMBuildAdd(M->b, q, cg_i64(M, r1), "");
    for (int64_t r = 0; r < r0; r++)
      gr_copy_cell(f, &k->r.out, gr_loc(f, k, cg_i64(M, r), col), &wk->hv,
                   LLVMBuildAdd(M->b, LLVMBuildMul(M->b, cg_i64(M, r), k->r.ext[1], ""), y1, ""),
                   true, k->dead);
    lw_gloop_end(f, &ql);
    sk_endif(f, join);
  }
}

static void gr_win_out(cg_fn *f, gr_kernel *k, gr_win *wk, uint32_t kern, LLVMValueRef tid,
                       LLVMValueRef *Y, LLVMValueRef *len) {
  cg_module *M = f->M;
  const lw_rec_window *w = wk->w;
  const lw_rec *c = k->r.c;
  int64_t r0 = k->r.wdr, r1 = k->r.wdc;
  LLVMValueRef step = cg_i64(M, GR_TILE_ROWS);
  if (r0) { /* a whole band's last rows, for the band below */
    LLVMBasicBlockRef join = sk_if(f, LLVMBuildICmp(M->b, LLVMIntEQ, len[0], step, ""));
    lw_gloop ql;
    LLVMValueRef q = lw_gloop_begin(f, &ql, tid, len[1], step);
    LLVMValueRef y1 = LLVMBuildAdd(M->b, Y[1], q, ""),
                 col = LLVMBuildAdd(M->b, q, cg_i64(M, r1), "");
    for (int64_t r = 0; r < r0; r++)
      gr_copy_cell(f, &wk->hv,
                   LLVMBuildAdd(M->b, LLVMBuildMul(M->b, cg_i64(M, r), k->r.ext[1], ""), y1, ""),
                   &k->r.out, gr_loc(f, k, cg_i64(M, GR_TILE_ROWS + r), col), false, k->dead);
    lw_gloop_end(f, &ql);
    sk_endif(f, join);
  }
  ir_type elem = ir_node_get(c->L->m, c->body)->type;
  for (uint32_t p = 0; p < w->npoints; p++) {
    LLVMValueRef in = LLVMBuildICmp(M->b, LLVMIntEQ, tid, cg_i64(M, 0), "");
    for (uint32_t d = 0; d < 2; d++) {
      LLVMValueRef off = LLVMBuildSub(M->b, wk->at[2 * p + d], Y[d], "");
      in = LLVMBuildAnd(M->b, in, LLVMBuildICmp(M->b, LLVMIntULT, off, len[d], ""), "");
    }
    LLVMBasicBlockRef join = sk_if(f, in);
    LLVMValueRef row =
        LLVMBuildAdd(M->b, LLVMBuildSub(M->b, wk->at[2 * p], Y[0], ""), cg_i64(M, r0), "");
    LLVMValueRef col =
        LLVMBuildAdd(M->b, LLVMBuildSub(M->b, wk->at[2 * p + 1], Y[1], ""), cg_i64(M, r1), "");
    cg_val v;
    sk_load(f, &k->r.out, elem, gr_loc(f, k, row, col), &v);
    lw_store(c->L, f, kern, &w->out[p], &v);
    sk_endif(f, join);
  }
  if (w->fold && !wk->folded) { /* lane p folds row p of the tile, in walking order */
    LLVMBasicBlockRef join = sk_if(f, LLVMBuildICmp(M->b, LLVMIntULT, tid, len[0], ""));
    LLVMValueRef row = LLVMBuildAdd(M->b, tid, cg_i64(M, r0), "");
    cg_loop ql;
    LLVMValueRef q = cg_loop_begin(f, &ql, cg_i64(M, 0), len[1]);
    cg_val a, v, part, next;
    cg_var_load(f, &wk->acc, &a);
    sk_load(f, &k->r.out, elem, gr_loc(f, k, row, LLVMBuildAdd(M->b, q, cg_i64(M, r1), "")), &v);
    lw_rec_fold_part(f, w, &v, &part);
    sk_apply2(f, w->fn, &a, &part, false, w->tmp, &next);
    cg_var_store(f, &wk->acc, &next);
    cg_loop_end(f, &ql);
    sk_endif(f, join);
  }
}

/* At a band's end: lane p stores its row's fold. */
static void gr_win_rows(cg_fn *f, gr_kernel *k, gr_win *wk, LLVMValueRef tid, LLVMValueRef *Y,
                        LLVMValueRef *len) {
  cg_module *M = f->M;
  LLVMBasicBlockRef join = sk_if(f, LLVMBuildICmp(M->b, LLVMIntULT, tid, len[0], ""));
  LLVMValueRef x0 = lw_rec_walking(f, &k->r, 0, LLVMBuildAdd(M->b, Y[0], tid, ""));
  cg_val a;
  cg_var_load(f, &wk->acc, &a);
  sk_store(f, &wk->rows, x0, &a);
  sk_endif(f, join);
}

/* The tile's points by wavefronts tau of the schedule inside it, a
 * barrier after each (thread k takes points k, k + 32, ..; tbase = a . X). */
static void gr_tile_fronts(cg_fn *f, gr_kernel *k, const cg_val *self, LLVMValueRef tid,
                           LLVMValueRef *X, LLVMValueRef *len, LLVMValueRef tbase) {
  cg_module *M = f->M;
  const lw_rec *c = k->r.c;
  uint32_t s, u;
  gr_axes(c, gr_all(2), &s, &u);
  uint64_t smask = (uint64_t)1 << s;
  LLVMValueRef one = cg_i64(M, 1);
  LLVMValueRef tmin = gr_extreme(f, c, len, gr_all(2), -1);
  LLVMValueRef tend = LLVMBuildAdd(M->b, gr_extreme(f, c, len, gr_all(2), 1), one, "");
  LLVMValueRef rlo = gr_extreme(f, c, len, smask, -1), rhi = gr_extreme(f, c, len, smask, 1);
  cg_loop tl;
  LLVMValueRef tau = cg_loop_begin(f, &tl, tmin, tend);
  LLVMValueRef from, cnt, xl[2], xg[2];
  gr_urange(f, c, len, u, tau, rlo, rhi, &from, &cnt);
  lw_gloop il;
  LLVMValueRef i = lw_gloop_begin(f, &il, tid, cnt, cg_i64(M, GR_TILE_ROWS));
  LLVMValueRef valid = gr_decode(f, c, len, gr_all(2), s, u, i, tau, from, cnt, xl);
  LLVMBasicBlockRef skip = sk_if(f, valid);
  for (uint32_t d = 0; d < 2; d++)
    xg[d] = LLVMBuildAdd(M->b, X[d], xl[d], "");
  LLVMValueRef mark;
  lw_rec_point_begin(f, &k->r, self, xg, LLVMBuildAdd(M->b, tbase, tau, ""), &mark);
  cg_val v;
  cg_expr(f, c->body, &v);
  sk_store(f, &k->r.out, lw_rec_local_at(f, &k->r, xg[0], xg[1]), &v);
  lw_rec_point_end(f, &k->r, mark);
  sk_endif(f, skip);
  lw_gloop_end(f, &il);
  simt_barrier(f);
  cg_loop_end(f, &tl);
}

/* ---- a tile by lanes ----
 * When the tile is walked by anti-diagonals (|b_0| = |b_1| = 1 in the
 * schedule inside it), lane p computes row p of the tile (walking order),
 * column s - p at step s, as ADEPT and CUDASW++ do: a read at walking
 * offsets o (o_0, o_1 <= 0) of the point of lane p at step s is the point
 * lane p + o_0 computed -(o_0 + o_1) steps before. With b_0 = 0 (every
 * read moves left: all rows at once, column s at step s) the same holds
 * with -o_1 steps. Each lane keeps its last K points in registers (K the
 * most steps a read goes back), and a read takes
 * its slot from the lane o_0 rows up by a shuffle (its own for o_0 = 0);
 * only reads of the halo (above the tile or left of it) load the shared
 * tile. All lanes run every step (the shuffles need the whole warp), the
 * values fetched before the point, whose code then reads them
 * (lw_rec_kern.lane_val); no barrier between steps, the warp being the
 * block. The points still go to the shared tile, for the table, the
 * window's rows and the next tile's halo; a window's fold of the rows is
 * taken in the walk, lane p folding its row in column order. */

/* Whether c's tiles in schedule b are walked by lanes: b_1 = +-1, b_0 in
 * -1..1 (by anti-diagonals, or column by column with every row at once). */
static bool gr_lanes_ok(const lw_rec *c, const int64_t *b) {
  return b[0] >= -1 && b[0] <= 1 && (b[1] == 1 || b[1] == -1) && c->rd.uniform;
}

/* The leaves the shared tile of a window folding its rows by lanes leaves
 * out: those no read uses (a fused cell's fields for the fold alone,
 * docs/passes.md §5.1), which the lanes fold as they compute them. */
static uint64_t gr_tile_dead(const lw_rec *c, const lw_rec_window *win) {
  if (!win || !win->fold)
    return 0;
  return ~cg_rec_live_leaves(c->L->m, &c->rd, c->body, ir_node_get(c->L->m, c->body)->type);
}

static void gr_tile_lanes(cg_fn *f, gr_kernel *k, const cg_val *self, gr_win *wk, LLVMValueRef tid,
                          LLVMValueRef *X, LLVMValueRef *len, LLVMValueRef tbase) {
  cg_module *M = f->M;
  const lw_rec *c = k->r.c;
  ir_type elem = ir_node_get(c->L->m, c->body)->type;
  int sigma[2] = {lw_rec_sigma(c, 0), lw_rec_sigma(c, 1)};
  int64_t b0 = c->a[0] != 0, r0 = k->r.wdr, r1 = k->r.wdc, K = 1;
  for (uint32_t j = 0; j < c->rd.noffs; j++) {
    int64_t back =
        -(b0 * sigma[0] * c->rd.offs[2 * (size_t)j] + sigma[1] * c->rd.offs[2 * (size_t)j + 1]);
    K = back > K ? back : K;
  }
  LLVMValueRef zero = cg_i64(M, 0), one = cg_i64(M, 1);
  /* hist[d]: this lane's point d + 1 steps ago */
  cg_var *hist = cg_new(M, (size_t)K * sizeof *hist), cur;
  for (int64_t d = 0; d < K; d++)
    cg_var_new(f, elem, &hist[d]);
  cg_var_new(f, elem, &cur);
  /* the reads' distinct walking offsets, one value each */
  uint32_t nr = c->rd.noffs, nu = 0;
  int64_t(*uo)[2] = cg_new(M, (nr + 1) * sizeof *uo);
  cg_var *uval = cg_new(M, (nr + 1) * sizeof *uval), *val = cg_new(M, (nr + 1) * sizeof *val);
  for (uint32_t j = 0; j < nr; j++) {
    int64_t o[2] = {sigma[0] * c->rd.offs[2 * (size_t)j], sigma[1] * c->rd.offs[2 * (size_t)j + 1]};
    uint32_t u = 0;
    while (u < nu && (uo[u][0] != o[0] || uo[u][1] != o[1]))
      u++;
    if (u == nu) {
      uo[nu][0] = o[0];
      uo[nu][1] = o[1];
      cg_var_new(f, elem, &uval[nu++]);
    }
    val[j] = uval[u];
  }
  /* the tile's own coordinates in 32 bits (a tile is 32 x at most 128
   * points): the step, the lane's column, the halo tests, the shared
   * tile's indices */
  LLVMTypeRef i32 = M->t_i32;
  LLVMValueRef p = LLVMBuildTrunc(M->b, tid, i32, "p");
  LLVMValueRef n0 = LLVMBuildTrunc(M->b, len[0], i32, ""),
               n1 = LLVMBuildTrunc(M->b, len[1], i32, "");
  LLVMValueRef sw = LLVMBuildTrunc(M->b, k->r.wsw, i32, ""), z32 = LLVMConstInt(i32, 0, 0);
  LLVMValueRef steps =
      b0 ? LLVMBuildSub(M->b, LLVMBuildAdd(M->b, len[0], len[1], ""), one, "") : len[1];
  cg_loop sl;
  LLVMValueRef s = LLVMBuildTrunc(M->b, cg_loop_begin(f, &sl, zero, steps), i32, "s");
  LLVMValueRef q = b0 ? LLVMBuildSub(M->b, s, p, "q") : s;
  LLVMValueRef valid = LLVMBuildAnd(M->b, LLVMBuildICmp(M->b, LLVMIntULT, p, n0, ""),
                                    LLVMBuildICmp(M->b, LLVMIntULT, q, n1, ""), "");
  for (uint32_t u = 0; u < nu; u++) {
    /* every lane shuffles; a halo cell comes from the shared tile */
    cg_val h;
    cg_var_load(f, &hist[-(b0 * uo[u][0] + uo[u][1]) - 1], &h);
    for (uint32_t l = 0; l < h.n && uo[u][0] < 0; l++)
      h.l[l].v = simt_shfl(f, SIMT_SHFL_UP, h.l[l].v, LLVMConstInt(i32, (uint64_t)-uo[u][0], 0));
    cg_var_store(f, &uval[u], &h);
    LLVMValueRef y0 = LLVMBuildAdd(M->b, p, LLVMConstInt(i32, (uint64_t)uo[u][0], 1), "");
    LLVMValueRef y1 = LLVMBuildAdd(M->b, q, LLVMConstInt(i32, (uint64_t)uo[u][1], 1), "");
    LLVMValueRef halo = LLVMBuildOr(M->b, LLVMBuildICmp(M->b, LLVMIntSLT, y0, z32, ""),
                                    LLVMBuildICmp(M->b, LLVMIntSLT, y1, z32, ""), "");
    LLVMBasicBlockRef join = sk_if(f, LLVMBuildAnd(M->b, valid, halo, ""));
    LLVMValueRef at = LLVMBuildAdd(
        M->b,
        LLVMBuildMul(M->b, LLVMBuildAdd(M->b, y0, LLVMConstInt(i32, (uint64_t)r0, 0), ""), sw, ""),
        LLVMBuildAdd(M->b, y1, LLVMConstInt(i32, (uint64_t)r1, 0), ""), "");
    cg_val hv;
    cg_val_alloc(M, elem, &hv);
    for (uint32_t l = 0; l < hv.n; l++)
      hv.l[l].v = cg_leaf_in(k->dead, l)
                      ? LLVMConstNull(cg_scalar_type(M, (ac_scalar)hv.l[l].sc))
                      : cg_load_elem(f, &k->r.out.l[l], LLVMBuildZExt(M->b, at, M->t_i64, ""));
    cg_var_store(f, &uval[u], &hv);
    sk_endif(f, join);
  }
  LLVMBasicBlockRef join = sk_if(f, valid);
  LLVMValueRef xg[2], t = tbase, y[2] = {p, q};
  for (uint32_t d = 0; d < 2; d++) {
    LLVMValueRef yl = LLVMBuildZExt(M->b, y[d], M->t_i64, "");
    LLVMValueRef xl =
        sigma[d] > 0 ? yl : LLVMBuildSub(M->b, LLVMBuildSub(M->b, len[d], one, ""), yl, "");
    xg[d] = LLVMBuildAdd(M->b, X[d], xl, "");
    t = LLVMBuildAdd(M->b, t, LLVMBuildMul(M->b, cg_i64(M, c->a[d]), xl, ""), "");
  }
  LLVMValueRef mark;
  k->r.lane_val = val;
  lw_rec_point_begin(f, &k->r, self, xg, t, &mark);
  cg_val v;
  cg_expr(f, c->body, &v);
  LLVMValueRef here = LLVMBuildAdd(
      M->b,
      LLVMBuildMul(M->b, LLVMBuildAdd(M->b, p, LLVMConstInt(i32, (uint64_t)r0, 0), ""), sw, ""),
      LLVMBuildAdd(M->b, q, LLVMConstInt(i32, (uint64_t)r1, 0), ""), "");
  for (uint32_t l = 0; l < v.n; l++)
    if (!cg_leaf_in(k->dead, l))
      cg_store_elem(f, &k->r.out.l[l], LLVMBuildZExt(M->b, here, M->t_i64, ""), v.l[l].v);
  lw_rec_point_end(f, &k->r, mark);
  k->r.lane_val = NULL;
  cg_var_store(f, &cur, &v);
  if (wk && wk->w && wk->w->fold) { /* lane p folds row p, in column order */
    cg_val a, part, next;
    cg_var_load(f, &wk->acc, &a);
    lw_rec_fold_part(f, wk->w, &v, &part);
    sk_apply2(f, wk->w->fn, &a, &part, false, wk->w->tmp, &next);
    cg_var_store(f, &wk->acc, &next);
  }
  sk_endif(f, join);
  /* the history moves one step */
  for (int64_t d = K - 1; d >= 0; d--) {
    cg_val x;
    cg_var_load(f, d > 0 ? &hist[d - 1] : &cur, &x);
    cg_var_store(f, &hist[d], &x);
  }
  cg_loop_end(f, &sl);
}

/* "rec.tiles": one large two-dimensional problem (tileable reads), its
 * table cut into BANDS of GR_TILE_ROWS rows (walking order) and each band
 * into tiles of g->cols columns. A block (one warp) draws a band by atomic
 * ticket and computes its tiles in the walking order; before tile J it
 * waits until the band above has finished its tile J (flags[band]), so
 * that every cell the tile reads (up and to the left in walking order,
 * within the reach) is in the table. The tile is computed in shared
 * memory: its halo (the reach's rows above and columns to the left) is
 * loaded from the table, its points are computed by lanes (a row per lane,
 * gr_tile_lanes) or by wavefronts of the schedule inside the tile
 * (gr_tile_fronts), then the tile is copied to the table row by row
 * (coalesced stores) and published: stores, fence, barrier, then thread 0
 * raises the band's count. Bands go by ticket, so a band only waits for
 * bands that running blocks own, and the launch needs no more blocks than
 * fit on the device: one launch for the whole table, instead of one per
 * wavefront, and every SM busy once the bands are under way. A failure
 * stops the waits and the blocks at their next tile. */
static uint32_t gr_tiles_kernel(const lw_rec *c, const gr_tiles *g, const lw_rec_window *win) {
  lw *L = c->L;
  cg_module *M = L->M;
  uint32_t kern;
  gr_kernel k;
  cg_val self;
  cg_fn *f = gr_begin(c, win ? "rec.tiles.window" : "rec.tiles", GR_TILE_ROWS, &kern, &k, &self,
                      lw_rec_kern_read);
  gr_win wk = {.w = win};
  if (win)
    gr_win_load(L, f, kern, &wk);
  LLVMValueRef zero = cg_i64(M, 0), one = cg_i64(M, 1);
  int64_t r0 = lw_rec_reach(c, 0), r1 = lw_rec_reach(c, 1), TH = GR_TILE_ROWS, TW = g->cols;
  cg_val fv;
  lw_load(L, f, kern, &g->flags, &fv);
  LLVMValueRef F = fv.l[0].v;
  /* the table stays in `table`; the kernel's `out` becomes the tile (the
   * leaves a window's fold alone reads, when the lanes fold in the walk,
   * are left out of it: gr_tile_dead) */
  bool lanes = gr_lanes_ok(c, c->a);
  k.dead = lanes ? gr_tile_dead(c, win) : 0;
  cg_val table = k.r.out;
  k.r.out.l = cg_new(M, table.n * sizeof *k.r.out.l);
  for (uint32_t i = 0; i < table.n; i++) {
    k.r.out.l[i] = table.l[i];
    if (!cg_leaf_in(k.dead, i))
      k.r.out.l[i].v = simt_shared(f, cg_mem_type(M, (ac_scalar)table.l[i].sc),
                                   (uint32_t)((TH + r0) * gr_tile_stride(TW, r1)), "rec.tile");
  }
  k.r.window = true;
  k.r.wdr = r0;
  k.r.wdc = r1;
  k.r.wsw = cg_i64(M, gr_tile_stride(TW, r1));
  LLVMValueRef wticket = simt_shared(f, M->t_i32, 1, "rec.band");
  LLVMValueRef wstop = simt_shared(f, M->t_i32, 1, "rec.stop");
  lw_gpu_guard(f);
  LLVMValueRef tid = gr_i64(f, simt_tid(f));
  LLVMValueRef thread0 = LLVMBuildICmp(M->b, LLVMIntEQ, tid, zero, "");
  LLVMValueRef *ext = k.r.ext, bands, ntc;
  bands = LLVMBuildUDiv(M->b, LLVMBuildAdd(M->b, ext[0], cg_i64(M, TH - 1), ""), cg_i64(M, TH), "");
  ntc = LLVMBuildUDiv(M->b, LLVMBuildAdd(M->b, ext[1], cg_i64(M, TW - 1), ""), cg_i64(M, TW), "");
  wk.folded = lanes && win && win->fold;

  /* the band loop: a ticket per band */
  LLVMBasicBlockRef head = cg_block(f, "rec.band"), body = cg_block(f, "rec.band.body");
  LLVMBasicBlockRef done = cg_block(f, "rec.bands.done");
  LLVMBuildBr(M->b, head);
  LLVMPositionBuilderAtEnd(M->b, head);
  LLVMBasicBlockRef join = sk_if(f, thread0);
  LLVMBuildStore(M->b,
                 simt_atomic_relaxed(f, LLVMAtomicRMWBinOpAdd, F, LLVMConstInt(M->t_i32, 1, 0)),
                 wticket);
  sk_endif(f, join);
  simt_barrier(f);
  LLVMValueRef I = gr_i64(f, LLVMBuildLoad2(M->b, M->t_i32, wticket, ""));
  LLVMBuildCondBr(M->b, LLVMBuildICmp(M->b, LLVMIntULT, I, bands, ""), body, done);
  LLVMPositionBuilderAtEnd(M->b, body);
  LLVMValueRef Y[2], len[2], X[2];
  Y[0] = LLVMBuildMul(M->b, I, cg_i64(M, TH), "");
  len[0] = cg_smin(M, cg_i64(M, TH), LLVMBuildSub(M->b, ext[0], Y[0], ""));
  X[0] = gr_box_start(f, c, 0, ext[0], Y[0], len[0]);
  if (win && win->fold)
    cg_var_store(f, &wk.acc, &wk.z);
  LLVMValueRef above = LLVMBuildGEP2(M->b, M->t_i32, F, &I, 1, "");
  LLVMValueRef mine =
      LLVMBuildGEP2(M->b, M->t_i32, F, (LLVMValueRef[]){LLVMBuildAdd(M->b, I, one, "")}, 1, "");
  cg_loop jl;
  LLVMValueRef J = cg_loop_begin(f, &jl, zero, ntc);
  Y[1] = LLVMBuildMul(M->b, J, cg_i64(M, TW), "");
  len[1] = cg_smin(M, cg_i64(M, TW), LLVMBuildSub(M->b, ext[1], Y[1], ""));
  X[1] = gr_box_start(f, c, 1, ext[1], Y[1], len[1]);
  /* thread 0 waits for the band above, if any, to finish tile J */
  join = sk_if(f, LLVMBuildAnd(M->b, thread0, LLVMBuildICmp(M->b, LLVMIntUGT, I, zero, ""), ""));
  LLVMBasicBlockRef wait = cg_block(f, "rec.wait"), nap = cg_block(f, "rec.nap");
  LLVMBasicBlockRef ready = cg_block(f, "rec.ready");
  LLVMBuildBr(M->b, wait);
  LLVMPositionBuilderAtEnd(M->b, wait);
  LLVMValueRef have = gr_i64(f, simt_load_volatile(f, M->t_i32, above));
  LLVMValueRef go =
      LLVMBuildOr(M->b, LLVMBuildICmp(M->b, LLVMIntUGT, have, J, ""), cg_failed(f), "");
  LLVMBuildCondBr(M->b, go, ready, nap);
  LLVMPositionBuilderAtEnd(M->b, nap);
  simt_yield(f);
  LLVMBuildBr(M->b, wait);
  LLVMPositionBuilderAtEnd(M->b, ready);
  simt_fence(f);
  sk_endif(f, join);
  gr_leave_if(f, gr_share(f, wstop, thread0, cg_failed(f)));
  k.r.wb[0] = Y[0];
  k.r.wb[1] = Y[1];
  /* the halo: the reach's rows above (with the corner), then the columns
   * to the left (from h and the tile before, with a window) */
  if (win)
    gr_win_halo(f, &k, &wk, tid, I, J, Y, len, TW);
  else
    gr_table_halo(f, &k, &table, tid, Y, len);
  simt_barrier(f); /* then the tile's points */
  LLVMValueRef tbase = zero;
  for (uint32_t d = 0; d < 2; d++)
    tbase = LLVMBuildAdd(M->b, tbase, LLVMBuildMul(M->b, cg_i64(M, c->a[d]), X[d], ""), "");
  if (lanes) { /* by lanes, or by wavefronts of a . x inside the tile */
    /* a tile whose reads all stay inside the domain, and whose reads of
     * arrays from outside stay in range, leaves out their checks (as the
     * CPU's interior tiles; the condition is the block's) */
    LLVMValueRef interior = LLVMConstInt(M->t_i1, 1, 0), xmax[2];
    for (uint32_t d = 0; d < 2; d++) {
      interior = LLVMBuildAnd(
          M->b, interior, LLVMBuildICmp(M->b, LLVMIntSGE, Y[d], cg_i64(M, lw_rec_reach(c, d)), ""),
          "");
      xmax[d] = LLVMBuildSub(M->b, LLVMBuildAdd(M->b, X[d], len[d], ""), one, "");
    }
    uint32_t nunchecked;
    ir_ref *unchecked = cg_rec_inputs_proven(f, &c->rd, k.r.lo, X, xmax, &interior, &nunchecked);
    LLVMBasicBlockRef inner = sk_if(f, interior);
    k.r.proven = 3;
    f->unchecked = unchecked;
    f->nunchecked = nunchecked;
    gr_tile_lanes(f, &k, &self, &wk, tid, X, len, tbase);
    f->unchecked = NULL;
    f->nunchecked = 0;
    k.r.proven = 0;
    sk_endif(f, inner);
    inner = sk_if(f, LLVMBuildNot(M->b, interior, ""));
    gr_tile_lanes(f, &k, &self, &wk, tid, X, len, tbase);
    sk_endif(f, inner);
    simt_barrier(f);
  } else {
    gr_tile_fronts(f, &k, &self, tid, X, len, tbase);
  }
  /* the tile to the table (or its window), then published */
  if (win)
    gr_win_out(f, &k, &wk, kern, tid, Y, len);
  else
    gr_table_out(f, &k, &table, tid, X, len);
  simt_fence(f);
  simt_barrier(f);
  join = sk_if(f, thread0);
  simt_store_volatile(f, LLVMBuildTrunc(M->b, LLVMBuildAdd(M->b, J, one, ""), M->t_i32, ""), mine);
  sk_endif(f, join);
  cg_loop_end(f, &jl);
  if (win && win->fold)
    gr_win_rows(f, &k, &wk, tid, Y, len);
  /* the ticket word is written again only after every thread read it */
  simt_barrier(f);
  LLVMBuildBr(M->b, head);
  LLVMPositionBuilderAtEnd(M->b, done);
  lw_gpu_kernel_end(L, f, kern);
  return kern;
}

/* Steps of a warp through one tile of `cols` columns in schedule b:
 * its wavefronts inside the tile. */
static int64_t gr_tile_steps(const int64_t *b, int64_t cols) {
  int64_t b0 = b[0] < 0 ? -b[0] : b[0], b1 = b[1] < 0 ? -b[1] : b[1];
  return 1 + b0 * (GR_TILE_ROWS - 1) + b1 * (cols - 1);
}

/* The schedule inside c's tiles of `cols` columns: among the candidates
 * (lw_rec_candidates), the first with the fewest steps through a tile. */
static const int64_t *gr_tile_schedule(const lw_rec *c, int64_t cols) {
  const int64_t *cand, *best = c->a;
  uint32_t k = lw_rec_candidates(c, &cand);
  for (uint32_t i = 1; i < k; i++)
    if (gr_tile_steps(cand + 2 * (size_t)i, cols) < gr_tile_steps(best, cols))
      best = cand + 2 * (size_t)i;
  return best;
}

/* The tiles' plan: the flags, zeroed, then one launch of "rec.tiles"
 * with a block per band (as many as fit at once). */
static void gr_tiles_plan(lw_rec *c, int64_t cols, const lw_rec_window *win) {
  lw *L = c->L;
  gr_tiles g = {.cols = cols};
  uint32_t bands = lw_x_bin(
      L, PX_DIV, lw_x_bin(L, PX_ADD, sk_xw(L, &c->ext[0]), lw_x_const(L, GR_TILE_ROWS - 1)),
      lw_x_const(L, GR_TILE_ROWS));
  bands = lw_x_hoist(L, bands);
  uint32_t words = lw_x_bin(L, PX_ADD, bands, lw_x_const(L, 1));
  lw_fresh(L, ir_ty_array(L->ctx, ir_ty_scalar(L->ctx, AC_I32), 1), &g.flags);
  lw_alloc_arrays(L, &g.flags, &words, c->e);
  lw_launch(L, gr_clear_kernel(c, &g.flags), words, PL_AUTO);
  lw_launch(L, gr_tiles_kernel(c, &g, win), lw_x_bin(L, PX_MUL, bands, lw_x_const(L, GR_TILE_ROWS)),
            PL_AUTO);
}

int64_t lw_gskel_rec_tile_cols(const lw_rec *c) {
  return gr_tile_cols(c, 0);
}

void lw_gskel_rec_window(lw_rec *c, const lw_rec_window *win) {
  int64_t cols = gr_tile_cols(c, 0);
  c->a = gr_tile_schedule(c, cols);
  /* wider tiles when the fields the fold alone reads stay out of them */
  int64_t wide = gr_tile_cols(c, gr_tile_dead(c, win));
  if (wide > cols && gr_lanes_ok(c, gr_tile_schedule(c, wide))) {
    cols = wide;
    c->a = gr_tile_schedule(c, cols);
  }
  gr_tiles_plan(c, cols, win);
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

/* A launch per wavefront costs about this many steps of a warp through
 * a tile (a launch and its drain, some 5 us, against some 80 ns a step:
 * an estimate, not yet measured on a device). */
#define GR_FRONT_STEPS 64

/* Whether the tiles (schedule b inside them) beat the other paths for one
 * problem whose best schedule has `waves` wavefronts (plan expressions),
 * by their critical paths. A warp's steps through the tiles, one point
 * per lane for edit distance, wait for the band above: (bands + tiles per
 * band - 1) tiles of gr_tile_steps each; the block kernel's are a
 * wavefront each, ceil(points per wavefront / GR_BLOCK) per thread; a
 * launch per wavefront (wavefronts too wide for a block) GR_FRONT_STEPS
 * each. So for edit distance the block keeps problems up to about 1500 x
 * 1500, a 4094 x 4094 problem, which it ran on one SM, goes to the tiles
 * (25,000 steps against 65,500), and so does 16384 x 16384 (101,601
 * against 2.1 million); 3000 x 5 points of d[i - 1, j - 1] keep their 5
 * launches. */
static uint32_t gr_xtiles_win(const lw_rec *c, const int64_t *b, int64_t cols, uint32_t waves) {
  lw *L = c->L;
  uint32_t one = lw_x_const(L, 1), nt[2];
  int64_t edge[2] = {GR_TILE_ROWS, cols};
  for (uint32_t d = 0; d < 2; d++)
    nt[d] =
        lw_x_bin(L, PX_DIV, lw_x_bin(L, PX_ADD, sk_xw(L, &c->ext[d]), lw_x_const(L, edge[d] - 1)),
                 lw_x_const(L, edge[d]));
  uint32_t cells = lw_x_hoist(L, gr_xproduct(c, gr_all(2)));
  uint32_t w = lw_x_hoist(L, lw_x_bin(L, PX_DIV, lw_x_bin(L, PX_SUB, cells, one), waves));
  uint32_t tsteps = lw_x_bin(L, PX_MUL, lw_x_bin(L, PX_SUB, lw_x_bin(L, PX_ADD, nt[0], nt[1]), one),
                             lw_x_const(L, gr_tile_steps(b, cols)));
  uint32_t bsteps = lw_x_bin(L, PX_MUL, waves,
                             lw_x_bin(L, PX_DIV, lw_x_bin(L, PX_ADD, w, lw_x_const(L, GR_BLOCK)),
                                      lw_x_const(L, GR_BLOCK)));
  uint32_t wide = lw_x_bin(L, PX_LE, lw_x_const(L, (int64_t)GR_BLOCK * GR_PER_THREAD), w);
  uint32_t fsteps = lw_x_bin(L, PX_MUL, waves, lw_x_const(L, GR_FRONT_STEPS));
  uint32_t other = lw_x_bin(L, PX_ADD, lw_x_bin(L, PX_MUL, wide, fsteps),
                            lw_x_bin(L, PX_MUL, lw_x_bin(L, PX_SUB, one, wide), bsteps));
  return lw_x_bin(L, PX_MUL, lw_x_bin(L, PX_LT, tsteps, other),
                  lw_x_bin(L, PX_LT, lw_x_const(L, 0), cells));
}

/* Problems of two or more dimensions (pmask): blocks while the wavefronts
 * are narrow, else a launch per wavefront. */
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
  uint32_t cells = lw_x_hoist(L, gr_xproduct(c, pmask));
  uint32_t waves = lw_x_hoist(L, lw_x_bin(L, PX_MAX, lw_rec_xwaves(c, c->a), lw_x_const(L, 1)));
  uint32_t w =
      lw_x_hoist(L, lw_x_bin(L, PX_DIV, lw_x_bin(L, PX_SUB, cells, lw_x_const(L, 1)), waves));
  lw_val narrow;
  sk_word(L, lw_x_bin(L, PX_LT, w, lw_x_const(L, (int64_t)GR_BLOCK * GR_PER_THREAD)), &narrow);
  pl_if(L->p, narrow.words[0]);
  /* groups per block: as many as fit problems of w + 1 points per
   * wavefront into a warp each (w < 32: 8 groups of 32 threads; w < 64: 4
   * of 64; w < 128: 2), but not more than there are problems */
  uint32_t nprob = lw_x_hoist(L, gr_xproduct(c, gr_all(c->n) & ~pmask));
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

/* The kernels of one schedule (c->a, not all zero): a thread per
 * one-dimensional problem, else gr_wide. The batch dimensions depend on
 * the schedule (a_d = 0). */
static void gr_by_schedule(lw_rec *c, void *ud) {
  (void)ud;
  uint64_t batch = gr_batch(c), pmask = gr_all(c->n) & ~batch;
  uint32_t np = 0, s = 0;
  for (uint32_t d = 0; d < c->n; d++)
    if (gr_has(pmask, d)) {
      np++;
      s = d;
    }
  if (np == 1)
    lw_launch(c->L, gr_seq_kernel(c, batch, s), gr_xproduct(c, batch), PL_AUTO);
  else
    gr_wide(c, pmask);
}

/* One large two-dimensional problem in tiles when they win (the schedule
 * inside a tile: the candidate with the fewest steps through it), else
 * the candidate schedule with the fewest wavefronts (lw_rec_by_schedule). */
static void gr_dependent(lw_rec *c) {
  lw *L = c->L;
  int64_t cols = c->n == 2 && gr_batch(c) == 0 ? gr_tile_cols(c, 0) : 0;
  if (cols) {
    const int64_t *cand;
    uint32_t k = lw_rec_candidates(c, &cand);
    lw_rec *ct = cg_new(L->M, sizeof *ct);
    *ct = *c;
    ct->a = gr_tile_schedule(c, cols);
    uint32_t waves = lw_rec_xwaves(c, c->a);
    for (uint32_t i = 1; i < k; i++)
      waves = lw_x_bin(L, PX_MIN, waves, lw_rec_xwaves(c, cand + 2 * (size_t)i));
    waves = lw_x_hoist(L, lw_x_bin(L, PX_MAX, waves, lw_x_const(L, 1)));
    lw_val tiles;
    sk_word(L, gr_xtiles_win(c, ct->a, cols, waves), &tiles);
    pl_if(L->p, tiles.words[0]);
    gr_tiles_plan(ct, cols, NULL);
    pl_else(L->p);
  }
  lw_rec_by_schedule(c, gr_by_schedule, NULL);
  if (cols)
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
  gr_dependent(&c);
  return L->M->st == AC_OK;
}
