/* x-rio:// driver: files on a pario-server (src/rio/PROTOCOL.md; design in docs/remote.md),
 * through a process-wide cache of authenticated TCP or TLS connections. One connection carries
 * any number of requests in flight from any number of threads: senders take turns under a
 * send lock, one receiver thread per connection hands each reply to its waiter by id. Every
 * wait has a deadline (no progress for the timeout); a dead connection fails all its waiters
 * at once, and the next handle to need the server connects again. Submitted transfers (the
 * engine's path for nonblocking operations) have no waiter: the receiver completes them, and
 * a connection's one sender thread sends the large writes among them. */
#include "core/common.h"
#include "driver/rio.h"
#include "rio/checksum.h"
#include "rio/proto.h"
#include "trace/trace.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_TIMEOUT_MS 30000
#define SMALL_REPLY 64 /* the largest fixed reply after the status block (AUTH: 56) */

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* ---- socket I/O with a progress timeout ------------------------------------------------ */

/* A connection's byte stream: a TCP socket (non-blocking), inside TLS when ssl is set. One
 * SSL object is used by the receiver and the senders: each SSL call holds lock, the waiting
 * for the socket happens outside it. */
typedef struct rio_maclink rio_maclink;
typedef struct rio_link {
  int fd;
  SSL *ssl;
  pthread_mutex_t lock;
  rio_maclink *mac; /* records with a MAC after authentication (plain TCP, version 2) */
} rio_link;

static void link_close(rio_link *l);

/* Wait until fd is ready for ev: 0, ETIMEDOUT after ms (-1: no limit), or an errno. */
static int wait_fd(int fd, short ev, long long ms) {
  uint64_t end = ms < 0 ? 0 : now_ns() + (uint64_t)ms * 1000000ull;
  for (;;) {
    int left = -1;
    if (ms >= 0) {
      uint64_t t = now_ns();
      if (t >= end) return ETIMEDOUT;
      uint64_t l = (end - t + 999999) / 1000000;
      left = l > INT_MAX ? INT_MAX : (int)l;
    }
    struct pollfd p = {fd, ev, 0};
    int r = poll(&p, 1, left);
    if (r > 0) return 0; /* readable, writable, or an error the next call reports */
    if (r == 0) return ETIMEDOUT;
    if (errno != EINTR) return errno;
  }
}

/* Send (wr) or receive every byte of iov (modified). ms: the longest wait without progress. */
/* OpenSSL writes to the socket with write(2): where the peer has gone, the SIGPIPE that would
 * kill the process is held back and dropped (what MSG_NOSIGNAL does for plain sockets), unless
 * one was pending already. */
typedef struct nopipe {
  sigset_t old;
  int had;
} nopipe;

static void nopipe_begin(nopipe *n) {
  sigset_t s, p;
  sigemptyset(&s);
  sigaddset(&s, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &s, &n->old);
  sigpending(&p);
  n->had = sigismember(&p, SIGPIPE);
}

static void nopipe_end(nopipe *n) {
  sigset_t s, p;
  sigemptyset(&s);
  sigaddset(&s, SIGPIPE);
  sigpending(&p);
  if (!n->had && sigismember(&p, SIGPIPE)) {
    struct timespec zero = {0, 0};
    while (sigtimedwait(&s, NULL, &zero) < 0 && errno == EINTR) {}
  }
  pthread_sigmask(SIG_SETMASK, &n->old, NULL);
}

static int tls_xfer(rio_link *l, int wr, struct iovec *iov, int cnt, size_t min, long long ms, size_t *got) {
  while (cnt > 0 && *got < min) {
    if (iov->iov_len == 0) {
      iov++, cnt--;
      continue;
    }
    size_t n = 0;
    nopipe np;
    pthread_mutex_lock(&l->lock);
    nopipe_begin(&np);
    ERR_clear_error();
    int ok = wr ? SSL_write_ex(l->ssl, iov->iov_base, iov->iov_len, &n) : SSL_read_ex(l->ssl, iov->iov_base, iov->iov_len, &n);
    int err = ok ? SSL_ERROR_NONE : SSL_get_error(l->ssl, 0), sys = errno;
    nopipe_end(&np);
    pthread_mutex_unlock(&l->lock);
    if (ok) {
      pario_iov_advance(&iov, &cnt, n);
      *got += n;
      continue;
    }
    if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
      int e = wait_fd(l->fd, err == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, ms);
      if (e) return e;
      continue;
    }
    return err == SSL_ERROR_SYSCALL && sys && sys != EAGAIN ? sys : ECONNRESET;
  }
  return 0;
}

/* Send (wr) or receive iov (modified) until at least min bytes have moved (*got counts them):
 * a receive may take more, up to the iovecs' room, so what follows arrives with the same call.
 * ms: the longest wait without progress. */
static int mac_xfer(rio_link *l, int wr, struct iovec *iov, int cnt, size_t min, long long ms, size_t *got);
static int plain_xfer(rio_link *l, int wr, struct iovec *iov, int cnt, size_t min, long long ms, size_t *got);

static int xfer_some(rio_link *l, int wr, struct iovec *iov, int cnt, size_t min, long long ms, size_t *got) {
  *got = 0;
  if (l->ssl) return tls_xfer(l, wr, iov, cnt, min, ms, got);
  if (l->mac) return mac_xfer(l, wr, iov, cnt, min, ms, got);
  return plain_xfer(l, wr, iov, cnt, min, ms, got);
}

static int plain_xfer(rio_link *l, int wr, struct iovec *iov, int cnt, size_t min, long long ms, size_t *got) {
  int fd = l->fd;
  while (cnt > 0 && *got < min) {
    if (iov->iov_len == 0) {
      iov++, cnt--;
      continue;
    }
    int n = cnt < IOV_MAX ? cnt : IOV_MAX;
    ssize_t r;
    if (wr) {
      struct msghdr m;
      memset(&m, 0, sizeof m);
      m.msg_iov = iov;
      m.msg_iovlen = (size_t)n;
      r = sendmsg(fd, &m, MSG_NOSIGNAL);
    } else {
      r = readv(fd, iov, n);
    }
    if (r > 0) {
      pario_iov_advance(&iov, &cnt, (size_t)r);
      *got += (size_t)r;
      continue;
    }
    if (r == 0) return ECONNRESET; /* the server closed the connection */
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return errno;
    int e = wait_fd(fd, wr ? POLLOUT : POLLIN, ms);
    if (e) return e;
  }
  return 0;
}

/* ---- records with a MAC (PROTOCOL.md, version 2): the bytes of both directions travel in
 * records of at most RIO_REC_MAX bytes, each with an HMAC over its sequence number, length and
 * data, so nothing a relay injects, drops, reorders, replays or alters is ever used. */
struct rio_maclink {
  rio_seal tx, rx;
  pthread_mutex_t tx_lock; /* seq and wire order together */
  uint8_t *in, *out;       /* the last verified record's data [pos, len); a record being sent */
  size_t pos, len;
  long long timeout_ms;    /* a record that has begun must keep coming */
  char name[300];          /* host:port, for the message */
};

static int raw_exact(rio_link *l, int wr, void *p, size_t n, long long ms) {
  struct iovec v = {p, n};
  size_t got = 0;
  return plain_xfer(l, wr, &v, 1, SIZE_MAX, ms, &got);
}

static int mac_bad(rio_maclink *m, const char *what) {
  pario_log(1, "x-rio://%s: %s: the connection was tampered with on the path (bytes injected, dropped, "
            "reordered or altered); closing it (use TLS or find what sits between client and server)", m->name, what);
  return EBADMSG;
}

static int mac_read_record(rio_link *l, long long ms) {
  rio_maclink *m = l->mac;
  uint8_t lb[RIO_REC_HDR];
  if (ms == 0) { /* a look without waiting (rx_idle): none begun, or the whole record */
    struct pollfd p = {l->fd, POLLIN, 0};
    if (poll(&p, 1, 0) == 0) return ETIMEDOUT;
    ms = m->timeout_ms;
  }
  int e = raw_exact(l, 0, lb, sizeof lb, ms);
  if (e) return e;
  uint32_t n = (uint32_t)lb[0] | (uint32_t)lb[1] << 8 | (uint32_t)lb[2] << 16 | (uint32_t)lb[3] << 24;
  if (n == 0 || n > RIO_REC_MAX) return mac_bad(m, "a record from the server has an impossible length");
  if ((e = raw_exact(l, 0, m->in, (size_t)n + RIO_TAG, ms))) return e;
  if (!rio_seal_check(&m->rx, m->in, n, m->in + n)) return mac_bad(m, "a record from the server failed its MAC check");
  m->pos = 0, m->len = n;
  return 0;
}

static int mac_send(rio_link *l, struct iovec *iov, int cnt, long long ms, size_t *got) {
  rio_maclink *m = l->mac;
  int e = 0;
  pthread_mutex_lock(&m->tx_lock);
  while (!e && cnt > 0) {
    size_t k = 0;
    while (cnt > 0 && k < RIO_REC_MAX) {
      size_t t = iov->iov_len < RIO_REC_MAX - k ? iov->iov_len : RIO_REC_MAX - k;
      memcpy(m->out + RIO_REC_HDR + k, iov->iov_base, t);
      k += t;
      pario_iov_advance(&iov, &cnt, t);
    }
    if (!k) break;
    for (int i = 0; i < 4; i++) m->out[i] = (uint8_t)(k >> (8 * i));
    if (rio_seal_tag(&m->tx, m->out + RIO_REC_HDR, (uint32_t)k, m->out + RIO_REC_HDR + k)) e = EIO;
    if (!e) e = raw_exact(l, 1, m->out, RIO_REC_HDR + k + RIO_TAG, ms);
    if (!e) *got += k;
  }
  pthread_mutex_unlock(&m->tx_lock);
  return e;
}

/* As xfer_some: a receive hands over what the verified records hold, reading more records
 * while fewer than min bytes have moved. */
static int mac_xfer(rio_link *l, int wr, struct iovec *iov, int cnt, size_t min, long long ms, size_t *got) {
  if (wr) return mac_send(l, iov, cnt, ms, got);
  rio_maclink *m = l->mac;
  while (cnt > 0) {
    if (iov->iov_len == 0) {
      iov++, cnt--;
      continue;
    }
    if (m->pos == m->len) {
      if (*got >= min) break;
      int e = mac_read_record(l, ms);
      if (e) return e;
    }
    size_t k = iov->iov_len < m->len - m->pos ? iov->iov_len : m->len - m->pos;
    memcpy(iov->iov_base, m->in + m->pos, k);
    m->pos += k, *got += k;
    pario_iov_advance(&iov, &cnt, k);
  }
  return 0;
}

static void mac_free(rio_link *l) {
  rio_maclink *m = l->mac;
  if (!m) return;
  rio_seal_free(&m->tx);
  rio_seal_free(&m->rx);
  pthread_mutex_destroy(&m->tx_lock);
  free(m->in);
  free(m->out);
  free(m);
  l->mac = NULL;
}

/* After AUTH: the keys of both directions from the handshake, records from now on. */
static int mac_start(rio_link *l, const char *host, const char *port, long long ms, const uint8_t *secret,
                     size_t slen, const uint8_t ch[RIO_NONCE], const uint8_t nonce[RIO_NONCE]) {
  uint8_t c2s[RIO_TAG], s2c[RIO_TAG];
  rio_maclink *m = calloc(1, sizeof *m);
  if (!m) return ENOMEM;
  m->in = malloc(RIO_REC_MAX + RIO_TAG);
  m->out = malloc(RIO_REC_HDR + RIO_REC_MAX + RIO_TAG);
  int e = m->in && m->out ? 0 : ENOMEM;
  if (!e && rio_kdf(secret, slen, ch, nonce, c2s, s2c)) e = EIO;
  if (!e && rio_seal_init(&m->tx, c2s)) e = EIO;
  if (!e && rio_seal_init(&m->rx, s2c)) rio_seal_free(&m->tx), e = EIO;
  OPENSSL_cleanse(c2s, sizeof c2s);
  OPENSSL_cleanse(s2c, sizeof s2c);
  if (e) return free(m->in), free(m->out), free(m), e;
  pthread_mutex_init(&m->tx_lock, NULL);
  snprintf(m->name, sizeof m->name, "%s:%s", host, port);
  m->timeout_ms = ms;
  l->mac = m;
  return 0;
}

/* Send or receive every byte of iov (modified). */
static int xfer_iov(rio_link *l, int wr, struct iovec *iov, int cnt, long long ms) {
  size_t got;
  return xfer_some(l, wr, iov, cnt, SIZE_MAX, ms, &got);
}

static int read_exact(rio_link *l, void *p, size_t n, long long ms) {
  struct iovec v = {p, n};
  return xfer_iov(l, 0, &v, 1, ms);
}

/* ---- connections ------------------------------------------------------------------------- */

enum { WAITING, RECEIVING, DONE };

typedef struct rio_aio rio_aio;
static void aio_part_done(rio_aio *a);

typedef struct rio_req {
  struct rio_req *next;
  uint64_t id;
  unsigned type;
  int state; /* WAITING; RECEIVING while the receiver fills it (its waiter stays); DONE */
  int err;   /* 0, the errno of a transport failure, or the reply status as an errno */
  /* READ: where the data goes and how much may come; got: the bytes that came. */
  const struct iovec *iov;
  int iovcnt;
  uint64_t want, got;
  uint8_t fixed[SMALL_REPLY]; /* other replies: the fields after the status block */
  uint32_t fixedn;
  uint64_t t0, sent; /* tracing: when it started, bytes of body and data sent */
  rio_aio *aio;      /* a submitted request (driver.h submit): nobody waits, the receiver
                        * completes it; its deadline runs from `since` */
  uint64_t since;
} rio_req;

typedef struct rio_conn {
  struct rio_conn *next; /* in the cache */
  char host[256], port[16], secret_file[512], tls_ca[512];
  char user[RIO_MAX_CRED_NAME + 1]; /* pario_rio_user: the credential's name, "" for none */
  int tls;
  rio_link link;
  long long timeout_ms;       /* progress timeout of the receiver's reads */
  pthread_mutex_t lock;       /* pending, dead, err, refs */
  pthread_cond_t cond;        /* a reply came or the connection died */
  pthread_mutex_t send_lock;  /* one frame at a time on the wire */
  rio_req *pending;
  int naio;                   /* submitted requests in pending: the receiver keeps their time */
  pthread_cond_t send_cond;   /* the sender thread: a queued transfer, or the end */
  rio_aio *sendq, *sendq_tail; /* submitted writes the sender thread puts on the wire */
  int sender;                 /* the sender thread runs (made at the first queued write) */
  int dead, err;
  int refs;                   /* handles using it, and the receiver thread */
  uint64_t max_request;
  uint32_t max_segments;
  uint16_t version;
  uint8_t *rx;                /* the receiver's read-ahead: [rx_pos, rx_len) of RX_CAP bytes */
  size_t rx_pos, rx_len;
  /* Frames without data (READ and the small requests) made while the receiver is handling
   * replies wait here, copied, and leave together (the rules at queue_frame): bytes
   * [outq_head, outq_len) of OUTQ_CAP, under lock; NULL under TLS. */
  uint8_t *outq;
  size_t outq_head, outq_len;
  int rx_awake;               /* the receiver is handling bytes it has read: it sends the queue
                               * before it next waits, so a frame queued now leaves soon */
  int sending;                /* a thread holding send_lock will look at the queue again */
} rio_conn;

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

static void conn_put(rio_conn *c) {
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
  link_close(&c->link);
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
  conn_put(c);
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
    e = xfer_iov(&c->link, 1, v, first ? cnt : 1, c->timeout_ms);
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
    pario_iov_advance(&dst, &cnt, k);
  }
  for (int i = 0; i < cnt; i++) need += dst[i].iov_len;
  if (need == 0) return 0;
  c->rx_pos = c->rx_len = 0;
  dst[cnt] = (struct iovec){c->rx, RX_CAP};
  size_t got;
  rx_before_wait(c); /* the rest of this reply may be slow to come */
  int e = xfer_some(&c->link, 0, dst, cnt + 1, need, ms, &got);
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
      int e = xfer_some(&c->link, 0, &v, 1, 1, ms, &c->rx_len);
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
  if (aio) req_span(r), aio_part_done(aio); /* r may go with its transfer */
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
    aio_part_done(r->aio);
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
    int e = xfer_some(&c->link, 0, &v, 1, 1, 0, &c->rx_len); /* what is there, without waiting */
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
static void start(rio_conn *c, rio_req *r, unsigned type, const void *body, size_t blen,
                  const struct iovec *data, int datacnt, uint64_t datalen) {
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
    if (r->aio) aio_part_done(r->aio); /* the receiver has swept already, or never will see it */
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
static int finish(rio_conn *c, rio_req *r, long long ms) {
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

/* A small frame of the handshake (before the receiver runs): send, then read the reply's
 * body after its status block into out (exactly n bytes). */
static int handshake_call(rio_link *fd, unsigned type, const uint8_t *body, size_t blen, uint8_t *out, size_t n,
                          long long ms) {
  uint8_t hb[RIO_HDR_SIZE], sb[RIO_STATUS];
  rio_hdr h = {RIO_VERSION, (uint16_t)type, 0, (uint32_t)blen, next_id()};
  rio_hdr_encode(hb, &h);
  struct iovec v[2] = {{hb, sizeof hb}, {(void *)body, blen}};
  int e = xfer_iov(fd, 1, v, 2, ms);
  if (!e) e = read_exact(fd, hb, sizeof hb, ms);
  if (!e && !fd->ssl && (hb[0] == 0x15 || hb[0] == 0x16) && hb[1] == 3) e = EPROTONOSUPPORT; /* a TLS record */
  if (!e && (rio_hdr_decode(hb, &h) || !(h.type & RIO_REPLY) || h.len < RIO_STATUS || h.len > 4096)) e = EPROTO;
  if (!e) e = read_exact(fd, sb, sizeof sb, ms);
  if (e) return e;
  rio_rd rd = rio_rd_init(sb, sizeof sb);
  int status = rio_get_status(&rd);
  if (status != RIO_OK || (h.type & ~RIO_REPLY) != type)
    return status == RIO_EAUTH ? EACCES : status != RIO_OK ? rio_errno_from_status(status) : EPROTO;
  if (h.len - RIO_STATUS != n) return EPROTO;
  return read_exact(fd, out, n, ms);
}

/* HELLO and AUTH: both sides prove they know the secret. */
static int authenticate(rio_conn *c, const uint8_t *secret, size_t slen) {
  /* Plain TCP: version 2 with records under a MAC, nothing less (no downgrade to be had);
   * TLS protects the bytes already. */
  int tls = c->link.ssl != NULL;
  rio_hello m = {tls ? 1 : 2, RIO_PROTO_VERSION, tls ? 0 : RIO_HELLO_MAC, {0}, 0, {0}};
  if (c->user[0]) { /* a named credential needs version 2 */
    m.min_version = 2;
    m.name_len = (uint8_t)strlen(c->user);
    memcpy(m.name, c->user, m.name_len);
  }
  uint8_t b[RIO_HELLO_MAX], rep[SMALL_REPLY], mac[RIO_MAC];
  if (rio_random(m.nonce, sizeof m.nonce)) return EIO;
  size_t n = rio_encode_hello(b, sizeof b, &m);
  int e = handshake_call(&c->link, RIO_T_HELLO, b, n, rep, 40, c->timeout_ms);
  if (e) return e;
  rio_rd rd = rio_rd_init(rep, 40);
  c->version = rio_get_u16(&rd);
  rio_get_u16(&rd);
  uint32_t sflags = rio_get_u32(&rd);
  const uint8_t *challenge = rio_get_bytes(&rd, RIO_NONCE);
  if (c->version < m.min_version || c->version > m.max_version || !challenge) return EPROTO;
  if (!tls && !(sflags & RIO_HELLO_MAC)) return EPROTO;
  uint8_t ch[RIO_NONCE];
  memcpy(ch, challenge, sizeof ch);
  if (rio_auth_mac(secret, slen, 0, ch, m.nonce, mac)) return EIO;
  e = handshake_call(&c->link, RIO_T_AUTH, mac, sizeof mac, rep, RIO_MAC + 24, c->timeout_ms);
  if (e) return e;
  rd = rio_rd_init(rep, RIO_MAC + 24);
  const uint8_t *smac = rio_get_bytes(&rd, RIO_MAC);
  c->max_request = rio_get_u64(&rd);
  c->max_segments = rio_get_u32(&rd);
  if (rio_auth_mac(secret, slen, 1, ch, m.nonce, mac)) return EIO;
  if (!smac || !rio_mac_equal(smac, mac)) return EACCES; /* the server does not know the secret */
  if (c->max_request < RIO_MIN_MAX_REQUEST || c->max_segments < 1) return EPROTO;
  return tls ? 0 : mac_start(&c->link, c->host, c->port, c->timeout_ms, secret, slen, ch, m.nonce);
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
    if (handshake_call(&c->link, RIO_T_PING, body, sizeof body, out, sizeof out, c->timeout_ms)) return;
    uint64_t t3 = now_ns(), tr = rio_load_u64(out + 8), ts = rio_load_u64(out + 16);
    int64_t rtt = (int64_t)(t3 - t0) - (int64_t)(ts - tr);
    if (best_rtt < 0 || rtt < best_rtt)
      best_rtt = rtt, best_off = (int64_t)(t0 / 2 + t3 / 2) - (int64_t)(tr / 2 + ts / 2);
  }
  char name[300];
  snprintf(name, sizeof name, "server %s:%s", c->host, c->port);
  pario_trace_server_clock(name, best_off, best_rtt / 2 + 1);
}

/* A TCP connection to host:port within ms. */
static int dial(const char *host, const char *port, long long ms, int *out) {
  struct addrinfo hints, *ai = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  int g = getaddrinfo(host, port, &hints, &ai), e = EHOSTUNREACH;
  if (g) return g == EAI_SYSTEM ? errno : EHOSTUNREACH;
  for (struct addrinfo *a = ai; a; a = a->ai_next) {
    int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      e = errno;
      continue;
    }
    e = connect(fd, a->ai_addr, a->ai_addrlen) == 0 ? 0 : errno;
    if (e == EINPROGRESS && (e = wait_fd(fd, POLLOUT, ms)) == 0) {
      socklen_t sl = sizeof e;
      if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &sl)) e = errno;
    }
    if (!e) {
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      *out = fd;
      break;
    }
    close(fd);
  }
  freeaddrinfo(ai);
  return e;
}

/* TLS over the connected socket: TLS 1.2 or later, the server's certificate verified against
 * ca (or the system's store) and checked to name host (an address as an IP SAN, a name as a
 * DNS name), the handshake within ms. */
static int tls_start(rio_link *l, const char *host, const char *ca, long long ms) {
  SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
  if (!ctx) return ENOMEM;
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
  if (!(*ca ? SSL_CTX_load_verify_locations(ctx, ca, NULL) : SSL_CTX_set_default_verify_paths(ctx))) {
    pario_log(1, "x-rio://%s: cannot load the TLS CA file %s", host, ca);
    SSL_CTX_free(ctx);
    return EACCES;
  }
  l->ssl = SSL_new(ctx);
  SSL_CTX_free(ctx); /* the SSL object keeps its own reference */
  if (!l->ssl) return ENOMEM;
  SSL_set_mode(l->ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_set_fd(l->ssl, l->fd);
  if (!X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(l->ssl), host)) {
    SSL_set_tlsext_host_name(l->ssl, host);
    SSL_set1_host(l->ssl, host);
  }
  for (;;) {
    nopipe np;
    nopipe_begin(&np);
    ERR_clear_error();
    int r = SSL_connect(l->ssl);
    int err = r == 1 ? SSL_ERROR_NONE : SSL_get_error(l->ssl, r);
    nopipe_end(&np);
    if (r == 1) return 0;
    if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
      int e = wait_fd(l->fd, err == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, ms);
      if (e) return e;
      continue;
    }
    long v = SSL_get_verify_result(l->ssl);
    pario_log(1, "x-rio://%s: TLS handshake failed: %s", host,
              v != X509_V_OK ? X509_verify_cert_error_string(v) : ERR_reason_error_string(ERR_peek_error()));
    return v != X509_V_OK ? EACCES : ECONNRESET; /* a certificate refused: access denied */
  }
}

static void link_close(rio_link *l) {
  mac_free(l);
  if (l->ssl) SSL_free(l->ssl);
  l->ssl = NULL;
  close(l->fd);
  pthread_mutex_destroy(&l->lock);
}

/* Settings of one handle (or one DELETE): where, with which secret, how patient. */
typedef struct rio_where {
  char host[256], port[16], secret_file[512];
  int tls;            /* pario_rio_tls */
  char tls_ca[512];   /* pario_rio_tls_ca: "" for the system's CA store */
  char user[RIO_MAX_CRED_NAME + 1]; /* pario_rio_user: "" for the server's "default" */
  const char *path; /* relative to the server's root */
  uint8_t secret[RIO_MAX_SECRET];
  size_t slen;
  long long timeout_ms;
} rio_where;

/* Why a handshake failed, in one line that says what to do. */
static void say_refused(const rio_where *w, int e) {
  const char *hp = w->host, *pt = w->port;
  if (e == EACCES)
    pario_log(1, "x-rio://%s:%s: the server refused the secret in %s%s%s: check that client and server use the same "
              "secret file%s", hp, pt, w->secret_file, w->user[0] ? " for credential " : "", w->user,
              w->user[0] ? " and that the server knows this credential (pario_rio_user)" : "");
  else if (e == EPROTONOSUPPORT)
    pario_log(1, "x-rio://%s:%s: the server speaks TLS: set pario_rio_tls=true (PARIO_RIO_TLS)", hp, pt);
  else if (e == EPROTO && w->tls)
    pario_log(1, "x-rio://%s:%s: no TLS or pario handshake: is the server started without --tls-cert? then unset "
              "pario_rio_tls", hp, pt);
  else if (e == EBUSY)
    pario_log(1, "x-rio://%s:%s: the server refused the connection for load (server busy): try again later or "
              "raise its --max-conns", hp, pt);
}

/* A live connection for w from the cache, or a new one (connected and authenticated). */
static int conn_get(const rio_where *w, rio_conn **out) {
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
  int e = c ? dial(w->host, w->port, w->timeout_ms, &c->link.fd) : ENOMEM;
  if (!e) {
    pthread_mutex_init(&c->link.lock, NULL);
    snprintf(c->host, sizeof c->host, "%s", w->host);
    snprintf(c->port, sizeof c->port, "%s", w->port);
    snprintf(c->secret_file, sizeof c->secret_file, "%s", w->secret_file);
    snprintf(c->tls_ca, sizeof c->tls_ca, "%s", w->tls_ca);
    snprintf(c->user, sizeof c->user, "%s", w->user);
    c->tls = w->tls;
    c->timeout_ms = w->timeout_ms;
    e = w->tls ? tls_start(&c->link, w->host, w->tls_ca, w->timeout_ms) : 0;
    if (!e) e = authenticate(c, w->secret, w->slen);
    if (e) say_refused(w, e);
    if (!e && PARIO_TRACING()) measure_server_clock(c);
    if (e) link_close(&c->link);
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
      link_close(&c->link);
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

void pario_rio_shutdown(void) {
  pthread_mutex_lock(&cache_lock);
  for (rio_conn *c = cache; c; c = c->next) conn_kill(c, ESHUTDOWN);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += 2;
  while (receivers > 0 && pthread_cond_timedwait(&rx_cond, &cache_lock, &ts) != ETIMEDOUT) {}
  pthread_mutex_unlock(&cache_lock);
}

/* ---- handles ------------------------------------------------------------------------------ */

typedef struct rio_fh {
  rio_where w;
  char *name;             /* "host:port/path" as given; w.path points into it */
  int flags;              /* RIO_O_* for the (possibly deferred) OPEN */
  unsigned perm;
  pthread_mutex_t lock;   /* the deferred OPEN happens once */
  rio_conn *conn;         /* NULL until the handle reached the server */
  uint64_t sh;            /* the server's handle, valid on conn only */
  unsigned long long nio; /* READ and WRITE requests sent */
} rio_fh;

static uint32_t rio_flags(int flags) {
  int acc = flags & O_ACCMODE;
  uint32_t f = acc == O_WRONLY ? RIO_O_WRONLY : acc == O_RDWR ? RIO_O_RDWR : RIO_O_RDONLY;
  if (flags & O_CREAT) f |= RIO_O_CREAT;
  if (flags & O_EXCL) f |= RIO_O_EXCL;
  if (flags & O_TRUNC) f |= RIO_O_TRUNC;
  if (flags & O_APPEND) f |= RIO_O_APPEND;
  return f;
}

static const char *setting(const pario_drv_args *a, const char *key, const char *env) {
  const char *v = a && a->hint ? a->hint(a->ctx, key) : NULL;
  if (!v || !*v) v = getenv(env);
  return v && *v ? v : NULL;
}

/* pario_rio_tls's value: 1, 0, or -1 for a word it does not know (never silently off). */
static int tls_word(const char *v) {
  static const char *const on[] = {"true", "yes", "on", "1", "enable"}, *const off[] = {"false", "no", "off", "0", "disable"};
  if (!v) return 0;
  for (int i = 0; i < 5; i++) {
    if (!strcasecmp(v, on[i])) return 1;
    if (!strcasecmp(v, off[i])) return 0;
  }
  return -1;
}

/* The name, the secret and the timeout: hints win over the environment. */
static int configure(rio_where *w, const char *name, const pario_drv_args *a) {
  if (rio_parse_name(name, w->host, sizeof w->host, w->port, sizeof w->port, &w->path)) return EINVAL;
  const char *t = setting(a, "pario_rio_timeout", "PARIO_RIO_TIMEOUT");
  double s = t ? strtod(t, NULL) : 0;
  w->timeout_ms = s > 0 && s < 1e7 ? (long long)(s * 1000) : DEFAULT_TIMEOUT_MS;
  if (w->timeout_ms < 1) w->timeout_ms = 1;
  const char *tls = setting(a, "pario_rio_tls", "PARIO_RIO_TLS"), *ca = setting(a, "pario_rio_tls_ca", "PARIO_RIO_TLS_CA");
  if ((w->tls = tls_word(tls)) < 0) {
    pario_log(1, "x-rio://%s: pario_rio_tls / PARIO_RIO_TLS is '%s': use true/false, yes/no, on/off, 1/0 or "
              "enable/disable", name, tls);
    return EINVAL;
  }
  snprintf(w->tls_ca, sizeof w->tls_ca, "%s", ca ? ca : "");
  const char *user = setting(a, "pario_rio_user", "PARIO_RIO_USER");
  if (user && (!*user || strlen(user) > RIO_MAX_CRED_NAME)) {
    pario_log(1, "x-rio://%s: pario_rio_user / PARIO_RIO_USER must name a credential of 1 to %d characters", name,
              RIO_MAX_CRED_NAME);
    return EINVAL;
  }
  snprintf(w->user, sizeof w->user, "%s", user ? user : "");
  const char *sf = setting(a, "pario_rio_secret_file", "PARIO_RIO_SECRET_FILE");
  if (!sf) {
    pario_log(1, "x-rio://%s: no secret file (hint pario_rio_secret_file or PARIO_RIO_SECRET_FILE)", name);
    return EACCES; /* without the secret the server cannot be reached: access denied */
  }
  snprintf(w->secret_file, sizeof w->secret_file, "%s", sf);
  char why[128];
  int e = rio_read_secret(sf, w->secret, &w->slen, why, sizeof why);
  if (e) pario_log(1, "x-rio://%s: %s %s: %s", name, why, sf, strerror(e));
  return e ? EACCES : 0;
}

/* One request and its reply on the handle's connection; reply fields land in r->fixed. */
static int call(rio_conn *c, rio_req *r, unsigned type, const void *body, size_t blen, long long ms) {
  memset(r, 0, sizeof *r);
  start(c, r, type, body, blen, NULL, 0, 0);
  return finish(c, r, ms);
}

/* The handle on the server: the deferred OPEN, on the first operation that needs it. An
 * OPEN that fails is tried again by the next operation. */
static int ensure(rio_fh *h, rio_conn **c) {
  pthread_mutex_lock(&h->lock);
  int e = 0;
  if (!h->conn) {
    rio_conn *nc;
    e = conn_get(&h->w, &nc);
    if (!e) {
      uint8_t b[RIO_MAX_PATH + 16];
      rio_req r;
      size_t n = rio_encode_open(b, sizeof b, (uint32_t)h->flags, h->perm, h->w.path);
      e = n ? call(nc, &r, RIO_T_OPEN, b, n, h->w.timeout_ms) : ENAMETOOLONG;
      if (!e && r.fixedn != 16) e = EPROTO;
      uint32_t changes = RIO_O_ACCMODE | RIO_O_CREAT | RIO_O_TRUNC | RIO_O_APPEND;
      if (e == EACCES && h->w.user[0] && ((uint32_t)h->flags & changes) != RIO_O_RDONLY)
        pario_log(1, "x-rio://%s:%s/%s: open for writing refused: is credential %s (pario_rio_user) read-only on the "
                  "server?", h->w.host, h->w.port, h->w.path, h->w.user);
      if (e) conn_put(nc);
      else h->sh = rio_load_u64(r.fixed), h->conn = nc;
    }
  }
  *c = h->conn;
  pthread_mutex_unlock(&h->lock);
  return e;
}

static void fh_free(rio_fh *h) {
  pthread_mutex_destroy(&h->lock);
  free(h->name);
  free(h);
}

static int rio_open_ex(const char *path, int flags, unsigned perm, const pario_drv_args *a, void **handle) {
  rio_fh *h = calloc(1, sizeof *h);
  if (!h || !(h->name = strdup(path))) {
    free(h);
    return ENOMEM;
  }
  pthread_mutex_init(&h->lock, NULL);
  int e = configure(&h->w, h->name, a);
  h->flags = (int)rio_flags(flags);
  h->perm = perm;
  rio_conn *c;
  if (!e && !(a && a->defer)) e = ensure(h, &c);
  if (e) fh_free(h);
  else *handle = h;
  return e;
}

static int rio_open(const char *path, int flags, unsigned perm, void **handle) {
  return rio_open_ex(path, flags, perm, NULL, handle);
}

static int rio_close(void *handle) {
  rio_fh *h = handle;
  int e = 0;
  if (h->conn) {
    uint8_t b[8];
    rio_req r;
    rio_store_u64(b, h->sh);
    e = call(h->conn, &r, RIO_T_CLOSE, b, 8, h->w.timeout_ms);
    conn_put(h->conn);
  }
  fh_free(h);
  return e;
}

/* A request whose body is the server handle and nv-1 more numbers. */
static int handle_op(rio_fh *h, unsigned type, int nv, uint64_t a, uint64_t b, rio_req *r) {
  uint64_t v[3] = {h->sh, a, b};
  uint8_t body[24];
  rio_conn *c;
  int e = ensure(h, &c); /* the server handle is known only after the OPEN */
  if (e) return e;
  v[0] = h->sh;
  size_t n = rio_encode_u64s(body, sizeof body, nv, v);
  return call(c, r, type, body, n, h->w.timeout_ms);
}

static int rio_sync(void *handle) {
  rio_req r;
  return handle_op(handle, RIO_T_SYNC, 1, 0, 0, &r);
}

static int rio_truncate(void *handle, off_t size) {
  rio_req r;
  return size < 0 ? EINVAL : handle_op(handle, RIO_T_SET_SIZE, 2, (uint64_t)size, 0, &r);
}

static int rio_allocate(void *handle, off_t offset, off_t len) {
  rio_req r;
  return offset < 0 || len < 0 ? EINVAL : handle_op(handle, RIO_T_PREALLOCATE, 3, (uint64_t)offset, (uint64_t)len, &r);
}

static int rio_size(void *handle, off_t *size) {
  rio_req r;
  int e = handle_op(handle, RIO_T_STAT, 1, 0, 0, &r);
  if (!e && r.fixedn != 8) e = EPROTO;
  if (!e) *size = (off_t)rio_load_u64(r.fixed);
  return e;
}

static int rio_lock(void *handle, int op, off_t offset, off_t len) {
  rio_fh *h = handle;
  rio_conn *c;
  rio_req r;
  uint8_t b[40];
  int e = ensure(h, &c);
  if (e) return e;
  rio_lock_req m = {h->sh, (uint32_t)op, (uint64_t)offset, (uint64_t)len};
  return call(c, &r, RIO_T_LOCK, b, rio_encode_lock(b, sizeof b, &m), h->w.timeout_ms);
}

/* Byte-range locks are part of the protocol: every server has them. */
static int rio_lock_probe(void *handle, int op) {
  (void)handle, (void)op;
  return 0;
}

static int rio_counter(void *handle, uint64_t key, int op, int64_t value, int64_t *old) {
  rio_fh *h = handle;
  rio_conn *c;
  rio_req r;
  uint8_t b[40];
  int e = ensure(h, &c);
  if (e) return e;
  rio_counter_req m = {h->sh, key, (uint32_t)op, value};
  e = call(c, &r, RIO_T_COUNTER, b, rio_encode_counter(b, sizeof b, &m), h->w.timeout_ms);
  if (!e && r.fixedn != 8) e = EPROTO;
  if (!e) *old = (int64_t)rio_load_u64(r.fixed);
  return e;
}

/* CHECKSUM piece by piece: each request sums at most max_request bytes on the server and the
 * next continues from its value (PROTOCOL.md), so a huge file never holds a worker long. */
static int rio_checksum(void *handle, unsigned algo, off_t offset, off_t len, uint32_t *value, off_t *bytes) {
  rio_fh *h = handle;
  rio_conn *c;
  int e = ensure(h, &c);
  if (e) return e;
  rio_checksum_req m = {h->sh, algo, rio_sum_start(algo), (uint64_t)offset, 0};
  uint64_t left = (uint64_t)len, total = 0;
  for (;;) {
    uint64_t piece = len == 0 || left > c->max_request ? c->max_request : left;
    uint8_t b[RIO_CHECKSUM_BODY];
    rio_req r;
    m.len = piece;
    e = call(c, &r, RIO_T_CHECKSUM, b, rio_encode_checksum(b, sizeof b, &m), h->w.timeout_ms);
    if (!e && r.fixedn != 16) e = EPROTO;
    if (e) return e;
    uint64_t got = rio_load_u64(r.fixed + 8);
    if (got > piece) return EPROTO;
    m.start = (uint32_t)rio_load_u64(r.fixed);
    m.offset += got, total += got, left -= len ? got : 0;
    if (got == 0 || (len && left == 0)) break; /* not at a short reply: a forwarder's upstream may cap lower */
  }
  *value = m.start;
  *bytes = (off_t)total;
  return 0;
}

static int rio_unlink_ex(const char *path, const pario_drv_args *a) {
  rio_where *w = calloc(1, sizeof *w);
  if (!w) return ENOMEM;
  int e = configure(w, path, a);
  rio_conn *c = NULL;
  if (!e) e = conn_get(w, &c);
  if (!e) {
    uint8_t b[RIO_MAX_PATH + 8];
    rio_req r;
    size_t n = rio_encode_path(b, sizeof b, w->path);
    e = n ? call(c, &r, RIO_T_DELETE, b, n, w->timeout_ms) : ENAMETOOLONG;
    conn_put(c);
  }
  free(w);
  return e;
}

static int rio_unlink(const char *path) { return rio_unlink_ex(path, NULL); }

/* ---- data: READ and WRITE requests -------------------------------------------------------- */

/* One request of a list transfer: its segments (cut where a request ends), its slice of the
 * memory iovecs, and the bytes it moves. */
typedef struct io_part {
  rio_req r;
  uint8_t *body;   /* io header + segments */
  size_t blen;
  struct iovec *mem;
  int memcnt;
  uint64_t bytes;
} io_part;

/* A cursor over the memory iovecs: the next len bytes as iovecs appended to p->mem. */
typedef struct mem_cur {
  const struct iovec *iov;
  int cnt, i;
  size_t off;
} mem_cur;

static int take_mem(mem_cur *m, uint64_t len, io_part *p, int *cap) {
  while (len > 0 && m->i < m->cnt) {
    size_t avail = m->iov[m->i].iov_len - m->off, k = avail < len ? avail : (size_t)len;
    if (k == 0) {
      m->i++, m->off = 0;
      continue;
    }
    struct iovec *last = p->memcnt ? &p->mem[p->memcnt - 1] : NULL;
    char *at = (char *)m->iov[m->i].iov_base + m->off;
    if (last && (char *)last->iov_base + last->iov_len == at) { /* adjacent pieces: one iovec */
      last->iov_len += k;
      m->off += k;
      len -= k;
      continue;
    }
    if (p->memcnt == *cap) {
      int nc = *cap ? 2 * *cap : 16;
      struct iovec *nv = realloc(p->mem, sizeof *nv * (size_t)nc);
      if (!nv) return ENOMEM;
      p->mem = nv, *cap = nc;
    }
    p->mem[p->memcnt++] = (struct iovec){(char *)m->iov[m->i].iov_base + m->off, k};
    m->off += k;
    len -= k;
  }
  return len ? EINVAL : 0; /* memory shorter than the segments */
}

/* Cut segs into requests within the server's limits: at most max_segments segments and a
 * body (and a READ reply) of at most max_request bytes. */
static int plan_parts(const rio_conn *c, uint64_t sh, const pario_seg *segs, int nseg, const struct iovec *mem,
                      int memcnt, io_part **out, int *nparts) {
  uint64_t room_total = c->max_request - RIO_IO_HDR - RIO_STATUS - 8 - RIO_SEG; /* one segment's worth kept */
  uint32_t maxseg = c->max_segments;
  mem_cur m = {mem, memcnt, 0, 0};
  io_part *parts = NULL;
  int np = 0, cap = 0, e = 0, s = 0;
  uint64_t used_in_seg = 0; /* bytes of segs[s] already placed */
  while (!e && s < nseg) {
    if (np == cap) {
      int nc = cap ? 2 * cap : 4;
      io_part *pp = realloc(parts, sizeof *pp * (size_t)nc);
      if (!pp) { e = ENOMEM; break; }
      parts = pp, cap = nc;
    }
    io_part *p = &parts[np++];
    memset(p, 0, sizeof *p);
    /* first pass: how many segments (or pieces of one) fit */
    uint64_t room = room_total, bytes = 0;
    int k = 0, t = s;
    uint64_t u = used_in_seg;
    while (t < nseg && (uint32_t)k < maxseg && room >= RIO_SEG) {
      uint64_t left = (uint64_t)segs[t].len - u, take;
      room -= RIO_SEG;
      take = left < room ? left : room;
      if (take == 0 && left > 0) break;
      k++, bytes += take, room -= take;
      if (take < left) { u += take; break; }
      t++, u = 0;
    }
    p->blen = rio_io_hdr_bytes((uint32_t)k);
    p->body = malloc(p->blen);
    if (!p->body) { e = ENOMEM; break; }
    rio_wr w = rio_wr_init(p->body, p->blen);
    uint64_t coll_id;
    uint32_t coll_n;
    pario_drv_coll_next(&coll_id, &coll_n); /* a collective access's parts carry its tag */
    rio_put_io_hdr(&w, sh, coll_id, coll_n, (uint32_t)k);
    int memcap = 0;
    for (int i = 0; i < k && !e; i++) { /* second pass: from (s, used_in_seg) to (t, u) */
      uint64_t take = s == t ? u - used_in_seg : (uint64_t)segs[s].len - used_in_seg;
      rio_put_u64(&w, (uint64_t)segs[s].off + used_in_seg);
      rio_put_u64(&w, take);
      e = take_mem(&m, take, p, &memcap);
      used_in_seg += take;
      if (used_in_seg == (uint64_t)segs[s].len) s++, used_in_seg = 0;
    }
    p->bytes = bytes;
  }
  *out = parts;
  *nparts = np;
  return e;
}

static void free_parts(io_part *parts, int np) {
  for (int i = 0; i < np; i++) {
    free(parts[i].body);
    free(parts[i].mem);
  }
  free(parts);
}

/* A submitted list transfer (driver.h submit): its requests, and what completes it. */
struct rio_aio {
  rio_aio *next;  /* in the connection's send queue */
  rio_fh *h;
  int wr, np;
  io_part *parts;
  int left; /* requests not done yet, plus one while the submitter is still sending */
  void (*done)(void *arg, int err, size_t bytes);
  void *arg;
};

/* Put every request of a list transfer on the wire before any reply is awaited, so the server
 * works on one while the next travels. */
static void send_parts(rio_fh *h, rio_conn *c, int wr, io_part *parts, int np, rio_aio *a) {
  for (int i = 0; i < np; i++) {
    io_part *p = &parts[i];
    p->r.aio = a;
    if (!wr) p->r.iov = p->mem, p->r.iovcnt = p->memcnt, p->r.want = p->bytes;
    start(c, &p->r, wr ? RIO_T_WRITE : RIO_T_READ, p->body, p->blen, wr ? p->mem : NULL, wr ? p->memcnt : 0,
          wr ? p->bytes : 0);
  }
  __atomic_add_fetch(&h->nio, (unsigned long long)np, __ATOMIC_RELAXED);
}

/* The result of a list transfer whose requests are all done: the first error, and the bytes
 * in segment order up to the first short read (end of file). */
static int collect(int wr, const io_part *parts, int np, size_t *done) {
  int e = 0, short_read = 0;
  *done = 0;
  for (int i = 0; i < np; i++) {
    const io_part *p = &parts[i];
    int pe = p->r.err;
    uint64_t got = wr ? (p->r.fixedn == 8 ? rio_load_u64(p->r.fixed) : 0) : p->r.got;
    if (!pe && wr && (p->r.fixedn != 8 || got != p->bytes)) pe = p->r.fixedn != 8 ? EPROTO : EIO;
    if (!e) e = pe;
    if (!e && !short_read) *done += (size_t)got;
    if (got < p->bytes) short_read = 1; /* end of file: nothing after it counts */
  }
  return e;
}

/* One request of a submitted transfer is done (or the submitter has sent them all): the last
 * one completes the transfer. The memory of the requests goes with it. */
static void aio_part_done(rio_aio *a) {
  if (__atomic_sub_fetch(&a->left, 1, __ATOMIC_ACQ_REL) != 0) return;
  size_t done;
  int e = collect(a->wr, a->parts, a->np, &done);
  free_parts(a->parts, a->np);
  void (*cb)(void *, int, size_t) = a->done;
  void *arg = a->arg;
  free(a);
  cb(arg, e, done);
}

/* Segments as the driver interface allows them: no negative offset or length, no overflow. */
static int check_segs(const pario_seg *segs, int nseg, uint64_t *total) {
  *total = 0;
  for (int i = 0; i < nseg; i++) {
    if (segs[i].off < 0 || segs[i].len < 0 || segs[i].off > INT64_MAX - segs[i].len) return EINVAL;
    *total += (uint64_t)segs[i].len;
  }
  return 0;
}

/* A list transfer, waited for here. */
static int io_list(rio_fh *h, int wr, const pario_seg *segs, int nseg, const struct iovec *mem, int memcnt,
                   size_t *done) {
  rio_conn *c;
  io_part *parts = NULL;
  uint64_t total;
  int np = 0, e = ensure(h, &c);
  *done = 0;
  if (!e) e = check_segs(segs, nseg, &total);
  if (!e) e = plan_parts(c, h->sh, segs, nseg, mem, memcnt, &parts, &np);
  if (e) {
    free_parts(parts, np);
    return e;
  }
  send_parts(h, c, wr, parts, np, NULL);
  for (int i = 0; i < np; i++) /* wait for all: nothing may still point at the caller's memory */
    finish(c, &parts[i].r, h->w.timeout_ms);
  e = collect(wr, parts, np, done);
  free_parts(parts, np);
  return e;
}

/* Writes over this size are put on the wire by the connection's sender thread, so that the
 * caller of a large MPI_File_iwrite goes back to computing at once; smaller requests are sent
 * by the calling thread (a hand-off would cost more than the send). */
#define SUBMIT_INLINE_MAX (64u << 10)

/* The sender thread of a connection: it sends the queued writes in order, each as send_parts
 * would in the caller, then lets go of the transfer (the submitter's share). It ends with the
 * connection, sending nothing more then (start() fails each request with the connection's
 * error). */
static void *sender(void *arg) {
  rio_conn *c = arg;
  pthread_mutex_lock(&c->lock);
  for (;;) {
    while (!c->sendq && !c->dead) pthread_cond_wait(&c->send_cond, &c->lock);
    rio_aio *a = c->sendq;
    if (!a) break;
    c->sendq = a->next;
    if (!c->sendq) c->sendq_tail = NULL;
    pthread_mutex_unlock(&c->lock);
    send_parts(a->h, c, a->wr, a->parts, a->np, a);
    aio_part_done(a);
    pthread_mutex_lock(&c->lock);
  }
  c->sender = 0;
  pthread_mutex_unlock(&c->lock);
  return thread_gone(c);
}

/* Queue a submitted write for the sender thread (made here the first time). 0, or an errno
 * with nothing queued. */
static int queue_send(rio_conn *c, rio_aio *a) {
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

/* driver.h submit: the requests are sent now, by the calling thread or (large writes) the
 * connection's sender thread; the receiver completes the transfer when the last reply has
 * come (or the connection has died). */
static int rio_submit(void *handle, int rw, const pario_seg *segs, int nseg, const struct iovec *mem, int memcnt,
                      void (*done)(void *arg, int err, size_t bytes), void *arg) {
  rio_fh *h = handle;
  rio_conn *c;
  io_part *parts = NULL;
  uint64_t total;
  int np = 0, e = check_segs(segs, nseg, &total);
  if (e) return e;
  rio_aio *a = calloc(1, sizeof *a);
  if (!a) return ENOMEM;
  e = ensure(h, &c); /* a deferred OPEN: a round trip, once per handle */
  if (!e) e = plan_parts(c, h->sh, segs, nseg, mem, memcnt, &parts, &np);
  if (!e) {
    *a = (rio_aio){NULL, h, rw != 0, np, parts, np + 1, done, arg};
    if (rw && total > SUBMIT_INLINE_MAX) {
      if ((e = queue_send(c, a)) == 0) return 0; /* the sender thread holds the share now */
    } else {
      send_parts(h, c, rw != 0, parts, np, a);
      aio_part_done(a); /* the submitter's share: from now on the replies complete it */
      return 0;
    }
  }
  free_parts(parts, np);
  free(a);
  return e;
}

static int rio_preadl(void *h, const pario_seg *segs, int nseg, const struct iovec *mem, int memcnt, size_t *done) {
  return io_list(h, 0, segs, nseg, mem, memcnt, done);
}

static int rio_pwritel(void *h, const pario_seg *segs, int nseg, const struct iovec *mem, int memcnt, size_t *done) {
  return io_list(h, 1, segs, nseg, mem, memcnt, done);
}

static int contig(void *h, int wr, const struct iovec *iov, int cnt, off_t offset, size_t *done) {
  size_t total = 0;
  for (int i = 0; i < cnt; i++) total += iov[i].iov_len;
  pario_seg s = {offset, (off_t)total};
  *done = 0;
  return total ? io_list(h, wr, &s, 1, iov, cnt, done) : 0;
}

static int rio_preadv(void *h, const struct iovec *iov, int cnt, off_t offset, size_t *done) {
  return contig(h, 0, iov, cnt, offset, done);
}

static int rio_pwritev(void *h, const struct iovec *iov, int cnt, off_t offset, size_t *done) {
  return contig(h, 1, iov, cnt, offset, done);
}

void pario_rio_describe(void *handle, pario_rio_info *out) {
  rio_fh *h = handle;
  memset(out, 0, sizeof *out);
  snprintf(out->server, sizeof out->server, strchr(h->w.host, ':') ? "[%s]:%s" : "%s:%s", h->w.host, h->w.port);
  snprintf(out->secret_file, sizeof out->secret_file, "%s", h->w.secret_file);
  snprintf(out->tls_ca, sizeof out->tls_ca, "%s", h->w.tls_ca);
  out->tls = h->w.tls;
  out->timeout_ms = h->w.timeout_ms;
  out->requests = __atomic_load_n(&h->nio, __ATOMIC_RELAXED);
  pthread_mutex_lock(&h->lock);
  out->connected = h->conn != NULL;
  out->version = h->conn ? h->conn->version : RIO_PROTO_VERSION;
  pthread_mutex_unlock(&h->lock);
}

const pario_driver pario_driver_rio = {
    .name = "rio",
    .open = rio_open,
    .close = rio_close,
    .preadv = rio_preadv,
    .pwritev = rio_pwritev,
    .sync = rio_sync,
    .truncate = rio_truncate,
    .allocate = rio_allocate,
    .size = rio_size,
    .lock = rio_lock,
    .lock_probe = rio_lock_probe,
    .unlink = rio_unlink,
    .remote = 1,
    .hint_prefix = "pario_rio_",
    .io_threads = 16, /* nonblocking collectives of a file the engine's workers run at once (the
                         others are submitted); seed 004 allowed 64 */
    .list_window = 16 << 20, /* a request per 16 MiB of an access: one round trip, not 32 */
    .open_ex = rio_open_ex,
    .unlink_ex = rio_unlink_ex,
    .preadl = rio_preadl,
    .pwritel = rio_pwritel,
    .counter = rio_counter,
    .submit = rio_submit,
    .checksum = rio_checksum,
};

__attribute__((constructor)) static void rio_register(void) { pario_driver_register("x-rio://", &pario_driver_rio); }
