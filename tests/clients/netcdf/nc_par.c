/* Parallel netCDF-4 (HDF5 underneath, MPI-IO below that).
 *   nc_par FILE
 * nc_create_par on MPI_COMM_WORLD, two variables with collective access (nc_var_par_access
 * NC_COLLECTIVE):
 *   "field"  double [NP*ROWS][COLS], rank r writes rows [r*ROWS, (r+1)*ROWS),
 *   "series" int [time (unlimited)][NP*LEN], STEPS records; in each, rank r writes its LEN ints.
 * Then nc_open_par read-only: every rank reads, collectively, rank (r+1)%NP's rows of "field",
 * then all of "field" and all of "series", and verifies every value. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>
#include <netcdf.h>
#include <netcdf_par.h>

#define ROWS 40
#define COLS 100
#define LEN 250
#define STEPS 3

static int rank, np, failures;
#define CHECK(cond, ...)                              \
  do {                                                \
    if (!(cond)) {                                    \
      fprintf(stderr, "nc_par rank %d: ", rank);      \
      fprintf(stderr, __VA_ARGS__);                   \
      fputc('\n', stderr);                            \
      failures++;                                     \
    }                                                 \
  } while (0)
#define NC(call)                                                           \
  do {                                                                     \
    int nc_rc_ = (call);                                                   \
    CHECK(nc_rc_ == NC_NOERR, "%s: %s", #call, nc_strerror(nc_rc_));       \
    if (nc_rc_ != NC_NOERR) MPI_Abort(MPI_COMM_WORLD, 1);                  \
  } while (0)

static double fval(size_t i, size_t j) { return (double)(i * COLS + j) * 0.25; }
static int sval(size_t t, size_t k) { return (int)(t * 1000003 + k); }

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  if (argc != 2) {
    if (rank == 0) fprintf(stderr, "usage: nc_par FILE\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const char *path = argv[1];
  size_t nrows = (size_t)np * ROWS, nser = (size_t)np * LEN;

  int ncid, dimy, dimx, dimt, dims, vfield, vseries;
  NC(nc_create_par(path, NC_NETCDF4 | NC_CLOBBER, MPI_COMM_WORLD, MPI_INFO_NULL, &ncid));
  NC(nc_def_dim(ncid, "y", nrows, &dimy));
  NC(nc_def_dim(ncid, "x", COLS, &dimx));
  NC(nc_def_dim(ncid, "time", NC_UNLIMITED, &dimt));
  NC(nc_def_dim(ncid, "s", nser, &dims));
  int fd[2] = {dimy, dimx}, sd[2] = {dimt, dims};
  NC(nc_def_var(ncid, "field", NC_DOUBLE, 2, fd, &vfield));
  NC(nc_def_var(ncid, "series", NC_INT, 2, sd, &vseries));
  NC(nc_put_att_text(ncid, NC_GLOBAL, "writer", 7, "pario-c"));
  NC(nc_enddef(ncid));
  NC(nc_var_par_access(ncid, vfield, NC_COLLECTIVE));
  NC(nc_var_par_access(ncid, vseries, NC_COLLECTIVE));

  double *f = malloc((size_t)ROWS * COLS * sizeof *f);
  for (size_t i = 0; i < ROWS; i++)
    for (size_t j = 0; j < COLS; j++) f[i * COLS + j] = fval((size_t)rank * ROWS + i, j);
  size_t start[2] = {(size_t)rank * ROWS, 0}, count[2] = {ROWS, COLS};
  NC(nc_put_vara_double(ncid, vfield, start, count, f));
  int *s = malloc(LEN * sizeof *s);
  for (size_t t = 0; t < STEPS; t++) {
    for (size_t k = 0; k < LEN; k++) s[k] = sval(t, (size_t)rank * LEN + k);
    size_t ss[2] = {t, (size_t)rank * LEN}, sc[2] = {1, LEN};
    NC(nc_put_vara_int(ncid, vseries, ss, sc, s));
  }
  NC(nc_close(ncid));

  NC(nc_open_par(path, NC_NOWRITE, MPI_COMM_WORLD, MPI_INFO_NULL, &ncid));
  NC(nc_inq_varid(ncid, "field", &vfield));
  NC(nc_inq_varid(ncid, "series", &vseries));
  NC(nc_var_par_access(ncid, vfield, NC_COLLECTIVE));
  NC(nc_var_par_access(ncid, vseries, NC_COLLECTIVE));
  size_t nt = 0;
  NC(nc_inq_dimlen(ncid, dimt, &nt));
  CHECK(nt == STEPS, "time has %zu records, expected %d", nt, STEPS);

  int other = (rank + 1) % np;
  size_t ostart[2] = {(size_t)other * ROWS, 0};
  for (size_t k = 0; k < (size_t)ROWS * COLS; k++) f[k] = -1;
  NC(nc_get_vara_double(ncid, vfield, ostart, count, f));
  size_t bad = 0;
  for (size_t i = 0; i < ROWS; i++)
    for (size_t j = 0; j < COLS; j++) bad += f[i * COLS + j] != fval((size_t)other * ROWS + i, j);
  CHECK(bad == 0, "field rows of rank %d: %zu values wrong", other, bad);

  double *fa = malloc(nrows * COLS * sizeof *fa);
  size_t zero[2] = {0, 0}, fall[2] = {nrows, COLS};
  NC(nc_get_vara_double(ncid, vfield, zero, fall, fa));
  bad = 0;
  for (size_t i = 0; i < nrows; i++)
    for (size_t j = 0; j < COLS; j++) bad += fa[i * COLS + j] != fval(i, j);
  CHECK(bad == 0, "field whole: %zu values wrong", bad);

  int *sa = malloc(STEPS * nser * sizeof *sa);
  size_t sall[2] = {STEPS, nser};
  NC(nc_get_vara_int(ncid, vseries, zero, sall, sa));
  bad = 0;
  for (size_t t = 0; t < STEPS; t++)
    for (size_t k = 0; k < nser; k++) bad += sa[t * nser + k] != sval(t, k);
  CHECK(bad == 0, "series whole: %zu values wrong", bad);
  char att[16] = "";
  NC(nc_get_att_text(ncid, NC_GLOBAL, "writer", att));
  CHECK(strncmp(att, "pario-c", 7) == 0, "attribute writer is '%.7s'", att);
  NC(nc_close(ncid));

  int fails = 0;
  MPI_Allreduce(&failures, &fails, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    printf("nc_par: %d ranks, field %zu x %d, series %d x %zu: %s\n", np, nrows, COLS, STEPS, nser,
           fails ? "FAILED" : "ok");
  free(f);
  free(fa);
  free(s);
  free(sa);
  MPI_Finalize();
  return fails ? 1 : 0;
}
