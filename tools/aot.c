/* tools/aot.c: arrayc's ahead-of-time output (tools/aot.h).
 *
 * One run compiles the chosen functions of a module together
 * (lib/api/aot_impl.h: plans, kernels renamed PREFIX_FN_kN_kind, one
 * object or PTX), builds the bundle (runtime/bundle.h) from the plans and
 * the functions' flattened signatures, and writes:
 *   PREFIX.o     the host object, the bundle inside as PREFIX_arrayc_bundle
 *   PREFIX.so    that object linked as a shared library (--shared), which
 *                needs libarrayc_rt (DT_NEEDED, found next to arrayc)
 *   PREFIX.ptx   the PTX, the bundle in comment lines at its start
 *   PREFIX.h     the typed C header (docs/runtime.md, "Ahead of time")
 *   PREFIX.plan  the plans' text, for people (--emit=plan)
 *   PREFIX.ll    the combined module's optimised LLVM IR (--emit=llvm)
 *   PREFIX.json  the manifest for binding generators (--emit=manifest):
 *                the target, the code file and every function's signature
 *                as the public API reports it (ac_function_param_*), so it
 *                says what ac_library_function will say
 * Files are written to a temporary name and renamed, so a failed run never
 * leaves half a file behind.
 */
#define _GNU_SOURCE

#include "aot.h"

#include "toolutil.h"

#include "api/aot_impl.h"
#include "api/function_impl.h"
#include "runtime/bundle.h"

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- writing files ---- */

static bool write_file(const char *path, const void *data, size_t len) {
  size_t n = strlen(path) + 16;
  char *tmp = malloc(n);
  if (!tmp) {
    fprintf(stderr, "arrayc: out of memory\n");
    return false;
  }
  snprintf(tmp, n, "%s.tmp%ld", path, (long)getpid());
  FILE *f = fopen(tmp, "wb");
  bool ok = f && fwrite(data, 1, len, f) == len;
  if (f && fclose(f) != 0)
    ok = false;
  if (ok && rename(tmp, path) != 0)
    ok = false;
  if (!ok) {
    fprintf(stderr, "arrayc: cannot write %s: %s\n", path, strerror(errno));
    remove(tmp);
  }
  free(tmp);
  return ok;
}

static char *path_of(const char *prefix, const char *ext) {
  size_t n = strlen(prefix) + strlen(ext) + 1;
  char *p = malloc(n);
  if (p)
    snprintf(p, n, "%s%s", prefix, ext);
  else
    fprintf(stderr, "arrayc: out of memory\n");
  return p;
}

/* ---- the bundle ---- */

typedef struct aot_run {
  const aot_opts *o;
  ac_context *ctx;
  ac_module *m;
  const char *prefix; /* the C prefix (base name of o->out) */
  uint32_t *fns;
  size_t nfns;
  ac_function **sig; /* interpreter functions: the flattened signatures */
  char *bundle;      /* the bundle text (ac_alloc'd) */
  size_t bundle_len;
  char cpu[128];     /* the CPU the object was made for */
  char triple[128];
} aot_run;

static bool make_bundle(aot_run *R, pl_plan *const *plans, size_t n, char **text,
                        size_t *len) {
  rt_bundle b;
  memset(&b, 0, sizeof b);
  b.compiler = (char *)rt_build_id();
  b.gpu = R->o->gpu;
  b.sm = R->o->sm;
  b.triple = R->triple;
  b.cpu = R->cpu;
  b.source = R->m->name ? R->m->name : "";
  b.prefix = (char *)R->prefix;
  b.source_text = R->m->src; /* NULL for a module without text */
  b.source_len = R->m->src ? R->m->srclen : 0;
  b.nfns = (uint32_t)n;
  rt_bundle_fn *fns = calloc(n ? n : 1, sizeof *fns);
  if (!fns)
    return false;
  for (size_t i = 0; i < n; i++) {
    const ac_function *f = R->sig[i];
    fns[i].name = f->name;
    fns[i].nargs = (uint32_t)f->nargs;
    fns[i].nres = (uint32_t)f->nres;
    fns[i].nparams = (uint32_t)f->nparams;
    fns[i].params = f->params;
    fns[i].result_type = f->result_type;
    fns[i].args = f->args;
    fns[i].res = f->res;
    fns[i].plan = plans[i];
  }
  b.fns = fns;
  ac_error *err = NULL;
  ac_status st = rt_bundle_print(R->ctx, &b, text, len, &err);
  free(fns);
  if (st != AC_OK) {
    tool_print_error(err);
    ac_error_destroy(err);
    return false;
  }
  return true;
}

/* The embed callback of api_emit_aot: the bundle goes into the object, and
 * a copy stays with the run for the header. */
static bool embed_bundle(void *ud, pl_plan *const *plans, size_t n, char **data, size_t *len) {
  aot_run *R = ud;
  *data = NULL;
  if (!make_bundle(R, plans, n, &R->bundle, &R->bundle_len))
    return false;
  *data = ac_alloc(R->ctx, R->bundle_len ? R->bundle_len : 1);
  if (!*data)
    return false;
  memcpy(*data, R->bundle, R->bundle_len);
  *len = R->bundle_len;
  return true;
}

/* ---- the header ---- */

static const char *c_type(ac_scalar sc) {
  switch (sc) {
  case AC_BOOL: return "bool";
  case AC_I8: return "int8_t";
  case AC_I16: return "int16_t";
  case AC_I32: return "int32_t";
  case AC_I64: return "int64_t";
  case AC_U8: return "uint8_t";
  case AC_U16: return "uint16_t";
  case AC_U32: return "uint32_t";
  case AC_U64: return "uint64_t";
  case AC_F32: return "float";
  case AC_F64: return "double";
  }
  return "void";
}

static const char *scalar_enum(ac_scalar sc) {
  static const char *const names[] = {"AC_BOOL", "AC_I8",  "AC_I16", "AC_I32",
                                      "AC_I64",  "AC_U8",  "AC_U16", "AC_U32",
                                      "AC_U64",  "AC_F32", "AC_F64"};
  return (unsigned)sc < AC_NUM_SCALARS ? names[sc] : "AC_BOOL";
}

/* The union member of ac_datum.s a scalar of kind sc lives in. */
static const char *datum_member(ac_scalar sc) {
  switch (sc) {
  case AC_BOOL: return "b";
  case AC_I8: case AC_I16: case AC_I32: case AC_I64: return "i";
  case AC_U8: case AC_U16: case AC_U32: case AC_U64: return "u";
  case AC_F32: case AC_F64: return "f";
  }
  return "i";
}

static bool is_c_reserved(const char *s) {
  static const char *const words[] = {
      "auto",     "break",    "case",     "char",   "const",    "continue", "default",
      "do",       "double",   "else",     "enum",   "extern",   "float",    "for",
      "goto",     "if",       "inline",   "int",    "long",     "register", "restrict",
      "return",   "short",    "signed",   "sizeof", "static",   "struct",   "switch",
      "typedef",  "union",    "unsigned", "void",   "volatile", "while",    "bool",
      "true",     "false",    "class",    "new",    "delete",   "this",     "template",
      "typename", "operator", "private",  "public", "protected", "namespace", "using",
      "try",      "catch",    "throw",    "virtual", "friend",  "explicit", "mutable",
      "lib",      "err",      "st",       "a",      "r",        NULL};
  for (size_t i = 0; words[i]; i++)
    if (strcmp(s, words[i]) == 0)
      return true;
  return strncmp(s, "out", 3) == 0;
}

/* A C parameter name for argument leaf `name` ("p.1" -> p_1). */
static void arg_name(char *buf, size_t size, const char *name) {
  snprintf(buf, size, "%s", name);
  for (char *c = buf; *c; c++)
    if (*c == '.')
      *c = '_';
  if (is_c_reserved(buf) && strlen(buf) + 2 < size)
    strcat(buf, "_");
}

/* A result pointer's name: out for a single result, out_0, out_1_2 ... */
static void res_name(char *buf, size_t size, const char *name) {
  snprintf(buf, size, "out%s%s", name[0] ? "_" : "", name);
  for (char *c = buf; *c; c++)
    if (*c == '.')
      *c = '_';
}

static void leaf_decl(ir_buf *b, const rt_leaf *l, const char *cname, bool result) {
  if (l->rank)
    ir_buf_printf(b, "ac_array *%s%s", result ? "*" : "", cname);
  else
    ir_buf_printf(b, "%s %s%s", c_type(l->type), result ? "*" : "", cname);
}

static void upper(char *dst, size_t size, const char *s) {
  size_t i = 0;
  for (; s[i] && i + 1 < size; i++)
    dst[i] = (char)(s[i] >= 'a' && s[i] <= 'z' ? s[i] - 'a' + 'A' : s[i]);
  dst[i] = 0;
}

/* The language's spelling of function i's signature, for the comment. */
static void signature(aot_run *R, size_t i, ir_buf *b) {
  const ir_func *fd = &R->m->funcs[R->fns[i]];
  ir_buf_printf(b, "fn %s(", ir_sym_str(R->ctx, fd->name));
  for (uint32_t k = 0; k < fd->nparams; k++) {
    ir_buf_printf(b, "%s%s: ", k ? ", " : "", ir_sym_str(R->ctx, R->m->syms[fd->pnames + k]));
    ir_ty_print(R->ctx, ir_func_param(R->m, fd, k), b);
  }
  ir_buf_puts(b, ") -> ");
  ir_ty_print(R->ctx, fd->result, b);
}

static void header_function(aot_run *R, ir_buf *b, size_t i, const char *P) {
  const ac_function *f = R->sig[i];
  ir_buf_puts(b, "\n/* ");
  signature(R, i, b);
  ir_buf_printf(b, "\n * Arrays are borrowed; each result pointer receives a scalar or an array"
                   "\n * reference (release it); a NULL pointer discards that result. On error"
                   "\n * the results are untouched and *err (if err is not NULL) says why. */\n");
  ir_buf_printf(b, "static inline ac_status %s_%s(const %s_lib *lib", P, f->name, P);
  char cname[160];
  for (size_t k = 0; k < f->nargs; k++) {
    ir_buf_puts(b, ", ");
    arg_name(cname, sizeof cname, f->args[k].name);
    leaf_decl(b, &f->args[k], cname, false);
  }
  for (size_t k = 0; k < f->nres; k++) {
    ir_buf_puts(b, ", ");
    res_name(cname, sizeof cname, f->res[k].name);
    leaf_decl(b, &f->res[k], cname, true);
  }
  ir_buf_puts(b, ", ac_error **err) {\n");
  ir_buf_printf(b, "  ac_datum a[%zu], r[%zu];\n", f->nargs ? f->nargs : 1,
                f->nres ? f->nres : 1);
  for (size_t k = 0; k < f->nargs; k++) {
    const rt_leaf *l = &f->args[k];
    arg_name(cname, sizeof cname, l->name);
    ir_buf_printf(b, "  a[%zu].kind = %s;\n  a[%zu].type = %s;\n", k,
                  l->rank ? "AC_DATUM_ARRAY" : "AC_DATUM_SCALAR", k, scalar_enum(l->type));
    if (l->rank)
      ir_buf_printf(b, "  a[%zu].array = %s;\n", k, cname);
    else
      ir_buf_printf(b, "  a[%zu].array = NULL;\n  a[%zu].s.%s = %s;\n", k, k,
                    datum_member(l->type), cname);
  }
  if (f->nargs == 0)
    ir_buf_puts(b, "  (void)a;\n");
  ir_buf_printf(b, "  ac_status st = ac_function_call(lib->fn[%zu], a, %zu, r, %zu, err);\n", i,
                f->nargs, f->nres);
  ir_buf_puts(b, "  if (st != AC_OK)\n    return st;\n");
  for (size_t k = 0; k < f->nres; k++) {
    const rt_leaf *l = &f->res[k];
    res_name(cname, sizeof cname, l->name);
    if (l->rank)
      ir_buf_printf(b, "  if (%s)\n    *%s = r[%zu].array;\n  else\n    ac_datum_release(&r[%zu]);\n",
                    cname, cname, k, k);
    else
      ir_buf_printf(b, "  if (%s)\n    *%s = (%s)r[%zu].s.%s;\n", cname, cname, c_type(l->type),
                    k, datum_member(l->type));
  }
  ir_buf_puts(b, "  return AC_OK;\n}\n");
}

/* The host function of an extern kernel (docs/language.md §3.4): per
 * parameter a scalar, or an array's elements and its extents; then per
 * result array its elements and extents. */
typedef struct host_proto {
  ir_buf *b;
  const char *base; /* name of the parameter or result */
  bool out, first;
  uint32_t leaf;
} host_proto;

static void host_proto_leaf(void *ud, ac_scalar sc, uint32_t rank) {
  host_proto *h = ud;
  char name[200];
  if (h->out)
    snprintf(name, sizeof name, "result%u", h->leaf);
  else
    arg_name(name, sizeof name, h->base);
  h->leaf++;
  ir_buf_printf(h->b, "%s%s%s%s%s", h->first ? "" : ", ", rank && !h->out ? "const " : "",
                c_type(sc), rank ? " *" : " ", name);
  h->first = false;
  for (uint32_t d = 0; d < rank; d++)
    ir_buf_printf(h->b, ", int64_t %s_n%u", name, d);
}

static void header_kernel_host(aot_run *R, ir_buf *b, const ir_func *fd) {
  ir_buf_printf(b, "void %s(", ir_sym_str(R->ctx, fd->khost ? fd->khost : fd->name));
  host_proto h = {b, NULL, false, true, 0};
  for (uint32_t k = 0; k < fd->nparams; k++) {
    h.base = ir_sym_str(R->ctx, R->m->syms[fd->pnames + k]);
    ir_ty_leaves(R->ctx, ir_func_param(R->m, fd, k), host_proto_leaf, &h);
  }
  h.out = true;
  h.leaf = 0;
  ir_ty_leaves(R->ctx, fd->result, host_proto_leaf, &h);
  ir_buf_printf(b, "); /* extern kernel %s */\n", ir_sym_str(R->ctx, fd->name));
}

/* The module's extern functions, which the kernels call by name. */
static void header_externs(aot_run *R, ir_buf *b) {
  bool first = true;
  for (size_t i = 0; i < R->m->nfuncs; i++) {
    const ir_func *fd = &R->m->funcs[i];
    if (!fd->is_extern)
      continue;
    if (first)
      ir_buf_printf(b, "\n/* The host functions the kernels call (extern fn and extern kernel in\n"
                       " * %s), by name: the program defines them (with a shared object:\n"
                       " * exports them, e.g. with -rdynamic, or they come from a library it\n"
                       " * loads first, as libm's). */\n",
                    R->m->name ? R->m->name : "the module");
    first = false;
    if (fd->is_kernel) {
      header_kernel_host(R, b, fd);
      continue;
    }
    ac_scalar sc = AC_I64;
    ir_ty_is_scalar(R->ctx, fd->result, &sc);
    ir_buf_printf(b, "%s %s(", c_type(sc), ir_sym_str(R->ctx, fd->name));
    for (uint32_t k = 0; k < fd->nparams; k++) {
      ir_ty_is_scalar(R->ctx, ir_func_param(R->m, fd, k), &sc);
      char cname[160];
      arg_name(cname, sizeof cname, ir_sym_str(R->ctx, R->m->syms[fd->pnames + k]));
      ir_buf_printf(b, "%s%s %s", k ? ", " : "", c_type(sc), cname);
    }
    ir_buf_puts(b, fd->nparams ? ");\n" : "void);\n");
  }
}

static char *make_header(aot_run *R, const api_aot_out *out, const char *code_path) {
  const char *P = R->prefix;
  char U[256];
  upper(U, sizeof U, P);
  ir_buf b;
  ir_buf_init(&b, R->ctx);
  const aot_opts *o = R->o;
  ir_buf_printf(&b, "/* %s.h: generated by arrayc %s from %s. Do not edit.\n *\n", P,
                rt_build_id(), R->m->name ? R->m->name : "(standard input)");
  if (o->gpu)
    ir_buf_printf(&b, " * Target: GPU, sm_%u. The kernels and plans are in %s, which\n"
                      " * %s_open loads (the CUDA driver compiles the PTX for the device).\n",
                  o->sm, code_path, P);
  else if (o->shared)
    ir_buf_printf(&b, " * Target: CPU (%s, %s). The kernels and plans are in %s, which\n"
                      " * %s_open loads with dlopen.\n",
                  R->triple, R->cpu, code_path, P);
  else
    ir_buf_printf(&b, " * Target: CPU (%s, %s). The kernels and plans are in %s: link it\n"
                      " * into the program.\n",
                  R->triple, R->cpu, code_path);
  ir_buf_printf(&b, " * Link with libarrayc_rt (pkg-config --libs arrayc_rt). docs/runtime.md,\n"
                    " * \"Ahead of time\", describes this header. Usage:\n *\n"
                    " *   %s_lib lib;\n"
                    " *   ac_error *err = NULL;\n"
                    " *   if (%s_open(ctx, NULL, &lib, &err) != AC_OK) { ...err... }\n"
                    " *   ... %s_NAME(&lib, arguments..., &result..., &err) ...\n"
                    " *   %s_close(&lib);\n */\n",
                  P, P, P, P);
  ir_buf_printf(&b, "#ifndef ARRAYC_AOT_%s_H\n#define ARRAYC_AOT_%s_H\n\n", U, U);
  ir_buf_puts(&b, "#include <arrayc/library.h>\n\n#include <stdbool.h>\n#include <stddef.h>\n"
                  "#include <stdint.h>\n#include <string.h>\n\n");
  ir_buf_puts(&b, "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n");
  ir_buf_printf(&b, "/* The compiler that wrote this header, and its bundle's hash: the runtime\n"
                    " * refuses a code file that does not match (a stale one). */\n"
                    "#define %s_ARRAYC_COMPILER \"%s\"\n"
                    "#define %s_ARRAYC_BUNDLE_HASH 0x%016llxull\n",
                  U, rt_build_id(), U,
                  (unsigned long long)rt_bundle_hash(R->bundle, R->bundle_len));
  ir_buf_printf(&b,
                "/* The target this header is for: its _open refuses code for the other\n"
                " * one (docs/runtime.md, \"Ahead of time\"). */\n"
                "#define %s_ARRAYC_TARGET \"%s\"\n",
                U, o->gpu ? "gpu" : "cpu");
  ir_buf_printf(&b, "/* Where arrayc wrote the code file (%s_open's default). */\n"
                    "#define %s_DEFAULT_PATH \"",
                P, U);
  for (const char *c = code_path; *c; c++) {
    if (*c == '"' || *c == '\\')
      ir_buf_putc(&b, '\\');
    ir_buf_putc(&b, *c);
  }
  ir_buf_printf(&b, "\"\n#define %s_NUM_FUNCTIONS %zu\n\n", U, R->nfns);
  ir_buf_printf(&b, "typedef struct %s_lib {\n  ac_library *lib;\n  ac_function *fn[%zu];\n} "
                    "%s_lib;\n",
                P, R->nfns ? R->nfns : 1, P);
  bool linked = !o->gpu && !o->shared;
  if (o->gpu)
    ir_buf_printf(&b,
                  "\n/* A host object of prefix %s linked into the program (what arrayc\n"
                  " * --target=cpu writes) is CPU code that goes with its own header, not\n"
                  " * this one: %s_open refuses to run with one linked. */\n"
                  "#if defined(__GNUC__)\n"
                  "extern const char %s_arrayc_bundle[] __attribute__((weak));\n"
                  "#define %s_ARRAYC_LINKED_BUNDLE %s_arrayc_bundle\n"
                  "#else\n#define %s_ARRAYC_LINKED_BUNDLE ((const char *)0)\n#endif\n",
                  P, P, P, U, P, U);
  if (linked) {
    ir_buf_printf(&b, "\n/* In %s. */\nextern const char %s_arrayc_bundle[];\n"
                      "extern const int64_t %s_arrayc_bundle_size;\n",
                  code_path, P, P);
    for (size_t i = 0; i < out->nplans; i++)
      for (uint32_t k = 0; k < out->plans[i]->nkernels; k++)
        ir_buf_printf(&b, "void %s(uint64_t *, int64_t, int64_t, int64_t, void *);\n",
                      out->plans[i]->kernels[k].symbol);
  }
  if (!o->gpu)
    header_externs(R, &b);
  ir_buf_printf(&b, "\n/* Releases everything %s_open made (lib may be half made). */\n"
                    "static inline void %s_close(%s_lib *lib) {\n"
                    "  for (size_t i = 0; i < %zu; i++) {\n"
                    "    ac_function_destroy(lib->fn[i]);\n    lib->fn[i] = NULL;\n  }\n"
                    "  ac_library_close(lib->lib);\n  lib->lib = NULL;\n}\n",
                P, P, P, R->nfns ? R->nfns : 1);
  if (linked)
    ir_buf_printf(&b, "\n/* Prepares every function. The code is linked into the program, so path\n"
                      " * must be NULL. On error nothing is left to close. */\n");
  else
    ir_buf_printf(&b, "\n/* Loads the code file and prepares every function. path: the code file\n"
                      " * (NULL: %s_DEFAULT_PATH). On error nothing is left to close. */\n",
                  U);
  ir_buf_printf(&b, "static inline ac_status %s_open(ac_context *ctx, const char *path, %s_lib "
                    "*lib, ac_error **err) {\n",
                P, P);
  ir_buf_puts(&b, "  static const char *const names[] = {");
  for (size_t i = 0; i < R->nfns; i++)
    ir_buf_printf(&b, "\"%s\", ", R->sig[i]->name);
  ir_buf_puts(&b, "NULL};\n");
  ir_buf_puts(&b, "  ac_library_desc d;\n  memset(&d, 0, sizeof d);\n  memset(lib, 0, sizeof *lib);\n");
  if (linked) {
    size_t nk = 0;
    ir_buf_puts(&b, "  static const ac_library_kernel kernels[] = {\n");
    for (size_t i = 0; i < out->nplans; i++)
      for (uint32_t k = 0; k < out->plans[i]->nkernels; k++, nk++)
        ir_buf_printf(&b, "      {\"%s\", (void (*)(void))%s},\n", out->plans[i]->kernels[k].symbol,
                      out->plans[i]->kernels[k].symbol);
    ir_buf_puts(&b, "      {NULL, NULL}};\n");
    ir_buf_printf(&b, "  d.path = path; /* must be NULL: ac_library_load says why */\n"
                      "  d.bundle = %s_arrayc_bundle;\n  d.bundle_len = (size_t)%s_arrayc_bundle_size;\n"
                      "  d.kernels = kernels;\n  d.num_kernels = %zu;\n",
                  P, P, nk);
  } else {
    ir_buf_printf(&b, "  d.path = path ? path : %s_DEFAULT_PATH;\n  d.prefix = \"%s\";\n", U, P);
    if (o->gpu)
      ir_buf_printf(&b,
                    "  d.bundle = %s_ARRAYC_LINKED_BUNDLE; /* NULL unless a host object is "
                    "linked */\n",
                    U);
  }
  ir_buf_printf(&b,
                "  d.expect_hash = %s_ARRAYC_BUNDLE_HASH;\n"
                "  d.expect_backend = %s;\n"
                "  ac_status st = ac_library_load(ctx, &d, sizeof d, &lib->lib, err);\n"
                "  for (size_t i = 0; st == AC_OK && names[i]; i++)\n"
                "    st = ac_library_function(lib->lib, names[i], &lib->fn[i], err);\n"
                "  if (st != AC_OK)\n    %s_close(lib);\n  return st;\n}\n",
                U, o->gpu ? "AC_BACKEND_GPU" : "AC_BACKEND_CPU", P);
  for (size_t i = 0; i < R->nfns; i++)
    header_function(R, &b, i, P);
  ir_buf_printf(&b, "\n#ifdef __cplusplus\n}\n#endif\n\n#endif /* ARRAYC_AOT_%s_H */\n", U);
  ir_buf_cstr(&b);
  if (b.oom) {
    ir_buf_free(&b);
    fprintf(stderr, "arrayc: out of memory\n");
    return NULL;
  }
  return ir_buf_take(&b);
}

/* ---- the manifest (docs/tools.md, "The manifest") ---- */

/* Length of the valid UTF-8 sequence at s (n bytes left), or 0. */
static size_t utf8_len(const unsigned char *s, size_t n) {
  unsigned c = s[0];
  size_t len = c < 0xc2 ? 0 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : c < 0xf5 ? 4 : 0;
  if (len == 0 || len > n)
    return 0;
  for (size_t i = 1; i < len; i++)
    if ((s[i] & 0xc0) != 0x80)
      return 0;
  if ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] >= 0xa0) || (c == 0xf0 && s[1] < 0x90) ||
      (c == 0xf4 && s[1] >= 0x90))
    return 0; /* overlong, a surrogate, past U+10FFFF */
  return len;
}

/* s as a JSON string: quotes, backslashes and control characters escaped,
 * bytes that are not UTF-8 (a file name may hold any) as U+FFFD. */
static void json_string(ir_buf *b, const char *s) {
  ir_buf_putc(b, '"');
  const unsigned char *u = (const unsigned char *)s;
  size_t n = strlen(s);
  for (size_t i = 0; i < n;) {
    unsigned c = u[i];
    if (c == '"' || c == '\\') {
      ir_buf_putc(b, '\\');
      ir_buf_putc(b, (char)c);
    } else if (c == '\n') {
      ir_buf_puts(b, "\\n");
    } else if (c == '\t') {
      ir_buf_puts(b, "\\t");
    } else if (c < 0x20 || c == 0x7f) {
      ir_buf_printf(b, "\\u%04x", c);
    } else if (c >= 0x80) {
      size_t len = utf8_len(u + i, n - i);
      if (len)
        ir_buf_putn(b, s + i, len);
      else
        ir_buf_puts(b, "\\ufffd");
      i += len ? len : 1;
      continue;
    } else {
      ir_buf_putc(b, (char)c);
    }
    i++;
  }
  ir_buf_putc(b, '"');
}

/* One flattened leaf: its index in the call, its path, element type and
 * rank (0: a scalar). */
static void json_leaf(ir_buf *b, size_t index, const char *path, ac_scalar sc, unsigned rank) {
  ir_buf_printf(b, "{\"index\": %zu, \"path\": ", index);
  json_string(b, path);
  ir_buf_printf(b, ", \"elem\": \"%s\", \"rank\": %u}", ac_scalar_name(sc), rank);
}

static const char *base_name(const char *path) {
  const char *s = strrchr(path, '/');
  return s ? s + 1 : path;
}

static char *make_manifest(aot_run *R, const char *code_path, const char *header_path) {
  const aot_opts *o = R->o;
  ir_buf b;
  ir_buf_init(&b, R->ctx);
  ir_buf_puts(&b, "{\n  \"manifest\": 1,\n  \"compiler\": ");
  json_string(&b, rt_build_id());
  ir_buf_printf(&b, ",\n  \"target\": \"%s\",\n", o->gpu ? "gpu" : "cpu");
  if (o->gpu) {
    ir_buf_printf(&b, "  \"gpu\": \"sm_%u\",\n", o->sm);
  } else {
    ir_buf_puts(&b, "  \"triple\": ");
    json_string(&b, R->triple);
    ir_buf_puts(&b, ",\n  \"cpu\": ");
    json_string(&b, R->cpu);
    ir_buf_puts(&b, ",\n");
  }
  ir_buf_puts(&b, "  \"source\": ");
  json_string(&b, R->m->name ? R->m->name : "");
  ir_buf_puts(&b, ",\n  \"prefix\": ");
  json_string(&b, R->prefix);
  ir_buf_puts(&b, ",\n  \"code_file\": ");
  json_string(&b, base_name(code_path));
  ir_buf_printf(&b, ",\n  \"code_kind\": \"%s\",\n  \"header\": ",
                o->gpu      ? "ptx"
                : o->shared ? "so"
                            : "obj");
  json_string(&b, base_name(header_path));
  ir_buf_printf(&b, ",\n  \"bundle_hash\": \"0x%016llx\",\n  \"functions\": [",
                (unsigned long long)rt_bundle_hash(R->bundle, R->bundle_len));
  for (size_t i = 0; i < R->nfns; i++) {
    const ac_function *f = R->sig[i];
    ir_buf_printf(&b, "%s\n    {\n      \"name\": ", i ? "," : "");
    json_string(&b, ac_function_name(f));
    ir_buf_puts(&b, ",\n      \"params\": [");
    for (size_t p = 0; p < ac_function_num_params(f); p++) {
      size_t first = 0, count = 0;
      ac_function_param_leaves(f, p, &first, &count);
      ir_buf_printf(&b, "%s\n        {\"name\": ", p ? "," : "");
      json_string(&b, ac_function_param_name(f, p));
      ir_buf_puts(&b, ", \"type\": ");
      json_string(&b, ac_function_param_type(f, p));
      ir_buf_puts(&b, ", \"leaves\": [");
      for (size_t k = first; k < first + count; k++) {
        ac_scalar sc = AC_BOOL;
        unsigned rank = 0;
        ac_function_arg_info(f, k, &sc, &rank);
        ir_buf_puts(&b, k > first ? ", " : "");
        json_leaf(&b, k, ac_function_arg_name(f, k), sc, rank);
      }
      ir_buf_puts(&b, "]}");
    }
    ir_buf_puts(&b, ac_function_num_params(f) ? "\n      ],\n" : "],\n");
    ir_buf_puts(&b, "      \"result_type\": ");
    json_string(&b, ac_function_result_type(f));
    ir_buf_puts(&b, ",\n      \"results\": [");
    for (size_t k = 0; k < ac_function_num_results(f); k++) {
      ac_scalar sc = AC_BOOL;
      unsigned rank = 0;
      ac_function_result_info(f, k, &sc, &rank);
      ir_buf_puts(&b, k ? ",\n        " : "\n        ");
      json_leaf(&b, k, ac_function_result_name(f, k), sc, rank);
    }
    ir_buf_puts(&b, ac_function_num_results(f) ? "\n      ]\n    }" : "]\n    }");
  }
  ir_buf_puts(&b, R->nfns ? "\n  ]\n}\n" : "]\n}\n");
  ir_buf_cstr(&b);
  if (b.oom) {
    ir_buf_free(&b);
    fprintf(stderr, "arrayc: out of memory\n");
    return NULL;
  }
  return ir_buf_take(&b);
}

/* ---- linking a shared library ---- */

/* The directory holding libarrayc_rt.so: next to this executable (a build
 * tree) or in ../lib* beside its bin directory (an installation). */
static bool rt_libdir(char *dir, size_t size) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0)
    return false;
  exe[n] = 0;
  char *slash = strrchr(exe, '/');
  if (!slash)
    return false;
  *slash = 0;
  static const char *const rel[] = {"", "/../lib", "/../lib64", "/../lib/x86_64-linux-gnu",
                                    ARRAYC_INSTALL_LIBDIR_REL, NULL};
  for (size_t i = 0; rel[i]; i++) {
    char cand[PATH_MAX + 64];
    snprintf(cand, sizeof cand, "%s%s/libarrayc_rt.so", exe, rel[i]);
    if (access(cand, R_OK) == 0) {
      char real[PATH_MAX];
      snprintf(cand, sizeof cand, "%s%s", exe, rel[i]);
      if (!realpath(cand, real))
        return false;
      snprintf(dir, size, "%s", real);
      return true;
    }
  }
  return false;
}

static bool link_shared(const char *obj, const char *so) {
  char dir[PATH_MAX];
  bool have_rt = rt_libdir(dir, sizeof dir);
  const char *cc = getenv("CC");
  if (!cc || !*cc)
    cc = "cc";
  char ldir[PATH_MAX + 8], rpath[PATH_MAX + 16];
  snprintf(ldir, sizeof ldir, "-L%s", dir);
  snprintf(rpath, sizeof rpath, "-Wl,-rpath,%s", dir);
  const char *argv[16];
  size_t n = 0;
  argv[n++] = cc;
  argv[n++] = "-shared";
  argv[n++] = "-o";
  argv[n++] = so;
  argv[n++] = obj;
  if (have_rt) {
    argv[n++] = ldir;
    argv[n++] = rpath;
    /* named even when no kernel calls into it (a compiler linking with
     * --as-needed would drop it): whoever dlopens the object gets the
     * runtime that loads it */
    argv[n++] = "-Wl,--push-state,--no-as-needed";
    argv[n++] = "-larrayc_rt";
    argv[n++] = "-Wl,--pop-state";
  } else {
    fprintf(stderr, "arrayc: note: libarrayc_rt.so not found beside arrayc; %s will need it "
                    "loaded first (RTLD_GLOBAL)\n",
            so);
  }
  argv[n++] = "-lm";
  argv[n] = NULL;
  pid_t pid = fork();
  if (pid < 0) {
    fprintf(stderr, "arrayc: cannot run %s: %s\n", cc, strerror(errno));
    return false;
  }
  if (pid == 0) {
    execvp(cc, (char *const *)argv);
    fprintf(stderr, "arrayc: cannot run %s (set CC to a C compiler): %s\n", cc, strerror(errno));
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
    ;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "arrayc: linking %s with %s failed\n", so, cc);
    return false;
  }
  return true;
}

/* ---- the run ---- */

static bool pick_functions(aot_run *R) {
  size_t n = R->m->nfuncs;
  R->fns = calloc(n ? n : 1, sizeof *R->fns);
  R->sig = calloc(n ? n : 1, sizeof *R->sig);
  if (!R->fns || !R->sig) {
    fprintf(stderr, "arrayc: out of memory\n");
    return false;
  }
  bool found = false;
  for (size_t i = 0; i < n; i++) {
    const ir_func *fd = &R->m->funcs[i];
    const char *name = ir_sym_str(R->ctx, fd->name);
    if (R->o->fn ? strcmp(name, R->o->fn) != 0 : fd->is_extern)
      continue;
    found = true;
    ac_error *err = NULL;
    if (api_function_signature(R->m, name, &R->sig[R->nfns], &err) != AC_OK) {
      tool_print_error(err);
      ac_error_destroy(err);
      return false;
    }
    R->fns[R->nfns++] = (uint32_t)i;
  }
  if (R->o->fn && !found)
    return tool_has_function("arrayc", R->m, R->o->fn);
  return true;
}

/* The C prefix: the base name of the output path, which must be a C
 * identifier. */
static bool check_prefix(const char *out, const char **prefix) {
  const char *base = strrchr(out, '/');
  base = base ? base + 1 : out;
  bool ok = (*base >= 'a' && *base <= 'z') || (*base >= 'A' && *base <= 'Z') || *base == '_';
  for (const char *c = base; *c && ok; c++)
    ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
         *c == '_';
  if (!ok) {
    fprintf(stderr, "arrayc: the output name '%s' must end in a C identifier (it prefixes the "
                    "header's names): use -o DIR/NAME\n",
            base);
    return false;
  }
  *prefix = base;
  return true;
}

int aot_main(const aot_opts *o, ac_context *ctx, ac_module *m) {
  aot_run R;
  memset(&R, 0, sizeof R);
  R.o = o;
  R.ctx = ctx;
  R.m = m;
  if (!check_prefix(o->out, &R.prefix) || !pick_functions(&R))
    goto fail_early;
  snprintf(R.cpu, sizeof R.cpu, "%s", o->gpu ? "" : (o->cpu ? o->cpu : "host"));
  api_aot_opts ao;
  memset(&ao, 0, sizeof ao);
  ao.gpu = o->gpu;
  ao.sm = o->sm;
  ao.cpu = o->cpu;
  ao.passes = o->passes;
  ao.prefix = R.prefix;
  char sym[300];
  snprintf(sym, sizeof sym, "%s_arrayc_bundle", R.prefix);
  ao.embed_symbol = sym;
  ao.embed = embed_bundle;
  ao.embed_ud = &R;
  ao.want_llvm = o->emit_llvm;
  api_aot_out out;
  memset(&out, 0, sizeof out);
  ac_error *err = NULL;
  bool ok = true;
  if (!o->gpu)
    aot_host_target(R.triple, sizeof R.triple, o->cpu, R.cpu, sizeof R.cpu);
  if (api_emit_aot(m, R.fns, R.nfns, &ao, &out, &err) != AC_OK) {
    tool_print_error(err);
    ac_error_destroy(err);
    ok = false;
  }
  if (ok && o->gpu)
    ok = make_bundle(&R, out.plans, out.nplans, &R.bundle, &R.bundle_len);
  char *code_path = NULL;
  if (ok)
    code_path = path_of(o->out, o->gpu ? ".ptx" : o->shared ? ".so" : ".o");
  ok = ok && code_path;
  /* the code file */
  if (ok && o->emit_code && o->gpu) {
    char *ptx = NULL;
    size_t len = 0;
    if (rt_ptx_with_bundle(ctx, R.bundle, R.bundle_len, out.code, &ptx, &len, &err) != AC_OK) {
      tool_print_error(err);
      ac_error_destroy(err);
      ok = false;
    } else {
      ok = write_file(code_path, ptx, len);
    }
    ac_free(ctx, ptx);
  } else if (ok && o->emit_code && o->shared) {
    char *obj = path_of(o->out, ".o.tmp");
    ok = obj && write_file(obj, out.code, out.len) && link_shared(obj, code_path);
    if (obj)
      remove(obj);
    free(obj);
  } else if (ok && o->emit_code) {
    ok = write_file(code_path, out.code, out.len);
  }
  if (ok && o->emit_header) {
    char *abs = realpath(code_path, NULL);
    char *h = make_header(&R, &out, abs ? abs : code_path);
    free(abs);
    char *hp = path_of(o->out, ".h");
    ok = h && hp && write_file(hp, h, strlen(h));
    free(hp);
    ac_free(ctx, h);
  }
  if (ok && o->emit_manifest) {
    char *jp = path_of(o->out, ".json");
    char *hp = path_of(o->out, ".h");
    char *j = jp && hp ? make_manifest(&R, code_path, hp) : NULL;
    ok = j && write_file(jp, j, strlen(j));
    ac_free(ctx, j);
    free(jp);
    free(hp);
  }
  if (ok && o->emit_plan) {
    char *pp = path_of(o->out, ".plan");
    ir_buf b;
    ir_buf_init(&b, ctx);
    for (size_t i = 0; i < out.nplans && ok; i++) {
      char *text = NULL;
      if (pl_print(out.plans[i], &text, &err) != AC_OK) {
        tool_print_error(err);
        ac_error_destroy(err);
        ok = false;
      } else {
        ir_buf_printf(&b, "%s%s", i ? "\n" : "", text);
      }
      ac_string_destroy(ctx, text);
    }
    ok = ok && pp && !b.oom && write_file(pp, b.data ? b.data : "", b.len);
    ir_buf_free(&b);
    free(pp);
  }
  if (ok && o->emit_llvm) {
    char *lp = path_of(o->out, ".ll");
    ok = lp && out.llvm && write_file(lp, out.llvm, strlen(out.llvm));
    free(lp);
  }
  free(code_path);
  api_aot_out_free(ctx, &out);
  ac_free(ctx, R.bundle);
  for (size_t i = 0; i < R.nfns; i++)
    ac_function_destroy(R.sig[i]);
  free(R.sig);
  free(R.fns);
  return ok ? 0 : 1;
fail_early:
  for (size_t i = 0; i < R.nfns; i++)
    ac_function_destroy(R.sig[i]);
  free(R.sig);
  free(R.fns);
  return 1;
}

void aot_host_target(char *triple, size_t tsize, const char *cpu, char *cpu_out, size_t csize) {
  char *t = LLVMGetDefaultTargetTriple();
  snprintf(triple, tsize, "%s", t ? t : "unknown");
  LLVMDisposeMessage(t);
  if (cpu) {
    snprintf(cpu_out, csize, "%s", cpu);
    return;
  }
  char *host = LLVMGetHostCPUName();
  snprintf(cpu_out, csize, "%s", host ? host : "unknown");
  LLVMDisposeMessage(host);
}
