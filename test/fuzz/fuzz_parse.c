/* test/fuzz/fuzz_parse.c: libFuzzer target for the front end.
 *
 * Any byte string is parsed and verified; a program that is accepted is
 * printed, and the printed text must be accepted again and print
 * identically (the canonical-printing fixpoint). Crashes, hangs, leaks and
 * sanitizer reports are the findings; a fixpoint failure aborts on purpose.
 *
 * Build (clang only): cmake -DCMAKE_C_COMPILER=clang -DARRAYC_FUZZ=ON ...
 * Run:   ./build-fuzz/test/fuzz_parse -max_len=4096 corpus/ test/lit test/bad examples
 */
#include "arrayc/arrayc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  ac_context *ctx = ac_context_create();
  if (!ctx)
    return 0;
  ac_module *m = NULL;
  ac_error *err = NULL;
  if (ac_module_parse(ctx, "fuzz.ac", (const char *)data, size, &m, &err) == AC_OK) {
    char *text = ac_module_print(m, NULL);
    if (text) {
      ac_module *m2 = NULL;
      ac_error *err2 = NULL;
      if (ac_module_parse(ctx, "fuzz.ac", text, strlen(text), &m2, &err2) != AC_OK) {
        fprintf(stderr, "printed text does not re-parse:\n%s\n%s", text, ac_error_text(err2));
        abort();
      }
      char *text2 = ac_module_print(m2, NULL);
      if (!text2 || strcmp(text, text2) != 0) {
        fprintf(stderr, "print is not a fixpoint:\n%s\n----\n%s\n", text, text2 ? text2 : "");
        abort();
      }
      ac_string_destroy(ctx, text2);
      ac_module_destroy(m2);
      ac_string_destroy(ctx, text);
    }
    ac_module_destroy(m);
  } else if (err && ac_error_line(err) == 0 && ac_error_status(err) != AC_ERR_NOMEM) {
    fprintf(stderr, "diagnostic without a position:\n%s", ac_error_text(err));
    abort();
  }
  ac_error_destroy(err);
  ac_context_destroy(ctx);
  return 0;
}
