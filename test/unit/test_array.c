/* Unit tests of host arrays (lib/api/array.c): creation, copying, reference
 * counting, size limits and allocation failure. */
#include "arrayc/arrayc.h"
#include "unit.h"

#include <stdlib.h>

UNIT_TEST(create_copies_data_and_extents) {
  ac_context *ctx = ac_context_create();
  int64_t ext[2] = {2, 3};
  int32_t data[6] = {1, 2, 3, 4, 5, 6};
  ac_error *err = NULL;
  ac_array *a = ac_array_create(ctx, AC_I32, 2, ext, data, &err);
  CHECK(a != NULL);
  CHECK(err == NULL);
  data[0] = 99; /* the array has its own copy */
  CHECK_EQ_INT(ac_array_type(a), AC_I32);
  CHECK_EQ_INT(ac_array_rank(a), 2);
  CHECK_EQ_INT(ac_array_extents(a)[0], 2);
  CHECK_EQ_INT(ac_array_extents(a)[1], 3);
  CHECK_EQ_INT(ac_array_size(a), 6);
  const int32_t *d = ac_array_data(a);
  CHECK_EQ_INT(d[0], 1);
  CHECK_EQ_INT(d[5], 6);
  ac_array_release(a);
  ac_context_destroy(ctx);
}

UNIT_TEST(null_data_gives_zeros) {
  ac_context *ctx = ac_context_create();
  int64_t ext = 5;
  ac_array *a = ac_array_create(ctx, AC_F64, 1, &ext, NULL, NULL);
  CHECK(a != NULL);
  const double *d = ac_array_data(a);
  for (int i = 0; i < 5; i++)
    CHECK(d[i] == 0.0);
  ac_array_release(a);
  ac_context_destroy(ctx);
}

UNIT_TEST(bool_bytes_are_normalised) {
  ac_context *ctx = ac_context_create();
  int64_t ext = 3;
  unsigned char in[3] = {0, 7, 255};
  ac_array *a = ac_array_create(ctx, AC_BOOL, 1, &ext, in, NULL);
  const unsigned char *d = ac_array_data(a);
  CHECK_EQ_INT(d[0], 0);
  CHECK_EQ_INT(d[1], 1);
  CHECK_EQ_INT(d[2], 1);
  ac_array_release(a);
  ac_context_destroy(ctx);
}

UNIT_TEST(empty_arrays_in_any_dimension) {
  ac_context *ctx = ac_context_create();
  int64_t ext[3] = {4, 0, 1000000};
  ac_array *a = ac_array_create(ctx, AC_U8, 3, ext, NULL, NULL);
  CHECK(a != NULL);
  CHECK_EQ_INT(ac_array_size(a), 0);
  CHECK(ac_array_data(a) != NULL);
  ac_array_release(a);
  ac_context_destroy(ctx);
}

UNIT_TEST(retain_and_release_count_references) {
  ac_context *ctx = ac_context_create();
  int64_t ext = 1;
  ac_array *a = ac_array_create(ctx, AC_I8, 1, &ext, NULL, NULL);
  ac_array_retain(a);
  ac_array_release(a);
  CHECK_EQ_INT(ac_array_size(a), 1); /* still alive: one reference left (ASan checks) */
  ac_array_release(a);
  ac_array_retain(NULL);
  ac_array_release(NULL);
  ac_context_destroy(ctx);
}

static void expect_invalid(ac_context *ctx, ac_scalar t, unsigned rank, const int64_t *ext,
                           const char *msg) {
  ac_error *err = NULL;
  ac_array *a = ac_array_create(ctx, t, rank, ext, NULL, &err);
  CHECK(a == NULL);
  CHECK_EQ_INT(ac_error_status(err), AC_ERR_INVALID);
  CHECK_STR(ac_error_message(err), msg);
  ac_error_destroy(err);
}

UNIT_TEST(bad_arguments_are_errors) {
  ac_context *ctx = ac_context_create();
  int64_t neg[2] = {3, -1};
  int64_t ok = 2;
  expect_invalid(ctx, AC_I32, 2, neg, "negative extent -1");
  expect_invalid(ctx, (ac_scalar)42, 1, &ok, "invalid scalar type 42");
  expect_invalid(ctx, AC_I32, 0, &ok, "array rank must be at least 1");
  expect_invalid(ctx, AC_I32, 1, NULL, "array extents are NULL");
  /* errors are optional */
  CHECK(ac_array_create(ctx, AC_I32, 2, neg, NULL, NULL) == NULL);
  ac_context_destroy(ctx);
}

UNIT_TEST(huge_arrays_are_refused_not_allocated) {
  ac_context *ctx = ac_context_create();
  int64_t overflow[2] = {(int64_t)1 << 32, (int64_t)1 << 32}; /* 2^64 elements */
  int64_t big[1] = {(int64_t)1 << 45};                        /* 2^48 bytes of f64 */
  int64_t max[1] = {INT64_MAX};
  expect_invalid(ctx, AC_U8, 2, overflow, "array too large");
  expect_invalid(ctx, AC_F64, 1, big, "array too large");
  expect_invalid(ctx, AC_BOOL, 1, max, "array too large");
  ac_context_destroy(ctx);
}

/* An allocator that fails once `budget` allocations have been made. */
typedef struct budget {
  int left;
} budget;

static void *budget_realloc(void *ud, void *p, size_t n) {
  budget *b = ud;
  if (n == 0) {
    free(p);
    return NULL;
  }
  if (b->left == 0)
    return NULL;
  b->left--;
  return realloc(p, n);
}

UNIT_TEST(allocation_failure_is_nomem) {
  budget b = {100};
  ac_context *ctx = ac_context_create_with_allocator(budget_realloc, &b);
  CHECK(ctx != NULL);
  b.left = 0;
  int64_t ext = 10;
  ac_error *err = NULL;
  ac_array *a = ac_array_create(ctx, AC_I32, 1, &ext, NULL, &err);
  CHECK(a == NULL);
  CHECK(err == NULL); /* no memory for an error object either */
  b.left = 100;
  a = ac_array_create(ctx, AC_I32, 1, &ext, NULL, &err);
  CHECK(a != NULL);
  ac_array_release(a);
  ac_context_destroy(ctx);
}

UNIT_TEST(datum_release_drops_the_reference) {
  ac_context *ctx = ac_context_create();
  int64_t ext = 2;
  ac_datum d = {AC_DATUM_ARRAY, AC_I32, {0}, ac_array_create(ctx, AC_I32, 1, &ext, NULL, NULL)};
  ac_datum_release(&d);
  CHECK(d.array == NULL);
  ac_datum_release(&d); /* twice is harmless */
  ac_datum s = {AC_DATUM_SCALAR, AC_I32, {0}, NULL};
  ac_datum_release(&s);
  ac_datum_release(NULL);
  ac_context_destroy(ctx);
}

UNIT_MAIN(create_copies_data_and_extents, null_data_gives_zeros, bool_bytes_are_normalised,
          empty_arrays_in_any_dimension, retain_and_release_count_references,
          bad_arguments_are_errors, huge_arrays_are_refused_not_allocated,
          allocation_failure_is_nomem, datum_release_drops_the_reference)
