/* tools/args.h: command-line values of arrayc-run.
 *
 * Converts between the text a user writes on the command line (or a .npy
 * file) and the flattened leaves (ac_datum) that ac_function_call takes and
 * returns. Argument text uses the language's literal syntax and typing
 * (docs/language.md sections 1 and 5), with the parameter's type as the
 * expected type; results are printed in the same syntax without suffixes.
 */
#ifndef ARRAYC_TOOLS_ARGS_H
#define ARRAYC_TOOLS_ARGS_H

#include "arrayc/arrayc.h"

#include <stdio.h>

/* Writes the spelling of a leaf type ("i32", "f32[]", "u8[,]") to buf. */
void val_type_name(ac_scalar type, unsigned rank, char *buf, size_t size);

/* Whether arrayc-run --cast converts values of type `from` to type `to`
 * (docs/tools.md, "Casting arguments"): integer to integer, integer to
 * float, f32 to f64 and f64 to f32; each value is checked when converted
 * (it must fit, an integer must be exact in the float, an f64 must not
 * overflow f32). Never bool to or from another type, never float to
 * integer. */
bool val_castable(ac_scalar from, ac_scalar to);

/* Parses `text` as a value of a leaf of the given type and rank (0 = a
 * scalar): a scalar literal, or an array literal nested exactly `rank` deep.
 * Unsuffixed literals take the leaf's type; suffixed ones must match it or,
 * with `cast`, be castable to it (val_castable); the value must fit. On
 * success fills *out (an array datum holds one reference, release it with
 * ac_datum_release) and returns true; otherwise writes a one-line reason to
 * msg and returns false. */
bool val_parse_literal(ac_context *ctx, const char *text, ac_scalar type, unsigned rank, bool cast,
                       ac_datum *out, char *msg, size_t msgsize);

/* Makes a leaf of the given type and rank from the contents of a .npy file;
 * the file's number of dimensions must match exactly (a scalar takes a 0-d
 * array) and so must its dtype, unless `cast` allows converting it
 * (val_castable; a value that does not convert is an error naming the
 * element and the value). Same contract as val_parse_literal. */
bool val_from_npy(ac_context *ctx, const unsigned char *buf, size_t len, ac_scalar type,
                  unsigned rank, bool cast, ac_datum *out, char *msg, size_t msgsize);

/* The same from a parsed file (npy.h's npy_info, its data in memory):
 * what val_from_npy does after parsing. */
struct npy_info;
bool val_from_npy_info(ac_context *ctx, const struct npy_info *info, ac_scalar type, unsigned rank,
                       bool cast, ac_datum *out, char *msg, size_t msgsize);

/* Stores a scalar datum as one host-order element of its type (the bytes
 * an array of that type would hold). */
void val_scalar_bytes(const ac_datum *d, unsigned char out[8]);

/* Prints a leaf in literal syntax without suffixes: true, -3, 2.5,
 * [[1, 2], [3, 4]]. Floats use the shortest text that reads back to the same
 * value in their own precision and always contain '.' or 'e' (or are inf,
 * -inf, nan). */
void val_print(FILE *f, const ac_datum *d);

/* Formats one float of type f32 (is_f32) or f64 as val_print does. buf needs
 * at least 32 bytes. */
void val_format_float(double v, bool is_f32, char *buf, size_t size);

#endif
