/* test/unit/test_kcache.c: the on-disk kernel cache (runtime/kcache.c).
 *
 * Every test works in a fresh directory under /tmp named by
 * ARRAYC_CACHE_DIR (or the XDG/HOME variables for the directory rules) and
 * removes it afterwards. Entries are damaged by hand (bytes flipped,
 * truncated, extended, another key's entry copied under this key's name)
 * to check that a read verifies everything, misses, removes the bad file
 * and that the next put writes a good one again.
 */
#define _POSIX_C_SOURCE 200809L /* setenv, mkdtemp, mkfifo, opendir */

#include "runtime/kcache.h"

#include "ir.h"
#include "unit.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- helpers ---- */

/* A fresh directory under /tmp, its name into buf. */
static bool make_tmpdir(char *buf, size_t cap) {
  snprintf(buf, cap, "/tmp/arrayc_kcache_XXXXXX");
  return mkdtemp(buf) != NULL;
}

/* rm -r path */
static void remove_tree(const char *path) {
  DIR *d = opendir(path);
  if (d) {
    struct dirent *e;
    while ((e = readdir(d))) {
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
        continue;
      char sub[1024];
      snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
      remove_tree(sub);
    }
    closedir(d);
    rmdir(path);
  } else {
    unlink(path);
  }
}

/* Number of directory entries in dir (except . and ..); the name of the
 * last one into name. */
static int list_dir(const char *dir, char *name, size_t cap) {
  DIR *d = opendir(dir);
  if (!d)
    return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    n++;
    if (name)
      snprintf(name, cap, "%s", e->d_name);
  }
  closedir(d);
  return n;
}

static bool write_file(const char *path, const void *data, size_t size) {
  FILE *f = fopen(path, "wb");
  if (!f)
    return false;
  bool ok = fwrite(data, 1, size, f) == size;
  return fclose(f) == 0 && ok;
}

static bool exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

/* get must hit with exactly (val, n). */
static void expect_hit(ac_context *ctx, const char *key, const void *val, size_t n) {
  void *got = NULL;
  size_t len = 99;
  bool hit = rt_kcache_get(ctx, key, strlen(key), &got, &len);
  CHECK(hit);
  if (hit) {
    CHECK_EQ_INT(len, n);
    CHECK(len == n && memcmp(got, val, n) == 0);
    CHECK(((char *)got)[len] == '\0');
  }
  ac_free(ctx, got);
}

static void expect_miss(ac_context *ctx, const char *key) {
  void *got = (void *)1;
  size_t len = 99;
  CHECK(!rt_kcache_get(ctx, key, strlen(key), &got, &len));
  CHECK(got == NULL);
  CHECK_EQ_INT(len, 0);
}

static bool put_str(ac_context *ctx, const char *key, const char *val) {
  return rt_kcache_put(ctx, key, strlen(key), val, strlen(val));
}

/* A test's environment: a fresh cache directory as ARRAYC_CACHE_DIR. */
typedef struct env {
  char dir[64];
  ac_context *ctx;
} env;

static bool env_open(env *e) {
  unsetenv("ARRAYC_CACHE");
  e->ctx = ac_context_create();
  CHECK(make_tmpdir(e->dir, sizeof e->dir));
  setenv("ARRAYC_CACHE_DIR", e->dir, 1);
  return e->ctx != NULL;
}

static void env_close(env *e) {
  remove_tree(e->dir);
  unsetenv("ARRAYC_CACHE_DIR");
  ac_context_destroy(e->ctx);
}

/* The path of the only entry in e->dir (false if not exactly one). */
static bool only_entry(const env *e, char *path, size_t cap) {
  char name[256];
  if (list_dir(e->dir, name, sizeof name) != 1)
    return false;
  snprintf(path, cap, "%s/%s", e->dir, name);
  return true;
}

/* ---- tests ---- */

UNIT_TEST(put_then_get_round_trip) {
  env e;
  if (!env_open(&e))
    return;
  CHECK(put_str(e.ctx, "kernel IR text; sm_90; ptx 8.0", ".version 8.0\n.target sm_90\n"));
  const char *ptx = ".version 8.0\n.target sm_90\n";
  expect_hit(e.ctx, "kernel IR text; sm_90; ptx 8.0", ptx, strlen(ptx));
  /* a second put replaces the value */
  CHECK(put_str(e.ctx, "kernel IR text; sm_90; ptx 8.0", "other"));
  expect_hit(e.ctx, "kernel IR text; sm_90; ptx 8.0", "other", 5);
  char path[512], name[256];
  CHECK(only_entry(&e, path, sizeof path));
  /* the file is named by 32 hex digits */
  CHECK_EQ_INT(list_dir(e.dir, name, sizeof name), 1);
  CHECK_EQ_INT(strlen(name), 32);
  CHECK_EQ_INT(strspn(name, "0123456789abcdef"), 32);
  /* the name is MurmurHash3 x64-128 of the key, seed 0 (a format: entries
   * written by one build must be found by the next) */
  remove_tree(path);
  CHECK(put_str(e.ctx, "foo", "bar"));
  CHECK_EQ_INT(list_dir(e.dir, name, sizeof name), 1);
  CHECK_STR(name, "e271865701f545617eaf87e42bba7d87");
  env_close(&e);
}

UNIT_TEST(unknown_key_is_a_miss) {
  env e;
  if (!env_open(&e))
    return;
  expect_miss(e.ctx, "never stored");
  CHECK(put_str(e.ctx, "stored", "v"));
  expect_miss(e.ctx, "stored "); /* a longer key */
  expect_miss(e.ctx, "Stored");
  CHECK_EQ_INT(list_dir(e.dir, NULL, 0), 1); /* misses remove nothing good */
  env_close(&e);
}

UNIT_TEST(empty_and_binary_values_and_keys) {
  env e;
  if (!env_open(&e))
    return;
  CHECK(rt_kcache_put(e.ctx, "k", 1, "", 0));
  expect_hit(e.ctx, "k", "", 0);
  CHECK(rt_kcache_put(e.ctx, "", 0, "empty key", 9));
  void *got = NULL;
  size_t len = 0;
  CHECK(rt_kcache_get(e.ctx, "", 0, &got, &len) && len == 9 && memcmp(got, "empty key", 9) == 0);
  ac_free(e.ctx, got);
  /* no bytes at all may come as null pointers */
  CHECK(rt_kcache_put(e.ctx, NULL, 0, NULL, 0));
  got = NULL;
  CHECK(rt_kcache_get(e.ctx, NULL, 0, &got, &len) && len == 0 && got && !*(char *)got);
  ac_free(e.ctx, got);
  const unsigned char key[5] = {0, 1, 0, 255, 7}, val[6] = {0, 0, 9, 0, 200, 0};
  CHECK(rt_kcache_put(e.ctx, key, sizeof key, val, sizeof val));
  got = NULL;
  CHECK(rt_kcache_get(e.ctx, key, sizeof key, &got, &len));
  CHECK(len == sizeof val && got && memcmp(got, val, sizeof val) == 0);
  ac_free(e.ctx, got);
  /* keys differing only after a NUL are different keys */
  const unsigned char key2[5] = {0, 1, 0, 255, 8};
  got = NULL;
  CHECK(!rt_kcache_get(e.ctx, key2, sizeof key2, &got, &len));
  env_close(&e);
}

UNIT_TEST(large_value) {
  env e;
  if (!env_open(&e))
    return;
  size_t n = (size_t)6 << 20;
  unsigned char *v = malloc(n);
  CHECK(v != NULL);
  if (v) {
    uint64_t x = 88172645463325252u;
    for (size_t i = 0; i < n; i++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      v[i] = (unsigned char)x;
    }
    CHECK(rt_kcache_put(e.ctx, "big", 3, v, n));
    void *got = NULL;
    size_t len = 0;
    CHECK(rt_kcache_get(e.ctx, "big", 3, &got, &len));
    CHECK(len == n && got && memcmp(got, v, n) == 0);
    ac_free(e.ctx, got);
    free(v);
  }
  env_close(&e);
}

/* Another key's valid entry under this key's file name (what a hash
 * collision would look like): a miss, and the file goes. */
UNIT_TEST(entry_of_another_key_is_a_miss_and_removed) {
  static const char *others[2] = {"key-B", "a much longer key B"};
  for (int i = 0; i < 2; i++) {
    env a, b;
    if (!env_open(&a))
      return;
    char bdir[64];
    CHECK(make_tmpdir(bdir, sizeof bdir));
    setenv("ARRAYC_CACHE_DIR", bdir, 1);
    b.ctx = a.ctx;
    memcpy(b.dir, bdir, sizeof bdir);
    CHECK(put_str(b.ctx, others[i], "value of B"));
    char bpath[512], apath[512];
    CHECK(only_entry(&b, bpath, sizeof bpath));
    setenv("ARRAYC_CACHE_DIR", a.dir, 1);
    CHECK(put_str(a.ctx, "key-A", "value of A"));
    CHECK(only_entry(&a, apath, sizeof apath));
    size_t size = 0;
    unsigned char *bytes = (unsigned char *)unit_read_file(bpath, &size);
    CHECK(bytes && write_file(apath, bytes, size));
    free(bytes);
    expect_miss(a.ctx, "key-A");
    CHECK(!exists(apath));
    CHECK(put_str(a.ctx, "key-A", "value of A"));
    expect_hit(a.ctx, "key-A", "value of A", 10);
    remove_tree(bdir);
    env_close(&a);
  }
}

UNIT_TEST(corrupted_entry_is_a_miss_removed_and_rewritten) {
  env e;
  if (!env_open(&e))
    return;
  const char *key = "the key", *val = "the value, long enough to have a middle";
  CHECK(put_str(e.ctx, key, val));
  char path[512];
  CHECK(only_entry(&e, path, sizeof path));
  size_t size = 0;
  unsigned char *good = (unsigned char *)unit_read_file(path, &size);
  CHECK(good && size == 40 + strlen(key) + strlen(val));
  if (!good)
    return;
  /* magic, version, reserved, key length, value length, key, value,
   * checksum */
  const size_t at[] = {0, 7, 8, 12, 16, 24, 32, 35, 40, 60, size - 8, size - 1};
  for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
    unsigned char *bad = malloc(size);
    memcpy(bad, good, size);
    bad[at[i]] ^= 0x20;
    CHECK(write_file(path, bad, size));
    free(bad);
    expect_miss(e.ctx, key);
    CHECK(!exists(path));
    CHECK(put_str(e.ctx, key, val));
    expect_hit(e.ctx, key, val, strlen(val));
  }
  free(good);
  env_close(&e);
}

UNIT_TEST(truncated_or_extended_entry_is_a_miss) {
  env e;
  if (!env_open(&e))
    return;
  const char *key = "k2", *val = "0123456789";
  CHECK(put_str(e.ctx, key, val));
  char path[512];
  CHECK(only_entry(&e, path, sizeof path));
  size_t size = 0;
  unsigned char *good = (unsigned char *)unit_read_file(path, &size);
  if (!good)
    return;
  const size_t lens[] = {0, 1, 10, 31, 32, 39, 40, size - 8, size - 1};
  for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
    CHECK(write_file(path, good, lens[i]));
    expect_miss(e.ctx, key);
    CHECK(!exists(path));
    CHECK(put_str(e.ctx, key, val));
  }
  unsigned char *longer = malloc(size + 1);
  memcpy(longer, good, size);
  longer[size] = 0;
  CHECK(write_file(path, longer, size + 1));
  expect_miss(e.ctx, key);
  CHECK(!exists(path));
  free(longer);
  /* something that is not a file at all (a FIFO: reading must not block) */
  CHECK(mkfifo(path, 0600) == 0);
  expect_miss(e.ctx, key);
  CHECK(!exists(path));
  CHECK(put_str(e.ctx, key, val));
  expect_hit(e.ctx, key, val, strlen(val));
  free(good);
  env_close(&e);
}

UNIT_TEST(cache_disabled_by_environment) {
  env e;
  if (!env_open(&e))
    return;
  CHECK(put_str(e.ctx, "k", "v"));
  setenv("ARRAYC_CACHE", "0", 1);
  CHECK(rt_kcache_dir(e.ctx) == NULL);
  expect_miss(e.ctx, "k");
  CHECK(!put_str(e.ctx, "k2", "v2"));
  CHECK_EQ_INT(list_dir(e.dir, NULL, 0), 1);
  setenv("ARRAYC_CACHE", "1", 1);
  expect_hit(e.ctx, "k", "v", 1);
  unsetenv("ARRAYC_CACHE");
  env_close(&e);
}

UNIT_TEST(directory_from_environment) {
  ac_context *ctx = ac_context_create();
  unsetenv("ARRAYC_CACHE");
  const char *saved_home = getenv("HOME");
  char *home = saved_home ? strdup(saved_home) : NULL;
  setenv("ARRAYC_CACHE_DIR", "/some/where", 1);
  setenv("XDG_CACHE_HOME", "/xdg", 1);
  setenv("HOME", "/home/u", 1);
  char *d = rt_kcache_dir(ctx);
  CHECK_STR(d, "/some/where");
  ac_free(ctx, d);
  setenv("ARRAYC_CACHE_DIR", "", 1); /* empty: as if unset */
  d = rt_kcache_dir(ctx);
  CHECK_STR(d, "/xdg/arrayc");
  ac_free(ctx, d);
  unsetenv("ARRAYC_CACHE_DIR");
  setenv("XDG_CACHE_HOME", "relative/dir", 1); /* invalid by the XDG rules */
  d = rt_kcache_dir(ctx);
  CHECK_STR(d, "/home/u/.cache/arrayc");
  ac_free(ctx, d);
  unsetenv("XDG_CACHE_HOME");
  d = rt_kcache_dir(ctx);
  CHECK_STR(d, "/home/u/.cache/arrayc");
  ac_free(ctx, d);
  unsetenv("HOME");
  CHECK(rt_kcache_dir(ctx) == NULL);
  /* and nothing to read or write then */
  CHECK(!put_str(ctx, "k", "v"));
  expect_miss(ctx, "k");

  /* the fallbacks are used for real: XDG, then HOME */
  char tmp[64];
  CHECK(make_tmpdir(tmp, sizeof tmp));
  char sub[128], entry_dir[160];
  snprintf(sub, sizeof sub, "%s/xdg", tmp);
  setenv("XDG_CACHE_HOME", sub, 1);
  CHECK(put_str(ctx, "via xdg", "1"));
  snprintf(entry_dir, sizeof entry_dir, "%s/xdg/arrayc", tmp);
  CHECK_EQ_INT(list_dir(entry_dir, NULL, 0), 1);
  expect_hit(ctx, "via xdg", "1", 1);
  unsetenv("XDG_CACHE_HOME");
  snprintf(sub, sizeof sub, "%s/home", tmp);
  setenv("HOME", sub, 1);
  CHECK(put_str(ctx, "via home", "2"));
  snprintf(entry_dir, sizeof entry_dir, "%s/home/.cache/arrayc", tmp);
  CHECK_EQ_INT(list_dir(entry_dir, NULL, 0), 1);
  expect_hit(ctx, "via home", "2", 1);
  remove_tree(tmp);

  if (home) {
    setenv("HOME", home, 1);
    free(home);
  } else {
    unsetenv("HOME");
  }
  ac_context_destroy(ctx);
}

static unsigned mode_of(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (unsigned)(st.st_mode & 07777) : 0xFFFFu;
}

UNIT_TEST(created_directories_are_private) {
  ac_context *ctx = ac_context_create();
  unsetenv("ARRAYC_CACHE");
  char tmp[64];
  CHECK(make_tmpdir(tmp, sizeof tmp));
  chmod(tmp, 0755);
  /* a umask that would leave the owner without write permission: the
   * directories must still come out exactly 0700 */
  mode_t old = umask(0277);
  char dir[128], a[128], b[128];
  snprintf(a, sizeof a, "%s/a", tmp);
  snprintf(b, sizeof b, "%s/a/b", tmp);
  snprintf(dir, sizeof dir, "%s/a/b/cache", tmp);
  setenv("ARRAYC_CACHE_DIR", dir, 1);
  CHECK(put_str(ctx, "k", "v"));
  umask(old);
  CHECK_EQ_INT(mode_of(a), 0700);
  CHECK_EQ_INT(mode_of(b), 0700);
  CHECK_EQ_INT(mode_of(dir), 0700);
  CHECK_EQ_INT(mode_of(tmp), 0755); /* an existing directory is left as it is */
  expect_hit(ctx, "k", "v", 1);
  /* an entry file is for its owner only (mkstemp's 0600) */
  char name[256], path[512];
  CHECK_EQ_INT(list_dir(dir, name, sizeof name), 1);
  snprintf(path, sizeof path, "%s/%s", dir, name);
  CHECK_EQ_INT(mode_of(path) & 077, 0);
  remove_tree(tmp);
  unsetenv("ARRAYC_CACHE_DIR");
  ac_context_destroy(ctx);
}

UNIT_TEST(unusable_directory_is_a_miss_not_an_error) {
  env e;
  if (!env_open(&e))
    return;
  char file[128], dir[160];
  snprintf(file, sizeof file, "%s/plainfile", e.dir);
  CHECK(write_file(file, "x", 1));
  snprintf(dir, sizeof dir, "%s/plainfile/cache", e.dir); /* under a file */
  setenv("ARRAYC_CACHE_DIR", dir, 1);
  CHECK(!put_str(e.ctx, "k", "v"));
  expect_miss(e.ctx, "k");
  setenv("ARRAYC_CACHE_DIR", file, 1); /* a file, not a directory */
  CHECK(!put_str(e.ctx, "k", "v"));
  expect_miss(e.ctx, "k");
  setenv("ARRAYC_CACHE_DIR", e.dir, 1);
  env_close(&e);
}

/* Several threads write one key with values of different lengths while
 * others read it: a reader sees a miss or one of the values, whole; at the
 * end there is exactly one valid entry and no temporary file. */
enum { WRITERS = 6, READERS = 3, ROUNDS = 30 };

typedef struct racer {
  ac_context *ctx;
  int id;
  bool ok;
} racer;

static void racer_value(int id, char *buf, size_t cap) {
  size_t n = 1000 + (size_t)id * 3000;
  if (n >= cap)
    n = cap - 1;
  memset(buf, 'a' + id, n);
  buf[n] = '\0';
}

static void *writer_main(void *arg) {
  racer *r = arg;
  static char val[WRITERS][20000];
  racer_value(r->id, val[r->id], sizeof val[r->id]);
  r->ok = true;
  for (int i = 0; i < ROUNDS; i++)
    r->ok &= rt_kcache_put(r->ctx, "contended", 9, val[r->id], strlen(val[r->id]));
  return NULL;
}

static void *reader_main(void *arg) {
  racer *r = arg;
  r->ok = true;
  for (int i = 0; i < ROUNDS * 2; i++) {
    void *got = NULL;
    size_t len = 0;
    if (!rt_kcache_get(r->ctx, "contended", 9, &got, &len))
      continue;
    char *s = got;
    int id = s[0] - 'a';
    char want[20000];
    if (id < 0 || id >= WRITERS) {
      r->ok = false;
    } else {
      racer_value(id, want, sizeof want);
      r->ok &= len == strlen(want) && memcmp(s, want, len) == 0;
    }
    ac_free(r->ctx, got);
  }
  return NULL;
}

UNIT_TEST(concurrent_writers_leave_one_valid_entry) {
  env e;
  if (!env_open(&e))
    return;
  pthread_t th[WRITERS + READERS];
  racer rs[WRITERS + READERS];
  for (int i = 0; i < WRITERS + READERS; i++) {
    rs[i] = (racer){e.ctx, i < WRITERS ? i : i - WRITERS, false};
    CHECK(pthread_create(&th[i], NULL, i < WRITERS ? writer_main : reader_main, &rs[i]) == 0);
  }
  for (int i = 0; i < WRITERS + READERS; i++) {
    pthread_join(th[i], NULL);
    CHECK(rs[i].ok);
  }
  char name[256];
  CHECK_EQ_INT(list_dir(e.dir, name, sizeof name), 1);
  CHECK(name[0] != '.');
  void *got = NULL;
  size_t len = 0;
  CHECK(rt_kcache_get(e.ctx, "contended", 9, &got, &len));
  if (got) {
    char want[20000];
    int id = ((char *)got)[0] - 'a';
    CHECK(id >= 0 && id < WRITERS);
    if (id >= 0 && id < WRITERS) {
      racer_value(id, want, sizeof want);
      CHECK(len == strlen(want) && memcmp(got, want, len) == 0);
    }
  }
  ac_free(e.ctx, got);
  env_close(&e);
}

UNIT_MAIN(put_then_get_round_trip, unknown_key_is_a_miss, empty_and_binary_values_and_keys,
          large_value, entry_of_another_key_is_a_miss_and_removed,
          corrupted_entry_is_a_miss_removed_and_rewritten, truncated_or_extended_entry_is_a_miss,
          cache_disabled_by_environment, directory_from_environment,
          created_directories_are_private, unusable_directory_is_a_miss_not_an_error,
          concurrent_writers_leave_one_valid_entry)
