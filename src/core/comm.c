/* Communication helpers shared by every layer (see comm.h): polite waits, agreement,
 * same-value checks and the monotonic clock. */
#include "core/comm.h"

#include <sched.h>
#include <time.h>

long pario_mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/* Wait for requests without spinning: ranks waiting for others would otherwise take the CPU
 * those need whenever ranks outnumber cores (MPI libraries busy-poll in MPI_Wait; a blocking
 * barrier of oversubscribed MPICH ranks costs milliseconds). A short spin keeps latency low;
 * then, for up to yield_ns, every poll gives the core away (sched_yield: whoever else is
 * runnable here runs first, and a free core polls again at once); after that the wait sleeps
 * between polls, up to 200 us. */
static void wait_polite(int n, MPI_Request *reqs, MPI_Status *st, long yield_ns) {
  int done = 0;
  long nap = 0, t0 = 0;
  for (int spin = 0; n > 0; spin++) {
    PMPI_Testall(n, reqs, &done, st);
    if (done) return;
    if (spin < 64) continue;
    if (yield_ns && !t0) t0 = pario_mono_ns();
    if (yield_ns && pario_mono_ns() - t0 < yield_ns) {
      sched_yield();
      continue;
    }
    nap = nap ? PARIO_MIN(nap * 2, 200000) : 2000;
    struct timespec ts = {0, nap};
    nanosleep(&ts, NULL);
  }
}

/* Bulk exchanges (two-phase I/O) nap at once: yielding waiters still took time from the
 * aggregator that moves the data (docs/collective.md). */
void pario_wait_all(int n, MPI_Request *reqs, MPI_Status *st) { wait_polite(n, reqs, st, 0); }

/* Small collectives whose latency is the cost (ordered calls, seek_shared): a nap of up to
 * 200 us per message costs more than the call, so polls yield for up to 2 ms first
 * (docs/sharedfp.md). */
void pario_wait_all_short(int n, MPI_Request *reqs, MPI_Status *st) { wait_polite(n, reqs, st, 2000000L); }

int pario_allreduce_max(void *in, void *out, int n, MPI_Datatype type, MPI_Comm comm) {
  MPI_Request r;
  if (PMPI_Iallreduce(in, out, n, type, MPI_MAX, comm, &r) != MPI_SUCCESS) return MPI_ERR_OTHER;
  pario_wait_all(1, &r, MPI_STATUSES_IGNORE);
  return MPI_SUCCESS;
}

int pario_agree(MPI_Comm comm, int local_code) {
  int mine = local_code == MPI_SUCCESS ? 0 : pario_err_class(local_code), worst = mine;
  if (pario_allreduce_max(&mine, &worst, 1, MPI_INT, comm) != MPI_SUCCESS) return MPI_ERR_OTHER;
  return worst;
}

int pario_check_same(MPI_Comm comm, const char *op, const char *file, const char *what, long long value) {
  long long v[2] = {value, -value}, r[2];
  if (pario_allreduce_max(v, r, 2, MPI_LONG_LONG, comm) != MPI_SUCCESS)
    return pario_err(MPI_ERR_OTHER, op, file, 0, "agreement among ranks failed");
  if (r[0] != -r[1]) return pario_err(MPI_ERR_NOT_SAME, op, file, 0, "%s differs between ranks", what);
  return MPI_SUCCESS;
}
