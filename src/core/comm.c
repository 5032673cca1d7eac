/* Communication helpers shared by every layer (see comm.h): polite waits, agreement,
 * same-value checks, the monotonic clock and its alignment across hosts. */
#include "core/comm.h"

#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/hints.h"

long pario_mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/* The waits' settings (pario_wait_tune): whether they spin, the longest nap, and the yield
 * period of short waits, in ns. Written before a file's collective calls start, read by every
 * waiting thread: relaxed atomics, as any of the values is safe at any time. */
static int w_spin = -1; /* -1: not decided yet (PARIO_AUTO until a file says otherwise) */
static long w_nap_max = PARIO_WAIT_NAP_MAX_US * 1000, w_yield = PARIO_WAIT_YIELD_US * 1000;
/* pario_timeout in ns (0: waits never give up), and the latch: the timeout that expired in a
 * wait of this process (0: none did). */
static long w_timeout, w_stuck;

/* This node's ranks of the job, from the launcher (0: unknown). */
static long local_ranks(void) {
  static const char *const vars[] = {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "PMI_LOCAL_SIZE"};
  for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
    const char *v = getenv(vars[i]);
    if (v && atol(v) > 0) return atol(v);
  }
  return 0;
}

/* The node's load average over the last minute (-1: unknown). */
static double load_average(void) {
  double l = -1;
  FILE *fp = fopen("/proc/loadavg", "r");
  if (fp && fscanf(fp, "%lf", &l) != 1) l = -1;
  if (fp) fclose(fp);
  return l;
}

/* PARIO_AUTO: spin when every rank here can have a core of its own (sysconf, not the affinity
 * mask: a bound rank sees one CPU however many are free) and the node is not busy with other
 * work (a load average above the CPUs: spinning ranks would then wait for cores that others
 * hold; on a shared 2-core machine at load 30, 2 spinning ranks took 8-35 ms per collective
 * write where napping ones took 1.3-6). Decided once: settle calls the tuning at every
 * set_view, and sysconf reads /sys. */
static int auto_spins(void) {
  static int known = -1;
  int k = __atomic_load_n(&known, __ATOMIC_RELAXED);
  if (k < 0) {
    long ranks = local_ranks(), cpus = sysconf(_SC_NPROCESSORS_ONLN);
    double load = load_average();
    k = ranks > 0 && cpus > 0 && ranks <= cpus && load >= 0 && load <= (double)cpus;
    __atomic_store_n(&known, k, __ATOMIC_RELAXED);
  }
  return k;
}

void pario_wait_tune(int mode, long long nap_max_us, long long yield_us) {
  int spin = mode == PARIO_WAIT_SPIN ? 1 : mode == PARIO_WAIT_NAP ? 0 : auto_spins();
  __atomic_store_n(&w_nap_max, (long)PARIO_MAX(1, nap_max_us) * 1000L, __ATOMIC_RELAXED);
  __atomic_store_n(&w_yield, (long)PARIO_MAX(0, yield_us) * 1000L, __ATOMIC_RELAXED);
  __atomic_store_n(&w_spin, spin, __ATOMIC_RELAXED);
}

void pario_wait_timeout(long long ms) {
  __atomic_store_n(&w_timeout, (long)PARIO_MAX(0, ms) * 1000000L, __ATOMIC_RELAXED);
}

long long pario_wait_stuck_ms(void) { return __atomic_load_n(&w_stuck, __ATOMIC_RELAXED) / 1000000L; }

int pario_comm_err(const char *op, const char *file) {
  long long ms = pario_wait_stuck_ms();
  if (!ms) return pario_err(MPI_ERR_OTHER, op, file, 0, "communication among the file's ranks failed");
  return pario_err(MPI_ERR_OTHER, op, file, 0,
                   "no answer from the other ranks within %lld.%03lld s (pario_timeout): a node or link lost, or a "
                   "rank that has not called; the file's collective calls fail from now on",
                   ms / 1000, ms % 1000);
}

/* Whether the waits spin now. */
int pario_wait_spins(void) {
  int s = __atomic_load_n(&w_spin, __ATOMIC_RELAXED);
  if (s < 0) __atomic_store_n(&w_spin, s = auto_spins(), __ATOMIC_RELAXED); /* the same on every racer */
  return s;
}

/* How long a spinning wait spins before it naps after all: a guard for a node that turned
 * busy (the decision is made once), where spinning ranks would hold the cores others need. */
enum { PARIO_WAIT_SPIN_NS = 20 * 1000 * 1000 };

/* Wait for requests without spinning where ranks share cores: ranks waiting for others would
 * otherwise take the CPU those need whenever ranks outnumber cores (MPI libraries busy-poll
 * in MPI_Wait; a blocking barrier of oversubscribed MPICH ranks costs milliseconds). A short
 * spin keeps latency low; then, for up to yield_ns, every poll gives the core away
 * (sched_yield: whoever else is runnable here runs first, and a free core polls again at
 * once); after that the wait sleeps between polls, up to the longest nap (200 us by default).
 * On dedicated cores (pario_wait_spins) every poll after the short spin yields, for up to
 * 20 ms before the wait naps after all: a nap there is only latency.
 * With pario_timeout set, a wait gives up once that time has passed, leaves the requests
 * pending (a nonblocking collective can be neither cancelled nor freed) and latches: every
 * later wait of the process fails at once, and the agreements post nothing (the requests'
 * buffers stay allocated, as MPI may still complete them: see allreduce_polite). */
static int wait_polite(int n, MPI_Request *reqs, MPI_Status *st, int short_wait) {
  int done = 0;
  long nap = 0, t0 = 0, yield_ns = short_wait ? __atomic_load_n(&w_yield, __ATOMIC_RELAXED) : 0;
  long nap_max = __atomic_load_n(&w_nap_max, __ATOMIC_RELAXED);
  long limit = __atomic_load_n(&w_timeout, __ATOMIC_RELAXED), start = limit ? pario_mono_ns() : 0;
  if (n > 0 && pario_wait_stuck_ms()) return MPI_ERR_OTHER;
  if (pario_wait_spins()) yield_ns = PARIO_WAIT_SPIN_NS;
  for (int spin = 0; n > 0; spin++) {
    int rc = PMPI_Testall(n, reqs, &done, st);
    if (done || rc != MPI_SUCCESS) return rc; /* an error (errors return on pario's comms): stop */
    if (spin < 64) continue;
    if (limit && pario_mono_ns() - start >= limit) {
      long none = 0;
      __atomic_compare_exchange_n(&w_stuck, &none, limit, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
      pario_log(1, "an internal wait gave up after %ld ms (pario_timeout)", limit / 1000000L);
      return MPI_ERR_OTHER;
    }
    if (yield_ns && !t0) t0 = pario_mono_ns();
    if (yield_ns && pario_mono_ns() - t0 < yield_ns) {
      sched_yield();
      continue;
    }
    nap = nap ? PARIO_MIN(nap * 2, nap_max) : PARIO_MIN(2000, nap_max);
    struct timespec ts = {nap / 1000000000L, nap % 1000000000L};
    nanosleep(&ts, NULL);
  }
  return MPI_SUCCESS;
}

/* Bulk exchanges (two-phase I/O) nap at once where ranks share cores: yielding waiters still
 * took time from the aggregator that moves the data (docs/collective.md). */
int pario_wait_all(int n, MPI_Request *reqs, MPI_Status *st) { return wait_polite(n, reqs, st, 0); }

/* One request of a round trip to another process (addproc, rma across nodes): nap at once,
 * so that the process that must answer gets the core (docs/sharedfp.md). */
int pario_wait_nap(MPI_Request *r) { return wait_polite(1, r, MPI_STATUS_IGNORE, 0); }

/* Small collectives whose latency is the cost (ordered calls, seek_shared): a nap of up to
 * 200 us per message costs more than the call, so polls yield for a while (pario_wait_yield,
 * 2 ms by default) first (docs/sharedfp.md). */
int pario_wait_all_short(int n, MPI_Request *reqs, MPI_Status *st) { return wait_polite(n, reqs, st, 1); }

/* A polite allreduce (quick: a short wait) whose buffers outlive a wait that gave up: the
 * request stays pending and MPI may still write the result, so the copies it works on are
 * then left allocated (a few bytes, once per process: the latch stops every later one, which
 * posts nothing). MPI_SUCCESS, or MPI_ERR_OTHER (not posted, or the wait failed). */
static int allreduce_polite(const void *in, void *out, int n, MPI_Datatype type, MPI_Op op, MPI_Comm comm, int quick) {
  int size = 0;
  if (pario_wait_stuck_ms() || PMPI_Type_size(type, &size) != MPI_SUCCESS) return MPI_ERR_OTHER;
  size_t b = (size_t)size * (size_t)n;
  char *own = malloc(2 * b + 1); /* without memory: the caller's buffers (a timeout then risks them) */
  const void *sb = in;
  void *rb = out;
  if (own) sb = memcpy(own, in, b), rb = own + b;
  MPI_Request r;
  int rc = PMPI_Iallreduce(sb, rb, n, type, op, comm, &r) == MPI_SUCCESS ? MPI_SUCCESS : MPI_ERR_OTHER;
  if (rc == MPI_SUCCESS) rc = wait_polite(1, &r, MPI_STATUS_IGNORE, quick);
  if (rc != MPI_SUCCESS && pario_wait_stuck_ms()) return MPI_ERR_OTHER; /* own stays: r is pending */
  if (own) memcpy(out, rb, b);
  free(own);
  return rc == MPI_SUCCESS ? MPI_SUCCESS : MPI_ERR_OTHER;
}

int pario_allreduce_max(void *in, void *out, int n, MPI_Datatype type, MPI_Comm comm) {
  return allreduce_polite(in, out, n, type, MPI_MAX, comm, 0);
}

/* MPI_Comm_idup and a polite wait, so that pario_timeout bounds it too (open, a file's first
 * collective call of each kind), into a handle on the heap: after a wait that gave up, MPI may
 * still write it, so it is left allocated. */
int pario_comm_dup_private(MPI_Comm comm, MPI_Comm *out) {
  *out = MPI_COMM_NULL;
  MPI_Comm *dup = malloc(sizeof *dup);
  MPI_Request r;
  int rc = dup ? PMPI_Comm_idup(comm, dup, &r) : MPI_ERR_NO_MEM;
  if (rc == MPI_SUCCESS) rc = pario_wait_stuck_ms() ? MPI_ERR_OTHER : wait_polite(1, &r, MPI_STATUS_IGNORE, 1);
  if (rc != MPI_SUCCESS && pario_wait_stuck_ms()) return MPI_ERR_OTHER; /* dup stays: r may be pending */
  if (rc == MPI_SUCCESS) *out = *dup;
  free(dup);
  if (rc != MPI_SUCCESS) return rc;
  return PMPI_Comm_set_errhandler(*out, MPI_ERRORS_RETURN);
}

int pario_agree(MPI_Comm comm, int local_code) {
  int mine = local_code == MPI_SUCCESS ? 0 : pario_err_class(local_code), worst = mine;
  if (pario_allreduce_max(&mine, &worst, 1, MPI_INT, comm) != MPI_SUCCESS) return MPI_ERR_OTHER;
  return worst;
}

int pario_agree_call(MPI_Comm comm, int local_code, const char *op, const char *file, const char *what, int quick) {
  int rank = 0;
  PMPI_Comm_rank(comm, &rank);
  /* MAXLOC: the worst class, and the lowest rank that had it (named in the message) */
  int mine[2] = {local_code == MPI_SUCCESS ? 0 : pario_err_class(local_code), rank}, worst[2] = {0, 0};
  /* after a wait gave up (here or earlier): the timeout's error, whatever else failed */
  if (allreduce_polite(mine, worst, 1, MPI_2INT, MPI_MAXLOC, comm, quick) != MPI_SUCCESS)
    return pario_wait_stuck_ms() || local_code == MPI_SUCCESS ? pario_comm_err(op, file) : local_code;
  if (worst[0] == MPI_SUCCESS || worst[0] == mine[0]) return local_code;
  if (local_code != MPI_SUCCESS) /* failed here too, but a worse class elsewhere: the class must agree */
    return pario_err(worst[0], op, file, 0, "the %s failed on rank %d, and on this rank with error class %d", what,
                     worst[1], mine[0]);
  return pario_err(worst[0], op, file, 0, "the %s failed on rank %d", what, worst[1]);
}

int pario_same_everywhere(MPI_Comm comm, long long value, int *same) {
  long long v[2] = {value, -value}, r[2];
  *same = 0;
  if (pario_allreduce_max(v, r, 2, MPI_LONG_LONG, comm) != MPI_SUCCESS) return MPI_ERR_OTHER;
  *same = r[0] == -r[1];
  return MPI_SUCCESS;
}

int pario_check_same(MPI_Comm comm, const char *op, const char *file, const char *what, long long value) {
  int same;
  if (pario_same_everywhere(comm, value, &same) != MPI_SUCCESS)
    return pario_err(MPI_ERR_OTHER, op, file, 0, "agreement among ranks failed");
  if (!same) return pario_err(MPI_ERR_NOT_SAME, op, file, 0, "%s differs between ranks", what);
  return MPI_SUCCESS;
}

long long pario_name_hash(const char *s, size_t n) {
  unsigned long long h = 1469598103934665603ull; /* FNV-1a */
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return (long long)(h >> 1);
}

long long pario_host_id(void) {
  char name[MPI_MAX_PROCESSOR_NAME + 1] = "";
  int len = 0;
  if (PMPI_Get_processor_name(name, &len) != MPI_SUCCESS) len = 0;
  return pario_name_hash(name, (size_t)len);
}

/* A receive inside the exchange: a few polls, then polls that give the core away. When the two
 * ranks of the exchange share one core (more ranks than cores, or another program on the
 * other core), a spinning MPI_Recv would hold the core the sender needs until the scheduler
 * preempts it, and every round trip would take a time slice. */
static int clock_recv(void *buf, int n, MPI_Datatype type, int src, MPI_Comm comm) {
  MPI_Request r;
  if (PMPI_Irecv(buf, n, type, src, PARIO_CLOCK_TAG, comm, &r) != MPI_SUCCESS) return MPI_ERR_OTHER;
  pario_wait_all_short(1, &r, MPI_STATUSES_IGNORE);
  return MPI_SUCCESS;
}

/* Rank 0 with one peer: PARIO_CLOCK_ROUNDS round trips. The peer reads its clock t after the
 * ping left rank 0 (at t0) and before the reply arrived (t3), so rank 0's time minus the peer's
 * lies in [t0 - t, t3 - t]; every round narrows iv (the interval so far), whatever delayed the
 * others (a rank descheduled mid-exchange only widens its own round). best: the shortest
 * round's interval. *more: 1 if the batch narrowed iv by more than a quarter (the first
 * always does), so another may help. */
static int clock_batch(MPI_Comm comm, int peer, long long iv[2], long long best[2], int *more) {
  long long t, w0 = iv[1] - iv[0];
  for (int i = 0; i < PARIO_CLOCK_ROUNDS; i++) {
    long long t0 = pario_mono_ns();
    if (PMPI_Send(NULL, 0, MPI_BYTE, peer, PARIO_CLOCK_TAG, comm) != MPI_SUCCESS ||
        clock_recv(&t, 1, MPI_LONG_LONG, peer, comm) != MPI_SUCCESS)
      return MPI_ERR_OTHER;
    long long t3 = pario_mono_ns();
    iv[0] = PARIO_MAX(iv[0], t0 - t);
    iv[1] = PARIO_MIN(iv[1], t3 - t);
    if (t3 - t0 < best[1] - best[0]) best[0] = t0 - t, best[1] = t3 - t;
  }
  *more = iv[0] <= iv[1] && iv[1] - iv[0] < w0 - w0 / 4;
  return MPI_SUCCESS;
}

/* Rank 0 with one peer: batches of round trips until one narrows the interval by less than a
 * quarter, at least two (a burst of contention that spoilt one batch has usually passed by
 * the next), at most PARIO_CLOCK_BATCHES. out: the middle of the interval and half its
 * width. Rounds that do not overlap mean the clocks moved against each other during the
 * exchange (a slewed clock on another host): then the shortest round alone. */
static int clock_probe(MPI_Comm comm, int peer, long long out[2]) {
  long long iv[2] = {LLONG_MIN / 2, LLONG_MAX / 2}, best[2] = {0, LLONG_MAX};
  int more = 1, rc = MPI_SUCCESS;
  for (int b = 0; more && rc == MPI_SUCCESS; b++) {
    rc = clock_batch(comm, peer, iv, best, &more);
    more = more && b + 1 < PARIO_CLOCK_BATCHES;
    /* the peer learns whether another batch follows */
    if (rc == MPI_SUCCESS && PMPI_Send(&more, 1, MPI_INT, peer, PARIO_CLOCK_TAG, comm) != MPI_SUCCESS)
      rc = MPI_ERR_OTHER;
  }
  if (iv[0] > iv[1]) iv[0] = best[0], iv[1] = best[1];
  out[0] = iv[0] + (iv[1] - iv[0]) / 2;
  out[1] = iv[1] - out[0]; /* >= out[0] - iv[0] */
  return rc;
}

/* A measured peer: wait (napping) for rank 0's first ping, then answer every ping with the
 * clock read after it arrived, batch after batch while rank 0 says go on. */
static int clock_answer(MPI_Comm comm) {
  MPI_Request r;
  int more = 1;
  if (PMPI_Irecv(NULL, 0, MPI_BYTE, 0, PARIO_CLOCK_TAG, comm, &r) != MPI_SUCCESS) return MPI_ERR_OTHER;
  pario_wait_all(1, &r, MPI_STATUSES_IGNORE);
  while (more) {
    for (int i = 0;;) {
      long long t = pario_mono_ns();
      if (PMPI_Send(&t, 1, MPI_LONG_LONG, 0, PARIO_CLOCK_TAG, comm) != MPI_SUCCESS) return MPI_ERR_OTHER;
      if (++i == PARIO_CLOCK_ROUNDS) break;
      if (clock_recv(NULL, 0, MPI_BYTE, 0, comm) != MPI_SUCCESS) return MPI_ERR_OTHER;
    }
    if (clock_recv(&more, 1, MPI_INT, 0, comm) != MPI_SUCCESS) return MPI_ERR_OTHER;
    if (more && clock_recv(NULL, 0, MPI_BYTE, 0, comm) != MPI_SUCCESS) return MPI_ERR_OTHER;
  }
  return MPI_SUCCESS;
}

/* The lowest rank with r's host among host[0..np) (r itself when it leads). */
static int host_leader(const long long *host, int r) {
  int q = 0;
  while (host[q] != host[r]) q++;
  return q;
}

typedef struct host_rank { long long host; int rank; } host_rank;

static int by_host_rank(const void *a, const void *b) {
  const host_rank *x = a, *y = b;
  if (x->host != y->host) return x->host < y->host ? -1 : 1;
  return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* Rank 0: measure every leader off its host (in rank order), then give each rank its
 * leader's result; ranks sorted by host find their leaders in O(np log np). */
static int clock_drive(MPI_Comm comm, const long long *host, int np, long long *res, host_rank *hr) {
  int rc = MPI_SUCCESS;
  for (int r = 0; r < np; r++) hr[r] = (host_rank){host[r], r};
  qsort(hr, (size_t)np, sizeof *hr, by_host_rank);
  for (int i = 0, lead = 0; i < np; i++) { /* res[2r]: r's leader, for now */
    if (i == 0 || hr[i].host != hr[i - 1].host) lead = hr[i].rank;
    res[2 * hr[i].rank] = lead;
  }
  for (int r = 0; r < np; r++) {
    int lead = (int)res[2 * r];
    if (host[r] == host[0]) res[2 * r] = res[2 * r + 1] = 0; /* one clock with rank 0 */
    else if (lead == r) {
      res[2 * r] = res[2 * r + 1] = 0;
      if (rc == MPI_SUCCESS) rc = clock_probe(comm, r, &res[2 * r]);
    }
    else res[2 * r] = res[2 * lead], res[2 * r + 1] = res[2 * lead + 1]; /* lead < r: done */
  }
  return rc;
}

int pario_clock_offset(MPI_Comm comm, int by_host, long long *offset_ns, long long *err_ns) {
  int rank, np, rc;
  MPI_Request req;
  *offset_ns = *err_ns = 0;
  if (PMPI_Comm_rank(comm, &rank) != MPI_SUCCESS || PMPI_Comm_size(comm, &np) != MPI_SUCCESS) return MPI_ERR_OTHER;
  if (np == 1) return MPI_SUCCESS;
  long long me = by_host ? pario_host_id() : rank, got[2] = {0, 0};
  long long *host = malloc(sizeof(long long) * (size_t)np), *res = NULL;
  host_rank *order = NULL;
  if (rank == 0) res = malloc(sizeof(long long) * 2 * (size_t)np), order = malloc(sizeof *order * (size_t)np);
  rc = pario_agree(comm, host && (rank || (res && order)) ? MPI_SUCCESS : MPI_ERR_NO_MEM);
  if (rc == MPI_SUCCESS && PMPI_Iallgather(&me, 1, MPI_LONG_LONG, host, 1, MPI_LONG_LONG, comm, &req) != MPI_SUCCESS)
    rc = MPI_ERR_OTHER;
  if (rc == MPI_SUCCESS) {
    pario_wait_all(1, &req, MPI_STATUSES_IGNORE);
    /* every rank knows whether it leads a host other than rank 0's, so whether to answer */
    if (rank == 0) rc = clock_drive(comm, host, np, res, order);
    else if (host[rank] != host[0] && host_leader(host, rank) == rank) rc = clock_answer(comm);
    if (PMPI_Iscatter(res, 2, MPI_LONG_LONG, got, 2, MPI_LONG_LONG, 0, comm, &req) != MPI_SUCCESS) rc = MPI_ERR_OTHER;
    else pario_wait_all(1, &req, MPI_STATUSES_IGNORE);
    *offset_ns = got[0];
    *err_ns = got[1];
  }
  free(host);
  free(res);
  free(order);
  return rc;
}
