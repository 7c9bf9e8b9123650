/* test/docs/check_snippets.py's wrapper for statements that build a
 * function: a context `ctx`, a module `m` ("doc"), its builder `b`, the
 * types `f64` and `f32`, an error `err`; then main prints the module. */
#include <arrayc/arrayc.h>

#include <stdio.h>
#include <string.h>

int main(void) {
  ac_context *ctx = ac_context_create();
  ac_module *m = ac_module_create(ctx, "doc");
  ac_builder *b = ac_builder_create(m);
  ac_type f64 = ac_type_scalar(ctx, AC_F64);
  ac_error *err = NULL;
  (void)f64;
  /* @SNIPPET@ */
  if (err) {
    fputs(ac_error_text(err), stdout);
    return 1;
  }
  ac_builder_destroy(b);
  char *text = ac_module_print(m, NULL);
  fputs(text, stdout);
  ac_string_destroy(ctx, text);
  ac_module_destroy(m);
  ac_context_destroy(ctx);
  return 0;
}
