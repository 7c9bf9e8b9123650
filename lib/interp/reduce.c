/* lib/interp/reduce.c: folds and scans (docs/language.md §7 "Reductions and
 * scans").
 *
 * All of them work along the innermost dimension, one row at a time, and
 * apply the function strictly in the order the reference gives: a left fold
 * f(..f(f(z, a0), a1).., a_{n-1}), scans from the left (f(acc, x)) or from
 * the right (f(x, acc)). Backends may reassociate because f should be
 * associative; the interpreter deliberately does not, so that it is the
 * plain sequential meaning. An exclusive scan never applies f to the last
 * element (its result would be dropped, and an error it raised would not be
 * the program's).
 *
 * The accumulator is a run of scalar leaves (elements never contain arrays)
 * kept on the stack at `accoff` and overwritten after each application.
 */
#include "interp/interp.h"

#include <string.h>

/* acc = f(acc, a[k]), or f(a[k], acc) when `right`. */
static bool step(interp *I, const interp_lam *lam, size_t accoff, size_t ne, size_t aoff, int64_t k,
                 bool right) {
  size_t args = I->sp;
  bool ok = right ? interp_load(I, aoff, ne, k) && interp_push_copy(I, accoff, ne)
                  : interp_push_copy(I, accoff, ne) && interp_load(I, aoff, ne, k);
  if (!ok || !interp_apply(I, lam, args))
    return false;
  memmove(&I->stk[accoff], &I->stk[args], ne * sizeof *I->stk);
  I->sp = args;
  return true;
}

/* Length of segment s (lens is an integer array of any kind). */
static int64_t seg_len(const ac_array *lens, int64_t s) {
  return interp_sc_to_i64(lens->type, interp_sc_load(lens->type, lens->data, s));
}

/* Segment lengths must be non-negative and add up to the array's length. */
static bool check_segments(interp *I, ir_ref r, const char *what, const ac_array *lens, int64_t n) {
  int64_t sum = 0;
  for (int64_t s = 0; s < lens->size; s++) {
    int64_t v = seg_len(lens, s);
    if (v < 0)
      return interp_fail(I, r, "%s: negative segment length %lld", what, (long long)v);
    sum = v > INT64_MAX - sum ? INT64_MAX : sum + v; /* saturate: only the message sees it */
  }
  if (sum != n)
    return interp_fail(I, r, "%s: segment lengths sum to %lld but the array has %lld elements",
                       what, (long long)sum, (long long)n);
  return true;
}

/* fold(f, z, a): rank r -> r-1; rank 1 gives the element itself. */
bool interp_fold(interp *I, ir_ref r) {
  size_t base = I->sp;
  interp_lam lam;
  if (!interp_lam_init(I, &lam, IKID(I, r, 0), 2))
    return false;
  bool ok = interp_eval(I, IKID(I, r, 1));
  size_t ne = I->sp - base, aoff = I->sp;
  ok = ok && interp_eval(I, IKID(I, r, 2));
  lam.counts[0] = ne;
  lam.counts[1] = I->sp - aoff;
  const ac_array *a = ok ? interp_view(I, r, "fold", aoff, I->sp - aoff) : NULL;
  ok = a != NULL;
  size_t outs = I->sp;
  int64_t rows = 1, n = a ? a->extents[a->rank - 1] : 0;
  if (ok && a->rank > 1) {
    ok = interp_new_arrays(I, r, INODE(I, r)->type, a->rank - 1, a->extents);
    rows = ok ? I->stk[outs].v.a->size : 0;
  }
  size_t nout = I->sp - outs, accoff = I->sp;
  for (int64_t row = 0; row < rows && ok; row++) {
    ok = interp_push_copy(I, base, ne);
    for (int64_t j = 0; j < n && ok; j++)
      ok = step(I, &lam, accoff, ne, aoff, row * n + j, false);
    if (ok && a->rank > 1) {
      interp_store(I, outs, nout, row, accoff);
      I->sp = accoff;
    }
  }
  interp_lam_free(I, &lam);
  if (ok)
    interp_collapse(I, base, a->rank > 1 ? outs : accoff);
  return ok;
}

/* fold_seg(f, z, a, lens): one left fold per segment. */
bool interp_fold_seg(interp *I, ir_ref r) {
  size_t base = I->sp;
  interp_lam lam;
  if (!interp_lam_init(I, &lam, IKID(I, r, 0), 2))
    return false;
  bool ok = interp_eval(I, IKID(I, r, 1));
  size_t ne = I->sp - base, aoff = I->sp;
  ok = ok && interp_eval(I, IKID(I, r, 2));
  size_t loff = I->sp;
  lam.counts[0] = ne;
  lam.counts[1] = loff - aoff;
  ok = ok && interp_eval(I, IKID(I, r, 3));
  const ac_array *a = ok ? interp_view(I, r, "fold_seg", aoff, loff - aoff) : NULL;
  const ac_array *lens = a ? interp_view(I, r, "fold_seg", loff, I->sp - loff) : NULL;
  ok = lens && check_segments(I, r, "fold_seg", lens, a->size);
  size_t outs = I->sp;
  ok = ok && interp_new_arrays(I, r, INODE(I, r)->type, 1, &lens->size);
  size_t nout = I->sp - outs, accoff = I->sp;
  int64_t pos = 0;
  for (int64_t s = 0; ok && s < lens->size; s++) {
    int64_t len = seg_len(lens, s);
    ok = interp_push_copy(I, base, ne);
    for (int64_t j = 0; j < len && ok; j++)
      ok = step(I, &lam, accoff, ne, aoff, pos + j, false);
    if (ok) {
      interp_store(I, outs, nout, s, accoff);
      I->sp = accoff;
    }
    pos += len;
  }
  interp_lam_free(I, &lam);
  if (ok)
    interp_collapse(I, base, outs);
  return ok;
}

/* One scan over the n elements first, first+stride.. of a, in reverse when
 * `right`, writing out at the same positions. z is at zoff for an exclusive
 * scan. The accumulator lives at the top of the stack and is popped. */
static bool scan_run(interp *I, const interp_lam *lam, bool excl, bool right, size_t zoff,
                     size_t aoff, size_t outs, size_t ne, int64_t first, int64_t n) {
  if (n == 0)
    return true;
  size_t accoff = I->sp;
  int64_t p = first + (right ? n - 1 : 0);
  bool ok = excl ? interp_push_copy(I, zoff, ne) : interp_load(I, aoff, ne, p);
  if (ok)
    interp_store(I, outs, ne, p, accoff);
  for (int64_t t = 1; t < n && ok; t++) {
    /* exclusive: out[t] = f(out[t-1], a[t-1]); inclusive: f(out[t-1], a[t]) */
    int64_t q = first + (right ? n - 1 - t : t);
    ok = step(I, lam, accoff, ne, aoff, excl ? p : q, right);
    if (ok)
      interp_store(I, outs, ne, q, accoff);
    p = q;
  }
  if (ok)
    I->sp = accoff;
  return ok;
}

/* scan, scan_incl, scanr, scanr_incl along the innermost dimension. */
bool interp_scan(interp *I, ir_ref r) {
  ir_op op = (ir_op)INODE(I, r)->op;
  bool excl = op == IR_SCAN || op == IR_SCANR;
  bool right = op == IR_SCANR || op == IR_SCANR_INCL;
  size_t base = I->sp;
  interp_lam lam;
  if (!interp_lam_init(I, &lam, IKID(I, r, 0), 2))
    return false;
  bool ok = !excl || interp_eval(I, IKID(I, r, 1));
  size_t aoff = I->sp;
  ok = ok && interp_eval(I, IKID(I, r, excl ? 2 : 1));
  size_t ne = I->sp - aoff;
  lam.counts[0] = lam.counts[1] = ne;
  const ac_array *a = ok ? interp_view(I, r, ir_ops[op].spelling, aoff, ne) : NULL;
  size_t outs = I->sp;
  ok = a && interp_new_arrays(I, r, INODE(I, r)->type, a->rank, a->extents);
  int64_t n = a ? a->extents[a->rank - 1] : 0, rows = n ? a->size / n : 0;
  for (int64_t row = 0; row < rows && ok; row++)
    ok = scan_run(I, &lam, excl, right, base, aoff, outs, ne, row * n, n);
  interp_lam_free(I, &lam);
  if (ok)
    interp_collapse(I, base, outs);
  return ok;
}

/* scan_seg(f, z, a, lens), scan_incl_seg(f, a, lens): left scans restarted
 * at each segment. */
bool interp_scan_seg(interp *I, ir_ref r) {
  ir_op op = (ir_op)INODE(I, r)->op;
  bool excl = op == IR_SCAN_SEG;
  const char *what = ir_ops[op].spelling;
  size_t base = I->sp;
  interp_lam lam;
  if (!interp_lam_init(I, &lam, IKID(I, r, 0), 2))
    return false;
  bool ok = !excl || interp_eval(I, IKID(I, r, 1));
  size_t aoff = I->sp;
  ok = ok && interp_eval(I, IKID(I, r, excl ? 2 : 1));
  size_t loff = I->sp, ne = loff - aoff;
  lam.counts[0] = lam.counts[1] = ne;
  ok = ok && interp_eval(I, IKID(I, r, excl ? 3 : 2));
  const ac_array *a = ok ? interp_view(I, r, what, aoff, ne) : NULL;
  const ac_array *lens = a ? interp_view(I, r, what, loff, I->sp - loff) : NULL;
  ok = lens && check_segments(I, r, what, lens, a->size);
  size_t outs = I->sp;
  ok = ok && interp_new_arrays(I, r, INODE(I, r)->type, 1, a->extents);
  int64_t pos = 0;
  for (int64_t s = 0; ok && s < lens->size; s++) {
    int64_t len = seg_len(lens, s);
    ok = scan_run(I, &lam, excl, false, base, aoff, outs, ne, pos, len);
    pos += len;
  }
  interp_lam_free(I, &lam);
  if (ok)
    interp_collapse(I, base, outs);
  return ok;
}
