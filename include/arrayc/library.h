/* arrayc/library.h: code compiled ahead of time (libarrayc_rt).
 *
 * `arrayc FILE.ac -o PREFIX` compiles every function of FILE ahead of time
 * into one code file and a C header (docs/runtime.md, "Ahead of time"):
 *   --target=cpu   PREFIX.o (or, with --shared, PREFIX.so): the kernels for
 *                  the host CPU, and the module's bundle (its plans and
 *                  signatures) as the symbol PREFIX_arrayc_bundle;
 *   --target=gpu   (the default) PREFIX.ptx: the kernels in PTX, the
 *                  bundle in comment lines at its start;
 *   and PREFIX.h:  one typed C function per function of the module
 *                  (PREFIX_open, PREFIX_close, PREFIX_NAME), written on top
 *                  of this header.
 * A program includes PREFIX.h and links libarrayc_rt (and, on the CPU,
 * PREFIX.o). libarrayc_rt needs neither LLVM nor the CUDA toolkit: it
 * interprets the plans, runs CPU kernels on its thread pool and loads PTX
 * through the CUDA driver, which it opens with dlopen.
 *
 * Programs that have no generated header (Python through ctypes, another
 * language's FFI, a plug-in host) open the code file directly with
 * ac_library_open and look functions up by name; every ac_function call
 * (ac_function_call, ac_function_pointer) works on them.
 *
 * A library holds the loaded code (the dlopen'd object, the CUDA module),
 * the thread pool or the device, and the plans. It is reference counted:
 * ac_library_close drops the opener's reference and every function taken
 * from it holds one, so it lives until its last function is destroyed.
 * Calls may run on several threads at once (as runtime.h says); opening,
 * closing and taking functions follow the context's one-thread rule.
 *
 * Files from another compiler are refused: the runtime accepts ahead-of-
 * time output only from the arrayc it was built with (same release and
 * commit: ac_library_compiler_id), and a generated header also checks that
 * the code file is the one written with it. Either mismatch is an error
 * saying "stale" and which compiler made what; a header for one target
 * (GPU or CPU) with the code file of the other is an error naming both
 * targets.
 */
#ifndef ARRAYC_LIBRARY_H
#define ARRAYC_LIBRARY_H

#include "arrayc/core.h"
#include "arrayc/runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ac_library ac_library;

/* A kernel of a host object linked into the program (generated headers
 * list them): the symbol the plan names and its address. */
typedef struct ac_library_kernel {
  const char *name;
  void (*fn)(void);
} ac_library_kernel;

/* What to load (ac_library_load). Zero it, then set what applies. */
typedef struct ac_library_desc {
  /* The code file: a .ptx file (GPU), or a shared object (CPU) to dlopen.
   * NULL when the kernels are linked into the program (CPU: bundle and
   * kernels below). */
  const char *path;
  /* The C prefix the code was generated with (arrayc -o PREFIX): a shared
   * object's bundle is the symbol PREFIX_arrayc_bundle. NULL: the file's
   * name up to its first '.', without a leading "lib". */
  const char *prefix;
  /* A host object linked into the program: its bundle (the symbol
   * PREFIX_arrayc_bundle, bundle_len bytes) and kernels. */
  const char *bundle;
  size_t bundle_len;
  const ac_library_kernel *kernels;
  size_t num_kernels;
  /* The bundle hash a generated header was written with (0: do not check);
   * a code file with another bundle is refused as stale. */
  uint64_t expect_hash;
  /* CPU: worker threads (0: all cores, or ARRAYC_NUM_THREADS). GPU: the
   * device ordinal is ARRAYC_GPU_DEVICE, else 0. */
  unsigned num_threads;
  /* The target a generated header was written for: AC_BACKEND_CPU or
   * AC_BACKEND_GPU (AC_BACKEND_AUTO, 0: do not check). Code for the other
   * target is refused with a message naming both targets, and so is a
   * linked bundle (a host object linked into the program) with a path when
   * the header is the GPU's. */
  ac_backend expect_backend;
} ac_library_desc;

/* Loads ahead-of-time code as desc says; desc_size is sizeof(ac_library_desc)
 * as the caller knows it (fields added later stay zero for old callers).
 * The backend is the bundle's target: AC_BACKEND_CPU or AC_BACKEND_GPU (a
 * GPU bundle without a usable GPU is AC_ERR_UNSUPPORTED "no GPU: ...").
 * Errors: AC_ERR_IO (the file cannot be read or opened), AC_ERR_INVALID
 * (not arrayc output, damaged, stale, a kernel missing), AC_ERR_NOMEM.
 * Free with ac_library_close. */
AC_API ac_status ac_library_load(ac_context *ctx, const ac_library_desc *desc, size_t desc_size,
                                 ac_library **out, ac_error **err);

/* ac_library_load of a code file alone (path; prefix as in the desc, may
 * be NULL): the call for programs without a generated header. The path is
 * taken as fopen takes it: "libfoo.so" is the file in the current
 * directory, not a search of the library path. A shared object must be a
 * complete ELF object of this machine (AC_ERR_INVALID otherwise: damaged,
 * truncated). */
AC_API ac_status ac_library_open(ac_context *ctx, const char *path, const char *prefix,
                                 ac_library **out, ac_error **err);

/* Drops the opener's reference (NULL is ignored). */
AC_API void ac_library_close(ac_library *lib);

AC_API ac_backend ac_library_backend(const ac_library *lib);
AC_API size_t ac_library_num_functions(const ac_library *lib);
/* Name of function i (borrowed), or NULL when i is out of range. */
AC_API const char *ac_library_function_name(const ac_library *lib, size_t i);

/* Function `name` of the library, ready for calls (runtime.h): free it with
 * ac_function_destroy. AC_ERR_INVALID when there is no such function. */
AC_API ac_status ac_library_function(ac_library *lib, const char *name, ac_function **out,
                                     ac_error **err);

/* The identity of the compiler this runtime goes with ("0.1.0 g1a2b3c4"):
 * ahead-of-time files must have been written by it. */
AC_API const char *ac_library_compiler_id(void);

#ifdef __cplusplus
}
#endif

#endif
