/* runtime/plan_text.c: the text form of kernel plans (plan.h): printer,
 * parser and structural equality.
 *
 * The printer is deterministic: declarations in the order params, results,
 * sites, kernels, then the body indented two spaces per block, expressions
 * fully parenthesised, strings with C escapes. The parser is a hand-written
 * lexer plus recursive descent for expressions (bounded by PL_MAX_DEPTH) and
 * a flat loop for instructions (blocks are just FOR/WHILE/IF .. END markers,
 * so nesting costs no recursion). It builds the plan with the same builders
 * as lowering and then runs pl_validate, so a text plan is held to exactly
 * the rules of a compiled one; the validator's complaint is reported at the
 * line of the offending declaration, instruction or expression. Every error
 * is "FILE:LINE:COL: error: ..." (AC_ERR_SYNTAX); nothing in the input can
 * make it crash, loop or overflow (numbers are range-checked as they are
 * read). Parse errors are the text's problem; pl_print on a plan that does
 * not validate is a compiler bug (AC_ERR_INTERNAL).
 *
 * pl_equal compares expressions as trees rather than by index, because a
 * printed and re-parsed plan numbers its expressions in reading order.
 */
#include "runtime/plan_impl.h"

#include <string.h>

/* ---- printing ---- */

static const char *const pl_binop_text[] = {
    [PX_ADD] = "+", [PX_SUB] = "-", [PX_MUL] = "*", [PX_DIV] = "/", [PX_REM] = "%",
    [PX_EQ] = "==", [PX_NE] = "!=", [PX_LT] = "<", [PX_LE] = "<=",
};
static const char *const pl_call_text[] = {[PX_MIN] = "min", [PX_MAX] = "max",
                                           [PX_CHUNKS] = "chunks"};

static bool pl_is_ident(const char *s) {
  if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_'))
    return false;
  for (s++; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
          *s == '_' || *s == '.'))
      return false;
  return true;
}

void pl_print_quoted(ir_buf *b, const char *s) {
  pl_print_quoted_n(b, s, strlen(s));
}

void pl_print_quoted_n(ir_buf *b, const char *s, size_t n) {
  ir_buf_putc(b, '"');
  for (const char *end = s + n; s < end; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') {
      ir_buf_putc(b, '\\');
      ir_buf_putc(b, (char)c);
    } else if (c == '\n') {
      ir_buf_puts(b, "\\n");
    } else if (c == '\t') {
      ir_buf_puts(b, "\\t");
    } else if (c >= 0x20 && c < 0x7f) {
      ir_buf_putc(b, (char)c);
    } else {
      ir_buf_printf(b, "\\x%02x", c);
    }
  }
  ir_buf_putc(b, '"');
}

/* A name: bare when it reads back as one token, else quoted. */
static void pl_print_name(ir_buf *b, const char *s) {
  if (pl_is_ident(s))
    ir_buf_puts(b, s);
  else
    pl_print_quoted(b, s);
}

static void pl_print_type(ir_buf *b, uint8_t sc, uint32_t rank) {
  ir_buf_puts(b, ac_scalar_name((ac_scalar)sc));
  if (rank) {
    ir_buf_putc(b, '[');
    for (uint32_t i = 1; i < rank; i++)
      ir_buf_putc(b, ',');
    ir_buf_putc(b, ']');
  }
}

static void pl_print_expr(ir_buf *b, const pl_plan *p, uint32_t e) {
  const pl_expr *x = &p->exprs[e];
  switch ((pl_xop)x->op) {
  case PX_CONST:
    ir_buf_printf(b, "%lld", (long long)x->k);
    return;
  case PX_WORD:
    ir_buf_printf(b, "%%%u", x->a);
    return;
  case PX_MIN:
  case PX_MAX:
  case PX_CHUNKS:
    ir_buf_printf(b, "%s(", pl_call_text[x->op]);
    pl_print_expr(b, p, x->a);
    ir_buf_puts(b, ", ");
    pl_print_expr(b, p, x->b);
    ir_buf_putc(b, ')');
    return;
  default:
    ir_buf_putc(b, '(');
    pl_print_expr(b, p, x->a);
    ir_buf_printf(b, " %s ", pl_binop_text[x->op]);
    pl_print_expr(b, p, x->b);
    ir_buf_putc(b, ')');
    return;
  }
}

static void pl_print_exprs(ir_buf *b, const pl_plan *p, uint32_t first, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) {
    if (i)
      ir_buf_puts(b, ", ");
    pl_print_expr(b, p, p->args[first + i]);
  }
}

static void pl_print_inst(ir_buf *b, const pl_plan *p, const pl_inst *in) {
  switch ((pl_iop)in->op) {
  case PI_SET:
    ir_buf_printf(b, "set %%%u = ", in->a);
    pl_print_expr(b, p, in->e);
    break;
  case PI_ALLOC:
  case PI_VIEW:
    ir_buf_printf(b, "%s %%%u : ", in->op == PI_ALLOC ? "alloc" : "view", in->a);
    pl_print_type(b, in->sc, in->rank);
    ir_buf_puts(b, " = ");
    if (in->op == PI_VIEW)
      ir_buf_printf(b, "%%%u ", in->b);
    ir_buf_putc(b, '[');
    pl_print_exprs(b, p, in->e, in->rank);
    ir_buf_putc(b, ']');
    if (in->op == PI_ALLOC && in->k != PL_AUTO)
      ir_buf_printf(b, " site %u", in->k);
    if (in->flags & PL_ALLOC_TRY)
      ir_buf_puts(b, " try");
    if (in->flags & PL_ALLOC_KEEP)
      ir_buf_puts(b, " keep");
    break;
  case PI_ASSIGN:
    ir_buf_printf(b, "assign %%%u = %%%u : ", in->a, in->b);
    pl_print_type(b, in->sc, in->rank);
    break;
  case PI_FREE:
    ir_buf_printf(b, "free %%%u", in->a);
    break;
  case PI_LAUNCH:
    ir_buf_printf(b, "launch k%u n ", in->k);
    pl_print_expr(b, p, in->e);
    ir_buf_puts(b, " chunks ");
    if (in->e2 == PL_AUTO)
      ir_buf_puts(b, "auto");
    else
      pl_print_expr(b, p, in->e2);
    if (in->e3 != PL_AUTO) {
      ir_buf_puts(b, " warps ");
      pl_print_expr(b, p, in->e3);
    }
    break;
  case PI_CHECK:
    ir_buf_puts(b, "check ");
    pl_print_expr(b, p, in->e);
    ir_buf_printf(b, " site %u", in->k);
    if (in->e2 != PL_AUTO) {
      ir_buf_puts(b, " (");
      pl_print_exprs(b, p, in->e2, in->rank);
      ir_buf_putc(b, ')');
    }
    break;
  case PI_FOR:
    ir_buf_printf(b, "for %%%u = ", in->a);
    pl_print_expr(b, p, in->e);
    ir_buf_puts(b, " to ");
    pl_print_expr(b, p, in->e2);
    ir_buf_puts(b, " {");
    break;
  case PI_WHILE:
    ir_buf_puts(b, "while {");
    break;
  case PI_BREAK_UNLESS:
    ir_buf_printf(b, "break unless %%%u", in->a);
    break;
  case PI_IF:
    ir_buf_printf(b, "if %%%u {", in->a);
    break;
  case PI_ELSE:
    ir_buf_puts(b, "} else {");
    break;
  case PI_END:
    ir_buf_putc(b, '}');
    break;
  }
  ir_buf_putc(b, '\n');
}

/* The rest of an extern kernel's line (after its symbol): block, args and
 * the PTX, one string per line of it, so that the text (and a bundle
 * holding it: each line becomes a comment of a .ptx file) keeps short
 * lines however large the module. */
static void pl_print_extern(ir_buf *b, const pl_kernel *k) {
  ir_buf_printf(b, " block %u args", k->block);
  for (uint32_t a = 0; a < k->nkargs; a++)
    ir_buf_printf(b, " %%%u:%s", k->kargs[a].word,
                  k->kargs[a].ptr ? "ptr" : ac_scalar_name((ac_scalar)k->kargs[a].sc));
  ir_buf_puts(b, "\n  ptx ");
  const char *s = k->ptx;
  if (!*s)
    pl_print_quoted(b, "");
  for (bool first = true; *s; first = false) {
    const char *nl = strchr(s, '\n');
    size_t n = nl ? (size_t)(nl - s) + 1 : strlen(s);
    if (!first)
      ir_buf_puts(b, "\n      ");
    pl_print_quoted_n(b, s, n);
    s += n;
  }
  ir_buf_putc(b, '\n');
}

/* ` WORD F + B`, unless both are 0 (pp_bytes reads it). */
static void pl_print_bytes(ir_buf *b, const char *word, uint64_t fixed, uint64_t per_block) {
  if (fixed || per_block)
    ir_buf_printf(b, " %s %llu + %llu", word, (unsigned long long)fixed,
                  (unsigned long long)per_block);
}

ac_status pl_print(const pl_plan *p, char **out, ac_error **err) {
  *out = NULL;
  if (err)
    *err = NULL;
  pl_fault f;
  ac_status st = pl_validate(p, &f, NULL);
  if (st != AC_OK) {
    ac_error *e = st == AC_ERR_NOMEM ? NULL
                                     : pl_error(p->ctx, st, p->file, NULL, 0, 0, 0,
                                                "cannot print malformed plan '%s': %s",
                                                p->name ? p->name : "", f.msg);
    return ir_report(err, e, e ? st : AC_ERR_NOMEM);
  }
  ir_buf b;
  ir_buf_init(&b, p->ctx);
  ir_buf_puts(&b, "plan ");
  pl_print_name(&b, p->name);
  ir_buf_printf(&b, "\nslots %u\n", p->nslots);
  if (p->gpu)
    ir_buf_puts(&b, "target gpu\n");
  for (uint32_t i = 0; i < p->nparams + p->nresults; i++) {
    bool res = i >= p->nparams;
    const pl_leaf *l = res ? &p->results[i - p->nparams] : &p->params[i];
    ir_buf_printf(&b, "%s %%%u : ", res ? "result" : "param", l->slot);
    pl_print_type(&b, l->sc, l->rank);
    ir_buf_putc(&b, '\n');
  }
  for (uint32_t i = 0; i < p->nsites; i++) {
    ir_buf_printf(&b, "site %u at %u:%u ", i, p->sites[i].line, p->sites[i].col);
    pl_print_quoted(&b, p->sites[i].fmt);
    ir_buf_putc(&b, '\n');
  }
  for (uint32_t i = 0; i < p->nkernels; i++) {
    const pl_kernel *k = &p->kernels[i];
    ir_buf_printf(&b, "kernel k%u ", i);
    pl_print_name(&b, k->kind);
    ir_buf_putc(&b, ' ');
    pl_print_quoted(&b, k->symbol);
    if (k->ptx) {
      pl_print_extern(&b, k);
      continue;
    }
    ir_buf_printf(&b, " grain %lld", (long long)k->grain);
    if (k->block)
      ir_buf_printf(&b, " block %u", k->block);
    if (k->smem)
      ir_buf_printf(&b, " smem %llu", (unsigned long long)k->smem);
    pl_print_bytes(&b, "scratch", k->scratch_fixed, k->scratch_block);
    pl_print_bytes(&b, "counters", k->counters_fixed, k->counters_block);
    if (k->tmp)
      ir_buf_puts(&b, " tmp");
    ir_buf_puts(&b, " uses");
    for (uint32_t u = 0; u < k->nuses; u++)
      ir_buf_printf(&b, " %%%u", k->uses[u]);
    if (k->nwrites) {
      ir_buf_puts(&b, " writes");
      for (uint32_t u = 0; u < k->nwrites; u++)
        ir_buf_printf(&b, " %%%u", k->writes[u]);
    }
    ir_buf_putc(&b, '\n');
  }
  ir_buf_puts(&b, "body {\n");
  uint32_t depth = 1;
  for (uint32_t i = 0; i < p->ninsts; i++) {
    const pl_inst *in = &p->insts[i];
    if (in->op == PI_ELSE || in->op == PI_END)
      depth--;
    for (uint32_t d = 0; d < depth; d++)
      ir_buf_puts(&b, "  ");
    pl_print_inst(&b, p, in);
    if (in->op == PI_FOR || in->op == PI_WHILE || in->op == PI_IF || in->op == PI_ELSE)
      depth++;
  }
  ir_buf_puts(&b, "}\n");
  if (b.oom) {
    ir_buf_free(&b);
    return ir_report(err, NULL, AC_ERR_NOMEM);
  }
  *out = ir_buf_take(&b);
  return *out ? AC_OK : ir_report(err, NULL, AC_ERR_NOMEM);
}

/* ---- equality ---- */

static bool pl_expr_equal(const pl_plan *a, uint32_t ea, const pl_plan *b, uint32_t eb,
                          uint32_t depth) {
  if (ea >= a->nexprs || eb >= b->nexprs || depth > PL_MAX_DEPTH)
    return false;
  const pl_expr *x = &a->exprs[ea], *y = &b->exprs[eb];
  if (x->op != y->op)
    return false;
  if (x->op == PX_CONST)
    return x->k == y->k;
  if (x->op == PX_WORD)
    return x->a == y->a;
  return pl_expr_equal(a, x->a, b, y->a, depth + 1) && pl_expr_equal(a, x->b, b, y->b, depth + 1);
}

/* An optional expression (PL_AUTO = none). */
static bool pl_opt_equal(const pl_plan *a, uint32_t ea, const pl_plan *b, uint32_t eb) {
  if (ea == PL_AUTO || eb == PL_AUTO)
    return ea == eb;
  return pl_expr_equal(a, ea, b, eb, 0);
}

/* n expressions listed in args from index fa (resp. fb). */
static bool pl_args_equal(const pl_plan *a, uint32_t fa, const pl_plan *b, uint32_t fb,
                          uint32_t n) {
  if ((uint64_t)fa + n > a->nargs || (uint64_t)fb + n > b->nargs)
    return false;
  for (uint32_t i = 0; i < n; i++)
    if (!pl_expr_equal(a, a->args[fa + i], b, b->args[fb + i], 0))
      return false;
  return true;
}

static bool pl_inst_equal(const pl_plan *a, const pl_inst *x, const pl_plan *b, const pl_inst *y) {
  if (x->op != y->op)
    return false;
  switch ((pl_iop)x->op) {
  case PI_SET:
    return x->a == y->a && pl_expr_equal(a, x->e, b, y->e, 0);
  case PI_ALLOC:
  case PI_VIEW:
    return x->sc == y->sc && x->rank == y->rank && x->a == y->a && x->flags == y->flags &&
           (x->op == PI_ALLOC ? x->k == y->k : x->b == y->b) &&
           pl_args_equal(a, x->e, b, y->e, x->rank);
  case PI_ASSIGN:
    return x->sc == y->sc && x->rank == y->rank && x->a == y->a && x->b == y->b;
  case PI_FREE:
  case PI_BREAK_UNLESS:
  case PI_IF:
    return x->a == y->a;
  case PI_LAUNCH:
    return x->k == y->k && pl_expr_equal(a, x->e, b, y->e, 0) &&
           pl_opt_equal(a, x->e2, b, y->e2) && pl_opt_equal(a, x->e3, b, y->e3);
  case PI_CHECK:
    if (x->k != y->k || !pl_expr_equal(a, x->e, b, y->e, 0))
      return false;
    if (x->e2 == PL_AUTO || y->e2 == PL_AUTO)
      return x->e2 == y->e2;
    return x->rank == y->rank && pl_args_equal(a, x->e2, b, y->e2, x->rank);
  case PI_FOR:
    return x->a == y->a && pl_expr_equal(a, x->e, b, y->e, 0) &&
           pl_expr_equal(a, x->e2, b, y->e2, 0);
  case PI_WHILE:
  case PI_ELSE:
  case PI_END:
    return true;
  }
  return false;
}

static bool pl_leaves_equal(const pl_leaf *x, const pl_leaf *y, uint32_t n) {
  for (uint32_t i = 0; i < n; i++)
    if (x[i].slot != y[i].slot || x[i].sc != y[i].sc || x[i].rank != y[i].rank)
      return false;
  return true;
}

static bool pl_str_equal(const char *x, const char *y) {
  return x && y ? strcmp(x, y) == 0 : x == y;
}

bool pl_equal(const pl_plan *a, const pl_plan *b) {
  if (!pl_str_equal(a->name, b->name) || a->nslots != b->nslots || a->gpu != b->gpu ||
      a->nparams != b->nparams ||
      a->nresults != b->nresults || a->nsites != b->nsites || a->nkernels != b->nkernels ||
      a->ninsts != b->ninsts)
    return false;
  if (!pl_leaves_equal(a->params, b->params, a->nparams) ||
      !pl_leaves_equal(a->results, b->results, a->nresults))
    return false;
  for (uint32_t i = 0; i < a->nsites; i++) {
    const pl_site *x = &a->sites[i], *y = &b->sites[i];
    if (x->line != y->line || x->col != y->col || !pl_str_equal(x->fmt, y->fmt))
      return false;
  }
  for (uint32_t i = 0; i < a->nkernels; i++) {
    const pl_kernel *x = &a->kernels[i], *y = &b->kernels[i];
    if (!pl_str_equal(x->kind, y->kind) || !pl_str_equal(x->symbol, y->symbol) ||
        x->grain != y->grain || x->nuses != y->nuses ||
        (x->nuses && memcmp(x->uses, y->uses, x->nuses * sizeof *x->uses) != 0) ||
        x->nwrites != y->nwrites ||
        (x->nwrites && memcmp(x->writes, y->writes, x->nwrites * sizeof *x->writes) != 0) ||
        x->block != y->block || x->smem != y->smem || x->scratch_fixed != y->scratch_fixed ||
        x->scratch_block != y->scratch_block || x->counters_fixed != y->counters_fixed ||
        x->counters_block != y->counters_block || x->tmp != y->tmp || !pl_str_equal(x->ptx, y->ptx) ||
        x->nkargs != y->nkargs)
      return false;
    for (uint32_t g = 0; g < x->nkargs; g++)
      if (x->kargs[g].word != y->kargs[g].word || x->kargs[g].ptr != y->kargs[g].ptr ||
          (!x->kargs[g].ptr && x->kargs[g].sc != y->kargs[g].sc))
        return false;
  }
  for (uint32_t i = 0; i < a->ninsts; i++)
    if (!pl_inst_equal(a, &a->insts[i], b, &b->insts[i]))
      return false;
  return true;
}

/* ---- parsing ---- */

typedef enum pl_tkind { PT_EOF, PT_IDENT, PT_INT, PT_WORD, PT_STRING, PT_PUNCT } pl_tkind;

typedef struct pl_tok {
  pl_tkind kind;
  const char *s; /* the token's text in the source */
  size_t len;
  ir_loc at;
  int64_t i; /* PT_INT: the value; PT_WORD: the slot number */
} pl_tok;

typedef struct pl_locs {
  ir_loc *v;
  size_t n, cap;
} pl_locs;

typedef struct pl_parser {
  ac_context *ctx;
  const char *file, *src;
  size_t len, pos;
  ir_loc here; /* position of src[pos] */
  pl_tok t;    /* current token */
  ir_buf str;  /* decoded contents of the current string token */
  pl_plan *p;
  ac_error *err; /* the first error */
  ac_status st;
  pl_locs locs[PP_EXPR + 1]; /* where each part of the plan was read, by pl_part */
} pl_parser;

static bool pp_fail(pl_parser *P, ir_loc at, const char *fmt, ...) IR_PRINTF(3, 4);

static bool pp_fail(pl_parser *P, ir_loc at, const char *fmt, ...) {
  if (P->st != AC_OK)
    return false;
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  P->st = AC_ERR_SYNTAX;
  P->err = pl_error(P->ctx, AC_ERR_SYNTAX, P->file, P->src, P->len, at.line, at.col, "%s", msg);
  if (!P->err)
    P->st = AC_ERR_NOMEM;
  return false;
}

/* Describes the current token for "expected X, found Y". */
static const char *pp_found(pl_parser *P, char *buf, size_t n) {
  if (P->t.kind == PT_EOF)
    return "end of input";
  if (P->t.kind == PT_STRING)
    return "a string";
  snprintf(buf, n, "'%.*s'", (int)(P->t.len > 40 ? 40 : P->t.len), P->t.s);
  return buf;
}

static bool pp_expected(pl_parser *P, const char *what) {
  char buf[64];
  return pp_fail(P, P->t.at, "expected %s, found %s", what, pp_found(P, buf, sizeof buf));
}

static void pp_advance(pl_parser *P) {
  if (P->src[P->pos] == '\n') {
    P->here.line++;
    P->here.col = 1;
  } else {
    P->here.col++;
  }
  P->pos++;
}

static bool pp_is_digit(char c) {
  return c >= '0' && c <= '9';
}

static bool pp_is_ident_char(char c, bool first) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
         (!first && (pp_is_digit(c) || c == '.'));
}

/* Reads the digits at pos as a magnitude no larger than `limit`. */
static bool pp_digits(pl_parser *P, uint64_t limit, uint64_t *out) {
  uint64_t v = 0;
  while (P->pos < P->len && pp_is_digit(P->src[P->pos])) {
    unsigned d = (unsigned)(P->src[P->pos] - '0');
    if (v > (limit - d) / 10)
      return pp_fail(P, P->t.at, "number out of range");
    v = v * 10 + d;
    pp_advance(P);
  }
  *out = v;
  return true;
}

static int pp_hex(char c) {
  return pp_is_digit(c) ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                                       : -1;
}

/* A string token: C escapes \" \\ \n \t \xNN; no raw control characters. */
static bool pp_string(pl_parser *P) {
  P->str.len = 0;
  if (P->str.data) /* ir_buf_cstr of an empty string must not see the last one */
    P->str.data[0] = '\0';
  pp_advance(P); /* the opening quote */
  for (;;) {
    if (P->pos >= P->len || P->src[P->pos] == '\n')
      return pp_fail(P, P->t.at, "unterminated string");
    ir_loc at = P->here;
    unsigned char c = (unsigned char)P->src[P->pos];
    if (c == '"') {
      pp_advance(P);
      return true;
    }
    if (c < 0x20 || c == 0x7f)
      return pp_fail(P, at, "control character 0x%02x in a string (write it as \\x%02x)", c, c);
    pp_advance(P);
    if (c != '\\') {
      ir_buf_putc(&P->str, (char)c);
      continue;
    }
    char e = P->pos < P->len ? P->src[P->pos] : 0;
    if (e == '"' || e == '\\') {
      ir_buf_putc(&P->str, e);
    } else if (e == 'n') {
      ir_buf_putc(&P->str, '\n');
    } else if (e == 't') {
      ir_buf_putc(&P->str, '\t');
    } else if (e == 'x') {
      int h = P->pos + 2 < P->len ? pp_hex(P->src[P->pos + 1]) : -1;
      int l = P->pos + 2 < P->len ? pp_hex(P->src[P->pos + 2]) : -1;
      if (h < 0 || l < 0)
        return pp_fail(P, at, "\\x needs two hexadecimal digits");
      if (h == 0 && l == 0)
        return pp_fail(P, at, "a string cannot contain \\x00");
      ir_buf_putc(&P->str, (char)(h * 16 + l));
      pp_advance(P);
      pp_advance(P);
    } else {
      return pp_fail(P, at, "unknown escape sequence in a string");
    }
    pp_advance(P);
  }
}

/* Reads the next token into P->t. On a lexical error the token is EOF, so
 * the parser stops at once. */
static bool pp_next(pl_parser *P) {
  for (;;) {
    while (P->pos < P->len && (P->src[P->pos] == ' ' || P->src[P->pos] == '\t' ||
                               P->src[P->pos] == '\r' || P->src[P->pos] == '\n'))
      pp_advance(P);
    if (P->pos + 1 < P->len && P->src[P->pos] == '/' && P->src[P->pos + 1] == '/') {
      while (P->pos < P->len && P->src[P->pos] != '\n')
        pp_advance(P);
      continue;
    }
    break;
  }
  pl_tok *t = &P->t;
  t->s = P->src + P->pos;
  t->at = P->here;
  t->i = 0;
  size_t start = P->pos;
  if (P->st != AC_OK || P->pos >= P->len) {
    t->kind = PT_EOF;
    t->len = 0;
    return P->st == AC_OK;
  }
  char c = P->src[P->pos];
  char c1 = P->pos + 1 < P->len ? P->src[P->pos + 1] : 0;
  bool ok = true;
  if (pp_is_ident_char(c, true)) {
    t->kind = PT_IDENT;
    while (P->pos < P->len && pp_is_ident_char(P->src[P->pos], false))
      pp_advance(P);
  } else if (pp_is_digit(c) || (c == '-' && pp_is_digit(c1))) {
    t->kind = PT_INT;
    bool neg = c == '-';
    if (neg)
      pp_advance(P);
    uint64_t mag = 0;
    ok = pp_digits(P, neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX, &mag);
    /* -2^63 has no positive counterpart: negate in unsigned arithmetic */
    t->i = neg ? (int64_t)(0 - mag) : (int64_t)mag;
  } else if (c == '%' && pp_is_digit(c1)) {
    t->kind = PT_WORD;
    pp_advance(P);
    uint64_t v = 0;
    ok = pp_digits(P, UINT32_MAX, &v);
    t->i = (int64_t)v;
  } else if (c == '"') {
    t->kind = PT_STRING;
    ok = pp_string(P);
  } else if ((c == '=' || c == '!' || c == '<') && c1 == '=') {
    t->kind = PT_PUNCT;
    pp_advance(P);
    pp_advance(P);
  } else if (c && strchr("{}[](),:=+-*/%<", c)) {
    t->kind = PT_PUNCT;
    pp_advance(P);
  } else {
    unsigned char u = (unsigned char)c;
    t->kind = PT_EOF;
    return pp_fail(P, t->at,
                   u >= 0x20 && u < 0x7f ? "unexpected character '%c'" : "unexpected byte 0x%02x",
                   u);
  }
  t->len = P->pos - start;
  if (!ok)
    t->kind = PT_EOF;
  return ok;
}

static bool pp_is(const pl_parser *P, pl_tkind kind, const char *text) {
  return P->t.kind == kind && P->t.len == strlen(text) && memcmp(P->t.s, text, P->t.len) == 0;
}

/* Consumes the keyword or punctuation `text`, or fails. */
static bool pp_expect(pl_parser *P, pl_tkind kind, const char *text) {
  if (!pp_is(P, kind, text)) {
    char what[32];
    snprintf(what, sizeof what, "'%s'", text);
    return pp_expected(P, what);
  }
  return pp_next(P);
}

static bool pp_word(pl_parser *P, uint32_t *out) {
  if (P->t.kind != PT_WORD)
    return pp_expected(P, "a word (%N)");
  if ((uint64_t)P->t.i >= P->p->nslots)
    return pp_fail(P, P->t.at, "word %%%lld is not below the %u slots", (long long)P->t.i,
                   P->p->nslots);
  *out = (uint32_t)P->t.i;
  return pp_next(P);
}

static bool pp_uint(pl_parser *P, int64_t lo, int64_t hi, const char *what, int64_t *out) {
  if (P->t.kind != PT_INT)
    return pp_expected(P, what);
  if (P->t.i < lo || P->t.i > hi)
    return pp_fail(P, P->t.at, "%s must be between %lld and %lld", what, (long long)lo,
                   (long long)hi);
  *out = P->t.i;
  return pp_next(P);
}

/* `k<N>` naming an existing kernel (or the next one when `next`). */
static bool pp_kernel_ref(pl_parser *P, bool next, uint32_t *out) {
  const char *s = P->t.s;
  size_t n = P->t.len;
  uint64_t v = 0;
  bool ok = P->t.kind == PT_IDENT && n >= 2 && n <= 11 && s[0] == 'k';
  for (size_t i = 1; ok && i < n; i++) {
    ok = pp_is_digit(s[i]) && !(i == 1 && s[i] == '0' && n > 2);
    v = v * 10 + (uint64_t)(s[i] - '0');
  }
  if (!ok)
    return pp_expected(P, "a kernel (k0, k1, ...)");
  if (next && v != P->p->nkernels)
    return pp_fail(P, P->t.at, "kernels must be numbered in order: expected k%u", P->p->nkernels);
  if (!next && v >= P->p->nkernels)
    return pp_fail(P, P->t.at, "kernel k%llu is not defined", (unsigned long long)v);
  *out = (uint32_t)v;
  return pp_next(P);
}

static bool pp_site_ref(pl_parser *P, uint32_t *out) {
  int64_t v = 0;
  ir_loc at = P->t.at;
  if (!pp_uint(P, 0, UINT32_MAX, "a site number", &v))
    return false;
  if (v >= P->p->nsites)
    return pp_fail(P, at, "site %lld is not defined", (long long)v);
  *out = (uint32_t)v;
  return true;
}

/* A scalar type with an optional `[,,]` suffix. */
static bool pp_type(pl_parser *P, ac_scalar *sc, uint32_t *rank) {
  if (P->t.kind != PT_IDENT)
    return pp_expected(P, "a type");
  int found = -1;
  for (int s = 0; s < AC_NUM_SCALARS; s++)
    if (pp_is(P, PT_IDENT, ac_scalar_name((ac_scalar)s)))
      found = s;
  if (found < 0) {
    char buf[64];
    return pp_fail(P, P->t.at, "unknown scalar type %s", pp_found(P, buf, sizeof buf));
  }
  *sc = (ac_scalar)found;
  *rank = 0;
  if (!pp_next(P))
    return false;
  if (!pp_is(P, PT_PUNCT, "["))
    return true;
  ir_loc at = P->t.at;
  *rank = 1;
  if (!pp_next(P))
    return false;
  while (pp_is(P, PT_PUNCT, ",")) {
    if (++*rank > PL_MAX_RANK)
      return pp_fail(P, at, "rank larger than %u", PL_MAX_RANK);
    if (!pp_next(P))
      return false;
  }
  return pp_expect(P, PT_PUNCT, "]");
}

/* The plan's name, a kernel's kind: a bare name or a string. */
static bool pp_name(pl_parser *P, const char *what, char **out) {
  if (P->t.kind == PT_IDENT)
    *out = ac_strndup(P->ctx, P->t.s, P->t.len);
  else if (P->t.kind == PT_STRING)
    *out = ac_strdup(P->ctx, ir_buf_cstr(&P->str));
  else
    return pp_expected(P, what);
  if (!*out || P->str.oom || !pp_next(P)) {
    if (!*out || P->str.oom)
      P->p->oom = true;
    ac_free(P->ctx, *out);
    *out = NULL;
    return false;
  }
  return true;
}

static void pp_mark(pl_parser *P, pl_part part, uint32_t idx, ir_loc at) {
  pl_locs *L = &P->locs[part];
  if (idx == PL_AUTO)
    return;
  if (!ac_grow(P->ctx, (void **)&L->v, &L->cap, (size_t)idx + 1, sizeof *L->v)) {
    P->p->oom = true;
    return;
  }
  for (; L->n <= idx; L->n++)
    L->v[L->n] = (ir_loc){0, 0};
  L->v[idx] = at;
}

static const struct {
  const char *text;
  pl_xop op;
} pl_binops[] = {{"+", PX_ADD}, {"-", PX_SUB}, {"*", PX_MUL}, {"/", PX_DIV}, {"%", PX_REM},
                 {"==", PX_EQ}, {"!=", PX_NE}, {"<", PX_LT},  {"<=", PX_LE}};

static bool pp_expr(pl_parser *P, uint32_t level, uint32_t *out) {
  ir_loc at = P->t.at;
  if (level >= PL_MAX_DEPTH)
    return pp_fail(P, at, "expression nested deeper than %u", PL_MAX_DEPTH);
  uint32_t a, b;
  if (P->t.kind == PT_INT) {
    *out = pl_x_const(P->p, P->t.i);
    if (!pp_next(P))
      return false;
  } else if (P->t.kind == PT_WORD) {
    if (!pp_word(P, &a))
      return false;
    *out = pl_x_word(P->p, a);
  } else if (pp_is(P, PT_PUNCT, "(")) {
    if (!pp_next(P) || !pp_expr(P, level + 1, &a))
      return false;
    int op = -1;
    for (size_t i = 0; i < sizeof pl_binops / sizeof pl_binops[0]; i++)
      if (pp_is(P, PT_PUNCT, pl_binops[i].text))
        op = (int)pl_binops[i].op;
    if (op < 0)
      return pp_expected(P, "an operator (+ - * / % == != < <=)");
    if (!pp_next(P) || !pp_expr(P, level + 1, &b) || !pp_expect(P, PT_PUNCT, ")"))
      return false;
    *out = pl_x_bin(P->p, (pl_xop)op, a, b);
  } else if (pp_is(P, PT_IDENT, "min") || pp_is(P, PT_IDENT, "max") ||
             pp_is(P, PT_IDENT, "chunks")) {
    pl_xop op = pp_is(P, PT_IDENT, "min") ? PX_MIN : pp_is(P, PT_IDENT, "max") ? PX_MAX : PX_CHUNKS;
    if (!pp_next(P) || !pp_expect(P, PT_PUNCT, "(") || !pp_expr(P, level + 1, &a) ||
        !pp_expect(P, PT_PUNCT, ",") || !pp_expr(P, level + 1, &b) ||
        !pp_expect(P, PT_PUNCT, ")"))
      return false;
    *out = pl_x_bin(P->p, op, a, b);
  } else {
    return pp_expected(P, "an expression");
  }
  pp_mark(P, PP_EXPR, *out, at);
  return true;
}

/* `[E, E, ...]` with exactly `rank` expressions into xs. */
static bool pp_extents(pl_parser *P, uint32_t rank, uint32_t *xs) {
  if (!pp_expect(P, PT_PUNCT, "["))
    return false;
  uint32_t n = 0;
  for (;;) {
    ir_loc at = P->t.at;
    if (n == rank)
      return pp_fail(P, at, "%u extents given for rank %u", rank + 1, rank);
    if (!pp_expr(P, 0, &xs[n++]))
      return false;
    if (!pp_is(P, PT_PUNCT, ","))
      break;
    if (!pp_next(P))
      return false;
  }
  if (n != rank)
    return pp_fail(P, P->t.at, "%u extents given for rank %u", n, rank);
  return pp_expect(P, PT_PUNCT, "]");
}

/* One instruction (not a closing brace); *opens is set when it opens a block. */
static bool pp_inst(pl_parser *P, bool *opens) {
  pl_plan *p = P->p;
  ir_loc at = P->t.at;
  uint32_t a, b, e, e2, k, idx;
  uint32_t xs[PL_MAX_RANK];
  ac_scalar sc;
  uint32_t rank;
  *opens = false;
  if (P->t.kind != PT_IDENT)
    return pp_expected(P, "an instruction");
  if (pp_is(P, PT_IDENT, "set")) {
    if (!pp_next(P) || !pp_word(P, &a) || !pp_expect(P, PT_PUNCT, "=") || !pp_expr(P, 0, &e))
      return false;
    idx = pl_set(p, a, e);
  } else if (pp_is(P, PT_IDENT, "alloc") || pp_is(P, PT_IDENT, "view")) {
    bool alloc = pp_is(P, PT_IDENT, "alloc");
    if (!pp_next(P) || !pp_word(P, &a) || !pp_expect(P, PT_PUNCT, ":") || !pp_type(P, &sc, &rank))
      return false;
    if (rank == 0)
      return pp_fail(P, at, "%s needs an array type", alloc ? "alloc" : "view");
    if (!pp_expect(P, PT_PUNCT, "=") || (!alloc && !pp_word(P, &b)) || !pp_extents(P, rank, xs))
      return false;
    if (alloc) {
      k = PL_AUTO;
      if (pp_is(P, PT_IDENT, "site") && (!pp_next(P) || !pp_site_ref(P, &k)))
        return false;
      unsigned flags = 0;
      if (pp_is(P, PT_IDENT, "try")) {
        flags |= PL_ALLOC_TRY;
        if (!pp_next(P))
          return false;
      }
      if (pp_is(P, PT_IDENT, "keep")) {
        flags |= PL_ALLOC_KEEP;
        if (!pp_next(P))
          return false;
      }
      idx = pl_alloc(p, a, sc, rank, xs, k);
      if (idx < p->ninsts)
        p->insts[idx].flags = (uint8_t)flags;
    } else {
      idx = pl_view(p, a, b, sc, rank, xs);
    }
  } else if (pp_is(P, PT_IDENT, "assign")) {
    if (!pp_next(P) || !pp_word(P, &a) || !pp_expect(P, PT_PUNCT, "=") || !pp_word(P, &b) ||
        !pp_expect(P, PT_PUNCT, ":") || !pp_type(P, &sc, &rank))
      return false;
    idx = pl_assign(p, a, b, sc, rank);
  } else if (pp_is(P, PT_IDENT, "free")) {
    if (!pp_next(P) || !pp_word(P, &a))
      return false;
    idx = pl_free(p, a);
  } else if (pp_is(P, PT_IDENT, "launch")) {
    if (!pp_next(P) || !pp_kernel_ref(P, false, &k) || !pp_expect(P, PT_IDENT, "n") ||
        !pp_expr(P, 0, &e) || !pp_expect(P, PT_IDENT, "chunks"))
      return false;
    e2 = a = PL_AUTO;
    if (pp_is(P, PT_IDENT, "auto") ? !pp_next(P) : !pp_expr(P, 0, &e2))
      return false;
    if (pp_is(P, PT_IDENT, "warps") && (!pp_next(P) || !pp_expr(P, 0, &a)))
      return false;
    idx = pl_launch_warps(p, k, e, e2, a);
  } else if (pp_is(P, PT_IDENT, "check")) {
    if (!pp_next(P) || !pp_expr(P, 0, &e) || !pp_expect(P, PT_IDENT, "site") ||
        !pp_site_ref(P, &k))
      return false;
    uint32_t vals[RT_FAIL_VALS], nv = 0;
    if (pp_is(P, PT_PUNCT, "(")) {
      if (!pp_next(P))
        return false;
      do {
        if (nv == RT_FAIL_VALS)
          return pp_fail(P, at, "a check takes at most %d values", RT_FAIL_VALS);
        if (!pp_expr(P, 0, &vals[nv++]))
          return false;
      } while (pp_is(P, PT_PUNCT, ",") && pp_next(P));
      if (!pp_expect(P, PT_PUNCT, ")"))
        return false;
    }
    idx = pl_check_n(p, e, k, nv, vals);
  } else if (pp_is(P, PT_IDENT, "for")) {
    if (!pp_next(P) || !pp_word(P, &a) || !pp_expect(P, PT_PUNCT, "=") || !pp_expr(P, 0, &e) ||
        !pp_expect(P, PT_IDENT, "to") || !pp_expr(P, 0, &e2) || !pp_expect(P, PT_PUNCT, "{"))
      return false;
    idx = pl_for(p, a, e, e2);
    *opens = true;
  } else if (pp_is(P, PT_IDENT, "while")) {
    if (!pp_next(P) || !pp_expect(P, PT_PUNCT, "{"))
      return false;
    idx = pl_while(p);
    *opens = true;
  } else if (pp_is(P, PT_IDENT, "break")) {
    if (!pp_next(P) || !pp_expect(P, PT_IDENT, "unless") || !pp_word(P, &a))
      return false;
    idx = pl_break_unless(p, a);
  } else if (pp_is(P, PT_IDENT, "if")) {
    if (!pp_next(P) || !pp_word(P, &a) || !pp_expect(P, PT_PUNCT, "{"))
      return false;
    idx = pl_if(p, a);
    *opens = true;
  } else {
    char buf[64];
    return pp_fail(P, at, "unknown instruction %s", pp_found(P, buf, sizeof buf));
  }
  pp_mark(P, PP_INST, idx, at);
  return true;
}

/* body { ... }: a flat loop; braces become END (or ELSE for `} else {`). */
static bool pp_body(pl_parser *P) {
  if (!pp_expect(P, PT_IDENT, "body") || !pp_expect(P, PT_PUNCT, "{"))
    return false;
  uint64_t depth = 0;
  for (;;) {
    ir_loc at = P->t.at;
    if (pp_is(P, PT_PUNCT, "}")) {
      if (!pp_next(P))
        return false;
      if (depth == 0)
        break;
      if (pp_is(P, PT_IDENT, "else")) {
        if (!pp_next(P) || !pp_expect(P, PT_PUNCT, "{"))
          return false;
        pp_mark(P, PP_INST, pl_else(P->p), at);
      } else {
        pp_mark(P, PP_INST, pl_end(P->p), at);
        depth--;
      }
      continue;
    }
    if (P->t.kind == PT_EOF)
      return pp_expected(P, "'}'");
    bool opens;
    if (!pp_inst(P, &opens))
      return false;
    depth += opens;
  }
  if (P->t.kind != PT_EOF)
    return pp_expected(P, "end of input after the body");
  return true;
}

static bool pl_kernel_uses(const pl_kernel *k, uint32_t w) {
  for (uint32_t u = 0; u < k->nuses; u++)
    if (k->uses[u] == w)
      return true;
  return false;
}

/* The rest of an extern kernel's line, its symbol being the current token
 * (plan.h): block B args %W:T ... ptx "..." "..." (the strings are joined). */
static bool pp_extern(pl_parser *P, ir_loc at) {
  pl_plan *p = P->p;
  uint32_t k = pl_kernel_add_extern(p, ir_buf_cstr(&P->str), "", 0, 1);
  pp_mark(P, PP_KERNEL, k, at);
  int64_t block = 0;
  if (p->oom || !pp_next(P) || !pp_expect(P, PT_IDENT, "block") ||
      !pp_uint(P, 1, 1024, "a block size", &block) || !pp_expect(P, PT_IDENT, "args"))
    return false;
  p->kernels[k].block = (uint32_t)block;
  while (P->t.kind == PT_WORD) {
    ir_loc wat = P->t.at;
    uint32_t w, rank = 0;
    ac_scalar sc = AC_BOOL;
    bool ptr = false;
    if (p->kernels[k].nkargs == PL_MAX_KARGS)
      return pp_fail(P, wat, "an extern kernel has at most %u arguments", PL_MAX_KARGS);
    if (!pp_word(P, &w) || !pp_expect(P, PT_PUNCT, ":"))
      return false;
    ir_loc tat = P->t.at;
    if (pp_is(P, PT_IDENT, "ptr")) {
      ptr = true;
      if (!pp_next(P))
        return false;
    } else if (P->t.kind != PT_IDENT) {
      return pp_expected(P, "'ptr' or a scalar type");
    } else if (!pp_type(P, &sc, &rank)) {
      return false;
    }
    if (rank)
      return pp_fail(P, tat, "an extern kernel's argument is 'ptr' (an array's data) or a scalar");
    pl_kernel_arg(p, k, w, sc, ptr);
    if (p->oom)
      return false;
  }
  if (!pp_expect(P, PT_IDENT, "ptx"))
    return false;
  if (P->t.kind != PT_STRING)
    return pp_expected(P, "the kernel's PTX (strings)");
  ir_buf text;
  ir_buf_init(&text, P->ctx);
  bool ok = true;
  while (ok && P->t.kind == PT_STRING) {
    ir_buf_puts(&text, ir_buf_cstr(&P->str));
    ok = pp_next(P);
  }
  char *ptx = ok && !text.oom && !P->str.oom ? ir_buf_take(&text) : NULL;
  ir_buf_free(&text);
  if (ok && !ptx)
    p->oom = true;
  if (!ptx)
    return false;
  ac_free(P->ctx, p->kernels[k].ptx);
  p->kernels[k].ptx = ptx;
  return true;
}

/* `WORD F + B` (the keyword WORD is the current token): scratch-like
 * bytes, fixed and per block, each up to PL_MAX_SCRATCH. */
static bool pp_bytes(pl_parser *P, const char *what, uint64_t *fixed, uint64_t *per_block) {
  char a[48], b[64];
  snprintf(a, sizeof a, "%s bytes", what);
  snprintf(b, sizeof b, "%s bytes per block", what);
  int64_t v = 0, v2 = 0;
  if (!pp_next(P) || !pp_uint(P, 0, (int64_t)PL_MAX_SCRATCH, a, &v) ||
      !pp_expect(P, PT_PUNCT, "+") || !pp_uint(P, 0, (int64_t)PL_MAX_SCRATCH, b, &v2))
    return false;
  *fixed = (uint64_t)v;
  *per_block = (uint64_t)v2;
  return true;
}

static bool pp_kernel(pl_parser *P) {
  pl_plan *p = P->p;
  ir_loc at = P->t.at;
  uint32_t k;
  char *kind = NULL;
  int64_t grain = 1;
  if (!pp_next(P) || !pp_kernel_ref(P, true, &k) || !pp_name(P, "a kernel kind", &kind))
    return false;
  if (P->t.kind != PT_STRING) {
    ac_free(P->ctx, kind);
    return pp_expected(P, "the kernel's symbol (a string)");
  }
  if (strcmp(kind, "extern") == 0) {
    ac_free(P->ctx, kind);
    return pp_extern(P, at);
  }
  k = pl_kernel_add(p, kind, ir_buf_cstr(&P->str), 1);
  ac_free(P->ctx, kind);
  pp_mark(P, PP_KERNEL, k, at);
  if (p->oom || !pp_next(P) || !pp_expect(P, PT_IDENT, "grain") ||
      !pp_uint(P, 1, INT64_MAX, "a grain", &grain))
    return false;
  p->kernels[k].grain = grain;
  /* GPU settings (plan.h), in this order, each optional */
  pl_kernel *K = &p->kernels[k];
  int64_t v = 0;
  if (p->gpu && pp_is(P, PT_IDENT, "block")) {
    if (!pp_next(P) || !pp_uint(P, 32, 1024, "a block size", &v))
      return false;
    K->block = (uint32_t)v;
  }
  if (p->gpu && pp_is(P, PT_IDENT, "smem")) {
    if (!pp_next(P) || !pp_uint(P, 0, PL_MAX_SMEM, "shared memory bytes", &v))
      return false;
    K->smem = (uint64_t)v;
  }
  if (p->gpu && pp_is(P, PT_IDENT, "scratch") &&
      (!pp_bytes(P, "scratch", &K->scratch_fixed, &K->scratch_block) ||
       (pp_is(P, PT_IDENT, "counters") &&
        !pp_bytes(P, "counter", &K->counters_fixed, &K->counters_block))))
    return false;
  if (p->gpu && pp_is(P, PT_IDENT, "tmp")) {
    if (!pp_next(P))
      return false;
    K->tmp = true;
  }
  if (!pp_expect(P, PT_IDENT, "uses"))
    return false;
  for (int pass = 0; pass < 2; pass++) {
    int64_t last = -1;
    while (P->t.kind == PT_WORD) {
      ir_loc wat = P->t.at;
      uint32_t w;
      if (!pp_word(P, &w))
        return false;
      if ((int64_t)w <= last)
        return pp_fail(P, wat, "kernel %s must be ascending and distinct",
                       pass ? "writes" : "uses");
      if (pass && !pl_kernel_uses(K, w))
        return pp_fail(P, wat, "kernel writes %%%u, which it does not use", w);
      last = w;
      if (pass)
        pl_kernel_write(p, k, w);
      else
        pl_kernel_use(p, k, w);
      K = &p->kernels[k];
    }
    if (pass || !pp_is(P, PT_IDENT, "writes"))
      break;
    if (!pp_next(P))
      return false;
  }
  return true;
}

static bool pp_site(pl_parser *P) {
  pl_plan *p = P->p;
  ir_loc at = P->t.at;
  int64_t n = 0, line = 0, col = 0;
  if (!pp_next(P))
    return false;
  ir_loc nat = P->t.at;
  if (!pp_uint(P, 0, UINT32_MAX, "a site number", &n))
    return false;
  if (n != p->nsites)
    return pp_fail(P, nat, "sites must be numbered in order: expected site %u", p->nsites);
  if (!pp_expect(P, PT_IDENT, "at") || !pp_uint(P, 0, UINT32_MAX, "a line number", &line) ||
      !pp_expect(P, PT_PUNCT, ":") || !pp_uint(P, 0, UINT32_MAX, "a column number", &col))
    return false;
  if (P->t.kind != PT_STRING)
    return pp_expected(P, "the site's message (a string)");
  pp_mark(P, PP_SITE, pl_site_add(p, (uint32_t)line, (uint32_t)col, ir_buf_cstr(&P->str)), at);
  return pp_next(P);
}

static bool pp_plan(pl_parser *P) {
  int64_t nslots = 0;
  char *name = NULL;
  if (!pp_next(P) || !pp_expect(P, PT_IDENT, "plan") || !pp_name(P, "the plan's name", &name))
    return false;
  ac_free(P->ctx, P->p->name);
  P->p->name = name;
  if (!pp_expect(P, PT_IDENT, "slots") ||
      !pp_uint(P, 0, PL_MAX_SLOTS, "the number of slots", &nslots))
    return false;
  pl_slots(P->p, (uint32_t)nslots);
  if (pp_is(P, PT_IDENT, "target")) {
    if (!pp_next(P) || !pp_expect(P, PT_IDENT, "gpu"))
      return false;
    P->p->gpu = true;
  }
  while (!pp_is(P, PT_IDENT, "body") && !P->p->oom) {
    ir_loc at = P->t.at;
    bool res = pp_is(P, PT_IDENT, "result");
    if (res || pp_is(P, PT_IDENT, "param")) {
      uint32_t slot, rank;
      ac_scalar sc;
      if (!pp_next(P) || !pp_word(P, &slot) || !pp_expect(P, PT_PUNCT, ":") ||
          !pp_type(P, &sc, &rank))
        return false;
      if (res)
        pl_result(P->p, slot, sc, rank);
      else
        pl_param(P->p, slot, sc, rank);
      pp_mark(P, res ? PP_RESULT : PP_PARAM, (res ? P->p->nresults : P->p->nparams) - 1, at);
    } else if (pp_is(P, PT_IDENT, "site")) {
      if (!pp_site(P))
        return false;
    } else if (pp_is(P, PT_IDENT, "kernel")) {
      if (!pp_kernel(P))
        return false;
    } else {
      return pp_expected(P, "'param', 'result', 'site', 'kernel' or 'body'");
    }
  }
  return !P->p->oom && pp_body(P);
}

ac_status pl_parse(ac_context *ctx, const char *file, const char *text, size_t len,
                   pl_plan **out, ac_error **err) {
  *out = NULL;
  if (err)
    *err = NULL;
  pl_parser P;
  memset(&P, 0, sizeof P);
  P.ctx = ctx;
  P.file = file ? file : "<plan>";
  P.src = text ? text : "";
  P.len = text ? len : 0;
  P.here = (ir_loc){1, 1};
  ir_buf_init(&P.str, ctx);
  P.p = pl_create(ctx, "", file);
  if (!P.p)
    return ir_report(err, NULL, AC_ERR_NOMEM);
  bool ok = pp_plan(&P) && !P.p->oom && !P.str.oom;
  uint32_t *links = NULL;
  if (ok) {
    /* The compiler's rules, at the text's positions. */
    pl_fault f;
    links = P.p->ninsts ? ac_alloc(ctx, P.p->ninsts * sizeof *links) : NULL;
    ac_status st = P.p->ninsts && !links ? AC_ERR_NOMEM : pl_validate(P.p, &f, links);
    if (st == AC_ERR_INTERNAL) {
      pl_locs *L = &P.locs[f.part];
      ir_loc at = f.part == PP_PLAN ? (ir_loc){1, 1} : f.index < L->n ? L->v[f.index] : (ir_loc){0, 0};
      pp_fail(&P, at, "%s", f.msg);
    }
    ok = st == AC_OK;
    for (uint32_t i = 0; ok && i < P.p->ninsts; i++)
      P.p->insts[i].match = links[i];
    P.p->finished = ok;
  }
  ac_free(ctx, links);
  for (size_t i = 0; i < sizeof P.locs / sizeof P.locs[0]; i++)
    ac_free(ctx, P.locs[i].v);
  ir_buf_free(&P.str);
  if (ok) {
    *out = P.p;
    return AC_OK;
  }
  pl_destroy(P.p);
  if (P.st == AC_OK || P.st == AC_ERR_NOMEM) {
    ac_error_destroy(P.err);
    return ir_report(err, NULL, AC_ERR_NOMEM);
  }
  return ir_report(err, P.err, P.st);
}
