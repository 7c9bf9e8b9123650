/* lib/api/compile.c: the CPU compile pipeline and the compile cache.
 *
 * Pipeline, for function fn of module m on a CPU runtime:
 *
 *   pl_create ─► cg_module_init ─► nat_prepare ─► lw_function ─► pl_finish
 *   (empty plan)  (LLVM module)    (host triple,   (plan + kernels) (structure
 *                                   data layout)                     checked)
 *        ─► nat_compile (O3 for the host CPU, added to the JIT) ─► kernel addresses
 *
 * The result is a compiled entry (function_impl.h: api_code): the plan and
 * the address of each of its kernels. pl_run interprets the plan on the
 * runtime's pool, calling the kernels.
 *
 * Cache (Accelerate's kernel cache keyed by a hash of the IR): code
 * generation and O3 cost milliseconds to seconds, and programs compile the
 * same function many times (once per module object, per tool run, per
 * thread), so the runtime keeps every entry it made and a second request
 * for an equal function generates nothing. The key is a text:
 *   - the target, and the host CPU name and features (code is optimised for
 *     them);
 *   - the function's name;
 *   - the canonical printed text of fn and of every function it reaches
 *     (ir_print_functions, in the order a walk from fn finds them): it
 *     fixes their IR, since printing is canonical and parses back to the
 *     same IR. Functions fn does not reach are not part of it, except that
 *     the printer keeps local names clear of every function name of the
 *     module: a clash may make equal functions miss the cache, which costs
 *     time, never correctness;
 *   - the source positions of every node fn and its callees reach, with the
 *     sharing of subtrees: the plan's error sites hold positions, and the
 *     printed text has none. The file name is not in the key: function.c
 *     rebuilds each runtime error against the caller's module;
 *   - the addresses of the extern functions reached: kernels call them
 *     directly.
 * The 64-bit FNV-1a hash of the key picks the candidates and the stored key
 * text rules out collisions. Entries live as long as the runtime: the JIT
 * cannot unload one function's code, and there are few of them (one per
 * distinct function compiled), so a list searched by hash is enough.
 * A function the printer cannot print is compiled without being cached.
 *
 * Thread safety: compiling interns names and types in the context (the
 * printer's fresh names, lowering's types), so it follows the context's
 * rule, one thread at a time, and the cache needs no lock of its own.
 * Entries are immutable once in the list; calls on any thread only read
 * them.
 */
#include "api/aot_impl.h"
#include "api/function_impl.h"
#include "lower/lower.h"
#include "passes/pass.h"
#include "runtime/kcache.h"
#include "runtime/simt_emu.h"
#include "target/nvptx.h"

#include <sys/stat.h>

#include <string.h>

/* ---- the key ---- */

static uint64_t fnv1a64(const char *s, size_t n) {
  uint64_t h = 14695981039346656037ull;
  for (size_t i = 0; i < n; i++) {
    h ^= (unsigned char)s[i];
    h *= 1099511628211ull;
  }
  return h;
}

/* Finds fn and every function it reaches (through CALL and FNREF), in
 * discovery order, into *fns (*nfns of them; the caller frees the array),
 * and appends to b the position of each node of their bodies in preorder; a
 * node met again (a shared subtree) is written as a back reference `^K` to
 * its first visit, so equal texts describe the same tree with the same
 * positions and the same sharing. Externs contribute their address. */
static bool key_walk(ac_module *m, uint32_t fn, uint32_t **fns, size_t *nfns, ir_buf *b) {
  ac_context *ctx = m->ctx;
  uint32_t *id = ac_alloc(ctx, m->nnodes * sizeof *id); /* preorder number, 0 = unseen */
  bool *seen_fn = ac_alloc(ctx, m->nfuncs * sizeof *seen_fn);
  uint32_t *order = ac_alloc(ctx, m->nfuncs * sizeof *order);
  ir_ref *stack = NULL;
  size_t sp = 0, cap = 0, n = 0;
  uint32_t next = 0;
  bool ok = id && seen_fn && order;
  if (ok) {
    memset(id, 0, m->nnodes * sizeof *id);
    memset(seen_fn, 0, m->nfuncs * sizeof *seen_fn);
    seen_fn[fn] = true;
    order[n++] = fn;
  }
  for (size_t k = 0; ok && k < n; k++) {
    const ir_func *f = &m->funcs[order[k]];
    ir_buf_printf(b, "\nfn %s %u:%u", ir_sym_str(ctx, f->name), f->loc.line, f->loc.col);
    if (f->is_extern) {
      uintptr_t addr = 0;
      _Static_assert(sizeof addr >= sizeof f->extern_addr, "function pointers do not fit");
      memcpy(&addr, &f->extern_addr, sizeof f->extern_addr);
      ir_buf_printf(b, " extern %#llx", (unsigned long long)addr);
      continue;
    }
    if (f->body == IR_NONE || f->body >= m->nnodes)
      continue;
    ok = ac_grow(ctx, (void **)&stack, &cap, 1, sizeof *stack);
    if (ok)
      stack[sp++] = f->body;
    while (ok && sp > 0) {
      ir_ref r = stack[--sp];
      if (r == IR_NONE || r >= m->nnodes) {
        ir_buf_puts(b, " -");
        continue;
      }
      if (id[r]) {
        ir_buf_printf(b, " ^%u", id[r]);
        continue;
      }
      id[r] = ++next;
      const ir_node *nd = ir_node_get(m, r);
      ir_buf_printf(b, " %u:%u", nd->loc.line, nd->loc.col);
      if ((nd->op == IR_CALL || nd->op == IR_FNREF) && nd->attr >= 0 &&
          (uint64_t)nd->attr < m->nfuncs && !seen_fn[nd->attr]) {
        seen_fn[nd->attr] = true;
        order[n++] = (uint32_t)nd->attr; /* each function at most once: fits */
      }
      ok = ac_grow(ctx, (void **)&stack, &cap, sp + nd->nkids, sizeof *stack);
      /* children pushed last-first, so they are visited in order */
      for (uint32_t i = nd->nkids; ok && i-- > 0;)
        stack[sp++] = ir_kid(m, r, i);
    }
  }
  ac_free(ctx, stack);
  ac_free(ctx, seen_fn);
  ac_free(ctx, id);
  if (!ok || b->oom) {
    ac_free(ctx, order);
    return false;
  }
  *fns = order;
  *nfns = n;
  return true;
}

/* Builds the key text of function fn of m for runtime rt into *key.
 * AC_ERR_INVALID when the functions cannot be printed (the caller then
 * compiles without caching), AC_ERR_NOMEM when memory runs out. */
static ac_status make_key(ac_runtime *rt, ac_module *m, uint32_t fn, char **key, size_t *len) {
  ac_context *ctx = m->ctx;
  *key = NULL;
  ir_buf pos, b;
  ir_buf_init(&pos, ctx);
  ir_buf_init(&b, ctx);
  uint32_t *fns = NULL;
  size_t nfns = 0;
  ac_status st = AC_OK;
  if (!key_walk(m, fn, &fns, &nfns, &pos)) {
    st = AC_ERR_NOMEM;
  } else {
    if (rt->backend == AC_BACKEND_GPU)
      ir_buf_printf(&b, "target gpu sm_%u driver %d\n", rt->sm, rt->driver);
    else
      ir_buf_printf(&b, "target %s\nhost %s %s\n", ac_backend_name(rt->backend),
                    nat_cpu_name(rt->jit), nat_cpu_features(rt->jit));
    ir_buf_printf(&b, "passes %s\n", rt->passes ? rt->passes : "");
    if (rt->profile)
      ir_buf_puts(&b, "profile\n");
    ir_buf_printf(&b, "fn %s\ntext\n", ir_sym_str(ctx, m->funcs[fn].name));
    ac_error *e = NULL;
    st = ir_print_functions(m, fns, nfns, &b, &e);
    if (st != AC_OK && st != AC_ERR_NOMEM)
      st = AC_ERR_INVALID; /* unprintable: compiled, not cached */
    ac_error_destroy(e);
    ir_buf_puts(&b, "positions");
    ir_buf_puts(&b, ir_buf_cstr(&pos));
    if (st == AC_OK && (b.oom || pos.oom))
      st = AC_ERR_NOMEM;
  }
  ac_free(ctx, fns);
  ir_buf_free(&pos);
  if (st == AC_OK) {
    *len = b.len;
    *key = ir_buf_take(&b);
    if (!*key)
      st = AC_ERR_NOMEM;
  }
  ir_buf_free(&b);
  return st;
}

/* ---- generating code ---- */

static void code_free(ac_runtime *rt, api_code *c) {
  if (!c)
    return;
  ac_context *ctx = rt->ctx;
  if (c->gkernels && c->plan) {
    if (rt->backend == AC_BACKEND_SIMT_EMU)
      for (uint32_t i = 0; i < c->plan->nkernels; i++)
        rt_emu_kernel_free(rt->gpu, c->gkernels[i]);
    else if (c->cmod)
      rt_cuda_module_free(rt->gpu, c->cmod); /* frees its kernels */
  }
  for (uint32_t i = 0; c->xmods && c->plan && i < c->plan->nkernels; i++)
    rt_cuda_module_free(rt->gpu, c->xmods[i]); /* NULL-safe */
  ac_free(ctx, c->xmods);
  pl_destroy(c->plan);
  ac_free(ctx, c->kernels);
  ac_free(ctx, c->gkernels);
  ac_free(ctx, c->key);
  ac_free(ctx, c);
}

void api_cache_free(ac_runtime *rt) {
  api_code *list = rt->cache;
  rt->cache = NULL;
  while (list) {
    api_code *next = list->next;
    code_free(rt, list);
    list = next;
  }
}

static cg_target target_of(ac_backend be) {
  return be == AC_BACKEND_GPU ? CG_TARGET_NVPTX
         : be == AC_BACKEND_SIMT_EMU ? CG_TARGET_SIMT
                                     : CG_TARGET_CPU;
}

/* Runs the pipeline up to an LLVM module holding every kernel of the plan:
 * *plan and *M are set up (the caller disposes of M, and destroys *plan on
 * failure). With a non-empty `passes`, the passes transform a copy of m,
 * returned in *opt (the caller destroys it after M: the kernels were
 * lowered from it), so the caller's module stays as written. */
/* Lowers function fn of M's module into M with plan `plan` (M->plan from
 * now on): its kernels join those already in M. */
static ac_status api_lower(cg_module *M, uint32_t fn, pl_plan *plan, ac_error **err) {
  M->plan = plan;
  ac_status st = lw_function(M, fn, err);
  if (st == AC_OK && M->st != AC_OK) {
    /* an error recorded in the module but not returned: report it */
    st = M->st;
    ir_report(err, M->err, st);
    M->err = NULL;
  }
  if (st == AC_OK && !plan->finished) /* lowering usually finishes it itself */
    st = pl_finish(plan, err);
  return st;
}

ac_status api_generate(nat_jit *jit, cg_target target, ac_module *m, uint32_t fn,
                       const char *passes, unsigned flags, pl_plan **plan, cg_module *M,
                       ac_module **opt, ac_error **err) {
  ac_context *ctx = m->ctx;
  memset(M, 0, sizeof *M);
  *opt = NULL;
  if (passes && passes[0]) {
    if (!(*opt = ir_module_clone(m)))
      return ir_report(err, NULL, AC_ERR_NOMEM);
    ps_options o;
    memset(&o, 0, sizeof o);
    o.target = target == CG_TARGET_CPU ? PS_TARGET_CPU : PS_TARGET_GPU;
    /* sequentialise's warnings reach the context's handler for GPU code,
     * where a sequential loop in each thread is slow; on the CPU it is how
     * every element of an element-wise kernel runs (and without a
     * handler no one would see them) */
    if (target != CG_TARGET_CPU && ir_ctx_warns(ctx)) {
      o.warn = ps_warn_context;
      o.entry = flags & API_GEN_ALL_WARNINGS ? 0 : fn + 1;
    }
    ac_status st = ps_run_pipeline(*opt, passes, &o, NULL, err);
    if (st != AC_OK)
      return st;
    m = *opt;
  }
  *plan = pl_create(ctx, ir_sym_str(ctx, m->funcs[fn].name), m->name);
  if (!*plan)
    return ir_report(err, NULL, AC_ERR_NOMEM);
  ac_status st = cg_module_init(M, m, *plan, target, err);
  if (st != AC_OK)
    return st;
  M->externs_by_name = (flags & API_GEN_EXTERNS_BY_NAME) != 0;
  M->profile = (flags & API_GEN_PROFILE) != 0 && target == CG_TARGET_SIMT;
  if (target == CG_TARGET_NVPTX) {
    if ((st = nv_prepare(M, err)) != AC_OK)
      return st;
  } else {
    nat_prepare(jit, M);
  }
  return api_lower(M, fn, *plan, err);
}

/* The disk cache key of a GPU module: its LLVM IR before optimisation and
 * everything else that decides the PTX (runtime/kcache.h). libdevice is
 * named by path, size and modification time rather than hashed whole
 * (half a megabyte per compile). */
static char *ptx_key(ac_context *ctx, cg_module *M, unsigned sm, int driver, size_t *len) {
  ir_buf b;
  ir_buf_init(&b, ctx);
  const char *ld = nv_libdevice_path();
  struct stat sb;
  if (ld && stat(ld, &sb) != 0)
    memset(&sb, 0, sizeof sb);
  unsigned lmaj, lmin, lpatch;
  LLVMGetVersion(&lmaj, &lmin, &lpatch);
  ir_buf_printf(&b, "arrayc %s llvm %u.%u.%u ptx sm_%u isa %u libdevice %s %lld %lld\n",
                ARRAYC_BUILD_ID, lmaj, lmin, lpatch, sm,
                nv_ptx_version(sm, driver), ld ? ld : "-", ld ? (long long)sb.st_size : 0LL,
                ld ? (long long)sb.st_mtime : 0LL);
  char *ir = LLVMPrintModuleToString(M->mod);
  ir_buf_puts(&b, ir ? ir : "");
  LLVMDisposeMessage(ir);
  if (b.oom || !ir) {
    ir_buf_free(&b);
    return NULL;
  }
  *len = b.len;
  return ir_buf_take(&b);
}

/* PTX for M (consumed): from the disk cache, or emitted and stored. */
static ac_status ptx_of(ac_context *ctx, cg_module *M, unsigned sm, int driver, char **ptx,
                        ac_error **err) {
  size_t keylen = 0, len = 0;
  char *key = ptx_key(ctx, M, sm, driver, &keylen);
  void *hit = NULL;
  if (key && rt_kcache_get(ctx, key, keylen, &hit, &len)) {
    ac_free(ctx, key);
    *ptx = hit;
    return AC_OK;
  }
  ac_status st = nv_emit(M, sm, driver, ptx, &len, NULL, err);
  if (st == AC_OK && key)
    rt_kcache_put(ctx, key, keylen, *ptx, len);
  ac_free(ctx, key);
  return st;
}

/* Host addresses of the kernels of M (CPU and SIMT emulator: the JIT). */
static ac_status jit_kernels(ac_runtime *rt, cg_module *M, const char **symbols, uint32_t n,
                             void **addrs, ac_error **err) {
  for (uint32_t i = 0; i < n; i++)
    addrs[i] = NULL;
  /* a plan without kernels (it only moves words) needs no JIT work */
  ac_status st = n > 0 ? nat_compile(rt->jit, M, symbols, n, addrs, err) : AC_OK;
  for (uint32_t i = 0; st == AC_OK && i < n; i++)
    if (!addrs[i])
      st = api_fail(rt->ctx, err, AC_ERR_INTERNAL, "the JIT has no kernel '%s'", symbols[i]);
  return st;
}

/* GPU: loads the plan's kernels into c->gkernels (indexed by plan kernel):
 * arrayc's from the PTX of M as one module (c->cmod), each extern kernel
 * from its own PTX as a module of its own (c->xmods). symbols[] has room
 * for the plan's kernel symbols. */
static ac_status gpu_kernels(ac_runtime *rt, api_code *c, cg_module *M, const char **symbols,
                             ac_error **err) {
  ac_context *ctx = rt->ctx;
  const pl_plan *p = c->plan;
  uint32_t n = p->nkernels, nown = 0;
  bool any_extern = false;
  /* arrayc's kernels in plan order, without the extern ones */
  for (uint32_t i = 0; i < n; i++) {
    if (p->kernels[i].ptx)
      any_extern = true;
    else
      symbols[nown++] = p->kernels[i].symbol;
  }
  ac_status st = AC_OK;
  if (nown > 0) {
    rt_gkernel **own = ac_alloc(ctx, (size_t)nown * sizeof *own);
    char *ptx = NULL;
    if (!own)
      st = ir_report(err, NULL, AC_ERR_NOMEM);
    else if ((st = ptx_of(ctx, M, rt->sm, rt->driver, &ptx, err)) == AC_OK)
      st = rt_cuda_load(rt->gpu, ptx, symbols, nown, &c->cmod, own, err);
    for (uint32_t i = 0, j = 0; st == AC_OK && i < n; i++)
      if (!p->kernels[i].ptx)
        c->gkernels[i] = own[j++];
    ac_free(ctx, ptx);
    ac_free(ctx, own);
  }
  if (st == AC_OK && any_extern) {
    c->xmods = ac_alloc(ctx, (size_t)n * sizeof *c->xmods);
    if (!c->xmods)
      return ir_report(err, NULL, AC_ERR_NOMEM);
    memset(c->xmods, 0, (size_t)n * sizeof *c->xmods);
  }
  for (uint32_t i = 0; st == AC_OK && i < n; i++)
    if (p->kernels[i].ptx)
      st = rt_cuda_load_extern(rt->gpu, &p->kernels[i], &c->xmods[i], &c->gkernels[i], err);
  return st;
}

/* Generates and compiles fn for rt's backend: a new entry (not yet in the
 * cache). */
static ac_status compile_entry(ac_runtime *rt, ac_module *m, uint32_t fn, api_code **out,
                               ac_error **err) {
  ac_context *ctx = m->ctx;
  *out = NULL;
  api_code *c = ac_alloc(ctx, sizeof *c);
  if (!c)
    return ir_report(err, NULL, AC_ERR_NOMEM);
  memset(c, 0, sizeof *c);
  cg_module M;
  ac_module *opt = NULL;
  ac_status st = api_generate(rt->jit, target_of(rt->backend), m, fn, rt->passes,
                              rt->profile ? API_GEN_PROFILE : 0, &c->plan, &M, &opt, err);
  uint32_t n = c->plan ? c->plan->nkernels : 0;
  const char **symbols = NULL;
  void **addrs = NULL;
  bool gpu = rt->backend == AC_BACKEND_GPU || rt->backend == AC_BACKEND_SIMT_EMU;
  if (st == AC_OK) {
    symbols = ac_alloc(ctx, (n + 1) * sizeof *symbols);
    addrs = ac_alloc(ctx, (n + 1) * sizeof *addrs);
    if (gpu) {
      c->gkernels = ac_alloc(ctx, (n + 1) * sizeof *c->gkernels);
      if (c->gkernels)
        memset(c->gkernels, 0, (n + 1) * sizeof *c->gkernels);
    } else {
      c->kernels = ac_alloc(ctx, (n + 1) * sizeof *c->kernels);
    }
    if (!symbols || !addrs || !(gpu ? (void *)c->gkernels : (void *)c->kernels))
      st = ir_report(err, NULL, AC_ERR_NOMEM);
  }
  for (uint32_t i = 0; st == AC_OK && i < n; i++)
    symbols[i] = c->plan->kernels[i].symbol;
  if (st == AC_OK && rt->backend == AC_BACKEND_GPU) {
    st = gpu_kernels(rt, c, &M, symbols, err);
  } else if (st == AC_OK) {
    /* extern kernels are PTX: only the CUDA device runs them (lowering
     * emits them for the NVPTX target alone) */
    for (uint32_t i = 0; st == AC_OK && i < n; i++)
      if (c->plan->kernels[i].ptx)
        st = api_fail(ctx, err, AC_ERR_INTERNAL,
                      "function '%s': extern kernel k%u (%s) in a plan for the %s backend",
                      c->plan->name, i, c->plan->kernels[i].symbol, ac_backend_name(rt->backend));
  }
  if (st == AC_OK && rt->backend != AC_BACKEND_GPU) {
    st = jit_kernels(rt, &M, symbols, n, addrs, err);
    for (uint32_t i = 0; st == AC_OK && i < n; i++) {
      /* the JIT gives object pointers; POSIX lets them hold functions */
      if (!gpu) {
        _Static_assert(sizeof addrs[i] == sizeof c->kernels[i], "function pointer size");
        memcpy(&c->kernels[i], &addrs[i], sizeof c->kernels[i]);
        continue;
      }
      rt_gkernel_fn kf;
      _Static_assert(sizeof addrs[i] == sizeof kf, "function pointer size");
      memcpy(&kf, &addrs[i], sizeof kf);
      const pl_kernel *k = &c->plan->kernels[i];
      st = rt_emu_kernel_profiled(rt->gpu, kf, (size_t)k->smem, k->block, M.prof_sites,
                                  M.prof_nsites, &c->gkernels[i], err);
    }
  }
  cg_module_dispose(&M);
  ac_module_destroy(opt);
  ac_free(ctx, (void *)symbols);
  ac_free(ctx, addrs);
  if (st != AC_OK) {
    code_free(rt, c);
    return st;
  }
  *out = c;
  return AC_OK;
}

ac_status api_compile(ac_runtime *rt, ac_module *m, uint32_t fn, const api_code **out,
                      ac_error **err) {
  ac_context *ctx = m->ctx;
  *out = NULL;
  char *key = NULL;
  size_t keylen = 0;
  ac_status st = make_key(rt, m, fn, &key, &keylen);
  if (st == AC_ERR_NOMEM)
    return ir_report(err, NULL, st);
  uint64_t hash = key ? fnv1a64(key, keylen) : 0;

  api_code *c = NULL;
  for (api_code *e = key ? rt->cache : NULL; e && !c; e = e->next)
    if (e->hash == hash && e->keylen == keylen && memcmp(e->key, key, keylen) == 0)
      c = e;
  st = AC_OK;
  if (!c) {
    st = compile_entry(rt, m, fn, &c, err);
    if (st == AC_OK) {
      atomic_fetch_add(&rt->ncompiled, 1);
      c->hash = hash;
      c->key = key;
      c->keylen = keylen;
      key = NULL;
      /* uncached (unprintable module) entries are kept too: functions
       * borrow them, and they live as long as the runtime like the rest;
       * with no key they never match a lookup */
      c->next = rt->cache;
      rt->cache = c;
    }
  }
  ac_free(ctx, key);
  if (st == AC_OK)
    *out = c;
  return st;
}

ac_status api_print_llvm(ac_runtime *rt, ac_module *m, uint32_t fn, char **out, ac_error **err) {
  ac_context *ctx = m->ctx;
  *out = NULL;
  pl_plan *plan = NULL;
  cg_module M;
  /* generation touches only its own plan and module; the JIT serialises
   * the optimiser itself */
  ac_module *opt = NULL;
  ac_status st = api_generate(rt->jit, target_of(rt->backend), m, fn, rt->passes,
                              rt->profile ? API_GEN_PROFILE : 0, &plan, &M, &opt, err);
  if (st == AC_OK && rt->backend == AC_BACKEND_GPU) {
    char *ptx = NULL, *ir = NULL;
    size_t len;
    st = nv_emit(&M, rt->sm, rt->driver, &ptx, &len, &ir, err);
    ac_free(ctx, ptx);
    *out = ir;
  } else if (st == AC_OK) {
    st = nat_optimise(rt->jit, &M, err);
    if (st == AC_OK) {
      char *text = LLVMPrintModuleToString(M.mod);
      *out = text ? ac_strdup(ctx, text) : NULL;
      LLVMDisposeMessage(text);
      if (!*out)
        st = ir_report(err, NULL, AC_ERR_NOMEM);
    }
  }
  cg_module_dispose(&M);
  ac_module_destroy(opt);
  pl_destroy(plan);
  return st;
}

ac_status api_emit_ptx(ac_module *m, const uint32_t *fns, size_t nfns, const char *passes,
                       unsigned sm, bool llvm, char **out, ac_error **err) {
  *out = NULL;
  if (nfns == 0)
    return ir_report(err, NULL, AC_ERR_INVALID);
  pl_plan **plans = ac_alloc(m->ctx, nfns * sizeof *plans);
  if (!plans)
    return ir_report(err, NULL, AC_ERR_NOMEM);
  memset(plans, 0, nfns * sizeof *plans);
  cg_module M;
  size_t len;
  char *ptx = NULL, *ir = NULL;
  ac_module *opt = NULL;
  /* the first function makes the module (and runs the passes over all of
   * them); the others' kernels join it, numbered on from its own, so every
   * kernel has a name of its own in the one PTX module */
  ac_status st = api_generate(NULL, CG_TARGET_NVPTX, m, fns[0], passes,
                              nfns > 1 ? API_GEN_ALL_WARNINGS : 0, &plans[0], &M, &opt, err);
  const ac_module *lm = opt ? opt : m;
  for (size_t i = 1; i < nfns && st == AC_OK; i++) {
    if (!(plans[i] = pl_create(m->ctx, ir_sym_str(m->ctx, lm->funcs[fns[i]].name), lm->name)))
      st = ir_report(err, NULL, AC_ERR_NOMEM);
    else
      st = api_lower(&M, fns[i], plans[i], err);
  }
  if (st == AC_OK)
    st = nv_emit(&M, sm, 0, &ptx, &len, llvm ? &ir : NULL, err);
  *out = llvm ? ir : ptx;
  ac_free(m->ctx, llvm ? ptx : ir);
  cg_module_dispose(&M);
  ac_module_destroy(opt);
  for (size_t i = 0; i < nfns; i++)
    pl_destroy(plans[i]);
  ac_free(m->ctx, plans);
  return st;
}
