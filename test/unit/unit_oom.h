/* test/unit/unit_oom.h: allocation-failure tests for the C unit tests
 * (include after unit.h and arrayc's headers).
 *
 * unit_oom_runs parses `src` (with the test's own `parse`) in a context
 * whose allocator fails once k allocations have been made, for k = 0, 1,
 * 2, ... (the parse itself never fails: the limit starts after it), and
 * runs `step` on the module: every failure must be reported as
 * AC_ERR_NOMEM (anything else fails the test), nothing may leak (the
 * sanitizer build checks that), and the runs go on until `step` has
 * succeeded `want` times or `limit` values of k were tried. Returns the
 * number of successful runs, and the failed ones in *failed (may be NULL);
 * callers CHECK both are positive (a limit too low to ever succeed, or runs
 * that never met a failure, test nothing).
 */
#ifndef ARRAYC_TEST_UNIT_OOM_H
#define ARRAYC_TEST_UNIT_OOM_H

#include <stdlib.h>

typedef struct unit_failing {
  long left; /* allocations still allowed; < 0: unlimited */
} unit_failing;

static inline void *unit_fail_realloc(void *ud, void *p, size_t n) {
  unit_failing *f = ud;
  if (n == 0) {
    free(p);
    return NULL;
  }
  if (f->left == 0)
    return NULL;
  if (f->left > 0)
    f->left--;
  return realloc(p, n);
}

/* One run on m (its status must be AC_OK or AC_ERR_NOMEM), and what to
 * check after a successful one, with allocations unlimited again (NULL:
 * nothing). */
typedef ac_status (*unit_oom_step)(ac_module *m, void *ud, ac_error **err);
typedef void (*unit_oom_check)(ac_module *m, void *ud);

static inline int unit_oom_runs(const char *src, long limit, int want,
                                ac_module *(*parse)(ac_context *, const char *),
                                unit_oom_step step, unit_oom_check check, void *ud,
                                int *failed) {
  int completed = 0, nfailed = 0;
  for (long k = 0; k < limit && completed < want; k++) {
    unit_failing f = {-1};
    ac_context *ctx = ac_context_create_with_allocator(unit_fail_realloc, &f);
    ac_module *m = ctx ? parse(ctx, src) : NULL;
    if (m) {
      f.left = k;
      ac_error *err = NULL;
      ac_status st = step(m, ud, &err);
      CHECK(st == AC_OK || st == AC_ERR_NOMEM);
      f.left = -1;
      if (st == AC_OK) {
        completed++;
        if (check)
          check(m, ud);
      } else {
        nfailed++;
      }
      ac_error_destroy(err);
    }
    ac_module_destroy(m);
    ac_context_destroy(ctx);
  }
  if (failed)
    *failed = nfailed;
  return completed;
}

#ifdef ARRAYC_LIB_PASSES_PASS_H
/* A step that runs the pass list ud (a const char *). */
static inline ac_status unit_oom_pipeline(ac_module *m, void *ud, ac_error **err) {
  return ps_run_pipeline(m, (const char *)ud, NULL, NULL, err);
}
#endif

#endif
