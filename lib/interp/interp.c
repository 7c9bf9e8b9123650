/* STUB: replaced by the interpreter. */
#include "ir.h"
ac_status interp_call(ac_module *m, uint32_t fn, const ac_datum *args, size_t nargs,
                      ac_datum *results, size_t nresults, ac_error **err) {
  (void)fn; (void)args; (void)nargs; (void)results; (void)nresults;
  return ir_report(err, ir_error(m->ctx, AC_ERR_UNSUPPORTED, m, (ir_loc){0, 0}, "interpreter not built"), AC_ERR_UNSUPPORTED);
}
