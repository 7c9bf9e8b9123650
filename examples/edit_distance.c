/* examples/edit_distance.c: Levenshtein distance as a recurrence (C API).
 *
 * Builds the module of examples/edit_distance.ac: the table d of dynamic
 * programming is a `rec` whose element (i, j) reads its neighbours (i-1, j),
 * (i, j-1) and (i-1, j-1). Those dependencies are affine, so the compiler
 * finds the schedule (1, 1): the anti-diagonals are wavefronts whose elements
 * are independent (Cartey et al.'s recursion equations on GPUs).
 *
 * With the C API the rec is opened with ac_rec_begin, which gives the array
 * being defined (`d`) and the index values (`i`, `j`); its body is built from
 * them and ac_rec_end closes it. A rec given a name is let-bound under it, as
 * the text writes it. `i - 1` and `j - 1` are built afresh at each use so that
 * every self reference reads d[i - 1, j] and not a variable bound to i - 1.
 *
 * Without arguments it prints the distances kitten -> sitting (3) and
 * flaw -> lawn (2), computed on the best backend (AUTO); with --print it
 * prints the module, exactly as `arrayc-opt examples/edit_distance.ac` does.
 */
#include "arrayc/arrayc.h"
#include "example_main.h"

#include <stdio.h>
#include <string.h>

#define AT(b) ac_builder_set_location((b), __LINE__, 1)

static ac_value minus1(ac_builder *b, ac_value i) {
  return ac_binary(b, AC_OP_SUB, i, ac_lit_int(b, AC_I64, 1));
}
static ac_value at2(ac_builder *b, ac_value a, ac_value i, ac_value j) {
  return ac_index(b, a, 2, (ac_value[]){i, j});
}

static ac_status build(ac_module *m, ac_error **err) {
  ac_context *ctx = ac_module_context(m);
  ac_builder *b = ac_builder_create(m);
  if (!b)
    return AC_ERR_NOMEM;
  ac_type str = ac_type_array(ctx, ac_type_scalar(ctx, AC_U8), 1);
  ac_type i32 = ac_type_scalar(ctx, AC_I32);
  AT(b);
  ac_fn ed =
      ac_fn_declare(b, "edit_distance", 2, (ac_type[]){str, str}, (const char *[]){"s", "t"}, i32);
  ac_value s = ac_fn_param(b, ed, 0), t = ac_fn_param(b, ed, 1);
  ac_value n = ac_name(b, ac_unary(b, AC_OP_LEN, s), "n");
  ac_value m_ = ac_name(b, ac_unary(b, AC_OP_LEN, t), "m");

  /* rec (i in 0..=n, j in 0..=m) -> i32 { ... } */
  AT(b);
  ac_value lo[2] = {ac_lit_int(b, AC_I64, 0), ac_lit_int(b, AC_I64, 0)}, hi[2] = {n, m_};
  ac_value d, ij[2];
  ac_rec r = ac_rec_begin(b, 2, lo, hi, i32, (const char *[]){"d", "i", "j"}, &d, ij);
  ac_value i = ij[0], j = ij[1];
  ac_value one = ac_lit_int(b, AC_I32, 1);
  AT(b);
  ac_value del = ac_binary(b, AC_OP_ADD, at2(b, d, minus1(b, i), j), one);
  ac_value ins = ac_binary(b, AC_OP_ADD, at2(b, d, i, minus1(b, j)), one);
  ac_value same = ac_binary(b, AC_OP_EQ, ac_index(b, s, 1, (ac_value[]){minus1(b, i)}),
                            ac_index(b, t, 1, (ac_value[]){minus1(b, j)}));
  ac_value cost = ac_if(b, same, ac_lit_int(b, AC_I32, 0), one);
  ac_value sub = ac_binary(b, AC_OP_ADD, at2(b, d, minus1(b, i), minus1(b, j)), cost);
  ac_value best = ac_binary(b, AC_OP_MIN, ac_binary(b, AC_OP_MIN, del, ins), sub);
  AT(b);
  ac_value zero = ac_lit_int(b, AC_I64, 0);
  ac_value body = ac_if(b, ac_binary(b, AC_OP_EQ, i, zero), ac_cast(b, AC_I32, j),
                        ac_if(b, ac_binary(b, AC_OP_EQ, j, zero), ac_cast(b, AC_I32, i), best));
  ac_value table = ac_rec_end(b, r, body);

  ac_value dist = at2(b, table, n, m_);
  ac_status st = ac_fn_finish(b, ed, dist, err);
  ac_builder_destroy(b);
  return st;
}

/* Calls edit_distance on two strings and prints the distance. */
static ac_status distance(ac_context *ctx, ac_function *fn, const char *a, const char *c,
                          ac_error **err) {
  const int64_t na[1] = {(int64_t)strlen(a)}, nc[1] = {(int64_t)strlen(c)};
  ac_datum args[2] = {{.kind = AC_DATUM_ARRAY, .type = AC_U8},
                      {.kind = AC_DATUM_ARRAY, .type = AC_U8}};
  ac_datum d;
  ac_status st = AC_ERR_NOMEM;
  if ((args[0].array = ac_array_create(ctx, AC_U8, 1, na, a, err)) &&
      (args[1].array = ac_array_create(ctx, AC_U8, 1, nc, c, err)) &&
      (st = ac_function_call(fn, args, 2, &d, 1, err)) == AC_OK)
    printf("%lld\n", (long long)d.s.i);
  ac_datum_release(&args[0]);
  ac_datum_release(&args[1]);
  return st;
}

static ac_status run(ac_module *m, ac_error **err) {
  ac_context *ctx = ac_module_context(m);
  ac_function *fn = NULL;
  ac_status st = ac_function_create(m, "edit_distance", AC_BACKEND_AUTO, &fn, err);
  if (st == AC_OK)
    st = distance(ctx, fn, "kitten", "sitting", err);
  if (st == AC_OK)
    st = distance(ctx, fn, "flaw", "lawn", err);
  if (fn)
    ac_function_destroy(fn);
  return st;
}

int main(int argc, char **argv) { return example_main(argc, argv, "edit_distance", build, run); }
