/* Optional TLS (--tls-cert/--tls-key, OpenSSL, TLS 1.2+). The reader and the workers share one
 * SSL object, which OpenSSL does not allow from two threads at once: each SSL_read/SSL_write runs
 * under a per-connection lock on a non-blocking socket, and the waiting is done outside it. */
#include <errno.h>
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "server.h"

typedef struct tls_conn {
  SSL *ssl;
  pthread_mutex_t mu;
} tls_conn;

static const char *ssl_why(void) {
  static __thread char buf[160];
  unsigned long e = ERR_get_error();
  ERR_error_string_n(e, buf, sizeof buf);
  return e ? buf : "unknown TLS error";
}

int srv_tls_init(const char *cert, const char *key, char *why, size_t whylen) {
  SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
  if (!ctx) return snprintf(why, whylen, "SSL_CTX_new: %s", ssl_why()), -1;
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1)
    return snprintf(why, whylen, "--tls-cert %s: %s", cert, ssl_why()), SSL_CTX_free(ctx), -1;
  if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1 || SSL_CTX_check_private_key(ctx) != 1)
    return snprintf(why, whylen, "--tls-key %s: %s", key, ssl_why()), SSL_CTX_free(ctx), -1;
  srv->tls_ctx = ctx;
  return 0;
}

/* Wait until fd is readable (want_read) or writable, up to deadline (0: none). 0 or -1. */
static int wait_fd(int fd, int want_read, uint64_t deadline) {
  for (;;) {
    int ms = -1;
    if (deadline) {
      uint64_t now = srv_now_ns();
      if (now >= deadline) return errno = ETIMEDOUT, -1;
      ms = (int)((deadline - now) / 1000000 + 1);
    }
    struct pollfd p = {fd, (short)(want_read ? POLLIN : POLLOUT), 0};
    int r = poll(&p, 1, ms);
    if (r > 0) return 0;
    if (r < 0 && errno != EINTR) return -1;
  }
}

/* One SSL_read or SSL_write under the lock: bytes moved, or 0 with *want set (1 read, 2 write),
 * or -1 on an error or the end of the stream. */
static int tls_step(srv_conn *c, void *buf, size_t n, int writing, int *want) {
  tls_conn *t = c->tls;
  pthread_mutex_lock(&t->mu);
  ERR_clear_error();
  int r = writing ? SSL_write(t->ssl, buf, (int)(n > (1u << 30) ? (1u << 30) : n))
                  : SSL_read(t->ssl, buf, (int)(n > (1u << 30) ? (1u << 30) : n));
  int e = r > 0 ? SSL_ERROR_NONE : SSL_get_error(t->ssl, r);
  pthread_mutex_unlock(&t->mu);
  if (r > 0) return r;
  if (e == SSL_ERROR_WANT_READ) return *want = 1, 0;
  if (e == SSL_ERROR_WANT_WRITE) return *want = 2, 0;
  errno = ECONNRESET;
  return -1;
}

static int tls_recv(srv_conn *c, void *buf, size_t n, uint64_t deadline) {
  uint8_t *p = buf;
  while (n > 0) {
    int want = 0, r = tls_step(c, p, n, 0, &want);
    if (r < 0) return -1;
    if (r == 0 && wait_fd(c->fd, want == 1, deadline)) return -1;
    p += r, n -= (size_t)r;
  }
  return 0;
}

static int tls_send(srv_conn *c, const void *buf, size_t n) {
  const uint8_t *p = buf;
  while (n > 0) {
    int want = 0, r = tls_step(c, (void *)p, n, 1, &want);
    if (r < 0) return -1;
    /* a client that reads nothing for --send-timeout is dropped, as with plain TCP (SO_SNDTIMEO) */
    if (r == 0 && wait_fd(c->fd, want == 1, srv_now_ns() + (uint64_t)srv->cfg.send_timeout * 1000000000ull))
      return -1;
    p += r, n -= (size_t)r;
  }
  return 0;
}

static void tls_shutdown(srv_conn *c) { shutdown(c->fd, SHUT_RDWR); }

static ssize_t tls_recv_some(srv_conn *c, void *buf, size_t n, uint64_t deadline) {
  for (;;) {
    int want = 0, r = tls_step(c, buf, n, 0, &want);
    if (r != 0) return r; /* bytes, or -1 */
    if (wait_fd(c->fd, want == 1, deadline)) return -1;
  }
}

static const srv_io tls_io = {tls_recv, tls_send, tls_shutdown, tls_recv_some};

int srv_tls_accept(srv_conn *c) {
  tls_conn *t = calloc(1, sizeof *t);
  if (!t || !(t->ssl = SSL_new(srv->tls_ctx))) return free(t), -1;
  pthread_mutex_init(&t->mu, NULL);
  c->tls = t;
  int fl = fcntl(c->fd, F_GETFL);
  fcntl(c->fd, F_SETFL, fl | O_NONBLOCK);
  SSL_set_fd(t->ssl, c->fd);
  uint64_t deadline = c->auth_deadline; /* --auth-timeout from accept: handshake, HELLO and AUTH */
  for (;;) {
    ERR_clear_error();
    int r = SSL_accept(t->ssl);
    if (r == 1) break;
    int e = SSL_get_error(t->ssl, r);
    if ((e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) || wait_fd(c->fd, e == SSL_ERROR_WANT_READ, deadline)) {
      srv_log(srv_unauth_log_level(c), "conn %llu (%s): TLS handshake failed: %s; closing", (unsigned long long)c->serial, c->peer,
              e == SSL_ERROR_SSL ? ssl_why() : errno == ETIMEDOUT ? "timeout" : "connection ended");
      return -1;
    }
  }
  c->io = &tls_io;
  __atomic_store_n(&c->spoke, 1, __ATOMIC_RELEASE);
  srv_log(LOG_DEBUG, "conn %llu: TLS %s, %s", (unsigned long long)c->serial, SSL_get_version(t->ssl),
          SSL_get_cipher_name(t->ssl));
  return 0;
}

void srv_tls_free(srv_conn *c) {
  tls_conn *t = c->tls;
  if (!t) return;
  SSL_free(t->ssl);
  pthread_mutex_destroy(&t->mu);
  free(t);
  c->tls = NULL;
}
