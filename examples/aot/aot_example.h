/* examples/aot/aot_example.h: what the ahead-of-time examples share.
 *
 * Each example is one C source built twice (examples/aot/CMakeLists.txt):
 * against the header `arrayc --target=cpu` wrote, and against the one
 * `arrayc --target=gpu` wrote, with -DAOT_GPU. The two headers declare the
 * same functions (PREFIX_open, PREFIX_NAME, PREFIX_close), so the program
 * does not change; AOT_GPU only says which one it has, for what it prints
 * and for one decision: without a GPU, the GPU build's PREFIX_open fails
 * with AC_ERR_UNSUPPORTED "no GPU: ...", and the program says SKIPPED and
 * exits 0 (a demo has nothing to show there; the GPU test suite,
 * test/gpu/gpu_suite.sh, runs these programs where there is a GPU and
 * wants their "ok" line).
 *
 * Everything here is plain C and libarrayc_rt: no compiler, no LLVM.
 */
#ifndef ARRAYC_AOT_EXAMPLE_H
#define ARRAYC_AOT_EXAMPLE_H

#include <arrayc/library.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef AOT_GPU
#define AOT_TARGET "gpu"
#else
#define AOT_TARGET "cpu"
#endif

/* Wall-clock seconds, for the timings (C11's clock: no POSIX needed). */
static inline double aot_seconds(void) {
  struct timespec ts;
  timespec_get(&ts, TIME_UTC);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The problem size: argv[1] if given (a positive integer, at least `min`
 * and at most `max`), else `dflt`. Returns -1 after printing the usage. */
static inline long long aot_size_arg(int argc, char **argv, const char *name, long long dflt,
                                     long long min, long long max) {
  if (argc == 1)
    return dflt;
  char *end = NULL;
  errno = 0;
  long long n = argc == 2 ? strtoll(argv[1], &end, 10) : 0;
  if (argc > 2 || errno || end == argv[1] || *end || n < min || n > max) {
    fprintf(stderr, "usage: aot-%s-" AOT_TARGET " [N]   (N from %lld to %lld; default %lld)\n",
            name, min, max, dflt);
    return -1;
  }
  return n;
}

/* Reports a failed call and consumes err; returns the exit status 1. */
static inline int aot_fail(const char *what, ac_error *err) {
  fprintf(stderr, "%s: %s", what, err ? ac_error_text(err) : "error: out of memory\n");
  ac_error_destroy(err);
  return 1;
}

/* Reports a failed PREFIX_open and consumes err; returns the exit status:
 * 0 for the GPU build on a machine without a GPU (after "SKIPPED: no GPU:
 * ..."), 1 for anything else (a stale code file, a damaged one, no memory). */
static inline int aot_open_failed(ac_status st, ac_error *err) {
#ifdef AOT_GPU
  if (st == AC_ERR_UNSUPPORTED && err && strncmp(ac_error_message(err), "no GPU: ", 8) == 0) {
    printf("SKIPPED: %s\n", ac_error_message(err));
    ac_error_destroy(err);
    return 0;
  }
#else
  (void)st;
#endif
  return aot_fail("open", err);
}

#endif
