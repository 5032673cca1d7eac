/* Registry of open pario files: validates handles without dereferencing them (a stale or
 * garbage handle gives MPI_ERR_FILE, never a crash) and maps Fortran integer handles. */
#include "core/file.h"

#include <stdint.h>
#include <stdlib.h>

static pthread_rwlock_t reg_lock = PTHREAD_RWLOCK_INITIALIZER;
static pario_file **by_fint; /* by_fint[i] is the file with Fortran handle i; 0 is FILE_NULL */
static int nfint = 1, capfint;
static pario_file **set;     /* open-addressing set of live file pointers */
static size_t setcap, setused;
#define TOMB ((pario_file *)(uintptr_t)1)

static size_t slot_of(const pario_file *f, size_t cap) {
  uintptr_t x = (uintptr_t)f;
  x ^= x >> 17;
  x *= 0x9E3779B97F4A7C15ULL;
  return (size_t)(x >> 7) & (cap - 1);
}

static int set_insert(pario_file *f) {
  if ((setused + 1) * 2 > setcap) {
    size_t cap = setcap ? setcap * 2 : 64;
    pario_file **n = calloc(cap, sizeof *n);
    if (!n) return MPI_ERR_NO_MEM;
    for (size_t i = 0; i < setcap; i++)
      if (set[i] && set[i] != TOMB) {
        size_t s = slot_of(set[i], cap);
        while (n[s]) s = (s + 1) & (cap - 1);
        n[s] = set[i];
      }
    free(set);
    set = n;
    setcap = cap;
    setused = 0;
    for (size_t i = 0; i < cap; i++) setused += set[i] != NULL;
  }
  size_t s = slot_of(f, setcap);
  while (set[s] && set[s] != TOMB) s = (s + 1) & (setcap - 1);
  if (!set[s]) setused++;
  set[s] = f;
  return MPI_SUCCESS;
}

static long set_find(const pario_file *f) {
  if (!setcap) return -1;
  for (size_t s = slot_of(f, setcap), n = 0; set[s] && n < setcap; s = (s + 1) & (setcap - 1), n++)
    if (set[s] == f) return (long)s;
  return -1;
}

int pario_registry_add(pario_file *f) {
  pthread_rwlock_wrlock(&reg_lock);
  int rc = set_insert(f);
  if (rc == MPI_SUCCESS) {
    int i;
    for (i = 1; i < nfint && by_fint[i]; i++) {}
    if (i == nfint) {
      if (nfint >= capfint) {
        int cap = capfint ? capfint * 2 : 16;
        pario_file **n = realloc(by_fint, sizeof *n * (size_t)cap);
        if (!n) rc = MPI_ERR_NO_MEM;
        else by_fint = n, capfint = cap;
      }
      if (rc == MPI_SUCCESS) by_fint[nfint++] = NULL;
    }
    if (rc == MPI_SUCCESS) {
      by_fint[i] = f;
      f->fint = i;
    }
  }
  pthread_rwlock_unlock(&reg_lock);
  return rc;
}

void pario_registry_remove(pario_file *f) {
  pthread_rwlock_wrlock(&reg_lock);
  long s = set_find(f);
  if (s >= 0) set[s] = TOMB;
  if (f->fint > 0 && f->fint < nfint && by_fint[f->fint] == f) by_fint[f->fint] = NULL;
  pthread_rwlock_unlock(&reg_lock);
}

int pario_registry_valid(MPI_File fh) {
  pthread_rwlock_rdlock(&reg_lock);
  int ok = set_find(pario_file_of(fh)) >= 0;
  pthread_rwlock_unlock(&reg_lock);
  return ok;
}

MPI_File pario_registry_f2c(int fint) {
  MPI_File fh = MPI_FILE_NULL;
  pthread_rwlock_rdlock(&reg_lock);
  if (fint > 0 && fint < nfint && by_fint[fint]) fh = pario_handle(by_fint[fint]);
  pthread_rwlock_unlock(&reg_lock);
  return fh;
}

int pario_file_check(MPI_File fh, const char *op, pario_file **out) {
  *out = NULL;
  if (fh == MPI_FILE_NULL || !pario_registry_valid(fh))
    return pario_file_error(MPI_FILE_NULL,
                            pario_err(MPI_ERR_FILE, op, NULL, 0, "invalid file handle%s",
                                      fh == MPI_FILE_NULL ? " (MPI_FILE_NULL)" : ""));
  *out = pario_file_of(fh);
  return MPI_SUCCESS;
}

int pario_file_check_out(MPI_File fh, const char *op, const void *out, pario_file **f) {
  int rc = pario_file_check(fh, op, f);
  if (rc == MPI_SUCCESS && !out)
    rc = pario_file_error(fh, pario_err(MPI_ERR_ARG, op, (*f)->filename, 0, "null output argument"));
  return rc;
}
