/* external32's scalars: the predefined types' table (native and external32 sizes, kinds), the
 * MINLOC/MAXLOC pairs and F90 types, and value conversion (byte swapping, integers of other
 * sizes, booleans, x87 long double <-> binary128), count items at a time. The typed runs of
 * derived types and the cursors over them are datarep.c's (datarep.h says what and why). */
#include "view/datarep.h"
#include "core/common.h"
#include "view/ext32.h"
#include "view/typemap.h"

#include <float.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>


/* long double formats this file converts. */
#if LDBL_MANT_DIG == 64 && LDBL_MAX_EXP == 16384 && HOST_LE
#define LD_X87 1
#elif LDBL_MANT_DIG == 113 && LDBL_MAX_EXP == 16384
#define LD_QUAD 1
#endif


/* ---- the predefined types ---- */

typedef struct named {
  MPI_Datatype type;
  unsigned char kind, esize, nper;
  pario_ext32_conv cv; /* filled at init; kind K_NONE: no external32 form here */
} named;

#define N(t, k, e) {t, k, e, 1, {0, 0, 0, 0}}
#define C(t, k, e) {t, k, e, 2, {0, 0, 0, 0}}
#if defined(LD_X87)
#define K_LD K_X87
#elif defined(LD_QUAD)
#define K_LD K_FLOAT
#else
#define K_LD K_NONE
#endif

/* The standard's tables, scalar sizes (a complex type is 2 scalars). */
static named table[] = {
  N(MPI_PACKED, K_COPY, 1), N(MPI_BYTE, K_COPY, 1), N(MPI_CHAR, K_COPY, 1),
  N(MPI_UNSIGNED_CHAR, K_COPY, 1), N(MPI_SIGNED_CHAR, K_COPY, 1), N(MPI_WCHAR, K_UINT, 2),
  N(MPI_SHORT, K_INT, 2), N(MPI_UNSIGNED_SHORT, K_UINT, 2), N(MPI_INT, K_INT, 4),
  N(MPI_UNSIGNED, K_UINT, 4), N(MPI_LONG, K_INT, 4), N(MPI_UNSIGNED_LONG, K_UINT, 4),
  N(MPI_LONG_LONG_INT, K_INT, 8), N(MPI_LONG_LONG, K_INT, 8), N(MPI_UNSIGNED_LONG_LONG, K_UINT, 8),
  N(MPI_FLOAT, K_FLOAT, 4), N(MPI_DOUBLE, K_FLOAT, 8), N(MPI_LONG_DOUBLE, K_LD, 16),
  N(MPI_C_BOOL, K_BOOL, 1), N(MPI_INT8_T, K_COPY, 1), N(MPI_INT16_T, K_INT, 2),
  N(MPI_INT32_T, K_INT, 4), N(MPI_INT64_T, K_INT, 8), N(MPI_UINT8_T, K_COPY, 1),
  N(MPI_UINT16_T, K_UINT, 2), N(MPI_UINT32_T, K_UINT, 4), N(MPI_UINT64_T, K_UINT, 8),
  N(MPI_AINT, K_INT, 8), N(MPI_COUNT, K_INT, 8), N(MPI_OFFSET, K_INT, 8),
  C(MPI_C_COMPLEX, K_FLOAT, 4), C(MPI_C_FLOAT_COMPLEX, K_FLOAT, 4),
  C(MPI_C_DOUBLE_COMPLEX, K_FLOAT, 8), C(MPI_C_LONG_DOUBLE_COMPLEX, K_LD, 16),
  N(MPI_CHARACTER, K_COPY, 1), N(MPI_LOGICAL, K_BOOL, 4), N(MPI_INTEGER, K_INT, 4),
  N(MPI_REAL, K_FLOAT, 4), N(MPI_DOUBLE_PRECISION, K_FLOAT, 8), C(MPI_COMPLEX, K_FLOAT, 4),
  C(MPI_DOUBLE_COMPLEX, K_FLOAT, 8),
#ifdef MPI_CXX_BOOL
  N(MPI_CXX_BOOL, K_BOOL, 1), C(MPI_CXX_FLOAT_COMPLEX, K_FLOAT, 4),
  C(MPI_CXX_DOUBLE_COMPLEX, K_FLOAT, 8), C(MPI_CXX_LONG_DOUBLE_COMPLEX, K_LD, 16),
#endif
  /* optional types */
  N(MPI_INTEGER1, K_COPY, 1), N(MPI_INTEGER2, K_INT, 2), N(MPI_INTEGER4, K_INT, 4),
  N(MPI_INTEGER8, K_INT, 8),
#ifdef MPI_INTEGER16
  N(MPI_INTEGER16, K_INT, 16),
#endif
#ifdef MPI_REAL2
  N(MPI_REAL2, K_FLOAT, 2),
#endif
  N(MPI_REAL4, K_FLOAT, 4), N(MPI_REAL8, K_FLOAT, 8),
  /* REAL*16 is IEEE binary128 with gfortran and ifort, whatever C's long double is. */
  N(MPI_REAL16, K_FLOAT, 16),
#ifdef MPI_COMPLEX4
  C(MPI_COMPLEX4, K_FLOAT, 2),
#endif
  C(MPI_COMPLEX8, K_FLOAT, 4), C(MPI_COMPLEX16, K_FLOAT, 8), C(MPI_COMPLEX32, K_FLOAT, 16),
#ifdef MPI_LOGICAL1 /* MPI-5 optional types */
  N(MPI_LOGICAL1, K_BOOL, 1), N(MPI_LOGICAL2, K_BOOL, 2), N(MPI_LOGICAL4, K_BOOL, 4),
  N(MPI_LOGICAL8, K_BOOL, 8),
#endif
};
#define NTABLE (sizeof table / sizeof table[0])


struct p_si { short a; int b; };
struct p_fi { float a; int b; };
struct p_di { double a; int b; };
struct p_li { long a; int b; };
struct p_ldi { long double a; int b; };

static pario_ext32_pair pairs[] = {
  {MPI_FLOAT_INT, MPI_FLOAT, MPI_INT, offsetof(struct p_fi, b), 0},
  {MPI_DOUBLE_INT, MPI_DOUBLE, MPI_INT, offsetof(struct p_di, b), 0},
  {MPI_LONG_INT, MPI_LONG, MPI_INT, offsetof(struct p_li, b), 0},
  {MPI_SHORT_INT, MPI_SHORT, MPI_INT, offsetof(struct p_si, b), 0},
  {MPI_LONG_DOUBLE_INT, MPI_LONG_DOUBLE, MPI_INT, offsetof(struct p_ldi, b), 0},
  {MPI_2INT, MPI_INT, MPI_INT, sizeof(int), 0},
  {MPI_2INTEGER, MPI_INTEGER, MPI_INTEGER, -1, 0}, /* -1: the first member's native size */
  {MPI_2REAL, MPI_REAL, MPI_REAL, -1, 0},
  {MPI_2DOUBLE_PRECISION, MPI_DOUBLE_PRECISION, MPI_DOUBLE_PRECISION, -1, 0},
};
#define NPAIRS (sizeof pairs / sizeof pairs[0])

static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static const named *find_named(MPI_Datatype t) {
  for (size_t i = 0; i < NTABLE; i++)
    if (table[i].type == t && t != MPI_DATATYPE_NULL) return &table[i];
  return NULL;
}

/* Native sizes come from the MPI library (Fortran types exist only if it was built with a
 * Fortran compiler); a type whose native size does not fit its kind has no conversion. */
static void table_init(void) {
  for (size_t i = 0; i < NTABLE; i++) {
    named *e = &table[i];
    int size = 0;
    e->cv.kind = K_NONE;
    if (e->type == MPI_DATATYPE_NULL || PMPI_Type_size(e->type, &size) != MPI_SUCCESS || size <= 0 ||
        size % e->nper)
      continue;
    int ns = size / e->nper, k = e->kind;
    if ((k == K_COPY || k == K_FLOAT) && ns != e->esize) k = K_NONE;
    if ((k == K_INT || k == K_UINT || k == K_BOOL) && ns > 16) k = K_NONE;
    if (k == K_X87 && ns != (int)sizeof(long double)) k = K_NONE;
    e->cv.kind = (unsigned char)k;
    e->cv.nsize = (unsigned char)ns;
    e->cv.esize = e->esize;
    e->cv.nper = e->nper;
  }
  for (size_t i = 0; i < NPAIRS; i++) {
    pario_ext32_pair *p = &pairs[i];
    const named *a = find_named(p->a), *b = find_named(p->b);
    int size = 0;
    if (p->type == MPI_DATATYPE_NULL || !a || !b || a->cv.kind == K_NONE || b->cv.kind == K_NONE ||
        PMPI_Type_size(p->type, &size) != MPI_SUCCESS || size != a->cv.nsize + b->cv.nsize)
      continue;
    if (p->off < 0) p->off = a->cv.nsize;
    p->ok = 1;
  }
}

/* ---- MPI_Type_create_f90_* types ---- */

static int f90_conv(MPI_Datatype t, int comb, pario_ext32_conv *cv) {
  int ints[2] = {0, 0}, size = 0;
  MPI_Aint addr[1];
  MPI_Datatype types[1];
  int ni = comb == MPI_COMBINER_F90_INTEGER ? 1 : 2;
  if (PMPI_Type_get_contents(t, ni, 0, 0, ints, addr, types) != MPI_SUCCESS ||
      PMPI_Type_size(t, &size) != MPI_SUCCESS)
    return MPI_ERR_TYPE;
  int e;
  if (comb == MPI_COMBINER_F90_INTEGER) {
    int r = ints[0]; /* MPI_UNDEFINED is negative and takes the smallest size */
    e = r > 38 ? 0 : r > 18 ? 16 : r > 9 ? 8 : r > 4 ? 4 : r > 2 ? 2 : 1;
    if (!e || size > 16) return MPI_ERR_UNSUPPORTED_DATAREP;
    *cv = (pario_ext32_conv){K_INT, (unsigned char)size, (unsigned char)e, 1};
    return MPI_SUCCESS;
  }
  int p = ints[0], r = ints[1], nper = comb == MPI_COMBINER_F90_COMPLEX ? 2 : 1;
  e = p > 33 || r > 4931 ? 0 : p > 15 || r > 307 ? 16 : p > 6 || r > 37 ? 8 : 4;
  /* A native 16-byte real may be binary128 or x87 extended: (p, r) does not tell, so only
   * binary32 and binary64 reals of their own size convert. */
  if (!e || e == 16 || size != e * nper) return MPI_ERR_UNSUPPORTED_DATAREP;
  *cv = (pario_ext32_conv){K_FLOAT, (unsigned char)e, (unsigned char)e, (unsigned char)nper};
  return MPI_SUCCESS;
}

/* Whether a combiner is one of MPI_Type_create_f90_*'s. */
static int ext32_is_f90(int comb) {
  return comb == MPI_COMBINER_F90_REAL || comb == MPI_COMBINER_F90_COMPLEX ||
         comb == MPI_COMBINER_F90_INTEGER;
}

/* A basic type's conversion, or the pair it is. */
int pario_ext32_resolve(MPI_Datatype t, pario_ext32_conv *cv, const pario_ext32_pair **pp) {
  *pp = NULL;
  if (t == MPI_DATATYPE_NULL) return MPI_ERR_TYPE;
  pthread_once(&table_once, table_init);
  const named *e = find_named(t);
  if (e) {
    *cv = e->cv;
    return e->cv.kind == K_NONE ? MPI_ERR_UNSUPPORTED_DATAREP : MPI_SUCCESS;
  }
  for (size_t i = 0; i < NPAIRS; i++)
    if (pairs[i].type == t) {
      *pp = &pairs[i];
      return pairs[i].ok ? MPI_SUCCESS : MPI_ERR_UNSUPPORTED_DATAREP;
    }
  int comb = pario_type_combiner(t);
  if (ext32_is_f90(comb)) return f90_conv(t, comb, cv);
  /* another predefined type (MPI_LB, MPI_2COMPLEX, ...) has no external32 form here */
  return comb == MPI_COMBINER_NAMED ? MPI_ERR_UNSUPPORTED_DATAREP : MPI_ERR_TYPE;
}

int pario_ext32_size(MPI_Datatype t, MPI_Offset *size) {
  pario_ext32_conv cv;
  const pario_ext32_pair *p;
  int rc = pario_ext32_resolve(t, &cv, &p);
  if (rc != MPI_SUCCESS) return rc;
  if (p) {
    pario_ext32_conv a, b;
    const pario_ext32_pair *unused;
    pario_ext32_resolve(p->a, &a, &unused);
    pario_ext32_resolve(p->b, &b, &unused);
    *size = (MPI_Offset)a.esize * a.nper + (MPI_Offset)b.esize * b.nper;
  } else {
    *size = (MPI_Offset)cv.esize * cv.nper;
  }
  return MPI_SUCCESS;
}

/* ---- byte swapping ---- */

/* Plain loops: load, bswap, store per value (about one value per cycle). */
#define SWAP_LOOP(name, T, BSWAP)                                                  \
  static void name(const unsigned char *s, unsigned char *d, size_t n) {           \
    for (size_t i = 0; i < n; i++) {                                               \
      T v;                                                                         \
      memcpy(&v, s + i * sizeof(T), sizeof v);                                     \
      v = BSWAP(v);                                                                \
      memcpy(d + i * sizeof(T), &v, sizeof v);                                     \
    }                                                                              \
  }
SWAP_LOOP(swap2, uint16_t, __builtin_bswap16)
SWAP_LOOP(swap4, uint32_t, __builtin_bswap32)
SWAP_LOOP(swap8, uint64_t, __builtin_bswap64)

static void swap16(const unsigned char *s, unsigned char *d, size_t n) {
  for (size_t i = 0; i < n; i++, s += 16, d += 16) {
    uint64_t lo, hi;
    memcpy(&lo, s, 8);
    memcpy(&hi, s + 8, 8);
    lo = __builtin_bswap64(lo);
    hi = __builtin_bswap64(hi);
    memcpy(d, &hi, 8);
    memcpy(d + 8, &lo, 8);
  }
}

/* On x86-64 CPUs with AVX2 (checked once at run time; the rest of pario is built for the
 * x86-64 baseline) 32 bytes go through one vpshufb: the masks reverse the bytes of each
 * 2-, 4-, 8- or 16-byte value, within 128-bit lanes as vpshufb wants. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(PARIO_NO_AVX2)
#define HAVE_AVX2_SWAP 1
typedef unsigned char v32u8 __attribute__((vector_size(32)));
#define R2(b) b + 1, b
#define R4(b) b + 3, b + 2, b + 1, b
#define R8(b) b + 7, b + 6, b + 5, b + 4, b + 3, b + 2, b + 1, b
#define R16(b) R8(b + 8), R8(b)
#define SWAP_AVX2(size, ...)                                                      \
  case size: {                                                                     \
    const v32u8 m = {__VA_ARGS__};                                                 \
    for (; i + 32 <= nbytes; i += 32) {                                            \
      v32u8 x;                                                                     \
      memcpy(&x, s + i, 32);                                                       \
      x = __builtin_shuffle(x, m);                                                 \
      memcpy(d + i, &x, 32);                                                       \
    }                                                                              \
    break;                                                                         \
  }
/* Swaps the whole 32-byte blocks of nbytes; returns the bytes done. */
__attribute__((target("avx2"))) static size_t swap_avx2(const unsigned char *s, unsigned char *d, size_t nbytes,
                                                        int size) {
  size_t i = 0;
  switch (size) {
    SWAP_AVX2(2, R2(0), R2(2), R2(4), R2(6), R2(8), R2(10), R2(12), R2(14), R2(16), R2(18), R2(20), R2(22),
              R2(24), R2(26), R2(28), R2(30))
    SWAP_AVX2(4, R4(0), R4(4), R4(8), R4(12), R4(16), R4(20), R4(24), R4(28))
    SWAP_AVX2(8, R8(0), R8(8), R8(16), R8(24))
    SWAP_AVX2(16, R16(0), R16(16))
    default: break;
  }
  return i;
}

static int have_avx2(void) {
  static int known = -1; /* a benign race: every thread computes the same answer */
  int h = __atomic_load_n(&known, __ATOMIC_RELAXED);
  if (h < 0) {
    __builtin_cpu_init();
    h = __builtin_cpu_supports("avx2") ? 1 : 0;
    __atomic_store_n(&known, h, __ATOMIC_RELAXED);
  }
  return h;
}
#endif

/* n scalars of size bytes between native and big-endian order (either way: its own inverse). */
static void swap_n(const unsigned char *s, unsigned char *d, size_t n, int size) {
  if (!HOST_LE || size == 1) {
    memcpy(d, s, n * (size_t)size);
    return;
  }
#ifdef HAVE_AVX2_SWAP
  if (n * (size_t)size >= 64 && have_avx2()) {
    size_t done = swap_avx2(s, d, n * (size_t)size, size);
    s += done, d += done, n -= done / (size_t)size;
  }
#endif
  switch (size) {
    case 2: swap2(s, d, n); break;
    case 4: swap4(s, d, n); break;
    case 8: swap8(s, d, n); break;
    default: swap16(s, d, n); break;
  }
}

/* ---- integers whose sizes differ ---- */

/* Byte k (0 = least significant) of a size-byte integer in native or big-endian order. */
#define NBYTE(p, size, k) ((p)[HOST_LE ? (k) : (size) - 1 - (k)])
#define BBYTE(p, size, k) ((p)[(size) - 1 - (k)])

/* Values of 1, 2, 4 or 8 bytes through a 64-bit register. */
static inline int word(int size) { return size == 1 || size == 2 || size == 4 || size == 8; }

static inline uint64_t load_native(const unsigned char *p, int size, int sgn) {
  switch (size) {
    case 1: return sgn ? (uint64_t)(int64_t)(int8_t)p[0] : p[0];
    case 2: { uint16_t v; memcpy(&v, p, 2); return sgn ? (uint64_t)(int64_t)(int16_t)v : v; }
    case 4: { uint32_t v; memcpy(&v, p, 4); return sgn ? (uint64_t)(int64_t)(int32_t)v : v; }
    default: { uint64_t v; memcpy(&v, p, 8); return v; }
  }
}

static inline void store_native(unsigned char *p, int size, uint64_t v) {
  switch (size) {
    case 1: p[0] = (unsigned char)v; break;
    case 2: { uint16_t w = (uint16_t)v; memcpy(p, &w, 2); break; }
    case 4: { uint32_t w = (uint32_t)v; memcpy(p, &w, 4); break; }
    default: memcpy(p, &v, 8); break;
  }
}

static inline uint64_t load_be(const unsigned char *p, int size, int sgn) {
  uint64_t v = 0;
  for (int k = 0; k < size; k++) v = v << 8 | p[k];
  if (sgn && size < 8 && (p[0] & 0x80)) v |= ~(uint64_t)0 << (8 * size);
  return v;
}

static inline void store_be(unsigned char *p, int size, uint64_t v) {
  for (int k = size - 1; k >= 0; k--, v >>= 8) p[k] = (unsigned char)v;
}

/* Does the 64-bit value v (sign extended when sgn) fit in size bytes? */
static inline int fits(uint64_t v, int size, int sgn) {
  if (size >= 8) return 1;
  int bits = 8 * size;
  if (sgn) {
    int64_t s = (int64_t)v, lim = (int64_t)1 << (bits - 1);
    return s >= -lim && s < lim;
  }
  return (v >> bits) == 0;
}

/* Any sizes up to 16 bytes, byte by byte: from (src, ss, src_be) to (dst, ds, dst_be).
 * Returns 1 when the value did not fit. */
static int int_bytes(const unsigned char *src, int ss, int src_be, unsigned char *dst, int ds, int dst_be,
                     int sgn) {
#define SB(k) (src_be ? BBYTE(src, ss, k) : NBYTE(src, ss, k))
  unsigned char fill = sgn && (SB(ss - 1) & 0x80) ? 0xFF : 0;
  for (int k = 0; k < ds; k++) {
    unsigned char b = k < ss ? SB(k) : fill;
    if (dst_be) BBYTE(dst, ds, k) = b; else NBYTE(dst, ds, k) = b;
  }
  if (ds >= ss) return 0;
  unsigned char top = sgn && (SB(ds - 1) & 0x80) ? 0xFF : 0;
  for (int k = ds; k < ss; k++)
    if (SB(k) != top) return 1;
  return 0;
#undef SB
}

/* n integers of ss bytes at s to ds bytes each at d: native to big-endian (to_be) or back.
 * Returns how many values did not fit. Inlined with to_be constant: a loop per direction. */
static inline __attribute__((always_inline)) size_t int_convert(const unsigned char *s, int ss, unsigned char *d,
                                                                int ds, size_t n, int sgn, int to_be) {
  size_t bad = 0;
  int ns = to_be ? ss : ds, es = to_be ? ds : ss;
  if (ns == es) {
    swap_n(s, d, n, ns);
  } else if (to_be && ns == 8 && es == 4) { /* MPI_LONG on LP64 hosts: fits when the top 33
                                              * (signed) or 32 (unsigned) bits equal the sign */
    uint64_t bias = sgn ? (uint64_t)1 << 31 : 0;
    for (size_t i = 0; i < n; i++) {
      uint64_t v;
      memcpy(&v, s + 8 * i, 8);
      bad += (v + bias) >> 32 != 0;
      uint32_t w = (uint32_t)v;
      if (HOST_LE) w = __builtin_bswap32(w);
      memcpy(d + 4 * i, &w, 4);
    }
  } else if (!to_be && ns == 8 && es == 4) { /* and back: always fits */
    for (size_t i = 0; i < n; i++, s += 4, d += 8) {
      uint32_t w;
      memcpy(&w, s, 4);
      if (HOST_LE) w = __builtin_bswap32(w);
      uint64_t v = sgn ? (uint64_t)(int64_t)(int32_t)w : w;
      memcpy(d, &v, 8);
    }
  } else if (word(ns) && es <= 8) {
    for (size_t i = 0; i < n; i++, s += ss, d += ds) {
      uint64_t v = to_be ? load_native(s, ss, sgn) : load_be(s, ss, sgn);
      bad += !fits(v, ds, sgn);
      if (to_be) store_be(d, ds, v); else store_native(d, ds, v);
    }
  } else {
    for (size_t i = 0; i < n; i++, s += ss, d += ds) bad += (size_t)int_bytes(s, ss, !to_be, d, ds, to_be, sgn);
  }
  return bad;
}

/* Bool: every byte counts; true is 1. */
static void bool_convert(const unsigned char *s, int ss, unsigned char *d, int ds, size_t n, int to_be) {
  for (size_t i = 0; i < n; i++, s += ss, d += ds) {
    unsigned char any = 0;
    for (int k = 0; k < ss; k++) any |= s[k];
    memset(d, 0, (size_t)ds);
    if (any) {
      if (to_be) BBYTE(d, ds, 0) = 1; else NBYTE(d, ds, 0) = 1;
    }
  }
}

/* ---- x87 extended <-> binary128 ---- */

#define QNAN_HI ((uint64_t)1 << 47) /* the quiet bit: top fraction bit of binary128 */

/* x87: 64-bit significand with explicit integer bit 63, then 16 bits of sign and exponent. */
static void x87_to_quad(const unsigned char *s, unsigned char *d) {
  uint64_t m;
  uint16_t se;
  memcpy(&m, s, 8);
  memcpy(&se, s + 8, 2);
  uint64_t sign = (uint64_t)(se >> 15), e = se & 0x7fff, f = m & ~((uint64_t)1 << 63);
  int ibit = (int)(m >> 63);
  uint64_t hi, lo;
  if (e == 0x7fff) {            /* infinity or NaN */
    if (ibit && f == 0) {
      hi = 0, lo = 0;
    } else {
      hi = f >> 15, lo = f << 49;
      if (!ibit || (hi | lo) == 0) hi |= QNAN_HI; /* pseudo-NaN / pseudo-infinity */
    }
  } else if (e == 0) {          /* zero, denormal, pseudo-denormal (integer bit set) */
    hi = f >> 15, lo = f << 49;
    if (ibit) e = 1;
  } else if (!ibit) {           /* unnormal */
    e = 0x7fff, hi = QNAN_HI, lo = 0;
  } else {
    hi = f >> 15, lo = f << 49;
  }
  hi |= sign << 63 | e << 48;
  hi = __builtin_bswap64(hi);
  lo = __builtin_bswap64(lo);
  memcpy(d, &hi, 8);
  memcpy(d + 8, &lo, 8);
}

static void quad_to_x87(const unsigned char *s, unsigned char *d) {
  uint64_t hi, lo;
  memcpy(&hi, s, 8);
  memcpy(&lo, s + 8, 8);
  hi = __builtin_bswap64(hi);
  lo = __builtin_bswap64(lo);
  uint64_t sign = hi >> 63, e = (hi >> 48) & 0x7fff, fh = hi & (((uint64_t)1 << 48) - 1);
  uint64_t m;
  if (e == 0x7fff) {
    uint64_t f = fh << 15 | lo >> 49;
    if ((fh | lo) == 0) m = (uint64_t)1 << 63;               /* infinity */
    else m = (uint64_t)1 << 63 | (f ? f : (uint64_t)1 << 62); /* NaN, payload truncated */
  } else if (e == 0 && (fh | lo) == 0) {
    m = 0;
  } else {
    /* The top 64 bits of the 113-bit significand (integer bit 0 for a denormal), rounded to
     * nearest, ties to even, on the 49 bits dropped. */
    m = (e ? (uint64_t)1 << 63 : 0) | fh << 15 | lo >> 49;
    uint64_t rest = lo & (((uint64_t)1 << 49) - 1), half = (uint64_t)1 << 48;
    if (rest > half || (rest == half && (m & 1))) {
      if (++m == 0) {           /* carried out of the significand: next binade */
        m = (uint64_t)1 << 63;
        e++;                     /* 0x7fff: infinity, whose significand is exactly this */
      } else if (e == 0 && (m >> 63)) {
        e = 1;                   /* a denormal rounded up to the smallest normal */
      }
    }
  }
  uint16_t se = (uint16_t)(sign << 15 | e);
  memcpy(d, &m, 8);
  memcpy(d + 8, &se, 2);
  memset(d + 10, 0, sizeof(long double) - 10);
}

/* ---- count items of one basic type ---- */

/* count items: native to external32 (enc) or back (inlined: enc is constant). */
static inline __attribute__((always_inline)) size_t items_convert(const pario_ext32_conv *cv, const unsigned char *s,
                                                                  unsigned char *d, size_t items, int enc) {
  size_t n = items * cv->nper;
  int ss = enc ? cv->nsize : cv->esize, ds = enc ? cv->esize : cv->nsize;
  switch (cv->kind) {
    case K_COPY: memcpy(d, s, n * cv->nsize); return 0;
    case K_FLOAT: swap_n(s, d, n, cv->nsize); return 0;
    case K_INT: return int_convert(s, ss, d, ds, n, 1, enc);
    case K_UINT: return int_convert(s, ss, d, ds, n, 0, enc);
    case K_BOOL: bool_convert(s, ss, d, ds, n, enc); return 0;
    case K_X87:
      for (size_t i = 0; i < n; i++) {
        if (enc) x87_to_quad(s + i * (size_t)ss, d + i * (size_t)ds);
        else quad_to_x87(s + i * (size_t)ss, d + i * (size_t)ds);
      }
      return 0;
    default: return 0;
  }
}

size_t pario_ext32_encode_items(const pario_ext32_conv *cv, const unsigned char *s, unsigned char *d, size_t items) {
  return items_convert(cv, s, d, items, 1);
}

size_t pario_ext32_decode_items(const pario_ext32_conv *cv, const unsigned char *s, unsigned char *d, size_t items) {
  return items_convert(cv, s, d, items, 0);
}

static int convert_named(MPI_Datatype t, const void *from, void *to, size_t count, size_t *narrowed, int enc) {
  pario_ext32_conv cv;
  const pario_ext32_pair *p;
  int rc = pario_ext32_resolve(t, &cv, &p);
  if (rc != MPI_SUCCESS) return rc;
  size_t bad = 0;
  const unsigned char *s = from;
  unsigned char *d = to;
  if (!p) {
    bad = enc ? pario_ext32_encode_items(&cv, s, d, count) : pario_ext32_decode_items(&cv, s, d, count);
  } else {
    pario_ext32_conv a, b;
    const pario_ext32_pair *unused;
    MPI_Aint lb, extent;
    pario_ext32_resolve(p->a, &a, &unused);
    pario_ext32_resolve(p->b, &b, &unused);
    PMPI_Type_get_extent(t, &lb, &extent);
    size_t ea = (size_t)a.esize * a.nper, eb = (size_t)b.esize * b.nper, nx = (size_t)extent;
    for (size_t i = 0; i < count; i++) {
      if (enc) {
        bad += pario_ext32_encode_items(&a, s + i * nx, d + i * (ea + eb), 1);
        bad += pario_ext32_encode_items(&b, s + i * nx + p->off, d + i * (ea + eb) + ea, 1);
      } else {
        bad += pario_ext32_decode_items(&a, s + i * (ea + eb), d + i * nx, 1);
        bad += pario_ext32_decode_items(&b, s + i * (ea + eb) + ea, d + i * nx + p->off, 1);
      }
    }
  }
  if (narrowed) *narrowed += bad;
  return MPI_SUCCESS;
}

int pario_ext32_encode_ex(MPI_Datatype t, const void *native, void *ext, size_t count, size_t *narrowed) {
  return convert_named(t, native, ext, count, narrowed, 1);
}
int pario_ext32_encode(MPI_Datatype t, const void *native, void *ext, size_t count) {
  return convert_named(t, native, ext, count, NULL, 1);
}
int pario_ext32_decode(MPI_Datatype t, const void *ext, void *native, size_t count) {
  return convert_named(t, ext, native, count, NULL, 0);
}
