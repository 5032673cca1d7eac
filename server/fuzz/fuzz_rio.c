/* libFuzzer target over pario-server's frame decoder and request handlers: the input is one
 * connection's byte stream (first byte: start authenticated or not, and the mode), served
 * inline by the real conn.c/ops.c/read.c/write.c against a temporary root, every reply checked
 * to be a well-formed frame. Modes: the server; the forwarder (forward.c, its checks, collective
 * groups and merges) in front of a strict stand-in upstream server (a finding if the forwarder
 * sends it anything malformed); the --emulate spec parser (emulate.c) on the rest as text. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rio/record.h"
#include "server.h"

static srv_state state;
srv_state *srv = &state;

typedef struct mem_stream {
  const uint8_t *p;
  size_t n;
  uint8_t hdr[RIO_HDR_SIZE]; /* reply parser: the header being collected */
  size_t hgot;
  uint64_t skip; /* body bytes of the current reply still to come */
  uint32_t calls; /* mem_recv_some's, which vary the piece sizes */
} mem_stream;

static int mem_recv(srv_conn *c, void *buf, size_t n, uint64_t deadline) {
  (void)deadline;
  mem_stream *m = c->mem;
  if (m->n < n) {
    m->p += m->n, m->n = 0;
    errno = ECONNRESET;
    return -1;
  }
  memcpy(buf, m->p, n);
  m->p += n, m->n -= n;
  return 0;
}

/* Every byte the server sends must belong to a well-formed reply frame. */
static int mem_send(srv_conn *c, const void *buf, size_t n) {
  mem_stream *m = c->mem;
  const uint8_t *p = buf;
  while (n > 0) {
    if (m->skip) {
      size_t k = m->skip < n ? (size_t)m->skip : n;
      m->skip -= k, p += k, n -= k;
      continue;
    }
    size_t k = RIO_HDR_SIZE - m->hgot < n ? RIO_HDR_SIZE - m->hgot : n;
    memcpy(m->hdr + m->hgot, p, k);
    m->hgot += k, p += k, n -= k;
    if (m->hgot == RIO_HDR_SIZE) {
      rio_hdr h;
      if (rio_hdr_decode(m->hdr, &h) || !(h.type & RIO_REPLY) || (h.type & ~RIO_REPLY) > RIO_T_MAX ||
          h.len < RIO_STATUS || h.len > srv->cfg.max_request + 64)
        abort(); /* a malformed reply is a finding */
      m->hgot = 0;
      m->skip = h.len;
    }
  }
  return 0;
}

static void mem_shutdown(srv_conn *c) { ((mem_stream *)c->mem)->n = 0; }

/* The reader's buffered input takes what the stream hands over: pieces of varying size, so
 * frames split at every place across its refills. */
static ssize_t mem_recv_some(srv_conn *c, void *buf, size_t n, uint64_t deadline) {
  (void)deadline;
  mem_stream *m = c->mem;
  if (m->n == 0) return errno = ECONNRESET, -1;
  size_t k = 1 + (size_t)((++m->calls * 2654435761u) >> 7) % 4096;
  if (k > n) k = n;
  if (k > m->n) k = m->n;
  memcpy(buf, m->p, k);
  m->p += k, m->n -= k;
  return (ssize_t)k;
}

static const srv_io mem_io = {mem_recv, mem_send, mem_shutdown, mem_recv_some};

static char root[256];

/* ---- the stand-in upstream of the forwarder mode ------------------------------------------
 * One connection from the forwarder: HELLO and AUTH as a real server answers them, then every
 * request is decoded as strictly as pario-server does (abort: a finding) and answered with a
 * well-formed reply. Every OPEN gets handle 1; the file ends at UP_EOF (READ replies are cut
 * there, so the forwarder's splitting of a short merged reply runs). */
#define UP_EOF (256u << 10)
static int up_fd = -1;
static char up_addr[64];

static int raw_full_io(int fd, void *buf, size_t n, int wr) {
  uint8_t *p = buf;
  while (n > 0) {
    ssize_t r = wr ? send(fd, p, n, MSG_NOSIGNAL) : recv(fd, p, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    p += r, n -= (size_t)r;
  }
  return 0;
}

/* The stand-in upstream speaks version 2: after AUTH its bytes travel in MAC records
 * (src/rio/record.c), as a real server's do with the forwarder. */
static rio_records *up_rec;

static int raw_rec_io(void *ctx, void *buf, size_t n) {
  const int *a = ctx;
  return raw_full_io(a[0], buf, n, a[1]) ? EIO : 0;
}

static int full_io(int fd, void *buf, size_t n, int wr) {
  if (!up_rec) return raw_full_io(fd, buf, n, wr);
  int ctx[2] = {fd, wr};
  struct iovec v = {buf, n};
  size_t got = 0;
  return (wr ? rio_rec_send(up_rec, &v, 1, raw_rec_io, ctx, &got) : rio_rec_recv(up_rec, &v, 1, n, raw_rec_io, ctx, &got))
             ? -1
             : 0;
}

static void up_reply(int fd, const rio_hdr *h, int status, const void *rest, size_t rn, size_t zeros) {
  size_t n = RIO_HDR_SIZE + RIO_STATUS + rn + zeros;
  uint8_t *b = calloc(1, n); /* one send: no small writes for Nagle to hold back */
  if (!b) abort();
  rio_hdr r = {RIO_VERSION, (uint16_t)(h->type | RIO_REPLY), 0, (uint32_t)(RIO_STATUS + rn + zeros), h->id};
  rio_hdr_encode(b, &r);
  rio_wr w = rio_wr_init(b + RIO_HDR_SIZE, RIO_STATUS);
  rio_put_status(&w, status);
  if (rn) memcpy(b + RIO_HDR_SIZE + RIO_STATUS, rest, rn);
  full_io(fd, b, n, 1);
  free(b);
}

/* The reply to one authenticated request the forwarder sent; abort() if it is malformed. */
static void up_answer(int fd, const rio_hdr *h, const uint8_t *b) {
  uint8_t out[24] = {0};
  rio_io_req io;
  size_t hb;
  rio_open_req o;
  uint64_t x, y, z;
  rio_lock_req l;
  rio_counter_req k;
  rio_checksum_req sum;
  const char *p;
  uint32_t pl;
  int bad = 0;
  switch (h->type) {
  case RIO_T_OPEN: bad = rio_decode_open(b, h->len, &o); rio_store_u64(out, 1); up_reply(fd, h, 0, out, 16, 0); break;
  case RIO_T_PING: bad = rio_decode_handle(b, h->len, &x); up_reply(fd, h, 0, out, 24, 0); break;
  case RIO_T_STAT: bad = rio_decode_handle(b, h->len, &x); up_reply(fd, h, 0, out, 8, 0); break;
  case RIO_T_CLOSE: case RIO_T_SYNC: bad = rio_decode_handle(b, h->len, &x); up_reply(fd, h, 0, NULL, 0, 0); break;
  case RIO_T_SET_SIZE: bad = rio_decode_handle2(b, h->len, &x, &y); up_reply(fd, h, 0, NULL, 0, 0); break;
  case RIO_T_PREALLOCATE: bad = rio_decode_handle3(b, h->len, &x, &y, &z); up_reply(fd, h, 0, NULL, 0, 0); break;
  case RIO_T_LOCK: bad = rio_decode_lock(b, h->len, &l); up_reply(fd, h, 0, NULL, 0, 0); break;
  case RIO_T_COUNTER: bad = rio_decode_counter(b, h->len, &k); up_reply(fd, h, 0, out, 8, 0); break;
  case RIO_T_DELETE: bad = rio_decode_path(b, h->len, &p, &pl); up_reply(fd, h, 0, NULL, 0, 0); break;
  case RIO_T_CHECKSUM: bad = rio_decode_checksum(b, h->len, &sum); up_reply(fd, h, 0, out, 16, 0); break;
  case RIO_T_READ:
  case RIO_T_WRITE:
    bad = rio_decode_io(b, h->len, h->len, h->type, srv->cfg.max_segments, &io, &hb);
    if (bad) break;
    if (h->type == RIO_T_WRITE) {
      rio_store_u64(out, io.total);
      up_reply(fd, h, 0, out, 8, 0);
      break;
    }
    uint64_t done = 0;
    for (uint32_t i = 0; i < io.nseg; i++) { /* segment order; the file ends at UP_EOF */
      uint64_t off, len;
      rio_seg_at(&io, i, &off, &len);
      uint64_t m = off >= UP_EOF ? 0 : UP_EOF - off < len ? UP_EOF - off : len;
      done += m;
      if (m < len) break;
    }
    if (RIO_STATUS + 8 + done > srv->cfg.max_request + 64) abort(); /* a merged READ over the limit */
    rio_store_u64(out, done);
    up_reply(fd, h, 0, out, 8, (size_t)done);
    break;
  default: bad = RIO_EPROTO;
  }
  if (bad) {
    fprintf(stderr, "fuzz_rio: the forwarder sent a malformed %u request (status %d)\n", h->type, bad);
    abort();
  }
}

static void *up_main(void *arg) {
  (void)arg;
  int fd = accept(up_fd, NULL, NULL), one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  uint8_t hb[RIO_HDR_SIZE], *body = malloc(srv->cfg.max_request + 64), ch[RIO_NONCE] = {7}, mac[RIO_MAC];
  rio_hello hello;
  for (int authed = 0; fd >= 0 && body;) {
    rio_hdr h;
    if (full_io(fd, hb, sizeof hb, 0)) break;
    if (rio_hdr_decode(hb, &h) || h.len > rio_request_limit(h.type, authed == 2, srv->cfg.max_request) ||
        h.len < rio_request_min(h.type) || full_io(fd, body, h.len, 0)) {
      fprintf(stderr, "fuzz_rio: the forwarder sent a malformed frame header (type %u, %u bytes)\n", h.type, h.len);
      abort();
    }
    if (authed == 0) { /* HELLO */
      if (h.type != RIO_T_HELLO || rio_decode_hello(body, h.len, &hello)) abort();
      uint8_t r[8 + RIO_NONCE] = {2, 0, 0, 0, RIO_HELLO_MAC}; /* version 2, records with a MAC */
      memcpy(r + 8, ch, RIO_NONCE);
      up_reply(fd, &h, 0, r, sizeof r, 0);
      authed = 1;
    } else if (authed == 1) { /* AUTH: the forwarder must know the secret */
      rio_auth_mac(srv->secret, srv->secret_len, 0, ch, hello.nonce, mac);
      if (h.type != RIO_T_AUTH || !rio_mac_equal(mac, body)) abort();
      uint8_t r[RIO_MAC + 24] = {0};
      rio_auth_mac(srv->secret, srv->secret_len, 1, ch, hello.nonce, r);
      rio_wr w = rio_wr_init(r + RIO_MAC, 24);
      rio_put_u64(&w, srv->cfg.max_request);
      rio_put_u32(&w, srv->cfg.max_segments);
      up_reply(fd, &h, 0, r, sizeof r, 0);
      uint8_t c2s[RIO_TAG], s2c[RIO_TAG];
      if (rio_kdf(srv->secret, srv->secret_len, ch, hello.nonce, c2s, s2c) || rio_rec_new(&up_rec, s2c, c2s)) abort();
      authed = 2;
    } else {
      up_answer(fd, &h, body);
    }
  }
  return NULL;
}

/* The stand-in upstream on 127.0.0.1, and the forwarder connected to it (once per process). */
static void start_forwarder(void) {
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t al = sizeof a;
  up_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (up_fd < 0 || bind(up_fd, (struct sockaddr *)&a, sizeof a) || listen(up_fd, 1) ||
      getsockname(up_fd, (struct sockaddr *)&a, &al))
    abort();
  snprintf(up_addr, sizeof up_addr, "127.0.0.1:%u", ntohs(a.sin_port));
  pthread_t t;
  if (pthread_create(&t, NULL, up_main, NULL)) abort();
  srv->cfg.forward_to = up_addr;
  srv->cfg.merge_wait_ms = 0; /* incomplete groups go on at the timer's next tick (1 ms) */
  if (srv_forward_start()) abort();
  srv->cfg.forward_to = NULL;
}

/* "default" (--secret-file's, read-write) and a read-only one that mode 3 connects as. */
static srv_cred fuzz_creds[2] = {{.name = "default"}, {.name = "fuzz-ro", .ro = 1}};

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  snprintf(root, sizeof root, "%s/pario-fuzz-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(root)) abort();
  srv->rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
  memcpy(srv->secret, "fuzzing-secret-0123456789", 25);
  srv->secret_len = 25;
  for (int i = 0; i < 2; i++) {
    memcpy(fuzz_creds[i].secret, srv->secret, srv->secret_len);
    fuzz_creds[i].secret_len = srv->secret_len;
    fuzz_creds[i].rootfd = srv->rootfd;
  }
  srv->creds = fuzz_creds, srv->ncreds = 2;
  srv->cfg.max_request = RIO_MIN_MAX_REQUEST;
  srv->cfg.max_segments = RIO_MIN_MAX_REQUEST / RIO_SEG;
  srv->cfg.threads = 0;
  srv->cfg.frame_timeout = srv->cfg.send_timeout = 5;
  srv->cfg.max_handles = 64, srv->cfg.max_inflight = 64, srv->cfg.max_conns = 16;
  pthread_mutex_init(&srv->mu, NULL);
  srv_log_level = -1;
  /* Bound what a fuzzed WRITE, SET_SIZE or PREALLOCATE can put on disk. */
  struct rlimit rl = {16u << 20, 16u << 20};
  setrlimit(RLIMIT_FSIZE, &rl);
  signal(SIGXFSZ, SIG_IGN);
  start_forwarder();
  fprintf(stderr, "fuzz_rio: root %s\n", root);
  return 0;
}

static void clean_root(void) {
  int fd = openat(srv->rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (!d) return;
  for (struct dirent *e; (e = readdir(d)) != NULL;)
    if (e->d_name[0] != '.' || (e->d_name[1] && strcmp(e->d_name, "..")))
      unlinkat(dirfd(d), e->d_name, 0);
  closedir(d);
}

/* --emulate SPEC: the text must parse or be refused with a reason, never crash; a parsed spec
 * holds what it says. */
static void fuzz_emulate(const uint8_t *data, size_t size) {
  char spec[300], why[160] = "";
  size_t n = size < sizeof spec - 1 ? size : sizeof spec - 1;
  memcpy(spec, data, n);
  spec[n] = '\0';
  srv_emulate e;
  if (srv_emulate_parse(spec, &e, why, sizeof why) != 0 && !why[0]) abort(); /* a refusal says why */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static unsigned runs;
  if (size < 1) return 0;
  int mode = (data[0] >> 1) & 3; /* 0: the server; 3: the same as a read-only credential; 1: the
                                  * forwarder; 2: the --emulate parser */
  if (mode == 2) {
    fuzz_emulate(data + 1, size - 1);
    return 0;
  }
  srv->cfg.forward_to = mode == 1 ? up_addr : NULL;
  mem_stream m = {data + 1, size - 1, {0}, 0, 0, 0};
  srv_conn *c = srv_conn_new(-1, &mem_io, "fuzz");
  if (!c) return 0;
  c->mem = &m;
  c->authed = data[0] & 1;
  if (mode == 3 && c->authed) c->cred = &fuzz_creds[1];
  srv->nunauth++;
  srv_conn_serve(c);
  srv_conn_free(c);
  if (++runs % 512 == 0) clean_root();
  return 0;
}
