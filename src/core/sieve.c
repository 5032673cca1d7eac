/* Data sieving (core's data path, io.c's transfer picks it): reads of a whole window into one
 * buffer, reads scattered straight into the caller's memory with a scratch buffer for the gaps,
 * and read-modify-write windows for writes under a byte-range lock. The window's extent follows
 * rio/window.h's rule, which the server's READ and the aggregators' reads follow too. */
#include "core/file.h"
#include "core/xfer.h"
#include "rio/window.h"
#include "trace/trace.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

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
int pario_sieve_read(pario_file *f, const char *op, pario_fcursor *fc, pario_mcursor *mc,
                     MPI_Offset n, MPI_Offset *done, MPI_Offset last) {
  MPI_Offset cap = f->hints.ind_rd_buffer_size, wstart = 0, wlen = 0;
  char *win = malloc((size_t)cap);
  if (!win) return pario_xfer_walk(f, op, PARIO_READ, fc, mc, n, done, 0);
  int rc = MPI_SUCCESS, eof = 0;
  while (rc == MPI_SUCCESS && !eof && *done < n) {
    MPI_Offset off, seg = pario_fcursor_next(fc, n - *done, &off);
    while (seg > 0 && rc == MPI_SUCCESS && !eof) {
      if (off < wstart || off >= wstart + wlen) {
        MPI_Offset wend = window_end(*fc, n - *done - seg, off, seg, cap, f->hints.read_max_gap, last);
        if (!wend) {
          rc = pario_xfer_seg(f, op, PARIO_READ, mc, off, seg, done, &eof, 0);
          break;
        }
        size_t got = 0;
        struct iovec v = {win, (size_t)(wend - off)};
        uint64_t t0 = PARIO_TRACE_T0();
        int e = pario_drv_xfer(f, PARIO_READ, &v, 1, (off_t)off, &got, NULL);
        PARIO_TRACE_SPAN(PARIO_TC_SIEVE, "read_window", t0, PARIO_TA("file", f->uid), PARIO_TA("offset", off),
                         PARIO_TA("len", v.iov_len), PARIO_TA("got", got));
        if (e) {
          rc = pario_xfer_error(f, op, PARIO_READ, e, (MPI_Offset)v.iov_len, off);
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

int pario_sieve_scatters(pario_fcursor c, MPI_Offset n) { return pitch(c, n) >= SCATTER_PITCH; }
                         
                         int pario_sieve_read_scatter(pario_file *f, const char *op, pario_fcursor *fc, pario_mcursor *mc,
                         MPI_Offset n, MPI_Offset *done, MPI_Offset last) {
  MPI_Offset cap = f->hints.ind_rd_buffer_size;
  char *scratch = malloc(SCRATCH);
  struct iovec *iov = malloc(sizeof *iov * BATCH);
  int rc = MPI_SUCCESS, eof = 0;
  if (!scratch || !iov) {
    rc = pario_xfer_walk(f, op, PARIO_READ, fc, mc, n, done, 0);
    goto out;
  }
  MPI_Offset off = 0, seg = 0;
  while (rc == MPI_SUCCESS && !eof && (seg > 0 || *done < n)) {
    if (seg == 0) seg = pario_fcursor_next(fc, n - *done, &off);
    if (!window_end(*fc, n - *done - seg, off, seg, cap, f->hints.read_max_gap, last)) {
      rc = pario_xfer_seg(f, op, PARIO_READ, mc, off, seg, done, &eof, 0);
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
      rc = pario_xfer_error(f, op, PARIO_READ, e, want, wstart);
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
int pario_sieve_write(pario_file *f, int atomic, const char *op, pario_fcursor *fc, pario_mcursor *mc,
                      MPI_Offset n, MPI_Offset *done, MPI_Offset last) {
  MPI_Offset cap = f->hints.ind_wr_buffer_size;
  char *win = malloc((size_t)cap);
  if (!win) return pario_xfer_walk(f, op, PARIO_WRITE, fc, mc, n, done, !atomic);
  int rc = MPI_SUCCESS, eof = 0;
  MPI_Offset off = 0, seg = 0;
  while (rc == MPI_SUCCESS && (seg > 0 || *done < n)) {
    if (seg == 0) seg = pario_fcursor_next(fc, n - *done, &off);
    if (!worth_a_window(*fc, n - *done - seg, off + seg, cap - seg)) {
      rc = pario_xfer_seg(f, op, PARIO_WRITE, mc, off, seg, done, &eof, !atomic);
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
    if (e) rc = pario_xfer_error(f, op, PARIO_READ, e, wlen, wstart);
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
      if (e) rc = pario_xfer_error(f, op, PARIO_WRITE, e, wlen, wstart);
      else *done += used;
    }
    if (locked) f->drv->lock(f->dh, PARIO_UNLOCK, wstart, wlen);
    PARIO_TRACE_SPAN(PARIO_TC_SIEVE, "write_window", t0, PARIO_TA("file", f->uid), PARIO_TA("offset", wstart),
                     PARIO_TA("len", wlen), PARIO_TA("data", used));
  }
  free(win);
  return rc;
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

