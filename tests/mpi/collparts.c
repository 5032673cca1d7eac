/* The view exchange sends each aggregator only the part of every rank's filetype that its file
 * domain meets, and tops it up when a later call under the same (cached) views moves the
 * domains (collective/viewx.c, docs/collective.md "Metadata per rank"). Aggregated writes and
 * reads through one interleaved filetype of irregular runs, each call over a different range of
 * the tile (a whole tile, its first quarter, its last eighth, across two tiles), then the same
 * filetype at a displacement moved by a few tiles and some bytes (HDF5's way), another view and
 * back (a cache hit that needs no part, then one that needs more). Every written byte is read
 * back with plain reads (rank 0) and with collective reads (every rank). */
#include "harness.h"

enum { NB = 48 }; /* blocks per rank per tile */
static int rank, np;
static char path[4096];

/* Block j of rank r: at (j * np + r) * 8 in the tile, 8 bytes, or 5 for odd j (irregular). */
static int blen(int j) { return j & 1 ? 5 : 8; }
static long long tile_data(void) { return NB / 2 * 8 + NB / 2 * 5; }
static long long extent(void) { return (long long)NB * np * 8; }

static unsigned char pattern(long long off) { return (unsigned char)(off * 7 + 3); }

/* File offset of data position p of rank r's view at disp. */
static long long offset_of(int r, long long disp, long long p) {
  long long t = p / tile_data(), in = p % tile_data();
  int j = 0;
  while (in >= blen(j)) in -= blen(j++);
  return disp + t * extent() + ((long long)j * np + r) * 8 + in;
}

static MPI_Datatype filetype(void) {
  int len[NB], dsp[NB];
  for (int j = 0; j < NB; j++) len[j] = blen(j), dsp[j] = (j * np + rank) * 8;
  MPI_Datatype ix, ft;
  MPI_Type_indexed(NB, len, dsp, MPI_BYTE, &ix);
  MPI_Type_create_resized(ix, 0, extent(), &ft);
  MPI_Type_commit(&ft);
  MPI_Type_free(&ix);
  return ft;
}

/* One call: data positions [pos, pos + n) of every rank, written (or read and compared). */
typedef struct {
  long long disp, pos, n;
} call;

static unsigned char *written; /* rank 0: which file bytes some call wrote */
static long long file_len;

static void one(MPI_File fh, const call *k, int write, const char *what) {
  unsigned char *buf = malloc((size_t)k->n + 1);
  for (long long i = 0; i < k->n; i++) buf[i] = write ? pattern(offset_of(rank, k->disp, k->pos + i)) : 0;
  MPI_Status st;
  int rc = write ? MPI_File_write_at_all(fh, k->pos, buf, (int)k->n, MPI_BYTE, &st)
                 : MPI_File_read_at_all(fh, k->pos, buf, (int)k->n, MPI_BYTE, &st);
  CHECK(rc == MPI_SUCCESS, "%s %s: %s", what, write ? "write_at_all" : "read_at_all", err_text(rc));
  long long bad = 0;
  for (long long i = 0; !write && i < k->n; i++) bad += buf[i] != pattern(offset_of(rank, k->disp, k->pos + i));
  CHECK(bad == 0, "%s: read_at_all read %lld wrong bytes of %lld", what, bad, k->n);
  for (int r = 0; write && rank == 0 && r < np; r++)
    for (long long i = 0; i < k->n; i++) {
      long long o = offset_of(r, k->disp, k->pos + i);
      written[o] = 1;
      if (o + 1 > file_len) file_len = o + 1;
    }
  free(buf);
}

int main(int argc, char **argv) {
  start(&argc, &argv);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  rank = t_rank;
  test_path(path, sizeof path, "pario-collparts");
  long long T = tile_data(), E = extent();
  /* the ranges of the tile each call covers, at tiles 0..3, then 4 tiles and 3 bytes further */
  call calls[] = {{0, 0, T},         {0, T, T / 4},          {0, 2 * T + T - T / 8, T / 8},
                  {0, 3 * T - T / 3, T / 2 + T / 3}, {4 * E + 3, 0, T / 2}, {4 * E + 3, T + T / 2, T / 3}};
  int ncalls = (int)(sizeof calls / sizeof *calls);
  written = calloc((size_t)(10 * E), 1);
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "romio_cb_write", "enable");
  MPI_Info_set(info, "romio_cb_read", "enable");
  MPI_Info_set(info, "cb_nodes", np > 2 ? "2" : "1");
  if (rank == 0) remove(path);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_File fh;
  int rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
  CHECK(rc == MPI_SUCCESS, "open: %s", err_text(rc));
  MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN);
  MPI_Datatype ft = filetype(), other;
  MPI_Type_vector(4, 1, np, MPI_INT, &other);
  MPI_Type_commit(&other);
  for (int pass = 0; pass < 2; pass++) { /* write, then read back collectively */
    long long disp = -1;
    for (int i = 0; i < ncalls; i++) {
      char what[32];
      snprintf(what, sizeof what, "call %d", i);
      if (calls[i].disp != disp) {
        disp = calls[i].disp;
        MPI_File_set_view(fh, disp, MPI_BYTE, ft, "native", MPI_INFO_NULL);
      }
      if (i == 4) { /* another view between, then back to this one */
        int v[4];
        MPI_File_set_view(fh, 4 * rank, MPI_INT, other, "native", MPI_INFO_NULL);
        rc = MPI_File_read_at_all(fh, 0, v, 4, MPI_INT, MPI_STATUS_IGNORE);
        CHECK(rc == MPI_SUCCESS, "read under another view: %s", err_text(rc));
        MPI_File_set_view(fh, disp, MPI_BYTE, ft, "native", MPI_INFO_NULL);
      }
      one(fh, &calls[i], pass == 0, what);
    }
  }
  if (pario_expected())
    CHECK(pario_info_ll(fh, "pario_coll_aggregated") == 2 * ncalls + 2, "every call aggregated (%lld of %d)",
          pario_info_ll(fh, "pario_coll_aggregated"), 2 * ncalls + 2);
  rc = MPI_File_close(&fh);
  CHECK(rc == MPI_SUCCESS, "close: %s", err_text(rc));
  if (rank == 0) { /* every byte: the pattern where a call wrote it, else a hole (zero) */
    FILE *fp = fopen(path, "rb");
    long long bad = 0, n = 0;
    int ch;
    for (; fp && (ch = fgetc(fp)) != EOF; n++) bad += ch != (n < 10 * E && written[n] ? pattern(n) : 0);
    CHECK(fp && n == file_len, "file is %lld bytes, want %lld", n, file_len);
    CHECK(bad == 0, "%lld wrong bytes in the file", bad);
    if (fp) fclose(fp);
    remove(path);
  }
  MPI_Type_free(&ft);
  MPI_Type_free(&other);
  MPI_Info_free(&info);
  free(written);
  return finish("collparts");
}
