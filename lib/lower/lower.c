/* lib/lower/lower.c: the lowering driver, from a verified function to a
 * kernel plan (runtime/plan.h) and its kernels (lower.h has the design).
 *
 * lw_function binds each parameter to fresh frame words, lowers the body
 * and declares the result's words. lw_expr walks PLAN-LEVEL positions:
 *   - variables, tuples, projections, lengths and shapes only name words
 *     (a length is the extent word of its array; nothing is copied);
 *   - let and destructuring let bind the words of their value;
 *   - calls are inlined: the callee's body is lowered with an environment
 *     of the argument values (the call graph is acyclic, so this ends);
 *   - if (of array type, or with plan-level work) becomes a plan `if`
 *     whose branches assign into the same fresh words, and && / || with
 *     plan-level work on the right the same way, so only the branch the
 *     program takes runs;
 *   - iterate / while / loop whose state holds arrays, or whose body holds
 *     array operations, become plan loops over state words that each step
 *     reassigns (through temporaries when the new state reuses words of
 *     the old one in other places: a parallel assignment);
 *   - array operations go to their skeleton (skel_table.c);
 *   - everything else is a scalar expression (lower_scalar.c).
 * Kernels are begun with lw_kernel_begin, which loads into the kernel just
 * the plan-level variables that the node uses (ir_occurs) and records
 * every frame word a kernel touches, so a GPU launch will know what to
 * pass.
 *
 * Requirements: the module is verified (types on every node). Compile
 * errors go to the cg_module (cg_error: first one wins); the plan is
 * finished (pl_finish) when lowering succeeds.
 */
#include "lower/skel.h"

#include <stdio.h>
#include <string.h>

/* ---- leaves and words ---- */

typedef struct leaf_acc {
  lw_leaf *v;
  uint32_t n, cap, word;
} leaf_acc;

static void leaf_cb(void *ud, ac_scalar sc, uint32_t rank) {
  leaf_acc *a = ud;
  if (a->n < a->cap)
    a->v[a->n] = (lw_leaf){sc, rank, a->word};
  a->n++;
  a->word += 1 + rank;
}

uint32_t lw_leaves(lw *L, ir_type t, const lw_leaf **out) {
  uint32_t n = ir_ty_num_leaves(L->ctx, t);
  lw_leaf *v = cg_new(L->M, (n ? n : 1) * sizeof *v);
  leaf_acc a = {v, 0, n, 0};
  ir_ty_leaves(L->ctx, t, leaf_cb, &a);
  *out = v;
  return a.n < n ? a.n : n;
}

bool lw_has_array(lw *L, ir_type t) {
  const lw_leaf *lv;
  uint32_t n = lw_leaves(L, t, &lv);
  for (uint32_t i = 0; i < n; i++)
    if (lv[i].rank)
      return true;
  return false;
}

void lw_fresh(lw *L, ir_type t, lw_val *out) {
  out->type = t;
  out->nwords = cg_frame_words(L->ctx, t);
  out->words = cg_new(L->M, (out->nwords ? out->nwords : 1) * sizeof *out->words);
  uint32_t first = out->nwords ? pl_slots(L->p, out->nwords) : 0;
  for (uint32_t i = 0; i < out->nwords; i++)
    out->words[i] = first + i;
  if (L->p->oom)
    cg_error(L->M, AC_ERR_NOMEM, 0, "out of memory");
}

uint32_t lw_leaf_word(lw *L, ir_type t, uint32_t leaf) {
  const lw_leaf *lv;
  uint32_t n = lw_leaves(L, t, &lv);
  if (leaf >= n) {
    cg_error(L->M, AC_ERR_INTERNAL, 0, "lowering: leaf %u of a value of %u leaves", leaf, n);
    return 0;
  }
  return lv[leaf].word;
}

uint32_t lw_num_leaves(lw *L, const lw_val *v) {
  return ir_ty_num_leaves(L->ctx, v->type);
}

void lw_field(lw *L, const lw_val *v, uint32_t i, lw_val *out) {
  ir_typeinfo ti = ir_ty_info(L->ctx, v->type);
  if (ti.kind != TK_TUPLE || i >= ti.n) {
    cg_error(L->M, AC_ERR_INTERNAL, 0, "lowering: field %u of a value that has none", i);
    lw_fresh(L, ir_ty_unit(L->ctx), out);
    return;
  }
  uint32_t off = 0;
  for (uint32_t f = 0; f < i; f++)
    off += cg_frame_words(L->ctx, ti.fields[f]);
  out->type = ti.fields[i];
  out->nwords = cg_frame_words(L->ctx, out->type);
  out->words = v->words + off;
}

uint32_t lw_extent(lw *L, const lw_val *v, uint32_t leaf, uint32_t dim) {
  const lw_leaf *lv;
  uint32_t n = lw_leaves(L, v->type, &lv);
  if (leaf >= n || dim >= lv[leaf].rank || lv[leaf].word + 1 + dim >= v->nwords) {
    cg_error(L->M, AC_ERR_INTERNAL, 0, "lowering: extent %u of leaf %u that has none", dim, leaf);
    return lw_x_const(L, 0);
  }
  return lw_x_word(L, v->words[lv[leaf].word + 1 + dim]);
}

void lw_alloc_arrays(lw *L, const lw_val *out, const uint32_t *ext, ir_ref at) {
  const lw_leaf *lv;
  uint32_t n = lw_leaves(L, out->type, &lv);
  uint32_t site = cg_site(L->M, at, "negative extent %lld");
  for (uint32_t i = 0; i < n; i++)
    if (lv[i].rank)
      pl_alloc(L->p, out->words[lv[i].word], lv[i].sc, lv[i].rank, ext, site);
}

/* dst = src leaf by leaf (arrays share their buffer). */
static void lw_assign(lw *L, const lw_val *dst, const lw_val *src) {
  const lw_leaf *lv;
  uint32_t n = lw_leaves(L, dst->type, &lv);
  for (uint32_t i = 0; i < n; i++) {
    uint32_t d = dst->words[lv[i].word], s = src->words[lv[i].word];
    if (d != s)
      pl_assign(L->p, d, s, lv[i].sc, lv[i].rank);
  }
}

/* dst = src where src may read words of dst in other places (loop state
 * that swaps fields): then through fresh words. */
static void lw_assign_state(lw *L, const lw_val *dst, const lw_val *src) {
  bool clash = false;
  for (uint32_t i = 0; i < src->nwords && !clash; i++)
    for (uint32_t j = 0; j < dst->nwords && !clash; j++)
      clash = i != j && src->words[i] == dst->words[j];
  if (clash) {
    lw_val t;
    lw_fresh(L, dst->type, &t);
    lw_assign(L, &t, src);
    src = &t;
    lw_assign(L, dst, src);
    return;
  }
  lw_assign(L, dst, src);
}

/* ---- the environment ---- */

void lw_env_push(lw *L, const lw_val *v) {
  size_t cap = L->capenv;
  if (!ac_grow(L->ctx, (void **)&L->env, &cap, (size_t)L->nenv + 1, sizeof *L->env)) {
    cg_error(L->M, AC_ERR_NOMEM, 0, "out of memory");
    return;
  }
  L->capenv = (uint32_t)cap;
  L->env[L->nenv++] = *v;
}

void lw_env_pop(lw *L, uint32_t n) {
  L->nenv = n > L->nenv ? 0 : L->nenv - n;
}

/* ---- plan-level work ---- */

static bool is_array_op(ir_op op) {
  return (op >= IR_GENERATE && op <= IR_FILTER) || op == IR_REC || op == IR_ARRLIT;
}

static bool fn_work(lw *L, int64_t fi);

/* The body of a function argument (LAM or FNREF) has work. */
static bool lam_work(lw *L, ir_ref fn) {
  const ir_node *n = ir_node_get(L->m, fn);
  if (n->op == IR_LAM)
    return lw_has_work(L, ir_kid(L->m, fn, 0));
  return n->op == IR_FNREF && fn_work(L, n->attr);
}

/* An iterate / while / loop that becomes a plan loop. */
static bool loop_at_plan(lw *L, ir_ref e) {
  const ir_node *n = ir_node_get(L->m, e);
  if (lw_has_array(L, n->type))
    return true;
  if (n->op == IR_LOOP)
    return n->nkids >= 2 &&
           (lam_work(L, ir_kid(L->m, e, n->nkids - 2)) || lam_work(L, ir_kid(L->m, e, n->nkids - 1)));
  return (n->op == IR_WHILE && lam_work(L, ir_kid(L->m, e, 0))) || lam_work(L, ir_kid(L->m, e, 1));
}

static bool work_of(lw *L, ir_ref e) {
  const ir_node *n = ir_node_get(L->m, e);
  ir_op op = (ir_op)n->op;
  if (is_array_op(op))
    return true;
  if (op == IR_LAM || op == IR_FNREF)
    return false;
  if ((op == IR_ITERATE || op == IR_WHILE || op == IR_LOOP) && loop_at_plan(L, e))
    return true;
  if (op == IR_CALL && fn_work(L, n->attr))
    return true;
  for (uint32_t i = 0; i < n->nkids; i++)
    if (lw_has_work(L, ir_kid(L->m, e, i)))
      return true;
  return false;
}

bool lw_has_work(lw *L, ir_ref e) {
  if (e < L->nwork && L->work[e])
    return L->work[e] == 2;
  bool w = work_of(L, e);
  if (e < L->nwork)
    L->work[e] = w ? 2 : 1;
  return w;
}

static bool fn_work(lw *L, int64_t fi) {
  if (fi >= 0 && (uint64_t)fi < L->m->nfuncs && L->m->funcs[fi].is_kernel)
    return true; /* a launch */
  if (fi < 0 || (uint64_t)fi >= L->m->nfuncs || !L->m->funcs[fi].body)
    return false;
  if (L->fwork[fi])
    return L->fwork[fi] == 2;
  bool w = lw_has_work(L, L->m->funcs[fi].body);
  L->fwork[fi] = w ? 2 : 1;
  return w;
}

/* ---- kernels ---- */

uint32_t lw_kernel_new(lw *L, ir_ref at, const char *kind, int64_t grain, char name[80]) {
  cg_module *M = L->M;
  snprintf(name, 80, "k%u_%s", M->nkernels++, kind);
  for (char *c = name; *c; c++)
    if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9')))
      *c = '_';
  uint32_t k = pl_kernel_add(L->p, kind, name, grain);
  if (L->p->oom)
    cg_error(M, AC_ERR_NOMEM, at, "out of memory");
  return k;
}

void lw_kernel_env(lw *L, cg_fn *f, ir_ref at, uint32_t kernel) {
  for (uint32_t i = 0; i < L->nenv; i++) {
    cg_val v;
    if (ir_occurs(L->m, at, L->nenv - 1 - i))
      lw_load(L, f, kernel, &L->env[i], &v);
    else
      cg_val_alloc(L->M, L->env[i].type, &v); /* a placeholder nobody reads */
    cg_env_push(f, &v);
  }
}

cg_fn *lw_kernel_begin(lw *L, ir_ref at, const char *kind, int64_t grain, uint32_t *kernel) {
  char name[80];
  *kernel = lw_kernel_new(L, at, kind, grain, name);
  cg_fn *f = L->gpu ? lw_adapt_begin(L, name, *kernel) : cg_kernel_begin(L->M, name);
  lw_kernel_env(L, f, at, *kernel);
  return f;
}

void lw_kernel_end(lw *L, cg_fn *f) {
  if (L->gpu)
    lw_adapt_end(L, f);
  else
    cg_kernel_end(f);
}

void lw_launch(lw *L, uint32_t kernel, uint32_t n, uint32_t chunks) {
  if (L->gpu)
    lw_adapt_launch(L, kernel, n, chunks);
  else
    pl_launch(L->p, kernel, n, chunks);
}

static void note_uses(lw *L, uint32_t kernel, const lw_val *v) {
  for (uint32_t i = 0; i < v->nwords; i++)
    pl_kernel_use(L->p, kernel, v->words[i]);
}

void lw_load(lw *L, cg_fn *f, uint32_t kernel, const lw_val *v, cg_val *out) {
  if (lw_load_delayed(L, f, kernel, v, out) || lw_load_points(L, f, kernel, v, out))
    return;
  cg_load_frame(f, v->type, v->words, out);
  note_uses(L, kernel, v);
}

void lw_store(lw *L, cg_fn *f, uint32_t kernel, const lw_val *v, const cg_val *val) {
  cg_store_frame(f, v->words, val);
  for (uint32_t i = 0; i < v->nwords; i++)
    pl_kernel_write(L->p, kernel, v->words[i]);
}

/* ---- calls and lambdas at plan level ---- */

bool lw_closed_expr(lw *L, uint32_t nargs, const lw_val *args, ir_ref e, lw_val *out) {
  lw_val *env = L->env;
  uint32_t nenv = L->nenv, capenv = L->capenv;
  L->env = NULL;
  L->nenv = L->capenv = 0;
  for (uint32_t i = 0; i < nargs; i++)
    lw_env_push(L, &args[i]);
  bool ok = L->M->st == AC_OK && lw_expr(L, e, out);
  ac_free(L->ctx, L->env);
  L->env = env;
  L->nenv = nenv;
  L->capenv = capenv;
  return ok;
}

/* The body of function fi with an environment of exactly args; an extern
 * kernel is launched (skel_extern.c). */
static bool inline_fn(lw *L, int64_t fi, uint32_t nargs, const lw_val *args, ir_ref at,
                      lw_val *out) {
  if (fi >= 0 && (uint64_t)fi < L->m->nfuncs && L->m->funcs[fi].is_kernel &&
      L->m->funcs[fi].nparams == nargs)
    return lw_extern_kernel(L, at, (uint32_t)fi, args, out);
  if (fi < 0 || (uint64_t)fi >= L->m->nfuncs || !L->m->funcs[fi].body ||
      L->m->funcs[fi].nparams != nargs) {
    cg_error(L->M, AC_ERR_INTERNAL, at, "lowering: a call that does not match its function");
    return false;
  }
  return lw_closed_expr(L, nargs, args, L->m->funcs[fi].body, out);
}

/* A LAM or FNREF applied at plan level (loop bodies). */
static bool lw_apply(lw *L, ir_ref fn, uint32_t nargs, const lw_val *args, lw_val *out) {
  const ir_node *n = ir_node_get(L->m, fn);
  if (n->op == IR_FNREF)
    return inline_fn(L, n->attr, nargs, args, fn, out);
  if (n->op != IR_LAM || n->attr != (int64_t)nargs) {
    cg_error(L->M, AC_ERR_INTERNAL, fn, "lowering: a function of the wrong arity");
    return false;
  }
  for (uint32_t i = 0; i < nargs; i++)
    lw_env_push(L, &args[i]);
  bool ok = L->M->st == AC_OK && lw_expr(L, ir_kid(L->m, fn, 0), out);
  lw_env_pop(L, nargs);
  return ok;
}

static bool lower_call(lw *L, ir_ref e, lw_val *out) {
  const ir_node *n = ir_node_get(L->m, e);
  bool kernel = n->attr >= 0 && (uint64_t)n->attr < L->m->nfuncs && L->m->funcs[n->attr].is_kernel;
  if (!kernel && (n->attr < 0 || (uint64_t)n->attr >= L->m->nfuncs || !L->m->funcs[n->attr].body))
    return lw_scalar(L, e, out); /* an extern: scalar code calls it */
  uint32_t nargs = n->nkids;
  lw_val *args = cg_new(L->M, (nargs ? nargs : 1) * sizeof *args);
  for (uint32_t i = 0; i < nargs; i++)
    if (!lw_expr(L, ir_kid(L->m, e, i), &args[i]))
      return false;
  return inline_fn(L, n->attr, nargs, args, e, out);
}

/* ---- control flow ---- */

static bool lower_if(lw *L, ir_ref e, lw_val *out) {
  lw_val c, a, b;
  if (!lw_expr(L, ir_kid(L->m, e, 0), &c))
    return false;
  lw_fresh(L, ir_node_get(L->m, e)->type, out);
  pl_if(L->p, c.words[0]);
  if (!lw_expr(L, ir_kid(L->m, e, 1), &a))
    return false;
  lw_assign(L, out, &a);
  pl_else(L->p);
  if (!lw_expr(L, ir_kid(L->m, e, 2), &b))
    return false;
  lw_assign(L, out, &b);
  pl_end(L->p);
  return L->M->st == AC_OK;
}

/* x && y, x || y with plan-level work in y: y runs only when x does not
 * decide. */
static bool lower_logic(lw *L, ir_ref e, lw_val *out) {
  bool is_and = ir_node_get(L->m, e)->op == IR_LAND;
  lw_val x, y;
  if (!lw_expr(L, ir_kid(L->m, e, 0), &x))
    return false;
  lw_fresh(L, ir_node_get(L->m, e)->type, out);
  pl_if(L->p, x.words[0]);
  if (!is_and)
    lw_assign(L, out, &x);
  else if (!lw_expr(L, ir_kid(L->m, e, 1), &y))
    return false;
  else
    lw_assign(L, out, &y);
  pl_else(L->p);
  if (is_and)
    lw_assign(L, out, &x);
  else if (!lw_expr(L, ir_kid(L->m, e, 1), &y))
    return false;
  else
    lw_assign(L, out, &y);
  pl_end(L->p);
  return L->M->st == AC_OK;
}

/* iterate(n, f, x): `for` over the count (a negative count runs no step,
 * as in the interpreter). */
static bool lower_iterate(lw *L, ir_ref e, lw_val *out) {
  uint32_t n = lw_int(L, ir_kid(L->m, e, 0));
  lw_val x, r;
  if (L->M->st != AC_OK || !lw_expr(L, ir_kid(L->m, e, 2), &x))
    return false;
  lw_fresh(L, ir_node_get(L->m, e)->type, out);
  lw_assign(L, out, &x);
  uint32_t i = pl_slots(L->p, 1);
  struct lw_hoisted *mark = lw_hoist_offsets(L, ir_kid(L->m, e, 1), 0);
  pl_for(L->p, i, lw_x_const(L, 0), n);
  if (!lw_apply(L, ir_kid(L->m, e, 1), 1, out, &r))
    return false;
  lw_assign_state(L, out, &r);
  pl_end(L->p);
  lw_hoist_end(L, mark);
  return L->M->st == AC_OK;
}

/* while(c, f, x) and loop (x1 = e1, ..) while c { f }: the condition is
 * computed into a bool word (by a one-chunk kernel, unless it is already
 * a word) and `break unless` leaves the plan's while. */
static bool lower_while(lw *L, ir_ref e, lw_val *out) {
  const ir_node *n = ir_node_get(L->m, e);
  bool is_loop = n->op == IR_LOOP;
  uint32_t k = is_loop ? n->nkids - 2 : 1;
  ir_ref cond = ir_kid(L->m, e, is_loop ? k : 0), step = ir_kid(L->m, e, is_loop ? k + 1 : 1);
  lw_fresh(L, n->type, out);
  lw_val *state = cg_new(L->M, (k ? k : 1) * sizeof *state);
  if (is_loop) {
    for (uint32_t i = 0; i < k; i++) {
      lw_val x;
      if (!lw_expr(L, ir_kid(L->m, e, i), &x))
        return false;
      if (k > 1)
        lw_field(L, out, i, &state[i]);
      else
        state[0] = *out;
      lw_assign(L, &state[i], &x);
    }
  } else {
    lw_val x;
    if (!lw_expr(L, ir_kid(L->m, e, 2), &x))
      return false;
    lw_assign(L, out, &x);
    state[0] = *out;
  }
  lw_val c, r;
  struct lw_hoisted *mark = lw_hoist_offsets(L, step, is_loop ? k : 0);
  pl_while(L->p);
  if (!lw_apply(L, cond, k, state, &c))
    return false;
  pl_break_unless(L->p, c.words[0]);
  if (!lw_apply(L, step, k, state, &r))
    return false;
  lw_assign_state(L, out, &r);
  pl_end(L->p);
  lw_hoist_end(L, mark);
  return L->M->st == AC_OK;
}

/* ---- the walk ---- */

static bool lower_var(lw *L, ir_ref e, lw_val *out) {
  int64_t j = ir_node_get(L->m, e)->attr - (int64_t)L->vshift;
  if (j < 0 || (uint64_t)j >= L->nenv) {
    cg_error(L->M, AC_ERR_INTERNAL, e, "lowering: unbound variable %lld", (long long)j);
    return false;
  }
  *out = L->env[L->nenv - 1 - (uint32_t)j];
  return true;
}

static bool lower_tuple(lw *L, ir_ref e, lw_val *out) {
  const ir_node *n = ir_node_get(L->m, e);
  out->type = n->type;
  out->nwords = cg_frame_words(L->ctx, n->type);
  out->words = cg_new(L->M, (out->nwords ? out->nwords : 1) * sizeof *out->words);
  uint32_t w = 0;
  for (uint32_t i = 0; i < n->nkids; i++) {
    lw_val f;
    if (!lw_expr(L, ir_kid(L->m, e, i), &f))
      return false;
    for (uint32_t j = 0; j < f.nwords && w < out->nwords; j++)
      out->words[w++] = f.words[j];
  }
  return true;
}

/* len(a), shape(a): the extent words of a (after the interpreter's check
 * that the arrays of a tuple agree). */
static bool lower_len_shape(lw *L, ir_ref e, lw_val *out) {
  const ir_node *n = ir_node_get(L->m, e);
  lw_val a;
  if (!lw_expr(L, ir_kid(L->m, e, 0), &a))
    return false;
  lw_check_shapes(L, e, ir_ops[n->op].spelling, 1, &a);
  const lw_leaf *lv;
  uint32_t nl = lw_leaves(L, a.type, &lv);
  out->type = n->type;
  out->nwords = cg_frame_words(L->ctx, n->type);
  out->words = cg_new(L->M, (out->nwords ? out->nwords : 1) * sizeof *out->words);
  if (nl == 0 || lv[0].rank < out->nwords) {
    cg_error(L->M, AC_ERR_INTERNAL, e, "lowering: %s of a value without extents",
             ir_ops[n->op].spelling);
    return false;
  }
  for (uint32_t d = 0; d < out->nwords; d++)
    out->words[d] = a.words[lv[0].word + 1 + d];
  return true;
}

static bool lower_let(lw *L, ir_ref e, lw_val *out) {
  const ir_node *n = ir_node_get(L->m, e);
  lw_val v;
  lw_rec c;
  /* a recurrence read only at a few points: a window of it (skel_rec.c) */
  if (n->op == IR_LET && lw_rec_let_ok(L, e, &c) ? !lw_skel_rec_let(L, e, &c, &v)
                                                 : !lw_expr(L, ir_kid(L->m, e, 0), &v))
    return false;
  uint32_t nb = n->op == IR_LET ? 1 : (uint32_t)n->attr;
  for (uint32_t i = 0; i < nb; i++) {
    lw_val f = v;
    if (n->op == IR_LETTUP)
      lw_field(L, &v, i, &f);
    lw_env_push(L, &f);
  }
  bool ok = L->M->st == AC_OK && lw_expr(L, ir_kid(L->m, e, 1), out);
  lw_env_pop(L, nb);
  return ok;
}

static bool lower_node(lw *L, ir_ref e, lw_val *out) {
  const ir_node *n = ir_node_get(L->m, e);
  ir_op op = (ir_op)n->op;
  switch (op) {
  case IR_VAR:
    return lower_var(L, e, out);
  case IR_TUPLE:
    return lower_tuple(L, e, out);
  case IR_PROJ: {
    lw_val t;
    if (!lw_expr(L, ir_kid(L->m, e, 0), &t))
      return false;
    lw_field(L, &t, (uint32_t)n->attr, out);
    return L->M->st == AC_OK;
  }
  case IR_LEN:
  case IR_SHAPE:
    return lower_len_shape(L, e, out);
  case IR_DELAY: /* not an operand (lw_operand): p, made manifest */
    return lw_expr(L, ir_kid(L->m, e, 0), out);
  case IR_SIZED: /* e, allocated before the first launch where it can be (sized.c) */
    return lw_sized(L, e, out);
  case IR_TILED: { /* a request to the skeleton of e's operand (gskel_tile.c) */
    ir_ref x = ir_kid(L->m, e, 0);
    L->tile_at = x;
    bool ok = lw_expr(L, x, out);
    L->tile_at = IR_NONE;
    return ok;
  }
  default:
    break;
  }
  /* scalar code without plan-level work: one kernel (or a plan expression) */
  if (!lw_has_work(L, e) && !lw_has_array(L, n->type))
    return lw_scalar(L, e, out);
  switch (op) {
  case IR_LET:
  case IR_LETTUP:
    return lower_let(L, e, out);
  case IR_CALL:
    return lower_call(L, e, out);
  case IR_IF:
    return lower_if(L, e, out);
  case IR_LAND:
  case IR_LOR:
    return lw_has_work(L, ir_kid(L->m, e, 1)) ? lower_logic(L, e, out) : lw_scalar(L, e, out);
  case IR_INDEX: { /* one element of a recurrence: a window of it (skel_rec.c) */
    lw_rec c;
    if (lw_rec_at_ok(L, e, &c))
      return lw_skel_rec_at(L, e, &c, out) && L->M->st == AC_OK;
    break;
  }
  case IR_FOLD: { /* the rows' folds of a recurrence, with a window */
    lw_rec c;
    if (lw_rec_fold_ok(L, e, &c))
      return lw_skel_rec_fold(L, e, &c, out) && L->M->st == AC_OK;
    break;
  }
  case IR_ITERATE:
    return loop_at_plan(L, e) ? lower_iterate(L, e, out) : lw_scalar(L, e, out);
  case IR_WHILE:
  case IR_LOOP:
    return loop_at_plan(L, e) ? lower_while(L, e, out) : lw_scalar(L, e, out);
  default:
    break;
  }
  if (is_array_op(op)) {
    lw_skel_fn sk = L->gpu && lw_gpu_skeleton(op) ? lw_gpu_skeleton(op) : lw_skeleton(op);
    if (!sk) {
      cg_error(L->M, AC_ERR_UNSUPPORTED, e, "%s is not supported by the cpu backend yet",
               ir_ops[op].spelling[0] ? ir_ops[op].spelling : ir_ops[op].name);
      return false;
    }
    return sk(L, e, out) && L->M->st == AC_OK;
  }
  return lw_scalar(L, e, out);
}

bool lw_expr(lw *L, ir_ref e, lw_val *out) {
  if (e == IR_NONE || e >= L->m->nnodes) {
    cg_error(L->M, AC_ERR_INTERNAL, 0, "lowering: no node %u", e);
    lw_fresh(L, ir_ty_unit(L->ctx), out);
    return false;
  }
  bool ok = false;
  if (L->M->st == AC_OK) {
    if (L->depth >= LW_MAX_DEPTH) {
      cg_error(L->M, AC_ERR_UNSUPPORTED, e, "program nested too deeply for the cpu backend");
    } else {
      L->depth++;
      ok = lower_node(L, e, out) && L->M->st == AC_OK;
      L->depth--;
    }
  }
  if (!ok) /* callers may look at the words; give them harmless ones */
    lw_fresh(L, ir_node_get(L->m, e)->type, out);
  return ok;
}

/* ---- the entry point ---- */

typedef struct leaf_decl {
  lw *L;
  const uint32_t *words;
  uint32_t w;
  bool result;
  uint32_t *seen; /* result words already declared (duplicates are copied) */
  uint32_t nseen;
} leaf_decl;

static void declare_leaf(void *ud, ac_scalar sc, uint32_t rank) {
  leaf_decl *d = ud;
  uint32_t slot = d->words[d->w];
  d->w += 1 + rank;
  if (!d->result) {
    pl_param(d->L->p, slot, sc, rank);
    return;
  }
  for (uint32_t i = 0; i < d->nseen; i++)
    if (d->seen[i] == slot) { /* the same words twice: give the second its own */
      uint32_t fresh = pl_slots(d->L->p, 1 + rank);
      pl_assign(d->L->p, fresh, slot, sc, rank);
      slot = fresh;
      break;
    }
  d->seen[d->nseen++] = slot;
  pl_result(d->L->p, slot, sc, rank);
}

ac_status lw_function(cg_module *M, uint32_t fn, ac_error **err) {
  ac_module *m = M->m;
  lw L;
  memset(&L, 0, sizeof L);
  L.M = M;
  L.p = M->plan;
  L.m = m;
  L.ctx = M->ctx;
  L.gpu = M->target != CG_TARGET_CPU;
  L.p->gpu = L.gpu;
  if (fn >= m->nfuncs || !m->funcs[fn].body)
    cg_error(M, AC_ERR_INTERNAL, 0, "lowering: no function %u with a body", fn);
  L.nwork = m->nnodes;
  L.work = ac_alloc(L.ctx, L.nwork ? L.nwork : 1);
  L.fwork = ac_alloc(L.ctx, m->nfuncs ? m->nfuncs : 1);
  if (!L.work || !L.fwork)
    cg_error(M, AC_ERR_NOMEM, 0, "out of memory");
  else {
    memset(L.work, 0, L.nwork ? L.nwork : 1);
    memset(L.fwork, 0, m->nfuncs ? m->nfuncs : 1);
  }
  if (M->st == AC_OK) {
    const ir_func *f = &m->funcs[fn];
    for (uint32_t i = 0; i < f->nparams && M->st == AC_OK; i++) {
      lw_val v;
      lw_fresh(&L, ir_func_param(m, f, i), &v);
      leaf_decl d = {&L, v.words, 0, false, NULL, 0};
      ir_ty_leaves(L.ctx, v.type, declare_leaf, &d);
      lw_env_push(&L, &v);
    }
    lw_val r;
    if (M->st == AC_OK && lw_expr(&L, f->body, &r)) {
      uint32_t nl = ir_ty_num_leaves(L.ctx, r.type);
      leaf_decl d = {&L, r.words, 0, true, cg_new(M, (nl ? nl : 1) * sizeof(uint32_t)), 0};
      ir_ty_leaves(L.ctx, r.type, declare_leaf, &d);
    }
    if (M->st == AC_OK)
      lw_sized_finish(&L);
  }
  ac_free(L.ctx, L.env);
  ac_free(L.ctx, L.work);
  ac_free(L.ctx, L.fwork);
  ac_free(L.ctx, L.xdepth);
  ac_free(L.ctx, L.adapt);
  ac_free(L.ctx, L.dwords);
  ac_free(L.ctx, L.pwords);
  ac_free(L.ctx, L.early);
  if (M->st == AC_OK && L.p->oom)
    cg_error(M, AC_ERR_NOMEM, 0, "out of memory");
  if (M->st == AC_OK)
    return pl_finish(L.p, err);
  ac_status st = M->st;
  ac_error *e = M->err;
  M->err = NULL;
  return ir_report(err, e, st);
}
