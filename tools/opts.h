/* tools/opts.h: the one command-line option parser of arrayc, arrayc-opt
 * and arrayc-run.
 *
 * Each tool describes its options in a table of tool_opt and takes them
 * one at a time from tool_opts_next, with the words that are not options
 * (files, function arguments). Spellings:
 *   --name              TOOL_FLAG
 *   --name=VALUE, --name VALUE, -x VALUE
 *                       TOOL_VALUE
 *   --name, --name=VALUE
 *                       TOOL_OPTIONAL (the value only after '=')
 *   -O2                 TOOL_GLUED (the value in the same word)
 *   --                  everything after it is a word
 * Every tool also knows -h/--help and --version, which the parser answers
 * itself (the tool's usage, tool_print_version) before returning TOOL_EXIT,
 * and the compile options -O0..-O3, --passes=LIST and -w when its table
 * lists TOOL_COMPILE_OPTS (tool_compile_opt sets them).
 *
 * A mistake prints one line, worded the same in every tool, naming the
 * option meant when one is close (ir_closest), and returns TOOL_ERROR (the
 * tool then exits with status 2):
 *   arrayc-run: unknown option '--bakend' (did you mean '--backend'?); try 'arrayc-run --help'
 *   arrayc-run: option '--fn' needs a value; try 'arrayc-run --help'
 * tool_usage_error writes the tool's own usage errors the same way.
 */
#ifndef ARRAYC_TOOLS_OPTS_H
#define ARRAYC_TOOLS_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

typedef enum tool_arg { TOOL_FLAG, TOOL_VALUE, TOOL_OPTIONAL, TOOL_GLUED } tool_arg;

typedef struct tool_opt {
  const char *name; /* "--backend", "-o", "-O" (glued) */
  int id;           /* >= 0, the tool's own */
  tool_arg arg;
} tool_opt;

/* What tool_opts_next returns besides an option's id. */
enum {
  TOOL_END = -1,   /* no more words */
  TOOL_ERROR = -2, /* a mistake, reported */
  TOOL_WORD = -3,  /* a word that is not an option, in *val */
  TOOL_EXIT = -4,  /* -h, --help or --version, answered: exit 0 */
};

/* The compile options' ids and table entries. */
enum { TOOL_OPT_LEVEL = 1000, TOOL_OPT_PASSES, TOOL_OPT_NOWARN };
#define TOOL_COMPILE_OPTS                                                                          \
  {"-O", TOOL_OPT_LEVEL, TOOL_GLUED}, {"--passes", TOOL_OPT_PASSES, TOOL_VALUE}, {                 \
    "-w", TOOL_OPT_NOWARN, TOOL_FLAG                                                               \
  }

typedef struct tool_opts {
  const char *prog;
  void (*usage)(FILE *f); /* the tool's --help text */
  const tool_opt *opts;
  size_t nopts;
  int argc;
  char **argv;
  int i;
  bool words_only; /* after "--" */
  /* A word beginning with '-' that is a word, not an option (arrayc-run's
   * negative numbers, and "-" for standard input always); NULL: only "-". */
  bool (*is_word)(const char *a);
} tool_opts;

void tool_opts_init(tool_opts *P, const char *prog, void (*usage)(FILE *f), const tool_opt *opts,
                    size_t nopts, int argc, char **argv);
/* The next option's id (and *val its value, or NULL), TOOL_WORD (*val the
 * word), TOOL_EXIT, TOOL_END or TOOL_ERROR. */
int tool_opts_next(tool_opts *P, const char **val);
/* The input file of a tool that takes one: *file = word, or false (reported)
 * when *file is set already. */
bool tool_opts_file(const tool_opts *P, const char **file, const char *word);

/* For TOOL_OPT_LEVEL, TOOL_OPT_PASSES and TOOL_OPT_NOWARN: sets *passes
 * ("O0".."O3" for -O0..-O3) or *quiet; false (reported) for an unknown
 * level. */
bool tool_compile_opt(const char *prog, int id, const char *val, const char **passes, bool *quiet);

/* "PROG: MESSAGE; try 'PROG --help'" on stderr. */
void tool_usage_error(const char *prog, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#endif
