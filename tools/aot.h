/* tools/aot.h: arrayc's ahead-of-time output (PREFIX.o/.so/.ptx plus
 * PREFIX.h; docs/tools.md and docs/runtime.md, "Ahead of time"). */
#ifndef ARRAYC_TOOLS_AOT_H
#define ARRAYC_TOOLS_AOT_H

#include "arrayc/arrayc.h"

typedef struct aot_opts {
  const char *out;    /* the output path without extension: DIR/PREFIX */
  const char *fn;     /* only this function, or NULL: every function with a body */
  bool gpu;           /* PTX for sm, else a host object */
  unsigned sm;
  const char *cpu;    /* host object: LLVM CPU name (NULL: this host's; "generic") */
  bool shared;        /* link PREFIX.so instead of writing PREFIX.o */
  const char *passes; /* the optimisation pipeline */
  bool emit_code, emit_header, emit_plan, emit_llvm;
  bool emit_manifest; /* PREFIX.json (--emit=manifest; not by default) */
} aot_opts;

/* Writes the files o asks for; returns the exit status (0, or 1 after
 * printing why). */
int aot_main(const aot_opts *o, ac_context *ctx, ac_module *m);

/* The triple and CPU name a host object is made for (cpu NULL: this
 * host's CPU), for the bundle and the header. */
void aot_host_target(char *triple, size_t tsize, const char *cpu, char *cpu_out, size_t csize);

#endif
