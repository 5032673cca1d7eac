/* Out of memory inside a collective call: PARIO_TEST_COLL_NOMEM=R:site (read when the file's
 * collective context is created) makes rank R's allocation at one site of the collective layer
 * fail: context (the per-file context), views (a new set of views, and an aggregator's parts of the other ranks' runs), stage (an aggregator's
 * staging area), pack (a rank's packed data). Every rank must return an error from
 * write_all, read_all and iwrite_all (none aborts, none waits forever), a failed write must
 * change no byte, and the file must work again once memory is back. An argument names the
 * one site to test. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"

static int rank, np;
static char path[4096];

enum { B = 240 }; /* bytes of data per rank */

static unsigned char pattern(long off) { return (unsigned char)(off * 131 + 7); }

static void prefill(void) {
  if (rank == 0) {
    FILE *fp = fopen(path, "wb");
    for (long i = 0; i < (long)np * B; i++) fputc(pattern(i), fp);
    fclose(fp);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

/* Every byte still the pattern (what), or every rank's byte where its view puts it. */
static int file_is(int written) {
  int ok = 1;
  if (rank == 0) {
    FILE *fp = fopen(path, "rb");
    for (long i = 0; i < (long)np * B; i++) {
      int ch = fgetc(fp);
      ok &= ch == (written ? (int)(unsigned char)(i % np + 1) : pattern(i));
    }
    ok &= fgetc(fp) == EOF;
    fclose(fp);
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return ok;
}

/* Every rank's bytes interleaved one by one (every rank's data in every domain); memory with a
 * hole after every byte (the data is packed). */
static MPI_File open_interleaved(MPI_Datatype *ft, MPI_Datatype *mt) {
  MPI_Info info;
  MPI_Info_create(&info);
  char v[16];
  snprintf(v, sizeof v, "%d", np);
  MPI_Info_set(info, "cb_nodes", v);
  MPI_Info_set(info, "romio_cb_write", "enable");
  MPI_Info_set(info, "romio_cb_read", "enable");
  MPI_File fh;
  int rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR, info, &fh);
  CHECK(rc == MPI_SUCCESS, "open: %s", err_text(rc));
  MPI_Info_free(&info);
  MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN);
  MPI_Type_vector(B, 1, np, MPI_BYTE, ft);
  MPI_Type_commit(ft);
  MPI_Type_vector(B, 1, 2, MPI_BYTE, mt);
  MPI_Type_commit(mt);
  MPI_File_set_view(fh, rank, MPI_BYTE, *ft, "native", MPI_INFO_NULL);
  return fh;
}

static void one_site(const char *site) {
  unsigned char mem[2 * B];
  MPI_Datatype ft, mt;
  char knob[32];
  snprintf(knob, sizeof knob, "%d:%s", np - 1, site);
  prefill();
  setenv("PARIO_TEST_COLL_NOMEM", knob, 1);
  MPI_File fh = open_interleaved(&ft, &mt);
  memset(mem, rank + 1, sizeof mem);
  int rc = MPI_File_write_at_all(fh, 0, mem, 1, mt, MPI_STATUS_IGNORE);
  CHECK_ERR(rc, MPI_ERR_NO_MEM, "MPI_File_write_at_all", path);
  rc = MPI_File_read_at_all(fh, 0, mem, 1, mt, MPI_STATUS_IGNORE);
  CHECK_ERR(rc, MPI_ERR_NO_MEM, "MPI_File_read_at_all", path);
  MPI_Request r;
  rc = MPI_File_iwrite_at_all(fh, 0, mem, 1, mt, &r);
  if (rc == MPI_SUCCESS) { /* MPI_Wait's errors go to MPI_COMM_WORLD's handler */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    rc = MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  }
  CHECK(err_class(rc) == MPI_ERR_NO_MEM, "%s: iwrite_at_all: %s", site, err_text(rc));
  unsetenv("PARIO_TEST_COLL_NOMEM");
  MPI_File_close(&fh);
  CHECK(file_is(0), "%s: a failed collective write changed the file", site);
  /* memory is back: a new handle writes and reads as usual */
  fh = open_interleaved(&ft, &mt);
  memset(mem, rank + 1, sizeof mem);
  rc = MPI_File_write_at_all(fh, 0, mem, 1, mt, MPI_STATUS_IGNORE);
  CHECK(rc == MPI_SUCCESS, "%s: write_at_all afterwards: %s", site, err_text(rc));
  memset(mem, 0, sizeof mem);
  rc = MPI_File_read_at_all(fh, 0, mem, 1, mt, MPI_STATUS_IGNORE);
  int same = rc == MPI_SUCCESS;
  for (int i = 0; i < B && same; i++) same = mem[2 * i] == rank + 1;
  CHECK(same, "%s: read_at_all afterwards: %s", site, err_text(rc));
  MPI_File_close(&fh);
  CHECK(file_is(1), "%s: the write afterwards left wrong bytes", site);
  MPI_Type_free(&ft);
  MPI_Type_free(&mt);
}

int main(int argc, char **argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  t_rank = rank;
  test_path(path, sizeof path, "pario-collective-nomem");
  const char *sites[] = {"context", "views", "stage", "pack"};
  for (int i = 0; i < 4; i++)
    if (argc < 2 || !strcmp(argv[1], sites[i])) one_site(sites[i]); /* argument: one site only */
  if (rank == 0) remove(path);
  return finish("collective_nomem");
}
