/* tools/arrayc-opt: parse, verify, run passes, print canonical IR.
 *
 *   arrayc-opt [--passes=LIST] [--print-plan[=FN]] [-o OUT] FILE.ac
 *
 * --print-plan prints, instead of the IR, the kernel plan that lowering for
 * the CPU makes of each function (or of FN), after the passes.
 * FILE "-" reads standard input. The pass list is comma-separated; no passes
 * exist yet (they arrive with the optimiser), so any name is an error. Exit
 * status: 0 on success, 1 on a program error (diagnostic on stderr), 2 on a
 * usage error.
 */
#include "toolutil.h"

#include <stdlib.h>
#include <string.h>

static void usage(FILE *f) {
  fprintf(f, "usage: arrayc-opt [--passes=LIST] [--print-plan[=FN]] [-o OUT] FILE.ac\n"
             "  Parses and verifies FILE (\"-\" for standard input), runs the passes in\n"
             "  LIST (comma-separated) and prints the canonical IR.\n"
             "options:\n"
             "  --passes=LIST  passes to run, in order (available passes: none yet)\n"
             "  --print-plan   print the kernel plan of each function instead of the IR\n"
             "  --print-plan=FN  only the plan of function FN\n"
             "  -o OUT         write the IR to OUT instead of standard output\n"
             "  -h, --help     show this help\n");
}

int main(int argc, char **argv) {
  const char *file = NULL, *out = NULL, *passes = "", *plan_fn = NULL;
  bool print_plan = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      usage(stdout);
      return 0;
    } else if (strncmp(a, "--passes=", 9) == 0) {
      passes = a + 9;
    } else if (strcmp(a, "--print-plan") == 0) {
      print_plan = true;
    } else if (strncmp(a, "--print-plan=", 13) == 0) {
      print_plan = true;
      plan_fn = a + 13;
    } else if (strcmp(a, "-o") == 0 && i + 1 < argc) {
      out = argv[++i];
    } else if (a[0] == '-' && a[1] != 0) {
      fprintf(stderr, "arrayc-opt: unknown option '%s'\n", a);
      usage(stderr);
      return 2;
    } else if (!file) {
      file = a;
    } else {
      fprintf(stderr, "arrayc-opt: more than one input file\n");
      return 2;
    }
  }
  if (!file) {
    usage(stderr);
    return 2;
  }
  if (passes[0]) {
    const char *end = strchr(passes, ',');
    int n = end ? (int)(end - passes) : (int)strlen(passes);
    fprintf(stderr, "arrayc-opt: unknown pass '%.*s' (available passes: none yet)\n", n, passes);
    return 2;
  }
  ac_context *ctx = ac_context_create();
  if (!ctx) {
    fprintf(stderr, "arrayc-opt: out of memory\n");
    return 1;
  }
  int rc = 1;
  ac_module *m = tool_load_module("arrayc-opt", ctx, file);
  if (m && print_plan) {
    FILE *f = out ? fopen(out, "w") : stdout;
    if (!f) {
      fprintf(stderr, "arrayc-opt: cannot write %s\n", out);
    } else {
      bool ok = tool_emit("arrayc-opt", m, plan_fn, TOOL_EMIT_PLAN, AC_BACKEND_CPU, f);
      int closed = f != stdout ? fclose(f) : fflush(f);
      rc = ok && closed == 0 ? 0 : 1;
    }
    ac_module_destroy(m);
  } else if (m) {
    ac_error *err = NULL;
    char *text = ac_module_print(m, &err);
    if (!text) {
      tool_print_error(err);
      ac_error_destroy(err);
    } else {
      FILE *f = out ? fopen(out, "w") : stdout;
      if (!f) {
        fprintf(stderr, "arrayc-opt: cannot write %s\n", out);
      } else {
        fputs(text, f);
        rc = (f != stdout ? fclose(f) : fflush(f)) == 0 ? 0 : 1;
      }
      ac_string_destroy(ctx, text);
    }
    ac_module_destroy(m);
  }
  ac_context_destroy(ctx);
  return rc;
}
