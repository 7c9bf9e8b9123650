/* runtime/fnptr.c: compiled functions as ordinary C function pointers.
 *
 * Nikola and Barracuda give the host a function of the program's own
 * signature to call, instead of an argument vector. Their signatures are
 * known when the host program is compiled; ours are known only at run time,
 * so the function is made at run time: a libffi closure (ffi_closure_alloc,
 * ffi_prep_closure_loc) whose call interface (ffi_cif) is the function's
 * flattened signature
 *     ac_status name(P1 p1, ..., Pn pn, R1 *r1, ..., Rm *rm, ac_error **err)
 * (runtime.h spells out the C types). libffi's trampoline calls fp_handler
 * with the raw arguments; the handler packs them into ac_datums, calls
 * ac_function_call and unpacks the results through the caller's pointers.
 *
 * Lifetime and threads: the closure is made on the first request and
 * published with a compare-and-swap, so concurrent first requests agree on
 * one closure (the loser frees its own); it is freed with the function. The
 * handler only reads f, so the pointer may be called from several threads
 * at once, like ac_function_call.
 */
#include "runtime/function.h"

#include "ir.h"

#include <ffi.h>
#include <limits.h>
#include <string.h>

struct rt_fnptr {
  ffi_closure *closure;
  void *code; /* the executable address of the closure */
  ffi_cif cif;
  ffi_type **types; /* one per C parameter */
};

/* Leaves up to this many are packed on the stack; more take the heap. */
#define FP_SMALL 16

/* The C parameter type of a scalar leaf (runtime.h's table). */
static ffi_type *fp_scalar_type(ac_scalar sc) {
  switch (sc) {
  case AC_BOOL: return &ffi_type_uint8; /* C's bool: one byte, 0 or 1 */
  case AC_I8: return &ffi_type_sint8;
  case AC_I16: return &ffi_type_sint16;
  case AC_I32: return &ffi_type_sint32;
  case AC_I64: return &ffi_type_sint64;
  case AC_U8: return &ffi_type_uint8;
  case AC_U16: return &ffi_type_uint16;
  case AC_U32: return &ffi_type_uint32;
  case AC_U64: return &ffi_type_uint64;
  case AC_F32: return &ffi_type_float;
  case AC_F64: return &ffi_type_double;
  }
  return NULL;
}

/* Reads a scalar argument of kind sc from libffi's argument slot (and any
 * C representation of one: runtime/function.h). */
ac_datum rt_scalar_read(ac_scalar sc, const void *p) {
  ac_datum d;
  memset(&d, 0, sizeof d);
  d.kind = AC_DATUM_SCALAR;
  d.type = sc;
  switch (sc) {
  case AC_BOOL: d.s.b = *(const uint8_t *)p != 0; break;
  case AC_I8: d.s.i = *(const int8_t *)p; break;
  case AC_I16: d.s.i = *(const int16_t *)p; break;
  case AC_I32: d.s.i = *(const int32_t *)p; break;
  case AC_I64: d.s.i = *(const int64_t *)p; break;
  case AC_U8: d.s.u = *(const uint8_t *)p; break;
  case AC_U16: d.s.u = *(const uint16_t *)p; break;
  case AC_U32: d.s.u = *(const uint32_t *)p; break;
  case AC_U64: d.s.u = *(const uint64_t *)p; break;
  case AC_F32: d.s.f = *(const float *)p; break;
  case AC_F64: d.s.f = *(const double *)p; break;
  }
  return d;
}

/* Stores a scalar result into the caller's variable of its C type. */
void rt_scalar_write(const ac_datum *d, void *p) {
  switch (d->type) {
  case AC_BOOL: *(bool *)p = d->s.b; break;
  case AC_I8: *(int8_t *)p = (int8_t)d->s.i; break;
  case AC_I16: *(int16_t *)p = (int16_t)d->s.i; break;
  case AC_I32: *(int32_t *)p = (int32_t)d->s.i; break;
  case AC_I64: *(int64_t *)p = d->s.i; break;
  case AC_U8: *(uint8_t *)p = (uint8_t)d->s.u; break;
  case AC_U16: *(uint16_t *)p = (uint16_t)d->s.u; break;
  case AC_U32: *(uint32_t *)p = (uint32_t)d->s.u; break;
  case AC_U64: *(uint64_t *)p = d->s.u; break;
  case AC_F32: *(float *)p = (float)d->s.f; break;
  case AC_F64: *(double *)p = d->s.f; break;
  }
}

/* The closure's body: argv[i] points at the i-th C argument. */
static void fp_handler(ffi_cif *cif, void *ret, void **argv, void *user) {
  (void)cif;
  ac_function *f = user;
  size_t na = f->nargs, nr = f->nres;
  ac_error **errp = *(ac_error ***)argv[na + nr];
  ac_datum small_args[FP_SMALL], small_res[FP_SMALL];
  ac_datum *args = na <= FP_SMALL ? small_args : ac_alloc(f->ctx, na * sizeof *args);
  ac_datum *res = nr <= FP_SMALL ? small_res : ac_alloc(f->ctx, nr * sizeof *res);
  ac_status st;
  if (!args || !res) {
    if (errp)
      *errp = NULL;
    st = ir_report(errp, NULL, AC_ERR_NOMEM);
  } else {
    for (size_t i = 0; i < na; i++) {
      const rt_leaf *l = &f->args[i];
      if (l->rank == 0) {
        args[i] = rt_scalar_read(l->type, argv[i]);
      } else {
        memset(&args[i], 0, sizeof args[i]);
        args[i].kind = AC_DATUM_ARRAY;
        args[i].type = l->type;
        args[i].array = *(ac_array **)argv[i]; /* borrowed; a NULL one is refused */
      }
    }
    st = ac_function_call(f, args, na, res, nr, errp);
    for (size_t j = 0; st == AC_OK && j < nr; j++) {
      void *dst = *(void **)argv[na + j];
      if (!dst)
        ac_datum_release(&res[j]); /* the caller does not want it */
      else if (res[j].kind == AC_DATUM_ARRAY)
        *(ac_array **)dst = res[j].array; /* the caller's reference */
      else
        rt_scalar_write(&res[j], dst);
    }
  }
  if (args != small_args)
    ac_free(f->ctx, args);
  if (res != small_res)
    ac_free(f->ctx, res);
  /* libffi returns integers narrower than a register through ffi_arg */
  *(ffi_sarg *)ret = (ffi_sarg)st;
}

void rt_fnptr_free(ac_context *ctx, rt_fnptr *p) {
  if (!p)
    return;
  if (p->closure)
    ffi_closure_free(p->closure);
  ac_free(ctx, p->types);
  ac_free(ctx, p);
}

/* Makes the closure for f. */
static ac_status fp_make(ac_function *f, rt_fnptr **out, ac_error **err) {
  ac_context *ctx = f->ctx;
  size_t n = f->nargs + f->nres + 1;
  *out = NULL;
  if (n > UINT_MAX)
    return rt_fail(ctx, err, AC_ERR_UNSUPPORTED, "too many parameters for a C function (%zu)", n);
  rt_fnptr *p = ac_alloc(ctx, sizeof *p);
  if (!p)
    return ir_report(err, NULL, AC_ERR_NOMEM);
  memset(p, 0, sizeof *p);
  p->types = ac_alloc(ctx, n * sizeof *p->types);
  if (p->types)
    p->closure = ffi_closure_alloc(sizeof(ffi_closure), &p->code);
  if (!p->types || !p->closure) {
    rt_fnptr_free(ctx, p);
    return ir_report(err, NULL, AC_ERR_NOMEM);
  }
  for (size_t i = 0; i < f->nargs; i++)
    p->types[i] = f->args[i].rank ? &ffi_type_pointer : fp_scalar_type(f->args[i].type);
  for (size_t j = 0; j <= f->nres; j++) /* the result pointers, then ac_error ** */
    p->types[f->nargs + j] = &ffi_type_pointer;
  /* ac_status is an enum of small non-negative values: passed as an int */
  ffi_status fs = ffi_prep_cif(&p->cif, FFI_DEFAULT_ABI, (unsigned)n, &ffi_type_sint, p->types);
  if (fs == FFI_OK)
    fs = ffi_prep_closure_loc(p->closure, &p->cif, fp_handler, f, p->code);
  if (fs != FFI_OK) {
    rt_fnptr_free(ctx, p);
    return rt_fail(ctx, err, AC_ERR_INTERNAL, "libffi cannot make a closure (status %d)",
                    (int)fs);
  }
  *out = p;
  return AC_OK;
}

ac_status ac_function_pointer(ac_function *f, void (**out)(void), ac_error **err) {
  if (err)
    *err = NULL;
  if (!f)
    return AC_ERR_INVALID;
  if (!out)
    return rt_fail(f->ctx, err, AC_ERR_INVALID, "ac_function_pointer: out is NULL");
  *out = NULL;
  rt_fnptr *p = atomic_load(&f->fnptr);
  if (!p) {
    rt_fnptr *mine;
    ac_status st = fp_make(f, &mine, err);
    if (st != AC_OK)
      return st;
    p = NULL;
    if (atomic_compare_exchange_strong(&f->fnptr, &p, mine))
      p = mine;
    else
      rt_fnptr_free(f->ctx, mine); /* another thread won; p is its closure */
  }
  /* the closure's code address is an object pointer that libffi made
   * executable: POSIX lets it hold a function */
  void (*fp)(void);
  _Static_assert(sizeof fp == sizeof p->code, "function pointer size");
  memcpy(&fp, &p->code, sizeof fp);
  *out = fp;
  return AC_OK;
}
