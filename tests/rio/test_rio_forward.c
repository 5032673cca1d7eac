/* pario-server as a forwarder: every request type passes through (handles kept per client), and
 * the READ/WRITE parts of collective operations reach the server merged, one request per
 * collective (the server's count says so), with the right bytes on disk and read back.
 * usage: test_rio_forward PARIO_SERVER */
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../unit/check.h"
#include "rioclient.h"

enum { NCLI = 4, STEPS = 10, PIECE = 4096 };
static rc_server S, F;
static uint8_t secret[RIO_MAX_SECRET];
static size_t slen;
static pthread_barrier_t bar;
static int thread_errors;

static uint8_t byte_at(uint64_t off) { return (uint8_t)(off * 7 + (off >> 12)); }

/* One client of the collective: at every step it writes (then reads) its piece of a block of
 * NCLI adjacent pieces, tagged coll_id = step + 1, coll_n = NCLI. */
static void *client(void *arg) {
  int rank = (int)(long)arg, bad = 0;
  rc_conn c;
  uint64_t h = 0, done;
  uint8_t buf[PIECE], back[PIECE];
  if (rc_connect(&c, &F, secret, slen) || rc_open(&c, "coll.dat", RIO_O_RDWR | RIO_O_CREAT, 0644, &h, NULL)) bad++;
  pthread_barrier_wait(&bar);
  for (int s = 0; s < STEPS && !bad; s++) {
    uint64_t off = ((uint64_t)s * NCLI + (uint64_t)rank) * PIECE, len = PIECE;
    for (int i = 0; i < PIECE; i++) buf[i] = byte_at(off + (uint64_t)i);
    if (rc_write_coll(&c, h, (uint64_t)s + 1, NCLI, 1, &off, &len, buf, &done) || done != PIECE) bad++;
    pthread_barrier_wait(&bar);
  }
  for (int s = 0; s < STEPS && !bad; s++) {
    uint64_t off = ((uint64_t)s * NCLI + (uint64_t)(NCLI - 1 - rank)) * PIECE, len = PIECE;
    size_t n;
    uint8_t *body = rc_io_body(h, 1000 + (uint64_t)s, NCLI, 1, &off, &len, NULL, &n), *rb = NULL;
    size_t rn = 0;
    int st = rc_call(&c, RIO_T_READ, body, n, &rb, &rn);
    free(body);
    if (st || rn != 8 + PIECE || rio_load_u64(rb) != PIECE) bad++;
    else memcpy(back, rb + 8, PIECE);
    free(rb);
    for (int i = 0; !bad && i < PIECE; i++) bad += back[i] != byte_at(off + (uint64_t)i);
    pthread_barrier_wait(&bar);
  }
  rc_handle_op(&c, RIO_T_CLOSE, h);
  rc_close_conn(&c);
  if (bad) __atomic_add_fetch(&thread_errors, 1, __ATOMIC_RELAXED);
  return NULL;
}

static void test_passthrough(void) {
  rc_conn a, b;
  CHECK(rc_connect(&a, &F, secret, slen) == 0 && rc_connect(&b, &F, secret, slen) == 0, "two clients via forwarder");
  uint64_t ha, hb, off[2] = {10, 0}, len[2] = {5, 3}, done;
  char back[8];
  CHECK(rc_ping(&a) == 0, "ping through");
  CHECK(rc_open(&a, "p.dat", RIO_O_RDWR | RIO_O_CREAT, 0644, &ha, NULL) == 0, "open through");
  CHECK(rc_write(&a, ha, 2, off, len, "abcdefgh", &done) == 0 && done == 8, "segments through");
  CHECK(rc_read(&a, ha, 2, off, len, back, &done) == 0 && done == 8 && !memcmp(back, "abcdefgh", 8), "read back");
  CHECK(rc_open(&b, "p.dat", RIO_O_RDWR, 0, &hb, NULL) == 0, "second open");
  CHECK(rc_stat(&b, ha, &done) == RIO_EBADF, "a's handle refused to b");
  CHECK(rc_lock(&a, ha, RIO_LOCK_WRITE, 0, 0) == 0, "lock through");
  rio_lock_req m = {hb, RIO_LOCK_WRITE, 0, 1};
  uint8_t lb[32];
  rio_encode_lock(lb, sizeof lb, &m);
  rc_send_frame(b.fd, RIO_T_LOCK, 55, lb, 32);
  CHECK(rc_ping(&b) == 0, "b served while its lock waits");
  CHECK(rc_lock(&a, ha, RIO_UNLOCK, 0, 0) == 0, "unlock");
  rio_hdr hh;
  uint8_t *rb = NULL;
  CHECK(rc_recv_frame(b.fd, &hh, &rb, 10000) == 0 && hh.id == 55 && rb && rb[0] == 0, "b's lock granted");
  free(rb);
  int64_t old = -1;
  CHECK(rc_counter(&a, ha, 1, RIO_CTR_ADD, 4, &old) == 0 && old == 0, "counter via a");
  CHECK(rc_counter(&b, hb, 1, RIO_CTR_ADD, 4, &old) == 0 && old == 4, "counter shared via b");
  CHECK(rc_handle_op(&a, RIO_T_CLOSE, ha) == 0 && rc_stat(&a, ha, &done) == RIO_EBADF, "close through");
  rc_close_conn(&b); /* b leaves with its handle and lock: the forwarder closes them upstream */
  CHECK(rc_open(&a, "p.dat", RIO_O_RDWR, 0, &ha, NULL) == 0 && rc_lock(&a, ha, RIO_LOCK_WRITE, 0, 0) == 0,
        "the departed client's lock is gone");
  rc_handle_op(&a, RIO_T_CLOSE, ha);
  CHECK(rc_delete(&a, "p.dat") == 0 && rc_delete(&a, "p.dat") == RIO_ENOENT, "delete through");
  CHECK(rc_open(&a, "../x", RIO_O_RDONLY, 0, &ha, NULL) == RIO_EACCES, "escape refused through the forwarder");
  rc_close_conn(&a);
}

/* A merged READ that the end of file cuts: each part gets its own bytes up to the end of file
 * in its own segment order, then nothing, as from the server directly. */
static void test_eof_merge(void) {
  const uint64_t size = (uint64_t)NCLI * STEPS * PIECE;
  rc_conn a, b;
  uint64_t ha, hb;
  CHECK(rc_connect(&a, &F, secret, slen) == 0 && rc_connect(&b, &F, secret, slen) == 0, "eof: connect");
  CHECK(rc_open(&a, "coll.dat", RIO_O_RDONLY, 0, &ha, NULL) == 0 && rc_open(&b, "coll.dat", RIO_O_RDONLY, 0, &hb, NULL) == 0,
        "eof: open");
  /* a: [size-100, 50) then [0, 10): whole. b: [size-50, 100) cut after 50, then [10, 10): not sent. */
  uint64_t ao[2] = {size - 100, 0}, al[2] = {50, 10}, bo[2] = {size - 50, 10}, bl[2] = {100, 10};
  size_t an, bn;
  uint8_t *abody = rc_io_body(ha, 777, 2, 2, ao, al, NULL, &an), *bbody = rc_io_body(hb, 777, 2, 2, bo, bl, NULL, &bn);
  rc_send_frame(a.fd, RIO_T_READ, 1, abody, an);
  rc_send_frame(b.fd, RIO_T_READ, 2, bbody, bn);
  free(abody), free(bbody);
  rio_hdr h;
  uint8_t *ra = NULL, *rb = NULL;
  int ok = rc_recv_frame(a.fd, &h, &ra, 10000) == 0 && h.id == 1 && h.len == 16 + 60 && rio_load_u64(ra + 8) == 60;
  for (int i = 0; ok && i < 50; i++) ok = ra[16 + i] == byte_at(size - 100 + (uint64_t)i);
  for (int i = 0; ok && i < 10; i++) ok = ra[16 + 50 + i] == byte_at((uint64_t)i);
  CHECK(ok, "eof: part a gets both its segments in its order");
  ok = rc_recv_frame(b.fd, &h, &rb, 10000) == 0 && h.id == 2 && h.len == 16 + 50 && rio_load_u64(rb + 8) == 50;
  for (int i = 0; ok && i < 50; i++) ok = rb[16 + i] == byte_at(size - 50 + (uint64_t)i);
  CHECK(ok, "eof: part b gets the 50 bytes up to the end of file, then nothing");
  free(ra), free(rb);
  rc_close_conn(&a);
  rc_close_conn(&b);
}

int main(int argc, char **argv) {
  if (argc < 2) return fprintf(stderr, "usage: %s PARIO_SERVER\n", argv[0]), 2;
  /* --merge-wait 1000: on a loaded machine a part may come later than the default 50 ms, and the
   * group would go part by part (correct, but not what the counts below check) */
  const char *extra[] = {"--threads", "2", NULL},
             *fextra[] = {"--threads", "2", "--log-level", "debug", "--merge-wait", "1000", NULL};
  if (rc_workdir(&S, "fwd") || rc_server_start(&S, argv[1], extra)) return fprintf(stderr, "cannot start\n"), 1;
  rc_read_secret(&S, secret, &slen);
  F = S;
  snprintf(F.forward_to, sizeof F.forward_to, "%s:%d", S.host, S.port);
  snprintf(F.log, sizeof F.log, "%.*s/forwarder.log", (int)(strrchr(S.log, '/') - S.log), S.log);
  if (rc_server_start(&F, argv[1], fextra)) return fprintf(stderr, "cannot start the forwarder\n"), 1;
  test_passthrough();

  pthread_barrier_init(&bar, NULL, NCLI);
  pthread_t t[NCLI];
  for (long i = 0; i < NCLI; i++) pthread_create(&t[i], NULL, client, (void *)i);
  for (int i = 0; i < NCLI; i++) pthread_join(t[i], NULL);
  CHECK(thread_errors == 0, "collective writes and reads through the forwarder (%d clients failed)", thread_errors);
  /* The file on disk holds every piece. */
  char p[1024];
  snprintf(p, sizeof p, "%s/coll.dat", S.root);
  int fd = open(p, O_RDONLY), bad = 0;
  static uint8_t disk[NCLI * STEPS * PIECE];
  CHECK(fd >= 0 && pread(fd, disk, sizeof disk, 0) == (ssize_t)sizeof disk, "file complete on disk");
  for (size_t i = 0; i < sizeof disk; i++) bad += disk[i] != byte_at(i);
  CHECK(bad == 0, "bytes on disk (%d wrong)", bad);
  if (fd >= 0) close(fd);
  CHECK(rc_log_has(&F, "requests merged into one WRITE") == STEPS, "forwarder merged every collective WRITE");
  CHECK(rc_log_has(&F, "requests merged into one READ") == STEPS, "forwarder merged every collective READ");
  test_eof_merge();
  CHECK(rc_log_has(&F, "requests merged into one READ") == STEPS + 1, "the end-of-file READ was merged");
  CHECK(rc_server_stop(&F) == 0, "forwarder stops cleanly");
  CHECK(rc_server_stop(&S) == 0, "server stops cleanly");
  /* The server saw one WRITE per collective step (plus the 1 of the pass-through test). */
  char want[128];
  snprintf(want, sizeof want, "(READ %d, WRITE %d,", STEPS + 2, STEPS + 1);
  CHECK(rc_log_has(&S, want) == 1, "server served %d WRITEs and READs for %d client requests each", STEPS + 1,
        NCLI * STEPS + 1);
  printf("%d checks, %d failures (logs: %s, %s)\n", checks, failures, S.log, F.log);
  return failures != 0;
}
