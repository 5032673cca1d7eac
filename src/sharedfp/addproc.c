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
 * the TCP channel cannot be made (no IPv4 route to rank 0) the MPI transport serves.
 *
 * Ranks that share rank 0's memory need no server at all: rank 0 keeps S in a POSIX
 * shared-memory segment, and every rank that can map it (rank 0's node, or every rank where
 * the nodes share one kernel) adds to S there with one CPU atomic, as the server thread does
 * for the others (map_segment). Only the ranks that cannot map it send requests; where none
 * is left no transport is set up. PARIO_ADDPROC_TRANSPORT=tcp|mpi (rank 0) forces that
 * transport on every rank, segment or not.
 *
 * Across nodes, by default, S does not stay on rank 0 at all: it is a lease that moves to the
 * rank using it (lease.c), so that a run of updates costs one handover instead of a round trip
 * each (2 nodes: several times lockedfile's rate, docs/sharedfp.md "The lease"). Rank 0's
 * server only hands it on. PARIO_ADDPROC_LEASE=0 (rank 0) keeps S on rank 0 as below;
 * PARIO_ADDPROC_TRANSPORT=lease asks for the lease on one node too. Where every rank maps rank
 * 0's segment the segment serves instead, and where the lease cannot be set up the MPI
 * transport does.
 *
 * With PARIO_ADDPROC_COMBINE=1 (rank 0) the ranks of another node combine their requests
 * (combine.c): those waiting at the same time travel as one request for their sum, sent by
 * whichever of them takes the node's lock. Off by default: with ranks sharing cores the
 * combiner's wake-ups cost more than the round trips saved (2 nodes x 4 ranks on 2 cores:
 * 0.77-0.90x the updates/s, docs/sharedfp.md). */
#include "sharedfp/sharedfp.h"
#include "sharedfp/combine.h"
#include "sharedfp/lease.h"
#include "sharedfp/shmshare.h"
#include "sharedfp/tcpctr.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

enum { TAG_REQ = 1, TAG_REP, TAG_STOP };

typedef struct ap_state {
  MPI_Comm comm;         /* private: only requests and replies travel on it */
  int rank, thread;      /* thread: the server runs (rank 0 of a multi-rank file) */
  int nap;               /* several nodes: clients nap while they wait (else they yield) */
  int serve_nap;         /* several nodes and cores shared: the server naps between polls */
  int local;             /* this rank adds to *value itself: rank 0, and the ranks mapping its segment */
  int alone;             /* every rank is local: no transport */
  int64_t *value;        /* S: in rank 0's segment where there is one, else &own (rank 0 only) */
  int64_t own;
  int64_t *seg;          /* the mapping of rank 0's segment {token, S}, or NULL */
  pthread_t tid;
  pthread_mutex_t lock;  /* one request in flight per process, so replies cannot cross */
  pario_tcpctr *tcp;     /* the TCP transport, when rank 0 chose it (else MPI messages) */
  pario_combiner *comb;  /* this node's combined requests (ranks that send requests), or NULL */
  pario_lease *lease;    /* S moves to the rank using it (every rank), or NULL */
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
    old = __atomic_fetch_add(s->value, (int64_t)n, __ATOMIC_SEQ_CST);
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

/* Rank 0's choice, the same on every rank: *tcp 1 for TCP, 0 for MPI messages (for the ranks
 * that send requests); *seg 1 where ranks that can map rank 0's segment may use it (not when a
 * transport is forced); *comb 1 where the ranks of a node combine their requests (asked);
 * *lease 1 where S moves between the ranks over TCP instead (lease.c) unless every rank maps
 * the segment: across nodes unless PARIO_ADDPROC_LEASE=0, or asked with
 * PARIO_ADDPROC_TRANSPORT=lease. */
static void choose(pario_file *f, int *tcp, int *seg, int *comb, int *use_lease) {
  const char *t = getenv("PARIO_ADDPROC_TRANSPORT"), *k = getenv("PARIO_ADDPROC_COMBINE");
  const char *ls = getenv("PARIO_ADDPROC_LEASE");
  int forced = t && (!strcmp(t, "tcp") || !strcmp(t, "mpi")), lease = t && !strcmp(t, "lease");
  if (!t || (!forced && !lease)) lease = f->nodes > 1 && !(ls && !strcmp(ls, "0"));
  int v[4] = {forced ? !strcmp(t, "tcp") : f->nodes > 1, !forced && !(t && !strcmp(t, "lease")) && f->nprocs > 1, k && !strcmp(k, "1"),
              lease && f->nprocs > 1};
  PMPI_Bcast(v, 4, MPI_INT, 0, f->comm);
  *tcp = v[0] && f->nprocs > 1, *seg = v[1], *comb = v[2] && !v[3], *use_lease = v[3];
}

/* Collective: rank 0's segment {token, S} (shmshare.h), mapped by every rank that can. 1 when
 * every rank maps it. */
static int map_segment(pario_file *f, ap_state *s, int want) {
  char name[64];
  void *p = NULL;
  snprintf(name, sizeof name, "/pario-sfp-%llx-ap", f->uid);
  int all = pario_shm_share(f->comm, want && s, name, 2 * sizeof(int64_t), &p);
  if (s) s->seg = p;
  else if (p) munmap(p, 2 * sizeof(int64_t));
  return all;
}

/* Collective: the ranks of each node that send requests (rank 0 and the ranks mapping its
 * segment do not) combine them where there are several and their segment maps on each;
 * elsewhere every rank sends its own. */
static void combine_node(pario_file *f, ap_state *s) {
  MPI_Comm node = MPI_COMM_NULL, senders = MPI_COMM_NULL;
  int sends = s && !s->local, n = 0;
  if (PMPI_Comm_split_type(f->comm, MPI_COMM_TYPE_SHARED, f->rank, MPI_INFO_NULL, &node) != MPI_SUCCESS) return;
  int rc = PMPI_Comm_split(node, sends ? 0 : MPI_UNDEFINED, f->rank, &senders);
  PMPI_Comm_free(&node);
  if (rc != MPI_SUCCESS || senders == MPI_COMM_NULL) return;
  PMPI_Comm_size(senders, &n);
  if (n > 1 && pario_combiner_open(senders, f->uid, &s->comb)) /* collective over senders */
    pario_log(1, "%s: addproc: the ranks of this node send their requests one by one", f->filename);
  PMPI_Comm_free(&senders);
}

static int ap_setup(pario_file *f, void **state) {
  ap_state *s = calloc(1, sizeof *s);
  MPI_Comm comm = MPI_COMM_NULL;
  pario_tcpctr *tcp = NULL;
  int64_t none = 0;
  int all = 0, want_tcp, want_seg, want_comb, want_lease;
  choose(f, &want_tcp, &want_seg, &want_comb, &want_lease);
  int alone = map_segment(f, s, want_seg); /* collective */
  if (!alone && want_lease) { /* S moves between the ranks (every rank: the segment goes) */
    pario_lease *l = NULL;
    int okl = s != NULL, alll = 0;
    if (s && s->seg) munmap(s->seg, 2 * sizeof(int64_t)), s->seg = NULL;
    if (pario_lease_open(f->comm, &l) == 0) { /* collective */
      PMPI_Allreduce(&okl, &alll, 1, MPI_INT, MPI_MIN, f->comm);
      if (alll) {
        s->lease = l, s->rank = f->rank, s->comm = MPI_COMM_NULL;
        pthread_mutex_init(&s->lock, NULL);
        *state = s;
        return 0;
      }
      pario_lease_close(l);
    }
    pario_log(1, "%s: addproc: no lease over TCP; requests travel as MPI messages", f->filename);
    want_tcp = 0;
  }
  if (s) {
    s->value = s->seg ? &s->seg[1] : &s->own;
    s->local = f->rank == 0 || s->seg;
  }
  if (!alone && want_tcp && pario_tcpctr_open(f->comm, s ? s->value : &none, NULL, &tcp)) /* collective */
    pario_log(1, "%s: addproc: no TCP channel to rank 0; requests travel as MPI messages", f->filename);
  /* collective where there is no channel (then on no rank: the channel's open agreed) */
  int ok = (alone || tcp || pario_comm_dup_private(f->comm, &comm) == MPI_SUCCESS) && s;
  if (ok) {
    s->comm = comm;
    s->tcp = tcp;
    s->rank = f->rank;
    s->alone = alone;
    s->nap = f->nodes > 1;
    s->serve_nap = s->nap && !pario_wait_spins();
    pthread_mutex_init(&s->lock, NULL);
    if (!alone && !tcp && f->rank == 0 && f->nprocs > 1) ok = s->thread = pthread_create(&s->tid, NULL, serve, s) == 0;
  }
  if (!alone && want_comb) combine_node(f, s); /* collective */
  PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, f->comm);
  if (all) {
    *state = s;
    return 0;
  }
  if (s && s->thread) stop(s);
  if (tcp) pario_tcpctr_close(tcp);
  if (comm != MPI_COMM_NULL) PMPI_Comm_free(&comm);
  if (s && s->seg) munmap(s->seg, 2 * sizeof(int64_t));
  if (s) pario_combiner_close(s->comb);
  free(s);
  return ENOTSUP; /* the same on every rank: one class for the error select.c reports */
}

/* One request to rank 0 (not from rank 0): *old = S, S += n over TCP or MPI messages. */
static int request(void *arg, int64_t n, int64_t *old) {
  ap_state *s = arg;
  if (s->tcp) return pario_tcpctr_fetch_add(s->tcp, n, old);
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

static int ap_fetch_add(void *state, int slot, MPI_Offset n, MPI_Offset *old) {
  ap_state *s = state;
  int64_t prev = 0;
  (void)slot; /* always 0 (sharedfp.h) */
  if (s->lease) {
    int e = pario_lease_fetch_add(s->lease, (int64_t)n, &prev);
    *old = (MPI_Offset)prev;
    return e;
  }
  if (s->local) { /* rank 0, or a rank mapping its segment: one CPU atomic */
    *old = __atomic_fetch_add(s->value, (int64_t)n, __ATOMIC_SEQ_CST);
    return 0;
  }
  /* a combiner that never answers is given up a little after a request would have failed */
  int e = s->comb ? pario_combiner_fetch_add(s->comb, (int64_t)n, &prev, request, s, pario_tcpctr_timeout() + 5)
                  : request(s, (int64_t)n, &prev);
  *old = (MPI_Offset)prev;
  return e;
}

static void ap_detach(void *state) { /* at close, after every rank's last request */
  ap_state *s = state;
  if (s->lease) pario_lease_close(s->lease);
  pario_combiner_close(s->comb);
  if (s->tcp) pario_tcpctr_close(s->tcp);
  if (s->thread) stop(s);
  if (s->comm != MPI_COMM_NULL) PMPI_Comm_free(&s->comm);
  if (s->seg) munmap(s->seg, 2 * sizeof(int64_t));
  pthread_mutex_destroy(&s->lock);
  free(s);
}

/* get_info reports this rank's path to S: pario_addproc_transport = shm (a rank mapping rank
 * 0's segment; rank 0 where no rank sends requests), else tcp or mpi (rank 0: what its server
 * answers). */
static void ap_get_info(void *state, MPI_Info info) {
  ap_state *s = state;
  const char *t = s->lease ? "lease" : s->alone || (s->local && s->rank != 0) ? "shm" : s->tcp ? "tcp" : "mpi";
  PMPI_Info_set(info, "pario_addproc_transport", t);
  PMPI_Info_set(info, "pario_addproc_combine", s->comb ? "true" : "false");
}

const pario_sharedfp_component pario_sharedfp_addproc = {.name = "addproc",
                                                          .query = ap_query,
                                                          .setup = ap_setup,
                                                          .fetch_add = ap_fetch_add,
                                                          .detach = ap_detach,
                                                          .get_info = ap_get_info};
