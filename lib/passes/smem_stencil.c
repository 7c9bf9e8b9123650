/* lib/passes/smem_stencil.c: the smem-stencil pass: marks the GPU kernels
 * whose reads are worth staging through shared memory.
 *
 * What. An element-wise kernel that reads one array at two or more
 * constant offsets from its own index reads each element of that array
 * several times, once per offset, from neighbouring threads. Two forms
 * occur:
 *   - stencil(f, b, a) (docs/language.md §7.9) of rank 1 or 2 whose
 *     function reads its window at literal offsets, at least two of them
 *     different (a 2-D Jacobi step reads w[-1, 0], w[1, 0], w[0, -1],
 *     w[0, 1]);
 *   - map(f, .., delay(slice(a, s1, ..)), .., delay(slice(a, s2, ..)), ..)
 *     of rank 1 or 2 over slices of the same array `a` with stride 1 and
 *     literal starts, at least two different (forward differences:
 *     slice(xs, 1, n) and slice(xs, 0, n - 1); a 15-point moving average:
 *     15 slices of one array). The fuse pass writes these delays.
 * This pass wraps each such kernel at plan level in tiled(..) (§7.16), the
 * identity, which the GPU lowering reads as "stage each array read at
 * constant offsets in a shared-memory tile with its halo"
 * (lib/lower/gskel_tile.c): each block copies the part of the array its
 * elements read once, with coalesced loads, then the elements read the
 * copy. Tiles are 1024 elements in 1-D and 16 x 32 in 2-D; the halo is the
 * span of the offsets in each dimension; at the array's edges the tile
 * holds the stencil's boundary values (slices never read outside the
 * array); a kernel whose tiles would need more than 40 KiB of shared
 * memory is lowered without them. Reaches above SMEM_MAX_REACH_1D (1-D)
 * and SMEM_MAX_REACH_2D (2-D) are not tiled here.
 *
 * Why. Barracuda (seeds/001 §4.2, §8) stages stencils and overlapping
 * slices in shared memory and measured 2x to 8x on an 8800GT, which had no
 * cache for global memory; Barracuda's overlap rules are for 1-D slices,
 * generalised here to 2-D windows. On GPUs with an L1 cache the gain is
 * smaller (bench/results/).
 *
 * Requires a verified module; run it after fuse (which writes the delayed
 * slices it recognises) and after any pass that could bind a tiled
 * kernel's operand by a let (cse). Kernels only: operations inside the
 * functions of array operations (element code, run sequentially) and
 * delayed producers are left alone. The target: nothing is done for
 * PS_TARGET_CPU (the CPU lowering reads tiled(e) as e anyway). Preserves
 * meaning exactly: tiled(e) is e. A function whose body would nest too
 * deeply for the text format with the hints (ps_printable) is left as it
 * is. Counters: "tiled" (kernels marked),
 * "arrays" (arrays they stage).
 */
#include "passes/pass.h"

#include <string.h>

#define SMEM_MAX_DEPTH 6000u
#define SMEM_MAX_REACH_1D 1024
#define SMEM_MAX_REACH_2D 32

enum { SMEM_TILED, SMEM_ARRAYS };

typedef struct smem {
  ps_ctx *c;
  ac_module *m;
  ir_ref *memo; /* rewritten plan-level node, by node (0: not yet) */
  size_t nmemo;
  bool oom;
} smem;

/* The rank of array type t, 0 for anything else. */
static uint32_t smem_rank(const ac_module *m, ir_type t) {
  ir_type elem;
  uint32_t rank = 0;
  if (!ir_ty_array_view(m->ctx, t, &elem, &rank))
    return 0;
  return rank;
}

/* An integer literal (what slice reads as an index: interp_sc_to_i64). */
static bool smem_int_lit(const ac_module *m, ir_ref r, int64_t *v) {
  const ir_node *n = ir_node_get(m, r);
  ac_scalar sc = AC_I64;
  if (n->op != IR_LIT || !ir_ty_is_int(m->ctx, n->type))
    return false;
  ir_ty_is_scalar(m->ctx, n->type, &sc);
  if (sc == AC_U64 && n->lit.u > (uint64_t)INT64_MAX)
    return false;
  *v = n->lit.i;
  return true;
}

/* rank literal integers: one literal (rank 1) or a tuple of them. */
static bool smem_ints(const ac_module *m, ir_ref r, uint32_t rank, int64_t *v) {
  if (rank == 1)
    return smem_int_lit(m, r, v);
  const ir_node *n = ir_node_get(m, r);
  if (n->op != IR_TUPLE || n->nkids != rank)
    return false;
  for (uint32_t d = 0; d < rank; d++)
    if (!smem_int_lit(m, ir_kid(m, r, d), &v[d]))
      return false;
  return true;
}

/* delay(slice(a, start, stop[, 1])) of rank `rank` with literal starts:
 * *src = a, start[] the starts. */
static bool smem_slice(const ac_module *m, ir_ref r, uint32_t rank, ir_ref *src, int64_t *start) {
  const ir_node *n = ir_node_get(m, r);
  if (n->op != IR_DELAY || n->nkids != 1)
    return false;
  ir_ref s = ir_kid(m, r, 0);
  const ir_node *sn = ir_node_get(m, s);
  if (sn->op != IR_SLICE || sn->nkids < 3 || sn->nkids > 4 ||
      smem_rank(m, sn->type) != rank || !smem_ints(m, ir_kid(m, s, 1), rank, start))
    return false;
  if (sn->nkids == 4) {
    int64_t st[2];
    if (!smem_ints(m, ir_kid(m, s, 3), rank, st))
      return false;
    for (uint32_t d = 0; d < rank; d++)
      if (st[d] != 1)
        return false;
  }
  *src = ir_kid(m, s, 0);
  return true;
}

static int64_t smem_reach_limit(uint32_t rank) {
  return rank == 1 ? SMEM_MAX_REACH_1D : SMEM_MAX_REACH_2D;
}

/* The number of arrays map r would stage (slices of one array, two or more
 * different starts, span within the limit). */
static uint32_t smem_map_arrays(const ac_module *m, ir_ref r) {
  const ir_node *n = ir_node_get(m, r);
  uint32_t rank = smem_rank(m, n->type), arrays = 0;
  if (rank < 1 || rank > 2)
    return 0;
  for (uint32_t i = 1; i < n->nkids; i++) {
    ir_ref a;
    int64_t lo[2], hi[2], st[2];
    if (!smem_slice(m, ir_kid(m, r, i), rank, &a, lo))
      continue;
    bool first = true; /* the first operand slicing a */
    for (uint32_t j = 1; j < i && first; j++) {
      ir_ref b;
      first = !(smem_slice(m, ir_kid(m, r, j), rank, &b, st) && ir_equal(m, a, b));
    }
    if (!first)
      continue;
    memcpy(hi, lo, sizeof hi);
    for (uint32_t j = i + 1; j < n->nkids; j++) {
      ir_ref b;
      if (!smem_slice(m, ir_kid(m, r, j), rank, &b, st) || !ir_equal(m, a, b))
        continue;
      for (uint32_t d = 0; d < rank; d++) {
        lo[d] = st[d] < lo[d] ? st[d] : lo[d];
        hi[d] = st[d] > hi[d] ? st[d] : hi[d];
      }
    }
    bool several = false, near = true;
    for (uint32_t d = 0; d < rank; d++) {
      several = several || lo[d] != hi[d];
      /* hi - lo without overflow: both are in [-2^63, 2^63) */
      near = near && hi[d] >= lo[d] && (uint64_t)hi[d] - (uint64_t)lo[d] <=
                                           (uint64_t)smem_reach_limit(rank);
    }
    arrays += several && near;
  }
  return arrays;
}

/* Whether stencil r would be staged: rank 1 or 2, a known window with two
 * or more offsets, reach within the limit. */
static bool smem_stencil_ok(const ac_module *m, ir_ref r) {
  const ir_node *n = ir_node_get(m, r);
  uint32_t rank = n->nkids >= 2 ? smem_rank(m, ir_node_get(m, ir_kid(m, r, 1))->type) : 0;
  if (rank < 1 || rank > 2)
    return false;
  const ir_node *fn = ir_node_get(m, ir_kid(m, r, 0));
  ir_ref body = IR_NONE;
  if (fn->op == IR_LAM)
    body = ir_kid(m, ir_kid(m, r, 0), 0);
  else if (fn->op == IR_FNREF && fn->attr >= 0 && (uint64_t)fn->attr < m->nfuncs)
    body = m->funcs[fn->attr].body;
  ir_window w;
  if (!ir_window_reach(m, body, rank, &w) || w.offsets < 2)
    return false;
  for (uint32_t d = 0; d < rank; d++)
    if (w.below[d] + w.above[d] > smem_reach_limit(rank))
      return false;
  return true;
}

/* Kid i of r is element code (a function of an array operation other than
 * iterate and while, whose functions run at plan level; a rec body) or a
 * delayed producer: not kernels of their own. */
static bool smem_skip_kid(const ac_module *m, ir_ref r, uint32_t i) {
  const ir_node *n = ir_node_get(m, r);
  ir_ref k = ir_kid(m, r, i);
  if (!k || n->op == IR_DELAY)
    return true;
  if (n->op == IR_REC)
    return i + 1 == n->nkids;
  if (!ps_is_array_op(m, r) || n->op == IR_ITERATE || n->op == IR_WHILE)
    return false;
  ir_op kop = (ir_op)ir_node_get(m, k)->op;
  return kop == IR_LAM || kop == IR_FNREF;
}

static ir_ref smem_walk(smem *s, ir_ref r, bool wrapped, uint32_t depth);

/* r with its plan-level kids rewritten. */
static ir_ref smem_kids(smem *s, ir_ref r, uint32_t depth) {
  ac_module *m = s->m;
  /* a copy: new nodes may move the node array */
  const ir_node n0 = *ir_node_get(m, r), *n = &n0;
  uint32_t nk = n->nkids;
  ir_ref small[8], *kids = nk <= 8 ? small : ac_alloc(s->c->ctx, nk * sizeof *kids);
  if (!kids) {
    s->oom = true;
    return r;
  }
  for (uint32_t i = 0; i < nk; i++) {
    ir_ref k = ir_kid(m, r, i);
    kids[i] = smem_skip_kid(m, r, i) ? k
                                     : smem_walk(s, k, n->op == IR_TILED, depth + 1);
  }
  ir_ref res = s->oom ? r : ps_rebuild_if_changed(m, r, kids);
  if (kids != small)
    ac_free(s->c->ctx, kids);
  if (res == IR_NONE) {
    s->oom = true;
    return r;
  }
  return res;
}

static ir_ref smem_walk(smem *s, ir_ref r, bool wrapped, uint32_t depth) {
  ac_module *m = s->m;
  if (depth > SMEM_MAX_DEPTH || s->oom)
    return r;
  /* memoised when not directly under tiled() (the only context that
   * changes the answer) */
  if (!wrapped && r < s->nmemo && s->memo[r])
    return s->memo[r];
  ir_ref res = smem_kids(s, r, depth);
  const ir_node *n = ir_node_get(m, r);
  uint32_t arrays = 0;
  if (!wrapped && !s->oom) {
    if (n->op == IR_MAP)
      arrays = smem_map_arrays(m, r);
    else if (n->op == IR_STENCIL)
      arrays = smem_stencil_ok(m, r);
  }
  if (arrays) {
    ir_ref t = ir_node_new(m, IR_TILED, n->loc, 1, &res);
    if (t == IR_NONE) {
      s->oom = true;
    } else {
      res = t;
      s->c->counters[SMEM_TILED]++;
      s->c->counters[SMEM_ARRAYS] += arrays;
    }
  }
  if (!wrapped && r < s->nmemo)
    s->memo[r] = res;
  return res;
}

/* The entry point (passes_list.h registers it). */
ac_status ps_smem_stencil(ps_ctx *c);
ac_status ps_smem_stencil(ps_ctx *c) {
  if (c->target == PS_TARGET_CPU)
    return AC_OK;
  ac_module *m = c->m;
  smem s = {c, m, NULL, m->nnodes, false};
  s.memo = ac_alloc(c->ctx, (s.nmemo ? s.nmemo : 1) * sizeof *s.memo);
  if (!s.memo)
    return ir_report(c->err, NULL, AC_ERR_NOMEM);
  memset(s.memo, 0, (s.nmemo ? s.nmemo : 1) * sizeof *s.memo);
  for (size_t f = 0; f < m->nfuncs && !s.oom; f++) {
    ir_func *fn = &m->funcs[f];
    if (!fn->body || fn->is_extern)
      continue;
    uint64_t saved[2] = {c->counters[SMEM_TILED], c->counters[SMEM_ARRAYS]};
    ir_ref nb = smem_walk(&s, fn->body, false, 0);
    /* tiled() nests one level deeper: a body at the text format's nesting
     * limit keeps its kernels untiled rather than print unparseably */
    if (nb != fn->body && !s.oom && !ps_printable(m, nb)) {
      c->counters[SMEM_TILED] = saved[0];
      c->counters[SMEM_ARRAYS] = saved[1];
      continue;
    }
    fn->body = nb;
  }
  ac_free(c->ctx, s.memo);
  if (s.oom || m->oom)
    return ir_report(c->err, NULL, AC_ERR_NOMEM);
  return AC_OK;
}
