/* The x-rio:// driver's connections (rioconn.h): the cache, the receiver thread that hands
 * replies to their waiters, the send queue that puts many frames on the wire per system call,
 * and the sender thread of submitted writes. Connect and login are rio/login.c's. */
#include "core/common.h"
#include "driver/rio.h"
#include "driver/rioconn.h"
#include "rio/login.h"
#include "trace/trace.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

#define OUTQ_CAP (64u << 10)
#define QUEUE_BEHIND 8 /* submitted requests in flight that make the queue worth it */

/* The receiver reads this much at a time, so a burst of pipelined replies costs one system call
 * and one wake-up; a READ's data beyond what it read ahead goes straight to the caller's memory. */
#define RX_CAP (64u << 10)

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t rx_cond = PTHREAD_COND_INITIALIZER;
static rio_conn *cache;
static int receivers; /* receiver threads alive, under cache_lock */

/* The process id, asked once (a system call per request otherwise); a forked child asks again. */
static uint32_t my_pid;
static void pid_forget(void) { __atomic_store_n(&my_pid, 0, __ATOMIC_RELAXED); }
static void pid_atfork(void) { pthread_atfork(NULL, NULL, pid_forget); }

static uint64_t next_id(void) {
  static uint64_t counter;
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  uint32_t pid = __atomic_load_n(&my_pid, __ATOMIC_RELAXED);
  if (!pid) {
    pthread_once(&once, pid_atfork);
    __atomic_store_n(&my_pid, pid = (uint32_t)getpid(), __ATOMIC_RELAXED);
  }
  return ((uint64_t)pid << 32) | (__atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED) & 0xffffffffu);
}

/* Under c->lock: the connection is dead (err says why); every waiter not being filled fails
 * now, the receiver's next read fails, and no new request starts on it. */
static void kill_locked(rio_conn *c, int err) {
  if (!c->dead) {
    c->dead = 1;
    c->err = err ? err : ECONNRESET;
    shutdown(c->link.fd, SHUT_RDWR);
    pthread_cond_broadcast(&c->send_cond);
    c->outq_head = c->outq_len = 0; /* never sent: their requests fail below or in the sweep */
  }
  for (rio_req **pp = &c->pending; *pp;) {
    rio_req *r = *pp;
    if (r->state == WAITING && !r->aio) { /* submitted ones: the receiver's sweep, once it ends */
      r->state = DONE;
      r->err = c->err;
      *pp = r->next;
    } else {
      pp = &r->next;
    }
  }
  pthread_cond_broadcast(&c->cond);
}

static void conn_kill(rio_conn *c, int err) {
  pthread_mutex_lock(&c->lock);
  kill_locked(c, err);
  pthread_mutex_unlock(&c->lock);
}

void rio_conn_put(rio_conn *c) {
  pthread_mutex_lock(&cache_lock);
  pthread_mutex_lock(&c->lock);
  int last = --c->refs == 0;
  pthread_mutex_unlock(&c->lock);
  if (last)
    for (rio_conn **pp = &cache; *pp; pp = &(*pp)->next)
      if (*pp == c) {
        *pp = c->next;
        break;
      }
  pthread_mutex_unlock(&cache_lock);
  if (!last) return;
  rio_link_close(&c->link);
  pthread_mutex_destroy(&c->lock);
  pthread_mutex_destroy(&c->send_lock);
  pthread_cond_destroy(&c->cond);
  pthread_cond_destroy(&c->send_cond);
  free(c->rx);
  free(c->outq);
  free(c);
}

/* The end of a receiver or sender thread: drop its connection reference and let finalize
 * (which waits for receivers to reach 0) go on. */
static void *thread_gone(rio_conn *c) {
  rio_conn_put(c);
  pthread_mutex_lock(&cache_lock);
  receivers--;
  pthread_cond_broadcast(&rx_cond);
  pthread_mutex_unlock(&cache_lock);
  return NULL;
}

/* ---- the send queue: many frames per system call ------------------------------------------------
 * Pipelined requests are mostly made while the receiver handles a burst of replies (each
 * completion lets the caller make the next request). Such a frame without data is copied into
 * the queue instead of being sent: the receiver sends the whole queue with one system call
 * before it next waits, so the frame leaves within that burst, and the server reads the burst
 * of frames with one call too. A frame is queued only while the receiver is awake or the queue
 * is not empty (then whoever sends next sends it first, keeping the order); otherwise, and for
 * frames with data, the caller sends as before, the queued frames first. Also queued: frames
 * made while QUEUE_BEHIND submitted requests are in flight. Their replies are coming (the
 * queue was empty when the receiver last waited, so those requests are on the wire), the
 * receiver wakes for the first of them and sends the queue, and the server would have read
 * the new frame only after theirs anyway; the application's thread then makes no system call
 * per request (a loopback send costs the server's receive processing too). The receiver never
 * blocks on a send (the server may be blocked sending to it): it sends without waiting and
 * polls for room, or leaves the queue to the thread that holds the send lock. */

/* Under c->lock: copy the frame into the queue when the rules allow. 1 when queued. */
static int queue_frame(rio_conn *c, const uint8_t *hb, const void *body, size_t blen) {
  int soon = c->rx_awake || c->outq_len > c->outq_head || c->naio >= QUEUE_BEHIND;
  if (!c->outq || !soon || c->outq_len + RIO_HDR_SIZE + blen > OUTQ_CAP) return 0;
  memcpy(c->outq + c->outq_len, hb, RIO_HDR_SIZE);
  if (blen) memcpy(c->outq + c->outq_len + RIO_HDR_SIZE, body, blen);
  c->outq_len += RIO_HDR_SIZE + blen;
  return 1;
}

/* Under c->lock: n bytes of the queue have left (unless the connection died meanwhile and
 * kill_locked emptied the queue). */
static void queue_sent(rio_conn *c, size_t n) {
  if (c->dead) return;
  c->outq_head += n;
  if (c->outq_head == c->outq_len) c->outq_head = c->outq_len = 0;
}

/* Send v (cnt iovecs; v[0] is a free slot) after the queued frames, then whatever has been
 * queued meanwhile, holding the send lock. 0 or an errno. */
static int send_direct(rio_conn *c, struct iovec *v, int cnt) {
  int e = 0;
  pthread_mutex_lock(&c->send_lock);
  for (int first = 1; !e; first = 0) {
    pthread_mutex_lock(&c->lock);
    size_t h = c->outq_head, n = c->outq_len - h;
    c->sending = first || n > 0;
    pthread_mutex_unlock(&c->lock);
    if (!first && !n) break;
    v[0] = (struct iovec){c->outq ? c->outq + h : NULL, n};
    e = rio_link_xfer(&c->link, 1, v, first ? cnt : 1, c->timeout_ms);
    pthread_mutex_lock(&c->lock);
    if (!e) queue_sent(c, n);
    pthread_mutex_unlock(&c->lock);
  }
  pthread_mutex_lock(&c->lock);
  c->sending = 0;
  pthread_mutex_unlock(&c->lock);
  pthread_mutex_unlock(&c->send_lock);
  return e;
}

/* The receiver's send of the queue, never waiting: 0 when it is empty, 1 when the socket is
 * full (poll for POLLOUT), 2 when another thread holds the send lock. */
static int queue_flush_nowait(rio_conn *c) {
  if (pthread_mutex_trylock(&c->send_lock)) return 2;
  int st = 0;
  for (;;) {
    pthread_mutex_lock(&c->lock);
    size_t h = c->outq_head, n = c->outq_len - h;
    int dead = c->dead;
    pthread_mutex_unlock(&c->lock);
    if (!n || dead) break;
    ssize_t k = send(c->link.fd, c->outq + h, n, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      st = 1;
      break;
    }
    if (k <= 0) {
      conn_kill(c, k == 0 || errno == EPIPE ? ECONNRESET : errno);
      break;
    }
    pthread_mutex_lock(&c->lock);
    queue_sent(c, (size_t)k);
    pthread_mutex_unlock(&c->lock);
  }
  pthread_mutex_unlock(&c->send_lock);
  return st;
}

/* The receiver has read bytes and handles them: frames made meanwhile may wait for it. */
static void rx_wake(rio_conn *c) {
  if (!c->outq) return;
  pthread_mutex_lock(&c->lock);
  c->rx_awake = 1;
  pthread_mutex_unlock(&c->lock);
}

/* Before the receiver may wait for the socket: the queue leaves first (or is left to the
 * thread that holds the send lock and will look at it again). POLLOUT when bytes are left for
 * lack of room in the socket, else 0. */
static short rx_before_wait(rio_conn *c) {
  if (!c->outq) return 0;
  pthread_mutex_lock(&c->lock);
  c->rx_awake = 0; /* from now on a frame is queued only behind others */
  pthread_mutex_unlock(&c->lock);
  for (;;) {
    int st = queue_flush_nowait(c);
    if (st == 1) return POLLOUT;
    pthread_mutex_lock(&c->lock);
    int left = c->outq_len > c->outq_head && !c->dead, other = c->sending;
    pthread_mutex_unlock(&c->lock);
    if (!left || (st == 2 && other)) return 0;
    if (st == 2) sched_yield(); /* the holder is past its last look: it lets go at once */
  }
}

/* ---- the receiver's input: read ahead into c->rx ---------------------------------------------- */

static size_t rx_have(const rio_conn *c) { return c->rx_len - c->rx_pos; }

/* Fill dst (cnt iovecs, modified; dst[cnt] is a spare slot) with the next bytes of the stream:
 * those read ahead first, then straight from the socket into dst, with whatever has arrived
 * after them read ahead into c->rx by the same call. */
static int rx_read(rio_conn *c, struct iovec *dst, int cnt, long long ms) {
  size_t need = 0;
  while (cnt > 0 && rx_have(c) > 0) {
    size_t k = dst->iov_len < rx_have(c) ? dst->iov_len : rx_have(c);
    memcpy(dst->iov_base, c->rx + c->rx_pos, k);
    c->rx_pos += k;
    rio_iov_advance(&dst, &cnt, k);
  }
  for (int i = 0; i < cnt; i++) need += dst[i].iov_len;
  if (need == 0) return 0;
  c->rx_pos = c->rx_len = 0;
  dst[cnt] = (struct iovec){c->rx, RX_CAP};
  size_t got;
  rx_before_wait(c); /* the rest of this reply may be slow to come */
  int e = rio_link_xfer_some(&c->link, 0, dst, cnt + 1, need, ms, &got);
  if (!e) c->rx_len = got - need;
  rx_wake(c);
  return e;
}

/* Read and drop n bytes. */
static int rx_skip(rio_conn *c, uint64_t n, long long ms) {
  while (n > 0) {
    if (rx_have(c) == 0) {
      struct iovec v = {c->rx, RX_CAP};
      c->rx_pos = c->rx_len = 0;
      rx_before_wait(c);
      int e = rio_link_xfer_some(&c->link, 0, &v, 1, 1, ms, &c->rx_len);
      rx_wake(c);
      if (e) return e;
    }
    size_t k = rx_have(c) < n ? rx_have(c) : (size_t)n;
    c->rx_pos += k;
    n -= k;
  }
  return 0;
}

/* Tracing on: one span per request, its wire id as the flow, which the server's events of
 * the same request carry too (pario trace merge draws the arrow); a submitted request's on the
 * receiver's thread. */
static void req_span(const rio_req *r) {
  static const char *const names[RIO_T_MAX + 1] = {"", "rio HELLO", "rio AUTH", "rio PING", "rio OPEN",
      "rio CLOSE", "rio DELETE", "rio STAT", "rio SET_SIZE", "rio PREALLOCATE", "rio SYNC", "rio READ",
      "rio WRITE", "rio LOCK", "rio COUNTER", "rio ERROR", "rio CHECKSUM"};
  if (r->t0 && r->type <= RIO_T_MAX)
    PARIO_TRACE_SPANX(PARIO_TC_DRIVER, names[r->type], r->t0, r->id, NULL, NULL, PARIO_TA("sent", r->sent),
                      PARIO_TA("received", r->got), PARIO_TA("err", r->err));
}

/* The receiver: the body of the reply h (its status block sb read with the header) into the
 * waiting request. A transport or protocol error is returned (it ends the connection); a
 * status error goes to the waiter. */
static int take_reply(rio_conn *c, const rio_hdr *h, const uint8_t *sb) {
  long long ms = c->timeout_ms;
  rio_req *r;
  pthread_mutex_lock(&c->lock);
  for (r = c->pending; r && r->id != h->id; r = r->next) {}
  if (r) r->state = RECEIVING;
  pthread_mutex_unlock(&c->lock);
  if (!r) return rx_skip(c, h->len - RIO_STATUS, ms); /* e.g. ERROR id 0 */
  unsigned t = h->type & ~RIO_REPLY;
  int e = t != r->type && t != RIO_T_ERROR ? EPROTO : 0;
  int status = RIO_OK;
  uint32_t rest = h->len - RIO_STATUS;
  if (!e) {
    rio_rd rd = rio_rd_init(sb, RIO_STATUS);
    status = rio_get_status(&rd);
    if (status == RIO_OK && t == RIO_T_ERROR) status = RIO_EPROTO;
  }
  if (!e && status != RIO_OK) {
    e = rx_skip(c, rest, ms);
  } else if (!e && r->type == RIO_T_READ) {
    /* the count and the data in one read: the frame's length says how many bytes come */
    uint8_t db[8];
    uint64_t done = rest < 8 ? 0 : rest - 8;
    e = rest < 8 || done > r->want ? EPROTO : 0;
    struct iovec small[10], *v = r->iovcnt + 2 <= 10 ? small : malloc(sizeof *v * (size_t)(r->iovcnt + 2));
    int n = 1;
    if (!e && !v) e = ENOMEM;
    if (!e) {
      v[0] = (struct iovec){db, 8};
      uint64_t left = done;
      for (int i = 0; i < r->iovcnt && left; i++) { /* the first done bytes of the list */
        v[n] = r->iov[i];
        if (v[n].iov_len > left) v[n].iov_len = (size_t)left;
        left -= v[n++].iov_len;
      }
      e = rx_read(c, v, n, ms);
    }
    if (v != small) free(v);
    if (!e && rio_load_u64(db) != done) e = EPROTO;
    r->got = e ? 0 : done;
  } else if (!e) {
    struct iovec v[2] = {{r->fixed, rest}};
    e = rest > sizeof r->fixed ? EPROTO : rx_read(c, v, 1, ms);
    r->fixedn = rest;
  }
  pthread_mutex_lock(&c->lock);
  for (rio_req **pp = &c->pending; *pp; pp = &(*pp)->next)
    if (*pp == r) {
      *pp = r->next;
      break;
    }
  r->state = DONE;
  r->err = e ? e : status == RIO_EAUTH ? EACCES : rio_errno_from_status(status);
  rio_aio *aio = r->aio;
  if (aio) c->naio--;
  pthread_cond_broadcast(&c->cond);
  pthread_mutex_unlock(&c->lock);
  if (aio) req_span(r), rio_aio_part_done(aio); /* r may go with its transfer */
  return e;
}

/* The receiver's deadline for submitted requests (nobody waits for them with a timeout):
 * ETIMEDOUT when one has waited the timeout for its reply and no reply came meanwhile. */
static int aio_overdue(rio_conn *c, uint64_t last_reply) {
  uint64_t now = now_ns(), limit = (uint64_t)c->timeout_ms * 1000000ull;
  int late = 0;
  pthread_mutex_lock(&c->lock);
  for (rio_req *r = c->naio ? c->pending : NULL; r && !late; r = r->next)
    if (r->aio && r->state == WAITING) late = now - (r->since > last_reply ? r->since : last_reply) >= limit;
  pthread_mutex_unlock(&c->lock);
  return late ? ETIMEDOUT : 0;
}

/* The connection has ended: the submitted requests still waiting fail with its error. */
static void aio_sweep(rio_conn *c) {
  rio_req *failed = NULL;
  pthread_mutex_lock(&c->lock);
  for (rio_req **pp = &c->pending; *pp;) {
    rio_req *r = *pp;
    if (r->aio && r->state == WAITING) {
      *pp = r->next;
      r->state = DONE;
      r->err = c->err;
      c->naio--;
      r->next = failed;
      failed = r;
    } else {
      pp = &r->next;
    }
  }
  pthread_mutex_unlock(&c->lock);
  while (failed) {
    rio_req *r = failed;
    failed = r->next; /* read before the request's memory may go with its operation */
    rio_aio_part_done(r->aio);
  }
}

/* How long the receiver sleeps between looks at the submitted requests' deadlines. */
static long long aio_tick(const rio_conn *c) {
  long long ms = c->timeout_ms / 4;
  return ms < 1 ? 1 : ms > 1000 ? 1000 : ms;
}

/* The receiver between bursts: the queue sent, then a wait for replies (and for room to send
 * the rest of the queue) in ticks, looking at the submitted requests' deadlines. 0 when bytes
 * have been read ahead. */
static int rx_idle(rio_conn *c, uint64_t last_reply) {
  short more = rx_before_wait(c);
  for (;;) {
    struct iovec v = {c->rx, RX_CAP};
    c->rx_pos = c->rx_len = 0;
    int e = rio_link_xfer_some(&c->link, 0, &v, 1, 1, 0, &c->rx_len); /* what is there, without waiting */
    if (e != ETIMEDOUT) {
      if (!e) rx_wake(c);
      return e;
    }
    struct pollfd p = {c->link.fd, (short)(POLLIN | more), 0};
    int r = poll(&p, 1, (int)aio_tick(c));
    if (r < 0 && errno != EINTR) return errno;
    if (r == 0 && (e = aio_overdue(c, last_reply)) != 0) return e;
    if (p.revents & POLLOUT) more = rx_before_wait(c);
  }
}

static void *receiver(void *arg) {
  rio_conn *c = arg;
  int e;
  uint64_t last_reply = now_ns();
  for (;;) {
    uint8_t hb[RIO_HDR_SIZE + RIO_STATUS]; /* every reply starts with its status block */
    rio_hdr h;
    /* idle connections wait without limit, looking at the submitted requests' deadlines every
     * tick (a request submitted while this thread sleeps has no other watcher of its
     * deadline); a reply that has begun must keep coming */
    if (rx_have(c) == 0 && (e = rx_idle(c, last_reply)) != 0) break;
    struct iovec v[2] = {{hb, sizeof hb}};
    e = rx_read(c, v, 1, c->timeout_ms);
    if (!e && (rio_hdr_decode(hb, &h) || !(h.type & RIO_REPLY) || h.len < RIO_STATUS ||
               h.len > c->max_request + 4096))
      e = EPROTO;
    if (!e) e = take_reply(c, &h, hb + RIO_HDR_SIZE);
    if (e) break;
    last_reply = now_ns();
  }
  conn_kill(c, e);
  aio_sweep(c);
  return thread_gone(c);
}

/* Put a request on the wire (header, body, then data) and register it for its reply. A
 * failure ends the connection and reaches the waiter through finish(). */
void rio_start(rio_conn *c, rio_req *r, unsigned type, const void *body, size_t blen, const struct iovec *data,
               int datacnt, uint64_t datalen) {
  uint8_t hb[RIO_HDR_SIZE];
  rio_hdr h = {RIO_VERSION, (uint16_t)type, 0, (uint32_t)(blen + datalen), next_id()};
  r->id = h.id;
  r->type = type;
  r->state = WAITING;
  r->err = 0;
  r->t0 = PARIO_TRACE_T0();
  r->sent = blen + datalen;
  r->since = r->aio ? now_ns() : 0;
  rio_hdr_encode(hb, &h);
  pthread_mutex_lock(&c->lock);
  int dead = c->dead, queued = 0;
  if (dead) r->state = DONE, r->err = c->err;
  else r->next = c->pending, c->pending = r, c->naio += r->aio != NULL;
  if (!dead && !datalen) queued = queue_frame(c, hb, body, blen);
  pthread_mutex_unlock(&c->lock);
  if (dead) {
    if (r->aio) rio_aio_part_done(r->aio); /* the receiver has swept already, or never will see it */
    return;
  }
  if (queued) return;
  struct iovec small[16], *v = datacnt + 3 <= 16 ? small : malloc(sizeof *v * (size_t)(datacnt + 3));
  if (!v) {
    conn_kill(c, ENOMEM);
    return;
  }
  v[1] = (struct iovec){hb, sizeof hb};
  v[2] = (struct iovec){(void *)body, blen};
  for (int i = 0; i < datacnt; i++) v[3 + i] = data[i];
  int e = send_direct(c, v, datacnt + 3);
  if (v != small) free(v);
  if (e) conn_kill(c, e == EPIPE ? ECONNRESET : e);
}

/* Wait for r's reply, at most ms without it: then the server is taken for dead. */
int rio_finish(rio_conn *c, rio_req *r, long long ms) {
  uint64_t end = now_ns() + (uint64_t)ms * 1000000ull;
  pthread_mutex_lock(&c->lock);
  while (r->state != DONE) {
    struct timespec ts = {(time_t)(end / 1000000000ull), (long)(end % 1000000000ull)};
    if (pthread_cond_timedwait(&c->cond, &c->lock, &ts) == ETIMEDOUT && r->state != DONE) {
      kill_locked(c, ETIMEDOUT); /* a reply being received ends soon: its socket is shut */
      end = now_ns() + 100000000ull;
    }
  }
  pthread_mutex_unlock(&c->lock);
  req_span(r);
  return r->err;
}

/* One request and its reply on the handle's connection; reply fields land in r->fixed. */
int rio_call(rio_conn *c, rio_req *r, unsigned type, const void *body, size_t blen, long long ms) {
  memset(r, 0, sizeof *r);
  rio_start(c, r, type, body, blen, NULL, 0, 0);
  return rio_finish(c, r, ms);
}

/* Tracing on: the server's clock against this process's, through PING (the exchange with the
 * smallest round trip wins, its half round trip the error bound), so that pario trace merge
 * puts the server's events on rank 0's timeline (docs/trace-format.md, server_clock). A
 * failure only leaves the offset unmeasured. */
static void measure_server_clock(rio_conn *c) {
  int64_t best_rtt = -1, best_off = 0;
  for (int i = 0; i < 8; i++) {
    uint8_t body[8], out[24];
    uint64_t t0 = now_ns();
    rio_store_u64(body, t0);
    if (rio_link_call(&c->link, RIO_T_PING, next_id(), body, sizeof body, out, sizeof out, c->timeout_ms)) return;
    uint64_t t3 = now_ns(), tr = rio_load_u64(out + 8), ts = rio_load_u64(out + 16);
    int64_t rtt = (int64_t)(t3 - t0) - (int64_t)(ts - tr);
    if (best_rtt < 0 || rtt < best_rtt)
      best_rtt = rtt, best_off = (int64_t)(t0 / 2 + t3 / 2) - (int64_t)(tr / 2 + ts / 2);
  }
  char name[300];
  snprintf(name, sizeof name, "server %s:%s", c->host, c->port);
  pario_trace_server_clock(name, best_off, best_rtt / 2 + 1);
}

int rio_conn_get(const rio_where *w, rio_conn **out, char *why, size_t wn) {
  pthread_mutex_lock(&cache_lock);
  for (rio_conn *c = cache; c; c = c->next) {
    pthread_mutex_lock(&c->lock);
    int ok = !c->dead && !strcmp(c->host, w->host) && !strcmp(c->port, w->port) &&
             !strcmp(c->secret_file, w->secret_file) && c->tls == w->tls && !strcmp(c->tls_ca, w->tls_ca) &&
             !strcmp(c->user, w->user);
    if (ok) c->refs++;
    pthread_mutex_unlock(&c->lock);
    if (ok) {
      pthread_mutex_unlock(&cache_lock);
      *out = c;
      return 0;
    }
  }
  rio_conn *c = calloc(1, sizeof *c);
  int e = c ? 0 : ENOMEM;
  if (!e) {
    rio_target t = {.host = w->host, .port = w->port, .tls = w->tls, .tls_ca = w->tls_ca, .user = w->user,
                    .secret_file = w->secret_file, .secret = w->secret, .slen = w->slen,
                    .timeout_ms = w->timeout_ms};
    rio_session s;
    e = rio_login(&c->link, &t, &s, why, wn);
    snprintf(c->host, sizeof c->host, "%s", w->host);
    snprintf(c->port, sizeof c->port, "%s", w->port);
    snprintf(c->secret_file, sizeof c->secret_file, "%s", w->secret_file);
    snprintf(c->tls_ca, sizeof c->tls_ca, "%s", w->tls_ca);
    snprintf(c->user, sizeof c->user, "%s", w->user);
    c->tls = w->tls;
    c->timeout_ms = w->timeout_ms;
    c->version = s.version, c->max_request = s.max_request, c->max_segments = s.max_segments;
    if (!e && PARIO_TRACING()) measure_server_clock(c);
  }
  if (!e) {
    pthread_mutex_init(&c->lock, NULL);
    pthread_mutex_init(&c->send_lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&c->cond, &ca);
    pthread_condattr_destroy(&ca);
    pthread_cond_init(&c->send_cond, NULL);
    c->refs = 2; /* the caller and the receiver */
    pthread_attr_t ta;
    pthread_attr_init(&ta);
    pthread_attr_setdetachstate(&ta, PTHREAD_CREATE_DETACHED);
    pthread_t tid;
    c->rx = malloc(RX_CAP);
    /* TLS and MAC: every frame is sent by its caller (the queue goes out raw) */
    int direct = c->link.ssl || c->link.mac;
    c->outq = direct ? NULL : malloc(OUTQ_CAP);
    e = c->rx && (c->outq || direct) ? pthread_create(&tid, &ta, receiver, c) : ENOMEM;
    pthread_attr_destroy(&ta);
    if (e) {
      free(c->rx);
      free(c->outq);
      rio_link_close(&c->link);
      pthread_mutex_destroy(&c->lock);
      pthread_mutex_destroy(&c->send_lock);
      pthread_cond_destroy(&c->cond);
      pthread_cond_destroy(&c->send_cond);
    } else {
      receivers++;
      c->next = cache;
      cache = c;
    }
  }
  pthread_mutex_unlock(&cache_lock);
  if (e) free(c);
  else *out = c;
  return e;
}

/* ---- the sender thread of submitted writes ---------------------------------------------------
 * It sends the queued writes in order (rio_aio_send, as the caller would), then lets go of each
 * (the submitter's share). It ends with the connection, sending nothing more then (rio_start
 * fails each request with the connection's error). */
static void *sender(void *arg) {
  rio_conn *c = arg;
  pthread_mutex_lock(&c->lock);
  for (;;) {
    while (!c->sendq && !c->dead) pthread_cond_wait(&c->send_cond, &c->lock);
    rio_qnode *a = c->sendq;
    if (!a) break;
    c->sendq = a->next;
    if (!c->sendq) c->sendq_tail = NULL;
    pthread_mutex_unlock(&c->lock);
    rio_aio_send(c, (rio_aio *)a);
    pthread_mutex_lock(&c->lock);
  }
  c->sender = 0;
  pthread_mutex_unlock(&c->lock);
  return thread_gone(c);
}

int rio_queue_send(rio_conn *c, rio_aio *aio) {
  rio_qnode *a = (rio_qnode *)aio;
  pthread_mutex_lock(&cache_lock); /* receivers counts the sender too: finalize waits for it */
  pthread_mutex_lock(&c->lock);
  int e = c->dead ? c->err : 0;
  if (!e && !c->sender) {
    pthread_attr_t ta;
    pthread_t tid;
    pthread_attr_init(&ta);
    pthread_attr_setdetachstate(&ta, PTHREAD_CREATE_DETACHED);
    c->refs++; /* the sender's */
    e = pthread_create(&tid, &ta, sender, c);
    pthread_attr_destroy(&ta);
    if (e) c->refs--;
    else c->sender = 1, receivers++;
  }
  if (!e) {
    a->next = NULL;
    if (c->sendq_tail) c->sendq_tail->next = a;
    else c->sendq = a;
    c->sendq_tail = a;
    pthread_cond_signal(&c->send_cond);
  }
  pthread_mutex_unlock(&c->lock);
  pthread_mutex_unlock(&cache_lock);
  return e;
}

void pario_rio_shutdown(void) {
  pthread_mutex_lock(&cache_lock);
  for (rio_conn *c = cache; c; c = c->next) conn_kill(c, ESHUTDOWN);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += 2;
  while (receivers > 0 && pthread_cond_timedwait(&rx_cond, &cache_lock, &ts) != ETIMEDOUT) {}
  pthread_mutex_unlock(&cache_lock);
}
