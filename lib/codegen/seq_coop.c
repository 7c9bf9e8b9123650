/* lib/codegen/seq_coop.c: folds in element code computed by a whole warp or
 * block (Copperhead's warp- and block-per-element mappings of nested
 * parallelism; lib/lower/gpu.c makes the kernels and chooses among them,
 * lib/passes/nesting.c says which element code gets them).
 *
 * In a warp- or block-per-element kernel (cg_fn.coop) every thread of the
 * group runs the element code with the same values: the same branches, the
 * same loop trip counts, each thread with its own temporary memory. Some
 * kinds of operation depart from this: an array built element by element
 * (generate, map, gather, backpermute, iota, fill) is built once by the
 * group (cg_seq_alloc_elems, cg_seq_elems_begin: the first thread
 * allocates it, cg_coop_new_arrays hands the address to the others, each
 * thread computes its share, the group meets before it is read), a scan
 * (from either end) is scanned by the group into one array (cg_coop_scan_row, at the
 * end of this file, with the group's filter, cg_coop_filter_row), and a
 * fold is computed by the group as follows. Thread t of the group (lane l of warp w) folds
 * its share of the row, the group combines the shares, and every thread
 * ends with the fold's value, so that the code after it is uniform again:
 *   - a commutative function (cg_commutative): warp w takes an even,
 *     contiguous part of the row (the whole row in a warp), lane l its
 *     elements l, l + 32, ...: each load of the warp reads 32 consecutive
 *     elements (4 sectors for 4-byte ones, where a thread per row reads a
 *     sector per thread);
 *   - any other (associative) function: the warp walks its part in chunks
 *     of 32 consecutive elements, one per lane, each chunk combined in
 *     lane order and appended to the warp's running value, so elements
 *     only ever meet their neighbours, left one first;
 *   - the lanes' values are combined by a shuffle-down tree (offsets 1, 2,
 *     4, 8, 16; lane l, a multiple of 2o, joins lanes [l, l + 2o) in order)
 *     and lane 0's result broadcast; in a block the warps' values then go
 *     through shared memory and every thread combines them in warp order;
 *   - the function is applied only to values that exist (a valid flag per
 *     partial value), and z once, at the end: f(z, f(a0 .. a(n-1))), as the
 *     GPU fold skeletons do (gskel_fold.c). An empty row gives z.
 * The result is a regrouping of the interpreter's left fold, which the
 * language allows for an associative f with identity z (language.md §7.4);
 * integer, min and max folds are exact.
 *
 * Uniform control flow is what makes the shuffles and barriers legal. What
 * could break it is the failure flag, which another thread may set at any
 * moment: inside a group cg_failed asks the whole group (cg_coop_any), so
 * every thread takes the same branch. The code each thread runs on its own
 * elements (loads, the function's applications) runs with coop cleared:
 * nested operations in it are sequential, and it contains no warp
 * operation.
 */
#include "codegen/seq_impl.h"

#include "codegen/simt.h"

#include <string.h>

LLVMValueRef cg_coop_any(cg_fn *f, LLVMValueRef pred) {
  cg_module *M = f->M;
  if (f->coop == CG_COOP_WARP)
    return simt_vote(f, SIMT_VOTE_ANY, pred);
  if (f->coop != CG_COOP_BLOCK)
    return pred;
  /* __syncthreads_or: clear, barrier, set, barrier, read; the first
   * barrier keeps the clear after every read of the previous use */
  LLVMBuilderRef B = M->b;
  LLVMValueRef slot = simt_shared(f, M->t_i32, 1, "any"), zero = LLVMConstInt(M->t_i32, 0, 0);
  simt_barrier(f);
  LLVMBasicBlockRef after = cg_seq_if(f, LLVMBuildICmp(B, LLVMIntEQ, simt_tid(f), zero, ""));
  LLVMBuildStore(B, zero, slot);
  cg_seq_endif(f, after);
  simt_barrier(f);
  after = cg_seq_if(f, pred);
  LLVMBuildStore(B, LLVMConstInt(M->t_i32, 1, 0), slot);
  cg_seq_endif(f, after);
  simt_barrier(f);
  return LLVMBuildICmp(B, LLVMIntNE, LLVMBuildLoad2(B, M->t_i32, slot, ""), zero, "");
}

bool cg_commutative(const ac_module *m, ir_type elem, ir_ref fn) {
  if (ir_ty_info(m->ctx, elem).kind == TK_TUPLE || fn == IR_NONE || fn >= m->nnodes)
    return false;
  const ir_node *n = ir_node_get(m, fn);
  ir_ref body = IR_NONE;
  if (n->op == IR_LAM && n->attr == 2 && n->nkids == 1)
    body = ir_kid(m, fn, 0);
  else if (n->op == IR_FNREF && n->attr >= 0 && (uint64_t)n->attr < m->nfuncs &&
           m->funcs[n->attr].nparams == 2 && !m->funcs[n->attr].is_extern)
    body = m->funcs[n->attr].body;
  if (body == IR_NONE || body >= m->nnodes)
    return false;
  const ir_node *b = ir_node_get(m, body);
  switch (b->op) {
  case IR_ADD: case IR_MUL: case IR_MIN: case IR_MAX: case IR_BAND: case IR_BOR: case IR_BXOR:
    break;
  default:
    return false;
  }
  if (b->nkids != 2)
    return false;
  const ir_node *x = ir_node_get(m, ir_kid(m, body, 0)), *y = ir_node_get(m, ir_kid(m, body, 1));
  return x->op == IR_VAR && y->op == IR_VAR && x->attr != y->attr && x->attr >= 0 &&
         x->attr <= 1 && y->attr >= 0 && y->attr <= 1;
}

/* A partial value of the fold: the accumulator and whether it holds one. */
typedef struct co_part {
  cg_var acc;
  LLVMValueRef valid; /* i1 slot */
} co_part;

static void co_part_new(cg_fn *f, ir_type t, co_part *p) {
  cg_var_new(f, t, &p->acc);
  p->valid = cg_alloca(f, f->M->t_i1);
  LLVMBuildStore(f->M->b, LLVMConstInt(f->M->t_i1, 0, 0), p->valid);
}

static LLVMValueRef co_valid(cg_fn *f, const co_part *p) {
  return LLVMBuildLoad2(f->M->b, f->M->t_i1, p->valid, "");
}

/* When `has`: p = p.valid ? lam(p, x) : x, and p becomes valid; lam(x, p)
 * when x is on the `left` (a scan's earlier elements). */
static void co_take_at(cg_fn *f, ir_ref lam, co_part *p, LLVMValueRef has, const cg_val *x,
                       bool left) {
  cg_module *M = f->M;
  LLVMBuilderRef B = M->b;
  LLVMBasicBlockRef after = cg_seq_if(f, has);
  LLVMBasicBlockRef comb = cg_block(f, "coop.comb"), first = cg_block(f, "coop.first"),
                    join = cg_block(f, "coop.join");
  LLVMBuildCondBr(B, co_valid(f, p), comb, first);
  LLVMPositionBuilderAtEnd(B, comb);
  cg_val res;
  cg_seq_step(f, lam, &p->acc, x, left, &res);
  LLVMBuildBr(B, join);
  LLVMPositionBuilderAtEnd(B, first);
  cg_var_store(f, &p->acc, x);
  LLVMBuildBr(B, join);
  LLVMPositionBuilderAtEnd(B, join);
  LLVMBuildStore(B, LLVMConstInt(M->t_i1, 1, 0), p->valid);
  cg_seq_endif(f, after);
}

static void co_take(cg_fn *f, ir_ref lam, co_part *p, LLVMValueRef has, const cg_val *x) {
  co_take_at(f, lam, p, has, x, false);
}

static void co_take_left(cg_fn *f, ir_ref lam, co_part *p, LLVMValueRef has, const cg_val *x) {
  co_take_at(f, lam, p, has, x, true);
}

/* v with each leaf shuffled (mode, arg). */
static void co_shfl(cg_fn *f, simt_shfl_mode mode, const cg_val *v, LLVMValueRef arg, cg_val *out) {
  out->type = v->type;
  out->n = v->n;
  out->l = cg_seq_leaves(f->M, v->n);
  for (uint32_t i = 0; i < v->n; i++) {
    out->l[i] = v->l[i];
    out->l[i].v = simt_shfl(f, mode, v->l[i].v, arg);
  }
}

/* Every lane's p combined in lane order; every lane gets the result. */
static void co_warp_reduce(cg_fn *f, ir_ref lam, co_part *p) {
  cg_module *M = f->M;
  LLVMBuilderRef B = M->b;
  LLVMValueRef lane = simt_lane(f);
  for (unsigned o = 1; o < SIMT_WARP; o <<= 1) {
    LLVMValueRef k = LLVMConstInt(M->t_i32, o, 0);
    cg_val a, other;
    cg_var_load(f, &p->acc, &a);
    co_shfl(f, SIMT_SHFL_DOWN, &a, k, &other);
    LLVMValueRef ov = simt_shfl(f, SIMT_SHFL_DOWN, co_valid(f, p), k);
    /* lane l, a multiple of 2o, joins lane l + o (which exists: l + o < 32) */
    LLVMValueRef mine = LLVMBuildICmp(
        B, LLVMIntEQ, LLVMBuildAnd(B, lane, LLVMConstInt(M->t_i32, 2 * o - 1, 0), ""),
        LLVMConstInt(M->t_i32, 0, 0), "");
    co_take(f, lam, p, LLVMBuildAnd(B, mine, ov, ""), &other);
  }
  cg_val a, all;
  LLVMValueRef zero = LLVMConstInt(M->t_i32, 0, 0);
  cg_var_load(f, &p->acc, &a);
  co_shfl(f, SIMT_SHFL_IDX, &a, zero, &all);
  cg_var_store(f, &p->acc, &all);
  LLVMBuildStore(B, simt_shfl(f, SIMT_SHFL_IDX, co_valid(f, p), zero), p->valid);
}

/* One partial value per warp in shared memory (a block's warps meet
 * there): an array of 32 per leaf (bool leaves as bytes) and the flags. */
typedef struct co_slots {
  uint32_t n;
  LLVMValueRef *sh, shv;
  LLVMTypeRef *st;
} co_slots;

static void co_slots_new(cg_fn *f, const cg_val *a, co_slots *s) {
  cg_module *M = f->M;
  s->n = a->n;
  s->sh = cg_new(M, (a->n ? a->n : 1) * sizeof *s->sh);
  s->st = cg_new(M, (a->n ? a->n : 1) * sizeof *s->st);
  for (uint32_t i = 0; i < a->n; i++) {
    s->st[i] = LLVMTypeOf(a->l[i].v) == M->t_i1 ? M->t_i8 : LLVMTypeOf(a->l[i].v);
    s->sh[i] = simt_shared(f, s->st[i], SIMT_WARP, "coop.part");
  }
  s->shv = simt_shared(f, M->t_i8, SIMT_WARP, "coop.valid");
}

/* Slot w = (a, valid), by the threads for which `who` holds, between two
 * barriers (the first keeps the previous use's readers ahead of it). */
static void co_slots_put(cg_fn *f, const co_slots *s, LLVMValueRef who, LLVMValueRef w,
                         const cg_val *a, LLVMValueRef valid) {
  cg_module *M = f->M;
  LLVMBuilderRef B = M->b;
  simt_barrier(f);
  LLVMBasicBlockRef after = cg_seq_if(f, who);
  for (uint32_t i = 0; i < s->n; i++) {
    LLVMValueRef v = a->l[i].v;
    if (LLVMTypeOf(v) == M->t_i1)
      v = LLVMBuildZExt(B, v, M->t_i8, "");
    LLVMBuildStore(B, v, LLVMBuildInBoundsGEP2(B, s->st[i], s->sh[i], &w, 1, ""));
  }
  LLVMBuildStore(B, LLVMBuildZExt(B, valid, M->t_i8, ""),
                 LLVMBuildInBoundsGEP2(B, M->t_i8, s->shv, &w, 1, ""));
  cg_seq_endif(f, after);
  simt_barrier(f);
}

/* Slot k as a value shaped like `like`, and its flag. */
static void co_slots_get(cg_fn *f, const co_slots *s, LLVMValueRef k, const cg_val *like,
                         cg_val *out, LLVMValueRef *valid) {
  cg_module *M = f->M;
  LLVMBuilderRef B = M->b;
  *out = *like;
  out->l = cg_seq_leaves(M, like->n);
  for (uint32_t i = 0; i < s->n; i++) {
    out->l[i] = like->l[i];
    LLVMValueRef v = LLVMBuildLoad2(B, s->st[i], LLVMBuildInBoundsGEP2(B, s->st[i], s->sh[i], &k, 1, ""), "");
    out->l[i].v = LLVMTypeOf(like->l[i].v) == M->t_i1 ? LLVMBuildTrunc(B, v, M->t_i1, "") : v;
  }
  LLVMValueRef v = LLVMBuildLoad2(B, M->t_i8, LLVMBuildInBoundsGEP2(B, M->t_i8, s->shv, &k, 1, ""), "");
  *valid = LLVMBuildTrunc(B, v, M->t_i1, "");
}

/* The warps' values (each warp's lanes all hold it) combined in warp order
 * through shared memory; every thread of the block gets the result. */
static void co_block_reduce(cg_fn *f, ir_ref lam, co_part *p) {
  cg_module *M = f->M;
  LLVMBuilderRef B = M->b;
  cg_val a;
  cg_var_load(f, &p->acc, &a);
  co_slots s;
  co_slots_new(f, &a, &s);
  LLVMValueRef w = LLVMBuildZExt(B, simt_warp(f), M->t_i64, "");
  LLVMValueRef lane0 = LLVMBuildICmp(B, LLVMIntEQ, simt_lane(f), LLVMConstInt(M->t_i32, 0, 0), "");
  co_slots_put(f, &s, lane0, w, &a, co_valid(f, p));
  LLVMBuildStore(B, LLVMConstInt(M->t_i1, 0, 0), p->valid);
  LLVMValueRef nw = LLVMBuildZExt(B, simt_ntid(f), M->t_i64, "");
  nw = LLVMBuildUDiv(B, nw, cg_i64(M, SIMT_WARP), "");
  cg_loop l;
  LLVMValueRef j = cg_loop_begin(f, &l, cg_i64(M, 0), nw);
  cg_val x;
  LLVMValueRef has;
  co_slots_get(f, &s, j, &a, &x, &has);
  co_take(f, lam, p, has, &x);
  cg_loop_end(f, &l);
}

void cg_coop_fold_row(cg_fn *f, ir_ref lam, const cg_val *z, seq_row *r, LLVMValueRef n,
                      cg_val *res) {
  cg_module *M = f->M;
  LLVMBuilderRef B = M->b;
  uint8_t mode = f->coop;
  f->coop = CG_COOP_NONE;
  ir_type elem = cg_seq_param(M, lam, 1);
  bool comm = cg_commutative(M->m, z->type, lam);
  LLVMValueRef w32 = cg_i64(M, SIMT_WARP);
  LLVMValueRef lane = LLVMBuildZExt(B, simt_lane(f), M->t_i64, "");
  n = cg_smax(f->M, n, cg_i64(M, 0));
  /* the warp's part [lo, hi) of the row: an even share in a block */
  LLVMValueRef lo = cg_i64(M, 0), hi = n;
  if (mode == CG_COOP_BLOCK) {
    LLVMValueRef nw = LLVMBuildUDiv(B, LLVMBuildZExt(B, simt_ntid(f), M->t_i64, ""), w32, "");
    LLVMValueRef w = LLVMBuildZExt(B, simt_warp(f), M->t_i64, "");
    LLVMValueRef q = LLVMBuildUDiv(B, n, nw, ""), rem = LLVMBuildURem(B, n, nw, "");
    LLVMValueRef early = LLVMBuildICmp(B, LLVMIntULT, w, rem, "");
    lo = LLVMBuildAdd(B, LLVMBuildMul(B, q, w, ""), cg_smin(f->M, w, rem), "");
    hi = LLVMBuildAdd(B, lo, LLVMBuildAdd(B, q, LLVMBuildZExt(B, early, M->t_i64, ""), ""), "");
  }
  co_part p;
  co_part_new(f, z->type, &p);
  cg_val x;
  if (comm) {
    /* lane l: elements lo + l, lo + l + 32, ... */
    LLVMValueRef first = LLVMBuildAdd(B, lo, lane, "");
    LLVMValueRef left = cg_smax(f->M, LLVMBuildSub(B, hi, first, ""), cg_i64(M, 0));
    LLVMValueRef cnt = LLVMBuildUDiv(B, LLVMBuildAdd(B, left, cg_i64(M, SIMT_WARP - 1), ""), w32, "");
    cg_loop l;
    LLVMValueRef t = cg_loop_begin(f, &l, cg_i64(M, 0), cnt);
    cg_seq_row_load(f, r, LLVMBuildAdd(B, first, LLVMBuildMul(B, t, w32, ""), ""), elem, &x);
    co_take(f, lam, &p, LLVMConstInt(M->t_i1, 1, 0), &x);
    cg_loop_end(f, &l);
    co_warp_reduce(f, lam, &p);
  } else {
    /* chunks of 32 consecutive elements, each combined in lane order and
     * appended to the warp's value */
    co_part c;
    co_part_new(f, z->type, &c);
    LLVMValueRef len = LLVMBuildSub(B, hi, lo, "");
    LLVMValueRef cnt = LLVMBuildUDiv(B, LLVMBuildAdd(B, len, cg_i64(M, SIMT_WARP - 1), ""), w32, "");
    cg_loop l;
    LLVMValueRef t = cg_loop_begin(f, &l, cg_i64(M, 0), cnt);
    LLVMValueRef j = LLVMBuildAdd(B, LLVMBuildAdd(B, lo, LLVMBuildMul(B, t, w32, ""), ""), lane, "");
    LLVMBuildStore(B, LLVMConstInt(M->t_i1, 0, 0), c.valid);
    LLVMBasicBlockRef after = cg_seq_if(f, LLVMBuildICmp(B, LLVMIntSLT, j, hi, ""));
    cg_seq_row_load(f, r, j, elem, &x);
    cg_var_store(f, &c.acc, &x);
    LLVMBuildStore(B, LLVMConstInt(M->t_i1, 1, 0), c.valid);
    cg_seq_endif(f, after);
    co_warp_reduce(f, lam, &c);
    cg_val ct;
    cg_var_load(f, &c.acc, &ct);
    co_take(f, lam, &p, co_valid(f, &c), &ct);
    cg_loop_end(f, &l);
  }
  if (mode == CG_COOP_BLOCK)
    co_block_reduce(f, lam, &p);
  /* f(z, total), or z for an empty row */
  cg_var out;
  cg_var_new(f, z->type, &out);
  cg_var_store(f, &out, z);
  cg_val total;
  cg_var_load(f, &p.acc, &total);
  LLVMBasicBlockRef after = cg_seq_if(f, co_valid(f, &p));
  cg_val tmp;
  cg_seq_step(f, lam, &out, &total, false, &tmp);
  cg_seq_endif(f, after);
  cg_var_load(f, &out, res);
  f->coop = mode;
}

/* ---- arrays the group computes together (cg_seq_elems_begin) ---- */

void cg_coop_rank(cg_fn *f, uint8_t mode, LLVMValueRef *t, LLVMValueRef *g) {
  cg_module *M = f->M;
  if (mode == CG_COOP_BLOCK) {
    *t = LLVMBuildZExt(M->b, simt_tid(f), M->t_i64, "");
    *g = LLVMBuildZExt(M->b, simt_ntid(f), M->t_i64, "");
  } else {
    *t = LLVMBuildZExt(M->b, simt_lane(f), M->t_i64, "");
    *g = cg_i64(M, SIMT_WARP);
  }
}

void cg_coop_sync(cg_fn *f, uint8_t mode) {
  if (mode == CG_COOP_BLOCK)
    simt_barrier(f);
  else if (mode == CG_COOP_WARP)
    simt_syncwarp(f);
}

void cg_coop_new_arrays(cg_fn *f, ir_ref at, uint32_t rank, LLVMValueRef *ext, uint32_t n,
                        cg_leaf *l) {
  cg_module *M = f->M;
  LLVMBuilderRef B = M->b;
  uint8_t mode = f->coop;
  LLVMValueRef t, g;
  cg_coop_rank(f, mode, &t, &g);
  /* slot n: whether the call is still without failure after the
   * allocations (after one failed, cg_new_array's pointer is a dummy
   * that no thread may write through: the arrays are then empty for the
   * whole group, as they would be for one thread) */
  LLVMValueRef *slot = cg_new(M, (n + 1) * sizeof *slot);
  for (uint32_t i = 0; i <= n; i++) {
    slot[i] = cg_alloca(f, M->t_i64);
    LLVMBuildStore(B, cg_i64(M, 0), slot[i]);
  }
  /* the first thread alone: its checks and its temporary memory */
  f->coop = CG_COOP_NONE;
  LLVMBasicBlockRef after = cg_seq_if(f, LLVMBuildICmp(B, LLVMIntEQ, t, cg_i64(M, 0), ""));
  for (uint32_t i = 0; i < n; i++) {
    cg_new_array(f, (ac_scalar)l[i].sc, rank, ext, at, &l[i]);
    LLVMBuildStore(B, LLVMBuildPtrToInt(B, l[i].v, M->t_i64, ""), slot[i]);
  }
  LLVMBuildStore(B, LLVMBuildZExt(B, LLVMBuildNot(B, cg_failed(f), ""), M->t_i64, ""), slot[n]);
  cg_seq_endif(f, after);
  f->coop = mode;
  /* its addresses to the others */
  LLVMValueRef sh = NULL;
  if (mode == CG_COOP_BLOCK) {
    sh = simt_shared(f, M->t_i64, n + 1, "coop.arrays");
    simt_barrier(f); /* the previous use's readers are done */
    after = cg_seq_if(f, LLVMBuildICmp(B, LLVMIntEQ, t, cg_i64(M, 0), ""));
    for (uint32_t i = 0; i <= n; i++) {
      LLVMValueRef k = cg_i64(M, i);
      LLVMBuildStore(B, LLVMBuildLoad2(B, M->t_i64, slot[i], ""),
                     LLVMBuildInBoundsGEP2(B, M->t_i64, sh, &k, 1, ""));
    }
    cg_seq_endif(f, after);
    simt_barrier(f);
  }
  LLVMValueRef *got = cg_new(M, (n + 1) * sizeof *got);
  for (uint32_t i = 0; i <= n; i++) {
    if (mode == CG_COOP_BLOCK) {
      LLVMValueRef k = cg_i64(M, i);
      got[i] = LLVMBuildLoad2(B, M->t_i64, LLVMBuildInBoundsGEP2(B, M->t_i64, sh, &k, 1, ""), "");
    } else {
      got[i] = simt_shfl(f, SIMT_SHFL_IDX, LLVMBuildLoad2(B, M->t_i64, slot[i], ""),
                         LLVMConstInt(M->t_i32, 0, 0));
    }
  }
  LLVMValueRef allok = LLVMBuildICmp(B, LLVMIntNE, got[n], cg_i64(M, 0), "");
  for (uint32_t i = 0; i < n; i++) {
    LLVMValueRef v = got[i];
    l[i].kind = CL_ARRAY;
    l[i].rank = rank;
    l[i].read = NULL;
    l[i].env = NULL;
    l[i].ro = false;
    l[i].v = LLVMBuildIntToPtr(B, v, M->t_ptr, "");
    l[i].ext = cg_new(M, (rank + 1) * sizeof *l[i].ext);
    for (uint32_t d = 0; d < rank; d++)
      l[i].ext[d] = LLVMBuildSelect(B, allok, ext[d], cg_i64(M, 0), "");
  }
}

/* ---- scans ---- */

static void co_part_get(cg_fn *f, const co_part *p, cg_val *v) {
  cg_var_load(f, &p->acc, v);
}

/* p's value and flag shuffled (mode, arg) into q. */
static void co_part_shfl(cg_fn *f, simt_shfl_mode mode, const co_part *p, LLVMValueRef arg,
                         cg_val *v, LLVMValueRef *valid) {
  cg_val a;
  co_part_get(f, p, &a);
  co_shfl(f, mode, &a, arg, v);
  *valid = simt_shfl(f, mode, co_valid(f, p), arg);
}

/* A pass of the group over m elements of a row in chunks of its size
 * (cg_coop_scan_row, cg_coop_filter_row): co_pass_begin leaves the group
 * mode for the per-thread code (kept in `mode`); co_pass_loop opens the
 * loop over chunks, thread t taking position j = c * g + t (`has`: j < m);
 * co_pass_end closes it, makes the group meet (what it wrote may be read
 * by every thread) and restores the group mode. */
typedef struct co_pass {
  uint8_t mode;
  ir_type elem;        /* lam's first parameter */
  LLVMValueRef t, g;   /* the thread's rank in the group, the group's size */
  LLVMValueRef lane;
  cg_loop l;
  LLVMValueRef j, has; /* inside the loop */
} co_pass;

static void co_pass_begin(cg_fn *f, ir_ref lam, co_pass *p) {
  p->mode = f->coop;
  f->coop = CG_COOP_NONE;
  p->elem = cg_seq_param(f->M, lam, 0);
  cg_coop_rank(f, p->mode, &p->t, &p->g);
  p->lane = simt_lane(f);
}

static void co_pass_loop(cg_fn *f, co_pass *p, LLVMValueRef m) {
  cg_module *M = f->M;
  LLVMBuilderRef B = M->b;
  LLVMValueRef cnt = LLVMBuildUDiv(
      B, LLVMBuildAdd(B, m, LLVMBuildSub(B, p->g, cg_i64(M, 1), ""), ""), p->g, "");
  LLVMValueRef c = cg_loop_begin(f, &p->l, cg_i64(M, 0), cnt);
  p->j = LLVMBuildAdd(B, LLVMBuildMul(B, c, p->g, ""), p->t, "");
  p->has = LLVMBuildICmp(B, LLVMIntSLT, p->j, m, "");
}

static void co_pass_end(cg_fn *f, co_pass *p) {
  cg_loop_end(f, &p->l);
  cg_coop_sync(f, p->mode);
  f->coop = p->mode;
}

/* Position j of the scan order as an index of the row: j, or n - 1 - j for
 * a right scan. */
static LLVMValueRef co_pos(cg_fn *f, bool right, LLVMValueRef n, LLVMValueRef j) {
  LLVMBuilderRef B = f->M->b;
  return right ? LLVMBuildSub(B, LLVMBuildSub(B, n, cg_i64(f->M, 1), ""), j, "") : j;
}

void cg_coop_scan_row(cg_fn *f, ir_ref lam, bool excl, bool right, const cg_val *z, seq_row *r,
                      const seq_arr *o, LLVMValueRef n) {
  cg_module *M = f->M;
  LLVMBuilderRef B = M->b;
  co_pass ps;
  co_pass_begin(f, lam, &ps);
  uint8_t mode = ps.mode;
  ir_type elem = ps.elem;
  LLVMValueRef t = ps.t, g = ps.g, lane = ps.lane, zero = cg_i64(M, 0), one = cg_i64(M, 1);
  n = cg_smax(f->M, n, zero);
  /* a right scan is a left scan of the row read backwards whose operator
   * takes its arguments swapped (f(x, acc)): what comes earlier in the
   * scan order goes on the right of f */
  void (*take)(cg_fn *, ir_ref, co_part *, LLVMValueRef, const cg_val *) =
      right ? co_take_left : co_take;
  void (*take_left)(cg_fn *, ir_ref, co_part *, LLVMValueRef, const cg_val *) =
      right ? co_take : co_take_left;
  /* the elements the function is applied to: all but the last of an
   * exclusive scan, which the interpreter never applies it to */
  LLVMValueRef m = excl ? cg_smax(f->M, LLVMBuildSub(B, n, one, ""), zero) : n;
  co_part carry;
  co_part_new(f, elem, &carry);
  if (excl) {
    cg_var_store(f, &carry.acc, z);
    LLVMBuildStore(B, LLVMConstInt(M->t_i1, 1, 0), carry.valid);
    LLVMBasicBlockRef after = cg_seq_if(
        f, LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntEQ, t, zero, ""),
                        LLVMBuildICmp(B, LLVMIntSGT, n, zero, ""), ""));
    cg_seq_store(f, o, LLVMBuildAdd(B, r->lin0, co_pos(f, right, n, zero), ""), z);
    cg_seq_endif(f, after);
  }
  co_pass_loop(f, &ps, m);
  LLVMValueRef j = ps.j, has = ps.has;
  co_part x;
  co_part_new(f, elem, &x);
  LLVMBasicBlockRef after = cg_seq_if(f, has);
  cg_val v;
  cg_seq_row_load(f, r, co_pos(f, right, n, j), elem, &v);
  cg_var_store(f, &x.acc, &v);
  LLVMBuildStore(B, LLVMConstInt(M->t_i1, 1, 0), x.valid);
  cg_seq_endif(f, after);
  /* the warp's inclusive scan (shuffle-up steps; a lane without a value
   * takes its left neighbour's, so lane 31 ends with the warp's total) */
  for (unsigned s = 1; s < SIMT_WARP; s <<= 1) {
    LLVMValueRef k = LLVMConstInt(M->t_i32, s, 0), ov;
    cg_val other;
    co_part_shfl(f, SIMT_SHFL_UP, &x, k, &other, &ov);
    LLVMValueRef up = LLVMBuildICmp(B, LLVMIntUGE, lane, k, "");
    take_left(f, lam, &x, LLVMBuildAnd(B, up, ov, ""), &other);
  }
  co_part total;
  co_part_new(f, elem, &total);
  LLVMValueRef w31 = LLVMConstInt(M->t_i32, SIMT_WARP - 1, 0);
  if (mode == CG_COOP_BLOCK) {
    /* warp totals through shared memory: the warps before this one, then
     * all of them */
    cg_val a;
    co_part_get(f, &x, &a);
    co_slots sl;
    co_slots_new(f, &a, &sl);
    LLVMValueRef w = LLVMBuildZExt(B, simt_warp(f), M->t_i64, "");
    co_slots_put(f, &sl, LLVMBuildICmp(B, LLVMIntEQ, lane, w31, ""), w, &a, co_valid(f, &x));
    co_part pre;
    co_part_new(f, elem, &pre);
    LLVMValueRef nw = LLVMBuildUDiv(B, g, cg_i64(M, SIMT_WARP), "");
    cg_loop wl;
    LLVMValueRef k = cg_loop_begin(f, &wl, zero, nw);
    cg_val sv;
    LLVMValueRef svalid;
    co_slots_get(f, &sl, k, &a, &sv, &svalid);
    take(f, lam, &pre, LLVMBuildAnd(B, svalid, LLVMBuildICmp(B, LLVMIntULT, k, w, ""), ""), &sv);
    take(f, lam, &total, svalid, &sv);
    cg_loop_end(f, &wl);
    /* this thread's inclusive value: the warps before it, then its own */
    cg_val pv;
    co_part_get(f, &pre, &pv);
    take_left(f, lam, &x, co_valid(f, &pre), &pv);
  } else {
    cg_val tv;
    LLVMValueRef tvalid;
    co_part_shfl(f, SIMT_SHFL_IDX, &x, w31, &tv, &tvalid);
    after = cg_seq_if(f, tvalid);
    cg_var_store(f, &total.acc, &tv);
    LLVMBuildStore(B, LLVMConstInt(M->t_i1, 1, 0), total.valid);
    cg_seq_endif(f, after);
  }
  /* the chunks before: the carry on the left */
  cg_val cv;
  co_part_get(f, &carry, &cv);
  take_left(f, lam, &x, co_valid(f, &carry), &cv);
  after = cg_seq_if(f, has);
  cg_val y;
  co_part_get(f, &x, &y);
  LLVMValueRef at =
      LLVMBuildAdd(B, r->lin0, co_pos(f, right, n, excl ? LLVMBuildAdd(B, j, one, "") : j), "");
  cg_seq_store(f, o, at, &y);
  cg_seq_endif(f, after);
  cg_val tot;
  co_part_get(f, &total, &tot);
  take(f, lam, &carry, co_valid(f, &total), &tot);
  co_pass_end(f, &ps); /* the row is written: every thread may read it */
}

/* filter(p, a) by the group: chunks of its size, each thread testing one
 * element; a warp ballot gives each keeper its place among the chunk's
 * keepers (the popcount of the lanes before it), and in a block the
 * warps' counts go through shared memory (each thread adds those of the
 * warps before its own); the kept elements are stored at the running count
 * in the order of the row, as the interpreter stores them. */
LLVMValueRef cg_coop_filter_row(cg_fn *f, ir_ref lam, const seq_arr *a, const seq_arr *o,
                                LLVMValueRef n) {
  cg_module *M = f->M;
  LLVMBuilderRef B = M->b;
  co_pass ps;
  co_pass_begin(f, lam, &ps);
  uint8_t mode = ps.mode;
  ir_type elem = ps.elem;
  LLVMValueRef g = ps.g, lane = ps.lane, zero = cg_i64(M, 0);
  LLVMValueRef count = cg_alloca(f, M->t_i64), keepv = cg_alloca(f, M->t_i1);
  LLVMBuildStore(B, zero, count);
  cg_var el;
  cg_var_new(f, elem, &el);
  /* per warp: how many it keeps (a block's warps, at most 32) */
  LLVMValueRef slots =
      mode == CG_COOP_BLOCK ? simt_shared(f, M->t_i32, 1024 / SIMT_WARP, "fcnt") : NULL;
  LLVMValueRef lt = LLVMBuildSub(B, LLVMBuildShl(B, LLVMConstInt(M->t_i32, 1, 0), lane, ""),
                                 LLVMConstInt(M->t_i32, 1, 0), "");
  co_pass_loop(f, &ps, n);
  LLVMValueRef j = ps.j;
  LLVMBuildStore(B, LLVMConstInt(M->t_i1, 0, 0), keepv);
  LLVMBasicBlockRef after = cg_seq_if(f, ps.has);
  cg_val v, keep;
  cg_seq_load(f, a, &j, j, elem, &v);
  cg_var_store(f, &el, &v);
  LLVMValueRef mark = cg_seq_mark(f, cg_needs_tmp(M->m, lam));
  cg_apply(f, lam, 1, &v, &keep);
  cg_seq_release(f, mark);
  LLVMBuildStore(B, keep.n == 1 ? keep.l[0].v : LLVMConstInt(M->t_i1, 0, 0), keepv);
  cg_seq_endif(f, after);
  LLVMValueRef k = LLVMBuildLoad2(B, M->t_i1, keepv, "");
  LLVMValueRef bal = simt_vote(f, SIMT_VOTE_BALLOT, k);
  LLVMValueRef before = LLVMBuildZExt(B, simt_popc(f, LLVMBuildAnd(B, bal, lt, "")), M->t_i64, "");
  LLVMValueRef total;
  if (mode == CG_COOP_BLOCK) {
    LLVMValueRef w = simt_warp(f), nw = LLVMBuildUDiv(B, g, cg_i64(M, SIMT_WARP), "");
    LLVMValueRef wi = LLVMBuildZExt(B, w, M->t_i64, "");
    simt_barrier(f); /* the last chunk's counts are read */
    LLVMBasicBlockRef l0 =
        cg_seq_if(f, LLVMBuildICmp(B, LLVMIntEQ, lane, LLVMConstInt(M->t_i32, 0, 0), ""));
    LLVMBuildStore(B, simt_popc(f, bal), LLVMBuildGEP2(B, M->t_i32, slots, &wi, 1, ""));
    cg_seq_endif(f, l0);
    simt_barrier(f);
    LLVMValueRef pre = cg_alloca(f, M->t_i64), all = cg_alloca(f, M->t_i64);
    LLVMBuildStore(B, zero, pre);
    LLVMBuildStore(B, zero, all);
    cg_loop wl;
    LLVMValueRef q = cg_loop_begin(f, &wl, zero, nw);
    LLVMValueRef cq = LLVMBuildZExt(
        B, LLVMBuildLoad2(B, M->t_i32, LLVMBuildGEP2(B, M->t_i32, slots, &q, 1, ""), ""),
        M->t_i64, "");
    LLVMValueRef earlier = LLVMBuildICmp(B, LLVMIntULT, q, wi, "");
    LLVMBuildStore(B,
                   LLVMBuildAdd(B, LLVMBuildLoad2(B, M->t_i64, pre, ""),
                                LLVMBuildSelect(B, earlier, cq, zero, ""), ""),
                   pre);
    LLVMBuildStore(B, LLVMBuildAdd(B, LLVMBuildLoad2(B, M->t_i64, all, ""), cq, ""), all);
    cg_loop_end(f, &wl);
    before = LLVMBuildAdd(B, before, LLVMBuildLoad2(B, M->t_i64, pre, ""), "");
    total = LLVMBuildLoad2(B, M->t_i64, all, "");
  } else {
    total = LLVMBuildZExt(B, simt_popc(f, bal), M->t_i64, "");
  }
  LLVMValueRef base = LLVMBuildLoad2(B, M->t_i64, count, "");
  after = cg_seq_if(f, k);
  cg_val x;
  cg_var_load(f, &el, &x);
  cg_seq_store(f, o, LLVMBuildAdd(B, base, before, ""), &x);
  cg_seq_endif(f, after);
  LLVMBuildStore(B, LLVMBuildAdd(B, base, total, ""), count);
  co_pass_end(f, &ps); /* the kept elements are written: every thread may read them */
  return LLVMBuildLoad2(B, M->t_i64, count, "");
}
