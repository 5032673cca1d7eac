/* pario-bench verification pattern: the expected content of every test file written with this
 * pattern is a function of the file offset alone (a pseudo-random 4 KiB page stamped with its own
 * offset), so any rank can generate or check any byte range without knowing who wrote it. */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAGE 4096
#define STAMP_MAGIC 0x5041524942454E43ULL /* "PARIBENC" */

static unsigned char page[PAGE];
static int page_ready;

static uint64_t splitmix64(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

static void page_init(void) {
  if (page_ready) return;
  uint64_t s = 12345;
  for (int i = 0; i < PAGE; i += 8) {
    uint64_t v = splitmix64(&s);
    memcpy(page + i, &v, 8);
  }
  page_ready = 1;
}

/* Byte b (0..7) of the stamp of the page starting at q. */
static unsigned char stamp_byte(MPI_Offset q, int b) {
  uint64_t v = (uint64_t)q ^ STAMP_MAGIC;
  return (unsigned char)(v >> (8 * b));
}

void pat_stamp(unsigned char *buf, MPI_Offset off, size_t len) {
  MPI_Offset end = off + (MPI_Offset)len;
  for (MPI_Offset q = off - off % PAGE; q < end; q += PAGE)
    for (int b = 0; b < 8; b++)
      if (q + b >= off && q + b < end) buf[q + b - off] = stamp_byte(q, b);
}

void pat_fill(unsigned char *buf, MPI_Offset off, size_t len) {
  page_init();
  for (size_t done = 0; done < len;) {
    size_t in = (size_t)((off + (MPI_Offset)done) % PAGE), n = PAGE - in;
    if (n > len - done) n = len - done;
    memcpy(buf + done, page + in, n);
    done += n;
  }
  pat_stamp(buf, off, len);
}

void pat_prepare(unsigned char *buf, MPI_Offset off, size_t len, MPI_Offset *prev) {
  if (*prev >= 0 && (off - *prev) % PAGE == 0) pat_stamp(buf, off, len);
  else pat_fill(buf, off, len);
  *prev = off;
}

long long pat_check(const unsigned char *buf, MPI_Offset off, size_t len) {
  page_init();
  for (size_t done = 0; done < len;) {
    MPI_Offset o = off + (MPI_Offset)done;
    size_t in = (size_t)(o % PAGE), n = PAGE - in;
    if (n > len - done) n = len - done;
    for (size_t i = 0; in + i < 8 && i < n; i++)
      if (buf[done + i] != stamp_byte(o - (MPI_Offset)in, (int)(in + i))) return (long long)(done + i);
    size_t skip = in < 8 ? 8 - in : 0;
    if (skip < n && memcmp(buf + done + skip, page + in + skip, n - skip) != 0)
      for (size_t i = skip; i < n; i++)
        if (buf[done + i] != page[in + i]) return (long long)(done + i);
    done += n;
  }
  return -1;
}

static long long gap_check(const unsigned char *buf, size_t len) {
  for (size_t i = 0; i < len; i++)
    if (buf[i] != GAP_BYTE) return (long long)i;
  return -1;
}

/* Checks buf = file[off, off+len) over the spans the callback wants; returns the bad offset or -1. */
static MPI_Offset check_spans(const unsigned char *buf, MPI_Offset off, size_t len,
                              pat_span_fn span, const void *ctx) {
  for (size_t done = 0; done < len;) {
    int want = SPAN_PATTERN;
    size_t n = span ? span(off + (MPI_Offset)done, len - done, ctx, &want) : len - done;
    if (n == 0 || n > len - done) n = len - done;
    long long bad = -1;
    if (want == SPAN_PATTERN) bad = pat_check(buf + done, off + (MPI_Offset)done, n);
    if (want == SPAN_GAP) bad = gap_check(buf + done, n);
    if (bad >= 0) return off + (MPI_Offset)done + bad;
    done += n;
  }
  return -1;
}

#define VERIFY_CHUNK ((size_t)8 << 20)

void pat_verify_file(result *r, const char *path, MPI_Offset size, pat_span_fn span,
                     const void *ctx) {
  MPI_File fh;
  MPI_Offset fsize = 0;
  int rc = file_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
  if (res_mpi(r, rc, "MPI_File_open (verify)")) return;
  if (!res_mpi(r, MPI_File_get_size(fh, &fsize), "MPI_File_get_size") && fsize != size)
    res_mismatch(r, "%s has %lld bytes, expected %lld", path, (long long)fsize, (long long)size);
  MPI_Offset lo = size * B.rank / B.size, hi = size * (B.rank + 1) / B.size;
  unsigned char *buf = xalloc(VERIFY_CHUNK);
  for (MPI_Offset off = lo; off < hi && r->status == ST_OK;) {
    size_t n = (size_t)(hi - off) < VERIFY_CHUNK ? (size_t)(hi - off) : VERIFY_CHUNK;
    if (res_mpi(r, read_full_at(fh, off, buf, n), "MPI_File_read_at (verify)")) break;
    MPI_Offset bad = check_spans(buf, off, n, span, ctx);
    if (bad >= 0) res_mismatch(r, "%s: wrong data at offset %lld", path, (long long)bad);
    off += (MPI_Offset)n;
  }
  free(buf);
  res_mpi(r, MPI_File_close(&fh), "MPI_File_close (verify)");
  if (r->status == ST_OK) res_verified(r);
}

/* Creates path afresh; ranks write contiguous shares of the pattern (gap = 0) or of GAP_BYTE. */
static void write_file(result *r, const char *path, MPI_Offset size, int gap) {
  MPI_File fh;
  file_remove(path);
  int rc = file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
  if (res_mpi(r, rc, "MPI_File_open (prepare)")) return;
  MPI_Offset lo = size * B.rank / B.size, hi = size * (B.rank + 1) / B.size, prev = -1;
  unsigned char *buf = xalloc(VERIFY_CHUNK);
  if (gap) memset(buf, GAP_BYTE, VERIFY_CHUNK);
  for (MPI_Offset off = lo; off < hi && r->status == ST_OK;) {
    size_t n = (size_t)(hi - off) < VERIFY_CHUNK ? (size_t)(hi - off) : VERIFY_CHUNK;
    if (!gap) pat_prepare(buf, off, n, &prev);
    res_mpi(r, write_full_at(fh, off, buf, n), "MPI_File_write_at (prepare)");
    off += (MPI_Offset)n;
  }
  free(buf);
  res_mpi(r, MPI_File_close(&fh), "MPI_File_close (prepare)");
}

void pat_write_file(result *r, const char *path, MPI_Offset size) { write_file(r, path, size, 0); }

void gap_write_file(result *r, const char *path, MPI_Offset size) { write_file(r, path, size, 1); }
