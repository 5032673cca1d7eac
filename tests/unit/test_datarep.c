/* Unit tests of the external32 data representation (no mpiexec; MPI singleton init).
 * Oracles: the standard's size tables; big-endian encodings computed by hand for chosen
 * values (negative numbers, 0.125, 1e300, denormals, infinities, NaN); the compiler's own
 * x87 <-> binary128 conversions (__float128) for long double; and the host MPI's
 * MPI_Pack_external_size / MPI_Pack_external where they work (see host_*). */
#include <float.h>
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "core/common.h"
#include "view/datarep.h"
#include "check.h"

typedef unsigned char u8;

static const char *hex(const void *p, size_t n) {
  static char buf[4][200];
  static int k;
  char *s = buf[k++ % 4];
  size_t o = 0;
  for (size_t i = 0; i < n && o + 4 < sizeof buf[0]; i++) o += (size_t)snprintf(s + o, sizeof buf[0] - o, "%02x ", ((const u8 *)p)[i]);
  s[o] = 0;
  return s;
}

/* Does the host MPI have this (Fortran or optional) type? */
static int host_has(MPI_Datatype t) {
  int size = 0;
  if (t == MPI_DATATYPE_NULL) return 0;
  return MPI_Type_size(t, &size) == MPI_SUCCESS && size > 0;
}

/* Data bytes of count items of t equal? Long double scalars compare their 10 bytes of value. */
static int same_values(MPI_Datatype t, const void *a, const void *b, size_t count) {
  pario_ext32_map *m;
  if (pario_ext32_map_build(t, &m) != MPI_SUCCESS) return 0;
  int same = 1;
  for (size_t i = 0; i < count; i++)
    for (size_t r = 0; r < m->nruns; r++) {
      const pario_ext32_run *run = &m->runs[r];
      size_t scalar = run->cv.nsize, cmp = run->type == MPI_LONG_DOUBLE ||
                                                   run->type == MPI_C_LONG_DOUBLE_COMPLEX ? 10 : scalar;
      for (MPI_Offset j = 0; j < run->count * run->cv.nper; j++) {
        size_t off = (size_t)(i * (size_t)m->nextent + (size_t)run->noff) + (size_t)j * scalar;
        if (memcmp((const u8 *)a + off, (const u8 *)b + off, cmp)) same = 0;
      }
    }
  pario_ext32_map_free(m);
  return same;
}

/* Encode count items of t from native, expect the bytes want; decode them back and expect
 * the native values; narrowed must come out as given. */
static void expect(const char *what, MPI_Datatype t, const void *native, size_t count, const u8 *want,
                   size_t nwant, size_t want_narrowed) {
  MPI_Offset esize = 0;
  MPI_Aint lb, extent;
  int rc = pario_ext32_size(t, &esize);
  CHECK(rc == MPI_SUCCESS, "%s: ext32 size failed (%d)", what, rc);
  if (rc != MPI_SUCCESS) return;
  CHECK((size_t)esize * count == nwant, "%s: ext32 size %lld x %zu, expected %zu bytes", what, (long long)esize,
        count, nwant);
  MPI_Type_get_extent(t, &lb, &extent);
  u8 *ext = malloc(nwant + 16), *back = malloc((size_t)extent * count + 16);
  memset(ext, 0xA5, nwant + 16);
  size_t narrowed = 0;
  rc = pario_ext32_encode_ex(t, native, ext, count, &narrowed);
  CHECK(rc == MPI_SUCCESS && !memcmp(ext, want, nwant), "%s: encoded %s, expected %s", what, hex(ext, nwant),
        hex(want, nwant));
  CHECK(ext[nwant] == 0xA5, "%s: encode wrote past the end", what);
  CHECK(narrowed == want_narrowed, "%s: %zu narrowed, expected %zu", what, narrowed, want_narrowed);
  memset(back, 0x5A, (size_t)extent * count + 16);
  rc = pario_ext32_decode(t, want, back, count);
  if (want_narrowed == 0)
    CHECK(rc == MPI_SUCCESS && same_values(t, native, back, count), "%s: decoding the bytes gave other values",
          what);
  free(ext);
  free(back);
}

#define BYTES(...) ((const u8[]){__VA_ARGS__}), sizeof((const u8[]){__VA_ARGS__})

/* ---- sizes: the standard's tables ---- */

static void sizes(void) {
  struct { MPI_Datatype t; const char *name; MPI_Offset size; int optional; } tab[] = {
    {MPI_PACKED, "MPI_PACKED", 1, 0}, {MPI_BYTE, "MPI_BYTE", 1, 0}, {MPI_CHAR, "MPI_CHAR", 1, 0},
    {MPI_UNSIGNED_CHAR, "MPI_UNSIGNED_CHAR", 1, 0}, {MPI_SIGNED_CHAR, "MPI_SIGNED_CHAR", 1, 0},
    {MPI_WCHAR, "MPI_WCHAR", 2, 0}, {MPI_SHORT, "MPI_SHORT", 2, 0}, {MPI_UNSIGNED_SHORT, "MPI_UNSIGNED_SHORT", 2, 0},
    {MPI_INT, "MPI_INT", 4, 0}, {MPI_UNSIGNED, "MPI_UNSIGNED", 4, 0}, {MPI_LONG, "MPI_LONG", 4, 0},
    {MPI_UNSIGNED_LONG, "MPI_UNSIGNED_LONG", 4, 0}, {MPI_LONG_LONG_INT, "MPI_LONG_LONG_INT", 8, 0},
    {MPI_LONG_LONG, "MPI_LONG_LONG", 8, 0}, {MPI_UNSIGNED_LONG_LONG, "MPI_UNSIGNED_LONG_LONG", 8, 0},
    {MPI_FLOAT, "MPI_FLOAT", 4, 0}, {MPI_DOUBLE, "MPI_DOUBLE", 8, 0}, {MPI_LONG_DOUBLE, "MPI_LONG_DOUBLE", 16, 0},
    {MPI_C_BOOL, "MPI_C_BOOL", 1, 0}, {MPI_INT8_T, "MPI_INT8_T", 1, 0}, {MPI_INT16_T, "MPI_INT16_T", 2, 0},
    {MPI_INT32_T, "MPI_INT32_T", 4, 0}, {MPI_INT64_T, "MPI_INT64_T", 8, 0}, {MPI_UINT8_T, "MPI_UINT8_T", 1, 0},
    {MPI_UINT16_T, "MPI_UINT16_T", 2, 0}, {MPI_UINT32_T, "MPI_UINT32_T", 4, 0}, {MPI_UINT64_T, "MPI_UINT64_T", 8, 0},
    {MPI_AINT, "MPI_AINT", 8, 0}, {MPI_COUNT, "MPI_COUNT", 8, 0}, {MPI_OFFSET, "MPI_OFFSET", 8, 0},
    {MPI_C_COMPLEX, "MPI_C_COMPLEX", 8, 0}, {MPI_C_FLOAT_COMPLEX, "MPI_C_FLOAT_COMPLEX", 8, 0},
    {MPI_C_DOUBLE_COMPLEX, "MPI_C_DOUBLE_COMPLEX", 16, 0},
    {MPI_C_LONG_DOUBLE_COMPLEX, "MPI_C_LONG_DOUBLE_COMPLEX", 32, 0},
    {MPI_FLOAT_INT, "MPI_FLOAT_INT", 8, 0}, {MPI_DOUBLE_INT, "MPI_DOUBLE_INT", 12, 0},
    {MPI_LONG_INT, "MPI_LONG_INT", 8, 0}, {MPI_2INT, "MPI_2INT", 8, 0}, {MPI_SHORT_INT, "MPI_SHORT_INT", 6, 0},
    {MPI_LONG_DOUBLE_INT, "MPI_LONG_DOUBLE_INT", 20, 0},
    /* Fortran: present when the MPI library was built with a Fortran compiler */
    {MPI_CHARACTER, "MPI_CHARACTER", 1, 1}, {MPI_LOGICAL, "MPI_LOGICAL", 4, 1}, {MPI_INTEGER, "MPI_INTEGER", 4, 1},
    {MPI_REAL, "MPI_REAL", 4, 1}, {MPI_DOUBLE_PRECISION, "MPI_DOUBLE_PRECISION", 8, 1},
    {MPI_COMPLEX, "MPI_COMPLEX", 8, 1}, {MPI_DOUBLE_COMPLEX, "MPI_DOUBLE_COMPLEX", 16, 1},
    {MPI_INTEGER1, "MPI_INTEGER1", 1, 1}, {MPI_INTEGER2, "MPI_INTEGER2", 2, 1}, {MPI_INTEGER4, "MPI_INTEGER4", 4, 1},
    {MPI_INTEGER8, "MPI_INTEGER8", 8, 1}, {MPI_REAL4, "MPI_REAL4", 4, 1}, {MPI_REAL8, "MPI_REAL8", 8, 1},
    {MPI_2INTEGER, "MPI_2INTEGER", 8, 1}, {MPI_2REAL, "MPI_2REAL", 8, 1},
    {MPI_2DOUBLE_PRECISION, "MPI_2DOUBLE_PRECISION", 16, 1},
  };
  int missing = 0;
  for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
    MPI_Offset s = -1;
    int rc = pario_ext32_size(tab[i].t, &s);
    if (tab[i].optional && !host_has(tab[i].t)) {
      CHECK(rc != MPI_SUCCESS, "%s: the host lacks it, yet it has an ext32 size", tab[i].name);
      missing++;
      continue;
    }
    CHECK(rc == MPI_SUCCESS && s == tab[i].size, "%s: ext32 size %lld (rc %d), the standard says %lld",
          tab[i].name, (long long)s, rc, (long long)tab[i].size);
  }
  if (missing) printf("note: %d Fortran types absent from this MPI library\n", missing);
  MPI_Offset s;
  CHECK(pario_ext32_size(MPI_DATATYPE_NULL, &s) == MPI_ERR_TYPE, "MPI_DATATYPE_NULL is no type");
  MPI_Datatype v;
  MPI_Type_contiguous(2, MPI_INT, &v);
  CHECK(pario_ext32_size(v, &s) == MPI_ERR_TYPE, "a derived type is not predefined");
  MPI_Type_free(&v);
}

/* ---- values: hand-computed big-endian encodings ---- */

static void integers(void) {
  short sh[3] = {-1, 0x1234, -32768};
  expect("MPI_SHORT", MPI_SHORT, sh, 3, BYTES(0xff, 0xff, 0x12, 0x34, 0x80, 0x00), 0);
  unsigned short us[2] = {0xBEEF, 1};
  expect("MPI_UNSIGNED_SHORT", MPI_UNSIGNED_SHORT, us, 2, BYTES(0xbe, 0xef, 0x00, 0x01), 0);
  int in[3] = {-2, 0x01020304, 0};
  expect("MPI_INT", MPI_INT, in, 3, BYTES(0xff, 0xff, 0xff, 0xfe, 1, 2, 3, 4, 0, 0, 0, 0), 0);
  unsigned un[2] = {0xDEADBEEFu, 7};
  expect("MPI_UNSIGNED", MPI_UNSIGNED, un, 2, BYTES(0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 7), 0);
  /* long: 8 native bytes on LP64, 4 in external32; in range converts exactly */
  long lo[4] = {-5, 0x12345678, -2147483647L - 1, 2147483647L};
  expect("MPI_LONG", MPI_LONG, lo, 4,
         BYTES(0xff, 0xff, 0xff, 0xfb, 0x12, 0x34, 0x56, 0x78, 0x80, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff), 0);
  unsigned long ul[2] = {0xFFFFFFFFul, 3};
  expect("MPI_UNSIGNED_LONG", MPI_UNSIGNED_LONG, ul, 2, BYTES(0xff, 0xff, 0xff, 0xff, 0, 0, 0, 3), 0);
  if (sizeof(long) == 8) {
    /* out of range: the least significant bytes, counted as narrowed (the standard's advice) */
    long big[2] = {0x123456789L, -2147483649L};
    expect("MPI_LONG out of range", MPI_LONG, big, 2, BYTES(0x23, 0x45, 0x67, 0x89, 0x7f, 0xff, 0xff, 0xff), 2);
    unsigned long ubig[1] = {0x100000001ul};
    expect("MPI_UNSIGNED_LONG out of range", MPI_UNSIGNED_LONG, ubig, 1, BYTES(0, 0, 0, 1), 1);
    /* reading: sign extension for long, zero extension for unsigned long */
    long l2[1];
    unsigned long u2[1];
    pario_ext32_decode(MPI_LONG, (const u8[]){0xff, 0xff, 0xff, 0xfb}, l2, 1);
    pario_ext32_decode(MPI_UNSIGNED_LONG, (const u8[]){0xff, 0xff, 0xff, 0xfb}, u2, 1);
    CHECK(l2[0] == -5 && u2[0] == 0xFFFFFFFBul, "long sign / unsigned long zero extension: %ld %lu", l2[0], u2[0]);
  }
  long long ll[2] = {-2, 0x0102030405060708LL};
  expect("MPI_LONG_LONG", MPI_LONG_LONG, ll, 2,
         BYTES(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe, 1, 2, 3, 4, 5, 6, 7, 8), 0);
  expect("MPI_LONG_LONG_INT", MPI_LONG_LONG_INT, ll, 1, BYTES(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe), 0);
  unsigned long long ull[1] = {0xF0E0D0C0B0A09080ULL};
  expect("MPI_UNSIGNED_LONG_LONG", MPI_UNSIGNED_LONG_LONG, ull, 1,
         BYTES(0xf0, 0xe0, 0xd0, 0xc0, 0xb0, 0xa0, 0x90, 0x80), 0);
  signed char sc[2] = {-1, 5};
  expect("MPI_SIGNED_CHAR", MPI_SIGNED_CHAR, sc, 2, BYTES(0xff, 5), 0);
  unsigned char uc[2] = {200, 0};
  expect("MPI_UNSIGNED_CHAR", MPI_UNSIGNED_CHAR, uc, 2, BYTES(200, 0), 0);
  char ch[3] = {'A', 'z', (char)0xE9}; /* ISO 8859-1 e-acute */
  expect("MPI_CHAR", MPI_CHAR, ch, 3, BYTES(0x41, 0x7a, 0xe9), 0);
  expect("MPI_BYTE", MPI_BYTE, ch, 3, BYTES(0x41, 0x7a, 0xe9), 0);
  expect("MPI_PACKED", MPI_PACKED, ch, 3, BYTES(0x41, 0x7a, 0xe9), 0);
  int8_t i8[2] = {-128, 127};
  expect("MPI_INT8_T", MPI_INT8_T, i8, 2, BYTES(0x80, 0x7f), 0);
  int16_t i16[1] = {-300};
  expect("MPI_INT16_T", MPI_INT16_T, i16, 1, BYTES(0xfe, 0xd4), 0);
  int32_t i32[1] = {-70000};
  expect("MPI_INT32_T", MPI_INT32_T, i32, 1, BYTES(0xff, 0xfe, 0xee, 0x90), 0);
  int64_t i64[1] = {-1099511627776LL}; /* -2^40 */
  expect("MPI_INT64_T", MPI_INT64_T, i64, 1, BYTES(0xff, 0xff, 0xff, 0, 0, 0, 0, 0), 0);
  uint8_t u8v[1] = {0xAB};
  expect("MPI_UINT8_T", MPI_UINT8_T, u8v, 1, BYTES(0xab), 0);
  uint16_t u16[1] = {0xA1B2};
  expect("MPI_UINT16_T", MPI_UINT16_T, u16, 1, BYTES(0xa1, 0xb2), 0);
  uint32_t u32[1] = {0xA1B2C3D4u};
  expect("MPI_UINT32_T", MPI_UINT32_T, u32, 1, BYTES(0xa1, 0xb2, 0xc3, 0xd4), 0);
  uint64_t u64[1] = {0x0011223344556677ULL};
  expect("MPI_UINT64_T", MPI_UINT64_T, u64, 1, BYTES(0, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77), 0);
  MPI_Aint ai[1] = {-3};
  expect("MPI_AINT", MPI_AINT, ai, 1, BYTES(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfd), 0);
  MPI_Offset of[1] = {0x100000000LL};
  expect("MPI_OFFSET", MPI_OFFSET, of, 1, BYTES(0, 0, 0, 1, 0, 0, 0, 0), 0);
  MPI_Count co[1] = {-1};
  expect("MPI_COUNT", MPI_COUNT, co, 1, BYTES(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff), 0);
  /* wide characters: 2 bytes of Unicode; a code point above U+FFFF does not fit */
  wchar_t wc[2] = {L'A', (wchar_t)0x20AC};
  expect("MPI_WCHAR", MPI_WCHAR, wc, 2, BYTES(0x00, 0x41, 0x20, 0xac), 0);
  if (sizeof(wchar_t) > 2) {
    wchar_t smile[1] = {(wchar_t)0x1F600};
    expect("MPI_WCHAR beyond the BMP", MPI_WCHAR, smile, 1, BYTES(0xf6, 0x00), 1);
  }
}

static void booleans(void) {
  _Bool b[2] = {1, 0};
  expect("MPI_C_BOOL", MPI_C_BOOL, b, 2, BYTES(1, 0), 0);
  _Bool back[2];
  pario_ext32_decode(MPI_C_BOOL, (const u8[]){0x80, 0}, back, 2);
  CHECK(back[0] == 1 && back[1] == 0, "C_BOOL: nonzero reads as true");
  if (host_has(MPI_LOGICAL)) {
    int size;
    MPI_Type_size(MPI_LOGICAL, &size);
    if (size == 4) {
      int32_t lg[2] = {1, 0}, neg[1] = {-1}, lb[1];
      expect("MPI_LOGICAL", MPI_LOGICAL, lg, 2, BYTES(0, 0, 0, 1, 0, 0, 0, 0), 0);
      u8 e[4];
      pario_ext32_encode(MPI_LOGICAL, neg, e, 1); /* some compilers' true: written as 1 */
      CHECK(!memcmp(e, (const u8[]){0, 0, 0, 1}, 4), "LOGICAL true normalised: %s", hex(e, 4));
      pario_ext32_decode(MPI_LOGICAL, (const u8[]){0, 1, 0, 0}, lb, 1); /* every byte counts */
      CHECK(lb[0] == 1, "LOGICAL: any nonzero byte is true (%d)", lb[0]);
    }
  }
}

static void floats(void) {
  float f[6] = {0.125f, -1.0f, INFINITY, -INFINITY, 1.401298464324817e-45f /* smallest denormal */, FLT_MAX};
  expect("MPI_FLOAT", MPI_FLOAT, f, 6,
         BYTES(0x3e, 0, 0, 0, 0xbf, 0x80, 0, 0, 0x7f, 0x80, 0, 0, 0xff, 0x80, 0, 0, 0, 0, 0, 1, 0x7f, 0x7f, 0xff, 0xff), 0);
  uint32_t nanbits = 0x7fc00001u; /* a quiet NaN with a payload: bits kept */
  float fn;
  memcpy(&fn, &nanbits, 4);
  expect("MPI_FLOAT NaN", MPI_FLOAT, &fn, 1, BYTES(0x7f, 0xc0, 0x00, 0x01), 0);
  double d[6] = {0.125, 1e300, -1e300, 4.9406564584124654e-324 /* denormal */, -0.0, -INFINITY};
  expect("MPI_DOUBLE", MPI_DOUBLE, d, 6,
         BYTES(0x3f, 0xc0, 0, 0, 0, 0, 0, 0, 0x7e, 0x37, 0xe4, 0x3c, 0x88, 0x00, 0x75, 0x9c,
               0xfe, 0x37, 0xe4, 0x3c, 0x88, 0x00, 0x75, 0x9c, 0, 0, 0, 0, 0, 0, 0, 1,
               0x80, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xf0, 0, 0, 0, 0, 0, 0), 0);
  double dn = NAN;
  u8 e[8];
  pario_ext32_encode(MPI_DOUBLE, &dn, e, 1);
  CHECK((e[0] & 0x7f) == 0x7f && (e[1] & 0xf0) == 0xf0 && (e[1] & 0x08), "double NaN stays a quiet NaN: %s", hex(e, 8));
  double dback;
  pario_ext32_decode(MPI_DOUBLE, e, &dback, 1);
  CHECK(isnan(dback), "NaN reads back as NaN");
  /* complex: (real, imaginary), each big-endian */
  float fc[2] = {0.125f, -1.0f};
  expect("MPI_C_FLOAT_COMPLEX", MPI_C_FLOAT_COMPLEX, fc, 1, BYTES(0x3e, 0, 0, 0, 0xbf, 0x80, 0, 0), 0);
  expect("MPI_C_COMPLEX", MPI_C_COMPLEX, fc, 1, BYTES(0x3e, 0, 0, 0, 0xbf, 0x80, 0, 0), 0);
  double dc[2] = {0.125, -1e300};
  expect("MPI_C_DOUBLE_COMPLEX", MPI_C_DOUBLE_COMPLEX, dc, 1,
         BYTES(0x3f, 0xc0, 0, 0, 0, 0, 0, 0, 0xfe, 0x37, 0xe4, 0x3c, 0x88, 0x00, 0x75, 0x9c), 0);
}

/* Long double: x87 extended -> IEEE binary128, by hand and against the compiler. */
static void long_doubles(void) {
#if LDBL_MANT_DIG == 64
  long double ld[8];
  memset(ld, 0, sizeof ld);
  ld[0] = 0.125L;
  ld[1] = (long double)1e300; /* the double, widened exactly */
  ld[2] = -2.0L;
  ld[3] = LDBL_MIN;         /* smallest normal: exponent field 1 */
  ld[4] = LDBL_MIN / 0x1p63L; /* smallest denormal, 2^-16445 */
  ld[5] = LDBL_MAX;
  ld[6] = -INFINITY;
  ld[7] = -0.0L;
  expect("MPI_LONG_DOUBLE", MPI_LONG_DOUBLE, ld, 8,
         BYTES(0x3f, 0xfc, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
               0x43, 0xe3, 0x7e, 0x43, 0xc8, 0x80, 0x07, 0x59, 0xc0, 0, 0, 0, 0, 0, 0, 0,
               0xc0, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
               0x00, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
               0, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x02, 0, 0, 0, 0, 0, 0,
               0x7f, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe, 0, 0, 0, 0, 0, 0,
               0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
               0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), 0);
  long double qn;
  memset(&qn, 0, sizeof qn);
  qn = __builtin_nanl("");
  u8 e[16];
  pario_ext32_encode(MPI_LONG_DOUBLE, &qn, e, 1);
  CHECK(!memcmp(e, (const u8[]){0x7f, 0xff, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 16), "long double NaN: %s",
        hex(e, 16));
  /* A pseudo-denormal (exponent 0, integer bit set) is the smallest normal. */
  u8 pd[16] = {0, 0, 0, 0, 0, 0, 0, 0x80, 0, 0};
  pario_ext32_encode(MPI_LONG_DOUBLE, pd, e, 1);
  CHECK(!memcmp(e, (const u8[]){0x00, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 16), "pseudo-denormal: %s",
        hex(e, 16));

  /* Reading binary128: round to nearest, ties to even, on the 49 bits x87 lacks. */
  struct { u8 q[16]; long double want; const char *what; } rd[] = {
    /* x87 keeps 63 fraction bits: its last one is binary128 fraction bit 49 (2^-63 at 1.0) */
    {{0x3f, 0xff, 0, 0, 0, 0, 0, 0, 0x00, 0x01, 0, 0, 0, 0, 0, 0}, 1.0L, "1 + 2^-64: a tie, to even"},
    {{0x3f, 0xff, 0, 0, 0, 0, 0, 0, 0x00, 0x01, 0, 0, 0, 0, 0, 1}, 1.0L + 0x1p-63L, "1 + 2^-64 + 2^-112: up"},
    {{0x3f, 0xff, 0, 0, 0, 0, 0, 0, 0x00, 0x03, 0, 0, 0, 0, 0, 0}, 1.0L + 0x1p-62L, "1 + 3 * 2^-64: a tie, to even (up)"},
    {{0x3f, 0xff, 0, 0, 0, 0, 0, 0, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 1.0L, "just under a tie: down"},
    {{0x7f, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, INFINITY,
     "binary128 max rounds to infinity"},
    {{0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, LDBL_MIN,
     "largest denormal rounds to the smallest normal"},
    {{0x80, 0x00, 0, 0, 0, 0, 0, 0, 0, 0x01, 0, 0, 0, 0, 0, 0}, -0.0L, "a tiny denormal rounds to -0"},
  };
  for (size_t i = 0; i < sizeof rd / sizeof rd[0]; i++) {
    long double got;
    pario_ext32_decode(MPI_LONG_DOUBLE, rd[i].q, &got, 1);
    CHECK(got == rd[i].want && signbit(got) == signbit(rd[i].want), "%s: got %La", rd[i].what, got);
  }

#ifdef __SIZEOF_FLOAT128__
  /* The compiler's conversions as the oracle: random x87 values (denormals, huge and tiny
   * exponents, infinities) must encode as (__float128)x, and random binary128 values must
   * read as (long double)q. */
  uint64_t seed = 88172645463325252ULL;
#define RND() (seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17, seed)
  int bad_enc = 0, bad_dec = 0, n = 200000;
  for (int i = 0; i < n; i++) {
    u8 x[16] = {0}, q[16];
    uint64_t m = RND(), r = RND();
    uint16_t se = (uint16_t)r;
    int cls = (int)((r >> 16) % 8);
    if (cls == 0) se &= 0x8000;                    /* zero exponent: denormals */
    if (cls == 1) se |= 0x7fff, m &= (uint64_t)1 << 63 | (r >> 20 & 1 ? ~0ULL : 0); /* inf / NaN */
    if ((se & 0x7fff) != 0) m |= (uint64_t)1 << 63; /* normal: integer bit set */
    else m &= ~((uint64_t)1 << 63);
    memcpy(x, &m, 8);
    memcpy(x + 8, &se, 2);
    long double xv;
    memcpy(&xv, x, sizeof xv);
    if (isnan(xv)) continue; /* the compiler quiets signalling NaNs; bits are checked above */
    __float128 want = (__float128)xv;
    u8 wb[16];
    memcpy(wb, &want, 16);
    for (int k = 0; k < 8; k++) { u8 t = wb[k]; wb[k] = wb[15 - k]; wb[15 - k] = t; }
    pario_ext32_encode(MPI_LONG_DOUBLE, x, q, 1);
    if (memcmp(q, wb, 16) && bad_enc++ < 3) printf("  x87 %s -> %s, compiler %s\n", hex(x, 10), hex(q, 16), hex(wb, 16));
    long double back;
    pario_ext32_decode(MPI_LONG_DOUBLE, q, &back, 1);
    if (memcmp(&back, x, 10) && bad_enc++ < 3) printf("  round trip of %s gave %s\n", hex(x, 10), hex(&back, 10));
    /* a random binary128 */
    uint64_t hi = RND(), lo = RND();
    int qc = (int)(hi % 8);
    if (qc == 0) hi &= 0x8000ffffffffffffULL;                /* denormal */
    if (qc == 1) hi |= 0x7ffe000000000000ULL, hi &= ~0x0001000000000000ULL; /* near the top */
    if (qc == 2) hi = (hi & 0x8000ffffffffffffULL) | 0x0001000000000000ULL; /* smallest normals */
    if (qc == 3) lo = (lo & ~((1ULL << 49) - 1)) | (1ULL << 48); /* ties */
    for (int k = 0; k < 8; k++) q[k] = (u8)(hi >> (56 - 8 * k)), q[8 + k] = (u8)(lo >> (56 - 8 * k));
    if (((hi >> 48) & 0x7fff) == 0x7fff) continue;
    __float128 qv;
    memcpy(&qv, (uint64_t[]){lo, hi}, 16);
    long double wantx = (long double)qv, gotx;
    pario_ext32_decode(MPI_LONG_DOUBLE, q, &gotx, 1);
    if (memcmp(&gotx, &wantx, 10) && bad_dec++ < 3)
      printf("  binary128 %s -> %s, compiler %s\n", hex(q, 16), hex(&gotx, 10), hex(&wantx, 10));
  }
  CHECK(bad_enc == 0, "x87 -> binary128: %d of %d differ from the compiler's conversion", bad_enc, n);
  CHECK(bad_dec == 0, "binary128 -> x87: %d of %d differ from the compiler's conversion", bad_dec, n);
#else
  printf("note: no __float128: long double checked by hand only\n");
#endif
  long double ldc[2];
  memset(ldc, 0, sizeof ldc);
  ldc[0] = 0.125L, ldc[1] = -2.0L;
  expect("MPI_C_LONG_DOUBLE_COMPLEX", MPI_C_LONG_DOUBLE_COMPLEX, ldc, 1,
         BYTES(0x3f, 0xfc, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
               0xc0, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), 0);
#else
  printf("note: long double is not x87 extended here: hand-computed x87 cases skipped\n");
#endif
}

/* Long arrays (the vector kernels: 32-byte blocks, tails, unaligned starts) against a
 * byte-by-byte reversal of each value. */
static void bulk(void) {
  struct { MPI_Datatype t; const char *name; int size; } ty[] = {
    {MPI_SHORT, "MPI_SHORT", 2}, {MPI_INT, "MPI_INT", 4}, {MPI_FLOAT, "MPI_FLOAT", 4}, {MPI_DOUBLE, "MPI_DOUBLE", 8},
    {MPI_LONG_LONG, "MPI_LONG_LONG", 8}, {MPI_C_DOUBLE_COMPLEX, "MPI_C_DOUBLE_COMPLEX", 8},
    {MPI_REAL16, "MPI_REAL16", 16}, /* Fortran REAL*16: binary128 in memory, only swapped */
  };
  u8 *in = malloc(4096 + 1), *ext = malloc(4096), *back = malloc(4096 + 1);
  for (int i = 0; i < 4097; i++) in[i] = (u8)(i * 131 + 7);
  for (size_t k = 0; k < sizeof ty / sizeof ty[0]; k++) {
    int size = 0;
    if (!host_has(ty[k].t) || (MPI_Type_size(ty[k].t, &size), size % ty[k].size)) continue;
    int per = size / ty[k].size, bad = 0;
    for (int n = 1; n <= 130 && !bad; n += (n < 40 ? 1 : 7))
      for (int shift = 0; shift <= 1 && !bad; shift++) {
        const u8 *src = in + shift; /* unaligned too */
        pario_ext32_encode(ty[k].t, src, ext, (size_t)n);
        for (int v = 0; v < n * per && !bad; v++)
          for (int j = 0; j < ty[k].size; j++)
            if (ext[v * ty[k].size + j] != src[v * ty[k].size + ty[k].size - 1 - j]) bad = n;
        pario_ext32_decode(ty[k].t, ext, back + shift, (size_t)n);
        if (memcmp(back + shift, src, (size_t)(n * size))) bad = n;
      }
    CHECK(!bad, "%s: %d values not byte-reversed", ty[k].name, bad);
  }
  free(in);
  free(ext);
  free(back);
}

/* Pair types: members in order, no padding. */
static void pairs(void) {
  struct { double a; int b; } di[2];
  memset(di, 0, sizeof di);
  di[0].a = 0.125, di[0].b = -2, di[1].a = -1e300, di[1].b = 1;
  expect("MPI_DOUBLE_INT", MPI_DOUBLE_INT, di, 2,
         BYTES(0x3f, 0xc0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xfe,
               0xfe, 0x37, 0xe4, 0x3c, 0x88, 0x00, 0x75, 0x9c, 0, 0, 0, 1), 0);
  struct { float a; int b; } fi[1] = {{-1.0f, 7}};
  expect("MPI_FLOAT_INT", MPI_FLOAT_INT, fi, 1, BYTES(0xbf, 0x80, 0, 0, 0, 0, 0, 7), 0);
  struct { long a; int b; } li[1];
  memset(li, 0, sizeof li);
  li[0].a = -5, li[0].b = 9;
  expect("MPI_LONG_INT", MPI_LONG_INT, li, 1, BYTES(0xff, 0xff, 0xff, 0xfb, 0, 0, 0, 9), 0);
  struct { short a; int b; } si[1];
  memset(si, 0, sizeof si);
  si[0].a = -1, si[0].b = 1;
  expect("MPI_SHORT_INT", MPI_SHORT_INT, si, 1, BYTES(0xff, 0xff, 0, 0, 0, 1), 0);
  int ii[2] = {-1, 2};
  expect("MPI_2INT", MPI_2INT, ii, 1, BYTES(0xff, 0xff, 0xff, 0xff, 0, 0, 0, 2), 0);
#if LDBL_MANT_DIG == 64
  struct { long double a; int b; } ldi[1];
  memset(ldi, 0, sizeof ldi);
  ldi[0].a = -2.0L, ldi[0].b = 3;
  expect("MPI_LONG_DOUBLE_INT", MPI_LONG_DOUBLE_INT, ldi, 1,
         BYTES(0xc0, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3), 0);
#endif
}

/* Fortran types, as the host MPI's Fortran compiler lays them out (gfortran: INTEGER 4 bytes). */
static void fortran(void) {
  int size = 0;
  if (!host_has(MPI_INTEGER) || (MPI_Type_size(MPI_INTEGER, &size), size != 4)) {
    printf("note: no 4-byte Fortran INTEGER in this MPI library: Fortran values skipped\n");
    return;
  }
  int32_t i4[2] = {-2, 0x01020304};
  expect("MPI_INTEGER", MPI_INTEGER, i4, 2, BYTES(0xff, 0xff, 0xff, 0xfe, 1, 2, 3, 4), 0);
  expect("MPI_INTEGER4", MPI_INTEGER4, i4, 1, BYTES(0xff, 0xff, 0xff, 0xfe), 0);
  expect("MPI_2INTEGER", MPI_2INTEGER, i4, 1, BYTES(0xff, 0xff, 0xff, 0xfe, 1, 2, 3, 4), 0);
  int8_t i1[1] = {-3};
  if (host_has(MPI_INTEGER1)) expect("MPI_INTEGER1", MPI_INTEGER1, i1, 1, BYTES(0xfd), 0);
  int16_t i2[1] = {-3};
  if (host_has(MPI_INTEGER2)) expect("MPI_INTEGER2", MPI_INTEGER2, i2, 1, BYTES(0xff, 0xfd), 0);
  int64_t i8[1] = {-3};
  if (host_has(MPI_INTEGER8))
    expect("MPI_INTEGER8", MPI_INTEGER8, i8, 1, BYTES(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfd), 0);
  float r[2] = {0.125f, -1.0f};
  if (host_has(MPI_REAL)) {
    expect("MPI_REAL", MPI_REAL, r, 1, BYTES(0x3e, 0, 0, 0), 0);
    expect("MPI_COMPLEX", MPI_COMPLEX, r, 1, BYTES(0x3e, 0, 0, 0, 0xbf, 0x80, 0, 0), 0);
    expect("MPI_2REAL", MPI_2REAL, r, 1, BYTES(0x3e, 0, 0, 0, 0xbf, 0x80, 0, 0), 0);
  }
  if (host_has(MPI_REAL4)) expect("MPI_REAL4", MPI_REAL4, r, 1, BYTES(0x3e, 0, 0, 0), 0);
  double dp[2] = {1e300, 0.125};
  if (host_has(MPI_DOUBLE_PRECISION)) {
    expect("MPI_DOUBLE_PRECISION", MPI_DOUBLE_PRECISION, dp, 1, BYTES(0x7e, 0x37, 0xe4, 0x3c, 0x88, 0x00, 0x75, 0x9c), 0);
    expect("MPI_DOUBLE_COMPLEX", MPI_DOUBLE_COMPLEX, dp, 1,
           BYTES(0x7e, 0x37, 0xe4, 0x3c, 0x88, 0x00, 0x75, 0x9c, 0x3f, 0xc0, 0, 0, 0, 0, 0, 0), 0);
    expect("MPI_2DOUBLE_PRECISION", MPI_2DOUBLE_PRECISION, dp, 1,
           BYTES(0x7e, 0x37, 0xe4, 0x3c, 0x88, 0x00, 0x75, 0x9c, 0x3f, 0xc0, 0, 0, 0, 0, 0, 0), 0);
  }
  if (host_has(MPI_REAL8)) expect("MPI_REAL8", MPI_REAL8, dp, 1, BYTES(0x7e, 0x37, 0xe4, 0x3c, 0x88, 0x00, 0x75, 0x9c), 0);
  char c[2] = {'x', 'y'};
  if (host_has(MPI_CHARACTER)) expect("MPI_CHARACTER", MPI_CHARACTER, c, 2, BYTES('x', 'y'), 0);
  /* F90 kinds: external32 sizes from (p, r), the standard's rules */
  MPI_Datatype t;
  MPI_Offset s;
  if (MPI_Type_create_f90_integer(3, &t) == MPI_SUCCESS)
    CHECK(pario_ext32_size(t, &s) == MPI_SUCCESS && s == 2, "f90 integer r=3: 2 bytes (%lld)", (long long)s);
  if (MPI_Type_create_f90_integer(9, &t) == MPI_SUCCESS) {
    CHECK(pario_ext32_size(t, &s) == MPI_SUCCESS && s == 4, "f90 integer r=9: 4 bytes (%lld)", (long long)s);
    int32_t v[1] = {-2};
    expect("f90 integer r=9", t, v, 1, BYTES(0xff, 0xff, 0xff, 0xfe), 0);
  }
  if (MPI_Type_create_f90_real(6, 30, &t) == MPI_SUCCESS)
    CHECK(pario_ext32_size(t, &s) == MPI_SUCCESS && s == 4, "f90 real (6, 30): 4 bytes (%lld)", (long long)s);
  if (MPI_Type_create_f90_real(15, 300, &t) == MPI_SUCCESS) {
    CHECK(pario_ext32_size(t, &s) == MPI_SUCCESS && s == 8, "f90 real (15, 300): 8 bytes (%lld)", (long long)s);
    expect("f90 real (15, 300)", t, dp, 1, BYTES(0x7e, 0x37, 0xe4, 0x3c, 0x88, 0x00, 0x75, 0x9c), 0);
  }
  if (MPI_Type_create_f90_complex(6, 30, &t) == MPI_SUCCESS)
    CHECK(pario_ext32_size(t, &s) == MPI_SUCCESS && s == 8, "f90 complex (6, 30): 8 bytes (%lld)", (long long)s);
  /* p = 18: gfortran's 80-bit REAL(10), 16 native bytes: x87 or binary128 cannot be told */
  if (MPI_Type_create_f90_real(18, 4000, &t) == MPI_SUCCESS) {
    pario_ext32_map *m = NULL;
    int rc = pario_ext32_map_build(t, &m);
    CHECK(rc != MPI_SUCCESS && pario_err_class(rc) == MPI_ERR_UNSUPPORTED_DATAREP,
          "f90 real (18, 4000): unsupported (class %d)", pario_err_class(rc));
    pario_ext32_map_free(m);
  }
}

/* ---- derived types: typed runs and external32 layout ---- */

static int named_type(MPI_Datatype t) {
  int ni, na, nd, comb;
  MPI_Type_get_envelope(t, &ni, &na, &nd, &comb);
  return comb == MPI_COMBINER_NAMED;
}

static pario_ext32_map *map_of(MPI_Datatype t) {
  pario_ext32_map *m = NULL;
  if (!named_type(t)) MPI_Type_commit(&t);
  int rc = pario_ext32_map_build(t, &m);
  CHECK(rc == MPI_SUCCESS, "map build failed (%d)", rc);
  return m;
}

static void layouts(void) {
  MPI_Datatype t;
  pario_ext32_map *m;
  /* vector(3, 2, 4, MPI_DOUBLE): external32 = native */
  MPI_Type_vector(3, 2, 4, MPI_DOUBLE, &t);
  m = map_of(t);
  CHECK(m && m->nruns == 3 && m->esize == 48 && m->elb == 0 && m->eextent == 80 && m->runs[1].eoff == 32 &&
            m->runs[1].noff == 32 && m->runs[2].count == 2,
        "vector of doubles");
  pario_ext32_map_free(m);
  MPI_Type_free(&t);
  /* vector(3, 2, 4, MPI_LONG): strides scale to the 4-byte external long */
  MPI_Type_vector(3, 2, 4, MPI_LONG, &t);
  m = map_of(t);
  CHECK(m && m->esize == 24 && m->eextent == 40 && m->runs[1].eoff == 16 && m->runs[1].noff == 4 * (MPI_Offset)sizeof(long) &&
            m->runs[2].eoff == 32,
        "vector of longs: esize %lld eextent %lld", m ? (long long)m->esize : -1, m ? (long long)m->eextent : -1);
  pario_typemap *tm;
  if (m && pario_ext32_typemap(m, &tm) == MPI_SUCCESS) {
    CHECK(tm->nruns == 3 && tm->runs[1].off == 16 && tm->runs[1].len == 8 && tm->size == 24 && tm->extent == 40 &&
              tm->monotonic && !tm->dense,
          "file-side typemap of the vector of longs");
    pario_typemap_free(tm);
  }
  pario_ext32_map_free(m);
  MPI_Type_free(&t);
  /* struct {int; double; char}: byte displacements taken as they are; no padding at the end */
  struct sidc { int i; double d; char c; };
  int bl[3] = {1, 1, 1};
  MPI_Aint disp[3] = {offsetof(struct sidc, i), offsetof(struct sidc, d), offsetof(struct sidc, c)};
  MPI_Datatype ty[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR};
  MPI_Type_create_struct(3, bl, disp, ty, &t);
  m = map_of(t);
  CHECK(m && m->nruns == 3 && m->esize == 13 && m->elb == 0 && m->eextent == (MPI_Offset)disp[2] + 1 &&
            m->runs[1].eoff == (MPI_Offset)disp[1] && m->runs[2].type == MPI_CHAR,
        "struct {int; double; char}: esize %lld, extent %lld", m ? (long long)m->esize : -1,
        m ? (long long)m->eextent : -1);
  pario_ext32_map_free(m);
  MPI_Type_free(&t);
  /* struct {char; long}: the long's byte displacement stays 8 though it shrank to 4 bytes */
  struct scl { char c; long l; };
  int bl2[2] = {1, 1};
  MPI_Aint disp2[2] = {offsetof(struct scl, c), offsetof(struct scl, l)};
  MPI_Datatype ty2[2] = {MPI_CHAR, MPI_LONG};
  MPI_Type_create_struct(2, bl2, disp2, ty2, &t);
  m = map_of(t);
  CHECK(m && m->nruns == 2 && m->runs[1].eoff == (MPI_Offset)disp2[1] && m->esize == 5 &&
            m->eextent == (MPI_Offset)disp2[1] + 4,
        "struct {char; long}: long at %lld, extent %lld", m ? (long long)m->runs[1].eoff : -1,
        m ? (long long)m->eextent : -1);
  pario_ext32_map_free(m);
  MPI_Type_free(&t);
  /* subarray of longs (C order): offsets in elements scale; bounds are the whole array */
  int sz[2] = {4, 6}, sub[2] = {2, 3}, st[2] = {1, 2};
  MPI_Type_create_subarray(2, sz, sub, st, MPI_ORDER_C, MPI_LONG, &t);
  m = map_of(t);
  CHECK(m && m->nruns == 2 && m->runs[0].eoff == 32 && m->runs[1].eoff == 56 && m->runs[0].count == 3 &&
            m->esize == 24 && m->elb == 0 && m->eextent == 96 && m->nextent == 24 * (MPI_Offset)sizeof(long),
        "subarray of longs");
  pario_ext32_map_free(m);
  MPI_Type_free(&t);
  MPI_Type_create_subarray(2, sz, sub, st, MPI_ORDER_FORTRAN, MPI_INT, &t);
  m = map_of(t); /* Fortran order: sizes 4 fastest; 3 columns of 2 */
  CHECK(m && m->nruns == 3 && m->runs[0].eoff == (2 * 4 + 1) * 4 && m->runs[0].count == 2 && m->eextent == 96,
        "subarray, Fortran order");
  pario_ext32_map_free(m);
  MPI_Type_free(&t);
  /* resized: bounds as given */
  MPI_Type_create_resized(MPI_LONG, -4, 12, &t);
  m = map_of(t);
  CHECK(m && m->elb == -4 && m->eextent == 12 && m->esize == 4, "resized long");
  pario_ext32_map_free(m);
  MPI_Type_free(&t);
  /* hvector of longs: the byte stride is a file stride */
  MPI_Type_create_hvector(2, 1, 16, MPI_LONG, &t);
  m = map_of(t);
  CHECK(m && m->nruns == 2 && m->runs[1].eoff == 16 && m->runs[1].noff == 16 && m->eextent == 20,
        "hvector of longs: extent %lld", m ? (long long)m->eextent : -1);
  pario_ext32_map_free(m);
  MPI_Type_free(&t);
  /* contiguous(3, MPI_DOUBLE_INT): 12-byte items, packed, in external32 */
  MPI_Type_contiguous(3, MPI_DOUBLE_INT, &t);
  m = map_of(t);
  CHECK(m && m->nruns == 6 && m->esize == 36 && m->eextent == 36 && m->runs[2].eoff == 12 && m->runs[2].noff == 16 &&
            m->runs[3].type == MPI_INT,
        "contiguous pairs");
  pario_ext32_map_free(m);
  MPI_Type_free(&t);
  /* contiguous(1000, MPI_DOUBLE): one run; and a named type is one run too */
  MPI_Type_contiguous(1000, MPI_DOUBLE, &t);
  m = map_of(t);
  CHECK(m && m->nruns == 1 && m->runs[0].count == 1000 && m->nstream, "contiguous doubles merge");
  pario_ext32_map_free(m);
  MPI_Type_free(&t);
  /* darray block x cyclic of ints: bounds are the global array's */
  int gs[2] = {10, 7}, ds[2] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC}, da[2] = {MPI_DISTRIBUTE_DFLT_DARG, 2},
      ps[2] = {2, 3};
  MPI_Type_create_darray(6, 4, 2, gs, ds, da, ps, MPI_ORDER_C, MPI_LONG, &t);
  m = map_of(t);
  MPI_Count size;
  MPI_Type_size_x(t, &size);
  CHECK(m && m->eextent == 70 * 4 && m->esize == size / (MPI_Offset)sizeof(long) * 4, "darray of longs");
  pario_ext32_map_free(m);
  MPI_Type_free(&t);
}

/* ---- the host MPI as an oracle ---- */

/* Where the host MPIs are wrong or crash (seen on Open MPI 4.1 and MPICH 4.0, x86-64):
 *  - Open MPI: MPI_Pack_external_size counts 8 bytes per MPI_LONG / MPI_UNSIGNED_LONG while
 *    MPI_Pack_external writes the standard's 4 (OMPI_SIZE: compare bytes, not the size); it
 *    writes long double as x87 bytes, not binary128, and MPI_WCHAR as 4 bytes (OMPI_BAD).
 *  - MPICH: MPI_Pack_external_size / MPI_Pack_external abort or crash for MPI_WCHAR, every
 *    pair type and struct types (issue 20), and swap MPI_COMPLEX / MPI_DOUBLE_COMPLEX as one
 *    8- or 16-byte unit instead of two reals (MPICH_BAD). Its long double is binary128. */
enum { OMPI_SIZE = 1, OMPI_BAD = 2, MPICH_BAD = 4 };
/* Asked of the library at run time: the MPI standard ABI build's header names no implementation. */
static int host_is_mpich(void) {
  char v[MPI_MAX_LIBRARY_VERSION_STRING + 1] = "";
  int len = 0;
  MPI_Get_library_version(v, &len);
  return strstr(v, "MPICH") != NULL;
}
#define HOST_IS_MPICH host_is_mpich()

static int named_type(MPI_Datatype t);

static void host_compare(const char *what, MPI_Datatype t, int flags) {
  pario_ext32_map *m = NULL;
  if (!named_type(t)) MPI_Type_commit(&t);
  int rc = pario_ext32_map_build(t, &m);
  CHECK(rc == MPI_SUCCESS, "%s: map build failed (%d)", what, rc);
  if (rc != MPI_SUCCESS) return;
  if (HOST_IS_MPICH ? (flags & MPICH_BAD) : (flags & OMPI_BAD)) {
    pario_ext32_map_free(m);
    return;
  }
  const int count = 3;
  MPI_Aint hs = -1, mine_size = count * m->esize;
  MPI_Pack_external_size("external32", count, t, &hs);
  if (HOST_IS_MPICH || !(flags & OMPI_SIZE))
    CHECK(hs == mine_size, "%s: packed size %lld, host MPI says %lld", what, (long long)mine_size, (long long)hs);
  /* bytes: MPI_Pack_external of a buffer of varied values */
  MPI_Aint span = (MPI_Aint)(m->nextent * count + 64), room = mine_size * 2 + 64;
  u8 *mem = malloc((size_t)span), *mine = calloc(1, (size_t)room), *host = calloc(1, (size_t)room);
  for (MPI_Aint i = 0; i < span; i++) mem[i] = (u8)(i * 37 + 11);
  for (int k = 0; k < count; k++) /* long doubles finite and normal, bools 0 or 1 */
    for (size_t r = 0; r < m->nruns; r++)
      for (MPI_Offset j = 0; j < m->runs[r].count; j++) {
        u8 *p = mem + k * m->nextent + m->runs[r].noff + j * m->runs[r].isize;
        if (m->runs[r].type == MPI_LONG_DOUBLE) {
          long double v = (1.5L + k + j) * (k & 1 ? -0x1p-300L : 0x1p200L);
          memset(p, 0, 16);
          memcpy(p, &v, 10);
        }
        if (m->runs[r].type == MPI_C_BOOL) *p &= 1;
      }
  pario_ext32_cursor c;
  pario_ext32_cursor_init(&c, m, mem, 0);
  pario_ext32_pack(&c, mine, mine_size);
  MPI_Aint pos = 0;
  rc = MPI_Pack_external("external32", mem, count, t, host, room, &pos);
  CHECK(rc == MPI_SUCCESS && pos == mine_size, "%s: host packed %lld bytes (rc %d), pario %lld", what,
        (long long)pos, rc, (long long)mine_size);
  long bad = -1;
  for (MPI_Aint i = 0; i < mine_size && bad < 0; i++)
    if (mine[i] != host[i]) bad = (long)i;
  CHECK(bad < 0, "%s: byte %ld differs from MPI_Pack_external: %s vs host %s", what, bad,
        hex(mine + (bad > 4 ? bad - 4 : 0), 12), hex(host + (bad > 4 ? bad - 4 : 0), 12));
  free(mem);
  free(mine);
  free(host);
  pario_ext32_map_free(m);
}

static void host_oracle(void) {
  MPI_Datatype t;
  struct { MPI_Datatype t; const char *name; int flags; } basic[] = {
    {MPI_INT, "MPI_INT", 0}, {MPI_DOUBLE, "MPI_DOUBLE", 0}, {MPI_SHORT, "MPI_SHORT", 0},
    {MPI_FLOAT, "MPI_FLOAT", 0}, {MPI_LONG_LONG, "MPI_LONG_LONG", 0}, {MPI_UNSIGNED_SHORT, "MPI_UNSIGNED_SHORT", 0},
    {MPI_UINT64_T, "MPI_UINT64_T", 0}, {MPI_C_BOOL, "MPI_C_BOOL", 0},
    {MPI_LONG, "MPI_LONG", OMPI_SIZE}, {MPI_UNSIGNED_LONG, "MPI_UNSIGNED_LONG", OMPI_SIZE},
    {MPI_LONG_DOUBLE, "MPI_LONG_DOUBLE", OMPI_BAD},
    {MPI_C_COMPLEX, "MPI_C_COMPLEX", 0}, {MPI_C_DOUBLE_COMPLEX, "MPI_C_DOUBLE_COMPLEX", 0},
    {MPI_DOUBLE_INT, "MPI_DOUBLE_INT", MPICH_BAD}, {MPI_FLOAT_INT, "MPI_FLOAT_INT", MPICH_BAD},
    {MPI_SHORT_INT, "MPI_SHORT_INT", MPICH_BAD}, {MPI_2INT, "MPI_2INT", MPICH_BAD},
    {MPI_LONG_INT, "MPI_LONG_INT", MPICH_BAD | OMPI_SIZE},
    {MPI_LONG_DOUBLE_INT, "MPI_LONG_DOUBLE_INT", MPICH_BAD | OMPI_BAD},
  };
  for (size_t i = 0; i < sizeof basic / sizeof basic[0]; i++) host_compare(basic[i].name, basic[i].t, basic[i].flags);
  if (host_has(MPI_COMPLEX)) host_compare("MPI_COMPLEX", MPI_COMPLEX, MPICH_BAD);
  if (host_has(MPI_DOUBLE_COMPLEX)) host_compare("MPI_DOUBLE_COMPLEX", MPI_DOUBLE_COMPLEX, MPICH_BAD);
  if (host_has(MPI_INTEGER)) host_compare("MPI_INTEGER", MPI_INTEGER, 0);
  MPI_Type_vector(3, 2, 4, MPI_DOUBLE, &t);
  host_compare("vector of doubles", t, 0);
  MPI_Type_free(&t);
  MPI_Type_vector(3, 2, 4, MPI_LONG, &t);
  host_compare("vector of longs", t, OMPI_SIZE);
  MPI_Type_free(&t);
  struct sidc { int i; double d; char c; };
  int bl[3] = {1, 1, 1};
  MPI_Aint disp[3] = {offsetof(struct sidc, i), offsetof(struct sidc, d), offsetof(struct sidc, c)};
  MPI_Datatype ty[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR};
  MPI_Type_create_struct(3, bl, disp, ty, &t);
  host_compare("struct {int; double; char}", t, MPICH_BAD);
  MPI_Type_free(&t);
  int sz[2] = {4, 6}, sub[2] = {2, 3}, st[2] = {1, 2};
  MPI_Type_create_subarray(2, sz, sub, st, MPI_ORDER_C, MPI_DOUBLE, &t);
  host_compare("subarray of doubles", t, 0);
  MPI_Type_free(&t);
  MPI_Type_create_subarray(2, sz, sub, st, MPI_ORDER_FORTRAN, MPI_INT, &t);
  host_compare("subarray of ints, Fortran order", t, 0);
  MPI_Type_free(&t);
  MPI_Type_contiguous(2, MPI_DOUBLE_INT, &t);
  host_compare("contiguous double_int", t, MPICH_BAD);
  MPI_Type_free(&t);
  MPI_Datatype rs;
  MPI_Type_create_resized(MPI_LONG_DOUBLE, 0, 32, &rs);
  MPI_Type_contiguous(3, rs, &t);
  host_compare("contiguous resized long doubles", t, OMPI_BAD);
  MPI_Type_free(&t);
  MPI_Type_free(&rs);
}

/* ---- chunked conversion through cursors ---- */

static void cursors(void) {
  /* struct {short; long; double; char[3]; float complex} x 5 copies, in chunks of every size */
  struct rec { short s; long l; double d; char c[3]; float z[2]; } in[5], out[5];
  int bl[5] = {1, 1, 1, 3, 1};
  MPI_Aint disp[5] = {offsetof(struct rec, s), offsetof(struct rec, l), offsetof(struct rec, d),
                      offsetof(struct rec, c), offsetof(struct rec, z)};
  MPI_Datatype ty[5] = {MPI_SHORT, MPI_LONG, MPI_DOUBLE, MPI_CHAR, MPI_C_FLOAT_COMPLEX}, t, r;
  MPI_Type_create_struct(5, bl, disp, ty, &t);
  MPI_Type_create_resized(t, 0, sizeof(struct rec), &r);
  MPI_Type_free(&t);
  pario_ext32_map *m = map_of(r);
  if (!m) return;
  CHECK(m->esize == 2 + 4 + 8 + 3 + 8, "record esize %lld", (long long)m->esize);
  memset(in, 0, sizeof in);
  for (int i = 0; i < 5; i++) {
    in[i].s = (short)(-i - 1), in[i].l = 1000L * i - 7, in[i].d = 0.125 * i - 1e300 * (i == 3);
    in[i].c[0] = 'a', in[i].c[1] = (char)i, in[i].c[2] = 'z', in[i].z[0] = 1.5f * i, in[i].z[1] = -0.25f;
  }
  MPI_Offset total = 5 * m->esize;
  u8 whole[256], chunked[256], via[256];
  if (total <= 0 || total > (MPI_Offset)sizeof whole) {
    pario_ext32_map_free(m);
    return;
  }
  pario_ext32_cursor c;
  pario_ext32_cursor_init(&c, m, in, 0);
  pario_ext32_pack(&c, whole, total);
  CHECK(c.pos == total && c.copy == 5, "cursor at the end");
  /* the first record by hand: short -1, long -7, double 0, "a\0z", (0, -0.25) */
  CHECK(!memcmp(whole, (const u8[]){0xff, 0xff, 0xff, 0xff, 0xff, 0xf9, 0, 0, 0, 0, 0, 0, 0, 0, 'a', 0, 'z', 0, 0, 0, 0,
                                   0xbe, 0x80, 0, 0},
                25),
        "first record: %s", hex(whole, 25));
  for (int chunk = 1; chunk <= 40; chunk++) {
    pario_ext32_cursor_init(&c, m, in, 0);
    for (MPI_Offset p = 0; p < total; p += chunk) pario_ext32_pack(&c, chunked + p, PARIO_MIN(chunk, total - p));
    CHECK(!memcmp(whole, chunked, (size_t)total), "pack in chunks of %d", chunk);
    memset(out, 0x5A, sizeof out);
    pario_ext32_cursor_init(&c, m, out, 0);
    for (MPI_Offset p = 0; p < total; p += chunk) pario_ext32_unpack(&c, whole + p, PARIO_MIN(chunk, total - p));
    int ok = 1;
    for (int i = 0; i < 5; i++)
      ok &= out[i].s == in[i].s && out[i].l == in[i].l && out[i].d == in[i].d && !memcmp(out[i].c, in[i].c, 3) &&
            out[i].z[0] == in[i].z[0] && out[i].z[1] == in[i].z[1];
    CHECK(ok, "unpack in chunks of %d", chunk);
  }
  /* starting anywhere: pack from position p gives the stream's bytes from p */
  for (MPI_Offset p = 0; p < total; p += 3) {
    pario_ext32_cursor_init(&c, m, in, p);
    pario_ext32_pack(&c, via, total - p);
    CHECK(!memcmp(via, whole + p, (size_t)(total - p)), "pack from position %lld", (long long)p);
  }
  /* unpack starting inside an item: the item's first bytes are the ones in memory */
  memcpy(out, in, sizeof in);
  out[1].l = 0x7fff0000L;
  MPI_Offset lpos = m->esize + 2; /* the long of record 1 */
  pario_ext32_cursor_init(&c, m, out, lpos + 2);
  pario_ext32_unpack(&c, whole + lpos + 2, 2);
  CHECK(out[1].l == (0x7fff0000L | (in[1].l & 0xffff)), "unpack from inside a long: %lx", out[1].l);
  /* narrowed values are counted by the cursor */
  if (sizeof(long) > 4) {
    in[2].l = (long)((unsigned long)1 << 32);
    pario_ext32_cursor_init(&c, m, in, 0);
    pario_ext32_pack(&c, chunked, total);
    CHECK(c.narrowed == 1, "cursor counts truncated values (%zu)", c.narrowed);
  }
  pario_ext32_map_free(m);
  MPI_Type_free(&r);

  /* a dense stream: doubles, converted in one sweep whatever the copy count */
  double dv[1000], db[1000];
  for (int i = 0; i < 1000; i++) dv[i] = i * 0.5 - 3;
  m = map_of(MPI_DOUBLE);
  u8 *e = malloc(8000);
  pario_ext32_cursor_init(&c, m, dv, 0);
  pario_ext32_pack(&c, e, 4000);
  pario_ext32_pack(&c, e + 4000, 4000);
  CHECK(!memcmp(e + 8 * 7, (const u8[]){0x3f, 0xe0, 0, 0, 0, 0, 0, 0}, 8), "double 7 = 0.5: %s", hex(e + 56, 8));
  pario_ext32_cursor_init(&c, m, db, 0);
  pario_ext32_unpack(&c, e, 8000);
  CHECK(!memcmp(dv, db, sizeof dv), "dense round trip");
  free(e);
  pario_ext32_map_free(m);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN); /* absent Fortran kinds fail softly */
  MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  sizes();
  integers();
  booleans();
  floats();
  long_doubles();
  bulk();
  pairs();
  fortran();
  layouts();
  host_oracle();
  cursors();
  printf("%d checks, %d failures\n", checks, failures);
  MPI_Finalize();
  return failures != 0;
}
