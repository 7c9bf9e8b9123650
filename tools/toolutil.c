/* tools/toolutil.c: file reading and diagnostics for the tools. */
#include "toolutil.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

char *tool_read_file(const char *prog, const char *path, size_t *len) {
  FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "%s: cannot read %s: %s\n", prog, path, strerror(errno));
    return NULL;
  }
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  while (buf) {
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (n < cap) {
      if (ferror(f)) {
        fprintf(stderr, "%s: cannot read %s: %s\n", prog, path, strerror(errno));
        free(buf);
        buf = NULL;
      }
      break;
    }
    char *nb = realloc(buf, cap * 2);
    if (!nb) {
      free(buf);
      buf = NULL;
      break;
    }
    buf = nb;
    cap *= 2;
  }
  if (f != stdin)
    fclose(f);
  if (!buf) {
    fprintf(stderr, "%s: cannot read %s: out of memory or read error\n", prog, path);
    return NULL;
  }
  *len = n;
  return buf;
}

void tool_print_error(const ac_error *e) {
  if (!e) {
    fprintf(stderr, "error: out of memory\n");
    return;
  }
  fputs(ac_error_text(e), stderr);
}

ac_module *tool_load_module(const char *prog, ac_context *ctx, const char *path) {
  size_t len;
  char *text = tool_read_file(prog, path, &len);
  if (!text)
    return NULL;
  ac_module *m = NULL;
  ac_error *err = NULL;
  const char *name = strcmp(path, "-") == 0 ? "<stdin>" : path;
  if (ac_module_parse(ctx, name, text, len, &m, &err) != AC_OK) {
    tool_print_error(err);
    ac_error_destroy(err);
    m = NULL;
  }
  free(text);
  return m;
}

bool tool_fail(char *msg, size_t msgsize, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, msgsize, fmt, ap);
  va_end(ap);
  return false;
}
