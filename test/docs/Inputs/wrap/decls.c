/* test/docs/check_snippets.py's wrapper for declarations quoted from the
 * public headers: they must agree with the headers (C allows a function to
 * be declared again only with a compatible type), and every function they
 * declare must exist (its address is taken, so the program does not link
 * otherwise). */
#include <arrayc/arrayc.h>

#include <stddef.h>

/* @SNIPPET@ */

static void (*const declared[])(void) = {
    /* @DECLARED@ */
    NULL};

int main(void) {
  (void)declared;
  return 0;
}
