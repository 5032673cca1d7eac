/* pario-exchange: the data exchange of a two-phase collective write, alone (no file I/O),
 * done three ways, to choose how pario's collective/ layer moves data:
 *   alltoallv  MPI_Alltoallv per round, every rank taking part (zero counts included);
 *   p2p-wait   MPI_Isend/MPI_Irecv per round, completed with MPI_Waitall;
 *   p2p-polite MPI_Isend/MPI_Irecv per round, completed by polling MPI_Testall with sleeps
 *              between polls after a short spin (what src/collective/ does);
 *   p2p-yield  the same polling with sched_yield instead of the sleeps.
 * Each rank holds DATA bytes interleaved finely with the other ranks' in the file, so every
 * aggregator's window holds an equal share of every rank's data; the accessed span is cut
 * into one domain per aggregator and each domain into rounds of ROUND bytes. The aggregator
 * checks every byte it receives. Time per exchange: barrier, all rounds, barrier, maximum
 * over ranks; reported: the median of the iterations. */
#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char usage[] =
    "usage: pario-exchange [OPTIONS]   (mpiexec -n P pario-exchange)\n"
    "The data exchange of a two-phase collective write without file I/O, done with\n"
    "MPI_Alltoallv, with nonblocking point-to-point + MPI_Waitall, and with nonblocking\n"
    "point-to-point + polite polling (pario's way) or polling with sched_yield; median time\n"
    "of the iterations.\n\n"
    "  -d, --data SIZE        bytes per rank (default 8M; suffixes K, M, G)\n"
    "  -r, --round SIZE       bytes of file per aggregator per round (default 4M)\n"
    "  -a, --aggregators N    aggregators, ranks 0..N-1 spread evenly (default 1)\n"
    "  -i, --iterations N     timed exchanges per method (default 10)\n"
    "  -m, --method LIST      alltoallv,p2p-wait,p2p-polite,p2p-yield (default all)\n"
    "  -h, --help             this help\n";

static int rank, np;

static long long parse_size(const char *s) {
  char *end;
  double v = strtod(s, &end);
  long long m = 1;
  if (*end == 'K' || *end == 'k') m = 1LL << 10;
  else if (*end == 'M' || *end == 'm') m = 1LL << 20;
  else if (*end == 'G' || *end == 'g') m = 1LL << 30;
  else if (*end) return -1;
  return v > 0 ? (long long)(v * (double)m) : -1;
}

static unsigned char datum(int r, long long i) { return (unsigned char)(r * 29 + i * 7 + 3); }

static void polite_wait(int n, MPI_Request *reqs, MPI_Status *st) {
  int done = 0;
  long nap = 0;
  for (int spin = 0; n > 0; spin++) {
    MPI_Testall(n, reqs, &done, st);
    if (done) return;
    if (spin < 64) continue;
    nap = nap ? (nap * 2 < 200000 ? nap * 2 : 200000) : 2000;
    struct timespec ts = {0, nap};
    nanosleep(&ts, NULL);
  }
}

static void yield_wait(int n, MPI_Request *reqs, MPI_Status *st) {
  int done = 0;
  for (int spin = 0; n > 0; spin++) {
    MPI_Testall(n, reqs, &done, st);
    if (done) return;
    if (spin >= 64) sched_yield();
  }
}

enum { ALLTOALLV, P2P_WAIT, P2P_POLITE, P2P_YIELD, NMETHODS };
static const char *const names[NMETHODS] = {"alltoallv", "p2p-wait", "p2p-polite", "p2p-yield"};

typedef struct {
  long long data, round;
  int naggr, iters;
} opts;

/* Rank r's share of aggregator a's window in round k: [*off, *off + *len) of r's data. The
 * span of np * data bytes is cut into naggr domains; with fine interleaving every rank owns
 * 1/np of every window. */
static void share(const opts *o, int a, long long k, long long *off, long long *len) {
  long long per = o->data / o->naggr, lo = a * per + k * (o->round / np);
  long long hi = a == o->naggr - 1 ? o->data : (a + 1) * per;
  long long end = lo + o->round / np < hi ? lo + o->round / np : hi;
  *off = lo;
  *len = end > lo ? end - lo : 0;
}

/* One exchange of every round; returns the number of bytes that arrived wrong here. */
static long long exchange(const opts *o, int method, const unsigned char *mine, unsigned char *stage,
                          long long rounds, const int *aggr, int me_aggr) {
  long long bad = 0;
  int *sc = calloc((size_t)np, sizeof(int)), *sd = calloc((size_t)np, sizeof(int));
  int *rc = calloc((size_t)np, sizeof(int)), *rd = calloc((size_t)np, sizeof(int));
  MPI_Request *reqs = malloc(sizeof(MPI_Request) * (size_t)(2 * np + o->naggr));
  MPI_Status *st = malloc(sizeof(MPI_Status) * (size_t)(2 * np + o->naggr));
  for (long long k = 0; k < rounds; k++) {
    int nreq = 0;
    memset(sc, 0, sizeof(int) * (size_t)np);
    memset(rc, 0, sizeof(int) * (size_t)np);
    for (int a = 0; a < o->naggr; a++) {
      long long off, len;
      share(o, a, k, &off, &len);
      sc[aggr[a]] = (int)len;
      sd[aggr[a]] = (int)off;
    }
    if (me_aggr >= 0) {
      long long at = 0;
      for (int r = 0; r < np; r++) {
        long long off, len;
        share(o, me_aggr, k, &off, &len);
        rc[r] = (int)len;
        rd[r] = (int)at;
        at += len;
      }
    }
    if (method == ALLTOALLV) {
      MPI_Alltoallv(mine, sc, sd, MPI_BYTE, stage, rc, rd, MPI_BYTE, MPI_COMM_WORLD);
    } else {
      for (int r = 0; r < np && me_aggr >= 0; r++)
        if (rc[r]) MPI_Irecv(stage + rd[r], rc[r], MPI_BYTE, r, 5, MPI_COMM_WORLD, &reqs[nreq++]);
      for (int a = 0; a < o->naggr; a++)
        if (sc[aggr[a]]) MPI_Isend(mine + sd[aggr[a]], sc[aggr[a]], MPI_BYTE, aggr[a], 5, MPI_COMM_WORLD, &reqs[nreq++]);
      if (method == P2P_WAIT) MPI_Waitall(nreq, reqs, st);
      else if (method == P2P_POLITE) polite_wait(nreq, reqs, st);
      else yield_wait(nreq, reqs, st);
    }
    for (int r = 0; r < np && me_aggr >= 0; r++) {
      long long off, len;
      share(o, me_aggr, k, &off, &len);
      for (long long i = 0; i < len; i++) bad += stage[rd[r] + i] != datum(r, off + i);
    }
  }
  free(sc);
  free(sd);
  free(rc);
  free(rd);
  free(reqs);
  free(st);
  return bad;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  opts o = {8LL << 20, 4LL << 20, 1, 10};
  int want[NMETHODS] = {1, 1, 1, 1};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    int ok = 1;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      if (rank == 0) fputs(usage, stdout);
      MPI_Finalize();
      return 0;
    } else if (v && (!strcmp(a, "-d") || !strcmp(a, "--data"))) ok = (o.data = parse_size(v)) > 0, i++;
    else if (v && (!strcmp(a, "-r") || !strcmp(a, "--round"))) ok = (o.round = parse_size(v)) > 0, i++;
    else if (v && (!strcmp(a, "-a") || !strcmp(a, "--aggregators"))) ok = (o.naggr = atoi(v)) > 0 && o.naggr <= np, i++;
    else if (v && (!strcmp(a, "-i") || !strcmp(a, "--iterations"))) ok = (o.iters = atoi(v)) > 0, i++;
    else if (v && (!strcmp(a, "-m") || !strcmp(a, "--method"))) {
      memset(want, 0, sizeof want);
      char *list = strdup(v), *save = NULL;
      for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int found = 0;
        for (int m = 0; m < NMETHODS; m++)
          if (!strcmp(t, names[m])) want[m] = found = 1;
        ok &= found;
      }
      free(list);
      i++;
    } else ok = 0;
    if (!ok || o.data >= 1LL << 31 || o.round < np) {
      if (rank == 0) fprintf(stderr, "pario-exchange: bad option near '%s'\n%s", a, usage);
      MPI_Finalize();
      return 2;
    }
  }
  int *aggr = malloc(sizeof(int) * (size_t)o.naggr), me_aggr = -1;
  for (int a = 0; a < o.naggr; a++) {
    aggr[a] = (int)((long long)a * np / o.naggr);
    if (aggr[a] == rank) me_aggr = a;
  }
  long long per = o.data / o.naggr, rounds = (per + o.round / np - 1) / (o.round / np);
  unsigned char *mine = malloc((size_t)o.data), *stage = malloc((size_t)o.round + (size_t)np);
  for (long long i = 0; i < o.data; i++) mine[i] = datum(rank, i);
  if (rank == 0)
    printf("== exchange  %d ranks, %d aggregator(s), %lld bytes per rank, rounds of %lld bytes (%lld rounds)\n"
           "%-12s %12s %10s %s\n", np, o.naggr, o.data, o.round, rounds, "method", "median s", "MB/s", "verified");
  int status = 0;
  for (int m = 0; m < NMETHODS; m++) {
    if (!want[m]) continue;
    double *t = malloc(sizeof(double) * (size_t)o.iters);
    long long bad = 0, allbad = 0;
    exchange(&o, m, mine, stage, rounds, aggr, me_aggr); /* warm-up */
    for (int k = 0; k < o.iters; k++) {
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = MPI_Wtime();
      bad += exchange(&o, m, mine, stage, rounds, aggr, me_aggr);
      MPI_Barrier(MPI_COMM_WORLD);
      double dt = MPI_Wtime() - t0;
      MPI_Allreduce(&dt, &t[k], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    }
    MPI_Allreduce(&bad, &allbad, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    qsort(t, (size_t)o.iters, sizeof(double), cmp);
    double med = t[o.iters / 2];
    if (rank == 0)
      printf("%-12s %12.6f %10.1f %s\n", names[m], med, (double)o.data * np / med / 1e6,
             allbad ? "NO: wrong bytes arrived" : "yes");
    status |= allbad != 0;
    free(t);
  }
  free(aggr);
  free(mine);
  free(stage);
  MPI_Finalize();
  return status;
}
