/* STUB: replaced by the arrayc-run tool. */
#include <stdio.h>
int main(void) { fprintf(stderr, "arrayc-run: not built yet\n"); return 2; }
