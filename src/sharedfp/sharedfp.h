/* Shared file pointers: components behind one interface, chosen per file. The shared value S
 * lives in the component's storage (zero until first used); the pointer is base + S in
 * etypes, where base is identical on all ranks and changed only by the collective calls
 * (seek_shared, set_view), so those never touch the storage. The layer's per-file state
 * (component, its state, base) hangs off the file through core's lifecycle hooks. */
#ifndef PARIO_SHAREDFP_H
#define PARIO_SHAREDFP_H

#include "core/file.h"

typedef struct pario_sharedfp_component {
  const char *name;
  /* Priority if this component can run for f (higher wins), or -1. */
  int (*query)(pario_file *f);
  /* Lazy components: attach to (creating if needed, never collectively) f's storage on first
   * use. Components whose storage needs every rank (rma, addproc) have setup instead: it is
   * collective and runs inside MPI_File_open (see select.c for when). One of the two is set. */
  int (*attach)(pario_file *f, void **state);
  int (*setup)(pario_file *f, void **state);
  /* Atomically S[slot] += n; *old receives the previous S[slot]. Returns 0 or an errno value.
   * S is PARIO_VDEF_SLOTS counters, each zero until first used (core/file.h pario_vdefer.slot:
   * a deferred set_view moves every rank to the next one). Components set up at open (rma,
   * addproc) and the individual one vote at every settle, so set_view never defers on their
   * files and their slot is always 0: they keep one counter. */
  int (*fetch_add)(void *state, int slot, MPI_Offset n, MPI_Offset *old);
  /* Optional, collective: the ordered-call reservation done by the component itself (sm,
   * through its shared segment). *before receives the etypes of the ranks below this one,
   * *old the S[slot] before the call; S[slot] advances once by the total. NULL: MPI_Exscan +
   * one fetch_add + MPI_Bcast in select.c. */
  int (*ordered)(void *state, int slot, MPI_Offset n, MPI_Offset *before, MPI_Offset *old);
  /* Release this rank's state (collective for components with setup). */
  void (*detach)(void *state);
  /* Remove f's storage if it exists (rank 0 at close, after everyone detached); may be NULL. */
  void (*remove)(pario_file *f);
  /* Deferring components (individual): S is a replica on every rank, equal after each merge.
   * write keeps a shared-pointer write of n etypes (bytes of packed data) for later; merge
   * (collective) places every kept write in the file and advances S on all ranks. Reads are
   * refused. NULL for the others. */
  int (*write)(pario_file *f, void *state, const char *op, const void *buf, MPI_Count count,
               MPI_Datatype type, MPI_Offset n);
  int (*merge)(pario_file *f, void *state, const char *op, MPI_Offset base);
  /* Optional: keys the component reports through MPI_File_get_info beside its name. */
  void (*get_info)(void *state, MPI_Info info);
  int forced_only; /* never chosen by auto, only when pario_sharedfp names it */
} pario_sharedfp_component;

extern const pario_sharedfp_component pario_sharedfp_sm, pario_sharedfp_rma, pario_sharedfp_addproc,
    pario_sharedfp_lockedfile, pario_sharedfp_individual, pario_sharedfp_server;

/* Checks that a shared-pointer access of kind rw can run (reads are refused where the
 * component is write-only). */
int pario_sharedfp_check(pario_file *f, const char *op, int rw);
/* 1 when shared-pointer writes of f are deferred (the component has a write hook). */
int pario_sharedfp_defers(pario_file *f);
/* A deferred shared-pointer write (see write above). */
int pario_sharedfp_write(pario_file *f, const char *op, const void *buf, MPI_Count count,
                         MPI_Datatype type, MPI_Offset n);
/* Collective merge point (sync, close, seek_shared, set_view, ordered calls): deferred
 * writes reach the file. No communication unless the component defers writes. */
int pario_sharedfp_merge(pario_file *f, const char *op);
/* Reserve n etypes at the shared pointer; *pos receives where they start (etypes). */
int pario_sharedfp_fetch_add(pario_file *f, const char *op, MPI_Offset n, MPI_Offset *pos);
/* Collective: reserve n etypes per rank in rank order; *pos receives this rank's start. */
int pario_sharedfp_ordered(pario_file *f, const char *op, MPI_Offset n, MPI_Offset *pos);
/* The current shared pointer (etypes). */
int pario_sharedfp_position(pario_file *f, const char *op, MPI_Offset *pos);
/* Collective: make the shared pointer target (etypes). */
int pario_sharedfp_set(pario_file *f, const char *op, MPI_Offset target);
/* "<dir>/.<name>.pario-sfp-<uid><suffix>": hidden storage beside the data file. */
void pario_sharedfp_hidden_path(const pario_file *f, const char *suffix, char *buf, size_t n);
/* 1 when the file's ranks span several nodes of the MPI but one kernel (MPICH's cliques), as
 * found at open: POSIX shared memory reaches every rank. */
int pario_sharedfp_one_kernel(const pario_file *f);

#endif
