/* tools/arrayc: the ahead-of-time compiler driver.
 *
 *   arrayc --emit=plan|llvm|ptx [--target=cpu|gpu] [--gpu=sm_XY] [--fn NAME]
 *          [-O0..-O3 | --passes=LIST] [-o OUT] FILE.ac
 *   arrayc --read-plan [-o OUT] FILE.plan
 *
 * Compiles the functions of FILE ("-" for standard input; all functions
 * with a body, or only NAME) and writes, for each, its kernel plan
 * (runtime/plan.h's text form: the host program of buffer allocations,
 * launches and loops), its optimised LLVM IR, or (--emit=ptx) the PTX of
 * its GPU kernels for architecture sm_XY (default sm_75). --target=gpu
 * makes plans and LLVM IR for the GPU (the plan is the one the GPU and the
 * SIMT emulator run; the LLVM IR is NVPTX's); the default is the host CPU.
 * The optimisation passes run first: -O2 unless -O0..-O3 or --passes=LIST
 * (docs/passes.md) says otherwise. No GPU is needed for any of it. Writing a .ptx file plus a C header for
 * the runtime library (DESIGN.md's ahead-of-time mode) comes with that
 * library; asking for it now is a clear error rather than a silent no-op.
 *
 * --read-plan parses a plan's text (as the ahead-of-time runtime will),
 * checks it and prints it back in canonical form: the round-trip test of
 * the plan format, and a checker for hand-edited plans. It uses the
 * runtime's internal plan reader (runtime/plan.h), which has no public API
 * until the runtime library exists. Exit status: 0 on success, 1 on a
 * program error (diagnostic on stderr), 2 on a usage error.
 */
#include "toolutil.h"
#include "api/function_impl.h"
#include "runtime/plan.h"
#include "target/nvptx.h"

#include <stdlib.h>
#include <string.h>

static void usage(FILE *f) {
  fprintf(f, "usage: arrayc --emit=plan|llvm|ptx [--target=cpu|gpu] [--gpu=sm_XY] [--fn NAME]\n"
             "              [-o OUT] FILE.ac\n"
             "       arrayc --read-plan [-o OUT] FILE.plan\n"
             "  Compiles FILE (\"-\" for standard input) and writes the kernel plan, the\n"
             "  optimised LLVM IR or the PTX of each function (or of NAME).\n"
             "options:\n"
             "  --emit=plan    the kernel plan (host program: allocations, launches, loops)\n"
             "  --emit=llvm    the optimised LLVM IR of the kernels\n"
             "  --emit=ptx     the PTX of the GPU kernels (implies --target=gpu)\n"
             "  --target=T     cpu (the default: the host CPU) or gpu\n"
             "  --gpu=sm_XY    GPU architecture for --target=gpu (default sm_75, at least sm_75)\n"
             "  --read-plan    parse a plan's text, check it and print it canonically\n"
             "  --fn NAME      only function NAME\n"
             "  -O0 .. -O3     optimisation level (default -O2; docs/passes.md)\n"
             "  --passes=LIST  run these passes instead (comma-separated, see arrayc-opt\n"
             "                 --list-passes)\n"
             "  -o OUT         write to OUT instead of standard output\n"
             "  -h, --help     show this help\n"
             "Ahead-of-time output (.ptx plus a C header for the runtime library) is not built "
             "yet.\n");
}

typedef struct gpu_emit {
  const char *passes;
  unsigned sm;
  bool llvm;
  FILE *out;
  bool first;
} gpu_emit;

/* --emit=ptx, and --emit=llvm --target=gpu: NVPTX code needs no device. */
static bool emit_gpu_one(ac_module *m, size_t index, const char *name, void *ud) {
  (void)name;
  gpu_emit *G = ud;
  ac_error *err = NULL;
  char *text = NULL;
  if (ac_module_verify(m, &err) != AC_OK ||
      api_emit_ptx(m, (uint32_t)index, G->passes, G->sm, G->llvm, &text, &err) != AC_OK) {
    tool_print_error(err);
    ac_error_destroy(err);
    return false;
  }
  fprintf(G->out, "%s%s", G->first ? "" : "\n", text);
  G->first = false;
  ac_free(ac_module_context(m), text);
  return true;
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
  const char *file = NULL, *out = NULL, *fn = NULL, *emit = NULL, *target = "cpu";
  const char *passes = "O2";
  unsigned sm = NV_SM_DEFAULT;
  bool read_plan = false;
  int po;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      usage(stdout);
      return 0;
    } else if ((po = tool_pass_option("arrayc", a, &passes)) != 0) {
      if (po < 0)
        return 2;
    } else if (strncmp(a, "--emit=", 7) == 0) {
      emit = a + 7;
    } else if (strncmp(a, "--target=", 9) == 0) {
      target = a + 9;
      if (strcmp(target, "cpu") != 0 && strcmp(target, "gpu") != 0) {
        fprintf(stderr, "arrayc: unknown --target '%s' (cpu or gpu)\n", target);
        return 2;
      }
    } else if (strncmp(a, "--gpu=", 6) == 0) {
      char *end;
      unsigned long v = strncmp(a + 6, "sm_", 3) == 0 ? strtoul(a + 9, &end, 10) : 0;
      if (v == 0 || *end || v > 1000 || !nv_sm_valid((unsigned)v) || v < NV_SM_MIN) {
        fprintf(stderr, "arrayc: --gpu wants an architecture sm_XY of sm_%u or newer that LLVM "
                        "knows (sm_75, sm_80, sm_86, sm_89, sm_90, ...), not '%s'\n",
                NV_SM_MIN, a + 6);
        return 2;
      }
      sm = (unsigned)v;
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
  tool_emit_kind kind = TOOL_EMIT_PLAN;
  bool ptx = false;
  if (!emit) {
    fprintf(stderr, "arrayc: ahead-of-time output (.ptx plus a C header) is not built yet; use "
                    "--emit=plan, --emit=llvm or --emit=ptx\n");
    return 2;
  } else if (strcmp(emit, "plan") == 0) {
    kind = TOOL_EMIT_PLAN;
  } else if (strcmp(emit, "llvm") == 0) {
    kind = TOOL_EMIT_LLVM;
  } else if (strcmp(emit, "ptx") == 0) {
    ptx = true;
    target = "gpu";
  } else {
    fprintf(stderr, "arrayc: unknown --emit kind '%s' (plan, llvm or ptx)\n", emit);
    return 2;
  }
  bool gpu = strcmp(target, "gpu") == 0;
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
      gpu_emit G = {passes, sm, kind == TOOL_EMIT_LLVM, f, true};
      /* a GPU plan is the same for the GPU and the SIMT emulator, which
       * needs no device */
      bool ok = gpu && (ptx || kind == TOOL_EMIT_LLVM)
                    ? tool_each_function("arrayc", m, fn, emit_gpu_one, &G)
                    : tool_emit("arrayc", m, fn, kind, gpu ? AC_BACKEND_SIMT_EMU : AC_BACKEND_CPU,
                                passes, f);
      int closed = f != stdout ? fclose(f) : fflush(f);
      rc = ok && closed == 0 ? 0 : 1;
    }
    ac_module_destroy(m);
  }
  ac_context_destroy(ctx);
  return rc;
}
