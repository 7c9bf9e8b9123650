/* lib/passes/shape.c: the shape pass: the sizes of intermediates as
 * expressions of the function's arguments.
 *
 * What. Shape analysis as Copperhead (seeds/003 §4.4) does it: an abstract
 * interpretation in which every array operation has a shape rule (map: its
 * first array's; generate and fill: their shape argument; slice: the
 * extents of its bounds, ceil((stop - start) / stride); gather: its
 * indices'; fold: its array's without the innermost dimension; scans,
 * stencils, scatter and permute: their array's; replicate, transpose,
 * reverse, backpermute, reshape, fold_seg, iota: theirs), and every size
 * expression (integer literals, integer parameters, len and shape of known
 * arrays, integer let-bound sizes, + - * / % min max and integer
 * conversions) is rewritten in terms of the arguments. A filter's length,
 * anything computed by a kernel (a fold's value used as a size), an `if`,
 * a loop's state or a call's result is data-dependent: unknown.
 *
 * Each array operation at plan level (kernels: outside the functions given
 * to array operations, outside `if` branches and loops, not a delayed
 * producer, not reshape, which is a view) whose shape is known becomes
 * sized(e, s) (docs/language.md §7.17) with s its shape as an expression
 * of the arguments, e.g.
 *
 *   let b = sized(generate(len(xs) - 1, |i| ..), len(xs) - 1);
 *
 * and lowering (lib/lower/sized.c) allocates e's buffers at the start of
 * the plan, before the first launch, keeping them when e's own allocation
 * finds the same extents (so a shape the analysis got wrong costs an
 * allocation, never a result).
 *
 * Why. Copperhead: "shape analysis ... allows the back end of the compiler
 * to statically allocate ... space for temporary values"; allocation on a
 * GPU between launches costs the host, and sizes that are known from the
 * arguments let the plan allocate everything at once and then launch
 * kernels back to back. (Our plans already compute every size on the host
 * without a device round trip, and allocate on the GPU in stream order.)
 *
 * Requires a verified module; run it last but for sequentialise (after
 * fuse, whose delayed producers allocate nothing, and after smem-stencil:
 * tiled(e) is wrapped whole). Preserves meaning exactly: sized(e, s) is e,
 * and s is never evaluated by the interpreter. Counters: "sized" (array
 * operations given their shape), "unknown" (plan-level array operations
 * whose shape the rules do not give as an expression of the arguments:
 * data-dependent ones, and those behind calls, branches and loops).
 */
#include "passes/pass.h"

#include <string.h>

#define SH_MAX_DEPTH 2000u
#define SH_MAX_RANK 16u

enum { SH_SIZED, SH_UNKNOWN };

/* What is known of a value, in expressions valid at binder depth `depth`
 * (the number of binders between the function's top and them). */
typedef struct sh_info {
  uint8_t kind; /* SH_NONE, SH_SCALAR (x[0]), SH_ARRAY (x[0..rank)) */
  uint32_t depth, rank;
  ir_ref x[SH_MAX_RANK];
} sh_info;

enum { SH_NONE, SH_SCALAR, SH_ARRAY };

typedef struct sh {
  ps_ctx *c;
  ac_module *m;
  ir_type t_i64;
  sh_info *env; /* one per binder, innermost last */
  size_t nenv, capenv;
  bool oom;
} sh;

static ir_ref sh_node(sh *s, ir_op op, ir_loc loc, uint32_t n, const ir_ref *kids) {
  ir_ref r = s->oom ? IR_NONE : ir_node_new(s->m, op, loc, n, kids);
  if (r == IR_NONE)
    s->oom = true;
  return r;
}

/* x (valid at depth `from`) at depth `to` >= from. */
static ir_ref sh_at(sh *s, ir_ref x, uint32_t from, uint32_t to) {
  if (s->oom || x == IR_NONE)
    return IR_NONE;
  if (to == from)
    return x;
  ir_ref r = ir_shift(s->m, x, (int32_t)(to - from), 0);
  if (r == IR_NONE)
    s->oom = true;
  return r;
}

static ir_ref sh_lit(sh *s, ir_loc loc, int64_t v) {
  ir_litval l;
  memset(&l, 0, sizeof l);
  l.i = v;
  ir_ref r = s->oom ? IR_NONE : ir_lit_typed(s->m, loc, s->t_i64, l);
  if (r == IR_NONE)
    s->oom = true;
  return r;
}

/* x as an i64 (integer conversions are exact for sizes that fit). */
static ir_ref sh_i64(sh *s, ir_ref x, ir_loc loc) {
  if (x == IR_NONE)
    return IR_NONE;
  ir_type t = ir_node_get(s->m, x)->type;
  if (t == s->t_i64 || t == IR_TY_NONE)
    return x;
  ir_ref r = sh_node(s, IR_CAST, loc, 1, &x);
  if (r != IR_NONE)
    ir_node_get(s->m, r)->type = s->t_i64;
  return r;
}

static ir_ref sh_bin(sh *s, ir_op op, ir_loc loc, ir_ref a, ir_ref b) {
  if (a == IR_NONE || b == IR_NONE)
    return IR_NONE;
  ir_ref k[2] = {a, b};
  return sh_node(s, op, loc, 2, k);
}

static bool sh_shape_of(sh *s, ir_ref e, uint32_t depth, sh_info *out, unsigned nest);

/* The i64 value of size expression e (at depth `depth`), in terms of the
 * arguments, or IR_NONE. */
static ir_ref sh_size(sh *s, ir_ref e, uint32_t depth, unsigned nest) {
  ac_module *m = s->m;
  /* copies of nodes throughout: new nodes may move the node array */
  const ir_node n0 = *ir_node_get(m, e), *n = &n0;
  if (nest > SH_MAX_DEPTH || s->oom || !ir_ty_is_int(m->ctx, n->type))
    return IR_NONE;
  switch ((ir_op)n->op) {
  case IR_LIT: {
    ac_scalar sc = AC_I64;
    ir_ty_is_scalar(m->ctx, n->type, &sc);
    if (sc == AC_U64 && n->lit.u > (uint64_t)INT64_MAX)
      return IR_NONE;
    return sh_lit(s, n->loc, n->lit.i);
  }
  case IR_VAR: {
    if ((uint64_t)n->attr >= s->nenv)
      return IR_NONE;
    const sh_info *v = &s->env[s->nenv - 1 - (size_t)n->attr];
    return v->kind == SH_SCALAR ? sh_at(s, v->x[0], v->depth, depth) : IR_NONE;
  }
  case IR_LEN: {
    sh_info a;
    if (!sh_shape_of(s, ir_kid(m, e, 0), depth, &a, nest + 1) || a.rank < 1)
      return IR_NONE;
    return a.x[0];
  }
  case IR_PROJ: { /* shape(a).k */
    ir_ref k0 = ir_kid(m, e, 0);
    sh_info a;
    if (ir_node_get(m, k0)->op != IR_SHAPE ||
        !sh_shape_of(s, ir_kid(m, k0, 0), depth, &a, nest + 1) || (uint64_t)n->attr >= a.rank)
      return IR_NONE;
    return a.x[n->attr];
  }
  case IR_SHAPE: { /* rank 1: an integer */
    sh_info a;
    if (!sh_shape_of(s, ir_kid(m, e, 0), depth, &a, nest + 1) || a.rank != 1)
      return IR_NONE;
    return a.x[0];
  }
  case IR_CAST:
    return sh_size(s, ir_kid(m, e, 0), depth, nest + 1);
  case IR_ADD:
  case IR_SUB:
  case IR_MUL:
  case IR_DIV:
  case IR_REM:
  case IR_MIN:
  case IR_MAX:
    return sh_bin(s, (ir_op)n->op, n->loc, sh_size(s, ir_kid(m, e, 0), depth, nest + 1),
                  sh_size(s, ir_kid(m, e, 1), depth, nest + 1));
  default:
    return IR_NONE;
  }
}

/* A shape argument of rank r (an integer, a tuple expression of integers,
 * or shape(a)) into out->x. */
static bool sh_shape_arg(sh *s, ir_ref e, uint32_t r, uint32_t depth, sh_info *out,
                         unsigned nest) {
  ac_module *m = s->m;
  const ir_node n0 = *ir_node_get(m, e), *n = &n0;
  if (r == 0 || r > SH_MAX_RANK)
    return false;
  if (n->op == IR_TUPLE && n->nkids == r) {
    for (uint32_t d = 0; d < r; d++)
      if ((out->x[d] = sh_size(s, ir_kid(m, e, d), depth, nest + 1)) == IR_NONE)
        return false;
  } else if (n->op == IR_SHAPE && r > 1) {
    if (!sh_shape_of(s, ir_kid(m, e, 0), depth, out, nest + 1) || out->rank != r)
      return false;
  } else if (r == 1) {
    if ((out->x[0] = sh_size(s, e, depth, nest + 1)) == IR_NONE)
      return false;
  } else {
    return false;
  }
  out->kind = SH_ARRAY;
  out->rank = r;
  out->depth = depth;
  return true;
}

static uint32_t sh_rank(const ac_module *m, ir_type t) {
  ir_type elem;
  uint32_t rank = 0;
  if (!ir_ty_array_view(m->ctx, t, &elem, &rank))
    return 0;
  return rank;
}

/* slice's extents: ceil((stop - start) / stride) per dimension. */
static bool sh_slice(sh *s, ir_ref e, uint32_t depth, sh_info *out, unsigned nest) {
  ac_module *m = s->m;
  const ir_node n0 = *ir_node_get(m, e), *n = &n0;
  uint32_t r = sh_rank(m, n->type);
  sh_info lo, hi, st;
  if (n->nkids < 3 || !sh_shape_arg(s, ir_kid(m, e, 1), r, depth, &lo, nest) ||
      !sh_shape_arg(s, ir_kid(m, e, 2), r, depth, &hi, nest))
    return false;
  bool strided = n->nkids == 4;
  if (strided && !sh_shape_arg(s, ir_kid(m, e, 3), r, depth, &st, nest))
    return false;
  for (uint32_t d = 0; d < r; d++) {
    ir_ref x = sh_bin(s, IR_SUB, n->loc, hi.x[d], lo.x[d]);
    if (strided) {
      ir_ref up = sh_bin(s, IR_SUB, n->loc, st.x[d], sh_lit(s, n->loc, 1));
      x = sh_bin(s, IR_DIV, n->loc, sh_bin(s, IR_ADD, n->loc, x, up), st.x[d]);
    }
    if ((out->x[d] = x) == IR_NONE)
      return false;
  }
  out->kind = SH_ARRAY;
  out->rank = r;
  out->depth = depth;
  return true;
}

/* The shape of the value of array expression e at depth `depth`. */
static bool sh_shape_of(sh *s, ir_ref e, uint32_t depth, sh_info *out, unsigned nest) {
  ac_module *m = s->m;
  const ir_node n0 = *ir_node_get(m, e), *n = &n0;
  memset(out, 0, sizeof *out);
  uint32_t r = sh_rank(m, n->type);
  if (nest > SH_MAX_DEPTH || s->oom || r == 0 || r > SH_MAX_RANK)
    return false;
  switch ((ir_op)n->op) {
  case IR_VAR: {
    if ((uint64_t)n->attr >= s->nenv)
      return false;
    const sh_info *v = &s->env[s->nenv - 1 - (size_t)n->attr];
    if (v->kind != SH_ARRAY || v->rank != r)
      return false;
    *out = *v;
    for (uint32_t d = 0; d < r; d++)
      out->x[d] = sh_at(s, v->x[d], v->depth, depth);
    out->depth = depth;
    return !s->oom;
  }
  case IR_MAP: /* the first array's */
  case IR_STENCIL:
    return n->nkids >= 2 && sh_shape_of(s, ir_kid(m, e, 1), depth, out, nest + 1);
  case IR_DELAY:
  case IR_TILED:
  case IR_REVERSE:
    return sh_shape_of(s, ir_kid(m, e, 0), depth, out, nest + 1);
  case IR_SIZED:
    return sh_shape_arg(s, ir_kid(m, e, 1), r, depth, out, nest);
  case IR_GENERATE:
  case IR_FILL:
  case IR_RESHAPE:
  case IR_BACKPERMUTE:
  case IR_IOTA:
    return sh_shape_arg(s, ir_kid(m, e, 0), r, depth, out, nest);
  case IR_SLICE:
    return sh_slice(s, e, depth, out, nest);
  case IR_GATHER:
    return sh_shape_of(s, ir_kid(m, e, 0), depth, out, nest + 1);
  case IR_SCAN:
  case IR_SCANR:
  case IR_SCAN_SEG:
    return sh_shape_of(s, ir_kid(m, e, 2), depth, out, nest + 1);
  case IR_SCAN_INCL:
  case IR_SCANR_INCL:
  case IR_SCAN_INCL_SEG:
    return sh_shape_of(s, ir_kid(m, e, 1), depth, out, nest + 1);
  case IR_SCATTER:
    return sh_shape_of(s, ir_kid(m, e, 2), depth, out, nest + 1);
  case IR_PERMUTE:
    return sh_shape_of(s, ir_kid(m, e, 1), depth, out, nest + 1);
  case IR_FOLD: { /* rank r + 1 -> r */
    sh_info a;
    if (!sh_shape_of(s, ir_kid(m, e, 2), depth, &a, nest + 1) || a.rank != r + 1)
      return false;
    *out = a;
    out->rank = r;
    return true;
  }
  case IR_FOLD_SEG: { /* one result per segment: len(lens) */
    sh_info l;
    if (r != 1 || !sh_shape_of(s, ir_kid(m, e, 3), depth, &l, nest + 1))
      return false;
    *out = l;
    return true;
  }
  case IR_TRANSPOSE: {
    if (!sh_shape_of(s, ir_kid(m, e, 0), depth, out, nest + 1) || r < 2)
      return false;
    ir_ref t = out->x[r - 1];
    out->x[r - 1] = out->x[r - 2];
    out->x[r - 2] = t;
    return true;
  }
  case IR_REPLICATE: {
    sh_info a;
    ir_ref k = sh_size(s, ir_kid(m, e, 0), depth, nest + 1);
    if (k == IR_NONE || !sh_shape_of(s, ir_kid(m, e, 1), depth, &a, nest + 1) ||
        a.rank + 1 != r)
      return false;
    *out = a;
    out->rank = r;
    memmove(out->x + 1, a.x, a.rank * sizeof *out->x);
    out->x[0] = k;
    return true;
  }
  default:
    return false;
  }
}

/* ---- the rewrite ---- */

static bool sh_push(sh *s, const sh_info *v) {
  if (!ac_grow(s->c->ctx, (void **)&s->env, &s->capenv, s->nenv + 1, sizeof *s->env)) {
    s->oom = true;
    return false;
  }
  s->env[s->nenv++] = *v;
  return true;
}

/* What a let binds: a size (integer), a known shape (array), or nothing. */
static void sh_bind_info(sh *s, ir_ref v, uint32_t depth, sh_info *out) {
  memset(out, 0, sizeof *out);
  ir_type t = ir_node_get(s->m, v)->type;
  if (ir_ty_is_int(s->m->ctx, t)) {
    ir_ref x = sh_size(s, v, depth, 0);
    if (x != IR_NONE)
      *out = (sh_info){.kind = SH_SCALAR, .depth = depth, .rank = 0, .x = {x}};
  } else if (sh_rank(s->m, t) > 0) {
    sh_shape_of(s, v, depth, out, 0);
  }
}

/* Kid i of r is plan-level code evaluated unconditionally at r's place:
 * not a function, not a branch, not a loop's body, not a rec body. */
static bool sh_plan_kid(const ac_module *m, ir_ref r, uint32_t i) {
  const ir_node *n = ir_node_get(m, r);
  ir_ref k = ir_kid(m, r, i);
  if (!k)
    return false;
  ir_op kop = (ir_op)ir_node_get(m, k)->op;
  if (kop == IR_LAM || kop == IR_FNREF)
    return false;
  switch ((ir_op)n->op) {
  case IR_IF:
  case IR_LAND:
  case IR_LOR:
    return i == 0;
  case IR_REC:
  case IR_LOOP:
  case IR_SIZED: /* its shape is not code */
    return false;
  case IR_LET:
  case IR_LETTUP:
    return true;
  default:
    return ir_binders(m, r, i) == 0;
  }
}

/* Array operations lowering allocates a result for. */
static bool sh_allocates(const ac_module *m, ir_ref r) {
  ir_op op = (ir_op)ir_node_get(m, r)->op;
  if (op == IR_TILED)
    return true;
  return ps_is_array_op(m, r) && op != IR_RESHAPE && op != IR_ITERATE && op != IR_WHILE &&
         op != IR_ARRLIT && op != IR_REC;
}

static ir_ref sh_walk(sh *s, ir_ref r, uint32_t depth, bool wrap, unsigned nest) {
  ac_module *m = s->m;
  if (nest > SH_MAX_DEPTH || s->oom)
    return r;
  const ir_node n0 = *ir_node_get(m, r), *n = &n0;
  uint32_t nk = n->nkids;
  ir_ref small[8], *kids = nk <= 8 ? small : ac_alloc(s->c->ctx, nk * sizeof *kids);
  if (!kids) {
    s->oom = true;
    return r;
  }
  for (uint32_t i = 0; i < nk; i++) {
    ir_ref k = ir_kid(m, r, i);
    kids[i] = k;
    if (!sh_plan_kid(m, r, i))
      continue;
    if ((n->op == IR_LET || n->op == IR_LETTUP) && i == 1) {
      /* the body, with what the let binds */
      size_t saved = s->nenv;
      uint32_t nb = ir_binders(m, r, 1);
      ir_ref v = ir_kid(m, r, 0);
      const ir_node vn0 = *ir_node_get(m, v), *vn = &vn0;
      for (uint32_t j = 0; j < nb && !s->oom; j++) {
        sh_info info;
        memset(&info, 0, sizeof info);
        if (n->op == IR_LET)
          sh_bind_info(s, v, depth, &info);
        else if (vn->op == IR_TUPLE && vn->nkids == nb)
          sh_bind_info(s, ir_kid(m, v, j), depth, &info);
        /* a binder j deeper sees the earlier ones: shift to its depth */
        for (uint32_t d = 0; d < (info.kind == SH_ARRAY ? info.rank : 1) && info.kind; d++)
          info.x[d] = sh_at(s, info.x[d], info.depth, depth + j);
        info.depth = depth + j;
        sh_push(s, &info);
      }
      kids[i] = sh_walk(s, k, depth + nb, true, nest + 1);
      s->nenv = saved;
      continue;
    }
    /* delay's producer allocates nothing; tiled's map is wrapped with it */
    bool w = n->op != IR_DELAY && n->op != IR_TILED;
    kids[i] = sh_walk(s, k, depth, w, nest + 1);
  }
  ir_ref res = s->oom ? r : ps_rebuild_if_changed(m, r, kids);
  if (kids != small)
    ac_free(s->c->ctx, kids);
  if (res == IR_NONE) {
    s->oom = true;
    return r;
  }
  if (!wrap || s->oom || !sh_allocates(m, r) || sh_rank(m, n->type) == 0)
    return res;
  sh_info sz;
  if (!sh_shape_of(s, r, depth, &sz, 0)) {
    s->c->counters[SH_UNKNOWN]++;
    return res;
  }
  ir_ref shape = sz.x[0];
  if (sz.rank > 1)
    shape = sh_node(s, IR_TUPLE, n->loc, sz.rank, sz.x);
  ir_ref k2[2] = {res, shape};
  ir_ref w = shape == IR_NONE ? IR_NONE : sh_node(s, IR_SIZED, n->loc, 2, k2);
  if (w == IR_NONE)
    return res;
  s->c->counters[SH_SIZED]++;
  return w;
}

/* The entry point (passes_list.h registers it). */
ac_status ps_shape(ps_ctx *c);
ac_status ps_shape(ps_ctx *c) {
  ac_module *m = c->m;
  sh s;
  memset(&s, 0, sizeof s);
  s.c = c;
  s.m = m;
  s.t_i64 = ir_ty_scalar(c->ctx, AC_I64);
  for (size_t f = 0; f < m->nfuncs && !s.oom; f++) {
    ir_func *fn = &m->funcs[f];
    if (!fn->body || fn->is_extern)
      continue;
    /* the parameters: arrays by len / shape, integers as themselves */
    s.nenv = 0;
    uint32_t np = fn->nparams;
    for (uint32_t i = 0; i < np && !s.oom; i++) {
      ir_type t = ir_func_param(m, fn, i);
      ir_ref v = ir_var(m, fn->loc, np - 1 - i);
      sh_info info;
      memset(&info, 0, sizeof info);
      info.depth = np;
      uint32_t r = sh_rank(m, t);
      if (v == IR_NONE) {
        s.oom = true;
      } else if (ir_ty_is_int(c->ctx, t)) {
        ir_node_get(m, v)->type = t;
        info.kind = SH_SCALAR;
        info.x[0] = sh_i64(&s, v, fn->loc);
      } else if (r > 0 && r <= SH_MAX_RANK && ir_ty_num_leaves(c->ctx, t) == 1) {
        /* (a tuple of arrays: len and shape check that its arrays agree,
         * which can fail: not a size) */
        ir_node_get(m, v)->type = t;
        ir_ref sv = sh_node(&s, r == 1 ? IR_LEN : IR_SHAPE, fn->loc, 1, &v);
        info.kind = SH_ARRAY;
        info.rank = r;
        for (uint32_t d = 0; d < r && sv != IR_NONE; d++) {
          if (r == 1) {
            info.x[0] = sv;
          } else {
            info.x[d] = sh_node(&s, IR_PROJ, fn->loc, 1, &sv);
            if (info.x[d] != IR_NONE)
              ir_node_get(m, info.x[d])->attr = d;
          }
        }
      }
      sh_push(&s, &info);
    }
    uint64_t saved[2] = {c->counters[0], c->counters[1]};
    ir_ref nb = s.oom ? fn->body : sh_walk(&s, fn->body, np, true, 0);
    if (nb != fn->body && !s.oom && !ps_printable(m, nb)) {
      c->counters[0] = saved[0];
      c->counters[1] = saved[1];
      continue;
    }
    fn->body = nb;
  }
  ac_free(c->ctx, s.env);
  if (s.oom || m->oom)
    return ir_report(c->err, NULL, AC_ERR_NOMEM);
  return AC_OK;
}
