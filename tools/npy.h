/* tools/npy.h: reading and writing NumPy .npy files for arrayc-run.
 *
 * The .npy format (numpy.lib.format) is a magic string, a version, a header
 * that is a Python dict literal {'descr': ..., 'fortran_order': ...,
 * 'shape': (...)} and the raw elements. arrayc-run reads arguments from such
 * files and writes results to them, so that programs can be fed from and
 * checked against NumPy without a conversion step.
 *
 * Reading is strict because the input is untrusted: every malformed file
 * gives a message, never a crash or an out-of-bounds read. Little-endian
 * files of the eleven arrayc scalar types are accepted, in C or Fortran
 * order (npy_copy_row_major gives row-major elements either way); a file
 * with another dtype still parses (descr is kept for the caller's message)
 * but has known == false.
 */
#ifndef ARRAYC_TOOLS_NPY_H
#define ARRAYC_TOOLS_NPY_H

#include "arrayc/core.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* NumPy allows at most 64 dimensions; so do we. */
#define NPY_MAX_RANK 64

typedef struct npy_info {
  char descr[32];  /* the dtype string as written, e.g. "<f8" (truncated if longer) */
  bool known;      /* descr is one of the accepted spellings of an arrayc type */
  ac_scalar type;  /* valid when known */
  unsigned rank;   /* 0 for a 0-d array (a scalar) */
  int64_t extents[NPY_MAX_RANK];
  int64_t count;   /* number of elements (product of extents) */
  const unsigned char *data; /* points into the parsed buffer; little-endian elements */
  size_t nbytes;             /* count * element size when known */
  bool fortran;              /* the elements are in column-major order (two extents above 1) */
} npy_info;

/* Parses the .npy file held in buf[0..len). On success fills *out (whose
 * data borrows buf) and returns true. On failure writes a one-line reason
 * ("bad magic string", "header is not a dict", ...) to msg and returns false.
 * When the dtype is not an accepted arrayc type the header is still
 * validated, out->known is false, and the element data is not checked. */
bool npy_parse(const unsigned char *buf, size_t len, npy_info *out, char *msg, size_t msgsize);

/* The header alone: buf[0..len) holds at least the magic string, the
 * header length and the header (a prefix of the file); fills *out as
 * npy_parse does (out->nbytes too, for a known dtype) but checks no
 * element, and sets *data_at to the file offset of the first element.
 * out->data points there, within buf only when buf holds the data. How
 * arrayc-run --distributed reads one block of rows per rank. */
bool npy_parse_header(const unsigned char *buf, size_t len, npy_info *out, size_t *data_at,
                      char *msg, size_t msgsize);

/* Copies n little-endian elements of esize bytes from a file buffer (or to
 * one) into host order: a plain copy on little-endian hosts, a byte swap per
 * element on big-endian ones. The conversion is its own inverse. */
void npy_copy_elements(void *dst, const void *src, size_t n, size_t esize);

/* The elements of a parsed file of known type (in->count of them) into
 * dst in row-major order and host byte order: a copy (npy_copy_elements)
 * for C order, a transposition for Fortran order. */
void npy_copy_row_major(const npy_info *in, void *dst);

/* The canonical descr NumPy writes for a scalar type ("<f4", "|b1"). */
const char *npy_descr(ac_scalar type);

/* Writes a version 1.0 .npy file of `rank` dimensions (0 = a 0-d array) with
 * the given extents and row-major host elements to `path`, through a
 * temporary file renamed into place so that a failed write leaves no partial
 * file. Returns false with a reason in msg on failure. */
bool npy_write(const char *path, ac_scalar type, unsigned rank, const int64_t *extents,
               const void *data, char *msg, size_t msgsize);

#endif
