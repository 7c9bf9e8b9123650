/* tools/opts.c: the tools' option parser (tools/opts.h). */
#include "opts.h"

#include "runtime/bundle.h" /* rt_build_id */
#include "target/nvptx.h"   /* nv_libdevice_path */

#include <dlfcn.h>
#include <llvm-c/Core.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tool_usage_error(const char *prog, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s: ", prog);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "; try '%s --help'\n", prog);
  va_end(ap);
}

void tool_opts_init(tool_opts *P, const char *prog, void (*usage)(FILE *f), const tool_opt *opts,
                    size_t nopts, int argc, char **argv) {
  memset(P, 0, sizeof *P);
  P->prog = prog;
  P->usage = usage;
  P->opts = opts;
  P->nopts = nopts;
  P->argc = argc;
  P->argv = argv;
  P->i = 1;
}

/* The unknown option `a` (its name up to '='), with the closest known
 * name when one is close. */
static int unknown_option(const tool_opts *P, const char *a) {
  size_t n = strcspn(a, "=");
  char word[64];
  const char *names[128];
  size_t k = 0;
  if (n >= sizeof word)
    n = sizeof word - 1;
  memcpy(word, a, n);
  word[n] = 0;
  for (size_t i = 0; i < P->nopts && k + 2 < sizeof names / sizeof names[0]; i++)
    if (P->opts[i].arg != TOOL_GLUED)
      names[k++] = P->opts[i].name;
  names[k++] = "--help";
  names[k++] = "--version";
  const char *near = ir_closest(word, strlen(word), names, k);
  if (near)
    tool_usage_error(P->prog, "unknown option '%s' (did you mean '%s'?)", word, near);
  else
    tool_usage_error(P->prog, "unknown option '%s'", word);
  return TOOL_ERROR;
}

/* The CUDA driver's version (cuDriverGetVersion: 12040 = 12.4), 0 when
 * no driver loads; *path gets the library tried. */
static int cuda_driver_version(const char **path) {
  const char *env = getenv("ARRAYC_LIBCUDA");
  *path = env && *env ? env : "libcuda.so.1";
  void *lib = dlopen(*path, RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    return 0;
  int version = 0;
  int (*get)(int *);
  void *sym = dlsym(lib, "cuDriverGetVersion");
  memcpy(&get, &sym, sizeof get); /* a function pointer from dlsym's object pointer */
  if (!sym || get(&version) != 0)
    version = 0;
  dlclose(lib);
  return version;
}

/* --version: arrayc's version and commit, LLVM's, and whether a CUDA
 * driver and libdevice are found (what the GPU backend and --emit=ptx
 * use), on stdout. */
static void tool_print_version(const char *prog) {
  unsigned maj, min, patch;
  LLVMGetVersion(&maj, &min, &patch);
  /* the version and the commit it was built from (configure time) */
  printf("%s (arrayc) %s\n", prog, rt_build_id());
  printf("LLVM %u.%u.%u\n", maj, min, patch);
  const char *path;
  int v = cuda_driver_version(&path);
  if (v)
    printf("CUDA driver: %d.%d (%s)\n", v / 1000, v % 1000 / 10, path);
  else
    printf("CUDA driver: not found (%s; the gpu backend needs it, --emit=ptx does not)\n", path);
  const char *ld = nv_libdevice_path();
  if (ld)
    printf("libdevice: %s\n", ld);
  else
    printf("libdevice: not found (GPU math uses arrayc's own functions)\n");
}

int tool_opts_next(tool_opts *P, const char **val) {
  *val = NULL;
  if (P->i >= P->argc)
    return TOOL_END;
  const char *a = P->argv[P->i++];
  if (P->words_only || a[0] != '-' || a[1] == 0 || (P->is_word && P->is_word(a))) {
    *val = a;
    return TOOL_WORD;
  }
  if (strcmp(a, "--") == 0) {
    P->words_only = true;
    return tool_opts_next(P, val);
  }
  if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
    P->usage(stdout);
    return TOOL_EXIT;
  }
  if (strcmp(a, "--version") == 0) {
    tool_print_version(P->prog);
    return TOOL_EXIT;
  }
  const char *eq = strchr(a, '=');
  size_t n = eq ? (size_t)(eq - a) : strlen(a);
  for (size_t i = 0; i < P->nopts; i++) {
    const tool_opt *o = &P->opts[i];
    size_t len = strlen(o->name);
    if (o->arg == TOOL_GLUED) {
      if (strncmp(a, o->name, len) == 0 && a[len]) {
        *val = a + len;
        return o->id;
      }
      continue;
    }
    if (len != n || strncmp(a, o->name, n) != 0)
      continue;
    switch (o->arg) {
    case TOOL_FLAG:
      if (eq) {
        tool_usage_error(P->prog, "option '%s' takes no value", o->name);
        return TOOL_ERROR;
      }
      return o->id;
    case TOOL_OPTIONAL:
      *val = eq ? eq + 1 : NULL;
      return o->id;
    default: /* TOOL_VALUE */
      if (eq) {
        *val = eq + 1;
      } else if (P->i < P->argc) {
        *val = P->argv[P->i++];
      } else {
        tool_usage_error(P->prog, "option '%s' needs a value", o->name);
        return TOOL_ERROR;
      }
      return o->id;
    }
  }
  return unknown_option(P, a);
}

bool tool_opts_file(const tool_opts *P, const char **file, const char *word) {
  if (*file) {
    tool_usage_error(P->prog, "more than one input file ('%s' and '%s')", *file, word);
    return false;
  }
  *file = word;
  return true;
}

bool tool_compile_opt(const char *prog, int id, const char *val, const char **passes, bool *quiet) {
  static const char *const levels[4] = {"O0", "O1", "O2", "O3"};
  switch (id) {
  case TOOL_OPT_NOWARN:
    *quiet = true;
    return true;
  case TOOL_OPT_PASSES:
    *passes = val;
    return true;
  default: /* TOOL_OPT_LEVEL */
    if (val[0] >= '0' && val[0] <= '3' && val[1] == 0) {
      *passes = levels[val[0] - '0'];
      return true;
    }
    tool_usage_error(prog, "unknown optimisation level '-O%s' (-O0, -O1, -O2 or -O3)", val);
    return false;
  }
}
