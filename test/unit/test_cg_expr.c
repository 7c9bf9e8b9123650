/* test/unit/test_cg_expr.c: element code generation (lib/codegen/expr.c,
 * scalar.c) checked against the reference interpreter.
 *
 * Each test parses a small program, compiles the body of one function into
 * a one-chunk kernel that loads the parameters from a hand-built frame
 * (cg_load_frame), generates the body with cg_expr and stores the result
 * (cg_store_frame), JIT-compiles it (nat_compile) and runs it through a
 * pool of one thread. The same function runs in the interpreter on the
 * same arguments, and the results must agree exactly: integers and bools
 * by value, floats bit for bit (any NaN equals any NaN). A runtime error
 * must be the interpreter's: same message, same line and column.
 *
 * Programs return tuples of many operations so that one compilation covers
 * a whole operator table for one type; inputs are the cross product of edge
 * values (0, +-1, MIN, MAX, width-sized shift amounts, NaN, +-inf, -0.0,
 * denormals, halves for rounding) and a few pseudo-random ones.
 */
#include "codegen/cg.h"
#include "target/native.h"
#include "runtime/rt.h"

#include "arrayc/arrayc.h"
#include "unit.h"

#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LEAVES 96
#define MAX_WORDS 512

typedef struct leafinfo {
  ac_scalar sc;
  uint32_t rank;
  uint32_t word;
} leafinfo;

typedef struct prog {
  ac_context *ctx;
  ac_module *m;
  ac_function *ref;
  nat_jit *J;
  rt_pool *pool;
  pl_plan *plan;
  rt_kernel_fn k;
  leafinfo args[MAX_LEAVES], res[MAX_LEAVES];
  uint32_t nargs, nres, nwords;
  const char *src;
  bool ok;
} prog;

typedef struct leaves_ud {
  leafinfo *out;
  uint32_t *n;
  uint32_t *word;
} leaves_ud;

static void collect_leaf(void *ud, ac_scalar sc, uint32_t rank) {
  leaves_ud *u = ud;
  if (*u->n >= MAX_LEAVES)
    return;
  leafinfo *l = &u->out[(*u->n)++];
  l->sc = sc;
  l->rank = rank;
  l->word = *u->word;
  *u->word += rank ? 1 + rank : 1;
}

static void report(const char *what, ac_error *err) {
  fprintf(stderr, "%s: %s\n", what, err ? ac_error_message(err) : "(no error)");
  ac_error_destroy(err);
}

/* How prog_open_ex compiles. */
typedef struct prog_opts {
  bool reassoc;                /* set the cg_fn's reassoc flag */
  bool delay;                  /* hand array parameters to the body as CL_FUNC leaves */
  char **ir_out;               /* receives the unoptimised LLVM IR (LLVMDisposeMessage) */
  void (*bind)(ac_module *m);  /* binds extern functions before they are resolved */
  /* called after the parameters are bound, before cg_expr of the body */
  void (*setup)(cg_fn *k, ac_module *m, ir_ref body);
} prog_opts;

/* The reader of a delayed parameter: the element of the manifest leaf it
 * wraps (env), so values are the interpreter's while the code in between
 * must treat the leaf as readable only through the callback. */
static LLVMValueRef delayed_read(cg_fn *f, const cg_leaf *a, LLVMValueRef *idx, ir_ref at) {
  (void)at;
  const cg_leaf *src = a->env;
  return cg_load_elem(f, src, cg_linear(f, src->rank, src->ext, idx));
}

static void delay_arrays(cg_fn *k, cg_val *v) {
  cg_leaf *l = cg_new(k->M, (v->n ? v->n : 1) * sizeof *l);
  for (uint32_t i = 0; i < v->n; i++) {
    l[i] = v->l[i];
    if (l[i].kind != CL_ARRAY)
      continue;
    l[i].kind = CL_FUNC;
    l[i].read = delayed_read;
    l[i].env = &v->l[i];
  }
  v->l = l;
}

/* Parses src and compiles function `fn` both ways. */
static bool prog_open_ex(prog *p, const char *src, const char *fn, const prog_opts *o) {
  memset(p, 0, sizeof *p);
  p->src = src;
  p->ctx = ac_context_create();
  ac_error *err = NULL;
  if (ac_module_parse(p->ctx, "<test>", src, strlen(src), &p->m, &err) != AC_OK) {
    report("parse", err);
    return false;
  }
  if (o->bind)
    o->bind(p->m);
  if (ac_function_create(p->m, fn, AC_BACKEND_INTERP, &p->ref, &err) != AC_OK) {
    report("interp function", err);
    return false;
  }
  int32_t fi = ir_func_find(p->m, ir_sym_intern(p->ctx, fn, strlen(fn)));
  if (fi < 0)
    return false;
  const ir_func *f = &p->m->funcs[fi];
  uint32_t word = 0;
  leaves_ud ua = {p->args, &p->nargs, &word};
  for (uint32_t i = 0; i < f->nparams; i++)
    ir_ty_leaves(p->ctx, ir_func_param(p->m, f, i), collect_leaf, &ua);
  uint32_t resword = word;
  leaves_ud ur = {p->res, &p->nres, &word};
  ir_ty_leaves(p->ctx, f->result, collect_leaf, &ur);
  p->nwords = word;
  if (word > MAX_WORDS || p->nargs >= MAX_LEAVES || p->nres >= MAX_LEAVES)
    return false;

  if (nat_jit_create(p->ctx, &p->J, &err) != AC_OK) {
    report("jit", err);
    return false;
  }
  p->pool = rt_pool_create(p->ctx, 1);
  p->plan = pl_create(p->ctx, "test", "<test>");
  if (!p->pool || !p->plan)
    return false;
  cg_module M;
  if (cg_module_init(&M, p->m, p->plan, CG_TARGET_CPU, &err) != AC_OK) {
    report("cg_module_init", err);
    return false;
  }
  nat_prepare(p->J, &M);
  cg_fn *k = cg_kernel_begin(&M, "k");
  k->reassoc = o->reassoc;
  uint32_t w = 0, words[MAX_WORDS];
  for (uint32_t i = 0; i < MAX_WORDS; i++)
    words[i] = i;
  for (uint32_t i = 0; i < f->nparams; i++) {
    ir_type t = ir_func_param(p->m, f, i);
    cg_val v;
    cg_load_frame(k, t, words + w, &v);
    if (o->delay)
      delay_arrays(k, &v);
    cg_env_push(k, &v);
    w += cg_frame_words(p->ctx, t);
  }
  if (o->setup)
    o->setup(k, p->m, f->body);
  cg_val r;
  cg_expr(k, f->body, &r);
  cg_store_frame(k, words + resword, &r);
  cg_env_pop(k, f->nparams);
  cg_kernel_end(k);
  bool ok = M.st == AC_OK;
  if (!ok) {
    report("codegen", M.err);
    M.err = NULL;
  }
  if (ok && o->ir_out)
    *o->ir_out = LLVMPrintModuleToString(M.mod);
  const char *sym = "k";
  void *addr = NULL;
  if (ok && nat_compile(p->J, &M, &sym, 1, &addr, &err) != AC_OK) {
    report("nat_compile", err);
    ok = false;
  }
  cg_module_dispose(&M);
  p->k = (rt_kernel_fn)(uintptr_t)addr;
  p->ok = ok && addr;
  return p->ok;
}

static bool prog_open(prog *p, const char *src, const char *fn) {
  prog_opts o = {0};
  return prog_open_ex(p, src, fn, &o);
}

static void prog_close(prog *p) {
  if (p->ref)
    ac_function_destroy(p->ref);
  if (p->plan)
    pl_destroy(p->plan);
  if (p->pool)
    rt_pool_destroy(p->pool);
  if (p->J)
    nat_jit_destroy(p->J);
  if (p->m)
    ac_module_destroy(p->m);
  if (p->ctx)
    ac_context_destroy(p->ctx);
}

/* ---- scalars in datums and frame words ---- */

static bool is_signed_sc(ac_scalar sc) {
  return sc >= AC_I8 && sc <= AC_I64;
}

static bool is_float_sc(ac_scalar sc) {
  return sc == AC_F32 || sc == AC_F64;
}

/* A datum of kind sc from raw bits (integers: cut to the width and
 * extended by the kind's signedness), or from a double for floats. */
static ac_datum mk_int(ac_scalar sc, uint64_t bits) {
  ac_datum d;
  memset(&d, 0, sizeof d);
  d.kind = AC_DATUM_SCALAR;
  d.type = sc;
  if (sc == AC_BOOL) {
    d.s.b = bits & 1;
    return d;
  }
  unsigned w = (unsigned)ac_scalar_size(sc) * 8;
  if (w < 64) {
    uint64_t mask = ((uint64_t)1 << w) - 1;
    bits &= mask;
    if (is_signed_sc(sc) && (bits >> (w - 1)))
      bits |= ~mask;
  }
  d.s.u = bits;
  return d;
}

static ac_datum mk_float(ac_scalar sc, double x) {
  ac_datum d;
  memset(&d, 0, sizeof d);
  d.kind = AC_DATUM_SCALAR;
  d.type = sc;
  d.s.f = sc == AC_F32 ? (double)(float)x : x;
  return d;
}

static ac_datum mk_array(ac_context *ctx, ac_scalar sc, unsigned rank, const int64_t *ext,
                         const void *data) {
  ac_datum d;
  memset(&d, 0, sizeof d);
  d.kind = AC_DATUM_ARRAY;
  d.type = sc;
  d.array = ac_array_create(ctx, sc, rank, ext, data, NULL);
  return d;
}

static void put_scalar(uint64_t *word, const ac_datum *d) {
  union {
    uint8_t b;
    int8_t i8;
    int16_t i16;
    int32_t i32;
    int64_t i64;
    uint16_t u16;
    uint32_t u32;
    uint64_t u64;
    float f32;
    double f64;
  } v;
  size_t n = ac_scalar_size(d->type);
  switch (d->type) {
  case AC_BOOL:
    v.b = d->s.b;
    break;
  case AC_I8:
    v.i8 = (int8_t)d->s.i;
    break;
  case AC_I16:
    v.i16 = (int16_t)d->s.i;
    break;
  case AC_I32:
    v.i32 = (int32_t)d->s.i;
    break;
  case AC_I64:
    v.i64 = d->s.i;
    break;
  case AC_U8:
    v.b = (uint8_t)d->s.u;
    break;
  case AC_U16:
    v.u16 = (uint16_t)d->s.u;
    break;
  case AC_U32:
    v.u32 = (uint32_t)d->s.u;
    break;
  case AC_U64:
    v.u64 = d->s.u;
    break;
  case AC_F32:
    v.f32 = (float)d->s.f;
    break;
  default:
    v.f64 = d->s.f;
    break;
  }
  *word = 0x5a5a5a5a5a5a5a5aull; /* the unused bytes are unspecified */
  memcpy(word, &v, n);
}

/* The frame word of a scalar result as a datum like the interpreter's. */
static ac_datum get_scalar(ac_scalar sc, const uint64_t *word) {
  ac_datum d;
  memset(&d, 0, sizeof d);
  d.kind = AC_DATUM_SCALAR;
  d.type = sc;
  const unsigned char *p = (const unsigned char *)word;
  switch (sc) {
  case AC_BOOL:
    d.s.b = p[0] != 0;
    break;
  case AC_I8: {
    int8_t x;
    memcpy(&x, p, 1);
    d.s.i = x;
    break;
  }
  case AC_I16: {
    int16_t x;
    memcpy(&x, p, 2);
    d.s.i = x;
    break;
  }
  case AC_I32: {
    int32_t x;
    memcpy(&x, p, 4);
    d.s.i = x;
    break;
  }
  case AC_I64:
    memcpy(&d.s.i, p, 8);
    break;
  case AC_U8:
    d.s.u = p[0];
    break;
  case AC_U16: {
    uint16_t x;
    memcpy(&x, p, 2);
    d.s.u = x;
    break;
  }
  case AC_U32: {
    uint32_t x;
    memcpy(&x, p, 4);
    d.s.u = x;
    break;
  }
  case AC_U64:
    memcpy(&d.s.u, p, 8);
    break;
  case AC_F32: {
    float x;
    memcpy(&x, p, 4);
    d.s.f = x;
    break;
  }
  default:
    memcpy(&d.s.f, p, 8);
    break;
  }
  return d;
}

static bool same_scalar(const ac_datum *a, const ac_datum *b) {
  if (a->type != b->type)
    return false;
  if (a->type == AC_BOOL)
    return a->s.b == b->s.b;
  if (is_float_sc(a->type)) {
    if (isnan(a->s.f) || isnan(b->s.f))
      return isnan(a->s.f) && isnan(b->s.f);
    return memcmp(&a->s.f, &b->s.f, sizeof a->s.f) == 0;
  }
  return a->s.u == b->s.u;
}

static void print_datum(FILE *out, const ac_datum *d) {
  if (d->kind == AC_DATUM_ARRAY) {
    fprintf(out, "<array>");
  } else if (d->type == AC_BOOL) {
    fprintf(out, "%s", d->s.b ? "true" : "false");
  } else if (is_float_sc(d->type)) {
    fprintf(out, "%a", d->s.f);
  } else if (is_signed_sc(d->type)) {
    fprintf(out, "%lld", (long long)d->s.i);
  } else {
    fprintf(out, "%llu", (unsigned long long)d->s.u);
  }
}

static void print_args(const ac_datum *args, uint32_t n) {
  fprintf(stderr, "  arguments:");
  for (uint32_t i = 0; i < n; i++) {
    fputc(' ', stderr);
    print_datum(stderr, &args[i]);
  }
  fputc('\n', stderr);
}

/* Runs both ways on args and checks that they agree. Returns false (after
 * reporting) on a mismatch. */
static bool prog_check(prog *p, const ac_datum *args) {
  if (!p->ok)
    return false;
  uint64_t frame[MAX_WORDS];
  memset(frame, 0, sizeof frame);
  for (uint32_t i = 0; i < p->nargs; i++) {
    const leafinfo *l = &p->args[i];
    if (l->rank == 0) {
      put_scalar(&frame[l->word], &args[i]);
      continue;
    }
    frame[l->word] = (uint64_t)(uintptr_t)ac_array_data(args[i].array);
    const int64_t *ext = ac_array_extents(args[i].array);
    for (uint32_t d = 0; d < l->rank; d++)
      memcpy(&frame[l->word + 1 + d], &ext[d], 8);
  }
  rt_call call;
  memset(&call, 0, sizeof call);
  call.ctx = p->ctx;
  atomic_init(&call.failed, 0);
  rt_pool_launch(p->pool, &call, frame, p->k, 1, 1);

  ac_datum ref[MAX_LEAVES];
  ac_error *err = NULL;
  ac_status st = ac_function_call(p->ref, args, p->nargs, ref, p->nres, &err);
  bool ok = true;
  if (st != AC_OK) {
    char msg[512] = "";
    uint32_t line = 0, col = 0;
    if (atomic_load(&call.failed) && (uint32_t)call.site < p->plan->nsites) {
      const pl_site *s = &p->plan->sites[call.site];
      int64_t vals[RT_FAIL_VALS];
      rt_call_values(&call, vals);
      pl_site_format(msg, sizeof msg, s->fmt, RT_FAIL_VALS, vals);
      line = s->line;
      col = s->col;
    }
    if (!atomic_load(&call.failed) || strcmp(msg, ac_error_message(err)) != 0 ||
        line != ac_error_line(err) || col != ac_error_column(err)) {
      fprintf(stderr, "error mismatch in\n%s\n  interpreter: %u:%u: %s\n  compiled:    %u:%u: %s\n",
              p->src, ac_error_line(err), ac_error_column(err), ac_error_message(err), line, col,
              atomic_load(&call.failed) ? msg : "(no failure)");
      print_args(args, p->nargs);
      ok = false;
    }
    ac_error_destroy(err);
    return ok;
  }
  if (atomic_load(&call.failed)) {
    const pl_site *s = (uint32_t)call.site < p->plan->nsites ? &p->plan->sites[call.site] : NULL;
    fprintf(stderr, "compiled code failed (%s) where the interpreter did not in\n%s\n",
            s ? s->fmt : "?", p->src);
    print_args(args, p->nargs);
    ok = false;
  }
  for (uint32_t i = 0; i < p->nres && ok; i++) {
    const leafinfo *l = &p->res[i];
    if (l->rank != 0) {
      /* array results: compare extents and elements */
      const int64_t *ext = ac_array_extents(ref[i].array);
      int64_t n = 1;
      for (uint32_t d = 0; d < l->rank; d++) {
        int64_t e;
        memcpy(&e, &frame[l->word + 1 + d], 8);
        ok = ok && e == ext[d];
        n *= ext[d];
      }
      const void *data = (const void *)(uintptr_t)frame[l->word];
      ok = ok && (n == 0 || memcmp(data, ac_array_data(ref[i].array),
                                   (size_t)n * ac_scalar_size(l->sc)) == 0);
      if (!ok) {
        fprintf(stderr, "array result %u differs in\n%s\n", i, p->src);
        print_args(args, p->nargs);
      }
      continue;
    }
    ac_datum got = get_scalar(l->sc, &frame[l->word]);
    if (!same_scalar(&got, &ref[i])) {
      fprintf(stderr, "result %u differs in\n%s\n  interpreter: ", i, p->src);
      print_datum(stderr, &ref[i]);
      fprintf(stderr, "\n  compiled:    ");
      print_datum(stderr, &got);
      fputc('\n', stderr);
      print_args(args, p->nargs);
      ok = false;
    }
  }
  for (uint32_t i = 0; i < p->nres; i++)
    ac_datum_release(&ref[i]);
  return ok;
}

/* ---- edge values ---- */

static uint64_t rng_next(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* Fills out with edge values of kind sc; returns how many. */
static uint32_t edge_values(ac_scalar sc, ac_datum *out, uint32_t max) {
  uint32_t n = 0;
  uint64_t seed = 0x9e3779b97f4a7c15ull ^ (uint64_t)sc;
  if (sc == AC_BOOL) {
    out[n++] = mk_int(sc, 0);
    out[n++] = mk_int(sc, 1);
    return n;
  }
  if (is_float_sc(sc)) {
    bool f32 = sc == AC_F32;
    const double vals[] = {0.0,  -0.0, 1.0,  -1.0,  0.5,  -0.5,  1.5,     2.5,        -2.5,
                           3.0,  0.1,  -7.25, 100.0, 1e10, -1e-10, 3.14159, NAN,        INFINITY,
                           -INFINITY, f32 ? FLT_MAX : DBL_MAX, f32 ? FLT_MIN : DBL_MIN,
                           f32 ? 1e-45 : 5e-324, f32 ? -1e-40 : -1e-310, 2147483648.0,
                           -2147483649.0, 9.3e18, -9.3e18, 1.8e19, 255.9, -128.5, 65535.5};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0] && n < max; i++)
      out[n++] = mk_float(sc, vals[i]);
    for (int i = 0; i < 4 && n < max; i++) {
      uint64_t r = rng_next(&seed);
      out[n++] = mk_float(sc, ((double)(r >> 11) / 9007199254740992.0 - 0.5) * 20.0);
    }
    return n;
  }
  unsigned w = (unsigned)ac_scalar_size(sc) * 8;
  uint64_t min = is_signed_sc(sc) ? (uint64_t)1 << (w - 1) : 0;
  uint64_t max_ = is_signed_sc(sc) ? min - 1 : (w == 64 ? UINT64_MAX : ((uint64_t)1 << w) - 1);
  const uint64_t vals[] = {0,       1,       (uint64_t)-1, 2,       (uint64_t)-2,  3,  7,
                           min,     max_,    min + 1,      max_ - 1, w - 1,        w, w + 1,
                           2 * w,   100,     (uint64_t)-100, 0x55,  0x80,          0xff};
  for (size_t i = 0; i < sizeof vals / sizeof vals[0] && n < max; i++)
    out[n++] = mk_int(sc, vals[i]);
  for (int i = 0; i < 4 && n < max; i++)
    out[n++] = mk_int(sc, rng_next(&seed));
  return n;
}

static const ac_scalar all_scalars[] = {AC_BOOL, AC_I8,  AC_I16, AC_I32, AC_I64, AC_U8,
                                        AC_U16,  AC_U32, AC_U64, AC_F32, AC_F64};
static const ac_scalar int_scalars[] = {AC_I8, AC_I16, AC_I32, AC_I64,
                                        AC_U8, AC_U16, AC_U32, AC_U64};

/* Checks a two-argument function of kind sc on every pair of edge values. */
static void check_pairs(prog *p, ac_scalar sc) {
  ac_datum vals[64], args[2];
  uint32_t n = edge_values(sc, vals, 64);
  int bad = 0;
  for (uint32_t i = 0; i < n && bad < 3; i++)
    for (uint32_t j = 0; j < n && bad < 3; j++) {
      args[0] = vals[i];
      args[1] = vals[j];
      if (!prog_check(p, args))
        bad++;
    }
  CHECK(p->ok);
  CHECK_EQ_INT(bad, 0);
}

static void check_singles(prog *p, ac_scalar sc) {
  ac_datum vals[64];
  uint32_t n = edge_values(sc, vals, 64);
  int bad = 0;
  for (uint32_t i = 0; i < n && bad < 3; i++)
    if (!prog_check(p, &vals[i]))
      bad++;
  CHECK(p->ok);
  CHECK_EQ_INT(bad, 0);
}

/* ---- scalar operations ---- */

UNIT_TEST(int_operators) {
  for (size_t t = 0; t < sizeof int_scalars / sizeof int_scalars[0]; t++) {
    const char *T = ac_scalar_name(int_scalars[t]);
    char src[1024];
    snprintf(src, sizeof src,
             "fn f(a: %s, b: %s) -> (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, bool, bool, "
             "bool, bool, bool, bool, %s, %s, %s, %s, %s) {\n"
             "  (a + b, a - b, a * b, a / b, a %% b, a & b, a | b, a ^ b, a << b, a >> b, -a,\n"
             "   a == b, a != b, a < b, a <= b, a > b, a >= b, ~a, abs(a), min(a, b), max(a, b),"
             " b / a)\n}\n",
             T, T, T, T, T, T, T, T, T, T, T, T, T, T, T, T, T, T);
    prog p;
    prog_open(&p, src, "f");
    check_pairs(&p, int_scalars[t]);
    prog_close(&p);
  }
}

UNIT_TEST(float_operators) {
  static const ac_scalar fl[] = {AC_F32, AC_F64};
  for (size_t t = 0; t < 2; t++) {
    const char *T = ac_scalar_name(fl[t]);
    char src[1024];
    snprintf(src, sizeof src,
             "fn f(a: %s, b: %s) -> (%s, %s, %s, %s, %s, bool, bool, bool, bool, bool, bool, "
             "%s, %s, %s, %s, %s, %s, %s, %s) {\n"
             "  (a + b, a - b, a * b, a / b, a %% b, a == b, a != b, a < b, a <= b, a > b,\n"
             "   a >= b, min(a, b), max(a, b), pow(a, b), atan2(a, b), hypot(a, b),\n"
             "   copysign(a, b), fma(a, b, a), fma(a, a, b))\n}\n",
             T, T, T, T, T, T, T, T, T, T, T, T, T, T, T);
    prog p;
    prog_open(&p, src, "f");
    check_pairs(&p, fl[t]);
    prog_close(&p);
  }
}

UNIT_TEST(float_functions) {
  static const ac_scalar fl[] = {AC_F32, AC_F64};
  for (size_t t = 0; t < 2; t++) {
    const char *T = ac_scalar_name(fl[t]);
    char src[2048], ty[600] = "";
    static const char *const fns[] = {"abs",  "sqrt",  "rsqrt", "cbrt",  "exp",  "exp2",
                                      "expm1", "log",  "log2",  "log10", "log1p", "sin",
                                      "cos",  "tan",   "asin",  "acos",  "atan", "sinh",
                                      "cosh", "tanh",  "floor", "ceil",  "round", "trunc",
                                      "erf",  "erfc"};
    char body[800] = "-a";
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
      strcat(body, ", ");
      strcat(body, fns[i]);
      strcat(body, "(a)");
    }
    for (size_t i = 0; i <= sizeof fns / sizeof fns[0]; i++) {
      strcat(ty, T);
      strcat(ty, ", ");
    }
    snprintf(src, sizeof src,
             "fn f(a: %s) -> (%sbool, bool, bool) {\n  (%s, isnan(a), isinf(a), isfinite(a))\n}\n",
             T, ty, body);
    prog p;
    prog_open(&p, src, "f");
    check_singles(&p, fl[t]);
    prog_close(&p);
  }
}

UNIT_TEST(bool_operators) {
  prog p;
  prog_open(&p,
            "fn f(a: bool, b: bool) -> (bool, bool, bool, bool, bool, bool) {\n"
            "  (a == b, a != b, !a, a && b, a || b, !(a && !b) || a)\n}\n",
            "f");
  check_pairs(&p, AC_BOOL);
  prog_close(&p);
}

UNIT_TEST(casts) {
  for (size_t t = 0; t < sizeof all_scalars / sizeof all_scalars[0]; t++) {
    const char *F = ac_scalar_name(all_scalars[t]);
    char src[1024], ty[256] = "", body[512] = "";
    for (size_t u = 0; u < sizeof all_scalars / sizeof all_scalars[0]; u++) {
      const char *T = ac_scalar_name(all_scalars[u]);
      char b[64];
      snprintf(b, sizeof b, "%s%s(a)", u ? ", " : "", T);
      strcat(body, b);
      snprintf(b, sizeof b, "%s%s", u ? ", " : "", T);
      strcat(ty, b);
    }
    snprintf(src, sizeof src, "fn f(a: %s) -> (%s) {\n  (%s)\n}\n", F, ty, body);
    prog p;
    prog_open(&p, src, "f");
    check_singles(&p, all_scalars[t]);
    prog_close(&p);
  }
}

/* Literals are constants in the generated code: LLVM folds the operations,
 * and the folded results must be the language's too. */
UNIT_TEST(constant_operands) {
  prog p;
  prog_open(&p,
            "fn f(x: i32) -> (i32, i32, i32, i32, i8, u8, i64, f32, f64, bool, f32, u64) {\n"
            "  (-2147483648 / -1, -2147483648 % -1, 7 / 0, 7 % 0, 127i8 + 1i8, 0u8 - 1u8,\n"
            "   1i64 << 65i64, 0.1f32 + 0.2f32, min(-0.0, 0.0), 0.0 / 0.0 == 0.0 / 0.0,\n"
            "   f32(16777217), u64(-1.5) + u64(x))\n}\n",
            "f");
  ac_datum a = mk_int(AC_I32, 3);
  CHECK(prog_check(&p, &a));
  prog_close(&p);
}

/* Math functions of literals: LLVM would fold them (computing an f32
 * function in double, which rounds differently from expf for these very
 * arguments) or rewrite them (pow(x, 0.5)); the compiled code must still
 * call libm as the interpreter does. */
UNIT_TEST(constant_math) {
  prog p;
  prog_open(&p,
            "fn f(x: f32) -> (f32, f32, f32, f32, f32, f32, f64, f64, f32) {\n"
            "  (tanh(0.0078125), cbrt(0.00781253912), exp(0.00782572757), sin(0.00781759154),\n"
            "   log(0.00787163619), erf(0.0078125326), pow(x64(x), 0.5), exp2(3.0),\n"
            "   pow(x, 0.5))\n}\n"
            "fn x64(x: f32) -> f64 { f64(x) }\n",
            "f");
  ac_datum vals[64];
  uint32_t n = edge_values(AC_F32, vals, 64);
  for (uint32_t i = 0; i < n && p.ok; i++)
    CHECK(prog_check(&p, &vals[i]));
  CHECK(p.ok);
  prog_close(&p);
}

/* ---- expression forms ---- */

static void check_int_inputs(prog *p, ac_scalar sc, uint32_t nargs) {
  ac_datum vals[64], args[3];
  uint32_t n = edge_values(sc, vals, 64);
  int bad = 0;
  for (uint32_t i = 0; i < n && bad < 3; i++)
    for (uint32_t j = 0; j < (nargs > 1 ? n : 1) && bad < 3; j++) {
      args[0] = vals[i];
      args[1] = vals[j];
      args[2] = vals[(i + j) % n];
      if (!prog_check(p, args))
        bad++;
    }
  CHECK(p->ok);
  CHECK_EQ_INT(bad, 0);
}

UNIT_TEST(lets_ifs_tuples) {
  prog p;
  prog_open(&p,
            "fn f(a: i32, b: i32) -> (i32, (i32, bool), i32) {\n"
            "  let t = (a + 1, (b * 2, a < b));\n"
            "  let (x, y) = t;\n"
            "  let z = if y.1 { let w = x - y.0; w * w } else if a == 0 { 5 } else { t.0 };\n"
            "  let u = if a > b { (a, b) } else { (b, a) };\n"
            "  (z, (u.0 - u.1, !y.1), if x % 3 == 0 { x / (b | 1) } else { x % (b | 1) })\n"
            "}\n",
            "f");
  check_int_inputs(&p, AC_I32, 2);
  prog_close(&p);
}

UNIT_TEST(calls_inlined) {
  prog p;
  prog_open(&p,
            "fn sq(x: i64) -> i64 { x * x }\n"
            "fn pair(x: i64, y: i64) -> (i64, i64) { (sq(x) - y, x + sq(y)) }\n"
            "fn f(a: i64, b: i64) -> (i64, i64, i64) {\n"
            "  let (p, q) = pair(a, b);\n"
            "  let a2 = sq(p + 1);\n"
            "  (p, q, a2 + pair(q, a).1)\n"
            "}\n",
            "f");
  check_int_inputs(&p, AC_I64, 2);
  prog_close(&p);
}

UNIT_TEST(scalar_loops) {
  prog p;
  /* collatz steps with a bound, a two-variable loop and a loop inside an if */
  prog_open(&p,
            "fn f(a: u16, b: u16) -> (i32, u16, u64) {\n"
            "  let (v, n) = loop (v = u64(a) + 1, n = 0) while v != 1 && n < 1000 {\n"
            "    (if v % 2 == 0 { v / 2 } else { 3 * v + 1 }, n + 1)\n"
            "  };\n"
            "  let g = loop (x = a, y = b) while y != 0u16 { (y, x % y) };\n"
            "  let s = if a > b {\n"
            "    let (s, i) = loop (s = 0u64, i = 0u16) while i < a { (s + u64(i), i + 1) };\n"
            "    s + u64(i)\n"
            "  } else { 7 };\n"
            "  (n, g.0, s + v)\n"
            "}\n",
            "f");
  check_int_inputs(&p, AC_U16, 2);
  prog_close(&p);
}

UNIT_TEST(float_expression) {
  prog p;
  prog_open(&p,
            "fn f(x: f32, y: f32) -> (f32, f64, i32) {\n"
            "  let d = x * x + y * y;\n"
            "  let r = if d > 1.0 { sqrt(d) } else { exp(-d) };\n"
            "  (r * 0.5 + min(x, y), f64(r) * 3.0, i32(floor(x * 100.0)))\n"
            "}\n",
            "f");
  check_pairs(&p, AC_F32);
  prog_close(&p);
}

/* ---- arrays: indexing, len, shape, short-circuit ---- */

static void check_array_index(prog *p, const int64_t *idx, size_t nidx, ac_datum arr) {
  int bad = 0;
  for (size_t i = 0; i < nidx && bad < 3; i++) {
    ac_datum args[2] = {arr, mk_int(AC_I64, (uint64_t)idx[i])};
    if (!prog_check(p, args))
      bad++;
  }
  CHECK(p->ok);
  CHECK_EQ_INT(bad, 0);
}

UNIT_TEST(short_circuit) {
  static const int64_t idx[] = {-5, -1, 0, 1, 2, 3, 4, 100, INT64_MIN, INT64_MAX};
  ac_context *ctx = ac_context_create();
  int32_t data[3] = {5, -6, 7};
  int64_t ext = 3;
  ac_datum arr = mk_array(ctx, AC_I32, 1, &ext, data);
  /* the right operand reads out of bounds whenever it would be skipped */
  static const char *const progs[] = {
      "fn f(xs: i32[], i: i64) -> bool {\n  i >= 0 && i < len(xs) && xs[i] > 0\n}\n",
      "fn f(xs: i32[], i: i64) -> bool {\n  i < 0 || i >= len(xs) || xs[i] > 0\n}\n",
      "fn f(xs: i32[], i: i64) -> i32 {\n  if i >= 0 && i < len(xs) { xs[i] } else { -1 }\n}\n",
      "fn f(xs: i32[], i: i64) -> (i32, bool) {\n"
      "  let ok = i >= 0 && i < len(xs);\n"
      "  (if !ok { 0 } else { xs[i] * 2 }, !ok || xs[i] != 7)\n}\n",
  };
  for (size_t k = 0; k < sizeof progs / sizeof progs[0]; k++) {
    prog p;
    prog_open(&p, progs[k], "f");
    check_array_index(&p, idx, sizeof idx / sizeof idx[0], arr);
    prog_close(&p);
  }
  ac_datum_release(&arr);
  ac_context_destroy(ctx);
}

UNIT_TEST(index_out_of_bounds) {
  static const int64_t idx[] = {-1, 0, 2, 3, 4, INT64_MIN, INT64_MAX};
  ac_context *ctx = ac_context_create();
  double data[6] = {1, 2, 3, 4, 5, 6};
  int64_t ext[2] = {2, 3};
  ac_datum m = mk_array(ctx, AC_F64, 2, ext, data);
  prog p;
  prog_open(&p,
            "fn f(m: f64[,], i: i64) -> (f64, i64, (i64, i64)) {\n"
            "  let a = m[1, i % 4];\n"
            "  (a + m[i, 0], len(m), shape(m))\n"
            "}\n",
            "f");
  check_array_index(&p, idx, sizeof idx / sizeof idx[0], m);
  prog_close(&p);
  ac_datum_release(&m);
  ac_context_destroy(ctx);
}

/* Indices of every integer kind: negative signed ones and u64 values
 * beyond INT64_MAX must fail with the interpreter's number. */
UNIT_TEST(index_kinds) {
  ac_context *ctx = ac_context_create();
  uint8_t data[4] = {1, 0, 1, 1};
  int64_t ext = 4;
  ac_datum arr = mk_array(ctx, AC_BOOL, 1, &ext, data);
  for (size_t t = 0; t < sizeof int_scalars / sizeof int_scalars[0]; t++) {
    char src[256];
    snprintf(src, sizeof src, "fn f(xs: bool[], i: %s) -> bool {\n  !xs[i]\n}\n",
             ac_scalar_name(int_scalars[t]));
    prog p;
    prog_open(&p, src, "f");
    ac_datum vals[64];
    uint32_t n = edge_values(int_scalars[t], vals, 64);
    int bad = 0;
    for (uint32_t i = 0; i < n && bad < 3; i++) {
      ac_datum args[2] = {arr, vals[i]};
      if (!prog_check(&p, args))
        bad++;
    }
    CHECK(p.ok);
    CHECK_EQ_INT(bad, 0);
    prog_close(&p);
  }
  ac_datum_release(&arr);
  ac_context_destroy(ctx);
}

/* A tuple of arrays indexed as one array: the shapes must agree. */
UNIT_TEST(tuple_of_arrays) {
  ac_context *ctx = ac_context_create();
  int32_t a[4] = {1, 2, 3, 4};
  float b[4] = {0.5f, 1.5f, 2.5f, 3.5f};
  int64_t e4 = 4, e3 = 3;
  ac_datum xs = mk_array(ctx, AC_I32, 1, &e4, a);
  ac_datum ys = mk_array(ctx, AC_F32, 1, &e4, b);
  ac_datum zs = mk_array(ctx, AC_F32, 1, &e3, b);
  prog p;
  prog_open(&p,
            "fn f(xs: i32[], ys: f32[], i: i64) -> (i32, f32, i64) {\n"
            "  let t = (xs, ys);\n"
            "  let (x, y) = t[i];\n"
            "  (x, y, len(t))\n"
            "}\n",
            "f");
  int bad = 0;
  for (int64_t i = -1; i <= 4 && bad < 3; i++) {
    ac_datum args[3] = {xs, ys, mk_int(AC_I64, (uint64_t)i)};
    if (!prog_check(&p, args))
      bad++;
    ac_datum args2[3] = {xs, zs, mk_int(AC_I64, (uint64_t)i)};
    if (!prog_check(&p, args2))
      bad++;
  }
  CHECK(p.ok);
  CHECK_EQ_INT(bad, 0);
  prog_close(&p);
  ac_datum_release(&xs);
  ac_datum_release(&ys);
  ac_datum_release(&zs);
  ac_context_destroy(ctx);
}

/* A loop whose exit depends on a read that fails must stop (it polls the
 * runtime), with the interpreter's error. */
UNIT_TEST(failing_loop_stops) {
  ac_context *ctx = ac_context_create();
  int64_t data[4] = {3, 1, 4, 1};
  int64_t ext = 4;
  ac_datum arr = mk_array(ctx, AC_I64, 1, &ext, data);
  prog p;
  prog_open(&p,
            "fn f(xs: i64[], k: i64) -> i64 {\n"
            "  loop (i = 0i64) while xs[i] != k { i + 1 }\n"
            "}\n",
            "f");
  static const int64_t ks[] = {3, 4, 9, -1};
  check_array_index(&p, ks, sizeof ks / sizeof ks[0], arr);
  prog_close(&p);
  ac_datum_release(&arr);
  ac_context_destroy(ctx);
}

/* Array values through lets, ifs and calls (manifest leaves join with
 * phis); an array result is the parameter's own data. */
UNIT_TEST(array_values) {
  ac_context *ctx = ac_context_create();
  int16_t a[3] = {1, 2, 3}, b[2] = {9, 8};
  int64_t e3 = 3, e2 = 2;
  ac_datum xs = mk_array(ctx, AC_I16, 1, &e3, a);
  ac_datum ys = mk_array(ctx, AC_I16, 1, &e2, b);
  prog p;
  prog_open(&p,
            "fn pick(c: bool, a: i16[], b: i16[]) -> i16[] { if c { a } else { b } }\n"
            "fn f(xs: i16[], ys: i16[], i: i64) -> (i16, i64, i16[]) {\n"
            "  let z = pick(i > 0, xs, ys);\n"
            "  (z[i % len(z)], len(z), pick(i < 1, xs, ys))\n"
            "}\n",
            "f");
  int bad = 0;
  for (int64_t i = -3; i <= 3 && bad < 3; i++) {
    ac_datum args[3] = {xs, ys, mk_int(AC_I64, (uint64_t)i)};
    if (!prog_check(&p, args))
      bad++;
  }
  CHECK(p.ok);
  CHECK_EQ_INT(bad, 0);
  prog_close(&p);
  ac_datum_release(&xs);
  ac_datum_release(&ys);
  ac_context_destroy(ctx);
}

/* The same with the array parameters delayed (CL_FUNC leaves, as fusion
 * hands them over): joins and loop states must copy them into temporary
 * memory, reads and extents go through the leaf. */
UNIT_TEST(delayed_arrays) {
  ac_context *ctx = ac_context_create();
  int16_t a[3] = {1, -2, 3}, b[2] = {9, 8};
  int64_t e3 = 3, e2 = 2;
  ac_datum xs = mk_array(ctx, AC_I16, 1, &e3, a);
  ac_datum ys = mk_array(ctx, AC_I16, 1, &e2, b);
  prog p;
  prog_opts o = {.delay = true};
  prog_open_ex(&p,
               "fn f(xs: i16[], ys: i16[], i: i64) -> (i16, i64, i64, i16, (i16, i16)) {\n"
               "  let z = if i > 0 { xs } else { ys };\n"
               "  let (a, n) = loop (a = xs, n = 0i64) while n < i {\n"
               "    (if n % 2 == 0 { ys } else { xs }, n + 1)\n"
               "  };\n"
               "  let s = loop (s = 0i16, j = 0i64) while j < len(a) {\n"
               "    (s + a[j] * i16(j + 1), j + 1)\n"
               "  };\n"
               "  let t = (xs, z);\n"
               "  (z[i % len(z)], len(z), len(a) * 10 + n, s.0, t[i])\n"
               "}\n",
               "f", &o);
  int bad = 0;
  for (int64_t i = -3; i <= 4 && bad < 3; i++) {
    ac_datum args[3] = {xs, ys, mk_int(AC_I64, (uint64_t)i)};
    if (!prog_check(&p, args))
      bad++;
  }
  CHECK(p.ok);
  CHECK_EQ_INT(bad, 0);
  prog_close(&p);
  ac_datum_release(&xs);
  ac_datum_release(&ys);
  ac_context_destroy(ctx);
}

/* A pre-computed subterm (f->pre_ref/pre_val) is used as it is: here
 * `a + 1` is declared to be 41 whatever a is. */
static void pre_setup(cg_fn *k, ac_module *m, ir_ref body) {
  ir_ref *ref = cg_new(k->M, sizeof *ref);
  cg_val *val = cg_new(k->M, sizeof *val);
  cg_leaf *l = cg_new(k->M, sizeof *l);
  ref[0] = ir_kid(m, body, 0);
  l->kind = CL_SCALAR;
  l->sc = AC_I32;
  l->v = LLVMConstInt(k->M->t_i32, 41, 0);
  val->type = ir_node_get(m, ref[0])->type;
  val->n = 1;
  val->l = l;
  k->pre_ref = ref;
  k->pre_val = val;
  k->npre = 1;
}

UNIT_TEST(precomputed_subterms) {
  prog p;
  prog_opts o = {.setup = pre_setup};
  CHECK(prog_open_ex(&p, "fn f(a: i32) -> i32 { (a + 1) * 2 }\n", "f", &o));
  for (int a = -2; a <= 2 && p.ok; a++) {
    uint64_t frame[2] = {0, 0};
    ac_datum d = mk_int(AC_I32, (uint64_t)a);
    put_scalar(&frame[0], &d);
    rt_call call;
    memset(&call, 0, sizeof call);
    call.ctx = p.ctx;
    atomic_init(&call.failed, 0);
    rt_pool_launch(p.pool, &call, frame, p.k, 1, 1);
    CHECK(!atomic_load(&call.failed));
    CHECK_EQ_INT(get_scalar(AC_I32, &frame[1]).s.i, 82);
  }
  prog_close(&p);
}

/* Inlined call chains nest code generation: below the limit the result is
 * the interpreter's, beyond it compilation fails cleanly (no stack
 * overflow) with AC_ERR_UNSUPPORTED. */
static char *deep_chain(int nfun, int depth) {
  size_t cap = (size_t)nfun * ((size_t)depth * 8 + 128) + 64, n = 0;
  char *s = malloc(cap);
  if (!s)
    return NULL;
  for (int k = 0; k < nfun; k++) {
    n += (size_t)snprintf(s + n, cap - n, "fn g%d(x: i64) -> i64 {\n  ", k);
    for (int d = 0; d < depth; d++)
      n += (size_t)snprintf(s + n, cap - n, "%s(", d % 2 ? "x ^ " : "1 + ");
    if (k + 1 < nfun)
      n += (size_t)snprintf(s + n, cap - n, "g%d(x)", k + 1);
    else
      n += (size_t)snprintf(s + n, cap - n, "x");
    for (int d = 0; d < depth; d++)
      s[n++] = ')';
    n += (size_t)snprintf(s + n, cap - n, "\n}\n");
  }
  return s;
}

UNIT_TEST(deep_calls) {
  char *ok_src = deep_chain(12, 200), *deep_src = deep_chain(30, 200);
  CHECK(ok_src && deep_src);
  if (ok_src) {
    prog p;
    prog_open(&p, ok_src, "g0");
    ac_datum vals[64];
    uint32_t n = edge_values(AC_I64, vals, 64);
    for (uint32_t i = 0; i < n && p.ok; i++)
      CHECK(prog_check(&p, &vals[i]));
    CHECK(p.ok);
    prog_close(&p);
  }
  if (deep_src) {
    prog p;
    CHECK(!prog_open(&p, deep_src, "g0"));
    prog_close(&p);
  }
  free(ok_src);
  free(deep_src);
}

/* ---- extern functions ---- */

static double ext_scale(double x, int8_t k) {
  return x * k;
}
static bool ext_odd(uint16_t v) {
  return v & 1;
}

static void bind_externs(ac_module *m) {
  ac_error *err = NULL;
  CHECK(ac_module_bind_extern(m, "ext_scale", (void (*)(void))ext_scale, &err) == AC_OK);
  CHECK(ac_module_bind_extern(m, "ext_odd", (void (*)(void))ext_odd, &err) == AC_OK);
  ac_error_destroy(err);
}

/* Small integer and bool parameters and results cross the C ABI (signext,
 * zeroext); the bool result feeds a short-circuit. */
UNIT_TEST(extern_calls) {
  prog p;
  prog_opts o = {.bind = bind_externs};
  prog_open_ex(&p,
               "extern fn ext_scale(x: f64, k: i8) -> f64;\n"
               "extern fn ext_odd(v: u16) -> bool;\n"
               "fn f(x: f64, k: i8) -> (f64, bool) {\n"
               "  (ext_scale(x + 1.0, k), ext_odd(u16(k)) && ext_scale(x, 2i8) > 0.0)\n"
               "}\n",
               "f", &o);
  ac_datum xs[64], ks[64];
  uint32_t nx = edge_values(AC_F64, xs, 64), nk = edge_values(AC_I8, ks, 64);
  int bad = 0;
  for (uint32_t i = 0; i < nx && bad < 3; i++)
    for (uint32_t j = 0; j < nk && bad < 3; j++) {
      ac_datum args[2] = {xs[i], ks[j]};
      if (!prog_check(&p, args))
        bad++;
    }
  CHECK(p.ok);
  CHECK_EQ_INT(bad, 0);
  prog_close(&p);
}

/* ---- the IR itself ---- */

/* With f->reassoc, float + - * carry `reassoc` and nothing else; without
 * it, no fast-math flag at all. */
UNIT_TEST(reassoc_flag) {
  const char *src = "fn f(a: f32, b: f32) -> (f32, f32, f32, f32) { (a + b, a - b, a * b, a / b) }\n";
  for (int r = 0; r < 2; r++) {
    prog p;
    char *ir = NULL;
    prog_opts o = {.reassoc = r == 1, .ir_out = &ir};
    CHECK(prog_open_ex(&p, src, "f", &o));
    CHECK(ir != NULL);
    if (ir) {
      CHECK((strstr(ir, "fadd reassoc float") != NULL) == (r == 1));
      CHECK((strstr(ir, "fsub reassoc float") != NULL) == (r == 1));
      CHECK((strstr(ir, "fmul reassoc float") != NULL) == (r == 1));
      CHECK(strstr(ir, "fdiv float") != NULL);
      CHECK(strstr(ir, "fast") == NULL && strstr(ir, "nnan") == NULL &&
            strstr(ir, "ninf") == NULL && strstr(ir, "contract") == NULL);
      LLVMDisposeMessage(ir);
    }
    prog_close(&p);
  }
}

UNIT_TEST(needs_tmp) {
  static const struct {
    const char *src;
    bool want;
  } cases[] = {
      {"fn f(xs: i32[], i: i64) -> i32 { xs[i] + 1 }\n", false},
      {"fn f(xs: i32[], i: i64) -> i32 { fold(|a, b| a + b, 0, xs) }\n", true},
      {"fn f(xs: i32[], i: i64) -> i32 { [1, 2, 3][i] }\n", true},
      {"fn g(xs: i32[]) -> i64 { len(map(|x| x, xs)) }\n"
       "fn f(xs: i32[], i: i64) -> i64 { if i > 0 { g(xs) } else { 0 } }\n",
       true},
      {"fn g(x: i32) -> i32 { x * 2 }\n"
       "fn f(xs: i32[], i: i64) -> i32 { loop (a = 0) while a < 10 { g(a) + 1 } }\n",
       false},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ac_context *ctx = ac_context_create();
    ac_module *m = NULL;
    ac_error *err = NULL;
    CHECK(ac_module_parse(ctx, "<test>", cases[i].src, strlen(cases[i].src), &m, &err) == AC_OK);
    if (m) {
      int32_t fi = ir_func_find(m, ir_sym_intern(ctx, "f", 1));
      CHECK(fi >= 0);
      if (fi >= 0)
        CHECK(cg_needs_tmp(m, m->funcs[fi].body) == cases[i].want);
      ac_module_destroy(m);
    } else {
      report("parse", err);
      err = NULL;
    }
    ac_error_destroy(err);
    ac_context_destroy(ctx);
  }
}

UNIT_MAIN(int_operators, float_operators, float_functions, bool_operators, casts,
          constant_operands, constant_math, lets_ifs_tuples, calls_inlined, scalar_loops, float_expression,
          short_circuit, index_out_of_bounds, index_kinds, tuple_of_arrays, failing_loop_stops,
          array_values, delayed_arrays, precomputed_subterms, deep_calls, extern_calls,
          reassoc_flag, needs_tmp)
