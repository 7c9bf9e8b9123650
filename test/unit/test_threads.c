/* A bounded multi-threaded stress test of the thread-safety rules of
 * docs/api.md §7 and docs/runtime.md §9, run in the plain suite and, in
 * CI, under ThreadSanitizer (-DARRAYC_TSAN=ON: .ci/run).
 *
 *   one_runtime        THREADS threads share one context, one CPU runtime
 *                      and one interpreter runtime. Each round a thread
 *                      parses a program of its own (or, every third round,
 *                      the same text as the others: the runtime's compile
 *                      cache) and compiles it holding a write lock, as
 *                      the rule says (compiling uses the context: one
 *                      thread at a time, not while calls run); then, under
 *                      a read lock, it calls its functions, a function
 *                      every thread shares and a C function pointer (a
 *                      libffi closure), some calls failing (out of bounds)
 *                      while others succeed, and checks every result.
 *   own_runtimes       THREADS threads each with a context and runtimes of
 *                      their own compile and call with no lock at all:
 *                      nothing may be shared behind the API's back (LLVM's
 *                      initialisation, the JIT, the pools).
 *   aot_library        the shared object `arrayc --shared` wrote from
 *                      threads_aot.ac (ARRAYC_THREADS_AOT), opened once
 *                      and called from every thread, and opened, called
 *                      and closed in a context of each thread's own.
 *   kernel_cache       threads with contexts of their own put and get
 *                      entries of the on-disk kernel cache in one
 *                      directory, some keys shared (test_kcache.c races
 *                      writers of one key harder).
 *
 * Every answer is known (integer arithmetic), so a wrong result is a
 * failure, not only a sanitizer report. The sizes keep it to a few seconds
 * plain and well under a minute under ThreadSanitizer. The unit harness's
 * CHECK is not thread-safe: threads count their own failures (TCHECK) and
 * the main thread checks the counts.
 */
#define _POSIX_C_SOURCE 200809L /* pthread_rwlock, setenv, mkdtemp */

#include "unit.h"

#include "arrayc/arrayc.h"
#include "arrayc/library.h"
#include "runtime/kcache.h"

#include "ir.h"

#include <dirent.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

enum { THREADS = 6, ROUNDS = 4, CALLS = 12 };

/* A thread's failures: counted, the first few printed. */
typedef struct worker {
  int id;
  int failures;
  void *shared;
} worker;

#define TCHECK(w, cond)                                                                            \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      if ((w)->failures++ < 5)                                                                     \
        fprintf(stderr, "%s:%d: thread %d: check failed: %s\n", __FILE__, __LINE__, (w)->id,       \
                #cond);                                                                            \
    }                                                                                              \
  } while (0)

/* Prints a failed call's error (frees it); returns st. */
static ac_status show(ac_status st, ac_error **err) {
  if (st != AC_OK)
    fprintf(stderr, "  (%s)\n", *err ? ac_error_text(*err) : "no error object");
  ac_error_destroy(*err);
  *err = NULL;
  return st;
}

/* Runs fn(&w[i]) on THREADS threads and checks that none failed. */
static void run_threads(void *(*fn)(void *), void *shared) {
  pthread_t th[THREADS];
  worker w[THREADS];
  for (int i = 0; i < THREADS; i++) {
    w[i] = (worker){i, 0, shared};
    if (pthread_create(&th[i], NULL, fn, &w[i]) != 0) {
      CHECK(!"pthread_create");
      w[i].id = -1;
    }
  }
  for (int i = 0; i < THREADS; i++) {
    if (w[i].id < 0)
      continue;
    pthread_join(th[i], NULL);
    CHECK_EQ_INT(w[i].failures, 0);
  }
}

/* ---- the programs ---- */

/* A program whose answers depend on k and b: affine(xs) = xs * k + b,
 * total(xs) = k * sum(xs), at(xs, is) = xs[is] (fails out of bounds). */
static void program_text(char *buf, size_t cap, int64_t k, int64_t b) {
  snprintf(buf, cap,
           "fn affine(xs: i64[]) -> i64[] {\n"
           "  map(|x| x * %" PRId64 "i64 + %" PRId64 "i64, xs)\n"
           "}\n"
           "fn total(xs: i64[]) -> i64 {\n"
           "  fold(|a, c| a + c, 0i64, map(|x| x * %" PRId64 "i64, xs))\n"
           "}\n"
           "fn at(xs: i32[], is: i64[]) -> i32[] {\n"
           "  map(|i| xs[i], is)\n"
           "}\n",
           k, b, k);
}

static ac_module *parse(ac_context *ctx, const char *text) {
  ac_module *m = NULL;
  ac_error *err = NULL;
  if (show(ac_module_parse(ctx, "threads.ac", text, strlen(text), &m, &err), &err) != AC_OK)
    return NULL;
  return m;
}

/* The input of call c of thread id: n elements, xs[i] = i + id - c. */
static int64_t input_len(int id, int c) {
  static const int64_t lens[] = {1, 7, 100, 1000, 5000};
  return lens[(id + c) % 5];
}

static ac_array *make_input(ac_context *ctx, int id, int c, int64_t **data_out) {
  int64_t n = input_len(id, c);
  int64_t *xs = malloc((size_t)n * sizeof *xs);
  if (!xs)
    return NULL;
  for (int64_t i = 0; i < n; i++)
    xs[i] = i + id - c;
  ac_array *a = ac_array_create(ctx, AC_I64, 1, &n, xs, NULL);
  *data_out = xs;
  return a;
}

/* The functions of one program on one runtime. */
typedef struct compiled {
  ac_module *m;
  ac_function *affine, *total, *at;
  int64_t k, b;
} compiled;

static bool compile_program(ac_context *ctx, ac_runtime *rt, ac_runtime *interp, int64_t k,
                            int64_t b, compiled *out) {
  char text[1024];
  ac_error *err = NULL;
  program_text(text, sizeof text, k, b);
  *out = (compiled){parse(ctx, text), NULL, NULL, NULL, k, b};
  return out->m &&
         show(ac_runtime_compile(rt, out->m, "affine", &out->affine, &err), &err) == AC_OK &&
         show(ac_runtime_compile(rt, out->m, "total", &out->total, &err), &err) == AC_OK &&
         show(ac_runtime_compile(interp, out->m, "at", &out->at, &err), &err) == AC_OK;
}

static void free_program(compiled *p) {
  ac_function_destroy(p->affine);
  ac_function_destroy(p->total);
  ac_function_destroy(p->at);
  ac_module_destroy(p->m);
}

/* Calls affine, total (through its C function pointer when total_fn is
 * not NULL) and at of p on thread w's input c, checking every answer. */
static void call_program(worker *w, ac_context *ctx, const compiled *p, void (*total_fn)(void),
                         int c) {
  int64_t *xs = NULL;
  ac_array *a = make_input(ctx, w->id, c, &xs);
  TCHECK(w, a != NULL);
  if (!a) {
    free(xs);
    return;
  }
  int64_t n = ac_array_size(a), sum = 0;
  for (int64_t i = 0; i < n; i++)
    sum += xs[i];
  ac_error *err = NULL;
  ac_datum args[1] = {{AC_DATUM_ARRAY, AC_I64, {0}, a}}, res[1];
  if (show(ac_function_call(p->affine, args, 1, res, 1, &err), &err) == AC_OK) {
    const int64_t *ys = ac_array_data(res[0].array);
    bool same = ys && ac_array_size(res[0].array) == n;
    for (int64_t i = 0; same && i < n; i++)
      same = ys[i] == xs[i] * p->k + p->b;
    TCHECK(w, same);
    ac_datum_release(&res[0]);
  } else {
    TCHECK(w, !"affine");
  }
  int64_t t = 0;
  ac_status st;
  if (total_fn) {
    st = ((ac_status(*)(ac_array *, int64_t *, ac_error **))total_fn)(a, &t, &err);
  } else {
    st = ac_function_call(p->total, args, 1, res, 1, &err);
    t = res[0].s.i;
  }
  TCHECK(w, show(st, &err) == AC_OK && t == p->k * sum);

  /* at: in bounds, then out of bounds (an error while other threads'
   * calls succeed), then in bounds again */
  int32_t v[3] = {10 + w->id, 20, 30};
  int64_t is_ok[2] = {2, 0}, is_bad[2] = {1, 3 + c};
  ac_array *va = ac_array_create(ctx, AC_I32, 1, (int64_t[]){3}, v, NULL);
  ac_array *ia = ac_array_create(ctx, AC_I64, 1, (int64_t[]){2}, is_ok, NULL);
  ac_array *ib = ac_array_create(ctx, AC_I64, 1, (int64_t[]){2}, is_bad, NULL);
  TCHECK(w, va && ia && ib);
  if (va && ia && ib) {
    ac_datum good[2] = {{AC_DATUM_ARRAY, AC_I32, {0}, va}, {AC_DATUM_ARRAY, AC_I64, {0}, ia}};
    ac_datum bad[2] = {good[0], {AC_DATUM_ARRAY, AC_I64, {0}, ib}};
    TCHECK(w, ac_function_call(p->at, bad, 2, res, 1, &err) == AC_ERR_RUNTIME);
    TCHECK(w, err && strstr(ac_error_message(err), "out of bounds"));
    ac_error_destroy(err);
    err = NULL;
    if (show(ac_function_call(p->at, good, 2, res, 1, &err), &err) == AC_OK) {
      const int32_t *r = ac_array_data(res[0].array);
      TCHECK(w, r && r[0] == 30 && r[1] == 10 + w->id);
      ac_datum_release(&res[0]);
    } else {
      TCHECK(w, !"at");
    }
  }
  ac_array_release(va);
  ac_array_release(ia);
  ac_array_release(ib);
  ac_array_release(a);
  free(xs);
}

/* ---- one context, one runtime, many threads ---- */

typedef struct one_rt {
  ac_context *ctx;
  ac_runtime *cpu, *interp;
  pthread_rwlock_t lock; /* write: parsing, compiling, destroying; read: calls */
  compiled common;       /* compiled before the threads start; every thread calls it */
} one_rt;

static void *one_runtime_main(void *arg) {
  worker *w = arg;
  one_rt *s = w->shared;
  for (int r = 0; r < ROUNDS; r++) {
    /* every third round the text every thread compiles: the runtime
     * generates it once (its compile cache), the other threads get it */
    bool same = r % 3 == 2;
    int64_t k = same ? 5 : 2 + w->id * ROUNDS + r, b = same ? -1 : w->id;
    compiled p;
    void (*total_fn)(void) = NULL;
    ac_error *err = NULL;
    pthread_rwlock_wrlock(&s->lock);
    bool ok = compile_program(s->ctx, s->cpu, s->interp, k, b, &p) &&
              show(ac_function_pointer(p.total, &total_fn, &err), &err) == AC_OK;
    pthread_rwlock_unlock(&s->lock);
    TCHECK(w, ok);
    if (ok) {
      pthread_rwlock_rdlock(&s->lock);
      for (int c = 0; c < CALLS; c++) {
        call_program(w, s->ctx, &p, c % 2 ? total_fn : NULL, c);
        call_program(w, s->ctx, &s->common, NULL, c + 1);
      }
      pthread_rwlock_unlock(&s->lock);
    }
    pthread_rwlock_wrlock(&s->lock);
    free_program(&p);
    pthread_rwlock_unlock(&s->lock);
  }
  return NULL;
}

UNIT_TEST(one_runtime) {
  one_rt s = {ac_context_create(), NULL, NULL, PTHREAD_RWLOCK_INITIALIZER, {0}};
  ac_error *err = NULL;
  if (show(ac_runtime_create(s.ctx, AC_BACKEND_CPU, &s.cpu, &err), &err) != AC_OK ||
      show(ac_runtime_create(s.ctx, AC_BACKEND_INTERP, &s.interp, &err), &err) != AC_OK ||
      !compile_program(s.ctx, s.cpu, s.interp, 3, 4, &s.common)) {
    CHECK(!"set up");
  } else {
    run_threads(one_runtime_main, &s);
    /* the shared text was generated once for all the threads */
    CHECK(ac_runtime_num_compilations(s.cpu) < 2u * (THREADS * ROUNDS + 1));
  }
  free_program(&s.common);
  ac_runtime_destroy(s.cpu);
  ac_runtime_destroy(s.interp);
  ac_context_destroy(s.ctx);
}

/* ---- a context and runtimes per thread ---- */

static void *own_runtimes_main(void *arg) {
  worker *w = arg;
  ac_context *ctx = ac_context_create();
  ac_runtime *cpu = NULL, *interp = NULL;
  ac_error *err = NULL;
  bool ok = ctx && show(ac_runtime_create(ctx, AC_BACKEND_CPU, &cpu, &err), &err) == AC_OK &&
            show(ac_runtime_create(ctx, AC_BACKEND_INTERP, &interp, &err), &err) == AC_OK;
  TCHECK(w, ok);
  for (int r = 0; ok && r < ROUNDS; r++) {
    compiled p;
    /* the same text in every thread half of the time: each runtime
     * compiles it for itself */
    int64_t k = r % 2 ? 9 : 100 + w->id, b = r;
    if (compile_program(ctx, cpu, interp, k, b, &p)) {
      for (int c = 0; c < CALLS / 2; c++)
        call_program(w, ctx, &p, NULL, c);
    } else {
      TCHECK(w, !"compile");
    }
    free_program(&p);
  }
  ac_runtime_destroy(cpu);
  ac_runtime_destroy(interp);
  ac_context_destroy(ctx);
  return NULL;
}

UNIT_TEST(own_runtimes) {
  run_threads(own_runtimes_main, NULL);
}

/* ---- ahead-of-time code ---- */

#ifdef ARRAYC_THREADS_AOT
typedef struct aot_shared {
  ac_context *ctx;
  ac_function *dot, *at; /* of one library, taken before the threads start */
} aot_shared;

/* dot(xs, ys) with xs[i] = i + id and ys[i] = 2, and at out of bounds. */
static void call_aot(worker *w, ac_context *ctx, ac_function *dot, ac_function *at, int c) {
  int64_t n = input_len(w->id, c), want = 0;
  int64_t *xs = malloc((size_t)n * sizeof *xs), *ys = malloc((size_t)n * sizeof *ys);
  TCHECK(w, xs && ys);
  if (!xs || !ys) {
    free(xs);
    free(ys);
    return;
  }
  for (int64_t i = 0; i < n; i++) {
    xs[i] = i + w->id;
    ys[i] = 2;
    want += 2 * xs[i];
  }
  ac_array *a = ac_array_borrow(ctx, AC_I64, 1, &n, xs, NULL, NULL, NULL);
  ac_array *b = ac_array_borrow(ctx, AC_I64, 1, &n, ys, NULL, NULL, NULL);
  ac_error *err = NULL;
  ac_datum args[2] = {{AC_DATUM_ARRAY, AC_I64, {0}, a}, {AC_DATUM_ARRAY, AC_I64, {0}, b}}, res[1];
  TCHECK(w, a && b && show(ac_function_call(dot, args, 2, res, 1, &err), &err) == AC_OK &&
                res[0].s.i == want);
  int32_t v[2] = {1, 2};
  int64_t is[1] = {2 + c};
  ac_array *va = ac_array_borrow(ctx, AC_I32, 1, (int64_t[]){2}, v, NULL, NULL, NULL);
  ac_array *ia = ac_array_borrow(ctx, AC_I64, 1, (int64_t[]){1}, is, NULL, NULL, NULL);
  ac_datum bad[2] = {{AC_DATUM_ARRAY, AC_I32, {0}, va}, {AC_DATUM_ARRAY, AC_I64, {0}, ia}};
  TCHECK(w, va && ia && ac_function_call(at, bad, 2, res, 1, &err) == AC_ERR_RUNTIME);
  TCHECK(w, err && strstr(ac_error_message(err), "out of bounds"));
  ac_error_destroy(err);
  ac_array_release(va);
  ac_array_release(ia);
  ac_array_release(a);
  ac_array_release(b);
  free(xs);
  free(ys);
}

static void *aot_main(void *arg) {
  worker *w = arg;
  aot_shared *s = w->shared;
  for (int r = 0; r < ROUNDS; r++) {
    for (int c = 0; c < CALLS / 2; c++)
      call_aot(w, s->ctx, s->dot, s->at, c);
    /* the same file opened in a context of this thread's own */
    ac_context *ctx = ac_context_create();
    ac_library *lib = NULL;
    ac_function *dot = NULL, *at = NULL;
    ac_error *err = NULL;
    if (ctx && show(ac_library_open(ctx, ARRAYC_THREADS_AOT, NULL, &lib, &err), &err) == AC_OK &&
        show(ac_library_function(lib, "dot", &dot, &err), &err) == AC_OK &&
        show(ac_library_function(lib, "at", &at, &err), &err) == AC_OK) {
      ac_library_close(lib); /* the functions keep it open */
      lib = NULL;
      call_aot(w, ctx, dot, at, r);
    } else {
      TCHECK(w, !"open");
    }
    ac_function_destroy(dot);
    ac_function_destroy(at);
    ac_library_close(lib);
    ac_context_destroy(ctx);
  }
  return NULL;
}

UNIT_TEST(aot_library) {
  aot_shared s = {ac_context_create(), NULL, NULL};
  ac_library *lib = NULL;
  ac_error *err = NULL;
  if (show(ac_library_open(s.ctx, ARRAYC_THREADS_AOT, NULL, &lib, &err), &err) != AC_OK ||
      show(ac_library_function(lib, "dot", &s.dot, &err), &err) != AC_OK ||
      show(ac_library_function(lib, "at", &s.at, &err), &err) != AC_OK) {
    CHECK(!"set up");
  } else {
    run_threads(aot_main, &s);
  }
  ac_function_destroy(s.dot);
  ac_function_destroy(s.at);
  ac_library_close(lib);
  ac_context_destroy(s.ctx);
}
#endif

/* ---- the on-disk kernel cache ---- */

static void *kernel_cache_main(void *arg) {
  worker *w = arg;
  ac_context *ctx = ac_context_create();
  TCHECK(w, ctx != NULL);
  for (int r = 0; ctx && r < ROUNDS * 4; r++) {
    char key[64], val[256];
    /* half of the keys are every thread's, with the same value */
    bool shared = r % 2 == 0;
    snprintf(key, sizeof key, shared ? "key-shared-%d" : "key-%d-of-%d", r, w->id);
    for (size_t i = 0; i + 1 < sizeof val; i++)
      val[i] = (char)('a' + (i + (size_t)r + (shared ? 0 : (size_t)w->id)) % 26);
    val[sizeof val - 1] = 0;
    TCHECK(w, rt_kcache_put(ctx, key, strlen(key), val, strlen(val)));
    void *got = NULL;
    size_t len = 0;
    TCHECK(w, rt_kcache_get(ctx, key, strlen(key), &got, &len) && len == strlen(val) &&
                  memcmp(got, val, len) == 0);
    ac_free(ctx, got);
  }
  ac_context_destroy(ctx);
  return NULL;
}

UNIT_TEST(kernel_cache) {
  char dir[] = "/tmp/arrayc_threads_XXXXXX";
  if (!mkdtemp(dir)) {
    CHECK(!"mkdtemp");
    return;
  }
  /* set before the threads start: they only read the environment */
  const char *old = getenv("ARRAYC_CACHE_DIR");
  char *saved = old ? strdup(old) : NULL;
  setenv("ARRAYC_CACHE_DIR", dir, 1);
  run_threads(kernel_cache_main, NULL);
  if (saved)
    setenv("ARRAYC_CACHE_DIR", saved, 1);
  else
    unsetenv("ARRAYC_CACHE_DIR");
  free(saved);
  DIR *d = opendir(dir);
  struct dirent *e;
  int entries = 0;
  while (d && (e = readdir(d))) {
    if (e->d_name[0] == '.')
      continue;
    char path[sizeof dir + 300];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    unlink(path);
    entries++;
  }
  if (d)
    closedir(d);
  rmdir(dir);
  /* ROUNDS * 2 shared keys, ROUNDS * 2 of each thread's, nothing else */
  CHECK_EQ_INT(entries, ROUNDS * 2 + THREADS * ROUNDS * 2);
}

#ifdef ARRAYC_THREADS_AOT
UNIT_MAIN(one_runtime, own_runtimes, aot_library, kernel_cache)
#else
UNIT_MAIN(one_runtime, own_runtimes, kernel_cache)
#endif
