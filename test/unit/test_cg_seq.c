/* test/unit/test_cg_seq.c: array operations nested in element code
 * (lib/codegen/seq_*.c) checked against the reference interpreter.
 *
 * Each test parses a program and compiles the body of one function as a
 * one-chunk kernel: the parameters are loaded from a hand-built frame, the
 * body is generated with cg_expr (so every array operation in it goes to
 * cg_array_op and runs sequentially in temporary memory), scalar results
 * are stored into frame words and array results are copied into buffers the
 * frame points at (temporary memory ends with the launch). The kernel is
 * JIT-compiled (nat_compile) and run through a pool of one thread. The
 * same function runs in the interpreter on the same arguments, and the two
 * must print the same: results exactly (the printer of
 * test_interp_util.h), runtime errors with the same position and message.
 * Where a message needs more than the two values a runtime site carries,
 * the compiled message writes "?" for the others, and the comparison
 * accepts an integer there (seq_impl.h, cg_seq_check).
 *
 * Every program is compiled twice: with manifest array parameters, and with
 * the parameters handed over as CL_FUNC leaves (read through a callback),
 * as fused producers will be, so that no operation touches an input's
 * memory directly.
 */
#include "codegen/cg.h"
#include "runtime/rt.h"
#include "target/native.h"

#include "test_interp_util.h"

#include <stdatomic.h>
#include <stdint.h>

#define SEQ_MAX_LEAVES 32
#define SEQ_MAX_WORDS 256
#define SEQ_CAP ((size_t)1 << 16) /* bytes of each array result's buffer */

typedef struct seq_leafinfo {
  ac_scalar sc;
  uint32_t rank, word;
  uint32_t buf; /* array results: the word holding the copy buffer's address */
} seq_leafinfo;

typedef struct seq_k {
  ac_context *ctx;
  ac_module *m;
  nat_jit *J;
  rt_pool *pool;
  pl_plan *plan;
  rt_kernel_fn k;
  seq_leafinfo args[SEQ_MAX_LEAVES], res[SEQ_MAX_LEAVES];
  uint32_t nargs, nres, nwords;
} seq_k;

typedef struct seq_opts {
  bool delay;   /* array parameters as CL_FUNC leaves */
  bool reassoc; /* compile as a skeleton's combining function would be */
} seq_opts;

typedef struct collect_ud {
  seq_leafinfo *out;
  uint32_t *n, *word;
} collect_ud;

static void collect(void *ud, ac_scalar sc, uint32_t rank) {
  collect_ud *u = ud;
  if (*u->n >= SEQ_MAX_LEAVES)
    return;
  seq_leafinfo *l = &u->out[(*u->n)++];
  l->sc = sc;
  l->rank = rank;
  l->word = *u->word;
  *u->word += rank ? 1 + rank : 1;
}

/* A delayed parameter: reads the manifest leaf it wraps, so the values are
 * the interpreter's while the code must go through the callback. */
static LLVMValueRef delayed_read(cg_fn *f, const cg_leaf *a, LLVMValueRef *idx, ir_ref at) {
  (void)at;
  const cg_leaf *src = a->env;
  return cg_load_elem(f, src, cg_linear(f, src->rank, src->ext, idx));
}

static void delay(cg_fn *k, cg_val *v) {
  cg_leaf *l = cg_new(k->M, (v->n ? v->n : 1) * sizeof *l);
  for (uint32_t i = 0; i < v->n; i++) {
    l[i] = v->l[i];
    if (l[i].kind != CL_ARRAY)
      continue;
    l[i].kind = CL_FUNC;
    l[i].read = delayed_read;
    l[i].env = &v->l[i];
  }
  v->l = l;
}

/* After the body: array results copied to the buffers of their `buf` words
 * (at most SEQ_CAP bytes; the caller checks the size). */
static void copy_out(cg_fn *k, const seq_k *s, const cg_val *r) {
  cg_module *M = k->M;
  for (uint32_t i = 0; i < r->n && i < s->nres; i++) {
    const cg_leaf *l = &r->l[i];
    if (l->kind != CL_ARRAY)
      continue;
    LLVMValueRef w = cg_i64(M, s->res[i].buf);
    LLVMValueRef dst =
        LLVMBuildLoad2(M->b, M->t_ptr, LLVMBuildGEP2(M->b, M->t_i64, k->frame, &w, 1, ""), "");
    LLVMValueRef bytes = cg_i64(M, (int64_t)ac_scalar_size((ac_scalar)l->sc));
    for (uint32_t d = 0; d < l->rank; d++)
      bytes = LLVMBuildMul(M->b, bytes, l->ext[d], "");
    LLVMValueRef cap = cg_i64(M, (int64_t)SEQ_CAP);
    bytes = LLVMBuildSelect(M->b, LLVMBuildICmp(M->b, LLVMIntULE, bytes, cap, ""), bytes, cap, "");
    LLVMBuildMemCpy(M->b, dst, 1, l->v, 1, bytes);
  }
}

static void seq_close(seq_k *s) {
  if (s->plan)
    pl_destroy(s->plan);
  if (s->pool)
    rt_pool_destroy(s->pool);
  if (s->J)
    nat_jit_destroy(s->J);
  memset(s, 0, sizeof *s);
}

/* Compiles function fn of m (verified) as a one-chunk kernel. */
static bool seq_compile(seq_k *s, ac_module *m, const char *fn, seq_opts o) {
  memset(s, 0, sizeof *s);
  s->m = m;
  s->ctx = ac_module_context(m);
  ac_error *err = NULL;
  int32_t fi = ir_func_find(m, ir_sym_intern(s->ctx, fn, strlen(fn)));
  if (fi < 0)
    return false;
  const ir_func *f = &m->funcs[fi];
  uint32_t word = 0;
  collect_ud ua = {s->args, &s->nargs, &word};
  for (uint32_t i = 0; i < f->nparams; i++)
    ir_ty_leaves(s->ctx, ir_func_param(m, f, i), collect, &ua);
  uint32_t resword = word;
  collect_ud ur = {s->res, &s->nres, &word};
  ir_ty_leaves(s->ctx, f->result, collect, &ur);
  for (uint32_t i = 0; i < s->nres; i++)
    if (s->res[i].rank)
      s->res[i].buf = word++;
  s->nwords = word;
  if (word > SEQ_MAX_WORDS || s->nargs >= SEQ_MAX_LEAVES || s->nres >= SEQ_MAX_LEAVES)
    return false;
  if (nat_jit_create(s->ctx, &s->J, &err) != AC_OK) {
    fprintf(stderr, "jit: %s\n", ac_error_message(err));
    ac_error_destroy(err);
    return false;
  }
  s->pool = rt_pool_create(s->ctx, 1);
  s->plan = pl_create(s->ctx, "test", "<test>");
  cg_module M;
  if (!s->pool || !s->plan || cg_module_init(&M, m, s->plan, CG_TARGET_CPU, &err) != AC_OK)
    return false;
  nat_prepare(s->J, &M);
  cg_fn *k = cg_kernel_begin(&M, "k");
  k->reassoc = o.reassoc;
  uint32_t words[SEQ_MAX_WORDS];
  for (uint32_t i = 0; i < SEQ_MAX_WORDS; i++)
    words[i] = i;
  for (uint32_t i = 0, w = 0; i < f->nparams; i++) {
    ir_type t = ir_func_param(m, f, i);
    cg_val v;
    cg_load_frame(k, t, words + w, &v);
    if (o.delay)
      delay(k, &v);
    cg_env_push(k, &v);
    w += cg_frame_words(s->ctx, t);
  }
  cg_val r;
  cg_expr(k, f->body, &r);
  cg_store_frame(k, words + resword, &r);
  copy_out(k, s, &r);
  cg_env_pop(k, f->nparams);
  cg_kernel_end(k);
  bool ok = M.st == AC_OK;
  if (!ok) {
    fprintf(stderr, "codegen: %s\n", M.err ? ac_error_message(M.err) : "?");
  }
  const char *sym = "k";
  void *addr = NULL;
  if (ok && nat_compile(s->J, &M, &sym, 1, &addr, &err) != AC_OK) {
    fprintf(stderr, "nat_compile: %s\n", ac_error_message(err));
    ac_error_destroy(err);
    ok = false;
  }
  cg_module_dispose(&M);
  s->k = (rt_kernel_fn)(uintptr_t)addr;
  return ok && addr;
}

/* The next space-separated argument of *p (brackets group), as the
 * interpreter harness splits them; false at the end. */
static bool next_arg(const char **p, const char **arg, size_t *len) {
  while (**p == ' ')
    ++*p;
  if (!**p)
    return false;
  const char *e = *p;
  int depth = 0;
  while (*e && (depth > 0 || *e != ' ')) {
    depth += *e == '[' ? 1 : *e == ']' ? -1 : 0;
    e++;
  }
  *arg = *p;
  *len = (size_t)(e - *p);
  *p = e;
  return true;
}

/* Parses leaf i of `args` as the kernel's parameter i. */
static bool seq_args(seq_k *s, const char *args, ac_datum *out) {
  const char *p = args, *a;
  size_t len;
  uint32_t got = 0;
  while (next_arg(&p, &a, &len)) {
    if (got >= s->nargs ||
        !parse_arg(s->ctx, s->args[got].sc, s->args[got].rank, a, len, &out[got]))
      return false;
    got++;
  }
  return got == s->nargs;
}

/* Runs the kernel on `args`; returns the text the interpreter harness
 * would print. */
static const char *seq_run(seq_k *s, const char *args) {
  harness_buf b = {harness_out[harness_next++ % HARNESS_OUT], 0};
  b.s[0] = 0;
  ac_datum a[SEQ_MAX_LEAVES];
  memset(a, 0, sizeof a);
  uint64_t frame[SEQ_MAX_WORDS];
  static unsigned char bufs[SEQ_MAX_LEAVES][SEQ_CAP];
  memset(frame, 0, sizeof frame);
  if (!s->k || !seq_args(s, args, a)) {
    hb_put(&b, "harness: bad arguments or no kernel");
    return b.s;
  }
  for (uint32_t i = 0; i < s->nargs; i++) {
    const seq_leafinfo *l = &s->args[i];
    if (l->rank == 0) {
      memcpy(&frame[l->word], &a[i].s, 8); /* little endian: the value's low bytes */
      if (l->sc == AC_F32) {
        float x = (float)a[i].s.f;
        memcpy(&frame[l->word], &x, sizeof x);
      }
      continue;
    }
    frame[l->word] = (uint64_t)(uintptr_t)ac_array_data(a[i].array);
    memcpy(&frame[l->word + 1], ac_array_extents(a[i].array), 8 * (size_t)l->rank);
  }
  for (uint32_t i = 0; i < s->nres; i++)
    if (s->res[i].rank)
      frame[s->res[i].buf] = (uint64_t)(uintptr_t)bufs[i];
  rt_call call;
  memset(&call, 0, sizeof call);
  call.ctx = s->ctx;
  atomic_init(&call.failed, 0);
  rt_pool_launch(s->pool, &call, frame, s->k, 1, 1);
  if (atomic_load(&call.failed)) {
    char msg[512] = "?";
    const pl_site *site = (uint32_t)call.site < s->plan->nsites ? &s->plan->sites[call.site] : NULL;
    if (site) {
      int64_t vals[RT_FAIL_VALS];
      rt_call_values(&call, vals);
      pl_site_format(msg, sizeof msg, site->fmt, RT_FAIL_VALS, vals);
      if (site->line)
        snprintf((char *)b.s, 64, "%u:%u: ", site->line, site->col);
      b.n = strlen(b.s);
    }
    hb_put(&b, "error: ");
    hb_put(&b, msg);
  }
  for (uint32_t i = 0; i < s->nres && !atomic_load(&call.failed); i++) {
    const seq_leafinfo *l = &s->res[i];
    if (i)
      hb_put(&b, "\n");
    if (l->rank == 0) {
      hb_scalar(&b, l->sc, &frame[l->word]);
      continue;
    }
    int64_t ext[8], n = (int64_t)ac_scalar_size(l->sc);
    for (uint32_t d = 0; d < l->rank && d < 8; d++) {
      memcpy(&ext[d], &frame[l->word + 1 + d], 8);
      n *= ext[d];
    }
    if (n < 0 || (size_t)n > SEQ_CAP) {
      hb_put(&b, "harness: result too large");
      continue;
    }
    ac_array *arr = ac_array_create(s->ctx, l->sc, l->rank, ext, bufs[i], NULL);
    int64_t pos = 0;
    if (arr)
      hb_array(&b, arr, 0, &pos);
    ac_array_release(arr);
  }
  for (uint32_t i = 0; i < s->nargs; i++)
    ac_datum_release(&a[i]);
  return b.s;
}

/* The compiled text equals the interpreter's, "?" standing for an integer. */
static bool same_text(const char *got, const char *want) {
  while (*got && *want) {
    if (*got == '?') {
      const char *w = want + (*want == '-');
      if (*w < '0' || *w > '9')
        return false;
      while (*w >= '0' && *w <= '9')
        w++;
      want = w;
      got++;
      continue;
    }
    if (*got++ != *want++)
      return false;
  }
  return *got == *want;
}

static ac_module *parse(ac_context *ctx, const char *src) {
  ac_module *m = NULL;
  ac_error *err = NULL;
  if (ac_module_parse(ctx, "t.ac", src, strlen(src), &m, &err) != AC_OK) {
    fprintf(stderr, "parse: %s\n", ac_error_message(err));
    ac_error_destroy(err);
    return NULL;
  }
  return m;
}

/* Checks fn of src on each argument list, compiled both ways, against the
 * interpreter; `expect` (optional, one per argument list) pins the
 * interpreter's own output so the test also says what the answer is. */
static void check_opts(const char *src, const char *fn, const char *const *args,
                       const char *const *expect, size_t n, seq_opts base) {
  ac_context *ctx = ac_context_create();
  ac_module *m = parse(ctx, src);
  CHECK(m != NULL);
  for (int mode = 0; m && mode < 2; mode++) {
    seq_opts o = base;
    o.delay = mode == 1;
    seq_k s;
    bool ok = seq_compile(&s, m, fn, o);
    CHECK(ok);
    for (size_t i = 0; ok && i < n; i++) {
      const char *want = run_module(m, fn, args[i]);
      const char *got = seq_run(&s, args[i]);
      if (expect && expect[i])
        CHECK_STR(want, expect[i]);
      if (!same_text(got, want)) {
        fprintf(stderr, "%s(%s)%s:\n  interpreter: %s\n  compiled:    %s\n", fn, args[i],
                o.delay ? " [delayed inputs]" : "", want, got);
        CHECK(false);
      }
    }
    seq_close(&s);
  }
  if (m)
    ac_module_destroy(m);
  ac_context_destroy(ctx);
}

#define ARGS(...) ((const char *const[]){__VA_ARGS__})
#define NARGS(...) (sizeof ARGS(__VA_ARGS__) / sizeof(const char *))
/* SAME(src, fn, "args1", "args2", ..) */
#define SAME(src, fn, ...)                                                                         \
  check_opts(src, fn, ARGS(__VA_ARGS__), NULL, NARGS(__VA_ARGS__), (seq_opts){false, false})

/* ---- construction ---- */

UNIT_TEST(construction) {
  const char *src =
      "fn f(n: i64, k: i32) -> (i64[], i32[,], (f32, bool)[], i64[,], i32[,], i64) {\n"
      "  (iota(n), fill((2, n), k), fill(n, (1.5f32, k > 0)),\n"
      "   generate((n, 3), |i, j| 10 * i + j), [[k, 2], [3, k]],\n"
      "   fold(|a, b| a + b, 0, map(|i| fold(|a, b| a + b, 0, generate(i, |j| j * j)), iota(n))))\n"
      "}\n";
  const char *args[] = {"4 7", "0 -1", "1 0", "-1 3"};
  const char *expect[] = {"[0, 1, 2, 3]\n[[7, 7, 7, 7], [7, 7, 7, 7]]\n[1.5, 1.5, 1.5, 1.5]\n"
                          "[true, true, true, true]\n[[0, 1, 2], [10, 11, 12], [20, 21, 22], [30, "
                          "31, 32]]\n[[7, 2], [3, 7]]\n6",
                          NULL, NULL, "2:4: error: negative extent -1"};
  check_opts(src, "f", args, expect, 4, (seq_opts){false, false});
  /* sizes: a negative extent in a later dimension, a product too large */
  SAME("fn g(a: i64, b: i64) -> i32[,] { generate((a, b), |i, j| i32(i * j)) }\n", "g", "2 3",
       "2 -5", "-2 -5", "4294967296 4294967296", "0 4294967296000", "1099511627776 0");
  SAME("fn h(n: i64) -> i64 { len(filter(|x| x > 2, iota(n))) + fill(n, 1i64)[0] }\n", "h", "5",
       "0", "1099511627776");
}

/* ---- map and filter ---- */

UNIT_TEST(map_filter) {
  SAME("fn f(xs: i32[], ys: f64[], m: i32[,]) -> ((i32, f64)[], i32[,], f64) {\n"
       "  let z = map(|x, y| (x * 2, y + 1.0), xs, ys);\n"
       "  (z, map(|a| a + 1, m), fold(|a, b| a + b, 0.0, map(|p, q| f64(p) * q, z.0, z.1)))\n"
       "}\n",
       "f", "[1,2,3] [0.5,1.5,2.5] [[1,2],[3,4]]", "[] [] [[],[]]", "[1,2] [1.0] [[1]]",
       "[1] [1.0] []");
  /* a tuple of arrays used as an array: every leaf is checked */
  SAME("fn g(a: i32[,], b: i32[,], c: i32[,]) -> i32[,] { map(|p, z| p.0 + p.1 + z, (a, b), c) }\n",
       "g", "[[1,2],[3,4]] [[1,1],[1,1]] [[5,5],[5,5]]", "[[1,2],[3,4]] [[1,1]] [[5,5],[5,5]]",
       "[[1,2],[3,4]] [[1,1],[1,1]] [[5],[5]]");
  SAME("fn h(xs: i32[], ys: f32[]) -> ((i32, f32)[], i64, i32[]) {\n"
       "  let p = filter(|p| p.0 > 0, (xs, ys));\n"
       "  (p, len(filter(|x| x % 2 == 0, xs)),\n"
       "   filter(|x| fold(|a, b| a + b, 0i64, iota(i64(abs(x)))) > 3, xs))\n"
       "}\n",
       "h", "[3,-1,4,-1,5] [0.5,1.5,2.5,3.5,4.5]", "[] []", "[-3,-2] [1,2]", "[1,2] [1]");
}

/* ---- folds and scans ---- */

UNIT_TEST(folds) {
  SAME("fn f(m: i32[,], xs: i64[], lens: i32[]) -> (i32[], i64, i64[], (i64, i64), i32[,]) {\n"
       "  (fold(|a, b| a + b, 0, m), fold(|a, b| a * b + 1, 1, xs),\n"
       "   fold_seg(|a, b| a * 2 + b, 0, xs, lens),\n"
       "   fold(|p, q| (p.0 + q.0, max(p.1, q.1)), (0, -100), (xs, xs)),\n"
       "   fold(|a, b| a - b, 100, replicate(2, m)))\n"
       "}\n",
       "f", "[[1,2,3],[4,5,6]] [1,2,3,4,5] [2,0,3]", "[[],[]] [] []", "[[1],[2]] [7] [1]",
       "[[1]] [1,2,3,4,5] [2,-1,4]", "[[1]] [1,2,3,4,5] [2,2]", "[[1]] [1,2,3,4,5] [2,4]");
  /* rank 3, and lengths of an unsigned kind above INT64_MAX */
  SAME("fn g(xs: f64[], lens: u64[]) -> (f64[,], f64[]) {\n"
       "  (fold(|a, b| a * 0.5 + b, 0.25, reshape((2, 2, 2), xs)), fold_seg(|a, b| a + b, 0.0, xs,"
       " lens))\n"
       "}\n",
       "g", "[1,2,3,4,5,6,7,8] [8]", "[1,2,3,4,5,6,7,8] [18446744073709551615]",
       "[1,2,3,4,5,6,7,8] [4,0,4,0]");
}

UNIT_TEST(scans) {
  const char *src =
      "fn f(xs: i32[], m: i32[,], lens: i64[]) ->\n"
      "    (i32[], i32[], i32[], i32[], i32[,], i32[,], i32[], i32[]) {\n"
      "  (scan(|a, b| a + b, 0, xs), scan_incl(|a, b| a - b, xs),\n"
      "   scanr(|a, b| a - b, 100, xs), scanr_incl(|a, b| a * 2 + b, xs),\n"
      "   scan_incl(|a, b| a + b, m), scanr(|a, b| a - b, 1, m),\n"
      "   scan_seg(|a, b| a * 3 + b, 1, xs, lens), scan_incl_seg(|a, b| a - b, xs, lens))\n"
      "}\n";
  const char *args[] = {"[1,2,3] [[1,2],[3,4]] [2,1]", "[] [[],[]] []",
                        "[5,6,7,8,9] [[1,1,1]] [0,2,0,3]", "[1,2,3] [[1]] [2,2]",
                        "[1,2,3] [[1]] [-1,4]"};
  const char *expect[] = {"[0, 1, 3]\n[1, -1, -4]\n[99, -97, 100]\n[9, 7, 3]\n[[1, 3], [3, 7]]\n"
                          "[[1, 1], [3, 1]]\n[1, 4, 1]\n[1, -1, 3]",
                          NULL, NULL,
                          "6:4: error: scan_seg: segment lengths sum to 4 but the array has 3 "
                          "elements",
                          "6:4: error: scan_seg: negative segment length -1"};
  check_opts(src, "f", args, expect, 5, (seq_opts){false, false});
  /* tuples of arrays with a tuple accumulator */
  SAME("fn g(xs: i64[], ys: f32[]) -> ((i64, f32)[], (i64, f32)[]) {\n"
       "  (scan_incl(|p, q| (p.0 + q.0, p.1 * q.1), (xs, ys)),\n"
       "   scanr(|p, q| (p.0 - q.0, p.1 + q.1), (0, 1.5f32), (xs, ys)))\n"
       "}\n",
       "g", "[1,2,3] [0.5,2,4]", "[] []", "[1,2] [1]");
}

/* ---- permutations ---- */

UNIT_TEST(permutations) {
  const char *src =
      "fn f(xs: i32[], m: i32[,], is: i64[], js: u8[], vals: i32[]) ->\n"
      "    (i32[], i32[], i32[,], i32[], i32[], i32[]) {\n"
      "  (gather(is, xs), gather((is, js), m), backpermute((2, 2), |i, j| (j, i), m),\n"
      "   scatter(is, vals, xs), permute(|a, b| a * 10 + b, fill(len(xs), 1), |k| is[k], vals),\n"
      "   backpermute(3, |i| 2 - i, xs))\n"
      "}\n";
  const char *args[] = {
      "[10,20,30] [[1,2],[3,4]] [1,0] [0,1] [7,8]", "[10,20,30] [[1,2],[3,4]] [2,0] [0,1] [7,8]",
      "[10,20,30] [[1,2],[3,4]] [1,1] [0,1] [7,8]", "[10,20,30] [[1,2],[3,4]] [1,0] [0,5] [7,8]",
      "[10,20,30] [[1,2],[3,4]] [1,0] [0,1] [7]",   "[10,20] [[1,2],[3,4]] [1,0] [0,1] [7,8]"};
  const char *expect[] = {"[20, 10]\n[3, 2]\n[[1, 3], [2, 4]]\n[8, 7, 30]\n[18, 17, 1]\n[30, 20, "
                          "10]",
                          "3:20: error: gather: index 2 out of bounds for dimension 0 of extent 2",
                          "4:4: error: scatter: index 1 written twice",
                          "3:20: error: gather: index 5 out of bounds for dimension 1 of extent 2",
                          "4:4: error: scatter: arrays have different shapes: [2] and [1]",
                          "5:4: error: backpermute: index 2 out of bounds for dimension 0 of "
                          "extent 2"};
  check_opts(src, "f", args, expect, 6, (seq_opts){false, false});
  /* rank-2 destinations: whole indices and shapes in the messages */
  SAME("fn g(m: i32[,], is: i64[], js: i64[], vals: i32[]) -> (i32[,], i32[,]) {\n"
       "  (permute(|a, b| a - b, m, |k| (is[k], js[k]), vals), scatter((is, js), vals, m))\n"
       "}\n",
       "g", "[[1,2],[3,4]] [0,1,0] [1,1,1] [5,6,7]", "[[1,2],[3,4]] [0,5] [1,1] [5,6]",
       "[[1,2],[3,4]] [0,1] [1,-1] [5,6]", "[[1,2],[3,4]] [0,1] [1,0] [5,6]",
       "[[1,2],[3,4]] [1,1] [0,0] [5,6]");
}

/* ---- index space ---- */

UNIT_TEST(index_space) {
  SAME("fn f(xs: i64[], k: i64, s: i64) ->\n"
       "    (i64[], i64[], i64[,], i64[,], i64[,], i64[], i64[,], i64, i64[,,]) {\n"
       "  let m = reshape((2, 3), xs);\n"
       "  (slice(xs, 1, k), slice(xs, 0, len(xs), s), slice(m, (0, 1), (2, 3)), transpose(m),\n"
       "   reverse(m), reverse(xs), replicate(2, slice(xs, 0, 2)),\n"
       "   fold(|a, b| a * 3 + b, 0, reshape(6, transpose(m))), replicate(k, m))\n"
       "}\n",
       "f", "[1,2,3,4,5,6] 3 2", "[1,2,3,4,5,6] 1 7", "[1,2,3,4,5,6] 9 1", "[1,2,3,4,5,6] 0 1",
       "[1,2,3,4,5,6] 3 0", "[1,2,3,4] 1 1", "[1,2,3,4,5,6] 2 -3");
  /* strided and rank-2 bounds from values known only at run time */
  SAME("fn g(m: i32[,], a: i64, b: i64, c: i64, d: i64) -> (i32[,], i32[,], i32[]) {\n"
       "  (slice(m, (a, b), (c, d)), slice(m, (a, b), (c, d), (2, 2)),\n"
       "   reshape(a * b, slice(m, (0, 0), (a, b))))\n"
       "}\n",
       "g", "[[1,2,3],[4,5,6],[7,8,9]] 0 1 3 3", "[[1,2,3],[4,5,6],[7,8,9]] 1 0 2 1",
       "[[1,2,3],[4,5,6],[7,8,9]] 2 1 1 3", "[[1,2,3],[4,5,6],[7,8,9]] 0 1 3 4",
       "[[1,2,3],[4,5,6],[7,8,9]] -1 0 3 3", "[[1,2,3],[4,5,6],[7,8,9]] 0 0 0 0");
}

/* ---- stencils ---- */

UNIT_TEST(stencils) {
  const char *src =
      "fn f(xs: i32[], m: f64[,]) -> (i32[], i32[], i32[], i32[], f64[,], i32[], (i32, i32)[]) {\n"
      "  (stencil(|w| w[-1], clamp, xs), stencil(|w| w[-1] + w[1] * 10, mirror, xs),\n"
      "   stencil(|w| w[-1], wrap, xs), stencil(|w| w[-1] + w[2], 0, xs),\n"
      "   stencil(|w| (w[-1, 0] + w[1, 0] + w[0, -1] + w[0, 1]) / 4.0, clamp, m),\n"
      "   stencil(|w| w[-3] + w[5] * 100 + w[-9223372036854775807] * 10000, mirror, xs),\n"
      "   stencil(|w| (w[-1].0, w[1].1), (7, 9), (xs, xs)))\n"
      "}\n";
  const char *args[] = {"[10,20,30,40] [[0,4],[8,12]]", "[5,6,7] [[1]]", "[5] [[1,2,3]]",
                        "[] [[],[]]"};
  const char *expect[] = {
      "[10, 10, 20, 30]\n[220, 310, 420, 330]\n[40, 10, 20, 30]\n[30, 50, 20, 30]\n"
      "[[3.0, 5.0], [7.0, 9.0]]\n[202040, 101030, 202020, 303010]\n[7, 10, 20, 30]\n"
      "[20, 30, 40, 9]",
      NULL, NULL, NULL};
  check_opts(src, "f", args, expect, 4, (seq_opts){false, false});
  SAME("fn g(m: i32[,], v: i32) -> (i32[,], i32[,], i32[,]) {\n"
       "  (stencil(|w| w[-1, 1] - w[1, -1], wrap, m), stencil(|w| w[2, -2], mirror, m),\n"
       "   stencil(|w| w[0, 1] * 2 + w[1, 0], v, m))\n"
       "}\n",
       "g", "[[1,2,3],[4,5,6]] -1", "[[1],[2],[3]] 0", "[[]] 5");
}

/* ---- array loops ---- */

UNIT_TEST(array_loops) {
  SAME("fn f(xs: i32[], n: i32) -> (i32[], i64, i32[], (i64, i32[]), (i32[], i32[]), i32[]) {\n"
       "  (iterate(n, |v| stencil(|w| (w[-1] + 2 * w[0] + w[1]) / 4, 0, v), xs),\n"
       "   while(|p| p <= 100, |p| p * 3, 1i64),\n"
       "   while(|v| len(v) > 1, |v| slice(v, 1, len(v)), xs),\n"
       "   iterate(n, |s| (s.0 + 1, map(|x| x + i32(s.0), s.1)), (0i64, xs)),\n"
       "   iterate(n, |s| (map(|x| x * 2, s.1), s.0), (xs, reverse(xs))),\n"
       "   while(|v| len(v) < 9, |v| generate(len(v) * 2 + 1, |i| if i < len(v) { v[i] } "
       "else { i32(i) }), xs))\n"
       "}\n",
       "f", "[0,0,16,0,0] 2", "[0,0,16,0,0] 0", "[1,2,3] 5", "[] 3", "[7] -4");
  /* after a failed read the condition sees a harmless value that never
   * ends the loop: the loop must notice the failure and stop */
  SAME("fn w(xs: i64[], k: i64) -> i64 { while(|p| p != xs[k] * 2 + 1, |p| p + 2, 1i64) }\n", "w",
       "[3,4] 1", "[3,4] 2");
  /* state arrays of a step that fails part-way */
  SAME("fn g(xs: i64[], n: i64) -> i64[] {\n"
       "  iterate(n, |v| map(|x| x + v[x % 3], v), xs)\n"
       "}\n",
       "g", "[0,1,2] 3", "[0,1] 1", "[0,1] 0");
}

/* ---- recurrences ---- */

UNIT_TEST(recurrences) {
  const char *src =
      "fn f(n: i64) -> (i64[], i64[], i64[,], i64[,], (i64, f64)[]) {\n"
      "  (rec f (i in 0..n) -> i64 { if i < 2 { i } else { f[i - 1] + f[i - 2] } },\n"
      "   rec g (i in 1..=n) -> i64 { if i == n { 1 } else { g[i + 1] * 2 + i } },\n"
      "   rec h (i in 0..4, j in 0..n) -> i64 {\n"
      "     if j == 0 || i == 3 { i + j } else if i == 0 { h[i + 1, j - 1] * 2 }\n"
      "     else { h[i - 1, j] + h[i + 1, j - 1] } },\n"
      "   rec c (i in 0..=3, j in -1..n) -> i64 {\n"
      "     if i == 0 || j == n - 1 { 1 } else { c[i - 1, j + 1] + c[i, j + 1] } },\n"
      "   rec t (i in 0..n) -> (i64, f64) {\n"
      "     if i == 0 { (1, 0.5) } else { (t[i - 1].0 * 3, t[i - 1].1 + f64(t[i - 1].0)) } })\n"
      "}\n";
  const char *args[] = {"6", "1", "0", "-2"};
  const char *expect[] = {NULL, NULL, NULL, "2:4: error: negative extent -2"};
  check_opts(src, "f", args, expect, 4, (seq_opts){false, false});
  SAME("fn ed(s: u8[], t: u8[]) -> i32 {\n"
       "  let n = len(s);\n"
       "  let m = len(t);\n"
       "  let d = rec (i in 0..=n, j in 0..=m) -> i32 {\n"
       "    if i == 0 { i32(j) } else if j == 0 { i32(i) } else {\n"
       "      min(min(d[i - 1, j] + 1, d[i, j - 1] + 1),\n"
       "          d[i - 1, j - 1] + (if s[i - 1] == t[j - 1] { 0 } else { 1 }))\n"
       "    }\n"
       "  };\n"
       "  d[n, m]\n"
       "}\n",
       "ed", "[107,105,116,116,101,110] [115,105,116,116,105,110,103]", "[] [1,2]", "[] []");
  SAME("fn walks(adj: bool[,], n: i64) -> i64[,] {\n"
       "  let m = len(adj);\n"
       "  rec c (t in 0..=n, s in 0..m) -> i64 {\n"
       "    if t == 0 { if s == 0 { 1 } else { 0 } } else {\n"
       "      fold(|a, b| a + b, 0, generate(m, |k| if adj[k, s] { c[t - 1, k] } else { 0 }))\n"
       "    }\n"
       "  }\n"
       "}\n",
       "walks", "[[false,true],[true,true]] 3", "[[true]] 0");
  SAME("fn shifted(xs: i64[], k: i64) -> i64[] {\n"
       "  let n = len(xs);\n"
       "  rec d (i in 0..n) -> i64 { if i < k { xs[i] } else { d[i - 2] + xs[i] } }\n"
       "}\n",
       "shifted", "[1,2,3] 2", "[1,2,3] 0", "[1,2,3] 1", "[1,2,3] 5");
  SAME("fn d2(n: i64, a: i64) -> i64[,] {\n"
       "  rec d (i in a..n, j in 0..2) -> i64 { if i == a { j } else { d[i - 1, 1 - j] + d[i - 1, "
       "j] } }\n"
       "}\n",
       "d2", "4 1", "4 0", "4 5", "3 -9223372036854775807");
}

/* ---- nesting, delayed inputs, exactness ---- */

UNIT_TEST(nesting) {
  SAME("fn matvec(m: f64[,], v: f64[]) -> f64[] {\n"
       "  let (r, c) = shape(m);\n"
       "  generate(r, |i| fold(|a, b| a + b, 0.0, generate(c, |j| m[i, j] * v[j])))\n"
       "}\n",
       "matvec", "[[1,2],[3,4],[5,6]] [1,0.5]", "[[1,2]] [1]");
  SAME("fn deep(n: i64) -> i64[] {\n"
       "  generate(n, |i| fold(|a, b| a + b, 0,\n"
       "    map(|x| x * i + len(filter(|y| y < x, scan_incl(|a, b| a + b, iota(i + 1)))),\n"
       "        scan_incl(|a, b| a + b, iota(i + 1)))))\n"
       "}\n",
       "deep", "6", "0");
  /* a nested fold inside a function compiled with reassociation allowed
   * stays the exact left fold */
  const char *src =
      "fn f(n: i64) -> f64 {\n"
      "  fold(|a, b| a + b, 0.0, generate(n, |i|\n"
      "    if i % 3 == 0 { 1e16 } else if i % 3 == 1 { 1.0 + f64(i) } else { -1e16 }))\n"
      "}\n";
  const char *args[] = {"1000", "1001", "7"};
  check_opts(src, "f", args, NULL, 3, (seq_opts){false, true});
}

/* Top-level functions given where a lambda is expected. */
UNIT_TEST(function_refs) {
  SAME("fn add(a: i64, b: i64) -> i64 { a + b }\n"
       "fn sq(i: i64) -> i64 { i * i }\n"
       "fn big(x: i64) -> bool { x > 2 }\n"
       "fn rows(m: i64[,]) -> i64[] { fold(add, 0, m) }\n"
       "fn f(n: i64) -> (i64, i64[], i64[], i64[], i64[,]) {\n"
       "  (fold(add, 0, generate(n, sq)), scan_incl(add, iota(n)), filter(big, map(sq, iota(n))),\n"
       "   rows(reshape((n, 2), iota(2 * n))), iterate(2, |m| map(sq, m), reshape((1, n), "
       "iota(n))))\n"
       "}\n",
       "f", "4", "0", "-1");
}

/* The same operations nested in the element code of parallel skeletons
 * (lib/lower), through the public API: chunks on several threads, each
 * with its own temporary memory, and elements bracketed by the skeleton. */
static const char *run_cpu(ac_module *m, const char *fn, const char *args) {
  harness_buf b = {harness_out[harness_next++ % HARNESS_OUT], 0};
  b.s[0] = 0;
  ac_function *f = NULL;
  ac_error *err = NULL;
  if (ac_function_create(m, fn, AC_BACKEND_CPU, &f, &err) != AC_OK)
    return harness_error(&b, err);
  ac_datum a[SEQ_MAX_LEAVES], r[SEQ_MAX_LEAVES];
  size_t na = ac_function_num_args(f), nr = ac_function_num_results(f), got = 0, len;
  const char *p = args, *arg;
  bool ok = na <= SEQ_MAX_LEAVES && nr <= SEQ_MAX_LEAVES;
  while (ok && next_arg(&p, &arg, &len)) {
    ac_scalar t = AC_BOOL;
    unsigned rank = 0;
    ok = got < na;
    if (ok) {
      ac_function_arg_info(f, got, &t, &rank);
      ok = parse_arg(ac_module_context(m), t, rank, arg, len, &a[got]);
    }
    got += ok;
  }
  if (!ok || got != na) {
    hb_put(&b, "harness: bad arguments");
  } else if (ac_function_call(f, a, na, r, nr, &err) != AC_OK) {
    harness_error(&b, err);
  } else {
    for (size_t i = 0; i < nr; i++) {
      hb_put(&b, i ? "\n" : "");
      hb_datum(&b, &r[i]);
      ac_datum_release(&r[i]);
    }
  }
  for (size_t i = 0; i < got; i++)
    ac_datum_release(&a[i]);
  ac_function_destroy(f);
  return b.s;
}

UNIT_TEST(in_skeletons) {
  static const struct {
    const char *fn, *args;
  } cases[] = {
      {"f", "40000"},
      {"f", "3"},
      {"g", "[[1,2,3],[4,5,6]] [3,0,-1]"},
      {"g", "[[1,2,3],[4,5,6]] [0,1,2]"},
      {"h", "[1,2,3,4,5,6,7,8,9,10]"},
      {"h", "[1,2,3,4,5,6,7,8,9,-3]"},
  };
  ac_context *ctx = ac_context_create();
  ac_module *m = parse(
      ctx, "fn f(n: i64) -> i64 {\n"
           "  fold(|a, b| a + b, 0, map(|i| fold(|a, b| a + b, 0, generate(i % 7, |j| j * i)) +\n"
           "    len(filter(|x| x % 3 == 0, scan_incl(|a, b| a + b, iota(i % 11)))), iota(n)))\n"
           "}\n"
           "fn g(m: i32[,], ks: i64[]) -> i32[] {\n"
           "  map(|k| fold(|a, b| a * 2 + b, 0, gather((fill(3, 1), fill(3, k)),\n"
           "    reverse(slice(m, (0, 0), (2, 3)))) ), ks)\n"
           "}\n"
           "fn h(xs: i64[]) -> i64[] {\n"
           "  map(|x| while(|v| len(v) > 1, |v| slice(v, 1, len(v)), iota(x))[0], xs)\n"
           "}\n");
  CHECK(m != NULL);
  for (size_t i = 0; m && i < sizeof cases / sizeof cases[0]; i++) {
    const char *want = run_module(m, cases[i].fn, cases[i].args);
    const char *got = run_cpu(m, cases[i].fn, cases[i].args);
    if (!same_text(got, want)) {
      fprintf(stderr, "%s(%s) on the CPU backend:\n  interpreter: %s\n  compiled:    %s\n",
              cases[i].fn, cases[i].args, want, got);
      CHECK(false);
    }
  }
  if (m)
    ac_module_destroy(m);
  ac_context_destroy(ctx);
}

/* Array loop states reuse their memory: 200000 steps over an 8 KiB state
 * would need 1.6 GB if each state stayed allocated. */
UNIT_TEST(loop_memory) {
  counting c = {0, 0, -1};
  ac_context *ctx = ac_context_create_with_allocator(counting_realloc, &c);
  ac_module *m = parse(ctx, "fn f(xs: i64[], n: i64) -> i64 {\n"
                            "  fold(|a, b| a + b, 0, iterate(n, |v| map(|x| x + 1, v), xs))\n"
                            "}\n");
  CHECK(m != NULL);
  seq_k s;
  memset(&s, 0, sizeof s);
  bool ok = m && seq_compile(&s, m, "f", (seq_opts){false, false});
  CHECK(ok);
  if (ok) {
    size_t before = c.live;
    c.peak = c.live;
    char args[16384];
    size_t n = 0;
    n += (size_t)snprintf(args + n, sizeof args - n, "[");
    for (int i = 0; i < 1024; i++)
      n += (size_t)snprintf(args + n, sizeof args - n, i ? ",%d" : "%d", i);
    snprintf(args + n, sizeof args - n, "] 200000");
    /* sum of 0..1023 plus 200000 per element */
    CHECK_STR(seq_run(&s, args), "205323776");
    CHECK(c.peak - before < ((size_t)4 << 20));
  }
  seq_close(&s);
  if (m)
    ac_module_destroy(m);
  ac_context_destroy(ctx);
}

UNIT_MAIN(construction, map_filter, folds, scans, permutations, index_space, stencils, array_loops,
          recurrences, nesting, function_refs, in_skeletons, loop_memory)
