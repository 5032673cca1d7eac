/* Helper of tests/rio/checksum.sh: "put SRC DST" copies a local file to DST through libpario
 * (MPI_File_write_at, 1 MiB at a time); "sum ALGO NAME OFFSET LEN" prints pario_file_checksum's
 * "VALUE BYTES" (hex value) or the error class and message. MPI singleton. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "pario.h"

static int put(const char *src, const char *dst) {
  FILE *in = fopen(src, "rb");
  if (!in) return perror(src), 1;
  MPI_File fh;
  int rc = MPI_File_open(MPI_COMM_SELF, dst, MPI_MODE_WRONLY | MPI_MODE_CREATE, MPI_INFO_NULL, &fh);
  static char buf[1 << 20];
  size_t n;
  MPI_Offset off = 0;
  while (rc == MPI_SUCCESS && (n = fread(buf, 1, sizeof buf, in)) > 0) {
    rc = MPI_File_write_at(fh, off, buf, (int)n, MPI_BYTE, MPI_STATUS_IGNORE);
    off += (MPI_Offset)n;
  }
  fclose(in);
  if (rc == MPI_SUCCESS) rc = MPI_File_close(&fh);
  if (rc != MPI_SUCCESS) fprintf(stderr, "put %s: failed (%d)\n", dst, rc);
  return rc != MPI_SUCCESS;
}

static int sum(const char *algo, const char *name, long long off, long long len) {
  MPI_File fh;
  unsigned long v = 0;
  MPI_Offset bytes = 0;
  int rc = MPI_File_open(MPI_COMM_SELF, name, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
  if (rc == MPI_SUCCESS) {
    MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN);
    rc = pario_file_checksum(fh, algo, off, len, &v, &bytes);
    MPI_File_close(&fh);
  }
  if (rc == MPI_SUCCESS) {
    printf("%08lx %lld\n", v, (long long)bytes);
    return 0;
  }
  char msg[MPI_MAX_ERROR_STRING];
  int ml, cls;
  MPI_Error_class(rc, &cls);
  MPI_Error_string(rc, msg, &ml);
  printf("error %s %s\n", cls == MPI_ERR_NO_SUCH_FILE ? "NO_SUCH_FILE" : cls == MPI_ERR_ARG ? "ARG" : "OTHER", msg);
  return 1;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN);
  int r = 2;
  if (argc == 4 && argv[1][0] == 'p') r = put(argv[2], argv[3]);
  if (argc == 6 && argv[1][0] == 's') r = sum(argv[2], argv[3], atoll(argv[4]), atoll(argv[5]));
  MPI_Finalize();
  return r;
}
