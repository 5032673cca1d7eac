/* Collective data access: two-phase aggregation (aggregators chosen by cb_nodes, file domains,
 * rounds of cb_buffer_size) or, where aggregation does not pay, each rank's independent
 * access. Blocking collectives run on one context, nonblocking ones (driven by the async
 * engine) on another, each with a private duplicate communicator and its own cache of every
 * rank's views, so the two never share a message or a collective call. The layer's per-file
 * state (both contexts) hangs off the file through core's lifecycle hooks (core/layer.h). */
#ifndef PARIO_COLLECTIVE_H
#define PARIO_COLLECTIVE_H

#include "core/file.h"

typedef struct pario_coll_ctx pario_coll_ctx;

/* The context for blocking collective calls, or for nonblocking ones (nb = 1), created on
 * first use; call from the application's thread only (creating one is collective over the
 * file's communicator). NULL when out of memory, or its communicator could not be made
 * (pario_timeout expired: core/comm.h). */
pario_coll_ctx *pario_coll_ctx_get(pario_file *f, int nb);
/* The error of a context that could not be made, naming op and the file. */
int pario_coll_ctx_err(const pario_file *f, const char *op);

/* Collective access of count x type at data position pos (bytes of the data stream of the
 * snapshot's view s, which every rank started its call under). A rank whose arguments were
 * invalid still takes part, with count 0. *bytes receives the bytes moved (less than
 * requested only for a read at end of file). Every rank's view is exchanged again unless the
 * context's view cache holds every rank's current one (viewx.c). */
int pario_coll_access(pario_coll_ctx *c, const pario_snap *s, const char *op, int rw, MPI_Offset pos,
                      void *buf, MPI_Count count, MPI_Datatype type, MPI_Count *bytes);

#endif
