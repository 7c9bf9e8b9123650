/* lib/lower/skel.h: the skeleton functions behind lw_skeleton (internal to
 * lib/lower).
 *
 * Each array operation is lowered by one function of type lw_skel_fn
 * (lower.h). They live in several files written by different hands: the
 * element-wise ones (skel_map.c, skel_stencil.c) and the reductions, scans,
 * permutations, filter and rec (skel_fold.c, skel_scan.c, skel_permute.c,
 * skel_filter.c, skel_rec.c). This header declares all of them so that the
 * table in skel_table.c, the only place that maps ops to skeletons, can
 * name them without each file depending on the others.
 */
#ifndef ARRAYC_LIB_LOWER_SKEL_H
#define ARRAYC_LIB_LOWER_SKEL_H

#include "lower/lower.h"

/* ---- helpers for skeletons (lower.c, lower_scalar.c, skel_map.c) ---- */

/* The leaves of type t in ir_ty_leaves order, each with the offset of its
 * first word in the value's layout (rt.h); the array is arena memory. */
typedef struct lw_leaf {
  ac_scalar sc;
  uint32_t rank; /* 0: a scalar (one word); else data word + rank extents */
  uint32_t word;
} lw_leaf;
uint32_t lw_leaves(lw *L, ir_type t, const lw_leaf **out);
/* True if any leaf of t is an array. */
bool lw_has_array(lw *L, ir_type t);

/* True if evaluating e at plan level involves plan-level work: an array
 * operation, or a call, if or loop that contains one (lambdas are not
 * looked into, except the bodies of loops, which become plan loops). */
bool lw_has_work(lw *L, ir_ref e);
/* A scalar expression (lower_scalar.c): a size expression, or a one-chunk
 * kernel with e's plan-level subterms lowered first. */
bool lw_scalar(lw *L, ir_ref e, lw_val *out);
/* Plan-level subterms of scalar code, lowered before its kernel begins and
 * handed to it as pre-computed values (cg_fn.pre_ref/pre_val).
 * lw_pre_collect lowers those among e's kids (and below, through scalar
 * operators) that are always evaluated; lw_pre_install loads them. */
typedef struct lw_pre {
  ir_ref *refs;
  lw_val *vals;
  uint32_t n, cap;
} lw_pre;
void lw_pre_collect(lw *L, ir_ref e, lw_pre *P);
void lw_pre_install(lw *L, cg_fn *f, uint32_t kernel, const lw_pre *P);

/* The epilogue of fold e (struct lw_epi): the node its kernels must be
 * begun at (the scalar expression, whose variables the epilogue uses, or e
 * itself), whether one is asked for, and the code that computes it from
 * the fold's value v inside the kernel, in the one thread that has v last. */
ir_ref lw_epilogue_at(lw *L, ir_ref e);
bool lw_epilogue_wanted(lw *L, ir_ref e);
void lw_epilogue(lw *L, cg_fn *f, uint32_t kernel, const cg_val *v);

/* Plan expressions (lower_scalar.c), folded when their operands are
 * constants (with the plan's, i.e. the language's, i64 semantics). */
uint32_t lw_x_const(lw *L, int64_t k);
uint32_t lw_x_word(lw *L, uint32_t slot);
uint32_t lw_x_bin(lw *L, pl_xop op, uint32_t a, uint32_t b);
bool lw_x_is_const(lw *L, uint32_t x, int64_t *k);
/* A word holding x's value: x's own word when x reads one, else a fresh
 * word set by a `set` instruction emitted now. */
uint32_t lw_x_to_word(lw *L, uint32_t x);
/* x as an expression that is cheap to evaluate again: itself when it is a
 * constant, else a read of lw_x_to_word's word (set now if x reads none). */
uint32_t lw_x_hoist(lw *L, uint32_t x);
/* x's value as an i64 inside kernel f: a constant, or a load of the word
 * that holds it (emitting the `set` now, so before the kernel's launch). */
LLVMValueRef lw_x_in_kernel(lw *L, cg_fn *f, uint32_t kernel, uint32_t x);

/* Integers as the interpreter reads indices, extents and counts: any
 * integer type, as int64 (u64 above INT64_MAX saturates). Size expressions
 * (integer arithmetic over lengths and i64 words) become plan expressions
 * without any kernel. */
uint32_t lw_int(lw *L, ir_ref e);
/* Size expression e (the plan computes it alone: no kernel, no code),
 * written under nb binders above the current environment that it does
 * not use (element code's parameters: an inner extent the same for every
 * element), as lw_int gives it; false if e is not one. */
bool lw_int_under(lw *L, ir_ref e, uint32_t nb, uint32_t *out);
/* True if e is a size expression (lw_int computes it in the plan alone;
 * it cannot fail). */
bool lw_is_size(lw *L, ir_ref e);
/* The interpreter's size check of the array of node p's type with the q
 * extents ext (plan expressions, each >= 0) where it would allocate it:
 * "array too large" at p. `like`, when not NULL, is a value with the same
 * extents and elements at least as large (nothing to check). (delay.c) */
void lw_size_check(lw *L, ir_ref p, uint32_t q, const uint32_t *ext, const lw_val *like);
/* n integers from e: an integer (n == 1) or a tuple of n integers. */
void lw_ints(lw *L, ir_ref e, uint32_t n, uint32_t *out);
/* The int64 value of a frame word holding an integer of type sc. */
uint32_t lw_word_int(lw *L, uint32_t word, ac_scalar sc);
/* A shape argument of rank n into ext[0..n). With `check`, each extent is
 * checked at once ("negative extent %lld" at `at`), as the interpreter does
 * when it reads a shape: needed when something else is evaluated before
 * the result is allocated (lw_alloc_arrays checks too). */
void lw_shape(lw *L, ir_ref e, uint32_t n, uint32_t *ext, ir_ref at, bool check);

/* Runtime messages, written as pieces: the constant ones are printed into
 * the site's format and every other one becomes one of its values (up to
 * RT_FAIL_VALS, runtime/rt.h). lw_check emits `check cond` with the
 * message `pc`, or with `fb` when `pc` needs more values than that. */
typedef struct lw_piece {
  const char *text; /* NULL: the piece is the value of expression x */
  uint32_t x;
} lw_piece;
#define LW_TEXT(s) ((lw_piece){(s), 0})
#define LW_VAL(e) ((lw_piece){NULL, (e)})
void lw_check(lw *L, uint32_t cond, ir_ref at, uint32_t n, const lw_piece *pc, uint32_t nfb,
              const lw_piece *fb);
/* Checks that every array leaf of vals[0..n) has the extents of the first
 * one (a tuple of arrays used as one array; map's operands), failing at
 * `at` with the interpreter's "WHAT: arrays have different shapes: [3] and
 * [2]" (for rank > 1 and extents unknown when compiling: the first
 * differing dimension is named). */
void lw_check_shapes(lw *L, ir_ref at, const char *what, uint32_t n, const lw_val *vals);
/* Inside a kernel: an integer of type sc as i64 (u64 saturates). */
LLVMValueRef lw_cg_int64(cg_fn *f, LLVMValueRef v, ac_scalar sc);
/* A value of element type t made of n scalar leaves (arena). */
void lw_cg_elem(cg_module *M, ir_type t, uint32_t n, const LLVMValueRef *v, const ac_scalar *sc,
                cg_val *out);

/* ---- the element-wise skeleton (skel_map.c) ----
 * One generic kernel for "out[ix] = element(ix)": the result (type `type`,
 * an array or tuple of arrays of rank `rank`, extents ext[]) is allocated,
 * and a kernel launched over all its elements in chunks of whole or partial
 * rows computes each element with `elem` and stores its leaves. The loop
 * over a row is a plain counted loop (the vectoriser's favourite shape).
 * With `split`, each row is cut into border / interior / border parts, and
 * elem is told which part it is in (variant bit 0: the innermost index is
 * in [ilo, ihi); bit 1: the row itself is interior, `rowint`), so that
 * stencils can skip boundary handling where no read can fall outside. */
typedef struct lw_ew lw_ew;
typedef struct lw_tile lw_tile;
struct lw_ew {
  ir_ref at;        /* the operation (kernel environment, error sites) */
  const char *kind; /* kernel kind: "map", ... */
  ir_type type;
  uint32_t rank;
  const uint32_t *ext; /* rank plan expressions */
  ir_ref code;         /* element code that may need temporary memory, or 0 */
  /* In the kernel's entry: load operands (into ud). */
  void (*setup)(lw *L, cg_fn *f, uint32_t kernel, lw_ew *w);
  /* The element at idx[0..rank) (i64 values). */
  void (*elem)(lw *L, cg_fn *f, lw_ew *w, LLVMValueRef *idx, unsigned variant, cg_val *out);
  /* Optional (see above); idx holds the row's outer indices. rowint may be
   * left NULL (rank 1: every row is interior). */
  void (*split)(lw *L, cg_fn *f, lw_ew *w, LLVMValueRef *idx, LLVMValueRef *ilo,
                LLVMValueRef *ihi, LLVMValueRef *rowint);
  void *ud;
  /* Shared-memory tiles (the smem-stencil pass; gskel_tile.c): on a GPU,
   * arrays the element function reads at constant offsets from its index
   * are staged per block. Zero when there are none, and lw_elementwise
   * sets ntiles to 0 when it cannot tile (a CPU target, rank above 2, too
   * much shared memory): setup then loads as usual. */
  uint32_t ntiles;
  lw_tile *tiles;
};

/* ---- shared-memory tiles (gskel_tile.c) ----
 * A tiled element-wise kernel computes its result tile by tile (a block
 * per tile: LW_TILE_1D elements in 1-D, LW_TILE_ROWS x LW_TILE_COLS in
 * 2-D). For each tile it first copies, cooperatively, every element the
 * tile's elements read from each tiled array (the tile grown by its halo:
 * reads at index + c for lo[d] <= c <= hi[d]) into shared memory, waits at
 * a barrier, computes the elements reading the copy, and waits again
 * before the next tile overwrites it.
 *
 * The skeleton fills in type, lo and hi when lowering. Its setup (which
 * runs in the kernel's entry) sets src to the array loaded and makes the
 * element function read the tile through `val`, which gskel_tile.c has
 * made by then: CL_FUNC leaves reading at global positions (the array's
 * own index), each of which must lie in the window of the element being
 * computed. `fill` gives the value stored for a global position that may
 * lie outside the array (a stencil's boundary); NULL stores src's element
 * where the position is inside the array and nothing elsewhere (slices,
 * whose reads never leave the array). */
#define LW_TILE_MAX_RANK 2
#define LW_TILE_MAX 4 /* tiled arrays per kernel */
#define LW_TILE_1D 1024
#define LW_TILE_ROWS 16
#define LW_TILE_COLS 32
#define LW_TILE_BLOCK 256
/* Static shared memory a tiled kernel may use (of the 48 KiB any block
 * may have): beyond it the kernel is not tiled. */
#define LW_TILE_MAX_SMEM (40u * 1024u)
struct lw_tile {
  ir_type type; /* the tiled array's type */
  int64_t lo[LW_TILE_MAX_RANK], hi[LW_TILE_MAX_RANK];
  void (*fill)(lw *L, cg_fn *f, lw_ew *w, lw_tile *t, LLVMValueRef *pos, cg_val *out);
  void *ud; /* the skeleton's, for fill */
  cg_val src, val;
  /* gskel_tile.c's: the shared arrays (one per leaf), the tile's extents
   * and the global position of its first element */
  LLVMValueRef *smem;
  int64_t ext[LW_TILE_MAX_RANK];
  LLVMValueRef org[LW_TILE_MAX_RANK];
};
/* True if w's tiles fit (rank 1 or 2, shared memory within the budget). */
bool lw_tile_fits(lw *L, const lw_ew *w);
/* The tiled GPU kernel (lw_elementwise calls it when L->gpu and w's tiles
 * fit, after allocating *out; `total` elements). */
bool lw_gpu_tiled(lw *L, lw_ew *w, const lw_val *out, uint32_t total);
/* True if the tiled(e) hint (lower.c) asks for e to be tiled; the hint is
 * consumed. The element-wise skeletons of map and stencil ask. */
bool lw_tile_wanted(lw *L, ir_ref e);
bool lw_elementwise(lw *L, lw_ew *w, lw_val *out);
/* idx[0..dims) of the row-major position lin over extents ext[0..dims)
 * (ext[0] is not needed: idx[0] takes what is left). dims 0 writes
 * nothing. */
void lw_unravel(cg_module *M, LLVMValueRef lin, LLVMValueRef *ext, uint32_t dims,
                LLVMValueRef *idx);
/* Its GPU form (gpu.c; lw_elementwise calls it when L->gpu, after
 * allocating *out): a grid-stride loop over the linear index, `total`
 * elements. */
bool lw_gpu_elementwise(lw *L, lw_ew *w, const lw_val *out, uint32_t total);

/* skel_map.c: "out[ix] = element(ix)" operations. */
bool lw_skel_generate(lw *L, ir_ref e, lw_val *out);
bool lw_skel_iota(lw *L, ir_ref e, lw_val *out);
bool lw_skel_fill(lw *L, ir_ref e, lw_val *out);
bool lw_skel_map(lw *L, ir_ref e, lw_val *out);
bool lw_skel_gather(lw *L, ir_ref e, lw_val *out);
bool lw_skel_backpermute(lw *L, ir_ref e, lw_val *out);
bool lw_skel_slice(lw *L, ir_ref e, lw_val *out);
bool lw_skel_reshape(lw *L, ir_ref e, lw_val *out);
bool lw_skel_transpose(lw *L, ir_ref e, lw_val *out);
bool lw_skel_reverse(lw *L, ir_ref e, lw_val *out);
bool lw_skel_replicate(lw *L, ir_ref e, lw_val *out);
bool lw_skel_arrlit(lw *L, ir_ref e, lw_val *out);

/* slice's bounds (kids 1.. of e) against the rank-r source a: the
 * interpreter's checks per dimension and the plan expressions of start,
 * stride and the result's extents (r each). */
void lw_slice_bounds(lw *L, ir_ref e, const lw_val *a, uint32_t r, uint32_t *start,
                     uint32_t *stride, uint32_t *ext);
/* reshape's check that the q extents ext hold a's number of elements. */
void lw_reshape_check(lw *L, ir_ref e, const lw_val *a, uint32_t q, const uint32_t *ext);

/* skel_stencil.c */
bool lw_skel_stencil(lw *L, ir_ref e, lw_val *out);

/* skel_fold.c: FOLD and FOLD_SEG. */
bool lw_skel_fold(lw *L, ir_ref e, lw_val *out);
bool lw_skel_fold_seg(lw *L, ir_ref e, lw_val *out);
/* gskel_fold.c: their GPU skeletons (gskel_table.c). */
bool lw_gskel_fold(lw *L, ir_ref e, lw_val *out);
bool lw_gskel_fold_seg(lw *L, ir_ref e, lw_val *out);
/* skel_scan.c: all six scans (SCAN, SCAN_INCL, SCANR, SCANR_INCL, SCAN_SEG,
 * SCAN_INCL_SEG); it dispatches on the node's op. */
bool lw_skel_scan(lw *L, ir_ref e, lw_val *out);
/* gskel_scan.c: their GPU skeleton (gskel_table.c). */
bool lw_gskel_scan(lw *L, ir_ref e, lw_val *out);
/* skel_permute.c */
bool lw_skel_scatter(lw *L, ir_ref e, lw_val *out);
bool lw_skel_permute(lw *L, ir_ref e, lw_val *out);
/* gskel_permute.c: their GPU skeletons (gskel_table.c) */
bool lw_gskel_scatter(lw *L, ir_ref e, lw_val *out);
bool lw_gskel_permute(lw *L, ir_ref e, lw_val *out);
/* skel_filter.c */
bool lw_skel_filter(lw *L, ir_ref e, lw_val *out);
/* gskel_filter.c: its GPU skeleton (gskel_table.c). */
bool lw_gskel_filter(lw *L, ir_ref e, lw_val *out);
/* skel_rec.c */
bool lw_skel_rec(lw *L, ir_ref e, lw_val *out);
/* The host side of a recurrence, shared by the CPU skeleton and the GPU
 * one (gskel_rec.c), which differ only in their kernels. */
typedef struct lw_rec {
  lw *L;
  ir_ref e, body;
  uint32_t n;
  const int64_t *a; /* the schedule (lib/ir/rec.h) */
  uint32_t s, u;    /* wavefronts: solved and restricted dimensions (lw_rec_fronts_setup) */
  const char *name;
  bool tmp;         /* the body needs temporary memory */
  lw_val *lo, *ext; /* n i64 words each: logical lower bounds, extents */
  lw_val t, kulo, cnt, out;
  cg_rec_reads rd;  /* the body's reads of the array (codegen/cg.h) */
  lw_val tile[2]; /* CPU tiles: their rows and columns (words, skel_rec.c) */
} lw_rec;
/* Evaluates the bounds with the interpreter's checks in its order,
 * allocates the result (*out, also c->out) and checks that a . x cannot
 * overflow on the domain; false on a compile error. */
bool lw_rec_begin(lw *L, ir_ref e, lw_rec *c, lw_val *out);
/* What a point kernel of a recurrence knows while generating points (the
 * CPU's and the GPU's; the GPU's adds its shared table). */
typedef struct lw_rec_kern {
  const lw_rec *c;
  cg_val out;             /* the result, manifest */
  LLVMValueRef *lo, *ext; /* per dimension: the logical lower bound (a constant when the
                           * program writes a literal), the extent */
  LLVMValueRef tcur;      /* alloca: a . x of the point being computed */
  uint64_t proven;        /* dimensions in which every read is known to be inside (bit d) */
  /* CPU tiles: the point computed last, read by the reads in `carried`
   * (the innermost neighbour in the walking order; NULL: none) */
  cg_var *carry;
  const ir_ref *carried;
  uint32_t ncarried;
  /* CPU windows and the GPU's tiles (gskel_rec.c): `out` is the tile's
   * scratch (shared memory on the GPU), where the point of walking
   * coordinates (y0, y1) of the tile starting at wb is cell
   * (y0 - wb[0] + wdr) * wsw + y1 - wb[1] + wdc; on the CPU, of rank > 2,
   * each cell holds the inner dimensions whole, `winner` elements (their
   * 0-based coordinates in row-major order), else winner is NULL */
  bool window;
  LLVMValueRef wb[2], wsw, winner;
  int64_t wdr, wdc;
  /* CPU windows that fold the rows: the function, z, the rows' results
   * and whether the tile is its rows' first (i1) */
  const struct lw_rec_window *fold; /* NULL: none */
  const cg_val *fold_z, *fold_rows;
  LLVMValueRef fold_first;
  /* CPU tiles walked by anti-diagonals (skel_rec.c): the array's reads
   * load `ring`, where the read at walking offsets (o0, o1) of the point
   * in row drow of the tile is element dslot[-(o0 + o1)] + drow + o0 +
   * ddr */
  bool diag;
  cg_val ring;
  uint64_t dead; /* leaves (bit l) that only a window's fold uses: not in the ring */
  /* GPU tiles walked by lanes (gskel_rec.c): the value of each uniform
   * read, c->rd.offat[j], at the point being computed (NULL: none) */
  cg_var *lane_val;
  LLVMValueRef *dslot, drow;
  int64_t ddr;
  char fmt_out[640], fmt_early[640]; /* the read errors' formats */
} lw_rec_kern;
/* A leaf of the array inside the body: env of its CL_FUNC leaf. */
typedef struct lw_rec_leafenv {
  lw_rec_kern *k;
  uint32_t leaf;
} lw_rec_leafenv;
/* In point kernel f (plan kernel `kernel`) just begun: loads the result
 * and the bounds into *k and builds *self, the array the body sees: one
 * CL_FUNC leaf per leaf of the result, read by `read` (which gets an
 * lw_rec_leafenv whose k is k). */
void lw_rec_kern_setup(const lw_rec *c, cg_fn *f, uint32_t kernel, lw_rec_kern *k,
                       cg_read_fn read, cg_val *self);
/* The read d[idx] (node `at`): kd[d] = idx[d] - lo[d]; emits the
 * interpreter's checks, inside the domain and, unless the read is one of
 * c->rd.ordered, in an earlier wavefront than *k->tcur; returns whether the
 * read may load (kd is then the cell's 0-based position). */
LLVMValueRef lw_rec_read(cg_fn *f, const lw_rec_kern *k, LLVMValueRef *idx, ir_ref at,
                         LLVMValueRef *kd);
/* The point of 0-based coordinates x whose a . x is t: binds the array
 * (self) and the logical indices for the body and returns the point's
 * row-major position; *mark: the temporary memory mark to give back to
 * lw_rec_point_end, which unbinds them once the body is generated. */
LLVMValueRef lw_rec_point_begin(cg_fn *f, const lw_rec_kern *k, const cg_val *self,
                                LLVMValueRef *x, LLVMValueRef t, LLVMValueRef *mark);
void lw_rec_point_end(cg_fn *f, const lw_rec_kern *k, LLVMValueRef mark);
/* Tiles (rank >= 2, every read d[i_1 + c_1, ..] with each dimension's
 * offsets c_k of one sign: lw_rec_tileable): dimension k is walked in
 * direction lw_rec_sigma (+1 upwards when its offsets are <= 0, -1
 * downwards), and its reads reach lw_rec_reach points back along it. The
 * WALKING coordinate of 0-based x_k is x_k upwards, ext_k - 1 - x_k
 * downwards. */
bool lw_rec_tileable(const lw_rec *c);
int lw_rec_sigma(const lw_rec *c, uint32_t k);
int64_t lw_rec_reach(const lw_rec *c, uint32_t k);
/* The reader of the CPU kernels (and of the GPU's tiles): the result, or
 * with k->window the scratch. */
LLVMValueRef lw_rec_kern_read(cg_fn *f, const cg_leaf *l, LLVMValueRef *idx, ir_ref at);
/* The walking coordinate of 0-based coordinate x in dimension d, and the
 * 0-based coordinate of walking coordinate x (the map is its own
 * inverse). */
LLVMValueRef lw_rec_walking(cg_fn *f, const lw_rec_kern *k, uint32_t d, LLVMValueRef x);
/* With k->window: the scratch element of the point of 0-based
 * coordinates (x0, x1) (rank 2). */
LLVMValueRef lw_rec_local_at(cg_fn *f, const lw_rec_kern *k, LLVMValueRef x0, LLVMValueRef x1);
/* One launch per wavefront: lw_rec_fronts_setup picks s and u and makes
 * the words t, kulo and cnt; a kernel for wavefront t computes its points
 * i < cnt * (product of the extents other than s's and u's) by enumerating
 * the dimensions other than s in increasing order (u from kulo over cnt
 * values, the others over their extents) and solving a . x = t for x_s
 * (skipping points outside the box or not integral); lw_rec_fronts emits
 * the plan loop over t that sets those words and launches that kernel. */
void lw_rec_fronts_setup(lw_rec *c);
void lw_rec_fronts(lw_rec *c, uint32_t kernel);
/* Conditional schedules (Cartey et al. §4.7): the schedules c may run by,
 * c->a first (only c->a when the program asked for it with `by`), k * n
 * coefficients in *out; returns k (cg_rec_schedules). */
uint32_t lw_rec_candidates(const lw_rec *c, const int64_t **out);
/* The wavefronts of schedule b on c's domain, 1 + sum |b_d| (ext_d - 1)
 * (a plan expression). */
uint32_t lw_rec_xwaves(const lw_rec *c, const int64_t *b);
/* emit(c', ud) for each candidate schedule, c' a copy of c with that
 * schedule, under plan `if`s that run the first one with the fewest
 * wavefronts for the extents of the call. */
void lw_rec_by_schedule(lw_rec *c, void (*emit)(lw_rec *c, void *ud), void *ud);
/* A window of a tiled recurrence: what lw_skel_rec_at and
 * lw_skel_rec_fold keep instead of the table (skel_rec.c on the CPU,
 * rank 2 or more, the tiles holding the inner dimensions whole;
 * lw_gskel_rec_window on the GPU, rank 2). */
typedef struct lw_rec_window {
  lw_val v, h;    /* CPU: the tiles' last columns; both: the last dr rows of the width */
  int64_t dr, dc; /* the reaches in dimensions 0 and 1 (lw_rec_reach) */
  /* (rec ...)[p, q], or the reads of a let-bound recurrence
   * (lw_skel_rec_let): the points wanted, coordinate d of point p at
   * at[p * rank + d] (words; walking coordinates in dimensions 0 and 1,
   * 0-based in the others), and their values (words written by the tile
   * holding each) */
  uint32_t npoints;
  lw_val *at;
  lw_val *out;
  /* fold(fn, z, rec ...): the rows' folds, each tile folding its part of
   * its rows into them in the walking order (fn commutative when that is
   * not the rows' order) */
  bool fold;
  ir_ref fn;
  bool tmp; /* fn allocates temporary memory */
  lw_val z, rows;
  /* what fn folds of each cell: field k of it for fold(fn, z, (rec
   * ...).k), UINT32_MAX for the cell */
  uint32_t field;
} lw_rec_window;
/* The part of cell value v (the recurrence's element) that window w's fold
 * takes: a view sharing v's leaves (cg_val_field). */
void lw_rec_fold_part(cg_fn *f, const lw_rec_window *w, const cg_val *v, cg_val *out);
/* One element of a recurrence, (rec ...)[p, q, ..]: when the recurrence
 * is tiled (on the GPU, of rank 2 with tiles that can hold its cells) and
 * the indices are size expressions, only a window of it is kept
 * (skel_rec.c).
 * lw_rec_at_ok says whether e is such a read, emitting nothing, and fills
 * *c for lw_skel_rec_at. */
bool lw_rec_at_ok(lw *L, ir_ref e, lw_rec *c);
bool lw_skel_rec_at(lw *L, ir_ref e, lw_rec *c, lw_val *out);
/* The rows' folds of a rank-2 recurrence, fold(f, z, rec ...) or fold(f, z,
 * (rec ...).k), on the CPU and the GPU: the tiles fold their rows as they
 * go, with a window of the table, when f cannot fail (and is commutative
 * if the rows are walked backwards).
 * lw_rec_fold_ok fills *c for lw_skel_rec_fold. */
bool lw_rec_fold_ok(lw *L, ir_ref e, lw_rec *c);
/* let d = rec ... in body, where every use of d in body is a read d[p, q,
 * ..] whose indices are size expressions of the let's scope (no variable
 * the body binds but its lets of such expressions), at most LW_REC_POINTS
 * different ones: the recurrence keeps a window and those points instead
 * of its table (tiled, as above).
 * lw_rec_let_ok fills *c; lw_skel_rec_let runs the recurrence and gives d's
 * value, which has the table's extents but no data: lw_load hands kernels
 * readers that pick the point read (after cg_read's checks, at the read's
 * own position, as for a table). */
#define LW_REC_POINTS 8
bool lw_rec_let_ok(lw *L, ir_ref e, lw_rec *c);
bool lw_skel_rec_let(lw *L, ir_ref e, lw_rec *c, lw_val *d);
/* For lw_load: false if v is not such a value (lw_skel_rec_let); otherwise
 * *out is v in kernel f, its leaves readers. */
bool lw_load_points(lw *L, cg_fn *f, uint32_t kernel, const lw_val *v, cg_val *out);
bool lw_skel_rec_fold(lw *L, ir_ref e, lw_rec *c, lw_val *out);
/* gskel_rec.c: the GPU skeleton. */
bool lw_gskel_rec(lw *L, ir_ref e, lw_val *out);
/* The columns of the GPU's tiles for c (rank 2, tileable), 0 when it has
 * none (cells too large for shared memory, reads reaching too far). */
int64_t lw_gskel_rec_tile_cols(const lw_rec *c);
/* The GPU's tiles with a window instead of the table (h allocated, c->out
 * an array with the table's leaves). */
void lw_gskel_rec_window(lw_rec *c, const lw_rec_window *win);

#endif
