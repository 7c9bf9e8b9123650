/* Ahead-of-time code for several functions of a module (lib/api/aot_emit.c,
 * api_emit_aot): the plans come back with kernel symbols
 * PREFIX_FUNCNAME_kN_kind, distinct across functions, and print; the CPU
 * code is an ELF object that `cc -shared` links (so it is position
 * independent), that defines every kernel and the embedded data and leaves
 * the runtime helpers undefined (nm), and whose kernels, loaded with dlopen
 * next to forwarders of the helpers, run the plans to the right results and
 * errors; the GPU code is PTX for the asked architecture with an .entry per
 * kernel. A function whose plan has no kernel still gives valid code, also
 * alone. Errors: unknown CPU, bad prefix, a function asked twice, a
 * GPU function reaching an extern (a CPU one calls it by name). Allocation
 * failures are reported as
 * AC_ERR_NOMEM without leaks (the sanitizer build checks that). Parts that
 * need cc or nm say so when they skip.
 */
#define _GNU_SOURCE /* mkdtemp, popen, memmem */
#include "unit.h"

#include "api/aot_impl.h"
#include "ir.h"
#include "unit_oom.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

/* pick has a bounds check (a kernel that can call ac_rt_fail), total a
 * fold, same no kernel at all (its plan only moves words). */
static const char *const src = "fn pick(xs: f64[], is: i64[]) -> f64[] {\n"
                               "  map(|i| xs[i] * 2.0, is)\n"
                               "}\n"
                               "fn total(xs: f64[]) -> f64 {\n"
                               "  fold(|a, b| a + b, 0.0, map(|x| x * x, xs))\n"
                               "}\n"
                               "fn same(xs: f64[]) -> f64[] {\n"
                               "  xs\n"
                               "}\n";
static const char *const names[] = {"pick", "total", "same"};

static ac_module *parse(ac_context *ctx, const char *text) {
  ac_module *m = NULL;
  ac_error *err = NULL;
  if (ac_module_parse(ctx, "aot.ac", text, strlen(text), &m, &err) != AC_OK) {
    fprintf(stderr, "parse: %s\n", ac_error_message(err));
    ac_error_destroy(err);
  }
  return m;
}

/* Index of function `name` of m (no allocation: usable under the OOM
 * harness), or UINT32_MAX. */
static uint32_t fn_index(const ac_module *m, const char *name) {
  for (uint32_t i = 0; i < m->nfuncs; i++)
    if (strcmp(ir_sym_str(m->ctx, m->funcs[i].name), name) == 0)
      return i;
  return UINT32_MAX;
}

/* api_emit_aot of the functions `which` (names) of m; prints the error. */
static ac_status emit(ac_module *m, const char *const *which, size_t n, const api_aot_opts *o,
                      api_aot_out *out, ac_error **errp) {
  uint32_t fns[8];
  for (size_t i = 0; i < n; i++)
    fns[i] = fn_index(m, which[i]);
  ac_error *err = NULL;
  ac_status st = api_emit_aot(m, fns, n, o, out, &err);
  if (errp)
    *errp = err;
  else if (st != AC_OK)
    fprintf(stderr, "  api_emit_aot: %s\n", err ? ac_error_message(err) : "(no message)");
  if (!errp)
    ac_error_destroy(err);
  return st;
}

/* ---- the embed callback: every plan's text, one after the other ---- */

typedef struct embed_ud {
  ac_context *ctx;
  int calls;
  size_t nplans;
} embed_ud;

static bool embed_plans(void *ud, pl_plan *const *plans, size_t n, char **data, size_t *len) {
  embed_ud *E = ud;
  E->calls++;
  E->nplans = n;
  ir_buf b;
  ir_buf_init(&b, E->ctx);
  for (size_t i = 0; i < n; i++) {
    char *text = NULL;
    ac_error *err = NULL;
    if (pl_print(plans[i], &text, &err) != AC_OK) {
      ac_error_destroy(err);
      ir_buf_free(&b);
      return false;
    }
    ir_buf_puts(&b, text);
    ac_string_destroy(E->ctx, text);
  }
  if (b.oom) {
    ir_buf_free(&b);
    return false;
  }
  *len = b.len;
  *data = ir_buf_take(&b);
  return *data != NULL;
}

/* ---- checks on the plans ---- */

/* Every kernel symbol is PREFIX_NAME_kN..., and no two are equal. */
static void check_plans(const api_aot_out *out, const char *prefix, bool gpu) {
  CHECK_EQ_INT(out->nplans, 3);
  if (out->nplans != 3)
    return;
  char want[64];
  for (size_t i = 0; i < 3; i++) {
    const pl_plan *p = out->plans[i];
    CHECK(p != NULL && p->finished);
    CHECK(p->gpu == gpu);
    snprintf(want, sizeof want, "%s_%s_k", prefix, names[i]);
    for (uint32_t k = 0; k < p->nkernels; k++) {
      if (strncmp(p->kernels[k].symbol, want, strlen(want)) != 0) {
        fprintf(stderr, "  symbol %s does not start with %s\n", p->kernels[k].symbol, want);
        CHECK(!"renamed");
      }
      for (size_t j = 0; j <= i; j++)
        for (uint32_t l = 0; l < out->plans[j]->nkernels; l++)
          if (!(j == i && l == k))
            CHECK(strcmp(p->kernels[k].symbol, out->plans[j]->kernels[l].symbol) != 0);
    }
    char *text = NULL;
    ac_error *err = NULL;
    CHECK(pl_print(p, &text, &err) == AC_OK);
    CHECK(text && (p->nkernels == 0 || strstr(text, want)));
    ac_string_destroy(p->ctx, text);
    ac_error_destroy(err);
  }
  CHECK(out->plans[0]->nkernels > 0);
  CHECK(out->plans[1]->nkernels > 0);
  CHECK_EQ_INT(out->plans[2]->nkernels, 0);
}

/* ---- the object, linked, listed and loaded ---- */

static bool have_tool(const char *name) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", name);
  return system(cmd) == 0;
}

static bool write_file(const char *path, const void *data, size_t len) {
  FILE *f = fopen(path, "wb");
  if (!f)
    return false;
  bool ok = fwrite(data, 1, len, f) == len;
  return fclose(f) == 0 && ok;
}

/* The nm -g letter of `sym` in path ('?' if absent). */
static char nm_kind(const char *path, const char *sym) {
  char cmd[4200], line[512];
  snprintf(cmd, sizeof cmd, "nm -g '%s'", path);
  FILE *p = popen(cmd, "r");
  char kind = '?';
  if (!p)
    return kind;
  while (fgets(line, sizeof line, p)) {
    /* "ADDRESS K NAME" or "         U NAME" */
    char *nl = strchr(line, '\n');
    if (nl)
      *nl = '\0';
    size_t n = strlen(line), ns = strlen(sym);
    if (n > ns + 2 && strcmp(line + n - ns, sym) == 0 && line[n - ns - 1] == ' ')
      kind = line[n - ns - 2];
  }
  pclose(p);
  return kind;
}

/* Forwarders of the runtime helpers for the loaded object: the test fills
 * acx_helpers from rt_helper_symbols by name (the library does not export
 * the helpers; the runtime library that loads objects will). */
static const char shim_src[] =
    "#include <stdint.h>\n"
    "void *acx_helpers[7];\n"
    "void ac_rt_fail(void *t, int32_t s, int64_t a, int64_t b) {\n"
    "  ((void (*)(void *, int32_t, int64_t, int64_t))acx_helpers[0])(t, s, a, b);\n"
    "}\n"
    "int32_t ac_rt_failed(void *t) { return ((int32_t (*)(void *))acx_helpers[1])(t); }\n"
    "void *ac_rt_tmp_alloc(void *t, int64_t n, int32_t s) {\n"
    "  return ((void *(*)(void *, int64_t, int32_t))acx_helpers[2])(t, n, s);\n"
    "}\n"
    "int64_t ac_rt_tmp_mark(void *t) { return ((int64_t (*)(void *))acx_helpers[3])(t); }\n"
    "void ac_rt_tmp_release(void *t, int64_t m) {\n"
    "  ((void (*)(void *, int64_t))acx_helpers[4])(t, m);\n"
    "}\n"
    "void ac_rt_yield(void) { ((void (*)(void))acx_helpers[5])(); }\n"
    "void ac_rt_fail_n(void *t, int32_t s, int32_t n, const int64_t *v) {\n"
    "  ((void (*)(void *, int32_t, int32_t, const int64_t *))acx_helpers[6])(t, s, n, v);\n"
    "}\n";
static const char *const shim_names[] = {"ac_rt_fail",     "ac_rt_failed",      "ac_rt_tmp_alloc",
                                         "ac_rt_tmp_mark", "ac_rt_tmp_release", "ac_rt_yield",
                                         "ac_rt_fail_n"};

/* Kernel addresses of plan p from the loaded library h (NULL on failure). */
static rt_kernel_fn *kernels_of(void *h, const pl_plan *p) {
  rt_kernel_fn *k = calloc(p->nkernels + 1, sizeof *k);
  for (uint32_t i = 0; k && i < p->nkernels; i++) {
    void *a = dlsym(h, p->kernels[i].symbol);
    CHECK(a != NULL);
    memcpy(&k[i], &a, sizeof a); /* POSIX: object pointers hold functions */
  }
  return k;
}

/* Runs the three plans with the loaded kernels: pick, total, same, and
 * pick out of bounds (the kernel's ac_rt_fail through the forwarders). */
static void run_loaded(ac_context *ctx, void *h, const api_aot_out *out) {
  void **helpers = dlsym(h, "acx_helpers");
  CHECK(helpers != NULL);
  if (!helpers)
    return;
  for (size_t i = 0; i < 7; i++) {
    helpers[i] = NULL;
    for (size_t t = 0; rt_helper_symbols[t].name; t++)
      if (strcmp(rt_helper_symbols[t].name, shim_names[i]) == 0)
        helpers[i] = rt_helper_symbols[t].addr;
    CHECK(helpers[i] != NULL);
  }
  for (size_t t = 0; rt_helper_symbols[t].name; t++) {
    bool known = false;
    for (size_t i = 0; i < 7; i++)
      known |= strcmp(rt_helper_symbols[t].name, shim_names[i]) == 0;
    if (!known)
      fprintf(stderr, "  the test's forwarders lack %s\n", rt_helper_symbols[t].name);
    CHECK(known);
  }
  double xv[4] = {1, 2, 3, 4}, r[3] = {0};
  int64_t iv[3] = {3, 0, 1}, bad[2] = {1, 7};
  ac_array *xs = ac_array_create(ctx, AC_F64, 1, (int64_t[]){4}, xv, NULL);
  ac_array *is = ac_array_create(ctx, AC_I64, 1, (int64_t[]){3}, iv, NULL);
  ac_array *isbad = ac_array_create(ctx, AC_I64, 1, (int64_t[]){2}, bad, NULL);
  ac_datum a_xs = {AC_DATUM_ARRAY, AC_F64, {0}, xs}, a_is = {AC_DATUM_ARRAY, AC_I64, {0}, is};
  ac_datum a_bad = {AC_DATUM_ARRAY, AC_I64, {0}, isbad};
  ac_datum res[1];
  ac_error *err = NULL;

  rt_kernel_fn *k = kernels_of(h, out->plans[0]);
  ac_datum args[2] = {a_xs, a_is};
  ac_status st = pl_run(out->plans[0], NULL, k, args, 2, res, 1, &err);
  CHECK_EQ_INT(st, AC_OK);
  if (st == AC_OK) {
    CHECK(ac_array_read(res[0].array, r, sizeof r, NULL) == AC_OK);
    CHECK(r[0] == 8 && r[1] == 2 && r[2] == 4);
    ac_datum_release(&res[0]);
  }
  ac_error_destroy(err);
  err = NULL;
  args[1] = a_bad;
  st = pl_run(out->plans[0], NULL, k, args, 2, res, 1, &err);
  CHECK_EQ_INT(st, AC_ERR_RUNTIME);
  CHECK(err && strstr(ac_error_message(err), "7"));
  ac_error_destroy(err);
  err = NULL;
  free(k);

  k = kernels_of(h, out->plans[1]);
  st = pl_run(out->plans[1], NULL, k, &a_xs, 1, res, 1, &err);
  CHECK_EQ_INT(st, AC_OK);
  CHECK(st != AC_OK || res[0].s.f == 30.0);
  ac_error_destroy(err);
  err = NULL;
  free(k);

  k = kernels_of(h, out->plans[2]);
  st = pl_run(out->plans[2], NULL, k, &a_xs, 1, res, 1, &err);
  CHECK_EQ_INT(st, AC_OK);
  if (st == AC_OK) {
    double s[4];
    CHECK(ac_array_read(res[0].array, s, sizeof s, NULL) == AC_OK);
    CHECK(memcmp(s, xv, sizeof s) == 0);
    ac_datum_release(&res[0]);
  }
  ac_error_destroy(err);
  free(k);
  ac_array_release(xs);
  ac_array_release(is);
  ac_array_release(isbad);
}

static bool has_bytes(const char *data, size_t n, const char *s) {
  size_t ns = strlen(s);
  for (size_t i = 0; i + ns <= n; i++)
    if (memcmp(data + i, s, ns) == 0)
      return true;
  return false;
}

/* Links the object into a shared library, lists its symbols, loads it. */
static void check_object(ac_context *ctx, const api_aot_out *out) {
  if (!have_tool("cc")) {
    printf("  skipped linking the object: no cc on PATH\n");
    return;
  }
  char dir[] = "/tmp/arrayc-aot-XXXXXX";
  if (!mkdtemp(dir)) {
    CHECK(!"mkdtemp");
    return;
  }
  char obj[64], shim[64], so[64], cmd[512];
  snprintf(obj, sizeof obj, "%s/k.o", dir);
  snprintf(shim, sizeof shim, "%s/shim.c", dir);
  snprintf(so, sizeof so, "%s/k.so", dir);
  CHECK(write_file(obj, out->code, out->len));
  CHECK(write_file(shim, shim_src, sizeof shim_src - 1));
  snprintf(cmd, sizeof cmd, "cc -shared -fPIC -o '%s' '%s' '%s' -lm", so, obj, shim);
  bool linked = system(cmd) == 0;
  CHECK(linked);
  if (!have_tool("nm")) {
    printf("  skipped listing the object's symbols: no nm on PATH\n");
  } else {
    for (size_t i = 0; i < out->nplans; i++)
      for (uint32_t k = 0; k < out->plans[i]->nkernels; k++) {
        char kind = nm_kind(obj, out->plans[i]->kernels[k].symbol);
        if (kind != 'T')
          fprintf(stderr, "  %s: nm says %c\n", out->plans[i]->kernels[k].symbol, kind);
        CHECK(kind == 'T');
      }
    CHECK_EQ_INT(nm_kind(obj, "ac_rt_fail"), 'U');
    char e = nm_kind(obj, "AOT_PLANS"), s = nm_kind(obj, "AOT_PLANS_size");
    CHECK(e == 'R' || e == 'D');
    CHECK(s == 'R' || s == 'D');
  }
  if (linked) {
    void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    if (!h)
      fprintf(stderr, "  dlopen: %s\n", dlerror());
    CHECK(h != NULL);
    if (h) {
      const char *data = dlsym(h, "AOT_PLANS");
      const int64_t *size = dlsym(h, "AOT_PLANS_size");
      CHECK(data && size);
      if (data && size) {
        /* the embedded text is the plans' texts, and parses back */
        pl_plan *p = NULL;
        ac_error *err = NULL;
        CHECK(*size > 0 && has_bytes(data, (size_t)*size, "lib1_pick_k0"));
        char *first = NULL;
        CHECK(pl_print(out->plans[0], &first, &err) == AC_OK);
        if (first)
          CHECK(pl_parse(ctx, "embedded", data, strlen(first), &p, &err) == AC_OK && p &&
                pl_equal(p, out->plans[0]));
        ac_string_destroy(ctx, first);
        pl_destroy(p);
        ac_error_destroy(err);
      }
      run_loaded(ctx, h, out);
      dlclose(h);
    }
  }
  unlink(obj);
  unlink(shim);
  unlink(so);
  rmdir(dir);
}

/* NVIDIA's ptxas (PATH, $CUDA_HOME/bin, /usr/local/cuda/bin) assembles
 * ptx for sm; true also when there is no ptxas (a line says so). */
static bool ptxas_ok(const char *ptx, unsigned sm) {
  char tool[512] = "ptxas";
  const char *home = getenv("CUDA_HOME");
  if (!have_tool("ptxas")) {
    snprintf(tool, sizeof tool, "%s/bin/ptxas", home && *home ? home : "/usr/local/cuda");
    if (access(tool, X_OK) != 0)
      snprintf(tool, sizeof tool, "/usr/local/cuda/bin/ptxas");
    if (access(tool, X_OK) != 0) {
      printf("  skipped the ptxas check: no ptxas on PATH, in $CUDA_HOME/bin or "
             "/usr/local/cuda/bin\n");
      return true;
    }
  }
  char dir[] = "/tmp/arrayc-aot-XXXXXX";
  if (!mkdtemp(dir))
    return false;
  char in[64], cmd[1200];
  snprintf(in, sizeof in, "%s/k.ptx", dir);
  bool ok = write_file(in, ptx, strlen(ptx));
  snprintf(cmd, sizeof cmd, "'%s' -arch=sm_%u -o /dev/null '%s'", tool, sm, in);
  ok = ok && system(cmd) == 0;
  unlink(in);
  rmdir(dir);
  return ok;
}

/* ---- tests ---- */

UNIT_TEST(cpu_three_functions) {
  ac_context *ctx = ac_context_create();
  ac_module *m = parse(ctx, src);
  CHECK(m != NULL);
  if (!m) {
    ac_context_destroy(ctx);
    return;
  }
  embed_ud E = {ctx, 0, 0};
  api_aot_opts o = {.passes = "O2",
                    .prefix = "lib1",
                    .embed_symbol = "AOT_PLANS",
                    .embed = embed_plans,
                    .embed_ud = &E,
                    .want_llvm = true};
  api_aot_out out;
  CHECK_EQ_INT(emit(m, names, 3, &o, &out, NULL), AC_OK);
  check_plans(&out, "lib1", false);
  CHECK_EQ_INT(E.calls, 1);
  CHECK_EQ_INT(E.nplans, 3);
  CHECK(out.len > 4 && memcmp(out.code,
                              "\x7f"
                              "ELF",
                              4) == 0);
  CHECK(out.llvm && strstr(out.llvm, "define") && strstr(out.llvm, "@lib1_pick_k0"));
  CHECK(out.llvm && strstr(out.llvm, "@AOT_PLANS = ") && strstr(out.llvm, "@AOT_PLANS_size = "));
  if (out.code)
    check_object(ctx, &out);
  api_aot_out_free(ctx, &out);
  CHECK(out.plans == NULL && out.code == NULL && out.llvm == NULL);
  ac_module_destroy(m);
  ac_context_destroy(ctx);
}

UNIT_TEST(gpu_three_functions) {
  ac_context *ctx = ac_context_create();
  ac_module *m = parse(ctx, src);
  if (!m) {
    CHECK(!"parses");
    ac_context_destroy(ctx);
    return;
  }
  api_aot_opts o = {.gpu = true, .sm = 80, .passes = "O2", .prefix = "g"};
  api_aot_out out;
  ac_status st = emit(m, names, 3, &o, &out, NULL);
  CHECK_EQ_INT(st, AC_OK);
  if (st == AC_OK) {
    check_plans(&out, "g", true);
    CHECK(out.code && strlen(out.code) == out.len);
    CHECK(out.code && strstr(out.code, ".target sm_80"));
    CHECK(out.llvm == NULL);
    CHECK(out.code && ptxas_ok(out.code, 80));
    char want[128];
    for (size_t i = 0; i < out.nplans; i++)
      for (uint32_t k = 0; k < out.plans[i]->nkernels; k++) {
        snprintf(want, sizeof want, ".entry %s(", out.plans[i]->kernels[k].symbol);
        if (!out.code || !strstr(out.code, want))
          fprintf(stderr, "  no '%s' in the PTX\n", want);
        CHECK(out.code && strstr(out.code, want));
      }
  }
  api_aot_out_free(ctx, &out);
  ac_module_destroy(m);
  ac_context_destroy(ctx);
}

/* A module whose only function has no kernel: an object without code, PTX
 * with a header and no entry. */
UNIT_TEST(no_kernels_at_all) {
  ac_context *ctx = ac_context_create();
  ac_module *m = parse(ctx, src);
  if (!m) {
    CHECK(!"parses");
    ac_context_destroy(ctx);
    return;
  }
  const char *const only[] = {"same"};
  api_aot_opts o = {.prefix = "z", .passes = ""};
  api_aot_out out;
  CHECK_EQ_INT(emit(m, only, 1, &o, &out, NULL), AC_OK);
  CHECK_EQ_INT(out.nplans, 1);
  CHECK(out.len > 4 && memcmp(out.code,
                              "\x7f"
                              "ELF",
                              4) == 0);
  api_aot_out_free(ctx, &out);
  o.gpu = true;
  o.sm = 75;
  o.want_llvm = true;
  CHECK_EQ_INT(emit(m, only, 1, &o, &out, NULL), AC_OK);
  CHECK(out.code && strstr(out.code, ".target sm_75") && !strstr(out.code, ".entry"));
  CHECK(out.llvm != NULL);
  CHECK(out.code && ptxas_ok(out.code, 75));
  api_aot_out_free(ctx, &out);
  /* and no function at all */
  o.gpu = false;
  o.want_llvm = false;
  CHECK_EQ_INT(emit(m, NULL, 0, &o, &out, NULL), AC_OK);
  CHECK(out.nplans == 0 && out.len > 4 &&
        memcmp(out.code,
               "\x7f"
               "ELF",
               4) == 0);
  api_aot_out_free(ctx, &out);
  ac_module_destroy(m);
  ac_context_destroy(ctx);
}

UNIT_TEST(cpu_names) {
  ac_context *ctx = ac_context_create();
  ac_module *m = parse(ctx, src);
  if (!m) {
    CHECK(!"parses");
    ac_context_destroy(ctx);
    return;
  }
  const char *const two[] = {"total", "pick"};
  api_aot_opts o = {.prefix = "c", .passes = "", .cpu = "generic", .want_llvm = true};
  api_aot_out out;
  CHECK_EQ_INT(emit(m, two, 2, &o, &out, NULL), AC_OK);
  CHECK(out.len > 4 && memcmp(out.code,
                              "\x7f"
                              "ELF",
                              4) == 0);
  CHECK(out.llvm && strstr(out.llvm, "\"target-cpu\"=\"x86-64\"") != NULL);
  api_aot_out_free(ctx, &out);

  o.cpu = "skylake";
  CHECK_EQ_INT(emit(m, two, 2, &o, &out, NULL), AC_OK);
  CHECK(out.llvm && strstr(out.llvm, "\"target-cpu\"=\"skylake\"") != NULL);
  api_aot_out_free(ctx, &out);

  ac_error *err = NULL;
  o.cpu = "nonsense";
  CHECK_EQ_INT(emit(m, two, 2, &o, &out, &err), AC_ERR_INVALID);
  CHECK(err && strstr(ac_error_message(err), "unknown CPU 'nonsense'"));
  CHECK(out.plans == NULL && out.code == NULL);
  ac_error_destroy(err);
  ac_module_destroy(m);
  ac_context_destroy(ctx);
}

UNIT_TEST(bad_requests) {
  ac_context *ctx = ac_context_create();
  ac_module *m = parse(ctx, src);
  if (!m) {
    CHECK(!"parses");
    ac_context_destroy(ctx);
    return;
  }
  api_aot_out out;
  ac_error *err = NULL;
  const char *const two[] = {"total", "total"};
  api_aot_opts o = {.prefix = "9lives"};
  CHECK_EQ_INT(emit(m, two, 1, &o, &out, &err), AC_ERR_INVALID);
  CHECK(err && strstr(ac_error_message(err), "prefix '9lives'"));
  ac_error_destroy(err);
  o.prefix = "ok";
  CHECK_EQ_INT(emit(m, two, 2, &o, &out, &err), AC_ERR_INVALID);
  CHECK(err && strstr(ac_error_message(err), "'total' is asked for twice"));
  ac_error_destroy(err);
  o.gpu = true;
  o.sm = 70;
  CHECK_EQ_INT(emit(m, two, 1, &o, &out, &err), AC_ERR_INVALID);
  CHECK(err && strstr(ac_error_message(err), "sm_70"));
  ac_error_destroy(err);
  o.gpu = false;
  o.embed = embed_plans;
  o.embed_symbol = "has space";
  CHECK_EQ_INT(emit(m, two, 1, &o, &out, &err), AC_ERR_INVALID);
  CHECK(err && strstr(ac_error_message(err), "embed symbol 'has space'"));
  ac_error_destroy(err);
  /* an embed symbol that the code uses already: a kernel's */
  embed_ud E = {ctx, 0, 0};
  o.embed = NULL;
  o.embed_symbol = NULL;
  char kernel[128] = "";
  CHECK_EQ_INT(emit(m, two, 1, &o, &out, NULL), AC_OK);
  if (out.nplans == 1 && out.plans[0]->nkernels > 0)
    snprintf(kernel, sizeof kernel, "%s", out.plans[0]->kernels[0].symbol);
  api_aot_out_free(ctx, &out);
  o.embed = embed_plans;
  o.embed_ud = &E;
  o.embed_symbol = kernel;
  CHECK_EQ_INT(emit(m, two, 1, &o, &out, &err), AC_ERR_INVALID);
  CHECK(err && strstr(ac_error_message(err), "clashes"));
  CHECK_EQ_INT(E.calls, 1);
  ac_error_destroy(err);
  CHECK(out.plans == NULL);
  ac_module_destroy(m);
  ac_context_destroy(ctx);
}

UNIT_TEST(extern_by_name) {
  ac_context *ctx = ac_context_create();
  ac_module *m = parse(ctx, "extern fn host_cbrt(x: f64) -> f64;\n"
                            "fn g(xs: f64[]) -> f64[] { map(|x| host_cbrt(x), xs) }\n"
                            "fn h(xs: f64[]) -> f64[] { g(xs) }\n"
                            "fn fine(xs: f64[]) -> f64[] { xs }\n");
  if (!m) {
    CHECK(!"parses");
    ac_context_destroy(ctx);
    return;
  }
  const char *const which[] = {"fine", "h"};
  /* on the CPU the kernels call the extern by name: an undefined symbol of
   * the object, whatever this process has bound (nothing here) */
  api_aot_opts o = {.prefix = "x"};
  api_aot_out out;
  ac_error *err = NULL;
  CHECK_EQ_INT(emit(m, which, 2, &o, &out, &err), AC_OK);
  CHECK(out.code && out.len > 0 && memmem(out.code, out.len, "host_cbrt", 9) != NULL);
  api_aot_out_free(ctx, &out);
  ac_error_destroy(err);
  err = NULL;
  /* host code cannot run on the GPU */
  api_aot_opts g = {.prefix = "x", .gpu = true, .sm = 80};
  CHECK_EQ_INT(emit(m, which, 2, &g, &out, &err), AC_ERR_UNSUPPORTED);
  CHECK(err && strstr(ac_error_message(err), "extern function 'host_cbrt' is host code and "
                                             "cannot be called on the GPU (reached from 'h')"));
  CHECK(out.plans == NULL);
  ac_error_destroy(err);
  ac_module_destroy(m);
  ac_context_destroy(ctx);
}

/* ---- allocation failures ---- */

/* ud: the GPU when not NULL */
static ac_status oom_step(ac_module *m, void *ud, ac_error **err) {
  uint32_t fns[2] = {fn_index(m, "total"), fn_index(m, "same")};
  embed_ud E = {m->ctx, 0, 0};
  api_aot_opts o = {.prefix = "o",
                    .passes = "",
                    .cpu = "generic",
                    .embed_symbol = "P",
                    .embed = embed_plans,
                    .embed_ud = &E,
                    .want_llvm = true,
                    .gpu = ud != NULL,
                    .sm = 80};
  api_aot_out out;
  ac_status st = api_emit_aot(m, fns, 2, &o, &out, err);
  if (st == AC_OK) {
    CHECK_EQ_INT(out.nplans, 2);
    CHECK(out.code && out.llvm);
  } else {
    CHECK(out.plans == NULL && out.code == NULL && out.llvm == NULL);
  }
  api_aot_out_free(m->ctx, &out);
  return st;
}

UNIT_TEST(allocation_failures) {
  int failed = 0;
  int ok = unit_oom_runs(src, 3000, 1, parse, oom_step, NULL, NULL, &failed);
  CHECK(ok > 0);
  CHECK(failed > 0);
  printf("  allocation failures (CPU): %d runs failed cleanly before one succeeded\n", failed);
  failed = 0;
  ok = unit_oom_runs(src, 3000, 1, parse, oom_step, NULL, (void *)"gpu", &failed);
  CHECK(ok > 0);
  CHECK(failed > 0);
  printf("  allocation failures (GPU): %d runs failed cleanly before one succeeded\n", failed);
}

UNIT_MAIN(cpu_three_functions, gpu_three_functions, no_kernels_at_all, cpu_names, bad_requests,
          extern_by_name, allocation_failures)
