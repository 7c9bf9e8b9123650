/* Unit tests of the C embedding API (lib/api/builder.c, lib/api/sharing.c).
 *
 * Sharing recovery is checked on the IR itself, dumped as an S-expression with
 * de Bruijn indices (%0 is the innermost binder), so these tests depend on
 * neither the printer nor the verifier: they convert a body with bld_convert,
 * the step of ac_fn_finish before verification. The tests named full_* go
 * through ac_fn_finish and ac_module_print (and some run the interpreter), so
 * they need the verifier and the printer as well; random_graphs_* compares
 * the interpreter's result on random programs full of shared values with a
 * direct evaluation of the graph, and checks that their text reads back.
 */
#include "api/builder_impl.h"
#include "unit.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>

static ac_context *ctx;
static ac_module *m;
static ac_builder *b;

static void setup(void) {
  ctx = ac_context_create();
  m = ac_module_create(ctx, "mod");
  b = ac_builder_create(m);
}
static void teardown(void) {
  ac_builder_destroy(b);
  ac_module_destroy(m);
  ac_context_destroy(ctx);
}

static ac_type ty(ac_scalar s) {
  return ac_type_scalar(ctx, s);
}
static ac_type arr(ac_scalar s) {
  return ac_type_array(ctx, ty(s), 1);
}
static ac_value bin(ac_op op, ac_value x, ac_value y) {
  return ac_binary(b, op, x, y);
}
static ac_value f32(double x) {
  return ac_lit_float(b, AC_F32, x);
}
static ac_value i64(int64_t x) {
  return ac_lit_int(b, AC_I64, x);
}

/* ---- an S-expression dump of IR ---- */

static void dump(ir_buf *o, ir_ref r) {
  const ir_node *n = ir_node_get(m, r);
  char name[64];
  snprintf(name, sizeof name, "%s", ir_ops[n->op].name);
  for (char *p = name; *p; p++)
    *p = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
  switch ((ir_op)n->op) {
  case IR_VAR:
    ir_buf_printf(o, "%%%lld", (long long)n->attr);
    return;
  case IR_LIT: {
    ac_scalar s = AC_BOOL;
    ir_ty_is_scalar(ctx, n->type, &s);
    if (s == AC_BOOL)
      ir_buf_puts(o, n->lit.u ? "true" : "false");
    else if (s == AC_F32 || s == AC_F64)
      ir_buf_printf(o, "%g%s", n->lit.f, ac_scalar_name(s));
    else if (s >= AC_U8)
      ir_buf_printf(o, "%llu%s", (unsigned long long)n->lit.u, ac_scalar_name(s));
    else
      ir_buf_printf(o, "%lld%s", (long long)n->lit.i, ac_scalar_name(s));
    return;
  }
  case IR_LET:
    ir_buf_printf(o, "(let %s ", ir_sym_str(ctx, m->syms[n->names]));
    break;
  case IR_LAM:
    ir_buf_puts(o, "(lam");
    for (int64_t i = 0; i < n->attr; i++)
      ir_buf_printf(o, " %s", ir_sym_str(ctx, m->syms[n->names + i]));
    ir_buf_puts(o, " . ");
    break;
  case IR_REC:
    ir_buf_printf(o, "(rec %s", ir_sym_str(ctx, m->syms[n->names]));
    for (int64_t i = 1; i <= n->attr; i++)
      ir_buf_printf(o, " %s", ir_sym_str(ctx, m->syms[n->names + i]));
    ir_buf_puts(o, " : ");
    ir_ty_print(ctx, n->type, o);
    ir_buf_puts(o, " ");
    break;
  case IR_CALL:
  case IR_FNREF:
    ir_buf_printf(o, "(%s %s", name, ir_sym_str(ctx, m->funcs[n->attr].name));
    ir_buf_puts(o, n->nkids ? " " : "");
    break;
  case IR_CAST:
    ir_buf_puts(o, "(cast ");
    ir_ty_print(ctx, n->type, o);
    ir_buf_puts(o, " ");
    break;
  case IR_ARRLIT:
    ir_buf_puts(o, "(arrlit [");
    for (int64_t i = 0; i < n->attr; i++)
      ir_buf_printf(o, "%s%lld", i ? "," : "", (long long)m->ints[n->aux + i]);
    ir_buf_puts(o, n->nkids ? "] " : "]");
    break;
  case IR_PROJ:
  case IR_STENCIL:
    ir_buf_printf(o, "(%s.%lld ", name, (long long)n->attr);
    break;
  default:
    ir_buf_printf(o, "(%s ", name);
  }
  for (uint32_t i = 0; i < n->nkids; i++) {
    if (i)
      ir_buf_putc(o, ' ');
    dump(o, ir_kid(m, r, i));
  }
  ir_buf_putc(o, ')');
}

/* Converts `body` as the body of f (sharing recovery only) and returns the
 * dump, or the error text. The result lives until the next call. */
static char dumped[65536];
static const char *convert(ac_fn f, ac_value body) {
  ac_error *err = NULL;
  dumped[0] = 0;
  if (body.id == 0 || b->failed) {
    ac_status st = ac_fn_finish(b, f, body, &err);
    snprintf(dumped, sizeof dumped, "status %d: %s", (int)st, ac_error_text(err));
    ac_error_destroy(err);
    return dumped;
  }
  ac_status st = bld_convert(b, &b->funcs[f.id], body.id, &err);
  if (st != AC_OK) {
    snprintf(dumped, sizeof dumped, "status %d: %s", (int)st, ac_error_text(err));
    ac_error_destroy(err);
    return dumped;
  }
  ir_func *fn = &m->funcs[b->funcs[f.id].index];
  ir_buf o;
  ir_buf_init(&o, ctx);
  dump(&o, fn->body);
  snprintf(dumped, sizeof dumped, "%s", ir_buf_cstr(&o));
  ir_buf_free(&o);
  fn->body = IR_NONE; /* as if not finished: these tests do not verify */
  return dumped;
}

/* fn NAME(x: f32, y: f32) -> f32 */
static ac_fn fn_ff(const char *name) {
  ac_type ps[2] = {ty(AC_F32), ty(AC_F32)};
  const char *names[2] = {"x", "y"};
  return ac_fn_declare(b, name, 2, ps, names, ty(AC_F32));
}

/* fn NAME(xs: f32[], y: f32) -> (f32[], f32[]) */
static ac_fn fn_arr(const char *name) {
  ac_type ps[2] = {arr(AC_F32), ty(AC_F32)};
  const char *names[2] = {"xs", "y"};
  ac_type res[2] = {arr(AC_F32), arr(AC_F32)};
  return ac_fn_declare(b, name, 2, ps, names, ac_type_tuple(ctx, 2, res));
}

/* ---- sharing recovery ---- */

UNIT_TEST(value_used_twice_is_let_bound_once) {
  setup();
  ac_fn f = fn_ff("f");
  ac_value x = ac_fn_param(b, f, 0), y = ac_fn_param(b, f, 1);
  ac_value s = bin(AC_OP_ADD, x, y);
  CHECK_STR(convert(f, bin(AC_OP_MUL, s, s)), "(let t1 (add %1 %0) (mul %0 %0))");
  teardown();
}

UNIT_TEST(value_used_once_is_not_let_bound) {
  setup();
  ac_fn f = fn_ff("f");
  ac_value x = ac_fn_param(b, f, 0), y = ac_fn_param(b, f, 1);
  ac_value s = ac_name(b, bin(AC_OP_ADD, x, y), "s");
  /* parameters and literals are repeated, never let-bound */
  ac_value one = f32(1.0);
  ac_value e = bin(AC_OP_SUB, bin(AC_OP_MUL, s, x), bin(AC_OP_MUL, one, bin(AC_OP_ADD, one, x)));
  CHECK_STR(convert(f, e), "(sub (mul (add %1 %0) %1) (mul 1f32 (add 1f32 %1)))");
  teardown();
}

UNIT_TEST(value_used_in_two_lambdas_is_bound_outside) {
  setup();
  ac_fn f = fn_arr("f");
  ac_value xs = ac_fn_param(b, f, 0), y = ac_fn_param(b, f, 1);
  ac_value s = ac_name(b, bin(AC_OP_MUL, y, y), "s");
  ac_value p[1];
  ac_lambda l1 = ac_lambda_begin(b, 1, (const char *[]){"a"}, p);
  ac_value m1 = ac_lambda_end(b, l1, bin(AC_OP_ADD, p[0], s));
  ac_lambda l2 = ac_lambda_begin(b, 1, (const char *[]){"c"}, p);
  ac_value m2 = ac_lambda_end(b, l2, bin(AC_OP_SUB, p[0], s));
  ac_value r[2] = {ac_apply(b, AC_OP_MAP, 2, (ac_value[]){m1, xs}),
                   ac_apply(b, AC_OP_MAP, 2, (ac_value[]){m2, xs})};
  CHECK_STR(convert(f, ac_tuple(b, 2, r)),
            "(let s (mul %0 %0) (tuple (map (lam a . (add %0 %1)) %2) "
            "(map (lam c . (sub %0 %1)) %2)))");
  teardown();
}

UNIT_TEST(value_used_twice_in_one_lambda_is_bound_inside) {
  setup();
  ac_fn f = fn_arr("f");
  ac_value xs = ac_fn_param(b, f, 0), y = ac_fn_param(b, f, 1);
  ac_value s = bin(AC_OP_MUL, y, y); /* independent of the lambda's parameter */
  ac_value p[1];
  ac_lambda l = ac_lambda_begin(b, 1, (const char *[]){"a"}, p);
  ac_value lam = ac_lambda_end(b, l, bin(AC_OP_ADD, bin(AC_OP_MUL, p[0], s), s));
  ac_value mp = ac_apply(b, AC_OP_MAP, 2, (ac_value[]){lam, xs});
  CHECK_STR(convert(f, ac_tuple(b, 2, (ac_value[]){mp, xs})),
            "(tuple (map (lam a . (let t1 (mul %1 %1) (add (mul %1 %0) %0))) %1) %1)");
  teardown();
}

UNIT_TEST(value_depending_on_lambda_parameter_stays_inside) {
  setup();
  ac_fn f = fn_arr("f");
  ac_value xs = ac_fn_param(b, f, 0), y = ac_fn_param(b, f, 1);
  ac_value p[1];
  ac_lambda l = ac_lambda_begin(b, 1, (const char *[]){"a"}, p);
  ac_value sq = ac_name(b, bin(AC_OP_MUL, p[0], y), "sq");
  ac_value lam = ac_lambda_end(b, l, bin(AC_OP_ADD, sq, sq));
  ac_value mp = ac_apply(b, AC_OP_MAP, 2, (ac_value[]){lam, xs});
  CHECK_STR(convert(f, ac_tuple(b, 2, (ac_value[]){mp, mp})),
            "(let t1 (map (lam a . (let sq (mul %0 %1) (add %0 %0))) %1) (tuple %0 %0))");
  teardown();
}

UNIT_TEST(value_used_in_one_if_branch_stays_there) {
  setup();
  ac_fn f = fn_ff("f");
  ac_value x = ac_fn_param(b, f, 0), y = ac_fn_param(b, f, 1);
  ac_value e = ac_name(b, ac_unary(b, AC_OP_EXP, x), "e"); /* only the else branch needs it */
  ac_value c = bin(AC_OP_GT, x, y);
  ac_value r = ac_if(b, c, y, bin(AC_OP_MUL, e, e));
  CHECK_STR(convert(f, r), "(if (gt %1 %0) %0 (let e (exp %1) (mul %0 %0)))");
  /* used in both branches: bound before the if */
  ac_fn g = fn_ff("g");
  x = ac_fn_param(b, g, 0);
  y = ac_fn_param(b, g, 1);
  e = ac_unary(b, AC_OP_EXP, x);
  r = ac_if(b, bin(AC_OP_GT, x, y), e, bin(AC_OP_MUL, e, y));
  CHECK_STR(convert(g, r), "(let t1 (exp %1) (if (gt %2 %1) %0 (mul %0 %1)))");
  teardown();
}

UNIT_TEST(value_used_only_right_of_and_stays_there) {
  setup();
  ac_type ps[2] = {ty(AC_F32), ty(AC_F32)};
  ac_fn f = ac_fn_declare(b, "f", 2, ps, NULL, ty(AC_BOOL));
  ac_value x = ac_fn_param(b, f, 0), y = ac_fn_param(b, f, 1);
  ac_value s = ac_unary(b, AC_OP_SQRT, x);
  ac_value r = bin(AC_OP_LAND, bin(AC_OP_GT, x, f32(0.0)), bin(AC_OP_LT, s, bin(AC_OP_MUL, s, y)));
  CHECK_STR(convert(f, r), "(land (gt %1 0f32) (let t1 (sqrt %1) (lt %0 (mul %0 %1))))");
  teardown();
}

UNIT_TEST(lets_are_ordered_as_written) {
  setup();
  ac_fn f = fn_ff("f");
  ac_value x = ac_fn_param(b, f, 0), y = ac_fn_param(b, f, 1);
  /* made in the order c, b, a; used so that a walk meets a first */
  ac_value c = ac_name(b, bin(AC_OP_SUB, x, y), "c");
  ac_value bb = ac_name(b, bin(AC_OP_MUL, x, y), "b");
  ac_value a = ac_name(b, bin(AC_OP_ADD, x, y), "a");
  ac_value ab = ac_name(b, bin(AC_OP_DIV, a, bb), "ab"); /* shared too: after a and b */
  ac_value e = bin(AC_OP_ADD, bin(AC_OP_ADD, ab, ab),
                   bin(AC_OP_MUL, bin(AC_OP_ADD, a, bb), bin(AC_OP_MUL, c, c)));
  CHECK_STR(convert(f, e),
            "(let a (add %1 %0) (let b (mul %2 %1) (let ab (div %1 %0) (let c (sub %4 %3) "
            "(add (add %1 %1) (mul (add %3 %2) (mul %0 %0)))))))");
  teardown();
}

UNIT_TEST(automatic_names_count_per_function) {
  setup();
  for (int k = 0; k < 2; k++) {
    ac_fn f = fn_ff(k ? "g" : "f");
    ac_value x = ac_fn_param(b, f, 0), y = ac_fn_param(b, f, 1);
    ac_value s = bin(AC_OP_ADD, x, y), t = bin(AC_OP_MUL, x, y);
    CHECK_STR(convert(f, bin(AC_OP_ADD, bin(AC_OP_MUL, s, s), bin(AC_OP_MUL, t, t))),
              "(let t1 (add %1 %0) (let t2 (mul %2 %1) (add (mul %1 %1) (mul %0 %0))))");
  }
  teardown();
}

UNIT_TEST(automatic_names_avoid_bound_names) {
  setup();
  ac_type ps[1] = {ty(AC_F32)};
  ac_fn f = ac_fn_declare(b, "f", 1, ps, (const char *[]){"t1"}, ty(AC_F32));
  ac_value x = ac_fn_param(b, f, 0);
  ac_value s = ac_unary(b, AC_OP_NEG, x);
  CHECK_STR(convert(f, bin(AC_OP_ADD, s, s)), "(let t2 (neg %0) (add %0 %0))");
  teardown();
}

UNIT_TEST(nested_lambdas_use_outer_parameters) {
  setup();
  ac_type ps[1] = {ac_type_array(ctx, ty(AC_F32), 2)};
  ac_fn f = ac_fn_declare(b, "f", 1, ps, (const char *[]){"a"}, ac_type_array(ctx, ty(AC_F32), 2));
  ac_value a = ac_fn_param(b, f, 0);
  ac_value ij[2], k[1];
  ac_lambda outer = ac_lambda_begin(b, 2, (const char *[]){"i", "j"}, ij);
  ac_lambda inner = ac_lambda_begin(b, 1, NULL, k);
  ac_value il = ac_lambda_end(b, inner, bin(AC_OP_ADD, k[0], ij[0]));
  ac_value ol =
      ac_lambda_end(b, outer,
                    ac_apply(b, AC_OP_FOLD, 3,
                             (ac_value[]){ac_fn_ref(b, f), ij[1],
                                          ac_apply(b, AC_OP_MAP, 2, (ac_value[]){il, a})}));
  ac_value s = ac_apply(b, AC_OP_SHAPE, 1, &a);
  ac_value g = ac_apply(b, AC_OP_GENERATE, 2, (ac_value[]){s, ol});
  CHECK_STR(
      convert(f, g),
      "(generate (shape %0) (lam i j . (fold (fnref f) %0 (map (lam x1 . (add %0 %2)) %2))))");
  teardown();
}

UNIT_TEST(lambda_passed_twice_is_duplicated) {
  setup();
  ac_fn f = fn_arr("f");
  ac_value xs = ac_fn_param(b, f, 0), y = ac_fn_param(b, f, 1);
  ac_value p[1];
  ac_value c = ac_unary(b, AC_OP_SQRT, y); /* closed in the lambda: stays shared */
  ac_lambda l = ac_lambda_begin(b, 1, (const char *[]){"a"}, p);
  ac_value body = bin(AC_OP_ADD, bin(AC_OP_MUL, p[0], p[0]), c);
  ac_value lam = ac_lambda_end(b, l, body);
  ac_value m1 = ac_apply(b, AC_OP_MAP, 2, (ac_value[]){lam, xs});
  ac_value m2 = ac_apply(b, AC_OP_MAP, 2, (ac_value[]){lam, m1});
  CHECK_STR(convert(f, ac_tuple(b, 2, (ac_value[]){m2, xs})),
            "(let t1 (sqrt %0) (tuple (map (lam a . (add (mul %0 %0) %1)) "
            "(map (lam a . (add (mul %0 %0) %1)) %2)) %2))");
  /* the graph is unchanged for the next use: converting again gives the same */
  CHECK_STR(convert(f, ac_tuple(b, 2, (ac_value[]){m2, xs})),
            "(let t1 (sqrt %0) (tuple (map (lam a . (add (mul %0 %0) %1)) "
            "(map (lam a . (add (mul %0 %0) %1)) %2)) %2))");
  teardown();
}

UNIT_TEST(lambda_with_inner_lambda_passed_twice) {
  setup();
  ac_type ps[1] = {ac_type_array(ctx, ty(AC_F32), 1)};
  ac_fn f = ac_fn_declare(b, "f", 1, ps, (const char *[]){"v"}, ty(AC_F32));
  ac_value v = ac_fn_param(b, f, 0);
  ac_value p[1], q[2];
  ac_lambda outer = ac_lambda_begin(b, 1, (const char *[]){"a"}, p);
  ac_lambda inner = ac_lambda_begin(b, 2, (const char *[]){"u", "w"}, q);
  ac_value add = ac_lambda_end(b, inner, bin(AC_OP_ADD, q[0], bin(AC_OP_MUL, q[1], p[0])));
  ac_value ol = ac_lambda_end(b, outer, ac_apply(b, AC_OP_FOLD, 3, (ac_value[]){add, p[0], v}));
  ac_value s1 = ac_apply(b, AC_OP_MAP, 2, (ac_value[]){ol, v});
  ac_value s2 = ac_apply(b, AC_OP_MAP, 2, (ac_value[]){ol, s1});
  ac_value sum[2];
  ac_lambda pl = ac_lambda_begin(b, 2, (const char *[]){"u", "w"}, sum);
  ac_value plus = ac_lambda_end(b, pl, bin(AC_OP_ADD, sum[0], sum[1]));
  ac_value r = ac_apply(b, AC_OP_FOLD, 3, (ac_value[]){plus, f32(0), s2});
  CHECK_STR(convert(f, r), "(fold (lam u w . (add %1 %0)) 0f32 (map (lam a . (fold (lam u w . (add "
                           "%1 (mul %0 %2))) %0 %1)) "
                           "(map (lam a . (fold (lam u w . (add %1 (mul %0 %2))) %0 %1)) %0)))");
  teardown();
}

UNIT_TEST(calls_stay_calls) {
  setup();
  ac_fn g = fn_ff("g"); /* declared, finished later */
  ac_fn f = fn_ff("f");
  ac_value x = ac_fn_param(b, f, 0), y = ac_fn_param(b, f, 1);
  ac_value c = ac_call(b, g, 2, (ac_value[]){x, y});
  CHECK_STR(convert(f, bin(AC_OP_ADD, c, ac_call(b, g, 2, (ac_value[]){y, c}))),
            "(let t1 (call g %1 %0) (add %0 (call g %1 %0)))");
  ac_call(b, g, 1, &x); /* wrong arity */
  CHECK(b->failed);
  CHECK(strstr(b->fail_msg, "'g' takes 2 arguments, not 1") != NULL);
  teardown();
}

UNIT_TEST(recurrence_convention) {
  setup();
  ac_type ps[1] = {arr(AC_U8)};
  ac_fn f = ac_fn_declare(b, "f", 1, ps, (const char *[]){"s"}, ty(AC_I32));
  ac_value s = ac_fn_param(b, f, 0);
  ac_value n = ac_name(b, ac_unary(b, AC_OP_LEN, s), "n");
  ac_value self, idx[1];
  ac_rec r = ac_rec_begin(b, 1, (ac_value[]){i64(0)}, &n, ty(AC_I32), (const char *[]){"d", "i"},
                          &self, idx);
  ac_value prev = ac_index(b, self, 1, (ac_value[]){bin(AC_OP_SUB, idx[0], i64(1))});
  ac_value body = ac_if(b, bin(AC_OP_EQ, idx[0], i64(0)), ac_lit_int(b, AC_I32, 0),
                        bin(AC_OP_ADD, prev, ac_cast(b, AC_I32, ac_index(b, s, 1, idx))));
  ac_value d = ac_rec_end(b, r, body);
  /* a named rec is always let-bound, under its own name */
  CHECK_STR(convert(f, ac_index(b, d, 1, &n)),
            "(let n (len %0) (let d (rec d i : i32[] 0i64 %0 (if (eq %0 0i64) 0i32 "
            "(add (index %1 (sub %0 1i64)) (cast i32 (index %3 %0))))) (index %0 %1)))");
  teardown();
}

UNIT_TEST(anonymous_rec_used_once_is_inline) {
  setup();
  ac_type ps[1] = {ty(AC_I64)};
  ac_fn f = ac_fn_declare(b, "f", 1, ps, (const char *[]){"n"}, arr(AC_I64));
  ac_value n = ac_fn_param(b, f, 0);
  ac_value self, idx[1];
  ac_rec r = ac_rec_begin(b, 1, (ac_value[]){i64(1)}, &n, ty(AC_I64), NULL, &self, idx);
  ac_value d = ac_rec_end(b, r, idx[0]);
  CHECK_STR(convert(f, d), "(rec r1 i1 : i64[] 1i64 %0 %0)");
  teardown();
}

UNIT_TEST(shared_rec_let_names) {
  setup();
  ac_type ps[1] = {ty(AC_I64)};
  ac_type res[2] = {arr(AC_I64), arr(AC_I64)};
  ac_fn f = ac_fn_declare(b, "f", 1, ps, (const char *[]){"n"}, ac_type_tuple(ctx, 2, res));
  ac_value n = ac_fn_param(b, f, 0);
  ac_value self, idx[1];
  /* anonymous and shared: the let and the array get one automatic name */
  ac_rec r = ac_rec_begin(b, 1, &n, &n, ty(AC_I64), NULL, &self, idx);
  ac_value d = ac_rec_end(b, r, idx[0]);
  /* named by ac_name and by ac_rec_begin: `let e = rec g (...)` */
  ac_rec r2 = ac_rec_begin(b, 1, &n, &n, ty(AC_I64), (const char *[]){"g", NULL}, &self, idx);
  ac_value e = ac_name(b, ac_rec_end(b, r2, ac_index(b, d, 1, idx)), "e");
  CHECK_STR(convert(f, ac_tuple(b, 2, (ac_value[]){e, d})),
            "(let r1 (rec r1 i1 : i64[] %0 %0 %0) (let e (rec g i2 : i64[] %1 %1 (index %2 %0)) "
            "(tuple %0 %1)))");
  teardown();
}

UNIT_TEST(stencil_array_literal_and_loop_conventions) {
  setup();
  ac_fn f = fn_arr("f");
  ac_value xs = ac_fn_param(b, f, 0), y = ac_fn_param(b, f, 1);
  ac_value w[1];
  ac_lambda l = ac_lambda_begin(b, 1, (const char *[]){"w"}, w);
  ac_value avg = bin(AC_OP_ADD, ac_index(b, w[0], 1, (ac_value[]){i64(-1)}),
                     ac_index(b, w[0], 1, (ac_value[]){i64(1)}));
  ac_value lam = ac_lambda_end(b, l, avg);
  ac_value s1 = ac_stencil(b, lam, AC_BOUNDARY_WRAP, (ac_value){0}, xs);
  ac_value s2 = ac_stencil(b, lam, AC_BOUNDARY_CONST, y, s1);
  CHECK_STR(convert(f, ac_tuple(b, 2, (ac_value[]){s2, xs})),
            "(tuple (stencil.3 (lam w . (add (index %0 -1i64) (index %0 1i64))) "
            "(stencil.2 (lam w . (add (index %0 -1i64) (index %0 1i64))) %1) %0) %1)");

  ac_fn g = fn_ff("g");
  ac_value x = ac_fn_param(b, g, 0);
  ac_value a = ac_array_lit(b, 2, (int64_t[]){2, 2}, 4, (ac_value[]){x, x, f32(1), f32(2)});
  ac_value st[2];
  ac_lambda cl = ac_lambda_begin(b, 2, (const char *[]){"acc", "i"}, st);
  ac_value cond = ac_lambda_end(b, cl, bin(AC_OP_LT, st[1], i64(2)));
  ac_lambda sl = ac_lambda_begin(b, 2, (const char *[]){"acc", "i"}, st);
  ac_value step = ac_lambda_end(
      b, sl,
      ac_tuple(b, 2,
               (ac_value[]){bin(AC_OP_ADD, st[0], ac_index(b, a, 2, (ac_value[]){st[1], st[1]})),
                            bin(AC_OP_ADD, st[1], i64(1))}));
  ac_value lp = ac_loop(b, 2, (ac_value[]){f32(0), i64(0)}, cond, step);
  CHECK_STR(convert(g, ac_proj(b, lp, 0)),
            "(proj.0 (loop 0f32 0i64 (lam acc i . (lt %0 2i64)) (lam acc i . (tuple "
            "(add %1 (index (arrlit [2,2] %3 %3 1f32 2f32) %0 %0)) (add %0 1i64)))))");
  teardown();
}

/* ---- misuse ---- */

UNIT_TEST(parameter_used_outside_its_lambda) {
  setup();
  ac_fn f = fn_arr("f");
  ac_value xs = ac_fn_param(b, f, 0);
  ac_value p[1];
  ac_builder_set_location(b, 3, 7);
  ac_lambda l = ac_lambda_begin(b, 1, (const char *[]){"a"}, p);
  ac_value lam = ac_lambda_end(b, l, p[0]);
  ac_builder_set_location(b, 4, 2);
  ac_value mp = ac_apply(b, AC_OP_MAP, 2, (ac_value[]){lam, xs});
  ac_builder_set_location(b, 5, 9);
  ac_value bad = bin(AC_OP_ADD, p[0], p[0]);
  ac_error *err = NULL;
  ac_status st = ac_fn_finish(
      b, f,
      ac_tuple(b, 2,
               (ac_value[]){mp, ac_apply(b, AC_OP_MAP, 2,
                                         (ac_value[]){lam, ac_apply(b, AC_OP_FILL, 2,
                                                                    (ac_value[]){i64(1), bad})})}),
      &err);
  CHECK_EQ_INT(st, AC_ERR_TYPE);
  CHECK_STR(ac_error_text(err), "mod:5:9: error: lambda parameter 'a' used outside its lambda\n");
  CHECK_EQ_INT(ac_error_line(err), 5);
  CHECK_EQ_INT(ac_error_column(err), 9);
  ac_error_destroy(err);
  CHECK_EQ_INT(m->funcs[0].body, IR_NONE);
  teardown();
}

UNIT_TEST(rec_index_used_outside_its_rec) {
  setup();
  ac_type ps[1] = {ty(AC_I64)};
  ac_fn f = ac_fn_declare(b, "f", 1, ps, NULL, ty(AC_I64));
  ac_value n = ac_fn_param(b, f, 0);
  ac_value self, idx[1];
  ac_rec r = ac_rec_begin(b, 1, &n, &n, ty(AC_I64), (const char *[]){"d", "k"}, &self, idx);
  ac_value d = ac_rec_end(b, r, idx[0]);
  ac_builder_set_location(b, 8, 1);
  CHECK_STR(convert(f, bin(AC_OP_ADD, ac_index(b, d, 1, &n), idx[0])),
            "status 2: mod:8:1: error: rec index 'k' used outside its rec\n");
  ac_builder_set_location(b, 9, 2);
  CHECK_STR(convert(f, ac_index(b, self, 1, &n)),
            "status 2: mod:9:2: error: rec array 'd' used outside its rec\n");
  teardown();
}

UNIT_TEST(parameter_of_another_function) {
  setup();
  ac_fn f = fn_ff("f"), g = fn_ff("g");
  ac_builder_set_location(b, 2, 4);
  ac_value e = bin(AC_OP_ADD, ac_fn_param(b, f, 0), ac_fn_param(b, g, 1));
  CHECK_STR(convert(f, e),
            "status 2: mod:2:4: error: parameter 'y' of function 'g' used in function 'f'\n");
  teardown();
}

UNIT_TEST(invalid_values_are_reported_at_finish) {
  setup();
  ac_fn f = fn_ff("f");
  ac_value x = ac_fn_param(b, f, 0);
  ac_builder_set_location(b, 10, 3);
  ac_value bad = bin(AC_OP_ADD, x, (ac_value){0});
  CHECK_EQ_INT(bad.id, 0);
  ac_builder_set_location(b, 11, 1);
  ac_value worse = bin(AC_OP_MUL, bad, x); /* propagates silently */
  CHECK_EQ_INT(worse.id, 0);
  ac_error *err = NULL;
  CHECK_EQ_INT(ac_fn_finish(b, f, worse, &err), AC_ERR_INVALID);
  CHECK_STR(ac_error_text(err), "mod:10:3: error: ac_apply: argument 2 is not a valid value\n");
  ac_error_destroy(err);
  /* the first misuse sticks: every later finish reports it */
  ac_fn g = fn_ff("g");
  CHECK_EQ_INT(ac_fn_finish(b, g, ac_fn_param(b, g, 0), &err), AC_ERR_INVALID);
  CHECK_EQ_INT(ac_error_line(err), 10);
  ac_error_destroy(err);
  CHECK_EQ_INT(ac_fn_finish(b, f, x, NULL), AC_ERR_INVALID);
  teardown();
}

static const char *first_misuse(void) {
  return b->failed ? b->fail_msg : "(none)";
}

UNIT_TEST(misuse_messages) {
  struct {
    int which;
    const char *msg;
  } cases[] = {
      {0, "ac_apply: argument 1 is a function; functions may only be passed to operations that "
          "take one (map, fold, ...)"},
      {1, "ac_apply: argument 1 must be a lambda or a function reference"},
      {2, "ac_apply: '+' takes 2 arguments, not 3"},
      {3, "ac_apply: CAST has its own constructor (ac_cast)"},
      {4, "ac_lit_int: 300 does not fit u8"},
      {5, "ac_lit_uint: 128 does not fit i8"},
      {6, "ac_lit_float: 1e+39 does not fit f32"},
      {7, "ac_fn_declare: 'map' is not a valid function name"},
      {8, "ac_name: 'let' is not a valid name (an identifier that is not a keyword)"},
      {9, "ac_lambda_end: this lambda is already closed"},
      {10, "ac_loop: argument 3 must be a lambda of 2 parameters"},
      {11, "ac_array_lit: the extents give 6 elements, but 5 are given"},
      {12, "ac_fn_declare: function 'f' is already defined"},
      {13, "ac_fn_param: function 'f' has no parameter 2"},
      {14, "ac_stencil: argument 3 is not a valid value"},
      {15, "ac_apply: 'map' takes a function and at least one array, not 1"},
      {16, "ac_apply: 'fold_seg' takes 4 arguments, not 2"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    setup();
    ac_fn f = fn_ff("f");
    ac_value x = ac_fn_param(b, f, 0), p[1];
    ac_lambda l = ac_lambda_begin(b, 1, NULL, p);
    ac_value lam = ac_lambda_end(b, l, p[0]);
    CHECK(!b->failed);
    switch (cases[k].which) {
    case 0:
      bin(AC_OP_ADD, lam, x);
      break;
    case 1:
      ac_apply(b, AC_OP_MAP, 2, (ac_value[]){x, x});
      break;
    case 2:
      ac_apply(b, AC_OP_ADD, 3, (ac_value[]){x, x, x});
      break;
    case 3:
      ac_apply(b, AC_OP_CAST, 1, &x);
      break;
    case 4:
      ac_lit_int(b, AC_U8, 300);
      break;
    case 5:
      ac_lit_uint(b, AC_I8, 128);
      break;
    case 6:
      ac_lit_float(b, AC_F32, 1e39);
      break;
    case 7:
      ac_fn_declare(b, "map", 0, NULL, NULL, ty(AC_F32));
      break;
    case 8:
      ac_name(b, bin(AC_OP_ADD, x, x), "let");
      break;
    case 9:
      ac_lambda_end(b, l, x);
      break;
    case 10:
      ac_loop(b, 2, (ac_value[]){x, x}, lam, lam);
      break;
    case 11:
      ac_array_lit(b, 2, (int64_t[]){2, 3}, 5, (ac_value[]){x, x, x, x, x});
      break;
    case 12:
      fn_ff("f");
      break;
    case 13:
      ac_fn_param(b, f, 2);
      break;
    case 14:
      ac_stencil(b, lam, AC_BOUNDARY_CONST, (ac_value){0}, x);
      break;
    case 15:
      ac_apply(b, AC_OP_MAP, 1, &lam);
      break;
    case 16:
      ac_apply(b, AC_OP_FOLD_SEG, 2, (ac_value[]){lam, x});
      break;
    }
    CHECK_STR(first_misuse(), cases[k].msg);
    teardown();
  }
}

UNIT_TEST(literals_are_typed_and_normalised) {
  setup();
  struct {
    ac_value v;
    ac_scalar s;
    uint64_t bits;
  } ints[] = {
      {ac_lit_int(b, AC_I8, -128), AC_I8, (uint64_t)-128},
      {ac_lit_int(b, AC_I64, INT64_MIN), AC_I64, (uint64_t)INT64_MIN},
      {ac_lit_uint(b, AC_U8, 255), AC_U8, 255},
      {ac_lit_uint(b, AC_U64, UINT64_MAX), AC_U64, UINT64_MAX},
      {ac_lit_int(b, AC_U16, 65535), AC_U16, 65535},
      {ac_lit_uint(b, AC_I32, 2147483647u), AC_I32, 2147483647u},
      {ac_lit_bool(b, true), AC_BOOL, 1},
  };
  for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
    const bnode *n = bld_get(b, ints[i].v.id);
    CHECK_EQ_INT(n->op, IR_LIT);
    CHECK_EQ_INT(n->flags, IR_F_SUFFIX);
    CHECK_EQ_INT(n->type, ir_ty_scalar(ctx, ints[i].s));
    CHECK(n->lit.u == ints[i].bits);
  }
  CHECK(bld_get(b, ac_lit_float(b, AC_F32, 0.1).id)->lit.f == (double)0.1f);
  CHECK(bld_get(b, ac_lit_float(b, AC_F64, 0.1).id)->lit.f == 0.1);
  CHECK(bld_get(b, ac_lit_int(b, AC_F32, 3).id)->lit.f == 3.0);
  CHECK(isinf(bld_get(b, ac_lit_float(b, AC_F32, -INFINITY).id)->lit.f));
  CHECK(bld_get(b, ac_lit_float(b, AC_F32, 3.4028235e38).id)->lit.f == (double)FLT_MAX);
  CHECK(!b->failed);
  teardown();
}

UNIT_TEST(types_wrap_the_ir_types) {
  setup();
  ac_type fields[2] = {ty(AC_F32), ty(AC_I32)};
  ac_type tup = ac_type_tuple(ctx, 2, fields);
  ac_type soa[2] = {arr(AC_F32), arr(AC_I32)};
  /* an array of tuples is the tuple of arrays */
  CHECK_EQ_INT(ac_type_array(ctx, tup, 1).id, ac_type_tuple(ctx, 2, soa).id);
  CHECK_EQ_INT(ac_type_tuple(ctx, 1, fields).id, ty(AC_F32).id);
  CHECK_EQ_INT(ac_type_array(ctx, arr(AC_F32), 1).id, 0); /* no arrays of arrays */
  CHECK_EQ_INT(ac_type_array(ctx, ty(AC_F32), 0).id, 0);
  CHECK_EQ_INT(ac_type_scalar(ctx, (ac_scalar)99).id, 0);
  CHECK_EQ_INT(ac_type_tuple(ctx, 2, (ac_type[]){ty(AC_F32), {12345}}).id, 0);
  char *s = ac_type_print(ctx, ac_type_array(ctx, tup, 2));
  CHECK_STR(s, "(f32[,], i32[,])");
  ac_string_destroy(ctx, s);
  s = ac_type_print(ctx, ac_type_tuple(ctx, 0, NULL));
  CHECK_STR(s, "()");
  ac_string_destroy(ctx, s);
  teardown();
}

UNIT_TEST(graph_depth_is_bounded) {
  setup();
  ac_fn f = fn_ff("f");
  ac_value x = ac_fn_param(b, f, 0);
  ac_value e = x;
  for (int i = 0; i < 2100; i++)
    e = bin(AC_OP_ADD, e, x);
  CHECK_EQ_INT(e.id, 0);
  CHECK_STR(first_misuse(), "expression nested too deeply (more than 2000 levels)");
  teardown();
  /* just below the limit the conversion works (and its recursion fits the
   * stack, which the sanitizer build checks) */
  setup();
  f = fn_ff("f");
  x = ac_fn_param(b, f, 0);
  e = x;
  for (int i = 0; i < 1990; i++)
    e = bin(i % 2 ? AC_OP_ADD : AC_OP_MUL, e, x);
  const char *deep = convert(f, e);
  CHECK(strncmp(deep, "(add (mul (add (mul (add", 24) == 0);
  CHECK(strstr(deep, "(mul %1 %1) %1) %1)") != NULL);
  teardown();
}

UNIT_TEST(ir_depth_after_sharing_is_bounded) {
  setup();
  ac_fn f = fn_ff("f");
  ac_value x = ac_fn_param(b, f, 0);
  /* 2048 shared values bound at the top give a chain of 2048 lets */
  enum { N = 2048 };
  static ac_value vals[N];
  for (int i = 0; i < N; i++) {
    ac_value s = bin(AC_OP_ADD, x, f32(i));
    vals[i] = bin(AC_OP_MUL, s, s);
  }
  for (int n = N; n > 1; n /= 2)
    for (int i = 0; i < n / 2; i++)
      vals[i] = bin(AC_OP_ADD, vals[2 * i], vals[2 * i + 1]);
  const char *r = convert(f, vals[0]);
  CHECK(strstr(r, "status 4: mod: error: the body of 'f' is nested 20") == r);
  teardown();
}

/* ---- through ac_fn_finish: verifier and printer ---- */

UNIT_TEST(full_finish_verifies_and_prints) {
  setup();
  ac_type ps[2] = {arr(AC_F32), arr(AC_F32)};
  ac_fn f = ac_fn_declare(b, "dotp", 2, ps, (const char *[]){"xs", "ys"}, ty(AC_F32));
  ac_value xy[2], ab[2];
  ac_lambda ml = ac_lambda_begin(b, 2, (const char *[]){"x", "y"}, xy);
  ac_value mul = ac_lambda_end(b, ml, bin(AC_OP_MUL, xy[0], xy[1]));
  ac_lambda al = ac_lambda_begin(b, 2, (const char *[]){"a", "b"}, ab);
  ac_value add = ac_lambda_end(b, al, bin(AC_OP_ADD, ab[0], ab[1]));
  ac_value prod =
      ac_apply(b, AC_OP_MAP, 3, (ac_value[]){mul, ac_fn_param(b, f, 0), ac_fn_param(b, f, 1)});
  ac_value r = ac_apply(b, AC_OP_FOLD, 3, (ac_value[]){add, f32(0), prod});
  ac_error *err = NULL;
  CHECK_EQ_INT(ac_fn_finish(b, f, r, &err), AC_OK);
  if (err)
    fprintf(stderr, "%s", ac_error_text(err));
  ac_error_destroy(err);
  err = NULL;
  char *text = ac_module_print(m, &err);
  CHECK_STR(text, "fn dotp(xs: f32[], ys: f32[]) -> f32 {\n"
                  "  fold(|a, b| a + b, 0.0, map(|x, y| x * y, xs, ys))\n"
                  "}\n");
  ac_string_destroy(ctx, text);
  ac_error_destroy(err);
  /* finishing twice is refused */
  CHECK_EQ_INT(ac_fn_finish(b, f, r, NULL), AC_ERR_INVALID);
  teardown();
}

UNIT_TEST(full_type_errors_leave_the_function_unfinished) {
  setup();
  ac_fn f = fn_ff("f");
  ac_builder_set_location(b, 6, 5);
  ac_value bad = bin(AC_OP_ADD, ac_fn_param(b, f, 0), ac_lit_int(b, AC_I32, 1));
  ac_error *err = NULL;
  CHECK_EQ_INT(ac_fn_finish(b, f, bad, &err), AC_ERR_TYPE);
  CHECK_EQ_INT(ac_error_line(err), 6);
  CHECK_EQ_INT(ac_error_column(err), 5);
  CHECK_STR(ac_error_file(err), "mod");
  ac_error_destroy(err);
  CHECK_EQ_INT(m->funcs[0].body, IR_NONE);
  /* it may be finished again with a correct body */
  CHECK_EQ_INT(ac_fn_finish(b, f, ac_fn_param(b, f, 1), NULL), AC_OK);
  teardown();
}

UNIT_TEST(full_calls_between_functions) {
  setup();
  ac_fn sq = ac_fn_declare(b, "sq", 1, (ac_type[]){ty(AC_F32)}, (const char *[]){"v"}, ty(AC_F32));
  ac_fn f = fn_ff("f");
  ac_value x = ac_fn_param(b, f, 0), y = ac_fn_param(b, f, 1);
  /* f is finished first: its call to sq is checked against sq's declaration */
  ac_value r = bin(AC_OP_ADD, ac_call(b, sq, 1, &x), ac_call(b, sq, 1, &y));
  CHECK_EQ_INT(ac_fn_finish(b, f, r, NULL), AC_OK);
  ac_value v = ac_fn_param(b, sq, 0);
  CHECK_EQ_INT(ac_fn_finish(b, sq, bin(AC_OP_MUL, v, v), NULL), AC_OK);
  char *text = ac_module_print(m, NULL);
  CHECK_STR(text, "fn sq(v: f32) -> f32 {\n  v * v\n}\n\n"
                  "fn f(x: f32, y: f32) -> f32 {\n  sq(x) + sq(y)\n}\n");
  ac_string_destroy(ctx, text);
  teardown();
}

/* ac_fn_declare_inferred (`-> _`): the result is the body's type once the
 * function is finished; a caller finished before it is refused (and left
 * unfinished), finished after it sees the inferred type. */
UNIT_TEST(full_inferred_result) {
  setup();
  ac_fn sq = ac_fn_declare_inferred(b, "sq", 1, (ac_type[]){ty(AC_F32)}, (const char *[]){"v"});
  ac_fn f = ac_fn_declare_inferred(b, "f", 1, (ac_type[]){ty(AC_F32)}, (const char *[]){"x"});
  CHECK(sq.id != 0 && f.id != 0);
  char *text = ac_module_print(m, NULL);
  CHECK_STR(text, "// fn sq(v: f32) -> _ (declared, not defined)\n\n"
                  "// fn f(x: f32) -> _ (declared, not defined)\n");
  ac_string_destroy(ctx, text);
  ac_value x = ac_fn_param(b, f, 0);
  ac_builder_set_location(b, 3, 7);
  ac_value call = ac_call(b, sq, 1, &x);
  ac_value r = ac_tuple(b, 2, (ac_value[]){call, ac_lit_int(b, AC_I64, 2)});
  ac_error *err = NULL;
  CHECK_EQ_INT(ac_fn_finish(b, f, r, &err), AC_ERR_TYPE);
  CHECK_STR(ac_error_message(err),
            "the result type of 'sq' is inferred (`-> _`) and not known yet: it is known once "
            "'sq' is finished");
  CHECK_EQ_INT(ac_error_line(err), 3);
  ac_error_destroy(err);
  CHECK_EQ_INT(m->funcs[1].body, IR_NONE);
  ac_value v = ac_fn_param(b, sq, 0);
  CHECK_EQ_INT(ac_fn_finish(b, sq, bin(AC_OP_MUL, v, v), NULL), AC_OK);
  CHECK_EQ_INT(m->funcs[0].result, ir_ty_scalar(ctx, AC_F32));
  CHECK_EQ_INT(ac_fn_finish(b, f, r, NULL), AC_OK);
  text = ac_module_print(m, NULL);
  CHECK_STR(text, "fn sq(v: f32) -> f32 {\n  v * v\n}\n\n"
                  "fn f(x: f32) -> (f32, i64) {\n  (sq(x), 2)\n}\n");
  ac_string_destroy(ctx, text);
  teardown();
}

UNIT_TEST(full_stencil_loop_and_array_literal) {
  setup();
  /* fn g(xs: f32[]) -> (f32[], f32): a stencil with a constant boundary, a
   * loop summing its result, and an array literal built from the sum */
  ac_type res[2] = {arr(AC_F32), ty(AC_F32)};
  ac_fn g = ac_fn_declare(b, "g", 1, (ac_type[]){arr(AC_F32)}, (const char *[]){"xs"},
                          ac_type_tuple(ctx, 2, res));
  ac_value xs = ac_fn_param(b, g, 0), w[1], st[2];
  ac_lambda wl = ac_lambda_begin(b, 1, (const char *[]){"w"}, w);
  ac_value nb = bin(AC_OP_SUB, ac_index(b, w[0], 1, (ac_value[]){i64(1)}),
                    ac_index(b, w[0], 1, (ac_value[]){i64(-1)}));
  ac_value sten = ac_stencil(b, ac_lambda_end(b, wl, nb), AC_BOUNDARY_CONST, f32(10), xs);
  ac_lambda cl = ac_lambda_begin(b, 2, (const char *[]){"acc", "i"}, st);
  ac_value cond = ac_lambda_end(b, cl, bin(AC_OP_LT, st[1], ac_unary(b, AC_OP_LEN, sten)));
  ac_lambda sl = ac_lambda_begin(b, 2, (const char *[]){"acc", "i"}, st);
  ac_value step =
      ac_lambda_end(b, sl,
                    ac_tuple(b, 2,
                             (ac_value[]){bin(AC_OP_ADD, st[0], ac_index(b, sten, 1, &st[1])),
                                          bin(AC_OP_ADD, st[1], i64(1))}));
  ac_value sum = ac_proj(b, ac_loop(b, 2, (ac_value[]){f32(0), i64(0)}, cond, step), 0);
  ac_value lit = ac_array_lit(b, 1, (int64_t[]){2}, 2, (ac_value[]){sum, f32(0.5)});
  ac_value both = ac_tuple(b, 2, (ac_value[]){ac_apply(b, AC_OP_REVERSE, 1, &lit), sum});
  ac_error *err = NULL;
  CHECK_EQ_INT(ac_fn_finish(b, g, both, &err), AC_OK);
  if (err)
    fprintf(stderr, "%s", ac_error_text(err));
  ac_error_destroy(err);
  char *text = ac_module_print(m, NULL);
  CHECK_STR(
      text,
      "fn g(xs: f32[]) -> (f32[], f32) {\n"
      "  let t1 = stencil(|w| w[1] - w[-1], 10.0, xs);\n"
      "  let t2 = (loop (acc = 0.0f32, i = 0i64) while i < len(t1) { (acc + t1[i], i + 1) }).0;\n"
      "  (reverse([t2, 0.5]), t2)\n"
      "}\n");
  ac_string_destroy(ctx, text);
  /* xs = [1, 2, 4]: the stencil gives [2 - 10, 4 - 1, 10 - 2] = [-8, 3, 8] */
  ac_function *fn = NULL;
  CHECK_EQ_INT(ac_function_create(m, "g", AC_BACKEND_INTERP, &fn, NULL), AC_OK);
  ac_datum arg = {.kind = AC_DATUM_ARRAY, .type = AC_F32}, out[2];
  arg.array = ac_array_create(ctx, AC_F32, 1, (int64_t[]){3}, (float[]){1, 2, 4}, NULL);
  if (fn && ac_function_call(fn, &arg, 1, out, 2, NULL) == AC_OK) {
    const float *r = ac_array_data(out[0].array);
    CHECK(ac_array_size(out[0].array) == 2 && r[0] == 0.5f && r[1] == 3.0f);
    CHECK(out[1].s.f == 3.0);
    ac_datum_release(&out[0]);
  } else {
    CHECK(!"the call failed");
  }
  ac_datum_release(&arg);
  if (fn)
    ac_function_destroy(fn);
  teardown();
}

/* prob (docs/language.md §6.7) in a built body: casts, prob literals and
 * arithmetic become log-space f64 code when the function is finished, and
 * a signature that mentions prob is refused (it would change meaning when
 * another function is finished). */
UNIT_TEST(full_prob_in_bodies_not_in_signatures) {
  setup();
  ac_fn bad = ac_fn_declare(b, "bad", 1, (ac_type[]){ty(AC_PROB)}, NULL, ty(AC_F64));
  CHECK(bad.id == 0);
  CHECK_STR(first_misuse(),
            "ac_fn_declare: parameter 1 of 'bad' mentions prob: a signature holds a probability "
            "as its log, an f64 (convert with AC_OP_LOG and AC_OP_FROM_LOG)");
  teardown();
  setup();
  ac_fn bad2 = ac_fn_declare(b, "bad", 0, NULL, NULL, ac_type_array(ctx, ty(AC_PROB), 2));
  CHECK(bad2.id == 0);
  teardown();
  setup();
  ac_value neg = ac_lit_float(b, AC_PROB, -0.5);
  CHECK(neg.id == 0);
  CHECK_STR(first_misuse(), "ac_lit_float: a probability cannot be negative: -0.5 as prob");
  teardown();
  setup();
  /* f(x, l) = log(prob(x) * 0.5 + from_log(l)) */
  ac_fn f = ac_fn_declare(b, "f", 2, (ac_type[]){ty(AC_F64), ty(AC_F64)},
                          (const char *[]){"x", "l"}, ty(AC_F64));
  ac_value p = ac_cast(b, AC_PROB, ac_fn_param(b, f, 0));
  ac_value q = ac_unary(b, AC_OP_FROM_LOG, ac_fn_param(b, f, 1));
  ac_value s = bin(AC_OP_ADD, bin(AC_OP_MUL, p, ac_lit_float(b, AC_PROB, 0.5)), q);
  ac_error *err = NULL;
  CHECK_EQ_INT(ac_fn_finish(b, f, ac_unary(b, AC_OP_LOG, s), &err), AC_OK);
  if (err)
    fprintf(stderr, "%s", ac_error_text(err));
  ac_error_destroy(err);
  char *text = ac_module_print(m, NULL);
  CHECK_STR(text, "fn f(x: f64, l: f64) -> f64 {\n"
                  "  log_add(log(x) + -0.6931471805599453, l)\n"
                  "}\n");
  ac_string_destroy(ctx, text);
  ac_function *fn = NULL;
  CHECK_EQ_INT(ac_function_create(m, "f", AC_BACKEND_INTERP, &fn, NULL), AC_OK);
  ac_datum args[2] = {{.kind = AC_DATUM_SCALAR, .type = AC_F64, .s.f = 0.5},
                      {.kind = AC_DATUM_SCALAR, .type = AC_F64, .s.f = -1000.0}},
           out;
  if (fn && ac_function_call(fn, args, 2, &out, 1, NULL) == AC_OK)
    CHECK(fabs(out.s.f - log(0.25 + exp(-1000.0))) < 1e-15); /* log(0.25) */
  else
    CHECK(!"the call failed");
  if (fn)
    ac_function_destroy(fn);
  teardown();
}

/* ac_rec_schedule asks for a schedule as `by` does: printed with the rec,
 * checked by ac_fn_finish (a schedule that does not order a read leaves
 * the function unfinished), and after ac_rec_end or on a lambda refused. */
static ac_status build_rows(ac_builder *bb, const int64_t *a, ac_error **err) {
  ac_context *c = bb->ctx;
  ac_fn f = ac_fn_declare(bb, "rows", 1, (ac_type[]){ac_type_scalar(c, AC_I64)},
                          (const char *[]){"n"}, ac_type_array(c, ac_type_scalar(c, AC_I64), 2));
  ac_value n = ac_fn_param(bb, f, 0), self, idx[2];
  ac_value zero = ac_lit_int(bb, AC_I64, 0), one = ac_lit_int(bb, AC_I64, 1);
  ac_rec r = ac_rec_begin(bb, 2, (ac_value[]){zero, zero}, (ac_value[]){n, n},
                          ac_type_scalar(c, AC_I64), (const char *[]){"d", "i", "j"}, &self, idx);
  ac_rec_schedule(bb, r, a);
  ac_value up = ac_index(bb, self, 2, (ac_value[]){ac_binary(bb, AC_OP_SUB, idx[0], one), idx[1]});
  ac_value body =
      ac_if(bb, ac_binary(bb, AC_OP_EQ, idx[0], zero), idx[1], ac_binary(bb, AC_OP_ADD, up, one));
  return ac_fn_finish(bb, f, ac_rec_end(bb, r, body), err);
}

UNIT_TEST(full_rec_schedule) {
  setup();
  ac_error *err = NULL;
  CHECK_EQ_INT(build_rows(b, (const int64_t[]){2, 0}, &err), AC_OK);
  if (err)
    fprintf(stderr, "%s", ac_error_text(err));
  ac_error_destroy(err);
  char *text = ac_module_print(m, NULL);
  CHECK_STR(text, "fn rows(n: i64) -> i64[,] {\n"
                  "  let d = rec (i in 0..=n, j in 0..=n) by (2, 0) -> i64 {\n"
                  "    if i == 0 { j } else { d[i - 1, j] + 1 }\n"
                  "  };\n"
                  "  d\n"
                  "}\n");
  ac_string_destroy(ctx, text);
  teardown();
  setup();
  err = NULL;
  CHECK_EQ_INT(build_rows(b, (const int64_t[]){0, 1}, &err), AC_ERR_TYPE);
  CHECK_STR(err ? ac_error_message(err) : "",
            "rec schedule by (0, 1) does not order the read d[i - 1, j]: an element read must "
            "lie on an earlier wavefront (a smaller product of the schedule with its indices) "
            "than the element reading it; by (1, 0) would do");
  ac_error_destroy(err);
  CHECK_EQ_INT(m->funcs[0].body, IR_NONE);
  teardown();
  setup();
  ac_value p[1];
  ac_lambda l = ac_lambda_begin(b, 1, NULL, p);
  ac_rec_schedule(b, (ac_rec){l.id}, (const int64_t[]){1});
  CHECK_STR(first_misuse(), "ac_rec_schedule: not an open rec of this builder");
  teardown();
}

/* ---- random graphs: the converted IR means what the graph means ---- */

/* A node of a random integer program: op 0 = leaf (value in `leaf`), 1 add,
 * 2 sub, 3 mul, 4 `if a < b { c } else { d }`, 5 `i64(a < b && c < d)`. */
typedef struct rnode {
  int op, k[4];
  ac_value v;
  bool inner; /* depends on the lambda's parameter */
} rnode;

static uint64_t rng_next(uint64_t *st) {
  *st = *st * 6364136223846793005u + 1442695040888963407u;
  return *st >> 33;
}

/* Evaluates node i (wrapping arithmetic) with the lambda's parameter (node
 * elem_node) equal to e; memo[] caches values (done[] says which). */
typedef struct reval_st {
  const rnode *ns;
  const uint64_t *leaf;
  int elem_node;
  uint64_t e;
  uint64_t memo[64];
  bool done[64];
} reval_st;

static uint64_t reval(reval_st *rs, int i) {
  const rnode *n = &rs->ns[i];
  if (rs->done[i])
    return rs->memo[i];
  uint64_t r, a = 0, c = 0;
  if (i == rs->elem_node)
    r = rs->e;
  else if (n->op == 0)
    r = rs->leaf[i];
  else if (n->op == 1)
    r = reval(rs, n->k[0]) + reval(rs, n->k[1]);
  else if (n->op == 2)
    r = reval(rs, n->k[0]) - reval(rs, n->k[1]);
  else if (n->op == 3)
    r = reval(rs, n->k[0]) * reval(rs, n->k[1]);
  else {
    a = reval(rs, n->k[0]);
    c = reval(rs, n->k[1]);
    if (n->op == 4)
      r = (int64_t)a < (int64_t)c ? reval(rs, n->k[2]) : reval(rs, n->k[3]);
    else
      r = (int64_t)a < (int64_t)c && (int64_t)reval(rs, n->k[2]) < (int64_t)reval(rs, n->k[3]);
  }
  rs->done[i] = true;
  rs->memo[i] = r;
  return r;
}

/* Appends a random operation on earlier nodes [lo, n) (biased to recent ones,
 * so that graphs are deep and values are reused). */
static void rgen(rnode *ns, int n, int lo, uint64_t *st) {
  rnode *r = &ns[n];
  r->op = 1 + (int)(rng_next(st) % 5);
  int arity = r->op >= 4 ? 4 : 2;
  r->inner = false;
  for (int j = 0; j < arity; j++) {
    int span = n - lo;
    int back = (int)(rng_next(st) % (uint64_t)(span < 6 ? span : 6));
    int k = rng_next(st) % 3 == 0 ? lo + (int)(rng_next(st) % (uint64_t)span) : n - 1 - back;
    r->k[j] = k;
    r->inner = r->inner || ns[k].inner;
  }
  ac_value a = ns[r->k[0]].v, c = ns[r->k[1]].v;
  static const ac_op bins[4] = {AC_OP_ADD, AC_OP_ADD, AC_OP_SUB, AC_OP_MUL};
  if (r->op <= 3) {
    r->v = bin(bins[r->op], a, c);
  } else if (r->op == 4) {
    r->v = ac_if(b, bin(AC_OP_LT, a, c), ns[r->k[2]].v, ns[r->k[3]].v);
  } else {
    ac_value both =
        bin(AC_OP_LAND, bin(AC_OP_LT, a, c), bin(AC_OP_LT, ns[r->k[2]].v, ns[r->k[3]].v));
    r->v = ac_cast(b, AC_I64, both);
  }
}

UNIT_TEST(random_graphs_keep_their_meaning) {
  enum { NODES = 64 };
  uint64_t st = 12345;
  for (int trial = 0; trial < 150; trial++) {
    setup();
    rnode ns[NODES];
    uint64_t leaf[NODES];
    /* fn f(p: i64, q: i64, xs: i64[]) -> i64 {
     *   outer + fold(|a, b| a + b, 0, map(|e| inner, xs)) } */
    ac_type ps[3] = {ty(AC_I64), ty(AC_I64), arr(AC_I64)};
    ac_fn f = ac_fn_declare(b, "f", 3, ps, (const char *[]){"p", "q", "xs"}, ty(AC_I64));
    int64_t pv = (int64_t)(rng_next(&st) % 21) - 10, qv = (int64_t)(rng_next(&st) % 21) - 10;
    int64_t xs[3] = {(int64_t)(rng_next(&st) % 9) - 4, 7, -3};
    int n = 0;
    ns[n] = (rnode){.op = 0, .v = ac_fn_param(b, f, 0)};
    leaf[n++] = (uint64_t)pv;
    ns[n] = (rnode){.op = 0, .v = ac_fn_param(b, f, 1)};
    leaf[n++] = (uint64_t)qv;
    ns[n] = (rnode){.op = 0, .v = ac_lit_int(b, AC_I64, 3)};
    leaf[n++] = 3;
    int outer_n = 8 + (int)(rng_next(&st) % 12);
    while (n < outer_n)
      rgen(ns, n++, 0, &st);
    int outer_result = n - 1;
    /* the lambda sees every outer node and its parameter */
    ac_value e[1];
    ac_lambda l = ac_lambda_begin(b, 1, (const char *[]){"e"}, e);
    int elem = n;
    ns[n] = (rnode){.op = 0, .v = e[0], .inner = true};
    leaf[n++] = 0;
    int inner_n = n + 4 + (int)(rng_next(&st) % 14);
    while (n < inner_n)
      rgen(ns, n++, 0, &st);
    ac_value lam = ac_lambda_end(b, l, ns[n - 1].v);
    ac_value ab[2];
    ac_lambda pl = ac_lambda_begin(b, 2, NULL, ab);
    ac_value plus = ac_lambda_end(b, pl, bin(AC_OP_ADD, ab[0], ab[1]));
    ac_value mapped = ac_apply(b, AC_OP_MAP, 2, (ac_value[]){lam, ac_fn_param(b, f, 2)});
    ac_value sum = ac_apply(b, AC_OP_FOLD, 3, (ac_value[]){plus, i64(0), mapped});
    ac_value body = bin(AC_OP_ADD, ns[outer_result].v, sum);
    reval_st rs = {.ns = ns, .leaf = leaf, .elem_node = elem};
    uint64_t want = reval(&rs, outer_result);
    for (int k = 0; k < 3; k++) {
      memset(rs.done, 0, sizeof rs.done);
      rs.e = (uint64_t)xs[k];
      want += reval(&rs, n - 1);
    }

    ac_error *err = NULL;
    ac_function *fn = NULL;
    ac_status s1 = ac_fn_finish(b, f, body, &err);
    if (s1 == AC_OK)
      s1 = ac_function_create(m, "f", AC_BACKEND_INTERP, &fn, &err);
    ac_datum args[3] = {{.kind = AC_DATUM_SCALAR, .type = AC_I64, .s.i = pv},
                        {.kind = AC_DATUM_SCALAR, .type = AC_I64, .s.i = qv},
                        {.kind = AC_DATUM_ARRAY, .type = AC_I64}};
    args[2].array = ac_array_create(ctx, AC_I64, 1, (int64_t[]){3}, xs, NULL);
    ac_datum res = {0};
    if (s1 == AC_OK)
      s1 = ac_function_call(fn, args, 3, &res, 1, &err);
    CHECK_EQ_INT(s1, AC_OK);
    if (s1 != AC_OK)
      fprintf(stderr, "trial %d: %s", trial, ac_error_text(err));
    else if ((uint64_t)res.s.i != want)
      fprintf(stderr, "trial %d: got %lld, want %lld\n", trial, (long long)res.s.i,
              (long long)want);
    CHECK((uint64_t)res.s.i == want);
    /* and the IR prints as text that reads back to the same IR */
    char *text = ac_module_print(m, NULL);
    ac_module *m2 = NULL;
    CHECK(text && ac_module_parse(ctx, "p", text, strlen(text), &m2, NULL) == AC_OK);
    char *text2 = m2 ? ac_module_print(m2, NULL) : NULL;
    CHECK_STR(text2, text);
    ac_string_destroy(ctx, text);
    ac_string_destroy(ctx, text2);
    ac_module_destroy(m2);
    ac_datum_release(&args[2]);
    ac_error_destroy(err);
    if (fn)
      ac_function_destroy(fn);
    teardown();
  }
}

/* ---- allocation failures ---- */

typedef struct fail_alloc {
  long budget; /* allocations left before failing; < 0: never fail */
} fail_alloc;

static void *failing_realloc(void *ud, void *p, size_t n) {
  fail_alloc *fa = ud;
  if (n == 0) {
    free(p);
    return NULL;
  }
  if (fa->budget == 0)
    return NULL;
  if (fa->budget > 0)
    fa->budget--;
  return realloc(p, n);
}

/* Builds a small program with sharing, lambdas and a rec; returns the status
 * of converting it (the verifier is not involved). */
static ac_status build_sample(ac_context *c) {
  ac_module *mm = ac_module_create(c, "oom");
  if (!mm)
    return AC_ERR_NOMEM;
  ac_builder *bb = ac_builder_create(mm);
  if (!bb) {
    ac_module_destroy(mm);
    return AC_ERR_NOMEM;
  }
  ac_type ps[2] = {ac_type_array(c, ac_type_scalar(c, AC_F32), 1), ac_type_scalar(c, AC_F32)};
  ac_fn f = ac_fn_declare(bb, "f", 2, ps, NULL, ps[0]);
  ac_value xs = ac_fn_param(bb, f, 0), y = ac_fn_param(bb, f, 1), p[1], self, idx[1];
  ac_value s = ac_binary(bb, AC_OP_MUL, y, y);
  ac_lambda l = ac_lambda_begin(bb, 1, NULL, p);
  ac_value lam = ac_lambda_end(bb, l, ac_binary(bb, AC_OP_ADD, p[0], s));
  ac_value m1 = ac_apply(bb, AC_OP_MAP, 2, (ac_value[]){lam, xs});
  ac_value m2 = ac_apply(bb, AC_OP_MAP, 2, (ac_value[]){lam, m1});
  ac_value n = ac_unary(bb, AC_OP_LEN, xs);
  ac_rec r = ac_rec_begin(bb, 1, (ac_value[]){ac_lit_int(bb, AC_I64, 0)}, &n,
                          ac_type_scalar(c, AC_F32), (const char *[]){"d", "i"}, &self, idx);
  ac_value d = ac_rec_end(bb, r, ac_binary(bb, AC_OP_ADD, ac_index(bb, m2, 1, idx), s));
  ac_value body = ac_apply(bb, AC_OP_MAP, 2, (ac_value[]){lam, d});
  ac_status st;
  if (bb->failed)
    st = ac_fn_finish(bb, f, body, NULL);
  else
    st = bld_convert(bb, &bb->funcs[f.id], body.id, NULL);
  ac_builder_destroy(bb);
  ac_module_destroy(mm);
  return st;
}

UNIT_TEST(allocation_failures_are_reported) {
  fail_alloc fa = {-1};
  ac_context *c = ac_context_create_with_allocator(failing_realloc, &fa);
  CHECK_EQ_INT(build_sample(c), AC_OK);
  ac_context_destroy(c);
  /* fail the 1st, 2nd, ... allocation until the whole run succeeds; any
   * other outcome than AC_ERR_NOMEM ends the test */
  int failures = 0;
  ac_status st = AC_ERR_NOMEM;
  for (long budget = 0; budget < 100000 && st == AC_ERR_NOMEM; budget++) {
    fa.budget = budget;
    c = ac_context_create_with_allocator(failing_realloc, &fa);
    if (!c)
      continue;
    st = build_sample(c);
    ac_context_destroy(c);
    failures += st == AC_ERR_NOMEM;
  }
  CHECK_EQ_INT(st, AC_OK);
  CHECK(failures > 10);
}

UNIT_MAIN(value_used_twice_is_let_bound_once, value_used_once_is_not_let_bound,
          value_used_in_two_lambdas_is_bound_outside,
          value_used_twice_in_one_lambda_is_bound_inside,
          value_depending_on_lambda_parameter_stays_inside, value_used_in_one_if_branch_stays_there,
          value_used_only_right_of_and_stays_there, lets_are_ordered_as_written,
          automatic_names_count_per_function, automatic_names_avoid_bound_names,
          nested_lambdas_use_outer_parameters, lambda_passed_twice_is_duplicated,
          lambda_with_inner_lambda_passed_twice, calls_stay_calls, recurrence_convention,
          anonymous_rec_used_once_is_inline, shared_rec_let_names,
          stencil_array_literal_and_loop_conventions, parameter_used_outside_its_lambda,
          rec_index_used_outside_its_rec, parameter_of_another_function,
          invalid_values_are_reported_at_finish, misuse_messages, literals_are_typed_and_normalised,
          types_wrap_the_ir_types, graph_depth_is_bounded, ir_depth_after_sharing_is_bounded,
          full_finish_verifies_and_prints, full_type_errors_leave_the_function_unfinished,
          full_calls_between_functions, full_inferred_result, full_stencil_loop_and_array_literal,
          full_prob_in_bodies_not_in_signatures, full_rec_schedule,
          random_graphs_keep_their_meaning, allocation_failures_are_reported)
