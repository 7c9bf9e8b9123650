/* lib/passes/printable.c: ps_printable (pass.h), whether a function body
 * prints as text that parses again.
 *
 * The text format bounds how deeply programs nest (lex.h: PARSE_MAX_DEPTH
 * nested operations as the printer counts them, PARSE_MAX_NEST levels of
 * syntax as the parser counts them). Passes that deepen trees (inline's
 * blocks in expression position, fuse's and smem-stencil's hints, cse's
 * and hoist's lets) check their results with it and keep the old body when
 * the new one would not print as a program, so that every module a pass
 * leaves can be written out and read back (arrayc-opt --verify-each).
 * The counts below follow print.c's deeper() and the parser's nesting.
 */
#include "passes/pass.h"

#include "lex.h" /* PARSE_MAX_DEPTH, PARSE_MAX_NEST: what the text format holds */

#include <string.h>

static bool pf_is_let(ir_op op) {
  return op == IR_LET || op == IR_LETTUP;
}

/* The printer's precedence level of a node (print.c, level()), the
 * literal's sign aside: a literal counts as a prefix expression here. */
static int pf_level(ir_op op) {
  if (ir_ops[op].syntax == SX_INFIX)
    return ir_ops[op].prec;
  if (ir_ops[op].syntax == SX_PREFIX || op == IR_LIT)
    return 10;
  if (op == IR_IF || op == IR_LOOP || op == IR_REC || op == IR_LAM)
    return 0;
  return 11;
}

/* Levels of syntax nesting the parser counts (parse.c, enter(): one per
 * parse_expr and per prefix operator) between node r and its child j
 * printed inside it: statements and results of blocks, arguments,
 * conditions and bounds are each parsed as an expression; operands of
 * operators only when parenthesised. Rounded up where the printer's choice
 * depends on more than the two nodes. */
static uint32_t pf_nest(const ac_module *m, ir_ref r, uint32_t j, ir_ref k) {
  const ir_node *n = ir_node_get(m, r);
  ir_op op = (ir_op)n->op, kop = (ir_op)ir_node_get(m, k)->op;
  switch (ir_ops[op].syntax) {
  case SX_INFIX: {
    int prec = ir_ops[op].prec;
    bool cmp = ir_ops[op].typing == TC_CMP || ir_ops[op].typing == TC_ORD;
    int need = j == 0 && !cmp ? prec : prec + 1;
    return pf_level(kop) < need;
  }
  case SX_PREFIX: /* `-(5)` is the negation of a literal, `-5` is one */
    return 1 + (kop == IR_LIT || pf_level(kop) < 10);
  default:
    break;
  }
  switch (op) {
  case IR_LET:
  case IR_LETTUP:
    return j == 1 && pf_is_let(kop) ? 0 : 1; /* a chain's lets are one block */
  case IR_IF:
    /* `else if` continues the chain; a branch's lets are its block's */
    return j > 0 && (pf_is_let(kop) || (j == 2 && kop == IR_IF)) ? 0 : 1;
  case IR_PROJ:
  case IR_INDEX:
    return j > 0 || pf_level(kop) < 11;
  case IR_ARRLIT:
    return (uint32_t)n->attr + (kop == IR_ARRLIT);
  case IR_LOOP:
    return kop == IR_LAM ? 0 : 1; /* the lambda's body counts its own */
  default:
    return 1;
  }
}

/* Whether the printer counts child j of r one level deeper than the tree
 * (print.c, deeper()): a let opening a block in expression position
 * (`a + { let x = ..; x }`, what inlining makes) counts once for the
 * expression and once as a statement; the lets of a chain, and blocks of
 * branches, lambda and rec bodies, once. */
static bool pf_extra(const ac_module *m, ir_ref r, uint32_t j, ir_ref k) {
  const ir_node *n = ir_node_get(m, r);
  if (!pf_is_let((ir_op)ir_node_get(m, k)->op))
    return false;
  switch ((ir_op)n->op) {
  case IR_LET:
  case IR_LETTUP:
    return j != 1;
  case IR_IF:
    return j == 0;
  case IR_LAM:
    return false;
  case IR_REC:
    return j + 1 != n->nkids;
  default:
    return true;
  }
}

typedef struct pf_frame {
  ir_ref r;
  uint32_t depth, nest;
} pf_frame;

bool ps_printable(const ac_module *m, ir_ref body) {
  ac_context *ctx = m->ctx;
  pf_frame small[64], *stk = small;
  size_t n = 0, cap = 64;
  bool ok = true;
  stk[n++] = (pf_frame){body, 1, 1};
  while (n && ok) {
    pf_frame f = stk[--n];
    if (f.depth > PARSE_MAX_DEPTH || f.nest > PARSE_MAX_NEST) {
      ok = false;
      break;
    }
    uint32_t nk = ir_node_get(m, f.r)->nkids;
    if (n + nk > cap) {
      size_t ncap = (n + nk) * 2;
      pf_frame *v = ac_alloc(ctx, ncap * sizeof *v);
      if (!v) {
        ok = false;
        break;
      }
      memcpy(v, stk, n * sizeof *v);
      if (stk != small)
        ac_free(ctx, stk);
      stk = v;
      cap = ncap;
    }
    for (uint32_t j = 0; j < nk; j++) {
      ir_ref k = ir_kid(m, f.r, j);
      if (k)
        stk[n++] =
            (pf_frame){k, f.depth + 1 + pf_extra(m, f.r, j, k), f.nest + pf_nest(m, f.r, j, k)};
    }
  }
  if (stk != small)
    ac_free(ctx, stk);
  return ok;
}
