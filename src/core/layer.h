/* Lifecycle hooks: the layers above core (async engine, collective, shared file pointers, and
 * later tracing and remote drivers) register a table of hooks that core calls at open,
 * set_view, set_info, set_atomicity, sync, close and MPI_Finalize, so core's protocols never
 * name an upper layer. Each layer keeps its per-file state behind one opaque pointer it owns.
 * docs/design.md ("Lifecycle hooks") gives the order and why. */
#ifndef PARIO_LAYER_H
#define PARIO_LAYER_H

#include "core/common.h"

struct pario_file;

/* Slots, in the order core walks them at open, set_view, quiesce, set_info, sync and close,
 * and in reverse at release and finalize. A layer's slot is its place in that order: trace
 * first (it sees every other layer's work), then the engine (it drains operations in flight
 * before anything they use changes), then the collective layer, then shared file pointers
 * (their kept writes go to the file after the engine drained), then driver-side layers
 * (remote I/O: flushed last, after every write above reached the driver). */
enum { PARIO_SLOT_TRACE, PARIO_SLOT_ASYNC, PARIO_SLOT_COLL, PARIO_SLOT_SHAREDFP, PARIO_SLOT_DRIVER, PARIO_SLOTS };

typedef struct pario_layer {
  const char *name;
  /* Collective, at the end of MPI_File_open, after the file is open on every rank with the
   * agreed hints. May set *state. An error fails the open on every rank (core agrees). */
  int (*open)(struct pario_file *f, void **state);
  /* set_view's one agreement among ranks carries a value from each layer (the maximum over
   * ranks is handed to set_view below), so a layer that needs to know something of every
   * rank costs no collective of its own. Optional; a layer without it gets 0. */
  long long (*view_vote)(struct pario_file *f, void *state);
  /* Collective, inside set_view after the ranks agreed on the arguments, before the new
   * view is installed; vote is the maximum of view_vote over ranks. *disp may be
   * MPI_DISPLACEMENT_CURRENT: the layer that owns the shared pointer resolves it. */
  int (*set_view)(struct pario_file *f, void *state, const char *op, MPI_Offset *disp, long long vote);
  /* Collective, before set_info, set_view (with info) or set_atomicity changes hints or
   * atomic mode: operations still in flight must not see the change (the engine drains). */
  void (*quiesce)(struct pario_file *f, void *state);
  /* After new hints are in effect (set_info, set_view with info). */
  void (*set_info)(struct pario_file *f, void *state);
  /* MPI_File_get_info: add the keys this layer reports (the component in use, a server). */
  void (*get_info)(struct pario_file *f, void *state, MPI_Info info);
  /* Collective, MPI_File_sync before the storage sync: operations started earlier reach
   * storage, kept writes are written. */
  int (*sync)(struct pario_file *f, void *state, const char *op);
  /* Collective, MPI_File_close before the storage is closed: finish, flush. */
  int (*close)(struct pario_file *f, void *state, const char *op);
  /* Collective, MPI_File_close after every rank closed the storage: release the state. */
  void (*release)(struct pario_file *f, void *state);
  /* Process-wide, at MPI_Finalize (no file is usable any more): stop threads, free caches. */
  void (*finalize)(void);
} pario_layer;

/* Register a layer in its slot (from a constructor: before main, single-threaded). */
void pario_layer_register(int slot, const pario_layer *l);
/* Hand a layer's per-file state to core / read it back. */
void *pario_layer_state(const struct pario_file *f, int slot);
void pario_layer_set_state(struct pario_file *f, int slot, void *state);

/* Walkers, called by core's protocols (core/open.c, core/setview.c, core/filectl.c). Each runs
 * the hook of every registered layer that has one and returns the first error code. */
int pario_layers_open(struct pario_file *f);
void pario_layers_view_votes(struct pario_file *f, long long votes[PARIO_SLOTS]);
int pario_layers_set_view(struct pario_file *f, const char *op, MPI_Offset *disp, const long long votes[PARIO_SLOTS]);
void pario_layers_quiesce(struct pario_file *f);
void pario_layers_set_info(struct pario_file *f);
void pario_layers_get_info(struct pario_file *f, MPI_Info info);
int pario_layers_sync(struct pario_file *f, const char *op);
int pario_layers_close(struct pario_file *f, const char *op);
void pario_layers_release(struct pario_file *f);
/* MPI_Finalize: every layer's finalize hook, in reverse slot order. */
void pario_layers_finalize(void);

#endif
