/* external32 through every access path: `ext32 write DIR` writes one file per path with the
 * same calls under any MPI-IO (so the native one can be the oracle of a byte comparison),
 * `ext32 read DIR` reads them back through the same paths and checks values and counts, and
 * `ext32 check DIR NP` (no MPI-IO: stdio) checks the bytes against the standard's external32
 * encoding computed here by hand. `ext32 queries DIR` checks MPI_File_get_type_extent and the
 * error for a type that has no external32 form (pario's behaviour, not every native's). */
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../mpi/harness.h"

enum { N = 1000 };
typedef struct S { int a; double b; char c[3]; long d; } S;
enum { SX = 4 + 8 + 3 + 4 }; /* its external32 size */

static int me, np;
static char dir[900];

static double dval(int r, int i) { return r * 1e6 + i + 0.25; }
static long lval(int r, int i) { return (long)(r * 100000 + i) * (i % 2 ? -1 : 1); }
static short sval(int r, int i) { return (short)(r * 1000 + i); }
static long double ldval(int r, int i) { return (long double)dval(r, i) * 3; }
static S sval_s(int r, int i) {
  S s;
  memset(&s, 0, sizeof s);
  s.a = -r * 7 - i, s.b = dval(r, i) / 4, s.d = lval(r, i) * 3;
  s.c[0] = (char)('a' + r), s.c[1] = (char)i, s.c[2] = (char)(i >> 8);
  return s;
}

static void path(char *p, const char *name) { snprintf(p, 1000, "%s/ext32.%s", dir, name); }

static MPI_Datatype struct_type(void) {
  int bl[4] = {1, 1, 3, 1};
  MPI_Aint d[4] = {offsetof(S, a), offsetof(S, b), offsetof(S, c), offsetof(S, d)};
  MPI_Datatype t[4] = {MPI_INT, MPI_DOUBLE, MPI_CHAR, MPI_LONG}, s, r;
  MPI_Type_create_struct(4, bl, d, t, &s);
  MPI_Type_create_resized(s, 0, sizeof(S), &r);
  MPI_Type_free(&s);
  MPI_Type_commit(&r);
  return r;
}

/* vector of blocks of b etypes, one block per rank in turn: this rank's filetype */
static MPI_Datatype strided(MPI_Datatype et, int b) {
  MPI_Datatype v;
  MPI_Type_vector(N / b, b, b * np, et, &v);
  MPI_Type_commit(&v);
  return v;
}

static MPI_File open_file(const char *name, int amode, int coll) {
  char p[1000];
  MPI_File fh;
  MPI_Info info;
  path(p, name);
  MPI_Info_create(&info);
  if (coll) { /* two-phase with small rounds: pieces cut through items */
    MPI_Info_set(info, "romio_cb_write", "enable");
    MPI_Info_set(info, "romio_cb_read", "enable");
    MPI_Info_set(info, "cb_buffer_size", "1000");
  }
  int rc = MPI_File_open(MPI_COMM_WORLD, p, amode, info, &fh);
  MPI_Info_free(&info);
  if (rc != MPI_SUCCESS) {
    fprintf(stderr, "cannot open %s: %s\n", p, err_text(rc));
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  return fh;
}

#define OK(call) do { int rc_ = (call); CHECK(rc_ == MPI_SUCCESS, "%s: %s", #call, err_text(rc_)); } while (0)

static void count_is(MPI_Status *st, MPI_Datatype t, int want, const char *what) {
  int c = -1;
  MPI_Get_count(st, t, &c);
  CHECK(c == want, "%s: count %d, want %d", what, c, want);
}

/* ---- write and read, one function per file: rw 1 writes, 0 reads back and checks ---- */

static void f_contig(int rw) {
  double *b = malloc(N * sizeof *b);
  MPI_Status st;
  MPI_File fh = open_file("contig", rw ? MPI_MODE_CREATE | MPI_MODE_WRONLY : MPI_MODE_RDONLY, 0);
  OK(MPI_File_set_view(fh, 0, MPI_DOUBLE, MPI_DOUBLE, "external32", MPI_INFO_NULL));
  for (int i = 0; i < N; i++) b[i] = rw ? dval(me, i) : 0;
  if (rw) OK(MPI_File_write_at(fh, (MPI_Offset)me * N, b, N, MPI_DOUBLE, &st));
  else OK(MPI_File_read_at(fh, (MPI_Offset)me * N, b, N, MPI_DOUBLE, &st));
  count_is(&st, MPI_DOUBLE, N, "contig");
  for (int i = 0; !rw && i < N; i++) CHECK(b[i] == dval(me, i), "contig[%d] = %g", i, b[i]);
  MPI_File_close(&fh);
  free(b);
}

static void f_mixed(int rw) {
  long *l = malloc(N * sizeof *l);
  short *s = malloc(N * sizeof *s);
  long double *ld = malloc(N * sizeof *ld);
  MPI_Status st;
  MPI_Offset base = (MPI_Offset)me * N * (4 + 2 + 16);
  MPI_File fh = open_file("mixed", rw ? MPI_MODE_CREATE | MPI_MODE_WRONLY : MPI_MODE_RDONLY, 0);
  OK(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "external32", MPI_INFO_NULL));
  for (int i = 0; i < N; i++) l[i] = rw ? lval(me, i) : 0, s[i] = rw ? sval(me, i) : 0, ld[i] = rw ? ldval(me, i) : 0;
  if (rw) {
    OK(MPI_File_write_at(fh, base, l, N, MPI_LONG, &st));
    OK(MPI_File_write_at(fh, base + 4 * N, s, N, MPI_SHORT, &st));
    OK(MPI_File_write_at(fh, base + 6 * N, ld, N, MPI_LONG_DOUBLE, &st));
  } else {
    OK(MPI_File_read_at(fh, base, l, N, MPI_LONG, &st));
    count_is(&st, MPI_LONG, N, "mixed long");
    OK(MPI_File_read_at(fh, base + 4 * N, s, N, MPI_SHORT, &st));
    OK(MPI_File_read_at(fh, base + 6 * N, ld, N, MPI_LONG_DOUBLE, &st));
    count_is(&st, MPI_LONG_DOUBLE, N, "mixed long double");
    for (int i = 0; i < N; i++) {
      CHECK(l[i] == lval(me, i), "mixed long[%d] = %ld", i, l[i]);
      CHECK(s[i] == sval(me, i), "mixed short[%d] = %d", i, s[i]);
      CHECK(ld[i] == ldval(me, i), "mixed long double[%d] = %Lg", i, ld[i]);
    }
  }
  MPI_File_close(&fh);
  free(l), free(s), free(ld);
}

static void f_struct(int rw) {
  S *b = malloc(N * sizeof *b);
  MPI_Status st;
  MPI_Datatype t = struct_type();
  MPI_File fh = open_file("struct", rw ? MPI_MODE_CREATE | MPI_MODE_WRONLY : MPI_MODE_RDONLY, 0);
  OK(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "external32", MPI_INFO_NULL));
  for (int i = 0; i < N; i++) {
    if (rw) b[i] = sval_s(me, i);
    else memset(&b[i], 0, sizeof b[i]);
  }
  if (rw) OK(MPI_File_write_at(fh, (MPI_Offset)me * N * SX, b, N, t, &st));
  else OK(MPI_File_read_at(fh, (MPI_Offset)me * N * SX, b, N, t, &st));
  count_is(&st, t, N, "struct");
  for (int i = 0; !rw && i < N; i++) {
    S w = sval_s(me, i);
    CHECK(b[i].a == w.a && b[i].b == w.b && !memcmp(b[i].c, w.c, 3) && b[i].d == w.d, "struct[%d]", i);
  }
  MPI_File_close(&fh);
  MPI_Type_free(&t);
  free(b);
}

/* Individual pointer, in two halves, through a strided view of MPI_LONG (4 bytes in the
 * file, 8 in memory): the pointer counts external32 etypes. */
static void f_strided(int rw) {
  long *b = calloc(N, sizeof *b);
  MPI_Status st;
  MPI_Datatype ft = strided(MPI_LONG, 2);
  MPI_File fh = open_file("strided", rw ? MPI_MODE_CREATE | MPI_MODE_WRONLY : MPI_MODE_RDONLY, 0);
  OK(MPI_File_set_view(fh, (MPI_Offset)me * 2 * 4, MPI_LONG, ft, "external32", MPI_INFO_NULL));
  for (int i = 0; rw && i < N; i++) b[i] = lval(me, i);
  for (int h = 0; h < 2; h++) {
    if (rw) OK(MPI_File_write(fh, b + h * N / 2, N / 2, MPI_LONG, &st));
    else OK(MPI_File_read(fh, b + h * N / 2, N / 2, MPI_LONG, &st));
    count_is(&st, MPI_LONG, N / 2, "strided");
  }
  MPI_Offset pos = -1, byte = -1;
  MPI_File_get_position(fh, &pos);
  CHECK(pos == N, "strided: position %lld, want %d", (long long)pos, N);
  MPI_File_get_byte_offset(fh, 3, &byte); /* etype 3: second block of this rank */
  CHECK(byte == (MPI_Offset)me * 8 + 2 * np * 4 + 4, "strided: byte offset %lld", (long long)byte);
  for (int i = 0; !rw && i < N; i++) CHECK(b[i] == lval(me, i), "strided[%d] = %ld", i, b[i]);
  MPI_File_close(&fh);
  MPI_Type_free(&ft);
  free(b);
}

/* Collective, two-phase forced with 1000-byte rounds (cut through doubles). */
static void f_coll(int rw) {
  double *b = calloc(N, sizeof *b);
  MPI_Status st;
  MPI_Datatype ft = strided(MPI_DOUBLE, 4);
  MPI_File fh = open_file("coll", rw ? MPI_MODE_CREATE | MPI_MODE_RDWR : MPI_MODE_RDONLY, 1);
  OK(MPI_File_set_view(fh, (MPI_Offset)me * 4 * 8, MPI_DOUBLE, ft, "external32", MPI_INFO_NULL));
  for (int i = 0; rw && i < N; i++) b[i] = dval(me, i);
  if (rw) OK(MPI_File_write_all(fh, b, N, MPI_DOUBLE, &st));
  else OK(MPI_File_read_all(fh, b, N, MPI_DOUBLE, &st));
  count_is(&st, MPI_DOUBLE, N, "coll");
  for (int i = 0; !rw && i < N; i++) CHECK(b[i] == dval(me, i), "coll[%d] = %g", i, b[i]);
  MPI_File_close(&fh);
  MPI_Type_free(&ft);
  free(b);
}

/* Collective of a struct memory type over a strided view of bytes: pieces cut through
 * struct members. */
static void f_collstruct(int rw) {
  S *b = calloc(N, sizeof *b);
  MPI_Status st;
  MPI_Datatype t = struct_type(), ft;
  MPI_Type_vector(N / 10, 10 * SX, 10 * SX * np, MPI_BYTE, &ft);
  MPI_Type_commit(&ft);
  MPI_File fh = open_file("collstruct", rw ? MPI_MODE_CREATE | MPI_MODE_RDWR : MPI_MODE_RDONLY, 1);
  OK(MPI_File_set_view(fh, (MPI_Offset)me * 10 * SX, MPI_BYTE, ft, "external32", MPI_INFO_NULL));
  for (int i = 0; rw && i < N; i++) b[i] = sval_s(me, i);
  if (rw) OK(MPI_File_write_at_all(fh, 0, b, N, t, &st));
  else OK(MPI_File_read_at_all(fh, 0, b, N, t, &st));
  count_is(&st, t, N, "collstruct");
  for (int i = 0; !rw && i < N; i++) {
    S w = sval_s(me, i);
    CHECK(b[i].a == w.a && b[i].b == w.b && !memcmp(b[i].c, w.c, 3) && b[i].d == w.d, "collstruct[%d]", i);
  }
  MPI_File_close(&fh);
  MPI_Type_free(&ft);
  MPI_Type_free(&t);
  free(b);
}

static void f_ordered(int rw) {
  double *b = calloc(N, sizeof *b);
  MPI_Status st;
  MPI_File fh = open_file("ordered", rw ? MPI_MODE_CREATE | MPI_MODE_WRONLY : MPI_MODE_RDONLY, 0);
  OK(MPI_File_set_view(fh, 0, MPI_DOUBLE, MPI_DOUBLE, "external32", MPI_INFO_NULL));
  for (int i = 0; rw && i < N; i++) b[i] = dval(me, i);
  if (rw) OK(MPI_File_write_ordered(fh, b, N, MPI_DOUBLE, &st));
  else OK(MPI_File_read_ordered(fh, b, N, MPI_DOUBLE, &st));
  count_is(&st, MPI_DOUBLE, N, "ordered");
  for (int i = 0; !rw && i < N; i++) CHECK(b[i] == dval(me, i), "ordered[%d] = %g", i, b[i]);
  MPI_Offset pos = -1;
  MPI_File_get_position_shared(fh, &pos);
  CHECK(pos == (MPI_Offset)N * np, "ordered: shared position %lld", (long long)pos);
  MPI_File_close(&fh);
  free(b);
}

/* Shared pointer, ranks in turn (so the file is the same every run). */
static void f_shared(int rw) {
  long *b = calloc(N, sizeof *b);
  MPI_Status st;
  MPI_File fh = open_file("shared", rw ? MPI_MODE_CREATE | MPI_MODE_WRONLY : MPI_MODE_RDONLY, 0);
  OK(MPI_File_set_view(fh, 0, MPI_LONG, MPI_LONG, "external32", MPI_INFO_NULL));
  for (int i = 0; rw && i < N; i++) b[i] = lval(me, i);
  for (int r = 0; r < np; r++) {
    if (r == me) {
      if (rw) OK(MPI_File_write_shared(fh, b, N, MPI_LONG, &st));
      else OK(MPI_File_read_shared(fh, b, N, MPI_LONG, &st));
      count_is(&st, MPI_LONG, N, "shared");
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  for (int i = 0; !rw && i < N; i++) CHECK(b[i] == lval(me, i), "shared[%d] = %ld", i, b[i]);
  MPI_File_close(&fh);
  free(b);
}

/* Nonblocking independent, then a split collective. */
static void f_nb(int rw) {
  double *b = calloc(N, sizeof *b), *c = calloc(N, sizeof *c);
  MPI_Status st;
  MPI_Request rq;
  MPI_File fh = open_file("nb", rw ? MPI_MODE_CREATE | MPI_MODE_WRONLY : MPI_MODE_RDONLY, 0);
  OK(MPI_File_set_view(fh, 0, MPI_DOUBLE, MPI_DOUBLE, "external32", MPI_INFO_NULL));
  for (int i = 0; rw && i < N; i++) b[i] = dval(me, i), c[i] = -dval(me, i);
  if (rw) OK(MPI_File_iwrite_at(fh, (MPI_Offset)me * N, b, N, MPI_DOUBLE, &rq));
  else OK(MPI_File_iread_at(fh, (MPI_Offset)me * N, b, N, MPI_DOUBLE, &rq));
  OK(MPI_Wait(&rq, &st));
  count_is(&st, MPI_DOUBLE, N, "nb");
  MPI_Offset at = (MPI_Offset)(np + me) * N;
  if (rw) {
    OK(MPI_File_write_at_all_begin(fh, at, c, N, MPI_DOUBLE));
    OK(MPI_File_write_at_all_end(fh, c, &st));
  } else {
    OK(MPI_File_read_at_all_begin(fh, at, c, N, MPI_DOUBLE));
    OK(MPI_File_read_at_all_end(fh, c, &st));
  }
  count_is(&st, MPI_DOUBLE, N, "split");
  for (int i = 0; !rw && i < N; i++) {
    CHECK(b[i] == dval(me, i), "nb[%d] = %g", i, b[i]);
    CHECK(c[i] == -dval(me, i), "split[%d] = %g", i, c[i]);
  }
  MPI_File_close(&fh);
  free(b), free(c);
}

typedef void (*fn)(int);
static const struct { const char *name; fn f; } files[] = {
  {"contig", f_contig}, {"mixed", f_mixed}, {"struct", f_struct}, {"strided", f_strided},
  {"coll", f_coll}, {"collstruct", f_collstruct}, {"ordered", f_ordered}, {"shared", f_shared},
  {"nb", f_nb},
};
enum { NFILES = sizeof files / sizeof files[0] };

/* ---- the expected bytes, by hand ---- */

static void be(unsigned char *p, uint64_t v, int n) {
  for (int i = 0; i < n; i++) p[i] = (unsigned char)(v >> (8 * (n - 1 - i)));
}
static void be_double(unsigned char *p, double d) {
  uint64_t u;
  memcpy(&u, &d, 8);
  be(p, u, 8);
}
/* binary128 of a value that a double holds exactly (normal, nonzero) */
static void be_quad(unsigned char *p, double d) {
  uint64_t u;
  memcpy(&u, &d, 8);
  uint64_t sign = u >> 63, e = (u >> 52) & 0x7ff, fr = u & ((1ULL << 52) - 1);
  uint64_t hi = sign << 63 | (e - 1023 + 16383) << 48 | fr >> 4, lo = fr << 60;
  be(p, hi, 8);
  be(p + 8, lo, 8);
}
static void be_struct(unsigned char *p, S s) {
  be(p, (uint32_t)s.a, 4);
  be_double(p + 4, s.b);
  memcpy(p + 12, s.c, 3);
  be(p + 15, (uint32_t)s.d, 4);
}

static unsigned char *expect(const char *name, size_t *len) {
  size_t n = (size_t)N * np;
  unsigned char *e = NULL;
  if (!strcmp(name, "contig") || !strcmp(name, "ordered") || !strcmp(name, "nb") || !strcmp(name, "coll")) {
    int nb = !strcmp(name, "nb"), coll = !strcmp(name, "coll");
    *len = n * 8 * (nb ? 2 : 1);
    e = malloc(*len);
    for (int r = 0; r < np; r++)
      for (int i = 0; i < N; i++) {
        size_t k = coll ? (size_t)(i / 4) * 4 * np + (size_t)r * 4 + i % 4 : (size_t)r * N + i;
        be_double(e + 8 * k, dval(r, i));
        if (nb) be_double(e + 8 * ((size_t)(np + r) * N + i), -dval(r, i));
      }
  } else if (!strcmp(name, "mixed")) {
    *len = n * 22;
    e = malloc(*len);
    for (int r = 0; r < np; r++)
      for (int i = 0; i < N; i++) {
        unsigned char *b = e + (size_t)r * N * 22;
        be(b + 4 * i, (uint32_t)lval(r, i), 4);
        be(b + 4 * N + 2 * i, (uint16_t)sval(r, i), 2);
        be_quad(b + 6 * N + 16 * i, dval(r, i) * 3);
      }
  } else if (!strcmp(name, "struct") || !strcmp(name, "collstruct")) {
    int c = !strcmp(name, "collstruct");
    *len = n * SX;
    e = malloc(*len);
    for (int r = 0; r < np; r++)
      for (int i = 0; i < N; i++) {
        size_t k = c ? (size_t)(i / 10) * 10 * np + (size_t)r * 10 + i % 10 : (size_t)r * N + i;
        be_struct(e + SX * k, sval_s(r, i));
      }
  } else if (!strcmp(name, "strided") || !strcmp(name, "shared")) {
    int sh = !strcmp(name, "shared");
    *len = n * 4;
    e = malloc(*len);
    for (int r = 0; r < np; r++)
      for (int i = 0; i < N; i++) {
        size_t k = sh ? (size_t)r * N + i : (size_t)(i / 2) * 2 * np + (size_t)r * 2 + i % 2;
        be(e + 4 * k, (uint32_t)lval(r, i), 4);
      }
  }
  return e;
}

/* EXT32_ONLY=a,b,...: only those files */
static int selected(const char *name) {
  const char *only = getenv("EXT32_ONLY");
  if (!only || !*only) return 1;
  size_t n = strlen(name);
  for (const char *p = only; (p = strstr(p, name)); p += n)
    if ((p == only || p[-1] == ',') && (p[n] == 0 || p[n] == ',')) return 1;
  return 0;
}

static int check(void) {
  int bad = 0, k = 0;
  for (int f = 0; f < NFILES; f++) {
    if (!selected(files[f].name)) continue;
    k++;
    char p[1000];
    size_t len = 0;
    unsigned char *e = expect(files[f].name, &len), *got = malloc(len + 1);
    path(p, files[f].name);
    FILE *fp = fopen(p, "rb");
    size_t n = fp ? fread(got, 1, len + 1, fp) : 0;
    if (fp) fclose(fp);
    if (n != len || memcmp(e, got, len)) {
      size_t at = 0;
      while (at < len && at < n && e[at] == got[at]) at++;
      fprintf(stderr, "%s: %zu bytes, want %zu; first difference at byte %zu\n", p, n, len, at);
      bad = 1;
    }
    free(e), free(got);
  }
  if (!bad) printf("ext32 check: %d files hold the external32 bytes the standard prescribes\n", k);
  return bad;
}

/* ---- pario's answers: get_type_extent and the unsupported-type error ---- */

static void queries(void) {
  char p[1000];
  MPI_File fh;
  MPI_Aint x = -1;
  path(p, "queries");
  OK(MPI_File_open(MPI_COMM_WORLD, p, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &fh));
  OK(MPI_File_get_type_extent(fh, MPI_LONG, &x));
  CHECK(x == sizeof(long), "native extent of MPI_LONG %ld", (long)x);
  OK(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "external32", MPI_INFO_NULL));
  char rep[MPI_MAX_DATAREP_STRING];
  MPI_Offset disp;
  MPI_Datatype et, ft;
  OK(MPI_File_get_view(fh, &disp, &et, &ft, rep));
  CHECK(!strcmp(rep, "external32"), "get_view says %s", rep);
  struct { MPI_Datatype t; MPI_Aint want; const char *name; } q[] = {
    {MPI_LONG, 4, "MPI_LONG"}, {MPI_DOUBLE, 8, "MPI_DOUBLE"}, {MPI_LONG_DOUBLE, 16, "MPI_LONG_DOUBLE"},
    {MPI_DOUBLE_INT, 12, "MPI_DOUBLE_INT"}, {MPI_C_DOUBLE_COMPLEX, 16, "MPI_C_DOUBLE_COMPLEX"},
    {MPI_WCHAR, 2, "MPI_WCHAR"}, {MPI_C_BOOL, 1, "MPI_C_BOOL"}};
  for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) {
    OK(MPI_File_get_type_extent(fh, q[i].t, &x));
    CHECK(x == q[i].want, "external32 extent of %s: %ld, want %ld", q[i].name, (long)x, (long)q[i].want);
  }
  MPI_Datatype v, s = struct_type(), c;
  MPI_Type_vector(3, 2, 5, MPI_LONG, &v); /* stride in extents: scaled to 4 bytes */
  MPI_Type_commit(&v);
  OK(MPI_File_get_type_extent(fh, v, &x));
  CHECK(x == (2 * 5 + 2) * 4, "external32 extent of a vector of MPI_LONG %ld", (long)x);
  OK(MPI_File_get_type_extent(fh, s, &x)); /* resized: bounds as given */
  CHECK(x == (MPI_Aint)sizeof(S), "external32 extent of the resized struct %ld", (long)x);
  MPI_Type_contiguous(5, MPI_LONG_DOUBLE, &c);
  MPI_Type_commit(&c);
  OK(MPI_File_get_type_extent(fh, c, &x));
  CHECK(x == 80, "external32 extent of 5 long doubles %ld", (long)x);
  /* A type with no external32 form: set_view and data access refuse it and name it. */
  MPI_Datatype no = MPI_DATATYPE_NULL;
#ifdef MPI_2COMPLEX
  no = MPI_2COMPLEX;
#endif
  if (no != MPI_DATATYPE_NULL) {
    int rc = MPI_File_set_view(fh, 0, no, no, "external32", MPI_INFO_NULL);
    CHECK(err_class(rc) == MPI_ERR_UNSUPPORTED_DATAREP, "set_view with MPI_2COMPLEX: %s", err_text(rc));
    CHECK(strstr(err_text(rc), "2COMPLEX") != NULL, "the message does not name the type: %s", err_text(rc));
    OK(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "external32", MPI_INFO_NULL));
    float z[4] = {1, 2, 3, 4};
    rc = MPI_File_write_at(fh, 0, z, 1, no, MPI_STATUS_IGNORE);
    CHECK(err_class(rc) == MPI_ERR_UNSUPPORTED_DATAREP, "write of MPI_2COMPLEX: %s", err_text(rc));
    CHECK(strstr(err_text(rc), "2COMPLEX") != NULL, "the message does not name the type: %s", err_text(rc));
  }
  /* A read that reaches end of file: the status counts the whole items that arrived, and
   * an item cut by the end stays as it was in memory. */
  if (me == 0) {
    long w[10], r[15];
    unsigned char two[2] = {0x7f, 0x7f};
    MPI_Status st;
    for (int i = 0; i < 10; i++) w[i] = -1000 * i - 1, r[i] = 0;
    for (int i = 10; i < 15; i++) r[i] = 77;
    OK(MPI_File_write_at(fh, 0, w, 10, MPI_LONG, &st));
    OK(MPI_File_write_at(fh, 40, two, 2, MPI_BYTE, &st)); /* half of an 11th MPI_LONG */
    OK(MPI_File_read_at(fh, 0, r, 15, MPI_LONG, &st));
    int got = -1;
    MPI_Get_count(&st, MPI_LONG, &got);
    CHECK(got == 10, "read past end of file: count %d, want 10", got);
    CHECK(!memcmp(r, w, sizeof w) && r[10] == 77 && r[14] == 77, "read past end of file: values");
  }
  MPI_Barrier(MPI_COMM_WORLD);
  int rc = MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "no-such-representation", MPI_INFO_NULL);
  CHECK(err_class(rc) == MPI_ERR_UNSUPPORTED_DATAREP, "unknown datarep: %s", err_text(rc));
  OK(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "internal", MPI_INFO_NULL));
  OK(MPI_File_get_view(fh, &disp, &et, &ft, rep));
  CHECK(!strcmp(rep, "internal"), "get_view says %s", rep);
  OK(MPI_File_get_type_extent(fh, MPI_LONG, &x));
  CHECK(x == sizeof(long), "internal (stored as native) extent of MPI_LONG %ld", (long)x);
  MPI_File_close(&fh);
  MPI_Type_free(&v), MPI_Type_free(&s), MPI_Type_free(&c);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: ext32 write|read|queries DIR | ext32 check DIR NP\n");
    return 2;
  }
  snprintf(dir, sizeof dir, "%s", argv[2]);
  if (!strcmp(argv[1], "check")) {
    np = argc > 3 ? atoi(argv[3]) : 1;
    return check();
  }
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  t_rank = me;
  if (!strcmp(argv[1], "queries")) {
    queries();
  } else {
    int rw = !strcmp(argv[1], "write");
    for (int f = 0; f < NFILES; f++)
      if (selected(files[f].name)) files[f].f(rw);
  }
  return finish(argv[1]);
}
