/* STUB: replaced by the printer. */
#include "ir.h"
ac_status ir_print_module(ac_module *m, ir_buf *out, ac_error **err) {
  (void)out;
  return ir_report(err, ir_error(m->ctx, AC_ERR_UNSUPPORTED, m, (ir_loc){0, 0}, "printer not built"), AC_ERR_UNSUPPORTED);
}
