/* rma across nodes as a lease (docs/sharedfp.md "rma's lease"): S moves through MPI windows to
 * the rank using it, queued the way an MCS lock queues its waiters, so that a run of updates
 * costs one handover instead of a remote atomic each. Needs MPI_THREAD_MULTIPLE (each rank's
 * agent thread hands on a lease that went idle). */
#ifndef PARIO_SHAREDFP_RMALEASE_H
#define PARIO_SHAREDFP_RMALEASE_H

#include <mpi.h>
#include <stdint.h>

typedef struct pario_rmalease pario_rmalease;

/* Collective over comm: S starts at 0, held by rank 0. 0 on every rank, or ENOTSUP on every
 * rank (the MPI made no window). */
int pario_rmalease_open(MPI_Comm comm, pario_rmalease **out);
/* *old = S, S += n: at once where this rank holds S, else once it arrives. 0 or EIO. */
int pario_rmalease_fetch_add(pario_rmalease *l, int64_t n, int64_t *old);
/* Collective, after every rank's last update. */
void pario_rmalease_close(pario_rmalease *l);

#endif
