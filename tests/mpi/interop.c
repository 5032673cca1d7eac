/* Files are interchangeable with the native MPI-IO: "write" lays down a pattern through a
 * darray view collectively plus strided independent writes; "verify" reads it back through
 * the same calls and with POSIX. Run write under one implementation, verify under the other. */
#include "harness.h"

enum { G = 48 }; /* global G x G ints */

static int value(int i, int j) { return i * 1000 + j; }

static void darray_view(MPI_File fh, int np, int rank) {
  int gs[2] = {G, G}, ds[2] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC};
  int da[2] = {MPI_DISTRIBUTE_DFLT_DARG, 3}, ps[2] = {0, 0};
  MPI_Dims_create(np, 2, ps);
  MPI_Datatype ft;
  MPI_Type_create_darray(np, rank, 2, gs, ds, da, ps, MPI_ORDER_C, MPI_INT, &ft);
  MPI_Type_commit(&ft);
  MPI_File_set_view(fh, 64, MPI_INT, ft, "native", MPI_INFO_NULL);
  MPI_Type_free(&ft);
}

/* The global indices this rank owns, in file order (same rule as the darray). */
static int owned(int np, int rank, int *idx) {
  int ps[2] = {0, 0}, n = 0;
  MPI_Dims_create(np, 2, ps);
  int r0 = rank / ps[1], r1 = rank % ps[1], bs = (G + ps[0] - 1) / ps[0];
  for (int i = r0 * bs; i < G && i < (r0 + 1) * bs; i++)
    for (int j = 0; j < G; j++)
      if ((j / 3) % ps[1] == r1) idx[n++] = i * G + j;
  return n;
}

int main(int argc, char **argv) {
  start(&argc, &argv);
  int np, rank = t_rank;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  if (argc < 3) {
    if (!rank) fprintf(stderr, "usage: interop write|verify FILE\n");
    MPI_Finalize();
    return 2;
  }
  int writing = !strcmp(argv[1], "write");
  const char *path = argv[2];
  MPI_File fh;
  int rc = MPI_File_open(MPI_COMM_WORLD, path, writing ? MPI_MODE_CREATE | MPI_MODE_WRONLY : MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
  CHECK(rc == MPI_SUCCESS, "open %s: %s", path, err_text(rc));
  int *idx = malloc(sizeof(int) * G * G), *buf = malloc(sizeof(int) * G * G);
  int n = owned(np, rank, idx);
  darray_view(fh, np, rank);
  for (int k = 0; k < n; k++) buf[k] = value(idx[k] / G, idx[k] % G);
  if (writing) {
    rc = MPI_File_write_all(fh, buf, n, MPI_INT, MPI_STATUS_IGNORE);
    CHECK(rc == MPI_SUCCESS, "write_all");
  } else {
    int *in = calloc((size_t)n + 1, sizeof(int));
    rc = MPI_File_read_all(fh, in, n, MPI_INT, MPI_STATUS_IGNORE);
    CHECK(rc == MPI_SUCCESS && !memcmp(in, buf, sizeof(int) * (size_t)n), "read_all through darray view");
    free(in);
  }
  /* Independent strided records after the array: rank r owns records r, r+np, ... */
  MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
  MPI_Offset base = 64 + (MPI_Offset)G * G * 4;
  for (int rec = rank; rec < 4 * np; rec += np) {
    char r[40] = {0}, in[40];
    snprintf(r, sizeof r, "record %04d written by rank %04d....", rec, rank);
    if (writing) {
      CHECK(MPI_File_write_at(fh, base + rec * 40, r, 40, MPI_CHAR, MPI_STATUS_IGNORE) == MPI_SUCCESS, "write_at");
    } else {
      MPI_File_read_at(fh, base + rec * 40, in, 40, MPI_CHAR, MPI_STATUS_IGNORE);
      CHECK(!memcmp(in, r, 40), "record %d", rec);
    }
  }
  MPI_File_close(&fh);
  if (!writing && rank == 0) { /* and with plain POSIX: the file layout is the native one */
    FILE *f = fopen(path, "rb");
    int bad = 0, v;
    for (int k = 0; f && k < G * G; k++) {
      fseek(f, 64 + 4L * k, SEEK_SET);
      bad += fread(&v, 4, 1, f) != 1 || v != value(k / G, k % G);
    }
    if (f) fclose(f);
    CHECK(f && bad == 0, "%d ints differ when read with POSIX", bad);
  }
  free(idx);
  free(buf);
  return finish(writing ? "interop write" : "interop verify");
}
