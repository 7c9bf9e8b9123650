/* lib/passes/passes.c: the pass registry and the pipeline runner (pass.h).
 *
 * The registry is the one list of passes (passes_list.h); pipelines are
 * comma-separated pass names, where O0..O3 stand for the default pipeline
 * of that level (ps_level_pipeline), so "O2,smem-stencil" is a pipeline.
 * ps_run_pipeline runs each pass over the whole module and verifies the
 * module after it: passes build new nodes without types, and the verifier,
 * which is idempotent on checked IR, types them and catches a pass that
 * broke scoping or typing, naming the pass. With verify_each it also checks
 * that the module's text survives print -> parse -> print (the IR's
 * invariant that names are only hints and nothing lives outside the text),
 * which is how a researcher's new pass is tested (arrayc-opt --verify-each).
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "passes/pass.h"

#include <string.h>
#include <time.h>

#define PS_PASS(fn, name, help, ...) ac_status fn(ps_ctx *c);
#include "passes/passes_list.h"
#undef PS_PASS

#define PS_PASS(fn, name, help, ...) static const char *const fn##_counters[] = {__VA_ARGS__, NULL};
#include "passes/passes_list.h"
#undef PS_PASS

const ps_pass ps_passes[] = {
#define PS_PASS(fn, name, help, ...) {name, help, fn, fn##_counters},
#include "passes/passes_list.h"
#undef PS_PASS
    {NULL, NULL, NULL, NULL}};

const size_t ps_npasses = sizeof ps_passes / sizeof ps_passes[0] - 1;

const ps_pass *ps_find(const char *name, size_t len) {
  for (size_t i = 0; i < ps_npasses; i++)
    if (strlen(ps_passes[i].name) == len && memcmp(ps_passes[i].name, name, len) == 0)
      return &ps_passes[i];
  return NULL;
}

/* The default pipelines (docs/passes.md §2 explains the order). No
 * smem-stencil: on the one GPU measured (an H200, bench/results/
 * gpu-h200.md) its shared-memory tiles were slower than the plain kernels
 * in 2 of 3 benchmarks (0.74x, 0.76x; 1.05x for the third), L1 and L2
 * catching the reuse; "O2,smem-stencil" asks for them. */
const char *ps_level_pipeline(int level) {
  static const char *const levels[4] = {
      "",
      "simplify,inline,simplify,cse",
      "simplify,inline,simplify,cse,fuse,hoist,shape,sequentialise",
      "simplify,inline,simplify,cse,fuse,hoist,cse,fuse,shape,sequentialise",
  };
  if (level < 0)
    level = 0;
  if (level > 3)
    level = 3;
  return levels[level];
}

void ps_report_free(ac_context *ctx, ps_report *r) {
  if (!r)
    return;
  ac_free(ctx, r->rows);
  r->rows = NULL;
  r->nrows = 0;
}

/* ---- pipelines ---- */

/* The pipeline as a list of passes, levels expanded. A level inside a
 * level's own list cannot occur (those lists name passes only). */
typedef struct ps_list {
  const ps_pass **v;
  size_t n, cap;
} ps_list;

static bool level_name(const char *s, size_t len, int *level) {
  if (len == 2 && s[0] == 'O' && s[1] >= '0' && s[1] <= '3') {
    *level = s[1] - '0';
    return true;
  }
  return false;
}

static ac_status unknown_pass(ac_context *ctx, const char *s, size_t len, ac_error **err) {
  ir_buf names;
  ir_buf_init(&names, ctx);
  for (size_t i = 0; i < ps_npasses; i++)
    ir_buf_printf(&names, "%s%s", i ? ", " : "", ps_passes[i].name);
  ac_error *x = ir_error(ctx, AC_ERR_INVALID, NULL, (ir_loc){0, 0},
                         "unknown pass '%.*s' (passes: %s; levels: O0, O1, O2, O3)", (int)len, s,
                         ir_buf_cstr(&names));
  ir_buf_free(&names);
  return ir_report(err, x, AC_ERR_INVALID);
}

static ac_status list_parse(ac_context *ctx, const char *list, bool expand, ps_list *out,
                            ac_error **err) {
  const char *s = list ? list : "";
  while (*s) {
    const char *e = strchr(s, ',');
    size_t len = e ? (size_t)(e - s) : strlen(s);
    int level;
    if (len == 0 || (len == 1 && s[0] == '-')) {
      /* "a,,b" or a trailing comma: say so rather than guess */
      return ir_report(err, ir_error(ctx, AC_ERR_INVALID, NULL, (ir_loc){0, 0},
                                     "empty pass name in pipeline '%s'", list),
                       AC_ERR_INVALID);
    } else if (level_name(s, len, &level)) {
      if (expand) {
        ac_status st = list_parse(ctx, ps_level_pipeline(level), false, out, err);
        if (st != AC_OK)
          return st;
      }
    } else if (s[0] == '-') {
      /* "-NAME": every run of NAME so far is dropped ("O2,-fuse") */
      if (level_name(s + 1, len - 1, &level))
        return ir_report(err, ir_error(ctx, AC_ERR_INVALID, NULL, (ir_loc){0, 0},
                                       "'%.*s' in pipeline '%s': only passes can be removed",
                                       (int)len, s, list),
                         AC_ERR_INVALID);
      const ps_pass *p = ps_find(s + 1, len - 1);
      if (!p)
        return unknown_pass(ctx, s + 1, len - 1, err);
      size_t k = 0;
      for (size_t i = 0; out && i < out->n; i++)
        if (out->v[i] != p)
          out->v[k++] = out->v[i];
      if (out)
        out->n = k;
    } else {
      const ps_pass *p = ps_find(s, len);
      if (!p)
        return unknown_pass(ctx, s, len, err);
      if (out) {
        if (!ac_grow(ctx, (void **)&out->v, &out->cap, out->n + 1, sizeof *out->v))
          return ir_report(err, NULL, AC_ERR_NOMEM);
        out->v[out->n++] = p;
      }
    }
    s += len;
    if (*s == ',' && !*++s)
      return ir_report(err, ir_error(ctx, AC_ERR_INVALID, NULL, (ir_loc){0, 0},
                                     "empty pass name in pipeline '%s'", list),
                       AC_ERR_INVALID);
  }
  return AC_OK;
}

ac_status ps_check_pipeline(ac_context *ctx, const char *list, ac_error **err) {
  return list_parse(ctx, list, false, NULL, err);
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Prints m to a string (ac_string_destroy / ac_free). */
static char *module_text(ac_module *m, ac_error **err) {
  ir_buf b;
  ir_buf_init(&b, m->ctx);
  if (ir_print_module(m, &b, err) != AC_OK) {
    ir_buf_free(&b);
    return NULL;
  }
  if (b.oom) {
    ir_buf_free(&b);
    ir_report(err, NULL, AC_ERR_NOMEM);
    return NULL;
  }
  ir_buf_cstr(&b);
  return ir_buf_take(&b);
}

/* The round trip of --verify-each: text parses, checks and prints again as
 * the same text. */
static ac_status round_trip(ac_module *m, const ps_pass *p, ac_error **err) {
  ac_context *ctx = m->ctx;
  char *a = module_text(m, err);
  if (!a)
    return m->oom ? AC_ERR_NOMEM : AC_ERR_INTERNAL;
  ac_module *t = NULL;
  ac_error *perr = NULL;
  ac_status st = ac_module_parse(ctx, m->name ? m->name : "<pass>", a, strlen(a), &t, &perr);
  char *b = st == AC_OK ? module_text(t, err) : NULL;
  if (st != AC_OK) {
    st = ir_report(err,
                   ir_error(ctx, AC_ERR_INTERNAL, NULL, (ir_loc){0, 0},
                            "after pass %s: the printed module does not parse again: %s", p->name,
                            perr ? ac_error_message(perr) : "out of memory"),
                   AC_ERR_INTERNAL);
  } else if (!b) {
    st = AC_ERR_INTERNAL;
  } else if (strcmp(a, b) != 0) {
    st = ir_report(err,
                   ir_error(ctx, AC_ERR_INTERNAL, NULL, (ir_loc){0, 0},
                            "after pass %s: print -> parse -> print is not a fixed point",
                            p->name),
                   AC_ERR_INTERNAL);
  }
  ac_error_destroy(perr);
  ac_module_destroy(t);
  ac_free(ctx, a);
  ac_free(ctx, b);
  return st;
}

/* Runs one pass and re-verifies. */
static ac_status run_one(ac_module *m, const ps_pass *p, const ps_options *o, ps_stat_row *row,
                         ac_error **err) {
  ps_ctx c;
  memset(&c, 0, sizeof c);
  c.m = m;
  c.ctx = m->ctx;
  c.target = o ? o->target : PS_TARGET_ANY;
  c.warn = o ? o->warn : NULL;
  c.warn_ud = o ? o->warn_ud : NULL;
  c.entry = o ? o->entry : 0;
  c.err = err;
  double t0 = now_seconds();
  ac_status st = p->run(&c);
  if (st == AC_OK && m->oom)
    st = ir_report(err, NULL, AC_ERR_NOMEM);
  if (st == AC_OK) {
    ac_error *verr = NULL;
    st = ir_check_module(m, &verr);
    if (st != AC_OK) {
      /* a pass that breaks the IR is a compiler bug: say which pass */
      ac_status code = st == AC_ERR_NOMEM ? st : AC_ERR_INTERNAL;
      st = ir_report(err,
                     verr ? ir_error(m->ctx, code, m, (ir_loc){verr->line, verr->col},
                                     "after pass %s the module does not verify: %s", p->name,
                                     verr->message ? verr->message : "")
                          : NULL,
                     code);
      ac_error_destroy(verr);
    }
  }
  if (st == AC_OK && o && o->verify_each)
    st = round_trip(m, p, err);
  if (row) {
    row->pass = p;
    memcpy(row->counters, c.counters, sizeof row->counters);
    row->seconds = now_seconds() - t0;
  }
  return st;
}

ac_status ps_run_pipeline(ac_module *m, const char *list, const ps_options *o, ps_report *rep,
                          ac_error **err) {
  ac_context *ctx = m->ctx;
  ps_list l = {0};
  ac_status st = list_parse(ctx, list, true, &l, err);
  ps_stat_row *rows = NULL;
  if (st == AC_OK && l.n && rep) {
    rows = ac_alloc(ctx, l.n * sizeof *rows);
    if (!rows)
      st = ir_report(err, NULL, AC_ERR_NOMEM);
    else
      memset(rows, 0, l.n * sizeof *rows);
  }
  size_t done = 0;
  for (; st == AC_OK && done < l.n; done++) {
    st = run_one(m, l.v[done], o, rows ? &rows[done] : NULL, err);
    bool print = o && o->print_fn &&
                 (o->print == PS_PRINT_AFTER_ALL ||
                  (o->print == PS_PRINT_AFTER_ONE && o->print_pass &&
                   strcmp(o->print_pass, l.v[done]->name) == 0));
    if (st == AC_OK && print) {
      char *text = module_text(m, err);
      if (!text)
        st = m->oom ? AC_ERR_NOMEM : AC_ERR_INTERNAL;
      else
        o->print_fn(o->print_ud, l.v[done]->name, text);
      ac_free(ctx, text);
    }
  }
  if (rep) {
    ps_report_free(ctx, rep);
    rep->rows = rows;
    rep->nrows = rows ? done : 0;
  } else {
    ac_free(ctx, rows);
  }
  ac_free(ctx, l.v);
  return st;
}

void ps_warn_context(void *ud, const ac_module *m, ir_loc loc, const char *msg) {
  (void)ud;
  ir_ctx_warn(m->ctx, m->name, loc.line, loc.col, msg);
}

ac_status ac_module_run_passes(ac_module *m, const char *passes, ac_error **err) {
  if (err)
    *err = NULL;
  if (!m)
    return AC_ERR_INVALID;
  /* the passes rely on the verifier's types and on a valid program */
  ac_status st = ir_check_module(m, err);
  return st == AC_OK ? ps_run_pipeline(m, passes, NULL, NULL, err) : st;
}
