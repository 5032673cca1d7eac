/* The data path: argument checks, then a walk that pairs the file segments of the view with
 * the memory pieces of (buf, count, datatype) and hands iovecs to the driver, with no copy
 * of the user's data. Atomic mode brackets the access with a byte-range lock. */
#include "core/file.h"
#include "core/rep.h"
#include "rio/window.h"
#include "trace/trace.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#define MAXIOV 64

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

static void count_read(pario_file *f, size_t got) {
  if (got) __atomic_fetch_add(&f->bytes_read_file, (unsigned long long)got, __ATOMIC_RELAXED);
}

void pario_io_count_request(pario_file *f, MPI_Offset n) {
  if (n > 0) __atomic_fetch_add(&f->bytes_requested, (unsigned long long)n, __ATOMIC_RELAXED);
}

void pario_io_counters_info(pario_file *f, MPI_Info info) {
  char v[32];
  snprintf(v, sizeof v, "%llu", __atomic_load_n(&f->bytes_read_file, __ATOMIC_RELAXED));
  PMPI_Info_set(info, "pario_bytes_read_file", v);
  snprintf(v, sizeof v, "%llu", __atomic_load_n(&f->bytes_requested, __ATOMIC_RELAXED));
  PMPI_Info_set(info, "pario_bytes_requested", v);
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
  if (rw == PARIO_READ) count_read(f, *got);
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

static int xfer_error(pario_file *f, const char *op, int rw, int e, MPI_Offset len, MPI_Offset off) {
  return pario_err(pario_errno_class(e), op, f->filename, e, "%s of %lld bytes at offset %lld failed",
                   rw == PARIO_WRITE ? "write" : "read", (long long)len, (long long)off);
}

/* Move one file segment (seg bytes at off) between the file and the memory cursor. *eof is
 * set when a read stopped at end of file. lockw: a write holds a byte-range write lock over
 * the segment, so that another process's data-sieving read-modify-write around it cannot put
 * the old bytes back over it. */
static int xfer_seg(pario_file *f, const char *op, int rw, pario_mcursor *mc, MPI_Offset off,
                    MPI_Offset seg, MPI_Offset *done, int *eof, int lockw) {
  struct iovec iov[MAXIOV];
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
    MPI_Offset m = pario_mcursor_iov(mc, seg, iov, MAXIOV, &cnt);
    int e = pario_drv_xfer(f, rw, iov, cnt, (off_t)off, &got, NULL);
    *done += (MPI_Offset)got;
    if (e) {
      rc = xfer_error(f, op, rw, e, m, off);
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
static int walk(pario_file *f, const char *op, int rw, pario_fcursor *fc, pario_mcursor *mc,
                MPI_Offset n, MPI_Offset *done, int lockw) {
  int eof = 0, rc = MPI_SUCCESS;
  while (rc == MPI_SUCCESS && !eof && *done < n) {
    MPI_Offset off, seg = pario_fcursor_next(fc, n - *done, &off);
    rc = xfer_seg(f, op, rw, mc, off, seg, done, &eof, lockw);
  }
  return rc;
}

/* Whether a window of cap bytes from the segment just taken (ending at off + seg) also holds
 * the next one: one look at a copy of the cursor. Where not even two segments share a window
 * (sparse or large pieces), sieving would only copy more, so they move directly. */
static int worth_a_window(pario_fcursor c, MPI_Offset left, MPI_Offset off, MPI_Offset cap) {
  if (left <= 0) return 0;
  MPI_Offset off2, seg2 = pario_fcursor_next(&c, left, &off2);
  return off2 >= off && off2 + seg2 <= off + cap;
}

/* The end of a sieving read window that starts at off with a segment of seg bytes (the
 * cursor c just past it, left bytes of the access after it): the end of the last segment
 * that follows with no hole wider than maxgap before it, cut at cap bytes from off and at
 * last (rio/window.h's rule, which the server's READ follows too; the first segment that
 * joins must fit whole, later ones may be cut at the limit). 0 when not even the next
 * segment joins whole: then the window would carry one segment and copy it once more, and
 * the segment is read directly. Holes wider than maxgap are never read: they end the window.
 * A view without such holes (widest_hole) needs no look-ahead: its window runs to the cap or
 * to last, as it always did. */
static MPI_Offset window_end(pario_fcursor c, MPI_Offset left, MPI_Offset off, MPI_Offset seg, MPI_Offset cap,
                             MPI_Offset maxgap, MPI_Offset last) {
  MPI_Offset limit = PARIO_MIN(off + cap, last);
  if (c.v->widest_hole <= maxgap) /* no hole to stop at: no look-ahead beyond the next segment */
    return worth_a_window(c, left, off + seg, cap - seg) ? limit : 0;
  rio_window w = rio_window_open((uint64_t)off, (uint64_t)seg, (uint64_t)limit, (uint64_t)maxgap);
  while (left > 0 && w.end < w.limit) {
    MPI_Offset off2, seg2 = pario_fcursor_next(&c, left, &off2);
    if (!rio_window_join(&w, (uint64_t)off2, (uint64_t)seg2, w.joined > 0)) break;
    left -= seg2;
  }
  return w.joined ? (MPI_Offset)w.end : 0;
}

/* Data sieving for reads: one read of at most ind_rd_buffer_size bytes, never past the end
 * of the access (last) nor past the last segment it serves, and never across a hole wider
 * than pario_read_max_gap (window_end), covers many small file segments, which are copied
 * out of it. A segment the window cuts continues in the next window. */
static int sieve_read(pario_file *f, const char *op, pario_fcursor *fc, pario_mcursor *mc,
                      MPI_Offset n, MPI_Offset *done, MPI_Offset last) {
  MPI_Offset cap = f->hints.ind_rd_buffer_size, wstart = 0, wlen = 0;
  char *win = malloc((size_t)cap);
  if (!win) return walk(f, op, PARIO_READ, fc, mc, n, done, 0);
  int rc = MPI_SUCCESS, eof = 0;
  while (rc == MPI_SUCCESS && !eof && *done < n) {
    MPI_Offset off, seg = pario_fcursor_next(fc, n - *done, &off);
    while (seg > 0 && rc == MPI_SUCCESS && !eof) {
      if (off < wstart || off >= wstart + wlen) {
        MPI_Offset wend = window_end(*fc, n - *done - seg, off, seg, cap, f->hints.read_max_gap, last);
        if (!wend) {
          rc = xfer_seg(f, op, PARIO_READ, mc, off, seg, done, &eof, 0);
          break;
        }
        size_t got = 0;
        struct iovec v = {win, (size_t)(wend - off)};
        uint64_t t0 = PARIO_TRACE_T0();
        int e = pario_drv_xfer(f, PARIO_READ, &v, 1, (off_t)off, &got, NULL);
        PARIO_TRACE_SPAN(PARIO_TC_SIEVE, "read_window", t0, PARIO_TA("file", f->uid), PARIO_TA("offset", off),
                         PARIO_TA("len", v.iov_len), PARIO_TA("got", got));
        if (e) {
          rc = xfer_error(f, op, PARIO_READ, e, (MPI_Offset)v.iov_len, off);
          break;
        }
        wstart = off;
        wlen = (MPI_Offset)got;
        if (!got) { /* the window was read from off: nothing there is end of file */
          eof = 1;
          break;
        }
      }
      MPI_Offset take = PARIO_MIN(seg, wstart + wlen - off);
      pario_mcursor_unpack(mc, win + (off - wstart), take);
      *done += take;
      off += take;
      seg -= take;
    }
  }
  free(win);
  return rc;
}

/* Data sieving for reads through the page cache: one preadv covers a window of at most
 * ind_rd_buffer_size bytes; the caller's pieces land straight in its memory and the gaps
 * between them in a small scratch buffer that is overwritten again and again (it stays in
 * the CPU cache). The kernel copies the same bytes a window buffer would receive, but the
 * second copy, out of the window, is gone. Where pieces lie closer than SCATTER_PITCH, and
 * with direct I/O (every iovec would be a transfer of its own), sieve_read's one-buffer
 * window is used instead. */
#define SCRATCH (64 << 10)
/* Each iovec has a cost in the kernel, so scattering pays only where pieces are far apart:
 * from one piece to the next at least this many bytes (docs/design.md, data sieving, has
 * the measurement behind it). */
#define SCATTER_PITCH 1024
#define BATCH 1024 /* iovecs per preadv (IOV_MAX on Linux) */

/* Distance between the starts of the first two file segments of an access. */
static MPI_Offset pitch(pario_fcursor c, MPI_Offset n) {
  MPI_Offset off1, off2, seg = pario_fcursor_next(&c, n, &off1);
  if (seg >= n) return 0;
  pario_fcursor_next(&c, n - seg, &off2);
  return off2 - off1;
}

static int sieve_read_scatter(pario_file *f, const char *op, pario_fcursor *fc, pario_mcursor *mc,
                              MPI_Offset n, MPI_Offset *done, MPI_Offset last) {
  MPI_Offset cap = f->hints.ind_rd_buffer_size;
  char *scratch = malloc(SCRATCH);
  struct iovec *iov = malloc(sizeof *iov * BATCH);
  int rc = MPI_SUCCESS, eof = 0;
  if (!scratch || !iov) {
    rc = walk(f, op, PARIO_READ, fc, mc, n, done, 0);
    goto out;
  }
  MPI_Offset off = 0, seg = 0;
  while (rc == MPI_SUCCESS && !eof && (seg > 0 || *done < n)) {
    if (seg == 0) seg = pario_fcursor_next(fc, n - *done, &off);
    if (!window_end(*fc, n - *done - seg, off, seg, cap, f->hints.read_max_gap, last)) {
      rc = xfer_seg(f, op, PARIO_READ, mc, off, seg, done, &eof, 0);
      seg = 0;
      continue;
    }
    MPI_Offset wstart = off, limit = PARIO_MIN(wstart + cap, last), data = 0;
    int k = 0;
    for (;;) { /* seg bytes at off go to the caller's memory */
      int cnt;
      MPI_Offset m = pario_mcursor_iov(mc, seg, iov + k, BATCH - k, &cnt);
      k += cnt;
      data += m;
      off += m; /* the end of the batch so far */
      seg -= m;
      if (seg > 0 || *done + data == n) break; /* out of iovecs, or the access is complete */
      pario_fcursor ahead = *fc;
      MPI_Offset off2, seg2 = pario_fcursor_next(&ahead, n - *done - data, &off2);
      MPI_Offset gap = off2 - off;
      if (off2 + seg2 > limit || gap < 0 || gap > f->hints.read_max_gap || k + 1 + gap / SCRATCH >= BATCH) break;
      for (; gap > 0; gap -= SCRATCH) /* the bytes between two pieces: read and dropped */
        iov[k++] = (struct iovec){scratch, (size_t)PARIO_MIN(gap, SCRATCH)};
      *fc = ahead;
      off = off2;
      seg = seg2;
    }
    size_t got = 0;
    MPI_Offset want = off - wstart;
    uint64_t t0 = PARIO_TRACE_T0();
    int e = pario_drv_xfer(f, PARIO_READ, iov, k, (off_t)wstart, &got, NULL);
    PARIO_TRACE_SPAN(PARIO_TC_SIEVE, "scatter_window", t0, PARIO_TA("file", f->uid), PARIO_TA("offset", wstart),
                     PARIO_TA("len", want), PARIO_TA("data", data), PARIO_TA("iovcnt", k));
    if (e) {
      rc = xfer_error(f, op, PARIO_READ, e, want, wstart);
      break;
    }
    if ((MPI_Offset)got < want) { /* end of file: count the caller's bytes that arrived */
      data = 0;
      for (int i = 0; i < k && got > 0; i++) {
        size_t l = PARIO_MIN(got, iov[i].iov_len);
        if (iov[i].iov_base != scratch) data += (MPI_Offset)l;
        got -= l;
      }
      eof = 1;
    }
    *done += data;
  }
out:
  free(iov);
  free(scratch);
  return rc;
}

/* Data sieving for writes: where several small segments share a window of at most
 * ind_wr_buffer_size bytes (never past the end of the access, last, so the file does not
 * grow beyond what the caller writes), the window is read, the segments are copied in and
 * the window is written back, under a byte-range write lock (other processes) and the
 * file's rmw_lock held exclusively (this process's other threads), so bytes outside the view
 * keep their values. A segment the window cuts continues in the next window. */
static int sieve_write(pario_file *f, int atomic, const char *op, pario_fcursor *fc, pario_mcursor *mc,
                       MPI_Offset n, MPI_Offset *done, MPI_Offset last) {
  MPI_Offset cap = f->hints.ind_wr_buffer_size;
  char *win = malloc((size_t)cap);
  if (!win) return walk(f, op, PARIO_WRITE, fc, mc, n, done, !atomic);
  int rc = MPI_SUCCESS, eof = 0;
  MPI_Offset off = 0, seg = 0;
  while (rc == MPI_SUCCESS && (seg > 0 || *done < n)) {
    if (seg == 0) seg = pario_fcursor_next(fc, n - *done, &off);
    if (!worth_a_window(*fc, n - *done - seg, off + seg, cap - seg)) {
      rc = xfer_seg(f, op, PARIO_WRITE, mc, off, seg, done, &eof, !atomic);
      seg = 0;
      continue;
    }
    MPI_Offset wstart = off, wlen = PARIO_MIN(cap, last - off), end = wstart + wlen, used = 0;
    uint64_t t0 = PARIO_TRACE_T0();
    int locked = !atomic; /* atomic mode already holds a lock over the whole access */
    if (locked) {
      int e = f->drv->lock(f->dh, PARIO_LOCK_WRITE, wstart, wlen);
      if (e) {
        rc = pario_err(MPI_ERR_IO, op, f->filename, e, "byte-range lock for data sieving failed");
        break;
      }
    }
    size_t got = 0;
    struct iovec v = {win, (size_t)wlen};
    int e = pario_drv_xfer(f, PARIO_READ, &v, 1, (off_t)wstart, &got, NULL);
    if (e) rc = xfer_error(f, op, PARIO_READ, e, wlen, wstart);
    if (rc == MPI_SUCCESS) {
      memset(win + got, 0, (size_t)(wlen - (MPI_Offset)got)); /* past end of file: a hole */
      for (;;) { /* the segments inside [wstart, end); the last may be cut */
        MPI_Offset take = PARIO_MIN(seg, end - off);
        pario_mcursor_pack(mc, win + (off - wstart), take);
        used += take;
        off += take;
        seg -= take;
        if (seg > 0 || *done + used == n) break;
        seg = pario_fcursor_next(fc, n - *done - used, &off);
        if (off >= end) break; /* starts the next window */
      }
      e = pario_drv_xfer(f, PARIO_WRITE, &v, 1, (off_t)wstart, &got, NULL);
      if (e) rc = xfer_error(f, op, PARIO_WRITE, e, wlen, wstart);
      else *done += used;
    }
    if (locked) f->drv->lock(f->dh, PARIO_UNLOCK, wstart, wlen);
    PARIO_TRACE_SPAN(PARIO_TC_SIEVE, "write_window", t0, PARIO_TA("file", f->uid), PARIO_TA("offset", wstart),
                     PARIO_TA("len", wlen), PARIO_TA("data", used));
  }
  free(win);
  return rc;
}

/* Room for need elements of size elem in *p (capacity *cap): 0, or -1 out of memory. */
static int grow(void **p, int *cap, int need, size_t elem) {
  if (need <= *cap) return 0;
  int nc = PARIO_MAX(need, 2 * *cap);
  void *np = realloc(*p, elem * (size_t)nc);
  if (!np) return -1;
  *p = np;
  *cap = nc;
  return 0;
}

/* The windows of one list access in flight together where the driver can submit: a window's
 * request no longer waits for the previous window's reply (each would cost a round trip). At
 * most WINDOWS_IN_FLIGHT at once; the access returns when all are done (the memory is the
 * caller's), with the bytes in order up to the first short window and the first error. */
#define WINDOWS_IN_FLIGHT 8

typedef struct win_set {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int inflight;
  struct win *head, **tail;
} win_set;

typedef struct win {
  struct win *next;
  win_set *s;
  MPI_Offset bytes, off;
  size_t got;
  int err;
} win;

static void win_done(void *arg, int err, size_t got) {
  win *w = arg;
  pthread_mutex_lock(&w->s->mu);
  w->err = err, w->got = got;
  w->s->inflight--;
  pthread_cond_broadcast(&w->s->cv);
  pthread_mutex_unlock(&w->s->mu);
}

/* Wait until at most max windows are in flight. */
static void win_wait(win_set *s, int max) {
  pthread_mutex_lock(&s->mu);
  while (s->inflight > max) pthread_cond_wait(&s->cv, &s->mu);
  pthread_mutex_unlock(&s->mu);
}

/* Start one window (the driver copies segs and iov); one the driver declines runs here. 0;
 * -1 when nothing more should start (its error or end of file is in the window); ENOMEM when
 * there is no window. */
static int win_start(pario_file *f, win_set *s, int rw, const pario_seg *segs, int nseg, const struct iovec *iov,
                     int niov, MPI_Offset bytes, pario_drv_coll *coll) {
  win *w = calloc(1, sizeof *w);
  if (!w) return ENOMEM;
  *w = (win){NULL, s, bytes, (MPI_Offset)segs[0].off, 0, 0};
  *s->tail = w, s->tail = &w->next;
  pthread_mutex_lock(&s->mu);
  s->inflight++;
  pthread_mutex_unlock(&s->mu);
  int e = f->drv->submit ? f->drv->submit(f->dh, rw == PARIO_WRITE, segs, nseg, iov, niov, coll, win_done, w)
                          : EOPNOTSUPP;
  if (e == EOPNOTSUPP)
    e = rw == PARIO_WRITE ? f->drv->pwritel(f->dh, segs, nseg, iov, niov, &w->got, coll)
                          : f->drv->preadl(f->dh, segs, nseg, iov, niov, &w->got, coll);
  else if (!e) return 0;
  win_done(w, e, w->got);
  return e || w->got < (size_t)bytes ? -1 : 0; /* an error or the end of file: nothing after it */
}

/* All windows done: their bytes in order up to the first short one, the first error. */
static int win_collect(pario_file *f, const char *op, int rw, win_set *s, MPI_Offset *done) {
  int rc = MPI_SUCCESS, counting = 1;
  win_wait(s, 0);
  for (win *w = s->head, *next; w; w = next) {
    next = w->next;
    if (rw == PARIO_READ) count_read(f, w->got);
    if (counting) *done += (MPI_Offset)w->got;
    if (w->err && rc == MPI_SUCCESS) rc = xfer_error(f, op, rw, w->err, w->bytes, w->off);
    if (w->err || w->got < (size_t)w->bytes) counting = 0;
    free(w);
  }
  return rc;
}

/* The file segments and memory pieces of the next window: at most cap data bytes (a larger
 * first segment is not cut). 0, or -1 out of memory. */
static int next_window(pario_fcursor *fc, pario_mcursor *mc, MPI_Offset left, MPI_Offset cap, pario_seg **segs,
                       int *segcap, int *nseg, struct iovec **iov, int *iovcap, int *niov, MPI_Offset *bytes) {
  *nseg = *niov = 0;
  *bytes = 0;
  while (*bytes < left && (*nseg == 0 || *bytes < cap)) {
    MPI_Offset off, rest = left - *bytes;
    MPI_Offset seg = pario_fcursor_next(fc, *nseg ? PARIO_MIN(rest, cap - *bytes) : rest, &off);
    if (grow((void **)segs, segcap, *nseg + 1, sizeof **segs)) return -1;
    (*segs)[(*nseg)++] = (pario_seg){(off_t)off, (off_t)seg};
    *bytes += seg;
    while (seg > 0) { /* the segment's memory pieces, MAXIOV at a time */
      int cnt = 0;
      if (grow((void **)iov, iovcap, *niov + MAXIOV, sizeof **iov)) return -1;
      seg -= pario_mcursor_iov(mc, seg, *iov + *niov, MAXIOV, &cnt);
      *niov += cnt;
    }
  }
  return 0;
}

/* Drivers with list transfers (remote storage, driver/driver.h preadl/pwritel): the file
 * segments of a window of at most ind_rd_buffer_size / ind_wr_buffer_size data bytes (a
 * larger first segment is not cut) and their memory pieces travel as one request, whatever
 * the view: no data sieving, no read-modify-write, no request per piece. */
static int list_access(pario_file *f, const char *op, int rw, pario_fcursor *fc, pario_mcursor *mc,
                       MPI_Offset n, MPI_Offset *done, pario_drv_coll *coll) {
  MPI_Offset cap = rw == PARIO_WRITE ? f->hints.ind_wr_buffer_size : f->hints.ind_rd_buffer_size, planned = 0;
  pario_seg *segs = NULL;
  struct iovec *iov = NULL;
  int segcap = 0, iovcap = 0, rc = MPI_SUCCESS;
  win_set s = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, NULL, NULL};
  s.tail = &s.head;
  while (planned < n) {
    int nseg, niov;
    MPI_Offset bytes;
    if (next_window(fc, mc, n - planned, cap, &segs, &segcap, &nseg, &iov, &iovcap, &niov, &bytes)) {
      rc = pario_err(MPI_ERR_NO_MEM, op, f->filename, 0, "out of memory for a list of %d segments", nseg);
      break;
    }
    planned += bytes;
    int ws = win_start(f, &s, rw, segs, nseg, iov, niov, bytes, coll);
    if (ws == ENOMEM) rc = pario_err(MPI_ERR_NO_MEM, op, f->filename, 0, "out of memory");
    if (ws) break;
    win_wait(&s, WINDOWS_IN_FLIGHT - 1);
  }
  int crc = win_collect(f, op, rw, &s, done);
  if (rc == MPI_SUCCESS) rc = crc;
  pthread_mutex_destroy(&s.mu);
  pthread_cond_destroy(&s.cv);
  free(segs);
  free(iov);
  return rc;
}

/* One access on the driver's submission path: what its completion needs to name the error. */
typedef struct submitted {
  pario_file *f;
  const char *op;
  int rw;
  MPI_Offset len, off;
  void (*done)(void *arg, int code, MPI_Count bytes);
  void *arg;
} submitted;

static void submitted_done(void *arg, int err, size_t bytes) {
  submitted *s = arg;
  int code = err ? xfer_error(s->f, s->op, s->rw, err, s->len, s->off) : MPI_SUCCESS;
  void (*done)(void *, int, MPI_Count) = s->done;
  void *darg = s->arg;
  free(s);
  done(darg, code, (MPI_Count)bytes);
}

/* The file segments and memory pieces of the whole access, as list_access gathers a window. */
static int gather_all(pario_fcursor *fc, pario_mcursor *mc, MPI_Offset n, pario_seg **segs, int *nseg,
                      struct iovec **iov, int *niov) {
  int segcap = 0, iovcap = 0;
  MPI_Offset bytes = 0;
  *segs = NULL, *iov = NULL, *nseg = 0, *niov = 0;
  while (bytes < n) {
    MPI_Offset off, seg = pario_fcursor_next(fc, n - bytes, &off);
    if (*nseg == INT_MAX || grow((void **)segs, &segcap, *nseg + 1, sizeof **segs)) return -1;
    (*segs)[(*nseg)++] = (pario_seg){(off_t)off, (off_t)seg};
    bytes += seg;
    while (seg > 0) {
      int cnt = 0;
      if (*niov > INT_MAX - MAXIOV || grow((void **)iov, &iovcap, *niov + MAXIOV, sizeof **iov)) return -1;
      seg -= pario_mcursor_iov(mc, seg, *iov + *niov, MAXIOV, &cnt);
      *niov += cnt;
    }
  }
  return 0;
}

int pario_access_submit(pario_file *f, const pario_snap *s, const char *op, int rw, MPI_Offset pos, void *buf,
                        MPI_Count count, MPI_Datatype type, void (*done)(void *arg, int code, MPI_Count bytes),
                        void *arg) {
  const pario_typemap *tm;
  const pario_view *v = s->view;
  if (!f->drv->submit || s->atomic || v->rep || pario_typemap_get(type, &tm) != MPI_SUCCESS) return 0;
  MPI_Offset n = (MPI_Offset)count * tm->size;
  if (n <= 0) return 0;
  submitted *sub = malloc(sizeof *sub);
  pario_seg *segs = NULL;
  struct iovec *iov = NULL;
  int nseg = 0, niov = 0, e = -1;
  pario_fcursor fc;
  pario_mcursor mc;
  pario_fcursor_init(&fc, v, pos);
  pario_mcursor_init(&mc, buf, tm);
  if (sub && gather_all(&fc, &mc, n, &segs, &nseg, &iov, &niov) == 0) {
    *sub = (submitted){f, op, rw, n, (MPI_Offset)segs[0].off, done, arg};
    if (rw == PARIO_WRITE) pthread_rwlock_rdlock(&f->rmw_lock); /* as list_access: while it is sent */
    e = f->drv->submit(f->dh, rw, segs, nseg, iov, niov, NULL, submitted_done, sub); /* independent */
    if (rw == PARIO_WRITE) pthread_rwlock_unlock(&f->rmw_lock);
  }
  if (e) free(sub); /* not started: the caller runs pario_access, which reports any error */
  free(segs);
  free(iov);
  return e == 0;
}

int pario_sieves_read(const pario_file *f, const pario_view *v, MPI_Offset n) {
  return !v->contiguous && f->hints.romio_ds_read != PARIO_DISABLE &&
         f->hints.ind_rd_buffer_size > 0 && n > 0;
}

/* romio_ds_write is switched to disable at open where byte-range locks do not work. */
int pario_sieves_write(const pario_file *f, const pario_view *v, MPI_Offset n) {
  return !v->contiguous && !f->drv->pwritel && f->hints.romio_ds_write != PARIO_DISABLE && f->locks_work > 0 &&
         (f->oflags & O_ACCMODE) != O_WRONLY &&
         f->hints.ind_wr_buffer_size > 0 && n > 0;
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
    rc = list_access(f, op, rw, &fc, mc, n, done, coll);
  } else if (f->drv->pwritel && rw == PARIO_WRITE) {
    how = "list";
    pthread_rwlock_rdlock(&f->rmw_lock);
    rc = list_access(f, op, rw, &fc, mc, n, done, coll);
    pthread_rwlock_unlock(&f->rmw_lock);
  } else if (rw == PARIO_READ && (!pario_sieves_read(f, v, n) || pario_view_irregular(v, pos, n))) {
    how = "direct";
    rc = walk(f, op, rw, &fc, mc, n, done, 0);
  } else if (rw == PARIO_READ && !f->hints.direct_io && pitch(fc, n) >= SCATTER_PITCH) {
    how = "scatter";
    rc = sieve_read_scatter(f, op, &fc, mc, n, done, last);
  } else if (rw == PARIO_READ) {
    how = "sieve";
    rc = sieve_read(f, op, &fc, mc, n, done, last);
  } else {
    int sieve = pario_sieves_write(f, v, n) && !pario_view_irregular(v, pos, n);
    how = sieve ? "sieve" : "direct";
    if (sieve) pthread_rwlock_wrlock(&f->rmw_lock);
    else pthread_rwlock_rdlock(&f->rmw_lock);
    rc = sieve ? sieve_write(f, locked, op, &fc, mc, n, done, last)
               : walk(f, op, rw, &fc, mc, n, done, !locked && lock_writes && f->locks_work >= 0);
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
