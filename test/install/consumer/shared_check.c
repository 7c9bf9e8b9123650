/* test/install/consumer/shared_check.c CODE: checks a shared object that an
 * installed `arrayc --shared` wrote (libdemo.so, from demo.ac). This program
 * links nothing of arrayc: it dlopens CODE alone, so the load succeeds only
 * when CODE names libarrayc_rt (DT_NEEDED) and finds it (the run path arrayc
 * gave it, the installed library directory). It then takes the runtime's
 * functions from CODE's handle (dlsym searches CODE's dependencies), opens
 * CODE as an arrayc library and calls `dotp`. It prints:
 *   loaded
 *   functions 2: dotp scale
 *   dotp 32
 */
#include <arrayc/library.h>

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/* the runtime's functions this program calls, as pointers from dlsym */
static struct {
  ac_context *(*context_create)(void);
  void (*context_destroy)(ac_context *);
  ac_status (*library_open)(ac_context *, const char *, const char *, ac_library **, ac_error **);
  void (*library_close)(ac_library *);
  size_t (*library_num_functions)(const ac_library *);
  const char *(*library_function_name)(const ac_library *, size_t);
  ac_status (*library_function)(ac_library *, const char *, ac_function **, ac_error **);
  ac_status (*function_call)(ac_function *, const ac_datum *, size_t, ac_datum *, size_t,
                             ac_error **);
  void (*function_destroy)(ac_function *);
  ac_array *(*array_create)(ac_context *, ac_scalar, unsigned, const int64_t *, const void *,
                            ac_error **);
  void (*array_release)(ac_array *);
  const char *(*error_text)(const ac_error *);
  void (*error_destroy)(ac_error *);
} rt;

/* Stores dlsym(handle, name) in *slot (a function pointer's bytes). */
static int take(void *handle, const char *name, void *slot) {
  void *p = dlsym(handle, name);
  if (!p) {
    printf("missing %s\n", name);
    return 1;
  }
  memcpy(slot, &p, sizeof p);
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 2)
    return 2;
  void *code = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!code) {
    printf("dlopen: %s\n", dlerror());
    return 1;
  }
  printf("loaded\n");
  if (take(code, "ac_context_create", &rt.context_create) ||
      take(code, "ac_context_destroy", &rt.context_destroy) ||
      take(code, "ac_library_open", &rt.library_open) ||
      take(code, "ac_library_close", &rt.library_close) ||
      take(code, "ac_library_num_functions", &rt.library_num_functions) ||
      take(code, "ac_library_function_name", &rt.library_function_name) ||
      take(code, "ac_library_function", &rt.library_function) ||
      take(code, "ac_function_call", &rt.function_call) ||
      take(code, "ac_function_destroy", &rt.function_destroy) ||
      take(code, "ac_array_create", &rt.array_create) ||
      take(code, "ac_array_release", &rt.array_release) ||
      take(code, "ac_error_text", &rt.error_text) ||
      take(code, "ac_error_destroy", &rt.error_destroy))
    return 1;

  ac_context *ctx = rt.context_create();
  ac_library *lib = NULL;
  ac_function *dotp = NULL;
  ac_error *err = NULL;
  int rc = 1;
  if (rt.library_open(ctx, argv[1], NULL, &lib, &err) == AC_OK) {
    size_t nf = rt.library_num_functions(lib);
    printf("functions %zu:", nf);
    for (size_t i = 0; i < nf; i++)
      printf(" %s", rt.library_function_name(lib, i));
    printf("\n");
  }
  if (lib && rt.library_function(lib, "dotp", &dotp, &err) == AC_OK) {
    static const float x[3] = {1, 2, 3}, y[3] = {4, 5, 6};
    const int64_t n = 3;
    ac_datum args[2] = {{.kind = AC_DATUM_ARRAY, .type = AC_F32},
                        {.kind = AC_DATUM_ARRAY, .type = AC_F32}};
    ac_datum result;
    args[0].array = rt.array_create(ctx, AC_F32, 1, &n, x, &err);
    args[1].array = args[0].array ? rt.array_create(ctx, AC_F32, 1, &n, y, &err) : NULL;
    if (args[1].array && rt.function_call(dotp, args, 2, &result, 1, &err) == AC_OK) {
      printf("dotp %.9g\n", result.s.f);
      rc = 0;
    }
    rt.array_release(args[1].array);
    rt.array_release(args[0].array);
  }
  if (rc)
    printf("error: %s", err ? rt.error_text(err) : "without a message\n");
  rt.error_destroy(err);
  if (dotp)
    rt.function_destroy(dotp);
  rt.library_close(lib);
  rt.context_destroy(ctx);
  dlclose(code);
  return rc;
}
