/* runtime/kcache.h: the on-disk kernel cache.
 *
 * Compiled GPU code (PTX) is stored under a directory, one file per entry,
 * keyed by a text the compiler builds (the lowered kernel's LLVM IR, the
 * target architecture and PTX version, the compiler's and LLVM's versions,
 * libdevice's hash). The directory is $ARRAYC_CACHE_DIR, else
 * $XDG_CACHE_HOME/arrayc, else $HOME/.cache/arrayc; ARRAYC_CACHE=0
 * disables the cache. It is created with mode 0700 (and parents as needed);
 * an existing directory is used as it is.
 *
 * An entry file is named by a 128-bit hash of the key (hex) and holds a
 * header (magic "ARRAYCK1", lengths), the key itself, the value and a
 * checksum over all of it. A read verifies everything and compares the
 * stored key with the asked one; anything wrong (truncated, corrupt, another
 * key) is a miss, and the bad file is removed so the entry is rewritten.
 * Writes go to a temporary file in the same directory, which is then
 * renamed over the entry: readers never see a partial file, and concurrent
 * writers of one key leave one complete entry. Errors of the cache never
 * fail a compile: a cache that cannot be read or written is a miss.
 */
#ifndef ARRAYC_RUNTIME_KCACHE_H
#define ARRAYC_RUNTIME_KCACHE_H

#include "arrayc/arrayc.h"

#include <stddef.h>

/* The cache directory (malloc'd through ctx: ac_free), or NULL when the
 * cache is disabled or no directory can be named. Does not create it. */
char *rt_kcache_dir(ac_context *ctx);
/* Looks key up. true and *val (ac_alloc'd, NUL-terminated after vallen
 * bytes) on a hit. */
bool rt_kcache_get(ac_context *ctx, const void *key, size_t keylen, void **val, size_t *vallen);
/* Stores key -> val (creating the directory). Returns false (and changes
 * nothing visible) when it could not. */
bool rt_kcache_put(ac_context *ctx, const void *key, size_t keylen, const void *val,
                   size_t vallen);

#endif
