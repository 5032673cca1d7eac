/* One client connection: the socket stream, authentication (only HELLO then AUTH, HMAC-SHA-256),
 * then the frame loop: headers checked against the limits before any allocation, requests to
 * the worker pool (pipelined, replies by id), WRITE data streamed to storage in bounded chunks. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "server.h"

#define AUTH_TIMEOUT_NS (10ull * 1000000000ull)
#define FRAME_TIMEOUT_NS (60ull * 1000000000ull) /* a frame that has begun must keep moving */
#define MAX_INFLIGHT 64                           /* per connection: bounds the queued bodies */
#define QUEUE_BUDGET (16ull << 20)                /* ... and their bytes */

uint64_t srv_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#define IN_CAP (64u << 10)   /* the reader's input buffer: a burst of pipelined frames */
#define OUT_CAP (256u << 10) /* the reader's reply buffer: the replies to such a burst */

/* ---- the socket stream ------------------------------------------------------------------------- */
/* At least one byte, at most n. With a deadline the socket is read without waiting first and
 * polled only when it is empty: pipelined frames are usually there already, and a poll per read
 * doubled the system calls. */
static ssize_t sock_recv_some(srv_conn *c, void *buf, size_t n, uint64_t deadline) {
  for (;;) {
    ssize_t r = recv(c->fd, buf, n, deadline ? MSG_DONTWAIT : 0);
    if (r > 0) return r;
    if (r == 0) return errno = ECONNRESET, -1;
    if (errno == EINTR || (!deadline && errno == EAGAIN)) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return -1;
    uint64_t now = srv_now_ns();
    if (now >= deadline) return errno = ETIMEDOUT, -1;
    struct pollfd pfd = {c->fd, POLLIN, 0};
    if (poll(&pfd, 1, (int)((deadline - now) / 1000000 + 1)) < 0 && errno != EINTR) return -1;
  }
}

static int sock_recv(srv_conn *c, void *buf, size_t n, uint64_t deadline) {
  for (uint8_t *p = buf; n > 0;) {
    ssize_t r = sock_recv_some(c, p, n, deadline);
    if (r < 0) return -1;
    p += r, n -= (size_t)r;
  }
  return 0;
}

static int sock_send(srv_conn *c, const void *buf, size_t n) {
  const uint8_t *p = buf;
  while (n > 0) {
    ssize_t r = send(c->fd, p, n, MSG_NOSIGNAL);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1; /* includes SO_SNDTIMEO expiring: a client that stopped reading */
    p += r;
    n -= (size_t)r;
  }
  return 0;
}

static void sock_shutdown(srv_conn *c) { shutdown(c->fd, SHUT_RDWR); }

const srv_io srv_socket_io = {sock_recv, sock_send, sock_shutdown, sock_recv_some};

/* ---- the reader's buffers ---------------------------------------------------------------------- */
/* Pipelined requests arrive many per system call and their cached READs are answered with one
 * send: per request, the reader then costs no wake-up and no system call of its own. Nothing
 * here trusts the bytes: srv_in only moves them, the frame loop checks them as before. */
int srv_in(srv_conn *c, void *buf, size_t n, uint64_t deadline) {
  uint8_t *p = buf;
  size_t k = srv_in_buffered(c) < n ? srv_in_buffered(c) : n;
  if (k) memcpy(p, c->in + c->in_pos, k), c->in_pos += k, p += k, n -= k;
  if (n == 0) return 0;
  if (srv_out_flush(c)) return -1; /* the reader may wait now: its replies go first */
  if (!c->in || n >= IN_CAP / 2) return c->io->recv(c, p, n, deadline); /* large: straight into place */
  c->in_pos = c->in_len = 0;
  while (c->in_len < n) {
    ssize_t r = c->io->recv_some(c, c->in + c->in_len, IN_CAP - c->in_len, deadline);
    if (r < 0) return -1;
    c->in_len += (size_t)r;
  }
  memcpy(p, c->in, n);
  c->in_pos = n;
  return 0;
}

uint8_t *srv_out_room(srv_conn *c, size_t n) {
  if (!c->out || n > OUT_CAP) return NULL;
  if (c->out_len + n > OUT_CAP && srv_out_flush(c)) return NULL;
  return c->out + c->out_len;
}

int srv_out_flush(srv_conn *c) {
  if (!c->out_len) return 0;
  pthread_mutex_lock(&c->send_mu);
  int r = srv_dead(c) ? -1 : c->io->send(c, c->out, c->out_len);
  if (r) srv_set_dead(c);
  pthread_mutex_unlock(&c->send_mu);
  c->out_len = 0;
  return r;
}

/* The buffers, once authenticated, where the stream can hand over what it has (recv_some). */
static void buffers_start(srv_conn *c) {
  if (!c->io->recv_some) return;
  c->in = malloc(IN_CAP);
  c->out = c->in ? malloc(OUT_CAP) : NULL;
  if (!c->out) free(c->in), c->in = NULL; /* unbuffered: slower, not wrong */
}

/* ---- connection record ------------------------------------------------------------------------ */
srv_conn *srv_conn_new(int fd, const srv_io *io, const char *peer) {
  srv_conn *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->fd = fd;
  c->io = io;
  pthread_mutex_init(&c->send_mu, NULL);
  pthread_mutex_init(&c->mu, NULL);
  pthread_cond_init(&c->cv, NULL);
  snprintf(c->peer, sizeof c->peer, "%s", peer);
  return c;
}

void srv_conn_free(srv_conn *c) {
  if (c->pipe_ok == 1) close(c->pipe[0]), close(c->pipe[1]);
  free(c->handles);
  free(c->chunk);
  free(c->in);
  free(c->out);
  srv_mac_free(c);
  pthread_mutex_destroy(&c->send_mu);
  pthread_mutex_destroy(&c->mu);
  pthread_cond_destroy(&c->cv);
  free(c);
}

void srv_conn_release(srv_conn *c, uint64_t n) {
  pthread_mutex_lock(&c->mu);
  c->inflight--;
  c->queued_bytes -= n;
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
}

/* ---- replies ---------------------------------------------------------------------------------- */
/* A reply in one send where its body is small (one system call, one segment on the wire). */
int srv_reply(srv_conn *c, unsigned type, uint64_t id, int status, const void *body, size_t n) {
  enum { HL = RIO_HDR_SIZE + RIO_STATUS, ONE = 256 };
  uint8_t head[HL + ONE];
  rio_hdr h = {RIO_VERSION, (uint16_t)(type | RIO_REPLY), 0, (uint32_t)(RIO_STATUS + n), id};
  rio_hdr_encode(head, &h);
  rio_wr w = rio_wr_init(head + RIO_HDR_SIZE, RIO_STATUS);
  rio_put_status(&w, status);
  size_t first = HL;
  if (n && n <= ONE) memcpy(head + HL, body, n), first += n, n = 0;
  pthread_mutex_lock(&c->send_mu);
  uint64_t t0 = srv_now_ns();
  int r = srv_dead(c) ? -1 : c->io->send(c, head, first);
  if (r == 0 && n) r = c->io->send(c, body, n);
  if (r != 0) srv_set_dead(c);
  pthread_mutex_unlock(&c->send_mu);
  srv_trace_span("net", "send", srv_type_name(type), t0, first + n, 0, id);
  return r;
}

int srv_reply_error(srv_conn *c, uint64_t id, int status, const char *msg) {
  uint8_t body[4 + RIO_MAX_ERRMSG];
  size_t ml = strnlen(msg, RIO_MAX_ERRMSG);
  rio_wr w = rio_wr_init(body, sizeof body);
  rio_put_u32(&w, (uint32_t)ml);
  rio_put_bytes(&w, msg, ml);
  return srv_reply(c, RIO_T_ERROR, id, status, body, w.n);
}

/* A protocol error: say why (best effort), log it, and end the connection. */
static void proto_error(srv_conn *c, uint64_t id, int status, const char *what) {
  srv_out_flush(c); /* the replies made before it go first */
  srv_log(LOG_WARN, "conn %llu (%s): protocol error: %s; closing the connection", (unsigned long long)c->serial,
          c->peer, what);
  srv_reply_error(c, id, status, what);
}

/* ---- authentication ------------------------------------------------------------------------- */
static int recv_fixed(srv_conn *c, unsigned type, uint8_t *body, uint32_t len, uint64_t deadline, rio_hdr *h) {
  uint8_t hb[RIO_HDR_SIZE];
  if (c->io->recv(c, hb, sizeof hb, deadline) != 0) {
    srv_log(LOG_WARN, "conn %llu (%s): %s before authentication; closing", (unsigned long long)c->serial, c->peer,
            errno == ETIMEDOUT ? "timeout" : "connection ended");
    return -1;
  }
  if (rio_hdr_decode(hb, h) != 0 || h->type != type || h->len != len) {
    srv_log(LOG_WARN, "conn %llu (%s): refused before authentication: expected %s (%u bytes), got type %u "
            "length %u%s; closing", (unsigned long long)c->serial, c->peer, type == RIO_T_HELLO ? "HELLO" : "AUTH",
            len, h->type, h->len, rio_hdr_decode(hb, h) ? " with a bad magic or version" : "");
    return -1;
  }
  if (c->io->recv(c, body, len, deadline) != 0) {
    srv_log(LOG_WARN, "conn %llu (%s): truncated frame before authentication; closing", (unsigned long long)c->serial,
            c->peer);
    return -1;
  }
  return 0;
}

/* Whether the peer is on this host (127.0.0.0/8, ::1, ::ffff:127.0.0.0/104): only there may plain
 * TCP go without the MAC, since nobody else can sit on that path. */
static int peer_is_loopback(int fd) {
  struct sockaddr_storage ss;
  socklen_t sl = sizeof ss;
  if (getpeername(fd, (struct sockaddr *)&ss, &sl)) return 0;
  if (ss.ss_family == AF_INET) return (ntohl(((struct sockaddr_in *)&ss)->sin_addr.s_addr) >> 24) == 127;
  if (ss.ss_family != AF_INET6) return 0;
  const struct in6_addr *a = &((struct sockaddr_in6 *)&ss)->sin6_addr;
  return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
}

/* The session's version and whether records with a MAC follow AUTH: 0, or -1 (refused, said). */
static int negotiate(srv_conn *c, const rio_hdr *h, const rio_hello *hello, uint16_t *version, int *mac) {
  if (hello->min_version > RIO_PROTO_VERSION || hello->max_version < 1) {
    proto_error(c, h->id, RIO_EPROTO, "unsupported protocol version");
    return -1;
  }
  *version = hello->max_version < RIO_PROTO_VERSION ? hello->max_version : RIO_PROTO_VERSION;
  *mac = !c->tls && *version >= 2 && (hello->flags & RIO_HELLO_MAC);
  if (c->tls || *mac || srv->cfg.insecure || peer_is_loopback(c->fd)) return 0;
  srv_log(LOG_WARN, "conn %llu (%s): refused: plain TCP without integrity (a version 1 client, or no MAC asked) "
          "from beyond loopback; use pario's client, TLS, or --insecure; closing", (unsigned long long)c->serial,
          c->peer);
  srv_reply_error(c, h->id, RIO_EACCES, "plain TCP without integrity (MAC) is refused from beyond loopback: use a "
                  "version 2 client or TLS (or start the server with --insecure)");
  return -1;
}

/* From here on every byte both ways travels in records with a MAC (mac.c). */
static int start_mac(srv_conn *c, const uint8_t challenge[RIO_NONCE], const uint8_t nonce[RIO_NONCE]) {
  uint8_t c2s[RIO_TAG], s2c[RIO_TAG];
  int r = rio_kdf(srv->secret, srv->secret_len, challenge, nonce, c2s, s2c) == 0 && srv_mac_wrap(c, c2s, s2c) == 0;
  OPENSSL_cleanse(c2s, sizeof c2s);
  OPENSSL_cleanse(s2c, sizeof s2c);
  if (!r) srv_log(LOG_ERROR, "conn %llu (%s): cannot start the MAC records (out of memory?); closing",
                  (unsigned long long)c->serial, c->peer);
  return r ? 0 : -1;
}

static int authenticate(srv_conn *c) {
  uint64_t deadline = srv_now_ns() + AUTH_TIMEOUT_NS;
  uint8_t body[8 + RIO_NONCE], challenge[RIO_NONCE], mac[RIO_MAC], want[RIO_MAC];
  rio_hdr h;
  rio_hello hello;
  uint16_t version;
  int use_mac;
  if (recv_fixed(c, RIO_T_HELLO, body, 8 + RIO_NONCE, deadline, &h)) return -1;
  if (rio_decode_hello(body, sizeof body, &hello) != 0) {
    proto_error(c, h.id, RIO_EPROTO, "malformed HELLO");
    return -1;
  }
  if (negotiate(c, &h, &hello, &version, &use_mac)) return -1;
  if (rio_random(challenge, sizeof challenge) != 0) {
    srv_log(LOG_ERROR, "RAND_bytes failed: no challenge for conn %llu", (unsigned long long)c->serial);
    return -1;
  }
  uint8_t rb[8 + RIO_NONCE];
  rio_wr w = rio_wr_init(rb, sizeof rb);
  rio_put_u16(&w, version);
  rio_put_u16(&w, 0);
  rio_put_u32(&w, use_mac ? RIO_HELLO_MAC : 0);
  rio_put_bytes(&w, challenge, RIO_NONCE);
  if (srv_reply(c, RIO_T_HELLO, h.id, RIO_OK, rb, w.n)) return -1;
  if (recv_fixed(c, RIO_T_AUTH, mac, RIO_MAC, deadline, &h)) return -1;
  if (rio_auth_mac(srv->secret, srv->secret_len, 0, challenge, hello.nonce, want) != 0 || !rio_mac_equal(mac, want)) {
    srv_log(LOG_WARN, "conn %llu (%s): authentication failed (wrong secret); closing", (unsigned long long)c->serial,
            c->peer);
    srv_reply_error(c, h.id, RIO_EAUTH, "authentication failed");
    return -1;
  }
  uint8_t ab[RIO_MAC + 32];
  w = rio_wr_init(ab, sizeof ab);
  if (rio_auth_mac(srv->secret, srv->secret_len, 1, challenge, hello.nonce, mac) != 0) return -1;
  rio_put_bytes(&w, mac, RIO_MAC);
  rio_put_u64(&w, srv->cfg.max_request);
  rio_put_u32(&w, srv->cfg.max_segments);
  rio_put_u32(&w, 0);
  rio_put_u64(&w, srv->server_id);
  if (srv_reply(c, RIO_T_AUTH, h.id, RIO_OK, ab, w.n)) return -1;
  return use_mac ? start_mac(c, challenge, hello.nonce) : 0;
}

/* ---- the frame loop ---------------------------------------------------------------------------- */
/* Wait for the next header; the idle timeout applies only when nothing is in flight. 0, 1 on a
 * clean end (peer closed, idle, shutdown), -1 on a broken frame. */
static int next_header(srv_conn *c, uint8_t hb[RIO_HDR_SIZE]) {
  for (;;) {
    uint64_t idle = (uint64_t)srv->cfg.idle_timeout * 1000000000ull;
    int r = srv_in(c, hb, 1, idle ? srv_now_ns() + idle : 0);
    if (r == 0) break;
    if (errno != ETIMEDOUT || __atomic_load_n(&srv->stopping, __ATOMIC_ACQUIRE) || srv_dead(c)) return 1;
    pthread_mutex_lock(&c->mu);
    int busy = c->inflight > 0;
    pthread_mutex_unlock(&c->mu);
    if (!busy) {
      srv_log(LOG_INFO, "conn %llu (%s): idle for %d s; closing", (unsigned long long)c->serial, c->peer,
              srv->cfg.idle_timeout);
      return 1;
    }
  }
  return srv_in(c, hb + 1, RIO_HDR_SIZE - 1, srv_now_ns() + FRAME_TIMEOUT_NS) ? -1 : 0;
}

const char *srv_type_name(unsigned t) {
  static const char *n[] = {"?", "HELLO", "AUTH", "PING", "OPEN", "CLOSE", "DELETE", "STAT", "SET_SIZE",
                            "PREALLOCATE", "SYNC", "READ", "WRITE", "LOCK", "COUNTER", "ERROR"};
  return t <= RIO_T_MAX ? n[t] : "unknown";
}

/* A WRITE: the io header and segments in memory, the data streamed by srv_handle_write. */
static int read_write_req(srv_conn *c, const rio_hdr *h, uint64_t t0) {
  uint8_t ioh[RIO_IO_HDR];
  if (h->len < RIO_IO_HDR || srv_in(c, ioh, RIO_IO_HDR, srv_now_ns() + FRAME_TIMEOUT_NS)) return -1;
  rio_rd rd = rio_rd_init(ioh + 20, 4);
  uint32_t nseg = rio_get_u32(&rd);
  if (nseg > srv->cfg.max_segments) {
    proto_error(c, h->id, RIO_ETOOBIG, "WRITE: more segments than max_segments");
    return -1;
  }
  size_t hb = rio_io_hdr_bytes(nseg);
  if (hb > h->len) {
    proto_error(c, h->id, RIO_EPROTO, "WRITE: segment list longer than the frame");
    return -1;
  }
  uint8_t *b = malloc(hb);
  if (!b) return proto_error(c, h->id, RIO_ENOMEM, "WRITE: out of memory"), -1;
  memcpy(b, ioh, RIO_IO_HDR);
  int r = -1;
  rio_io_req io;
  size_t got;
  int got_segs = srv_in(c, b + RIO_IO_HDR, hb - RIO_IO_HDR, srv_now_ns() + FRAME_TIMEOUT_NS);
  srv_trace_span("net", "recv", "WRITE", t0, RIO_HDR_SIZE + hb, 0, h->id);
  if (got_segs == 0) {
    int e = rio_decode_io(b, hb, h->len, RIO_T_WRITE, srv->cfg.max_segments, &io, &got);
    if (e) proto_error(c, h->id, e, "WRITE: malformed segment list or data length");
    else r = srv_handle_write(c, h, b, hb, &io);
  }
  free(b);
  return r;
}

/* Under c->mu: whether one more request of len bytes must wait for those in flight. */
static int over_budget(const srv_conn *c, uint32_t len, uint64_t budget) {
  return c->inflight >= MAX_INFLIGHT || (c->queued_bytes && c->queued_bytes + len > budget);
}

/* One request: check the header, read the body, dispatch. 0 to go on, -1 to end. */
static int one_request(srv_conn *c, const uint8_t hb[RIO_HDR_SIZE], uint64_t t0) {
  rio_hdr h;
  if (rio_hdr_decode(hb, &h) != 0) return proto_error(c, 0, RIO_EPROTO, "bad magic or version"), -1;
  uint64_t lim = rio_request_limit(h.type, 1, srv->cfg.max_request);
  if (lim == 0) return proto_error(c, h.id, RIO_EPROTO, "unknown or unexpected request type"), -1;
  if (h.len > lim || h.len < rio_request_min(h.type)) {
    char why[128];
    snprintf(why, sizeof why, "%s with a body of %u bytes (limits %u..%llu)", srv_type_name(h.type), h.len,
             rio_request_min(h.type), (unsigned long long)lim);
    proto_error(c, h.id, h.len > lim ? RIO_ETOOBIG : RIO_EPROTO, why);
    return -1;
  }
  if (h.type == RIO_T_WRITE && !srv->cfg.forward_to) return read_write_req(c, &h, t0);
  /* Bounded per connection: at most MAX_INFLIGHT requests and QUEUE_BUDGET bytes of their
   * bodies (a forwarder keeps WRITE data too: twice max_request) wait or run at once. */
  uint64_t budget = srv->cfg.forward_to ? 2 * srv->cfg.max_request : QUEUE_BUDGET;
  pthread_mutex_lock(&c->mu);
  if (over_budget(c, h.len, budget) && c->out_len) { /* no reply waits while the reader does */
    pthread_mutex_unlock(&c->mu);
    if (srv_out_flush(c)) return -1;
    pthread_mutex_lock(&c->mu);
  }
  while (over_budget(c, h.len, budget) && !srv_dead(c)) pthread_cond_wait(&c->cv, &c->mu);
  c->inflight++;
  c->queued_bytes += h.len;
  pthread_mutex_unlock(&c->mu);
  srv_job *j = calloc(1, sizeof *j);
  uint8_t *body = malloc(h.len);
  int got = j && body ? srv_in(c, body, h.len, srv_now_ns() + FRAME_TIMEOUT_NS) : -1;
  srv_trace_span("net", "recv", srv_type_name(h.type), t0, RIO_HDR_SIZE + (uint64_t)h.len, 0, h.id);
  if (got != 0) {
    if (!j || !body) proto_error(c, h.id, RIO_ENOMEM, "out of memory");
    else srv_log(LOG_WARN, "conn %llu (%s): truncated %s frame; closing", (unsigned long long)c->serial, c->peer,
                 srv_type_name(h.type));
    free(j), free(body);
    srv_conn_release(c, h.len);
    return -1;
  }
  if (srv->cfg.forward_to) {
    free(j);
    return srv_forward_request(c, &h, body, h.len);
  }
  j->c = c, j->h = h, j->body = body, j->n = h.len;
  if (h.type == RIO_T_READ && srv_read_inline(j)) return 0;
  srv_pool_submit(j);
  return 0;
}

void srv_conn_serve(srv_conn *c) {
  char tn[16];
  snprintf(tn, sizeof tn, "conn %llu", (unsigned long long)c->serial);
  srv_trace_thread(tn);
  srv_log(LOG_DEBUG, "conn %llu (%s): connected", (unsigned long long)c->serial, c->peer);
  int ok = c->authed || authenticate(c) == 0; /* preset only by the fuzzer */
  pthread_mutex_lock(&srv->mu);
  srv->nunauth--;
  pthread_mutex_unlock(&srv->mu);
  if (ok) {
    c->authed = 1;
    buffers_start(c);
    srv_log(LOG_INFO, "conn %llu (%s): authenticated", (unsigned long long)c->serial, c->peer);
    uint8_t hb[RIO_HDR_SIZE];
    for (;;) {
      int r = next_header(c, hb);
      uint64_t t0 = srv_now_ns();
      if (r < 0) srv_log(LOG_WARN, "conn %llu (%s): truncated frame header; closing", (unsigned long long)c->serial,
                         c->peer);
      if (r != 0 || one_request(c, hb, t0) != 0 || srv_dead(c)) break;
    }
    srv_out_flush(c); /* replies made before the end, e.g. before a protocol error */
  }
  /* End: no new requests; wait for those in flight (parked locks are cancelled), close handles. */
  pthread_mutex_lock(&c->mu);
  srv_set_dead(c);
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
  srv_lock_cancel(c, NULL);
  srv_forward_end(c);
  pthread_mutex_lock(&c->mu);
  while (c->inflight > 0) pthread_cond_wait(&c->cv, &c->mu);
  pthread_mutex_unlock(&c->mu);
  srv_conn_close_all(c);
  srv_forward_free(c);
  srv_log(LOG_DEBUG, "conn %llu (%s): closed", (unsigned long long)c->serial, c->peer);
}
