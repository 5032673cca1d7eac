/* Example: strided independent I/O. Rank r owns blocks r, r+P, r+2P, ... of the file; it
 * writes them with a vector file view and independent MPI_File_write calls, then reads them
 * back with MPI_File_read_at through the same view and verifies every byte. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(void) {
  printf("usage: strided [--block BYTES] [--count N] [--file PATH] [--keep]\n"
         "Each rank writes N blocks (default 4096 of 1024 bytes) interleaved with the other\n"
         "ranks' blocks, independently, then reads them back and verifies them.\n");
}

int main(int argc, char **argv) {
  int block = 1024, count = 4096, keep = 0, rank, np;
  const char *path = "strided.dat";
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  for (int a = 1; a < argc; a++) {
    if (!strcmp(argv[a], "--help") || !strcmp(argv[a], "-h")) {
      if (rank == 0) usage();
      MPI_Finalize();
      return 0;
    } else if (!strcmp(argv[a], "--block") && a + 1 < argc) block = atoi(argv[++a]);
    else if (!strcmp(argv[a], "--count") && a + 1 < argc) count = atoi(argv[++a]);
    else if (!strcmp(argv[a], "--file") && a + 1 < argc) path = argv[++a];
    else if (!strcmp(argv[a], "--keep")) keep = 1;
    else {
      if (rank == 0) fprintf(stderr, "strided: unknown argument %s\n", argv[a]);
      MPI_Finalize();
      return 2;
    }
  }
  size_t n = (size_t)block * count;
  char *buf = malloc(n), *back = malloc(n);
  for (size_t i = 0; i < n; i++) buf[i] = (char)((i / block) * 7 + rank * 13 + i);
  MPI_Datatype filetype;
  MPI_Type_vector(1, block, block * np, MPI_BYTE, &filetype);
  MPI_Datatype tiled;
  MPI_Type_create_resized(filetype, 0, (MPI_Aint)block * np, &tiled);
  MPI_Type_commit(&tiled);
  MPI_File fh;
  if (MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh)) {
    fprintf(stderr, "strided: cannot open %s\n", path);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_File_set_view(fh, (MPI_Offset)rank * block, MPI_BYTE, tiled, "native", MPI_INFO_NULL);
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  int bad = 0;
  for (int k = 0; k < count; k += 64) /* several independent calls, 64 blocks each */
    bad += MPI_File_write(fh, buf + (size_t)k * block, block * (count - k < 64 ? count - k : 64),
                          MPI_BYTE, MPI_STATUS_IGNORE) != MPI_SUCCESS;
  MPI_File_sync(fh);
  double tw = MPI_Wtime() - t0;
  t0 = MPI_Wtime();
  bad += MPI_File_read_at(fh, 0, back, (int)n, MPI_BYTE, MPI_STATUS_IGNORE) != MPI_SUCCESS;
  double tr = MPI_Wtime() - t0;
  MPI_File_close(&fh);
  bad += memcmp(buf, back, n) != 0;
  int total = 0;
  double t[2] = {tw, tr}, tm[2];
  MPI_Reduce(&bad, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Reduce(t, tm, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    printf("strided: %d ranks x %d blocks of %d bytes: write %.4f s (%.1f MB/s), read %.4f s, %s\n", np,
           count, block, tm[0], (double)n * np / 1e6 / tm[0], tm[1], total ? "VERIFY FAILED" : "verified");
    if (!keep && total == 0) MPI_File_delete(path, MPI_INFO_NULL);
  }
  MPI_Type_free(&filetype);
  MPI_Type_free(&tiled);
  free(buf);
  free(back);
  MPI_Finalize();
  return total != 0;
}
