/* POSIX storage driver: preadv/pwritev with short-transfer and EINTR loops, fsync,
 * ftruncate, posix_fallocate and open-file-description byte-range locks. */
#include "driver/driver.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct posix_fh {
  int fd;
} posix_fh;

static int px_open(const char *path, int flags, unsigned perm, void **handle) {
  posix_fh *h = malloc(sizeof *h);
  if (!h) return ENOMEM;
  do h->fd = open(path, flags | O_CLOEXEC, (mode_t)perm);
  while (h->fd < 0 && errno == EINTR);
  if (h->fd < 0) {
    int e = errno;
    free(h);
    return e;
  }
  struct stat st;
  if (fstat(h->fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    close(h->fd);
    free(h);
    return EISDIR;
  }
  *handle = h;
  return 0;
}

static int px_close(void *handle) {
  posix_fh *h = handle;
  int rc = close(h->fd) == 0 ? 0 : errno;
  free(h);
  return rc == EINTR ? 0 : rc;
}

/* Advance an iovec array past n transferred bytes. */
static void iov_advance(struct iovec **iov, int *cnt, size_t n) {
  while (*cnt > 0 && n >= (*iov)->iov_len) {
    n -= (*iov)->iov_len;
    (*iov)++;
    (*cnt)--;
  }
  if (*cnt > 0 && n) {
    (*iov)->iov_base = (char *)(*iov)->iov_base + n;
    (*iov)->iov_len -= n;
  }
}

static int px_xfer(void *handle, const struct iovec *iov_in, int iovcnt, off_t off, size_t *done,
                   int write) {
  posix_fh *h = handle;
  struct iovec small[8], *copy = iovcnt <= 8 ? small : malloc(sizeof(struct iovec) * (size_t)iovcnt);
  if (!copy) return ENOMEM;
  memcpy(copy, iov_in, sizeof(struct iovec) * (size_t)iovcnt);
  struct iovec *iov = copy;
  int cnt = iovcnt, rc = 0;
  *done = 0;
  while (cnt > 0) {
    /* Skip leading empty pieces so a zero return means end of file. */
    if (iov->iov_len == 0) { iov++; cnt--; continue; }
    int n = cnt < IOV_MAX ? cnt : IOV_MAX;
    ssize_t r = write ? pwritev(h->fd, iov, n, off) : preadv(h->fd, iov, n, off);
    if (r < 0) {
      if (errno == EINTR) continue;
      rc = errno;
      break;
    }
    if (r == 0) {
      if (write) rc = EIO; /* a write that makes no progress */
      break;               /* a read at end of file */
    }
    *done += (size_t)r;
    off += r;
    iov_advance(&iov, &cnt, (size_t)r);
  }
  if (copy != small) free(copy);
  return rc;
}

static int px_preadv(void *h, const struct iovec *iov, int cnt, off_t off, size_t *done) {
  return px_xfer(h, iov, cnt, off, done, 0);
}

static int px_pwritev(void *h, const struct iovec *iov, int cnt, off_t off, size_t *done) {
  return px_xfer(h, iov, cnt, off, done, 1);
}

static int px_sync(void *handle) {
  posix_fh *h = handle;
  return fsync(h->fd) == 0 ? 0 : errno;
}

static int px_truncate(void *handle, off_t size) {
  posix_fh *h = handle;
  int r;
  do r = ftruncate(h->fd, size);
  while (r < 0 && errno == EINTR);
  return r == 0 ? 0 : errno;
}

static int px_allocate(void *handle, off_t offset, off_t len) {
  posix_fh *h = handle;
  return posix_fallocate(h->fd, offset, len); /* returns the error number itself */
}

static int px_size(void *handle, off_t *size) {
  posix_fh *h = handle;
  struct stat st;
  if (fstat(h->fd, &st) != 0) return errno;
  *size = st.st_size;
  return 0;
}

static int lock_cmd(int wait) {
#ifdef F_OFD_SETLKW
  return wait ? F_OFD_SETLKW : F_OFD_SETLK; /* per open file description: excludes threads too */
#else
  return wait ? F_SETLKW : F_SETLK;
#endif
}

static int px_lock(void *handle, int op, off_t offset, off_t len) {
  posix_fh *h = handle;
  struct flock fl;
  memset(&fl, 0, sizeof fl);
  fl.l_type = op == PARIO_LOCK_READ ? F_RDLCK : op == PARIO_LOCK_WRITE ? F_WRLCK : F_UNLCK;
  fl.l_whence = SEEK_SET;
  fl.l_start = offset;
  fl.l_len = len;
  int r;
  do r = fcntl(h->fd, lock_cmd(op != PARIO_UNLOCK), &fl);
  while (r < 0 && errno == EINTR);
  return r == 0 ? 0 : errno;
}

static int px_lock_probe(void *handle, int op) {
  posix_fh *h = handle;
  struct flock fl;
  memset(&fl, 0, sizeof fl);
  fl.l_type = op == PARIO_LOCK_READ ? F_RDLCK : F_WRLCK;
  fl.l_whence = SEEK_SET;
  fl.l_start = (off_t)1 << 62; /* a range no real access uses */
  fl.l_len = 1;
  if (fcntl(h->fd, lock_cmd(0), &fl) != 0) return errno == EAGAIN || errno == EACCES ? 0 : errno;
  fl.l_type = F_UNLCK;
  fcntl(h->fd, lock_cmd(0), &fl);
  return 0;
}

static int px_unlink(const char *path) { return unlink(path) == 0 ? 0 : errno; }

const pario_driver pario_driver_posix = {
    .name = "posix",
    .open = px_open,
    .close = px_close,
    .preadv = px_preadv,
    .pwritev = px_pwritev,
    .sync = px_sync,
    .truncate = px_truncate,
    .allocate = px_allocate,
    .size = px_size,
    .lock = px_lock,
    .lock_probe = px_lock_probe,
    .unlink = px_unlink,
};

const pario_driver *pario_driver_for(const char *filename, const char **path_out) {
  /* ROMIO-style prefixes name the file system; all local ones are served by posix. */
  static const char *prefixes[] = {"ufs:", "nfs:", "lustre:", "gpfs:", "posix:", "xfs:", NULL};
  for (int i = 0; prefixes[i]; i++) {
    size_t n = strlen(prefixes[i]);
    if (strncmp(filename, prefixes[i], n) == 0) {
      *path_out = filename + n;
      return &pario_driver_posix;
    }
  }
  *path_out = filename;
  return &pario_driver_posix;
}
