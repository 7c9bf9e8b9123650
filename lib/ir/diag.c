/* lib/ir/diag.c: error objects and source-located diagnostics.
 *
 * Every diagnostic has the cproc/clang shape
 *     FILE:LINE:COL: error: MESSAGE
 *     <the source line>
 *         ^
 * Columns count bytes from 1; tabs in the source line are kept so that the
 * caret line (which copies tabs) lines up in a terminal.
 */
#include "ir.h"

#include <stdio.h>
#include <string.h>

ac_status ac_error_status(const ac_error *e) { return e ? e->status : AC_OK; }
const char *ac_error_message(const ac_error *e) { return e && e->message ? e->message : ""; }
const char *ac_error_file(const ac_error *e) { return e ? e->file : NULL; }
unsigned ac_error_line(const ac_error *e) { return e ? e->line : 0; }
unsigned ac_error_column(const ac_error *e) { return e ? e->col : 0; }
const char *ac_error_text(const ac_error *e) { return e && e->text ? e->text : ""; }

void ac_error_destroy(ac_error *e) {
  if (!e)
    return;
  ac_context *ctx = e->ctx;
  ac_free(ctx, e->message);
  ac_free(ctx, e->file);
  ac_free(ctx, e->text);
  ac_free(ctx, e);
}

/* Length of the valid UTF-8 sequence (2-4 bytes) starting at p, or 1 for an
 * ASCII byte or an invalid byte. Rejects overlong forms and surrogates. */
static size_t utf8_len(const unsigned char *p, size_t avail) {
  unsigned char c = p[0];
  size_t len;
  uint32_t cp;
  if (c < 0x80)
    return 1;
  if (c >= 0xc2 && c <= 0xdf) {
    len = 2;
    cp = c & 0x1f;
  } else if (c >= 0xe0 && c <= 0xef) {
    len = 3;
    cp = c & 0x0f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    len = 4;
    cp = c & 0x07;
  } else {
    return 1;
  }
  if (avail < len)
    return 1;
  for (size_t i = 1; i < len; i++) {
    if ((p[i] & 0xc0) != 0x80)
      return 1;
    cp = (cp << 6) | (p[i] & 0x3f);
  }
  if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
      (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
    return 1;
  return len;
}

/* Appends source line `line` of m and a caret under column `col`. */
static void render_source(ir_buf *b, const ac_module *m, ir_loc loc) {
  if (!m || !m->src || loc.line == 0)
    return;
  const char *s = m->src, *end = m->src + m->srclen;
  uint32_t l = 1;
  for (; l < loc.line && s < end; s++)
    if (*s == '\n')
      l++;
  if (l < loc.line)
    return; /* position past the end of the text: no line to show */
  const char *e = s;
  while (e < end && *e != '\n')
    e++;
  size_t n = (size_t)(e - s);
  if (n > 0 && s[n - 1] == '\r')
    n--;
  /* The diagnostic itself must be clean UTF-8 text even when the error is
   * about the bytes: valid UTF-8 sequences are copied, control characters and
   * invalid bytes become '?'. The caret line copies tabs and gives each
   * character (not each byte) one column, so it lines up in a terminal. */
  uint32_t caret = loc.col ? loc.col - 1 : 0; /* byte offset of the caret */
  ir_buf pad;
  ir_buf_init(&pad, b->ctx);
  for (size_t i = 0; i < n;) {
    unsigned char c = (unsigned char)s[i];
    size_t len = utf8_len((const unsigned char *)s + i, n - i);
    bool before = i < caret;
    if (len > 1) {
      ir_buf_putn(b, s + i, len);
    } else {
      len = 1;
      ir_buf_putc(b, (c == '\t' || (c >= 0x20 && c < 0x7f)) ? (char)c : '?');
    }
    if (before)
      ir_buf_putc(&pad, c == '\t' ? '\t' : ' ');
    i += len;
  }
  ir_buf_putc(b, '\n');
  ir_buf_puts(b, ir_buf_cstr(&pad));
  for (size_t i = n; i < caret && i <= n; i++)
    ir_buf_putc(b, ' '); /* caret just past the end of the line */
  if (pad.oom)
    b->oom = true;
  ir_buf_free(&pad);
  ir_buf_puts(b, "^\n");
}

ac_error *ir_verror(ac_context *ctx, ac_status st, const ac_module *m, ir_loc loc,
                    const char *fmt, va_list ap) {
  ac_error *e = ac_alloc(ctx, sizeof *e);
  if (!e)
    return NULL;
  memset(e, 0, sizeof *e);
  e->ctx = ctx;
  e->status = st;
  ir_buf msg;
  ir_buf_init(&msg, ctx);
  char small[512];
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(small, sizeof small, fmt, ap2);
  va_end(ap2);
  if (n >= 0 && (size_t)n < sizeof small)
    ir_buf_puts(&msg, small);
  else if (n >= 0) {
    char *big = ac_alloc(ctx, (size_t)n + 1);
    if (big) {
      vsnprintf(big, (size_t)n + 1, fmt, ap);
      ir_buf_puts(&msg, big);
      ac_free(ctx, big);
    }
  }
  e->message = ir_buf_take(&msg);
  e->line = loc.line;
  e->col = loc.col;
  if (m && m->name)
    e->file = ac_strdup(ctx, m->name);
  ir_buf t;
  ir_buf_init(&t, ctx);
  if (e->file && loc.line)
    ir_buf_printf(&t, "%s:%u:%u: error: %s\n", e->file, loc.line, loc.col, e->message);
  else if (e->file)
    ir_buf_printf(&t, "%s: error: %s\n", e->file, e->message);
  else
    ir_buf_printf(&t, "error: %s\n", e->message);
  render_source(&t, m, loc);
  e->text = ir_buf_take(&t);
  if (!e->message || !e->text || (m && m->name && !e->file)) {
    ac_error_destroy(e);
    return NULL;
  }
  return e;
}

ac_error *ir_error(ac_context *ctx, ac_status st, const ac_module *m, ir_loc loc,
                   const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ac_error *e = ir_verror(ctx, st, m, loc, fmt, ap);
  va_end(ap);
  return e;
}

ac_status ir_report(ac_error **err, ac_error *e, ac_status st) {
  if (err)
    *err = e;
  else
    ac_error_destroy(e);
  return st;
}

/* The edit distance of a[0..na) and b[0..nb), both under 64 bytes (a
 * longer one is never close): insertions, deletions, substitutions and
 * swaps of two neighbours ("fodl" for "fold") cost one each (Damerau's
 * optimal string alignment). */
static size_t edit_distance(const char *a, size_t na, const char *b, size_t nb) {
  unsigned char d[64][64];
  if (na >= 64 || nb >= 64)
    return (size_t)-1;
  for (size_t i = 0; i <= na; i++)
    for (size_t j = 0; j <= nb; j++) {
      if (i == 0 || j == 0) {
        d[i][j] = (unsigned char)(i + j);
        continue;
      }
      unsigned best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
      if (d[i - 1][j] + 1u < best)
        best = d[i - 1][j] + 1u;
      if (d[i][j - 1] + 1u < best)
        best = d[i][j - 1] + 1u;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
          d[i - 2][j - 2] + 1u < best)
        best = d[i - 2][j - 2] + 1u;
      d[i][j] = (unsigned char)best;
    }
  return d[na][nb];
}

const char *ir_closest(const char *word, size_t len, const char *const *names, size_t n) {
  if (len < 3) /* every short name is close to some other */
    return NULL;
  size_t best = (size_t)-1;
  const char *pick = NULL;
  for (size_t i = 0; i < n; i++) {
    size_t d = names[i] ? edit_distance(word, len, names[i], strlen(names[i])) : (size_t)-1;
    if (d < best && d > 0) {
      best = d;
      pick = names[i];
    }
  }
  size_t most = len / 3 > 1 ? len / 3 : 1;
  return pick && best <= most ? pick : NULL;
}
