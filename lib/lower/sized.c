/* lib/lower/sized.c: sized(e, s) at plan level (docs/language.md §7.17;
 * written by the shape pass, lib/passes/shape.c): e's buffers allocated
 * before the first launch.
 *
 * s is e's shape as an expression of the function's arguments. When s is a
 * size expression (lengths, shapes and integer parameters, integer
 * arithmetic: no kernel, nothing that can fail) whose plan expressions
 * read, once the words that `set`s define are replaced by their
 * definitions, nothing but the parameters' words, and e is not inside a
 * plan loop or branch, each array
 * leaf of e's result gets a `try` allocation of extents s at the very
 * start of the plan (sizes known from the arguments alone are valid
 * there), and e's own allocation of that leaf becomes `keep`: it keeps the
 * early buffer when its extents are what the plan computes at that point,
 * and allocates as usual otherwise (runtime/plan.h); allocations that come
 * before the first launch anyway are left as they are. So every buffer
 * whose size the arguments determine is allocated before any kernel runs,
 * and a
 * wrong s, or one whose allocation failed, costs a second allocation and
 * changes nothing else: errors (a negative extent, an array too large) are
 * still reported by e's own allocation, in the program's order.
 *
 * Anything else (e in a loop or a branch, s reading other words, e's
 * allocations made inside a block of its own) is lowered as e.
 */
#include "lower/skel.h"

#include <string.h>

struct lw_early {
  uint32_t inst; /* e's own allocation of the leaf (now `keep`) */
  uint32_t word; /* the leaf's data word */
  ac_scalar sc;
  uint32_t rank;
  uint32_t *ext; /* plan expressions */
};

/* s is an integer size expression: literals, integer parameters and lets,
 * len and shape and their fields, tuples of those, integer + - * / %
 * min max and conversions between integers. */
static bool sz_pure(lw *L, ir_ref s, unsigned depth) {
  const ir_node *n = ir_node_get(L->m, s);
  if (depth > 64)
    return false;
  switch ((ir_op)n->op) {
  case IR_LIT:
  case IR_VAR:
    return ir_ty_is_int(L->ctx, n->type);
  case IR_LEN:
  case IR_SHAPE: { /* of one array: of a tuple of arrays, they check it */
    const ir_node *a = ir_node_get(L->m, ir_kid(L->m, s, 0));
    return a->op == IR_VAR && ir_ty_num_leaves(L->ctx, a->type) == 1;
  }
  case IR_PROJ:
  case IR_TUPLE:
  case IR_ADD:
  case IR_SUB:
  case IR_MUL:
  case IR_DIV:
  case IR_REM:
  case IR_MIN:
  case IR_MAX:
  case IR_CAST:
    if (n->op != IR_TUPLE && n->op != IR_PROJ && !ir_ty_is_int(L->ctx, n->type))
      return false;
    for (uint32_t i = 0; i < n->nkids; i++)
      if (!sz_pure(L, ir_kid(L->m, s, i), depth + 1))
        return false;
    return n->op != IR_CAST || ir_ty_is_int(L->ctx, ir_node_get(L->m, ir_kid(L->m, s, 0))->type);
  default:
    return false;
  }
}

/* Word w is a parameter's (data or extent word). */
static bool sz_param_word(const pl_plan *p, uint32_t w) {
  for (uint32_t i = 0; i < p->nparams; i++)
    if (w >= p->params[i].slot && w <= p->params[i].slot + p->params[i].rank)
      return true;
  return false;
}

/* The expression of word w's only definition: a `set` at the top level of
 * the finished plan that nothing else writes (no other set, no
 * allocation, no kernel), or PL_AUTO. */
static uint32_t sz_definition(const pl_plan *p, uint32_t w) {
  uint32_t def = PL_AUTO;
  int depth = 0;
  for (uint32_t i = 0; i < p->ninsts; i++) {
    const pl_inst *in = &p->insts[i];
    bool writes = (in->op == PI_SET || in->op == PI_FOR || in->op == PI_ASSIGN) && in->a == w;
    if ((in->op == PI_ALLOC || in->op == PI_VIEW || in->op == PI_ASSIGN) && w >= in->a &&
        w <= in->a + in->rank)
      writes = true;
    if (writes && (in->op != PI_SET || depth != 0 || def != PL_AUTO))
      return PL_AUTO;
    if (writes)
      def = in->e;
    depth += in->op == PI_FOR || in->op == PI_WHILE || in->op == PI_IF;
    depth -= in->op == PI_END;
  }
  for (uint32_t k = 0; k < p->nkernels; k++)
    for (uint32_t j = 0; j < p->kernels[k].nwrites; j++)
      if (p->kernels[k].writes[j] == w)
        return PL_AUTO;
  return def;
}

/* x in terms of the parameters' words alone: the words it reads that a
 * `set` defines replaced by their definitions; PL_AUTO if it reads any
 * other word (or chunks(), which depends on the machine). */
static uint32_t sz_inline(lw *L, uint32_t x, unsigned depth) {
  const pl_plan *p = L->p;
  if (x >= p->nexprs || depth > 200)
    return PL_AUTO;
  pl_expr e = p->exprs[x]; /* a copy: lw_x_bin may move the array */
  switch ((pl_xop)e.op) {
  case PX_CONST:
    return x;
  case PX_WORD: {
    if (sz_param_word(p, e.a))
      return x;
    uint32_t def = sz_definition(p, e.a);
    return def == PL_AUTO ? PL_AUTO : sz_inline(L, def, depth + 1);
  }
  case PX_CHUNKS:
    return PL_AUTO;
  default: {
    uint32_t a = sz_inline(L, e.a, depth + 1), b = sz_inline(L, e.b, depth + 1);
    if (a == PL_AUTO || b == PL_AUTO)
      return PL_AUTO;
    return a == e.a && b == e.b ? x : lw_x_bin(L, (pl_xop)e.op, a, b);
  }
  }
}

/* Instructions [from, ninsts) are at the top of the plan: no loop or
 * branch is open at `from`. */
static bool sz_top_level(const pl_plan *p, uint32_t from) {
  int depth = 0;
  for (uint32_t i = 0; i < from && i < p->ninsts; i++) {
    pl_iop op = (pl_iop)p->insts[i].op;
    depth += op == PI_FOR || op == PI_WHILE || op == PI_IF;
    depth -= op == PI_END;
  }
  return depth == 0;
}

static void sz_record(lw *L, uint32_t inst, uint32_t word, ac_scalar sc, uint32_t rank,
                      const uint32_t *ext) {
  size_t cap = L->capearly;
  if (!ac_grow(L->ctx, (void **)&L->early, &cap, (size_t)L->nearly + 1, sizeof *L->early)) {
    cg_error(L->M, AC_ERR_NOMEM, 0, "out of memory");
    return;
  }
  L->capearly = (uint32_t)cap;
  uint32_t *x = cg_new(L->M, (rank ? rank : 1) * sizeof *x);
  memcpy(x, ext, rank * sizeof *x);
  L->early[L->nearly++] = (struct lw_early){inst, word, sc, rank, x};
}

bool lw_sized(lw *L, ir_ref e, lw_val *out) {
  ir_ref x = ir_kid(L->m, e, 0), s = ir_kid(L->m, e, 1);
  ir_type elem;
  uint32_t rank = 0;
  ir_ty_array_view(L->ctx, ir_node_get(L->m, x)->type, &elem, &rank);
  uint32_t from = L->p->ninsts;
  bool early = rank > 0 && sz_pure(L, s, 0) && sz_top_level(L->p, from);
  uint32_t *ext = cg_new(L->M, (rank ? rank : 1) * sizeof *ext);
  if (early) {
    lw_ints(L, s, rank, ext); /* checked once the plan is complete */
    from = L->p->ninsts; /* what s's lowering emitted (conversions) is not e's */
  }
  if (!lw_expr(L, x, out))
    return false;
  if (!early || L->M->st != AC_OK)
    return L->M->st == AC_OK;
  /* each array leaf's allocation by e, at the top level */
  const lw_leaf *lv;
  uint32_t n = lw_leaves(L, out->type, &lv);
  for (uint32_t i = 0; i < n; i++) {
    if (lv[i].rank != rank || lv[i].word >= out->nwords)
      continue;
    uint32_t w = out->words[lv[i].word];
    int depth = 0;
    for (uint32_t j = from; j < L->p->ninsts; j++) {
      pl_inst *in = &L->p->insts[j];
      depth += in->op == PI_FOR || in->op == PI_WHILE || in->op == PI_IF;
      depth -= in->op == PI_END;
      if (depth == 0 && in->op == PI_ALLOC && in->a == w && in->rank == rank &&
          !(in->flags & PL_ALLOC_KEEP)) {
        in->flags |= PL_ALLOC_KEEP;
        sz_record(L, j, w, lv[i].sc, rank, ext);
        break;
      }
    }
  }
  return L->M->st == AC_OK;
}

void lw_sized_finish(lw *L) {
  pl_plan *p = L->p;
  /* allocations before the first launch stay as they are */
  uint32_t first = 0, n = 0;
  while (first < p->ninsts && p->insts[first].op != PI_LAUNCH)
    first++;
  for (uint32_t i = 0; i < L->nearly; i++) {
    const struct lw_early *a = &L->early[i];
    /* the extents in terms of the parameters, valid at the plan's start */
    bool known = a->inst >= first;
    for (uint32_t d = 0; d < a->rank && known; d++)
      known = (a->ext[d] = sz_inline(L, a->ext[d], 0)) != PL_AUTO;
    if (!known) {
      p->insts[a->inst].flags &= (uint8_t)~PL_ALLOC_KEEP;
      continue;
    }
    uint32_t k = pl_alloc(p, a->word, a->sc, a->rank, a->ext, PL_AUTO);
    if (k < p->ninsts)
      p->insts[k].flags = PL_ALLOC_TRY;
    n++;
  }
  pl_move_last_to_front(p, n);
  ac_free(L->ctx, L->early);
  L->early = NULL;
  L->nearly = L->capearly = 0;
}
