/* test/lit/aot/Inputs/open_main.c PATH [PREFIX]: opens ahead-of-time
 * output with ac_library_open, as a program without a generated header
 * does, and prints its backend and functions, or the error. */
#include <arrayc/library.h>

#include <stdio.h>

int main(int argc, char **argv) {
  if (argc < 2)
    return 2;
  ac_context *ctx = ac_context_create();
  ac_library *lib = NULL;
  ac_error *err = NULL;
  if (ac_library_open(ctx, argv[1], argc > 2 ? argv[2] : NULL, &lib, &err) != AC_OK) {
    printf("status %d: %s", (int)ac_error_status(err), ac_error_text(err));
    ac_error_destroy(err);
    ac_context_destroy(ctx);
    return 1;
  }
  printf("backend %s\n", ac_backend_name(ac_library_backend(lib)));
  for (size_t i = 0; i < ac_library_num_functions(lib); i++) {
    ac_function *f = NULL;
    if (ac_library_function(lib, ac_library_function_name(lib, i), &f, &err) != AC_OK) {
      printf("%s", ac_error_text(err));
      ac_error_destroy(err);
      continue;
    }
    printf("function %s: %zu args, %zu results, %zu kernels\n", ac_library_function_name(lib, i),
           ac_function_num_args(f), ac_function_num_results(f), ac_function_num_kernels(f));
    ac_function_destroy(f);
  }
  ac_function *none = NULL;
  if (ac_library_function(lib, "nothere", &none, &err) != AC_OK)
    printf("%s", ac_error_text(err));
  ac_error_destroy(err);
  ac_library_close(lib);
  ac_context_destroy(ctx);
  return 0;
}
