/* Example: a 2-D domain decomposition checkpoint. Each rank holds its block of a global
 * NX x NY grid of doubles with a ghost-cell halo; both the memory (block inside the halo)
 * and the file (block inside the global array) are subarrays, written with one collective
 * MPI_File_write_all and read back with MPI_File_read_all to verify. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(void) {
  printf("usage: checkpoint2d [--nx N] [--ny N] [--file PATH] [--keep]\n"
         "Writes an NX x NY (default 1024 x 1024) grid of doubles collectively through a\n"
         "subarray view, reads it back and verifies it. Prints the elapsed times.\n");
}

static double value(int i, int j) { return i * 100000.0 + j; }

int main(int argc, char **argv) {
  int nx = 1024, ny = 1024, keep = 0, rank, np;
  const char *path = "checkpoint2d.dat";
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  for (int a = 1; a < argc; a++) {
    if (!strcmp(argv[a], "--help") || !strcmp(argv[a], "-h")) {
      if (rank == 0) usage();
      MPI_Finalize();
      return 0;
    } else if (!strcmp(argv[a], "--nx") && a + 1 < argc) nx = atoi(argv[++a]);
    else if (!strcmp(argv[a], "--ny") && a + 1 < argc) ny = atoi(argv[++a]);
    else if (!strcmp(argv[a], "--file") && a + 1 < argc) path = argv[++a];
    else if (!strcmp(argv[a], "--keep")) keep = 1;
    else {
      if (rank == 0) fprintf(stderr, "checkpoint2d: unknown argument %s\n", argv[a]);
      MPI_Finalize();
      return 2;
    }
  }
  int dims[2] = {0, 0}, periods[2] = {0, 0}, coords[2];
  MPI_Dims_create(np, 2, dims);
  MPI_Comm cart;
  MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
  MPI_Cart_coords(cart, rank, 2, coords);
  /* Block sizes: the first nx % dims rows get one extra. */
  int lx = nx / dims[0] + (coords[0] < nx % dims[0]), ly = ny / dims[1] + (coords[1] < ny % dims[1]);
  int sx = coords[0] * (nx / dims[0]) + (coords[0] < nx % dims[0] ? coords[0] : nx % dims[0]);
  int sy = coords[1] * (ny / dims[1]) + (coords[1] < ny % dims[1] ? coords[1] : ny % dims[1]);
  int hx = lx + 2, hy = ly + 2; /* with the halo */
  double *mem = calloc((size_t)hx * hy, sizeof(double)), *back = calloc((size_t)hx * hy, sizeof(double));
  for (int i = 0; i < lx; i++)
    for (int j = 0; j < ly; j++) mem[(i + 1) * hy + j + 1] = value(sx + i, sy + j);
  int gsz[2] = {nx, ny}, lsz[2] = {lx, ly}, gst[2] = {sx, sy};
  int msz[2] = {hx, hy}, mst[2] = {1, 1};
  MPI_Datatype filetype, memtype;
  MPI_Type_create_subarray(2, gsz, lsz, gst, MPI_ORDER_C, MPI_DOUBLE, &filetype);
  MPI_Type_create_subarray(2, msz, lsz, mst, MPI_ORDER_C, MPI_DOUBLE, &memtype);
  MPI_Type_commit(&filetype);
  MPI_Type_commit(&memtype);
  MPI_File fh;
  int rc = MPI_File_open(cart, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
  if (rc != MPI_SUCCESS) {
    char msg[MPI_MAX_ERROR_STRING];
    int len;
    MPI_Error_string(rc, msg, &len);
    fprintf(stderr, "checkpoint2d: %s\n", msg);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_File_set_view(fh, 0, MPI_DOUBLE, filetype, "native", MPI_INFO_NULL);
  MPI_Barrier(cart);
  double t0 = MPI_Wtime();
  rc = MPI_File_write_all(fh, mem, 1, memtype, MPI_STATUS_IGNORE);
  MPI_File_sync(fh);
  double tw = MPI_Wtime() - t0;
  t0 = MPI_Wtime();
  MPI_File_seek(fh, 0, MPI_SEEK_SET); /* the write moved the individual pointer */
  rc |= MPI_File_read_all(fh, back, 1, memtype, MPI_STATUS_IGNORE);
  double tr = MPI_Wtime() - t0;
  MPI_File_close(&fh);
  int bad = rc != MPI_SUCCESS;
  for (int i = 0; i < lx; i++)
    for (int j = 0; j < ly; j++) bad += back[(i + 1) * hy + j + 1] != value(sx + i, sy + j);
  for (int j = 0; j < hy; j++) bad += back[j] != 0; /* the halo is never written */
  int total = 0;
  double tmax[2] = {tw, tr}, tall[2];
  MPI_Reduce(&bad, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Reduce(tmax, tall, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    double mb = (double)nx * ny * sizeof(double) / 1e6;
    printf("checkpoint2d: %d x %d doubles on a %d x %d grid: write_all %.4f s (%.1f MB/s), "
           "read_all %.4f s, %s\n", nx, ny, dims[0], dims[1], tall[0], mb / tall[0], tall[1],
           total ? "VERIFY FAILED" : "verified");
    if (!keep && total == 0) MPI_File_delete(path, MPI_INFO_NULL);
  }
  MPI_Type_free(&filetype);
  MPI_Type_free(&memtype);
  MPI_Comm_free(&cart);
  free(mem);
  free(back);
  MPI_Finalize();
  return total != 0;
}
