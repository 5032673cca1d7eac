/* addproc: a pointer server. Seed 003 spawned an extra process with MPI_Comm_spawn; spawning
 * is fragile (singleton runs, Open MPI's removed support, batch systems that refuse extra
 * processes), so here the "additional process" is a thread on rank 0 that answers fetch-add
 * requests over a private duplicate of the file's communicator with plain point-to-point
 * messages, which every MPI with MPI_THREAD_MULTIPLE does reliably, across nodes, on any file
 * system. Set up inside MPI_File_open (see select.c). The server does not sit in a blocking
 * MPI_Recv, which MPICH and Open MPI implement by spinning and would steal rank 0's core: it
 * polls with MPI_Test, yielding between polls while requests keep coming and napping 100 us
 * once idle for 2 ms. Across nodes a client waits for its answer napping (pario_wait_nap):
 * yielding clients kept the server (and rank 0) from the cores, 3-6x slower. Across nodes
 * where the cores are shared (pario_wait_spins false) the server naps too, from 1 us doubling
 * to 100 us, from its first poll: a thread that yields in a loop is a CPU hog to the
 * scheduler and waits for its turn behind every runnable task, while one that wakes from a
 * nap preempts them (MPICH 2 nodes x 2: 4.0x the updates/s, docs/sharedfp.md).
 *
 * Across nodes the requests travel over TCP instead (tcpctr.c): the server thread sleeps in
 * poll() and a client in recv(), and the kernel wakes each when its packet arrives, with no
 * polling and no MPI progress. Which transport is rank 0's choice, broadcast at open:
 * PARIO_ADDPROC_TRANSPORT=tcp|mpi on rank 0, else tcp across nodes and MPI on one node; where
 * the TCP channel cannot be made (no IPv4 route to rank 0) the MPI transport serves. */
#include "sharedfp/sharedfp.h"
#include "sharedfp/tcpctr.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { TAG_REQ = 1, TAG_REP, TAG_STOP };

typedef struct ap_state {
  MPI_Comm comm;         /* private: only requests and replies travel on it */
  int rank, thread;      /* thread: the server runs (rank 0 of a multi-rank file) */
  int nap;               /* several nodes: clients nap while they wait (else they yield) */
  int serve_nap;         /* several nodes and cores shared: the server naps between polls */
  int64_t value;         /* S, on rank 0 (server and rank 0's own calls add atomically) */
  pthread_t tid;
  pthread_mutex_t lock;  /* one request in flight per process, so replies cannot cross */
  pario_tcpctr *tcp;     /* the TCP transport, when rank 0 chose it (else MPI messages) */
} ap_state;

static int ap_query(pario_file *f) {
  int lvl = MPI_THREAD_SINGLE;
  PMPI_Query_thread(&lvl);
  return f->nprocs == 1 || lvl == MPI_THREAD_MULTIPLE ? 15 : -1;
}

static void *serve(void *arg) {
  ap_state *s = arg;
  double last = PMPI_Wtime();
  for (;;) {
    long long n = 0, old;
    MPI_Request r;
    MPI_Status st;
    int done = 0, rc = PMPI_Irecv(&n, 1, MPI_LONG_LONG, MPI_ANY_SOURCE, MPI_ANY_TAG, s->comm, &r);
    long nap = 0;
    while (rc == MPI_SUCCESS && (rc = PMPI_Test(&r, &done, &st)) == MPI_SUCCESS && !done) {
      if (s->serve_nap) { /* across nodes, cores shared: nap at once (see the top) */
        nap = nap ? (nap * 2 > 100000 ? 100000 : nap * 2) : 1000;
        nanosleep(&(struct timespec){0, nap}, NULL);
      } else if (PMPI_Wtime() - last < 2e-3)
        sched_yield(); /* busy: answer the next one at once */
      else
        nanosleep(&(struct timespec){0, 100000}, NULL);
    }
    if (rc != MPI_SUCCESS || st.MPI_TAG == TAG_STOP) return NULL;
    old = __atomic_fetch_add(&s->value, (int64_t)n, __ATOMIC_SEQ_CST);
    PMPI_Send(&old, 1, MPI_LONG_LONG, st.MPI_SOURCE, TAG_REP, s->comm);
    last = PMPI_Wtime();
  }
}

/* Rank 0 stops its own server: a message to itself ends the loop. */
static void stop(ap_state *s) {
  long long z = 0;
  MPI_Request r;
  PMPI_Isend(&z, 1, MPI_LONG_LONG, 0, TAG_STOP, s->comm, &r);
  pthread_join(s->tid, NULL);
  PMPI_Wait(&r, MPI_STATUS_IGNORE);
}

/* Rank 0's choice of transport, the same on every rank: 1 TCP, 0 MPI messages. */
static int want_tcp(pario_file *f) {
  const char *t = getenv("PARIO_ADDPROC_TRANSPORT");
  int tcp = t && !strcmp(t, "tcp") ? 1 : t && !strcmp(t, "mpi") ? 0 : f->nodes > 1;
  PMPI_Bcast(&tcp, 1, MPI_INT, 0, f->comm);
  return tcp && f->nprocs > 1;
}

static int ap_setup(pario_file *f, void **state) {
  ap_state *s = calloc(1, sizeof *s);
  MPI_Comm comm = MPI_COMM_NULL;
  pario_tcpctr *tcp = NULL;
  int64_t none = 0;
  int all = 0;
  if (want_tcp(f) && pario_tcpctr_open(f->comm, s ? &s->value : &none, &tcp)) /* collective */
    pario_log(1, "%s: addproc: no TCP channel to rank 0; requests travel as MPI messages", f->filename);
  /* collective where there is no channel (then on no rank: the channel's open agreed) */
  int ok = (tcp || pario_comm_dup_private(f->comm, &comm) == MPI_SUCCESS) && s;
  if (ok) {
    s->comm = comm;
    s->tcp = tcp;
    s->rank = f->rank;
    s->nap = f->nodes > 1;
    s->serve_nap = s->nap && !pario_wait_spins();
    pthread_mutex_init(&s->lock, NULL);
    if (!tcp && f->rank == 0 && f->nprocs > 1) ok = s->thread = pthread_create(&s->tid, NULL, serve, s) == 0;
  }
  PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, f->comm);
  if (all) {
    *state = s;
    return 0;
  }
  if (s && s->thread) stop(s);
  if (tcp) pario_tcpctr_close(tcp);
  if (comm != MPI_COMM_NULL) PMPI_Comm_free(&comm);
  free(s);
  return ENOTSUP; /* the same on every rank: one class for the error select.c reports */
}

static int ap_fetch_add(void *state, int slot, MPI_Offset n, MPI_Offset *old) {
  ap_state *s = state;
  (void)slot; /* always 0 (sharedfp.h) */
  if (s->rank == 0) {
    *old = __atomic_fetch_add(&s->value, (int64_t)n, __ATOMIC_SEQ_CST);
    return 0;
  }
  if (s->tcp) {
    int64_t prev = 0;
    int e = pario_tcpctr_fetch_add(s->tcp, (int64_t)n, &prev);
    *old = (MPI_Offset)prev;
    return e;
  }
  long long add = n, prev = 0;
  pthread_mutex_lock(&s->lock);
  MPI_Request r;
  int rc = PMPI_Irecv(&prev, 1, MPI_LONG_LONG, 0, TAG_REP, s->comm, &r);
  if (rc == MPI_SUCCESS) rc = PMPI_Send(&add, 1, MPI_LONG_LONG, 0, TAG_REQ, s->comm);
  /* Never spin in MPI_Recv: the server may need this core. Across nodes nap while waiting
   * (pario_wait_nap: a short spin, then naps of 2 us doubling to 200 us): a reply takes a
   * network round trip, and yielding waiters still took their full share of the cores the
   * server and rank 0 needed (3-6x slower, docs/sharedfp.md). On one node yield: the reply
   * comes within microseconds (naps: about half the rate, 2 ranks, Open MPI, 3 noisy runs). */
  int done = 0;
  if (rc == MPI_SUCCESS && s->nap) rc = pario_wait_nap(&r);
  else
    while (rc == MPI_SUCCESS && !done && (rc = PMPI_Test(&r, &done, MPI_STATUS_IGNORE)) == MPI_SUCCESS && !done)
      sched_yield();
  pthread_mutex_unlock(&s->lock);
  *old = prev;
  return rc == MPI_SUCCESS ? 0 : EIO;
}

static void ap_detach(void *state) { /* at close, after every rank's last request */
  ap_state *s = state;
  if (s->tcp) pario_tcpctr_close(s->tcp);
  if (s->thread) stop(s);
  if (s->comm != MPI_COMM_NULL) PMPI_Comm_free(&s->comm);
  pthread_mutex_destroy(&s->lock);
  free(s);
}

/* get_info reports the transport in use: pario_addproc_transport = tcp or mpi. */
static void ap_get_info(void *state, MPI_Info info) {
  PMPI_Info_set(info, "pario_addproc_transport", ((ap_state *)state)->tcp ? "tcp" : "mpi");
}

const pario_sharedfp_component pario_sharedfp_addproc = {.name = "addproc",
                                                          .query = ap_query,
                                                          .setup = ap_setup,
                                                          .fetch_add = ap_fetch_add,
                                                          .detach = ap_detach,
                                                          .get_info = ap_get_info};
