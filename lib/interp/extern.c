/* lib/interp/extern.c: the interpreter's calls of extern functions.
 *
 * An extern function (docs/language.md §3.3) is C code of the host with a
 * scalar signature known only at run time, so the interpreter calls it
 * through libffi: a call interface (ffi_cif) is prepared from the declared
 * parameter and result types, each argument is stored in a slot of its C
 * type, and ffi_call does what a C compiler would do for a call of that
 * prototype. The scalar kinds map to C and libffi types as follows:
 *
 *   bool       _Bool      ffi_type_uint8  (_Bool is one byte holding 0 or 1
 *                                          on every ABI libffi supports; on
 *                                          x86-64 SysV it is passed and
 *                                          returned exactly like uint8_t)
 *   i8..i64    int8_t..int64_t    ffi_type_sint8..ffi_type_sint64
 *   u8..u64    uint8_t..uint64_t  ffi_type_uint8..ffi_type_uint64
 *   f32, f64   float, double      ffi_type_float, ffi_type_double
 *
 * The interface is prepared once per interp_lam, that is once per call node
 * or array operation evaluation (a map over a million elements prepares one
 * and calls a million times), and lives in memory owned by that interp_lam,
 * which belongs to one evaluation on one thread: nothing is shared, so
 * several threads may interpret the same module at once without locks.
 *
 * A bool result is normalised to 0/1 (a C function returning a _Bool that
 * is not 0 or 1 is undefined behaviour in C; reading it as "non-zero" keeps
 * the interpreter's invariant anyway). Integer results narrower than ffi_arg
 * come back widened into an ffi_arg, as libffi specifies, and are truncated
 * to their kind.
 */
#include "interp/interp.h"

#include <ffi.h>
#include <string.h>

static ffi_type *ffi_type_of(ac_scalar sc) {
  switch (sc) {
  case AC_BOOL:
  case AC_U8:
    return &ffi_type_uint8;
  case AC_I8:
    return &ffi_type_sint8;
  case AC_I16:
    return &ffi_type_sint16;
  case AC_I32:
    return &ffi_type_sint32;
  case AC_I64:
    return &ffi_type_sint64;
  case AC_U16:
    return &ffi_type_uint16;
  case AC_U32:
    return &ffi_type_uint32;
  case AC_U64:
    return &ffi_type_uint64;
  case AC_F32:
    return &ffi_type_float;
  case AC_F64:
    return &ffi_type_double;
  }
  return NULL;
}

/* One argument or result in its C representation. */
typedef union ext_slot {
  uint8_t u8;
  int8_t i8;
  int16_t i16;
  int32_t i32;
  int64_t i64;
  uint16_t u16;
  uint32_t u32;
  uint64_t u64;
  float f32;
  double f64;
  ffi_arg arg; /* integer results narrower than ffi_arg come back widened */
  ffi_sarg sarg;
} ext_slot;

/* A prepared call, in one allocation with its arrays. The argument slots are
 * reused by every call: the interp_lam that owns them is applied by one
 * thread, one call at a time (an extern cannot call back into arrayc). */
struct interp_ffi {
  ffi_cif cif;
  void (*addr)(void);
  uint32_t nparams;
  ac_scalar ret;
  ffi_type **types;  /* nparams libffi types (the cif points here) */
  void **ptrs;       /* nparams argument addresses, into slots */
  ext_slot *slots;   /* nparams arguments in their C types */
  ac_scalar *params; /* nparams kinds */
};

/* The interpreter's scalar (interp.h) in its C type. */
static void *to_c(ac_scalar sc, interp_scalar v, ext_slot *s) {
  switch (sc) {
  case AC_BOOL:
    s->u8 = v.u != 0;
    return &s->u8;
  case AC_I8:
    s->i8 = (int8_t)v.i;
    return &s->i8;
  case AC_I16:
    s->i16 = (int16_t)v.i;
    return &s->i16;
  case AC_I32:
    s->i32 = (int32_t)v.i;
    return &s->i32;
  case AC_I64:
    s->i64 = v.i;
    return &s->i64;
  case AC_U8:
    s->u8 = (uint8_t)v.u;
    return &s->u8;
  case AC_U16:
    s->u16 = (uint16_t)v.u;
    return &s->u16;
  case AC_U32:
    s->u32 = (uint32_t)v.u;
    return &s->u32;
  case AC_U64:
    s->u64 = v.u;
    return &s->u64;
  case AC_F32:
    s->f32 = (float)v.f; /* exact: an f32 value is held exactly */
    return &s->f32;
  case AC_F64:
    s->f64 = v.f;
    return &s->f64;
  }
  return &s->u64;
}

/* A result slot filled by ffi_call, as the interpreter's scalar. */
static interp_scalar from_c(ac_scalar sc, const ext_slot *s) {
  interp_scalar v = {0};
  bool widened = ac_scalar_size(sc) < sizeof(ffi_arg);
  switch (sc) {
  case AC_BOOL:
    v.u = (widened ? (uint8_t)s->arg : s->u8) != 0;
    break;
  case AC_I8:
    v.i = widened ? (int8_t)s->sarg : s->i8;
    break;
  case AC_I16:
    v.i = widened ? (int16_t)s->sarg : s->i16;
    break;
  case AC_I32:
    v.i = widened ? (int32_t)s->sarg : s->i32;
    break;
  case AC_I64:
    v.i = s->i64;
    break;
  case AC_U8:
    v.u = widened ? (uint8_t)s->arg : s->u8;
    break;
  case AC_U16:
    v.u = widened ? (uint16_t)s->arg : s->u16;
    break;
  case AC_U32:
    v.u = widened ? (uint32_t)s->arg : s->u32;
    break;
  case AC_U64:
    v.u = s->u64;
    break;
  case AC_F32:
    v.f = s->f32;
    break;
  case AC_F64:
    v.f = s->f64;
    break;
  }
  return v;
}

bool interp_extern_init(interp *I, interp_lam *l, ir_ref at, uint32_t fi, uint32_t nparams) {
  memset(l, 0, sizeof *l);
  l->fn = at;
  l->counts = l->small;
  const ir_func *f = &I->m->funcs[fi];
  const char *name = ir_sym_str(I->ctx, f->name);
  uint32_t n = f->nparams;
  l->ret = f->result;
  l->nparams = nparams;
  if (n != nparams)
    return interp_internal(I, at, "function of %u parameters applied to %u arguments", n, nparams);
  if (!f->extern_addr)
    return interp_internal(I, at, "extern function '%s' was not resolved before the call", name);
  /* From here on a failure frees what was allocated: callers do not free
   * an interp_lam whose initialisation failed. */
  bool ok = true;
  if (n > sizeof l->small / sizeof l->small[0]) {
    l->counts = interp_scratch(I, at, n, sizeof *l->counts);
    ok = l->counts != NULL;
    if (!ok)
      l->counts = l->small;
  }
  /* the struct, then the arrays in decreasing order of alignment */
  size_t size = sizeof(struct interp_ffi) +
                n * (sizeof(ffi_type *) + sizeof(void *) + sizeof(ext_slot) + sizeof(ac_scalar));
  struct interp_ffi *x = ok ? ac_alloc(I->ctx, size) : NULL;
  if (ok && !x)
    ok = interp_nomem(I, at);
  l->ext = x;
  ac_scalar rsc = AC_BOOL;
  if (ok) {
    x->addr = f->extern_addr;
    x->nparams = n;
    x->types = (ffi_type **)(x + 1);
    x->ptrs = (void **)(x->types + n);
    x->slots = (ext_slot *)(x->ptrs + n);
    x->params = (ac_scalar *)(x->slots + n);
    ok = ir_ty_is_scalar(I->ctx, f->result, &rsc);
    x->ret = rsc;
    for (uint32_t i = 0; ok && i < n; i++) {
      ok = ir_ty_is_scalar(I->ctx, ir_func_param(I->m, f, i), &x->params[i]);
      x->types[i] = ok ? ffi_type_of(x->params[i]) : NULL;
    }
    if (!ok)
      interp_internal(I, at, "extern function '%s' has a type that is not a scalar", name);
  }
  if (ok && ffi_prep_cif(&x->cif, FFI_DEFAULT_ABI, n, ffi_type_of(rsc), x->types) != FFI_OK)
    ok = interp_internal(I, at, "libffi cannot call extern function '%s'", name);
  if (!ok)
    interp_lam_free(I, l);
  return ok;
}

bool interp_extern_apply(interp *I, const interp_lam *l, size_t base) {
  struct interp_ffi *x = l->ext;
  uint32_t n = x->nparams;
  if (I->sp - base != n)
    return interp_internal(I, l->fn, "arguments do not match the parameters");
  for (uint32_t i = 0; i < n; i++)
    if (l->counts[i] != 1 || I->stk[base + i].kind != LK_SCALAR)
      return interp_internal(I, l->fn, "argument %u of an extern function is not a scalar", i + 1);
  for (uint32_t i = 0; i < n; i++)
    x->ptrs[i] = to_c(x->params[i], I->stk[base + i].v.s, &x->slots[i]);
  ext_slot ret;
  memset(&ret, 0, sizeof ret);
  ffi_call(&x->cif, x->addr, &ret, x->ptrs);
  I->sp = base; /* the arguments are scalars: nothing to release */
  interp_leaf r = {LK_SCALAR, 0, {.s = from_c(x->ret, &ret)}};
  return interp_push(I, r);
}

/* ---- extern kernels (docs/language.md §3.4) ----
 * A call evaluates the arguments, then the result extents (size
 * expressions over the parameters: the arguments are bound as the only
 * variables they see), allocates the results zeroed, and calls the host
 * function once through libffi with the kernel ABI: per parameter a scalar
 * in its C type, or an array as its element pointer followed by its rank
 * extents (int64_t); then per result array its element pointer and
 * extents; no return value. */

/* One C argument of a kernel call. */
typedef struct kern_arg {
  ffi_type *type;
  ext_slot slot;
  void *ptr;
} kern_arg;

static bool kern_push_array(interp *I, ir_ref at, kern_arg *a, size_t *na, size_t cap,
                            const ac_array *arr) {
  if (*na + 1 + arr->rank > cap)
    return interp_internal(I, at, "extern kernel: too many C arguments");
  a[*na].type = &ffi_type_pointer;
  a[(*na)++].ptr = arr->data;
  for (unsigned d = 0; d < arr->rank; d++) {
    a[*na].type = &ffi_type_sint64;
    a[*na].ptr = NULL;
    a[(*na)++].slot.i64 = arr->extents[d];
  }
  return true;
}

typedef struct kern_res_acc {
  interp *I;
  ir_ref at;
  const int64_t *ext;
  uint32_t next;
  bool ok;
} kern_res_acc;

static void kern_res_leaf(void *ud, ac_scalar sc, uint32_t rank) {
  kern_res_acc *r = ud;
  if (!r->ok)
    return;
  ac_array *a = NULL;
  ac_status st = rt_array_alloc(r->I->ctx, sc, rank, r->ext + r->next, &a);
  r->next += rank;
  if (st == AC_ERR_RUNTIME)
    r->ok = interp_fail(r->I, r->at, "array too large");
  else if (st != AC_OK)
    r->ok = interp_nomem(r->I, r->at);
  if (!r->ok)
    return;
  memset(a->data, 0, (size_t)a->size * rt_array_elsize(a));
  interp_leaf l = {LK_ARRAY, 0, {.a = a}};
  if (!interp_push(r->I, l)) {
    ac_array_release(a);
    r->ok = false;
  }
}

bool interp_kernel_call(interp *I, ir_ref r) {
  const ir_node *n = INODE(I, r);
  size_t base = I->sp;
  for (uint32_t i = 0; i < n->nkids; i++) {
    if (!interp_eval(I, IKID(I, r, i))) {
      interp_drop(I, base);
      return false;
    }
  }
  return interp_kernel_apply(I, r, (uint32_t)n->attr, base);
}

bool interp_kernel_apply(interp *I, ir_ref r, uint32_t fi, size_t base) {
  const ir_func *f = &I->m->funcs[fi];
  const char *name = ir_sym_str(I->ctx, f->name);
  size_t env0 = I->nenv;
  if (I->sp - base != f->nparams) {
    interp_internal(I, r, "extern kernel '%s' of %u parameters applied to %zu leaves", name,
                    f->nparams, I->sp - base);
    goto fail;
  }
  if (!f->extern_addr) {
    interp_fail(I, r, "extern kernel '%s' has no host function (bind one with "
                      "ac_module_bind_extern, or export '%s' from the program)",
                name, f->khost ? ir_sym_str(I->ctx, f->khost) : name);
    goto fail;
  }
  /* the extents, with the arguments as the environment */
  interp_ints ext;
  if (!interp_ints_init(I, r, &ext, f->nkext ? f->nkext : 1))
    goto fail;
  for (uint32_t i = 0; i < f->nparams; i++)
    if (!interp_env_push(I, base + i, 1))
      goto fail_ext;
  for (uint32_t j = 0; j < f->nkext; j++) {
    size_t top = I->sp;
    if (!interp_eval(I, ir_kernel_extent(I->m, f, j)))
      goto fail_ext;
    ext.p[j] = I->stk[top].v.s.i;
    I->sp = top;
    if (ext.p[j] < 0) {
      interp_fail(I, r, "negative extent %lld", (long long)ext.p[j]);
      goto fail_ext;
    }
  }
  I->nenv = env0;
  size_t res = I->sp;
  kern_res_acc acc = {I, r, ext.p, 0, true};
  ir_ty_leaves(I->ctx, f->result, kern_res_leaf, &acc);
  interp_ints_free(I, &ext);
  if (!acc.ok)
    goto fail;
  /* the C arguments */
  size_t cap = 0;
  for (size_t k = base; k < I->sp; k++)
    cap += 1 + (I->stk[k].kind == LK_ARRAY ? I->stk[k].v.a->rank : 0);
  kern_arg *args = interp_scratch(I, r, (int64_t)(cap ? cap : 1), sizeof *args);
  ffi_type **types = interp_scratch(I, r, (int64_t)(cap ? cap : 1), sizeof *types);
  void **ptrs = interp_scratch(I, r, (int64_t)(cap ? cap : 1), sizeof *ptrs);
  bool ok = args && types && ptrs;
  size_t na = 0;
  for (uint32_t i = 0; ok && i < f->nparams; i++) {
    const interp_leaf *l = &I->stk[base + i];
    ac_scalar sc;
    if (l->kind == LK_ARRAY) {
      /* the interpreter's arrays have host elements (function.c fetches
       * the arguments' before interpreting) */
      ok = kern_push_array(I, r, args, &na, cap, l->v.a);
    } else if (l->kind == LK_SCALAR && ir_ty_is_scalar(I->ctx, ir_func_param(I->m, f, i), &sc)) {
      args[na].type = ffi_type_of(sc);
      args[na].ptr = to_c(sc, l->v.s, &args[na].slot);
      na++;
    } else {
      ok = interp_internal(I, r, "argument %u of extern kernel '%s' is not a scalar or an array",
                           i + 1, name);
    }
  }
  for (size_t k = res; ok && k < I->sp; k++)
    ok = kern_push_array(I, r, args, &na, cap, I->stk[k].v.a);
  for (size_t k = 0; ok && k < na; k++) {
    types[k] = args[k].type;
    /* an array's pointer lives in .ptr; a scalar's .ptr points into its
     * slot; an extent is in the slot */
    ptrs[k] = args[k].type == &ffi_type_pointer ? (void *)&args[k].ptr
              : args[k].ptr                     ? args[k].ptr
                                                : (void *)&args[k].slot;
  }
  ffi_cif cif;
  if (ok && ffi_prep_cif(&cif, FFI_DEFAULT_ABI, (unsigned)na, &ffi_type_void, types) != FFI_OK)
    ok = interp_internal(I, r, "libffi cannot call extern kernel '%s'", name);
  if (ok)
    ffi_call(&cif, f->extern_addr, NULL, ptrs);
  ac_free(I->ctx, args);
  ac_free(I->ctx, types);
  ac_free(I->ctx, ptrs);
  if (!ok)
    goto fail;
  interp_collapse(I, base, res);
  return true;
fail_ext:
  interp_ints_free(I, &ext);
fail:
  I->nenv = env0;
  interp_drop(I, base);
  return false;
}
