/* test/unit/unit.h: a minimal harness for the C unit tests.
 *
 *   UNIT_TEST(name) { ... CHECK(cond); CHECK_EQ_INT(a, b); CHECK_STR(a, b); }
 *   int main(void) { return unit_run(); }   -- after all UNIT_TEST bodies
 *
 * Tests register themselves through a constructor-free static list: each
 * UNIT_TEST expands to a function plus an entry appended by UNIT_MAIN(...).
 * Failures print "FILE:LINE: check failed: EXPR" and the run ends with
 * "N passed, N failed"; the exit status is non-zero if anything failed.
 */
#ifndef ARRAYC_TEST_UNIT_H
#define ARRAYC_TEST_UNIT_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int unit_failed_checks;

#define CHECK(cond)                                                                                \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);                     \
      unit_failed_checks++;                                                                        \
    }                                                                                              \
  } while (0)

#define CHECK_EQ_INT(a, b)                                                                         \
  do {                                                                                             \
    long long unit_a_ = (long long)(a), unit_b_ = (long long)(b);                                  \
    if (unit_a_ != unit_b_) {                                                                      \
      fprintf(stderr, "%s:%d: check failed: %s == %s (%lld vs %lld)\n", __FILE__, __LINE__, #a,    \
              #b, unit_a_, unit_b_);                                                               \
      unit_failed_checks++;                                                                        \
    }                                                                                              \
  } while (0)

#define CHECK_STR(a, b)                                                                            \
  do {                                                                                             \
    const char *unit_a_ = (a), *unit_b_ = (b);                                                     \
    if (!unit_a_ || !unit_b_ || strcmp(unit_a_, unit_b_) != 0) {                                   \
      fprintf(stderr, "%s:%d: check failed: %s == %s\n  got:      %s\n  expected: %s\n", __FILE__, \
              __LINE__, #a, #b, unit_a_ ? unit_a_ : "(null)", unit_b_ ? unit_b_ : "(null)");       \
      unit_failed_checks++;                                                                        \
    }                                                                                              \
  } while (0)

/* The whole file at path, NUL-terminated (malloc'd; free it), its length
 * in *n when n is not NULL; NULL if it cannot be read. */
static inline char *unit_read_file(const char *path, size_t *n) {
  FILE *fp = fopen(path, "rb");
  if (!fp)
    return NULL;
  size_t len = 0, cap = 1 << 16;
  char *buf = malloc(cap);
  while (buf) {
    len += fread(buf + len, 1, cap - len, fp);
    if (len < cap)
      break;
    char *nb = realloc(buf, cap *= 2);
    if (!nb)
      free(buf);
    buf = nb;
  }
  int failed = ferror(fp) != 0;
  fclose(fp);
  if (buf && failed) {
    free(buf);
    buf = NULL;
  }
  if (buf) {
    buf[len] = '\0'; /* len < cap */
    if (n)
      *n = len;
  }
  return buf;
}

typedef void (*unit_fn)(void);
typedef struct unit_case {
  const char *name;
  unit_fn fn;
} unit_case;

#define UNIT_TEST(name) static void name(void)

/* UNIT_MAIN(t1, t2, ...) defines main running the named tests in order. */
#define UNIT_CASE_(f) {#f, f},
#define UNIT_MAIN(...)                                                                             \
  int main(void) {                                                                                 \
    static const unit_case cases[] = {UNIT_FOREACH_(UNIT_CASE_, __VA_ARGS__)};                     \
    int passed = 0, failed = 0;                                                                    \
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {                                  \
      int before = unit_failed_checks;                                                             \
      cases[i].fn();                                                                               \
      if (unit_failed_checks == before) {                                                          \
        passed++;                                                                                  \
      } else {                                                                                     \
        failed++;                                                                                  \
        fprintf(stderr, "FAILED: %s\n", cases[i].name);                                            \
      }                                                                                            \
    }                                                                                              \
    printf("%d passed, %d failed\n", passed, failed);                                              \
    return failed ? 1 : 0;                                                                         \
  }

/* Up to 64 tests per file. */
#define UNIT_FOREACH_(M, ...) UNIT_FE_N_(__VA_ARGS__, UNIT_FE_SEQ_)(M, __VA_ARGS__)
#define UNIT_FE_N_(...) UNIT_FE_ARG_(__VA_ARGS__)
#define UNIT_FE_ARG_(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15, _16, _17,   \
                     _18, _19, _20, _21, _22, _23, _24, _25, _26, _27, _28, _29, _30, _31, _32,    \
                     _33, _34, _35, _36, _37, _38, _39, _40, _41, _42, _43, _44, _45, _46, _47,    \
                     _48, _49, _50, _51, _52, _53, _54, _55, _56, _57, _58, _59, _60, _61, _62,    \
                     _63, _64, N, ...)                                                             \
  UNIT_FE_##N
#define UNIT_FE_SEQ_                                                                               \
  64, 63, 62, 61, 60, 59, 58, 57, 56, 55, 54, 53, 52, 51, 50, 49, 48, 47, 46, 45, 44, 43, 42, 41,  \
      40, 39, 38, 37, 36, 35, 34, 33, 32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18,  \
      17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1
#define UNIT_FE_1(M, a) M(a)
#define UNIT_FE_2(M, a, ...) M(a) UNIT_FE_1(M, __VA_ARGS__)
#define UNIT_FE_3(M, a, ...) M(a) UNIT_FE_2(M, __VA_ARGS__)
#define UNIT_FE_4(M, a, ...) M(a) UNIT_FE_3(M, __VA_ARGS__)
#define UNIT_FE_5(M, a, ...) M(a) UNIT_FE_4(M, __VA_ARGS__)
#define UNIT_FE_6(M, a, ...) M(a) UNIT_FE_5(M, __VA_ARGS__)
#define UNIT_FE_7(M, a, ...) M(a) UNIT_FE_6(M, __VA_ARGS__)
#define UNIT_FE_8(M, a, ...) M(a) UNIT_FE_7(M, __VA_ARGS__)
#define UNIT_FE_9(M, a, ...) M(a) UNIT_FE_8(M, __VA_ARGS__)
#define UNIT_FE_10(M, a, ...) M(a) UNIT_FE_9(M, __VA_ARGS__)
#define UNIT_FE_11(M, a, ...) M(a) UNIT_FE_10(M, __VA_ARGS__)
#define UNIT_FE_12(M, a, ...) M(a) UNIT_FE_11(M, __VA_ARGS__)
#define UNIT_FE_13(M, a, ...) M(a) UNIT_FE_12(M, __VA_ARGS__)
#define UNIT_FE_14(M, a, ...) M(a) UNIT_FE_13(M, __VA_ARGS__)
#define UNIT_FE_15(M, a, ...) M(a) UNIT_FE_14(M, __VA_ARGS__)
#define UNIT_FE_16(M, a, ...) M(a) UNIT_FE_15(M, __VA_ARGS__)
#define UNIT_FE_17(M, a, ...) M(a) UNIT_FE_16(M, __VA_ARGS__)
#define UNIT_FE_18(M, a, ...) M(a) UNIT_FE_17(M, __VA_ARGS__)
#define UNIT_FE_19(M, a, ...) M(a) UNIT_FE_18(M, __VA_ARGS__)
#define UNIT_FE_20(M, a, ...) M(a) UNIT_FE_19(M, __VA_ARGS__)
#define UNIT_FE_21(M, a, ...) M(a) UNIT_FE_20(M, __VA_ARGS__)
#define UNIT_FE_22(M, a, ...) M(a) UNIT_FE_21(M, __VA_ARGS__)
#define UNIT_FE_23(M, a, ...) M(a) UNIT_FE_22(M, __VA_ARGS__)
#define UNIT_FE_24(M, a, ...) M(a) UNIT_FE_23(M, __VA_ARGS__)
#define UNIT_FE_25(M, a, ...) M(a) UNIT_FE_24(M, __VA_ARGS__)
#define UNIT_FE_26(M, a, ...) M(a) UNIT_FE_25(M, __VA_ARGS__)
#define UNIT_FE_27(M, a, ...) M(a) UNIT_FE_26(M, __VA_ARGS__)
#define UNIT_FE_28(M, a, ...) M(a) UNIT_FE_27(M, __VA_ARGS__)
#define UNIT_FE_29(M, a, ...) M(a) UNIT_FE_28(M, __VA_ARGS__)
#define UNIT_FE_30(M, a, ...) M(a) UNIT_FE_29(M, __VA_ARGS__)
#define UNIT_FE_31(M, a, ...) M(a) UNIT_FE_30(M, __VA_ARGS__)
#define UNIT_FE_32(M, a, ...) M(a) UNIT_FE_31(M, __VA_ARGS__)
#define UNIT_FE_33(M, a, ...) M(a) UNIT_FE_32(M, __VA_ARGS__)
#define UNIT_FE_34(M, a, ...) M(a) UNIT_FE_33(M, __VA_ARGS__)
#define UNIT_FE_35(M, a, ...) M(a) UNIT_FE_34(M, __VA_ARGS__)
#define UNIT_FE_36(M, a, ...) M(a) UNIT_FE_35(M, __VA_ARGS__)
#define UNIT_FE_37(M, a, ...) M(a) UNIT_FE_36(M, __VA_ARGS__)
#define UNIT_FE_38(M, a, ...) M(a) UNIT_FE_37(M, __VA_ARGS__)
#define UNIT_FE_39(M, a, ...) M(a) UNIT_FE_38(M, __VA_ARGS__)
#define UNIT_FE_40(M, a, ...) M(a) UNIT_FE_39(M, __VA_ARGS__)
#define UNIT_FE_41(M, a, ...) M(a) UNIT_FE_40(M, __VA_ARGS__)
#define UNIT_FE_42(M, a, ...) M(a) UNIT_FE_41(M, __VA_ARGS__)
#define UNIT_FE_43(M, a, ...) M(a) UNIT_FE_42(M, __VA_ARGS__)
#define UNIT_FE_44(M, a, ...) M(a) UNIT_FE_43(M, __VA_ARGS__)
#define UNIT_FE_45(M, a, ...) M(a) UNIT_FE_44(M, __VA_ARGS__)
#define UNIT_FE_46(M, a, ...) M(a) UNIT_FE_45(M, __VA_ARGS__)
#define UNIT_FE_47(M, a, ...) M(a) UNIT_FE_46(M, __VA_ARGS__)
#define UNIT_FE_48(M, a, ...) M(a) UNIT_FE_47(M, __VA_ARGS__)
#define UNIT_FE_49(M, a, ...) M(a) UNIT_FE_48(M, __VA_ARGS__)
#define UNIT_FE_50(M, a, ...) M(a) UNIT_FE_49(M, __VA_ARGS__)
#define UNIT_FE_51(M, a, ...) M(a) UNIT_FE_50(M, __VA_ARGS__)
#define UNIT_FE_52(M, a, ...) M(a) UNIT_FE_51(M, __VA_ARGS__)
#define UNIT_FE_53(M, a, ...) M(a) UNIT_FE_52(M, __VA_ARGS__)
#define UNIT_FE_54(M, a, ...) M(a) UNIT_FE_53(M, __VA_ARGS__)
#define UNIT_FE_55(M, a, ...) M(a) UNIT_FE_54(M, __VA_ARGS__)
#define UNIT_FE_56(M, a, ...) M(a) UNIT_FE_55(M, __VA_ARGS__)
#define UNIT_FE_57(M, a, ...) M(a) UNIT_FE_56(M, __VA_ARGS__)
#define UNIT_FE_58(M, a, ...) M(a) UNIT_FE_57(M, __VA_ARGS__)
#define UNIT_FE_59(M, a, ...) M(a) UNIT_FE_58(M, __VA_ARGS__)
#define UNIT_FE_60(M, a, ...) M(a) UNIT_FE_59(M, __VA_ARGS__)
#define UNIT_FE_61(M, a, ...) M(a) UNIT_FE_60(M, __VA_ARGS__)
#define UNIT_FE_62(M, a, ...) M(a) UNIT_FE_61(M, __VA_ARGS__)
#define UNIT_FE_63(M, a, ...) M(a) UNIT_FE_62(M, __VA_ARGS__)
#define UNIT_FE_64(M, a, ...) M(a) UNIT_FE_63(M, __VA_ARGS__)

#endif
