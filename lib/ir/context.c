/* lib/ir/context.c: contexts, memory, interned strings and types, buffers.
 *
 * The context is the only owner of long-lived shared state (MIR's rule: no
 * globals). Strings and types are hash-consed so that equality is an integer
 * comparison, which keeps the verifier and later hashing of IR simple. Types
 * are normalised on construction: an array whose element is a tuple is stored
 * as the tuple of arrays (Accelerate's structure-of-arrays representation),
 * so the two spellings are one type.
 */
#include "ir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ty_rec {
  ir_tykind kind;
  ac_scalar sc;
  uint32_t rank, n, fields; /* fields: offset in ctx->tyfields */
  ir_type elem, ret;
  uint32_t hash;
} ty_rec;

struct ac_context {
  ac_realloc_fn rfn;
  void *ud;
  /* interned strings: strs[0] unused */
  char **strs;
  uint32_t *strlens;
  size_t nstrs, capstrs;
  uint32_t *strtab; /* open addressing, 0 = empty */
  size_t strtabcap;
  /* interned types: tys[0] unused */
  ty_rec *tys;
  size_t ntys, captys;
  ir_type *tyfields;
  size_t ntyfields, captyfields;
  uint32_t *tytab;
  size_t tytabcap;
  bool oom;
  /* the runtime API's default runtimes (ir_ctx_set_runtimes) */
  void *runtimes;
  void (*runtimes_cleanup)(ac_context *ctx, void *p);
  ir_block_cache *blocks; /* freed large array buffers (blockcache.c) */
  /* warnings (ac_context_set_warning_handler) and the positions warned */
  ac_warning_fn warn;
  void *warn_ud;
  struct {
    ir_sym file;
    unsigned line, col;
  } *warned;
  size_t nwarned, capwarned;
};

/* ---- memory ---- */

static void *default_realloc(void *ud, void *p, size_t n) {
  (void)ud;
  if (n == 0) {
    free(p);
    return NULL;
  }
  return realloc(p, n);
}

void *ac_alloc(ac_context *ctx, size_t n) { return ctx->rfn(ctx->ud, NULL, n ? n : 1); }

void *ac_realloc(ac_context *ctx, void *p, size_t n) { return ctx->rfn(ctx->ud, p, n ? n : 1); }

void ac_free(ac_context *ctx, void *p) {
  if (p)
    ctx->rfn(ctx->ud, p, 0);
}

char *ac_strndup(ac_context *ctx, const char *s, size_t n) {
  char *r = ac_alloc(ctx, n + 1);
  if (!r)
    return NULL;
  memcpy(r, s, n);
  r[n] = 0;
  return r;
}

char *ac_strdup(ac_context *ctx, const char *s) { return ac_strndup(ctx, s, strlen(s)); }

bool ac_grow(ac_context *ctx, void **vec, size_t *cap, size_t need, size_t size) {
  if (need <= *cap)
    return true;
  size_t nc = *cap ? *cap : 16;
  while (nc < need)
    nc *= 2;
  void *nv = ac_realloc(ctx, *vec, nc * size);
  if (!nv)
    return false;
  *vec = nv;
  *cap = nc;
  return true;
}

void ac_string_destroy(ac_context *ctx, char *s) { ac_free(ctx, s); }

/* ---- context ---- */

ac_context *ac_context_create_with_allocator(ac_realloc_fn fn, void *ud) {
  ac_context *ctx = fn(ud, NULL, sizeof *ctx);
  if (!ctx)
    return NULL;
  memset(ctx, 0, sizeof *ctx);
  ctx->rfn = fn;
  ctx->ud = ud;
  ctx->nstrs = 1;
  ctx->ntys = 1;
  if (!ac_grow(ctx, (void **)&ctx->strs, &ctx->capstrs, 1, sizeof *ctx->strs) ||
      !ac_grow(ctx, (void **)&ctx->tys, &ctx->captys, 1, sizeof *ctx->tys)) {
    ac_context_destroy(ctx);
    return NULL;
  }
  size_t lc = 0;
  if (!ac_grow(ctx, (void **)&ctx->strlens, &lc, ctx->capstrs, sizeof *ctx->strlens)) {
    ac_context_destroy(ctx);
    return NULL;
  }
  return ctx;
}

/* Only contexts on the default allocator cache large blocks: an embedding
 * that supplies its own allocator sees every allocation and every free at
 * the moment the library makes it (blockcache.c). */
ac_context *ac_context_create(void) {
  ac_context *ctx = ac_context_create_with_allocator(default_realloc, NULL);
  if (ctx && !(ctx->blocks = ir_block_cache_create(ctx))) {
    ac_context_destroy(ctx);
    return NULL;
  }
  return ctx;
}

void ac_context_destroy(ac_context *ctx) {
  if (!ctx)
    return;
  if (ctx->runtimes_cleanup)
    ctx->runtimes_cleanup(ctx, ctx->runtimes);
  ir_block_cache_destroy(ctx, ctx->blocks);
  for (size_t i = 1; i < ctx->nstrs; i++)
    ac_free(ctx, ctx->strs[i]);
  ac_free(ctx, ctx->strs);
  ac_free(ctx, ctx->strlens);
  ac_free(ctx, ctx->strtab);
  ac_free(ctx, ctx->tys);
  ac_free(ctx, ctx->tyfields);
  ac_free(ctx, ctx->tytab);
  ac_free(ctx, ctx->warned);
  ctx->rfn(ctx->ud, ctx, 0);
}

void ac_context_set_warning_handler(ac_context *ctx, ac_warning_fn fn, void *ud) {
  if (!ctx)
    return;
  ctx->warn = fn;
  ctx->warn_ud = ud;
}

bool ir_ctx_warns(const ac_context *ctx) { return ctx->warn != NULL; }

void ir_ctx_warn(ac_context *ctx, const char *file, unsigned line, unsigned col, const char *msg) {
  if (!ctx->warn)
    return;
  ir_sym fs = file ? ir_sym_intern(ctx, file, strlen(file)) : 0;
  for (size_t i = 0; i < ctx->nwarned; i++) /* few warnings: a list */
    if (ctx->warned[i].file == fs && ctx->warned[i].line == line && ctx->warned[i].col == col)
      return;
  if (ac_grow(ctx, (void **)&ctx->warned, &ctx->capwarned, ctx->nwarned + 1,
              sizeof *ctx->warned)) {
    ctx->warned[ctx->nwarned].file = fs;
    ctx->warned[ctx->nwarned].line = line;
    ctx->warned[ctx->nwarned].col = col;
    ctx->nwarned++;
  }
  ctx->warn(ctx->warn_ud, file, line, col, msg);
}

void *ir_ctx_runtimes(const ac_context *ctx) { return ctx->runtimes; }

ir_block_cache *ir_ctx_block_cache(const ac_context *ctx) { return ctx->blocks; }

void ir_ctx_set_runtimes(ac_context *ctx, void *p, void (*cleanup)(ac_context *ctx, void *p)) {
  ctx->runtimes = p;
  ctx->runtimes_cleanup = cleanup;
}

/* ---- hashing ---- */

static uint32_t hash_bytes(const void *p, size_t n, uint32_t h) {
  const unsigned char *s = p;
  for (size_t i = 0; i < n; i++) {
    h ^= s[i];
    h *= 16777619u;
  }
  return h;
}

/* ---- strings ---- */

static bool strtab_rehash(ac_context *ctx, size_t cap) {
  uint32_t *t = ac_alloc(ctx, cap * sizeof *t);
  if (!t)
    return false;
  memset(t, 0, cap * sizeof *t);
  for (size_t i = 1; i < ctx->nstrs; i++) {
    uint32_t h = hash_bytes(ctx->strs[i], ctx->strlens[i], 2166136261u);
    size_t j = h & (cap - 1);
    while (t[j])
      j = (j + 1) & (cap - 1);
    t[j] = (uint32_t)i;
  }
  ac_free(ctx, ctx->strtab);
  ctx->strtab = t;
  ctx->strtabcap = cap;
  return true;
}

ir_sym ir_sym_intern(ac_context *ctx, const char *s, size_t len) {
  if (ctx->strtabcap < 2 * (ctx->nstrs + 1)) {
    if (!strtab_rehash(ctx, ctx->strtabcap ? ctx->strtabcap * 2 : 64)) {
      ctx->oom = true;
      return IR_SYM_NONE;
    }
  }
  uint32_t h = hash_bytes(s, len, 2166136261u);
  size_t j = h & (ctx->strtabcap - 1);
  while (ctx->strtab[j]) {
    uint32_t k = ctx->strtab[j];
    if (ctx->strlens[k] == len && memcmp(ctx->strs[k], s, len) == 0)
      return k;
    j = (j + 1) & (ctx->strtabcap - 1);
  }
  size_t oldcap = ctx->capstrs;
  if (!ac_grow(ctx, (void **)&ctx->strs, &ctx->capstrs, ctx->nstrs + 1, sizeof *ctx->strs))
    goto oom;
  if (ctx->capstrs != oldcap) {
    size_t lc = oldcap;
    if (!ac_grow(ctx, (void **)&ctx->strlens, &lc, ctx->capstrs, sizeof *ctx->strlens))
      goto oom;
  }
  char *copy = ac_strndup(ctx, s, len);
  if (!copy)
    goto oom;
  uint32_t id = (uint32_t)ctx->nstrs++;
  ctx->strs[id] = copy;
  ctx->strlens[id] = (uint32_t)len;
  ctx->strtab[j] = id;
  return id;
oom:
  ctx->oom = true;
  return IR_SYM_NONE;
}

const char *ir_sym_str(const ac_context *ctx, ir_sym s) {
  return (s && s < ctx->nstrs) ? ctx->strs[s] : "";
}

/* ---- types ---- */

static uint32_t ty_hash(const ty_rec *r, const ir_type *fields) {
  uint32_t h = 2166136261u;
  h = hash_bytes(&r->kind, sizeof r->kind, h);
  h = hash_bytes(&r->sc, sizeof r->sc, h);
  h = hash_bytes(&r->rank, sizeof r->rank, h);
  h = hash_bytes(&r->n, sizeof r->n, h);
  h = hash_bytes(&r->elem, sizeof r->elem, h);
  h = hash_bytes(&r->ret, sizeof r->ret, h);
  return hash_bytes(fields, r->n * sizeof *fields, h);
}

static bool ty_same(const ac_context *ctx, const ty_rec *a, const ty_rec *b, const ir_type *bf) {
  return a->kind == b->kind && a->sc == b->sc && a->rank == b->rank && a->n == b->n &&
         a->elem == b->elem && a->ret == b->ret &&
         (a->n == 0 || memcmp(ctx->tyfields + a->fields, bf, a->n * sizeof *bf) == 0);
}

static bool tytab_rehash(ac_context *ctx, size_t cap) {
  uint32_t *t = ac_alloc(ctx, cap * sizeof *t);
  if (!t)
    return false;
  memset(t, 0, cap * sizeof *t);
  for (size_t i = 1; i < ctx->ntys; i++) {
    size_t j = ctx->tys[i].hash & (cap - 1);
    while (t[j])
      j = (j + 1) & (cap - 1);
    t[j] = (uint32_t)i;
  }
  ac_free(ctx, ctx->tytab);
  ctx->tytab = t;
  ctx->tytabcap = cap;
  return true;
}

static ir_type ty_intern(ac_context *ctx, ty_rec r, const ir_type *fields) {
  if (ctx->tytabcap < 2 * (ctx->ntys + 1) &&
      !tytab_rehash(ctx, ctx->tytabcap ? ctx->tytabcap * 2 : 64)) {
    ctx->oom = true;
    return IR_TY_NONE;
  }
  r.hash = ty_hash(&r, fields);
  size_t j = r.hash & (ctx->tytabcap - 1);
  while (ctx->tytab[j]) {
    uint32_t k = ctx->tytab[j];
    if (ctx->tys[k].hash == r.hash && ty_same(ctx, &ctx->tys[k], &r, fields))
      return k;
    j = (j + 1) & (ctx->tytabcap - 1);
  }
  if (!ac_grow(ctx, (void **)&ctx->tys, &ctx->captys, ctx->ntys + 1, sizeof *ctx->tys) ||
      !ac_grow(ctx, (void **)&ctx->tyfields, &ctx->captyfields, ctx->ntyfields + r.n + 1,
               sizeof *ctx->tyfields)) {
    ctx->oom = true;
    return IR_TY_NONE;
  }
  r.fields = (uint32_t)ctx->ntyfields;
  if (r.n)
    memcpy(ctx->tyfields + ctx->ntyfields, fields, r.n * sizeof *fields);
  ctx->ntyfields += r.n;
  uint32_t id = (uint32_t)ctx->ntys++;
  ctx->tys[id] = r;
  ctx->tytab[j] = id;
  return id;
}

ir_type ir_ty_scalar(ac_context *ctx, ac_scalar s) {
  if ((unsigned)s > AC_PROB)
    return IR_TY_NONE;
  ty_rec r = {.kind = TK_SCALAR, .sc = s};
  return ty_intern(ctx, r, NULL);
}

ir_type ir_ty_tuple(ac_context *ctx, uint32_t n, const ir_type *fields) {
  if (n == 1)
    return fields[0];
  for (uint32_t i = 0; i < n; i++)
    if (fields[i] == IR_TY_NONE || fields[i] >= ctx->ntys)
      return IR_TY_NONE;
  ty_rec r = {.kind = TK_TUPLE, .n = n};
  return ty_intern(ctx, r, fields);
}

ir_type ir_ty_unit(ac_context *ctx) { return ir_ty_tuple(ctx, 0, NULL); }

ir_type ir_ty_array(ac_context *ctx, ir_type elem, uint32_t rank) {
  if (elem == IR_TY_NONE || elem >= ctx->ntys || rank == 0)
    return IR_TY_NONE;
  ty_rec e = ctx->tys[elem];
  if (e.kind == TK_SCALAR) {
    ty_rec r = {.kind = TK_ARRAY, .sc = e.sc, .rank = rank};
    return ty_intern(ctx, r, NULL);
  }
  if (e.kind != TK_TUPLE || e.n == 0)
    return IR_TY_NONE;
  ir_type small[8];
  ir_type *fs = e.n <= 8 ? small : ac_alloc(ctx, e.n * sizeof *fs);
  if (!fs) {
    ctx->oom = true;
    return IR_TY_NONE;
  }
  ir_type res = IR_TY_NONE;
  uint32_t i;
  for (i = 0; i < e.n; i++) {
    fs[i] = ir_ty_array(ctx, ctx->tyfields[ctx->tys[elem].fields + i], rank);
    if (fs[i] == IR_TY_NONE)
      break;
  }
  if (i == e.n)
    res = ir_ty_tuple(ctx, e.n, fs);
  if (fs != small)
    ac_free(ctx, fs);
  return res;
}

ir_type ir_ty_window(ac_context *ctx, ir_type elem, uint32_t rank) {
  if (!ir_ty_is_element(ctx, elem) || rank == 0)
    return IR_TY_NONE;
  ty_rec r = {.kind = TK_WINDOW, .rank = rank, .elem = elem};
  return ty_intern(ctx, r, NULL);
}

ir_type ir_ty_fn(ac_context *ctx, uint32_t n, const ir_type *params, ir_type ret) {
  ty_rec r = {.kind = TK_FN, .n = n, .ret = ret};
  return ty_intern(ctx, r, params);
}

ir_typeinfo ir_ty_info(const ac_context *ctx, ir_type t) {
  ir_typeinfo ti;
  memset(&ti, 0, sizeof ti);
  if (t == IR_TY_NONE || t >= ctx->ntys) {
    ti.kind = TK_TUPLE; /* harmless placeholder; callers check for IR_TY_NONE */
    ti.n = 0;
    return ti;
  }
  const ty_rec *r = &ctx->tys[t];
  ti.kind = r->kind;
  ti.sc = r->sc;
  ti.rank = r->rank;
  ti.n = r->n;
  ti.fields = ctx->tyfields ? ctx->tyfields + r->fields : NULL;
  ti.elem = r->elem;
  ti.ret = r->ret;
  return ti;
}

bool ir_ty_is_scalar(const ac_context *ctx, ir_type t, ac_scalar *sc) {
  if (t == IR_TY_NONE || t >= ctx->ntys || ctx->tys[t].kind != TK_SCALAR)
    return false;
  if (sc)
    *sc = ctx->tys[t].sc;
  return true;
}

bool ir_ty_is_int(const ac_context *ctx, ir_type t) {
  ac_scalar s;
  return ir_ty_is_scalar(ctx, t, &s) && s >= AC_I8 && s <= AC_U64;
}

bool ir_ty_is_float(const ac_context *ctx, ir_type t) {
  ac_scalar s;
  return ir_ty_is_scalar(ctx, t, &s) && (s == AC_F32 || s == AC_F64);
}

bool ir_ty_is_numeric(const ac_context *ctx, ir_type t) {
  ac_scalar s;
  return ir_ty_is_scalar(ctx, t, &s) && s != AC_BOOL && s != AC_PROB;
}

bool ir_ty_has_prob(const ac_context *ctx, ir_type t) {
  if (t == IR_TY_NONE || t >= ctx->ntys)
    return false;
  ty_rec r = ctx->tys[t];
  switch (r.kind) {
  case TK_SCALAR:
  case TK_ARRAY:
    return r.sc == AC_PROB;
  case TK_WINDOW:
    return ir_ty_has_prob(ctx, r.elem);
  case TK_TUPLE:
  case TK_FN:
    for (uint32_t i = 0; i < r.n; i++)
      if (ir_ty_has_prob(ctx, ctx->tyfields[r.fields + i]))
        return true;
    return r.kind == TK_FN && ir_ty_has_prob(ctx, r.ret);
  default:
    return false;
  }
}

bool ir_ty_array_view(ac_context *ctx, ir_type t, ir_type *elem, uint32_t *rank) {
  if (t == IR_TY_NONE || t >= ctx->ntys)
    return false;
  ty_rec r = ctx->tys[t];
  if (r.kind == TK_ARRAY) {
    if (elem)
      *elem = ir_ty_scalar(ctx, r.sc);
    if (rank)
      *rank = r.rank;
    return true;
  }
  if (r.kind != TK_TUPLE || r.n == 0)
    return false;
  ir_type small[8];
  ir_type *es = r.n <= 8 ? small : ac_alloc(ctx, r.n * sizeof *es);
  if (!es)
    return false;
  uint32_t rk = 0;
  bool ok = true;
  for (uint32_t i = 0; i < r.n && ok; i++) {
    uint32_t fr;
    ir_type f = ctx->tyfields[ctx->tys[t].fields + i];
    ok = ir_ty_array_view(ctx, f, &es[i], &fr) && (i == 0 || fr == rk);
    rk = fr;
  }
  if (ok) {
    if (elem)
      *elem = ir_ty_tuple(ctx, r.n, es);
    if (rank)
      *rank = rk;
  }
  if (es != small)
    ac_free(ctx, es);
  return ok;
}

bool ir_ty_is_kernel_value(ac_context *ctx, ir_type t, bool scalar_ok) {
  ir_type elem;
  uint32_t rank;
  if (scalar_ok && ir_ty_is_scalar(ctx, t, NULL))
    return true;
  return ir_ty_array_view(ctx, t, &elem, &rank) && ir_ty_is_scalar(ctx, elem, NULL);
}

bool ir_ty_is_element(const ac_context *ctx, ir_type t) {
  if (t == IR_TY_NONE || t >= ctx->ntys)
    return false;
  const ty_rec *r = &ctx->tys[t];
  if (r->kind == TK_SCALAR)
    return true;
  if (r->kind != TK_TUPLE)
    return false;
  for (uint32_t i = 0; i < r->n; i++)
    if (!ir_ty_is_element(ctx, ctx->tyfields[r->fields + i]))
      return false;
  return true;
}

uint32_t ir_ty_num_leaves(const ac_context *ctx, ir_type t) {
  if (t == IR_TY_NONE || t >= ctx->ntys)
    return 0;
  const ty_rec *r = &ctx->tys[t];
  if (r->kind == TK_SCALAR || r->kind == TK_ARRAY)
    return 1;
  if (r->kind != TK_TUPLE)
    return 0;
  uint32_t n = 0;
  for (uint32_t i = 0; i < r->n; i++)
    n += ir_ty_num_leaves(ctx, ctx->tyfields[r->fields + i]);
  return n;
}

void ir_ty_leaves(ac_context *ctx, ir_type t, void (*fn)(void *ud, ac_scalar sc, uint32_t rank),
                  void *ud) {
  if (t == IR_TY_NONE || t >= ctx->ntys)
    return;
  ty_rec r = ctx->tys[t];
  if (r.kind == TK_SCALAR)
    fn(ud, r.sc, 0);
  else if (r.kind == TK_ARRAY)
    fn(ud, r.sc, r.rank);
  else if (r.kind == TK_TUPLE)
    for (uint32_t i = 0; i < r.n; i++)
      ir_ty_leaves(ctx, ctx->tyfields[ctx->tys[t].fields + i], fn, ud);
}

static const char *const scalar_names[AC_PROB + 1] = {"bool", "i8",  "i16", "i32", "i64", "u8",
                                                      "u16",  "u32", "u64", "f32", "f64", "prob"};
static const size_t scalar_sizes[AC_PROB + 1] = {1, 1, 2, 4, 8, 1, 2, 4, 8, 4, 8, 8};

const char *ac_scalar_name(ac_scalar s) {
  return (unsigned)s <= AC_PROB ? scalar_names[s] : NULL;
}

size_t ac_scalar_size(ac_scalar s) {
  return (unsigned)s <= AC_PROB ? scalar_sizes[s] : 0;
}

void ir_ty_print(const ac_context *ctx, ir_type t, ir_buf *out) {
  if (t == IR_TY_NONE || t >= ctx->ntys) {
    ir_buf_puts(out, "<?>");
    return;
  }
  const ty_rec *r = &ctx->tys[t];
  switch (r->kind) {
  case TK_SCALAR:
    ir_buf_puts(out, scalar_names[r->sc]);
    break;
  case TK_ARRAY:
    ir_buf_puts(out, scalar_names[r->sc]);
    ir_buf_putc(out, '[');
    for (uint32_t i = 1; i < r->rank; i++)
      ir_buf_putc(out, ',');
    ir_buf_putc(out, ']');
    break;
  case TK_TUPLE:
    ir_buf_putc(out, '(');
    for (uint32_t i = 0; i < r->n; i++) {
      if (i)
        ir_buf_puts(out, ", ");
      ir_ty_print(ctx, ctx->tyfields[r->fields + i], out);
    }
    ir_buf_putc(out, ')');
    break;
  case TK_WINDOW:
    ir_buf_puts(out, "window<");
    ir_ty_print(ctx, r->elem, out);
    ir_buf_printf(out, ", %u>", r->rank);
    break;
  case TK_FN:
    ir_buf_puts(out, "fn(");
    for (uint32_t i = 0; i < r->n; i++) {
      if (i)
        ir_buf_puts(out, ", ");
      ir_ty_print(ctx, ctx->tyfields[r->fields + i], out);
    }
    ir_buf_puts(out, ") -> ");
    ir_ty_print(ctx, r->ret, out);
    break;
  }
}

/* ---- buffers ---- */

void ir_buf_init(ir_buf *b, ac_context *ctx) {
  memset(b, 0, sizeof *b);
  b->ctx = ctx;
}

void ir_buf_free(ir_buf *b) {
  ac_free(b->ctx, b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}

void ir_buf_putn(ir_buf *b, const char *s, size_t n) {
  if (b->oom)
    return;
  if (!ac_grow(b->ctx, (void **)&b->data, &b->cap, b->len + n + 1, 1)) {
    b->oom = true;
    return;
  }
  memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = 0;
}

void ir_buf_putc(ir_buf *b, char c) { ir_buf_putn(b, &c, 1); }

void ir_buf_puts(ir_buf *b, const char *s) { ir_buf_putn(b, s, strlen(s)); }

void ir_buf_printf(ir_buf *b, const char *fmt, ...) {
  char small[256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0)
    return;
  if ((size_t)n < sizeof small) {
    ir_buf_putn(b, small, (size_t)n);
    return;
  }
  char *big = ac_alloc(b->ctx, (size_t)n + 1);
  if (!big) {
    b->oom = true;
    return;
  }
  va_start(ap, fmt);
  vsnprintf(big, (size_t)n + 1, fmt, ap);
  va_end(ap);
  ir_buf_putn(b, big, (size_t)n);
  ac_free(b->ctx, big);
}

const char *ir_buf_cstr(ir_buf *b) { return b->data ? b->data : ""; }

char *ir_buf_take(ir_buf *b) {
  char *s = b->data;
  if (!s)
    s = ac_strdup(b->ctx, "");
  b->data = NULL;
  b->len = b->cap = 0;
  return s;
}
