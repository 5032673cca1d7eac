/* lockedfile: the shared pointer in a hidden file beside the data file, read-modify-written
 * under an fcntl lock (slot k: the 8 bytes at 8k, locked alone). Works across nodes wherever the file system has working locks, which
 * its query proves on the data file first. Created on first use, removed at close. */
#include "sharedfp/sharedfp.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct lf_state {
  int fd;
} lf_state;

static int lf_query(pario_file *f) {
  if (f->drv->remote) return -1; /* no directory of its own beside a remote file */
  int op = (f->amode & MPI_MODE_RDONLY) ? PARIO_LOCK_READ : PARIO_LOCK_WRITE;
  return f->drv->lock_probe(f->dh, op) == 0 ? 10 : -1;
}

static int lf_attach(pario_file *f, void **state) {
  char p[4200];
  pario_sharedfp_hidden_path(f, "", p, sizeof p);
  int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return errno;
  lf_state *s = malloc(sizeof *s);
  if (!s) {
    close(fd);
    return ENOMEM;
  }
  s->fd = fd;
  *state = s;
  return 0;
}

static int lf_lock(int fd, int slot, short type) {
  struct flock fl;
  memset(&fl, 0, sizeof fl);
  fl.l_type = type;
  fl.l_whence = SEEK_SET;
  fl.l_start = (off_t)slot * (off_t)sizeof(int64_t);
  fl.l_len = sizeof(int64_t);
#ifdef F_OFD_SETLKW
  int cmd = F_OFD_SETLKW;
#else
  int cmd = F_SETLKW;
#endif
  int r;
  do r = fcntl(fd, cmd, &fl);
  while (r < 0 && errno == EINTR);
  return r == 0 ? 0 : errno;
}

static int lf_fetch_add(void *state, int slot, MPI_Offset n, MPI_Offset *old) {
  lf_state *s = state;
  int64_t v = 0;
  off_t at = (off_t)slot * (off_t)sizeof v;
  int e = lf_lock(s->fd, slot, F_WRLCK);
  if (e) return e;
  ssize_t r = pread(s->fd, &v, sizeof v, at); /* a new (empty) file, or short of this slot, reads as zero */
  if (r < 0) e = errno;
  else if (r != (ssize_t)sizeof v) v = 0;
  *old = v;
  v += n;
  if (!e && n != 0) {
    ssize_t w = pwrite(s->fd, &v, sizeof v, at);
    if (w < 0) e = errno;
    else if (w != (ssize_t)sizeof v) e = EIO; /* short write: errno is not set */
  }
  lf_lock(s->fd, slot, F_UNLCK);
  return e;
}

static void lf_detach(void *state) {
  lf_state *s = state;
  close(s->fd);
  free(s);
}

static void lf_remove(pario_file *f) {
  char p[4200];
  pario_sharedfp_hidden_path(f, "", p, sizeof p);
  unlink(p);
}

const pario_sharedfp_component pario_sharedfp_lockedfile = {
    .name = "lockedfile", .query = lf_query, .attach = lf_attach, .fetch_add = lf_fetch_add,
    .detach = lf_detach, .remove = lf_remove};
