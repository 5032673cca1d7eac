/* Pipelined aggregation (docs/collective.md#pipeline): collective windows of 4 KiB give every
 * aggregated call many rounds; each case runs with pario_coll_pipeline and pario_coll_direct
 * each true and false, one aggregator and one per rank, and every write is read back byte by byte (rank 0 reads the
 * file with stdio) and through read_all.
 *   rounds: interleaved 16-byte blocks (the windows are covered: received in place) and the
 *     same with a 16-byte hole after every np blocks (the holes are read first and keep the
 *     file's bytes); memory with holes (packed) and contiguous.
 *   views: the view changes between calls (16- and 48-byte blocks), iwrite_all and iread_all
 *     with rounds, a write_all while an iwrite_all is in flight.
 *   errors: PARIO_TEST_COLL_EIO=0:K makes the aggregator's (rank 0's) K-th storage access of
 *     the context fail, and only that one: every rank gets MPI_ERR_IO (blocking, and through
 *     MPI_Wait), nobody hangs, and the file holds the K windows before the failed one and
 *     nothing after it (the later rounds' data arrived, but no write follows a failed one);
 *     a read whose second window fails is every rank's MPI_ERR_IO.
 * Natively (no pario) only the data checks run. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"

#include <stdlib.h>

static int rank, np;
static char path[4096];

enum { W = 4096, PER = 16128 }; /* window; data bytes per rank (whole 16- and 48-byte blocks) */

static unsigned char pattern(long off) { return (unsigned char)(off * 131 + 7); }
static unsigned char datum(int r, long i, int salt) { return (unsigned char)(r * 37 + i * 11 + salt * 5 + 1); }

static void prefill(long len) {
  if (rank == 0) {
    FILE *fp = fopen(path, "wb");
    for (long i = 0; i < len; i++) fputc(pattern(i), fp);
    fclose(fp);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

static unsigned char *slurp(long *len) {
  FILE *fp = fopen(path, "rb");
  fseek(fp, 0, SEEK_END);
  *len = ftell(fp);
  fseek(fp, 0, SEEK_SET);
  unsigned char *b = malloc((size_t)*len + 1);
  *len = (long)fread(b, 1, (size_t)*len, fp);
  fclose(fp);
  return b;
}

/* Filetype: blocks of blk bytes, one per rank in turn, then gap bytes of hole. */
static MPI_Datatype view_type(int blk, int gap) {
  MPI_Datatype v, ft;
  MPI_Type_vector(1, blk, 1, MPI_BYTE, &v);
  MPI_Type_create_resized(v, 0, (MPI_Aint)np * blk + gap, &ft);
  MPI_Type_commit(&ft);
  MPI_Type_free(&v);
  return ft;
}

/* The file's byte at offset i after every rank wrote n bytes of datum(r, ., salt) through
 * view_type(blk, gap) at displacement r * blk; the pattern where nobody wrote. */
static unsigned char expected(long i, int blk, int gap, long n, int salt) {
  long stride = (long)np * blk + gap, c = i / stride, in = i % stride;
  if (in >= (long)np * blk) return pattern(i);
  int r = (int)(in / blk);
  long idx = c * blk + in % blk;
  return idx < n ? datum(r, idx, salt) : pattern(i);
}

/* Rank 0 compares the file with expected() over [0, len) except [skip_lo, skip_hi), where it
 * must hold the pattern; every rank gets the verdict. */
static int file_ok(long len, int blk, int gap, long n, int salt, long keep_from) {
  int ok = 1;
  if (rank == 0) {
    long got;
    unsigned char *b = slurp(&got);
    ok = got == len;
    for (long i = 0; ok && i < len; i++) {
      unsigned char want = i >= keep_from ? pattern(i) : expected(i, blk, gap, n, salt);
      if (b[i] != want) {
        fprintf(stderr, "rank 0: byte %ld is %d, want %d\n", i, b[i], want);
        ok = 0;
      }
    }
    free(b);
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return ok;
}

/* A mode: pario_coll_pipeline and pario_coll_direct. */
typedef struct mode {
  const char *pipe, *direct;
} mode;

static MPI_File open_with(mode m, int cb_nodes) {
  MPI_Info info;
  MPI_Info_create(&info);
  char v[16];
  snprintf(v, sizeof v, "%d", cb_nodes);
  MPI_Info_set(info, "cb_nodes", v);
  MPI_Info_set(info, "cb_buffer_size", "4096");
  MPI_Info_set(info, "romio_cb_write", "enable");
  MPI_Info_set(info, "romio_cb_read", "enable");
  MPI_Info_set(info, "pario_coll_pipeline", m.pipe);
  MPI_Info_set(info, "pario_coll_direct", m.direct);
  MPI_File fh;
  int rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR, info, &fh);
  CHECK(rc == MPI_SUCCESS, "open: %s", err_text(rc));
  MPI_Info_free(&info);
  MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN);
  return fh;
}

static void check_hint(MPI_File fh, const char *key, const char *want) {
  if (!pario_expected()) return;
  MPI_Info info;
  char v[64] = "";
  int flag = 0;
  MPI_File_get_info(fh, &info);
  MPI_Info_get(info, key, sizeof v - 1, v, &flag);
  MPI_Info_free(&info);
  CHECK(flag && !strcmp(v, want), "%s reported as %s, set %s", key, flag ? v : "(none)", want);
}

/* Write n bytes per rank through view_type(blk, gap), from memory with holes (packed) or
 * contiguous; read them back with read_all into contiguous memory. */
static void write_read(MPI_File fh, int blk, int gap, long n, int salt, int holes, int nonblocking) {
  MPI_Datatype ft = view_type(blk, gap), mt;
  unsigned char *mem = malloc(2 * (size_t)n), *back = malloc((size_t)n);
  MPI_File_set_view(fh, (MPI_Offset)rank * blk, MPI_BYTE, ft, "native", MPI_INFO_NULL);
  MPI_Type_vector((int)n, 1, holes ? 2 : 1, MPI_BYTE, &mt);
  MPI_Type_commit(&mt);
  for (long i = 0; i < n; i++) mem[(holes ? 2 : 1) * i] = datum(rank, i, salt);
  int rc;
  MPI_Request r;
  if (nonblocking) {
    rc = MPI_File_iwrite_at_all(fh, 0, mem, 1, mt, &r);
    if (rc == MPI_SUCCESS) rc = MPI_Wait(&r, MPI_STATUS_IGNORE);
  } else {
    rc = MPI_File_write_at_all(fh, 0, mem, 1, mt, MPI_STATUS_IGNORE);
  }
  CHECK(rc == MPI_SUCCESS, "write (blk %d gap %d holes %d nb %d): %s", blk, gap, holes, nonblocking, err_text(rc));
  memset(back, 0, (size_t)n);
  if (nonblocking) {
    rc = MPI_File_iread_at_all(fh, 0, back, (int)n, MPI_BYTE, &r);
    if (rc == MPI_SUCCESS) rc = MPI_Wait(&r, MPI_STATUS_IGNORE);
  } else {
    rc = MPI_File_read_at_all(fh, 0, back, (int)n, MPI_BYTE, MPI_STATUS_IGNORE);
  }
  CHECK(rc == MPI_SUCCESS, "read (blk %d gap %d nb %d): %s", blk, gap, nonblocking, err_text(rc));
  long bad = -1;
  for (long i = 0; i < n && bad < 0; i++)
    if (back[i] != datum(rank, i, salt)) bad = i;
  CHECK(bad < 0, "read back (blk %d gap %d nb %d): byte %ld differs", blk, gap, nonblocking, bad);
  MPI_Type_free(&mt);
  MPI_Type_free(&ft);
  free(mem);
  free(back);
}

static long span(int blk, int gap, long n) { return (n / blk) * ((long)np * blk + gap) - gap; }

static void rounds(mode m, int cb_nodes) {
  for (int gap = 0; gap <= 16; gap += 16)
    for (int holes = 0; holes < 2; holes++) {
      long len = span(16, gap, PER);
      prefill(len);
      MPI_File fh = open_with(m, cb_nodes);
      check_hint(fh, "pario_coll_pipeline", m.pipe);
      check_hint(fh, "pario_coll_direct", m.direct);
      write_read(fh, 16, gap, PER, holes, holes, 0);
      MPI_File_close(&fh);
      CHECK(file_ok(len, 16, gap, PER, holes, len),
            "rounds (pipeline %s, direct %s, cb_nodes %d, gap %d, holes %d): wrong file", m.pipe, m.direct, cb_nodes,
            gap, holes);
    }
}

/* The view changes between calls; nonblocking calls with rounds; a blocking write while a
 * nonblocking one is in flight (they touch different halves of the file). */
static void views(mode m, int cb_nodes) {
  long len = span(48, 0, PER);
  prefill(len);
  MPI_File fh = open_with(m, cb_nodes);
  write_read(fh, 16, 0, PER, 1, 0, 0);
  write_read(fh, 48, 0, PER, 2, 1, 1);
  write_read(fh, 16, 0, PER, 3, 1, 1);
  write_read(fh, 48, 0, PER, 4, 0, 0);
  CHECK(file_ok(len, 48, 0, PER, 4, len), "views (pipeline %s, direct %s): wrong file", m.pipe, m.direct);
  /* first half nonblocking with one view, second half blocking with another */
  MPI_Datatype a = view_type(16, 0), b = view_type(48, 0);
  unsigned char *m1 = malloc(PER / 2), *m2 = malloc(PER / 2);
  for (long i = 0; i < PER / 2; i++) m1[i] = datum(rank, i, 5), m2[i] = datum(rank, i + PER / 2, 5);
  MPI_File_set_view(fh, (MPI_Offset)rank * 16, MPI_BYTE, a, "native", MPI_INFO_NULL);
  MPI_Request r;
  int rc = MPI_File_iwrite_at_all(fh, 0, m1, PER / 2, MPI_BYTE, &r);
  CHECK(rc == MPI_SUCCESS, "iwrite_at_all: %s", err_text(rc));
  /* data positions from PER/2 of the 48-byte view start where the 16-byte view's first half ends */
  MPI_File_set_view(fh, (MPI_Offset)rank * 48, MPI_BYTE, b, "native", MPI_INFO_NULL);
  rc = MPI_File_write_at_all(fh, PER / 2, m2, PER / 2, MPI_BYTE, MPI_STATUS_IGNORE);
  CHECK(rc == MPI_SUCCESS, "write_at_all beside an iwrite_at_all: %s", err_text(rc));
  rc = MPI_Wait(&r, MPI_STATUS_IGNORE);
  CHECK(rc == MPI_SUCCESS, "iwrite_at_all wait: %s", err_text(rc));
  MPI_File_close(&fh);
  int ok = 1;
  if (rank == 0) { /* the first np*PER/2 bytes by the 16-byte view, the rest by the 48-byte one */
    long got, half = (long)np * PER / 2;
    unsigned char *f = slurp(&got);
    ok = got == len;
    for (long i = 0; ok && i < len; i++) {
      unsigned char want = i < half ? expected(i, 16, 0, PER / 2, 5) : expected(i, 48, 0, PER, 5);
      if (f[i] != want) fprintf(stderr, "rank 0: byte %ld is %d, want %d\n", i, f[i], want), ok = 0;
    }
    free(f);
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  CHECK(ok, "views (pipeline %s, direct %s): a blocking write beside a nonblocking one left a wrong file", m.pipe,
        m.direct);
  MPI_Type_free(&a);
  MPI_Type_free(&b);
  free(m1);
  free(m2);
}

/* The aggregator's storage access number fail (from 0) fails, no other: one aggregator (rank
 * 0), covered windows of W bytes, one write each. */
static void errors(mode m, int fail, int nonblocking) {
  long len = span(16, 0, PER);
  char knob[32];
  prefill(len);
  snprintf(knob, sizeof knob, "0:%d", fail);
  setenv("PARIO_TEST_COLL_EIO", knob, 1); /* read when the file's collective context is made */
  MPI_File fh = open_with(m, 1);
  MPI_Datatype ft = view_type(16, 0);
  unsigned char *mem = malloc(PER);
  for (long i = 0; i < PER; i++) mem[i] = datum(rank, i, 6);
  MPI_File_set_view(fh, (MPI_Offset)rank * 16, MPI_BYTE, ft, "native", MPI_INFO_NULL);
  int rc;
  if (nonblocking) {
    MPI_Request r;
    rc = MPI_File_iwrite_at_all(fh, 0, mem, PER, MPI_BYTE, &r);
    CHECK(rc == MPI_SUCCESS, "iwrite_at_all start: %s", err_text(rc));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN); /* MPI_Wait's errors go there */
    rc = MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    CHECK(err_class(rc) == MPI_ERR_IO, "iwrite_at_all with a failing round (pipeline %s, direct %s): %s", m.pipe,
          m.direct, err_text(rc));
  } else {
    rc = MPI_File_write_at_all(fh, 0, mem, PER, MPI_BYTE, MPI_STATUS_IGNORE);
    CHECK_ERR(rc, MPI_ERR_IO, "MPI_File_write_at_all", path);
  }
  unsetenv("PARIO_TEST_COLL_EIO");
  MPI_File_close(&fh);
  CHECK(file_ok(len, 16, 0, PER, 6, (long)fail * W),
        "failed round %d (pipeline %s, direct %s, %s): the file must hold the rounds before it and nothing after",
        fail, m.pipe, m.direct, nonblocking ? "iwrite_at_all" : "write_at_all");
  if (!nonblocking) { /* a read whose second window fails: every rank gets the error */
    setenv("PARIO_TEST_COLL_EIO", "0:1", 1);
    fh = open_with(m, 1);
    MPI_File_set_view(fh, (MPI_Offset)rank * 16, MPI_BYTE, ft, "native", MPI_INFO_NULL);
    rc = MPI_File_read_at_all(fh, 0, mem, PER, MPI_BYTE, MPI_STATUS_IGNORE);
    CHECK_ERR(rc, MPI_ERR_IO, "MPI_File_read_at_all", path);
    unsetenv("PARIO_TEST_COLL_EIO");
    MPI_File_close(&fh);
  }
  MPI_Type_free(&ft);
  free(mem);
}

int main(int argc, char **argv) {
  start(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  test_path(path, sizeof path, "pipeline");
  const mode modes[] = {{"true", "true"}, {"false", "false"}, {"true", "false"}, {"false", "true"}};
  for (int i = 0; i < 4; i++) {
    rounds(modes[i], 1);
    rounds(modes[i], np);
    views(modes[i], np > 1 ? 2 : 1);
    if (pario_expected()) { /* the knob is pario's */
      errors(modes[i], 3, 0);
      errors(modes[i], 2, 1);
    }
  }
  if (rank == 0) remove(path);
  return finish("pipeline");
}
