/* lib/target/ptxstats.c: the PTX analyser of ptxstats.h.
 *
 * The analyser reads PTX as LLVM's NVPTX backend writes it, and any PTX
 * a person writes: a lexer (comments dropped; identifiers keep their dots,
 * so an opcode such as `ld.global.nc.v4.f32` is one token), then a scan of
 * the module level for .shared declarations, .target and function headers
 * (.entry/.func, whose .maxntid/.reqntid follow the parameters), and of
 * each body for labels, directives (.reg, .shared, .local) and
 * instructions. Braces that open a statement are scopes (LLVM wraps call
 * sequences in them); braces inside one are vector operands.
 *
 * The hot loop is found the textbook way rather than by "a label with a
 * later branch back to it": LLVM lays loops out rotated (sdot's block loop
 * is branched to from a block placed above its header), so the text order
 * misses loops. Instead: basic blocks (a label starts one, a branch, ret,
 * exit or trap ends one), the control-flow graph (bra, brx.idx through
 * .branchtargets, fall-through), dominators (Cooper, Harvey and Kennedy,
 * "A Simple, Fast Dominance Algorithm", 2001), natural loops (a back edge
 * u -> h with h dominating u; the loop is h and every block that reaches u
 * without passing h; loops sharing a header are one loop). Each block
 * belongs to its innermost loop, and a loop's own blocks are those whose
 * innermost loop it is. The hot loop is the loop whose own blocks load and
 * store the most elements through global and generic memory (ties: more
 * own instructions, then the first in the text): with unrolled code, this
 * is the level where the memory traffic is written, not a remainder loop
 * nested below it or an outer loop that merely contains it. Elements
 * rather than instructions, so that vectorising a loop does not demote it
 * (reduce_sum's block loop, two ld.global.v4 and a scalar load, would
 * tie with its once-a-chunk epilogue's three scalar accesses). Counts are
 * static: each instruction of the own blocks once, whichever path an
 * iteration takes.
 *
 * ptxas, the occupancy calculator and the report line are
 * ptxstats_report.c's.
 */
#include "target/ptxstats.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define PX_NONE SIZE_MAX
/* Cap on sizes and counts read from the text, so that products of them
 * cannot overflow (2^40 bytes of shared memory is already impossible). */
#define PX_NUM_CAP ((uint64_t)1 << 40)

/* ---- tokens ---- */

enum { PX_EOF, PX_IDENT, PX_PUNCT, PX_STR };

typedef struct px_tok {
  const char *s;
  size_t n;
  int kind;
} px_tok;

/* One item of a function body, in text order. */
enum { PX_ITEM_LABEL, PX_ITEM_INST };
/* How an instruction ends a basic block. */
enum { PX_TERM_NONE, PX_TERM_BRA, PX_TERM_BRX, PX_TERM_END };
/* What an instruction is (px_classify). */
enum {
  PX_I_LD = 1 << 0,
  PX_I_ST = 1 << 1,
  PX_I_GLOBAL = 1 << 2,
  PX_I_GEN = 1 << 3,
  PX_I_SHARED = 1 << 4,
  PX_I_NC = 1 << 5,
  PX_I_VEC = 1 << 6,
  PX_I_FMA = 1 << 7,
  PX_I_MEMBAR = 1 << 8,
  PX_I_ATOM = 1 << 9,
  PX_I_BAR = 1 << 10,
  PX_I_CALL = 1 << 11
};

typedef struct px_item {
  int kind, term;
  bool pred;
  unsigned flags, elems;
  size_t tok;        /* label: its name; bra: its target; brx: its .branchtargets label */
  size_t ref0, nref; /* its register operands: P->rrefs[ref0 .. ref0 + nref) */
} px_item;

/* A declared register name: `%r<12>` (ranged: %r0..%r11) or `%x`. Every
 * register gets an id (base + index) for the liveness analysis. */
typedef struct px_rclass {
  const px_tok *name;
  bool ranged;
  uint32_t base, count;
  unsigned weight; /* 32-bit registers it takes: 0 (predicate), 1, 2 or 4 */
} px_rclass;

/* One register operand of an instruction. */
typedef struct px_rref {
  uint32_t id;
  bool def;
} px_rref;

/* The most registers whose liveness is tracked per function (a bitset
 * each per block); beyond it regs_live is not computed. */
#define PX_MAX_VREGS (1u << 20)

/* A .shared array (owner: the function declaring it, or -1 at module level). */
typedef struct px_var {
  const px_tok *name;
  uint64_t size, align;
  bool dyn;
  long owner;
} px_var;

/* label NAME: .branchtargets A, B, ...; (tokens [first, end)) */
typedef struct px_targets {
  size_t label, first, end;
} px_targets;

typedef struct px_label {
  const px_tok *name;
  size_t block;
} px_label;

typedef struct px_block {
  size_t first; /* its first item */
  size_t label; /* token of its first label, or PX_NONE */
  size_t last;  /* item of its last instruction, or PX_NONE */
  px_counts c;
} px_block;

/* A call (or a reference to a function) to resolve once all names are known. */
typedef struct px_ref {
  size_t from, tok;
} px_ref;

/* Which of the first n .shared arrays a function names. */
typedef struct px_uses {
  bool *uses;
  size_t n;
} px_uses;

/* One analysis: the tokens, the module's arrays and per-function scratch. */
typedef struct px_parse {
  ac_context *ctx;
  px_module *m;
  bool oom;
  px_tok *toks;
  size_t ntoks, ctoks;
  px_var *vars;
  size_t nvars, cvars;
  px_ref *refs;
  size_t nrefs, crefs;
  /* per function (refilled for each) */
  unsigned barrier_mask;
  bool barrier_any;
  bool *uses_var; /* nvars entries, grown as vars are added */
  size_t cuses;
  px_uses *func_uses; /* per function: the vars it names (its copy of uses_var) */
  size_t cfunc_uses, cfuncs;
  px_item *items;
  size_t nitems, citems;
  px_targets *targets;
  size_t ntargets, ctargets;
  px_rclass *rclasses;
  size_t nrclasses, crclasses;
  uint32_t nvregs; /* ids handed out; > PX_MAX_VREGS: too many to track */
  px_rref *rrefs;
  size_t nrrefs, crrefs;
} px_parse;

#define PX_GROW(P, vec, cap, need)                                                                 \
  ((P)->oom || ac_grow((P)->ctx, (void **)&(vec), &(cap), (need), sizeof *(vec))                   \
       ? !(P)->oom                                                                                 \
       : ((P)->oom = true, false))

static bool px_ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '$' || c == '%' || c == '.';
}

static bool px_push_tok(px_parse *P, const char *s, size_t n, int kind) {
  if (!PX_GROW(P, P->toks, P->ctoks, P->ntoks + 1))
    return false;
  P->toks[P->ntoks++] = (px_tok){s, n, kind};
  return true;
}

/* Splits the text into tokens, ending with a PX_EOF token. */
static bool px_lex(px_parse *P, const char *s, size_t len) {
  size_t i = 0;
  while (i < len) {
    char c = s[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
      i++;
    } else if (c == '/' && i + 1 < len && s[i + 1] == '/') {
      while (i < len && s[i] != '\n')
        i++;
    } else if (c == '/' && i + 1 < len && s[i + 1] == '*') {
      i += 2;
      while (i + 1 < len && !(s[i] == '*' && s[i + 1] == '/'))
        i++;
      i = i + 2 < len ? i + 2 : len;
    } else {
      size_t st = i;
      int kind;
      if (c == '"') {
        for (i++; i < len && s[i] != '"'; i++)
          if (s[i] == '\\' && i + 1 < len)
            i++;
        i = i < len ? i + 1 : len;
        kind = PX_STR;
      } else if (px_ident_char(c)) {
        /* `::` belongs to names such as ld.shared::cta; a label's `:` does not */
        while (i < len) {
          if (px_ident_char(s[i]))
            i++;
          else if (s[i] == ':' && i + 2 < len && s[i + 1] == ':' && px_ident_char(s[i + 2]))
            i += 2;
          else
            break;
        }
        kind = PX_IDENT;
      } else {
        i++;
        kind = PX_PUNCT;
      }
      if (!px_push_tok(P, s + st, i - st, kind))
        return false;
    }
  }
  return px_push_tok(P, s + len, 0, PX_EOF);
}

static bool tok_is(const px_tok *t, const char *s) {
  size_t n = strlen(s);
  return t->kind != PX_EOF && t->n == n && memcmp(t->s, s, n) == 0;
}

static bool tok_punct(const px_tok *t, char c) {
  return t->kind == PX_PUNCT && t->s[0] == c;
}

static bool tok_same(const px_tok *a, const px_tok *b) {
  return a->n == b->n && memcmp(a->s, b->s, a->n) == 0;
}

/* A decimal or 0x-hexadecimal number, capped at PX_NUM_CAP. */
static bool tok_num(const px_tok *t, uint64_t *v) {
  if (t->kind != PX_IDENT || t->n == 0)
    return false;
  size_t i = 0;
  unsigned base = 10;
  if (t->n > 2 && t->s[0] == '0' && (t->s[1] == 'x' || t->s[1] == 'X')) {
    base = 16;
    i = 2;
  }
  uint64_t x = 0;
  for (; i < t->n; i++) {
    char c = t->s[i];
    unsigned d;
    if (c >= '0' && c <= '9')
      d = (unsigned)(c - '0');
    else if (base == 16 && c >= 'a' && c <= 'f')
      d = (unsigned)(c - 'a' + 10);
    else if (base == 16 && c >= 'A' && c <= 'F')
      d = (unsigned)(c - 'A' + 10);
    else
      return false;
    x = x * base + d;
    if (x > PX_NUM_CAP)
      x = PX_NUM_CAP;
  }
  *v = x;
  return true;
}

static uint64_t px_mul(uint64_t a, uint64_t b) {
  return a && b > PX_NUM_CAP / a ? PX_NUM_CAP : a * b;
}

static uint64_t px_align_up(uint64_t x, uint64_t a) {
  return a > 1 ? (x + a - 1) / a * a : x;
}

/* Bits of a type token (.b8 8, .f16x2 32, .b128 128), 1 for .pred, 0 if
 * it is not a type. */
static unsigned px_type_bits(const px_tok *t) {
  if (t->kind != PX_IDENT || t->n < 3 || t->s[0] != '.')
    return 0;
  if (tok_is(t, ".pred"))
    return 1;
  const char *s = t->s + 1, *e = t->s + t->n;
  if (e - s >= 2 && s[0] == 'b' && s[1] == 'f')
    s += 2;
  else if (*s == 'b' || *s == 's' || *s == 'u' || *s == 'f')
    s++;
  else
    return 0;
  unsigned bits = 0;
  while (s < e && *s >= '0' && *s <= '9' && bits < 1024)
    bits = bits * 10 + (unsigned)(*s++ - '0');
  if (s + 2 == e && s[0] == 'x' && (s[1] == '2' || s[1] == '4'))
    bits *= (unsigned)(s[1] - '0');
  else if (s != e)
    return 0;
  return bits == 8 || bits == 16 || bits == 32 || bits == 64 || bits == 128 ? bits : 0;
}

/* The element count of a vector qualifier (.v2 2), else 0. */
static unsigned px_vec(const px_tok *t) {
  if (tok_is(t, ".v2"))
    return 2;
  if (tok_is(t, ".v4"))
    return 4;
  if (tok_is(t, ".v8"))
    return 8;
  return 0;
}

/* ---- instructions ---- */

/* Is part (of an opcode split at dots) s[0..n) equal to w? */
static bool px_part(const char *s, size_t n, const char *w) {
  return strlen(w) == n && memcmp(s, w, n) == 0;
}

/* Classifies opcode op (one token); *elems is the vector width (1 for
 * scalars) and *term how it ends a block. */
static unsigned px_classify(const px_tok *op, unsigned *elems, int *term) {
  const char *s = op->s, *e = op->s + op->n;
  const char *dot = memchr(s, '.', op->n);
  size_t bn = dot ? (size_t)(dot - s) : op->n;
  unsigned flags = 0;
  *elems = 1;
  *term = PX_TERM_NONE;
  bool ld = px_part(s, bn, "ld") || px_part(s, bn, "ldu"), st = px_part(s, bn, "st");
  if (px_part(s, bn, "bra"))
    *term = PX_TERM_BRA;
  else if (px_part(s, bn, "brx"))
    *term = PX_TERM_BRX;
  else if (px_part(s, bn, "ret") || px_part(s, bn, "exit") || px_part(s, bn, "trap"))
    *term = PX_TERM_END;
  else if (px_part(s, bn, "fma"))
    flags |= PX_I_FMA;
  else if (px_part(s, bn, "membar") || px_part(s, bn, "fence"))
    flags |= PX_I_MEMBAR;
  else if (px_part(s, bn, "atom") || px_part(s, bn, "red"))
    flags |= PX_I_ATOM;
  else if (px_part(s, bn, "call"))
    flags |= PX_I_CALL;
  else if (px_part(s, bn, "bar") || px_part(s, bn, "barrier"))
    flags |= PX_I_BAR;
  if (!ld && !st && !(flags & PX_I_BAR))
    return flags;
  bool other_space = false;
  for (const char *p = s + bn; p < e;) {
    p++; /* the dot */
    const char *q = memchr(p, '.', (size_t)(e - p));
    size_t n = q ? (size_t)(q - p) : (size_t)(e - p);
    if (px_part(p, n, "global"))
      flags |= PX_I_GLOBAL;
    else if (n >= 6 && memcmp(p, "shared", 6) == 0)
      flags |= PX_I_SHARED;
    else if (px_part(p, n, "local") || px_part(p, n, "param") || px_part(p, n, "const") ||
             px_part(p, n, "tex"))
      other_space = true;
    else if (px_part(p, n, "nc"))
      flags |= PX_I_NC;
    else if (px_part(p, n, "v2") || px_part(p, n, "v4") || px_part(p, n, "v8"))
      *elems = (unsigned)(p[1] - '0');
    else if (px_part(p, n, "warp") && (flags & PX_I_BAR))
      flags &= ~(unsigned)PX_I_BAR; /* bar.warp.sync: a warp, not the block */
    p += n;
  }
  if (!ld && !st)
    return flags & ~(unsigned)(PX_I_GLOBAL | PX_I_SHARED | PX_I_NC);
  flags |= ld ? PX_I_LD : PX_I_ST;
  if (!(flags & (PX_I_GLOBAL | PX_I_SHARED)) && !other_space)
    flags |= PX_I_GEN;
  if (other_space)
    flags &= ~(unsigned)(PX_I_LD | PX_I_ST);
  if (*elems > 1 && (flags & (PX_I_GLOBAL | PX_I_GEN)))
    flags |= PX_I_VEC;
  return flags;
}

static void px_count(px_counts *c, unsigned flags, unsigned elems) {
  c->insts++;
  if (flags & PX_I_LD) {
    if (flags & PX_I_GLOBAL) {
      c->ld_global++;
      c->ld_global_elems += elems;
      if (flags & PX_I_NC) {
        c->ld_nc++;
        c->ld_nc_elems += elems;
      }
    } else if (flags & PX_I_GEN) {
      c->ld_gen++;
      c->ld_gen_elems += elems;
    } else if (flags & PX_I_SHARED) {
      c->ld_shared++;
    }
    c->ld_vec += (flags & PX_I_VEC) != 0;
  }
  if (flags & PX_I_ST) {
    if (flags & PX_I_GLOBAL) {
      c->st_global++;
      c->st_global_elems += elems;
    } else if (flags & PX_I_GEN) {
      c->st_gen++;
      c->st_gen_elems += elems;
    } else if (flags & PX_I_SHARED) {
      c->st_shared++;
    }
    c->st_vec += (flags & PX_I_VEC) != 0;
  }
  c->fma += (flags & PX_I_FMA) != 0;
  c->membar += (flags & PX_I_MEMBAR) != 0;
  c->atom += (flags & PX_I_ATOM) != 0;
  c->bar_sync += (flags & PX_I_BAR) != 0;
}

static void px_add(px_counts *to, const px_counts *c) {
  to->insts += c->insts;
  to->ld_global += c->ld_global;
  to->ld_global_elems += c->ld_global_elems;
  to->ld_nc += c->ld_nc;
  to->ld_nc_elems += c->ld_nc_elems;
  to->ld_gen += c->ld_gen;
  to->ld_gen_elems += c->ld_gen_elems;
  to->st_global += c->st_global;
  to->st_global_elems += c->st_global_elems;
  to->st_gen += c->st_gen;
  to->st_gen_elems += c->st_gen_elems;
  to->ld_shared += c->ld_shared;
  to->st_shared += c->st_shared;
  to->ld_vec += c->ld_vec;
  to->st_vec += c->st_vec;
  to->fma += c->fma;
  to->membar += c->membar;
  to->atom += c->atom;
  to->bar_sync += c->bar_sync;
}

/* Elements loaded and stored through global and generic memory: what
 * makes a loop hot. Elements, not instructions: a loop's rank must not
 * fall when its accesses are vectorised. */
static unsigned px_mem(const px_counts *c) {
  return c->ld_global_elems + c->ld_gen_elems + c->st_global_elems + c->st_gen_elems;
}

/* ---- declarations ---- */

/* `.reg [.vN] TYPE NAME<N>, NAME, ...` in tokens [a, b): counted into
 * f's classes and given ids (a vector register %v<3> of .v4 .f32 is
 * twelve 32-bit ones, and ids are per element: PTX names them whole, so
 * their liveness is the whole vector's, which is how ptxas allocates
 * them). */
static bool px_reg_decl(px_parse *P, size_t a, size_t b, px_func *f) {
  const px_tok *t = P->toks;
  unsigned bits = 0, vec = 1;
  for (size_t i = a; i < b; i++) {
    if (px_vec(&t[i])) {
      vec = px_vec(&t[i]);
    } else if (px_type_bits(&t[i])) {
      bits = px_type_bits(&t[i]);
    } else if (t[i].kind == PX_IDENT && t[i].s[0] != '.') {
      const px_tok *name = &t[i];
      uint64_t count = 1, v;
      bool ranged = false;
      if (i + 3 < b && tok_punct(&t[i + 1], '<') && tok_num(&t[i + 2], &v) &&
          tok_punct(&t[i + 3], '>')) {
        count = v;
        ranged = true;
        i += 3;
      }
      unsigned *cls = bits == 1     ? &f->vregs_pred
                      : bits == 64  ? &f->vregs_64
                      : bits == 128 ? &f->vregs_128
                      : bits        ? &f->vregs_32
                                    : NULL;
      if (!cls)
        continue;
      uint64_t all = px_mul(count, vec);
      *cls = *cls + all > UINT_MAX / 8 ? UINT_MAX / 8 : *cls + (unsigned)all;
      if (count > PX_MAX_VREGS || P->nvregs + count > PX_MAX_VREGS) {
        P->nvregs = PX_MAX_VREGS + 1; /* too many: no liveness */
        continue;
      }
      if (!PX_GROW(P, P->rclasses, P->crclasses, P->nrclasses + 1))
        return false;
      unsigned weight = (bits == 1 ? 0 : bits <= 32 ? 1 : bits / 32) * vec;
      P->rclasses[P->nrclasses++] = (px_rclass){name, ranged, P->nvregs, (uint32_t)count, weight};
      P->nvregs += (uint32_t)count;
    }
  }
  return true;
}

/* The id of register token t, or PX_NONE for a special register (%tid.x)
 * or an undeclared name. */
static size_t px_vreg(const px_parse *P, const px_tok *t) {
  size_t d = t->n;
  while (d > 1 && t->s[d - 1] >= '0' && t->s[d - 1] <= '9')
    d--;
  for (size_t c = 0; c < P->nrclasses; c++) {
    const px_rclass *rc = &P->rclasses[c];
    if (!rc->ranged && tok_same(rc->name, t))
      return rc->base;
    if (rc->ranged && d < t->n && rc->name->n == d && memcmp(rc->name->s, t->s, d) == 0 &&
        t->n - d < 10) {
      uint64_t idx = 0;
      for (size_t i = d; i < t->n; i++)
        idx = idx * 10 + (uint64_t)(t->s[i] - '0');
      if (idx < rc->count)
        return rc->base + (size_t)idx;
    }
  }
  return PX_NONE;
}

static unsigned px_vreg_weight(const px_parse *P, size_t id) {
  for (size_t c = 0; c < P->nrclasses; c++)
    if (id >= P->rclasses[c].base && id - P->rclasses[c].base < P->rclasses[c].count)
      return P->rclasses[c].weight;
  return 0;
}

static bool px_add_rref(px_parse *P, px_item *it, const px_tok *t, bool def) {
  size_t id = P->nvregs > PX_MAX_VREGS ? PX_NONE : px_vreg(P, t);
  if (id == PX_NONE)
    return true;
  if (!PX_GROW(P, P->rrefs, P->crrefs, P->nrrefs + 1))
    return false;
  P->rrefs[P->nrrefs++] = (px_rref){(uint32_t)id, def};
  it->nref++;
  return true;
}

/* `.shared` or `.local [.align A] [.vN] TYPE NAME[N]..., ...` in tokens
 * [a, b): shared arrays are added to P->vars (owner: function index or
 * -1); local ones are laid out after f's. */
static bool px_var_decl(px_parse *P, size_t a, size_t b, long owner, px_func *local) {
  const px_tok *t = P->toks;
  uint64_t align = 0, bytes = 0, vec = 1;
  for (size_t i = a; i < b; i++) {
    uint64_t v;
    if (tok_is(&t[i], ".align") && i + 1 < b && tok_num(&t[i + 1], &v)) {
      align = v;
      i++;
    } else if (px_vec(&t[i])) {
      vec = px_vec(&t[i]);
    } else if (px_type_bits(&t[i])) {
      bytes = px_type_bits(&t[i]) == 1 ? 1 : px_type_bits(&t[i]) / 8;
    } else if (t[i].kind == PX_IDENT && t[i].s[0] != '.') {
      px_var var = {&t[i], px_mul(bytes, vec), align ? align : px_mul(bytes, vec), false, owner};
      while (i + 2 < b && tok_punct(&t[i + 1], '[')) {
        if (tok_punct(&t[i + 2], ']')) {
          var.dyn = true;
          var.size = 0;
          i += 2;
        } else if (i + 3 < b && tok_num(&t[i + 2], &v) && tok_punct(&t[i + 3], ']')) {
          var.size = px_mul(var.size, v);
          i += 3;
        } else {
          break;
        }
      }
      if (local) {
        local->local = px_align_up(local->local, var.align) + var.size;
        if (local->local > PX_NUM_CAP)
          local->local = PX_NUM_CAP;
      } else {
        if (!PX_GROW(P, P->vars, P->cvars, P->nvars + 1) ||
            !PX_GROW(P, P->uses_var, P->cuses, P->nvars + 1))
          return false;
        P->uses_var[P->nvars] = owner >= 0; /* a function names what it declares */
        P->vars[P->nvars++] = var;
      }
    } else if (tok_punct(&t[i], '=')) {
      break; /* an initialiser */
    }
  }
  return true;
}

/* ---- functions ---- */

static bool px_add_item(px_parse *P, px_item it) {
  if (!PX_GROW(P, P->items, P->citems, P->nitems + 1))
    return false;
  P->items[P->nitems++] = it;
  return true;
}

/* An instruction in tokens [a, b) of function fi. */
static bool px_inst(px_parse *P, size_t a, size_t b, size_t fi) {
  const px_tok *t = P->toks;
  px_item it = {PX_ITEM_INST, PX_TERM_NONE, false, 0, 1, PX_NONE, P->nrrefs, 0};
  size_t guard = PX_NONE;
  if (tok_punct(&t[a], '@')) {
    it.pred = true;
    a++;
    if (a < b && tok_punct(&t[a], '!'))
      a++;
    guard = a++;
  }
  if (a >= b || t[a].kind != PX_IDENT)
    return true;
  it.flags = px_classify(&t[a], &it.elems, &it.term);
  /* register operands: the first operand is what the instruction writes,
   * except for branches, calls, barriers, fences, and stores and
   * reductions (whose first operand is an address) */
  bool writes = it.term == PX_TERM_NONE && !(it.flags & (PX_I_CALL | PX_I_BAR | PX_I_MEMBAR)) &&
                !(a + 1 < b && tok_punct(&t[a + 1], '['));
  if (guard != PX_NONE && guard < b && !px_add_rref(P, &it, &t[guard], false))
    return false;
  int depth = 0;
  bool first = true;
  for (size_t i = a + 1; i < b; i++) {
    if (t[i].kind == PX_PUNCT) {
      char c = t[i].s[0];
      depth += (c == '(' || c == '[' || c == '{') - (c == ')' || c == ']' || c == '}');
      if (c == ',' && depth == 0)
        first = false;
    } else if (t[i].kind == PX_IDENT && t[i].s[0] == '%' &&
               !px_add_rref(P, &it, &t[i], first && writes)) {
      return false;
    }
  }
  if (it.term == PX_TERM_BRA || it.term == PX_TERM_BRX) {
    for (size_t i = b; i > a + 1; i--)
      if (t[i - 1].kind == PX_IDENT) {
        it.tok = i - 1;
        break;
      }
  }
  if (it.flags & PX_I_BAR) {
    uint64_t id;
    if (a + 1 < b && tok_num(&t[a + 1], &id) && id < 32)
      P->barrier_mask |= 1u << id;
    else
      P->barrier_any = true;
  }
  /* names of .shared arrays and of called functions among the operands */
  int parens = 0;
  bool callee_seen = false;
  for (size_t i = a + 1; i < b; i++) {
    if (tok_punct(&t[i], '('))
      parens++;
    else if (tok_punct(&t[i], ')'))
      parens--;
    if (t[i].kind != PX_IDENT || t[i].s[0] == '%')
      continue;
    for (size_t v = 0; v < P->nvars; v++)
      if (tok_same(&t[i], P->vars[v].name) &&
          (P->vars[v].owner < 0 || P->vars[v].owner == (long)fi))
        P->uses_var[v] = true;
    if ((it.flags & PX_I_CALL) && parens == 0 && !callee_seen) {
      callee_seen = true;
      if (!PX_GROW(P, P->refs, P->crefs, P->nrefs + 1))
        return false;
      P->refs[P->nrefs++] = (px_ref){fi, i};
    }
  }
  return px_add_item(P, it);
}

static int px_label_cmp(const void *x, const void *y) {
  const px_label *a = x, *b = y;
  size_t n = a->name->n < b->name->n ? a->name->n : b->name->n;
  int c = memcmp(a->name->s, b->name->s, n);
  return c ? c : (a->name->n > b->name->n) - (a->name->n < b->name->n);
}

static size_t px_label_find(const px_label *ls, size_t n, const px_tok *name) {
  px_label key = {name, 0};
  const px_label *l = bsearch(&key, ls, n, sizeof *ls, px_label_cmp);
  return l ? l->block : PX_NONE;
}

/* The function's basic blocks, control-flow graph, dominators and
 * natural loops; fills f->loop. */
typedef struct px_cfg {
  px_block *blocks;
  size_t nblocks, cblocks;
  px_label *labels;
  size_t nlabels, clabels;
  size_t (*edges)[2];
  size_t nedges, cedges;
  size_t *succ_at, *succ, *pred_at, *pred; /* CSR: succ[succ_at[b] .. succ_at[b + 1]) */
  size_t *rpo, *rpo_of, *idom, *stack, *inner;
  size_t nrpo;       /* reachable blocks, in rpo[0 .. nrpo) */
  unsigned char *in; /* nloops * nblocks: membership */
  size_t *headers, nloops;
} px_cfg;

static bool px_edge(px_parse *P, px_cfg *G, size_t from, size_t to) {
  if (to == PX_NONE || to >= G->nblocks)
    return true;
  if (!PX_GROW(P, G->edges, G->cedges, G->nedges + 1))
    return false;
  G->edges[G->nedges][0] = from;
  G->edges[G->nedges][1] = to;
  G->nedges++;
  return true;
}

static bool px_blocks(px_parse *P, px_cfg *G) {
  bool open = false;
  for (size_t k = 0; k < P->nitems; k++) {
    const px_item *it = &P->items[k];
    bool fresh = !open || (it->kind == PX_ITEM_LABEL && G->blocks[G->nblocks - 1].last != PX_NONE);
    if (fresh) {
      if (!PX_GROW(P, G->blocks, G->cblocks, G->nblocks + 1))
        return false;
      px_block nb = {k, PX_NONE, PX_NONE, {0}};
      G->blocks[G->nblocks++] = nb;
      open = true;
    }
    px_block *b = &G->blocks[G->nblocks - 1];
    if (it->kind == PX_ITEM_LABEL) {
      if (b->label == PX_NONE)
        b->label = it->tok;
      if (!PX_GROW(P, G->labels, G->clabels, G->nlabels + 1))
        return false;
      G->labels[G->nlabels++] = (px_label){&P->toks[it->tok], G->nblocks - 1};
    } else {
      b->last = k;
      px_count(&b->c, it->flags, it->elems);
      if (it->term != PX_TERM_NONE)
        open = false;
    }
  }
  if (G->nlabels)
    qsort(G->labels, G->nlabels, sizeof *G->labels, px_label_cmp);
  for (size_t b = 0; b < G->nblocks; b++) {
    const px_item *it = G->blocks[b].last == PX_NONE ? NULL : &P->items[G->blocks[b].last];
    bool falls = !it || it->term == PX_TERM_NONE || it->pred;
    if (it && it->term == PX_TERM_BRA && it->tok != PX_NONE &&
        !px_edge(P, G, b, px_label_find(G->labels, G->nlabels, &P->toks[it->tok])))
      return false;
    if (it && it->term == PX_TERM_BRX && it->tok != PX_NONE) {
      for (size_t j = 0; j < P->ntargets; j++) {
        const px_targets *bt = &P->targets[j];
        if (!tok_same(&P->toks[bt->label], &P->toks[it->tok]))
          continue;
        for (size_t i = bt->first; i < bt->end; i++)
          if (P->toks[i].kind == PX_IDENT &&
              !px_edge(P, G, b, px_label_find(G->labels, G->nlabels, &P->toks[i])))
            return false;
      }
    }
    if (falls && !px_edge(P, G, b, b + 1))
      return false;
  }
  return true;
}

/* Compressed adjacency: at[b] .. at[b + 1] index into out. */
static bool px_csr(px_parse *P, px_cfg *G, int dir, size_t **at, size_t **out) {
  size_t n = G->nblocks;
  *at = ac_alloc(P->ctx, (n + 1) * sizeof **at);
  *out = ac_alloc(P->ctx, (G->nedges ? G->nedges : 1) * sizeof **out);
  if (!*at || !*out)
    return !(P->oom = true);
  memset(*at, 0, (n + 1) * sizeof **at);
  for (size_t e = 0; e < G->nedges; e++)
    (*at)[G->edges[e][dir] + 1]++;
  for (size_t b = 0; b < n; b++)
    (*at)[b + 1] += (*at)[b];
  for (size_t e = 0; e < G->nedges; e++) {
    size_t b = G->edges[e][dir], slot = (*at)[b]++;
    (*out)[slot] = G->edges[e][1 - dir];
  }
  for (size_t b = n; b > 0; b--)
    (*at)[b] = (*at)[b - 1];
  (*at)[0] = 0;
  return true;
}

static size_t px_intersect(const px_cfg *G, size_t a, size_t b) {
  while (a != b) {
    while (G->rpo_of[a] > G->rpo_of[b])
      a = G->idom[a];
    while (G->rpo_of[b] > G->rpo_of[a])
      b = G->idom[b];
  }
  return a;
}

static bool px_dominates(const px_cfg *G, size_t h, size_t u) {
  for (;;) {
    if (u == h)
      return true;
    if (G->idom[u] == u)
      return false;
    u = G->idom[u];
  }
}

/* Reverse postorder from block 0 and the dominator tree (idom[b] ==
 * PX_NONE: unreachable). */
static bool px_dominators(px_parse *P, px_cfg *G) {
  size_t n = G->nblocks, nrpo = 0, sp = 0;
  G->rpo = ac_alloc(P->ctx, n * sizeof *G->rpo);
  G->rpo_of = ac_alloc(P->ctx, n * sizeof *G->rpo_of);
  G->idom = ac_alloc(P->ctx, n * sizeof *G->idom);
  G->stack = ac_alloc(P->ctx, 2 * n * sizeof *G->stack);
  if (!G->rpo || !G->rpo_of || !G->idom || !G->stack)
    return !(P->oom = true);
  for (size_t b = 0; b < n; b++)
    G->rpo_of[b] = G->idom[b] = PX_NONE;
  /* iterative depth-first search; rpo_of marks visited blocks until the
   * postorder is reversed */
  size_t *post = G->rpo;
  G->stack[sp++] = 0;
  G->stack[sp++] = G->succ_at[0];
  G->rpo_of[0] = 0;
  while (sp) {
    size_t b = G->stack[sp - 2], *next = &G->stack[sp - 1];
    if (*next < G->succ_at[b + 1]) {
      size_t s = G->succ[(*next)++];
      if (G->rpo_of[s] == PX_NONE) {
        G->rpo_of[s] = 0;
        G->stack[sp++] = s;
        G->stack[sp++] = G->succ_at[s];
      }
    } else {
      post[nrpo++] = b;
      sp -= 2;
    }
  }
  for (size_t i = 0; i < nrpo / 2; i++) {
    size_t x = post[i];
    post[i] = post[nrpo - 1 - i];
    post[nrpo - 1 - i] = x;
  }
  for (size_t i = 0; i < nrpo; i++)
    G->rpo_of[G->rpo[i]] = i;
  G->nrpo = nrpo;
  G->idom[0] = 0;
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 1; i < nrpo; i++) {
      size_t b = G->rpo[i], nd = PX_NONE;
      for (size_t j = G->pred_at[b]; j < G->pred_at[b + 1]; j++) {
        size_t p = G->pred[j];
        if (G->idom[p] == PX_NONE)
          continue;
        nd = nd == PX_NONE ? p : px_intersect(G, p, nd);
      }
      if (nd != PX_NONE && G->idom[b] != nd) {
        G->idom[b] = nd;
        changed = true;
      }
    }
  }
  return true;
}

/* Natural loops: G->headers[l] and membership G->in[l * n + b]. */
static bool px_loops(px_parse *P, px_cfg *G) {
  size_t n = G->nblocks, cheaders = 0, cin = 0;
  for (size_t u = 0; u < n; u++) {
    if (G->idom[u] == PX_NONE)
      continue;
    for (size_t j = G->succ_at[u]; j < G->succ_at[u + 1]; j++) {
      size_t h = G->succ[j], l;
      if (!px_dominates(G, h, u))
        continue;
      for (l = 0; l < G->nloops && G->headers[l] != h; l++)
        ;
      if (l == G->nloops) {
        if (!PX_GROW(P, G->headers, cheaders, G->nloops + 1) ||
            !PX_GROW(P, G->in, cin, (G->nloops + 1) * n))
          return false;
        memset(G->in + G->nloops * n, 0, n);
        G->headers[G->nloops++] = h;
        G->in[l * n + h] = 1;
      }
      /* every block reaching u without passing h */
      unsigned char *in = G->in + l * n;
      size_t sp = 0;
      if (!in[u]) {
        in[u] = 1;
        G->stack[sp++] = u;
      }
      while (sp) {
        size_t b = G->stack[--sp];
        for (size_t k = G->pred_at[b]; k < G->pred_at[b + 1]; k++) {
          size_t p = G->pred[k];
          if (!in[p] && G->idom[p] != PX_NONE) {
            in[p] = 1;
            G->stack[sp++] = p;
          }
        }
      }
    }
  }
  return true;
}

/* The hot loop of f from its loops (see the file comment). */
static bool px_hot_loop(px_parse *P, px_cfg *G, px_func *f) {
  size_t n = G->nblocks, L = G->nloops;
  if (!L)
    return true;
  size_t *size = ac_alloc(P->ctx, L * sizeof *size);
  px_counts *own = ac_alloc(P->ctx, L * sizeof *own);
  unsigned *nown = ac_alloc(P->ctx, L * sizeof *nown);
  G->inner = ac_alloc(P->ctx, n * sizeof *G->inner);
  if (!size || !own || !nown || !G->inner) {
    ac_free(P->ctx, size);
    ac_free(P->ctx, own);
    ac_free(P->ctx, nown);
    return !(P->oom = true);
  }
  memset(own, 0, L * sizeof *own);
  memset(nown, 0, L * sizeof *nown);
  for (size_t l = 0; l < L; l++) {
    size[l] = 0;
    for (size_t b = 0; b < n; b++)
      size[l] += G->in[l * n + b];
  }
  /* the innermost loop of a block is the smallest loop holding it (loops
   * of a reducible graph nest or are disjoint) */
  for (size_t b = 0; b < n; b++) {
    G->inner[b] = PX_NONE;
    for (size_t l = 0; l < L; l++)
      if (G->in[l * n + b] && (G->inner[b] == PX_NONE || size[l] < size[G->inner[b]]))
        G->inner[b] = l;
    if (G->inner[b] != PX_NONE) {
      px_add(&own[G->inner[b]], &G->blocks[b].c);
      nown[G->inner[b]]++;
    }
  }
  size_t best = PX_NONE;
  for (size_t l = 0; l < L; l++) {
    if (best == PX_NONE || px_mem(&own[l]) > px_mem(&own[best]) ||
        (px_mem(&own[l]) == px_mem(&own[best]) &&
         (own[l].insts > own[best].insts ||
          (own[l].insts == own[best].insts && G->headers[l] < G->headers[best]))))
      best = l;
  }
  f->loop.found = true;
  f->loop.own = own[best];
  f->loop.blocks = nown[best];
  f->loop.depth = 0;
  for (size_t l = 0; l < L; l++)
    f->loop.depth += G->in[l * n + G->headers[best]];
  size_t lt = G->blocks[G->headers[best]].label;
  if (lt != PX_NONE && !(f->loop.label = ac_strndup(P->ctx, P->toks[lt].s, P->toks[lt].n)))
    P->oom = true;
  ac_free(P->ctx, size);
  ac_free(P->ctx, own);
  ac_free(P->ctx, nown);
  return !P->oom;
}

/* Register pressure: the most 32-bit registers live at once (live
 * variables by the usual backward data flow over the blocks; a predicated
 * write does not end a register's life). Returns false on OOM. */
static bool px_pressure(px_parse *P, px_cfg *G, px_func *f) {
  size_t V = P->nvregs, n = G->nblocks;
  if (!V || V > PX_MAX_VREGS)
    return true;
  size_t W = (V + 63) / 64;
  uint64_t *sets = ac_alloc(P->ctx, (4 * n + 1) * W * sizeof *sets);
  unsigned char *weight = ac_alloc(P->ctx, V);
  if (!sets || !weight) {
    ac_free(P->ctx, sets);
    ac_free(P->ctx, weight);
    return !(P->oom = true);
  }
  memset(sets, 0, (4 * n + 1) * W * sizeof *sets);
  for (size_t v = 0; v < V; v++)
    weight[v] = (unsigned char)px_vreg_weight(P, v);
  uint64_t *use = sets, *kill = sets + n * W, *in = sets + 2 * n * W, *out = sets + 3 * n * W;
  uint64_t *live = sets + 4 * n * W;
#define PX_BIT(set, v) (((set)[(v) / 64] >> ((v) % 64)) & 1)
#define PX_SET(set, v) ((set)[(v) / 64] |= (uint64_t)1 << ((v) % 64))
#define PX_CLR(set, v) ((set)[(v) / 64] &= ~((uint64_t)1 << ((v) % 64)))
  /* upward-exposed uses and writes of each block */
  for (size_t b = 0; b < n; b++) {
    const px_block *bl = &G->blocks[b];
    if (bl->last == PX_NONE)
      continue;
    for (size_t k = bl->last + 1; k-- > bl->first;) {
      const px_item *it = &P->items[k];
      if (it->kind != PX_ITEM_INST)
        continue;
      for (size_t r = 0; r < it->nref; r++) {
        const px_rref *x = &P->rrefs[it->ref0 + r];
        if (x->def && !it->pred) {
          PX_CLR(use + b * W, x->id);
          PX_SET(kill + b * W, x->id);
        }
      }
      for (size_t r = 0; r < it->nref; r++)
        if (!P->rrefs[it->ref0 + r].def)
          PX_SET(use + b * W, P->rrefs[it->ref0 + r].id);
    }
  }
  /* in = use | (out & ~kill), out = union of the successors' in */
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = G->nrpo; i-- > 0;) { /* postorder: successors first */
      size_t b = G->rpo[i];
      for (size_t j = G->succ_at[b]; j < G->succ_at[b + 1]; j++)
        for (size_t w = 0; w < W; w++)
          out[b * W + w] |= in[G->succ[j] * W + w];
      for (size_t w = 0; w < W; w++) {
        uint64_t x = use[b * W + w] | (out[b * W + w] & ~kill[b * W + w]);
        if (x != in[b * W + w]) {
          in[b * W + w] = x;
          changed = true;
        }
      }
    }
  }
  /* the most live at any point: walk each block backwards from its out */
  unsigned most = 0;
  for (size_t b = 0; b < n; b++) {
    const px_block *bl = &G->blocks[b];
    if (G->idom[b] == PX_NONE)
      continue;
    unsigned now = 0;
    memcpy(live, out + b * W, W * sizeof *live);
    for (size_t v = 0; v < V; v++)
      now += PX_BIT(live, v) ? weight[v] : 0;
    most = now > most ? now : most;
    for (size_t k = bl->last == PX_NONE ? bl->first : bl->last + 1; k-- > bl->first;) {
      const px_item *it = &P->items[k];
      if (it->kind != PX_ITEM_INST)
        continue;
      for (size_t r = 0; r < it->nref; r++) {
        const px_rref *x = &P->rrefs[it->ref0 + r];
        if (x->def && !it->pred && PX_BIT(live, x->id)) {
          PX_CLR(live, x->id);
          now -= weight[x->id];
        }
      }
      for (size_t r = 0; r < it->nref; r++) {
        const px_rref *x = &P->rrefs[it->ref0 + r];
        if (!x->def && !PX_BIT(live, x->id)) {
          PX_SET(live, x->id);
          now += weight[x->id];
        }
      }
      most = now > most ? now : most;
    }
  }
#undef PX_BIT
#undef PX_SET
#undef PX_CLR
  f->regs_live = most;
  ac_free(P->ctx, sets);
  ac_free(P->ctx, weight);
  return true;
}

static bool px_analyse_cfg(px_parse *P, px_func *f) {
  px_cfg G;
  memset(&G, 0, sizeof G);
  bool ok = px_blocks(P, &G) && G.nblocks && px_csr(P, &G, 0, &G.succ_at, &G.succ) &&
            px_csr(P, &G, 1, &G.pred_at, &G.pred) && px_dominators(P, &G) &&
            px_pressure(P, &G, f) && px_loops(P, &G) && px_hot_loop(P, &G, f);
  ac_free(P->ctx, G.blocks);
  ac_free(P->ctx, G.labels);
  ac_free(P->ctx, G.edges);
  ac_free(P->ctx, G.succ_at);
  ac_free(P->ctx, G.succ);
  ac_free(P->ctx, G.pred_at);
  ac_free(P->ctx, G.pred);
  ac_free(P->ctx, G.rpo);
  ac_free(P->ctx, G.rpo_of);
  ac_free(P->ctx, G.idom);
  ac_free(P->ctx, G.stack);
  ac_free(P->ctx, G.inner);
  ac_free(P->ctx, G.in);
  ac_free(P->ctx, G.headers);
  return ok || (!P->oom && !G.nblocks);
}

/* The body of function fi, from the token after its `{`; *i ends after
 * the matching `}`. */
static bool px_body(px_parse *P, size_t *i, size_t fi) {
  const px_tok *t = P->toks;
  px_func *f = &P->m->funcs[fi];
  P->nitems = P->ntargets = P->nrclasses = P->nrrefs = 0;
  P->nvregs = 0;
  P->barrier_mask = 0;
  P->barrier_any = false;
  for (size_t v = 0; v < P->nvars; v++)
    P->uses_var[v] = false;
  size_t depth = 1, k = *i;
  while (t[k].kind != PX_EOF) {
    if (tok_punct(&t[k], '{')) {
      depth++;
      k++;
      continue;
    }
    if (tok_punct(&t[k], '}')) {
      k++;
      if (--depth == 0)
        break;
      continue;
    }
    if (t[k].kind == PX_IDENT && tok_punct(&t[k + 1], ':')) {
      size_t lab = k;
      k += 2;
      if (t[k].kind == PX_IDENT && t[k].s[0] == '.') {
        /* NAME: .branchtargets ...; or .callprototype, .calltargets */
        size_t end = k;
        while (t[end].kind != PX_EOF && !tok_punct(&t[end], ';'))
          end++;
        if (tok_is(&t[k], ".branchtargets")) {
          if (!PX_GROW(P, P->targets, P->ctargets, P->ntargets + 1))
            return false;
          P->targets[P->ntargets++] = (px_targets){lab, k + 1, end};
        }
        k = t[end].kind == PX_EOF ? end : end + 1;
      } else if (!px_add_item(P, (px_item){PX_ITEM_LABEL, PX_TERM_NONE, false, 0, 0, lab, 0, 0})) {
        return false;
      }
      continue;
    }
    size_t a = k;
    while (t[k].kind != PX_EOF && !tok_punct(&t[k], ';'))
      k++;
    if (t[a].kind == PX_IDENT && t[a].s[0] == '.') {
      if (tok_is(&t[a], ".reg") && !px_reg_decl(P, a + 1, k, f))
        return false;
      else if (tok_is(&t[a], ".shared") && !px_var_decl(P, a + 1, k, (long)fi, NULL))
        return false;
      else if (tok_is(&t[a], ".local") && !px_var_decl(P, a + 1, k, (long)fi, f))
        return false;
    } else if (!px_inst(P, a, k, fi)) {
      return false;
    }
    if (t[k].kind != PX_EOF)
      k++;
  }
  *i = k;
  for (size_t j = 0; j < P->nitems; j++)
    if (P->items[j].kind == PX_ITEM_INST)
      px_count(&f->all, P->items[j].flags, P->items[j].elems);
  f->reg_est = f->vregs_32 + 2 * f->vregs_64 + 4 * f->vregs_128;
  f->barriers = P->barrier_any ? 16 : (unsigned)__builtin_popcount(P->barrier_mask);
  px_uses *u = &P->func_uses[fi];
  u->n = P->nvars;
  if (!(u->uses = ac_alloc(P->ctx, P->nvars ? P->nvars : 1)))
    return !(P->oom = true);
  if (P->nvars) /* uses_var is NULL when the module declares no variables */
    memcpy(u->uses, P->uses_var, P->nvars);
  return px_analyse_cfg(P, f);
}

/* `.entry NAME (...) [.maxntid ...] {` or `.func [(...)] NAME [(...)]
 * [...] {`; prototypes (ending in `;`) are skipped. *i ends after it. */
static bool px_function(px_parse *P, size_t *i, bool kernel) {
  const px_tok *t = P->toks;
  size_t k = *i + 1;
  if (tok_punct(&t[k], '(')) {
    for (int d = 0; t[k].kind != PX_EOF; k++) {
      d += tok_punct(&t[k], '(') - tok_punct(&t[k], ')');
      if (d == 0) {
        k++;
        break;
      }
    }
  }
  if (t[k].kind != PX_IDENT) {
    *i = k;
    return true;
  }
  size_t name = k++;
  unsigned maxntid = 0, reqntid = 0;
  while (t[k].kind != PX_EOF && !tok_punct(&t[k], '{') && !tok_punct(&t[k], ';')) {
    if (tok_is(&t[k], ".maxntid") || tok_is(&t[k], ".reqntid")) {
      uint64_t prod = 1, v;
      size_t j = k + 1;
      for (int dim = 0; dim < 3 && tok_num(&t[j], &v); dim++) {
        prod = px_mul(prod, v);
        j += tok_punct(&t[j + 1], ',') ? 2 : 1;
      }
      unsigned *dst = tok_is(&t[k], ".maxntid") ? &maxntid : &reqntid;
      *dst = prod > UINT_MAX ? UINT_MAX : (unsigned)prod;
      k = j;
      continue;
    }
    k++;
  }
  if (!tok_punct(&t[k], '{')) {
    *i = t[k].kind == PX_EOF ? k : k + 1;
    return true;
  }
  px_module *m = P->m;
  if (!PX_GROW(P, m->funcs, P->cfuncs, m->nfuncs + 1) ||
      !PX_GROW(P, P->func_uses, P->cfunc_uses, m->nfuncs + 1))
    return false;
  P->func_uses[m->nfuncs] = (px_uses){NULL, 0};
  px_func *f = &m->funcs[m->nfuncs++];
  memset(f, 0, sizeof *f);
  f->kernel = kernel;
  f->block = reqntid ? reqntid : maxntid;
  if (!(f->name = ac_strndup(P->ctx, t[name].s, t[name].n)))
    return !(P->oom = true);
  *i = k + 1;
  return px_body(P, i, m->nfuncs - 1);
}

/* Static shared memory of every function: the arrays it or a function it
 * calls (directly or not) names, laid out as ptxas 13.0 does (probed with
 * it: every case of test_ptxstats.c's px_smem_layout): those declared in
 * functions first, then the module's, each group in declaration order and
 * each array at its alignment; when the module declares an .extern
 * .shared array (dynamic shared memory, which starts after the static
 * arrays), the total is padded to that array's alignment. */
static bool px_shared(px_parse *P) {
  px_module *m = P->m;
  size_t n = m->nfuncs;
  if (!n)
    return true;
  bool *reach = ac_alloc(P->ctx, n * sizeof *reach);
  bool *uses = ac_alloc(P->ctx, (P->nvars ? P->nvars : 1) * sizeof *uses);
  if (!reach || !uses) {
    ac_free(P->ctx, reach);
    ac_free(P->ctx, uses);
    return !(P->oom = true);
  }
  for (size_t fi = 0; fi < n; fi++) {
    memset(reach, 0, n * sizeof *reach);
    reach[fi] = true;
    for (bool grew = true; grew;) {
      grew = false;
      for (size_t r = 0; r < P->nrefs; r++) {
        if (!reach[P->refs[r].from])
          continue;
        for (size_t g = 0; g < n; g++) {
          const char *name = m->funcs[g].name;
          const px_tok *c = &P->toks[P->refs[r].tok];
          if (!reach[g] && strlen(name) == c->n && memcmp(name, c->s, c->n) == 0) {
            reach[g] = grew = true;
          }
        }
      }
    }
    uint64_t off = 0, dyn_align = 0;
    bool dyn = false;
    for (size_t v = 0; v < P->nvars; v++) {
      uses[v] = false;
      for (size_t g = 0; g < n && !uses[v]; g++)
        uses[v] = reach[g] && v < P->func_uses[g].n && P->func_uses[g].uses[v] &&
                  (P->vars[v].owner < 0 || P->vars[v].owner == (long)g);
      if (P->vars[v].dyn && P->vars[v].align > dyn_align)
        dyn_align = P->vars[v].align;
    }
    for (int module = 0; module < 2; module++) {
      for (size_t v = 0; v < P->nvars; v++) {
        if (!uses[v] || (P->vars[v].owner < 0) != module)
          continue;
        dyn = dyn || P->vars[v].dyn;
        off = px_align_up(off, P->vars[v].align) + P->vars[v].size;
        if (off > PX_NUM_CAP)
          off = PX_NUM_CAP;
      }
    }
    m->funcs[fi].smem = px_align_up(off, dyn_align);
    m->funcs[fi].smem_dyn = dyn;
  }
  ac_free(P->ctx, reach);
  ac_free(P->ctx, uses);
  return true;
}

ac_status px_analyse(ac_context *ctx, const char *ptx, size_t len, px_module **out,
                     ac_error **err) {
  *out = NULL;
  px_parse P;
  memset(&P, 0, sizeof P);
  P.ctx = ctx;
  P.m = ac_alloc(ctx, sizeof *P.m);
  if (P.m) {
    memset(P.m, 0, sizeof *P.m);
    P.m->ctx = ctx;
  }
  bool ok = P.m && px_lex(&P, ptx, len);
  const px_tok *t = P.toks;
  for (size_t i = 0; ok && t[i].kind != PX_EOF;) {
    if (tok_is(&t[i], ".entry") || tok_is(&t[i], ".func")) {
      ok = px_function(&P, &i, tok_is(&t[i], ".entry"));
    } else if (tok_is(&t[i], ".shared")) {
      size_t e = i;
      while (t[e].kind != PX_EOF && !tok_punct(&t[e], ';'))
        e++;
      ok = px_var_decl(&P, i + 1, e, -1, NULL);
      i = t[e].kind == PX_EOF ? e : e + 1;
    } else if (tok_is(&t[i], ".target") && t[i + 1].kind == PX_IDENT && t[i + 1].n > 3 &&
               memcmp(t[i + 1].s, "sm_", 3) == 0) {
      px_tok num = {t[i + 1].s + 3, t[i + 1].n - 3, PX_IDENT};
      while (num.n && !(num.s[num.n - 1] >= '0' && num.s[num.n - 1] <= '9'))
        num.n--; /* sm_90a */
      uint64_t v;
      if (tok_num(&num, &v) && v < 10000)
        P.m->target_sm = (unsigned)v;
      i += 2;
    } else if (tok_punct(&t[i], '{')) {
      size_t d = 0;
      do {
        d += tok_punct(&t[i], '{');
        d -= tok_punct(&t[i], '}');
        i++;
      } while (d && t[i].kind != PX_EOF);
    } else {
      i++;
    }
  }
  ok = ok && px_shared(&P);
  ac_free(ctx, P.toks);
  ac_free(ctx, P.vars);
  ac_free(ctx, P.refs);
  ac_free(ctx, P.uses_var);
  for (size_t f = 0; P.m && f < P.m->nfuncs; f++)
    ac_free(ctx, P.func_uses[f].uses);
  ac_free(ctx, P.func_uses);
  ac_free(ctx, P.items);
  ac_free(ctx, P.targets);
  ac_free(ctx, P.rclasses);
  ac_free(ctx, P.rrefs);
  if (!ok) {
    px_destroy(P.m);
    return ir_report(err, ir_error(ctx, AC_ERR_NOMEM, NULL, (ir_loc){0, 0}, "out of memory"),
                     AC_ERR_NOMEM);
  }
  *out = P.m;
  return AC_OK;
}

void px_destroy(px_module *m) {
  if (!m)
    return;
  for (size_t i = 0; i < m->nfuncs; i++) {
    ac_free(m->ctx, m->funcs[i].name);
    ac_free(m->ctx, m->funcs[i].loop.label);
  }
  ac_free(m->ctx, m->funcs);
  ac_free(m->ctx, m);
}

px_func *px_find(px_module *m, const char *name, size_t len) {
  for (size_t i = 0; i < m->nfuncs; i++)
    if (strlen(m->funcs[i].name) == len && memcmp(m->funcs[i].name, name, len) == 0)
      return &m->funcs[i];
  return NULL;
}
