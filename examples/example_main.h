/* examples/example_main.h: the command line shared by the C examples.
 *
 *   example-NAME            builds the module and runs its function on a small
 *                           built-in input with the interpreter
 *   example-NAME --print    builds the module and prints its canonical text
 *                           (a test compares it with arrayc-opt examples/NAME.ac)
 *
 * Each example supplies build(), which adds its functions to the module with
 * the embedding API, and run(), which calls them and prints the results.
 */
#ifndef ARRAYC_EXAMPLE_MAIN_H
#define ARRAYC_EXAMPLE_MAIN_H

#include "arrayc/arrayc.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Writes a float in the language's literal syntax (always with '.' or an
 * exponent, 9 significant digits: enough to read back any f32). */
static inline void example_format_float(char *buf, size_t size, double x) {
  snprintf(buf, size, "%.9g", x);
  if (!strpbrk(buf, ".en"))
    strncat(buf, ".0", size - strlen(buf) - 1);
}

/* Prints a scalar result on its own line. */
static inline void example_print_float(double x) {
  char buf[64];
  example_format_float(buf, sizeof buf, x);
  printf("%s\n", buf);
}

/* Prints an f32 array result as an array literal on its own line. */
static inline void example_print_floats(const ac_array *a) {
  const float *x = ac_array_data(a);
  printf("[");
  for (int64_t i = 0; i < ac_array_size(a); i++) {
    char buf[64];
    example_format_float(buf, sizeof buf, x[i]);
    printf("%s%s", i ? ", " : "", buf);
  }
  printf("]\n");
}

typedef ac_status (*example_step)(ac_module *m, ac_error **err);

static inline int example_main(int argc, char **argv, const char *name, example_step build,
                        example_step run) {
  bool print = argc == 2 && strcmp(argv[1], "--print") == 0;
  if (argc > 2 || (argc == 2 && !print)) {
    fprintf(stderr, "usage: example-%s [--print]\n", name);
    return 2;
  }
  char file[64];
  snprintf(file, sizeof file, "%s.c", name);
  ac_context *ctx = ac_context_create();
  ac_module *m = ctx ? ac_module_create(ctx, file) : NULL;
  ac_error *err = NULL;
  ac_status st = m ? build(m, &err) : AC_ERR_NOMEM;
  if (st == AC_OK && print) {
    char *text = ac_module_print(m, &err);
    if (text)
      fputs(text, stdout);
    else
      st = AC_ERR_INTERNAL;
    ac_string_destroy(ctx, text);
  } else if (st == AC_OK) {
    st = run(m, &err);
  }
  if (st != AC_OK)
    fputs(err ? ac_error_text(err) : "error: out of memory\n", stderr);
  ac_error_destroy(err);
  ac_module_destroy(m);
  ac_context_destroy(ctx);
  return st == AC_OK ? 0 : 1;
}

#endif
