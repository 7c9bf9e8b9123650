/* test/docs/check_snippets.py's wrapper for runtime.md §5's example, which
 * calls examples/blackscholes.ac through the C function pointer of its own
 * signature: it provides a context `ctx`, a CPU runtime `rt`, the module
 * `m`, an error `err`, three options (`n`, `prices`, and the arrays `x` and
 * `t` the excerpt leaves out) and `call_prices`, and checks the call prices
 * afterwards (README.md's demo prices the same options). */
#include <arrayc/arrayc.h>

#include <stdio.h>
#include <stdlib.h>

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  static char buf[1 << 16];
  if (!f)
    return NULL;
  *len = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  return buf;
}

int main(void) {
  ac_context *ctx = ac_context_create();
  ac_error *err = NULL;
  ac_runtime *rt;
  ac_module *m;
  size_t len = 0;
  const char *src = slurp("examples/blackscholes.ac", &len);
  if (!src || ac_runtime_create(ctx, AC_BACKEND_CPU, &rt, &err) != AC_OK ||
      ac_module_parse(ctx, "examples/blackscholes.ac", src, len, &m, &err) != AC_OK) {
    fputs(err ? ac_error_text(err) : "cannot read examples/blackscholes.ac\n", stdout);
    return 1;
  }
  int64_t n = 3;
  float prices[3] = {100, 50, 30}, strikes[3] = {100, 60, 25}, years[3] = {1, 0.5f, 2};
  float call_prices[3] = {0, 0, 0};
  ac_array *x = ac_array_create(ctx, AC_F32, 1, &n, strikes, NULL);
  ac_array *t = ac_array_create(ctx, AC_F32, 1, &n, years, NULL);
  {
    /* @SNIPPET@ */
    ac_array_release(s);
    ac_function_destroy(f);
  }
  const float want[3] = {12.821564f, 1.3552389f, 8.124655f};
  for (int i = 0; i < 3; i++)
    if (!(call_prices[i] > want[i] * 0.9999f && call_prices[i] < want[i] * 1.0001f)) {
      printf("call prices [%g, %g, %g], not [%g, %g, %g]\n", call_prices[0], call_prices[1],
             call_prices[2], want[0], want[1], want[2]);
      return 1;
    }
  ac_array_release(x);
  ac_array_release(t);
  ac_module_destroy(m);
  ac_runtime_destroy(rt);
  ac_context_destroy(ctx);
  return 0;
}
