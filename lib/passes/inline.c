/* lib/passes/inline.c: inlining of calls (the `inline` pass).
 *
 * What: a call f(a1, .., an) of a function whose body is small (ps_size
 * under INL_SIZE nodes), or that is called from one place only in the
 * module, or whose body is a recurrence (neither huge: INL_ONCE_SIZE),
 * becomes
 * `let p1 = a1; ..; let pn = an; body`: the arguments are still
 * evaluated once each, in order, before the body, exactly as a call does,
 * so results and errors (positions included: the body keeps the callee's
 * locations) do not change. An argument that is a variable is substituted
 * instead of bound (it evaluates nothing). Other calls stay calls, and a
 * function named as a lambda argument (`map(sq, xs)`) stays a function
 * reference: Nikola's lambda-sharing, a function compiled once however
 * often it is used. Every function stays in the module (others, or the
 * host, may call it).
 *
 * Why: a call is a boundary for the other passes (cse does not see through
 * it; fuse cannot fuse a producer inside a callee) and, in element code, a
 * function call per element. Nikola and Barracuda discuss the other side,
 * the code growth of inlining everything (Barracuda's function application
 * is macro expansion, which its `slet` tames); the size threshold and the
 * once-called rule (with its cap) keep growth linear.
 *
 * How: functions are processed callees first (the call graph is acyclic:
 * the verifier rejects recursion, docs/language.md §3), so a callee's body
 * already has its own calls inlined when it is copied, and the size test
 * sees that body. A function body is a closed term over its parameters
 * (the last parameter is variable 0), which is exactly the scope the lets
 * make, so the body needs no shifting; argument k is shifted past the k-1
 * lets before it. Rewriting is memoised per node, so shared subtrees are
 * rewritten once and stay shared.
 *
 * Requires a verified module. Preserves meaning, errors and the IR's
 * invariants: the literals of a moved argument or body get fixed types
 * (IR_F_SUFFIX), since a let's value is synthesised where an argument was
 * checked against its parameter's type, and the body no longer has the
 * declared result type as context (language.md §5). A function whose new
 * body would print deeper or more nested than the parser accepts
 * (ps_printable, printable.c) keeps its calls.
 */
#include "passes/pass.h"

#include <string.h>

/* Callees whose body has fewer nodes are inlined at every call. */
#define INL_SIZE 40
/* A callee called once is inlined up to this size: it stays in the module,
 * so a chain of once-called functions would otherwise copy the whole chain
 * into each of its members (quadratic growth). */
#define INL_ONCE_SIZE 1000
/* Recursion bound of the rewrites (verified trees are at most CHK_MAX_DEPTH
 * deep; an inlined body adds its own depth). */
#define INL_MAX_NEST 6000u

typedef struct inl {
  ac_module *m;
  uint32_t *sites;  /* per function: calls of it in the module */
  uint32_t *estart; /* per function: its callees are edges[estart[f] .. estart[f+1]) */
  uint32_t *edges;
  size_t nedges, capedges;
  ir_ref *memo; /* rewritten node, for nodes older than the pass */
  size_t nmemo;
  /* per-node memo of the literal fix, valid where its stamp is current; it
   * covers nodes the pass makes too */
  uint32_t *fstamp;
  ir_ref *fres;
  size_t capf, capfres;
  uint32_t fcur;
  ir_ref *stk;
  size_t capstk;
  uint64_t inlined;
  bool oom;
} inl;

static bool inl_grow(inl *S, void *vec, size_t *cap, size_t need, size_t size) {
  if (need <= *cap)
    return true;
  size_t old = *cap;
  if (!ac_grow(S->m->ctx, (void **)vec, cap, need, size)) {
    S->oom = true;
    return false;
  }
  memset((char *)*(void **)vec + old * size, 0, (*cap - old) * size);
  return true;
}

/* ---- the call graph ---- */

/* Appends the callees of function f (one edge per call node) and counts
 * its calls in sites[]. Nodes shared inside the body are visited once:
 * a shared call is rewritten once, so it counts once. */
static bool inl_calls(inl *S, uint32_t f, uint32_t *seen) {
  const ac_module *m = S->m;
  ir_ref body = m->funcs[f].body;
  size_t n = 0;
  if (!body)
    return true;
  if (!inl_grow(S, &S->stk, &S->capstk, 1, sizeof *S->stk))
    return false;
  S->stk[n++] = body;
  seen[body] = f + 1;
  while (n) {
    ir_ref r = S->stk[--n];
    const ir_node *nd = ir_node_get(m, r);
    if (nd->op == IR_CALL && nd->attr >= 0 && (uint64_t)nd->attr < m->nfuncs) {
      if (!inl_grow(S, &S->edges, &S->capedges, S->nedges + 1, sizeof *S->edges))
        return false;
      S->edges[S->nedges++] = (uint32_t)nd->attr;
      S->sites[nd->attr]++;
    }
    if (!inl_grow(S, &S->stk, &S->capstk, n + nd->nkids, sizeof *S->stk))
      return false;
    nd = ir_node_get(m, r);
    for (uint32_t j = 0; j < nd->nkids; j++) {
      ir_ref k = ir_kid(m, r, j);
      if (k && seen[k] != f + 1) {
        seen[k] = f + 1;
        S->stk[n++] = k;
      }
    }
  }
  return true;
}

/* Functions in post-order of the call graph (callees before callers). A
 * cycle cannot occur in verified IR; were there one, its back edge would
 * simply be ignored. */
static bool inl_order(inl *S, uint32_t *order) {
  size_t nf = S->m->nfuncs, no = 0, n = 0;
  uint32_t *state = NULL, *next = NULL, *stk = NULL;
  ac_context *ctx = S->m->ctx;
  state = ac_alloc(ctx, nf * sizeof *state);
  next = ac_alloc(ctx, nf * sizeof *next);
  stk = ac_alloc(ctx, nf * sizeof *stk);
  bool ok = state && next && stk;
  if (ok)
    memset(state, 0, nf * sizeof *state);
  for (uint32_t f0 = 0; ok && f0 < nf; f0++) {
    if (state[f0])
      continue;
    state[f0] = 1;
    next[f0] = S->estart[f0];
    stk[n++] = f0;
    while (n) {
      uint32_t f = stk[n - 1];
      if (next[f] < S->estart[f + 1]) {
        uint32_t g = S->edges[next[f]++];
        if (!state[g]) {
          state[g] = 1;
          next[g] = S->estart[g];
          stk[n++] = g;
        }
      } else {
        state[f] = 2;
        order[no++] = f;
        n--;
      }
    }
  }
  ac_free(ctx, state);
  ac_free(ctx, next);
  ac_free(ctx, stk);
  if (!ok)
    S->oom = true;
  return ok;
}

/* ---- rewriting ---- */

/* A copy of r whose unsuffixed literals have their type fixed, sharing
 * every subtree without such literals. */
static ir_ref inl_fix(inl *S, ir_ref r, unsigned nest) {
  ac_module *m = S->m;
  if (nest > INL_MAX_NEST)
    return IR_NONE;
  if (!inl_grow(S, &S->fstamp, &S->capf, (size_t)r + 1, sizeof *S->fstamp) ||
      !inl_grow(S, &S->fres, &S->capfres, (size_t)r + 1, sizeof *S->fres))
    return IR_NONE;
  if (S->fstamp[r] == S->fcur)
    return S->fres[r];
  ir_node n = *ir_node_get(m, r);
  ir_ref res = r;
  if (n.op == IR_LIT) {
    if (!(n.flags & IR_F_SUFFIX)) {
      res = ps_rebuild(m, r, 0, NULL);
      if (res)
        ir_node_get(m, res)->flags = (uint16_t)((n.flags | IR_F_SUFFIX) & ~IR_F_CTX);
    }
  } else if (n.nkids) {
    ir_ref small[8];
    ir_ref *kids = n.nkids <= 8 ? small : ac_alloc(m->ctx, n.nkids * sizeof *kids);
    if (!kids) {
      S->oom = true;
      return IR_NONE;
    }
    for (uint32_t j = 0; j < n.nkids && res; j++) {
      ir_ref k = ir_kid(m, r, j);
      kids[j] = k ? inl_fix(S, k, nest + 1) : IR_NONE;
      if (k && !kids[j])
        res = IR_NONE;
    }
    if (res)
      res = ps_rebuild_if_changed(m, r, kids);
    if (kids != small)
      ac_free(m->ctx, kids);
  }
  if (res) {
    S->fstamp[r] = S->fcur;
    S->fres[r] = res;
  }
  return res;
}

/* `let p1 = a1; ..; let pn = an; body` for the call (whose arguments are
 * already rewritten) of function g; IR_NONE if it cannot be made. */
static ir_ref inl_expand(inl *S, ir_ref call, uint32_t g) {
  ac_module *m = S->m;
  const ir_func *fn = &m->funcs[g];
  uint32_t np = fn->nparams;
  if (ir_node_get(m, call)->nkids != np)
    return IR_NONE;
  ir_loc loc = ir_node_get(m, call)->loc;
  S->fcur++;
  ir_ref body = inl_fix(S, m->funcs[g].body, 0);
  for (uint32_t k = np; body && k-- > 0;) {
    /* here body sees p1 .. p(k+1), the last as 0; argument k+1 is
     * evaluated under the k lets before it */
    ir_ref a = ir_shift(m, ir_kid(m, call, k), (int32_t)k, 0);
    if (!a)
      return IR_NONE;
    if (ir_node_get(m, a)->op == IR_VAR) {
      body = ir_subst(m, body, 0, a);
      continue;
    }
    S->fcur++;
    ir_ref kids[2] = {inl_fix(S, a, 0), body};
    if (!kids[0])
      return IR_NONE;
    body = ir_node_new(m, IR_LET, loc, 2, kids);
    if (body)
      ir_node_get(m, body)->names = m->funcs[g].pnames + k;
  }
  return body;
}

/* Whether a body is a recurrence (after the lets that prepare it): how a
 * recurrence is computed depends on what uses it (a fold of its rows or one
 * element keeps a window instead of the table, docs/language.md 7.14), so
 * it is inlined at every call, up to INL_ONCE_SIZE, to meet its use. */
static bool inl_makes_rec(const ac_module *m, ir_ref body) {
  const ir_node *n = ir_node_get(m, body);
  while (n->op == IR_LET || n->op == IR_LETTUP) {
    body = ir_kid(m, body, 1);
    n = ir_node_get(m, body);
  }
  return n->op == IR_REC;
}

static bool inl_wanted(const inl *S, uint32_t g) {
  const ir_func *fn = &S->m->funcs[g];
  if (fn->is_extern || fn->body == IR_NONE)
    return false;
  /* `[]` takes its type from the declared result or a parameter: not
   * from the call's place */
  if (ps_has_empty_arrlit(S->m, fn->body))
    return false;
  uint32_t size = ps_size(S->m, fn->body, INL_ONCE_SIZE + 1);
  return size < INL_SIZE || ((S->sites[g] == 1 || inl_makes_rec(S->m, fn->body)) &&
                             size <= INL_ONCE_SIZE);
}

/* The body at r with the chosen calls inlined (r itself if none). */
static ir_ref inl_rewrite(inl *S, ir_ref r, unsigned nest) {
  ac_module *m = S->m;
  if (nest > INL_MAX_NEST)
    return r; /* too deep to look into: left as it is */
  if (r < S->nmemo && S->memo[r])
    return S->memo[r];
  ir_node n = *ir_node_get(m, r);
  ir_ref res = r;
  if (n.nkids) {
    ir_ref small[8];
    ir_ref *kids = n.nkids <= 8 ? small : ac_alloc(m->ctx, n.nkids * sizeof *kids);
    if (!kids) {
      S->oom = true;
      return IR_NONE;
    }
    for (uint32_t j = 0; j < n.nkids && res; j++) {
      ir_ref k = ir_kid(m, r, j);
      kids[j] = k ? inl_rewrite(S, k, nest + 1) : IR_NONE;
      if (k && !kids[j])
        res = IR_NONE;
    }
    if (res)
      res = ps_rebuild_if_changed(m, r, kids);
    if (kids != small)
      ac_free(m->ctx, kids);
  }
  if (res && n.op == IR_CALL && n.attr >= 0 && (uint64_t)n.attr < m->nfuncs &&
      inl_wanted(S, (uint32_t)n.attr)) {
    ir_ref e = inl_expand(S, res, (uint32_t)n.attr);
    if (m->oom)
      return IR_NONE;
    if (e) {
      res = e;
      S->inlined++;
    }
  }
  if (res && r < S->nmemo)
    S->memo[r] = res;
  return res;
}

static void inl_free(inl *S) {
  ac_context *ctx = S->m->ctx;
  void *vs[] = {S->sites, S->estart, S->edges, S->memo, S->fstamp, S->fres, S->stk};
  for (size_t i = 0; i < sizeof vs / sizeof vs[0]; i++)
    ac_free(ctx, vs[i]);
}

/* The entry point (registered in passes_list.h). */
ac_status ps_inline(ps_ctx *c);
ac_status ps_inline(ps_ctx *c) {
  ac_module *m = c->m;
  ac_context *ctx = m->ctx;
  inl S;
  memset(&S, 0, sizeof S);
  S.m = m;
  size_t nf = m->nfuncs;
  if (nf == 0)
    return AC_OK;
  S.nmemo = m->nnodes;
  uint32_t *seen = ac_alloc(ctx, S.nmemo * sizeof *seen);
  uint32_t *order = ac_alloc(ctx, nf * sizeof *order);
  S.sites = ac_alloc(ctx, nf * sizeof *S.sites);
  S.estart = ac_alloc(ctx, (nf + 1) * sizeof *S.estart);
  S.memo = ac_alloc(ctx, S.nmemo * sizeof *S.memo);
  S.oom = !seen || !order || !S.sites || !S.estart || !S.memo;
  if (!S.oom) {
    memset(seen, 0, S.nmemo * sizeof *seen);
    memset(S.sites, 0, nf * sizeof *S.sites);
    memset(S.memo, 0, S.nmemo * sizeof *S.memo);
  }
  for (uint32_t f = 0; f < nf && !S.oom; f++) {
    S.estart[f] = (uint32_t)S.nedges;
    inl_calls(&S, f, seen);
  }
  if (!S.oom) {
    S.estart[nf] = (uint32_t)S.nedges;
    inl_order(&S, order);
  }
  for (size_t i = 0; i < nf && !S.oom; i++) {
    ir_func *f = &m->funcs[order[i]];
    if (f->is_extern || f->body == IR_NONE)
      continue;
    uint64_t before = S.inlined;
    ir_ref body = inl_rewrite(&S, f->body, 0);
    if (!body || body == f->body)
      continue;
    if (ps_printable(m, body))
      m->funcs[order[i]].body = body;
    else
      S.inlined = before; /* too deep to print: this function keeps its calls */
  }
  c->counters[0] += S.inlined;
  ac_free(ctx, seen);
  ac_free(ctx, order);
  bool oom = S.oom || m->oom;
  inl_free(&S);
  return oom ? ir_report(c->err, NULL, AC_ERR_NOMEM) : AC_OK;
}
