/* Unit tests of the forwarder's merging rule (server/merge.c), without a forwarder: parts of one
 * collective access joined into one request (sorted, adjacent segments joined, the WRITE data in
 * file order), overlaps and limits refused, and a merged READ reply split back per part, cut
 * where the end of file cut it. No MPI, no sockets. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "merge.h"

/* A part: nseg (offset, length) pairs, and for a WRITE its data (bytes 'a' + file offset % 26). */
static fwd_part make_part(unsigned type, int nseg, const uint64_t *seg) {
  fwd_part p;
  memset(&p, 0, sizeof p);
  uint64_t total = 0;
  for (int i = 0; i < nseg; i++) total += seg[2 * i + 1];
  size_t hb = rio_io_hdr_bytes((uint32_t)nseg), n = hb + (type == RIO_T_WRITE ? total : 0);
  p.body = malloc(n ? n : 1);
  rio_wr w = rio_wr_init(p.body, n);
  rio_put_io_hdr(&w, 7, 100, 2, (uint32_t)nseg);
  for (int i = 0; i < nseg; i++) rio_put_u64(&w, seg[2 * i]), rio_put_u64(&w, seg[2 * i + 1]);
  if (type == RIO_T_WRITE)
    for (int i = 0; i < nseg; i++)
      for (uint64_t k = 0; k < seg[2 * i + 1]; k++) p.body[w.n++] = (uint8_t)('a' + (seg[2 * i] + k) % 26);
  p.n = n;
  size_t h = 0;
  if (rio_decode_io(p.body, n, (uint32_t)n, type, 1024, &p.io, &h)) printf("bad part body\n");
  p.hb = h;
  return p;
}

static void free_parts(fwd_part *p, int n) {
  for (int i = 0; i < n; i++) free(p[i].body);
}

/* The merged body's segments as pairs, and its data after them. */
static int segs_are(const uint8_t *body, size_t n, int nseg, const uint64_t *want) {
  rio_io_req io;
  size_t hb;
  if (rio_decode_io(body, n, (uint32_t)n, RIO_T_READ, 1024, &io, &hb) && rio_decode_io(body, n, (uint32_t)n, RIO_T_WRITE, 1024, &io, &hb))
    return 0;
  if (io.nseg != (uint32_t)nseg || io.handle != 7 || io.coll_id != 0) return 0;
  for (int i = 0; i < nseg; i++) {
    uint64_t off, len;
    rio_seg_at(&io, (uint32_t)i, &off, &len);
    if (off != want[2 * i] || len != want[2 * i + 1]) return 0;
  }
  return 1;
}

static void test_write_interleaved(void) {
  const uint64_t a[] = {0, 4, 8, 4}, b[] = {4, 4, 12, 4, 20, 0};
  fwd_part p[2] = {make_part(RIO_T_WRITE, 2, a), make_part(RIO_T_WRITE, 3, b)};
  fwd_merged m;
  CHECK(fwd_merge_plan(p, 2, &m) == 0, "interleaved parts merge");
  CHECK(m.nseg == 1 && m.total == 16 && m.npieces == 5, "into one segment of 16 bytes (%u, %llu)", m.nseg,
        (unsigned long long)m.total);
  CHECK(fwd_merge_fits(&m, RIO_T_WRITE, 1 << 20, 16), "it fits");
  size_t n = 0;
  uint8_t *body = fwd_merge_body(&m, p, RIO_T_WRITE, 7, &n);
  const uint64_t want[] = {0, 16};
  CHECK(body && n == rio_io_hdr_bytes(1) + 16 && segs_are(body, n, 1, want), "the body names (0, 16)");
  CHECK(body && !memcmp(body + rio_io_hdr_bytes(1), "abcdefghijklmnop", 16), "its data in file order");
  free(body);
  fwd_merge_free(&m);
  free_parts(p, 2);
}

static void test_gap_and_overlap(void) {
  const uint64_t a[] = {0, 100}, b[] = {200, 100}, c[] = {98, 4};
  fwd_part p[2] = {make_part(RIO_T_READ, 1, b), make_part(RIO_T_READ, 1, a)};
  fwd_merged m;
  CHECK(fwd_merge_plan(p, 2, &m) == 0 && m.nseg == 2 && m.total == 200, "a gap: two segments");
  size_t n = 0;
  uint8_t *body = fwd_merge_body(&m, p, RIO_T_READ, 7, &n);
  const uint64_t want[] = {0, 100, 200, 100};
  CHECK(body && n == rio_io_hdr_bytes(2) && segs_are(body, n, 2, want), "sorted by offset: (0, 100) (200, 100)");
  CHECK(!fwd_merge_fits(&m, RIO_T_READ, 1 << 20, 1), "more segments than the server takes: no merge");
  CHECK(!fwd_merge_fits(&m, RIO_T_READ, 200 + 15, 16), "a READ reply over max_request: no merge");
  CHECK(fwd_merge_fits(&m, RIO_T_READ, 200 + 16, 16), "one that just fits");
  CHECK(!fwd_merge_fits(&m, RIO_T_WRITE, rio_io_hdr_bytes(2) + 199, 16), "a WRITE body over max_request: no merge");
  CHECK(fwd_merge_fits(&m, RIO_T_WRITE, rio_io_hdr_bytes(2) + 200, 16), "one that just fits");
  free(body);
  fwd_merge_free(&m);
  fwd_part q[2] = {make_part(RIO_T_WRITE, 1, a), make_part(RIO_T_WRITE, 1, c)};
  CHECK(fwd_merge_plan(q, 2, &m) == -1 && m.pieces == NULL, "overlapping parts are not merged");
  free_parts(p, 2);
  free_parts(q, 2);
}

/* A merged READ reply split back: each part's bytes in its own segment order. */
static void test_read_split(uint64_t done, const char *want0, const char *want1) {
  const uint64_t a[] = {8, 4, 0, 4}, b[] = {4, 4, 12, 4};
  fwd_part p[2] = {make_part(RIO_T_READ, 2, a), make_part(RIO_T_READ, 2, b)};
  fwd_merged m;
  CHECK(fwd_merge_plan(p, 2, &m) == 0 && m.nseg == 1 && m.total == 16, "read parts merge");
  fwd_merge_by_part(&m);
  const uint8_t *data = (const uint8_t *)"ABCDEFGHIJKLMNOP";
  uint32_t at = 0;
  const char *want[2] = {want0, want1};
  for (uint32_t i = 0; i < 2; i++) {
    size_t n = 0;
    uint8_t *r = fwd_read_reply(&m, &at, i, &p[i], data, done, &n);
    size_t wl = strlen(want[i]);
    rio_rd rd = rio_rd_init(r, n);
    int st = r ? rio_get_status(&rd) : -1;
    uint64_t got = r ? rio_get_u64(&rd) : 0;
    CHECK(r && st == RIO_OK && got == wl && n == RIO_STATUS + 8 + wl && !memcmp(r + RIO_STATUS + 8, want[i], wl),
          "done %llu: part %u gets '%s' (got %llu bytes)", (unsigned long long)done, i, want[i], (unsigned long long)got);
    free(r);
  }
  CHECK(at == m.npieces, "every piece handed out");
  fwd_merge_free(&m);
  free_parts(p, 2);
}

int main(void) {
  test_write_interleaved();
  test_gap_and_overlap();
  test_read_split(16, "IJKLABCD", "EFGHMNOP");
  test_read_split(10, "IJ", "EFGH"); /* the end of file cut part 0's first piece: nothing after it */
  test_read_split(0, "", "");
  printf("%d checks, %d failures\n", checks, failures);
  return failures ? 1 : 0;
}
