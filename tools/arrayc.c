/* tools/arrayc: the ahead-of-time compiler driver.
 *
 *   arrayc FILE.ac [-o PREFIX] [--target=cpu|gpu] [--gpu=sm_XY] [--cpu=NAME]
 *          [--shared] [--fn NAME] [-O0..-O3 | --passes=LIST] [--emit=LIST]
 *   arrayc --emit=plan|llvm|ptx [--target=cpu|gpu] [--gpu=sm_XY] [--fn NAME]
 *          [-O0..-O3 | --passes=LIST] [-o OUT] FILE.ac
 *   arrayc --emit=ptx --ptx-stats [--gpu=sm_XY] [--fn NAME] [-o OUT] FILE.ac
 *   arrayc --read-plan [-o OUT] FILE.plan
 *
 * Ahead of time (the first form, tools/aot.c): compiles every function
 * with a body (or only NAME) of FILE into one code file and a C header for
 * the runtime library: PREFIX.ptx for the GPU (the default), or PREFIX.o
 * (--shared: PREFIX.so) for the CPU (--target=cpu, or implied by --shared,
 * --cpu and --emit=obj|so), plus PREFIX.h. --emit=LIST picks
 * among header, obj, so, ptx, plan (PREFIX.plan, the plans), llvm
 * (PREFIX.ll) and manifest (PREFIX.json, the signatures in JSON for
 * binding generators); PREFIX defaults to FILE's name without its extension.
 *
 * Printing (the second form: --emit with exactly one of plan, llvm, ptx):
 * writes for each function its kernel plan (runtime/plan.h's text form),
 * its optimised LLVM IR, or the PTX of its GPU kernels for architecture
 * sm_XY (default sm_75) to OUT or standard output, for people and tests.
 * --target=gpu makes plans and LLVM IR for the GPU (the plan is the one the
 * GPU and the SIMT emulator run; the LLVM IR is NVPTX's); when printing,
 * the default is the host CPU. --ptx-stats prints, instead of the PTX, one
 * `ptx-stats:` line per kernel (lib/target/ptxstats.h: registers, spills,
 * shared memory and occupancy from ptxas -v when a ptxas is found, else
 * estimated from the PTX; the hot loop's instruction mix).
 *
 * The optimisation passes run first: -O2 unless -O0..-O3 or --passes=LIST
 * (docs/passes.md) says otherwise. No GPU is needed for any of it.
 *
 * --read-plan parses a plan's text (as the runtime library does), checks
 * it and prints it back in canonical form: the round-trip test of the plan
 * format, and a checker for hand-edited plans. Exit status: 0 on success,
 * 1 on a program error (diagnostic on stderr), 2 on a usage error.
 */
#include "aot.h"
#include "api/function_impl.h"
#include "opts.h"
#include "runtime/plan.h"
#include "target/nvptx.h"
#include "target/ptxstats.h"
#include "toolutil.h"

#include <stdlib.h>
#include <string.h>

#define PROG "arrayc"

static void usage(FILE *f) {
  fprintf(f, "usage: arrayc [options] FILE.ac            ahead of time: code file + C header\n"
             "       arrayc --emit=plan|llvm|ptx [options] [-o OUT] FILE.ac\n"
             "       arrayc --read-plan [-o OUT] FILE.plan\n"
             "  Compiles FILE (\"-\" for standard input). Ahead of time, every function\n"
             "  goes into PREFIX.ptx (GPU, the default) or PREFIX.o (--target=cpu) plus\n"
             "  PREFIX.h, a C header for the runtime library libarrayc_rt (docs/runtime.md).\n"
             "options:\n"
             "  -o PREFIX      ahead of time: output path without extension (default: FILE's\n"
             "                 name without .ac); printing: the output file (- for stdout)\n"
             "  --target=T     gpu or cpu (the host CPU); default: gpu ahead of time (cpu with\n"
             "                 --shared, --cpu, --emit=obj|so), cpu when printing\n"
             "  --gpu=sm_XY    GPU architecture for --target=gpu (default sm_75, at least sm_75)\n"
             "  --cpu=NAME     CPU of a host object: LLVM's name (znver3, skylake, ...), generic\n"
             "                 for any CPU of the architecture; default: this host's CPU\n"
             "  --shared       CPU: link PREFIX.so (cc, found through $CC) instead of PREFIX.o\n"
             "  --emit=LIST    ahead of time, what to write (comma-separated): header, obj, so,\n"
             "                 ptx, plan, llvm, manifest (PREFIX.json, the functions'\n"
             "                 signatures for binding generators) (default: the code file\n"
             "                 and header);\n"
             "                 exactly one of plan, llvm, ptx prints that for each function\n"
             "  --ptx-stats    with --emit=ptx: per kernel, registers, spills, shared memory,\n"
             "                 occupancy on --gpu=sm_XY and the hot loop's instructions\n"
             "                 (from ptxas -v if found, else estimated; docs/tools.md)\n"
             "  --read-plan    parse a plan's text, check it and print it canonically\n"
             "  --fn NAME      only function NAME\n"
             "  -O0 .. -O3     optimisation level (default -O2; docs/passes.md)\n"
             "  --passes=LIST  run these passes instead (comma-separated, see arrayc-opt\n"
             "                 --list-passes)\n"
             "  -w             no warnings (nested operations that each GPU thread runs\n"
             "                 sequentially, when compiling for the GPU)\n"
             "  -h, --help     show this help\n"
             "  --version      arrayc's and LLVM's versions, CUDA driver and libdevice found\n");
}

typedef struct gpu_emit {
  const char *passes;
  unsigned sm;
  bool llvm;
  FILE *out;
  bool stats;        /* --ptx-stats */
  const char *ptxas; /* its ptxas, or NULL: estimates */
  char ptxas_buf[4096];
} gpu_emit;

/* --ptx-stats: the lines of one function's PTX. A ptxas that fails is
 * reported (a note) and the numbers fall back to the PTX's. */
static bool ptx_stats_one(gpu_emit *G, ac_context *ctx, const char *name, const char *text) {
  size_t len = strlen(text);
  px_module *pm = NULL;
  ac_error *err = NULL;
  if (px_analyse(ctx, text, len, &pm, &err) != AC_OK) {
    tool_print_error(err);
    ac_error_destroy(err);
    return false;
  }
  if (G->ptxas && px_ptxas_run(pm, G->ptxas, text, len, G->sm, &err) != AC_OK) {
    fprintf(stderr, "arrayc: note: %s: %s; its numbers are estimated from the PTX "
                    "(source=llvm)\n",
            name, ac_error_message(err));
    ac_error_destroy(err);
  }
  ir_buf b;
  ir_buf_init(&b, ctx);
  px_print(pm, name, G->sm, &b);
  bool ok = !b.oom;
  if (ok)
    fputs(ir_buf_cstr(&b), G->out);
  else
    fprintf(stderr, "arrayc: out of memory\n");
  ir_buf_free(&b);
  px_destroy(pm);
  return ok;
}

/* --emit=ptx --ptx-stats: one function at a time, its lines labelled by
 * its name. */
static bool emit_gpu_one(ac_module *m, size_t index, const char *name, void *ud) {
  gpu_emit *G = ud;
  ac_error *err = NULL;
  char *text = NULL;
  uint32_t fn = (uint32_t)index;
  if (ac_module_verify(m, &err) != AC_OK ||
      api_emit_ptx(m, &fn, 1, G->passes, G->sm, G->llvm, &text, &err) != AC_OK) {
    tool_print_error(err);
    ac_error_destroy(err);
    return false;
  }
  bool ok = ptx_stats_one(G, ac_module_context(m), name, text);
  ac_free(ac_module_context(m), text);
  return ok;
}

/* The functions --emit=ptx (or --emit=llvm --target=gpu) prints. */
typedef struct fn_list {
  uint32_t *fns;
  size_t n;
} fn_list;

static bool collect_fn(ac_module *m, size_t index, const char *name, void *ud) {
  (void)m;
  (void)name;
  fn_list *l = ud;
  l->fns[l->n++] = (uint32_t)index;
  return true;
}

/* --emit=ptx, and --emit=llvm --target=gpu: NVPTX code needs no device.
 * The functions' kernels in one module, which ptxas assembles whole. */
static bool emit_gpu(ac_module *m, const char *fn, const gpu_emit *G) {
  fn_list l = {malloc((ac_module_num_functions(m) + 1) * sizeof *l.fns), 0};
  ac_error *err = NULL;
  char *text = NULL;
  bool ok = l.fns && tool_each_function(PROG, m, fn, collect_fn, &l);
  if (!l.fns)
    fprintf(stderr, PROG ": out of memory\n");
  if (ok && l.n &&
      (ac_module_verify(m, &err) != AC_OK ||
       api_emit_ptx(m, l.fns, l.n, G->passes, G->sm, G->llvm, &text, &err) != AC_OK)) {
    tool_print_error(err);
    ac_error_destroy(err);
    ok = false;
  }
  if (ok && text)
    fputs(text, G->out);
  ac_free(ac_module_context(m), text);
  free(l.fns);
  return ok;
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

/* Parses --emit=LIST for ahead-of-time output into o; false (message
 * printed) for an unknown or conflicting kind. */
static bool aot_emit_list(const char *list, aot_opts *o, bool *gpu) {
  bool obj = false, so = false, ptx = false;
  const char *p = list;
  while (*p) {
    size_t n = strcspn(p, ",");
    if (n == 6 && strncmp(p, "header", 6) == 0) {
      o->emit_header = true;
    } else if (n == 3 && strncmp(p, "obj", 3) == 0) {
      obj = true;
    } else if (n == 2 && strncmp(p, "so", 2) == 0) {
      so = true;
    } else if (n == 3 && strncmp(p, "ptx", 3) == 0) {
      ptx = true;
    } else if (n == 4 && strncmp(p, "plan", 4) == 0) {
      o->emit_plan = true;
    } else if (n == 4 && strncmp(p, "llvm", 4) == 0) {
      o->emit_llvm = true;
    } else if (n == 8 && strncmp(p, "manifest", 8) == 0) {
      o->emit_manifest = true;
    } else {
      tool_usage_error(PROG,
                       "unknown --emit kind '%.*s' (header, obj, so, ptx, plan, llvm, manifest)",
                       (int)n, p);
      return false;
    }
    p += n;
    if (*p == ',')
      p++;
  }
  if ((obj || so) && (ptx || *gpu)) {
    tool_usage_error(PROG, "--emit=%s is CPU output; the GPU's code file is ptx",
                     obj ? "obj" : "so");
    return false;
  }
  if (obj && so) {
    tool_usage_error(PROG, "--emit takes obj or so, not both");
    return false;
  }
  if (ptx)
    *gpu = true;
  if (so)
    o->shared = true;
  o->emit_code = obj || so || ptx;
  return true;
}

/* PREFIX from FILE: its name without directory and extension. */
static char *default_prefix(const char *file) {
  const char *base = strrchr(file, '/');
  base = base ? base + 1 : file;
  size_t n = strlen(base);
  const char *dot = strrchr(base, '.');
  if (dot && dot != base)
    n = (size_t)(dot - base);
  char *p = malloc(n + 1);
  if (p) {
    memcpy(p, base, n);
    p[n] = 0;
  }
  return p;
}

int main(int argc, char **argv) {
  const char *file = NULL, *out = NULL, *fn = NULL, *emit = NULL, *target = NULL;
  const char *passes = "O2", *cpu = NULL;
  bool quiet = false;
  unsigned sm = NV_SM_DEFAULT;
  bool read_plan = false, shared = false, ptx_stats = false;
  enum {
    OPT_EMIT,
    OPT_TARGET,
    OPT_GPU,
    OPT_CPU,
    OPT_SHARED,
    OPT_READ_PLAN,
    OPT_PTX_STATS,
    OPT_FN,
    OPT_OUT
  };
  static const tool_opt opts[] = {
      {"--emit", OPT_EMIT, TOOL_VALUE},
      {"--target", OPT_TARGET, TOOL_VALUE},
      {"--gpu", OPT_GPU, TOOL_VALUE},
      {"--cpu", OPT_CPU, TOOL_VALUE},
      {"--shared", OPT_SHARED, TOOL_FLAG},
      {"--read-plan", OPT_READ_PLAN, TOOL_FLAG},
      {"--ptx-stats", OPT_PTX_STATS, TOOL_FLAG},
      {"--fn", OPT_FN, TOOL_VALUE},
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
    case OPT_EMIT:
      emit = val;
      break;
    case OPT_TARGET:
      target = val;
      if (strcmp(target, "cpu") != 0 && strcmp(target, "gpu") != 0) {
        tool_usage_error(PROG, "unknown --target '%s' (cpu or gpu)", target);
        return 2;
      }
      break;
    case OPT_GPU: {
      char *end = NULL;
      unsigned long v = strncmp(val, "sm_", 3) == 0 ? strtoul(val + 3, &end, 10) : 0;
      if (v == 0 || *end || v > 1000 || !nv_sm_valid((unsigned)v) || v < NV_SM_MIN) {
        tool_usage_error(PROG,
                         "--gpu wants an architecture sm_XY of sm_%u or newer that LLVM knows "
                         "(sm_75, sm_80, sm_86, sm_89, sm_90, ...), not '%s'",
                         NV_SM_MIN, val);
        return 2;
      }
      sm = (unsigned)v;
      break;
    }
    case OPT_CPU:
      if (!*val) {
        tool_usage_error(PROG, "--cpu needs a CPU name (LLVM's: znver3, skylake, ..., generic)");
        return 2;
      }
      cpu = val;
      break;
    case OPT_SHARED:
      shared = true;
      break;
    case OPT_READ_PLAN:
      read_plan = true;
      break;
    case OPT_PTX_STATS:
      ptx_stats = true;
      break;
    case OPT_FN:
      fn = val;
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
  if (ptx_stats && (read_plan || !emit || strcmp(emit, "ptx") != 0)) {
    tool_usage_error(PROG, "--ptx-stats summarises the PTX that --emit=ptx prints: use it with "
                           "--emit=ptx");
    return 2;
  }
  if (read_plan)
    return emit || fn ? (tool_usage_error(PROG, "--read-plan takes no --emit or --fn"), 2)
                      : read_plan_file(file, out && strcmp(out, "-") == 0 ? NULL : out);
  bool print = emit && (strcmp(emit, "plan") == 0 || strcmp(emit, "llvm") == 0 ||
                        strcmp(emit, "ptx") == 0);
  if (print && out && strcmp(out, "-") == 0)
    out = NULL; /* -o -: standard output, as without -o */
  /* The default target: printing is for the host CPU; ahead-of-time output
   * is for the GPU (PREFIX.ptx) unless a CPU-only option asks for the CPU
   * (--shared, --cpu, --emit=obj or so). */
  bool cpu_only = shared || cpu ||
                  (emit && !print && (strstr(emit, "obj") || strstr(emit, "so")));
  bool gpu = target ? strcmp(target, "gpu") == 0 : !print && !cpu_only;
  aot_opts ao;
  memset(&ao, 0, sizeof ao);
  char *prefix = NULL;
  if (!print) {
    if (!emit) {
      ao.emit_code = ao.emit_header = true;
    } else if (!aot_emit_list(emit, &ao, &gpu)) {
      return 2;
    }
    if (shared && gpu) {
      tool_usage_error(PROG, "--shared is for the CPU target");
      return 2;
    }
    if (cpu && gpu) {
      tool_usage_error(PROG, "--cpu is for the CPU target (the GPU's is --gpu=sm_XY)");
      return 2;
    }
    ao.shared = ao.shared || shared;
    if (!out && strcmp(file, "-") == 0) {
      tool_usage_error(PROG, "ahead-of-time output from standard input needs -o PREFIX");
      return 2;
    }
    if (!out && !(prefix = default_prefix(file))) {
      fprintf(stderr, "arrayc: out of memory\n");
      return 1;
    }
    ao.out = out ? out : prefix;
    ao.fn = fn;
    ao.gpu = gpu;
    ao.sm = sm;
    ao.cpu = cpu;
    ao.passes = passes;
  } else if (cpu || shared) {
    tool_usage_error(PROG, "--cpu and --shared are for ahead-of-time output");
    return 2;
  }
  tool_emit_kind kind = emit && strcmp(emit, "llvm") == 0 ? TOOL_EMIT_LLVM : TOOL_EMIT_PLAN;
  bool ptx = print && strcmp(emit, "ptx") == 0;
  if (ptx)
    gpu = true;
  ac_context *ctx = ac_context_create();
  if (!ctx) {
    fprintf(stderr, "arrayc: out of memory\n");
    free(prefix);
    return 1;
  }
  tool_warnings(ctx, quiet);
  int rc = 1;
  ac_module *m = tool_load_module("arrayc", ctx, file);
  if (m && !print) {
    rc = aot_main(&ao, ctx, m);
  } else if (m) {
    FILE *f = out ? fopen(out, "w") : stdout;
    if (!f) {
      fprintf(stderr, "arrayc: cannot write %s\n", out);
    } else {
      gpu_emit G = {passes, sm, kind == TOOL_EMIT_LLVM, f, ptx_stats, NULL, {0}};
      const char *want = getenv("ARRAYC_PTXAS");
      if (ptx_stats && !(G.ptxas = px_ptxas_find(G.ptxas_buf, sizeof G.ptxas_buf)))
        fprintf(stderr,
                "arrayc: note: no ptxas %s%s: registers and shared memory are estimated from "
                "the PTX, spills unknown (source=llvm)\n",
                want && *want ? "at ARRAYC_PTXAS=" : "($ARRAYC_PTXAS, $CUDA_HOME/bin, "
                                                     "/usr/local/cuda/bin, $PATH)",
                want && *want ? want : "");
      /* a GPU plan is the same for the GPU and the SIMT emulator, which
       * needs no device */
      bool ok = gpu && ptx && ptx_stats ? tool_each_function(PROG, m, fn, emit_gpu_one, &G)
                : gpu && (ptx || kind == TOOL_EMIT_LLVM)
                    ? emit_gpu(m, fn, &G)
                    : tool_emit("arrayc", m, fn, kind, gpu ? AC_BACKEND_SIMT_EMU : AC_BACKEND_CPU,
                                passes, f);
      int closed = f != stdout ? fclose(f) : fflush(f);
      rc = ok && closed == 0 ? 0 : 1;
    }
  }
  ac_module_destroy(m);
  ac_context_destroy(ctx);
  free(prefix);
  return rc;
}
