/* Parallel HDF5 through MPI-IO: collective hyperslab writes and reads of 2-D datasets.
 *   h5_hyperslab pario|native FILE
 * The file is opened with H5Pset_fapl_mpio on MPI_COMM_WORLD; every transfer uses
 * H5FD_MPIO_COLLECTIVE. Three datasets of NP*ROWS x COLS doubles, element (i, j) = i*COLS + j:
 *   "rows"    contiguous layout, rank r writes rows [r*ROWS, (r+1)*ROWS) (one contiguous piece),
 *   "cols"    contiguous layout, rank r writes columns [r*CW, (r+1)*CW) (one piece per row, the
 *             ranks' pieces interleaved: a noncontiguous collective write),
 *   "chunked" chunked layout (chunks of 16 x 40), written in column blocks like "cols".
 * Then the file is reopened read-only and every rank reads, collectively, the block of rank
 * (r+1)%NP of each dataset and then each whole dataset, and verifies every value.
 * pario check: the MPI_File under the HDF5 file (H5Fget_vfd_handle) reports pario_sharedfp in
 * MPI_File_get_info under pario and does not natively.
 * With "count LIMIT" (and the counting tool below pario preloaded, tests/clients/pmpi/below.c)
 * "cols" is written REPEAT more times and the collectives made per H5Dwrite are printed; under
 * pario more than LIMIT fail the run (issue 34: at most 3). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hdf5.h>
#include <mpi.h>

#define ROWS 48
#define COLS 120

static int rank, np, failures;
#define CHECK(cond, ...)                                  \
  do {                                                    \
    if (!(cond)) {                                        \
      fprintf(stderr, "h5_hyperslab rank %d: ", rank);    \
      fprintf(stderr, __VA_ARGS__);                       \
      fputc('\n', stderr);                                \
      failures++;                                         \
    }                                                     \
  } while (0)
#define H5OK(call) CHECK((call) >= 0, "%s failed", #call)

static double value(hsize_t i, hsize_t j) { return (double)(i * COLS + j); }

/* The block a rank owns in dataset d: rows for "rows", a column block otherwise. */
static void block(int d, int who, hsize_t start[2], hsize_t count[2]) {
  hsize_t nrows = (hsize_t)np * ROWS;
  if (d == 0) {
    start[0] = (hsize_t)who * ROWS, start[1] = 0, count[0] = ROWS, count[1] = COLS;
  } else {
    hsize_t cw = COLS / (hsize_t)np, c0 = (hsize_t)who * cw;
    start[0] = 0, start[1] = c0, count[0] = nrows;
    count[1] = who == np - 1 ? COLS - c0 : cw;
  }
}

static hid_t collective_dxpl(void) {
  hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
  H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE);
  return dxpl;
}

static void transfer(hid_t dset, int d, int who, int write) {
  hsize_t start[2], count[2];
  block(d, who, start, count);
  hid_t fspace = H5Dget_space(dset);
  H5OK(H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, NULL, count, NULL));
  hid_t mspace = H5Screate_simple(2, count, NULL);
  size_t n = (size_t)(count[0] * count[1]);
  double *buf = malloc(n * sizeof *buf);
  hid_t dxpl = collective_dxpl();
  if (write) {
    for (hsize_t i = 0; i < count[0]; i++)
      for (hsize_t j = 0; j < count[1]; j++) buf[i * count[1] + j] = value(start[0] + i, start[1] + j);
    H5OK(H5Dwrite(dset, H5T_NATIVE_DOUBLE, mspace, fspace, dxpl, buf));
  } else {
    for (size_t k = 0; k < n; k++) buf[k] = -1.0;
    H5OK(H5Dread(dset, H5T_NATIVE_DOUBLE, mspace, fspace, dxpl, buf));
    size_t bad = 0;
    for (hsize_t i = 0; i < count[0]; i++)
      for (hsize_t j = 0; j < count[1]; j++) bad += buf[i * count[1] + j] != value(start[0] + i, start[1] + j);
    CHECK(bad == 0, "dataset %d, block of rank %d: %zu of %zu values wrong", d, who, bad, n);
  }
  H5D_mpio_actual_io_mode_t mode = H5D_MPIO_NO_COLLECTIVE;
  H5OK(H5Pget_mpio_actual_io_mode(dxpl, &mode));
  CHECK(mode != H5D_MPIO_NO_COLLECTIVE, "dataset %d: HDF5 did not do collective I/O", d);
  H5Pclose(dxpl);
  H5Sclose(mspace);
  H5Sclose(fspace);
  free(buf);
}

static void read_whole(hid_t dset, int d) {
  hsize_t dims[2] = {(hsize_t)np * ROWS, COLS};
  size_t n = (size_t)(dims[0] * dims[1]);
  double *buf = malloc(n * sizeof *buf);
  for (size_t k = 0; k < n; k++) buf[k] = -1.0;
  hid_t dxpl = collective_dxpl();
  H5OK(H5Dread(dset, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, dxpl, buf));
  size_t bad = 0;
  for (hsize_t i = 0; i < dims[0]; i++)
    for (hsize_t j = 0; j < dims[1]; j++) bad += buf[i * dims[1] + j] != value(i, j);
  CHECK(bad == 0, "dataset %d read whole: %zu of %zu values wrong", d, bad, n);
  H5Pclose(dxpl);
  free(buf);
}

/* 1 when the MPI_File under fid reports pario_sharedfp. */
static int served_by_pario(hid_t fid, hid_t fapl) {
  void *handle = NULL;
  if (H5Fget_vfd_handle(fid, fapl, &handle) < 0 || handle == NULL) {
    CHECK(0, "H5Fget_vfd_handle failed");
    return -1;
  }
  MPI_Info info = MPI_INFO_NULL;
  if (MPI_File_get_info(*(MPI_File *)handle, &info) != MPI_SUCCESS) {
    CHECK(0, "MPI_File_get_info on HDF5's MPI_File failed");
    return -1;
  }
  int flag = 0;
  char val[MPI_MAX_INFO_VAL + 1];
  MPI_Info_get(info, "pario_sharedfp", MPI_MAX_INFO_VAL, val, &flag);
  MPI_Info_free(&info);
  return flag;
}

static const char *const names[3] = {"rows", "cols", "chunked"};

/* Collectives per collective H5Dwrite of "cols", as the tool below pario counts them. */
static double count_writes(hid_t fid) {
  enum { WARM = 2, REPEAT = 8 };
  long (*count)(const char *) = NULL;
  *(void **)&count = dlsym(RTLD_DEFAULT, "pario_below_count");
  if (!count) {
    CHECK(0, "count: the counting tool (below.so) is not preloaded");
    return -1;
  }
  hid_t dset = H5Dopen2(fid, names[1], H5P_DEFAULT);
  long before = 0;
  for (int i = 0; i < WARM + REPEAT; i++) {
    if (i == WARM) before = count("total");
    transfer(dset, 1, rank, 1);
  }
  double per = (double)(count("total") - before) / REPEAT;
  H5Dclose(dset);
  return per;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  if ((argc != 3 && !(argc == 5 && !strcmp(argv[3], "count"))) || (strcmp(argv[1], "pario") && strcmp(argv[1], "native"))) {
    if (rank == 0) fprintf(stderr, "usage: h5_hyperslab pario|native FILE [count LIMIT]\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int expect_pario = strcmp(argv[1], "pario") == 0;
  const char *path = argv[2];

  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  H5OK(H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL));
  hid_t fid = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  CHECK(fid >= 0, "H5Fcreate %s failed", path);
  if (fid < 0) MPI_Abort(MPI_COMM_WORLD, 1);
  int pario = served_by_pario(fid, fapl);
  CHECK(pario == expect_pario, "the file's MPI_File %s pario_sharedfp (expected %s)",
        pario ? "reports" : "does not report", argv[1]);

  hsize_t dims[2] = {(hsize_t)np * ROWS, COLS}, chunk[2] = {16, 40};
  hid_t space = H5Screate_simple(2, dims, NULL);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5OK(H5Pset_chunk(dcpl, 2, chunk));
  hid_t dset[3];
  for (int d = 0; d < 3; d++) {
    dset[d] = H5Dcreate2(fid, names[d], H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, d == 2 ? dcpl : H5P_DEFAULT,
                         H5P_DEFAULT);
    CHECK(dset[d] >= 0, "H5Dcreate2 %s failed", names[d]);
    transfer(dset[d], d, rank, 1);
    H5Dclose(dset[d]);
  }
  H5Pclose(dcpl);
  H5Sclose(space);
  if (argc == 5) {
    double per = count_writes(fid), limit = atof(argv[4]);
    if (rank == 0) printf("h5_hyperslab: %.2f collectives per collective H5Dwrite (below the MPI-IO)\n", per);
    CHECK(!expect_pario || per <= limit, "%.2f collectives per H5Dwrite, limit %.2f", per, limit);
  }
  H5OK(H5Fclose(fid));

  fid = H5Fopen(path, H5F_ACC_RDONLY, fapl);
  CHECK(fid >= 0, "H5Fopen %s failed", path);
  if (fid < 0) MPI_Abort(MPI_COMM_WORLD, 1);
  for (int d = 0; d < 3; d++) {
    dset[d] = H5Dopen2(fid, names[d], H5P_DEFAULT);
    transfer(dset[d], d, (rank + 1) % np, 0);
    read_whole(dset[d], d);
    H5Dclose(dset[d]);
  }
  H5OK(H5Fclose(fid));
  H5Pclose(fapl);

  int fails = 0;
  MPI_Allreduce(&failures, &fails, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    printf("h5_hyperslab: %s, %d ranks, %d x %d doubles in 3 datasets: %s\n", argv[1], np, np * ROWS, COLS,
           fails ? "FAILED" : "ok");
  MPI_Finalize();
  return fails ? 1 : 0;
}
