/* MPI_Error_string for pario's error codes, on every MPI. MPICH (4.0 and 5.0) gives a dynamic
 * code added to a predefined class (MPI_Add_error_code) the right class but prints an
 * unrelated internal message for it; Open MPI prints the added string. Which one serves the
 * process is known only at run time (one libpario of the MPI standard ABI build serves both
 * kinds), so pario answers for its own codes itself, with the text it also gave
 * MPI_Add_error_string, and forwards every other code to the host MPI. */
#include "core/common.h"

#include <dlfcn.h>
#include <stdio.h>

typedef int (*errstr_fn)(int, char *, int *);

PARIO_EXPORT int PMPI_Error_string(int errorcode, char *string, int *resultlen) {
  static errstr_fn host;
  if (string && resultlen && pario_err_lookup(errorcode, string, resultlen)) return MPI_SUCCESS;
  if (!host) host = (errstr_fn)dlsym(RTLD_NEXT, "PMPI_Error_string");
  if (!host) {
    if (string && resultlen) *resultlen = snprintf(string, MPI_MAX_ERROR_STRING, "MPI error %d", errorcode);
    return MPI_SUCCESS;
  }
  return host(errorcode, string, resultlen);
}
PARIO_WEAK_ALIAS(MPI_Error_string)
