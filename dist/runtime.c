/* dist/runtime.c: the distributed runtime, collective errors and the choice
 * of each rank's device.
 *
 * A runtime duplicates the caller's communicator (arrayc's messages never
 * mix with the program's), finds the node-local rank with
 * MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) and makes the rank's local
 * ac_runtime. Errors are agreed on with one MPI_Allreduce (the lowest
 * failing rank, or none) and, only when some rank failed, a broadcast of
 * that rank's error: the common path costs one small allreduce. How a
 * rank's blocks reach MPI on a GPU (CUDA-aware MPI, pinned staging) is
 * staging.c's, decided when the runtime is made.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */

#include "dist_impl.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

ac_status dist_fail(ac_dist_runtime *rt, ac_error **err, ac_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ac_error *e = ir_verror(rt->ctx, st, NULL, (ir_loc){0, 0}, fmt, ap);
  va_end(ap);
  return ir_report(err, e, e ? st : AC_ERR_NOMEM);
}

/* ---- agreeing on errors ---- */

/* An error's fields in one buffer: status, line, column and the lengths of
 * message, file (-1: none) and text, then their bytes. */
typedef struct wire_error {
  int32_t status;
  uint32_t line, col;
  int64_t len[3];
} wire_error;

static size_t wire_len(const char *s) {
  return s ? strlen(s) : 0;
}

static char *wire_pack(const ac_error *e, ac_status st, size_t *size) {
  const char *str[3] = {e ? e->message : "", e ? e->file : NULL, e ? e->text : ""};
  wire_error h = {(int32_t)(e ? e->status : st), e ? e->line : 0, e ? e->col : 0, {0, 0, 0}};
  size_t n = sizeof h;
  for (int k = 0; k < 3; k++) {
    h.len[k] = str[k] ? (int64_t)wire_len(str[k]) : -1;
    n += wire_len(str[k]);
  }
  char *buf = malloc(n);
  if (!buf)
    return NULL;
  memcpy(buf, &h, sizeof h);
  size_t at = sizeof h;
  for (int k = 0; k < 3; k++) {
    memcpy(buf + at, str[k] ? str[k] : "", wire_len(str[k]));
    at += wire_len(str[k]);
  }
  *size = n;
  return buf;
}

/* The error in buf (NULL when memory runs out). */
static ac_error *wire_unpack(ac_context *ctx, const char *buf) {
  wire_error h;
  memcpy(&h, buf, sizeof h);
  ac_error *e = ac_alloc(ctx, sizeof *e);
  if (!e)
    return NULL;
  memset(e, 0, sizeof *e);
  e->ctx = ctx;
  e->status = (ac_status)h.status;
  e->line = h.line;
  e->col = h.col;
  char **dst[3] = {&e->message, &e->file, &e->text};
  size_t at = sizeof h;
  for (int k = 0; k < 3; k++) {
    if (h.len[k] < 0)
      continue;
    *dst[k] = ac_strndup(ctx, buf + at, (size_t)h.len[k]);
    at += (size_t)h.len[k];
    if (!*dst[k]) {
      ac_error_destroy(e);
      return NULL;
    }
  }
  return e;
}

ac_status dist_agree(ac_dist_runtime *rt, ac_status st, ac_error **err) {
  int mine = st == AC_OK ? rt->size : rt->rank, first = rt->size;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, rt->comm);
  if (first == rt->size)
    return AC_OK;
  /* the failing rank's error, packed (a rank out of memory sends its bare
   * status: every rank must take part in the broadcasts whatever happens) */
  int64_t size = 0;
  char *buf = NULL;
  if (rt->rank == first) {
    size_t n = 0;
    buf = wire_pack(err ? *err : NULL, st, &n);
    if (!buf) {
      wire_error h = {(int32_t)AC_ERR_NOMEM, 0, 0, {0, -1, 0}};
      buf = malloc(sizeof h);
      if (buf)
        memcpy(buf, &h, sizeof h);
      n = sizeof h;
    }
    size = buf ? (int64_t)n : 0;
  }
  MPI_Bcast(&size, 1, MPI_INT64_T, first, rt->comm);
  if (rt->rank != first)
    buf = malloc(size ? (size_t)size : 1);
  char dummy[sizeof(wire_error)];
  /* a rank that could not allocate still receives (into a scratch buffer
   * too small to use: it then reports running out of memory) */
  bool ok = buf != NULL && size >= (int64_t)sizeof(wire_error);
  MPI_Bcast(buf ? buf : dummy, buf ? (int)size : 0, MPI_BYTE, first, rt->comm);
  ac_error *e = ok ? wire_unpack(rt->ctx, buf) : NULL;
  free(buf);
  ac_status agreed = e ? e->status : AC_ERR_NOMEM;
  if (err) {
    ac_error_destroy(*err);
    *err = e;
  } else {
    ac_error_destroy(e);
  }
  return agreed;
}

/* ---- the device ---- */

/* The number of CUDA devices of this node (0 without a driver), asked of
 * the driver the GPU backend loads. */
static int cuda_device_count(void) {
  const char *env = getenv("ARRAYC_LIBCUDA");
  void *lib = dlopen(env && *env ? env : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    return 0;
  int (*init)(unsigned), (*count)(int *);
  void *s1 = dlsym(lib, "cuInit"), *s2 = dlsym(lib, "cuDeviceGetCount");
  memcpy(&init, &s1, sizeof init);
  memcpy(&count, &s2, sizeof count);
  int n = 0;
  if (!s1 || !s2 || init(0) != 0 || count(&n) != 0)
    n = 0;
  dlclose(lib);
  return n;
}

/* AC_BACKEND_AUTO: GPU (local rank % devices) when the node has one,
 * else the CPU. The ordinal reaches the GPU backend through
 * ARRAYC_GPU_DEVICE (set for the creation only; a value the user set wins). */
static ac_status local_runtime(ac_dist_runtime *rt, ac_backend be, ac_error **err) {
  if (be != AC_BACKEND_AUTO)
    return ac_runtime_create(rt->ctx, be, &rt->local, err);
  int n = cuda_device_count();
  const char *set = getenv("ARRAYC_GPU_DEVICE");
  if (n > 0) {
    char ordinal[16];
    snprintf(ordinal, sizeof ordinal, "%d", rt->local_rank % n);
    if (!(set && *set))
      setenv("ARRAYC_GPU_DEVICE", ordinal, 1);
    ac_status st = ac_runtime_create(rt->ctx, AC_BACKEND_GPU, &rt->local, NULL);
    if (!(set && *set))
      unsetenv("ARRAYC_GPU_DEVICE");
    if (st == AC_OK)
      return st;
  }
  return ac_runtime_create(rt->ctx, AC_BACKEND_CPU, &rt->local, err);
}

ac_status ac_dist_runtime_create(ac_context *ctx, MPI_Comm comm, ac_backend local_backend,
                                 ac_dist_runtime **out, ac_error **err) {
  if (err)
    *err = NULL;
  if (!ctx || !out)
    return AC_ERR_INVALID;
  *out = NULL;
  int inited = 0;
  MPI_Initialized(&inited);
  if (!inited)
    return ir_report(err,
                     ir_error(ctx, AC_ERR_INVALID, NULL, (ir_loc){0, 0},
                              "ac_dist_runtime_create: MPI is not initialised (call MPI_Init)"),
                     AC_ERR_INVALID);
  ac_dist_runtime *rt = ac_alloc(ctx, sizeof *rt);
  /* the duplicate is made even when this rank ran out of memory: it is
   * collective */
  MPI_Comm dup, node;
  MPI_Comm_dup(comm, &dup);
  MPI_Comm_split_type(dup, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  ac_dist_runtime tmp = {.ctx = ctx, .comm = dup};
  MPI_Comm_rank(dup, &tmp.rank);
  MPI_Comm_size(dup, &tmp.size);
  MPI_Comm_rank(node, &tmp.local_rank);
  MPI_Comm_size(node, &tmp.local_size);
  MPI_Comm_free(&node);
  ac_error *e = NULL;
  ac_status st = AC_OK;
  if (!rt)
    st = AC_ERR_NOMEM;
  else if ((unsigned)local_backend > AC_BACKEND_SIMT_EMU)
    st = dist_fail(&tmp, &e, AC_ERR_INVALID, "ac_dist_runtime_create: unknown backend %d",
                   (int)local_backend);
  else if ((st = local_runtime(&tmp, local_backend, &e)) == AC_OK)
    st = dist_staging_init(&tmp, &e);
  st = dist_agree(&tmp, st, &e);
  if (st != AC_OK) {
    ac_runtime_destroy(tmp.local);
    ac_free(ctx, rt);
    MPI_Comm_free(&dup);
    return ir_report(err, e, st);
  }
  /* whether the exchanges may copy to or from a device on some rank */
  int mine = tmp.gpu != NULL, any = 0;
  MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_LOR, dup);
  tmp.any_gpu = any != 0;
  *rt = tmp;
  *out = rt;
  return AC_OK;
}

void ac_dist_runtime_destroy(ac_dist_runtime *rt) {
  if (!rt)
    return;
  dist_staging_free(rt); /* pinned memory goes back while the device lives */
  ac_runtime_destroy(rt->local);
  MPI_Comm_free(&rt->comm);
  ac_free(rt->ctx, rt);
}

int ac_dist_runtime_rank(const ac_dist_runtime *rt) {
  return rt->rank;
}
int ac_dist_runtime_size(const ac_dist_runtime *rt) {
  return rt->size;
}
int ac_dist_runtime_local_rank(const ac_dist_runtime *rt) {
  return rt->local_rank;
}
int ac_dist_runtime_local_size(const ac_dist_runtime *rt) {
  return rt->local_size;
}
ac_backend ac_dist_runtime_backend(const ac_dist_runtime *rt) {
  return ac_runtime_backend(rt->local);
}
uint64_t ac_dist_runtime_bytes_sent(const ac_dist_runtime *rt) {
  return rt->bytes_sent;
}
