/* lib/ir/check_calls.c: the verifier's call graph (docs/language.md §3).
 *
 * Two walks over the calls between top-level functions. chk_order, before
 * any function is checked, gives the order of checking: a function whose
 * result is inferred (`-> _`) comes before the functions that use it, since
 * typing a call needs the callee's result. chk_recursion, after every
 * function is checked, walks the calls the checker recorded (chk_edge_add,
 * in source order) for a cycle, reported with its path, and for chains of
 * nested calls longer than CHK_MAX_CALL_DEPTH. Both are one iterative
 * depth-first search (calls_dfs) with their own work on finishing a
 * function, linear in the calls, so a deep call graph cannot overflow the
 * C stack.
 */
#include "check.h"

#include <string.h>

/* The chain of `height` nested calls, more than CHK_MAX_CALL_DEPTH, that
 * starts at function f (deeper[] gives each function's deepest callee),
 * reported at f's call that begins it. */
static void call_chain_error(chk *c, uint32_t f, uint32_t height, const uint32_t *deeper,
                             const uint32_t *deep_edge) {
  ir_buf b;
  ir_buf_init(&b, c->ctx);
  uint32_t n = 0;
  for (uint32_t g = f; g != UINT32_MAX; g = deeper[g], n++) {
    if (n < 3 || deeper[g] == UINT32_MAX)
      ir_buf_printf(&b, "%s%s", n ? " -> " : "", ir_sym_str(c->ctx, c->m->funcs[g].name));
    else if (n == 3)
      ir_buf_puts(&b, " -> ..");
  }
  if (b.oom)
    chk_oom(c);
  else
    chk_fail_at(c, c->edges[deep_edge[f]].loc,
                "calls nested too deeply: %s is %u nested calls, more than the limit of %d",
                ir_buf_cstr(&b), height, CHK_MAX_CALL_DEPTH);
  ir_buf_free(&b);
}

/* Reports the cycle stack[from..sp-1] -> v, closed by the call at loc that
 * leaves stack[from], as "recursion between functions is not allowed:
 * f -> g -> f". */
static void cycle_error(chk *c, const uint32_t *stack, size_t from, size_t sp, uint32_t v,
                        ir_loc loc) {
  ir_buf b;
  ir_buf_init(&b, c->ctx);
  for (size_t i = from; i < sp; i++)
    ir_buf_printf(&b, "%s -> ", ir_sym_str(c->ctx, c->m->funcs[stack[i]].name));
  ir_buf_puts(&b, ir_sym_str(c->ctx, c->m->funcs[v].name));
  if (b.oom)
    chk_oom(c);
  else
    chk_fail_at(c, loc, "recursion between functions is not allowed: %s", ir_buf_cstr(&b));
  ir_buf_free(&b);
}

/* The calls between functions, grouped by caller: function f's are
 * edges[idx[k]] (edges[k] without idx) for start[f] <= k < start[f + 1],
 * in source order. */
typedef struct call_graph {
  size_t nf;
  const chk_edge *edges;
  const uint32_t *idx;
  const size_t *start;
} call_graph;

static uint32_t call_at(const call_graph *g, size_t k) {
  return g->idx ? g->idx[k] : (uint32_t)k;
}

/* A depth-first search over g from each function in file order. A call of
 * a function on the path is a cycle, reported as "f -> g -> f" at the call
 * that leaves its first function. Each function is finished, finish(c, g,
 * u, color, ud), once all its callees are (color: 0 new, 1 on the path, 2
 * finished). The search stops at the first error (c->st). */
static void calls_dfs(chk *c, const call_graph *g,
                      void (*finish)(chk *c, const call_graph *g, uint32_t u, const uint8_t *color,
                                     void *ud),
                      void *ud) {
  size_t nf = g->nf;
  uint8_t *color = ac_alloc(c->ctx, nf + 1);
  uint32_t *stack = ac_alloc(c->ctx, (nf + 1) * sizeof *stack); /* functions on the path */
  size_t *next = ac_alloc(c->ctx, (nf + 1) * sizeof *next);     /* next call to try */
  uint32_t *via = ac_alloc(c->ctx, (nf + 1) * sizeof *via);     /* call taken from stack[i] */
  if (!color || !stack || !next || !via) {
    chk_oom(c);
  } else {
    memset(color, 0, nf + 1);
  }
  for (size_t root = 0; c->st == AC_OK && root < nf; root++) {
    if (color[root])
      continue;
    size_t sp = 0;
    stack[sp++] = (uint32_t)root;
    color[root] = 1;
    next[root] = g->start[root];
    while (sp && c->st == AC_OK) {
      uint32_t u = stack[sp - 1];
      if (next[u] == g->start[u + 1]) {
        color[u] = 2;
        sp--;
        finish(c, g, u, color, ud);
        continue;
      }
      uint32_t e = call_at(g, next[u]++);
      uint32_t v = g->edges[e].to;
      via[sp - 1] = e;
      if (color[v] == 0) {
        color[v] = 1;
        next[v] = g->start[v];
        stack[sp++] = v;
      } else if (color[v] == 1) {
        size_t from = 0;
        while (stack[from] != v)
          from++;
        cycle_error(c, stack, from, sp, v, g->edges[via[from]].loc);
      }
    }
  }
  ac_free(c->ctx, color);
  ac_free(c->ctx, stack);
  ac_free(c->ctx, next);
  ac_free(c->ctx, via);
}

/* Per function: the longest chain of nested calls below it, in calls, the
 * callee it goes through and that call. */
typedef struct chain_state {
  uint32_t *height, *deeper, *deep_edge;
} chain_state;

/* Every callee of u is finished: the first deepest one in source order
 * gives u's height; one above CHK_MAX_CALL_DEPTH is an error. */
static void finish_chain(chk *c, const call_graph *g, uint32_t u, const uint8_t *color, void *ud) {
  chain_state *s = ud;
  s->height[u] = 0;
  s->deeper[u] = UINT32_MAX;
  for (size_t i = g->start[u]; i < g->start[u + 1]; i++) {
    uint32_t e = call_at(g, i), v = g->edges[e].to;
    if (color[v] == 2 && s->height[v] + 1 > s->height[u]) {
      s->height[u] = s->height[v] + 1;
      s->deeper[u] = v;
      s->deep_edge[u] = e;
    }
  }
  if (s->height[u] > CHK_MAX_CALL_DEPTH)
    call_chain_error(c, u, s->height[u], s->deeper, s->deep_edge);
}

/* Finds a cycle by depth-first search from each function in order and
 * reports it as "f -> g -> f" at the call that leaves its first function.
 * Without a cycle, the search finishes each function after its callees,
 * which gives the longest chain of nested calls from it; one longer than
 * CHK_MAX_CALL_DEPTH is an error. Linear in the calls. */
void chk_recursion(chk *c) {
  size_t nf = c->m->nfuncs, ne = c->nedges;
  if (ne == 0)
    return;
  /* edges grouped by caller, keeping source order */
  size_t *start = ac_alloc(c->ctx, (nf + 1) * sizeof *start);
  uint32_t *order = ac_alloc(c->ctx, ne * sizeof *order);
  size_t *next = ac_alloc(c->ctx, nf * sizeof *next);
  chain_state s = {ac_alloc(c->ctx, nf * sizeof *s.height), ac_alloc(c->ctx, nf * sizeof *s.deeper),
                   ac_alloc(c->ctx, nf * sizeof *s.deep_edge)};
  if (!start || !order || !next || !s.height || !s.deeper || !s.deep_edge) {
    chk_oom(c);
  } else {
    memset(start, 0, (nf + 1) * sizeof *start);
    for (size_t e = 0; e < ne; e++)
      start[c->edges[e].from + 1]++;
    for (size_t f = 0; f < nf; f++)
      start[f + 1] += start[f];
    memcpy(next, start, nf * sizeof *next);
    for (size_t e = 0; e < ne; e++)
      order[next[c->edges[e].from]++] = (uint32_t)e;
    call_graph g = {nf, c->edges, order, start};
    calls_dfs(c, &g, finish_chain, &s);
  }
  ac_free(c->ctx, start);
  ac_free(c->ctx, order);
  ac_free(c->ctx, next);
  ac_free(c->ctx, s.height);
  ac_free(c->ctx, s.deeper);
  ac_free(c->ctx, s.deep_edge);
}

/* ---- the order of checking ---- */

/* The order of checking as it is listed. */
typedef struct order_list {
  uint32_t *f;
  size_t n;
} order_list;

/* Lists u after its callees. */
static void finish_order(chk *c, const call_graph *g, uint32_t u, const uint8_t *color, void *ud) {
  (void)c, (void)g, (void)color;
  order_list *l = ud;
  l->f[l->n++] = u;
}

/* The order in which ir_check_module checks the functions: file order, but
 * a function whose result is inferred (`-> _`, docs/language.md §3) before
 * the functions that call it or pass it to an array operation, since their
 * checks need its result. A depth-first search from each function in file
 * order follows only the calls (CALL and FNREF nodes, found by walking the
 * body) of functions still to be inferred and lists each function after
 * those callees; a module without such functions keeps file order. A cycle
 * through an inferred function is reported here, as chk_recursion would;
 * other cycles are left to it. Returns NULL after an error. */
uint32_t *chk_order(chk *c) {
  const ac_module *m = c->m;
  size_t nf = m->nfuncs, nn = m->nnodes, ne = 0, cape = 0;
  chk_edge *edges = NULL;
  uint32_t *order = ac_alloc(c->ctx, (nf + 1) * sizeof *order);
  size_t *start = ac_alloc(c->ctx, (nf + 1) * sizeof *start);
  uint32_t *seen = ac_alloc(c->ctx, (nn + 1) * sizeof *seen); /* 1 + the function that saw it */
  ir_ref *nodes = ac_alloc(c->ctx, (nn + 1) * sizeof *nodes);
  bool ok = order && start && seen && nodes;
  if (ok)
    memset(seen, 0, (nn + 1) * sizeof *seen);
  /* the calls of inferred functions, grouped by caller in source order */
  for (size_t fi = 0; ok && fi < nf; fi++) {
    start[fi] = ne;
    ir_ref body = m->funcs[fi].body;
    if (m->funcs[fi].is_extern || body == IR_NONE || body >= nn)
      continue;
    size_t sp = 0;
    nodes[sp++] = body;
    seen[body] = (uint32_t)fi + 1;
    while (ok && sp) {
      const ir_node *n = &m->nodes[nodes[--sp]];
      if ((n->op == IR_CALL || n->op == IR_FNREF) && n->attr >= 0 && (uint64_t)n->attr < nf &&
          m->funcs[n->attr].infer_result && m->funcs[n->attr].result == IR_TY_NONE) {
        ok = ac_grow(c->ctx, (void **)&edges, &cape, ne + 1, sizeof *edges);
        if (ok)
          edges[ne++] = (chk_edge){(uint32_t)fi, (uint32_t)n->attr, n->loc};
      }
      for (uint32_t i = n->nkids; ok && i-- > 0;) { /* first kid on top */
        ir_ref k = (size_t)n->kids + i < m->nkids ? m->kids[n->kids + i] : IR_NONE;
        if (k != IR_NONE && k < nn && seen[k] != fi + 1) {
          seen[k] = (uint32_t)fi + 1;
          nodes[sp++] = k;
        }
      }
    }
  }
  if (ok) {
    start[nf] = ne;
    call_graph g = {nf, edges, NULL, start};
    order_list l = {order, 0};
    calls_dfs(c, &g, finish_order, &l);
  }
  if (!ok)
    chk_oom(c);
  ac_free(c->ctx, edges);
  ac_free(c->ctx, start);
  ac_free(c->ctx, seen);
  ac_free(c->ctx, nodes);
  if (c->st != AC_OK) {
    ac_free(c->ctx, order);
    return NULL;
  }
  return order;
}
