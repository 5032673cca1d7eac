/* What a user migrating from ROMIO or reading the standard expects, each a defect pario had:
 * uncommitted datatypes fail with MPI_ERR_TYPE; overlapping filetypes are legal on read-only
 * files (only), and refused on writable ones with ROMIO's class MPI_ERR_IO; ROMIO_HINTS (its
 * first value of a key given twice) is honoured when PARIO_HINTS is not set and ROMIO's keys show in
 * get_info; a size hint that would overflow is ignored; an error on a long path keeps its
 * cause within Open MPI's 256-character error strings. Run natively too where the standard
 * (not pario) decides: argv[2] == "native" skips the pario-only checks. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"

static int rank, np, native;
static char path[512];

static const char *info_value(MPI_File fh, const char *key, char *v, int n) {
  MPI_Info used;
  int flag = 0;
  MPI_File_get_info(fh, &used);
  MPI_Info_get(used, key, n - 1, v, &flag);
  MPI_Info_free(&used);
  return flag ? v : "(unset)";
}

static void uncommitted(void) {
  MPI_File fh;
  MPI_Datatype vec;
  int buf[8] = {0};
  MPI_Type_vector(2, 1, 2, MPI_INT, &vec); /* not committed */
  MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
  MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN);
  int rc = MPI_File_write_at(fh, 0, buf, 1, vec, MPI_STATUS_IGNORE);
  CHECK(err_class(rc) == MPI_ERR_TYPE, "write with an uncommitted memory type: %s", err_text(rc));
  rc = MPI_File_set_view(fh, 0, MPI_INT, vec, "native", MPI_INFO_NULL);
  CHECK(err_class(rc) == MPI_ERR_TYPE, "set_view with an uncommitted filetype: %s", err_text(rc));
  rc = MPI_File_set_view(fh, 0, vec, vec, "native", MPI_INFO_NULL);
  CHECK(err_class(rc) == MPI_ERR_TYPE, "set_view with an uncommitted etype: %s", err_text(rc));
  MPI_Type_commit(&vec);
  rc = MPI_File_write_at(fh, 0, buf, 1, vec, MPI_STATUS_IGNORE);
  CHECK(rc == MPI_SUCCESS, "write once committed: %s", err_text(rc));
  rc = MPI_File_set_view(fh, 0, MPI_INT, vec, "native", MPI_INFO_NULL);
  CHECK(rc == MPI_SUCCESS, "set_view once committed: %s", err_text(rc));
  MPI_Type_free(&vec);
  MPI_File_close(&fh);
}

/* Filetype: 8 bytes at 0 and 8 bytes at 4 (overlapping), extent 16. */
static void overlapping_read_only(void) {
  MPI_File fh;
  unsigned char all[64], got[32];
  for (int i = 0; i < 64; i++) all[i] = (unsigned char)(i + 1);
  if (rank == 0) {
    MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
    MPI_File_write_at(fh, 0, all, 64, MPI_BYTE, MPI_STATUS_IGNORE);
    MPI_File_close(&fh);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  int bl[2] = {8, 8}, dp[2] = {0, 4};
  MPI_Datatype ov, ft;
  MPI_Type_indexed(2, bl, dp, MPI_BYTE, &ov);
  MPI_Type_create_resized(ov, 0, 16, &ft);
  MPI_Type_commit(&ft);
  MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
  int rc = MPI_File_set_view(fh, 0, MPI_BYTE, ft, "native", MPI_INFO_NULL);
  CHECK(rc == MPI_SUCCESS, "overlapping filetype on a read-only file: %s", err_text(rc));
  if (rc == MPI_SUCCESS) {
    for (int coll = 0; coll < 2; coll++) {
      memset(got, 0, sizeof got);
      rc = coll ? MPI_File_read_at_all(fh, 0, got, 32, MPI_BYTE, MPI_STATUS_IGNORE)
                : MPI_File_read_at(fh, 0, got, 32, MPI_BYTE, MPI_STATUS_IGNORE);
      CHECK(rc == MPI_SUCCESS, "read through the overlapping view: %s", err_text(rc));
      int bad = 0; /* tile t holds bytes 16t..16t+7 then 16t+4..16t+11 */
      for (int i = 0; i < 32; i++) {
        int t = i / 16, k = i % 16, off = 16 * t + (k < 8 ? k : k - 4);
        bad += got[i] != all[off];
      }
      CHECK(!bad, "%s read through the overlapping view: %d wrong bytes", coll ? "collective" : "independent", bad);
    }
  }
  MPI_File_close(&fh);
  MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
  rc = MPI_File_set_view(fh, 0, MPI_BYTE, ft, "native", MPI_INFO_NULL);
  CHECK(native ? rc != MPI_SUCCESS : err_class(rc) == MPI_ERR_IO, /* as ROMIO (OMPIO: MPI_ERR_TYPE) */
        "overlapping filetype on a writable file: %s", err_text(rc));
  MPI_File_close(&fh);
  MPI_Type_free(&ft);
  MPI_Type_free(&ov);
}

/* A filetype whose data reach past lb + extent (its copies would overlap), as HDF5 builds
 * for chunked datasets on Open MPI: legal to set on a writable file and to access within
 * its first copy; both native MPI-IOs accept it. */
static void data_past_extent(void) {
  MPI_File fh;
  MPI_Datatype c, ft;
  unsigned char w[16], r[16];
  for (int i = 0; i < 16; i++) w[i] = (unsigned char)(100 + rank * 16 + i);
  MPI_Type_contiguous(16, MPI_BYTE, &c);
  MPI_Type_create_resized(c, 0, 8, &ft);
  MPI_Type_commit(&ft);
  MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
  int rc = MPI_File_set_view(fh, (MPI_Offset)rank * 16, MPI_BYTE, ft, "native", MPI_INFO_NULL);
  CHECK(rc == MPI_SUCCESS, "set_view of a filetype reaching past its extent: %s", err_text(rc));
  rc = MPI_File_write_at_all(fh, 0, w, 16, MPI_BYTE, MPI_STATUS_IGNORE);
  CHECK(rc == MPI_SUCCESS, "write_at_all within the first copy: %s", err_text(rc));
  MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
  MPI_File_read_at(fh, (MPI_Offset)rank * 16, r, 16, MPI_BYTE, MPI_STATUS_IGNORE);
  CHECK(!memcmp(w, r, 16), "data written through the filetype not where it belongs");
  MPI_File_close(&fh);
  MPI_Type_free(&ft);
  MPI_Type_free(&c);
}

/* ROMIO_HINTS stands in for PARIO_HINTS; ROMIO keys are reported; a key given twice keeps its
 * first value; an overflowing size is ignored. */
static void romio_hints(void) {
  char hp[600], v[64];
  MPI_File fh;
  MPI_Info info;
  snprintf(hp, sizeof hp, "%s.hints", path);
  if (rank == 0) {
    FILE *h = fopen(hp, "w");
    /* a key given twice keeps its first value (ROMIO's syshints test) */
    fprintf(h, "# a ROMIO hints file\ncb_buffer_size 1234567\nind_wr_buffer_size 49\nind_wr_buffer_size 60\n");
    fclose(h);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  unsetenv("PARIO_HINTS");
  setenv("ROMIO_HINTS", hp, 1);
  MPI_Info_create(&info);
  MPI_Info_set(info, "romio_no_indep_rw", "true");
  MPI_Info_set(info, "ind_rd_buffer_size", "99999999999999999g");
  MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
  CHECK(!strcmp(info_value(fh, "cb_buffer_size", v, sizeof v), "1234567"), "cb_buffer_size from ROMIO_HINTS: %s", v);
  CHECK(!strcmp(info_value(fh, "romio_no_indep_rw", v, sizeof v), "true"), "romio_no_indep_rw: %s", v);
  CHECK(!strcmp(info_value(fh, "ind_wr_buffer_size", v, sizeof v), "49"), "a key given twice in ROMIO_HINTS: %s", v);
  CHECK(strcmp(info_value(fh, "cb_config_list", v, sizeof v), "(unset)"), "cb_config_list not reported");
  CHECK(!strcmp(info_value(fh, "ind_rd_buffer_size", v, sizeof v), "4194304"),
        "an overflowing ind_rd_buffer_size was not ignored: %s", v);
  MPI_File_close(&fh);
  MPI_Info_free(&info);
  unsetenv("ROMIO_HINTS");
  if (rank == 0) unlink(hp);
}

/* The cause of an error survives a path longer than the error string. */
static void long_path_error(void) {
  char lp[700], text[MPI_MAX_ERROR_STRING];
  MPI_File fh;
  int n = snprintf(lp, sizeof lp, "%s.missing-directory/", path);
  while (n < 600) n += snprintf(lp + n, sizeof lp - (size_t)n, "deeper-and-deeper/");
  snprintf(lp + n, sizeof lp - (size_t)n, "name-of-the-file");
  int rc = MPI_File_open(MPI_COMM_WORLD, lp, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
  int len = 0;
  MPI_Error_string(rc, text, &len);
  CHECK(err_class(rc) == MPI_ERR_NO_SUCH_FILE, "open in a missing directory: %s", text);
  CHECK(len < 256, "error string of %d characters", len);
  CHECK(strstr(text, "MPI_File_open") && strstr(text, "No such file"), "cause missing: %s", text);
  CHECK(strstr(text, "name-of-the-file") != NULL, "file name missing: %s", text);
}

int main(int argc, char **argv) {
  start(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  native = argc > 1 && !strcmp(argv[1], "native");
  test_path(path, sizeof path, "conformance");
  char lib[MPI_MAX_LIBRARY_VERSION_STRING];
  int len;
  MPI_Get_library_version(lib, &len);
  uncommitted();
  /* OMPIO refuses overlapping filetypes on read-only files too (ROMIO follows the standard) */
  if (!native || !strstr(lib, "Open MPI")) overlapping_read_only();
  data_past_extent();
  if (!native) {
    romio_hints();
    long_path_error();
  }
  if (rank == 0) unlink(path);
  return finish("conformance");
}
