/* File errhandler entry points and Fortran handle conversion. MPI_FILE_NULL carries the
 * default handler that later opens inherit (MPI_ERRORS_RETURN unless set). */
#include "core/file.h"

PARIO_EXPORT int PMPI_File_create_errhandler(MPI_File_errhandler_function *function, MPI_Errhandler *errhandler) {
  if (!function || !errhandler)
    return pario_err(MPI_ERR_ARG, "MPI_File_create_errhandler", NULL, 0, "null argument");
  return pario_eh_create(function, errhandler);
}
PARIO_WEAK_ALIAS(MPI_File_create_errhandler)

PARIO_EXPORT int PMPI_File_set_errhandler(MPI_File file, MPI_Errhandler errhandler) {
  static const char op[] = "MPI_File_set_errhandler";
  if (errhandler == MPI_ERRHANDLER_NULL)
    return pario_file_error(file, pario_err(MPI_ERR_ARG, op, NULL, 0, "MPI_ERRHANDLER_NULL"));
  if (file == MPI_FILE_NULL) {
    int rc = pario_eh_default_set(errhandler);
    return rc == MPI_SUCCESS ? rc : pario_err(MPI_ERR_ARG, op, NULL, 0, "invalid errhandler");
  }
  pario_file *f;
  int rc = pario_file_check(file, op, &f);
  if (rc != MPI_SUCCESS) return rc;
  rc = pario_eh_set(f, errhandler);
  return rc == MPI_SUCCESS ? rc : pario_file_error(file, pario_err(MPI_ERR_ARG, op, f->filename, 0, "invalid errhandler"));
}
PARIO_WEAK_ALIAS(MPI_File_set_errhandler)

PARIO_EXPORT int PMPI_File_get_errhandler(MPI_File file, MPI_Errhandler *errhandler) {
  static const char op[] = "MPI_File_get_errhandler";
  if (!errhandler) return pario_file_error(file, pario_err(MPI_ERR_ARG, op, NULL, 0, "null pointer"));
  if (file == MPI_FILE_NULL) return pario_eh_default_get(errhandler);
  pario_file *f;
  int rc = pario_file_check(file, op, &f);
  if (rc != MPI_SUCCESS) return rc;
  return pario_eh_get(f, errhandler);
}
PARIO_WEAK_ALIAS(MPI_File_get_errhandler)

PARIO_EXPORT int PMPI_File_call_errhandler(MPI_File fh, int errorcode) {
  if (fh != MPI_FILE_NULL && !pario_registry_valid(fh))
    return pario_file_error(MPI_FILE_NULL, pario_err(MPI_ERR_FILE, "MPI_File_call_errhandler", NULL, 0, "invalid file handle"));
  pario_file_error(fh, errorcode);
  return MPI_SUCCESS;
}
PARIO_WEAK_ALIAS(MPI_File_call_errhandler)

PARIO_EXPORT MPI_Fint PMPI_File_c2f(MPI_File file) {
  if (file == MPI_FILE_NULL || !pario_registry_valid(file)) return 0;
  return (MPI_Fint)pario_file_of(file)->fint;
}
PARIO_WEAK_ALIAS(MPI_File_c2f)

PARIO_EXPORT MPI_File PMPI_File_f2c(MPI_Fint file) { return pario_registry_f2c((int)file); }
PARIO_WEAK_ALIAS(MPI_File_f2c)
