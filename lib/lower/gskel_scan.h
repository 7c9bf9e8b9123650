/* lib/lower/gskel_scan.h: the GPU scan family (internal to lib/lower): the
 * skeletons of the six scans (gskel_scan.c) and of filter (gskel_filter.c),
 * and the single-pass block scan with decoupled look-back they share
 * (gskel_lookback.c). The skeletons themselves are declared in skel.h.
 *
 * The shared machinery scans a sequence split into TILES, one tile per
 * block of GS_BLOCK threads, under an associative operator on PARTIALS: a
 * partial is a value (scalar leaves) with a `valid` bit (false: the empty
 * sequence, so no identity element is needed: the program's functions have
 * none we may rely on) and, for segmented operators, a `head` bit (the
 * partial contains the start of a segment):
 *     a (+) b = b                      if b is a head or a is empty,
 *               a                      if b is empty,
 *               comb(a, b)             otherwise (a before b),
 * with valid = a.valid | b.valid and head = a.head | b.head. This is the
 * segmented-scan operator of Blelloch ("Prefix sums and their
 * applications", 1990) and Sengupta et al. (2007), with emptiness added;
 * comb (the program's function) is called only where both operands are
 * values the sequential order would have combined, and never across a
 * segment start.
 */
#ifndef ARRAYC_LIB_LOWER_GSKEL_SCAN_H
#define ARRAYC_LIB_LOWER_GSKEL_SCAN_H

#include "lower/skel.h"

#include "codegen/simt.h"

/* Threads per block of every kernel of the family (8 warps). */
#define GS_BLOCK 256u
#define GS_WARPS (GS_BLOCK / SIMT_WARP)

/* An associative operator: n scalar leaves of register types ty[], comb
 * writes comb(a, b) (a earlier in the sequence) into out[0..n). */
typedef struct gs_op gs_op;
typedef void (*gs_comb_fn)(cg_fn *f, const gs_op *op, const LLVMValueRef *a, const LLVMValueRef *b,
                           LLVMValueRef *out);
struct gs_op {
  uint32_t n;
  LLVMTypeRef *ty;
  bool seg; /* partials carry head bits */
  gs_comb_fn comb;
  void *ud;
};

/* A partial as SSA values (valid, head: i1; v: n leaves, arena). */
typedef struct gs_part {
  LLVMValueRef valid, head;
  LLVMValueRef *v;
} gs_part;
/* A partial in allocas, for values that live across blocks and loops. */
typedef struct gs_var {
  LLVMValueRef valid, head;
  LLVMValueRef *v;
} gs_var;

void gs_var_new(cg_fn *f, const gs_op *op, gs_var *out);
void gs_var_load(cg_fn *f, const gs_op *op, const gs_var *var, gs_part *out);
void gs_var_store(cg_fn *f, const gs_op *op, const gs_var *var, const gs_part *x);
/* The empty partial (zero leaves). */
void gs_empty(cg_fn *f, const gs_op *op, gs_part *out);
/* A valid partial of values v (head: an i1, or NULL for none). */
void gs_value(cg_fn *f, const gs_op *op, const LLVMValueRef *v, LLVMValueRef head, gs_part *out);
/* out = a (+) b (the operator above; a is earlier). Branches around comb. */
void gs_comb(cg_fn *f, const gs_op *op, const gs_part *a, const gs_part *b, gs_part *out);

/* Shared memory holds leaves in SLOT types: integers narrower than 32 bits
 * widen to i32 (no sub-word bank conflicts; bool is i1 in registers). */
LLVMTypeRef gs_slot_type(cg_module *M, LLVMTypeRef t);
LLVMValueRef gs_to_slot(cg_module *M, LLVMValueRef v);
LLVMValueRef gs_from_slot(cg_module *M, LLVMValueRef w, LLVMTypeRef t);
/* Bytes of one element of the op's leaves in slot types. */
uint32_t gs_slot_bytes(cg_module *M, const gs_op *op);

/* ---- scratch: the look-back kernels' counters (plan.h's `counters`) ----
 * GS_SCRATCH_FIXED bytes hold the ticket counter (i32 at 0) and the done
 * counter (i32 at 4), then one descriptor of gs_desc_bytes(op) per tile:
 * launch with one block per tile. gs_scratch declares all of it as
 * counters: it must be zero when the kernel starts, and the kernel leaves
 * it zero (the last block to finish clears it, gs_tiles_end), so a repeated
 * scan needs no memset between its launches. */
#define GS_SCRATCH_FIXED 16u
uint64_t gs_desc_bytes(const gs_op *op);
void gs_scratch(lw *L, uint32_t kernel, const gs_op *op);
/* True when op's descriptors are packed into one 64-bit word (a partial of
 * one leaf of at most 32 bits; gskel_lookback.c): no fences. */
bool gs_packed(const gs_op *op);
/* A block's tile: the scratch pointer, the block's logical tile number
 * (i64, block-uniform: an atomic ticket from the counter at the start of
 * scratch, so that a tile only ever waits for tiles that blocks already
 * running own; blocks may start in any order on a GPU) and the block where
 * the kernel ends (gs_exit_if goes there). gs_tiles_begin contains a
 * barrier; every block must reach gs_tiles_end, the kernel's last code
 * before lw_gpu_kernel_end: it draws a done ticket and the block that draws
 * the last one clears the scratch (barriers). */
typedef struct gs_tiles {
  LLVMValueRef scratch, tile;
  LLVMBasicBlockRef fin;
  uint64_t desc; /* gs_desc_bytes */
} gs_tiles;
void gs_tiles_begin(cg_fn *f, const gs_op *op, gs_tiles *t);
void gs_tiles_end(cg_fn *f, const gs_tiles *t);

/* The block scan with decoupled look-back (Merrill & Garland, "Single-pass
 * Parallel Prefix Scan with Decoupled Look-back", 2016). Every thread of
 * the block calls it with its partial x, threads in sequence order within
 * the tile, tiles in ticket order. It
 *   - scans x over each warp (shuffles) and over the warps (shared memory);
 *   - publishes the tile's aggregate in the tile's descriptor (its
 *     inclusive prefix at once for tile 0 and for a tile with a head);
 *   - has warp 0 look back over the predecessors' descriptors, 32 at a
 *     time, to the nearest inclusive prefix, giving the tile's exclusive
 *     prefix, and publishes the tile's inclusive prefix;
 * and gives, to every thread (each may be NULL): *prefix, the exclusive
 * prefix of x over everything before it; *tile_prefix, the tile's
 * exclusive prefix (empty for tile 0); *agg, the tile's aggregate.
 * Contains barriers. A spinning warp gives up when the call has failed (an
 * element failed somewhere: the block it waits for may never publish). */
void gs_block_scan(cg_fn *f, const gs_op *op, LLVMValueRef scratch, LLVMValueRef tile,
                   const gs_part *x, gs_part *prefix, gs_part *tile_prefix, gs_part *agg);

/* Goes to block `end` (the kernel's end: gs_tiles's fin) when cond, a
 * block-uniform i1, holds. */
void gs_exit_if(cg_fn *f, LLVMBasicBlockRef end, LLVMValueRef cond);

#endif
