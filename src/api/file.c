/* File-level entry points: open, close, delete, size, preallocation, sync, info, group,
 * access mode and atomicity. Thin: check arguments, call the core, route errors. */
#include "api/calltrace.h"
#include "core/file.h"

static int open_body(MPI_Comm comm, const char *filename, int amode, MPI_Info info, MPI_File *fh) {
  pario_file *f = NULL;
  if (!fh) return pario_file_error(MPI_FILE_NULL, pario_err(MPI_ERR_ARG, "MPI_File_open", filename, 0, "null handle pointer"));
  *fh = MPI_FILE_NULL;
  int rc = pario_open(comm, filename, amode, info, &f);
  if (rc != MPI_SUCCESS) return pario_file_error(MPI_FILE_NULL, rc);
  *fh = pario_handle(f);
  return MPI_SUCCESS;
}
PARIO_EXPORT int PMPI_File_open(MPI_Comm comm, const char *filename, int amode, MPI_Info info, MPI_File *fh) {
  PARIO_API_TRACED("MPI_File_open", (fh ? *fh : MPI_FILE_NULL), open_body(comm, filename, amode, info, fh));
}
PARIO_WEAK_ALIAS(MPI_File_open)

PARIO_EXPORT int PMPI_File_close(MPI_File *fh) {
  pario_file *f;
  if (!fh) return pario_file_error(MPI_FILE_NULL, pario_err(MPI_ERR_ARG, "MPI_File_close", NULL, 0, "null handle pointer"));
  int rc = pario_file_check(*fh, "MPI_File_close", &f);
  if (rc != MPI_SUCCESS) return rc;
  uint64_t t0 = PARIO_TRACE_T0();
  unsigned long long id = f->uid; /* f is gone after the close */
  rc = pario_close(f); /* a failure went through the file's own errhandler already */
  *fh = MPI_FILE_NULL;
  if (PARIO_TRACING()) pario_api_trace_id("MPI_File_close", t0, id, rc);
  return rc;
}
PARIO_WEAK_ALIAS(MPI_File_close)

static int delete_body(const char *filename, MPI_Info info) {
  return pario_file_error(MPI_FILE_NULL, pario_delete(filename, info));
}
PARIO_EXPORT int PMPI_File_delete(const char *filename, MPI_Info info) {
  PARIO_API_TRACED("MPI_File_delete", MPI_FILE_NULL, delete_body(filename, info));
}
PARIO_WEAK_ALIAS(MPI_File_delete)

/* set_size and preallocate: collective, same size on all ranks, rank 0 acts, all agree. */
static int resize(MPI_File fh, const char *op, MPI_Offset size, int preallocate) {
  pario_file *f;
  int rc = pario_file_check(fh, op, &f);
  if (rc != MPI_SUCCESS) return rc;
  int bad = size < 0 ? pario_err(MPI_ERR_ARG, op, f->filename, 0, "negative size %lld", (long long)size)
          : (f->amode & MPI_MODE_RDONLY) ? pario_err(MPI_ERR_READ_ONLY, op, f->filename, 0, "file opened MPI_MODE_RDONLY")
          : (f->amode & MPI_MODE_SEQUENTIAL) ? pario_err(MPI_ERR_UNSUPPORTED_OPERATION, op, f->filename, 0, "not allowed with MPI_MODE_SEQUENTIAL")
          : MPI_SUCCESS;
  rc = pario_check_same(f->comm, op, f->filename, "size", bad == MPI_SUCCESS ? size : -1);
  if (bad != MPI_SUCCESS) return pario_file_error(fh, bad);
  if (rc != MPI_SUCCESS) return pario_file_error(fh, rc);
  int e = 0;
  if (f->rank == 0) {
    off_t cur = 0;
    e = f->drv->size(f->dh, &cur);
    if (!e && preallocate && size > cur) e = f->drv->allocate(f->dh, 0, (off_t)size);
    if (!e && !preallocate) e = f->drv->truncate(f->dh, (off_t)size);
  }
  PMPI_Bcast(&e, 1, MPI_INT, 0, f->comm);
  if (e) rc = pario_err(pario_errno_class(e), op, f->filename, e, "cannot %s to %lld bytes",
                        preallocate ? "preallocate" : "resize", (long long)size);
  return pario_file_error(fh, rc);
}

static int set_size_body(MPI_File fh, MPI_Offset size) { return resize(fh, "MPI_File_set_size", size, 0); }
                         PARIO_EXPORT int PMPI_File_set_size(MPI_File fh, MPI_Offset size) {
  PARIO_API_TRACED("MPI_File_set_size", fh, set_size_body(fh, size));
}
PARIO_WEAK_ALIAS(MPI_File_set_size)

static int preallocate_body(MPI_File fh, MPI_Offset size) { return resize(fh, "MPI_File_preallocate", size, 1); }
                            PARIO_EXPORT int PMPI_File_preallocate(MPI_File fh, MPI_Offset size) {
  PARIO_API_TRACED("MPI_File_preallocate", fh, preallocate_body(fh, size));
}
PARIO_WEAK_ALIAS(MPI_File_preallocate)

static int get_size_body(MPI_File fh, MPI_Offset *size) {
  static const char op[] = "MPI_File_get_size";
  pario_file *f;
  int rc = pario_file_check_out(fh, op, size, &f);
  if (rc != MPI_SUCCESS) return rc;
  off_t s = 0;
  int e = f->drv->size(f->dh, &s);
  if (e) return pario_file_error(fh, pario_err(pario_errno_class(e), op, f->filename, e, "cannot get size"));
  *size = s;
  return MPI_SUCCESS;
}
PARIO_EXPORT int PMPI_File_get_size(MPI_File fh, MPI_Offset *size) {
  PARIO_API_TRACED("MPI_File_get_size", fh, get_size_body(fh, size));
}
PARIO_WEAK_ALIAS(MPI_File_get_size)

static int sync_body(MPI_File fh) {
  static const char op[] = "MPI_File_sync";
  pario_file *f;
  int rc = pario_file_check(fh, op, &f);
  if (rc != MPI_SUCCESS) return rc;
  int code = pario_layers_sync(f, op); /* operations already started and kept writes reach storage too */
  int e = (f->amode & MPI_MODE_RDONLY) ? 0 : pario_drv_sync(f);
  if (code == MPI_SUCCESS) code = e ? pario_err(pario_errno_class(e), op, f->filename, e, "fsync failed") : MPI_SUCCESS;
  int worst = pario_agree(f->comm, code); /* collective: everyone's data is on storage after it */
  if (worst != MPI_SUCCESS && code == MPI_SUCCESS)
    code = pario_err(worst, op, f->filename, 0, "sync failed on another rank");
  return pario_file_error(fh, code);
}
PARIO_EXPORT int PMPI_File_sync(MPI_File fh) {
  PARIO_API_TRACED("MPI_File_sync", fh, sync_body(fh));
}
PARIO_WEAK_ALIAS(MPI_File_sync)

static int get_group_body(MPI_File fh, MPI_Group *group) {
  pario_file *f;
  int rc = pario_file_check_out(fh, "MPI_File_get_group", group, &f);
  if (rc != MPI_SUCCESS) return rc;
  return pario_file_error(fh, PMPI_Comm_group(f->comm, group));
}
PARIO_EXPORT int PMPI_File_get_group(MPI_File fh, MPI_Group *group) {
  PARIO_API_TRACED("MPI_File_get_group", fh, get_group_body(fh, group));
}
PARIO_WEAK_ALIAS(MPI_File_get_group)

static int get_amode_body(MPI_File fh, int *amode) {
  pario_file *f;
  int rc = pario_file_check_out(fh, "MPI_File_get_amode", amode, &f);
  if (rc != MPI_SUCCESS) return rc;
  *amode = f->amode;
  return MPI_SUCCESS;
}
PARIO_EXPORT int PMPI_File_get_amode(MPI_File fh, int *amode) {
  PARIO_API_TRACED("MPI_File_get_amode", fh, get_amode_body(fh, amode));
}
PARIO_WEAK_ALIAS(MPI_File_get_amode)

static int set_info_body(MPI_File fh, MPI_Info info) {
  static const char op[] = "MPI_File_set_info";
  pario_file *f;
  int rc = pario_file_check(fh, op, &f);
  if (rc != MPI_SUCCESS) return rc;
  /* Collective: nothing in flight sees the change, and every rank takes rank 0's values of
   * the hints that must agree. */
  pario_layers_quiesce(f);
  pario_hints nh = f->hints;
  pario_hints_update(&nh, info);
  if (pario_hints_agree(f->comm, &nh, NULL, 0) != MPI_SUCCESS)
    return pario_file_error(fh, pario_err(MPI_ERR_OTHER, op, f->filename, 0, "agreement on hints failed"));
  pario_hints_install(f, &nh);
  return MPI_SUCCESS;
}
PARIO_EXPORT int PMPI_File_set_info(MPI_File fh, MPI_Info info) {
  PARIO_API_TRACED("MPI_File_set_info", fh, set_info_body(fh, info));
}
PARIO_WEAK_ALIAS(MPI_File_set_info)

static int get_info_body(MPI_File fh, MPI_Info *info_used) {
  pario_file *f;
  int rc = pario_file_check_out(fh, "MPI_File_get_info", info_used, &f);
  if (rc != MPI_SUCCESS) return rc;
  pthread_mutex_lock(&f->lock);
  rc = pario_hints_to_info(&f->hints, f->nodes, info_used);
  if (rc == MPI_SUCCESS) {
    pario_io_counters_info(f, *info_used);
    pario_layers_get_info(f, *info_used);
  }
  pthread_mutex_unlock(&f->lock);
  return pario_file_error(fh, rc);
}
PARIO_EXPORT int PMPI_File_get_info(MPI_File fh, MPI_Info *info_used) {
  PARIO_API_TRACED("MPI_File_get_info", fh, get_info_body(fh, info_used));
}
PARIO_WEAK_ALIAS(MPI_File_get_info)

static int set_atomicity_body(MPI_File fh, int flag) {
  static const char op[] = "MPI_File_set_atomicity";
  pario_file *f;
  int rc = pario_file_check(fh, op, &f);
  if (rc != MPI_SUCCESS) return rc;
  rc = pario_check_same(f->comm, op, f->filename, "atomicity flag", flag != 0);
  if (rc != MPI_SUCCESS) return pario_file_error(fh, rc);
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
  return pario_file_error(fh, code);
}
PARIO_EXPORT int PMPI_File_set_atomicity(MPI_File fh, int flag) {
  PARIO_API_TRACED("MPI_File_set_atomicity", fh, set_atomicity_body(fh, flag));
}
PARIO_WEAK_ALIAS(MPI_File_set_atomicity)

static int get_atomicity_body(MPI_File fh, int *flag) {
  pario_file *f;
  int rc = pario_file_check_out(fh, "MPI_File_get_atomicity", flag, &f);
  if (rc != MPI_SUCCESS) return rc;
  pthread_mutex_lock(&f->lock);
  *flag = f->atomic;
  pthread_mutex_unlock(&f->lock);
  return MPI_SUCCESS;
}
PARIO_EXPORT int PMPI_File_get_atomicity(MPI_File fh, int *flag) {
  PARIO_API_TRACED("MPI_File_get_atomicity", fh, get_atomicity_body(fh, flag));
}
PARIO_WEAK_ALIAS(MPI_File_get_atomicity)
