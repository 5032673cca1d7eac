/* Blocking data access entry points: individual file pointer and explicit offset, independent
 * and collective, with their MPI-4 large-count twins. The collective calls are correct without
 * any communication today; the collective/ layer makes them fast. */
#include "core/file.h"

static int rw_common(MPI_File fh, const char *op, int rw, int explicit_off, MPI_Offset offset,
                     void *buf, MPI_Count count, MPI_Datatype type, MPI_Status *status) {
  pario_file *f;
  const pario_typemap *tm;
  MPI_Count bytes = 0;
  pario_status_set(status, 0);
  int rc = pario_file_check(fh, op, &f);
  if (rc != MPI_SUCCESS) return rc;
  rc = pario_access_args(f, op, rw, explicit_off, offset, buf, count, type, &tm);
  if (rc != MPI_SUCCESS) return pario_file_error(fh, rc);
  if (explicit_off) {
    rc = pario_access(f, op, rw, offset * f->view.esize, buf, count, type, &bytes);
  } else {
    pthread_mutex_lock(&f->lock);
    rc = pario_access(f, op, rw, f->fp_ind * f->view.esize, buf, count, type, &bytes);
    f->fp_ind += bytes / f->view.esize;
    pthread_mutex_unlock(&f->lock);
  }
  pario_status_set(status, bytes);
  return pario_file_error(fh, rc);
}

#define DEF_FP(name, rw, cq, ct)                                                            \
  PARIO_EXPORT int P##name(MPI_File fh, cq void *buf, ct count, MPI_Datatype datatype,       \
                           MPI_Status *status) {                                             \
    return rw_common(fh, #name, rw, 0, 0, (void *)buf, count, datatype, status);             \
  }                                                                                          \
  PARIO_WEAK_ALIAS(name)

#define DEF_AT(name, rw, cq, ct)                                                            \
  PARIO_EXPORT int P##name(MPI_File fh, MPI_Offset offset, cq void *buf, ct count,           \
                           MPI_Datatype datatype, MPI_Status *status) {                      \
    return rw_common(fh, #name, rw, 1, offset, (void *)buf, count, datatype, status);        \
  }                                                                                          \
  PARIO_WEAK_ALIAS(name)

#define NOCONST

DEF_FP(MPI_File_read, PARIO_READ, NOCONST, int)
DEF_FP(MPI_File_write, PARIO_WRITE, const, int)
DEF_FP(MPI_File_read_all, PARIO_READ, NOCONST, int)
DEF_FP(MPI_File_write_all, PARIO_WRITE, const, int)
DEF_AT(MPI_File_read_at, PARIO_READ, NOCONST, int)
DEF_AT(MPI_File_write_at, PARIO_WRITE, const, int)
DEF_AT(MPI_File_read_at_all, PARIO_READ, NOCONST, int)
DEF_AT(MPI_File_write_at_all, PARIO_WRITE, const, int)

#ifdef PARIO_HAVE_LARGE_COUNT
DEF_FP(MPI_File_read_c, PARIO_READ, NOCONST, MPI_Count)
DEF_FP(MPI_File_write_c, PARIO_WRITE, const, MPI_Count)
DEF_FP(MPI_File_read_all_c, PARIO_READ, NOCONST, MPI_Count)
DEF_FP(MPI_File_write_all_c, PARIO_WRITE, const, MPI_Count)
DEF_AT(MPI_File_read_at_c, PARIO_READ, NOCONST, MPI_Count)
DEF_AT(MPI_File_write_at_c, PARIO_WRITE, const, MPI_Count)
DEF_AT(MPI_File_read_at_all_c, PARIO_READ, NOCONST, MPI_Count)
DEF_AT(MPI_File_write_at_all_c, PARIO_WRITE, const, MPI_Count)
#endif
