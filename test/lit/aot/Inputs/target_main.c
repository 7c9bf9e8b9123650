/* test/lit/aot/Inputs/target_main.c [PATH]: opens prog's code through the
 * generated header prog.h (-I picks which one), from PATH or the header's
 * default, and prints the header's target and what prog_open says. */
#include "prog.h"

#include <stdio.h>

int main(int argc, char **argv) {
  ac_context *ctx = ac_context_create();
  prog_lib lib;
  ac_error *err = NULL;
  printf("header for the %s\n", PROG_ARRAYC_TARGET);
  int rc = 0;
  if (prog_open(ctx, argc > 1 ? argv[1] : NULL, &lib, &err) != AC_OK) {
    printf("%s", ac_error_text(err));
    rc = 1;
  } else {
    printf("opened %s\n", ac_backend_name(ac_library_backend(lib.lib)));
    prog_close(&lib);
  }
  ac_error_destroy(err);
  ac_context_destroy(ctx);
  return rc;
}
