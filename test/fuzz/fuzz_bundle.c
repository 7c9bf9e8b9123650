/* test/fuzz/fuzz_bundle.c: libFuzzer target for what the runtime library
 * reads from ahead-of-time files (runtime/bundle.h).
 *
 * Each input is tried twice: as bundle text (rt_bundle_parse; an accepted
 * bundle is printed, and the printed text must parse again and print
 * identically), and as the start of a .ptx file (rt_ptx_bundle_text, whose
 * bundle, when the block is intact, goes through the same parse). Crashes,
 * hangs, leaks and sanitizer reports are the findings; a fixpoint failure
 * aborts on purpose.
 *
 * Build (clang only): cmake -DCMAKE_C_COMPILER=clang -DARRAYC_FUZZ=ON ...
 * Run:   ./build-fuzz/test/fuzz_bundle -max_len=8192 corpus/
 *        (seed the corpus with .ptx files and bundles from `arrayc --target=gpu`)
 */
#include "arrayc/arrayc.h"
#include "runtime/bundle.h"

#include "ir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static void parse_and_print(ac_context *ctx, const char *text, size_t len) {
  rt_bundle *b = NULL;
  if (rt_bundle_parse(ctx, "fuzz", text, len, &b, NULL) != AC_OK)
    return;
  char *out = NULL, *out2 = NULL;
  size_t n = 0, n2 = 0;
  rt_bundle *b2 = NULL;
  if (rt_bundle_print(ctx, b, &out, &n, NULL) == AC_OK) {
    if (rt_bundle_parse(ctx, "fuzz", out, n, &b2, NULL) != AC_OK ||
        rt_bundle_print(ctx, b2, &out2, &n2, NULL) != AC_OK || n != n2 ||
        memcmp(out, out2, n) != 0) {
      fprintf(stderr, "a printed bundle does not read back the same:\n%s\n", out);
      abort();
    }
  }
  ac_free(ctx, out);
  ac_free(ctx, out2);
  rt_bundle_free(ctx, b2);
  rt_bundle_free(ctx, b);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  ac_context *ctx = ac_context_create();
  if (!ctx)
    return 0;
  parse_and_print(ctx, (const char *)data, size);
  char *text = NULL;
  size_t len = 0;
  uint64_t hash = 0;
  if (rt_ptx_bundle_text(ctx, "fuzz.ptx", (const char *)data, size, &text, &len, &hash, NULL) ==
      AC_OK)
    parse_and_print(ctx, text, len);
  ac_free(ctx, text);
  ac_context_destroy(ctx);
  return 0;
}
