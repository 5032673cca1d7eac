/* A fetch-and-add counter on rank 0 served over plain blocking TCP sockets (addproc across
 * nodes, docs/sharedfp.md "addproc over TCP"). Rank 0 listens, its address is broadcast through
 * the MPI at open, each other rank keeps one connection; an update is a 16-byte request and a
 * 16-byte reply. The server thread sleeps in poll() and the client in recv(): the kernel wakes
 * them when a packet arrives, so neither polls nor needs the MPI to make progress. */
#ifndef PARIO_SHAREDFP_TCPCTR_H
#define PARIO_SHAREDFP_TCPCTR_H

#include <mpi.h>
#include <stdint.h>

typedef struct pario_tcpctr pario_tcpctr;

/* Collective over comm: rank 0 serves *value (atomic adds; rank 0's own updates add to it
 * directly), the others connect. 0 on every rank, or the same errno value on every rank (no
 * channel then). */
int pario_tcpctr_open(MPI_Comm comm, int64_t *value, pario_tcpctr **out);
/* Not on rank 0: *old = S, S += n. 0, or EIO when the server is gone or silent past the
 * timeout (PARIO_ADDPROC_TIMEOUT seconds, default 30); the channel stays failed after. */
int pario_tcpctr_fetch_add(pario_tcpctr *c, int64_t n, int64_t *old);
/* Seconds a client waits for the server before its update fails: PARIO_ADDPROC_TIMEOUT, 30. */
int pario_tcpctr_timeout(void);
/* Collective teardown (after every rank's last update): connections closed, thread joined. */
void pario_tcpctr_close(pario_tcpctr *c);

#endif
