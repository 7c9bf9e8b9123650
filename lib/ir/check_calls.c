/* lib/ir/check_calls.c: the verifier's call graph (docs/language.md §3).
 *
 * Two walks over the calls between top-level functions. chk_order, before
 * any function is checked, gives the order of checking: a function whose
 * result is inferred (`-> _`) comes before the functions that use it, since
 * typing a call needs the callee's result. chk_recursion, after every
 * function is checked, walks the calls the checker recorded (chk_edge_add,
 * in source order) for a cycle, reported with its path, and for chains of
 * nested calls longer than CHK_MAX_CALL_DEPTH. Both are iterative
 * depth-first searches, linear in the calls, so a deep call graph cannot
 * overflow the C stack.
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
  uint8_t *color = ac_alloc(c->ctx, nf);
  uint32_t *stack = ac_alloc(c->ctx, nf * sizeof *stack);   /* functions on the path */
  size_t *next = ac_alloc(c->ctx, nf * sizeof *next);       /* next edge to try */
  uint32_t *via = ac_alloc(c->ctx, nf * sizeof *via);       /* edge taken from stack[i] */
  uint32_t *height = ac_alloc(c->ctx, nf * sizeof *height); /* longest chain below, in calls */
  uint32_t *deeper = ac_alloc(c->ctx, nf * sizeof *deeper); /* the callee it goes through */
  uint32_t *deep_edge = ac_alloc(c->ctx, nf * sizeof *deep_edge); /* and that call */
  if (!start || !order || !color || !stack || !next || !via || !height || !deeper || !deep_edge) {
    chk_oom(c);
    goto done;
  }
  memset(start, 0, (nf + 1) * sizeof *start);
  for (size_t e = 0; e < ne; e++)
    start[c->edges[e].from + 1]++;
  for (size_t f = 0; f < nf; f++)
    start[f + 1] += start[f];
  memcpy(next, start, nf * sizeof *next);
  for (size_t e = 0; e < ne; e++)
    order[next[c->edges[e].from]++] = (uint32_t)e;
  memset(color, 0, nf); /* 0 new, 1 on the path, 2 done */
  for (size_t root = 0; root < nf; root++) {
    if (color[root])
      continue;
    size_t sp = 0;
    stack[sp++] = (uint32_t)root;
    color[root] = 1;
    next[root] = start[root];
    while (sp) {
      uint32_t u = stack[sp - 1];
      if (next[u] == start[u + 1]) {
        color[u] = 2;
        sp--;
        /* every callee of u is finished: the first deepest one in source
         * order gives u's height */
        height[u] = 0;
        deeper[u] = UINT32_MAX;
        for (size_t i = start[u]; i < start[u + 1]; i++) {
          uint32_t e = order[i], v = c->edges[e].to;
          if (color[v] == 2 && height[v] + 1 > height[u]) {
            height[u] = height[v] + 1;
            deeper[u] = v;
            deep_edge[u] = e;
          }
        }
        if (height[u] > CHK_MAX_CALL_DEPTH) {
          call_chain_error(c, u, height[u], deeper, deep_edge);
          goto done;
        }
        continue;
      }
      uint32_t e = order[next[u]++];
      uint32_t v = c->edges[e].to;
      via[sp - 1] = e;
      if (color[v] == 0) {
        color[v] = 1;
        next[v] = start[v];
        stack[sp++] = v;
      } else if (color[v] == 1) {
        size_t from = 0;
        while (stack[from] != v)
          from++;
        cycle_error(c, stack, from, sp, v, c->edges[via[from]].loc);
        goto done;
      }
    }
  }
done:
  ac_free(c->ctx, start);
  ac_free(c->ctx, order);
  ac_free(c->ctx, color);
  ac_free(c->ctx, stack);
  ac_free(c->ctx, next);
  ac_free(c->ctx, via);
  ac_free(c->ctx, height);
  ac_free(c->ctx, deeper);
  ac_free(c->ctx, deep_edge);
}

/* ---- the order of checking ---- */

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
  uint8_t *color = ac_alloc(c->ctx, nf + 1);
  uint32_t *stack = ac_alloc(c->ctx, (nf + 1) * sizeof *stack);
  size_t *next = ac_alloc(c->ctx, (nf + 1) * sizeof *next);
  uint32_t *via = ac_alloc(c->ctx, (nf + 1) * sizeof *via);
  bool ok = order && start && seen && nodes && color && stack && next && via;
  if (ok) {
    memset(seen, 0, (nn + 1) * sizeof *seen);
    memset(color, 0, nf + 1);
  }
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
  if (ok)
    start[nf] = ne;
  /* post-order: 0 new, 1 on the path, 2 listed */
  size_t nord = 0;
  for (size_t root = 0; ok && root < nf && c->st == AC_OK; root++) {
    if (color[root])
      continue;
    size_t sp = 0;
    stack[sp++] = (uint32_t)root;
    color[root] = 1;
    next[root] = start[root];
    while (sp && c->st == AC_OK) {
      uint32_t u = stack[sp - 1];
      if (next[u] == start[u + 1]) {
        color[u] = 2;
        order[nord++] = u;
        sp--;
        continue;
      }
      size_t e = next[u]++;
      uint32_t v = edges[e].to;
      via[sp - 1] = (uint32_t)e;
      if (color[v] == 0) {
        color[v] = 1;
        next[v] = start[v];
        stack[sp++] = v;
      } else if (color[v] == 1) {
        size_t from = 0;
        while (stack[from] != v)
          from++;
        cycle_error(c, stack, from, sp, v, edges[via[from]].loc);
      }
    }
  }
  if (!ok)
    chk_oom(c);
  ac_free(c->ctx, edges);
  ac_free(c->ctx, start);
  ac_free(c->ctx, seen);
  ac_free(c->ctx, nodes);
  ac_free(c->ctx, color);
  ac_free(c->ctx, stack);
  ac_free(c->ctx, next);
  ac_free(c->ctx, via);
  if (c->st != AC_OK) {
    ac_free(c->ctx, order);
    return NULL;
  }
  return order;
}
