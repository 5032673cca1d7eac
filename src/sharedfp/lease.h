/* The shared pointer as a lease that moves to the rank using it (across nodes,
 * docs/sharedfp.md "The lease", "rma's lease"): S lives where it is being used, and an update
 * there is a memory add; a rank that holds it keeps it until another asks, then a bounded
 * while more. Two transports, one interface each:
 *  - pario_lease (lease.c, addproc): rank 0's server thread hands S from rank to rank over
 *    tcpctr's connections;
 *  - pario_rmalease (rmalease.c, rma): S moves through MPI windows, queued the way an MCS
 *    lock queues its waiters; needs MPI_THREAD_MULTIPLE (each rank's agent thread hands on a
 *    lease that went idle). */
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

typedef struct pario_rmalease pario_rmalease;

/* The same over MPI windows: S starts at 0, held by rank 0. 0 on every rank, or ENOTSUP on
 * every rank (the MPI made no window). Updates: 0 or EIO. */
int pario_rmalease_open(MPI_Comm comm, pario_rmalease **out);
int pario_rmalease_fetch_add(pario_rmalease *l, int64_t n, int64_t *old);
void pario_rmalease_close(pario_rmalease *l);

#endif
