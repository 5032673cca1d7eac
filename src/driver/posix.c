/* POSIX storage driver: preadv/pwritev with short-transfer and EINTR loops, fsync,
 * ftruncate, posix_fallocate and open-file-description byte-range locks. */
#include "driver/driver.h"
#include "rio/proto.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct posix_fh {
  int fd;
  int dfd; /* O_DIRECT descriptor of the same file, or -1 */
} posix_fh;

#define DIO_ALIGN 4096            /* covers every logical block size in use */
#define DIO_BOUNCE (4 << 20)      /* bounce buffer for pieces whose memory is not aligned */

static int px_open(const char *path, int flags, unsigned perm, void **handle) {
  posix_fh *h = malloc(sizeof *h);
  if (!h) return ENOMEM;
  h->dfd = -1;
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
  if (h->dfd >= 0) close(h->dfd);
  int rc = close(h->fd) == 0 ? 0 : errno;
  free(h);
  return rc == EINTR ? 0 : rc;
}

static int buffered_xfer(int fd, const struct iovec *iov_in, int iovcnt, off_t off, size_t *done,
                         int write) {
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
    ssize_t r = n == 1 /* pread/pwrite skip the kernel's iovec import: small records */
                    ? (write ? pwrite(fd, iov->iov_base, iov->iov_len, off) : pread(fd, iov->iov_base, iov->iov_len, off))
                    : (write ? pwritev(fd, iov, n, off) : preadv(fd, iov, n, off));
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
    rio_iov_advance(&iov, &cnt, (size_t)r);
  }
  if (copy != small) free(copy);
  return rc;
}

/* One contiguous piece through O_DIRECT: the unaligned head and tail go through the page
 * cache; the aligned middle goes direct, from the user's memory when it is aligned too and
 * through an aligned bounce buffer otherwise. */
static int direct_piece(posix_fh *h, char *p, size_t len, off_t off, size_t *done, int write,
                        char **bounce) {
  size_t head = (size_t)((DIO_ALIGN - off % DIO_ALIGN) % DIO_ALIGN);
  if (head > len) head = len;
  size_t mid = (len - head) / DIO_ALIGN * DIO_ALIGN, got = 0;
  struct iovec v = {p, head};
  *done = 0;
  int rc = head ? buffered_xfer(h->fd, &v, 1, off, &got, write) : 0;
  *done += got;
  if (rc || got < head) return rc;
  for (size_t m = 0; m < mid;) {
    char *src = p + head + m;
    size_t n = mid - m;
    if ((uintptr_t)src % DIO_ALIGN) { /* misaligned memory: bounce */
      if (!*bounce && posix_memalign((void **)bounce, DIO_ALIGN, DIO_BOUNCE)) return ENOMEM;
      if (n > DIO_BOUNCE) n = DIO_BOUNCE;
      if (write) memcpy(*bounce, src, n);
    }
    char *buf = (uintptr_t)src % DIO_ALIGN ? *bounce : src;
    ssize_t r = write ? pwrite(h->dfd, buf, n, off + (off_t)(head + m)) : pread(h->dfd, buf, n, off + (off_t)(head + m));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return errno;
    if (r == 0) return write ? EIO : 0; /* a read at end of file */
    if (!write && buf != src) memcpy(src, buf, (size_t)r);
    *done += (size_t)r;
    m += (size_t)r;
    if ((size_t)r < n && (!write || r % DIO_ALIGN)) return write ? EIO : 0; /* read: EOF inside */
  }
  size_t tail = len - head - mid;
  v.iov_base = p + head + mid;
  v.iov_len = tail;
  got = 0;
  rc = tail ? buffered_xfer(h->fd, &v, 1, off + (off_t)(head + mid), &got, write) : 0;
  *done += got;
  return rc;
}

static int px_xfer(void *handle, const struct iovec *iov, int cnt, off_t off, size_t *done, int write) {
  posix_fh *h = handle;
  if (h->dfd < 0) return buffered_xfer(h->fd, iov, cnt, off, done, write);
  char *bounce = NULL;
  int rc = 0;
  *done = 0;
  for (int i = 0; i < cnt && !rc; i++) {
    size_t got = 0;
    rc = direct_piece(h, iov[i].iov_base, iov[i].iov_len, off, &got, write, &bounce);
    *done += got;
    off += (off_t)got;
    if (got < iov[i].iov_len) break; /* end of file */
  }
  free(bounce);
  return rc;
}

static int px_preadv(void *h, const struct iovec *iov, int cnt, off_t off, size_t *done, pario_drv_coll *coll) {
  (void)coll; /* local storage: nothing to merge */
  return px_xfer(h, iov, cnt, off, done, 0);
}

static int px_pwritev(void *h, const struct iovec *iov, int cnt, off_t off, size_t *done, pario_drv_coll *coll) {
  (void)coll;
  return px_xfer(h, iov, cnt, off, done, 1);
}

static int px_set_direct(void *handle, const char *path, int flags) {
  posix_fh *h = handle;
  if (h->dfd >= 0) return 0;
  int fd = open(path, (flags & ~(O_CREAT | O_EXCL | O_TRUNC)) | O_DIRECT | O_CLOEXEC);
  if (fd < 0) return errno;
  h->dfd = fd;
  return 0;
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
    .set_direct = px_set_direct,
};

/* ROMIO-style prefixes name the file system; all local ones are served by posix, which also
 * serves every name without a registered prefix. */
__attribute__((constructor)) static void posix_register(void) {
  static const char *prefixes[] = {"ufs:", "nfs:", "lustre:", "gpfs:", "posix:", "xfs:"};
  for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
    pario_driver_register(prefixes[i], &pario_driver_posix);
}
