/* The lease (lease.h). Across nodes a fetch-and-add that asks rank 0 every time costs a
 * network round trip per update, more than lockedfile's lock on a local or cached file
 * system; a lease costs a round trip per run of updates. The scheme is a cohort lock's:
 * whoever holds S may use it until another rank asks, and after that for at most
 * LEASE_UPDATES more updates or LEASE_HOLD_NS, or until it has not used S for LEASE_IDLE_NS.
 *
 * Messages {type, value} travel over tcpctr's connections (every rank, rank 0 too, is a
 * client of rank 0's server thread):
 *   client -> server  ACQUIRE {1, 0}, RELEASE {2, S}
 *   server -> client  GRANT {3, S}, RECALL {4, 0} (another rank waits), LOST {5, 0}
 * The server (manager, below) keeps who holds S (or S itself, "home"), a FIFO of the ranks
 * waiting and whether the holder was recalled; it runs in the server thread only. It takes
 * RELEASE only from the holder and at most one ACQUIRE per rank: anything else drops that
 * connection. A holder's connection that drops loses S: every waiting rank, and every later
 * ACQUIRE, gets LOST (their updates fail with EIO instead of waiting for the timeout).
 *
 * A client's main thread updates S under its lock while it holds it, else sends ACQUIRE and
 * sleeps on a condition. Its agent thread reads the connection: GRANT wakes the main thread,
 * RECALL marks the lease recalled, and the agent gives back a recalled lease that went idle
 * (the main thread gives it back when the budget is spent). A lease granted to a waiting
 * rank is used once before it can go idle, so a rank slow to wake still gets its update. */
#include "sharedfp/lease.h"
#include "sharedfp/tcpctr.h"

#include "core/comm.h"
#include "core/common.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

enum { ACQUIRE = 1, RELEASE, GRANT, RECALL, LOST };
enum { LEASE_UPDATES = 256 };
#define LEASE_HOLD_NS 1000000L /* 1 ms */
#define LEASE_IDLE_NS 50000L   /* 50 us */

typedef struct manager {
  int nprocs;
  int holder;      /* the rank holding S, or -1: S is here */
  int64_t s;       /* S while home */
  int recalled;    /* the holder was sent RECALL */
  int lost;        /* S went with a holder's connection */
  int *q, head, len; /* the ranks waiting, in order */
  char *queued;
} manager;

struct pario_lease {
  pario_tcpctr *tcp;
  pario_tcpctr_handler h; /* the server thread's, for the channel's life */
  manager *m;      /* rank 0 */
  int fd;          /* this rank's connection */
  pthread_mutex_t lock;
  pthread_cond_t cond;
  pthread_t agent;
  int agent_on;
  /* under lock */
  int has, asked, recalled, fresh, broken;
  int64_t s;
  long last_ns, recall_ns;
  int updates; /* since the recall */
  int budget;
  long hold_ns;
};

/* ---- rank 0's server thread: the manager ---- */

static int grant(pario_tcpctr *c, manager *m, int r) {
  m->holder = r, m->recalled = 0;
  if (pario_tcpctr_send_to(c, r, GRANT, (uint64_t)m->s) == 0) return 0;
  m->lost = 1; /* its connection is going: S with it */
  return -1;
}

static void lose(pario_tcpctr *c, manager *m) {
  m->lost = 1;
  for (; m->len; m->len--, m->head = (m->head + 1) % m->nprocs) {
    int r = m->q[m->head];
    m->queued[r] = 0;
    pario_tcpctr_send_to(c, r, LOST, 0);
  }
}

/* After S came home: to the next waiting rank, recalled at once when others wait behind it. */
static void pass_on(pario_tcpctr *c, manager *m) {
  while (m->len && !m->lost) {
    int r = m->q[m->head];
    m->head = (m->head + 1) % m->nprocs, m->len--;
    m->queued[r] = 0;
    if (grant(c, m, r)) {
      lose(c, m);
      return;
    }
    if (m->len) m->recalled = pario_tcpctr_send_to(c, r, RECALL, 0) == 0;
    return;
  }
}

static int on_msg(void *arg, pario_tcpctr *c, int r, const uint64_t msg[2]) {
  manager *m = arg;
  switch (msg[0]) {
  case ACQUIRE:
    if (r == m->holder || m->queued[r]) return -1; /* one request per rank */
    if (m->lost) return pario_tcpctr_send_to(c, r, LOST, 0);
    if (m->holder < 0) return grant(c, m, r) ? (lose(c, m), 0) : 0;
    m->q[(m->head + m->len++) % m->nprocs] = r;
    m->queued[r] = 1;
    if (!m->recalled) m->recalled = pario_tcpctr_send_to(c, m->holder, RECALL, 0) == 0;
    return 0;
  case RELEASE:
    if (r != m->holder) return -1;
    m->s = (int64_t)msg[1], m->holder = -1;
    pass_on(c, m);
    return 0;
  default:
    return -1;
  }
}

static void on_gone(void *arg, pario_tcpctr *c, int r) {
  manager *m = arg;
  if (m->queued[r]) { /* out of the queue */
    int k = 0;
    for (int i = 0; i < m->len; i++) {
      int x = m->q[(m->head + i) % m->nprocs];
      if (x != r) m->q[(m->head + k++) % m->nprocs] = x;
    }
    m->len = k, m->queued[r] = 0;
  }
  if (r == m->holder && !m->lost) lose(c, m);
}

/* ---- every rank: the client ---- */

/* Holding the lock and the lease: give it back. */
static void give_back(pario_lease *l) {
  if (pario_tcpctr_send(l->fd, RELEASE, (uint64_t)l->s)) l->broken = 1;
  l->has = l->recalled = l->fresh = 0;
}

static int idle_now(const pario_lease *l, long now) {
  return l->has && l->recalled && !l->fresh && now - l->last_ns >= LEASE_IDLE_NS;
}

static void *agent(void *arg) {
  pario_lease *l = arg;
  for (;;) {
    pthread_mutex_lock(&l->lock);
    long wait = -1, now = pario_mono_ns();
    if (l->has && l->recalled) { /* fresh: look again once it may have been used */
      wait = l->fresh ? LEASE_IDLE_NS : l->last_ns + LEASE_IDLE_NS - now;
      if (wait < 0) wait = 0;
    }
    pthread_mutex_unlock(&l->lock);
    struct pollfd p = {.fd = l->fd, .events = POLLIN};
    struct timespec t = {wait / 1000000000L, wait % 1000000000L};
    int k = ppoll(&p, 1, wait < 0 ? NULL : &t, NULL);
    if (k < 0 && errno == EINTR) continue;
    uint64_t msg[2] = {0, 0};
    int bad = k < 0 || (k > 0 && pario_tcpctr_recv(l->fd, msg)); /* closed, error, or our close */
    pthread_mutex_lock(&l->lock);
    now = pario_mono_ns();
    if (bad) {
      l->broken = 1;
      pthread_cond_broadcast(&l->cond);
      pthread_mutex_unlock(&l->lock);
      return NULL;
    }
    if (k > 0) switch (msg[0]) {
      case GRANT:
        if (l->has || !l->asked) l->broken = 1; /* not asked for: the server is not rank 0's */
        l->has = 1, l->s = (int64_t)msg[1], l->asked = 0, l->recalled = 0, l->updates = 0;
        l->fresh = !l->broken, l->last_ns = now;
        if (l->broken) give_back(l); /* its waiter gave up: S goes on to the others */
        break;
      case RECALL:
        if (l->has && !l->recalled) l->recalled = 1, l->recall_ns = now, l->updates = 0;
        break;
      case LOST:
        l->broken = 1;
        break;
      default:
        l->broken = 1;
      }
    if (idle_now(l, now)) give_back(l);
    pthread_cond_broadcast(&l->cond);
    pthread_mutex_unlock(&l->lock);
  }
}

static int env_int(const char *name, int dflt) {
  const char *v = getenv(name);
  int x = v ? atoi(v) : 0;
  return x > 0 ? x : dflt;
}

int pario_lease_open(MPI_Comm comm, pario_lease **out) {
  int rank = 0, nprocs = 1, ok, all = 0;
  PMPI_Comm_rank(comm, &rank);
  PMPI_Comm_size(comm, &nprocs);
  pario_lease *l = calloc(1, sizeof *l);
  manager *m = rank == 0 && l ? calloc(1, sizeof *m) : NULL;
  if (m) {
    m->nprocs = nprocs, m->holder = -1;
    m->q = malloc(sizeof(int) * (size_t)nprocs);
    m->queued = calloc((size_t)nprocs, 1);
  }
  if (l) {
    pthread_mutex_init(&l->lock, NULL);
    pthread_cond_init(&l->cond, NULL);
  }
  ok = l && (rank != 0 || (m && m->q && m->queued));
  /* every rank passes the handler (rank 0 connects to its own server only with one); rank 0
   * without its manager serves plain fetch-adds, and the agreement below fails */
  pario_tcpctr *tcp = NULL;
  int64_t unused = 0;
  static const pario_tcpctr_handler none = {0};
  if (l) l->h = (pario_tcpctr_handler){on_msg, on_gone, m};
  int e = pario_tcpctr_open(comm, &unused, rank != 0 ? &none : ok ? &l->h : NULL, &tcp);
  if (!e && ok) {
    l->tcp = tcp, l->m = m, l->fd = pario_tcpctr_conn(tcp);
    l->budget = env_int("PARIO_ADDPROC_LEASE_UPDATES", LEASE_UPDATES);
    l->hold_ns = 1000L * env_int("PARIO_ADDPROC_LEASE_US", LEASE_HOLD_NS / 1000);
    ok = l->agent_on = pthread_create(&l->agent, NULL, agent, l) == 0;
  }
  PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm);
  if (all && !e) {
    *out = l;
    return 0;
  }
  if (l && l->tcp) pario_lease_close(l); /* the agent stopped, the channel closed (collective) */
  else {
    if (tcp) pario_tcpctr_close(tcp);
    if (l) pthread_mutex_destroy(&l->lock), pthread_cond_destroy(&l->cond);
    if (m) free(m->q), free(m->queued);
    free(m);
    free(l);
  }
  return e ? e : ENOTSUP;
}

int pario_lease_fetch_add(pario_lease *l, int64_t n, int64_t *old) {
  pthread_mutex_lock(&l->lock);
  long t0 = pario_mono_ns(), limit = (long)pario_tcpctr_timeout() * 1000000000L;
  int e = 0;
  for (;;) {
    long now = pario_mono_ns();
    if (l->has) {
      *old = l->s, l->s += n;
      l->last_ns = now, l->fresh = 0;
      if (l->recalled && (++l->updates >= l->budget || now - l->recall_ns >= l->hold_ns)) give_back(l);
      break;
    }
    if (l->broken) {
      e = EIO;
      break;
    }
    if (!l->asked) {
      if (pario_tcpctr_send(l->fd, ACQUIRE, 0)) {
        l->broken = 1;
        continue;
      }
      l->asked = 1;
    }
    if (now - t0 >= limit) { /* no lease in time: a later grant goes straight back (agent) */
      l->broken = 1;
      e = EIO;
      break;
    }
    long until = t0 + limit;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long d = until - now > 1000000000L ? 1000000000L : until - now; /* re-checked every second */
    ts.tv_sec += d / 1000000000L, ts.tv_nsec += d % 1000000000L;
    if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
    pthread_cond_timedwait(&l->cond, &l->lock, &ts);
  }
  pthread_mutex_unlock(&l->lock);
  return e;
}

void pario_lease_close(pario_lease *l) {
  if (l->agent_on) {
    shutdown(l->fd, SHUT_RDWR); /* the agent's read ends */
    pthread_join(l->agent, NULL);
  }
  pario_tcpctr_close(l->tcp); /* collective: rank 0's server thread stops */
  pthread_mutex_destroy(&l->lock);
  pthread_cond_destroy(&l->cond);
  if (l->m) free(l->m->q), free(l->m->queued);
  free(l->m);
  free(l);
}
