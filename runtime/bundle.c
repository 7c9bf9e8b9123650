/* runtime/bundle.c: printing and parsing bundles (runtime/bundle.h). */
#include "runtime/bundle.h"

#include "runtime/plan_impl.h"

#include <stdio.h>
#include <string.h>

#ifndef ARRAYC_BUILD_ID
#define ARRAYC_BUILD_ID "unknown"
#endif

const char *rt_build_id(void) {
  return ARRAYC_BUILD_ID;
}

uint64_t rt_bundle_hash(const void *data, size_t len) {
  const unsigned char *s = data;
  uint64_t h = 14695981039346656037ull;
  for (size_t i = 0; i < len; i++) {
    h ^= s[i];
    h *= 1099511628211ull;
  }
  return h;
}

/* ---- printing ---- */

static void print_leaf(ir_buf *b, const char *kw, const rt_leaf *l) {
  ir_buf_printf(b, "%s ", kw);
  pl_print_quoted(b, l->name ? l->name : "");
  ir_buf_printf(b, " %s", ac_scalar_name(l->type));
  if (l->rank) {
    ir_buf_putc(b, '[');
    for (unsigned i = 1; i < l->rank; i++)
      ir_buf_putc(b, ',');
    ir_buf_putc(b, ']');
  }
  ir_buf_putc(b, '\n');
}

ac_status rt_bundle_print(ac_context *ctx, const rt_bundle *bd, char **out, size_t *len,
                          ac_error **err) {
  *out = NULL;
  ir_buf b;
  ir_buf_init(&b, ctx);
  ir_buf_printf(&b, "arrayc-bundle %d\ncompiler ", RT_BUNDLE_VERSION);
  pl_print_quoted(&b, bd->compiler);
  if (bd->gpu) {
    ir_buf_printf(&b, "\ntarget gpu sm_%u\n", bd->sm);
  } else {
    ir_buf_puts(&b, "\ntarget cpu ");
    pl_print_quoted(&b, bd->triple);
    ir_buf_putc(&b, ' ');
    pl_print_quoted(&b, bd->cpu);
    ir_buf_putc(&b, '\n');
  }
  ir_buf_puts(&b, "source ");
  pl_print_quoted(&b, bd->source ? bd->source : "");
  ir_buf_puts(&b, "\nprefix ");
  pl_print_quoted(&b, bd->prefix);
  ir_buf_putc(&b, '\n');
  if (bd->source_text) {
    ir_buf_printf(&b, "source-text %zu\n", bd->source_len);
    ir_buf_putn(&b, bd->source_text, bd->source_len);
    ir_buf_putc(&b, '\n');
  }
  ac_status st = AC_OK;
  for (uint32_t i = 0; i < bd->nfns && st == AC_OK; i++) {
    const rt_bundle_fn *f = &bd->fns[i];
    ir_buf_puts(&b, "function ");
    pl_print_quoted(&b, f->name);
    ir_buf_putc(&b, '\n');
    for (uint32_t k = 0; k < f->nparams; k++) {
      ir_buf_puts(&b, "param ");
      pl_print_quoted(&b, f->params[k].name);
      ir_buf_printf(&b, " %u ", f->params[k].nleaves);
      pl_print_quoted(&b, f->params[k].type);
      ir_buf_putc(&b, '\n');
    }
    ir_buf_puts(&b, "returns ");
    pl_print_quoted(&b, f->result_type ? f->result_type : "");
    ir_buf_putc(&b, '\n');
    for (uint32_t k = 0; k < f->nargs; k++)
      print_leaf(&b, "arg", &f->args[k]);
    for (uint32_t k = 0; k < f->nres; k++)
      print_leaf(&b, "result", &f->res[k]);
    char *text = NULL;
    st = pl_print(f->plan, &text, err);
    if (st == AC_OK) {
      size_t n = strlen(text);
      ir_buf_printf(&b, "plan %zu\n", n);
      ir_buf_putn(&b, text, n);
      ir_buf_putc(&b, '\n');
    }
    ac_string_destroy(ctx, text);
  }
  ir_buf_puts(&b, "end\n");
  if (st == AC_OK && b.oom)
    st = ir_report(err, NULL, AC_ERR_NOMEM);
  if (st == AC_OK) {
    *len = b.len;
    *out = ir_buf_take(&b);
    if (!*out)
      st = ir_report(err, NULL, AC_ERR_NOMEM);
  }
  ir_buf_free(&b);
  return st;
}

/* ---- parsing ---- */

typedef struct bp {
  ac_context *ctx;
  const char *where;
  const char *s, *end; /* the rest of the text */
  const char *line, *lend; /* the current line */
  unsigned lineno;
  ac_error **err;
  ac_status st;
} bp;

static bool bp_fail(bp *P, const char *fmt, ...) IR_PRINTF(2, 3);
static bool bp_fail(bp *P, const char *fmt, ...) {
  if (P->st != AC_OK)
    return false;
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  P->st = rt_fail(P->ctx, P->err, AC_ERR_INVALID, "%s: bundle line %u: %s", P->where,
                  P->lineno, msg);
  return false;
}

static bool bp_oom(bp *P) {
  if (P->st == AC_OK)
    P->st = ir_report(P->err, NULL, AC_ERR_NOMEM);
  return false;
}

/* Reads the next line into P->line .. P->lend. */
static bool bp_next_line(bp *P) {
  if (P->s >= P->end) {
    P->lineno++;
    return bp_fail(P, "unexpected end of the bundle");
  }
  P->line = P->s;
  const char *nl = memchr(P->s, '\n', (size_t)(P->end - P->s));
  P->lend = nl ? nl : P->end;
  P->s = nl ? nl + 1 : P->end;
  P->lineno++;
  return true;
}

static void bp_space(bp *P) {
  while (P->line < P->lend && *P->line == ' ')
    P->line++;
}

/* A keyword at the start of the line, followed by a space or the end. */
static bool bp_keyword(bp *P, const char *kw) {
  size_t n = strlen(kw);
  if ((size_t)(P->lend - P->line) < n || memcmp(P->line, kw, n) != 0 ||
      (P->line + n < P->lend && P->line[n] != ' '))
    return false;
  P->line += n;
  bp_space(P);
  return true;
}

static bool bp_expect_keyword(bp *P, const char *kw) {
  if (bp_keyword(P, kw))
    return true;
  return bp_fail(P, "expected '%s'", kw);
}

static bool bp_eol(bp *P) {
  bp_space(P);
  if (P->line != P->lend)
    return bp_fail(P, "unexpected text at the end of the line");
  return true;
}

static int bp_hex(char c) {
  return c >= '0' && c <= '9' ? c - '0'
         : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                : -1;
}

/* A bare word or a quoted string: *out is ac_alloc'd. */
static bool bp_string(bp *P, char **out) {
  ir_buf b;
  ir_buf_init(&b, P->ctx);
  bool ok = true;
  if (P->line < P->lend && *P->line == '"') {
    P->line++;
    for (;;) {
      if (P->line >= P->lend) {
        ok = bp_fail(P, "unterminated string");
        break;
      }
      char c = *P->line++;
      if (c == '"')
        break;
      if (c != '\\') {
        ir_buf_putc(&b, c);
        continue;
      }
      if (P->line >= P->lend) {
        ok = bp_fail(P, "unterminated string");
        break;
      }
      c = *P->line++;
      if (c == 'n') {
        ir_buf_putc(&b, '\n');
      } else if (c == 't') {
        ir_buf_putc(&b, '\t');
      } else if (c == '"' || c == '\\') {
        ir_buf_putc(&b, c);
      } else if (c == 'x' && P->lend - P->line >= 2 && bp_hex(P->line[0]) >= 0 &&
                 bp_hex(P->line[1]) >= 0) {
        int v = bp_hex(P->line[0]) * 16 + bp_hex(P->line[1]);
        if (v == 0) {
          ok = bp_fail(P, "a NUL byte in a string");
          break;
        }
        ir_buf_putc(&b, (char)v);
        P->line += 2;
      } else {
        ok = bp_fail(P, "unknown escape '\\%c'", c);
        break;
      }
    }
  } else {
    const char *w = P->line;
    while (P->line < P->lend && *P->line != ' ')
      P->line++;
    if (P->line == w)
      ok = bp_fail(P, "expected a name");
    ir_buf_putn(&b, w, (size_t)(P->line - w));
  }
  bp_space(P);
  if (ok) {
    ir_buf_cstr(&b);
    *out = b.oom ? NULL : ir_buf_take(&b);
    if (!*out)
      ok = bp_oom(P);
  }
  ir_buf_free(&b);
  return ok;
}

static bool bp_uint(bp *P, uint64_t max, uint64_t *out) {
  uint64_t v = 0;
  const char *w = P->line;
  while (P->line < P->lend && *P->line >= '0' && *P->line <= '9') {
    unsigned d = (unsigned)(*P->line++ - '0');
    if (v > (max - d) / 10)
      return bp_fail(P, "number too large");
    v = v * 10 + d;
  }
  if (P->line == w)
    return bp_fail(P, "expected a number");
  bp_space(P);
  *out = v;
  return true;
}

/* "f32", "i32[,]": a leaf's type. */
static bool bp_leaf_type(bp *P, rt_leaf *l) {
  const char *w = P->line;
  while (P->line < P->lend && *P->line != ' ' && *P->line != '[')
    P->line++;
  size_t n = (size_t)(P->line - w);
  bool found = false;
  for (int sc = 0; sc < AC_NUM_SCALARS && !found; sc++) {
    const char *name = ac_scalar_name((ac_scalar)sc);
    if (strlen(name) == n && memcmp(name, w, n) == 0) {
      l->type = (ac_scalar)sc;
      found = true;
    }
  }
  if (!found)
    return bp_fail(P, "expected a scalar type");
  l->rank = 0;
  if (P->line < P->lend && *P->line == '[') {
    l->rank = 1;
    for (P->line++; P->line < P->lend && *P->line == ','; P->line++)
      l->rank++;
    if (P->line >= P->lend || *P->line != ']' || l->rank > PL_MAX_RANK)
      return bp_fail(P, "bad array type");
    P->line++;
  }
  return bp_eol(P);
}

static bool bp_leaves(bp *P, const char *kw, rt_leaf **out, uint32_t *n) {
  uint32_t cap = 0;
  *out = NULL;
  *n = 0;
  while (P->s < P->end) {
    const char *save_s = P->s;
    unsigned save_no = P->lineno;
    bp_next_line(P);
    if (!bp_keyword(P, kw)) {
      P->s = save_s;
      P->lineno = save_no;
      break;
    }
    size_t c = cap;
    if (!ac_grow(P->ctx, (void **)out, &c, *n + 1, sizeof **out))
      return bp_oom(P);
    cap = (uint32_t)c;
    rt_leaf *l = &(*out)[(*n)++];
    memset(l, 0, sizeof *l);
    if (!bp_string(P, &l->name) || !bp_leaf_type(P, l))
      return false;
  }
  return true;
}

/* `param NAME LEAVES TYPE` lines, then `returns TYPE`. */
static bool bp_params(bp *P, rt_bundle_fn *f) {
  size_t cap = 0;
  for (;;) {
    if (!bp_next_line(P))
      return false;
    if (bp_keyword(P, "returns"))
      return bp_string(P, &f->result_type) && bp_eol(P);
    if (!bp_expect_keyword(P, "param"))
      return false;
    if (!ac_grow(P->ctx, (void **)&f->params, &cap, f->nparams + 1, sizeof *f->params))
      return bp_oom(P);
    rt_param *p = &f->params[f->nparams++];
    memset(p, 0, sizeof *p);
    uint64_t n;
    if (!bp_string(P, &p->name) || !bp_uint(P, UINT32_MAX, &n) || !bp_string(P, &p->type) ||
        !bp_eol(P))
      return false;
    p->nleaves = (uint32_t)n;
  }
}

/* Each parameter covers the next nleaves leaves, whose paths start with
 * its name, and together they cover every leaf. */
static bool params_agree(rt_bundle_fn *f) {
  uint32_t first = 0;
  for (uint32_t i = 0; i < f->nparams; i++) {
    rt_param *p = &f->params[i];
    if (p->nleaves > f->nargs - first)
      return false;
    p->first = first;
    size_t n = strlen(p->name);
    for (uint32_t k = first; k < first + p->nleaves; k++) {
      const char *l = f->args[k].name;
      if (strncmp(l, p->name, n) != 0 || (l[n] != 0 && l[n] != '.'))
        return false;
    }
    first += p->nleaves;
  }
  return first == f->nargs;
}

static bool leaves_agree(const rt_leaf *l, uint32_t n, const pl_leaf *p, uint32_t np) {
  if (n != np)
    return false;
  for (uint32_t i = 0; i < n; i++)
    if (l[i].type != p[i].sc || l[i].rank != p[i].rank)
      return false;
  return true;
}

static bool bp_function(bp *P, rt_bundle *B) {
  size_t cap = B->nfns;
  if (!ac_grow(P->ctx, (void **)&B->fns, &cap, B->nfns + 1, sizeof *B->fns))
    return bp_oom(P);
  rt_bundle_fn *f = &B->fns[B->nfns++];
  memset(f, 0, sizeof *f);
  if (!bp_string(P, &f->name) || !bp_eol(P))
    return false;
  for (uint32_t i = 0; i + 1 < B->nfns; i++)
    if (strcmp(B->fns[i].name, f->name) == 0)
      return bp_fail(P, "function '%s' twice", f->name);
  if (!bp_params(P, f) || !bp_leaves(P, "arg", &f->args, &f->nargs) ||
      !bp_leaves(P, "result", &f->res, &f->nres))
    return false;
  if (!params_agree(f))
    return bp_fail(P, "the parameters of '%s' do not agree with its leaves", f->name);
  uint64_t n;
  if (!bp_next_line(P) || !bp_expect_keyword(P, "plan") || !bp_uint(P, SIZE_MAX, &n) ||
      !bp_eol(P))
    return false;
  if (n > (uint64_t)(P->end - P->s))
    return bp_fail(P, "the plan runs past the end of the bundle");
  char where[256];
  snprintf(where, sizeof where, "%s (plan of '%s')", P->where, f->name);
  ac_status st = pl_parse(P->ctx, where, P->s, (size_t)n, &f->plan, P->err);
  if (st != AC_OK) {
    P->st = st;
    return false;
  }
  for (const char *c = P->s; c < P->s + n; c++)
    if (*c == '\n')
      P->lineno++;
  P->s += n;
  if (P->s >= P->end || *P->s != '\n')
    return bp_fail(P, "expected a new line after the plan");
  P->s++;
  ac_free(P->ctx, f->plan->file);
  f->plan->file = B->source[0] ? ac_strdup(P->ctx, B->source) : NULL;
  if (B->source[0] && !f->plan->file)
    return bp_oom(P);
  if (f->plan->gpu != B->gpu)
    return bp_fail(P, "the plan of '%s' is not for the bundle's target", f->name);
  if (!leaves_agree(f->args, f->nargs, f->plan->params, f->plan->nparams) ||
      !leaves_agree(f->res, f->nres, f->plan->results, f->plan->nresults))
    return bp_fail(P, "the leaves of '%s' do not agree with its plan", f->name);
  return true;
}

/* `source-text N`, then N bytes of text and a newline. */
static bool bp_source_text(bp *P, rt_bundle *B) {
  uint64_t n;
  if (!bp_uint(P, SIZE_MAX, &n) || !bp_eol(P))
    return false;
  if (n > (uint64_t)(P->end - P->s))
    return bp_fail(P, "the source text runs past the end of the bundle");
  if (memchr(P->s, 0, (size_t)n))
    return bp_fail(P, "a NUL byte in the source text");
  if (!(B->source_text = ac_strndup(P->ctx, P->s, (size_t)n)))
    return bp_oom(P);
  B->source_len = (size_t)n;
  for (const char *c = P->s; c < P->s + n; c++)
    if (*c == '\n')
      P->lineno++;
  P->s += n;
  if (P->s >= P->end || *P->s != '\n')
    return bp_fail(P, "expected a new line after the source text");
  P->s++;
  return true;
}

static bool bp_bundle(bp *P, rt_bundle *B) {
  uint64_t v, sm;
  if (!bp_next_line(P) || !bp_expect_keyword(P, "arrayc-bundle") || !bp_uint(P, 1000000, &v) ||
      !bp_eol(P))
    return false;
  if (v != RT_BUNDLE_VERSION)
    return bp_fail(P, "bundle format %llu; this runtime reads format %d (compile the program "
                      "again with the arrayc of this runtime)",
                   (unsigned long long)v, RT_BUNDLE_VERSION);
  if (!bp_next_line(P) || !bp_expect_keyword(P, "compiler") || !bp_string(P, &B->compiler) ||
      !bp_eol(P))
    return false;
  if (!bp_next_line(P) || !bp_expect_keyword(P, "target"))
    return false;
  if (bp_keyword(P, "gpu")) {
    B->gpu = true;
    if (P->lend - P->line < 3 || memcmp(P->line, "sm_", 3) != 0)
      return bp_fail(P, "expected sm_XY");
    P->line += 3;
    if (!bp_uint(P, 10000, &sm) || !bp_eol(P))
      return false;
    B->sm = (unsigned)sm;
  } else if (bp_keyword(P, "cpu")) {
    if (!bp_string(P, &B->triple) || !bp_string(P, &B->cpu) || !bp_eol(P))
      return false;
  } else {
    return bp_fail(P, "expected 'cpu' or 'gpu'");
  }
  if (!bp_next_line(P) || !bp_expect_keyword(P, "source") || !bp_string(P, &B->source) ||
      !bp_eol(P))
    return false;
  if (!bp_next_line(P) || !bp_expect_keyword(P, "prefix") || !bp_string(P, &B->prefix) ||
      !bp_eol(P))
    return false;
  for (bool first = true;; first = false) {
    if (!bp_next_line(P))
      return false;
    if (bp_keyword(P, "end"))
      break;
    if (first && bp_keyword(P, "source-text")) {
      if (!bp_source_text(P, B))
        return false;
      continue;
    }
    if (!bp_expect_keyword(P, "function") || !bp_function(P, B))
      return false;
  }
  if (!bp_eol(P))
    return false;
  while (P->s < P->end && (*P->s == '\n' || *P->s == ' '))
    P->s++;
  if (P->s != P->end)
    return bp_fail(P, "text after 'end'");
  return true;
}

ac_status rt_bundle_parse(ac_context *ctx, const char *where, const char *text, size_t len,
                          rt_bundle **out, ac_error **err) {
  *out = NULL;
  rt_bundle *B = ac_alloc(ctx, sizeof *B);
  if (!B)
    return ir_report(err, NULL, AC_ERR_NOMEM);
  memset(B, 0, sizeof *B);
  bp P = {ctx, where ? where : "bundle", text, text + len, NULL, NULL, 0, err, AC_OK};
  if (!bp_bundle(&P, B)) {
    rt_bundle_free(ctx, B);
    return P.st != AC_OK ? P.st : AC_ERR_INVALID;
  }
  *out = B;
  return AC_OK;
}

ac_status rt_bundle_check(ac_context *ctx, const char *where, const rt_bundle *b,
                          ac_error **err) {
  if (strcmp(b->compiler, rt_build_id()) == 0)
    return AC_OK;
  return rt_fail(ctx, err, AC_ERR_INVALID,
                 "%s is stale: it was made by arrayc %s, and this runtime is arrayc %s "
                 "(compile the program again with the arrayc of this runtime)",
                 where, b->compiler, rt_build_id());
}

static void free_fn_leaves(ac_context *ctx, rt_leaf *l, uint32_t n) {
  for (uint32_t i = 0; l && i < n; i++)
    ac_free(ctx, l[i].name);
  ac_free(ctx, l);
}

void rt_bundle_free(ac_context *ctx, rt_bundle *b) {
  if (!b)
    return;
  for (uint32_t i = 0; i < b->nfns; i++) {
    rt_bundle_fn *f = &b->fns[i];
    ac_free(ctx, f->name);
    free_fn_leaves(ctx, f->args, f->nargs);
    free_fn_leaves(ctx, f->res, f->nres);
    rt_params_free(ctx, f->params, f->nparams);
    ac_free(ctx, f->result_type);
    pl_destroy(f->plan);
  }
  ac_free(ctx, b->fns);
  ac_free(ctx, b->compiler);
  ac_free(ctx, b->triple);
  ac_free(ctx, b->cpu);
  ac_free(ctx, b->source);
  ac_free(ctx, b->prefix);
  ac_free(ctx, b->source_text);
  ac_free(ctx, b);
}

/* ---- the block in a PTX file ---- */

#define PTX_OPEN "//arrayc-bundle "
#define PTX_CLOSE "//arrayc-bundle-end\n"

ac_status rt_ptx_with_bundle(ac_context *ctx, const char *bundle, size_t len, const char *ptx,
                             char **out, size_t *outlen, ac_error **err) {
  *out = NULL;
  ir_buf b;
  ir_buf_init(&b, ctx);
  ir_buf_printf(&b, PTX_OPEN "%zu %016llx\n", len,
                (unsigned long long)rt_bundle_hash(bundle, len));
  size_t i = 0;
  while (i < len) {
    const char *nl = memchr(bundle + i, '\n', len - i);
    size_t n = nl ? (size_t)(nl - (bundle + i)) : len - i;
    ir_buf_puts(&b, "//");
    ir_buf_putn(&b, bundle + i, n);
    ir_buf_putc(&b, '\n');
    i += n + (nl ? 1 : 0);
  }
  ir_buf_puts(&b, PTX_CLOSE);
  ir_buf_puts(&b, ptx);
  if (b.oom) {
    ir_buf_free(&b);
    return ir_report(err, NULL, AC_ERR_NOMEM);
  }
  *outlen = b.len;
  *out = ir_buf_take(&b);
  return *out ? AC_OK : ir_report(err, NULL, AC_ERR_NOMEM);
}

ac_status rt_ptx_bundle_text(ac_context *ctx, const char *where, const char *ptx, size_t ptxlen,
                             char **text, size_t *len, uint64_t *hash, ac_error **err) {
  *text = NULL;
  size_t n0 = strlen(PTX_OPEN);
  if (ptxlen < n0 || memcmp(ptx, PTX_OPEN, n0) != 0)
    return rt_fail(ctx, err, AC_ERR_INVALID,
                   "%s was not written by arrayc (it has no arrayc bundle at its start)",
                   where);
  const char *s = ptx + n0, *end = ptx + ptxlen;
  unsigned long long want = 0, h = 0;
  char head[64];
  size_t hn = 0;
  while (s + hn < end && s[hn] != '\n' && hn + 1 < sizeof head) {
    head[hn] = s[hn];
    hn++;
  }
  head[hn] = 0;
  /* exactly what rt_ptx_with_bundle writes: decimal digits, one space,
   * 16 lowercase hex digits (sscanf's %llx would also take "0x": a hash
   * starting with "00" edited to "0x" would read as the same number) */
  size_t k = 0;
  while (k < hn && head[k] >= '0' && head[k] <= '9' && k < 19)
    want = want * 10 + (unsigned long long)(head[k++] - '0');
  bool ok = k > 0 && k < hn && head[k] == ' ' && hn == k + 1 + 16;
  for (size_t q = k + 1; ok && q < hn; q++) {
    char c = head[q];
    ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
    h = h * 16 + (unsigned long long)(c <= '9' ? c - '0' : c - 'a' + 10);
  }
  if (!ok || s + hn >= end)
    return rt_fail(ctx, err, AC_ERR_INVALID, "%s: the arrayc bundle's first line is damaged",
                   where);
  s += hn + 1;
  ir_buf b;
  ir_buf_init(&b, ctx);
  /* the declared length decides where the text ends (a line of the
   * source text may look like anything, the closing line included) */
  bool closed = false;
  while (s < end && b.len < want && !b.oom) {
    const char *nl = memchr(s, '\n', (size_t)(end - s));
    size_t n = nl ? (size_t)(nl - s) + 1 : (size_t)(end - s);
    if (n < 2 || s[0] != '/' || s[1] != '/')
      break;
    ir_buf_putn(&b, s + 2, n - 2);
    s += n;
  }
  size_t nc = strlen(PTX_CLOSE);
  closed = b.len == want && (size_t)(end - s) >= nc && memcmp(s, PTX_CLOSE, nc) == 0;
  ac_status st = AC_OK;
  if (b.oom)
    st = ir_report(err, NULL, AC_ERR_NOMEM);
  else if (!closed || b.len != want)
    st = rt_fail(ctx, err, AC_ERR_INVALID, "%s: the arrayc bundle is damaged (truncated or "
                                           "edited)", where);
  if (st == AC_OK) {
    *len = b.len;
    *hash = h;
    *text = ir_buf_take(&b);
    if (!*text)
      st = ir_report(err, NULL, AC_ERR_NOMEM);
    else if (rt_bundle_hash(*text, *len) != h) {
      ac_free(ctx, *text);
      *text = NULL;
      st = rt_fail(ctx, err, AC_ERR_INVALID,
                   "%s: the arrayc bundle is damaged (its checksum does not match)", where);
    }
  }
  ir_buf_free(&b);
  return st;
}
