/* test/docs/check_snippets.py's wrapper for statements that need a
 * context and nothing else: the body of main, between creating a context
 * `ctx` and destroying it. */
#include <arrayc/arrayc.h>

#include <stdio.h>
#include <string.h>

int main(void) {
  ac_context *ctx = ac_context_create();
  {
    /* @SNIPPET@ */
  }
  ac_context_destroy(ctx);
  return 0;
}
