/* The unit tests' CHECK: counts checks, prints each failure with its place and goes on;
 * a test's main returns failures != 0. */
#ifndef PARIO_UNIT_CHECK_H
#define PARIO_UNIT_CHECK_H

#include <stdio.h>

static int failures, checks;
#define CHECK(cond, ...)                          \
  do {                                            \
    checks++;                                     \
    if (!(cond)) {                                \
      failures++;                                 \
      printf("FAIL %s:%d: ", __FILE__, __LINE__); \
      printf(__VA_ARGS__);                        \
      printf("\n");                               \
    }                                             \
  } while (0)

#endif
