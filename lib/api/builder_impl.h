/* lib/api/builder_impl.h: the value graph of the C embedding API, shared by
 * the constructors (builder.c) and the conversion to IR (sharing.c).
 *
 * A builder owns a graph of values (bnode): one node per constructor call,
 * children referring to earlier values by id, so the graph is acyclic by
 * construction. Lambda and rec parameters are values too; the binder they
 * belong to (a lambda or a rec, `bbinder`) is recorded when it is opened, and
 * its node is made when it is closed. Nothing here is IR yet: ac_fn_finish
 * (sharing.c) walks the graph of one function body, recovers sharing and
 * builds the IR nodes in the module.
 *
 * Every bnode carries a few scratch fields used only while one function is
 * being finished; sharing.c resets those of the nodes it touched before
 * returning, so a conversion costs time in the size of the body, not of the
 * whole builder.
 */
#ifndef ARRAYC_LIB_API_BUILDER_IMPL_H
#define ARRAYC_LIB_API_BUILDER_IMPL_H

#include "ir.h"

/* Deepest value graph accepted (a chain of nested constructor calls), and
 * deepest IR tree a finished function may have. The parser rejects trees
 * deeper than 2000 for the same reason: every later pass recurses over the
 * IR, and the conversion itself recurses over the graph. */
#define BLD_MAX_DEPTH 2000u

/* What a value that is a variable stands for (bnode.op == IR_VAR). */
typedef enum bld_varkind {
  BV_FNPARAM = 1, /* parameter of a declared function: attr = fn index, aux = position */
  BV_BINDER = 2   /* parameter of a lambda or rec: attr = binder id, aux = position */
} bld_varkind;

typedef struct bnode {
  uint16_t op;     /* ir_op */
  uint16_t flags;  /* IR_F_* for literals */
  uint8_t varkind; /* bld_varkind for IR_VAR */
  uint32_t nkids;
  uint32_t kids;  /* offset in b->kids (value ids) */
  uint32_t depth; /* 1 + deepest child */
  ir_type type;   /* LIT, CAST, REC */
  ir_loc loc;
  int64_t attr; /* as in the IR; LAM and REC: binder id; VAR: see bld_varkind */
  uint32_t aux; /* ARRLIT: offset of the extents in b->ints; VAR: position */
  ir_sym name;  /* ac_name, or the parameter's name hint */
  ir_litval lit;

  /* ---- scratch of one ac_fn_finish (see sharing.c) ----
   * A field is valid only when its mark equals the builder's current
   * generation; the first touch in a conversion initialises it, so nothing
   * has to be reset afterwards. */
  uint32_t mark;      /* == b->gen: reached by the walk of the body */
  uint32_t post;      /* position in the post-order of the body */
  uint32_t uses;      /* parent edges within the body */
  uint32_t scope;     /* scope it is evaluated in (let-bound: where it is placed) */
  uint32_t scope0;    /* first of the scopes opened by its children */
  uint32_t nextlet;   /* next let placed in the same scope, in order */
  uint32_t envpos;    /* 1 + position in the environment while bound, else 0 */
  uint32_t depmark;   /* == b->gen: dep/ndep valid */
  uint32_t dep, ndep; /* binders whose parameters occur free: b->deps[dep..dep+ndep) */
  uint32_t copymark;  /* == b->copygen: `copy` valid */
  uint32_t copy;      /* lambda duplication: the copy of this node */
} bnode;

/* A lambda or a rec, from its *_begin call on. */
typedef struct bbinder {
  ir_op op;         /* IR_LAM or IR_REC */
  uint32_t nparams; /* LAM: n; REC: 1 + ndims (the array itself, then the indices) */
  uint32_t param0;  /* value id of the first parameter; the others follow */
  uint32_t node;    /* the LAM / REC value once ended, else 0 */
  bool named;       /* REC: the caller named the array (it is then always let-bound) */
  bool copying;     /* scratch: being duplicated (sharing.c) */
  ir_type elem;     /* REC: element type */
  uint32_t bounds;  /* REC: offset in b->kids of lo1, hi1, .., lon, hin */
  bool has_sched;   /* REC: ac_rec_schedule asked for a schedule, at b->ints[sched] */
  uint32_t sched;
} bbinder;

typedef struct bfunc {
  int32_t index;   /* in m->funcs */
  uint32_t param0; /* value id of the first parameter */
  uint32_t nparams;
} bfunc;

struct ac_builder {
  ac_module *m;
  ac_context *ctx;
  ir_loc loc; /* attached to every value made from now on */
  bnode *nodes;
  size_t nnodes, capnodes; /* nodes[0] is the invalid value */
  uint32_t *kids;
  size_t nkids, capkids; /* children of values, by id */
  int64_t *ints;
  size_t nints, capints; /* array literal extents, requested rec schedules */
  bbinder *binders;
  size_t nbinders, capbinders; /* binders[0] unused */
  bfunc *funcs;
  size_t nfuncs, capfuncs; /* funcs[0] unused */
  uint32_t *deps;
  size_t ndeps, capdeps; /* free-binder sets (scratch) */
  uint32_t gen;          /* generation of the current conversion (bnode.mark, .depmark) */
  uint32_t copygen;      /* generation of the current lambda copy (bnode.copymark) */
  /* The first misuse: reported by every later ac_fn_finish. */
  bool failed;
  ac_status fail_status;
  ir_loc fail_loc;
  char *fail_msg;
};

/* Records a misuse (the first one wins) at the builder's current location. */
void bld_fail(ac_builder *b, const char *fmt, ...) IR_PRINTF(2, 3);
/* Records running out of memory. */
void bld_nomem(ac_builder *b);
/* Appends a value (kids copied from `kids`); returns its id or 0. */
uint32_t bld_node(ac_builder *b, ir_op op, uint32_t nkids, const uint32_t *kids);
static inline bnode *bld_get(const ac_builder *b, uint32_t v) {
  return &b->nodes[v];
}
static inline uint32_t bld_kid(const ac_builder *b, uint32_t v, uint32_t i) {
  return b->kids[b->nodes[v].kids + i];
}

/* sharing.c: converts the body of function f to IR (sharing recovered) and
 * stores it as the function's body; does not verify. */
ac_status bld_convert(ac_builder *b, const bfunc *f, uint32_t body, ac_error **err);

#endif
