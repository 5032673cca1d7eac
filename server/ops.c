/* pario-server's request handlers: the per-connection handle table and every request type of
 * PROTOCOL.md. Each handler decodes its body with the codec (lengths checked first), works on
 * the file through the handle's descriptor and sends one reply. READ streams its data in
 * bounded chunks; WRITE is streamed by the connection's reader (srv_handle_write). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/statfs.h>
#include <sys/uio.h>
#include <unistd.h>

#include "server.h"
#include "rio/checksum.h"

#define READ_CHUNK (1u << 20)
#define WRITE_CHUNK (1u << 20)
#define INLINE_READ (64u << 10) /* READs up to this size may be served by the reader */
#define SIEVE_PIECE 4096         /* segments up to this size may be read together ... */
#define SIEVE_GAP 4096           /* ... when at most this far apart ... */
#define SIEVE_SPAN (256u << 10)  /* ... in one pread of at most this span */
#define SPLICE_MIN (64u << 10) /* smaller pieces are cheaper copied than spliced */
#define SENDFILE_MIN (64u << 10) /* READ segments at least this large leave by sendfile(2) */

/* ---- handle table ------------------------------------------------------------------------------ */
/* The descriptors that handles may hold, all connections together: RLIMIT_NOFILE less what the
 * rest of the server needs (FD_RESERVE: listener, signalfd, stdio, root, trace; per connection
 * slot its socket and splice pipe; one per worker, which may have opened a file just before its
 * handle is counted). Past it an OPEN is refused, so a new client can always connect. */
#define FD_RESERVE 64
#define FD_PER_CONN 3
static pthread_once_t budget_once = PTHREAD_ONCE_INIT;

static void budget_init(void) {
  struct rlimit rl;
  long long lim = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ? (long long)rl.rlim_cur : 1 << 20;
  long long reserve = FD_RESERVE + FD_PER_CONN * (long long)srv->cfg.max_conns + srv->cfg.threads;
  long long b = lim - reserve;
  srv->fd_budget = b < 0 ? 0 : b > INT32_MAX ? INT32_MAX : (int)b;
  srv_log(b < 16 ? LOG_WARN : LOG_INFO, "descriptor budget for open files: %d (RLIMIT_NOFILE %lld, %lld reserved "
          "for %d connections)", srv->fd_budget, lim, reserve, srv->cfg.max_conns);
}

/* Whether this connection and the server may hold one more handle: 0, or refused (EBUSY, with
 * a message) and 1. Checked before the file is opened. The last quarter of the budget is kept
 * for connections that hold fewer than FEW_HANDLES: clients that open many files cannot take
 * every descriptor from a newcomer. */
#define FEW_HANDLES 4
static int budget_spent(uint32_t open) {
  int used = __atomic_load_n(&srv->fds_open, __ATOMIC_RELAXED);
  return used >= srv->fd_budget || (open >= FEW_HANDLES && used >= srv->fd_budget - srv->fd_budget / 4);
}

static int handle_room(srv_job *j) {
  pthread_once(&budget_once, budget_init);
  srv_conn *c = j->c;
  pthread_mutex_lock(&c->mu);
  uint32_t open = 0;
  for (uint32_t i = 0; i < c->nhandles; i++) open += c->handles[i] != NULL;
  pthread_mutex_unlock(&c->mu);
  char msg[96];
  if (open >= (uint32_t)srv->cfg.max_handles)
    snprintf(msg, sizeof msg, "too many open handles on this connection (max %d)", srv->cfg.max_handles);
  else if (budget_spent(open))
    snprintf(msg, sizeof msg, "server descriptor budget exhausted");
  else
    return 0;
  srv_log(LOG_DEBUG, "conn %llu (%s): open refused: %s", (unsigned long long)c->serial, c->peer, msg);
  srv_reply_error(c, j->h.id, RIO_EBUSY, msg);
  return 1;
}

static uint64_t handle_value(uint32_t slot, uint32_t gen) { return ((uint64_t)gen << 32) | (slot + 1); }

static int handle_new(srv_conn *c, int fd, uint32_t acc, const struct stat *st, const char *path, uint32_t pl,
                      uint64_t *value) {
  srv_handle *hd = calloc(1, sizeof *hd);
  struct srv_file *f = hd ? srv_file_ref(st->st_dev, st->st_ino) : NULL;
  if (!f) return free(hd), RIO_ENOMEM;
  hd->fd = fd, hd->acc = acc, hd->dev = st->st_dev, hd->ino = st->st_ino, hd->file = f;
  struct statfs sf;
  hd->memfs = fstatfs(fd, &sf) == 0 && (sf.f_type == TMPFS_MAGIC || sf.f_type == RAMFS_MAGIC);
  snprintf(hd->name, sizeof hd->name, "%.*s", (int)(pl < 95 ? pl : 95), path);
  pthread_mutex_lock(&c->mu);
  uint32_t i = 0;
  while (i < c->nhandles && c->handles[i]) i++;
  if (i == c->nhandles) {
    if (c->nhandles >= (uint32_t)srv->cfg.max_handles) goto full; /* a concurrent OPEN took the room */
    if (c->nhandles == c->cap_handles) {
      uint32_t cap = c->cap_handles ? 2 * c->cap_handles : 16;
      srv_handle **h = realloc(c->handles, cap * sizeof *h);
      if (!h) goto full;
      c->handles = h, c->cap_handles = cap;
    }
    c->handles[c->nhandles++] = NULL;
  }
  hd->gen = ++c->next_gen ? c->next_gen : ++c->next_gen; /* never 0 */
  c->handles[i] = hd;
  *value = handle_value(i, hd->gen);
  pthread_mutex_unlock(&c->mu);
  __atomic_add_fetch(&srv->fds_open, 1, __ATOMIC_RELAXED);
  return RIO_OK;
full:
  pthread_mutex_unlock(&c->mu);
  srv_file_unref(f);
  free(hd);
  return RIO_EBUSY;
}

srv_handle *srv_handle_get(srv_conn *c, uint64_t value, int *status) {
  uint32_t slot = (uint32_t)value - 1, gen = (uint32_t)(value >> 32);
  srv_handle *hd = NULL;
  pthread_mutex_lock(&c->mu);
  if ((uint32_t)value != 0 && slot < c->nhandles && c->handles[slot] && c->handles[slot]->gen == gen &&
      !c->handles[slot]->closing) {
    hd = c->handles[slot];
    hd->refs++;
  }
  pthread_mutex_unlock(&c->mu);
  *status = hd ? RIO_OK : RIO_EBADF;
  return hd;
}

static void handle_release(srv_handle *hd) {
  close(hd->fd); /* drops the handle's OFD locks */
  __atomic_sub_fetch(&srv->fds_open, 1, __ATOMIC_RELAXED);
  srv_file_unref(hd->file);
  free(hd);
  srv_lock_kick();
}

/* Drop a request's reference; the last one of a closing handle closes it and answers CLOSE. */
void srv_handle_put(srv_conn *c, srv_handle *hd) {
  pthread_mutex_lock(&c->mu);
  int last = --hd->refs == 0 && hd->closing;
  if (last)
    for (uint32_t i = 0; i < c->nhandles; i++)
      if (c->handles[i] == hd) c->handles[i] = NULL;
  pthread_mutex_unlock(&c->mu);
  if (!last) return;
  uint64_t id = hd->close_id;
  handle_release(hd);
  srv_reply(c, RIO_T_CLOSE, id, RIO_OK, NULL, 0);
}

void srv_conn_close_all(srv_conn *c) {
  for (uint32_t i = 0; i < c->nhandles; i++)
    if (c->handles[i]) {
      handle_release(c->handles[i]);
      c->handles[i] = NULL;
    }
}

void srv_job_done(srv_job *j) {
  srv_conn *c = j->c;
  uint64_t n = j->n;
  if (j->hd) srv_handle_put(c, j->hd);
  free(j->body);
  free(j);
  srv_conn_release(c, n);
}

uint64_t srv_served[RIO_T_MAX + 1], srv_bytes_read, srv_bytes_written;

/* ---- helpers ----------------------------------------------------------------------------------- */
static int st_errno(int e) { return rio_status_from_errno(e); }

static void reply_u64(srv_job *j, int status, uint64_t v) {
  uint8_t b[8];
  rio_store_u64(b, v);
  srv_reply(j->c, j->h.type, j->h.id, status, b, status ? 0 : 8);
}

/* A body that does not decode: a malformed body (EPROTO: fields that do not add up to its
 * length) ends the connection, as PROTOCOL.md says; other codes (a value out of range in a
 * well-formed body) are ordinary refusals. */
static int bad_body(srv_job *j, int e) {
  if (e == RIO_EPROTO) {
    srv_log(LOG_WARN, "conn %llu (%s): protocol error: malformed request body (type %u); closing",
            (unsigned long long)j->c->serial, j->c->peer, j->h.type);
    srv_reply_error(j->c, j->h.id, RIO_EPROTO, "malformed request body");
    /* The reader stops before its next frame (SHUT_RD wakes it from a read) and sends what is
     * queued, this ERROR included, before the end. */
    __atomic_store_n(&j->c->stop_reading, 1, __ATOMIC_RELEASE);
    if (j->c->fd < 0 || shutdown(j->c->fd, SHUT_RD)) {
      pthread_mutex_lock(&j->c->mu);
      srv_set_dead(j->c);
      pthread_mutex_unlock(&j->c->mu);
      j->c->io->shutdown(j->c);
    }
  } else {
    srv_reply(j->c, j->h.type, j->h.id, e, NULL, 0);
  }
  return e;
}

/* Take the job's handle (first u64 of the body); 0, or replied with EBADF. */
static int take_handle(srv_job *j, uint64_t value) {
  int st;
  j->hd = srv_handle_get(j->c, value, &st);
  j->handle = value;
  if (!j->hd) srv_reply(j->c, j->h.type, j->h.id, st, NULL, 0);
  return j->hd ? 0 : -1;
}

static void log_refusal(srv_conn *c, const char *op, const char *path, uint32_t pl, int err, const char *why) {
  if (err == EMFILE || err == ENFILE) return srv_log_fd_exhausted(op, err);
  int sec = err == EACCES || err == EXDEV || err == ELOOP || err == EINVAL;
  srv_log(sec ? LOG_WARN : LOG_DEBUG, "conn %llu (%s): %s \"%.*s\" refused: %s", (unsigned long long)c->serial,
          c->peer, op, (int)(pl < 200 ? pl : 200), path, why ? why : strerror(err));
}

/* ---- rights (cred.c) ------------------------------------------------------------------------- */
static int conn_ro(const srv_conn *c) { return c->cred && c->cred->ro; }
/* The connection's root: its credential's SUBDIR, or the server's root (the fuzzer has none). */
static int conn_root(const srv_conn *c) { return c->cred ? c->cred->rootfd : srv->rootfd; }

/* A read-only credential asking to change something: logged, answered RIO_EACCES. 1 if refused. */
static int refused_ro(srv_conn *c, unsigned type, uint64_t id, const char *op) {
  if (!conn_ro(c)) return 0;
  srv_log(LOG_WARN, "conn %llu (%s): %s refused: credential %s is read-only", (unsigned long long)c->serial, c->peer,
          op, c->cred->name);
  srv_reply(c, type, id, RIO_EACCES, NULL, 0);
  return 1;
}

/* ---- the handlers -------------------------------------------------------------------------------- */
static void do_ping(srv_job *j) {
  uint64_t t_recv = srv_now_ns(), t_client;
  int e = rio_decode_handle(j->body, j->n, &t_client);
  if (e) return (void)bad_body(j, e);
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
  if (e) return (void)bad_body(j, e);
  if ((o.flags & RIO_O_TRUNC) && (o.flags & RIO_O_ACCMODE) == RIO_O_RDONLY) {
    log_refusal(j->c, "open", o.path, o.pathlen, EINVAL, "truncation through a read-only open");
    return (void)srv_reply(j->c, j->h.type, j->h.id, RIO_EINVAL, NULL, 0);
  }
  int changes = (o.flags & RIO_O_ACCMODE) != RIO_O_RDONLY || (o.flags & (RIO_O_CREAT | RIO_O_APPEND));
  if (changes && refused_ro(j->c, j->h.type, j->h.id, "open for writing")) return;
  if (handle_room(j)) return;
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
  if (fd < 0) {
    log_refusal(j->c, "open", o.path, o.pathlen, -fd, why);
    return (void)srv_reply(j->c, j->h.type, j->h.id, st_errno(-fd), NULL, 0);
  }
  uint64_t value = 0;
  int status = handle_new(j->c, fd, o.flags & RIO_O_ACCMODE, &st, o.path, o.pathlen, &value);
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
  if (e) return (void)bad_body(j, e);
  if (take_handle(j, h)) return;
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
  if (e) return (void)bad_body(j, e);
  if (refused_ro(j->c, j->h.type, j->h.id, "delete")) return;
  int r = srv_resolve_unlink(conn_root(j->c), path, pl, &why);
  if (r < 0) log_refusal(j->c, "delete", path, pl, -r, why);
  srv_reply(j->c, j->h.type, j->h.id, r < 0 ? st_errno(-r) : RIO_OK, NULL, 0);
}

static void do_stat(srv_job *j) {
  uint64_t h;
  int e = rio_decode_handle(j->body, j->n, &h);
  if (e) return (void)bad_body(j, e);
  if (take_handle(j, h)) return;
  struct stat st;
  if (fstat(j->hd->fd, &st)) return reply_u64(j, st_errno(errno), 0);
  reply_u64(j, RIO_OK, (uint64_t)st.st_size);
}

static void do_set_size(srv_job *j) {
  uint64_t h, size;
  int e = rio_decode_handle2(j->body, j->n, &h, &size);
  if (e) return (void)bad_body(j, e);
  if (refused_ro(j->c, j->h.type, j->h.id, "set_size")) return;
  if (take_handle(j, h)) return;
  int st = j->hd->acc == RIO_O_RDONLY ? RIO_EBADF : ftruncate(j->hd->fd, (off_t)size) ? st_errno(errno) : RIO_OK;
  srv_reply(j->c, j->h.type, j->h.id, st, NULL, 0);
}

static void do_preallocate(srv_job *j) {
  uint64_t h, off, len;
  int e = rio_decode_handle3(j->body, j->n, &h, &off, &len);
  if (e) return (void)bad_body(j, e);
  if (refused_ro(j->c, j->h.type, j->h.id, "preallocate")) return;
  if (take_handle(j, h)) return;
  int st = RIO_OK;
  if (j->hd->acc == RIO_O_RDONLY) st = RIO_EBADF;
  else if (len > 0) {
    srv_emulate_disk(len);
    uint64_t t0 = srv_now_ns();
    int r = posix_fallocate(j->hd->fd, (off_t)off, (off_t)len);
    srv_trace_span("storage", "fallocate", NULL, t0, len, off, j->h.id);
    st = r ? st_errno(r) : RIO_OK;
  }
  srv_reply(j->c, j->h.type, j->h.id, st, NULL, 0);
}

static void do_sync(srv_job *j) {
  uint64_t h;
  int e = rio_decode_handle(j->body, j->n, &h);
  if (e) return (void)bad_body(j, e);
  if (take_handle(j, h)) return;
  uint64_t t0 = srv_now_ns();
  int st = fsync(j->hd->fd) ? st_errno(errno) : RIO_OK;
  srv_trace_span("storage", "fsync", NULL, t0, 0, 0, j->h.id);
  srv_reply(j->c, j->h.type, j->h.id, st, NULL, 0);
}

static void do_counter(srv_job *j) {
  rio_counter_req m;
  int e = rio_decode_counter(j->body, j->n, &m);
  if (e) return (void)bad_body(j, e);
  if (m.op != RIO_CTR_GET && refused_ro(j->c, j->h.type, j->h.id, "counter update")) return;
  if (take_handle(j, m.handle)) return;
  int64_t old = 0;
  int st = srv_counter_op(j->hd->file, m.key, m.op, m.value, &old);
  reply_u64(j, st, (uint64_t)old);
}

static void do_lock(srv_job *j) {
  rio_lock_req m;
  int e = rio_decode_lock(j->body, j->n, &m);
  if (e) return bad_body(j, e), srv_job_done(j);
  if (m.op == RIO_LOCK_WRITE && refused_ro(j->c, j->h.type, j->h.id, "write lock")) return srv_job_done(j);
  if (take_handle(j, m.handle)) return srv_job_done(j);
  if (srv_lock_try(j)) return;
  srv_lock_park(j); /* the job stays in flight until granted or cancelled */
}

/* CHECKSUM: at most max_request bytes per request, read in READ_CHUNK pieces, so one request
 * holds a worker about as long as a READ of max_request would; the client goes on from the
 * returned value (PROTOCOL.md, CHECKSUM). */
static void do_checksum(srv_job *j) {
  rio_checksum_req m;
  int e = rio_decode_checksum(j->body, j->n, &m);
  if (e) return (void)bad_body(j, e);
  if (take_handle(j, m.handle)) return;
  if (j->hd->acc == RIO_O_WRONLY) return (void)srv_reply(j->c, j->h.type, j->h.id, RIO_EBADF, NULL, 0);
  uint64_t want = m.len == 0 || m.len > srv->cfg.max_request ? srv->cfg.max_request : m.len, done = 0;
  uint8_t *buf = malloc(READ_CHUNK);
  if (!buf) return (void)srv_reply(j->c, j->h.type, j->h.id, RIO_ENOMEM, NULL, 0);
  uint32_t v = m.start;
  int st = RIO_OK;
  uint64_t t0 = srv_now_ns();
  while (done < want) {
    size_t n = want - done < READ_CHUNK ? (size_t)(want - done) : READ_CHUNK;
    ssize_t r = pread(j->hd->fd, buf, n, (off_t)(m.offset + done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) st = st_errno(errno);
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

/* Bytes a READ returns: the segments in order up to the first that the end of file cuts. */
static uint64_t read_extent(const rio_io_req *io, uint64_t size) {
  uint64_t done = 0;
  for (uint32_t i = 0; i < io->nseg; i++) {
    uint64_t off, len;
    rio_seg_at(io, i, &off, &len);
    if (len == 0) continue;
    if (off >= size) break;
    uint64_t n = size - off < len ? size - off : len;
    done += n;
    if (n < len) break;
  }
  return done;
}

/* Where a READ's reading stands: segment i, pos bytes into it, left bytes of `done` to go. */
typedef struct seg_cur {
  uint32_t i;
  uint64_t pos, left;
  uint8_t *scratch; /* SIEVE_SPAN bytes, for runs of small segments read at once */
} seg_cur;

/* Read exactly n bytes at off (zeros past a concurrent truncation, as the reply promised). 0,
 * or 1 when nowait and the data is not in the page cache. */
static int read_at(int fd, uint8_t *p, size_t n, uint64_t off, int nowait) {
  size_t got = 0;
  while (got < n) {
    struct iovec v = {p + got, n - got};
    ssize_t r = preadv2(fd, &v, 1, (off_t)(off + got), nowait ? RWF_NOWAIT : 0);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && nowait) return 1; /* EAGAIN (not cached), or no RWF_NOWAIT here */
    if (r <= 0) break;
    got += (size_t)r;
  }
  memset(p + got, 0, n - got);
  return 0;
}

/* How many segments from cur->i (which starts a segment) one read of at most SIEVE_SPAN bytes
 * covers: small segments in increasing order with small gaps, all of them within room. */
static uint32_t sieve_run(const rio_io_req *io, const seg_cur *cur, size_t room, uint64_t *lo, uint64_t *hi) {
  uint64_t off, len, bytes = 0;
  uint32_t k = 0;
  rio_seg_at(io, cur->i, &off, &len);
  *lo = off, *hi = off;
  for (uint32_t i = cur->i; i < io->nseg; i++, k++) {
    rio_seg_at(io, i, &off, &len);
    if (len > SIEVE_PIECE || off < *hi || off - *hi > SIEVE_GAP || off + len - *lo > SIEVE_SPAN ||
        bytes + len > room || bytes + len > cur->left)
      break;
    bytes += len;
    *hi = off + len;
  }
  return k;
}

/* Fill out (room bytes at most) with the next bytes of the READ's segments: a run of small
 * nearby segments with one pread of their span (server-side sieving: the page cache holds
 * them, a system call per 32-byte piece is what costs), any other piece read directly.
 * Returns the bytes filled, or -1 when nowait and a piece is not in the page cache. */
static ssize_t fill(const srv_job *j, const rio_io_req *io, seg_cur *cur, uint8_t *out, size_t room, int nowait) {
  size_t n = 0;
  int fd = j->hd->fd;
  nowait = nowait && !j->hd->memfs; /* memory: nothing to wait for */
  while (n < room && cur->left > 0 && cur->i < io->nseg) {
    uint64_t off, len, lo, hi;
    rio_seg_at(io, cur->i, &off, &len);
    uint32_t k = cur->pos == 0 && cur->scratch ? sieve_run(io, cur, room - n, &lo, &hi) : 0;
    if (k >= 2) {
      if (read_at(fd, cur->scratch, (size_t)(hi - lo), lo, nowait)) return -1;
      for (uint32_t e = cur->i + k; cur->i < e; cur->i++) {
        rio_seg_at(io, cur->i, &off, &len);
        memcpy(out + n, cur->scratch + (off - lo), (size_t)len);
        n += (size_t)len, cur->left -= len;
      }
      continue;
    }
    uint64_t piece = len - cur->pos;
    if (piece > cur->left) piece = cur->left;
    if (piece > room - n) piece = room - n;
    if (read_at(fd, out + n, (size_t)piece, off + cur->pos, nowait)) return -1;
    n += (size_t)piece, cur->left -= piece, cur->pos += piece;
    if (cur->pos == len) cur->i++, cur->pos = 0;
  }
  return (ssize_t)n;
}

/* Send `done` bytes of the segments, gathered chunk by chunk. -1 if the stream broke. */
static int stream_read(srv_job *j, const rio_io_req *io, seg_cur *cur, uint8_t *buf) {
  srv_conn *c = j->c;
  while (cur->left > 0) {
    uint64_t t0 = srv_now_ns();
    ssize_t n = fill(j, io, cur, buf, READ_CHUNK, 0);
    if (n <= 0) return -1; /* cannot happen: left > 0 fills at least a byte */
    srv_emulate_disk((size_t)n);
    srv_trace_span("storage", "pread", NULL, t0, (uint64_t)n, 0, j->h.id);
    if (c->io->send(c, buf, (size_t)n)) return -1;
  }
  return 0;
}

/* Whether a READ's data can go from the file to the socket with sendfile(2): a plain socket
 * (not TLS, an emulated link or the fuzzer's stream) and only large pieces (a run of small
 * segments is cheaper gathered into one send). */
static int sendfile_fits(const srv_job *j, const rio_io_req *io, uint64_t done) {
  if (j->c->io != &srv_socket_io || done < SENDFILE_MIN) return 0;
  uint64_t left = done;
  for (uint32_t i = 0; i < io->nseg && left > 0; i++) {
    uint64_t off, len;
    rio_seg_at(io, i, &off, &len);
    if (len == 0) continue;
    if (len < SENDFILE_MIN && len < left) return 0; /* only the last piece may be short */
    left -= len < left ? len : left;
  }
  return 1;
}

/* The head of a reply whose data follows by sendfile: MSG_MORE keeps them in one segment. */
static int send_more(srv_conn *c, const uint8_t *p, size_t n) {
  while (n > 0) {
    ssize_t r = send(c->fd, p, n, MSG_NOSIGNAL | MSG_MORE);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    p += r, n -= (size_t)r;
  }
  return 0;
}

/* Send n zero bytes: the reply promised them (the file was cut after its size was taken). */
static int send_zeros(srv_conn *c, uint64_t n) {
  static const uint8_t zeros[4096];
  for (; n > 0; n -= n < sizeof zeros ? n : sizeof zeros)
    if (c->io->send(c, zeros, n < sizeof zeros ? (size_t)n : sizeof zeros)) return -1;
  return 0;
}

/* Send `done` bytes of the segments straight from the page cache to the socket: no copy through
 * the server's memory (on loopback the client's receive is then the only copy of the data).
 * The caller is the connection's sender and has sent the reply's head with MSG_MORE. -1 if the stream broke. */
static int sendfile_read(srv_job *j, const rio_io_req *io, uint64_t done) {
  srv_conn *c = j->c;
  srv_pace pace;
  srv_pace_start(&pace);
  for (uint32_t i = 0; i < io->nseg && done > 0; i++) {
    uint64_t off, len;
    rio_seg_at(io, i, &off, &len);
    for (len = len < done ? len : done; len > 0;) {
      size_t want = len < READ_CHUNK ? (size_t)len : READ_CHUNK;
      off_t o = (off_t)off;
      uint64_t t0 = srv_now_ns();
      srv_emulate_disk(want);
      ssize_t k = sendfile(c->fd, j->hd->fd, &o, want);
      if (k < 0 && errno == EINTR) continue;
      if (k < 0) return -1; /* includes SO_SNDTIMEO expiring: a client that stopped reading */
      srv_trace_span("storage", "sendfile", NULL, t0, (uint64_t)k, off, j->h.id);
      if (k == 0) return send_zeros(c, done); /* the file ended under us */
      off += (uint64_t)k, len -= (uint64_t)k, done -= (uint64_t)k;
      if (done && srv_pace_sent(&pace, (size_t)k)) return -1;
    }
  }
  return 0;
}

/* A READ whose reply fits one chunk: the header and the data leave in one send (one system
 * call, one segment on the wire). nowait: the reader thread's try (RWF_NOWAIT), 1 when a piece
 * is not in the page cache (nothing sent; the handle reference is kept for the pool). */
static int read_small(srv_job *j, const rio_io_req *io, seg_cur *cur, uint8_t *head, size_t hl, int nowait) {
  uint64_t done = cur->left;
  uint8_t *room = nowait ? srv_out_room(j->c, hl + done) : NULL; /* the reader's: batched */
  if (room) {
    uint64_t t0 = srv_now_ns();
    if (done && fill(j, io, cur, room + hl, (size_t)done, nowait) < 0) return 1;
    memcpy(room, head, hl);
    srv_out_commit(j->c, hl + done);
    srv_trace_span("storage", "pread", NULL, t0, done, 0, j->h.id);
    __atomic_add_fetch(&srv_bytes_read, done, __ATOMIC_RELAXED);
    return 0;
  }
  uint8_t *buf = malloc(hl + done);
  if (!buf) return (void)srv_reply(j->c, j->h.type, j->h.id, RIO_ENOMEM, NULL, 0), 0;
  memcpy(buf, head, hl);
  uint64_t t0 = srv_now_ns();
  if (done && fill(j, io, cur, buf + hl, (size_t)done, nowait) < 0) return free(buf), 1;
  srv_trace_span("storage", "pread", NULL, t0, done, 0, j->h.id);
  t0 = srv_now_ns();
  srv_send2(j->c, buf, hl + done, NULL, 0); /* never waits: what the socket does not take is queued */
  srv_trace_span("net", "send", "READ", t0, hl + done, 0, j->h.id);
  __atomic_add_fetch(&srv_bytes_read, done, __ATOMIC_RELAXED);
  free(buf);
  return 0;
}

/* The head of a READ reply of done bytes: frame header, status block, count. */
enum { READ_HEAD = RIO_HDR_SIZE + RIO_STATUS + 8 };
static void read_head(uint8_t *head, uint64_t id, uint64_t done) {
  rio_hdr h = {RIO_VERSION, RIO_T_READ | RIO_REPLY, 0, (uint32_t)(RIO_STATUS + 8 + done), id};
  rio_hdr_encode(head, &h);
  rio_wr w = rio_wr_init(head + RIO_HDR_SIZE, RIO_STATUS + 8);
  rio_put_status(&w, RIO_OK);
  rio_put_u64(&w, done);
}

/* The reader's READ of one segment, straight into its reply buffer: where the read stops short
 * the file ends (what read_extent would say), so no fstat, and no copy. 1 (nothing sent) when
 * a piece is not in the page cache or there is no room: the general path or the pool serves it. */
static int read_one_inline(srv_job *j, const rio_io_req *io) {
  uint64_t off, len;
  rio_seg_at(io, 0, &off, &len);
  uint8_t *room = srv_out_room(j->c, READ_HEAD + (size_t)len);
  if (!room) return 1;
  uint64_t t0 = srv_now_ns(), got = 0;
  while (got < len) {
    struct iovec v = {room + READ_HEAD + got, (size_t)(len - got)};
    ssize_t r = preadv2(j->hd->fd, &v, 1, (off_t)(off + got), j->hd->memfs ? 0 : RWF_NOWAIT);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return 1; /* EAGAIN (not cached), or an error the pool reports */
    if (r == 0) break;   /* the end of the file */
    got += (uint64_t)r;
  }
  read_head(room, j->h.id, got);
  srv_out_commit(j->c, READ_HEAD + (size_t)got);
  srv_trace_span("storage", "pread", NULL, t0, got, off, j->h.id);
  __atomic_add_fetch(&srv_bytes_read, got, __ATOMIC_RELAXED);
  return 0;
}

/* The reply of a READ whose checks passed, by its connection's sender (srv_send_job): the data
 * by sendfile where it fits, else read and sent chunk by chunk. Only the sender waits here on
 * the client's socket, never a worker. -1 if the stream broke. */
int srv_read_send(srv_job *j) {
  rio_io_req io;
  size_t hb;
  srv_conn *c = j->c;
  if (rio_decode_io(j->body, j->n, (uint32_t)j->n, RIO_T_READ, srv->cfg.max_segments, &io, &hb)) return -1;
  struct stat st;
  if (fstat(j->hd->fd, &st)) return srv_reply(c, j->h.type, j->h.id, st_errno(errno), NULL, 0);
  uint64_t done = read_extent(&io, (uint64_t)st.st_size), t0 = srv_now_ns();
  uint8_t head[READ_HEAD];
  read_head(head, j->h.id, done);
  int r;
  if (sendfile_fits(j, &io, done)) {
    r = send_more(c, head, sizeof head);
    if (r == 0) r = sendfile_read(j, &io, done);
  } else {
    seg_cur cur = {0, 0, done, io.nseg > 1 ? malloc(SIEVE_SPAN) : NULL}; /* none: piece by piece */
    uint8_t *buf = done ? malloc(done < READ_CHUNK ? done : READ_CHUNK) : NULL;
    if (done && !buf) r = srv_reply(c, j->h.type, j->h.id, RIO_ENOMEM, NULL, 0);
    else if ((r = c->io->send(c, head, sizeof head)) == 0) r = stream_read(j, &io, &cur, buf);
    free(buf);
    free(cur.scratch);
  }
  srv_trace_span("net", "send", "READ", t0, sizeof head + done, 0, j->h.id);
  __atomic_add_fetch(&srv_bytes_read, done, __ATOMIC_RELAXED);
  if (srv->cfg.emu.cache_none) (void)posix_fadvise(j->hd->fd, 0, 0, POSIX_FADV_DONTNEED);
  return r;
}

/* 1 only when nowait and the data is not all in the page cache: then nothing was sent. 2 when
 * the job went to the connection's sender (it ends the job). */
static int do_read_ex(srv_job *j, int nowait) {
  rio_io_req io;
  size_t hb;
  int e = rio_decode_io(j->body, j->n, (uint32_t)j->n, RIO_T_READ, srv->cfg.max_segments, &io, &hb);
  if (e && nowait) return 1; /* the pool answers it */
  if (e) return bad_body(j, e), 0;
  if (nowait && io.total > INLINE_READ) return 1;
  if (!j->hd && take_handle(j, io.handle)) return 0;
  if (j->hd->acc == RIO_O_WRONLY) return srv_reply(j->c, j->h.type, j->h.id, RIO_EBADF, NULL, 0), 0;
  if (RIO_STATUS + 8 + io.total > srv->cfg.max_request)
    return srv_reply(j->c, j->h.type, j->h.id, RIO_ETOOBIG, NULL, 0), 0;
  if (nowait && io.nseg == 1 && j->c->out) return read_one_inline(j, &io);
  struct stat st;
  if (fstat(j->hd->fd, &st)) return srv_reply(j->c, j->h.type, j->h.id, st_errno(errno), NULL, 0), 0;
  uint64_t done = read_extent(&io, (uint64_t)st.st_size);
  /* Read here and queued as bytes only while the output queue has room; the rest (and every
   * sendfile READ) goes to the sender, which reads when the client takes the data. */
  int here = done <= READ_CHUNK && !srv->cfg.emu.disk_bw && !sendfile_fits(j, &io, done) &&
             (nowait || READ_HEAD + done <= srv_out_free(j->c));
  if (!here) return nowait ? 1 : (srv_send_job(j->c, j), 2);
  uint8_t head[READ_HEAD];
  read_head(head, j->h.id, done);
  seg_cur cur = {0, 0, done, io.nseg > 1 ? malloc(SIEVE_SPAN) : NULL}; /* none: piece by piece */
  int declined = read_small(j, &io, &cur, head, sizeof head, nowait);
  free(cur.scratch);
  if (declined) return 1;
  if (srv->cfg.emu.cache_none) (void)posix_fadvise(j->hd->fd, 0, 0, POSIX_FADV_DONTNEED);
  return 0;
}

static int do_read(srv_job *j) { return do_read_ex(j, 0) == 2; }

/* A small READ served by the connection's reader itself when its data is in the page cache:
 * no hand-off to a worker and back, which costs more than the read on this path. 1 when
 * answered (the job is done), 0 when it must go to the pool (it may hold the handle). */
int srv_read_inline(srv_job *j) {
  if (srv->cfg.emu.disk_bw || srv->cfg.emu.cache_none || srv->cfg.forward_to) return 0;
  if (do_read_ex(j, 1)) return 0; /* 1: declined (never 2: the reader does not hand over) */
  __atomic_add_fetch(&srv_served[RIO_T_READ], 1, __ATOMIC_RELAXED);
  srv_job_done(j);
  return 1;
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
    if (do_read(j)) return; /* the connection's sender ends it */
    break;
  case RIO_T_LOCK: do_lock(j); return; /* parked or done inside */
  case RIO_T_COUNTER: do_counter(j); break;
  case RIO_T_CHECKSUM: do_checksum(j); break;
  default: bad_body(j, RIO_EPROTO); break; /* the reader admits only request types */
  }
  srv_job_done(j);
}

/* ---- WRITE, streamed by the reader ------------------------------------------------------------ */
static int write_all(int fd, const uint8_t *p, size_t n, uint64_t off) {
  while (n > 0) {
    ssize_t r = pwrite(fd, p, n, (off_t)off);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return errno;
    if (r == 0) return EIO;
    p += r, n -= (size_t)r, off += (uint64_t)r;
  }
  return 0;
}

/* WRITE data straight from a plain socket into the file through a pipe (splice(2)): the bytes
 * never pass through the server's memory, which saves a copy per byte on the path that the
 * client's send and the page cache already load. Not under TLS, an emulated link or the
 * fuzzer's stream (their io is not the socket's). */
static int splice_ready(srv_conn *c) {
  if (c->pipe_ok) return c->pipe_ok > 0;
  c->pipe_ok = -1;
  if (c->io != &srv_socket_io || pipe2(c->pipe, O_CLOEXEC)) return 0;
  int sz = fcntl(c->pipe[1], F_SETPIPE_SZ, (int)WRITE_CHUNK); /* as much as /proc/sys/fs/pipe-max-size allows */
  if (sz <= 0) sz = fcntl(c->pipe[1], F_GETPIPE_SZ);
  c->pipe_cap = sz > 0 ? (size_t)sz : 65536;
  c->pipe_ok = 1;
  return 1;
}

/* Empty the pipe after a failed write to the file: its bytes are dropped. -1 if it cannot be. */
static int pipe_drain(srv_conn *c, size_t n) {
  char junk[4096];
  while (n > 0) {
    ssize_t r = read(c->pipe[0], junk, n < sizeof junk ? n : sizeof junk);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    n -= (size_t)r;
  }
  return 0;
}

/* n bytes of the stream to the file at off; *done counts those written. 0 (with *err the errno
 * of a failed file write, the rest of the n bytes then dropped), or -1 when the stream broke or
 * the frame's deadline passed. The socket is polled before each splice: a splice from a
 * blocking socket waits for data without any deadline (SPLICE_F_NONBLOCK is the pipe's), which
 * held a dead client's connection until TCP gave up. */
static int splice_chunk(srv_conn *c, int fd, uint64_t off, size_t n, uint64_t deadline, int *err, uint64_t *done) {
  while (n > 0) {
    uint64_t now = srv_now_ns();
    if (now >= deadline) return errno = ETIMEDOUT, -1;
    struct pollfd p = {c->fd, POLLIN, 0};
    int pr = poll(&p, 1, (int)((deadline - now) / 1000000 + 1));
    if (pr < 0 && errno != EINTR) return -1;
    if (pr <= 0) continue;
    size_t want = n < c->pipe_cap ? n : c->pipe_cap;
    ssize_t k = splice(c->fd, NULL, c->pipe[1], NULL, want, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
    if (k == 0) return errno = ECONNRESET, -1; /* the client closed the connection */
    if (k < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return -1;
    }
    size_t left = (size_t)k;
    while (left > 0 && !*err) {
      loff_t o = (loff_t)off;
      ssize_t w = splice(c->pipe[0], NULL, fd, &o, left, SPLICE_F_MOVE);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) *err = w < 0 ? errno : EIO;
      else left -= (size_t)w, off += (uint64_t)w, *done += (uint64_t)w;
    }
    if (left && pipe_drain(c, left)) return -1;
    n -= (size_t)k;
  }
  return 0;
}

/* A WRITE whose data stopped before the end of its frame: no reply (it did not complete); what
 * was written stays (PROTOCOL.md: a prefix of the data, never more than was received). */
static void write_broken(srv_conn *c, const rio_hdr *h, uint64_t done) {
  srv_log(LOG_WARN, "conn %llu (%s): truncated WRITE data, request %#llx (%s; %llu bytes written, no reply); "
          "closing", (unsigned long long)c->serial, c->peer, (unsigned long long)h->id,
          errno == ETIMEDOUT ? "not complete within the frame timeout" : "connection ended", (unsigned long long)done);
  __atomic_add_fetch(&srv_bytes_written, done, __ATOMIC_RELAXED);
}

int srv_handle_write(srv_conn *c, const rio_hdr *h, const rio_io_req *io, uint64_t deadline) {
  int st;
  __atomic_add_fetch(&srv_served[RIO_T_WRITE], 1, __ATOMIC_RELAXED);
  srv_handle *hd = srv_handle_get(c, io->handle, &st);
  if (hd && hd->acc == RIO_O_RDONLY) st = RIO_EBADF;
  if (conn_ro(c)) { /* its handles are all read-only: say why it may not write */
    st = RIO_EACCES;
    srv_log(LOG_WARN, "conn %llu (%s): write refused: credential %s is read-only", (unsigned long long)c->serial,
            c->peer, c->cred->name);
  }
  uint64_t done = 0;
  /* The streaming buffer: as large as this write needs, at most WRITE_CHUNK, kept for the next. */
  size_t want = io->total < WRITE_CHUNK ? (size_t)io->total : WRITE_CHUNK;
  if (want > c->chunk_cap) {
    uint8_t *b = realloc(c->chunk, want);
    if (!b) {
      if (hd) srv_handle_put(c, hd);
      srv_log(LOG_ERROR, "conn %llu (%s): no memory for a WRITE buffer; closing", (unsigned long long)c->serial, c->peer);
      return -1;
    }
    c->chunk = b, c->chunk_cap = want;
  }
  for (uint32_t i = 0; i < io->nseg; i++) {
    uint64_t off, len;
    rio_seg_at(io, i, &off, &len);
    while (len > 0) {
      size_t n = len < WRITE_CHUNK ? (size_t)len : WRITE_CHUNK, early = srv_in_buffered(c);
      /* Bytes the reader took in with the frame are copied, alone where the rest can be spliced;
       * elsewhere (TLS, MAC records) the chunk is filled whole, one pwrite per chunk. */
      if (early && early < n && st == RIO_OK && splice_ready(c)) n = early;
      uint64_t t0 = srv_now_ns();
      if (st == RIO_OK && n >= SPLICE_MIN && !early && splice_ready(c)) {
        int werr = 0;
        srv_emulate_disk(n);
        if (splice_chunk(c, hd->fd, off, n, deadline, &werr, &done)) {
          write_broken(c, h, done);
          srv_handle_put(c, hd);
          return -1;
        }
        srv_trace_span("storage", "splice", NULL, t0, n, off, h->id);
        if (werr) st = st_errno(werr);
        off += n, len -= n;
        continue;
      }
      int got = srv_in(c, c->chunk, n, deadline);
      srv_trace_span("net", "recv", "WRITE data", t0, n, off, h->id);
      if (got) {
        write_broken(c, h, done);
        if (hd) srv_handle_put(c, hd);
        return -1;
      }
      if (st == RIO_OK) { /* after an error the rest of the data is read and dropped */
        srv_emulate_disk(n);
        uint64_t tw = srv_now_ns();
        int e = write_all(hd->fd, c->chunk, n, off);
        srv_trace_span("storage", "pwrite", NULL, tw, n, off, h->id);
        if (e) st = st_errno(e);
        else done += n;
      }
      off += n, len -= n;
    }
  }
  if (st == RIO_OK && srv->cfg.emu.cache_none) { /* write-through, and no page stays cached */
    if (fdatasync(hd->fd)) st = st_errno(errno);
    (void)posix_fadvise(hd->fd, 0, 0, POSIX_FADV_DONTNEED);
  }
  if (hd) srv_handle_put(c, hd);
  __atomic_add_fetch(&srv_bytes_written, done, __ATOMIC_RELAXED);
  uint8_t b[8];
  rio_store_u64(b, done);
  return srv_reply(c, RIO_T_WRITE, h->id, st, b, st ? 0 : 8);
}
