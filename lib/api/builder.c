/* lib/api/builder.c: the C embedding API (arrayc/builder.h): types, builders,
 * functions and every value constructor.
 *
 * Constructors only append a node to the builder's value graph (see
 * builder_impl.h); turning a function's graph into IR, with sharing recovered,
 * happens once, in ac_fn_finish (sharing.c). Keeping construction this cheap
 * and dumb is what lets a value be used any number of times (Accelerate's and
 * Nikola's embedding style) without the caller thinking about lets.
 *
 * Constructors never fail loudly: an invalid argument gives the invalid value
 * (id 0), and the first misuse is remembered with the builder's location at
 * that moment. Invalid values propagate silently through later constructors,
 * so the first misuse stays the one reported; every later ac_fn_finish reports
 * it, because values built after it may depend on the failed one. Typing is
 * left to the verifier, which already knows every rule; the builder checks
 * only what the IR cannot express or what would be lost by the time the
 * verifier runs (arity of the operation table, which arguments are functions,
 * literal ranges, names that could not be printed back as text).
 */
#include "builder_impl.h"
#include "lex.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- misuse and memory ---- */

void bld_fail(ac_builder *b, const char *fmt, ...) {
  if (b->failed)
    return;
  b->failed = true;
  b->fail_status = AC_ERR_INVALID;
  b->fail_loc = b->loc;
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  b->fail_msg = ac_strdup(b->ctx, buf); /* NULL: reported as AC_ERR_NOMEM */
}

void bld_nomem(ac_builder *b) {
  if (!b->failed) {
    b->failed = true;
    b->fail_status = AC_ERR_NOMEM;
  }
}

/* Appends a node. Children must be valid ids (callers check). */
uint32_t bld_node(ac_builder *b, ir_op op, uint32_t nkids, const uint32_t *kids) {
  if (b->nnodes >= UINT32_MAX - 1 || b->nkids + nkids >= UINT32_MAX - 1 ||
      !ac_grow(b->ctx, (void **)&b->nodes, &b->capnodes, b->nnodes + 1, sizeof *b->nodes) ||
      !ac_grow(b->ctx, (void **)&b->kids, &b->capkids, b->nkids + nkids, sizeof *b->kids)) {
    bld_nomem(b);
    return 0;
  }
  uint32_t depth = 0;
  for (uint32_t i = 0; i < nkids; i++)
    if (b->nodes[kids[i]].depth > depth)
      depth = b->nodes[kids[i]].depth;
  if (depth >= BLD_MAX_DEPTH) {
    bld_fail(b, "expression nested too deeply (more than %u levels)", BLD_MAX_DEPTH);
    return 0;
  }
  uint32_t v = (uint32_t)b->nnodes++;
  bnode *n = &b->nodes[v];
  memset(n, 0, sizeof *n);
  n->op = (uint16_t)op;
  n->nkids = nkids;
  n->kids = (uint32_t)b->nkids;
  n->depth = depth + 1;
  n->loc = b->loc;
  if (nkids)
    memcpy(b->kids + b->nkids, kids, nkids * sizeof *kids);
  b->nkids += nkids;
  return v;
}

static bool is_fn_value(const ac_builder *b, uint32_t v) {
  return b->nodes[v].op == IR_LAM || b->nodes[v].op == IR_FNREF;
}

/* Checks argument `i` (0-based) of constructor `api`. want_fn: the position
 * expects a function (a lambda or a function reference); elsewhere a function
 * is refused, since only operations take functions. */
static bool arg_ok(ac_builder *b, const char *api, size_t i, uint32_t v, bool want_fn) {
  if (v == 0 || v >= b->nnodes) {
    bld_fail(b, "%s: argument %zu is not a valid value", api, i + 1);
    return false;
  }
  if (want_fn && !is_fn_value(b, v)) {
    bld_fail(b, "%s: argument %zu must be a lambda or a function reference", api, i + 1);
    return false;
  }
  if (!want_fn && is_fn_value(b, v)) {
    bld_fail(b,
             "%s: argument %zu is a function; functions may only be passed to operations "
             "that take one (map, fold, ...)",
             api, i + 1);
    return false;
  }
  return true;
}

/* ---- names ---- */

/* True if s can be written back as a name in the text format (the lexer's
 * rule: an identifier that is not a keyword). Function names may not be
 * builtin or scalar type names either: `name(...)` always means the builtin
 * or the conversion. */
static bool valid_name(const char *s, bool fn_name) {
  size_t n = strlen(s);
  if (!lex_is_plain_ident(s, n))
    return false;
  if (fn_name) {
    if (ir_op_by_call_name(s, n) != IR_NUM_OPS)
      return false;
    for (int k = 0; k <= (int)AC_PROB; k++)
      if (strcmp(s, ac_scalar_name((ac_scalar)k)) == 0)
        return false;
  }
  return true;
}

/* Interns an optional name; false (misuse recorded) if it cannot be used. */
static bool intern_name(ac_builder *b, const char *api, const char *s, ir_sym *out) {
  *out = IR_SYM_NONE;
  if (!s)
    return true;
  if (!valid_name(s, false)) {
    bld_fail(b, "%s: '%s' is not a valid name (an identifier that is not a keyword)", api, s);
    return false;
  }
  *out = ir_sym_intern(b->ctx, s, strlen(s));
  if (*out == IR_SYM_NONE) {
    bld_nomem(b);
    return false;
  }
  return true;
}

/* ---- types ---- */

/* A type usable for values (parameters, results): scalars, arrays and
 * tuples of them. ir_ty_info cannot tell an unknown id from unit, so unit is
 * compared by id. */
static bool value_type_ok(ac_context *ctx, ir_type t) {
  if (t == IR_TY_NONE)
    return false;
  ir_typeinfo ti = ir_ty_info(ctx, t);
  if (ti.kind == TK_SCALAR || ti.kind == TK_ARRAY)
    return true;
  if (ti.kind != TK_TUPLE)
    return false;
  if (ti.n == 0)
    return t == ir_ty_unit(ctx);
  uint32_t n = ti.n;
  for (uint32_t i = 0; i < n; i++) {
    ir_type f = ir_ty_info(ctx, t).fields[i]; /* re-read: interning may move the table */
    if (!value_type_ok(ctx, f))
      return false;
  }
  return true;
}

ac_type ac_type_scalar(ac_context *ctx, ac_scalar s) {
  return (ac_type){ir_ty_scalar(ctx, s)};
}

ac_type ac_type_tuple(ac_context *ctx, size_t n, const ac_type *fields) {
  if (n > UINT32_MAX || (n > 0 && !fields))
    return (ac_type){0};
  if (n == 1)
    return value_type_ok(ctx, fields[0].id) ? fields[0] : (ac_type){0};
  ir_type small[8];
  ir_type *fs = n <= 8 ? small : ac_alloc(ctx, n * sizeof *fs);
  if (!fs)
    return (ac_type){0};
  bool ok = true;
  for (size_t i = 0; i < n; i++) {
    fs[i] = fields[i].id;
    ok = ok && value_type_ok(ctx, fs[i]);
  }
  ir_type t = ok ? ir_ty_tuple(ctx, (uint32_t)n, fs) : IR_TY_NONE;
  if (fs != small)
    ac_free(ctx, fs);
  return (ac_type){t};
}

ac_type ac_type_array(ac_context *ctx, ac_type elem, unsigned rank) {
  if (rank == 0 || !ir_ty_is_element(ctx, elem.id))
    return (ac_type){0};
  return (ac_type){ir_ty_array(ctx, elem.id, rank)};
}

char *ac_type_print(ac_context *ctx, ac_type t) {
  ir_buf buf;
  ir_buf_init(&buf, ctx);
  ir_ty_print(ctx, t.id, &buf);
  if (buf.oom) {
    ir_buf_free(&buf);
    return NULL;
  }
  return ir_buf_take(&buf);
}

/* ---- builders ---- */

ac_builder *ac_builder_create(ac_module *m) {
  if (!m)
    return NULL;
  ac_builder *b = ac_alloc(m->ctx, sizeof *b);
  if (!b)
    return NULL;
  memset(b, 0, sizeof *b);
  b->m = m;
  b->ctx = m->ctx;
  /* index 0 of nodes, binders and functions is the invalid id */
  if (!ac_grow(b->ctx, (void **)&b->nodes, &b->capnodes, 1, sizeof *b->nodes) ||
      !ac_grow(b->ctx, (void **)&b->binders, &b->capbinders, 1, sizeof *b->binders) ||
      !ac_grow(b->ctx, (void **)&b->funcs, &b->capfuncs, 1, sizeof *b->funcs)) {
    ac_builder_destroy(b);
    return NULL;
  }
  memset(&b->nodes[0], 0, sizeof b->nodes[0]);
  memset(&b->binders[0], 0, sizeof b->binders[0]);
  memset(&b->funcs[0], 0, sizeof b->funcs[0]);
  b->nnodes = b->nbinders = b->nfuncs = 1;
  return b;
}

void ac_builder_destroy(ac_builder *b) {
  if (!b)
    return;
  ac_context *ctx = b->ctx;
  ac_free(ctx, b->nodes);
  ac_free(ctx, b->kids);
  ac_free(ctx, b->ints);
  ac_free(ctx, b->binders);
  ac_free(ctx, b->funcs);
  ac_free(ctx, b->deps);
  ac_free(ctx, b->fail_msg);
  ac_free(ctx, b);
}

void ac_builder_set_location(ac_builder *b, unsigned line, unsigned column) {
  if (b)
    b->loc = (ir_loc){line, column};
}

/* ---- functions ---- */

enum { DECL_FN, DECL_EXTERN, DECL_KERNEL, DECL_INFER };

static bool kernel_result_ok(ac_context *ctx, ir_type t) {
  ir_typeinfo ti = ir_ty_info(ctx, t);
  if (ti.kind != TK_TUPLE)
    return ir_ty_is_kernel_value(ctx, t, false);
  for (uint32_t i = 0; i < ti.n; i++)
    if (!ir_ty_is_kernel_value(ctx, ti.fields[i], false))
      return false;
  return ti.n >= 2;
}

/* A function (DECL_FN; DECL_INFER: its result inferred from the body when
 * it is finished, `-> _` in docs/language.md §3), an extern function
 * (DECL_EXTERN, §3.3: scalar parameters and result, no body, no parameter
 * values) or an extern kernel (DECL_KERNEL, §3.4: parameter values for its
 * size expressions, finished by ac_kernel_finish). `api` names the public
 * entry point in messages. */
static ac_fn declare(ac_builder *b, const char *api, int kind, const char *name, size_t nparams,
                     const ac_type *param_types, const char *const *param_names, ac_type result) {
  bool ext = kind == DECL_EXTERN || kind == DECL_KERNEL;
  if (!b)
    return (ac_fn){0};
  if (!name || !valid_name(name, true)) {
    bld_fail(b, "%s: '%s' is not a valid function name", api, name ? name : "(null)");
    return (ac_fn){0};
  }
  ir_sym fname = ir_sym_intern(b->ctx, name, strlen(name));
  if (fname == IR_SYM_NONE) {
    bld_nomem(b);
    return (ac_fn){0};
  }
  if (ir_func_find(b->m, fname) >= 0) {
    bld_fail(b, "%s: function '%s' is already defined", api, name);
    return (ac_fn){0};
  }
  if (nparams > 0xffff || (nparams > 0 && !param_types)) {
    bld_fail(b, "%s: invalid parameter list of '%s'", api, name);
    return (ac_fn){0};
  }
  if (kind != DECL_INFER && !value_type_ok(b->ctx, result.id)) {
    bld_fail(b, "%s: invalid result type of '%s'", api, name);
    return (ac_fn){0};
  }
  /* Verifying a finished function turns prob into f64 logs (§6.7) in the
   * whole module, while functions may still be finished later against the
   * declared types: a signature must mean the same before and after. */
  if (kind != DECL_INFER && ir_ty_has_prob(b->ctx, result.id)) {
    bld_fail(b,
             "%s: the result of '%s' mentions prob: a signature holds a probability as its "
             "log, an f64 (convert with AC_OP_LOG and AC_OP_FROM_LOG)",
             api, name);
    return (ac_fn){0};
  }
  if (kind == DECL_EXTERN && !ir_ty_is_scalar(b->ctx, result.id, NULL)) {
    bld_fail(b, "%s: the result of extern function '%s' must be a scalar", api, name);
    return (ac_fn){0};
  }
  if (kind == DECL_KERNEL && !kernel_result_ok(b->ctx, result.id)) {
    bld_fail(b, "%s: the result of extern kernel '%s' must be an array of scalars or a tuple of them",
             api, name);
    return (ac_fn){0};
  }
  if (!ac_grow(b->ctx, (void **)&b->funcs, &b->capfuncs, b->nfuncs + 1, sizeof *b->funcs)) {
    bld_nomem(b);
    return (ac_fn){0};
  }
  ir_type *pt = ac_alloc(b->ctx, (nparams + 1) * sizeof *pt);
  ir_sym *pn = ac_alloc(b->ctx, (nparams + 1) * sizeof *pn);
  uint32_t param0 = (uint32_t)b->nnodes;
  bool ok = pt && pn;
  if (!ok)
    bld_nomem(b);
  for (size_t i = 0; ok && i < nparams; i++) {
    pt[i] = param_types[i].id;
    if (!value_type_ok(b->ctx, pt[i])) {
      bld_fail(b, "%s: invalid type of parameter %zu of '%s'", api, i + 1, name);
      ok = false;
      break;
    }
    if (ir_ty_has_prob(b->ctx, pt[i])) {
      bld_fail(b,
               "%s: parameter %zu of '%s' mentions prob: a signature holds a probability as "
               "its log, an f64 (convert with AC_OP_LOG and AC_OP_FROM_LOG)",
               api, i + 1, name);
      ok = false;
      break;
    }
    if (kind == DECL_EXTERN && !ir_ty_is_scalar(b->ctx, pt[i], NULL)) {
      bld_fail(b, "%s: parameter %zu of extern function '%s' must be a scalar", api, i + 1, name);
      ok = false;
      break;
    }
    if (kind == DECL_KERNEL && !ir_ty_is_kernel_value(b->ctx, pt[i], true)) {
      bld_fail(b, "%s: parameter %zu of extern kernel '%s' must be a scalar or an array of scalars",
               api, i + 1, name);
      ok = false;
      break;
    }
    char auto_name[32];
    const char *pname = param_names && param_names[i] ? param_names[i] : NULL;
    if (!pname) {
      snprintf(auto_name, sizeof auto_name, "p%zu", i);
      pname = auto_name;
    }
    ok = intern_name(b, api, pname, &pn[i]);
    for (size_t j = 0; ok && j < i; j++)
      if (pn[j] == pn[i]) {
        bld_fail(b, "%s: parameter '%s' of '%s' is declared twice", api, pname, name);
        ok = false;
      }
  }
  int32_t index = -1;
  if (ok) {
    index = ir_func_add(b->m, fname, b->loc, (uint32_t)nparams, pt, pn, result.id);
    if (index < 0)
      bld_nomem(b);
    else {
      b->m->funcs[index].is_extern = ext;
      b->m->funcs[index].is_kernel = kind == DECL_KERNEL;
      b->m->funcs[index].infer_result = kind == DECL_INFER;
    }
  }
  /* The parameters are values of the builder, made once (an extern function
   * has no body to use them in; a kernel's size expressions use them). */
  for (size_t i = 0; index >= 0 && kind != DECL_EXTERN && i < nparams; i++) {
    uint32_t v = bld_node(b, IR_VAR, 0, NULL);
    if (!v) {
      index = -1;
      break;
    }
    bnode *n = bld_get(b, v);
    n->varkind = BV_FNPARAM;
    n->attr = index;
    n->aux = (uint32_t)i;
    n->name = pn[i];
  }
  ac_free(b->ctx, pt);
  ac_free(b->ctx, pn);
  if (index < 0)
    return (ac_fn){0};
  bfunc *f = &b->funcs[b->nfuncs];
  f->index = index;
  f->param0 = kind == DECL_EXTERN ? 0 : param0;
  f->nparams = (uint32_t)nparams;
  return (ac_fn){(uint32_t)b->nfuncs++};
}

ac_fn ac_fn_declare(ac_builder *b, const char *name, size_t nparams, const ac_type *param_types,
                    const char *const *param_names, ac_type result) {
  return declare(b, "ac_fn_declare", DECL_FN, name, nparams, param_types, param_names, result);
}

ac_fn ac_fn_declare_inferred(ac_builder *b, const char *name, size_t nparams,
                             const ac_type *param_types, const char *const *param_names) {
  return declare(b, "ac_fn_declare_inferred", DECL_INFER, name, nparams, param_types, param_names,
                 (ac_type){0});
}

ac_fn ac_extern_declare(ac_builder *b, const char *name, size_t nparams, const ac_type *param_types,
                        const char *const *param_names, ac_type result) {
  return declare(b, "ac_extern_declare", DECL_EXTERN, name, nparams, param_types, param_names,
                 result);
}

ac_fn ac_kernel_declare(ac_builder *b, const char *name, size_t nparams, const ac_type *param_types,
                        const char *const *param_names, ac_type result) {
  return declare(b, "ac_kernel_declare", DECL_KERNEL, name, nparams, param_types, param_names,
                 result);
}

static bfunc *get_fn(ac_builder *b, const char *api, ac_fn f) {
  if (f.id == 0 || f.id >= b->nfuncs) {
    bld_fail(b, "%s: not a function of this builder", api);
    return NULL;
  }
  return &b->funcs[f.id];
}

ac_value ac_fn_param(ac_builder *b, ac_fn f, size_t i) {
  if (!b)
    return (ac_value){0};
  bfunc *fn = get_fn(b, "ac_fn_param", f);
  if (!fn)
    return (ac_value){0};
  if (b->m->funcs[fn->index].is_extern && !b->m->funcs[fn->index].is_kernel) {
    bld_fail(b, "ac_fn_param: '%s' is an extern function: it has no body to use parameters in",
             ir_sym_str(b->ctx, b->m->funcs[fn->index].name));
    return (ac_value){0};
  }
  if (i >= fn->nparams) {
    bld_fail(b, "ac_fn_param: function '%s' has no parameter %zu",
             ir_sym_str(b->ctx, b->m->funcs[fn->index].name), i);
    return (ac_value){0};
  }
  return (ac_value){fn->param0 + (uint32_t)i};
}

ac_status ac_fn_finish(ac_builder *b, ac_fn f, ac_value body, ac_error **err) {
  if (err)
    *err = NULL;
  if (!b)
    return AC_ERR_INVALID;
  if (b->failed) {
    if (b->fail_status == AC_ERR_NOMEM || !b->fail_msg)
      return ir_report(err, NULL, AC_ERR_NOMEM);
    return ir_report(err, ir_error(b->ctx, b->fail_status, b->m, b->fail_loc, "%s", b->fail_msg),
                     b->fail_status);
  }
  if (f.id == 0 || f.id >= b->nfuncs)
    return ir_report(err,
                     ir_error(b->ctx, AC_ERR_INVALID, b->m, b->loc,
                              "ac_fn_finish: not a function of this builder"),
                     AC_ERR_INVALID);
  const bfunc *fn = &b->funcs[f.id];
  ir_func *irf = &b->m->funcs[fn->index];
  const char *fname = ir_sym_str(b->ctx, irf->name);
  if (irf->is_extern)
    return ir_report(err,
                     ir_error(b->ctx, AC_ERR_INVALID, b->m, b->loc,
                              irf->is_kernel
                                  ? "ac_fn_finish: '%s' is an extern kernel: finish it with "
                                    "ac_kernel_finish"
                                  : "ac_fn_finish: '%s' is an extern function: the host implements it",
                              fname),
                     AC_ERR_INVALID);
  if (irf->body != IR_NONE)
    return ir_report(err,
                     ir_error(b->ctx, AC_ERR_INVALID, b->m, b->loc,
                              "ac_fn_finish: function '%s' is already finished", fname),
                     AC_ERR_INVALID);
  if (body.id == 0 || body.id >= b->nnodes || is_fn_value(b, body.id))
    return ir_report(err,
                     ir_error(b->ctx, AC_ERR_INVALID, b->m, b->loc,
                              "ac_fn_finish: the body of '%s' is not a valid value%s", fname,
                              body.id && body.id < b->nnodes ? " (it is a function)" : ""),
                     AC_ERR_INVALID);
  ac_status st = bld_convert(b, fn, body.id, err);
  if (st != AC_OK)
    return st;
  st = ir_check_module(b->m, err);
  if (st == AC_OK && b->m->oom)
    st = ir_report(err, NULL, AC_ERR_NOMEM);
  if (st != AC_OK) { /* not finished: the module stays valid */
    b->m->funcs[fn->index].body = IR_NONE;
    if (b->m->funcs[fn->index].infer_result)
      b->m->funcs[fn->index].result = IR_TY_NONE; /* inferred again when it is finished */
  }
  return st;
}

/* The builder's first failure as an error (ac_fn_finish's convention). */
static ac_status bld_status(ac_builder *b, ac_error **err) {
  if (b->fail_status == AC_ERR_NOMEM || !b->fail_msg)
    return ir_report(err, NULL, AC_ERR_NOMEM);
  return ir_report(err, ir_error(b->ctx, b->fail_status, b->m, b->fail_loc, "%s", b->fail_msg),
                   b->fail_status);
}

static ac_status kernel_fail(ac_builder *b, ac_error **err, const char *what, const char *name) {
  return ir_report(err,
                   ir_error(b->ctx, AC_ERR_INVALID, b->m, b->loc, "ac_kernel_finish: %s of '%s'",
                            what, name),
                   AC_ERR_INVALID);
}

/* Converts size expression v of kernel fn to IR (through the body slot,
 * which a kernel never keeps). */
static ac_status kernel_expr(ac_builder *b, const bfunc *fn, ac_value v, ir_ref *out,
                             ac_error **err) {
  ir_func *irf = &b->m->funcs[fn->index];
  if (v.id == 0 || v.id >= b->nnodes || is_fn_value(b, v.id))
    return kernel_fail(b, err, "a size expression that is not a valid value",
                       ir_sym_str(b->ctx, irf->name));
  ac_status st = bld_convert(b, fn, v.id, err);
  irf = &b->m->funcs[fn->index];
  *out = irf->body;
  irf->body = IR_NONE;
  return st;
}

static ir_sym kernel_sym(ac_builder *b, const char *s) {
  ir_sym r = s && *s ? ir_sym_intern(b->ctx, s, strlen(s)) : IR_SYM_NONE;
  if (s && *s && !r)
    bld_nomem(b);
  return r;
}

ac_status ac_kernel_finish(ac_builder *b, ac_fn k, const ac_kernel_info *info, ac_error **err) {
  if (err)
    *err = NULL;
  if (!b)
    return AC_ERR_INVALID;
  if (b->failed)
    return bld_status(b, err);
  if (k.id == 0 || k.id >= b->nfuncs)
    return ir_report(err,
                     ir_error(b->ctx, AC_ERR_INVALID, b->m, b->loc,
                              "ac_kernel_finish: not a function of this builder"),
                     AC_ERR_INVALID);
  const bfunc *fn = &b->funcs[k.id];
  ir_func *irf = &b->m->funcs[fn->index];
  const char *name = ir_sym_str(b->ctx, irf->name);
  if (!irf->is_kernel)
    return kernel_fail(b, err, "not an extern kernel (ac_kernel_declare)", name);
  if (irf->nkext)
    return kernel_fail(b, err, "already finished", name);
  if (!info || info->size < sizeof *info)
    return kernel_fail(b, err, "no ac_kernel_info, or one of an older size", name);
  uint32_t want = 0;
  for (uint32_t i = 0, n = ir_ty_num_leaves(b->ctx, irf->result); i < n; i++) {
    ir_type t = ir_ty_info(b->ctx, irf->result).kind == TK_TUPLE
                    ? ir_ty_info(b->ctx, irf->result).fields[i]
                    : irf->result;
    want += ir_ty_info(b->ctx, t).rank;
  }
  if (info->nextents != want || (want && !info->extents))
    return kernel_fail(b, err, "the number of extents does not match the result", name);
  bool has_ptx = info->ptx || info->ptx_file;
  if ((info->ptx && info->ptx_file) || (has_ptx && !info->threads.id) ||
      (!has_ptx && (info->threads.id || info->block || info->entry)))
    return kernel_fail(b, err,
                       "a bad launch rule (give ptx or ptx_file, not both, with threads; block "
                       "and entry only with them)",
                       name);
  if (info->block > 1024)
    return kernel_fail(b, err, "more than 1024 threads per block", name);
  ir_ref *refs = ac_alloc(b->ctx, (want + 1) * sizeof *refs);
  if (!refs)
    return ir_report(err, NULL, AC_ERR_NOMEM);
  ac_status st = AC_OK;
  for (uint32_t j = 0; j < want && st == AC_OK; j++)
    st = kernel_expr(b, fn, info->extents[j], &refs[j], err);
  ir_ref threads = IR_NONE;
  if (st == AC_OK && has_ptx)
    st = kernel_expr(b, fn, info->threads, &threads, err);
  int64_t *ints = st == AC_OK ? ac_alloc(b->ctx, (want + 1) * sizeof *ints) : NULL;
  if (st == AC_OK && !ints)
    st = ir_report(err, NULL, AC_ERR_NOMEM);
  for (uint32_t j = 0; st == AC_OK && j < want; j++)
    ints[j] = refs[j];
  uint32_t kext = st == AC_OK ? ir_ints_push(b->m, want, ints) : 0;
  ac_free(b->ctx, ints);
  ac_free(b->ctx, refs);
  ir_sym ptx = kernel_sym(b, info->ptx ? info->ptx : info->ptx_file);
  ir_sym entry = kernel_sym(b, info->entry), host = kernel_sym(b, info->host);
  if (st == AC_OK && (b->m->oom || b->failed))
    st = b->failed ? bld_status(b, err) : ir_report(err, NULL, AC_ERR_NOMEM);
  if (st != AC_OK)
    return st;
  irf = &b->m->funcs[fn->index];
  irf->kext = kext;
  irf->nkext = want;
  irf->kthreads = threads;
  irf->kblock = has_ptx ? (info->block ? info->block : 256) : 0;
  irf->kptx = ptx;
  irf->kptx_file = info->ptx_file != NULL;
  irf->kentry = entry;
  irf->khost = host;
  st = ir_check_module(b->m, err);
  if (st == AC_OK && b->m->oom)
    st = ir_report(err, NULL, AC_ERR_NOMEM);
  if (st != AC_OK) { /* not finished: the module stays valid */
    irf = &b->m->funcs[fn->index];
    irf->nkext = 0;
    irf->kthreads = IR_NONE;
    irf->kptx = irf->kentry = irf->khost = IR_SYM_NONE;
  }
  return st;
}

ac_value ac_name(ac_builder *b, ac_value v, const char *name) {
  if (!b || !arg_ok(b, "ac_name", 0, v.id, false))
    return (ac_value){0};
  ir_sym s;
  if (!name || !intern_name(b, "ac_name", name, &s)) {
    if (!name)
      bld_fail(b, "ac_name: the name is NULL");
    return (ac_value){0};
  }
  bnode *n = bld_get(b, v.id);
  /* Parameters and literals are never let-bound; their names stay theirs. */
  if (n->op != IR_VAR && n->op != IR_LIT)
    n->name = s;
  return v;
}

/* ---- literals ---- */

static ac_value lit(ac_builder *b, ac_scalar s, ir_litval v) {
  uint32_t id = bld_node(b, IR_LIT, 0, NULL);
  if (!id)
    return (ac_value){0};
  bnode *n = bld_get(b, id);
  n->type = ir_ty_scalar(b->ctx, s);
  n->flags = IR_F_SUFFIX;
  n->lit = v;
  if (n->type == IR_TY_NONE) {
    bld_nomem(b);
    return (ac_value){0};
  }
  return (ac_value){id};
}

/* f32 values are stored rounded to float precision. A finite double beyond
 * the largest float by at least half an ulp would become infinity: it does not
 * fit (as `1e39f32` does not in the text). */
static bool round_float(ac_scalar s, double x, double *out) {
  if (s == AC_F64 || isnan(x) || isinf(x)) {
    *out = x;
    return true;
  }
  double ax = fabs(x);
  if (ax >= 0x1.ffffffp+127)
    return false;
  *out = ax > FLT_MAX ? copysign((double)FLT_MAX, x) : (double)(float)x;
  return true;
}

static bool is_signed_int(ac_scalar s) {
  return s >= AC_I8 && s <= AC_I64;
}
static bool is_unsigned_int(ac_scalar s) {
  return s >= AC_U8 && s <= AC_U64;
}
static bool is_float(ac_scalar s) {
  return s == AC_F32 || s == AC_F64;
}

ac_value ac_lit_bool(ac_builder *b, bool x) {
  if (!b)
    return (ac_value){0};
  return lit(b, AC_BOOL, (ir_litval){.u = x ? 1u : 0u});
}

ac_value ac_lit_int(ac_builder *b, ac_scalar type, int64_t x) {
  if (!b)
    return (ac_value){0};
  if (is_float(type)) {
    double d = 0;
    round_float(type, (double)x, &d); /* every int64 fits f32's range */
    return lit(b, type, (ir_litval){.f = d});
  }
  if (!is_signed_int(type) && !is_unsigned_int(type)) {
    bld_fail(b, "ac_lit_int: the type must be an integer or float kind");
    return (ac_value){0};
  }
  unsigned bits = (unsigned)ac_scalar_size(type) * 8;
  bool fits;
  if (is_signed_int(type))
    fits = bits == 64 || (x >= -((int64_t)1 << (bits - 1)) && x < ((int64_t)1 << (bits - 1)));
  else
    fits = x >= 0 && (bits == 64 || (uint64_t)x < ((uint64_t)1 << bits));
  if (!fits) {
    bld_fail(b, "ac_lit_int: %lld does not fit %s", (long long)x, ac_scalar_name(type));
    return (ac_value){0};
  }
  return lit(b, type, (ir_litval){.i = x});
}

ac_value ac_lit_uint(ac_builder *b, ac_scalar type, uint64_t x) {
  if (!b)
    return (ac_value){0};
  if (is_float(type)) {
    double d = 0;
    round_float(type, (double)x, &d);
    return lit(b, type, (ir_litval){.f = d});
  }
  if (!is_signed_int(type) && !is_unsigned_int(type)) {
    bld_fail(b, "ac_lit_uint: the type must be an integer or float kind");
    return (ac_value){0};
  }
  unsigned bits = (unsigned)ac_scalar_size(type) * 8;
  if (is_signed_int(type))
    bits--;
  if (bits < 64 && x >= ((uint64_t)1 << bits)) {
    bld_fail(b, "ac_lit_uint: %llu does not fit %s", (unsigned long long)x, ac_scalar_name(type));
    return (ac_value){0};
  }
  return lit(b, type, (ir_litval){.u = x});
}

ac_value ac_lit_float(ac_builder *b, ac_scalar type, double x) {
  if (!b)
    return (ac_value){0};
  if (type == AC_PROB) { /* a probability (§6.7): never negative */
    if (x < 0) {
      bld_fail(b, "ac_lit_float: a probability cannot be negative: %g as prob", x);
      return (ac_value){0};
    }
    return lit(b, type, (ir_litval){.f = x});
  }
  if (!is_float(type)) {
    bld_fail(b, "ac_lit_float: the type must be f32, f64 or prob");
    return (ac_value){0};
  }
  double d;
  if (!round_float(type, x, &d)) {
    bld_fail(b, "ac_lit_float: %g does not fit f32", x);
    return (ac_value){0};
  }
  return lit(b, type, (ir_litval){.f = d});
}

/* ---- operations ---- */

/* True if argument i of operation op is a function (in text order). */
static bool fn_slot(ir_op op, size_t i) { return i < 32 && (ir_ops[op].fnargs >> i) & 1; }

/* Which constructor builds the forms that ac_apply does not. */
static const char *own_constructor(ir_op op) {
  switch (op) {
  case IR_VAR:
    return "ac_fn_param or ac_lambda_begin";
  case IR_LIT:
    return "ac_lit_*";
  case IR_PROJ:
    return "ac_proj";
  case IR_LET:
  case IR_LETTUP:
    return "none: lets come from using a value twice";
  case IR_CALL:
    return "ac_call";
  case IR_FNREF:
    return "ac_fn_ref";
  case IR_LAM:
    return "ac_lambda_begin/ac_lambda_end";
  case IR_CAST:
    return "ac_cast";
  case IR_LOOP:
    return "ac_loop";
  case IR_ARRLIT:
    return "ac_array_lit";
  case IR_REC:
    return "ac_rec_begin/ac_rec_end";
  case IR_STENCIL:
    return "ac_stencil";
  default:
    return NULL;
  }
}

/* Checks args[0..n) of an operation and makes the node. */
static uint32_t make_op(ac_builder *b, const char *api, ir_op op, size_t n, const ac_value *args) {
  if (n > 0 && !args) {
    bld_fail(b, "%s: the argument array is NULL", api);
    return 0;
  }
  if (n > UINT32_MAX / 2) {
    bld_fail(b, "%s: too many arguments", api);
    return 0;
  }
  uint32_t small[8];
  uint32_t *kids = n <= 8 ? small : ac_alloc(b->ctx, n * sizeof *kids);
  if (!kids) {
    bld_nomem(b);
    return 0;
  }
  bool ok = true;
  for (size_t i = 0; i < n && ok; i++) {
    ok = arg_ok(b, api, i, args[i].id, fn_slot(op, i));
    kids[i] = args[i].id;
  }
  uint32_t v = ok ? bld_node(b, op, (uint32_t)n, kids) : 0;
  if (kids != small)
    ac_free(b->ctx, kids);
  return v;
}

ac_value ac_apply(ac_builder *b, ac_op aop, size_t n, const ac_value *args) {
  if (!b)
    return (ac_value){0};
  if ((unsigned)aop >= IR_NUM_OPS) {
    bld_fail(b, "ac_apply: %d is not an operation", (int)aop);
    return (ac_value){0};
  }
  ir_op op = (ir_op)aop;
  const ir_opinfo *oi = &ir_ops[op];
  if (op == IR_TUPLE)
    return ac_tuple(b, n, args);
  if (op == IR_IF) {
    if (n != 3 || !args) {
      bld_fail(b, "ac_apply: if takes 3 arguments, not %zu", n);
      return (ac_value){0};
    }
    return ac_if(b, args[0], args[1], args[2]);
  }
  if (op == IR_INDEX) {
    if (n < 2 || !args) {
      bld_fail(b, "ac_apply: indexing takes an array and at least one index");
      return (ac_value){0};
    }
    return ac_index(b, args[0], n - 1, args + 1);
  }
  const char *own = own_constructor(op);
  if (own || oi->syntax == SX_NONE || oi->syntax == SX_SPECIAL) {
    bld_fail(b, "ac_apply: %s has its own constructor (%s)", oi->name, own ? own : "none");
    return (ac_value){0};
  }
  char arity[40] = "";
  if (oi->nkids >= 0 && n != (size_t)oi->nkids)
    snprintf(arity, sizeof arity, "%d argument%s", oi->nkids, oi->nkids == 1 ? "" : "s");
  else if (op == IR_MAP && n < 2)
    snprintf(arity, sizeof arity, "a function and at least one array");
  else if (op == IR_SLICE && n != 3 && n != 4)
    snprintf(arity, sizeof arity, "3 or 4 arguments");
  if (arity[0]) {
    bld_fail(b, "ac_apply: '%s' takes %s, not %zu", oi->spelling, arity, n);
    return (ac_value){0};
  }
  return (ac_value){make_op(b, "ac_apply", op, n, args)};
}

ac_value ac_unary(ac_builder *b, ac_op op, ac_value x) {
  return ac_apply(b, op, 1, &x);
}

ac_value ac_binary(ac_builder *b, ac_op op, ac_value x, ac_value y) {
  ac_value args[2] = {x, y};
  return ac_apply(b, op, 2, args);
}

ac_value ac_tuple(ac_builder *b, size_t n, const ac_value *fields) {
  if (!b)
    return (ac_value){0};
  if (n == 1) { /* there are no 1-tuples: (x) is x */
    if (!fields)
      bld_fail(b, "ac_tuple: the argument array is NULL");
    return fields && arg_ok(b, "ac_tuple", 0, fields[0].id, false) ? fields[0] : (ac_value){0};
  }
  return (ac_value){make_op(b, "ac_tuple", IR_TUPLE, n, fields)};
}

ac_value ac_proj(ac_builder *b, ac_value tuple, unsigned field) {
  if (!b)
    return (ac_value){0};
  uint32_t v = make_op(b, "ac_proj", IR_PROJ, 1, &tuple);
  if (v)
    bld_get(b, v)->attr = field;
  return (ac_value){v};
}

ac_value ac_if(ac_builder *b, ac_value cond, ac_value then_v, ac_value else_v) {
  if (!b)
    return (ac_value){0};
  ac_value args[3] = {cond, then_v, else_v};
  return (ac_value){make_op(b, "ac_if", IR_IF, 3, args)};
}

ac_value ac_cast(ac_builder *b, ac_scalar to, ac_value x) {
  if (!b)
    return (ac_value){0};
  if ((unsigned)to > AC_PROB) {
    bld_fail(b, "ac_cast: %d is not a scalar kind", (int)to);
    return (ac_value){0};
  }
  uint32_t v = make_op(b, "ac_cast", IR_CAST, 1, &x);
  if (v) {
    bld_get(b, v)->type = ir_ty_scalar(b->ctx, to);
    if (bld_get(b, v)->type == IR_TY_NONE) {
      bld_nomem(b);
      return (ac_value){0};
    }
  }
  return (ac_value){v};
}

ac_value ac_call(ac_builder *b, ac_fn f, size_t n, const ac_value *args) {
  if (!b)
    return (ac_value){0};
  bfunc *fn = get_fn(b, "ac_call", f);
  if (!fn)
    return (ac_value){0};
  int32_t index = fn->index;
  if (n != fn->nparams) {
    bld_fail(b, "ac_call: '%s' takes %u arguments, not %zu",
             ir_sym_str(b->ctx, b->m->funcs[index].name), fn->nparams, n);
    return (ac_value){0};
  }
  uint32_t v = make_op(b, "ac_call", IR_CALL, n, args);
  if (v)
    bld_get(b, v)->attr = index;
  return (ac_value){v};
}

ac_value ac_fn_ref(ac_builder *b, ac_fn f) {
  if (!b)
    return (ac_value){0};
  bfunc *fn = get_fn(b, "ac_fn_ref", f);
  if (!fn)
    return (ac_value){0};
  int32_t index = fn->index;
  uint32_t v = bld_node(b, IR_FNREF, 0, NULL);
  if (v)
    bld_get(b, v)->attr = index;
  return (ac_value){v};
}

ac_value ac_index(ac_builder *b, ac_value a, size_t n, const ac_value *idx) {
  if (!b)
    return (ac_value){0};
  if (n == 0 || !idx || n >= UINT32_MAX / 2) {
    bld_fail(b, "ac_index: at least one index is needed");
    return (ac_value){0};
  }
  ac_value small[8];
  ac_value *args = n + 1 <= 8 ? small : ac_alloc(b->ctx, (n + 1) * sizeof *args);
  if (!args) {
    bld_nomem(b);
    return (ac_value){0};
  }
  args[0] = a;
  memcpy(args + 1, idx, n * sizeof *idx);
  uint32_t v = make_op(b, "ac_index", IR_INDEX, n + 1, args);
  if (args != small)
    ac_free(b->ctx, args);
  return (ac_value){v};
}

ac_value ac_array_lit(ac_builder *b, unsigned rank, const int64_t *extents, size_t n,
                      const ac_value *elems) {
  if (!b)
    return (ac_value){0};
  if (rank == 0 || rank > 64 || !extents) {
    bld_fail(b, "ac_array_lit: the rank must be between 1 and 64, with its extents");
    return (ac_value){0};
  }
  uint64_t count = 1;
  for (unsigned i = 0; i < rank; i++) {
    if (extents[i] < 0) {
      bld_fail(b, "ac_array_lit: extent %u is negative", i);
      return (ac_value){0};
    }
    if (count && (uint64_t)extents[i] > UINT32_MAX / count)
      count = UINT64_MAX; /* more elements than could ever be given */
    else
      count *= (uint64_t)extents[i];
  }
  if (count != n) {
    bld_fail(b, "ac_array_lit: the extents give %llu elements, but %zu are given",
             (unsigned long long)count, n);
    return (ac_value){0};
  }
  if (!ac_grow(b->ctx, (void **)&b->ints, &b->capints, b->nints + rank, sizeof *b->ints)) {
    bld_nomem(b);
    return (ac_value){0};
  }
  uint32_t v = make_op(b, "ac_array_lit", IR_ARRLIT, n, elems);
  if (!v)
    return (ac_value){0};
  bnode *node = bld_get(b, v);
  node->attr = rank;
  node->aux = (uint32_t)b->nints;
  memcpy(b->ints + b->nints, extents, rank * sizeof *extents);
  b->nints += rank;
  return (ac_value){v};
}

/* ---- lambdas, loops, stencils, recurrences ---- */

/* Opens a binder with nparams parameter values named from names[0..). */
static uint32_t open_binder(ac_builder *b, const char *api, ir_op op, uint32_t nparams,
                            const char *const *names) {
  ir_sym syms[256];
  for (uint32_t i = 0; i < nparams; i++)
    if (!intern_name(b, api, names ? names[i] : NULL, &syms[i]))
      return 0;
  if (!ac_grow(b->ctx, (void **)&b->binders, &b->capbinders, b->nbinders + 1, sizeof *b->binders)) {
    bld_nomem(b);
    return 0;
  }
  uint32_t id = (uint32_t)b->nbinders;
  uint32_t param0 = (uint32_t)b->nnodes;
  for (uint32_t i = 0; i < nparams; i++) {
    uint32_t v = bld_node(b, IR_VAR, 0, NULL);
    if (!v)
      return 0;
    bnode *n = bld_get(b, v);
    n->varkind = BV_BINDER;
    n->attr = id;
    n->aux = i;
    n->name = syms[i];
  }
  bbinder *bb = &b->binders[b->nbinders++];
  memset(bb, 0, sizeof *bb);
  bb->op = op;
  bb->nparams = nparams;
  bb->param0 = param0;
  return id;
}

/* Closes binder id (of kind op) with node kids[0..n) (the body last). */
static uint32_t close_binder(ac_builder *b, const char *api, ir_op op, uint32_t id, uint32_t nkids,
                             const uint32_t *kids) {
  if (id == 0 || id >= b->nbinders || b->binders[id].op != op) {
    bld_fail(b, "%s: not an open %s of this builder", api, op == IR_LAM ? "lambda" : "rec");
    return 0;
  }
  if (b->binders[id].node) {
    bld_fail(b, "%s: this %s is already closed", api, op == IR_LAM ? "lambda" : "rec");
    return 0;
  }
  if (!arg_ok(b, api, 1, kids[nkids - 1], false))
    return 0;
  uint32_t v = bld_node(b, op, nkids, kids);
  if (!v)
    return 0;
  bld_get(b, v)->attr = id;
  b->binders[id].node = v;
  return v;
}

ac_lambda ac_lambda_begin(ac_builder *b, size_t n, const char *const *names, ac_value *params) {
  if (params)
    for (size_t i = 0; i < n; i++)
      params[i] = (ac_value){0};
  if (!b)
    return (ac_lambda){0};
  if (n == 0 || n > 256 || !params) {
    bld_fail(b, "ac_lambda_begin: a lambda has 1 to 256 parameters, given in a non-NULL array");
    return (ac_lambda){0};
  }
  uint32_t id = open_binder(b, "ac_lambda_begin", IR_LAM, (uint32_t)n, names);
  if (!id)
    return (ac_lambda){0};
  for (size_t i = 0; i < n; i++)
    params[i] = (ac_value){b->binders[id].param0 + (uint32_t)i};
  return (ac_lambda){id};
}

ac_value ac_lambda_end(ac_builder *b, ac_lambda l, ac_value body) {
  if (!b)
    return (ac_value){0};
  return (ac_value){close_binder(b, "ac_lambda_end", IR_LAM, l.id, 1, &body.id)};
}

/* A lambda of exactly n parameters (loop conditions and steps). */
static bool lambda_of(ac_builder *b, const char *api, size_t i, uint32_t v, size_t n) {
  if (!arg_ok(b, api, i, v, true))
    return false;
  const bnode *node = bld_get(b, v);
  if (node->op != IR_LAM || b->binders[node->attr].nparams != n) {
    bld_fail(b, "%s: argument %zu must be a lambda of %zu parameters", api, i + 1, n);
    return false;
  }
  return true;
}

ac_value ac_loop(ac_builder *b, size_t n, const ac_value *inits, ac_value cond, ac_value step) {
  if (!b)
    return (ac_value){0};
  if (n == 0 || n > 256 || !inits) {
    bld_fail(b, "ac_loop: a loop has 1 to 256 state variables, given in a non-NULL array");
    return (ac_value){0};
  }
  uint32_t kids[258];
  for (size_t i = 0; i < n; i++) {
    if (!arg_ok(b, "ac_loop", i, inits[i].id, false))
      return (ac_value){0};
    kids[i] = inits[i].id;
  }
  if (!lambda_of(b, "ac_loop", n, cond.id, n) || !lambda_of(b, "ac_loop", n + 1, step.id, n))
    return (ac_value){0};
  kids[n] = cond.id;
  kids[n + 1] = step.id;
  return (ac_value){bld_node(b, IR_LOOP, (uint32_t)n + 2, kids)};
}

ac_value ac_stencil(ac_builder *b, ac_value f, ac_boundary boundary, ac_value value, ac_value a) {
  if (!b)
    return (ac_value){0};
  if ((unsigned)boundary > AC_BOUNDARY_CONST) {
    bld_fail(b, "ac_stencil: %d is not a boundary kind", (int)boundary);
    return (ac_value){0};
  }
  if (!arg_ok(b, "ac_stencil", 0, f.id, true) || !arg_ok(b, "ac_stencil", 3, a.id, false))
    return (ac_value){0};
  uint32_t kids[3] = {f.id, a.id, value.id};
  uint32_t nk = 2;
  if (boundary == AC_BOUNDARY_CONST) {
    if (!arg_ok(b, "ac_stencil", 2, value.id, false))
      return (ac_value){0};
    nk = 3;
  }
  uint32_t v = bld_node(b, IR_STENCIL, nk, kids);
  if (v)
    bld_get(b, v)->attr = boundary;
  return (ac_value){v};
}

ac_rec ac_rec_begin(ac_builder *b, size_t ndims, const ac_value *lo, const ac_value *hi,
                    ac_type elem, const char *const *names, ac_value *self, ac_value *idx) {
  if (self)
    *self = (ac_value){0};
  if (idx)
    for (size_t i = 0; i < ndims; i++)
      idx[i] = (ac_value){0};
  if (!b)
    return (ac_rec){0};
  if (ndims == 0 || ndims > 64 || !lo || !hi || !self || !idx) {
    bld_fail(b, "ac_rec_begin: a rec has 1 to 64 dimensions, with bounds and result arrays");
    return (ac_rec){0};
  }
  for (size_t i = 0; i < ndims; i++)
    if (!arg_ok(b, "ac_rec_begin", 1, lo[i].id, false) ||
        !arg_ok(b, "ac_rec_begin", 2, hi[i].id, false))
      return (ac_rec){0};
  if (!ir_ty_is_element(b->ctx, elem.id)) {
    bld_fail(b, "ac_rec_begin: the element type must be a scalar or a tuple of scalars");
    return (ac_rec){0};
  }
  if (!ac_grow(b->ctx, (void **)&b->kids, &b->capkids, b->nkids + 2 * ndims, sizeof *b->kids)) {
    bld_nomem(b);
    return (ac_rec){0};
  }
  uint32_t bounds = (uint32_t)b->nkids;
  for (size_t i = 0; i < ndims; i++) {
    b->kids[b->nkids++] = lo[i].id;
    b->kids[b->nkids++] = hi[i].id;
  }
  uint32_t id = open_binder(b, "ac_rec_begin", IR_REC, (uint32_t)ndims + 1, names);
  if (!id)
    return (ac_rec){0};
  bbinder *bb = &b->binders[id];
  bb->named = names && names[0];
  bb->elem = elem.id;
  bb->bounds = bounds;
  *self = (ac_value){bb->param0};
  for (size_t i = 0; i < ndims; i++)
    idx[i] = (ac_value){bb->param0 + 1 + (uint32_t)i};
  return (ac_rec){id};
}

void ac_rec_schedule(ac_builder *b, ac_rec r, const int64_t *a) {
  if (!b)
    return;
  if (r.id == 0 || r.id >= b->nbinders || b->binders[r.id].op != IR_REC ||
      b->binders[r.id].node != 0) {
    bld_fail(b, "ac_rec_schedule: not an open rec of this builder");
    return;
  }
  if (!a) {
    bld_fail(b, "ac_rec_schedule: no coefficients");
    return;
  }
  uint32_t n = b->binders[r.id].nparams - 1;
  if (!ac_grow(b->ctx, (void **)&b->ints, &b->capints, b->nints + n, sizeof *b->ints)) {
    bld_nomem(b);
    return;
  }
  b->binders[r.id].has_sched = true;
  b->binders[r.id].sched = (uint32_t)b->nints;
  memcpy(b->ints + b->nints, a, n * sizeof *a);
  b->nints += n;
}

ac_value ac_rec_end(ac_builder *b, ac_rec r, ac_value body) {
  if (!b)
    return (ac_value){0};
  if (r.id == 0 || r.id >= b->nbinders || b->binders[r.id].op != IR_REC) {
    bld_fail(b, "ac_rec_end: not an open rec of this builder");
    return (ac_value){0};
  }
  uint32_t ndims = b->binders[r.id].nparams - 1;
  uint32_t kids[129];
  memcpy(kids, b->kids + b->binders[r.id].bounds, 2 * ndims * sizeof *kids);
  kids[2 * ndims] = body.id;
  uint32_t v = close_binder(b, "ac_rec_end", IR_REC, r.id, 2 * ndims + 1, kids);
  if (!v)
    return (ac_value){0};
  bnode *n = bld_get(b, v);
  n->type = ir_ty_array(b->ctx, b->binders[r.id].elem, ndims);
  if (n->type == IR_TY_NONE) {
    bld_nomem(b);
    return (ac_value){0};
  }
  return (ac_value){v};
}
