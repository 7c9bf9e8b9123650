/* test/unit/test_interp_util.h: a small harness for the interpreter tests.
 *
 *   run(src, "f", "3 [1,2,3] [[1,2],[3,4]]")    parse + verify + call
 *   run_module(m, "f", args)                      call a module built by hand
 *
 * Arguments are written as text, one per flattened parameter leaf, separated
 * by spaces: scalars ("3", "-1.5", "nan", "-inf", "true") and arrays as
 * nested bracket literals ("[[1,2],[3,4]]", "[]"); the function's signature
 * gives their types. The result is text too, one line per result leaf, in
 * the format of docs/language.md's examples: integers, floats in their
 * shortest round-trip form with ".0" when integral ("2.0", "0.1", "nan"),
 * bools, arrays as "[1, 2]" / "[[1, 2], [3, 4]]". A failure gives the
 * diagnostic's first line without the file name: "2:3: error: MESSAGE"
 * (or "error: MESSAGE" without a position). Results live in a ring of
 * static buffers, so several can be compared in one CHECK_STR.
 *
 * The counting allocator lets tests bound the memory a call keeps alive.
 */
#ifndef ARRAYC_TEST_INTERP_UTIL_H
#define ARRAYC_TEST_INTERP_UTIL_H

#include "arrayc/arrayc.h"
#include "unit.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HARNESS_OUT 8
#define HARNESS_OUT_SIZE 65536

static char harness_out[HARNESS_OUT][HARNESS_OUT_SIZE];
static int harness_next;

typedef struct harness_buf {
  char *s;
  size_t n;
} harness_buf;

static inline void hb_put(harness_buf *b, const char *s) {
  size_t l = strlen(s);
  if (b->n + l + 1 < HARNESS_OUT_SIZE) {
    memcpy(b->s + b->n, s, l + 1);
    b->n += l;
  }
}

/* The shortest text that reads back as the same value, written as Python's
 * repr writes floats (the docs' examples use it): positional notation for
 * exponents -4..15 with ".0" when integral, otherwise "5.5e-17". */
static inline void hb_float(harness_buf *b, double v, bool f32) {
  char t[64];
  if (isnan(v)) {
    hb_put(b, "nan");
    return;
  }
  if (isinf(v)) {
    hb_put(b, v < 0 ? "-inf" : "inf");
    return;
  }
  for (int p = 0; p <= 16; p++) {
    snprintf(t, sizeof t, "%.*e", p, v);
    if (f32 ? strtof(t, NULL) == (float)v : strtod(t, NULL) == v)
      break;
  }
  /* t is [-]d[.ddd]e[+-]XX */
  char *e = strchr(t, 'e');
  int exp = atoi(e + 1), nd = 0;
  for (const char *c = t; c < e; c++)
    nd += *c >= '0' && *c <= '9';
  if (exp >= -4 && exp < 16) {
    int decimals = nd - 1 - exp;
    snprintf(t, sizeof t, "%.*f", decimals > 0 ? decimals : 0, v);
    hb_put(b, t);
    if (decimals <= 0)
      hb_put(b, ".0");
    return;
  }
  *e = 0;
  hb_put(b, t);
  snprintf(t, sizeof t, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
  hb_put(b, t);
}

static inline void hb_scalar(harness_buf *b, ac_scalar t, const void *p) {
  char s[64];
  switch (t) {
  case AC_BOOL:
    hb_put(b, *(const uint8_t *)p ? "true" : "false");
    return;
  case AC_I8:
    snprintf(s, sizeof s, "%d", *(const int8_t *)p);
    break;
  case AC_I16:
    snprintf(s, sizeof s, "%d", *(const int16_t *)p);
    break;
  case AC_I32:
    snprintf(s, sizeof s, "%d", *(const int32_t *)p);
    break;
  case AC_I64:
    snprintf(s, sizeof s, "%lld", (long long)*(const int64_t *)p);
    break;
  case AC_U8:
    snprintf(s, sizeof s, "%u", *(const uint8_t *)p);
    break;
  case AC_U16:
    snprintf(s, sizeof s, "%u", *(const uint16_t *)p);
    break;
  case AC_U32:
    snprintf(s, sizeof s, "%u", *(const uint32_t *)p);
    break;
  case AC_U64:
    snprintf(s, sizeof s, "%llu", (unsigned long long)*(const uint64_t *)p);
    break;
  case AC_F32:
    hb_float(b, *(const float *)p, true);
    return;
  default:
    hb_float(b, *(const double *)p, false);
    return;
  }
  hb_put(b, s);
}

static inline void hb_array(harness_buf *b, const ac_array *a, unsigned d, int64_t *pos) {
  const int64_t *ext = ac_array_extents(a);
  size_t es = ac_scalar_size(ac_array_type(a));
  hb_put(b, "[");
  for (int64_t i = 0; i < ext[d]; i++) {
    if (i)
      hb_put(b, ", ");
    if (d + 1 == ac_array_rank(a)) {
      hb_scalar(b, ac_array_type(a), (const char *)ac_array_data(a) + (size_t)*pos * es);
      ++*pos;
    } else {
      hb_array(b, a, d + 1, pos);
    }
  }
  hb_put(b, "]");
}

static inline void hb_datum(harness_buf *b, const ac_datum *d) {
  if (d->kind == AC_DATUM_ARRAY) {
    int64_t pos = 0;
    hb_array(b, d->array, 0, &pos);
    return;
  }
  union {
    uint8_t b8;
    int8_t i8;
    int16_t i16;
    int32_t i32;
    int64_t i64;
    uint16_t u16;
    uint32_t u32;
    uint64_t u64;
    float f;
    double g;
  } v;
  switch (d->type) {
  case AC_BOOL:
    v.b8 = d->s.b;
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
    v.b8 = (uint8_t)d->s.u;
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
    v.f = (float)d->s.f;
    break;
  default:
    v.g = d->s.f;
    break;
  }
  hb_scalar(b, d->type, &v);
}

/* ---- argument parsing ---- */

/* Parses one scalar token of kind t into *out (the datum's union). */
static inline bool parse_scalar(ac_scalar t, const char *s, size_t n, ac_datum *out) {
  char tok[64];
  if (n == 0 || n >= sizeof tok)
    return false;
  memcpy(tok, s, n);
  tok[n] = 0;
  out->kind = AC_DATUM_SCALAR;
  out->type = t;
  out->array = NULL;
  char *end = tok;
  if (t == AC_BOOL) {
    out->s.b = strcmp(tok, "true") == 0;
    return out->s.b || strcmp(tok, "false") == 0;
  }
  if (t == AC_F32 || t == AC_F64)
    out->s.f = strtod(tok, &end);
  else if (t >= AC_U8 && t <= AC_U64)
    out->s.u = strtoull(tok, &end, 0);
  else
    out->s.i = strtoll(tok, &end, 0);
  return *end == 0;
}

/* Reads a bracketed literal of the given rank; elements are appended to
 * *data (element size es), extents are taken from the first row seen at
 * each depth and checked for the others. */
static inline bool parse_array(const char **p, ac_scalar t, unsigned rank, unsigned d, int64_t *ext,
                               bool *seen, char **data, size_t *n, size_t *cap) {
  size_t es = ac_scalar_size(t);
  if (**p != '[')
    return false;
  ++*p;
  int64_t count = 0;
  while (**p && **p != ']') {
    if (count && **p == ',')
      ++*p;
    while (**p == ' ')
      ++*p;
    if (d + 1 < rank) {
      if (!parse_array(p, t, rank, d + 1, ext, seen, data, n, cap))
        return false;
    } else {
      const char *e = *p;
      while (*e && *e != ',' && *e != ']')
        e++;
      ac_datum v;
      if (!parse_scalar(t, *p, (size_t)(e - *p), &v))
        return false;
      if (*n + es > *cap) {
        *cap = (*cap + es) * 2;
        *data = realloc(*data, *cap);
      }
      char *dst = *data + *n;
      switch (t) {
      case AC_BOOL:
        *(uint8_t *)dst = v.s.b;
        break;
      case AC_I8:
        *(int8_t *)dst = (int8_t)v.s.i;
        break;
      case AC_I16:
        *(int16_t *)dst = (int16_t)v.s.i;
        break;
      case AC_I32:
        *(int32_t *)dst = (int32_t)v.s.i;
        break;
      case AC_I64:
        *(int64_t *)dst = v.s.i;
        break;
      case AC_U8:
        *(uint8_t *)dst = (uint8_t)v.s.u;
        break;
      case AC_U16:
        *(uint16_t *)dst = (uint16_t)v.s.u;
        break;
      case AC_U32:
        *(uint32_t *)dst = (uint32_t)v.s.u;
        break;
      case AC_U64:
        *(uint64_t *)dst = v.s.u;
        break;
      case AC_F32:
        *(float *)dst = (float)v.s.f;
        break;
      default:
        *(double *)dst = v.s.f;
        break;
      }
      *n += es;
      *p = e;
    }
    count++;
  }
  if (**p != ']')
    return false;
  ++*p;
  if (!seen[d]) {
    seen[d] = true;
    ext[d] = count;
  }
  return ext[d] == count;
}

static inline bool parse_arg(ac_context *ctx, ac_scalar t, unsigned rank, const char *s, size_t n,
                             ac_datum *out) {
  if (rank == 0)
    return parse_scalar(t, s, n, out);
  char *text = malloc(n + 1);
  memcpy(text, s, n);
  text[n] = 0;
  int64_t ext[8] = {0};
  bool seen[8] = {false};
  char *data = NULL;
  size_t len = 0, cap = 0;
  const char *p = text;
  bool ok = rank <= 8 && parse_array(&p, t, rank, 0, ext, seen, &data, &len, &cap) && *p == 0;
  if (ok) {
    out->kind = AC_DATUM_ARRAY;
    out->type = t;
    out->array = ac_array_create(ctx, t, rank, ext, data, NULL);
    ok = out->array != NULL;
  }
  free(data);
  free(text);
  return ok;
}

static inline const char *harness_error(harness_buf *b, ac_error *err) {
  char s[64];
  if (ac_error_line(err)) {
    snprintf(s, sizeof s, "%u:%u: ", ac_error_line(err), ac_error_column(err));
    hb_put(b, s);
  }
  hb_put(b, "error: ");
  hb_put(b, ac_error_message(err));
  ac_error_destroy(err);
  return b->s;
}

/* Calls function fn of m with the arguments in `args`. */
static inline const char *run_module(ac_module *m, const char *fn, const char *args) {
  harness_buf b = {harness_out[harness_next++ % HARNESS_OUT], 0};
  b.s[0] = 0;
  ac_function *f = NULL;
  ac_error *err = NULL;
  if (ac_function_create(m, fn, AC_BACKEND_INTERP, &f, &err) != AC_OK)
    return harness_error(&b, err);
  size_t na = ac_function_num_args(f), nr = ac_function_num_results(f);
  ac_datum *a = calloc(na + 1, sizeof *a), *r = calloc(nr + 1, sizeof *r);
  const char *p = args;
  size_t got = 0;
  bool ok = true;
  while (ok && *p) {
    while (*p == ' ')
      p++;
    if (!*p)
      break;
    const char *e = p;
    int depth = 0;
    while (*e && (depth > 0 || *e != ' ')) {
      depth += *e == '[' ? 1 : *e == ']' ? -1 : 0;
      e++;
    }
    ac_scalar t = AC_BOOL;
    unsigned rank = 0;
    ok = got < na;
    if (ok) {
      ac_function_arg_info(f, got, &t, &rank);
      ok = parse_arg(ac_module_context(m), t, rank, p, (size_t)(e - p), &a[got]);
    }
    if (ok)
      got++;
    p = e;
  }
  if (!ok || got != na) {
    hb_put(&b, "harness: bad arguments");
  } else if (ac_function_call(f, a, na, r, nr, &err) != AC_OK) {
    harness_error(&b, err);
  } else {
    for (size_t i = 0; i < nr; i++) {
      if (i)
        hb_put(&b, "\n");
      hb_datum(&b, &r[i]);
      ac_datum_release(&r[i]);
    }
  }
  for (size_t i = 0; i < got; i++)
    ac_datum_release(&a[i]);
  free(a);
  free(r);
  ac_function_destroy(f);
  return b.s;
}

/* Parses and verifies src, then calls fn. */
static inline const char *run_ctx(ac_context *ctx, const char *src, const char *fn,
                                  const char *args) {
  ac_module *m = NULL;
  ac_error *err = NULL;
  if (ac_module_parse(ctx, "t.ac", src, strlen(src), &m, &err) != AC_OK) {
    harness_buf b = {harness_out[harness_next++ % HARNESS_OUT], 0};
    b.s[0] = 0;
    hb_put(&b, "compile ");
    return harness_error(&b, err);
  }
  const char *out = run_module(m, fn, args);
  ac_module_destroy(m);
  return out;
}

static inline const char *run(const char *src, const char *fn, const char *args) {
  ac_context *ctx = ac_context_create();
  const char *out = run_ctx(ctx, src, fn, args);
  ac_context_destroy(ctx);
  return out;
}

/* ---- a counting allocator ---- */

typedef struct counting {
  size_t live, peak;
  long fail_after; /* allocations left before failing; -1: never fail */
} counting;

static inline void *counting_realloc(void *ud, void *p, size_t n) {
  counting *c = ud;
  size_t old = 0;
  if (p) {
    p = (char *)p - 16;
    memcpy(&old, p, sizeof old);
  }
  if (n == 0) {
    c->live -= old;
    free(p);
    return NULL;
  }
  if (c->fail_after == 0)
    return NULL;
  if (c->fail_after > 0)
    c->fail_after--;
  char *q = realloc(p, n + 16);
  if (!q)
    return NULL;
  memcpy(q, &n, sizeof n);
  c->live = c->live - old + n;
  if (c->live > c->peak)
    c->peak = c->live;
  return q + 16;
}

#endif
