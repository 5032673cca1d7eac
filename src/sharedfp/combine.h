/* Node-local combining of fetch-and-add requests (addproc across nodes, docs/sharedfp.md
 * "Combining"): the ranks of one node that would each send their own request to rank 0 post
 * them in a shared segment instead; whichever of them takes the node's lock sends one request
 * for the sum of all posted amounts and hands each poster its share of the answer. With k
 * ranks of a node waiting at once, one round trip serves all k. */
#ifndef PARIO_SHAREDFP_COMBINE_H
#define PARIO_SHAREDFP_COMBINE_H

#include <mpi.h>
#include <stdint.h>

typedef struct pario_combiner pario_combiner;

/* The request that travels: *old = S, S += n; 0 or an errno value. */
typedef int (*pario_combine_remote)(void *arg, int64_t n, int64_t *old);

/* Collective over node (ranks that share memory and each have a channel to rank 0): 0 and
 * *out on every rank, or an errno value on every rank (*out NULL: each rank sends its own). */
int pario_combiner_open(MPI_Comm node, unsigned long long uid, pario_combiner **out);
/* *old = S, S += n, through the node's combined requests; remote(arg, ...) sends one. 0, or
 * the errno value of the request that carried this one (EIO also when no combiner answered
 * within timeout_s). */
int pario_combiner_fetch_add(pario_combiner *c, int64_t n, int64_t *old, pario_combine_remote remote, void *arg,
                             int timeout_s);
/* Not collective: unmaps this rank's view (after its last update). */
void pario_combiner_close(pario_combiner *c);

#endif
