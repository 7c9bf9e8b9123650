/* test/lit/aot/Inputs/sig_main.c PATH: prints the signature of every
 * function of ahead-of-time output (ac_library_open) as the C API reports
 * it (runtime.h, "The signature as declared"); test_runtime.c checks the
 * same for functions compiled from source. */
#include <arrayc/library.h>

#include <stdio.h>

static void leaf(const char *path, ac_scalar sc, unsigned rank) {
  printf(" [%s %s rank %u]", path, ac_scalar_name(sc), rank);
}

static void print_signature(const ac_function *f) {
  printf("fn %s: %zu params, %zu args, %zu results\n", ac_function_name(f),
         ac_function_num_params(f), ac_function_num_args(f), ac_function_num_results(f));
  for (size_t p = 0; p < ac_function_num_params(f); p++) {
    size_t first = 99, count = 99;
    ac_function_param_leaves(f, p, &first, &count);
    printf("  param %zu %s: %s, leaves %zu+%zu:", p, ac_function_param_name(f, p),
           ac_function_param_type(f, p), first, count);
    for (size_t k = first; k < first + count; k++) {
      ac_scalar sc = AC_BOOL;
      unsigned rank = 0;
      ac_function_arg_info(f, k, &sc, &rank);
      leaf(ac_function_arg_name(f, k), sc, rank);
    }
    printf("\n");
  }
  printf("  returns %s:", ac_function_result_type(f));
  for (size_t k = 0; k < ac_function_num_results(f); k++) {
    ac_scalar sc = AC_BOOL;
    unsigned rank = 0;
    ac_function_result_info(f, k, &sc, &rank);
    leaf(ac_function_result_name(f, k), sc, rank);
  }
  printf("\n");
  /* out of range: NULL, nothing written */
  size_t first = 7;
  ac_function_param_leaves(f, ac_function_num_params(f), &first, NULL);
  if (ac_function_param_name(f, ac_function_num_params(f)) ||
      ac_function_param_type(f, ac_function_num_params(f)) ||
      ac_function_arg_name(f, ac_function_num_args(f)) ||
      ac_function_result_name(f, ac_function_num_results(f)) || first != 7)
    printf("  out of range: not NULL\n");
}

int main(int argc, char **argv) {
  if (argc < 2)
    return 2;
  ac_context *ctx = ac_context_create();
  ac_error *err = NULL;
  int rc = 0;
  ac_library *lib = NULL;
  if (ac_library_open(ctx, argv[1], NULL, &lib, &err) != AC_OK) {
    printf("error: %s\n", ac_error_message(err));
    rc = 1;
  }
  for (size_t i = 0; rc == 0 && i < ac_library_num_functions(lib); i++) {
    ac_function *f = NULL;
    if (ac_library_function(lib, ac_library_function_name(lib, i), &f, &err) != AC_OK) {
      printf("error: %s\n", ac_error_message(err));
      rc = 1;
      break;
    }
    print_signature(f);
    ac_function_destroy(f);
  }
  ac_library_close(lib);
  ac_error_destroy(err);
  ac_context_destroy(ctx);
  return rc;
}
