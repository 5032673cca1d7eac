/* A forwarder in front of a server that is not on loopback (issue 31): in a network namespace of
 * its own, the server listens on 10.99.0.1, an address of lo that is not 127/8, so it treats the
 * forwarder as a remote peer and refuses plain TCP without integrity (no --insecure). The
 * forwarder logs in upstream with the client code of libpario (src/rio/login.c): version 2,
 * records under a MAC, a named credential with --forward-user / --forward-secret-file. Checked:
 * a raw version 1 client is refused there (so the address counts as remote), writes and reads
 * through the default forwarder reach the file, a forwarder logged in as a read-only credential
 * reads but is refused a write (RIO_EACCES, nothing created), and one with the wrong secret for
 * its credential does not start and says why. With the openssl command: the same through TLS
 * upstream (--forward-tls-ca) to a server with --tls-cert, and a forwarder without it refused
 * there with a reason.
 * usage: test_rio_fwd_auth PARIO_SERVER   (skips, 77, without root or network namespaces) */
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../unit/check.h"
#include "rioclient.h"

#define ADDR "10.99.0.1"

static rc_server S;
static uint8_t secret[RIO_MAX_SECRET];
static size_t slen;
static char dir[512], rsecret[600], creds[600];

static int write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (!f) return -1;
  fputs(text, f);
  fclose(f);
  return chmod(path, 0600);
}

/* A forwarder to S as tag (its log beside S's), with extra arguments. */
static int forwarder(rc_server *F, const char *tag, const char *const *extra, const char *bin) {
  *F = S;
  F->listen[0] = '\0';
  snprintf(F->forward_to, sizeof F->forward_to, "%s:%d", S.host, S.port);
  snprintf(F->log, sizeof F->log, "%s/%s.log", dir, tag);
  return rc_server_start(F, bin, extra);
}

static void test_default(const char *bin) {
  rc_server F;
  rc_conn c;
  uint64_t h, off = 0, len = 11, done;
  char back[12] = {0};
  CHECK(forwarder(&F, "fwd-default", NULL, bin) == 0, "a forwarder logs in upstream without --insecure there");
  CHECK(rc_connect(&c, &F, secret, slen) == 0, "a client reaches it");
  CHECK(rc_open(&c, "w.dat", RIO_O_RDWR | RIO_O_CREAT, 0644, &h, NULL) == 0, "open for writing through it");
  CHECK(rc_write(&c, h, 1, &off, &len, "hello world", &done) == 0 && done == 11, "write through it");
  CHECK(rc_read(&c, h, 1, &off, &len, back, &done) == 0 && done == 11 && !memcmp(back, "hello world", 11),
        "read back through it");
  rc_handle_op(&c, RIO_T_CLOSE, h);
  rc_close_conn(&c);
  char path[600];
  snprintf(path, sizeof path, "%s/w.dat", S.root);
  FILE *f = fopen(path, "r");
  size_t n = f ? fread(back, 1, sizeof back, f) : 0;
  if (f) fclose(f);
  CHECK(n == 11 && !memcmp(back, "hello world", 11), "the bytes are in the server's file");
  CHECK(rc_log_has(&F, "records with a MAC") == 1, "the forwarder logged in with MAC records");
  CHECK(rc_server_stop(&F) == 0, "the forwarder stops cleanly");
}

static void test_readonly(const char *bin) {
  rc_server F;
  rc_conn c;
  uint64_t h, off = 0, len = 5, done;
  char back[8] = {0};
  const char *extra[] = {"--forward-user", "reader", "--forward-secret-file", rsecret, NULL};
  CHECK(forwarder(&F, "fwd-reader", extra, bin) == 0, "a forwarder logs in as credential reader");
  CHECK(rc_connect(&c, &F, secret, slen) == 0, "a client reaches it");
  CHECK(rc_open(&c, "w.dat", RIO_O_RDONLY, 0, &h, NULL) == 0, "a read-only open through it");
  CHECK(rc_read(&c, h, 1, &off, &len, back, &done) == 0 && done == 5 && !memcmp(back, "hello", 5), "it reads");
  rc_handle_op(&c, RIO_T_CLOSE, h);
  CHECK(rc_open(&c, "x.dat", RIO_O_RDWR | RIO_O_CREAT, 0644, &h, NULL) == RIO_EACCES, "a write open is refused");
  CHECK(rc_open(&c, "w.dat", RIO_O_WRONLY, 0, &h, NULL) == RIO_EACCES, "an existing file too");
  rc_close_conn(&c);
  char path[600];
  struct stat st;
  snprintf(path, sizeof path, "%s/x.dat", S.root);
  CHECK(stat(path, &st) != 0, "nothing was created");
  CHECK(rc_server_stop(&F) == 0, "the forwarder stops cleanly");

  const char *wrong[] = {"--forward-user", "reader", NULL}; /* --secret-file's secret is not reader's */
  CHECK(forwarder(&F, "fwd-wrong", wrong, bin) != 0, "a forwarder with the wrong secret does not start");
  CHECK(rc_log_has(&F, "refused credential reader") >= 1, "and says the server refused the credential");
}

/* TLS upstream: a second server on the same root with a certificate for ADDR. */
static void test_tls(const char *bin) {
  char cmd[2048], cert[600], key[600], ca[700];
  snprintf(cert, sizeof cert, "%s/cert.pem", dir);
  snprintf(key, sizeof key, "%s/cert.key", dir);
  snprintf(cmd, sizeof cmd, "openssl req -x509 -newkey rsa:2048 -nodes -keyout '%s' -out '%s' -days 1 -subj /CN=" ADDR
           " -addext subjectAltName=IP:" ADDR " 2>/dev/null", key, cert);
  if (system("command -v openssl >/dev/null") || system(cmd)) {
    printf("no openssl command: the TLS part is skipped\n");
    return;
  }
  rc_server T = S, F;
  snprintf(T.log, sizeof T.log, "%s/tls-server.log", dir);
  snprintf(T.listen, sizeof T.listen, ADDR ":0");
  const char *targs[] = {"--tls-cert", cert, "--tls-key", key, NULL};
  CHECK(rc_server_start(&T, bin, targs) == 0, "a TLS server on " ADDR);
  rc_server saved = S;
  S = T; /* forwarder() points at S */
  const char *fargs[] = {"--forward-tls-ca", cert, NULL};
  CHECK(forwarder(&F, "fwd-tls", fargs, bin) == 0, "a forwarder logs in upstream over TLS");
  rc_conn c;
  uint64_t h, off = 0, len = 4, done;
  char back[4];
  CHECK(rc_connect(&c, &F, secret, slen) == 0, "a client reaches it");
  CHECK(rc_open(&c, "w.dat", RIO_O_RDWR, 0, &h, NULL) == 0, "open for writing through TLS");
  CHECK(rc_write(&c, h, 1, &off, &len, "HELL", &done) == 0 && done == 4, "write through TLS");
  CHECK(rc_read(&c, h, 1, &off, &len, back, &done) == 0 && done == 4 && !memcmp(back, "HELL", 4), "read back");
  rc_handle_op(&c, RIO_T_CLOSE, h);
  rc_close_conn(&c);
  CHECK(rc_log_has(&F, "(protocol version 2, TLS)") == 1, "the forwarder logged in over TLS");
  CHECK(rc_server_stop(&F) == 0, "the forwarder stops cleanly");
  CHECK(forwarder(&F, "fwd-notls", NULL, bin) != 0, "without --forward-tls-ca it does not start");
  CHECK(rc_log_has(&F, "a TLS server? then give --forward-tls-ca") + rc_log_has(&F, "speaks TLS: give --forward-tls-ca") >= 1,
        "and says to give --forward-tls-ca");
  snprintf(ca, sizeof ca, "%s/secret", dir); /* not a certificate */
  const char *bad[] = {"--forward-tls-ca", ca, NULL};
  CHECK(forwarder(&F, "fwd-badca", bad, bin) != 0 && rc_log_has(&F, "check --forward-tls-ca") >= 1,
        "a CA file without the certificate: refused, with a reason");
  S = saved;
  CHECK(rc_server_stop(&T) == 0, "the TLS server stops cleanly");
}

int main(int argc, char **argv) {
  if (argc < 2) return fprintf(stderr, "usage: %s PARIO_SERVER\n", argv[0]), 2;
  if (geteuid() != 0 || unshare(CLONE_NEWNET) != 0) {
    printf("SKIP: needs root and a network namespace (unshare)\n");
    return 77;
  }
  if (system("ip link set lo up && ip addr add " ADDR "/32 dev lo")) {
    printf("SKIP: cannot give lo the address " ADDR " in the namespace\n");
    return 77;
  }
  CHECK(rc_workdir(&S, "fwdauth") == 0, "work directory");
  snprintf(dir, sizeof dir, "%.*s", (int)(strrchr(S.log, '/') - S.log), S.log);
  snprintf(rsecret, sizeof rsecret, "%s/reader.secret", dir);
  snprintf(creds, sizeof creds, "%s/creds", dir);
  char line[700];
  snprintf(line, sizeof line, "reader ro %s\n", rsecret);
  CHECK(write_file(rsecret, "the reader's secret, long enough\n") == 0 && write_file(creds, line) == 0, "credentials");
  snprintf(S.listen, sizeof S.listen, ADDR ":0");
  const char *extra[] = {"--credentials", creds, NULL};
  CHECK(rc_server_start(&S, argv[1], extra) == 0 && !strcmp(S.host, ADDR), "server on " ADDR);
  CHECK(rc_read_secret(&S, secret, &slen) == 0, "secret");
  rc_conn c;
  CHECK(rc_connect(&c, &S, secret, slen) != 0, "a version 1 client without MAC is refused there (not loopback)");
  CHECK(rc_log_has(&S, "refused: plain TCP without integrity") >= 1, "the server says so");
  test_default(argv[1]);
  test_readonly(argv[1]);
  test_tls(argv[1]);
  int before = rc_log_has(&S, "refused: plain TCP without integrity");
  CHECK(rc_server_stop(&S) == 0, "the server stops cleanly");
  CHECK(before == 1, "only the raw client was refused plain TCP");
  printf("%d checks, %d failures (logs in %s)\n", checks, failures, dir);
  if (!failures) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd)) printf("could not remove %s\n", dir);
  }
  return failures ? 1 : 0;
}
