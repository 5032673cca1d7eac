/* The host MPI as it is at run time, not as the header pario was compiled with described it:
 * which implementation serves the process (MPI_Get_library_version, which the standard lets
 * a program call before MPI_Init and after MPI_Finalize), and whether its library has the
 * MPI-4 large-count datatype queries. A libpario built against the MPI standard ABI
 * (mpi_abi.h) runs on whichever implementation of the ABI the program was started with, and
 * a libpario built with MPICH 4's mpi.h may be loaded with another libmpi.so.12 of the MPICH
 * ABI family (older MPICH, Intel MPI): what differs between them is asked here. */
#include "core/common.h"

#include <pthread.h>
#include <string.h>

static pthread_once_t probed = PTHREAD_ONCE_INIT;
static int host = PARIO_HOST_OTHER;

static void probe(void) {
  char v[MPI_MAX_LIBRARY_VERSION_STRING + 1];
  int len = 0;
  if (PMPI_Get_library_version(v, &len) != MPI_SUCCESS || len < 0) len = 0;
  v[len < MPI_MAX_LIBRARY_VERSION_STRING ? len : MPI_MAX_LIBRARY_VERSION_STRING] = '\0';
  /* Intel MPI before MPICH: a derivative of MPICH's whose string may name it too. */
  if (strstr(v, "Open MPI"))
    host = PARIO_HOST_OPENMPI;
  else if (strstr(v, "Intel(R) MPI"))
    host = PARIO_HOST_IMPI;
  else if (strstr(v, "MPICH"))
    host = PARIO_HOST_MPICH;
}

int pario_host_mpi(void) {
  pthread_once(&probed, probe);
  return host;
}

const char *pario_host_mpi_name(void) {
  switch (pario_host_mpi()) {
    case PARIO_HOST_OPENMPI: return "openmpi";
    case PARIO_HOST_MPICH: return "mpich";
    case PARIO_HOST_IMPI: return "impi";
    default: return "other";
  }
}

#ifdef PARIO_HAVE_LARGE_COUNT
/* Weak: a library without them (an MPI-3 libmpi.so.12 under a libpario built with MPICH 4's
 * header) leaves them null instead of failing the program at its first datatype query. */
#pragma weak PMPI_Type_get_envelope_c
#pragma weak PMPI_Type_get_contents_c

/* 1 when the host library has the MPI-4 large-count datatype queries (MPI_Type_get_envelope_c,
 * MPI_Type_get_contents_c), whatever the header pario was built with declared. */
static int pario_host_large_count(void) {
  return PMPI_Type_get_envelope_c != NULL && PMPI_Type_get_contents_c != NULL;
}
#endif

int pario_type_envelope(MPI_Datatype t, MPI_Count *ni, MPI_Count *na, MPI_Count *nc, MPI_Count *nd, int *comb) {
#ifdef PARIO_HAVE_LARGE_COUNT
  if (pario_host_large_count()) return PMPI_Type_get_envelope_c(t, ni, na, nc, nd, comb);
#endif
  int i = 0, a = 0, d = 0;
  int rc = PMPI_Type_get_envelope(t, &i, &a, &d, comb);
  *ni = i, *na = a, *nc = 0, *nd = d;
  return rc;
}

int pario_type_contents(MPI_Datatype t, MPI_Count ni, MPI_Count na, MPI_Count nc, MPI_Count nd, int *ints,
                        MPI_Aint *addrs, MPI_Count *counts, MPI_Datatype *types) {
#ifdef PARIO_HAVE_LARGE_COUNT
  if (pario_host_large_count()) return PMPI_Type_get_contents_c(t, ni, na, nc, nd, ints, addrs, counts, types);
#endif
  (void)nc, (void)counts;
  return PMPI_Type_get_contents(t, (int)ni, (int)na, (int)nd, ints, addrs, types);
}
