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
PS_PASS(ps_simplify, "simplify",
        "constant folding, exact algebraic identities, dead lets, let floating", "folded",
        "identities", "lets-removed", "lets-floated", "recs-fused")
PS_PASS(ps_cse, "cse",
        "common subexpressions (scalar and array) computed once, bound by a let", "eliminated")
PS_PASS(ps_inline, "inline",
        "calls of small or once-called functions replaced by their bodies", "inlined")
PS_PASS(ps_hoist, "hoist",
        "array operations in lambdas that do not depend on them computed once, outside",
        "hoisted", "guarded")
PS_PASS(ps_sequentialise, "sequentialise",
        "warn about array operations that run as sequential loops inside a kernel", "sequential")
PS_PASS(ps_fuse, "fuse",
        "producers computed inside their consumers (delay), maps over the same arrays merged",
        "fused", "horizontal", "duplicated")
PS_PASS(ps_smem_stencil, "smem-stencil",
        "GPU kernels reading an array at constant offsets staged through shared memory (tiled)",
        "tiled", "arrays")
PS_PASS(ps_shape, "shape",
        "sizes of intermediates as expressions of the arguments (sized): allocated before any launch",
        "sized", "unknown")
