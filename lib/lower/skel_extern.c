/* lib/lower/skel_extern.c: calls of extern kernels (docs/language.md §3.4).
 *
 * A call is plan-level work (the verifier keeps it out of element code).
 * Its result extents are size expressions over the parameters, lowered
 * with the arguments as their only environment (so `len(xs)` is just the
 * extent word of the argument: size inference), and the results are
 * allocated before the launch. Then:
 *   - on the CPU and under the SIMT emulator, a one-chunk kernel calls the
 *     host function once with the kernel ABI: per parameter a scalar in its
 *     C type or an array as its element pointer and rank int64_t extents,
 *     then each result array the same way; no return value;
 *   - on the GPU, an EXTERN plan kernel (runtime/plan.h) launches the PTX
 *     .entry with the same parameters (device addresses for arrays) in
 *     ceil(threads / block) blocks of `block` threads.
 */
#include "lower/skel.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* The PTX text of extern kernel f: its own text, or the file's contents
 * (a relative path is taken from the directory of the module's source). */
static char *kernel_ptx(lw *L, const ir_func *f, ir_ref at, size_t *len) {
  const char *name = ir_sym_str(L->ctx, f->name);
  const char *text = ir_sym_str(L->ctx, f->kptx);
  if (!f->kptx_file) {
    *len = strlen(text);
    char *copy = ac_strndup(L->ctx, text, *len);
    if (!copy)
      cg_error(L->M, AC_ERR_NOMEM, at, "out of memory");
    return copy;
  }
  const char *src = L->m->name ? L->m->name : "";
  const char *slash = strrchr(src, '/');
  size_t dir = text[0] != '/' && slash && src[0] != '<' ? (size_t)(slash - src) + 1 : 0;
  size_t plen = dir + strlen(text);
  char *path = ac_alloc(L->ctx, plen + 1);
  if (!path) {
    cg_error(L->M, AC_ERR_NOMEM, at, "out of memory");
    return NULL;
  }
  memcpy(path, src, dir);
  strcpy(path + dir, text);
  char *data = NULL;
  size_t n = 0, cap = 0;
  FILE *fp = fopen(path, "rb");
  int why = fp ? 0 : errno;
  while (fp) {
    if (n + 4096 + 1 > cap) {
      size_t nc = cap ? cap * 2 : 65536;
      if (nc > ((size_t)64 << 20) + 1) {
        why = EFBIG;
        break;
      }
      char *d = ac_realloc(L->ctx, data, nc);
      if (!d) {
        why = ENOMEM;
        break;
      }
      data = d;
      cap = nc;
    }
    size_t got = fread(data + n, 1, cap - n - 1, fp);
    n += got;
    if (got == 0) {
      if (ferror(fp))
        why = EIO;
      break;
    }
  }
  if (fp)
    fclose(fp);
  if (!why && n > 0 && memchr(data, 0, n))
    why = EINVAL;
  if (why || n == 0) {
    cg_error(L->M, why == ENOMEM ? AC_ERR_NOMEM : AC_ERR_INVALID, at,
             "extern kernel %s: cannot use PTX file '%s': %s", name, path,
             why == EINVAL ? "it holds a NUL byte"
             : why == EFBIG ? "it is larger than 64 MiB"
             : why          ? strerror(why)
                            : "it is empty");
    ac_free(L->ctx, data);
    ac_free(L->ctx, path);
    return NULL;
  }
  ac_free(L->ctx, path);
  data[n] = 0;
  *len = n;
  return data;
}

/* The C arguments of the host call: one value per scalar, pointer and
 * extents per array leaf of v (loaded in kernel f). */
typedef struct host_args {
  LLVMValueRef *v;
  LLVMTypeRef *t;
  const char **ext;
  uint32_t n, cap;
} host_args;

static void host_add(host_args *h, LLVMValueRef v, LLVMTypeRef t, const char *ext) {
  if (h->n < h->cap) {
    h->v[h->n] = v;
    h->t[h->n] = t;
    h->ext[h->n] = ext;
  }
  h->n++;
}

static void host_val(lw *L, cg_fn *f, uint32_t k, const lw_val *v, host_args *h) {
  cg_val cv;
  lw_load(L, f, k, v, &cv);
  for (uint32_t i = 0; i < cv.n; i++) {
    const cg_leaf *l = &cv.l[i];
    if (l->kind == CL_ARRAY) {
      host_add(h, l->v, L->M->t_ptr, NULL);
      for (uint32_t d = 0; d < l->rank; d++)
        host_add(h, l->ext[d], L->M->t_i64, NULL);
    } else {
      const char *x = NULL;
      LLVMTypeRef t = cg_c_type(L->M, (ac_scalar)l->sc, &x);
      host_add(h, l->v, t, x); /* as clang passes it (bool: i1 zeroext) */
    }
  }
}

/* CPU and SIMT emulator: a kernel of one chunk that calls the host
 * function. */
static void host_launch(lw *L, ir_ref at, uint32_t fi, const lw_val *args, const lw_val *out) {
  cg_module *M = L->M;
  const ir_func *fn = &L->m->funcs[fi];
  if (!fn->extern_addr && !M->externs_by_name) {
    cg_error(M, AC_ERR_INVALID, at, "extern kernel %s has no host function",
             ir_sym_str(L->ctx, fn->name));
    return;
  }
  char name[80];
  uint32_t k = lw_kernel_new(L, at, "host_call", 1, name);
  cg_fn *f = L->gpu ? lw_adapt_begin(L, name, k) : cg_kernel_begin(M, name);
  uint32_t cap = 0;
  for (uint32_t i = 0; i < fn->nparams; i++)
    cap += args[i].nwords;
  cap += out->nwords;
  host_args h = {cg_new(M, (cap + 1) * sizeof *h.v), cg_new(M, (cap + 1) * sizeof *h.t),
                 cg_new(M, (cap + 1) * sizeof *h.ext), 0, cap};
  for (uint32_t i = 0; i < fn->nparams; i++)
    host_val(L, f, k, &args[i], &h);
  host_val(L, f, k, out, &h);
  if (h.n > h.cap) {
    cg_error(M, AC_ERR_INTERNAL, at, "lowering: extern kernel arguments overflow");
    h.n = h.cap;
  }
  LLVMTypeRef fty = LLVMFunctionType(M->t_void, h.t, h.n, 0);
  LLVMValueRef callee = cg_host_fn(M, fi, fty, at);
  if (callee) {
    LLVMValueRef call = LLVMBuildCall2(M->b, fty, callee, h.v, h.n, "");
    for (uint32_t i = 0; i < h.n; i++)
      if (h.ext[i]) {
        unsigned kind = LLVMGetEnumAttributeKindForName(h.ext[i], strlen(h.ext[i]));
        LLVMAddCallSiteAttribute(call, i + 1, LLVMCreateEnumAttribute(M->llctx, kind, 0));
      }
  }
  lw_kernel_end(L, f);
  lw_launch(L, k, lw_x_const(L, 1), lw_x_const(L, 1));
}

/* The parameters of the PTX kernel from the words of v. */
static void ptx_args(lw *L, uint32_t k, const lw_val *v) {
  const lw_leaf *lv;
  uint32_t n = lw_leaves(L, v->type, &lv);
  for (uint32_t i = 0; i < n; i++) {
    uint32_t w = v->words[lv[i].word];
    pl_kernel_arg(L->p, k, w, (ac_scalar)lv[i].sc, lv[i].rank > 0);
    for (uint32_t d = 0; d < lv[i].rank; d++)
      pl_kernel_arg(L->p, k, v->words[lv[i].word + 1 + d], AC_I64, false);
  }
}

/* GPU: the user's PTX, launched by the plan. */
static void ptx_launch(lw *L, ir_ref at, uint32_t fi, const lw_val *args, const lw_val *out) {
  const ir_func *fn = &L->m->funcs[fi];
  const char *name = ir_sym_str(L->ctx, fn->name);
  if (!fn->kptx) {
    cg_error(L->M, AC_ERR_UNSUPPORTED, at,
             "extern kernel %s has no PTX, so it cannot run on the GPU (give it a 'ptx' clause)",
             name);
    return;
  }
  lw_val threads;
  if (!lw_closed_expr(L, fn->nparams, args, fn->kthreads, &threads))
    return;
  size_t len = 0;
  char *ptx = kernel_ptx(L, fn, at, &len);
  if (!ptx)
    return;
  const char *entry = ir_sym_str(L->ctx, fn->kentry ? fn->kentry : fn->name);
  uint32_t k = pl_kernel_add_extern(L->p, entry, ptx, len, fn->kblock);
  ac_free(L->ctx, ptx);
  for (uint32_t i = 0; i < fn->nparams; i++)
    ptx_args(L, k, &args[i]);
  ptx_args(L, k, out);
  pl_launch(L->p, k, lw_x_word(L, threads.words[0]), PL_AUTO);
  if (L->p->oom)
    cg_error(L->M, AC_ERR_NOMEM, at, "out of memory");
}

bool lw_extern_kernel(lw *L, ir_ref at, uint32_t fi, const lw_val *args, lw_val *out) {
  const ir_func *fn = &L->m->funcs[fi];
  uint32_t *ext = cg_new(L->M, (fn->nkext + 1) * sizeof *ext);
  for (uint32_t j = 0; j < fn->nkext; j++) {
    lw_val e;
    if (!lw_closed_expr(L, fn->nparams, args, ir_kernel_extent(L->m, fn, j), &e))
      return false;
    ext[j] = lw_x_word(L, e.words[0]);
  }
  lw_fresh(L, fn->result, out);
  const lw_leaf *lv;
  uint32_t n = lw_leaves(L, fn->result, &lv);
  uint32_t site = cg_site(L->M, at, "negative extent %lld"); /* the runtime's alloc message */
  for (uint32_t i = 0, j = 0; i < n; j += lv[i].rank, i++)
    pl_alloc(L->p, out->words[lv[i].word], (ac_scalar)lv[i].sc, lv[i].rank, ext + j, site);
  if (L->M->target == CG_TARGET_NVPTX)
    ptx_launch(L, at, fi, args, out);
  else
    host_launch(L, at, fi, args, out);
  return L->M->st == AC_OK;
}
