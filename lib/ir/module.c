/* lib/ir/module.c: the operation table, the node arena and modules.
 *
 * Nodes, children, name hints and integer attributes live in four growable
 * vectors owned by the module (QBE's per-function arena, at module scope):
 * references are indices, so vectors may move and a module is freed in one
 * call. Nodes are never freed individually; passes build new nodes and leave
 * the old ones unreferenced.
 */
#include "ir.h"

#include <string.h>

const ir_opinfo ir_ops[IR_NUM_OPS] = {
#define AC_OP(id, spelling, syntax, nkids, typing, prec, fnargs, acc)                            \
  {#id, spelling, syntax, nkids, typing, prec, fnargs, acc},
#include "arrayc/ops.def"
#undef AC_OP
};

ir_op ir_op_by_call_name(const char *name, size_t len) {
  for (int i = 0; i < IR_NUM_OPS; i++)
    if (ir_ops[i].syntax == SX_CALL && strlen(ir_ops[i].spelling) == len &&
        memcmp(ir_ops[i].spelling, name, len) == 0)
      return (ir_op)i;
  return IR_NUM_OPS;
}

/* ---- modules ---- */

ac_module *ac_module_create(ac_context *ctx, const char *name) {
  ac_module *m = ac_alloc(ctx, sizeof *m);
  if (!m)
    return NULL;
  memset(m, 0, sizeof *m);
  m->ctx = ctx;
  m->name = ac_strdup(ctx, name ? name : "<api>");
  /* index 0 of every vector is a dummy so that 0 can mean "none" */
  if (!m->name || !ac_grow(ctx, (void **)&m->nodes, &m->capnodes, 1, sizeof *m->nodes) ||
      !ac_grow(ctx, (void **)&m->kids, &m->capkids, 1, sizeof *m->kids) ||
      !ac_grow(ctx, (void **)&m->syms, &m->capsyms, 1, sizeof *m->syms) ||
      !ac_grow(ctx, (void **)&m->ints, &m->capints, 1, sizeof *m->ints)) {
    ac_module_destroy(m);
    return NULL;
  }
  memset(&m->nodes[0], 0, sizeof m->nodes[0]);
  m->kids[0] = 0;
  m->syms[0] = 0;
  m->ints[0] = 0;
  m->nnodes = m->nkids = m->nsyms = m->nints = 1;
  return m;
}

void ac_module_destroy(ac_module *m) {
  if (!m)
    return;
  ac_context *ctx = m->ctx;
  ac_free(ctx, m->name);
  ac_free(ctx, m->src);
  ac_free(ctx, m->nodes);
  ac_free(ctx, m->kids);
  ac_free(ctx, m->syms);
  ac_free(ctx, m->ints);
  ac_free(ctx, m->funcs);
  ac_free(ctx, m);
}

ac_context *ac_module_context(const ac_module *m) { return m->ctx; }

/* Copies one of the module's vectors (n elements of size sz, at least one:
 * index 0 is the dummy). */
static bool clone_vec(ac_context *ctx, void **dst, size_t *cap, const void *src, size_t n,
                      size_t sz) {
  *dst = NULL;
  *cap = 0;
  if (!ac_grow(ctx, dst, cap, n ? n : 1, sz))
    return false;
  if (n)
    memcpy(*dst, src, n * sz);
  return true;
}

ac_module *ir_module_clone(const ac_module *m) {
  ac_context *ctx = m->ctx;
  if (m->oom)
    return NULL;
  ac_module *c = ac_alloc(ctx, sizeof *c);
  if (!c)
    return NULL;
  memset(c, 0, sizeof *c);
  c->ctx = ctx;
  c->name = ac_strdup(ctx, m->name ? m->name : "<api>");
  c->srclen = m->srclen;
  bool ok = c->name != NULL;
  if (ok && m->src) {
    c->src = ac_alloc(ctx, m->srclen + 1);
    ok = c->src != NULL;
    if (ok) {
      memcpy(c->src, m->src, m->srclen);
      c->src[m->srclen] = 0;
    }
  }
  ok = ok &&
       clone_vec(ctx, (void **)&c->nodes, &c->capnodes, m->nodes, m->nnodes, sizeof *m->nodes) &&
       clone_vec(ctx, (void **)&c->kids, &c->capkids, m->kids, m->nkids, sizeof *m->kids) &&
       clone_vec(ctx, (void **)&c->syms, &c->capsyms, m->syms, m->nsyms, sizeof *m->syms) &&
       clone_vec(ctx, (void **)&c->ints, &c->capints, m->ints, m->nints, sizeof *m->ints) &&
       clone_vec(ctx, (void **)&c->funcs, &c->capfuncs, m->funcs, m->nfuncs, sizeof *m->funcs);
  if (!ok) {
    ac_module_destroy(c);
    return NULL;
  }
  c->nnodes = m->nnodes;
  c->nkids = m->nkids;
  c->nsyms = m->nsyms;
  c->nints = m->nints;
  c->nfuncs = m->nfuncs;
  return c;
}


size_t ac_module_num_functions(const ac_module *m) { return m->nfuncs; }

const char *ac_module_function_name(const ac_module *m, size_t i) {
  return i < m->nfuncs ? ir_sym_str(m->ctx, m->funcs[i].name) : NULL;
}

ac_status ac_module_parse(ac_context *ctx, const char *filename, const char *text, size_t len,
                          ac_module **out, ac_error **err) {
  *out = NULL;
  ac_module *m = ac_module_create(ctx, filename ? filename : "<input>");
  if (!m)
    return ir_report(err, NULL, AC_ERR_NOMEM);
  m->src = ac_strndup(ctx, text, len);
  m->srclen = len;
  if (!m->src) {
    ac_module_destroy(m);
    return ir_report(err, NULL, AC_ERR_NOMEM);
  }
  ac_status st = ir_parse(m, text, len, err);
  if (st == AC_OK)
    st = ir_check_module(m, err);
  if (st != AC_OK) {
    ac_module_destroy(m);
    return st;
  }
  *out = m;
  return AC_OK;
}

ac_status ac_module_verify(ac_module *m, ac_error **err) {
  if (m->oom)
    return ir_report(err, NULL, AC_ERR_NOMEM);
  return ir_check_module(m, err);
}

char *ac_module_print(ac_module *m, ac_error **err) {
  ir_buf b;
  ir_buf_init(&b, m->ctx);
  if (ir_print_module(m, &b, err) != AC_OK) {
    ir_buf_free(&b);
    return NULL;
  }
  if (b.oom) {
    ir_buf_free(&b);
    ir_report(err, NULL, AC_ERR_NOMEM);
    return NULL;
  }
  return ir_buf_take(&b);
}

/* ---- nodes ---- */

ir_ref ir_node_new(ac_module *m, ir_op op, ir_loc loc, uint32_t nkids, const ir_ref *kids) {
  if (m->oom || m->nnodes >= UINT32_MAX - 1 || m->nkids + nkids >= UINT32_MAX - 1)
    goto oom;
  if (!ac_grow(m->ctx, (void **)&m->nodes, &m->capnodes, m->nnodes + 1, sizeof *m->nodes) ||
      !ac_grow(m->ctx, (void **)&m->kids, &m->capkids, m->nkids + nkids, sizeof *m->kids))
    goto oom;
  ir_ref r = (ir_ref)m->nnodes++;
  ir_node *n = &m->nodes[r];
  memset(n, 0, sizeof *n);
  n->op = (uint16_t)op;
  n->loc = loc;
  n->nkids = nkids;
  n->kids = (uint32_t)m->nkids;
  if (nkids) {
    if (kids)
      memcpy(m->kids + m->nkids, kids, nkids * sizeof *kids);
    else
      memset(m->kids + m->nkids, 0, nkids * sizeof *kids);
  }
  m->nkids += nkids;
  return r;
oom:
  m->oom = true;
  return IR_NONE;
}

uint32_t ir_syms_push(ac_module *m, uint32_t n, const ir_sym *syms) {
  if (!ac_grow(m->ctx, (void **)&m->syms, &m->capsyms, m->nsyms + n, sizeof *m->syms)) {
    m->oom = true;
    return 0;
  }
  uint32_t off = (uint32_t)m->nsyms;
  if (n) {
    if (syms)
      memcpy(m->syms + off, syms, n * sizeof *syms);
    else
      memset(m->syms + off, 0, n * sizeof *syms);
  }
  m->nsyms += n;
  return off;
}

uint32_t ir_ints_push(ac_module *m, uint32_t n, const int64_t *vals) {
  if (!ac_grow(m->ctx, (void **)&m->ints, &m->capints, m->nints + n, sizeof *m->ints)) {
    m->oom = true;
    return 0;
  }
  uint32_t off = (uint32_t)m->nints;
  if (n) {
    if (vals)
      memcpy(m->ints + off, vals, n * sizeof *vals);
    else
      memset(m->ints + off, 0, n * sizeof *vals);
  }
  m->nints += n;
  return off;
}

uint32_t ir_binders(const ac_module *m, ir_ref r, uint32_t i) {
  const ir_node *n = ir_node_get(m, r);
  switch ((ir_op)n->op) {
  case IR_LET:
    return i == 1 ? 1 : 0;
  case IR_LETTUP:
    return i == 1 ? (uint32_t)n->attr : 0;
  case IR_LAM:
    return (uint32_t)n->attr;
  case IR_REC:
    return i == n->nkids - 1 ? (uint32_t)n->attr + 1 : 0;
  default:
    return 0;
  }
}

ir_sym ir_binder_name(const ac_module *m, ir_ref r, uint32_t i, uint32_t j) {
  const ir_node *n = ir_node_get(m, r);
  if (j >= ir_binders(m, r, i) || n->names == 0)
    return IR_SYM_NONE;
  return m->syms[n->names + j];
}

ir_ref ir_var(ac_module *m, ir_loc loc, uint32_t index) {
  ir_ref r = ir_node_new(m, IR_VAR, loc, 0, NULL);
  if (r)
    m->nodes[r].attr = index;
  return r;
}

ir_ref ir_lit_typed(ac_module *m, ir_loc loc, ir_type t, ir_litval v) {
  ir_ref r = ir_node_new(m, IR_LIT, loc, 0, NULL);
  if (r) {
    m->nodes[r].type = t;
    m->nodes[r].lit = v;
    m->nodes[r].flags = IR_F_SUFFIX;
  }
  return r;
}

/* ---- functions ---- */

int32_t ir_func_add(ac_module *m, ir_sym name, ir_loc loc, uint32_t nparams,
                    const ir_type *ptypes, const ir_sym *pnames, ir_type result) {
  if (m->nfuncs >= INT32_MAX ||
      !ac_grow(m->ctx, (void **)&m->funcs, &m->capfuncs, m->nfuncs + 1, sizeof *m->funcs)) {
    m->oom = true;
    return -1;
  }
  uint32_t poff = ir_ints_push(m, nparams, NULL);
  uint32_t noff = ir_syms_push(m, nparams, pnames);
  if (m->oom)
    return -1;
  for (uint32_t i = 0; i < nparams; i++)
    m->ints[poff + i] = ptypes[i];
  ir_func *f = &m->funcs[m->nfuncs];
  memset(f, 0, sizeof *f);
  f->name = name;
  f->loc = loc;
  f->nparams = nparams;
  f->params = poff;
  f->pnames = noff;
  f->result = result;
  f->body = IR_NONE;
  return (int32_t)m->nfuncs++;
}

int32_t ir_func_find(const ac_module *m, ir_sym name) {
  for (size_t i = 0; i < m->nfuncs; i++)
    if (m->funcs[i].name == name)
      return (int32_t)i;
  return -1;
}
