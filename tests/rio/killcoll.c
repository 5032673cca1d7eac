/* Collective calls of every kind must fail alike on every rank (docs/collective.md#errors):
 *   remote URL DIR  rounds of every kind of collective call on three x-rio files (independent,
 *                   aggregated and automatic paths) until a call fails on this rank, which then
 *                   stops like a program that stops on error; rank 0 creates DIR/ready after
 *                   the first round, and killcoll.sh kills the server at a random moment. Each
 *                   rank prints "killcoll: rank R call N KIND class C (own|other)"; the script
 *                   checks that every rank stopped at the same call with the same class.
 *   local DIR       a local file; rank np-1 cannot write past RLIMIT_FSIZE (a real EFBIG on
 *                   one rank only): every kind of collective write fails on every rank with the
 *                   same class, and the ranks whose own write succeeded are told which rank
 *                   failed. Checked here. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <sys/resource.h>
#include <time.h>

#include "../mpi/harness.h"

enum { S = 64 * 1024, NKINDS = 12 };
static int rank, np;
static MPI_File h[3]; /* independent (cb disable), aggregated (cb enable), automatic */
static char wbuf[S], rbuf[S];

static const char *const kind_name[NKINDS] = {
    "write_at_all/indep", "write_all/aggr",      "write_at_all/auto", "read_at_all/indep",
    "read_all/aggr",      "read_at_all/auto",    "iwrite_at_all/aggr", "iread_at_all/indep",
    "write_at_all_begin/indep", "read_all_begin/aggr", "write_ordered", "read_ordered"};
static const int local_kinds[] = {0, 1, 2, 6, 8, 10}; /* the writes */

static int waited(int rc, MPI_Request *r) { return rc == MPI_SUCCESS ? MPI_Wait(r, MPI_STATUS_IGNORE) : rc; }

/* One collective call of kind k; its error code. */
static int call(int k) {
  MPI_Offset at = (MPI_Offset)rank * S;
  MPI_Request r;
  int rc;
  switch (k) {
  case 0: return MPI_File_write_at_all(h[0], at, wbuf, S, MPI_BYTE, MPI_STATUS_IGNORE);
  case 1: MPI_File_seek(h[1], at, MPI_SEEK_SET); return MPI_File_write_all(h[1], wbuf, S, MPI_BYTE, MPI_STATUS_IGNORE);
  case 2: return MPI_File_write_at_all(h[2], at, wbuf, S, MPI_BYTE, MPI_STATUS_IGNORE);
  case 3: return MPI_File_read_at_all(h[0], at, rbuf, S, MPI_BYTE, MPI_STATUS_IGNORE);
  case 4: MPI_File_seek(h[1], at, MPI_SEEK_SET); return MPI_File_read_all(h[1], rbuf, S, MPI_BYTE, MPI_STATUS_IGNORE);
  case 5: return MPI_File_read_at_all(h[2], at, rbuf, S, MPI_BYTE, MPI_STATUS_IGNORE);
  case 6: return waited(MPI_File_iwrite_at_all(h[1], at, wbuf, S, MPI_BYTE, &r), &r);
  case 7: return waited(MPI_File_iread_at_all(h[0], at, rbuf, S, MPI_BYTE, &r), &r);
  case 8:
    rc = MPI_File_write_at_all_begin(h[0], at, wbuf, S, MPI_BYTE);
    return rc == MPI_SUCCESS ? MPI_File_write_at_all_end(h[0], wbuf, MPI_STATUS_IGNORE) : rc;
  case 9:
    MPI_File_seek(h[1], at, MPI_SEEK_SET);
    rc = MPI_File_read_all_begin(h[1], rbuf, S, MPI_BYTE);
    return rc == MPI_SUCCESS ? MPI_File_read_all_end(h[1], rbuf, MPI_STATUS_IGNORE) : rc;
  case 10: return MPI_File_write_ordered(h[2], wbuf, S, MPI_BYTE, MPI_STATUS_IGNORE);
  default: return MPI_File_read_ordered(h[2], rbuf, S, MPI_BYTE, MPI_STATUS_IGNORE);
  }
}

static int open_all(const char *base, const char *timeout) {
  static const char *const how[3] = {"disable", "enable", "automatic"};
  char path[1200], nodes[16];
  snprintf(nodes, sizeof nodes, "%d", np);
  for (int i = 0; i < 3; i++) {
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "romio_cb_write", how[i]);
    MPI_Info_set(info, "romio_cb_read", how[i]);
    if (i == 1) MPI_Info_set(info, "cb_nodes", nodes);
    if (timeout) MPI_Info_set(info, "pario_rio_timeout", timeout);
    snprintf(path, sizeof path, "%s.%d", base, i);
    int rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &h[i]);
    MPI_Info_free(&info);
    CHECK(rc == MPI_SUCCESS, "open %s: %s", path, err_text(rc));
    if (rc != MPI_SUCCESS) return rc;
    MPI_File_set_errhandler(h[i], MPI_ERRORS_RETURN);
  }
  return MPI_SUCCESS;
}

static void close_all(void) {
  for (int i = 0; i < 3; i++) MPI_File_close(&h[i]); /* may fail: the server is gone */
}

static const char *whose(int rc) { return strstr(err_text(rc), "failed on rank") ? "other" : "own"; }

/* Calls until one fails on this rank (or 60 s); the script compares the ranks' lines. */
static void remote(const char *url, const char *dir) {
  char base[1100], flag[1100];
  snprintf(base, sizeof base, "%s/killcoll.%d", url, (int)getpid());
  MPI_Bcast(base, sizeof base, MPI_CHAR, 0, MPI_COMM_WORLD);
  if (open_all(base, "3") != MPI_SUCCESS) return;
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  long n = 0;
  int rc = MPI_SUCCESS, k = 0;
  for (int round = 0; rc == MPI_SUCCESS; round++) {
    for (k = 0; k < NKINDS && rc == MPI_SUCCESS; k++, n++) rc = call(k);
    if (round == 0 && rank == 0) { /* killcoll.sh kills the server from now on */
      snprintf(flag, sizeof flag, "%s/ready", dir);
      fclose(fopen(flag, "w"));
    }
    clock_gettime(CLOCK_MONOTONIC, &t);
    if (t.tv_sec - t0.tv_sec > 60) break;
  }
  if (rc != MPI_SUCCESS)
    printf("killcoll: rank %d call %ld %s class %d (%s): %s\n", rank, n - 1, kind_name[k - 1], err_class(rc),
           whose(rc), err_text(rc));
  else
    printf("killcoll: rank %d call %ld no failure in 60 s\n", rank, n);
  fflush(stdout);
  close_all();
}

/* Rank np-1 cannot write past (np - 1) * S + S / 2: its part of every write fails with EFBIG. */
static void local(const char *dir) {
  char base[1100];
  snprintf(base, sizeof base, "%s/killcoll-local.%d", dir, (int)getpid());
  MPI_Bcast(base, sizeof base, MPI_CHAR, 0, MPI_COMM_WORLD);
  if (open_all(base, NULL) != MPI_SUCCESS) return;
  if (rank == np - 1) {
    signal(SIGXFSZ, SIG_IGN); /* the write fails with EFBIG instead of killing the process */
    struct rlimit rl = {(rlim_t)(np - 1) * S + S / 2, (rlim_t)(np - 1) * S + S / 2};
    CHECK(setrlimit(RLIMIT_FSIZE, &rl) == 0, "setrlimit");
  }
  for (size_t i = 0; i < sizeof local_kinds / sizeof *local_kinds; i++) {
    int k = local_kinds[i], rc = call(k), c = err_class(rc), lo = 0, hi = 0;
    MPI_Allreduce(&c, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&c, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    CHECK(lo == hi && lo != MPI_SUCCESS, "%s: classes %d..%d on the ranks (%s)", kind_name[k], lo, hi, err_text(rc));
    if (rc != MPI_SUCCESS && rank < np - 1) /* rank np-1 was the one: the others are told so */
      CHECK(strstr(err_text(rc), "failed on rank") != NULL, "%s: %s", kind_name[k], err_text(rc));
    if (rank == 0) printf("killcoll: %s class %d: %s\n", kind_name[k], c, err_text(rc));
  }
  close_all();
  if (rank == 0)
    for (int i = 0; i < 3; i++) {
      char p[1200];
      snprintf(p, sizeof p, "%s.%d", base, i);
      unlink(p);
    }
}

int main(int argc, char **argv) {
  start(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN); /* MPI_Wait's errors come back */
  memset(wbuf, 'a' + rank, sizeof wbuf);
  /* the test is about pario's agreement: it must be pario that served the run */
  int served = dlsym(RTLD_DEFAULT, "pario_version") != NULL;
  CHECK(served, "pario is not loaded (pario_version not found)");
  if (!served) return finish("killcoll");
  const char *mode = argc > 1 ? argv[1] : "";
  if (!strcmp(mode, "remote") && argc > 3) remote(argv[2], argv[3]);
  else if (!strcmp(mode, "local") && argc > 2 && np > 1) local(argv[2]);
  else CHECK(0, "usage: killcoll remote URL DIR | local DIR (2 ranks or more)");
  return finish("killcoll");
}
