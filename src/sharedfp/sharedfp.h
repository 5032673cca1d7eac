/* Shared file pointers: components behind one interface, chosen per file on first use.
 * The shared value S lives in the component's storage (zero until first used); the pointer
 * is base + S in etypes, where base is identical on all ranks and changed only by the
 * collective calls (seek_shared, set_view), so those never touch the storage. */
#ifndef PARIO_SHAREDFP_H
#define PARIO_SHAREDFP_H

#include "core/file.h"

typedef struct pario_sharedfp_component {
  const char *name;
  /* Priority if this component can run for f (higher wins), or -1. */
  int (*query)(pario_file *f);
  /* Attach to (creating if needed, never collectively) the storage of f's pointer. */
  int (*attach)(pario_file *f, void **state);
  /* Atomically S += n; *old receives the previous S. Returns 0 or an errno value. */
  int (*fetch_add)(void *state, MPI_Offset n, MPI_Offset *old);
  /* Release this rank's state. */
  void (*detach)(void *state);
  /* Remove f's storage if it exists (rank 0 at close, after everyone detached). */
  void (*remove)(pario_file *f);
} pario_sharedfp_component;

extern const pario_sharedfp_component pario_sharedfp_sm, pario_sharedfp_lockedfile;

/* Reserve n etypes at the shared pointer; *pos receives where they start (etypes). */
int pario_sharedfp_fetch_add(pario_file *f, const char *op, MPI_Offset n, MPI_Offset *pos);
/* The current shared pointer (etypes). */
int pario_sharedfp_position(pario_file *f, const char *op, MPI_Offset *pos);
/* Collective: make the shared pointer target (etypes). */
int pario_sharedfp_set(pario_file *f, const char *op, MPI_Offset target);
/* At close (collective): release, and on rank 0 remove, the component's storage. */
void pario_sharedfp_close(pario_file *f);
/* The component's name in effect for get_info ("auto" until first use). */
const char *pario_sharedfp_name(const pario_file *f);

#endif
