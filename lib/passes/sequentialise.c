/* lib/passes/sequentialise.c: the sequentialise pass: reports the array
 * operations that will run as sequential loops inside a kernel.
 *
 * What. Lowering (lib/lower/lower.h) turns every array operation at PLAN
 * LEVEL (outside the functions given to array operations) into kernels of
 * its own, and compiles the functions given to array operations, and rec
 * bodies, as ELEMENT CODE run by each thread; an array operation inside
 * element code becomes a sequential loop in that thread (lib/codegen/seq_*.c,
 * the approach of Nikola and Copperhead that Barracuda follows when hoisting
 * fails). This pass walks each function as lowering will and reports every
 * array operation in element code through ps_ctx.warn, at its position:
 *
 *   nested fold runs sequentially inside the enclosing kernel (it depends
 *   on the lambda's i and j)
 *
 * naming the variables of the enclosing element code it depends on (which
 * is why hoist left it). A call in element code of a function that contains
 * array operations, and such a function passed to an array operation, are
 * reported too: its operations run sequentially in the caller's kernel.
 * The loops of iterate, while and `loop` at plan level stay at plan level
 * (plan loops launching kernels), so operations in their functions are not
 * nested; inside element code everything is.
 *
 * Why. Barracuda (seeds/001 §7): "the Barracuda compiler emits a warning
 * that the code will be inefficient: the principal motivation for using
 * graphics processors is performance". Copperhead (seeds/003) maps nesting
 * onto the thread/block/sequential hierarchy; we map everything below the
 * outermost level to the sequential one, and say so.
 *
 * Not reported, in the element code of a map or generate that gets warp-
 * and block-per-element kernels on a GPU (ps_coop_code, nesting.c): the
 * folds and element-wise operations that a warp or block computes
 * together when its rows are long.
 *
 * One warning per source position in a run (inlining copies a helper's
 * body, positions and all, to each call). With ps_options.entry (the
 * runtime's compiles for a GPU target: lib/api/compile.c) only the
 * compiled function and what it calls are walked, and the warnings go to
 * the context's handler (ac_context_set_warning_handler), which repeats
 * no position; arrayc-opt walks every function.
 *
 * The IR is not changed: lowering already runs nested operations
 * sequentially, so there is nothing to mark; this pass documents and counts
 * what lowering will do, and running it or not never changes a program.
 * Run it last (after hoist, fuse and inline, which change what is nested).
 * Requires a verified module. Counter: "sequential" (warnings given).
 */
#include "passes/pass.h"

#include <string.h>

/* Recursion bound; deeper nodes are not examined. */
#define SQ_MAX_DEPTH 6000u
/* Names listed in a warning before "and N more". */
#define SQ_MAX_NAMES 4u
/* Nodes the walks below may visit in all (a subtree shared by several
 * parents is visited at each use); past it they answer "nothing found". */
#define SQ_BUDGET 50000000u

enum { SQ_SEQUENTIAL };

/* Per function: whether its body contains an array operation. */
enum { SF_VISITING = 1, SF_DONE = 2, SF_HEAVY = 4, SF_WALKED = 8 };
/* Per node: the modes it was walked in (a shared node is reported once). */
enum { SV_PLAN = 1, SV_ELEM = 2 };

typedef struct sq {
  ps_ctx *c;
  ac_module *m;
  ac_context *ctx;
  /* the binders of the current element code, outermost first, and what
   * opened it ("lambda" or "rec") */
  ir_sym *names;
  size_t nnames, capnames;
  const char *kind;
  uint8_t *fn;   /* SF_* by function */
  uint8_t *seen; /* SV_* by node */
  size_t nseen;
  uint64_t budget; /* visits left to sq_heavy_at and sq_deps */
  ir_loc *warned;  /* positions reported (inlined copies share one) */
  ir_ref *delayed; /* producers under a delay (sq_loopless) on the walk's path */
  size_t ndelayed, capdelayed;
  /* the element code being walked has warp- and block-per-element kernels
   * (ps_coop_code), and the walk is not inside a fold's function or
   * operand (which each thread of the group runs alone) */
  bool coop;
  bool coop_rec;   /* walking the operand of such a group's recurrence fold (ps_coop_rec_fold) */
  int64_t coop_ix; /* a generate's: the position of its last parameter in names, else -1 */
  ir_ref fused;    /* the producer of the plan-level delay being walked (no kernel of its own) */
  size_t nwarned, capwarned;
  bool oom;
} sq;

static bool sq_heavy_at(sq *s, ir_ref r, uint32_t depth);

static bool sq_fn_heavy(sq *s, int64_t f, uint32_t depth) {
  const ac_module *m = s->m;
  if (f < 0 || (uint64_t)f >= m->nfuncs || !m->funcs[f].body || m->funcs[f].is_extern)
    return false;
  if (s->fn[f] & SF_DONE)
    return (s->fn[f] & SF_HEAVY) != 0;
  if (s->fn[f] & SF_VISITING) /* the call graph is acyclic; be safe anyway */
    return false;
  s->fn[f] = (uint8_t)((s->fn[f] & SF_WALKED) | SF_VISITING);
  bool heavy = sq_heavy_at(s, m->funcs[f].body, depth + 1);
  s->fn[f] = (uint8_t)((s->fn[f] & SF_WALKED) | SF_DONE | (heavy ? SF_HEAVY : 0));
  return heavy;
}

/* r contains an array operation, or calls a function that does. */
static bool sq_heavy_at(sq *s, ir_ref r, uint32_t depth) {
  if (depth > SQ_MAX_DEPTH || s->budget == 0)
    return false;
  s->budget--;
  const ir_node *n = ir_node_get(s->m, r);
  if (ps_is_array_op(s->m, r))
    return true;
  if ((n->op == IR_CALL || n->op == IR_FNREF) && sq_fn_heavy(s, n->attr, depth))
    return true;
  for (uint32_t i = 0; i < n->nkids; i++) {
    ir_ref k = ir_kid(s->m, r, i);
    if (k && sq_heavy_at(s, k, depth + 1))
      return true;
  }
  return false;
}

/* Marks in dep[j] each binder j < nb (relative to r, counting `off` binders
 * crossed inside r) that occurs free in r. */
static void sq_deps(sq *s, ir_ref r, uint32_t off, bool *dep, uint32_t nb, uint32_t depth) {
  if (depth > SQ_MAX_DEPTH || s->budget == 0)
    return;
  s->budget--;
  const ir_node *n = ir_node_get(s->m, r);
  if (n->op == IR_VAR) {
    if ((uint64_t)n->attr >= off && (uint64_t)n->attr - off < nb)
      dep[n->attr - off] = true;
    return;
  }
  for (uint32_t i = 0; i < n->nkids; i++) {
    ir_ref k = ir_kid(s->m, r, i);
    if (k)
      sq_deps(s, k, off + ir_binders(s->m, r, i), dep, nb, depth + 1);
  }
}

static void sq_warn(sq *s, ir_loc loc, const char *msg) {
  for (size_t i = 0; i < s->nwarned; i++)
    if (s->warned[i].line == loc.line && s->warned[i].col == loc.col)
      return;
  if (!ac_grow(s->ctx, (void **)&s->warned, &s->capwarned, s->nwarned + 1, sizeof *s->warned)) {
    s->oom = true;
    return;
  }
  s->warned[s->nwarned++] = loc;
  s->c->counters[SQ_SEQUENTIAL]++;
  if (s->c->warn)
    s->c->warn(s->c->warn_ud, s->m, loc, msg);
}

static const char *sq_op_name(const ac_module *m, ir_ref r) {
  ir_op op = (ir_op)ir_node_get(m, r)->op;
  if (op == IR_ARRLIT)
    return "array literal";
  return ir_ops[op].spelling[0] ? ir_ops[op].spelling : ir_ops[op].name;
}

/* "nested OP runs sequentially ... (it depends on the lambda's x and y)" */
static void sq_report_op(sq *s, ir_ref r) {
  uint32_t nb = (uint32_t)s->nnames;
  bool small[16], *dep = nb <= 16 ? small : ac_alloc(s->ctx, nb * sizeof *dep);
  if (!dep) {
    s->oom = true;
    return;
  }
  memset(dep, 0, (nb ? nb : 1) * sizeof *dep);
  sq_deps(s, r, 0, dep, nb, 0);
  ir_buf b;
  ir_buf_init(&b, s->ctx);
  ir_buf_printf(&b, "nested %s runs sequentially inside the enclosing kernel", sq_op_name(s->m, r));
  uint32_t total = 0;
  for (uint32_t j = 0; j < nb; j++)
    total += dep[j];
  if (total == 0) {
    ir_buf_printf(&b, " (it does not depend on the %s's variables: see the hoist pass)", s->kind);
  } else {
    ir_buf_printf(&b, " (it depends on the %s's ", s->kind);
    uint32_t listed = 0, shown = total <= SQ_MAX_NAMES ? total : SQ_MAX_NAMES - 1;
    /* outermost first: the stack's order */
    for (uint32_t i = 0; i < nb && listed < shown; i++) {
      uint32_t j = nb - 1 - i; /* de Bruijn index of stack entry i */
      if (!dep[j])
        continue;
      const char *nm = ir_sym_str(s->ctx, s->names[i]);
      const char *sep = listed == 0 ? "" : (listed + 1 == total) ? " and " : ", ";
      ir_buf_printf(&b, "%s%s", sep, nm[0] ? nm : "unnamed variable");
      listed++;
    }
    if (listed < total)
      ir_buf_printf(&b, " and %u more", total - listed);
    ir_buf_putc(&b, ')');
  }
  if (b.oom)
    s->oom = true;
  else
    sq_warn(s, ir_node_get(s->m, r)->loc, ir_buf_cstr(&b));
  ir_buf_free(&b);
  if (dep != small)
    ac_free(s->ctx, dep);
}

/* A function whose array operations run in element code: a call (or a
 * function reference) there, or a function given to an array operation. */
static void sq_report_fn(sq *s, ir_ref r) {
  const ir_node *n = ir_node_get(s->m, r);
  const char *fname = ir_sym_str(s->ctx, s->m->funcs[n->attr].name);
  ir_buf b;
  ir_buf_init(&b, s->ctx);
  ir_buf_printf(&b, "%s '%s' runs its array operations sequentially inside the enclosing kernel",
                n->op == IR_CALL ? "call of" : "function", fname);
  if (b.oom)
    s->oom = true;
  else
    sq_warn(s, n->loc, ir_buf_cstr(&b));
  ir_buf_free(&b);
}

/* Kid i of r is element code: a function of an array operation other than
 * iterate and while (whose functions run at plan level), or a rec body. */
static bool sq_elem_kid(const ac_module *m, ir_ref r, uint32_t i) {
  const ir_node *n = ir_node_get(m, r);
  ir_ref k = ir_kid(m, r, i);
  if (n->op == IR_REC)
    return i + 1 == n->nkids;
  if (!ps_is_array_op(m, r) || n->op == IR_ITERATE || n->op == IR_WHILE || !k)
    return false;
  ir_op kop = (ir_op)ir_node_get(m, k)->op;
  return kop == IR_LAM || kop == IR_FNREF;
}

static void sq_walk(sq *s, ir_ref r, bool elem, uint32_t depth);

/* An array operation in element code that makes no loop of its own: an
 * operand fuse delayed (computed inside its consumer's loop, element by
 * element: lib/codegen/seq_delay.c), a reshape or a rank-1 slice (views
 * of their operand). */
static bool sq_loopless(const sq *s, ir_ref r) {
  const ir_node *n = ir_node_get(s->m, r);
  ir_typeinfo t = ir_ty_info(s->ctx, n->type);
  if (t.kind == TK_TUPLE && t.n > 0) /* a tuple of arrays: its first leaf's rank */
    t = ir_ty_info(s->ctx, t.fields[0]);
  if (n->op == IR_RESHAPE || (n->op == IR_SLICE && t.kind == TK_ARRAY && t.rank == 1))
    return true;
  for (size_t i = 0; i < s->ndelayed; i++)
    if (s->delayed[i] == r)
      return true;
  return false;
}

/* Function f as lowering sees it when it is compiled, or called from plan
 * level (once). */
static void sq_walk_fn(sq *s, int64_t f, uint32_t depth) {
  const ac_module *m = s->m;
  if (f < 0 || (uint64_t)f >= m->nfuncs || !m->funcs[f].body || m->funcs[f].is_extern ||
      (s->fn[f] & SF_WALKED))
    return;
  s->fn[f] |= SF_WALKED;
  sq_walk(s, m->funcs[f].body, false, depth + 1);
}

static void sq_walk(sq *s, ir_ref r, bool elem, uint32_t depth) {
  if (depth > SQ_MAX_DEPTH || s->oom)
    return;
  uint8_t mode = elem ? SV_ELEM : SV_PLAN;
  if (r < s->nseen) {
    if (s->seen[r] & mode)
      return;
    s->seen[r] |= mode;
  }
  const ir_node *n = ir_node_get(s->m, r);
  if (!elem && n->op == IR_CALL)
    sq_walk_fn(s, n->attr, depth); /* the callee's plan-level code */
  bool rec_fold = elem && s->coop && n->op == IR_FOLD && ps_coop_rec_fold(s->m, r);
  bool grouped = elem && s->coop &&
                 (ps_coop_array_op(s->m, r) || rec_fold ||
                  (s->coop_rec && (n->op == IR_REC || n->op == IR_FOLD)) ||
                  (n->op == IR_FOLD && /* scans are ps_coop_array_op's */
                   ps_coop_row(s->m, r, (uint32_t)s->nnames,
                               s->coop_ix < 0 ? -1 : (int64_t)s->nnames - 1 - s->coop_ix)));
  if (elem && ps_is_array_op(s->m, r) && !sq_loopless(s, r) && !grouped)
    sq_report_op(s, r);
  else if (elem && (n->op == IR_CALL || n->op == IR_FNREF) && sq_fn_heavy(s, n->attr, depth) &&
           !(s->coop && n->op == IR_CALL && ps_coop_rec_fn(s->m, n->attr)))
    sq_report_fn(s, r);
  for (uint32_t i = 0; i < n->nkids && !s->oom; i++) {
    ir_ref k = ir_kid(s->m, r, i);
    if (!k)
      continue;
    bool enter = !elem && sq_elem_kid(s->m, r, i);
    size_t saved = s->nnames;
    const char *kind = s->kind;
    bool coop = s->coop, coop_rec = s->coop_rec;
    int64_t coop_ix = s->coop_ix;
    /* a group's recurrence fold: its operand's folds and recurrence are
     * the group's; the recurrence's body is each thread's */
    s->coop_rec = rec_fold || (s->coop_rec && n->op != IR_REC && n->op != IR_LAM);
    if (elem && ps_is_array_op(s->m, r)) { /* each thread alone (nesting.c's lanes) */
      ir_op kop = (ir_op)ir_node_get(s->m, k)->op;
      if (kop == IR_LAM || kop == IR_FNREF || kop == IR_DELAY)
        s->coop = false;
    }
    if (enter) {
      const ir_node *kn = ir_node_get(s->m, k);
      if (kn->op == IR_FNREF) {
        if (sq_fn_heavy(s, kn->attr, depth))
          sq_report_fn(s, k);
        continue;
      }
      s->nnames = 0;
      s->kind = n->op == IR_REC ? "rec" : "lambda";
      s->coop = (n->op == IR_MAP || n->op == IR_GENERATE) && r != s->fused &&
                ps_coop_code(s->m, k, n->op == IR_GENERATE);
      /* names gets the lambda's parameters next: the last at attr - 1 */
      s->coop_ix = n->op == IR_GENERATE && kn->op == IR_LAM && kn->attr > 0 ? kn->attr - 1 : -1;
    }
    /* binders of element code are named in warnings */
    uint32_t b = ir_binders(s->m, r, i);
    if (elem || enter) {
      size_t need = s->nnames + b;
      if (!ac_grow(s->ctx, (void **)&s->names, &s->capnames, need ? need : 1, sizeof *s->names)) {
        s->oom = true;
        return;
      }
      for (uint32_t j = 0; j < b; j++)
        s->names[s->nnames++] = ir_binder_name(s->m, r, i, j);
    }
    ir_ref fused = s->fused;
    if (!elem && n->op == IR_DELAY)
      s->fused = k; /* computed inside its consumer's kernel */
    bool delayed = elem && n->op == IR_DELAY;
    if (delayed) {
      if (!ac_grow(s->ctx, (void **)&s->delayed, &s->capdelayed, s->ndelayed + 1,
                   sizeof *s->delayed)) {
        s->oom = true;
        return;
      }
      s->delayed[s->ndelayed++] = k;
    }
    sq_walk(s, k, elem || enter, depth + 1);
    if (delayed)
      s->ndelayed--;
    s->nnames = saved;
    s->kind = kind;
    s->coop = coop;
    s->coop_rec = coop_rec;
    s->coop_ix = coop_ix;
    s->fused = fused;
  }
}

/* The entry point (passes_list.h registers it). */
ac_status ps_sequentialise(ps_ctx *c);
ac_status ps_sequentialise(ps_ctx *c) {
  ac_module *m = c->m;
  sq s;
  memset(&s, 0, sizeof s);
  s.c = c;
  s.m = m;
  s.ctx = c->ctx;
  s.kind = "lambda";
  s.budget = SQ_BUDGET;
  s.fn = ac_alloc(s.ctx, m->nfuncs ? m->nfuncs : 1);
  s.nseen = m->nnodes;
  s.seen = ac_alloc(s.ctx, s.nseen ? s.nseen : 1);
  if (!s.fn || !s.seen) {
    s.oom = true;
  } else {
    memset(s.fn, 0, m->nfuncs ? m->nfuncs : 1);
    memset(s.seen, 0, s.nseen ? s.nseen : 1);
  }
  /* each function once, as lowering sees it when it is the entry point
   * (only the compiled one and what it calls at plan level, when c->entry
   * names it); its calls from element code are reported where they are
   * made */
  if (c->entry && !s.oom)
    sq_walk_fn(&s, (int64_t)c->entry - 1, 0);
  for (size_t f = 0; f < m->nfuncs && !s.oom && !c->entry; f++)
    sq_walk_fn(&s, (int64_t)f, 0);
  ac_free(s.ctx, s.names);
  ac_free(s.ctx, s.warned);
  ac_free(s.ctx, s.delayed);
  ac_free(s.ctx, s.fn);
  ac_free(s.ctx, s.seen);
  if (s.oom)
    return ir_report(c->err, NULL, AC_ERR_NOMEM);
  return AC_OK;
}
