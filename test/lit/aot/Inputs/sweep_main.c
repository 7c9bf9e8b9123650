/* test/lit/aot/Inputs/sweep_main.c LIB PREFIX N: opens a shared library
 * of examples/dotp.ac with ac_library_open and calls dotp on two f32
 * vectors of N elements (x[i] = i % 7, y[i] = 1 + i % 3: every partial sum
 * is an integer below 2^24, so any order of the additions gives the same
 * float). Prints one line and exits with
 *   0  "ok VALUE"
 *   3  "load: MESSAGE"   ac_library_open or ac_library_function refused it
 *   4  "call: MESSAGE"   the call failed with an error
 * plan_sweep.py runs it on edited copies of the library. */
#include <arrayc/library.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Prints the refusal and frees the error; the caller cleans up the rest
 * (the sanitizer build checks for leaks on every path). */
static int refuse(int code, const char *what, ac_error *err) {
  const char *text = ac_error_text(err);
  size_t n = strlen(text);
  printf("%s: %.*s\n", what, (int)(n && text[n - 1] == '\n' ? n - 1 : n), text);
  ac_error_destroy(err);
  return code;
}

int main(int argc, char **argv) {
  if (argc != 4)
    return 2;
  int64_t n = atoll(argv[3]);
  ac_context *ctx = ac_context_create();
  ac_library *lib = NULL;
  ac_function *f = NULL;
  ac_error *err = NULL;
  float *x = NULL, *y = NULL;
  ac_datum a[2], r[1];
  memset(a, 0, sizeof a);
  memset(r, 0, sizeof r);
  int code = 0;
  if (ac_library_open(ctx, argv[1], argv[2], &lib, &err) != AC_OK ||
      ac_library_function(lib, "dotp", &f, &err) != AC_OK) {
    code = refuse(3, "load", err);
    goto out;
  }
  x = malloc((size_t)n * sizeof *x);
  y = malloc((size_t)n * sizeof *y);
  for (int64_t i = 0; i < n; i++) {
    x[i] = (float)(i % 7);
    y[i] = (float)(1 + i % 3);
  }
  for (int i = 0; i < 2; i++) {
    a[i].kind = AC_DATUM_ARRAY;
    a[i].type = AC_F32;
    a[i].array = ac_array_create(ctx, AC_F32, 1, &n, i ? y : x, NULL);
  }
  if (ac_function_call(f, a, 2, r, 1, &err) != AC_OK)
    code = refuse(4, "call", err);
  else
    printf("ok %.9g\n", r[0].s.f);
out:
  ac_array_release(a[0].array);
  ac_array_release(a[1].array);
  ac_function_destroy(f);
  ac_library_close(lib);
  ac_context_destroy(ctx);
  free(x);
  free(y);
  return code;
}
