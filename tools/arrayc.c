/* tools/arrayc: the ahead-of-time compiler driver.
 *
 *   arrayc --emit=plan|llvm [--fn NAME] [-o OUT] FILE.ac
 *   arrayc --read-plan [-o OUT] FILE.plan
 *
 * Compiles the functions of FILE ("-" for standard input; all functions
 * with a body, or only NAME) for the host CPU and writes, for each, its
 * kernel plan (runtime/plan.h's text form: the host program of buffer
 * allocations, launches and loops) or its optimised LLVM IR. Writing .ptx
 * or a host object plus a C header (DESIGN.md's ahead-of-time mode) comes
 * with the GPU backend and the runtime library; asking for it now is a
 * clear error rather than a silent no-op.
 *
 * --read-plan parses a plan's text (as the ahead-of-time runtime will),
 * checks it and prints it back in canonical form: the round-trip test of
 * the plan format, and a checker for hand-edited plans. It uses the
 * runtime's internal plan reader (runtime/plan.h), which has no public API
 * until the runtime library exists. Exit status: 0 on success, 1 on a
 * program error (diagnostic on stderr), 2 on a usage error.
 */
#include "toolutil.h"
#include "runtime/plan.h"

#include <stdlib.h>
#include <string.h>

static void usage(FILE *f) {
  fprintf(f, "usage: arrayc --emit=plan|llvm [--fn NAME] [-o OUT] FILE.ac\n"
             "       arrayc --read-plan [-o OUT] FILE.plan\n"
             "  Compiles FILE (\"-\" for standard input) for the host CPU and writes the\n"
             "  kernel plan or the optimised LLVM IR of each function (or of NAME).\n"
             "options:\n"
             "  --emit=plan    the kernel plan (host program: allocations, launches, loops)\n"
             "  --emit=llvm    the optimised LLVM IR of the kernels\n"
             "  --read-plan    parse a plan's text, check it and print it canonically\n"
             "  --fn NAME      only function NAME\n"
             "  -o OUT         write to OUT instead of standard output\n"
             "  -h, --help     show this help\n"
             "Ahead-of-time output (.ptx or an object plus a C header) is not built yet.\n");
}

/* --read-plan: parse, check, print canonically. */
static int read_plan_file(const char *file, const char *out) {
  ac_context *ctx = ac_context_create();
  if (!ctx) {
    fprintf(stderr, "arrayc: out of memory\n");
    return 1;
  }
  size_t len;
  char *text = tool_read_file("arrayc", file, &len);
  int rc = 1;
  if (text) {
    ac_error *err = NULL;
    pl_plan *p = NULL;
    char *canon = NULL;
    if (pl_parse(ctx, file, text, len, &p, &err) != AC_OK || pl_print(p, &canon, &err) != AC_OK) {
      tool_print_error(err);
      ac_error_destroy(err);
    } else {
      FILE *f = out ? fopen(out, "w") : stdout;
      if (!f) {
        fprintf(stderr, "arrayc: cannot write %s\n", out);
      } else {
        fputs(canon, f);
        rc = (f != stdout ? fclose(f) : fflush(f)) == 0 ? 0 : 1;
      }
    }
    ac_string_destroy(ctx, canon);
    pl_destroy(p);
    free(text);
  }
  ac_context_destroy(ctx);
  return rc;
}

int main(int argc, char **argv) {
  const char *file = NULL, *out = NULL, *fn = NULL, *emit = NULL;
  bool read_plan = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      usage(stdout);
      return 0;
    } else if (strncmp(a, "--emit=", 7) == 0) {
      emit = a + 7;
    } else if (strcmp(a, "--read-plan") == 0) {
      read_plan = true;
    } else if (strcmp(a, "--fn") == 0 && i + 1 < argc) {
      fn = argv[++i];
    } else if (strcmp(a, "-o") == 0 && i + 1 < argc) {
      out = argv[++i];
    } else if (a[0] == '-' && a[1] != 0) {
      fprintf(stderr, "arrayc: unknown option '%s'\n", a);
      usage(stderr);
      return 2;
    } else if (!file) {
      file = a;
    } else {
      fprintf(stderr, "arrayc: more than one input file\n");
      return 2;
    }
  }
  if (!file) {
    usage(stderr);
    return 2;
  }
  if (read_plan)
    return emit || fn ? (fprintf(stderr, "arrayc: --read-plan takes no --emit or --fn\n"), 2)
                      : read_plan_file(file, out);
  tool_emit_kind kind;
  if (!emit) {
    fprintf(stderr, "arrayc: ahead-of-time output (.ptx or object plus C header) is not built "
                    "yet; use --emit=plan or --emit=llvm\n");
    return 2;
  } else if (strcmp(emit, "plan") == 0) {
    kind = TOOL_EMIT_PLAN;
  } else if (strcmp(emit, "llvm") == 0) {
    kind = TOOL_EMIT_LLVM;
  } else {
    fprintf(stderr, "arrayc: unknown --emit kind '%s' (plan or llvm)\n", emit);
    return 2;
  }
  ac_context *ctx = ac_context_create();
  if (!ctx) {
    fprintf(stderr, "arrayc: out of memory\n");
    return 1;
  }
  int rc = 1;
  ac_module *m = tool_load_module("arrayc", ctx, file);
  if (m) {
    FILE *f = out ? fopen(out, "w") : stdout;
    if (!f) {
      fprintf(stderr, "arrayc: cannot write %s\n", out);
    } else {
      bool ok = tool_emit("arrayc", m, fn, kind, f);
      int closed = f != stdout ? fclose(f) : fflush(f);
      rc = ok && closed == 0 ? 0 : 1;
    }
    ac_module_destroy(m);
  }
  ac_context_destroy(ctx);
  return rc;
}
