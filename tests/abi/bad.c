/* A library that check-abi-imports.sh must reject (ctest abi.imports.catches): it uses an
 * MPICH internal, an Open MPI predefined handle's symbol and an MPI name the ABI lacks, besides
 * a function the ABI does declare. Built with the ABI wrapper, so it links libmpi_abi.so. */
#include <mpi.h>

extern int MPIR_Err_create_code(int, int, const char *, int, int, const char *, const char *, ...);
extern char ompi_mpi_comm_world[];
extern int MPI_Not_in_the_abi(void);

int abi_bad(void) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank + MPI_Not_in_the_abi() + MPIR_Err_create_code(0, 0, "", 0, 0, "", "") + ompi_mpi_comm_world[0];
}
