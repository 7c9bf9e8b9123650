/* runtime/plan.c: building kernel plans and checking that they are well formed.
 *
 * Lowering builds a plan with the append-only builders below (growable
 * arrays through the context allocator; an allocation failure sets
 * plan->oom and the builder returns a harmless index, so lowering needs no
 * error handling per call) and seals it with pl_finish, which runs
 * pl_validate and links the blocks (`match`). pl_validate is written for
 * untrusted input as much as for lowering's output: pl_parse runs the same
 * function on plans read from text, so the executor (plan_exec.c) can rely
 * on everything it checks, whatever the plan's origin. It is one linear
 * pass plus a stack of open blocks (each entry remembers the innermost
 * enclosing `while`, so `break unless` finds its loop in O(1)).
 */
#include "runtime/plan_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- errors ---- */

ac_error *pl_error(ac_context *ctx, ac_status st, const char *file, const char *src,
                   size_t srclen, uint32_t line, uint32_t col, const char *fmt, ...) {
  /* ir_error takes the file name and source text from a module; a plan has
   * no module, so lend it a blank one carrying just those two. */
  ac_module m;
  memset(&m, 0, sizeof m);
  m.ctx = ctx;
  m.name = (char *)(uintptr_t)file;
  m.src = (char *)(uintptr_t)src;
  m.srclen = srclen;
  va_list ap;
  va_start(ap, fmt);
  ac_error *e = ir_verror(ctx, st, file ? &m : NULL, (ir_loc){line, col}, fmt, ap);
  va_end(ap);
  return e;
}

/* ---- building ---- */

pl_plan *pl_create(ac_context *ctx, const char *name, const char *file) {
  pl_plan *p = ac_alloc(ctx, sizeof *p);
  if (!p)
    return NULL;
  memset(p, 0, sizeof *p);
  p->ctx = ctx;
  p->name = ac_strdup(ctx, name ? name : "");
  p->file = file ? ac_strdup(ctx, file) : NULL;
  if (!p->name || (file && !p->file)) {
    pl_destroy(p);
    return NULL;
  }
  return p;
}

void pl_destroy(pl_plan *p) {
  if (!p)
    return;
  ac_context *ctx = p->ctx;
  for (uint32_t i = 0; i < p->nsites; i++)
    ac_free(ctx, p->sites[i].fmt);
  for (uint32_t i = 0; i < p->nkernels; i++) {
    ac_free(ctx, p->kernels[i].kind);
    ac_free(ctx, p->kernels[i].symbol);
    ac_free(ctx, p->kernels[i].uses);
    ac_free(ctx, p->kernels[i].writes);
    ac_free(ctx, p->kernels[i].ptx);
    ac_free(ctx, p->kernels[i].kargs);
  }
  ac_free(ctx, p->name);
  ac_free(ctx, p->file);
  ac_free(ctx, p->params);
  ac_free(ctx, p->results);
  ac_free(ctx, p->insts);
  ac_free(ctx, p->exprs);
  ac_free(ctx, p->args);
  ac_free(ctx, p->sites);
  ac_free(ctx, p->kernels);
  ac_free(ctx, p);
}

/* Makes room for one more element of a uint32-counted array; false (with
 * p->oom) when memory or the index space runs out. */
static bool pl_grow(pl_plan *p, void **vec, uint32_t *cap, uint32_t n, size_t size) {
  p->finished = false;
  if (p->oom || n >= UINT32_MAX - 1) {
    p->oom = true;
    return false;
  }
  size_t c = *cap;
  if (!ac_grow(p->ctx, vec, &c, (size_t)n + 1, size)) {
    p->oom = true;
    return false;
  }
  *cap = c > UINT32_MAX ? UINT32_MAX : (uint32_t)c;
  return true;
}

#define PL_PUSH(p, arr, n, cap) pl_grow(p, (void **)&(p)->arr, &(p)->cap, (p)->n, sizeof *(p)->arr)

uint32_t pl_slots(pl_plan *p, uint32_t n) {
  p->finished = false;
  if ((uint64_t)p->nslots + n >= UINT32_MAX) {
    p->oom = true;
    return 0;
  }
  uint32_t first = p->nslots;
  p->nslots += n;
  return first;
}

static uint32_t pl_expr_push(pl_plan *p, pl_expr x) {
  if (!PL_PUSH(p, exprs, nexprs, capexprs))
    return PL_AUTO;
  p->exprs[p->nexprs] = x;
  return p->nexprs++;
}

uint32_t pl_x_const(pl_plan *p, int64_t k) {
  return pl_expr_push(p, (pl_expr){.op = PX_CONST, .k = k});
}

uint32_t pl_x_word(pl_plan *p, uint32_t slot) {
  return pl_expr_push(p, (pl_expr){.op = PX_WORD, .a = slot});
}

uint32_t pl_x_bin(pl_plan *p, pl_xop op, uint32_t a, uint32_t b) {
  return pl_expr_push(p, (pl_expr){.op = (uint8_t)op, .a = a, .b = b});
}

uint32_t pl_site_add(pl_plan *p, uint32_t line, uint32_t col, const char *fmt) {
  char *s = ac_strdup(p->ctx, fmt ? fmt : "");
  if (!s || !PL_PUSH(p, sites, nsites, capsites)) {
    p->oom = true;
    ac_free(p->ctx, s);
    return 0;
  }
  p->sites[p->nsites] = (pl_site){.line = line, .col = col, .fmt = s};
  return p->nsites++;
}

uint32_t pl_kernel_add(pl_plan *p, const char *kind, const char *symbol, int64_t grain) {
  char *k = ac_strdup(p->ctx, kind ? kind : "");
  char *s = ac_strdup(p->ctx, symbol ? symbol : "");
  if (!k || !s || !PL_PUSH(p, kernels, nkernels, capkernels)) {
    p->oom = true;
    ac_free(p->ctx, k);
    ac_free(p->ctx, s);
    return 0;
  }
  p->kernels[p->nkernels] = (pl_kernel){.kind = k, .symbol = s, .grain = grain};
  return p->nkernels++;
}

uint32_t pl_kernel_add_extern(pl_plan *p, const char *entry, const char *ptx, size_t len,
                              unsigned block) {
  char *text = ac_strndup(p->ctx, ptx ? ptx : "", ptx ? len : 0);
  uint32_t k = text ? pl_kernel_add(p, "extern", entry, 1) : 0;
  if (!text || p->oom) {
    p->oom = true;
    ac_free(p->ctx, text);
    return 0;
  }
  p->kernels[k].ptx = text;
  p->kernels[k].block = block; /* pl_finish refuses one outside 1..1024 */
  return k;
}

/* Inserts slot into the sorted, unique list (*list, *n); false on OOM. */
static bool pl_sorted_insert(pl_plan *p, uint32_t **list, uint32_t *n, uint32_t slot) {
  /* binary search for the insertion point */
  uint32_t lo = 0, hi = *n;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if ((*list)[mid] < slot)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo < *n && (*list)[lo] == slot)
    return true;
  /* kept exactly sized (there is no capacity field): kernels use few words */
  uint32_t *nu =
      *n < UINT32_MAX - 1 ? ac_realloc(p->ctx, *list, ((size_t)*n + 1) * sizeof **list) : NULL;
  if (!nu)
    return false;
  *list = nu;
  memmove(nu + lo + 1, nu + lo, (*n - lo) * sizeof *nu);
  nu[lo] = slot;
  (*n)++;
  return true;
}

static pl_kernel *pl_kernel_at(pl_plan *p, uint32_t kernel) {
  p->finished = false;
  if (kernel >= p->nkernels) {
    p->bad = true;
    return NULL;
  }
  return &p->kernels[kernel];
}

void pl_kernel_use(pl_plan *p, uint32_t kernel, uint32_t slot) {
  pl_kernel *k = pl_kernel_at(p, kernel);
  if (k && !pl_sorted_insert(p, &k->uses, &k->nuses, slot))
    p->oom = true;
}

void pl_kernel_write(pl_plan *p, uint32_t kernel, uint32_t slot) {
  pl_kernel *k = pl_kernel_at(p, kernel);
  if (k && (!pl_sorted_insert(p, &k->uses, &k->nuses, slot) ||
            !pl_sorted_insert(p, &k->writes, &k->nwrites, slot)))
    p->oom = true;
}

void pl_kernel_arg(pl_plan *p, uint32_t kernel, uint32_t word, ac_scalar sc, bool ptr) {
  pl_kernel *k = pl_kernel_at(p, kernel);
  if (!k)
    return;
  /* exactly sized, like uses: extern kernels have few parameters */
  pl_karg *nu = k->nkargs < UINT32_MAX - 1
                    ? ac_realloc(p->ctx, k->kargs, ((size_t)k->nkargs + 1) * sizeof *nu)
                    : NULL;
  if (!nu || !pl_sorted_insert(p, &k->uses, &k->nuses, word)) {
    if (nu)
      k->kargs = nu;
    p->oom = true;
    return;
  }
  k->kargs = nu;
  k->kargs[k->nkargs++] = (pl_karg){.word = word, .sc = ptr ? 0 : (uint8_t)sc, .ptr = ptr};
}

static void pl_leaf_push(pl_plan *p, bool result, uint32_t slot, ac_scalar sc, uint32_t rank) {
  pl_leaf l = {.slot = slot, .sc = (uint8_t)sc, .rank = rank};
  if (result) {
    if (PL_PUSH(p, results, nresults, capresults))
      p->results[p->nresults++] = l;
  } else if (PL_PUSH(p, params, nparams, capparams)) {
    p->params[p->nparams++] = l;
  }
}

void pl_param(pl_plan *p, uint32_t slot, ac_scalar sc, uint32_t rank) {
  pl_leaf_push(p, false, slot, sc, rank);
}

void pl_result(pl_plan *p, uint32_t slot, ac_scalar sc, uint32_t rank) {
  pl_leaf_push(p, true, slot, sc, rank);
}

static uint32_t pl_inst_push(pl_plan *p, pl_inst in) {
  if (!PL_PUSH(p, insts, ninsts, capinsts))
    return PL_AUTO;
  p->insts[p->ninsts] = in;
  return p->ninsts++;
}

/* Appends n expression indices to args; returns the first index. */
static uint32_t pl_args_push(pl_plan *p, uint32_t n, const uint32_t *xs) {
  uint32_t first = p->nargs;
  for (uint32_t i = 0; i < n; i++) {
    if (!PL_PUSH(p, args, nargs, capargs))
      return PL_AUTO;
    p->args[p->nargs++] = xs[i];
  }
  return first;
}

uint32_t pl_set(pl_plan *p, uint32_t slot, uint32_t expr) {
  return pl_inst_push(p, (pl_inst){.op = PI_SET, .a = slot, .e = expr});
}

uint32_t pl_alloc(pl_plan *p, uint32_t slot, ac_scalar sc, uint32_t rank, const uint32_t *extents,
                  uint32_t site) {
  uint32_t e = pl_args_push(p, rank, extents);
  return pl_inst_push(p, (pl_inst){.op = PI_ALLOC, .sc = (uint8_t)sc, .rank = rank, .a = slot,
                                   .k = site, .e = e});
}

void pl_move_last_to_front(pl_plan *p, uint32_t n) {
  if (n == 0 || n > p->ninsts)
    return;
  pl_inst *tmp = ac_alloc(p->ctx, n * sizeof *tmp);
  if (!tmp) {
    p->oom = true;
    return;
  }
  memcpy(tmp, p->insts + (p->ninsts - n), n * sizeof *tmp);
  memmove(p->insts + n, p->insts, (p->ninsts - n) * sizeof *tmp);
  memcpy(p->insts, tmp, n * sizeof *tmp);
  ac_free(p->ctx, tmp);
  p->finished = false;
}

uint32_t pl_view(pl_plan *p, uint32_t slot, uint32_t src, ac_scalar sc, uint32_t rank,
                 const uint32_t *extents) {
  uint32_t e = pl_args_push(p, rank, extents);
  return pl_inst_push(p, (pl_inst){.op = PI_VIEW, .sc = (uint8_t)sc, .rank = rank, .a = slot,
                                   .b = src, .e = e});
}

uint32_t pl_assign(pl_plan *p, uint32_t dst, uint32_t src, ac_scalar sc, uint32_t rank) {
  return pl_inst_push(
      p, (pl_inst){.op = PI_ASSIGN, .sc = (uint8_t)sc, .rank = rank, .a = dst, .b = src});
}

uint32_t pl_free(pl_plan *p, uint32_t slot) {
  return pl_inst_push(p, (pl_inst){.op = PI_FREE, .a = slot});
}

uint32_t pl_launch(pl_plan *p, uint32_t kernel, uint32_t n, uint32_t chunks) {
  return pl_launch_warps(p, kernel, n, chunks, PL_AUTO);
}

uint32_t pl_launch_warps(pl_plan *p, uint32_t kernel, uint32_t n, uint32_t chunks,
                         uint32_t warps) {
  return pl_inst_push(
      p, (pl_inst){.op = PI_LAUNCH, .k = kernel, .e = n, .e2 = chunks, .e3 = warps});
}

uint32_t pl_check(pl_plan *p, uint32_t cond, uint32_t site, uint32_t va, uint32_t vb) {
  /* Values come in pairs: a missing one of a pair is the constant 0, so the
   * instruction has either no values or two. */
  uint32_t e2 = PL_AUTO;
  if (va != PL_AUTO || vb != PL_AUTO) {
    uint32_t v[2] = {va != PL_AUTO ? va : pl_x_const(p, 0), vb != PL_AUTO ? vb : pl_x_const(p, 0)};
    e2 = pl_args_push(p, 2, v);
  }
  return pl_inst_push(
      p, (pl_inst){.op = PI_CHECK, .k = site, .e = cond, .e2 = e2, .rank = e2 == PL_AUTO ? 0 : 2});
}

uint32_t pl_check_n(pl_plan *p, uint32_t cond, uint32_t site, uint32_t n, const uint32_t *vals) {
  uint32_t e2 = n ? pl_args_push(p, n, vals) : PL_AUTO;
  return pl_inst_push(p, (pl_inst){.op = PI_CHECK, .k = site, .e = cond, .e2 = e2, .rank = n});
}

uint32_t pl_for(pl_plan *p, uint32_t slot, uint32_t lo, uint32_t hi) {
  return pl_inst_push(p, (pl_inst){.op = PI_FOR, .a = slot, .e = lo, .e2 = hi});
}

uint32_t pl_while(pl_plan *p) {
  return pl_inst_push(p, (pl_inst){.op = PI_WHILE});
}

uint32_t pl_break_unless(pl_plan *p, uint32_t slot) {
  return pl_inst_push(p, (pl_inst){.op = PI_BREAK_UNLESS, .a = slot});
}

uint32_t pl_if(pl_plan *p, uint32_t slot) {
  return pl_inst_push(p, (pl_inst){.op = PI_IF, .a = slot});
}

uint32_t pl_else(pl_plan *p) {
  return pl_inst_push(p, (pl_inst){.op = PI_ELSE});
}

uint32_t pl_end(pl_plan *p) {
  return pl_inst_push(p, (pl_inst){.op = PI_END});
}

size_t pl_site_format(char *buf, size_t size, const char *fmt, uint32_t n, const int64_t *vals) {
  size_t len = 0;
  uint32_t k = 0;
  for (const char *c = fmt; *c; c++) {
    char num[24];
    const char *piece = num;
    if (c[0] == '%' && c[1] == '%') {
      piece = "%";
      c++;
    } else if (c[0] == '%' && strncmp(c + 1, "lld", 3) == 0) {
      snprintf(num, sizeof num, "%lld", (long long)(k < n ? vals[k] : 0));
      k++;
      c += 3;
    } else {
      num[0] = *c;
      num[1] = 0;
    }
    for (; *piece; piece++, len++)
      if (len + 1 < size)
        buf[len] = *piece;
  }
  if (size)
    buf[len < size ? len : size - 1] = 0;
  return len;
}

/* ---- validation ---- */

bool pl_site_format_ok(const char *fmt) {
  int convs = 0;
  for (const char *s = fmt; *s; s++) {
    if (*s != '%')
      continue;
    if (s[1] == '%') {
      s++;
    } else if (strncmp(s + 1, "lld", 3) == 0) {
      if (++convs > RT_FAIL_VALS)
        return false;
      s += 3;
    } else {
      return false;
    }
  }
  return true;
}

bool pl_fail(pl_fault *f, pl_part part, uint32_t index, const char *fmt, ...) {
  f->part = part;
  f->index = index;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(f->msg, sizeof f->msg, fmt, ap);
  va_end(ap);
  return false;
}

/* The words of a leaf of rank r at `slot` (r + 1 of them for an array). */
static bool pl_leaf_fits(const pl_plan *p, uint32_t slot, uint32_t rank) {
  return (uint64_t)slot + (rank ? 1u + (uint64_t)rank : 1u) <= p->nslots;
}

static bool pl_check_leaf(const pl_plan *p, pl_fault *f, pl_part part, uint32_t i,
                          const pl_leaf *l) {
  if (l->sc >= AC_NUM_SCALARS)
    return pl_fail(f, part, i, "invalid scalar type %u", l->sc);
  if (l->rank > PL_MAX_RANK)
    return pl_fail(f, part, i, "rank %u is larger than %u", l->rank, PL_MAX_RANK);
  if (!pl_leaf_fits(p, l->slot, l->rank))
    return pl_fail(f, part, i, "leaf at %%%u does not fit in %u slots", l->slot, p->nslots);
  return true;
}

static bool pl_check_expr_ref(const pl_plan *p, pl_fault *f, uint32_t inst, uint32_t e) {
  if (e >= p->nexprs)
    return pl_fail(f, PP_INST, inst, "expression %u does not exist", e);
  return true;
}

/* args[first .. first+n) must exist and name expressions. */
static bool pl_check_args(const pl_plan *p, pl_fault *f, uint32_t inst, uint32_t first,
                          uint32_t n) {
  if ((uint64_t)first + n > p->nargs)
    return pl_fail(f, PP_INST, inst, "argument list %u..%u does not exist", first, first + n);
  for (uint32_t i = 0; i < n; i++)
    if (!pl_check_expr_ref(p, f, inst, p->args[first + i]))
      return false;
  return true;
}

static bool pl_check_exprs(const pl_plan *p, pl_fault *f, uint8_t *depth, uint32_t *size) {
  for (uint32_t i = 0; i < p->nexprs; i++) {
    const pl_expr *x = &p->exprs[i];
    depth[i] = 1;
    size[i] = 1;
    if (x->op > PX_CHUNKS)
      return pl_fail(f, PP_EXPR, i, "invalid expression operator %u", x->op);
    if (x->op == PX_WORD && x->a >= p->nslots)
      return pl_fail(f, PP_EXPR, i, "word %%%u is not below the %u slots", x->a, p->nslots);
    if (x->op == PX_CONST || x->op == PX_WORD)
      continue;
    /* Children come first: this makes every expression a finite tree. */
    if (x->a >= i || x->b >= i)
      return pl_fail(f, PP_EXPR, i, "operand of expression %u is not defined before it", i);
    uint8_t d = depth[x->a] > depth[x->b] ? depth[x->a] : depth[x->b];
    if (d >= PL_MAX_DEPTH)
      return pl_fail(f, PP_EXPR, i, "expression nested deeper than %u", PL_MAX_DEPTH);
    depth[i] = (uint8_t)(d + 1);
    /* Shared subexpressions are printed, compared and evaluated as trees:
     * bound the tree, not just the graph. */
    size[i] = 1 + size[x->a] + size[x->b];
    if (size[i] > PL_MAX_NODES)
      return pl_fail(f, PP_EXPR, i, "expression larger than %u nodes when written out",
                     PL_MAX_NODES);
  }
  return true;
}

/* An extern kernel (kind "extern", or PTX text): PTX, a block of 1..1024
 * threads, arguments inside the frame whose words are exactly its uses, no
 * writes and none of arrayc's GPU settings; GPU plans only. */
static bool pl_check_extern(const pl_plan *p, pl_fault *f, uint32_t i) {
  const pl_kernel *k = &p->kernels[i];
  if (!k->ptx)
    return pl_fail(f, PP_KERNEL, i, "extern kernel k%u has no PTX", i);
  if (strcmp(k->kind, "extern") != 0)
    return pl_fail(f, PP_KERNEL, i, "kernel k%u has PTX, but its kind is '%.40s', not 'extern'", i,
                   k->kind);
  if (!p->gpu)
    return pl_fail(f, PP_KERNEL, i, "extern kernel k%u in a CPU plan (only GPU plans have them)",
                   i);
  if (k->block < 1 || k->block > 1024)
    return pl_fail(f, PP_KERNEL, i, "extern kernel k%u: block %u is not between 1 and 1024", i,
                   k->block);
  if (k->smem || k->scratch_fixed || k->scratch_block || k->tmp)
    return pl_fail(f, PP_KERNEL, i, "extern kernel k%u has shared, scratch or temporary memory", i);
  if (k->nwrites)
    return pl_fail(f, PP_KERNEL, i,
                   "extern kernel k%u writes a word (it writes array elements only)", i);
  if (k->nkargs > PL_MAX_KARGS)
    return pl_fail(f, PP_KERNEL, i, "extern kernel k%u has %u arguments, more than %u", i,
                   k->nkargs, PL_MAX_KARGS);
  for (uint32_t a = 0; a < k->nkargs; a++) {
    const pl_karg *g = &k->kargs[a];
    if (g->word >= p->nslots)
      return pl_fail(f, PP_KERNEL, i, "extern kernel k%u: argument %u is %%%u, beyond the %u slots",
                     i, a, g->word, p->nslots);
    if (!g->ptr && g->sc >= AC_NUM_SCALARS)
      return pl_fail(f, PP_KERNEL, i, "extern kernel k%u: argument %u has invalid scalar type %u",
                     i, a, g->sc);
    /* uses is sorted: binary search */
    uint32_t lo = 0, hi = k->nuses;
    while (lo < hi) {
      uint32_t mid = lo + (hi - lo) / 2;
      if (k->uses[mid] < g->word)
        lo = mid + 1;
      else
        hi = mid;
    }
    if (lo == k->nuses || k->uses[lo] != g->word)
      return pl_fail(f, PP_KERNEL, i, "extern kernel k%u: argument %%%u is not among its uses", i,
                     g->word);
  }
  /* ... and every use is an argument (uses are unique, so counting the
   * distinct argument words is enough) */
  uint32_t distinct = 0;
  for (uint32_t a = 0; a < k->nkargs; a++) {
    bool seen = false;
    for (uint32_t b = 0; b < a && !seen; b++)
      seen = k->kargs[b].word == k->kargs[a].word;
    distinct += !seen;
  }
  if (distinct != k->nuses)
    return pl_fail(f, PP_KERNEL, i, "extern kernel k%u uses words that are not its arguments", i);
  return true;
}

static bool pl_check_kernels(const pl_plan *p, pl_fault *f) {
  for (uint32_t i = 0; i < p->nkernels; i++) {
    const pl_kernel *k = &p->kernels[i];
    if (!k->kind || !*k->kind)
      return pl_fail(f, PP_KERNEL, i, "kernel k%u has no kind", i);
    if (!k->symbol || !*k->symbol)
      return pl_fail(f, PP_KERNEL, i, "kernel k%u has no symbol", i);
    if (k->grain < 1)
      return pl_fail(f, PP_KERNEL, i, "kernel k%u has grain %lld (must be at least 1)", i,
                     (long long)k->grain);
    for (uint32_t u = 0; u < k->nuses; u++) {
      if (k->uses[u] >= p->nslots)
        return pl_fail(f, PP_KERNEL, i, "kernel k%u uses %%%u, beyond the %u slots", i,
                       k->uses[u], p->nslots);
      if (u && k->uses[u] <= k->uses[u - 1])
        return pl_fail(f, PP_KERNEL, i, "kernel k%u: uses are not ascending and unique", i);
    }
    for (uint32_t u = 0, j = 0; u < k->nwrites; u++) {
      if (u && k->writes[u] <= k->writes[u - 1])
        return pl_fail(f, PP_KERNEL, i, "kernel k%u: writes are not ascending and unique", i);
      while (j < k->nuses && k->uses[j] < k->writes[u])
        j++;
      if (j == k->nuses || k->uses[j] != k->writes[u])
        return pl_fail(f, PP_KERNEL, i, "kernel k%u writes %%%u, which it does not use", i,
                       k->writes[u]);
    }
    bool ext = k->ptx || strcmp(k->kind, "extern") == 0;
    if (ext && !pl_check_extern(p, f, i))
      return false;
    if (!ext && k->nkargs)
      return pl_fail(f, PP_KERNEL, i, "kernel k%u has arguments, but only extern kernels take them",
                     i);
    if (!p->gpu && (k->block || k->smem || k->scratch_fixed || k->scratch_block || k->tmp))
      return pl_fail(f, PP_KERNEL, i, "kernel k%u has GPU settings in a CPU plan", i);
    if (!ext && (k->block % 32 || k->block > 1024))
      return pl_fail(f, PP_KERNEL, i, "kernel k%u: block %u is not a multiple of 32 up to 1024",
                     i, k->block);
    if (k->smem > PL_MAX_SMEM || k->scratch_fixed > PL_MAX_SCRATCH ||
        k->scratch_block > PL_MAX_SCRATCH)
      return pl_fail(f, PP_KERNEL, i, "kernel k%u: shared or scratch memory too large", i);
    if (k->counters_fixed > k->scratch_fixed || k->counters_block > k->scratch_block)
      return pl_fail(f, PP_KERNEL, i, "kernel k%u: counters beyond its scratch", i);
  }
  return true;
}

/* An open block on the validation stack. */
typedef struct pl_open {
  uint32_t inst;     /* its FOR/WHILE/IF (or the ELSE once seen) */
  uint32_t opener;   /* the FOR/WHILE/IF */
  uint32_t inwhile;  /* innermost WHILE enclosing or being this block, or PL_AUTO */
} pl_open;

/* Operands of one instruction (not its block structure). */
static bool pl_check_inst(const pl_plan *p, pl_fault *f, uint32_t i) {
  const pl_inst *in = &p->insts[i];
  switch ((pl_iop)in->op) {
  case PI_SET:
  case PI_FREE:
  case PI_BREAK_UNLESS:
  case PI_IF:
  case PI_FOR:
    if (in->a >= p->nslots)
      return pl_fail(f, PP_INST, i, "word %%%u is not below the %u slots", in->a, p->nslots);
    if (in->op == PI_SET)
      return pl_check_expr_ref(p, f, i, in->e);
    if (in->op == PI_FOR)
      return pl_check_expr_ref(p, f, i, in->e) && pl_check_expr_ref(p, f, i, in->e2);
    return true;
  case PI_ALLOC:
  case PI_VIEW:
  case PI_ASSIGN:
    if (in->sc >= AC_NUM_SCALARS)
      return pl_fail(f, PP_INST, i, "invalid scalar type %u", in->sc);
    if (in->rank > PL_MAX_RANK || (in->op != PI_ASSIGN && in->rank == 0))
      return pl_fail(f, PP_INST, i, "invalid rank %u", in->rank);
    if (!pl_leaf_fits(p, in->a, in->rank))
      return pl_fail(f, PP_INST, i, "leaf at %%%u does not fit in %u slots", in->a, p->nslots);
    if (in->op == PI_ASSIGN) {
      if (!pl_leaf_fits(p, in->b, in->rank))
        return pl_fail(f, PP_INST, i, "leaf at %%%u does not fit in %u slots", in->b,
                       p->nslots);
      return true;
    }
    if (in->op == PI_VIEW && in->b >= p->nslots)
      return pl_fail(f, PP_INST, i, "word %%%u is not below the %u slots", in->b, p->nslots);
    if (in->op == PI_ALLOC && in->k != PL_AUTO && in->k >= p->nsites)
      return pl_fail(f, PP_INST, i, "site %u does not exist", in->k);
    if (in->flags & ~(in->op == PI_ALLOC ? PL_ALLOC_TRY | PL_ALLOC_KEEP : 0u))
      return pl_fail(f, PP_INST, i, "invalid flags %u", in->flags);
    return pl_check_args(p, f, i, in->e, in->rank);
  case PI_LAUNCH:
    if (in->k >= p->nkernels)
      return pl_fail(f, PP_INST, i, "kernel k%u does not exist", in->k);
    if (p->kernels[in->k].ptx && in->e2 != PL_AUTO)
      return pl_fail(f, PP_INST, i,
                     "launch of extern kernel k%u gives chunks (extern kernels take 'chunks auto')",
                     in->k);
    if (p->gpu && in->e2 != PL_AUTO && !p->kernels[in->k].block)
      return pl_fail(f, PP_INST, i,
                     "launch of k%u gives a grid, but the kernel has no fixed block size", in->k);
    if (in->e3 != PL_AUTO &&
        (!p->gpu || in->e2 != PL_AUTO || p->kernels[in->k].block || p->kernels[in->k].ptx))
      return pl_fail(f, PP_INST, i,
                     "launch of k%u gives warps, which only a GPU kernel launched with 'chunks "
                     "auto' and without a fixed block takes",
                     in->k);
    return pl_check_expr_ref(p, f, i, in->e) &&
           (in->e2 == PL_AUTO || pl_check_expr_ref(p, f, i, in->e2)) &&
           (in->e3 == PL_AUTO || pl_check_expr_ref(p, f, i, in->e3));
  case PI_CHECK:
    if (in->k >= p->nsites)
      return pl_fail(f, PP_INST, i, "site %u does not exist", in->k);
    return pl_check_expr_ref(p, f, i, in->e) &&
           (in->e2 == PL_AUTO || pl_check_args(p, f, i, in->e2, in->rank));
  case PI_WHILE:
  case PI_ELSE:
  case PI_END:
    return true;
  }
  return pl_fail(f, PP_INST, i, "invalid instruction %u", in->op);
}

/* Block structure; fills links. */
static bool pl_check_blocks(const pl_plan *p, pl_fault *f, pl_open *stk, uint32_t *links) {
  uint32_t sp = 0;
  for (uint32_t i = 0; i < p->ninsts; i++) {
    const pl_inst *in = &p->insts[i];
    uint32_t inwhile = sp ? stk[sp - 1].inwhile : PL_AUTO;
    links[i] = 0;
    switch ((pl_iop)in->op) {
    case PI_FOR:
    case PI_IF:
    case PI_WHILE:
      stk[sp++] = (pl_open){i, i, in->op == PI_WHILE ? i : inwhile};
      break;
    case PI_BREAK_UNLESS:
      if (inwhile == PL_AUTO)
        return pl_fail(f, PP_INST, i, "'break unless' outside a while loop");
      links[i] = inwhile; /* the WHILE for now; its END below */
      break;
    case PI_ELSE:
      if (!sp || p->insts[stk[sp - 1].inst].op != PI_IF)
        return pl_fail(f, PP_INST, i, "'else' without an 'if' block");
      links[stk[sp - 1].inst] = i;
      stk[sp - 1].inst = i;
      break;
    case PI_END:
      if (!sp)
        return pl_fail(f, PP_INST, i, "'end' without an open block");
      sp--;
      links[stk[sp].inst] = i;
      links[i] = stk[sp].opener;
      break;
    default:
      break;
    }
  }
  if (sp)
    return pl_fail(f, PP_INST, stk[sp - 1].opener, "block is not closed");
  for (uint32_t i = 0; i < p->ninsts; i++)
    if (p->insts[i].op == PI_BREAK_UNLESS)
      links[i] = links[links[i]];
  return true;
}

ac_status pl_validate(const pl_plan *p, pl_fault *f, uint32_t *links) {
  f->part = PP_PLAN;
  f->index = 0;
  f->msg[0] = 0;
  if (p->oom)
    return AC_ERR_NOMEM;
  if (p->bad) {
    pl_fail(f, PP_PLAN, 0, "a builder was given a kernel that does not exist");
    return AC_ERR_INTERNAL;
  }
  if (!p->name) {
    pl_fail(f, PP_PLAN, 0, "the plan has no name");
    return AC_ERR_INTERNAL;
  }
  if (p->nslots > PL_MAX_SLOTS) {
    pl_fail(f, PP_PLAN, 0, "%u slots is more than the %u a plan may have", p->nslots,
            PL_MAX_SLOTS);
    return AC_ERR_INTERNAL;
  }
  bool ok = true;
  for (uint32_t i = 0; ok && i < p->nparams; i++)
    ok = pl_check_leaf(p, f, PP_PARAM, i, &p->params[i]);
  for (uint32_t i = 0; ok && i < p->nresults; i++)
    ok = pl_check_leaf(p, f, PP_RESULT, i, &p->results[i]);
  for (uint32_t i = 0; ok && i < p->nsites; i++)
    if (!p->sites[i].fmt || !pl_site_format_ok(p->sites[i].fmt))
      ok = pl_fail(f, PP_SITE, i, "site %u: the message may only contain %%%% and up to %d %%lld",
                   i, RT_FAIL_VALS);
  ok = ok && pl_check_kernels(p, f);
  for (uint32_t i = 0; ok && i < p->ninsts; i++)
    ok = pl_check_inst(p, f, i);
  if (!ok)
    return AC_ERR_INTERNAL;
  /* Scratch: expression depths and the block stack (plus links when the
   * caller does not want them). */
  size_t n = (size_t)p->nexprs * (sizeof(uint32_t) + 1) +
             (size_t)p->ninsts * (sizeof(pl_open) + sizeof(uint32_t));
  void *scratch = ac_alloc(p->ctx, n);
  if (!scratch)
    return AC_ERR_NOMEM;
  pl_open *stk = scratch;
  uint32_t *mylinks = (uint32_t *)(void *)(stk + p->ninsts);
  uint32_t *size = mylinks + p->ninsts;
  uint8_t *depth = (uint8_t *)(size + p->nexprs);
  ok = pl_check_exprs(p, f, depth, size) && pl_check_blocks(p, f, stk, links ? links : mylinks);
  ac_free(p->ctx, scratch);
  /* Last: the words' types (plan_slots.c) rely on every index being in range. */
  if (ok) {
    ac_status st = pl_check_slots(p, f);
    if (st != AC_OK)
      return st;
  }
  return ok ? AC_OK : AC_ERR_INTERNAL;
}

ac_status pl_finish(pl_plan *p, ac_error **err) {
  if (err)
    *err = NULL;
  pl_fault f;
  uint32_t *links = p->ninsts ? ac_alloc(p->ctx, p->ninsts * sizeof *links) : NULL;
  ac_status st = p->ninsts && !links ? AC_ERR_NOMEM : pl_validate(p, &f, links);
  if (st == AC_OK) {
    for (uint32_t i = 0; i < p->ninsts; i++)
      p->insts[i].match = links[i];
    p->finished = true;
  }
  ac_free(p->ctx, links);
  if (st == AC_OK)
    return AC_OK;
  static const char *const parts[] = {"plan", "param", "result", "site",
                                      "kernel", "instruction", "expression"};
  ac_error *e = st == AC_ERR_NOMEM
                    ? NULL
                    : pl_error(p->ctx, st, p->file, NULL, 0, 0, 0, "malformed plan '%s' (%s %u): %s",
                               p->name ? p->name : "", parts[f.part], f.index, f.msg);
  return ir_report(err, e, e ? st : AC_ERR_NOMEM);
}
