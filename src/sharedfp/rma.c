/* rma: the shared pointer is 8 bytes of an MPI window on rank 0, created inside MPI_File_open
 * and only for files that ask for it (select.c says why). Two forms, chosen at set-up:
 *  - one node: the window comes from MPI_Win_allocate_shared, every rank maps rank 0's
 *    8 bytes (MPI_Win_shared_query) and advances them with a CPU atomic: no messages, and
 *    nothing asked of rank 0.
 *  - several nodes: MPI_Win_allocate; each update is MPI_Rget_accumulate(MPI_SUM), the
 *    fetch-and-add with a request, waited for napping (not spinning in MPI_Win_flush, which
 *    took the cores rank 0 needs to answer), under one passive-target MPI_Win_lock_all held
 *    for the file's life. MPICH 4.0 (ch4:ucx)
 *    executes such atomics as active messages that only progress while rank 0 is inside MPI
 *    (the others stall for as long as rank 0 computes; docs/sharedfp.md). Rank 0 therefore
 *    runs a progress thread (with MPI_THREAD_MULTIPLE) that enters MPI with MPI_Iprobe every
 *    100 us. MPIR_CVAR_ASYNC_PROGRESS=1 would do the same for the
 *    whole program, but only if the user sets it before MPI_Init.
 * Across nodes where every rank has MPI_THREAD_MULTIPLE the second form is replaced by a lease
 * (rmalease.c): S moves to the rank using it, and a run of updates costs one handover instead
 * of a remote atomic each (MPICH across namespace nodes: 0.10-0.18x lockedfile before, above
 * it after, docs/sharedfp.md). PARIO_RMA_LEASE=0 (any rank) keeps the atomics.
 * PARIO_TEST_RMA_REMOTE=1 (read on rank 0) forces the several-nodes form on one node, for tests.
 * Window creation duplicates the communicator internally, so window traffic never meets
 * pario's own messages on f->comm. */
#include "sharedfp/sharedfp.h"
#include "sharedfp/lease.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct rma_state {
  MPI_Win win;
  int64_t *local;      /* one node: rank 0's counter, mapped here; else NULL */
  MPI_Comm comm;       /* the file's communicator, probed by the progress thread */
  int progress, stop;  /* progress thread running (rank 0); asked to stop */
  pthread_t tid;
  pario_rmalease *lease; /* several nodes, MPI_THREAD_MULTIPLE: S moves to the rank using it */
} rma_state;

static int rma_query(pario_file *f) {
  (void)f;
  return 20;
}

static void *progress(void *arg) {
  rma_state *s = arg;
  while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE)) {
    int flag;
    PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, s->comm, &flag, MPI_STATUS_IGNORE); /* never receives */
    nanosleep(&(struct timespec){0, 100000}, NULL);
  }
  return NULL;
}

static void stop_progress(rma_state *s) {
  if (!s->progress) return;
  __atomic_store_n(&s->stop, 1, __ATOMIC_RELEASE);
  pthread_join(s->tid, NULL);
  s->progress = 0;
}

/* Create the window (collective); returns 1 if this rank got it. */
static int make_window(pario_file *f, rma_state *s, int shared) {
  MPI_Info info;
  int64_t *mem = NULL;
  MPI_Aint size = f->rank == 0 ? sizeof(int64_t) : 0;
  PMPI_Info_create(&info);
  PMPI_Info_set(info, "accumulate_ops", "same_op"); /* only MPI_SUM: lets the MPI use atomics */
  PMPI_Info_set(info, "which_accumulate_ops", "sum");
  int rc = shared ? PMPI_Win_allocate_shared(size, sizeof(int64_t), info, f->comm, &mem, &s->win)
                  : PMPI_Win_allocate(size, sizeof(int64_t), info, f->comm, &mem, &s->win);
  PMPI_Info_free(&info);
  if (rc != MPI_SUCCESS) { /* f->comm returns errors (pario_comm_dup_private): no abort */
    s->win = MPI_WIN_NULL;
    return 0;
  }
  PMPI_Win_set_errhandler(s->win, MPI_ERRORS_RETURN); /* a failed update is EIO, not an abort */
  PMPI_Win_lock_all(MPI_MODE_NOCHECK, s->win);
  if (f->rank == 0) {
    *mem = 0; /* window memory starts undefined; nobody reads it before set-up's Allreduce */
    PMPI_Win_sync(s->win);
  }
  if (shared) {
    MPI_Aint sz;
    int du;
    rc = PMPI_Win_shared_query(s->win, 0, &sz, &du, &s->local);
  }
  return rc == MPI_SUCCESS;
}

/* Collective: the several-nodes form is the lease (rmalease.c) where every rank has
 * MPI_THREAD_MULTIPLE and none sets PARIO_RMA_LEASE=0, else MPI_Rget_accumulate on rank 0's
 * word. Returns 1 if this rank got it. */
static int remote_form(pario_file *f, rma_state *w, int lvl) {
  const char *e = getenv("PARIO_RMA_LEASE");
  int lease = f->nprocs > 1 && lvl == MPI_THREAD_MULTIPLE && !(e && !strcmp(e, "0")), every = 0;
  PMPI_Allreduce(&lease, &every, 1, MPI_INT, MPI_MIN, f->comm);
  if (every) return pario_rmalease_open(f->comm, &w->lease) == 0; /* collective */
  return make_window(f, w, 0);
}

static int rma_setup(pario_file *f, void **state) {
  rma_state *s = calloc(1, sizeof *s), spare = {.win = MPI_WIN_NULL};
  rma_state *w = s ? s : &spare; /* creation is collective: take part even without memory */
  const char *remote = getenv("PARIO_TEST_RMA_REMOTE");
  int shared = f->nodes == 1 && !(remote && *remote == '1'), ok = 0, all = 0, lvl = 0;
  w->win = MPI_WIN_NULL;
  PMPI_Query_thread(&lvl);
  PMPI_Bcast(&shared, 1, MPI_INT, 0, f->comm);
  if (shared) { /* the MPI may split one host into several nodes (MPICH's cliques): then rank
                 * 0's word is not in every rank's memory, and every rank must use the
                 * several-nodes form, with rank 0's progress thread */
    ok = make_window(f, w, 1) && s;
    int mine = ok && w->local != NULL, every = 0;
    PMPI_Allreduce(&mine, &every, 1, MPI_INT, MPI_MIN, f->comm);
    if (!every) {
      if (w->win != MPI_WIN_NULL) {
        PMPI_Win_unlock_all(w->win);
        PMPI_Win_free(&w->win);
      }
      w->local = NULL;
      shared = 0;
    }
  }
  if (!shared) ok = remote_form(f, w, lvl) && s;
  if (ok && !shared && f->rank == 0 && f->nprocs > 1 && lvl == MPI_THREAD_MULTIPLE) {
    s->comm = f->comm;
    s->progress = pthread_create(&s->tid, NULL, progress, s) == 0;
  }
  PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, f->comm);
  if (all) {
    *state = s;
    return 0;
  }
  stop_progress(w);
  if (w->lease) pario_rmalease_close(w->lease); /* opened on every rank or on none */
  if (w->win != MPI_WIN_NULL) { /* created everywhere it succeeded: freed the same way */
    PMPI_Win_unlock_all(w->win);
    PMPI_Win_free(&w->win);
  }
  free(s);
  return w == &spare ? ENOMEM : ENOTSUP;
}

static int rma_fetch_add(void *state, int slot, MPI_Offset n, MPI_Offset *old) {
  rma_state *s = state;
  (void)slot; /* always 0 (sharedfp.h) */
  long long add = n, prev = 0;
  if (s->lease) {
    int64_t o = 0;
    int e = pario_rmalease_fetch_add(s->lease, (int64_t)n, &o);
    *old = (MPI_Offset)o;
    return e;
  }
  if (s->local) {
    *old = __atomic_fetch_add(s->local, (int64_t)n, __ATOMIC_SEQ_CST);
    return 0;
  }
  /* MPI_Rget_accumulate is MPI_Fetch_and_op with a request: its completion means the old
   * value has arrived. Waiting on it napping (pario_wait_nap) instead of spinning in
   * MPI_Win_flush leaves the cores to rank 0, which must serve the update (MPICH: in its own
   * calls or its progress thread), and to the other ranks. */
  MPI_Request r;
  if (PMPI_Rget_accumulate(&add, 1, MPI_LONG_LONG, &prev, 1, MPI_LONG_LONG, 0, 0, 1, MPI_LONG_LONG, MPI_SUM, s->win,
                           &r) != MPI_SUCCESS ||
      pario_wait_nap(&r) != MPI_SUCCESS)
    return EIO;
  *old = prev;
  return 0;
}

static void rma_detach(void *state) { /* collective: every rank of the file closes */
  rma_state *s = state;
  stop_progress(s);
  if (s->lease) pario_rmalease_close(s->lease);
  else {
    PMPI_Win_unlock_all(s->win);
    PMPI_Win_free(&s->win);
  }
  free(s);
}

/* get_info: pario_rma_form = shared (one node: CPU atomics in rank 0's word), lease (several
 * nodes: S moves to the rank using it) or atomics (MPI_Rget_accumulate on rank 0's word). */
static void rma_get_info(void *state, MPI_Info info) {
  rma_state *s = state;
  PMPI_Info_set(info, "pario_rma_form", s->local ? "shared" : s->lease ? "lease" : "atomics");
}

const pario_sharedfp_component pario_sharedfp_rma = {
    .name = "rma", .query = rma_query, .setup = rma_setup, .fetch_add = rma_fetch_add, .detach = rma_detach,
    .get_info = rma_get_info};
