/* lib/interp/permute.c: permutations and index-space changes
 * (docs/language.md §7 "Permutations", "Index space").
 *
 * gather, backpermute, scatter and permute move elements by computed
 * indices; every index is checked, in row-major order of the source, and the
 * first bad one is reported with the operation's name. scatter also refuses
 * two writes to one position (a bitmap of written positions), because the
 * result would otherwise depend on the order a backend happens to use.
 * slice, reshape, transpose, reverse and replicate copy elements into a
 * fresh array: an interpreter has no use for views, and copying keeps every
 * array's elements contiguous and immutable. Elements are copied as bytes,
 * leaf by leaf (a tuple of arrays moves each of its arrays).
 */
#include "interp/interp.h"

#include <stdio.h>
#include <string.h>

static void copy_elem(ac_array *dst, int64_t dk, const ac_array *src, int64_t sk) {
  size_t es = rt_array_elsize(src);
  memcpy((char *)dst->data + (size_t)dk * es, (const char *)src->data + (size_t)sk * es, es);
}

/* Copies element sk of the n arrays at src to element dk of those at dst. */
static void copy_elems(interp *I, size_t dst, int64_t dk, size_t src, int64_t sk, size_t n) {
  for (size_t i = 0; i < n; i++)
    copy_elem(I->stk[dst + i].v.a, dk, I->stk[src + i].v.a, sk);
}

/* Copies all elements of the n arrays at src into those at dst (same sizes). */
static void copy_all(interp *I, size_t dst, size_t src, size_t n) {
  for (size_t i = 0; i < n; i++) {
    const ac_array *s = I->stk[src + i].v.a;
    if (s->size)
      memcpy(I->stk[dst + i].v.a->data, s->data, (size_t)s->size * rt_array_elsize(s));
  }
}

/* Linear position of pos in an array of these extents; false, with an
 * error naming the operation, when outside. Reads (gather, backpermute)
 * report the first offending dimension as a[i] does; writes (scatter,
 * permute) report the whole index against the destination's extents. */
static bool locate(interp *I, ir_ref r, unsigned rank, const int64_t *ext, const int64_t *pos,
                   int64_t *lin) {
  ir_op op = (ir_op)INODE(I, r)->op;
  const char *what = ir_ops[op].spelling;
  int64_t k = 0;
  for (unsigned d = 0; d < rank; d++) {
    if (pos[d] < 0 || pos[d] >= ext[d]) {
      char si[160], se[160];
      if (op == IR_GATHER || op == IR_BACKPERMUTE)
        return interp_fail(I, r, "%s: index %lld out of bounds for dimension %u of extent %lld",
                           what, (long long)pos[d], d, (long long)ext[d]);
      interp_fmt_index(si, sizeof si, rank, pos);
      if (rank == 1)
        return interp_fail(I, r, "%s: index %s out of range for extent %lld", what, si,
                           (long long)ext[0]);
      interp_fmt_shape(se, sizeof se, rank, ext);
      return interp_fail(I, r, "%s: index %s out of range for shape %s", what, si, se);
    }
    k = k * ext[d] + pos[d];
  }
  *lin = k;
  return true;
}

/* Reads element k of the n integer arrays at off as an index. */
static void read_index(interp *I, size_t off, size_t n, int64_t k, int64_t *pos) {
  for (size_t d = 0; d < n; d++) {
    const ac_array *a = I->stk[off + d].v.a;
    pos[d] = interp_sc_to_i64(a->type, interp_sc_load(a->type, a->data, k));
  }
}

/* gather(idx, a): out[k] = a[idx[k]], out of idx's shape. */
bool interp_gather(interp *I, ir_ref r) {
  const char *what = "gather";
  size_t base = I->sp;
  if (!interp_eval(I, IKID(I, r, 0)))
    return false;
  size_t aoff = I->sp, ni = aoff - base;
  if (!interp_eval(I, IKID(I, r, 1)))
    return false;
  size_t na = I->sp - aoff, outs = I->sp;
  const ac_array *iv = interp_view(I, r, what, base, ni);
  const ac_array *av = iv ? interp_view(I, r, what, aoff, na) : NULL;
  if (!av)
    return false;
  if (av->rank != ni)
    return interp_internal(I, r, "gather with %zu indices into rank %u", ni, av->rank);
  interp_ints pos;
  if (!interp_ints_init(I, r, &pos, ni))
    return false;
  bool ok = interp_new_arrays(I, r, INODE(I, r)->type, iv->rank, iv->extents);
  for (int64_t k = 0; ok && k < iv->size; k++) {
    int64_t lin;
    read_index(I, base, ni, k, pos.p);
    ok = locate(I, r, av->rank, av->extents, pos.p, &lin);
    if (ok)
      copy_elems(I, outs, k, aoff, lin, na);
  }
  interp_ints_free(I, &pos);
  if (ok)
    interp_collapse(I, base, outs);
  return ok;
}

/* backpermute(shape, |i..| src, a): out[ix] = a[src(ix)]. */
bool interp_backpermute(interp *I, ir_ref r) {
  unsigned q = interp_ty_rank(I->ctx, INODE(I, r)->type);
  size_t base = I->sp;
  interp_ints ext, ix, pos = {NULL, {0}}; /* freeing pos is a no-op until it is initialised */
  interp_lam lam;
  if (!interp_ints_init(I, r, &ext, q))
    return false;
  bool ok = interp_ints_init(I, r, &ix, q);
  ok = interp_lam_init(I, &lam, IKID(I, r, 1), q) && ok;
  for (unsigned d = 0; d < q && ok; d++)
    lam.counts[d] = 1;
  ok =
      ok && interp_eval(I, IKID(I, r, 0)) && interp_read_shape(I, r, IKID(I, r, 0), base, q, ext.p);
  if (ok)
    I->sp = base;
  ok = ok && interp_eval(I, IKID(I, r, 2));
  size_t na = I->sp - base, outs = I->sp;
  const ac_array *av = ok ? interp_view(I, r, "backpermute", base, na) : NULL;
  ok = av && interp_ints_init(I, r, &pos, av->rank);
  ok = ok && interp_new_arrays(I, r, INODE(I, r)->type, q, ext.p);
  int64_t size = ok ? I->stk[outs].v.a->size : 0;
  for (int64_t k = 0; ok && k < size; k++) {
    size_t args = I->sp;
    int64_t lin;
    ok = interp_reserve(I, q);
    for (unsigned d = 0; d < q && ok; d++) {
      interp_leaf l = {LK_SCALAR, 0, {.s = {.i = ix.p[d]}}};
      I->stk[I->sp++] = l;
    }
    ok = ok && interp_apply(I, &lam, args) &&
         interp_read_ints(I, r, lam.ret, args, av->rank, pos.p) &&
         locate(I, r, av->rank, av->extents, pos.p, &lin);
    if (ok) {
      I->sp = args;
      copy_elems(I, outs, k, base, lin, na);
      interp_next_index(q, ext.p, ix.p);
    }
  }
  interp_ints_free(I, &pos);
  interp_lam_free(I, &lam);
  interp_ints_free(I, &ext);
  interp_ints_free(I, &ix);
  if (ok)
    interp_collapse(I, base, outs);
  return ok;
}

/* scatter(idx, vals, dest): a copy of dest with out[idx[k]] = vals[k]; an
 * index out of range or written twice is an error. */
bool interp_scatter(interp *I, ir_ref r) {
  const char *what = "scatter";
  size_t base = I->sp;
  if (!interp_eval(I, IKID(I, r, 0)))
    return false;
  size_t voff = I->sp, ni = voff - base;
  if (!interp_eval(I, IKID(I, r, 1)))
    return false;
  size_t doff = I->sp, nv = doff - voff;
  if (!interp_eval(I, IKID(I, r, 2)))
    return false;
  size_t outs = I->sp;
  /* idx and vals side by side: one view checks that all their arrays agree */
  const ac_array *iv = interp_view(I, r, what, base, doff - base);
  const ac_array *dv = iv ? interp_view(I, r, what, doff, outs - doff) : NULL;
  if (!dv)
    return false;
  if (dv->rank != ni)
    return interp_internal(I, r, "scatter with %zu indices into rank %u", ni, dv->rank);
  interp_ints pos;
  if (!interp_ints_init(I, r, &pos, ni))
    return false;
  unsigned char *written = interp_scratch(I, r, dv->size / 8 + 1, 1);
  bool ok = written && interp_new_arrays(I, r, INODE(I, r)->type, dv->rank, dv->extents);
  if (ok) {
    memset(written, 0, (size_t)(dv->size / 8 + 1));
    copy_all(I, outs, doff, nv);
  }
  for (int64_t k = 0; ok && k < iv->size; k++) {
    int64_t lin;
    read_index(I, base, ni, k, pos.p);
    ok = locate(I, r, dv->rank, dv->extents, pos.p, &lin);
    if (ok && (written[lin / 8] >> (lin % 8)) & 1) {
      char si[160];
      interp_fmt_index(si, sizeof si, dv->rank, pos.p);
      ok = interp_fail(I, r, "scatter: index %s written twice", si);
    }
    if (ok) {
      written[lin / 8] |= (unsigned char)(1u << (lin % 8));
      copy_elems(I, outs, lin, voff, k, nv);
    }
  }
  ac_free(I->ctx, written);
  interp_ints_free(I, &pos);
  if (ok)
    interp_collapse(I, base, outs);
  return ok;
}

/* permute(comb, dest, |i..| dst, a): a copy of dest, then for each ix of a
 * in row-major order out[d] = comb(out[d], a[ix]) with d = dst(ix). */
bool interp_permute(interp *I, ir_ref r) {
  const char *what = "permute";
  size_t base = I->sp;
  if (!interp_eval(I, IKID(I, r, 1)))
    return false;
  size_t aoff = I->sp, nd = aoff - base;
  if (!interp_eval(I, IKID(I, r, 3)))
    return false;
  size_t na = I->sp - aoff, outs = I->sp;
  const ac_array *dv = interp_view(I, r, what, base, nd);
  const ac_array *av = dv ? interp_view(I, r, what, aoff, na) : NULL;
  if (!av)
    return false;
  unsigned q = av->rank;
  interp_ints ix, pos;
  interp_lam comb, dst;
  if (!interp_ints_init(I, r, &ix, q))
    return false;
  if (!interp_ints_init(I, r, &pos, dv->rank)) {
    interp_ints_free(I, &ix);
    return false;
  }
  bool ok = interp_lam_init(I, &comb, IKID(I, r, 0), 2);
  ok = interp_lam_init(I, &dst, IKID(I, r, 2), q) && ok;
  comb.counts[0] = nd;
  comb.counts[1] = na;
  for (unsigned d = 0; d < q && ok; d++)
    dst.counts[d] = 1;
  ok = ok && interp_new_arrays(I, r, INODE(I, r)->type, dv->rank, dv->extents);
  if (ok)
    copy_all(I, outs, base, nd);
  for (int64_t k = 0; ok && k < av->size; k++) {
    size_t args = I->sp;
    int64_t lin;
    ok = interp_reserve(I, q);
    for (unsigned d = 0; d < q && ok; d++) {
      interp_leaf l = {LK_SCALAR, 0, {.s = {.i = ix.p[d]}}};
      I->stk[I->sp++] = l;
    }
    ok = ok && interp_apply(I, &dst, args) &&
         interp_read_ints(I, r, dst.ret, args, dv->rank, pos.p) &&
         locate(I, r, dv->rank, dv->extents, pos.p, &lin);
    if (ok) {
      I->sp = args;
      ok = interp_load(I, outs, nd, lin) && interp_load(I, aoff, na, k) &&
           interp_apply(I, &comb, args);
    }
    if (ok) {
      interp_store(I, outs, nd, lin, args);
      interp_drop(I, args);
      interp_next_index(q, av->extents, ix.p);
    }
  }
  interp_lam_free(I, &comb);
  interp_lam_free(I, &dst);
  interp_ints_free(I, &ix);
  interp_ints_free(I, &pos);
  if (ok)
    interp_collapse(I, base, outs);
  return ok;
}

/* slice(a, start, stop[, stride]): per dimension 0 <= start <= stop <=
 * extent and stride >= 1; extent ceil((stop - start) / stride). */
bool interp_slice(interp *I, ir_ref r) {
  const ir_node *n = INODE(I, r);
  size_t base = I->sp;
  if (!interp_eval(I, IKID(I, r, 0)))
    return false;
  size_t na = I->sp - base, soff = I->sp;
  const ac_array *a = interp_view(I, r, "slice", base, na);
  if (!a)
    return false;
  unsigned rank = a->rank;
  interp_ints v, ix;
  if (!interp_ints_init(I, r, &v, 4 * (size_t)rank))
    return false;
  int64_t *start = v.p, *stop = v.p + rank, *stride = v.p + 2 * rank, *ext = v.p + 3 * rank;
  bool ok = interp_ints_init(I, r, &ix, rank);
  for (uint32_t i = 1; i < n->nkids && ok; i++) {
    size_t off = I->sp;
    ok = interp_eval(I, IKID(I, r, i)) &&
         interp_read_ints(I, r, INODE(I, IKID(I, r, i))->type, off, rank, v.p + (i - 1) * rank);
  }
  for (unsigned d = 0; d < rank && ok; d++) {
    char dim[48] = "";
    if (rank > 1)
      snprintf(dim, sizeof dim, " in dimension %u", d);
    if (n->nkids < 4)
      stride[d] = 1;
    if (start[d] < 0 || start[d] > stop[d] || stop[d] > a->extents[d])
      ok = interp_fail(I, r, "slice: bounds %lld..%lld out of range for extent %lld%s",
                       (long long)start[d], (long long)stop[d], (long long)a->extents[d], dim);
    else if (stride[d] < 1)
      ok = interp_fail(I, r, "slice: stride %lld is not positive%s", (long long)stride[d], dim);
    else
      ext[d] = stop[d] == start[d] ? 0 : (stop[d] - start[d] - 1) / stride[d] + 1;
  }
  if (ok)
    I->sp = soff;
  size_t outs = I->sp;
  ok = ok && interp_new_arrays(I, r, n->type, rank, ext);
  int64_t size = ok ? I->stk[outs].v.a->size : 0;
  for (int64_t k = 0; k < size; k++) {
    int64_t lin = 0;
    for (unsigned d = 0; d < rank; d++)
      lin = lin * a->extents[d] + start[d] + ix.p[d] * stride[d];
    copy_elems(I, outs, k, base, lin, na);
    interp_next_index(rank, ext, ix.p);
  }
  interp_ints_free(I, &v);
  interp_ints_free(I, &ix);
  if (ok)
    interp_collapse(I, base, outs);
  return ok;
}

/* reshape(shape, a): the same elements in row-major order. */
bool interp_reshape(interp *I, ir_ref r) {
  unsigned q = interp_ty_rank(I->ctx, INODE(I, r)->type);
  size_t base = I->sp;
  interp_ints ext;
  if (!interp_ints_init(I, r, &ext, q))
    return false;
  bool ok = interp_eval(I, IKID(I, r, 0)) && interp_read_shape(I, r, IKID(I, r, 0), base, q, ext.p);
  if (ok)
    I->sp = base;
  ok = ok && interp_eval(I, IKID(I, r, 1));
  size_t na = I->sp - base, outs = I->sp;
  const ac_array *a = ok ? interp_view(I, r, "reshape", base, na) : NULL;
  int64_t count;
  if (a && (!rt_array_count(q, ext.p, 1, &count) || count != a->size)) {
    char s[160];
    interp_fmt_shape(s, sizeof s, q, ext.p);
    interp_fail(I, r, "reshape: cannot reshape %lld elements to %s", (long long)a->size, s);
    a = NULL;
  }
  ok = a && interp_new_arrays(I, r, INODE(I, r)->type, q, ext.p);
  if (ok) {
    copy_all(I, outs, base, na);
    interp_collapse(I, base, outs);
  }
  interp_ints_free(I, &ext);
  return ok;
}

/* Evaluates the single array argument of transpose / reverse and pushes
 * result arrays of its extents, the two innermost swapped when `swap`. */
static const ac_array *unary_array(interp *I, ir_ref r, bool swap, size_t *na) {
  size_t base = I->sp;
  if (!interp_eval(I, IKID(I, r, 0)))
    return NULL;
  *na = I->sp - base;
  const ac_array *a = interp_view(I, r, ir_ops[INODE(I, r)->op].spelling, base, *na);
  if (!a)
    return NULL;
  if (swap && a->rank < 2) {
    interp_internal(I, r, "transpose of an array of rank %u", a->rank);
    return NULL;
  }
  interp_ints ext;
  if (!interp_ints_init(I, r, &ext, a->rank))
    return NULL;
  memcpy(ext.p, a->extents, a->rank * sizeof *ext.p);
  if (swap) {
    ext.p[a->rank - 1] = a->extents[a->rank - 2];
    ext.p[a->rank - 2] = a->extents[a->rank - 1];
  }
  bool ok = interp_new_arrays(I, r, INODE(I, r)->type, a->rank, ext.p);
  interp_ints_free(I, &ext);
  return ok ? a : NULL;
}

/* transpose(a): out[.., j, i] = a[.., i, j]. */
bool interp_transpose(interp *I, ir_ref r) {
  size_t base = I->sp, na;
  const ac_array *a = unary_array(I, r, true, &na);
  if (!a)
    return false;
  size_t outs = base + na;
  int64_t rows = a->extents[a->rank - 2], cols = a->extents[a->rank - 1];
  int64_t blocks = rows == 0 || cols == 0 ? 0 : a->size / (rows * cols);
  for (int64_t b = 0; b < blocks; b++)
    for (int64_t i = 0; i < rows; i++)
      for (int64_t j = 0; j < cols; j++)
        copy_elems(I, outs, (b * cols + j) * rows + i, base, (b * rows + i) * cols + j, na);
  interp_collapse(I, base, outs);
  return true;
}

/* reverse(a): reverses the innermost dimension. */
bool interp_reverse(interp *I, ir_ref r) {
  size_t base = I->sp, na;
  const ac_array *a = unary_array(I, r, false, &na);
  if (!a)
    return false;
  size_t outs = base + na;
  int64_t n = a->extents[a->rank - 1];
  for (int64_t k = 0; k < a->size; k++) {
    int64_t j = k % n;
    copy_elems(I, outs, k - j + (n - 1 - j), base, k, na);
  }
  interp_collapse(I, base, outs);
  return true;
}

/* replicate(n, a): out[k, ix] = a[ix] for k < n. */
bool interp_replicate(interp *I, ir_ref r) {
  size_t base = I->sp;
  int64_t n;
  if (!interp_eval(I, IKID(I, r, 0)) || !interp_read_shape(I, r, IKID(I, r, 0), base, 1, &n))
    return false;
  I->sp = base;
  if (!interp_eval(I, IKID(I, r, 1)))
    return false;
  size_t na = I->sp - base, outs = I->sp;
  const ac_array *a = interp_view(I, r, "replicate", base, na);
  interp_ints ext;
  if (!a || !interp_ints_init(I, r, &ext, (size_t)a->rank + 1))
    return false;
  ext.p[0] = n;
  memcpy(ext.p + 1, a->extents, a->rank * sizeof *ext.p);
  bool ok = interp_new_arrays(I, r, INODE(I, r)->type, a->rank + 1, ext.p);
  interp_ints_free(I, &ext);
  if (!ok)
    return false;
  for (size_t i = 0; i < na; i++) {
    const ac_array *s = I->stk[base + i].v.a;
    size_t bytes = (size_t)s->size * rt_array_elsize(s);
    char *d = I->stk[outs + i].v.a->data;
    for (int64_t k = 0; k < n && bytes; k++)
      memcpy(d + (size_t)k * bytes, s->data, bytes);
  }
  interp_collapse(I, base, outs);
  return true;
}
