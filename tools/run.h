/* tools/run.h: arrayc-run's options, shared by its one-process mode
 * (arrayc-run.c) and its distributed mode (dist_run.c, built with MPI). */
#ifndef ARRAYC_TOOLS_RUN_H
#define ARRAYC_TOOLS_RUN_H

#include "arrayc/arrayc.h"

typedef struct run_options {
  ac_backend backend;
  const char *file, *fn;
  const char **args; /* positional ARGs after FILE */
  size_t nargs;
  const char **outs;
  size_t nouts;
  long repeat;
  bool stats;
  bool profile;
  bool quiet;         /* -w */
  bool cast;          /* --cast: convert arguments of another type where safe */
  bool distributed;   /* --distributed: over the MPI ranks (dist_run.c) */
  const char *batch;  /* --batch FILE: the calls of FILE, one per line */
  const char *passes; /* NULL: each backend's default */
} run_options;

/* Empty options with room for argc words of each kind; false when memory
 * runs out. Free with run_options_free. */
bool run_options_init(run_options *o, int argc);
void run_options_free(run_options *o);
/* Reads argv (tools/opts.c's parser) into o. Returns 0 to go on, otherwise
 * the exit status (-1: --help or --version, exit 0); prints the reason. */
int run_parse_options(int argc, char **argv, run_options *o);

/* Writes a result leaf to a .npy file (a scalar as a 0-d array); prints
 * the reason and returns false on failure. */
bool run_write_result(const ac_datum *d, const char *path);

/* --distributed (dist_run.c): initialises MPI, runs the call of o (or each
 * of o->batch's) over the ranks and finalises MPI; returns the exit status,
 * the same on every rank. */
int run_distributed(int *argc, char ***argv, const run_options *o);

#endif
