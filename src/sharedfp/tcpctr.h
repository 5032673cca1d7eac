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

/* A protocol of its own over the channel (lease.c): rank 0's server thread hands each whole
 * 16-byte message m of a known rank to msg (which answers with pario_tcpctr_send_to; -1 drops
 * that rank's connection), and calls gone when a known rank's connection is dropped. */
typedef struct pario_tcpctr_handler {
  int (*msg)(void *arg, pario_tcpctr *c, int rank, const uint64_t m[2]);
  void (*gone)(void *arg, pario_tcpctr *c, int rank);
  void *arg;
} pario_tcpctr_handler;

/* Collective over comm: rank 0 serves *value (atomic adds; rank 0's own updates add to it
 * directly), the others connect. With h (the same on every rank), rank 0 connects to its own
 * server too and h serves every rank's messages instead. 0 on every rank, or the same errno
 * value on every rank (no channel then). */
int pario_tcpctr_open(MPI_Comm comm, int64_t *value, const pario_tcpctr_handler *h, pario_tcpctr **out);
/* With a handler: this rank's connection to the server (the caller reads and writes it). */
int pario_tcpctr_conn(pario_tcpctr *c);
/* One message {a, b} on fd, or a whole one read into m: 0, or -1 (error, closed, timeout). */
int pario_tcpctr_send(int fd, uint64_t a, uint64_t b);
int pario_tcpctr_recv(int fd, uint64_t m[2]);
/* The server thread (in msg or gone): a message to rank's connection; 0, or -1 (none, failed). */
int pario_tcpctr_send_to(pario_tcpctr *c, int rank, uint64_t a, uint64_t b);
/* Not on rank 0: *old = S, S += n. 0, or EIO when the server is gone or silent past the
 * timeout (PARIO_ADDPROC_TIMEOUT seconds, default 30); the channel stays failed after. */
int pario_tcpctr_fetch_add(pario_tcpctr *c, int64_t n, int64_t *old);
/* Seconds a client waits for the server before its update fails: PARIO_ADDPROC_TIMEOUT, 30. */
int pario_tcpctr_timeout(void);
/* Collective teardown (after every rank's last update): connections closed, thread joined. */
void pario_tcpctr_close(pario_tcpctr *c);

#endif
