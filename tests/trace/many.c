/* Many small traced calls, for the trace-loss test (loss.sh): each rank writes N 64-byte records
 * at its own offsets and reads them back (checked), so that its trace outgrows a small file
 * system. Proves pario served it (pario_version). Usage: many FILE N */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, np, fails = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  if (argc != 3 || !dlsym(RTLD_DEFAULT, "pario_version")) {
    fprintf(stderr, "many: usage: many FILE N, under libpario (pario_version not found: not pario)\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int n = atoi(argv[2]);
  MPI_File fh;
  if (MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh) != MPI_SUCCESS) {
    fprintf(stderr, "many: rank %d: open failed\n", rank);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  char rec[64], back[64];
  for (int i = 0; i < n; i++) {
    MPI_Offset off = ((MPI_Offset)i * np + rank) * (MPI_Offset)sizeof rec;
    memset(rec, 'a' + (i + rank) % 26, sizeof rec);
    if (MPI_File_write_at(fh, off, rec, sizeof rec, MPI_BYTE, MPI_STATUS_IGNORE) != MPI_SUCCESS ||
        MPI_File_read_at(fh, off, back, sizeof back, MPI_BYTE, MPI_STATUS_IGNORE) != MPI_SUCCESS ||
        memcmp(rec, back, sizeof rec) != 0)
      fails++;
  }
  MPI_File_close(&fh);
  int all = 0;
  MPI_Allreduce(&fails, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("many: %d ranks x %d records: %s\n", np, n, all ? "FAILED" : "ok");
  MPI_Finalize();
  return all != 0;
}
