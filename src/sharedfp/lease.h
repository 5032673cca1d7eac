/* addproc's counter as a lease that moves to the rank using it (addproc across nodes,
 * docs/sharedfp.md "The lease"): S lives where it is being used, and an update there is a
 * memory add. Rank 0's server thread only hands the lease from rank to rank over tcpctr's
 * connections; a rank that holds it keeps it until another asks, then a bounded while more. */
#ifndef PARIO_SHAREDFP_LEASE_H
#define PARIO_SHAREDFP_LEASE_H

#include <mpi.h>
#include <stdint.h>

typedef struct pario_lease pario_lease;

/* Collective over comm: S starts at 0 with rank 0's server. 0 on every rank, or the same errno
 * value on every rank (no lease then). */
int pario_lease_open(MPI_Comm comm, pario_lease **out);
/* *old = S, S += n: at once where this rank holds the lease, else once it arrives. 0, or EIO
 * (the lease lost with a rank or the server, or no lease within PARIO_ADDPROC_TIMEOUT). */
int pario_lease_fetch_add(pario_lease *l, int64_t n, int64_t *old);
/* Collective teardown, after every rank's last update. */
void pario_lease_close(pario_lease *l);

#endif
