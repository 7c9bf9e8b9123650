/* tools/toolutil.c: file reading and diagnostics for the tools. */
#define _POSIX_C_SOURCE 200809L /* fileno */
#include "toolutil.h"

#include "ir.h" /* ir_closest */

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

char *tool_read_file(const char *prog, const char *path, size_t *len) {
  FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "%s: cannot read %s: %s\n", prog, path, strerror(errno));
    return NULL;
  }
  /* a regular file ends; a pipe, a device or a terminal may not */
  struct stat st;
  size_t limit = fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) ? SIZE_MAX / 2 : TOOL_MAX_INPUT;
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  while (buf) {
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (n > limit) {
      /* /dev/zero, a pipe that never ends: refused, not read into memory */
      fprintf(stderr,
              "%s: %s: more than %u MiB, the limit for an input that is not a regular file\n", prog,
              path, (unsigned)(TOOL_MAX_INPUT >> 20));
      free(buf);
      if (f != stdin)
        fclose(f);
      return NULL;
    }
    if (n < cap) {
      if (ferror(f)) {
        fprintf(stderr, "%s: cannot read %s: %s\n", prog, path, strerror(errno));
        free(buf);
        buf = NULL;
      }
      break;
    }
    size_t ncap = cap * 2 > limit + 1 ? limit + 1 : cap * 2;
    char *nb = realloc(buf, ncap);
    if (!nb) {
      free(buf);
      buf = NULL;
      break;
    }
    buf = nb;
    cap = ncap;
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

bool tool_each_function(const char *prog, ac_module *m, const char *name,
                        bool (*fn)(ac_module *m, size_t index, const char *name, void *ud),
                        void *ud) {
  size_t nfn = ac_module_num_functions(m);
  bool found = false;
  for (size_t i = 0; i < nfn; i++) {
    const char *fname = ac_module_function_name(m, i);
    if (name ? strcmp(fname, name) != 0 : ac_module_function_is_extern(m, i))
      continue;
    found = true;
    if (!fn(m, i, fname, ud))
      return false;
  }
  return name && !found ? tool_has_function(prog, m, name) : true;
}

bool tool_has_function(const char *prog, const ac_module *m, const char *name) {
  size_t nfn = ac_module_num_functions(m), n = 0;
  for (size_t i = 0; i < nfn; i++)
    if (strcmp(ac_module_function_name(m, i), name) == 0)
      return true;
  const char **names = malloc((nfn ? nfn : 1) * sizeof *names);
  for (size_t i = 0; names && i < nfn; i++)
    if (!ac_module_function_is_extern(m, i))
      names[n++] = ac_module_function_name(m, i);
  const char *near = names ? ir_closest(name, strlen(name), names, n) : NULL;
  fprintf(stderr, "%s: no function '%s' in the module", prog, name);
  if (near)
    fprintf(stderr, " (did you mean '%s'?)", near);
  if (names && n) {
    fprintf(stderr, "; it defines ");
    for (size_t i = 0; i < n; i++)
      fprintf(stderr, "%s%s", i ? ", " : "", names[i]);
  } else if (names) {
    fprintf(stderr, "; it defines no function with a body");
  }
  fputc('\n', stderr);
  free(names);
  return false;
}

typedef struct tool_emit_state {
  tool_emit_kind kind;
  ac_runtime *rt;
  FILE *out;
  bool first;
} tool_emit_state;

static bool tool_emit_one(ac_module *m, size_t index, const char *name, void *ud) {
  (void)index;
  tool_emit_state *S = ud;
  ac_context *ctx = ac_module_context(m);
  ac_error *err = NULL;
  ac_function *f = NULL;
  char *text = NULL;
  if (ac_runtime_compile(S->rt, m, name, &f, &err) != AC_OK ||
      (S->kind == TOOL_EMIT_PLAN ? ac_function_print_plan(f, &text, &err)
                                 : ac_function_print_llvm(f, &text, &err)) != AC_OK) {
    tool_print_error(err);
    ac_error_destroy(err);
    ac_function_destroy(f);
    return false;
  }
  fprintf(S->out, "%s%s", S->first ? "" : "\n", text);
  S->first = false;
  ac_string_destroy(ctx, text);
  ac_function_destroy(f);
  return true;
}

bool tool_emit(const char *prog, ac_module *m, const char *fn, tool_emit_kind kind, ac_backend be,
               const char *passes, FILE *out) {
  ac_error *err = NULL;
  tool_emit_state S = {kind, NULL, out, true};
  if (ac_runtime_create(ac_module_context(m), be, &S.rt, &err) != AC_OK ||
      (passes && ac_runtime_set_passes(S.rt, passes, &err) != AC_OK)) {
    tool_print_error(err);
    ac_error_destroy(err);
    ac_runtime_destroy(S.rt);
    return false;
  }
  bool ok = tool_each_function(prog, m, fn, tool_emit_one, &S);
  ac_runtime_destroy(S.rt);
  return ok;
}

static void tool_print_warning(void *ud, const char *file, unsigned line, unsigned col,
                               const char *msg) {
  (void)ud;
  if (file || line)
    fprintf(stderr, "%s:%u:%u: warning: %s\n", file ? file : "<input>", line, col, msg);
  else
    fprintf(stderr, "warning: %s\n", msg);
}

void tool_warnings(ac_context *ctx, bool quiet) {
  ac_context_set_warning_handler(ctx, quiet ? NULL : tool_print_warning, NULL);
}
