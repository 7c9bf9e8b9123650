/* runtime/dlfile.h: opening a shared object named by a file path.
 *
 * ac_library_open and arrayc-run --load take a path as fopen does: a name
 * without '/' is the file in the current directory, never a search of the
 * library path (dlopen's rule). The file is checked to be a complete ELF
 * shared object of this machine (its headers, segments and sections lie
 * within the file) before dlopen maps it: a truncated file would otherwise
 * fault (SIGBUS) inside the loader. docs/runtime.md §11.
 */
#ifndef ARRAYC_RUNTIME_DLFILE_H
#define ARRAYC_RUNTIME_DLFILE_H

#include "arrayc/core.h"

#include <stddef.h>

/* dlopen(path, flags) after the checks above. On failure returns
 * AC_ERR_IO (the file cannot be opened or read, or the loader refused it)
 * or AC_ERR_INVALID (not a complete ELF shared object for this machine),
 * with a one-line message naming the path in why (NUL-terminated, cut to
 * whysize). */
ac_status rt_dlopen_file(const char *path, int flags, void **out, char *why, size_t whysize);

/* The ELF check alone, on an open file descriptor of a regular file of
 * `size` bytes: true if complete, else false with the reason (without the
 * path) in why. */
bool rt_elf_complete(int fd, uint64_t size, char *why, size_t whysize);

#endif
