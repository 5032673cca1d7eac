/* pario-server end to end through the raw protocol: every request type checked against the bytes
 * on disk, streamed transfers, end of file inside a READ, locks that wait without blocking,
 * the shared counter, 32 pipelined requests, 600 frames sent as one stream cut into uneven
 * pieces (the server's read-ahead and batched replies), stale handles, CHECKSUM (values, pieces,
 * refusals, a malformed body closing the connection), a clean SIGTERM shutdown.
 * usage: test_rio_basic PARIO_SERVER [SERVER OPTIONS...] */
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../unit/check.h"
#include "rio/checksum.h"
#include "rioclient.h"

static rc_server S;
static uint8_t secret[RIO_MAX_SECRET];
static size_t slen;

static int disk_bytes(const char *name, uint64_t off, void *buf, size_t n) {
  char p[1024];
  snprintf(p, sizeof p, "%s/%s", S.root, name);
  int fd = open(p, O_RDONLY);
  if (fd < 0) return -1;
  ssize_t r = pread(fd, buf, n, (off_t)off);
  close(fd);
  return r == (ssize_t)n ? 0 : -1;
}

static void test_segments(rc_conn *c) {
  uint64_t h, size;
  CHECK(rc_open(c, "nodir/f", RIO_O_RDWR | RIO_O_CREAT, 0644, &h, &size) == RIO_ENOENT, "missing dir: ENOENT");
  CHECK(rc_open(c, "f.dat", RIO_O_RDWR | RIO_O_CREAT, 0644, &h, &size) == 0 && size == 0, "create");
  uint64_t off[3] = {100, 0, 50}, len[3] = {10, 5, 20}, done = 0;
  uint8_t data[35], back[35], disk[35];
  for (int i = 0; i < 35; i++) data[i] = (uint8_t)(i * 7 + 1);
  CHECK(rc_write(c, h, 3, off, len, data, &done) == 0 && done == 35, "write 3 segments: done %llu",
        (unsigned long long)done);
  CHECK(rc_read(c, h, 3, off, len, back, &done) == 0 && done == 35 && !memcmp(back, data, 35), "read them back");
  CHECK(disk_bytes("f.dat", 100, disk, 10) == 0 && !memcmp(disk, data, 10), "segment 0 on disk");
  CHECK(disk_bytes("f.dat", 0, disk, 5) == 0 && !memcmp(disk, data + 10, 5), "segment 1 on disk");
  CHECK(disk_bytes("f.dat", 50, disk, 20) == 0 && !memcmp(disk, data + 15, 20), "segment 2 on disk");
  uint64_t o2[3] = {105, 0, 60}, l2[3] = {10, 5, 5};
  CHECK(rc_read(c, h, 3, o2, l2, back, &done) == 0 && done == 5 && !memcmp(back, data + 5, 5),
        "EOF inside the list: the bytes up to EOF, then nothing (done %llu)", (unsigned long long)done);
  CHECK(rc_stat(c, h, &size) == 0 && size == 110, "stat size %llu", (unsigned long long)size);
  CHECK(rc_set_size(c, h, 4096) == 0 && rc_stat(c, h, &size) == 0 && size == 4096, "set_size");
  CHECK(rc_preallocate(c, h, 0, 8192) == 0 && rc_stat(c, h, &size) == 0 && size == 8192, "preallocate extends");
  CHECK(rc_handle_op(c, RIO_T_SYNC, h) == 0, "sync");
  /* empty segments and an empty list */
  uint64_t o3[2] = {7, 0}, l3[2] = {0, 0};
  CHECK(rc_write(c, h, 2, o3, l3, "", &done) == 0 && done == 0, "empty segments");
  CHECK(rc_handle_op(c, RIO_T_CLOSE, h) == 0, "close");
  CHECK(rc_stat(c, h, &size) == RIO_EBADF, "stale handle refused");
  uint64_t ro;
  CHECK(rc_open(c, "f.dat", RIO_O_RDONLY, 0, &ro, &size) == 0 && size == 8192, "reopen read-only");
  CHECK(rc_write(c, ro, 1, off, len, data, &done) == RIO_EBADF, "write on a read-only handle");
  CHECK(rc_open(c, "f.dat", RIO_O_RDWR | RIO_O_CREAT | RIO_O_EXCL, 0644, &h, NULL) == RIO_EEXIST, "O_EXCL");
  CHECK(rc_handle_op(c, RIO_T_CLOSE, ro) == 0, "close ro");
  CHECK(rc_delete(c, "f.dat") == 0, "delete");
  struct stat st;
  char p[1024];
  snprintf(p, sizeof p, "%s/f.dat", S.root);
  CHECK(stat(p, &st) != 0, "deleted on disk");
  CHECK(rc_delete(c, "f.dat") == RIO_ENOENT, "delete again: ENOENT");
}

static void test_large(rc_conn *c) {
  size_t n = 3u << 20;
  uint8_t *a = malloc(n), *b = malloc(n), *d = malloc(n);
  for (size_t i = 0; i < n; i++) a[i] = (uint8_t)(i * 2654435761u >> 13);
  uint64_t h, done;
  CHECK(rc_open(c, "big", RIO_O_RDWR | RIO_O_CREAT | RIO_O_TRUNC, 0600, &h, NULL) == 0, "open big");
  uint64_t off[2] = {n / 2, 0}, len[2] = {n / 2, n / 2};
  CHECK(rc_write(c, h, 2, off, len, a, &done) == 0 && done == n, "3 MiB write streamed");
  CHECK(rc_read(c, h, 2, off, len, b, &done) == 0 && done == n && !memcmp(a, b, n), "3 MiB read streamed");
  CHECK(disk_bytes("big", 0, d, n / 2) == 0 && !memcmp(d, a + n / 2, n / 2), "big on disk");
  rc_handle_op(c, RIO_T_CLOSE, h);
  free(a), free(b), free(d);
}

static void test_locks_counter(rc_conn *c1, rc_conn *c2) {
  uint64_t h1, h2;
  CHECK(rc_open(c1, "shared", RIO_O_RDWR | RIO_O_CREAT, 0644, &h1, NULL) == 0, "open 1");
  CHECK(rc_open(c2, "shared", RIO_O_RDWR, 0, &h2, NULL) == 0, "open 2");
  CHECK(rc_lock(c1, h1, RIO_LOCK_WRITE, 0, 100) == 0, "write lock 1");
  /* c2's conflicting lock waits; c2's ping is answered meanwhile. */
  rio_lock_req m = {h2, RIO_LOCK_WRITE, 50, 10};
  uint8_t b[32];
  rio_encode_lock(b, sizeof b, &m);
  CHECK(rc_send_frame(c2->fd, RIO_T_LOCK, 777, b, 32) == 0, "send waiting lock");
  CHECK(rc_ping(c2) == 0, "ping answered while the lock waits");
  rio_hdr hh;
  uint8_t *rb;
  CHECK(rc_recv_frame(c2->fd, &hh, &rb, 300) != 0, "lock not granted while held");
  CHECK(rc_lock(c1, h1, RIO_UNLOCK, 0, 100) == 0, "unlock 1");
  CHECK(rc_recv_frame(c2->fd, &hh, &rb, 10000) == 0 && hh.id == 777 && rb && rb[0] == 0, "lock granted after unlock");
  free(rb);
  CHECK(rc_lock(c1, h1, RIO_LOCK_WRITE, 60, 10) == 0, "a disjoint range is granted at once");
  CHECK(rc_lock(c2, h2, RIO_UNLOCK, 50, 10) == 0, "unlock 2");
  CHECK(rc_lock(c1, h1, RIO_UNLOCK, 60, 10) == 0, "unlock 1 again");
  CHECK(rc_lock(c1, h1, RIO_LOCK_READ, 0, 0) == 0, "read lock to EOF");
  CHECK(rc_lock(c2, h2, RIO_LOCK_READ, 0, 0) == 0, "read locks share");
  rc_lock(c1, h1, RIO_UNLOCK, 0, 0);
  rc_lock(c2, h2, RIO_UNLOCK, 0, 0);

  int64_t old = -1;
  CHECK(rc_counter(c1, h1, 7, RIO_CTR_ADD, 5, &old) == 0 && old == 0, "fetch-and-add starts at 0");
  CHECK(rc_counter(c2, h2, 7, RIO_CTR_ADD, 3, &old) == 0 && old == 5, "shared across connections (%lld)",
        (long long)old);
  CHECK(rc_counter(c1, h1, 7, RIO_CTR_GET, 0, &old) == 0 && old == 8, "get");
  CHECK(rc_counter(c1, h1, 7, RIO_CTR_SET, 100, &old) == 0 && old == 8, "set returns old");
  CHECK(rc_counter(c2, h2, 8, RIO_CTR_GET, 0, &old) == 0 && old == 0, "another key");
  CHECK(rc_counter(c2, h2, 7, 9, 0, &old) == RIO_EINVAL, "bad counter op");
  rc_handle_op(c1, RIO_T_CLOSE, h1);
  rc_handle_op(c2, RIO_T_CLOSE, h2);
  CHECK(rc_open(c1, "shared", RIO_O_RDWR, 0, &h1, NULL) == 0, "reopen");
  CHECK(rc_counter(c1, h1, 7, RIO_CTR_GET, 0, &old) == 0 && old == 0, "counter dropped with the last handle");
  rc_handle_op(c1, RIO_T_CLOSE, h1);
}

/* 32 requests sent before any reply is read; every reply comes back once, matched by id. */
static void test_pipeline(rc_conn *c) {
  uint64_t h, off = 0, len = 4096, done;
  uint8_t data[4096];
  memset(data, 0x5a, sizeof data);
  rc_open(c, "pipe", RIO_O_RDWR | RIO_O_CREAT, 0644, &h, NULL);
  rc_write(c, h, 1, &off, &len, data, &done);
  size_t n;
  uint8_t *body = rc_io_body(h, 0, 0, 1, &off, &len, NULL, &n), pb[8] = {0};
  int sent = 0, seen[32] = {0};
  for (int i = 0; i < 32; i++)
    sent += rc_send_frame(c->fd, i % 2 ? RIO_T_READ : RIO_T_PING, 1000 + (uint64_t)i, i % 2 ? body : pb,
                          i % 2 ? n : 8) == 0;
  CHECK(sent == 32, "32 requests sent");
  int good = 0;
  for (int i = 0; i < 32; i++) {
    rio_hdr hh;
    uint8_t *rb;
    if (rc_recv_frame(c->fd, &hh, &rb, 10000)) break;
    int k = (int)(hh.id - 1000);
    if (k >= 0 && k < 32 && !seen[k]) {
      seen[k] = 1;
      if (k % 2 == 0) good += hh.type == (RIO_T_PING | RIO_REPLY) && hh.len == 32;
      else good += hh.type == (RIO_T_READ | RIO_REPLY) && hh.len == 16 + 4096 && rb[16] == 0x5a && rb[16 + 4095] == 0x5a;
    }
    free(rb);
  }
  CHECK(good == 32, "32 pipelined replies matched by id (%d)", good);
  free(body);
  rc_handle_op(c, RIO_T_CLOSE, h);
}

/* ---- a burst of frames in uneven pieces: the server's read-ahead and batched replies ---- */
enum { NF = 600, FSIZE = 1 << 20, WBASE = 1 << 21 };
static uint8_t pat(uint64_t off) { return (uint8_t)(off * 131 + 7); }

typedef struct burst {
  int fd;
  uint8_t *stream;
  size_t n;
} burst;

/* Sent from a thread while the replies are read: neither side may wait for the other. */
static void *send_pieces(void *arg) {
  burst *b = arg;
  static const size_t cut[] = {1, 3, 64, 1000, 5000, 70000, 23};
  for (size_t at = 0, i = 0; at < b->n; i++) {
    size_t k = cut[i % 7] < b->n - at ? cut[i % 7] : b->n - at;
    if (rc_send_all(b->fd, b->stream + at, k)) break;
    at += k;
  }
  return NULL;
}

static void append(burst *b, unsigned type, uint64_t id, const uint8_t *body, size_t n) {
  rio_hdr h = {RIO_VERSION, (uint16_t)type, 0, (uint32_t)n, id};
  rio_hdr_encode(b->stream + b->n, &h);
  memcpy(b->stream + b->n + RIO_HDR_SIZE, body, n);
  b->n += RIO_HDR_SIZE + n;
}

/* Frame i of the burst: a READ of 1 or 3 segments of many sizes, some across the end of the
 * file (expected bytes into want, *wn), or every 50th a WRITE to the second file. */
static void burst_frame(burst *b, int i, uint64_t h, uint64_t h2, uint8_t *want, size_t *wn) {
  size_t n;
  *wn = 0;
  if (i % 50 == 25) {
    uint64_t off = WBASE + (uint64_t)i * 4096, len = i % 100 == 25 ? 200000 : 100;
    uint8_t *data = malloc(len);
    for (uint64_t k = 0; k < len; k++) data[k] = (uint8_t)(i + k);
    uint8_t *body = rc_io_body(h2, 0, 0, 1, &off, &len, data, &n);
    append(b, RIO_T_WRITE, 5000 + (uint64_t)i, body, n);
    free(body), free(data);
    return;
  }
  uint32_t nseg = i % 7 == 0 ? 3 : 1;
  uint64_t off[3], len[3];
  int ended = 0;
  for (uint32_t s = 0; s < nseg; s++) {
    off[s] = ((uint64_t)i * 104729 + s * 7000) % (FSIZE + 4096);
    len[s] = 1 + ((uint64_t)i * 7919 + s) % 9000;
    for (uint64_t k = 0; k < len[s] && !ended; k++) { /* the bytes up to the end of file, then none */
      if (off[s] + k >= FSIZE) ended = 1;
      else want[(*wn)++] = pat(off[s] + k);
    }
  }
  uint8_t *body = rc_io_body(h, 0, 0, nseg, off, len, NULL, &n);
  append(b, RIO_T_READ, 5000 + (uint64_t)i, body, n);
  free(body);
}

static int burst_ok(const uint8_t *rb) {
  rio_rd rd = rio_rd_init(rb, RIO_STATUS);
  return rio_get_status(&rd) == RIO_OK;
}

static void test_burst(rc_conn *c) {
  uint64_t h, h2, off = 0, len = FSIZE, done = 0;
  uint8_t *data = malloc(FSIZE);
  for (uint64_t k = 0; k < FSIZE; k++) data[k] = pat(k);
  CHECK(rc_open(c, "burst", RIO_O_RDWR | RIO_O_CREAT | RIO_O_TRUNC, 0600, &h, NULL) == 0 &&
            rc_open(c, "burst2", RIO_O_RDWR | RIO_O_CREAT | RIO_O_TRUNC, 0600, &h2, NULL) == 0, "open burst files");
  CHECK(rc_write(c, h, 1, &off, &len, data, &done) == 0 && done == FSIZE, "1 MiB written");
  burst b = {c->fd, malloc((size_t)NF * 300 + 8u * 210000), 0};
  uint8_t **want = calloc(NF, sizeof *want);
  size_t *wn = calloc(NF, sizeof *wn);
  for (int i = 0; i < NF; i++) {
    want[i] = malloc(3 * 9000);
    burst_frame(&b, i, h, h2, want[i], &wn[i]);
  }
  pthread_t t;
  pthread_create(&t, NULL, send_pieces, &b);
  int good = 0, seen[NF] = {0};
  for (int got = 0; got < NF; got++) {
    rio_hdr hh;
    uint8_t *rb;
    if (rc_recv_frame(c->fd, &hh, &rb, 20000)) break;
    int i = (int)(hh.id - 5000);
    if (i >= 0 && i < NF && !seen[i] && hh.len >= 16 && burst_ok(rb)) {
      seen[i] = 1;
      if (i % 50 == 25) good += hh.type == (RIO_T_WRITE | RIO_REPLY) && rio_load_u64(rb + 8) == (i % 100 == 25 ? 200000u : 100u);
      else good += hh.type == (RIO_T_READ | RIO_REPLY) && hh.len == 16 + wn[i] && rio_load_u64(rb + 8) == wn[i] &&
                   !memcmp(rb + 16, want[i], wn[i]);
    }
    free(rb);
  }
  pthread_join(t, NULL);
  CHECK(good == NF, "%d frames sent in uneven pieces: every reply with the right bytes (%d)", NF, good);
  int wgood = 0;
  uint8_t *disk = malloc(200000);
  for (int i = 25; i < NF; i += 50) {
    size_t wl = i % 100 == 25 ? 200000 : 100, k = 0;
    if (disk_bytes("burst2", WBASE + (uint64_t)i * 4096, disk, wl) == 0)
      while (k < wl && disk[k] == (uint8_t)(i + k)) k++;
    wgood += k == wl;
  }
  CHECK(wgood == NF / 50, "the WRITEs among them on disk (%d)", wgood);
  for (int i = 0; i < NF; i++) free(want[i]);
  free(want), free(wn), free(b.stream), free(data), free(disk);
  rc_handle_op(c, RIO_T_CLOSE, h);
  rc_handle_op(c, RIO_T_CLOSE, h2);
}

/* One CHECKSUM: its status; value and bytes on success. */
static int checksum(rc_conn *c, uint64_t h, uint32_t algo, uint32_t start, uint64_t off, uint64_t len, uint32_t *v,
                    uint64_t *bytes) {
  rio_checksum_req m = {h, algo, start, off, len};
  uint8_t b[RIO_CHECKSUM_BODY], *rep = NULL;
  size_t rn = 0;
  int st = rc_call(c, RIO_T_CHECKSUM, b, rio_encode_checksum(b, sizeof b, &m), &rep, &rn);
  if (st == 0 && rn != 16) st = -1;
  if (st == 0) *v = (uint32_t)rio_load_u64(rep), *bytes = rio_load_u64(rep + 8);
  free(rep);
  return st;
}

/* CHECKSUM against sums of the bytes written: whole, a range, capped at max_request (a server
 * started with --max-request 1M for it) and continued from the value, end of file, refusals that
 * keep the connection, and a body of the wrong length that ends it. */
static void test_checksum_on(rc_conn *c, rc_conn *doomed) {
  size_t n = (1u << 20) + 777;
  uint8_t *d = malloc(n);
  for (size_t i = 0; i < n; i++) d[i] = (uint8_t)(i * 131 + (i >> 11));
  uint64_t h, hw, off = 0, len = n, done = 0, bytes = 0;
  uint32_t v = 0;
  CHECK(rc_open(c, "sum.dat", RIO_O_RDWR | RIO_O_CREAT, 0644, &h, NULL) == 0, "sum: open");
  len = n / 2; /* two WRITEs: one would pass max_request */
  CHECK(rc_write(c, h, 1, &off, &len, d, &done) == 0 && done == len, "sum: write 1");
  off = len, len = n - len;
  CHECK(rc_write(c, h, 1, &off, &len, d + off, &done) == 0 && done == len, "sum: write 2");
  CHECK(checksum(c, h, RIO_SUM_CRC32C, 0, 5, 1000, &v, &bytes) == 0 && bytes == 1000 &&
        v == rio_crc32c(0, d + 5, 1000), "sum: crc32c of a range");
  uint64_t cap = c->max_request;
  CHECK(checksum(c, h, RIO_SUM_ADLER32, 1, 0, 0, &v, &bytes) == 0 && bytes == (cap < n ? cap : n) &&
        v == rio_adler32(1, d, (size_t)bytes), "sum: to the end, at most max_request (%llu bytes)",
        (unsigned long long)bytes);
  uint64_t first = bytes;
  CHECK(checksum(c, h, RIO_SUM_ADLER32, v, first, 0, &v, &bytes) == 0 && first + bytes == n &&
        v == rio_adler32(1, d, n), "sum: continued from the value to the end of file");
  CHECK(checksum(c, h, RIO_SUM_ADLER32, 1, n + 10, 5, &v, &bytes) == 0 && bytes == 0 && v == 1, "sum: past the end");
  CHECK(checksum(c, h, 7, 0, 0, 0, &v, &bytes) == RIO_EINVAL, "sum: unknown algorithm refused");
  CHECK(checksum(c, h, RIO_SUM_CRC32C, 0, (uint64_t)1 << 63, 1, &v, &bytes) == RIO_EINVAL, "sum: range past 2^63");
  CHECK(checksum(c, h + 2, RIO_SUM_CRC32C, 0, 0, 0, &v, &bytes) == RIO_EBADF, "sum: unknown handle");
  CHECK(rc_open(c, "sum.dat", RIO_O_WRONLY, 0, &hw, NULL) == 0, "sum: open write-only");
  CHECK(checksum(c, hw, RIO_SUM_CRC32C, 0, 0, 0, &v, &bytes) == RIO_EBADF, "sum: write-only handle refused");
  CHECK(rc_ping(c) == 0, "sum: connection kept after refusals");
  rc_handle_op(c, RIO_T_CLOSE, hw);
  rc_handle_op(c, RIO_T_CLOSE, h);
  uint8_t b[RIO_CHECKSUM_BODY + 1] = {0};
  rio_hdr rh;
  uint8_t *rb = NULL;
  CHECK(rc_send_frame(doomed->fd, RIO_T_CHECKSUM, 99, b, sizeof b) == 0, "sum: send a 33-byte body");
  int r = rc_recv_frame(doomed->fd, &rh, &rb, 10000);
  CHECK(r != 0 || rh.type == (RIO_T_ERROR | RIO_REPLY), "sum: a 33-byte body is refused (type %x)", r ? 0 : rh.type);
  free(rb);
  rb = NULL;
  CHECK(rc_recv_frame(doomed->fd, &rh, &rb, 10000) != 0, "sum: ... and the connection closed");
  free(rb);
  free(d);
}

static void test_checksum(const char *bin) {
  static rc_server S2;
  static uint8_t sec2[RIO_MAX_SECRET];
  size_t sl2 = 0;
  const char *extra[] = {"--threads", "2", "--max-request", "1M", NULL};
  if (rc_workdir(&S2, "basic-sum") || rc_server_start(&S2, bin, extra)) {
    CHECK(0, "sum: start a server");
    return;
  }
  rc_read_secret(&S2, sec2, &sl2);
  rc_conn c, d;
  CHECK(rc_connect(&c, &S2, sec2, sl2) == 0 && c.max_request == (1u << 20), "sum: connect (max_request 1M)");
  CHECK(rc_connect(&d, &S2, sec2, sl2) == 0, "sum: second connection");
  test_checksum_on(&c, &d);
  rc_close_conn(&c);
  rc_close_conn(&d);
  CHECK(rc_server_stop(&S2) == 0, "sum: clean stop");
}

int main(int argc, char **argv) {
  if (argc < 2) return fprintf(stderr, "usage: %s PARIO_SERVER\n", argv[0]), 2;
  const char *extra[16] = {"--threads", "2", "--log-level", "debug"};
  for (int i = 2, k = 4; i < argc && k < 15; i++) extra[k++] = argv[i]; /* more server options */
  if (rc_workdir(&S, "basic") || rc_server_start(&S, argv[1], extra)) return fprintf(stderr, "cannot start\n"), 1;
  rc_read_secret(&S, secret, &slen);
  rc_conn c1, c2;
  CHECK(rc_connect(&c1, &S, secret, slen) == 0, "connect and authenticate");
  CHECK(c1.max_request == RIO_DEFAULT_MAX_REQUEST && c1.max_segments == RIO_DEFAULT_MAX_SEGMENTS, "limits");
  CHECK(rc_connect(&c2, &S, secret, slen) == 0, "second connection");
  const char *mac = getenv("PARIO_RIO_TEST_MAC"), *ca = getenv("PARIO_RIO_TEST_TLS_CA");
  int want_mac = mac && !strcmp(mac, "1") && !(ca && *ca);
  CHECK(rc_has_mac(c1.fd) == want_mac && rc_has_mac(c2.fd) == want_mac, "records with a MAC: %s",
        want_mac ? "on (PARIO_RIO_TEST_MAC=1)" : "off");
  CHECK(rc_ping(&c1) == 0, "ping");
  test_segments(&c1);
  test_large(&c1);
  test_locks_counter(&c1, &c2);
  test_pipeline(&c2);
  if (!getenv("PARIO_RIO_TEST_TLS_CA")) test_burst(&c1); /* one SSL object: no sending thread */
  if (!getenv("PARIO_RIO_TEST_TLS_CA") && argc == 2) test_checksum(argv[1]); /* its own plain server */
  rc_close_conn(&c1);
  rc_close_conn(&c2);
  CHECK(rc_server_stop(&S) == 0, "clean stop on SIGTERM");
  CHECK(rc_log_has(&S, "shutting down") == 1, "shutdown logged");
  printf("%d checks, %d failures (log: %s)\n", checks, failures, S.log);
  return failures != 0;
}
