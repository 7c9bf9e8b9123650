/* lib/lower/gskel_tile.c: the element-wise skeleton with shared-memory
 * tiles, for GPU targets (skel.h, lw_tile; asked for by the smem-stencil
 * pass through tiled(e), docs/passes.md).
 *
 * An element-wise kernel whose element function reads an array at several
 * constant offsets from its own index (a stencil's window, or slices of one
 * array as in forward differences) reads each element of that array from
 * global memory once per offset. Barracuda (seed 001, §4.2) stages such an
 * array through shared memory instead: each block copies the part of the
 * array its elements read, the tile plus a halo as wide as the reach, once
 * and with coalesced loads, and the element function then reads the copy.
 * On the 8800GT that paper measured 2x to 8x; on GPUs with an L1 cache the
 * gain is smaller, since the cache catches much of the reuse
 * (bench/results/).
 *
 * Geometry: a block of LW_TILE_BLOCK threads computes one tile of the
 * result at a time, LW_TILE_1D elements in 1-D and LW_TILE_ROWS x
 * LW_TILE_COLS in 2-D (a row of 32 consecutive elements per warp: loads,
 * stores and shared-memory reads are coalesced and free of bank
 * conflicts), and moves on by the grid's number of blocks, so any number of
 * tiles runs on a bounded grid. Every thread of a block runs every
 * iteration of that loop (its bound is the same for the block), so the two
 * barriers of an iteration are reached by all of them: after the copy
 * (every element of the tile is in shared memory) and after the elements
 * (nobody still reads the tile the next copy overwrites).
 *
 * Edges: a tile's halo reaches outside the array at the array's edges and
 * its elements reach past the result's end in the last tiles. Positions
 * outside the array get the stencil's boundary value (the skeleton's
 * `fill`, computed once per position here instead of per read), or are not
 * copied when no read can reach them (slices: the bounds were checked on
 * the host); elements past the end are not computed. Errors: the kernel
 * leaves at once, block-uniformly, when the call has already failed
 * (lw_gpu_guard); element errors are recorded as in every GPU kernel.
 */
#include "lower/skel.h"

#include "codegen/simt.h"

typedef struct tl_leaf {
  lw_tile *t;
  uint32_t i;
} tl_leaf;

/* The tile's extent in dimension d of a rank-r kernel. */
static int64_t tl_extent(uint32_t rank, uint32_t d) {
  if (rank == 1)
    return LW_TILE_1D;
  return d == 0 ? LW_TILE_ROWS : LW_TILE_COLS;
}

bool lw_tile_fits(lw *L, const lw_ew *w) {
  if (w->rank < 1 || w->rank > LW_TILE_MAX_RANK || w->ntiles == 0 || w->ntiles > LW_TILE_MAX)
    return false;
  uint64_t bytes = 16; /* lw_gpu_guard's flag */
  for (uint32_t t = 0; t < w->ntiles; t++) {
    const lw_tile *tl = &w->tiles[t];
    uint64_t cells = 1;
    for (uint32_t d = 0; d < w->rank; d++) {
      if (tl->lo[d] > tl->hi[d] || tl->lo[d] < -4096 || tl->hi[d] > 4096)
        return false;
      cells *= (uint64_t)(tl_extent(w->rank, d) + tl->hi[d] - tl->lo[d]);
    }
    const lw_leaf *lv;
    uint32_t n = lw_leaves(L, tl->type, &lv);
    for (uint32_t i = 0; i < n; i++) {
      if (lv[i].rank != w->rank)
        return false;
      bytes += (cells * ac_scalar_size(lv[i].sc) + 15) / 16 * 16;
    }
    if (bytes > LW_TILE_MAX_SMEM)
      return false;
  }
  return true;
}

/* The element of the tile at global position idx (CL_FUNC reader). */
static LLVMValueRef tl_read(cg_fn *f, const cg_leaf *a, LLVMValueRef *idx, ir_ref at) {
  (void)at;
  cg_module *M = f->M;
  const tl_leaf *tl = a->env;
  const lw_tile *t = tl->t;
  LLVMValueRef lin = LLVMBuildNSWSub(M->b, idx[0], t->org[0], "");
  if (a->rank == 2) {
    LLVMValueRef col = LLVMBuildNSWSub(M->b, idx[1], t->org[1], "");
    lin = LLVMBuildNSWAdd(M->b, LLVMBuildNSWMul(M->b, lin, cg_i64(M, t->ext[1]), ""), col, "");
  }
  cg_leaf sm = {.kind = CL_ARRAY, .sc = a->sc, .rank = 1, .v = t->smem[tl->i]};
  return cg_load_elem(f, &sm, lin);
}

/* Shared arrays and reader leaves of tile t. */
static void tl_make(lw *L, cg_fn *f, uint32_t rank, lw_tile *t) {
  cg_module *M = L->M;
  const lw_leaf *lv;
  uint32_t n = lw_leaves(L, t->type, &lv);
  uint32_t cells = 1;
  for (uint32_t d = 0; d < rank; d++) {
    t->ext[d] = tl_extent(rank, d) + t->hi[d] - t->lo[d];
    cells *= (uint32_t)t->ext[d];
  }
  t->smem = cg_new(M, (n ? n : 1) * sizeof *t->smem);
  cg_val_alloc(M, t->type, &t->val);
  tl_leaf *env = cg_new(M, (n ? n : 1) * sizeof *env);
  for (uint32_t i = 0; i < n && i < t->val.n; i++) {
    t->smem[i] = simt_shared(f, cg_mem_type(M, lv[i].sc), cells, "tile");
    env[i] = (tl_leaf){t, i};
    t->val.l[i] = (cg_leaf){.kind = CL_FUNC, .sc = (uint8_t)lv[i].sc, .rank = rank,
                            .read = tl_read, .env = &env[i]};
  }
}

/* Copies tile t for the current tile (t->org set): every thread takes
 * positions tid, tid + B, ... of the tile grown by its halo. The tile's
 * size is a constant, so the positions a thread copies are known at
 * compile time: they are staged TL_BATCH at a time, all of a batch's
 * global loads (or boundary values) first, into registers, then all its
 * shared-memory stores, so a thread has up to TL_BATCH loads in flight
 * instead of one load waiting for its store. */
#define TL_BATCH 8

static void tl_copy(lw *L, cg_fn *f, lw_ew *w, lw_tile *t) {
  cg_module *M = L->M;
  uint32_t rank = w->rank;
  int64_t cells = rank == 1 ? t->ext[0] : t->ext[0] * t->ext[1];
  int64_t iters = (cells + LW_TILE_BLOCK - 1) / LW_TILE_BLOCK;
  uint32_t nleaf = t->val.n;
  if (!t->fill && !t->src.n)
    return;
  LLVMValueRef tid = LLVMBuildZExt(M->b, simt_tid(f), M->t_i64, "");
  LLVMValueRef jk[TL_BATCH], cond[TL_BATCH];
  LLVMValueRef *slot = cg_new(M, (size_t)TL_BATCH * (nleaf ? nleaf : 1) * sizeof *slot);
  for (int64_t b0 = 0; b0 < iters; b0 += TL_BATCH) {
    int64_t nb = iters - b0 < TL_BATCH ? iters - b0 : TL_BATCH;
    /* the batch's values, into slots */
    for (int64_t k = 0; k < nb; k++) {
      int64_t off = (b0 + k) * LW_TILE_BLOCK;
      LLVMValueRef j = jk[k] = LLVMBuildNUWAdd(M->b, tid, cg_i64(M, off), "");
      LLVMValueRef c = off + LW_TILE_BLOCK <= cells
                           ? NULL
                           : LLVMBuildICmp(M->b, LLVMIntULT, j, cg_i64(M, cells), "");
      LLVMValueRef pos[LW_TILE_MAX_RANK];
      if (rank == 1) {
        pos[0] = LLVMBuildNSWAdd(M->b, t->org[0], j, "");
      } else {
        LLVMValueRef w1 = cg_i64(M, t->ext[1]);
        pos[0] = LLVMBuildNSWAdd(M->b, t->org[0], LLVMBuildUDiv(M->b, j, w1, ""), "");
        pos[1] = LLVMBuildNSWAdd(M->b, t->org[1], LLVMBuildURem(M->b, j, w1, ""), "");
      }
      if (!t->fill) /* inside the array: 0 <= pos < extent, one unsigned comparison */
        for (uint32_t d = 0; d < rank; d++) {
          LLVMValueRef in = LLVMBuildICmp(M->b, LLVMIntULT, pos[d], t->src.l[0].ext[d], "");
          c = c ? LLVMBuildAnd(M->b, c, in, "") : in;
        }
      cond[k] = c;
      LLVMBasicBlockRef next = NULL;
      if (c) {
        LLVMBasicBlockRef yes = cg_block(f, "tile.load");
        next = cg_block(f, "tile.loaded");
        LLVMBuildCondBr(M->b, c, yes, next);
        LLVMPositionBuilderAtEnd(M->b, yes);
      }
      cg_val v = {0};
      if (t->fill)
        t->fill(L, f, w, t, pos, &v);
      for (uint32_t i = 0; i < nleaf; i++) {
        LLVMValueRef x = t->fill ? (i < v.n ? v.l[i].v : NULL)
                                 : (i < t->src.n ? cg_read(f, &t->src.l[i], pos, false, w->at)
                                                 : NULL);
        slot[k * nleaf + i] = x ? cg_alloca(f, LLVMTypeOf(x)) : NULL;
        if (x)
          LLVMBuildStore(M->b, x, slot[k * nleaf + i]);
      }
      if (c) {
        LLVMBuildBr(M->b, next);
        LLVMPositionBuilderAtEnd(M->b, next);
      }
    }
    /* then the batch's shared-memory stores */
    for (int64_t k = 0; k < nb; k++) {
      LLVMBasicBlockRef next = NULL;
      if (cond[k]) {
        LLVMBasicBlockRef yes = cg_block(f, "tile.store");
        next = cg_block(f, "tile.stored");
        LLVMBuildCondBr(M->b, cond[k], yes, next);
        LLVMPositionBuilderAtEnd(M->b, yes);
      }
      for (uint32_t i = 0; i < nleaf; i++) {
        LLVMValueRef a = slot[k * nleaf + i];
        if (!a)
          continue;
        cg_leaf sm = {.kind = CL_ARRAY, .sc = t->val.l[i].sc, .rank = 1, .v = t->smem[i]};
        cg_store_elem(f, &sm, jk[k], LLVMBuildLoad2(M->b, LLVMGetAllocatedType(a), a, ""));
      }
      if (cond[k]) {
        LLVMBuildBr(M->b, next);
        LLVMPositionBuilderAtEnd(M->b, next);
      }
    }
  }
}

/* Computes the elements of the current tile (origin base[]) that lie in
 * the result (extents ext[]). */
static void tl_elements(lw *L, cg_fn *f, lw_ew *w, const cg_val *ov, LLVMValueRef *ext,
                        LLVMValueRef *base, bool tmp) {
  cg_module *M = L->M;
  uint32_t rank = w->rank;
  int64_t cols = tl_extent(rank, rank - 1);
  int64_t count = rank == 1 ? cols : tl_extent(rank, 0) * cols;
  lw_gloop gl;
  LLVMValueRef j = lw_gloop_begin(f, &gl, LLVMBuildZExt(M->b, simt_tid(f), M->t_i64, ""),
                                  cg_i64(M, count), cg_i64(M, LW_TILE_BLOCK));
  LLVMValueRef idx[LW_TILE_MAX_RANK], in = NULL;
  if (rank == 1) {
    idx[0] = LLVMBuildNSWAdd(M->b, base[0], j, "");
  } else {
    LLVMValueRef c = cg_i64(M, cols);
    idx[0] = LLVMBuildNSWAdd(M->b, base[0], LLVMBuildUDiv(M->b, j, c, ""), "");
    idx[1] = LLVMBuildNSWAdd(M->b, base[1], LLVMBuildURem(M->b, j, c, ""), "");
  }
  for (uint32_t d = 0; d < rank; d++) {
    LLVMValueRef c = LLVMBuildICmp(M->b, LLVMIntSLT, idx[d], ext[d], "");
    in = in ? LLVMBuildAnd(M->b, in, c, "") : c;
  }
  LLVMBasicBlockRef yes = cg_block(f, "tile.elem"), next = cg_block(f, "tile.enext");
  LLVMBuildCondBr(M->b, in, yes, next);
  LLVMPositionBuilderAtEnd(M->b, yes);
  LLVMValueRef mark = tmp ? cg_tmp_mark(f) : NULL;
  cg_val ev;
  w->elem(L, f, w, idx, 0, &ev);
  if (ev.n != ov->n) {
    cg_error(M, AC_ERR_INTERNAL, w->at, "lowering: %s element of %u leaves for %u arrays", w->kind,
             ev.n, ov->n);
  } else {
    LLVMValueRef lin = cg_linear(f, rank, ext, idx);
    for (uint32_t i = 0; i < ov->n; i++)
      cg_store_elem(f, &ov->l[i], lin, ev.l[i].v);
  }
  if (tmp)
    cg_tmp_release(f, mark);
  LLVMBuildBr(M->b, next);
  LLVMPositionBuilderAtEnd(M->b, next);
  lw_gloop_end(f, &gl);
}

bool lw_gpu_tiled(lw *L, lw_ew *w, const lw_val *out, uint32_t total) {
  (void)total;
  cg_module *M = L->M;
  uint32_t rank = w->rank, k;
  cg_fn *f = lw_gpu_kernel_begin(L, w->at, w->kind, 1, LW_TILE_BLOCK, &k);
  lw_gpu_guard(f);
  cg_val ov;
  lw_load(L, f, k, out, &ov);
  f->frame_ro = true; /* it writes its fresh outputs and shared memory only */
  LLVMValueRef ext[LW_TILE_MAX_RANK], ntiles[LW_TILE_MAX_RANK];
  for (uint32_t d = 0; d < rank; d++)
    ext[d] = ov.n ? ov.l[0].ext[d] : lw_x_in_kernel(L, f, k, w->ext[d]);
  for (uint32_t t = 0; t < w->ntiles; t++)
    tl_make(L, f, rank, &w->tiles[t]);
  if (w->setup)
    w->setup(L, f, k, w);
  for (uint32_t t = 0; t < w->ntiles; t++) /* extents for whoever asks */
    for (uint32_t i = 0; i < w->tiles[t].val.n && w->tiles[t].src.n; i++)
      w->tiles[t].val.l[i].ext = w->tiles[t].src.l[0].ext;
  bool tmp = w->code && cg_needs_tmp(L->m, w->code);

  /* tile q covers [base, base + extent) in each dimension, row-major */
  uint32_t xt = lw_x_const(L, 1);
  for (uint32_t d = 0; d < rank; d++) {
    int64_t te = tl_extent(rank, d);
    ntiles[d] = LLVMBuildUDiv(M->b, LLVMBuildNUWAdd(M->b, ext[d], cg_i64(M, te - 1), ""),
                              cg_i64(M, te), "");
    uint32_t nd = lw_x_bin(L, PX_DIV, lw_x_bin(L, PX_ADD, w->ext[d], lw_x_const(L, te - 1)),
                           lw_x_const(L, te));
    xt = lw_x_bin(L, PX_MUL, xt, nd);
  }
  lw_gloop gl;
  LLVMValueRef q = lw_gloop_begin(f, &gl, LLVMBuildZExt(M->b, simt_ctaid(f), M->t_i64, ""), f->hi,
                                  LLVMBuildZExt(M->b, simt_nctaid(f), M->t_i64, ""));
  LLVMValueRef base[LW_TILE_MAX_RANK];
  if (rank == 1) {
    base[0] = LLVMBuildNUWMul(M->b, q, cg_i64(M, LW_TILE_1D), "");
  } else {
    base[0] = LLVMBuildNUWMul(M->b, LLVMBuildUDiv(M->b, q, ntiles[1], ""),
                              cg_i64(M, LW_TILE_ROWS), "");
    base[1] = LLVMBuildNUWMul(M->b, LLVMBuildURem(M->b, q, ntiles[1], ""),
                              cg_i64(M, LW_TILE_COLS), "");
  }
  for (uint32_t t = 0; t < w->ntiles; t++) {
    lw_tile *tl = &w->tiles[t];
    for (uint32_t d = 0; d < rank; d++)
      tl->org[d] = LLVMBuildNSWAdd(M->b, base[d], cg_i64(M, tl->lo[d]), "");
    tl_copy(L, f, w, tl);
  }
  simt_barrier(f);
  tl_elements(L, f, w, &ov, ext, base, tmp);
  simt_barrier(f);
  lw_gloop_end(f, &gl);
  lw_gpu_kernel_end(L, f, k);
  /* a block per tile, at most 2^20 blocks (the loop takes the rest) */
  uint32_t blocks = lw_x_bin(L, PX_MAX, lw_x_bin(L, PX_MIN, xt, lw_x_const(L, (int64_t)1 << 20)),
                             lw_x_const(L, 1));
  pl_launch(L->p, k, xt, blocks);
  return M->st == AC_OK;
}

bool lw_tile_wanted(lw *L, ir_ref e) {
  if (L->tile_at != e || e == IR_NONE)
    return false;
  L->tile_at = IR_NONE;
  return L->gpu;
}
