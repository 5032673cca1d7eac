/* File errhandler entry points and Fortran handle conversion. MPI_FILE_NULL carries the
 * default handler that later opens inherit (MPI_ERRORS_RETURN unless set). Each is traced as
 * the other entry points (calltrace.h). */
#include "api/calltrace.h"
#include "core/file.h"

PARIO_EXPORT int PMPI_File_create_errhandler(MPI_File_errhandler_function *function, MPI_Errhandler *errhandler) {
  if (!function || !errhandler)
    return pario_err(MPI_ERR_ARG, "MPI_File_create_errhandler", NULL, 0, "null argument");
  return pario_eh_create(function, errhandler);
}
PARIO_WEAK_ALIAS(MPI_File_create_errhandler)

static int set_errhandler_body(MPI_File file, MPI_Errhandler errhandler) {
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

PARIO_EXPORT int PMPI_File_set_errhandler(MPI_File file, MPI_Errhandler errhandler) {
  PARIO_API_TRACED("MPI_File_set_errhandler", file, set_errhandler_body(file, errhandler));
}
PARIO_WEAK_ALIAS(MPI_File_set_errhandler)

static int get_errhandler_body(MPI_File file, MPI_Errhandler *errhandler) {
  static const char op[] = "MPI_File_get_errhandler";
  if (!errhandler) return pario_file_error(file, pario_err(MPI_ERR_ARG, op, NULL, 0, "null pointer"));
  if (file == MPI_FILE_NULL) return pario_eh_default_get(errhandler);
  pario_file *f;
  int rc = pario_file_check(file, op, &f);
  if (rc != MPI_SUCCESS) return rc;
  return pario_eh_get(f, errhandler);
}

PARIO_EXPORT int PMPI_File_get_errhandler(MPI_File file, MPI_Errhandler *errhandler) {
  PARIO_API_TRACED("MPI_File_get_errhandler", file, get_errhandler_body(file, errhandler));
}
PARIO_WEAK_ALIAS(MPI_File_get_errhandler)

static int call_errhandler_body(MPI_File fh, int errorcode) {
  if (fh != MPI_FILE_NULL && !pario_registry_valid(fh))
    return pario_file_error(MPI_FILE_NULL, pario_err(MPI_ERR_FILE, "MPI_File_call_errhandler", NULL, 0, "invalid file handle"));
  pario_file_error(fh, errorcode);
  return MPI_SUCCESS;
}

/* The span ends after the handler returned (a handler that aborts leaves no span). */
PARIO_EXPORT int PMPI_File_call_errhandler(MPI_File fh, int errorcode) {
  uint64_t t0 = PARIO_TRACE_T0();
  int rc = call_errhandler_body(fh, errorcode);
  if (PARIO_TRACING()) {
    unsigned long long id = fh != MPI_FILE_NULL && pario_registry_valid(fh) ? pario_file_of(fh)->uid : 0;
    PARIO_TRACE_SPAN(PARIO_TC_API, "MPI_File_call_errhandler", t0, PARIO_TA("file", id), PARIO_TA("rc", rc),
                     PARIO_TA("errorcode", errorcode));
  }
  return rc;
}
PARIO_WEAK_ALIAS(MPI_File_call_errhandler)

/* c2f and f2c return handles, not error codes: their spans carry rc 0 and the Fortran handle.
 * The MPI standard ABI (mpi_abi.h) has no MPI_Fint and no c2f/f2c in C; its MPI_File_toint and
 * MPI_File_fromint convert to and from int. There MPI_FILE_NULL's int is the constant's value
 * (0x118) and an open file's is pario's Fortran handle above ABI_INT_BASE, clear of the values
 * the ABI gives predefined handles (as MPICH 5 numbers its own, from 0x1001). */
#ifdef MPI_ABI_VERSION
#define ABI_INT_BASE 0x1000
#define NULL_INT ((int)(intptr_t)MPI_FILE_NULL)
#else
#define ABI_INT_BASE 0
#define NULL_INT 0
#endif

static int file_to_int(const char *op, MPI_File file) {
  uint64_t t0 = PARIO_TRACE_T0();
  int valid = file != MPI_FILE_NULL && pario_registry_valid(file);
  int fint = valid ? pario_file_of(file)->fint + ABI_INT_BASE : NULL_INT;
  PARIO_TRACE_SPAN(PARIO_TC_API, op, t0, PARIO_TA("file", valid ? pario_file_of(file)->uid : 0),
                   PARIO_TA("rc", 0), PARIO_TA("fint", fint));
  return fint;
}

static MPI_File file_from_int(const char *op, int fint) {
  uint64_t t0 = PARIO_TRACE_T0();
  MPI_File fh = fint > ABI_INT_BASE ? pario_registry_f2c(fint - ABI_INT_BASE) : MPI_FILE_NULL;
  PARIO_TRACE_SPAN(PARIO_TC_API, op, t0,
                   PARIO_TA("file", fh != MPI_FILE_NULL ? pario_file_of(fh)->uid : 0), PARIO_TA("rc", 0),
                   PARIO_TA("fint", fint));
  return fh;
}

#if defined(MPI_ABI_VERSION) || defined(PARIO_HOST_FILE_TOINT)
/* MPI-4.1's toint/fromint: the ABI's only conversion, and exported beside c2f/f2c by MPIs whose
 * own libraries have them (their mpi.h may not declare them: MPICH 5's does not). */
int PMPI_File_toint(MPI_File file);
MPI_File PMPI_File_fromint(int file);
PARIO_EXPORT int PMPI_File_toint(MPI_File file) { return file_to_int("MPI_File_toint", file); }
PARIO_WEAK_ALIAS(MPI_File_toint)
PARIO_EXPORT MPI_File PMPI_File_fromint(int file) { return file_from_int("MPI_File_fromint", file); }
PARIO_WEAK_ALIAS(MPI_File_fromint)
#endif
#ifndef MPI_ABI_VERSION
PARIO_EXPORT MPI_Fint PMPI_File_c2f(MPI_File file) { return (MPI_Fint)file_to_int("MPI_File_c2f", file); }
PARIO_WEAK_ALIAS(MPI_File_c2f)
PARIO_EXPORT MPI_File PMPI_File_f2c(MPI_Fint file) { return file_from_int("MPI_File_f2c", (int)file); }
PARIO_WEAK_ALIAS(MPI_File_f2c)
#endif
