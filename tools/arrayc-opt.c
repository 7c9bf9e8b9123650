/* tools/arrayc-opt: parse, verify, run passes, print canonical IR.
 *
 *   arrayc-opt [--passes=LIST | -O0..-O3] [--print-after-all]
 *              [--print-after=NAME] [--verify-each] [--stats] [--target=cpu|gpu]
 *              [--print-plan[=FN]] [-o OUT] FILE.ac
 *   arrayc-opt --list-passes
 *
 * The research driver of the optimiser (docs/passes.md): it runs the named
 * passes (lib/passes/pass.h's registry) over the whole module, in order,
 * and prints the canonical IR of the result, or (--print-plan) the kernel
 * plan that lowering makes of it. Unlike arrayc and arrayc-run it runs no
 * passes unless asked: the IR as written is the default output.
 * --print-after-all / --print-after=NAME print the module to stderr after
 * each pass / after pass NAME; --verify-each also checks that the IR
 * survives print -> parse -> print after each pass; --stats prints each
 * pass's counters and time to stderr. Warnings of passes go to stderr as
 * FILE:LINE:COL: warning: MESSAGE. FILE "-" reads standard input. Exit
 * status: 0 on success, 1 on a program error (diagnostic on stderr), 2 on a
 * usage error.
 */
#include "toolutil.h"
#include "passes/pass.h"

#include <stdlib.h>
#include <string.h>

static void usage(FILE *f) {
  fprintf(f, "usage: arrayc-opt [options] FILE.ac\n"
             "       arrayc-opt --list-passes\n"
             "  Parses and verifies FILE (\"-\" for standard input), runs the passes in\n"
             "  LIST (comma-separated) and prints the canonical IR.\n"
             "options:\n"
             "  --passes=LIST      passes to run, in order; O0..O3 stand for a level's\n"
             "                     pipeline (\"O1,fuse\"); default: none\n"
             "  -O0 .. -O3         the default pipeline of that level\n"
             "  -w                 no warnings (sequentialise's)\n"
             "  --list-passes      list the passes with one line of help each\n"
             "  --print-after-all  print the IR to stderr after every pass\n"
             "  --print-after=NAME print the IR to stderr after pass NAME\n"
             "  --verify-each      also check print -> parse -> print after every pass\n"
             "  --stats            print each pass's counters and time to stderr\n"
             "  --target=T         what the code is for: cpu, gpu (smem-stencil acts only\n"
             "                     on gpu) or any (the default)\n"
             "  --print-plan       print the kernel plan of each function instead of the IR\n"
             "  --print-plan=FN    only the plan of function FN\n"
             "  -o OUT             write the output to OUT (default or -: standard output)\n"
             "  -h, --help         show this help\n");
}

static void list_passes(void) {
  printf("passes:\n");
  for (size_t i = 0; i < ps_npasses; i++)
    printf("  %-16s %s\n", ps_passes[i].name, ps_passes[i].help);
  printf("levels:\n");
  for (int l = 0; l <= 3; l++) {
    const char *p = ps_level_pipeline(l);
    printf("  O%d               %s\n", l, p[0] ? p : "(no passes)");
  }
}

static void print_after(void *ud, const char *pass, const char *text) {
  (void)ud;
  fprintf(stderr, "// ---- IR after %s ----\n%s", pass, text);
}

static void print_stats(const ps_report *r) {
  for (size_t i = 0; i < r->nrows; i++) {
    const ps_stat_row *row = &r->rows[i];
    fprintf(stderr, "%-16s %8.3f ms", row->pass->name, row->seconds * 1e3);
    for (size_t k = 0; k < PS_MAX_COUNTERS && row->pass->counters[k]; k++)
      fprintf(stderr, "%s %s %llu", k ? "," : "", row->pass->counters[k],
              (unsigned long long)row->counters[k]);
    fputc('\n', stderr);
  }
}

int main(int argc, char **argv) {
  const char *file = NULL, *out = NULL, *passes = "", *plan_fn = NULL;
  bool print_plan = false, stats = false;
  ps_options o;
  memset(&o, 0, sizeof o);
  o.print_fn = print_after;
  o.warn = ps_warn_context; /* to the context's handler: tool_warnings */
  bool quiet = false;
  int po;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      usage(stdout);
      return 0;
    } else if (strcmp(a, "--list-passes") == 0) {
      list_passes();
      return 0;
    } else if ((po = tool_compile_option("arrayc-opt", a, &passes, &quiet)) != 0) {
      if (po < 0)
        return 2;
    } else if (strcmp(a, "--print-after-all") == 0) {
      o.print = PS_PRINT_AFTER_ALL;
    } else if (strncmp(a, "--print-after=", 14) == 0) {
      if (!ps_find(a + 14, strlen(a + 14))) {
        fprintf(stderr, "arrayc-opt: --print-after: unknown pass '%s'\n", a + 14);
        return 2;
      }
      o.print = PS_PRINT_AFTER_ONE;
      o.print_pass = a + 14;
    } else if (strcmp(a, "--verify-each") == 0) {
      o.verify_each = true;
    } else if (strcmp(a, "--stats") == 0) {
      stats = true;
    } else if (strncmp(a, "--target=", 9) == 0) {
      const char *t = a + 9;
      if (strcmp(t, "cpu") == 0)
        o.target = PS_TARGET_CPU;
      else if (strcmp(t, "gpu") == 0)
        o.target = PS_TARGET_GPU;
      else if (strcmp(t, "any") == 0)
        o.target = PS_TARGET_ANY;
      else {
        fprintf(stderr, "arrayc-opt: unknown --target '%s' (cpu, gpu or any)\n", t);
        return 2;
      }
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
  ac_context *ctx = ac_context_create();
  if (!ctx) {
    fprintf(stderr, "arrayc-opt: out of memory\n");
    return 1;
  }
  tool_warnings(ctx, quiet);
  ac_error *err = NULL;
  if (ps_check_pipeline(ctx, passes, &err) != AC_OK) {
    fprintf(stderr, "arrayc-opt: %s\n", err ? ac_error_message(err) : "out of memory");
    ac_error_destroy(err);
    ac_context_destroy(ctx);
    return 2;
  }
  int rc = 1;
  ac_module *m = tool_load_module("arrayc-opt", ctx, file);
  ps_report rep = {0};
  if (m && (print_plan && o.target == PS_TARGET_ANY))
    o.target = PS_TARGET_CPU; /* the plan printed is the CPU's */
  if (m && ps_run_pipeline(m, passes, &o, stats ? &rep : NULL, &err) != AC_OK) {
    if (stats)
      print_stats(&rep);
    tool_print_error(err);
    ac_error_destroy(err);
  } else if (m) {
    if (stats)
      print_stats(&rep);
    if (out && strcmp(out, "-") == 0)
      out = NULL; /* -o -: standard output */
    FILE *f = out ? fopen(out, "w") : stdout;
    char *text = NULL;
    bool ok = false;
    if (!f) {
      fprintf(stderr, "arrayc-opt: cannot write %s\n", out);
    } else if (print_plan) {
      /* the passes ran already: the plan is lowered from the result as is */
      ok = tool_emit("arrayc-opt", m, plan_fn, TOOL_EMIT_PLAN, AC_BACKEND_CPU, "", f);
    } else if (!(text = ac_module_print(m, &err))) {
      tool_print_error(err);
      ac_error_destroy(err);
    } else {
      fputs(text, f);
      ok = true;
    }
    int closed = f && f != stdout ? fclose(f) : fflush(stdout);
    rc = ok && closed == 0 ? 0 : 1;
    ac_string_destroy(ctx, text);
  }
  ps_report_free(ctx, &rep);
  ac_module_destroy(m);
  ac_context_destroy(ctx);
  return rc;
}
