/* The client of relay.sh: one rank writes 256 KiB (byte i is i % 251) to URL/data through
 * libpario and closes; exit 0 and "ok" on success, else 1 and the MPI error's class and text. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIZE (256 << 10)

static int fail(const char *what, int rc) {
  char msg[MPI_MAX_ERROR_STRING];
  int n = 0, cls = 0;
  MPI_Error_string(rc, msg, &n);
  MPI_Error_class(rc, &cls);
  const char *cn = cls == MPI_ERR_ARG ? "MPI_ERR_ARG" : cls == MPI_ERR_IO ? "MPI_ERR_IO" : "other";
  printf("%s failed: class %s (%d): %s\n", what, cn, cls, msg);
  return 1;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  if (argc != 2) return fprintf(stderr, "usage: relay_client URL\n"), MPI_Finalize(), 2;
  char name[600];
  snprintf(name, sizeof name, "%s/data", argv[1]);
  unsigned char *buf = malloc(SIZE);
  for (int i = 0; i < SIZE; i++) buf[i] = (unsigned char)(i % 251);
  MPI_File fh;
  int st = 0, rc = MPI_File_open(MPI_COMM_SELF, name, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
  if (rc != MPI_SUCCESS) st = fail("open", rc);
  if (!st && (rc = MPI_File_write_at(fh, 0, buf, SIZE, MPI_BYTE, MPI_STATUS_IGNORE)) != MPI_SUCCESS)
    st = fail("write", rc);
  if (!st && (rc = MPI_File_close(&fh)) != MPI_SUCCESS) st = fail("close", rc);
  if (!st) printf("ok\n");
  free(buf);
  MPI_Finalize();
  return st;
}
