/* dist/plan.c: the staged strategy, a distributed evaluation of a
 * function's body step by step (docs/distributed.md, "The staged
 * strategy").
 *
 * The body's top-level structure (lets, tuples, projections, ifs, calls of
 * other functions, iterate and while) is evaluated here, by every rank in
 * the same order, over values whose array leaves are distributed (blocks of
 * rows), full (the same array on every rank) or local (a rank's own
 * temporary). The operations in between run as *stages*: functions
 * synthesised from the body's subexpressions in a copy of the module and
 * compiled on the local backend (once, on first use), called with
 *   - a row-local expression (maps, folds and scans of rank >= 2 rows,
 *     reverses of rows, ... over distributed operands) on each rank's
 *     blocks, giving blocks: no communication;
 *   - a rank-1 fold: a local fold per rank, the partial results allgathered
 *     and combined in rank order (the same on every rank);
 *   - a rank-1 scan: a local scan, the block totals allgathered, each rank's
 *     carry combined from the totals before (after, for scanr) it, and a
 *     local fix-up map;
 *   - a stencil: each rank fetches the rows its window reaches from their
 *     owners (dist_fetch_rows), with the boundary's rows made by the
 *     boundary rule, runs the stencil on them and keeps its rows;
 *   - anything else: the expression on full arrays (the distributed
 *     arrays it reads are allgathered, once per array), its array results
 *     full, its scalars rank 0's.
 * len and shape of a distributed array read its global extents: they never
 * make an allgather. Scalars are the same on every rank at every step (a
 * stage on full data broadcasts rank 0's; a combination runs on the same
 * inputs in the same order everywhere), so every rank takes the same branch
 * and runs the same number of iterations: an if or a while condition is
 * agreed by construction, and checked.
 *
 * Errors: a local step that fails is agreed (dist_agree) before anything is
 * exchanged. When a distributed form fails, or meets a case it does not
 * handle (shapes that differ, an index out of range), the same expression
 * is run on full arrays, which reports exactly the error the single-process
 * backends report.
 */
#include "dist_impl.h"

#include "runtime/function.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- values ---- */

typedef enum lv_kind {
  LV_SCALAR, /* the same scalar on every rank */
  LV_FULL,   /* the same array on every rank */
  LV_DIST,   /* a distributed array */
  LV_LOCAL   /* a rank's own array (a temporary of one step) */
} lv_kind;

/* A distributed array shared by several values, with its allgathered form
 * once something has needed it. */
typedef struct dref {
  int refs;
  ac_dist_array *a;
  ac_array *full;
} dref;

typedef struct leaf {
  lv_kind kind;
  ac_datum s;    /* LV_SCALAR */
  ac_array *arr; /* LV_FULL, LV_LOCAL: one reference */
  dref *d;       /* LV_DIST: one reference */
} leaf;

typedef struct pval {
  int refs;
  ir_type type;
  uint32_t n;
  leaf l[];
} pval;

static void dref_release(dref *d) {
  if (d && --d->refs == 0) {
    ac_dist_array_destroy(d->a);
    ac_array_release(d->full);
    free(d);
  }
}

static dref *dref_new(ac_dist_array *a) {
  dref *d = malloc(sizeof *d);
  if (!d) {
    ac_dist_array_destroy(a);
    return NULL;
  }
  *d = (dref){1, a, NULL};
  return d;
}

static void pval_release(pval *v) {
  if (!v || --v->refs > 0)
    return;
  for (uint32_t i = 0; i < v->n; i++) {
    ac_array_release(v->l[i].arr);
    dref_release(v->l[i].d);
  }
  free(v);
}

static pval *pval_new(ir_type t, uint32_t n) {
  pval *v = calloc(1, sizeof *v + n * sizeof(leaf));
  if (v) {
    v->refs = 1;
    v->type = t;
    v->n = n;
  }
  return v;
}

/* Leaf j of v into leaf j of w (a new reference). */
static void leaf_copy(leaf *to, const leaf *from) {
  *to = *from;
  if (to->arr)
    ac_array_retain(to->arr);
  if (to->d)
    to->d->refs++;
}

/* ---- the plan ---- */

typedef enum bmode {
  B_FULL,  /* the value as it is on every rank (distributed leaves allgathered) */
  B_BLOCK, /* this rank's rows of the stage's partition */
  B_LEN,   /* len of the array: its global outermost extent */
  B_SHAPE  /* shape of the array: its global extents */
} bmode;

typedef struct binding {
  uint32_t v; /* de Bruijn index in the environment at the stage */
  bmode mode;
  ir_type type; /* the parameter's type */
} binding;

/* What a stage computes (its key with the node it came from). */
typedef enum variant {
  V_FULL,     /* the expression on full arrays */
  V_ROWS,     /* a row-local expression on blocks */
  V_FOLD,     /* fold(f, z, a): a local fold of a's block */
  V_SCAN,     /* a rank-1 scan of a's block */
  V_TOTAL,    /* fold(f, z, a) of a rank-1 exclusive scan's operand */
  V_APPLY,    /* f(a, b), a and b temporaries */
  V_FIXUP,    /* map(|x| f(c, x), s) (or f(x, c) for scanr), c and s temporaries */
  V_STENCIL,  /* the stencil on a temporary of fetched rows */
  V_OPERANDS, /* the node with its operands that are not row-local made temporaries */
  V_PRODUCE,  /* generate, iota or fill of this rank's rows */
  V_SLICE,    /* a slice of this rank's block */
  V_PERMUTE,  /* permute of the values routed to this rank into its block */
  V_FOLD_SEG, /* fold_seg of this rank's pieces of the segments */
  V_FILTER,   /* filter of this rank's block */
  V_SCAN_SEG, /* scan_seg or scan_incl_seg of this rank's pieces */
  V_SEGFIX,   /* a segmented scan's first piece completed with its carry */
  V_REC,      /* a tile of a recurrence's rows, its halos temporaries */
} variant;

typedef struct stage {
  ir_ref key;
  variant var;
  ir_ref expr; /* in the plan's module */
  binding *b;
  uint32_t nb;
  ac_function *fn; /* NULL: only a synthesised expression kept (V_OPERANDS) */
} stage;

struct dist_plan {
  ac_dist_runtime *rt;
  ac_context *ctx;
  ac_module *m; /* the copy stages are added to */
  uint32_t fn;
  stage *stages;
  size_t nstages, capstages;
  unsigned counter;
  /* the environment while evaluating (index nenv-1 is de Bruijn 0) */
  pval **env;
  size_t nenv, capenv;
  bool trace; /* ARRAYC_DIST_TRACE: rank 0 writes each step's form to stderr */
  /* ARRAYC_DIST_STRICT (tests): a distributed form that fails returns its
   * error instead of running again on full data, so that a form failing
   * where the program does not shows up as an error */
  bool strict;
};

/* Says how a step ran (ARRAYC_DIST_TRACE, docs/distributed.md), with the
 * array bytes this rank has sent so far. */
static void trace(const dist_plan *p, ir_ref e, const char *form) {
  if (!p->trace || p->rt->rank != 0)
    return;
  const ir_node *n = ir_node_get(p->m, e);
  const char *op = ir_ops[n->op].spelling[0] ? ir_ops[n->op].spelling : ir_ops[n->op].name;
  fprintf(stderr, "dist: %u:%u %s: %s (rank 0 sent %llu bytes so far)\n", n->loc.line, n->loc.col,
          op, form, (unsigned long long)p->rt->bytes_sent);
}

/* ---- IR helpers ---- */

/* The rank of the array operand kid i of node e (0 for a scalar, or a tuple
 * of arrays: the first field's). */
static uint32_t kid_rank(const ac_module *m, ir_ref e, uint32_t i) {
  ir_type t = ir_node_get(m, ir_kid(m, e, i))->type;
  ir_typeinfo ti = ir_ty_info(m->ctx, t);
  if (ti.kind == TK_TUPLE && ti.n > 0)
    ti = ir_ty_info(m->ctx, ti.fields[0]);
  return ti.kind == TK_ARRAY ? ti.rank : 0;
}

/* The kid of a scan-like or fold node that is its array operand. */
static int operand_kid(const ac_module *m, ir_ref e) {
  switch ((ir_op)ir_node_get(m, e)->op) {
  case IR_FOLD:
  case IR_SCAN:
  case IR_SCANR:
    return 2;
  case IR_SCAN_INCL:
  case IR_SCANR_INCL:
    return 1;
  case IR_REVERSE:
  case IR_TRANSPOSE:
  case IR_DELAY:
    return 0;
  default:
    return -1;
  }
}

/* Whether kid i of e, e being evaluated row by row, is row by row too. */
static bool ra_kid(const ac_module *m, ir_ref e, uint32_t i) {
  const ir_node *n = ir_node_get(m, e);
  if (n->op == IR_MAP)
    return i >= 1;
  int k = operand_kid(m, e);
  if (k < 0 || (uint32_t)k != i)
    return false;
  uint32_t r = kid_rank(m, e, i);
  switch ((ir_op)n->op) {
  case IR_TRANSPOSE:
    return r >= 3; /* swaps the two innermost of three or more */
  case IR_DELAY:
    return true;
  default:
    return r >= 2; /* folds, scans and reverses of rows */
  }
}

/* Whether e (under `depth` binders of the stage, none of which it may
 * use in a row-aligned position) can be evaluated row by row: an array
 * variable of the environment, or an operation above whose row-aligned
 * kids all can. */
static bool all_arrays(ac_context *ctx, ir_type t) {
  ir_typeinfo ti = ir_ty_info(ctx, t);
  if (ti.kind == TK_ARRAY)
    return true;
  if (ti.kind != TK_TUPLE || ti.n == 0)
    return false;
  for (uint32_t i = 0; i < ti.n; i++)
    if (!all_arrays(ctx, ti.fields[i]))
      return false;
  return true;
}

static bool rowlocal(const ac_module *m, ir_ref e, uint32_t depth) {
  const ir_node *n = ir_node_get(m, e);
  if (n->op == IR_VAR)
    return (uint32_t)n->attr >= depth && all_arrays(m->ctx, n->type);
  bool any = false;
  for (uint32_t i = 0; i < n->nkids; i++) {
    if (!ra_kid(m, e, i))
      continue;
    if (!rowlocal(m, ir_kid(m, e, i), depth))
      return false;
    any = true;
  }
  return any;
}

/* ---- stages: bindings and the synthesised function ---- */

typedef struct walk {
  dist_plan *p;
  binding *b;
  uint32_t nb, cap;
  bool emit;
  bool oom;
} walk;

static int32_t find_binding(walk *w, uint32_t v, bmode mode, ir_type type) {
  for (uint32_t i = 0; i < w->nb; i++)
    if (w->b[i].v == v && w->b[i].mode == mode)
      return (int32_t)i;
  if (w->emit)
    return -1;
  if (w->nb == w->cap) {
    uint32_t cap = w->cap ? 2 * w->cap : 8;
    binding *nbuf = realloc(w->b, cap * sizeof *nbuf);
    if (!nbuf) {
      w->oom = true;
      return -1;
    }
    w->b = nbuf;
    w->cap = cap;
  }
  w->b[w->nb] = (binding){v, mode, type};
  return (int32_t)w->nb++;
}

/* A variable for binding i at `depth` binders below the stage's top. */
static ir_ref param_var(walk *w, ac_module *m, ir_loc loc, int32_t i, uint32_t depth) {
  ir_ref r = ir_var(m, loc, depth + (w->nb - 1 - (uint32_t)i));
  if (r)
    ir_node_get(m, r)->type = w->b[i].type;
  return r;
}

static ir_ref walk_rec(walk *w, ir_ref e, uint32_t depth, bool ra);

typedef struct kid_ud {
  walk *w;
  uint32_t depth;
  ir_ref parent;
  bool ra_parent;
  int ra_only; /* -1: use the rules; k: only kid k row-aligned (the root) */
  uint32_t next;
} kid_ud;

static ir_ref walk_kid(ac_module *m, ir_ref kid, uint32_t binders, void *ud) {
  kid_ud *k = ud;
  uint32_t i = k->next++;
  bool ra = k->ra_only >= 0 ? (uint32_t)k->ra_only == i : k->ra_parent && ra_kid(m, k->parent, i);
  (void)m;
  return walk_rec(k->w, kid, k->depth + binders, ra);
}

/* Visits e: collects the bindings (first pass) or emits the stage's copy
 * of e with the environment's variables replaced by parameters (second
 * pass). ra: e is row-aligned (its variables are blocks). */
static ir_ref walk_node(walk *w, ir_ref e, uint32_t depth, bool ra, int ra_only) {
  ac_module *m = w->p->m;
  ir_node n = *ir_node_get(m, e);
  if (n.op == IR_VAR) {
    if ((uint32_t)n.attr < depth)
      return e;
    uint32_t v = (uint32_t)n.attr - depth;
    int32_t i = find_binding(w, v, ra ? B_BLOCK : B_FULL, n.type);
    return w->emit && i >= 0 ? param_var(w, m, n.loc, i, depth) : e;
  }
  if ((n.op == IR_LEN || n.op == IR_SHAPE) && !ra) {
    const ir_node *a = ir_node_get(m, ir_kid(m, e, 0));
    if (a->op == IR_VAR && (uint32_t)a->attr >= depth) {
      uint32_t v = (uint32_t)a->attr - depth;
      int32_t i = find_binding(w, v, n.op == IR_LEN ? B_LEN : B_SHAPE, n.type);
      return w->emit && i >= 0 ? param_var(w, m, n.loc, i, depth) : e;
    }
  }
  kid_ud k = {w, depth, e, ra, ra_only, 0};
  return ir_map_kids(m, e, walk_kid, &k, false);
}

static ir_ref walk_rec(walk *w, ir_ref e, uint32_t depth, bool ra) {
  return walk_node(w, e, depth, ra, -1);
}

static ir_ref walk_root(walk *w, ir_ref e, int ra_kid_of_root) {
  if (ra_kid_of_root == -2)
    return walk_node(w, e, 0, true, -1);
  return walk_node(w, e, 0, false, ra_kid_of_root);
}

static bool type_has_array(ac_context *ctx, ir_type t) {
  ir_typeinfo ti = ir_ty_info(ctx, t);
  if (ti.kind == TK_ARRAY || ti.kind == TK_WINDOW)
    return true;
  for (uint32_t i = 0; ti.kind == TK_TUPLE && i < ti.n; i++)
    if (type_has_array(ctx, ti.fields[i]))
      return true;
  return false;
}

/* Whether e is a small computation over scalars: no array anywhere, no
 * loop, no call, at most 64 nodes (*count so far). */
static bool scalar_step_rec(const ac_module *m, ir_ref e, unsigned *count) {
  const ir_node *n = ir_node_get(m, e);
  if (++*count > 64)
    return false;
  switch ((ir_op)n->op) {
  case IR_LOOP:
  case IR_REC:
  case IR_CALL:
  case IR_FNREF:
  case IR_WHILE:
  case IR_ITERATE:
    return false;
  default:
    break;
  }
  if (n->op != IR_LAM && type_has_array(m->ctx, n->type))
    return false;
  for (uint32_t i = 0; i < n->nkids; i++)
    if (!scalar_step_rec(m, ir_kid(m, e, i), count))
      return false;
  return true;
}

static bool scalar_step(const ac_module *m, ir_ref e, unsigned count) {
  return scalar_step_rec(m, e, &count);
}

static stage *find_stage(dist_plan *p, ir_ref key, variant var) {
  for (size_t i = 0; i < p->nstages; i++)
    if (p->stages[i].key == key && p->stages[i].var == var)
      return &p->stages[i];
  return NULL;
}

/* The stage of (key, var) computing expr (in the plan's module, at the
 * current environment), compiling it on first use. ra_root: -2 the root
 * itself is row-aligned, k only kid k of the root is, -1 none. */
static ac_status make_stage(dist_plan *p, ir_ref key, variant var, ir_ref expr, int ra_root,
                            stage **out, ac_error **err) {
  stage *s = find_stage(p, key, var);
  if (s) {
    *out = s;
    return AC_OK;
  }
  ac_module *m = p->m;
  ac_context *ctx = p->ctx;
  walk w = {p, NULL, 0, 0, false, false};
  walk_root(&w, expr, ra_root);
  if (w.oom || m->oom) {
    free(w.b);
    return dist_fail(p->rt, err, AC_ERR_NOMEM, "out of memory");
  }
  w.emit = true;
  ir_ref body = walk_root(&w, expr, ra_root);
  ir_type *pt = malloc((w.nb + 1) * sizeof *pt);
  ir_sym *pn = malloc((w.nb + 1) * sizeof *pn);
  char name[48];
  snprintf(name, sizeof name, "__dist_stage_%u", p->counter++);
  int32_t fi = -1;
  if (body && pt && pn) {
    for (uint32_t i = 0; i < w.nb; i++) {
      char pname[32];
      snprintf(pname, sizeof pname, "p%u", i);
      pt[i] = w.b[i].type;
      pn[i] = ir_sym_intern(ctx, pname, strlen(pname));
    }
    fi = ir_func_add(m, ir_sym_intern(ctx, name, strlen(name)), ir_node_get(m, expr)->loc, w.nb, pt,
                     pn, ir_node_get(m, expr)->type);
  }
  free(pt);
  free(pn);
  if (fi < 0 ||
      !ac_grow(ctx, (void **)&p->stages, &p->capstages, p->nstages + 1, sizeof *p->stages)) {
    free(w.b);
    return dist_fail(p->rt, err, AC_ERR_NOMEM, "out of memory");
  }
  m->funcs[fi].body = body;
  ac_function *fn = NULL;
  /* a small step over scalars alone is interpreted: compiling it would
   * cost more than it ever runs */
  bool small = w.nb <= 64 && scalar_step(m, body, 0);
  for (uint32_t i = 0; small && i < w.nb; i++)
    small = !type_has_array(ctx, w.b[i].type);
  ac_status st = small ? ac_function_create(m, name, AC_BACKEND_INTERP, &fn, err)
                       : ac_runtime_compile(p->rt->local, m, name, &fn, err);
  if (st != AC_OK) {
    free(w.b);
    return st;
  }
  s = &p->stages[p->nstages++];
  *s = (stage){key, var, expr, w.b, w.nb, fn};
  *out = s;
  return AC_OK;
}

/* ---- running stages ---- */

static pval *env_get(dist_plan *p, uint32_t v) {
  return p->env[p->nenv - 1 - v];
}

static bool env_push(dist_plan *p, pval *v) {
  if (!ac_grow(p->ctx, (void **)&p->env, &p->capenv, p->nenv + 1, sizeof *p->env)) {
    pval_release(v);
    return false;
  }
  p->env[p->nenv++] = v;
  return true;
}

static void env_pop(dist_plan *p, size_t to) {
  while (p->nenv > to)
    pval_release(p->env[--p->nenv]);
}

/* The allgathered form of a distributed leaf (kept with it). */
static ac_status leaf_full(dist_plan *p, dref *d, ac_array **out, ac_error **err) {
  if (!d->full) {
    ac_status st = dist_allgather(p->rt, d->a, &d->full, err);
    if (st != AC_OK)
      return st;
  }
  *out = d->full;
  return AC_OK;
}

static void release_parent(void *parent) {
  ac_array_release(parent);
}

/* An array of shape (rank, ext) over a's host elements at data, taking
 * the caller's reference to a, which it keeps alive (released with it). */
static ac_array *view_of(dist_plan *p, ac_array *a, unsigned rank, const int64_t *ext,
                         const void *data, ac_error **err) {
  ac_array *v =
      ac_array_borrow(p->ctx, ac_array_type(a), rank, ext, (void *)data, release_parent, a, err);
  if (!v)
    ac_array_release(a);
  return v;
}

/* a's elements with the shape (rank, ext) (the same number of elements),
 * taking the caller's reference to a: a that lives on a GPU alone keeps
 * its device buffer, a host array is viewed, not copied. */
static ac_array *reshaped(dist_plan *p, ac_array *a, unsigned rank, const int64_t *ext,
                          ac_error **err) {
  rt_gpu *g = rt_resid_gpu(a);
  rt_dptr d;
  size_t bytes;
  ac_array *v = NULL;
  if (g && rt_resid_take(a, g, &d, &bytes)) {
    if (rt_resid_wrap(p->ctx, g, ac_array_type(a), rank, ext, d, &v, err) != AC_OK)
      v = NULL; /* d is freed by the failed wrap */
    ac_array_release(a);
    return v;
  }
  const void *data = ac_array_data(a);
  if (!data && ac_array_size(a) > 0) {
    rt_resid_host(a, err); /* why the device array could not be fetched */
    ac_array_release(a);
    return NULL;
  }
  return view_of(p, a, rank, ext, data, err);
}

/* Rows [lo, hi) of a, for as long as a is not much larger: on a rank
 * without a GPU a view of a's elements that keeps a alive (no copy), else
 * a copy (dist_rows: on the device when a lives there). */
static ac_array *rows_view(dist_plan *p, ac_array *a, int64_t lo, int64_t hi, ac_error **err) {
  unsigned rank = ac_array_rank(a);
  size_t row;
  const char *data = p->rt->gpu || rank > 64 ? NULL : ac_array_data(a);
  if (!data || !dist_row_bytes(ac_array_type(a), rank, ac_array_extents(a), &row))
    return dist_rows(p->ctx, a, lo, hi, err);
  int64_t ext[64];
  memcpy(ext, ac_array_extents(a), rank * sizeof *ext);
  ext[0] = hi - lo;
  ac_array_retain(a);
  return view_of(p, a, rank, ext, data + (size_t)lo * row, err);
}

static const int64_t *leaf_extents(const leaf *l, unsigned *rank) {
  if (l->kind == LV_DIST) {
    *rank = l->d->a->rank;
    return l->d->a->extents;
  }
  *rank = ac_array_rank(l->arr);
  return ac_array_extents(l->arr);
}

static bool same_offsets(const dist_plan *p, const int64_t *a, const int64_t *b) {
  return memcmp(a, b, ((size_t)p->rt->size + 1) * sizeof *a) == 0;
}

/* The arguments of stage s at the current environment: datums (borrowed
 * arrays, except those in owned[], which the caller releases). For B_BLOCK
 * the partition is *part (chosen here from the first distributed leaf
 * when NULL; NULL after the call when no block leaf is distributed).
 * Collective (allgathers, repartitions). *mismatch is set when row-aligned
 * leaves differ in global shape: the distributed form does not apply. */
typedef struct stage_args_t {
  ac_datum *in;
  size_t n;
  ac_array **owned;
  size_t nowned;
  ac_dist_array **owned_d;
  size_t nowned_d;
} sargs;

static void args_free(sargs *a) {
  for (size_t i = 0; i < a->nowned; i++)
    ac_array_release(a->owned[i]);
  for (size_t i = 0; i < a->nowned_d; i++)
    ac_dist_array_destroy(a->owned_d[i]);
  free(a->in);
  free(a->owned);
  free(a->owned_d);
  *a = (sargs){0};
}

static bool args_own(sargs *a, ac_array *x) {
  ac_array **o = realloc(a->owned, (a->nowned + 1) * sizeof *o);
  if (!o)
    return false;
  a->owned = o;
  o[a->nowned++] = x;
  return true;
}

/* The partition of a stage's row-aligned leaves: the first distributed
 * one's, and whether all of them share the global shape. */
static const ac_dist_array *stage_partition(dist_plan *p, const stage *s, bool *same_shape) {
  const ac_dist_array *first = NULL;
  const int64_t *ext0 = NULL;
  *same_shape = true;
  for (uint32_t i = 0; i < s->nb; i++) {
    if (s->b[i].mode != B_BLOCK)
      continue;
    pval *v = env_get(p, s->b[i].v);
    for (uint32_t j = 0; j < v->n; j++) {
      const leaf *l = &v->l[j];
      if (l->kind != LV_DIST && l->kind != LV_FULL)
        continue;
      unsigned r;
      const int64_t *ext = leaf_extents(l, &r);
      if (!ext0)
        ext0 = ext;
      else if (ext[0] != ext0[0])
        *same_shape = false; /* maps check inner extents themselves */
      if (l->kind == LV_DIST && !first)
        first = l->d->a;
    }
  }
  return first;
}

static ac_status stage_args(dist_plan *p, const stage *s, const ac_dist_array *part, sargs *a,
                            ac_error **err) {
  ac_dist_runtime *rt = p->rt;
  size_t n = ac_function_num_args(s->fn);
  *a = (sargs){0};
  a->in = calloc(n ? n : 1, sizeof *a->in);
  a->n = n;
  ac_status st = a->in ? AC_OK : dist_fail(rt, err, AC_ERR_NOMEM, "out of memory");
  size_t k = 0;
  for (uint32_t i = 0; st == AC_OK && i < s->nb; i++) {
    const binding *b = &s->b[i];
    pval *v = env_get(p, b->v);
    if (b->mode == B_LEN || b->mode == B_SHAPE) {
      unsigned r = 0;
      const int64_t *ext = NULL;
      for (uint32_t j = 0; j < v->n && !ext; j++)
        if (v->l[j].kind != LV_SCALAR)
          ext = leaf_extents(&v->l[j], &r);
      unsigned cnt = b->mode == B_LEN ? 1 : r;
      for (unsigned d = 0; d < cnt && k < n; d++)
        a->in[k++] = (ac_datum){AC_DATUM_SCALAR, AC_I64, {.i = ext ? ext[d] : 0}, NULL};
      continue;
    }
    for (uint32_t j = 0; st == AC_OK && j < v->n && k < n; j++) {
      leaf *l = &v->l[j];
      ac_datum *d = &a->in[k++];
      switch (l->kind) {
      case LV_SCALAR:
        *d = l->s;
        break;
      case LV_LOCAL:
        *d = (ac_datum){AC_DATUM_ARRAY, ac_array_type(l->arr), {0}, l->arr};
        break;
      case LV_FULL:
        *d = (ac_datum){AC_DATUM_ARRAY, ac_array_type(l->arr), {0}, l->arr};
        if (b->mode == B_BLOCK && part) {
          ac_array *rows =
              rows_view(p, l->arr, part->offsets[rt->rank], part->offsets[rt->rank + 1], err);
          if (!rows || !args_own(a, rows)) {
            ac_array_release(rows);
            st = rows ? dist_fail(rt, err, AC_ERR_NOMEM, "out of memory")
                      : (*err ? (*err)->status : AC_ERR_NOMEM);
            break;
          }
          d->array = rows;
        }
        break;
      case LV_DIST: {
        ac_dist_array *da = l->d->a;
        if (b->mode == B_BLOCK && part) {
          if (same_offsets(p, da->offsets, part->offsets)) {
            *d = (ac_datum){AC_DATUM_ARRAY, da->type, {0}, da->block};
          } else {
            ac_dist_array *re = NULL;
            st = dist_repartition(rt, da, part->offsets, &re, err);
            if (st != AC_OK)
              break;
            ac_dist_array **o = realloc(a->owned_d, (a->nowned_d + 1) * sizeof *o);
            if (!o) {
              ac_dist_array_destroy(re);
              st = dist_fail(rt, err, AC_ERR_NOMEM, "out of memory");
              break;
            }
            a->owned_d = o;
            o[a->nowned_d++] = re;
            *d = (ac_datum){AC_DATUM_ARRAY, re->type, {0}, re->block};
          }
        } else {
          ac_array *full = NULL;
          st = leaf_full(p, l->d, &full, err);
          *d = (ac_datum){AC_DATUM_ARRAY, da->type, {0}, full};
        }
        break;
      }
      }
    }
  }
  if (st != AC_OK)
    args_free(a);
  return st;
}

/* Calls stage s with its arguments; the results (owned by the caller) in
 * res[0..nres). Not collective by itself: the caller agrees. */
static ac_status stage_call(const stage *s, const sargs *a, ac_datum *res, size_t nres,
                            ac_error **err) {
  return ac_function_call(s->fn, a->in, a->n, res, nres, err);
}

/* Calls stage s with its arguments (part: as stage_args) into
 * res[0..nres) (owned by the caller). Not collective by itself, unless
 * its arguments need an allgather or a repartition. */
static ac_status call_stage(dist_plan *p, const stage *s, const ac_dist_array *part, ac_datum *res,
                            size_t nres, ac_error **err) {
  sargs a;
  ac_status st = stage_args(p, s, part, &a, err);
  if (st == AC_OK) {
    st = stage_call(s, &a, res, nres, err);
    args_free(&a);
  }
  return st;
}

/* ---- evaluation ---- */

static ac_status deval(dist_plan *p, ir_ref e, pval **out, ac_error **err);
static ac_status local_to_dist(dist_plan *p, pval *v, int64_t outer, const int64_t *off, pval **out,
                               ac_error **err);
static int64_t *rule_partition(dist_plan *p, int64_t n);
static bool any_rank(dist_plan *p, bool mine);

static uint32_t num_leaves(dist_plan *p, ir_type t) {
  return ir_ty_num_leaves(p->ctx, t);
}

static void release_datums(ac_datum *d, size_t n) {
  for (size_t i = 0; i < n; i++)
    ac_datum_release(&d[i]);
}

/* Runs stage s on every rank with the environment as it is (its bindings
 * full). replicated: the results are the same on every rank (array
 * results full, scalars rank 0's, broadcast); else each rank keeps its own
 * array results as local arrays (and its scalars: the caller knows them to
 * be the same everywhere). Collective; the outcome is agreed. */
static ac_status run_everywhere(dist_plan *p, const stage *s, bool replicated, pval **out,
                                ac_error **err) {
  ir_type t = ir_node_get(p->m, s->expr)->type;
  uint32_t nres = num_leaves(p, t);
  ac_datum *res = calloc(nres ? nres : 1, sizeof *res);
  ac_status st = res ? call_stage(p, s, NULL, res, nres, err)
                     : dist_fail(p->rt, err, AC_ERR_NOMEM, "out of memory");
  bool called = st == AC_OK;
  pval *v = st == AC_OK ? pval_new(t, nres) : NULL;
  if (st == AC_OK && !v)
    st = dist_fail(p->rt, err, AC_ERR_NOMEM, "out of memory");
  st = dist_agree(p->rt, st, err);
  if (st != AC_OK) {
    if (called)
      release_datums(res, nres);
    free(res);
    free(v);
    return st;
  }
  for (uint32_t i = 0; i < nres; i++) {
    if (res[i].kind == AC_DATUM_SCALAR) {
      if (replicated)
        MPI_Bcast(&res[i].s, sizeof res[i].s, MPI_BYTE, 0, p->rt->comm);
      v->l[i] = (leaf){LV_SCALAR, res[i], NULL, NULL};
    } else {
      v->l[i] = (leaf){replicated ? LV_FULL : LV_LOCAL, {0}, res[i].array, NULL};
    }
  }
  free(res);
  *out = v;
  return AC_OK;
}

/* This rank's blocks of a distributed value, as a value of local arrays
 * (NULL when memory runs out). */
static pval *blocks_value(const pval *av) {
  pval *v = pval_new(av->type, av->n);
  for (uint32_t j = 0; v && j < av->n; j++) {
    ac_array_retain(av->l[j].d->a->block);
    v->l[j] = (leaf){LV_LOCAL, {0}, av->l[j].d->a->block, NULL};
  }
  return v;
}

/* Runs the stage (key, var) with the temporaries locals[0..nl) (taken)
 * in place of the environment's nhide topmost entries, which are hidden
 * while it runs and put back after; the stage computes expr, made by the
 * caller when find_stage(key, var) has none yet (IR_NONE otherwise). Each
 * rank keeps its results (local arrays). Collective; agreed. */
static ac_status run_locals(dist_plan *p, size_t nhide, pval **locals, size_t nl, ir_ref key,
                            variant var, ir_ref expr, pval **res, ac_error **err) {
  size_t top = p->nenv, base = top - nhide;
  pval *hidden[8];
  ac_status st =
      nhide <= 8 ? AC_OK : dist_fail(p->rt, err, AC_ERR_INTERNAL, "too many temporaries");
  for (size_t i = 0; st == AC_OK && i < nhide && i < 8; i++)
    hidden[i] = p->env[base + i];
  if (st == AC_OK)
    p->nenv = base;
  for (size_t i = 0; i < nl; i++) {
    if (st == AC_OK && !(locals[i] && env_push(p, locals[i])))
      st = dist_fail(p->rt, err, AC_ERR_NOMEM, "out of memory");
    else if (st != AC_OK)
      pval_release(locals[i]);
  }
  stage *s = st == AC_OK ? find_stage(p, key, var) : NULL;
  if (st == AC_OK && !s)
    st = expr ? make_stage(p, key, var, expr, -1, &s, err)
              : dist_fail(p->rt, err, AC_ERR_NOMEM, "out of memory");
  st = dist_agree(p->rt, st, err);
  if (st == AC_OK)
    st = run_everywhere(p, s, false, res, err);
  if (nhide <= 8) {
    env_pop(p, base);
    for (size_t i = 0; i < nhide && i < 8; i++)
      p->env[base + i] = hidden[i];
    p->nenv = top;
  }
  return st;
}

/* Runs stage s on blocks of its row-aligned leaves' partition: array
 * results distributed alike. *fallback when the distributed form does not
 * apply (then nothing ran). */
static ac_status run_rows(dist_plan *p, const stage *s, pval **out, const ac_dist_array **partp,
                          bool *fallback, ac_error **err) {
  bool same;
  const ac_dist_array *part = stage_partition(p, s, &same);
  *fallback = !part || !same;
  if (*fallback)
    return AC_OK;
  ir_type t = ir_node_get(p->m, s->expr)->type;
  uint32_t nres = num_leaves(p, t);
  /* part belongs to a value of the environment, which outlives the call */
  ac_datum *res = calloc(nres ? nres : 1, sizeof *res);
  ac_status st = res ? call_stage(p, s, part, res, nres, err)
                     : dist_fail(p->rt, err, AC_ERR_NOMEM, "out of memory");
  bool called = st == AC_OK;
  ac_error *mine = NULL;
  st = dist_agree(p->rt, st, err ? err : &mine);
  if (st != AC_OK) {
    if (called)
      release_datums(res, nres);
    free(res);
    ac_error_destroy(mine);
    if (p->strict)
      return st;
    if (err && *err) {
      ac_error_destroy(*err);
      *err = NULL;
    }
    *fallback = true; /* the full form reports the error as written */
    return AC_OK;
  }
  pval *v = pval_new(t, nres);
  for (uint32_t i = 0; v && i < nres; i++) {
    if (res[i].kind == AC_DATUM_SCALAR) {
      v->l[i] = (leaf){LV_SCALAR, res[i], NULL, NULL};
    } else {
      ac_array *b = res[i].array;
      unsigned r = ac_array_rank(b);
      int64_t ext[64];
      memcpy(ext, ac_array_extents(b), r * sizeof *ext);
      ext[0] = part->extents[0];
      ac_dist_array *da = dist_array_make(p->rt, ac_array_type(b), r, ext, part->offsets, b);
      dref *d = da ? dref_new(da) : NULL;
      v->l[i] = (leaf){LV_DIST, {0}, NULL, d};
      if (!d) {
        v->n = i;
        pval_release(v);
        v = NULL;
      }
    }
  }
  free(res);
  st = dist_agree(p->rt, v ? AC_OK : dist_fail(p->rt, err, AC_ERR_NOMEM, "out of memory"), err);
  if (st != AC_OK) {
    pval_release(v);
    return st;
  }
  if (partp)
    *partp = part;
  *out = v;
  return AC_OK;
}

/* e evaluated as one stage: row by row when it is row-local and reads a
 * distributed array there, else on full data. */
static ac_status eval_stage(dist_plan *p, ir_ref e, pval **out, ac_error **err) {
  stage *s;
  ac_status st;
  if (rowlocal(p->m, e, 0)) {
    st = make_stage(p, e, V_ROWS, e, -2, &s, err);
    st = dist_agree(p->rt, st, err);
    if (st != AC_OK)
      return st;
    bool fallback;
    st = run_rows(p, s, out, NULL, &fallback, err);
    if (st != AC_OK || !fallback) {
      trace(p, e, "row by row on blocks");
      return st;
    }
  }
  st = make_stage(p, e, V_FULL, e, -1, &s, err);
  st = dist_agree(p->rt, st, err);
  if (st != AC_OK)
    return st;
  st = run_everywhere(p, s, true, out, err);
  trace(p, e, "on full arrays");
  return st;
}

/* ---- synthesised expressions ---- */

static ir_ref mk(ac_module *m, ir_op op, ir_loc loc, ir_type t, int64_t attr, uint32_t nk,
                 const ir_ref *kids) {
  ir_ref r = ir_node_new(m, op, loc, nk, kids);
  if (r) {
    ir_node_get(m, r)->type = t;
    ir_node_get(m, r)->attr = attr;
  }
  return r;
}

static ir_ref mkvar(ac_module *m, ir_loc loc, ir_type t, uint32_t idx) {
  ir_ref r = ir_var(m, loc, idx);
  if (r)
    ir_node_get(m, r)->type = t;
  return r;
}

/* f(a, b) as an expression at the position of f (f a lambda of two
 * parameters or a function name); a and b are at that position too. */
static ir_ref apply2(ac_module *m, ir_ref f, ir_ref a, ir_ref b, ir_type t) {
  ir_node fn = *ir_node_get(m, f);
  if (fn.op == IR_FNREF) {
    ir_ref kids[2] = {a, b};
    return mk(m, IR_CALL, fn.loc, t, fn.attr, 2, kids);
  }
  if (fn.op != IR_LAM || fn.attr != 2)
    return IR_NONE;
  /* let x = a; let y = b; body (x is 1, y is 0 in the body, as in the lambda) */
  ir_ref bs = ir_shift(m, b, 1, 0);
  ir_ref inner_kids[2] = {bs, ir_kid(m, f, 0)};
  ir_ref inner = bs ? mk(m, IR_LET, fn.loc, t, 0, 2, inner_kids) : IR_NONE;
  ir_ref outer_kids[2] = {a, inner};
  ir_ref outer = inner ? mk(m, IR_LET, fn.loc, t, 0, 2, outer_kids) : IR_NONE;
  if (outer) {
    ir_sym x = ir_binder_name(m, f, 0, 0), y = ir_binder_name(m, f, 0, 1);
    ir_node_get(m, inner)->names = ir_syms_push(m, 1, &y);
    ir_node_get(m, outer)->names = ir_syms_push(m, 1, &x);
  }
  return outer;
}

/* ---- folds and scans across ranks ---- */

/* Every rank's scalar leaves (n per rank, from `mine`) on every rank:
 * all[r * n + j]. */
static ac_status allgather_scalars(dist_plan *p, const ac_datum *mine, uint32_t n, ac_datum **all,
                                   ac_error **err) {
  int R = p->rt->size;
  ac_datum *buf = calloc((size_t)R * n + 1, sizeof *buf);
  ac_status st =
      dist_agree(p->rt, buf ? AC_OK : dist_fail(p->rt, err, AC_ERR_NOMEM, "out of memory"), err);
  if (st != AC_OK) {
    free(buf);
    return st;
  }
  MPI_Allgather(mine, (int)(n * sizeof *mine), MPI_BYTE, buf, (int)(n * sizeof *buf), MPI_BYTE,
                p->rt->comm);
  *all = buf;
  return AC_OK;
}

/* A temporary value of type t from scalar datums (n leaves). */
static pval *scalar_value(ir_type t, const ac_datum *d, uint32_t n) {
  pval *v = pval_new(t, n);
  for (uint32_t i = 0; v && i < n; i++)
    v->l[i] = (leaf){LV_SCALAR, d[i], NULL, NULL};
  return v;
}

typedef struct leafty {
  ac_scalar sc[64];
  uint32_t n;
  bool over;
} leafty;

static void leafty_add(void *ud, ac_scalar sc, uint32_t rank) {
  leafty *l = ud;
  (void)rank;
  if (l->n < 64)
    l->sc[l->n] = sc;
  else
    l->over = true;
  l->n++;
}

/* The element type's scalar leaves. */
static bool elem_leaves(dist_plan *p, ir_type t, leafty *lt) {
  *lt = (leafty){.n = 0};
  ir_ty_leaves(p->ctx, t, leafty_add, lt);
  return !lt->over;
}

/* f(a, b) by the apply stage of node e (f its kid `fk`). */
static ac_status apply_f(dist_plan *p, ir_ref e, int fk, ir_type et, const ac_datum *a,
                         const ac_datum *b, uint32_t n, ac_datum *res, ac_error **err) {
  ac_module *m = p->m;
  stage *s = find_stage(p, e, V_APPLY);
  size_t base = p->nenv;
  ac_status st = AC_OK;
  if (!env_push(p, scalar_value(et, a, n)) || !env_push(p, scalar_value(et, b, n)))
    st = dist_fail(p->rt, err, AC_ERR_NOMEM, "out of memory");
  if (st == AC_OK && !s) {
    ir_loc loc = ir_node_get(m, e)->loc;
    ir_ref f = ir_shift(m, ir_kid(m, e, (uint32_t)fk), 2, 0);
    ir_ref x = f ? apply2(m, f, mkvar(m, loc, et, 1), mkvar(m, loc, et, 0), et) : IR_NONE;
    st = x ? make_stage(p, e, V_APPLY, x, -1, &s, err)
           : dist_fail(p->rt, err, AC_ERR_NOMEM, "out of memory");
  }
  if (st == AC_OK) {
    st = call_stage(p, s, NULL, res, n, err);
  }
  env_pop(p, base);
  return st;
}

/* The row-aligned operand of a fold or scan node as a stage of variant
 * var over e itself (the operand kid row-aligned): false when the operand
 * is not row-local (the caller makes it a temporary first). */
static bool operand_rowlocal(dist_plan *p, ir_ref e) {
  int k = operand_kid(p->m, e);
  return k >= 0 && rowlocal(p->m, ir_kid(p->m, e, (uint32_t)k), 0);
}

/* A copy of node e (at the current environment) whose kids in `hoist`
 * read temporaries: the values of those kids are pushed by the caller,
 * kid i's as the j-th pushed (nh in all); the other kids are shifted over
 * them. */
static ir_ref with_temps(dist_plan *p, ir_ref e, uint64_t hoist, uint32_t nh) {
  ac_module *m = p->m;
  ir_node n = *ir_node_get(m, e);
  ir_ref small[16];
  if (n.nkids > 16)
    return IR_NONE;
  uint32_t j = 0;
  for (uint32_t i = 0; i < n.nkids; i++) {
    ir_ref k = ir_kid(m, e, i);
    if (hoist >> i & 1) {
      small[i] = mkvar(m, ir_node_get(m, k)->loc, ir_node_get(m, k)->type, nh - 1 - j);
      j++;
    } else {
      small[i] = ir_shift(m, k, (int32_t)nh, 0); /* e binds nothing around its kids */
    }
    if (!small[i])
      return IR_NONE;
  }
  ir_ref r = ir_node_new(m, (ir_op)n.op, n.loc, n.nkids, small);
  if (r) {
    ir_node *c = ir_node_get(m, r);
    uint32_t kids = c->kids;
    *c = n;
    c->kids = kids;
  }
  return r;
}

/* Evaluates the kids of e in `hoist` (in kid order) and pushes them. */
static ac_status push_kids(dist_plan *p, ir_ref e, uint64_t hoist, ac_error **err) {
  ac_module *m = p->m;
  uint32_t nk = ir_node_get(m, e)->nkids;
  size_t base = p->nenv;
  for (uint32_t i = 0; i < nk; i++) {
    if (!(hoist >> i & 1))
      continue;
    pval *v = NULL;
    /* each kid is evaluated at e's environment: the temporaries pushed so
     * far are above it, so evaluate first, then push */
    size_t keep = p->nenv;
    pval **saved = NULL;
    size_t nsaved = keep - base;
    if (nsaved) { /* hide the temporaries while evaluating */
      saved = malloc(nsaved * sizeof *saved);
      if (!saved)
        return dist_fail(p->rt, err, AC_ERR_NOMEM, "out of memory");
      memcpy(saved, p->env + base, nsaved * sizeof *saved);
      p->nenv = base;
    }
    ac_status st = deval(p, ir_kid(m, e, i), &v, err);
    if (nsaved) {
      memcpy(p->env + base, saved, nsaved * sizeof *saved);
      p->nenv = keep;
      free(saved);
    }
    if (st != AC_OK) {
      env_pop(p, base);
      return st;
    }
    if (!env_push(p, v)) {
      env_pop(p, base);
      return dist_fail(p->rt, err, AC_ERR_NOMEM, "out of memory");
    }
  }
  return AC_OK;
}

/* Which kids of e in row-aligned positions are not row-local (bits). */
static uint64_t nonlocal_operands(dist_plan *p, ir_ref e, int only) {
  ac_module *m = p->m;
  uint32_t nk = ir_node_get(m, e)->nkids;
  uint64_t h = 0;
  for (uint32_t i = 0; i < nk && i < 64; i++) {
    bool ra = only >= 0 ? (uint32_t)only == i : ra_kid(m, e, i);
    if (ra && !rowlocal(m, ir_kid(m, e, i), 0))
      h |= (uint64_t)1 << i;
  }
  return h;
}

static uint32_t popcount64(uint64_t x) {
  uint32_t n = 0;
  for (; x; x &= x - 1)
    n++;
  return n;
}

/* Keeps expr, synthesised for node key, as the stage (key, V_OPERANDS)
 * without a function: later evaluations of key find it (find_stage). */
static bool remember_expr(dist_plan *p, ir_ref key, ir_ref expr) {
  if (!expr ||
      !ac_grow(p->ctx, (void **)&p->stages, &p->capstages, p->nstages + 1, sizeof *p->stages))
    return false;
  p->stages[p->nstages++] = (stage){key, V_OPERANDS, expr, NULL, 0, NULL};
  return true;
}

/* The synthesised copy of e with its non-row-local operands made
 * temporaries (made once per node), the temporaries pushed. */
static ac_status hoist_operands(dist_plan *p, ir_ref e, uint64_t hoist, ir_ref *copy,
                                ac_error **err) {
  ac_status st = push_kids(p, e, hoist, err);
  if (st != AC_OK)
    return st;
  stage *s = find_stage(p, e, V_OPERANDS);
  if (s) {
    *copy = s->expr;
    return AC_OK;
  }
  ir_ref c = with_temps(p, e, hoist, popcount64(hoist));
  if (!remember_expr(p, e, c))
    return dist_fail(p->rt, err, AC_ERR_NOMEM, "out of memory");
  *copy = c;
  return AC_OK;
}

/* Combines into acc (n leaves; *have: acc holds a value) the values
 * all[r * n ..] of the ranks r from `from` to `to` (exclusive; either
 * direction) whose blocks (partition off) are nonempty, in that order:
 * acc = f(acc, v) going up, f(v, acc) going down (a right scan). f is kid
 * 0 of node e. Not collective (steps that read no array). */
static ac_status combine_ranks(dist_plan *p, ir_ref e, ir_type et, const ac_datum *all, uint32_t n,
                               const int64_t *off, int from, int to, ac_datum *acc, bool *have,
                               ac_error **err) {
  ac_datum tmp[64];
  ac_status st = AC_OK;
  int step = from <= to ? 1 : -1;
  for (int r = from; r != to && st == AC_OK; r += step) {
    if (off[r + 1] == off[r])
      continue;
    const ac_datum *v = &all[(size_t)r * n];
    if (!*have) {
      memcpy(acc, v, n * sizeof *acc);
      *have = true;
      continue;
    }
    st = step > 0 ? apply_f(p, e, 0, et, acc, v, n, tmp, err)
                  : apply_f(p, e, 0, et, v, acc, n, tmp, err);
    memcpy(acc, tmp, n * sizeof *acc);
  }
  return st;
}

/* Whether z is an identity of f: f is |a, b| a OP b (or b OP a) with OP
 * one of + * | ^ & min max on a scalar, and z that operator's identity
 * literal. Then each rank may fold its block from z (z counts any number
 * of times); otherwise the blocks are folded without z and z is applied
 * once, first, as the single-process backends do. */
static bool z_identity(const ac_module *m, ir_ref f, ir_ref z) {
  const ir_node *fn = ir_node_get(m, f), *zn = ir_node_get(m, z);
  if (fn->op != IR_LAM || fn->attr != 2 || zn->op != IR_LIT)
    return false;
  ir_ref b = ir_kid(m, f, 0);
  const ir_node *bn = ir_node_get(m, b);
  if (bn->nkids != 2)
    return false;
  const ir_node *x = ir_node_get(m, ir_kid(m, b, 0)), *y = ir_node_get(m, ir_kid(m, b, 1));
  if (x->op != IR_VAR || y->op != IR_VAR || x->attr + y->attr != 1)
    return false;
  ac_scalar sc;
  if (!ir_ty_is_scalar(m->ctx, zn->type, &sc) || ir_ty_has_prob(m->ctx, zn->type))
    return false;
  bool flt = sc == AC_F32 || sc == AC_F64;
  bool sgn = sc >= AC_I8 && sc <= AC_I64;
  unsigned bits = 8 * (unsigned)ac_scalar_size(sc);
  uint64_t mask = bits >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << bits) - 1;
  uint64_t u = zn->lit.u & mask;
  double d = zn->lit.f;
  switch ((ir_op)bn->op) {
  case IR_ADD:
  case IR_BOR:
  case IR_BXOR:
    return flt ? d == 0.0 : u == 0;
  case IR_MUL:
    return flt ? d == 1.0 : u == 1;
  case IR_BAND:
    return !flt && u == mask;
  case IR_MIN: /* the highest value */
    return flt ? d == __builtin_inf() : sgn ? u == mask >> 1 : u == mask;
  case IR_MAX: /* the lowest value */
    return flt ? d == -__builtin_inf() : sgn ? u == ((mask >> 1) ^ mask) : u == 0;
  default:
    return false;
  }
}

/* fold(f, z, a) of a block without z: z when the block is empty, else
 * fold(f, a[0], slice(a, 1, len(a))), at fold node e's position. */
static ir_ref fold_without_z(dist_plan *p, ir_ref e) {
  ac_module *m = p->m;
  ir_node n = *ir_node_get(m, e);
  ir_ref a = ir_kid(m, e, 2);
  ir_type at = ir_node_get(m, a)->type, et = n.type;
  ir_type i64 = ir_ty_scalar(p->ctx, AC_I64), bt = ir_ty_scalar(p->ctx, AC_BOOL);
  ir_ref v = mkvar(m, n.loc, at, 0);
  ir_ref len = v ? mk(m, IR_LEN, n.loc, i64, 0, 1, &v) : IR_NONE;
  ir_ref zero = ir_lit_typed(m, n.loc, i64, (ir_litval){.i = 0});
  ir_ref one = ir_lit_typed(m, n.loc, i64, (ir_litval){.i = 1});
  if (!len || !zero || !one)
    return IR_NONE;
  ir_node_get(m, zero)->type = i64;
  ir_node_get(m, one)->type = i64;
  ir_ref eq_kids[2] = {len, zero};
  ir_ref eq = mk(m, IR_EQ, n.loc, bt, 0, 2, eq_kids);
  ir_ref v2 = mkvar(m, n.loc, at, 0);
  ir_ref zero2 = ir_lit_typed(m, n.loc, i64, (ir_litval){.i = 0});
  if (!eq || !v2 || !zero2)
    return IR_NONE;
  ir_node_get(m, zero2)->type = i64;
  ir_ref idx_kids[2] = {v2, zero2};
  ir_ref first = mk(m, IR_INDEX, n.loc, et, 0, 2, idx_kids);
  ir_ref v3 = mkvar(m, n.loc, at, 0), v4 = mkvar(m, n.loc, at, 0);
  ir_ref len2 = v4 ? mk(m, IR_LEN, n.loc, i64, 0, 1, &v4) : IR_NONE;
  ir_ref sl_kids[3] = {v3, one, len2};
  ir_ref rest = v3 && len2 ? mk(m, IR_SLICE, n.loc, at, 0, 3, sl_kids) : IR_NONE;
  ir_ref fk[3] = {ir_shift(m, ir_kid(m, e, 0), 1, 0), first, rest};
  ir_ref fold = fk[0] && first && rest ? mk(m, IR_FOLD, n.loc, et, 0, 3, fk) : IR_NONE;
  ir_ref if_kids[3] = {eq, ir_shift(m, ir_kid(m, e, 1), 1, 0), fold};
  ir_ref cond = fold && if_kids[1] ? mk(m, IR_IF, n.loc, et, 0, 3, if_kids) : IR_NONE;
  ir_ref let_kids[2] = {a, cond};
  ir_ref let = cond ? mk(m, IR_LET, n.loc, et, 0, 2, let_kids) : IR_NONE;
  if (let) {
    ir_sym nm = ir_sym_intern(p->ctx, "a", 1);
    ir_node_get(m, let)->names = ir_syms_push(m, 1, &nm);
  }
  return let;
}

/* A rank-1 fold: local folds, partials combined in rank order. */
static ac_status eval_fold(dist_plan *p, ir_ref e, pval **out, bool *fallback, ac_error **err) {
  ac_module *m = p->m;
  ir_type et = ir_node_get(m, e)->type;
  leafty lt;
  *fallback = !elem_leaves(p, et, &lt);
  if (*fallback)
    return AC_OK;
  stage *s = NULL;
  /* with an identity z each block folds from z; else without it */
  bool ident = z_identity(m, ir_kid(m, e, 0), ir_kid(m, e, 1));
  ac_status st = AC_OK;
  if (ident) {
    st = make_stage(p, e, V_FOLD, e, 2, &s, err);
  } else if (!(s = find_stage(p, e, V_FOLD))) {
    ir_ref x = fold_without_z(p, e);
    st = x ? make_stage(p, e, V_FOLD, x, 0, &s, err)
           : dist_fail(p->rt, err, AC_ERR_NOMEM, "out of memory");
  }
  st = dist_agree(p->rt, st, err);
  if (st != AC_OK)
    return st;
  pval *part = NULL;
  const ac_dist_array *partp = NULL;
  st = run_rows(p, s, &part, &partp, fallback, err);
  if (st != AC_OK || *fallback)
    return st;
  ac_datum *all = NULL;
  ac_datum mine[64];
  for (uint32_t j = 0; j < lt.n; j++)
    mine[j] = part->l[j].s;
  pval_release(part);
  st = allgather_scalars(p, mine, lt.n, &all, err);
  if (st != AC_OK)
    return st;
  /* the partials of the nonempty blocks, combined in rank order by f (so
   * that z counts once per nonempty block: once on one rank, as written);
   * no nonempty block: z, rank 0's partial. Every rank combines the same
   * values in the same order, so every rank has the same result. */
  ac_datum res[64];
  memcpy(res, all, lt.n * sizeof *res);
  bool have = false;
  if (!ident) {
    /* z first, once: the blocks' partials are without it */
    pval *zv = NULL;
    st = deval(p, ir_kid(m, e, 1), &zv, err);
    if (st != AC_OK) {
      free(all);
      return st;
    }
    for (uint32_t j = 0; j < lt.n && j < zv->n; j++)
      res[j] = zv->l[j].s;
    pval_release(zv);
    have = true;
  }
  st = combine_ranks(p, e, et, all, lt.n, partp->offsets, 0, p->rt->size, res, &have, err);
  free(all);
  st = dist_agree(p->rt, st, err);
  if (st != AC_OK)
    return st;
  *out = scalar_value(et, res, lt.n);
  trace(p, e, "local folds, partials combined in rank order");
  return dist_agree(p->rt, *out ? AC_OK : dist_fail(p->rt, err, AC_ERR_NOMEM, "out of memory"),
                    err);
}

/* Row k of a rank-1 distributed value's block, as scalar datums. */
static void read_row(const pval *v, int64_t k, ac_datum *d) {
  for (uint32_t j = 0; j < v->n; j++) {
    ac_array *b = v->l[j].d->a->block;
    ac_scalar t = ac_array_type(b);
    const char *data = ac_array_data(b);
    d[j] = data ? rt_scalar_read(t, data + (size_t)k * ac_scalar_size(t))
                : (ac_datum){AC_DATUM_SCALAR, t, {0}, NULL};
  }
}

/* Whether e (at the current environment, under `depth` binders of its
 * own) reads an environment value with array leaves: steps that only some
 * ranks run must not (reading one may need an allgather, a collective). */
static bool reads_arrays(dist_plan *p, ir_ref e, uint32_t depth) {
  const ir_node *n = ir_node_get(p->m, e);
  if (n->op == IR_VAR && (uint32_t)n->attr >= depth) {
    pval *v = env_get(p, (uint32_t)n->attr - depth);
    for (uint32_t j = 0; j < v->n; j++)
      if (v->l[j].kind != LV_SCALAR)
        return true;
    return false;
  }
  for (uint32_t i = 0; i < n->nkids; i++)
    if (reads_arrays(p, ir_kid(p->m, e, i), depth + ir_binders(p->m, e, i)))
      return true;
  return false;
}

/* A rank-1 scan: local scans, the block totals allgathered, each rank's
 * carry from the totals before it (after it, for scanr), a local fix-up. */
static ac_status eval_scan(dist_plan *p, ir_ref e, pval **out, bool *fallback, ac_error **err) {
  ac_module *m = p->m;
  ir_op op = (ir_op)ir_node_get(m, e)->op;
  bool right = op == IR_SCANR || op == IR_SCANR_INCL;
  bool incl = op == IR_SCAN_INCL || op == IR_SCANR_INCL;
  ir_type at = ir_node_get(m, e)->type;
  ir_type et = ir_node_get(m, ir_kid(m, e, 1))->type; /* z for exclusive scans */
  leafty lt;
  stage *s;
  /* the carries and fix-ups run on some ranks only; an exclusive scan
   * whose z is not f's identity would count z once per block */
  *fallback = reads_arrays(p, ir_kid(m, e, 0), 0) ||
              (!incl && !z_identity(m, ir_kid(m, e, 0), ir_kid(m, e, 1)));
  if (*fallback)
    return AC_OK;
  ac_status st = make_stage(p, e, V_SCAN, e, operand_kid(m, e), &s, err);
  st = dist_agree(p->rt, st, err);
  if (st != AC_OK)
    return st;
  pval *sv = NULL;
  const ac_dist_array *part = NULL;
  st = run_rows(p, s, &sv, &part, fallback, err);
  if (st != AC_OK || *fallback)
    return st;
  int R = p->rt->size, me = p->rt->rank;
  int64_t lo = sv->l[0].d->a->offsets[me], hi = sv->l[0].d->a->offsets[me + 1];
  int64_t cnt = hi - lo;
  /* the element type: the leaves of the result's elements */
  lt.n = sv->n;
  lt.over = sv->n > 64;
  for (uint32_t j = 0; j < sv->n && j < 64; j++)
    lt.sc[j] = sv->l[j].d->a->type;
  if (lt.over) {
    pval_release(sv);
    *fallback = true;
    return AC_OK;
  }
  if (incl) {
    /* an element type for the temporaries: the tuple of the leaves */
    ir_type f[64];
    for (uint32_t j = 0; j < lt.n; j++)
      f[j] = ir_ty_scalar(p->ctx, lt.sc[j]);
    et = ir_ty_tuple(p->ctx, lt.n, f);
  }
  ac_datum tot[64];
  memset(tot, 0, sizeof tot);
  if (incl) {
    if (cnt > 0)
      read_row(sv, right ? 0 : cnt - 1, tot);
  } else {
    /* fold(f, z, a) of the block: the exclusive scan's total */
    stage *ts = find_stage(p, e, V_TOTAL);
    if (!ts) {
      int k = operand_kid(m, e);
      ir_ref kids[3] = {ir_kid(m, e, 0), ir_kid(m, e, 1), ir_kid(m, e, (uint32_t)k)};
      ir_ref x = mk(m, IR_FOLD, ir_node_get(m, e)->loc, et, 0, 3, kids);
      st = x ? make_stage(p, e, V_TOTAL, x, 2, &ts, err)
             : dist_fail(p->rt, err, AC_ERR_NOMEM, "out of memory");
    }
    st = dist_agree(p->rt, st, err);
    pval *tv = NULL;
    bool fb = false;
    if (st == AC_OK)
      st = run_rows(p, ts, &tv, NULL, &fb, err);
    if (st != AC_OK || fb) {
      pval_release(sv);
      *fallback = fb;
      return st;
    }
    for (uint32_t j = 0; j < lt.n; j++)
      tot[j] = tv->l[j].s;
    pval_release(tv);
  }
  ac_datum *all = NULL;
  st = allgather_scalars(p, tot, lt.n, &all, err);
  if (st != AC_OK) {
    pval_release(sv);
    return st;
  }
  /* this rank's carry: the totals of the nonempty blocks before it (after
   * it for scanr), combined in order */
  ac_datum carry[64];
  bool have = false;
  st = right ? combine_ranks(p, e, et, all, lt.n, part->offsets, R - 1, me, carry, &have, err)
             : combine_ranks(p, e, et, all, lt.n, part->offsets, 0, me, carry, &have, err);
  free(all);
  /* the fix-up: map(|x| f(c, x), s) (f(x, c) for scanr) on this rank's block */
  if (st == AC_OK && have && cnt > 0) {
    size_t base = p->nenv;
    pval *local = pval_new(at, sv->n);
    for (uint32_t j = 0; local && j < sv->n; j++) {
      ac_array *b = sv->l[j].d->a->block;
      ac_array_retain(b);
      local->l[j] = (leaf){LV_LOCAL, {0}, b, NULL};
    }
    if (!env_push(p, scalar_value(et, carry, lt.n)) || !local || !env_push(p, local))
      st = dist_fail(p->rt, err, AC_ERR_NOMEM, "out of memory");
    stage *fx = st == AC_OK ? find_stage(p, e, V_FIXUP) : NULL;
    if (st == AC_OK && !fx) {
      ir_loc loc = ir_node_get(m, e)->loc;
      /* under the map's lambda: x is 0, s is 1, c is 2 */
      ir_ref f = ir_shift(m, ir_kid(m, e, 0), 3, 0);
      ir_ref c = mkvar(m, loc, et, 2), x = mkvar(m, loc, et, 0);
      ir_ref body = f ? (right ? apply2(m, f, x, c, et) : apply2(m, f, c, x, et)) : IR_NONE;
      ir_ref lam = body ? mk(m, IR_LAM, loc, IR_TY_NONE, 1, 1, &body) : IR_NONE;
      if (lam) {
        ir_sym xs = ir_sym_intern(p->ctx, "x", 1);
        ir_node_get(m, lam)->names = ir_syms_push(m, 1, &xs);
      }
      ir_ref kids[2] = {lam, mkvar(m, loc, at, 0)};
      ir_ref x2 = lam && kids[1] ? mk(m, IR_MAP, loc, at, 0, 2, kids) : IR_NONE;
      st = x2 ? make_stage(p, e, V_FIXUP, x2, -1, &fx, err)
              : dist_fail(p->rt, err, AC_ERR_NOMEM, "out of memory");
    }
    ac_datum res[64];
    if (st == AC_OK) {
      st = call_stage(p, fx, NULL, res, sv->n, err);
    }
    env_pop(p, base);
    if (st == AC_OK) {
      for (uint32_t j = 0; j < sv->n; j++) {
        ac_dist_array *a = sv->l[j].d->a;
        ac_array_release(a->block);
        a->block = res[j].array;
      }
    }
  }
  st = dist_agree(p->rt, st, err);
  if (st != AC_OK) {
    pval_release(sv);
    return st;
  }
  *out = sv;
  trace(p, e, "local scans, carries from the block totals");
  return AC_OK;
}

/* ---- stencils ---- */

/* Global row g of an extent-n dimension under a boundary (clamp, mirror,
 * wrap), as language.md §7.9 defines it. */
static int64_t boundary_row(int kind, int64_t g, int64_t n) {
  if (g >= 0 && g < n)
    return g;
  switch (kind) {
  case AC_BOUNDARY_CLAMP:
    return g < 0 ? 0 : n - 1;
  case AC_BOUNDARY_WRAP: {
    int64_t r = g % n;
    return r < 0 ? r + n : r;
  }
  default: { /* mirror: period 2(n-1) */
    if (n == 1)
      return 0;
    int64_t per = 2 * (n - 1);
    int64_t r = g % per;
    if (r < 0)
      r += per;
    return r < n ? r : per - r;
  }
  }
}

static ac_status eval_stencil(dist_plan *p, ir_ref e, pval **out, bool *fallback, ac_error **err) {
  ac_module *m = p->m;
  ir_node n = *ir_node_get(m, e); /* a copy: stages add nodes */
  int kind = (int)n.attr;
  uint32_t ak = 1; /* stencil(f, a[, constant]): the array is kid 1 */
  ir_ref lam = ir_kid(m, e, 0);
  uint32_t rank = kid_rank(m, e, ak);
  ir_window w;
  *fallback = rank == 0 || !ir_window_reach(m, ir_kid(m, lam, 0), rank, &w);
  if (*fallback)
    return AC_OK;
  /* the operand's value */
  size_t base = p->nenv;
  ac_status st = push_kids(p, e, (uint64_t)1 << ak, err);
  if (st != AC_OK)
    return st;
  pval *av = p->env[p->nenv - 1];
  bool dist = av->n > 0;
  for (uint32_t j = 0; j < av->n; j++)
    dist &= av->l[j].kind == LV_DIST;
  if (!dist) {
    env_pop(p, base);
    *fallback = true;
    return AC_OK;
  }
  const ac_dist_array *a0 = av->l[0].d->a;
  int me = p->rt->rank;
  int64_t N = a0->extents[0], lo = a0->offsets[me], hi = a0->offsets[me + 1];
  int64_t below = w.below[0], above = w.above[0];
  /* the rows to fetch: [lo - below, hi + above), mapped by the boundary
   * (a constant boundary: only the rows that exist; reads beyond them are
   * beyond the array too) */
  int64_t first = lo - below, last = hi + above, skip = below;
  if (kind == AC_BOUNDARY_CONST || N == 0) {
    if (first < 0) {
      skip += first;
      first = 0;
    }
    if (last > N)
      last = N;
  }
  int64_t cnt = hi > lo ? last - first : 0;
  if (hi == lo)
    skip = 0;
  int64_t *rows = malloc((size_t)(cnt > 0 ? cnt : 1) * sizeof *rows);
  if (!rows)
    st = dist_fail(p->rt, err, AC_ERR_NOMEM, "out of memory");
  for (int64_t k = 0; rows && k < cnt; k++)
    rows[k] = boundary_row(kind, first + k, N);
  st = dist_agree(p->rt, st, err);
  pval *ext = st == AC_OK ? pval_new(av->type, av->n) : NULL;
  for (uint32_t j = 0; st == AC_OK && j < av->n; j++) {
    ac_array *got = NULL;
    st = dist_fetch_rows(p->rt, av->l[j].d->a, rows, cnt, &got, err);
    if (ext)
      ext->l[j] = (leaf){LV_LOCAL, {0}, got, NULL};
  }
  free(rows);
  if (st == AC_OK && !ext)
    st = dist_fail(p->rt, err, AC_ERR_NOMEM, "out of memory");
  st = dist_agree(p->rt, st, err);
  if (st != AC_OK) {
    pval_release(ext);
    env_pop(p, base);
    return st;
  }
  /* the stencil over the fetched rows, a local temporary (the operand is
   * kept for its partition) */
  av->refs++;
  env_pop(p, base);
  if (!env_push(p, ext))
    st = dist_fail(p->rt, err, AC_ERR_NOMEM, "out of memory");
  stage *s = st == AC_OK ? find_stage(p, e, V_STENCIL) : NULL;
  if (st == AC_OK && !s) {
    ir_ref c = with_temps(p, e, (uint64_t)1 << ak, 1);
    st = c ? make_stage(p, e, V_STENCIL, c, -1, &s, err)
           : dist_fail(p->rt, err, AC_ERR_NOMEM, "out of memory");
  }
  uint32_t nres = num_leaves(p, n.type);
  ac_datum *res = calloc(nres + 1, sizeof *res);
  if (st == AC_OK && !res)
    st = dist_fail(p->rt, err, AC_ERR_NOMEM, "out of memory");
  if (st == AC_OK) {
    st = call_stage(p, s, NULL, res, nres, err);
  }
  env_pop(p, base);
  ac_error *mine = NULL;
  ac_status called = st;
  st = dist_agree(p->rt, st, err ? err : &mine);
  if (st != AC_OK) {
    if (called == AC_OK)
      release_datums(res, nres);
    free(res);
    ac_error_destroy(mine);
    pval_release(av);
    if (p->strict)
      return st;
    if (err && *err) {
      ac_error_destroy(*err);
      *err = NULL;
    }
    *fallback = true; /* e.g. the boundary constant's error, as written */
    return AC_OK;
  }
  /* keep this rank's rows: [skip, skip + hi - lo) of the result */
  pval *v = pval_new(n.type, nres);
  for (uint32_t j = 0; v && j < nres; j++) {
    ac_array *r = res[j].array;
    ac_array *mine_rows = rows_view(p, r, skip, skip + (hi - lo), err);
    ac_array_release(r);
    res[j].array = NULL;
    unsigned rk = mine_rows ? ac_array_rank(mine_rows) : 0;
    int64_t ex[64];
    if (mine_rows) {
      memcpy(ex, ac_array_extents(mine_rows), rk * sizeof *ex);
      ex[0] = N;
    }
    ac_dist_array *da =
        mine_rows ? dist_array_make(p->rt, ac_array_type(mine_rows), rk, ex, a0->offsets, mine_rows)
                  : NULL;
    dref *d = da ? dref_new(da) : NULL;
    v->l[j] = (leaf){LV_DIST, {0}, NULL, d};
    if (!d)
      st = AC_ERR_NOMEM;
  }
  for (uint32_t j = 0; j < nres; j++)
    ac_datum_release(&res[j]);
  free(res);
  if (!v)
    st = AC_ERR_NOMEM;
  st = dist_agree(p->rt, st == AC_OK ? st : dist_fail(p->rt, err, st, "out of memory"), err);
  pval_release(av);
  if (st != AC_OK) {
    pval_release(v);
    return st;
  }
  *out = v;
  trace(p, e, "halo rows fetched, stencil on blocks");
  return AC_OK;
}

static bool datum_index(const ac_datum *d, int64_t *out);

/* ---- producers: generate, iota, fill ---- */

typedef struct remap_st {
  const uint32_t *tab; /* new index of free variable j < ntab */
  uint32_t ntab;
  uint32_t rest; /* added to free variables j >= ntab */
  uint32_t depth;
} remap_st;

static ir_ref remap_rec(ac_module *m, ir_ref e, uint32_t binders, void *ud);

/* e with its free variables renumbered: j (relative to e) becomes tab[j]
 * for j < ntab, else j + rest. */
static ir_ref remap_at(ac_module *m, ir_ref e, remap_st *r) {
  ir_node n = *ir_node_get(m, e);
  if (n.op == IR_VAR) {
    if ((uint32_t)n.attr < r->depth)
      return e;
    uint32_t j = (uint32_t)n.attr - r->depth;
    return mkvar(m, n.loc, n.type, r->depth + (j < r->ntab ? r->tab[j] : j + r->rest));
  }
  return ir_map_kids(m, e, remap_rec, r, false);
}

static ir_ref remap_rec(ac_module *m, ir_ref e, uint32_t binders, void *ud) {
  remap_st inner = *(remap_st *)ud;
  inner.depth += binders;
  return remap_at(m, e, &inner);
}

/* The producer's expression for this rank's rows, at an environment with
 * two temporaries on top: lo (i64, the first row) and the local shape
 * (outermost extent: the number of rows). */
static ir_ref producer_expr(dist_plan *p, ir_ref e) {
  ac_module *m = p->m;
  ir_node n = *ir_node_get(m, e);
  ir_type i64 = ir_ty_scalar(p->ctx, AC_I64);
  ir_ref shape = mkvar(m, n.loc, ir_node_get(m, ir_kid(m, e, 0))->type, 0);
  if (!shape)
    return IR_NONE;
  if (n.op == IR_FILL) {
    ir_ref kids[2] = {shape, ir_shift(m, ir_kid(m, e, 1), 2, 0)};
    return kids[1] ? mk(m, IR_FILL, n.loc, n.type, n.attr, 2, kids) : IR_NONE;
  }
  if (n.op == IR_IOTA) {
    /* map(|v| v + lo, iota(rows)) */
    ir_ref io = mk(m, IR_IOTA, n.loc, n.type, n.attr, 1, &shape);
    ir_ref add_kids[2] = {mkvar(m, n.loc, i64, 0), mkvar(m, n.loc, i64, 2)};
    ir_ref add = mk(m, IR_ADD, n.loc, i64, 0, 2, add_kids);
    ir_ref lam = add ? mk(m, IR_LAM, n.loc, IR_TY_NONE, 1, 1, &add) : IR_NONE;
    if (lam) {
      ir_sym v = ir_sym_intern(p->ctx, "v", 1);
      ir_node_get(m, lam)->names = ir_syms_push(m, 1, &v);
    }
    ir_ref map_kids[2] = {lam, io};
    return lam && io ? mk(m, IR_MAP, n.loc, n.type, 0, 2, map_kids) : IR_NONE;
  }
  ir_ref lam = ir_kid(m, e, 1);
  ir_node ln = *ir_node_get(m, lam);
  if (ln.op == IR_FNREF) {
    /* generate(rows, |i1, .., ir| f(i1 + lo, .., ir)) */
    const ir_func *fd = &m->funcs[ln.attr];
    uint32_t r = fd->nparams;
    if (r == 0 || r > 64)
      return IR_NONE;
    ir_ref args[64];
    for (uint32_t j = 0; j < r; j++)
      args[j] = mkvar(m, n.loc, i64, r - 1 - j);
    ir_ref add_kids[2] = {args[0], mkvar(m, n.loc, i64, r + 1)};
    args[0] = mk(m, IR_ADD, n.loc, i64, 0, 2, add_kids);
    ir_ref call = args[0] ? mk(m, IR_CALL, n.loc, fd->result, ln.attr, r, args) : IR_NONE;
    ir_ref nl = call ? mk(m, IR_LAM, n.loc, IR_TY_NONE, r, 1, &call) : IR_NONE;
    if (!nl)
      return IR_NONE;
    ir_sym names[64];
    for (uint32_t j = 0; j < r; j++) {
      char nm[16];
      snprintf(nm, sizeof nm, "i%u", j + 1);
      names[j] = ir_sym_intern(p->ctx, nm, strlen(nm));
    }
    ir_node_get(m, nl)->names = ir_syms_push(m, r, names);
    ir_ref kids[2] = {shape, nl};
    return mk(m, IR_GENERATE, n.loc, n.type, n.attr, 2, kids);
  }
  /* generate(rows, |i1, .., ir| let i1 = i1 + lo; body) */
  uint32_t r = (uint32_t)ln.attr;
  if (ln.op != IR_LAM || r == 0 || r > 64)
    return IR_NONE;
  uint32_t tab[64];
  for (uint32_t j = 0; j < r; j++)
    tab[j] = j == r - 1 ? 0 : j + 1;
  remap_st rs = {tab, r, 3, 0};
  ir_ref body = remap_at(m, ir_kid(m, lam, 0), &rs);
  ir_ref add_kids[2] = {mkvar(m, n.loc, i64, r - 1), mkvar(m, n.loc, i64, r + 1)};
  ir_ref add = mk(m, IR_ADD, n.loc, i64, 0, 2, add_kids);
  ir_ref let_kids[2] = {add, body};
  ir_ref let =
      add && body ? mk(m, IR_LET, n.loc, ir_node_get(m, body)->type, 0, 2, let_kids) : IR_NONE;
  if (!let)
    return IR_NONE;
  ir_sym i1 = ir_binder_name(m, lam, 0, 0);
  ir_node_get(m, let)->names = ir_syms_push(m, 1, &i1);
  ir_ref nl = ir_node_new(m, IR_LAM, ln.loc, 1, &let);
  if (!nl)
    return IR_NONE;
  ir_node *c = ir_node_get(m, nl);
  uint32_t k = c->kids;
  *c = ln;
  c->kids = k;
  ir_ref kids[2] = {shape, nl};
  return mk(m, IR_GENERATE, n.loc, n.type, n.attr, 2, kids);
}

/* generate, iota and fill: the shape first; each rank makes its rows of
 * the partition rule's; nothing is sent. */
static ac_status eval_producer(dist_plan *p, ir_ref e, pval **out, bool *fallback, ac_error **err) {
  ac_module *m = p->m;
  ac_dist_runtime *rt = p->rt;
  ir_ref sk = ir_kid(m, e, 0);
  *fallback = true;
  if (ir_node_get(m, e)->op == IR_GENERATE) {
    ir_node fn = *ir_node_get(m, ir_kid(m, e, 1));
    if ((fn.op != IR_LAM && fn.op != IR_FNREF) || (fn.op == IR_LAM && fn.attr > 64) ||
        (fn.op == IR_FNREF && (fn.attr < 0 || m->funcs[fn.attr].nparams > 64)))
      return AC_OK;
  }
  if (reads_arrays(p, sk, 0) && ir_node_get(m, sk)->op != IR_LEN &&
      ir_node_get(m, sk)->op != IR_SHAPE)
    return AC_OK; /* rare: the full form */
  pval *sv = NULL;
  ac_status st = deval(p, sk, &sv, err);
  if (st != AC_OK) {
    *fallback = false;
    return st;
  }
  int64_t ext[64];
  bool ok = sv->n >= 1 && sv->n <= 64;
  for (uint32_t j = 0; ok && j < sv->n; j++)
    ok = sv->l[j].kind == LV_SCALAR && datum_index(&sv->l[j].s, &ext[j]) && ext[j] >= 0;
  if (any_rank(p, !ok)) { /* a negative extent: the full form reports it */
    pval_release(sv);
    return AC_OK;
  }
  *fallback = false;
  int me = rt->rank, R = rt->size;
  int64_t lo, hi;
  ac_dist_partition(ext[0], R, me, &lo, &hi);
  ac_datum lod = {AC_DATUM_SCALAR, AC_I64, {.i = lo}, NULL};
  pval *local = pval_new(sv->type, sv->n);
  for (uint32_t j = 0; local && j < sv->n; j++) {
    local->l[j] = sv->l[j];
    if (j == 0)
      local->l[j].s = (ac_datum){AC_DATUM_SCALAR, sv->l[0].s.type, {.i = hi - lo}, NULL};
  }
  pval_release(sv);
  pval *locals[2] = {scalar_value(ir_ty_scalar(p->ctx, AC_I64), &lod, 1), local};
  ir_ref x = find_stage(p, e, V_PRODUCE) ? IR_NONE : producer_expr(p, e);
  pval *v = NULL;
  st = run_locals(p, 0, locals, 2, e, V_PRODUCE, x, &v, err);
  int64_t *off = st == AC_OK ? rule_partition(p, ext[0]) : NULL;
  if (st == AC_OK)
    st = local_to_dist(p, v, ext[0], off, out, err);
  free(off);
  if (st != AC_OK)
    return st;
  trace(p, e, "each rank makes its rows");
  return AC_OK;
}

/* ---- gather: element requests to the owners ---- */

static bool datum_index(const ac_datum *d, int64_t *out) {
  if (d->type >= AC_U8 && d->type <= AC_U64) {
    if (d->s.u > (uint64_t)INT64_MAX)
      return false;
    *out = (int64_t)d->s.u;
    return true;
  }
  *out = d->s.i;
  return true;
}

static ac_array *leaf_array(const leaf *l);
static bool linear_indices(ac_array *const *ix, uint32_t r, const int64_t *ext, int64_t first,
                           int64_t cnt, int64_t *lin);
static int64_t inner_elems(const int64_t *ext, unsigned rank);
static ac_status fetched_value(dist_plan *p, const pval *av, ir_type t, unsigned q,
                               const int64_t *ext, const int64_t *off, const int64_t *lin,
                               int64_t cnt, pval **out, ac_error **err);

/* The source side of an exchange: leaves ls[0..n) (indices, and values)
 * of one shape and one partition, all distributed alike or all full (then
 * the partition rule's over their rows, written to rule[], which has room
 * for 65 entries). Sets *ext and *rank (their shape) and *off; false when
 * they differ (the full form then reports the shapes), or with more than
 * 64 ranks. */
static bool source_rows(const dist_plan *p, const leaf *const *ls, uint32_t n, const int64_t **ext,
                        unsigned *rank, const int64_t **off, int64_t *rule) {
  int R = p->rt->size;
  *ext = NULL;
  *off = NULL;
  uint32_t ndist = 0;
  for (uint32_t j = 0; j < n; j++) {
    unsigned rk;
    const int64_t *ex = leaf_extents(ls[j], &rk);
    if (!*ext) {
      *ext = ex;
      *rank = rk;
    } else if (rk != *rank || memcmp(ex, *ext, rk * sizeof *ex) != 0) {
      return false;
    }
    if (ls[j]->kind == LV_DIST) {
      if (*off && !same_offsets(p, *off, ls[j]->d->a->offsets))
        return false;
      *off = ls[j]->d->a->offsets;
      ndist++;
    } else if (ls[j]->kind != LV_FULL) {
      return false;
    }
  }
  if (n == 0 || (ndist > 0 && ndist < n) || R > 64)
    return false;
  if (!*off) {
    for (int q = 0; q < R; q++) {
      int64_t hi;
      ac_dist_partition((*ext)[0], R, q, &rule[q], &hi);
    }
    rule[R] = (*ext)[0];
    *off = rule;
  }
  return true;
}

/* gather(idx, a) with a distributed: each rank asks the owners for the
 * elements its block of idx names (dist_fetch_elems); the result is
 * distributed like idx (by the partition rule when idx is full). The
 * operands are temporaries on top of the environment (idx, then a). */
static ac_status gather_rows(dist_plan *p, ir_ref e, ir_ref c, pval **out, bool *fallback,
                             ac_error **err) {
  (void)c;
  ac_dist_runtime *rt = p->rt;
  pval *iv = p->env[p->nenv - 2], *av = p->env[p->nenv - 1];
  *fallback = true;
  for (uint32_t j = 0; j < av->n; j++)
    if (av->l[j].kind != LV_DIST)
      return AC_OK;
  const ac_dist_array *a0 = av->l[0].d->a;
  uint32_t r = a0->rank;
  if (iv->n != r || r == 0)
    return AC_OK;
  /* the partition of the result: idx's (its leaves alike), or the rule's */
  const leaf *ls[64];
  for (uint32_t j = 0; j < r && j < 64; j++)
    ls[j] = &iv->l[j];
  const int64_t *ioff = NULL, *iext = NULL;
  unsigned irank = 0;
  int64_t rule[65];
  if (r > 64 || !source_rows(p, ls, r, &iext, &irank, &ioff, rule))
    return AC_OK;
  *fallback = false;
  int me = rt->rank;
  int64_t lo = ioff[me], hi = ioff[me + 1];
  /* this rank's indices, linear in a */
  int64_t cnt = (hi - lo) * inner_elems(iext, irank);
  int64_t first = iv->l[0].kind == LV_DIST ? 0 : lo * inner_elems(iext, irank);
  int64_t *lin = malloc((size_t)(cnt > 0 ? cnt : 1) * sizeof *lin);
  ac_array *ix[64];
  for (uint32_t d = 0; d < r; d++)
    ix[d] = leaf_array(&iv->l[d]);
  bool bad = lin && !linear_indices(ix, r, a0->extents, first, cnt, lin);
  ac_status st =
      dist_agree(rt, lin ? AC_OK : dist_fail(rt, err, AC_ERR_NOMEM, "out of memory"), err);
  if (st != AC_OK || any_rank(p, bad)) {
    free(lin);
    *fallback = st == AC_OK; /* an index out of range: the full form says which */
    return st;
  }
  st = fetched_value(p, av, ir_node_get(p->m, e)->type, irank, iext, ioff, lin, cnt, out, err);
  free(lin);
  if (st != AC_OK)
    return st;
  trace(p, e, "element requests to the owners");
  return AC_OK;
}

/* backpermute(shape, f, a) = gather(generate(shape, f), a): the source
 * indices made where the result's rows live, then requested from the
 * owners. */
static ac_status eval_backpermute(dist_plan *p, ir_ref e, pval **out, ac_error **err) {
  ac_module *m = p->m;
  stage *s = find_stage(p, e, V_OPERANDS);
  ir_ref gen = s ? s->expr : IR_NONE;
  if (!gen) {
    ir_ref lam = ir_kid(m, e, 1);
    ir_node ln = *ir_node_get(m, lam);
    ir_type it =
        ln.op == IR_LAM
            ? ir_ty_array(p->ctx, ir_node_get(m, ir_kid(m, lam, 0))->type, (uint32_t)ln.attr)
            : ir_ty_array(p->ctx, m->funcs[ln.attr].result, m->funcs[ln.attr].nparams);
    ir_ref kids[2] = {ir_kid(m, e, 0), lam};
    gen = it ? mk(m, IR_GENERATE, ir_node_get(m, e)->loc, it, 0, 2, kids) : IR_NONE;
    if (!remember_expr(p, e, gen))
      return dist_agree(p->rt, dist_fail(p->rt, err, AC_ERR_NOMEM, "out of memory"), err);
  }
  size_t base = p->nenv;
  pval *iv = NULL, *av = NULL;
  ac_status st = deval(p, gen, &iv, err);
  if (st == AC_OK && !env_push(p, iv))
    st = dist_fail(p->rt, err, AC_ERR_NOMEM, "out of memory");
  if (st == AC_OK) {
    size_t keep = p->nenv;
    p->nenv = base; /* a is evaluated at e's environment */
    st = deval(p, ir_kid(m, e, 2), &av, err);
    p->nenv = keep;
  }
  if (st == AC_OK && !env_push(p, av))
    st = dist_fail(p->rt, err, AC_ERR_NOMEM, "out of memory");
  st = dist_agree(p->rt, st, err);
  bool fallback = true;
  if (st == AC_OK)
    st = gather_rows(p, e, IR_NONE, out, &fallback, err);
  env_pop(p, base);
  if (st == AC_OK && fallback)
    st = eval_stage(p, e, out, err);
  return st;
}

/* ---- scatter and permute: values routed to the owners ---- */

static uint32_t type_rank_of(ac_context *ctx, ir_type t) {
  ir_typeinfo ti = ir_ty_info(ctx, t);
  if (ti.kind == TK_TUPLE && ti.n > 0)
    ti = ir_ty_info(ctx, ti.fields[0]);
  return ti.kind == TK_ARRAY ? ti.rank : 0;
}

static ac_array *leaf_array(const leaf *l) {
  return l->kind == LV_DIST ? l->d->a->block : l->arr;
}

/* The linear indices, in an array of extents ext (rank r), of the
 * elements named by r integer arrays (ix[d], elements first..first+cnt);
 * false when one is out of range (or cannot be read). */
static bool linear_indices(ac_array *const *ix, uint32_t r, const int64_t *ext, int64_t first,
                           int64_t cnt, int64_t *lin) {
  for (int64_t k = 0; k < cnt; k++)
    lin[k] = 0;
  for (uint32_t d = 0; d < r; d++) {
    ac_scalar t = ac_array_type(ix[d]);
    const char *data = ac_array_data(ix[d]);
    size_t es = ac_scalar_size(t);
    if (!data && cnt > 0)
      return false;
    for (int64_t k = 0; k < cnt; k++) {
      ac_datum v = rt_scalar_read(t, data + (size_t)(first + k) * es);
      int64_t x;
      if (!datum_index(&v, &x) || x < 0 || x >= ext[d])
        return false;
      lin[k] = lin[k] * ext[d] + x;
    }
  }
  return true;
}

/* Every rank's verdict: true when some rank's is. */
static bool any_rank(dist_plan *p, bool mine) {
  int m = mine, any = m;
  MPI_Allreduce(&m, &any, 1, MPI_INT, MPI_MAX, p->rt->comm);
  return any != 0;
}

/* Whether every leaf of v is distributed with one partition (*off). */
static bool all_dist(const pval *v, const int64_t **off, const dist_plan *p) {
  if (v->n == 0)
    return false;
  for (uint32_t j = 0; j < v->n; j++) {
    if (v->l[j].kind != LV_DIST)
      return false;
    if (j == 0)
      *off = v->l[0].d->a->offsets;
    else if (!same_offsets(p, *off, v->l[j].d->a->offsets))
      return false;
  }
  return true;
}

static int64_t inner_elems(const int64_t *ext, unsigned rank) {
  int64_t n = 1;
  for (unsigned d = 1; d < rank; d++)
    n *= ext[d];
  return n;
}

/* A distributed leaf from this rank's block (the reference is taken). */
static ac_status dist_leaf(dist_plan *p, ac_array *blk, int64_t outer, const int64_t *off,
                           leaf *l) {
  unsigned rk = ac_array_rank(blk);
  int64_t gx[64];
  memcpy(gx, ac_array_extents(blk), rk * sizeof *gx);
  gx[0] = outer;
  ac_dist_array *da = dist_array_make(p->rt, ac_array_type(blk), rk, gx, off, blk);
  dref *d = da ? dref_new(da) : NULL;
  *l = (leaf){LV_DIST, {0}, NULL, d};
  return d ? AC_OK : AC_ERR_NOMEM;
}

/* v's local arrays (v is taken) as this rank's blocks of a distributed
 * value: partition off, outermost extent outer. Agreed. */
static ac_status local_to_dist(dist_plan *p, pval *v, int64_t outer, const int64_t *off, pval **out,
                               ac_error **err) {
  pval *w = off && v ? pval_new(v->type, v->n) : NULL;
  ac_status st = w ? AC_OK : AC_ERR_NOMEM;
  for (uint32_t j = 0; w && j < v->n; j++) {
    ac_array_retain(v->l[j].arr);
    if (dist_leaf(p, v->l[j].arr, outer, off, &w->l[j]) != AC_OK)
      st = AC_ERR_NOMEM;
  }
  pval_release(v);
  st = dist_agree(p->rt, st == AC_OK ? st : dist_fail(p->rt, err, st, "out of memory"), err);
  if (st != AC_OK) {
    pval_release(w);
    return st;
  }
  *out = w;
  return AC_OK;
}

/* scatter(idx, vals, dest), dest distributed: each rank sends the (index,
 * value) pairs of its rows of idx and vals to the owners of the indices
 * (dist_route_elems), which write them into a copy of their block. An index
 * out of range or written twice: the full form reports it. The operands
 * are temporaries on top of the environment (idx, vals, dest). */
static ac_status scatter_rows(dist_plan *p, ir_ref e, ir_ref c, pval **out, bool *fallback,
                              ac_error **err) {
  (void)c;
  ac_dist_runtime *rt = p->rt;
  pval *iv = p->env[p->nenv - 3], *vv = p->env[p->nenv - 2], *dv = p->env[p->nenv - 1];
  const int64_t *doff = NULL;
  *fallback = true;
  if (!all_dist(dv, &doff, p) || vv->n != dv->n)
    return AC_OK;
  const ac_dist_array *d0 = dv->l[0].d->a;
  uint32_t r = d0->rank;
  if (iv->n != r || r > 64)
    return AC_OK;
  /* idx and vals: one shape, and one partition (or full) */
  const leaf *ls[128];
  for (uint32_t j = 0; j < iv->n + vv->n && j < 128; j++)
    ls[j] = j < iv->n ? &iv->l[j] : &vv->l[j - iv->n];
  const int64_t *sext = NULL, *soff = NULL;
  unsigned srank = 0;
  int64_t rule[65];
  if (iv->n + vv->n > 128 || !source_rows(p, ls, iv->n + vv->n, &sext, &srank, &soff, rule))
    return AC_OK;
  int me = rt->rank;
  *fallback = false;
  int64_t inner = inner_elems(sext, srank);
  int64_t cnt = (soff[me + 1] - soff[me]) * inner;
  int64_t first = iv->l[0].kind == LV_DIST ? 0 : soff[me] * inner;
  int64_t *lin = malloc((size_t)(cnt > 0 ? cnt : 1) * sizeof *lin);
  ac_array *ix[64];
  for (uint32_t d = 0; d < r; d++)
    ix[d] = leaf_array(&iv->l[d]);
  bool bad = lin && !linear_indices(ix, r, d0->extents, first, cnt, lin);
  ac_status st =
      dist_agree(rt, lin ? AC_OK : dist_fail(rt, err, AC_ERR_NOMEM, "out of memory"), err);
  if (st != AC_OK || any_rank(p, bad)) {
    free(lin);
    *fallback = st == AC_OK;
    return st;
  }
  int64_t row_elems = inner_elems(d0->extents, r);
  int64_t mine = (doff[me + 1] - doff[me]) * row_elems;
  pval *v = pval_new(dv->type, dv->n);
  unsigned char *seen = calloc((size_t)(mine > 0 ? mine : 1), 1);
  bool dup = false;
  st = dist_agree(rt, v && seen ? AC_OK : dist_fail(rt, err, AC_ERR_NOMEM, "out of memory"), err);
  for (uint32_t j = 0; st == AC_OK && j < dv->n; j++) {
    ac_array *vals = leaf_array(&vv->l[j]);
    size_t es = ac_scalar_size(ac_array_type(vals));
    const char *vdata = ac_array_data(vals);
    int64_t *ridx = NULL, nrecv = 0;
    void *rvals = NULL;
    st =
        dist_route_elems(rt, doff, row_elems, es, lin,
                         vdata ? vdata + (size_t)(vv->l[j].kind == LV_DIST ? 0 : first) * es : NULL,
                         cnt, &ridx, &rvals, &nrecv, err);
    if (st != AC_OK)
      break;
    ac_array *blk = dv->l[j].d->a->block;
    ac_array *copy = ac_array_create(p->ctx, ac_array_type(blk), ac_array_rank(blk),
                                     ac_array_extents(blk), ac_array_data(blk), NULL);
    char *cdata = copy ? (char *)ac_array_data(copy) : NULL;
    for (int64_t k = 0; cdata && k < nrecv; k++) {
      if (j == 0) {
        dup |= seen[ridx[k]] != 0;
        seen[ridx[k]] = 1;
      }
      memcpy(cdata + (size_t)ridx[k] * es, (const char *)rvals + (size_t)k * es, es);
    }
    free(ridx);
    free(rvals);
    if (!copy || (!cdata && mine > 0)) {
      ac_array_release(copy);
      st = dist_fail(rt, err, AC_ERR_NOMEM, "out of memory");
    } else if (dist_leaf(p, copy, d0->extents[0], doff, &v->l[j]) != AC_OK) {
      st = dist_fail(rt, err, AC_ERR_NOMEM, "out of memory");
    }
    st = dist_agree(rt, st, err);
  }
  free(lin);
  free(seen);
  if (st == AC_OK && any_rank(p, dup)) {
    pval_release(v);
    *fallback = true; /* an index written twice: the full form says which */
    return AC_OK;
  }
  if (st != AC_OK) {
    pval_release(v);
    return st;
  }
  *out = v;
  trace(p, e, "values routed to the owners of their indices");
  return AC_OK;
}

/* The element type of an array type (a tuple of arrays: the tuple of
 * their element types). */
static ir_type elem_type(ac_context *ctx, ir_type t) {
  ir_typeinfo ti = ir_ty_info(ctx, t);
  if (ti.kind == TK_ARRAY)
    return ir_ty_scalar(ctx, ti.sc);
  if (ti.kind != TK_TUPLE || ti.n > 64)
    return IR_TY_NONE;
  ir_type f[64];
  for (uint32_t i = 0; i < ti.n; i++)
    f[i] = elem_type(ctx, ti.fields[i]);
  return ir_ty_tuple(ctx, ti.n, f);
}

/* permute(comb, dest, f, a), dest distributed: the destinations of each
 * rank's rows of a (generate(shape(a), f), made where the rows are) and
 * the values are routed to the owners of the destinations, which combine
 * them into their block in the order of a's elements (by a permute of the
 * values received). The operands dest and a are temporaries (c is e with
 * them). */
static ac_status permute_rows(dist_plan *p, ir_ref e, ir_ref c, pval **out, bool *fallback,
                              ac_error **err) {
  ac_module *m = p->m;
  ac_dist_runtime *rt = p->rt;
  size_t base = p->nenv - 2;
  pval *dv = p->env[base], *av = p->env[base + 1];
  const int64_t *doff = NULL;
  *fallback = true;
  if (!all_dist(dv, &doff, p) || av->n != dv->n)
    return AC_OK;
  const ac_dist_array *d0 = dv->l[0].d->a;
  uint32_t r = d0->rank;
  if (r > 64)
    return AC_OK;
  /* the destinations: generate(shape(a), f) at c's environment */
  stage *gs = find_stage(p, c, V_OPERANDS);
  ir_ref gen = gs ? gs->expr : IR_NONE;
  ir_loc loc = ir_node_get(m, e)->loc;
  if (!gen) {
    ir_ref f = ir_kid(m, c, 2);
    ir_node fn = *ir_node_get(m, f);
    ir_ref av0 = mkvar(m, loc, av->type, 0);
    uint32_t q = type_rank_of(p->ctx, av->type);
    ir_type sht = q == 1 ? ir_ty_scalar(p->ctx, AC_I64) : IR_TY_NONE;
    if (q > 1 && q <= 64) {
      ir_type f64s[64];
      for (uint32_t d = 0; d < q; d++)
        f64s[d] = ir_ty_scalar(p->ctx, AC_I64);
      sht = ir_ty_tuple(p->ctx, q, f64s);
    }
    ir_ref sh = av0 && sht ? mk(m, IR_SHAPE, loc, sht, 0, 1, &av0) : IR_NONE;
    ir_type rt_f = fn.op == IR_LAM     ? ir_node_get(m, ir_kid(m, f, 0))->type
                   : fn.op == IR_FNREF ? m->funcs[fn.attr].result
                                       : IR_TY_NONE;
    ir_type it = rt_f ? ir_ty_array(p->ctx, rt_f, q) : IR_TY_NONE;
    ir_ref kids[2] = {sh, f};
    gen = sh && it ? mk(m, IR_GENERATE, loc, it, 0, 2, kids) : IR_NONE;
    if (!remember_expr(p, c, gen))
      return AC_OK;
  }
  pval *gv = NULL;
  ac_status st = deval(p, gen, &gv, err);
  if (st != AC_OK) {
    *fallback = false;
    return st;
  }
  const int64_t *goff = NULL;
  if (!all_dist(gv, &goff, p) || gv->n != r) {
    pval_release(gv);
    return AC_OK;
  }
  *fallback = false;
  int me = rt->rank;
  /* a's rows where the destinations are */
  const ac_dist_array *g0 = gv->l[0].d->a;
  int64_t inner = inner_elems(g0->extents, g0->rank);
  int64_t cnt = (goff[me + 1] - goff[me]) * inner;
  ac_array *vals[64];
  ac_dist_array *moved[64];
  memset(moved, 0, sizeof moved);
  for (uint32_t j = 0; st == AC_OK && j < av->n; j++) {
    leaf *l = &av->l[j];
    if (l->kind == LV_DIST && !same_offsets(p, l->d->a->offsets, goff)) {
      st = dist_repartition(rt, l->d->a, goff, &moved[j], err);
      vals[j] = moved[j] ? moved[j]->block : NULL;
    } else if (l->kind == LV_DIST) {
      vals[j] = l->d->a->block;
    } else {
      vals[j] =
          ac_array_create(p->ctx, ac_array_type(l->arr), 1, &cnt,
                          (const char *)ac_array_data(l->arr) +
                              (size_t)(goff[me] * inner) * ac_scalar_size(ac_array_type(l->arr)),
                          NULL);
      st = dist_agree(rt, vals[j] ? AC_OK : dist_fail(rt, err, AC_ERR_NOMEM, "out of memory"), err);
    }
  }
  int64_t *lin = st == AC_OK ? malloc((size_t)(cnt > 0 ? cnt : 1) * sizeof *lin) : NULL;
  ac_array *ix[64];
  for (uint32_t d = 0; d < r; d++)
    ix[d] = gv->l[d].d->a->block;
  bool bad = lin && !linear_indices(ix, r, d0->extents, 0, cnt, lin);
  if (st == AC_OK)
    st = dist_agree(rt, lin ? AC_OK : dist_fail(rt, err, AC_ERR_NOMEM, "out of memory"), err);
  bool anybad = st == AC_OK && any_rank(p, bad);
  pval_release(gv);
  /* route the values; receive (local index, value) pairs */
  int64_t row_elems = inner_elems(d0->extents, r);
  int64_t mine = (doff[me + 1] - doff[me]) * row_elems;
  pval *flat = NULL, *rv = NULL, *ri = NULL;
  if (st == AC_OK && !anybad) {
    flat = pval_new(ir_ty_array(p->ctx, elem_type(p->ctx, dv->type), 1), dv->n);
    rv = pval_new(flat ? flat->type : IR_TY_NONE, dv->n);
    ri = pval_new(ir_ty_array(p->ctx, ir_ty_scalar(p->ctx, AC_I64), 1), 1);
    st = dist_agree(
        rt, flat && rv && ri ? AC_OK : dist_fail(rt, err, AC_ERR_NOMEM, "out of memory"), err);
  }
  for (uint32_t j = 0; st == AC_OK && !anybad && j < dv->n; j++) {
    size_t es = ac_scalar_size(ac_array_type(vals[j]));
    int64_t *ridx = NULL, nrecv = 0;
    void *rvals = NULL;
    st = dist_route_elems(rt, doff, row_elems, es, lin, ac_array_data(vals[j]), cnt, &ridx, &rvals,
                          &nrecv, err);
    if (st != AC_OK)
      break;
    ac_array *blk = dv->l[j].d->a->block;
    ac_array *fb = ac_array_create(p->ctx, ac_array_type(blk), 1, &mine, ac_array_data(blk), NULL);
    ac_array *fv = ac_array_create(p->ctx, ac_array_type(blk), 1, &nrecv, rvals, NULL);
    ac_array *fi = j == 0 ? ac_array_create(p->ctx, AC_I64, 1, &nrecv, ridx, NULL) : NULL;
    flat->l[j] = (leaf){LV_LOCAL, {0}, fb, NULL};
    rv->l[j] = (leaf){LV_LOCAL, {0}, fv, NULL};
    if (j == 0)
      ri->l[0] = (leaf){LV_LOCAL, {0}, fi, NULL};
    free(ridx);
    free(rvals);
    st = dist_agree(
        rt, fb && fv && (j > 0 || fi) ? AC_OK : dist_fail(rt, err, AC_ERR_NOMEM, "out of memory"),
        err);
  }
  free(lin);
  for (uint32_t j = 0; j < av->n; j++) {
    if (moved[j])
      ac_dist_array_destroy(moved[j]);
    else if (av->l[j].kind != LV_DIST)
      ac_array_release(vals[j]);
  }
  if (st != AC_OK || anybad) {
    pval_release(flat);
    pval_release(rv);
    pval_release(ri);
    *fallback = st == AC_OK; /* a destination out of range: the full form says which */
    return st;
  }
  /* permute(comb, flat, |k| ridx[k], rvals) over the temporaries (flat,
   * ridx, rvals) in place of the operands': comb at e's environment,
   * three above it */
  ir_ref x = IR_NONE;
  if (!find_stage(p, e, V_PERMUTE)) {
    ir_type i64 = ir_ty_scalar(p->ctx, AC_I64);
    ir_ref idx_kids[2] = {mkvar(m, loc, ri->type, 2), mkvar(m, loc, i64, 0)};
    ir_ref at = mk(m, IR_INDEX, loc, i64, 0, 2, idx_kids);
    ir_ref lam = at ? mk(m, IR_LAM, loc, IR_TY_NONE, 1, 1, &at) : IR_NONE;
    if (lam) {
      ir_sym k = ir_sym_intern(p->ctx, "k", 1);
      ir_node_get(m, lam)->names = ir_syms_push(m, 1, &k);
    }
    ir_ref kids[4] = {ir_shift(m, ir_kid(m, e, 0), 3, 0), mkvar(m, loc, flat->type, 2), lam,
                      mkvar(m, loc, rv->type, 0)};
    x = kids[0] && kids[1] && lam && kids[3]
            ? mk(m, IR_PERMUTE, loc, flat->type, ir_node_get(m, e)->attr, 4, kids)
            : IR_NONE;
  }
  pval *locals[3] = {flat, ri, rv};
  pval *res = NULL;
  st = run_locals(p, 2, locals, 3, e, V_PERMUTE, x, &res, err);
  if (st != AC_OK)
    return st;
  /* the flat blocks back to the blocks' shape, distributed like dest */
  pval *v = pval_new(dv->type, dv->n);
  for (uint32_t j = 0; v && j < dv->n; j++) {
    ac_array *blk = dv->l[j].d->a->block;
    ac_array *b = ac_array_create(p->ctx, ac_array_type(blk), ac_array_rank(blk),
                                  ac_array_extents(blk), ac_array_data(res->l[j].arr), NULL);
    if (!b || dist_leaf(p, b, d0->extents[0], doff, &v->l[j]) != AC_OK)
      st = AC_ERR_NOMEM;
  }
  pval_release(res);
  if (!v)
    st = AC_ERR_NOMEM;
  st = dist_agree(rt, st == AC_OK ? st : dist_fail(rt, err, st, "out of memory"), err);
  if (st != AC_OK) {
    pval_release(v);
    return st;
  }
  *out = v;
  trace(p, e, "values routed to the owners of their destinations, combined there");
  return AC_OK;
}

/* ---- segmented folds ---- */

/* A segmented operation's segments over a distributed rank-1 a (lens
 * made full, one entry per segment): segment s starts at start[s] and
 * belongs to the rank whose block holds its first element (an empty
 * segment: the block its position falls in, the last rank at the end);
 * sb[r] is rank r's first segment. This rank's pieces are the segments
 * [p0, p1) that meet its block or are its own; pieces (a local array of
 * lens's type) their lengths within the block; cont: the first continues
 * a segment of an earlier rank. */
typedef struct segs {
  int64_t nseg, *start, *sb, p0, p1, np;
  bool cont;
  pval *pieces;
} segs;

static void segs_free(segs *g) {
  free(g->start);
  free(g->sb);
  pval_release(g->pieces);
  *g = (segs){0};
}

/* Makes g for a and lens (temporaries av, lv); *fallback when the lengths
 * are wrong on some rank (the full form reports them). Collective. */
static ac_status seg_pieces(dist_plan *p, const pval *av, const pval *lv, segs *g, bool *fallback,
                            ac_error **err) {
  ac_dist_runtime *rt = p->rt;
  const ac_dist_array *a0 = av->l[0].d->a;
  *g = (segs){0};
  *fallback = false;
  ac_array *lens = NULL;
  ac_status st = AC_OK;
  if (lv->l[0].kind == LV_DIST)
    st = leaf_full(p, lv->l[0].d, &lens, err);
  else
    lens = lv->l[0].arr;
  st = dist_agree(rt, st, err);
  if (st != AC_OK)
    return st;
  int64_t S = ac_array_size(lens), n = a0->extents[0];
  int R = rt->size, me = rt->rank;
  int64_t *start = malloc(((size_t)S + 1) * sizeof *start);
  ac_scalar lt = ac_array_type(lens);
  const char *ld = ac_array_data(lens);
  bool ok = start && (ld || S == 0);
  int64_t sum = 0;
  for (int64_t k = 0; ok && k < S; k++) {
    ac_datum d = rt_scalar_read(lt, ld + (size_t)k * ac_scalar_size(lt));
    int64_t x;
    ok = datum_index(&d, &x) && x >= 0 && x <= n - sum;
    start[k] = sum;
    sum += ok ? x : 0;
  }
  ok = ok && sum == n;
  if (any_rank(p, !ok)) {
    free(start);
    *fallback = true;
    return AC_OK;
  }
  start[S] = n;
  int64_t *sb = malloc(((size_t)R + 1) * sizeof *sb);
  if (sb) {
    int64_t s = 0;
    for (int r = 0; r < R; r++) {
      sb[r] = s;
      while (s < S && (start[s] < n ? dist_owner(a0->offsets, R, start[s]) : R - 1) == r)
        s++;
    }
    sb[R] = S;
  }
  int64_t lo = a0->offsets[me], hi = a0->offsets[me + 1];
  int64_t p0 = sb ? sb[me] : 0, p1 = sb ? sb[me + 1] : 0;
  bool cont = false;
  if (sb && hi > lo) {
    /* the segment holding row lo, when it started before */
    int64_t a = 0, b = S;
    while (a < b) {
      int64_t mid = (a + b) / 2;
      if (start[mid] <= lo)
        a = mid + 1;
      else
        b = mid;
    }
    int64_t s = a - 1;
    while (s >= 0 && start[s + 1] == start[s])
      s--; /* skip empty segments at lo */
    if (s >= 0 && start[s] < lo && start[s + 1] > lo) {
      cont = true;
      p0 = s;
    }
  }
  int64_t np = p1 - p0;
  size_t es = ac_scalar_size(lt);
  char *buf = malloc((size_t)(np > 0 ? np : 1) * es);
  for (int64_t k = 0; buf && k < np; k++) {
    int64_t s = p0 + k, a = start[s] > lo ? start[s] : lo,
            b = start[s + 1] < hi ? start[s + 1] : hi;
    ac_datum d = {AC_DATUM_SCALAR, lt, {.i = b > a ? b - a : 0}, NULL};
    rt_scalar_write(&d, buf + (size_t)k * es);
  }
  ac_array *pl = buf ? ac_array_create(p->ctx, lt, 1, &np, buf, NULL) : NULL;
  free(buf);
  pval *ll = pl ? pval_new(lv->type, 1) : NULL;
  if (ll)
    ll->l[0] = (leaf){LV_LOCAL, {0}, pl, NULL};
  else
    ac_array_release(pl);
  *g = (segs){S, start, sb, p0, p1, np, cont, ll};
  if (!start || !sb || !ll) {
    segs_free(g);
    st = dist_fail(rt, err, AC_ERR_NOMEM, "out of memory");
  }
  return dist_agree(rt, st, err);
}

/* fold_seg(f, z, a, lens) with a distributed (rank 1) and f's identity z:
 * each rank folds its pieces of the segments (fold_seg of its block with
 * the pieces' lengths), and a segment that goes on into later blocks is
 * completed by its owner with the pieces of those ranks (allgathered: one
 * value per rank), combined in rank order. The operands are temporaries
 * (a, lens). */
static ac_status fold_seg_rows(dist_plan *p, ir_ref e, ir_ref c, pval **out, bool *fallback,
                               ac_error **err) {
  ac_module *m = p->m;
  ac_dist_runtime *rt = p->rt;
  size_t base = p->nenv - 2;
  pval *av = p->env[base], *lv = p->env[base + 1];
  const int64_t *aoff = NULL;
  *fallback = true;
  if (!all_dist(av, &aoff, p) || lv->n != 1 || av->n > 64 ||
      !z_identity(m, ir_kid(m, e, 0), ir_kid(m, e, 1)) || reads_arrays(p, ir_kid(m, c, 0), 0) ||
      av->l[0].d->a->rank != 1)
    return AC_OK;
  segs g;
  ac_status st = seg_pieces(p, av, lv, &g, fallback, err);
  if (st != AC_OK || *fallback)
    return st;
  int R = rt->size, me = rt->rank;
  int64_t S = g.nseg, p0 = g.p0, p1 = g.p1, np = g.np, *sb = g.sb;
  bool cont = g.cont;
  g.pieces->refs++;
  pval *locals[2] = {blocks_value(av), g.pieces};
  pval *res = NULL;
  st = run_locals(p, 2, locals, 2, e, V_FOLD_SEG, c, &res, err);
  /* the continuation pieces: each rank's first piece (when it continues
   * a segment) and that segment's number, allgathered */
  uint32_t nl = av->n;
  ac_datum first[65];
  memset(first, 0, sizeof first);
  if (st == AC_OK && cont && np > 0)
    for (uint32_t j = 0; j < nl; j++) {
      ac_array *b = res->l[j].arr;
      first[j] = rt_scalar_read(ac_array_type(b), ac_array_data(b));
    }
  first[nl] = (ac_datum){AC_DATUM_SCALAR, AC_I64, {.i = cont ? p0 : -1}, NULL};
  ac_datum *all = NULL;
  if (st == AC_OK)
    st = allgather_scalars(p, first, nl + 1, &all, err);
  /* my last own segment, completed with later ranks' continuation pieces */
  int64_t own0 = cont ? 1 : 0, own = np - own0;
  ac_datum last[64], tmp[64];
  bool extend = false;
  ir_type et = ir_node_get(m, e)->type;
  et = elem_type(p->ctx, et);
  if (st == AC_OK && own > 0) {
    int64_t s = p1 - 1;
    for (uint32_t j = 0; j < nl; j++) {
      ac_array *b = res->l[j].arr;
      ac_scalar t = ac_array_type(b);
      last[j] =
          rt_scalar_read(t, (const char *)ac_array_data(b) + (size_t)(np - 1) * ac_scalar_size(t));
    }
    for (int r = me + 1; r < R && st == AC_OK; r++) {
      if (all[(size_t)r * (nl + 1) + nl].s.i != s)
        continue;
      extend = true;
      st = apply_f(p, c, 0, et, last, &all[(size_t)r * (nl + 1)], nl, tmp, err);
      memcpy(last, tmp, nl * sizeof *last);
    }
  }
  free(all);
  pval *v = st == AC_OK ? pval_new(ir_node_get(m, e)->type, nl) : NULL;
  for (uint32_t j = 0; v && j < nl; j++) {
    ac_array *b = res->l[j].arr;
    ac_scalar t = ac_array_type(b);
    size_t es = ac_scalar_size(t);
    ac_array *blk = ac_array_create(p->ctx, t, 1, &own,
                                    (const char *)ac_array_data(b) + (size_t)own0 * es, NULL);
    if (blk && extend && own > 0)
      rt_scalar_write(&last[j], (char *)ac_array_data(blk) + (size_t)(own - 1) * es);
    if (!blk || dist_leaf(p, blk, S, sb, &v->l[j]) != AC_OK)
      st = AC_ERR_NOMEM;
  }
  pval_release(res);
  if (st == AC_OK && !v)
    st = AC_ERR_NOMEM;
  segs_free(&g);
  st = dist_agree(
      rt, st == AC_OK || st != AC_ERR_NOMEM ? st : dist_fail(rt, err, st, "out of memory"), err);
  if (st != AC_OK) {
    pval_release(v);
    return st;
  }
  *out = v;
  trace(p, e, "local folds of the pieces, segments across blocks completed by their owners");
  return AC_OK;
}

/* generate(len(s), |k| if k < m { f(c, s[k]) } else { s[k] }) at e's
 * environment with three temporaries above it: c (et), m (i64), s (at). */
static ir_ref seg_fixup_expr(dist_plan *p, ir_ref e, ir_type at, ir_type et) {
  ac_module *m = p->m;
  ir_loc loc = ir_node_get(m, e)->loc;
  ir_type i64 = ir_ty_scalar(p->ctx, AC_I64), bt = ir_ty_scalar(p->ctx, AC_BOOL);
  ir_ref sv = mkvar(m, loc, at, 0);
  ir_ref len = sv ? mk(m, IR_LEN, loc, i64, 0, 1, &sv) : IR_NONE;
  /* under the lambda: k is 0, s 1, m 2, c 3 */
  ir_ref lt_kids[2] = {mkvar(m, loc, i64, 0), mkvar(m, loc, i64, 2)};
  ir_ref lt = mk(m, IR_LT, loc, bt, 0, 2, lt_kids);
  ir_ref x1_kids[2] = {mkvar(m, loc, at, 1), mkvar(m, loc, i64, 0)};
  ir_ref x2_kids[2] = {mkvar(m, loc, at, 1), mkvar(m, loc, i64, 0)};
  ir_ref x1 = mk(m, IR_INDEX, loc, et, 0, 2, x1_kids), x2 = mk(m, IR_INDEX, loc, et, 0, 2, x2_kids);
  ir_ref f = ir_shift(m, ir_kid(m, e, 0), 4, 0);
  ir_ref app = f && x1 ? apply2(m, f, mkvar(m, loc, et, 3), x1, et) : IR_NONE;
  ir_ref if_kids[3] = {lt, app, x2};
  ir_ref cond = lt && app && x2 ? mk(m, IR_IF, loc, et, 0, 3, if_kids) : IR_NONE;
  ir_ref lam = cond ? mk(m, IR_LAM, loc, IR_TY_NONE, 1, 1, &cond) : IR_NONE;
  if (!lam || !len)
    return IR_NONE;
  ir_sym k = ir_sym_intern(p->ctx, "k", 1);
  ir_node_get(m, lam)->names = ir_syms_push(m, 1, &k);
  ir_ref kids[2] = {len, lam};
  return mk(m, IR_GENERATE, loc, at, 0, 2, kids);
}

/* scan_seg(f, z, a, lens) (with f's identity z) and scan_incl_seg(f, a,
 * lens) with a distributed (rank 1): each rank scans its pieces of the
 * segments (the segmented scan of its block with the pieces' lengths); the
 * total of each rank's last piece and its segment are allgathered, and a
 * rank whose first piece continues a segment combines the totals of that
 * segment's pieces before it, in rank order, into a carry that it applies
 * to the first piece's elements with f. The operands are temporaries (a,
 * lens). */
static ac_status scan_seg_rows(dist_plan *p, ir_ref e, ir_ref c, pval **out, bool *fallback,
                               ac_error **err) {
  ac_module *m = p->m;
  ac_dist_runtime *rt = p->rt;
  bool incl = ir_node_get(m, e)->op == IR_SCAN_INCL_SEG;
  size_t base = p->nenv - 2;
  pval *av = p->env[base], *lv = p->env[base + 1];
  const int64_t *aoff = NULL;
  *fallback = true;
  if (!all_dist(av, &aoff, p) || lv->n != 1 || av->n > 63 ||
      (!incl && !z_identity(m, ir_kid(m, e, 0), ir_kid(m, e, 1))) ||
      reads_arrays(p, ir_kid(m, c, 0), 0) || av->l[0].d->a->rank != 1)
    return AC_OK;
  segs g;
  ac_status st = seg_pieces(p, av, lv, &g, fallback, err);
  if (st != AC_OK || *fallback)
    return st;
  const ac_dist_array *a0 = av->l[0].d->a;
  int me = rt->rank;
  int64_t lo = a0->offsets[me], hi = a0->offsets[me + 1], cnt = hi - lo;
  ir_type at = ir_node_get(m, e)->type, et = elem_type(p->ctx, at);
  uint32_t nl = av->n;
  /* the local segmented scan of the pieces */
  g.pieces->refs++;
  pval *locals[2] = {blocks_value(av), g.pieces};
  pval *sv = NULL;
  st = run_locals(p, 2, locals, 2, e, V_SCAN_SEG, c, &sv, err);
  /* the total of this rank's last piece, and its segment */
  ac_datum mine[65], tmp[64];
  memset(mine, 0, sizeof mine);
  int64_t sid = -1;
  if (st == AC_OK && cnt > 0) {
    int64_t a = 0, b = g.nseg; /* the segment holding row hi - 1 */
    while (a < b) {
      int64_t mid = (a + b) / 2;
      if (g.start[mid] <= hi - 1)
        a = mid + 1;
      else
        b = mid;
    }
    sid = a - 1;
    for (uint32_t j = 0; j < nl; j++) {
      ac_array *sb = sv->l[j].arr;
      ac_scalar t = ac_array_type(sb);
      mine[j] = rt_scalar_read(t, (const char *)ac_array_data(sb) +
                                      (size_t)(cnt - 1) * ac_scalar_size(t));
    }
    if (!incl) { /* exclusive: the total is f(out[last], a[last]) */
      ac_datum alast[64];
      for (uint32_t j = 0; j < nl; j++) {
        ac_array *ab = av->l[j].d->a->block;
        ac_scalar t = ac_array_type(ab);
        alast[j] = rt_scalar_read(t, (const char *)ac_array_data(ab) +
                                         (size_t)(cnt - 1) * ac_scalar_size(t));
      }
      st = apply_f(p, c, 0, et, mine, alast, nl, tmp, err);
      memcpy(mine, tmp, nl * sizeof *mine);
    }
  }
  mine[nl] = (ac_datum){AC_DATUM_SCALAR, AC_I64, {.i = sid}, NULL};
  st = dist_agree(rt, st, err);
  ac_datum *all = NULL;
  if (st == AC_OK)
    st = allgather_scalars(p, mine, nl + 1, &all, err);
  /* the carry of a first piece that continues segment p0: the totals of
   * the ranks before whose last piece is of that segment, in rank order */
  ac_datum carry[64];
  bool have = false;
  for (int r = 0; st == AC_OK && g.cont && r < me; r++) {
    const ac_datum *v = &all[(size_t)r * (nl + 1)];
    if (v[nl].s.i != g.p0)
      continue;
    if (!have) {
      memcpy(carry, v, nl * sizeof *carry);
      have = true;
    } else {
      st = apply_f(p, c, 0, et, carry, v, nl, tmp, err);
      memcpy(carry, tmp, nl * sizeof *carry);
    }
  }
  free(all);
  for (uint32_t j = 0; !have && j < nl; j++) /* unused: m is 0 */
    carry[j] = (ac_datum){AC_DATUM_SCALAR, av->l[j].d->a->type, {0}, NULL};
  int64_t first = have ? (g.start[g.p0 + 1] < hi ? g.start[g.p0 + 1] : hi) - lo : 0;
  ac_datum md = {AC_DATUM_SCALAR, AC_I64, {.i = first}, NULL};
  st = dist_agree(rt, st, err);
  /* the fix-up (every rank; m = 0 where there is no carry) */
  pval *res = NULL;
  if (st == AC_OK) {
    pval *fix[3] = {scalar_value(et, carry, nl), scalar_value(ir_ty_scalar(p->ctx, AC_I64), &md, 1),
                    sv};
    sv = NULL;
    ir_ref x = find_stage(p, e, V_SEGFIX) ? IR_NONE : seg_fixup_expr(p, e, at, et);
    st = run_locals(p, 2, fix, 3, e, V_SEGFIX, x, &res, err);
  }
  pval_release(sv);
  if (st == AC_OK)
    st = local_to_dist(p, res, a0->extents[0], a0->offsets, out, err);
  segs_free(&g);
  if (st == AC_OK)
    trace(p, e, "local scans of the pieces, segments across blocks carried from the ranks before");
  return st;
}

/* ---- index-space operations: reverse, transpose, reshape; filter; a[i] ---- */

/* A new value of type t whose leaves are the rows of the partition rule's
 * over extents ext (rank q) made from the elements of av's leaves at the
 * linear indices lin (this rank's cnt, fetched from their owners). */
static ac_status fetched_value(dist_plan *p, const pval *av, ir_type t, unsigned q,
                               const int64_t *ext, const int64_t *off, const int64_t *lin,
                               int64_t cnt, pval **out, ac_error **err) {
  ac_dist_runtime *rt = p->rt;
  pval *v = pval_new(t, av->n);
  ac_status st = dist_agree(rt, v ? AC_OK : dist_fail(rt, err, AC_ERR_NOMEM, "out of memory"), err);
  for (uint32_t j = 0; st == AC_OK && j < av->n; j++) {
    ac_array *got = NULL;
    st = dist_fetch_elems(rt, av->l[j].d->a, lin, cnt, &got, err);
    if (st != AC_OK)
      break;
    int64_t bx[64];
    memcpy(bx, ext, q * sizeof *bx);
    bx[0] = off[rt->rank + 1] - off[rt->rank];
    ac_error *e = NULL;
    ac_array *blk = reshaped(p, got, q, bx, &e);
    st = !blk ? (e ? e->status : dist_fail(rt, &e, AC_ERR_NOMEM, "out of memory"))
         : dist_leaf(p, blk, ext[0], off, &v->l[j]) == AC_OK
             ? AC_OK
             : dist_fail(rt, &e, AC_ERR_NOMEM, "out of memory");
    st = dist_agree(rt, ir_report(err, e, st), err);
  }
  if (st != AC_OK) {
    pval_release(v);
    return st;
  }
  *out = v;
  return AC_OK;
}

/* The partition rule's offsets over n rows (size + 1 entries, malloc'd). */
static int64_t *rule_partition(dist_plan *p, int64_t n) {
  int R = p->rt->size;
  int64_t *off = malloc(((size_t)R + 1) * sizeof *off);
  for (int q = 0; off && q < R; q++) {
    int64_t hi;
    ac_dist_partition(n, R, q, &off[q], &hi);
  }
  if (off)
    off[R] = n;
  return off;
}

/* reverse (rank 1), transpose (rank 2) and reshape of a distributed
 * array: each rank makes its rows of the rule's partition of the result
 * from the elements they come from (dist_fetch_elems). The operands are
 * temporaries (reshape: shape, a; the others: a). */
static ac_status index_map_rows(dist_plan *p, ir_ref e, ir_ref c, pval **out, bool *fallback,
                                ac_error **err) {
  (void)c;
  ac_module *m = p->m;
  ir_op op = (ir_op)ir_node_get(m, e)->op;
  pval *av = p->env[p->nenv - 1];
  const int64_t *aoff = NULL;
  *fallback = true;
  if (!all_dist(av, &aoff, p) || av->n > 64)
    return AC_OK;
  const ac_dist_array *a0 = av->l[0].d->a;
  unsigned r = a0->rank, q = r;
  int64_t ext[64], size = 1;
  for (unsigned d = 0; d < r; d++)
    size *= a0->extents[d];
  memcpy(ext, a0->extents, r * sizeof *ext);
  if (op == IR_REVERSE && r != 1)
    return AC_OK;
  if (op == IR_TRANSPOSE) {
    if (r != 2)
      return AC_OK;
    ext[0] = a0->extents[1];
    ext[1] = a0->extents[0];
  }
  if (op == IR_RESHAPE) {
    pval *sv = p->env[p->nenv - 2];
    if (sv->n == 0 || sv->n > 64)
      return AC_OK;
    q = sv->n;
    int64_t prod = 1;
    bool bad = false;
    for (unsigned d = 0; !bad && d < q; d++) {
      bad = sv->l[d].kind != LV_SCALAR || !datum_index(&sv->l[d].s, &ext[d]) || ext[d] < 0;
      prod = bad ? -1 : ext[d] && prod > INT64_MAX / ext[d] ? -1 : prod * ext[d];
    }
    if (any_rank(p, bad || prod != size))
      return AC_OK; /* a negative extent or another size: the full form says so */
  }
  *fallback = false;
  int64_t *off = rule_partition(p, ext[0]);
  int me = p->rt->rank;
  int64_t inner = inner_elems(ext, q);
  int64_t lo = off ? off[me] : 0, cnt = off ? (off[me + 1] - lo) * inner : 0;
  int64_t *lin = malloc((size_t)(cnt > 0 ? cnt : 1) * sizeof *lin);
  for (int64_t k = 0; lin && k < cnt; k++) {
    int64_t g = lo * inner + k; /* the result's linear index */
    if (op == IR_REVERSE)
      lin[k] = ext[0] - 1 - g;
    else if (op == IR_TRANSPOSE) /* out (j, i) is a (i, j): a has ext[1] rows of ext[0] */
      lin[k] = (g % ext[1]) * ext[0] + g / ext[1];
    else
      lin[k] = g;
  }
  ac_status st = dist_agree(
      p->rt, off && lin ? AC_OK : dist_fail(p->rt, err, AC_ERR_NOMEM, "out of memory"), err);
  if (st == AC_OK)
    st = fetched_value(p, av, ir_node_get(m, e)->type, q, ext, off, lin, cnt, out, err);
  free(lin);
  free(off);
  if (st == AC_OK)
    trace(p, e, "each rank's rows fetched from the owners of their elements");
  return st;
}

/* filter(f, a) of a distributed rank-1 a: each rank filters its block;
 * the result's partition is the running sum of the ranks' counts (one
 * allgather of a count); no element is sent. a is a temporary (c is e
 * with it). */
static ac_status filter_rows(dist_plan *p, ir_ref e, ir_ref c, pval **out, bool *fallback,
                             ac_error **err) {
  ac_dist_runtime *rt = p->rt;
  size_t base = p->nenv - 1;
  pval *av = p->env[base];
  const int64_t *aoff = NULL;
  *fallback = true;
  if (!all_dist(av, &aoff, p) || av->l[0].d->a->rank != 1)
    return AC_OK;
  *fallback = false;
  pval *la = blocks_value(av), *res = NULL;
  ac_status st = run_locals(p, 1, &la, 1, e, V_FILTER, c, &res, err);
  if (st != AC_OK)
    return st;
  ac_datum mine = {AC_DATUM_SCALAR, AC_I64, {.i = ac_array_size(res->l[0].arr)}, NULL}, *all = NULL;
  st = allgather_scalars(p, &mine, 1, &all, err);
  int64_t *off = st == AC_OK ? malloc(((size_t)rt->size + 1) * sizeof *off) : NULL;
  if (off) {
    off[0] = 0;
    for (int r = 0; r < rt->size; r++)
      off[r + 1] = off[r] + all[r].s.i;
  }
  free(all);
  if (st == AC_OK)
    st = local_to_dist(p, res, off ? off[rt->size] : 0, off, out, err);
  else
    pval_release(res);
  free(off);
  if (st != AC_OK)
    return st;
  trace(p, e, "local filters, partitioned by the counts");
  return AC_OK;
}

/* a[i1, .., ir] of a distributed a: the element fetched from its owner by
 * every rank. The operands are temporaries (a, then the indices). */
static ac_status index_rows(dist_plan *p, ir_ref e, ir_ref c, pval **out, bool *fallback,
                            ac_error **err) {
  (void)c;
  uint32_t nk = ir_node_get(p->m, e)->nkids;
  pval *av = p->env[p->nenv - nk];
  const int64_t *aoff = NULL;
  *fallback = true;
  if (!all_dist(av, &aoff, p))
    return AC_OK;
  const ac_dist_array *a0 = av->l[0].d->a;
  if (a0->rank != nk - 1)
    return AC_OK;
  int64_t lin = 0;
  bool bad = false;
  for (uint32_t d = 0; !bad && d + 1 < nk; d++) {
    pval *iv = p->env[p->nenv - nk + 1 + d];
    int64_t x;
    bad = iv->n != 1 || iv->l[0].kind != LV_SCALAR || !datum_index(&iv->l[0].s, &x) || x < 0 ||
          x >= a0->extents[d];
    lin = bad ? 0 : lin * a0->extents[d] + x;
  }
  /* out of range (on any rank: the scalars of a call should agree, the
   * errors must): the full form says how */
  if (any_rank(p, bad))
    return AC_OK;
  *fallback = false;
  pval *v = pval_new(ir_node_get(p->m, e)->type, av->n);
  ac_status st =
      dist_agree(p->rt, v ? AC_OK : dist_fail(p->rt, err, AC_ERR_NOMEM, "out of memory"), err);
  for (uint32_t j = 0; st == AC_OK && j < av->n; j++) {
    ac_array *got = NULL;
    st = dist_fetch_elems(p->rt, av->l[j].d->a, &lin, 1, &got, err);
    const void *x = st == AC_OK ? ac_array_data(got) : NULL;
    if (st == AC_OK && x)
      v->l[j] = (leaf){LV_SCALAR, rt_scalar_read(ac_array_type(got), x), NULL, NULL};
    else if (st == AC_OK)
      st = rt_resid_host(got, err); /* a device element that could not be fetched */
    ac_array_release(got);
    st = dist_agree(p->rt, st, err);
  }
  if (st != AC_OK) {
    pval_release(v);
    return st;
  }
  *out = v;
  trace(p, e, "the element fetched from its owner");
  return AC_OK;
}

/* ---- slices ---- */

static int64_t ceil_div(int64_t a, int64_t b) {
  return a <= 0 ? 0 : (a + b - 1) / b;
}

/* slice(a, start, stop[, stride]) of a distributed a: each rank keeps the
 * selected rows of its block (the result's partition follows from a's),
 * inner dimensions sliced as written; nothing is sent. Bounds that are
 * out of range: the full form reports them. */
static ac_status eval_slice(dist_plan *p, ir_ref e, pval **out, ac_error **err) {
  ac_module *m = p->m;
  ac_dist_runtime *rt = p->rt;
  uint32_t nk = ir_node_get(m, e)->nkids;
  size_t base = p->nenv;
  ir_ref c;
  uint64_t all = (UINT64_C(1) << nk) - 1;
  ac_status st = hoist_operands(p, e, all, &c, err);
  st = dist_agree(rt, st, err);
  if (st != AC_OK) {
    env_pop(p, base);
    return st;
  }
  pval *av = p->env[base];
  pval *bv[3] = {p->env[base + 1], p->env[base + 2], nk > 3 ? p->env[base + 3] : NULL};
  bool dist = av->n > 0;
  for (uint32_t j = 0; j < av->n; j++)
    dist &= av->l[j].kind == LV_DIST;
  const ac_dist_array *a0 = dist ? av->l[0].d->a : NULL;
  /* the bounds of every dimension, checked as the language does */
  int64_t lo3[3][64];
  uint32_t r = a0 ? a0->rank : 0;
  bool ok = dist && r <= 64;
  for (int k = 0; ok && k < 3; k++) {
    for (uint32_t d = 0; ok && d < r; d++) {
      if (!bv[k]) {
        lo3[k][d] = 1;
        continue;
      }
      ok =
          bv[k]->n == r && bv[k]->l[d].kind == LV_SCALAR && datum_index(&bv[k]->l[d].s, &lo3[k][d]);
    }
  }
  for (uint32_t d = 0; ok && d < r; d++)
    ok = 0 <= lo3[0][d] && lo3[0][d] <= lo3[1][d] && lo3[1][d] <= a0->extents[d] && lo3[2][d] >= 1;
  if (any_rank(p, !ok)) {
    st = eval_stage(p, c, out, err);
    env_pop(p, base);
    return st;
  }
  int R = rt->size, me = rt->rank;
  int64_t s0 = lo3[0][0], e0 = lo3[1][0], st0 = lo3[2][0];
  int64_t total = ceil_div(e0 - s0, st0);
  int64_t *off = malloc(((size_t)R + 1) * sizeof *off);
  for (int q = 0; off && q <= R; q++) {
    int64_t k = ceil_div(a0->offsets[q] - s0, st0);
    off[q] = k < total ? k : total;
  }
  /* this rank's rows of the block, as a local slice */
  int64_t lo = a0->offsets[me];
  int64_t first = off ? s0 + off[me] * st0 - lo : 0, cnt = off ? off[me + 1] - off[me] : 0;
  int64_t lstart = cnt > 0 ? first : 0, lstop = cnt > 0 ? first + (cnt - 1) * st0 + 1 : 0;
  pval *la = blocks_value(av);
  pval *lb[3] = {NULL, NULL, NULL};
  for (int k = 0; k < 3; k++) {
    if (!bv[k])
      continue;
    lb[k] = pval_new(bv[k]->type, bv[k]->n);
    for (uint32_t d = 0; lb[k] && d < r; d++) {
      lb[k]->l[d] = bv[k]->l[d];
      if (d == 0)
        lb[k]->l[0].s.s.i = k == 0 ? lstart : k == 1 ? lstop : st0;
    }
  }
  /* the slice of the local temporaries, in place of the operands */
  pval *locals[4] = {la, lb[0], lb[1], lb[2]};
  pval *v = NULL;
  st = off ? run_locals(p, nk, locals, nk, e, V_SLICE, c, &v, err)
           : dist_fail(rt, err, AC_ERR_NOMEM, "out of memory");
  env_pop(p, base);
  if (st == AC_OK)
    st = local_to_dist(p, v, total, off, out, err);
  free(off);
  if (st != AC_OK)
    return st;
  trace(p, e, "each rank keeps its rows");
  return AC_OK;
}

/* A step's distributed form: e over its operands c, the temporaries on
 * top of the environment; *fallback when it does not apply (then e runs on
 * full data). */
typedef ac_status (*dist_form)(dist_plan *p, ir_ref e, ir_ref c, pval **out, bool *fallback,
                               ac_error **err);

static ac_status fold_form(dist_plan *p, ir_ref e, ir_ref c, pval **out, bool *fallback,
                           ac_error **err) {
  (void)e;
  return eval_fold(p, c, out, fallback, err);
}

static ac_status scan_form(dist_plan *p, ir_ref e, ir_ref c, pval **out, bool *fallback,
                           ac_error **err) {
  (void)e;
  return eval_scan(p, c, out, fallback, err);
}

/* e with its operands in `hoist` evaluated first (temporaries), then in
 * its distributed form (NULL: none), else on full data over them. */
static ac_status with_operands(dist_plan *p, ir_ref e, uint64_t hoist, dist_form form, pval **out,
                               ac_error **err) {
  size_t base = p->nenv;
  ir_ref c = IR_NONE;
  ac_status st = dist_agree(p->rt, hoist_operands(p, e, hoist, &c, err), err);
  bool fallback = true;
  if (st == AC_OK && form)
    st = form(p, e, c, out, &fallback, err);
  if (st == AC_OK && fallback)
    st = eval_stage(p, c, out, err);
  env_pop(p, base);
  return st;
}

/* ---- recurrences: wavefronts pipelined across ranks ---- */

static ac_status eval_scalar_int(dist_plan *p, ir_ref e, int64_t *out, ac_error **err);

/* Whether index expression e is i + c, i the variable of de Bruijn index
 * iv and c an i64 literal, through + and - (c in *off). */
static bool uniform_index(const ac_module *m, ir_ref e, uint32_t iv, ir_type i64, int64_t *off) {
  const ir_node *n = ir_node_get(m, e);
  if (n->op == IR_VAR) {
    *off = 0;
    return (uint32_t)n->attr == iv;
  }
  if ((n->op != IR_ADD && n->op != IR_SUB) || n->nkids != 2 || n->type != i64)
    return false;
  const int64_t lim = INT64_C(1) << 40;
  ir_ref a = ir_kid(m, e, 0), b = ir_kid(m, e, 1);
  const ir_node *an = ir_node_get(m, a), *bn = ir_node_get(m, b);
  int64_t c;
  if (bn->op == IR_LIT && bn->type == i64 && bn->lit.i > -lim && bn->lit.i < lim &&
      uniform_index(m, a, iv, i64, &c)) {
    *off = n->op == IR_ADD ? c + bn->lit.i : c - bn->lit.i;
    return *off > -lim && *off < lim;
  }
  if (n->op == IR_ADD && an->op == IR_LIT && an->type == i64 && an->lit.i > -lim &&
      an->lit.i < lim && uniform_index(m, b, iv, i64, &c)) {
    *off = c + an->lit.i;
    return *off > -lim && *off < lim;
  }
  return false;
}

/* How far the reads of a recurrence of rank n reach in its first two
 * dimensions (reach[0] rows, reach[1] columns), and in which direction
 * (neg[k]: some read is at i_k - c, pos[k]: at i_k + c, c > 0); ok is
 * cleared by a use of the array that is not such a read. */
typedef struct rec_reach {
  uint32_t n;
  ir_type i64;
  int64_t reach[2];
  bool neg[2], pos[2];
  bool ok;
} rec_reach;

static void reach_walk(const ac_module *m, ir_ref e, uint32_t depth, rec_reach *r) {
  const ir_node *nd = ir_node_get(m, e);
  uint32_t self = depth + r->n;
  if (!r->ok)
    return;
  if (nd->op == IR_VAR) {
    if ((uint32_t)nd->attr == self)
      r->ok = false; /* the array used other than by a read */
    return;
  }
  if (nd->op == IR_INDEX && nd->nkids == r->n + 1) {
    const ir_node *a = ir_node_get(m, ir_kid(m, e, 0));
    if (a->op == IR_VAR && (uint32_t)a->attr == self) {
      /* i_1 is index n - 1 of the body's binders, i_2 is n - 2 */
      for (uint32_t k = 0; k < 2; k++) {
        int64_t o;
        if (!uniform_index(m, ir_kid(m, e, k + 1), self - 1 - k, r->i64, &o)) {
          r->ok = false;
          return;
        }
        r->neg[k] |= o < 0;
        r->pos[k] |= o > 0;
        o = o < 0 ? -o : o;
        r->reach[k] = o > r->reach[k] ? o : r->reach[k];
      }
      for (uint32_t k = 3; k <= r->n; k++)
        reach_walk(m, ir_kid(m, e, k), depth, r);
      return;
    }
  }
  for (uint32_t i = 0; i < nd->nkids; i++)
    reach_walk(m, ir_kid(m, e, i), depth + ir_binders(m, e, i), r);
}

/* The leaves' scalar types of a recurrence's element type et (a scalar
 * or a tuple of scalars); 0 when it is neither. */
static uint32_t rec_leaves(const ac_context *ctx, ir_type et, ac_scalar *sc) {
  if (ir_ty_has_prob(ctx, et))
    return 0;
  if (ir_ty_is_scalar(ctx, et, &sc[0]))
    return 1;
  ir_typeinfo ti = ir_ty_info(ctx, et);
  if (ti.kind != TK_TUPLE || ti.n < 2 || ti.n > 16)
    return 0;
  for (uint32_t i = 0; i < ti.n; i++)
    if (!ir_ty_is_scalar(ctx, ti.fields[i], &sc[i]))
      return 0;
  return ti.n;
}

/* Whether recurrence e has the pipelined form: rank 2 to 8, an element of
 * scalars, and every read of itself d[i_1 + a, i_2 + b, ...] with
 * constants a and b, all a of one sign and all b of one sign. reach[k]:
 * the largest |a| and |b|; back[k]: they are positive (the reads look
 * towards higher indices, so the rows or columns are computed from the
 * last). */
static bool rec_pipelines(const ac_module *m, ir_ref e, int64_t *reach, bool *back) {
  const ir_node *n = ir_node_get(m, e);
  uint32_t rk = (uint32_t)n->attr;
  if (n->op != IR_REC || rk < 2 || rk > 8 || n->nkids != 2 * rk + 1)
    return false;
  ir_ref body = ir_kid(m, e, 2 * rk);
  ac_scalar sc[16];
  if (!rec_leaves(m->ctx, ir_node_get(m, body)->type, sc))
    return false;
  rec_reach r = {rk, ir_ty_scalar(m->ctx, AC_I64), {0, 0}, {false, false}, {false, false}, true};
  reach_walk(m, body, 0, &r);
  for (uint32_t k = 0; k < 2; k++) {
    reach[k] = r.reach[k];
    back[k] = r.pos[k];
  }
  return r.ok && !(r.neg[0] && r.pos[0]) && !(r.neg[1] && r.pos[1]);
}

/* The temporaries of a tile, pushed in this order (logical indices):
 *   L_1..L_n, H_1..H_n  the tile's table [L_k, H_k), its halos included;
 *   G1, G2              the tile's own rows and columns: i_1 >= G1 and
 *                       i_2 >= G2 (or, computed backwards, <=);
 *   P1, P2, Q1, Q2      the first row and column of the halo above (rows
 *                       of other ranks, every column of the table) and of
 *                       the halo beside (this rank's rows, the columns of
 *                       earlier tiles);
 * then the halo above, leaf by leaf, and the halo beside, leaf by leaf. */
enum { REC_G = 0, REC_P = 2, REC_Q = 4, REC_HALO = 6 };

static uint32_t rec_ntemps(uint32_t rk, uint32_t nl) {
  return 2 * rk + REC_HALO + 2 * nl;
}

/* Temporary t (of nt) at `depth` binders below the tile's recurrence. */
static ir_ref rec_temp(ac_module *m, ir_loc loc, ir_type ty, uint32_t nt, uint32_t t,
                       uint32_t depth) {
  return mkvar(m, loc, ty, depth + nt - 1 - t);
}

/* The tile's recurrence: e over [L, H) whose body is
 *   if i_1 < G1 { above[i_1 - P1, i_2 - P2, i_3 - L_3, ..] }
 *   else if i_2 < G2 { beside[i_1 - Q1, i_2 - Q2, ..] } else { body }
 * (G1 < i_1, G2 < i_2 in a dimension computed backwards), so that the
 * body sees its logical indices, and its reads of rows and columns that
 * are not the tile's find them in the halos. */
static ir_ref rec_tile_expr(dist_plan *p, ir_ref e, uint32_t nl, const ac_scalar *sc,
                            const bool *back) {
  ac_module *m = p->m;
  ir_node n = *ir_node_get(m, e);
  uint32_t rk = (uint32_t)n.attr, nt = rec_ntemps(rk, nl), in = rk + 1, t0 = 2 * rk;
  ir_type i64 = ir_ty_scalar(p->ctx, AC_I64), bt = ir_ty_scalar(p->ctx, AC_BOOL);
  ir_ref body = ir_kid(m, e, 2 * rk);
  ir_type et = ir_node_get(m, body)->type;
  ir_ref kids[17], halo[2], c[2];
  for (uint32_t k = 0; k < rk; k++) {
    kids[2 * k] = rec_temp(m, n.loc, i64, nt, k, 0);
    kids[2 * k + 1] = rec_temp(m, n.loc, i64, nt, rk + k, 0);
  }
  for (uint32_t side = 0; side < 2; side++) {
    ir_ref reads[16];
    for (uint32_t l = 0; l < nl; l++) {
      ir_type lt = ir_ty_scalar(p->ctx, sc[l]);
      ir_ref ik[9];
      ik[0] =
          rec_temp(m, n.loc, ir_ty_array(p->ctx, lt, rk), nt, t0 + REC_HALO + side * nl + l, in);
      for (uint32_t k = 0; k < rk; k++) {
        uint32_t base = k < 2 ? t0 + (side ? REC_Q : REC_P) + k : k;
        ir_ref sk[2] = {mkvar(m, n.loc, i64, rk - 1 - k), rec_temp(m, n.loc, i64, nt, base, in)};
        ik[k + 1] = mk(m, IR_SUB, n.loc, i64, 0, 2, sk);
      }
      reads[l] = mk(m, IR_INDEX, n.loc, lt, 0, rk + 1, ik);
    }
    halo[side] = nl == 1 ? reads[0] : mk(m, IR_TUPLE, n.loc, et, 0, nl, reads);
  }
  for (uint32_t k = 0; k < 2; k++) {
    ir_ref i = mkvar(m, n.loc, i64, rk - 1 - k),
           g = rec_temp(m, n.loc, i64, nt, t0 + REC_G + k, in);
    ir_ref lk[2] = {back[k] ? g : i, back[k] ? i : g};
    c[k] = mk(m, IR_LT, n.loc, bt, 0, 2, lk);
  }
  ir_ref beside_kids[3] = {c[1], halo[1], ir_copy_shift(m, body, (int32_t)nt, in)};
  ir_ref above_kids[3] = {c[0], halo[0], mk(m, IR_IF, n.loc, et, 0, 3, beside_kids)};
  kids[2 * rk] = mk(m, IR_IF, n.loc, et, 0, 3, above_kids);
  if (m->oom)
    return IR_NONE;
  ir_ref r = ir_node_new(m, IR_REC, n.loc, 2 * rk + 1, kids);
  if (r) {
    ir_node *cn = ir_node_get(m, r);
    uint32_t k = cn->kids;
    *cn = n;
    cn->kids = k;
    cn->lit.u = (UINT64_C(1) << rk) - 1; /* every dimension lo..hi */
  }
  return r;
}

/* The tiles of the pipeline (columns of the table's second dimension):
 * ARRAYC_DIST_REC_TILES when set, else 4 per rank (on one rank too: a
 * tile's table is then a quarter of the whole, which the cache likes:
 * edit distance of 8192 x 9216 took 1.19 s in one tile, 0.45 s in 4). */
static int64_t rec_tiles(const dist_plan *p, int64_t cols) {
  int64_t k = 4 * (int64_t)p->rt->size;
  const char *env = getenv("ARRAYC_DIST_REC_TILES");
  if (env && *env) {
    char *end;
    long long v = strtoll(env, &end, 10);
    if (*end == '\0' && v > 0)
      k = v;
  }
  if (k > 32767) /* a tile is a message tag */
    k = 32767;
  return k < cols ? k : cols;
}

/* What a rank sends to or receives from another: rows [lo, hi). */
typedef struct rec_peer {
  int q;
  int64_t lo, hi;
  char *buf;
} rec_peer;

/* The state of a pipelined recurrence on this rank. */
typedef struct rec_run {
  uint32_t rk, nl;
  ac_scalar sc[16];
  size_t esz[16], cell;  /* bytes of a leaf's element; of all leaves' */
  int64_t lo[8], ext[8]; /* the table: logical first index and extent */
  int64_t rest;          /* elements of a cell below the first two dimensions */
  int64_t h, w;          /* the reads' reach: rows, columns */
  bool back[2];          /* rows, columns computed from the last (rec_pipelines) */
  int64_t r0, r1, heff;  /* this rank's rows; the halo rows next to them */
  int64_t hfirst;        /* the first halo row */
  int64_t *off;          /* the rule's partition of the rows */
  ac_array *blk[16];     /* this rank's rows of each leaf */
  char *bdata[16];
  char *top[16];  /* the halo rows, all columns, per leaf */
  pval **tmp;     /* the temporaries (owned by the environment) */
  rec_peer *send; /* ranks that read rows of this one */
  rec_peer *recv; /* ranks whose rows this one reads */
  int nsend, nrecv;
  char *rbuf;       /* one tile of the largest receive */
  MPI_Request *req; /* the sends of every tile */
} rec_run;

static void rec_run_free(rec_run *r) {
  for (uint32_t l = 0; l < r->nl; l++) {
    ac_array_release(r->blk[l]);
    free(r->top[l]);
  }
  for (int j = 0; j < r->nsend; j++)
    free(r->send[j].buf);
  free(r->send);
  free(r->recv);
  free(r->rbuf);
  free(r->req);
  free(r->off);
}

/* Offset in elements of (row, col) of a buffer of rows of `cols` columns
 * with `rest` elements per cell. */
static size_t cell_at(int64_t row, int64_t col, int64_t cols, int64_t rest) {
  return ((size_t)row * (size_t)cols + (size_t)col) * (size_t)rest;
}

/* Copies rows [0, rows) of columns [c0, c0 + width) of src (rows of
 * scols columns) to dst (rows of dcols columns, from column dc0). */
static void copy_cols(char *dst, int64_t dcols, int64_t dc0, const char *src, int64_t scols,
                      int64_t c0, int64_t rows, int64_t width, int64_t rest, size_t esz) {
  size_t bytes = (size_t)width * (size_t)rest * esz;
  for (int64_t i = 0; bytes && i < rows; i++)
    memcpy(dst + cell_at(i, dc0, dcols, rest) * esz, src + cell_at(i, c0, scols, rest) * esz,
           bytes);
}

/* Bytes of rows [a, b) of `width` columns of every leaf. */
static size_t rec_bytes(const rec_run *r, int64_t a, int64_t b, int64_t width) {
  return (size_t)(b - a) * (size_t)width * (size_t)r->rest * r->cell;
}

/* The halo rows of a rank holding rows [lo, hi): how many (none for no
 * rows), the first in *first. */
static int64_t rec_halo(const rec_run *r, int64_t lo, int64_t hi, int64_t *first) {
  int64_t room = r->back[0] ? r->ext[0] - hi : lo, n = r->h < room ? r->h : room;
  if (hi <= lo)
    n = 0;
  *first = r->back[0] ? hi : lo - n;
  return n;
}

/* Sets up the pipeline: blocks, halo buffers, peers, message buffers.
 * Local (the caller agrees). */
static ac_status rec_setup(dist_plan *p, rec_run *r, int64_t tiles, ac_error **err) {
  ac_dist_runtime *rt = p->rt;
  int R = rt->size, me = rt->rank;
  r->off = rule_partition(p, r->ext[0]);
  if (!r->off)
    return dist_fail(rt, err, AC_ERR_NOMEM, "out of memory");
  r->r0 = r->off[me];
  r->r1 = r->off[me + 1];
  r->heff = rec_halo(r, r->r0, r->r1, &r->hfirst);
  int64_t cols = r->ext[1];
  for (uint32_t l = 0; l < r->nl; l++) {
    size_t row;
    void *data = NULL;
    if (!dist_row_bytes(r->sc[l], r->rk, r->ext, &row))
      return dist_fail(rt, err, AC_ERR_NOMEM, "out of memory");
    r->blk[l] = dist_new_block(rt, r->sc[l], r->rk, r->ext, r->r1 - r->r0, row, &data, err);
    r->bdata[l] = data;
    r->top[l] = calloc(r->heff ? (size_t)r->heff : 1, row ? row : 1);
    if (!r->blk[l] || !r->top[l])
      return r->blk[l] ? dist_fail(rt, err, AC_ERR_NOMEM, "out of memory") : AC_ERR_NOMEM;
  }
  r->send = calloc((size_t)R, sizeof *r->send);
  r->recv = calloc((size_t)R, sizeof *r->recv);
  if (!r->send || !r->recv)
    return dist_fail(rt, err, AC_ERR_NOMEM, "out of memory");
  /* every other rank whose halo holds rows of this one, and every rank
   * holding rows of this one's halo */
  for (int q = 0; q < R && r->r1 > r->r0; q++) {
    int64_t first, need = rec_halo(r, r->off[q], r->off[q + 1], &first);
    int64_t a = first > r->r0 ? first : r->r0;
    int64_t b = first + need < r->r1 ? first + need : r->r1;
    if (q == me || b <= a)
      continue;
    rec_peer *s = &r->send[r->nsend++];
    *s = (rec_peer){q, a, b, malloc(rec_bytes(r, a, b, cols) + 1)};
    if (!s->buf)
      return dist_fail(rt, err, AC_ERR_NOMEM, "out of memory");
  }
  size_t most = 0;
  int64_t wide = tiles ? (cols + tiles - 1) / tiles : 0;
  for (int q = 0; q < R && r->heff; q++) {
    int64_t a = r->off[q] > r->hfirst ? r->off[q] : r->hfirst;
    int64_t b = r->off[q + 1] < r->hfirst + r->heff ? r->off[q + 1] : r->hfirst + r->heff;
    if (q == me || b <= a)
      continue;
    r->recv[r->nrecv++] = (rec_peer){q, a, b, NULL};
    size_t bytes = rec_bytes(r, a, b, wide);
    most = bytes > most ? bytes : most;
  }
  r->rbuf = malloc(most + 1);
  r->req = calloc((size_t)tiles * (size_t)r->nsend + 1, sizeof *r->req);
  if (!r->rbuf || !r->req)
    return dist_fail(rt, err, AC_ERR_NOMEM, "out of memory");
  return AC_OK;
}

/* Computes tile [c0, c1) of this rank's rows with stage s (its halos in
 * place): local, may fail (the caller agrees at the end). */
static ac_status rec_tile(dist_plan *p, rec_run *r, const stage *s, int64_t c0, int64_t c1,
                          ac_error **err) {
  uint32_t rk = r->rk, nl = r->nl, t0 = 2 * rk;
  bool b0 = r->back[0], b1 = r->back[1];
  int64_t cols = r->ext[1], rows = r->r1 - r->r0, room = b1 ? cols - c1 : c0;
  int64_t weff = r->w < room ? r->w : room, wide = weff + (c1 - c0);
  /* the tile's table: its rows and the halo rows, its columns and the
   * columns beside (from earlier tiles), the rest whole */
  int64_t ylo = b0 ? r->r0 : r->hfirst, xlo = b1 ? c0 : c0 - weff, bx = b1 ? c1 : c0 - weff;
  int64_t val[2 * 8 + REC_HALO];
  for (uint32_t k = 0; k < rk; k++) {
    val[k] = r->lo[k];
    val[rk + k] = r->lo[k] + r->ext[k];
  }
  val[0] = r->lo[0] + ylo;
  val[rk] = r->lo[0] + ylo + rows + r->heff;
  val[1] = r->lo[1] + xlo;
  val[rk + 1] = r->lo[1] + xlo + wide;
  val[t0 + REC_G] = r->lo[0] + (b0 ? r->r1 - 1 : r->r0);
  val[t0 + REC_G + 1] = r->lo[1] + (b1 ? c1 - 1 : c0);
  val[t0 + REC_P] = r->lo[0] + r->hfirst;
  val[t0 + REC_P + 1] = r->lo[1] + xlo;
  val[t0 + REC_Q] = r->lo[0] + r->r0;
  val[t0 + REC_Q + 1] = r->lo[1] + bx;
  for (uint32_t t = 0; t < t0 + REC_HALO; t++)
    r->tmp[t]->l[0].s.s.i = val[t];
  ac_status st = AC_OK;
  for (uint32_t side = 0; side < 2 && st == AC_OK; side++) {
    for (uint32_t l = 0; l < nl && st == AC_OK; l++) {
      int64_t ex[8];
      memcpy(ex, r->ext, rk * sizeof *ex);
      ex[1] = side == 0 ? wide : weff;
      int64_t n0 = side == 0 ? r->heff : rows;
      size_t row;
      void *d = NULL;
      ac_array *a = dist_row_bytes(r->sc[l], rk, ex, &row)
                        ? dist_new_block(p->rt, r->sc[l], rk, ex, n0, row, &d, err)
                        : NULL;
      if (!a) {
        st = err && *err ? (*err)->status : AC_ERR_NOMEM;
        break;
      }
      if (side == 0)
        copy_cols(d, wide, 0, r->top[l], cols, xlo, n0, wide, r->rest, r->esz[l]);
      else
        copy_cols(d, weff, 0, r->bdata[l], cols, bx, n0, weff, r->rest, r->esz[l]);
      leaf *lf = &r->tmp[t0 + REC_HALO + side * nl + l]->l[0];
      ac_array_release(lf->arr);
      lf->arr = a;
    }
  }
  ac_datum res[16] = {0};
  if (st == AC_OK)
    st = call_stage(p, s, NULL, res, nl, err);
  if (st != AC_OK)
    return st;
  /* this rank's rows and the tile's columns of the result */
  int64_t y = b0 ? 0 : r->heff, x = b1 ? 0 : weff;
  for (uint32_t l = 0; l < nl && st == AC_OK; l++) {
    const char *rd = ac_array_data(res[l].array);
    if (!rd && ac_array_size(res[l].array) > 0)
      st = ac_array_read(res[l].array, NULL, 0, err);
    else if (rd)
      copy_cols(r->bdata[l], cols, c0, rd + cell_at(y, 0, wide, r->rest) * r->esz[l], wide, x, rows,
                c1 - c0, r->rest, r->esz[l]);
  }
  release_datums(res, nl);
  return st;
}

/* Packs rows [a, b) of columns [c0, c1) of every leaf's block, leaf by
 * leaf, at buf; or (unpack) puts such a message into the halo above. */
static void rec_pack(rec_run *r, char *buf, int64_t a, int64_t b, int64_t c0, int64_t c1,
                     bool unpack) {
  int64_t cols = r->ext[1], width = c1 - c0;
  for (uint32_t l = 0; l < r->nl; l++) {
    size_t esz = r->esz[l];
    if (unpack)
      copy_cols(r->top[l] + cell_at(a - r->hfirst, 0, cols, r->rest) * esz, cols, c0, buf, width, 0,
                b - a, width, r->rest, esz);
    else
      copy_cols(buf, width, 0, r->bdata[l] + cell_at(a - r->r0, 0, cols, r->rest) * esz, cols, c0,
                b - a, width, r->rest, esz);
    buf += (size_t)(b - a) * (size_t)width * (size_t)r->rest * esz;
  }
}

/* The tiles in order: receive the halo rows of the tile, compute it, send
 * its rows that other ranks read. Every rank goes through every tile and
 * message even after a failure of its own (computing nothing then), so
 * that no rank waits for ever; the failure is agreed at the end. */
static ac_status rec_pipeline(dist_plan *p, rec_run *r, const stage *s, int64_t tiles,
                              ac_error **err) {
  ac_dist_runtime *rt = p->rt;
  int64_t q = r->ext[1] / tiles, rem = r->ext[1] % tiles;
  int nreq = 0;
  ac_status st = AC_OK;
  for (int64_t t = 0; t < tiles; t++) {
    int64_t k = r->back[1] ? tiles - 1 - t : t; /* backwards from the last */
    int64_t c0 = k * q + (k < rem ? k : rem), c1 = c0 + q + (k < rem ? 1 : 0);
    for (int j = 0; j < r->nrecv; j++) {
      const rec_peer *pr = &r->recv[j];
      MPI_Recv(r->rbuf, (int)rec_bytes(r, pr->lo, pr->hi, c1 - c0), MPI_BYTE, pr->q, (int)k,
               rt->comm, MPI_STATUS_IGNORE);
      rec_pack(r, r->rbuf, pr->lo, pr->hi, c0, c1, true);
    }
    if (st == AC_OK && r->r1 > r->r0)
      st = rec_tile(p, r, s, c0, c1, err);
    for (int j = 0; j < r->nsend; j++) {
      const rec_peer *ps = &r->send[j];
      size_t bytes = rec_bytes(r, ps->lo, ps->hi, c1 - c0);
      char *b = ps->buf + rec_bytes(r, ps->lo, ps->hi, c0);
      rec_pack(r, b, ps->lo, ps->hi, c0, c1, false);
      MPI_Isend(b, (int)bytes, MPI_BYTE, ps->q, (int)k, rt->comm, &r->req[nreq++]);
      rt->bytes_sent += bytes;
    }
  }
  MPI_Waitall(nreq, r->req, MPI_STATUSES_IGNORE);
  return st;
}

/* A recurrence of rank >= 2 whose reads reach a constant distance in one
 * direction in each of its first two dimensions (rec_pipelines): each rank
 * computes its rows of the rule's partition, the columns in tiles; a tile
 * of a rank starts once the rows next to it that its reads reach (above,
 * or below when rows are computed from the last) have arrived from the
 * ranks holding them, and its own rows that other ranks read go on to
 * them, so ranks work on different tiles at once (a wavefront pipelined
 * across ranks). The arrays the body reads are
 * allgathered once. A failure on any rank: the full form reports it. */
static ac_status eval_rec(dist_plan *p, ir_ref e, pval **out, bool *fallback, ac_error **err) {
  ac_module *m = p->m;
  ac_dist_runtime *rt = p->rt;
  ir_node n = *ir_node_get(m, e);
  rec_run r = {0};
  *fallback = true;
  int64_t reach[2];
  if (!rec_pipelines(m, e, reach, r.back))
    return AC_OK;
  r.h = reach[0];
  r.w = reach[1];
  r.rk = (uint32_t)n.attr;
  r.nl = rec_leaves(p->ctx, ir_node_get(m, ir_kid(m, e, 2 * r.rk))->type, r.sc);
  /* the bounds, in the order the recurrence evaluates them */
  bool bad = false;
  for (uint32_t k = 0; k < r.rk; k++) {
    int64_t hi = 0;
    ac_status st = eval_scalar_int(p, ir_kid(m, e, 2 * k), &r.lo[k], err);
    if (st == AC_OK)
      st = eval_scalar_int(p, ir_kid(m, e, 2 * k + 1), &hi, err);
    if (st != AC_OK) {
      *fallback = false;
      return st;
    }
    int64_t incl = ((n.lit.u >> k) & 1) == 0;
    bad |= __builtin_sub_overflow(hi, r.lo[k], &r.ext[k]) ||
           __builtin_add_overflow(r.ext[k], incl, &r.ext[k]) || r.ext[k] < 0;
  }
  r.rest = 1;
  for (uint32_t k = 2; k < r.rk; k++)
    bad |= __builtin_mul_overflow(r.rest, r.ext[k], &r.rest);
  for (uint32_t l = 0; l < r.nl; l++) {
    r.esz[l] = ac_scalar_size(r.sc[l]);
    r.cell += r.esz[l];
  }
  int64_t tiles = 0, cells = 0;
  if (!bad && r.ext[0] > 0 && r.ext[1] > 0 && r.rest > 0)
    tiles = rec_tiles(p, r.ext[1]);
  /* one message (h rows of the widest tile) must fit an int */
  bad |= __builtin_mul_overflow(r.ext[0], r.ext[1], &cells) ||
         __builtin_mul_overflow(cells, r.rest, &cells) ||
         __builtin_mul_overflow(cells, (int64_t)r.cell, &cells) ||
         (tiles &&
          (double)r.h * (double)((r.ext[1] + tiles - 1) / tiles) * (double)r.rest * (double)r.cell >
              (double)INT_MAX);
  if (bad) /* a negative or huge extent: the full form reports it */
    return AC_OK;
  *fallback = false;
  ac_status st = rec_setup(p, &r, tiles, err);
  /* the temporaries of the tile (rec_ntemps) */
  size_t base = p->nenv;
  uint32_t nt = rec_ntemps(r.rk, r.nl);
  pval *tmp[2 * 8 + REC_HALO + 2 * 16];
  ir_type i64 = ir_ty_scalar(p->ctx, AC_I64);
  for (uint32_t t = 0; t < nt && st == AC_OK; t++) {
    ac_datum zero = {AC_DATUM_SCALAR, AC_I64, {.i = 0}, NULL};
    uint32_t halo = 2 * r.rk + REC_HALO, l = t >= halo ? (t - halo) % r.nl : 0;
    tmp[t] = t < halo ? scalar_value(i64, &zero, 1)
                      : pval_new(ir_ty_array(p->ctx, ir_ty_scalar(p->ctx, r.sc[l]), r.rk), 1);
    if (tmp[t] && t >= halo) { /* empty until a tile fills it */
      void *d;
      tmp[t]->l[0].kind = LV_LOCAL;
      tmp[t]->l[0].arr = dist_new_block(rt, r.sc[l], r.rk, r.ext, 0, 0, &d, err);
      if (!tmp[t]->l[0].arr) {
        pval_release(tmp[t]);
        tmp[t] = NULL;
      }
    }
    if (!tmp[t] || !env_push(p, tmp[t])) {
      pval_release(tmp[t]);
      st = dist_fail(rt, err, AC_ERR_NOMEM, "out of memory");
    }
  }
  r.tmp = tmp;
  stage *s = st == AC_OK ? find_stage(p, e, V_REC) : NULL;
  if (st == AC_OK && !s) {
    ir_ref x = rec_tile_expr(p, e, r.nl, r.sc, r.back);
    st = x ? make_stage(p, e, V_REC, x, -1, &s, err)
           : dist_fail(rt, err, AC_ERR_NOMEM, "out of memory");
  }
  st = dist_agree(rt, st, err);
  if (st == AC_OK) { /* what the tiles read from outside, allgathered now */
    sargs a;
    st = stage_args(p, s, NULL, &a, err);
    if (st == AC_OK)
      args_free(&a);
    st = dist_agree(rt, st, err);
  }
  if (st != AC_OK) {
    env_pop(p, base);
    rec_run_free(&r);
    return st;
  }
  ac_error *mine = NULL;
  st = tiles ? rec_pipeline(p, &r, s, tiles, &mine) : AC_OK;
  st = dist_agree(rt, st, &mine);
  env_pop(p, base);
  if (st != AC_OK) { /* e.g. a read out of range: the full form reports it */
    rec_run_free(&r);
    *fallback = !p->strict;
    if (p->strict)
      return ir_report(err, mine, st);
    ac_error_destroy(mine);
    return AC_OK;
  }
  pval *v = pval_new(n.type, r.nl);
  for (uint32_t l = 0; v && l < r.nl; l++) {
    v->l[l] = (leaf){LV_LOCAL, {0}, r.blk[l], NULL};
    r.blk[l] = NULL;
  }
  st = local_to_dist(p, v, r.ext[0], r.off, out, err);
  rec_run_free(&r);
  if (st == AC_OK) {
    char form[96];
    snprintf(form, sizeof form, "wavefronts pipelined across ranks (%lld column tiles)",
             (long long)tiles);
    trace(p, e, form);
  }
  return st;
}

/* ---- the evaluator ---- */

/* A value of type t with the leaves of v from leaf `first` on. */
static pval *sub_value(pval *v, ir_type t, uint32_t first, uint32_t n) {
  pval *w = pval_new(t, n);
  for (uint32_t j = 0; w && j < n; j++)
    leaf_copy(&w->l[j], &v->l[first + j]);
  return w;
}

/* The body of function fn over the values args[0..n) of its parameters
 * (borrowed), in an environment of its own. */
static ac_status eval_body(dist_plan *p, uint32_t fn, pval **args, uint32_t n, pval **out,
                           ac_error **err) {
  pval **saved = p->env;
  size_t nsaved = p->nenv, capsaved = p->capenv;
  p->env = NULL;
  p->nenv = p->capenv = 0;
  bool ok = true;
  for (uint32_t i = 0; ok && i < n; i++) {
    args[i]->refs++;
    ok = env_push(p, args[i]);
  }
  ac_status st = ok ? deval(p, p->m->funcs[fn].body, out, err)
                    : dist_agree(p->rt, dist_fail(p->rt, err, AC_ERR_NOMEM, "out of memory"), err);
  env_pop(p, 0);
  ac_free(p->ctx, p->env);
  p->env = saved;
  p->nenv = nsaved;
  p->capenv = capsaved;
  return st;
}

/* Runs f (a lambda of one parameter, or a function name) on x. */
static ac_status apply1(dist_plan *p, ir_ref f, pval *x, pval **out, ac_error **err) {
  ac_module *m = p->m;
  const ir_node *fn = ir_node_get(m, f);
  if (fn->op == IR_LAM) {
    size_t base = p->nenv;
    x->refs++;
    if (!env_push(p, x))
      return dist_fail(p->rt, err, AC_ERR_NOMEM, "out of memory");
    ac_status st = deval(p, ir_kid(m, f, 0), out, err);
    env_pop(p, base);
    return st;
  }
  return eval_body(p, (uint32_t)fn->attr, &x, 1, out, err);
}

/* A scalar value's bool, checked to be the same on every rank. */
static ac_status agreed_bool(dist_plan *p, pval *c, bool *out, ac_error **err) {
  int mine = c->n == 1 && c->l[0].kind == LV_SCALAR && c->l[0].s.s.b;
  int lo = mine, hi = mine;
  MPI_Allreduce(&mine, &lo, 1, MPI_INT, MPI_MIN, p->rt->comm);
  MPI_Allreduce(&mine, &hi, 1, MPI_INT, MPI_MAX, p->rt->comm);
  if (lo != hi)
    return dist_agree(p->rt,
                      dist_fail(p->rt, err, AC_ERR_INVALID,
                                "a condition differs between ranks: the scalars and "
                                "replicated arrays of a call must be the same on every rank"),
                      err);
  *out = mine != 0;
  return AC_OK;
}

static ac_status eval_scalar_int(dist_plan *p, ir_ref e, int64_t *out, ac_error **err) {
  pval *v = NULL;
  ac_status st = deval(p, e, &v, err);
  if (st != AC_OK)
    return st;
  ac_datum d = v->l[0].s;
  *out = d.type >= AC_U8 && d.type <= AC_U64 ? (int64_t)d.s.u : d.s.i;
  if (d.type == AC_U64 && d.s.u > INT64_MAX)
    *out = INT64_MAX;
  pval_release(v);
  /* every rank runs the same number of iterations */
  int64_t lo = *out, hi = *out;
  MPI_Allreduce(out, &lo, 1, MPI_INT64_T, MPI_MIN, p->rt->comm);
  MPI_Allreduce(out, &hi, 1, MPI_INT64_T, MPI_MAX, p->rt->comm);
  if (lo != hi)
    return dist_agree(p->rt,
                      dist_fail(p->rt, err, AC_ERR_INVALID,
                                "an iteration count differs between ranks (%lld, %lld): the "
                                "scalars of a call must be the same on every rank",
                                (long long)lo, (long long)hi),
                      err);
  return AC_OK;
}

static ac_status deval(dist_plan *p, ir_ref e, pval **out, ac_error **err) {
  ac_module *m = p->m;
  ir_node n = *ir_node_get(m, e);
  ac_status st = AC_OK;
  *out = NULL;
  switch ((ir_op)n.op) {
  case IR_VAR: {
    pval *v = env_get(p, (uint32_t)n.attr);
    v->refs++;
    *out = v;
    return AC_OK;
  }
  case IR_LET: {
    pval *v = NULL;
    st = deval(p, ir_kid(m, e, 0), &v, err);
    if (st != AC_OK)
      return st;
    size_t base = p->nenv;
    if (!env_push(p, v))
      return dist_agree(p->rt, dist_fail(p->rt, err, AC_ERR_NOMEM, "out of memory"), err);
    st = deval(p, ir_kid(m, e, 1), out, err);
    env_pop(p, base);
    return st;
  }
  case IR_LETTUP: {
    pval *v = NULL;
    st = deval(p, ir_kid(m, e, 0), &v, err);
    if (st != AC_OK)
      return st;
    size_t base = p->nenv;
    ir_typeinfo ti = ir_ty_info(p->ctx, v->type);
    uint32_t at = 0;
    bool ok = ti.kind == TK_TUPLE && ti.n == (uint32_t)n.attr;
    for (uint32_t f = 0; ok && f < ti.n; f++) {
      uint32_t nl = num_leaves(p, ti.fields[f]);
      ok = env_push(p, sub_value(v, ti.fields[f], at, nl));
      at += nl;
    }
    pval_release(v);
    if (!ok) {
      env_pop(p, base);
      return dist_agree(p->rt, dist_fail(p->rt, err, AC_ERR_NOMEM, "out of memory"), err);
    }
    st = deval(p, ir_kid(m, e, 1), out, err);
    env_pop(p, base);
    return st;
  }
  case IR_TUPLE: {
    pval **parts = calloc(n.nkids + 1, sizeof *parts);
    uint32_t total = 0;
    if (!parts)
      return dist_agree(p->rt, dist_fail(p->rt, err, AC_ERR_NOMEM, "out of memory"), err);
    for (uint32_t i = 0; st == AC_OK && i < n.nkids; i++) {
      st = deval(p, ir_kid(m, e, i), &parts[i], err);
      if (st == AC_OK)
        total += parts[i]->n;
    }
    pval *v = st == AC_OK ? pval_new(n.type, total) : NULL;
    uint32_t at = 0;
    for (uint32_t i = 0; v && i < n.nkids; i++)
      for (uint32_t j = 0; j < parts[i]->n; j++)
        leaf_copy(&v->l[at++], &parts[i]->l[j]);
    for (uint32_t i = 0; i < n.nkids; i++)
      pval_release(parts[i]);
    free(parts);
    if (st != AC_OK)
      return st;
    if (!v)
      return dist_agree(p->rt, dist_fail(p->rt, err, AC_ERR_NOMEM, "out of memory"), err);
    *out = v;
    return AC_OK;
  }
  case IR_PROJ: {
    pval *v = NULL;
    st = deval(p, ir_kid(m, e, 0), &v, err);
    if (st != AC_OK)
      return st;
    ir_typeinfo ti = ir_ty_info(p->ctx, v->type);
    uint32_t at = 0;
    for (uint32_t f = 0; f < (uint32_t)n.attr; f++)
      at += num_leaves(p, ti.fields[f]);
    *out = sub_value(v, n.type, at, num_leaves(p, n.type));
    pval_release(v);
    return dist_agree(p->rt, *out ? AC_OK : dist_fail(p->rt, err, AC_ERR_NOMEM, "out of memory"),
                      err);
  }
  case IR_IF: {
    pval *c = NULL;
    st = deval(p, ir_kid(m, e, 0), &c, err);
    if (st != AC_OK)
      return st;
    bool b = false;
    st = agreed_bool(p, c, &b, err);
    pval_release(c);
    if (st != AC_OK)
      return st;
    return deval(p, ir_kid(m, e, b ? 1 : 2), out, err);
  }
  case IR_CALL: {
    if (n.attr < 0 || (uint64_t)n.attr >= m->nfuncs || m->funcs[n.attr].is_extern ||
        !m->funcs[n.attr].body)
      break;
    /* the callee's body over the values of the arguments */
    pval **argv = calloc(n.nkids + 1, sizeof *argv);
    if (!argv)
      return dist_agree(p->rt, dist_fail(p->rt, err, AC_ERR_NOMEM, "out of memory"), err);
    for (uint32_t i = 0; st == AC_OK && i < n.nkids; i++)
      st = deval(p, ir_kid(m, e, i), &argv[i], err);
    if (st == AC_OK)
      st = eval_body(p, (uint32_t)n.attr, argv, n.nkids, out, err);
    for (uint32_t i = 0; i < n.nkids; i++)
      pval_release(argv[i]);
    free(argv);
    return st;
  }
  case IR_ITERATE:
  case IR_WHILE: {
    /* every rank runs the loop: iterate's count and while's condition are
     * agreed between ranks */
    bool iter = n.op == IR_ITERATE;
    int64_t count = 0;
    if (iter)
      st = eval_scalar_int(p, ir_kid(m, e, 0), &count, err);
    pval *x = NULL;
    if (st == AC_OK)
      st = deval(p, ir_kid(m, e, 2), &x, err);
    for (int64_t k = 0; st == AC_OK && (!iter || k < count); k++) {
      if (!iter) {
        pval *c = NULL;
        bool go = false;
        st = apply1(p, ir_kid(m, e, 0), x, &c, err);
        if (st == AC_OK) {
          st = agreed_bool(p, c, &go, err);
          pval_release(c);
        }
        if (st != AC_OK || !go)
          break;
      }
      pval *y = NULL;
      st = apply1(p, ir_kid(m, e, 1), x, &y, err);
      pval_release(x);
      x = y;
    }
    if (st != AC_OK) {
      pval_release(x);
      return st;
    }
    *out = x;
    return AC_OK;
  }
  case IR_FOLD:
  case IR_SCAN:
  case IR_SCAN_INCL:
  case IR_SCANR:
  case IR_SCANR_INCL: {
    int k = operand_kid(m, e);
    if (kid_rank(m, e, (uint32_t)k) != 1)
      break; /* rows: row-local, below */
    bool fallback = true;
    if (operand_rowlocal(p, e)) {
      st = n.op == IR_FOLD ? eval_fold(p, e, out, &fallback, err)
                           : eval_scan(p, e, out, &fallback, err);
      if (st != AC_OK || !fallback)
        return st;
      break;
    }
    /* the operand first, then the fold or scan over it */
    return with_operands(p, e, (uint64_t)1 << k, n.op == IR_FOLD ? fold_form : scan_form, out, err);
  }
  case IR_MAP: {
    uint64_t h = nonlocal_operands(p, e, -1);
    if (!h || n.nkids > 64)
      break;
    /* operands that are not row-local are evaluated first */
    return with_operands(p, e, h, NULL, out, err);
  }
  case IR_LIT: {
    ac_scalar sc;
    if (!ir_ty_is_scalar(p->ctx, n.type, &sc) || ir_ty_has_prob(p->ctx, n.type))
      break;
    ac_datum d = {AC_DATUM_SCALAR, sc, {0}, NULL};
    if (sc == AC_F32 || sc == AC_F64)
      d.s.f = n.lit.f;
    else if (sc == AC_BOOL)
      d.s.b = n.lit.u != 0;
    else if (sc >= AC_U8 && sc <= AC_U64)
      d.s.u = sc == AC_U64 ? n.lit.u : n.lit.u & ((UINT64_C(1) << (8 * ac_scalar_size(sc))) - 1);
    else
      d.s.i = n.lit.i;
    *out = scalar_value(n.type, &d, 1);
    return dist_agree(p->rt, *out ? AC_OK : dist_fail(p->rt, err, AC_ERR_NOMEM, "out of memory"),
                      err);
  }
  case IR_REC:
  case IR_STENCIL:
  case IR_GENERATE:
  case IR_IOTA:
  case IR_FILL: {
    /* forms that may not apply (*fallback): then on full data, below */
    bool fallback = true;
    st = n.op == IR_REC       ? eval_rec(p, e, out, &fallback, err)
         : n.op == IR_STENCIL ? eval_stencil(p, e, out, &fallback, err)
                              : eval_producer(p, e, out, &fallback, err);
    if (st != AC_OK || !fallback)
      return st;
    break;
  }
  case IR_SCATTER:
    return with_operands(p, e, 0x7, scatter_rows, out, err);
  case IR_FOLD_SEG:
    return with_operands(p, e, 0xc, fold_seg_rows, out, err);
  case IR_SCAN_SEG:
    return with_operands(p, e, 0xc, scan_seg_rows, out, err);
  case IR_SCAN_INCL_SEG:
    return with_operands(p, e, 0x6, scan_seg_rows, out, err);
  case IR_REVERSE:
  case IR_TRANSPOSE:
    if (rowlocal(m, e, 0))
      break; /* rows of rows: row by row */
    return with_operands(p, e, 1, index_map_rows, out, err);
  case IR_RESHAPE:
    return with_operands(p, e, 3, index_map_rows, out, err);
  case IR_FILTER:
    if (n.nkids != 2)
      break;
    return with_operands(p, e, 2, filter_rows, out, err);
  case IR_INDEX:
    if (n.nkids < 2 || n.nkids > 64 || type_has_array(p->ctx, n.type) ||
        !type_has_array(p->ctx, ir_node_get(m, ir_kid(m, e, 0))->type))
      break;
    return with_operands(p, e, (UINT64_C(1) << n.nkids) - 1, index_rows, out, err);
  case IR_PERMUTE: {
    ir_op fop = (ir_op)ir_node_get(m, ir_kid(m, e, 2))->op;
    if (fop != IR_LAM && fop != IR_FNREF)
      break;
    return with_operands(p, e, 0xa, permute_rows, out, err);
  }
  case IR_SLICE:
    if (n.nkids < 3 || n.nkids > 4)
      break;
    return eval_slice(p, e, out, err);
  case IR_BACKPERMUTE:
    if (ir_node_get(m, ir_kid(m, e, 1))->op != IR_LAM &&
        ir_node_get(m, ir_kid(m, e, 1))->op != IR_FNREF)
      break;
    return eval_backpermute(p, e, out, err);
  case IR_GATHER:
    return with_operands(p, e, 3, gather_rows, out, err);
  default: {
    /* kids that read arrays through steps of their own (a fold in a
     * comparison, ...) are evaluated first; the operation itself then runs
     * on their values (`&&` and `||` evaluate their right operand only
     * when needed: not these) */
    if (ir_ops[n.op].typing == TC_LOGIC || n.nkids > 64)
      break;
    uint64_t h = 0;
    for (uint32_t i = 0; i < n.nkids; i++) {
      ir_ref k = ir_kid(m, e, i);
      ir_op kop = (ir_op)ir_node_get(m, k)->op;
      if (ir_binders(m, e, i) > 0 || kop == IR_LAM || kop == IR_FNREF || kop == IR_VAR ||
          kop == IR_LIT || kop == IR_LEN || kop == IR_SHAPE || !reads_arrays(p, k, 0))
        continue;
      h |= (uint64_t)1 << i;
    }
    if (!h)
      break;
    return with_operands(p, e, h, NULL, out, err);
  }
  }
  return eval_stage(p, e, out, err);
}

/* ---- the plan's life ---- */

dist_plan *dist_plan_create(ac_dist_runtime *rt, const ac_module *m, uint32_t fn) {
  dist_plan *p = calloc(1, sizeof *p);
  if (!p)
    return NULL;
  p->rt = rt;
  p->ctx = rt->ctx;
  p->fn = fn;
  const char *tr = getenv("ARRAYC_DIST_TRACE");
  p->trace = tr && *tr && strcmp(tr, "0") != 0;
  const char *strict = getenv("ARRAYC_DIST_STRICT");
  p->strict = strict && *strict && strcmp(strict, "0") != 0;
  p->m = ir_module_clone(m);
  if (!p->m) {
    free(p);
    return NULL;
  }
  return p;
}

void dist_plan_destroy(dist_plan *p) {
  if (!p)
    return;
  for (size_t i = 0; i < p->nstages; i++) {
    ac_function_destroy(p->stages[i].fn);
    free(p->stages[i].b);
  }
  ac_free(p->ctx, p->stages);
  env_pop(p, 0);
  ac_free(p->ctx, p->env);
  ac_module_destroy(p->m);
  free(p);
}

/* Whether the body is more than one stage on full data: some step of it
 * is distributed. */
bool dist_plan_distributes(const ac_module *m, uint32_t fn) {
  ir_ref b = m->funcs[fn].body;
  switch ((ir_op)ir_node_get(m, b)->op) {
  case IR_LET:
  case IR_LETTUP:
  case IR_TUPLE:
  case IR_IF:
  case IR_ITERATE:
  case IR_WHILE:
  case IR_FOLD:
  case IR_SCAN:
  case IR_SCAN_INCL:
  case IR_SCANR:
  case IR_SCANR_INCL:
  case IR_STENCIL:
  case IR_MAP:
  case IR_CALL:
  case IR_PROJ:
  case IR_GENERATE:
  case IR_IOTA:
  case IR_FILL:
  case IR_SLICE:
  case IR_GATHER:
  case IR_BACKPERMUTE:
  case IR_SCATTER:
  case IR_PERMUTE:
  case IR_FOLD_SEG:
  case IR_SCAN_SEG:
  case IR_SCAN_INCL_SEG:
  case IR_REVERSE:
  case IR_TRANSPOSE:
  case IR_RESHAPE:
  case IR_FILTER:
  case IR_INDEX:
    return true;
  case IR_REC: {
    int64_t reach[2];
    bool back[2];
    return rec_pipelines(m, b, reach, back);
  }
  default:
    return rowlocal(m, b, 0);
  }
}

ac_status dist_plan_call(dist_plan *p, const ac_dist_datum *args, size_t nargs,
                         ac_dist_datum *results, size_t nresults, ac_error **err) {
  ac_module *m = p->m;
  const ir_func *fd = &m->funcs[p->fn];
  ac_status st = AC_OK;
  size_t at = 0;
  for (uint32_t i = 0; st == AC_OK && i < fd->nparams; i++) {
    ir_type t = ir_func_param(m, fd, i);
    uint32_t nl = num_leaves(p, t);
    pval *v = pval_new(t, nl);
    for (uint32_t j = 0; v && j < nl && at < nargs; j++, at++) {
      const ac_dist_datum *a = &args[at];
      if (a->kind == AC_DIST_SCALAR) {
        v->l[j] = (leaf){LV_SCALAR, a->local, NULL, NULL};
      } else if (a->kind == AC_DIST_REPLICATED) {
        ac_array_retain(a->local.array);
        v->l[j] = (leaf){LV_FULL, {0}, a->local.array, NULL};
      } else {
        const ac_dist_array *d = a->dist;
        ac_array_retain(d->block);
        ac_dist_array *c =
            dist_array_make(p->rt, d->type, d->rank, d->extents, d->offsets, d->block);
        dref *r = c ? dref_new(c) : NULL;
        v->l[j] = (leaf){LV_DIST, {0}, NULL, r};
        if (!r)
          st = AC_ERR_NOMEM;
      }
    }
    if (!v || !env_push(p, v))
      st = AC_ERR_NOMEM;
  }
  if (st != AC_OK)
    st = dist_fail(p->rt, err, st, "out of memory");
  st = dist_agree(p->rt, st, err);
  pval *r = NULL;
  if (st == AC_OK)
    st = deval(p, fd->body, &r, err);
  env_pop(p, 0);
  if (st != AC_OK)
    return st;
  /* the results: scalars as they are, arrays distributed (full ones by the
   * partition rule, no data sent) */
  for (uint32_t j = 0; j < r->n && j < nresults; j++) {
    leaf *l = &r->l[j];
    results[j] = (ac_dist_datum){AC_DIST_SCALAR, l->s, NULL};
    if (l->kind == LV_SCALAR)
      continue;
    results[j].kind = AC_DIST_DISTRIBUTED;
    results[j].local = (ac_datum){0};
    if (l->kind == LV_DIST) {
      const ac_dist_array *d = l->d->a;
      ac_array_retain(d->block);
      results[j].dist = dist_array_make(p->rt, d->type, d->rank, d->extents, d->offsets, d->block);
    } else {
      ac_status s2 = ac_dist_array_from_full(p->rt, l->arr, &results[j].dist, err);
      if (s2 != AC_OK && st == AC_OK)
        st = s2;
    }
    if (!results[j].dist && st == AC_OK)
      st = AC_ERR_NOMEM;
  }
  pval_release(r);
  if (st == AC_ERR_NOMEM && !(err && *err))
    st = dist_fail(p->rt, err, st, "out of memory");
  st = dist_agree(p->rt, st, err);
  if (st != AC_OK)
    for (size_t j = 0; j < nresults; j++)
      ac_dist_datum_release(&results[j]);
  return st;
}
