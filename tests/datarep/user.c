/* A user-defined data representation, "wide": every value takes twice its native size in the
 * file, its bytes reversed, followed by the complement of those bytes (which the read
 * conversion checks). The test checks the file bytes, the values read back, get_type_extent,
 * every call of the conversion functions against the standard's description (the user's
 * datatype, count items, position into the tiled datatype advancing by the items of the
 * previous call, the extra state), MPI_CONVERSION_FN_NULL, MPI_Register_datarep_c where the
 * MPI is MPI-4, and the error classes: duplicate and unknown names, a conversion function's
 * error as the I/O call's (MPI_ERR_CONVERSION). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../mpi/harness.h"

enum { M = 200000 }; /* ints per rank: several chunks of conversion */

typedef struct call { int wr; MPI_Datatype t; long long count, pos; void *extra; } call;
static call calls[4096];
static int ncalls, fail_after = -1, magic = 42, extent_calls;

static int tsize(MPI_Datatype t) {
  int s = 0;
  MPI_Type_size(t, &s);
  return s;
}

static int convert(int wr, void *userbuf, MPI_Datatype t, long long count, void *filebuf, MPI_Offset pos, void *extra) {
  if (ncalls < 4096) calls[ncalls] = (call){wr, t, count, pos, extra};
  ncalls++;
  if (fail_after >= 0 && ncalls > fail_after) return MPI_ERR_OTHER;
  int s = tsize(t);
  unsigned char *u = (unsigned char *)userbuf + pos * s, *f = filebuf;
  for (long long i = 0; i < count; i++, u += s, f += 2 * s)
    for (int b = 0; b < s; b++) {
      if (wr) {
        f[b] = u[s - 1 - b];
        f[s + b] = (unsigned char)~u[s - 1 - b];
      } else {
        if (f[s + b] != (unsigned char)~f[b]) return MPI_ERR_OTHER; /* not this representation */
        u[s - 1 - b] = f[b];
      }
    }
  return MPI_SUCCESS;
}
static int wr_fn(void *u, MPI_Datatype t, int count, void *f, MPI_Offset pos, void *x) { return convert(1, u, t, count, f, pos, x); }
static int rd_fn(void *u, MPI_Datatype t, int count, void *f, MPI_Offset pos, void *x) { return convert(0, u, t, count, f, pos, x); }
static int extent_fn(MPI_Datatype t, MPI_Aint *ext, void *x) {
  extent_calls++;
  CHECK(x == &magic, "extent function: extra state %p", x);
  *ext = 2 * tsize(t);
  return MPI_SUCCESS;
}
static int native_extent(MPI_Datatype t, MPI_Aint *ext, void *x) {
  (void)x;
  *ext = tsize(t);
  return MPI_SUCCESS;
}
#if MPI_VERSION >= 4
static int wr_c(void *u, MPI_Datatype t, MPI_Count count, void *f, MPI_Offset pos, void *x) { return convert(1, u, t, count, f, pos, x); }
static int rd_c(void *u, MPI_Datatype t, MPI_Count count, void *f, MPI_Offset pos, void *x) { return convert(0, u, t, count, f, pos, x); }
#endif

#define OK(call) do { int rc_ = (call); CHECK(rc_ == MPI_SUCCESS, "%s: %s", #call, err_text(rc_)); } while (0)

static int me, np;
static char dir[900];

/* The calls since from: one kind, the user's type, positions consecutive from 0, counts
 * adding up to n, the extra state. */
static void calls_are(int from, int wr, MPI_Datatype t, long long n, const char *what) {
  long long pos = 0;
  CHECK(ncalls > from, "%s: no conversion call", what);
  for (int i = from; i < ncalls && i < 4096; i++) {
    CHECK(calls[i].wr == wr && calls[i].t == t && calls[i].extra == &magic, "%s: call %d", what, i - from);
    CHECK(calls[i].pos == pos, "%s: call %d position %lld, want %lld", what, i - from, calls[i].pos, pos);
    pos += calls[i].count;
  }
  CHECK(pos == n, "%s: %lld items converted, want %lld", what, pos, n);
}

static void wide(const char *rep) {
  char p[1000];
  MPI_File fh;
  MPI_Status st;
  MPI_Aint x = 0;
  int *v = malloc(M * sizeof *v), c = -1;
  snprintf(p, sizeof p, "%s/user.%s.%d", dir, rep, np);
  OK(MPI_File_open(MPI_COMM_WORLD, p, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
  OK(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, rep, MPI_INFO_NULL));
  CHECK(extent_calls > 0, "set_view did not ask the extent function");
  OK(MPI_File_get_type_extent(fh, MPI_INT, &x));
  CHECK(x == 8, "get_type_extent(MPI_INT) = %ld, want 8", (long)x);
  OK(MPI_File_get_type_extent(fh, MPI_DOUBLE, &x));
  CHECK(x == 16, "get_type_extent(MPI_DOUBLE) = %ld, want 16", (long)x);
  MPI_Datatype vec;
  MPI_Type_vector(3, 2, 5, MPI_SHORT, &vec);
  MPI_Type_commit(&vec);
  OK(MPI_File_get_type_extent(fh, vec, &x));
  CHECK(x == 12 * 4, "get_type_extent(vector of MPI_SHORT) = %ld, want 48", (long)x);
  MPI_Type_free(&vec);
  char got[MPI_MAX_DATAREP_STRING];
  MPI_Offset disp;
  MPI_Datatype et, ft;
  OK(MPI_File_get_view(fh, &disp, &et, &ft, got));
  CHECK(!strcmp(got, rep), "get_view: %s", got);
  /* write: converted chunk by chunk */
  for (int i = 0; i < M; i++) v[i] = me * 1000003 + i * 7 - 5;
  int from = ncalls;
  OK(MPI_File_write_at(fh, (MPI_Offset)me * M, v, M, MPI_INT, &st));
  MPI_Get_count(&st, MPI_INT, &c);
  CHECK(c == M, "write count %d", c);
  calls_are(from, 1, MPI_INT, M, "write_at");
  CHECK(ncalls - from > 1, "one conversion call for %d items: not chunked", M);
  MPI_File_sync(fh);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_File_sync(fh);
  /* the bytes, by hand */
  FILE *fp = fopen(p, "rb");
  unsigned char *b = malloc((size_t)M * 8);
  CHECK(fp && fseek(fp, (long)me * M * 8, SEEK_SET) == 0 && fread(b, 8, M, fp) == M, "cannot read %s", p);
  for (int i = 0; i < M; i++) {
    unsigned u = (unsigned)v[i];
    unsigned char want[8] = {(unsigned char)(u >> 24), (unsigned char)(u >> 16), (unsigned char)(u >> 8), (unsigned char)u};
    for (int k = 0; k < 4; k++) want[4 + k] = (unsigned char)~want[k];
    if (memcmp(b + 8 * i, want, 8)) {
      CHECK(0, "file bytes of value %d differ", i);
      break;
    }
  }
  if (fp) fclose(fp);
  free(b);
  /* read back */
  memset(v, 0, M * sizeof *v);
  from = ncalls;
  OK(MPI_File_read_at(fh, (MPI_Offset)me * M, v, M, MPI_INT, &st));
  MPI_Get_count(&st, MPI_INT, &c);
  CHECK(c == M, "read count %d", c);
  calls_are(from, 0, MPI_INT, M, "read_at");
  int bad = 0;
  for (int i = 0; i < M; i++) bad += v[i] != me * 1000003 + i * 7 - 5;
  CHECK(!bad, "%d values read back wrong", bad);
  /* collective and nonblocking forms convert alike */
  for (int i = 0; i < 100; i++) v[i] = -i;
  from = ncalls;
  OK(MPI_File_write_at_all(fh, (MPI_Offset)np * M + me * 100, v, 100, MPI_INT, &st));
  calls_are(from, 1, MPI_INT, 100, "write_at_all");
  MPI_Request rq;
  memset(v, 0, 100 * sizeof *v);
  MPI_Barrier(MPI_COMM_WORLD);
  from = ncalls;
  OK(MPI_File_iread_at(fh, (MPI_Offset)np * M + me * 100, v, 100, MPI_INT, &rq));
  OK(MPI_Wait(&rq, &st));
  calls_are(from, 0, MPI_INT, 100, "iread_at");
  for (int i = 0; i < 100; i++) bad += v[i] != -i;
  CHECK(!bad, "nonblocking read back wrong");
  /* a conversion function's error is the I/O call's, class MPI_ERR_CONVERSION */
  fail_after = ncalls + 1;
  int rc = MPI_File_write_at(fh, (MPI_Offset)me * M, v, M, MPI_INT, &st);
  CHECK(err_class(rc) == MPI_ERR_CONVERSION, "failing write conversion: %s", err_text(rc));
  CHECK(strstr(err_text(rc), rep) != NULL, "the message does not name the representation: %s", err_text(rc));
  fail_after = ncalls;
  rc = MPI_File_read_at(fh, 0, v, 10, MPI_INT, &st);
  CHECK(err_class(rc) == MPI_ERR_CONVERSION, "failing read conversion: %s", err_text(rc));
  fail_after = -1;
  MPI_File_close(&fh);
  free(v);
}

/* MPI_CONVERSION_FN_NULL both ways: the data go as native bytes. */
static void plain(void) {
  char p[1000];
  MPI_File fh;
  double d[64], r[64];
  snprintf(p, sizeof p, "%s/user.plain.%d", dir, np);
  OK(MPI_Register_datarep("pario-test-plain", MPI_CONVERSION_FN_NULL, MPI_CONVERSION_FN_NULL, native_extent, NULL));
  OK(MPI_File_open(MPI_COMM_WORLD, p, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
  OK(MPI_File_set_view(fh, 0, MPI_DOUBLE, MPI_DOUBLE, "pario-test-plain", MPI_INFO_NULL));
  for (int i = 0; i < 64; i++) d[i] = me + i / 8.0;
  int from = ncalls;
  OK(MPI_File_write_at(fh, me * 64, d, 64, MPI_DOUBLE, MPI_STATUS_IGNORE));
  OK(MPI_File_read_at(fh, me * 64, r, 64, MPI_DOUBLE, MPI_STATUS_IGNORE));
  CHECK(ncalls == from, "MPI_CONVERSION_FN_NULL: a conversion function was called");
  CHECK(!memcmp(d, r, sizeof d), "MPI_CONVERSION_FN_NULL: read back differs");
  MPI_File_close(&fh);
  FILE *fp = fopen(p, "rb");
  CHECK(fp && fseek(fp, me * 64 * 8, SEEK_SET) == 0 && fread(r, 8, 64, fp) == 64 && !memcmp(d, r, sizeof d),
        "MPI_CONVERSION_FN_NULL: the file does not hold the native bytes");
  if (fp) fclose(fp);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  t_rank = me;
  snprintf(dir, sizeof dir, "%s", argc > 1 ? argv[1] : ".");
  OK(MPI_Register_datarep("pario-test-wide", rd_fn, wr_fn, extent_fn, &magic));
  int rc = MPI_Register_datarep("pario-test-wide", rd_fn, wr_fn, extent_fn, &magic);
  CHECK(err_class(rc) == MPI_ERR_DUP_DATAREP, "duplicate name: %s", err_text(rc));
  rc = MPI_Register_datarep("external32", rd_fn, wr_fn, extent_fn, &magic);
  CHECK(err_class(rc) == MPI_ERR_DUP_DATAREP, "external32 registered again: %s", err_text(rc));
  wide("pario-test-wide");
#if MPI_VERSION >= 4
  OK(MPI_Register_datarep_c("pario-test-wide-c", rd_c, wr_c, extent_fn, &magic));
  wide("pario-test-wide-c");
#endif
  plain();
  /* an unknown name */
  char p[1000];
  MPI_File fh;
  snprintf(p, sizeof p, "%s/user.unknown.%d", dir, np);
  OK(MPI_File_open(MPI_COMM_WORLD, p, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &fh));
  rc = MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "pario-test-never-registered", MPI_INFO_NULL);
  CHECK(err_class(rc) == MPI_ERR_UNSUPPORTED_DATAREP, "unknown name: %s", err_text(rc));
  MPI_File_close(&fh);
  return finish("user datarep");
}
