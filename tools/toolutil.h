/* tools/toolutil.h: small helpers shared by the command-line tools. */
#ifndef ARRAYC_TOOLUTIL_H
#define ARRAYC_TOOLUTIL_H

/* The most bytes a tool reads from an input that is not a regular file (a
 * pipe, a device, standard input from either): docs/tools.md. A regular
 * file is read whole. */
#define TOOL_MAX_INPUT ((size_t)256 << 20)

#include "arrayc/arrayc.h"

#include <stdio.h>

/* Reads a whole file ("-" = standard input) into a malloc'd buffer. Returns
 * NULL and prints "PROG: cannot read FILE: reason" on failure. */
char *tool_read_file(const char *prog, const char *path, size_t *len);

/* Parses FILE (or stdin) into a module; prints the diagnostic on failure. */
ac_module *tool_load_module(const char *prog, ac_context *ctx, const char *path);

/* Formats a message into msg[0..msgsize) and returns false: the error
 * convention of the argument and .npy readers. */
bool tool_fail(char *msg, size_t msgsize, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Prints an error's full text to stderr. */
void tool_print_error(const ac_error *e);

/* What tool_emit writes for a compiled function. */
typedef enum tool_emit_kind { TOOL_EMIT_PLAN, TOOL_EMIT_LLVM } tool_emit_kind;

/* Compiles function `fn` of m (every function with a body when fn is NULL)
 * on backend `be` (CPU, SIMT_EMU or GPU) after the optimisation pipeline
 * `passes` (ac_runtime_set_passes; NULL: the runtime's default) and writes
 * its kernel plan or its optimised LLVM IR to out, functions separated by a
 * blank line. Prints diagnostics to stderr and returns false on failure. */
bool tool_emit(const char *prog, ac_module *m, const char *fn, tool_emit_kind kind, ac_backend be,
               const char *passes, FILE *out);
/* True if m has a function `name`; otherwise prints "PROG: no function
 * 'NAME' in the module (did you mean 'X'?); it defines A, B" and returns
 * false. */
bool tool_has_function(const char *prog, const ac_module *m, const char *name);
/* Calls fn(m, index, name, ud) for function `name` of m, or for every
 * function with a body when name is NULL; false (with a message) when
 * there is no such function or fn returns false. */
bool tool_each_function(const char *prog, ac_module *m, const char *name,
                        bool (*fn)(ac_module *m, size_t index, const char *name, void *ud),
                        void *ud);

/* Unless quiet, prints the context's warnings (core.h's
 * ac_context_set_warning_handler) to stderr as "FILE:LINE:COL: warning:
 * MESSAGE". */
void tool_warnings(ac_context *ctx, bool quiet);

#endif
