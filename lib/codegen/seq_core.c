/* lib/codegen/seq_core.c: cg_array_op and the helpers of the sequential
 * array operations.
 *
 * An array operation nested in element code (a lambda given to another
 * operation, a rec body, a scalar kernel) is computed right there by plain
 * loops: this is the "sequentialise" end of Copperhead's mapping of nested
 * parallelism (outer levels parallel, inner levels sequential per thread).
 * cg_array_op dispatches on the operation; the operations live in
 * seq_build.c (construction, map, filter, stencil), seq_reduce.c (folds and
 * scans), seq_permute.c (permutations and index-space changes) and
 * seq_loop.c (iterate, while, rec). This file holds what they share, so
 * that no operation has its own copy of a loop nest, a shape check, an
 * element load or a runtime check (see seq_impl.h for the conventions).
 *
 * Requirements: verified IR; f's environment binds the node's free
 * variables. Results are manifest leaves in the worker's temporary memory
 * (or views of manifest inputs); the caller brackets whole elements with
 * cg_tmp_mark/cg_tmp_release, and the operations bracket each application
 * of a function that may allocate, so memory stays proportional to the
 * live arrays rather than to the work done.
 */
#include "codegen/seq_impl.h"

#include <string.h>

/* ---- values and types ---- */

cg_leaf *cg_seq_leaves(cg_module *M, uint32_t n) {
  return cg_new(M, (n ? n : 1) * sizeof(cg_leaf));
}

/* Harmless stand-in after a compile error: zeros and null pointers. */
static void dummy_value(cg_module *M, ir_type t, cg_val *out) {
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

ir_type cg_seq_param(cg_module *M, ir_ref lam, uint32_t i) {
  const ir_node *n = ir_node_get(M->m, lam);
  ir_typeinfo ti = ir_ty_info(M->ctx, n->type);
  if (ti.kind == TK_FN && i < ti.n)
    return ti.fields[i];
  if (n->op == IR_FNREF && n->attr >= 0 && (uint64_t)n->attr < M->m->nfuncs &&
      i < M->m->funcs[n->attr].nparams)
    return ir_func_param(M->m, &M->m->funcs[n->attr], i);
  return IR_TY_NONE;
}

uint32_t cg_seq_rank(cg_module *M, ir_type t) {
  ir_typeinfo ti = ir_ty_info(M->ctx, t);
  if (ti.kind == TK_ARRAY)
    return ti.rank;
  return ti.kind == TK_TUPLE && ti.n > 0 ? cg_seq_rank(M, ti.fields[0]) : 0;
}

void cg_seq_scalar(cg_module *M, ir_type t, ac_scalar sc, LLVMValueRef v, cg_val *out) {
  out->type = t;
  out->n = 1;
  out->l = cg_seq_leaves(M, 1);
  out->l[0].kind = CL_SCALAR;
  out->l[0].sc = (uint8_t)sc;
  out->l[0].v = v;
}

void cg_seq_ints(cg_fn *f, const cg_val *v, uint32_t n, LLVMValueRef *out) {
  cg_module *M = f->M;
  if (v->n < n) {
    cg_error(M, AC_ERR_INTERNAL, 0, "%u integers expected, the value has %u", n, v->n);
    for (uint32_t i = 0; i < n; i++)
      out[i] = cg_i64(M, 0);
    return;
  }
  for (uint32_t i = 0; i < n; i++)
    out[i] = cg_index_i64(f, v->l[i].v, (ac_scalar)v->l[i].sc);
}

void cg_seq_shape(cg_fn *f, ir_ref at, ir_ref shape, uint32_t rank, LLVMValueRef *ext) {
  cg_val v;
  cg_expr(f, shape, &v);
  cg_seq_ints(f, &v, rank, ext);
  for (uint32_t d = 0; d < rank; d++) {
    LLVMValueRef ok = LLVMBuildICmp(f->M->b, LLVMIntSGE, ext[d], cg_i64(f->M, 0), "");
    cg_seq_check(f, at, ok, "negative extent {0}", 1, &ext[d]);
    ext[d] = cg_smax(f->M, ext[d], cg_i64(f->M, 0));
  }
}

void cg_seq_put_list(ir_buf *b, char open, char close, uint32_t rank, uint32_t d, uint32_t first,
                     uint32_t others) {
  if (rank == 1 && open == '(') { /* interp_fmt_index writes a rank-1 index bare */
    ir_buf_printf(b, "{%u}", d == 0 ? first : others);
    return;
  }
  ir_buf_putc(b, open);
  for (uint32_t j = 0; j < rank; j++)
    ir_buf_printf(b, "%s{%u}", j ? ", " : "", j == d ? first : others + j);
  ir_buf_putc(b, close);
}

void cg_seq_check_buf(cg_fn *f, ir_ref at, LLVMValueRef ok, ir_buf *b, uint32_t n,
                      const LLVMValueRef *vals) {
  if (b->oom)
    cg_error(f->M, AC_ERR_NOMEM, at, "out of memory");
  else
    cg_seq_check(f, at, ok, ir_buf_cstr(b), n, vals);
  ir_buf_free(b);
}

void cg_seq_view_leaves(cg_fn *f, ir_ref at, const char *what, uint32_t n, cg_leaf *l,
                        seq_arr *out) {
  cg_module *M = f->M;
  LLVMBuilderRef B = M->b;
  out->n = n;
  out->l = l;
  out->rank = n ? l[0].rank : 0;
  out->ext = cg_new(M, (out->rank + 1) * sizeof *out->ext);
  for (uint32_t i = 0; i < n; i++)
    if (l[i].kind == CL_SCALAR || !l[i].ext || l[i].rank != out->rank) {
      cg_error(M, AC_ERR_INTERNAL, at, "%s: array operand of an unexpected kind", what);
      out->n = 0;
      return;
    }
  if (n == 0) {
    cg_error(M, AC_ERR_INTERNAL, at, "array value without leaves");
    return;
  }
  uint32_t r = out->rank;
  memcpy(out->ext, l[0].ext, r * sizeof *out->ext);
  LLVMValueRef *vals = cg_new(M, (2 * (size_t)r + 2) * sizeof *vals);
  for (uint32_t i = 1; i < n; i++) {
    /* one check per dimension, in the interpreter's order (leaf by leaf):
     * the first that fails names the first mismatching leaf */
    for (uint32_t j = 0; j < r; j++) {
      vals[2 + j] = l[0].ext[j];
      vals[2 + r + j] = l[i].ext[j];
    }
    for (uint32_t d = 0; d < r; d++) {
      if (l[i].ext[d] == l[0].ext[d]) /* one value: (xs, xs), fields of one result */
        continue;
      vals[0] = l[0].ext[d];
      vals[1] = l[i].ext[d];
      ir_buf tb;
      ir_buf_init(&tb, M->ctx);
      ir_buf_printf(&tb, "%s%sarrays have different shapes: ", what, *what ? ": " : "");
      cg_seq_put_list(&tb, '[', ']', r, d, 0, 2);
      ir_buf_puts(&tb, " and ");
      cg_seq_put_list(&tb, '[', ']', r, d, 1, 2 + r);
      cg_seq_check_buf(f, at, LLVMBuildICmp(B, LLVMIntEQ, vals[0], vals[1], ""), &tb, 2 + 2 * r,
                       vals);
      out->ext[d] = cg_smin(f->M, out->ext[d], l[i].ext[d]);
    }
  }
}

void cg_seq_view(cg_fn *f, ir_ref at, const char *what, const cg_val *v, seq_arr *out) {
  cg_seq_view_leaves(f, at, what, v->n, v->l, out);
}

LLVMValueRef cg_seq_size(cg_fn *f, uint32_t rank, LLVMValueRef *ext) {
  LLVMValueRef s = cg_i64(f->M, 1);
  for (uint32_t d = 0; d < rank; d++)
    s = LLVMBuildMul(f->M->b, s, ext[d], "");
  return s;
}

LLVMValueRef cg_seq_bytes(cg_fn *f, const cg_leaf *l) {
  LLVMValueRef es = cg_i64(f->M, (int64_t)ac_scalar_size((ac_scalar)l->sc));
  return LLVMBuildMul(f->M->b, cg_seq_size(f, l->rank, l->ext), es, "");
}

/* After allocating: when the call has failed (a size too large, memory
 * exhausted) the data pointers may be the runtime's small dummy, so every
 * extent reads as 0 and no loop touches them. */
static void guard_extents(cg_fn *f, uint32_t rank, LLVMValueRef *ext) {
  LLVMValueRef failed = cg_failed(f);
  for (uint32_t d = 0; d < rank; d++)
    ext[d] = LLVMBuildSelect(f->M->b, failed, cg_i64(f->M, 0), ext[d], "");
}

static void seq_alloc(cg_fn *f, ir_ref at, ir_type t, uint32_t rank, LLVMValueRef *ext, cg_val *out,
                      seq_arr *view, bool group) {
  cg_module *M = f->M;
  cg_val_alloc(M, t, out);
  view->rank = rank;
  view->ext = cg_new(M, (rank + 1) * sizeof *view->ext);
  bool ok = true;
  for (uint32_t i = 0; i < out->n; i++)
    ok = ok && out->l[i].kind == CL_ARRAY && out->l[i].rank == rank;
  if (!ok) { /* generation goes on over no elements */
    cg_error(M, AC_ERR_INTERNAL, at, "array operation with a result that is not an array");
    dummy_value(M, t, out);
    for (uint32_t d = 0; d < rank; d++)
      view->ext[d] = cg_i64(M, 0);
    view->n = 0;
    view->l = out->l;
    return;
  }
  memcpy(view->ext, ext, rank * sizeof *ext);
  if (group)
    cg_coop_new_arrays(f, at, rank, ext, out->n, out->l);
  else
    for (uint32_t i = 0; i < out->n; i++)
      cg_new_array(f, (ac_scalar)out->l[i].sc, rank, ext, at, &out->l[i]);
  if (out->n)
    guard_extents(f, rank, view->ext);
  for (uint32_t i = 0; i < out->n; i++) {
    out->l[i].ext = cg_new(M, (rank + 1) * sizeof *out->l[i].ext);
    memcpy(out->l[i].ext, view->ext, rank * sizeof *view->ext);
  }
  view->n = out->n;
  view->l = out->l;
}

void cg_seq_alloc(cg_fn *f, ir_ref at, ir_type t, uint32_t rank, LLVMValueRef *ext, cg_val *out,
                  seq_arr *view) {
  seq_alloc(f, at, t, rank, ext, out, view, false);
}

void cg_seq_alloc_elems(cg_fn *f, ir_ref at, ir_type t, uint32_t rank, LLVMValueRef *ext,
                        cg_val *out, seq_arr *view) {
  seq_alloc(f, at, t, rank, ext, out, view, f->coop != CG_COOP_NONE);
}

void cg_seq_unravel(cg_fn *f, uint32_t rank, LLVMValueRef *ext, LLVMValueRef lin,
                    LLVMValueRef *idx) {
  LLVMBuilderRef B = f->M->b;
  for (uint32_t d = rank; d-- > 0;) {
    /* a zero extent has no elements; max(.., 1) only keeps the division defined */
    LLVMValueRef e = cg_smax(f->M, ext[d], cg_i64(f->M, 1));
    idx[d] = d ? LLVMBuildURem(B, lin, e, "") : lin;
    if (d)
      lin = LLVMBuildUDiv(B, lin, e, "");
  }
}

void cg_seq_load(cg_fn *f, const seq_arr *a, LLVMValueRef *idx, LLVMValueRef lin, ir_type elem,
                 cg_val *out) {
  cg_module *M = f->M;
  out->type = elem;
  out->n = a->n;
  out->l = cg_seq_leaves(M, a->n);
  LLVMValueRef *ix = idx;
  for (uint32_t i = 0; i < a->n; i++) {
    const cg_leaf *src = &a->l[i];
    LLVMValueRef v;
    if (cg_is_manifest(src)) {
      if (!lin)
        lin = cg_linear(f, a->rank, a->ext, idx);
      v = cg_load_elem(f, src, lin);
    } else {
      if (!ix) {
        ix = cg_new(M, (a->rank + 1) * sizeof *ix);
        cg_seq_unravel(f, a->rank, a->ext, lin, ix);
      }
      v = cg_read(f, src, ix, false, 0);
    }
    out->l[i].kind = CL_SCALAR;
    out->l[i].sc = src->sc;
    out->l[i].v = v;
  }
}

void cg_seq_store(cg_fn *f, const seq_arr *a, LLVMValueRef lin, const cg_val *elem) {
  if (elem->n != a->n) {
    cg_error(f->M, AC_ERR_INTERNAL, 0, "element of %u leaves for %u arrays", elem->n, a->n);
    return;
  }
  for (uint32_t i = 0; i < a->n; i++)
    cg_store_elem(f, &a->l[i], lin, elem->l[i].v);
}

void cg_seq_index_args(cg_fn *f, ir_ref lam, uint32_t q, LLVMValueRef *idx, cg_val *args) {
  for (uint32_t d = 0; d < q; d++)
    cg_seq_scalar(f->M, cg_seq_param(f->M, lam, d), AC_I64, idx[d], &args[d]);
}

void cg_seq_apply_store(cg_fn *f, ir_ref lam, uint32_t nargs, const cg_val *args, const seq_arr *o,
                        LLVMValueRef lin) {
  LLVMValueRef mark = cg_seq_mark(f, cg_needs_tmp(f->M->m, lam));
  cg_val r;
  cg_apply(f, lam, nargs, args, &r);
  cg_seq_store(f, o, lin, &r);
  cg_seq_release(f, mark);
}

void cg_seq_copy(cg_fn *f, const cg_leaf *src, const cg_leaf *dst) {
  cg_module *M = f->M;
  LLVMValueRef bytes = cg_seq_bytes(f, dst);
  if (cg_is_manifest(src)) {
    LLVMBuildMemCpy(M->b, dst->v, 1, src->v, 1, bytes);
    return;
  }
  /* a leaf known by its reader: element by element in row-major order */
  cg_loop l;
  LLVMValueRef k = cg_loop_begin(f, &l, cg_i64(M, 0), cg_seq_size(f, dst->rank, dst->ext));
  LLVMValueRef *ix = cg_new(M, (src->rank + 1) * sizeof *ix);
  cg_seq_unravel(f, src->rank, src->ext, k, ix);
  cg_store_elem(f, dst, k, cg_read(f, src, ix, false, 0));
  cg_loop_end(f, &l);
}

void cg_seq_manifest(cg_fn *f, ir_ref at, cg_val *v) {
  cg_module *M = f->M;
  cg_leaf *l = NULL;
  for (uint32_t i = 0; i < v->n; i++) {
    if (v->l[i].kind != CL_FUNC)
      continue;
    if (!v->l[i].ext) {
      cg_error(M, AC_ERR_INTERNAL, at, "a window or the array a rec defines used as a value");
      return;
    }
    if (!l) { /* copy-on-write: v's leaves may be shared with other values */
      l = cg_seq_leaves(M, v->n);
      memcpy(l, v->l, v->n * sizeof *l);
    }
    cg_leaf fresh;
    memset(&fresh, 0, sizeof fresh);
    cg_new_array(f, (ac_scalar)l[i].sc, l[i].rank, l[i].ext, at, &fresh);
    fresh.ext = cg_new(M, (l[i].rank + 1) * sizeof *fresh.ext);
    memcpy(fresh.ext, l[i].ext, l[i].rank * sizeof *fresh.ext);
    guard_extents(f, fresh.rank, fresh.ext);
    cg_seq_copy(f, &l[i], &fresh);
    l[i] = fresh;
  }
  if (l)
    v->l = l;
}

/* ---- control flow and services ---- */

void cg_seq_nest_begin(cg_fn *f, seq_nest *n, uint32_t rank, LLVMValueRef *ext) {
  n->rank = rank;
  n->loops = cg_new(f->M, (rank + 1) * sizeof *n->loops);
  n->idx = cg_new(f->M, (rank + 1) * sizeof *n->idx);
  for (uint32_t d = 0; d < rank; d++)
    n->idx[d] = cg_loop_begin(f, &n->loops[d], cg_i64(f->M, 0), ext[d]);
}

void cg_seq_nest_end(cg_fn *f, seq_nest *n) {
  for (uint32_t d = n->rank; d-- > 0;)
    cg_loop_end(f, &n->loops[d]);
}

LLVMValueRef cg_seq_share_begin(cg_fn *f, cg_loop *l, LLVMValueRef from, LLVMValueRef to) {
  cg_module *M = f->M;
  LLVMBuilderRef B = M->b;
  LLVMValueRef t, g;
  cg_coop_rank(f, f->coop, &t, &g);
  LLVMValueRef left =
      cg_smax(M, LLVMBuildSub(B, LLVMBuildSub(B, to, from, ""), t, ""), cg_i64(M, 0));
  LLVMValueRef cnt =
      LLVMBuildUDiv(B, LLVMBuildAdd(B, left, LLVMBuildSub(B, g, cg_i64(M, 1), ""), ""), g, "");
  LLVMValueRef u = cg_loop_begin(f, l, cg_i64(M, 0), cnt);
  f->coop = CG_COOP_NONE;
  return LLVMBuildAdd(B, LLVMBuildAdd(B, from, t, ""), LLVMBuildMul(B, u, g, ""), "");
}

void cg_seq_elems_begin(cg_fn *f, seq_nest *n, uint32_t rank, LLVMValueRef *ext) {
  n->coop = f->coop;
  if (n->coop == CG_COOP_NONE) {
    cg_seq_nest_begin(f, n, rank, ext);
    return;
  }
  /* thread t of G: elements t, t + G, ..., unravelled */
  cg_module *M = f->M;
  n->rank = rank;
  n->loops = cg_new(M, sizeof *n->loops);
  n->idx = cg_new(M, (rank + 1) * sizeof *n->idx);
  LLVMValueRef lin = cg_seq_share_begin(f, &n->loops[0], cg_i64(M, 0), cg_seq_size(f, rank, ext));
  cg_seq_unravel(f, rank, ext, lin, n->idx);
}

void cg_seq_elems_end(cg_fn *f, seq_nest *n) {
  if (n->coop == CG_COOP_NONE) {
    cg_seq_nest_end(f, n);
    return;
  }
  cg_loop_end(f, &n->loops[0]);
  f->coop = n->coop;
  cg_coop_sync(f, n->coop);
}

LLVMBasicBlockRef cg_seq_if(cg_fn *f, LLVMValueRef cond) {
  LLVMBasicBlockRef then = cg_block(f, "seq.then"), after = cg_block(f, "seq.endif");
  LLVMBuildCondBr(f->M->b, cond, then, after);
  LLVMPositionBuilderAtEnd(f->M->b, then);
  return after;
}

void cg_seq_endif(cg_fn *f, LLVMBasicBlockRef after) {
  LLVMBuildBr(f->M->b, after);
  LLVMPositionBuilderAtEnd(f->M->b, after);
}

LLVMValueRef cg_seq_mark(cg_fn *f, bool needed) {
  return needed ? cg_tmp_mark(f) : NULL;
}

void cg_seq_release(cg_fn *f, LLVMValueRef mark) {
  if (mark)
    cg_tmp_release(f, mark);
}

void cg_seq_check(cg_fn *f, ir_ref at, LLVMValueRef ok, const char *tmpl, uint32_t n,
                  const LLVMValueRef *vals) {
  cg_module *M = f->M;
  if (LLVMIsAConstantInt(ok) && LLVMConstIntGetZExtValue(ok))
    return;
  /* Constants are printed into the format; every other placeholder is a
   * %lld with its value, in the template's order (a value written twice is
   * passed twice), so the message has all the interpreter's numbers. */
  ir_buf b;
  ir_buf_init(&b, M->ctx);
  LLVMValueRef *args = NULL;
  uint32_t nargs = 0;
  for (const char *p = tmpl; *p; p++) {
    if (*p == '%') {
      ir_buf_puts(&b, "%%");
      continue;
    }
    if (*p != '{') {
      ir_buf_putc(&b, *p);
      continue;
    }
    uint32_t k = 0;
    for (p++; *p >= '0' && *p <= '9'; p++)
      k = k * 10 + (uint32_t)(*p - '0');
    if (*p != '}' || k >= n || nargs == RT_FAIL_VALS) {
      cg_error(M, AC_ERR_INTERNAL, at, "bad message template \"%s\"", tmpl);
      ir_buf_free(&b);
      return;
    }
    if (LLVMIsAConstantInt(vals[k])) {
      ir_buf_printf(&b, "%lld", (long long)LLVMConstIntGetSExtValue(vals[k]));
    } else {
      if (!args)
        args = cg_new(M, RT_FAIL_VALS * sizeof *args);
      ir_buf_puts(&b, "%lld");
      args[nargs++] = vals[k];
    }
  }
  if (b.oom)
    cg_error(M, AC_ERR_NOMEM, at, "out of memory");
  else
    cg_check_n(f, ok, cg_site(M, at, ir_buf_cstr(&b)), nargs, args);
  ir_buf_free(&b);
}

/* ---- the dispatcher ---- */

void cg_array_op(cg_fn *f, ir_ref e, cg_val *out) {
  cg_module *M = f->M;
  /* Nested operations are exact sequential code: reassociation is allowed
   * only in the combining chain a skeleton itself generates. */
  bool reassoc = f->reassoc;
  f->reassoc = false;
  /* what an operation that stops at a compile error leaves behind */
  dummy_value(M, ir_node_get(M->m, e)->type, out);
  switch ((ir_op)ir_node_get(M->m, e)->op) {
  case IR_GENERATE:
    cg_seq_generate(f, e, out);
    break;
  case IR_IOTA:
    cg_seq_iota(f, e, out);
    break;
  case IR_FILL:
    cg_seq_fill(f, e, out);
    break;
  case IR_ARRLIT:
    cg_seq_arrlit(f, e, out);
    break;
  case IR_MAP:
    cg_seq_map(f, e, out);
    break;
  case IR_FILTER:
    cg_seq_filter(f, e, out);
    break;
  case IR_STENCIL:
    cg_seq_stencil(f, e, out);
    break;
  case IR_FOLD:
    cg_seq_fold(f, e, out);
    break;
  case IR_FOLD_SEG:
    cg_seq_fold_seg(f, e, out);
    break;
  case IR_SCAN:
  case IR_SCAN_INCL:
  case IR_SCANR:
  case IR_SCANR_INCL:
    cg_seq_scan(f, e, out);
    break;
  case IR_SCAN_SEG:
  case IR_SCAN_INCL_SEG:
    cg_seq_scan_seg(f, e, out);
    break;
  case IR_GATHER:
    cg_seq_gather(f, e, out);
    break;
  case IR_BACKPERMUTE:
    cg_seq_backpermute(f, e, out);
    break;
  case IR_SCATTER:
    cg_seq_scatter(f, e, out);
    break;
  case IR_PERMUTE:
    cg_seq_permute(f, e, out);
    break;
  case IR_SLICE:
    cg_seq_slice(f, e, out);
    break;
  case IR_RESHAPE:
    cg_seq_reshape(f, e, out);
    break;
  case IR_TRANSPOSE:
  case IR_REVERSE:
  case IR_REPLICATE:
    cg_seq_reorder(f, e, out);
    break;
  case IR_ITERATE:
  case IR_WHILE:
    cg_seq_loop(f, e, out);
    break;
  case IR_REC:
    cg_seq_rec(f, e, out);
    break;
  case IR_DELAY: /* not an operand of an operation (cg_seq_operand): p itself */
  case IR_TILED: /* shared-memory tiles are for kernels: sequential code reads e */
  case IR_SIZED: /* early allocation is for plans */
    cg_expr(f, ir_kid(M->m, e, 0), out);
    break;
  default:
    cg_error(M, AC_ERR_INTERNAL, e, "%s is not an array operation",
             ir_ops[ir_node_get(M->m, e)->op].name);
    break;
  }
  f->reassoc = reassoc;
}
