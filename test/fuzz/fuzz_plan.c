/* test/fuzz/fuzz_plan.c: libFuzzer target for the plan text parser and
 * the plan validator (runtime/plan_text.c, plan.c, plan_slots.c): what
 * the runtime library reads from every ahead-of-time file (a bundle's
 * `plan N` blocks) and `arrayc --read-plan` reads from a file.
 *
 * Any byte string is parsed (pl_parse, which validates); an accepted plan
 * is printed, and the printed text must parse again into an equal plan
 * (pl_equal) that prints identically (the canonical-printing fixpoint).
 * Crashes, hangs, leaks and sanitizer reports are the findings; a
 * fixpoint failure aborts on purpose. The plan is not run: a plan's
 * `while` may loop for ever by design, as the language's may.
 *
 * Build (clang only): cmake -DCMAKE_C_COMPILER=clang -DARRAYC_FUZZ=ON ...
 * Run:   ./build-fuzz/test/fuzz_plan -max_len=8192 corpus/ test/fuzz/plans
 *        (test/fuzz/plans: real plans, `arrayc --emit=plan` of the
 *        examples for the CPU and the GPU; test/fuzz/run_fuzz.sh runs it
 *        for a bounded time)
 */
#include "arrayc/arrayc.h"
#include "runtime/plan_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  ac_context *ctx = ac_context_create();
  if (!ctx)
    return 0;
  pl_plan *p = NULL, *p2 = NULL;
  ac_error *err = NULL;
  char *out = NULL, *out2 = NULL;
  if (pl_parse(ctx, "fuzz.plan", (const char *)data, size, &p, &err) == AC_OK) {
    if (pl_print(p, &out, NULL) != AC_OK) {
      fprintf(stderr, "an accepted plan does not print\n");
      abort();
    }
    if (pl_parse(ctx, "printed.plan", out, strlen(out), &p2, NULL) != AC_OK || !pl_equal(p, p2) ||
        pl_print(p2, &out2, NULL) != AC_OK || strcmp(out, out2) != 0) {
      fprintf(stderr, "a printed plan does not read back the same:\n%s\n", out);
      abort();
    }
  }
  ac_error_destroy(err);
  ac_string_destroy(ctx, out);
  ac_string_destroy(ctx, out2);
  pl_destroy(p2);
  pl_destroy(p);
  ac_context_destroy(ctx);
  return 0;
}
