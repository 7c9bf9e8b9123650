/* runtime/library.c: loading ahead-of-time output (include/arrayc/library.h).
 *
 * A library is one code file's functions: the bundle (runtime/bundle.h:
 * plans and signatures, checked to come from this runtime's compiler and,
 * when a generated header asks, to be the bundle it was written with) and
 * the kernels of every plan, found by symbol:
 *   - CPU: in the table a generated header passes (kernels linked into the
 *     program), else with dlsym in the shared object we dlopen'd; the
 *     plans run on a thread pool of the library's own;
 *   - GPU: in the PTX file, loaded as one CUDA module on the device; an
 *     extern kernel (hand-written PTX, plan.h) from the PTX text its plan
 *     carries, as a module of its own.
 * Functions (runtime/function.h) point into the library's flat kernel
 * arrays and hold a reference to it.
 */
#define _POSIX_C_SOURCE 200809L

#include "arrayc/library.h"

#include "runtime/bundle.h"
#include "runtime/dlfile.h"
#include "runtime/plan_impl.h"

#include "ir.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct ac_library {
  ac_context *ctx;
  atomic_size_t refs;
  ac_backend backend;
  rt_bundle *b;
  uint32_t *first;         /* per function: its first kernel in the arrays below */
  rt_kernel_fn *kernels;   /* CPU: every plan's kernels, function after function */
  rt_gkernel **gkernels;   /* GPU */
  uint32_t nkernels;
  rt_pool *pool;           /* CPU */
  rt_gpu *gpu;             /* GPU: one reference */
  rt_cuda_module *cmod;    /* GPU: the .ptx file's module (arrayc's kernels) */
  rt_cuda_module **xmods;  /* GPU: per kernel of the arrays above, an extern kernel's own
                              module, else NULL (NULL when there are none) */
  void *dl;                /* the dlopen'd shared object, or NULL */
};

const char *ac_library_compiler_id(void) {
  return rt_build_id();
}

static void lib_free(ac_library *lib) {
  ac_context *ctx = lib->ctx;
  if (lib->cmod)
    rt_cuda_module_free(lib->gpu, lib->cmod);
  for (uint32_t i = 0; lib->xmods && i < lib->nkernels; i++)
    rt_cuda_module_free(lib->gpu, lib->xmods[i]); /* NULL-safe */
  ac_free(ctx, lib->xmods);
  rt_gpu_release(lib->gpu);
  rt_pool_destroy(lib->pool);
  rt_bundle_free(ctx, lib->b);
  ac_free(ctx, lib->first);
  ac_free(ctx, lib->kernels);
  ac_free(ctx, lib->gkernels);
  if (lib->dl)
    dlclose(lib->dl);
  ac_free(ctx, lib);
}

static void lib_release(ac_library *lib) {
  if (lib && atomic_fetch_sub_explicit(&lib->refs, 1, memory_order_acq_rel) == 1)
    lib_free(lib);
}

void ac_library_close(ac_library *lib) {
  lib_release(lib);
}

/* ---- reading the code file ---- */

/* The most bytes read from a code file that is not a regular file
 * (docs/runtime.md §11). */
#define LIB_MAX_FILE ((size_t)256 << 20)

static ac_status read_file(ac_context *ctx, const char *path, char **out, size_t *len,
                           ac_error **err) {
  *out = NULL;
  FILE *f = fopen(path, "rb");
  if (!f)
    return rt_fail(ctx, err, AC_ERR_IO, "cannot open %s: %s", path, strerror(errno));
  ir_buf b;
  ir_buf_init(&b, ctx);
  /* a regular file ends; /dev/zero or a pipe behind a .ptx name may not */
  struct stat st;
  size_t limit = fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) ? SIZE_MAX : LIB_MAX_FILE;
  char chunk[65536];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0 && b.len <= limit)
    ir_buf_putn(&b, chunk, n);
  bool bad = ferror(f) != 0;
  fclose(f);
  if (b.len > limit) {
    ir_buf_free(&b);
    return rt_fail(ctx, err, AC_ERR_IO,
                   "%s: more than %u MiB, the limit for a code file that is not a regular file",
                   path, (unsigned)(LIB_MAX_FILE >> 20));
  }
  if (bad) {
    ir_buf_free(&b);
    return rt_fail(ctx, err, AC_ERR_IO, "cannot read %s", path);
  }
  ir_buf_cstr(&b);
  if (b.oom) {
    ir_buf_free(&b);
    return ir_report(err, NULL, AC_ERR_NOMEM);
  }
  *len = b.len;
  *out = ir_buf_take(&b);
  return *out ? AC_OK : ir_report(err, NULL, AC_ERR_NOMEM);
}

/* The prefix a file name suggests: its base name up to the first '.', and
 * (second choice, `strip`) the same without a leading "lib" (libbs.so: the
 * prefix libbs or bs). NULL when there is no second choice. */
static char *prefix_of(ac_context *ctx, const char *path, bool strip) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  if (strip) {
    if (strncmp(base, "lib", 3) != 0 || !base[3] || base[3] == '.')
      return NULL;
    base += 3;
  }
  size_t n = strcspn(base, ".");
  return ac_strndup(ctx, base, n);
}

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* The bundle of a shared object: PREFIX_arrayc_bundle, its size and its
 * checksum (PREFIX_arrayc_bundle_size, PREFIX_arrayc_bundle_hash). */
typedef struct lib_embedded {
  const char *text;
  size_t len;
  const uint64_t *hash; /* NULL: the object has none */
} lib_embedded;

/* Looks up the bundle of `prefix` in the dlopen'd object; false when it
 * has none (the checksum may still be missing: checked by the caller). */
static bool find_bundle(ac_library *lib, const char *prefix, lib_embedded *e) {
  size_t n = strlen(prefix) + 32;
  char *sym = ac_alloc(lib->ctx, n);
  if (!sym)
    return false;
  snprintf(sym, n, "%s_arrayc_bundle", prefix);
  const char *text = dlsym(lib->dl, sym);
  snprintf(sym, n, "%s_arrayc_bundle_size", prefix);
  const int64_t *size = dlsym(lib->dl, sym);
  snprintf(sym, n, "%s_arrayc_bundle_hash", prefix);
  const uint64_t *hash = dlsym(lib->dl, sym);
  ac_free(lib->ctx, sym);
  if (!text || !size || *size < 0)
    return false;
  e->text = text;
  e->len = (size_t)*size;
  e->hash = hash;
  return true;
}

/* The bundle of a shared object: dlopen it, read PREFIX_arrayc_bundle and
 * verify its checksum before anything reads the text (docs/runtime.md §11:
 * an edited plan or signature is refused, never run). */
static ac_status open_shared(ac_library *lib, const ac_library_desc *d, const char **bundle,
                             size_t *len, ac_error **err) {
  ac_context *ctx = lib->ctx;
  char why[512];
  ac_status ds = rt_dlopen_file(d->path, RTLD_NOW | RTLD_LOCAL, &lib->dl, why, sizeof why);
  if (ds == AC_ERR_NOMEM)
    return ir_report(err, NULL, AC_ERR_NOMEM);
  if (ds != AC_OK)
    return rt_fail(ctx, err, ds, "%s", why);
  char *first = d->prefix ? ac_strdup(ctx, d->prefix) : prefix_of(ctx, d->path, false);
  char *second = d->prefix ? NULL : prefix_of(ctx, d->path, true);
  if (!first) {
    ac_free(ctx, second);
    return ir_report(err, NULL, AC_ERR_NOMEM);
  }
  ac_status st = AC_OK;
  lib_embedded e = {NULL, 0, NULL};
  const char *found = first;
  if (!find_bundle(lib, first, &e) && !(second && find_bundle(lib, found = second, &e)))
    st = rt_fail(ctx, err, AC_ERR_INVALID,
                 "%s has no arrayc bundle for prefix '%s' (no symbol %s_arrayc_bundle): is it "
                 "arrayc --target=cpu --shared output, and is the prefix right?",
                 d->path, first, first);
  else if (!e.hash)
    st = rt_fail(ctx, err, AC_ERR_INVALID,
                 "%s: the arrayc bundle has no checksum (no symbol %s_arrayc_bundle_hash): it "
                 "was not written by the arrayc of this runtime (compile the program again)",
                 d->path, found);
  else if (rt_bundle_hash(e.text, e.len) != *e.hash)
    st = rt_fail(ctx, err, AC_ERR_INVALID,
                 "%s: the arrayc bundle is damaged (its checksum does not match)", d->path);
  ac_free(ctx, first);
  ac_free(ctx, second);
  *bundle = e.text;
  *len = e.len;
  return st;
}

/* ---- finding the kernels ---- */

static ac_status cpu_kernels(ac_library *lib, const ac_library_desc *d, const char *where,
                             ac_error **err) {
  ac_context *ctx = lib->ctx;
  lib->kernels = ac_alloc(ctx, (lib->nkernels + 1) * sizeof *lib->kernels);
  if (!lib->kernels)
    return ir_report(err, NULL, AC_ERR_NOMEM);
  uint32_t k = 0;
  for (uint32_t i = 0; i < lib->b->nfns; i++) {
    const pl_plan *p = lib->b->fns[i].plan;
    for (uint32_t j = 0; j < p->nkernels; j++, k++) {
      const char *sym = p->kernels[j].symbol;
      void (*fn)(void) = NULL;
      for (size_t t = 0; t < d->num_kernels && !fn; t++)
        if (d->kernels[t].name && strcmp(d->kernels[t].name, sym) == 0)
          fn = d->kernels[t].fn;
      if (!fn && lib->dl) {
        void *addr = dlsym(lib->dl, sym);
        /* POSIX lets an object pointer from dlsym hold a function */
        _Static_assert(sizeof addr == sizeof fn, "function pointer size");
        memcpy(&fn, &addr, sizeof fn);
      }
      if (!fn)
        return rt_fail(ctx, err, AC_ERR_INVALID,
                       "%s: kernel '%s' of function '%s' is missing (is the object file stale, "
                       "or from another arrayc run than the header?)",
                       where, sym, lib->b->fns[i].name);
      _Static_assert(sizeof fn == sizeof lib->kernels[k], "function pointer size");
      memcpy(&lib->kernels[k], &fn, sizeof fn);
    }
  }
  unsigned n = d->num_threads;
  lib->pool = rt_pool_create(ctx, n);
  if (!lib->pool)
    return rt_fail(ctx, err, AC_ERR_NOMEM, "cannot create the CPU thread pool");
  return AC_OK;
}

static ac_status gpu_kernels(ac_library *lib, const char *where, const char *ptx,
                             ac_error **err) {
  ac_context *ctx = lib->ctx;
  int ordinal = 0;
  const char *s = getenv("ARRAYC_GPU_DEVICE");
  if (s && *s) {
    char *end;
    long v = strtol(s, &end, 10);
    if (*end || v < 0 || v > 1024)
      return rt_fail(ctx, err, AC_ERR_INVALID, "ARRAYC_GPU_DEVICE=%s is not a device number", s);
    ordinal = (int)v;
  }
  ac_status st = rt_cuda_create(ctx, ordinal, &lib->gpu, err);
  if (st != AC_OK)
    return st;
  unsigned sm = 0;
  int driver = 0;
  char name[128];
  rt_cuda_info(lib->gpu, &sm, &driver, name, sizeof name);
  if (sm < lib->b->sm)
    return rt_fail(ctx, err, AC_ERR_UNSUPPORTED,
                   "no GPU: %s was compiled for sm_%u, and %s has compute capability %u.%u "
                   "(compile it with --gpu=sm_%u)",
                   where, lib->b->sm, name, sm / 10, sm % 10, sm);
  lib->gkernels = ac_alloc(ctx, (lib->nkernels + 1) * sizeof *lib->gkernels);
  const char **syms = ac_alloc(ctx, (lib->nkernels + 1) * sizeof *syms);
  if (!lib->gkernels || !syms) {
    ac_free(ctx, (void *)syms);
    return ir_report(err, NULL, AC_ERR_NOMEM);
  }
  memset(lib->gkernels, 0, (lib->nkernels + 1) * sizeof *lib->gkernels);
  /* arrayc's kernels are in the .ptx file; an extern kernel's PTX is in
   * its plan, loaded as a module of its own */
  uint32_t nown = 0, nextern = 0;
  for (uint32_t i = 0; i < lib->b->nfns; i++) {
    const pl_plan *p = lib->b->fns[i].plan;
    for (uint32_t j = 0; j < p->nkernels; j++) {
      if (p->kernels[j].ptx)
        nextern++;
      else
        syms[nown++] = p->kernels[j].symbol;
    }
  }
  rt_gkernel **own = ac_alloc(ctx, (nown + 1) * sizeof *own);
  if (!own)
    st = ir_report(err, NULL, AC_ERR_NOMEM);
  if (st == AC_OK && nown > 0)
    st = rt_cuda_load(lib->gpu, ptx, syms, nown, &lib->cmod, own, err);
  ac_free(ctx, (void *)syms);
  if (st == AC_OK && nextern > 0) {
    lib->xmods = ac_alloc(ctx, lib->nkernels * sizeof *lib->xmods);
    if (!lib->xmods)
      st = ir_report(err, NULL, AC_ERR_NOMEM);
    else
      memset(lib->xmods, 0, lib->nkernels * sizeof *lib->xmods);
  }
  uint32_t k = 0, o = 0;
  for (uint32_t i = 0; st == AC_OK && i < lib->b->nfns; i++) {
    const pl_plan *p = lib->b->fns[i].plan;
    for (uint32_t j = 0; st == AC_OK && j < p->nkernels; j++, k++) {
      if (!p->kernels[j].ptx)
        lib->gkernels[k] = own[o++];
      else
        st = rt_cuda_load_extern(lib->gpu, &p->kernels[j], &lib->xmods[k], &lib->gkernels[k], err);
    }
  }
  ac_free(ctx, own);
  return st;
}

/* ---- loading ---- */

static const char *target_words(bool gpu) {
  return gpu ? "the GPU (arrayc --target=gpu)" : "the CPU (arrayc --target=cpu)";
}

/* The code's target against the one its header was written for. */
static ac_status check_target(ac_context *ctx, const char *where, bool gpu, ac_backend expect,
                              ac_error **err) {
  if (expect != AC_BACKEND_CPU && expect != AC_BACKEND_GPU)
    return AC_OK;
  if (gpu == (expect == AC_BACKEND_GPU))
    return AC_OK;
  return rt_fail(ctx, err, AC_ERR_INVALID,
                 "%s holds code for %s, but its header was written for %s: include the header "
                 "arrayc wrote with this code file",
                 where, target_words(gpu), target_words(expect == AC_BACKEND_GPU));
}

static ac_status load_bundle(ac_library *lib, const char *where, const char *text, size_t len,
                             uint64_t expect, ac_backend expect_backend, ac_error **err) {
  ac_context *ctx = lib->ctx;
  if (expect && rt_bundle_hash(text, len) != expect) {
    /* another target's code says so; any other difference is staleness */
    rt_bundle *other = NULL;
    ac_status st = AC_OK;
    if (rt_bundle_parse(ctx, where, text, len, &other, NULL) == AC_OK)
      st = check_target(ctx, where, other->gpu, expect_backend, err);
    rt_bundle_free(ctx, other);
    if (st != AC_OK)
      return st;
    return rt_fail(ctx, err, AC_ERR_INVALID,
                   "%s is stale: it is not the code file its header was generated with (write "
                   "both again with one arrayc run)",
                   where);
  }
  ac_status st = rt_bundle_parse(ctx, where, text, len, &lib->b, err);
  if (st == AC_OK)
    st = check_target(ctx, where, lib->b->gpu, expect_backend, err);
  if (st == AC_OK)
    st = rt_bundle_check(ctx, where, lib->b, err);
  if (st != AC_OK)
    return st;
  lib->first = ac_alloc(ctx, (lib->b->nfns + 1) * sizeof *lib->first);
  if (!lib->first)
    return ir_report(err, NULL, AC_ERR_NOMEM);
  uint64_t n = 0;
  for (uint32_t i = 0; i < lib->b->nfns; i++) {
    lib->first[i] = (uint32_t)n;
    n += lib->b->fns[i].plan->nkernels;
    if (n > UINT32_MAX / 2)
      return rt_fail(ctx, err, AC_ERR_INVALID, "%s: too many kernels", where);
  }
  lib->nkernels = (uint32_t)n;
  lib->backend = lib->b->gpu ? AC_BACKEND_GPU : AC_BACKEND_CPU;
  return AC_OK;
}

ac_status ac_library_load(ac_context *ctx, const ac_library_desc *desc, size_t desc_size,
                          ac_library **out, ac_error **err) {
  if (err)
    *err = NULL;
  if (!ctx)
    return AC_ERR_INVALID;
  if (!out || !desc)
    return rt_fail(ctx, err, AC_ERR_INVALID, "ac_library_load: %s is NULL",
                   out ? "desc" : "out");
  *out = NULL;
  ac_library_desc d;
  memset(&d, 0, sizeof d);
  memcpy(&d, desc, desc_size < sizeof d ? desc_size : sizeof d);
  if (!d.path && !d.bundle)
    return rt_fail(ctx, err, AC_ERR_INVALID, "ac_library_load: neither a path nor a bundle");
  if (d.path && d.bundle && d.expect_backend == AC_BACKEND_GPU)
    return rt_fail(ctx, err, AC_ERR_INVALID,
                   "the program links a host object (CPU code, arrayc --target=cpu) with this "
                   "prefix but opens %s with a header written for the GPU (arrayc "
                   "--target=gpu): include the header arrayc wrote with the object, or do not "
                   "link it",
                   d.path);
  if (d.path && d.bundle)
    return rt_fail(ctx, err, AC_ERR_INVALID,
                   "ac_library_load: a code file (%s) and a linked bundle: give one of them "
                   "(the kernels of a header made without --shared are linked into the "
                   "program, so its _open takes no path)",
                   d.path);
  if (d.path && !d.bundle && ends_with(d.path, ".o"))
    return rt_fail(ctx, err, AC_ERR_INVALID,
                   "%s is a host object: link it into the program and open it with the header "
                   "arrayc wrote with it (its _open takes no path)",
                   d.path);
  ac_library *lib = ac_alloc(ctx, sizeof *lib);
  if (!lib)
    return ir_report(err, NULL, AC_ERR_NOMEM);
  memset(lib, 0, sizeof *lib);
  lib->ctx = ctx;
  atomic_init(&lib->refs, 1);
  const char *where = d.path ? d.path : "the linked object";
  char *file = NULL, *text = NULL;
  size_t flen = 0, tlen = 0;
  uint64_t hash = 0;
  ac_status st = AC_OK;
  bool ptx = d.path && !d.bundle && ends_with(d.path, ".ptx");
  if (d.bundle) {
    st = load_bundle(lib, where, d.bundle, d.bundle_len, d.expect_hash, d.expect_backend, err);
    if (st == AC_OK && lib->b->gpu)
      st = rt_fail(ctx, err, AC_ERR_INVALID,
                   "%s: a GPU bundle is loaded from its .ptx file (give its path, no bundle)",
                   where);
  } else if (ptx) {
    st = read_file(ctx, d.path, &file, &flen, err);
    if (st == AC_OK)
      st = rt_ptx_bundle_text(ctx, d.path, file, flen, &text, &tlen, &hash, err);
    if (st == AC_OK)
      st = load_bundle(lib, where, text, tlen, d.expect_hash, d.expect_backend, err);
    if (st == AC_OK && !lib->b->gpu)
      st = rt_fail(ctx, err, AC_ERR_INVALID, "%s holds a CPU bundle", d.path);
  } else {
    const char *bundle = NULL;
    size_t blen = 0;
    st = open_shared(lib, &d, &bundle, &blen, err);
    if (st == AC_OK)
      st = load_bundle(lib, where, bundle, blen, d.expect_hash, d.expect_backend, err);
    if (st == AC_OK && lib->b->gpu)
      st = rt_fail(ctx, err, AC_ERR_INVALID, "%s holds a GPU bundle", d.path);
  }
  if (st == AC_OK)
    st = lib->b->gpu ? gpu_kernels(lib, where, file, err) : cpu_kernels(lib, &d, where, err);
  ac_free(ctx, file);
  ac_free(ctx, text);
  if (st != AC_OK) {
    lib_free(lib);
    return st;
  }
  *out = lib;
  return AC_OK;
}

ac_status ac_library_open(ac_context *ctx, const char *path, const char *prefix,
                          ac_library **out, ac_error **err) {
  ac_library_desc d;
  memset(&d, 0, sizeof d);
  d.path = path;
  d.prefix = prefix;
  if (!path) {
    if (err)
      *err = NULL;
    return ctx ? rt_fail(ctx, err, AC_ERR_INVALID, "ac_library_open: path is NULL")
               : AC_ERR_INVALID;
  }
  return ac_library_load(ctx, &d, sizeof d, out, err);
}

/* ---- functions ---- */

ac_backend ac_library_backend(const ac_library *lib) {
  return lib->backend;
}

size_t ac_library_num_functions(const ac_library *lib) {
  return lib->b->nfns;
}

const char *ac_library_function_name(const ac_library *lib, size_t i) {
  return i < lib->b->nfns ? lib->b->fns[i].name : NULL;
}

static void fn_release(ac_function *f) {
  lib_release(f->owner);
}

/* A runtime error rebuilt with the source line and caret, when the bundle
 * carries the module's text (as the interpreter shows them). */
static ac_error *fn_relocate(const ac_function *f, const ac_error *e) {
  const ac_library *lib = f->owner;
  if (!lib->b->source_text || !e->file)
    return NULL;
  return pl_error(f->ctx, e->status, e->file, lib->b->source_text, lib->b->source_len, e->line,
                  e->col, "%s", e->message);
}

static const rt_fn_hooks lib_hooks = {NULL, fn_relocate, NULL, fn_release};

/* The bundle's declared parameters into f (runtime/function.h). */
static bool copy_params(ac_function *f, const rt_bundle_fn *bf) {
  f->params = ac_alloc(f->ctx, (bf->nparams ? bf->nparams : 1) * sizeof *f->params);
  if (!f->params)
    return false;
  memset(f->params, 0, (bf->nparams ? bf->nparams : 1) * sizeof *f->params);
  f->nparams = bf->nparams;
  for (uint32_t i = 0; i < bf->nparams; i++) {
    rt_param *p = &f->params[i];
    p->first = bf->params[i].first;
    p->nleaves = bf->params[i].nleaves;
    if (!(p->name = ac_strdup(f->ctx, bf->params[i].name)) ||
        !(p->type = ac_strdup(f->ctx, bf->params[i].type)))
      return false;
  }
  return true;
}

static bool copy_leaves(ac_context *ctx, rt_leaf *dst, const rt_leaf *src, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) {
    dst[i].type = src[i].type;
    dst[i].rank = src[i].rank;
    if (!(dst[i].name = ac_strdup(ctx, src[i].name)))
      return false;
  }
  return true;
}

ac_status ac_library_function(ac_library *lib, const char *name, ac_function **out,
                              ac_error **err) {
  if (err)
    *err = NULL;
  if (!lib)
    return AC_ERR_INVALID;
  ac_context *ctx = lib->ctx;
  if (!out || !name)
    return rt_fail(ctx, err, AC_ERR_INVALID, "ac_library_function: %s is NULL",
                   out ? "name" : "out");
  *out = NULL;
  uint32_t i = 0;
  while (i < lib->b->nfns && strcmp(lib->b->fns[i].name, name) != 0)
    i++;
  if (i == lib->b->nfns)
    return rt_fail(ctx, err, AC_ERR_INVALID, "no function named '%s' in the library", name);
  const rt_bundle_fn *bf = &lib->b->fns[i];
  ac_function *f = rt_function_alloc(ctx, bf->nargs, bf->nres);
  if (!f)
    return ir_report(err, NULL, AC_ERR_NOMEM);
  if (!(f->name = ac_strdup(ctx, name)) || !copy_leaves(ctx, f->args, bf->args, bf->nargs) ||
      !copy_leaves(ctx, f->res, bf->res, bf->nres) || !copy_params(f, bf) ||
      !(f->result_type = ac_strdup(ctx, bf->result_type))) {
    ac_function_destroy(f);
    return ir_report(err, NULL, AC_ERR_NOMEM);
  }
  f->backend = lib->backend;
  f->plan = bf->plan;
  if (lib->kernels)
    f->kernels = lib->kernels + lib->first[i];
  if (lib->gkernels)
    f->gkernels = lib->gkernels + lib->first[i];
  f->pool = lib->pool;
  f->gpu = lib->gpu;
  f->hooks = &lib_hooks;
  f->owner = lib;
  atomic_fetch_add_explicit(&lib->refs, 1, memory_order_relaxed);
  *out = f;
  return AC_OK;
}
