/* Force-included into ROMIO's tests: four of them (noncontig, i_noncontig, noncontig_coll,
 * noncontig_coll2) build filetypes with MPI_LB/MPI_UB, which MPI-3.0 removed. Open MPI 4.1
 * still exports them (ompi_mpi_lb, ompi_mpi_ub) but hides them from mpi.h unless it was
 * configured --enable-mpi1-compatibility (Debian's is not); these lines are what its mpi.h
 * declares in that case. Nothing changes for MPICH, which keeps MPI_LB/MPI_UB. */
#include <mpi.h>
#if defined(OPEN_MPI) && !OMPI_ENABLE_MPI1_COMPAT
#undef MPI_LB
#undef MPI_UB
OMPI_DECLSPEC extern struct ompi_predefined_datatype_t ompi_mpi_lb;
OMPI_DECLSPEC extern struct ompi_predefined_datatype_t ompi_mpi_ub;
#define MPI_LB OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_lb)
#define MPI_UB OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_ub)
#endif
