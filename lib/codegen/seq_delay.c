/* lib/codegen/seq_delay.c: delayed arrays, the code side of fusion (cg.h,
 * cg_delayed; the fuse pass is lib/passes/fuse.c).
 *
 * A delayed producer is an array known by how to compute its element at an
 * index (Accelerate's delayed arrays, Barracuda's fused index functions):
 *   map(f, a1..an)         f(a1[ix], .., an[ix])
 *   generate(s, f)         f(ix)             iota(n)      ix
 *   fill(s, x)             x
 *   gather(idx, a)         a[idx[ix]]        backpermute(s, f, a)  a[f(ix)]
 *   slice(a, lo, hi, st)   a[lo + ix * st]   reshape(s, a)  a[unravel(lin(ix))]
 *   transpose(a)           a[.., j, i]       reverse(a)     a[.., n - 1 - k]
 *   replicate(n, a)        a[ix[1..]]
 * The operands are read with cg_read, so they may be delayed in turn and
 * a chain of producers becomes one expression in the consumer's loop.
 *
 * The reader runs wherever the consumer reads, which may be under binders
 * of the consumer's own function (a stencil reads its window inside its
 * lambda); the producer's function is applied in the environment of the
 * producer itself (cg_delayed.nenv entries; deeper ones are set aside and
 * put back). The element checks of gather and backpermute fail at the
 * producer's site with the interpreter's message; out of range nothing is
 * read (zero instead). A backpermute that only picks its parameters
 * (ir_bp_projection) is checked once where it is prepared instead. An element read at the index just computed, in the
 * same block, is reused: the leaves of a tuple-valued map cost one
 * application of its function, not one per leaf.
 *
 * cg_seq_operand prepares a delayed operand in element code (nested
 * operations, seq_*.c), with the checks the sequential producer would make
 * before its loop, in the same order and with the same messages, and no
 * temporary array. lib/lower/delay.c does the same at plan level, where
 * the checks are host-side plan instructions.
 */
#include "codegen/seq_impl.h"
#include "interp/rtarray.h" /* RT_ARRAY_MAX_BYTES */

#include <stdio.h>
#include <string.h>

/* cg_expr's depth limit (expr.c), which nested producers count against */
#define DL_MAX_DEPTH 5000u

bool cg_delay_producer(ir_op op) {
  switch (op) {
  case IR_GENERATE:
  case IR_IOTA:
  case IR_FILL:
  case IR_MAP:
  case IR_GATHER:
  case IR_BACKPERMUTE:
  case IR_SLICE:
  case IR_RESHAPE:
  case IR_TRANSPOSE:
  case IR_REVERSE:
  case IR_REPLICATE:
    return true;
  default:
    return false;
  }
}

typedef struct dl_leaf {
  cg_delayed *d;
  uint32_t leaf;
} dl_leaf;

/* Element type of array type t (a scalar or a tuple of scalars). */
static ir_type dl_elem_type(cg_module *M, ir_type t) {
  ir_type elem = IR_TY_NONE;
  uint32_t rank = 0;
  if (!ir_ty_array_view(M->ctx, t, &elem, &rank))
    cg_error(M, AC_ERR_INTERNAL, 0, "a delayed producer of a non-array type");
  return elem;
}

/* The element of the arrays a at pos as a value of type elem (check: the
 * indices are checked, failing at `at`; out of range reads zero). */
static void dl_read_at(cg_fn *f, const cg_val *a, ir_type elem, LLVMValueRef *pos, bool check,
                       ir_ref at, cg_val *out) {
  cg_module *M = f->M;
  cg_val_alloc(M, elem, out);
  if (out->n != a->n) {
    cg_error(M, AC_ERR_INTERNAL, at, "a delayed read of %u leaves into %u", a->n, out->n);
    for (uint32_t i = 0; i < out->n; i++)
      out->l[i].v = LLVMConstNull(cg_scalar_type(M, (ac_scalar)out->l[i].sc));
    return;
  }
  for (uint32_t i = 0; i < a->n; i++)
    out->l[i].v = cg_read(f, &a->l[i], pos, check, at);
}

/* lam applied to args in the producer's environment (its depth d->nenv),
 * never with the reassociation flag of a consumer's combining chain; the
 * application's scratch is released (the element is scalars). */
static void dl_apply(cg_fn *f, const cg_delayed *d, ir_ref lam, uint32_t n, const cg_val *args,
                     cg_val *out) {
  cg_module *M = f->M;
  if (d->nenv > f->nenv) {
    cg_error(M, AC_ERR_INTERNAL, d->at, "a delayed producer read outside its scope");
    cg_val_alloc(M, dl_elem_type(M, ir_node_get(M->m, d->at)->type), out);
    for (uint32_t i = 0; i < out->n; i++)
      out->l[i].v = LLVMConstNull(cg_scalar_type(M, (ac_scalar)out->l[i].sc));
    return;
  }
  cg_val *env = f->env;
  uint32_t nenv = f->nenv, cap = f->capenv;
  bool reassoc = f->reassoc;
  /* capacity == depth: the first push copies, so the entries set aside
   * stay as they are */
  f->nenv = d->nenv;
  f->capenv = d->nenv;
  f->reassoc = false;
  LLVMValueRef mark = cg_needs_tmp(M->m, lam) ? cg_tmp_mark(f) : NULL;
  cg_apply(f, lam, n, args, out);
  if (mark)
    cg_tmp_release(f, mark);
  f->reassoc = reassoc;
  f->env = env;
  f->nenv = nenv;
  f->capenv = cap;
}

/* gather's and backpermute's check of a source position, one test per
 * dimension in order (the first failure is the call's). */
static void dl_check_pos(cg_fn *f, ir_ref at, uint32_t r, LLVMValueRef *pos, LLVMValueRef *ext) {
  cg_module *M = f->M;
  const char *what = ir_ops[ir_node_get(M->m, at)->op].spelling;
  for (uint32_t d = 0; d < r; d++) {
    char fmt[128];
    snprintf(fmt, sizeof fmt, "%s: index %%lld out of bounds for dimension %u of extent %%lld",
             what, d);
    LLVMValueRef ok = LLVMBuildICmp(M->b, LLVMIntULT, pos[d], ext[d], "");
    cg_check(f, ok, cg_site(M, at, fmt), pos[d], ext[d]);
  }
}

/* The producer's element at idx. */
static void dl_elem(cg_fn *f, cg_delayed *d, LLVMValueRef *idx, cg_val *out) {
  cg_module *M = f->M;
  LLVMBuilderRef B = M->b;
  ir_ref p = d->at;
  const ir_node *n = ir_node_get(M->m, p);
  ir_op op = (ir_op)n->op;
  ir_type elem = dl_elem_type(M, n->type);
  const cg_val *src = d->nops ? &d->ops[d->nops - 1] : NULL;
  uint32_t r = src && src->n ? src->l[0].rank : 0, q = d->rank;
  LLVMValueRef *pos = cg_new(M, (r + q + 1) * sizeof *pos);
  switch (op) {
  case IR_MAP: {
    ir_ref lam = ir_kid(M->m, p, 0);
    cg_val *args = cg_new(M, (d->nops + 1) * sizeof *args);
    for (uint32_t i = 0; i < d->nops; i++)
      dl_read_at(f, &d->ops[i], cg_seq_param(M, lam, i), idx, false, p, &args[i]);
    dl_apply(f, d, lam, d->nops, args, out);
    return;
  }
  case IR_GENERATE: {
    ir_ref lam = ir_kid(M->m, p, 1);
    cg_val *args = cg_new(M, (q + 1) * sizeof *args);
    cg_seq_index_args(f, lam, q, idx, args);
    dl_apply(f, d, lam, q, args, out);
    return;
  }
  case IR_IOTA:
    cg_seq_scalar(M, elem, AC_I64, idx[0], out);
    return;
  case IR_FILL:
    *out = d->ops[0];
    return;
  case IR_GATHER: {
    const cg_val *I = &d->ops[0];
    for (uint32_t j = 0; j < r && j < I->n; j++)
      pos[j] = cg_index_i64(f, cg_read(f, &I->l[j], idx, false, p), (ac_scalar)I->l[j].sc);
    dl_check_pos(f, p, r, pos, d->sext);
    dl_read_at(f, src, elem, pos, true, p, out);
    return;
  }
  case IR_BACKPERMUTE: {
    /* a projection was checked where it was prepared (dl_projection) */
    uint32_t *par = cg_new(M, (r + 1) * sizeof *par);
    if (ir_bp_projection(M->m, p, r, par)) {
      for (uint32_t j = 0; j < r; j++)
        pos[j] = idx[par[j]];
      break;
    }
    ir_ref lam = ir_kid(M->m, p, 1);
    cg_val *args = cg_new(M, (q + 1) * sizeof *args), res;
    cg_seq_index_args(f, lam, q, idx, args);
    dl_apply(f, d, lam, q, args, &res);
    cg_seq_ints(f, &res, r, pos);
    dl_check_pos(f, p, r, pos, d->sext);
    dl_read_at(f, src, elem, pos, true, p, out);
    return;
  }
  case IR_SLICE:
    for (uint32_t j = 0; j < r; j++)
      pos[j] = LLVMBuildAdd(B, d->start[j], LLVMBuildMul(B, idx[j], d->stride[j], ""), "");
    break;
  case IR_TRANSPOSE:
    memcpy(pos, idx, r * sizeof *pos);
    pos[r - 2] = idx[r - 1];
    pos[r - 1] = idx[r - 2];
    break;
  case IR_REVERSE:
    memcpy(pos, idx, r * sizeof *pos);
    pos[r - 1] =
        LLVMBuildSub(B, LLVMBuildSub(B, d->sext[r - 1], cg_i64(M, 1), ""), idx[r - 1], "");
    break;
  case IR_REPLICATE:
    memcpy(pos, idx + 1, r * sizeof *pos);
    break;
  case IR_RESHAPE: {
    /* the same row-major position: manifest leaves are read at it directly */
    LLVMValueRef lin = cg_linear(f, q, d->ext, idx);
    bool manifest = true;
    for (uint32_t i = 0; i < src->n; i++)
      manifest = manifest && cg_is_manifest(&src->l[i]);
    if (manifest) {
      cg_val_alloc(M, elem, out);
      for (uint32_t i = 0; i < out->n && i < src->n; i++)
        out->l[i].v = cg_load_elem(f, &src->l[i], lin);
      return;
    }
    cg_seq_unravel(f, r, d->sext, lin, pos);
    break;
  }
  default:
    cg_error(M, AC_ERR_INTERNAL, p, "%s cannot be delayed", ir_ops[op].name);
    cg_val_alloc(M, elem, out);
    for (uint32_t i = 0; i < out->n; i++)
      out->l[i].v = LLVMConstNull(cg_scalar_type(M, (ac_scalar)out->l[i].sc));
    return;
  }
  dl_read_at(f, src, elem, pos, false, p, out);
}

static LLVMValueRef dl_read(cg_fn *f, const cg_leaf *a, LLVMValueRef *idx, ir_ref at) {
  (void)at; /* errors are the producer's, at its own site */
  cg_module *M = f->M;
  const dl_leaf *l = a->env;
  cg_delayed *d = l->d;
  /* straight-line code after the last computation, at the same index: its
   * values dominate this read */
  bool hit = d->cidx && d->cblock == LLVMGetInsertBlock(M->b);
  for (uint32_t k = 0; hit && k < d->rank; k++)
    hit = d->cidx[k] == idx[k];
  if (!hit) {
    if (!d->cidx)
      d->cidx = cg_new(M, (d->rank + 1) * sizeof *d->cidx);
    dl_elem(f, d, idx, &d->cval);
    memcpy(d->cidx, idx, d->rank * sizeof *idx);
    d->cblock = LLVMGetInsertBlock(M->b);
  }
  if (l->leaf >= d->cval.n) {
    cg_error(M, AC_ERR_INTERNAL, d->at, "leaf %u of a delayed element of %u", l->leaf, d->cval.n);
    return LLVMConstNull(cg_scalar_type(M, (ac_scalar)a->sc));
  }
  return d->cval.l[l->leaf].v;
}

cg_delayed *cg_delayed_of(const cg_leaf *a) {
  return a->kind == CL_FUNC && a->read == dl_read ? ((const dl_leaf *)a->env)->d : NULL;
}

void cg_delayed_value(cg_fn *f, cg_delayed *d, cg_val *out) {
  cg_module *M = f->M;
  cg_val_alloc(M, ir_node_get(M->m, d->at)->type, out);
  dl_leaf *ls = cg_new(M, (out->n + 1) * sizeof *ls);
  for (uint32_t i = 0; i < out->n; i++) {
    cg_leaf *l = &out->l[i];
    if (l->kind != CL_ARRAY || l->rank != d->rank) {
      cg_error(M, AC_ERR_INTERNAL, d->at, "a delayed producer with a leaf that is not an array");
      return;
    }
    ls[i] = (dl_leaf){d, i};
    l->kind = CL_FUNC;
    l->v = NULL;
    l->ext = d->ext;
    l->read = dl_read;
    l->env = &ls[i];
  }
}

/* ---- delayed operands in element code ---- */

/* The check of the allocation the sequential producer would make (as
 * cg_new_array: too large when an extent alone or, with no extent zero,
 * the product exceeds the limit of the largest element leaf); after a
 * failure the extents are 0. Extents are >= 0 here. */
void cg_seq_size_check(cg_fn *f, ir_ref at, uint32_t rank, LLVMValueRef *ext) {
  cg_module *M = f->M;
  LLVMBuilderRef B = M->b;
  cg_val shape;
  cg_val_alloc(M, ir_node_get(M->m, at)->type, &shape);
  size_t elsize = 1;
  for (uint32_t i = 0; i < shape.n; i++)
    if (ac_scalar_size((ac_scalar)shape.l[i].sc) > elsize)
      elsize = ac_scalar_size((ac_scalar)shape.l[i].sc);
  LLVMValueRef limit = cg_i64(M, RT_ARRAY_MAX_BYTES / (int64_t)elsize);
  LLVMValueRef fls = LLVMConstInt(M->t_i1, 0, 0), zero = cg_i64(M, 0), one = cg_i64(M, 1);
  LLVMValueRef anybig = fls, anyzero = fls, prodbig = fls, count = one;
  for (uint32_t d = 0; d < rank; d++) {
    anybig = LLVMBuildOr(B, anybig, LLVMBuildICmp(B, LLVMIntUGT, ext[d], limit, ""), "");
    anyzero = LLVMBuildOr(B, anyzero, LLVMBuildICmp(B, LLVMIntEQ, ext[d], zero, ""), "");
    /* count * e > limit, tested by division (count <= limit throughout) */
    LLVMValueRef e1 = cg_smax(f->M, ext[d], one);
    prodbig = LLVMBuildOr(B, prodbig,
                          LLVMBuildICmp(B, LLVMIntUGT, count, LLVMBuildUDiv(B, limit, e1, ""), ""),
                          "");
    count = LLVMBuildSelect(B, prodbig, one, LLVMBuildMul(B, count, e1, ""), "");
  }
  LLVMValueRef big =
      LLVMBuildOr(B, anybig, LLVMBuildAnd(B, LLVMBuildNot(B, anyzero, ""), prodbig, ""), "");
  cg_check(f, LLVMBuildNot(B, big, ""), cg_site(M, at, "array too large"), NULL, NULL);
  for (uint32_t d = 0; d < rank; d++)
    ext[d] = LLVMBuildSelect(B, big, zero, ext[d], "");
}

/* A backpermute that only picks its parameters (ir_bp_projection) is
 * checked here, once, as lib/lower/delay.c does at plan level (the
 * same message); after a failure the extents are 0, so nothing is read. */
static void dl_projection(cg_fn *f, ir_ref p, uint32_t q, LLVMValueRef *ext, const seq_arr *src) {
  cg_module *M = f->M;
  LLVMBuilderRef B = M->b;
  uint32_t r = src->rank, *par = cg_new(M, (r + 1) * sizeof *par);
  if (!ir_bp_projection(M->m, p, r, par))
    return;
  LLVMValueRef zero = cg_i64(M, 0), anyzero = LLVMConstInt(M->t_i1, 0, 0), bad = anyzero;
  for (uint32_t k = 0; k < q; k++)
    anyzero = LLVMBuildOr(B, anyzero, LLVMBuildICmp(B, LLVMIntEQ, ext[k], zero, ""), "");
  for (uint32_t k = 0; k < r; k++) {
    char fmt[128];
    snprintf(fmt, sizeof fmt, "backpermute: index %%lld out of bounds for dimension %u of extent %%lld",
             k);
    LLVMValueRef ok = LLVMBuildOr(
        B, anyzero, LLVMBuildICmp(B, LLVMIntSLE, ext[par[k]], src->ext[k], ""), "");
    /* only the first failing dimension reports (cg_check: the first wins) */
    cg_check(f, LLVMBuildOr(B, ok, bad, ""), cg_site(M, p, fmt), src->ext[k], src->ext[k]);
    bad = LLVMBuildOr(B, bad, LLVMBuildNot(B, ok, ""), "");
  }
  for (uint32_t k = 0; k < q; k++)
    ext[k] = LLVMBuildSelect(B, bad, zero, ext[k], "");
}

/* The array operand in kid k of p as one view (checked as the sequential
 * producer checks it, message prefixed with p's name). */
static void dl_operand(cg_fn *f, cg_delayed *d, uint32_t i, ir_ref p, uint32_t k, seq_arr *view) {
  cg_seq_operand(f, ir_kid(f->M->m, p, k), &d->ops[i]);
  cg_seq_view(f, p, ir_ops[ir_node_get(f->M->m, p)->op].spelling, &d->ops[i], view);
}

/* The producer p's operands, checks and extents, in the order of
 * seq_build.c and seq_permute.c. False after a compile error. */
static bool dl_prepare(cg_fn *f, cg_delayed *d, ir_ref p) {
  cg_module *M = f->M;
  const ir_node *n = ir_node_get(M->m, p);
  ir_op op = (ir_op)n->op;
  uint32_t q = cg_seq_rank(M, n->type);
  seq_arr A = {0, NULL, 0, NULL};
  bool alloc = true; /* the sequential producer allocates its result */
  d->rank = q;
  d->ext = cg_new(M, (q + 1) * sizeof *d->ext);
  d->nops = op == IR_MAP ? n->nkids - 1 : op == IR_GATHER ? 2 : 1;
  d->ops = cg_new(M, (d->nops + 1) * sizeof *d->ops);
  switch (op) {
  case IR_MAP: {
    uint32_t total = 0;
    for (uint32_t i = 0; i < d->nops; i++) {
      cg_seq_operand(f, ir_kid(M->m, p, i + 1), &d->ops[i]);
      total += d->ops[i].n;
    }
    cg_leaf *all = cg_seq_leaves(M, total);
    for (uint32_t i = 0, off = 0; i < d->nops; off += d->ops[i].n, i++)
      memcpy(all + off, d->ops[i].l, d->ops[i].n * sizeof *all);
    cg_seq_view_leaves(f, p, "map", total, all, &A);
    if (M->st == AC_OK)
      memcpy(d->ext, A.ext, q * sizeof *d->ext);
    break;
  }
  case IR_GENERATE:
  case IR_IOTA:
    d->nops = 0;
    cg_seq_shape(f, p, ir_kid(M->m, p, 0), q, d->ext);
    break;
  case IR_FILL:
    cg_seq_shape(f, p, ir_kid(M->m, p, 0), q, d->ext);
    cg_expr(f, ir_kid(M->m, p, 1), &d->ops[0]);
    break;
  case IR_GATHER: {
    seq_arr I;
    dl_operand(f, d, 0, p, 0, &I);
    dl_operand(f, d, 1, p, 1, &A);
    if (M->st == AC_OK && A.rank != I.n)
      cg_error(M, AC_ERR_INTERNAL, p, "gather with %u indices into rank %u", I.n, A.rank);
    if (M->st == AC_OK)
      memcpy(d->ext, I.ext, q * sizeof *d->ext);
    break;
  }
  case IR_BACKPERMUTE:
    cg_seq_shape(f, p, ir_kid(M->m, p, 0), q, d->ext);
    dl_operand(f, d, 0, p, 2, &A);
    if (M->st == AC_OK)
      dl_projection(f, p, q, d->ext, &A);
    break;
  case IR_SLICE:
    alloc = false;
    dl_operand(f, d, 0, p, 0, &A);
    if (M->st != AC_OK)
      break;
    d->start = cg_new(M, (A.rank + 1) * sizeof *d->start);
    d->stride = cg_new(M, (A.rank + 1) * sizeof *d->stride);
    cg_seq_slice_bounds(f, p, &A, d->start, d->stride, d->ext);
    break;
  case IR_RESHAPE:
    alloc = false;
    cg_seq_shape(f, p, ir_kid(M->m, p, 0), q, d->ext);
    dl_operand(f, d, 0, p, 1, &A);
    if (M->st == AC_OK)
      cg_seq_reshape_check(f, p, &A, q, d->ext);
    break;
  case IR_TRANSPOSE:
  case IR_REVERSE:
  case IR_REPLICATE: {
    LLVMValueRef count = NULL;
    alloc = op == IR_REPLICATE;
    if (op == IR_REPLICATE)
      cg_seq_shape(f, p, ir_kid(M->m, p, 0), 1, &count);
    dl_operand(f, d, 0, p, op == IR_REPLICATE ? 1 : 0, &A);
    if (M->st != AC_OK || A.rank + (op == IR_REPLICATE) != q || (op == IR_TRANSPOSE && q < 2)) {
      if (M->st == AC_OK)
        cg_error(M, AC_ERR_INTERNAL, p, "%s of rank %u as rank %u", ir_ops[op].name, A.rank, q);
      break;
    }
    for (uint32_t k = 0; k < A.rank; k++)
      d->ext[op == IR_REPLICATE ? k + 1 : k] = A.ext[k];
    if (op == IR_REPLICATE)
      d->ext[0] = count;
    if (op == IR_TRANSPOSE) {
      d->ext[q - 2] = A.ext[q - 1];
      d->ext[q - 1] = A.ext[q - 2];
    }
    break;
  }
  default:
    cg_error(M, AC_ERR_INTERNAL, p, "%s cannot be delayed", ir_ops[op].name);
    break;
  }
  d->sext = A.ext;
  if (M->st == AC_OK && alloc)
    cg_seq_size_check(f, p, q, d->ext);
  return M->st == AC_OK;
}

/* What a failed preparation leaves: empty manifest arrays. */
static void dl_dummy(cg_module *M, ir_type t, cg_val *out) {
  cg_val_alloc(M, t, out);
  for (uint32_t i = 0; i < out->n; i++) {
    cg_leaf *l = &out->l[i];
    if (l->kind == CL_SCALAR) {
      l->v = LLVMConstNull(cg_scalar_type(M, (ac_scalar)l->sc));
    } else if (l->kind == CL_ARRAY) {
      l->v = LLVMConstPointerNull(M->t_ptr);
      for (uint32_t d = 0; d < l->rank; d++)
        l->ext[d] = cg_i64(M, 0);
    }
  }
}

void cg_seq_operand(cg_fn *f, ir_ref e, cg_val *out) {
  cg_module *M = f->M;
  const ir_node *n = ir_node_get(M->m, e);
  if (n->op != IR_DELAY || n->nkids != 1 ||
      !cg_delay_producer((ir_op)ir_node_get(M->m, ir_kid(M->m, e, 0))->op)) {
    cg_expr(f, e, out);
    return;
  }
  /* producers nest as deeply as the program: the expression depth guard */
  if (f->depth >= DL_MAX_DEPTH) {
    cg_error(M, AC_ERR_UNSUPPORTED, e, "expression nested too deeply to compile");
    dl_dummy(M, n->type, out);
    return;
  }
  f->depth++;
  ir_ref p = ir_kid(M->m, e, 0);
  cg_delayed *d = cg_new(M, sizeof *d);
  d->at = p;
  d->nenv = f->nenv;
  if (dl_prepare(f, d, p))
    cg_delayed_value(f, d, out);
  else
    dl_dummy(M, n->type, out);
  f->depth--;
}
