/* tools/npy.c: the NumPy .npy reader and writer of arrayc-run.
 *
 * Format (numpy.lib.format): "\x93NUMPY", major and minor version bytes, the
 * header length (u16 little-endian in version 1.0, u32 in 2.0 and 3.0), then
 * the header: an ASCII (3.0: UTF-8) Python dict literal such as
 *     {'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }
 * padded with spaces and ended by '\n', then the elements in C order.
 *
 * The reader parses that dict with a small hand-written scanner rather than
 * anything resembling eval: it accepts exactly the three keys, string values
 * in either quote style, True/False and tuples of non-negative integers (with
 * Python 2's optional 'L'), and rejects everything else with a message. Every
 * length is checked against the buffer before it is used and every product
 * of extents against overflow, because the files are untrusted input.
 *
 * The writer always produces version 1.0 with the header padded so that the
 * data starts at a multiple of 64 bytes, as NumPy does.
 */
#include "npy.h"
#include "toolutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Canonical spellings NumPy writes, indexed by ac_scalar. */
static const char *const canonical_descr[AC_NUM_SCALARS] = {
    "|b1", "|i1", "<i2", "<i4", "<i8", "|u1", "<u2", "<u4", "<u8", "<f4", "<f8"};

const char *npy_descr(ac_scalar type) {
  return (unsigned)type < AC_NUM_SCALARS ? canonical_descr[type] : "?";
}

/* The byte order of element data matters only on big-endian hosts, where
 * elements are swapped on the way in and out. */
static bool host_is_little_endian(void) {
  const uint16_t one = 1;
  unsigned char b;
  memcpy(&b, &one, 1);
  return b == 1;
}

/* Maps a descr to an arrayc type. One-byte types have no byte order, so any
 * order character is accepted for them; wider types must be little-endian. */
static bool descr_type(const char *d, ac_scalar *out) {
  if (strlen(d) != 3)
    return false;
  for (int t = 0; t < AC_NUM_SCALARS; t++) {
    const char *c = canonical_descr[t];
    if (strcmp(d + 1, c + 1) != 0)
      continue;
    bool ok = c[0] == '|' ? strchr("|<>=", d[0]) != NULL : d[0] == '<';
    if (ok && d[0] != 0) {
      *out = (ac_scalar)t;
      return true;
    }
  }
  return false;
}

/* ---- the header dict ---- */

typedef struct scan {
  const char *p, *end;
} scan;

static void skip_ws(scan *s) {
  while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
    s->p++;
}

static bool eat(scan *s, char c) {
  skip_ws(s);
  if (s->p < s->end && *s->p == c) {
    s->p++;
    return true;
  }
  return false;
}

/* A quoted string without escapes; stores at most cap-1 bytes (the caller
 * only needs short keys and dtype strings, longer ones are simply unknown). */
static bool scan_string(scan *s, char *out, size_t cap, char *msg, size_t msgsize) {
  skip_ws(s);
  if (s->p >= s->end || (*s->p != '\'' && *s->p != '"'))
    return tool_fail(msg, msgsize, "malformed header: expected a quoted string");
  char q = *s->p++;
  size_t n = 0;
  while (s->p < s->end && *s->p != q) {
    if (*s->p == '\\')
      return tool_fail(msg, msgsize, "malformed header: escapes in strings are not supported");
    if (n + 1 < cap)
      out[n++] = *s->p;
    s->p++;
  }
  if (s->p >= s->end)
    return tool_fail(msg, msgsize, "malformed header: unterminated string");
  s->p++;
  out[n] = 0;
  return true;
}

static bool scan_word(scan *s, const char *w) {
  skip_ws(s);
  size_t n = strlen(w);
  if ((size_t)(s->end - s->p) < n || memcmp(s->p, w, n) != 0)
    return false;
  const char *after = s->p + n;
  if (after < s->end && (after[0] == '_' || (after[0] >= 'a' && after[0] <= 'z') ||
                         (after[0] >= 'A' && after[0] <= 'Z') ||
                         (after[0] >= '0' && after[0] <= '9')))
    return false;
  s->p = after;
  return true;
}

/* A non-negative decimal integer (Python 2 headers may append 'L'). */
static bool scan_extent(scan *s, int64_t *out, char *msg, size_t msgsize) {
  skip_ws(s);
  if (s->p >= s->end || *s->p < '0' || *s->p > '9')
    return tool_fail(msg, msgsize, "malformed header: shape must be a tuple of non-negative integers");
  int64_t v = 0;
  while (s->p < s->end && *s->p >= '0' && *s->p <= '9') {
    int d = *s->p++ - '0';
    if (v > (INT64_MAX - d) / 10)
      return tool_fail(msg, msgsize, "malformed header: extent too large");
    v = v * 10 + d;
  }
  if (s->p < s->end && *s->p == 'L')
    s->p++;
  *out = v;
  return true;
}

static bool scan_shape(scan *s, npy_info *out, char *msg, size_t msgsize) {
  if (!eat(s, '('))
    return tool_fail(msg, msgsize, "malformed header: shape must be a tuple");
  out->rank = 0;
  if (eat(s, ')'))
    return true;
  for (;;) {
    if (out->rank == NPY_MAX_RANK)
      return tool_fail(msg, msgsize, "malformed header: more than %d dimensions", NPY_MAX_RANK);
    if (!scan_extent(s, &out->extents[out->rank], msg, msgsize))
      return false;
    out->rank++;
    bool comma = eat(s, ',');
    if (eat(s, ')')) {
      /* (3) is an integer in Python, not a tuple. */
      if (out->rank == 1 && !comma)
        return tool_fail(msg, msgsize, "malformed header: shape must be a tuple");
      return true;
    }
    if (!comma)
      return tool_fail(msg, msgsize, "malformed header: expected ',' or ')' in shape");
  }
}

static bool parse_header(scan *s, npy_info *out, bool *fortran, char *msg, size_t msgsize) {
  bool seen_descr = false, seen_fortran = false, seen_shape = false;
  if (!eat(s, '{'))
    return tool_fail(msg, msgsize, "malformed header: not a dict");
  while (!eat(s, '}')) {
    char key[32];
    if (!scan_string(s, key, sizeof key, msg, msgsize))
      return false;
    if (!eat(s, ':'))
      return tool_fail(msg, msgsize, "malformed header: expected ':' after '%s'", key);
    if (strcmp(key, "descr") == 0 && !seen_descr) {
      seen_descr = true;
      skip_ws(s);
      if (s->p < s->end && *s->p == '[')
        return tool_fail(msg, msgsize, "structured dtypes are not supported");
      if (!scan_string(s, out->descr, sizeof out->descr, msg, msgsize))
        return false;
    } else if (strcmp(key, "fortran_order") == 0 && !seen_fortran) {
      seen_fortran = true;
      if (scan_word(s, "True"))
        *fortran = true;
      else if (scan_word(s, "False"))
        *fortran = false;
      else
        return tool_fail(msg, msgsize, "malformed header: fortran_order must be True or False");
    } else if (strcmp(key, "shape") == 0 && !seen_shape) {
      seen_shape = true;
      if (!scan_shape(s, out, msg, msgsize))
        return false;
    } else {
      return tool_fail(msg, msgsize, "malformed header: unexpected or repeated key '%s'", key);
    }
    if (!eat(s, ',')) {
      if (!eat(s, '}'))
        return tool_fail(msg, msgsize, "malformed header: expected ',' or '}'");
      break;
    }
  }
  skip_ws(s);
  if (s->p != s->end)
    return tool_fail(msg, msgsize, "malformed header: text after the dict");
  if (!seen_descr || !seen_fortran || !seen_shape)
    return tool_fail(msg, msgsize, "malformed header: missing key '%s'",
                !seen_descr ? "descr" : !seen_fortran ? "fortran_order" : "shape");
  return true;
}

bool npy_parse_header(const unsigned char *buf, size_t len, npy_info *out, size_t *data_at,
                      char *msg, size_t msgsize) {
  memset(out, 0, sizeof *out);
  if (len < 10 || memcmp(buf, "\x93NUMPY", 6) != 0)
    return tool_fail(msg, msgsize, "not a .npy file (bad magic string)");
  unsigned major = buf[6], minor = buf[7];
  if (major < 1 || major > 3 || minor != 0)
    return tool_fail(msg, msgsize, "unsupported .npy version %u.%u (1.0, 2.0 and 3.0 are)", major,
                minor);
  size_t hstart, hlen;
  if (major == 1) {
    hstart = 10;
    hlen = (size_t)buf[8] | (size_t)buf[9] << 8;
  } else {
    if (len < 12)
      return tool_fail(msg, msgsize, "truncated .npy header");
    hstart = 12;
    hlen = (size_t)buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 | (size_t)buf[11] << 24;
  }
  if (hlen > len - hstart)
    return tool_fail(msg, msgsize, "truncated .npy header (%zu bytes announced, %zu present)", hlen,
                len - hstart);
  for (size_t i = 0; i < hlen; i++)
    if (buf[hstart + i] == 0)
      return tool_fail(msg, msgsize, "malformed header: NUL byte");
  scan s = {(const char *)buf + hstart, (const char *)buf + hstart + hlen};
  bool fortran = false;
  if (!parse_header(&s, out, &fortran, msg, msgsize))
    return false;

  out->count = 1;
  unsigned nonunit = 0;
  for (unsigned k = 0; k < out->rank; k++) {
    int64_t e = out->extents[k];
    if (e != 0 && out->count > INT64_MAX / e)
      return tool_fail(msg, msgsize, "malformed header: shape too large");
    out->count *= e;
    nonunit += e > 1;
  }
  /* Fortran order differs from C order only when two dimensions exceed 1 */
  out->fortran = fortran && nonunit > 1;
  out->known = descr_type(out->descr, &out->type);
  out->data = buf + hstart + hlen;
  *data_at = hstart + hlen;
  if (!out->known)
    return true;
  size_t esize = ac_scalar_size(out->type);
  if ((uint64_t)out->count > SIZE_MAX / esize)
    return tool_fail(msg, msgsize, "malformed header: shape too large");
  out->nbytes = (size_t)out->count * esize;
  return true;
}

bool npy_parse(const unsigned char *buf, size_t len, npy_info *out, char *msg, size_t msgsize) {
  size_t at = 0;
  if (!npy_parse_header(buf, len, out, &at, msg, msgsize))
    return false;
  size_t avail = len - at;
  if (!out->known)
    return true;
  if (avail != out->nbytes)
    return tool_fail(msg, msgsize, "the shape needs %zu bytes of data but the file has %zu",
                out->nbytes, avail);
  if (out->type == AC_BOOL)
    for (size_t i = 0; i < out->nbytes; i++)
      if (out->data[i] > 1)
        return tool_fail(msg, msgsize, "bool element %zu is %u, not 0 or 1", i, out->data[i]);
  return true;
}

/* Copies n elements of size esize, reversing each element's bytes when the
 * host is big-endian (the file is always little-endian). */
void npy_copy_elements(void *dst, const void *src, size_t n, size_t esize) {
  if (host_is_little_endian() || esize == 1) {
    if (n)
      memcpy(dst, src, n * esize);
    return;
  }
  unsigned char *d = dst;
  const unsigned char *s = src;
  for (size_t i = 0; i < n; i++)
    for (size_t b = 0; b < esize; b++)
      d[i * esize + b] = s[i * esize + esize - 1 - b];
}

void npy_copy_row_major(const npy_info *in, void *dst) {
  size_t esize = ac_scalar_size(in->type);
  if (!in->fortran) {
    npy_copy_elements(dst, in->data, (size_t)in->count, esize);
    return;
  }
  /* element x (row-major index) is at sum_k x_k * stride_k in the file,
   * stride_0 = 1 and stride_k = stride_{k-1} * extent_{k-1}: walk x in
   * row-major order, keeping its file offset */
  int64_t x[NPY_MAX_RANK] = {0}, stride[NPY_MAX_RANK];
  int64_t s = 1, off = 0;
  for (unsigned k = 0; k < in->rank; k++) {
    stride[k] = s;
    s *= in->extents[k];
  }
  unsigned char *d = dst;
  for (int64_t i = 0; i < in->count; i++) {
    npy_copy_elements(d + (size_t)i * esize, in->data + (size_t)off * esize, 1, esize);
    for (unsigned k = in->rank; k-- > 0;) { /* the next x, last dimension fastest */
      off += stride[k];
      if (++x[k] < in->extents[k])
        break;
      off -= stride[k] * x[k];
      x[k] = 0;
    }
  }
}

bool npy_write(const char *path, ac_scalar type, unsigned rank, const int64_t *extents,
               const void *data, char *msg, size_t msgsize) {
  if ((unsigned)type >= AC_NUM_SCALARS || rank > NPY_MAX_RANK)
    return tool_fail(msg, msgsize, "cannot write %s: invalid type or rank", path);
  /* Header: the dict, then spaces and '\n' so that 10 + length is a
   * multiple of 64. */
  char hdr[64 * 24 + 128];
  int n = snprintf(hdr, sizeof hdr, "{'descr': '%s', 'fortran_order': False, 'shape': (",
                   canonical_descr[type]);
  int64_t count = 1;
  for (unsigned k = 0; k < rank; k++) {
    n += snprintf(hdr + n, sizeof hdr - (size_t)n, k ? ", %lld" : "%lld", (long long)extents[k]);
    count *= extents[k];
  }
  n += snprintf(hdr + n, sizeof hdr - (size_t)n, rank == 1 ? ",), }" : "), }");
  size_t total = (size_t)n + 1;
  size_t padded = (10 + total + 63) / 64 * 64 - 10;
  memset(hdr + n, ' ', padded - (size_t)n - 1);
  hdr[padded - 1] = '\n';

  size_t tlen = strlen(path) + 5;
  char *tmp = malloc(tlen);
  if (!tmp)
    return tool_fail(msg, msgsize, "cannot write %s: out of memory", path);
  snprintf(tmp, tlen, "%s.tmp", path);
  FILE *f = fopen(tmp, "wb");
  if (!f) {
    tool_fail(msg, msgsize, "cannot write %s: %s", tmp, strerror(errno));
    free(tmp);
    return false;
  }
  unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                           (unsigned char)(padded & 0xff), (unsigned char)(padded >> 8)};
  bool ok = fwrite(pre, 1, sizeof pre, f) == sizeof pre && fwrite(hdr, 1, padded, f) == padded;
  size_t esize = ac_scalar_size(type);
  const unsigned char *src = data;
  /* Elements go out in chunks so that big-endian hosts can swap them. */
  unsigned char chunk[4096];
  size_t per = sizeof chunk / esize;
  for (int64_t i = 0; ok && i < count; i += (int64_t)per) {
    size_t k = (size_t)(count - i) < per ? (size_t)(count - i) : per;
    npy_copy_elements(chunk, src + (size_t)i * esize, k, esize);
    ok = fwrite(chunk, esize, k, f) == k;
  }
  int saved = errno;
  if (fclose(f) != 0 && ok) {
    ok = false;
    saved = errno;
  }
  if (ok && rename(tmp, path) != 0) {
    ok = false;
    saved = errno;
  }
  if (!ok) {
    remove(tmp);
    tool_fail(msg, msgsize, "cannot write %s: %s", path, strerror(saved));
  }
  free(tmp);
  return ok;
}
