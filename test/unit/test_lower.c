/* test/unit/test_lower.c: lowering to kernel plans (lib/lower/lower.c,
 * lower_scalar.c, skel_map.c, skel_stencil.c) checked end to end.
 *
 * Each test lowers one function of a small program with lw_function,
 * looks at the printed plan (pl_print) for what the lowering promises
 * (size inference, no kernel where none is needed, views, plan loops and
 * ifs), compiles the kernels with nat_compile and runs the plan with pl_run
 * on a pool of four threads, on the same arguments as the reference
 * interpreter. Results must agree exactly: integers by value, floats bit for
 * bit (any NaN equals any NaN), extents included; runtime errors must have
 * the interpreter's status, message, line and column (the few messages a
 * two-value site cannot hold are checked against their documented CPU
 * wording). Programs cover every element-wise operation, stencils with each
 * boundary (small arrays, where every element is a border one, and large
 * ones that take the interior paths), lets, tuples, calls and ifs at plan
 * level, iterate / while / loop with array state, size expressions and
 * scalar kernels with plan-level subterms; large arrays run in many chunks.
 */
#include "lower/lower.h"
#include "target/native.h"

#include "test_interp_util.h"

#include <llvm-c/Core.h>

/* ---- the harness ---- */

typedef struct env {
  ac_context *ctx;
  nat_jit *J;
  rt_pool *pool;
} env;

static env E;

typedef struct cprog {
  ac_module *m;
  ac_function *ref; /* the interpreter */
  pl_plan *plan;
  rt_kernel_fn *k;
  char *text; /* the plan */
  char why[512];
} cprog;

static void why(cprog *c, const char *what, ac_error *err) {
  snprintf(c->why, sizeof c->why, "%s: %s", what, err ? ac_error_message(err) : "?");
  fprintf(stderr, "%s\n", c->why);
  if (err)
    ac_error_destroy(err);
}

/* Lowers and compiles function fn of src (with the optimised IR in *ir
 * when ir is not NULL, instead of compiling). */
static bool cp_open_ir(cprog *c, const char *src, const char *fn, char **ir) {
  memset(c, 0, sizeof *c);
  ac_error *err = NULL;
  if (ac_module_parse(E.ctx, "t.ac", src, strlen(src), &c->m, &err) != AC_OK) {
    why(c, "parse", err);
    return false;
  }
  if (ac_function_create(c->m, fn, AC_BACKEND_INTERP, &c->ref, &err) != AC_OK) {
    why(c, "function", err);
    return false;
  }
  int32_t fi = ir_func_find(c->m, ir_sym_intern(E.ctx, fn, strlen(fn)));
  c->plan = pl_create(E.ctx, fn, "t.ac");
  cg_module M;
  if (fi < 0 || !c->plan || cg_module_init(&M, c->m, c->plan, CG_TARGET_CPU, &err) != AC_OK) {
    why(c, "setup", err);
    return false;
  }
  nat_prepare(E.J, &M);
  bool ok = lw_function(&M, (uint32_t)fi, &err) == AC_OK;
  if (!ok)
    why(c, "lower", err);
  ok = ok && pl_print(c->plan, &c->text, &err) == AC_OK;
  if (!ok && !c->why[0])
    why(c, "print", err);
  if (ok && ir) {
    ok = nat_optimise(E.J, &M, &err) == AC_OK;
    if (ok) {
      char *s = LLVMPrintModuleToString(M.mod);
      *ir = ac_strdup(E.ctx, s);
      LLVMDisposeMessage(s);
    } else {
      why(c, "optimise", err);
    }
  } else if (ok) {
    uint32_t n = c->plan->nkernels;
    const char **syms = calloc(n + 1, sizeof *syms);
    void **addrs = calloc(n + 1, sizeof *addrs);
    c->k = calloc(n + 1, sizeof *c->k);
    for (uint32_t i = 0; i < n; i++)
      syms[i] = c->plan->kernels[i].symbol;
    ok = nat_compile(E.J, &M, syms, n, addrs, &err) == AC_OK;
    if (!ok)
      why(c, "compile", err);
    for (uint32_t i = 0; ok && i < n; i++)
      memcpy(&c->k[i], &addrs[i], sizeof c->k[i]);
    free(syms);
    free(addrs);
  }
  cg_module_dispose(&M);
  return ok;
}

static bool cp_open(cprog *c, const char *src, const char *fn) {
  return cp_open_ir(c, src, fn, NULL);
}

static void cp_close(cprog *c) {
  if (c->text)
    ac_string_destroy(E.ctx, c->text);
  if (c->plan)
    pl_destroy(c->plan);
  free(c->k);
  if (c->ref)
    ac_function_destroy(c->ref);
  if (c->m)
    ac_module_destroy(c->m);
}

static bool plan_has(const cprog *c, const char *s) {
  bool ok = c->text && strstr(c->text, s);
  if (!ok)
    fprintf(stderr, "plan lacks \"%s\":\n%s\n", s, c->text ? c->text : "(none)");
  return ok;
}

static int count(const char *text, const char *s) {
  int n = 0;
  for (const char *p = text ? strstr(text, s) : NULL; p; p = strstr(p + 1, s))
    n++;
  return n;
}

/* Bitwise equality of one element (any NaN equals any NaN). */
static bool same_elem(ac_scalar t, const void *a, const void *b) {
  if (t == AC_F32) {
    float x, y;
    memcpy(&x, a, 4);
    memcpy(&y, b, 4);
    if (isnan(x) && isnan(y))
      return true;
  } else if (t == AC_F64) {
    double x, y;
    memcpy(&x, a, 8);
    memcpy(&y, b, 8);
    if (isnan(x) && isnan(y))
      return true;
  }
  return memcmp(a, b, ac_scalar_size(t)) == 0;
}

static bool same_datum(const ac_datum *a, const ac_datum *b) {
  if (a->kind != b->kind || a->type != b->type)
    return false;
  if (a->kind == AC_DATUM_SCALAR) {
    union {
      uint8_t b8;
      int64_t i;
      float f;
      double d;
    } x, y;
    memset(&x, 0, sizeof x);
    memset(&y, 0, sizeof y);
    if (a->type == AC_F32) {
      x.f = (float)a->s.f;
      y.f = (float)b->s.f;
    } else if (a->type == AC_F64) {
      x.d = a->s.f;
      y.d = b->s.f;
    } else if (a->type == AC_BOOL) {
      x.b8 = a->s.b;
      y.b8 = b->s.b;
    } else {
      x.i = a->s.i;
      y.i = b->s.i;
    }
    return same_elem(a->type, &x, &y);
  }
  const ac_array *p = a->array, *q = b->array;
  unsigned r = ac_array_rank(p);
  if (r != ac_array_rank(q) || memcmp(ac_array_extents(p), ac_array_extents(q), r * 8))
    return false;
  size_t es = ac_scalar_size(ac_array_type(p));
  for (int64_t k = 0; k < ac_array_size(p); k++)
    if (!same_elem(ac_array_type(p), (const char *)ac_array_data(p) + (size_t)k * es,
                   (const char *)ac_array_data(q) + (size_t)k * es))
      return false;
  return true;
}

/* Parses the text arguments (see test_interp_util.h) for c's function. */
static size_t cp_args(cprog *c, const char *args, ac_datum *a, size_t max) {
  size_t na = ac_function_num_args(c->ref), got = 0;
  const char *p = args;
  while (*p) {
    while (*p == ' ')
      p++;
    if (!*p)
      break;
    const char *e = p;
    int depth = 0;
    while (*e && (depth > 0 || *e != ' ')) {
      depth += *e == '[' ? 1 : *e == ']' ? -1 : 0;
      e++;
    }
    ac_scalar t = AC_BOOL;
    unsigned rank = 0;
    if (got >= na || got >= max)
      return SIZE_MAX;
    ac_function_arg_info(c->ref, got, &t, &rank);
    if (!parse_arg(E.ctx, t, rank, p, (size_t)(e - p), &a[got]))
      return SIZE_MAX;
    got++;
    p = e;
  }
  return got == na ? got : SIZE_MAX;
}

#define MAXV 16

/* Runs c on args with the interpreter and with the plan; checks that they
 * agree and returns the plan's results as text ("L:C: error: MSG" for a
 * failure). */
static const char *cp_run(cprog *c, const char *args) {
  harness_buf b = {harness_out[harness_next++ % HARNESS_OUT], 0};
  b.s[0] = 0;
  if (!c->k) {
    hb_put(&b, "not compiled");
    return b.s;
  }
  ac_datum a[MAXV], ri[MAXV], rc[MAXV];
  memset(a, 0, sizeof a);
  size_t na = cp_args(c, args, a, MAXV), nr = ac_function_num_results(c->ref);
  if (na == SIZE_MAX || nr > MAXV) {
    hb_put(&b, "harness: bad arguments");
    return b.s;
  }
  ac_error *ei = NULL, *ec = NULL;
  ac_status si = ac_function_call(c->ref, a, na, ri, nr, &ei);
  ac_status sc = pl_run(c->plan, E.pool, c->k, a, na, rc, nr, &ec);
  CHECK_EQ_INT(sc, si);
  if (si == AC_OK && sc == AC_OK) {
    for (size_t i = 0; i < nr; i++) {
      bool same = same_datum(&ri[i], &rc[i]);
      if (!same) {
        harness_buf t = {harness_out[harness_next++ % HARNESS_OUT], 0};
        t.s[0] = 0;
        hb_datum(&t, &ri[i]);
        fprintf(stderr, "result %zu differs from the interpreter's %.300s\n", i, t.s);
      }
      CHECK(same);
      if (i)
        hb_put(&b, "\n");
      hb_datum(&b, &rc[i]);
    }
  } else if (sc != AC_OK) {
    harness_buf t = {harness_out[harness_next++ % HARNESS_OUT], 0};
    t.s[0] = 0;
    harness_error(&b, ec);
    if (si != AC_OK) {
      harness_error(&t, ei);
      ei = NULL;
      CHECK_STR(b.s, t.s);
    }
  }
  if (ei)
    ac_error_destroy(ei);
  for (size_t i = 0; si == AC_OK && i < nr; i++)
    ac_datum_release(&ri[i]);
  for (size_t i = 0; sc == AC_OK && i < nr; i++)
    ac_datum_release(&rc[i]);
  for (size_t i = 0; i < na; i++)
    ac_datum_release(&a[i]);
  return b.s;
}

/* Text of an i64 or f64 array of n elements k -> (k * mul + add) % mod. */
static char *seq_text(int64_t n, int64_t mul, int64_t add, int64_t mod) {
  char *s = malloc((size_t)n * 24 + 4), *p = s;
  *p++ = '[';
  for (int64_t k = 0; k < n; k++)
    p += sprintf(p, k ? ",%lld" : "%lld", (long long)((k * mul + add) % mod));
  *p++ = ']';
  *p = 0;
  return s;
}

/* ---- element-wise operations ---- */

UNIT_TEST(saxpy_end_to_end) {
  const char *src = "fn saxpy(a: f32, xs: f32[], ys: f32[]) -> f32[] {\n"
                    "  map(|x, y| a * x + y, xs, ys)\n"
                    "}\n";
  cprog c;
  CHECK(cp_open(&c, src, "saxpy"));
  CHECK(plan_has(&c, "alloc %"));
  CHECK(plan_has(&c, "map \"k0_map\" grain 16384"));
  CHECK(plan_has(&c, "chunks chunks("));
  CHECK(plan_has(&c, "check (%2 == %4)"));
  CHECK_STR(cp_run(&c, "2 [1,2,3] [0.5,0.5,0.5]"), "[2.5, 4.5, 6.5]");
  CHECK_STR(cp_run(&c, "2 [] []"), "[]");
  CHECK_STR(cp_run(&c, "2 [1,2,3] [1,2]"),
            "2:3: error: map: arrays have different shapes: [3] and [2]");
  CHECK_STR(cp_run(&c, "-0.0 [nan,inf,-1e-45] [0,-inf,0]"), "[nan, nan, 0.0]");
  /* many chunks: 100003 elements */
  char *xs = seq_text(100003, 7, 1, 1000), *ys = seq_text(100003, 3, 5, 17);
  size_t len = strlen(xs) + strlen(ys) + 16;
  char *args = malloc(len);
  snprintf(args, len, "0.25 %s %s", xs, ys);
  cp_run(&c, args);
  free(args);
  free(xs);
  free(ys);
  cp_close(&c);
}

UNIT_TEST(saxpy_vectorises) {
  const char *src = "fn saxpy(a: f32, xs: f32[], ys: f32[]) -> f32[] {\n"
                    "  map(|x, y| a * x + y, xs, ys)\n"
                    "}\n";
  cprog c;
  char *ir = NULL;
  CHECK(cp_open_ir(&c, src, "saxpy", &ir));
  /* vector loads, multiplies and stores of floats in the map's loop */
  bool vec = ir && strstr(ir, "x float>") && strstr(ir, "fmul <");
  if (!vec)
    fprintf(stderr, "%s\n", ir ? ir : "(no IR)");
  CHECK(vec);
  ac_string_destroy(E.ctx, ir);
  cp_close(&c);
}

UNIT_TEST(size_inference) {
  const char *src =
      "fn forward_diff(xs: f32[]) -> f32[] {\n"
      "  generate(len(xs) - 1, |i| xs[i + 1] - xs[i])\n"
      "}\n"
      "fn sizes(m: i32[,], n: i32, k: u8) -> (i64[], i64[,], i64) {\n"
      "  let (r, c) = shape(m);\n"
      "  (iota(n - 1), generate((r * 2, min(c, i64(k))), |i, j| i * 100 + j), len(m) % 3)\n"
      "}\n";
  cprog c;
  CHECK(cp_open(&c, src, "forward_diff"));
  CHECK(plan_has(&c, "alloc %2 : f32[] = [(%1 - 1)] site 0"));
  CHECK_EQ_INT(count(c.text, "launch"), 1);
  CHECK_STR(cp_run(&c, "[1,4,9,16]"), "[3.0, 5.0, 7.0]");
  CHECK_STR(cp_run(&c, "[1]"), "[]");
  CHECK_STR(cp_run(&c, "[]"), "2:3: error: negative extent -1");
  cp_close(&c);

  CHECK(cp_open(&c, src, "sizes"));
  /* r * 2, len(m) % 3, i64(k) and n - 1 (i32 arithmetic, wrapped to 32
   * bits) are all plan expressions: no scalar kernel */
  CHECK(plan_has(&c, "(%1 * 2)"));
  CHECK(plan_has(&c, "(%1 % 3)"));
  CHECK(plan_has(&c, "% 256) + 256) % 256)")); /* i64(k), k a u8, in the plan */
  CHECK(plan_has(&c, "% 4294967296) + 4294967296) % 4294967296)")); /* n - 1 */
  CHECK_EQ_INT(count(c.text, " scalar \""), 0);
  CHECK_STR(cp_run(&c, "[[1,2,3],[4,5,6]] 3 2"), "[0, 1]\n[[0, 1], [100, 101], [200, 201], "
                                                 "[300, 301]]\n2");
  CHECK_STR(cp_run(&c, "[[1,2,3],[4,5,6]] 0 200"), "6:4: error: negative extent -1");
  CHECK_STR(cp_run(&c, "[[1,2,3],[4,5,6]] -2147483647 200"),
            "6:4: error: negative extent -2147483648");
  cp_close(&c);
}

UNIT_TEST(building_arrays) {
  const char *src =
      "fn build(n: i64) -> (i64[], i32[,], (f32, bool)[], i64[,]) {\n"
      "  (iota(n), fill((2, 3), 7), fill(n, (1.5f32, true)), generate((2, 2), |i, j| 10 * i + j))\n"
      "}\n"
      "fn literals(x: f64, i: i64) -> (f64[], i32[,], u8[], (i32, bool)[], f64) {\n"
      "  ([1, x], [[1, 2], [3, 4]], [], [(1, true), (2, false)], [x, 2.0 * x, 3.0][i])\n"
      "}\n"
      "fn cube(n: u8) -> i64[,,] {\n"
      "  generate((2, n, 2), |i, j, k| 100 * i + 10 * j + k)\n"
      "}\n"
      "fn wide(n: i64) -> u8[,] {\n"
      "  fill((n, n), 1u8)\n"
      "}\n"
      "fn filled(n: i64, v: f32) -> f32[] {\n"
      "  fill(n, [v, 1.0][n])\n"
      "}\n";
  cprog c;
  CHECK(cp_open(&c, src, "build"));
  CHECK(plan_has(&c, "alloc %"));
  CHECK(plan_has(&c, ": i32[,] = [2, 3]"));
  CHECK_STR(cp_run(&c, "3"), "[0, 1, 2]\n[[7, 7, 7], [7, 7, 7]]\n[1.5, 1.5, 1.5]\n"
                             "[true, true, true]\n[[0, 1], [10, 11]]");
  CHECK_STR(cp_run(&c, "0"), "[]\n[[7, 7, 7], [7, 7, 7]]\n[]\n[]\n[[0, 1], [10, 11]]");
  CHECK_STR(cp_run(&c, "-2"), "2:4: error: negative extent -2");
  cp_run(&c, "70000");
  cp_close(&c);

  CHECK(cp_open(&c, src, "literals"));
  CHECK_STR(cp_run(&c, "2.5 1"), "[1.0, 2.5]\n[[1, 2], [3, 4]]\n[]\n[1, 2]\n[true, false]\n5.0");
  CHECK_STR(cp_run(&c, "2.5 3"), "5:59: error: index 3 out of bounds for dimension 0 of extent 3");
  cp_close(&c);

  CHECK(cp_open(&c, src, "cube"));
  CHECK_STR(cp_run(&c, "2"), "[[[0, 1], [10, 11]], [[100, 101], [110, 111]]]");
  CHECK_STR(cp_run(&c, "0"), "[[], []]");
  cp_run(&c, "255");
  cp_close(&c);

  CHECK(cp_open(&c, src, "wide"));
  CHECK_STR(cp_run(&c, "4294967296"), "11:3: error: array too large");
  CHECK_STR(cp_run(&c, "2"), "[[1, 1], [1, 1]]");
  cp_close(&c);

  /* the shape is checked before the value runs, as in the interpreter */
  CHECK(cp_open(&c, src, "filled"));
  CHECK_STR(cp_run(&c, "1 0.5"), "[1.0]");
  CHECK_STR(cp_run(&c, "-1 0.5"), "14:3: error: negative extent -1");
  CHECK_STR(cp_run(&c, "2 0.5"), "14:11: error: index 2 out of bounds for dimension 0 of extent 2");
  cp_close(&c);
}

UNIT_TEST(map_shapes_and_tuples) {
  const char *src = "fn divmod(xs: i32[,], d: i32) -> (i32, i32)[,] {\n"
                    "  map(|x| (x / d, x % d), xs)\n"
                    "}\n"
                    "fn norms(pts: (f64, f64)[]) -> (f64, bool)[] {\n"
                    "  map(|p| {\n"
                    "    let n = sqrt(p.0 * p.0 + p.1 * p.1);\n"
                    "    (n, n > 1.0)\n"
                    "  }, pts)\n"
                    "}\n"
                    "fn mixed(a: i32[,], p: (f64[,], bool[,])) -> f64[,] {\n"
                    "  map(|x, q| if q.1 { f64(x) } else { q.0 }, a, p)\n"
                    "}\n"
                    "fn sq(x: f64) -> f64 {\n"
                    "  x * x\n"
                    "}\n"
                    "fn by_name(m: f64[,]) -> (f64[,], f64[,]) {\n"
                    "  (map(sq, m), generate(shape(m), |i, j| sq(m[i, j]) + f64(i)))\n"
                    "}\n"
                    "fn nested(m: f64[,]) -> f64[,] {\n"
                    "  let (r, c) = shape(m);\n"
                    "  map(|x| x + fold(|a, b| a + b, 0.0, generate(c, |j| f64(j))), m)\n"
                    "}\n";
  cprog c;
  CHECK(cp_open(&c, src, "divmod"));
  CHECK_STR(cp_run(&c, "[[7,8],[9,10]] 4"), "[[1, 2], [2, 2]]\n[[3, 0], [1, 2]]");
  CHECK_STR(cp_run(&c, "[[7,-8],[-2147483648,10]] -1"),
            "[[-7, 8], [-2147483648, -10]]\n[[0, 0], [0, 0]]");
  CHECK_STR(cp_run(&c, "[[7,8],[9,10]] 0"), "[[0, 0], [0, 0]]\n[[7, 8], [9, 10]]");
  CHECK_STR(cp_run(&c, "[[],[]] 4"), "[[], []]\n[[], []]");
  cp_close(&c);

  CHECK(cp_open(&c, src, "norms"));
  CHECK_STR(cp_run(&c, "[3,0.6] [4,0.8]"), "[5.0, 1.0]\n[true, false]");
  /* a tuple of arrays of different lengths is refused where it is used */
  CHECK_STR(cp_run(&c, "[3,0.6] [4]"), "5:3: error: map: arrays have different shapes: [2] and [1]");
  cp_close(&c);

  CHECK(cp_open(&c, src, "mixed"));
  CHECK_STR(cp_run(&c, "[[1,2]] [[0.5,0.25]] [[true,false]]"), "[[1.0, 0.25]]");
  /* rank 2: both shapes, as the interpreter prints them */
  CHECK_STR(cp_run(&c, "[[1,2]] [[0.5,0.25]] [[true],[false]]"),
            "11:3: error: map: arrays have different shapes: [1, 2] and [2, 1]");
  cp_close(&c);

  CHECK(cp_open(&c, src, "by_name"));
  CHECK_STR(cp_run(&c, "[[1,2],[3,4]]"), "[[1.0, 4.0], [9.0, 16.0]]\n[[1.0, 4.0], [10.0, 17.0]]");
  cp_close(&c);

  CHECK(cp_open(&c, src, "nested"));
  CHECK_STR(cp_run(&c, "[[1,2,3],[4,5,6]]"), "[[4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]");
  cp_close(&c);
}

UNIT_TEST(gathers_and_backpermutes) {
  const char *src = "fn gathers(xs: i32[], m: i32[,], is: i64[], js: u8[]) -> (i32[], i32[]) {\n"
                    "  (gather(is, xs), gather((is, js), m))\n"
                    "}\n"
                    "fn transpose_by_hand(m: i32[,]) -> i32[,] {\n"
                    "  let (r, c) = shape(m);\n"
                    "  backpermute((c, r), |i, j| (j, i), m)\n"
                    "}\n"
                    "fn shift(xs: f32[], k: i64) -> f32[] {\n"
                    "  backpermute(len(xs), |i| i + k, xs)\n"
                    "}\n";
  cprog c;
  CHECK(cp_open(&c, src, "gathers"));
  CHECK_STR(cp_run(&c, "[10,20,30] [[1,2],[3,4],[5,6]] [2,0] [1,0]"), "[30, 10]\n[6, 1]");
  CHECK_STR(cp_run(&c, "[10,20,30] [[1,2],[3,4],[5,6]] [2,0] [5,0]"),
            "2:20: error: gather: index 5 out of bounds for dimension 1 of extent 2");
  CHECK_STR(cp_run(&c, "[10,20,30] [[1,2],[3,4],[5,6]] [2,-1] [1,0]"),
            "2:4: error: gather: index -1 out of bounds for dimension 0 of extent 3");
  CHECK_STR(cp_run(&c, "[10,20,30] [[1,2],[3,4],[5,6]] [2,0] [1]"),
            "2:20: error: gather: arrays have different shapes: [2] and [1]");
  CHECK_STR(cp_run(&c, "[] [[1,2],[3,4],[5,6]] [] []"), "[]\n[]");
  cp_close(&c);

  CHECK(cp_open(&c, src, "transpose_by_hand"));
  CHECK_STR(cp_run(&c, "[[1,2,3],[4,5,6]]"), "[[1, 4], [2, 5], [3, 6]]");
  cp_close(&c);

  CHECK(cp_open(&c, src, "shift"));
  CHECK_STR(cp_run(&c, "[1,2,3] 0"), "[1.0, 2.0, 3.0]");
  CHECK_STR(cp_run(&c, "[1,2,3] 1"),
            "9:3: error: backpermute: index 3 out of bounds for dimension 0 of extent 3");
  cp_close(&c);
}

UNIT_TEST(index_space) {
  const char *src =
      "fn slices(xs: i32[], m: i32[,]) -> (i32[], i32[], i32[,]) {\n"
      "  (slice(xs, 1, 3), slice(xs, 1, 8, 3), slice(m, (0, 1), (2, 3)))\n"
      "}\n"
      "fn drop(xs: i32[], k: i64) -> i32[] {\n"
      "  slice(xs, k, len(xs))\n"
      "}\n"
      "fn shapes(xs: i64[]) -> (i64[,], i64[,], i64[], i64[,]) {\n"
      "  let m = reshape((2, 3), xs);\n"
      "  (m, transpose(m), reverse(xs), replicate(2, slice(xs, 0, 2)))\n"
      "}\n"
      "fn strided(m: f64[,], a: i64, b: i64, s: i64) -> f64[,] {\n"
      "  slice(m, (a, 0), (b, 3), (s, 2))\n"
      "}\n"
      "fn reshaped(xs: (i32[], bool[]), r: i64, c: i64) -> ((i32, bool)[,], i32[,,]) {\n"
      "  let m = reshape((r, c), xs);\n"
      "  (transpose(m), replicate(r, reverse(m.0)))\n"
      "}\n";
  cprog c;
  CHECK(cp_open(&c, src, "slices"));
  CHECK_STR(cp_run(&c, "[0,1,2,3,4,5,6,7,8,9] [[1,2,3],[4,5,6]]"),
            "[1, 2]\n[1, 4, 7]\n[[2, 3], [5, 6]]");
  CHECK_STR(cp_run(&c, "[0,1] [[1,2,3],[4,5,6]]"),
            "2:4: error: slice: bounds 1..3 out of range for extent 2");
  CHECK_STR(cp_run(&c, "[0,1,2,3] [[1,2,3],[4,5,6]]"),
            "2:21: error: slice: bounds 1..8 out of range for extent 4");
  CHECK_STR(cp_run(&c, "[0,1,2,3,4,5,6,7] [[1,2],[4,5]]"),
            "2:41: error: slice: bounds 1..3 out of range for extent 2 in dimension 1");
  cp_close(&c);

  /* start, stop and extent are all unknown when compiling: the check
   * carries the three of them */
  CHECK(cp_open(&c, src, "drop"));
  CHECK_STR(cp_run(&c, "[1,2,3] 1"), "[2, 3]");
  CHECK_STR(cp_run(&c, "[1,2,3] 3"), "[]");
  CHECK_STR(run(src, "drop", "[1,2] 3"), "5:3: error: slice: bounds 3..2 out of range for extent 2");
  CHECK_STR(cp_run(&c, "[1,2] 3"), "5:3: error: slice: bounds 3..2 out of range for extent 2");
  cp_close(&c);

  CHECK(cp_open(&c, src, "shapes"));
  CHECK(plan_has(&c, "view %"));
  CHECK_STR(cp_run(&c, "[1,2,3,4,5,6]"),
            "[[1, 2, 3], [4, 5, 6]]\n[[1, 4], [2, 5], [3, 6]]\n[6, 5, 4, 3, 2, 1]\n[[1, 2], [1, 2]]");
  CHECK_STR(cp_run(&c, "[1,2,3,4]"), "8:11: error: reshape: cannot reshape 4 elements to [2, 3]");
  cp_close(&c);

  CHECK(cp_open(&c, src, "strided"));
  CHECK_STR(cp_run(&c, "[[1,2,3],[4,5,6],[7,8,9]] 0 3 2"), "[[1.0, 3.0], [7.0, 9.0]]");
  CHECK_STR(cp_run(&c, "[[1,2,3],[4,5,6],[7,8,9]] 1 1 2"), "[]");
  CHECK_STR(cp_run(&c, "[[1,2,3],[4,5,6],[7,8,9]] 0 3 0"),
            "12:3: error: slice: stride 0 is not positive in dimension 0");
  CHECK_STR(cp_run(&c, "[[1,2,3],[4,5,6],[7,8,9]] 0 3 9223372036854775807"), "[[1.0, 3.0]]");
  cp_close(&c);

  CHECK(cp_open(&c, src, "reshaped"));
  CHECK_STR(cp_run(&c, "[1,2,3,4,5,6] [true,false,true,false,true,false] 3 2"),
            "[[1, 3, 5], [2, 4, 6]]\n[[true, true, true], [false, false, false]]\n"
            "[[[2, 1], [4, 3], [6, 5]], [[2, 1], [4, 3], [6, 5]], [[2, 1], [4, 3], [6, 5]]]");
  /* the count and both extents unknown when compiling: the check carries
   * the three of them; the rules are rt_array_count's */
  CHECK_STR(cp_run(&c, "[] [] 0 4611686018427387904"),
            "15:11: error: reshape: cannot reshape 0 elements to [0, 4611686018427387904]");
  CHECK_STR(cp_run(&c, "[] [] 0 4"), "[[], [], [], []]\n[[], [], [], []]\n[]");
  CHECK_STR(cp_run(&c, "[] [] 0 -1"), "15:11: error: negative extent -1");
  CHECK_STR(cp_run(&c, "[1,2,3,4] [true,false,true,false] 4611686018427387905 "
                       "4611686018427387904"),
            "15:11: error: reshape: cannot reshape 4 elements to [4611686018427387905, "
            "4611686018427387904]");
  CHECK_STR(cp_run(&c, "[] [] 1099511627776 0"),
            "15:11: error: reshape: cannot reshape 0 elements to [1099511627776, 0]");
  CHECK_STR(cp_run(&c, "[1,2,3,4,5,6] [true,false,true,false,true,false] 4 2"),
            "15:11: error: reshape: cannot reshape 6 elements to [4, 2]");
  CHECK_STR(cp_run(&c, "[1,2] [true] 1 2"),
            "15:11: error: reshape: arrays have different shapes: [2] and [1]");
  cp_close(&c);
}

/* ---- stencils ---- */

UNIT_TEST(stencils_small) {
  const char *src =
      "fn left_neighbour(xs: i32[]) -> (i32[], i32[], i32[], i32[]) {\n"
      "  (stencil(|w| w[-1], clamp, xs), stencil(|w| w[-1], mirror, xs),\n"
      "   stencil(|w| w[-1], wrap, xs), stencil(|w| w[-1], 0, xs))\n"
      "}\n"
      "fn smooth(m: f64[,]) -> f64[,] {\n"
      "  stencil(|w| (w[-1, 0] + w[1, 0] + w[0, -1] + w[0, 1]) / 4.0, clamp, m)\n"
      "}\n"
      "fn far(xs: i32[]) -> (i32[], i32[], i32[], i32[]) {\n"
      "  (stencil(|w| w[-3] + 10 * w[5], mirror, xs), stencil(|w| w[-3] + 10 * w[5], wrap, xs),\n"
      "   stencil(|w| w[-3] + 10 * w[5], clamp, xs), stencil(|w| w[-3] + 10 * w[5], -1, xs))\n"
      "}\n"
      "fn huge(xs: i64[]) -> (i64[], i64[], i64[], i64[]) {\n"
      "  (stencil(|w| w[-9223372036854775807] + w[9223372036854775807], mirror, xs),\n"
      "   stencil(|w| w[-9223372036854775807] + w[9223372036854775807], wrap, xs),\n"
      "   stencil(|w| w[-9223372036854775807] + w[9223372036854775807], clamp, xs),\n"
      "   stencil(|w| w[-9223372036854775807] + w[9223372036854775807], 7, xs))\n"
      "}\n"
      "fn nested(xs: i64[]) -> i64[] {\n"
      "  stencil(|w| fold(|a, b| a + b, 0, generate(3, |k| w[-1] * k + w[2])), wrap, xs)\n"
      "}\n"
      "fn pairs(p: (i32[,], bool[,]), v: i32) -> (i32, bool)[,] {\n"
      "  stencil(|w| (w[0, 1].0 + w[1, -1].0, w[-1, 0].1 || w[0, 0].1), (v, true), p)\n"
      "}\n";
  cprog c;
  CHECK(cp_open(&c, src, "left_neighbour"));
  CHECK_STR(cp_run(&c, "[10,20,30,40]"),
            "[10, 10, 20, 30]\n[20, 10, 20, 30]\n[40, 10, 20, 30]\n[0, 10, 20, 30]");
  CHECK_STR(cp_run(&c, "[7]"), "[7]\n[7]\n[7]\n[0]");
  CHECK_STR(cp_run(&c, "[]"), "[]\n[]\n[]\n[]");
  cp_close(&c);

  CHECK(cp_open(&c, src, "smooth"));
  CHECK_STR(cp_run(&c, "[[0,4],[8,12]]"), "[[3.0, 5.0], [7.0, 9.0]]");
  cp_run(&c, "[[1,2,3,4],[5,6,7,8],[9,10,11,12],[13,14,15,16],[17,18,19,20]]");
  cp_close(&c);

  CHECK(cp_open(&c, src, "far"));
  cp_run(&c, "[5,6,7]");
  cp_run(&c, "[5]");
  cp_run(&c, "[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20]");
  cp_close(&c);

  CHECK(cp_open(&c, src, "huge"));
  cp_run(&c, "[1,2,3,4,5]");
  cp_run(&c, "[1]");
  cp_close(&c);

  CHECK(cp_open(&c, src, "nested"));
  cp_run(&c, "[1,2,3,4,5,6,7]");
  cp_close(&c);

  CHECK(cp_open(&c, src, "pairs"));
  cp_run(&c, "[[1,2,3],[4,5,6]] [[true,false,false],[false,false,true]] 9");
  CHECK_STR(cp_run(&c, "[[1,2,3],[4,5,6]] [[true,false,false]] 9"),
            "22:3: error: stencil: arrays have different shapes: [2, 3] and [1, 3]");
  cp_close(&c);
}

/* Arrays large enough for interior rows and columns, every boundary, ranks
 * 1 to 3, against the interpreter. */
UNIT_TEST(stencils_large) {
  const char *src =
      "fn s1(n: i64, c: i64) -> (i64[], i64[], i64[], i64[]) {\n"
      "  let xs = generate(n, |i| (i * 7919) % 1009);\n"
      "  (stencil(|w| w[-2] - 3 * w[-1] + 5 * w[0] + 7 * w[1] + 11 * w[3], clamp, xs),\n"
      "   stencil(|w| w[-2] - 3 * w[-1] + 5 * w[0] + 7 * w[1] + 11 * w[3], mirror, xs),\n"
      "   stencil(|w| w[-2] - 3 * w[-1] + 5 * w[0] + 7 * w[1] + 11 * w[3], wrap, xs),\n"
      "   stencil(|w| w[-2] - 3 * w[-1] + 5 * w[0] + 7 * w[1] + 11 * w[3], c, xs))\n"
      "}\n"
      "fn s2(r: i64, k: i64) -> (f32[,], f32[,], f32[,], f32[,]) {\n"
      "  let m = generate((r, k), |i, j| f32((i * 31 + j * 17) % 101));\n"
      "  (stencil(|w| w[-1, 0] + 2.0 * w[1, 1] - w[0, -2] + w[2, 0] * 0.5, clamp, m),\n"
      "   stencil(|w| w[-1, 0] + 2.0 * w[1, 1] - w[0, -2] + w[2, 0] * 0.5, mirror, m),\n"
      "   stencil(|w| w[-1, 0] + 2.0 * w[1, 1] - w[0, -2] + w[2, 0] * 0.5, wrap, m),\n"
      "   stencil(|w| w[-1, 0] + 2.0 * w[1, 1] - w[0, -2] + w[2, 0] * 0.5, -1.5, m))\n"
      "}\n"
      "fn s3(n: i64) -> (i32[,,], i32[,,]) {\n"
      "  let a = generate((n, n + 1, n + 2), |i, j, k| i32((i * 13 + j * 7 + k) % 23));\n"
      "  (stencil(|w| w[-1, 0, 1] + w[1, -1, 0] * w[0, 1, -1], wrap, a),\n"
      "   stencil(|w| w[-1, 0, 1] + w[1, -1, 0] * w[0, 1, -1], 100, a))\n"
      "}\n";
  cprog c;
  CHECK(cp_open(&c, src, "s1"));
  cp_run(&c, "100003 -4");
  cp_run(&c, "4 -4");
  cp_run(&c, "2 1");
  cp_close(&c);
  CHECK(cp_open(&c, src, "s2"));
  cp_run(&c, "300 401");
  cp_run(&c, "3 2");
  cp_run(&c, "1 1");
  cp_close(&c);
  CHECK(cp_open(&c, src, "s3"));
  cp_run(&c, "30");
  cp_run(&c, "1");
  cp_close(&c);
}

/* ---- plan-level control ---- */

UNIT_TEST(lets_tuples_calls_ifs) {
  const char *src =
      "fn helper(xs: f32[], k: f32) -> f32[] {\n"
      "  map(|x| x * k, xs)\n"
      "}\n"
      "fn pick(c: bool, a: f32[], b: f32[]) -> f32[] {\n"
      "  if c { a } else { b }\n"
      "}\n"
      "fn ctl(xs: f32[], flag: bool, k: f32) -> (f32[], f32[], i64, f32[]) {\n"
      "  let (a, b) = (helper(xs, k), reverse(xs));\n"
      "  let c = if flag { a } else { map(|x| x + 1.0, b) };\n"
      "  let big = len(xs) > 2 && fold(|p, q| p + q, 0.0, xs) > 1.0;\n"
      "  (c, if big { b } else { a }, len(c), pick(!flag, a, helper(b, 2.0)))\n"
      "}\n"
      "fn guarded(xs: i64[], i: i64) -> i64 {\n"
      "  if i < len(xs) { fold(|a, b| a + b, 0, slice(xs, i, len(xs))) } else { -1 }\n"
      "}\n"
      "fn ors(xs: i64[], i: i64) -> (bool, bool) {\n"
      "  (i >= len(xs) || iota(i)[i - 1] == xs[i], i < len(xs) && generate(3, |j| j)[i] == 0)\n"
      "}\n";
  cprog c;
  CHECK(cp_open(&c, src, "ctl"));
  CHECK(plan_has(&c, "if %"));
  CHECK(plan_has(&c, "} else {"));
  CHECK_STR(cp_run(&c, "[1,2,3] true 2"), "[2.0, 4.0, 6.0]\n[3.0, 2.0, 1.0]\n3\n[6.0, 4.0, 2.0]");
  CHECK_STR(cp_run(&c, "[1,2,3] false 2"), "[4.0, 3.0, 2.0]\n[3.0, 2.0, 1.0]\n3\n[2.0, 4.0, 6.0]");
  CHECK_STR(cp_run(&c, "[0.5] false 2"), "[1.5]\n[1.0]\n1\n[1.0]");
  cp_close(&c);

  /* the fold runs only when the branch is taken: an out-of-range slice in
   * the other branch is never evaluated */
  CHECK(cp_open(&c, src, "guarded"));
  CHECK_STR(cp_run(&c, "[1,2,3,4] 1"), "9");
  CHECK_STR(cp_run(&c, "[1,2,3,4] 9"), "-1");
  CHECK_STR(cp_run(&c, "[1,2,3,4] -1"),
            "14:42: error: slice: bounds -1..4 out of range for extent 4");
  cp_close(&c);

  CHECK(cp_open(&c, src, "ors"));
  CHECK_STR(cp_run(&c, "[0,0,1] 2"), "true\nfalse");
  CHECK_STR(cp_run(&c, "[0,0,1] 7"), "true\nfalse");
  CHECK_STR(cp_run(&c, "[0,0] 0"), "17:20: error: index -1 out of bounds for dimension 0 of extent 0");
  cp_close(&c);
}

UNIT_TEST(array_loops) {
  const char *src =
      "fn diffuse(xs: i32[], steps: i32) -> i32[] {\n"
      "  iterate(steps, |v| stencil(|w| (w[-1] + 2 * w[0] + w[1]) / 4, 0, v), xs)\n"
      "}\n"
      "fn doubling(xs: i64[], limit: i64) -> i64[] {\n"
      "  while(|v| v[0] < limit, |v| map(|x| 2 * x, v), xs)\n"
      "}\n"
      "fn swaps(n: i64, xs: f32[], ys: f32[]) -> (f32[], f32[]) {\n"
      "  iterate(n, |s| (s.1, s.0), (xs, ys))\n"
      "}\n"
      "fn counted(xs: i64[], n: i64) -> (i64[], i64) {\n"
      "  loop (v = xs, i = 0i64) while i < n { (map(|x| x + i, v), i + 1) }\n"
      "}\n"
      "fn sums(xs: f64[], n: u64) -> f64 {\n"
      "  iterate(n, |s| s + fold(|a, b| a + b, 0.0, xs), 0.0)\n"
      "}\n"
      "fn halve(xs: i64[]) -> (i64[], i64) {\n"
      "  while(|s| len(s.0) > 1, |s| (generate(len(s.0) / 2, |i| s.0[2 * i] + s.0[2 * i + 1]),\n"
      "                              s.1 + 1), (xs, 0i64))\n"
      "}\n";
  cprog c;
  CHECK(cp_open(&c, src, "diffuse"));
  CHECK(plan_has(&c, "for %"));
  CHECK_STR(cp_run(&c, "[0,0,16,0,0] 2"), "[1, 4, 6, 4, 1]");
  CHECK_STR(cp_run(&c, "[0,0,16,0,0] 0"), "[0, 0, 16, 0, 0]");
  CHECK_STR(cp_run(&c, "[0,0,16,0,0] -3"), "[0, 0, 16, 0, 0]");
  cp_close(&c);

  CHECK(cp_open(&c, src, "doubling"));
  CHECK(plan_has(&c, "while {"));
  CHECK(plan_has(&c, "break unless %"));
  CHECK_STR(cp_run(&c, "[1,5] 100"), "[128, 640]");
  CHECK_STR(cp_run(&c, "[]  100"), "5:13: error: index 0 out of bounds for dimension 0 of extent 0");
  cp_close(&c);

  CHECK(cp_open(&c, src, "swaps"));
  CHECK_STR(cp_run(&c, "3 [1,2] [3]"), "[3.0]\n[1.0, 2.0]");
  CHECK_STR(cp_run(&c, "4 [1,2] [3]"), "[1.0, 2.0]\n[3.0]");
  cp_close(&c);

  CHECK(cp_open(&c, src, "counted"));
  CHECK_STR(cp_run(&c, "[10,20] 3"), "[13, 23]\n3");
  CHECK_STR(cp_run(&c, "[10,20] 0"), "[10, 20]\n0");
  cp_close(&c);

  /* scalar state, but the body has array work: a plan loop too */
  CHECK(cp_open(&c, src, "sums"));
  CHECK(plan_has(&c, "for %"));
  CHECK_STR(cp_run(&c, "[0.5,0.25] 4"), "3.0");
  CHECK_STR(cp_run(&c, "[0.5,0.25] 0"), "0.0");
  cp_close(&c);

  CHECK(cp_open(&c, src, "halve"));
  CHECK_STR(cp_run(&c, "[1,2,3,4,5,6,7,8,9]"), "[36]\n3");
  CHECK_STR(cp_run(&c, "[]"), "[]\n0");
  cp_close(&c);
}

UNIT_TEST(scalar_kernels) {
  const char *src =
      "fn mean(xs: f64[]) -> f64 {\n"
      "  fold(|a, b| a + b, 0.0, xs) / f64(len(xs))\n"
      "}\n"
      "fn pick(xs: f64[], i: i64) -> f64 {\n"
      "  [1.0, 2.0, 3.0][i] + map(|x| x * 2.0, xs)[i]\n"
      "}\n"
      "fn poly(x: f64, k: i32) -> (f64, i32, bool) {\n"
      "  let y = x * x + 1.0;\n"
      "  let n = loop (a = 0i32, i = 0) while i < k { (a + i, i + 1) };\n"
      "  (sqrt(y), n.0, y > 2.0)\n"
      "}\n";
  cprog c;
  CHECK(cp_open(&c, src, "mean"));
  /* the fold's start value is a literal: a `set`, not a kernel; the
   * division is scalar code around one full reduction, computed by the
   * fold's own kernel once the sum is known (lw_epilogue): one kernel */
  CHECK_EQ_INT(count(c.text, " scalar \""), 0);
  CHECK_EQ_INT(c.plan->nkernels, 1);
  CHECK_STR(cp_run(&c, "[1,2,3,4]"), "2.5");
  CHECK_STR(cp_run(&c, "[]"), "nan");
  cp_close(&c);

  CHECK(cp_open(&c, src, "pick"));
  CHECK_STR(cp_run(&c, "[5,6,7] 2"), "17.0");
  CHECK_STR(cp_run(&c, "[5,6,7] 3"), "5:3: error: index 3 out of bounds for dimension 0 of extent 3");
  CHECK_STR(cp_run(&c, "[5] 2"), "5:24: error: index 2 out of bounds for dimension 0 of extent 1");
  cp_close(&c);

  /* scalar code without array work: one kernel for the whole body */
  CHECK(cp_open(&c, src, "poly"));
  CHECK_EQ_INT(count(c.text, "launch"), 1);
  CHECK_STR(cp_run(&c, "3 5"), "3.1622776601683795\n10\ntrue");
  CHECK_STR(cp_run(&c, "0 -1"), "1.0\n0\nfalse");
  cp_close(&c);
}

/* Results that are parameters, or the same array twice. */
UNIT_TEST(results_share_words) {
  const char *src = "fn twice(xs: f32[], k: i64) -> (f32[], f32[], i64, i64) {\n"
                    "  (xs, xs, k, k)\n"
                    "}\n";
  cprog c;
  CHECK(cp_open(&c, src, "twice"));
  CHECK_EQ_INT(count(c.text, "launch"), 0);
  CHECK_STR(cp_run(&c, "[1,2] 3"), "[1.0, 2.0]\n[1.0, 2.0]\n3\n3");
  cp_close(&c);
}

static void setup(void) {
  E.ctx = ac_context_create();
  ac_error *err = NULL;
  if (nat_jit_create(E.ctx, &E.J, &err) != AC_OK) {
    fprintf(stderr, "jit: %s\n", err ? ac_error_message(err) : "?");
    ac_error_destroy(err);
  }
  E.pool = rt_pool_create(E.ctx, 4);
}

static void teardown(void) {
  rt_pool_destroy(E.pool);
  nat_jit_destroy(E.J);
  ac_context_destroy(E.ctx);
}

UNIT_TEST(start) {
  setup();
  CHECK(E.J != NULL && E.pool != NULL);
}

UNIT_TEST(finish) {
  teardown();
}

UNIT_MAIN(start, saxpy_end_to_end, saxpy_vectorises, size_inference, building_arrays,
          map_shapes_and_tuples, gathers_and_backpermutes, index_space, stencils_small,
          stencils_large, lets_tuples_calls_ifs, array_loops, scalar_kernels,
          results_share_words, finish)
