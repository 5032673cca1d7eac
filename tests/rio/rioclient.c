/* The rio tests' client (rioclient.h): server process control, raw frames, one call per
 * request. Blocking sockets with poll timeouts, so a broken server fails a test, never hangs it. */
#include "rioclient.h"
#include "rio/record.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int rc_workdir(rc_server *s, const char *tag) {
  memset(s, 0, sizeof *s);
  char tmpl[256];
  const char *t = getenv("TMPDIR");
  snprintf(tmpl, sizeof tmpl, "%s/pario-rio-%s-XXXXXX", t && *t ? t : "/tmp", tag);
  if (!mkdtemp(tmpl)) return -1;
  snprintf(s->root, sizeof s->root, "%s/root", tmpl);
  snprintf(s->secret, sizeof s->secret, "%s/secret", tmpl);
  snprintf(s->log, sizeof s->log, "%s/server.log", tmpl);
  if (mkdir(s->root, 0755)) return -1;
  FILE *f = fopen(s->secret, "w");
  if (!f) return -1;
  uint8_t r[24];
  rio_random(r, sizeof r);
  for (size_t i = 0; i < sizeof r; i++) fprintf(f, "%02x", r[i]);
  fprintf(f, "\n");
  fclose(f);
  chmod(s->secret, 0600);
  return 0;
}

int rc_read_secret(const rc_server *s, uint8_t *buf, size_t *len) {
  char why[128];
  return rio_read_secret(s->secret, buf, len, why, sizeof why) ? -1 : 0;
}

int rc_server_start(rc_server *s, const char *bin, const char *const *extra) {
  int pfd[2];
  if (pipe(pfd)) return -1;
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    const char *argv[64];
    int n = 0;
    argv[n++] = bin;
    if (s->forward_to[0]) argv[n++] = "--forward-to", argv[n++] = s->forward_to;
    else argv[n++] = "--root", argv[n++] = s->root;
    argv[n++] = "--listen", argv[n++] = s->listen[0] ? s->listen : "127.0.0.1:0";
    argv[n++] = "--secret-file", argv[n++] = s->secret;
    argv[n++] = "--allow-root"; /* the tests may run as root; without it the server refuses */
    for (int i = 0; extra && extra[i] && n < 62; i++) argv[n++] = extra[i];
    argv[n] = NULL;
    int lf = open(s->log, O_WRONLY | O_CREAT | O_APPEND, 0644);
    dup2(pfd[1], 1);
    if (lf >= 0) dup2(lf, 2);
    close(pfd[0]);
    struct rlimit rl = {(rlim_t)s->nofile, (rlim_t)s->nofile};
    if (s->nofile > 0 && setrlimit(RLIMIT_NOFILE, &rl)) _exit(126);
    execv(bin, (char *const *)argv);
    _exit(127);
  }
  close(pfd[1]);
  s->pid = pid;
  char line[128];
  size_t got = 0;
  struct pollfd p = {pfd[0], POLLIN, 0};
  while (got < sizeof line - 1 && !memchr(line, '\n', got)) {
    if (poll(&p, 1, 20000) <= 0) break;
    ssize_t r = read(pfd[0], line + got, sizeof line - 1 - got);
    if (r <= 0) break;
    got += (size_t)r;
  }
  close(pfd[0]);
  line[got] = '\0';
  char *colon = strrchr(line, ':');
  if (!memchr(line, '\n', got) || !colon) {
    fprintf(stderr, "rioclient: the server printed no HOST:PORT line (got '%s'); see %s\n", line, s->log);
    rc_server_kill(s);
    return -1;
  }
  *colon = '\0';
  snprintf(s->host, sizeof s->host, "%.63s", line);
  s->port = atoi(colon + 1);
  return 0;
}

int rc_server_stop(rc_server *s) {
  if (s->pid <= 0) return -1;
  kill(s->pid, SIGTERM);
  int st = 0;
  for (int i = 0; i < 3000; i++) { /* up to 30 s */
    pid_t r = waitpid(s->pid, &st, WNOHANG);
    if (r == s->pid) {
      s->pid = 0;
      return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
    usleep(10000);
  }
  rc_server_kill(s);
  return -1;
}

void rc_server_kill(rc_server *s) {
  if (s->pid <= 0) return;
  kill(s->pid, SIGKILL);
  waitpid(s->pid, NULL, 0);
  s->pid = 0;
}

int rc_log_has(const rc_server *s, const char *needle) {
  FILE *f = fopen(s->log, "r");
  if (!f) return 0;
  char line[2048];
  int n = 0;
  while (fgets(line, sizeof line, f))
    if (strstr(line, needle)) n++;
  fclose(f);
  return n;
}

/* ---- TLS: with PARIO_RIO_TEST_TLS_CA=cert.pem every connection runs TLS, the server's
 * certificate checked against that file and the host name. ------------------------------------- */
#define MAX_FD 4096
static SSL *tls_of[MAX_FD];
static SSL_CTX *tls_ctx;
static pthread_mutex_t tls_ctx_lock = PTHREAD_MUTEX_INITIALIZER;

/* The one client context, made by the first connection. Under a lock: rio-load's client
 * threads connect at once, and a second thread replacing the context before the first had
 * loaded the CA into it failed a connection's certificate check now and then (rio_tls). */
static SSL_CTX *tls_context(const char *ca) {
  pthread_mutex_lock(&tls_ctx_lock);
  if (!tls_ctx) {
    SSL_CTX *c = SSL_CTX_new(TLS_client_method());
    if (c && SSL_CTX_load_verify_locations(c, ca, NULL) == 1) {
      SSL_CTX_set_verify(c, SSL_VERIFY_PEER, NULL);
      tls_ctx = c;
    } else if (c) {
      SSL_CTX_free(c);
    }
  }
  SSL_CTX *c = tls_ctx;
  pthread_mutex_unlock(&tls_ctx_lock);
  return c;
}

static int tls_connect(int fd, const char *host) {
  const char *ca = getenv("PARIO_RIO_TEST_TLS_CA");
  if (!ca || !*ca) return 0;
  if (fd >= MAX_FD) return -1;
  SSL_CTX *ctx = tls_context(ca);
  if (!ctx) return -1;
  SSL *ssl = SSL_new(ctx);
  if (!ssl) return -1;
  SSL_set_fd(ssl, fd);
  SSL_set1_host(ssl, host);
  if (SSL_connect(ssl) != 1) {
    SSL_free(ssl);
    return -1;
  }
  tls_of[fd] = ssl;
  return 0;
}

/* ---- records with a MAC (protocol version 2): with PARIO_RIO_TEST_MAC=1 a plain-TCP
 * connection asks for them in HELLO and, once AUTH is done, every byte both ways travels in
 * records (PROTOCOL.md), through the one record layer of client and server (rio/record.c); a
 * frame's header and body go into the same records, as the server's sender does. */
static rio_records *mac_of[MAX_FD];

static int mac_wanted(void) {
  const char *m = getenv("PARIO_RIO_TEST_MAC"), *ca = getenv("PARIO_RIO_TEST_TLS_CA");
  return m && !strcmp(m, "1") && !(ca && *ca);
}

static void mac_free(int fd) {
  if (fd < 0 || fd >= MAX_FD || !mac_of[fd]) return;
  rio_rec_free(mac_of[fd]);
  mac_of[fd] = NULL;
}

static int mac_start(int fd, const uint8_t *secret, size_t slen, const uint8_t challenge[RIO_NONCE],
                     const uint8_t nonce[RIO_NONCE]) {
  uint8_t c2s[RIO_TAG], s2c[RIO_TAG];
  if (fd < 0 || fd >= MAX_FD || rio_kdf(secret, slen, challenge, nonce, c2s, s2c)) return -1;
  return rio_rec_new(&mac_of[fd], c2s, s2c) ? -1 : 0;
}

int rc_has_mac(int fd) { return fd >= 0 && fd < MAX_FD && mac_of[fd] != NULL; }

void rc_close_fd(int fd) {
  mac_free(fd);
  if (fd >= 0 && fd < MAX_FD && tls_of[fd]) {
    SSL_free(tls_of[fd]);
    tls_of[fd] = NULL;
  }
  if (fd >= 0) close(fd);
}

/* ---- frames ------------------------------------------------------------------------------ */
int rc_connect_raw(const char *host, int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  if (fd < 0 || inet_pton(AF_INET, host, &a.sin_addr) != 1 || connect(fd, (struct sockaddr *)&a, sizeof a)) {
    if (fd >= 0) close(fd);
    return -1;
  }
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (tls_connect(fd, host)) {
    close(fd);
    return -1;
  }
  return fd;
}

static int raw_send(int fd, const void *p, size_t n) {
  const uint8_t *b = p;
  SSL *ssl = fd >= 0 && fd < MAX_FD ? tls_of[fd] : NULL;
  while (n > 0) {
    ssize_t r = ssl ? SSL_write(ssl, b, (int)(n > (1u << 30) ? 1u << 30 : n)) : send(fd, b, n, MSG_NOSIGNAL);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    b += r, n -= (size_t)r;
  }
  return 0;
}

static int rec_write(void *ctx, void *buf, size_t n) { return raw_send(*(int *)ctx, buf, n) ? EIO : 0; }

/* Pieces a and b, one after the other, in records. */
static int mac_send2(rio_records *m, int fd, const uint8_t *a, size_t an, const uint8_t *b, size_t bn) {
  struct iovec iov[2] = {{(void *)a, an}, {(void *)b, bn}};
  size_t sent = 0;
  return rio_rec_send(m, iov, bn ? 2 : 1, rec_write, &fd, &sent) ? -1 : 0;
}

int rc_send_all(int fd, const void *p, size_t n) {
  return rc_has_mac(fd) ? mac_send2(mac_of[fd], fd, p, n, NULL, 0) : raw_send(fd, p, n);
}

int rc_send_frame(int fd, unsigned type, uint64_t id, const void *body, size_t n) {
  uint8_t hb[RIO_HDR_SIZE];
  rio_hdr h = {RIO_VERSION, (uint16_t)type, 0, (uint32_t)n, id};
  rio_hdr_encode(hb, &h);
  if (rc_has_mac(fd)) return mac_send2(mac_of[fd], fd, hb, sizeof hb, body, n);
  return rc_send_all(fd, hb, sizeof hb) || (n && rc_send_all(fd, body, n)) ? -1 : 0;
}

static int raw_recv(int fd, void *p, size_t n, int timeout_ms) {
  uint8_t *b = p;
  SSL *ssl = fd >= 0 && fd < MAX_FD ? tls_of[fd] : NULL;
  while (n > 0) {
    struct pollfd pf = {fd, POLLIN, 0};
    if (!(ssl && SSL_pending(ssl) > 0) && poll(&pf, 1, timeout_ms) <= 0) return -1;
    ssize_t k = ssl ? SSL_read(ssl, b, (int)(n > (1u << 30) ? 1u << 30 : n)) : recv(fd, b, n, 0);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1;
    b += k, n -= (size_t)k;
  }
  return 0;
}

typedef struct rec_in {
  int fd, timeout_ms;
} rec_in;
static int rec_read(void *ctx, void *buf, size_t n) {
  rec_in *r = ctx;
  return raw_recv(r->fd, buf, n, r->timeout_ms) ? EIO : 0;
}

/* n bytes of the frame stream: from verified records under a MAC, else from the socket. */
static int recv_all(int fd, void *p, size_t n, int timeout_ms) {
  if (!rc_has_mac(fd)) return raw_recv(fd, p, n, timeout_ms);
  struct iovec iov = {p, n};
  rec_in r = {fd, timeout_ms};
  size_t got = 0;
  return rio_rec_recv(mac_of[fd], &iov, 1, n, rec_read, &r, &got) || got != n ? -1 : 0;
}

int rc_recv_frame(int fd, rio_hdr *h, uint8_t **body, int timeout_ms) {
  uint8_t hb[RIO_HDR_SIZE];
  *body = NULL;
  if (recv_all(fd, hb, sizeof hb, timeout_ms) || rio_hdr_decode(hb, h)) return -1;
  if (h->len == 0) return 0;
  *body = malloc(h->len);
  if (!*body || recv_all(fd, *body, h->len, timeout_ms)) {
    free(*body);
    *body = NULL;
    return -1;
  }
  return 0;
}

int rc_call(rc_conn *c, unsigned type, const void *body, size_t n, uint8_t **reply, size_t *rn) {
  uint64_t id = ++c->next_id;
  if (reply) *reply = NULL;
  if (rc_send_frame(c->fd, type, id, body, n)) return -1;
  rio_hdr h;
  uint8_t *b;
  if (rc_recv_frame(c->fd, &h, &b, 30000)) return -1;
  if (h.id != id || !(h.type & RIO_REPLY) || h.len < RIO_STATUS) {
    free(b);
    return -1;
  }
  rio_rd r = rio_rd_init(b, h.len);
  int st = rio_get_status(&r);
  c->last_type = h.type & ~RIO_REPLY;
  c->last_msg[0] = '\0';
  if (c->last_type == RIO_T_ERROR && r.n >= 4) {
    uint32_t ml = rio_get_u32(&r);
    if (ml <= r.n && ml <= RIO_MAX_ERRMSG) memcpy(c->last_msg, r.p, ml), c->last_msg[ml] = '\0';
  }
  if (reply && st == 0) {
    *reply = malloc(r.n ? r.n : 1);
    memcpy(*reply, r.p, r.n);
    *rn = r.n;
  }
  free(b);
  return st;
}

int rc_connect(rc_conn *c, const rc_server *s, const uint8_t *secret, size_t slen) {
  return rc_connect_as(c, s, NULL, secret, slen);
}

int rc_connect_as(rc_conn *c, const rc_server *s, const char *name, const uint8_t *secret, size_t slen) {
  memset(c, 0, sizeof *c);
  c->fd = rc_connect_raw(s->host, s->port);
  if (c->fd < 0) return -1;
  /* A name needs version 2; records only with PARIO_RIO_TEST_MAC=1 (loopback lets plain TCP go
   * without them). */
  int want_mac = mac_wanted();
  rio_hello hello = {1, name || want_mac ? 2 : 1, want_mac ? RIO_HELLO_MAC : 0, {0}, 0, {0}};
  if (name) {
    hello.name_len = (uint8_t)strlen(name);
    memcpy(hello.name, name, hello.name_len);
  }
  rio_random(hello.nonce, RIO_NONCE);
  uint8_t b[RIO_HELLO_MAX], *rep;
  size_t n = rio_encode_hello(b, sizeof b, &hello), rn;
  int st = rc_call(c, RIO_T_HELLO, b, n, &rep, &rn);
  if (st) return st;
  if (rn != 8 + RIO_NONCE) return free(rep), -1;
  uint8_t challenge[RIO_NONCE], mac[RIO_MAC], want[RIO_MAC];
  memcpy(challenge, rep + 8, RIO_NONCE);
  rio_rd fr = rio_rd_init(rep + 4, 4);
  uint32_t server_flags = rio_get_u32(&fr);
  free(rep);
  rio_auth_mac(secret, slen, 0, challenge, hello.nonce, mac);
  st = rc_call(c, RIO_T_AUTH, mac, RIO_MAC, &rep, &rn);
  if (st) return st;
  if (rn != RIO_MAC + 24) return free(rep), -1;
  rio_auth_mac(secret, slen, 1, challenge, hello.nonce, want);
  int ok = rio_mac_equal(rep, want);
  rio_rd r = rio_rd_init(rep + RIO_MAC, 24);
  c->max_request = rio_get_u64(&r);
  c->max_segments = rio_get_u32(&r);
  (void)rio_get_u32(&r);
  c->server_id = rio_get_u64(&r);
  free(rep);
  if (ok && want_mac) /* no downgrade: records asked for and not granted fail the connection */
    ok = (server_flags & RIO_HELLO_MAC) && mac_start(c->fd, secret, slen, challenge, hello.nonce) == 0;
  return ok ? 0 : -1;
}

void rc_close_conn(rc_conn *c) {
  rc_close_fd(c->fd);
  c->fd = -1;
}

/* ---- calls ------------------------------------------------------------------------------- */
static int reply_u64s(int st, uint8_t *rep, size_t rn, int n, uint64_t *out) {
  if (st == 0) {
    if (rn != (size_t)n * 8) st = -1;
    for (int i = 0; st == 0 && i < n; i++) out[i] = rio_load_u64(rep + 8 * i);
  }
  free(rep);
  return st;
}

/* The call first, then the decoding (argument evaluation order is unspecified). */
static int reply_u64s_call(rc_conn *c, unsigned type, const void *body, size_t n, uint8_t **rep, size_t *rn, int k,
                           uint64_t *out) {
  int st = rc_call(c, type, body, n, rep, rn);
  return reply_u64s(st, *rep, *rn, k, out);
}

int rc_open(rc_conn *c, const char *path, uint32_t flags, uint32_t perm, uint64_t *handle, uint64_t *size) {
  uint8_t b[16 + RIO_MAX_PATH], *rep = NULL;
  size_t n = rio_encode_open(b, sizeof b, flags, perm, path), rn = 0;
  uint64_t v[2] = {0, 0};
  int st = reply_u64s_call(c, RIO_T_OPEN, b, n, &rep, &rn, 2, v);
  *handle = v[0];
  if (size) *size = v[1];
  return st;
}

int rc_handle_op(rc_conn *c, unsigned type, uint64_t handle) {
  uint8_t b[8];
  rio_store_u64(b, handle);
  return rc_call(c, type, b, 8, NULL, NULL);
}

int rc_stat(rc_conn *c, uint64_t handle, uint64_t *size) {
  uint8_t b[8], *rep = NULL;
  size_t rn = 0;
  rio_store_u64(b, handle);
  return reply_u64s_call(c, RIO_T_STAT, b, 8, &rep, &rn, 1, size);
}

int rc_set_size(rc_conn *c, uint64_t handle, uint64_t size) {
  uint64_t v[2] = {handle, size};
  uint8_t b[16];
  rio_encode_u64s(b, sizeof b, 2, v);
  return rc_call(c, RIO_T_SET_SIZE, b, 16, NULL, NULL);
}

int rc_preallocate(rc_conn *c, uint64_t handle, uint64_t off, uint64_t len) {
  uint64_t v[3] = {handle, off, len};
  uint8_t b[24];
  rio_encode_u64s(b, sizeof b, 3, v);
  return rc_call(c, RIO_T_PREALLOCATE, b, 24, NULL, NULL);
}

int rc_delete(rc_conn *c, const char *path) {
  uint8_t b[8 + RIO_MAX_PATH];
  size_t n = rio_encode_path(b, sizeof b, path);
  return rc_call(c, RIO_T_DELETE, b, n, NULL, NULL);
}

uint8_t *rc_io_body(uint64_t handle, uint64_t coll_id, uint32_t coll_n, uint32_t nseg, const uint64_t *off,
                    const uint64_t *len, const void *data, size_t *n) {
  uint64_t total = 0;
  for (uint32_t i = 0; i < nseg; i++) total += len[i];
  size_t cap = rio_io_hdr_bytes(nseg) + (data ? total : 0);
  uint8_t *b = malloc(cap ? cap : 1);
  if (!b) return NULL;
  rio_wr w = rio_wr_init(b, cap);
  rio_put_io_hdr(&w, handle, coll_id, coll_n, nseg);
  for (uint32_t i = 0; i < nseg; i++) rio_put_u64(&w, off[i]), rio_put_u64(&w, len[i]);
  if (data) rio_put_bytes(&w, data, total);
  *n = w.n;
  return b;
}

int rc_write_coll(rc_conn *c, uint64_t handle, uint64_t coll_id, uint32_t coll_n, uint32_t nseg, const uint64_t *off,
                  const uint64_t *len, const void *data, uint64_t *done) {
  size_t n, rn = 0;
  uint8_t *b = rc_io_body(handle, coll_id, coll_n, nseg, off, len, data, &n), *rep = NULL;
  if (!b) return -1;
  int st = rc_call(c, RIO_T_WRITE, b, n, &rep, &rn);
  free(b);
  uint64_t d = 0;
  st = reply_u64s(st, rep, rn, 1, &d);
  if (done) *done = d;
  return st;
}

int rc_write(rc_conn *c, uint64_t handle, uint32_t nseg, const uint64_t *off, const uint64_t *len, const void *data,
             uint64_t *done) {
  return rc_write_coll(c, handle, 0, 0, nseg, off, len, data, done);
}

int rc_read(rc_conn *c, uint64_t handle, uint32_t nseg, const uint64_t *off, const uint64_t *len, void *buf,
            uint64_t *done) {
  size_t n, rn = 0;
  uint8_t *b = rc_io_body(handle, 0, 0, nseg, off, len, NULL, &n), *rep = NULL;
  if (!b) return -1;
  int st = rc_call(c, RIO_T_READ, b, n, &rep, &rn);
  free(b);
  if (st == 0) {
    uint64_t d = rn >= 8 ? rio_load_u64(rep) : 0;
    if (rn < 8 || rn - 8 != d) st = -1;
    else memcpy(buf, rep + 8, d);
    if (done) *done = d;
  }
  free(rep);
  return st;
}

int rc_lock(rc_conn *c, uint64_t handle, uint32_t op, uint64_t off, uint64_t len) {
  rio_lock_req m = {handle, op, off, len};
  uint8_t b[32];
  size_t n = rio_encode_lock(b, sizeof b, &m);
  return rc_call(c, RIO_T_LOCK, b, n, NULL, NULL);
}

int rc_counter(rc_conn *c, uint64_t handle, uint64_t key, uint32_t op, int64_t value, int64_t *old) {
  rio_counter_req m = {handle, key, op, value};
  uint8_t b[32], *rep = NULL;
  size_t n = rio_encode_counter(b, sizeof b, &m), rn = 0;
  uint64_t v = 0;
  int st = reply_u64s_call(c, RIO_T_COUNTER, b, n, &rep, &rn, 1, &v);
  if (old) *old = (int64_t)v;
  return st;
}

int rc_ping(rc_conn *c) {
  uint8_t b[8], *rep = NULL;
  size_t rn = 0;
  rio_store_u64(b, 42);
  uint64_t v[3];
  int st = reply_u64s_call(c, RIO_T_PING, b, 8, &rep, &rn, 3, v);
  return st == 0 && v[0] == 42 && v[2] >= v[1] ? 0 : st ? st : -1;
}

double rc_now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
