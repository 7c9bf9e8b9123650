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
  /* Show non-printable bytes (NUL, invalid UTF-8 context) as '?' so the
   * diagnostic itself is always clean text. */
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    ir_buf_putc(b, (c == '\t' || (c >= 0x20 && c != 0x7f)) ? (char)c : '?');
  }
  ir_buf_putc(b, '\n');
  for (uint32_t i = 1; i < loc.col && i <= n + 1; i++)
    ir_buf_putc(b, (i - 1 < n && s[i - 1] == '\t') ? '\t' : ' ');
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
