/* One call of each kind, for the trace test (check_trace.py reads the trace it leaves):
 * independent and collective writes and reads through a strided view (two-phase rounds with
 * a small collective buffer; data sieving), nonblocking, split collective, shared and ordered
 * calls, the errhandler calls and handle conversions, and the waits and tests that complete
 * nonblocking requests. Every read is checked against what was written. Usage: traced FILE */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 4096 /* ints per rank */

static int fails;
#define CHECK(c)                                                               \
  do {                                                                         \
    if (!(c)) {                                                                \
      fprintf(stderr, "traced: %s:%d: %s\n", __FILE__, __LINE__, #c);          \
      fails++;                                                                 \
    }                                                                          \
  } while (0)

static void expect(const int *got, int base, int n) {
  for (int i = 0; i < n; i++)
    if (got[i] != base + i) {
      fprintf(stderr, "traced: element %d is %d, expected %d\n", i, got[i], base + i);
      fails++;
      return;
    }
}

int main(int argc, char **argv) {
  int provided, rank, np;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  if (argc < 2) return 2;
  int *buf = malloc(N * sizeof(int)), *in = malloc(N * sizeof(int));
  for (int i = 0; i < N; i++) buf[i] = rank * N + i;
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "romio_cb_write", "enable");
  MPI_Info_set(info, "romio_cb_read", "enable");
  MPI_Info_set(info, "cb_buffer_size", "8192"); /* several rounds */
  MPI_File fh;
  CHECK(MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh) == MPI_SUCCESS);
  MPI_Errhandler eh;
  CHECK(MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN) == MPI_SUCCESS);
  CHECK(MPI_File_get_errhandler(fh, &eh) == MPI_SUCCESS && eh == MPI_ERRORS_RETURN);
  CHECK(MPI_File_call_errhandler(fh, MPI_ERR_OTHER) == MPI_SUCCESS);
#ifdef MPI_ABI_VERSION /* the MPI standard ABI's int handles */
  CHECK(MPI_File_fromint(MPI_File_toint(fh)) == fh);
#else
  CHECK(MPI_File_f2c(MPI_File_c2f(fh)) == fh);
#endif
  /* strided view: blocks of 16 ints, ranks interleaved */
  MPI_Datatype ft;
  MPI_Type_vector(N / 16, 16, 16 * np, MPI_INT, &ft);
  MPI_Type_commit(&ft);
  CHECK(MPI_File_set_view(fh, (MPI_Offset)rank * 16 * sizeof(int), MPI_INT, ft, "native", MPI_INFO_NULL) == MPI_SUCCESS);
  CHECK(MPI_File_write_all(fh, buf, N, MPI_INT, MPI_STATUS_IGNORE) == MPI_SUCCESS);
  memset(in, 0, N * sizeof(int));
  CHECK(MPI_File_read_at_all(fh, 0, in, N, MPI_INT, MPI_STATUS_IGNORE) == MPI_SUCCESS);
  expect(in, rank * N, N);
  memset(in, 0, N * sizeof(int));
  CHECK(MPI_File_read_at(fh, 0, in, N, MPI_INT, MPI_STATUS_IGNORE) == MPI_SUCCESS); /* sieving */
  expect(in, rank * N, N);
  CHECK(MPI_File_write_at(fh, 0, buf, N, MPI_INT, MPI_STATUS_IGNORE) == MPI_SUCCESS);
  MPI_Request r;
  memset(in, 0, N * sizeof(int));
  CHECK(MPI_File_iread_at(fh, 0, in, N, MPI_INT, &r) == MPI_SUCCESS);
  MPI_Wait(&r, MPI_STATUS_IGNORE);
  expect(in, rank * N, N);
  memset(in, 0, N * sizeof(int));
  CHECK(MPI_File_iread_at(fh, 0, in, N, MPI_INT, &r) == MPI_SUCCESS);
  for (int flag = 0; !flag;) MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
  expect(in, rank * N, N);
  MPI_Request two[2];
  memset(in, 0, N * sizeof(int));
  CHECK(MPI_File_iread_at(fh, 0, in, N / 2, MPI_INT, &two[0]) == MPI_SUCCESS);
  CHECK(MPI_File_iread_at(fh, N / 2, in + N / 2, N / 2, MPI_INT, &two[1]) == MPI_SUCCESS);
  MPI_Status st2[2]; /* not MPI_STATUSES_IGNORE: gcc warns about its size with MPICH */
  MPI_Waitall(2, two, st2);
  expect(in, rank * N, N);
  CHECK(MPI_File_write_all_begin(fh, buf, N, MPI_INT) == MPI_SUCCESS);
  CHECK(MPI_File_write_all_end(fh, buf, MPI_STATUS_IGNORE) == MPI_SUCCESS);
  /* shared pointer: a contiguous region after the strided one */
  CHECK(MPI_File_set_view(fh, (MPI_Offset)np * N * sizeof(int), MPI_INT, MPI_INT, "native", MPI_INFO_NULL) == MPI_SUCCESS);
  CHECK(MPI_File_write_ordered(fh, buf, N, MPI_INT, MPI_STATUS_IGNORE) == MPI_SUCCESS);
  CHECK(MPI_File_write_shared(fh, buf, 16, MPI_INT, MPI_STATUS_IGNORE) == MPI_SUCCESS);
  MPI_File_sync(fh);
  memset(in, 0, N * sizeof(int));
  CHECK(MPI_File_read_at(fh, (MPI_Offset)rank * N, in, N, MPI_INT, MPI_STATUS_IGNORE) == MPI_SUCCESS);
  expect(in, rank * N, N); /* ordered: rank r's block is r-th */
  CHECK(MPI_File_close(&fh) == MPI_SUCCESS);
  MPI_Type_free(&ft);
  MPI_Info_free(&info);
  int all = 0;
  MPI_Allreduce(&fails, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf(all ? "traced: FAILED\n" : "traced: ok\n");
  free(buf);
  free(in);
  MPI_Finalize();
  return all != 0;
}
