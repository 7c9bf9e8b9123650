/* lib/codegen/expr.c: element code, the value of an IR expression as LLVM IR.
 *
 * cg_expr walks a verified expression in a cg_fn's de Bruijn environment and
 * yields its FLATTENED value (cg.h): the same leaves, in the same order, as
 * the reference interpreter keeps on its stack (lib/interp/interp.c), and it
 * follows the interpreter form by form, so compiled code computes the same
 * values and fails at the same node with the same message:
 *   - tuples are free: a TUPLE concatenates leaves, PROJ and LETTUP take
 *     views of them; variables are environment entries, never copied;
 *   - IF runs only the taken branch (its own blocks, a phi per leaf at the
 *     join); && and || run their right operand only when needed. Where the
 *     code that would be skipped is cheap and cannot fail (a few scalar
 *     operators on variables and literals), both sides are computed and a
 *     select picks the result instead: the outcome is the same, and
 *     straight-line code is what the loop vectoriser wants;
 *   - calls of top-level functions are inlined (the language has no
 *     recursion and the call graph is acyclic); extern functions are called
 *     directly at the address ac_function_create resolved into their ir_func;
 *   - the scalar loop keeps its state in cg_var allocas (mem2reg makes
 *     registers of them) and, when its body can fail, asks ac_rt_failed
 *     every EX_POLL iterations, so a loop whose exit depends on a failed
 *     read cannot spin forever;
 *   - INDEX reads through cg_read with bounds checks (a compare and a branch
 *     to a cold block in cg.c), LEN and SHAPE are the first leaf's extents
 *     after the interpreter's same-shape check on tuples of arrays;
 *   - array operations and array literals go to cg_array_op (seq_*.c).
 * Array values from branches or loop states that are only readable through
 * a callback (CL_FUNC) are made manifest in temporary memory first, since a
 * join or a loop-carried slot can only hold data pointers and extents.
 */
#include "codegen/cg.h"

#include <stdlib.h> /* bsearch */
#include <stdio.h>
#include <string.h>

/* Nesting of cg_expr calls (inlined calls included) before giving up: the
 * parser bounds the nesting within one function (256 levels), so this only
 * stops long chains of calls from exhausting the C stack. */
#define EX_MAX_DEPTH 5000u
/* Size bound (in nodes) of a subexpression computed speculatively. */
#define EX_CHEAP_NODES 12
/* A scalar loop that can fail polls for failure every EX_POLL iterations
 * (a power of two). */
#define EX_POLL 1024u

static const ir_node *ex_node(const cg_fn *f, ir_ref e) {
  return ir_node_get(f->M->m, e);
}

static ac_scalar ex_scalar_of(cg_fn *f, ir_ref e) {
  ac_scalar sc = AC_I64;
  if (!ir_ty_is_scalar(f->M->ctx, ex_node(f, e)->type, &sc))
    cg_error(f->M, AC_ERR_INTERNAL, e, "expected a scalar value");
  return sc;
}

/* ---- values ---- */

static void ex_one_scalar(cg_fn *f, ir_type t, ac_scalar sc, LLVMValueRef v, cg_val *out) {
  out->type = t;
  out->n = 1;
  out->l = cg_new(f->M, sizeof *out->l);
  out->l[0].kind = CL_SCALAR;
  out->l[0].sc = (uint8_t)sc;
  out->l[0].v = v;
}

/* The scalar of a one-leaf value (a dummy after an error). */
static LLVMValueRef ex_scalar(cg_fn *f, const cg_val *v, ir_ref at) {
  if (v->n != 1 || v->l[0].kind != CL_SCALAR || !v->l[0].v) {
    cg_error(f->M, AC_ERR_INTERNAL, at, "expected a scalar value");
    return LLVMConstInt(f->M->t_i1, 0, 0);
  }
  return v->l[0].v;
}

static void ex_zero_leaf(cg_module *M, cg_leaf *l) {
  if (l->kind == CL_SCALAR) {
    l->v = LLVMConstNull(cg_scalar_type(M, (ac_scalar)l->sc));
    return;
  }
  l->kind = CL_ARRAY; /* an empty array: nothing can be read from it */
  l->ro = false;
  l->v = LLVMConstNull(M->t_ptr);
  l->ext = cg_new(M, (l->rank ? l->rank : 1) * sizeof *l->ext);
  for (uint32_t d = 0; d < l->rank; d++)
    l->ext[d] = cg_i64(M, 0);
}

/* A value of type t made of zeros, for carrying on after a compile error. */
static void ex_dummy(cg_fn *f, ir_type t, cg_val *out) {
  cg_val_alloc(f->M, t, out);
  for (uint32_t i = 0; i < out->n; i++)
    ex_zero_leaf(f->M, &out->l[i]);
}

static bool ex_ty_has_array(const ac_context *ctx, ir_type t) {
  ir_typeinfo ti = ir_ty_info(ctx, t);
  if (ti.kind == TK_ARRAY || ti.kind == TK_WINDOW)
    return true;
  if (ti.kind != TK_TUPLE)
    return false;
  for (uint32_t i = 0; i < ti.n; i++)
    if (ex_ty_has_array(ctx, ti.fields[i]))
      return true;
  return false;
}

/* Copies a CL_FUNC array leaf into temporary memory (row-major), giving a
 * manifest leaf that a phi or a stack slot can hold. */
static void ex_manifest(cg_fn *f, const cg_leaf *a, ir_ref at, cg_leaf *out) {
  cg_module *M = f->M;
  if (a->kind != CL_FUNC) {
    *out = *a;
    return;
  }
  if (!a->ext || a->rank == 0) {
    cg_error(M, AC_ERR_UNSUPPORTED, at,
             "a stencil window or a rec's array cannot be a branch or loop value");
    *out = *a;
    ex_zero_leaf(M, out);
    return;
  }
  cg_new_array(f, (ac_scalar)a->sc, a->rank, a->ext, at, out);
  /* the copy's extents: the source's, or zeros if allocation failed */
  LLVMValueRef total = cg_i64(M, 1);
  for (uint32_t d = 0; d < a->rank; d++)
    total = LLVMBuildMul(M->b, total, out->ext[d], "");
  cg_loop loop;
  LLVMValueRef lin = cg_loop_begin(f, &loop, cg_i64(M, 0), total);
  LLVMValueRef *idx = cg_new(M, a->rank * sizeof *idx);
  LLVMValueRef rest = lin;
  for (uint32_t d = a->rank; d-- > 0;) {
    if (d == 0) {
      idx[d] = rest;
      break;
    }
    idx[d] = LLVMBuildURem(M->b, rest, out->ext[d], "");
    rest = LLVMBuildUDiv(M->b, rest, out->ext[d], "");
  }
  cg_store_elem(f, out, lin, cg_read(f, a, idx, false, at));
  cg_loop_end(f, &loop);
}

/* v with every CL_FUNC leaf made manifest (a fresh value when one is). */
static void ex_manifest_val(cg_fn *f, const cg_val *v, ir_ref at, cg_val *out) {
  *out = *v;
  for (uint32_t i = 0; i < v->n; i++)
    if (v->l[i].kind == CL_FUNC) {
      out->l = cg_new(f->M, v->n * sizeof *out->l);
      for (uint32_t j = 0; j < v->n; j++)
        ex_manifest(f, &v->l[j], at, &out->l[j]);
      return;
    }
}

/* ---- speculation ---- */

/* True if e is a small expression that cannot fail, has no effects and
 * needs no blocks, so computing it when it is not needed changes nothing
 * observable. *budget counts nodes down. */
static bool ex_cheap(const cg_fn *f, ir_ref e, int *budget) {
  if (--*budget < 0)
    return false;
  for (uint32_t i = 0; i < f->npre; i++)
    if (f->pre_ref[i] == e)
      return true;
  const ir_node *n = ex_node(f, e);
  ir_op op = (ir_op)n->op;
  switch (op) {
  case IR_VAR:
  case IR_LIT:
    return true;
  case IR_PROJ:
  case IR_CAST:
  case IR_TUPLE:
    break;
  case IR_DIV:
  case IR_REM: /* defined everywhere, but far too slow to compute for nothing */
    return false;
  default:
    switch (ir_ops[op].typing) {
    case TC_ARITH:
    case TC_INT:
    case TC_SHIFT:
    case TC_CMP:
    case TC_ORD:
    case TC_NEG:
    case TC_NOT:
    case TC_BNOT:
    case TC_NUM1:
    case TC_NUM2:
    case TC_FPRED:
      break;
    default:
      return false; /* control flow, calls, reads, libm calls, arrays */
    }
  }
  if (!ir_ty_is_element(f->M->ctx, n->type))
    return false;
  for (uint32_t i = 0; i < n->nkids; i++)
    if (!ex_cheap(f, ir_kid(f->M->m, e, i), budget))
      return false;
  return true;
}

static bool ex_speculate(const cg_fn *f, ir_ref e) {
  int budget = EX_CHEAP_NODES;
  return ex_cheap(f, e, &budget);
}

/* ---- forms ---- */

static void ex_tuple(cg_fn *f, ir_ref e, cg_val *out) {
  const ir_node *n = ex_node(f, e);
  uint32_t nk = n->nkids;
  cg_val *kids = cg_new(f->M, (nk ? nk : 1) * sizeof *kids);
  uint32_t total = 0;
  for (uint32_t i = 0; i < nk; i++) {
    cg_expr(f, ir_kid(f->M->m, e, i), &kids[i]);
    total += kids[i].n;
  }
  out->type = ex_node(f, e)->type;
  out->n = total;
  out->l = cg_new(f->M, (total ? total : 1) * sizeof *out->l);
  uint32_t k = 0;
  for (uint32_t i = 0; i < nk; i++)
    for (uint32_t j = 0; j < kids[i].n; j++)
      out->l[k++] = kids[i].l[j];
}

static void ex_let(cg_fn *f, ir_ref e, cg_val *out) {
  cg_val v;
  cg_expr(f, ir_kid(f->M->m, e, 0), &v);
  cg_env_push(f, &v);
  cg_expr(f, ir_kid(f->M->m, e, 1), out);
  cg_env_pop(f, 1);
}

static void ex_lettup(cg_fn *f, ir_ref e, cg_val *out) {
  cg_val v;
  cg_expr(f, ir_kid(f->M->m, e, 0), &v);
  uint32_t nf = (uint32_t)ex_node(f, e)->attr;
  for (uint32_t i = 0; i < nf; i++) {
    cg_val fld;
    cg_val_field(f->M, &v, i, &fld);
    cg_env_push(f, &fld);
  }
  cg_expr(f, ir_kid(f->M->m, e, 1), out);
  cg_env_pop(f, nf);
}

/* Joins the values a (from block ba) and b (from block bb) in the current
 * block with one phi per scalar, data pointer and extent. */
static void ex_phi(cg_fn *f, ir_type t, const cg_val *a, LLVMBasicBlockRef ba, const cg_val *b,
                   LLVMBasicBlockRef bb, ir_ref at, cg_val *out) {
  cg_module *M = f->M;
  out->type = t;
  out->n = a->n;
  out->l = cg_new(M, (a->n ? a->n : 1) * sizeof *out->l);
  if (a->n != b->n) {
    cg_error(M, AC_ERR_INTERNAL, at, "the branches give values of different shapes");
    ex_dummy(f, t, out);
    return;
  }
  LLVMValueRef vals[2];
  LLVMBasicBlockRef blocks[2] = {ba, bb};
  for (uint32_t i = 0; i < a->n; i++) {
    const cg_leaf *la = &a->l[i], *lb = &b->l[i];
    cg_leaf *o = &out->l[i];
    *o = *la;
    o->ro = la->ro && lb->ro; /* read-only only if both branches' arrays are */
    o->v = LLVMBuildPhi(M->b, LLVMTypeOf(la->v), "");
    vals[0] = la->v;
    vals[1] = lb->v;
    LLVMAddIncoming(o->v, vals, blocks, 2);
    if (la->kind != CL_ARRAY)
      continue;
    o->ext = cg_new(M, (la->rank ? la->rank : 1) * sizeof *o->ext);
    for (uint32_t d = 0; d < la->rank; d++) {
      o->ext[d] = LLVMBuildPhi(M->b, M->t_i64, "");
      vals[0] = la->ext[d];
      vals[1] = lb->ext[d];
      LLVMAddIncoming(o->ext[d], vals, blocks, 2);
    }
  }
}

static void ex_if(cg_fn *f, ir_ref e, cg_val *out) {
  cg_module *M = f->M;
  ir_ref kc = ir_kid(M->m, e, 0), kt = ir_kid(M->m, e, 1), ke = ir_kid(M->m, e, 2);
  ir_type t = ex_node(f, e)->type;
  cg_val c, a, b;
  cg_expr(f, kc, &c);
  LLVMValueRef cond = ex_scalar(f, &c, kc);
  if (ir_ty_is_element(M->ctx, t) && ex_speculate(f, kt) && ex_speculate(f, ke)) {
    cg_expr(f, kt, &a);
    cg_expr(f, ke, &b);
    cg_val_select(f, cond, &a, &b, out);
    return;
  }
  LLVMBasicBlockRef bt = cg_block(f, "if.then"), be = cg_block(f, "if.else"),
                    bj = cg_block(f, "if.join");
  LLVMBuildCondBr(M->b, cond, bt, be);
  LLVMPositionBuilderAtEnd(M->b, bt);
  cg_val ta, tb;
  cg_expr(f, kt, &ta);
  ex_manifest_val(f, &ta, e, &a);
  LLVMBasicBlockRef et = LLVMGetInsertBlock(M->b);
  LLVMBuildBr(M->b, bj);
  LLVMPositionBuilderAtEnd(M->b, be);
  cg_expr(f, ke, &tb);
  ex_manifest_val(f, &tb, e, &b);
  LLVMBasicBlockRef ee = LLVMGetInsertBlock(M->b);
  LLVMBuildBr(M->b, bj);
  LLVMPositionBuilderAtEnd(M->b, bj);
  ex_phi(f, t, &a, et, &b, ee, e, out);
}

/* a && b, a || b: b runs only when a does not decide. */
static void ex_logic(cg_fn *f, ir_ref e, cg_val *out) {
  cg_module *M = f->M;
  ir_op op = (ir_op)ex_node(f, e)->op;
  ir_ref k0 = ir_kid(M->m, e, 0), k1 = ir_kid(M->m, e, 1);
  cg_val va, vb;
  cg_expr(f, k0, &va);
  LLVMValueRef l = ex_scalar(f, &va, k0), r;
  if (ex_speculate(f, k1)) {
    cg_expr(f, k1, &vb);
    LLVMValueRef ops[2] = {l, ex_scalar(f, &vb, k1)};
    r = cg_scalar_op(f, op, AC_BOOL, ops);
  } else {
    LLVMBasicBlockRef from = LLVMGetInsertBlock(M->b);
    LLVMBasicBlockRef brhs = cg_block(f, op == IR_LAND ? "and.rhs" : "or.rhs");
    LLVMBasicBlockRef bj = cg_block(f, op == IR_LAND ? "and.join" : "or.join");
    if (op == IR_LAND)
      LLVMBuildCondBr(M->b, l, brhs, bj);
    else
      LLVMBuildCondBr(M->b, l, bj, brhs);
    LLVMPositionBuilderAtEnd(M->b, brhs);
    cg_expr(f, k1, &vb);
    LLVMValueRef rv = ex_scalar(f, &vb, k1);
    LLVMBasicBlockRef rend = LLVMGetInsertBlock(M->b);
    LLVMBuildBr(M->b, bj);
    LLVMPositionBuilderAtEnd(M->b, bj);
    r = LLVMBuildPhi(M->b, M->t_i1, "");
    LLVMValueRef vals[2] = {LLVMConstInt(M->t_i1, op == IR_LOR, 0), rv};
    LLVMBasicBlockRef blocks[2] = {from, rend};
    LLVMAddIncoming(r, vals, blocks, 2);
  }
  ex_one_scalar(f, ex_node(f, e)->type, AC_BOOL, r, out);
}

/* The C type of an extern's scalar parameter or result, with the attribute
 * the C calling convention gives small integers (clang's zeroext/signext). */
LLVMTypeRef cg_c_type(cg_module *M, ac_scalar sc, const char **ext) {
  *ext = NULL;
  if (sc == AC_BOOL || sc == AC_U8 || sc == AC_U16)
    *ext = "zeroext";
  else if (sc == AC_I8 || sc == AC_I16)
    *ext = "signext";
  return cg_scalar_type(M, sc);
}

LLVMValueRef cg_host_fn(cg_module *M, uint32_t fi, LLVMTypeRef fty, ir_ref at) {
  const ir_func *fn = &M->m->funcs[fi];
  const char *name = ir_sym_str(M->ctx, fn->khost ? fn->khost : fn->name);
  if (M->externs_by_name) {
    /* ahead of time: an undefined symbol of the extern's name */
    LLVMValueRef addr = LLVMGetNamedFunction(M->mod, name);
    if (addr && LLVMGlobalGetValueType(addr) != fty) {
      cg_error(M, AC_ERR_INVALID, at,
               "extern function %s clashes with another function of that name in the code",
               name);
      return NULL;
    }
    return addr ? addr : LLVMAddFunction(M->mod, name, fty);
  }
  /* the address is a constant of this compilation: the module is built for
   * one process (the JIT), and ac_function_create resolved it */
  return LLVMConstIntToPtr(
      LLVMConstInt(M->t_i64, (unsigned long long)(uintptr_t)fn->extern_addr, 0), M->t_ptr);
}

/* A call of extern function fi (scalar parameters and result) at its
 * resolved address. */
static void ex_call_extern(cg_fn *f, uint32_t fi, const cg_val *args, ir_ref at, cg_val *out) {
  cg_module *M = f->M;
  const ir_func *fn = &M->m->funcs[fi];
  const char *name = ir_sym_str(M->ctx, fn->name);
  ac_scalar rsc = AC_I64;
  if (M->target == CG_TARGET_NVPTX) { /* host code cannot run on the device */
    cg_error(M, AC_ERR_UNSUPPORTED, at,
             "extern function %s is host code and cannot be called on the GPU", name);
    ex_dummy(f, fn->result, out);
    return;
  }
  if ((!fn->extern_addr && !M->externs_by_name) || !ir_ty_is_scalar(M->ctx, fn->result, &rsc)) {
    cg_error(M, AC_ERR_INVALID, at, "extern function %s is not bound", name);
    ex_dummy(f, fn->result, out);
    return;
  }
  uint32_t n = fn->nparams;
  LLVMTypeRef *pt = cg_new(M, (n ? n : 1) * sizeof *pt);
  LLVMValueRef *av = cg_new(M, (n ? n : 1) * sizeof *av);
  const char **pext = cg_new(M, (n ? n : 1) * sizeof *pext);
  for (uint32_t i = 0; i < n; i++) {
    ac_scalar sc = AC_I64;
    ir_ty_is_scalar(M->ctx, ir_func_param(M->m, fn, i), &sc);
    pt[i] = cg_c_type(M, sc, &pext[i]);
    av[i] = ex_scalar(f, &args[i], at);
  }
  const char *rext;
  LLVMTypeRef rt = cg_c_type(M, rsc, &rext);
  LLVMTypeRef fty = LLVMFunctionType(rt, pt, n, 0);
  LLVMValueRef addr = cg_host_fn(M, fi, fty, at);
  if (!addr) {
    ex_dummy(f, fn->result, out);
    return;
  }
  LLVMValueRef call = LLVMBuildCall2(M->b, fty, addr, av, n, "");
  for (uint32_t i = 0; i <= n; i++) {
    const char *x = i < n ? pext[i] : rext;
    if (!x)
      continue;
    unsigned kind = LLVMGetEnumAttributeKindForName(x, strlen(x));
    LLVMAddCallSiteAttribute(call, i < n ? i + 1 : LLVMAttributeReturnIndex,
                             LLVMCreateEnumAttribute(M->llctx, kind, 0));
  }
  ex_one_scalar(f, fn->result, rsc, call, out);
}

/* Top-level function fi applied to args: inlined. The function is closed,
 * so its body only sees its parameters: pushing them on top of the current
 * environment gives exactly its de Bruijn indices. Pre-computed subterms
 * belong to the caller's scope and are hidden meanwhile. */
static void ex_call_fn(cg_fn *f, uint32_t fi, uint32_t nargs, const cg_val *args, ir_ref at,
                       cg_val *out) {
  cg_module *M = f->M;
  if (fi >= M->m->nfuncs) {
    cg_error(M, AC_ERR_INTERNAL, at, "call of function %u, which does not exist", fi);
    ex_dummy(f, ex_node(f, at)->type, out);
    return;
  }
  const ir_func *fn = &M->m->funcs[fi];
  if (fn->is_kernel) { /* the verifier keeps them out of element code */
    cg_error(M, AC_ERR_INTERNAL, at, "extern kernel %s called in element code",
             ir_sym_str(M->ctx, fn->name));
    ex_dummy(f, fn->result, out);
    return;
  }
  if (fn->is_extern) {
    ex_call_extern(f, fi, args, at, out);
    return;
  }
  if (!fn->body || fn->nparams != nargs) {
    cg_error(M, AC_ERR_INTERNAL, at, "function %s of %u parameters applied to %u arguments",
             ir_sym_str(M->ctx, fn->name), fn->nparams, nargs);
    ex_dummy(f, fn->result, out);
    return;
  }
  ir_ref body = fn->body;
  for (uint32_t i = 0; i < nargs; i++)
    cg_env_push(f, &args[i]);
  uint32_t npre = f->npre;
  f->npre = 0;
  cg_expr(f, body, out);
  f->npre = npre;
  cg_env_pop(f, nargs);
}

static void ex_call(cg_fn *f, ir_ref e, cg_val *out) {
  const ir_node *n = ex_node(f, e);
  uint32_t nk = n->nkids;
  cg_val *args = cg_new(f->M, (nk ? nk : 1) * sizeof *args);
  for (uint32_t i = 0; i < nk; i++)
    cg_expr(f, ir_kid(f->M->m, e, i), &args[i]);
  if (n->attr < 0) {
    cg_error(f->M, AC_ERR_INTERNAL, e, "call of a negative function index");
    ex_dummy(f, n->type, out);
    return;
  }
  ex_call_fn(f, (uint32_t)n->attr, nk, args, e, out);
}

void cg_apply(cg_fn *f, ir_ref lam, uint32_t nargs, const cg_val *args, cg_val *out) {
  const ir_node *n = ex_node(f, lam);
  if (n->op == IR_FNREF && n->attr >= 0) {
    ex_call_fn(f, (uint32_t)n->attr, nargs, args, lam, out);
    return;
  }
  if (n->op != IR_LAM || n->attr != (int64_t)nargs) {
    cg_error(f->M, AC_ERR_INTERNAL, lam, "expected a function of %u parameters", nargs);
    ir_typeinfo ti = ir_ty_info(f->M->ctx, n->type);
    ex_dummy(f, ti.kind == TK_FN ? ti.ret : ir_ty_unit(f->M->ctx), out);
    return;
  }
  for (uint32_t i = 0; i < nargs; i++)
    cg_env_push(f, &args[i]);
  cg_expr(f, ir_kid(f->M->m, lam, 0), out);
  cg_env_pop(f, nargs);
}

/* True if evaluating e can fail at run time (reads, array operations,
 * calls that may contain either). */
static bool ex_may_fail(const ac_module *m, ir_ref e, unsigned depth);

bool cg_may_fail(const ac_module *m, ir_ref e) {
  return ex_may_fail(m, e, 0);
}

bool cg_fn_may_fail(const ac_module *m, ir_ref fn) {
  const ir_node *n = ir_node_get(m, fn);
  if (n->op == IR_LAM)
    return ex_may_fail(m, ir_kid(m, fn, 0), 0);
  if (n->op != IR_FNREF || n->attr < 0 || (uint64_t)n->attr >= m->nfuncs ||
      m->funcs[n->attr].is_extern || !m->funcs[n->attr].body)
    return true;
  return ex_may_fail(m, m->funcs[n->attr].body, 0);
}

static bool ex_may_fail(const ac_module *m, ir_ref e, unsigned depth) {
  if (depth > 200)
    return true;
  const ir_node *n = ir_node_get(m, e);
  switch ((ir_op)n->op) {
  case IR_INDEX:
  case IR_LEN:
  case IR_SHAPE:
  case IR_CALL:
  case IR_FNREF:
  case IR_ARRLIT:
  case IR_REC:
    return true;
  default:
    break;
  }
  if (n->op >= IR_GENERATE && n->op < IR_NUM_OPS && !ir_op_is_scalar(n->op))
    return true;
  for (uint32_t i = 0; i < n->nkids; i++)
    if (ex_may_fail(m, ir_kid(m, e, i), depth + 1))
      return true;
  return false;
}

/* loop (x1 = e1, .., xk = ek) while cond { step }: the state lives in
 * stack slots; the loop's value is the final state. */
static void ex_loop(cg_fn *f, ir_ref e, cg_val *out) {
  cg_module *M = f->M;
  const ir_node *n = ex_node(f, e);
  if (n->nkids < 3) {
    cg_error(M, AC_ERR_INTERNAL, e, "loop without state");
    ex_dummy(f, n->type, out);
    return;
  }
  uint32_t k = n->nkids - 2;
  ir_ref cond = ir_kid(M->m, e, k), step = ir_kid(M->m, e, k + 1);
  cg_var *vars = cg_new(M, k * sizeof *vars);
  cg_val *st = cg_new(M, k * sizeof *st);
  for (uint32_t i = 0; i < k; i++) {
    ir_ref ki = ir_kid(M->m, e, i);
    cg_val v, mv;
    cg_expr(f, ki, &v);
    ex_manifest_val(f, &v, e, &mv);
    cg_var_new(f, ex_node(f, ki)->type, &vars[i]);
    cg_var_store(f, &vars[i], &mv);
  }
  /* After a failed read the state holds harmless values that may never
   * satisfy the exit, so a loop that can fail asks the runtime every
   * EX_POLL iterations whether the call has failed, and stops if so. */
  bool poll = ex_may_fail(M->m, cond, 0) || ex_may_fail(M->m, step, 0);
  LLVMValueRef tick = NULL;
  if (poll) {
    tick = cg_alloca(f, M->t_i32);
    LLVMBuildStore(M->b, LLVMConstInt(M->t_i32, 0, 0), tick);
  }
  LLVMBasicBlockRef head = cg_block(f, "loop.head"), body = cg_block(f, "loop.body"),
                    exit = cg_block(f, "loop.exit");
  LLVMBuildBr(M->b, head);
  LLVMPositionBuilderAtEnd(M->b, head);
  for (uint32_t i = 0; i < k; i++)
    cg_var_load(f, &vars[i], &st[i]);
  if (poll) {
    LLVMBasicBlockRef ask = cg_block(f, "loop.poll"), go = cg_block(f, "loop.test");
    LLVMValueRef t = LLVMBuildLoad2(M->b, M->t_i32, tick, "");
    t = LLVMBuildAdd(M->b, t, LLVMConstInt(M->t_i32, 1, 0), "");
    LLVMBuildStore(M->b, t, tick);
    LLVMValueRef low = LLVMBuildAnd(M->b, t, LLVMConstInt(M->t_i32, EX_POLL - 1, 0), "");
    LLVMBuildCondBr(M->b, LLVMBuildICmp(M->b, LLVMIntEQ, low, LLVMConstInt(M->t_i32, 0, 0), ""),
                    ask, go);
    LLVMPositionBuilderAtEnd(M->b, ask);
    LLVMBuildCondBr(M->b, cg_failed(f), exit, go);
    LLVMPositionBuilderAtEnd(M->b, go);
  }
  cg_val c;
  cg_apply(f, cond, k, st, &c);
  LLVMBuildCondBr(M->b, ex_scalar(f, &c, cond), body, exit);
  LLVMPositionBuilderAtEnd(M->b, body);
  cg_val next;
  cg_apply(f, step, k, st, &next);
  for (uint32_t i = 0; i < k; i++) {
    cg_val fi, mv;
    if (k == 1)
      fi = next;
    else
      cg_val_field(M, &next, i, &fi);
    ex_manifest_val(f, &fi, e, &mv);
    cg_var_store(f, &vars[i], &mv);
  }
  LLVMBuildBr(M->b, head);
  LLVMPositionBuilderAtEnd(M->b, exit);
  /* the slots hold the final state (the head dominates the exit, but a
   * fresh load keeps the state of the iteration that left) */
  uint32_t total = 0;
  for (uint32_t i = 0; i < k; i++) {
    cg_var_load(f, &vars[i], &st[i]);
    total += st[i].n;
  }
  if (k == 1) {
    *out = st[0];
    return;
  }
  out->type = n->type;
  out->n = total;
  out->l = cg_new(M, (total ? total : 1) * sizeof *out->l);
  uint32_t j = 0;
  for (uint32_t i = 0; i < k; i++)
    for (uint32_t q = 0; q < st[i].n; q++)
      out->l[j++] = st[i].l[q];
}

/* The interpreter's interp_view check: the arrays of a tuple used as an
 * array must have one shape. Its message prints both shapes, every extent
 * a value of the site (cg_check_n). */
static void ex_same_shape(cg_fn *f, const cg_val *a, const char *what, ir_ref at) {
  cg_module *M = f->M;
  if (a->n < 2)
    return;
  for (uint32_t i = 0; i < a->n; i++)
    if (!a->l[i].ext || a->l[i].rank != a->l[0].rank)
      return; /* windows and rec arrays: one shape by construction */
  uint32_t rank = a->l[0].rank;
  ir_buf fmt;
  ir_buf_init(&fmt, M->ctx);
  ir_buf_printf(&fmt, "%s%sarrays have different shapes: [", what, *what ? ": " : "");
  for (uint32_t s = 0; s < 2; s++)
    for (uint32_t d = 0; d < rank; d++)
      ir_buf_puts(&fmt, d ? ", %lld" : s ? "] and [%lld" : "%lld");
  ir_buf_putc(&fmt, ']');
  if (fmt.oom) {
    cg_error(M, AC_ERR_NOMEM, at, "out of memory");
    ir_buf_free(&fmt);
    return;
  }
  uint32_t site = cg_site(M, at, ir_buf_cstr(&fmt));
  ir_buf_free(&fmt);
  LLVMValueRef *vals = cg_new(M, 2 * (size_t)rank * sizeof *vals);
  for (uint32_t i = 1; i < a->n; i++) {
    LLVMValueRef eq = LLVMConstInt(M->t_i1, 1, 0);
    for (uint32_t d = 0; d < rank; d++) {
      if (a->l[i].ext[d] != a->l[0].ext[d])
        eq = LLVMBuildAnd(M->b, eq,
                          LLVMBuildICmp(M->b, LLVMIntEQ, a->l[0].ext[d], a->l[i].ext[d], ""), "");
      vals[d] = a->l[0].ext[d];
      vals[rank + d] = a->l[i].ext[d];
    }
    cg_check_n(f, eq, site, 2 * rank, vals);
  }
}

int cg_ref_cmp(const void *a, const void *b) {
  ir_ref x = *(const ir_ref *)a, y = *(const ir_ref *)b;
  return x < y ? -1 : x > y;
}

static void ex_index(cg_fn *f, ir_ref e, cg_val *out) {
  cg_module *M = f->M;
  const ir_node *n = ex_node(f, e);
  uint32_t rank = n->nkids - 1;
  cg_val a;
  cg_expr(f, ir_kid(M->m, e, 0), &a);
  LLVMValueRef *idx = cg_new(M, (rank ? rank : 1) * sizeof *idx);
  for (uint32_t d = 0; d < rank; d++) {
    ir_ref kd = ir_kid(M->m, e, d + 1);
    cg_val v;
    cg_expr(f, kd, &v);
    idx[d] = cg_index_i64(f, ex_scalar(f, &v, kd), ex_scalar_of(f, kd));
  }
  ex_same_shape(f, &a, "", e);
  bool proven = f->nunchecked && bsearch(&e, f->unchecked, f->nunchecked, sizeof e, cg_ref_cmp);
  out->type = n->type;
  out->n = a.n;
  out->l = cg_new(M, (a.n ? a.n : 1) * sizeof *out->l);
  for (uint32_t i = 0; i < a.n; i++) {
    const cg_leaf *l = &a.l[i];
    if (l->kind == CL_SCALAR || (l->kind == CL_ARRAY && l->rank != rank)) {
      cg_error(M, AC_ERR_INTERNAL, e, "%u indices for a value of rank %u", rank, l->rank);
      out->l[i].kind = CL_SCALAR;
      out->l[i].sc = l->sc;
      out->l[i].v = LLVMConstNull(cg_scalar_type(M, (ac_scalar)l->sc));
      continue;
    }
    out->l[i].kind = CL_SCALAR;
    out->l[i].sc = l->sc;
    out->l[i].v = cg_read(f, l, idx, !proven, e);
  }
}

static void ex_len_shape(cg_fn *f, ir_ref e, cg_val *out) {
  cg_module *M = f->M;
  const ir_node *n = ex_node(f, e);
  cg_val a;
  cg_expr(f, ir_kid(M->m, e, 0), &a);
  if (a.n == 0 || !a.l[0].ext || a.l[0].rank == 0) {
    cg_error(M, AC_ERR_INTERNAL, e, "%s of a value that is not an array", ir_ops[n->op].spelling);
    ex_dummy(f, n->type, out);
    return;
  }
  ex_same_shape(f, &a, ir_ops[n->op].spelling, e);
  uint32_t dims = n->op == IR_LEN ? 1 : a.l[0].rank;
  out->type = n->type;
  out->n = dims;
  out->l = cg_new(M, dims * sizeof *out->l);
  for (uint32_t d = 0; d < dims; d++) {
    out->l[d].kind = CL_SCALAR;
    out->l[d].sc = AC_I64;
    out->l[d].v = a.l[0].ext[d];
  }
}

/* Whether e contains one of f->late (*budget nodes looked at, at most). */
static bool ex_has_late(const cg_fn *f, ir_ref e, int *budget) {
  if (!e || --*budget < 0)
    return *budget < 0;
  if (bsearch(&e, f->late, f->nlate, sizeof e, cg_ref_cmp))
    return true;
  const ir_node *n = ir_node_get(f->M->m, e);
  for (uint32_t i = 0; i < n->nkids; i++)
    if (ex_has_late(f, ir_kid(f->M->m, e, i), budget))
      return true;
  return false;
}

/* Whether e is a chain of op (same op, same type), through lets. */
static bool ex_is_chain(const cg_fn *f, ir_ref e, ir_op op, ir_type t) {
  const ir_node *nd = ir_node_get(f->M->m, e);
  if (nd->op == IR_LET && nd->type == t)
    return ex_is_chain(f, ir_kid(f->M->m, e, 1), op, t);
  return nd->op == op && nd->type == t && nd->nkids == 2;
}

/* What e is in a chain of op of type t, `depth` nodes down: a let whose
 * body continues the chain, a node of the chain, or an operand. */
typedef enum ex_link { EX_OPERAND, EX_LET, EX_NODE } ex_link;

static ex_link ex_link_of(const cg_fn *f, ir_ref e, ir_op op, ir_type t, unsigned depth) {
  const ir_node *nd = ir_node_get(f->M->m, e);
  if (depth >= 64)
    return EX_OPERAND;
  if (nd->op == IR_LET && nd->type == t && ex_is_chain(f, ir_kid(f->M->m, e, 1), op, t))
    return EX_LET;
  return nd->op == op && nd->type == t && nd->nkids == 2 ? EX_NODE : EX_OPERAND;
}

/* Counts the operands of the chain at e and whether one is late. */
static void ex_chain_count(const cg_fn *f, ir_ref e, ir_op op, ir_type t, unsigned depth,
                           uint32_t *nops, bool *late) {
  switch (ex_link_of(f, e, op, t, depth)) {
  case EX_LET:
    ex_chain_count(f, ir_kid(f->M->m, e, 1), op, t, depth + 1, nops, late);
    return;
  case EX_NODE:
    ex_chain_count(f, ir_kid(f->M->m, e, 0), op, t, depth + 1, nops, late);
    ex_chain_count(f, ir_kid(f->M->m, e, 1), op, t, depth + 1, nops, late);
    return;
  case EX_OPERAND: {
    int budget = 256;
    (*nops)++;
    *late = *late || ex_has_late(f, e, &budget);
    return;
  }
  }
}

/* A regrouped chain being generated: the early operands combined so far
 * (acc), the late ones waiting (each with the number of lets open when
 * it was met: it is generated under exactly those), the lets open. */
typedef struct ex_group {
  ir_op op;
  ir_type t;
  ac_scalar sc;
  LLVMValueRef acc;
  ir_ref late[16];
  uint32_t late_depth[16], nlate, lets;
} ex_group;

static void ex_group_add(cg_fn *f, ex_group *g, ir_ref e) {
  cg_val v;
  cg_expr(f, e, &v);
  LLVMValueRef x = ex_scalar(f, &v, e), two[3] = {g->acc, x, NULL};
  g->acc = g->acc ? cg_scalar_op(f, g->op, g->sc, two) : x;
}

/* The late operands met under the lets open now, combined now. */
static void ex_group_flush(cg_fn *f, ex_group *g) {
  uint32_t keep = 0;
  for (uint32_t i = 0; i < g->nlate; i++) {
    if (g->late_depth[i] == g->lets) {
      ex_group_add(f, g, g->late[i]);
      continue;
    }
    g->late[keep] = g->late[i];
    g->late_depth[keep++] = g->late_depth[i];
  }
  g->nlate = keep;
}

static void ex_group_walk(cg_fn *f, ex_group *g, ir_ref e, unsigned depth) {
  switch (ex_link_of(f, e, g->op, g->t, depth)) {
  case EX_LET: {
    /* the operands inside the let see its variable; those met inside
     * and still waiting are combined before it goes out of scope */
    cg_val v;
    cg_expr(f, ir_kid(f->M->m, e, 0), &v);
    cg_env_push(f, &v);
    g->lets++;
    ex_group_walk(f, g, ir_kid(f->M->m, e, 1), depth + 1);
    ex_group_flush(f, g);
    cg_env_pop(f, 1);
    g->lets--;
    return;
  }
  case EX_NODE:
    ex_group_walk(f, g, ir_kid(f->M->m, e, 0), depth + 1);
    ex_group_walk(f, g, ir_kid(f->M->m, e, 1), depth + 1);
    return;
  case EX_OPERAND: {
    int budget = 256;
    if (g->nlate < 16 && ex_has_late(f, e, &budget)) {
      g->late[g->nlate] = e;
      g->late_depth[g->nlate++] = g->lets;
      return;
    }
    ex_group_add(f, g, e);
    return;
  }
  }
}

/* The chain at e regrouped with the operands containing f->late last
 * (see cg_fn.late); false when e is not such a chain or nothing would
 * move. */
static bool ex_regroup(cg_fn *f, ir_ref e, cg_val *out) {
  const ir_node *n = ex_node(f, e);
  ir_op op = (ir_op)n->op;
  ac_scalar sc;
  if (!f->nlate || n->nkids != 2 ||
      !(op == IR_MIN || op == IR_MAX || op == IR_ADD || op == IR_MUL || op == IR_BAND ||
        op == IR_BOR || op == IR_BXOR) ||
      !ir_ty_is_scalar(f->M->ctx, n->type, &sc) || sc == AC_BOOL || sc >= AC_F32)
    return false;
  /* a late operand among three or more (two are combined in one
   * operation whatever their order) */
  uint32_t nops = 0;
  bool late = false;
  ex_chain_count(f, e, op, n->type, 0, &nops, &late);
  if (!late || nops < 3)
    return false;
  ex_group g = {.op = op, .t = n->type, .sc = sc};
  ex_group_walk(f, &g, e, 0);
  ex_group_flush(f, &g);
  ex_one_scalar(f, n->type, sc, g.acc, out);
  return true;
}

/* Unary operators, one-argument builtins, predicates; binary operators and
 * two-argument builtins; fma. The operand kind selects the code. */
static void ex_op(cg_fn *f, ir_ref e, cg_val *out) {
  const ir_node *n = ex_node(f, e);
  uint32_t nk = n->nkids;
  if (f->nlate && ex_regroup(f, e, out))
    return;
  LLVMValueRef ops[3] = {NULL, NULL, NULL};
  if (nk < 1 || nk > 3) {
    cg_error(f->M, AC_ERR_INTERNAL, e, "scalar operation with %u operands", nk);
    ex_dummy(f, n->type, out);
    return;
  }
  for (uint32_t i = 0; i < nk; i++) {
    ir_ref k = ir_kid(f->M->m, e, i);
    cg_val v;
    cg_expr(f, k, &v);
    ops[i] = ex_scalar(f, &v, k);
  }
  ac_scalar sc = ex_scalar_of(f, ir_kid(f->M->m, e, 0));
  ac_scalar rsc = ex_scalar_of(f, e);
  ex_one_scalar(f, n->type, rsc, cg_scalar_op(f, (ir_op)n->op, sc, ops), out);
}

static bool ex_is_array_op(ir_op op) {
  return op == IR_ARRLIT || op == IR_REC ||
         (op >= IR_GENERATE && op < IR_NUM_OPS && !ir_op_is_scalar(op));
}

static void ex_dispatch(cg_fn *f, ir_ref e, cg_val *out) {
  cg_module *M = f->M;
  const ir_node *n = ex_node(f, e);
  ir_op op = (ir_op)n->op;
  switch (op) {
  case IR_VAR:
    if (n->attr < 0 || (uint64_t)n->attr >= f->nenv) {
      cg_error(M, AC_ERR_INTERNAL, e, "unbound variable %lld", (long long)n->attr);
      ex_dummy(f, n->type, out);
    } else {
      *out = f->env[f->nenv - 1 - (uint32_t)n->attr];
    }
    return;
  case IR_LIT: {
    ac_scalar sc = ex_scalar_of(f, e);
    ex_one_scalar(f, n->type, sc, cg_const(M, sc, n->lit), out);
    return;
  }
  case IR_TUPLE:
    ex_tuple(f, e, out);
    return;
  case IR_PROJ: {
    cg_val v;
    cg_expr(f, ir_kid(M->m, e, 0), &v);
    cg_val_field(M, &v, (uint32_t)n->attr, out);
    return;
  }
  case IR_LET:
    ex_let(f, e, out);
    return;
  case IR_LETTUP:
    ex_lettup(f, e, out);
    return;
  case IR_IF:
    ex_if(f, e, out);
    return;
  case IR_LAND:
  case IR_LOR:
    ex_logic(f, e, out);
    return;
  case IR_CALL:
    ex_call(f, e, out);
    return;
  case IR_CAST: {
    ir_ref k = ir_kid(M->m, e, 0);
    cg_val v;
    cg_expr(f, k, &v);
    ac_scalar to = ex_scalar_of(f, e);
    ex_one_scalar(f, n->type, to, cg_cast(f, ex_scalar(f, &v, k), ex_scalar_of(f, k), to), out);
    return;
  }
  case IR_LOOP:
    ex_loop(f, e, out);
    return;
  case IR_INDEX:
    ex_index(f, e, out);
    return;
  case IR_LEN:
  case IR_SHAPE:
    ex_len_shape(f, e, out);
    return;
  case IR_LAM:
  case IR_FNREF:
    cg_error(M, AC_ERR_INTERNAL, e, "a function used as a value outside an application");
    ex_dummy(f, ir_ty_unit(M->ctx), out);
    return;
  default:
    break;
  }
  if (ex_is_array_op(op)) {
    cg_array_op(f, e, out);
    return;
  }
  if (op < IR_NUM_OPS && ir_ops[op].typing != TC_SPECIAL) {
    ex_op(f, e, out);
    return;
  }
  cg_error(M, AC_ERR_INTERNAL, e, "no code for a %s node",
           op < IR_NUM_OPS ? ir_ops[op].name : "malformed");
  ex_dummy(f, n->type, out);
}

void cg_expr(cg_fn *f, ir_ref e, cg_val *out) {
  for (uint32_t i = 0; i < f->npre; i++)
    if (f->pre_ref[i] == e) {
      *out = f->pre_val[i];
      return;
    }
  if (f->depth >= EX_MAX_DEPTH) {
    cg_error(f->M, AC_ERR_UNSUPPORTED, e, "expression nested too deeply to compile");
    ex_dummy(f, ex_node(f, e)->type, out);
    return;
  }
  f->depth++;
  ex_dispatch(f, e, out);
  f->depth--;
}

/* Whether e, or a function it calls, holds an array operation or (loops)
 * any `loop`, or else (!loops) an array-valued `if` or `loop`: a join or
 * loop state that may be made manifest. */
static bool ex_finds(const ac_module *m, ir_ref e, bool loops, unsigned depth) {
  if (depth > 10000)
    return true; /* too deep to tell: saying yes is only slower */
  const ir_node *n = ir_node_get(m, e);
  ir_op op = (ir_op)n->op;
  if (ex_is_array_op(op) || (loops && op == IR_LOOP))
    return true;
  if (!loops && (op == IR_IF || op == IR_LOOP) && ex_ty_has_array(m->ctx, n->type))
    return true;
  if ((op == IR_CALL || op == IR_FNREF) && n->attr >= 0 && (uint64_t)n->attr < m->nfuncs) {
    ir_ref body = m->funcs[n->attr].body;
    if (body && ex_finds(m, body, loops, depth + 1))
      return true;
  }
  for (uint32_t i = 0; i < n->nkids; i++)
    if (ex_finds(m, ir_kid(m, e, i), loops, depth + 1))
      return true;
  return false;
}

bool cg_needs_tmp(const ac_module *m, ir_ref e) {
  return ex_finds(m, e, false, 0);
}

bool cg_has_loops(const ac_module *m, ir_ref e) {
  return ex_finds(m, e, true, 0);
}
