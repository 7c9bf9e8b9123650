/* A batch of 10000 protein alignments scored at once (docs/language.md
 * §7.14, issue 16's observable results): examples/recurrences/protein.ac's
 * `scores` (Smith-Waterman with BLOSUM62 and affine gaps 12/1, one
 * recurrence per pair inside a generate) on 10000 random pairs of lengths
 * 100..500 on the CPU backend, every score against ref_protein_scores, a
 * plain C loop (bench/ref/ref_dp.c) given the matrix the program's own
 * blosum62() returns; then the first pairs on the interpreter (the meaning)
 * and the SIMT emulator (the GPU's kernels on the CPU), which are about
 * 1000 times slower (6 pairs; 2 in a sanitizer build). ARRAYC_PROTEIN_PAIRS
 * overrides 10000; examples/recurrences.test checks the same functions against
 * independent Python on small inputs and known answers.
 */
#include "arrayc/arrayc.h"
#include "ref_dp.h"
#include "unit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void report(const char *what, ac_error *e) {
  fprintf(stderr, "  %s: %s", what, e ? ac_error_text(e) : "failed\n");
  ac_error_destroy(e);
}

/* `scores` of the first npairs pairs on backend be into out; false (after
 * reporting why) if it cannot run. */
static bool run_scores(ac_module *m, ac_backend be, const ref_pairs *p, int64_t npairs,
                       int32_t *out) {
  ac_context *ctx = ac_module_context(m);
  ac_function *fn = NULL;
  ac_error *e = NULL;
  if (ac_function_create(m, "scores", be, &fn, &e) != AC_OK) {
    report("compiling scores", e);
    return false;
  }
  int64_t es[1] = {p->so[npairs]}, et[1] = {p->to[npairs]}, eo[1] = {npairs + 1};
  ac_datum args[4] = {{.kind = AC_DATUM_ARRAY,
                       .type = AC_U8,
                       .array = ac_array_borrow(ctx, AC_U8, 1, es, p->s, NULL, NULL, NULL)},
                      {.kind = AC_DATUM_ARRAY,
                       .type = AC_I64,
                       .array = ac_array_borrow(ctx, AC_I64, 1, eo, p->so, NULL, NULL, NULL)},
                      {.kind = AC_DATUM_ARRAY,
                       .type = AC_U8,
                       .array = ac_array_borrow(ctx, AC_U8, 1, et, p->t, NULL, NULL, NULL)},
                      {.kind = AC_DATUM_ARRAY,
                       .type = AC_I64,
                       .array = ac_array_borrow(ctx, AC_I64, 1, eo, p->to, NULL, NULL, NULL)}};
  ac_datum res;
  bool ok = args[0].array && args[1].array && args[2].array && args[3].array;
  if (ok && ac_function_call(fn, args, 4, &res, 1, &e) != AC_OK) {
    report("calling scores", e);
    ok = false;
  } else if (ok) {
    ok = res.kind == AC_DATUM_ARRAY && ac_array_size(res.array) == npairs;
    if (ok)
      memcpy(out, ac_array_data(res.array), (size_t)npairs * sizeof *out);
    ac_datum_release(&res);
  }
  for (int i = 0; i < 4; i++)
    ac_datum_release(&args[i]);
  ac_function_destroy(fn);
  return ok;
}

static int64_t mismatches(const int32_t *want, const int32_t *got, int64_t n, const char *be) {
  int64_t bad = 0;
  for (int64_t i = 0; i < n; i++)
    if (want[i] != got[i] && bad++ < 5)
      fprintf(stderr, "  %s: pair %lld scores %d, want %d\n", be, (long long)i, got[i], want[i]);
  return bad;
}

/* The program, the pairs, the matrix and the C scores, shared by the
 * tests (made by the first). */
static struct {
  bool tried, ok;
  ac_context *ctx;
  ac_module *m;
  char *text;
  ref_pairs p;
  int32_t matrix[21 * 21];
  int32_t *want, *got;
} B;

static bool setup(void) {
  if (B.tried)
    return B.ok;
  B.tried = true;
  const char *root = getenv("ARRAYC_SOURCE_DIR");
  CHECK(root != NULL);
  if (!root)
    return false;
  char path[4096];
  snprintf(path, sizeof path, "%s/examples/recurrences/protein.ac", root);
  B.text = unit_read_file(path, NULL);
  CHECK(B.text != NULL);
  if (!B.text)
    return false;
  int64_t npairs = 10000;
  const char *env = getenv("ARRAYC_PROTEIN_PAIRS");
  if (env && atoll(env) > 0)
    npairs = atoll(env);
  B.ctx = ac_context_create();
  ac_error *e = NULL;
  if (ac_module_parse(B.ctx, path, B.text, strlen(B.text), &B.m, &e) != AC_OK) {
    report("parsing protein.ac", e);
    CHECK(!"protein.ac parses");
    return false;
  }
  if (!ref_pairs_make(&B.p, npairs, 100, 500, 16)) {
    CHECK(!"memory for the pairs");
    return false;
  }
  ac_function *fm = NULL;
  ac_datum mat;
  if (ac_function_create(B.m, "blosum62", AC_BACKEND_INTERP, &fm, &e) != AC_OK ||
      ac_function_call(fm, NULL, 0, &mat, 1, &e) != AC_OK) {
    report("blosum62()", e);
    ac_function_destroy(fm);
    CHECK(!"blosum62() runs");
    return false;
  }
  ac_function_destroy(fm);
  CHECK(ac_array_size(mat.array) == 21 * 21);
  if (ac_array_size(mat.array) == 21 * 21)
    memcpy(B.matrix, ac_array_data(mat.array), sizeof B.matrix);
  ac_datum_release(&mat);
  B.want = malloc((size_t)npairs * sizeof *B.want);
  B.got = malloc((size_t)npairs * sizeof *B.got);
  if (!B.want || !B.got || !ref_pairs_scores(&B.p, B.matrix, 12, 1, B.want)) {
    CHECK(!"memory for the scores");
    return false;
  }
  fprintf(stderr, "  %lld pairs of lengths 100..500 (%.3g cells)\n", (long long)npairs, B.p.cells);
  return B.ok = true;
}

UNIT_TEST(cpu_scores_every_pair) {
  if (!setup())
    return;
  CHECK(run_scores(B.m, AC_BACKEND_CPU, &B.p, B.p.npairs, B.got));
  CHECK(mismatches(B.want, B.got, B.p.npairs, "cpu") == 0);
}

/* The meaning, and the GPU's kernels under the emulator, on the first
 * pairs. */
UNIT_TEST(interp_and_emulator_score_the_first_pairs) {
  if (!setup())
    return;
#ifdef ARRAYC_TEST_SANITIZED
  int64_t few = B.p.npairs < 2 ? B.p.npairs : 2;
#else
  int64_t few = B.p.npairs < 6 ? B.p.npairs : 6;
#endif
  CHECK(run_scores(B.m, AC_BACKEND_INTERP, &B.p, few, B.got));
  CHECK(mismatches(B.want, B.got, few, "interp") == 0);
  CHECK(run_scores(B.m, AC_BACKEND_SIMT_EMU, &B.p, few, B.got));
  CHECK(mismatches(B.want, B.got, few, "simt-emu") == 0);
  /* everything is released once, after the last test */
  free(B.want), free(B.got);
  ref_pairs_free(&B.p);
  ac_module_destroy(B.m);
  ac_context_destroy(B.ctx);
  free(B.text);
}

UNIT_MAIN(cpu_scores_every_pair, interp_and_emulator_score_the_first_pairs)
