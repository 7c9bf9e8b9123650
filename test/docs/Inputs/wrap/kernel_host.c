/* test/docs/check_snippets.py's wrapper for language.md §3.4's declaration
 * of an extern kernel's host function: the wrapper defines `axpy` (its
 * definition must agree with the document's declaration), binds it to the
 * kernel of the document's example, without PTX, and calls it on the
 * interpreter and the CPU backend, which pass it the arguments in the
 * calling convention the document describes. */
#include <arrayc/arrayc.h>

#include <stdio.h>
#include <string.h>

/* @SNIPPET@ */

void axpy(float a, const float *xs, int64_t xs_n, const float *ys, int64_t ys_n, float *out,
          int64_t out_n) {
  for (int64_t i = 0; i < out_n && i < xs_n && i < ys_n; i++)
    out[i] = a * xs[i] + ys[i];
}

static int fail(ac_error *err) {
  fputs(err ? ac_error_text(err) : "error\n", stdout);
  return 1;
}

int main(void) {
  const char *src = "extern kernel axpy(a: f32, xs: f32[], ys: f32[]) -> f32[len(xs)];\n"
                    "fn update(a: f32, xs: f32[], ys: f32[]) -> f32 {\n"
                    "  let zs = axpy(a, map(|x| x * x, xs), ys);\n"
                    "  fold(|s, z| s + z, 0.0, zs)\n"
                    "}\n";
  ac_context *ctx = ac_context_create();
  ac_error *err = NULL;
  ac_module *m;
  if (ac_module_parse(ctx, "kernel.ac", src, strlen(src), &m, &err) != AC_OK ||
      ac_module_bind_extern(m, "axpy", (void (*)(void))axpy, &err) != AC_OK)
    return fail(err);
  float x[3] = {1, 2, 3}, y[3] = {10, 20, 30};
  int64_t n = 3;
  ac_array *xs = ac_array_create(ctx, AC_F32, 1, &n, x, NULL);
  ac_array *ys = ac_array_create(ctx, AC_F32, 1, &n, y, NULL);
  ac_backend backends[2] = {AC_BACKEND_INTERP, AC_BACKEND_CPU};
  for (int b = 0; b < 2; b++) {
    ac_function *f;
    ac_datum args[3] = {{.kind = AC_DATUM_SCALAR, .type = AC_F32, .s.f = 2},
                        {.kind = AC_DATUM_ARRAY, .type = AC_F32, .array = xs},
                        {.kind = AC_DATUM_ARRAY, .type = AC_F32, .array = ys}};
    ac_datum r;
    if (ac_function_create(m, "update", backends[b], &f, &err) != AC_OK ||
        ac_function_call(f, args, 3, &r, 1, &err) != AC_OK)
      return fail(err);
    if (r.s.f != 88.0) { /* 2 * (1 + 4 + 9) + 60 */
      printf("%s: update gave %g, not 88\n", ac_backend_name(backends[b]), r.s.f);
      return 1;
    }
    ac_function_destroy(f);
  }
  ac_array_release(xs);
  ac_array_release(ys);
  ac_module_destroy(m);
  ac_context_destroy(ctx);
  return 0;
}
