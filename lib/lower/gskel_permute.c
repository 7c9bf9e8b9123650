/* lib/lower/gskel_permute.c: scatter and permute (write permutations) on GPU
 * targets, written against the SIMT interface (codegen/simt.h).
 *
 * The host side is the CPU skeleton's (skel_permute.h: operands, the
 * interpreter's shape checks, the result allocated with dest's extents);
 * only the kernels differ. Both operations start with a grid-stride copy of
 * dest into the result ("scatter.copy" / "permute.copy", coalesced), which
 * also zeroes the claim bitmap or the locks the second kernel uses (device
 * memory is not zero when allocated), and then run one grid-stride kernel
 * over the SOURCE: consecutive threads read consecutive source elements
 * (coalesced) and write wherever the indices say.
 *
 * scatter: a write must not hit a position twice (the interpreter's error,
 * with its message, which names the index and not the writer). Each
 * destination has a bit in a claim bitmap; a writer sets it with one
 * atomic OR (one native 32-bit atomic, n/8 bytes of flags) and the one that
 * finds it already set fails. Lanes of a warp with consecutive targets
 * share a claim word: they claim together, with one atomic per word (the
 * warp-level aggregation below). Of several failures the first in time is
 * reported (ctl's compare-and-swap), as on the CPU backend.
 *
 * permute(comb, dest, |ix| dst, a): comb is associative and commutative
 * (docs/language.md §7.7), so any order of combination is correct. How one
 * element is combined into out[d] depends on comb and the element type:
 *   NATIVE   a single scalar leaf whose comb is one of + min max & | ^ on
 *            its two parameters, where the (op, type) pair is one hardware
 *            atomic (simt_atomic_native: integer add/min/max/and/or/xor of
 *            32 and 64 bits, signed or unsigned min/max by the type, float
 *            add of f32 and f64): one relaxed atomic RMW, one per run of
 *            lanes of a warp with the same target (rows summed into a
 *            bin: the warp-level aggregation below);
 *   SUBWORD  & | ^ on 8- and 16-bit integers: one native 32-bit atomic on
 *            the aligned word that contains the element, with the operand
 *            shifted into the element's byte lanes and identity bits
 *            elsewhere (ones for &, zeros for | ^), so the neighbours are
 *            untouched (both targets are little-endian);
 *   CAS      any other single leaf, with any comb (float min/max, adds on
 *            narrow integers, bool, user functions): a compare-and-swap
 *            loop that evaluates comb(old, x) and installs it if out[d]
 *            still holds old, on the element's 32/64-bit pattern, or for 8-
 *            and 16-bit elements on the containing aligned 32-bit word.
 *            Lock-free: a failed CAS means another thread progressed;
 *   LOCK     elements of several leaves (tuples): a lock per destination
 *            element (an i32 array beside the result, zeroed by the copy),
 *            taken with simt_cas (its fences order the critical section
 *            after it), the leaves read with volatile loads, combined and
 *            stored, then simt_fence and an atomic exchange release it. A
 *            thread that finds the lock taken backs off with simt_yield
 *            (nanosleep on the GPU; the emulator switches threads there).
 *            Lanes of one warp that contend for one lock rely on the
 *            independent thread scheduling of sm_70 and later (the holder
 *            progresses while its warp-mates spin); we target sm_75+.
 * The containing-word accesses of SUBWORD and CAS touch up to 3 bytes past
 * the last element, which lie in the same page and in allocation padding
 * (device allocations are 256-byte aligned and granular: gpu_cuda.c, and
 * the emulator's allocator over-allocates likewise), and never change them.
 *
 * PRIVATISATION (the histogram case): NATIVE combinations have an
 * identity (+: 0, or -0.0 for floats, which leaves every x unchanged, -0.0
 * included; min: the type's maximum; max: its minimum; &: all ones; | ^:
 * 0). When the destination fits in GM_PRIV_BYTES of shared memory and
 * the source has at least GM_PRIV_PER_BIN elements per destination element
 * (known at run time: a plan `if` chooses between the two kernels), each
 * block of GM_BLOCK threads accumulates into a private copy of the bins in
 * shared memory with shared-memory atomics (fast, and contention on a hot
 * bin stays within one SM), then combines every bin that is not the
 * identity into the global result with one global atomic. This is the
 * privatised histogram of the GPU literature (Podlozhnyuk's CUDA histogram
 * sample, and Gómez-Luna et al., "An optimized approach to histogram
 * computation on GPU", 2013); the grid gives every block at least
 * GM_PRIV_PER_BIN elements per bin (and 16 per thread), so initialising and
 * merging the bins costs at most a fraction of the work. (Not for elements
 * that need temporary memory: see lw_gskel_permute.)
 *
 * Floats combined atomically (or in privatised partial sums) differ from
 * the interpreter's row-major order by reassociation only.
 */
#include "lower/skel_permute.h"
#include "lower/skel_red.h"

#include "codegen/simt.h"

#define GM_BLOCK 256u         /* threads per block of the privatised kernel */
#define GM_PRIV_BYTES 24576u  /* its shared bins: 6144 of 4 bytes, 3072 of 8 */
#define GM_PRIV_PER_BIN 4     /* source elements per bin (per block) at least */
#define GM_PRIV_PER_THREAD 16 /* source elements per thread at least */

typedef enum gm_mode { GM_NATIVE, GM_SUBWORD, GM_CAS, GM_LOCK } gm_mode;

/* ---- kernel helpers ---- */


/* The grid-stride loop over the launch's n. */
static LLVMValueRef gm_grid_begin(cg_fn *f, lw_gloop *l) {
  return lw_gloop_begin(f, l, simt_gtid(f), f->hi, simt_gsize(f));
}

/* Pointer to element lin of a manifest leaf. */
static LLVMValueRef gm_elem_ptr(cg_fn *f, const cg_leaf *l, LLVMValueRef lin) {
  return LLVMBuildGEP2(f->M->b, cg_mem_type(f->M, (ac_scalar)l->sc), l->v, &lin, 1, "");
}

/* Product of the extents of a manifest leaf (its element count). */
static LLVMValueRef gm_count(cg_fn *f, const cg_leaf *l) {
  cg_module *M = f->M;
  LLVMValueRef n = cg_i64(M, 1);
  for (uint32_t d = 0; d < l->rank; d++)
    n = LLVMBuildMul(M->b, n, l->ext[d], "");
  return n;
}

/* ---- warp-level aggregation ----
 * Kernels that combine into global memory with atomics first combine,
 * within each warp, the lanes whose targets are equal and adjacent (RUNS of
 * lanes: a row summed into one bin, consecutive scatter targets sharing a
 * claim word), so that a run costs one atomic, made by its last lane,
 * instead of one per lane: warp-aggregated atomics, with a segmented scan
 * over the runs (Sengupta et al., "Scan primitives for GPU computing",
 * 2007) where CUDA code would use match_any, which the SIMT interface does
 * not have. A warp whose lanes all have targets of their own (random bins)
 * finds that out with one shuffle and one vote and uses per-lane atomics.
 * All 32 lanes take part in these warp operations: such kernels loop over
 * n rounded up to a multiple of 32 (gm_warp_begin; the grid is a multiple
 * of 32 threads, so the lanes of a warp make the same number of trips) and
 * lanes without an element, or whose target is out of range, are invalid
 * (key -1, a run of their own that combines nothing). */

/* Trailing zero bits of an i32 (llvm.cttz; 32 for 0). */
static LLVMValueRef gm_cttz(cg_fn *f, LLVMValueRef v) {
  cg_module *M = f->M;
  static const char name[] = "llvm.cttz";
  unsigned id = LLVMLookupIntrinsicID(name, sizeof name - 1);
  LLVMTypeRef t = M->t_i32;
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(M->mod, id, &t, 1);
  LLVMValueRef args[2] = {v, LLVMConstInt(M->t_i1, 0, 0)};
  return LLVMBuildCall2(M->b, LLVMIntrinsicGetType(M->llctx, id, &t, 1), fn, args, 2, "");
}

/* The grid-stride loop of a kernel with warp operations: i runs over n
 * rounded up to a multiple of 32; *valid: i < n. */
static LLVMValueRef gm_warp_begin(cg_fn *f, lw_gloop *l, LLVMValueRef *valid) {
  cg_module *M = f->M;
  LLVMValueRef n32 = LLVMBuildAnd(M->b, LLVMBuildAdd(M->b, f->hi, cg_i64(M, SIMT_WARP - 1), ""),
                                  cg_i64(M, -(int64_t)SIMT_WARP), "");
  LLVMValueRef i = lw_gloop_begin(f, l, simt_gtid(f), n32, simt_gsize(f));
  *valid = LLVMBuildICmp(M->b, LLVMIntSLT, i, f->hi, "");
  return i;
}

/* a op b for the atomic operations of NATIVE combinations (a: the earlier
 * lane). */
static LLVMValueRef gm_op(cg_module *M, LLVMAtomicRMWBinOp op, LLVMValueRef a, LLVMValueRef b) {
  switch (op) {
  case LLVMAtomicRMWBinOpFAdd:
    return LLVMBuildFAdd(M->b, a, b, "");
  case LLVMAtomicRMWBinOpAnd:
    return LLVMBuildAnd(M->b, a, b, "");
  case LLVMAtomicRMWBinOpOr:
    return LLVMBuildOr(M->b, a, b, "");
  case LLVMAtomicRMWBinOpXor:
    return LLVMBuildXor(M->b, a, b, "");
  case LLVMAtomicRMWBinOpMin:
    return LLVMBuildSelect(M->b, LLVMBuildICmp(M->b, LLVMIntSLT, a, b, ""), a, b, "");
  case LLVMAtomicRMWBinOpMax:
    return LLVMBuildSelect(M->b, LLVMBuildICmp(M->b, LLVMIntSGT, a, b, ""), a, b, "");
  case LLVMAtomicRMWBinOpUMin:
    return LLVMBuildSelect(M->b, LLVMBuildICmp(M->b, LLVMIntULT, a, b, ""), a, b, "");
  case LLVMAtomicRMWBinOpUMax:
    return LLVMBuildSelect(M->b, LLVMBuildICmp(M->b, LLVMIntUGT, a, b, ""), a, b, "");
  default: /* add */
    return LLVMBuildAdd(M->b, a, b, "");
  }
}

/* Runs of the warp by key (i64; all lanes): *head, the lane starts a run;
 * the result (warp-uniform i1) says whether any run has two lanes or more. */
static LLVMValueRef gm_runs(cg_fn *f, LLVMValueRef key, LLVMValueRef *head) {
  cg_module *M = f->M;
  LLVMValueRef lane = simt_lane(f), one = LLVMConstInt(M->t_i32, 1, 0);
  LLVMValueRef up = simt_shfl(f, SIMT_SHFL_UP, key, one);
  *head = LLVMBuildOr(M->b, LLVMBuildICmp(M->b, LLVMIntEQ, lane, LLVMConstInt(M->t_i32, 0, 0), ""),
                      LLVMBuildICmp(M->b, LLVMIntNE, up, key, ""), "head");
  return simt_vote(f, SIMT_VOTE_ANY, LLVMBuildNot(M->b, *head, ""));
}

/* The segmented inclusive scan of v with op over the runs (all lanes):
 * Hillis and Steele's scan on (head, value) pairs, a lane taking in its
 * neighbour d lanes down while it has not met its run's head. *tail: the
 * lane ends its run. */
static LLVMValueRef gm_run_scan(cg_fn *f, LLVMAtomicRMWBinOp op, LLVMValueRef key,
                                LLVMValueRef head, LLVMValueRef v, LLVMValueRef *tail) {
  cg_module *M = f->M;
  LLVMValueRef lane = simt_lane(f), h = head;
  for (unsigned d = 1; d < SIMT_WARP; d *= 2) {
    LLVMValueRef dist = LLVMConstInt(M->t_i32, d, 0);
    LLVMValueRef pv = simt_shfl(f, SIMT_SHFL_UP, v, dist);
    LLVMValueRef ph = simt_shfl(f, SIMT_SHFL_UP, h, dist);
    LLVMValueRef take = LLVMBuildAnd(M->b, LLVMBuildICmp(M->b, LLVMIntUGE, lane, dist, ""),
                                     LLVMBuildNot(M->b, h, ""), "");
    v = LLVMBuildSelect(M->b, take, gm_op(M, op, pv, v), v, "");
    h = LLVMBuildOr(M->b, h, LLVMBuildAnd(M->b, take, ph, ""), "");
  }
  LLVMValueRef down = simt_shfl(f, SIMT_SHFL_DOWN, key, LLVMConstInt(M->t_i32, 1, 0));
  *tail = LLVMBuildOr(
      M->b, LLVMBuildICmp(M->b, LLVMIntEQ, lane, LLVMConstInt(M->t_i32, SIMT_WARP - 1, 0), ""),
      LLVMBuildICmp(M->b, LLVMIntNE, down, key, ""), "tail");
  return v;
}

/* ---- the copy (both operations) ----
 * out = dest element by element; the first `aux` words of the i32 array
 * aux (the claim bitmap: ceil(n / 32) words; the locks: n) are zeroed. */
static uint32_t gm_copy_kernel(lw *L, ir_ref e, const char *kind, const lw_val *dest, ir_type delem,
                               uint32_t r, const lw_val *out, const lw_val *aux, bool bitmap) {
  cg_module *M = L->M;
  uint32_t k;
  cg_fn *f = lw_gpu_kernel_begin(L, e, kind, 1, 0, &k);
  lw_gpu_leave_if_failed(f);
  cg_val dv, ov, av, x;
  lw_load(L, f, k, dest, &dv);
  lw_load(L, f, k, out, &ov);
  LLVMValueRef naux = NULL;
  if (aux) {
    lw_load(L, f, k, aux, &av);
    naux = bitmap
               ? LLVMBuildLShr(M->b, LLVMBuildAdd(M->b, f->hi, cg_i64(M, 31), ""), cg_i64(M, 5), "")
               : f->hi;
  }
  lw_gloop gl;
  LLVMValueRef i = gm_grid_begin(f, &gl);
  lw_pm_read_lin(f, &dv, delem, r, i, e, &x);
  sk_store(f, &ov, i, &x);
  if (aux) {
    LLVMBasicBlockRef join = sk_if(f, LLVMBuildICmp(M->b, LLVMIntSLT, i, naux, ""));
    cg_store_elem(f, &av.l[0], i, LLVMConstInt(M->t_i32, 0, 0));
    sk_endif(f, join);
  }
  lw_gloop_end(f, &gl);
  lw_gpu_kernel_end(L, f, k);
  return k;
}

/* ---- scatter ---- */

/* Claims bit lin % 32 of word lin / 32 of the bitmap for the valid lanes
 * of the warp (all lanes call it): the result is true where this lane's
 * claim is the first. A run of lanes sharing a word sets its bits with one
 * atomic OR, made by the run's last lane, whose old word the run then
 * shares; two lanes of one run with the same bit are a duplicate too (the
 * later one fails, as the later of two atomics would). */
static LLVMValueRef gm_claim(cg_fn *f, const cg_leaf *flags, LLVMValueRef valid, LLVMValueRef lin) {
  cg_module *M = f->M;
  LLVMValueRef zero = LLVMConstInt(M->t_i32, 0, 0);
  LLVMValueRef word = LLVMBuildSelect(M->b, valid, LLVMBuildLShr(M->b, lin, cg_i64(M, 5), ""),
                                      cg_i64(M, -1), "word");
  LLVMValueRef bit = LLVMBuildSelect(
      M->b, valid,
      LLVMBuildShl(M->b, LLVMConstInt(M->t_i32, 1, 0),
                   LLVMBuildTrunc(M->b, LLVMBuildAnd(M->b, lin, cg_i64(M, 31), ""), M->t_i32, ""),
                   ""),
      zero, "bit");
  LLVMValueRef old = cg_alloca(f, M->t_i32), seen = cg_alloca(f, M->t_i32), head, tail;
  LLVMBuildStore(M->b, zero, old);
  LLVMBuildStore(M->b, zero, seen);
  LLVMBasicBlockRef runs = cg_block(f, "claim.runs"), single = cg_block(f, "claim.single"),
                    join = cg_block(f, "claim.join");
  LLVMBuildCondBr(M->b, gm_runs(f, word, &head), runs, single);

  LLVMPositionBuilderAtEnd(M->b, runs);
  LLVMValueRef incl = gm_run_scan(f, LLVMAtomicRMWBinOpOr, word, head, bit, &tail);
  LLVMValueRef before = simt_shfl(f, SIMT_SHFL_UP, incl, LLVMConstInt(M->t_i32, 1, 0));
  LLVMBuildStore(M->b, LLVMBuildSelect(M->b, head, zero, before, ""), seen);
  LLVMBasicBlockRef j1 = sk_if(f, LLVMBuildAnd(M->b, valid, tail, ""));
  LLVMBuildStore(
      M->b, simt_atomic_relaxed(f, LLVMAtomicRMWBinOpOr, gm_elem_ptr(f, flags, word), incl), old);
  sk_endif(f, j1);
  /* the old word of this lane's run, from the run's last lane */
  LLVMValueRef lane = simt_lane(f), tails = simt_vote(f, SIMT_VOTE_BALLOT, tail);
  LLVMValueRef last =
      LLVMBuildAdd(M->b, lane, gm_cttz(f, LLVMBuildLShr(M->b, tails, lane, "")), "");
  LLVMBuildStore(M->b, simt_shfl(f, SIMT_SHFL_IDX, LLVMBuildLoad2(M->b, M->t_i32, old, ""), last),
                 old);
  LLVMBuildBr(M->b, join);

  LLVMPositionBuilderAtEnd(M->b, single);
  LLVMBasicBlockRef j2 = sk_if(f, valid);
  LLVMBuildStore(
      M->b, simt_atomic_relaxed(f, LLVMAtomicRMWBinOpOr, gm_elem_ptr(f, flags, word), bit), old);
  sk_endif(f, j2);
  LLVMBuildBr(M->b, join);

  LLVMPositionBuilderAtEnd(M->b, join);
  LLVMValueRef taken = LLVMBuildOr(M->b, LLVMBuildLoad2(M->b, M->t_i32, old, ""),
                                   LLVMBuildLoad2(M->b, M->t_i32, seen, ""), "");
  return LLVMBuildICmp(M->b, LLVMIntEQ, LLVMBuildAnd(M->b, taken, bit, ""), zero, "fresh");
}

/* Element d of an array of i64 slots. */
static LLVMValueRef gm_pos_slot(cg_fn *f, LLVMValueRef slots, uint32_t d) {
  LLVMValueRef o = cg_i64(f->M, d);
  return LLVMBuildGEP2(f->M->b, f->M->t_i64, slots, &o, 1, "");
}

/* "scatter": a pass over idx and vals; the claims are warp operations, so
 * the loop is gm_warp_begin's and the element's target passes through
 * slots from the lanes that have an element to the claim. */
static uint32_t gm_scatter_kernel(lw *L, ir_ref e, const lw_pm_scatter *s, const lw_val *out,
                                  const lw_val *flags) {
  cg_module *M = L->M;
  uint32_t sdup = lw_pm_dup_site(M, e, s->r);
  uint32_t k;
  cg_fn *f = lw_gpu_kernel_begin(L, e, "scatter", 1, 0, &k);
  lw_gpu_guard(f);
  cg_val iv, vv, ov, fv, ix, x;
  lw_load(L, f, k, &s->v[0], &iv);
  lw_load(L, f, k, &s->v[1], &vv);
  lw_load(L, f, k, out, &ov);
  lw_load(L, f, k, flags, &fv);
  LLVMValueRef *pos = cg_new(M, s->r * sizeof *pos), ok;
  LLVMValueRef s_lin = cg_alloca(f, M->t_i64), s_ok = cg_alloca(f, M->t_i1);
  LLVMValueRef s_pos = cg_alloca(f, LLVMArrayType(M->t_i64, s->r)); /* for the message */
  lw_gloop gl;
  LLVMValueRef has;
  LLVMValueRef i = gm_warp_begin(f, &gl, &has);
  LLVMBuildStore(M->b, cg_i64(M, 0), s_lin);
  LLVMBuildStore(M->b, LLVMConstInt(M->t_i1, 0, 0), s_ok);
  LLVMBasicBlockRef j1 = sk_if(f, has);
  lw_pm_read_lin(f, &iv, s->ielem, s->q, i, e, &ix);
  for (uint32_t d = 0; d < s->r && d < ix.n; d++)
    pos[d] = lw_cg_int64(f, ix.l[d].v, (ac_scalar)ix.l[d].sc);
  LLVMBuildStore(M->b, lw_pm_locate(f, e, "scatter", s->r, pos, ov.l[0].ext, &ok), s_lin);
  LLVMBuildStore(M->b, ok, s_ok);
  for (uint32_t d = 0; d < s->r; d++)
    LLVMBuildStore(M->b, pos[d], gm_pos_slot(f, s_pos, d));
  sk_endif(f, j1);
  LLVMValueRef lin = LLVMBuildLoad2(M->b, M->t_i64, s_lin, "lin");
  LLVMValueRef valid = LLVMBuildLoad2(M->b, M->t_i1, s_ok, "valid");
  LLVMValueRef fresh = gm_claim(f, &fv.l[0], valid, lin);
  LLVMBasicBlockRef j2 = sk_if(f, valid);
  for (uint32_t d = 0; d < s->r; d++)
    pos[d] = LLVMBuildLoad2(M->b, M->t_i64, gm_pos_slot(f, s_pos, d), "");
  cg_check_n(f, fresh, sdup, s->r, pos);
  LLVMBasicBlockRef j3 = sk_if(f, fresh);
  lw_pm_read_lin(f, &vv, s->velem, s->q, i, e, &x);
  sk_store(f, &ov, lin, &x);
  sk_endif(f, j3);
  sk_endif(f, j2);
  lw_gloop_end(f, &gl);
  lw_gpu_kernel_end(L, f, k);
  return k;
}

bool lw_gskel_scatter(lw *L, ir_ref e, lw_val *out) {
  cg_module *M = L->M;
  lw_pm_scatter s;
  if (!lw_pm_scatter_begin(L, e, &s, out))
    return false;
  /* ceil(dsize / 32) claim words */
  uint32_t words =
      lw_x_bin(L, PX_DIV, lw_x_bin(L, PX_ADD, s.dsize, lw_x_const(L, 31)), lw_x_const(L, 32));
  lw_val flags;
  sk_scratch(L, ir_ty_scalar(L->ctx, AC_U32), words, e, &flags);
  uint32_t k1 = gm_copy_kernel(L, e, "scatter.copy", &s.v[2], s.delem, s.r, out, &flags, true);
  uint32_t k2 = gm_scatter_kernel(L, e, &s, out, &flags);
  lw_launch(L, k1, s.dsize, PL_AUTO);
  lw_launch(L, k2, s.isize, PL_AUTO);
  sk_free(L, &flags);
  return M->st == AC_OK;
}

/* ---- permute ---- */

typedef struct gm_ctx {
  lw *L;
  ir_ref e;
  lw_pm_permute h;
  gm_mode mode;
  ac_scalar sc;           /* the element's scalar type (all but GM_LOCK) */
  LLVMAtomicRMWBinOp rmw; /* GM_NATIVE, GM_SUBWORD */
  bool ctmp;              /* comb needs temporary memory */
  lw_val out, locks;      /* locks: GM_LOCK */
} gm_ctx;

/* Chooses how elements are combined (see the file comment). */
static void gm_classify(gm_ctx *c) {
  lw *L = c->L;
  c->mode = GM_LOCK;
  if (!ir_ty_is_scalar(L->ctx, c->h.delem, &c->sc))
    return;
  c->mode = GM_CAS;
  ir_op op;
  bool swapped; /* the ops below are commutative: the order does not matter */
  if (!lw_pm_comb_op(L, c->h.comb, &op, &swapped))
    return;
  ac_scalar sc = c->sc;
  bool fl = sc == AC_F32 || sc == AC_F64;
  bool sgn = sc == AC_I8 || sc == AC_I16 || sc == AC_I32 || sc == AC_I64;
  switch (op) {
  case IR_ADD:
    c->rmw = fl ? LLVMAtomicRMWBinOpFAdd : LLVMAtomicRMWBinOpAdd;
    break;
  case IR_MIN:
    if (fl) /* the language's fmin (NaN ignored, -0.0 < 0.0) is no atomic */
      return;
    c->rmw = sgn ? LLVMAtomicRMWBinOpMin : LLVMAtomicRMWBinOpUMin;
    break;
  case IR_MAX:
    if (fl)
      return;
    c->rmw = sgn ? LLVMAtomicRMWBinOpMax : LLVMAtomicRMWBinOpUMax;
    break;
  case IR_BAND:
    c->rmw = LLVMAtomicRMWBinOpAnd;
    break;
  case IR_BOR:
    c->rmw = LLVMAtomicRMWBinOpOr;
    break;
  case IR_BXOR:
    c->rmw = LLVMAtomicRMWBinOpXor;
    break;
  default:
    return;
  }
  if (simt_atomic_native(L->M, c->rmw, sc))
    c->mode = GM_NATIVE;
  else if (ac_scalar_size(sc) < 4 && (op == IR_BAND || op == IR_BOR || op == IR_BXOR))
    c->mode = GM_SUBWORD;
}

/* The aligned 32-bit word holding the 8- or 16-bit element at p, and the
 * element's bit offset in it (i32; little-endian). */
static LLVMValueRef gm_word(cg_fn *f, LLVMValueRef p, LLVMValueRef *shift) {
  cg_module *M = f->M;
  LLVMValueRef off = LLVMBuildAnd(M->b, LLVMBuildPtrToInt(M->b, p, M->t_i64, ""), cg_i64(M, 3), "");
  *shift = LLVMBuildTrunc(M->b, LLVMBuildShl(M->b, off, cg_i64(M, 3), ""), M->t_i32, "");
  LLVMValueRef back = LLVMBuildNeg(M->b, off, "");
  return LLVMBuildGEP2(M->b, M->t_i8, p, &back, 1, "word");
}

/* A scalar as the integer bits memory holds (bool: its byte). */
static LLVMValueRef gm_bits(cg_module *M, LLVMValueRef v, ac_scalar sc) {
  if (sc == AC_BOOL)
    return LLVMBuildZExt(M->b, v, M->t_i8, "");
  if (sc == AC_F32)
    return LLVMBuildBitCast(M->b, v, M->t_i32, "");
  if (sc == AC_F64)
    return LLVMBuildBitCast(M->b, v, M->t_i64, "");
  return v;
}

static LLVMValueRef gm_from_bits(cg_module *M, LLVMValueRef w, ac_scalar sc) {
  if (sc == AC_BOOL)
    return LLVMBuildICmp(M->b, LLVMIntNE, w, LLVMConstInt(M->t_i8, 0, 0), "");
  if (sc == AC_F32 || sc == AC_F64)
    return LLVMBuildBitCast(M->b, w, cg_scalar_type(M, sc), "");
  return w;
}

/* SUBWORD: out[lin] op= x through the containing word. */
static void gm_subword(cg_fn *f, const gm_ctx *c, const cg_leaf *ol, LLVMValueRef lin,
                       LLVMValueRef x) {
  cg_module *M = f->M;
  LLVMValueRef shift, wp = gm_word(f, gm_elem_ptr(f, ol, lin), &shift);
  LLVMValueRef v =
      LLVMBuildShl(M->b, LLVMBuildZExt(M->b, gm_bits(M, x, c->sc), M->t_i32, ""), shift, "");
  if (c->rmw == LLVMAtomicRMWBinOpAnd) { /* ones outside the element */
    LLVMValueRef mask = LLVMConstInt(M->t_i32, ac_scalar_size(c->sc) == 1 ? 0xffu : 0xffffu, 0);
    v = LLVMBuildOr(M->b, v, LLVMBuildNot(M->b, LLVMBuildShl(M->b, mask, shift, ""), ""), "");
  }
  simt_atomic_relaxed(f, c->rmw, wp, v);
}

/* CAS: out[lin] = comb(out[lin], x) by compare-and-swap (see the file
 * comment). */
static void gm_cas(cg_fn *f, const gm_ctx *c, const cg_leaf *ol, LLVMValueRef lin,
                   const cg_val *x) {
  cg_module *M = f->M;
  ac_scalar sc = c->sc;
  size_t size = ac_scalar_size(sc);
  LLVMValueRef p = gm_elem_ptr(f, ol, lin), shift = NULL, mask = NULL;
  LLVMTypeRef wt = size == 8 ? M->t_i64 : M->t_i32, et = cg_mem_type(M, sc); /* et: size < 4 */
  if (size < 4) {
    p = gm_word(f, p, &shift);
    mask = LLVMBuildShl(M->b, LLVMConstInt(M->t_i32, size == 1 ? 0xffu : 0xffffu, 0), shift, "");
  }
  LLVMValueRef slot = cg_alloca(f, wt);
  LLVMBuildStore(M->b, simt_load_volatile(f, wt, p), slot);
  LLVMBasicBlockRef loop = cg_block(f, "cas.loop"), done = cg_block(f, "cas.done");
  LLVMBuildBr(M->b, loop);
  LLVMPositionBuilderAtEnd(M->b, loop);
  LLVMValueRef w = LLVMBuildLoad2(M->b, wt, slot, "");
  LLVMValueRef bits =
      size < 4 ? LLVMBuildTrunc(M->b, LLVMBuildLShr(M->b, w, shift, ""), et, "") : w;
  cg_val acc, nv;
  cg_val_alloc(M, c->h.delem, &acc);
  acc.l[0].v = gm_from_bits(M, bits, sc);
  sk_apply2(f, c->h.comb, &acc, x, false, c->ctmp, &nv);
  LLVMValueRef nw = gm_bits(M, nv.l[0].v, sc);
  if (size < 4)
    nw = LLVMBuildOr(M->b, LLVMBuildAnd(M->b, w, LLVMBuildNot(M->b, mask, ""), ""),
                     LLVMBuildShl(M->b, LLVMBuildZExt(M->b, nw, M->t_i32, ""), shift, ""), "");
  LLVMValueRef prev = simt_cas(f, p, w, nw);
  LLVMBuildStore(M->b, prev, slot);
  LLVMBuildCondBr(M->b, LLVMBuildICmp(M->b, LLVMIntEQ, prev, w, ""), done, loop);
  LLVMPositionBuilderAtEnd(M->b, done);
}

/* LOCK: out[lin] = comb(out[lin], x) under lock lin. */
static void gm_locked(cg_fn *f, const gm_ctx *c, const cg_val *ov, const cg_leaf *locks,
                      LLVMValueRef lin, const cg_val *x) {
  cg_module *M = f->M;
  LLVMValueRef zero = LLVMConstInt(M->t_i32, 0, 0), one = LLVMConstInt(M->t_i32, 1, 0);
  LLVMValueRef lk = gm_elem_ptr(f, locks, lin);
  LLVMBasicBlockRef take = cg_block(f, "lock.take"), wait = cg_block(f, "lock.wait"),
                    held = cg_block(f, "lock.held");
  LLVMBuildBr(M->b, take);
  LLVMPositionBuilderAtEnd(M->b, take);
  LLVMValueRef got = LLVMBuildICmp(M->b, LLVMIntEQ, simt_cas(f, lk, zero, one), zero, "");
  LLVMBuildCondBr(M->b, got, held, wait);
  /* back off, then try again once the lock looks free (test and test-and-set) */
  LLVMPositionBuilderAtEnd(M->b, wait);
  simt_yield(f);
  LLVMValueRef cur = simt_load_volatile(f, M->t_i32, lk);
  LLVMBuildCondBr(M->b, LLVMBuildICmp(M->b, LLVMIntEQ, cur, zero, ""), take, wait);
  LLVMPositionBuilderAtEnd(M->b, held);
  cg_val old, nv;
  cg_val_alloc(M, c->h.delem, &old);
  for (uint32_t i = 0; i < ov->n && i < old.n; i++) {
    ac_scalar sc = (ac_scalar)ov->l[i].sc;
    LLVMValueRef v = simt_load_volatile(f, cg_mem_type(M, sc), gm_elem_ptr(f, &ov->l[i], lin));
    old.l[i].v = sc == AC_BOOL ? gm_from_bits(M, v, sc) : v;
  }
  sk_apply2(f, c->h.comb, &old, x, false, c->ctmp, &nv);
  sk_store(f, ov, lin, &nv);
  simt_fence(f); /* the stores before the release */
  simt_atomic_relaxed(f, LLVMAtomicRMWBinOpXchg, lk, zero);
}

/* Source element i's target: its offset in out (*ok: in range, else the
 * interpreter's error has been raised). */
static LLVMValueRef gm_target(cg_fn *f, const gm_ctx *c, const cg_val *av, const cg_val *ov,
                              LLVMValueRef i, LLVMValueRef *ok) {
  cg_module *M = f->M;
  uint32_t q = c->h.q, r = c->h.r;
  cg_val *ix = cg_new(M, q * sizeof *ix), dv;
  LLVMValueRef *pos = cg_new(M, r * sizeof *pos);
  LLVMValueRef rest = i;
  for (uint32_t d = q; d-- > 0;) {
    LLVMValueRef v = rest;
    if (d > 0) {
      v = LLVMBuildURem(M->b, rest, av->l[0].ext[d], "");
      rest = LLVMBuildUDiv(M->b, rest, av->l[0].ext[d], "");
    }
    sk_i64_val(f, v, &ix[d]);
  }
  cg_apply(f, c->h.dst, q, ix, &dv);
  for (uint32_t d = 0; d < r && d < dv.n; d++)
    pos[d] = lw_cg_int64(f, dv.l[d].v, (ac_scalar)dv.l[d].sc);
  return lw_pm_locate(f, c->e, "permute", r, pos, ov->l[0].ext, ok);
}

/* "permute" for NATIVE combinations: a pass over a whose lanes combine
 * each run of equal targets in the warp first (warp-level aggregation
 * above) and add it in with one atomic. */
static uint32_t gm_native_kernel(const gm_ctx *c) {
  lw *L = c->L;
  cg_module *M = L->M;
  uint32_t k;
  cg_fn *f = lw_gpu_kernel_begin(L, c->e, "permute", 1, 0, &k);
  lw_gpu_guard(f);
  cg_val av, ov, x;
  lw_load(L, f, k, &c->h.a, &av);
  lw_load(L, f, k, &c->out, &ov);
  LLVMTypeRef et = cg_mem_type(M, c->sc);
  LLVMValueRef s_lin = cg_alloca(f, M->t_i64), s_x = cg_alloca(f, et);
  lw_gloop gl;
  LLVMValueRef has, ok;
  LLVMValueRef i = gm_warp_begin(f, &gl, &has);
  LLVMBuildStore(M->b, cg_i64(M, -1), s_lin);
  LLVMBuildStore(M->b, LLVMConstNull(et), s_x);
  LLVMBasicBlockRef j1 = sk_if(f, has);
  LLVMValueRef mark = c->h.tmp ? cg_tmp_mark(f) : NULL;
  LLVMValueRef lin = gm_target(f, c, &av, &ov, i, &ok);
  LLVMBasicBlockRef j2 = sk_if(f, ok);
  lw_pm_read_lin(f, &av, c->h.aelem, c->h.q, i, c->e, &x);
  LLVMBuildStore(M->b, lin, s_lin);
  LLVMBuildStore(M->b, x.l[0].v, s_x);
  sk_endif(f, j2);
  if (c->h.tmp)
    cg_tmp_release(f, mark);
  sk_endif(f, j1);
  /* key: the target, -1 for lanes without one */
  LLVMValueRef key = LLVMBuildLoad2(M->b, M->t_i64, s_lin, "key");
  LLVMValueRef v = LLVMBuildLoad2(M->b, et, s_x, "");
  LLVMValueRef valid = LLVMBuildICmp(M->b, LLVMIntSGE, key, cg_i64(M, 0), "valid"), head, tail;
  LLVMBasicBlockRef runs = cg_block(f, "agg.runs"), single = cg_block(f, "agg.single"),
                    join = cg_block(f, "agg.join");
  LLVMBuildCondBr(M->b, gm_runs(f, key, &head), runs, single);
  LLVMPositionBuilderAtEnd(M->b, runs);
  LLVMValueRef total = gm_run_scan(f, c->rmw, key, head, v, &tail);
  LLVMBasicBlockRef j3 = sk_if(f, LLVMBuildAnd(M->b, valid, tail, ""));
  simt_atomic_relaxed(f, c->rmw, gm_elem_ptr(f, &ov.l[0], key), total);
  sk_endif(f, j3);
  LLVMBuildBr(M->b, join);
  LLVMPositionBuilderAtEnd(M->b, single);
  LLVMBasicBlockRef j4 = sk_if(f, valid);
  simt_atomic_relaxed(f, c->rmw, gm_elem_ptr(f, &ov.l[0], key), v);
  sk_endif(f, j4);
  LLVMBuildBr(M->b, join);
  LLVMPositionBuilderAtEnd(M->b, join);
  lw_gloop_end(f, &gl);
  lw_gpu_kernel_end(L, f, k);
  return k;
}

/* "permute" for SUBWORD, CAS and LOCK combinations: one grid-stride pass
 * over a, combining into out in place, one element at a time. */
static uint32_t gm_permute_kernel(const gm_ctx *c) {
  lw *L = c->L;
  if (c->mode == GM_NATIVE)
    return gm_native_kernel(c);
  uint32_t k;
  cg_fn *f = lw_gpu_kernel_begin(L, c->e, "permute", 1, 0, &k);
  lw_gpu_leave_if_failed(f);
  cg_val av, ov, lv, x;
  lw_load(L, f, k, &c->h.a, &av);
  lw_load(L, f, k, &c->out, &ov);
  if (c->mode == GM_LOCK)
    lw_load(L, f, k, &c->locks, &lv);
  lw_gloop gl;
  LLVMValueRef i = gm_grid_begin(f, &gl), ok;
  LLVMValueRef mark = c->h.tmp ? cg_tmp_mark(f) : NULL;
  LLVMValueRef lin = gm_target(f, c, &av, &ov, i, &ok);
  LLVMBasicBlockRef skip = sk_if(f, ok);
  lw_pm_read_lin(f, &av, c->h.aelem, c->h.q, i, c->e, &x);
  if (c->mode == GM_SUBWORD)
    gm_subword(f, c, &ov.l[0], lin, x.l[0].v);
  else if (c->mode == GM_CAS)
    gm_cas(f, c, &ov.l[0], lin, &x);
  else
    gm_locked(f, c, &ov, &lv.l[0], lin, &x);
  sk_endif(f, skip);
  if (c->h.tmp)
    cg_tmp_release(f, mark);
  lw_gloop_end(f, &gl);
  lw_gpu_kernel_end(L, f, k);
  return k;
}

/* The identity of a NATIVE combination on its memory type. */
static LLVMValueRef gm_identity(cg_module *M, const gm_ctx *c) {
  ac_scalar sc = c->sc;
  LLVMTypeRef t = cg_mem_type(M, sc);
  unsigned bits = (unsigned)ac_scalar_size(sc) * 8;
  uint64_t ones = bits == 64 ? ~(uint64_t)0 : ((uint64_t)1 << bits) - 1;
  uint64_t smax = ones >> 1;
  switch (c->rmw) {
  case LLVMAtomicRMWBinOpFAdd: /* -0.0 + x == x for every x, -0.0 included */
    return LLVMConstReal(t, -0.0);
  case LLVMAtomicRMWBinOpMin:
    return LLVMConstInt(t, smax, 0);
  case LLVMAtomicRMWBinOpMax:
    return LLVMConstInt(t, smax + 1, 0); /* the type's minimum */
  case LLVMAtomicRMWBinOpUMin:
  case LLVMAtomicRMWBinOpAnd:
    return LLVMConstInt(t, ones, 0);
  default: /* add, umax, or, xor */
    return LLVMConstInt(t, 0, 0);
  }
}

/* "permute.private": bins in shared memory per block (see the file
 * comment); the result must have at most `cap` elements, and elements
 * need no temporary memory (lw_gskel_permute). */
static uint32_t gm_private_kernel(const gm_ctx *c, uint32_t cap) {
  lw *L = c->L;
  cg_module *M = L->M;
  uint32_t k;
  cg_fn *f = lw_gpu_kernel_begin(L, c->e, "permute.private", 1, GM_BLOCK, &k);
  lw_gpu_guard(f);
  cg_val av, ov, x;
  lw_load(L, f, k, &c->h.a, &av);
  lw_load(L, f, k, &c->out, &ov);
  LLVMTypeRef et = cg_mem_type(M, c->sc);
  LLVMTypeRef it = ac_scalar_size(c->sc) == 8 ? M->t_i64 : M->t_i32;
  LLVMValueRef bins = simt_shared(f, et, cap, "bins"), id = gm_identity(M, c);
  LLVMValueRef nb = gm_count(f, &ov.l[0]), tid = LLVMBuildZExt(M->b, simt_tid(f), M->t_i64, "");
  LLVMValueRef bstep = cg_i64(M, GM_BLOCK);
  lw_gloop bl;
  LLVMValueRef j = lw_gloop_begin(f, &bl, tid, nb, bstep);
  LLVMBuildStore(M->b, id, LLVMBuildGEP2(M->b, et, bins, &j, 1, ""));
  lw_gloop_end(f, &bl);
  simt_barrier(f);

  lw_gloop gl;
  LLVMValueRef i = gm_grid_begin(f, &gl), ok;
  LLVMValueRef lin = gm_target(f, c, &av, &ov, i, &ok);
  LLVMBasicBlockRef skip = sk_if(f, ok);
  lw_pm_read_lin(f, &av, c->h.aelem, c->h.q, i, c->e, &x);
  simt_atomic_relaxed(f, c->rmw, LLVMBuildGEP2(M->b, et, bins, &lin, 1, ""), x.l[0].v);
  sk_endif(f, skip);
  lw_gloop_end(f, &gl);
  simt_barrier(f);

  /* merge the bins that saw an element (bitwise: -0.0 is the float sum's
   * identity, 0.0 is not) */
  j = lw_gloop_begin(f, &bl, tid, nb, bstep);
  LLVMValueRef v = LLVMBuildLoad2(M->b, et, LLVMBuildGEP2(M->b, et, bins, &j, 1, ""), "");
  LLVMValueRef used = LLVMBuildICmp(M->b, LLVMIntNE, LLVMBuildBitCast(M->b, v, it, ""),
                                    LLVMBuildBitCast(M->b, id, it, ""), "");
  LLVMBasicBlockRef join = sk_if(f, used);
  simt_atomic_relaxed(f, c->rmw, gm_elem_ptr(f, &ov.l[0], j), v);
  sk_endif(f, join);
  lw_gloop_end(f, &bl);
  lw_gpu_kernel_end(L, f, k);
  return k;
}

bool lw_gskel_permute(lw *L, ir_ref e, lw_val *out) {
  cg_module *M = L->M;
  gm_ctx c = {.L = L, .e = e};
  if (!lw_pm_permute_begin(L, e, &c.h, out))
    return false;
  c.out = *out;
  c.ctmp = cg_needs_tmp(L->m, c.h.comb);
  gm_classify(&c);
  if (c.mode == GM_LOCK)
    sk_scratch(L, ir_ty_scalar(L->ctx, AC_I32), c.h.dsize, e, &c.locks);

  /* privatise when the bins fit in shared memory and are dense enough; a
   * condition known when compiling decides here, else the plan decides.
   * Not when elements need temporary memory: its budget is per thread of
   * the grid, which only `chunks auto` launches keep within bounds. */
  uint32_t cap =
      c.mode == GM_NATIVE && !c.h.tmp ? GM_PRIV_BYTES / (uint32_t)ac_scalar_size(c.sc) : 0;
  int64_t known = 0;
  uint32_t cond = PL_AUTO;
  if (cap) {
    uint32_t fits = lw_x_bin(L, PX_LE, c.h.dsize, lw_x_const(L, cap));
    uint32_t dense = lw_x_bin(
        L, PX_LE, lw_x_bin(L, PX_MUL, lw_x_const(L, GM_PRIV_PER_BIN), c.h.dsize), c.h.asize);
    cond = lw_x_bin(L, PX_MUL, fits, dense);
    if (lw_x_is_const(L, cond, &known) && !known)
      cap = 0;
  }
  uint32_t kc = gm_copy_kernel(L, e, "permute.copy", &c.h.dest, c.h.delem, c.h.r, out,
                               c.mode == GM_LOCK ? &c.locks : NULL, false);
  bool global = !cap || !lw_x_is_const(L, cond, &known);
  uint32_t kg = global ? gm_permute_kernel(&c) : 0;
  uint32_t kp = cap ? gm_private_kernel(&c, cap) : 0;
  lw_launch(L, kc, c.h.dsize, PL_AUTO);
  if (cap) {
    /* every block gets GM_PRIV_PER_BIN elements per bin and
     * GM_PRIV_PER_THREAD per thread at least */
    uint32_t per = lw_x_bin(L, PX_MAX, lw_x_const(L, (int64_t)GM_BLOCK * GM_PRIV_PER_THREAD),
                            lw_x_bin(L, PX_MUL, lw_x_const(L, GM_PRIV_PER_BIN), c.h.dsize));
    uint32_t blocks = lw_x_bin(L, PX_CHUNKS, c.h.asize, per);
    if (global) {
      pl_if(L->p, lw_x_to_word(L, cond));
      lw_launch(L, kp, c.h.asize, blocks);
      pl_else(L->p);
      lw_launch(L, kg, c.h.asize, PL_AUTO);
      pl_end(L->p);
    } else {
      lw_launch(L, kp, c.h.asize, blocks);
    }
  } else {
    lw_launch(L, kg, c.h.asize, PL_AUTO);
  }
  if (c.mode == GM_LOCK)
    sk_free(L, &c.locks);
  return M->st == AC_OK;
}
