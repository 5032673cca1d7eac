/* The file lifecycle and the defects a review found in it: a failing close goes to the
 * file's own errhandler; ordered calls return on every rank when one rank's arguments are
 * bad; a second split collective moves no pointer; a nonblocking collective keeps the view
 * it started with across set_view, and its release frees that view's datatypes outside MPI's
 * callbacks; set_atomicity waits for operations in flight; worker
 * threads end at MPI_Finalize. */
#include "harness.h"

#include <dirent.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

static int rank, np;
static char path[512];

static int eh_calls;
static MPI_File eh_file;
static void count_errors(MPI_File *fh, int *code, ...) {
  eh_calls++;
  eh_file = *fh;
  (void)code;
}

/* Each rank opens its own file with DELETE_ON_CLOSE and replaces it by a directory: the
 * close's delete fails (EISDIR) and must reach the file's errhandler, not the default one.
 * A file already gone is not an error (as in ROMIO). */
static void close_errhandler(void) {
  char mine[600];
  MPI_File fh;
  MPI_Errhandler eh;
  snprintf(mine, sizeof mine, "%s.close.%d", path, rank);
  MPI_File_create_errhandler(count_errors, &eh);
  int rc = MPI_File_open(MPI_COMM_SELF, mine, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE,
                         MPI_INFO_NULL, &fh);
  CHECK(rc == MPI_SUCCESS, "open %s", err_text(rc));
  MPI_File_set_errhandler(fh, eh);
  MPI_File keep = fh;
  unlink(mine);
  mkdir(mine, 0700);
  eh_calls = 0;
  rc = MPI_File_close(&fh);
  CHECK(rc != MPI_SUCCESS, "close whose delete failed succeeded");
  CHECK(eh_calls == 1, "the file's errhandler ran %d times, want 1", eh_calls);
  CHECK(eh_file == keep, "the errhandler did not get the file's handle");
  CHECK(fh == MPI_FILE_NULL, "handle not reset");
  rmdir(mine);
  rc = MPI_File_open(MPI_COMM_SELF, mine, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE,
                     MPI_INFO_NULL, &fh);
  MPI_File_set_errhandler(fh, eh);
  unlink(mine);
  eh_calls = 0;
  rc = MPI_File_close(&fh);
  CHECK(rc == MPI_SUCCESS && eh_calls == 0, "close of a file deleted underneath: %s", err_text(rc));
  MPI_Errhandler_free(&eh);
}

/* Rank np-1 passes a negative count to each ordered call: every rank returns, the bad rank
 * with MPI_ERR_COUNT, and the others' data lies in rank order without a gap for it. */
static void ordered_bad_args(void) {
  MPI_File fh;
  int v[4] = {rank, rank, rank, rank}, bad = rank == np - 1 && np > 1;
  MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
  MPI_File_set_size(fh, 0);
  int rc = MPI_File_write_ordered(fh, v, bad ? -1 : 4, MPI_INT, MPI_STATUS_IGNORE);
  CHECK(bad ? err_class(rc) == MPI_ERR_COUNT : rc == MPI_SUCCESS, "write_ordered: %s", err_text(rc));
  rc = MPI_File_write_ordered_begin(fh, v, bad ? -1 : 4, MPI_INT);
  CHECK(bad ? err_class(rc) == MPI_ERR_COUNT : rc == MPI_SUCCESS, "write_ordered_begin: %s", err_text(rc));
  if (!bad) MPI_File_write_ordered_end(fh, v, MPI_STATUS_IGNORE);
  int r[4] = {-1, -1, -1, -1};
  MPI_File_seek_shared(fh, 0, MPI_SEEK_SET);
  rc = MPI_File_read_ordered(fh, r, bad ? -1 : 4, MPI_INT, MPI_STATUS_IGNORE);
  CHECK(bad ? err_class(rc) == MPI_ERR_COUNT : rc == MPI_SUCCESS, "read_ordered: %s", err_text(rc));
  if (!bad) CHECK(r[0] == rank && r[3] == rank, "read_ordered read %d %d", r[0], r[3]);
  MPI_Offset size = 0;
  MPI_File_get_size(fh, &size);
  int writers = np > 1 ? np - 1 : np;
  CHECK(size == (MPI_Offset)writers * 2 * 16, "file size %lld, want %d", (long long)size, writers * 32);
  MPI_File_close(&fh);
}

/* A second begin while one is active fails and leaves the individual pointer alone. */
static void split_twice(void) {
  MPI_File fh;
  int v[8] = {0};
  MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
  MPI_File_seek(fh, rank * 64, MPI_SEEK_SET);
  MPI_File_write_all_begin(fh, v, 8, MPI_INT);
  MPI_Offset p1 = -1, p2 = -1;
  MPI_File_get_position(fh, &p1);
  int rc = MPI_File_write_all_begin(fh, v, 8, MPI_INT);
  CHECK(rc != MPI_SUCCESS, "second split begin succeeded");
  MPI_File_get_position(fh, &p2);
  CHECK(p1 == p2, "erroneous begin moved the pointer from %lld to %lld", (long long)p1, (long long)p2);
  MPI_File_write_all_end(fh, v, MPI_STATUS_IGNORE);
  MPI_File_close(&fh);
}

enum { BIG = 8 << 20, SMALL = 256 };

/* An iwrite_all queued behind a long write, then a new view before it runs: its data must
 * land where the view it started with puts it (rank r's ints at r*SMALL*4), not through the
 * new view (which would put them at 1 MiB + r*SMALL*4). */
static void view_in_flight(void) {
  MPI_File fh;
  MPI_Request q[2];
  MPI_Status st[2];
  char *big = calloc(BIG, 1);
  int w[SMALL], r[SMALL];
  for (int i = 0; i < SMALL; i++) w[i] = rank * 1000 + i + 1;
  MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
  MPI_File_set_size(fh, 0);
  MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL);
  MPI_File_iwrite_at(fh, (MPI_Offset)(2 << 20) + (MPI_Offset)rank * BIG / 4, big, BIG, MPI_BYTE, &q[0]);
  MPI_File_seek(fh, (MPI_Offset)rank * SMALL, MPI_SEEK_SET);
  MPI_File_iwrite_all(fh, w, SMALL, MPI_INT, &q[1]);
  MPI_File_set_view(fh, 1 << 20, MPI_INT, MPI_INT, "native", MPI_INFO_NULL); /* erroneous, but must not misplace data */
  MPI_Waitall(2, q, st);
  MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
  MPI_File_read_at(fh, (MPI_Offset)rank * SMALL * 4, r, SMALL, MPI_INT, MPI_STATUS_IGNORE);
  CHECK(!memcmp(r, w, sizeof w), "iwrite_all data not where its starting view put it");
  MPI_File_read_at(fh, (1 << 20) + (MPI_Offset)rank * SMALL * 4, r, SMALL, MPI_INT, MPI_STATUS_IGNORE);
  CHECK(r[0] != w[0], "iwrite_all data went through the later view");
  MPI_File_close(&fh);
  free(big);
}

/* MPICH's i_hindexed: a derived filetype, nonblocking collective writes each under its own
 * view (set_view between them), then one MPI_Waitall. Each write's view lives only in its
 * request, so the request's release frees the view's datatypes; that must not happen inside
 * the generalized request's free callback, where MPICH 4.0 aborts in MPI_Type_free. Every
 * write's data must be where its own view put it. */
static void derived_views_in_flight(void) {
  enum { N = 3, B = 16 };
  MPI_File fh;
  MPI_Request q[N];
  MPI_Status st[N];
  MPI_Datatype ft;
  int len[1] = {B};
  MPI_Aint disp[1] = {(MPI_Aint)rank * B};
  char w[N][B], r[B];
  MPI_Type_create_hindexed(1, len, disp, MPI_CHAR, &ft);
  MPI_Datatype tile;
  MPI_Type_create_resized(ft, 0, (MPI_Aint)np * B, &tile);
  MPI_Type_commit(&tile);
  MPI_Type_free(&ft);
  MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
  MPI_File_set_size(fh, 0);
  for (int i = 0; i < N; i++) {
    memset(w[i], 'a' + i * np + rank, B);
    MPI_File_set_view(fh, (MPI_Offset)i * np * B, MPI_BYTE, tile, "native", MPI_INFO_NULL);
    MPI_File_iwrite_all(fh, w[i], B, MPI_CHAR, &q[i]);
  }
  MPI_Type_free(&tile);
  int rc = MPI_Waitall(N, q, st);
  CHECK(rc == MPI_SUCCESS, "waitall of writes under replaced derived views: %s", err_text(rc));
  MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
  for (int i = 0; i < N; i++) {
    memset(r, 0, B);
    MPI_File_read_at(fh, ((MPI_Offset)i * np + rank) * B, r, B, MPI_CHAR, MPI_STATUS_IGNORE);
    CHECK(!memcmp(r, w[i], B), "write %d not where its own view put it", i);
  }
  MPI_File_close(&fh);
}

/* set_atomicity waits for operations in flight and then applies to later ones. */
static void atomicity_in_flight(void) {
  MPI_File fh;
  MPI_Request q;
  int flag = 0;
  char *big = malloc(BIG);
  memset(big, 7, BIG);
  MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
  MPI_File_iwrite_at(fh, (MPI_Offset)rank * BIG, big, BIG, MPI_BYTE, &q);
  int rc = MPI_File_set_atomicity(fh, 1);
  MPI_File_get_atomicity(fh, &flag);
  CHECK(rc != MPI_SUCCESS || flag == 1, "atomicity %d after set", flag);
  MPI_Wait(&q, MPI_STATUS_IGNORE);
  memset(big, 0, BIG);
  MPI_File_read_at(fh, (MPI_Offset)rank * BIG, big, BIG, MPI_BYTE, MPI_STATUS_IGNORE);
  CHECK(big[0] == 7 && big[BIG - 1] == 7, "data of the write in flight");
  MPI_File_close(&fh);
  free(big);
}

/* Threads of this process named "pario-io" (the engine's workers). */
static int io_threads(void) {
  DIR *d = opendir("/proc/self/task");
  struct dirent *e;
  int n = 0;
  while (d && (e = readdir(d))) {
    char p[300], name[64] = "";
    snprintf(p, sizeof p, "/proc/self/task/%s/comm", e->d_name);
    FILE *f = fopen(p, "r");
    if (!f) continue;
    if (fgets(name, sizeof name, f) && !strncmp(name, "pario-io", 8)) n++;
    fclose(f);
  }
  if (d) closedir(d);
  return n;
}

int main(int argc, char **argv) {
  int provided = 0;
  start(&argc, &argv);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  rank = t_rank;
  MPI_Query_thread(&provided);
  test_path(path, sizeof path, "lifecycle");
  close_errhandler();
  ordered_bad_args();
  split_twice();
  view_in_flight();
  derived_views_in_flight();
  atomicity_in_flight();
  int before = io_threads();
  if (rank == 0) MPI_File_delete(path, MPI_INFO_NULL);
  int rc = finish("lifecycle");
  int after = io_threads();
  if (provided == MPI_THREAD_MULTIPLE && before == 0) {
    fprintf(stderr, "rank %d FAIL: no pario-io worker thread seen before MPI_Finalize\n", rank);
    rc = 1;
  }
  if (after != 0) {
    fprintf(stderr, "rank %d FAIL: %d pario-io worker threads still running after MPI_Finalize\n", rank, after);
    rc = 1;
  }
  return rc;
}
