/* Unit tests of extern functions (docs/language.md §3.3): host C functions
 * declared with `extern fn` or ac_extern_declare, bound with
 * ac_module_bind_extern or found with dlsym, and called from element code
 * and top-level code.
 *
 * The host functions live in this file. Those named acx_* are exported from
 * the test executable (test/CMakeLists.txt links it with ENABLE_EXPORTS, i.e.
 * -rdynamic), so dlsym(RTLD_DEFAULT) finds them; the tw_* functions are
 * static and reachable only by binding them. Functions of 0, 1, 3, 8, 12 and
 * 16 parameters of mixed kinds hash every argument's bits in position order,
 * so a value passed in the wrong slot, widened wrongly or in the wrong
 * register class changes the result; the expected result is the C function
 * called directly on the same values.
 *
 * Every case runs on the interpreter and, when this build has a CPU backend
 * (a function without externs can be created with AC_BACKEND_CPU), on the
 * CPU backend too; otherwise the test prints why it skipped those runs.
 */
#define _POSIX_C_SOURCE 200809L /* pthreads */
#include "ir.h"
#include "api/function_impl.h"
#include "test_interp_util.h"

#include <pthread.h>
#include <stdbool.h>

/* ---- host functions ---- */

int32_t acx_answer(void);
double acx_mix3(int8_t a, uint16_t b, float c);
int64_t acx_mix8(int8_t a, uint16_t b, int32_t c, uint64_t d, float e, double f, bool g, int8_t h);
uint64_t acx_mix12(uint8_t a, int16_t b, uint32_t c, int64_t d, bool e, float f, double g, int8_t h,
                   uint16_t i, int32_t j, uint64_t k, float l);
double acx_mix16(int8_t a, uint16_t b, int32_t c, uint64_t d, float e, double f, bool g, int8_t h,
                 uint16_t i, int32_t j, uint64_t k, float l, double m, bool n, int64_t o,
                 uint8_t p);
bool acx_is_odd(int64_t x);

/* Mixes the bits of one argument into h (FNV-1a over the bytes, then a
 * multiply so that positions do not commute). */
static uint64_t mix(uint64_t h, const void *p, size_t n) {
  const unsigned char *c = p;
  for (size_t i = 0; i < n; i++)
    h = (h ^ c[i]) * 1099511628211u;
  return h * 31u + n;
}
#define MIX(h, x) ((h) = mix((h), &(x), sizeof(x)))

int32_t acx_answer(void) {
  return 42;
}

double acx_mix3(int8_t a, uint16_t b, float c) {
  return a * 1000.0 + b + (double)c / 8;
}

int64_t acx_mix8(int8_t a, uint16_t b, int32_t c, uint64_t d, float e, double f, bool g, int8_t h) {
  uint64_t s = 14695981039346656037u;
  MIX(s, a), MIX(s, b), MIX(s, c), MIX(s, d), MIX(s, e), MIX(s, f), MIX(s, g), MIX(s, h);
  return (int64_t)(s >> 1) - (int64_t)(s >> 2); /* negative as often as not */
}

uint64_t acx_mix12(uint8_t a, int16_t b, uint32_t c, int64_t d, bool e, float f, double g, int8_t h,
                   uint16_t i, int32_t j, uint64_t k, float l) {
  uint64_t s = 14695981039346656037u;
  MIX(s, a), MIX(s, b), MIX(s, c), MIX(s, d), MIX(s, e), MIX(s, f);
  MIX(s, g), MIX(s, h), MIX(s, i), MIX(s, j), MIX(s, k), MIX(s, l);
  return s;
}

double acx_mix16(int8_t a, uint16_t b, int32_t c, uint64_t d, float e, double f, bool g, int8_t h,
                 uint16_t i, int32_t j, uint64_t k, float l, double m, bool n, int64_t o,
                 uint8_t p) {
  uint64_t s = 14695981039346656037u;
  MIX(s, a), MIX(s, b), MIX(s, c), MIX(s, d), MIX(s, e), MIX(s, f), MIX(s, g), MIX(s, h);
  MIX(s, i), MIX(s, j), MIX(s, k), MIX(s, l), MIX(s, m), MIX(s, n), MIX(s, o), MIX(s, p);
  return (double)(s >> 11); /* exact: 53 bits */
}

bool acx_is_odd(int64_t x) {
  return x % 2 != 0;
}

/* Bound by address only (static: dlsym cannot see them). Each changes its
 * argument so that a call that did not happen cannot pass. */
static bool tw_bool(bool x) {
  return !x;
}
static int8_t tw_i8(int8_t x) {
  return (int8_t)~x;
}
static int16_t tw_i16(int16_t x) {
  return (int16_t)~x;
}
static int32_t tw_i32(int32_t x) {
  return ~x;
}
static int64_t tw_i64(int64_t x) {
  return ~x;
}
static uint8_t tw_u8(uint8_t x) {
  return (uint8_t)~x;
}
static uint16_t tw_u16(uint16_t x) {
  return (uint16_t)~x;
}
static uint32_t tw_u32(uint32_t x) {
  return ~x;
}
static uint64_t tw_u64(uint64_t x) {
  return ~x;
}
static float tw_f32(float x) {
  return -2 * x;
}
static double tw_f64(double x) {
  return -2 * x;
}
static int32_t seven(void) {
  return 7;
}

/* ---- running on every backend ---- */

static bool cpu_probed, cpu_ok;

/* Whether this build has a working CPU backend: a function without externs
 * can be created with it. Only then are the CPU runs of this file done. */
static bool have_cpu(void) {
  if (cpu_probed)
    return cpu_ok;
  cpu_probed = true;
  const char *src = "fn probe(x: i32) -> i32 { x + 1 }";
  ac_context *c = ac_context_create();
  ac_module *pm = NULL;
  ac_function *f = NULL;
  ac_error *err = NULL;
  if (ac_module_parse(c, "probe.ac", src, strlen(src), &pm, &err) == AC_OK &&
      ac_function_create(pm, "probe", AC_BACKEND_CPU, &f, &err) == AC_OK)
    cpu_ok = true;
  else
    printf("SKIP: extern calls on the CPU backend: it is not usable in this build (%s)\n",
           err ? ac_error_message(err) : "no message");
  ac_error_destroy(err);
  ac_function_destroy(f);
  ac_module_destroy(pm);
  ac_context_destroy(c);
  return cpu_ok;
}

/* Calls fn of m on backend be with arguments as text (test_interp_util.h);
 * the result or the error as text. */
static const char *call_on(ac_module *m, ac_backend be, const char *fn, const char *args) {
  harness_buf b = {harness_out[harness_next++ % HARNESS_OUT], 0};
  b.s[0] = 0;
  ac_function *f = NULL;
  ac_error *err = NULL;
  if (ac_function_create(m, fn, be, &f, &err) != AC_OK)
    return harness_error(&b, err);
  CHECK_EQ_INT(ac_function_backend(f), be); /* no silent fallback */
  size_t na = ac_function_num_args(f), nr = ac_function_num_results(f);
  ac_datum *a = calloc(na + 1, sizeof *a), *r = calloc(nr + 1, sizeof *r);
  size_t got = 0;
  bool ok = a && r;
  for (const char *p = args; ok && *p;) {
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
    ok = got < na;
    if (ok) {
      ac_function_arg_info(f, got, &t, &rank);
      ok = parse_arg(ac_module_context(m), t, rank, p, (size_t)(e - p), &a[got]);
    }
    got += ok;
    p = e;
  }
  if (!ok || got != na) {
    hb_put(&b, "harness: bad arguments");
  } else if (ac_function_call(f, a, na, r, nr, &err) != AC_OK) {
    harness_error(&b, err);
  } else {
    for (size_t i = 0; i < nr; i++) {
      if (i)
        hb_put(&b, "\n");
      hb_datum(&b, &r[i]);
      ac_datum_release(&r[i]);
    }
  }
  for (size_t i = 0; i < got; i++)
    ac_datum_release(&a[i]);
  free(a);
  free(r);
  ac_function_destroy(f);
  return b.s;
}

/* Checks fn(args) == want on the interpreter and, if there is one, the CPU
 * backend. A macro so that a failure names the caller's line. */
#define CHECK_RUN(m, fn, args, want)                                                               \
  do {                                                                                             \
    CHECK_STR(call_on((m), AC_BACKEND_INTERP, (fn), (args)), (want));                              \
    if (have_cpu())                                                                                \
      CHECK_STR(call_on((m), AC_BACKEND_CPU, (fn), (args)), (want));                               \
  } while (0)

/* The text of one scalar, as the harness prints results. */
static const char *scalar_text(ac_scalar t, const void *p) {
  harness_buf b = {harness_out[harness_next++ % HARNESS_OUT], 0};
  b.s[0] = 0;
  hb_scalar(&b, t, p);
  return b.s;
}

/* "[a, b, ...]" of n values of kind t (elements of `size` bytes). */
static const char *list_text(ac_scalar t, size_t n, const void *vals, size_t size) {
  harness_buf b = {harness_out[harness_next++ % HARNESS_OUT], 0};
  b.s[0] = 0;
  hb_put(&b, "[");
  for (size_t i = 0; i < n; i++) {
    if (i)
      hb_put(&b, ", ");
    hb_scalar(&b, t, (const char *)vals + i * size);
  }
  hb_put(&b, "]");
  return b.s;
}

static ac_context *ctx;
static ac_module *m;

/* Parses src into m (a fresh context); false (with a failed check) if it is
 * rejected. */
static bool load(const char *src) {
  ctx = ac_context_create();
  ac_error *err = NULL;
  ac_status st = ac_module_parse(ctx, "t.ac", src, strlen(src), &m, &err);
  if (st != AC_OK)
    fprintf(stderr, "%s", ac_error_text(err));
  CHECK_EQ_INT(st, AC_OK);
  ac_error_destroy(err);
  return st == AC_OK;
}

static void teardown(void) {
  ac_module_destroy(m);
  ac_context_destroy(ctx);
  m = NULL;
  ctx = NULL;
}

static void bind(const char *name, void (*addr)(void)) {
  ac_error *err = NULL;
  CHECK_EQ_INT(ac_module_bind_extern(m, name, addr, &err), AC_OK);
  ac_error_destroy(err);
}

/* ---- the tests ---- */

UNIT_TEST(no_parameters_found_by_dlsym) {
  if (!load("extern fn acx_answer() -> i32;\n"
            "fn f() -> i32 { acx_answer() + 1 }\n"
            "fn g(xs: i32[]) -> i32[] { map(|x| x * acx_answer(), xs) }\n"))
    return;
  CHECK_RUN(m, "f", "", "43");
  CHECK_RUN(m, "g", "[1, -2, 0]", "[42, -84, 0]");
  CHECK(m->funcs[0].extern_addr != NULL); /* the address found is kept */
  teardown();
}

UNIT_TEST(a_binding_takes_precedence_over_the_symbol) {
  if (!load("extern fn acx_answer() -> i32;\nfn f() -> i32 { acx_answer() }\n"))
    return;
  bind("acx_answer", (void (*)(void))seven);
  CHECK_RUN(m, "f", "", "7");
  teardown();
}

UNIT_TEST(every_scalar_kind_passes_and_returns_exactly) {
  static const struct {
    const char *type;
    void (*addr)(void);
    const char *arg, *want, *xs, *want_xs;
  } k[] = {
      {"bool", (void (*)(void))tw_bool, "true", "false", "[true, false]", "[false, true]"},
      {"i8", (void (*)(void))tw_i8, "-128", "127", "[5, 127, -1]", "[-6, -128, 0]"},
      {"i16", (void (*)(void))tw_i16, "-32768", "32767", "[5, 0]", "[-6, -1]"},
      {"i32", (void (*)(void))tw_i32, "0", "-1", "[2147483647, 5]", "[-2147483648, -6]"},
      {"i64", (void (*)(void))tw_i64, "-9223372036854775808", "9223372036854775807", "[0, 5]",
       "[-1, -6]"},
      {"u8", (void (*)(void))tw_u8, "0", "255", "[1, 255]", "[254, 0]"},
      {"u16", (void (*)(void))tw_u16, "1", "65534", "[0, 65535]", "[65535, 0]"},
      {"u32", (void (*)(void))tw_u32, "0", "4294967295", "[1, 4294967295]", "[4294967294, 0]"},
      {"u64", (void (*)(void))tw_u64, "0", "18446744073709551615", "[18446744073709551615, 1]",
       "[0, 18446744073709551614]"},
      {"f32", (void (*)(void))tw_f32, "0.1", "-0.2", "[1.5, -0.0, inf]", "[-3.0, 0.0, -inf]"},
      {"f64", (void (*)(void))tw_f64, "0.1", "-0.2", "[1.5, nan, -inf]", "[-3.0, nan, inf]"},
  };
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
    char src[512];
    snprintf(src, sizeof src,
             "extern fn tw(x: %s) -> %s;\n"
             "fn top(x: %s) -> %s { tw(x) }\n"
             "fn elems(xs: %s[]) -> %s[] { map(tw, xs) }\n",
             k[i].type, k[i].type, k[i].type, k[i].type, k[i].type, k[i].type);
    if (!load(src))
      return;
    bind("tw", k[i].addr);
    CHECK_RUN(m, "top", k[i].arg, k[i].want);
    CHECK_RUN(m, "elems", k[i].xs, k[i].want_xs);
    teardown();
  }
}

UNIT_TEST(three_parameters_at_top_level_and_in_a_lambda) {
  if (!load("extern fn acx_mix3(a: i8, b: u16, c: f32) -> f64;\n"
            "fn top(a: i8, b: u16, c: f32) -> f64 { acx_mix3(a, b, c) }\n"
            "fn elems(xs: f32[]) -> f64[] { map(|x| acx_mix3(-3, 65535, x), xs) }\n"))
    return;
  CHECK_RUN(m, "top", "-128 65535 0.1",
            scalar_text(AC_F64, &(double){acx_mix3(-128, 65535, 0.1f)}));
  double want[3] = {acx_mix3(-3, 65535, 1.0f), acx_mix3(-3, 65535, -0.5f),
                    acx_mix3(-3, 65535, 3e38f)};
  CHECK_RUN(m, "elems", "[1, -0.5, 3e38]", list_text(AC_F64, 3, want, sizeof want[0]));
  teardown();
}

UNIT_TEST(eight_parameters_of_mixed_kinds) {
  if (!load("extern fn acx_mix8(a: i8, b: u16, c: i32, d: u64, e: f32, f: f64, g: bool, h: i8)"
            " -> i64;\n"
            "fn top(a: i8, b: u16, c: i32, d: u64, e: f32, f: f64, g: bool, h: i8) -> i64 {\n"
            "  acx_mix8(a, b, c, d, e, f, g, h)\n}\n"
            "fn elems(xs: i32[]) -> i64[] {\n"
            "  map(|x| acx_mix8(i8(x), u16(x), x, u64(x), f32(x) / 4.0, f64(x) * 0.1, x % 2 == 0,"
            " i8(-x)), xs)\n}\n"))
    return;
  int64_t top = acx_mix8(-7, 40000, -123456, 18446744073709551615u, 2.5f, -1e300, true, 127);
  CHECK_RUN(m, "top", "-7 40000 -123456 18446744073709551615 2.5 -1e300 true 127",
            scalar_text(AC_I64, &top));
  int32_t xs[4] = {0, 1, -300, 70000};
  int64_t want[4];
  for (int i = 0; i < 4; i++) {
    int32_t x = xs[i];
    want[i] = acx_mix8((int8_t)x, (uint16_t)x, x, (uint64_t)(int64_t)x, (float)x / 4.0f,
                       (double)x * 0.1, x % 2 == 0, (int8_t)-x);
  }
  CHECK_RUN(m, "elems", "[0, 1, -300, 70000]", list_text(AC_I64, 4, want, sizeof want[0]));
  teardown();
}

UNIT_TEST(twelve_parameters_through_a_fold) {
  if (!load("extern fn acx_mix12(a: u8, b: i16, c: u32, d: i64, e: bool, f: f32, g: f64, h: i8,"
            " i: u16, j: i32, k: u64, l: f32) -> u64;\n"
            "fn top(a: u8, b: i16, c: u32, d: i64, e: bool, f: f32, g: f64, h: i8, i: u16,"
            " j: i32, k: u64, l: f32) -> u64 {\n"
            "  acx_mix12(a, b, c, d, e, f, g, h, i, j, k, l)\n}\n"
            "fn total(xs: i64[]) -> u64 {\n"
            "  fold(|s, t| s ^ t, 0, map(|x| acx_mix12(u8(x), i16(x), u32(x), x, x > 0,"
            " f32(x), f64(x), i8(x), u16(x), i32(x), u64(x), 0.5), xs))\n}\n"))
    return;
  uint64_t top =
      acx_mix12(200, -2, 4000000000u, -5, false, -0.25f, 1e-310, -1, 9, -9, 1u << 31, 1e30f);
  CHECK_RUN(m, "top", "200 -2 4000000000 -5 false -0.25 1e-310 -1 9 -9 2147483648 1e30",
            scalar_text(AC_U64, &top));
  int64_t xs[5] = {1, -2, 300, -40000, 5000000000};
  uint64_t acc = 0;
  for (int i = 0; i < 5; i++) {
    int64_t x = xs[i];
    acc ^= acx_mix12((uint8_t)x, (int16_t)x, (uint32_t)x, x, x > 0, (float)x, (double)x, (int8_t)x,
                     (uint16_t)x, (int32_t)x, (uint64_t)x, 0.5f);
  }
  CHECK_RUN(m, "total", "[1, -2, 300, -40000, 5000000000]", scalar_text(AC_U64, &acc));
  teardown();
}

UNIT_TEST(sixteen_parameters_named_as_a_function_argument) {
  if (!load("extern fn acx_mix16(a: i8, b: u16, c: i32, d: u64, e: f32, f: f64, g: bool, h: i8,"
            " i: u16, j: i32, k: u64, l: f32, m: f64, n: bool, o: i64, p: u8) -> f64;\n"
            "fn top(x: i32) -> f64 {\n"
            "  acx_mix16(i8(x), 2, x, 4, 5.5, 6.25, true, -8, 9, -10, 11, 12.0, -13.5, false,"
            " -15, 255)\n}\n"
            "fn elems(a: i8[], b: u16[], c: i32[], d: u64[], e: f32[], f: f64[], g: bool[],"
            " h: i8[], i: u16[], j: i32[], k: u64[], l: f32[], m: f64[], n: bool[], o: i64[],"
            " p: u8[]) -> f64[] {\n"
            "  map(acx_mix16, a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p)\n}\n"))
    return;
  double top =
      acx_mix16(3, 2, 3, 4, 5.5f, 6.25, true, -8, 9, -10, 11, 12.0f, -13.5, false, -15, 255);
  CHECK_RUN(m, "top", "3", scalar_text(AC_F64, &top));
  double want[2] = {
      acx_mix16(1, 2, 3, 4, 5.5f, 6.5, true, -8, 9, -10, 11, 0.125f, 13.0, false, -15, 16),
      acx_mix16(-1, 65535, -3, 18446744073709551615u, -5.5f, -6.5, false, 8, 0, 10, 0, -0.125f,
                -13.0, true, 15, 0)};
  CHECK_RUN(m, "elems",
            "[1,-1] [2,65535] [3,-3] [4,18446744073709551615] [5.5,-5.5] [6.5,-6.5] [true,false]"
            " [-8,8] [9,0] [-10,10] [11,0] [0.125,-0.125] [13,-13] [false,true] [-15,15] [16,0]",
            list_text(AC_F64, 2, want, sizeof want[0]));
  teardown();
}

UNIT_TEST(a_bool_result_drives_filter_and_if) {
  if (!load("extern fn acx_is_odd(x: i64) -> bool;\n"
            "fn odd(xs: i64[]) -> i64[] { filter(acx_is_odd, xs) }\n"
            "fn pick(x: i64) -> i64 { if acx_is_odd(x) { 1 } else { 2 } }\n"))
    return;
  CHECK_RUN(m, "odd", "[1, 2, 3, -5, 0, 9223372036854775807]", "[1, 3, -5, 9223372036854775807]");
  CHECK_RUN(m, "pick", "7", "1");
  CHECK_RUN(m, "pick", "-8", "2");
  teardown();
}

UNIT_TEST(an_unresolved_extern_is_an_error_at_its_declaration) {
  if (!load("fn f(x: i32) -> i32 { acx_no_such_symbol(x) }\n"
            "extern fn acx_no_such_symbol(x: i32) -> i32;\n"
            "extern fn acx_unused_and_missing() -> i32;\n"
            "fn g(x: i32) -> i32 { x + 1 }\n"))
    return;
  CHECK_STR(call_on(m, AC_BACKEND_INTERP, "f", "1"),
            "2:11: error: extern function 'acx_no_such_symbol' is not bound and the process has "
            "no symbol 'acx_no_such_symbol' (see ac_module_bind_extern)");
  ac_function *f = NULL;
  ac_error *err = NULL;
  CHECK_EQ_INT(ac_function_create(m, "f", AC_BACKEND_INTERP, &f, &err), AC_ERR_INVALID);
  CHECK(f == NULL);
  ac_error_destroy(err);
  /* an extern that g cannot reach does not stop g */
  CHECK_RUN(m, "g", "1", "2");
  /* nor can an extern itself be made a function */
  CHECK_STR(call_on(m, AC_BACKEND_INTERP, "acx_unused_and_missing", ""),
            "3:11: error: 'acx_unused_and_missing' is an extern function: the host implements it, "
            "so call it directly, or from a function with a body");
  teardown();
}

UNIT_TEST(binding_checks_its_arguments) {
  if (!load("extern fn e(x: i32) -> i32;\nfn f(x: i32) -> i32 { e(x) }\n"))
    return;
  ac_error *err = NULL;
  CHECK_EQ_INT(ac_module_bind_extern(m, "nope", (void (*)(void))tw_i32, &err), AC_ERR_INVALID);
  CHECK_STR(ac_error_message(err),
            "ac_module_bind_extern: cannot bind 'nope': the module has no extern function of "
            "that name");
  ac_error_destroy(err);
  CHECK_EQ_INT(ac_module_bind_extern(m, "f", (void (*)(void))tw_i32, &err), AC_ERR_INVALID);
  CHECK_STR(ac_error_message(err), "ac_module_bind_extern: cannot bind 'f': it is a function "
                                   "with a body, not an extern function");
  ac_error_destroy(err);
  CHECK_EQ_INT(ac_module_bind_extern(m, "e", NULL, &err), AC_ERR_INVALID);
  CHECK_STR(ac_error_message(err), "ac_module_bind_extern: cannot bind 'e': the address is NULL");
  ac_error_destroy(err);
  CHECK_EQ_INT(ac_module_bind_extern(m, NULL, (void (*)(void))tw_i32, NULL), AC_ERR_INVALID);
  CHECK_EQ_INT(ac_module_bind_extern(NULL, "e", (void (*)(void))tw_i32, NULL), AC_ERR_INVALID);
  /* none of the failures bound anything; a good binding works */
  CHECK(m->funcs[0].extern_addr == NULL);
  bind("e", (void (*)(void))tw_i32);
  CHECK_RUN(m, "f", "5", "-6");
  teardown();
}

UNIT_TEST(the_printer_writes_declarations_that_read_back) {
  const char *src = "extern   fn acx_mix3 ( a : i8, b:u16 , c: f32 )->f64 ;\n"
                    "fn f(x: f32) -> f64 { acx_mix3(1, 2, x) }\n"
                    "extern fn none() -> bool;\n";
  if (!load(src))
    return;
  ac_error *err = NULL;
  char *text = ac_module_print(m, &err);
  CHECK_STR(text, "extern fn acx_mix3(a: i8, b: u16, c: f32) -> f64;\n"
                  "\n"
                  "fn f(x: f32) -> f64 {\n"
                  "  acx_mix3(1, 2, x)\n"
                  "}\n"
                  "\n"
                  "extern fn none() -> bool;\n");
  ac_module *again = NULL;
  CHECK_EQ_INT(ac_module_parse(ctx, "again.ac", text, strlen(text), &again, &err), AC_OK);
  char *text2 = again ? ac_module_print(again, &err) : NULL;
  CHECK_STR(text2, text);
  CHECK(again && again->funcs[0].is_extern && !again->funcs[1].is_extern);
  ac_string_destroy(ctx, text);
  ac_string_destroy(ctx, text2);
  ac_module_destroy(again);
  teardown();
}

UNIT_TEST(the_builder_declares_calls_and_names_externs) {
  ctx = ac_context_create();
  m = ac_module_create(ctx, "b");
  ac_builder *b = ac_builder_create(m);
  ac_type i8 = ac_type_scalar(ctx, AC_I8), u16 = ac_type_scalar(ctx, AC_U16);
  ac_type f32 = ac_type_scalar(ctx, AC_F32), f64 = ac_type_scalar(ctx, AC_F64);
  ac_type vf32 = ac_type_array(ctx, f32, 1), vf64 = ac_type_array(ctx, f64, 1);
  ac_fn mix3 = ac_extern_declare(b, "acx_mix3", 3, (ac_type[]){i8, u16, f32},
                                 (const char *[]){"a", "b", "c"}, f64);
  ac_fn twice = ac_extern_declare(b, "twice", 1, &f64, NULL, f64);
  CHECK(mix3.id != 0 && twice.id != 0);
  ac_fn g = ac_fn_declare(b, "g", 1, &vf32, (const char *[]){"xs"}, vf64);
  ac_value x;
  ac_lambda l = ac_lambda_begin(b, 1, (const char *[]){"x"}, &x);
  ac_value call =
      ac_call(b, mix3, 3, (ac_value[]){ac_lit_int(b, AC_I8, -3), ac_lit_uint(b, AC_U16, 7), x});
  ac_value lam = ac_lambda_end(b, l, call);
  ac_value mapped = ac_apply(b, AC_OP_MAP, 2, (ac_value[]){lam, ac_fn_param(b, g, 0)});
  ac_value body = ac_apply(b, AC_OP_MAP, 2, (ac_value[]){ac_fn_ref(b, twice), mapped});
  ac_error *err = NULL;
  CHECK_EQ_INT(ac_fn_finish(b, g, body, &err), AC_OK);
  ac_error_destroy(err);
  char *text = ac_module_print(m, NULL);
  CHECK_STR(text, "extern fn acx_mix3(a: i8, b: u16, c: f32) -> f64;\n"
                  "\n"
                  "extern fn twice(p0: f64) -> f64;\n"
                  "\n"
                  "fn g(xs: f32[]) -> f64[] {\n"
                  "  map(twice, map(|x| acx_mix3(-3, 7, x), xs))\n"
                  "}\n");
  ac_string_destroy(ctx, text);
  bind("twice", (void (*)(void))tw_f64);
  double want[2] = {-2 * acx_mix3(-3, 7, 0.5f), -2 * acx_mix3(-3, 7, -8.0f)};
  CHECK_RUN(m, "g", "[0.5, -8]", list_text(AC_F64, 2, want, sizeof want[0]));

  /* an extern has no parameters to use and no body to finish */
  CHECK_EQ_INT(ac_fn_finish(b, twice, ac_lit_float(b, AC_F64, 1), &err), AC_ERR_INVALID);
  CHECK_STR(ac_error_message(err),
            "ac_fn_finish: 'twice' is an extern function: the host implements it");
  ac_error_destroy(err);
  CHECK(ac_fn_param(b, twice, 0).id == 0);
  ac_fn h = ac_fn_declare(b, "h", 0, NULL, NULL, f64);
  CHECK_EQ_INT(ac_fn_finish(b, h, ac_lit_float(b, AC_F64, 1), &err), AC_ERR_INVALID);
  CHECK_STR(ac_error_message(err), "ac_fn_param: 'twice' is an extern function: it has no body "
                                   "to use parameters in");
  ac_error_destroy(err);
  ac_builder_destroy(b);
  teardown();
}

UNIT_TEST(the_builder_refuses_extern_types_that_are_not_scalars) {
  ctx = ac_context_create();
  m = ac_module_create(ctx, "b");
  ac_builder *b = ac_builder_create(m);
  ac_type f64 = ac_type_scalar(ctx, AC_F64), vf64 = ac_type_array(ctx, f64, 1);
  CHECK(ac_extern_declare(b, "bad", 1, &vf64, NULL, f64).id == 0);
  ac_fn h = ac_fn_declare(b, "h", 0, NULL, NULL, f64);
  ac_error *err = NULL;
  CHECK_EQ_INT(ac_fn_finish(b, h, ac_lit_float(b, AC_F64, 1), &err), AC_ERR_INVALID);
  CHECK_STR(ac_error_message(err),
            "ac_extern_declare: parameter 1 of extern function 'bad' must be a scalar");
  ac_error_destroy(err);
  ac_builder_destroy(b);
  teardown();

  ctx = ac_context_create();
  m = ac_module_create(ctx, "b");
  b = ac_builder_create(m);
  f64 = ac_type_scalar(ctx, AC_F64);
  ac_type pair = ac_type_tuple(ctx, 2, (ac_type[]){f64, f64});
  CHECK(ac_extern_declare(b, "bad", 0, NULL, NULL, pair).id == 0);
  h = ac_fn_declare(b, "h", 0, NULL, NULL, f64);
  CHECK_EQ_INT(ac_fn_finish(b, h, ac_lit_float(b, AC_F64, 1), &err), AC_ERR_INVALID);
  CHECK_STR(ac_error_message(err),
            "ac_extern_declare: the result of extern function 'bad' must be a scalar");
  ac_error_destroy(err);
  ac_builder_destroy(b);
  teardown();
}

UNIT_TEST(the_verifier_refuses_malformed_externs) {
  if (!load("extern fn e(x: i32) -> i32;\nfn f(x: i32) -> i32 { x }\n"))
    return;
  ac_error *err = NULL;
  m->funcs[0].body = m->funcs[1].body; /* what a broken pass might do */
  CHECK_EQ_INT(ac_module_verify(m, &err), AC_ERR_TYPE);
  CHECK_STR(ac_error_message(err), "malformed IR: extern function 'e' has a body");
  ac_error_destroy(err);
  m->funcs[0].body = IR_NONE;
  m->ints[m->funcs[0].params] = ir_ty_array(ctx, ir_ty_scalar(ctx, AC_I32), 1);
  CHECK_EQ_INT(ac_module_verify(m, &err), AC_ERR_TYPE);
  CHECK_STR(ac_error_message(err), "parameter 1 of extern function 'e' is not a scalar");
  ac_error_destroy(err);
  teardown();
}

/* ---- several threads ---- */

typedef struct worker {
  ac_function *f;
  int id;
  bool ok;
} worker;

static void *work(void *p) {
  worker *w = p;
  w->ok = true;
  int64_t n = 2000;
  for (int rep = 0; rep < 10 && w->ok; rep++) {
    ac_array *xs = ac_array_create(ac_module_context(m), AC_I64, 1, &n, NULL, NULL);
    int64_t *d = (int64_t *)ac_array_data(xs);
    for (int64_t i = 0; i < n; i++)
      d[i] = i * (w->id + 1) + rep;
    ac_datum arg = {AC_DATUM_ARRAY, AC_I64, {0}, xs}, res;
    w->ok = ac_function_call(w->f, &arg, 1, &res, 1, NULL) == AC_OK;
    if (w->ok) {
      const int64_t *r = ac_array_data(res.array);
      for (int64_t i = 0; i < n && w->ok; i++)
        w->ok = r[i] == (acx_is_odd(d[i]) ? ~d[i] : d[i]);
      ac_datum_release(&res);
    }
    ac_array_release(xs);
  }
  return NULL;
}

static void run_threads(ac_backend be) {
  ac_function *f = NULL;
  ac_error *err = NULL;
  CHECK_EQ_INT(ac_function_create(m, "f", be, &f, &err), AC_OK);
  ac_error_destroy(err);
  if (!f)
    return;
  worker w[4];
  pthread_t t[4];
  for (int i = 0; i < 4; i++) {
    w[i] = (worker){f, i, false};
    CHECK_EQ_INT(pthread_create(&t[i], NULL, work, &w[i]), 0);
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(t[i], NULL);
    CHECK(w[i].ok);
  }
  ac_function_destroy(f);
}

UNIT_TEST(calls_from_several_threads_at_once) {
  if (!load("extern fn acx_is_odd(x: i64) -> bool;\nextern fn tw(x: i64) -> i64;\n"
            "fn f(xs: i64[]) -> i64[] { map(|x| if acx_is_odd(x) { tw(x) } else { x }, xs) }\n"))
    return;
  bind("tw", (void (*)(void))tw_i64);
  run_threads(AC_BACKEND_INTERP);
  if (have_cpu())
    run_threads(AC_BACKEND_CPU);
  teardown();
}

UNIT_TEST(allocation_failures_in_calls_leak_nothing) {
  counting c = {0, 0, -1};
  ctx = ac_context_create_with_allocator(counting_realloc, &c);
  const char *src = "extern fn acx_mix16(a: i8, b: u16, c: i32, d: u64, e: f32, f: f64, g: bool,"
                    " h: i8, i: u16, j: i32, k: u64, l: f32, m: f64, n: bool, o: i64, p: u8) -> "
                    "f64;\n"
                    "fn f(xs: i32[]) -> f64[] {\n"
                    "  map(|x| acx_mix16(1, 2, x, 4, 5.0, 6.0, true, 8, 9, x, 11, 12.0, 13.0, "
                    "false, 15, 16), xs)\n}\n";
  CHECK_EQ_INT(ac_module_parse(ctx, "t.ac", src, strlen(src), &m, NULL), AC_OK);
  ac_function *f = NULL;
  CHECK_EQ_INT(ac_function_create(m, "f", AC_BACKEND_INTERP, &f, NULL), AC_OK);
  int64_t n = 3;
  ac_array *xs = ac_array_create(ctx, AC_I32, 1, &n, (int32_t[]){-1, 0, 1}, NULL);
  size_t base = c.live;
  bool passed = false;
  for (long k = 0; k < 100 && !passed && f; k++) {
    ac_datum arg = {AC_DATUM_ARRAY, AC_I32, {0}, xs}, res;
    ac_error *err = NULL;
    c.fail_after = k;
    ac_status st = ac_function_call(f, &arg, 1, &res, 1, &err);
    c.fail_after = -1;
    if (st == AC_OK) {
      const double *d = ac_array_data(res.array);
      CHECK(d[2] == acx_mix16(1, 2, 1, 4, 5, 6, true, 8, 9, 1, 11, 12, 13, false, 15, 16));
      ac_datum_release(&res);
      passed = true;
    } else {
      CHECK_EQ_INT(st, AC_ERR_NOMEM);
      ac_error_destroy(err);
    }
    CHECK_EQ_INT(c.live, base);
  }
  CHECK(passed);
  ac_function_destroy(f);
  ac_array_release(xs);
  teardown();
}

/* ---- extern kernels (docs/language.md §3.4) ---- */

/* The host function of `extern kernel kmix(k: i8, b: bool, xs: f64[,],
 * s: f32) -> (f64[shape(xs).1], i32[2])`: column sums of xs times s, and the
 * scalars as seen (so that a scalar in the wrong slot or widened wrongly
 * shows). */
static int kmix_calls;
static void kmix(int8_t k, bool b, const double *xs, int64_t r, int64_t c, float s, double *sums,
                 int64_t ns, int32_t *seen, int64_t nseen) {
  kmix_calls++;
  for (int64_t j = 0; j < ns && j < c; j++) {
    double t = 0;
    for (int64_t i = 0; i < r; i++)
      t += xs[i * c + j];
    sums[j] = t * s;
  }
  if (nseen == 2) {
    seen[0] = k;
    seen[1] = b ? 1 : 0;
  }
}

static bool have_emu(void) {
  ac_context *c = ac_context_create();
  ac_runtime *rt = NULL;
  ac_error *err = NULL;
  bool ok = ac_runtime_create(c, AC_BACKEND_SIMT_EMU, &rt, &err) == AC_OK;
  ac_error_destroy(err);
  ac_runtime_destroy(rt);
  ac_context_destroy(c);
  return ok;
}

UNIT_TEST(an_extern_kernel_bound_by_the_api_runs_on_every_host_backend) {
  if (!load("extern kernel kmix(k: i8, b: bool, xs: f64[,], s: f32) -> "
            "(f64[shape(xs).1], i32[2]);\n"
            "fn f(k: i8, xs: f64[,]) -> (f64[], i32[]) {\n"
            "  let (a, b) = kmix(k, k < 0i8, map(|x| x + 1.0, xs), 2.0);\n"
            "  (map(|x| x * 10.0, a), b)\n"
            "}\n"))
    return;
  /* unbound and not in the process: an error at the declaration */
  CHECK_STR(call_on(m, AC_BACKEND_INTERP, "f", "-3 [[1, 2], [3, 4], [5, 6]]"),
            "1:15: error: extern kernel 'kmix' has no host function: it is not bound and "
            "the process has no symbol 'kmix' (see ac_module_bind_extern; the interpreter and "
            "the CPU call the host function, the GPU the PTX)");
  bind("kmix", (void (*)(void))kmix);
  kmix_calls = 0;
  CHECK_RUN(m, "f", "-3 [[1, 2], [3, 4], [5, 6]]", "[240.0, 300.0]\n[-3, 1]");
  CHECK_RUN(m, "f", "7 [[1, 2, 3]]", "[40.0, 60.0, 80.0]\n[7, 0]");
  CHECK(kmix_calls >= 2);
  if (have_emu())
    CHECK_STR(call_on(m, AC_BACKEND_SIMT_EMU, "f", "-3 [[1, 2], [3, 4], [5, 6]]"),
              "[240.0, 300.0]\n[-3, 1]");
  else
    printf("SKIP: extern kernels on the SIMT emulator: it is not usable in this build\n");
  teardown();
}

UNIT_TEST(an_extern_kernel_without_ptx_cannot_be_compiled_for_the_gpu) {
  if (!load("extern kernel kmix(k: i8, b: bool, xs: f64[,], s: f32) -> "
            "(f64[shape(xs).1], i32[2]);\n"
            "fn f(xs: f64[,]) -> f64[] { kmix(1i8, true, xs, 1.0).0 }\n"))
    return;
  ac_error *err = NULL;
  char *ptx = NULL;
  uint32_t fn = 1;
  CHECK_EQ_INT(api_emit_ptx(m, &fn, 1, NULL, 80, false, &ptx, &err), AC_ERR_UNSUPPORTED);
  CHECK(err && strstr(ac_error_message(err), "extern kernel kmix has no PTX"));
  ac_error_destroy(err);
  ac_free(ctx, ptx);
  teardown();
}

UNIT_TEST(the_builder_declares_and_finishes_extern_kernels) {
  ctx = ac_context_create();
  m = ac_module_create(ctx, "b");
  ac_builder *b = ac_builder_create(m);
  ac_type i8 = ac_type_scalar(ctx, AC_I8), bl = ac_type_scalar(ctx, AC_BOOL);
  ac_type f32 = ac_type_scalar(ctx, AC_F32), f64 = ac_type_scalar(ctx, AC_F64);
  ac_type i32 = ac_type_scalar(ctx, AC_I32);
  ac_type m64 = ac_type_array(ctx, f64, 2), v64 = ac_type_array(ctx, f64, 1);
  ac_type vi32 = ac_type_array(ctx, i32, 1);
  ac_type res = ac_type_tuple(ctx, 2, (ac_type[]){v64, vi32});
  ac_fn k = ac_kernel_declare(b, "kmix", 4, (ac_type[]){i8, bl, m64, f32},
                              (const char *[]){"k", "b", "xs", "s"}, res);
  CHECK(k.id != 0);
  /* a function calling it is finished before the kernel is */
  ac_fn f = ac_fn_declare(b, "f", 1, &m64, (const char *[]){"xs"}, v64);
  ac_value call = ac_call(b, k, 4,
                          (ac_value[]){ac_lit_int(b, AC_I8, 2), ac_lit_bool(b, true),
                                       ac_fn_param(b, f, 0), ac_lit_float(b, AC_F32, 0.5)});
  ac_error *err = NULL;
  CHECK_EQ_INT(ac_fn_finish(b, f, ac_proj(b, call, 0), &err), AC_OK);
  ac_error_destroy(err);
  err = NULL;
  ac_function *fn = NULL;
  CHECK_EQ_INT(ac_function_create(m, "f", AC_BACKEND_INTERP, &fn, &err), AC_ERR_INVALID);
  CHECK(err && strstr(ac_error_message(err), "which is not finished (ac_kernel_finish)"));
  ac_error_destroy(err);
  /* shape(xs).1 and 2 */
  ac_value cols = ac_proj(b, ac_apply(b, AC_OP_SHAPE, 1, (ac_value[]){ac_fn_param(b, k, 2)}), 1);
  ac_kernel_info info;
  memset(&info, 0, sizeof info);
  info.size = sizeof info;
  info.nextents = 2;
  info.extents = (ac_value[]){cols, ac_lit_int(b, AC_I64, 2)};
  info.ptx = "// no code";
  info.host = "kmix_host";
  err = NULL;
  CHECK_EQ_INT(ac_kernel_finish(b, k, &info, &err), AC_ERR_INVALID); /* ptx without threads */
  CHECK(err && strstr(ac_error_message(err), "a bad launch rule"));
  ac_error_destroy(err);
  info.threads = ac_binary(b, AC_OP_MUL, cols, ac_lit_int(b, AC_I64, 32));
  info.block = 64;
  err = NULL;
  CHECK_EQ_INT(ac_kernel_finish(b, k, &info, &err), AC_OK);
  ac_error_destroy(err);
  err = NULL;
  CHECK_EQ_INT(ac_kernel_finish(b, k, &info, &err), AC_ERR_INVALID);
  CHECK(err && strstr(ac_error_message(err), "already finished"));
  ac_error_destroy(err);
  CHECK(ac_fn_finish(b, k, cols, &err) == AC_ERR_INVALID);
  CHECK_STR(ac_error_message(err),
            "ac_fn_finish: 'kmix' is an extern kernel: finish it with ac_kernel_finish");
  ac_error_destroy(err);
  char *text = ac_module_print(m, NULL);
  CHECK_STR(text, "extern kernel kmix(k: i8, b: bool, xs: f64[,], s: f32) -> (f64[shape(xs).1], "
                  "i32[2]) threads shape(xs).1 * 32 block 64 ptx \"// no code\" host "
                  "\"kmix_host\";\n"
                  "\n"
                  "fn f(xs: f64[,]) -> f64[] {\n"
                  "  kmix(2, true, xs, 0.5).0\n"
                  "}\n");
  ac_string_destroy(ctx, text);
  bind("kmix", (void (*)(void))kmix);
  CHECK_RUN(m, "f", "[[1, 2], [3, 4]]", "[2.0, 3.0]");
  /* kernels refuse what the language refuses */
  CHECK(ac_kernel_declare(b, "bad", 1, (ac_type[]){ac_type_tuple(ctx, 2, (ac_type[]){f32, f32})},
                          NULL, v64)
            .id == 0);
  ac_builder_destroy(b);
  teardown();
  ctx = ac_context_create();
  m = ac_module_create(ctx, "b");
  b = ac_builder_create(m);
  f64 = ac_type_scalar(ctx, AC_F64);
  CHECK(ac_kernel_declare(b, "bad", 0, NULL, NULL, f64).id == 0);
  ac_fn h = ac_fn_declare(b, "h", 0, NULL, NULL, f64);
  CHECK_EQ_INT(ac_fn_finish(b, h, ac_lit_float(b, AC_F64, 1), &err), AC_ERR_INVALID);
  CHECK_STR(ac_error_message(err), "ac_kernel_declare: the result of extern kernel 'bad' must be "
                                   "an array of scalars or a tuple of them");
  ac_error_destroy(err);
  ac_builder_destroy(b);
  teardown();
}

UNIT_TEST(allocation_failures_in_kernel_calls_leak_nothing) {
  counting c = {0, 0, -1};
  ctx = ac_context_create_with_allocator(counting_realloc, &c);
  const char *src = "extern kernel kmix(k: i8, b: bool, xs: f64[,], s: f32) -> "
                    "(f64[shape(xs).1], i32[2]);\n"
                    "fn f(xs: f64[,]) -> f64[] { kmix(1i8, true, xs, 3.0).0 }\n";
  CHECK_EQ_INT(ac_module_parse(ctx, "t.ac", src, strlen(src), &m, NULL), AC_OK);
  CHECK_EQ_INT(ac_module_bind_extern(m, "kmix", (void (*)(void))kmix, NULL), AC_OK);
  ac_function *f = NULL;
  CHECK_EQ_INT(ac_function_create(m, "f", AC_BACKEND_INTERP, &f, NULL), AC_OK);
  int64_t ext[2] = {2, 2};
  ac_array *xs = ac_array_create(ctx, AC_F64, 2, ext, (double[]){1, 2, 3, 4}, NULL);
  size_t base = c.live;
  bool passed = false;
  for (long k = 0; k < 100 && !passed && f; k++) {
    ac_datum arg = {AC_DATUM_ARRAY, AC_F64, {0}, xs}, res;
    ac_error *err = NULL;
    c.fail_after = k;
    ac_status st = ac_function_call(f, &arg, 1, &res, 1, &err);
    c.fail_after = -1;
    if (st == AC_OK) {
      const double *d = ac_array_data(res.array);
      CHECK(d[0] == 12.0 && d[1] == 18.0);
      ac_datum_release(&res);
      passed = true;
    } else {
      CHECK_EQ_INT(st, AC_ERR_NOMEM);
      ac_error_destroy(err);
    }
    CHECK_EQ_INT(c.live, base);
  }
  CHECK(passed);
  ac_function_destroy(f);
  ac_array_release(xs);
  teardown();
}

UNIT_MAIN(no_parameters_found_by_dlsym, a_binding_takes_precedence_over_the_symbol,
          every_scalar_kind_passes_and_returns_exactly,
          three_parameters_at_top_level_and_in_a_lambda, eight_parameters_of_mixed_kinds,
          twelve_parameters_through_a_fold, sixteen_parameters_named_as_a_function_argument,
          a_bool_result_drives_filter_and_if, an_unresolved_extern_is_an_error_at_its_declaration,
          binding_checks_its_arguments, the_printer_writes_declarations_that_read_back,
          the_builder_declares_calls_and_names_externs,
          the_builder_refuses_extern_types_that_are_not_scalars,
          the_verifier_refuses_malformed_externs, calls_from_several_threads_at_once,
          allocation_failures_in_calls_leak_nothing,
          an_extern_kernel_bound_by_the_api_runs_on_every_host_backend,
          an_extern_kernel_without_ptx_cannot_be_compiled_for_the_gpu,
          the_builder_declares_and_finishes_extern_kernels,
          allocation_failures_in_kernel_calls_leak_nothing)
