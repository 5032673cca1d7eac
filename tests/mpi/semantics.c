/* Semantics of the core MPI-IO calls at any rank count: access modes, collective create with
 * EXCL, APPEND, DELETE_ON_CLOSE, SEQUENTIAL, file pointers in etypes relative to the view,
 * short reads at EOF with the right counts, seek/byte offsets, sizes, atomicity, hints,
 * get_view/get_group/get_amode, errhandlers and Fortran handles. Bytes are read back. */
#include <sys/stat.h>

#include "harness.h"

static int rank, np;
static char path[512];

static MPI_File open_rw(int amode) {
  MPI_File fh = MPI_FILE_NULL;
  int rc = MPI_File_open(MPI_COMM_WORLD, path, amode, MPI_INFO_NULL, &fh);
  CHECK(rc == MPI_SUCCESS, "open amode %#x: %s", amode, err_text(rc));
  return fh;
}

static void test_excl_create(void) {
  MPI_File fh;
  MPI_File_delete(path, MPI_INFO_NULL);
  MPI_Barrier(MPI_COMM_WORLD);
  /* Collective create with EXCL succeeds on every rank: the file is created once. */
  int rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_EXCL | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
  CHECK(rc == MPI_SUCCESS, "EXCL create: %s", err_text(rc));
  if (rc == MPI_SUCCESS) MPI_File_close(&fh);
  rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_EXCL | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
  CHECK_ERR(rc, MPI_ERR_FILE_EXISTS, "MPI_File_open", path);
}

static void test_pointers_and_views(void) {
  MPI_File fh = open_rw(MPI_MODE_RDWR);
  MPI_Status st;
  int count;
  /* Each rank owns every np-th pair of ints: a vector filetype, displaced by rank. */
  MPI_Datatype ft;
  MPI_Type_vector(1, 2, 2 * np, MPI_INT, &ft);
  MPI_Datatype ftr;
  MPI_Type_create_resized(ft, 0, (MPI_Aint)(2 * np * sizeof(int)), &ftr);
  MPI_Type_commit(&ftr);
  MPI_File_set_view(fh, 8 + rank * 2 * (MPI_Offset)sizeof(int), MPI_INT, ftr, "native", MPI_INFO_NULL);
  int buf[10];
  for (int i = 0; i < 10; i++) buf[i] = rank * 1000 + i;
  CHECK(MPI_File_write(fh, buf, 6, MPI_INT, &st) == MPI_SUCCESS, "write");
  MPI_Get_count(&st, MPI_INT, &count);
  CHECK(count == 6, "write count %d", count);
  MPI_Offset pos, byte;
  MPI_File_get_position(fh, &pos);
  CHECK(pos == 6, "position in etypes after write: %lld", (long long)pos);
  MPI_File_get_byte_offset(fh, pos, &byte);
  CHECK(byte == 8 + (MPI_Offset)(3 * 2 * np + 2 * rank) * 4, "byte offset %lld", (long long)byte);
  MPI_File_write(fh, buf + 6, 4, MPI_INT, &st);
  MPI_File_sync(fh);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_File_sync(fh);
  /* set_view resets the individual pointer to 0 */
  MPI_File_set_view(fh, 8 + rank * 2 * (MPI_Offset)sizeof(int), MPI_INT, ftr, "native", MPI_INFO_NULL);
  MPI_File_get_position(fh, &pos);
  CHECK(pos == 0, "set_view resets the pointer");
  int rb[12];
  memset(rb, 0xff, sizeof rb);
  MPI_File_read(fh, rb, 12, MPI_INT, &st);
  MPI_Get_count(&st, MPI_INT, &count);
  CHECK(count == 10, "read at EOF is short: %d", count);
  CHECK(memcmp(rb, buf, sizeof(int) * 10) == 0, "data read back through the view");
  /* Seek relative to the end: the view's last etype. */
  MPI_File_seek(fh, -1, MPI_SEEK_END);
  MPI_File_get_position(fh, &pos);
  MPI_Offset size;
  MPI_File_get_size(fh, &size);
  CHECK(size == 8 + (MPI_Offset)(5 * 2 * np) * 4, "file size %lld", (long long)size);
  int last;
  MPI_File_read(fh, &last, 1, MPI_INT, &st);
  MPI_Get_count(&st, MPI_INT, &count);
  /* Only the last rank's data ends at EOF; the others' views end earlier in the file. */
  if (rank == np - 1) CHECK(count == 1 && last == buf[9], "seek end -1 reads the last etype (got %d, %d)", count, last);
  MPI_File_seek(fh, 3, MPI_SEEK_SET);
  MPI_File_seek(fh, 2, MPI_SEEK_CUR);
  MPI_File_get_position(fh, &pos);
  CHECK(pos == 5, "seek set+cur");
  /* explicit offsets are in etypes of the view and leave the pointer alone */
  int one;
  MPI_File_read_at(fh, 7, &one, 1, MPI_INT, &st);
  CHECK(one == buf[7], "read_at through view: %d", one);
  MPI_File_get_position(fh, &pos);
  CHECK(pos == 5, "read_at does not move the pointer");
  /* get_view returns the view; derived types come back as new types */
  MPI_Offset disp;
  MPI_Datatype et, ftype;
  char rep[MPI_MAX_DATAREP_STRING];
  MPI_File_get_view(fh, &disp, &et, &ftype, rep);
  CHECK(disp == 8 + rank * 8 && et == MPI_INT && !strcmp(rep, "native"), "get_view");
  MPI_Aint lb, ext;
  MPI_Type_get_extent(ftype, &lb, &ext);
  CHECK(ext == (MPI_Aint)(2 * np * sizeof(int)), "get_view filetype extent");
  MPI_Type_free(&ftype);
  MPI_Type_free(&ftr);
  MPI_Type_free(&ft);
  MPI_File_close(&fh);
}

static void test_partial_elements(void) {
  /* A read that ends inside a derived type: Get_count undefined, Get_elements exact. */
  MPI_File fh = open_rw(MPI_MODE_RDWR);
  MPI_File_set_size(fh, 0);
  if (rank == 0) {
    double d[3] = {1, 2, 3};
    MPI_File_write_at(fh, 0, d, 3, MPI_DOUBLE, MPI_STATUS_IGNORE);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Datatype pair;
  MPI_Type_contiguous(2, MPI_DOUBLE, &pair);
  MPI_Type_commit(&pair);
  double in[4];
  MPI_Status st;
  int count, elems;
  MPI_File_read_at(fh, 0, in, 2, pair, &st);
  MPI_Get_count(&st, pair, &count);
  MPI_Get_elements(&st, pair, &elems);
  CHECK(count == MPI_UNDEFINED && elems == 3, "partial read: count %d elements %d", count, elems);
  MPI_Count ex;
  MPI_Get_elements_x(&st, MPI_BYTE, &ex);
  CHECK(ex == 24, "elements_x in bytes %lld", (long long)ex);
  MPI_File_read_at(fh, 100, in, 2, pair, &st);
  MPI_Get_count(&st, pair, &count);
  CHECK(count == 0, "read past EOF returns 0 elements, no error");
  MPI_Type_free(&pair);
  MPI_File_close(&fh);
}

static void test_append_and_delete_on_close(void) {
  MPI_File fh = open_rw(MPI_MODE_RDWR);
  MPI_File_set_size(fh, 100);
  MPI_File_close(&fh);
  fh = open_rw(MPI_MODE_RDWR | MPI_MODE_APPEND);
  MPI_Offset pos;
  MPI_File_get_position(fh, &pos);
  CHECK(pos == 100, "APPEND starts at EOF: %lld", (long long)pos);
  MPI_File_close(&fh);
  char tmp[600];
  snprintf(tmp, sizeof tmp, "%s.doc", path);
  int rc = MPI_File_open(MPI_COMM_WORLD, tmp, MPI_MODE_CREATE | MPI_MODE_WRONLY | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &fh);
  CHECK(rc == MPI_SUCCESS, "open delete-on-close");
  MPI_File_write_at(fh, rank, "x", 1, MPI_CHAR, MPI_STATUS_IGNORE);
  MPI_File_close(&fh);
  struct stat sb;
  CHECK(stat(test_local(tmp), &sb) != 0, "DELETE_ON_CLOSE removed the file");
}

static void test_sequential(void) {
  MPI_File fh;
  int rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_WRONLY | MPI_MODE_SEQUENTIAL, MPI_INFO_NULL, &fh);
  CHECK(rc == MPI_SUCCESS, "open sequential");
  rc = MPI_File_write_at(fh, 0, "x", 1, MPI_CHAR, MPI_STATUS_IGNORE);
  CHECK_ERR(rc, MPI_ERR_UNSUPPORTED_OPERATION, "MPI_File_write_at", path);
  rc = MPI_File_seek(fh, 0, MPI_SEEK_SET);
  CHECK_ERR(rc, MPI_ERR_UNSUPPORTED_OPERATION, "MPI_File_seek", path);
  MPI_File_close(&fh);
  rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_SEQUENTIAL, MPI_INFO_NULL, &fh);
  CHECK_ERR(rc, MPI_ERR_AMODE, "MPI_File_open", path);
}

static void test_sizes(void) {
  MPI_File fh = open_rw(MPI_MODE_RDWR);
  MPI_Offset size;
  CHECK(MPI_File_set_size(fh, 12345) == MPI_SUCCESS, "set_size");
  MPI_File_get_size(fh, &size);
  CHECK(size == 12345, "size after set_size %lld", (long long)size);
  CHECK(MPI_File_preallocate(fh, 100) == MPI_SUCCESS, "preallocate smaller");
  MPI_File_get_size(fh, &size);
  CHECK(size == 12345, "preallocate never shrinks");
  CHECK(MPI_File_preallocate(fh, 20000) == MPI_SUCCESS, "preallocate larger");
  MPI_File_get_size(fh, &size);
  CHECK(size == 20000, "preallocate grows to %lld", (long long)size);
  char c = 1;
  MPI_File_read_at(fh, 19999, &c, 1, MPI_CHAR, MPI_STATUS_IGNORE);
  CHECK(c == 0, "preallocated bytes read as zero");
  MPI_File_set_size(fh, 10);
  MPI_File_get_size(fh, &size);
  CHECK(size == 10, "set_size shrinks");
  MPI_File_close(&fh);
}

static void test_atomic(void) {
  /* Every rank writes a full block of its own byte over the same range, atomically: the
   * result is one rank's block, never a mix. */
  MPI_File fh = open_rw(MPI_MODE_RDWR);
  int flag;
  CHECK(MPI_File_set_atomicity(fh, 1) == MPI_SUCCESS, "set_atomicity");
  MPI_File_get_atomicity(fh, &flag);
  CHECK(flag == 1, "get_atomicity");
  enum { N = 1 << 20 };
  char *b = malloc(N);
  for (int it = 0; it < 5; it++) {
    memset(b, 'a' + rank, N);
    MPI_File_write_at(fh, 0, b, N, MPI_CHAR, MPI_STATUS_IGNORE);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_File_read_at(fh, 0, b, N, MPI_CHAR, MPI_STATUS_IGNORE);
  int mixed = 0;
  for (int i = 1; i < N; i++) mixed |= b[i] != b[0];
  CHECK(!mixed, "atomic writes are not interleaved");
  MPI_File_set_atomicity(fh, 0);
  free(b);
  MPI_File_close(&fh);
}

static void test_info(void) {
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "cb_buffer_size", "8388608");
  MPI_Info_set(info, "romio_ds_write", "disable");
  MPI_Info_set(info, "no_such_hint_xyz", "1");
  MPI_File fh;
  MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR, info, &fh);
  MPI_Info used;
  char v[MPI_MAX_INFO_VAL + 1];
  int flag;
  MPI_File_get_info(fh, &used);
  MPI_Info_get(used, "cb_buffer_size", MPI_MAX_INFO_VAL, v, &flag);
  CHECK(flag && !strcmp(v, "8388608"), "cb_buffer_size reported: %s", flag ? v : "(none)");
  MPI_Info_get(used, "romio_ds_write", MPI_MAX_INFO_VAL, v, &flag);
  CHECK(flag && !strcmp(v, "disable"), "romio_ds_write reported");
  MPI_Info_get(used, "no_such_hint_xyz", MPI_MAX_INFO_VAL, v, &flag);
  CHECK(!flag, "unknown keys are not reported");
  MPI_Info_get(used, "cb_nodes", MPI_MAX_INFO_VAL, v, &flag);
  CHECK(flag && atoi(v) >= 1, "effective cb_nodes reported");
  MPI_Info_free(&used);
  MPI_Info_set(info, "cb_buffer_size", "1048576");
  MPI_File_set_info(fh, info);
  MPI_File_get_info(fh, &used);
  MPI_Info_get(used, "cb_buffer_size", MPI_MAX_INFO_VAL, v, &flag);
  CHECK(flag && !strcmp(v, "1048576"), "set_info changes the hint");
  MPI_Info_free(&used);
  MPI_Info_free(&info);
  MPI_Group g, wg;
  int res, amode;
  MPI_File_get_group(fh, &g);
  MPI_Comm_group(MPI_COMM_WORLD, &wg);
  MPI_Group_compare(g, wg, &res);
  CHECK(res == MPI_IDENT, "get_group");
  MPI_Group_free(&g);
  MPI_Group_free(&wg);
  MPI_File_get_amode(fh, &amode);
  CHECK(amode == MPI_MODE_RDWR, "get_amode");
  MPI_Aint ext;
  MPI_File_get_type_extent(fh, MPI_DOUBLE, &ext);
  CHECK(ext == 8, "get_type_extent");
#ifdef MPI_ABI_VERSION /* the MPI standard ABI: int handles (toint/fromint), no MPI_Fint */
  int fi = MPI_File_toint(fh);
  CHECK(fi != MPI_File_toint(MPI_FILE_NULL) && MPI_File_fromint(fi) == fh, "toint/fromint round trip");
  MPI_File_close(&fh);
  CHECK(MPI_File_fromint(fi) == MPI_FILE_NULL, "fromint of a closed file");
#else
  MPI_Fint fi = MPI_File_c2f(fh);
  CHECK(fi != 0 && MPI_File_f2c(fi) == fh, "c2f/f2c round trip");
  MPI_File_close(&fh);
  CHECK(MPI_File_f2c(fi) == MPI_FILE_NULL, "f2c of a closed file");
#endif
}

static int handler_calls, handler_code;
static MPI_File handler_file;
static void handler(MPI_File *fh, int *code, ...) {
  handler_calls++;
  handler_code = *code;
  handler_file = *fh;
}

static void test_errhandlers(void) {
  MPI_Errhandler eh, got;
  MPI_File fh;
  MPI_File_get_errhandler(MPI_FILE_NULL, &got);
  CHECK(got == MPI_ERRORS_RETURN, "default file errhandler is MPI_ERRORS_RETURN");
  MPI_Errhandler_free(&got);
  MPI_File_create_errhandler(handler, &eh);
  /* Set on MPI_FILE_NULL: the default for failing opens and later opens. */
  MPI_File_set_errhandler(MPI_FILE_NULL, eh);
  int rc = MPI_File_open(MPI_COMM_WORLD, "/nonexistent-dir/x", MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
  CHECK(handler_calls == 1 && err_class(handler_code) == MPI_ERR_NO_SUCH_FILE && rc == handler_code,
        "handler called for failing open (%d calls)", handler_calls);
  fh = open_rw(MPI_MODE_RDWR);
  MPI_File_get_errhandler(fh, &got);
  CHECK(got == eh, "new files inherit the default errhandler");
  MPI_Errhandler_free(&got);
  MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN);
  MPI_Errhandler_free(&eh); /* still referenced by the file */
  rc = MPI_File_write_at(fh, -5, "x", 1, MPI_CHAR, MPI_STATUS_IGNORE);
  CHECK(handler_calls == 2 && handler_file == fh && err_class(handler_code) == MPI_ERR_ARG,
        "handler called with the file handle and the code");
  MPI_File_call_errhandler(fh, MPI_ERR_OTHER);
  CHECK(handler_calls == 3 && handler_code == MPI_ERR_OTHER, "call_errhandler");
  MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN);
  rc = MPI_File_write_at(fh, -5, "x", 1, MPI_CHAR, MPI_STATUS_IGNORE);
  CHECK(handler_calls == 3 && err_class(rc) == MPI_ERR_ARG, "ERRORS_RETURN returns the code");
  MPI_File_close(&fh);
}

int main(int argc, char **argv) {
  start(&argc, &argv);
  rank = t_rank;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  test_path(path, sizeof path, "pario-semantics");
  test_excl_create();
  test_pointers_and_views();
  test_partial_elements();
  test_append_and_delete_on_close();
  test_sequential();
  test_sizes();
  test_atomic();
  test_info();
  test_errhandlers();
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) MPI_File_delete(path, MPI_INFO_NULL);
  return finish("semantics");
}
