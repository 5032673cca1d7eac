/* Which driver serves a file name: drivers register the name prefixes they serve (from
 * constructors, so the table is complete before main and read without locks after). */
#include "driver/driver.h"

#include <string.h>

enum { MAXPREFIX = 16 };
static struct {
  const char *prefix;
  const pario_driver *drv;
} table[MAXPREFIX];
static int nprefix;

void pario_driver_register(const char *prefix, const pario_driver *drv) {
  if (nprefix < MAXPREFIX) table[nprefix].prefix = prefix, table[nprefix++].drv = drv;
}

const pario_driver *pario_driver_for(const char *filename, const char **path_out) {
  for (int i = 0; i < nprefix; i++) {
    size_t n = strlen(table[i].prefix);
    if (strncmp(filename, table[i].prefix, n) == 0) {
      *path_out = filename + n;
      return table[i].drv;
    }
  }
  *path_out = filename;
  return &pario_driver_posix;
}

int pario_driver_hint_key(const char *key) {
  for (int i = 0; i < nprefix; i++) {
    const char *hp = table[i].drv->hint_prefix;
    if (hp && strncmp(key, hp, strlen(hp)) == 0) return 1;
  }
  return 0;
}
