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
#include "opts.h"
#include "passes/pass.h"
#include "toolutil.h"

#define PROG "arrayc-opt"

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
             "  -h, --help         show this help\n"
             "  --version          arrayc's and LLVM's versions, CUDA driver and libdevice\n");
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
  enum {
    OPT_LIST,
    OPT_PRINT_ALL,
    OPT_PRINT_AFTER,
    OPT_VERIFY,
    OPT_STATS,
    OPT_TARGET,
    OPT_PLAN,
    OPT_OUT
  };
  static const tool_opt opts[] = {
      {"--list-passes", OPT_LIST, TOOL_FLAG},
      {"--print-after-all", OPT_PRINT_ALL, TOOL_FLAG},
      {"--print-after", OPT_PRINT_AFTER, TOOL_VALUE},
      {"--verify-each", OPT_VERIFY, TOOL_FLAG},
      {"--stats", OPT_STATS, TOOL_FLAG},
      {"--target", OPT_TARGET, TOOL_VALUE},
      {"--print-plan", OPT_PLAN, TOOL_OPTIONAL},
      {"-o", OPT_OUT, TOOL_VALUE},
      TOOL_COMPILE_OPTS,
  };
  tool_opts P;
  tool_opts_init(&P, PROG, usage, opts, sizeof opts / sizeof opts[0], argc, argv);
  const char *val;
  int id;
  while ((id = tool_opts_next(&P, &val)) != TOOL_END) {
    switch (id) {
    case TOOL_ERROR:
      return 2;
    case TOOL_EXIT:
      return 0;
    case TOOL_WORD:
      if (!tool_opts_file(&P, &file, val))
        return 2;
      break;
    case OPT_LIST:
      list_passes();
      return 0;
    case OPT_PRINT_ALL:
      o.print = PS_PRINT_AFTER_ALL;
      break;
    case OPT_PRINT_AFTER:
      if (!ps_find(val, strlen(val))) {
        tool_usage_error(PROG,
                         "--print-after: unknown pass '%s' (arrayc-opt --list-passes "
                         "lists them)",
                         val);
        return 2;
      }
      o.print = PS_PRINT_AFTER_ONE;
      o.print_pass = val;
      break;
    case OPT_VERIFY:
      o.verify_each = true;
      break;
    case OPT_STATS:
      stats = true;
      break;
    case OPT_TARGET:
      if (strcmp(val, "cpu") == 0)
        o.target = PS_TARGET_CPU;
      else if (strcmp(val, "gpu") == 0)
        o.target = PS_TARGET_GPU;
      else if (strcmp(val, "any") == 0)
        o.target = PS_TARGET_ANY;
      else {
        tool_usage_error(PROG, "unknown --target '%s' (cpu, gpu or any)", val);
        return 2;
      }
      break;
    case OPT_PLAN:
      print_plan = true;
      plan_fn = val;
      break;
    case OPT_OUT:
      out = val;
      break;
    default: /* the compile options */
      if (!tool_compile_opt(PROG, id, val, &passes, &quiet))
        return 2;
      break;
    }
  }
  if (!file) {
    tool_usage_error(PROG, "no input file");
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
