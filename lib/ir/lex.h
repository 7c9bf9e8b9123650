/* lib/ir/lex.h: the lexer of arrayc's text format (docs/language.md §1).
 *
 * The lexer turns source bytes into tokens one at a time, on demand, so that
 * the parser reports the first error in source order and never holds more
 * than two tokens. It owns every lexical rule: comments, UTF-8 and NUL
 * checks, identifier length, keywords, the spelling of numbers with their
 * suffixes, and the range of literals whose value does not depend on a sign
 * (integers up to 2^64-1, float literals and f32/f64 suffixes). Integer
 * suffix ranges depend on a '-' folded in by the parser and are checked there.
 *
 * It allocates nothing except a scratch buffer for long float literals, and
 * keeps no global state: everything lives in the `lexer` value.
 */
#ifndef ARRAYC_LIB_IR_LEX_H
#define ARRAYC_LIB_IR_LEX_H

#include "ir.h"

/* Longest identifier, in bytes (docs/language.md §1). */
#define LEX_MAX_IDENT 255

/* Nesting limits shared by the parser and the printer: syntax nesting
 * (parentheses, brackets, blocks, prefix operators, types) and the depth of
 * the tree built, which bounds every recursive pass over parsed IR. */
#define PARSE_MAX_NEST 256
#define PARSE_MAX_DEPTH 2000
/* Largest rank of an array type, array literal or recurrence (REC keeps its
 * exclusive dimensions as the bits of a 64-bit word). */
#define PARSE_MAX_RANK 64

typedef enum lex_kind {
  TOK_EOF,
  TOK_ERROR, /* the lexer failed here; the message is in the lexer */
  TOK_IDENT,
  TOK_INT,   /* integer literal: value in u, suffix in suffix */
  TOK_FLOAT, /* float literal, or an integer with a float suffix: value in f */
  TOK_STRING, /* "..." (extern kernel clauses, §3.4): the bytes between the quotes, escapes
                 undone by lex_string */
  /* keywords */
  TOK_FN,
  TOK_LET,
  TOK_IF,
  TOK_ELSE,
  TOK_LOOP,
  TOK_WHILE,
  TOK_REC,
  TOK_IN,
  TOK_TRUE,
  TOK_FALSE,
  TOK_INF,
  TOK_NAN,
  TOK_CLAMP,
  TOK_MIRROR,
  TOK_WRAP,
  TOK_EXTERN, /* extern fn: a host function (docs/language.md §3.3) */
  /* punctuation */
  TOK_LPAREN,
  TOK_RPAREN,
  TOK_LBRACK,
  TOK_RBRACK,
  TOK_LBRACE,
  TOK_RBRACE,
  TOK_COMMA,
  TOK_SEMI,
  TOK_COLON,
  TOK_DOT,
  TOK_ARROW,
  TOK_ASSIGN,
  TOK_DOTDOT,
  TOK_DOTDOTEQ,
  /* operators (TOK_BAR is also the lambda delimiter, TOK_OROR an empty one) */
  TOK_OROR,
  TOK_ANDAND,
  TOK_EQ,
  TOK_NE,
  TOK_LT,
  TOK_LE,
  TOK_GT,
  TOK_GE,
  TOK_BAR,
  TOK_CARET,
  TOK_AMP,
  TOK_SHL,
  TOK_SHR,
  TOK_PLUS,
  TOK_MINUS,
  TOK_STAR,
  TOK_SLASH,
  TOK_PERCENT,
  TOK_BANG,
  TOK_TILDE,
  TOK_NUM_KINDS
} lex_kind;

/* No suffix on a numeric literal (otherwise lex_token.suffix is an ac_scalar). */
#define LEX_NO_SUFFIX (-1)

typedef struct lex_token {
  lex_kind kind;
  ir_loc loc;      /* line and byte column of the first byte */
  size_t off, len; /* the token's bytes in the source */
  uint64_t u;      /* TOK_INT: the value (any size up to 2^64-1) */
  double f;        /* TOK_FLOAT: the value, already rounded to f32 for an f32 suffix */
  int suffix;      /* TOK_INT, TOK_FLOAT: LEX_NO_SUFFIX or the ac_scalar written */
} lex_token;

typedef struct lexer {
  ac_context *ctx;
  const char *src;
  size_t len, pos;
  uint32_t line;
  size_t line_start; /* offset of the first byte of the current line */
  bool after_dot;    /* the previous token was '.': digits are a field number */
  /* first error (the lexer stops there and keeps returning TOK_ERROR) */
  ac_status status; /* AC_OK, AC_ERR_SYNTAX or AC_ERR_NOMEM */
  ir_loc err_loc;
  char err_msg[160];
} lexer;

void lex_init(lexer *lx, ac_context *ctx, const char *src, size_t len);
/* Reads the next token into *t. Returns false (t->kind == TOK_ERROR) on a
 * lexical error, described by lx->status, lx->err_loc and lx->err_msg. */
bool lex_next(lexer *lx, lex_token *t);
/* The value of string token t (its escapes undone): a NUL-terminated copy
 * allocated from ctx (ac_free), its length in *len; NULL on OOM. */
char *lex_string(ac_context *ctx, const char *src, const lex_token *t, size_t *len);
/* How a token kind reads in a message: "'('", "identifier", "end of input". */
const char *lex_kind_name(lex_kind k);
/* The spelling of a keyword, punctuation or operator kind ("fn", "..="), or
 * NULL for identifiers, literals, EOF and errors. */
const char *lex_kind_spelling(lex_kind k);
/* True if s[0..n) is an identifier that is not a keyword. */
bool lex_is_plain_ident(const char *s, size_t n);

#endif
