/* lib/codegen/cg.c: the code generation core shared by every skeleton.
 *
 * Everything in cg.h under "module", "functions", "values", "control flow"
 * and "memory and runtime services": the LLVM module and its cached types,
 * the per-module arena, compile errors, kernels with the rt.h signature,
 * frame words, flattened values and their stack slots, loops, element
 * reads with bounds checks, runtime failures and temporary memory.
 *
 * The design follows the usual split of JIT code generators written in C
 * (MIR, the LLVM-C Kaleidoscope): generators are straight-line calls on a
 * builder; all mutable state goes through allocas in the entry block, so
 * nobody builds phi nodes by hand and mem2reg/SROA recover SSA form (the
 * one phi in this file merges a checked read with its harmless default).
 * Everything is allocated from one arena per module and freed in one call
 * (QBE's per-function arena).
 *
 * Runtime errors are code, not control flow: a failed check calls
 * ac_rt_fail (declared `cold`, so LLVM lays the call out of line and keeps
 * the hot path straight) and execution goes on with a harmless value,
 * because the first failure of a call wins (rt.h) and the runtime abandons
 * the call after the launch. Reads that fail read nothing; arrays whose
 * size check or allocation fails are made empty, so no later loop touches
 * memory that was not allocated.
 *
 * Out of memory in the arena: cg_new never returns NULL. It records
 * AC_ERR_NOMEM and then serves requests from a reserve allocated with the
 * module (CG_RESERVE bytes, never reused), so that generation can run to
 * its end with zeroed memory and the caller sees M->st. Only a compile that
 * asks for more than the reserve AFTER running out of memory would get
 * aliased memory; requests that large do not occur (the biggest are
 * per-leaf and per-binder arrays).
 */
#include "codegen/cg.h"
#include "codegen/cg_gpu.h" /* the GPU forms of the runtime services */
#include "interp/rtarray.h" /* RT_ARRAY_MAX_BYTES: the interpreter's size limit */

#include <llvm-c/Analysis.h>
#include <llvm-c/Orc.h>

#include <stdalign.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* ---- the arena ---- */

#define CG_CHUNK ((size_t)64 * 1024)
#define CG_RESERVE ((size_t)1024 * 1024)
#define CG_ALIGN (alignof(max_align_t))
#define CG_ROUND(n) (((n) + CG_ALIGN - 1) & ~(CG_ALIGN - 1))

typedef struct cg_chunk {
  struct cg_chunk *next;
  size_t used, cap; /* bytes of the data area after the header */
} cg_chunk;

typedef struct cg_arena {
  cg_chunk *head;
  char *reserve; /* for after an allocation failure, see the file comment */
  size_t reserve_used;
} cg_arena;

#define CG_HDR CG_ROUND(sizeof(cg_chunk))

static void *cg_chunk_data(cg_chunk *c) {
  return (char *)c + CG_HDR;
}

void *cg_new(cg_module *M, size_t bytes) {
  cg_arena *A = M->arena;
  size_t n = CG_ROUND(bytes ? bytes : 1);
  if (n < bytes) /* wrapped: certainly too large */
    n = SIZE_MAX;
  if (A->head && A->head->cap - A->head->used >= n) {
    void *p = (char *)cg_chunk_data(A->head) + A->head->used;
    A->head->used += n;
    return memset(p, 0, n);
  }
  cg_chunk *c = NULL;
  /* Big requests get a chunk of their own behind the head, so the head's
   * free space is not thrown away. */
  size_t cap = n > CG_CHUNK / 4 ? n : CG_CHUNK;
  if (cap <= SIZE_MAX - CG_HDR)
    c = ac_alloc(M->ctx, CG_HDR + cap);
  if (c) {
    c->cap = cap;
    c->used = n;
    if (n > CG_CHUNK / 4 && A->head) {
      c->next = A->head->next;
      A->head->next = c;
    } else {
      c->next = A->head;
      A->head = c;
    }
    return memset(cg_chunk_data(c), 0, n);
  }
  cg_error(M, AC_ERR_NOMEM, 0, "out of memory");
  if (n <= CG_RESERVE - A->reserve_used) {
    void *p = A->reserve + A->reserve_used;
    A->reserve_used += n;
    return memset(p, 0, n);
  }
  return memset(A->reserve, 0, CG_RESERVE); /* the documented last resort */
}

static void cg_arena_free(ac_context *ctx, cg_arena *A) {
  for (cg_chunk *c = A->head, *next; c; c = next) {
    next = c->next;
    ac_free(ctx, c);
  }
  ac_free(ctx, A->reserve);
  ac_free(ctx, A);
}

/* ---- module ---- */

ac_status cg_module_init(cg_module *M, ac_module *m, pl_plan *plan, cg_target target,
                         ac_error **err) {
  memset(M, 0, sizeof *M);
  M->ctx = m->ctx;
  M->m = m;
  M->plan = plan;
  M->target = target;
  cg_arena *A = ac_alloc(M->ctx, sizeof *A);
  char *reserve = ac_alloc(M->ctx, CG_RESERVE);
  if (!A || !reserve) {
    ac_free(M->ctx, A);
    ac_free(M->ctx, reserve);
    return ir_report(err, ir_error(M->ctx, AC_ERR_NOMEM, NULL, (ir_loc){0, 0}, "out of memory"),
                     AC_ERR_NOMEM);
  }
  memset(A, 0, sizeof *A);
  A->reserve = reserve;
  M->arena = A;
  /* Every target gets its context from an ORC ThreadSafeContext: the CPU
   * JIT needs one, and for the others it is an ordinary context. */
  M->tsc = LLVMOrcCreateNewThreadSafeContext();
  M->llctx = LLVMOrcThreadSafeContextGetContext(M->tsc);
  const char *name = plan && plan->name ? plan->name : "arrayc";
  M->mod = LLVMModuleCreateWithNameInContext(name, M->llctx);
  M->b = LLVMCreateBuilderInContext(M->llctx);
  M->t_void = LLVMVoidTypeInContext(M->llctx);
  M->t_i1 = LLVMInt1TypeInContext(M->llctx);
  M->t_i8 = LLVMInt8TypeInContext(M->llctx);
  M->t_i16 = LLVMInt16TypeInContext(M->llctx);
  M->t_i32 = LLVMInt32TypeInContext(M->llctx);
  M->t_i64 = LLVMInt64TypeInContext(M->llctx);
  M->t_f32 = LLVMFloatTypeInContext(M->llctx);
  M->t_f64 = LLVMDoubleTypeInContext(M->llctx);
  M->t_ptr = LLVMPointerTypeInContext(M->llctx, 0);
  M->st = AC_OK;
  return AC_OK;
}

void cg_module_dispose(cg_module *M) {
  if (M->b)
    LLVMDisposeBuilder(M->b);
  if (M->mod)
    LLVMDisposeModule(M->mod);
  if (M->tsc)
    LLVMOrcDisposeThreadSafeContext(M->tsc); /* frees llctx with the last reference */
  if (M->err)
    ac_error_destroy(M->err);
  if (M->arena)
    cg_arena_free(M->ctx, M->arena);
  ac_free(M->ctx, M->prof_sites);
  M->prof_sites = NULL;
  M->prof_nsites = 0;
  M->b = NULL;
  M->mod = NULL;
  M->tsc = NULL;
  M->llctx = NULL;
  M->err = NULL;
  M->arena = NULL;
}

static ir_loc cg_loc(const cg_module *M, ir_ref at) {
  if (!M->m || at == IR_NONE || at >= M->m->nnodes)
    return (ir_loc){0, 0};
  return ir_node_get(M->m, at)->loc;
}

void cg_error(cg_module *M, ac_status st, ir_ref at, const char *fmt, ...) {
  if (M->st != AC_OK)
    return;
  va_list ap;
  va_start(ap, fmt);
  M->err = ir_verror(M->ctx, st, at ? M->m : NULL, cg_loc(M, at), fmt, ap);
  va_end(ap);
  M->st = M->err ? st : AC_ERR_NOMEM;
}

LLVMTypeRef cg_scalar_type(cg_module *M, ac_scalar sc) {
  switch (sc) {
  case AC_BOOL:
    return M->t_i1;
  case AC_I8:
  case AC_U8:
    return M->t_i8;
  case AC_I16:
  case AC_U16:
    return M->t_i16;
  case AC_I32:
  case AC_U32:
    return M->t_i32;
  case AC_I64:
  case AC_U64:
    return M->t_i64;
  case AC_F32:
    return M->t_f32;
  case AC_F64:
    return M->t_f64;
  }
  cg_error(M, AC_ERR_INTERNAL, 0, "code generation: unknown scalar type %d", (int)sc);
  return M->t_i64;
}

LLVMTypeRef cg_mem_type(cg_module *M, ac_scalar sc) {
  return sc == AC_BOOL ? M->t_i8 : cg_scalar_type(M, sc);
}

uint32_t cg_site(cg_module *M, ir_ref at, const char *fmt) {
  pl_plan *p = M->plan;
  if (!p) {
    cg_error(M, AC_ERR_INTERNAL, at, "code generation: runtime check without a plan");
    return 0;
  }
  ir_loc loc = cg_loc(M, at);
  /* Equal sites are shared: a kernel often checks the same node twice. */
  for (uint32_t i = 0; i < p->nsites; i++)
    if (p->sites[i].line == loc.line && p->sites[i].col == loc.col && p->sites[i].fmt &&
        strcmp(p->sites[i].fmt, fmt) == 0)
      return i;
  uint32_t s = pl_site_add(p, loc.line, loc.col, fmt);
  if (p->oom)
    cg_error(M, AC_ERR_NOMEM, at, "out of memory");
  return s;
}

/* ---- leaves of a type ----
 * ir_ty_leaves, plus windows: a stencil window of element type E is one
 * CL_FUNC leaf per scalar leaf of E (rank = the window's rank, no extents),
 * read through its reader. Functions have no leaves. */

typedef void (*cg_leaf_cb)(void *ud, cg_leaf_kind kind, ac_scalar sc, uint32_t rank);

static void cg_ty_walk(ac_context *ctx, ir_type t, bool window, uint32_t wrank, cg_leaf_cb cb,
                       void *ud) {
  ir_typeinfo ti = ir_ty_info(ctx, t);
  switch (ti.kind) {
  case TK_SCALAR:
    if (window)
      cb(ud, CL_FUNC, ti.sc, wrank);
    else
      cb(ud, CL_SCALAR, ti.sc, 0);
    break;
  case TK_ARRAY:
    cb(ud, CL_ARRAY, ti.sc, ti.rank);
    break;
  case TK_TUPLE: {
    uint32_t n = ti.n;
    const ir_type *fields = ti.fields;
    for (uint32_t i = 0; i < n; i++)
      cg_ty_walk(ctx, fields[i], window, wrank, cb, ud);
    break;
  }
  case TK_WINDOW:
    cg_ty_walk(ctx, ti.elem, true, ti.rank, cb, ud);
    break;
  case TK_FN:
    break;
  }
}

static void cg_count_cb(void *ud, cg_leaf_kind kind, ac_scalar sc, uint32_t rank) {
  (void)kind;
  (void)sc;
  (void)rank;
  (*(uint32_t *)ud)++;
}

static uint32_t cg_num_leaves(ac_context *ctx, ir_type t) {
  uint32_t n = 0;
  cg_ty_walk(ctx, t, false, 0, cg_count_cb, &n);
  return n;
}

static void cg_words_cb(void *ud, cg_leaf_kind kind, ac_scalar sc, uint32_t rank) {
  (void)sc;
  if (kind == CL_SCALAR)
    *(uint32_t *)ud += 1;
  else if (kind == CL_ARRAY)
    *(uint32_t *)ud += 1 + rank;
}

uint32_t cg_frame_words(ac_context *ctx, ir_type t) {
  uint32_t n = 0;
  cg_ty_walk(ctx, t, false, 0, cg_words_cb, &n);
  return n;
}

typedef struct cg_fill {
  cg_module *M;
  cg_val *v;
  uint32_t i;
} cg_fill;

static void cg_fill_cb(void *ud, cg_leaf_kind kind, ac_scalar sc, uint32_t rank) {
  cg_fill *F = ud;
  cg_leaf *l = &F->v->l[F->i++];
  l->kind = (uint8_t)kind;
  l->sc = (uint8_t)sc;
  l->rank = rank;
  if (kind == CL_ARRAY)
    l->ext = cg_new(F->M, (size_t)rank * sizeof *l->ext);
}

void cg_val_alloc(cg_module *M, ir_type t, cg_val *out) {
  out->type = t;
  out->n = cg_num_leaves(M->ctx, t);
  out->l = cg_new(M, (size_t)out->n * sizeof *out->l);
  cg_fill F = {M, out, 0};
  cg_ty_walk(M->ctx, t, false, 0, cg_fill_cb, &F);
}

void cg_val_field(cg_module *M, const cg_val *v, uint32_t field, cg_val *out) {
  ir_typeinfo ti = ir_ty_info(M->ctx, v->type);
  if (ti.kind != TK_TUPLE || field >= ti.n) {
    cg_error(M, AC_ERR_INTERNAL, 0, "code generation: field %u of a value that has none", field);
    cg_val_alloc(M, ir_ty_unit(M->ctx), out);
    return;
  }
  uint32_t n = ti.n, off = 0;
  const ir_type *fields = ti.fields;
  ir_type ft = fields[field];
  for (uint32_t i = 0; i < field && i < n; i++)
    off += cg_num_leaves(M->ctx, fields[i]);
  out->type = ft;
  out->n = cg_num_leaves(M->ctx, ft);
  out->l = v->l + off;
}

/* ---- functions ---- */

static void cg_fn_attr(cg_module *M, LLVMValueRef fn, LLVMAttributeIndex idx, const char *name) {
  unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
  LLVMAddAttributeAtIndex(fn, idx, LLVMCreateEnumAttribute(M->llctx, kind, 0));
}

void cg_fn_wide_vectors(cg_fn *f) {
  static const char k[] = "prefer-vector-width", v[] = "512";
  if (f->M->target != CG_TARGET_CPU)
    return;
  LLVMAddAttributeAtIndex(f->fn, LLVMAttributeFunctionIndex,
                          LLVMCreateStringAttribute(f->M->llctx, k, sizeof k - 1, v, sizeof v - 1));
}

cg_fn *cg_kernel_begin(cg_module *M, const char *name) {
  cg_fn *f = cg_new(M, sizeof *f);
  f->M = M;
  LLVMTypeRef ps[5] = {M->t_ptr, M->t_i64, M->t_i64, M->t_i64, M->t_ptr};
  LLVMTypeRef ft = LLVMFunctionType(M->t_void, ps, 5, 0);
  if (LLVMGetNamedFunction(M->mod, name))
    cg_error(M, AC_ERR_INTERNAL, 0, "code generation: two kernels named %s", name);
  f->fn = LLVMAddFunction(M->mod, name, ft);
  LLVMSetLinkage(f->fn, LLVMExternalLinkage);
  cg_fn_attr(M, f->fn, LLVMAttributeFunctionIndex, "nounwind");
  /* The frame is noalias: it is an allocation of its own (plan_exec.c) that
   * no array data pointer points into, and the kernel passes it nowhere, so
   * LLVM may keep frame words in registers across stores to array data.
   * Data pointers get no such promise (arrays may share memory: views,
   * loop state), and neither does the thread context: a failed
   * ac_rt_tmp_alloc hands out memory inside it. */
  cg_fn_attr(M, f->fn, 1, "noalias");
  cg_fn_attr(M, f->fn, 1, "nocapture");
  f->frame = LLVMGetParam(f->fn, 0);
  f->chunk = LLVMGetParam(f->fn, 1);
  f->lo = LLVMGetParam(f->fn, 2);
  f->hi = LLVMGetParam(f->fn, 3);
  f->tctx = LLVMGetParam(f->fn, 4);
  LLVMSetValueName2(f->frame, "frame", 5);
  LLVMSetValueName2(f->chunk, "chunk", 5);
  LLVMSetValueName2(f->lo, "lo", 2);
  LLVMSetValueName2(f->hi, "hi", 2);
  LLVMSetValueName2(f->tctx, "t", 1);
  f->entry = LLVMAppendBasicBlockInContext(M->llctx, f->fn, "entry");
  LLVMPositionBuilderAtEnd(M->b, f->entry);
  return f;
}

void cg_kernel_end(cg_fn *f) {
  cg_module *M = f->M;
  LLVMBasicBlockRef bb = LLVMGetInsertBlock(M->b);
  if (bb && !LLVMGetBasicBlockTerminator(bb))
    LLVMBuildRetVoid(M->b);
  /* Verified always, not only in debug builds: an invalid function would
   * crash LLVM's passes later, and checking one function is cheap next to
   * optimising it. LLVMVerifyFunction gives no message, so the module is
   * verified again for one when it fails. */
  if (LLVMVerifyFunction(f->fn, LLVMReturnStatusAction)) {
    char *msg = NULL;
    LLVMVerifyModule(M->mod, LLVMReturnStatusAction, &msg);
    size_t len;
    const char *name = LLVMGetValueName2(f->fn, &len);
    cg_error(M, AC_ERR_INTERNAL, 0, "code generation: invalid LLVM IR in kernel %s: %s", name,
             msg ? msg : "");
    LLVMDisposeMessage(msg);
  }
}

LLVMValueRef cg_alloca(cg_fn *f, LLVMTypeRef t) {
  cg_module *M = f->M;
  /* A builder of its own, so the main builder's position is untouched;
   * allocas go first in the entry block, where mem2reg looks for them. */
  LLVMBuilderRef ab = LLVMCreateBuilderInContext(M->llctx);
  LLVMValueRef first = LLVMGetFirstInstruction(f->entry);
  if (first)
    LLVMPositionBuilderBefore(ab, first);
  else
    LLVMPositionBuilderAtEnd(ab, f->entry);
  LLVMValueRef a = LLVMBuildAlloca(ab, t, "");
  LLVMDisposeBuilder(ab);
  return a;
}

static LLVMValueRef cg_word_ptr(cg_fn *f, uint32_t slot) {
  cg_module *M = f->M;
  LLVMValueRef i = LLVMConstInt(M->t_i64, slot, 0);
  return LLVMBuildInBoundsGEP2(M->b, M->t_i64, f->frame, &i, 1, "");
}

LLVMValueRef cg_frame_word(cg_fn *f, uint32_t slot) {
  return cg_word_ptr(f, slot);
}

/* Loads a scalar of type sc from memory: bool is a byte 0/1 in memory and
 * i1 in registers (any nonzero byte reads as true). */
/* ro: memory the kernel never writes, read through NVPTX's read-only data
 * cache (ld.global.nc: !invariant.load); ignored on other targets. */
/* ro: the array is never written while the kernel runs (NVPTX: an
 * invariant load); vol: a volatile load. */
static LLVMValueRef cg_load_scalar(cg_fn *f, ac_scalar sc, LLVMValueRef p, bool ro, bool vol) {
  cg_module *M = f->M;
  LLVMValueRef v = LLVMBuildLoad2(M->b, cg_mem_type(M, sc), p, "");
  if (vol)
    LLVMSetVolatile(v, 1);
  if (ro && M->target == CG_TARGET_NVPTX) {
    unsigned kind = LLVMGetMDKindIDInContext(M->llctx, "invariant.load", strlen("invariant.load"));
    LLVMSetMetadata(v, kind, LLVMMetadataAsValue(M->llctx, LLVMMDNodeInContext2(M->llctx, NULL, 0)));
  }
  if (sc == AC_BOOL)
    v = LLVMBuildICmp(M->b, LLVMIntNE, v, LLVMConstInt(M->t_i8, 0, 0), "");
  return v;
}

static void cg_store_scalar(cg_fn *f, ac_scalar sc, LLVMValueRef p, LLVMValueRef v) {
  cg_module *M = f->M;
  if (sc == AC_BOOL)
    v = LLVMBuildZExt(M->b, v, M->t_i8, "");
  LLVMBuildStore(M->b, v, p);
}

/* An array's data pointer just loaded from a GPU kernel's frame. Every
 * such pointer is the base of a device allocation (cuMemAlloc and the
 * emulator align them to 256 bytes; plans never offset data words: a view
 * keeps its array's pointer, runtime/plan_exec.c), so it is 16-byte
 * aligned, which lets the NVPTX backend merge neighbouring accesses into
 * 16-byte vector accesses (ld.global.v4.f32). On NVPTX it also points into
 * global memory: the addrspacecast pair (what NVPTXLowerArgs does for
 * kernel arguments) lets address-space inference turn generic ld/st into
 * ld.global/st.global. */
static LLVMValueRef cg_gpu_array_ptr(cg_fn *f, LLVMValueRef p) {
  cg_module *M = f->M;
  if (M->target == CG_TARGET_CPU)
    return p;
  LLVMValueRef g = p;
  if (M->target == CG_TARGET_NVPTX)
    g = LLVMBuildAddrSpaceCast(M->b, p, LLVMPointerTypeInContext(M->llctx, 1), "");
  LLVMValueRef assume = LLVMGetIntrinsicDeclaration(
      M->mod, LLVMLookupIntrinsicID("llvm.assume", strlen("llvm.assume")), NULL, 0);
  LLVMValueRef args[2] = {g, cg_i64(M, 16)};
  LLVMOperandBundleRef ob = LLVMCreateOperandBundle("align", strlen("align"), args, 2);
  LLVMValueRef t = LLVMConstInt(M->t_i1, 1, 0);
  LLVMBuildCallWithOperandBundles(M->b, LLVMFunctionType(M->t_void, &M->t_i1, 1, 0), assume, &t,
                                  1, &ob, 1, "");
  LLVMDisposeOperandBundle(ob);
  return g == p ? p : LLVMBuildAddrSpaceCast(M->b, g, M->t_ptr, "");
}

/* A scalar of type sc held in the low bytes of the frame word v (i64):
 * what cg_load_scalar reads from the word's address (rt.h: little-endian). */
static LLVMValueRef cg_word_scalar(cg_module *M, ac_scalar sc, LLVMValueRef v) {
  LLVMTypeRef mt = cg_mem_type(M, sc);
  if (sc == AC_F64)
    return LLVMBuildBitCast(M->b, v, mt, "");
  if (sc == AC_F32)
    return LLVMBuildBitCast(M->b, LLVMBuildTrunc(M->b, v, M->t_i32, ""), mt, "");
  if (mt != M->t_i64)
    v = LLVMBuildTrunc(M->b, v, mt, "");
  if (sc == AC_BOOL)
    v = LLVMBuildICmp(M->b, LLVMIntNE, v, LLVMConstInt(M->t_i8, 0, 0), "");
  return v;
}

static void cg_narrow_note(cg_fn *f, const cg_leaf *l, const uint32_t *ext) {
  cg_module *M = f->M;
  cg_grow(M, (void **)&f->narrow, f->nnarrow, &f->capnarrow, sizeof *f->narrow, 8);
  cg_narrow *n = &f->narrow[f->nnarrow++];
  n->l = l;
  n->ext = cg_new(M, (l->rank ? l->rank : 1) * sizeof *n->ext);
  memcpy(n->ext, ext, l->rank * sizeof *n->ext);
}

/* Is a an array whose element count the plan checked (cg_fn.narrow)? */
static bool cg_narrow_has(const cg_fn *f, const cg_leaf *a) {
  for (uint32_t i = 0; i < f->nnarrow; i++)
    if (f->narrow[i].l->v == a->v)
      return true;
  return false;
}

void cg_load_frame(cg_fn *f, ir_type t, const uint32_t *words, cg_val *out) {
  cg_module *M = f->M;
  cg_val_alloc(M, t, out);
  uint32_t w = 0;
  /* GPU kernels read the words the host knows from their launch's
   * parameter block (cg_gpu_word) */
  bool gpu = f->gparams != NULL;
  for (uint32_t i = 0; i < out->n; i++) {
    cg_leaf *l = &out->l[i];
    if (l->kind == CL_SCALAR && gpu) {
      l->v = cg_word_scalar(M, l->sc, cg_gpu_word(f, words[w++]));
    } else if (l->kind == CL_SCALAR) {
      l->v = cg_load_scalar(f, l->sc, cg_word_ptr(f, words[w++]), false, false);
    } else if (l->kind == CL_ARRAY) {
      LLVMValueRef p =
          gpu ? LLVMBuildIntToPtr(M->b, cg_gpu_word(f, words[w++]), M->t_ptr, "")
              : LLVMBuildLoad2(M->b, M->t_ptr, cg_word_ptr(f, words[w++]), "");
      l->v = cg_gpu_array_ptr(f, p);
      l->ro = f->frame_ro;
      if (f->narrow_collect)
        cg_narrow_note(f, l, words + w);
      for (uint32_t d = 0; d < l->rank; d++)
        l->ext[d] = gpu ? cg_gpu_word(f, words[w++])
                        : LLVMBuildLoad2(M->b, M->t_i64, cg_word_ptr(f, words[w++]), "");
    } else {
      cg_error(M, AC_ERR_INTERNAL, 0, "code generation: a window cannot live in frame words");
      return;
    }
  }
}

void cg_store_frame(cg_fn *f, const uint32_t *words, const cg_val *v) {
  cg_module *M = f->M;
  uint32_t w = 0;
  for (uint32_t i = 0; i < v->n; i++) {
    const cg_leaf *l = &v->l[i];
    if (l->kind == CL_SCALAR) {
      cg_store_scalar(f, l->sc, cg_word_ptr(f, words[w++]), l->v);
    } else if (l->kind == CL_ARRAY) {
      LLVMBuildStore(M->b, l->v, cg_word_ptr(f, words[w++]));
      for (uint32_t d = 0; d < l->rank; d++)
        LLVMBuildStore(M->b, l->ext[d], cg_word_ptr(f, words[w++]));
    } else {
      cg_error(M, AC_ERR_INTERNAL, 0,
               "code generation: a delayed array cannot be stored in frame words");
      return;
    }
  }
}

void cg_grow(cg_module *M, void **vec, uint32_t n, uint32_t *cap, size_t size, uint32_t first) {
  if (n < *cap)
    return;
  uint32_t c = *cap ? 2 * *cap : first;
  void *v = cg_new(M, (size_t)c * size);
  if (n)
    memcpy(v, *vec, (size_t)n * size);
  *vec = v;
  *cap = c;
}

void cg_env_push(cg_fn *f, const cg_val *v) {
  cg_grow(f->M, (void **)&f->env, f->nenv, &f->capenv, sizeof *f->env, 16);
  f->env[f->nenv++] = *v;
}

void cg_env_pop(cg_fn *f, uint32_t n) {
  if (n > f->nenv) {
    cg_error(f->M, AC_ERR_INTERNAL, 0, "code generation: environment underflow");
    n = f->nenv;
  }
  f->nenv -= n;
}

/* ---- values ---- */

void cg_var_new(cg_fn *f, ir_type t, cg_var *out) {
  cg_module *M = f->M;
  cg_val_alloc(M, t, &out->shape);
  uint32_t n = 0;
  for (uint32_t i = 0; i < out->shape.n; i++) {
    const cg_leaf *l = &out->shape.l[i];
    if (l->kind == CL_FUNC) {
      cg_error(M, AC_ERR_INTERNAL, 0, "code generation: a window cannot be a variable");
      continue;
    }
    n += l->kind == CL_SCALAR ? 1 : 1 + l->rank;
  }
  out->n = n;
  out->slot = cg_new(M, (size_t)n * sizeof *out->slot);
  uint32_t s = 0;
  for (uint32_t i = 0; i < out->shape.n; i++) {
    const cg_leaf *l = &out->shape.l[i];
    if (l->kind == CL_SCALAR) {
      out->slot[s++] = cg_alloca(f, cg_scalar_type(M, l->sc));
    } else if (l->kind == CL_ARRAY) {
      out->slot[s++] = cg_alloca(f, M->t_ptr);
      for (uint32_t d = 0; d < l->rank; d++)
        out->slot[s++] = cg_alloca(f, M->t_i64);
    }
  }
}

void cg_var_store(cg_fn *f, cg_var *var, const cg_val *v) {
  cg_module *M = f->M;
  if (v->n != var->shape.n) {
    cg_error(M, AC_ERR_INTERNAL, 0, "code generation: storing %u leaves into a variable of %u",
             v->n, var->shape.n);
    return;
  }
  uint32_t s = 0;
  for (uint32_t i = 0; i < v->n; i++) {
    const cg_leaf *l = &v->l[i];
    uint8_t want = var->shape.l[i].kind;
    if (want == CL_FUNC)
      continue; /* reported by cg_var_new */
    if (l->kind != want) {
      cg_error(M, AC_ERR_INTERNAL, 0,
               "code generation: a delayed array cannot be stored into a variable");
      return;
    }
    if (l->kind == CL_SCALAR) {
      LLVMBuildStore(M->b, l->v, var->slot[s++]);
    } else {
      LLVMBuildStore(M->b, l->v, var->slot[s++]);
      for (uint32_t d = 0; d < l->rank; d++)
        LLVMBuildStore(M->b, l->ext[d], var->slot[s++]);
    }
  }
}

void cg_var_load(cg_fn *f, const cg_var *var, cg_val *out) {
  cg_module *M = f->M;
  cg_val_alloc(M, var->shape.type, out);
  uint32_t s = 0;
  for (uint32_t i = 0; i < out->n; i++) {
    cg_leaf *l = &out->l[i];
    if (l->kind == CL_SCALAR) {
      l->v = LLVMBuildLoad2(M->b, cg_scalar_type(M, l->sc), var->slot[s++], "");
    } else if (l->kind == CL_ARRAY) {
      l->v = LLVMBuildLoad2(M->b, M->t_ptr, var->slot[s++], "");
      for (uint32_t d = 0; d < l->rank; d++)
        l->ext[d] = LLVMBuildLoad2(M->b, M->t_i64, var->slot[s++], "");
    }
  }
}

void cg_val_select(cg_fn *f, LLVMValueRef cond, const cg_val *a, const cg_val *b, cg_val *out) {
  cg_module *M = f->M;
  cg_val_alloc(M, a->type, out);
  if (a->n != b->n || a->n != out->n) {
    cg_error(M, AC_ERR_INTERNAL, 0, "code generation: select between values of different shapes");
    return;
  }
  for (uint32_t i = 0; i < out->n; i++) {
    const cg_leaf *x = &a->l[i], *y = &b->l[i];
    cg_leaf *o = &out->l[i];
    if (x->kind != y->kind || x->kind == CL_FUNC) {
      cg_error(M, AC_ERR_INTERNAL, 0, "code generation: select between delayed arrays");
      return;
    }
    /* Manifest arrays are selected too (pointer and extents): cheap, and it
     * saves callers from branching for array-valued ifs in element code. */
    o->kind = x->kind;
    o->ro = x->ro && y->ro;
    o->v = LLVMBuildSelect(M->b, cond, x->v, y->v, "");
    for (uint32_t d = 0; x->kind == CL_ARRAY && d < x->rank; d++)
      o->ext[d] = LLVMBuildSelect(M->b, cond, x->ext[d], y->ext[d], "");
  }
}

/* ---- control flow ---- */

LLVMBasicBlockRef cg_block(cg_fn *f, const char *name) {
  return LLVMAppendBasicBlockInContext(f->M->llctx, f->fn, name);
}

/* The loop is the plain `for` shape (test at the head, increment in the
 * latch, the induction variable in an alloca): after mem2reg it is the
 * canonical form loop-rotate, indvars and the vectoriser expect. The
 * increment cannot overflow (iv < hi <= INT64_MAX), hence nsw. */
LLVMValueRef cg_loop_begin(cg_fn *f, cg_loop *l, LLVMValueRef lo, LLVMValueRef hi) {
  cg_module *M = f->M;
  l->ivslot = cg_alloca(f, M->t_i64);
  LLVMBuildStore(M->b, lo, l->ivslot);
  l->head = cg_block(f, "loop.head");
  l->body = cg_block(f, "loop.body");
  l->exit = cg_block(f, "loop.exit");
  LLVMBuildBr(M->b, l->head);
  LLVMPositionBuilderAtEnd(M->b, l->head);
  l->iv = LLVMBuildLoad2(M->b, M->t_i64, l->ivslot, "i");
  LLVMValueRef c = LLVMBuildICmp(M->b, LLVMIntSLT, l->iv, hi, "");
  LLVMBuildCondBr(M->b, c, l->body, l->exit);
  LLVMPositionBuilderAtEnd(M->b, l->body);
  return l->iv;
}

void cg_loop_end(cg_fn *f, cg_loop *l) {
  cg_module *M = f->M;
  LLVMValueRef next = LLVMBuildNSWAdd(M->b, l->iv, LLVMConstInt(M->t_i64, 1, 0), "");
  LLVMBuildStore(M->b, next, l->ivslot);
  LLVMBuildBr(M->b, l->head);
  LLVMPositionBuilderAtEnd(M->b, l->exit);
}

/* ---- memory and runtime services ---- */

LLVMValueRef cg_smin(cg_module *M, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildSelect(M->b, LLVMBuildICmp(M->b, LLVMIntSLT, a, b, ""), a, b, "");
}

LLVMValueRef cg_smax(cg_module *M, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildSelect(M->b, LLVMBuildICmp(M->b, LLVMIntSGT, a, b, ""), a, b, "");
}

LLVMValueRef cg_i64(cg_module *M, int64_t k) {
  return LLVMConstInt(M->t_i64, (unsigned long long)k, 1);
}

/* Offsets of elements that exist fit in int64 (arrays are at most
 * RT_ARRAY_MAX_BYTES), hence nsw, which lets SCEV see consecutive
 * accesses. */
LLVMValueRef cg_linear(cg_fn *f, uint32_t rank, LLVMValueRef *ext, LLVMValueRef *idx) {
  cg_module *M = f->M;
  if (rank == 0)
    return cg_i64(M, 0);
  LLVMValueRef lin = idx[0];
  for (uint32_t d = 1; d < rank; d++)
    lin = LLVMBuildNSWAdd(M->b, LLVMBuildNSWMul(M->b, lin, ext[d], ""), idx[d], "");
  return lin;
}

LLVMValueRef cg_no_wrap(LLVMValueRef v) {
  if (LLVMIsAInstruction(v)) { /* the builder folds constants */
    LLVMSetNUW(v, 1);
    LLVMSetNSW(v, 1);
  }
  return v;
}

LLVMValueRef cg_widen_index(cg_module *M, LLVMValueRef v) {
  LLVMValueRef w = LLVMBuildZExt(M->b, v, M->t_i64, "");
  if (LLVMIsAInstruction(w))
    LLVMSetNNeg(w, 1);
  return w;
}

/* The offset of element idx of manifest array a: in 32 bits, widened, in
 * a kernel's 32-bit index variant when a's element count was checked
 * (cg_fn.narrow; an element read is in range, so every partial sum is
 * below the count), else cg_linear's. */
static LLVMValueRef cg_offset(cg_fn *f, const cg_leaf *a, LLVMValueRef *idx) {
  cg_module *M = f->M;
  if (!f->idx32 || a->rank == 0 || !cg_narrow_has(f, a))
    return cg_linear(f, a->rank, a->ext, idx);
  LLVMValueRef lin = LLVMBuildTrunc(M->b, idx[0], M->t_i32, "");
  for (uint32_t d = 1; d < a->rank; d++) {
    LLVMValueRef e = LLVMBuildTrunc(M->b, a->ext[d], M->t_i32, "");
    LLVMValueRef i = LLVMBuildTrunc(M->b, idx[d], M->t_i32, "");
    lin = cg_no_wrap(LLVMBuildAdd(M->b, cg_no_wrap(LLVMBuildMul(M->b, lin, e, "")), i, ""));
  }
  return cg_widen_index(M, lin);
}

static LLVMValueRef cg_elem_ptr(cg_fn *f, const cg_leaf *a, LLVMValueRef lin) {
  cg_module *M = f->M;
  return LLVMBuildInBoundsGEP2(M->b, cg_mem_type(M, a->sc), a->v, &lin, 1, "");
}

LLVMValueRef cg_load_elem(cg_fn *f, const cg_leaf *a, LLVMValueRef lin) {
  return cg_load_scalar(f, a->sc, cg_elem_ptr(f, a, lin), a->ro, false);
}

LLVMValueRef cg_load_elem_volatile(cg_fn *f, const cg_leaf *a, LLVMValueRef lin) {
  return cg_load_scalar(f, a->sc, cg_elem_ptr(f, a, lin), false, true);
}

void cg_store_elem(cg_fn *f, const cg_leaf *a, LLVMValueRef lin, LLVMValueRef v) {
  cg_store_scalar(f, a->sc, cg_elem_ptr(f, a, lin), v);
}

bool cg_is_manifest(const cg_leaf *a) {
  return a->kind == CL_ARRAY;
}

/* What the optimiser may assume of the runtime helpers (runtime/services.c)
 * beyond "may read and write any memory":
 *   - ac_rt_fail and ac_rt_failed touch only the call's error record
 *     (rt_call, reached through the thread's context), which kernels never
 *     load or store themselves: LLVM's memory(inaccessiblemem: ...). So a
 *     check that fails inside a loop does not stop LICM and GVN from
 *     keeping loads of the inputs and of temporary arrays in registers;
 *   - ac_rt_tmp_alloc returns memory that no other pointer of the kernel
 *     reaches (a fresh piece of the worker's arena, as malloc's): a noalias
 *     result, so stores into a temporary array (a recurrence's window, a
 *     nested generate's buffer) cannot clobber the inputs' elements.
 * The encoding of memory(...) is LLVM 19's MemoryEffects: two bits (1 read,
 * 2 write) per location, argmem at bit 0, inaccessiblemem at bit 2. */
enum { CG_MEM_ARG_READ = 1u, CG_MEM_INACC_READ = 1u << 2, CG_MEM_INACC_RW = 3u << 2 };

static void cg_helper_facts(cg_module *M, const char *name, LLVMValueRef fn) {
  /* ac_rt_fail_n reads its values through its pointer argument as well */
  unsigned mem = strcmp(name, "ac_rt_fail") == 0     ? CG_MEM_INACC_RW
                 : strcmp(name, "ac_rt_fail_n") == 0 ? CG_MEM_INACC_RW | CG_MEM_ARG_READ
                 : strcmp(name, "ac_rt_failed") == 0 ? CG_MEM_INACC_READ
                                                     : 0;
  if (mem) {
    unsigned kind = LLVMGetEnumAttributeKindForName("memory", strlen("memory"));
    LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                            LLVMCreateEnumAttribute(M->llctx, kind, mem));
    cg_fn_attr(M, fn, LLVMAttributeFunctionIndex, "willreturn");
  }
  if (strcmp(name, "ac_rt_tmp_alloc") == 0)
    cg_fn_attr(M, fn, LLVMAttributeReturnIndex, "noalias");
}

/* Declares (once per module) a runtime helper of rt.h. */
static LLVMValueRef cg_helper(cg_module *M, const char *name, LLVMTypeRef ret, LLVMTypeRef *ps,
                              unsigned n, bool cold) {
  LLVMValueRef fn = LLVMGetNamedFunction(M->mod, name);
  if (fn)
    return fn;
  fn = LLVMAddFunction(M->mod, name, LLVMFunctionType(ret, ps, n, 0));
  cg_fn_attr(M, fn, LLVMAttributeFunctionIndex, "nounwind");
  if (cold)
    cg_fn_attr(M, fn, LLVMAttributeFunctionIndex, "cold");
  if (M->target == CG_TARGET_CPU)
    cg_helper_facts(M, name, fn);
  return fn;
}

static LLVMValueRef cg_call(cg_module *M, LLVMValueRef fn, LLVMValueRef *args, unsigned n) {
  return LLVMBuildCall2(M->b, LLVMGlobalGetValueType(fn), fn, args, n, "");
}

/* An i64 argument for ac_rt_fail from any integer (NULL is 0). */
static LLVMValueRef cg_as_i64(cg_module *M, LLVMValueRef v) {
  if (!v)
    return cg_i64(M, 0);
  LLVMTypeRef t = LLVMTypeOf(v);
  if (t == M->t_i64)
    return v;
  if (LLVMGetTypeKind(t) == LLVMIntegerTypeKind)
    return LLVMBuildSExtOrBitCast(M->b, v, M->t_i64, "");
  cg_error(M, AC_ERR_INTERNAL, 0, "code generation: a runtime error value that is not an integer");
  return cg_i64(M, 0);
}

/* The CPU's failure path: a call of ac_rt_fail through "arrayc.fail", a
 * module-local thunk with LLVM's preserve_all calling convention (the
 * callee saves every register it uses, vector registers included, and
 * then calls ac_rt_fail with C's). A check's failure path is cold but sits
 * inside the hot loops (a read of an input in a recurrence's row, a
 * matrix lookup per cell): with C's convention every value live across it
 * must be in one of the six callee-saved registers or be spilled around
 * the loop's body, and the fold accumulators and row pointers of a
 * Smith-Waterman row went to the stack; with preserve_all the loop keeps
 * them in registers and only the failure path pays for saving them. */
/* The preserve_all thunk `thunk` that calls runtime helper `name` (void,
 * cold) with its n parameters of types ps. */
static LLVMValueRef cg_cpu_fail_thunk(cg_module *M, const char *name, const char *thunk,
                                      LLVMTypeRef *ps, unsigned n) {
  LLVMValueRef th = LLVMGetNamedFunction(M->mod, thunk);
  if (th)
    return th;
  LLVMValueRef rt = cg_helper(M, name, M->t_void, ps, n, true);
  th = LLVMAddFunction(M->mod, thunk, LLVMFunctionType(M->t_void, ps, n, 0));
  LLVMSetLinkage(th, LLVMInternalLinkage);
  LLVMSetFunctionCallConv(th, LLVMPreserveAllCallConv);
  cg_fn_attr(M, th, LLVMAttributeFunctionIndex, "nounwind");
  cg_fn_attr(M, th, LLVMAttributeFunctionIndex, "cold");
  cg_fn_attr(M, th, LLVMAttributeFunctionIndex, "noinline");
  cg_helper_facts(M, name, th);
  LLVMBuilderRef tb = LLVMCreateBuilderInContext(M->llctx);
  LLVMPositionBuilderAtEnd(tb, LLVMAppendBasicBlockInContext(M->llctx, th, "entry"));
  LLVMValueRef args[4];
  for (unsigned i = 0; i < n; i++)
    args[i] = LLVMGetParam(th, i);
  LLVMBuildCall2(tb, LLVMGlobalGetValueType(rt), rt, args, n, "");
  LLVMBuildRetVoid(tb);
  LLVMDisposeBuilder(tb);
  return th;
}

static void cg_cpu_fail(cg_fn *f, LLVMValueRef site, LLVMValueRef a, LLVMValueRef b) {
  cg_module *M = f->M;
  LLVMTypeRef ps[4] = {M->t_ptr, M->t_i32, M->t_i64, M->t_i64};
  LLVMValueRef th = cg_cpu_fail_thunk(M, "ac_rt_fail", "arrayc.fail", ps, 4);
  LLVMValueRef args[4] = {f->tctx, site, cg_as_i64(M, a), cg_as_i64(M, b)};
  LLVMSetInstructionCallConv(cg_call(M, th, args, 4), LLVMPreserveAllCallConv);
}

/* More than two values: they are stored into an array of the entry block
 * (written only on this cold path) for ac_rt_fail_n, through a thunk
 * "arrayc.fail_n" of the same convention. */
static void cg_cpu_fail_n(cg_fn *f, LLVMValueRef site, uint32_t n, const LLVMValueRef *vals) {
  cg_module *M = f->M;
  LLVMTypeRef ps[4] = {M->t_ptr, M->t_i32, M->t_i32, M->t_ptr};
  LLVMValueRef th = cg_cpu_fail_thunk(M, "ac_rt_fail_n", "arrayc.fail_n", ps, 4);
  LLVMValueRef buf = cg_alloca(f, LLVMArrayType(M->t_i64, n));
  for (uint32_t k = 0; k < n; k++) {
    LLVMValueRef o = cg_i64(M, k);
    LLVMBuildStore(M->b, cg_as_i64(M, vals[k]), LLVMBuildGEP2(M->b, M->t_i64, buf, &o, 1, ""));
  }
  LLVMValueRef args[4] = {f->tctx, site, LLVMConstInt(M->t_i32, n, 0), buf};
  LLVMSetInstructionCallConv(cg_call(M, th, args, 4), LLVMPreserveAllCallConv);
}

void cg_fail(cg_fn *f, uint32_t site, LLVMValueRef a, LLVMValueRef b) {
  cg_module *M = f->M;
  if (M->target != CG_TARGET_CPU) {
    cg_gpu_fail(f, LLVMConstInt(M->t_i32, site, 0), cg_as_i64(M, a), cg_as_i64(M, b));
    return;
  }
  cg_cpu_fail(f, LLVMConstInt(M->t_i32, site, 0), a, b);
}

void cg_fail_n(cg_fn *f, uint32_t site, uint32_t n, const LLVMValueRef *vals) {
  cg_module *M = f->M;
  if (n > RT_FAIL_VALS) {
    cg_error(M, AC_ERR_INTERNAL, 0, "code generation: a runtime error with %u values", n);
    return;
  }
  if (n <= 2) {
    cg_fail(f, site, n > 0 ? vals[0] : NULL, n > 1 ? vals[1] : NULL);
    return;
  }
  LLVMValueRef s = LLVMConstInt(M->t_i32, site, 0);
  if (M->target != CG_TARGET_CPU) {
    LLVMValueRef *v = cg_new(M, n * sizeof *v);
    for (uint32_t k = 0; k < n; k++)
      v[k] = cg_as_i64(M, vals[k]);
    cg_gpu_fail_n(f, s, n, v);
    return;
  }
  cg_cpu_fail_n(f, s, n, vals);
}

void cg_cpu_yield(cg_fn *f) {
  cg_module *M = f->M;
  cg_call(M, cg_helper(M, "ac_rt_yield", M->t_void, NULL, 0, false), NULL, 0);
}

void cg_assume(cg_fn *f, LLVMValueRef cond) {
  cg_module *M = f->M;
  LLVMValueRef assume = LLVMGetIntrinsicDeclaration(
      M->mod, LLVMLookupIntrinsicID("llvm.assume", strlen("llvm.assume")), NULL, 0);
  LLVMBuildCall2(M->b, LLVMFunctionType(M->t_void, &M->t_i1, 1, 0), assume, &cond, 1, "");
}

void cg_check(cg_fn *f, LLVMValueRef cond, uint32_t site, LLVMValueRef a, LLVMValueRef b) {
  cg_module *M = f->M;
  if (LLVMIsAConstantInt(cond) && LLVMConstIntGetZExtValue(cond) != 0)
    return;
  LLVMBasicBlockRef bad = cg_block(f, "check.fail"), ok = cg_block(f, "check.ok");
  LLVMBuildCondBr(M->b, cond, ok, bad);
  LLVMPositionBuilderAtEnd(M->b, bad);
  cg_fail(f, site, a, b);
  LLVMBuildBr(M->b, ok);
  LLVMPositionBuilderAtEnd(M->b, ok);
}

void cg_check_n(cg_fn *f, LLVMValueRef cond, uint32_t site, uint32_t n, const LLVMValueRef *vals) {
  cg_module *M = f->M;
  if (LLVMIsAConstantInt(cond) && LLVMConstIntGetZExtValue(cond) != 0)
    return;
  LLVMBasicBlockRef bad = cg_block(f, "check.fail"), ok = cg_block(f, "check.ok");
  LLVMBuildCondBr(M->b, cond, ok, bad);
  LLVMPositionBuilderAtEnd(M->b, bad);
  cg_fail_n(f, site, n, vals);
  LLVMBuildBr(M->b, ok);
  LLVMPositionBuilderAtEnd(M->b, ok);
}

void cg_defer_begin(cg_fn *f, cg_defer *d) {
  cg_module *M = f->M;
  d->was = f->defer;
  d->was_zero = f->defer_zero;
  d->flag = cg_alloca(f, M->t_i1);
  f->defer_zero = cg_alloca(f, M->t_i64);
  LLVMBuildStore(M->b, cg_i64(M, 0), f->defer_zero);
  LLVMBuildStore(M->b, LLVMConstInt(M->t_i1, 0, 0), d->flag);
  f->defer = d->flag;
}

LLVMValueRef cg_defer_end(cg_fn *f, const cg_defer *d) {
  f->defer = d->was;
  f->defer_zero = d->was_zero;
  return LLVMBuildLoad2(f->M->b, f->M->t_i1, d->flag, "");
}

LLVMValueRef cg_read(cg_fn *f, const cg_leaf *a, LLVMValueRef *idx, bool check, ir_ref at) {
  cg_module *M = f->M;
  /* Windows (no extents) and readers that check by themselves get the
   * indices as they are. */
  bool checked = check && a->rank > 0 && a->ext != NULL;
  if (!checked)
    return a->kind == CL_FUNC ? a->read(f, a, idx, at) : cg_load_elem(f, a, cg_offset(f, a, idx));
  /* One test per dimension, in order, as the interpreter does; the first
   * failing dimension is the one reported (via selects in the cold block,
   * so the hot path is one branch). Out of range, nothing is read: the
   * array may be empty. */
  LLVMValueRef ok = NULL;
  LLVMValueRef *okd = cg_new(M, (size_t)a->rank * sizeof *okd);
  for (uint32_t d = 0; d < a->rank; d++) {
    okd[d] = LLVMBuildICmp(M->b, LLVMIntULT, idx[d], a->ext[d], "");
    ok = ok ? LLVMBuildAnd(M->b, ok, okd[d], "") : okd[d];
  }
  if (f->defer && a->kind != CL_FUNC) { /* no branch: the flag, and a zero read */
    LLVMValueRef flag = LLVMBuildLoad2(M->b, M->t_i1, f->defer, "");
    LLVMBuildStore(M->b, LLVMBuildOr(M->b, flag, LLVMBuildNot(M->b, ok, ""), ""), f->defer);
    LLVMValueRef p =
        LLVMBuildSelect(M->b, ok, cg_elem_ptr(f, a, cg_offset(f, a, idx)), f->defer_zero, "");
    return cg_load_scalar(f, a->sc, p, a->ro, false);
  }
  LLVMBasicBlockRef rd = cg_block(f, "read"), bad = cg_block(f, "read.oob"),
                    join = cg_block(f, "read.join");
  LLVMBuildCondBr(M->b, ok, rd, bad);

  LLVMPositionBuilderAtEnd(M->b, bad);
  LLVMValueRef site = NULL, va = NULL, vb = NULL;
  for (uint32_t d = a->rank; d-- > 0;) {
    char fmt[96];
    snprintf(fmt, sizeof fmt, "index %%lld out of bounds for dimension %u of extent %%lld", d);
    LLVMValueRef s = LLVMConstInt(M->t_i32, cg_site(M, at, fmt), 0);
    if (!site) {
      site = s;
      va = idx[d];
      vb = a->ext[d];
    } else {
      LLVMValueRef bd = LLVMBuildNot(M->b, okd[d], "");
      site = LLVMBuildSelect(M->b, bd, s, site, "");
      va = LLVMBuildSelect(M->b, bd, idx[d], va, "");
      vb = LLVMBuildSelect(M->b, bd, a->ext[d], vb, "");
    }
  }
  if (M->target != CG_TARGET_CPU) {
    cg_gpu_fail(f, site, cg_as_i64(M, va), cg_as_i64(M, vb));
  } else {
    cg_cpu_fail(f, site, va, vb);
  }
  LLVMBasicBlockRef bad_end = LLVMGetInsertBlock(M->b); /* a GPU failure adds blocks */
  LLVMBuildBr(M->b, join);

  LLVMPositionBuilderAtEnd(M->b, rd);
  LLVMValueRef v =
      a->kind == CL_FUNC ? a->read(f, a, idx, at) : cg_load_elem(f, a, cg_offset(f, a, idx));
  LLVMBasicBlockRef rd_end = LLVMGetInsertBlock(M->b); /* a reader may add blocks */
  LLVMBuildBr(M->b, join);

  LLVMPositionBuilderAtEnd(M->b, join);
  LLVMTypeRef t = LLVMTypeOf(v);
  LLVMValueRef phi = LLVMBuildPhi(M->b, t, "");
  LLVMValueRef vals[2] = {v, LLVMConstNull(t)};
  LLVMBasicBlockRef from[2] = {rd_end, bad_end};
  LLVMAddIncoming(phi, vals, from, 2);
  return phi;
}

LLVMValueRef cg_tmp_alloc(cg_fn *f, LLVMValueRef bytes, ir_ref at) {
  cg_module *M = f->M;
  if (M->target != CG_TARGET_CPU)
    return cg_gpu_tmp_alloc(f, bytes, at);
  LLVMTypeRef ps[3] = {M->t_ptr, M->t_i64, M->t_i32};
  LLVMValueRef fn = cg_helper(M, "ac_rt_tmp_alloc", M->t_ptr, ps, 3, false);
  uint32_t site = cg_site(M, at, "array too large");
  LLVMValueRef args[3] = {f->tctx, cg_as_i64(M, bytes), LLVMConstInt(M->t_i32, site, 0)};
  return cg_call(M, fn, args, 3);
}

LLVMValueRef cg_failed(cg_fn *f) {
  cg_module *M = f->M;
  if (M->target != CG_TARGET_CPU)
    return cg_gpu_failed(f);
  if (!f->tctx)
    return LLVMConstInt(M->t_i1, 0, 0);
  /* int32_t ac_rt_failed(rt_tctx *) of runtime/rt.h */
  LLVMTypeRef ty = LLVMFunctionType(M->t_i32, &M->t_ptr, 1, 0);
  LLVMValueRef fn = LLVMGetNamedFunction(M->mod, "ac_rt_failed");
  if (!fn)
    fn = LLVMAddFunction(M->mod, "ac_rt_failed", ty);
  LLVMValueRef r = LLVMBuildCall2(M->b, ty, fn, &f->tctx, 1, "");
  return LLVMBuildICmp(M->b, LLVMIntNE, r, LLVMConstInt(M->t_i32, 0, 0), "");
}

LLVMValueRef cg_index_i64(cg_fn *f, LLVMValueRef v, ac_scalar sc) {
  cg_module *M = f->M;
  if (sc == AC_I64)
    return v;
  if (sc == AC_U64) {
    LLVMValueRef neg = LLVMBuildICmp(M->b, LLVMIntSLT, v, cg_i64(M, 0), "");
    return LLVMBuildSelect(M->b, neg, cg_i64(M, INT64_MAX), v, "");
  }
  if (sc >= AC_I8 && sc <= AC_I64)
    return LLVMBuildSExt(M->b, v, M->t_i64, "");
  return LLVMBuildZExt(M->b, v, M->t_i64, "");
}

LLVMValueRef cg_tmp_mark(cg_fn *f) {
  cg_module *M = f->M;
  if (M->target != CG_TARGET_CPU)
    return cg_gpu_tmp_mark(f);
  LLVMTypeRef ps[1] = {M->t_ptr};
  LLVMValueRef fn = cg_helper(M, "ac_rt_tmp_mark", M->t_i64, ps, 1, false);
  return cg_call(M, fn, &f->tctx, 1);
}

void cg_tmp_release(cg_fn *f, LLVMValueRef mark) {
  cg_module *M = f->M;
  if (M->target != CG_TARGET_CPU) {
    cg_gpu_tmp_release(f, mark);
    return;
  }
  LLVMTypeRef ps[2] = {M->t_ptr, M->t_i64};
  LLVMValueRef fn = cg_helper(M, "ac_rt_tmp_release", M->t_void, ps, 2, false);
  LLVMValueRef args[2] = {f->tctx, mark};
  cg_call(M, fn, args, 2);
}

/* {r, overflow} of an unsigned i64 multiplication. */
static LLVMValueRef cg_umul_ovf(cg_fn *f, LLVMValueRef x, LLVMValueRef y, LLVMValueRef *ovf) {
  cg_module *M = f->M;
  unsigned id = LLVMLookupIntrinsicID("llvm.umul.with.overflow", 23);
  LLVMTypeRef ty = M->t_i64;
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(M->mod, id, &ty, 1);
  LLVMTypeRef fty = LLVMIntrinsicGetType(M->llctx, id, &ty, 1);
  LLVMValueRef args[2] = {x, y};
  LLVMValueRef r = LLVMBuildCall2(M->b, fty, fn, args, 2, "");
  *ovf = LLVMBuildExtractValue(M->b, r, 1, "");
  return LLVMBuildExtractValue(M->b, r, 0, "");
}

/* The interpreter's rules exactly (interp_read_shape, then rt_array_count):
 * every extent is checked for being negative first, in order; then the
 * array is too large if one extent alone exceeds the element limit, or, when
 * no extent is zero, their product does. */
void cg_new_array(cg_fn *f, ac_scalar sc, uint32_t rank, LLVMValueRef *ext, ir_ref at,
                  cg_leaf *out) {
  cg_module *M = f->M;
  LLVMValueRef zero = cg_i64(M, 0), fls = LLVMConstInt(M->t_i1, 0, 0);
  LLVMValueRef *safe = cg_new(M, (size_t)rank * sizeof *safe);
  LLVMValueRef allok = LLVMConstInt(M->t_i1, 1, 0);
  if (rank > 0) {
    uint32_t neg = cg_site(M, at, "negative extent %lld");
    for (uint32_t d = 0; d < rank; d++) {
      LLVMValueRef e = cg_as_i64(M, ext[d]);
      LLVMValueRef nn = LLVMBuildICmp(M->b, LLVMIntSGE, e, zero, "");
      cg_check(f, nn, neg, e, NULL);
      safe[d] = LLVMBuildSelect(M->b, nn, e, zero, "");
      allok = LLVMBuildAnd(M->b, allok, nn, "");
    }
  }
  size_t elsize = ac_scalar_size(sc);
  LLVMValueRef limit = cg_i64(M, RT_ARRAY_MAX_BYTES / (int64_t)elsize);
  LLVMValueRef anybig = fls, anyzero = fls, ovf = fls, count = cg_i64(M, 1);
  for (uint32_t d = 0; d < rank; d++) {
    anybig = LLVMBuildOr(M->b, anybig, LLVMBuildICmp(M->b, LLVMIntUGT, safe[d], limit, ""), "");
    anyzero = LLVMBuildOr(M->b, anyzero, LLVMBuildICmp(M->b, LLVMIntEQ, safe[d], zero, ""), "");
    LLVMValueRef o;
    count = cg_umul_ovf(f, count, safe[d], &o);
    ovf = LLVMBuildOr(M->b, ovf, o, "");
  }
  LLVMValueRef prodbig =
      LLVMBuildOr(M->b, ovf, LLVMBuildICmp(M->b, LLVMIntUGT, count, limit, ""), "");
  LLVMValueRef big = LLVMBuildOr(
      M->b, anybig, LLVMBuildAnd(M->b, LLVMBuildNot(M->b, anyzero, ""), prodbig, ""), "");
  uint32_t site = cg_site(M, at, "array too large");
  cg_check(f, LLVMBuildNot(M->b, big, ""), site, NULL, NULL);
  allok = LLVMBuildAnd(M->b, allok, LLVMBuildNot(M->b, big, ""), "");
  /* Failed: an empty array, so whatever runs next touches no element. */
  LLVMValueRef bytes =
      LLVMBuildSelect(M->b, LLVMBuildOr(M->b, anyzero, LLVMBuildNot(M->b, allok, ""), ""), zero,
                      LLVMBuildMul(M->b, count, cg_i64(M, (int64_t)elsize), ""), "");
  out->kind = CL_ARRAY;
  out->sc = (uint8_t)sc;
  out->rank = rank;
  out->read = NULL;
  out->env = NULL;
  out->ro = false; /* the kernel writes it */
  out->v = cg_tmp_alloc(f, bytes, at);
  /* The runtime may fail too (out of memory) and then hands out a 64-byte
   * dummy: the array is empty whenever the call has failed. */
  if (rank > 0 && M->target != CG_TARGET_CPU) {
    allok = LLVMBuildAnd(M->b, allok, LLVMBuildNot(M->b, cg_gpu_failed(f), ""), "");
  } else if (rank > 0) {
    LLVMTypeRef ps[1] = {M->t_ptr};
    LLVMValueRef fn = cg_helper(M, "ac_rt_failed", M->t_i32, ps, 1, false);
    LLVMValueRef failed = cg_call(M, fn, &f->tctx, 1);
    allok = LLVMBuildAnd(
        M->b, allok, LLVMBuildICmp(M->b, LLVMIntEQ, failed, LLVMConstInt(M->t_i32, 0, 0), ""), "");
  }
  out->ext = cg_new(M, (size_t)rank * sizeof *out->ext);
  for (uint32_t d = 0; d < rank; d++)
    out->ext[d] = LLVMBuildSelect(M->b, allok, safe[d], zero, "");
}
