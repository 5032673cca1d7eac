/* pario-server's WRITE path, run by the connection's reader as the data streams in (a WRITE's
 * data are never held whole in memory): from a plain socket the data go socket -> pipe -> file
 * with splice(2), elsewhere (TLS, MAC records, an emulated link) chunk by chunk with pwrite.
 * A WRITE cut off before its end gets no reply and leaves a prefix of what arrived
 * (PROTOCOL.md). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

#include "server.h"

#define SPLICE_MIN (64u << 10) /* smaller pieces are cheaper copied than spliced */

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
  int sz = fcntl(c->pipe[1], F_SETPIPE_SZ, (int)SRV_CHUNK); /* as much as /proc/sys/fs/pipe-max-size allows */
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
  char ro_msg[128] = "";
  if (srv_conn_ro(c)) { /* its handles are all read-only: say why it may not write */
    st = RIO_EACCES;
    srv_ro_refusal(c, "write", ro_msg, sizeof ro_msg);
  }
  uint64_t done = 0;
  /* The streaming buffer: as large as this write needs, at most SRV_CHUNK, kept for the next. */
  size_t want = io->total < SRV_CHUNK ? (size_t)io->total : SRV_CHUNK;
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
      size_t n = len < SRV_CHUNK ? (size_t)len : SRV_CHUNK, early = srv_in_buffered(c);
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
        if (werr) st = rio_status_from_errno(werr);
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
        if (e) st = rio_status_from_errno(e);
        else done += n;
      }
      off += n, len -= n;
    }
  }
  if (st == RIO_OK && srv->cfg.emu.cache_none) { /* write-through, and no page stays cached */
    if (fdatasync(hd->fd)) st = rio_status_from_errno(errno);
    (void)posix_fadvise(hd->fd, 0, 0, POSIX_FADV_DONTNEED);
  }
  if (hd) srv_handle_put(c, hd);
  __atomic_add_fetch(&srv_bytes_written, done, __ATOMIC_RELAXED);
  if (ro_msg[0]) return srv_reply_error(c, h->id, st, ro_msg);
  uint8_t b[8];
  rio_store_u64(b, done);
  return srv_reply(c, RIO_T_WRITE, h->id, st, b, st ? 0 : 8);
}
