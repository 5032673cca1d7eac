/* List transfers (core's data path, for drivers with preadl/pwritel: remote storage): the file
 * segments and memory pieces of an access gathered window by window, several windows in flight
 * where the driver can submit, and the whole access on the driver's submission path. */
#include "core/file.h"
#include "core/xfer.h"
#include "trace/trace.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

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
    if (rw == PARIO_READ) pario_io_count_read(f, w->got);
    if (counting) *done += (MPI_Offset)w->got;
    if (w->err && rc == MPI_SUCCESS) rc = pario_xfer_error(f, op, rw, w->err, w->bytes, w->off);
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
    while (seg > 0) { /* the segment's memory pieces, PARIO_MAXIOV at a time */
      int cnt = 0;
      if (grow((void **)iov, iovcap, *niov + PARIO_MAXIOV, sizeof **iov)) return -1;
      seg -= pario_mcursor_iov(mc, seg, *iov + *niov, PARIO_MAXIOV, &cnt);
      *niov += cnt;
    }
  }
  return 0;
}

/* Drivers with list transfers (remote storage, driver/driver.h preadl/pwritel): the file
 * segments of a window of at most ind_rd_buffer_size / ind_wr_buffer_size data bytes (a
 * larger first segment is not cut) and their memory pieces travel as one request, whatever
 * the view: no data sieving, no read-modify-write, no request per piece. */
int pario_list_access(pario_file *f, const char *op, int rw, pario_fcursor *fc, pario_mcursor *mc,
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
  int code = err ? pario_xfer_error(s->f, s->op, s->rw, err, s->len, s->off) : MPI_SUCCESS;
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
      if (*niov > INT_MAX - PARIO_MAXIOV || grow((void **)iov, &iovcap, *niov + PARIO_MAXIOV, sizeof **iov)) return -1;
      seg -= pario_mcursor_iov(mc, seg, *iov + *niov, PARIO_MAXIOV, &cnt);
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

