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
  seq_arr o;            /* the result arrays (safe extents) */
  const int64_t *sched; /* a, n coefficients */
  LLVMValueRef cur;     /* alloca: a.x of the point being computed */
  const char *name;
  cg_rec_reads rd;      /* the body's reads of the array (rec_reads.c) */
} seq_rec;

typedef struct seq_rfield {
  const seq_rec *r;
  uint32_t field;
} seq_rfield;

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
  for (uint32_t d = 0; d < n; d++) {
    /* idx - lo as unsigned: exact whenever idx >= lo */
    LLVMValueRef k = LLVMBuildSub(B, idx[d], s->lo[d], "");
    LLVMValueRef in = LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntSGE, idx[d], s->lo[d], ""),
                                   LLVMBuildICmp(B, LLVMIntULT, k, s->o.ext[d], ""), "");
    inside = LLVMBuildAnd(B, inside, in, "");
    if (s->sched[d] && !ordered)
      key = LLVMBuildAdd(B, key, LLVMBuildMul(B, cg_i64(M, s->sched[d]), k, ""), "");
    lin = LLVMBuildAdd(B, LLVMBuildMul(B, lin, s->o.ext[d], ""), k, "");
  }
  LLVMValueRef before =
      ordered ? LLVMConstInt(M->t_i1, 1, 0)
              : LLVMBuildICmp(B, LLVMIntSLT, key, LLVMBuildLoad2(B, M->t_i64, s->cur, ""), "");
  const char *why[2] = {"outside the domain", "before it is computed"};
  for (int w = 0; w < 1 + !ordered; w++) {
    ir_buf b;
    ir_buf_init(&b, M->ctx);
    ir_buf_printf(&b, "rec: read of %s", s->name);
    cg_seq_put_list(&b, '[', ']', n, UINT32_MAX, 0, 0);
    ir_buf_printf(&b, " %s", why[w]);
    LLVMValueRef ok = w == 0 ? inside : LLVMBuildOr(B, LLVMBuildNot(B, inside, ""), before, "");
    cg_seq_check_buf(f, at, ok, &b, n, idx);
  }
  lin = LLVMBuildSelect(B, LLVMBuildAnd(B, inside, before, ""), lin, cg_i64(M, 0), "");
  return cg_load_elem(f, &s->o.l[rf->field], lin);
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
    LLVMValueRef span = cg_seq_smax(f, LLVMBuildSub(B, s->o.ext[d], one, ""), cg_i64(M, 0));
    LLVMValueRef room = LLVMBuildSDiv(B, LLVMBuildSub(B, cg_i64(M, INT64_MAX), bound, ""),
                                      cg_seq_smax(f, span, one), "");
    LLVMValueRef over = LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntNE, span, cg_i64(M, 0), ""),
                                     LLVMBuildICmp(B, LLVMIntSGT, c, room, ""), "");
    fits = LLVMBuildAnd(B, fits, LLVMBuildNot(B, over, ""), "");
    bound = LLVMBuildSelect(B, over, bound,
                            LLVMBuildAdd(B, bound, LLVMBuildMul(B, c, span, ""), ""), "");
  }
  return fits;
}

/* The body at point pt (0-based): binds the array and the logical indices,
 * stores the element. */
static void rec_point(cg_fn *f, const seq_rec *s, ir_ref body, const cg_val *self,
                      LLVMValueRef *pt) {
  cg_module *M = f->M;
  ir_type i64 = ir_ty_scalar(M->ctx, AC_I64);
  LLVMValueRef lin = cg_linear(f, s->n, s->o.ext, pt);
  cg_env_push(f, self);
  for (uint32_t d = 0; d < s->n; d++) {
    cg_val iv;
    cg_seq_scalar(M, i64, AC_I64, LLVMBuildAdd(M->b, s->lo[d], pt[d], ""), &iv);
    cg_env_push(f, &iv);
  }
  LLVMValueRef mark = cg_seq_mark(f, cg_needs_tmp(M->m, body));
  cg_val r;
  cg_expr(f, body, &r);
  cg_seq_store(f, &s->o, lin, &r);
  cg_seq_release(f, mark);
  cg_env_pop(f, s->n + 1);
}

/* Every point of the domain (not empty) row by row, dimension d walked
 * downwards where sigma[d] < 0: an order in which every uniform read comes
 * after the point it reads when the reads' offsets in each dimension are
 * all of the walk's opposite sign (or zero). Only for recurrences whose
 * every read is uniform and ordered (cg_rec_reads.uniform), which need no
 * wavefront key. */
static void rec_rows(cg_fn *f, const seq_rec *s, ir_ref body, const cg_val *self,
                     const int *sigma) {
  cg_module *M = f->M;
  LLVMBuilderRef B = M->b;
  LLVMValueRef *pt = cg_new(M, (s->n + 1) * sizeof *pt);
  seq_nest all;
  cg_seq_nest_begin(f, &all, s->n, s->o.ext);
  for (uint32_t d = 0; d < s->n; d++)
    pt[d] = sigma[d] > 0 ? all.idx[d]
                         : LLVMBuildSub(B, LLVMBuildSub(B, s->o.ext[d], cg_i64(M, 1), ""),
                                        all.idx[d], "");
  rec_point(f, s, body, self, pt);
  cg_seq_nest_end(f, &all);
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
    cg_seq_nest_begin(f, &pre, n, s->o.ext);
    rec_point(f, s, body, self, pre.idx);
    cg_seq_nest_end(f, &pre);
    return;
  }
  LLVMValueRef kmin = cg_i64(M, 0), kmax = cg_i64(M, 0), one = cg_i64(M, 1);
  for (uint32_t d = 0; d < n; d++) {
    if (!s->sched[d])
      continue;
    LLVMValueRef k =
        LLVMBuildMul(B, cg_i64(M, s->sched[d]), LLVMBuildSub(B, s->o.ext[d], one, ""), "");
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
  cg_seq_nest_begin(f, &pre, p, s->o.ext);
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
                                LLVMBuildICmp(B, LLVMIntSLT, pt[p], s->o.ext[p], ""), ""),
                   "");
  LLVMBasicBlockRef after = cg_seq_if(f, in);
  cg_seq_nest_begin(f, &post, n - p - 1, s->o.ext + p + 1);
  for (uint32_t d = p + 1; d < n; d++)
    pt[d] = post.idx[d - p - 1];
  rec_point(f, s, body, self, pt);
  cg_seq_nest_end(f, &post);
  cg_seq_endif(f, after);
  cg_seq_nest_end(f, &pre);
  cg_loop_end(f, &wave);
}

/* rec (i1 in lo1..hi1, ..): kids lo1, hi1, .., lon, hin, body; attr = n;
 * lit bit k: dimension k is exclusive; m->ints[aux..] the schedule. */
void cg_seq_rec(cg_fn *f, ir_ref e, cg_val *out) {
  cg_module *M = f->M;
  LLVMBuilderRef B = M->b;
  const ir_node *nd = ir_node_get(M->m, e);
  uint32_t n = (uint32_t)nd->attr, nk = nd->nkids;
  ir_type t = nd->type;
  uint64_t excl = nd->lit.u;
  if (nd->attr < 1 || nk != 2 * (uint64_t)n + 1 || nd->aux == 0 ||
      nd->aux + (uint64_t)n > M->m->nints) {
    cg_error(M, AC_ERR_INTERNAL, e, "rec without bounds or schedule");
    return;
  }
  seq_rec *s = cg_new(M, sizeof *s);
  s->n = n;
  s->lo = cg_new(M, (n + 1) * sizeof *s->lo);
  s->sched = &M->m->ints[nd->aux];
  ir_sym name = ir_binder_name(M->m, e, nk - 1, 0);
  s->name = name ? ir_sym_str(M->ctx, name) : "rec";
  ir_ref body = nk ? ir_kid(M->m, e, nk - 1) : 0;
  cg_rec_reads_find(M, M->m, body, n, s->sched, &s->rd);
  LLVMValueRef *ext = cg_new(M, (n + 1) * sizeof *ext);
  for (uint32_t d = 0; d < n; d++) {
    cg_val lv, hv;
    LLVMValueRef hi;
    cg_expr(f, ir_kid(M->m, e, 2 * d), &lv);
    cg_expr(f, ir_kid(M->m, e, 2 * d + 1), &hv);
    cg_seq_ints(f, &lv, 1, &s->lo[d]);
    cg_seq_ints(f, &hv, 1, &hi);
    ext[d] = rec_extent(f, e, s->lo[d], hi, d >= 64 || ((excl >> d) & 1) == 0);
  }
  cg_seq_alloc(f, e, t, n, ext, out, &s->o);
  if (M->st != AC_OK)
    return;
  LLVMValueRef fits = rec_fits(f, s);
  cg_seq_check(f, e, fits, "rec: the schedule overflows on a domain this large", 0, NULL);
  s->cur = cg_alloca(f, M->t_i64);
  /* the body's binders: the array itself (one reader per field), then
   * i1..in (in is variable 0) */
  cg_val self;
  cg_val_alloc(M, t, &self);
  seq_rfield *rf = cg_new(M, (self.n + 1) * sizeof *rf);
  for (uint32_t i = 0; i < self.n; i++) {
    rf[i].r = s;
    rf[i].field = i;
    self.l[i].kind = CL_FUNC;
    self.l[i].ext = NULL; /* the reader checks with its own messages */
    self.l[i].read = rec_read;
    self.l[i].env = &rf[i];
  }
  LLVMValueRef size = cg_seq_size(f, n, s->o.ext);
  LLVMBasicBlockRef after =
      cg_seq_if(f, LLVMBuildAnd(B, fits, LLVMBuildICmp(B, LLVMIntSGT, size, cg_i64(M, 0), ""), ""));
  int *sigma = cg_new(M, (n + 1) * sizeof *sigma);
  if (rec_rows_ok(s, sigma))
    rec_rows(f, s, body, &self, sigma);
  else
    rec_order(f, s, body, &self);
  cg_seq_endif(f, after);
}
