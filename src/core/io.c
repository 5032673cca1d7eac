/* The data path: argument checks, then a walk that pairs the file segments of the view with
 * the memory pieces of (buf, count, datatype) and hands iovecs to the driver, with no copy
 * of the user's data. Atomic mode brackets the access with a byte-range lock. Which path an
 * access takes is decided here (transfer): the plain walk, data sieving (sieve.c) or list
 * transfers for remote drivers (listio.c); xfer.h is what the three share. */
#include "core/file.h"
#include "core/xfer.h"
#include "core/rep.h"
#include "trace/trace.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Tracing on: the transfer as a span with a request id (flow) of its own; the x-rio driver's
 * requests carry their wire ids as theirs (driver/rioconn.c), which the server's events name. */
static int xfer_traced(pario_file *f, int rw, const struct iovec *iov, int cnt, off_t off, size_t *got,
                       pario_drv_coll *coll) {
  uint64_t flow = pario_trace_flow_new(), t0 = pario_trace_now();
  int e = rw == PARIO_WRITE ? f->drv->pwritev(f->dh, iov, cnt, off, got, coll)
                            : f->drv->preadv(f->dh, iov, cnt, off, got, coll);
  size_t len = 0;
  for (int i = 0; i < cnt; i++) len += iov[i].iov_len;
  PARIO_TRACE_SPANX(PARIO_TC_DRIVER, rw == PARIO_WRITE ? "pwritev" : "preadv", t0, flow, "driver", f->drv->name,
                    PARIO_TA("file", f->uid), PARIO_TA("offset", off), PARIO_TA("len", len), PARIO_TA("done", *got),
                    PARIO_TA("iovcnt", cnt), PARIO_TA("err", e));
  return e;
}

void pario_io_count_read(pario_file *f, size_t got) {
  if (got) __atomic_fetch_add(&f->bytes_read_file, (unsigned long long)got, __ATOMIC_RELAXED);
}

void pario_io_count_request(pario_file *f, MPI_Offset n) {
  if (n > 0) __atomic_fetch_add(&f->bytes_requested, (unsigned long long)n, __ATOMIC_RELAXED);
}

void pario_io_counters_info(pario_file *f, MPI_Info info) {
  const struct {
    const char *key;
    unsigned long long *n;
  } c[] = {{"pario_bytes_read_file", &f->bytes_read_file},
           {"pario_bytes_requested", &f->bytes_requested},
           {"pario_coll_calls", &f->coll_calls},
           {"pario_coll_aggregated", &f->coll_aggregated}};
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
    char v[32];
    snprintf(v, sizeof v, "%llu", __atomic_load_n(c[i].n, __ATOMIC_RELAXED));
    PMPI_Info_set(info, c[i].key, v);
  }
}

/* Every driver transfer of the data path passes here (list transfers in list_access), so
 * the read volume is counted here. */
int pario_drv_xfer(pario_file *f, int rw, const struct iovec *iov, int cnt, off_t off, size_t *got,
                   pario_drv_coll *coll) {
  int e;
  if (PARIO_TRACING()) e = xfer_traced(f, rw, iov, cnt, off, got, coll);
  else
    e = rw == PARIO_WRITE ? f->drv->pwritev(f->dh, iov, cnt, off, got, coll)
                          : f->drv->preadv(f->dh, iov, cnt, off, got, coll);
  if (rw == PARIO_READ) pario_io_count_read(f, *got);
  return e;
}

int pario_drv_sync(pario_file *f) {
  uint64_t t0 = PARIO_TRACE_T0();
  int e = f->drv->sync(f->dh);
  PARIO_TRACE_SPANX(PARIO_TC_DRIVER, "sync", t0, 0, "driver", f->drv->name, PARIO_TA("file", f->uid), PARIO_TA("err", e));
  return e;
}

int pario_access_check(pario_file *f, const pario_view *v, const char *op, int rw, const void *buf,
                       MPI_Count count, MPI_Datatype type, const pario_typemap **tm) {
  const char *fn = f->filename;
  if (count < 0) return pario_err(MPI_ERR_COUNT, op, fn, 0, "negative count %lld", (long long)count);
  if (type == MPI_DATATYPE_NULL || pario_typemap_get(type, tm) != MPI_SUCCESS)
    return pario_err(MPI_ERR_TYPE, op, fn, 0, "invalid datatype");
  if (!pario_type_committed(type, *tm)) return pario_err(MPI_ERR_TYPE, op, fn, 0, "datatype is not committed");
  if (rw == PARIO_READ && (f->amode & MPI_MODE_WRONLY))
    return pario_err(MPI_ERR_ACCESS, op, fn, 0, "read from a file opened MPI_MODE_WRONLY");
  if (rw == PARIO_WRITE && (f->amode & MPI_MODE_RDONLY))
    return pario_err(MPI_ERR_READ_ONLY, op, fn, 0, "write to a file opened MPI_MODE_RDONLY");
  const pario_typemap *t = *tm;
  if (t->size > 0 && count > INT64_MAX / t->size)
    return pario_err(MPI_ERR_COUNT, op, fn, 0, "count %lld overflows", (long long)count);
  if (count > 0 && t->size > 0 && buf == NULL && t->runs[0].off < 4096)
    return pario_err(MPI_ERR_BUFFER, op, fn, 0, "null buffer with count %lld", (long long)count);
  MPI_Offset n; /* in the view's representation */
  int rc = pario_rep_data_size(v, type, t, count, &n, op, fn);
  if (rc != MPI_SUCCESS) return rc;
  if (n > 0 && v->ftm->size == 0)
    return pario_err(MPI_ERR_ARG, op, fn, 0, "the view has no data (its filetype has size 0): only count 0 can be accessed");
  if (n % v->esize)
    return pario_err(MPI_ERR_TYPE, op, fn, 0, "data size %lld is not a multiple of the etype size %lld%s",
                     (long long)n, (long long)v->esize, v->rep ? " (in the file's representation)" : "");
  return MPI_SUCCESS;
}

int pario_access_args(pario_file *f, const pario_view *v, const char *op, int rw, int explicit_off,
                      MPI_Offset offset, const void *buf, MPI_Count count, MPI_Datatype type,
                      const pario_typemap **tm) {
  int rc = pario_access_check(f, v, op, rw, buf, count, type, tm);
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

int pario_xfer_error(pario_file *f, const char *op, int rw, int e, MPI_Offset len, MPI_Offset off) {
  return pario_err(pario_errno_class(e), op, f->filename, e, "%s of %lld bytes at offset %lld failed",
                   rw == PARIO_WRITE ? "write" : "read", (long long)len, (long long)off);
}

/* Move one file segment (seg bytes at off) between the file and the memory cursor. *eof is
 * set when a read stopped at end of file. lockw: a write holds a byte-range write lock over
 * the segment, so that another process's data-sieving read-modify-write around it cannot put
 * the old bytes back over it. */
int pario_xfer_seg(pario_file *f, const char *op, int rw, pario_mcursor *mc, MPI_Offset off,
                   MPI_Offset seg, MPI_Offset *done, int *eof, int lockw) {
  struct iovec iov[PARIO_MAXIOV];
  lockw = lockw && rw == PARIO_WRITE && seg > 0; /* callers in atomic mode pass 0: locked already */
  if (lockw) {
    int e = f->drv->lock(f->dh, PARIO_LOCK_WRITE, off, seg);
    if (e) return pario_err(MPI_ERR_IO, op, f->filename, e, "byte-range lock beside data sieving failed");
  }
  MPI_Offset lo = off, len = seg;
  int rc = MPI_SUCCESS;
  while (seg > 0) {
    int cnt;
    size_t got = 0;
    MPI_Offset m = pario_mcursor_iov(mc, seg, iov, PARIO_MAXIOV, &cnt);
    int e = pario_drv_xfer(f, rw, iov, cnt, (off_t)off, &got, NULL);
    *done += (MPI_Offset)got;
    if (e) {
      rc = pario_xfer_error(f, op, rw, e, m, off);
      break;
    }
    if ((MPI_Offset)got < m) {
      *eof = 1;
      break;
    }
    off += m;
    seg -= m;
  }
  if (lockw) f->drv->lock(f->dh, PARIO_UNLOCK, lo, len);
  return rc;
}

/* Move n bytes between the file at data position pos and memory; *done counts bytes moved
 * (less than n only for a read that reached end of file). */
int pario_xfer_walk(pario_file *f, const char *op, int rw, pario_fcursor *fc, pario_mcursor *mc,
                    MPI_Offset n, MPI_Offset *done, int lockw) {
  int eof = 0, rc = MPI_SUCCESS;
  while (rc == MPI_SUCCESS && !eof && *done < n) {
    MPI_Offset off, seg = pario_fcursor_next(fc, n - *done, &off);
    rc = pario_xfer_seg(f, op, rw, mc, off, seg, done, &eof, lockw);
  }
  return rc;
}

int pario_access(pario_file *f, const pario_snap *s, const char *op, int rw, MPI_Offset pos, void *buf,
                 MPI_Count count, MPI_Datatype type, MPI_Count *bytes) {
  return pario_access_ex(f, s, op, rw, pos, buf, count, type, bytes, 0, NULL);
}

/* The transfer of n bytes of the view's data stream from pos, between the file and the memory
 * cursor, by whichever path fits; locked: atomic mode's byte-range lock is held already; coll:
 * the collective access it is part of (only list transfers, those of remote drivers, carry it). */
static int transfer(pario_file *f, const pario_view *v, int locked, const char *op, int rw, MPI_Offset pos,
                    pario_mcursor *mc, MPI_Offset n, MPI_Offset *done, int lock_writes, pario_drv_coll *coll) {
  MPI_Offset first = 0, last = 0, before = *done;
  if (!v->contiguous) pario_view_extent_of(v, pos, n, &first, &last); /* where sieving windows stop */
  pario_fcursor fc;
  pario_fcursor_init(&fc, v, pos);
  int rc;
  const char *how;
  uint64_t t0 = PARIO_TRACE_T0();
  if (f->drv->preadl && rw == PARIO_READ) { /* a remote driver: one list request per window */
    how = "list";
    rc = pario_list_access(f, op, rw, &fc, mc, n, done, coll);
  } else if (f->drv->pwritel && rw == PARIO_WRITE) {
    how = "list";
    pthread_rwlock_rdlock(&f->rmw_lock);
    rc = pario_list_access(f, op, rw, &fc, mc, n, done, coll);
    pthread_rwlock_unlock(&f->rmw_lock);
  } else if (rw == PARIO_READ && (!pario_sieves_read(f, v, n) || pario_view_irregular(v, pos, n))) {
    how = "direct";
    rc = pario_xfer_walk(f, op, rw, &fc, mc, n, done, 0);
  } else if (rw == PARIO_READ && !f->hints.direct_io && pario_sieve_scatters(fc, n)) {
    how = "scatter";
    rc = pario_sieve_read_scatter(f, op, &fc, mc, n, done, last);
  } else if (rw == PARIO_READ) {
    how = "sieve";
    rc = pario_sieve_read(f, op, &fc, mc, n, done, last);
  } else {
    int sieve = pario_sieves_write(f, v, n) && !pario_view_irregular(v, pos, n);
    how = sieve ? "sieve" : "direct";
    if (sieve) pthread_rwlock_wrlock(&f->rmw_lock);
    else pthread_rwlock_rdlock(&f->rmw_lock);
    rc = sieve ? pario_sieve_write(f, locked, op, &fc, mc, n, done, last)
               : pario_xfer_walk(f, op, rw, &fc, mc, n, done, !locked && lock_writes && f->locks_work >= 0);
    pthread_rwlock_unlock(&f->rmw_lock);
  }
  if (!v->contiguous) /* how a noncontiguous access went; a contiguous one is its driver spans */
    PARIO_TRACE_SPANX(PARIO_TC_SIEVE, rw == PARIO_WRITE ? "access_write" : "access_read", t0, 0, "method", how,
                      PARIO_TA("file", f->uid), PARIO_TA("pos", pos), PARIO_TA("bytes", n),
                      PARIO_TA("done", *done - before));
  return rc;
}

/* Chunks of converted data, in file-representation bytes: large enough that a chunk's
 * system calls cost little beside its conversion, small enough to stay in the CPU cache. */
#define STAGE (512 << 10)

/* An access under a view whose representation is not native: memory is converted chunk by
 * chunk into (writes) or out of (reads) a bounded staging buffer of file-representation
 * bytes, and each chunk goes through the same file-side paths as native data. */
static int converted(pario_file *f, const pario_view *v, int locked, const char *op, int rw, MPI_Offset pos,
                     void *buf, MPI_Datatype type, const pario_typemap *tm, MPI_Offset n, MPI_Offset *done,
                     int lock_writes, pario_drv_coll *coll) {
  pario_conv cv;
  const pario_typemap *bytes_tm;
  int rc = pario_conv_init(&cv, v->rep, buf, type, tm, 0, op, f->filename);
  if (rc != MPI_SUCCESS) return rc;
  pario_typemap_get(MPI_BYTE, &bytes_tm);
  MPI_Offset cap = PARIO_MAX(PARIO_MIN(n, STAGE), cv.maxitem);
  char *stage = malloc((size_t)cap);
  if (!stage) return pario_err(MPI_ERR_NO_MEM, op, f->filename, 0, "out of memory for a conversion buffer");
  while (rc == MPI_SUCCESS && *done < n) {
    MPI_Offset len = pario_conv_chunk(&cv, PARIO_MIN(cap, n - *done)), got = 0;
    pario_mcursor mc;
    pario_mcursor_init(&mc, stage, bytes_tm);
    if (len <= 0) {
      rc = pario_err(MPI_ERR_INTERN, op, f->filename, 0, "conversion made no progress");
    } else if (rw == PARIO_WRITE) {
      rc = pario_conv_pack(&cv, stage, len);
      if (rc == MPI_SUCCESS) rc = transfer(f, v, locked, op, rw, pos + *done, &mc, len, &got, lock_writes, coll);
    } else {
      rc = transfer(f, v, locked, op, rw, pos + *done, &mc, len, &got, 0, coll);
      int e = pario_conv_unpack(&cv, stage, got); /* what arrived, even before an error */
      if (rc == MPI_SUCCESS) rc = e;
    }
    *done += got;
    if (got < len) break; /* end of file (or an error) */
  }
  free(stage);
  return rc;
}

int pario_access_ex(pario_file *f, const pario_snap *s, const char *op, int rw, MPI_Offset pos, void *buf,
                    MPI_Count count, MPI_Datatype type, MPI_Count *bytes, int lock_writes, pario_drv_coll *coll) {
  const pario_typemap *tm;
  const pario_view *v = s->view;
  const int atomic = s->atomic;
  *bytes = 0;
  if (pario_typemap_get(type, &tm) != MPI_SUCCESS)
    return pario_err(MPI_ERR_TYPE, op, f->filename, 0, "invalid datatype");
  MPI_Offset n = (MPI_Offset)count * tm->size, done = 0, first = 0, last = 0;
  const int convert = v->rep && !(lock_writes & PARIO_ACCESS_RAW); /* the branch native pays */
  if (convert) {
    int rc = pario_rep_data_size(v, type, tm, count, &n, op, f->filename);
    if (rc != MPI_SUCCESS) return rc;
  }
  if (n == 0) return MPI_SUCCESS;
  if (rw == PARIO_READ) pario_io_count_request(f, n);
  if (atomic) {
    pario_view_extent_of(v, pos, n, &first, &last);
    int e = f->drv->lock(f->dh, rw == PARIO_WRITE ? PARIO_LOCK_WRITE : PARIO_LOCK_READ, first, last - first);
    if (e) return pario_err(MPI_ERR_IO, op, f->filename, e, "byte-range lock for atomic mode failed");
  }
  int rc;
  if (convert) {
    rc = converted(f, v, atomic, op, rw, pos, buf, type, tm, n, &done, lock_writes & 1, coll);
  } else {
    pario_mcursor mc;
    pario_mcursor_init(&mc, buf, tm);
    rc = transfer(f, v, atomic, op, rw, pos, &mc, n, &done, lock_writes & 1, coll);
  }
  if (atomic) f->drv->lock(f->dh, PARIO_UNLOCK, first, last - first);
  *bytes = done;
  return rc;
}
