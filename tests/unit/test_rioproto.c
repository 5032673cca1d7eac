/* Unit tests of the remote I/O codec (src/rio/proto.c): header round trip and rejection,
 * request limits before and after authentication, exact-length body decoding, segment lists
 * with overflowing or oversized entries, HMAC proofs, secret files and x-rio names, and the
 * read window's rule (src/rio/window.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "rio/checksum.h"
#include "rio/proto.h"
#include "rio/window.h"

static void test_header(void) {
  rio_hdr h = {RIO_VERSION, RIO_T_WRITE | RIO_REPLY, 0, 12345, 0x0102030405060708ull}, g;
  uint8_t buf[RIO_HDR_SIZE];
  rio_hdr_encode(buf, &h);
  CHECK(buf[0] == 'P' && buf[1] == 'R' && buf[2] == 'I' && buf[3] == 'O', "magic bytes %02x%02x", buf[0], buf[1]);
  CHECK(buf[16] == 0x08 && buf[23] == 0x01, "id little-endian");
  CHECK(rio_hdr_decode(buf, &g) == 0, "decode");
  CHECK(g.type == h.type && g.len == 12345 && g.id == h.id && g.flags == 0, "round trip");
  buf[0] ^= 1;
  CHECK(rio_hdr_decode(buf, &g) == RIO_EPROTO, "bad magic refused");
  buf[0] ^= 1;
  buf[4] = 2;
  CHECK(rio_hdr_decode(buf, &g) == RIO_EPROTO, "unknown version refused");
}

static void test_limits(void) {
  CHECK(rio_request_limit(RIO_T_HELLO, 0, 1 << 20) == RIO_HELLO_MAX, "hello before auth");
  CHECK(rio_request_limit(RIO_T_AUTH, 0, 1 << 20) == 32, "auth before auth");
  CHECK(rio_request_limit(RIO_T_WRITE, 0, 1 << 20) == 0, "no write before auth");
  CHECK(rio_request_limit(RIO_T_OPEN, 0, 1 << 20) == 0, "no open before auth");
  CHECK(rio_request_limit(RIO_T_HELLO, 1, 1 << 20) == 0, "no second hello");
  CHECK(rio_request_limit(RIO_T_WRITE, 1, 1 << 20) == 1 << 20, "write limit");
  CHECK(rio_request_limit(RIO_T_ERROR, 1, 1 << 20) == 0, "error is not a request");
  CHECK(rio_request_limit(99, 1, 1 << 20) == 0, "unknown type");
  CHECK(rio_request_limit(RIO_T_OPEN, 1, 1 << 20) == 12 + RIO_MAX_PATH, "open limit");
}

static void test_bodies(void) {
  uint8_t b[256];
  size_t n = rio_encode_open(b, sizeof b, RIO_O_RDWR | RIO_O_CREAT, 0644, "dir/file");
  rio_open_req o;
  CHECK(n == 12 + 8 && rio_decode_open(b, n, &o) == 0, "open decodes");
  CHECK(o.pathlen == 8 && !memcmp(o.path, "dir/file", 8) && o.perm == 0644, "open fields");
  CHECK(rio_decode_open(b, n - 1, &o) != 0, "truncated open refused");
  CHECK(rio_decode_open(b, n + 1, &o) != 0, "open with trailing bytes refused");
  b[3] = 0x80; /* unknown flag bit */
  CHECK(rio_decode_open(b, n, &o) == RIO_EPROTO, "unknown open flag refused");
  n = rio_encode_open(b, sizeof b, 0, 0, "a");
  b[8] = 0xff, b[9] = 0xff; /* pathlen 65535 > body */
  CHECK(rio_decode_open(b, n, &o) != 0, "path longer than body refused");
  CHECK(rio_encode_open(b, 8, 0, 0, "x") == 0, "encoder refuses a small buffer");
  n = rio_encode_path(b, sizeof b, "a\0b");
  CHECK(n == 5, "path stops at NUL");

  rio_lock_req l = {7, RIO_LOCK_WRITE, 100, 50}, l2;
  n = rio_encode_lock(b, sizeof b, &l);
  CHECK(rio_decode_lock(b, n, &l2) == 0 && l2.handle == 7 && l2.offset == 100 && l2.len == 50, "lock");
  l.op = 9;
  n = rio_encode_lock(b, sizeof b, &l);
  CHECK(rio_decode_lock(b, n, &l2) == RIO_EINVAL, "bad lock op");
  l.op = RIO_LOCK_READ, l.offset = (uint64_t)INT64_MAX, l.len = 2;
  n = rio_encode_lock(b, sizeof b, &l);
  CHECK(rio_decode_lock(b, n, &l2) == RIO_EINVAL, "lock range overflow");

  rio_counter_req c = {3, 99, RIO_CTR_ADD, -5}, c2;
  n = rio_encode_counter(b, sizeof b, &c);
  CHECK(rio_decode_counter(b, n, &c2) == 0 && c2.value == -5 && c2.key == 99, "counter");

  uint64_t v[3] = {1, 2, 3}, h, x, y;
  n = rio_encode_u64s(b, sizeof b, 3, v);
  CHECK(rio_decode_handle3(b, n, &h, &x, &y) == 0 && y == 3, "handle3");
  CHECK(rio_decode_handle2(b, n, &h, &x) == RIO_EPROTO, "handle2 with 24 bytes refused");
  CHECK(rio_decode_handle(b, 8, &h) == 0 && h == 1, "handle");
}

static size_t io_body(uint8_t *b, size_t cap, uint32_t nseg, const uint64_t *segs, size_t data) {
  rio_wr w = rio_wr_init(b, cap);
  rio_put_io_hdr(&w, 5, 0, 0, nseg);
  for (uint32_t i = 0; i < 2 * nseg; i++) rio_put_u64(&w, segs[i]);
  for (size_t i = 0; i < data; i++) rio_put_bytes(&w, "x", 1);
  return w.err ? 0 : w.n;
}

static void test_io(void) {
  uint8_t b[512];
  rio_io_req io;
  size_t hb;
  uint64_t segs[] = {0, 10, 100, 20, 50, 0};
  size_t n = io_body(b, sizeof b, 3, segs, 30);
  CHECK(rio_decode_io(b, n, (uint32_t)n, RIO_T_WRITE, 16, &io, &hb) == 0, "write decodes");
  CHECK(io.total == 30 && hb == 24 + 48 && io.nseg == 3, "write totals");
  uint64_t off, len;
  rio_seg_at(&io, 1, &off, &len);
  CHECK(off == 100 && len == 20, "segment 1");
  CHECK(rio_decode_io(b, n, (uint32_t)n - 1, RIO_T_WRITE, 16, &io, &hb) == RIO_EPROTO, "write short of data");
  CHECK(rio_decode_io(b, hb, (uint32_t)hb, RIO_T_READ, 16, &io, &hb) == 0, "read decodes");
  CHECK(rio_decode_io(b, n, (uint32_t)n, RIO_T_READ, 16, &io, &hb) == RIO_EPROTO, "read with data refused");
  CHECK(rio_decode_io(b, n, (uint32_t)n, RIO_T_WRITE, 2, &io, &hb) == RIO_ETOOBIG, "too many segments");
  uint64_t over[] = {(uint64_t)INT64_MAX, 1};
  n = io_body(b, sizeof b, 1, over, 0);
  CHECK(rio_decode_io(b, n, (uint32_t)n, RIO_T_READ, 16, &io, &hb) == RIO_EINVAL, "offset + len past 2^63");
  uint64_t huge[] = {0, 1ull << 40};
  n = io_body(b, sizeof b, 1, huge, 0);
  CHECK(rio_decode_io(b, n, (uint32_t)n, RIO_T_READ, 16, &io, &hb) == RIO_ETOOBIG, "segment over 4 GiB");
  /* nseg claims more segments than the body holds */
  n = io_body(b, sizeof b, 1, segs, 0);
  b[20] = 200;
  CHECK(rio_decode_io(b, n, (uint32_t)n, RIO_T_READ, 1000, &io, &hb) == RIO_EPROTO, "nseg past the body");
}

static void test_auth(void) {
  uint8_t secret[] = "0123456789abcdef-secret", ch[RIO_NONCE], no[RIO_NONCE], m1[RIO_MAC], m2[RIO_MAC], m3[RIO_MAC];
  CHECK(rio_random(ch, sizeof ch) == 0 && rio_random(no, sizeof no) == 0, "random");
  CHECK(memcmp(ch, no, RIO_NONCE) != 0, "two random nonces differ");
  CHECK(rio_auth_mac(secret, 23, 0, ch, no, m1) == 0, "client mac");
  CHECK(rio_auth_mac(secret, 23, 1, ch, no, m2) == 0, "server mac");
  CHECK(!rio_mac_equal(m1, m2), "client and server proofs differ");
  CHECK(rio_auth_mac(secret, 23, 0, ch, no, m3) == 0 && rio_mac_equal(m1, m3), "deterministic");
  secret[0] ^= 1;
  CHECK(rio_auth_mac(secret, 23, 0, ch, no, m3) == 0 && !rio_mac_equal(m1, m3), "another secret, another mac");
}

static void test_secret(void) {
  char path[] = "/tmp/rio-secret-XXXXXX", why[128];
  int fd = mkstemp(path);
  uint8_t buf[RIO_MAX_SECRET];
  size_t len = 0;
  CHECK(fd >= 0, "mkstemp");
  CHECK(write(fd, "short\n", 6) == 6, "write");
  CHECK(rio_read_secret(path, buf, &len, why, sizeof why) == EINVAL && strstr(why, "shorter"), "short secret: %s", why);
  CHECK(ftruncate(fd, 0) == 0 && pwrite(fd, "0123456789abcdefXY\n\n", 20, 0) == 20, "rewrite");
  CHECK(rio_read_secret(path, buf, &len, why, sizeof why) == 0 && len == 18, "secret without newlines: %zu", len);
  close(fd);
  unlink(path);
  CHECK(rio_read_secret(path, buf, &len, why, sizeof why) == ENOENT, "missing secret file");
}

static void test_names(void) {
  char host[64], port[16];
  const char *path;
  CHECK(rio_parse_name("localhost:5000/a/b", host, sizeof host, port, sizeof port, &path) == 0, "name");
  CHECK(!strcmp(host, "localhost") && !strcmp(port, "5000") && !strcmp(path, "a/b"), "name parts");
  CHECK(rio_parse_name("[::1]:7/x", host, sizeof host, port, sizeof port, &path) == 0 && !strcmp(host, "::1"), "v6");
  CHECK(rio_parse_name("h:1//abs", host, sizeof host, port, sizeof port, &path) == 0 && !strcmp(path, "abs"),
        "leading slashes are relative to the root");
  CHECK(rio_parse_name("h/x", host, sizeof host, port, sizeof port, &path) == EINVAL, "no port");
  CHECK(rio_parse_name("h:12a/x", host, sizeof host, port, sizeof port, &path) == EINVAL, "bad port");
  CHECK(rio_parse_name("h:1/", host, sizeof host, port, sizeof port, &path) == EINVAL, "no path");
  CHECK(rio_parse_name(":1/x", host, sizeof host, port, sizeof port, &path) == EINVAL, "no host");
}

static void test_status(void) {
  CHECK(rio_errno_from_status(rio_status_from_errno(ENOENT)) == ENOENT, "ENOENT round trip");
  CHECK(rio_status_from_errno(EXDEV) == RIO_EACCES, "escape is access denied");
  CHECK(rio_status_from_errno(12345) == RIO_EOTHER, "unknown errno");
  CHECK(rio_errno_from_status(-1) == EIO && rio_errno_from_status(RIO_NSTATUS) == EIO, "bad status");
  uint8_t b[8];
  rio_wr w = rio_wr_init(b, sizeof b);
  rio_put_status(&w, 999);
  rio_rd r = rio_rd_init(b, 8);
  CHECK(rio_get_status(&r) == RIO_EOTHER, "unknown wire status");
  r = rio_rd_init(b, 4);
  CHECK(rio_get_status(&r) == RIO_EPROTO, "truncated status");
}

/* Known vectors, piecewise sums equal to whole ones, and the CHECKSUM body codec. */
static void test_checksum(void) {
  const uint8_t *d = (const uint8_t *)"123456789", *w = (const uint8_t *)"Wikipedia";
  CHECK(rio_crc32c(0, d, 9) == 0xE3069283u, "crc32c(123456789) %08x", rio_crc32c(0, d, 9));
  CHECK(rio_adler32(1, w, 9) == 0x11E60398u, "adler32(Wikipedia) %08x", rio_adler32(1, w, 9));
  CHECK(rio_crc32c(0, d, 0) == 0 && rio_adler32(1, d, 0) == 1, "empty");
  uint8_t zeros[32] = {0}, ones[32];
  memset(ones, 0xff, sizeof ones);
  CHECK(rio_crc32c(0, zeros, 32) == 0x8A9136AAu, "crc32c(32 zeros) %08x", rio_crc32c(0, zeros, 32));
  CHECK(rio_crc32c(0, ones, 32) == 0x62A8AB43u, "crc32c(32 0xff) %08x", rio_crc32c(0, ones, 32));
  static uint8_t big[100000];
  for (size_t i = 0; i < sizeof big; i++) big[i] = (uint8_t)(i * 7 + (i >> 9));
  for (unsigned a = RIO_SUM_ADLER32; a <= RIO_SUM_CRC32C; a++) {
    uint32_t whole = rio_sum_update(a, rio_sum_start(a), big, sizeof big), v = rio_sum_start(a);
    for (size_t at = 0, k = 1; at < sizeof big; at += k, k = k * 3 + 1) {
      size_t n = sizeof big - at < k ? sizeof big - at : k;
      v = rio_sum_update(a, v, big + at, n);
    }
    CHECK(v == whole, "%s piecewise %08x vs %08x", rio_sum_name(a), v, whole);
  }
  CHECK(rio_sum_algo("adler32") == RIO_SUM_ADLER32 && rio_sum_algo("crc32c") == RIO_SUM_CRC32C &&
        rio_sum_algo("md5") == 0 && rio_sum_algo(NULL) == 0, "algo names");
  rio_checksum_req m = {7, RIO_SUM_CRC32C, 0x1234, 100, 200}, g;
  uint8_t b[64];
  size_t n = rio_encode_checksum(b, sizeof b, &m);
  CHECK(n == RIO_CHECKSUM_BODY && rio_decode_checksum(b, n, &g) == 0 && g.handle == 7 && g.algo == m.algo &&
        g.start == 0x1234 && g.offset == 100 && g.len == 200, "checksum round trip");
  CHECK(rio_decode_checksum(b, n - 1, &g) == RIO_EPROTO && rio_decode_checksum(b, sizeof b, &g) == RIO_EPROTO,
        "checksum body of the wrong length");
  m.algo = 3;
  n = rio_encode_checksum(b, sizeof b, &m);
  CHECK(rio_decode_checksum(b, n, &g) == RIO_EINVAL, "unknown algo refused");
  m.algo = RIO_SUM_ADLER32, m.offset = (uint64_t)1 << 63;
  n = rio_encode_checksum(b, sizeof b, &m);
  CHECK(rio_decode_checksum(b, n, &g) == RIO_EINVAL, "offset past 2^63 refused");
  CHECK(rio_request_limit(RIO_T_CHECKSUM, 1, 1 << 20) == RIO_CHECKSUM_BODY &&
        rio_request_min(RIO_T_CHECKSUM) == RIO_CHECKSUM_BODY && rio_request_limit(RIO_T_CHECKSUM, 0, 1 << 20) == 0,
        "checksum limits");
}

/* rio/window.h: order, the widest hole, the limit, whole or cut pieces. */
static void test_window(void) {
  rio_window w = rio_window_open(1000, 100, 2000, 50);
  CHECK(w.lo == 1000 && w.end == 1100 && !w.joined, "open: the first piece");
  CHECK(rio_window_join(&w, 1150, 10, 0) && w.end == 1160 && w.joined == 1, "a hole of exactly maxgap joins");
  CHECK(!rio_window_join(&w, 1211, 10, 0) && w.end == 1160, "a hole of maxgap + 1 ends the window");
  CHECK(!rio_window_join(&w, 1159, 10, 0) && w.end == 1160, "an overlapping piece ends it");
  CHECK(!rio_window_join(&w, 1000, 10, 0), "an earlier piece ends it");
  CHECK(rio_window_join(&w, 1160, 0, 0) && w.end == 1160, "an empty piece at the end joins");
  CHECK(rio_window_join(&w, 1200, 800, 0) && w.end == 2000, "a piece ending at the limit joins whole");
  w = rio_window_open(1000, 100, 1500, 1000);
  CHECK(!rio_window_join(&w, 1400, 200, 0) && w.end == 1100, "past the limit, whole only: refused");
  CHECK(rio_window_join(&w, 1400, 200, 1) && w.end == 1500, "past the limit, may cut: cut at the limit");
  CHECK(!rio_window_join(&w, 1500, 10, 1), "nothing joins at or past the limit");
  w = rio_window_open(0, 0, 1u << 18, RIO_WINDOW_MAX_GAP); /* the server's: an empty start */
  CHECK(rio_window_join(&w, 0, 32, 0) && rio_window_join(&w, 32 + RIO_WINDOW_MAX_GAP, 32, 0) &&
            w.end == 64 + RIO_WINDOW_MAX_GAP && w.joined == 2,
        "an empty start: the first piece opens it, a default-gap hole joins");
  uint64_t big = UINT64_MAX - 10;
  w = rio_window_open(big - 100, 10, UINT64_MAX, 5);
  CHECK(!rio_window_join(&w, big, 5, 0), "offsets near 2^64: a wide hole is still a hole");
}

int main(void) {
  test_header();
  test_limits();
  test_bodies();
  test_io();
  test_auth();
  test_secret();
  test_names();
  test_status();
  test_checksum();
  test_window();
  printf("rioproto: %d checks, %d failures\n", checks, failures);
  return failures != 0;
}
