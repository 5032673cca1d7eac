/* A connection's byte stream and output, beneath the frame loop (conn.c) and the request
 * handlers: the socket stream, the reader's input and reply buffers, the output queue and its
 * sender thread (replies leave through a bounded per-connection queue, so no worker ever waits
 * for a client that does not read), the sender's pace, the connection record, and the replies. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "server.h"

#define OUTQ_CAP (4ull << 20)      /* per connection: reply bytes queued before the reader stops
                                    * admitting requests and READs go to the sender unread; what
                                    * is already in flight still queues its (small) replies */

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

int srv_out_flush(srv_conn *c) {
  if (!c->out_len) return 0;
  int r = srv_send2(c, c->out, c->out_len, NULL, 0);
  c->out_len = 0;
  return r;
}

/* The buffers, once authenticated, where the stream can hand over what it has (recv_some). */
void srv_buffers_start(srv_conn *c) {
  if (!c->io->recv_some) return;
  c->in = malloc(IN_CAP);
  c->out = c->in ? malloc(OUT_CAP) : NULL;
  if (!c->out) free(c->in), c->in = NULL; /* unbuffered: slower, not wrong */
}

/* ---- the output path ------------------------------------------------------------------------- */
/* An entry of the output queue: bytes still to send, or a READ job the sender streams itself. */
struct srv_out {
  struct srv_out *next;
  srv_job *job;                /* a job to run (send) and end (done) instead of data */
  int (*send)(srv_job *);
  void (*done)(srv_job *);
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

void srv_send_job(srv_conn *c, srv_job *j, int (*send)(srv_job *), void (*done)(srv_job *)) {
  if (!c->sender_on) { /* no sender (the fuzzer, 0 threads: nothing else sends): this thread */
    if (!srv_dead(c) && send(j)) srv_set_dead(c);
    return done(j);
  }
  struct srv_out *e = malloc(sizeof *e);
  if (!e) {
    srv_log(LOG_ERROR, "conn %llu (%s): no memory to queue a READ reply; closing", (unsigned long long)c->serial,
            c->peer);
    sender_failed(c, ENOMEM);
    return done(j);
  }
  e->job = j, e->send = send, e->done = done, e->len = e->pos = 0;
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
    if (!srv_dead(c)) r = e->job ? e->send(e->job) : c->io->send(c, e->data + e->pos, e->len - e->pos);
    if (r) sender_failed(c, errno);
    if (e->job) e->done(e->job);
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
void srv_out_drain(srv_conn *c) {
  pthread_mutex_lock(&c->send_mu);
  while (c->sender_on && (c->oq_head || c->sending) && !srv_dead(c)) pthread_cond_wait(&c->send_cv, &c->send_mu);
  pthread_mutex_unlock(&c->send_mu);
}

void srv_sender_start(srv_conn *c) {
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
void srv_sender_stop(srv_conn *c) {
  if (!c->sender_on) return;
  pthread_mutex_lock(&c->send_mu);
  c->sender_stop = 1;
  pthread_cond_signal(&c->send_cv);
  pthread_mutex_unlock(&c->send_mu);
  pthread_join(c->sender, NULL);
  c->sender_on = 0;
}


/* The accepted socket's limits: a reply unread for --send-timeout fails the sender's send
 * (SO_SNDTIMEO), data unacknowledged 5 s longer fails the connection (TCP_USER_TIMEOUT: a peer
 * that vanished while the server had data in flight is otherwise retried for 15-20 minutes),
 * and keepalive probes notice a vanished peer on an idle connection. */
void srv_tune_socket(srv_conn *c) {
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
void srv_proto_error(srv_conn *c, uint64_t id, int status, const char *what) {
  srv_out_flush(c); /* the replies made before it go first */
  srv_log(LOG_WARN, "conn %llu (%s): protocol error: %s; closing the connection", (unsigned long long)c->serial,
          c->peer, what);
  srv_reply_error(c, id, status, what);
}

/* A request type's name (logs, trace spans). */
const char *srv_type_name(unsigned t) {
  static const char *n[] = {"?", "HELLO", "AUTH", "PING", "OPEN", "CLOSE", "DELETE", "STAT", "SET_SIZE",
                            "PREALLOCATE", "SYNC", "READ", "WRITE", "LOCK", "COUNTER", "ERROR", "CHECKSUM"};
  return t <= RIO_T_MAX ? n[t] : "unknown";
}
