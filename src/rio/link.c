/* The client's transport to a pario-server (link.h): sockets with deadlines, TLS, and the MAC
 * records of version 2 over them. */
#include "rio/link.h"

#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* Wait until fd is ready for ev (POLLIN, POLLOUT): 0, ETIMEDOUT after ms (-1: no limit), or an errno. */
static int rio_wait_fd(int fd, short ev, long long ms) {
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

/* ---- TLS ------------------------------------------------------------------------------------
 * OpenSSL writes to the socket with write(2): where the peer has gone, the SIGPIPE that would
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
      rio_iov_advance(&iov, &cnt, n);
      *got += n;
      continue;
    }
    if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
      int e = rio_wait_fd(l->fd, err == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, ms);
      if (e) return e;
      continue;
    }
    return err == SSL_ERROR_SYSCALL && sys && sys != EAGAIN ? sys : ECONNRESET;
  }
  return 0;
}

/* The first bytes the server sent during the TLS handshake, kept: a server that refuses for
 * load answers with a plain ERROR frame, a plain server with one too, and the client then says
 * what the frame said instead of OpenSSL's "wrong version number". */
static long keep_first(BIO *b, int op, const char *argp, size_t len, int argi, long argl, int ret, size_t *done) {
  (void)len, (void)argi, (void)argl;
  rio_link *l = (rio_link *)BIO_get_callback_arg(b);
  if (op == (BIO_CB_READ | BIO_CB_RETURN) && ret > 0 && l && done && *done > 0 && l->nfirst < sizeof l->first) {
    size_t k = *done < sizeof l->first - l->nfirst ? *done : sizeof l->first - l->nfirst;
    memcpy(l->first + l->nfirst, argp, k);
    l->nfirst += k;
  }
  return ret;
}

/* What the server's answer to the TLS handshake says, in why: EBUSY (a plain ERROR frame
 * refusing for load), EPROTONOSUPPORT (another plain frame, or the connection closed without a
 * byte: what a plain pario-server does with a ClientHello), or 0 (TLS that failed otherwise).
 * OpenSSL read only a record header: the rest of a frame the server sent is read here. */
static int plain_answer(rio_link *l, const char *host, const rio_names *nm, char *why, size_t wn) {
  rio_hdr h;
  while (l->nfirst > 0 && l->nfirst < RIO_HDR_SIZE + RIO_STATUS && rio_wait_fd(l->fd, POLLIN, 200) == 0) {
    ssize_t r = recv(l->fd, l->first + l->nfirst, sizeof l->first - l->nfirst, MSG_DONTWAIT);
    if (r <= 0) break;
    l->nfirst += (size_t)r;
  }
  int frame = l->nfirst >= RIO_HDR_SIZE + RIO_STATUS && !rio_hdr_decode(l->first, &h) && (h.type & RIO_REPLY);
  if (!frame && l->nfirst > 0) return 0;
  rio_rd r = rio_rd_init(l->first + RIO_HDR_SIZE, frame ? l->nfirst - RIO_HDR_SIZE : 0);
  if (frame && rio_get_status(&r) == RIO_EBUSY) {
    snprintf(why, wn, "%s refused the connection for load (server busy): try again later or raise its --max-conns",
             host);
    return EBUSY;
  }
  snprintf(why, wn, "%s %s, not TLS: %s (or start the server with --tls-cert)", host,
           frame ? "answered in plain TCP" : "closed the connection at the TLS handshake", nm->tls_off);
  return EPROTONOSUPPORT;
}

const rio_names rio_names_driver = {"set pario_rio_tls=true (PARIO_RIO_TLS)", "unset pario_rio_tls", "pario_rio_tls_ca",
                                    "pario_rio_user", "pario_rio_secret_file"};

int rio_link_tls(rio_link *l, const char *host, const char *ca, long long ms, const rio_names *nm, char *why,
                 size_t wn) {
  SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
  if (!ctx) return ENOMEM;
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
  if (!(*ca ? SSL_CTX_load_verify_locations(ctx, ca, NULL) : SSL_CTX_set_default_verify_paths(ctx))) {
    snprintf(why, wn, "cannot load the TLS CA file %s: check %s", ca, nm->ca);
    SSL_CTX_free(ctx);
    return EACCES;
  }
  l->ssl = SSL_new(ctx);
  SSL_CTX_free(ctx); /* the SSL object keeps its own reference */
  if (!l->ssl) return ENOMEM;
  SSL_set_mode(l->ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_set_fd(l->ssl, l->fd);
  BIO *rb = SSL_get_rbio(l->ssl);
  BIO_set_callback_arg(rb, (char *)l);
  BIO_set_callback_ex(rb, keep_first);
  if (!X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(l->ssl), host)) {
    SSL_set_tlsext_host_name(l->ssl, host);
    SSL_set1_host(l->ssl, host);
  }
  int e = 0;
  for (;;) {
    nopipe np;
    nopipe_begin(&np);
    ERR_clear_error();
    int r = SSL_connect(l->ssl);
    int err = r == 1 ? SSL_ERROR_NONE : SSL_get_error(l->ssl, r);
    nopipe_end(&np);
    if (r == 1) break;
    if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
      if ((e = rio_wait_fd(l->fd, err == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, ms)) == 0) continue;
      snprintf(why, wn, "no TLS handshake from %s within the timeout: is it a pario-server with --tls-cert?", host);
      break;
    }
    long v = SSL_get_verify_result(l->ssl);
    if (v != X509_V_OK) {
      snprintf(why, wn, "the TLS certificate of %s was refused (%s): check %s", host,
               X509_verify_cert_error_string(v), nm->ca);
      e = EACCES; /* a certificate refused: access denied */
    } else if ((e = plain_answer(l, host, nm, why, wn)) == 0) {
      unsigned long ossl = ERR_peek_error();
      snprintf(why, wn, "TLS handshake with %s failed (%s): is it a pario-server with --tls-cert?", host,
               ossl ? ERR_reason_error_string(ossl) : "not TLS");
      e = ECONNRESET;
    }
    break;
  }
  BIO_set_callback_ex(rb, NULL);
  return e;
}

/* ---- plain TCP and the records over it -------------------------------------------------------- */
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
      rio_iov_advance(&iov, &cnt, (size_t)r);
      *got += (size_t)r;
      continue;
    }
    if (r == 0) return ECONNRESET; /* the server closed the connection */
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return errno;
    int e = rio_wait_fd(fd, wr ? POLLOUT : POLLIN, ms);
    if (e) return e;
  }
  return 0;
}

typedef struct raw_ctx {
  rio_link *l;
  int wr;
  long long ms;
} raw_ctx;

static int raw_exact(void *ctx, void *p, size_t n) {
  raw_ctx *x = ctx;
  struct iovec v = {p, n};
  size_t got = 0;
  return plain_xfer(x->l, x->wr, &v, 1, SIZE_MAX, x->ms, &got);
}

static int mac_xfer(rio_link *l, int wr, struct iovec *iov, int cnt, size_t min, long long ms, size_t *got) {
  raw_ctx x = {l, wr, ms};
  if (wr) return rio_rec_send(l->mac, iov, cnt, raw_exact, &x, got);
  if (ms == 0 && rio_rec_buffered(l->mac) == 0) { /* a look without waiting: none begun, or a whole record */
    struct pollfd p = {l->fd, POLLIN, 0};
    if (poll(&p, 1, 0) == 0) return ETIMEDOUT;
    x.ms = l->rec_ms;
  }
  return rio_rec_recv(l->mac, iov, cnt, min, raw_exact, &x, got);
}

int rio_link_xfer_some(rio_link *l, int wr, struct iovec *iov, int cnt, size_t min, long long ms, size_t *got) {
  *got = 0;
  if (l->ssl) return tls_xfer(l, wr, iov, cnt, min, ms, got);
  if (l->mac) return mac_xfer(l, wr, iov, cnt, min, ms, got);
  return plain_xfer(l, wr, iov, cnt, min, ms, got);
}

int rio_link_xfer(rio_link *l, int wr, struct iovec *iov, int cnt, long long ms) {
  size_t got;
  return rio_link_xfer_some(l, wr, iov, cnt, SIZE_MAX, ms, &got);
}

int rio_link_read(rio_link *l, void *p, size_t n, long long ms) {
  struct iovec v = {p, n};
  return rio_link_xfer(l, 0, &v, 1, ms);
}

int rio_link_mac_start(rio_link *l, const uint8_t *secret, size_t slen, const uint8_t challenge[RIO_NONCE],
                       const uint8_t nonce[RIO_NONCE]) {
  uint8_t c2s[RIO_TAG], s2c[RIO_TAG];
  int e = rio_kdf(secret, slen, challenge, nonce, c2s, s2c) ? EIO : rio_rec_new(&l->mac, c2s, s2c);
  OPENSSL_cleanse(c2s, sizeof c2s);
  OPENSSL_cleanse(s2c, sizeof s2c);
  return e;
}

/* ---- connect and close ---------------------------------------------------------------------- */
int rio_link_dial(rio_link *l, const char *host, const char *port, long long ms, char *why, size_t wn) {
  struct addrinfo hints, *ai = NULL;
  memset(l, 0, sizeof *l);
  l->fd = -1;
  l->rec_ms = ms;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  int g = getaddrinfo(host, port, &hints, &ai), e = EHOSTUNREACH;
  if (g) {
    snprintf(why, wn, "cannot resolve %s: %s", host, gai_strerror(g));
    return g == EAI_SYSTEM ? errno : EHOSTUNREACH;
  }
  for (struct addrinfo *a = ai; a; a = a->ai_next) {
    int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      e = errno;
      continue;
    }
    e = connect(fd, a->ai_addr, a->ai_addrlen) == 0 ? 0 : errno;
    if (e == EINPROGRESS && (e = rio_wait_fd(fd, POLLOUT, ms)) == 0) {
      socklen_t sl = sizeof e;
      if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &sl)) e = errno;
    }
    if (!e) {
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      l->fd = fd;
      break;
    }
    close(fd);
  }
  freeaddrinfo(ai);
  if (e) {
    snprintf(why, wn, "cannot connect to %s:%s (%s): is a pario-server listening there?", host, port,
             e == ETIMEDOUT ? "no answer within the timeout" : strerror(e));
    return e;
  }
  pthread_mutex_init(&l->lock, NULL);
  return 0;
}

void rio_link_close(rio_link *l) {
  if (l->fd < 0) return;
  rio_rec_free(l->mac);
  l->mac = NULL;
  if (l->ssl) SSL_free(l->ssl);
  l->ssl = NULL;
  close(l->fd);
  l->fd = -1;
  pthread_mutex_destroy(&l->lock);
}
