/* arrayc/module.h: modules, the text format, verification and printing.
 *
 * A module is a set of named top-level functions in arrayc's typed IR. It is
 * made by parsing text (ac_module_parse) or with the embedding API
 * (arrayc/builder.h). A module owns all of its IR in one arena; destroying it
 * frees everything at once.
 */
#ifndef ARRAYC_MODULE_H
#define ARRAYC_MODULE_H

#include "arrayc/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ac_module ac_module;

/* Parses and verifies `len` bytes of program text. `filename` names the text
 * in diagnostics ("FILE:LINE:COL: error: ..."). On success stores a new module
 * in *out (free with ac_module_destroy); on failure returns AC_ERR_SYNTAX or
 * AC_ERR_TYPE and, if err is not NULL, a diagnostic with the source line. */
AC_API ac_status ac_module_parse(ac_context *ctx, const char *filename, const char *text,
                                 size_t len, ac_module **out, ac_error **err);

/* Creates an empty module (for the builder). Free with ac_module_destroy. */
AC_API ac_module *ac_module_create(ac_context *ctx, const char *name);
AC_API void ac_module_destroy(ac_module *m);
AC_API ac_context *ac_module_context(const ac_module *m);

/* Re-runs scoping and type checking on every function. Passes and the builder
 * call it; it is cheap. */
AC_API ac_status ac_module_verify(ac_module *m, ac_error **err);

/* Runs an optimisation pipeline (as ac_runtime_set_passes takes it, e.g.
 * "simplify,cse" or "O2") over every function of m, in place: m's functions
 * then hold the transformed program, which prints, verifies and runs like
 * any other (docs/passes.md). m must be verified. On failure the error names
 * the pass and m holds a valid program, possibly partly transformed. */
AC_API ac_status ac_module_run_passes(ac_module *m, const char *passes, ac_error **err);

/* Canonical text of the module: parsing it gives a module that prints the
 * same text. Returns a string to free with ac_string_destroy, or NULL with
 * *err set. */
AC_API char *ac_module_print(ac_module *m, ac_error **err);

/* Binds extern function `name` of m (`extern fn`, docs/language.md §3.3) to
 * the C function at addr, whose real type must be the declared one in C
 * types: bool as _Bool, i8..i64 as int8_t..int64_t, u8..u64 as
 * uint8_t..uint64_t, f32 as float, f64 as double; cast it to void (*)(void)
 * to pass it. A later binding replaces an earlier one for the functions
 * created after it; a function created before may go on calling the old
 * address (compiled backends do, the interpreter does not), so bind before
 * creating functions. An extern left unbound is looked up by name in the
 * process (dlsym) when a function that uses it is created.
 *
 * The C function must be pure as far as its result goes (the same arguments
 * give the same result), and safe to call from several threads at once:
 * backends may call it any number of times (including not at all when the
 * result is not needed), in any order, from any thread of the CPU backend's
 * pool. It must not call back into arrayc functions.
 *
 * Returns AC_ERR_INVALID if m has no extern function of that name (a
 * function with a body is not one) or addr is NULL. Like every change to a
 * module, it must not run while other threads call functions of m. */
AC_API ac_status ac_module_bind_extern(ac_module *m, const char *name, void (*addr)(void),
                                       ac_error **err);

/* Functions of the module, in definition order. Names are borrowed. */
AC_API size_t ac_module_num_functions(const ac_module *m);
AC_API const char *ac_module_function_name(const ac_module *m, size_t i);
/* True if function i is an extern function (`extern fn`: implemented by the
 * host, so it cannot be made an ac_function itself); false for a function
 * with a body or i out of range. */
AC_API bool ac_module_function_is_extern(const ac_module *m, size_t i);

#ifdef __cplusplus
}
#endif
#endif
