/* tools/args.c: argument literals, .npy arguments and result printing of
 * arrayc-run.
 *
 * Arguments are written in the language's own literal syntax so that a call
 * on the command line reads like a call in a program: `2.5`, `-3`, `7u32`,
 * `0xff`, `1_000`, `true`, `inf`, `[[1, 2], [3, 4]]`, `[]`. Typing follows
 * docs/language.md section 5 with the parameter's type as the expected type:
 * an unsuffixed literal takes it (an integer literal may become a float, a
 * float literal may not become an integer), a suffix must equal it, and the
 * value must fit. Checking here, with a message naming the argument, is
 * friendlier than letting the call fail later and keeps arrays well formed:
 * array literals must be rectangular and exactly as deep as the rank.
 *
 * Array literals are parsed by recursive descent whose depth is bounded by
 * the parameter's rank (a '[' deeper than that is an error at once), so no
 * input can exhaust the stack. Elements are stored directly in the
 * parameter's element type.
 *
 * Results are printed in the same syntax without suffixes; floats use the
 * shortest decimal text that reads back to the same value in their own
 * precision, laid out as Python's repr does (fixed notation for exponents in
 * [-4, 16), scientific otherwise) so that outputs are easy to compare with
 * NumPy's.
 */
#include "args.h"
#include "npy.h"
#include "toolutil.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static bool is_int_type(ac_scalar t) { return t >= AC_I8 && t <= AC_U64; }
static bool is_signed_type(ac_scalar t) { return t >= AC_I8 && t <= AC_I64; }
static bool is_float_type(ac_scalar t) { return t == AC_F32 || t == AC_F64; }

void val_type_name(ac_scalar type, unsigned rank, char *buf, size_t size) {
  const char *n = ac_scalar_name(type);
  int k = snprintf(buf, size, "%s", n ? n : "?");
  if (rank > 0 && k >= 0 && (size_t)k + rank + 2 <= size) {
    buf[k++] = '[';
    for (unsigned i = 1; i < rank; i++)
      buf[k++] = ',';
    buf[k++] = ']';
    buf[k] = 0;
  }
}

/* ---- scalar literals ---- */

/* One scanned literal before typing. */
typedef struct lit {
  enum { LIT_BOOL, LIT_INT, LIT_FLOAT } kind;
  bool neg;            /* written with a leading '-' */
  bool infnan;         /* inf or nan */
  bool has_suffix;
  ac_scalar suffix;
  uint64_t mag;        /* LIT_INT: magnitude; LIT_BOOL: 0/1 */
  const char *ftext;   /* LIT_FLOAT: the number's text (without '-') */
  size_t flen;
} lit;

/* A typed element value, ready to be stored. */
typedef union value {
  uint64_t bits; /* integers (two's complement) and bool */
  float f32;
  double f64;
} value;

static bool is_ident_char(char c) {
  return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static int digit_value(char c, int base) {
  int d = c >= '0' && c <= '9'   ? c - '0'
          : c >= 'a' && c <= 'f' ? c - 'a' + 10
          : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                 : 99;
  return d < base ? d : -1;
}

/* Scans the literal starting at *pp and leaves *pp after it. Messages give
 * positions as byte offsets into `text`, the whole argument. */
static bool scan_literal(const char **pp, lit *out, const char *text, char *msg, size_t msgsize) {
  const char *p = *pp;
  memset(out, 0, sizeof *out);
  size_t off = (size_t)(p - text);
  if (strncmp(p, "true", 4) == 0 && !is_ident_char(p[4])) {
    out->kind = LIT_BOOL;
    out->mag = 1;
    *pp = p + 4;
    return true;
  }
  if (strncmp(p, "false", 5) == 0 && !is_ident_char(p[5])) {
    out->kind = LIT_BOOL;
    *pp = p + 5;
    return true;
  }
  if (*p == '-') {
    out->neg = true;
    p++;
  }
  if ((strncmp(p, "inf", 3) == 0 || strncmp(p, "nan", 3) == 0) && !is_ident_char(p[3])) {
    out->kind = LIT_FLOAT;
    out->infnan = true;
    out->ftext = p;
    out->flen = 3;
    *pp = p + 3;
    return true;
  }
  if (*p < '0' || *p > '9')
    return tool_fail(msg, msgsize, "expected a literal at offset %zu", off);
  int base = 10;
  if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
    base = 16;
  else if (p[0] == '0' && (p[1] == 'b' || p[1] == 'B'))
    base = 2;
  if (base != 10)
    p += 2;
  const char *digits = p;
  bool any = false, overflow = false, underscore = false;
  uint64_t mag = 0;
  for (;; p++) {
    if (*p == '_') {
      underscore = true;
      continue;
    }
    int d = digit_value(*p, base);
    if (d < 0)
      break;
    any = true;
    if (mag > (UINT64_MAX - (uint64_t)d) / (uint64_t)base)
      overflow = true;
    mag = mag * (uint64_t)base + (uint64_t)d;
  }
  if (!any)
    return tool_fail(msg, msgsize, "malformed number at offset %zu", off);
  bool is_float = false;
  if (base == 10 && *p == '.' && p[1] != '.') {
    is_float = true;
    p++;
    while (*p >= '0' && *p <= '9')
      p++;
  }
  if (base == 10 && (*p == 'e' || *p == 'E')) {
    const char *e = p + 1;
    if (*e == '+' || *e == '-')
      e++;
    if (*e < '0' || *e > '9')
      return tool_fail(msg, msgsize, "malformed exponent at offset %zu", off);
    while (*e >= '0' && *e <= '9')
      e++;
    is_float = true;
    p = e;
  }
  if (is_float && underscore)
    return tool_fail(msg, msgsize, "'_' separators are only allowed in integer literals (offset %zu)",
                off);
  if (is_ident_char(*p)) {
    const char *s = p;
    while (is_ident_char(*p))
      p++;
    bool found = false;
    for (int t = AC_I8; t < AC_NUM_SCALARS && !found; t++) {
      const char *n = ac_scalar_name((ac_scalar)t);
      if (strlen(n) == (size_t)(p - s) && strncmp(n, s, (size_t)(p - s)) == 0) {
        out->has_suffix = true;
        out->suffix = (ac_scalar)t;
        found = true;
      }
    }
    if (!found)
      return tool_fail(msg, msgsize, "unknown literal suffix '%.*s' at offset %zu", (int)(p - s), s,
                  (size_t)(s - text));
  }
  /* An integer written with a float suffix is a float literal (2f32). Hex and
   * binary ones keep their exact integer value, which types the same way. */
  if (!is_float && out->has_suffix && is_float_type(out->suffix) && base == 10) {
    is_float = true;
    if (underscore)
      return tool_fail(msg, msgsize, "'_' separators are only allowed in integer literals (offset %zu)",
                  off);
  }
  if (!is_float && overflow)
    return tool_fail(msg, msgsize, "integer literal at offset %zu is larger than 2^64-1", off);
  out->kind = is_float ? LIT_FLOAT : LIT_INT;
  out->mag = mag;
  out->ftext = digits;
  /* The float's text ends where its suffix starts. */
  out->flen = (size_t)(p - digits) - (out->has_suffix ? strlen(ac_scalar_name(out->suffix)) : 0);
  *pp = p;
  return true;
}

/* Types the literal against the expected scalar type (§5) and checks that
 * its value fits. */
static bool cast_value(ac_scalar from, const value *in, ac_scalar to, value *out, char *msg,
                       size_t msgsize);

static bool type_literal(const lit *l, ac_scalar want, bool cast, value *v, char *msg,
                         size_t msgsize) {
  const char *wn = ac_scalar_name(want);
  if (l->kind != LIT_BOOL && l->has_suffix && l->suffix != want && cast &&
      val_castable(l->suffix, want)) {
    value typed; /* the literal as its own type, then converted */
    return type_literal(l, l->suffix, false, &typed, msg, msgsize) &&
           cast_value(l->suffix, &typed, want, v, msg, msgsize);
  }
  if (l->kind == LIT_BOOL) {
    if (want != AC_BOOL)
      return tool_fail(msg, msgsize, "a bool literal cannot be %s", wn);
    v->bits = l->mag;
    return true;
  }
  if (want == AC_BOOL)
    return tool_fail(msg, msgsize, "expected true or false for a bool");
  if (l->has_suffix && l->suffix != want)
    return tool_fail(msg, msgsize, "literal suffix %s does not match the parameter type %s%s",
                     ac_scalar_name(l->suffix), wn,
                     cast ? " (--cast does not convert between these types)"
                     : val_castable(l->suffix, want) ? " (--cast converts it)"
                                                     : "");
  if (l->kind == LIT_INT && is_int_type(want)) {
    unsigned bits = (unsigned)ac_scalar_size(want) * 8;
    uint64_t limit; /* the largest magnitude allowed with this sign */
    if (is_signed_type(want))
      limit = l->neg ? (uint64_t)1 << (bits - 1) : ((uint64_t)1 << (bits - 1)) - 1;
    else
      limit = l->neg ? 0 : bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
    if (l->mag > limit)
      return tool_fail(msg, msgsize, "%s%llu does not fit in %s", l->neg ? "-" : "",
                  (unsigned long long)l->mag, wn);
    v->bits = l->neg ? (uint64_t)0 - l->mag : l->mag;
    return true;
  }
  if (l->kind == LIT_INT) { /* an integer literal taking a float type */
    if (want == AC_F32)
      v->f32 = l->neg ? -(float)l->mag : (float)l->mag;
    else
      v->f64 = l->neg ? -(double)l->mag : (double)l->mag;
    return true;
  }
  if (!is_float_type(want))
    return tool_fail(msg, msgsize, "a float literal cannot be %s", wn);
  if (l->infnan) {
    double d = l->ftext[0] == 'i' ? INFINITY : NAN;
    if (l->neg)
      d = -d;
    if (want == AC_F32)
      v->f32 = (float)d;
    else
      v->f64 = d;
    return true;
  }
  /* strtof/strtod round the decimal text once, directly to the target
   * precision. The text was validated above, so they see only digits, '.',
   * and an exponent. */
  char *t = malloc(l->flen + 2);
  if (!t)
    return tool_fail(msg, msgsize, "out of memory");
  t[0] = '-';
  memcpy(t + 1, l->ftext, l->flen);
  t[l->flen + 1] = 0;
  const char *num = l->neg ? t : t + 1;
  bool inf;
  if (want == AC_F32) {
    v->f32 = strtof(num, NULL);
    inf = isinf(v->f32);
  } else {
    v->f64 = strtod(num, NULL);
    inf = isinf(v->f64);
  }
  if (inf)
    tool_fail(msg, msgsize, "%s does not fit in %s", num, wn);
  free(t);
  return !inf;
}

static void store_value(ac_scalar type, const value *v, unsigned char *dst) {
  switch (type) {
  case AC_F32:
    memcpy(dst, &v->f32, 4);
    break;
  case AC_F64:
    memcpy(dst, &v->f64, 8);
    break;
  case AC_BOOL:
  case AC_I8:
  case AC_U8: {
    uint8_t x = (uint8_t)v->bits;
    memcpy(dst, &x, 1);
    break;
  }
  case AC_I16:
  case AC_U16: {
    uint16_t x = (uint16_t)v->bits;
    memcpy(dst, &x, 2);
    break;
  }
  case AC_I32:
  case AC_U32: {
    uint32_t x = (uint32_t)v->bits;
    memcpy(dst, &x, 4);
    break;
  }
  default: {
    uint64_t x = v->bits;
    memcpy(dst, &x, 8);
    break;
  }
  }
}

/* A scalar datum from one host-order element. */
static ac_datum datum_from_bytes(ac_scalar type, const unsigned char *p) {
  ac_datum d;
  memset(&d, 0, sizeof d);
  d.kind = AC_DATUM_SCALAR;
  d.type = type;
  switch (type) {
  case AC_BOOL: d.s.b = p[0] != 0; break;
  case AC_I8: { int8_t x; memcpy(&x, p, 1); d.s.i = x; break; }
  case AC_I16: { int16_t x; memcpy(&x, p, 2); d.s.i = x; break; }
  case AC_I32: { int32_t x; memcpy(&x, p, 4); d.s.i = x; break; }
  case AC_I64: { int64_t x; memcpy(&x, p, 8); d.s.i = x; break; }
  case AC_U8: d.s.u = p[0]; break;
  case AC_U16: { uint16_t x; memcpy(&x, p, 2); d.s.u = x; break; }
  case AC_U32: { uint32_t x; memcpy(&x, p, 4); d.s.u = x; break; }
  case AC_U64: { uint64_t x; memcpy(&x, p, 8); d.s.u = x; break; }
  case AC_F32: { float x; memcpy(&x, p, 4); d.s.f = x; break; }
  case AC_F64: { double x; memcpy(&x, p, 8); d.s.f = x; break; }
  }
  return d;
}

void val_scalar_bytes(const ac_datum *d, unsigned char out[8]) {
  value v;
  if (d->type == AC_F32)
    v.f32 = (float)d->s.f;
  else if (d->type == AC_F64)
    v.f64 = d->s.f;
  else if (d->type == AC_BOOL)
    v.bits = d->s.b;
  else
    v.bits = d->s.u; /* the union member shares the signed value's bits */
  store_value(d->type, &v, out);
}

/* ---- --cast ---- */

bool val_castable(ac_scalar from, ac_scalar to) {
  if (from == to)
    return true;
  if (from == AC_BOOL || to == AC_BOOL)
    return false;
  if (is_float_type(from))
    return is_float_type(to); /* f32 <-> f64; never a float to an integer */
  return true;                /* an integer to an integer or a float */
}

/* The value held in a `value` of type t as text, for messages. */
static void value_text(ac_scalar t, const value *v, char *buf, size_t size) {
  unsigned char bytes[8];
  store_value(t, v, bytes);
  ac_datum d = datum_from_bytes(t, bytes);
  if (is_float_type(t))
    val_format_float(d.s.f, t == AC_F32, buf, size);
  else if (is_signed_type(t))
    snprintf(buf, size, "%lld", (long long)d.s.i);
  else
    snprintf(buf, size, "%llu", (unsigned long long)d.s.u);
}

/* Converts *in of type `from` to type `to` (val_castable(from, to)) into
 * *out; false with the value and why in msg when the value does not
 * convert: an integer that does not fit, an integer a float cannot hold
 * exactly, a finite f64 beyond f32's range. f64 to f32 rounds to nearest. */
static bool cast_value(ac_scalar from, const value *in, ac_scalar to, value *out, char *msg,
                       size_t msgsize) {
  unsigned char bytes[8];
  store_value(from, in, bytes);
  ac_datum d = datum_from_bytes(from, bytes);
  char text[48];
  value_text(from, in, text, sizeof text);
  const char *tn = ac_scalar_name(to);
  if (from == to) {
    *out = *in;
    return true;
  }
  if (is_float_type(from)) {
    if (to == AC_F64) {
      out->f64 = d.s.f;
      return true;
    }
    out->f32 = (float)d.s.f;
    if (isinf(out->f32) && !isinf(d.s.f))
      return tool_fail(msg, msgsize, "%s does not fit in f32", text);
    return true;
  }
  bool neg = is_signed_type(from) && d.s.i < 0;
  uint64_t mag = neg ? (uint64_t)0 - (uint64_t)d.s.i : d.s.u;
  if (is_float_type(to)) {
    /* exact when converting back gives the same magnitude (2^64 itself
     * is out of range of the check and of every integer type) */
    double r = to == AC_F32 ? (double)(float)mag : (double)mag;
    if (!(r < 0x1p64) || (uint64_t)r != mag)
      return tool_fail(msg, msgsize,
                       "%s is not exact in %s (--cast converts integers to floats "
                       "only exactly)",
                       text, tn);
    if (to == AC_F32)
      out->f32 = neg ? -(float)mag : (float)mag;
    else
      out->f64 = neg ? -(double)mag : (double)mag;
    return true;
  }
  unsigned bits = (unsigned)ac_scalar_size(to) * 8;
  uint64_t limit; /* the largest magnitude `to` holds with this sign */
  if (is_signed_type(to))
    limit = neg ? (uint64_t)1 << (bits - 1) : ((uint64_t)1 << (bits - 1)) - 1;
  else
    limit = neg ? 0 : bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
  if (mag > limit)
    return tool_fail(msg, msgsize, "%s does not fit in %s", text, tn);
  out->bits = neg ? (uint64_t)0 - mag : mag;
  return true;
}

/* ---- array literals ---- */

typedef struct alit {
  const char *text;
  ac_scalar type;
  size_t esize;
  unsigned rank;
  bool cast; /* --cast: suffixed elements of another type convert */
  int64_t *extents;
  bool *seen; /* extents[d] is fixed once a list at depth d has been closed */
  unsigned char *elems;
  size_t n, cap; /* elements stored / capacity (in elements) */
  char *msg;
  size_t msgsize;
} alit;

static void skip_ws(const char **p) {
  while (**p == ' ' || **p == '\t' || **p == '\n' || **p == '\r')
    (*p)++;
}

static bool push_elem(alit *a, const char **p) {
  lit l;
  value v;
  size_t off = (size_t)(*p - a->text);
  if (!scan_literal(p, &l, a->text, a->msg, a->msgsize))
    return false;
  if (!type_literal(&l, a->type, a->cast, &v, a->msg, a->msgsize)) {
    /* Say which element: the message alone would not find it in a long list. */
    size_t k = strlen(a->msg);
    if (k < a->msgsize)
      snprintf(a->msg + k, a->msgsize - k, " (element at offset %zu)", off);
    return false;
  }
  if (a->n == a->cap) {
    size_t nc = a->cap ? a->cap * 2 : 16;
    unsigned char *ne = realloc(a->elems, nc * a->esize);
    if (!ne)
      return tool_fail(a->msg, a->msgsize, "out of memory");
    a->elems = ne;
    a->cap = nc;
  }
  store_value(a->type, &v, a->elems + a->n * a->esize);
  a->n++;
  return true;
}

/* Parses the list that starts at *p (on its '['), at nesting depth d. */
static bool parse_list(alit *a, const char **p, unsigned d) {
  size_t open = (size_t)(*p - a->text);
  (*p)++;
  int64_t count = 0;
  for (;;) {
    skip_ws(p);
    if (**p == ']')
      break;
    if (**p == '[') {
      if (d + 1 >= a->rank)
        return tool_fail(a->msg, a->msgsize,
                    "array literal nested deeper than the parameter's rank %u (offset %zu)",
                    a->rank, (size_t)(*p - a->text));
      if (!parse_list(a, p, d + 1))
        return false;
    } else {
      if (d + 1 < a->rank)
        return tool_fail(a->msg, a->msgsize,
                    "expected a nested list at offset %zu: the parameter has rank %u",
                    (size_t)(*p - a->text), a->rank);
      if (!push_elem(a, p))
        return false;
    }
    count++;
    skip_ws(p);
    if (**p == ',') {
      (*p)++;
      continue;
    }
    if (**p != ']')
      return tool_fail(a->msg, a->msgsize, "expected ',' or ']' at offset %zu",
                  (size_t)(*p - a->text));
    break;
  }
  (*p)++;
  if (a->seen[d] && a->extents[d] != count)
    return tool_fail(a->msg, a->msgsize,
                "ragged array literal: the list at offset %zu has %lld elements, others at "
                "that depth have %lld",
                open, (long long)count, (long long)a->extents[d]);
  a->seen[d] = true;
  a->extents[d] = count;
  return true;
}

static bool parse_array(ac_context *ctx, const char *text, ac_scalar type, unsigned rank, bool cast,
                        ac_datum *out, char *msg, size_t msgsize) {
  alit a = {text, type, ac_scalar_size(type), rank, cast, NULL, NULL, NULL, 0, 0, msg, msgsize};
  a.extents = calloc(rank, sizeof *a.extents);
  a.seen = calloc(rank, sizeof *a.seen);
  bool ok = a.extents && a.seen;
  if (!ok)
    tool_fail(msg, msgsize, "out of memory");
  const char *p = text;
  if (ok) {
    skip_ws(&p);
    if (*p != '[') {
      char tn[64];
      val_type_name(type, rank, tn, sizeof tn);
      ok = tool_fail(msg, msgsize, "expected an array literal of type %s", tn);
    }
  }
  if (ok)
    ok = parse_list(&a, &p, 0);
  if (ok) {
    skip_ws(&p);
    if (*p)
      ok = tool_fail(msg, msgsize, "unexpected text after the array literal at offset %zu",
                (size_t)(p - text));
  }
  if (ok) {
    ac_error *err = NULL;
    ac_array *arr = ac_array_create(ctx, type, rank, a.extents, a.elems, &err);
    if (!arr) {
      ok = tool_fail(msg, msgsize, "%s", err ? ac_error_message(err) : "out of memory");
      ac_error_destroy(err);
    } else {
      memset(out, 0, sizeof *out);
      out->kind = AC_DATUM_ARRAY;
      out->type = type;
      out->array = arr;
    }
  }
  free(a.extents);
  free(a.seen);
  free(a.elems);
  return ok;
}

bool val_parse_literal(ac_context *ctx, const char *text, ac_scalar type, unsigned rank, bool cast,
                       ac_datum *out, char *msg, size_t msgsize) {
  if (rank > 0)
    return parse_array(ctx, text, type, rank, cast, out, msg, msgsize);
  const char *p = text;
  skip_ws(&p);
  if (*p == '[')
    return tool_fail(msg, msgsize, "expected a scalar of type %s, got an array literal",
                ac_scalar_name(type));
  lit l;
  value v;
  if (!scan_literal(&p, &l, text, msg, msgsize) || !type_literal(&l, type, cast, &v, msg, msgsize))
    return false;
  skip_ws(&p);
  if (*p)
    return tool_fail(msg, msgsize, "unexpected text after the literal at offset %zu",
                (size_t)(p - text));
  unsigned char bytes[8];
  store_value(type, &v, bytes);
  *out = datum_from_bytes(type, bytes);
  return true;
}

/* ---- .npy arguments ---- */

/* "[1, 2]": the index of row-major element k of an array of these
 * extents. */
static void index_text(int64_t k, unsigned rank, const int64_t *ext, char *buf, size_t size) {
  int64_t idx[NPY_MAX_RANK];
  for (unsigned d = rank; d-- > 0;) {
    idx[d] = ext[d] ? k % ext[d] : 0;
    k = ext[d] ? k / ext[d] : 0;
  }
  size_t n = (size_t)snprintf(buf, size, "[");
  for (unsigned d = 0; d < rank && n < size; d++)
    n += (size_t)snprintf(buf + n, size - n, d ? ", %lld" : "%lld", (long long)idx[d]);
  if (n < size)
    snprintf(buf + n, size - n, "]");
}

/* Loads one host-order element of type t into a value. */
static value load_value(ac_scalar t, const unsigned char *p) {
  ac_datum d = datum_from_bytes(t, p);
  value v;
  if (t == AC_F32)
    v.f32 = (float)d.s.f;
  else if (t == AC_F64)
    v.f64 = d.s.f;
  else if (t == AC_BOOL)
    v.bits = d.s.b;
  else
    v.bits = d.s.u;
  return v;
}

/* --cast: the row-major host elements of a file of another type, converted
 * to `type` in dst; the first value that does not convert is the error. */
static bool cast_npy(const npy_info *in, ac_scalar type, unsigned char *dst, char *msg,
                     size_t msgsize) {
  size_t fsize = ac_scalar_size(in->type), tsize = ac_scalar_size(type);
  unsigned char *src = malloc(in->nbytes ? in->nbytes : 1);
  if (!src)
    return tool_fail(msg, msgsize, "out of memory (%zu bytes)", in->nbytes);
  npy_copy_row_major(in, src);
  bool ok = true;
  for (int64_t k = 0; ok && k < in->count; k++) {
    value v = load_value(in->type, src + (size_t)k * fsize), w;
    char why[200];
    if (cast_value(in->type, &v, type, &w, why, sizeof why)) {
      store_value(type, &w, dst + (size_t)k * tsize);
    } else if (in->rank == 0) {
      ok = tool_fail(msg, msgsize, "%s", why);
    } else {
      char at[NPY_MAX_RANK * 22 + 4];
      index_text(k, in->rank, in->extents, at, sizeof at);
      ok = tool_fail(msg, msgsize, "element %s: %s", at, why);
    }
  }
  free(src);
  return ok;
}

bool val_from_npy(ac_context *ctx, const unsigned char *buf, size_t len, ac_scalar type,
                  unsigned rank, bool cast, ac_datum *out, char *msg, size_t msgsize) {
  npy_info info;
  if (!npy_parse(buf, len, &info, msg, msgsize))
    return false;
  return val_from_npy_info(ctx, &info, type, rank, cast, out, msg, msgsize);
}

bool val_from_npy_info(ac_context *ctx, const npy_info *in, ac_scalar type, unsigned rank,
                       bool cast, ac_datum *out, char *msg, size_t msgsize) {
  npy_info info = *in;
  char want[64];
  val_type_name(type, rank, want, sizeof want);
  if (!info.known)
    return tool_fail(msg, msgsize, "expected %s, got an .npy of dtype %s", want, info.descr);
  if (info.type != type && !(cast && val_castable(info.type, type)))
    return tool_fail(msg, msgsize, "expected %s, got an .npy of dtype %s (%s)%s", want, info.descr,
                     ac_scalar_name(info.type),
                     cast ? " (--cast does not convert between these types)"
                     : val_castable(info.type, type) ? " (--cast converts it)"
                                                     : "");
  if (info.rank != rank) {
    char shape[64 * 22 + 4];
    size_t k = 0;
    shape[k++] = '(';
    for (unsigned i = 0; i < info.rank; i++)
      k += (size_t)snprintf(shape + k, sizeof shape - k, i ? ", %lld" : "%lld",
                            (long long)info.extents[i]);
    snprintf(shape + k, sizeof shape - k, info.rank == 1 ? ",)" : ")");
    return tool_fail(msg, msgsize, "expected %s, got an .npy of shape %s", want, shape);
  }
  size_t esize = ac_scalar_size(type);
  if (rank == 0 && info.type == type) {
    unsigned char bytes[8];
    npy_copy_elements(bytes, info.data, 1, esize);
    *out = datum_from_bytes(type, bytes);
    return true;
  }
  size_t nbytes = (size_t)info.count * esize; /* info.count * its own size fitted in memory */
  if (info.count > 0 && nbytes / (size_t)info.count != esize)
    return tool_fail(msg, msgsize, "out of memory (%lld elements)", (long long)info.count);
  unsigned char *host = malloc(nbytes ? nbytes : 1);
  if (!host)
    return tool_fail(msg, msgsize, "out of memory (%zu bytes)", nbytes);
  if (info.type == type) {
    npy_copy_row_major(&info, host);
  } else if (!cast_npy(&info, type, host, msg, msgsize)) {
    free(host);
    return false;
  }
  if (rank == 0) {
    *out = datum_from_bytes(type, host);
    free(host);
    return true;
  }
  ac_error *err = NULL;
  ac_array *arr = ac_array_create(ctx, type, rank, info.extents, host, &err);
  free(host);
  if (!arr) {
    tool_fail(msg, msgsize, "%s", err ? ac_error_message(err) : "out of memory");
    ac_error_destroy(err);
    return false;
  }
  memset(out, 0, sizeof *out);
  out->kind = AC_DATUM_ARRAY;
  out->type = type;
  out->array = arr;
  return true;
}

/* ---- printing ---- */

void val_format_float(double v, bool is_f32, char *buf, size_t size) {
  if (isnan(v)) {
    snprintf(buf, size, "nan");
    return;
  }
  if (isinf(v)) {
    snprintf(buf, size, v < 0 ? "-inf" : "inf");
    return;
  }
  /* Shortest digit count that reads back to the same value. */
  char e[40];
  int maxp = is_f32 ? 9 : 17;
  for (int prec = 1; prec <= maxp; prec++) {
    snprintf(e, sizeof e, "%.*e", prec - 1, v);
    if (is_f32 ? strtof(e, NULL) == (float)v : strtod(e, NULL) == v)
      break;
  }
  /* e is "-d.ddde+XX": split into sign, digits and exponent. */
  const char *p = e;
  bool neg = *p == '-';
  if (neg)
    p++;
  char digits[24];
  size_t nd = 0;
  for (; *p && *p != 'e'; p++)
    if (*p != '.' && nd + 1 < sizeof digits)
      digits[nd++] = *p;
  while (nd > 1 && digits[nd - 1] == '0')
    nd--;
  digits[nd] = 0;
  int exp10 = *p == 'e' ? atoi(p + 1) : 0;
  char out[64];
  size_t k = 0;
  if (neg)
    out[k++] = '-';
  if (exp10 >= 16 || exp10 < -4) {
    out[k++] = digits[0];
    if (nd > 1) {
      out[k++] = '.';
      for (size_t i = 1; i < nd; i++)
        out[k++] = digits[i];
    }
    snprintf(out + k, sizeof out - k, "e%c%02d", exp10 < 0 ? '-' : '+', abs(exp10));
  } else if (exp10 < 0) {
    out[k++] = '0';
    out[k++] = '.';
    for (int i = -1; i > exp10; i--)
      out[k++] = '0';
    for (size_t i = 0; i < nd; i++)
      out[k++] = digits[i];
    out[k] = 0;
  } else {
    for (int i = 0; i <= exp10; i++)
      out[k++] = (size_t)i < nd ? digits[i] : '0';
    out[k++] = '.';
    if ((size_t)exp10 + 1 < nd)
      for (size_t i = (size_t)exp10 + 1; i < nd; i++)
        out[k++] = digits[i];
    else
      out[k++] = '0';
    out[k] = 0;
  }
  snprintf(buf, size, "%s", out);
}

static void print_scalar(FILE *f, const ac_datum *d) {
  char buf[64];
  switch (d->type) {
  case AC_BOOL:
    fputs(d->s.b ? "true" : "false", f);
    break;
  case AC_I8:
  case AC_I16:
  case AC_I32:
  case AC_I64:
    fprintf(f, "%lld", (long long)d->s.i);
    break;
  case AC_F32:
  case AC_F64:
    val_format_float(d->s.f, d->type == AC_F32, buf, sizeof buf);
    fputs(buf, f);
    break;
  default:
    fprintf(f, "%llu", (unsigned long long)d->s.u);
    break;
  }
}

/* Prints the sub-array of dimension d starting at element *pos. */
static void print_dims(FILE *f, ac_scalar type, unsigned rank, const int64_t *ext,
                       const unsigned char *data, unsigned d, int64_t *pos) {
  fputc('[', f);
  for (int64_t i = 0; i < ext[d]; i++) {
    if (i)
      fputs(", ", f);
    if (d + 1 < rank) {
      print_dims(f, type, rank, ext, data, d + 1, pos);
    } else {
      ac_datum e = datum_from_bytes(type, data + (size_t)*pos * ac_scalar_size(type));
      print_scalar(f, &e);
      (*pos)++;
    }
  }
  fputc(']', f);
}

void val_print(FILE *f, const ac_datum *d) {
  if (d->kind == AC_DATUM_SCALAR) {
    print_scalar(f, d);
  } else {
    int64_t pos = 0;
    const ac_array *a = d->array;
    print_dims(f, ac_array_type(a), ac_array_rank(a), ac_array_extents(a), ac_array_data(a), 0,
               &pos);
  }
  fputc('\n', f);
}
