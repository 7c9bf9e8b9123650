/* tools/arrayc-run: call one function of a program from the command line.
 *
 *   arrayc-run [--backend=auto|interp|cpu|gpu|simt-emu] FILE.ac --fn NAME [ARG ...]
 *              [-o OUT.npy ...] [--repeat N] [--stats] [--profile]
 *              [-O0..-O3 | --passes=LIST] [--load LIB.so ...] [--cast]
 *
 * This is how the end-to-end tests and benchmarks run programs without a C
 * driver of their own: the module is parsed and verified, the function is
 * prepared for a backend, the ARGs are converted to its flattened parameter
 * leaves (one ARG per leaf, in order), the call is made and each result leaf
 * is printed on its own line in the language's literal syntax (or written to
 * a .npy file with -o).
 *
 * The backend is `auto` unless --backend (or $ARRAYC_BACKEND, the test
 * suite's way of making the interpreter the default) says otherwise: the
 * GPU when one is present, else the CPU; --backend=interp runs the
 * reference interpreter. Options are read by tools/opts.c, as the other tools'.
 *
 * Optimisation: the compiled backends apply the runtime's default pipeline
 * (-O2) and the interpreter runs the program as written, unless -O0..-O3 or
 * --passes=LIST is given: then those passes transform the module itself
 * before any backend sees it, so `--backend=interp --passes=fuse` runs the
 * fused program on the reference interpreter (how passes are checked).
 *
 * --profile (SIMT emulator only) compiles the function with its kernels
 * instrumented and prints, after the results, one `profile:` line per
 * kernel to stderr: memory requests and sectors, bytes against the
 * minimum, bank conflicts, active lanes (docs/runtime.md, "Profiling").
 *
 * ARG is a literal typed by the parameter (see tools/args.c) or @FILE.npy.
 * Types must match exactly unless --cast is given: then a .npy file of
 * another numeric dtype, or a literal with another type's suffix, is
 * converted value by value where that is safe (args.h, val_castable), and
 * a value that does not convert is an error naming the argument.
 * Errors are reported before anything runs and name the argument (its
 * leaf path, ac_function_arg_name) and the function's signature, spelled
 * from the public API's parameters (users think in parameters, not
 * leaves).
 *
 * Exit status: 0 on success, 1 on a program, argument or runtime error (the
 * library's diagnostic is printed), 2 on a usage error. docs/tools.md is the
 * manual.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include "args.h"
#include "npy.h"
#include "opts.h"
#include "run.h"
#include "toolutil.h"

#include "runtime/dlfile.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PROG "arrayc-run"

static void usage(FILE *f) {
  fprintf(f, "usage: arrayc-run [--backend=NAME] FILE.ac --fn NAME [ARG ...] [-o OUT.npy ...]\n"
             "                  [--repeat N] [--stats] [--profile] [--load LIB.so ...]\n"
             "       mpirun -np N arrayc-run --distributed FILE.ac --fn NAME [ARG ...]\n"
             "  Calls function NAME of FILE (\"-\" for standard input) with one ARG per\n"
             "  flattened parameter leaf and prints each result leaf on its own line.\n"
             "arguments:\n"
             "  ARG             a literal typed by its parameter: 2.5, -3, 7u32, true, inf,\n"
             "                  [1, 2, 3], [[1, 2], [3, 4]], [] ; or @PATH.npy, whose dtype\n"
             "                  and number of dimensions must match the parameter's\n"
             "options:\n"
             "  --backend=NAME  interp (the reference), cpu, gpu, simt-emu or auto (the\n"
             "                  GPU when one is present, else the CPU); the default is\n"
             "                  $ARRAYC_BACKEND, else auto\n"
             "  --fn NAME       the function to call (required)\n"
             "  -o OUT.npy      write the next result leaf to OUT.npy instead of printing;\n"
             "                  give one -o per result leaf\n"
             "  --repeat N      call N times and print 'time: median X ms, min Y ms' to stderr\n"
             "  --stats         print to stderr 'kernels: N' (kernels in the compiled plan),\n"
             "                  'launches: M per call', a 'launched: KERNEL (KIND) ...' line\n"
             "                  per kernel that ran (which of the plan's alternatives ran),\n"
             "                  the backend that ran, and compile and run times\n"
             "  --profile       with --backend=simt-emu: count each kernel's memory requests,\n"
             "                  sectors, bytes, bank conflicts and active lanes, and print a\n"
             "                  'profile: KERNEL ...' line per kernel to stderr after the results\n"
             "  --cast          convert .npy arguments of another dtype and suffixed literals\n"
             "                  of another type to the parameter's type: integer to integer\n"
             "                  or float, f32 to f64, f64 to f32; each value must fit (and an\n"
             "                  integer be exact in a float), else an error; never to or from\n"
             "                  bool, never float to integer\n"
             "  --load LIB.so   load a shared library first (RTLD_GLOBAL), so that its\n"
             "                  functions implement the program's extern fn and extern\n"
             "                  kernel declarations (may be repeated)\n"
             "  --distributed   run over MPI ranks (under mpirun; docs/distributed.md): array\n"
             "                  arguments are split by rows, one block per rank, results are\n"
             "                  collected to rank 0, which alone prints\n"
             "  --batch FILE    with --distributed: make the calls FILE lists, one per line\n"
             "                  (FILE.ac --fn NAME ARG ..., quoted as in a shell), each\n"
             "                  printed after a line '=== N' (N: its line number)\n"
             "  -O0 .. -O3      optimise at this level (compiled backends default to -O2;\n"
             "                  the interpreter to none)\n"
             "  --passes=LIST   run these passes (docs/passes.md) on every backend\n"
             "  -w              no warnings (nested operations that each GPU thread runs\n"
             "                  sequentially, on the gpu and simt-emu backends)\n"
             "  --              everything after is a positional argument\n"
             "  -h, --help      show this help\n"
             "  --version       arrayc's and LLVM's versions, CUDA driver and libdevice found\n"
             "exit status: 0 success, 1 program/argument/runtime error, 2 usage error\n");
}

/* A word that starts with '-' is a value, not an option, when it is a
 * negative number or -inf/-nan: arrayc-run f.ac --fn g -3 -inf. */
static bool is_negative_literal(const char *a) {
  return a[0] == '-' && ((a[1] >= '0' && a[1] <= '9') || strncmp(a + 1, "inf", 3) == 0 ||
                         strncmp(a + 1, "nan", 3) == 0);
}

enum {
  OPT_BACKEND,
  OPT_FN,
  OPT_REPEAT,
  OPT_OUT,
  OPT_LOAD,
  OPT_STATS,
  OPT_PROFILE,
  OPT_CAST,
  OPT_DISTRIBUTED,
  OPT_BATCH
};

static const tool_opt run_opts[] = {
    {"--backend", OPT_BACKEND, TOOL_VALUE},
    {"--fn", OPT_FN, TOOL_VALUE},
    {"--repeat", OPT_REPEAT, TOOL_VALUE},
    {"-o", OPT_OUT, TOOL_VALUE},
    {"--load", OPT_LOAD, TOOL_VALUE},
    {"--stats", OPT_STATS, TOOL_FLAG},
    {"--profile", OPT_PROFILE, TOOL_FLAG},
    {"--cast", OPT_CAST, TOOL_FLAG},
    {"--distributed", OPT_DISTRIBUTED, TOOL_FLAG},
    {"--batch", OPT_BATCH, TOOL_VALUE},
    TOOL_COMPILE_OPTS,
};

int run_parse_options(int argc, char **argv, run_options *o) {
  /* the default: $ARRAYC_BACKEND, else auto */
  const char *env = getenv("ARRAYC_BACKEND");
  if (env && *env && !ac_backend_from_name(env, &o->backend)) {
    tool_usage_error(PROG,
                     "ARRAYC_BACKEND names no backend: '%s' (interp, cpu, gpu, simt-emu or "
                     "auto)",
                     env);
    return 2;
  }
  tool_opts P;
  tool_opts_init(&P, PROG, usage, run_opts, sizeof run_opts / sizeof run_opts[0], argc, argv);
  P.is_word = is_negative_literal;
  const char *val;
  int id;
  while ((id = tool_opts_next(&P, &val)) != TOOL_END) {
    switch (id) {
    case TOOL_ERROR:
      return 2;
    case TOOL_EXIT:
      return -1;
    case TOOL_WORD:
      if (!o->file)
        o->file = val;
      else
        o->args[o->nargs++] = val;
      break;
    case OPT_STATS:
      o->stats = true;
      break;
    case OPT_PROFILE:
      o->profile = true;
      break;
    case OPT_CAST:
      o->cast = true;
      break;
    case OPT_DISTRIBUTED:
      o->distributed = true;
      break;
    case OPT_BATCH:
      o->batch = val;
      break;
    case OPT_OUT:
      o->outs[o->nouts++] = val;
      break;
    case OPT_FN:
      o->fn = val;
      break;
    case OPT_LOAD:
      /* global scope: dlsym(RTLD_DEFAULT) finds the externs it defines */
    {
      /* a path, as ac_library_open takes it (runtime/dlfile.h) */
      void *dl;
      char why[512];
      if (rt_dlopen_file(val, RTLD_NOW | RTLD_GLOBAL, &dl, why, sizeof why) != AC_OK) {
        fprintf(stderr, PROG ": %s\n", why);
        return 1;
      }
    }
      break;
    case OPT_BACKEND:
      if (!ac_backend_from_name(val, &o->backend)) {
        tool_usage_error(PROG, "unknown backend '%s' (interp, cpu, gpu, simt-emu or auto)", val);
        return 2;
      }
      break;
    case OPT_REPEAT: {
      char *end;
      o->repeat = strtol(val, &end, 10);
      if (*val == 0 || *end != 0 || o->repeat < 1 || o->repeat > 1000000) {
        tool_usage_error(PROG, "--repeat needs a count from 1 to 1000000, not '%s'", val);
        return 2;
      }
      break;
    }
    default: /* the compile options */
      if (!tool_compile_opt(PROG, id, val, &o->passes, &o->quiet))
        return 2;
      break;
    }
  }
  if (o->batch && !o->distributed) {
    tool_usage_error(PROG, "--batch needs --distributed");
    return 2;
  }
  if (o->batch && (o->file || o->fn || o->nargs || o->nouts)) {
    tool_usage_error(PROG, "--batch FILE takes the calls from FILE: no input file, --fn, "
                           "arguments or -o besides it");
    return 2;
  }
  if (o->distributed && (o->repeat > 1 || o->stats || o->profile)) {
    tool_usage_error(PROG, "--distributed does not take --repeat, --stats or --profile yet");
    return 2;
  }
  if (!o->batch && (!o->file || !o->fn)) {
    tool_usage_error(PROG, "%s", !o->file ? "no input file" : "no function given (--fn NAME)");
    return 2;
  }
  if (o->profile && o->backend != AC_BACKEND_SIMT_EMU) {
    tool_usage_error(PROG, "--profile needs --backend=simt-emu (the SIMT emulator counts what "
                           "the GPU kernels do)");
    return 2;
  }
  return 0;
}

/* ---- the function's signature, for messages ---- */

/* "fn f(xs: f32[], p: (i32, f64)) -> f32" from the C API's signature
 * (malloc'd; NULL when memory runs out). */
static char *signature_text(const ac_function *f) {
  size_t n = strlen(ac_function_name(f)) + strlen(ac_function_result_type(f)) + 16;
  for (size_t p = 0; p < ac_function_num_params(f); p++)
    n += strlen(ac_function_param_name(f, p)) + strlen(ac_function_param_type(f, p)) + 4;
  char *t = malloc(n);
  if (!t)
    return NULL;
  size_t k = (size_t)snprintf(t, n, "fn %s(", ac_function_name(f));
  for (size_t p = 0; p < ac_function_num_params(f); p++)
    k += (size_t)snprintf(t + k, n - k, "%s%s: %s", p ? ", " : "", ac_function_param_name(f, p),
                          ac_function_param_type(f, p));
  snprintf(t + k, n - k, ") -> %s", ac_function_result_type(f));
  return t;
}

/* "argument 2 (ys)", "argument 3 (p.1)": the leaf's path names it. */
static void arg_name(const ac_function *f, size_t i, char *buf, size_t size) {
  snprintf(buf, size, "argument %zu (%s)", i + 1, ac_function_arg_name(f, i));
}

/* Prints "xs: f32[], n: i32" for the flattened leaves of f. */
static void print_leaves(FILE *out, const ac_function *f) {
  size_t n = ac_function_num_args(f);
  for (size_t i = 0; i < n; i++) {
    ac_scalar t;
    unsigned r;
    char tn[64];
    ac_function_arg_info(f, i, &t, &r);
    val_type_name(t, r, tn, sizeof tn);
    fprintf(out, "%s%s: %s", i ? ", " : "", ac_function_arg_name(f, i), tn);
  }
}

/* ---- arguments ---- */

static bool convert_arg(ac_context *ctx, const ac_function *f, size_t i, const char *text,
                        bool cast, ac_datum *out) {
  ac_scalar t;
  unsigned r;
  ac_function_arg_info(f, i, &t, &r);
  char msg[512], who[300];
  arg_name(f, i, who, sizeof who);
  bool ok;
  if (text[0] == '@') {
    size_t len;
    char *buf = tool_read_file(PROG, text + 1, &len);
    if (!buf)
      return false;
    ok = val_from_npy(ctx, (const unsigned char *)buf, len, t, r, cast, out, msg, sizeof msg);
    free(buf);
    if (!ok)
      fprintf(stderr, PROG ": %s: %s: %s\n", who, text + 1, msg);
    return ok;
  }
  ok = val_parse_literal(ctx, text, t, r, cast, out, msg, sizeof msg);
  if (!ok)
    fprintf(stderr, PROG ": %s: %s\n", who, msg);
  return ok;
}

/* ---- results ---- */

bool run_write_result(const ac_datum *d, const char *path) {
  char msg[512];
  bool ok;
  if (d->kind == AC_DATUM_SCALAR) {
    unsigned char bytes[8];
    val_scalar_bytes(d, bytes);
    ok = npy_write(path, d->type, 0, NULL, bytes, msg, sizeof msg);
  } else {
    const ac_array *a = d->array;
    ok = npy_write(path, ac_array_type(a), ac_array_rank(a), ac_array_extents(a),
                   ac_array_data(a), msg, sizeof msg);
  }
  if (!ok)
    fprintf(stderr, PROG ": %s\n", msg);
  return ok;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void release_all(ac_datum *d, size_t n) {
  for (size_t i = 0; i < n; i++)
    ac_datum_release(&d[i]);
}

/* --stats: the kernels compiled, then the launches per call (the plan's
 * alternatives are kernels of their own: this says which ran), in all and
 * per kernel launched; before[k]: kernel k's launches before the calls. */
static void print_per_call(uint64_t n, long calls) {
  if (n % (uint64_t)calls == 0)
    fprintf(stderr, "%llu per call\n", (unsigned long long)(n / (uint64_t)calls));
  else
    fprintf(stderr, "%.2f per call\n", (double)n / (double)calls);
}

static void print_stats(const ac_function *f, long calls, const uint64_t *before, double compile_ms,
                        double first_ms) {
  size_t nk = ac_function_num_kernels(f);
  uint64_t total = 0;
  for (size_t k = 0; k < nk; k++)
    total += ac_function_kernel_launches(f, k) - before[k];
  fprintf(stderr, "kernels: %zu\nlaunches: ", nk);
  print_per_call(total, calls);
  for (size_t k = 0; k < nk; k++) {
    uint64_t n = ac_function_kernel_launches(f, k) - before[k];
    if (n) {
      fprintf(stderr, "launched: %s (%s) ", ac_function_kernel_name(f, k),
              ac_function_kernel_kind(f, k));
      print_per_call(n, calls);
    }
  }
  fprintf(stderr, "backend: %s\ncompile: %.3f ms\nrun: %.3f ms (the first call)\n",
          ac_backend_name(ac_function_backend(f)), compile_ms, first_ms);
}

/* Makes the call(s) and reports results; returns the exit status. */
static int call_and_report(ac_context *ctx, ac_function *f, const run_options *o,
                           const ac_datum *args, size_t nargs, double compile_ms) {
  size_t nres = ac_function_num_results(f);
  ac_datum *res = calloc(nres ? nres : 1, sizeof *res);
  ac_datum *extra = calloc(nres ? nres : 1, sizeof *extra);
  double *times = malloc((size_t)o->repeat * sizeof *times);
  if (!res || !extra || !times) {
    fprintf(stderr, PROG ": out of memory\n");
    free(res);
    free(extra);
    free(times);
    return 1;
  }
  int rc = 0;
  bool have = false;
  size_t nk = ac_function_num_kernels(f);
  uint64_t *before = calloc(nk ? nk : 1, sizeof *before);
  if (!before) {
    fprintf(stderr, PROG ": out of memory\n");
    free(res);
    free(extra);
    free(times);
    return 1;
  }
  for (size_t k = 0; k < nk; k++)
    before[k] = ac_function_kernel_launches(f, k);
  for (long r = 0; r < o->repeat && rc == 0; r++) {
    ac_error *err = NULL;
    ac_datum *into = r == 0 ? res : extra;
    double t0 = now_ms();
    ac_status st = ac_function_call(f, args, nargs, into, nres, &err);
    times[r] = now_ms() - t0;
    if (st != AC_OK) {
      tool_print_error(err);
      ac_error_destroy(err);
      rc = 1;
    } else if (r == 0) {
      have = true;
    } else {
      release_all(extra, nres);
    }
  }
  double first_ms = times[0];
  if (rc == 0 && o->repeat > 1) {
    qsort(times, (size_t)o->repeat, sizeof *times, cmp_double);
    long n = o->repeat;
    double med = n % 2 ? times[n / 2] : (times[n / 2 - 1] + times[n / 2]) / 2;
    fprintf(stderr, "time: median %.3f ms, min %.3f ms\n", med, times[0]);
  }
  for (size_t i = 0; rc == 0 && i < nres; i++) {
    if (o->nouts) {
      if (!run_write_result(&res[i], o->outs[i]))
        rc = 1;
    } else {
      val_print(stdout, &res[i]);
    }
  }
  if (rc == 0 && fflush(stdout) != 0) {
    fprintf(stderr, PROG ": cannot write the results to standard output\n");
    rc = 1;
  }
  if (rc == 0 && o->stats) /* after the results, as the profile */
    print_stats(f, o->repeat, before, compile_ms, first_ms);
  free(before);
  if (rc == 0 && o->profile) {
    ac_error *err = NULL;
    char *text = NULL;
    if (ac_function_print_profile(f, &text, &err) != AC_OK) {
      tool_print_error(err);
      ac_error_destroy(err);
      rc = 1;
    } else {
      fputs(text, stderr);
    }
    ac_string_destroy(ctx, text);
  }
  if (have)
    release_all(res, nres);
  free(res);
  free(extra);
  free(times);
  return rc;
}

/* Everything after the module is loaded: prepare, convert, call. */
/* Prepares the function: with o->passes, the module is optimised in place
 * and compiled on a runtime that runs no further passes. */
static ac_function *prepare(ac_module *m, const run_options *o) {
  ac_function *f = NULL;
  ac_runtime *rt = NULL;
  ac_error *err = NULL;
  ac_status st = AC_OK;
  if (o->passes || o->profile) {
    if ((!o->passes || (st = ac_module_run_passes(m, o->passes, &err)) == AC_OK) &&
        (st = ac_runtime_create(ac_module_context(m), o->backend, &rt, &err)) == AC_OK &&
        (!o->passes || (st = ac_runtime_set_passes(rt, "", &err)) == AC_OK) &&
        (!o->profile || (st = ac_runtime_set_profiling(rt, true, &err)) == AC_OK))
      st = ac_runtime_compile(rt, m, o->fn, &f, &err);
    ac_runtime_destroy(rt); /* the function keeps it alive */
  } else {
    st = ac_function_create(m, o->fn, o->backend, &f, &err);
  }
  if (st != AC_OK) {
    tool_print_error(err);
    ac_error_destroy(err);
    return NULL;
  }
  return f;
}

static int run_function(ac_context *ctx, ac_module *m, const run_options *o) {
  if (!tool_has_function(PROG, m, o->fn))
    return 1;
  double t0 = now_ms();
  ac_function *f = prepare(m, o);
  double compile_ms = now_ms() - t0;
  if (!f)
    return 1;
  size_t nargs = ac_function_num_args(f), nres = ac_function_num_results(f);
  char *sig = signature_text(f);
  const char *sigtext = sig ? sig : o->fn;
  int rc = 0;
  ac_datum *args = NULL;
  size_t made = 0;
  if (o->nargs != nargs) {
    fprintf(stderr, PROG ": %s takes %zu argument%s (", sigtext, nargs, nargs == 1 ? "" : "s");
    print_leaves(stderr, f);
    fprintf(stderr, "), got %zu\n", o->nargs);
    rc = 1;
  } else if (o->nouts && o->nouts != nres) {
    fprintf(stderr, PROG ": %s has %zu result%s but %zu -o option%s given\n", sigtext, nres,
            nres == 1 ? "" : "s", o->nouts, o->nouts == 1 ? " was" : "s were");
    rc = 2;
  } else if (!(args = calloc(nargs ? nargs : 1, sizeof *args))) {
    fprintf(stderr, PROG ": out of memory\n");
    rc = 1;
  }
  for (; rc == 0 && made < nargs; made++)
    if (!convert_arg(ctx, f, made, o->args[made], o->cast, &args[made]))
      rc = 1;
  if (rc == 0)
    rc = call_and_report(ctx, f, o, args, nargs, compile_ms);
  if (args)
    release_all(args, made);
  free(args);
  free(sig);
  ac_function_destroy(f);
  return rc;
}

bool run_options_init(run_options *o, int argc) {
  memset(o, 0, sizeof *o);
  o->backend = AC_BACKEND_AUTO;
  o->repeat = 1;
  /* At most argc words of each kind. */
  o->args = calloc((size_t)argc + 1, sizeof *o->args);
  o->outs = calloc((size_t)argc + 1, sizeof *o->outs);
  return o->args && o->outs;
}

void run_options_free(run_options *o) {
  free(o->args);
  free(o->outs);
}

int main(int argc, char **argv) {
  run_options o;
  int rc;
  if (!run_options_init(&o, argc)) {
    fprintf(stderr, PROG ": out of memory\n");
    rc = 1;
  } else {
    rc = run_parse_options(argc, argv, &o);
  }
  if (rc == 0 && o.distributed) {
#ifdef ARRAYC_MPI
    rc = run_distributed(&argc, &argv, &o);
#else
    fprintf(stderr, PROG ": --distributed: this arrayc-run was built without MPI (configure "
                         "with MPI installed, or -DARRAYC_MPI=ON; docs/distributed.md)\n");
    rc = 2;
#endif
    run_options_free(&o);
    return rc;
  }
  if (rc == 0) {
    ac_context *ctx = ac_context_create();
    if (!ctx) {
      fprintf(stderr, PROG ": out of memory\n");
      rc = 1;
    } else {
      tool_warnings(ctx, o.quiet);
      ac_module *m = tool_load_module(PROG, ctx, o.file);
      rc = m ? run_function(ctx, m, &o) : 1;
      if (m)
        ac_module_destroy(m);
      ac_context_destroy(ctx);
    }
  }
  run_options_free(&o);
  return rc < 0 ? 0 : rc;
}
