/* Nonblocking and split collective I/O: every operation with its data verified, 1000+
 * requests outstanding, MPI_Waitall over a mix of file, send and receive requests, errors
 * delivered through MPI_Wait, Waitsome and Waitany (pario sleeps only on its own requests), cancel of a started request, application collectives while
 * I/O is in flight, and the thread level pario asks for. */
#include "harness.h"

static int rank, np;
static char path[512];
enum { N = 4096 };

static void fill(int *b, int n, int seed) {
  for (int i = 0; i < n; i++) b[i] = seed * 100000 + i;
}

static void every_operation(MPI_File fh) {
  int w[N], r[N], count;
  MPI_Request q;
  MPI_Status st;
  MPI_Offset mine = (MPI_Offset)rank * N * 4 * 16;
  /* explicit offsets */
  fill(w, N, 1 + rank);
  MPI_File_iwrite_at(fh, mine, w, N, MPI_INT, &q);
  MPI_Wait(&q, &st);
  MPI_Get_count(&st, MPI_INT, &count);
  CHECK(count == N, "iwrite_at count %d", count);
  MPI_File_iread_at(fh, mine, r, N, MPI_INT, &q);
  MPI_Wait(&q, &st);
  CHECK(!memcmp(r, w, sizeof w), "iread_at data");
  /* individual pointer: moves at the call */
  MPI_File_seek(fh, mine + N * 4, MPI_SEEK_SET);
  fill(w, N, 2 + rank);
  MPI_File_iwrite(fh, w, N, MPI_INT, &q);
  MPI_Offset pos;
  MPI_File_get_position(fh, &pos);
  CHECK(pos == mine + 2 * N * 4, "pointer advanced at the call");
  MPI_Wait(&q, MPI_STATUS_IGNORE);
  MPI_File_seek(fh, mine + N * 4, MPI_SEEK_SET);
  MPI_File_iread(fh, r, N, MPI_INT, &q);
  MPI_Wait(&q, &st);
  CHECK(!memcmp(r, w, sizeof w), "iread data");
  /* collective nonblocking */
  fill(w, N, 3 + rank);
  MPI_File_iwrite_at_all(fh, mine + 2 * N * 4, w, N, MPI_INT, &q);
  MPI_Wait(&q, MPI_STATUS_IGNORE);
  MPI_File_iread_at_all(fh, mine + 2 * N * 4, r, N, MPI_INT, &q);
  MPI_Wait(&q, MPI_STATUS_IGNORE);
  CHECK(!memcmp(r, w, sizeof w), "iread_at_all data");
  MPI_File_seek(fh, mine + 3 * N * 4, MPI_SEEK_SET);
  fill(w, N, 4 + rank);
  MPI_File_iwrite_all(fh, w, N, MPI_INT, &q);
  MPI_Wait(&q, MPI_STATUS_IGNORE);
  MPI_File_seek(fh, mine + 3 * N * 4, MPI_SEEK_SET);
  MPI_File_iread_all(fh, r, N, MPI_INT, &q);
  MPI_Wait(&q, MPI_STATUS_IGNORE);
  CHECK(!memcmp(r, w, sizeof w), "iread_all data");
  /* split collectives */
  fill(w, N, 5 + rank);
  MPI_File_write_at_all_begin(fh, mine + 4 * N * 4, w, N, MPI_INT);
  MPI_File_write_at_all_end(fh, w, &st);
  MPI_Get_count(&st, MPI_INT, &count);
  CHECK(count == N, "write_at_all_end count %d", count);
  MPI_File_read_at_all_begin(fh, mine + 4 * N * 4, r, N, MPI_INT);
  MPI_File_read_at_all_end(fh, r, &st);
  CHECK(!memcmp(r, w, sizeof w), "read_at_all_begin/end data");
  MPI_File_seek(fh, mine + 5 * N * 4, MPI_SEEK_SET);
  MPI_File_write_all_begin(fh, w, N, MPI_INT);
  CHECK(err_class(MPI_File_write_all_begin(fh, w, N, MPI_INT)) != MPI_SUCCESS, "second split begin refused");
  MPI_File_write_all_end(fh, w, MPI_STATUS_IGNORE);
  MPI_File_seek(fh, mine + 5 * N * 4, MPI_SEEK_SET);
  MPI_File_read_all_begin(fh, r, N, MPI_INT);
  MPI_File_read_all_end(fh, r, MPI_STATUS_IGNORE);
  CHECK(!memcmp(r, w, sizeof w), "read_all_begin/end data");
#if MPI_VERSION >= 4
  MPI_File_iwrite_at_c(fh, mine + 6 * N * 4, w, (MPI_Count)N, MPI_INT, &q);
  MPI_Wait(&q, MPI_STATUS_IGNORE);
  MPI_File_iread_at_all_c(fh, mine + 6 * N * 4, r, (MPI_Count)N, MPI_INT, &q);
  MPI_Wait(&q, MPI_STATUS_IGNORE);
  CHECK(!memcmp(r, w, sizeof w), "large-count nonblocking data");
#endif
  /* a derived memory type freed right after the call */
  MPI_Datatype every2;
  MPI_Type_vector(N / 2, 1, 2, MPI_INT, &every2);
  MPI_Type_commit(&every2);
  MPI_File_iwrite_at(fh, mine + 7 * N * 4, w, 1, every2, &q);
  MPI_Type_free(&every2);
  MPI_Wait(&q, MPI_STATUS_IGNORE);
  MPI_File_read_at(fh, mine + 7 * N * 4, r, N / 2, MPI_INT, MPI_STATUS_IGNORE);
  int ok = 1;
  for (int i = 0; i < N / 2; i++) ok &= r[i] == w[2 * i];
  CHECK(ok, "strided memory type freed while pending");
}

static void many_outstanding(MPI_File fh) {
  enum { M = 1500 };
  static int w[M], r[M], idx[M];
  static MPI_Request q[M];
  static MPI_Status sts[M];
  MPI_Offset base = (MPI_Offset)(np + rank) * N * 4 * 16;
  for (int i = 0; i < M; i++) {
    w[i] = rank * M + i;
    MPI_File_iwrite_at(fh, base + 4 * i, &w[i], 1, MPI_INT, &q[i]);
  }
  MPI_Waitall(M, q, sts);
  for (int i = 0; i < M; i++) MPI_File_iread_at(fh, base + 4 * i, &r[i], 1, MPI_INT, &q[i]);
  int done = 0;
  while (done < M) { /* Testsome and Waitany work on file requests too */
    int outc;
    MPI_Testsome(M, q, &outc, idx, sts);
    if (outc == MPI_UNDEFINED) break;
    done += outc;
  }
  CHECK(done == M && !memcmp(r, w, sizeof w), "1500 outstanding requests (%d done)", done);
}

static void mixed_waitall(MPI_File fh) {
  int w[N], r[N], sendv = rank, recvv = -1;
  MPI_Request q[4];
  fill(w, N, 9 + rank);
  MPI_Offset off = (MPI_Offset)(2 * np + rank) * N * 4 * 16;
  int to = (rank + 1) % np, from = (rank + np - 1) % np;
  MPI_File_iwrite_at(fh, off, w, N, MPI_INT, &q[0]);
  MPI_Irecv(&recvv, 1, MPI_INT, from, 7, MPI_COMM_WORLD, &q[1]);
  MPI_Isend(&sendv, 1, MPI_INT, to, 7, MPI_COMM_WORLD, &q[2]);
  MPI_File_iwrite_at(fh, off + N * 4, w, N, MPI_INT, &q[3]);
  MPI_Status st[4];
  CHECK(MPI_Waitall(4, q, st) == MPI_SUCCESS, "mixed waitall");
  int c0, c3;
  MPI_Get_count(&st[0], MPI_INT, &c0);
  MPI_Get_count(&st[3], MPI_INT, &c3);
  CHECK(recvv == from && c0 == N && c3 == N, "mixed waitall results");
  MPI_File_read_at(fh, off + N * 4, r, N, MPI_INT, MPI_STATUS_IGNORE);
  CHECK(!memcmp(r, w, sizeof w), "mixed waitall data");
}

/* MPI_Waitsome over file requests only, and MPI_Waitany over a collective file request
 * that cannot finish before a receive does: pario's wait may sleep only when every request
 * is its own (rank 0 would otherwise wait for an iwrite_all that rank 1 starts only after
 * rank 0's Waitany returned the receive: a hang). */
static void wait_forms(MPI_File fh) {
  enum { K = 6 };
  int w[K][64], r[K][64], idx[K], done = 0;
  MPI_Request q[K];
  MPI_Status sts[K];
  MPI_Offset off = (MPI_Offset)(3 * np + rank) * N * 4 * 16;
  for (int k = 0; k < K; k++) {
    fill(w[k], 64, 40 + k + rank);
    MPI_File_iwrite_at(fh, off + k * 256, w[k], 64, MPI_INT, &q[k]);
  }
  while (done < K) {
    int outc = 0;
    CHECK(MPI_Waitsome(K, q, &outc, idx, sts) == MPI_SUCCESS, "waitsome");
    if (outc == MPI_UNDEFINED || outc <= 0) break;
    for (int i = 0; i < outc; i++) {
      int c = -1;
      MPI_Get_count(&sts[i], MPI_INT, &c);
      CHECK(c == 64, "waitsome count %d", c);
    }
    done += outc;
  }
  CHECK(done == K, "waitsome finished %d of %d", done, K);
  for (int k = 0; k < K; k++) MPI_File_read_at(fh, off + k * 256, r[k], 64, MPI_INT, MPI_STATUS_IGNORE);
  CHECK(!memcmp(r, w, sizeof w), "waitsome data");
  /* MPI_Waitall over MPI_REQUEST_NULL and a file request still running (MPICH asserts when
   * it meets a generalized request not yet completed there). */
  enum { BIG = 4 << 20 };
  char *big = malloc(BIG);
  memset(big, 'a' + rank, BIG);
  MPI_Request b[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  MPI_Status bs[2];
  MPI_File_iwrite_at(fh, (MPI_Offset)6 * np * N * 4 * 16 + (MPI_Offset)rank * BIG, big, BIG, MPI_BYTE, &b[1]);
  CHECK(MPI_Waitall(2, b, bs) == MPI_SUCCESS, "waitall with a null request");
  int bc = -1;
  MPI_Get_count(&bs[1], MPI_BYTE, &bc);
  CHECK(bc == BIG && b[1] == MPI_REQUEST_NULL, "waitall with a null request: count %d", bc);
  free(big);
  if (np < 2) return;
  int token = 5, got = -1, wv[16], rv[16];
  fill(wv, 16, 77 + rank);
  MPI_Offset coff = (MPI_Offset)(4 * np + rank) * N * 4 * 16;
  MPI_Request c[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  if (rank == 0) {
    MPI_File_iwrite_at_all(fh, coff, wv, 16, MPI_INT, &c[0]);
    MPI_Irecv(&got, 1, MPI_INT, 1, 11, MPI_COMM_WORLD, &c[1]);
    int which = -1;
    MPI_Waitany(2, c, &which, MPI_STATUS_IGNORE);
    CHECK(which == 1 && got == 5, "waitany returned %d before the receive", which);
    MPI_Send(&token, 1, MPI_INT, 1, 12, MPI_COMM_WORLD);
    MPI_Status cs[2];
    MPI_Waitall(2, c, cs);
  } else {
    if (rank == 1) {
      MPI_Send(&token, 1, MPI_INT, 0, 11, MPI_COMM_WORLD);
      MPI_Recv(&got, 1, MPI_INT, 0, 12, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_File_iwrite_at_all(fh, coff, wv, 16, MPI_INT, &c[0]);
    MPI_Wait(&c[0], MPI_STATUS_IGNORE);
  }
  MPI_File_read_at(fh, coff, rv, 16, MPI_INT, MPI_STATUS_IGNORE);
  CHECK(!memcmp(rv, wv, sizeof wv), "collective write waited with waitany");
}

static void collectives_during_io(MPI_File fh) {
  enum { BIG = 8 << 20 };
  char *b = malloc(BIG);
  memset(b, 'a' + rank, BIG);
  MPI_Request q;
  MPI_File_iwrite_at(fh, (MPI_Offset)(3 * np + rank) * BIG, b, BIG, MPI_CHAR, &q);
  long sum = 0, one = 1;
  for (int i = 0; i < 200; i++) {
    MPI_Allreduce(&one, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  CHECK(sum == np, "allreduce during I/O");
  int flag = 0;
  MPI_Cancel(&q);
  MPI_Status st;
  MPI_Wait(&q, &st);
  MPI_Test_cancelled(&st, &flag);
  CHECK(!flag, "a started request is not cancelled");
  free(b);
}

static void error_through_wait(void) {
  MPI_File fh;
  if (MPI_File_open(MPI_COMM_SELF, "/dev/full", MPI_MODE_WRONLY, MPI_INFO_NULL, &fh) != MPI_SUCCESS) return;
  MPI_Request q;
  MPI_Status st;
  char b[64] = {0};
  int rc = MPI_File_iwrite_at(fh, 0, b, 64, MPI_CHAR, &q);
  CHECK(rc == MPI_SUCCESS, "iwrite to a full disk starts");
  rc = MPI_Wait(&q, &st);
  CHECK(err_class(rc) == MPI_ERR_NO_SPACE, "full disk via MPI_Wait: %s", err_text(rc));
  /* Multiple-completion calls report per-request errors in the statuses. */
  MPI_Request qs[2];
  MPI_Status sts[2];
  MPI_File_iwrite_at(fh, 0, b, 64, MPI_CHAR, &qs[0]);
  MPI_File_iread_at(fh, 0, b, 64, MPI_CHAR, &qs[1]); /* a write-only file: refused at the call */
  rc = MPI_Waitall(1, qs, sts);
  int in_status = err_class(sts[0].MPI_ERROR);
  /* MPICH (4.0, 5.0) and its derivative Intel MPI wrap a generalized request's error as
   * MPI_ERR_OTHER in Waitall's statuses (MPI_Wait returns the real class, checked above). */
  if ((strstr(mpi_library(), "MPICH") || strstr(mpi_library(), "Intel(R) MPI")) && in_status == MPI_ERR_OTHER)
    in_status = MPI_ERR_NO_SPACE;
  CHECK(err_class(rc) == MPI_ERR_IN_STATUS && in_status == MPI_ERR_NO_SPACE,
        "full disk via MPI_Waitall: rc class %d, status class %d", err_class(rc), err_class(sts[0].MPI_ERROR));
  CHECK(qs[1] == MPI_REQUEST_NULL, "refused nonblocking call returns MPI_REQUEST_NULL");
  MPI_File_close(&fh);
}

int main(int argc, char **argv) {
  start(&argc, &argv);
  rank = t_rank;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  int provided;
  MPI_Query_thread(&provided);
  if (getenv("PARIO_EXPECT_MULTIPLE")) CHECK(provided == MPI_THREAD_MULTIPLE, "pario asks for MPI_THREAD_MULTIPLE: %d", provided);
  test_path(path, sizeof path, "pario-nonblocking");
  MPI_File fh;
  MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &fh);
  every_operation(fh);
  many_outstanding(fh);
  mixed_waitall(fh);
  wait_forms(fh);
  collectives_during_io(fh);
  MPI_File_close(&fh);
  error_through_wait();
  return finish("nonblocking");
}
