/* MPI_Register_datarep: user-defined data representations are not implemented. The function
 * exists, so the native MPI-IO is never reached, and fails with MPI_ERR_UNSUPPORTED_OPERATION
 * (MPI_ERR_DUP_DATAREP for the built-in names), naming itself. */
#include "core/file.h"

#include <string.h>

static int register_datarep(const char *datarep, const char *op) {
  static const char *builtin[] = {"native", "internal", "external32", NULL};
  for (int i = 0; datarep && builtin[i]; i++)
    if (!strcmp(datarep, builtin[i]))
      return pario_file_error(MPI_FILE_NULL, pario_err(MPI_ERR_DUP_DATAREP, op, NULL, 0,
                                                       "data representation \"%s\" already exists", datarep));
  return pario_file_error(MPI_FILE_NULL, pario_err(MPI_ERR_UNSUPPORTED_OPERATION, op, NULL, 0,
                                                   "user-defined data representations are not supported by this version of pario"));
}

PARIO_EXPORT int PMPI_Register_datarep(const char *datarep, MPI_Datarep_conversion_function *read_conversion_fn,
                                       MPI_Datarep_conversion_function *write_conversion_fn,
                                       MPI_Datarep_extent_function *dtype_file_extent_fn, void *extra_state) {
  (void)read_conversion_fn; (void)write_conversion_fn; (void)dtype_file_extent_fn; (void)extra_state;
  return register_datarep(datarep, "MPI_Register_datarep");
}
PARIO_WEAK_ALIAS(MPI_Register_datarep)

#ifdef PARIO_HAVE_LARGE_COUNT
PARIO_EXPORT int PMPI_Register_datarep_c(const char *datarep, MPI_Datarep_conversion_function_c *read_conversion_fn,
                                         MPI_Datarep_conversion_function_c *write_conversion_fn,
                                         MPI_Datarep_extent_function *dtype_file_extent_fn, void *extra_state) {
  (void)read_conversion_fn; (void)write_conversion_fn; (void)dtype_file_extent_fn; (void)extra_state;
  return register_datarep(datarep, "MPI_Register_datarep_c");
}
PARIO_WEAK_ALIAS(MPI_Register_datarep_c)
#endif
