/* pario-server against clients that try to starve the others (issue 31, item 2) and against
 * broken frames: a client that never reads its replies, one that opens handles until refused,
 * a descriptor budget under a low RLIMIT_NOFILE, a WRITE that stops mid-frame or is cut off,
 * and READ/OPEN bodies that do not add up. Good clients are served throughout. Loopback only.
 * usage: test_rio_dos PARIO_SERVER (PARIO_DOS_ARGS, if set, replaces the server options;
 * PARIO_DOS_ONLY=budget runs the descriptor budget part alone) */
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../unit/check.h"
#include "rioclient.h"

static rc_server S;
static uint8_t secret[RIO_MAX_SECRET];
static size_t slen;

/* One open/write/read/close round trip on c: 1 when the bytes came back. */
static int round_trip(rc_conn *c, const char *name, int i) {
  uint64_t h = 0, off = (uint64_t)i * 16, len = 16, done = 0;
  char data[17], back[16];
  snprintf(data, sizeof data, "round trip %5d", i);
  int ok = rc_open(c, name, RIO_O_RDWR | RIO_O_CREAT, 0644, &h, NULL) == 0;
  ok = ok && rc_write(c, h, 1, &off, &len, data, &done) == 0 && done == 16;
  ok = ok && rc_read(c, h, 1, &off, &len, back, &done) == 0 && done == 16 && !memcmp(back, data, 16);
  return rc_handle_op(c, RIO_T_CLOSE, h) == 0 && ok;
}

/* A good client: connect, authenticate, one round trip. */
static void good_client(const char *after) {
  rc_conn c;
  int ok = rc_connect(&c, &S, secret, slen) == 0 && round_trip(&c, "good.dat", 0);
  CHECK(ok, "a good client is served: %s", after);
  rc_close_conn(&c);
}

/* Wait up to secs for the log to have a line containing needle: 1 if it came. */
static int log_within(const char *needle, double secs) {
  for (double end = rc_now_s() + secs; rc_now_s() < end; usleep(50000))
    if (rc_log_has(&S, needle) > 0) return 1;
  return rc_log_has(&S, needle) > 0;
}

static void make_file(const char *name, size_t n) {
  char p[700];
  snprintf(p, sizeof p, "%s/%s", S.root, name);
  int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  char *b = calloc(1, n);
  for (size_t i = 0; i < n; i++) b[i] = (char)(i * 7 + 1);
  CHECK(fd >= 0 && write(fd, b, n) == (ssize_t)n, "made %s", name);
  close(fd);
  free(b);
}

/* A pipelines 64 READs of 1 MiB and never reads a reply. B and C each do 20 round trips, each
 * within 2 s, while A's replies sit unread; A is dropped after --send-timeout (3 s). */
static void test_unread_replies(void) {
  make_file("big.dat", 1 << 20);
  rc_conn a, b, c;
  uint64_t h = 0, off = 0, len = 1 << 20;
  CHECK(rc_connect(&a, &S, secret, slen) == 0 && rc_open(&a, "big.dat", RIO_O_RDONLY, 0, &h, NULL) == 0, "A opens");
  int small = 4096; /* A's receive buffer small: the server's sends block soon */
  setsockopt(a.fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  size_t n;
  uint8_t *body = rc_io_body(h, 0, 0, 1, &off, &len, NULL, &n);
  int sent = 0;
  for (int i = 0; i < 64; i++) sent += rc_send_frame(a.fd, RIO_T_READ, 100 + i, body, n) == 0;
  free(body);
  CHECK(sent == 64, "A sent 64 READs");
  double t_a = rc_now_s();
  usleep(300000); /* the server is now stuck on A's replies, if it can be */
  CHECK(rc_connect(&b, &S, secret, slen) == 0 && rc_connect(&c, &S, secret, slen) == 0, "B and C connect");
  double worst = 0;
  int ok = 0;
  for (int i = 0; i < 20; i++) {
    for (int k = 0; k < 2; k++) {
      double t0 = rc_now_s();
      ok += round_trip(k ? &c : &b, k ? "c.dat" : "b.dat", i);
      if (rc_now_s() - t0 > worst) worst = rc_now_s() - t0;
      if (rc_now_s() - t0 > 2.0) break;
    }
    if (worst > 2.0) break;
  }
  CHECK(ok == 40, "B and C: 40 round trips served while A reads nothing (got %d)", ok);
  CHECK(worst <= 2.0, "B and C: each round trip within 2 s (slowest %.2f s)", worst);
  CHECK(log_within("replies unread for 3 s (send timeout); closing", 12.0), "A dropped and logged");
  double t_drop = rc_now_s() - t_a;
  CHECK(t_drop >= 2.5 && t_drop <= 12.0, "A dropped after the send timeout (%.1f s)", t_drop);
  rc_close_conn(&a), rc_close_conn(&b), rc_close_conn(&c);
  good_client("after the client that did not read");
}

/* OPEN (create, read-write): the status, and an ERROR reply's message into msg ("" if none).
 * The handle of a successful open stays open. */
static int open_msg(rc_conn *c, const char *name, char *msg, size_t ml) {
  uint64_t h;
  int st = rc_open(c, name, RIO_O_RDWR | RIO_O_CREAT, 0644, &h, NULL);
  snprintf(msg, ml, "%.*s", (int)(ml - 1), st == -1 ? "" : c->last_msg);
  return st;
}

/* --max-handles 8: eight OPENs succeed, the ninth gets EBUSY with its message; after a CLOSE an
 * OPEN succeeds again. */
static void test_handle_cap(void) {
  rc_conn c;
  CHECK(rc_connect(&c, &S, secret, slen) == 0, "cap: connect");
  uint64_t h[9] = {0};
  int opened = 0;
  for (int i = 0; i < 8; i++) {
    char name[32];
    snprintf(name, sizeof name, "cap%d", i);
    opened += rc_open(&c, name, RIO_O_RDWR | RIO_O_CREAT, 0644, &h[i], NULL) == 0;
  }
  CHECK(opened == 8, "cap: 8 handles open (%d)", opened);
  char msg[200];
  int st = open_msg(&c, "cap8", msg, sizeof msg);
  CHECK(st == RIO_EBUSY, "cap: the 9th OPEN refused with EBUSY (got %d)", st);
  CHECK(strstr(msg, "too many open handles on this connection (max 8)") != NULL, "cap: message (got '%s')", msg);
  CHECK(rc_handle_op(&c, RIO_T_CLOSE, h[0]) == 0, "cap: close one");
  CHECK(rc_open(&c, "cap8", RIO_O_RDWR | RIO_O_CREAT, 0644, &h[8], NULL) == 0, "cap: then an OPEN succeeds");
  rc_close_conn(&c);
  good_client("the handle cap");
}

/* --idle-timeout 1 (the idle part's own server): a connection that opened nothing is closed
 * after a second of silence, and one that holds an open handle is not (a program computing
 * between two checkpoints): after 2.5 s it still reads back what it wrote. */
static void test_idle(const char *bin) {
  static const char *const args[] = {"--idle-timeout", "1", "--threads", "2", NULL};
  rc_server I;
  memset(&I, 0, sizeof I);
  int up = rc_workdir(&I, "dos-idle") == 0 && rc_server_start(&I, bin, args) == 0;
  CHECK(up, "idle: server started");
  if (!up) return;
  rc_conn bare, holder;
  uint64_t h = 0, off = 0, len = 5, done = 0;
  char back[6] = {0};
  uint8_t sec[RIO_MAX_SECRET];
  size_t sl = 0;
  rc_read_secret(&I, sec, &sl);
  CHECK(rc_connect(&bare, &I, sec, sl) == 0 && rc_connect(&holder, &I, sec, sl) == 0, "idle: connect");
  CHECK(rc_open(&holder, "kept.dat", RIO_O_RDWR | RIO_O_CREAT, 0644, &h, NULL) == 0 &&
        rc_write(&holder, h, 1, &off, &len, "hello", &done) == 0, "idle: the holder opens and writes");
  usleep(2500000);
  rio_hdr rh;
  uint8_t *rb = NULL;
  CHECK(rc_recv_frame(bare.fd, &rh, &rb, 2000) != 0, "idle: the connection without a file was closed");
  free(rb);
  CHECK(rc_read(&holder, h, 1, &off, &len, back, &done) == 0 && !memcmp(back, "hello", 5),
        "idle: the connection holding a file is still served after 2.5 s of silence");
  CHECK(rc_log_has(&I, "idle for 1 s with no open file; closing") == 1, "idle: one close logged");
  rc_close_conn(&bare);
  rc_close_conn(&holder);
  CHECK(rc_server_stop(&I) == 0, "idle: clean stop");
  char cmd[700];
  snprintf(cmd, sizeof cmd, "rm -rf '%.*s'", (int)(strlen(I.root) - 5), I.root); /* root is WORK/root */
  if (system(cmd) != 0) printf("could not remove %s\n", I.root);
}

/* A WRITE header promising data, part of it, then silence (the socket open): the server closes
 * within --frame-timeout (2 s) and logs it; a good client is served meanwhile. nseg segments
 * of seg bytes (1 of 1 MiB: the splice path; 2 of 32 KiB: the copy path). */
static void stalled_write(uint32_t nseg, uint64_t seg, size_t part) {
  rc_conn c;
  uint64_t h = 0, off[2] = {0, seg}, len[2] = {seg, seg};
  CHECK(rc_connect(&c, &S, secret, slen) == 0 && rc_open(&c, "stall.dat", RIO_O_RDWR | RIO_O_CREAT, 0644, &h, NULL) == 0,
        "stall: open");
  uint8_t io[RIO_IO_HDR + 2 * RIO_SEG];
  rio_wr w = rio_wr_init(io, sizeof io);
  rio_put_io_hdr(&w, h, 0, 0, nseg);
  for (uint32_t i = 0; i < nseg; i++) rio_put_u64(&w, off[i]), rio_put_u64(&w, len[i]);
  uint8_t hb[RIO_HDR_SIZE];
  rio_hdr rh = {RIO_VERSION, RIO_T_WRITE, 0, (uint32_t)(w.n + nseg * seg), 77};
  rio_hdr_encode(hb, &rh);
  char *data = calloc(1, part);
  const char *needle = "truncated WRITE data, request 0x4d (not complete within the frame timeout";
  int before = rc_log_has(&S, needle);
  double t0 = rc_now_s();
  CHECK(rc_send_all(c.fd, hb, sizeof hb) == 0 && rc_send_all(c.fd, io, w.n) == 0 && rc_send_all(c.fd, data, part) == 0,
        "stall: header and %zu bytes sent", part);
  free(data);
  good_client("during a stalled WRITE");
  uint8_t *rb = NULL;
  int got = rc_recv_frame(c.fd, &rh, &rb, 8000);
  free(rb);
  double dt = rc_now_s() - t0;
  CHECK(got != 0 && dt < 5.0, "stall (%u x %llu): closed within the frame timeout (%.1f s)", nseg,
        (unsigned long long)seg, dt);
  CHECK(log_within(needle, 2.0) && rc_log_has(&S, needle) == before + 1, "stall: logged");
  rc_close_conn(&c);
}

/* PROTOCOL.md's rule: a WRITE cut off leaves at most a prefix of the bytes received, no reply. */
static void test_cut_write(void) {
  rc_conn c;
  uint64_t h = 0, off = 0, len = 1 << 20, size = 1;
  CHECK(rc_connect(&c, &S, secret, slen) == 0 && rc_open(&c, "cut.dat", RIO_O_RDWR | RIO_O_CREAT | RIO_O_TRUNC, 0644,
                                                         &h, NULL) == 0, "cut: open");
  char *data = malloc(len);
  for (size_t i = 0; i < len; i++) data[i] = (char)(i % 251 + 1);
  size_t n;
  uint8_t *body = rc_io_body(h, 0, 0, 1, &off, &len, data, &n);
  size_t cut = RIO_HDR_SIZE + (n - len) + (512u << 10); /* header, io header, half the data */
  uint8_t hb[RIO_HDR_SIZE];
  rio_hdr rh = {RIO_VERSION, RIO_T_WRITE, 0, (uint32_t)n, 88};
  rio_hdr_encode(hb, &rh);
  const char *needle = "truncated WRITE data, request 0x58 (connection ended";
  CHECK(rc_send_all(c.fd, hb, sizeof hb) == 0 && rc_send_all(c.fd, body, cut - RIO_HDR_SIZE) == 0, "cut: sent half");
  uint8_t *rb = NULL;
  CHECK(rc_recv_frame(c.fd, &rh, &rb, 300) != 0, "cut: no reply to an incomplete WRITE");
  free(rb);
  rc_close_conn(&c);
  free(body);
  CHECK(log_within(needle, 5.0) && rc_log_has(&S, needle) == 1, "cut: logged");
  char p[700];
  snprintf(p, sizeof p, "%s/cut.dat", S.root);
  struct stat st;
  CHECK(stat(p, &st) == 0, "cut: file there");
  size = (uint64_t)st.st_size;
  CHECK(size <= (512u << 10), "cut: no more than the bytes received (%llu)", (unsigned long long)size);
  char *back = malloc(size + 1);
  int fd = open(p, O_RDONLY);
  CHECK(fd >= 0 && read(fd, back, size) == (ssize_t)size && !memcmp(back, data, size), "cut: a prefix of the data");
  close(fd);
  free(back), free(data);
}

/* A READ whose nseg does not fit its 40-byte body, and an OPEN whose path length does not fit
 * its body: ERROR (RIO_EPROTO) and the connection closed. */
static void malformed(unsigned type, const uint8_t *body, size_t n, const char *what) {
  rc_conn c;
  CHECK(rc_connect(&c, &S, secret, slen) == 0, "%s: connect", what);
  rc_send_frame(c.fd, type, 9, body, n);
  rio_hdr h;
  uint8_t *rb = NULL;
  int got = rc_recv_frame(c.fd, &h, &rb, 5000);
  rio_rd r = rio_rd_init(rb, got ? 0 : h.len);
  int st = got ? -1 : rio_get_status(&r);
  CHECK(got == 0 && h.type == (RIO_T_ERROR | RIO_REPLY) && st == RIO_EPROTO, "%s: ERROR EPROTO (type %#x status %d)",
        what, got ? 0 : h.type, st);
  free(rb), rb = NULL;
  CHECK(rc_recv_frame(c.fd, &h, &rb, 5000) != 0, "%s: connection closed", what);
  free(rb);
  rc_close_conn(&c);
}

static void test_malformed(void) {
  uint8_t b[40] = {0};
  rio_wr w = rio_wr_init(b, sizeof b);
  rio_put_io_hdr(&w, 1, 0, 0, 0xffffffffu);
  malformed(RIO_T_READ, b, sizeof b, "READ with nseg 0xffffffff in 40 bytes");
  w = rio_wr_init(b, sizeof b);
  rio_put_u32(&w, RIO_O_RDONLY), rio_put_u32(&w, 0), rio_put_u32(&w, 1000);
  malformed(RIO_T_OPEN, b, 20, "OPEN with a path of 1000 bytes in 20");
  good_client("malformed bodies");
}

/* Under RLIMIT_NOFILE 130 with 8 connection slots the budget for handles is 40 (130 - 64 -
 * 3 * 8 - 2 threads): three clients opening 40 handles each hit it, a new client is still
 * served (the last quarter is kept for connections with few handles), and descriptor errors
 * hardly reach the log. */
static void test_budget(const char *bin, const char *const *extra) {
  S.nofile = 130;
  int started = rc_server_start(&S, bin, extra) == 0;
  S.nofile = 0;
  CHECK(started, "budget: server under RLIMIT_NOFILE 130");
  if (!started) return;
  rc_conn c[3];
  int ok = 0, busy = 0, other = 0;
  char msg[200] = "";
  for (int k = 0; k < 3; k++) {
    CHECK(rc_connect(&c[k], &S, secret, slen) == 0, "budget: client %d", k);
    for (int i = 0; i < 40; i++) {
      char name[32], m[200];
      snprintf(name, sizeof name, "fd%d_%d", k, i);
      int st = open_msg(&c[k], name, m, sizeof m);
      ok += st == 0, busy += st == RIO_EBUSY, other += st != 0 && st != RIO_EBUSY;
      if (st == RIO_EBUSY) snprintf(msg, sizeof msg, "%s", m);
    }
  }
  CHECK(ok > 0 && ok <= 40 && busy == 120 - ok && other == 0, "budget: %d opened, %d EBUSY, %d other", ok, busy, other);
  CHECK(strstr(msg, "server descriptor budget exhausted") != NULL, "budget: message (got '%s')", msg);
  good_client("the descriptor budget spent");
  int emfile = rc_log_has(&S, "Too many open files");
  CHECK(emfile <= 3, "budget: %d descriptor errors logged", emfile);
  for (int k = 0; k < 3; k++) rc_close_conn(&c[k]);
  CHECK(rc_server_stop(&S) == 0, "budget: clean stop");
}

/* The watchdog: the test took too long; its server goes with it. */
static void on_alarm(int sig) {
  (void)sig;
  static const char m[] = "FAIL: the test did not finish in 110 s\n";
  if (write(1, m, sizeof m - 1) < 0) _exit(1);
  if (S.pid > 0) kill(S.pid, SIGKILL);
  _exit(1);
}

/* PARIO_DOS_ARGS: the server's options, split at spaces (to run this against older servers). */
static const char **args_from_env(const char *const *dflt) {
  const char *e = getenv("PARIO_DOS_ARGS");
  if (!e) return (const char **)dflt;
  static char buf[512];
  static const char *v[32];
  snprintf(buf, sizeof buf, "%s", e);
  int n = 0;
  for (char *s, *t = strtok_r(buf, " ", &s); t && n < 31; t = strtok_r(NULL, " ", &s)) v[n++] = t;
  v[n] = NULL;
  return v;
}

int main(int argc, char **argv) {
  if (argc < 2) return fprintf(stderr, "usage: %s PARIO_SERVER\n", argv[0]), 2;
  setvbuf(stdout, NULL, _IOLBF, 0); /* each failure shows even if the watchdog ends the test */
  signal(SIGALRM, on_alarm);
  alarm(110);                       /* never hang: SIGALRM ends the test (ctest's limit is 120 s) */
  static const char *const dflt[] = {"--threads", "4", "--send-timeout", "3", "--frame-timeout", "2",
                                     "--max-handles", "8", NULL};
  const char **extra = args_from_env(dflt);
  const char *only = getenv("PARIO_DOS_ONLY"); /* "budget": that part alone */
  if (rc_workdir(&S, "dos") || rc_server_start(&S, argv[1], extra)) return fprintf(stderr, "cannot start\n"), 1;
  rc_read_secret(&S, secret, &slen);
  good_client("start");
  if (!only) {
    test_malformed();
    test_unread_replies();
    test_handle_cap();
    stalled_write(1, 1 << 20, 100 << 10);
    stalled_write(2, 32 << 10, 10 << 10);
    test_cut_write();
    test_idle(argv[1]);
  }
  CHECK(rc_server_stop(&S) == 0, "clean stop");
  static const char *const budget[] = {"--threads", "2", "--max-conns", "8", NULL};
  test_budget(argv[1], getenv("PARIO_DOS_ARGS") ? extra : (const char **)budget);
  printf("%d checks, %d failures (log: %s)\n", checks, failures, S.log);
  if (failures == 0) { /* the work directory goes; on failure it stays for its log */
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%.*s'", (int)(strlen(S.root) - 5), S.root);
    if (system(cmd) != 0) printf("could not remove %s\n", S.root);
  }
  return failures != 0;
}
