/* A zero-size etype (MPI_Type_contiguous(0, ...)): MPI_File_set_view must fail with
 * MPI_ERR_TYPE naming the call and the file, on every rank alike, and leave the file usable
 * with its previous view. Under pario it does on every flavour; the native MPI-IOs die of
 * SIGFPE (integer divide by zero): OMPIO (Open MPI 4.1, 5.0) inside MPI_File_set_view, ROMIO
 * (MPICH 4.0, 5.0, Intel MPI 2021) at the next call that divides by the etype's size
 * (MPI_File_get_position), after accepting the view (tests/expected-failures.txt). */
#include "../mpi/harness.h"

int main(int argc, char **argv) {
  start(&argc, &argv);
  char path[4200];
  test_path(path, sizeof path, "pario-zero-etype");
  MPI_File fh;
  MPI_Datatype empty;
  MPI_Type_contiguous(0, MPI_INT, &empty);
  MPI_Type_commit(&empty);
  int rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE,
                         MPI_INFO_NULL, &fh);
  CHECK(rc == MPI_SUCCESS, "MPI_File_open: %s", err_text(rc));
  MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN);
  CHECK(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL) == MPI_SUCCESS, "first view");
  CHECK(MPI_File_seek(fh, 3, MPI_SEEK_SET) == MPI_SUCCESS, "seek");
  printf("rank %d: MPI_File_set_view with a zero-size etype\n", t_rank);
  fflush(stdout);
  rc = MPI_File_set_view(fh, 0, empty, MPI_INT, "native", MPI_INFO_NULL);
  CHECK_ERR(rc, MPI_ERR_TYPE, "MPI_File_set_view", path);
  MPI_Offset pos = -1;
  rc = MPI_File_get_position(fh, &pos);
  CHECK(rc == MPI_SUCCESS && pos == 3, "after the refused view: position %lld (rc %d), want 3", (long long)pos, rc);
  int v = 7 + t_rank, back = -1;
  MPI_Status st;
  CHECK(MPI_File_write_at(fh, t_rank, &v, 1, MPI_INT, &st) == MPI_SUCCESS, "write_at");
  CHECK(MPI_File_read_at(fh, t_rank, &back, 1, MPI_INT, &st) == MPI_SUCCESS && back == v, "read back %d, want %d", back, v);
  CHECK(MPI_File_close(&fh) == MPI_SUCCESS, "close");
  MPI_Type_free(&empty);
  return finish("zero_etype");
}
