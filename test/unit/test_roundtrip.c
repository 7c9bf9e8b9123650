/* Unit tests of the parser (lib/ir/parse.c) and the printer (lib/ir/print.c).
 *
 * - The IR the parser builds (de Bruijn indices, literal flags and values,
 *   the layout of rec/loop/stencil/array literals, node locations).
 * - Canonical prints of every construct, from parsed and from hand-built IR
 *   (names, literal spellings, parentheses).
 * - print -> parse -> print is a fixed point, and re-parsing the print gives
 *   the same tree: on a corpus, on every .ac file of the repository
 *   ($ARRAYC_SOURCE_DIR), and on programs produced by mutating the corpus.
 * - Diagnostics: message, position and status of scope and syntax errors.
 * - Robustness: pathological nesting, random bytes and token soup, and
 *   every allocation failing in turn (the suite also runs under ASan).
 */
#define _POSIX_C_SOURCE 200809L
#include "ir.h"
#include "lex.h"
#include "unit.h"

#include <dirent.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>

static ac_context *ctx;

static void setup(void) {
  ctx = ac_context_create();
}
static void teardown(void) {
  ac_context_destroy(ctx);
}

/* Parses text without checking; NULL (and *err) on failure. */
static ac_module *parse_raw(const char *text, size_t n, ac_error **err) {
  ac_module *m = ac_module_create(ctx, "t.ac");
  if (!m)
    return NULL;
  m->src = ac_strndup(ctx, text, n);
  m->srclen = n;
  if (ir_parse(m, text, n, err) != AC_OK) {
    ac_module_destroy(m);
    return NULL;
  }
  return m;
}

static char *print_or_report(ac_module *m) {
  ac_error *e = NULL;
  char *s = ac_module_print(m, &e);
  if (!s)
    fprintf(stderr, "  print failed: %s", e ? ac_error_text(e) : "out of memory\n");
  ac_error_destroy(e);
  return s;
}

/* Canonical print of unchecked text; NULL if it does not parse. */
static char *canon_raw(const char *text) {
  ac_error *e = NULL;
  ac_module *m = parse_raw(text, strlen(text), &e);
  if (!m) {
    fprintf(stderr, "  parse failed: %s", e ? ac_error_text(e) : "out of memory\n");
    ac_error_destroy(e);
    return NULL;
  }
  char *s = print_or_report(m);
  ac_module_destroy(m);
  return s;
}

/* ---- structural equality across two modules --------------------------------- */

static bool same_tree(const ac_module *a, ir_ref x, const ac_module *b, ir_ref y) {
  const ir_node *p = ir_node_get(a, x), *q = ir_node_get(b, y);
  const uint16_t fl = IR_F_SUFFIX | IR_F_CTX | IR_F_NEG | IR_F_FLOATLIT | IR_F_INFNAN;
  if (p->op != q->op || p->nkids != q->nkids || p->attr != q->attr ||
      (p->flags & fl) != (q->flags & fl) || p->type != q->type || p->lit.u != q->lit.u)
    return false;
  if (p->op == IR_ARRLIT &&
      memcmp(&a->ints[p->aux], &b->ints[q->aux], (size_t)p->attr * sizeof(int64_t)) != 0)
    return false;
  for (uint32_t i = 0; i < p->nkids; i++)
    if (!same_tree(a, ir_kid(a, x, i), b, ir_kid(b, y, i)))
      return false;
  return true;
}

static bool same_module(const ac_module *a, const ac_module *b) {
  if (a->nfuncs != b->nfuncs)
    return false;
  for (size_t i = 0; i < a->nfuncs; i++) {
    const ir_func *f = &a->funcs[i], *g = &b->funcs[i];
    if (f->name != g->name || f->nparams != g->nparams || f->result != g->result ||
        !same_tree(a, f->body, b, g->body))
      return false;
    for (uint32_t k = 0; k < f->nparams; k++)
      if (ir_func_param(a, f, k) != ir_func_param(b, g, k))
        return false;
  }
  return true;
}

/* Unchecked: the print re-parses to the same tree and prints the same. */
static bool raw_fixpoint(const char *text, size_t n, const char *what) {
  ac_module *m = parse_raw(text, n, NULL);
  if (!m)
    return false;
  char *s1 = print_or_report(m);
  ac_error *e = NULL;
  ac_module *m2 = s1 ? parse_raw(s1, strlen(s1), &e) : NULL;
  char *s2 = m2 ? print_or_report(m2) : NULL;
  bool ok = s2 && strcmp(s1, s2) == 0 && same_module(m, m2);
  if (!ok)
    fprintf(stderr, "  raw round trip of %s failed%s%s\n--- first print:\n%s--- second:\n%s", what,
            e ? ": " : "", e ? ac_error_text(e) : "", s1 ? s1 : "", s2 ? s2 : "");
  ac_error_destroy(e);
  ac_string_destroy(ctx, s1);
  ac_string_destroy(ctx, s2);
  ac_module_destroy(m);
  ac_module_destroy(m2);
  CHECK(ok);
  return true;
}

/* Checked (parse + verify): print -> parse -> print is a fixed point.
 * Returns false if the text itself is rejected. */
static bool checked_fixpoint(const char *text, size_t n, const char *what) {
  ac_module *m = NULL, *m2 = NULL;
  ac_error *e = NULL;
  if (ac_module_parse(ctx, what, text, n, &m, NULL) != AC_OK)
    return false;
  char *s1 = print_or_report(m);
  if (s1 && ac_module_parse(ctx, "<print>", s1, strlen(s1), &m2, &e) != AC_OK)
    m2 = NULL;
  char *s2 = m2 ? print_or_report(m2) : NULL;
  bool ok = s2 && strcmp(s1, s2) == 0;
  if (!ok)
    fprintf(stderr, "  checked round trip of %s failed%s%s\n--- first print:\n%s--- second:\n%s",
            what, e ? ": " : "", e ? ac_error_text(e) : "", s1 ? s1 : "", s2 ? s2 : "");
  ac_error_destroy(e);
  ac_string_destroy(ctx, s1);
  ac_string_destroy(ctx, s2);
  ac_module_destroy(m);
  ac_module_destroy(m2);
  CHECK(ok);
  return true;
}

static ac_module *parse_ok(const char *text) {
  ac_error *e = NULL;
  ac_module *m = parse_raw(text, strlen(text), &e);
  if (!m)
    fprintf(stderr, "  parse failed: %s", e ? ac_error_text(e) : "out of memory\n");
  ac_error_destroy(e);
  CHECK(m != NULL);
  return m;
}

/* ---- a corpus covering every construct --------------------------------------- */

static const char *const corpus[] = {
    "fn dotp(xs: f32[], ys: f32[]) -> f32 {\n"
    "  fold(|a, b| a + b, 0.0, map(|x, y| x * y, xs, ys))\n}\n",

    "fn cnd(d: f32) -> f32 {\n"
    "  let k = 1.0 / (1.0 + 0.2316419 * abs(d));\n"
    "  let w = 0.3989422804 * exp(-0.5 * d * d) * k * (0.31938153 + k * (-0.356563782 + k));\n"
    "  if d > 0.0 { 1.0 - w } else { w }\n}\n",

    "fn bs(s: f32[], x: f32[], t: f32[], r: f32, v: f32) -> (f32[], f32[]) {\n"
    "  map(|s, x, t| { let sq = sqrt(t); let e = exp(-r * t);\n"
    "    (s * cnd(sq) - x * e, x * e * (1.0 - cnd(sq))) }, s, x, t)\n}\n"
    "fn cnd(d: f32) -> f32 { d }\n",

    "fn edit_distance(s: u8[], t: u8[]) -> i32 {\n"
    "  let n = len(s); let m = len(t);\n"
    "  let d = rec (i in 0..=n, j in 0..=m) -> i32 {\n"
    "    if i == 0 { i32(j) } else if j == 0 { i32(i) }\n"
    "    else { min(min(d[i-1, j] + 1, d[i, j-1] + 1),\n"
    "               d[i-1, j-1] + (if s[i-1] == t[j-1] { 0 } else { 1 })) }\n"
    "  };\n  d[n, m]\n}\n",

    "fn fib(n: i64) -> i64[] {\n"
    "  rec f (i in 0..n) -> i64 { if i < 2 { i } else { f[i - 1] + f[i - 2] } }\n}\n",

    "fn pairs(n: i64) -> (i64, f32)[,] {\n"
    "  let e = rec g (i in 1..=n, j in 0..n) -> (i64, f32) { (i + j, 1.0f32) };\n  e\n}\n",

    "fn loops(xs: f64[]) -> (f64, i64) {\n"
    "  let (acc, i) = loop (acc = 0.0, i = 0i64) while i < len(xs) {\n"
    "    let x = xs[i];\n    (acc + x * x, i + 1)\n  };\n"
    "  let c = loop (v = 10) while v > 0 { v - 1 };\n  (acc + f64(c), i)\n}\n",

    "fn stencils(xs: i32[], m: f64[,]) -> (i32[], i32[], i32[], i32[], f64[,]) {\n"
    "  (stencil(|w| w[-1], clamp, xs), stencil(|w| w[-1], mirror, xs),\n"
    "   stencil(|w| w[-1], wrap, xs), stencil(|w| w[-1] + w[1], 0, xs),\n"
    "   stencil(|w| (w[-1, 0] + w[1, 0]) / 4.0, -1.5, m))\n}\n",

    "fn lits() -> (f64[], i32[,], u8[], (i32, bool)[], i32[,]) {\n"
    "  ([1, 2.5], [[1, 2], [3, 4]], [], [(1, true), (2, false)], [[], []])\n}\n",

    "fn numbers() -> (i8, u8, i64, u64, f32, f64, f64, f64, f64, f64, i32, i32) {\n"
    "  (-128i8, 0xffu8, -9223372036854775808i64, 18446744073709551615u64, 1.5e-7f32,\n"
    "   1e300, -0.0, inf, -inf, nan, 0b1010, 1_000_000)\n}\n",

    "fn ops(a: i32, b: i32, c: bool) -> (i32, bool, i32, bool, i32, i32) {\n"
    "  (1 + 2 * a - b / 3 % 4, a & 1 == 0 || c && !c, -2 * a << 1 >> b,\n"
    "   (a < b) == (b >= a), ~a ^ b | a & b, -(a + b) - -a - (-5) - -(5))\n}\n",

    "fn assoc(a: i32, b: i32, c: i32) -> (i32, i32, i32, i32, bool) {\n"
    "  (a - (b - c), (a - b) - c, a / (b * c), (a + b) * c, (a == b) != (b == c))\n}\n",

    "fn tuples(p: (i32, (f64, bool))) -> ((bool, f64), i32, ()) {\n"
    "  let (a, b) = p;\n  let (x, y) = (b.1, b.0,);\n  ((x, y), a, ())\n}\n",

    "fn arrays(xs: f32[], m: f32[,], idx: i64[]) -> f32 {\n"
    "  let s = shape(m);\n  let n = len(xs);\n"
    "  let a = generate((s.0, s.1), |i, j| m[i, j] * 2.0);\n"
    "  let b = fill(n, 1.0f32);\n  let c = gather(idx, xs);\n"
    "  let d = backpermute(n, |i| n - 1 - i, xs);\n"
    "  let e = scatter(idx, c, xs);\n  let f = permute(|x, y| x + y, b, |i| i, xs);\n"
    "  let g = slice(xs, 1, n, 2);\n  let h = reshape((2, n / 2), xs);\n"
    "  let k = transpose(m);\n  let l = reverse(xs);\n  let o = replicate(3, xs);\n"
    "  let p = filter(|x| x > 0.0, xs);\n  let q = iota(n);\n"
    "  let r = scan(|x, y| x + y, 0.0, xs);\n  let t = scan_incl(|x, y| x + y, xs);\n"
    "  let u = scanr(|x, y| x + y, 0.0, xs);\n  let v = scanr_incl(|x, y| x + y, xs);\n"
    "  let w = fold_seg(|x, y| x + y, 0.0, xs, idx);\n"
    "  let z = scan_seg(|x, y| x + y, 0.0, xs, idx);\n"
    "  let z2 = scan_incl_seg(|x, y| x + y, xs, idx);\n"
    "  let it = iterate(3, |v| map(|x| x * 2.0, v), xs);\n"
    "  let wh = while(|v| v[0] < 10.0, |v| map(|x| x + 1.0, v), xs);\n"
    "  fold(|x, y| x + y, 0.0, xs) + a[0, 0] + f[0] + g[0] + h[0, 0] + k[0, 0]\n}\n",

    "fn math(x: f64, y: f32) -> f64 {\n"
    "  sqrt(x) + rsqrt(x) + cbrt(x) + exp(x) + exp2(x) + expm1(x) + log(x) + log2(x) +\n"
    "  log10(x) + log1p(x) + pow(x, 2.0) + sin(x) + cos(x) + tan(x) + asin(x) + acos(x) +\n"
    "  atan(x) + atan2(x, 1.0) + sinh(x) + cosh(x) + tanh(x) + floor(x) + ceil(x) +\n"
    "  round(x) + trunc(x) + fma(x, x, x) + erf(x) + erfc(x) + hypot(x, x) + copysign(x, -1.0) +\n"
    "  f64(y) + f64(isnan(x)) + f64(isinf(x) || isfinite(x)) + abs(x) + min(x, 1.0) + max(x, 2.0)\n"
    "}\n",

    "fn casts(x: f64) -> (f32, i32, u8, bool, i64) {\n"
    "  (f32(1), i32(2.7), u8(300i32), bool(2), i64(x))\n}\n",

    "fn sq(x: f64) -> f64 { x * x }\n"
    "fn squares(xs: f64[]) -> f64[] { map(sq, xs) }\n"
    "fn later(xs: f64[]) -> f64[] { map(helper, xs) }\n"
    "fn helper(v: f64) -> f64 { sq(v) + 1.0 }\n",

    "fn shadow(len: i64, xs: f32[]) -> i64 {\n  let f32 = len + 1;\n  f32 + len(xs)\n}\n",

    "fn blocks(x: i32) -> (i32, i32) {\n  let y = x + 1;\n  let y = { let t = y * 2; t * 10 };\n"
    "  let z = { let q = 1; { let r = q; r } } + 1;\n  (y, z)\n}\n",

    "fn conds(x: f64) -> i32 {\n"
    "  let a = if x > 0.0 { let t = 1; t } else if x < 0.0 { -1 } else { 0 };\n"
    "  let b = if x == 1.0 { if x != 2.0 { 1 } else { 2 } } else { 3 };\n"
    "  a + b + (if true { 1 } else { 0 })\n}\n",

    "fn nested(m: f64[,], v: f64[]) -> f64[] {\n"
    "  let (r, c) = shape(m);\n"
    "  generate(r, |i| fold(|a, b| a + b, 0.0, generate(c, |j| m[i, j] * v[j])))\n}\n",

    "fn zero_lambda(n: i32) -> i32 { iterate(n, |v| v + 1, 0) }\n",

    "fn empty_module_is_fine() -> () { () }\n",

    "fn projections(p: ((i32, i32), i32)) -> i32 { p.0.1 + p.1 + (p.0).0 }\n",

    "fn negs(x: f64) -> (f64, f64, f64, f64) { (-x, --x, -(-x), - -1.5) }\n",

    "fn prec(a: i32) -> (i32, bool, i32, bool) {\n"
    "  (1 + 2 * a, a & 1 == 0, -2 * a << 1, a > 0 || a < -10 && false)\n}\n",

    "fn walks(adj: bool[,], n: i64) -> i64[,] {\n  let m = len(adj);\n"
    "  rec c (t in 0..=n, s in 0..m) -> i64 {\n"
    "    if t == 0 { if s == 0 { 1 } else { 0 } } else {\n"
    "      fold(|a, b| a + b, 0, generate(m, |k| if adj[k, s] { c[t - 1, k] } else { 0 }))\n"
    "    }\n  }\n}\n",

    "fn inferred(xs: f32[]) -> _ { (later(xs), 1, 2.5, map(|x| x * 2, xs)) }\n"
    "fn later(xs: f32[]) -> _ { fn dbl(x: f32) -> _ { x + x } fold(+, 0, map(dbl, xs)) }\n",
};
#define NCORPUS (sizeof corpus / sizeof corpus[0])

UNIT_TEST(corpus_raw_round_trip) {
  setup();
  for (size_t i = 0; i < NCORPUS; i++) {
    char what[32];
    snprintf(what, sizeof what, "corpus[%zu]", i);
    if (!raw_fixpoint(corpus[i], strlen(corpus[i]), what))
      ac_module_destroy(parse_ok(corpus[i])); /* reports why */
  }
  teardown();
}

UNIT_TEST(corpus_checked_round_trip) {
  setup();
  int accepted = 0;
  for (size_t i = 0; i < NCORPUS; i++) {
    char what[32];
    snprintf(what, sizeof what, "corpus[%zu]", i);
    if (checked_fixpoint(corpus[i], strlen(corpus[i]), what)) {
      accepted++;
    } else {
      ac_error *e = NULL;
      ac_module *m = NULL;
      ac_module_parse(ctx, what, corpus[i], strlen(corpus[i]), &m, &e);
      fprintf(stderr, "  rejected: %s", e ? ac_error_text(e) : "?\n");
      ac_error_destroy(e);
    }
  }
  /* the corpus is made of valid programs: the verifier must accept them */
  CHECK_EQ_INT(accepted, (int)NCORPUS);
  teardown();
}

/* ---- canonical prints of parsed IR (unchecked: only written suffixes) ------------ */

static void golden(const char *src, const char *want) {
  char *got = canon_raw(src);
  CHECK_STR(got, want);
  ac_string_destroy(ctx, got);
}

UNIT_TEST(layout_of_functions_lets_and_blocks) {
  setup();
  golden("", "");
  golden("  // nothing but a comment\n", "");
  golden("fn f(a:i32,b:(f32,bool)[]) -> (i32,f64[,]) {let x=a;let (p,q)=(x,x);(p,[[1.0]])}"
         "fn g()->(){()}",
         "fn f(a: i32, b: (f32[], bool[])) -> (i32, f64[,]) {\n"
         "  let x = a;\n"
         "  let (p, q) = (x, x);\n"
         "  (p, [[1.0]])\n"
         "}\n"
         "\n"
         "fn g() -> () {\n"
         "  ()\n"
         "}\n");
  golden("fn f(x: i32) -> i32 { let y = { let t = x; t }; map(|a| { let b = a; b }, y) }",
         "fn f(x: i32) -> i32 {\n"
         "  let y = {\n"
         "    let t = x;\n"
         "    t\n"
         "  };\n"
         "  map(|a| {\n"
         "    let b = a;\n"
         "    b\n"
         "  }, y)\n"
         "}\n");
  /* a block without lets is just its expression; nested lets flatten */
  golden("fn f(x: i32) -> i32 { { { x } } }", "fn f(x: i32) -> i32 {\n  x\n}\n");
  golden("fn f(x: i32) -> i32 { let a = x; { let b = a; b } }",
         "fn f(x: i32) -> i32 {\n  let a = x;\n  let b = a;\n  b\n}\n");
  teardown();
}

/* `-> _` (docs/language.md §3): unchecked, the print keeps `_` (so it
 * reparses); checked, it writes the inferred type, with literals typed by it
 * printed without suffix, and a second check changes nothing. */
UNIT_TEST(inferred_result_prints_as_written_then_as_inferred) {
  setup();
  const char *src = "fn f(x: f32) -> _ { (g(x), 1, 2.5) }\nfn g(x: f32) -> _ { x * 2 }\n";
  golden(src, "fn f(x: f32) -> _ {\n  (g(x), 1, 2.5)\n}\n\nfn g(x: f32) -> _ {\n  x * 2\n}\n");
  ac_module *raw = parse_ok(src);
  CHECK(raw->funcs[0].infer_result && raw->funcs[0].result == IR_TY_NONE);
  ac_module_destroy(raw);
  ac_module *m = NULL;
  CHECK(ac_module_parse(ctx, "t.ac", src, strlen(src), &m, NULL) == AC_OK);
  const char *want = "fn f(x: f32) -> (f32, i32, f64) {\n  (g(x), 1, 2.5)\n}\n\n"
                     "fn g(x: f32) -> f32 {\n  x * 2.0\n}\n";
  char *s1 = print_or_report(m);
  CHECK_STR(s1, want);
  CHECK(ac_module_verify(m, NULL) == AC_OK);
  char *s2 = print_or_report(m);
  CHECK_STR(s2, want);
  ac_string_destroy(ctx, s1);
  ac_string_destroy(ctx, s2);
  ac_module_destroy(m);
  teardown();
}

UNIT_TEST(layout_of_if_loop_rec_lambda) {
  setup();
  golden("fn f(x: i32) -> i32 { if x > 0 { 1 } else if x < 0 { -1 } else { if x == 0 { 0 } "
         "else { 2 } } }",
         "fn f(x: i32) -> i32 {\n"
         "  if x > 0 { 1 } else if x < 0 { -1 } else if x == 0 { 0 } else { 2 }\n"
         "}\n");
  golden("fn f(x: i32) -> i32 { if x > 0 { let y = x; y } else { 0 } }", "fn f(x: i32) -> i32 {\n"
                                                                         "  if x > 0 {\n"
                                                                         "    let y = x;\n"
                                                                         "    y\n"
                                                                         "  } else { 0 }\n"
                                                                         "}\n");
  golden("fn f(n: i32) -> (i32, i32) { loop (i = 0, s = 0) while i < n { (i + 1, s + i) } }",
         "fn f(n: i32) -> (i32, i32) {\n"
         "  loop (i = 0, s = 0) while i < n { (i + 1, s + i) }\n"
         "}\n");
  golden("fn f(n: i32) -> i32 { loop (i = 0) while i < n { let j = i; j + 1 } }",
         "fn f(n: i32) -> i32 {\n"
         "  loop (i = 0) while i < n {\n"
         "    let j = i;\n"
         "    j + 1\n"
         "  }\n"
         "}\n");
  golden("fn f(n: i64) -> i64[,] { let d = rec (i in 0..=n, j in 1..n) -> i64 { d[i, j] }; d }",
         "fn f(n: i64) -> i64[,] {\n"
         "  let d = rec (i in 0..=n, j in 1..n) -> i64 {\n"
         "    d[i, j]\n"
         "  };\n"
         "  d\n"
         "}\n");
  /* a named rec outside a let keeps its name; an unnamed one stays unnamed */
  golden("fn f(n: i64) -> (i64[], i64[]) { (rec r (i in 0..n) -> i64 { r[i - 1] }, "
         "rec (i in 0..n) -> i64 { i }) }",
         "fn f(n: i64) -> (i64[], i64[]) {\n"
         "  (rec r (i in 0..n) -> i64 {\n"
         "    r[i - 1]\n"
         "  }, rec (i in 0..n) -> i64 {\n"
         "    i\n"
         "  })\n"
         "}\n");
  /* `let e = rec d (...)`: one name, the let's, for both */
  golden("fn f(n: i64) -> i64[] { let e = rec d (i in 0..n) -> i64 { d[i] }; e }",
         "fn f(n: i64) -> i64[] {\n"
         "  let e = rec (i in 0..n) -> i64 {\n"
         "    e[i]\n"
         "  };\n"
         "  e\n"
         "}\n");
  golden("fn f(x: i32[]) -> i32 { iterate(3, || 1, fold(|a,b|a+b, 0, x)) }",
         "fn f(x: i32[]) -> i32 {\n  iterate(3, || 1, fold(|a, b| a + b, 0, x))\n}\n");
  teardown();
}

UNIT_TEST(parentheses_follow_precedence) {
  setup();
  golden("fn f(a: i32, b: i32, c: i32) -> i32 { ((a + b)) * (c) + (a * b) - (a - (b - c)) }",
         "fn f(a: i32, b: i32, c: i32) -> i32 {\n  (a + b) * c + a * b - (a - (b - c))\n}\n");
  golden("fn f(a: bool, b: bool) -> bool { (a == b) == (a != b) || (a && (b || a)) }",
         "fn f(a: bool, b: bool) -> bool {\n  (a == b) == (a != b) || a && (b || a)\n}\n");
  golden("fn f(a: i32) -> i32 { -(a + 1) + -(-a) + -(5) + (-5) + - -5 + (1 + (if true { 1 } "
         "else { 2 })) }",
         "fn f(a: i32) -> i32 {\n"
         "  -(a + 1) + --a + -(5) + -5 + -(-5) + (1 + (if true { 1 } else { 2 }))\n}\n");
  golden("fn f(t: ((i32, i32), i32[])) -> i32 { (t.0).1 + (-t.1[0]) + (t.1)[1] + (5).0 }",
         "fn f(t: ((i32, i32), i32[])) -> i32 {\n  t.0.1 + -t.1[0] + t.1[1] + (5).0\n}\n");
  golden("fn f(a: i32) -> i32 { (-5)[0] + (loop (i = 0) while i < 1 { i + 1 }) * 2 }",
         "fn f(a: i32) -> i32 {\n  (-5)[0] + (loop (i = 0) while i < 1 { i + 1 }) * 2\n}\n");
  golden("fn f(a: u8) -> u8 { a & 1 | a ^ 2 << 1 >> (a | 1) }",
         "fn f(a: u8) -> u8 {\n  a & 1 | a ^ 2 << 1 >> (a | 1)\n}\n");
  teardown();
}

UNIT_TEST(literal_spellings_of_parsed_text) {
  setup();
  golden("fn f() -> () { (1_000, 0xff, 0b101, 1., 1.50, 2.5E+3, 1e-7, 1e22, 0.1, 123456789.25, "
         "1e15, 1e16, 0.00001, 0.000001, -0.0, inf, -inf, nan, -nan, -0) }",
         "fn f() -> () {\n  (1000, 255, 5, 1.0, 1.5, 2500.0, 1e-7, 1e22, 0.1, 123456789.25, "
         "1000000000000000.0, 1e16, 0.00001, 1e-6, -0.0, inf, -inf, nan, -nan, -0)\n}\n");
  golden("fn f() -> () { (-128i8, 255u8, 0xffu8, 2f32, 0.1f32, 1e38f32, 1.5f64, "
         "-9223372036854775808i64, "
         "18446744073709551615u64, 18446744073709551615, true, false, 16777217f32) }",
         "fn f() -> () {\n  (-128i8, 255u8, 255u8, 2.0f32, 0.1f32, 1e38f32, 1.5f64, "
         "-9223372036854775808i64, 18446744073709551615u64, 18446744073709551615, true, false, "
         "16777216.0f32)\n}\n");
  teardown();
}

/* ---- the IR the parser builds ------------------------------------------------- */

static const ir_node *N(const ac_module *m, ir_ref r) {
  return ir_node_get(m, r);
}
static ir_ref K(const ac_module *m, ir_ref r, uint32_t i) {
  return ir_kid(m, r, i);
}

UNIT_TEST(de_bruijn_indices_and_binders) {
  setup();
  /* params: the last one is index 0; a lambda's last parameter is 0 */
  ac_module *m = parse_ok("fn f(a: i32, b: i32, c: i32) -> i32 { "
                          "let x = a; map(|p, q| p + c + x, c, b) }");
  if (m) {
    ir_ref let = m->funcs[0].body;
    CHECK_EQ_INT(N(m, let)->op, IR_LET);
    CHECK_STR(ir_sym_str(ctx, m->syms[N(m, let)->names]), "x");
    CHECK_EQ_INT(N(m, K(m, let, 0))->attr, 2); /* a */
    ir_ref map = K(m, let, 1);
    CHECK_EQ_INT(N(m, map)->op, IR_MAP);
    ir_ref lam = K(m, map, 0);
    CHECK_EQ_INT(N(m, lam)->op, IR_LAM);
    CHECK_EQ_INT(N(m, lam)->attr, 2);
    CHECK_STR(ir_sym_str(ctx, m->syms[N(m, lam)->names + 1]), "q");
    ir_ref sum = K(m, lam, 0);                          /* (p + c) + x */
    CHECK_EQ_INT(N(m, K(m, K(m, sum, 0), 0))->attr, 1); /* p */
    CHECK_EQ_INT(N(m, K(m, K(m, sum, 0), 1))->attr, 3); /* c: past q, p, x */
    CHECK_EQ_INT(N(m, K(m, sum, 1))->attr, 2);          /* x */
    CHECK_EQ_INT(N(m, K(m, map, 1))->attr, 1);          /* c outside the lambda */
    ac_module_destroy(m);
  }
  /* let (a, b) binds b as 0; loop variables bind in cond and step */
  m = parse_ok("fn f(t: (i32, i32)) -> i32 { let (a, b) = t; "
               "loop (i = a, s = b) while i < s { (s, i) } }");
  if (m) {
    ir_ref lt = m->funcs[0].body;
    CHECK_EQ_INT(N(m, lt)->op, IR_LETTUP);
    CHECK_EQ_INT(N(m, lt)->attr, 2);
    ir_ref loop = K(m, lt, 1);
    CHECK_EQ_INT(N(m, loop)->op, IR_LOOP);
    CHECK_EQ_INT(N(m, loop)->nkids, 4);
    CHECK_EQ_INT(N(m, K(m, loop, 0))->attr, 1); /* init a */
    CHECK_EQ_INT(N(m, K(m, loop, 1))->attr, 0); /* init b */
    ir_ref cond = K(m, loop, 2), step = K(m, loop, 3);
    CHECK(N(m, cond)->op == IR_LAM && N(m, cond)->attr == 2);
    CHECK(N(m, step)->op == IR_LAM && N(m, step)->attr == 2);
    CHECK_EQ_INT(N(m, K(m, K(m, cond, 0), 0))->attr, 1); /* i */
    CHECK_EQ_INT(N(m, K(m, K(m, step, 0), 0))->attr, 0); /* s */
    CHECK_STR(ir_sym_str(ctx, m->syms[N(m, step)->names]), "i");
    ac_module_destroy(m);
  }
  /* rec: self is index n, i_n is 0; bounds are outside; `let d =` names both */
  m = parse_ok("fn f(n: i64) -> i64[,] { let d = rec (i in 0..n, j in 1..=n) -> i64 "
               "{ d[i, j] + n }; d }");
  if (m) {
    ir_ref let = m->funcs[0].body, rec = K(m, let, 0);
    CHECK_EQ_INT(N(m, rec)->op, IR_REC);
    CHECK_EQ_INT(N(m, rec)->attr, 2);
    CHECK_EQ_INT(N(m, rec)->nkids, 5);
    CHECK(N(m, rec)->lit.u == 1); /* dimension 0 exclusive */
    CHECK(N(m, rec)->type == ir_ty_array(ctx, ir_ty_scalar(ctx, AC_I64), 2));
    CHECK_EQ_INT(N(m, K(m, rec, 1))->attr, 0); /* hi of i: n */
    CHECK_STR(ir_sym_str(ctx, m->syms[N(m, rec)->names]), "d");
    CHECK_STR(ir_sym_str(ctx, m->syms[N(m, rec)->names + 2]), "j");
    CHECK_STR(ir_sym_str(ctx, m->syms[N(m, let)->names]), "d");
    ir_ref body = K(m, rec, 4), idx = K(m, body, 0);
    CHECK_EQ_INT(N(m, idx)->op, IR_INDEX);
    CHECK_EQ_INT(N(m, K(m, idx, 0))->attr, 2);  /* d */
    CHECK_EQ_INT(N(m, K(m, idx, 1))->attr, 1);  /* i */
    CHECK_EQ_INT(N(m, K(m, idx, 2))->attr, 0);  /* j */
    CHECK_EQ_INT(N(m, K(m, body, 1))->attr, 3); /* n */
    ac_module_destroy(m);
  }
  /* an anonymous rec binds an unnamed self: the index is still n */
  m = parse_ok("fn f(n: i64) -> i64[] { rec (i in 0..n) -> i64 { i + n } }");
  if (m) {
    ir_ref rec = m->funcs[0].body, add = K(m, rec, 2);
    CHECK_EQ_INT(m->syms[N(m, rec)->names], IR_SYM_NONE);
    CHECK_EQ_INT(N(m, K(m, add, 0))->attr, 0);
    CHECK_EQ_INT(N(m, K(m, add, 1))->attr, 2);
    ac_module_destroy(m);
  }
  teardown();
}

UNIT_TEST(special_forms_layout) {
  setup();
  ac_module *m = parse_ok(
      "fn f(a: f32[,], xs: f32[]) -> () { (stencil(|w| w[-1, 0], mirror, a), "
      "stencil(|w| w[0, 1], 2.5, a), [[1, 2, 3], [4, 5, 6]], [], f32(1), g(xs), map(g2, xs), "
      "while(|v| true, |v| v, xs)) }\n"
      "fn g(x: f32[]) -> i32 { 0 }\nfn g2(x: f32) -> f32 { x }");
  if (m) {
    ir_ref t = m->funcs[0].body;
    CHECK_EQ_INT(N(m, t)->op, IR_TUPLE);
    ir_ref s1 = K(m, t, 0), s2 = K(m, t, 1), al = K(m, t, 2), e = K(m, t, 3);
    CHECK(N(m, s1)->op == IR_STENCIL && N(m, s1)->nkids == 2 &&
          N(m, s1)->attr == AC_BOUNDARY_MIRROR);
    CHECK(N(m, s2)->op == IR_STENCIL && N(m, s2)->nkids == 3 &&
          N(m, s2)->attr == AC_BOUNDARY_CONST);
    CHECK_EQ_INT(N(m, K(m, s2, 1))->op, IR_VAR); /* kids: f, a, value */
    CHECK_EQ_INT(N(m, K(m, s2, 2))->op, IR_LIT);
    ir_ref w = K(m, K(m, K(m, s1, 0), 0), 1); /* -1 in w[-1, 0] */
    CHECK(N(m, w)->op == IR_LIT && (N(m, w)->flags & IR_F_NEG) && N(m, w)->lit.u == 1);
    CHECK(N(m, al)->op == IR_ARRLIT && N(m, al)->attr == 2 && N(m, al)->nkids == 6);
    CHECK(m->ints[N(m, al)->aux] == 2 && m->ints[N(m, al)->aux + 1] == 3);
    CHECK_EQ_INT(N(m, K(m, al, 3))->lit.u, 4);
    CHECK(N(m, e)->op == IR_ARRLIT && N(m, e)->attr == 1 && N(m, e)->nkids == 0 &&
          m->ints[N(m, e)->aux] == 0);
    ir_ref cast = K(m, t, 4);
    CHECK(N(m, cast)->op == IR_CAST && N(m, cast)->type == ir_ty_scalar(ctx, AC_F32));
    ir_ref call = K(m, t, 5);
    CHECK(N(m, call)->op == IR_CALL && N(m, call)->attr == 1 && N(m, call)->nkids == 1);
    ir_ref fr = K(m, K(m, t, 6), 0);
    CHECK(N(m, fr)->op == IR_FNREF && N(m, fr)->attr == 2);
    CHECK_EQ_INT(N(m, K(m, t, 7))->op, IR_WHILE);
    ac_module_destroy(m);
  }
  teardown();
}

UNIT_TEST(literal_flags_and_values) {
  setup();
  ac_module *m = parse_ok("fn f() -> () { (5, -5, 1.5, -2.5, inf, -nan, -128i8, 255u8, "
                          "-1i64, 2f32, 0.1f32, true, - 5, 7i32) }");
  if (m) {
    ir_ref t = m->funcs[0].body;
    const ir_node *n;
    n = N(m, K(m, t, 0));
    CHECK(n->type == IR_TY_NONE && n->flags == 0 && n->lit.u == 5);
    n = N(m, K(m, t, 1));
    CHECK(n->type == IR_TY_NONE && n->flags == IR_F_NEG && n->lit.u == 5);
    CHECK(n->loc.col == 20); /* the '-' */
    n = N(m, K(m, t, 2));
    CHECK(n->flags == IR_F_FLOATLIT && n->lit.f == 1.5);
    n = N(m, K(m, t, 3));
    CHECK(n->flags == IR_F_FLOATLIT && n->lit.f == -2.5);
    n = N(m, K(m, t, 4));
    CHECK(n->flags == (IR_F_FLOATLIT | IR_F_INFNAN) && isinf(n->lit.f) && n->lit.f > 0);
    n = N(m, K(m, t, 5));
    CHECK(n->flags == (IR_F_FLOATLIT | IR_F_INFNAN) && isnan(n->lit.f) && signbit(n->lit.f));
    n = N(m, K(m, t, 6));
    CHECK(n->flags == IR_F_SUFFIX && n->type == ir_ty_scalar(ctx, AC_I8) && n->lit.i == -128);
    n = N(m, K(m, t, 7));
    CHECK(n->flags == IR_F_SUFFIX && n->lit.u == 255);
    n = N(m, K(m, t, 8));
    CHECK(n->lit.i == -1 && n->type == ir_ty_scalar(ctx, AC_I64));
    n = N(m, K(m, t, 9));
    CHECK(n->flags == (IR_F_SUFFIX | IR_F_FLOATLIT) && n->lit.f == 2.0 &&
          n->type == ir_ty_scalar(ctx, AC_F32));
    n = N(m, K(m, t, 10));
    CHECK(n->lit.f == (double)0.1f);
    n = N(m, K(m, t, 11));
    CHECK(n->flags == IR_F_SUFFIX && n->type == ir_ty_scalar(ctx, AC_BOOL) && n->lit.u == 1);
    n = N(m, K(m, t, 12));
    CHECK(n->op == IR_LIT && (n->flags & IR_F_NEG)); /* folded across a space */
    ac_module_destroy(m);
  }
  teardown();
}

UNIT_TEST(node_locations) {
  setup();
  /* operators: the operator token; everything else: the first token */
  ac_module *m = parse_ok("fn f(a: i32[], b: i32) -> i32 {\n"
                          "  let x = a[b] * -b;\n"
                          "  fold(|p, q| p + q, 0, map(|v| i32(v) , a)) + g()\n"
                          "}\nfn g() -> i32 { 1 }");
  if (m) {
    ir_ref let = m->funcs[0].body;
    CHECK(N(m, let)->loc.line == 2 && N(m, let)->loc.col == 3);
    ir_ref mul = K(m, let, 0);
    CHECK(N(m, mul)->loc.line == 2 && N(m, mul)->loc.col == 16);
    CHECK(N(m, K(m, mul, 0))->loc.col == 11); /* a[b] at a */
    CHECK(N(m, K(m, mul, 1))->loc.col == 18); /* -b at '-' */
    ir_ref add = K(m, let, 1);
    CHECK(N(m, add)->loc.line == 3 && N(m, add)->loc.col == 46);
    ir_ref fold = K(m, add, 0);
    CHECK(N(m, fold)->loc.col == 3);
    CHECK(N(m, K(m, fold, 0))->loc.col == 8);           /* the lambda's '|' */
    CHECK(N(m, K(m, K(m, fold, 0), 0))->loc.col == 17); /* p + q at '+' */
    ir_ref map = K(m, fold, 2);
    CHECK(N(m, map)->loc.col == 25);
    CHECK(N(m, K(m, K(m, map, 0), 0))->loc.col == 33); /* i32(v) at i32 */
    CHECK(N(m, K(m, add, 1))->loc.col == 48);          /* g() at g */
    CHECK(m->funcs[0].loc.line == 1 && m->funcs[0].loc.col == 4);
    CHECK(m->funcs[1].loc.line == 5 && m->funcs[1].loc.col == 4);
    ac_module_destroy(m);
  }
  teardown();
}

/* ---- diagnostics ---------------------------------------------------------------- */

/* Parsing src (checked) fails with status st and first line "t.ac:" + want. */
static void rejects(const char *src, ac_status st, const char *want) {
  ac_module *m = NULL;
  ac_error *e = NULL;
  ac_status got = ac_module_parse(ctx, "t.ac", src, strlen(src), &m, &e);
  CHECK_EQ_INT(got, st);
  CHECK(m == NULL);
  const char *text = e ? ac_error_text(e) : "";
  const char *nl = strchr(text, '\n');
  char line[256];
  snprintf(line, sizeof line, "%.*s", nl ? (int)(nl - text) : (int)strlen(text), text);
  char expect[256];
  snprintf(expect, sizeof expect, "t.ac:%s", want);
  CHECK_STR(line, expect);
  ac_module_destroy(m);
  ac_error_destroy(e);
}

UNIT_TEST(scope_errors) {
  setup();
  rejects("fn f() -> i32 { x }", AC_ERR_TYPE, "1:17: error: unknown name 'x'");
  rejects("fn f() -> i32 { g(1) }", AC_ERR_TYPE, "1:17: error: unknown function 'g'");
  rejects("fn f(g: i32) -> i32 { g(1) }", AC_ERR_TYPE,
          "1:23: error: 'g' is a variable, not a function");
  rejects("fn f() -> i32 { g }\nfn g() -> i32 { 1 }", AC_ERR_TYPE,
          "1:17: error: 'g' is a function, not a value: call it, or pass it to an array "
          "operation");
  rejects("fn f(xs: f32[]) -> f32[] { map(sqrtt, xs) }", AC_ERR_TYPE,
          "1:32: error: unknown name 'sqrtt' (did you mean 'sqrt'?)");
  rejects("fn f(xs: f32[]) -> f32[] { map(fold, xs) }", AC_ERR_SYNTAX,
          "1:32: error: 'fold' is an array operation, not a function: pass a lambda that "
          "applies it");
  rejects("fn f() -> i32 { 1 }\n\nfn f() -> i32 { 2 }", AC_ERR_TYPE,
          "3:4: error: duplicate function 'f'");
  rejects("fn map() -> i32 { 1 }", AC_ERR_TYPE,
          "1:4: error: 'map' is a builtin operation and cannot name a function");
  rejects("fn i64() -> i32 { 1 }", AC_ERR_TYPE,
          "1:4: error: 'i64' is a scalar type and cannot name a function");
  rejects("fn f(a: i32, b: i32, a: f32) -> i32 { a }", AC_ERR_TYPE,
          "1:22: error: duplicate parameter 'a'");
  rejects("fn f(x: f32[]) -> f32 { fold(|a, a| a, 0.0, x) }", AC_ERR_TYPE,
          "1:34: error: duplicate lambda parameter 'a'");
  rejects("fn f() -> i64[,] { rec (i in 0..3, i in 0..3) -> i64 { 1 } }", AC_ERR_TYPE,
          "1:36: error: duplicate rec index 'i'");
  rejects("fn f() -> i64[] { rec d (d in 0..3) -> i64 { 1 } }", AC_ERR_TYPE,
          "1:26: error: duplicate rec index 'd'");
  rejects("fn f() -> i32 { loop (i = 0, i = 1) while i < 3 { (i, i) } }", AC_ERR_TYPE,
          "1:30: error: duplicate loop variable 'i'");
  rejects("fn f() -> i32 { let (a, b, a) = (1, 2, 3); a }", AC_ERR_TYPE,
          "1:28: error: duplicate tuple pattern name 'a'");
  /* bounds of a rec cannot see its indices; a let cannot see itself */
  rejects("fn f() -> i64[,] { rec (i in 0..3, j in 0..i) -> i64 { 1 } }", AC_ERR_TYPE,
          "1:44: error: unknown name 'i'");
  rejects("fn f() -> i32 { let x = x; x }", AC_ERR_TYPE, "1:25: error: unknown name 'x'");
  /* the scope of a block ends with it */
  rejects("fn f() -> i32 { let a = { let t = 1; t }; t }", AC_ERR_TYPE,
          "1:43: error: unknown name 't'");
  teardown();
}

UNIT_TEST(syntax_errors) {
  setup();
  rejects("fn f() -> i32 { (1 + 2 }", AC_ERR_SYNTAX, "1:17: error: unclosed '('");
  rejects("fn f() -> i32 {\n  [1, 2", AC_ERR_SYNTAX, "2:3: error: unclosed '['");
  rejects("fn f() -> i32 { 1 } }", AC_ERR_SYNTAX, "1:21: error: stray '}'");
  rejects("fn f() -> i32 { f(1]) }", AC_ERR_SYNTAX, "1:20: error: stray ']'");
  rejects("fn f() -> i32 { 1 + }", AC_ERR_SYNTAX, "1:21: error: expected an expression, found '}'");
  rejects("fn f() -> i32 { if true { 1 } }", AC_ERR_SYNTAX,
          "1:17: error: 'if' without 'else': an if is an expression and needs both branches");
  rejects("fn f(a: i32, b: i32, c: i32) -> bool {\n  a < b < c\n}", AC_ERR_SYNTAX,
          "2:9: error: comparisons do not chain; use parentheses or &&");
  rejects("fn f(a: bool) -> bool { a == a != a }", AC_ERR_SYNTAX,
          "1:32: error: comparisons do not chain; use parentheses or &&");
  rejects("fn f() -> (i32) { 1 }", AC_ERR_SYNTAX,
          "1:11: error: 1-element tuple types do not exist: write the field type without "
          "parentheses");
  rejects("fn f() -> (i32, f32,) { 1 }", AC_ERR_SYNTAX,
          "1:21: error: expected a type, found ')'");
  rejects("fn f() -> (i32,) { 1 }", AC_ERR_SYNTAX,
          "1:11: error: 1-element tuple types do not exist: write the field type without "
          "parentheses");
  rejects("fn f() -> i32 { (1,) }", AC_ERR_SYNTAX,
          "1:17: error: 1-element tuples do not exist: write the expression without the "
          "parentheses and comma");
  rejects("fn f(p: (i32, i32)) -> i32 { p.x }", AC_ERR_SYNTAX,
          "1:32: error: expected a field number after '.', found identifier 'x'");
  rejects("fn f(p: (i32, i32)) -> i32 { p.1.5f32 }", AC_ERR_SYNTAX,
          "1:35: error: expected '}' after the result of the block, found identifier 'f32'");
  rejects("fn f() -> i32 {\n  let add = (|a, b| a + b);\n  1\n}", AC_ERR_SYNTAX,
          "2:14: error: a lambda is only allowed as the argument of an array operation or as "
          "a local function (let f = |x| ...;)");
  rejects("fn f() -> i32 { 1 + if true { 1 } else { 2 } }", AC_ERR_SYNTAX,
          "1:21: error: 'if' cannot be an operand: put it in parentheses");
  rejects("fn f() -> i32 { wrap }", AC_ERR_SYNTAX,
          "1:17: error: 'wrap' is only allowed as the boundary argument of stencil");
  rejects("fn f() -> i32 { 1; }", AC_ERR_SYNTAX,
          "1:18: error: expected '}' after the result of the block, found ';' (only 'let' "
          "statements end with ';')");
  rejects("let x = 1;", AC_ERR_SYNTAX,
          "1:1: error: expected 'fn' at the start of a function definition, found 'let'");
  rejects("fn f() -> i32 { [[1, 2], [3]] }", AC_ERR_SYNTAX,
          "1:26: error: array literal is not rectangular");
  rejects("fn f() -> i32 { [[1], 2] }", AC_ERR_SYNTAX,
          "1:23: error: array literal mixes nested array literals and other elements");
  rejects("fn f() -> f32[][] { 1 }", AC_ERR_SYNTAX,
          "1:14: error: arrays of arrays do not exist: array elements are scalars or tuples "
          "of scalars");
  rejects("fn f() -> ()[] { 1 }", AC_ERR_SYNTAX,
          "1:13: error: arrays of the unit type do not exist");
  rejects("fn f() -> i64[] { rec (i in 0..3) -> i64[] { 1 } }", AC_ERR_SYNTAX,
          "1:35: error: the element type of a rec must be a scalar or a tuple of scalars");
  rejects("fn f() -> str { 1 }", AC_ERR_SYNTAX, "1:11: error: unknown type 'str'");
  rejects("fn f(xs: f32[]) -> f32[] { map(|x| x) }", AC_ERR_SYNTAX,
          "1:28: error: 'map' takes a function and at least one array, got 1 argument");
  rejects("fn f(xs: f32[]) -> f32[] { slice(xs, 1, 2, 3, 4) }", AC_ERR_SYNTAX,
          "1:28: error: 'slice' takes 3 or 4 arguments, got 5");
  rejects("fn f(xs: f32[]) -> f32[] { stencil(|w| w[0], xs) }", AC_ERR_SYNTAX,
          "1:28: error: 'stencil' takes 3 arguments (function, boundary, array), got 2");
  rejects("fn f(xs: f32[]) -> f32 { fold(|a, b| a + b, xs) }", AC_ERR_SYNTAX,
          "1:26: error: 'fold' takes 3 arguments, got 2");
  rejects("fn f(xs: f32[]) -> i64 { len() }", AC_ERR_SYNTAX,
          "1:26: error: 'len' takes 1 argument, got 0");
  rejects("fn f() -> f32 { f32(1, 2) }", AC_ERR_SYNTAX,
          "1:17: error: conversion to f32 takes 1 argument, got 2");
  rejects("fn f() -> f32 { sqrt(1.0,) }", AC_ERR_SYNTAX,
          "1:26: error: expected an argument, found ')'");
  rejects("fn f() -> u8 { 256u8 }", AC_ERR_SYNTAX,
          "1:16: error: integer literal 256 out of range for u8");
  rejects("fn f() -> i8 { -129i8 }", AC_ERR_SYNTAX,
          "1:16: error: integer literal -129 out of range for i8");
  rejects("fn f() -> u32 { -1u32 }", AC_ERR_SYNTAX,
          "1:17: error: integer literal -1 out of range for u32");
  rejects("fn f() -> i32 { loop i = 0 }", AC_ERR_SYNTAX,
          "1:22: error: expected '(' after 'loop', found identifier 'i'");
  rejects("fn f() -> i32 { loop (i = 0) i < 3 { i } }", AC_ERR_SYNTAX,
          "1:30: error: expected 'while' after the loop variables, found identifier 'i'");
  rejects("fn f() -> i64[] { rec (i in 0...3) -> i64 { i } }", AC_ERR_SYNTAX,
          "1:32: error: expected an expression, found '.'");
  rejects("fn f() -> i64[] { rec (i in 0, 3) -> i64 { i } }", AC_ERR_SYNTAX,
          "1:30: error: expected '..=' or '..', found ','");
  rejects("fn f() -> i32 { let (a) = 1; a }", AC_ERR_SYNTAX,
          "1:17: error: a tuple pattern binds at least two names");
  rejects("fn 1() -> i32 { 1 }", AC_ERR_SYNTAX,
          "1:4: error: expected a function name, found number '1'");
  rejects("fn f(a i32) -> i32 { 1 }", AC_ERR_SYNTAX,
          "1:8: error: expected ':' and the parameter's type, found identifier 'i32'");
  rejects("fn f() i32 { 1 }", AC_ERR_SYNTAX,
          "1:8: error: expected '->' and the result type, found identifier 'i32'");
  teardown();
}

UNIT_TEST(lexical_errors_reach_the_diagnostic) {
  setup();
  rejects("fn f() -> i32 {\n  /* open", AC_ERR_SYNTAX, "2:3: error: unterminated block comment");
  rejects("fn f() -> i32 { 1.e }", AC_ERR_SYNTAX, "1:17: error: malformed number '1.e'");
  rejects("fn f() -> i32 { 0x }", AC_ERR_SYNTAX, "1:17: error: malformed number '0x'");
  rejects("fn f() -> u64 { 18446744073709551616 }", AC_ERR_SYNTAX,
          "1:17: error: integer literal too large (the limit is 2^64-1)");
  rejects("fn f() -> i32 { x\xc3\xa9 }", AC_ERR_SYNTAX,
          "1:18: error: non-ASCII character outside a comment");
  /* a syntax error before a later lexical error is the one reported */
  rejects("fn f() -> i32 { 1 2 } @", AC_ERR_SYNTAX,
          "1:19: error: expected '}' after the result of the block, found number '2'");
  /* NUL bytes: the text length, not the NUL, ends the input */
  ac_module *m = NULL;
  ac_error *e = NULL;
  CHECK_EQ_INT(ac_module_parse(ctx, "t.ac", "fn f() -> i32 {\0}", 17, &m, &e), AC_ERR_SYNTAX);
  CHECK_STR(ac_error_message(e), "NUL byte in source");
  CHECK_EQ_INT(ac_error_column(e), 16);
  CHECK(strstr(ac_error_text(e), "fn f() -> i32 {?}\n               ^\n") != NULL);
  ac_error_destroy(e);
  char ident[300];
  memset(ident, 'a', sizeof ident);
  memcpy(ident, "fn ", 3);
  e = NULL;
  CHECK_EQ_INT(ac_module_parse(ctx, "t.ac", ident, sizeof ident, &m, &e), AC_ERR_SYNTAX);
  CHECK_STR(ac_error_message(e), "identifier longer than 255 bytes");
  ac_error_destroy(e);
  teardown();
}

/* ---- printing hand-built IR (names, literals, malformed trees) -------------------- */

static ac_module *bm; /* the module being built */
static ir_ref bnode(ir_op op, uint32_t n, const ir_ref *kids) {
  return ir_node_new(bm, op, (ir_loc){1, 1}, n, kids);
}
static ir_ref bvar(uint32_t i) {
  return ir_var(bm, (ir_loc){1, 1}, i);
}
static ir_ref blit(ac_scalar sc, uint64_t bits, uint16_t flags) {
  ir_litval v;
  v.u = bits;
  ir_ref r = ir_lit_typed(bm, (ir_loc){1, 1}, ir_ty_scalar(ctx, sc), v);
  ir_node_get(bm, r)->flags |= flags;
  return r;
}
static ir_ref bflt(ac_scalar sc, double f, uint16_t flags) {
  ir_litval v;
  v.f = f;
  ir_ref r = ir_lit_typed(bm, (ir_loc){1, 1}, ir_ty_scalar(ctx, sc), v);
  ir_node_get(bm, r)->flags |= flags;
  return r;
}
static uint32_t bnames(uint32_t n, const char *const *names) {
  ir_sym s[16];
  for (uint32_t i = 0; i < n; i++)
    s[i] = names[i] ? ir_sym_intern(ctx, names[i], strlen(names[i])) : IR_SYM_NONE;
  return ir_syms_push(bm, n, s);
}
static ir_ref blet(const char *name, ir_ref rhs, ir_ref body) {
  ir_ref k[2] = {rhs, body};
  ir_ref r = bnode(IR_LET, 2, k);
  ir_node_get(bm, r)->names = bnames(1, &name);
  return r;
}
static int32_t bfunc(const char *name, uint32_t n, const char *const *pnames, ir_ref body) {
  ir_type ts[16];
  ir_sym ps[16];
  for (uint32_t i = 0; i < n; i++) {
    ts[i] = ir_ty_scalar(ctx, AC_I32);
    ps[i] = pnames[i] ? ir_sym_intern(ctx, pnames[i], strlen(pnames[i])) : IR_SYM_NONE;
  }
  int32_t f = ir_func_add(bm, ir_sym_intern(ctx, name, strlen(name)), (ir_loc){1, 1}, n, ts, ps,
                          ir_ty_scalar(ctx, AC_I32));
  bm->funcs[f].body = body;
  return f;
}

/* Prints bm; checks the text and that it is a raw fixed point. */
static void prints(const char *want) {
  char *got = print_or_report(bm);
  CHECK_STR(got, want);
  if (got)
    raw_fixpoint(got, strlen(got), "a built module");
  ac_string_destroy(ctx, got);
}

static void prints_error(const char *msg) {
  ac_error *e = NULL;
  char *got = ac_module_print(bm, &e);
  CHECK(got == NULL);
  CHECK_EQ_INT(ac_error_status(e), AC_ERR_INVALID);
  CHECK_STR(ac_error_message(e), msg);
  ac_error_destroy(e);
  ac_string_destroy(ctx, got);
}

UNIT_TEST(names_are_made_unique_and_valid) {
  setup();
  bm = ac_module_create(ctx, "b");
  const char *ps[] = {NULL, "", "while", "1abc", "a b", "x", "x", "map"};
  ir_ref sum = bvar(7);
  for (uint32_t i = 1; i < 8; i++) {
    ir_ref k[2] = {sum, bvar(7 - i)};
    sum = bnode(IR_ADD, 2, k);
  }
  bfunc("f", 8, ps, sum);
  prints("fn f(x: i32, x_1: i32, while_1: i32, _1abc: i32, a_b: i32, x_2: i32, x_3: i32, "
         "map: i32) -> i32 {\n"
         "  x + x_1 + while_1 + _1abc + a_b + x_2 + x_3 + map\n}\n");
  ac_module_destroy(bm);

  /* shadowing is kept when nothing outer is referenced inside, and renamed
   * when it would capture an outer reference */
  bm = ac_module_create(ctx, "b");
  const char *pa[] = {"a"};
  ir_ref inner = blet("a", bvar(0), bvar(0)); /* let a = a; a */
  ir_ref k2[2] = {bvar(0), bvar(1)};
  ir_ref capt = blet("a", bvar(0), bnode(IR_ADD, 2, k2)); /* let a = a; a + outer a */
  ir_ref k3[2] = {inner, capt};
  bfunc("f", 1, pa, bnode(IR_TUPLE, 2, k3));
  prints("fn f(a: i32) -> i32 {\n  ({\n    let a = a;\n    a\n  }, {\n"
         "    let a_1 = a;\n    a_1 + a\n  })\n}\n");
  ac_module_destroy(bm);
  teardown();
}

UNIT_TEST(locals_never_capture_function_references) {
  setup();
  bm = ac_module_create(ctx, "b");
  const char *px[] = {"x"}, *pg[] = {"g"};
  bfunc("g", 1, px, bvar(0));
  /* fn f(g: i32) = map(g (the function), g (the param)): the param must be renamed */
  ir_ref fr = bnode(IR_FNREF, 0, NULL);
  ir_ref k[2] = {fr, bvar(0)};
  bfunc("f", 1, pg, bnode(IR_MAP, 2, k));
  /* fn h(g: i32) = g: no reference to the function, the name stays */
  bfunc("h", 1, pg, bvar(0));
  prints("fn g(x: i32) -> i32 {\n  x\n}\n\n"
         "fn f(g_1: i32) -> i32 {\n  map(g, g_1)\n}\n\n"
         "fn h(g: i32) -> i32 {\n  g\n}\n");
  ac_module_destroy(bm);
  teardown();
}

UNIT_TEST(typed_literal_spellings) {
  setup();
  bm = ac_module_create(ctx, "b");
  ir_ref lits[] = {
      blit(AC_I8, (uint64_t)-128, 0),
      blit(AC_I8, 0xff80, 0), /* only the low bits */
      blit(AC_U8, 0x1ff, IR_F_CTX),
      blit(AC_U64, UINT64_MAX, 0),
      blit(AC_I64, (uint64_t)INT64_MIN, 0),
      blit(AC_I32, 7, IR_F_CTX),
      blit(AC_BOOL, 1, 0),
      bflt(AC_F32, (double)0.1f, 0),
      bflt(AC_F32, 0.1, IR_F_CTX), /* rounded when printed */
      bflt(AC_F64, 0.1, 0),
      bflt(AC_F64, -0.0, IR_F_CTX),
      bflt(AC_F64, 1e300, IR_F_CTX),
      bflt(AC_F64, 5e-324, IR_F_CTX),
      bflt(AC_F32, (double)FLT_MAX, IR_F_CTX),
      bflt(AC_F32, INFINITY, 0),
      bflt(AC_F64, -INFINITY, 0),
      bflt(AC_F64, NAN, 0),
      bflt(AC_F32, INFINITY, IR_F_CTX),
      bflt(AC_F64, 2.0, IR_F_CTX),
      bflt(AC_F64, 123456.5, IR_F_CTX),
  };
  bfunc("f", 0, NULL, bnode(IR_TUPLE, sizeof lits / sizeof lits[0], lits));
  char *got = print_or_report(bm);
  CHECK_STR(got, "fn f() -> i32 {\n  (-128i8, -128i8, 255, 18446744073709551615u64, "
                 "-9223372036854775808i64, 7, true, 0.1f32, 0.1, 0.1f64, -0.0, 1e300, 5e-324, "
                 "3.4028235e38, f32(inf), f64(-inf), f64(nan), inf, 2.0, 123456.5)\n}\n");
  ac_string_destroy(ctx, got);
  ac_module_destroy(bm);
  teardown();
}

UNIT_TEST(negation_and_postfix_of_literals) {
  setup();
  bm = ac_module_create(ctx, "b");
  ir_ref five = blit(AC_I32, 5, 0), neg5 = blit(AC_I32, (uint64_t)-5, IR_F_CTX);
  ir_ref n1 = bnode(IR_NEG, 1, &five), n2 = bnode(IR_NEG, 1, &neg5);
  ir_ref n3 = bnode(IR_NEG, 1, &n1);
  ir_ref inf = bflt(AC_F32, INFINITY, 0);
  ir_ref n4 = bnode(IR_NEG, 1, &inf);
  ir_ref p = bnode(IR_PROJ, 1, &neg5);
  ir_ref ik[2] = {blit(AC_I32, 3, IR_F_CTX), blit(AC_I32, 0, IR_F_CTX)};
  ir_ref ix = bnode(IR_INDEX, 2, ik);
  ir_ref one = blit(AC_I32, 1, IR_F_CTX);
  ir_ref t1 = bnode(IR_TUPLE, 1, &one);
  ir_ref all[] = {n1, n2, n3, n4, p, ix, t1};
  bfunc("f", 0, NULL, bnode(IR_TUPLE, 7, all));
  char *got = print_or_report(bm);
  CHECK_STR(got, "fn f() -> i32 {\n  (-(5i32), -(-5), --(5i32), -f32(inf), (-5).0, (3)[0], (1,))\n"
                 "}\n");
  ac_string_destroy(ctx, got);
  ac_module_destroy(bm);
  teardown();
}

UNIT_TEST(recs_lets_and_undefined_functions) {
  setup();
  bm = ac_module_create(ctx, "b");
  /* an anonymous rec whose body refers to itself gets a name */
  ir_ref k[3] = {blit(AC_I64, 0, IR_F_CTX), blit(AC_I64, 3, IR_F_CTX), IR_NONE};
  ir_ref ik[2] = {bvar(1), bvar(0)};
  k[2] = bnode(IR_INDEX, 2, ik);
  ir_ref rec = bnode(IR_REC, 3, k);
  ir_node_get(bm, rec)->attr = 1;
  ir_node_get(bm, rec)->type = ir_ty_array(ctx, ir_ty_scalar(ctx, AC_I64), 1);
  const char *rn[] = {NULL, NULL};
  ir_node_get(bm, rec)->names = bnames(2, rn);
  /* let with an empty name whose rec is called "d": `let d = rec` */
  ir_ref k2[3] = {blit(AC_I64, 0, IR_F_CTX), blit(AC_I64, 3, IR_F_CTX), IR_NONE};
  k2[2] = bvar(0);
  ir_ref rec2 = bnode(IR_REC, 3, k2);
  ir_node_get(bm, rec2)->attr = 1;
  ir_node_get(bm, rec2)->lit.u = 1;
  ir_node_get(bm, rec2)->type = ir_ty_array(ctx, ir_ty_scalar(ctx, AC_I64), 1);
  const char *rn2[] = {"d", "i"};
  ir_node_get(bm, rec2)->names = bnames(2, rn2);
  ir_ref tk[2] = {rec, bvar(0)};
  bfunc("f", 0, NULL, blet(NULL, rec2, bnode(IR_TUPLE, 2, tk)));
  ir_type pt = ir_ty_scalar(ctx, AC_F32);
  ir_sym pn = ir_sym_intern(ctx, "v", 1);
  ir_func_add(bm, ir_sym_intern(ctx, "later", 5), (ir_loc){1, 1}, 1, &pt, &pn, pt);
  char *got = print_or_report(bm);
  CHECK_STR(got, "fn f() -> i32 {\n"
                 "  let d = rec (i in 0..3) -> i64 {\n    i\n  };\n"
                 "  (rec x (x_1 in 0..=3) -> i64 {\n    x[x_1]\n  }, d)\n"
                 "}\n\n"
                 "// fn later(v: f32) -> f32 (declared, not defined)\n");
  ac_string_destroy(ctx, got);
  ac_module_destroy(bm);
  teardown();
}

UNIT_TEST(malformed_trees_are_refused) {
  setup();
  bm = ac_module_create(ctx, "b");
  bfunc("f", 0, NULL, bvar(3));
  prints_error("cannot print variable 3: it is not bound here");
  ac_module_destroy(bm);

  bm = ac_module_create(ctx, "b");
  ir_ref k[2] = {blit(AC_BOOL, 1, 0), blit(AC_I32, 1, 0)};
  bfunc("f", 0, NULL, bnode(IR_IF, 2, k));
  prints_error("cannot print a malformed IF node");
  ac_module_destroy(bm);

  bm = ac_module_create(ctx, "b");
  ir_ref e = blit(AC_I32, 1, 0);
  for (int i = 0; i < PARSE_MAX_DEPTH + 10; i++)
    e = bnode(IR_BNOT, 1, &e);
  bfunc("f", 0, NULL, e);
  prints_error("expression too deep to print (more than 2000 nested operations)");
  ac_module_destroy(bm);

  bm = ac_module_create(ctx, "b");
  bfunc("f", 0, NULL, blet("d", bnode(IR_REC, 0, NULL), bvar(0)));
  prints_error("cannot print a malformed REC node");
  ac_module_destroy(bm);

  bm = ac_module_create(ctx, "b");
  ir_ref one = blit(AC_I32, 1, 0);
  ir_ref c = bnode(IR_CAST, 1, &one);
  bfunc("f", 0, NULL, c); /* a conversion without a target type */
  prints_error("cannot print a conversion to a type that is not a scalar");
  ac_module_destroy(bm);
  teardown();
}

/* ---- every .ac file of the repository ---------------------------------------------- */

typedef struct walk_st {
  int files, raw, checked;
} walk_st;

static void walk(const char *dir, walk_st *st, int depth) {
  DIR *d = opendir(dir);
  if (!d || depth > 12) {
    if (d)
      closedir(d);
    return;
  }
  struct dirent *ent;
  while ((ent = readdir(d)) != NULL) {
    const char *name = ent->d_name;
    if (name[0] == '.' || strncmp(name, "build", 5) == 0)
      continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct stat sb;
    if (stat(path, &sb) != 0)
      continue;
    size_t len = strlen(name);
    if (S_ISDIR(sb.st_mode)) {
      walk(path, st, depth + 1);
    } else if (len > 3 && strcmp(name + len - 3, ".ac") == 0) {
      size_t n;
      char *text = unit_read_file(path, &n);
      if (!text)
        continue;
      st->files++;
      st->raw += raw_fixpoint(text, n, path);
      st->checked += checked_fixpoint(text, n, path);
      free(text);
    }
  }
  closedir(d);
}

UNIT_TEST(every_repository_program_round_trips) {
  setup();
  const char *root = getenv("ARRAYC_SOURCE_DIR");
  CHECK(root != NULL);
  if (root) {
    walk_st st = {0, 0, 0};
    walk(root, &st, 0);
    fprintf(stderr, "  %d .ac files: %d parsed and round-tripped raw, %d checked\n", st.files,
            st.raw, st.checked);
    /* test/lit/syntax alone holds more valid programs than this */
    CHECK(st.checked >= 10);
  }
  teardown();
}

/* ---- robustness ----------------------------------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static uint32_t rnd(uint32_t n) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (uint32_t)(rng_state % n);
}

/* Parses anything; when it parses, the raw round trip must hold. */
static int try_text(const char *text, size_t n) {
  ac_error *e = NULL;
  ac_module *m = parse_raw(text, n, &e);
  if (!m) {
    CHECK(e != NULL); /* a failure always comes with a diagnostic */
    CHECK(ac_error_status(e) == AC_ERR_SYNTAX || ac_error_status(e) == AC_ERR_TYPE);
    ac_error_destroy(e);
    return 0;
  }
  ac_module_destroy(m);
  raw_fixpoint(text, n, "a generated program");
  return 1;
}

UNIT_TEST(pathological_nesting_is_an_error_not_a_crash) {
  setup();
  size_t n = 1 << 20;
  char *buf = malloc(n + 64);
  if (buf) {
    strcpy(buf, "fn f() -> i32 { ");
    memset(buf + 16, '(', n);
    rejects(buf, AC_ERR_SYNTAX, "1:273: error: nesting too deep (more than 256 levels)");
    memset(buf + 16, '-', n);
    buf[16 + n] = '1';
    buf[17 + n] = 0;
    rejects(buf, AC_ERR_SYNTAX, "1:272: error: nesting too deep (more than 256 levels)");
    memset(buf + 16, '[', n);
    rejects(buf, AC_ERR_SYNTAX, "1:273: error: nesting too deep (more than 256 levels)");
    strcpy(buf, "fn f() -> ");
    memset(buf + 10, '(', n);
    buf[10 + n] = 0;
    rejects(buf, AC_ERR_SYNTAX, "1:267: error: nesting too deep (more than 256 levels)");
    /* 100k-term sums are read by a loop; the tree depth limit stops them */
    strcpy(buf, "fn f() -> i32 { 1");
    size_t p = 17;
    for (int i = 0; i < 100000; i++)
      p += (size_t)sprintf(buf + p, "+1");
    strcpy(buf + p, " }");
    rejects(buf, AC_ERR_SYNTAX,
            "1:4016: error: expression too deep (more than 2000 nested operations)");
    /* as do long else-if chains and let sequences */
    strcpy(buf, "fn f() -> i32 { ");
    p = 16;
    for (int i = 0; i < 3000; i++)
      p += (size_t)sprintf(buf + p, "if true { 1 } else ");
    strcpy(buf + p, "{ 2 } }");
    ac_module *m = NULL;
    ac_error *e = NULL;
    CHECK_EQ_INT(ac_module_parse(ctx, "t.ac", buf, strlen(buf), &m, &e), AC_ERR_SYNTAX);
    CHECK_STR(ac_error_message(e), "expression too deep (more than 2000 nested operations)");
    ac_error_destroy(e);
    /* just below the limits everything works, printing included */
    strcpy(buf, "fn f() -> i32 { ");
    p = 16;
    for (int i = 0; i < 200; i++)
      buf[p++] = '(';
    buf[p++] = '1';
    for (int i = 0; i < 1990; i++)
      p += (size_t)sprintf(buf + p, "+1");
    for (int i = 0; i < 200; i++)
      buf[p++] = ')';
    strcpy(buf + p, " }");
    CHECK_EQ_INT(try_text(buf, strlen(buf)), 1);
    free(buf);
  }
  teardown();
}

UNIT_TEST(random_bytes_never_crash) {
  setup();
  static const char alphabet[] =
      "fn()[]{},;:.->|=<>!~+-*/%&^ \n\t0123456789abcdefxiu_\"'#@\x80\xc3";
  char buf[256];
  for (int iter = 0; iter < 4000; iter++) {
    size_t n = rnd(sizeof buf);
    for (size_t i = 0; i < n; i++)
      buf[i] = rnd(8) == 0 ? (char)rnd(256) : alphabet[rnd(sizeof alphabet - 1)];
    try_text(buf, n);
  }
  teardown();
}

UNIT_TEST(token_soup_never_crashes) {
  setup();
  static const char *const toks[] = {
      "fn",    "f",   "g",    "(",    ")",     "[",      "]",       "{",     "}",    ",",
      ";",     ":",   ".",    "->",   "|",     "||",     "=",       "..",    "..=",  "<",
      "==",    "+",   "-",    "*",    "!",     "~",      "let",     "if",    "else", "loop",
      "while", "rec", "in",   "true", "inf",   "clamp",  "x",       "y",     "i32",  "f32[]",
      "1",     "2.5", "0",    "-1",   "map",   "fold",   "stencil", "slice", "i64",  "(i32, f32)",
      "0u8",   "d",   "d[i]", "x.0",  "|a| a", "while(", "/* c */", "// c\n"};
  char buf[1024];
  int parsed = 0;
  for (int iter = 0; iter < 4000; iter++) {
    size_t n = 0;
    if (rnd(2))
      n += (size_t)sprintf(buf, "fn f(x: i32, y: f32[]) -> i32 { ");
    int k = (int)rnd(40);
    for (int i = 0; i < k && n < sizeof buf - 40; i++)
      n += (size_t)sprintf(buf + n, "%s ", toks[rnd(sizeof toks / sizeof toks[0])]);
    if (rnd(2))
      n += (size_t)sprintf(buf + n, "}");
    parsed += try_text(buf, n);
  }
  CHECK(parsed > 0); /* some soups are programs, and those round-trip */
  teardown();
}

UNIT_TEST(mutated_programs_round_trip_when_they_parse) {
  setup();
  char buf[4096];
  int parsed = 0, checked = 0;
  for (int iter = 0; iter < 5000; iter++) {
    const char *src = corpus[rnd(NCORPUS)];
    size_t n = strlen(src);
    if (n >= sizeof buf / 2)
      continue;
    memcpy(buf, src, n);
    int edits = 1 + (int)rnd(3);
    for (int k = 0; k < edits && n > 0; k++) {
      size_t at = rnd((uint32_t)n), len = 1 + rnd(8);
      if (at + len > n)
        len = n - at;
      switch (rnd(4)) {
      case 0: /* delete */
        memmove(buf + at, buf + at + len, n - at - len);
        n -= len;
        break;
      case 1: /* duplicate */
        if (n + len < sizeof buf) {
          memmove(buf + at + len, buf + at, n - at);
          n += len;
        }
        break;
      case 2: /* overwrite one byte with a character that matters */
        buf[at] = "(){}[],;.-+|0a "[rnd(16)];
        break;
      default: /* a digit or an operator for another: mostly still a program */
        if (strchr("0123456789+-*/<>", buf[at]))
          buf[at] = "0123456789.e+-*/<>"[rnd(18)];
        break;
      }
    }
    if (try_text(buf, n)) {
      parsed++;
      checked += checked_fixpoint(buf, n, "a mutated program");
    }
  }
  fprintf(stderr, "  %d mutants parsed, %d of them checked\n", parsed, checked);
  CHECK(parsed > 0 && checked > 0);
  teardown();
}

/* An allocator that fails every allocation after the first `left`. */
typedef struct failing {
  long left;
  bool failed;
} failing;

static void *failing_realloc(void *ud, void *p, size_t n) {
  failing *f = ud;
  if (n == 0) {
    free(p);
    return NULL;
  }
  if (f->left-- <= 0) {
    f->failed = true;
    return NULL;
  }
  return realloc(p, n);
}

UNIT_TEST(allocation_failures_are_reported) {
  const char *src = corpus[3]; /* edit distance: rec, lets, if chains */
  bool completed = false;
  for (long budget = 0; budget < 5000 && !completed; budget++) {
    failing f = {budget, false};
    ac_context *c = ac_context_create_with_allocator(failing_realloc, &f);
    if (!c)
      continue;
    ac_module *m = ac_module_create(c, "t.ac");
    ac_error *e = NULL;
    if (m) {
      ac_status st = ir_parse(m, src, strlen(src), &e);
      CHECK(st == AC_OK || st == AC_ERR_NOMEM);
      if (st == AC_OK) {
        char *s = ac_module_print(m, &e);
        if (s) {
          completed = true;
          ac_string_destroy(c, s);
        } else {
          CHECK(f.failed);
        }
      } else {
        CHECK(f.failed);
      }
      ac_error_destroy(e);
    }
    ac_module_destroy(m);
    ac_context_destroy(c);
  }
  CHECK(completed);
}

UNIT_MAIN(corpus_raw_round_trip, corpus_checked_round_trip, layout_of_functions_lets_and_blocks,
          inferred_result_prints_as_written_then_as_inferred, layout_of_if_loop_rec_lambda,
          parentheses_follow_precedence, literal_spellings_of_parsed_text,
          de_bruijn_indices_and_binders, special_forms_layout, literal_flags_and_values,
          node_locations, scope_errors, syntax_errors, lexical_errors_reach_the_diagnostic,
          names_are_made_unique_and_valid, locals_never_capture_function_references,
          typed_literal_spellings, negation_and_postfix_of_literals,
          recs_lets_and_undefined_functions, malformed_trees_are_refused,
          every_repository_program_round_trips, pathological_nesting_is_an_error_not_a_crash,
          random_bytes_never_crash, token_soup_never_crashes,
          mutated_programs_round_trip_when_they_parse, allocation_failures_are_reported)
