/* lib/lower/skel_permute.c: scatter and permute (write permutations) on the
 * CPU.
 *
 * Both start from a copy of dest ("scatter.copy" / "permute.copy", an
 * element-wise kernel) and then write in parallel, one iteration per source
 * element, after the interpreter's checks (lib/interp/permute.c): every
 * target index in range, or "OP: index .. out of range for extent ..".
 *
 * scatter(idx, vals, dest) must not write one position twice (the result
 * would depend on the order). The interpreter keeps a bitmap; here every
 * destination has a byte claimed with an atomic exchange, so of two writes
 * to one position exactly one finds the byte already set and fails with the
 * interpreter's message (which names the index, not the writer, so it does
 * not matter which one) and the other writes.
 *
 * permute(comb, dest, |ix| dst, a) combines a[ix] into out[dst(ix)]; comb
 * must be associative and commutative (docs/language.md §7.7), so any order
 * of combination is allowed, as in Accelerate's permute skeleton:
 *   - a single 32/64-bit integer or float leaf whose comb is one of
 *     + min max & | ^ applied to its two parameters becomes one atomic
 *     read-modify-write (LLVM atomicrmw add/min/max/umin/umax/and/or/xor/
 *     fadd); float min and max use a compare-exchange loop around the
 *     language's own fmin/fmax (cg_scalar_op), since LLVM's atomic fmin
 *     need not match glibc on signed zeros;
 *   - anything else is done under a lock: 4096 spin locks (i32) in scratch
 *     memory, destination lin taking lock lin mod 4096 (lock striping), each
 *     taken with a compare-exchange (acquire) and released with a release
 *     store around the read-combine-write of all leaves.
 * Float sums combined atomically differ from the interpreter's row-major
 * order by reassociation only.
 *
 * The host side (operands, checks, the result) and the index checks are
 * shared with the GPU skeletons (gskel_permute.c) through skel_permute.h.
 */
#include "lower/skel_permute.h"
#include "lower/skel_red.h"

#include <stdio.h>

#define PM_GRAIN LW_GRAIN
#define PM_NLOCKS 4096

typedef enum pm_mode { PM_LOCK, PM_RMW, PM_CAS } pm_mode;

void lw_pm_read_lin(cg_fn *f, const cg_val *v, ir_type elem, uint32_t rank, LLVMValueRef lin,
                    ir_ref at, cg_val *out) {
  cg_module *M = f->M;
  cg_val_alloc(M, elem, out);
  LLVMValueRef *idx = NULL;
  for (uint32_t i = 0; i < v->n && i < out->n; i++) {
    const cg_leaf *l = &v->l[i];
    if (cg_is_manifest(l)) {
      out->l[i].v = cg_load_elem(f, l, lin);
      continue;
    }
    if (!idx) {
      idx = cg_new(M, rank * sizeof *idx);
      LLVMValueRef rest = lin;
      for (uint32_t d = rank; d-- > 1;) {
        idx[d] = LLVMBuildURem(M->b, rest, v->l[0].ext[d], "");
        rest = LLVMBuildUDiv(M->b, rest, v->l[0].ext[d], "");
      }
      idx[0] = rest;
    }
    out->l[i].v = cg_read(f, l, idx, false, at);
  }
}

/* As the interpreter's `locate` for writes: "index 5 out of range for
 * extent 3" (rank 1) or, from the first offending dimension on, the whole
 * index and shape, "index (1, 5) out of range for shape [2, 3]" (its 2 *
 * rank values; cg_check_n). */
LLVMValueRef lw_pm_locate(cg_fn *f, ir_ref at, const char *what, uint32_t rank, LLVMValueRef *pos,
                          LLVMValueRef *ext, LLVMValueRef *ok) {
  cg_module *M = f->M;
  ir_buf fmt;
  ir_buf_init(&fmt, M->ctx);
  if (rank == 1) {
    ir_buf_printf(&fmt, "%s: index %%lld out of range for extent %%lld", what);
  } else {
    ir_buf_printf(&fmt, "%s: index (", what);
    for (uint32_t d = 0; d < rank; d++)
      ir_buf_puts(&fmt, d ? ", %lld" : "%lld");
    ir_buf_puts(&fmt, ") out of range for shape [");
    for (uint32_t d = 0; d < rank; d++)
      ir_buf_puts(&fmt, d ? ", %lld" : "%lld");
    ir_buf_putc(&fmt, ']');
  }
  LLVMValueRef *vals = cg_new(M, 2 * (size_t)rank * sizeof *vals);
  LLVMValueRef lin = cg_i64(M, 0), good = LLVMConstInt(M->t_i1, 1, 0);
  for (uint32_t d = 0; d < rank; d++) {
    good = LLVMBuildAnd(M->b, good, LLVMBuildICmp(M->b, LLVMIntULT, pos[d], ext[d], ""), "");
    lin = LLVMBuildAdd(M->b, LLVMBuildMul(M->b, lin, ext[d], ""), pos[d], "");
    vals[d] = pos[d];
    vals[rank + d] = ext[d];
  }
  if (fmt.oom)
    cg_error(M, AC_ERR_NOMEM, at, "out of memory");
  else if (rank == 1)
    cg_check(f, good, cg_site(M, at, ir_buf_cstr(&fmt)), pos[0], ext[0]);
  else
    cg_check_n(f, good, cg_site(M, at, ir_buf_cstr(&fmt)), 2 * rank, vals);
  ir_buf_free(&fmt);
  *ok = good;
  return LLVMBuildSelect(M->b, good, lin, cg_i64(M, 0), "");
}

/* Pointer to element lin of a manifest leaf. */
static LLVMValueRef pm_elem_ptr(cg_fn *f, const cg_leaf *l, LLVMValueRef lin) {
  return LLVMBuildGEP2(f->M->b, cg_mem_type(f->M, (ac_scalar)l->sc), l->v, &lin, 1, "");
}

/* "OP.copy": out = dest element by element; chunk 0 also zeroes the locks
 * (locks may be NULL). */
static uint32_t pm_copy_kernel(lw *L, ir_ref e, const char *kind, const lw_val *dest, ir_type elem,
                               uint32_t rank, const lw_val *out, const lw_val *flags,
                               const lw_val *locks) {
  cg_module *M = L->M;
  uint32_t k;
  cg_fn *f = lw_kernel_begin(L, e, kind, PM_GRAIN, &k);
  cg_val dv, ov, fv, lv, x;
  lw_load(L, f, k, dest, &dv);
  lw_load(L, f, k, out, &ov);
  if (flags)
    lw_load(L, f, k, flags, &fv);
  if (locks) {
    lw_load(L, f, k, locks, &lv);
    LLVMBasicBlockRef join = sk_if(f, LLVMBuildICmp(M->b, LLVMIntEQ, f->chunk, cg_i64(M, 0), ""));
    cg_loop zl;
    LLVMValueRef z = cg_loop_begin(f, &zl, cg_i64(M, 0), cg_i64(M, PM_NLOCKS));
    cg_store_elem(f, &lv.l[0], z, LLVMConstInt(M->t_i32, 0, 0));
    cg_loop_end(f, &zl);
    sk_endif(f, join);
  }
  cg_loop il;
  LLVMValueRef i = cg_loop_begin(f, &il, f->lo, f->hi);
  lw_pm_read_lin(f, &dv, elem, rank, i, e, &x);
  sk_store(f, &ov, i, &x);
  if (flags)
    cg_store_elem(f, &fv.l[0], i, LLVMConstInt(M->t_i8, 0, 0));
  cg_loop_end(f, &il);
  lw_kernel_end(L, f);
  return k;
}

/* Destination extents of out (its first leaf). */
static LLVMValueRef *pm_ext(const cg_val *ov) {
  return ov->l[0].ext;
}

/* ---- scatter ---- */

uint32_t lw_pm_dup_site(cg_module *M, ir_ref e, uint32_t r) {
  ir_buf fmt;
  ir_buf_init(&fmt, M->ctx);
  ir_buf_puts(&fmt, r == 1 ? "scatter: index %lld" : "scatter: index (");
  for (uint32_t d = 0; r > 1 && d < r; d++)
    ir_buf_puts(&fmt, d ? ", %lld" : "%lld");
  ir_buf_puts(&fmt, r == 1 ? " written twice" : ") written twice");
  uint32_t site = 0;
  if (fmt.oom)
    cg_error(M, AC_ERR_NOMEM, e, "out of memory");
  else
    site = cg_site(M, e, ir_buf_cstr(&fmt));
  ir_buf_free(&fmt);
  return site;
}

static uint32_t pm_scatter_kernel(lw *L, ir_ref e, const lw_val *idx, const lw_val *vals,
                                  ir_type ielem, ir_type velem, uint32_t q, uint32_t r,
                                  const lw_val *out, const lw_val *flags) {
  cg_module *M = L->M;
  uint32_t sdup = lw_pm_dup_site(M, e, r);
  uint32_t k;
  cg_fn *f = lw_kernel_begin(L, e, "scatter", PM_GRAIN, &k);
  cg_val iv, vv, ov, fv, x;
  lw_load(L, f, k, idx, &iv);
  lw_load(L, f, k, vals, &vv);
  lw_load(L, f, k, out, &ov);
  lw_load(L, f, k, flags, &fv);
  LLVMValueRef *pos = cg_new(M, r * sizeof *pos), ok;
  cg_loop il;
  LLVMValueRef i = cg_loop_begin(f, &il, f->lo, f->hi);
  cg_val ix;
  lw_pm_read_lin(f, &iv, ielem, q, i, e, &ix);
  for (uint32_t d = 0; d < r && d < ix.n; d++)
    pos[d] = lw_cg_int64(f, ix.l[d].v, (ac_scalar)ix.l[d].sc);
  LLVMValueRef lin = lw_pm_locate(f, e, "scatter", r, pos, pm_ext(&ov), &ok);
  LLVMBasicBlockRef skip = sk_if(f, ok);
  LLVMValueRef old =
      LLVMBuildAtomicRMW(M->b, LLVMAtomicRMWBinOpXchg, pm_elem_ptr(f, &fv.l[0], lin),
                         LLVMConstInt(M->t_i8, 1, 0), LLVMAtomicOrderingMonotonic, 0);
  LLVMValueRef fresh = LLVMBuildICmp(M->b, LLVMIntEQ, old, LLVMConstInt(M->t_i8, 0, 0), "");
  cg_check_n(f, fresh, sdup, r, pos);
  LLVMBasicBlockRef dup = sk_if(f, fresh);
  lw_pm_read_lin(f, &vv, velem, q, i, e, &x);
  sk_store(f, &ov, lin, &x);
  sk_endif(f, dup);
  sk_endif(f, skip);
  cg_loop_end(f, &il);
  lw_kernel_end(L, f);
  return k;
}

bool lw_pm_scatter_begin(lw *L, ir_ref e, lw_pm_scatter *s, lw_val *out) {
  cg_module *M = L->M;
  ac_module *m = L->m;
  lw_val *v = s->v; /* idx, vals, dest */
  for (uint32_t i = 0; i < 3; i++)
    if (!lw_operand(L, e, i, &v[i]))
      return false;
  uint32_t qv;
  if (!ir_ty_array_view(L->ctx, v[0].type, &s->ielem, &s->q) ||
      !ir_ty_array_view(L->ctx, v[1].type, &s->velem, &qv) ||
      !ir_ty_array_view(L->ctx, v[2].type, &s->delem, &s->r) || lw_num_leaves(L, &v[0]) != s->r) {
    cg_error(M, AC_ERR_INTERNAL, e, "scatter with operands of the wrong kinds");
    return false;
  }
  /* idx and vals side by side, as the interpreter checks them */
  lw_check_shapes(L, e, "scatter", 2, v);
  lw_check_shapes(L, e, "scatter", 1, &v[2]);
  uint32_t *ext = cg_new(M, s->r * sizeof *ext);
  for (uint32_t d = 0; d < s->r; d++)
    ext[d] = lw_extent(L, &v[2], 0, d);
  lw_fresh(L, ir_node_get(m, e)->type, out);
  lw_alloc_arrays(L, out, ext, e);
  s->dsize = sk_extent_product(L, &v[2], 0, s->r);
  s->isize = sk_extent_product(L, &v[0], 0, s->q);
  return M->st == AC_OK;
}

bool lw_skel_scatter(lw *L, ir_ref e, lw_val *out) {
  cg_module *M = L->M;
  lw_pm_scatter s;
  if (!lw_pm_scatter_begin(L, e, &s, out))
    return false;
  lw_val flags;
  sk_scratch(L, ir_ty_scalar(L->ctx, AC_U8), s.dsize, e, &flags);
  uint32_t k1 = pm_copy_kernel(L, e, "scatter.copy", &s.v[2], s.delem, s.r, out, &flags, NULL);
  uint32_t k2 =
      pm_scatter_kernel(L, e, &s.v[0], &s.v[1], s.ielem, s.velem, s.q, s.r, out, &flags);
  lw_launch(L, k1, s.dsize, PL_AUTO);
  lw_launch(L, k2, s.isize, PL_AUTO);
  sk_free(L, &flags);
  return M->st == AC_OK;
}

/* ---- permute ---- */

typedef struct pm_ctx {
  lw *L;
  ir_ref e, comb, dst;
  ir_type delem, aelem;
  uint32_t r, q;
  bool tmp;
  pm_mode mode;
  LLVMAtomicRMWBinOp rmw; /* PM_RMW */
  ir_op op;               /* PM_CAS: IR_MIN or IR_MAX */
  bool swapped;           /* the body is op(x, acc) rather than op(acc, x) */
  lw_val dest, a, out, locks;
} pm_ctx;

bool lw_pm_comb_op(lw *L, ir_ref comb, ir_op *op, bool *swapped) {
  ac_module *m = L->m;
  const ir_node *fn = ir_node_get(m, comb);
  ir_ref body = IR_NONE;
  if (fn->op == IR_LAM && fn->attr == 2)
    body = ir_kid(m, comb, 0);
  else if (fn->op == IR_FNREF && fn->attr >= 0 && (uint64_t)fn->attr < m->nfuncs &&
           !m->funcs[fn->attr].is_extern && m->funcs[fn->attr].nparams == 2)
    body = m->funcs[fn->attr].body;
  if (!body)
    return false;
  const ir_node *b = ir_node_get(m, body);
  if (b->nkids != 2)
    return false;
  const ir_node *k0 = ir_node_get(m, ir_kid(m, body, 0)), *k1 = ir_node_get(m, ir_kid(m, body, 1));
  if (k0->op != IR_VAR || k1->op != IR_VAR || k0->attr == k1->attr || k0->attr > 1 ||
      k1->attr > 1 || k0->attr < 0 || k1->attr < 0)
    return false;
  /* the first parameter (the accumulator) is variable 1 */
  *swapped = k0->attr == 0;
  *op = (ir_op)b->op;
  return true;
}

/* Chooses the atomic form of comb, if it has one (see the header). */
static void pm_classify(pm_ctx *c) {
  lw *L = c->L;
  c->mode = PM_LOCK;
  ac_scalar sc;
  if (!ir_ty_is_scalar(L->ctx, c->delem, &sc) || !(sc == AC_I32 || sc == AC_I64 || sc == AC_U32 ||
                                                   sc == AC_U64 || sc == AC_F32 || sc == AC_F64))
    return;
  if (!lw_pm_comb_op(L, c->comb, &c->op, &c->swapped))
    return;
  bool fl = sc == AC_F32 || sc == AC_F64, sgn = sc == AC_I32 || sc == AC_I64;
  switch (c->op) {
  case IR_ADD:
    c->rmw = fl ? LLVMAtomicRMWBinOpFAdd : LLVMAtomicRMWBinOpAdd;
    break;
  case IR_MIN:
  case IR_MAX:
    if (fl) {
      c->mode = PM_CAS;
      return;
    }
    if (c->op == IR_MIN)
      c->rmw = sgn ? LLVMAtomicRMWBinOpMin : LLVMAtomicRMWBinOpUMin;
    else
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
  c->mode = PM_RMW;
}

/* out[lin] = min/max(out[lin], x) by compare-exchange on the bits. */
static void pm_cas(cg_fn *f, const pm_ctx *c, const cg_leaf *ol, LLVMValueRef lin, LLVMValueRef x) {
  cg_module *M = f->M;
  ac_scalar sc = (ac_scalar)ol->sc;
  LLVMTypeRef ft = cg_scalar_type(M, sc), it = sc == AC_F32 ? M->t_i32 : M->t_i64;
  unsigned size = sc == AC_F32 ? 4 : 8;
  LLVMValueRef ptr = pm_elem_ptr(f, ol, lin), slot = cg_alloca(f, it);
  LLVMValueRef first = LLVMBuildLoad2(M->b, it, ptr, "");
  LLVMSetOrdering(first, LLVMAtomicOrderingMonotonic);
  LLVMSetAlignment(first, size);
  LLVMBuildStore(M->b, first, slot);
  LLVMBasicBlockRef loop = cg_block(f, "cas.loop"), done = cg_block(f, "cas.done");
  LLVMBuildBr(M->b, loop);
  LLVMPositionBuilderAtEnd(M->b, loop);
  LLVMValueRef old = LLVMBuildLoad2(M->b, it, slot, "");
  LLVMValueRef ops[2] = {LLVMBuildBitCast(M->b, old, ft, ""), x};
  if (c->swapped) {
    ops[1] = ops[0];
    ops[0] = x;
  }
  LLVMValueRef nv = LLVMBuildBitCast(M->b, cg_scalar_op(f, c->op, sc, ops), it, "");
  LLVMValueRef pair = LLVMBuildAtomicCmpXchg(M->b, ptr, old, nv, LLVMAtomicOrderingMonotonic,
                                             LLVMAtomicOrderingMonotonic, 0);
  LLVMBuildStore(M->b, LLVMBuildExtractValue(M->b, pair, 0, ""), slot);
  LLVMBuildCondBr(M->b, LLVMBuildExtractValue(M->b, pair, 1, ""), done, loop);
  LLVMPositionBuilderAtEnd(M->b, done);
}

/* out[lin] = comb(out[lin], x) under lock lin mod PM_NLOCKS. */
static void pm_locked(cg_fn *f, const pm_ctx *c, const cg_val *ov, const cg_leaf *locks,
                      LLVMValueRef lin, const cg_val *x) {
  cg_module *M = f->M;
  LLVMValueRef zero = LLVMConstInt(M->t_i32, 0, 0), one = LLVMConstInt(M->t_i32, 1, 0);
  LLVMValueRef lk = pm_elem_ptr(f, locks, LLVMBuildAnd(M->b, lin, cg_i64(M, PM_NLOCKS - 1), ""));
  LLVMBasicBlockRef take = cg_block(f, "lock.take"), wait = cg_block(f, "lock.wait"),
                    held = cg_block(f, "lock.held");
  LLVMBuildBr(M->b, take);
  LLVMPositionBuilderAtEnd(M->b, take);
  LLVMValueRef pair = LLVMBuildAtomicCmpXchg(M->b, lk, zero, one, LLVMAtomicOrderingAcquire,
                                             LLVMAtomicOrderingMonotonic, 0);
  LLVMBuildCondBr(M->b, LLVMBuildExtractValue(M->b, pair, 1, ""), held, wait);
  /* test-and-test-and-set: spin on plain reads until the lock looks free */
  LLVMPositionBuilderAtEnd(M->b, wait);
  LLVMValueRef cur = LLVMBuildLoad2(M->b, M->t_i32, lk, "");
  LLVMSetOrdering(cur, LLVMAtomicOrderingMonotonic);
  LLVMSetAlignment(cur, 4);
  LLVMBuildCondBr(M->b, LLVMBuildICmp(M->b, LLVMIntEQ, cur, zero, ""), take, wait);
  LLVMPositionBuilderAtEnd(M->b, held);
  cg_val old, nv;
  sk_load(f, ov, c->delem, lin, &old);
  sk_apply2(f, c->comb, &old, x, false, false, &nv);
  sk_store(f, ov, lin, &nv);
  LLVMValueRef rel = LLVMBuildStore(M->b, zero, lk);
  LLVMSetOrdering(rel, LLVMAtomicOrderingRelease);
  LLVMSetAlignment(rel, 4);
}

static uint32_t pm_permute_kernel(const pm_ctx *c) {
  lw *L = c->L;
  cg_module *M = L->M;
  uint32_t k;
  cg_fn *f = lw_kernel_begin(L, c->e, "permute", PM_GRAIN, &k);
  cg_val av, ov, lv, x, dv;
  lw_load(L, f, k, &c->a, &av);
  lw_load(L, f, k, &c->out, &ov);
  if (c->mode == PM_LOCK)
    lw_load(L, f, k, &c->locks, &lv);
  cg_val *ix = cg_new(M, c->q * sizeof *ix);
  LLVMValueRef *pos = cg_new(M, c->r * sizeof *pos), ok;
  cg_loop il;
  LLVMValueRef i = cg_loop_begin(f, &il, f->lo, f->hi);
  LLVMValueRef mark = c->tmp ? cg_tmp_mark(f) : NULL;
  LLVMValueRef rest = i;
  for (uint32_t d = c->q; d-- > 0;) {
    LLVMValueRef v = rest;
    if (d > 0) {
      v = LLVMBuildURem(M->b, rest, av.l[0].ext[d], "");
      rest = LLVMBuildUDiv(M->b, rest, av.l[0].ext[d], "");
    }
    sk_i64_val(f, v, &ix[d]);
  }
  cg_apply(f, c->dst, c->q, ix, &dv);
  for (uint32_t d = 0; d < c->r && d < dv.n; d++)
    pos[d] = lw_cg_int64(f, dv.l[d].v, (ac_scalar)dv.l[d].sc);
  LLVMValueRef lin = lw_pm_locate(f, c->e, "permute", c->r, pos, pm_ext(&ov), &ok);
  LLVMBasicBlockRef skip = sk_if(f, ok);
  lw_pm_read_lin(f, &av, c->aelem, c->q, i, c->e, &x);
  if (c->mode == PM_RMW) {
    LLVMBuildAtomicRMW(M->b, c->rmw, pm_elem_ptr(f, &ov.l[0], lin), x.l[0].v,
                       LLVMAtomicOrderingMonotonic, 0);
  } else if (c->mode == PM_CAS) {
    pm_cas(f, c, &ov.l[0], lin, x.l[0].v);
  } else {
    pm_locked(f, c, &ov, &lv.l[0], lin, &x);
  }
  sk_endif(f, skip);
  if (c->tmp)
    cg_tmp_release(f, mark);
  cg_loop_end(f, &il);
  lw_kernel_end(L, f);
  return k;
}

bool lw_pm_permute_begin(lw *L, ir_ref e, lw_pm_permute *p, lw_val *out) {
  cg_module *M = L->M;
  ac_module *m = L->m;
  p->comb = ir_kid(m, e, 0);
  p->dst = ir_kid(m, e, 2);
  if (!lw_operand(L, e, 1, &p->dest) || !lw_operand(L, e, 3, &p->a))
    return false;
  if (!ir_ty_array_view(L->ctx, p->dest.type, &p->delem, &p->r) ||
      !ir_ty_array_view(L->ctx, p->a.type, &p->aelem, &p->q)) {
    cg_error(M, AC_ERR_INTERNAL, e, "permute of values that are not arrays");
    return false;
  }
  p->tmp = cg_needs_tmp(m, p->comb) || cg_needs_tmp(m, p->dst);
  lw_check_shapes(L, e, "permute", 1, &p->dest);
  lw_check_shapes(L, e, "permute", 1, &p->a);
  uint32_t *ext = cg_new(M, p->r * sizeof *ext);
  for (uint32_t d = 0; d < p->r; d++)
    ext[d] = lw_extent(L, &p->dest, 0, d);
  lw_fresh(L, ir_node_get(m, e)->type, out);
  lw_alloc_arrays(L, out, ext, e);
  p->dsize = sk_extent_product(L, &p->dest, 0, p->r);
  p->asize = sk_extent_product(L, &p->a, 0, p->q);
  return M->st == AC_OK;
}

bool lw_skel_permute(lw *L, ir_ref e, lw_val *out) {
  cg_module *M = L->M;
  lw_pm_permute h;
  if (!lw_pm_permute_begin(L, e, &h, out))
    return false;
  pm_ctx c = {.L = L, .e = e, .comb = h.comb, .dst = h.dst, .delem = h.delem, .aelem = h.aelem,
              .r = h.r, .q = h.q, .tmp = h.tmp, .dest = h.dest, .a = h.a, .out = *out};
  pm_classify(&c);
  if (c.mode == PM_LOCK)
    sk_scratch(L, ir_ty_scalar(L->ctx, AC_I32), lw_x_const(L, PM_NLOCKS), e, &c.locks);
  uint32_t k1 = pm_copy_kernel(L, e, "permute.copy", &c.dest, c.delem, c.r, out, NULL,
                               c.mode == PM_LOCK ? &c.locks : NULL);
  uint32_t k2 = pm_permute_kernel(&c);
  lw_launch(L, k1, h.dsize, PL_AUTO);
  lw_launch(L, k2, h.asize, PL_AUTO);
  if (c.mode == PM_LOCK)
    sk_free(L, &c.locks);
  return M->st == AC_OK;
}
