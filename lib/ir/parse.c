/* STUB: replaced by the parser. */
#include "ir.h"
ac_status ir_parse(ac_module *m, const char *text, size_t len, ac_error **err) {
  (void)text; (void)len;
  return ir_report(err, ir_error(m->ctx, AC_ERR_UNSUPPORTED, m, (ir_loc){0, 0}, "parser not built"), AC_ERR_UNSUPPORTED);
}
