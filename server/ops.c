/* pario-server's request handlers but READ and WRITE: OPEN (with its checks of modes, hard
 * links and truncation), CLOSE, DELETE, STAT, SET_SIZE, PREALLOCATE, SYNC, COUNTER, LOCK, PING,
 * CHECKSUM, the confinement of OPEN and DELETE, and the dispatch of a job to its handler
 * (srv_handle_job). Each handler decodes its body with the codec (lengths checked first), works
 * on the file through the handle's descriptor and sends one reply. The handle table is in
 * handles.c, what every request passes first in admit.c, READ in read.c, WRITE (streamed by
 * the connection's reader) in write.c. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server.h"
#include "rio/checksum.h"

uint64_t srv_served[RIO_T_MAX + 1], srv_bytes_read, srv_bytes_written;

/* ---- helpers ----------------------------------------------------------------------------------- */
static void reply_u64(srv_job *j, int status, uint64_t v) {
  uint8_t b[8];
  rio_store_u64(b, v);
  srv_reply(j->c, j->h.type, j->h.id, status, b, status ? 0 : 8);
}

/* ---- rights (cred.c) ------------------------------------------------------------------------- */
/* The connection's root: its credential's SUBDIR, or the server's root (the fuzzer has none). */
static int conn_root(const srv_conn *c) { return c->cred ? c->cred->rootfd : srv->rootfd; }

/* An OPEN or DELETE of path that failed with err: logged (a refusal for security at warn), and
 * answered. A refusal for security (EACCES, EXDEV, ELOOP, EINVAL: confinement, hard links, a
 * read-only truncation) is answered with its cause, as an ERROR reply (PROTOCOL.md, "Refusals
 * with a reason"); the path is not repeated in it (the client knows it). */
static void refuse_path(srv_job *j, const char *op, const char *path, uint32_t pl, int err, const char *why) {
  srv_conn *c = j->c;
  int status = rio_status_from_errno(err);
  int sec = err == EACCES || err == EXDEV || err == ELOOP || err == EINVAL;
  if (err == EMFILE || err == ENFILE)
    srv_log_fd_exhausted(op, err);
  else
    srv_log(sec ? LOG_WARN : LOG_DEBUG, "conn %llu (%s): %s \"%.*s\" refused: %s", (unsigned long long)c->serial,
            c->peer, op, (int)(pl < 200 ? pl : 200), path, why ? why : strerror(err));
  if (!sec || !why) return (void)srv_reply(c, j->h.type, j->h.id, status, NULL, 0);
  char msg[256];
  int sub = c->cred && c->cred->rootfd != srv->rootfd;
  snprintf(msg, sizeof msg, "%s refused: %s%s%s%s", op, why, sub ? " (credential " : "", sub ? c->cred->name : "",
           sub ? " is confined to its subdirectory)" : "");
  srv_reply_error(c, j->h.id, status, msg);
}

/* ---- the handlers -------------------------------------------------------------------------------- */
static void do_ping(srv_job *j) {
  uint64_t t_recv = srv_now_ns(), t_client;
  int e = rio_decode_handle(j->body, j->n, &t_client);
  if (e) return (void)srv_bad_body(j, e);
  uint8_t b[24];
  rio_store_u64(b, t_client);
  rio_store_u64(b + 8, t_recv);
  rio_store_u64(b + 16, srv_now_ns());
  srv_reply(j->c, j->h.type, j->h.id, RIO_OK, b, sizeof b);
}

/* After the open (made without O_TRUNC): refuse writing to a file with other hard links (one may
 * lie outside the root, made by anyone with a shell on the host), clear setuid/setgid bits on a
 * file opened for writing, as the kernel does for unprivileged writers, THEN truncate. 0 or an
 * errno with why (a message in whybuf) set. */
static int open_checked(int fd, uint32_t flags, struct stat *st, char *whybuf, size_t wn, const char **why) {
  if (fstat(fd, st)) return errno;
  if ((flags & RIO_O_ACCMODE) == RIO_O_RDONLY) return 0;
  if (st->st_nlink > 1) {
    snprintf(whybuf, wn, "has %lu hard links; refused for writing", (unsigned long)st->st_nlink);
    return *why = whybuf, EACCES;
  }
  if ((st->st_mode & (S_ISUID | S_ISGID)) && fchmod(fd, st->st_mode & 07777 & ~(mode_t)(S_ISUID | S_ISGID)))
    return *why = "cannot clear its setuid/setgid bits", errno;
  if ((flags & RIO_O_TRUNC) && st->st_size != 0) {
    if (ftruncate(fd, 0)) return *why = "truncation failed", errno;
    st->st_size = 0;
  }
  return 0;
}

static void do_open(srv_job *j) {
  rio_open_req o;
  int e = rio_decode_open(j->body, j->n, &o);
  if (e) return (void)srv_bad_body(j, e);
  if ((o.flags & RIO_O_TRUNC) && (o.flags & RIO_O_ACCMODE) == RIO_O_RDONLY) {
    return refuse_path(j, "open", o.path, o.pathlen, EINVAL, "truncation through a read-only open");
  }
  int changes = (o.flags & RIO_O_ACCMODE) != RIO_O_RDONLY || (o.flags & (RIO_O_CREAT | RIO_O_APPEND));
  if (changes && srv_refused_ro(j, "open for writing")) return;
  if (srv_handle_room(j)) return;
  static const int acc[] = {O_RDONLY, O_WRONLY, O_RDWR};
  int fl = acc[o.flags & RIO_O_ACCMODE];
  if (o.flags & RIO_O_CREAT) fl |= O_CREAT;
  if (o.flags & RIO_O_EXCL) fl |= O_EXCL;
  if (o.flags & RIO_O_APPEND) fl |= O_APPEND;
  /* No O_TRUNC here: open_checked truncates once it has seen the file. */
  const char *why = NULL;
  char whybuf[64];
  uint64_t t0 = srv_now_ns();
  /* Never setuid, setgid or sticky: the server may run as root, the bits come from a client. */
  int fd = srv_resolve_open(conn_root(j->c), o.path, o.pathlen, fl, (mode_t)(o.perm & 0777), &why);
  struct stat st;
  if (fd >= 0 && (e = open_checked(fd, o.flags, &st, whybuf, sizeof whybuf, &why)) != 0) close(fd), fd = -e;
  srv_trace_span("storage", "open", NULL, t0, 0, 0, j->h.id);
  if (fd < 0) return refuse_path(j, "open", o.path, o.pathlen, -fd, why);
  uint64_t value = 0;
  int status = srv_handle_new(j->c, fd, o.flags & RIO_O_ACCMODE, &st, o.path, o.pathlen, &value);
  if (status) {
    close(fd);
    return (void)srv_reply(j->c, j->h.type, j->h.id, status, NULL, 0);
  }
  uint8_t b[16];
  rio_store_u64(b, value);
  rio_store_u64(b + 8, (uint64_t)st.st_size);
  srv_log(LOG_DEBUG, "conn %llu: open \"%.*s\" flags %#x -> handle %#llx", (unsigned long long)j->c->serial,
          (int)(o.pathlen < 200 ? o.pathlen : 200), o.path, o.flags, (unsigned long long)value);
  srv_reply(j->c, j->h.type, j->h.id, RIO_OK, b, sizeof b);
}

static void do_close(srv_job *j) {
  uint64_t h;
  int e = rio_decode_handle(j->body, j->n, &h);
  if (srv_admit(j, e, NULL, h)) return;
  pthread_mutex_lock(&j->c->mu);
  j->hd->closing = 1;
  j->hd->close_id = j->h.id;
  pthread_mutex_unlock(&j->c->mu);
  srv_lock_cancel(j->c, j->hd); /* a lock still waiting on this handle will never be granted */
  /* srv_job_done drops our reference; the last one closes and answers. */
}

static void do_delete(srv_job *j) {
  const char *path, *why = NULL;
  uint32_t pl;
  int e = rio_decode_path(j->body, j->n, &path, &pl);
  if (e) return (void)srv_bad_body(j, e);
  if (srv_refused_ro(j, "delete")) return;
  int r = srv_resolve_unlink(conn_root(j->c), path, pl, &why);
  if (r < 0) return refuse_path(j, "delete", path, pl, -r, why);
  srv_reply(j->c, j->h.type, j->h.id, RIO_OK, NULL, 0);
}

static void do_stat(srv_job *j) {
  uint64_t h;
  int e = rio_decode_handle(j->body, j->n, &h);
  if (srv_admit(j, e, NULL, h)) return;
  struct stat st;
  if (fstat(j->hd->fd, &st)) return reply_u64(j, rio_status_from_errno(errno), 0);
  reply_u64(j, RIO_OK, (uint64_t)st.st_size);
}

static void do_set_size(srv_job *j) {
  uint64_t h, size;
  int e = rio_decode_handle2(j->body, j->n, &h, &size);
  if (srv_admit(j, e, "set_size", h)) return;
  int st = j->hd->acc == RIO_O_RDONLY ? RIO_EBADF : ftruncate(j->hd->fd, (off_t)size) ? rio_status_from_errno(errno) : RIO_OK;
  srv_reply(j->c, j->h.type, j->h.id, st, NULL, 0);
}

static void do_preallocate(srv_job *j) {
  uint64_t h, off, len;
  int e = rio_decode_handle3(j->body, j->n, &h, &off, &len);
  if (srv_admit(j, e, "preallocate", h)) return;
  int st = RIO_OK;
  if (j->hd->acc == RIO_O_RDONLY) st = RIO_EBADF;
  else if (len > 0) {
    srv_emulate_disk(len);
    uint64_t t0 = srv_now_ns();
    int r = posix_fallocate(j->hd->fd, (off_t)off, (off_t)len);
    srv_trace_span("storage", "fallocate", NULL, t0, len, off, j->h.id);
    st = r ? rio_status_from_errno(r) : RIO_OK;
  }
  srv_reply(j->c, j->h.type, j->h.id, st, NULL, 0);
}

static void do_sync(srv_job *j) {
  uint64_t h;
  int e = rio_decode_handle(j->body, j->n, &h);
  if (srv_admit(j, e, NULL, h)) return;
  uint64_t t0 = srv_now_ns();
  int st = fsync(j->hd->fd) ? rio_status_from_errno(errno) : RIO_OK;
  srv_trace_span("storage", "fsync", NULL, t0, 0, 0, j->h.id);
  srv_reply(j->c, j->h.type, j->h.id, st, NULL, 0);
}

static void do_counter(srv_job *j) {
  rio_counter_req m;
  int e = rio_decode_counter(j->body, j->n, &m);
  if (srv_admit(j, e, m.op == RIO_CTR_GET ? NULL : "counter update", m.handle)) return;
  int64_t old = 0;
  int st = srv_counter_op(j->hd->file, m.key, m.op, m.value, &old);
  reply_u64(j, st, (uint64_t)old);
}

static void do_lock(srv_job *j) {
  rio_lock_req m;
  int e = rio_decode_lock(j->body, j->n, &m);
  if (srv_admit(j, e, m.op == RIO_LOCK_WRITE ? "write lock" : NULL, m.handle)) return srv_job_done(j);
  if (srv_lock_try(j)) return;
  srv_lock_park(j); /* the job stays in flight until granted or cancelled */
}

/* CHECKSUM: at most max_request bytes per request, read in SRV_CHUNK pieces, so one request
 * holds a worker about as long as a READ of max_request would; the client goes on from the
 * returned value (PROTOCOL.md, CHECKSUM). */
static void do_checksum(srv_job *j) {
  rio_checksum_req m;
  int e = rio_decode_checksum(j->body, j->n, &m);
  if (srv_admit(j, e, NULL, m.handle)) return;
  if (j->hd->acc == RIO_O_WRONLY) return (void)srv_reply(j->c, j->h.type, j->h.id, RIO_EBADF, NULL, 0);
  uint64_t want = m.len == 0 || m.len > srv->cfg.max_request ? srv->cfg.max_request : m.len, done = 0;
  uint8_t *buf = malloc(SRV_CHUNK);
  if (!buf) return (void)srv_reply(j->c, j->h.type, j->h.id, RIO_ENOMEM, NULL, 0);
  uint32_t v = m.start;
  int st = RIO_OK;
  uint64_t t0 = srv_now_ns();
  while (done < want) {
    size_t n = want - done < SRV_CHUNK ? (size_t)(want - done) : SRV_CHUNK;
    ssize_t r = pread(j->hd->fd, buf, n, (off_t)(m.offset + done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) st = rio_status_from_errno(errno);
    if (r <= 0) break; /* 0: end of file */
    v = rio_sum_update(m.algo, v, buf, (size_t)r);
    done += (uint64_t)r;
  }
  free(buf);
  srv_trace_span("storage", "checksum", rio_sum_name(m.algo), t0, done, m.offset, j->h.id);
  uint8_t b[16];
  rio_store_u64(b, v);
  rio_store_u64(b + 8, done);
  srv_reply(j->c, j->h.type, j->h.id, st, b, st ? 0 : sizeof b);
}

void srv_handle_job(srv_job *j) {
  if (j->h.type <= RIO_T_MAX) __atomic_add_fetch(&srv_served[j->h.type], 1, __ATOMIC_RELAXED);
  switch (j->h.type) {
  case RIO_T_PING: do_ping(j); break;
  case RIO_T_OPEN: do_open(j); break;
  case RIO_T_CLOSE: do_close(j); break;
  case RIO_T_DELETE: do_delete(j); break;
  case RIO_T_STAT: do_stat(j); break;
  case RIO_T_SET_SIZE: do_set_size(j); break;
  case RIO_T_PREALLOCATE: do_preallocate(j); break;
  case RIO_T_SYNC: do_sync(j); break;
  case RIO_T_READ:
    if (srv_read(j)) return; /* the connection's sender ends it */
    break;
  case RIO_T_LOCK: do_lock(j); return; /* parked or done inside */
  case RIO_T_COUNTER: do_counter(j); break;
  case RIO_T_CHECKSUM: do_checksum(j); break;
  default: srv_bad_body(j, RIO_EPROTO); break; /* the reader admits only request types */
  }
  srv_job_done(j);
}
