/* pario-server's READ path: the extent a READ returns (its segments up to the end of file),
 * server-side sieving (a run of small nearby segments read with one pread of their span), and
 * the three ways a reply leaves: answered by the connection's reader when small and cached
 * (srv_read_inline), read and queued by a worker, or handed to the connection's sender, which
 * streams it chunk by chunk or sends the data straight from the page cache with sendfile(2)
 * (srv_read_send). Only the sender ever waits on the client's socket. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include "rio/window.h"
#include "server.h"

#define INLINE_READ (64u << 10) /* READs up to this size may be served by the reader */
#define SIEVE_PIECE 4096         /* segments up to this size may be read together ... */
#define SIEVE_SPAN (256u << 10)  /* ... in one pread of at most this span (rio/window.h's rule, */
                                 /* holes up to RIO_WINDOW_MAX_GAP read through) */
#define SENDFILE_MIN (64u << 10) /* READ segments at least this large leave by sendfile(2) */

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
 * covers: small segments, whole, that join a window by rio/window.h's rule (in increasing
 * order, holes of at most RIO_WINDOW_MAX_GAP), all of them within room. */
static uint32_t sieve_run(const rio_io_req *io, const seg_cur *cur, size_t room, uint64_t *lo, uint64_t *hi) {
  uint64_t off, len, bytes = 0;
  uint32_t k = 0;
  rio_seg_at(io, cur->i, &off, &len);
  rio_window w = rio_window_open(off, 0, off + SIEVE_SPAN, RIO_WINDOW_MAX_GAP);
  for (uint32_t i = cur->i; i < io->nseg; i++, k++) {
    rio_seg_at(io, i, &off, &len);
    if (len > SIEVE_PIECE || bytes + len > room || bytes + len > cur->left || !rio_window_join(&w, off, len, 0))
      break;
    bytes += len;
  }
  *lo = w.lo, *hi = w.end;
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
    ssize_t n = fill(j, io, cur, buf, SRV_CHUNK, 0);
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
      size_t want = len < SRV_CHUNK ? (size_t)len : SRV_CHUNK;
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
static int srv_read_send(srv_job *j) {
  rio_io_req io;
  size_t hb;
  srv_conn *c = j->c;
  if (rio_decode_io(j->body, j->n, (uint32_t)j->n, RIO_T_READ, srv->cfg.max_segments, &io, &hb)) return -1;
  struct stat st;
  if (fstat(j->hd->fd, &st)) return srv_reply(c, j->h.type, j->h.id, rio_status_from_errno(errno), NULL, 0);
  uint64_t done = read_extent(&io, (uint64_t)st.st_size), t0 = srv_now_ns();
  uint8_t head[READ_HEAD];
  read_head(head, j->h.id, done);
  int r;
  if (sendfile_fits(j, &io, done)) {
    r = send_more(c, head, sizeof head);
    if (r == 0) r = sendfile_read(j, &io, done);
  } else {
    seg_cur cur = {0, 0, done, io.nseg > 1 ? malloc(SIEVE_SPAN) : NULL}; /* none: piece by piece */
    uint8_t *buf = done ? malloc(done < SRV_CHUNK ? done : SRV_CHUNK) : NULL;
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
  if (e) return srv_bad_body(j, e), 0;
  if (nowait && io.total > INLINE_READ) return 1;
  if (!j->hd && srv_take_handle(j, io.handle)) return 0;
  if (j->hd->acc == RIO_O_WRONLY) return srv_reply(j->c, j->h.type, j->h.id, RIO_EBADF, NULL, 0), 0;
  if (RIO_STATUS + 8 + io.total > srv->cfg.max_request)
    return srv_reply(j->c, j->h.type, j->h.id, RIO_ETOOBIG, NULL, 0), 0;
  if (nowait && io.nseg == 1 && j->c->out) return read_one_inline(j, &io);
  struct stat st;
  if (fstat(j->hd->fd, &st)) return srv_reply(j->c, j->h.type, j->h.id, rio_status_from_errno(errno), NULL, 0), 0;
  uint64_t done = read_extent(&io, (uint64_t)st.st_size);
  /* Read here and queued as bytes only while the output queue has room; the rest (and every
   * sendfile READ) goes to the sender, which reads when the client takes the data. */
  int here = done <= SRV_CHUNK && !srv->cfg.emu.disk_bw && !sendfile_fits(j, &io, done) &&
             (nowait || READ_HEAD + done <= srv_out_free(j->c));
  if (!here) return nowait ? 1 : (srv_send_job(j->c, j, srv_read_send, srv_job_done), 2);
  uint8_t head[READ_HEAD];
  read_head(head, j->h.id, done);
  seg_cur cur = {0, 0, done, io.nseg > 1 ? malloc(SIEVE_SPAN) : NULL}; /* none: piece by piece */
  int declined = read_small(j, &io, &cur, head, sizeof head, nowait);
  free(cur.scratch);
  if (declined) return 1;
  if (srv->cfg.emu.cache_none) (void)posix_fadvise(j->hd->fd, 0, 0, POSIX_FADV_DONTNEED);
  return 0;
}

int srv_read(srv_job *j) { return do_read_ex(j, 0) == 2; }

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
