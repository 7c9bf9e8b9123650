/* lib/codegen/cg.h: LLVM code generation, shared by every target.
 *
 * One cg_module wraps one LLVM module (LLVM-C API) that receives every
 * kernel of one compiled function. Targets differ only in small ways that
 * the target field tells (math functions: libm on the CPU, libdevice or
 * fallbacks on NVPTX; runtime services: helpers in rt.h on the CPU).
 *
 * ---- Values ------------------------------------------------------------------
 * Code generation works on FLATTENED values (as the interpreter does): a
 * cg_val is the leaves of an IR value in ir_ty_leaves order. A tuple is its
 * leaves, a unit value has none, an array of tuples is several array leaves.
 *   CL_SCALAR  v is the scalar: i1 for bool, iN for integers (signedness is
 *              in sc), float/double.
 *   CL_ARRAY   a manifest array: v is the data pointer (ptr, row-major,
 *              elements as in memory: bool is i8 0/1), ext[0..rank) are
 *              i64 extents.
 *   CL_FUNC    an array known only by how to read it (a delayed array, a
 *              stencil window, the array a rec defines, later fused
 *              producers): ext as above (windows: none), and read() gives
 *              the element at an index. Fusion will hand kernels their
 *              producers this way, so every skeleton reads its inputs with
 *              cg_read and never touches v of an input directly unless
 *              cg_is_manifest says so.
 * Nothing is ever stored in a cg_val that must be freed: leaves and extent
 * arrays come from the module's arena (cg_new).
 *
 * ---- Functions and environment -------------------------------------------------
 * A cg_fn is the LLVM function being generated (a kernel). Its environment
 * is a stack of cg_vals, one per de Bruijn binder, innermost last: variable
 * j is env[nenv - 1 - j]. Kernels begin with the environment of the IR node
 * they implement (lib/lower loads it from the frame), and cg_expr extends
 * it under binders. Mutable state (accumulators, loop state) lives in
 * allocas made in the entry block (cg_alloca); LLVM's mem2reg/SROA turn them
 * into registers, so generators never build phi nodes by hand.
 *
 * ---- Errors ---------------------------------------------------------------------
 * Compile errors (unsupported construct, OOM, internal) are recorded once in
 * M->st / M->err (cg_error) and generation carries on with dummy values;
 * callers check M->st at the end. Runtime errors are code: cg_fail emits a
 * call to the runtime's ac_rt_fail with a site from the plan's site table.
 */
#ifndef ARRAYC_LIB_CODEGEN_CG_H
#define ARRAYC_LIB_CODEGEN_CG_H

#include "ir.h"
#include "runtime/plan.h"

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

typedef enum cg_target {
  CG_TARGET_CPU,   /* host: ORC JIT (lib/target/native.c) */
  CG_TARGET_NVPTX, /* GPU (issue 4) */
  CG_TARGET_SIMT   /* GPU kernels under the SIMT emulator (issue 4) */
} cg_target;

typedef enum cg_leaf_kind { CL_SCALAR, CL_ARRAY, CL_FUNC } cg_leaf_kind;

struct cg_fn;
struct cg_leaf;
/* Reads element `idx` (rank i64 values; for windows: the constant offsets
 * as i64) of a CL_FUNC leaf; `at` is the INDEX node (for error sites). */
typedef LLVMValueRef (*cg_read_fn)(struct cg_fn *f, const struct cg_leaf *a, LLVMValueRef *idx,
                                   ir_ref at);

typedef struct cg_leaf {
  uint8_t kind; /* cg_leaf_kind */
  uint8_t sc;   /* ac_scalar of the scalar or of the elements */
  uint32_t rank;
  LLVMValueRef v;    /* scalar, or data pointer (CL_ARRAY) */
  LLVMValueRef *ext; /* rank extents (i64) */
  cg_read_fn read;   /* CL_FUNC */
  void *env;         /* CL_FUNC: the reader's own data */
  /* CL_ARRAY loaded from the frame of a GPU kernel that never writes it
   * (cg_fn.frame_ro): NVPTX reads it through the read-only data cache
   * (ld.global.nc, from !invariant.load) */
  bool ro;
} cg_leaf;

typedef struct cg_val {
  ir_type type;
  uint32_t n;
  cg_leaf *l;
} cg_val;

typedef struct cg_module {
  ac_context *ctx;
  ac_module *m;   /* the IR being compiled (read only) */
  pl_plan *plan;  /* receives sites (and kernels, from lib/lower) */
  cg_target target;
  LLVMContextRef llctx;
  LLVMModuleRef mod;
  LLVMBuilderRef b;
  LLVMTypeRef t_void, t_i1, t_i8, t_i16, t_i32, t_i64, t_f32, t_f64, t_ptr;
  ac_status st;
  ac_error *err;
  /* arena for cg_new: freed by cg_module_dispose */
  void *arena;
  uint32_t nkernels; /* for unique kernel names */
  /* Ahead of time (lib/api/aot_emit.c): an extern function is called
   * through an undefined symbol of its own name, which the linker or the
   * dynamic loader resolves in the program that loads the code, instead of
   * at the address it is bound to in this process (the JIT's way). */
  bool externs_by_name;
  /* The ORC ThreadSafeContext that owns llctx (cg_module_init creates the
   * context through it so that the CPU JIT can take the module without a
   * copy: LLJIT only accepts modules whose context a ThreadSafeContext
   * owns). nat_compile hands it to the JIT; cg_module_dispose releases it
   * otherwise. Nobody else touches it. */
  struct LLVMOrcOpaqueThreadSafeContext *tsc;
  /* SIMT emulator profiling (runtime/simt_prof.h): when `profile` is set,
   * optimisation leaves vectorisation alone and the kernels are
   * instrumented after it (simt_prof_instrument), which fills the site
   * table (ac_alloc'd, taken by whoever makes the kernels; freed by
   * cg_module_dispose otherwise). */
  bool profile;
  struct rt_simt_site *prof_sites;
  uint32_t prof_nsites;
  /* GPU math through the generated fallbacks even where libdevice is
   * installed (cg_gpu_math), for modules emitted without libdevice: tests */
  bool gpu_fallback_math;
} cg_module;

typedef struct cg_fn {
  cg_module *M;
  LLVMValueRef fn;
  LLVMBasicBlockRef entry; /* allocas go here */
  /* kernel parameters (rt_kernel_fn on the CPU) */
  LLVMValueRef frame, chunk, lo, hi, tctx;
  cg_val *env;
  uint32_t nenv, capenv;
  /* Pre-computed subterms: cg_expr(f, pre_ref[i]) yields pre_val[i] without
   * generating anything (lib/lower uses it for plan-level subterms of a
   * scalar expression that it has already computed into the frame). */
  ir_ref *pre_ref;
  cg_val *pre_val;
  uint32_t npre;
  uint32_t depth; /* recursion guard */
  /* When set, float +, -, * emitted by cg_scalar_op carry LLVM's `reassoc`
   * flag (and nothing else). Skeletons set it while generating the combining
   * function of a fold/scan chunk loop: the language requires those
   * functions to be associative and chunking reorders them anyway, and the
   * flag is what lets LLVM vectorise the loop. */
  bool reassoc;
  /* When set (ascending nodes): a chain of integer min, max, +, *, &, |
   * or ^ is regrouped so that its operands containing one of these nodes
   * are combined last (exact for these operations). The CPU's recurrence
   * tiles name the reads of the point computed just before, whose value
   * is carried from one point to the next: the chain that waits for it
   * is then one operation long (skel_rec.c). */
  const ir_ref *late;
  uint32_t nlate;
  /* When set (ascending nodes): reads a[..] that the code around has
   * proven in range, generated without their checks (the CPU's
   * recurrence tiles, skel_rec.c). */
  const ir_ref *unchecked;
  uint32_t nunchecked;
  /* When set (an i1 alloca, with defer_zero an alloca holding 8 zero
   * bytes): a read of a manifest array whose index check fails sets the
   * flag instead of failing, and reads zero (the anti-diagonal loops of
   * recurrences, seq_loop.c, which must not branch to a call to be
   * vectorised; they compute the points again with the checks when the
   * flag is set, so that the failure is reported as usual). */
  LLVMValueRef defer, defer_zero;
  /* GPU kernels (cg_gpu.c, simt.c): the thread's temporary memory (an
   * alloca holding its bump offset, and its base address, made on first
   * use; NULL while the kernel uses none) and the static shared memory
   * bytes allocated so far. */
  LLVMValueRef gtmp_off, gtmp_base;
  uint64_t smem;
  /* GPU kernels: the thread's temporary memory budget in bytes (0 when the
   * launch has none), made with gtmp_base; the block's shared memory base
   * on the SIMT emulator (entry block, on first use). */
  LLVMValueRef gtmp_lim, gsmem_base;
  /* GPU kernels: the largest temporary memory use (bytes per thread) the
   * thread knows the control block's tmp_need holds (an alloca). */
  LLVMValueRef gtmp_known;
  /* GPU kernels: some element code allocates temporary memory (marks and
   * releases alone need none: the kernel then gets none and its grid is
   * not capped, plan.h's `tmp`) */
  bool gtmp_alloc;
  /* GPU kernels: arrays cg_load_frame loads while this is set are not
   * written by the kernel (the skeleton knows: the element-wise kernel
   * writes only its fresh outputs), so their leaves are marked ro. */
  bool frame_ro;
  /* GPU kernels (cg_gpu.c): the launch's parameter block (runtime/gpu.h,
   * RT_GPU_PARAMS), its mask word (entry block, on first use), and the
   * frame words read through it so far, whose slots cg_gpu_params_resolve
   * fills in once the kernel's uses are known. */
  LLVMValueRef gparams, gmask;
  struct cg_gword *gwords;
  uint32_t ngwords, capgwords;
  /* GPU element-wise kernels (lib/lower/gpu.c): the 32-bit index variant.
   * While narrow_collect is set, cg_load_frame records each array it loads
   * from the frame (its leaf and its extents' words); the plan launches the
   * variant only when every recorded array has fewer than 2^31 elements,
   * and while idx32 is set, cg_read computes the offset of an element of a
   * recorded array (a leaf with the same data pointer) in 32 bits. */
  bool narrow_collect, idx32;
  struct cg_narrow *narrow;
  uint32_t nnarrow, capnarrow;
  /* GPU element code that every thread of a warp or of a block runs with
   * the same values (lib/lower/gpu.c's warp- and block-per-element
   * kernels; cg_coop): its folds are computed by the whole group
   * (seq_coop.c), and cg_failed answers the same for the whole group, so
   * that control flow stays uniform. CG_COOP_NONE elsewhere, and in the
   * parts of a group fold that each thread runs on its own elements. */
  uint8_t coop;
} cg_fn;

enum { CG_COOP_NONE, CG_COOP_WARP, CG_COOP_BLOCK };

/* An array a kernel loaded from its frame (cg_fn.narrow). */
typedef struct cg_narrow {
  const cg_leaf *l;
  uint32_t *ext; /* l->rank frame words: its extents */
} cg_narrow;

/* ---- module (cg.c) ---- */
ac_status cg_module_init(cg_module *M, ac_module *m, pl_plan *plan, cg_target target,
                         ac_error **err);
/* Frees the arena, the builder, (unless taken) the LLVM module and context,
 * and M->err unless the caller took it (set it to NULL). */
void cg_module_dispose(cg_module *M);
/* Records the first compile error (status st at node `at`, 0 = unknown). */
void cg_error(cg_module *M, ac_status st, ir_ref at, const char *fmt, ...) IR_PRINTF(4, 5);
void *cg_new(cg_module *M, size_t bytes); /* zeroed arena memory; never NULL (aborts generation on OOM via cg_error and returns a static dummy... see cg.c) */
/* Room for one more element in *vec (n in use, *cap allocated, each of
 * `size` bytes), from the arena: `first` elements at first, then twice as
 * many each time (the old array stays in the arena). */
void cg_grow(cg_module *M, void **vec, uint32_t n, uint32_t *cap, size_t size, uint32_t first);
LLVMTypeRef cg_scalar_type(cg_module *M, ac_scalar sc); /* register type: i1 for bool */
LLVMTypeRef cg_mem_type(cg_module *M, ac_scalar sc);    /* memory type: i8 for bool */
/* Site in the plan's table for a runtime error at node `at` (its location). */
uint32_t cg_site(cg_module *M, ir_ref at, const char *fmt);
/* Host code (expr.c): the C type of a scalar of an extern's signature, with
 * in *ext the attribute C gives small integers ("zeroext"/"signext") or
 * NULL; and the callee for extern function or kernel fi of type fty: its
 * resolved address (the JIT), or with externs_by_name an undefined symbol
 * of its (host) name. NULL after an error recorded at `at`. */
LLVMTypeRef cg_c_type(cg_module *M, ac_scalar sc, const char **ext);
LLVMValueRef cg_host_fn(cg_module *M, uint32_t fi, LLVMTypeRef fty, ir_ref at);

/* ---- functions (cg.c) ---- */
/* Starts a kernel: `void name(ptr frame, i64 chunk, i64 lo, i64 hi, ptr tctx)`,
 * external linkage, builder positioned in its body. */
cg_fn *cg_kernel_begin(cg_module *M, const char *name);
/* Emits `ret void` and verifies the function (an invalid function is an
 * internal compile error). */
void cg_kernel_end(cg_fn *f);
LLVMValueRef cg_alloca(cg_fn *f, LLVMTypeRef t);
/* Builds a cg_val of type t whose leaves are read from frame words
 * (rt.h layout; words[i] is the slot of the i-th word of the layout). */
void cg_load_frame(cg_fn *f, ir_type t, const uint32_t *words, cg_val *out);
/* Stores the scalar leaves of v into frame words (array leaves: data and
 * extents are stored too). */
void cg_store_frame(cg_fn *f, const uint32_t *words, const cg_val *v);
/* Address of frame word `slot` (an i64; for atomics on plan words). */
LLVMValueRef cg_frame_word(cg_fn *f, uint32_t slot);
/* Number of frame words of a value of type t. */
uint32_t cg_frame_words(ac_context *ctx, ir_type t);

void cg_env_push(cg_fn *f, const cg_val *v);
void cg_env_pop(cg_fn *f, uint32_t n);

/* ---- values (cg.c) ---- */
void cg_val_alloc(cg_module *M, ir_type t, cg_val *out); /* leaves sized from t, kinds set */
/* Splits a tuple value into its fields (views into v's leaves). */
void cg_val_field(cg_module *M, const cg_val *v, uint32_t field, cg_val *out);
/* Stack slots for a value (accumulators, loop state): one alloca per scalar
 * leaf; a manifest array leaf gets allocas for its data pointer and its
 * extents (element-level loops may carry arrays in temporary memory).
 * CL_FUNC leaves cannot be stored (an internal error). */
typedef struct cg_var {
  uint32_t n;
  LLVMValueRef *slot;
  cg_val shape; /* type and leaf kinds */
} cg_var;
void cg_var_new(cg_fn *f, ir_type t, cg_var *out);
void cg_var_store(cg_fn *f, cg_var *var, const cg_val *v);
void cg_var_load(cg_fn *f, const cg_var *var, cg_val *out);
/* Select between two values of the same type (scalar leaves only). */
void cg_val_select(cg_fn *f, LLVMValueRef cond, const cg_val *a, const cg_val *b, cg_val *out);

/* ---- control flow (cg.c) ---- */
typedef struct cg_loop {
  LLVMBasicBlockRef head, body, exit;
  LLVMValueRef ivslot, iv;
} cg_loop;
/* for (iv = lo; iv < hi; iv++) { ... }: returns iv (i64) inside the body. */
LLVMValueRef cg_loop_begin(cg_fn *f, cg_loop *l, LLVMValueRef lo, LLVMValueRef hi);
void cg_loop_end(cg_fn *f, cg_loop *l);
LLVMBasicBlockRef cg_block(cg_fn *f, const char *name);

/* ---- memory and runtime services (cg.c) ---- */
LLVMValueRef cg_i64(cg_module *M, int64_t k);
/* Signed minimum and maximum of two integers of one type (a select). */
LLVMValueRef cg_smin(cg_module *M, LLVMValueRef a, LLVMValueRef b);
LLVMValueRef cg_smax(cg_module *M, LLVMValueRef a, LLVMValueRef b);
/* Row-major linear offset of idx in extents ext (rank values). */
LLVMValueRef cg_linear(cg_fn *f, uint32_t rank, LLVMValueRef *ext, LLVMValueRef *idx);
/* v with nuw and nsw when it is an instruction (an add, sub or mul; the
 * builder folds constants); returns v. */
LLVMValueRef cg_no_wrap(LLVMValueRef v);
/* A non-negative i32 index as an i64 (zext nneg). */
LLVMValueRef cg_widen_index(cg_module *M, LLVMValueRef v);
/* Element `lin` of a manifest leaf: load / store with the memory type. */
LLVMValueRef cg_load_elem(cg_fn *f, const cg_leaf *a, LLVMValueRef lin);
/* The same as a volatile load: for memory another GPU block wrote (no
 * stale L1 line, no load hoisted above a wait). */
LLVMValueRef cg_load_elem_volatile(cg_fn *f, const cg_leaf *a, LLVMValueRef lin);
void cg_store_elem(cg_fn *f, const cg_leaf *a, LLVMValueRef lin, LLVMValueRef v);
/* Reads element idx of any array leaf (manifest or CL_FUNC). With `check`,
 * an index out of range fails at `at` with the interpreter's message
 * ("index %lld out of bounds for dimension %u of extent %lld" style) and
 * reads element 0 (or a zero when the array is empty) instead.
 * (cg.c reads nothing and yields zero.) A CL_FUNC leaf is checked the same
 * way when it has extents; a reader that must fail with a message of its
 * own (the array a rec defines) leaves ext NULL and checks by itself. */
LLVMValueRef cg_read(cg_fn *f, const cg_leaf *a, LLVMValueRef *idx, bool check, ir_ref at);
bool cg_is_manifest(const cg_leaf *a);
/* Calls ac_rt_fail(tctx, site, a, b) (a, b: i64 or NULL for 0). */
void cg_fail(cg_fn *f, uint32_t site, LLVMValueRef a, LLVMValueRef b);
/* Emits: if (!cond) fail(site, a, b). Code after it runs in either case. */
void cg_check(cg_fn *f, LLVMValueRef cond, uint32_t site, LLVMValueRef a, LLVMValueRef b);
/* cg_fail and cg_check with n values (integers; n <= RT_FAIL_VALS), the
 * site's k-th %lld printing vals[k]: ac_rt_fail_n on the CPU, the control
 * block's extra values on a GPU. Up to two values, the same code as cg_fail. */
void cg_fail_n(cg_fn *f, uint32_t site, uint32_t n, const LLVMValueRef *vals);
void cg_check_n(cg_fn *f, LLVMValueRef cond, uint32_t site, uint32_t n, const LLVMValueRef *vals);
/* CPU targets: gives up the processor once (ac_rt_yield), for code that
 * polls for another chunk of the same launch. */
void cg_cpu_yield(cg_fn *f);
/* Deferred index checks (cg_fn.defer) over the code generated between
 * cg_defer_begin and cg_defer_end, which returns whether one of them
 * failed (i1) and restores what was before. */
typedef struct cg_defer {
  LLVMValueRef flag, was, was_zero;
} cg_defer;
void cg_defer_begin(cg_fn *f, cg_defer *d);
LLVMValueRef cg_defer_end(cg_fn *f, const cg_defer *d);
/* CPU kernels whose loops are compute-bound SIMD (the anti-diagonals of
 * recurrences): vectorise with the widest vectors the CPU has (LLVM keeps
 * to 256 bits on CPUs with AVX-512 otherwise, as its tuning for those
 * prefers). Nothing on GPU targets. */
void cg_fn_wide_vectors(cg_fn *f);
/* llvm.assume(cond): a fact the generated code guarantees, for the
 * optimiser to use (never checked; a false one is undefined behaviour). */
void cg_assume(cg_fn *f, LLVMValueRef cond);
/* Temporary memory from the worker's arena (rt.h); bytes is i64. */
LLVMValueRef cg_tmp_alloc(cg_fn *f, LLVMValueRef bytes, ir_ref at);
LLVMValueRef cg_tmp_mark(cg_fn *f);
/* i1: the current call has already failed (ac_rt_failed), so long loops can
 * stop early; constant false where the target has no such service. */
LLVMValueRef cg_failed(cg_fn *f);
/* pred (i1) or-ed over the group f->coop names (itself outside groups):
 * a vote across the warp, or through shared memory across the block (all
 * its threads must reach it). seq_coop.c. */
LLVMValueRef cg_coop_any(cg_fn *f, LLVMValueRef pred);
/* True if fn (a lambda or a function reference) is `|a, b| a OP b` or
 * `|a, b| b OP a` with OP one of + * min max & | ^ on scalars of type
 * elem: a fold may then combine elements in any order. seq_coop.c. */
bool cg_commutative(const ac_module *m, ir_type elem, ir_ref fn);

/* ---- a recurrence's reads of its own array (rec_reads.c) ---- */

/* A read of an array from outside the recurrence whose indices are all
 * uniform: index j is i_dim[j] + off[j]. */
typedef struct cg_rec_input {
  ir_ref at;
  uint32_t var;  /* the array: variable `var` of the recurrence's scope */
  uint32_t rank; /* of the array, at most 8 */
  uint32_t dim[8];
  int64_t off[8];
} cg_rec_input;

/* What cg_rec_reads_find finds in the body of a recurrence of rank n and
 * schedule a (memory from M's arena). A read d[e_1, .., e_n] is ORDERED
 * when every e_k with a_k != 0 is i_k, i_k + c or i_k - c (c an i64
 * literal, seen through lets, the arithmetic in i64) and the sum of
 * a_k * (its offset) is negative: then, whatever the data, an element read
 * inside the domain lies on an earlier wavefront, so it needs no "before it
 * is computed" check; outside the domain the domain check fails first. Only
 * reads of exactly these forms qualify (a cast, or any other form, keeps its
 * check: a narrowing cast may wrap an index onto a later wavefront). */
typedef struct cg_rec_reads {
  ir_ref *ordered; /* the ordered reads (INDEX nodes), ascending */
  uint32_t nordered;
  /* every use of the array in the body is an ordered read of the form
   * i_k + c_k in every dimension; offmin/offmax: the c_k's range per
   * dimension */
  bool uniform;
  int64_t *offmin, *offmax;
  int64_t *offs; /* the offsets of each such read, n per read (noffs reads) */
  ir_ref *offat; /* and the reads themselves (INDEX nodes), in the same order */
  uint32_t noffs;
  /* the uniform reads d[i_1, .., i_n + 1] and d[i_1, .., i_n - 1] (the
   * neighbours in the innermost dimension), ascending */
  ir_ref *next, *prev;
  uint32_t nnext, nprev;
  /* the reads a[e_1, .., e_r] of arrays from outside the recurrence whose
   * every index is i_k + c, in the order the walk met them */
  cg_rec_input *inputs;
  uint32_t ninputs;
} cg_rec_reads;

void cg_rec_reads_find(cg_module *M, const ac_module *m, ir_ref body, uint32_t n, const int64_t *a,
                       cg_rec_reads *out);
/* The schedules to choose from by the extents (Cartey's conditional
 * schedules, rec_reads.c): *out gets k * n coefficients, a's first (a
 * alone unless the reads are uniform); returns k (at most 4). */
uint32_t cg_rec_schedules(cg_module *M, const cg_rec_reads *r, uint32_t n, const int64_t *a,
                          const int64_t **out);
/* The reads of r->inputs that stay in range while every index i_d (lo[d]
 * plus a 0-based coordinate) covers [lo[d] + xmin[d], lo[d] + xmax[d]]
 * (xmin <= xmax): the condition that they do is and-ed into *ok, and they
 * are returned ascending (*count of them, memory from the arena), for code
 * that generates them without checks where *ok holds (cg_fn.unchecked). */
ir_ref *cg_rec_inputs_proven(cg_fn *f, const cg_rec_reads *r, const LLVMValueRef *lo,
                             const LLVMValueRef *xmin, const LLVMValueRef *xmax,
                             LLVMValueRef *ok, uint32_t *count);
/* The anti-diagonal walks of rank-2 recurrences (the CPU's tiles,
 * skel_rec.c; recurrences in element code, seq_loop.c). The 0-based
 * offsets (n of them) of the uniform read `at` (one of r->offat; false,
 * zeros, for another node). */
bool cg_rec_read_offsets(const cg_rec_reads *r, ir_ref at, uint32_t n, int64_t *off);
/* How many anti-diagonals back the reads of a uniform rank-2 recurrence
 * reach when dimension d is walked in direction sigma[d]: the largest
 * -(sigma_0 o_0 + sigma_1 o_1), at least 1. */
int64_t cg_rec_diag_depth(const cg_rec_reads *r, const int *sigma);
/* Whether a uniform recurrence's body is plain scalar code, whose points an
 * anti-diagonal loop computes in SIMD: scalar operations, `if`, `let`,
 * tuples, its own (ordered) reads and reads of arrays from outside: those
 * of r->inputs or, with any_input, any read of an array variable (whose
 * index checks the loop defers, cg_fn.defer). No calls, loops or array
 * operations. */
bool cg_rec_body_plain(const ac_module *m, const cg_rec_reads *r, ir_ref body, bool any_input);
/* The leaves of a cell (of type elem) that the reads of a uniform
 * recurrence's body use: bit l for leaf l; a read under a projection,
 * `d[..].k`, uses field k's leaves, any other read all of them (and all
 * bits are set for more than 64 leaves). The fused cells of docs/passes.md
 * §5.1 carry leaves that only the fold uses. */
uint64_t cg_rec_live_leaves(const ac_module *m, const cg_rec_reads *r, ir_ref body, ir_type elem);
/* Whether leaf l is in such a set of leaves (bit l; leaves past 64 never). */
static inline bool cg_leaf_in(uint64_t leaves, uint32_t l) {
  return l < 64 && ((leaves >> l) & 1);
}
/* True if evaluating e can fail at run time: reads, array operations,
 * calls (a syntactic test, expr.c). */
bool cg_may_fail(const ac_module *m, ir_ref e);
/* The same for applying fn, a LAM or FNREF (an extern function may fail). */
bool cg_fn_may_fail(const ac_module *m, ir_ref fn);
/* Is the read `at` (an INDEX node of the body) ordered? */
bool cg_rec_read_ordered(const cg_rec_reads *r, ir_ref at);

/* qsort/bsearch order of ir_refs (ascending): the node lists cg_fn.late
 * and cg_fn.unchecked, and lowering's lists of reads. expr.c. */
int cg_ref_cmp(const void *a, const void *b);
/* An index or extent of integer kind sc as i64, as interp_sc_to_i64:
 * signed kinds sign-extend, unsigned ones zero-extend, and a u64 above
 * INT64_MAX saturates (and is then out of bounds). */
LLVMValueRef cg_index_i64(cg_fn *f, LLVMValueRef v, ac_scalar sc);
void cg_tmp_release(cg_fn *f, LLVMValueRef mark);
/* A fresh manifest array leaf of element sc and extents ext (copied), in
 * temporary memory; size overflow / too large fail at `at`. */
void cg_new_array(cg_fn *f, ac_scalar sc, uint32_t rank, LLVMValueRef *ext, ir_ref at,
                  cg_leaf *out);

/* ---- expressions (expr.c, scalar.c) ----
 * Generates the value of IR node e in f's environment. Handles every form
 * that can appear in element code: scalars and all scalar operations
 * (scalar.c: docs/language.md §6 semantics exactly, including x/0 == 0,
 * x%0 == x, MIN/-1 == MIN, shifts modulo the width, saturating float->int
 * casts with NaN -> 0, fmin/fmax, libm calls), LET, LETTUP, TUPLE, PROJ,
 * IF (only the taken branch runs), && ||, CALL (inlined; extern functions
 * called directly at the address resolved into their ir_func by
 * ac_function_create before compilation), LOOP, INDEX with bounds checks, LEN,
 * SHAPE, ARRLIT, and every array operation, which expr.c hands to
 * cg_array_op (sequential, in temporary memory). */
void cg_expr(cg_fn *f, ir_ref e, cg_val *out);
/* True if generating e (in element context) may allocate temporary memory,
 * i.e. e contains an array operation or builds an array. Skeletons bracket
 * each element with cg_tmp_mark/cg_tmp_release only when this holds. */
bool cg_needs_tmp(const ac_module *m, ir_ref e);
/* Whether element code e runs a loop: an array operation (a sequential
 * loop in element code) or a `loop`, directly or in a function it calls. */
bool cg_has_loops(const ac_module *m, ir_ref e);
/* Applies a LAM or FNREF node to argument values (one per parameter). */
void cg_apply(cg_fn *f, ir_ref lam, uint32_t nargs, const cg_val *args, cg_val *out);
/* Scalar operation `op` (an ops.def unary/binary/math op) on scalar
 * operands of type sc (result type per the op's typing class). */
LLVMValueRef cg_scalar_op(cg_fn *f, ir_op op, ac_scalar sc, LLVMValueRef *ops);
/* Conversion between scalar types with the language's semantics. */
LLVMValueRef cg_cast(cg_fn *f, LLVMValueRef v, ac_scalar from, ac_scalar to);
/* Scalar constant of type sc from an IR literal value. */
LLVMValueRef cg_const(cg_module *M, ac_scalar sc, ir_litval v);

/* ---- delayed arrays: fusion (seq_delay.c) ----
 * delay(p) in an operand position (docs/language.md §7.15; written by the
 * fuse pass, lib/passes/fuse.c) hands the consumer the producer p itself
 * rather than its array: CL_FUNC leaves whose reader computes p's element
 * at the index asked for, from p's own operands (which may be delayed in
 * turn), inside the consumer's code. p's checks that do not depend on its
 * elements (shapes, bounds, extents, sizes) are made by whoever prepares
 * the cg_delayed (lib/lower/delay.c at plan level, cg_seq_operand in
 * element code) before the consumer runs; the element checks of gather
 * and backpermute (an index out of range) are made by the reader, at p's
 * site. Producers: generate iota fill map gather backpermute slice reshape
 * transpose reverse replicate (cg_delay_producer). */
typedef struct cg_delayed {
  ir_ref at;     /* the producer node: its operation, function and error sites */
  uint32_t nenv; /* depth of the environment the producer's function sees */
  uint32_t nops;
  cg_val *ops;   /* array operands in argument order (gather: idx, a); fill: the value */
  uint32_t rank;
  LLVMValueRef *ext;            /* the result's extents (safe: 0 after a failed check) */
  LLVMValueRef *sext;           /* extents of the source ops[last] (index-space changes) */
  LLVMValueRef *start, *stride; /* slice: one per dimension of the source */
  /* The element last computed and where: the reads of the other leaves at
   * the same index in the same block reuse it. */
  LLVMBasicBlockRef cblock;
  LLVMValueRef *cidx;
  cg_val cval;
} cg_delayed;
/* True if op can be a delayed producer. */
bool cg_delay_producer(ir_op op);
/* The value of d (the producer's type): one CL_FUNC leaf per leaf, with
 * d->ext as extents. d must stay alive (arena) while code is generated. */
void cg_delayed_value(cg_fn *f, cg_delayed *d, cg_val *out);
/* The producer a leaf of cg_delayed_value reads, or NULL for any other
 * leaf. Its operands may be replaced before the first read (shared-memory
 * tiles hand a slice its source through a tile, lib/lower/gskel_tile.c). */
cg_delayed *cg_delayed_of(const cg_leaf *a);

/* ---- nested array operations, sequential (seq_*.c) ----
 * Value of array operation e (GENERATE .. WHILE, REC, ARRLIT, ...) computed
 * by loops in the current element's code, in temporary memory. */
void cg_array_op(cg_fn *f, ir_ref e, cg_val *out);

#endif
