/* The data path: argument checks, then a walk that pairs the file segments of the view with
 * the memory pieces of (buf, count, datatype) and hands iovecs to the driver, with no copy
 * of the user's data. Atomic mode brackets the access with a byte-range lock. */
#include "core/file.h"

#include <stdint.h>

#define MAXIOV 64

int pario_access_check(pario_file *f, const char *op, int rw, const void *buf, MPI_Count count,
                       MPI_Datatype type, const pario_typemap **tm) {
  const char *fn = f->filename;
  if (count < 0) return pario_err(MPI_ERR_COUNT, op, fn, 0, "negative count %lld", (long long)count);
  if (type == MPI_DATATYPE_NULL || pario_typemap_get(type, tm) != MPI_SUCCESS)
    return pario_err(MPI_ERR_TYPE, op, fn, 0, "invalid datatype");
  if (rw == PARIO_READ && (f->amode & MPI_MODE_WRONLY))
    return pario_err(MPI_ERR_ACCESS, op, fn, 0, "read from a file opened MPI_MODE_WRONLY");
  if (rw == PARIO_WRITE && (f->amode & MPI_MODE_RDONLY))
    return pario_err(MPI_ERR_READ_ONLY, op, fn, 0, "write to a file opened MPI_MODE_RDONLY");
  const pario_typemap *t = *tm;
  if (t->size > 0 && count > INT64_MAX / t->size)
    return pario_err(MPI_ERR_COUNT, op, fn, 0, "count %lld overflows", (long long)count);
  if (count > 0 && t->size > 0 && buf == NULL && t->runs[0].off < 4096)
    return pario_err(MPI_ERR_BUFFER, op, fn, 0, "null buffer with count %lld", (long long)count);
  if ((count * t->size) % f->view.esize)
    return pario_err(MPI_ERR_TYPE, op, fn, 0, "data size %lld is not a multiple of the etype size %lld",
                     (long long)(count * t->size), (long long)f->view.esize);
  return MPI_SUCCESS;
}

int pario_access_args(pario_file *f, const char *op, int rw, int explicit_off, MPI_Offset offset,
                      const void *buf, MPI_Count count, MPI_Datatype type, const pario_typemap **tm) {
  int rc = pario_access_check(f, op, rw, buf, count, type, tm);
  if (rc == MPI_SUCCESS && explicit_off && offset < 0)
    rc = pario_err(MPI_ERR_ARG, op, f->filename, 0, "negative offset %lld", (long long)offset);
  if (rc == MPI_SUCCESS && (f->amode & MPI_MODE_SEQUENTIAL))
    rc = pario_err(MPI_ERR_UNSUPPORTED_OPERATION, op, f->filename, 0,
                   "not allowed on a file opened with MPI_MODE_SEQUENTIAL (use the shared file pointer)");
  return rc;
}

void pario_status_set(MPI_Status *status, MPI_Count bytes) {
  if (status == MPI_STATUS_IGNORE) return;
  PMPI_Status_set_elements_x(status, MPI_BYTE, bytes);
  PMPI_Status_set_cancelled(status, 0);
}

static int xfer_error(pario_file *f, const char *op, int rw, int e, MPI_Offset len, MPI_Offset off) {
  return pario_err(pario_errno_class(e), op, f->filename, e, "%s of %lld bytes at offset %lld failed",
                   rw == PARIO_WRITE ? "write" : "read", (long long)len, (long long)off);
}

/* Move n bytes between the file at data position pos and memory; *done counts bytes moved
 * (less than n only for a read that reached end of file). */
static int walk(pario_file *f, const char *op, int rw, MPI_Offset pos, void *buf,
                const pario_typemap *tm, MPI_Offset n, MPI_Offset *done) {
  pario_fcursor fc;
  pario_mcursor mc;
  struct iovec iov[MAXIOV];
  pario_fcursor_init(&fc, &f->view, pos);
  pario_mcursor_init(&mc, buf, tm);
  *done = 0;
  while (*done < n) {
    MPI_Offset off, seg = pario_fcursor_next(&fc, n - *done, &off);
    while (seg > 0) {
      int cnt;
      size_t got = 0;
      MPI_Offset m = pario_mcursor_iov(&mc, seg, iov, MAXIOV, &cnt);
      int e = rw == PARIO_WRITE ? f->drv->pwritev(f->dh, iov, cnt, (off_t)off, &got)
                                : f->drv->preadv(f->dh, iov, cnt, (off_t)off, &got);
      *done += (MPI_Offset)got;
      if (e) return xfer_error(f, op, rw, e, m, off);
      if ((MPI_Offset)got < m) return MPI_SUCCESS; /* end of file */
      off += m;
      seg -= m;
    }
  }
  return MPI_SUCCESS;
}

int pario_access(pario_file *f, const char *op, int rw, MPI_Offset pos, void *buf,
                 MPI_Count count, MPI_Datatype type, MPI_Count *bytes) {
  const pario_typemap *tm;
  *bytes = 0;
  if (pario_typemap_get(type, &tm) != MPI_SUCCESS)
    return pario_err(MPI_ERR_TYPE, op, f->filename, 0, "invalid datatype");
  MPI_Offset n = (MPI_Offset)count * tm->size, done = 0, first = 0, last = 0;
  if (n == 0) return MPI_SUCCESS;
  if (f->atomic) {
    pario_view_extent_of(&f->view, pos, n, &first, &last);
    int e = f->drv->lock(f->dh, rw == PARIO_WRITE ? PARIO_LOCK_WRITE : PARIO_LOCK_READ, first, last - first);
    if (e) return pario_err(MPI_ERR_IO, op, f->filename, e, "byte-range lock for atomic mode failed");
  }
  int rc = walk(f, op, rw, pos, buf, tm, n, &done);
  if (f->atomic) f->drv->lock(f->dh, PARIO_UNLOCK, first, last - first);
  *bytes = done;
  return rc;
}
