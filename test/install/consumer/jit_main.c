/* test/install/consumer/jit_main.c: a program of another project that
 * links the installed compiler library (libarrayc and, through it, LLVM):
 * it parses a program from text, compiles `dotp` for the CPU with LLVM's
 * JIT and calls it through a C function pointer of its own signature. The
 * install test (test/install/consumer.sh) builds it with CMake
 * (arrayc::arrayc) and with pkg-config (arrayc.pc) and compares what it
 * prints:
 *   jit cpu dotp 32
 */
#include <arrayc/arrayc.h>

#include <stdio.h>
#include <string.h>

static const char program[] = "fn dotp(xs: f32[], ys: f32[]) -> f32 {\n"
                              "  fold(|a, b| a + b, 0.0, map(|x, y| x * y, xs, ys))\n"
                              "}\n";

int main(void) {
  ac_context *ctx = ac_context_create();
  if (!ctx)
    return 1;
  ac_module *m = NULL;
  ac_function *f = NULL;
  ac_array *xs = NULL, *ys = NULL;
  ac_error *err = NULL;
  void (*fp)(void) = NULL;
  static const float x[3] = {1, 2, 3}, y[3] = {4, 5, 6};
  const int64_t n = 3;
  int rc = 1;
  if (ac_module_parse(ctx, "jit.ac", program, strlen(program), &m, &err) == AC_OK &&
      ac_function_create(m, "dotp", AC_BACKEND_CPU, &f, &err) == AC_OK &&
      ac_function_pointer(f, &fp, &err) == AC_OK &&
      (xs = ac_array_create(ctx, AC_F32, 1, &n, x, &err)) &&
      (ys = ac_array_create(ctx, AC_F32, 1, &n, y, &err))) {
    /* dotp's own signature: the arrays, a pointer per result, the error */
    ac_status (*dotp)(ac_array *, ac_array *, float *, ac_error **);
    memcpy(&dotp, &fp, sizeof fp);
    float d = 0;
    if (dotp(xs, ys, &d, &err) == AC_OK) {
      printf("jit %s dotp %.9g\n", ac_backend_name(ac_function_backend(f)), d);
      rc = 0;
    }
  }
  if (rc)
    fputs(err ? ac_error_text(err) : "error without a message\n", stdout);
  ac_error_destroy(err);
  ac_array_release(ys);
  ac_array_release(xs);
  if (f)
    ac_function_destroy(f);
  if (m)
    ac_module_destroy(m);
  ac_context_destroy(ctx);
  return rc;
}
