/* pario-server killed (SIGKILL) in the middle of a WRITE: the data a completed SYNC
 * acknowledged is intact after a restart on the same root, the half-sent write did not touch
 * it, and new opens, writes and reads work on the restarted server.
 * usage: test_rio_fault PARIO_SERVER */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../unit/check.h"
#include "rioclient.h"

static rc_server S;
static uint8_t secret[RIO_MAX_SECRET];
static size_t slen;

static void pattern(uint8_t *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) p[i] = (uint8_t)((i * 131u + seed * 17u) >> 3);
}

int main(int argc, char **argv) {
  if (argc < 2) return fprintf(stderr, "usage: %s PARIO_SERVER\n", argv[0]), 2;
  const char *extra[] = {"--threads", "2", NULL};
  if (rc_workdir(&S, "fault") || rc_server_start(&S, argv[1], extra)) return fprintf(stderr, "cannot start\n"), 1;
  rc_read_secret(&S, secret, &slen);
  enum { A = 4 << 20, B = 16 << 20 };
  uint8_t *a = malloc(A), *b = malloc(B), *back = malloc(A);
  pattern(a, A, 1);
  pattern(b, B, 2);
  rc_conn c;
  uint64_t h, off = 0, len = A, done;
  CHECK(rc_connect(&c, &S, secret, slen) == 0, "connect");
  CHECK(rc_open(&c, "ckpt", RIO_O_RDWR | RIO_O_CREAT, 0644, &h, NULL) == 0, "open");
  CHECK(rc_write(&c, h, 1, &off, &len, a, &done) == 0 && done == A, "write 4 MiB");
  CHECK(rc_handle_op(&c, RIO_T_SYNC, h) == 0, "sync acknowledged");
  /* A 16 MiB write after it, at offset 4 MiB: header, segments and half the data, then kill. */
  uint64_t boff = A, blen = B;
  size_t n;
  uint8_t *body = rc_io_body(h, 0, 0, 1, &boff, &blen, NULL, &n);
  uint8_t hb[RIO_HDR_SIZE];
  rio_hdr hh = {RIO_VERSION, RIO_T_WRITE, 0, (uint32_t)(n + B), 99};
  rio_hdr_encode(hb, &hh);
  int sent = rc_send_all(c.fd, hb, sizeof hb) == 0 && rc_send_all(c.fd, body, n) == 0 && rc_send_all(c.fd, b, B / 2) == 0;
  CHECK(sent, "half of the write sent");
  free(body);
  rc_server_kill(&S);
  rc_close_conn(&c);
  CHECK(rc_log_has(&S, "stopped") == 0, "killed, not stopped");

  CHECK(rc_server_start(&S, argv[1], extra) == 0, "restart on the same root");
  CHECK(rc_connect(&c, &S, secret, slen) == 0, "connect after restart");
  uint64_t size = 0;
  CHECK(rc_open(&c, "ckpt", RIO_O_RDONLY, 0, &h, &size) == 0 && size >= A, "reopen (size %llu)",
        (unsigned long long)size);
  CHECK(rc_read(&c, h, 1, &off, &len, back, &done) == 0 && done == A && !memcmp(back, a, A),
        "synced data intact after the kill");
  /* Whatever arrived of the killed write is B's bytes, in place: never garbage. */
  if (size > A) {
    uint64_t part = size - A > B ? B : size - A;
    uint8_t *pb = malloc(part);
    CHECK(rc_read(&c, h, 1, &boff, &part, pb, &done) == 0 && done == part && !memcmp(pb, b, part),
          "the partial write holds only its own bytes (%llu of them)", (unsigned long long)part);
    free(pb);
  }
  rc_handle_op(&c, RIO_T_CLOSE, h);
  uint64_t h2;
  CHECK(rc_open(&c, "after", RIO_O_RDWR | RIO_O_CREAT | RIO_O_EXCL, 0644, &h2, NULL) == 0, "new open after restart");
  len = 1000;
  CHECK(rc_write(&c, h2, 1, &off, &len, a, &done) == 0 && done == 1000, "write after restart");
  CHECK(rc_read(&c, h2, 1, &off, &len, back, &done) == 0 && !memcmp(back, a, 1000), "read after restart");
  CHECK(rc_open(&c, "ckpt", RIO_O_RDWR, 0, &h, NULL) == 0 && rc_lock(&c, h, RIO_LOCK_WRITE, 0, 0) == 0,
        "no lock survives the killed server");
  rc_close_conn(&c);
  CHECK(rc_server_stop(&S) == 0, "clean stop");
  free(a), free(b), free(back);
  printf("%d checks, %d failures (log: %s)\n", checks, failures, S.log);
  return failures != 0;
}
