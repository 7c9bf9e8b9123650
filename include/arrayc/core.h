/* arrayc/core.h: contexts, status codes, errors and scalar kinds.
 *
 * Everything in arrayc hangs off an ac_context: the allocator hooks, the
 * interned types and names, and (later) the caches. There is no global
 * mutable state. A context and everything created from it may be used by one
 * thread at a time unless a function says otherwise.
 *
 * Errors are values: a function that can fail returns ac_status (or NULL) and,
 * when its `err` argument is not NULL, stores a newly created ac_error there
 * which the caller frees with ac_error_destroy. Nothing in the library prints
 * or exits.
 */
#ifndef ARRAYC_CORE_H
#define ARRAYC_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define AC_API __attribute__((visibility("default")))
#else
#define AC_API
#endif

/* Result of every fallible call. AC_OK is zero. */
typedef enum ac_status {
  AC_OK = 0,
  AC_ERR_SYNTAX,      /* text could not be parsed */
  AC_ERR_TYPE,        /* scoping, typing or other static check failed */
  AC_ERR_RUNTIME,     /* a call stopped: index out of bounds, shape mismatch, ... */
  AC_ERR_INVALID,     /* invalid argument passed to the API */
  AC_ERR_UNSUPPORTED, /* feature or backend not available in this build */
  AC_ERR_NOMEM,       /* an allocation failed */
  AC_ERR_IO,          /* reading or writing a file failed */
  AC_ERR_INTERNAL     /* a bug in arrayc: please report it */
} ac_status;

/* Scalar element types. The numeric values are stable (they appear in
 * serialised plans and headers). */
typedef enum ac_scalar {
  AC_BOOL = 0,
  AC_I8 = 1,
  AC_I16 = 2,
  AC_I32 = 3,
  AC_I64 = 4,
  AC_U8 = 5,
  AC_U16 = 6,
  AC_U32 = 7,
  AC_U64 = 8,
  AC_F32 = 9,
  AC_F64 = 10
} ac_scalar;
/* The storage kinds, AC_BOOL .. AC_F64: what arrays and arguments hold. */
#define AC_NUM_SCALARS 11
/* A probability (docs/language.md §6.7), stored as its natural logarithm in
 * an f64. It exists only in the types of programs (ac_type_scalar, ac_cast,
 * ac_lit_float): verifying a module replaces it by AC_F64 and its operations
 * by their log-space equivalents, so arrays, arguments, plans and headers
 * never hold it (a macro, not an enumerator, so that switches over storage
 * kinds need no case for it). */
#define AC_PROB ((ac_scalar)11)

/* Name of a scalar kind as the language spells it ("f32", "prob"); NULL if
 * invalid. */
AC_API const char *ac_scalar_name(ac_scalar s);
/* Size in bytes of one element of that kind (bool is one byte, prob 8). */
AC_API size_t ac_scalar_size(ac_scalar s);

/* Allocator hooks. `realloc_fn(ud, NULL, n)` allocates, `realloc_fn(ud, p, 0)`
 * frees and returns NULL. A hook that returns NULL for n > 0 makes the calling
 * operation fail with AC_ERR_NOMEM. */
typedef void *(*ac_realloc_fn)(void *user_data, void *ptr, size_t size);

typedef struct ac_context ac_context;
typedef struct ac_error ac_error;

/* Creates a context using malloc/realloc/free. Returns NULL only if memory is
 * exhausted. Free with ac_context_destroy after every object made from it. */
AC_API ac_context *ac_context_create(void);
/* Same with an allocator hook; `fn` is used for every allocation the context
 * and its objects make. */
AC_API ac_context *ac_context_create_with_allocator(ac_realloc_fn fn, void *user_data);
AC_API void ac_context_destroy(ac_context *ctx);

/* Warnings: compiling may succeed and still warn about code that will be
 * slow (docs/api.md §4: today, an array operation nested in element code
 * that each GPU thread runs as a sequential loop). The context hands each
 * warning to its handler once per source position (file, line, column),
 * however many functions or inlined copies contain that code; file is the
 * module's name (NULL, line and column 0: no position). Without a handler
 * (the default, and after setting fn NULL) warnings are dropped. */
typedef void (*ac_warning_fn)(void *user_data, const char *file, unsigned line, unsigned column,
                              const char *message);
AC_API void ac_context_set_warning_handler(ac_context *ctx, ac_warning_fn fn, void *user_data);

/* Error objects. All accessors borrow strings owned by the error. */
AC_API ac_status ac_error_status(const ac_error *e);
/* The bare message, e.g. "unknown name 'x'". */
AC_API const char *ac_error_message(const ac_error *e);
/* Source position (file NULL and line/column 0 when the error has none). */
AC_API const char *ac_error_file(const ac_error *e);
AC_API unsigned ac_error_line(const ac_error *e);
AC_API unsigned ac_error_column(const ac_error *e);
/* The full diagnostic: "FILE:LINE:COL: error: MESSAGE\n" followed, when the
 * source text is known, by the source line and a caret line. Without a
 * position it is "error: MESSAGE\n". */
AC_API const char *ac_error_text(const ac_error *e);
AC_API void ac_error_destroy(ac_error *e);

/* Frees a string returned by the library (ac_module_print and friends). */
AC_API void ac_string_destroy(ac_context *ctx, char *s);

#ifdef __cplusplus
}
#endif
#endif
