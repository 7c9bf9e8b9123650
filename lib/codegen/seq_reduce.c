/* lib/codegen/seq_reduce.c: folds and scans in element code
 * (docs/language.md §7.4, §7.5), following lib/interp/reduce.c.
 *
 * Everything works along the innermost dimension, one row (or segment) at
 * a time, and applies the function strictly in the reference order (except
 * a fold in a warp- or block-per-element kernel, which the group's threads
 * compute together: seq_coop.c): a left
 * fold f(..f(f(z, a0), a1).., a_{n-1}), scans from the left (f(acc, x)) or
 * from the right (f(x, acc)). Nested operations are sequential code, so
 * unlike the parallel skeletons they never reassociate (cg_array_op clears
 * f->reassoc), and their results are the interpreter's bit for bit. An
 * exclusive scan never applies f to the last element, as in the
 * interpreter. The accumulator is a cg_var (allocas that mem2reg turns into
 * registers).
 *
 * Segment lengths are checked as interp's check_segments does; the loops
 * then clamp every segment to what is left of the array, which changes
 * nothing for valid lengths and keeps every access in range after a failed
 * check.
 */
#include "codegen/seq_impl.h"

/* Integer element s of the rank-1 integer array lens, as i64. */
static LLVMValueRef seg_len(cg_fn *f, const seq_arr *lens, LLVMValueRef s) {
  cg_val v;
  LLVMValueRef len;
  cg_seq_load(f, lens, &s, s, IR_TY_NONE, &v);
  cg_seq_ints(f, &v, 1, &len);
  return len;
}

/* Segment lengths must be non-negative and add up to the array's length n
 * (the sum saturates: only the message sees it). */
static void check_segments(cg_fn *f, ir_ref at, const char *what, const seq_arr *lens,
                           LLVMValueRef n) {
  cg_module *M = f->M;
  LLVMBuilderRef B = M->b;
  char msg[128];
  LLVMValueRef sum = cg_alloca(f, M->t_i64), max = cg_i64(M, INT64_MAX);
  LLVMBuildStore(B, cg_i64(M, 0), sum);
  cg_loop l;
  LLVMValueRef s = cg_loop_begin(f, &l, cg_i64(M, 0), lens->ext[0]);
  LLVMValueRef v = seg_len(f, lens, s);
  snprintf(msg, sizeof msg, "%s: negative segment length {0}", what);
  cg_seq_check(f, at, LLVMBuildICmp(B, LLVMIntSGE, v, cg_i64(M, 0), ""), msg, 1, &v);
  LLVMValueRef acc = LLVMBuildLoad2(B, M->t_i64, sum, "");
  LLVMValueRef big = LLVMBuildICmp(B, LLVMIntSGT, v, LLVMBuildSub(B, max, acc, ""), "");
  LLVMBuildStore(B, LLVMBuildSelect(B, big, max, LLVMBuildAdd(B, acc, v, ""), ""), sum);
  cg_loop_end(f, &l);
  LLVMValueRef vals[2] = {LLVMBuildLoad2(B, M->t_i64, sum, ""), n};
  snprintf(msg, sizeof msg, "%s: segment lengths sum to {0} but the array has {1} elements", what);
  cg_seq_check(f, at, LLVMBuildICmp(B, LLVMIntEQ, vals[0], n, ""), msg, 2, vals);
}

/* Iterates over the segments of an array of length n: *len is segment s's
 * length clamped to [0, n - pos], *pos its start. */
typedef struct seq_segs {
  cg_loop loop;
  LLVMValueRef pos_slot, s, pos, len;
} seq_segs;

static void segs_begin(cg_fn *f, seq_segs *g, const seq_arr *lens, LLVMValueRef nsegs,
                       LLVMValueRef n) {
  cg_module *M = f->M;
  LLVMBuilderRef B = M->b;
  g->pos_slot = cg_alloca(f, M->t_i64);
  LLVMBuildStore(B, cg_i64(M, 0), g->pos_slot);
  g->s = cg_loop_begin(f, &g->loop, cg_i64(M, 0), nsegs);
  g->pos = LLVMBuildLoad2(B, M->t_i64, g->pos_slot, "");
  LLVMValueRef left = LLVMBuildSub(B, n, g->pos, "");
  g->len = cg_smax(f->M, cg_smin(f->M, seg_len(f, lens, g->s), left), cg_i64(M, 0));
}

static void segs_end(cg_fn *f, seq_segs *g) {
  LLVMBuildStore(f->M->b, LLVMBuildAdd(f->M->b, g->pos, g->len, ""), g->pos_slot);
  cg_loop_end(f, &g->loop);
}

void cg_seq_row_load(cg_fn *f, seq_row *r, LLVMValueRef t, ir_type elem, cg_val *out) {
  LLVMBuilderRef B = f->M->b;
  r->idx[r->a->rank - 1] = LLVMBuildAdd(B, r->idx0, t, "");
  cg_seq_load(f, r->a, r->idx, LLVMBuildAdd(B, r->lin0, t, ""), elem, out);
}

void cg_seq_step(cg_fn *f, ir_ref lam, cg_var *acc, const cg_val *x, bool right, cg_val *res) {
  cg_val args[2];
  cg_var_load(f, acc, &args[right ? 1 : 0]);
  args[right ? 0 : 1] = *x;
  LLVMValueRef mark = cg_seq_mark(f, cg_needs_tmp(f->M->m, lam));
  cg_apply(f, lam, 2, args, res);
  cg_var_store(f, acc, res);
  cg_seq_release(f, mark);
}

/* fold(f, z, a): rank r -> r-1; rank 1 gives the accumulator itself. */
void cg_seq_fold(cg_fn *f, ir_ref e, cg_val *out) {
  cg_module *M = f->M;
  ir_ref lam = ir_kid(M->m, e, 0);
  if (cg_seq_rec_fold(f, e, out)) /* the rows of a recurrence, in a window */
    return;
  cg_val z, av, res;
  cg_expr(f, ir_kid(M->m, e, 1), &z);
  cg_seq_operand(f, ir_kid(M->m, e, 2), &av);
  seq_arr a, o = {0, NULL, 0, NULL};
  cg_seq_view(f, e, "fold", &av, &a);
  if (M->st != AC_OK)
    return;
  uint32_t q = a.rank - 1;
  LLVMValueRef n = a.ext[q], *outer = a.ext;
  if (q > 0) {
    cg_seq_alloc(f, e, ir_node_get(M->m, e)->type, q, a.ext, out, &o);
    outer = o.ext;
  }
  cg_var acc;
  cg_var_new(f, z.type, &acc);
  seq_nest rows;
  cg_seq_nest_begin(f, &rows, q, outer);
  LLVMValueRef rowlin = cg_linear(f, q, outer, rows.idx);
  LLVMValueRef *idx = cg_new(M, (q + 1) * sizeof *idx);
  for (uint32_t d = 0; d < q; d++)
    idx[d] = rows.idx[d];
  seq_row r = {&a, idx, cg_i64(M, 0), LLVMBuildMul(M->b, rowlin, n, "")};
  if (f->coop != CG_COOP_NONE) { /* every thread of a warp or block: seq_coop.c */
    cg_coop_fold_row(f, lam, &z, &r, n, &res);
    cg_var_store(f, &acc, &res);
  } else {
    cg_var_store(f, &acc, &z);
    cg_loop l;
    LLVMValueRef j = cg_loop_begin(f, &l, cg_i64(M, 0), n);
    cg_val x;
    cg_seq_row_load(f, &r, j, cg_seq_param(M, lam, 1), &x);
    cg_seq_step(f, lam, &acc, &x, false, &res);
    cg_loop_end(f, &l);
  }
  if (q > 0) {
    cg_var_load(f, &acc, &res);
    cg_seq_store(f, &o, rowlin, &res);
  }
  cg_seq_nest_end(f, &rows);
  if (q == 0)
    cg_var_load(f, &acc, out);
}

/* fold_seg(f, z, a, lens): one left fold per segment. */
void cg_seq_fold_seg(cg_fn *f, ir_ref e, cg_val *out) {
  cg_module *M = f->M;
  const char *what = "fold_seg";
  ir_ref lam = ir_kid(M->m, e, 0);
  cg_val z, av, lv, res;
  cg_expr(f, ir_kid(M->m, e, 1), &z);
  cg_seq_operand(f, ir_kid(M->m, e, 2), &av);
  cg_expr(f, ir_kid(M->m, e, 3), &lv);
  seq_arr a, lens, o;
  cg_seq_view(f, e, what, &av, &a);
  cg_seq_view(f, e, what, &lv, &lens);
  if (M->st != AC_OK)
    return;
  check_segments(f, e, what, &lens, a.ext[0]);
  cg_seq_alloc(f, e, ir_node_get(M->m, e)->type, 1, lens.ext, out, &o);
  cg_var acc;
  cg_var_new(f, z.type, &acc);
  seq_segs g;
  segs_begin(f, &g, &lens, o.ext[0], a.ext[0]);
  LLVMValueRef idx[1];
  seq_row r = {&a, idx, g.pos, g.pos};
  cg_var_store(f, &acc, &z);
  cg_loop l;
  LLVMValueRef j = cg_loop_begin(f, &l, cg_i64(M, 0), g.len);
  cg_val x;
  cg_seq_row_load(f, &r, j, cg_seq_param(M, lam, 1), &x);
  cg_seq_step(f, lam, &acc, &x, false, &res);
  cg_loop_end(f, &l);
  cg_var_load(f, &acc, &res);
  cg_seq_store(f, &o, g.s, &res);
  segs_end(f, &g);
}

/* One scan over the n elements of row r, writing o at the same offsets;
 * z is the initial value of an exclusive scan (interp's scan_run). */
static void scan_run(cg_fn *f, ir_ref lam, bool excl, bool right, const cg_val *z, seq_row *r,
                     const seq_arr *o, LLVMValueRef n) {
  cg_module *M = f->M;
  LLVMBuilderRef B = M->b;
  ir_type elem = cg_seq_param(M, lam, 0);
  LLVMValueRef one = cg_i64(M, 1), last = LLVMBuildSub(B, n, one, "");
  LLVMBasicBlockRef after = cg_seq_if(f, LLVMBuildICmp(B, LLVMIntSGT, n, cg_i64(M, 0), ""));
  cg_var acc;
  cg_var_new(f, elem, &acc);
  LLVMValueRef p0 = right ? last : cg_i64(M, 0);
  cg_val x, res;
  if (excl) {
    cg_var_store(f, &acc, z);
  } else {
    cg_seq_row_load(f, r, p0, elem, &x);
    cg_var_store(f, &acc, &x);
  }
  cg_var_load(f, &acc, &res);
  cg_seq_store(f, o, LLVMBuildAdd(B, r->lin0, p0, ""), &res);
  cg_loop l;
  LLVMValueRef t = cg_loop_begin(f, &l, one, n);
  /* exclusive: out[q] = f(out[p], a[p]) with p the previous position;
   * inclusive: out[q] = f(out[p], a[q]) */
  LLVMValueRef q = right ? LLVMBuildSub(B, last, t, "") : t;
  LLVMValueRef rd = !excl ? q : right ? LLVMBuildAdd(B, q, one, "") : LLVMBuildSub(B, q, one, "");
  cg_seq_row_load(f, r, rd, elem, &x);
  cg_seq_step(f, lam, &acc, &x, right, &res);
  cg_seq_store(f, o, LLVMBuildAdd(B, r->lin0, q, ""), &res);
  cg_loop_end(f, &l);
  cg_seq_endif(f, after);
}

/* scan, scan_incl, scanr, scanr_incl along the innermost dimension. */
void cg_seq_scan(cg_fn *f, ir_ref e, cg_val *out) {
  cg_module *M = f->M;
  ir_op op = (ir_op)ir_node_get(M->m, e)->op;
  bool excl = op == IR_SCAN || op == IR_SCANR;
  bool right = op == IR_SCANR || op == IR_SCANR_INCL;
  ir_ref lam = ir_kid(M->m, e, 0);
  cg_val z = {0, 0, NULL}, av;
  if (excl)
    cg_expr(f, ir_kid(M->m, e, 1), &z);
  cg_seq_operand(f, ir_kid(M->m, e, excl ? 2 : 1), &av);
  seq_arr a, o;
  cg_seq_view(f, e, ir_ops[op].spelling, &av, &a);
  if (M->st != AC_OK)
    return;
  /* a warp or block scans the row together (seq_coop.c) */
  bool group = f->coop != CG_COOP_NONE;
  if (group)
    cg_seq_alloc_elems(f, e, ir_node_get(M->m, e)->type, a.rank, a.ext, out, &o);
  else
    cg_seq_alloc(f, e, ir_node_get(M->m, e)->type, a.rank, a.ext, out, &o);
  uint32_t q = a.rank - 1;
  LLVMValueRef n = o.ext[q];
  seq_nest rows;
  cg_seq_nest_begin(f, &rows, q, o.ext);
  LLVMValueRef *idx = cg_new(M, (q + 1) * sizeof *idx);
  for (uint32_t d = 0; d < q; d++)
    idx[d] = rows.idx[d];
  LLVMValueRef lin0 = LLVMBuildMul(M->b, cg_linear(f, q, o.ext, rows.idx), n, "");
  seq_row r = {&a, idx, cg_i64(M, 0), lin0};
  if (group)
    cg_coop_scan_row(f, lam, excl, right, &z, &r, &o, n);
  else
    scan_run(f, lam, excl, right, &z, &r, &o, n);
  cg_seq_nest_end(f, &rows);
}

/* scan_seg(f, z, a, lens), scan_incl_seg(f, a, lens): left scans restarted
 * at each segment. */
void cg_seq_scan_seg(cg_fn *f, ir_ref e, cg_val *out) {
  cg_module *M = f->M;
  ir_op op = (ir_op)ir_node_get(M->m, e)->op;
  bool excl = op == IR_SCAN_SEG;
  const char *what = ir_ops[op].spelling;
  ir_ref lam = ir_kid(M->m, e, 0);
  cg_val z = {0, 0, NULL}, av, lv;
  if (excl)
    cg_expr(f, ir_kid(M->m, e, 1), &z);
  cg_seq_operand(f, ir_kid(M->m, e, excl ? 2 : 1), &av);
  cg_expr(f, ir_kid(M->m, e, excl ? 3 : 2), &lv);
  seq_arr a, lens, o;
  cg_seq_view(f, e, what, &av, &a);
  cg_seq_view(f, e, what, &lv, &lens);
  if (M->st != AC_OK)
    return;
  check_segments(f, e, what, &lens, a.ext[0]);
  cg_seq_alloc(f, e, ir_node_get(M->m, e)->type, 1, a.ext, out, &o);
  seq_segs g;
  segs_begin(f, &g, &lens, lens.ext[0], o.ext[0]);
  LLVMValueRef idx[1];
  seq_row r = {&a, idx, g.pos, g.pos};
  scan_run(f, lam, excl, false, &z, &r, &o, g.len);
  segs_end(f, &g);
}
