/* View and file pointer entry points: set_view/get_view, seek, get_position,
 * get_byte_offset and get_type_extent. */
#include "api/calltrace.h"
#include "core/file.h"
#include "core/rep.h"

#include <string.h>

static int set_view_body(MPI_File fh, MPI_Offset disp, MPI_Datatype etype,
                         MPI_Datatype filetype, const char *datarep, MPI_Info info) {
  pario_file *f;
  int rc = pario_file_check(fh, "MPI_File_set_view", &f);
  if (rc != MPI_SUCCESS) return rc;
  return pario_file_error(fh, pario_set_view(f, "MPI_File_set_view", disp, etype, filetype, datarep, info));
}
PARIO_EXPORT int PMPI_File_set_view(MPI_File fh, MPI_Offset disp, MPI_Datatype etype,
                                    MPI_Datatype filetype, const char *datarep, MPI_Info info) {
  PARIO_API_TRACED("MPI_File_set_view", fh, set_view_body(fh, disp, etype, filetype, datarep, info));
}
PARIO_WEAK_ALIAS(MPI_File_set_view)

/* get_view hands out the named type itself, or a new derived type the caller frees. */
static MPI_Datatype give(MPI_Datatype t) {
  MPI_Datatype d = t;
  if (!pario_type_is_named(t) && PMPI_Type_dup(t, &d) == MPI_SUCCESS) PMPI_Type_commit(&d);
  return d;
}

static int get_view_body(MPI_File fh, MPI_Offset *disp, MPI_Datatype *etype,
                         MPI_Datatype *filetype, char *datarep) {
  static const char op[] = "MPI_File_get_view";
  pario_file *f;
  int rc = pario_file_check(fh, op, &f);
  if (rc != MPI_SUCCESS) return rc;
  if (!disp || !etype || !filetype || !datarep)
    return pario_file_error(fh, pario_err(MPI_ERR_ARG, op, f->filename, 0, "null output argument"));
  pthread_mutex_lock(&f->lock);
  *disp = f->view->disp;
  *etype = give(f->view->etype);
  *filetype = give(f->view->filetype);
  memcpy(datarep, f->view->datarep, strlen(f->view->datarep) + 1);
  pthread_mutex_unlock(&f->lock);
  return MPI_SUCCESS;
}
PARIO_EXPORT int PMPI_File_get_view(MPI_File fh, MPI_Offset *disp, MPI_Datatype *etype,
                                    MPI_Datatype *filetype, char *datarep) {
  PARIO_API_TRACED("MPI_File_get_view", fh, get_view_body(fh, disp, etype, filetype, datarep));
}
PARIO_WEAK_ALIAS(MPI_File_get_view)

static int seek_body(MPI_File fh, MPI_Offset offset, int whence) {
  static const char op[] = "MPI_File_seek";
  pario_file *f;
  int rc = pario_file_check(fh, op, &f);
  if (rc != MPI_SUCCESS) return rc;
  if (f->amode & MPI_MODE_SEQUENTIAL)
    return pario_file_error(fh, pario_err(MPI_ERR_UNSUPPORTED_OPERATION, op, f->filename, 0,
                                          "not allowed with MPI_MODE_SEQUENTIAL"));
  pthread_mutex_lock(&f->lock);
  MPI_Offset base = 0;
  if (whence == MPI_SEEK_CUR) {
    base = f->fp_ind;
  } else if (whence == MPI_SEEK_END) {
    rc = pario_eof_position(f, f->view, op, &base);
  } else if (whence != MPI_SEEK_SET) {
    rc = pario_err(MPI_ERR_ARG, op, f->filename, 0, "invalid whence %d", whence);
  }
  if (rc == MPI_SUCCESS && base + offset < 0)
    rc = pario_err(MPI_ERR_ARG, op, f->filename, 0, "seek to negative position %lld", (long long)(base + offset));
  if (rc == MPI_SUCCESS) f->fp_ind = base + offset;
  pthread_mutex_unlock(&f->lock);
  return pario_file_error(fh, rc);
}
PARIO_EXPORT int PMPI_File_seek(MPI_File fh, MPI_Offset offset, int whence) {
  PARIO_API_TRACED("MPI_File_seek", fh, seek_body(fh, offset, whence));
}
PARIO_WEAK_ALIAS(MPI_File_seek)

static int get_position_body(MPI_File fh, MPI_Offset *offset) {
  static const char op[] = "MPI_File_get_position";
  pario_file *f;
  int rc = pario_file_check_out(fh, op, offset, &f);
  if (rc != MPI_SUCCESS) return rc;
  if (f->amode & MPI_MODE_SEQUENTIAL)
    return pario_file_error(fh, pario_err(MPI_ERR_UNSUPPORTED_OPERATION, op, f->filename, 0,
                                          "not allowed with MPI_MODE_SEQUENTIAL"));
  pthread_mutex_lock(&f->lock);
  *offset = f->fp_ind;
  pthread_mutex_unlock(&f->lock);
  return MPI_SUCCESS;
}
PARIO_EXPORT int PMPI_File_get_position(MPI_File fh, MPI_Offset *offset) {
  PARIO_API_TRACED("MPI_File_get_position", fh, get_position_body(fh, offset));
}
PARIO_WEAK_ALIAS(MPI_File_get_position)

static int get_byte_offset_body(MPI_File fh, MPI_Offset offset, MPI_Offset *disp) {
  static const char op[] = "MPI_File_get_byte_offset";
  pario_file *f;
  int rc = pario_file_check_out(fh, op, disp, &f);
  if (rc != MPI_SUCCESS) return rc;
  if (offset < 0)
    return pario_file_error(fh, pario_err(MPI_ERR_ARG, op, f->filename, 0, "negative offset %lld", (long long)offset));
  pthread_mutex_lock(&f->lock);
  *disp = pario_view_file_offset(f->view, offset * f->view->esize);
  pthread_mutex_unlock(&f->lock);
  return MPI_SUCCESS;
}
PARIO_EXPORT int PMPI_File_get_byte_offset(MPI_File fh, MPI_Offset offset, MPI_Offset *disp) {
  PARIO_API_TRACED("MPI_File_get_byte_offset", fh, get_byte_offset_body(fh, offset, disp));
}
PARIO_WEAK_ALIAS(MPI_File_get_byte_offset)

/* Extent in the file: the memory extent under native and internal; under external32 or a
 * user-defined representation the extent of the type's file layout (for a user
 * representation its extent callback sizes the basic types). */
static int type_extent(MPI_File fh, MPI_Datatype type, MPI_Count *extent) {
  static const char op[] = "MPI_File_get_type_extent";
  pario_file *f;
  const pario_typemap *tm;
  const pario_ext32_map *m;
  int rc = pario_file_check(fh, op, &f);
  if (rc != MPI_SUCCESS) return rc;
  MPI_Count lb;
  if (!extent) return pario_file_error(fh, pario_err(MPI_ERR_ARG, op, f->filename, 0, "null pointer"));
  if (type == MPI_DATATYPE_NULL || PMPI_Type_get_extent_x(type, &lb, extent) != MPI_SUCCESS ||
      pario_typemap_get(type, &tm) != MPI_SUCCESS)
    return pario_file_error(fh, pario_err(MPI_ERR_TYPE, op, f->filename, 0, "invalid datatype"));
  pario_snap s;
  pario_snap_take(f, &s);
  if (s.view->rep && (rc = pario_rep_map(s.view->rep, type, tm, &m, op, f->filename)) == MPI_SUCCESS)
    *extent = m->eextent;
  pario_snap_drop(&s);
  return pario_file_error(fh, rc);
}

static int get_type_extent_body(MPI_File fh, MPI_Datatype datatype, MPI_Aint *extent) {
  MPI_Count e = 0;
  int rc = type_extent(fh, datatype, &e);
  if (rc == MPI_SUCCESS && extent) *extent = (MPI_Aint)e;
  return rc;
}
PARIO_EXPORT int PMPI_File_get_type_extent(MPI_File fh, MPI_Datatype datatype, MPI_Aint *extent) {
  PARIO_API_TRACED("MPI_File_get_type_extent", fh, get_type_extent_body(fh, datatype, extent));
}
PARIO_WEAK_ALIAS(MPI_File_get_type_extent)

#ifdef PARIO_HAVE_LARGE_COUNT
static int get_type_extent_c_body(MPI_File fh, MPI_Datatype datatype, MPI_Count *extent) {
  return type_extent(fh, datatype, extent);
}
PARIO_EXPORT int PMPI_File_get_type_extent_c(MPI_File fh, MPI_Datatype datatype, MPI_Count *extent) {
  PARIO_API_TRACED("MPI_File_get_type_extent_c", fh, get_type_extent_c_body(fh, datatype, extent));
}
PARIO_WEAK_ALIAS(MPI_File_get_type_extent_c)
#endif
