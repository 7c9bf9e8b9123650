/* lib/passes/passes_list.h: the rows of the pass registry (pass.h).
 *
 *   PS_PASS(FUNCTION, "name", "one line of help", "counter", ...)
 *
 * FUNCTION is the pass's entry point, `ac_status FUNCTION(ps_ctx *c)`,
 * defined in lib/passes/NAME.c; the counters (at least one, at most
 * PS_MAX_COUNTERS) are the names of ps_ctx.counters[0..]. The order of the
 * rows is the order of `arrayc-opt --list-passes`. passes.c includes this
 * file twice (declarations, then the table); nothing else includes it.
 */
