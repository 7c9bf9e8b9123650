/* lib/lower/gskel_lookback.c: the single-pass block scan with decoupled
 * look-back that the GPU scans and filter share (gskel_scan.h).
 *
 * Algorithm: Merrill & Garland, "Single-pass Parallel Prefix Scan with
 * Decoupled Look-back" (NVIDIA, 2016), as CUB's DeviceScan implements it.
 * A scan reads its input once and writes its output once, in one kernel:
 * each block scans its tile, publishes the tile's aggregate at once, then
 * finds the sum of all earlier tiles by reading the descriptors of its
 * predecessors backwards until one has its inclusive prefix published.
 * Aggregates appear right after a tile is loaded, so a block rarely waits
 * long, and the look-back reads a window of 32 predecessors at a time (one
 * per lane of warp 0), which keeps it short even when thousands of tiles
 * run at once on an H100 (132 SMs, 8 blocks of 256 threads each).
 *
 * Descriptors (scratch: all start INVALID, zero; the last block to finish
 * clears them for the next launch, gs_tiles_end).
 * PACKED, for a partial of one leaf of at most 32 bits (an i32 or f32 sum,
 * a count; gs_packed): one 64-bit word, the status (0 invalid, 1
 * aggregate, 2 inclusive prefix) in its low half and the value's bits in
 * its high half, written with one volatile 64-bit store and read with one
 * volatile 64-bit load (aligned: single-copy atomic), so that status and
 * value always go together and no fence is needed on either side (CUB's
 * packed tile status). Otherwise:
 *     [0, 4)           status
 *     [8 + 16i, +8)    leaf i of the aggregate (slot type)
 *     [16 + 16i, +8)   leaf i of the inclusive prefix
 * The two values have separate slots, so a reader that saw status 1 reads
 * the aggregate even when the owner has meanwhile published its inclusive
 * prefix. A writer stores the value, then __threadfence (simt_fence), then
 * the status, with volatile stores; a reader loads the status (volatile),
 * fences once its whole window is ready, then loads the values (volatile:
 * another SM wrote them; nothing may come from a stale L1 line). A tile
 * whose aggregate contains a segment head publishes its inclusive prefix
 * at once: it equals the aggregate, so its successors stop there.
 *
 * Deadlock freedom: the tile number is an atomic ticket, so every tile a
 * block waits for belongs to a block that is already running; and a warp
 * that spins while the call has failed stops waiting (a block whose
 * element code failed before another block's guard ran makes that block
 * leave without publishing).
 */
#include "lower/gskel_scan.h"
#include "lower/skel_red.h"

#define GS_ST_AGG 1
#define GS_ST_INCL 2

/* ---- partials ---- */

static LLVMValueRef gs_false(cg_module *M) {
  return LLVMConstInt(M->t_i1, 0, 0);
}

void gs_var_new(cg_fn *f, const gs_op *op, gs_var *out) {
  cg_module *M = f->M;
  out->valid = cg_alloca(f, M->t_i1);
  out->head = cg_alloca(f, M->t_i1);
  out->v = cg_new(M, (op->n ? op->n : 1) * sizeof *out->v);
  for (uint32_t i = 0; i < op->n; i++)
    out->v[i] = cg_alloca(f, op->ty[i]);
}

void gs_var_load(cg_fn *f, const gs_op *op, const gs_var *var, gs_part *out) {
  cg_module *M = f->M;
  out->valid = LLVMBuildLoad2(M->b, M->t_i1, var->valid, "");
  out->head = LLVMBuildLoad2(M->b, M->t_i1, var->head, "");
  out->v = cg_new(M, (op->n ? op->n : 1) * sizeof *out->v);
  for (uint32_t i = 0; i < op->n; i++)
    out->v[i] = LLVMBuildLoad2(M->b, op->ty[i], var->v[i], "");
}

void gs_var_store(cg_fn *f, const gs_op *op, const gs_var *var, const gs_part *x) {
  cg_module *M = f->M;
  LLVMBuildStore(M->b, x->valid, var->valid);
  LLVMBuildStore(M->b, op->seg ? x->head : gs_false(M), var->head);
  for (uint32_t i = 0; i < op->n; i++)
    LLVMBuildStore(M->b, x->v[i], var->v[i]);
}

void gs_empty(cg_fn *f, const gs_op *op, gs_part *out) {
  cg_module *M = f->M;
  out->valid = out->head = gs_false(M);
  out->v = cg_new(M, (op->n ? op->n : 1) * sizeof *out->v);
  for (uint32_t i = 0; i < op->n; i++)
    out->v[i] = LLVMConstNull(op->ty[i]);
}

void gs_value(cg_fn *f, const gs_op *op, const LLVMValueRef *v, LLVMValueRef head, gs_part *out) {
  cg_module *M = f->M;
  out->valid = LLVMConstInt(M->t_i1, 1, 0);
  out->head = op->seg && head ? head : gs_false(M);
  out->v = cg_new(M, (op->n ? op->n : 1) * sizeof *out->v);
  for (uint32_t i = 0; i < op->n; i++)
    out->v[i] = v[i];
}

void gs_comb(cg_fn *f, const gs_op *op, const gs_part *a, const gs_part *b, gs_part *out) {
  cg_module *M = f->M;
  LLVMBuilderRef B = M->b;
  LLVMValueRef *slot = cg_new(M, (op->n ? op->n : 1) * sizeof *slot);
  for (uint32_t i = 0; i < op->n; i++) {
    slot[i] = cg_alloca(f, op->ty[i]);
    LLVMBuildStore(B, LLVMBuildSelect(B, b->valid, b->v[i], a->v[i], ""), slot[i]);
  }
  LLVMValueRef need = LLVMBuildAnd(B, a->valid, b->valid, "");
  if (op->seg)
    need = LLVMBuildAnd(B, need, LLVMBuildNot(B, b->head, ""), "");
  LLVMBasicBlockRef join = sk_if(f, need);
  LLVMValueRef *r = cg_new(M, (op->n ? op->n : 1) * sizeof *r);
  op->comb(f, op, a->v, b->v, r);
  for (uint32_t i = 0; i < op->n; i++)
    LLVMBuildStore(B, r[i], slot[i]);
  sk_endif(f, join);
  out->valid = LLVMBuildOr(B, a->valid, b->valid, "");
  out->head = op->seg ? LLVMBuildOr(B, a->head, b->head, "") : gs_false(M);
  out->v = cg_new(M, (op->n ? op->n : 1) * sizeof *out->v);
  for (uint32_t i = 0; i < op->n; i++)
    out->v[i] = LLVMBuildLoad2(B, op->ty[i], slot[i], "");
}

/* A partial through a warp shuffle: the two bits travel as one i32. */
static void gs_shfl(cg_fn *f, const gs_op *op, simt_shfl_mode mode, const gs_part *x,
                    LLVMValueRef arg, gs_part *out) {
  cg_module *M = f->M;
  LLVMBuilderRef B = M->b;
  LLVMValueRef bits = LLVMBuildZExt(B, x->valid, M->t_i32, "");
  if (op->seg)
    bits = LLVMBuildOr(
        B, bits,
        LLVMBuildShl(B, LLVMBuildZExt(B, x->head, M->t_i32, ""), LLVMConstInt(M->t_i32, 1, 0), ""),
        "");
  bits = simt_shfl(f, mode, bits, arg);
  out->valid = LLVMBuildTrunc(B, bits, M->t_i1, "");
  out->head = op->seg ? LLVMBuildTrunc(B, LLVMBuildLShr(B, bits, LLVMConstInt(M->t_i32, 1, 0), ""),
                                       M->t_i1, "")
                      : gs_false(M);
  out->v = cg_new(M, (op->n ? op->n : 1) * sizeof *out->v);
  for (uint32_t i = 0; i < op->n; i++)
    out->v[i] = simt_shfl(f, mode, x->v[i], arg);
}

/* ---- slots ---- */

LLVMTypeRef gs_slot_type(cg_module *M, LLVMTypeRef t) {
  if (LLVMGetTypeKind(t) == LLVMIntegerTypeKind && LLVMGetIntTypeWidth(t) < 32)
    return M->t_i32;
  return t;
}

LLVMValueRef gs_to_slot(cg_module *M, LLVMValueRef v) {
  LLVMTypeRef t = LLVMTypeOf(v);
  return gs_slot_type(M, t) == t ? v : LLVMBuildZExt(M->b, v, M->t_i32, "");
}

LLVMValueRef gs_from_slot(cg_module *M, LLVMValueRef w, LLVMTypeRef t) {
  return LLVMTypeOf(w) == t ? w : LLVMBuildTrunc(M->b, w, t, "");
}

uint32_t gs_slot_bytes(cg_module *M, const gs_op *op) {
  LLVMTargetDataRef dl = LLVMGetModuleDataLayout(M->mod);
  uint32_t bytes = 0;
  for (uint32_t i = 0; i < op->n; i++)
    bytes += (uint32_t)LLVMABISizeOfType(dl, gs_slot_type(M, op->ty[i]));
  return bytes;
}

/* Shared-memory arrays of partials: a flags word (bit 0 valid, bit 1
 * head) and the leaves in slot types. */
typedef struct gs_sarr {
  LLVMValueRef flags;
  LLVMValueRef *v;
} gs_sarr;

static void gs_sarr_new(cg_fn *f, const gs_op *op, uint32_t count, gs_sarr *out) {
  cg_module *M = f->M;
  out->flags = simt_shared(f, M->t_i32, count, "scan.pflags");
  out->v = cg_new(M, (op->n ? op->n : 1) * sizeof *out->v);
  for (uint32_t i = 0; i < op->n; i++)
    out->v[i] = simt_shared(f, gs_slot_type(M, op->ty[i]), count, "scan.pvals");
}

static LLVMValueRef gs_gep(cg_module *M, LLVMTypeRef t, LLVMValueRef base, LLVMValueRef i) {
  if (LLVMTypeOf(i) != M->t_i64)
    i = LLVMBuildZExt(M->b, i, M->t_i64, "");
  return LLVMBuildGEP2(M->b, t, base, &i, 1, "");
}

static void gs_sarr_store(cg_fn *f, const gs_op *op, const gs_sarr *a, LLVMValueRef i,
                          const gs_part *x) {
  cg_module *M = f->M;
  LLVMBuilderRef B = M->b;
  LLVMValueRef bits = LLVMBuildZExt(B, x->valid, M->t_i32, "");
  if (op->seg)
    bits = LLVMBuildOr(
        B, bits,
        LLVMBuildShl(B, LLVMBuildZExt(B, x->head, M->t_i32, ""), LLVMConstInt(M->t_i32, 1, 0), ""),
        "");
  LLVMBuildStore(B, bits, gs_gep(M, M->t_i32, a->flags, i));
  for (uint32_t k = 0; k < op->n; k++)
    LLVMBuildStore(B, gs_to_slot(M, x->v[k]), gs_gep(M, gs_slot_type(M, op->ty[k]), a->v[k], i));
}

static void gs_sarr_load(cg_fn *f, const gs_op *op, const gs_sarr *a, LLVMValueRef i,
                         gs_part *out) {
  cg_module *M = f->M;
  LLVMBuilderRef B = M->b;
  LLVMValueRef bits = LLVMBuildLoad2(B, M->t_i32, gs_gep(M, M->t_i32, a->flags, i), "");
  out->valid = LLVMBuildTrunc(B, bits, M->t_i1, "");
  out->head = op->seg ? LLVMBuildTrunc(B, LLVMBuildLShr(B, bits, LLVMConstInt(M->t_i32, 1, 0), ""),
                                       M->t_i1, "")
                      : gs_false(M);
  out->v = cg_new(M, (op->n ? op->n : 1) * sizeof *out->v);
  for (uint32_t k = 0; k < op->n; k++) {
    LLVMTypeRef st = gs_slot_type(M, op->ty[k]);
    out->v[k] = gs_from_slot(M, LLVMBuildLoad2(B, st, gs_gep(M, st, a->v[k], i), ""), op->ty[k]);
  }
}

/* ---- small helpers ---- */

void gs_exit_if(cg_fn *f, LLVMBasicBlockRef end, LLVMValueRef cond) {
  cg_module *M = f->M;
  LLVMBasicBlockRef go = cg_block(f, "go");
  LLVMBuildCondBr(M->b, cond, end, go);
  LLVMPositionBuilderAtEnd(M->b, go);
}


static LLVMValueRef gs_i32(cg_module *M, uint32_t k) {
  return LLVMConstInt(M->t_i32, k, 0);
}

/* 1 << iv as an i32 shuffle distance (iv: i64 loop variable < 5). */
static LLVMValueRef gs_dist(cg_module *M, LLVMValueRef iv) {
  return LLVMBuildShl(M->b, gs_i32(M, 1), LLVMBuildTrunc(M->b, iv, M->t_i32, ""), "");
}

/* ---- descriptors ---- */

/* A descriptor fits in one 64-bit word when the partial is one leaf of at
 * most 32 bits (an i32 or f32 prefix sum, a count): the status in the low
 * half, the value's bits in the high half. A writer then publishes with
 * one 64-bit store and a reader sees status and value from one load, both
 * single-copy atomic (aligned), so neither needs a fence: CUB's packed
 * tile descriptor, and issue 14's "no membar.gl on the fast path". */
bool gs_packed(const gs_op *op) {
  if (op->n != 1)
    return false;
  LLVMTypeKind k = LLVMGetTypeKind(op->ty[0]);
  return k == LLVMFloatTypeKind ||
         (k == LLVMIntegerTypeKind && LLVMGetIntTypeWidth(op->ty[0]) <= 32);
}

/* The value's 32 bits as an i32, and back. */
static LLVMValueRef gs_pack_bits(cg_module *M, LLVMValueRef v) {
  LLVMTypeRef t = LLVMTypeOf(v);
  if (LLVMGetTypeKind(t) == LLVMFloatTypeKind)
    return LLVMBuildBitCast(M->b, v, M->t_i32, "");
  return gs_to_slot(M, v);
}

static LLVMValueRef gs_unpack_bits(cg_module *M, LLVMValueRef bits, LLVMTypeRef t) {
  if (LLVMGetTypeKind(t) == LLVMFloatTypeKind)
    return LLVMBuildBitCast(M->b, bits, t, "");
  return gs_from_slot(M, bits, t);
}

uint64_t gs_desc_bytes(const gs_op *op) {
  return gs_packed(op) ? 8 : 8 + 16 * (uint64_t)op->n;
}

static LLVMValueRef gs_desc(cg_fn *f, const gs_op *op, LLVMValueRef scratch, LLVMValueRef tile) {
  cg_module *M = f->M;
  LLVMValueRef off =
      LLVMBuildAdd(M->b, cg_i64(M, GS_SCRATCH_FIXED),
                   LLVMBuildMul(M->b, tile, cg_i64(M, (int64_t)gs_desc_bytes(op)), ""), "");
  return LLVMBuildGEP2(M->b, M->t_i8, scratch, &off, 1, "desc");
}

/* Address of leaf k's aggregate (incl false) or inclusive prefix slot. */
static LLVMValueRef gs_desc_slot(cg_module *M, LLVMValueRef d, LLVMValueRef incl, uint32_t k) {
  LLVMValueRef off = LLVMBuildSelect(M->b, incl, cg_i64(M, 16 + 16 * (int64_t)k),
                                     cg_i64(M, 8 + 16 * (int64_t)k), "");
  return LLVMBuildGEP2(M->b, M->t_i8, d, &off, 1, "");
}

/* Value, fence, status: see the file comment. status: an i32. */
static void gs_publish(cg_fn *f, const gs_op *op, LLVMValueRef d, LLVMValueRef status,
                       const LLVMValueRef *v) {
  cg_module *M = f->M;
  if (gs_packed(op)) { /* one store, no fence */
    LLVMValueRef hi = LLVMBuildZExt(M->b, gs_pack_bits(M, v[0]), M->t_i64, "");
    LLVMValueRef word = LLVMBuildOr(M->b, LLVMBuildShl(M->b, hi, cg_i64(M, 32), ""),
                                    LLVMBuildZExt(M->b, status, M->t_i64, ""), "desc.word");
    simt_store_volatile(f, word, d);
    return;
  }
  LLVMValueRef incl = LLVMBuildICmp(M->b, LLVMIntEQ, status, gs_i32(M, GS_ST_INCL), "");
  for (uint32_t k = 0; k < op->n; k++)
    simt_store_volatile(f, gs_to_slot(M, v[k]), gs_desc_slot(M, d, incl, k));
  simt_fence(f);
  simt_store_volatile(f, status, d);
}

void gs_scratch(lw *L, uint32_t kernel, const gs_op *op) {
  lw_gpu_scratch(L, kernel, GS_SCRATCH_FIXED, gs_desc_bytes(op));
  lw_gpu_counters(L, kernel, GS_SCRATCH_FIXED, gs_desc_bytes(op));
}

/* The tile number: a relaxed atomic suffices (it needs to be unique and
 * drawn in the order blocks start, not to order any memory access). */
void gs_tiles_begin(cg_fn *f, const gs_op *op, gs_tiles *t) {
  cg_module *M = f->M;
  t->scratch = lw_gpu_scratch_ptr(f);
  t->fin = cg_block(f, "tiles.end");
  t->desc = gs_desc_bytes(op);
  LLVMValueRef sh = simt_shared(f, M->t_i32, 1, "scan.ticket");
  LLVMBasicBlockRef join = sk_if(f, LLVMBuildICmp(M->b, LLVMIntEQ, simt_tid(f), gs_i32(M, 0), ""));
  LLVMBuildStore(M->b, simt_atomic_relaxed(f, LLVMAtomicRMWBinOpAdd, t->scratch, gs_i32(M, 1)),
                 sh);
  sk_endif(f, join);
  simt_barrier(f);
  t->tile = LLVMBuildZExt(M->b, LLVMBuildLoad2(M->b, M->t_i32, sh, ""), M->t_i64, "tile");
}

/* The scratch goes back to zero for the next launch (no memset before it):
 * thread 0 of each block, the only thread that publishes descriptors,
 * fences (its publications, and the look-back reads of its warp, come
 * before its done ticket) and draws a ticket on the done counter; the block
 * that draws the last one knows that no block reads or writes a descriptor
 * any more, and clears the counters and every descriptor, 8 bytes a thread
 * at a time (coalesced). One fence per block, after its stores, off the
 * look-back's path. */
void gs_tiles_end(cg_fn *f, const gs_tiles *t) {
  cg_module *M = f->M;
  LLVMBuilderRef B = M->b;
  LLVMBuildBr(B, t->fin);
  LLVMPositionBuilderAtEnd(B, t->fin);
  LLVMValueRef sh = simt_shared(f, M->t_i32, 1, "scan.last");
  LLVMValueRef G = LLVMBuildZExt(B, simt_nctaid(f), M->t_i64, "");
  simt_barrier(f);
  LLVMBasicBlockRef j0 = sk_if(f, LLVMBuildICmp(B, LLVMIntEQ, simt_tid(f), gs_i32(M, 0), ""));
  simt_fence(f);
  LLVMValueRef done = LLVMBuildGEP2(B, M->t_i8, t->scratch, (LLVMValueRef[]){cg_i64(M, 4)}, 1, "");
  LLVMValueRef d = simt_atomic_relaxed(f, LLVMAtomicRMWBinOpAdd, done, gs_i32(M, 1));
  LLVMValueRef last = LLVMBuildICmp(
      B, LLVMIntEQ, LLVMBuildZExt(B, d, M->t_i64, ""), LLVMBuildSub(B, G, cg_i64(M, 1), ""), "");
  LLVMBuildStore(B, LLVMBuildZExt(B, last, M->t_i32, ""), sh);
  sk_endif(f, j0);
  simt_barrier(f);
  LLVMValueRef islast =
      LLVMBuildICmp(B, LLVMIntNE, LLVMBuildLoad2(B, M->t_i32, sh, ""), gs_i32(M, 0), "");
  LLVMBasicBlockRef j1 = sk_if(f, islast);
  simt_fence(f);
  LLVMValueRef words = LLVMBuildAdd(
      B, cg_i64(M, GS_SCRATCH_FIXED / 8),
      LLVMBuildMul(B, G, cg_i64(M, (int64_t)(t->desc / 8)), ""), "");
  lw_gloop cl;
  LLVMValueRef w = lw_gloop_begin(f, &cl, LLVMBuildZExt(B, simt_tid(f), M->t_i64, ""), words,
                                  LLVMBuildZExt(B, simt_ntid(f), M->t_i64, ""));
  LLVMBuildStore(B, cg_i64(M, 0), LLVMBuildGEP2(B, M->t_i64, t->scratch, &w, 1, ""));
  lw_gloop_end(f, &cl);
  sk_endif(f, j1);
}

/* ---- the look-back (warp 0 of a tile > 0; the result in lane 0) ----
 * Lane l reads the descriptor of tile wbase - l; the window is reduced to
 * the nearest lane whose tile has its inclusive prefix (lanes beyond it
 * are empty), by a shuffle-down tree in which lane l combines with lanes
 * further back; lane 0 adds the window in front of what it has so far. */
static void gs_lookback(cg_fn *f, const gs_op *op, LLVMValueRef scratch, LLVMValueRef tile,
                        gs_var *run) {
  cg_module *M = f->M;
  LLVMBuilderRef B = M->b;
  LLVMValueRef lane = simt_lane(f), lane64 = LLVMBuildZExt(B, lane, M->t_i64, "");
  gs_part e;
  gs_empty(f, op, &e);
  gs_var_store(f, op, run, &e);
  LLVMValueRef wslot = cg_alloca(f, M->t_i64), sslot = cg_alloca(f, M->t_i32);
  LLVMValueRef wordslot = cg_alloca(f, M->t_i64); /* packed: the descriptor read */
  LLVMBuildStore(B, LLVMBuildSub(B, tile, cg_i64(M, 1), ""), wslot);
  LLVMBasicBlockRef head = cg_block(f, "lb.window"), spin = cg_block(f, "lb.spin"),
                    wait = cg_block(f, "lb.wait"), again = cg_block(f, "lb.again"),
                    got = cg_block(f, "lb.ready"), next = cg_block(f, "lb.next"),
                    exit = cg_block(f, "lb.done");
  LLVMBuildBr(B, head);

  LLVMPositionBuilderAtEnd(B, head);
  LLVMValueRef wb = LLVMBuildLoad2(B, M->t_i64, wslot, "");
  LLVMValueRef j = LLVMBuildSub(B, wb, lane64, "");
  LLVMValueRef inr = LLVMBuildICmp(B, LLVMIntSGE, j, cg_i64(M, 0), "");
  LLVMValueRef d = gs_desc(f, op, scratch, LLVMBuildSelect(B, inr, j, cg_i64(M, 0), ""));
  LLVMBuildBr(B, spin);

  /* Lanes past tile 0 count as "inclusive" (they are never in the window:
   * tile 0 always publishes its inclusive prefix and is nearer). */
  LLVMPositionBuilderAtEnd(B, spin);
  bool packed = gs_packed(op);
  LLVMBuildStore(B, gs_i32(M, GS_ST_INCL), sslot);
  LLVMBasicBlockRef j1 = sk_if(f, inr);
  if (packed) {
    LLVMBuildStore(B, LLVMBuildTrunc(B, simt_load_volatile(f, M->t_i64, d), M->t_i32, ""),
                   sslot);
  } else {
    LLVMBuildStore(B, simt_load_volatile(f, M->t_i32, d), sslot);
  }
  sk_endif(f, j1);
  LLVMValueRef s = LLVMBuildLoad2(B, M->t_i32, sslot, "status");
  LLVMValueRef pend = LLVMBuildICmp(B, LLVMIntEQ, s, gs_i32(M, 0), "");
  LLVMBuildCondBr(B, simt_vote(f, SIMT_VOTE_ANY, pend), wait, got);

  LLVMPositionBuilderAtEnd(B, wait);
  LLVMBuildCondBr(B, simt_vote(f, SIMT_VOTE_ANY, cg_failed(f)), got, again);
  LLVMPositionBuilderAtEnd(B, again);
  simt_yield(f);
  LLVMBuildBr(B, spin);

  /* The window is ready (or the call failed: pending lanes stop it). */
  LLVMPositionBuilderAtEnd(B, got);
  if (packed) {
    /* status and value from one load: read the word again (its status can
     * only have moved on, from aggregate to inclusive prefix, and its value
     * with it), so that the spin loop keeps 32 bits per lane, not 64 */
    LLVMBasicBlockRef jw = sk_if(f, inr);
    LLVMValueRef word = simt_load_volatile(f, M->t_i64, d);
    LLVMBuildStore(B, word, wordslot);
    LLVMBuildStore(B, LLVMBuildTrunc(B, word, M->t_i32, ""), sslot);
    sk_endif(f, jw);
  }
  s = LLVMBuildLoad2(B, M->t_i32, sslot, "");
  if (!packed)
    simt_fence(f); /* the values after the statuses */
  LLVMValueRef isagg = LLVMBuildICmp(B, LLVMIntEQ, s, gs_i32(M, GS_ST_AGG), "");
  LLVMValueRef mask = simt_vote(f, SIMT_VOTE_BALLOT, LLVMBuildNot(B, isagg, ""));
  LLVMValueRef below = LLVMBuildAnd(
      B, mask, LLVMBuildSub(B, LLVMBuildShl(B, gs_i32(M, 1), lane, ""), gs_i32(M, 1), ""), "");
  LLVMValueRef valid = LLVMBuildAnd(
      B, LLVMBuildAnd(B, inr, LLVMBuildICmp(B, LLVMIntEQ, below, gs_i32(M, 0), ""), ""),
      LLVMBuildICmp(B, LLVMIntNE, s, gs_i32(M, 0), ""), "");
  gs_var x;
  gs_var_new(f, op, &x);
  gs_var_store(f, op, &x, &e);
  LLVMBasicBlockRef j2 = sk_if(f, valid);
  LLVMValueRef incl = LLVMBuildNot(B, isagg, "");
  LLVMValueRef *v = cg_new(M, (op->n ? op->n : 1) * sizeof *v);
  if (packed) {
    LLVMValueRef word = LLVMBuildLoad2(B, M->t_i64, wordslot, "");
    LLVMValueRef bits =
        LLVMBuildTrunc(B, LLVMBuildLShr(B, word, cg_i64(M, 32), ""), M->t_i32, "");
    v[0] = gs_unpack_bits(M, bits, op->ty[0]);
  }
  for (uint32_t k = 0; !packed && k < op->n; k++) {
    LLVMTypeRef st = gs_slot_type(M, op->ty[k]);
    v[k] = gs_from_slot(M, simt_load_volatile(f, st, gs_desc_slot(M, d, incl, k)), op->ty[k]);
  }
  gs_part xv;
  gs_value(f, op, v, NULL, &xv);
  gs_var_store(f, op, &x, &xv);
  sk_endif(f, j2);

  cg_loop tl;
  LLVMValueRef iv = cg_loop_begin(f, &tl, cg_i64(M, 0), cg_i64(M, 5));
  LLVMValueRef dist = gs_dist(M, iv);
  gs_part cur, y, r;
  gs_var_load(f, op, &x, &cur);
  gs_shfl(f, op, SIMT_SHFL_DOWN, &cur, dist, &y);
  LLVMBasicBlockRef j3 = sk_if(
      f, LLVMBuildICmp(B, LLVMIntULT, LLVMBuildAdd(B, lane, dist, ""), gs_i32(M, SIMT_WARP), ""));
  gs_comb(f, op, &y, &cur, &r);
  gs_var_store(f, op, &x, &r);
  sk_endif(f, j3);
  cg_loop_end(f, &tl);

  LLVMBasicBlockRef j4 = sk_if(f, LLVMBuildICmp(B, LLVMIntEQ, lane, gs_i32(M, 0), ""));
  gs_part w, acc;
  gs_var_load(f, op, &x, &w);
  gs_var_load(f, op, run, &acc);
  gs_comb(f, op, &w, &acc, &r);
  gs_var_store(f, op, run, &r);
  sk_endif(f, j4);
  LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntNE, mask, gs_i32(M, 0), ""), exit, next);

  LLVMPositionBuilderAtEnd(B, next);
  LLVMBuildStore(B, LLVMBuildSub(B, wb, cg_i64(M, SIMT_WARP), ""), wslot);
  LLVMBuildBr(B, head);
  LLVMPositionBuilderAtEnd(B, exit);
}

/* ---- the block scan ---- */

void gs_block_scan(cg_fn *f, const gs_op *op, LLVMValueRef scratch, LLVMValueRef tile,
                   const gs_part *x, gs_part *prefix, gs_part *tile_prefix, gs_part *agg) {
  cg_module *M = f->M;
  LLVMBuilderRef B = M->b;
  LLVMValueRef tid = simt_tid(f), lane = simt_lane(f), warp = simt_warp(f);
  /* [0, W): warp aggregates; [W, 2W): warp prefixes (then with the tile's
   * prefix in front); 2W: the tile's aggregate; 2W + 1: the tile's
   * exclusive prefix. */
  gs_sarr sh;
  gs_sarr_new(f, op, 2 * GS_WARPS + 2, &sh);
  LLVMValueRef i_agg = gs_i32(M, 2 * GS_WARPS), i_pre = gs_i32(M, 2 * GS_WARPS + 1);
  LLVMValueRef first = LLVMBuildICmp(B, LLVMIntEQ, tile, cg_i64(M, 0), "");
  LLVMValueRef t0 = LLVMBuildICmp(B, LLVMIntEQ, tid, gs_i32(M, 0), "");

  /* Inclusive scan over the warp (Kogge-Stone with shuffles), then the
   * lane's exclusive prefix within the warp. */
  gs_var xs;
  gs_var_new(f, op, &xs);
  gs_var_store(f, op, &xs, x);
  cg_loop wl;
  LLVMValueRef iv = cg_loop_begin(f, &wl, cg_i64(M, 0), cg_i64(M, 5));
  LLVMValueRef dist = gs_dist(M, iv);
  gs_part cur, y, r;
  gs_var_load(f, op, &xs, &cur);
  gs_shfl(f, op, SIMT_SHFL_UP, &cur, dist, &y);
  LLVMBasicBlockRef j1 = sk_if(f, LLVMBuildICmp(B, LLVMIntUGE, lane, dist, ""));
  gs_comb(f, op, &y, &cur, &r);
  gs_var_store(f, op, &xs, &r);
  sk_endif(f, j1);
  cg_loop_end(f, &wl);
  gs_part incl, excl;
  gs_var_load(f, op, &xs, &incl);
  gs_shfl(f, op, SIMT_SHFL_UP, &incl, gs_i32(M, 1), &excl);
  excl.valid = LLVMBuildAnd(B, excl.valid, LLVMBuildICmp(B, LLVMIntNE, lane, gs_i32(M, 0), ""), "");
  LLVMBasicBlockRef j2 = sk_if(f, LLVMBuildICmp(B, LLVMIntEQ, lane, gs_i32(M, SIMT_WARP - 1), ""));
  gs_sarr_store(f, op, &sh, warp, &incl);
  sk_endif(f, j2);
  simt_barrier(f);

  /* Thread 0: the warps' prefixes and the tile's aggregate, published. */
  LLVMBasicBlockRef j3 = sk_if(f, t0);
  gs_var run;
  gs_var_new(f, op, &run);
  gs_part e;
  gs_empty(f, op, &e);
  gs_var_store(f, op, &run, &e);
  cg_loop pl;
  LLVMValueRef w = cg_loop_begin(f, &pl, cg_i64(M, 0), cg_i64(M, GS_WARPS));
  gs_part acc, wa;
  gs_var_load(f, op, &run, &acc);
  gs_sarr_store(f, op, &sh, LLVMBuildAdd(B, w, cg_i64(M, GS_WARPS), ""), &acc);
  gs_sarr_load(f, op, &sh, w, &wa);
  gs_comb(f, op, &acc, &wa, &r);
  gs_var_store(f, op, &run, &r);
  cg_loop_end(f, &pl);
  gs_part ta;
  gs_var_load(f, op, &run, &ta);
  gs_sarr_store(f, op, &sh, i_agg, &ta);
  LLVMValueRef st = LLVMBuildSelect(B, LLVMBuildOr(B, first, ta.head, ""), gs_i32(M, GS_ST_INCL),
                                    gs_i32(M, GS_ST_AGG), "");
  LLVMValueRef d = gs_desc(f, op, scratch, tile);
  gs_publish(f, op, d, st, ta.v);
  LLVMBasicBlockRef j4 = sk_if(f, first);
  gs_sarr_store(f, op, &sh, i_pre, &e);
  sk_endif(f, j4);
  sk_endif(f, j3);
  simt_barrier(f);

  /* Warp 0 of a later tile: look back, then publish the inclusive prefix
   * (unless the aggregate's head made it public already) and fold the
   * tile's prefix into the warps' prefixes (a lane per warp), so that each
   * thread below combines once. */
  LLVMValueRef lb = LLVMBuildAnd(B, LLVMBuildNot(B, first, ""),
                                 LLVMBuildICmp(B, LLVMIntEQ, warp, gs_i32(M, 0), ""), "");
  LLVMBasicBlockRef j5 = sk_if(f, lb);
  gs_var pv;
  gs_var_new(f, op, &pv);
  gs_lookback(f, op, scratch, tile, &pv);
  gs_part p, pall, a2, wp;
  gs_var_load(f, op, &pv, &p);
  gs_shfl(f, op, SIMT_SHFL_IDX, &p, gs_i32(M, 0), &pall);
  LLVMBasicBlockRef j6 = sk_if(f, LLVMBuildICmp(B, LLVMIntEQ, lane, gs_i32(M, 0), ""));
  gs_sarr_store(f, op, &sh, i_pre, &p);
  gs_sarr_load(f, op, &sh, i_agg, &a2);
  LLVMBasicBlockRef j7 = sk_if(f, LLVMBuildNot(B, a2.head, ""));
  gs_comb(f, op, &p, &a2, &r);
  gs_publish(f, op, gs_desc(f, op, scratch, tile), gs_i32(M, GS_ST_INCL), r.v);
  sk_endif(f, j7);
  sk_endif(f, j6);
  LLVMBasicBlockRef j8 = sk_if(f, LLVMBuildICmp(B, LLVMIntULT, lane, gs_i32(M, GS_WARPS), ""));
  LLVMValueRef wi = LLVMBuildAdd(B, lane, gs_i32(M, GS_WARPS), "");
  gs_sarr_load(f, op, &sh, wi, &wp);
  gs_comb(f, op, &pall, &wp, &r);
  gs_sarr_store(f, op, &sh, wi, &r);
  sk_endif(f, j8);
  sk_endif(f, j5);
  simt_barrier(f);

  gs_part tp;
  gs_sarr_load(f, op, &sh, i_pre, &tp);
  if (tile_prefix)
    *tile_prefix = tp;
  if (agg)
    gs_sarr_load(f, op, &sh, i_agg, agg);
  if (prefix) {
    gs_sarr_load(f, op, &sh, LLVMBuildAdd(B, warp, gs_i32(M, GS_WARPS), ""), &wp);
    gs_comb(f, op, &wp, &excl, prefix);
  }
}
