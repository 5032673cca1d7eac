/* pario_version / pario_mpi_flavour / pario_mpi_host: the exported identity of the library,
 * used by programs (and pario-bench) to tell whether pario or the native MPI-IO serves them,
 * and on which MPI. */
#include "core/common.h"
#include "pario.h"

__attribute__((visibility("default"))) const char *pario_version(void) { return PARIO_VERSION; }
__attribute__((visibility("default"))) const char *pario_mpi_flavour(void) { return PARIO_MPI_FLAVOUR; }
__attribute__((visibility("default"))) const char *pario_mpi_host(void) { return pario_host_mpi_name(); }
