/* test/docs/check_snippets.py's wrapper for rows quoted from
 * include/arrayc/ops.def (architecture.md §4.1): the first row is the
 * table's column header, every other one must be a row of the table as it
 * is (the preprocessor spells both with the same spacing). */
#include <stdio.h>
#include <string.h>

#define AC_OP(...) #__VA_ARGS__,
static const char *const quoted[] = {
    /* @SNIPPET@ */
};
static const char *const table[] = {
#include <arrayc/ops.def>
};
#undef AC_OP

int main(void) {
  int bad = 0;
  for (size_t i = 1; i < sizeof quoted / sizeof *quoted; i++) {
    size_t j = 0;
    while (j < sizeof table / sizeof *table && strcmp(quoted[i], table[j]) != 0)
      j++;
    if (j == sizeof table / sizeof *table) {
      printf("not a row of ops.def: AC_OP(%s)\n", quoted[i]);
      bad = 1;
    }
  }
  return bad;
}
