/* rma's lease (lease.h). Every rank's window holds four 64-bit words: S as handed to it,
 * GRANTED, NEXT (the rank queued behind it, plus one) and, on rank 0, TAIL (the last rank to
 * ask for S, plus one; S always belongs to the tail or to a rank ahead of it in the queue).
 *
 * A rank that wants S clears its GRANTED and NEXT, swaps itself into rank 0's TAIL (the old
 * tail is its predecessor), writes itself into the predecessor's NEXT and polls its own
 * GRANTED. The holder updates S in its own memory; after each update, and every 50 us from its
 * agent thread, it reads its NEXT. Once someone is queued it hands S over after at most
 * LEASE_UPDATES more updates or LEASE_HOLD_NS, or at once when it has not used S for
 * LEASE_IDLE_NS: S into the successor's S word, then GRANTED = 1. S is never given back to
 * rank 0: a holder nobody waits for keeps it, so no compare-and-swap is needed, and each word
 * sees one kind of accumulate (MPI_REPLACE) beside reads (MPI_NO_OP), which the window's
 * default accumulate_ops (same_op_no_op) allows.
 *
 * Every access is MPI_Rget_accumulate waited for napping (pario_wait_nap): its completion
 * means the target's word was read and written. Where the MPI runs these atomics in software
 * at the target (MPICH 4.0 ch4:ucx), the target must be inside MPI: the waiter polls its own
 * words, the holder reads its NEXT at each update or its agent does every 50 us, and rank 0's
 * TAIL is served by rma.c's progress thread. */
#include "sharedfp/lease.h"

#include "core/comm.h"
#include "core/common.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

enum { W_S = 0, W_GRANTED, W_NEXT, W_TAIL, W_WORDS };
/* More than addproc's lease (256, 1 ms): a handover here is four remote operations that each
 * wait for the other side to enter MPI, so with more ranks than cores it takes milliseconds
 * (MPICH 2 nodes x 4 ranks on 2 cores: 0.91x lockedfile at 256 and 1 ms, 1.29x at 1024 and
 * 4 ms; docs/sharedfp.md). A waiting rank waits at most this long per rank ahead of it. */
enum { LEASE_UPDATES = 1024 };
#define LEASE_HOLD_NS 4000000L /* 4 ms after someone queued */
#define LEASE_IDLE_NS 50000L   /* 50 us */

struct pario_rmalease {
  MPI_Win win;
  long long *mem;
  int rank;
  pthread_mutex_t lock;
  pthread_t agent;
  int agent_on, stop;
  /* under lock */
  int held, broken;
  long long s, next; /* next: the successor plus one, once read; 0 none yet */
  long last_ns, queued_ns;
  int updates, budget;
  long hold_ns;
};

/* *old = the word disp of rank, replaced by v (op MPI_REPLACE) or only read (MPI_NO_OP). */
static int word(pario_rmalease *l, int rank, int disp, MPI_Op op, long long v, long long *old) {
  MPI_Request r;
  long long got = 0;
  int rc = PMPI_Rget_accumulate(&v, 1, MPI_LONG_LONG, &got, 1, MPI_LONG_LONG, rank, disp, 1, MPI_LONG_LONG, op, l->win, &r);
  if (rc == MPI_SUCCESS) rc = pario_wait_nap(&r);
  if (old) *old = got;
  if (rc != MPI_SUCCESS) l->broken = 1;
  return rc == MPI_SUCCESS ? 0 : -1;
}

/* Holding the lock and S, with a successor: S to it, then its GRANTED. */
static void hand_on(pario_rmalease *l) {
  int to = (int)l->next - 1;
  if (word(l, to, W_S, MPI_REPLACE, l->s, NULL) == 0) word(l, to, W_GRANTED, MPI_REPLACE, 1, NULL);
  l->held = 0, l->next = 0;
}

/* Holding the lock and S: whether someone queued (reads NEXT until it is set). */
static int queued(pario_rmalease *l, long now) {
  if (!l->next && word(l, l->rank, W_NEXT, MPI_NO_OP, 0, &l->next) == 0 && l->next)
    l->queued_ns = now, l->updates = 0;
  return l->next != 0;
}

static void *agent(void *arg) {
  pario_rmalease *l = arg;
  while (!__atomic_load_n(&l->stop, __ATOMIC_ACQUIRE)) {
    pthread_mutex_lock(&l->lock);
    int held = l->held;
    long now = pario_mono_ns();
    if (held && !l->broken && queued(l, now) && now - l->last_ns >= LEASE_IDLE_NS) hand_on(l);
    pthread_mutex_unlock(&l->lock);
    /* not holding: nobody writes to this rank's words but its own waits */
    nanosleep(&(struct timespec){0, held ? LEASE_IDLE_NS : 1000000L}, NULL);
  }
  return NULL;
}

/* Holding the lock, not S: queue behind the tail and wait for S. */
static int acquire(pario_rmalease *l) {
  long long pred = 0, granted = 0;
  l->mem[W_GRANTED] = 0, l->mem[W_NEXT] = 0; /* nobody writes them before this rank queues */
  PMPI_Win_sync(l->win);
  if (word(l, 0, W_TAIL, MPI_REPLACE, l->rank + 1, &pred)) return EIO;
  if (pred < 1 || pred - 1 == l->rank) { /* a tail that is this rank holds S: never here */
    l->broken = 1;
    return EIO;
  }
  if (word(l, (int)pred - 1, W_NEXT, MPI_REPLACE, l->rank + 1, NULL)) return EIO;
  long nap = 0;
  for (int spin = 0;; spin++) {
    if (word(l, l->rank, W_GRANTED, MPI_NO_OP, 0, &granted)) return EIO;
    if (granted) break;
    if (spin < 16) continue;
    nap = nap ? (nap * 2 > 100000 ? 100000 : nap * 2) : 2000;
    nanosleep(&(struct timespec){0, nap}, NULL);
  }
  if (word(l, l->rank, W_S, MPI_NO_OP, 0, &l->s)) return EIO;
  l->held = 1, l->next = 0, l->updates = 0;
  return 0;
}

static int env_int(const char *name, int dflt) {
  const char *v = getenv(name);
  int x = v ? atoi(v) : 0;
  return x > 0 ? x : dflt;
}

int pario_rmalease_open(MPI_Comm comm, pario_rmalease **out) {
  int rank = 0, ok = 0, all = 0;
  PMPI_Comm_rank(comm, &rank);
  pario_rmalease *l = calloc(1, sizeof *l);
  if (l) pthread_mutex_init(&l->lock, NULL);
  MPI_Win win = MPI_WIN_NULL;
  long long *mem = NULL;
  int rc = PMPI_Win_allocate(W_WORDS * sizeof(long long), sizeof(long long), MPI_INFO_NULL, comm, &mem, &win);
  if (rc == MPI_SUCCESS) { /* comm returns errors (pario_comm_dup_private): no abort */
    PMPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    PMPI_Win_lock_all(MPI_MODE_NOCHECK, win);
    for (int i = 0; i < W_WORDS; i++) mem[i] = 0;
    if (rank == 0) mem[W_TAIL] = 1; /* rank 0 holds S first */
    PMPI_Win_sync(win);
    ok = l != NULL;
  } else
    win = MPI_WIN_NULL;
  if (ok) {
    l->win = win, l->mem = mem, l->rank = rank, l->held = rank == 0;
    l->budget = env_int("PARIO_RMA_LEASE_UPDATES", LEASE_UPDATES);
    l->hold_ns = 1000L * env_int("PARIO_RMA_LEASE_US", LEASE_HOLD_NS / 1000);
    ok = l->agent_on = pthread_create(&l->agent, NULL, agent, l) == 0;
  }
  PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm); /* also: every window's words are set */
  if (all) {
    *out = l;
    return 0;
  }
  if (l && l->agent_on) {
    __atomic_store_n(&l->stop, 1, __ATOMIC_RELEASE);
    pthread_join(l->agent, NULL);
  }
  if (win != MPI_WIN_NULL) { /* created everywhere it succeeded: freed the same way */
    PMPI_Win_unlock_all(win);
    PMPI_Win_free(&win);
  }
  if (l) pthread_mutex_destroy(&l->lock);
  free(l);
  return ENOTSUP;
}

int pario_rmalease_fetch_add(pario_rmalease *l, int64_t n, int64_t *old) {
  int e = 0;
  pthread_mutex_lock(&l->lock);
  if (l->broken || (!l->held && acquire(l))) e = EIO;
  else {
    long now = pario_mono_ns();
    *old = l->s, l->s += n;
    l->last_ns = now;
    if (queued(l, now) && (++l->updates >= l->budget || now - l->queued_ns >= l->hold_ns)) hand_on(l);
    if (l->broken) e = EIO;
  }
  pthread_mutex_unlock(&l->lock);
  return e;
}

void pario_rmalease_close(pario_rmalease *l) {
  __atomic_store_n(&l->stop, 1, __ATOMIC_RELEASE);
  pthread_join(l->agent, NULL);
  PMPI_Win_unlock_all(l->win);
  PMPI_Win_free(&l->win);
  pthread_mutex_destroy(&l->lock);
  free(l);
}
