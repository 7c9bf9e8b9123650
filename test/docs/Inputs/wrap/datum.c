/* test/docs/check_snippets.py's wrapper for a structure quoted from the
 * public headers (api.md's ac_datum): the quote is compiled under another
 * name, and its fields must be the header's, with the same types, in the
 * same places. */
#include <arrayc/arrayc.h>

#include <stddef.h>

#define ac_datum doc_datum
/* @SNIPPET@ */
#undef ac_datum

#define SAME(field)                                                                                \
  _Static_assert(offsetof(doc_datum, field) == offsetof(ac_datum, field) &&                        \
                     sizeof(((doc_datum *)0)->field) == sizeof(((ac_datum *)0)->field),            \
                 "field " #field " differs")
SAME(kind);
SAME(type);
SAME(s.b);
SAME(s.i);
SAME(s.u);
SAME(s.f);
SAME(array);
_Static_assert(sizeof(doc_datum) == sizeof(ac_datum), "sizes differ");

int main(void) {
  /* the quoted members have the header's types */
  ac_datum d = {0};
  doc_datum q = {0};
  ac_datum_kind *k = &q.kind;
  ac_scalar *t = &q.type;
  ac_array **a = &q.array;
  bool *b = &q.s.b;
  int64_t *i = &q.s.i;
  uint64_t *u = &q.s.u;
  double *f = &q.s.f;
  (void)d, (void)k, (void)t, (void)a, (void)b, (void)i, (void)u, (void)f;
  return 0;
}
