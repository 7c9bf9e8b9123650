/* Unit tests of the context: interned strings and types, structure-of-arrays
 * normalisation, array views, buffers and rendered diagnostics. */
#include "ir.h"
#include "unit.h"

#include <stdlib.h>

UNIT_TEST(strings_are_interned) {
  ac_context *ctx = ac_context_create();
  ir_sym a = ir_sym_intern(ctx, "xs", 2), b = ir_sym_intern(ctx, "xsy", 2);
  CHECK(a != IR_SYM_NONE);
  CHECK_EQ_INT(a, b);
  CHECK(ir_sym_intern(ctx, "ys", 2) != a);
  /* enough symbols to force several rehashes */
  char name[32];
  ir_sym first = 0;
  for (int i = 0; i < 5000; i++) {
    int n = snprintf(name, sizeof name, "v%d", i);
    ir_sym s = ir_sym_intern(ctx, name, (size_t)n);
    if (i == 0)
      first = s;
  }
  CHECK_EQ_INT(ir_sym_intern(ctx, "v0", 2), first);
  CHECK_STR(ir_sym_str(ctx, first), "v0");
  CHECK_STR(ir_sym_str(ctx, IR_SYM_NONE), "");
  ac_context_destroy(ctx);
}

UNIT_TEST(types_are_hash_consed) {
  ac_context *ctx = ac_context_create();
  ir_type f32 = ir_ty_scalar(ctx, AC_F32), i32 = ir_ty_scalar(ctx, AC_I32);
  CHECK_EQ_INT(f32, ir_ty_scalar(ctx, AC_F32));
  ir_type pair[2] = {f32, i32};
  ir_type t1 = ir_ty_tuple(ctx, 2, pair), t2 = ir_ty_tuple(ctx, 2, pair);
  CHECK_EQ_INT(t1, t2);
  CHECK_EQ_INT(ir_ty_tuple(ctx, 1, pair), f32); /* no 1-tuples */
  CHECK(ir_ty_array(ctx, f32, 1) != ir_ty_array(ctx, f32, 2));
  CHECK_EQ_INT(ir_ty_scalar(ctx, (ac_scalar)99), IR_TY_NONE);
  ac_context_destroy(ctx);
}

UNIT_TEST(array_of_tuples_is_tuple_of_arrays) {
  ac_context *ctx = ac_context_create();
  ir_type f32 = ir_ty_scalar(ctx, AC_F32), i32 = ir_ty_scalar(ctx, AC_I32);
  ir_type pair[2] = {f32, i32};
  ir_type aos = ir_ty_array(ctx, ir_ty_tuple(ctx, 2, pair), 2);
  ir_type arrs[2] = {ir_ty_array(ctx, f32, 2), ir_ty_array(ctx, i32, 2)};
  CHECK_EQ_INT(aos, ir_ty_tuple(ctx, 2, arrs));
  ir_type elem;
  uint32_t rank;
  CHECK(ir_ty_array_view(ctx, aos, &elem, &rank));
  CHECK_EQ_INT(rank, 2);
  CHECK_EQ_INT(elem, ir_ty_tuple(ctx, 2, pair));
  /* arrays of different rank are just a tuple */
  ir_type mixed[2] = {ir_ty_array(ctx, f32, 1), ir_ty_array(ctx, f32, 2)};
  CHECK(!ir_ty_array_view(ctx, ir_ty_tuple(ctx, 2, mixed), NULL, NULL));
  /* arrays of arrays do not exist */
  CHECK_EQ_INT(ir_ty_array(ctx, ir_ty_array(ctx, f32, 1), 1), IR_TY_NONE);
  CHECK_EQ_INT(ir_ty_array(ctx, ir_ty_unit(ctx), 1), IR_TY_NONE);
  ir_buf b;
  ir_buf_init(&b, ctx);
  ir_ty_print(ctx, aos, &b);
  CHECK_STR(ir_buf_cstr(&b), "(f32[,], i32[,])");
  ir_buf_free(&b);
  CHECK_EQ_INT(ir_ty_num_leaves(ctx, aos), 2);
  ac_context_destroy(ctx);
}

UNIT_TEST(buffers_grow) {
  ac_context *ctx = ac_context_create();
  ir_buf b;
  ir_buf_init(&b, ctx);
  for (int i = 0; i < 1000; i++)
    ir_buf_printf(&b, "%d,", i % 10);
  CHECK_EQ_INT(b.len, 2000);
  char *s = ir_buf_take(&b);
  CHECK(s[1999] == ',' && s[2000] == 0);
  ac_string_destroy(ctx, s);
  ac_context_destroy(ctx);
}

UNIT_TEST(diagnostics_show_line_and_caret) {
  ac_context *ctx = ac_context_create();
  ac_module *m = ac_module_create(ctx, "prog.ac");
  const char *src = "fn f() -> i32 {\n\tlet x = 1;\n  y\n}\n";
  m->src = ac_strdup(ctx, src);
  m->srclen = strlen(src);
  ac_error *e = ir_error(ctx, AC_ERR_TYPE, m, (ir_loc){3, 3}, "unknown name '%s'", "y");
  CHECK_STR(ac_error_text(e), "prog.ac:3:3: error: unknown name 'y'\n  y\n  ^\n");
  CHECK_STR(ac_error_message(e), "unknown name 'y'");
  CHECK_EQ_INT(ac_error_line(e), 3);
  CHECK_EQ_INT(ac_error_column(e), 3);
  CHECK_EQ_INT(ac_error_status(e), AC_ERR_TYPE);
  ac_error_destroy(e);
  /* tabs are kept so the caret lines up */
  e = ir_error(ctx, AC_ERR_TYPE, m, (ir_loc){2, 6}, "x");
  CHECK_STR(ac_error_text(e), "prog.ac:2:6: error: x\n\tlet x = 1;\n\t    ^\n");
  ac_error_destroy(e);
  /* the empty line after the final newline */
  e = ir_error(ctx, AC_ERR_SYNTAX, m, (ir_loc){5, 1}, "unexpected end of input");
  CHECK_STR(ac_error_text(e), "prog.ac:5:1: error: unexpected end of input\n\n^\n");
  ac_error_destroy(e);
  /* no position */
  e = ir_error(ctx, AC_ERR_RUNTIME, NULL, (ir_loc){0, 0}, "boom");
  CHECK_STR(ac_error_text(e), "error: boom\n");
  ac_error_destroy(e);
  ac_module_destroy(m);
  ac_context_destroy(ctx);
}

/* An allocator that fails the Nth allocation (Lua's allocator hook idea). */
typedef struct failing {
  long countdown;
} failing;
static void *failing_realloc(void *ud, void *p, size_t n) {
  failing *f = ud;
  if (n == 0) {
    free(p);
    return NULL;
  }
  if (f->countdown-- == 0)
    return NULL;
  return realloc(p, n);
}

UNIT_TEST(allocation_failures_are_reported_not_fatal) {
  for (long k = 0; k < 60; k++) {
    failing f = {k};
    ac_context *ctx = ac_context_create_with_allocator(failing_realloc, &f);
    if (!ctx)
      continue;
    ac_module *m = ac_module_create(ctx, "x");
    if (m) {
      for (int i = 0; i < 40; i++)
        ir_var(m, (ir_loc){1, 1}, (uint32_t)i);
      ac_module_destroy(m);
    }
    ir_type f32 = ir_ty_scalar(ctx, AC_F32);
    (void)ir_ty_array(ctx, f32, 3);
    ac_context_destroy(ctx);
  }
  CHECK(1); /* reaching here without a crash or leak (ASan) is the test */
}

UNIT_TEST(scalar_names_and_sizes) {
  CHECK_STR(ac_scalar_name(AC_U16), "u16");
  CHECK_EQ_INT(ac_scalar_size(AC_F64), 8);
  CHECK_EQ_INT(ac_scalar_size(AC_BOOL), 1);
  CHECK(ac_scalar_name((ac_scalar)42) == NULL);
}

UNIT_MAIN(strings_are_interned, types_are_hash_consed, array_of_tuples_is_tuple_of_arrays,
          buffers_grow, diagnostics_show_line_and_caret, allocation_failures_are_reported_not_fatal,
          scalar_names_and_sizes)
