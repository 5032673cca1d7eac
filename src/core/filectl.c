/* The collective file-control protocols behind MPI_File_set_size, _preallocate, _sync,
 * _set_info and _set_atomicity, and the size query: every rank takes part, one rank or every
 * rank acts on the storage, and every rank ends with the same outcome. The API checks the
 * arguments and routes the result through the file's errhandler. */
#include "core/file.h"

int pario_resize(pario_file *f, const char *op, MPI_Offset size, int preallocate, int bad) {
  /* every rank takes part in the agreement, even one whose arguments were refused */
  int rc = pario_check_same(f->comm, op, f->filename, "size", bad == MPI_SUCCESS ? size : -1);
  if (bad != MPI_SUCCESS) return bad;
  if (rc != MPI_SUCCESS) return rc;
  int e = 0;
  if (f->rank == 0) { /* rank 0 acts, everyone learns its outcome */
    off_t cur = 0;
    e = f->drv->size(f->dh, &cur);
    if (!e && preallocate && size > cur) e = f->drv->allocate(f->dh, 0, (off_t)size);
    if (!e && !preallocate) e = f->drv->truncate(f->dh, (off_t)size);
  }
  PMPI_Bcast(&e, 1, MPI_INT, 0, f->comm);
  if (e)
    rc = pario_err(pario_errno_class(e), op, f->filename, e, "cannot %s to %lld bytes",
                   preallocate ? "preallocate" : "resize", (long long)size);
  return rc;
}

int pario_get_size(pario_file *f, const char *op, MPI_Offset *size) {
  off_t s = 0;
  int e = f->drv->size(f->dh, &s);
  if (e) return pario_err(pario_errno_class(e), op, f->filename, e, "cannot get size");
  *size = s;
  return MPI_SUCCESS;
}

int pario_eof_position(pario_file *f, const pario_view *v, const char *op, MPI_Offset *pos) {
  MPI_Offset size = 0;
  int rc = pario_get_size(f, op, &size);
  *pos = (pario_view_data_before(v, size) + v->esize - 1) / v->esize; /* a partial etype counts */
  return rc;
}

int pario_sync(pario_file *f, const char *op) {
  int code = pario_layers_sync(f, op); /* operations already started and kept writes reach storage too */
  int e = (f->amode & MPI_MODE_RDONLY) ? 0 : pario_drv_sync(f);
  if (code == MPI_SUCCESS) code = e ? pario_err(pario_errno_class(e), op, f->filename, e, "fsync failed") : MPI_SUCCESS;
  int worst = pario_agree(f->comm, code); /* collective: everyone's data is on storage after it */
  if (worst != MPI_SUCCESS && code == MPI_SUCCESS)
    code = pario_err(worst, op, f->filename, 0, "sync failed on another rank");
  return code;
}

int pario_set_info(pario_file *f, const char *op, MPI_Info info) {
  /* Collective: nothing in flight sees the change, and every rank takes rank 0's values of
   * the hints that must agree. */
  pario_layers_quiesce(f);
  pario_hints nh = f->hints;
  pario_hints_update(&nh, info);
  if (pario_hints_agree(f->comm, &nh, NULL, 0) != MPI_SUCCESS)
    return pario_err(MPI_ERR_OTHER, op, f->filename, 0, "agreement on hints failed");
  pario_hints_install(f, &nh);
  return MPI_SUCCESS;
}

int pario_set_atomicity(pario_file *f, const char *op, int flag) {
  int rc = pario_check_same(f->comm, op, f->filename, "atomicity flag", flag != 0);
  if (rc != MPI_SUCCESS) return rc;
  int e = 0;
  if (flag) /* prove that byte-range locks work here before promising atomicity */
    e = f->drv->lock_probe(f->dh, (f->amode & MPI_MODE_RDONLY) ? PARIO_LOCK_READ : PARIO_LOCK_WRITE);
  int code = e ? pario_err(MPI_ERR_UNSUPPORTED_OPERATION, op, f->filename, e,
                           "atomic mode needs byte-range locks, which this file system refuses")
               : MPI_SUCCESS;
  int worst = pario_agree(f->comm, code);
  if (worst != MPI_SUCCESS && code == MPI_SUCCESS)
    code = pario_err(worst, op, f->filename, 0, "atomic mode cannot be honoured on another rank");
  if (code == MPI_SUCCESS) {
    pario_layers_quiesce(f); /* an operation in flight keeps the mode it started with */
    pthread_mutex_lock(&f->lock);
    f->atomic = flag != 0;
    pthread_mutex_unlock(&f->lock);
  }
  return code;
}
