/* test/unit/test_bundle.c: bundles (runtime/bundle.h), the text that
 * ahead-of-time code files carry: printing and parsing back, the block in
 * a PTX file, the checks for stale and damaged files, and bad input of
 * every kind (never a crash: ASan and UBSan watch). */
#include "unit.h"

#include "arrayc/arrayc.h"
#include "runtime/bundle.h"
#include "ir.h"

#include "unit_oom.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char plan_inc[] = "plan inc\n"
                               "slots 4\n"
                               "param %0 : f32[]\n"
                               "result %2 : f32[]\n"
                               "site 0 at 1:30 \"negative extent %lld\"\n"
                               "kernel k0 map \"bb_inc_k0_map\" grain 16384 uses %0 %1 %2 %3\n"
                               "body {\n"
                               "  alloc %2 : f32[] = [%1] site 0\n"
                               "  launch k0 n %1 chunks chunks(%1, 16384)\n"
                               "}\n";
static const char plan_pair[] =
    "plan pair\n"
    "slots 3\n"
    "param %0 : i32\n"
    "param %1 : bool\n"
    "result %2 : i32\n"
    "kernel k0 scalar \"bb_pair_k0_scalar\" grain 1 uses %0 %1 %2 writes %2\n"
    "body {\n"
    "  launch k0 n 1 chunks 1\n"
    "}\n";

/* A bundle's text as arrayc writes it, with the compiler given. */
static char *golden(const char *compiler) {
  static char buf[4096];
  snprintf(buf, sizeof buf,
           "arrayc-bundle 2\ncompiler \"%s\"\ntarget cpu \"x86_64-pc-linux-gnu\" \"generic\"\n"
           "source \"b \\\"q\\\".ac\"\nprefix \"bb\"\nsource-text 14\nfn inc(x)\n  x\n\n"
           "function \"inc\"\nparam \"xs\" 1 \"f32[]\"\nreturns \"f32[]\"\narg \"xs\" "
           "f32[]\nresult \"\" f32[]\nplan %zu\n%s\n"
           "function \"pair\"\nparam \"p\" 2 \"(i32, bool)\"\nreturns \"i32\"\n"
           "arg \"p.0\" i32\narg \"p.1\" bool\nresult \"\" i32\nplan %zu\n%s\n"
           "end\n",
           compiler, strlen(plan_inc), plan_inc, strlen(plan_pair), plan_pair);
  return buf;
}

UNIT_TEST(round_trip) {
  ac_context *ctx = ac_context_create();
  const char *text = golden(rt_build_id());
  rt_bundle *b = NULL;
  ac_error *err = NULL;
  CHECK_EQ_INT(rt_bundle_parse(ctx, "t", text, strlen(text), &b, &err), AC_OK);
  if (err)
    printf("%s", ac_error_text(err));
  CHECK(b && !b->gpu && b->nfns == 2);
  if (b) {
    CHECK_STR(b->source, "b \"q\".ac");
    CHECK_STR(b->cpu, "generic");
    CHECK(b->source_text && b->source_len == 14 && strcmp(b->source_text, "fn inc(x)\n  x\n") == 0);
    CHECK_STR(b->fns[1].args[1].name, "p.1");
    CHECK(b->fns[1].nparams == 1 && b->fns[1].params[0].nleaves == 2);
    CHECK_STR(b->fns[1].params[0].name, "p");
    CHECK_STR(b->fns[1].params[0].type, "(i32, bool)");
    CHECK_STR(b->fns[1].result_type, "i32");
    CHECK_EQ_INT(b->fns[1].args[1].type, AC_BOOL);
    CHECK_EQ_INT(b->fns[0].res[0].rank, 1);
    /* error positions name the source file */
    CHECK_STR(b->fns[0].plan->file, "b \"q\".ac");
    CHECK_EQ_INT(rt_bundle_check(ctx, "t", b, NULL), AC_OK);
    char *again = NULL;
    size_t len = 0;
    CHECK_EQ_INT(rt_bundle_print(ctx, b, &again, &len, NULL), AC_OK);
    CHECK(again && len == strlen(text));
    if (again)
      CHECK_STR(again, text);
    ac_free(ctx, again);
  }
  rt_bundle_free(ctx, b);
  ac_context_destroy(ctx);
}

static const char *error_of(ac_context *ctx, const char *text, ac_status *st) {
  static char msg[512];
  rt_bundle *b = NULL;
  ac_error *err = NULL;
  *st = rt_bundle_parse(ctx, "t.ptx", text, strlen(text), &b, &err);
  snprintf(msg, sizeof msg, "%s", err ? ac_error_message(err) : "");
  ac_error_destroy(err);
  rt_bundle_free(ctx, b);
  return msg;
}

/* Replaces the first `from` in the golden text by `to`. */
static char *edited(const char *from, const char *to) {
  static char buf[4096];
  const char *g = golden(rt_build_id());
  const char *at = strstr(g, from);
  CHECK(at != NULL);
  if (!at)
    return strcpy(buf, g);
  snprintf(buf, sizeof buf, "%.*s%s%s", (int)(at - g), g, to, at + strlen(from));
  return buf;
}

UNIT_TEST(bad_bundles) {
  ac_context *ctx = ac_context_create();
  static const struct {
    const char *from, *to, *msg;
  } cases[] = {
      {"arrayc-bundle 2", "arrayc-bundle 1", "bundle line 1: bundle format 1; this runtime reads"},
      {"arrayc-bundle 2", "arrayc-bundle 3", "bundle line 1: bundle format 3; this runtime reads"},
      {"arrayc-bundle 2", "arrayc-bundel 2", "bundle line 1: expected 'arrayc-bundle'"},
      {"target cpu", "target tpu", "bundle line 3: expected 'cpu' or 'gpu'"},
      {"target cpu \"x86_64-pc-linux-gnu\" \"generic\"", "target gpu sm_80",
       "the plan of 'inc' is not for the bundle's target"},
      {"arg \"xs\" f32[]", "arg \"xs\" f64[]", "the leaves of 'inc' do not agree with its plan"},
      {"arg \"xs\" f32[]", "arg \"xs\" f32[,]", "the leaves of 'inc' do not agree"},
      {"arg \"xs\" f32[]", "arg \"xs\" q32[]", "bundle line 12: expected a scalar type"},
      {"arg \"xs\" f32[]", "arg \"xs f32[]", "bundle line 12: unterminated string"},
      {"arg \"xs\" f32[]", "arg \"x\\qs\" f32[]", "unknown escape '\\q'"},
      {"arg \"xs\" f32[]", "arg \"x\\x00s\" f32[]", "a NUL byte in a string"},
      {"result \"\" f32[]\n", "", "the leaves of 'inc' do not agree"},
      {"param \"xs\" 1", "param \"xs\" 2", "the parameters of 'inc' do not agree with its leaves"},
      {"param \"xs\" 1", "param \"ys\" 1", "the parameters of 'inc' do not agree"},
      {"param \"p\" 2", "param \"p\" 1", "the parameters of 'pair' do not agree"},
      {"param \"xs\" 1 \"f32[]\"\n", "", "the parameters of 'inc' do not agree"},
      {"returns \"f32[]\"\n", "", "bundle line 11: expected 'param'"},
      {"param \"xs\" 1", "param \"xs\" x", "expected a number"},
      {"function \"pair\"", "function \"inc\"", "function 'inc' twice"},
      {"plan 2", "plan 99999", "the plan runs past the end of the bundle"},
      {"plan 2", "plan 1", ""}, /* a plan cut short: the plan parser's error */
      {"plan 2", "plan x", "expected a number"},
      {"plan 2", "plan 99999999999999999999999", "number too large"},
      {"end\n", "end\nmore\n", "text after 'end'"},
      {"end\n", "", "unexpected end of the bundle"},
      {"prefix \"bb\"", "prefix \"bb\" x", "unexpected text at the end of the line"},
      {"source-text 14", "source-text 9999", "the source text runs past the end of the bundle"},
      {"source-text 14", "source-text 12", "expected a new line after the source text"},
      {"source-text 14", "source-text x", "expected a number"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ac_status st;
    const char *msg = error_of(ctx, edited(cases[i].from, cases[i].to), &st);
    CHECK(st != AC_OK);
    if (!strstr(msg, cases[i].msg)) {
      printf("case %zu: got '%s', want '%s'\n", i, msg, cases[i].msg);
      CHECK(0);
    }
  }
  ac_context_destroy(ctx);
}

UNIT_TEST(stale) {
  ac_context *ctx = ac_context_create();
  const char *text = golden("0.0.1 gold");
  rt_bundle *b = NULL;
  CHECK_EQ_INT(rt_bundle_parse(ctx, "t", text, strlen(text), &b, NULL), AC_OK);
  ac_error *err = NULL;
  CHECK(b && rt_bundle_check(ctx, "x.ptx", b, &err) == AC_ERR_INVALID);
  CHECK(err && strstr(ac_error_message(err), "x.ptx is stale: it was made by arrayc 0.0.1 gold"));
  ac_error_destroy(err);
  rt_bundle_free(ctx, b);
  ac_context_destroy(ctx);
}

UNIT_TEST(ptx_block) {
  ac_context *ctx = ac_context_create();
  const char *text = golden(rt_build_id());
  size_t tlen = strlen(text);
  char *ptx = NULL, *back = NULL;
  size_t plen = 0, blen = 0;
  uint64_t hash = 0;
  CHECK_EQ_INT(rt_ptx_with_bundle(ctx, text, tlen, ".version 7.0\n", &ptx, &plen, NULL), AC_OK);
  CHECK(ptx && strncmp(ptx, "//arrayc-bundle ", 16) == 0);
  CHECK_EQ_INT(rt_ptx_bundle_text(ctx, "t.ptx", ptx, plen, &back, &blen, &hash, NULL), AC_OK);
  CHECK(back && blen == tlen && memcmp(back, text, tlen) == 0);
  CHECK(hash == rt_bundle_hash(text, tlen));
  ac_free(ctx, back);
  /* every truncation and every changed byte of the block is caught or,
   * where the change is outside what the checksum covers (the first
   * line's numbers), refused by them */
  char *buf = malloc(plen + 1);
  size_t block = (size_t)(strstr(ptx, "//arrayc-bundle-end\n") - ptx) + 20;
  int caught = 0;
  for (size_t pos = 0; pos < block; pos++) {
    memcpy(buf, ptx, plen + 1);
    buf[pos] = buf[pos] == 'x' ? 'y' : 'x';
    ac_error *err = NULL;
    back = NULL;
    ac_status st = rt_ptx_bundle_text(ctx, "t.ptx", buf, plen, &back, &blen, &hash, &err);
    if (st != AC_OK) {
      caught++;
      CHECK(err && strstr(ac_error_message(err), "t.ptx"));
    } else {
      printf("change at %zu not caught\n", pos);
      CHECK(0);
    }
    ac_error_destroy(err);
    ac_free(ctx, back);
    err = NULL;
    back = NULL;
    st = rt_ptx_bundle_text(ctx, "t.ptx", ptx, pos, &back, &blen, &hash, &err);
    CHECK(st == AC_ERR_INVALID);
    ac_error_destroy(err);
    ac_free(ctx, back);
  }
  CHECK(caught > 100);
  free(buf);
  ac_free(ctx, ptx);
  /* source text whose line looks like the block's end: the length decides */
  const char *tricky_src = "//arrayc-bundle-end\n//x\n";
  char tricky[4096];
  snprintf(tricky, sizeof tricky, "%s", edited("source-text 14\nfn inc(x)\n  x\n\n", ""));
  char *at = strstr(tricky, "prefix \"bb\"\n") + strlen("prefix \"bb\"\n");
  char rest[4096];
  snprintf(rest, sizeof rest, "%s", at);
  snprintf(at, sizeof tricky - (size_t)(at - tricky), "source-text %zu\n%s\n%s",
           strlen(tricky_src), tricky_src, rest);
  rt_bundle *tb = NULL;
  CHECK_EQ_INT(rt_bundle_parse(ctx, "t", tricky, strlen(tricky), &tb, NULL), AC_OK);
  CHECK(tb && tb->source_text && strcmp(tb->source_text, tricky_src) == 0);
  rt_bundle_free(ctx, tb);
  ptx = back = NULL;
  CHECK_EQ_INT(rt_ptx_with_bundle(ctx, tricky, strlen(tricky), ".version 7.0\n", &ptx, &plen,
                                  NULL),
               AC_OK);
  CHECK_EQ_INT(rt_ptx_bundle_text(ctx, "t.ptx", ptx, plen, &back, &blen, &hash, NULL), AC_OK);
  CHECK(back && blen == strlen(tricky) && memcmp(back, tricky, blen) == 0);
  ac_free(ctx, back);
  ac_free(ctx, ptx);
  ac_context_destroy(ctx);
}

/* Every byte of the bundle replaced by a few others, and every
 * truncation: either an error naming a bundle line or the plan, or a
 * bundle that prints back to text that parses again. */
UNIT_TEST(mutations) {
  ac_context *ctx = ac_context_create();
  const char *g = golden(rt_build_id());
  size_t len = strlen(g);
  char *buf = malloc(len + 1);
  static const char subs[] = {'\0', '"', '\\', ' ', '\n', '[', ',', '9', 'x'};
  int parsed = 0, rejected = 0;
  for (size_t pos = 0; pos <= len; pos++) {
    for (size_t s = 0; s <= sizeof subs; s++) {
      size_t n = len;
      memcpy(buf, g, len + 1);
      if (s == sizeof subs)
        n = pos;
      else if (pos < len)
        buf[pos] = subs[s];
      else
        continue;
      rt_bundle *b = NULL;
      ac_error *err = NULL;
      ac_status st = rt_bundle_parse(ctx, "m", buf, n, &b, &err);
      if (st == AC_OK) {
        parsed++;
        char *text = NULL;
        size_t tl = 0;
        rt_bundle *c = NULL;
        CHECK(rt_bundle_print(ctx, b, &text, &tl, NULL) == AC_OK &&
              rt_bundle_parse(ctx, "m", text, tl, &c, NULL) == AC_OK);
        rt_bundle_free(ctx, c);
        ac_free(ctx, text);
      } else {
        rejected++;
        CHECK(err && (st == AC_ERR_INVALID || st == AC_ERR_SYNTAX) &&
              strstr(ac_error_text(err), "m"));
      }
      ac_error_destroy(err);
      rt_bundle_free(ctx, b);
    }
  }
  printf("mutations: %d parsed, %d rejected\n", parsed, rejected);
  CHECK(parsed > 0 && rejected > 1000);
  free(buf);
  ac_context_destroy(ctx);
}

UNIT_TEST(out_of_memory) {
  const char *text = golden(rt_build_id());
  int ok = 0, failed = 0;
  for (long k = 0; k < 5000 && ok == 0; k++) {
    unit_failing f = {k};
    ac_context *ctx = ac_context_create_with_allocator(unit_fail_realloc, &f);
    if (!ctx)
      continue;
    rt_bundle *b = NULL;
    ac_error *err = NULL;
    ac_status st = rt_bundle_parse(ctx, "t", text, strlen(text), &b, &err);
    CHECK(st == AC_OK || st == AC_ERR_NOMEM);
    if (st == AC_OK) {
      char *again = NULL;
      size_t len;
      f.left = -1;
      CHECK_EQ_INT(rt_bundle_print(ctx, b, &again, &len, NULL), AC_OK);
      ac_free(ctx, again);
      ok++;
    } else {
      failed++;
    }
    ac_error_destroy(err);
    rt_bundle_free(ctx, b);
    ac_context_destroy(ctx);
  }
  printf("out of memory: %d runs failed before one succeeded\n", failed);
  CHECK(ok == 1 && failed > 10);
}

/* The first line is exactly what rt_ptx_with_bundle writes: a decimal
 * length, one space, 16 lowercase hex digits. sscanf's %llx used to read it
 * and also took "0x" (a hash starting with "00" edited to "0x" read as the
 * same number, one build id in 256 of them), upper case and a sign. */
UNIT_TEST(ptx_first_line_is_exact) {
  ac_context *ctx = ac_context_create();
  const char *text = "arrayc-bundle 1\n";
  size_t tlen = strlen(text);
  unsigned long long h = (unsigned long long)rt_bundle_hash(text, tlen);
  char hex[17], good[256], bad[256];
  snprintf(hex, sizeof hex, "%016llx", h);
  const char *rest = "//arrayc-bundle 1\n//arrayc-bundle-end\n.version 7.0\n";
  snprintf(good, sizeof good, "//arrayc-bundle %zu %s\n%s", tlen, hex, rest);
  char *back = NULL;
  size_t blen = 0;
  uint64_t hash = 0;
  CHECK_EQ_INT(rt_ptx_bundle_text(ctx, "t.ptx", good, strlen(good), &back, &blen, &hash, NULL),
               AC_OK);
  ac_free(ctx, back);
  char upper[17], zx[17];
  for (int k = 0; k < 17; k++)
    upper[k] = hex[k] >= 'a' && hex[k] <= 'f' ? (char)(hex[k] - 'a' + 'A') : hex[k];
  snprintf(zx, sizeof zx, "0x%.14s",
           hex + 2); /* "00..." as "0x...": the same number if hex[0..1] is "00" */
  const char *heads[] = {upper, zx};
  for (int v = 0; v < 2; v++) {
    if (strcmp(heads[v], hex) == 0)
      continue; /* no letter to change case of */
    snprintf(bad, sizeof bad, "//arrayc-bundle %zu %s\n%s", tlen, heads[v], rest);
    back = NULL;
    CHECK_EQ_INT(rt_ptx_bundle_text(ctx, "t.ptx", bad, strlen(bad), &back, &blen, &hash, NULL),
                 AC_ERR_INVALID);
    ac_free(ctx, back);
  }
  const char *lines[] = {"//arrayc-bundle +%zu %s\n%s", "//arrayc-bundle %zu  %s\n%s",
                         "//arrayc-bundle %zu 0%s\n%s"};
  for (int v = 0; v < 3; v++) {
    snprintf(bad, sizeof bad, lines[v], tlen, hex, rest);
    back = NULL;
    CHECK_EQ_INT(rt_ptx_bundle_text(ctx, "t.ptx", bad, strlen(bad), &back, &blen, &hash, NULL),
                 AC_ERR_INVALID);
    ac_free(ctx, back);
  }
  ac_context_destroy(ctx);
}

UNIT_MAIN(ptx_first_line_is_exact, round_trip, bad_bundles, stale, ptx_block, mutations,
          out_of_memory)
