/* runtime/bundle.h: bundles, what ahead-of-time output carries besides
 * kernels.
 *
 * `arrayc` compiles the functions of a module ahead of time into one code
 * file (a host object or shared library for the CPU, a PTX file for the
 * GPU) and a C header (docs/runtime.md, "Ahead of time"). The code file
 * also carries the module's BUNDLE: the text below, naming the compiler
 * that made it, the target, and for each function its flattened signature
 * and its kernel plan (runtime/plan.h's text form). In a host object it is
 * the read-only symbol PREFIX_arrayc_bundle (with PREFIX_arrayc_bundle_size
 * and PREFIX_arrayc_bundle_hash, its rt_bundle_hash: ac_library_open checks
 * it before it parses anything); in a PTX file it is a block of `//`
 * comment lines before the PTX, which the driver ignores:
 *
 *   //arrayc-bundle LEN HASH          LEN bytes of bundle text follow, each
 *   //LINE                            line behind "//"; HASH = rt_bundle_hash
 *   ...
 *   //arrayc-bundle-end
 *
 * The text:
 *   arrayc-bundle 2                       format version (RT_BUNDLE_VERSION)
 *   compiler "0.1.0 g1234abc"             ARRAYC_BUILD_ID of the arrayc that wrote it
 *   target cpu "x86_64-pc-linux-gnu" "znver3"   or: target gpu sm_80
 *   source "bs.ac"                        the module's file name (error positions)
 *   prefix bs                             the C prefix of the header and kernels
 *   source-text 480                       optional: 480 bytes of the module's source
 *                                         text and a newline (runtime errors then
 *                                         show the line and a caret, as the
 *                                         interpreter's do)
 *   function blackscholes                 then its declared parameters:
 *   param "S" 1 "f32[]"                     name, number of leaves, type as the
 *   param "p" 2 "(f32, i32)"                language spells it (format 2 on)
 *   returns "f32[]"                         the result's type
 *                                         then its leaves, one per line:
 *   arg "S" f32[]                           parameter leaves, in order
 *   result "0" f32[]                        result leaves, in order
 *   plan 812                              then 812 bytes of plan text and a newline
 *   ...                                   (more functions)
 *   end
 * Names are bare ([A-Za-z_][A-Za-z0-9_.]*) or quoted as the plan text does.
 *
 * The runtime accepts a bundle only from the compiler it was built with
 * (the compiler line equals its own ARRAYC_BUILD_ID): plans and kernels
 * follow conventions (rt.h, gpu.h) that may change between versions, and a
 * file another compiler wrote is reported as stale, never run. The header
 * records the HASH of the bundle it was generated with, so a code file that
 * does not belong to the header (written by another arrayc run) is reported
 * too.
 */
#ifndef ARRAYC_RUNTIME_BUNDLE_H
#define ARRAYC_RUNTIME_BUNDLE_H

#include "runtime/function.h"

#define RT_BUNDLE_VERSION 2

typedef struct rt_bundle_fn {
  char *name;
  uint32_t nparams;
  rt_param *params; /* the declared parameters over args */
  char *result_type;
  uint32_t nargs, nres;
  rt_leaf *args, *res;
  pl_plan *plan;
} rt_bundle_fn;

typedef struct rt_bundle {
  char *compiler; /* the build id of the compiler that wrote it */
  bool gpu;
  unsigned sm;    /* gpu */
  char *triple;   /* cpu */
  char *cpu;      /* cpu: the LLVM CPU name the code was made for */
  char *source;   /* may be "" */
  char *prefix;
  char *source_text; /* the module's source (NULL: not carried) */
  size_t source_len;
  uint32_t nfns;
  rt_bundle_fn *fns;
} rt_bundle;

/* The runtime's own compiler identity (ARRAYC_BUILD_ID). */
const char *rt_build_id(void);

/* 64-bit FNV-1a of the bytes: the checksum of a bundle (a .ptx block's
 * HASH, a shared object's PREFIX_arrayc_bundle_hash) and the header's check
 * that a code file is the one it was generated with. */
uint64_t rt_bundle_hash(const void *data, size_t len);

/* The text of b (ac_alloc'd through ctx, NUL-terminated, *len bytes). The
 * plans must be finished. */
ac_status rt_bundle_print(ac_context *ctx, const rt_bundle *b, char **out, size_t *len,
                          ac_error **err);

/* Parses bundle text. `where` names the file it came from, for messages
 * ("bs.ptx: bundle line 4: ..."). Checks the format version and every plan
 * (pl_parse), and that each function's leaves agree with its plan's params
 * and results; it does not check the compiler (rt_bundle_check does). */
ac_status rt_bundle_parse(ac_context *ctx, const char *where, const char *text, size_t len,
                          rt_bundle **out, ac_error **err);

/* AC_OK when b was written by this runtime's compiler, else AC_ERR_INVALID
 * with a message saying which compiler wrote `where` and what to do. */
ac_status rt_bundle_check(ac_context *ctx, const char *where, const rt_bundle *b,
                          ac_error **err);

void rt_bundle_free(ac_context *ctx, rt_bundle *b);

/* Finds the bundle block at the start of PTX text (as described above):
 * *text (ac_alloc'd, NUL-terminated) gets the bundle text without the "//"
 * prefixes, *len its length and *hash the block's HASH, which is checked.
 * AC_ERR_INVALID naming `where` when the text has no well-formed block. */
ac_status rt_ptx_bundle_text(ac_context *ctx, const char *where, const char *ptx, size_t ptxlen,
                             char **text, size_t *len, uint64_t *hash, ac_error **err);

/* Appends the PTX comment block for bundle text (len bytes) to *out
 * (ac_alloc'd, NUL-terminated) followed by the PTX text. */
ac_status rt_ptx_with_bundle(ac_context *ctx, const char *bundle, size_t len, const char *ptx,
                             char **out, size_t *outlen, ac_error **err);

#endif
