/* What pario decides at run time about the MPI below it (src/core/hostmpi.c), checked on
 * whichever MPI runs this program, natively built with that MPI's compiler (mpicc_abi in the
 * MPI standard ABI build): pario serves the file API; pario_mpi_host() names the library that
 * MPI_Get_library_version names; pario's error codes read as pario wrote them (MPICH prints
 * unrelated text for added codes unless pario answers); a view of a large-count datatype
 * (MPI-4 headers) or its MPI-3 twin lands its bytes where the type says (read back as bytes);
 * the file's int handle (c2f/f2c, or toint/fromint of the ABI) round-trips.
 * usage: runtime [--print]  (--print: one line of what was decided, for the logs) */
#include <stdint.h>

#include "../mpi/harness.h"

#define NI 6 /* ints each rank writes: one instance of the filetype */

typedef const char *(*name_fn)(void);

static const char *library_kind(void) {
  const char *v = mpi_library();
  return strstr(v, "Open MPI") ? "openmpi" : strstr(v, "Intel(R) MPI") ? "impi" : strstr(v, "MPICH") ? "mpich" : "other";
}

static void check_identity(int print) {
  name_fn host = (name_fn)dlsym(RTLD_DEFAULT, "pario_mpi_host");
  name_fn flavour = (name_fn)dlsym(RTLD_DEFAULT, "pario_mpi_flavour");
  CHECK(host && flavour, "pario_mpi_host or pario_mpi_flavour not exported");
  if (!host || !flavour) return;
  CHECK(!strcmp(host(), library_kind()), "pario_mpi_host() says %s, MPI_Get_library_version %s", host(),
        library_kind());
  CHECK(strcmp(host(), "other"), "pario does not recognise the MPI library");
  CHECK(!strcmp(flavour(), PARIO_TEST_FLAVOUR), "pario built for %s, this test for %s", flavour(), PARIO_TEST_FLAVOUR);
  int provided = -1;
  MPI_Query_thread(&provided);
  if (print && t_rank == 0)
    printf("runtime: pario built for %s, runs on %s (MPI-%d.%d header), thread level %d%s\n", flavour(), host(),
           MPI_VERSION, MPI_SUBVERSION, provided, provided == MPI_THREAD_MULTIPLE ? " (MULTIPLE)" : "");
}

static void check_error_string(const char *path) {
  char missing[4200];
  snprintf(missing, sizeof missing, "%s.missing", path);
  MPI_File fh = MPI_FILE_NULL;
  int rc = MPI_File_open(MPI_COMM_WORLD, missing, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
  CHECK_ERR(rc, MPI_ERR_NO_SUCH_FILE, "MPI_File_open", missing);
}

/* The filetype: 3 blocks of 2 ints, stride 4 ints (extent 10 ints). */
static MPI_Datatype filetype(void) {
  MPI_Datatype t;
#if MPI_VERSION >= 4
  MPI_Type_vector_c(3, 2, 4, MPI_INT, &t);
#else
  MPI_Type_vector(3, 2, 4, MPI_INT, &t);
#endif
  MPI_Type_commit(&t);
  return t;
}

static void check_handles(MPI_File fh) {
#ifdef MPI_ABI_VERSION
  CHECK(MPI_File_fromint(MPI_File_toint(fh)) == fh, "MPI_File_fromint(MPI_File_toint(fh)) is not fh");
  CHECK(MPI_File_fromint(MPI_File_toint(MPI_FILE_NULL)) == MPI_FILE_NULL, "toint/fromint of MPI_FILE_NULL");
#else
  CHECK(MPI_File_f2c(MPI_File_c2f(fh)) == fh, "MPI_File_f2c(MPI_File_c2f(fh)) is not fh");
  CHECK(MPI_File_f2c(MPI_File_c2f(MPI_FILE_NULL)) == MPI_FILE_NULL, "c2f/f2c of MPI_FILE_NULL");
#endif
}

static void check_view(const char *path, int nprocs) {
  MPI_File fh;
  int data[NI], rc;
  for (int i = 0; i < NI; i++) data[i] = t_rank * 100 + i + 1;
  if (t_rank == 0) MPI_File_delete(path, MPI_INFO_NULL);
  MPI_Barrier(MPI_COMM_WORLD);
  rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
  CHECK(rc == MPI_SUCCESS, "open %s: %s", path, err_text(rc));
  if (rc != MPI_SUCCESS) return;
  check_handles(fh);
  MPI_Datatype ft = filetype();
  rc = MPI_File_set_view(fh, (MPI_Offset)t_rank * 10 * (MPI_Offset)sizeof(int), MPI_INT, ft, "native", MPI_INFO_NULL);
  CHECK(rc == MPI_SUCCESS, "set_view: %s", err_text(rc));
  rc = MPI_File_write_all(fh, data, NI, MPI_INT, MPI_STATUS_IGNORE);
  CHECK(rc == MPI_SUCCESS, "write_all: %s", err_text(rc));
  MPI_File_sync(fh);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_File_sync(fh);
  MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
  int n = 10 * nprocs, *all = calloc((size_t)n, sizeof *all);
  MPI_Status st;
  rc = MPI_File_read_at(fh, 0, all, n * (int)sizeof(int), MPI_BYTE, &st);
  int got = -1;
  MPI_Get_count(&st, MPI_BYTE, &got);
  CHECK(rc == MPI_SUCCESS && got == n * (int)sizeof(int), "read back: rc %d, %d bytes of %d", rc, got,
        n * (int)sizeof(int));
  for (int r = 0; r < nprocs; r++)
    for (int k = 0; k < 10; k++) {
      int in_block = k % 4 < 2, want = in_block ? r * 100 + (k / 4) * 2 + k % 4 + 1 : 0;
      CHECK(all[r * 10 + k] == want, "int %d of rank %d's extent: %d, want %d", k, r, all[r * 10 + k], want);
    }
  free(all);
  MPI_Type_free(&ft);
  MPI_File_close(&fh);
  if (t_rank == 0) MPI_File_delete(path, MPI_INFO_NULL);
}

int main(int argc, char **argv) {
  int nprocs, print = argc > 1 && !strcmp(argv[1], "--print");
  start(&argc, &argv);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  char path[4096];
  test_path(path, sizeof path, "abi_runtime");
  check_identity(print);
  check_error_string(path);
  check_view(path, nprocs);
  return finish("runtime");
}
