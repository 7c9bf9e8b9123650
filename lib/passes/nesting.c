/* lib/passes/nesting.c: which nested folds a warp or a block computes
 * together (Copperhead's warp- and block-per-element mappings; the code is
 * lib/codegen/seq_coop.c, the choice lib/lower/gpu.c).
 *
 * A GPU element-wise kernel (map, generate) whose element code contains a
 * fold has, besides the thread-per-element kernel, a warp- and a
 * block-per-element one: the threads of the group all run the element
 * code with the same values, and each fold in it is computed by all of
 * them, thread t taking elements t, t + 32, ... of the row. That pays when
 * the lanes of a warp then read consecutive addresses where a thread per
 * element would read addresses a row apart (CSR SpMV, a matrix-vector
 * product), and not when a thread per element already reads well: when
 * all elements stream through the same array (n-body: the lanes of a warp
 * read one address) or when neighbouring elements read neighbouring
 * addresses (b[l, j] in a matrix product over (i, j)). ps_coop_row tells
 * these apart by the reads of the fold's operand:
 *   - ROW reads: slice(a, start, ...) with a bound that depends on the
 *     element (the enclosing lambda's parameters, or lets in its body,
 *     which depend on them or hoist would have moved them out); a read
 *     a[.., e] in the function of generate(shape, |j..| ..) whose
 *     innermost index e uses the j's while the read uses the element
 *     (m[i, j]); backpermute(shape, |j..| src, a) whose index function
 *     uses both;
 *   - ACROSS reads: a read whose innermost index moves with the element's
 *     innermost index (a generate's last parameter: j, j + 1, not
 *     lens[j]), a slice whose bounds do;
 *   - map(f, a1, ..) reads its arrays; delay, gather (by its indices: the
 *     source is read where they say), reshape, transpose and reverse their
 *     operand.
 * A fold is the group's when its operand has ROW reads and no ACROSS
 * reads, or reads nothing at all: a computed row (generate(m, |j| f(i, j))
 * with m independent of the element), where a group gains no coalescing
 * but parallelism, which the plan wants only while the elements are few
 * (lib/lower/gpu.c estimates such a row by its extent). ps_coop_code accepts element code with such
 * a fold, unless it also has an array operation that every thread of the group would compute in
 * full (a recurrence other than the one below, a scatter): besides folds and views, only the
 * operations that the group computes together into one array: the element-wise ones, each thread
 * its share of the elements (generate, map, gather, backpermute, iota, fill; Copperhead's SpMV
 * gathers its row of x that way before folding it), scans from either end (scan, scan_incl, scanr,
 * scanr_incl), by warp scans, and filters, by ballots: ps_coop_array_op; and the fold of the rows
 * of a rank-2 recurrence (ns_rec_fold: the group computes the recurrence by anti-diagonals, each
 * thread its share of the rows; Smith-Waterman's score of one pair, ADEPT's and CUDASW++'s
 * intra-task mapping). The sequentialise pass does not warn about those operations, nor about the
 * group's folds, in element code it accepts.
 */
#include "passes/pass.h"

/* Recursion bound (deeper: "yes", which only offers a variant). */
#define NS_MAX_DEPTH 2000u

/* Whether r refers to a binder with de Bruijn index in [lo, hi), as seen
 * from r (binders inside r shift the range); with `reads` false, not
 * looking inside reads (a[k]): whether r's VALUE moves with those binders
 * as an index does (j + 1, 2 * j), rather than through data (lens[j]),
 * which says nothing about where neighbouring elements read. Too deep:
 * the answer that offers a variant (yes through reads, else no). */
static bool ns_refs_in(const ac_module *m, ir_ref r, uint32_t lo, uint32_t hi, bool reads,
                       uint32_t depth) {
  if (depth > NS_MAX_DEPTH)
    return reads;
  const ir_node *n = ir_node_get(m, r);
  if (n->op == IR_VAR)
    return n->attr >= 0 && (uint64_t)n->attr >= lo && (uint64_t)n->attr < hi;
  if (n->op == IR_INDEX && !reads)
    return false;
  for (uint32_t i = 0; i < n->nkids; i++) {
    ir_ref k = ir_kid(m, r, i);
    uint32_t b = ir_binders(m, r, i);
    if (k && ns_refs_in(m, k, lo + b, hi + b, reads, depth + 1))
      return true;
  }
  return false;
}

static bool ns_refs(const ac_module *m, ir_ref r, uint32_t lo, uint32_t hi, uint32_t depth) {
  return ns_refs_in(m, r, lo, hi, true, depth);
}

static bool ns_refs_direct(const ac_module *m, ir_ref r, uint32_t lo, uint32_t hi,
                           uint32_t depth) {
  return ns_refs_in(m, r, lo, hi, false, depth);
}

/* How a read a[ix] in the function of a generate (np parameters, the j's)
 * inside element code walks memory as the j's and the element vary:
 *   NS_ROW     its innermost index uses the j's and the read uses the
 *              element: the lanes of a warp working on one element read
 *              consecutive addresses of the element's row (m[i, j]);
 *   NS_ACROSS  its innermost index uses the element's innermost index
 *              (b[l, j] in a matrix product over (i, j)): neighbouring
 *              elements read neighbouring addresses, which is what a
 *              thread per element coalesces best. */
enum { NS_ROW = 1, NS_ACROSS = 2 };

/* The reads in r, which lies `off` binders below the body of that
 * function, with `base` element binders above the function; ex: the de
 * Bruijn index, seen from the function, of the element's innermost index
 * (a generate's last parameter), or -1. */
static unsigned ns_reads(const ac_module *m, ir_ref r, uint32_t off, uint32_t np, uint32_t base,
                         int64_t ex, uint32_t depth) {
  if (depth > NS_MAX_DEPTH)
    return 0;
  const ir_node *n = ir_node_get(m, r);
  unsigned seen = 0;
  if (n->op == IR_INDEX && n->nkids > 1) {
    ir_ref last = ir_kid(m, r, n->nkids - 1);
    bool elem = false;
    for (uint32_t i = 0; i < n->nkids && !elem; i++)
      elem = ns_refs(m, ir_kid(m, r, i), off + np, off + np + base, depth + 1);
    if (elem && ns_refs(m, last, off, off + np, depth + 1))
      seen |= NS_ROW;
    if (ex >= 0 &&
        ns_refs_direct(m, last, off + np + (uint32_t)ex, off + np + (uint32_t)ex + 1, depth + 1))
      seen |= NS_ACROSS;
  }
  for (uint32_t i = 0; i < n->nkids; i++) {
    ir_ref k = ir_kid(m, r, i);
    if (k)
      seen |= ns_reads(m, k, off + ir_binders(m, r, i), np, base, ex, depth + 1);
  }
  return seen;
}

/* How array expression r, under `base` element binders (ex: the de
 * Bruijn index of the element's innermost index there, or -1), is read:
 * NS_ROW and NS_ACROSS as above, a slice whose bounds use the element
 * being NS_ROW. */
static unsigned ns_walk(const ac_module *m, ir_ref r, uint32_t base, int64_t ex, uint32_t depth) {
  if (depth > NS_MAX_DEPTH)
    return 0;
  const ir_node *n = ir_node_get(m, r);
  unsigned seen = 0;
  switch ((ir_op)n->op) {
  case IR_DELAY:
  case IR_TRANSPOSE:
  case IR_REVERSE:
  case IR_GATHER: /* its indices; the source is read where they say */
    return n->nkids > 0 ? ns_walk(m, ir_kid(m, r, 0), base, ex, depth + 1) : 0;
  case IR_RESHAPE:
    return n->nkids > 1 ? ns_walk(m, ir_kid(m, r, 1), base, ex, depth + 1) : 0;
  case IR_MAP:
    for (uint32_t i = 1; i < n->nkids; i++)
      seen |= ns_walk(m, ir_kid(m, r, i), base, ex, depth + 1);
    return seen;
  case IR_SLICE:
    for (uint32_t i = 1; i < n->nkids; i++) {
      ir_ref b = ir_kid(m, r, i);
      if (ns_refs(m, b, 0, base, depth + 1))
        seen |= NS_ROW;
      if (ex >= 0 && ns_refs_direct(m, b, (uint32_t)ex, (uint32_t)ex + 1, depth + 1))
        seen |= NS_ACROSS; /* neighbouring elements, neighbouring starts */
    }
    return n->nkids > 0 ? seen | ns_walk(m, ir_kid(m, r, 0), base, ex, depth + 1) : seen;
  case IR_GENERATE:
  case IR_BACKPERMUTE: {
    if (n->nkids < 2)
      return 0;
    ir_ref lam = ir_kid(m, r, 1);
    const ir_node *ln = ir_node_get(m, lam);
    if (ln->op != IR_LAM || ln->nkids < 1)
      return 0;
    uint32_t np = (uint32_t)ln->attr;
    ir_ref body = ir_kid(m, lam, 0);
    if (n->op == IR_GENERATE)
      return ns_reads(m, body, 0, np, base, ex, depth + 1);
    if (ns_refs(m, body, 0, np, depth + 1) && ns_refs(m, body, np, np + base, depth + 1))
      seen |= NS_ROW;
    return n->nkids > 2 ? seen | ns_walk(m, ir_kid(m, r, 2), base, ex, depth + 1) : seen;
  }
  default:
    return 0;
  }
}

/* Whether r computes its elements from their indices and scalars alone:
 * no read of an array, no call, no array operation in its functions
 * (a generate, an iota, maps of such). */
static bool ns_pure(const ac_module *m, ir_ref r, uint32_t depth) {
  if (depth > NS_MAX_DEPTH)
    return false;
  const ir_node *n = ir_node_get(m, r);
  if (n->op == IR_INDEX || n->op == IR_CALL || n->op == IR_FNREF || ps_is_array_op(m, r))
    return false;
  for (uint32_t i = 0; i < n->nkids; i++) {
    ir_ref k = ir_kid(m, r, i);
    if (k && !ns_pure(m, k, depth + 1))
      return false;
  }
  return true;
}

/* A computed row: rank-1 array expression r under `base` element binders
 * whose elements come from their index alone (ns_pure functions), and
 * whose extent neither depends on the element nor can fail, so the plan
 * can compute it before the launch (lib/lower/gpu.c's estimate). Returns
 * that extent expression (under the same binders), or IR_NONE. */
static ir_ref ns_computed(const ac_module *m, ir_ref r, uint32_t base, uint32_t depth) {
  if (depth > NS_MAX_DEPTH)
    return IR_NONE;
  const ir_node *n = ir_node_get(m, r);
  ir_typeinfo t = ir_ty_info(m->ctx, n->type);
  if (t.kind == TK_TUPLE && t.n > 0) /* a tuple of arrays: its first leaf's */
    t = ir_ty_info(m->ctx, t.fields[0]);
  if (t.kind != TK_ARRAY || t.rank != 1)
    return IR_NONE;
  ir_ref ext = IR_NONE;
  switch ((ir_op)n->op) {
  case IR_DELAY:
    return n->nkids == 1 ? ns_computed(m, ir_kid(m, r, 0), base, depth + 1) : IR_NONE;
  case IR_IOTA:
    ext = n->nkids == 1 ? ir_kid(m, r, 0) : IR_NONE;
    break;
  case IR_GENERATE:
    if (n->nkids == 2 && ir_node_get(m, ir_kid(m, r, 1))->op == IR_LAM &&
        ns_pure(m, ir_kid(m, ir_kid(m, r, 1), 0), depth + 1))
      ext = ir_kid(m, r, 0);
    break;
  case IR_MAP:
    if (n->nkids < 2 || ir_node_get(m, ir_kid(m, r, 0))->op != IR_LAM ||
        !ns_pure(m, ir_kid(m, ir_kid(m, r, 0), 0), depth + 1))
      return IR_NONE;
    for (uint32_t i = 1; i < n->nkids; i++) {
      ir_ref e = ns_computed(m, ir_kid(m, r, i), base, depth + 1);
      if (!e)
        return IR_NONE;
      ext = ext ? ext : e; /* the map checks the others against it */
    }
    return ext;
  default:
    return IR_NONE;
  }
  if (!ext || ns_refs(m, ext, 0, base, depth + 1) || ps_may_fail(m, ext))
    return IR_NONE;
  return ext;
}

/* The operand kid of fold-like node r, or UINT32_MAX. */
static uint32_t ns_row_kid(const ir_node *n) {
  return n->op == IR_FOLD || n->op == IR_SCAN || n->op == IR_SCANR ? 2
         : n->op == IR_SCAN_INCL || n->op == IR_SCANR_INCL || n->op == IR_FILTER ? 1
                                                                                : UINT32_MAX;
}

/* ps_coop_row; *ext gets a computed row's extent (ns_computed), else
 * IR_NONE. */
static bool ns_coop_row(const ac_module *m, ir_ref r, uint32_t base, int64_t ex, ir_ref *ext) {
  const ir_node *n = ir_node_get(m, r);
  uint32_t k = ns_row_kid(n);
  *ext = IR_NONE;
  if (k >= n->nkids)
    return false;
  ir_ref row = ir_kid(m, r, k);
  if (ns_walk(m, row, base, ex, 0) == NS_ROW)
    return true;
  *ext = ns_computed(m, row, base, 0);
  return *ext != IR_NONE;
}

bool ps_coop_row(const ac_module *m, ir_ref r, uint32_t base, int64_t ex) {
  ir_ref ext;
  return ns_coop_row(m, r, base, ex, &ext);
}

/* Whether r (or a function it calls) has an array operation. */
static bool ns_heavy(const ac_module *m, ir_ref r, uint32_t depth) {
  if (depth > NS_MAX_DEPTH)
    return true;
  const ir_node *n = ir_node_get(m, r);
  if (ps_is_array_op(m, r))
    return true;
  if ((n->op == IR_CALL || n->op == IR_FNREF) && n->attr >= 0 && (uint64_t)n->attr < m->nfuncs) {
    const ir_func *fn = &m->funcs[n->attr];
    if (!fn->is_extern && fn->body && ns_heavy(m, fn->body, depth + 1))
      return true;
  }
  for (uint32_t i = 0; i < n->nkids; i++) {
    ir_ref k = ir_kid(m, r, i);
    if (k && ns_heavy(m, k, depth + 1))
      return true;
  }
  return false;
}

typedef enum ns_found { NS_NOTHING, NS_FOLD, NS_HEAVY } ns_found;

bool ps_coop_array_op(const ac_module *m, ir_ref r) {
  switch ((ir_op)ir_node_get(m, r)->op) {
  case IR_GENERATE:
  case IR_MAP:
  case IR_GATHER:
  case IR_BACKPERMUTE:
  case IR_IOTA:
  case IR_FILL:
  case IR_SCAN:
  case IR_SCAN_INCL:
  case IR_SCANR:
  case IR_SCANR_INCL:
  case IR_FILTER:
    return true;
  default:
    return false;
  }
}

/* What r holds where every thread of a group runs it alike: a fold that
 * ps_coop_row accepts, or (which wins) an array operation that each
 * thread would compute in full, the same work 32 or 128 times over:
 * anything but a fold, a view (a rank-1 slice, a reshape) and the
 * operations the group computes together (ps_coop_array_op), or a call
 * of a function that has one. The functions of array operations, and
 * their delayed operands, are each thread's own work (`lane`): nothing
 * there is redundant, and no fold there is the group's. */
/* The computed rows ns_find met: the extent of the first, and the
 * element binders above it. */
typedef struct ns_rows {
  ir_ref ext;
  uint32_t base;
} ns_rows;

/* The recurrence of fold(f, z, r) when r is one of rank 2, through lets
 * and a field (`(rec ...).k`), and f cannot fail: the fold of its rows,
 * which a group computes together by anti-diagonals (lib/codegen/
 * seq_loop.c, cg_seq_rec_fold); *lets gets the lets' count. Else IR_NONE. */
static ir_ref ns_rec_fold(const ac_module *m, ir_ref r, uint32_t *lets) {
  const ir_node *n = ir_node_get(m, r);
  if (n->op != IR_FOLD || n->nkids != 3 || ps_fn_may_fail(m, ir_kid(m, r, 0)))
    return IR_NONE;
  ir_ref a = ir_kid(m, r, 2);
  *lets = 0;
  while (ir_node_get(m, a)->op == IR_LET) {
    a = ir_kid(m, a, 1);
    (*lets)++;
  }
  if (ir_node_get(m, a)->op == IR_PROJ)
    a = ir_kid(m, a, 0);
  const ir_node *rn = ir_node_get(m, a);
  return rn->op == IR_REC && rn->attr == 2 && rn->nkids == 5 ? a : IR_NONE;
}

/* A function body (after lets) that is the fold of a rank-2 recurrence's
 * rows (ns_rec_fold), or a fold of that (the maximum over the table:
 * Smith-Waterman's score), with nothing else that every thread would
 * compute in full. */
static bool ns_rec_fold_body(const ac_module *m, ir_ref b, uint32_t depth) {
  while (ir_node_get(m, b)->op == IR_LET) {
    if (ns_heavy(m, ir_kid(m, b, 0), depth + 1))
      return false;
    b = ir_kid(m, b, 1);
  }
  const ir_node *n = ir_node_get(m, b);
  if (n->op != IR_FOLD || n->nkids != 3 || ns_heavy(m, ir_kid(m, b, 1), depth + 1))
    return false;
  uint32_t lets;
  ir_ref rec = ns_rec_fold(m, b, &lets);
  if (!rec)
    return depth == 0 && ir_node_get(m, ir_kid(m, b, 2))->op == IR_FOLD &&
           ns_rec_fold_body(m, ir_kid(m, b, 2), depth + 1);
  ir_ref a = ir_kid(m, b, 2);
  for (uint32_t i = 0; i < lets; i++, a = ir_kid(m, a, 1))
    if (ns_heavy(m, ir_kid(m, a, 0), depth + 1))
      return false;
  for (uint32_t k = 0; k < 4; k++)
    if (ns_heavy(m, ir_kid(m, rec, k), depth + 1))
      return false;
  return true;
}

static ns_found ns_find(const ac_module *m, ir_ref r, uint32_t base, int64_t ex, bool lane,
                        uint32_t depth, ns_rows *rows) {
  if (depth > NS_MAX_DEPTH)
    return NS_HEAVY;
  const ir_node *n = ir_node_get(m, r);
  bool arrop = ps_is_array_op(m, r);
  ir_ref ext;
  uint32_t lets;
  ir_ref rec = lane ? IR_NONE : ns_rec_fold(m, r, &lets);
  if (rec) {
    /* the group's: z, the lets, the bounds are uniform code; the body is
     * each thread's (its points) */
    ns_found found = ns_find(m, ir_kid(m, r, 1), base, ex, false, depth + 1, rows);
    ir_ref a = ir_kid(m, r, 2);
    uint32_t b = 0;
    for (uint32_t i = 0; i < lets && found != NS_HEAVY; i++, b++, a = ir_kid(m, a, 1))
      found = ns_find(m, ir_kid(m, a, 0), base + b, ex < 0 ? ex : ex + b, false, depth + 1, rows);
    for (uint32_t k = 0; k < 4 && found != NS_HEAVY; k++)
      found = ns_find(m, ir_kid(m, rec, k), base + b, ex < 0 ? ex : ex + b, false, depth + 1, rows);
    return found == NS_HEAVY ? NS_HEAVY : NS_FOLD;
  }
  if (!lane && ns_coop_row(m, r, base, ex, &ext)) {
    if (ext && rows && !rows->ext)
      *rows = (ns_rows){ext, base};
    /* the start value (a fold's, an exclusive scan's) is uniform code */
    bool z = n->op != IR_SCAN_INCL && n->op != IR_SCANR_INCL && n->op != IR_FILTER &&
             n->nkids > 1;
    return z && ns_find(m, ir_kid(m, r, 1), base, ex, false, depth + 1, rows) == NS_HEAVY
               ? NS_HEAVY
               : NS_FOLD;
  }
  if (!lane && arrop && n->op != IR_FOLD && n->op != IR_RESHAPE && n->op != IR_DELAY &&
      !ps_coop_array_op(m, r) &&
      !(n->op == IR_SLICE && ir_ty_info(m->ctx, n->type).kind == TK_ARRAY &&
        ir_ty_info(m->ctx, n->type).rank == 1))
    return NS_HEAVY;
  ns_found found = NS_NOTHING;
  if (!lane && (n->op == IR_CALL || n->op == IR_FNREF) && n->attr >= 0 &&
      (uint64_t)n->attr < m->nfuncs) {
    const ir_func *fn = &m->funcs[n->attr];
    if (n->op == IR_CALL && !fn->is_extern && fn->body && ns_rec_fold_body(m, fn->body, 0))
      found = NS_FOLD; /* a recurrence's score, computed by the group */
    else if (!fn->is_extern && fn->body && ns_heavy(m, fn->body, depth + 1))
      return NS_HEAVY;
  }
  for (uint32_t i = 0; i < n->nkids && found != NS_HEAVY; i++) {
    ir_ref k = ir_kid(m, r, i);
    if (!k)
      continue;
    ir_op kop = (ir_op)ir_node_get(m, k)->op;
    /* functions, and delayed operands (computed element by element) */
    bool in_lane = lane || (arrop && (kop == IR_LAM || kop == IR_FNREF || kop == IR_DELAY));
    uint32_t b = ir_binders(m, r, i);
    ns_found in = ns_find(m, k, base + b, ex < 0 ? ex : ex + b, in_lane, depth + 1, rows);
    found = in > found ? in : found;
  }
  return found;
}

bool ps_coop_code(const ac_module *m, ir_ref code, bool indexed) {
  return ps_coop_code_rows(m, code, indexed, NULL, NULL);
}

bool ps_coop_code_rows(const ac_module *m, ir_ref code, bool indexed, ir_ref *ext,
                       uint32_t *base) {
  ns_rows rows = {IR_NONE, 0};
  if (ext)
    *ext = IR_NONE;
  if (code == IR_NONE || code >= m->nnodes)
    return false;
  const ir_node *n = ir_node_get(m, code);
  ir_ref body = IR_NONE;
  uint32_t np = 0;
  if (n->op == IR_LAM && n->nkids == 1) {
    body = ir_kid(m, code, 0);
    np = (uint32_t)n->attr;
  } else if (n->op == IR_FNREF && n->attr >= 0 && (uint64_t)n->attr < m->nfuncs &&
             !m->funcs[n->attr].is_extern) {
    body = m->funcs[n->attr].body;
    np = m->funcs[n->attr].nparams;
  }
  /* a generate's last parameter is its innermost index: de Bruijn 0 */
  if (!body || ns_find(m, body, np, indexed && np > 0 ? 0 : -1, false, 0, &rows) != NS_FOLD)
    return false;
  if (ext) {
    *ext = rows.ext;
    *base = rows.base;
  }
  return true;
}

bool ps_coop_rec_fold(const ac_module *m, ir_ref r) {
  uint32_t lets;
  const ir_node *n = ir_node_get(m, r);
  return ns_rec_fold(m, r, &lets) ||
         (n->op == IR_FOLD && n->nkids == 3 && ns_rec_fold(m, ir_kid(m, r, 2), &lets));
}

bool ps_coop_rec_fn(const ac_module *m, int64_t fn) {
  return fn >= 0 && (uint64_t)fn < m->nfuncs && !m->funcs[fn].is_extern && m->funcs[fn].body &&
         ns_rec_fold_body(m, m->funcs[fn].body, 0);
}
