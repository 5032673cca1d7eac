/* Thread safety under MPI_THREAD_MULTIPLE: threads each driving their own file (own
 * communicator), and threads sharing one handle with explicit offsets. Bytes are verified. */
#include <pthread.h>

#include "harness.h"

enum { NT = 4, ITERS = 200, BLK = 1024 };
static char base[512];
static MPI_Comm comms[NT];
static MPI_File shared_fh;
static int errs[NT];

static void fill(char *b, int t, int i) {
  for (int k = 0; k < BLK; k++) b[k] = (char)(t * 31 + i * 7 + k);
}

static void *own_file(void *arg) {
  int t = (int)(long)arg, rank;
  char p[600], b[BLK], r[BLK];
  MPI_File fh;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  snprintf(p, sizeof p, "%s.r%d.t%d", base, rank, t);
  if (MPI_File_open(comms[t], p, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &fh)) {
    errs[t]++;
    return NULL;
  }
  MPI_Datatype ft;
  MPI_Type_vector(4, BLK / 4, BLK / 2, MPI_BYTE, &ft);
  MPI_Type_commit(&ft);
  MPI_File_set_view(fh, t * 8, MPI_BYTE, ft, "native", MPI_INFO_NULL);
  for (int i = 0; i < ITERS; i++) {
    fill(b, t, i);
    if (MPI_File_write(fh, b, BLK, MPI_BYTE, MPI_STATUS_IGNORE)) errs[t]++;
  }
  MPI_File_seek(fh, 0, MPI_SEEK_SET);
  for (int i = 0; i < ITERS; i++) {
    fill(b, t, i);
    if (MPI_File_read(fh, r, BLK, MPI_BYTE, MPI_STATUS_IGNORE) || memcmp(r, b, BLK)) errs[t]++;
  }
  MPI_Type_free(&ft);
  MPI_File_close(&fh);
  return NULL;
}

static void *same_handle(void *arg) {
  int t = (int)(long)arg;
  char b[BLK];
  for (int i = 0; i < ITERS; i++) {
    fill(b, t, i);
    if (MPI_File_write_at(shared_fh, ((MPI_Offset)i * NT + t) * BLK, b, BLK, MPI_BYTE, MPI_STATUS_IGNORE)) errs[t]++;
  }
  return NULL;
}

static void run(void *(*fn)(void *)) {
  pthread_t th[NT];
  for (long t = 0; t < NT; t++) pthread_create(&th[t], NULL, fn, (void *)t);
  for (int t = 0; t < NT; t++) pthread_join(th[t], NULL);
}

int main(int argc, char **argv) {
  int provided, rank;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  t_rank = rank;
  if (provided < MPI_THREAD_MULTIPLE) {
    if (rank == 0) printf("threads: MPI_THREAD_MULTIPLE not provided, skipped\n");
    MPI_Finalize();
    return 0;
  }
  test_path(base, sizeof base, "pario-threads");
  for (int t = 0; t < NT; t++) MPI_Comm_dup(MPI_COMM_SELF, &comms[t]);
  run(own_file);
  char p[600];
  snprintf(p, sizeof p, "%s.r%d.shared", base, rank);
  MPI_File_open(MPI_COMM_SELF, p, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &shared_fh);
  run(same_handle);
  char b[BLK], r[BLK];
  int bad = 0;
  for (int i = 0; i < ITERS; i++)
    for (int t = 0; t < NT; t++) {
      fill(b, t, i);
      MPI_File_read_at(shared_fh, ((MPI_Offset)i * NT + t) * BLK, r, BLK, MPI_BYTE, MPI_STATUS_IGNORE);
      bad += memcmp(r, b, BLK) != 0;
    }
  CHECK(bad == 0, "%d blocks wrong after concurrent write_at on one handle", bad);
  MPI_File_close(&shared_fh);
  for (int t = 0; t < NT; t++) {
    CHECK(errs[t] == 0, "thread %d saw %d errors or mismatches", t, errs[t]);
    MPI_Comm_free(&comms[t]);
  }
  return finish("threads");
}
