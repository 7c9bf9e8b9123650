/* test/docs/check_snippets.py's wrapper for constructor calls of
 * api.md §5.2 on values of any kind: a builder `b` and the values the
 * calls name (invalid ones: the calls must compile; the builder reports
 * the misuse later, as api.md says, and must not crash). */
#include <arrayc/arrayc.h>

int main(void) {
  ac_context *ctx = ac_context_create();
  ac_module *m = ac_module_create(ctx, "doc");
  ac_builder *b = ac_builder_create(m);
  ac_value x = {0}, y = {0}, lam = {0}, xs = {0}, ys = {0}, z = {0}, a = {0}, lo = {0}, hi = {0},
           step = {0};
  /* @SNIPPET@ */
  ac_builder_destroy(b);
  ac_module_destroy(m);
  ac_context_destroy(ctx);
  return 0;
}
