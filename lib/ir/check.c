/* STUB: replaced by the verifier. */
#include "ir.h"
ac_status ir_check_module(ac_module *m, ac_error **err) {
  return ir_report(err, ir_error(m->ctx, AC_ERR_UNSUPPORTED, m, (ir_loc){0, 0}, "verifier not built"), AC_ERR_UNSUPPORTED);
}
