/* pario-server under the attacks, each refused, logged, and a good client served after:
 * path escapes (openat2 and the O_NOFOLLOW fallback), wrong secret, no authentication, oversize
 * lengths, truncated and garbage frames, a bounded flood, an idle client. Loopback only.
 * usage: test_rio_security PARIO_SERVER */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../unit/check.h"
#include "rioclient.h"

static rc_server S;
static uint8_t secret[RIO_MAX_SECRET];
static size_t slen;

/* A good client still works: authenticate, write, read back, check the bytes. */
static void good_client(const char *after) {
  rc_conn c;
  int ok = rc_connect(&c, &S, secret, slen) == 0;
  uint64_t h = 0, off = 3, len = 11, done = 0;
  char back[12] = {0};
  ok = ok && rc_open(&c, "good.dat", RIO_O_RDWR | RIO_O_CREAT, 0644, &h, NULL) == 0;
  ok = ok && rc_write(&c, h, 1, &off, &len, "hello world", &done) == 0 && done == 11;
  ok = ok && rc_read(&c, h, 1, &off, &len, back, &done) == 0 && !memcmp(back, "hello world", 11);
  ok = ok && rc_handle_op(&c, RIO_T_CLOSE, h) == 0;
  CHECK(ok, "a good client is served after: %s", after);
  rc_close_conn(&c);
}

/* The server closed the connection: reading gives end of file (after an optional reply). */
static int closed_by_server(int fd) {
  rio_hdr h;
  uint8_t *b;
  for (int i = 0; i < 3; i++) {
    if (rc_recv_frame(fd, &h, &b, 5000) != 0) return 1;
    free(b);
  }
  return 0;
}

static void test_paths(const char *mode) {
  rc_conn c;
  CHECK(rc_connect(&c, &S, secret, slen) == 0, "%s: connect", mode);
  char p[1024];
  snprintf(p, sizeof p, "%s/out", S.root);
  unlink(p);
  CHECK(symlink("/etc", p) == 0, "symlink out of the root");
  snprintf(p, sizeof p, "%s/up", S.root);
  unlink(p);
  CHECK(symlink("..", p) == 0, "symlink to the root's parent");
  snprintf(p, sizeof p, "%s/proc", S.root);
  unlink(p);
  CHECK(symlink("/proc/self", p) == 0, "symlink to /proc/self");
  snprintf(p, sizeof p, "%s/sub", S.root);
  mkdir(p, 0755);
  struct {
    const char *path, *log;
  } bad[] = {
      {"../x", "path leaves the root (..)"},
      {"sub/../../x", "path leaves the root (..)"},
      {"/etc/passwd", "absolute path refused"},
      {"/proc/self/root/etc/passwd", "absolute path refused"},
      {"out/passwd", NULL},
      {"up/secret", NULL},
      {"proc/status", NULL},
      {"proc/root/etc/passwd", NULL},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    uint64_t h;
    char needle[300];
    snprintf(needle, sizeof needle, "open \"%s\" refused: %s", bad[i].path, bad[i].log ? bad[i].log : "");
    int before = rc_log_has(&S, needle);
    int st = rc_open(&c, bad[i].path, RIO_O_RDONLY, 0, &h, NULL);
    CHECK(st == RIO_EACCES, "%s: open %s refused with EACCES (got %d)", mode, bad[i].path, st);
    CHECK(rc_log_has(&S, needle) == before + 1, "%s: refusal of %s logged", mode, bad[i].path);
    st = rc_open(&c, bad[i].path, RIO_O_RDWR | RIO_O_CREAT, 0644, &h, NULL);
    CHECK(st == RIO_EACCES, "%s: create %s refused (got %d)", mode, bad[i].path, st);
    st = rc_delete(&c, bad[i].path);
    CHECK(st == RIO_EACCES || (st == RIO_ENOENT && i >= 4), "%s: delete %s refused (got %d)", mode, bad[i].path, st);
  }
  /* Nothing outside the root was created, and the root still works with an inner "..". */
  CHECK(access("/etc/passwd", F_OK) == 0, "outside untouched");
  uint64_t h;
  CHECK(rc_open(&c, "sub/../inside", RIO_O_RDWR | RIO_O_CREAT, 0644, &h, NULL) == 0, "%s: inner .. allowed", mode);
  CHECK(rc_handle_op(&c, RIO_T_CLOSE, h) == 0, "close");
  snprintf(p, sizeof p, "%s/inside", S.root);
  CHECK(access(p, F_OK) == 0, "created inside the root");
  CHECK(rc_open(&c, "sub", RIO_O_RDONLY, 0, &h, NULL) == RIO_EISDIR, "%s: a directory is not opened", mode);
  rc_close_conn(&c);
  good_client("path escapes");
}

static void test_auth(void) {
  rc_conn c;
  uint8_t wrong[32];
  memset(wrong, 'x', sizeof wrong);
  int before = rc_log_has(&S, "authentication failed");
  CHECK(rc_connect(&c, &S, wrong, sizeof wrong) == RIO_EAUTH, "wrong secret: EAUTH");
  CHECK(closed_by_server(c.fd), "wrong secret: connection closed");
  CHECK(rc_log_has(&S, "authentication failed (wrong secret)") == before + 1, "wrong secret logged");
  rc_close_conn(&c);

  /* A request without HELLO/AUTH: closed, no reply. */
  int fd = rc_connect_raw(S.host, S.port);
  uint8_t b[64];
  size_t n = rio_encode_open(b, sizeof b, RIO_O_RDONLY, 0, "good.dat");
  before = rc_log_has(&S, "refused before authentication");
  rc_send_frame(fd, RIO_T_OPEN, 1, b, n);
  rio_hdr h;
  uint8_t *rb;
  CHECK(rc_recv_frame(fd, &h, &rb, 5000) != 0, "no auth: closed without a reply");
  close(fd);
  /* HELLO then a request instead of AUTH. */
  fd = rc_connect_raw(S.host, S.port);
  rio_hello hello = {1, 1, 0, {0}, 0, {0}};
  n = rio_encode_hello(b, sizeof b, &hello);
  rc_send_frame(fd, RIO_T_HELLO, 1, b, n);
  CHECK(rc_recv_frame(fd, &h, &rb, 5000) == 0 && h.type == (RIO_T_HELLO | RIO_REPLY), "hello answered");
  free(rb);
  uint8_t pb[8] = {0};
  rc_send_frame(fd, RIO_T_PING, 2, pb, 8);
  CHECK(closed_by_server(fd), "hello then ping: closed");
  close(fd);
  CHECK(rc_log_has(&S, "refused before authentication") >= before + 2, "requests without auth logged");
  /* Unsupported version. */
  fd = rc_connect_raw(S.host, S.port);
  rio_hello h9 = {7, 9, 0, {0}, 0, {0}};
  n = rio_encode_hello(b, sizeof b, &h9);
  rc_send_frame(fd, RIO_T_HELLO, 1, b, n);
  CHECK(rc_recv_frame(fd, &h, &rb, 5000) == 0 && h.type == (RIO_T_ERROR | RIO_REPLY) && rb[0] == RIO_EPROTO,
        "unsupported version: ERROR EPROTO");
  free(rb);
  CHECK(closed_by_server(fd), "unsupported version: closed");
  close(fd);
  good_client("authentication attacks");
}

static void send_raw_header(int fd, uint32_t magic, unsigned type, uint32_t len) {
  uint8_t hb[RIO_HDR_SIZE];
  rio_hdr h = {RIO_VERSION, (uint16_t)type, 0, len, 9};
  rio_hdr_encode(hb, &h);
  hb[0] = (uint8_t)magic, hb[1] = (uint8_t)(magic >> 8), hb[2] = (uint8_t)(magic >> 16), hb[3] = (uint8_t)(magic >> 24);
  rc_send_all(fd, hb, sizeof hb);
}

static void test_lengths(void) {
  /* Before authentication: a HELLO that claims 1 GiB. */
  int fd = rc_connect_raw(S.host, S.port);
  int before = rc_log_has(&S, "got type 1 length 1073741824");
  send_raw_header(fd, RIO_MAGIC, RIO_T_HELLO, 1u << 30);
  CHECK(closed_by_server(fd), "oversize HELLO: closed");
  close(fd);
  CHECK(rc_log_has(&S, "got type 1 length 1073741824") == before + 1, "oversize HELLO logged");
  /* After authentication: a WRITE over max_request, an OPEN over its fixed limit, too many
   * segments, an io header whose segment list passes the frame. */
  struct {
    unsigned type;
    uint32_t len;
    const char *log;
  } big[] = {{RIO_T_WRITE, 0xffffffffu, "WRITE with a body of 4294967295 bytes"},
             {RIO_T_OPEN, 12 + RIO_MAX_PATH + 1, "OPEN with a body of 4109 bytes"},
             {RIO_T_PING, 9, "PING with a body of 9 bytes"},
             {RIO_T_CLOSE, 7, "CLOSE with a body of 7 bytes"}};
  for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
    rc_conn c;
    rc_connect(&c, &S, secret, slen);
    before = rc_log_has(&S, big[i].log);
    send_raw_header(c.fd, RIO_MAGIC, big[i].type, big[i].len);
    rio_hdr h;
    uint8_t *rb = NULL;
    CHECK(rc_recv_frame(c.fd, &h, &rb, 5000) == 0 && h.type == (RIO_T_ERROR | RIO_REPLY) && rb &&
              (rb[0] == RIO_ETOOBIG || rb[0] == RIO_EPROTO), "%s: ERROR reply", big[i].log);
    free(rb);
    CHECK(closed_by_server(c.fd), "%s: closed", big[i].log);
    CHECK(rc_log_has(&S, big[i].log) == before + 1, "%s: logged", big[i].log);
    rc_close_conn(&c);
  }
  rc_conn c;
  rc_connect(&c, &S, secret, slen);
  uint8_t io[RIO_IO_HDR];
  rio_wr w = rio_wr_init(io, sizeof io);
  rio_put_io_hdr(&w, 1, 0, 0, 0x7fffffffu);
  rc_send_frame(c.fd, RIO_T_WRITE, 5, io, sizeof io);
  CHECK(closed_by_server(c.fd), "2^31 segments: closed");
  rc_close_conn(&c);
  CHECK(rc_log_has(&S, "WRITE: more segments than max_segments") == 1, "too many segments logged");
  rc_connect(&c, &S, secret, slen);
  w = rio_wr_init(io, sizeof io);
  rio_put_io_hdr(&w, 1, 0, 0, 1000);
  rc_send_frame(c.fd, RIO_T_READ, 6, io, sizeof io); /* 1000 segments announced, none sent */
  CHECK(closed_by_server(c.fd), "segment list past the frame: closed");
  rc_close_conn(&c);
  /* A READ asking for more than max_request is refused, the connection stays. */
  rc_connect(&c, &S, secret, slen);
  uint64_t hd, off = 0, len = 1ull << 40, done;
  char buf[8];
  rc_open(&c, "good.dat", RIO_O_RDONLY, 0, &hd, NULL);
  CHECK(rc_read(&c, hd, 1, &off, &len, buf, &done) == RIO_ETOOBIG, "READ of 1 TiB: ETOOBIG");
  uint64_t o2[2] = {1ull << 62, 0}, l2[2] = {1ull << 62, 1};
  CHECK(rc_read(&c, hd, 2, o2, l2, buf, &done) == RIO_EINVAL, "segment past 2^63: EINVAL");
  CHECK(rc_ping(&c) == 0, "connection still serves");
  rc_close_conn(&c);
  good_client("oversize lengths");
}

static void test_garbage(void) {
  int before = rc_log_has(&S, "before authentication");
  /* Half a header, then close. */
  int fd = rc_connect_raw(S.host, S.port);
  rc_send_all(fd, "PRIO\x01", 5);
  close(fd);
  /* A HELLO header and part of its body. */
  fd = rc_connect_raw(S.host, S.port);
  send_raw_header(fd, RIO_MAGIC, RIO_T_HELLO, 40);
  rc_send_all(fd, "0123456789", 10);
  close(fd);
  /* Garbage. */
  fd = rc_connect_raw(S.host, S.port);
  uint8_t junk[512];
  rio_random(junk, sizeof junk);
  rc_send_all(fd, junk, sizeof junk);
  CHECK(closed_by_server(fd), "garbage: closed");
  close(fd);
  usleep(200000);
  CHECK(rc_log_has(&S, "before authentication") >= before + 3, "truncated and garbage frames logged");
  /* After authentication: garbage, a truncated WRITE, a malformed OPEN body. */
  rc_conn c;
  rc_connect(&c, &S, secret, slen);
  rc_send_all(c.fd, junk, sizeof junk);
  CHECK(closed_by_server(c.fd), "garbage after auth: closed");
  rc_close_conn(&c);
  rc_connect(&c, &S, secret, slen);
  uint64_t h, off = 0, len = 100000;
  rc_open(&c, "good.dat", RIO_O_RDWR, 0, &h, NULL);
  size_t n;
  uint8_t *body = rc_io_body(h, 0, 0, 1, &off, &len, NULL, &n);
  send_raw_header(c.fd, RIO_MAGIC, RIO_T_WRITE, (uint32_t)(n + len));
  rc_send_all(c.fd, body, n);
  rc_send_all(c.fd, junk, 100);
  free(body);
  rc_close_conn(&c);
  rc_connect(&c, &S, secret, slen);
  uint8_t ob[32];
  n = rio_encode_open(ob, sizeof ob, 0, 0, "good.dat");
  ob[8] = 200; /* pathlen past the body */
  rc_send_frame(c.fd, RIO_T_OPEN, 3, ob, n);
  CHECK(closed_by_server(c.fd), "malformed OPEN: closed");
  rc_close_conn(&c);
  usleep(200000);
  CHECK(rc_log_has(&S, "truncated WRITE data") == 1, "truncated WRITE logged");
  CHECK(rc_log_has(&S, "malformed request body") >= 1, "malformed body logged");
  /* The file was not damaged by the truncated write beyond the bytes that arrived. */
  good_client("garbage frames");
}

/* 150 connections at once (the server admits 32), each closed after; bounded in count and time. */
static void test_flood(void) {
  enum { N = 150 };
  int fds[N], opened = 0;
  for (int i = 0; i < N; i++)
    if ((fds[i] = rc_connect_raw(S.host, S.port)) >= 0) opened++;
  CHECK(opened > 0, "flood opened %d", opened);
  usleep(300000);
  CHECK(rc_log_has(&S, "too many connections") > 0, "flood refused beyond the limit and logged");
  for (int i = 0; i < N; i++)
    if (fds[i] >= 0) close(fds[i]);
  usleep(300000);
  good_client("a flood of connections");
}

int main(int argc, char **argv) {
  if (argc < 2) return fprintf(stderr, "usage: %s PARIO_SERVER\n", argv[0]), 2;
  const char *extra[] = {"--threads", "2", "--max-conns", "32", "--max-request", "1M", NULL};
  if (rc_workdir(&S, "sec") || rc_server_start(&S, argv[1], extra)) return fprintf(stderr, "cannot start\n"), 1;
  rc_read_secret(&S, secret, &slen);
  good_client("start");
  test_paths("openat2");
  test_auth();
  test_lengths();
  test_garbage();
  test_flood();
  CHECK(rc_server_stop(&S) == 0, "clean stop");
  /* The fallback confinement (no openat2): the same escapes refused. */
  setenv("PARIO_SERVER_NO_OPENAT2", "1", 1);
  int st = rc_server_start(&S, argv[1], extra);
  unsetenv("PARIO_SERVER_NO_OPENAT2");
  CHECK(st == 0, "restart without openat2");
  if (st == 0) {
    CHECK(rc_log_has(&S, "O_NOFOLLOW walk confinement") == 1, "fallback announced");
    test_paths("fallback");
    CHECK(rc_server_stop(&S) == 0, "clean stop");
  }
  /* --idle-timeout: an authenticated client that sends nothing and holds no file is closed and logged. */
  const char *idle[] = {"--idle-timeout", "1", NULL};
  if (rc_server_start(&S, argv[1], idle) == 0) {
    rc_conn c;
    CHECK(rc_connect(&c, &S, secret, slen) == 0 && rc_ping(&c) == 0, "idle: connect");
    rio_hdr h;
    uint8_t *b = NULL;
    CHECK(rc_recv_frame(c.fd, &h, &b, 5000) != 0, "idle: closed by the server");
    free(b);
    rc_close_conn(&c);
    CHECK(rc_log_has(&S, "idle for 1 s with no open file; closing") == 1, "idle close logged");
    good_client("an idle timeout");
    CHECK(rc_server_stop(&S) == 0, "clean stop");
  }
  printf("%d checks, %d failures (log: %s)\n", checks, failures, S.log);
  return failures != 0;
}
