/* Issue 31 item 4: named credentials (--credentials). A read-only one may read but never change
 * a file; one confined to a SUBDIR sees it as its root and reaches nothing outside; an unknown
 * name fails exactly like a wrong secret; a malformed name field in HELLO is refused.
 * usage: test_rio_cred PARIO_SERVER */
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../unit/check.h"
#include "rioclient.h"

static rc_server S;
static char dir[600]; /* the work directory, parent of the root */

static int put_file(const char *path, const char *text, int mode) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
  if (fd < 0) return -1;
  ssize_t n = write(fd, text, strlen(text));
  close(fd);
  return n == (ssize_t)strlen(text) ? chmod(path, (mode_t)mode) : -1;
}

static int exists(const char *rel) {
  char p[1300];
  snprintf(p, sizeof p, "%s/%s", S.root, rel);
  return access(p, F_OK) == 0;
}

/* reader: ro on the whole root; sub: rw beneath root/sub. */
static int setup(void) {
  char p[1300], creds[1400];
  char tmp[600];
  snprintf(tmp, sizeof tmp, "%s", S.root);
  snprintf(dir, sizeof dir, "%s", dirname(tmp)); /* dirname may write into tmp: not into dir */
  if (strlen(dir) < 2) return -1;
  snprintf(p, sizeof p, "%s/sub", S.root);
  if (mkdir(p, 0755)) return -1;
  snprintf(p, sizeof p, "%s/a.dat", S.root);
  if (put_file(p, "hello, reader", 0644)) return -1;
  snprintf(p, sizeof p, "%s/outside.txt", S.root);
  if (put_file(p, "not for sub", 0644)) return -1;
  snprintf(p, sizeof p, "%s/sub/in.dat", S.root);
  if (put_file(p, "inside sub", 0644)) return -1;
  snprintf(p, sizeof p, "%s/sub/link", S.root);
  if (symlink("../outside.txt", p)) return -1;
  snprintf(p, sizeof p, "%s/reader.secret", dir);
  if (put_file(p, "reader-secret-0123456789abcdef\n", 0600)) return -1;
  snprintf(p, sizeof p, "%s/sub.secret", dir);
  if (put_file(p, "sub-secret-0123456789abcdef0123\n", 0600)) return -1;
  snprintf(creds, sizeof creds,
           "# test credentials\n\nreader ro %s/reader.secret\n  sub rw %s/sub.secret sub\n", dir, dir);
  snprintf(p, sizeof p, "%s/creds", dir);
  return put_file(p, creds, 0600);
}

/* The last reply was an ERROR frame (a refusal with a reason, PROTOCOL.md) whose message holds
 * want; "" for a plain status reply of the request's own type. */
static int said(const rc_conn *c, unsigned type, const char *want) {
  if (!*want) return c->last_type == type && !c->last_msg[0];
  return c->last_type == RIO_T_ERROR && strstr(c->last_msg, want) != NULL;
}

static void test_read_only(void) {
  const char *rs = "reader-secret-0123456789abcdef";
  rc_conn r;
  CHECK(rc_connect_as(&r, &S, "reader", (const uint8_t *)rs, strlen(rs)) == 0, "reader authenticates");
  uint64_t h, size, off = 0, len = 5, done = 0, hw;
  char buf[16] = {0};
  CHECK(rc_open(&r, "a.dat", RIO_O_RDONLY, 0, &h, &size) == 0 && size == 13, "ro: open read-only");
  CHECK(rc_read(&r, h, 1, &off, &len, buf, &done) == 0 && done == 5 && !memcmp(buf, "hello", 5), "ro: read");
  CHECK(rc_stat(&r, h, &size) == 0 && size == 13, "ro: stat");
  int64_t old = 0;
  CHECK(rc_counter(&r, h, 1, RIO_CTR_GET, 0, &old) == 0, "ro: counter GET");
  CHECK(rc_counter(&r, h, 1, RIO_CTR_ADD, 1, &old) == RIO_EACCES &&
            said(&r, 0, "counter update refused: credential reader is read-only"),
        "ro: counter ADD refused, saying why ('%s')", r.last_msg);
  CHECK(rc_lock(&r, h, RIO_LOCK_READ, 0, 4) == 0 && rc_lock(&r, h, RIO_UNLOCK, 0, 4) == 0, "ro: read lock");
  CHECK(rc_lock(&r, h, RIO_LOCK_WRITE, 0, 4) == RIO_EACCES && said(&r, 0, "write lock refused: credential reader"),
        "ro: write lock refused, saying why ('%s')", r.last_msg);
  CHECK(rc_write(&r, h, 1, &off, &len, "XXXXX", &done) == RIO_EACCES &&
            said(&r, 0, "write refused: credential reader is read-only"),
        "ro: WRITE refused with EACCES, saying why ('%s')", r.last_msg);
  CHECK(rc_set_size(&r, h, 0) == RIO_EACCES && said(&r, 0, "set_size refused: credential reader is read-only"),
        "ro: SET_SIZE refused, saying why ('%s')", r.last_msg);
  CHECK(rc_preallocate(&r, h, 0, 4096) == RIO_EACCES && said(&r, 0, "preallocate refused: credential reader"),
        "ro: PREALLOCATE refused, saying why ('%s')", r.last_msg);
  CHECK(rc_handle_op(&r, RIO_T_SYNC, h) == 0, "ro: SYNC allowed (harmless)");
  CHECK(rc_open(&r, "a.dat", RIO_O_RDWR, 0, &hw, NULL) == RIO_EACCES &&
            said(&r, 0, "open for writing refused: credential reader is read-only"),
        "ro: open read-write refused, saying why ('%s')", r.last_msg);
  CHECK(rc_open(&r, "a.dat", RIO_O_WRONLY, 0, &hw, NULL) == RIO_EACCES, "ro: open write-only refused");
  CHECK(rc_open(&r, "new.dat", RIO_O_RDONLY | RIO_O_CREAT, 0644, &hw, NULL) == RIO_EACCES && !exists("new.dat"),
        "ro: open with create refused, nothing made");
  CHECK(rc_open(&r, "a.dat", RIO_O_RDONLY | RIO_O_APPEND, 0, &hw, NULL) == RIO_EACCES, "ro: append refused");
  CHECK(rc_open(&r, "a.dat", RIO_O_RDWR | RIO_O_TRUNC, 0, &hw, NULL) != 0, "ro: truncate refused");
  CHECK(rc_delete(&r, "a.dat") == RIO_EACCES && exists("a.dat") && said(&r, 0, "delete refused: credential reader"),
        "ro: DELETE refused, saying why ('%s'), file kept", r.last_msg);
  CHECK(rc_open(&r, "none.dat", RIO_O_RDONLY, 0, &hw, NULL) == RIO_ENOENT && said(&r, RIO_T_OPEN, ""),
        "ro: a missing file is a plain OPEN reply (type %u)", r.last_type);
  CHECK(rc_read(&r, h, 1, &off, &len, buf, &done) == 0 && !memcmp(buf, "hello", 5), "file unchanged");
  CHECK(rc_handle_op(&r, RIO_T_CLOSE, h) == 0, "ro: close");
  rc_close_conn(&r);
  CHECK(rc_log_has(&S, "authenticated as reader") == 1, "log names the credential");
  CHECK(rc_log_has(&S, "credential reader is read-only") >= 8, "refusals logged (%d)",
        rc_log_has(&S, "credential reader is read-only"));
}

static void test_subdir(void) {
  const char *ss = "sub-secret-0123456789abcdef0123";
  rc_conn c;
  CHECK(rc_connect_as(&c, &S, "sub", (const uint8_t *)ss, strlen(ss)) == 0, "sub authenticates");
  uint64_t h, size, off = 0, len = 10, done = 0;
  char buf[16] = {0};
  CHECK(rc_open(&c, "in.dat", RIO_O_RDONLY, 0, &h, &size) == 0 && size == 10 &&
            rc_read(&c, h, 1, &off, &len, buf, &done) == 0 && !memcmp(buf, "inside sub", 10),
        "sub: its subdir is its root");
  rc_handle_op(&c, RIO_T_CLOSE, h);
  CHECK(rc_open(&c, "sub/in.dat", RIO_O_RDONLY, 0, &h, NULL) == RIO_ENOENT, "sub: no sub/ inside sub");
  CHECK(rc_open(&c, "../outside.txt", RIO_O_RDONLY, 0, &h, NULL) == RIO_EACCES &&
            said(&c, 0, "open refused: path leaves the root (..) (credential sub is confined to its subdirectory)"),
        "sub: .. refused, saying why ('%s')", c.last_msg);
  CHECK(rc_open(&c, "x/../../outside.txt", RIO_O_RDONLY, 0, &h, NULL) == RIO_EACCES, "sub: x/../.. refused");
  CHECK(rc_open(&c, "/outside.txt", RIO_O_RDONLY, 0, &h, NULL) == RIO_EACCES &&
            said(&c, 0, "open refused: absolute path refused (credential sub"),
        "sub: absolute refused, saying why ('%s')", c.last_msg);
  int st = rc_open(&c, "link", RIO_O_RDONLY, 0, &h, NULL);
  CHECK((st == RIO_EACCES || st == RIO_ELOOP) && said(&c, 0, "open refused: "), "sub: symlink out refused (%d: '%s')",
        st, c.last_msg);
  CHECK(rc_delete(&c, "../outside.txt") == RIO_EACCES && exists("outside.txt") &&
            said(&c, 0, "delete refused: path leaves the root"),
        "sub: delete outside refused, saying why ('%s')", c.last_msg);
  CHECK(rc_open(&c, "made.dat", RIO_O_RDWR | RIO_O_CREAT, 0644, &h, NULL) == 0 && exists("sub/made.dat") &&
            !exists("made.dat"),
        "sub: create lands in the subdir");
  CHECK(rc_write(&c, h, 1, &off, &len, "0123456789", &done) == 0 && done == 10, "sub: rw writes");
  rc_handle_op(&c, RIO_T_CLOSE, h);
  CHECK(rc_delete(&c, "made.dat") == 0 && !exists("sub/made.dat"), "sub: delete in the subdir");
  rc_close_conn(&c);
}

/* An unknown name and a wrong secret: the same status and the same log line. */
static void test_probe(void) {
  const char *rs = "reader-secret-0123456789abcdef";
  rc_conn c;
  int base = rc_log_has(&S, "authentication failed (wrong secret)");
  int unknown = rc_connect_as(&c, &S, "nobody", (const uint8_t *)rs, strlen(rs));
  rc_close_conn(&c);
  int wrong = rc_connect_as(&c, &S, "reader", (const uint8_t *)"not-the-reader-secret-at-all", 28);
  rc_close_conn(&c);
  CHECK(unknown == RIO_EAUTH && wrong == RIO_EAUTH, "unknown name %d == wrong secret %d == EAUTH", unknown, wrong);
  /* "reader\0x" with the reader's secret: a name is its bytes, not a C string */
  uint8_t b[RIO_HELLO_MAX], *rep = NULL;
  rio_hello m = {2, 2, 0, {0}, 8, "reader\0x"};
  memset(&c, 0, sizeof c);
  c.fd = rc_connect_raw(S.host, S.port);
  size_t n = rio_encode_hello(b, sizeof b, &m), rn = 0;
  int st = rc_call(&c, RIO_T_HELLO, b, n, &rep, &rn);
  uint8_t mac[RIO_MAC];
  if (st == 0 && rn == 8 + RIO_NONCE) {
    rio_auth_mac((const uint8_t *)rs, strlen(rs), 0, rep + 8, m.nonce, mac);
    free(rep);
    rep = NULL;
    st = rc_call(&c, RIO_T_AUTH, mac, RIO_MAC, &rep, &rn);
  }
  free(rep);
  rc_close_conn(&c);
  CHECK(st == RIO_EAUTH, "a name with a NUL inside is unknown (%d)", st);
  usleep(100000);
  CHECK(rc_log_has(&S, "authentication failed (wrong secret)") == base + 3, "the same log line for all");
  uint8_t sec[RIO_MAX_SECRET];
  size_t sl;
  rc_read_secret(&S, sec, &sl);
  CHECK(rc_connect_as(&c, &S, "default", sec, sl) == 0, "--secret-file is the credential \"default\"");
  rc_close_conn(&c);
}

/* HELLO's name field: a length byte that does not match the frame, and a name in version 1. */
static void test_bad_hello(void) {
  uint8_t b[RIO_HELLO_MAX] = {0};
  rio_hello m = {1, 2, 0, {0}, 3, "abc"};
  size_t n = rio_encode_hello(b, sizeof b, &m);
  CHECK(n == RIO_HELLO_MIN + 4, "encoded with a name: %zu bytes", n);
  for (int k = 0; k < 3; k++) {
    int fd = rc_connect_raw(S.host, S.port);
    size_t len = n;
    if (k == 0) b[RIO_HELLO_MIN] = 5;       /* says 5, carries 3 */
    if (k == 1) b[RIO_HELLO_MIN] = 3, b[2] = 1; /* max_version 1 with a name */
    if (k == 2) b[2] = 2, len = RIO_HELLO_MIN + 1, b[RIO_HELLO_MIN] = 0; /* empty name */
    rio_hdr h;
    uint8_t *rb = NULL;
    rc_send_frame(fd, RIO_T_HELLO, 1, b, len);
    int r = rc_recv_frame(fd, &h, &rb, 5000);
    CHECK(r != 0 || h.type != (RIO_T_HELLO | RIO_REPLY) || !rb || rb[0] != RIO_OK, "malformed name %d refused", k);
    free(rb);
    rc_close_fd(fd);
  }
}

int main(int argc, char **argv) {
  if (argc < 2) return fprintf(stderr, "usage: %s PARIO_SERVER\n", argv[0]), 2;
  char creds[700];
  if (rc_workdir(&S, "cred") || setup()) return fprintf(stderr, "cannot set up\n"), 1;
  snprintf(creds, sizeof creds, "%s/creds", dir);
  const char *extra[] = {"--threads", "2", "--log-level", "debug", "--credentials", creds, NULL};
  if (rc_server_start(&S, argv[1], extra)) return fprintf(stderr, "cannot start\n"), 1;
  test_read_only();
  test_subdir();
  test_probe();
  test_bad_hello();
  CHECK(rc_server_stop(&S) == 0, "clean stop");
  printf("%d checks, %d failures (log: %s)\n", checks, failures, S.log);
  if (!failures && strstr(dir, "pario-rio-cred-")) {
    char cmd[800];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  }
  return failures != 0;
}
