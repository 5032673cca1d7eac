/* A program of a project that uses an installed pario (tests/install): every rank writes its
 * block of a file with MPI-IO, the file is reopened and each rank reads its neighbour's block
 * back; then it checks that pario served this: pario.h's functions link, pario_version is in
 * the process (dlsym(RTLD_DEFAULT, "pario_version"), see pario.h), the library built for the
 * expected MPI flavour, and MPI_File_open comes from libpario in the expected directory.
 * usage: consumer FILE FLAVOUR LIBDIR */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <mpi.h>
#include <pario.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK 65536

static unsigned char pattern(int rank, int i) { return (unsigned char)(rank * 31 + i * 7 + 1); }

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size, bad = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc != 4) {
    if (rank == 0) fprintf(stderr, "usage: consumer FILE FLAVOUR LIBDIR\n");
    MPI_Finalize();
    return 2;
  }
  const char *path = argv[1], *flavour = argv[2];

  /* Who serves MPI-IO. */
  char where[PATH_MAX] = "?", want[PATH_MAX] = "?", got[PATH_MAX] = "?";
  if (!dlsym(RTLD_DEFAULT, "pario_version")) {
    fprintf(stderr, "rank %d: pario_version is not in the process: pario does not serve it\n", rank);
    bad = 1;
  }
  if (strcmp(pario_mpi_flavour(), flavour) != 0) {
    fprintf(stderr, "rank %d: pario built for %s, expected %s\n", rank, pario_mpi_flavour(), flavour);
    bad = 1;
  }
  Dl_info info;
  void *open_fn = dlsym(RTLD_DEFAULT, "MPI_File_open");
  if (open_fn && dladdr(open_fn, &info) && info.dli_fname) {
    snprintf(where, sizeof where, "%s", info.dli_fname);
    char *slash = strrchr(where, '/');
    if (slash) *slash = 0;
    if (!realpath(where, got) || !realpath(argv[3], want) || strcmp(got, want) != 0 ||
        !strstr(info.dli_fname, "libpario")) {
      fprintf(stderr, "rank %d: MPI_File_open comes from %s, expected libpario in %s\n", rank,
              info.dli_fname, argv[3]);
      bad = 1;
    }
    snprintf(where, sizeof where, "%s", info.dli_fname);
  } else {
    fprintf(stderr, "rank %d: cannot locate MPI_File_open\n", rank);
    bad = 1;
  }

  /* Write, reopen, read the neighbour's block back. */
  unsigned char *buf = malloc(BLOCK);
  for (int i = 0; i < BLOCK; i++) buf[i] = pattern(rank, i);
  MPI_File fh;
  MPI_Status st;
  int rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
  if (rc == MPI_SUCCESS) rc = MPI_File_write_at_all(fh, (MPI_Offset)rank * BLOCK, buf, BLOCK, MPI_BYTE, &st);
  if (rc == MPI_SUCCESS) rc = MPI_File_close(&fh);
  int peer = (rank + 1) % size;
  MPI_Offset fsize = -1;
  if (rc == MPI_SUCCESS) rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
  if (rc == MPI_SUCCESS) {
    memset(buf, 0, BLOCK);
    rc = MPI_File_read_at_all(fh, (MPI_Offset)peer * BLOCK, buf, BLOCK, MPI_BYTE, &st);
    MPI_File_get_size(fh, &fsize);
    MPI_File_close(&fh);
  }
  if (rc != MPI_SUCCESS) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    fprintf(stderr, "rank %d: MPI-IO failed: %s\n", rank, msg);
    bad = 1;
  } else {
    for (int i = 0; i < BLOCK; i++)
      if (buf[i] != pattern(peer, i)) {
        fprintf(stderr, "rank %d: byte %d of rank %d's block is wrong\n", rank, i, peer);
        bad = 1;
        break;
      }
    if (fsize != (MPI_Offset)size * BLOCK) {
      fprintf(stderr, "rank %d: file size %lld, expected %lld\n", rank, (long long)fsize,
              (long long)size * BLOCK);
      bad = 1;
    }
  }
  free(buf);
  int anybad = 0;
  MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0)
    printf("consumer: %s: %d ranks, pario %s for %s, MPI_File_open from %s\n",
           anybad ? "FAILED" : "ok", size, pario_version(), pario_mpi_flavour(), where);
  MPI_Finalize();
  return anybad ? 1 : 0;
}
