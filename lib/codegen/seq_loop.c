/* lib/codegen/seq_loop.c: iterate, while and rec in element code
 * (docs/language.md §7.12, §7.14), following lib/interp/build.c and rec.c.
 *
 * iterate / while keep their state in a cg_var. A state with arrays is
 * copied, after each step, into one of two buffers per array leaf that the
 * loop owns and alternates between (double buffering): the step's result
 * may be its argument, a view of it or an array of the enclosing code, so
 * it is never adopted as the next state, and the step's scratch (above a
 * mark taken before it) is released once the copy is made. A buffer grows
 * only when a state does not fit; that step's scratch then stays (it lies
 * below the new buffer), so memory stays bounded by the largest states
 * unless states keep growing. The loop asks the runtime each time round
 * whether the call has failed: after a failure values are harmless but may
 * never meet the exit condition.
 *
 * rec computes the elements in the interpreter's order exactly: by
 * increasing wavefront a.x (the verifier's schedule a), row-major within a
 * wavefront. Rather than sorting the points (interp), the code enumerates
 * each wavefront directly: with p the last dimension where a_p != 0, it
 * loops over the dimensions before p, solves a.x = t for x_p, and loops
 * over the dimensions after p (where a is 0); in that order the points of
 * a wavefront come out row-major. The array being defined is a CL_FUNC
 * value whose reader checks a read as interp_rec_read does (inside the
 * domain, in an earlier wavefront) with logical indices; an all-zero
 * schedule is one wavefront in row-major order.
 */
#include "codegen/seq_impl.h"

#include <stdlib.h>
#include <string.h>

/* ---- iterate and while ---- */

/* The two buffers of one array leaf of the state: the current state's
 * capacity, and the other buffer with its capacity (0: not ours). */
typedef struct seq_bufs {
  LLVMValueRef cap_cur, ptr_oth, cap_oth; /* allocas */
} seq_bufs;

/* The state after a step: each array leaf copied into its other buffer
 * (grown when too small), then the buffers swap roles. Returns the
 * condition that nothing was allocated, i.e. that the step's scratch can be
 * released. Leaves the builder where the loop goes on; a failed allocation
 * branches to `exit`. */
static LLVMValueRef next_state(cg_fn *f, ir_ref at, const cg_val *S, const cg_val *S2,
                               seq_bufs *bufs, LLVMBasicBlockRef exit, cg_val *N) {
  cg_module *M = f->M;
  LLVMBuilderRef B = M->b;
  LLVMValueRef fits = LLVMConstInt(M->t_i1, 1, 0);
  LLVMValueRef *bytes = cg_new(M, (S2->n + 1) * sizeof *bytes);
  for (uint32_t i = 0; i < S2->n; i++) {
    if (!bufs[i].cap_oth)
      continue;
    bytes[i] = cg_seq_bytes(f, &S2->l[i]);
    LLVMValueRef cap = LLVMBuildLoad2(B, M->t_i64, bufs[i].cap_oth, "");
    LLVMValueRef grow = LLVMBuildICmp(B, LLVMIntSGT, bytes[i], cap, "");
    fits = LLVMBuildAnd(B, fits, LLVMBuildNot(B, grow, ""), "");
    LLVMBasicBlockRef after = cg_seq_if(f, grow);
    LLVMBuildStore(B, cg_tmp_alloc(f, bytes[i], at), bufs[i].ptr_oth);
    LLVMBuildStore(B, bytes[i], bufs[i].cap_oth);
    cg_seq_endif(f, after);
  }
  LLVMBasicBlockRef go = cg_block(f, "state.copy");
  LLVMBuildCondBr(B, cg_failed(f), exit, go);
  LLVMPositionBuilderAtEnd(B, go);
  N->type = S2->type;
  N->n = S2->n;
  N->l = cg_seq_leaves(M, S2->n);
  for (uint32_t i = 0; i < S2->n; i++) {
    N->l[i] = S2->l[i];
    if (!bufs[i].cap_oth)
      continue;
    cg_leaf *d = &N->l[i];
    d->kind = CL_ARRAY;
    d->read = NULL;
    d->env = NULL;
    d->ro = false; /* the loop's own buffer, which it writes */
    d->v = LLVMBuildLoad2(B, M->t_ptr, bufs[i].ptr_oth, "");
    cg_seq_copy(f, &S2->l[i], d);
    /* swap: the old state's memory is the next step's other buffer */
    LLVMValueRef cur = LLVMBuildLoad2(B, M->t_i64, bufs[i].cap_cur, "");
    LLVMBuildStore(B, LLVMBuildLoad2(B, M->t_i64, bufs[i].cap_oth, ""), bufs[i].cap_cur);
    LLVMBuildStore(B, cur, bufs[i].cap_oth);
    LLVMBuildStore(B, S->l[i].v, bufs[i].ptr_oth);
  }
  return fits;
}

/* iterate(n, f, x) and while(c, f, x). */
void cg_seq_loop(cg_fn *f, ir_ref e, cg_val *out) {
  cg_module *M = f->M;
  LLVMBuilderRef B = M->b;
  bool is_while = ir_node_get(M->m, e)->op == IR_WHILE;
  ir_type t = ir_node_get(M->m, e)->type;
  ir_ref cond = ir_kid(M->m, e, 0), step = ir_kid(M->m, e, 1);
  LLVMValueRef count = NULL, iter = NULL;
  if (!is_while) {
    cg_val nv;
    cg_expr(f, ir_kid(M->m, e, 0), &nv);
    cg_seq_ints(f, &nv, 1, &count);
  }
  cg_val x;
  cg_expr(f, ir_kid(M->m, e, 2), &x);
  cg_seq_manifest(f, e, &x);
  cg_var st;
  cg_var_new(f, t, &st);
  cg_var_store(f, &st, &x);
  if (M->st != AC_OK)
    return;
  /* the initial state is not ours: capacity 0 keeps its memory unwritten */
  seq_bufs *bufs = cg_new(M, (x.n + 1) * sizeof *bufs);
  bool arrays = false;
  for (uint32_t i = 0; i < x.n; i++) {
    if (x.l[i].kind != CL_ARRAY)
      continue;
    arrays = true;
    bufs[i].cap_cur = cg_alloca(f, M->t_i64);
    bufs[i].cap_oth = cg_alloca(f, M->t_i64);
    bufs[i].ptr_oth = cg_alloca(f, M->t_ptr);
    LLVMBuildStore(B, cg_i64(M, 0), bufs[i].cap_cur);
    LLVMBuildStore(B, cg_i64(M, 0), bufs[i].cap_oth);
    LLVMBuildStore(B, x.l[i].v, bufs[i].ptr_oth);
  }
  if (!is_while) {
    iter = cg_alloca(f, M->t_i64);
    LLVMBuildStore(B, cg_i64(M, 0), iter);
  }
  LLVMBasicBlockRef head = cg_block(f, "state.head"), body = cg_block(f, "state.body"),
                    exit = cg_block(f, "state.exit");
  LLVMBuildBr(B, head);
  LLVMPositionBuilderAtEnd(B, head);
  LLVMValueRef go = LLVMBuildNot(B, cg_failed(f), "");
  cg_val S, c, S2, N;
  if (is_while) {
    LLVMValueRef mark = cg_seq_mark(f, cg_needs_tmp(M->m, cond));
    cg_var_load(f, &st, &S);
    cg_apply(f, cond, 1, &S, &c);
    cg_seq_release(f, mark);
    if (c.n == 1)
      go = LLVMBuildAnd(B, go, c.l[0].v, "");
    else
      cg_error(M, AC_ERR_INTERNAL, e, "while condition without a bool result");
  } else {
    LLVMValueRef i = LLVMBuildLoad2(B, M->t_i64, iter, "");
    go = LLVMBuildAnd(B, go, LLVMBuildICmp(B, LLVMIntSLT, i, count, ""), "");
  }
  LLVMBuildCondBr(B, go, body, exit);
  LLVMPositionBuilderAtEnd(B, body);
  LLVMValueRef mark = cg_seq_mark(f, arrays || cg_needs_tmp(M->m, step));
  cg_var_load(f, &st, &S);
  cg_apply(f, step, 1, &S, &S2);
  if (arrays) {
    LLVMValueRef fits = next_state(f, e, &S, &S2, bufs, exit, &N);
    cg_var_store(f, &st, &N);
    if (mark) {
      LLVMBasicBlockRef after = cg_seq_if(f, fits);
      cg_seq_release(f, mark);
      cg_seq_endif(f, after);
    }
  } else {
    cg_var_store(f, &st, &S2);
    cg_seq_release(f, mark);
  }
  if (!is_while) {
    LLVMValueRef i = LLVMBuildLoad2(B, M->t_i64, iter, "");
    LLVMBuildStore(B, LLVMBuildAdd(B, i, cg_i64(M, 1), ""), iter);
  }
  LLVMBuildBr(B, head);
  LLVMPositionBuilderAtEnd(B, exit);
  cg_var_load(f, &st, out);
}

/* ---- rec ---- */

typedef struct seq_rec {
  uint32_t n;
  LLVMValueRef *lo;     /* logical index of element 0, per dimension */
  LLVMValueRef *ext;    /* the domain's extents (0 after a failure) */
  seq_arr o;            /* where the points are stored: the table, or the window */
  LLVMValueRef *sext;   /* the storage's extents per dimension (the window's: ring, ext1) */
  /* a window whose leaves are all of one scalar type keeps a point's leaves
   * side by side (aos of them) in the one array wl: fewer pointers live in
   * the walk (else aos is 0 and o holds one array per leaf) */
  uint32_t aos;
  cg_leaf wl;
  const int64_t *sched; /* a, n coefficients */
  LLVMValueRef cur;     /* alloca: a.x of the point being computed */
  const char *name;
  cg_rec_reads rd;      /* the body's reads of the array (rec_reads.c) */
  /* rec_rows: the point computed last, which the reads in `carried` (the
   * neighbour before in the innermost dimension's walk) take instead of a
   * load; NULL: none */
  cg_var *carry;
  const ir_ref *carried;
  uint32_t ncarried;
  /* while generating points whose every read is inside the domain
   * (rec_rows' interior): no domain checks; the reads of outside arrays
   * proven there, and the condition that they are */
  bool proven;
  const ir_ref *inputs;
  uint32_t ninputs;
  LLVMValueRef inputs_ok;
  /* a window (cg_seq_rec_fold): o holds `ring` rows of the two
   * dimensions' second, point (x0, x1) in row x0 % ring; and the fold of
   * each row, its function and accumulator */
  int64_t ring;
  ir_ref fold_lam;
  uint32_t fold_field; /* the field of each point folded (cg_val_field), UINT32_MAX: all */
  cg_var *fold_acc;
  const cg_val *fold_z;
  const seq_arr *fold_out;
  /* rec_diag: the reads load `dring` (one leaf per field), where the read
   * at walking offsets (o0, o1) of the point in row drow is element
   * dslot[-(o0 + o1)] + drow + o0; dsigma: the walking directions */
  cg_leaf *dring;
  LLVMValueRef *dslot, drow;
  int dsigma[2];
  uint64_t ddead; /* leaves (bit l) no read uses, which the ring leaves out */
} seq_rec;

typedef struct seq_rfield {
  const seq_rec *r;
  uint32_t field;
} seq_rfield;

/* Leaf `leaf` of the stored point lin. */
static LLVMValueRef rec_load(cg_fn *f, const seq_rec *s, uint32_t leaf, LLVMValueRef lin) {
  if (!s->aos)
    return cg_load_elem(f, &s->o.l[leaf], lin);
  LLVMBuilderRef B = f->M->b;
  lin = LLVMBuildAdd(B, LLVMBuildMul(B, lin, cg_i64(f->M, s->aos), ""), cg_i64(f->M, leaf), "");
  return cg_load_elem(f, &s->wl, lin);
}

static void rec_store(cg_fn *f, const seq_rec *s, LLVMValueRef lin, const cg_val *r) {
  if (!s->aos) {
    cg_seq_store(f, &s->o, lin, r);
    return;
  }
  LLVMBuilderRef B = f->M->b;
  LLVMValueRef base = LLVMBuildMul(B, lin, cg_i64(f->M, s->aos), "");
  for (uint32_t i = 0; i < r->n && i < s->aos; i++)
    cg_store_elem(f, &s->wl, LLVMBuildAdd(B, base, cg_i64(f->M, i), ""), r->l[i].v);
}

/* d[i1, .., in] in the body: logical indices, read only inside the domain
 * and from an earlier wavefront (interp_rec_read's checks and messages). */
static LLVMValueRef rec_read(cg_fn *f, const cg_leaf *leaf, LLVMValueRef *idx, ir_ref at) {
  cg_module *M = f->M;
  LLVMBuilderRef B = M->b;
  const seq_rfield *rf = leaf->env;
  const seq_rec *s = rf->r;
  uint32_t n = s->n;
  LLVMValueRef inside = LLVMConstInt(M->t_i1, 1, 0), key = cg_i64(M, 0), lin = cg_i64(M, 0);
  /* an ordered read is on an earlier wavefront whenever it is inside */
  bool ordered = cg_rec_read_ordered(&s->rd, at);
  bool proven = s->proven && ordered;
  for (uint32_t d = 0; d < n; d++) {
    /* idx - lo as unsigned: exact whenever idx >= lo */
    LLVMValueRef k = LLVMBuildSub(B, idx[d], s->lo[d], "");
    if (!proven) {
      LLVMValueRef in = LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntSGE, idx[d], s->lo[d], ""),
                                     LLVMBuildICmp(B, LLVMIntULT, k, s->ext[d], ""), "");
      inside = LLVMBuildAnd(B, inside, in, "");
    }
    if (s->sched[d] && !ordered)
      key = LLVMBuildAdd(B, key, LLVMBuildMul(B, cg_i64(M, s->sched[d]), k, ""), "");
    if (s->ring && d == 0)
      k = LLVMBuildURem(B, k, cg_i64(M, s->ring), "");
    lin = LLVMBuildAdd(B, LLVMBuildMul(B, lin, s->sext[d], ""), k, "");
  }
  LLVMValueRef before =
      ordered ? LLVMConstInt(M->t_i1, 1, 0)
              : LLVMBuildICmp(B, LLVMIntSLT, key, LLVMBuildLoad2(B, M->t_i64, s->cur, ""), "");
  const char *why[2] = {"outside the domain", "before it is computed"};
  for (int w = proven; w < 1 + !ordered; w++) {
    ir_buf b;
    ir_buf_init(&b, M->ctx);
    ir_buf_printf(&b, "rec: read of %s", s->name);
    cg_seq_put_list(&b, '[', ']', n, UINT32_MAX, 0, 0);
    ir_buf_printf(&b, " %s", why[w]);
    LLVMValueRef ok = w == 0 ? inside : LLVMBuildOr(B, LLVMBuildNot(B, inside, ""), before, "");
    cg_seq_check_buf(f, at, ok, &b, n, idx);
  }
  if (s->dring && cg_leaf_in(s->ddead, rf->field)) /* projected away */
    return LLVMConstNull(cg_scalar_type(M, (ac_scalar)leaf->sc));
  if (s->dring) { /* the anti-diagonals' ring */
    int64_t o[2];
    cg_rec_read_offsets(&s->rd, at, 2, o);
    int64_t o0 = s->dsigma[0] * o[0], back = -(o0 + s->dsigma[1] * o[1]);
    LLVMValueRef el =
        LLVMBuildAdd(B, s->dslot[back], LLVMBuildAdd(B, s->drow, cg_i64(M, o0), ""), "");
    el = LLVMBuildSelect(B, LLVMBuildAnd(B, inside, before, ""), el, cg_i64(M, 0), "");
    return cg_load_elem(f, &s->dring[rf->field], el);
  }
  if (s->carry && bsearch(&at, s->carried, s->ncarried, sizeof at, cg_ref_cmp)) {
    cg_val v;
    cg_var_load(f, s->carry, &v);
    return v.l[rf->field].v;
  }
  lin = LLVMBuildSelect(B, LLVMBuildAnd(B, inside, before, ""), lin, cg_i64(M, 0), "");
  return rec_load(f, s, rf->field, lin);
}

/* Extent of a dimension from its bounds (interp's extent()): hi - lo + 1
 * (inclusive) or hi - lo, in unsigned arithmetic; failures read as 0. */
static LLVMValueRef rec_extent(cg_fn *f, ir_ref at, LLVMValueRef lo, LLVMValueRef hi, bool incl) {
  cg_module *M = f->M;
  LLVMBuilderRef B = M->b;
  LLVMValueRef inc = cg_i64(M, incl), zero = cg_i64(M, 0);
  LLVMValueRef ge = LLVMBuildICmp(B, LLVMIntSGE, hi, lo, "");
  LLVMValueRef e = LLVMBuildAdd(B, LLVMBuildSub(B, hi, lo, ""), inc, "");
  LLVMValueRef huge = LLVMBuildICmp(B, LLVMIntSLT, e, zero, ""); /* above INT64_MAX */
  cg_seq_check(f, at, LLVMBuildNot(B, LLVMBuildAnd(B, ge, huge, ""), ""), "array too large", 0,
               NULL);
  LLVMValueRef neg = LLVMBuildSub(B, LLVMBuildSub(B, lo, hi, ""), inc, "");
  cg_seq_check(f, at, LLVMBuildOr(B, ge, LLVMBuildICmp(B, LLVMIntEQ, neg, zero, ""), ""),
               "negative extent -{0}", 1, &neg);
  return LLVMBuildSelect(B, LLVMBuildAnd(B, ge, LLVMBuildNot(B, huge, ""), ""), e, zero, "");
}

/* The interpreter's schedule_fits: sum |a_d| * (ext_d - 1) must fit in
 * int64, so that no key of the domain overflows. */
static LLVMValueRef rec_fits(cg_fn *f, const seq_rec *s) {
  cg_module *M = f->M;
  LLVMBuilderRef B = M->b;
  LLVMValueRef fits = LLVMConstInt(M->t_i1, 1, 0), bound = cg_i64(M, 0), one = cg_i64(M, 1);
  for (uint32_t d = 0; d < s->n; d++) {
    int64_t a = s->sched[d];
    if (a == INT64_MIN)
      return LLVMConstInt(M->t_i1, 0, 0);
    if (a == 0)
      continue;
    LLVMValueRef c = cg_i64(M, a < 0 ? -a : a);
    LLVMValueRef span = cg_smax(f->M, LLVMBuildSub(B, s->ext[d], one, ""), cg_i64(M, 0));
    LLVMValueRef room = LLVMBuildSDiv(B, LLVMBuildSub(B, cg_i64(M, INT64_MAX), bound, ""),
                                      cg_smax(f->M, span, one), "");
    LLVMValueRef over = LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntNE, span, cg_i64(M, 0), ""),
                                     LLVMBuildICmp(B, LLVMIntSGT, c, room, ""), "");
    fits = LLVMBuildAnd(B, fits, LLVMBuildNot(B, over, ""), "");
    bound = LLVMBuildSelect(B, over, bound,
                            LLVMBuildAdd(B, bound, LLVMBuildMul(B, c, span, ""), ""), "");
  }
  return fits;
}

/* Binds the array (self) and the logical indices of point pt (0-based)
 * for the body, and marks temporary memory if the body needs it; returns
 * the mark for rec_unbind. */
static LLVMValueRef rec_bind(cg_fn *f, const seq_rec *s, ir_ref body, const cg_val *self,
                             LLVMValueRef *pt) {
  cg_module *M = f->M;
  ir_type i64 = ir_ty_scalar(M->ctx, AC_I64);
  cg_env_push(f, self);
  for (uint32_t d = 0; d < s->n; d++) {
    cg_val iv;
    cg_seq_scalar(M, i64, AC_I64, LLVMBuildAdd(M->b, s->lo[d], pt[d], ""), &iv);
    cg_env_push(f, &iv);
  }
  return cg_seq_mark(f, cg_needs_tmp(M->m, body));
}

static void rec_unbind(cg_fn *f, const seq_rec *s, LLVMValueRef mark) {
  cg_seq_release(f, mark);
  cg_env_pop(f, s->n + 1);
}

/* While generating points inside the reads' reach (`proven`): no domain
 * checks, and the reads of outside arrays proven there (s->inputs)
 * unchecked; rec_proven_end restores what was before. */
typedef struct rec_unchecked {
  const ir_ref *refs;
  uint32_t n;
} rec_unchecked;

static rec_unchecked rec_proven_begin(cg_fn *f, seq_rec *s, bool proven) {
  rec_unchecked was = {f->unchecked, f->nunchecked};
  if (proven) {
    s->proven = true;
    f->unchecked = s->inputs;
    f->nunchecked = s->ninputs;
  }
  return was;
}

static void rec_proven_end(cg_fn *f, seq_rec *s, rec_unchecked was) {
  s->proven = false;
  f->unchecked = was.refs;
  f->nunchecked = was.n;
}

/* s->fold_acc = the fold's function applied to it and the fields of
 * point value v it folds (res: the new value). */
static void rec_fold_step(cg_fn *f, const seq_rec *s, const cg_val *v, cg_val *res) {
  cg_val x = *v;
  if (s->fold_field != UINT32_MAX)
    cg_val_field(f->M, v, s->fold_field, &x);
  cg_seq_step(f, s->fold_lam, s->fold_acc, &x, false, res);
}

/* The body at point pt (0-based): binds the array and the logical indices,
 * stores the element. */
static void rec_point(cg_fn *f, const seq_rec *s, ir_ref body, const cg_val *self,
                      LLVMValueRef *pt) {
  cg_module *M = f->M;
  LLVMValueRef lin;
  if (s->ring) {
    LLVMValueRef row = LLVMBuildURem(M->b, pt[0], cg_i64(M, s->ring), "");
    lin = LLVMBuildAdd(M->b, LLVMBuildMul(M->b, row, s->sext[1], ""), pt[1], "");
  } else {
    lin = cg_linear(f, s->n, s->sext, pt);
  }
  LLVMValueRef mark = rec_bind(f, s, body, self, pt);
  cg_val r, res;
  cg_expr(f, body, &r);
  rec_store(f, s, lin, &r);
  if (s->carry)
    cg_var_store(f, s->carry, &r);
  if (s->fold_acc) /* the row's fold, in the row's order (sigma[1] > 0) */
    rec_fold_step(f, s, &r, &res);
  rec_unbind(f, s, mark);
}

/* How far the reads reach back in dimension d walked in direction sigma. */
static int64_t rec_reach(const seq_rec *s, uint32_t d, int sigma) {
  int64_t r = sigma > 0 ? -s->rd.offmin[d] : s->rd.offmax[d];
  return r > 0 ? r : 0;
}

/* The reads of outside arrays that the interior of rec_rows proves in
 * range (s->inputs), and the condition that it does (s->inputs_ok). The
 * interior's 0-based coordinates in dimension d walked upwards are
 * reach..ext - 1, downwards 0..ext - 1 - reach. */
static void rec_inputs(cg_fn *f, seq_rec *s, const int *sigma) {
  cg_module *M = f->M;
  LLVMBuilderRef B = M->b;
  LLVMValueRef *xmin = cg_new(M, (s->n + 1) * sizeof *xmin);
  LLVMValueRef *xmax = cg_new(M, (s->n + 1) * sizeof *xmax);
  for (uint32_t d = 0; d < s->n; d++) {
    LLVMValueRef r = cg_i64(M, rec_reach(s, d, sigma[d]));
    LLVMValueRef last = LLVMBuildSub(B, s->ext[d], cg_i64(M, 1), "");
    xmin[d] = sigma[d] > 0 ? r : cg_i64(M, 0);
    xmax[d] = sigma[d] > 0 ? last : LLVMBuildSub(B, last, r, "");
  }
  s->inputs_ok = LLVMConstInt(M->t_i1, 1, 0);
  s->inputs = cg_rec_inputs_proven(f, &s->rd, s->lo, xmin, xmax, &s->inputs_ok, &s->ninputs);
}

/* The 0-based coordinate of walking coordinate y in dimension d. */
static LLVMValueRef rec_walk(cg_fn *f, const seq_rec *s, uint32_t d, int sigma, LLVMValueRef y) {
  cg_module *M = f->M;
  if (sigma > 0)
    return y;
  return LLVMBuildSub(M->b, LLVMBuildSub(M->b, s->ext[d], cg_i64(M, 1), ""), y, "");
}

/* Sets up the carried neighbour of rec_rows: the reads of the point before
 * in the innermost dimension's walk (d[.., i_n - 1] walking upwards). */
static void rec_carry(cg_fn *f, seq_rec *s, ir_type arr, int sigma) {
  cg_module *M = f->M;
  s->carried = sigma > 0 ? s->rd.prev : s->rd.next;
  s->ncarried = sigma > 0 ? s->rd.nprev : s->rd.nnext;
  ir_type elem;
  uint32_t rank;
  if (!s->ncarried || !ir_ty_array_view(M->ctx, arr, &elem, &rank))
    return;
  s->carry = cg_new(M, sizeof *s->carry);
  cg_var_new(f, elem, s->carry);
}

/* The points of walking coordinates from..to-1 of the innermost dimension
 * of the row at pt[0..n-2], without domain checks (and with the reads of
 * outside arrays proven, s->inputs) when `proven`. */
static void rec_columns(cg_fn *f, seq_rec *s, ir_ref body, const cg_val *self, LLVMValueRef *pt,
                        const int *sigma, LLVMValueRef from, LLVMValueRef to, bool proven) {
  uint32_t n = s->n;
  rec_unchecked was = rec_proven_begin(f, s, proven);
  cg_loop inner;
  LLVMValueRef j = cg_loop_begin(f, &inner, from, to);
  pt[n - 1] = rec_walk(f, s, n - 1, sigma[n - 1], j);
  rec_point(f, s, body, self, pt);
  cg_loop_end(f, &inner);
  rec_proven_end(f, s, was);
}

/* Every point of the domain (not empty) row by row, dimension d walked
 * downwards where sigma[d] < 0: an order in which every uniform read comes
 * after the point it reads when the reads' offsets in each dimension are
 * all of the walk's opposite sign (or zero). Only for recurrences whose
 * every read is uniform and ordered (cg_rec_reads.uniform), which need no
 * wavefront key. */
static void rec_rows(cg_fn *f, seq_rec *s, ir_ref body, const cg_val *self, const int *sigma) {
  cg_module *M = f->M;
  LLVMBuilderRef B = M->b;
  uint32_t n = s->n;
  LLVMValueRef *pt = cg_new(M, (n + 1) * sizeof *pt);
  rec_carry(f, s, self->type, sigma[n - 1]);
  rec_inputs(f, s, sigma);
  /* the dimensions before the innermost, then the innermost: a window
   * folds each row, from z at its start to its result at its end */
  seq_nest outer;
  cg_seq_nest_begin(f, &outer, n - 1, s->ext);
  if (s->fold_acc)
    cg_var_store(f, s->fold_acc, s->fold_z);
  for (uint32_t d = 0; d + 1 < n; d++)
    pt[d] = rec_walk(f, s, d, sigma[d], outer.idx[d]);
  /* the interior, where walking coordinate y_d is at least the reads'
   * reach in dimension d, computes its points without domain checks (the
   * reads are uniform: each is inside there), and without the index checks
   * of the reads of outside arrays at i_k + c when the interior keeps them
   * in range (decided once, before the walk) */
  LLVMValueRef interior = s->inputs_ok;
  for (uint32_t d = 0; d + 1 < n; d++)
    interior = LLVMBuildAnd(B, interior,
                            LLVMBuildICmp(B, LLVMIntSGE, outer.idx[d],
                                          cg_i64(M, rec_reach(s, d, sigma[d])), ""),
                            "");
  /* an interior row: its first columns with checks, the others without
   * (two loops, so that the optimiser sees the bounds of each); another
   * row: every column with checks */
  LLVMValueRef r1 = cg_smin(f->M, cg_i64(M, rec_reach(s, n - 1, sigma[n - 1])), s->ext[n - 1]);
  LLVMBasicBlockRef after = cg_seq_if(f, interior);
  rec_columns(f, s, body, self, pt, sigma, cg_i64(M, 0), r1, false);
  rec_columns(f, s, body, self, pt, sigma, r1, s->ext[n - 1], true);
  cg_seq_endif(f, after);
  after = cg_seq_if(f, LLVMBuildNot(B, interior, ""));
  rec_columns(f, s, body, self, pt, sigma, cg_i64(M, 0), s->ext[n - 1], false);
  cg_seq_endif(f, after);
  if (s->fold_acc) {
    cg_val v;
    cg_var_load(f, s->fold_acc, &v);
    cg_seq_store(f, s->fold_out, pt[0], &v);
  }
  cg_seq_nest_end(f, &outer);
}

/* ---- anti-diagonals ----
 * A fold of the rows of a rank-2 recurrence (cg_seq_rec_fold) whose body is
 * plain scalar code (cg_rec_body_plain) is computed on the CPU by the
 * anti-diagonals r + c = d of the walking coordinates, as the CPU's
 * recurrence tiles are (lib/lower/skel_rec.c): the points of one
 * anti-diagonal are independent, and the last K (1 + the reads' reach in
 * anti-diagonals) live in a ring of K slots of a point per row, so a read
 * at walking offsets o of row r's point is element r + o0 of the slot
 * -(o0 + o1) back and the loop over the points of an anti-diagonal reads
 * and writes consecutive elements: LLVM vectorises it. The rows' folds
 * are kept per row (each row's points arrive in column order). The
 * points of the first rows and columns (within the reads' reach) are
 * computed with the domain checks; the others without, and with the
 * index checks of their other reads (a substitution matrix indexed by the
 * residues) deferred (cg_fn.defer): when one fails, that anti-diagonal's
 * points are computed again with the checks, which report it. */

/* for (r = from; r < to; r++) { ..., or in a group (f->coop, a warp or a
 * block computing the recurrence together) thread t's share, r = from +
 * t, from + t + G, ..., with coop cleared inside (each thread its own
 * points); returns r. rec_group_end closes it. */
static LLVMValueRef rec_group_begin(cg_fn *f, cg_loop *l, LLVMValueRef from, LLVMValueRef to,
                                    uint8_t *mode) {
  *mode = f->coop;
  if (*mode == CG_COOP_NONE)
    return cg_loop_begin(f, l, from, to);
  return cg_seq_share_begin(f, l, from, to);
}

static void rec_group_end(cg_fn *f, cg_loop *l, uint8_t mode) {
  cg_loop_end(f, l);
  f->coop = mode;
}

/* The points of anti-diagonal d in rows from..to-1; `proven`: inside the
 * reads' reach (no domain checks, the reads of s->inputs unchecked). The
 * rows' folds so far are acc's. */
static void rec_diag_points(cg_fn *f, seq_rec *s, ir_ref body, const cg_val *self,
                            const seq_arr *acc, LLVMValueRef d, LLVMValueRef from, LLVMValueRef to,
                            bool proven) {
  cg_module *M = f->M;
  LLVMBuilderRef B = M->b;
  rec_unchecked was = rec_proven_begin(f, s, proven);
  cg_loop l;
  uint8_t mode;
  LLVMValueRef r = rec_group_begin(f, &l, from, to, &mode);
  LLVMValueRef pt[2] = {rec_walk(f, s, 0, s->dsigma[0], r), LLVMBuildSub(B, d, r, "")};
  if (proven) /* so that the body's tests of the first rows and columns fold */
    for (uint32_t k = 0; k < 2; k++)
      cg_assume(f, LLVMBuildICmp(B, LLVMIntSGE, k == 0 ? r : pt[1],
                                 cg_i64(M, rec_reach(s, k, s->dsigma[k])), ""));
  s->drow = r;
  LLVMValueRef mark = rec_bind(f, s, body, self, pt);
  cg_val v, cur, res;
  cg_expr(f, body, &v);
  LLVMValueRef slot = LLVMBuildAdd(B, s->dslot[0], r, "");
  for (uint32_t i = 0; i < v.n; i++)
    if (!cg_leaf_in(s->ddead, i))
      cg_store_elem(f, &s->dring[i], slot, v.l[i].v);
  cg_seq_load(f, acc, NULL, r, s->fold_z->type, &cur);
  cg_var_store(f, s->fold_acc, &cur);
  rec_fold_step(f, s, &v, &res);
  cg_seq_store(f, acc, r, &res);
  rec_unbind(f, s, mark);
  rec_group_end(f, &l, mode);
  rec_proven_end(f, s, was);
}

/* The rows' folds of the recurrence r by anti-diagonals, into s->fold_out
 * (z for the rows of an empty domain); with `fast` (its reads' inputs proven in the interior:
 * s->inputs_ok holds), the interior's points without the checks, on the
 * CPU with the other reads' checks deferred. In a group (f->coop) the
 * ring, the rows' folds and the result are the group's, each thread
 * computes its share of each anti-diagonal's points, and the group meets
 * after each. */
static void rec_diag(cg_fn *f, seq_rec *s, ir_ref r, ir_ref body, const cg_val *self,
                     const int *sigma, bool fast) {
  cg_module *M = f->M;
  LLVMBuilderRef B = M->b;
  LLVMValueRef rows = s->ext[0], cols = s->ext[1], zero = cg_i64(M, 0), one = cg_i64(M, 1);
  int64_t depth = cg_rec_diag_depth(&s->rd, sigma);
  LLVMValueRef kk = cg_i64(M, depth + 1);
  s->dsigma[0] = sigma[0];
  s->dsigma[1] = sigma[1];
  /* the ring (a slot of `rows` points per anti-diagonal), the rows' folds;
   * the leaves no read uses (a fused cell's fields for the fold alone,
   * docs/passes.md §5.1) are not stored in it */
  LLVMValueRef size = LLVMBuildMul(B, rows, kk, "");
  s->ddead = ~cg_rec_live_leaves(M->m, &s->rd, body, ir_node_get(M->m, body)->type);
  uint8_t group = f->coop, mode;
  s->dring = cg_new(M, (self->n + 1) * sizeof *s->dring);
  for (uint32_t i = 0; i < self->n; i++) {
    s->dring[i].sc = self->l[i].sc;
    if (group == CG_COOP_NONE)
      cg_new_array(f, (ac_scalar)self->l[i].sc, 1, &size, r, &s->dring[i]);
  }
  if (group != CG_COOP_NONE)
    cg_coop_new_arrays(f, r, 1, &size, self->n, s->dring);
  cg_val accv;
  seq_arr acc;
  cg_seq_alloc_elems(f, r, ir_ty_array(M->ctx, s->fold_z->type, 1), 1, &rows, &accv, &acc);
  /* not when an allocation failed (a GPU thread's temporary memory
   * exhausted: the group must not write through its pointers) */
  LLVMBasicBlockRef allocated = cg_seq_if(f, LLVMBuildNot(B, cg_failed(f), ""));
  cg_loop il;
  LLVMValueRef i = rec_group_begin(f, &il, zero, rows, &mode);
  cg_seq_store(f, &acc, i, s->fold_z);
  rec_group_end(f, &il, mode);
  cg_coop_sync(f, group);
  s->dslot = cg_new(M, (size_t)(depth + 1) * sizeof *s->dslot);
  cg_loop dl;
  LLVMValueRef d =
      cg_loop_begin(f, &dl, zero, LLVMBuildSub(B, LLVMBuildAdd(B, rows, cols, ""), one, ""));
  for (int64_t q = 0; q <= depth; q++) {
    LLVMValueRef at = LLVMBuildAdd(B, d, cg_i64(M, depth + 1 - q), "");
    s->dslot[q] = LLVMBuildMul(B, LLVMBuildURem(B, at, kk, ""), rows, "");
  }
  /* rows [rlo, rhi): the first rows [rlo, t1), the interior [t1, t2), the
   * first columns [t2, rhi) */
  LLVMValueRef rlo = cg_smax(f->M, zero, LLVMBuildAdd(B, LLVMBuildSub(B, d, cols, ""), one, ""));
  LLVMValueRef rhi = cg_smin(f->M, rows, LLVMBuildAdd(B, d, one, ""));
  LLVMValueRef t1 = cg_smax(f->M, rlo, cg_smin(f->M, rhi, cg_i64(M, rec_reach(s, 0, sigma[0]))));
  LLVMValueRef t2 =
      cg_smax(f->M, t1,
              cg_smin(f->M, rhi, LLVMBuildSub(B, d, cg_i64(M, rec_reach(s, 1, sigma[1]) - 1), "")));
  rec_diag_points(f, s, body, self, &acc, d, rlo, t1, false);
  if (fast && M->target == CG_TARGET_CPU) {
    cg_defer defer;
    cg_defer_begin(f, &defer);
    rec_diag_points(f, s, body, self, &acc, d, t1, t2, true);
    LLVMBasicBlockRef after = cg_seq_if(f, cg_defer_end(f, &defer));
    rec_diag_points(f, s, body, self, &acc, d, t1, t2, true); /* reports the failure */
    cg_seq_endif(f, after);
  } else {
    rec_diag_points(f, s, body, self, &acc, d, t1, t2, fast);
  }
  rec_diag_points(f, s, body, self, &acc, d, t2, rhi, false);
  cg_coop_sync(f, group); /* the anti-diagonal, before the next reads it */
  cg_loop_end(f, &dl);
  s->dring = NULL;
  s->ddead = 0;
  /* the rows' folds, in the rows' 0-based order */
  i = rec_group_begin(f, &il, zero, rows, &mode);
  cg_val done;
  cg_seq_load(f, &acc, NULL, i, s->fold_z->type, &done);
  cg_seq_store(f, s->fold_out, rec_walk(f, s, 0, sigma[0], i), &done);
  rec_group_end(f, &il, mode);
  cg_coop_sync(f, group);
  cg_seq_endif(f, allocated);
}

/* The walking direction of each dimension for rec_rows, or false when the
 * reads' offsets of some dimension have both signs (or some read is not
 * uniform). */
static bool rec_rows_ok(const seq_rec *s, int *sigma) {
  if (!s->rd.uniform || s->rd.nordered == 0)
    return false;
  for (uint32_t d = 0; d < s->n; d++) {
    if (s->rd.offmin[d] < 0 && s->rd.offmax[d] > 0)
      return false;
    sigma[d] = s->rd.offmax[d] > 0 ? -1 : 1;
  }
  return true;
}

/* Every point of the domain (not empty) in the order (a.x, row-major). */
static void rec_order(cg_fn *f, const seq_rec *s, ir_ref body, const cg_val *self) {
  cg_module *M = f->M;
  LLVMBuilderRef B = M->b;
  uint32_t n = s->n, p = n;
  for (uint32_t d = 0; d < n; d++)
    if (s->sched[d])
      p = d;
  LLVMValueRef *pt = cg_new(M, (n + 1) * sizeof *pt);
  seq_nest pre, post;
  if (p == n) { /* one wavefront */
    LLVMBuildStore(B, cg_i64(M, 0), s->cur);
    cg_seq_nest_begin(f, &pre, n, s->ext);
    rec_point(f, s, body, self, pre.idx);
    cg_seq_nest_end(f, &pre);
    return;
  }
  LLVMValueRef kmin = cg_i64(M, 0), kmax = cg_i64(M, 0), one = cg_i64(M, 1);
  for (uint32_t d = 0; d < n; d++) {
    if (!s->sched[d])
      continue;
    LLVMValueRef k =
        LLVMBuildMul(B, cg_i64(M, s->sched[d]), LLVMBuildSub(B, s->ext[d], one, ""), "");
    if (s->sched[d] > 0)
      kmax = LLVMBuildAdd(B, kmax, k, "");
    else
      kmin = LLVMBuildAdd(B, kmin, k, "");
  }
  cg_loop wave;
  LLVMValueRef w = cg_loop_begin(f, &wave, cg_i64(M, 0),
                                 LLVMBuildAdd(B, LLVMBuildSub(B, kmax, kmin, ""), one, ""));
  LLVMValueRef t = LLVMBuildAdd(B, kmin, w, "");
  LLVMBuildStore(B, t, s->cur);
  cg_seq_nest_begin(f, &pre, p, s->ext);
  LLVMValueRef rest = t;
  for (uint32_t d = 0; d < p; d++) {
    pt[d] = pre.idx[d];
    if (s->sched[d])
      rest = LLVMBuildSub(B, rest, LLVMBuildMul(B, cg_i64(M, s->sched[d]), pt[d], ""), "");
  }
  /* a_p * x_p = rest */
  int64_t ap = s->sched[p];
  LLVMValueRef exact = LLVMConstInt(M->t_i1, 1, 0), ca = cg_i64(M, ap);
  if (ap == 1 || ap == -1) {
    pt[p] = ap == 1 ? rest : LLVMBuildSub(B, cg_i64(M, 0), rest, "");
  } else {
    pt[p] = LLVMBuildSDiv(B, rest, ca, "");
    exact = LLVMBuildICmp(B, LLVMIntEQ, LLVMBuildSRem(B, rest, ca, ""), cg_i64(M, 0), "");
  }
  LLVMValueRef in =
      LLVMBuildAnd(B, exact,
                   LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntSGE, pt[p], cg_i64(M, 0), ""),
                                LLVMBuildICmp(B, LLVMIntSLT, pt[p], s->ext[p], ""), ""),
                   "");
  LLVMBasicBlockRef after = cg_seq_if(f, in);
  cg_seq_nest_begin(f, &post, n - p - 1, s->ext + p + 1);
  for (uint32_t d = p + 1; d < n; d++)
    pt[d] = post.idx[d - p - 1];
  rec_point(f, s, body, self, pt);
  cg_seq_nest_end(f, &post);
  cg_seq_endif(f, after);
  cg_seq_nest_end(f, &pre);
  cg_loop_end(f, &wave);
}

/* The recurrence e's state: its reads (rd when the caller has found them,
 * else found here), then its bounds and extents in the interpreter's order
 * with its checks (s->ext; NULL on a compile error). */
static seq_rec *rec_begin(cg_fn *f, ir_ref e, const cg_rec_reads *rd) {
  cg_module *M = f->M;
  const ir_node *nd = ir_node_get(M->m, e);
  uint32_t n = (uint32_t)nd->attr, nk = nd->nkids;
  uint64_t excl = nd->lit.u;
  if (nd->attr < 1 || nk != 2 * (uint64_t)n + 1 || nd->aux == 0 ||
      nd->aux + (uint64_t)n > M->m->nints) {
    cg_error(M, AC_ERR_INTERNAL, e, "rec without bounds or schedule");
    return NULL;
  }
  seq_rec *s = cg_new(M, sizeof *s);
  s->n = n;
  s->lo = cg_new(M, (n + 1) * sizeof *s->lo);
  s->sched = &M->m->ints[nd->aux];
  ir_sym name = ir_binder_name(M->m, e, nk - 1, 0);
  s->name = name ? ir_sym_str(M->ctx, name) : "rec";
  if (rd)
    s->rd = *rd;
  else
    cg_rec_reads_find(M, M->m, ir_kid(M->m, e, nk - 1), n, s->sched, &s->rd);
  s->ext = cg_new(M, (n + 1) * sizeof *s->ext);
  for (uint32_t d = 0; d < n; d++) {
    cg_val lv, hv;
    LLVMValueRef hi;
    cg_expr(f, ir_kid(M->m, e, 2 * d), &lv);
    cg_expr(f, ir_kid(M->m, e, 2 * d + 1), &hv);
    cg_seq_ints(f, &lv, 1, &s->lo[d]);
    cg_seq_ints(f, &hv, 1, &hi);
    s->ext[d] = rec_extent(f, e, s->lo[d], hi, d >= 64 || ((excl >> d) & 1) == 0);
  }
  s->cur = cg_alloca(f, M->t_i64);
  return s;
}

/* The body's binders: the array itself (one reader per field), then
 * i1..in (in is variable 0). */
static void rec_self(cg_fn *f, seq_rec *s, ir_type t, cg_val *self) {
  cg_module *M = f->M;
  cg_val_alloc(M, t, self);
  seq_rfield *rf = cg_new(M, (self->n + 1) * sizeof *rf);
  for (uint32_t i = 0; i < self->n; i++) {
    rf[i].r = s;
    rf[i].field = i;
    self->l[i].kind = CL_FUNC;
    self->l[i].ext = NULL; /* the reader checks with its own messages */
    self->l[i].read = rec_read;
    self->l[i].env = &rf[i];
  }
}

/* rec (i1 in lo1..hi1, ..): kids lo1, hi1, .., lon, hin, body; attr = n;
 * lit bit k: dimension k is exclusive; m->ints[aux..] the schedule. */
void cg_seq_rec(cg_fn *f, ir_ref e, cg_val *out) {
  cg_module *M = f->M;
  LLVMBuilderRef B = M->b;
  const ir_node *nd = ir_node_get(M->m, e);
  uint32_t n = (uint32_t)nd->attr;
  ir_type t = nd->type;
  ir_ref body = ir_kid(M->m, e, nd->nkids - 1);
  seq_rec *s = rec_begin(f, e, NULL);
  if (!s)
    return;
  cg_seq_alloc(f, e, t, n, s->ext, out, &s->o);
  if (M->st != AC_OK)
    return;
  s->ext = s->sext = s->o.ext; /* 0 after a failed allocation */
  LLVMValueRef fits = rec_fits(f, s);
  cg_seq_check(f, e, fits, "rec: the schedule overflows on a domain this large", 0, NULL);
  cg_val self;
  rec_self(f, s, t, &self);
  LLVMValueRef size = cg_seq_size(f, n, s->ext);
  LLVMBasicBlockRef after =
      cg_seq_if(f, LLVMBuildAnd(B, fits, LLVMBuildICmp(B, LLVMIntSGT, size, cg_i64(M, 0), ""), ""));
  int *sigma = cg_new(M, (n + 1) * sizeof *sigma);
  if (rec_rows_ok(s, sigma))
    rec_rows(f, s, body, &self, sigma);
  else
    rec_order(f, s, body, &self);
  cg_seq_endif(f, after);
}

/* The window's storage: rows min(ring, ext0) (x0 % ring stays below it),
 * each of ext1 points; side by side when the leaves share one scalar
 * type. It is internal: temporary memory, no "array too large" of its
 * own (the table's size was checked). */
static void rec_window(cg_fn *f, seq_rec *s, ir_ref r, ir_type t) {
  cg_module *M = f->M;
  LLVMBuilderRef B = M->b;
  LLVMValueRef rows = cg_smin(f->M, cg_i64(M, s->ring), s->ext[0]);
  cg_val shape;
  cg_val_alloc(M, t, &shape);
  bool same = shape.n > 0;
  for (uint32_t i = 1; i < shape.n; i++)
    same = same && shape.l[i].sc == shape.l[0].sc;
  if (!same) {
    LLVMValueRef wext[2] = {rows, s->ext[1]};
    cg_val win;
    cg_seq_alloc(f, r, t, 2, wext, &win, &s->o);
    return;
  }
  s->aos = shape.n;
  ac_scalar sc = (ac_scalar)shape.l[0].sc;
  LLVMValueRef count = LLVMBuildMul(
      B, LLVMBuildMul(B, rows, s->ext[1], ""), cg_i64(M, s->aos), "");
  LLVMValueRef bytes = LLVMBuildMul(B, count, cg_i64(M, (int64_t)ac_scalar_size(sc)), "");
  s->wl.kind = CL_ARRAY;
  s->wl.sc = (uint8_t)sc;
  s->wl.rank = 1;
  s->wl.v = cg_tmp_alloc(f, bytes, r);
  s->wl.ext = cg_new(M, 2 * sizeof *s->wl.ext);
  s->wl.ext[0] = count;
}

/* Rows of the window at most (the reads' reach in the outer dimension). */
#define REC_RING_MAX 8
/* Anti-diagonals: reads reaching at most this far back in each dimension
 * (the ring has a slot per anti-diagonal they reach). */
#define REC_DIAG_REACH 64

/* fold(f, z, r) with r a rank-2 recurrence (or one field of one,
 * `(rec ...).k`, after `let`s that prepare it): the rows' folds, computed
 * point by point while the recurrence is, which keeps only the rows its
 * reads reach (a window of at most REC_RING_MAX rows) instead of the
 * table. Only when the points are walked row by row with the innermost
 * dimension upwards (so each row's fold sees its elements in order, as the
 * fold would: results are bit for bit the table's), and f cannot fail (so
 * the first error is the one the table's order gives). The table's size is
 * still checked as its allocation would be. A plain scalar body goes by
 * anti-diagonals instead on the CPU (in SIMD) and in a warp or block that
 * computes the element together (f->coop: each thread its share of every
 * anti-diagonal, lib/passes/nesting.c's ns_rec_fold chose it); another
 * body in such a group is computed by its first thread alone. Returns
 * false, having emitted nothing, when the fold is not of this kind. */
bool cg_seq_rec_fold(cg_fn *f, ir_ref e, cg_val *out) {
  cg_module *M = f->M;
  const ac_module *m = M->m;
  ir_ref lam = ir_kid(m, e, 0), arr = ir_kid(m, e, 2);
  if (cg_fn_may_fail(m, lam))
    return false;
  /* through lets, then an optional projection */
  uint32_t nlets = 0, field = UINT32_MAX;
  ir_ref r = arr;
  while (ir_node_get(m, r)->op == IR_LET) {
    r = ir_kid(m, r, 1);
    nlets++;
  }
  if (ir_node_get(m, r)->op == IR_PROJ) {
    field = (uint32_t)ir_node_get(m, r)->attr;
    r = ir_kid(m, r, 0);
  }
  const ir_node *rn = ir_node_get(m, r);
  if (rn->op != IR_REC || rn->attr != 2 || rn->nkids != 5 || rn->aux == 0 || rn->aux + 2 > m->nints)
    return false;
  /* the element's field the fold sees, if not all of it */
  ir_type elem;
  uint32_t rank;
  if (!ir_ty_array_view(M->ctx, rn->type, &elem, &rank))
    return false;
  ir_typeinfo ti = ir_ty_info(M->ctx, elem);
  if (field != UINT32_MAX && (ti.kind != TK_TUPLE || field >= ti.n))
    return false;
  /* the reads: uniform, rows upwards, a reach of a few rows */
  cg_rec_reads rd;
  const int64_t *a = &m->ints[rn->aux];
  cg_rec_reads_find(M, m, ir_kid(m, r, 4), 2, a, &rd);
  seq_rec probe = {.n = 2, .rd = rd};
  int sigma[2];
  if (!rec_rows_ok(&probe, sigma) || sigma[1] < 0)
    return false;
  int64_t reach = rd.offmin[0] < 0 ? -rd.offmin[0] : rd.offmax[0];
  if (reach >= REC_RING_MAX)
    return false;
  /* z, then the operand: the lets, the recurrence */
  cg_val z;
  cg_expr(f, ir_kid(m, e, 1), &z);
  ir_ref l = arr;
  for (uint32_t i = 0; i < nlets; i++) {
    cg_val v;
    cg_expr(f, ir_kid(m, l, 0), &v);
    cg_env_push(f, &v);
    l = ir_kid(m, l, 1);
  }
  ir_ref body = ir_kid(m, r, 4);
  /* plain scalar code: by anti-diagonals on the CPU (in SIMD) and in a
   * group (each thread its share of the rows) */
  bool plain = rd.offmin[1] >= -REC_DIAG_REACH && cg_rec_body_plain(m, &rd, body, true);
  uint8_t group = f->coop;
  seq_rec *s = rec_begin(f, r, &rd);
  if (s) {
    cg_seq_size_check(f, r, 2, s->ext); /* the table's, as cg_seq_alloc would */
    s->ring = reach + 1;
    s->sext = cg_new(M, 3 * sizeof *s->sext);
    s->sext[0] = cg_i64(M, s->ring);
    s->sext[1] = s->ext[1];
    seq_arr o;
    cg_seq_alloc_elems(f, e, ir_node_get(m, e)->type, 1, s->ext, out, &o);
    LLVMValueRef fits = rec_fits(f, s);
    cg_seq_check(f, r, fits, "rec: the schedule overflows on a domain this large", 0, NULL);
    cg_val self;
    rec_self(f, s, rn->type, &self);
    s->fold_lam = lam;
    s->fold_field = field;
    s->fold_z = &z;
    s->fold_out = &o;
    s->fold_acc = cg_new(M, sizeof *s->fold_acc);
    cg_var_new(f, z.type, s->fold_acc);
    LLVMBasicBlockRef after =
        cg_seq_if(f, LLVMBuildAnd(M->b, fits, LLVMBuildNot(M->b, cg_failed(f), ""), ""));
    if (plain && group != CG_COOP_NONE) {
      /* the group, the interior unchecked when its inputs are in range
       * (an empty domain: each row's fold is z) */
      rec_inputs(f, s, sigma);
      LLVMBasicBlockRef other = cg_seq_if(f, s->inputs_ok);
      rec_diag(f, s, r, body, &self, sigma, true);
      cg_seq_endif(f, other);
      other = cg_seq_if(f, LLVMBuildNot(M->b, s->inputs_ok, ""));
      rec_diag(f, s, r, body, &self, sigma, false);
      cg_seq_endif(f, other);
    } else if (group != CG_COOP_NONE) {
      /* the group's first thread alone, row by row; the others wait */
      LLVMValueRef t, g;
      cg_coop_rank(f, group, &t, &g);
      f->coop = CG_COOP_NONE;
      LLVMBasicBlockRef first_only =
          cg_seq_if(f, LLVMBuildICmp(M->b, LLVMIntEQ, t, cg_i64(M, 0), ""));
      rec_window(f, s, r, rn->type);
      rec_rows(f, s, body, &self, sigma);
      cg_seq_endif(f, first_only);
      f->coop = group;
      cg_coop_sync(f, group);
    } else if (plain && M->target == CG_TARGET_CPU) {
      /* by anti-diagonals when the interior may read its inputs unchecked
       * and the domain is not empty, else row by row */
      cg_fn_wide_vectors(f);
      rec_window(f, s, r, rn->type);
      rec_inputs(f, s, sigma);
      LLVMValueRef go = LLVMBuildAnd(
          M->b, s->inputs_ok,
          LLVMBuildICmp(M->b, LLVMIntSGT, cg_seq_size(f, 2, s->ext), cg_i64(M, 0), ""), "");
      LLVMBasicBlockRef other = cg_seq_if(f, LLVMBuildNot(M->b, go, ""));
      rec_rows(f, s, body, &self, sigma);
      cg_seq_endif(f, other);
      other = cg_seq_if(f, go);
      rec_diag(f, s, r, body, &self, sigma, true);
      cg_seq_endif(f, other);
    } else {
      rec_window(f, s, r, rn->type);
      rec_rows(f, s, body, &self, sigma);
    }
    cg_seq_endif(f, after);
  }
  cg_env_pop(f, nlets);
  return true;
}
