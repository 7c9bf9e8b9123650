/* test/lit/aot/Inputs/dlopen_main.c RTLIB CODE: a program that knows
 * nothing of arrayc at link time. It dlopens the runtime library RTLIB,
 * opens the shared object CODE (arrayc --shared output of prog.ac) and
 * calls `scale` through a C function pointer of its own signature
 * (ac_function_pointer) and `dotp` through ac_function_call. */
#include <arrayc/library.h>

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#define SYM(name) name##_t name##_p = (name##_t)sym(rt, #name)
typedef ac_context *(*ac_context_create_t)(void);
typedef void (*ac_context_destroy_t)(ac_context *);
typedef ac_status (*ac_library_open_t)(ac_context *, const char *, const char *, ac_library **,
                                       ac_error **);
typedef void (*ac_library_close_t)(ac_library *);
typedef ac_status (*ac_library_function_t)(ac_library *, const char *, ac_function **,
                                           ac_error **);
typedef void (*ac_function_destroy_t)(ac_function *);
typedef ac_status (*ac_function_pointer_t)(ac_function *, void (**)(void), ac_error **);
typedef ac_status (*ac_function_call_t)(ac_function *, const ac_datum *, size_t, ac_datum *,
                                        size_t, ac_error **);
typedef ac_array *(*ac_array_create_t)(ac_context *, ac_scalar, unsigned, const int64_t *,
                                       const void *, ac_error **);
typedef const void *(*ac_array_data_t)(const ac_array *);
typedef void (*ac_array_release_t)(ac_array *);
typedef const char *(*ac_error_text_t)(const ac_error *);

static void *sym(void *lib, const char *name) {
  void *p = dlsym(lib, name);
  if (!p)
    printf("missing %s\n", name);
  return p;
}

int main(int argc, char **argv) {
  if (argc != 3)
    return 2;
  void *rt = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!rt) {
    printf("dlopen: %s\n", dlerror());
    return 1;
  }
  SYM(ac_context_create);
  SYM(ac_context_destroy);
  SYM(ac_library_open);
  SYM(ac_library_close);
  SYM(ac_library_function);
  SYM(ac_function_destroy);
  SYM(ac_function_pointer);
  SYM(ac_function_call);
  SYM(ac_array_create);
  SYM(ac_array_data);
  SYM(ac_array_release);
  SYM(ac_error_text);
  ac_context *ctx = ac_context_create_p();
  ac_library *lib = NULL;
  ac_error *err = NULL;
  if (ac_library_open_p(ctx, argv[2], NULL, &lib, &err) != AC_OK) {
    printf("open: %s", ac_error_text_p(err));
    return 1;
  }
  ac_function *scale = NULL, *dotp = NULL;
  if (ac_library_function_p(lib, "scale", &scale, &err) != AC_OK ||
      ac_library_function_p(lib, "dotp", &dotp, &err) != AC_OK) {
    printf("function: %s", ac_error_text_p(err));
    return 1;
  }
  ac_library_close_p(lib); /* the functions keep it alive */
  void (*fp)(void) = NULL;
  if (ac_function_pointer_p(scale, &fp, &err) != AC_OK) {
    printf("pointer: %s", ac_error_text_p(err));
    return 1;
  }
  ac_status (*scale_fn)(ac_array *, double, ac_array **, int64_t *, ac_error **);
  memcpy(&scale_fn, &fp, sizeof fp);
  double v[3] = {1, 2, 4};
  int64_t n3 = 3;
  ac_array *vs = ac_array_create_p(ctx, AC_F64, 1, &n3, v, NULL), *out = NULL;
  int64_t len = 0;
  if (scale_fn(vs, 0.5, &out, &len, &err) != AC_OK) {
    printf("scale: %s", ac_error_text_p(err));
    return 1;
  }
  const double *d = ac_array_data_p(out);
  printf("scale [%.17g, %.17g, %.17g] %lld\n", d[0], d[1], d[2], (long long)len);
  float x[2] = {3, 4};
  int64_t n2 = 2;
  ac_datum a[2], r[1];
  memset(a, 0, sizeof a);
  for (int i = 0; i < 2; i++) {
    a[i].kind = AC_DATUM_ARRAY;
    a[i].type = AC_F32;
    a[i].array = ac_array_create_p(ctx, AC_F32, 1, &n2, x, NULL);
  }
  if (ac_function_call_p(dotp, a, 2, r, 1, &err) != AC_OK) {
    printf("dotp: %s", ac_error_text_p(err));
    return 1;
  }
  printf("dotp %.9g\n", r[0].s.f);
  ac_array_release_p(a[0].array);
  ac_array_release_p(a[1].array);
  ac_array_release_p(out);
  ac_array_release_p(vs);
  ac_function_destroy_p(scale);
  ac_function_destroy_p(dotp);
  ac_context_destroy_p(ctx);
  printf("done\n");
  return 0;
}
