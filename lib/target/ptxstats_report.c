/* lib/target/ptxstats_report.c: what the hardware makes of the PTX
 * (ptxstats.h): `ptxas -v` (found, run and read), the occupancy
 * calculator, and the `ptx-stats:` line.
 *
 * ptxas runs without a shell (posix_spawn, arguments as they are) on a
 * temporary file; its report goes to standard error, read through a pipe
 * together with standard output. Its text varies a little between CUDA
 * releases (CUDA 11 has no barrier count, CUDA 12 puts shared memory
 * before barriers, very old ones wrote "A+B bytes"), so each "Used" and
 * "stack frame" line is read as comma-separated items, each a number and
 * words naming it.
 *
 * Occupancy follows cuda_occupancy.h (CUDA 13.0) line by line for the
 * default shared-memory carveout, no dynamic shared memory, the dynamic
 * shared memory opt-in the runtime sets (runtime/gpu_cuda.c), and
 * partitioned global caching off (it exists only on sm_5x/6x). Registers
 * are allocated per warp in units of 256 and per sub-partition (four per
 * SM): a warp of 40-register threads takes 1280, a sub-partition's 16384
 * hold 12 such warps, so an SM holds 48, not 65536 / 1280 = 51.
 * test/unit/test_ptxstats.c derives its cases by hand and compares the
 * calculator with cuda_occupancy.h itself where a CUDA toolkit is found.
 */
#define _POSIX_C_SOURCE 200809L /* mkstemp, posix_spawn */

#include "target/ptxstats.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* Cap on numbers read from ptxas' report (as the analyser caps its own). */
#define PX_NUM_CAP ((uint64_t)1 << 40)

static uint64_t px_align_up(uint64_t x, uint64_t a) {
  return a > 1 ? (x + a - 1) / a * a : x;
}

/* ---- ptxas ---- */

static bool px_executable(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

const char *px_ptxas_find(char *buf, size_t cap) {
  const char *s = getenv("ARRAYC_PTXAS");
  if (s && *s) {
    if (!px_executable(s) || (size_t)snprintf(buf, cap, "%s", s) >= cap)
      return NULL;
    return buf;
  }
  const char *home = getenv("CUDA_HOME");
  if (home && *home && (size_t)snprintf(buf, cap, "%s/bin/ptxas", home) < cap && px_executable(buf))
    return buf;
  if ((size_t)snprintf(buf, cap, "/usr/local/cuda/bin/ptxas") < cap && px_executable(buf))
    return buf;
  const char *path = getenv("PATH");
  for (const char *p = path; p && *p;) {
    size_t n = strcspn(p, ":");
    if ((size_t)snprintf(buf, cap, "%.*s/ptxas", n ? (int)n : 1, n ? p : ".") < cap &&
        px_executable(buf))
      return buf;
    p += n;
    if (*p == ':')
      p++;
  }
  return NULL;
}

/* The number at *s (an "A+B" sum as old ptxas wrote local and shared
 * memory); *s moves past it. */
static uint64_t px_ptxas_num(const char **s, const char *e, bool *ok) {
  uint64_t sum = 0;
  *ok = false;
  for (;;) {
    uint64_t x = 0;
    const char *st = *s;
    while (*s < e && **s >= '0' && **s <= '9') {
      x = x * 10 + (uint64_t)(**s - '0');
      if (x > PX_NUM_CAP)
        x = PX_NUM_CAP;
      (*s)++;
    }
    if (*s == st)
      return sum;
    *ok = true;
    sum += x;
    if (*s < e && **s == '+')
      (*s)++;
    else
      return sum;
  }
}

static bool px_has(const char *s, const char *e, const char *w) {
  size_t n = strlen(w);
  for (; s + n <= e; s++)
    if (memcmp(s, w, n) == 0)
      return true;
  return false;
}

/* "N bytes stack frame, N bytes spill stores, N bytes spill loads" and
 * "Used N registers, used N barriers, N bytes smem, N bytes cmem[0]":
 * comma-separated items, each a number and words saying what it counts. */
static void px_ptxas_items(px_func *f, const char *s, const char *e) {
  while (s < e) {
    const char *ie = memchr(s, ',', (size_t)(e - s));
    if (!ie)
      ie = e;
    while (s < ie && (*s == ' ' || *s == '\t'))
      s++;
    if (ie - s > 5 && memcmp(s, "used ", 5) == 0)
      s += 5;
    else if (ie - s > 5 && memcmp(s, "Used ", 5) == 0)
      s += 5;
    bool ok;
    uint64_t v = px_ptxas_num(&s, ie, &ok);
    if (ok) {
      if (px_has(s, ie, "register")) {
        f->ptxas.regs = v > UINT_MAX ? UINT_MAX : (unsigned)v;
        f->ptxas.have_regs = true;
      } else if (px_has(s, ie, "barrier")) {
        f->ptxas.barriers = v > 32 ? 32 : (unsigned)v;
        f->ptxas.have_barriers = true;
      } else if (px_has(s, ie, "smem")) {
        f->ptxas.smem = v;
      } else if (px_has(s, ie, "stack frame")) {
        f->ptxas.stack = v;
      } else if (px_has(s, ie, "lmem") && !f->ptxas.stack) {
        f->ptxas.stack = v;
      } else if (px_has(s, ie, "spill stores")) {
        f->ptxas.spill_st = v;
      } else if (px_has(s, ie, "spill loads")) {
        f->ptxas.spill_ld = v;
      }
      f->ptxas.have = true;
    }
    s = ie < e ? ie + 1 : e;
  }
}

void px_ptxas_parse(px_module *m, const char *text, size_t len) {
  px_func *cur = NULL;
  for (const char *s = text, *end = text + len; s < end;) {
    const char *e = memchr(s, '\n', (size_t)(end - s));
    if (!e)
      e = end;
    static const char entry[] = "ompiling entry function '", props[] = "Function properties for ";
    const char *p;
    if (px_has(s, e, entry)) {
      for (p = s; memcmp(p, entry, sizeof entry - 1) != 0; p++)
        ;
      p += sizeof entry - 1;
      const char *q = memchr(p, '\'', (size_t)(e - p));
      cur = q ? px_find(m, p, (size_t)(q - p)) : NULL;
    } else if (px_has(s, e, props)) {
      for (p = s; memcmp(p, props, sizeof props - 1) != 0; p++)
        ;
      p += sizeof props - 1;
      const char *q = e;
      while (q > p && (q[-1] == ' ' || q[-1] == '\r' || q[-1] == '\t'))
        q--;
      cur = px_find(m, p, (size_t)(q - p));
      if (cur)
        cur->ptxas.have = true;
    } else if (cur && px_has(s, e, "Used ") && px_has(s, e, "register")) {
      for (p = s; memcmp(p, "Used ", 5) != 0; p++)
        ;
      px_ptxas_items(cur, p, e);
    } else if (cur && px_has(s, e, "bytes stack frame")) {
      px_ptxas_items(cur, s, e);
    }
    s = e < end ? e + 1 : end;
  }
}

/* The first line of ptxas' output that says "error" or "fatal" (else its
 * first line), without the newline. */
static void px_first_error(const char *text, size_t len, const char **s, size_t *n) {
  const char *first = NULL;
  size_t first_n = 0;
  for (const char *p = text, *end = text + len; p < end;) {
    const char *e = memchr(p, '\n', (size_t)(end - p));
    if (!e)
      e = end;
    if (!first && e > p) {
      first = p;
      first_n = (size_t)(e - p);
    }
    if (px_has(p, e, "error") || px_has(p, e, "fatal")) {
      *s = p;
      *n = (size_t)(e - p);
      return;
    }
    p = e < end ? e + 1 : end;
  }
  *s = first ? first : "";
  *n = first_n;
}

static ac_status px_io_error(ac_context *ctx, ac_error **err, const char *what, const char *path) {
  return ir_report(
      err, ir_error(ctx, AC_ERR_IO, NULL, (ir_loc){0, 0}, "%s %s: %s", what, path, strerror(errno)),
      AC_ERR_IO);
}

ac_status px_ptxas_run(px_module *m, const char *ptxas, const char *ptx, size_t len, unsigned sm,
                       ac_error **err) {
  ac_context *ctx = m->ctx;
  const char *dir = getenv("TMPDIR");
  if (!dir || !*dir)
    dir = "/tmp";
  char path[4096], arch[32];
  if ((size_t)snprintf(path, sizeof path, "%s/arrayc-ptx-XXXXXX", dir) >= sizeof path)
    return ir_report(err,
                     ir_error(ctx, AC_ERR_IO, NULL, (ir_loc){0, 0}, "TMPDIR is too long: %s", dir),
                     AC_ERR_IO);
  snprintf(arch, sizeof arch, "-arch=sm_%u", sm);
  int fd = mkstemp(path);
  if (fd < 0)
    return px_io_error(ctx, err, "cannot create a temporary file in", dir);
  for (size_t done = 0; done < len;) {
    ssize_t w = write(fd, ptx + done, len - done);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      ac_status st = px_io_error(ctx, err, "cannot write", path);
      close(fd);
      unlink(path);
      return st;
    }
    done += (size_t)w;
  }
  close(fd);
  int pipefd[2];
  if (pipe(pipefd) != 0) {
    unlink(path);
    return px_io_error(ctx, err, "cannot run", ptxas);
  }
  fcntl(pipefd[0], F_SETFD, FD_CLOEXEC);
  fcntl(pipefd[1], F_SETFD, FD_CLOEXEC);
  /* ptxas -v writes its report to standard error, its errors too; both
   * come back through one pipe, standard input is /dev/null */
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
  posix_spawn_file_actions_adddup2(&fa, pipefd[1], 2);
  char *argv[] = {(char *)ptxas, "-v", arch, "-o", "/dev/null", path, NULL};
  pid_t pid;
  int rc = posix_spawn(&pid, ptxas, &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(pipefd[1]);
  if (rc != 0) {
    close(pipefd[0]);
    unlink(path);
    errno = rc;
    return px_io_error(ctx, err, "cannot run", ptxas);
  }
  ir_buf out;
  ir_buf_init(&out, ctx);
  char chunk[4096];
  for (;;) {
    ssize_t r = read(pipefd[0], chunk, sizeof chunk);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      break;
    ir_buf_putn(&out, chunk, (size_t)r);
  }
  close(pipefd[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
    ;
  unlink(path);
  const char *text = ir_buf_cstr(&out);
  ac_status st = AC_OK;
  if (out.oom) {
    st = ir_report(err, ir_error(ctx, AC_ERR_NOMEM, NULL, (ir_loc){0, 0}, "out of memory"),
                   AC_ERR_NOMEM);
  } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    const char *line;
    size_t n;
    px_first_error(text, out.len, &line, &n);
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    st = ir_report(err,
                   ir_error(ctx, AC_ERR_INVALID, NULL, (ir_loc){0, 0}, "%s failed (%s %d)%s%.*s",
                            ptxas, code >= 0 ? "exit status" : "signal",
                            code >= 0             ? code
                            : WIFSIGNALED(status) ? WTERMSIG(status)
                                                  : 0,
                            n ? ": " : "", (int)n, line),
                   AC_ERR_INVALID);
  } else {
    px_ptxas_parse(m, text, out.len);
  }
  ir_buf_free(&out);
  return st;
}

/* ---- occupancy ---- */

#define PX_WARP 32
#define PX_MAX_BLOCK 1024
#define PX_REG_UNIT 256    /* registers are given to a warp in units of 256 */
#define PX_SUBPARTITIONS 4 /* an SM's register file is split four ways */
#define PX_MAX_REGS 255    /* per thread */
#define PX_NO_LIMIT UINT_MAX

/* cudaOccDeviceProp and the per-architecture switches of cuda_occupancy.h,
 * with the device attributes of the parts (T4, A100, RTX 30xx, RTX 40xx /
 * L4, H100): shared memory per SM and the opt-in per block. */
static const px_arch px_arches[] = {
    {75, 1024, 16, 65536, 65536, 65536, 0, 256},
    {80, 2048, 32, 65536, 167936, 166912, 1024, 128},
    {86, 1536, 16, 65536, 102400, 101376, 1024, 128},
    {89, 1536, 24, 65536, 102400, 101376, 1024, 128},
    {90, 2048, 32, 65536, 233472, 232448, 1024, 128},
};

const px_arch *px_arch_get(unsigned sm) {
  for (size_t i = 0; i < sizeof px_arches / sizeof px_arches[0]; i++)
    if (px_arches[i].sm == sm)
      return &px_arches[i];
  return NULL;
}

static unsigned px_round_up(unsigned x, unsigned unit) {
  return (x + unit - 1) / unit * unit;
}

px_occ px_occupancy(const px_arch *a, unsigned regs, uint64_t smem, unsigned barriers,
                    unsigned block) {
  px_occ o = {block, 0, 0, a->max_threads_sm / PX_WARP, 0, 0.0};
  if (block == 0 || block > PX_MAX_BLOCK) {
    o.limits = PX_LIMIT_WARPS;
    return o;
  }
  unsigned warps = (block + PX_WARP - 1) / PX_WARP;
  unsigned lim_warps = o.max_warps / warps;
  /* registers: per warp, then per sub-partition; the hardware also checks
   * a block's registers as if its warps were spread over all four */
  unsigned lim_regs = PX_NO_LIMIT;
  if (regs > PX_MAX_REGS) {
    lim_regs = 0;
  } else if (regs) {
    unsigned per_warp = px_round_up(regs * PX_WARP, PX_REG_UNIT);
    if ((uint64_t)per_warp * px_round_up(warps, PX_SUBPARTITIONS) > a->regs_sm)
      lim_regs = 0;
    else
      lim_regs = a->regs_sm / PX_SUBPARTITIONS / per_warp * PX_SUBPARTITIONS / warps;
  }
  /* shared memory: the driver's reserve per block, in allocation units;
   * the runtime opts in to the largest block allowance */
  unsigned lim_smem = PX_NO_LIMIT;
  uint64_t alloc = px_align_up(smem + a->smem_reserved, a->smem_granularity);
  if (alloc > a->smem_block_optin + a->smem_reserved)
    lim_smem = 0;
  else if (alloc)
    lim_smem = (unsigned)(a->smem_sm / alloc);
  unsigned lim_blocks = a->max_blocks_sm;
  /* sm_90 counts block barriers: two per block slot */
  unsigned lim_bars = a->sm >= 90 && barriers ? a->max_blocks_sm * 2 / barriers : PX_NO_LIMIT;
  unsigned n = lim_warps;
  n = lim_regs < n ? lim_regs : n;
  n = lim_smem < n ? lim_smem : n;
  n = lim_blocks < n ? lim_blocks : n;
  n = lim_bars < n ? lim_bars : n;
  o.limits = (n == lim_warps ? PX_LIMIT_WARPS : 0) | (n == lim_regs ? PX_LIMIT_REGS : 0) |
             (n == lim_smem ? PX_LIMIT_SMEM : 0) | (n == lim_blocks ? PX_LIMIT_BLOCKS : 0) |
             (n == lim_bars ? PX_LIMIT_BARRIERS : 0);
  o.blocks = n;
  o.warps = n * warps;
  o.occupancy = (double)o.warps / o.max_warps;
  return o;
}

px_occ px_best_block(const px_arch *a, unsigned regs, uint64_t smem, unsigned barriers,
                     unsigned max_block) {
  if (max_block == 0 || max_block > PX_MAX_BLOCK)
    max_block = PX_MAX_BLOCK;
  px_occ best = px_occupancy(a, regs, smem, barriers, max_block);
  unsigned best_threads = 0;
  for (unsigned t = px_round_up(max_block, PX_WARP); t > 0; t -= PX_WARP) {
    unsigned size = t < max_block ? t : max_block;
    px_occ o = px_occupancy(a, regs, smem, barriers, size);
    if (size * o.blocks > best_threads) {
      best = o;
      best_threads = size * o.blocks;
    }
    if (best_threads == a->max_threads_sm)
      break;
  }
  return best;
}

/* ---- the report ---- */

static void px_limits(ir_buf *out, unsigned limits) {
  static const char *const names[] = {"warps", "regs", "smem", "blocks", "barriers"};
  bool first = true;
  for (unsigned i = 0; i < 5; i++)
    if (limits & (1u << i)) {
      ir_buf_printf(out, "%s%s", first ? "" : "+", names[i]);
      first = false;
    }
  if (first)
    ir_buf_puts(out, "-");
}

void px_print(const px_module *m, const char *fn, unsigned sm, ir_buf *out) {
  const px_arch *a = px_arch_get(sm);
  for (size_t i = 0; i < m->nfuncs; i++) {
    const px_func *f = &m->funcs[i];
    const px_ptxas *x = &f->ptxas;
    bool px = x->have;
    unsigned regs = px && x->have_regs ? x->regs : f->reg_est;
    uint64_t smem = px ? x->smem : f->smem;
    unsigned bars = px && x->have_barriers ? x->barriers : f->barriers;
    ir_buf_printf(out, "ptx-stats: %s %s", fn, f->name);
    if (px && !x->have_regs)
      ir_buf_puts(out, " regs=-");
    else
      ir_buf_printf(out, " regs=%u", regs);
    ir_buf_printf(out, " regs_live=%u", f->regs_live);
    if (px)
      ir_buf_printf(out, " spill_st=%llu spill_ld=%llu stack=%llu", (unsigned long long)x->spill_st,
                    (unsigned long long)x->spill_ld, (unsigned long long)x->stack);
    else
      ir_buf_printf(out, " spill_st=- spill_ld=- stack=%llu", (unsigned long long)f->local);
    ir_buf_printf(out, " smem=%llu%s", (unsigned long long)smem, f->smem_dyn ? "+dyn" : "");
    if (f->kernel && a) {
      unsigned r = regs > PX_MAX_REGS ? PX_MAX_REGS : regs;
      px_occ o =
          f->block ? px_occupancy(a, r, smem, bars, f->block) : px_best_block(a, r, smem, bars, 0);
      ir_buf_printf(out, " block=%u block_from=%s occupancy=%.3f occ_limit=", o.block,
                    f->block ? "maxntid" : "best", o.occupancy);
      px_limits(out, o.limits);
    } else if (f->block) {
      ir_buf_printf(out, " block=%u block_from=maxntid occupancy=- occ_limit=-", f->block);
    } else {
      ir_buf_puts(out, " block=- block_from=- occupancy=- occ_limit=-");
    }
    const px_counts *l = &f->loop.own, *c = &f->all;
    ir_buf_printf(out, " insts=%u loop=%s", c->insts,
                  f->loop.found && f->loop.label ? f->loop.label
                  : f->loop.found                ? "entry"
                                                 : "-");
    ir_buf_printf(out,
                  " loop_insts=%u loop_ld=%u loop_ld_elems=%u loop_ld_nc=%u loop_ld_gen=%u"
                  " loop_st=%u loop_st_elems=%u loop_st_gen=%u loop_ld_sh=%u loop_st_sh=%u"
                  " loop_fma=%u loop_membar=%u",
                  l->insts, l->ld_global, l->ld_global_elems, l->ld_nc, l->ld_gen, l->st_global,
                  l->st_global_elems, l->st_gen, l->ld_shared, l->st_shared, l->fma, l->membar);
    ir_buf_printf(out,
                  " ld_global=%u ld_nc=%u ld_gen=%u st_global=%u st_gen=%u ld_vec=%u st_vec=%u"
                  " membar=%u atom=%u bar_sync=%u kind=%s source=%s\n",
                  c->ld_global, c->ld_nc, c->ld_gen, c->st_global, c->st_gen, c->ld_vec, c->st_vec,
                  c->membar, c->atom, c->bar_sync, f->kernel ? "kernel" : "func",
                  px ? "ptxas" : "llvm");
  }
}
