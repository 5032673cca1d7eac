/* MPI_Register_datarep and MPI_Register_datarep_c: a user-defined data representation enters
 * pario's process-wide registry (core/rep.c), so set_view accepts its name. Not an
 * MPI_File_ function, but pario must define it: the native one would register with the
 * host's MPI-IO, which pario's set_view never asks. */
#include "core/file.h"
#include "core/rep.h"

#include <string.h>

static int reg(const char *datarep, pario_rep *proto, const char *op) {
  if (!datarep)
    return pario_file_error(MPI_FILE_NULL, pario_err(MPI_ERR_ARG, op, NULL, 0, "null data representation name"));
  if (strnlen(datarep, MPI_MAX_DATAREP_STRING) >= MPI_MAX_DATAREP_STRING)
    return pario_file_error(MPI_FILE_NULL, pario_err(MPI_ERR_ARG, op, NULL, 0, "data representation name longer than %d characters",
                                                     MPI_MAX_DATAREP_STRING - 1));
  strcpy(proto->name, datarep);
  return pario_file_error(MPI_FILE_NULL, pario_rep_register(proto, op));
}

PARIO_EXPORT int PMPI_Register_datarep(const char *datarep, MPI_Datarep_conversion_function *read_conversion_fn,
                                       MPI_Datarep_conversion_function *write_conversion_fn,
                                       MPI_Datarep_extent_function *dtype_file_extent_fn, void *extra_state) {
  pario_rep r = {.rd = read_conversion_fn, .wr = write_conversion_fn, .extent = dtype_file_extent_fn,
                 .extra = extra_state};
  return reg(datarep, &r, "MPI_Register_datarep");
}
PARIO_WEAK_ALIAS(MPI_Register_datarep)

#ifdef PARIO_HAVE_LARGE_COUNT
PARIO_EXPORT int PMPI_Register_datarep_c(const char *datarep, MPI_Datarep_conversion_function_c *read_conversion_fn,
                                         MPI_Datarep_conversion_function_c *write_conversion_fn,
                                         MPI_Datarep_extent_function *dtype_file_extent_fn, void *extra_state) {
  pario_rep r = {.large = 1, .rd_c = read_conversion_fn, .wr_c = write_conversion_fn, .extent = dtype_file_extent_fn,
                 .extra = extra_state};
  return reg(datarep, &r, "MPI_Register_datarep_c");
}
PARIO_WEAK_ALIAS(MPI_Register_datarep_c)
#endif
