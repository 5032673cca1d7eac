/* Native check, no pario: the MPI honours MPI_ERRORS_RETURN on a communicator (an MPI_Pack of
 * an uncommitted type and a send to a rank that does not exist return error codes). pario
 * relies on it (its uncommitted-type probe, the errors of its generalized requests), so an MPI
 * that aborts here cannot run pario's error paths. Intel MPI 2021.19 through its standard-ABI
 * library (libmpi_abi.so) aborts in the MPI_Pack, where its own ABI (libmpi.so.12) returns.
 * usage: errors_return   (exit 0: both calls returned an error code) */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm self;
  MPI_Comm_dup(MPI_COMM_SELF, &self);
  MPI_Comm_set_errhandler(self, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Datatype t;
  MPI_Type_vector(2, 1, 2, MPI_INT, &t); /* not committed */
  char out[8];
  int pos = 0, size = 0;
  int pack = MPI_Pack(NULL, 0, t, out, 0, &pos, self);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int send = MPI_Send(NULL, 0, MPI_INT, size + 5, 0, MPI_COMM_WORLD);
  printf("errors_return: MPI_Pack of an uncommitted type returned %s, MPI_Send to rank %d %s\n",
         pack != MPI_SUCCESS ? "an error" : "MPI_SUCCESS", size + 5, send != MPI_SUCCESS ? "an error" : "MPI_SUCCESS");
  MPI_Type_free(&t);
  MPI_Comm_free(&self);
  MPI_Finalize();
  return pack != MPI_SUCCESS && send != MPI_SUCCESS ? 0 : 1;
}
