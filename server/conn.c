/* One client connection's reader: authentication (only HELLO then AUTH, HMAC-SHA-256), then the
 * frame loop: headers checked against the limits before any allocation, requests to the worker
 * pool (pipelined, replies by id), WRITE data streamed to storage in bounded chunks. Its bytes
 * come and go through out.c (the stream, the buffers, the output queue and its sender). */
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


/* The deadline of a frame that begins now (its header's first byte has arrived). */
static uint64_t frame_deadline(void) { return srv_now_ns() + (uint64_t)srv->cfg.frame_timeout * 1000000000ull; }

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
    srv_proto_error(c, h->id, RIO_EPROTO, "unsupported protocol version");
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
    srv_proto_error(c, h.id, RIO_EPROTO, "malformed HELLO");
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
    srv_proto_error(c, h->id, RIO_ETOOBIG, "WRITE: more segments than max_segments");
    return -1;
  }
  size_t hb = rio_io_hdr_bytes(nseg);
  if (hb > h->len) {
    srv_proto_error(c, h->id, RIO_EPROTO, "WRITE: segment list longer than the frame");
    return -1;
  }
  uint8_t *b = malloc(hb);
  if (!b) return srv_proto_error(c, h->id, RIO_ENOMEM, "WRITE: out of memory"), -1;
  memcpy(b, ioh, RIO_IO_HDR);
  int r = -1;
  rio_io_req io;
  size_t got;
  int got_segs = srv_in(c, b + RIO_IO_HDR, hb - RIO_IO_HDR, deadline);
  srv_trace_span("net", "recv", "WRITE", t0, RIO_HDR_SIZE + hb, 0, h->id);
  if (got_segs == 0) {
    int e = rio_decode_io(b, hb, h->len, RIO_T_WRITE, srv->cfg.max_segments, &io, &got);
    if (e) srv_proto_error(c, h->id, RIO_EPROTO, "WRITE: malformed segment list or data length");
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
    return srv_proto_error(c, h->id, RIO_EPROTO, "READ: segment count does not fit the body"), -1;
  if (nseg > srv->cfg.max_segments) return srv_proto_error(c, h->id, RIO_ETOOBIG, "READ: more segments than max_segments"), -1;
  return 0; /* the values (a segment past 2^63, a READ over max_request) are the worker's to refuse */
}

/* One request: check the header, read the body, dispatch. 0 to go on, -1 to end. */
static int one_request(srv_conn *c, const uint8_t hb[RIO_HDR_SIZE], uint64_t t0, uint64_t deadline) {
  rio_hdr h;
  if (rio_hdr_decode(hb, &h) != 0) return srv_proto_error(c, 0, RIO_EPROTO, "bad magic or version"), -1;
  uint64_t lim = rio_request_limit(h.type, 1, srv->cfg.max_request);
  if (lim == 0) return srv_proto_error(c, h.id, RIO_EPROTO, "unknown or unexpected request type"), -1;
  if (h.len > lim || h.len < rio_request_min(h.type)) {
    char why[128];
    snprintf(why, sizeof why, "%s with a body of %u bytes (limits %u..%llu)", srv_type_name(h.type), h.len,
             rio_request_min(h.type), (unsigned long long)lim);
    srv_proto_error(c, h.id, h.len > lim ? RIO_ETOOBIG : RIO_EPROTO, why);
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
    if (!j || !body) srv_proto_error(c, h.id, RIO_ENOMEM, "out of memory");
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
  srv_tune_socket(c);
  int ok = c->authed || authenticate(c) == 0; /* preset only by the fuzzer */
  srv_unauth_done(c);
  if (ok) {
    c->authed = 1;
    srv_buffers_start(c);
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
    srv_out_drain(c);
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
