/* Read volume: the bytes pario reads from the file against the bytes the reads asked for
 * (MPI_File_get_info's pario_bytes_read_file and pario_bytes_requested), for hand-designed
 * patterns whose exact volume is known: data-sieving reads that must not read holes wider than
 * pario_read_max_gap, aggregated collective reads that read only the union of what the ranks
 * asked for, and an HDF5-like 2D hyperslab read collectively (the case that read twice the
 * requested bytes). Every read's bytes are checked; a volume that grows fails the test. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"

static int rank, np;
static char path[4096];

enum { FSIZE = 2 << 20 };

static unsigned char pattern(long off) { return (unsigned char)(off * 131 + (off >> 9) * 7 + 7); }

static void prefill(void) {
  if (rank == 0) {
    FILE *fp = fopen(path, "wb");
    for (long i = 0; i < FSIZE; i++) fputc(pattern(i), fp);
    fclose(fp);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

typedef struct {
  long long file, req;
} vol;

static vol volume(MPI_File fh) { return (vol){pario_info_ll(fh, "pario_bytes_read_file"), pario_info_ll(fh, "pario_bytes_requested")}; }

static void set_gap(MPI_File fh, const char *gap) {
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "pario_read_max_gap", gap);
  MPI_File_set_info(fh, info);
  MPI_Info_free(&info);
}

/* A view of n pieces of len bytes at offs (from base), read with one call (collective or
 * not); checks the bytes and returns this rank's read volume of the call. */
static vol read_pieces(MPI_File fh, int coll, long base, const long *offs, int n, int len, const char *what) {
  MPI_Datatype ft;
  MPI_Aint disp[64];
  int lens[64];
  for (int i = 0; i < n; i++) disp[i] = offs[i], lens[i] = len;
  MPI_Type_create_hindexed(n, lens, disp, MPI_BYTE, &ft);
  MPI_Type_commit(&ft);
  MPI_File_set_view(fh, base, MPI_BYTE, ft, "native", MPI_INFO_NULL);
  unsigned char *buf = malloc((size_t)n * len + 1);
  vol a = volume(fh);
  MPI_Status st;
  int rc = coll ? MPI_File_read_at_all(fh, 0, buf, n * len, MPI_BYTE, &st)
                : MPI_File_read_at(fh, 0, buf, n * len, MPI_BYTE, &st);
  vol b = volume(fh);
  CHECK(rc == MPI_SUCCESS, "%s: read failed: %s", what, err_text(rc));
  int bad = -1;
  for (int i = 0; i < n && n * len > 0; i++)
    for (int k = 0; k < len; k++)
      if (bad < 0 && buf[i * len + k] != pattern(base + offs[i] + k)) bad = i * len + k;
  CHECK(bad < 0, "%s: wrong byte %d of the read", what, bad);
  free(buf);
  MPI_Type_free(&ft);
  return (vol){b.file - a.file, b.req - a.req};
}

static long long sum(long long x) {
  long long s = 0;
  MPI_Allreduce(&x, &s, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  return s;
}

/* Independent sieving reads: pieces 200 B apart (one-buffer windows) and 2000 B apart
 * (scatter windows), with one hole of 15,600 / 16,000 B that no window may read through. */
static void sieving(MPI_File fh) {
  static const long near[] = {0, 200, 400, 20000, 20200}, far[] = {0, 2000, 4000, 20000, 22000};
  long base = (long)rank * 100000;
  vol v = read_pieces(fh, 0, base, near, 5, 100, "sieve");
  CHECK(v.req == 500 && v.file == 800, "sieve: read %lld of the file for %lld requested, want 800 for 500", v.file, v.req);
  v = read_pieces(fh, 0, base, far, 5, 100, "scatter");
  CHECK(v.req == 500 && v.file == 6200, "scatter: read %lld for %lld, want 6200 for 500", v.file, v.req);
  set_gap(fh, "0"); /* no hole is read: every piece on its own */
  v = read_pieces(fh, 0, base, near, 5, 100, "sieve gap 0");
  CHECK(v.file == 500, "sieve, max gap 0: read %lld, want 500", v.file);
  v = read_pieces(fh, 0, base, far, 5, 100, "scatter gap 0");
  CHECK(v.file == 500, "scatter, max gap 0: read %lld, want 500", v.file);
  set_gap(fh, "1M"); /* every hole read through: the whole span once */
  v = read_pieces(fh, 0, base, near, 5, 100, "sieve gap 1M");
  CHECK(v.file == 20300, "sieve, max gap 1M: read %lld, want 20300", v.file);
  v = read_pieces(fh, 0, base, far, 5, 100, "scatter gap 1M");
  CHECK(v.file == 22100, "scatter, max gap 1M: read %lld, want 22100", v.file);
  set_gap(fh, "4096");
}

/* Aggregated reads (romio_cb_read=enable): rank r's 100 B at k * STEP + r * PITCH, k < 4. */
static void aggregated(MPI_File fh, long step, long pitch, long long want_file, const char *what) {
  long offs[4];
  for (int k = 0; k < 4; k++) offs[k] = k * step + rank * pitch;
  vol v = read_pieces(fh, 1, 0, offs, 4, 100, what);
  long long f = sum(v.file), r = sum(v.req);
  CHECK(r == 400LL * np && f == want_file, "%s: the ranks read %lld of the file for %lld requested, want %lld for %lld",
        what, f, r, want_file, 400LL * np);
}

/* An HDF5-like collective hyperslab read: a ROWS x COLS dataset of doubles, each rank a block
 * of columns (a 1 x np decomposition), read with read_all through a subarray view. */
enum { ROWS = 64, COLS = 3072 };

static vol hyperslab(MPI_File fh, const char *what) {
  int sizes[2] = {ROWS, COLS}, sub[2] = {ROWS, COLS / np}, starts[2] = {0, rank * (COLS / np)};
  MPI_Datatype ft;
  MPI_Type_create_subarray(2, sizes, sub, starts, MPI_ORDER_C, MPI_DOUBLE, &ft);
  MPI_Type_commit(&ft);
  MPI_File_set_view(fh, 0, MPI_DOUBLE, ft, "native", MPI_INFO_NULL);
  int n = ROWS * (COLS / np);
  unsigned char *buf = malloc((size_t)n * 8);
  vol a = volume(fh);
  int rc = MPI_File_read_all(fh, buf, n, MPI_DOUBLE, MPI_STATUS_IGNORE);
  vol b = volume(fh);
  CHECK(rc == MPI_SUCCESS, "%s: read_all failed: %s", what, err_text(rc));
  long piece = (long)(COLS / np) * 8, bad = -1;
  for (long row = 0; row < ROWS; row++)
    for (long k = 0; k < piece; k++)
      if (bad < 0 && buf[row * piece + k] != pattern(row * COLS * 8 + rank * piece + k)) bad = row * piece + k;
  CHECK(bad < 0, "%s: wrong byte %ld", what, bad);
  free(buf);
  MPI_Type_free(&ft);
  vol v = {sum(b.file - a.file), sum(b.req - a.req)};
  if (rank == 0)
    printf("%s: %d ranks read %lld bytes of the file for %lld requested (amplification %.3f)\n", what, np, v.file,
           v.req, (double)v.file / (double)v.req);
  return v;
}

int main(int argc, char **argv) {
  start(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  test_path(path, sizeof path, "readvol");
  prefill();
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "pario_read_max_gap", "4096");
  MPI_File fh;
  int rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, info, &fh);
  CHECK(rc == MPI_SUCCESS, "open: %s", err_text(rc));
  if (rc != MPI_SUCCESS) return finish("readvol");
  CHECK(pario_info_ll(fh, "pario_read_max_gap") == 4096, "pario_read_max_gap not reported as set");
  sieving(fh);
  const long long data = (long long)ROWS * COLS * 8, row = COLS * 8;
  /* Automatic on one node: every rank sieves on its own. Holes of (np-1)/np of a row (at
   * least 12 KiB) are never read; read through (max gap 1 MiB), each rank would read its
   * span, np times the data: up to twice the data (2 ranks) they do, beyond that (3 ranks and
   * more) the read aggregates and reads the data's span once (collective/decide.c). */
  vol v = hyperslab(fh, "hyperslab automatic");
  CHECK(v.file == data && v.req == data, "hyperslab automatic: %lld for %lld, want %lld", v.file, v.req, data);
  set_gap(fh, "1M");
  v = hyperslab(fh, "hyperslab automatic, pario_read_max_gap=1M");
  long long span = (ROWS - 1) * row + row / np;
  long long want = np * span <= 2 * data ? np * span : data;
  CHECK(v.file == want, "hyperslab, max gap 1M: %lld, want %lld", v.file, want);
  MPI_Info_set(info, "romio_cb_read", "enable");
  MPI_Info_set(info, "cb_nodes", "1"); /* one aggregator: the volumes below are its reads */
  MPI_Info_set(info, "pario_read_max_gap", "4096");
  MPI_File_set_info(fh, info);
  v = hyperslab(fh, "hyperslab aggregated");
  CHECK(v.file == data && v.req == data, "hyperslab aggregated: %lld for %lld, want %lld", v.file, v.req, data);
  /* Four runs 100,000 B apart, each the ranks' 100 B side by side: only the runs are read. */
  aggregated(fh, 100000, 100, 400LL * np, "aggregated, wide holes");
  /* Holes of 100 B between ranks and up to 900 B between runs: one read from the first
   * byte to the last. */
  aggregated(fh, 1000, 200, 3000 + (np - 1) * 200 + 100, "aggregated, narrow holes");
  MPI_File_close(&fh);
  MPI_Info_free(&info);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) unlink(path);
  return finish("readvol");
}
