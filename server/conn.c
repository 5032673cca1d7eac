/* One client connection: the socket stream, authentication (only HELLO then AUTH, HMAC-SHA-256),
 * then the frame loop: headers checked against the limits before any allocation, requests to
 * the worker pool (pipelined, replies by id), WRITE data streamed to storage in bounded chunks,
 * and the output path: replies leave through a bounded per-connection queue and its sender
 * thread, so no worker ever waits for a client that does not read. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/crypto.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "server.h"

#define AUTH_TIMEOUT_NS (5ull * 1000000000ull) /* where the accept loop set no deadline (fuzzer) */
#define QUEUE_BUDGET (16ull << 20) /* per connection: the bytes of the queued request bodies */
#define OUTQ_CAP (4ull << 20)      /* per connection: reply bytes queued before the reader stops
                                    * admitting requests and READs go to the sender unread; what
                                    * is already in flight still queues its (small) replies */

static int srv_out_flush(srv_conn *c);
static const char *srv_type_name(unsigned t);

/* The deadline of a frame that begins now (its header's first byte has arrived). */
static uint64_t frame_deadline(void) { return srv_now_ns() + (uint64_t)srv->cfg.frame_timeout * 1000000000ull; }

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

#define PACE_BYTES (1ull << 20)

void srv_pace_start(srv_pace *p) {
  p->deadline = srv_now_ns() + (uint64_t)srv->cfg.send_timeout * 1000000000ull;
  p->credit = PACE_BYTES;
}

int srv_pace_sent(srv_pace *p, size_t n) {
  if (n >= p->credit) return srv_pace_start(p), 0;
  p->credit -= n;
  return srv_now_ns() > p->deadline ? (errno = ETIMEDOUT, -1) : 0;
}

static int sock_send(srv_conn *c, const void *buf, size_t n) {
  const uint8_t *p = buf;
  srv_pace pace;
  srv_pace_start(&pace);
  while (n > 0) {
    ssize_t r = send(c->fd, p, n, MSG_NOSIGNAL);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1; /* includes SO_SNDTIMEO expiring: a client that stopped reading */
    p += r;
    n -= (size_t)r;
    if (n && srv_pace_sent(&pace, (size_t)r)) return -1;
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

static int srv_out_flush(srv_conn *c) {
  if (!c->out_len) return 0;
  int r = srv_send2(c, c->out, c->out_len, NULL, 0);
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

/* ---- the output path ------------------------------------------------------------------------- */
/* An entry of the output queue: bytes still to send, or a READ job the sender streams itself. */
struct srv_out {
  struct srv_out *next;
  srv_job *job;
  size_t len, pos;
  uint8_t data[];
};

static void sender_failed(srv_conn *c, int err);

uint64_t srv_out_free(const srv_conn *c) {
  uint64_t q = __atomic_load_n(&c->oq_bytes, __ATOMIC_RELAXED);
  return q < OUTQ_CAP ? OUTQ_CAP - q : 0;
}

/* A dead connection's reader may wait for room or for its requests: wake it. */
static void wake_reader(srv_conn *c) {
  pthread_mutex_lock(&c->mu);
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
}

/* Under send_mu: append e and wake the sender. */
static void enqueue(srv_conn *c, struct srv_out *e) {
  e->next = NULL;
  if (c->oq_tail) c->oq_tail->next = e;
  else c->oq_head = e;
  c->oq_tail = e;
  __atomic_add_fetch(&c->oq_bytes, e->len - e->pos, __ATOMIC_RELAXED);
  pthread_cond_broadcast(&c->send_cv); /* the sender; out_drain waits on it too */
}

/* Under send_mu, nothing queued: as much as a plain socket takes now, without waiting. */
static size_t send_now(srv_conn *c, const void *a, size_t an, const void *b, size_t bn) {
  struct iovec v[2] = {{(void *)a, an}, {(void *)b, bn}};
  struct msghdr m = {.msg_iov = v, .msg_iovlen = bn ? 2 : 1};
  for (;;) {
    ssize_t r = sendmsg(c->fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (r >= 0) return (size_t)r;
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) srv_set_dead(c);
    return 0;
  }
}

int srv_send2(srv_conn *c, const void *a, size_t an, const void *b, size_t bn) {
  pthread_mutex_lock(&c->send_mu);
  int r = 0;
  if (srv_dead(c)) {
    r = -1;
  } else if (!c->sender_on) { /* before authentication, and the fuzzer: the caller sends */
    r = c->io->send(c, a, an);
    if (r == 0 && bn) r = c->io->send(c, b, bn);
    if (r) srv_set_dead(c);
  } else {
    size_t sent = !c->oq_head && !c->sending && c->io == &srv_socket_io ? send_now(c, a, an, b, bn) : 0;
    struct srv_out *e = srv_dead(c) || sent == an + bn ? NULL : malloc(sizeof *e + an + bn - sent);
    if (e) {
      e->job = NULL, e->len = an + bn - sent, e->pos = 0;
      size_t ka = sent < an ? an - sent : 0;
      memcpy(e->data, (const uint8_t *)a + an - ka, ka);
      if (bn) memcpy(e->data + ka, (const uint8_t *)b + (sent > an ? sent - an : 0), e->len - ka);
      enqueue(c, e);
    } else if (sent != an + bn) {
      srv_set_dead(c), r = -1;
    }
  }
  pthread_mutex_unlock(&c->send_mu);
  return r;
}

void srv_send_job(srv_conn *c, srv_job *j) {
  if (!c->sender_on) { /* no sender (the fuzzer, 0 threads: nothing else sends): this thread */
    if (!srv_dead(c) && srv_read_send(j)) srv_set_dead(c);
    return srv_job_done(j);
  }
  struct srv_out *e = malloc(sizeof *e);
  if (!e) {
    srv_log(LOG_ERROR, "conn %llu (%s): no memory to queue a READ reply; closing", (unsigned long long)c->serial,
            c->peer);
    sender_failed(c, ENOMEM);
    return srv_job_done(j);
  }
  e->job = j, e->len = e->pos = 0;
  pthread_mutex_lock(&c->send_mu);
  enqueue(c, e);
  pthread_mutex_unlock(&c->send_mu);
}

/* The sender failed: the client went away or left its replies unread for --send-timeout. */
static void sender_failed(srv_conn *c, int err) {
  if (srv_dead(c)) return;
  if (err == EAGAIN || err == EWOULDBLOCK || err == ETIMEDOUT)
    srv_log(LOG_WARN, "conn %llu (%s): replies unread for %d s (send timeout); closing",
            (unsigned long long)c->serial, c->peer, srv->cfg.send_timeout);
  else
    srv_log(LOG_INFO, "conn %llu (%s): sending a reply failed: %s; closing", (unsigned long long)c->serial, c->peer,
            strerror(err));
  srv_set_dead(c);
  c->io->shutdown(c); /* the reader stops too */
  wake_reader(c);
}

/* The sender: one per authenticated connection, the only thread that may wait on its socket.
 * A READ job is read and sent here (the pool's worker has gone on); after a failure the
 * queue is emptied without sending, and its jobs end. */
static void *sender_main(void *arg) {
  srv_conn *c = arg;
  pthread_mutex_lock(&c->send_mu);
  for (;;) {
    while (!c->oq_head && !c->sender_stop) pthread_cond_wait(&c->send_cv, &c->send_mu);
    struct srv_out *e = c->oq_head;
    if (!e) break;
    if (!(c->oq_head = e->next)) c->oq_tail = NULL;
    c->sending = 1;
    pthread_mutex_unlock(&c->send_mu);
    int r = -1;
    if (!srv_dead(c)) r = e->job ? srv_read_send(e->job) : c->io->send(c, e->data + e->pos, e->len - e->pos);
    if (r) sender_failed(c, errno);
    if (e->job) srv_job_done(e->job);
    uint64_t before = __atomic_fetch_sub(&c->oq_bytes, e->len - e->pos, __ATOMIC_RELAXED);
    if (before >= OUTQ_CAP && before - (e->len - e->pos) < OUTQ_CAP) wake_reader(c); /* room again */
    free(e);
    pthread_mutex_lock(&c->send_mu);
    c->sending = 0;
    if (!c->oq_head) pthread_cond_broadcast(&c->send_cv); /* out_drain */
  }
  pthread_mutex_unlock(&c->send_mu);
  return NULL;
}

/* The reader, ending the connection: the replies queued so far leave first (a protocol error's
 * ERROR among them). Bounded: a client that does not read them fails the sender's send timeout. */
static void out_drain(srv_conn *c) {
  pthread_mutex_lock(&c->send_mu);
  while (c->sender_on && (c->oq_head || c->sending) && !srv_dead(c)) pthread_cond_wait(&c->send_cv, &c->send_mu);
  pthread_mutex_unlock(&c->send_mu);
}

static void srv_sender_start(srv_conn *c) {
  if (srv->cfg.threads == 0) return; /* no pool (the fuzzer): each reply is sent where it is made */
  pthread_attr_t at;
  pthread_attr_init(&at);
  pthread_attr_setstacksize(&at, 256 * 1024);
  pthread_mutex_lock(&c->send_mu);
  c->sender_on = pthread_create(&c->sender, &at, sender_main, c) == 0; /* else: senders inline */
  pthread_mutex_unlock(&c->send_mu);
  pthread_attr_destroy(&at);
}

/* Once no request is in flight: the queue drains (or is dropped when dead), the sender ends. */
static void srv_sender_stop(srv_conn *c) {
  if (!c->sender_on) return;
  pthread_mutex_lock(&c->send_mu);
  c->sender_stop = 1;
  pthread_cond_signal(&c->send_cv);
  pthread_mutex_unlock(&c->send_mu);
  pthread_join(c->sender, NULL);
  c->sender_on = 0;
}

/* A flood of descriptor errors must not flood the log: one line a second, with the count. */
void srv_log_fd_exhausted(const char *op, int err) {
  static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  static uint64_t last, quiet;
  uint64_t now = srv_now_ns();
  pthread_mutex_lock(&mu);
  int say = !last || now - last >= 1000000000ull;
  uint64_t n = quiet;
  if (say) last = now, quiet = 0;
  else quiet++;
  pthread_mutex_unlock(&mu);
  if (say)
    srv_log(LOG_WARN, "%s: %s (%llu more since the last such line)", op, strerror(err), (unsigned long long)n);
}

/* The accepted socket's limits: a reply unread for --send-timeout fails the sender's send
 * (SO_SNDTIMEO), data unacknowledged 5 s longer fails the connection (TCP_USER_TIMEOUT: a peer
 * that vanished while the server had data in flight is otherwise retried for 15-20 minutes),
 * and keepalive probes notice a vanished peer on an idle connection. */
static void tune_socket(srv_conn *c) {
  if (c->fd < 0) return;
  int one = 1, idle = 60, intvl = 10, cnt = 6;
  unsigned user_ms = (unsigned)srv->cfg.send_timeout * 1000u + 5000u; /* after SO_SNDTIMEO: its log line */
  struct timeval tv = {srv->cfg.send_timeout, 0};
  setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  setsockopt(c->fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
  setsockopt(c->fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  setsockopt(c->fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
  setsockopt(c->fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
  setsockopt(c->fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_ms, sizeof user_ms);
}

/* ---- connection record ------------------------------------------------------------------------ */
srv_conn *srv_conn_new(int fd, const srv_io *io, const char *peer) {
  srv_conn *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->fd = fd;
  c->io = io;
  pthread_mutex_init(&c->send_mu, NULL);
  pthread_cond_init(&c->send_cv, NULL);
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
  pthread_cond_destroy(&c->send_cv);
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
  uint64_t t0 = srv_now_ns();
  int r = srv_send2(c, head, first, body, n);
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
/* HELLO or AUTH, whose length is len, or for HELLO anything up to max (rio_decode_hello checks
 * it exactly). */
static int recv_fixed(srv_conn *c, unsigned type, uint8_t *body, uint32_t len, uint32_t max, uint64_t deadline,
                      rio_hdr *h) {
  uint8_t hb[RIO_HDR_SIZE];
  if (c->io->recv(c, hb, sizeof hb, deadline) != 0) {
    srv_log(srv_unauth_log_level(c), "conn %llu (%s): %s before authentication; closing", (unsigned long long)c->serial, c->peer,
            errno == ETIMEDOUT ? "timeout" : "connection ended");
    return -1;
  }
  if (rio_hdr_decode(hb, h) != 0 || h->type != type || h->len < len || h->len > max) {
    srv_log(LOG_WARN, "conn %llu (%s): refused before authentication: expected %s (%u bytes), got type %u "
            "length %u%s; closing", (unsigned long long)c->serial, c->peer, type == RIO_T_HELLO ? "HELLO" : "AUTH",
            len, h->type, h->len, rio_hdr_decode(hb, h) ? " with a bad magic or version" : "");
    return -1;
  }
  if (c->io->recv(c, body, h->len, deadline) != 0) {
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
  int r = rio_kdf(c->cred->secret, c->cred->secret_len, challenge, nonce, c2s, s2c) == 0 && srv_mac_wrap(c, c2s, s2c) == 0;
  OPENSSL_cleanse(c2s, sizeof c2s);
  OPENSSL_cleanse(s2c, sizeof s2c);
  if (!r) srv_log(LOG_ERROR, "conn %llu (%s): cannot start the MAC records (out of memory?); closing",
                  (unsigned long long)c->serial, c->peer);
  return r ? 0 : -1;
}

static int authenticate(srv_conn *c) {
  uint64_t deadline = c->auth_deadline ? c->auth_deadline : srv_now_ns() + AUTH_TIMEOUT_NS;
  uint8_t body[RIO_HELLO_MAX], challenge[RIO_NONCE], mac[RIO_MAC], want[RIO_MAC];
  rio_hdr h;
  rio_hello hello;
  uint16_t version;
  int use_mac;
  if (recv_fixed(c, RIO_T_HELLO, body, RIO_HELLO_MIN, RIO_HELLO_MAX, deadline, &h)) return -1;
  __atomic_store_n(&c->spoke, 1, __ATOMIC_RELEASE);
  if (rio_decode_hello(body, h.len, &hello) != 0) {
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
  if (recv_fixed(c, RIO_T_AUTH, mac, RIO_MAC, RIO_MAC, deadline, &h)) return -1;
  int known;
  const srv_cred *cr = srv_cred_find(hello.name, hello.name_len, &known);
  /* An unknown name is checked against a random secret: it fails like a wrong secret, as slowly. */
  if (rio_auth_mac(cr->secret, cr->secret_len, 0, challenge, hello.nonce, want) != 0 || !rio_mac_equal(mac, want) ||
      !known) {
    srv_log(LOG_WARN, "conn %llu (%s): authentication failed (wrong secret); closing", (unsigned long long)c->serial,
            c->peer);
    srv_reply_error(c, h.id, RIO_EAUTH, "authentication failed");
    return -1;
  }
  uint8_t ab[RIO_MAC + 32];
  w = rio_wr_init(ab, sizeof ab);
  c->cred = cr;
  if (rio_auth_mac(cr->secret, cr->secret_len, 1, challenge, hello.nonce, mac) != 0) return -1;
  rio_put_bytes(&w, mac, RIO_MAC);
  rio_put_u64(&w, srv->cfg.max_request);
  rio_put_u32(&w, srv->cfg.max_segments);
  rio_put_u32(&w, 0);
  rio_put_u64(&w, srv->server_id);
  if (srv_reply(c, RIO_T_AUTH, h.id, RIO_OK, ab, w.n)) return -1;
  return use_mac ? start_mac(c, challenge, hello.nonce) : 0;
}

/* ---- the frame loop ---------------------------------------------------------------------------- */
/* Wait for the next header; the idle timeout applies only when nothing is in flight and no
 * handle is open: a program that keeps a file open through an hour of computation between two
 * checkpoints is not idle, and a peer that vanished is found by TCP keepalive. 0, 1 on a clean
 * end (peer closed, idle, shutdown), -1 on a broken frame. *deadline: when the frame, which
 * began with its first byte, must be complete. */
static int next_header(srv_conn *c, uint8_t hb[RIO_HDR_SIZE], uint64_t *deadline) {
  for (;;) {
    uint64_t idle = (uint64_t)srv->cfg.idle_timeout * 1000000000ull;
    int r = srv_in(c, hb, 1, idle ? srv_now_ns() + idle : 0);
    if (r == 0) break;
    if (errno != ETIMEDOUT || __atomic_load_n(&srv->stopping, __ATOMIC_ACQUIRE) || srv_dead(c)) return 1;
    pthread_mutex_lock(&c->mu);
    int busy = c->inflight > 0;
    for (uint32_t i = 0; !busy && i < c->nhandles; i++) busy = c->handles[i] != NULL;
    pthread_mutex_unlock(&c->mu);
    if (!busy) {
      srv_log(LOG_INFO, "conn %llu (%s): idle for %d s with no open file; closing", (unsigned long long)c->serial,
              c->peer, srv->cfg.idle_timeout);
      return 1;
    }
  }
  *deadline = frame_deadline();
  return srv_in(c, hb + 1, RIO_HDR_SIZE - 1, *deadline) ? -1 : 0;
}

static const char *srv_type_name(unsigned t) {
  static const char *n[] = {"?", "HELLO", "AUTH", "PING", "OPEN", "CLOSE", "DELETE", "STAT", "SET_SIZE",
                            "PREALLOCATE", "SYNC", "READ", "WRITE", "LOCK", "COUNTER", "ERROR", "CHECKSUM"};
  return t <= RIO_T_MAX ? n[t] : "unknown";
}

/* A frame that stopped before its end: the client closed, or it did not finish within
 * --frame-timeout. Logged; the caller ends the connection. */
static void frame_broken(srv_conn *c, const rio_hdr *h) {
  int late = errno == ETIMEDOUT;
  srv_log(LOG_WARN, "conn %llu (%s): truncated %s frame (%s); closing", (unsigned long long)c->serial, c->peer,
          srv_type_name(h->type), late ? "not complete within the frame timeout" : "connection ended");
}

/* A WRITE: the io header and segments in memory, the data streamed by srv_handle_write. */
static int read_write_req(srv_conn *c, const rio_hdr *h, uint64_t t0, uint64_t deadline) {
  uint8_t ioh[RIO_IO_HDR];
  if (h->len < RIO_IO_HDR || srv_in(c, ioh, RIO_IO_HDR, deadline)) return frame_broken(c, h), -1;
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
  int got_segs = srv_in(c, b + RIO_IO_HDR, hb - RIO_IO_HDR, deadline);
  srv_trace_span("net", "recv", "WRITE", t0, RIO_HDR_SIZE + hb, 0, h->id);
  if (got_segs == 0) {
    int e = rio_decode_io(b, hb, h->len, RIO_T_WRITE, srv->cfg.max_segments, &io, &got);
    if (e) proto_error(c, h->id, RIO_EPROTO, "WRITE: malformed segment list or data length");
    else r = srv_handle_write(c, h, &io, deadline);
  } else {
    frame_broken(c, h);
  }
  free(b);
  return r;
}

/* Under c->mu: whether one more request of len bytes must wait for those in flight, or for the
 * client to read the replies already queued. */
static int over_budget(const srv_conn *c, uint32_t len, uint64_t budget) {
  return c->inflight >= srv->cfg.max_inflight || (c->queued_bytes && c->queued_bytes + len > budget) ||
         srv_out_free(c) == 0;
}

/* A READ's body must be what its header says: the segment list fills it exactly and nseg is
 * within max_segments. Checked by the reader, so a malformed one ends the connection before
 * any worker sees it. 0, or the protocol error sent. */
static int check_read_body(srv_conn *c, const rio_hdr *h, const uint8_t *body) {
  rio_rd rd = rio_rd_init(body + 20, 4); /* the reader admitted at least RIO_IO_HDR bytes */
  uint32_t nseg = rio_get_u32(&rd);
  if (rio_io_hdr_bytes(nseg) != h->len)
    return proto_error(c, h->id, RIO_EPROTO, "READ: segment count does not fit the body"), -1;
  if (nseg > srv->cfg.max_segments) return proto_error(c, h->id, RIO_ETOOBIG, "READ: more segments than max_segments"), -1;
  return 0; /* the values (a segment past 2^63, a READ over max_request) are the worker's to refuse */
}

/* One request: check the header, read the body, dispatch. 0 to go on, -1 to end. */
static int one_request(srv_conn *c, const uint8_t hb[RIO_HDR_SIZE], uint64_t t0, uint64_t deadline) {
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
  if (h.type == RIO_T_WRITE && !srv->cfg.forward_to) return read_write_req(c, &h, t0, deadline);
  /* Bounded per connection: at most max_inflight requests and QUEUE_BUDGET bytes of their
   * bodies (a forwarder keeps WRITE data too: twice max_request) wait or run at once, and
   * none is admitted while the output queue is over its budget. */
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
  int got = j && body ? srv_in(c, body, h.len, deadline) : -1;
  srv_trace_span("net", "recv", srv_type_name(h.type), t0, RIO_HDR_SIZE + (uint64_t)h.len, 0, h.id);
  if (got == 0 && h.type == RIO_T_READ && check_read_body(c, &h, body)) got = 1;
  if (got != 0) {
    if (!j || !body) proto_error(c, h.id, RIO_ENOMEM, "out of memory");
    else if (got < 0) frame_broken(c, &h);
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
  tune_socket(c);
  int ok = c->authed || authenticate(c) == 0; /* preset only by the fuzzer */
  srv_unauth_done(c);
  if (ok) {
    c->authed = 1;
    buffers_start(c);
    srv_log(LOG_INFO, "conn %llu (%s): authenticated as %s", (unsigned long long)c->serial, c->peer,
            c->cred ? c->cred->name : "default");
    srv_sender_start(c);
    uint8_t hb[RIO_HDR_SIZE];
    for (;;) {
      uint64_t deadline = 0;
      int r = next_header(c, hb, &deadline);
      uint64_t t0 = srv_now_ns();
      if (r < 0) srv_log(LOG_WARN, "conn %llu (%s): truncated frame header; closing", (unsigned long long)c->serial,
                         c->peer);
      if (r != 0 || __atomic_load_n(&c->stop_reading, __ATOMIC_ACQUIRE) || one_request(c, hb, t0, deadline) != 0 ||
          srv_dead(c))
        break;
    }
    srv_out_flush(c); /* replies made before the end, e.g. before a protocol error */
    out_drain(c);
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
  srv_sender_stop(c); /* the replies queued go out (or are dropped when the connection is dead) */
  srv_conn_close_all(c);
  srv_forward_free(c);
  srv_log(LOG_DEBUG, "conn %llu (%s): closed", (unsigned long long)c->serial, c->peer);
}
