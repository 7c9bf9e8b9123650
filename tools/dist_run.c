/* tools/dist_run.c: arrayc-run --distributed, a call over MPI ranks.
 *
 *   mpirun -np N arrayc-run --distributed FILE.ac --fn NAME [ARG ...] [-o OUT.npy ...]
 *   mpirun -np N arrayc-run --distributed --batch CALLS
 *
 * Every rank loads the module and prepares the function on its local
 * backend (libarrayc_dist, docs/distributed.md). A scalar argument is the
 * same on every rank; an array argument is distributed by rows: a literal
 * is parsed on every rank and each keeps its block, a .npy file is read by
 * each rank at its own offset (the header, then only the block's rows; a
 * Fortran-order file of two or more non-unit dimensions is read whole).
 * Results are collected to rank 0, which alone prints them (or writes
 * them, -o). Ranks other than 0 write nothing to stderr: every error is
 * agreed on by all ranks (the lowest failing rank's message is printed by
 * rank 0) and every rank exits with the same status.
 *
 * --batch runs the calls that CALLS lists, one per line (arrayc-run's
 * arguments without --distributed, quoted as in a shell; blank lines and
 * lines starting with # are skipped) in one launch, each preceded on
 * standard output by a line "=== N" (N: the line number) and followed,
 * when it failed, by "error: exit S": how the differential tests avoid
 * starting mpirun once per call.
 */
#include "args.h"
#include "npy.h"
#include "run.h"
#include "toolutil.h"

#include "arrayc/dist.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PROG "arrayc-run"
#define MSG_SIZE 1024

/* The lowest failing rank's message is printed (by rank 0) and every rank
 * gets the largest status: the tool's errors are collective. */
static int agree(int rc, const char *msg) {
  int me, size, first, mine;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  mine = rc ? me : size;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (first == size)
    return 0;
  char buf[MSG_SIZE] = "";
  if (me == first && msg)
    snprintf(buf, sizeof buf, "%s", msg);
  MPI_Bcast(buf, sizeof buf, MPI_CHAR, first, MPI_COMM_WORLD);
  if (me == 0 && buf[0])
    fprintf(stderr, PROG ": %s\n", buf);
  int worst;
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return worst;
}

/* A library error, the same on every rank: printed once. */
static int lib_error(ac_dist_runtime *rt, ac_error *e) {
  if (ac_dist_runtime_rank(rt) == 0)
    tool_print_error(e);
  ac_error_destroy(e);
  return 1;
}

/* ---- arguments ---- */

/* One argument leaf before it is distributed: a scalar, a full array
 * (every rank has it) or this rank's block of rows. */
typedef struct leaf {
  ac_datum d;
  bool block;
} leaf;

/* Reads this rank's rows of the .npy file `path` into l (the whole file
 * when the block cannot be read alone: a scalar, a dtype or rank that
 * val_from_npy will reject with its message, Fortran order). */
static bool read_npy(ac_context *ctx, ac_dist_runtime *rt, const char *path, ac_scalar type,
                     unsigned rank, bool cast, leaf *l, char *msg, size_t msgsize) {
  FILE *fp = fopen(path, "rb");
  if (!fp)
    return tool_fail(msg, msgsize, "cannot read %s", path);
  unsigned char head[12];
  size_t n = fread(head, 1, sizeof head, fp);
  size_t hlen =
      n < 10 ? 0
      : head[6] == 1
          ? 10 + (head[8] | (size_t)head[9] << 8)
          : 12 + (head[8] | (size_t)head[9] << 8 | (size_t)head[10] << 16 | (size_t)head[11] << 24);
  unsigned char *hbuf = malloc(hlen ? hlen : 1);
  npy_info info;
  size_t at = 0;
  bool whole = !hbuf || hlen == 0 || fseek(fp, 0, SEEK_SET) != 0 ||
               fread(hbuf, 1, hlen, fp) != hlen ||
               !npy_parse_header(hbuf, hlen, &info, &at, msg, msgsize) || !info.known ||
               info.rank != rank || rank == 0 || info.fortran;
  bool ok;
  if (whole) {
    fclose(fp);
    free(hbuf);
    size_t len;
    char *buf = tool_read_file(PROG, path, &len);
    if (!buf)
      return tool_fail(msg, msgsize, "cannot read %s", path);
    ok = val_from_npy(ctx, (const unsigned char *)buf, len, type, rank, cast, &l->d, msg, msgsize);
    free(buf);
    return ok;
  }
  size_t esize = ac_scalar_size(info.type), row = esize;
  for (unsigned d = 1; d < info.rank; d++)
    row *= (size_t)info.extents[d]; /* the count fitted: so does each product */
  int64_t lo, hi;
  ac_dist_partition(info.extents[0], ac_dist_runtime_size(rt), ac_dist_runtime_rank(rt), &lo, &hi);
  size_t bytes = (size_t)(hi - lo) * row;
  unsigned char *data = malloc(bytes ? bytes : 1);
  long end = -1;
  ok = data && fseek(fp, 0, SEEK_END) == 0 && (end = ftell(fp)) >= 0;
  if (ok && (size_t)end - at != info.nbytes)
    ok = tool_fail(msg, msgsize, "the shape needs %zu bytes of data but the file has %zu",
                   info.nbytes, (size_t)end - at);
  else if (!ok || fseek(fp, (long)(at + (size_t)lo * row), SEEK_SET) != 0 ||
           fread(data, 1, bytes, fp) != bytes)
    ok = tool_fail(msg, msgsize, "cannot read %s", path);
  fclose(fp);
  free(hbuf);
  if (ok && info.type == AC_BOOL)
    for (size_t i = 0; i < bytes && ok; i++)
      if (data[i] > 1)
        ok = tool_fail(msg, msgsize, "bool element %zu is %u, not 0 or 1", (size_t)lo * row + i,
                       data[i]);
  if (ok) {
    info.extents[0] = hi - lo;
    info.count = (int64_t)(bytes / esize);
    info.nbytes = bytes;
    info.data = data;
    l->block = true;
    ok = val_from_npy_info(ctx, &info, type, rank, cast, &l->d, msg, msgsize);
  }
  free(data);
  return ok;
}

/* Leaf i's value on this rank (no communication). */
static bool convert(ac_context *ctx, ac_dist_runtime *rt, ac_function *f, size_t i,
                    const char *text, bool cast, leaf *l, char *msg, size_t msgsize) {
  ac_scalar t;
  unsigned r;
  ac_function_arg_info(f, i, &t, &r);
  char why[MSG_SIZE - 64];
  bool ok = text[0] == '@' ? read_npy(ctx, rt, text + 1, t, r, cast, l, why, sizeof why)
                           : val_parse_literal(ctx, text, t, r, cast, &l->d, why, sizeof why);
  if (!ok && text[0] == '@' && strncmp(why, "cannot read", 11) != 0)
    snprintf(msg, msgsize, "argument %zu (%s): %s: %s", i + 1, ac_function_arg_name(f, i), text + 1,
             why);
  else if (!ok)
    snprintf(msg, msgsize, "argument %zu (%s): %s", i + 1, ac_function_arg_name(f, i), why);
  return ok;
}

/* The distributed arguments: every rank converts its leaves, all agree,
 * then the arrays are distributed (collectively). Returns the status. */
static int make_args(ac_context *ctx, ac_dist_runtime *rt, ac_function *f, const run_options *o,
                     ac_dist_datum *args) {
  size_t n = ac_function_num_args(f);
  leaf *l = calloc(n ? n : 1, sizeof *l);
  char msg[MSG_SIZE] = "";
  int rc = l ? 0 : 1;
  if (!l)
    snprintf(msg, sizeof msg, "out of memory");
  for (size_t i = 0; rc == 0 && i < n; i++)
    if (!convert(ctx, rt, f, i, o->args[i], o->cast, &l[i], msg, sizeof msg))
      rc = 1;
  rc = agree(rc, msg);
  for (size_t i = 0; rc == 0 && i < n; i++) {
    ac_error *e = NULL;
    ac_status st = AC_OK;
    if (l[i].d.kind == AC_DATUM_SCALAR) {
      args[i] = (ac_dist_datum){AC_DIST_SCALAR, l[i].d, NULL};
      continue;
    }
    args[i].kind = AC_DIST_DISTRIBUTED;
    st = l[i].block ? ac_dist_array_from_block(rt, l[i].d.array, &args[i].dist, &e)
                    : ac_dist_array_from_full(rt, l[i].d.array, &args[i].dist, &e);
    if (st != AC_OK)
      rc = lib_error(rt, e);
  }
  for (size_t i = 0; l && i < n; i++)
    ac_datum_release(&l[i].d);
  free(l);
  return rc;
}

/* ---- one call ---- */

/* Prints or writes (rank 0) result i; arrays are gathered to rank 0. */
static int report(ac_dist_runtime *rt, const run_options *o, size_t i, const ac_dist_datum *r) {
  bool root = ac_dist_runtime_rank(rt) == 0;
  ac_datum d = r->local;
  ac_array *full = NULL;
  if (r->kind == AC_DIST_DISTRIBUTED) {
    ac_error *e = NULL;
    if (ac_dist_array_gather(rt, r->dist, 0, &full, &e) != AC_OK)
      return lib_error(rt, e);
    d = (ac_datum){AC_DATUM_ARRAY, ac_dist_array_type(r->dist), {0}, full};
  }
  int rc = 0;
  if (root) {
    if (o->nouts)
      rc = run_write_result(&d, o->outs[i]) ? 0 : 1;
    else
      val_print(stdout, &d);
  }
  ac_array_release(full);
  return agree(rc, NULL);
}

static int call(ac_context *ctx, ac_dist_runtime *rt, ac_module *m, const run_options *o) {
  ac_error *e = NULL;
  ac_dist_function *df = NULL;
  if (ac_dist_function_create(rt, m, o->fn, &df, &e) != AC_OK)
    return lib_error(rt, e);
  ac_function *f = ac_dist_function_local(df);
  size_t nargs = ac_function_num_args(f), nres = ac_function_num_results(f);
  int rc = 0;
  char msg[MSG_SIZE] = "";
  if (o->nargs != nargs) {
    snprintf(msg, sizeof msg, "%s takes %zu argument%s, got %zu", o->fn, nargs,
             nargs == 1 ? "" : "s", o->nargs);
    rc = 1;
  } else if (o->nouts && o->nouts != nres) {
    snprintf(msg, sizeof msg, "%s has %zu result%s but %zu -o options were given", o->fn, nres,
             nres == 1 ? "" : "s", o->nouts);
    rc = 2;
  }
  ac_dist_datum *args = calloc(nargs ? nargs : 1, sizeof *args);
  ac_dist_datum *res = calloc(nres ? nres : 1, sizeof *res);
  if (rc == 0 && (!args || !res)) {
    snprintf(msg, sizeof msg, "out of memory");
    rc = 1;
  }
  rc = agree(rc, msg);
  if (rc == 0)
    rc = make_args(ctx, rt, f, o, args);
  bool have = false;
  if (rc == 0) {
    if (ac_dist_function_call(df, args, nargs, res, nres, &e) != AC_OK)
      rc = lib_error(rt, e);
    else
      have = true;
  }
  for (size_t i = 0; rc == 0 && i < nres; i++)
    rc = report(rt, o, i, &res[i]);
  if (ac_dist_runtime_rank(rt) == 0)
    fflush(stdout);
  for (size_t i = 0; args && i < nargs; i++)
    ac_dist_datum_release(&args[i]);
  for (size_t i = 0; have && i < nres; i++)
    ac_dist_datum_release(&res[i]);
  free(args);
  free(res);
  ac_dist_function_destroy(df);
  return rc;
}

/* Loads the module (the same text on every rank: its diagnostics are
 * rank 0's) and makes the call. */
static int run_one(ac_context *ctx, ac_dist_runtime *rt, const run_options *o) {
  ac_module *m = tool_load_module(PROG, ctx, o->file);
  int rc = agree(m ? 0 : 1, NULL);
  if (rc == 0 && o->passes) {
    ac_error *e = NULL;
    if (ac_module_run_passes(m, o->passes, &e) != AC_OK) {
      rc = ac_dist_runtime_rank(rt) == 0 ? (tool_print_error(e), 1) : 1;
      ac_error_destroy(e);
    }
    rc = agree(rc, NULL);
  }
  if (rc == 0)
    rc = agree(tool_has_function(PROG, m, o->fn) ? 0 : 1, NULL);
  if (rc == 0)
    rc = call(ctx, rt, m, o);
  if (m)
    ac_module_destroy(m);
  return rc;
}

/* ---- --batch ---- */

/* Splits line into words in place, as a shell would for quoting: '...'
 * literally, "..." with \" and \\, a backslash elsewhere escaping the next
 * character. Returns the number of words (at most max), or -1 for an
 * unterminated quote. */
static int split_words(char *line, char **words, int max) {
  int n = 0;
  char *r = line, *w = line;
  while (*r) {
    while (*r == ' ' || *r == '\t')
      r++;
    if (!*r)
      break;
    if (n == max)
      return -1;
    words[n++] = w;
    while (*r && *r != ' ' && *r != '\t') {
      if (*r == '\'') {
        char *q = strchr(r + 1, '\'');
        if (!q)
          return -1;
        memmove(w, r + 1, (size_t)(q - r - 1));
        w += q - r - 1;
        r = q + 1;
      } else if (*r == '"') {
        for (r++; *r && *r != '"'; r++) {
          if (*r == '\\' && (r[1] == '"' || r[1] == '\\'))
            r++;
          *w++ = *r;
        }
        if (*r != '"')
          return -1;
        r++;
      } else {
        if (*r == '\\' && r[1])
          r++;
        *w++ = *r++;
      }
    }
    char *end = w;
    if (*r)
      r++;
    *end = 0;
    w = r;
  }
  return n;
}

static int run_batch(ac_context *ctx, ac_dist_runtime *rt, const char *path) {
  size_t len = 0;
  char *text = tool_read_file(PROG, path, &len);
  int rc = agree(text ? 0 : 1, NULL), worst = 0;
  bool root = ac_dist_runtime_rank(rt) == 0;
  char *line = text;
  for (unsigned no = 1; rc == 0 && line && *line; no++) {
    char *nl = strchr(line, '\n');
    if (nl)
      *nl = 0;
    char *words[512];
    words[0] = PROG;
    int n = split_words(line, words + 1, 510);
    if (n == 0 || (n > 0 && words[1][0] == '#')) {
      line = nl ? nl + 1 : NULL;
      continue;
    }
    if (root)
      printf("=== %u\n", no);
    int one;
    run_options o;
    if (n < 0) {
      if (root)
        fprintf(stderr, PROG ": %s:%u: unterminated quote or too many words\n", path, no);
      one = 2;
    } else if (!run_options_init(&o, n + 1)) {
      one = 1;
    } else {
      words[n + 1] = NULL;
      one = run_parse_options(n + 1, words, &o);
      if (one == 0 && (o.distributed || o.batch || o.repeat > 1 || o.stats || o.profile)) {
        if (root)
          fprintf(stderr,
                  PROG ": %s:%u: a batch line takes no --distributed, --batch, --repeat, "
                       "--stats or --profile\n",
                  path, no);
        one = 2;
      }
      if (one == 0)
        one = run_one(ctx, rt, &o);
      run_options_free(&o);
    }
    one = agree(one, NULL);
    if (root) {
      if (one)
        printf("error: exit %d\n", one);
      fflush(stdout);
      fflush(stderr);
    }
    worst = one > worst ? one : worst;
    line = nl ? nl + 1 : NULL;
  }
  free(text);
  return rc ? rc : worst;
}

int run_distributed(int *argc, char ***argv, const run_options *o) {
  MPI_Init(argc, argv);
  int me;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  if (me != 0) { /* errors are agreed and printed once, by rank 0 */
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0) {
      dup2(null, 2);
      close(null);
    }
  }
  int rc = 0;
  ac_context *ctx = ac_context_create();
  rc = agree(ctx ? 0 : 1, "out of memory");
  ac_dist_runtime *rt = NULL;
  if (rc == 0) {
    tool_warnings(ctx, o->quiet);
    ac_error *e = NULL;
    if (ac_dist_runtime_create(ctx, MPI_COMM_WORLD, o->backend, &rt, &e) != AC_OK) {
      if (me == 0)
        tool_print_error(e);
      ac_error_destroy(e);
      rc = 1;
    }
  }
  if (rc == 0)
    rc = o->batch ? run_batch(ctx, rt, o->batch) : run_one(ctx, rt, o);
  ac_dist_runtime_destroy(rt);
  if (ctx)
    ac_context_destroy(ctx);
  MPI_Finalize();
  return rc;
}
