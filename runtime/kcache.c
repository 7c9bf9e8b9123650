/* runtime/kcache.c: the on-disk kernel cache (runtime/kcache.h).
 *
 * Accelerate keeps compiled kernels in a persistent cache keyed by a hash
 * of the kernel; so do Numba, Triton and CUDA.jl. Ours is one file per
 * entry in a directory of the user's, named by a 128-bit hash of the key
 * (MurmurHash3 x64-128, Appleby's public-domain function, as 32 hex
 * digits). The hash only spreads entries over names: the entry stores its
 * whole key, and a read compares it, so two keys with one name (never seen
 * in practice at 128 bits) make misses, not wrong kernels.
 *
 * Entry file (integers little-endian, whatever the host, so that a home
 * directory shared by machines of both byte orders stays valid):
 *   0  "ARRAYCK1"            magic
 *   8  u32 version (1), u32 0
 *   16 u64 key length, u64 value length
 *   32 key bytes, then value bytes
 *   .. u64 checksum: MurmurHash3 (another seed) of everything before it.
 * A read checks the file's size against the lengths, the magic, version,
 * checksum and key; anything wrong is a miss, and the file is removed (if
 * it is still the file we read: a writer may have renamed a good entry over
 * it since) so that the next put writes it again.
 *
 * A put writes the whole entry to a fresh temporary file in the cache
 * directory (mkstemp, mode 0600, name starting with ".tmp-" so it can never
 * be taken for an entry) and renames it over the entry's name. rename is
 * atomic within a file system: readers see the old file or the new one,
 * never a part, and of concurrent writers of one key the last rename wins
 * with a complete entry. We do not fsync: a crash can leave an entry empty
 * or partly written on disk, but the checksum catches that on the next read
 * (a miss, then a rewrite), and an fsync per compiled module would cost
 * milliseconds on many file systems. Temporary files of a process killed
 * between mkstemp and rename stay behind (harmless; never read).
 *
 * Directories: the cache directory and any missing parents are created
 * with mode 0700 (the XDG base-directory rule for $XDG_CACHE_HOME, which
 * we apply to every component we create, chmod'ed to exactly 0700 whatever
 * the umask); directories that exist are used as they are.
 *
 * Nothing here fails the caller or prints: every problem is a miss or a
 * put that returns false.
 */
#define _POSIX_C_SOURCE 200809L /* mkstemp, O_CLOEXEC, O_NOFOLLOW */

#include "runtime/kcache.h"

#include "ir.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum {
  KC_VERSION = 1,
  KC_HEADER = 32,           /* magic, version, lengths */
  KC_FIXED = KC_HEADER + 8, /* ... and the checksum */
  KC_NAME = 32,             /* hex digits of the file name */
};
static const char kc_magic[8] = {'A', 'R', 'R', 'A', 'Y', 'C', 'K', '1'};
#define KC_SEED_NAME UINT64_C(0)
#define KC_SEED_SUM UINT64_C(0x9e3779b97f4a7c15)

/* ---- MurmurHash3 x64-128 (with a 64-bit seed for both lanes) ---- */

static uint64_t kc_rotl(uint64_t x, int r) {
  return (x << r) | (x >> (64 - r));
}

static uint64_t kc_fmix(uint64_t k) {
  k ^= k >> 33;
  k *= UINT64_C(0xff51afd7ed558ccd);
  k ^= k >> 33;
  k *= UINT64_C(0xc4ceb9fe1a85ec53);
  k ^= k >> 33;
  return k;
}

/* The little-endian u64 at p (n <= 8 bytes, missing ones zero). */
static uint64_t kc_le(const unsigned char *p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++)
    v |= (uint64_t)p[i] << (8 * i);
  return v;
}

static void kc_put_le(unsigned char *p, uint64_t v, size_t n) {
  for (size_t i = 0; i < n; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}

static void kc_hash(const void *data, size_t len, uint64_t seed, uint64_t out[2]) {
  const uint64_t c1 = UINT64_C(0x87c37b91114253d5), c2 = UINT64_C(0x4cf5ad432745937f);
  const unsigned char *p = data;
  uint64_t h1 = seed, h2 = seed;
  size_t nblocks = len / 16;
  for (size_t i = 0; i < nblocks; i++, p += 16) {
    uint64_t k1 = kc_le(p, 8), k2 = kc_le(p + 8, 8);
    k1 *= c1;
    k1 = kc_rotl(k1, 31);
    k1 *= c2;
    h1 ^= k1;
    h1 = kc_rotl(h1, 27);
    h1 += h2;
    h1 = h1 * 5 + 0x52dce729;
    k2 *= c2;
    k2 = kc_rotl(k2, 33);
    k2 *= c1;
    h2 ^= k2;
    h2 = kc_rotl(h2, 31);
    h2 += h1;
    h2 = h2 * 5 + 0x38495ab5;
  }
  /* The tail: bytes 8..15 into k2, 0..7 into k1, as the reference does. */
  size_t rest = len & 15;
  if (rest > 8) {
    uint64_t k2 = kc_le(p + 8, rest - 8);
    k2 *= c2;
    k2 = kc_rotl(k2, 33);
    k2 *= c1;
    h2 ^= k2;
  }
  if (rest > 0) {
    uint64_t k1 = kc_le(p, rest > 8 ? 8 : rest);
    k1 *= c1;
    k1 = kc_rotl(k1, 31);
    k1 *= c2;
    h1 ^= k1;
  }
  h1 ^= (uint64_t)len;
  h2 ^= (uint64_t)len;
  h1 += h2;
  h2 += h1;
  h1 = kc_fmix(h1);
  h2 = kc_fmix(h2);
  h1 += h2;
  h2 += h1;
  out[0] = h1;
  out[1] = h2;
}

static uint64_t kc_checksum(const unsigned char *data, size_t len) {
  uint64_t h[2];
  kc_hash(data, len, KC_SEED_SUM, h);
  return h[0];
}

/* ---- paths ---- */

/* a followed by b (ac_alloc'd), or NULL. */
static char *kc_join(ac_context *ctx, const char *a, const char *b) {
  size_t na = strlen(a), nb = strlen(b);
  char *s = ac_alloc(ctx, na + nb + 1);
  if (s) {
    memcpy(s, a, na);
    memcpy(s + na, b, nb + 1);
  }
  return s;
}

char *rt_kcache_dir(ac_context *ctx) {
  const char *on = getenv("ARRAYC_CACHE");
  if (on && strcmp(on, "0") == 0)
    return NULL;
  const char *dir = getenv("ARRAYC_CACHE_DIR");
  if (dir && *dir)
    return ac_strdup(ctx, dir);
  /* The XDG base-directory specification: a relative path in
   * $XDG_CACHE_HOME is invalid and ignored. */
  const char *xdg = getenv("XDG_CACHE_HOME");
  if (xdg && xdg[0] == '/')
    return kc_join(ctx, xdg, "/arrayc");
  const char *home = getenv("HOME");
  if (home && *home)
    return kc_join(ctx, home, "/.cache/arrayc");
  return NULL;
}

/* The entry file of key in dir (ac_alloc'd), or NULL. */
static char *kc_entry_path(ac_context *ctx, const char *dir, const void *key, size_t keylen) {
  uint64_t h[2];
  kc_hash(key, keylen, KC_SEED_NAME, h);
  char name[1 + KC_NAME + 1];
  snprintf(name, sizeof name, "/%016" PRIx64 "%016" PRIx64, h[0], h[1]);
  return kc_join(ctx, dir, name);
}

/* mkdir -p with mode 0700 for every directory created (see the top). */
static bool kc_mkdirs(char *path) {
  struct stat st;
  if (stat(path, &st) == 0)
    return S_ISDIR(st.st_mode);
  for (char *p = path + 1;; p++) {
    if (*p != '/' && *p != '\0')
      continue;
    char c = *p;
    *p = '\0';
    if (mkdir(path, 0700) == 0) {
      if (chmod(path, 0700) != 0) {
        *p = c;
        return false;
      }
    } else if (errno != EEXIST) {
      *p = c;
      return false;
    }
    *p = c;
    if (!c)
      break;
  }
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* ---- reading ---- */

/* Reads exactly n bytes (false on an error or a short file). */
static bool kc_read(int fd, unsigned char *buf, size_t n) {
  while (n) {
    ssize_t got = read(fd, buf, n);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      return false;
    buf += got;
    n -= (size_t)got;
  }
  return true;
}

/* Removes the bad entry at path if it is still the file `was`. */
static void kc_remove_bad(const char *path, const struct stat *was) {
  struct stat now;
  if (stat(path, &now) == 0 && now.st_dev == was->st_dev && now.st_ino == was->st_ino)
    (void)unlink(path);
}

/* Checks the header in hdr against the asked key length and the file
 * size; on success the value's length. */
static bool kc_header_ok(const unsigned char *hdr, size_t keylen, uint64_t fsize,
                         uint64_t *vallen) {
  if (memcmp(hdr, kc_magic, sizeof kc_magic) != 0 || kc_le(hdr + 8, 4) != KC_VERSION ||
      kc_le(hdr + 12, 4) != 0 || kc_le(hdr + 16, 8) != keylen)
    return false;
  uint64_t vl = kc_le(hdr + 24, 8);
  /* fsize == KC_FIXED + keylen + vl, without overflow */
  if (fsize < KC_FIXED || fsize - KC_FIXED < keylen || fsize - KC_FIXED - keylen != vl)
    return false;
  *vallen = vl;
  return true;
}

bool rt_kcache_get(ac_context *ctx, const void *key, size_t keylen, void **val, size_t *vallen) {
  *val = NULL;
  *vallen = 0;
  char *dir = rt_kcache_dir(ctx);
  char *path = dir ? kc_entry_path(ctx, dir, key, keylen) : NULL;
  ac_free(ctx, dir);
  if (!path)
    return false;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) {
    ac_free(ctx, path);
    return false; /* no entry (or one we may not read: not ours to remove) */
  }
  bool hit = false, bad = true;
  unsigned char hdr[KC_HEADER], *buf = NULL;
  uint64_t vl = 0;
  struct stat st;
  if (fstat(fd, &st) != 0) {
    bad = false;
  } else if (S_ISREG(st.st_mode) && kc_read(fd, hdr, sizeof hdr) &&
             kc_header_ok(hdr, keylen, (uint64_t)st.st_size, &vl) && vl < SIZE_MAX - KC_FIXED &&
             keylen < SIZE_MAX - KC_FIXED - vl) {
    size_t size = KC_FIXED + keylen + (size_t)vl;
    buf = ac_alloc(ctx, size + 1);
    if (!buf) {
      bad = false; /* out of memory: a miss, but nothing wrong with the file */
    } else {
      memcpy(buf, hdr, sizeof hdr);
      if (kc_read(fd, buf + KC_HEADER, size - KC_HEADER) &&
          kc_checksum(buf, size - 8) == kc_le(buf + size - 8, 8) &&
          (keylen == 0 || memcmp(buf + KC_HEADER, key, keylen) == 0)) {
        hit = true;
        bad = false;
      }
    }
  }
  close(fd);
  if (hit) {
    /* The value to the front of the buffer, NUL after it. */
    memmove(buf, buf + KC_HEADER + keylen, (size_t)vl);
    buf[vl] = '\0';
    void *shrunk = ac_realloc(ctx, buf, (size_t)vl + 1);
    *val = shrunk ? shrunk : buf;
    *vallen = (size_t)vl;
  } else {
    ac_free(ctx, buf);
    if (bad)
      kc_remove_bad(path, &st);
  }
  ac_free(ctx, path);
  return hit;
}

/* ---- writing ---- */

static bool kc_write(int fd, const unsigned char *buf, size_t n) {
  while (n) {
    ssize_t put = write(fd, buf, n);
    if (put < 0 && errno == EINTR)
      continue;
    if (put <= 0)
      return false;
    buf += put;
    n -= (size_t)put;
  }
  return true;
}

bool rt_kcache_put(ac_context *ctx, const void *key, size_t keylen, const void *val,
                   size_t vallen) {
  if (keylen > SIZE_MAX - KC_FIXED || vallen > SIZE_MAX - KC_FIXED - keylen)
    return false;
  char *dir = rt_kcache_dir(ctx);
  if (!dir)
    return false;
  size_t size = KC_FIXED + keylen + vallen;
  char *path = kc_entry_path(ctx, dir, key, keylen);
  char *tmp = kc_join(ctx, dir, "/.tmp-XXXXXX");
  unsigned char *buf = ac_alloc(ctx, size);
  bool ok = false;
  if (path && tmp && buf && kc_mkdirs(dir)) {
    memcpy(buf, kc_magic, sizeof kc_magic);
    kc_put_le(buf + 8, KC_VERSION, 4);
    kc_put_le(buf + 12, 0, 4);
    kc_put_le(buf + 16, keylen, 8);
    kc_put_le(buf + 24, vallen, 8);
    if (keylen)
      memcpy(buf + KC_HEADER, key, keylen);
    if (vallen)
      memcpy(buf + KC_HEADER + keylen, val, vallen);
    kc_put_le(buf + size - 8, kc_checksum(buf, size - 8), 8);
    int fd = mkstemp(tmp);
    if (fd >= 0) {
      (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
      /* close reports write-back errors some file systems (NFS) defer */
      bool written = kc_write(fd, buf, size);
      written = close(fd) == 0 && written;
      ok = written && rename(tmp, path) == 0;
      if (!ok)
        (void)unlink(tmp);
    }
  }
  ac_free(ctx, buf);
  ac_free(ctx, tmp);
  ac_free(ctx, path);
  ac_free(ctx, dir);
  return ok;
}
