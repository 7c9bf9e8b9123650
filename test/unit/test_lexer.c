/* Unit tests of the lexer (lib/ir/lex.c): every token kind, the spelling and
 * value of numbers with their suffixes, positions, and every lexical error
 * with the position it is reported at. */
#include "lex.h"
#include "unit.h"

#include <math.h>

static ac_context *ctx;

/* Lexes all of s into kinds[] (up to max); returns the count, or -1 after an
 * error (the lexer's message and position are left in *lx). */
static int lex_all(lexer *lx, const char *s, size_t n, lex_token *toks, int max) {
  lex_init(lx, ctx, s, n);
  for (int i = 0; i < max; i++) {
    if (!lex_next(lx, &toks[i]))
      return -1;
    if (toks[i].kind == TOK_EOF)
      return i;
  }
  return max;
}

/* The single token of s (which must lex to exactly one token). */
static lex_token one(const char *s) {
  lexer lx;
  lex_token t[3];
  memset(t, 0, sizeof t);
  int n = lex_all(&lx, s, strlen(s), t, 3);
  CHECK_EQ_INT(n, 1);
  if (n < 0)
    fprintf(stderr, "  lexing '%s': %s\n", s, lx.err_msg);
  return t[0];
}

/* Lexing s fails at line:col with a message containing msg. */
static void fails(const char *s, size_t n, unsigned line, unsigned col, const char *msg) {
  lexer lx;
  lex_token t[64];
  int r = lex_all(&lx, s, n, t, 64);
  CHECK_EQ_INT(r, -1);
  CHECK_EQ_INT(lx.status, AC_ERR_SYNTAX);
  CHECK_EQ_INT(lx.err_loc.line, line);
  CHECK_EQ_INT(lx.err_loc.col, col);
  if (!strstr(lx.err_msg, msg)) {
    fprintf(stderr, "  message '%s' lacks '%s'\n", lx.err_msg, msg);
    CHECK(0);
  }
  /* the error is sticky */
  lex_token again;
  CHECK(!lex_next(&lx, &again));
  CHECK_EQ_INT(again.kind, TOK_ERROR);
}

UNIT_TEST(every_punctuation_and_operator) {
  ctx = ac_context_create();
  const char *s = "( ) [ ] { } , ; : . -> | = ..= .. || && == != < <= > >= ^ & << >> + - * / % ! ~";
  static const lex_kind want[] = {
      TOK_LPAREN, TOK_RPAREN, TOK_LBRACK, TOK_RBRACK,  TOK_LBRACE, TOK_RBRACE, TOK_COMMA,
      TOK_SEMI,   TOK_COLON,  TOK_DOT,    TOK_ARROW,   TOK_BAR,    TOK_ASSIGN, TOK_DOTDOTEQ,
      TOK_DOTDOT, TOK_OROR,   TOK_ANDAND, TOK_EQ,      TOK_NE,     TOK_LT,     TOK_LE,
      TOK_GT,     TOK_GE,     TOK_CARET,  TOK_AMP,     TOK_SHL,    TOK_SHR,    TOK_PLUS,
      TOK_MINUS,  TOK_STAR,   TOK_SLASH,  TOK_PERCENT, TOK_BANG,   TOK_TILDE};
  lexer lx;
  lex_token t[64];
  int n = lex_all(&lx, s, strlen(s), t, 64);
  CHECK_EQ_INT(n, (int)(sizeof want / sizeof want[0]));
  for (int i = 0; i < n && i < (int)(sizeof want / sizeof want[0]); i++) {
    CHECK_EQ_INT(t[i].kind, want[i]);
    CHECK_STR(lex_kind_spelling(t[i].kind), lex_kind_spelling(want[i]));
    CHECK_EQ_INT(t[i].len, strlen(lex_kind_spelling(want[i])));
  }
  /* maximal munch without spaces */
  n = lex_all(&lx, "a->b..=c..d<<=e||f|g", 20, t, 64);
  static const lex_kind w2[] = {TOK_IDENT,  TOK_ARROW, TOK_IDENT, TOK_DOTDOTEQ, TOK_IDENT,
                                TOK_DOTDOT, TOK_IDENT, TOK_SHL,   TOK_ASSIGN,   TOK_IDENT,
                                TOK_OROR,   TOK_IDENT, TOK_BAR,   TOK_IDENT};
  CHECK_EQ_INT(n, (int)(sizeof w2 / sizeof w2[0]));
  for (int i = 0; i < n && i < (int)(sizeof w2 / sizeof w2[0]); i++)
    CHECK_EQ_INT(t[i].kind, w2[i]);
  ac_context_destroy(ctx);
}

UNIT_TEST(keywords_and_identifiers) {
  ctx = ac_context_create();
  const char *s = "fn let if else loop while rec in true false inf nan clamp mirror wrap "
                  "map f32 _x x1 fnx lets While";
  static const lex_kind want[] = {TOK_FN,    TOK_LET,    TOK_IF,    TOK_ELSE,  TOK_LOOP,  TOK_WHILE,
                                  TOK_REC,   TOK_IN,     TOK_TRUE,  TOK_FALSE, TOK_INF,   TOK_NAN,
                                  TOK_CLAMP, TOK_MIRROR, TOK_WRAP,  TOK_IDENT, TOK_IDENT, TOK_IDENT,
                                  TOK_IDENT, TOK_IDENT,  TOK_IDENT, TOK_IDENT};
  lexer lx;
  lex_token t[64];
  int n = lex_all(&lx, s, strlen(s), t, 64);
  CHECK_EQ_INT(n, (int)(sizeof want / sizeof want[0]));
  for (int i = 0; i < n && i < (int)(sizeof want / sizeof want[0]); i++)
    CHECK_EQ_INT(t[i].kind, want[i]);
  CHECK_EQ_INT(t[15].len, 3); /* "map" */
  CHECK(memcmp(s + t[15].off, "map", 3) == 0);
  CHECK(lex_is_plain_ident("x_1", 3));
  CHECK(lex_is_plain_ident("map", 3));
  CHECK(!lex_is_plain_ident("while", 5));
  CHECK(!lex_is_plain_ident("1x", 2));
  CHECK(!lex_is_plain_ident("a b", 3));
  CHECK(!lex_is_plain_ident("", 0));
  CHECK_STR(lex_kind_name(TOK_EOF), "end of input");
  CHECK_STR(lex_kind_name(TOK_IDENT), "identifier");
  CHECK_STR(lex_kind_name(TOK_ARROW), "->");
  CHECK(lex_kind_spelling(TOK_INT) == NULL);
  ac_context_destroy(ctx);
}

UNIT_TEST(identifier_length_limit) {
  ctx = ac_context_create();
  char buf[300];
  memset(buf, 'a', sizeof buf);
  lexer lx;
  lex_token t[4];
  CHECK_EQ_INT(lex_all(&lx, buf, 255, t, 4), 1);
  CHECK_EQ_INT(t[0].len, 255);
  buf[0] = ' ';
  fails(buf, 257, 1, 2, "identifier longer than 255 bytes");
  ac_context_destroy(ctx);
}

UNIT_TEST(integer_literals) {
  ctx = ac_context_create();
  struct {
    const char *s;
    uint64_t v;
    int suffix;
  } cases[] = {
      {"0", 0, LEX_NO_SUFFIX},
      {"123", 123, LEX_NO_SUFFIX},
      {"007", 7, LEX_NO_SUFFIX},
      {"1_000_000", 1000000, LEX_NO_SUFFIX},
      {"0xff", 255, LEX_NO_SUFFIX},
      {"0XFF_FF", 0xffff, LEX_NO_SUFFIX},
      {"0b1010", 10, LEX_NO_SUFFIX},
      {"0B1_1", 3, LEX_NO_SUFFIX},
      {"0xffu8", 255, AC_U8},
      {"0x1f32", 0x1f32, LEX_NO_SUFFIX}, /* f is a hex digit */
      {"300u8", 300, AC_U8},             /* range checked by the parser */
      {"128i8", 128, AC_I8},
      {"5i16", 5, AC_I16},
      {"5i32", 5, AC_I32},
      {"5i64", 5, AC_I64},
      {"5u16", 5, AC_U16},
      {"5u32", 5, AC_U32},
      {"5u64", 5, AC_U64},
      {"1_i32", 1, AC_I32},
      {"18446744073709551615", UINT64_MAX, LEX_NO_SUFFIX},
      {"0xffffffffffffffff", UINT64_MAX, LEX_NO_SUFFIX},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    lex_token t = one(cases[i].s);
    CHECK_EQ_INT(t.kind, TOK_INT);
    CHECK(t.u == cases[i].v);
    CHECK_EQ_INT(t.suffix, cases[i].suffix);
    CHECK_EQ_INT(t.len, strlen(cases[i].s));
  }
  ac_context_destroy(ctx);
}

UNIT_TEST(float_literals) {
  ctx = ac_context_create();
  struct {
    const char *s;
    double v;
    int suffix;
  } cases[] = {
      {"1.5", 1.5, LEX_NO_SUFFIX},
      {"1.", 1.0, LEX_NO_SUFFIX},
      {"1e9", 1e9, LEX_NO_SUFFIX},
      {"1.0e-30", 1.0e-30, LEX_NO_SUFFIX},
      {"2.5E+3", 2500.0, LEX_NO_SUFFIX},
      {"1.e5", 1e5, LEX_NO_SUFFIX},
      {"1_0.2_5", 10.25, LEX_NO_SUFFIX},
      {"0.1", 0.1, LEX_NO_SUFFIX},
      {"1.5f64", 1.5, AC_F64},
      {"0.1f32", (double)0.1f, AC_F32}, /* rounded to f32 once */
      {"2f32", 2.0, AC_F32},            /* an integer with a float suffix is a float */
      {"3f64", 3.0, AC_F64},
      {"0b11f32", 3.0, AC_F32},
      {"16777217f32", 16777216.0, AC_F32},
      {"1e-400", 0.0, LEX_NO_SUFFIX}, /* underflow rounds */
      {"1.7976931348623157e308", 1.7976931348623157e308, LEX_NO_SUFFIX},
      {"3.4028235e38f32", (double)3.4028235e38f, AC_F32},
      {"4.9406564584124654e-324", 4.9406564584124654e-324, LEX_NO_SUFFIX},
      {"123456789012345678901234567890.0", 123456789012345678901234567890.0, LEX_NO_SUFFIX},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    lex_token t = one(cases[i].s);
    CHECK_EQ_INT(t.kind, TOK_FLOAT);
    if (t.f != cases[i].v)
      fprintf(stderr, "  %s: got %.17g, want %.17g\n", cases[i].s, t.f, cases[i].v);
    CHECK(t.f == cases[i].v);
    CHECK_EQ_INT(t.suffix, cases[i].suffix);
  }
  /* a long mantissa is converted exactly (correct rounding of 0.1 + tiny) */
  char big[2100] = "0.1";
  memset(big + 3, '0', 2000);
  strcpy(big + 2003, "1");
  lex_token t = one(big);
  CHECK(t.kind == TOK_FLOAT && t.f == 0.1);
  ac_context_destroy(ctx);
}

UNIT_TEST(ranges_and_projections_split_numbers) {
  ctx = ac_context_create();
  lexer lx;
  lex_token t[16];
  /* 0..n is 0, .., n; 1..=2 likewise */
  CHECK_EQ_INT(lex_all(&lx, "0..n 1..=2", 10, t, 16), 6);
  CHECK_EQ_INT(t[0].kind, TOK_INT);
  CHECK_EQ_INT(t[1].kind, TOK_DOTDOT);
  CHECK_EQ_INT(t[2].kind, TOK_IDENT);
  CHECK_EQ_INT(t[3].kind, TOK_INT);
  CHECK_EQ_INT(t[4].kind, TOK_DOTDOTEQ);
  CHECK_EQ_INT(t[5].kind, TOK_INT);
  /* t.0.1 is two projections, not t followed by the float 0.1 */
  CHECK_EQ_INT(lex_all(&lx, "t.0.1 x. 12.5", 13, t, 16), 10);
  static const lex_kind w[] = {TOK_IDENT, TOK_DOT, TOK_INT, TOK_DOT, TOK_INT,
                               TOK_IDENT, TOK_DOT, TOK_INT, TOK_DOT, TOK_INT};
  for (int i = 0; i < 10; i++)
    CHECK_EQ_INT(t[i].kind, w[i]);
  CHECK(t[4].u == 1 && t[7].u == 12 && t[9].u == 5);
  /* after the field number, numbers lex normally again */
  CHECK_EQ_INT(lex_all(&lx, "x.1 2.5", 7, t, 16), 4);
  CHECK(t[3].kind == TOK_FLOAT && t[3].f == 2.5);
  ac_context_destroy(ctx);
}

UNIT_TEST(positions_count_lines_and_byte_columns) {
  ctx = ac_context_create();
  const char *s = "fn\n  // comment ü\n\tx /* a\nb */ y\r\n  z";
  lexer lx;
  lex_token t[8];
  CHECK_EQ_INT(lex_all(&lx, s, strlen(s), t, 8), 4);
  CHECK(t[0].loc.line == 1 && t[0].loc.col == 1);
  CHECK(t[1].loc.line == 3 && t[1].loc.col == 2); /* a tab is one column */
  CHECK(t[2].loc.line == 4 && t[2].loc.col == 6);
  CHECK(t[3].loc.line == 5 && t[3].loc.col == 3);
  lex_token eof;
  CHECK(lex_next(&lx, &eof) && eof.kind == TOK_EOF);
  ac_context_destroy(ctx);
}

UNIT_TEST(comments_may_hold_valid_utf8_only) {
  ctx = ac_context_create();
  lexer lx;
  lex_token t[4];
  const char *ok = "// π ≈ 3.14 🙂\n/* Grüße */ x";
  CHECK_EQ_INT(lex_all(&lx, ok, strlen(ok), t, 4), 1);
  fails("// a \xff b\nx", 10, 1, 6, "invalid UTF-8 in comment");
  fails("/* \xc0\xaf */", 8, 1, 4, "invalid UTF-8 in comment");      /* overlong '/' */
  fails("/* \xed\xa0\x80 */", 9, 1, 4, "invalid UTF-8 in comment");  /* surrogate */
  fails("// \xf4\x90\x80\x80", 7, 1, 4, "invalid UTF-8 in comment"); /* > U+10FFFF */
  fails("// \xe2\x82", 5, 1, 4, "invalid UTF-8 in comment");         /* truncated */
  fails("x\n// a\0b", 8, 2, 5, "NUL byte in source");
  fails("/* a\n\0 */", 9, 2, 1, "NUL byte in source");
  ac_context_destroy(ctx);
}

UNIT_TEST(lexical_errors_have_positions) {
  ctx = ac_context_create();
  fails("x\n  /* never closed", 19, 2, 3, "unterminated block comment");
  fails("a\0b", 3, 1, 2, "NUL byte in source");
  fails("x = \xc3\xa9", 6, 1, 5, "non-ASCII character outside a comment");
  fails("x = \xff", 5, 1, 5, "invalid UTF-8");
  fails("a @ b", 5, 1, 3, "unexpected character '@'");
  fails("a \x01", 3, 1, 3, "unexpected character (byte 0x01)");
  fails("  18446744073709551616", 22, 1, 3, "integer literal too large");
  fails("0x1_0000_0000_0000_0000", 23, 1, 1, "integer literal too large");
  fails("1.e", 3, 1, 1, "malformed number '1.e'");
  fails("1e+", 3, 1, 1, "malformed number '1e+'");
  fails("(0x)", 4, 1, 2, "malformed number '0x'");
  fails("0b", 2, 1, 1, "malformed number '0b'");
  fails("0xg1", 4, 1, 1, "malformed number '0xg1'");
  fails("0b102", 5, 1, 5, "invalid digit '2' in binary literal");
  fails("12abc", 5, 1, 3, "invalid suffix 'abc' on number");
  fails("1i128", 5, 1, 2, "invalid suffix 'i128' on number");
  fails("1.5i32", 6, 1, 4, "float literal cannot have the integer suffix 'i32'");
  fails("1e3u8", 5, 1, 4, "float literal cannot have the integer suffix 'u8'");
  fails("1e39f32", 7, 1, 1, "float literal out of range for f32");
  fails("3.4028236e38f32", 15, 1, 1, "float literal out of range for f32");
  fails("1e309", 5, 1, 1, "float literal out of range");
  fails("2e308f64", 8, 1, 1, "float literal out of range");
  fails("t.99999999999999999999", 22, 1, 3, "field number too large");
  ac_context_destroy(ctx);
}

UNIT_TEST(strings_and_their_escapes) {
  ctx = ac_context_create();
  static const struct {
    const char *src;
    size_t srclen;
    const char *val;
    size_t len;
  } cases[] = {
      {"\"\"", 2, "", 0},
      {"\"abc\"", 5, "abc", 3},
      {"\"a\\\"b\\\\c\"", 9, "a\"b\\c", 5},
      {"\"\\n\\t\\r\\0\\x41\\xff\"", 18, "\n\t\r\0A\xff", 6},
      {"\"two\nlines\ttab\"", 15, "two\nlines\ttab", 13},
      {"\"\xc3\xa9\"", 4, "\xc3\xa9", 2}, /* UTF-8 is kept as it is */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    lexer lx;
    lex_token t[3];
    CHECK_EQ_INT(lex_all(&lx, cases[i].src, cases[i].srclen, t, 3), 1);
    CHECK_EQ_INT(t[0].kind, TOK_STRING);
    CHECK_EQ_INT(t[0].len, cases[i].srclen);
    size_t n = 0;
    char *v = lex_string(ctx, cases[i].src, &t[0], &n);
    CHECK(v && n == cases[i].len && memcmp(v, cases[i].val, n) == 0 && v[n] == 0);
    ac_free(ctx, v);
  }
  /* a string spanning lines moves the position of what follows */
  lexer lx;
  lex_token t[3];
  CHECK_EQ_INT(lex_all(&lx, "\"a\nb\" x", 7, t, 3), 2);
  CHECK_EQ_INT(t[1].loc.line, 2);
  CHECK_EQ_INT(t[1].loc.col, 4);
  CHECK_STR(lex_kind_name(TOK_STRING), "string");
  fails("x \"abc", 6, 1, 3, "unterminated string");
  fails("\"a\\q\"", 5, 1, 3, "unknown escape in a string");
  fails("\"a\\x4\"", 6, 1, 3, "\\x in a string needs two hexadecimal digits");
  fails("\"a\\", 3, 1, 3, "unknown escape in a string");
  fails("\"a\x01\"", 4, 1, 3, "control character (byte 0x01) in a string");
  fails("\"a\x7f\"", 4, 1, 3, "control character (byte 0x7f) in a string");
  fails("\"a\0\"", 4, 1, 3, "NUL byte in source");
  fails("\"\xff\"", 3, 1, 2, "invalid UTF-8");
  ac_context_destroy(ctx);
}

UNIT_TEST(empty_and_blank_input) {
  ctx = ac_context_create();
  lexer lx;
  lex_token t[2];
  CHECK_EQ_INT(lex_all(&lx, "", 0, t, 2), 0);
  CHECK_EQ_INT(lex_all(&lx, " \t\r\n// x\n/**/", 13, t, 2), 0);
  CHECK_EQ_INT(lex_all(&lx, NULL, 0, t, 2), 0);
  ac_context_destroy(ctx);
}

UNIT_MAIN(every_punctuation_and_operator, keywords_and_identifiers, identifier_length_limit,
          integer_literals, float_literals, ranges_and_projections_split_numbers,
          positions_count_lines_and_byte_columns, comments_may_hold_valid_utf8_only,
          lexical_errors_have_positions, strings_and_their_escapes, empty_and_blank_input)
