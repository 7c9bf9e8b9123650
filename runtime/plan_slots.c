/* runtime/plan_slots.c: the types of a plan's words (part of pl_validate).
 *
 * Kernels trust the frame: a data word is the address of an array whose
 * extents are the words after it, and a kernel reads and writes through it
 * without checking. So a plan must never compute a data word or an extent
 * from an expression, launch with an address as the count, or hand a
 * kernel a word nothing ever wrote. pl_validate's other checks keep every
 * index in range; this pass gives each word ONE type and holds every use
 * to it:
 *
 *   data     the first word of an array leaf (a param, result, alloc, view
 *            or assign of rank r >= 1), of one element type and rank
 *   extent   one of the r words after a data word
 *   scalar   a scalar leaf, a `set` or `for` word, or a word only kernels
 *            read and write (a count a kernel computes)
 *
 * and the rules (each names the instruction, kernel or leaf that breaks it):
 *   - a word has one type: leaves that overlap agree (the same data word
 *     has the same element type and rank everywhere, an extent is never a
 *     data word or a written scalar; a scalar leaf that is only read, a
 *     result or an assign's source, may be an extent: `len(xs)`);
 *   - `set` and `for` write scalars only, `free` and a view's source are
 *     data words, an expression never reads a data word (an address is not
 *     a count, an extent or a bound), `if` and `break unless` test scalars;
 *   - a kernel writes scalars only (its `writes`); an extern kernel's
 *     `ptr` argument is a data word and its scalar arguments are not;
 *   - every word that is read (by an expression, an if, a view, an assign,
 *     a result, or a kernel that does not write it) is written somewhere:
 *     a parameter, an instruction or a kernel's `writes`.
 * A kernel index edited in a `launch` is not caught here: lowering makes
 * kernels it may not launch (a nested operation's fallback), so "every
 * kernel is launched" is no rule; the checksum catches that edit.
 * What remains trusted is values: a plan whose words are well typed can
 * still compute a wrong count from the right words (docs/runtime.md §11).
 * This pass is flow-insensitive and linear in the plan's size.
 */
#include "runtime/plan_impl.h"

#include <string.h>

/* Per word: its type (low 2 bits), whether something writes it, whether
 * something reads it, and for a data word its element type and rank. */
enum { PS_NONE, PS_DATA, PS_EXTENT, PS_SCALAR };
#define PS_KIND 3u
#define PS_WRITTEN 4u
#define PS_READ 8u

typedef struct ps_word {
  uint8_t flags;
  uint8_t sc;    /* PS_DATA: element type */
  uint16_t rank; /* PS_DATA: rank (<= PL_MAX_RANK) */
} ps_word;

typedef struct ps {
  const pl_plan *p;
  pl_fault *f;
  ps_word *w;
} ps;

static const char *ps_kind_name(unsigned k) {
  static const char *const names[] = {"unused", "an array's data (an address)", "an array's extent",
                                      "a scalar"};
  return names[k & PS_KIND];
}

/* Gives word `slot` type `kind` (data: with sc and rank), or fails when it
 * has another. */
static bool ps_type(ps *S, pl_part part, uint32_t index, uint32_t slot, unsigned kind, uint8_t sc,
                    uint32_t rank) {
  ps_word *w = &S->w[slot];
  unsigned have = w->flags & PS_KIND;
  if (have == PS_NONE) {
    w->flags = (uint8_t)((w->flags & ~PS_KIND) | kind);
    w->sc = sc;
    w->rank = (uint16_t)rank;
    return true;
  }
  if (have != kind)
    return pl_fail(S->f, part, index, "word %%%u is %s here, but %s elsewhere in the plan", slot,
                   ps_kind_name(kind), ps_kind_name(have));
  if (kind == PS_DATA && (w->sc != sc || w->rank != rank))
    return pl_fail(S->f, part, index,
                   "word %%%u is the data of a %s array of rank %u here, but of a %s array of "
                   "rank %u elsewhere in the plan",
                   slot, ac_scalar_name((ac_scalar)sc), rank, ac_scalar_name((ac_scalar)w->sc),
                   w->rank);
  return true;
}

/* A leaf's words: data + extents, or one scalar. */
static bool ps_leaf(ps *S, pl_part part, uint32_t index, uint32_t slot, uint8_t sc, uint32_t rank,
                    unsigned mark) {
  /* an extent read as an i64 scalar (a result `len(xs)`, an assign's
   * source) is a read of a number, which extents are */
  if (rank == 0 && mark == PS_READ && (S->w[slot].flags & PS_KIND) == PS_EXTENT) {
    S->w[slot].flags |= PS_READ;
    return true;
  }
  if (!ps_type(S, part, index, slot, rank ? PS_DATA : PS_SCALAR, sc, rank))
    return false;
  for (uint32_t r = 0; r < rank; r++)
    if (!ps_type(S, part, index, slot + 1 + r, PS_EXTENT, 0, 0))
      return false;
  for (uint32_t r = 0; r <= rank; r++)
    S->w[slot + r].flags |= (uint8_t)mark;
  return true;
}

/* A word that must not be an array's data or extent (it is written as, or
 * tested as, a scalar). */
static bool ps_scalar(ps *S, pl_part part, uint32_t index, uint32_t slot, const char *use,
                      unsigned mark) {
  unsigned have = S->w[slot].flags & PS_KIND;
  if (have == PS_DATA || have == PS_EXTENT)
    return pl_fail(S->f, part, index, "%s word %%%u, which is %s", use, slot, ps_kind_name(have));
  S->w[slot].flags |= (uint8_t)mark;
  return ps_type(S, part, index, slot, PS_SCALAR, 0, 0);
}

/* The words expressions read: never a data word (an address is not a
 * count, an extent or a bound). Every expression is reachable from an
 * instruction, so checking each %N once is checking every read. */
static bool ps_exprs(ps *S) {
  const pl_plan *p = S->p;
  for (uint32_t e = 0; e < p->nexprs; e++) {
    const pl_expr *x = &p->exprs[e];
    if (x->op != PX_WORD)
      continue;
    unsigned have = S->w[x->a].flags & PS_KIND;
    if (have == PS_DATA)
      return pl_fail(S->f, PP_EXPR, e,
                     "an expression reads word %%%u, which is %s: an address is not a number", x->a,
                     ps_kind_name(have));
    S->w[x->a].flags |= PS_READ;
  }
  return true;
}

/* Leaves first (they fix the data and extent words), then the other uses.
 * Leaves that are only read as scalars (a scalar result, a scalar
 * assign's source) come last: they may be extents, which the leaves that
 * write them must have typed first. */
static bool ps_leaves(ps *S) {
  const pl_plan *p = S->p;
  for (uint32_t i = 0; i < p->nparams; i++)
    if (!ps_leaf(S, PP_PARAM, i, p->params[i].slot, p->params[i].sc, p->params[i].rank, PS_WRITTEN))
      return false;
  for (int pass = 0; pass < 2; pass++) {
    for (uint32_t i = 0; i < p->nresults; i++) {
      const pl_leaf *l = &p->results[i];
      if ((l->rank == 0) == (pass == 1) &&
          !ps_leaf(S, PP_RESULT, i, l->slot, l->sc, l->rank, PS_READ))
        return false;
    }
    for (uint32_t i = 0; i < p->ninsts; i++) {
      const pl_inst *in = &p->insts[i];
      if (pass == 0 && (in->op == PI_ALLOC || in->op == PI_VIEW || in->op == PI_ASSIGN) &&
          !ps_leaf(S, PP_INST, i, in->a, in->sc, in->rank, PS_WRITTEN))
        return false;
      if (in->op == PI_ASSIGN && (in->rank == 0) == (pass == 1) &&
          !ps_leaf(S, PP_INST, i, in->b, in->sc, in->rank, PS_READ))
        return false;
    }
  }
  return true;
}

static bool ps_insts(ps *S) {
  const pl_plan *p = S->p;
  for (uint32_t i = 0; i < p->ninsts; i++) {
    const pl_inst *in = &p->insts[i];
    switch ((pl_iop)in->op) {
    case PI_SET:
      if (!ps_scalar(S, PP_INST, i, in->a, "'set' writes", PS_WRITTEN))
        return false;
      break;
    case PI_FOR:
      if (!ps_scalar(S, PP_INST, i, in->a, "'for' counts in", PS_WRITTEN))
        return false;
      break;
    case PI_IF:
    case PI_BREAK_UNLESS:
      if (!ps_scalar(S, PP_INST, i, in->a, "the condition is", PS_READ))
        return false;
      break;
    case PI_FREE:
    case PI_VIEW: {
      uint32_t w = in->op == PI_FREE ? in->a : in->b;
      if ((S->w[w].flags & PS_KIND) != PS_DATA)
        return pl_fail(S->f, PP_INST, i, "%s word %%%u, which is %s, not an array's data",
                       in->op == PI_FREE ? "'free' releases" : "a view of", w,
                       ps_kind_name(S->w[w].flags));
      if (in->op == PI_VIEW)
        S->w[w].flags |= PS_READ;
      break;
    }
    default:
      break;
    }
  }
  return true;
}

static bool ps_kernels(ps *S) {
  const pl_plan *p = S->p;
  for (uint32_t i = 0; i < p->nkernels; i++) {
    const pl_kernel *k = &p->kernels[i];
    /* uses and writes are ascending: merge them */
    for (uint32_t u = 0, j = 0; u < k->nuses; u++) {
      uint32_t w = k->uses[u];
      while (j < k->nwrites && k->writes[j] < w)
        j++;
      bool writes = j < k->nwrites && k->writes[j] == w;
      if (writes && !ps_scalar(S, PP_KERNEL, i, w, "the kernel writes", PS_WRITTEN))
        return false;
      if (!writes)
        S->w[w].flags |= PS_READ;
    }
    for (uint32_t a = 0; a < k->nkargs; a++) {
      const pl_karg *g = &k->kargs[a];
      unsigned have = S->w[g->word].flags & PS_KIND;
      if (g->ptr ? have != PS_DATA : have == PS_DATA)
        return pl_fail(S->f, PP_KERNEL, i, "extern kernel k%u: argument %u (%%%u) is %s, not %s", i,
                       a, g->word, ps_kind_name(have),
                       g->ptr ? "an array's data" : "a scalar or an extent");
    }
  }
  return true;
}

/* Every word that is read is written somewhere (flow-insensitive: a word
 * an edit left without its writer is caught, not one read too early). */
static bool ps_written(ps *S) {
  const pl_plan *p = S->p;
  for (uint32_t w = 0; w < p->nslots; w++) {
    unsigned fl = S->w[w].flags;
    if (!(fl & PS_READ) || (fl & PS_WRITTEN))
      continue;
    /* name the first reader: an instruction, a kernel or a result */
    for (uint32_t i = 0; i < p->nresults; i++)
      if (w >= p->results[i].slot && w <= p->results[i].slot + p->results[i].rank)
        return pl_fail(S->f, PP_RESULT, i, "result word %%%u is never written", w);
    for (uint32_t i = 0; i < p->nkernels; i++)
      for (uint32_t u = 0; u < p->kernels[i].nuses; u++)
        if (p->kernels[i].uses[u] == w)
          return pl_fail(S->f, PP_KERNEL, i, "kernel k%u uses word %%%u, which is never written", i,
                         w);
    return pl_fail(S->f, PP_PLAN, 0, "word %%%u is read but never written", w);
  }
  return true;
}

ac_status pl_check_slots(const pl_plan *p, pl_fault *f) {
  size_t n = (size_t)p->nslots * sizeof(ps_word);
  void *scratch = ac_alloc(p->ctx, n ? n : 1);
  if (!scratch)
    return AC_ERR_NOMEM;
  ps S = {p, f, scratch};
  memset(S.w, 0, n);
  bool ok = ps_leaves(&S) && ps_insts(&S) && ps_exprs(&S) && ps_kernels(&S) && ps_written(&S);
  ac_free(p->ctx, scratch);
  return ok ? AC_OK : AC_ERR_INTERNAL;
}
