/* lib/ir/lex.c: the lexer of arrayc's text format.
 *
 * One token per call (see lex.h). The rules are those of docs/language.md §1:
 * ASCII source outside comments, comments that must be valid UTF-8 and hold
 * no NUL byte, identifiers of at most 255 bytes, and numbers in decimal, hex
 * or binary with `_` separators and an optional type suffix.
 *
 * Float literals are converted without depending on the C locale: the digits
 * are rewritten as an integer mantissa and a decimal exponent ("12345e-3"),
 * a form strtod/strtof read the same way in every locale, and the conversion
 * is then correctly rounded by the C library (strtof for an f32 suffix, so
 * that no double rounding happens).
 *
 * After a '.' token, digits are read as a plain field number: `t.0.1` is two
 * projections, not `t` followed by the float `0.1`.
 */
#include "lex.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
  const char *word;
  lex_kind kind;
} keywords[] = {
    {"fn", TOK_FN},       {"let", TOK_LET},       {"if", TOK_IF},     {"else", TOK_ELSE},
    {"loop", TOK_LOOP},   {"while", TOK_WHILE},   {"rec", TOK_REC},   {"in", TOK_IN},
    {"true", TOK_TRUE},   {"false", TOK_FALSE},   {"inf", TOK_INF},   {"nan", TOK_NAN},
    {"clamp", TOK_CLAMP}, {"mirror", TOK_MIRROR}, {"wrap", TOK_WRAP}, {"extern", TOK_EXTERN},
};

/* Spellings of the fixed tokens, indexed by kind (NULL for the others). */
static const char *const spellings[TOK_NUM_KINDS] = {
    [TOK_FN] = "fn",       [TOK_LET] = "let",       [TOK_IF] = "if",     [TOK_ELSE] = "else",
    [TOK_LOOP] = "loop",   [TOK_WHILE] = "while",   [TOK_REC] = "rec",   [TOK_IN] = "in",
    [TOK_TRUE] = "true",   [TOK_FALSE] = "false",   [TOK_INF] = "inf",   [TOK_NAN] = "nan",
    [TOK_CLAMP] = "clamp", [TOK_MIRROR] = "mirror", [TOK_WRAP] = "wrap", [TOK_EXTERN] = "extern",
    [TOK_LPAREN] = "(",    [TOK_RPAREN] = ")",      [TOK_LBRACK] = "[",  [TOK_RBRACK] = "]",
    [TOK_LBRACE] = "{",    [TOK_RBRACE] = "}",      [TOK_COMMA] = ",",   [TOK_SEMI] = ";",
    [TOK_COLON] = ":",     [TOK_DOT] = ".",         [TOK_ARROW] = "->",  [TOK_ASSIGN] = "=",
    [TOK_DOTDOT] = "..",   [TOK_DOTDOTEQ] = "..=",  [TOK_OROR] = "||",   [TOK_ANDAND] = "&&",
    [TOK_EQ] = "==",       [TOK_NE] = "!=",         [TOK_LT] = "<",      [TOK_LE] = "<=",
    [TOK_GT] = ">",        [TOK_GE] = ">=",         [TOK_BAR] = "|",     [TOK_CARET] = "^",
    [TOK_AMP] = "&",       [TOK_SHL] = "<<",        [TOK_SHR] = ">>",    [TOK_PLUS] = "+",
    [TOK_MINUS] = "-",     [TOK_STAR] = "*",        [TOK_SLASH] = "/",   [TOK_PERCENT] = "%",
    [TOK_BANG] = "!",      [TOK_TILDE] = "~",
};

/* Type suffixes of numbers, in ac_scalar order from AC_I8 (bool has none). */
static const char *const suffixes[] = {"i8",  "i16", "i32", "i64", "u8",
                                       "u16", "u32", "u64", "f32", "f64"};

const char *lex_kind_spelling(lex_kind k) {
  return (unsigned)k < TOK_NUM_KINDS ? spellings[k] : NULL;
}

const char *lex_kind_name(lex_kind k) {
  switch (k) {
  case TOK_EOF:
    return "end of input";
  case TOK_ERROR:
    return "invalid token";
  case TOK_IDENT:
    return "identifier";
  case TOK_INT:
  case TOK_FLOAT:
    return "number";
  case TOK_STRING:
    return "string";
  default:
    return spellings[k] ? spellings[k] : "token";
  }
}

static bool is_alpha(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
static bool is_alnum(char c) {
  return is_alpha(c) || is_digit(c);
}

static lex_kind keyword_kind(const char *s, size_t n) {
  for (size_t i = 0; i < sizeof keywords / sizeof keywords[0]; i++)
    if (strlen(keywords[i].word) == n && memcmp(keywords[i].word, s, n) == 0)
      return keywords[i].kind;
  return TOK_IDENT;
}

bool lex_is_plain_ident(const char *s, size_t n) {
  if (n == 0 || n > LEX_MAX_IDENT || !is_alpha(s[0]))
    return false;
  for (size_t i = 1; i < n; i++)
    if (!is_alnum(s[i]))
      return false;
  return keyword_kind(s, n) == TOK_IDENT;
}

void lex_init(lexer *lx, ac_context *ctx, const char *src, size_t len) {
  memset(lx, 0, sizeof *lx);
  lx->ctx = ctx;
  lx->src = src;
  lx->len = len;
  lx->line = 1;
  lx->status = AC_OK;
}

static ir_loc loc_at(const lexer *lx, size_t pos) {
  size_t col = pos - lx->line_start + 1;
  return (ir_loc){lx->line, col > UINT32_MAX ? UINT32_MAX : (uint32_t)col};
}

static bool lex_fail(lexer *lx, ir_loc loc, const char *fmt, ...) IR_PRINTF(3, 4);
static bool lex_fail(lexer *lx, ir_loc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(lx->err_msg, sizeof lx->err_msg, fmt, ap);
  va_end(ap);
  lx->status = AC_ERR_SYNTAX;
  lx->err_loc = loc;
  return false;
}

/* Length of the valid UTF-8 sequence at s[0..n), or 0 if it is invalid
 * (overlong forms, surrogates and code points above U+10FFFF included). */
static size_t utf8_len(const unsigned char *s, size_t n) {
  unsigned c = s[0];
  size_t k;
  uint32_t cp, min;
  if (c < 0x80)
    return 1;
  if (c >= 0xC2 && c <= 0xDF)
    k = 2, cp = c & 0x1F, min = 0x80;
  else if (c >= 0xE0 && c <= 0xEF)
    k = 3, cp = c & 0x0F, min = 0x800;
  else if (c >= 0xF0 && c <= 0xF4)
    k = 4, cp = c & 0x07, min = 0x10000;
  else
    return 0;
  if (n < k)
    return 0;
  for (size_t i = 1; i < k; i++) {
    if ((s[i] & 0xC0) != 0x80)
      return 0;
    cp = cp << 6 | (s[i] & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  return k;
}

/* Checks one byte inside a comment at lx->pos; advances past it (and its
 * UTF-8 continuation bytes). Newlines are counted by the caller. */
static bool comment_byte(lexer *lx) {
  const unsigned char *s = (const unsigned char *)lx->src + lx->pos;
  if (*s == 0)
    return lex_fail(lx, loc_at(lx, lx->pos), "NUL byte in source");
  size_t k = utf8_len(s, lx->len - lx->pos);
  if (k == 0)
    return lex_fail(lx, loc_at(lx, lx->pos), "invalid UTF-8 in comment");
  lx->pos += k;
  return true;
}

static void newline(lexer *lx) {
  lx->pos++;
  lx->line++;
  lx->line_start = lx->pos;
}

/* Skips blanks and comments. */
static bool skip_space(lexer *lx) {
  const char *s = lx->src;
  while (lx->pos < lx->len) {
    char c = s[lx->pos];
    if (c == ' ' || c == '\t' || c == '\r') {
      lx->pos++;
    } else if (c == '\n') {
      newline(lx);
    } else if (c == '/' && lx->pos + 1 < lx->len && s[lx->pos + 1] == '/') {
      lx->pos += 2;
      while (lx->pos < lx->len && s[lx->pos] != '\n')
        if (!comment_byte(lx))
          return false;
    } else if (c == '/' && lx->pos + 1 < lx->len && s[lx->pos + 1] == '*') {
      ir_loc start = loc_at(lx, lx->pos);
      lx->pos += 2;
      for (;;) {
        if (lx->pos >= lx->len)
          return lex_fail(lx, start, "unterminated block comment");
        if (s[lx->pos] == '*' && lx->pos + 1 < lx->len && s[lx->pos + 1] == '/') {
          lx->pos += 2;
          break;
        }
        if (s[lx->pos] == '\n')
          newline(lx);
        else if (!comment_byte(lx))
          return false;
      }
    } else {
      break;
    }
  }
  return true;
}

static int digit_value(char c, int base) {
  int d = is_digit(c)              ? c - '0'
          : (c >= 'a' && c <= 'f') ? c - 'a' + 10
          : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                   : 99;
  return d < base ? d : -1;
}

/* Converts the decimal float written in s[start..end) (digits, '_', '.' and
 * an exponent; validated by the caller) to double, or to float when f32.
 * Returns false only when memory runs out. */
static bool decimal_to_double(lexer *lx, size_t start, size_t end, bool f32, double *out) {
  const char *s = lx->src;
  size_t ndig = 0;
  for (size_t i = start; i < end && s[i] != 'e' && s[i] != 'E'; i++)
    ndig += is_digit(s[i]);
  char small[128];
  size_t cap = ndig + 32;
  char *buf = cap <= sizeof small ? small : ac_alloc(lx->ctx, cap);
  if (!buf)
    return false;
  size_t n = 0, i = start;
  int64_t frac = 0, exp = 0;
  bool in_frac = false;
  for (; i < end && s[i] != 'e' && s[i] != 'E'; i++) {
    if (s[i] == '.')
      in_frac = true;
    else if (is_digit(s[i])) {
      buf[n++] = s[i];
      frac += in_frac;
    }
  }
  if (i < end) { /* exponent: saturate far beyond any finite double */
    bool neg = false;
    i++;
    if (s[i] == '+' || s[i] == '-')
      neg = s[i++] == '-';
    for (; i < end; i++)
      if (is_digit(s[i]) && exp < 100000000)
        exp = exp * 10 + (s[i] - '0');
    if (neg)
      exp = -exp;
  }
  snprintf(buf + n, cap - n, "e%lld", (long long)(exp - frac));
  *out = f32 ? (double)strtof(buf, NULL) : strtod(buf, NULL);
  if (buf != small)
    ac_free(lx->ctx, buf);
  return true;
}

/* Quotes at most 32 bytes of a number's text in messages. */
#define QUOTE_MAX 32
static int qlen(size_t n) {
  return n > QUOTE_MAX ? QUOTE_MAX : (int)n;
}

static bool lex_field_number(lexer *lx, lex_token *t) {
  const char *s = lx->src;
  uint64_t v = 0;
  bool overflow = false;
  for (; lx->pos < lx->len && is_digit(s[lx->pos]); lx->pos++) {
    unsigned d = (unsigned)(s[lx->pos] - '0');
    if (v > (UINT64_MAX - d) / 10)
      overflow = true;
    else
      v = v * 10 + d;
  }
  if (overflow)
    return lex_fail(lx, t->loc, "field number too large");
  t->kind = TOK_INT;
  t->u = v;
  return true;
}

static bool lex_number(lexer *lx, lex_token *t) {
  const char *s = lx->src;
  size_t n = lx->len, start = lx->pos, p = start;
  int base = 10;
  if (s[p] == '0' && p + 1 < n && (s[p + 1] == 'x' || s[p + 1] == 'X'))
    base = 16, p += 2;
  else if (s[p] == '0' && p + 1 < n && (s[p + 1] == 'b' || s[p + 1] == 'B'))
    base = 2, p += 2;
  uint64_t v = 0;
  bool overflow = false, isfloat = false;
  size_t ndig = 0;
  for (; p < n; p++) {
    if (s[p] == '_')
      continue;
    int d = digit_value(s[p], base);
    if (d < 0)
      break;
    if (v > (UINT64_MAX - (unsigned)d) / (unsigned)base)
      overflow = true;
    else
      v = v * (unsigned)base + (unsigned)d;
    ndig++;
  }
  if (base != 10 && ndig == 0) {
    while (p < n && is_alnum(s[p]))
      p++;
    return lex_fail(lx, t->loc, "malformed number '%.*s'", qlen(p - start), s + start);
  }
  if (base == 2 && p < n && is_digit(s[p]))
    return lex_fail(lx, loc_at(lx, p), "invalid digit '%c' in binary literal", s[p]);
  if (base == 10) {
    if (p < n && s[p] == '.' && !(p + 1 < n && s[p + 1] == '.')) {
      isfloat = true;
      for (p++; p < n && (is_digit(s[p]) || s[p] == '_'); p++)
        ;
    }
    if (p < n && (s[p] == 'e' || s[p] == 'E')) {
      size_t q = p + 1;
      if (q < n && (s[q] == '+' || s[q] == '-'))
        q++;
      if (q >= n || !is_digit(s[q])) {
        while (q < n && is_alnum(s[q]))
          q++;
        return lex_fail(lx, t->loc, "malformed number '%.*s'", qlen(q - start), s + start);
      }
      for (; q < n && (is_digit(s[q]) || s[q] == '_'); q++)
        ;
      isfloat = true;
      p = q;
    }
  }
  size_t body_end = p, sfx = p;
  while (p < n && is_alnum(s[p]))
    p++;
  lx->pos = p;
  t->suffix = LEX_NO_SUFFIX;
  if (p > sfx) {
    for (int i = 0; i < (int)(sizeof suffixes / sizeof suffixes[0]); i++)
      if (strlen(suffixes[i]) == p - sfx && memcmp(suffixes[i], s + sfx, p - sfx) == 0)
        t->suffix = AC_I8 + i;
    if (t->suffix == LEX_NO_SUFFIX)
      return lex_fail(lx, loc_at(lx, sfx), "invalid suffix '%.*s' on number", qlen(p - sfx),
                      s + sfx);
  }
  bool fsuffix = t->suffix == AC_F32 || t->suffix == AC_F64;
  if (isfloat && t->suffix != LEX_NO_SUFFIX && !fsuffix)
    return lex_fail(lx, loc_at(lx, sfx), "float literal cannot have the integer suffix '%s'",
                    suffixes[t->suffix - AC_I8]);
  if (!isfloat && overflow)
    return lex_fail(lx, t->loc, "integer literal too large (the limit is 2^64-1)");
  if (!isfloat && !fsuffix) {
    t->kind = TOK_INT;
    t->u = v;
    return true;
  }
  t->kind = TOK_FLOAT;
  if (!isfloat)
    t->f = t->suffix == AC_F32 ? (double)(float)v : (double)v;
  else if (!decimal_to_double(lx, start, body_end, t->suffix == AC_F32, &t->f)) {
    lx->status = AC_ERR_NOMEM;
    lx->err_loc = t->loc;
    snprintf(lx->err_msg, sizeof lx->err_msg, "out of memory");
    return false;
  }
  if (isinf(t->f))
    return lex_fail(lx, t->loc, "float literal out of range%s",
                    t->suffix == AC_F32 ? " for f32" : "");
  return true;
}

/* Two-character operators: the second byte and the kind it makes. */
static lex_kind punct(const char *s, size_t avail, size_t *len) {
  char c = s[0], d = avail > 1 ? s[1] : 0;
  *len = 1;
#define TWO(ch, k2, k1)                                                                            \
  if (d == (ch)) {                                                                                 \
    *len = 2;                                                                                      \
    return k2;                                                                                     \
  }                                                                                                \
  return k1
  switch (c) {
  case '(':
    return TOK_LPAREN;
  case ')':
    return TOK_RPAREN;
  case '[':
    return TOK_LBRACK;
  case ']':
    return TOK_RBRACK;
  case '{':
    return TOK_LBRACE;
  case '}':
    return TOK_RBRACE;
  case ',':
    return TOK_COMMA;
  case ';':
    return TOK_SEMI;
  case ':':
    return TOK_COLON;
  case '^':
    return TOK_CARET;
  case '+':
    return TOK_PLUS;
  case '*':
    return TOK_STAR;
  case '/':
    return TOK_SLASH;
  case '%':
    return TOK_PERCENT;
  case '~':
    return TOK_TILDE;
  case '.':
    if (d == '.') {
      *len = avail > 2 && s[2] == '=' ? 3 : 2;
      return *len == 3 ? TOK_DOTDOTEQ : TOK_DOTDOT;
    }
    return TOK_DOT;
  case '-':
    TWO('>', TOK_ARROW, TOK_MINUS);
  case '=':
    TWO('=', TOK_EQ, TOK_ASSIGN);
  case '!':
    TWO('=', TOK_NE, TOK_BANG);
  case '|':
    TWO('|', TOK_OROR, TOK_BAR);
  case '&':
    TWO('&', TOK_ANDAND, TOK_AMP);
  case '<':
    if (d == '<') {
      *len = 2;
      return TOK_SHL;
    }
    TWO('=', TOK_LE, TOK_LT);
  case '>':
    if (d == '>') {
      *len = 2;
      return TOK_SHR;
    }
    TWO('=', TOK_GE, TOK_GT);
  default:
    return TOK_ERROR;
  }
#undef TWO
}

static int hex_digit(char c) { return digit_value(c, 16); }

/* A string literal from the opening quote at lx->pos: printable ASCII,
 * tabs, newlines (a string may span lines) and UTF-8 up to the closing
 * quote; escapes \" \\ \n \t \r \0 and \xNN. */
static bool lex_string_lit(lexer *lx, lex_token *t) {
  const char *s = lx->src;
  lx->pos++;
  for (;;) {
    if (lx->pos >= lx->len)
      return lex_fail(lx, t->loc, "unterminated string");
    char c = s[lx->pos];
    if (c == '"') {
      lx->pos++;
      t->kind = TOK_STRING;
      return true;
    }
    if (c == '\n') {
      newline(lx);
    } else if (c == '\\') {
      ir_loc at = loc_at(lx, lx->pos);
      char e = lx->pos + 1 < lx->len ? s[lx->pos + 1] : 0;
      if (e == 'x') {
        if (lx->pos + 3 >= lx->len || hex_digit(s[lx->pos + 2]) < 0 || hex_digit(s[lx->pos + 3]) < 0)
          return lex_fail(lx, at, "\\x in a string needs two hexadecimal digits");
        lx->pos += 4;
      } else if (e == '"' || e == '\\' || e == 'n' || e == 't' || e == 'r' || e == '0') {
        lx->pos += 2;
      } else {
        return lex_fail(lx, at, "unknown escape in a string (use \\\" \\\\ \\n \\t \\r \\0 or \\xNN)");
      }
    } else if (c == 0) {
      return lex_fail(lx, loc_at(lx, lx->pos), "NUL byte in source");
    } else if (c == '\t' || c == '\r' || ((unsigned char)c >= 0x20 && c != 0x7f)) {
      if (!comment_byte(lx))
        return false;
    } else {
      return lex_fail(lx, loc_at(lx, lx->pos), "control character (byte 0x%02x) in a string",
                      (unsigned char)c);
    }
  }
}

char *lex_string(ac_context *ctx, const char *src, const lex_token *t, size_t *len) {
  const char *s = src + t->off + 1;
  size_t n = t->len >= 2 ? t->len - 2 : 0, k = 0;
  char *out = ac_alloc(ctx, n + 1);
  if (!out)
    return NULL;
  for (size_t i = 0; i < n; i++) {
    if (s[i] != '\\') {
      out[k++] = s[i];
      continue;
    }
    char e = s[++i];
    if (e == 'x') {
      out[k++] = (char)(hex_digit(s[i + 1]) * 16 + hex_digit(s[i + 2]));
      i += 2;
    } else {
      out[k++] = e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e == '0' ? '\0' : e;
    }
  }
  out[k] = 0;
  *len = k;
  return out;
}

bool lex_next(lexer *lx, lex_token *t) {
  memset(t, 0, sizeof *t);
  t->suffix = LEX_NO_SUFFIX;
  t->kind = TOK_ERROR;
  if (lx->status != AC_OK || !skip_space(lx)) {
    t->loc = lx->err_loc;
    return false;
  }
  bool after_dot = lx->after_dot;
  lx->after_dot = false;
  const char *s = lx->src;
  size_t start = lx->pos;
  t->off = start;
  t->loc = loc_at(lx, start);
  if (start >= lx->len) {
    t->kind = TOK_EOF;
    return true;
  }
  unsigned char c = (unsigned char)s[start];
  bool ok = true;
  if (is_alpha((char)c)) {
    size_t p = start;
    while (p < lx->len && is_alnum(s[p]))
      p++;
    if (p - start > LEX_MAX_IDENT)
      ok = lex_fail(lx, t->loc, "identifier longer than %d bytes", LEX_MAX_IDENT);
    lx->pos = p;
    t->kind = keyword_kind(s + start, p - start);
  } else if (is_digit((char)c)) {
    ok = after_dot ? lex_field_number(lx, t) : lex_number(lx, t);
  } else if (c == '"') {
    ok = lex_string_lit(lx, t);
  } else if (c == 0) {
    ok = lex_fail(lx, t->loc, "NUL byte in source");
  } else if (c >= 0x80) {
    if (utf8_len((const unsigned char *)s + start, lx->len - start))
      ok = lex_fail(lx, t->loc, "non-ASCII character outside a comment");
    else
      ok = lex_fail(lx, t->loc, "invalid UTF-8");
  } else {
    size_t n;
    t->kind = punct(s + start, lx->len - start, &n);
    if (t->kind == TOK_ERROR) {
      if (c >= 0x20 && c < 0x7f)
        ok = lex_fail(lx, t->loc, "unexpected character '%c'", c);
      else
        ok = lex_fail(lx, t->loc, "unexpected character (byte 0x%02x)", c);
    }
    lx->pos = start + n;
    lx->after_dot = t->kind == TOK_DOT;
  }
  if (!ok) {
    t->kind = TOK_ERROR;
    t->loc = lx->err_loc;
    return false;
  }
  t->len = lx->pos - start;
  return true;
}
