/* pario-checksum: print the Adler-32 or CRC32C of whole files, "VALUE  NAME" per file (8 hex
 * digits), like XRootD's xrdadler32. For x-rio:// files the server computes the sum (nothing
 * but the answer travels); local files are read through pario. Runs as an MPI singleton. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "pario.h"

static int usage(FILE *o) {
  fprintf(o, "usage: pario-checksum [--algo adler32|crc32c] FILE...\n"
             "  prints the checksum of each FILE (a path or x-rio://host:port/path) as VALUE  NAME\n");
  return o == stdout ? 0 : 2;
}

/* The MPI error class a user can act on, by name. */
static const char *class_name(int rc) {
  int c = MPI_ERR_OTHER;
  MPI_Error_class(rc, &c);
  return c == MPI_ERR_NO_SUCH_FILE ? "MPI_ERR_NO_SUCH_FILE" : c == MPI_ERR_ACCESS ? "MPI_ERR_ACCESS"
       : c == MPI_ERR_IO ? "MPI_ERR_IO" : c == MPI_ERR_ARG ? "MPI_ERR_ARG" : c == MPI_ERR_FILE ? "MPI_ERR_FILE"
       : "MPI error";
}

/* One file: 0, or 1 after a one-line error naming the file. */
static int sum_file(const char *name, const char *algo) {
  MPI_File fh;
  char msg[MPI_MAX_ERROR_STRING];
  int len, rc = MPI_File_open(MPI_COMM_SELF, name, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
  if (rc == MPI_SUCCESS) {
    MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN);
    unsigned long v = 0;
    MPI_Offset n = 0;
    rc = pario_file_checksum(fh, algo, 0, 0, &v, &n);
    MPI_File_close(&fh);
    if (rc == MPI_SUCCESS) {
      printf("%08lx  %s\n", v, name);
      return 0;
    }
  }
  MPI_Error_string(rc, msg, &len);
  fprintf(stderr, "pario-checksum: %s: %s (%s)\n", name, msg, class_name(rc));
  return 1;
}

int main(int argc, char **argv) {
  const char *algo = "adler32";
  int first = 1;
  for (; first < argc && !strncmp(argv[first], "-", 1); first++) {
    if (!strcmp(argv[first], "--help") || !strcmp(argv[first], "-h")) return usage(stdout);
    if (!strcmp(argv[first], "--")) {
      first++;
      break;
    }
    if (strcmp(argv[first], "--algo") || first + 1 >= argc) return usage(stderr);
    algo = argv[++first];
    if (strcmp(algo, "adler32") && strcmp(algo, "crc32c")) {
      fprintf(stderr, "pario-checksum: unknown --algo %s (adler32 or crc32c)\n", algo);
      return 2;
    }
  }
  if (first >= argc) return usage(stderr);
  MPI_Init(&argc, &argv);
  MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN);
  int bad = 0;
  for (int i = first; i < argc; i++) bad |= sum_file(argv[i], algo);
  MPI_Finalize();
  return bad;
}
