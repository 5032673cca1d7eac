/* Every error class pario promises, provoked for real: the right class, a message naming
 * the operation and the file, no crash, and a pre-filled file left intact by bad writes. */
#include <errno.h>
#include <sys/stat.h>

#include "harness.h"

static char path[512], dir[600];
static int rank, np;

static void prefill(void) {
  MPI_File fh;
  MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
  if (rank == 0) {
    char b[256];
    for (int i = 0; i < 256; i++) b[i] = (char)i;
    MPI_File_write_at(fh, 0, b, 256, MPI_CHAR, MPI_STATUS_IGNORE);
  }
  MPI_File_close(&fh);
}

static void check_prefill_intact(void) {
  FILE *f = fopen(path, "rb");
  unsigned char b[300];
  size_t n = f ? fread(b, 1, sizeof b, f) : 0;
  if (f) fclose(f);
  int ok = n == 256;
  for (size_t i = 0; ok && i < n; i++) ok = b[i] == (unsigned char)i;
  CHECK(ok, "bad calls left the file intact (%zu bytes)", n);
}

static void open_errors(void) {
  MPI_File fh;
  char missing[700];
  snprintf(missing, sizeof missing, "%s/does-not-exist/f", dir);
  CHECK_ERR(MPI_File_open(MPI_COMM_WORLD, missing, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh), MPI_ERR_NO_SUCH_FILE, "MPI_File_open", missing);
  CHECK(fh == MPI_FILE_NULL, "failed open leaves MPI_FILE_NULL");
  CHECK_ERR(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_EXCL | MPI_MODE_RDWR, MPI_INFO_NULL, &fh), MPI_ERR_FILE_EXISTS, "MPI_File_open", path);
  CHECK_ERR(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY | MPI_MODE_CREATE, MPI_INFO_NULL, &fh), MPI_ERR_AMODE, "MPI_File_open", path);
  CHECK_ERR(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh), MPI_ERR_AMODE, "MPI_File_open", path);
  CHECK_ERR(MPI_File_open(MPI_COMM_WORLD, path, 0, MPI_INFO_NULL, &fh), MPI_ERR_AMODE, "MPI_File_open", path);
  CHECK_ERR(MPI_File_open(MPI_COMM_WORLD, dir, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh), MPI_ERR_BAD_FILE, "MPI_File_open", dir);
  /* Permission checks do not apply to root, but read-only sysfs attributes refuse writers to all. */
  CHECK_ERR(MPI_File_open(MPI_COMM_WORLD, "/sys/devices/system/cpu/online", MPI_MODE_WRONLY, MPI_INFO_NULL, &fh), MPI_ERR_ACCESS, "MPI_File_open", "/sys/devices/system/cpu/online");
  if (np > 1) { /* amode differing between ranks */
    int amode = rank == 0 ? MPI_MODE_RDONLY : MPI_MODE_RDWR;
    CHECK_ERR(MPI_File_open(MPI_COMM_WORLD, path, amode, MPI_INFO_NULL, &fh), MPI_ERR_NOT_SAME, "MPI_File_open", path);
  }
  char missing2[700];
  snprintf(missing2, sizeof missing2, "%s/none", dir);
  CHECK_ERR(MPI_File_delete(missing2, MPI_INFO_NULL), MPI_ERR_NO_SUCH_FILE, "MPI_File_delete", missing2);
}

static void access_errors(void) {
  MPI_File fh;
  MPI_Status st;
  char buf[64] = {0};
  MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
  CHECK_ERR(MPI_File_write_at(fh, 0, buf, 4, MPI_CHAR, &st), MPI_ERR_READ_ONLY, "MPI_File_write_at", path);
  CHECK_ERR(MPI_File_set_size(fh, 0), MPI_ERR_READ_ONLY, "MPI_File_set_size", path);
  MPI_File_close(&fh);
  MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
  CHECK_ERR(MPI_File_read(fh, buf, 4, MPI_CHAR, &st), MPI_ERR_ACCESS, "MPI_File_read", path);
  MPI_File_close(&fh);
  MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
  CHECK_ERR(MPI_File_write_at(fh, -1, buf, 4, MPI_CHAR, &st), MPI_ERR_ARG, "MPI_File_write_at", path);
  CHECK_ERR(MPI_File_read_at(fh, -8, buf, 4, MPI_CHAR, &st), MPI_ERR_ARG, "MPI_File_read_at", path);
  CHECK_ERR(MPI_File_write_at_all(fh, -1, buf, 4, MPI_CHAR, &st), MPI_ERR_ARG, "MPI_File_write_at_all", path);
  CHECK_ERR(MPI_File_write(fh, buf, -3, MPI_CHAR, &st), MPI_ERR_COUNT, "MPI_File_write", path);
  CHECK_ERR(MPI_File_write(fh, NULL, 3, MPI_CHAR, &st), MPI_ERR_BUFFER, "MPI_File_write", path);
  CHECK_ERR(MPI_File_write(fh, buf, 3, MPI_DATATYPE_NULL, &st), MPI_ERR_TYPE, "MPI_File_write", path);
  CHECK_ERR(MPI_File_seek(fh, 0, 12345), MPI_ERR_ARG, "MPI_File_seek", path);
  CHECK_ERR(MPI_File_seek(fh, -1, MPI_SEEK_SET), MPI_ERR_ARG, "MPI_File_seek", path);
  CHECK_ERR(MPI_File_set_size(fh, -5), MPI_ERR_ARG, "MPI_File_set_size", path);
  if (np > 1) CHECK_ERR(MPI_File_set_size(fh, 100 + rank), MPI_ERR_NOT_SAME, "MPI_File_set_size", path);
  MPI_Request req;
  CHECK_ERR(MPI_File_iwrite_shared(fh, buf, -1, MPI_CHAR, &req), MPI_ERR_COUNT, "MPI_File_iwrite_shared", path);
  CHECK(req == MPI_REQUEST_NULL, "refused call leaves MPI_REQUEST_NULL");
  CHECK_ERR(MPI_File_write_shared(fh, buf, 1, MPI_DATATYPE_NULL, &st), MPI_ERR_TYPE, "MPI_File_write_shared", path);
  CHECK_ERR(MPI_File_seek_shared(fh, 0, 777), MPI_ERR_ARG, "MPI_File_seek_shared", path);
  if (np > 1) CHECK_ERR(MPI_File_seek_shared(fh, rank, MPI_SEEK_SET), MPI_ERR_NOT_SAME, "MPI_File_seek_shared", path);
  CHECK_ERR(MPI_File_iwrite_at(fh, -2, buf, 1, MPI_CHAR, &req), MPI_ERR_ARG, "MPI_File_iwrite_at", path);
  CHECK(req == MPI_REQUEST_NULL, "refused nonblocking call leaves MPI_REQUEST_NULL");
  CHECK_ERR(MPI_File_read_all_end(fh, buf, &st), MPI_ERR_OTHER, "MPI_File_read_all_end", path);
  MPI_File_close(&fh);
}

/* A set_view that differs between ranks or fails on one (rc): set_view may fail on every rank
 * with cls, or (its agreement deferred, docs/collective.md) one rank's fails now and every rank's
 * next collective call fails with cls, writing nothing (the file stays intact). */
static void deferred_err(MPI_File fh, int rc, int cls) {
  int failed = rc != MPI_SUCCESS, any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (any == np) {
    CHECK_ERR(rc, cls, "MPI_File_set_view", path);
    return;
  }
  if (failed) CHECK_ERR(rc, cls, "MPI_File_set_view", path);
  char junk[16];
  memset(junk, 0xee, sizeof junk);
  CHECK_ERR(MPI_File_write_at_all(fh, 0, junk, 8, MPI_BYTE, MPI_STATUS_IGNORE), cls, "MPI_File_write_at_all", path);
  MPI_Barrier(MPI_COMM_WORLD);
  check_prefill_intact();
  CHECK_ERR(MPI_File_write_at_all(fh, 0, junk, 0, MPI_BYTE, MPI_STATUS_IGNORE), MPI_SUCCESS, "MPI_File_write_at_all", path);
}

/* Deferred set_view agreement: one rank's bad arguments, and hints passed on one rank only
 * (they reach every rank, rank 0's shared ones winning, before the next collective access). */
static void deferred_view_errors(void) {
  MPI_File fh;
  MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
  MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
  if (np > 1) {
    deferred_err(fh, MPI_File_set_view(fh, rank == 1 ? -4 : 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL), MPI_ERR_ARG);
    deferred_err(fh, MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, rank == 1 ? "external32" : "native", MPI_INFO_NULL),
                 MPI_ERR_NOT_SAME);
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "cb_nodes", "1");
    CHECK_ERR(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", rank == 0 ? info : MPI_INFO_NULL), MPI_SUCCESS,
              "MPI_File_set_view", path);
    MPI_Info_free(&info);
    char b[16];
    CHECK_ERR(MPI_File_read_at_all(fh, rank, b, 1, MPI_BYTE, MPI_STATUS_IGNORE), MPI_SUCCESS, "MPI_File_read_at_all", path);
    CHECK(b[0] == (char)rank, "read_at_all after a set_view with hints on one rank: %d", b[0]);
    MPI_File_get_info(fh, &info);
    char v[MPI_MAX_INFO_VAL + 1] = "";
    int flag = 0, n, lo, hi;
    MPI_Info_get(info, "cb_nodes", MPI_MAX_INFO_VAL, v, &flag);
    MPI_Info_free(&info);
    n = flag ? atoi(v) : -1;
    MPI_Allreduce(&n, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&n, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    CHECK(lo == 1 && hi == 1, "cb_nodes from rank 0's set_view info reaches every rank: %d..%d", lo, hi);
    /* The shared pointer first used since the last collective access, then a deferred
     * set_view: the pointer is 0 in the new view on every rank, and the next collective
     * access succeeds everywhere (it reported MPI_ERR_OTHER before the counter slots). */
    if (rank == 0) MPI_File_read_shared(fh, b, 1, MPI_BYTE, MPI_STATUS_IGNORE);
    CHECK_ERR(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL), MPI_SUCCESS, "MPI_File_set_view", path);
    MPI_Offset sp = -1;
    MPI_File_get_position_shared(fh, &sp);
    CHECK(sp == 0, "a deferred set_view resets the shared pointer: %lld", (long long)sp);
    CHECK_ERR(MPI_File_read_at_all(fh, 0, b, 1, MPI_BYTE, MPI_STATUS_IGNORE), MPI_SUCCESS, "MPI_File_read_at_all", path);
    CHECK_ERR(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL), MPI_SUCCESS, "MPI_File_set_view", path);
    sp = -1;
    MPI_File_get_position_shared(fh, &sp);
    CHECK(sp == 0, "set_view resets the shared pointer: %lld", (long long)sp);
  }
  CHECK_ERR(MPI_File_close(&fh), MPI_SUCCESS, "MPI_File_close", path);
}

static void view_errors(void) {
  MPI_File fh;
  MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
  CHECK_ERR(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "no-such-rep", MPI_INFO_NULL), MPI_ERR_UNSUPPORTED_DATAREP, "MPI_File_set_view", path);
  CHECK_ERR(MPI_File_set_view(fh, -4, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL), MPI_ERR_ARG, "MPI_File_set_view", path);
  /* filetype not made of etypes */
  MPI_Datatype three;
  MPI_Type_contiguous(3, MPI_CHAR, &three);
  MPI_Type_commit(&three);
  CHECK_ERR(MPI_File_set_view(fh, 0, MPI_INT, three, "native", MPI_INFO_NULL), MPI_ERR_TYPE, "MPI_File_set_view", path);
  /* decreasing displacements */
  int bl[2] = {1, 1}, disp[2] = {4, 0};
  MPI_Datatype dec;
  MPI_Type_indexed(2, bl, disp, MPI_INT, &dec);
  MPI_Type_commit(&dec);
  CHECK_ERR(MPI_File_set_view(fh, 0, MPI_INT, dec, "native", MPI_INFO_NULL), MPI_ERR_IO, "MPI_File_set_view", path);
  CHECK_ERR(MPI_File_set_view(fh, 0, MPI_INT, MPI_DATATYPE_NULL, "native", MPI_INFO_NULL), MPI_ERR_TYPE, "MPI_File_set_view", path);
  /* data access size not a multiple of the etype */
  MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL);
  CHECK_ERR(MPI_File_write(fh, "abc", 3, MPI_CHAR, MPI_STATUS_IGNORE), MPI_ERR_TYPE, "MPI_File_write", path);
  if (np > 1) /* etype size differing between ranks: at set_view, or at the next collective call */
    deferred_err(fh, MPI_File_set_view(fh, 0, rank ? MPI_INT : MPI_DOUBLE, rank ? MPI_INT : MPI_DOUBLE, "native",
                                       MPI_INFO_NULL), MPI_ERR_NOT_SAME);
  MPI_Type_free(&three);
  MPI_Type_free(&dec);
  MPI_File_close(&fh);
}

static void handle_errors(void) {
  MPI_File bogus = MPI_FILE_NULL;
  CHECK_ERR(MPI_File_write(bogus, "x", 1, MPI_CHAR, MPI_STATUS_IGNORE), MPI_ERR_FILE, "MPI_File_write", NULL);
  MPI_File fh;
  MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
  MPI_File stale = fh;
  MPI_File_close(&fh);
  CHECK(fh == MPI_FILE_NULL, "close sets MPI_FILE_NULL");
  CHECK_ERR(MPI_File_write(stale, "x", 1, MPI_CHAR, MPI_STATUS_IGNORE), MPI_ERR_FILE, "MPI_File_write", NULL);
  CHECK_ERR(MPI_File_close(&stale), MPI_ERR_FILE, "MPI_File_close", NULL);
  long junk[8] = {0};
  CHECK_ERR(MPI_File_get_size((MPI_File)(void *)junk, NULL), MPI_ERR_FILE, "MPI_File_get_size", NULL);
  CHECK_ERR(MPI_Register_datarep("external32", MPI_CONVERSION_FN_NULL, MPI_CONVERSION_FN_NULL, NULL, NULL),
            MPI_ERR_DUP_DATAREP, "MPI_Register_datarep", NULL);
}

static void system_errors(void) {
  MPI_File fh;
  /* ENOSPC: /dev/full refuses every write. */
  if (MPI_File_open(MPI_COMM_SELF, "/dev/full", MPI_MODE_WRONLY, MPI_INFO_NULL, &fh) == MPI_SUCCESS) {
    CHECK_ERR(MPI_File_write(fh, "abcd", 4, MPI_CHAR, MPI_STATUS_IGNORE), MPI_ERR_NO_SPACE, "MPI_File_write", "/dev/full");
    MPI_File_close(&fh);
  }
  /* EIO: reading an unmapped address through /proc/self/mem. */
  if (MPI_File_open(MPI_COMM_SELF, "/proc/self/mem", MPI_MODE_RDONLY, MPI_INFO_NULL, &fh) == MPI_SUCCESS) {
    char b[8];
    CHECK_ERR(MPI_File_read_at(fh, 0, b, 8, MPI_CHAR, MPI_STATUS_IGNORE), MPI_ERR_IO, "MPI_File_read_at", "/proc/self/mem");
    MPI_File_close(&fh);
  }
}

int main(int argc, char **argv) {
  start(&argc, &argv);
  rank = t_rank;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  test_path(path, sizeof path, "pario-errors");
  snprintf(dir, sizeof dir, "%s.d", path);
  if (rank == 0) mkdir(dir, 0755);
  MPI_Barrier(MPI_COMM_WORLD);
  prefill();
  open_errors();
  access_errors();
  view_errors();
  deferred_view_errors();
  handle_errors();
  system_errors();
  MPI_Barrier(MPI_COMM_WORLD);
  check_prefill_intact();
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    MPI_File_delete(path, MPI_INFO_NULL);
    rmdir(dir);
  }
  return finish("errors");
}
