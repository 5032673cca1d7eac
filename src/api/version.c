/* pario_version / pario_mpi_flavour: the exported identity of the library, used by programs
 * (and pario-bench) to tell whether pario or the native MPI-IO serves them. */
#include "pario.h"

__attribute__((visibility("default"))) const char *pario_version(void) { return PARIO_VERSION; }
__attribute__((visibility("default"))) const char *pario_mpi_flavour(void) { return PARIO_MPI_FLAVOUR; }
