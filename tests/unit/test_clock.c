/* Clock alignment (pario_clock_offset, core/comm.c) at several ranks on one machine, with
 * core/comm.c compiled into the test and its clock_gettime replaced (CMakeLists.txt): every
 * host's CLOCK_MONOTONIC reads a known shift ahead (a per-host amount from the processor
 * name, up to about 2 s), so the true offset of every rank is known and nonzero across hosts.
 * On one host, or on MPICH's virtual nodes (libpario-vnode.so gives each its own processor
 * name; tests/multinode), checks for argv[1] repetitions (default 3):
 *  - by host: ranks on rank 0's host get 0 and 0 exactly; every other rank the offset of
 *    its host's first rank; the true offset within the reported bound (sign included);
 *  - every rank measured on its own (by_host 0): the true offset within the bound;
 *  - the same on a communicator in reverse order (its rank 0 is the last world rank), and
 *    MPI_COMM_SELF (0, 0).
 * Prints the median and the largest |error| (reported offset minus true offset) and bound. */
#include <dlfcn.h>
#include <time.h>

#include "core/comm.h"
#include "../mpi/harness.h"

static long long shift_ns; /* this process's clock is ahead of the real one by this much */

/* core/comm.c's clock_gettime (renamed there by CMakeLists.txt). */
int test_clock_gettime(clockid_t id, struct timespec *t);
int test_clock_gettime(clockid_t id, struct timespec *t) {
  int rc = clock_gettime(id, t);
  if (rc == 0 && id == CLOCK_MONOTONIC) {
    long long ns = t->tv_sec * 1000000000LL + t->tv_nsec + shift_ns;
    t->tv_sec = ns / 1000000000LL;
    t->tv_nsec = ns % 1000000000LL;
  }
  return rc;
}

/* The shift of this process's host: every rank of one host reads one clock. */
static long long host_shift(void) {
  char name[MPI_MAX_PROCESSOR_NAME + 1] = "";
  int len = 0;
  unsigned h = 5381;
  MPI_Get_processor_name(name, &len);
  for (int i = 0; i < len; i++) h = h * 33 + (unsigned char)name[i];
  return (long long)(h % 2000) * 1000003LL;
}

static int cmp_ll(const void *a, const void *b) {
  long long x = *(const long long *)a, y = *(const long long *)b;
  return x < y ? -1 : x > y;
}

/* err[k], bound[k] of every rank and repetition on comm's rank 0 (where bound >= 0). */
static long long *errs, *bounds;
static int nerr;

/* One alignment on comm: the reported offset against the true one, and the by-host rules. */
static void align(MPI_Comm comm, int by_host, const char *what) {
  int r, n;
  long long off = -1, bound = -1, mine[3], *all;
  MPI_Comm_rank(comm, &r);
  MPI_Comm_size(comm, &n);
  long long root_shift = shift_ns;
  MPI_Bcast(&root_shift, 1, MPI_LONG_LONG, 0, comm);
  int rc = pario_clock_offset(comm, by_host, &off, &bound);
  long long truth = root_shift - shift_ns; /* add to my clock to read rank 0's */
  CHECK(rc == MPI_SUCCESS, "%s: pario_clock_offset returned %d", what, rc);
  CHECK(bound >= 0 && llabs(off - truth) <= bound,
        "%s, rank %d: offset %lld ns, true %lld ns, error %lld ns beyond the bound %lld ns", what, r, off, truth,
        off - truth, bound);
  mine[0] = off, mine[1] = bound, mine[2] = shift_ns;
  all = malloc(sizeof(long long) * 3 * (size_t)n);
  MPI_Gather(mine, 3, MPI_LONG_LONG, all, 3, MPI_LONG_LONG, 0, comm);
  for (int q = 0; r == 0 && q < n; q++) {
    long long *a = &all[3 * q];
    int lead = 0;
    while (all[3 * lead + 2] != a[2]) lead++; /* the lowest rank with q's clock */
    if (by_host && a[2] == all[2])
      CHECK(a[0] == 0 && a[1] == 0, "%s: rank %d on rank 0's host: offset %lld, bound %lld (want 0, 0)", what, q,
            a[0], a[1]);
    else if (by_host)
      CHECK(a[0] == all[3 * lead] && a[1] == all[3 * lead + 1],
            "%s: rank %d: %lld+-%lld ns, its host's first rank %d: %lld+-%lld ns", what, q, a[0], a[1], lead,
            all[3 * lead], all[3 * lead + 1]);
    if (q > 0 && (!by_host || (a[2] != all[2] && lead == q))) { /* measured: its error and bound */
      errs[nerr] = llabs(a[0] - (all[2] - a[2]));
      bounds[nerr++] = a[1];
    }
  }
  free(all);
}

static void report(const char *what) {
  if (t_rank != 0 || nerr == 0) return;
  qsort(errs, (size_t)nerr, sizeof *errs, cmp_ll);
  qsort(bounds, (size_t)nerr, sizeof *bounds, cmp_ll);
  printf("clock, %s: %d measured offsets: |error| median %lld ns, max %lld ns; bound median %lld ns, max %lld ns\n",
         what, nerr, errs[nerr / 2], errs[nerr - 1], bounds[nerr / 2], bounds[nerr - 1]);
  nerr = 0;
}

int main(int argc, char **argv) {
  start(&argc, &argv);
  int np, reps = argc > 1 ? atoi(argv[1]) : 3;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  shift_ns = host_shift();
  errs = malloc(sizeof(long long) * (size_t)(np * (reps + 2)));
  bounds = malloc(sizeof(long long) * (size_t)(np * (reps + 2)));
  MPI_Comm rev;
  MPI_Comm_split(MPI_COMM_WORLD, 0, np - t_rank, &rev);
  for (int i = 0; i < reps; i++) align(MPI_COMM_WORLD, 1, "by host");
  report("by host");
  for (int i = 0; i < reps; i++) align(MPI_COMM_WORLD, 0, "every rank");
  report("every rank");
  align(rev, 1, "reversed, by host");
  align(rev, 0, "reversed, every rank");
  nerr = 0;
  align(MPI_COMM_SELF, 1, "MPI_COMM_SELF");
  MPI_Comm_free(&rev);
  free(errs);
  free(bounds);
  return finish("clock");
}
