/* MPI-IO functions whose implementation lands with a later part of pario (shared file
 * pointers, user data representations). Each exists, so the native
 * MPI-IO is never handed a pario handle, and fails with MPI_ERR_UNSUPPORTED_OPERATION
 * through the file's errhandler, naming itself. */
#include "core/file.h"

#include <string.h>

static int unsupported(MPI_File fh, const char *op, const char *what) {
  pario_file *f;
  int rc = pario_file_check(fh, op, &f);
  if (rc != MPI_SUCCESS) return rc;
  return pario_file_error(fh, pario_err(MPI_ERR_UNSUPPORTED_OPERATION, op, f->filename, 0,
                                        "%s are not supported by this version of pario", what));
}

#define SHARED "shared file pointer operations"

/* Nonblocking: iread/iwrite[_at][_all][_shared]. */
#define DEF_I(name, cq, ct, what)                                                               \
  PARIO_EXPORT int P##name(MPI_File fh, cq void *buf, ct count, MPI_Datatype dt, MPI_Request *req) { \
    (void)buf; (void)count; (void)dt;                                                           \
    if (req) *req = MPI_REQUEST_NULL;                                                           \
    return unsupported(fh, #name, what);                                                        \
  }                                                                                             \
  PARIO_WEAK_ALIAS(name)
/* Blocking shared/ordered: read/write_shared, read/write_ordered. */
#define DEF_SH(name, cq, ct)                                                                    \
  PARIO_EXPORT int P##name(MPI_File fh, cq void *buf, ct count, MPI_Datatype dt, MPI_Status *st) { \
    (void)buf; (void)count; (void)dt;                                                           \
    pario_status_set(st, 0);                                                                    \
    return unsupported(fh, #name, SHARED);                                                      \
  }                                                                                             \
  PARIO_WEAK_ALIAS(name)
/* Split collectives. */
#define DEF_BEGIN(name, cq, ct, what)                                                           \
  PARIO_EXPORT int P##name(MPI_File fh, cq void *buf, ct count, MPI_Datatype dt) {               \
    (void)buf; (void)count; (void)dt;                                                           \
    return unsupported(fh, #name, what);                                                        \
  }                                                                                             \
  PARIO_WEAK_ALIAS(name)
#define DEF_END(name, cq, what)                                                                 \
  PARIO_EXPORT int P##name(MPI_File fh, cq void *buf, MPI_Status *st) {                          \
    (void)buf;                                                                                  \
    pario_status_set(st, 0);                                                                    \
    return unsupported(fh, #name, what);                                                        \
  }                                                                                             \
  PARIO_WEAK_ALIAS(name)

#define NOCONST

DEF_I(MPI_File_iread_shared, NOCONST, int, SHARED)
DEF_I(MPI_File_iwrite_shared, const, int, SHARED)
DEF_SH(MPI_File_read_shared, NOCONST, int)
DEF_SH(MPI_File_write_shared, const, int)
DEF_SH(MPI_File_read_ordered, NOCONST, int)
DEF_SH(MPI_File_write_ordered, const, int)
DEF_BEGIN(MPI_File_read_ordered_begin, NOCONST, int, SHARED)
DEF_BEGIN(MPI_File_write_ordered_begin, const, int, SHARED)
DEF_END(MPI_File_read_ordered_end, NOCONST, SHARED)
DEF_END(MPI_File_write_ordered_end, const, SHARED)

#ifdef PARIO_HAVE_LARGE_COUNT
DEF_I(MPI_File_iread_shared_c, NOCONST, MPI_Count, SHARED)
DEF_I(MPI_File_iwrite_shared_c, const, MPI_Count, SHARED)
DEF_SH(MPI_File_read_shared_c, NOCONST, MPI_Count)
DEF_SH(MPI_File_write_shared_c, const, MPI_Count)
DEF_SH(MPI_File_read_ordered_c, NOCONST, MPI_Count)
DEF_SH(MPI_File_write_ordered_c, const, MPI_Count)
DEF_BEGIN(MPI_File_read_ordered_begin_c, NOCONST, MPI_Count, SHARED)
DEF_BEGIN(MPI_File_write_ordered_begin_c, const, MPI_Count, SHARED)
#endif

PARIO_EXPORT int PMPI_File_seek_shared(MPI_File fh, MPI_Offset offset, int whence) {
  (void)offset; (void)whence;
  return unsupported(fh, "MPI_File_seek_shared", SHARED);
}
PARIO_WEAK_ALIAS(MPI_File_seek_shared)

PARIO_EXPORT int PMPI_File_get_position_shared(MPI_File fh, MPI_Offset *offset) {
  (void)offset;
  return unsupported(fh, "MPI_File_get_position_shared", SHARED);
}
PARIO_WEAK_ALIAS(MPI_File_get_position_shared)

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
