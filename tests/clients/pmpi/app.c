/* A program with a known list of MPI-IO calls, run under the PMPI tool (tool.c):
 *   pmpi_app pario|native FILE
 * Every rank makes the same calls on FILE (a strided view, collective, independent and
 * nonblocking writes and reads) and checks that
 *  - the data in the file is right (element i of the file holds i),
 *  - the tool counted exactly the calls made here, no more (pario's own MPI-IO calls use PMPI_
 *    names and so must not show) and no less,
 *  - MPI_File_open resolves to the tool, and the tool's PMPI_File_open to libpario (pario) or to
 *    the MPI library (native); the file's info reports pario_sharedfp only under pario. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#define B 3          /* ints per block of the strided view */
#define Q 3000       /* ints per quarter of a rank's part */
#define N (4 * Q)    /* ints per rank */

static int failures;
#define CHECK(cond, ...)                                  \
  do {                                                    \
    if (!(cond)) {                                        \
      fprintf(stderr, "pmpi_app rank %d: ", rank);        \
      fprintf(stderr, __VA_ARGS__);                       \
      fputc('\n', stderr);                                \
      failures++;                                         \
    }                                                     \
  } while (0)
#define MPI_OK(call) CHECK((call) == MPI_SUCCESS, "%s failed", #call)

static const char *base_name(const char *p) {
  const char *s = strrchr(p, '/');
  return s ? s + 1 : p;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, np;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  if (argc != 3 || (strcmp(argv[1], "pario") && strcmp(argv[1], "native"))) {
    if (rank == 0) fprintf(stderr, "usage: pmpi_app pario|native FILE\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int expect_pario = strcmp(argv[1], "pario") == 0;
  const char *path = argv[2];

  int (*count)(const char *) = (int (*)(const char *))dlsym(RTLD_DEFAULT, "pario_clients_tool_count");
  const char *(*tname)(int) = (const char *(*)(int))dlsym(RTLD_DEFAULT, "pario_clients_tool_name");
  const char *(*pobj)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "pario_clients_tool_pmpi_object");
  if (!count || !tname || !pobj) {
    fprintf(stderr, "pmpi_app: the PMPI tool is not loaded (LD_PRELOAD=tool.so ...)\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  Dl_info where;
  void *open_sym = dlsym(RTLD_DEFAULT, "MPI_File_open");
  CHECK(open_sym && dladdr(open_sym, &where) && strstr(base_name(where.dli_fname), "tool"),
        "MPI_File_open does not resolve to the tool but to %s",
        open_sym && where.dli_fname ? where.dli_fname : "(nothing)");
  const char *below = pobj();
  int below_is_pario = strncmp(base_name(below), "libpario", 8) == 0;
  CHECK(below_is_pario == expect_pario, "the tool's PMPI_File_open is served by %s, expected %s", below,
        expect_pario ? "libpario" : "the MPI library");

  /* Rank r owns blocks r, r+np, r+2np, ... of B ints; view element k is file int
   * ((k / B) * np + rank) * B + k % B, and that int holds its own index. */
  int *w = malloc(N * sizeof *w), *r = malloc(N * sizeof *r);
  int total = N * np;
  int *all = malloc((size_t)total * sizeof *all);
  for (int k = 0; k < N; k++) w[k] = ((k / B) * np + rank) * B + k % B;
  MPI_Datatype vec, ftype;
  MPI_Type_vector(1, B, B * np, MPI_INT, &vec);
  MPI_Type_create_resized(vec, 0, (MPI_Aint)B * np * (MPI_Aint)sizeof(int), &ftype);
  MPI_Type_commit(&ftype);

  MPI_File fh;
  MPI_Status st;
  MPI_Request req;
  MPI_OK(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
  MPI_OK(MPI_File_set_view(fh, (MPI_Offset)rank * B * (MPI_Offset)sizeof(int), MPI_INT, ftype, "native",
                           MPI_INFO_NULL));
  MPI_OK(MPI_File_write_all(fh, w, Q, MPI_INT, &st));                      /* [0, Q) */
  MPI_OK(MPI_File_write_at(fh, Q, w + Q, 1000, MPI_INT, &st));             /* [Q, 2Q) in 3 */
  MPI_OK(MPI_File_write_at(fh, Q + 1000, w + Q + 1000, 1000, MPI_INT, &st));
  MPI_OK(MPI_File_write_at(fh, Q + 2000, w + Q + 2000, Q - 2000, MPI_INT, &st));
  MPI_OK(MPI_File_iwrite_at(fh, 2 * Q, w + 2 * Q, Q, MPI_INT, &req));      /* [2Q, 3Q) */
  MPI_OK(MPI_Wait(&req, &st));
  MPI_OK(MPI_File_write_at_all(fh, 3 * Q, w + 3 * Q, Q, MPI_INT, &st));    /* [3Q, N) */
  MPI_OK(MPI_File_sync(fh));
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_OK(MPI_File_sync(fh));
  MPI_Offset size = -1;
  MPI_OK(MPI_File_get_size(fh, &size));
  CHECK(size == (MPI_Offset)total * (MPI_Offset)sizeof(int), "file size %lld, expected %lld", (long long)size,
        (long long)total * (long long)sizeof(int));
  MPI_Info info = MPI_INFO_NULL;
  MPI_OK(MPI_File_get_info(fh, &info));
  int has = 0;
  char val[MPI_MAX_INFO_VAL + 1] = "";
  if (info != MPI_INFO_NULL) {
    MPI_Info_get(info, "pario_sharedfp", MPI_MAX_INFO_VAL, val, &has);
    MPI_Info_free(&info);
  }
  CHECK(has == expect_pario, "MPI_File_get_info %s pario_sharedfp%s%s", has ? "reports" : "does not report",
        has ? " = " : "", val);

  memset(r, 0xff, N * sizeof *r);
  MPI_OK(MPI_File_read_at_all(fh, 0, r, N, MPI_INT, &st));
  int bad = 0;
  for (int k = 0; k < N; k++) bad += r[k] != w[k];
  CHECK(bad == 0, "read_at_all through the view: %d wrong ints", bad);
  memset(r, 0xff, N * sizeof *r);
  MPI_OK(MPI_File_iread_at(fh, 0, r, Q, MPI_INT, &req));
  MPI_OK(MPI_Wait(&req, &st));
  bad = 0;
  for (int k = 0; k < Q; k++) bad += r[k] != w[k];
  CHECK(bad == 0, "iread_at through the view: %d wrong ints", bad);

  MPI_OK(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
  MPI_OK(MPI_File_seek(fh, 0, MPI_SEEK_SET));
  memset(all, 0xff, (size_t)total * sizeof *all);
  MPI_OK(MPI_File_read(fh, all, total, MPI_INT, &st));
  bad = 0;
  for (int i = 0; i < total; i++) bad += all[i] != i;
  CHECK(bad == 0, "whole file: %d of %d ints wrong", bad, total);
  MPI_OK(MPI_File_close(&fh));

  /* The calls above, each once per rank unless listed; every other wrapped function 0. */
  static const struct { const char *name; int n; } expected[] = {
    {"MPI_File_open", 1}, {"MPI_File_set_view", 2}, {"MPI_File_write_all", 1},
    {"MPI_File_write_at", 3}, {"MPI_File_iwrite_at", 1}, {"MPI_File_write_at_all", 1},
    {"MPI_File_sync", 2}, {"MPI_File_get_size", 1}, {"MPI_File_get_info", 1},
    {"MPI_File_read_at_all", 1}, {"MPI_File_iread_at", 1}, {"MPI_File_seek", 1},
    {"MPI_File_read", 1}, {"MPI_File_close", 1}};
  int ncalls = 0;
  for (int i = 0; tname(i) != NULL; i++) {
    const char *name = tname(i);
    int want = 0;
    for (size_t e = 0; e < sizeof expected / sizeof expected[0]; e++)
      if (strcmp(expected[e].name, name) == 0) want = expected[e].n;
    int got = count(name);
    CHECK(got == want, "the tool counted %d calls of %s, the program made %d", got, name, want);
    ncalls += got;
  }

  int fails = 0;
  MPI_Allreduce(&failures, &fails, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    printf("pmpi_app: %s, %d ranks: the tool saw %d MPI-IO calls per rank, forwarded to %s; %s\n",
           argv[1], np, ncalls, base_name(below), fails ? "FAILED" : "ok");
  MPI_Type_free(&ftype);
  MPI_Type_free(&vec);
  free(w);
  free(r);
  free(all);
  MPI_Finalize();
  return fails ? 1 : 0;
}
