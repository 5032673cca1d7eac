/* external32: the predefined types' table, value conversion, and the typed-run flattening of
 * derived types with their external32 layout (datarep.h says what and why). */
#include "view/datarep.h"
#include "core/common.h"
#include "view/typemap.h"

#include <float.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if !defined(__BYTE_ORDER__) || (__BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__ && __BYTE_ORDER__ != __ORDER_BIG_ENDIAN__)
#error "pario: unknown byte order"
#endif
#define HOST_LE (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__)

/* long double formats this file converts. */
#if LDBL_MANT_DIG == 64 && LDBL_MAX_EXP == 16384 && HOST_LE
#define LD_X87 1
#elif LDBL_MANT_DIG == 113 && LDBL_MAX_EXP == 16384
#define LD_QUAD 1
#endif

enum { K_COPY, K_INT, K_UINT, K_BOOL, K_FLOAT, K_X87, K_NONE };

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

/* The MINLOC/MAXLOC pairs: two members, the second at native offset off. */
typedef struct pair {
  MPI_Datatype type, a, b;
  MPI_Offset off;
  int ok;
} pair;

struct p_si { short a; int b; };
struct p_fi { float a; int b; };
struct p_di { double a; int b; };
struct p_li { long a; int b; };
struct p_ldi { long double a; int b; };

static pair pairs[] = {
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
    pair *p = &pairs[i];
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

static int is_f90(int comb) {
  return comb == MPI_COMBINER_F90_REAL || comb == MPI_COMBINER_F90_COMPLEX ||
         comb == MPI_COMBINER_F90_INTEGER;
}

/* A basic type's conversion, or the pair it is. */
static int resolve(MPI_Datatype t, pario_ext32_conv *cv, const pair **pp) {
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
  if (is_f90(comb)) return f90_conv(t, comb, cv);
  /* another predefined type (MPI_LB, MPI_2COMPLEX, ...) has no external32 form here */
  return comb == MPI_COMBINER_NAMED ? MPI_ERR_UNSUPPORTED_DATAREP : MPI_ERR_TYPE;
}

int pario_ext32_size(MPI_Datatype t, MPI_Offset *size) {
  pario_ext32_conv cv;
  const pair *p;
  int rc = resolve(t, &cv, &p);
  if (rc != MPI_SUCCESS) return rc;
  if (p) {
    pario_ext32_conv a, b;
    const pair *unused;
    resolve(p->a, &a, &unused);
    resolve(p->b, &b, &unused);
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

static size_t int_encode(const unsigned char *s, unsigned char *d, size_t n, int ns, int es, int sgn) {
  size_t bad = 0;
  if (ns == es) {
    swap_n(s, d, n, ns);
  } else if (ns == 8 && es == 4) { /* MPI_LONG on LP64 hosts: fits when the top 33 (signed)
                                     * or 32 (unsigned) bits are all equal to the sign / zero */
    uint64_t bias = sgn ? (uint64_t)1 << 31 : 0;
    for (size_t i = 0; i < n; i++) {
      uint64_t v;
      memcpy(&v, s + 8 * i, 8);
      bad += (v + bias) >> 32 != 0;
      uint32_t w = (uint32_t)v;
      if (HOST_LE) w = __builtin_bswap32(w);
      memcpy(d + 4 * i, &w, 4);
    }
  } else if (word(ns) && es <= 8) {
    for (size_t i = 0; i < n; i++, s += ns, d += es) {
      uint64_t v = load_native(s, ns, sgn);
      bad += !fits(v, es, sgn);
      store_be(d, es, v);
    }
  } else {
    for (size_t i = 0; i < n; i++, s += ns, d += es) bad += (size_t)int_bytes(s, ns, 0, d, es, 1, sgn);
  }
  return bad;
}

static size_t int_decode(const unsigned char *s, unsigned char *d, size_t n, int es, int ns, int sgn) {
  size_t bad = 0;
  if (ns == es) {
    swap_n(s, d, n, ns);
  } else if (ns == 8 && es == 4) {
    for (size_t i = 0; i < n; i++, s += 4, d += 8) {
      uint32_t w;
      memcpy(&w, s, 4);
      if (HOST_LE) w = __builtin_bswap32(w);
      uint64_t v = sgn ? (uint64_t)(int64_t)(int32_t)w : w;
      memcpy(d, &v, 8);
    }
  } else if (word(ns) && es <= 8) {
    for (size_t i = 0; i < n; i++, s += es, d += ns) {
      uint64_t v = load_be(s, es, sgn);
      bad += !fits(v, ns, sgn);
      store_native(d, ns, v);
    }
  } else {
    for (size_t i = 0; i < n; i++, s += es, d += ns) bad += (size_t)int_bytes(s, es, 1, d, ns, 0, sgn);
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

static size_t encode_items(const pario_ext32_conv *cv, const unsigned char *s, unsigned char *d, size_t items) {
  size_t n = items * cv->nper;
  switch (cv->kind) {
    case K_COPY: memcpy(d, s, n * cv->nsize); return 0;
    case K_FLOAT: swap_n(s, d, n, cv->nsize); return 0;
    case K_INT: return int_encode(s, d, n, cv->nsize, cv->esize, 1);
    case K_UINT: return int_encode(s, d, n, cv->nsize, cv->esize, 0);
    case K_BOOL: bool_convert(s, cv->nsize, d, cv->esize, n, 1); return 0;
    case K_X87:
      for (size_t i = 0; i < n; i++) x87_to_quad(s + i * cv->nsize, d + i * 16);
      return 0;
    default: return 0;
  }
}

static size_t decode_items(const pario_ext32_conv *cv, const unsigned char *s, unsigned char *d, size_t items) {
  size_t n = items * cv->nper;
  switch (cv->kind) {
    case K_COPY: memcpy(d, s, n * cv->nsize); return 0;
    case K_FLOAT: swap_n(s, d, n, cv->nsize); return 0;
    case K_INT: return int_decode(s, d, n, cv->esize, cv->nsize, 1);
    case K_UINT: return int_decode(s, d, n, cv->esize, cv->nsize, 0);
    case K_BOOL: bool_convert(s, cv->esize, d, cv->nsize, n, 0); return 0;
    case K_X87:
      for (size_t i = 0; i < n; i++) quad_to_x87(s + i * 16, d + i * cv->nsize);
      return 0;
    default: return 0;
  }
}

static int convert_named(MPI_Datatype t, const void *from, void *to, size_t count, size_t *narrowed, int enc) {
  pario_ext32_conv cv;
  const pair *p;
  int rc = resolve(t, &cv, &p);
  if (rc != MPI_SUCCESS) return rc;
  size_t bad = 0;
  const unsigned char *s = from;
  unsigned char *d = to;
  if (!p) {
    bad = enc ? encode_items(&cv, s, d, count) : decode_items(&cv, s, d, count);
  } else {
    pario_ext32_conv a, b;
    const pair *unused;
    MPI_Aint lb, extent;
    resolve(p->a, &a, &unused);
    resolve(p->b, &b, &unused);
    PMPI_Type_get_extent(t, &lb, &extent);
    size_t ea = (size_t)a.esize * a.nper, eb = (size_t)b.esize * b.nper, nx = (size_t)extent;
    for (size_t i = 0; i < count; i++) {
      if (enc) {
        bad += encode_items(&a, s + i * nx, d + i * (ea + eb), 1);
        bad += encode_items(&b, s + i * nx + p->off, d + i * (ea + eb) + ea, 1);
      } else {
        bad += decode_items(&a, s + i * (ea + eb), d + i * nx, 1);
        bad += decode_items(&b, s + i * (ea + eb) + ea, d + i * nx + p->off, 1);
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

/* ---- derived types: typed runs ---- */

/* One type's runs and bounds while building. */
typedef struct node {
  pario_ext32_run *r;
  size_t n, cap;
  int err;                 /* first error: MPI class, or a pario code for unsupported types */
  int bounded;             /* elo/ehi hold something */
  MPI_Offset elo, ehi;     /* external32 bounds accumulated from the blocks */
  MPI_Offset nlb, nextent; /* native bounds (the MPI library's) */
  MPI_Offset elb, eextent;
  const pario_ext32_sizer *sz; /* file sizes of basic types other than external32's, or NULL */
} node;

static void add_run(node *b, MPI_Offset noff, MPI_Offset eoff, MPI_Offset count, const pario_ext32_run *proto) {
  if (count <= 0 || b->err) return;
  if (b->n) {
    pario_ext32_run *p = &b->r[b->n - 1];
    if (p->type == proto->type && !memcmp(&p->cv, &proto->cv, sizeof p->cv) &&
        p->noff + p->count * p->isize == noff && p->eoff + p->count * p->xsize == eoff) {
      p->count += count;
      return;
    }
  }
  if (b->n == b->cap) {
    size_t cap = b->cap ? 2 * b->cap : 16;
    pario_ext32_run *r = realloc(b->r, cap * sizeof *r);
    if (!r) { b->err = MPI_ERR_NO_MEM; return; }
    b->r = r;
    b->cap = cap;
  }
  pario_ext32_run *r = &b->r[b->n++];
  *r = *proto;
  r->noff = noff;
  r->eoff = eoff;
  r->count = count;
}

/* cnt copies of child c, the first at (nd, ed), the next ones an extent further each. */
static void copies(node *b, const node *c, MPI_Offset nd, MPI_Offset ed, MPI_Offset cnt) {
  if (cnt <= 0 || b->err) return;
  MPI_Offset lo = ed + c->elb + (c->eextent < 0 ? (cnt - 1) * c->eextent : 0);
  MPI_Offset hi = ed + c->elb + c->eextent + (c->eextent > 0 ? (cnt - 1) * c->eextent : 0);
  if (!b->bounded || lo < b->elo) b->elo = lo;
  if (!b->bounded || hi > b->ehi) b->ehi = hi;
  b->bounded = 1;
  if (c->n == 1 && c->r[0].count * c->r[0].isize == c->nextent &&
      c->r[0].count * c->r[0].xsize == c->eextent) { /* copies adjacent in both layouts */
    add_run(b, nd + c->r[0].noff, ed + c->r[0].eoff, cnt * c->r[0].count, &c->r[0]);
    return;
  }
  for (MPI_Offset i = 0; i < cnt && !b->err; i++)
    for (size_t j = 0; j < c->n; j++)
      add_run(b, nd + i * c->nextent + c->r[j].noff, ed + i * c->eextent + c->r[j].eoff, c->r[j].count, &c->r[j]);
}

/* A datatype's constructor arguments in the layout of the MPI-3 constructors (widened), so
 * types from MPI-4 large-count constructors read alike. */
typedef struct args {
  int comb;
  MPI_Offset *I, *A;
  MPI_Datatype *T;
  int nt;
} args;

static void args_free(args *a) {
  for (int i = 0; a->T && i < a->nt; i++) {
    int comb = pario_type_combiner(a->T[i]);
    if (comb != MPI_COMBINER_NAMED && !is_f90(comb)) PMPI_Type_free(&a->T[i]);
  }
  free(a->I);
  free(a->A);
  free(a->T);
}

static int args_get(MPI_Datatype t, args *a) {
  memset(a, 0, sizeof *a);
  MPI_Count ni, na, nc, nd;
  if (pario_type_envelope(t, &ni, &na, &nc, &nd, &a->comb) != MPI_SUCCESS) return MPI_ERR_TYPE;
  if (a->comb == MPI_COMBINER_NAMED || is_f90(a->comb)) return MPI_SUCCESS;
  int *in = malloc(sizeof(int) * (size_t)(ni + 1));
  MPI_Aint *ad = malloc(sizeof(MPI_Aint) * (size_t)(na + 1));
  MPI_Count *c = malloc(sizeof(MPI_Count) * (size_t)(nc + 1));
  a->I = malloc(sizeof(MPI_Offset) * (size_t)(ni + nc + 1));
  a->A = malloc(sizeof(MPI_Offset) * (size_t)(na + nc + 1));
  a->T = malloc(sizeof(MPI_Datatype) * (size_t)(nd + 1));
  int rc = in && ad && c && a->I && a->A && a->T ? MPI_SUCCESS : MPI_ERR_NO_MEM;
  if (rc == MPI_SUCCESS && pario_type_contents(t, ni, na, nc, nd, in, ad, c, a->T) != MPI_SUCCESS)
    rc = MPI_ERR_TYPE;
  if (rc == MPI_SUCCESS) {
    a->nt = (int)nd;
    for (MPI_Count k = 0; k < ni; k++) a->I[k] = in[k];
    for (MPI_Count k = 0; k < na; k++) a->A[k] = ad[k];
  }
  if (rc == MPI_SUCCESS && nc > 0) { /* large-count constructor: counts come in c */
    MPI_Count n0 = c[0], k;
    switch (a->comb) {
      case MPI_COMBINER_HVECTOR: a->I[0] = c[0], a->I[1] = c[1], a->A[0] = c[2]; break;
      case MPI_COMBINER_HINDEXED:
      case MPI_COMBINER_STRUCT:
        for (k = 0; k <= n0; k++) a->I[k] = c[k];
        for (k = 0; k < n0; k++) a->A[k] = c[1 + n0 + k];
        break;
      case MPI_COMBINER_HINDEXED_BLOCK:
        a->I[0] = c[0], a->I[1] = c[1];
        for (k = 0; k < n0; k++) a->A[k] = c[2 + k];
        break;
      case MPI_COMBINER_SUBARRAY: /* ints: ndims, order; counts: sizes, subsizes, starts */
        a->I[0] = in[0];
        for (k = 0; k < nc; k++) a->I[1 + k] = c[k];
        a->I[1 + nc] = in[1];
        break;
      case MPI_COMBINER_DARRAY: { /* ints: size, rank, ndims, distribs, dargs, psizes, order */
        MPI_Count nd3 = in[2];
        for (k = 0; k < nd3; k++) {
          a->I[3 + k] = c[k];
          a->I[3 + nd3 + k] = in[3 + k];
          a->I[3 + 2 * nd3 + k] = in[3 + nd3 + k];
          a->I[3 + 3 * nd3 + k] = in[3 + 2 * nd3 + k];
        }
        a->I[3 + 4 * nd3] = in[3 + 3 * nd3];
        break;
      }
      case MPI_COMBINER_RESIZED: a->A[0] = c[0], a->A[1] = c[1]; break;
      default: /* contiguous, vector, indexed, indexed_block */
        for (k = 0; k < nc; k++) a->I[k] = c[k];
    }
  }
  free(in);
  free(ad);
  free(c);
  return rc;
}

static void walk(MPI_Datatype t, node *b);

/* An unsupported basic type: a code whose message names it. */
static int unsupported(MPI_Datatype t) {
  char name[MPI_MAX_OBJECT_NAME] = "";
  int len = 0;
  PMPI_Type_get_name(t, name, &len);
  return pario_err(MPI_ERR_UNSUPPORTED_DATAREP, "external32", NULL, 0,
                   "datatype %s has no external32 representation", len ? name : "(unnamed)");
}

/* A basic type under a sizer: the file size its callback gives, the native size from the
 * MPI library when external32 has no conversion for it (the sizer's owner converts). */
static int sized_leaf(MPI_Datatype t, const node *b, pario_ext32_conv *cv, unsigned *xsize) {
  MPI_Offset fx = 0;
  int size = 0, rc = b->sz->size(t, &fx, b->sz->ctx);
  if (rc != MPI_SUCCESS) return rc;
  if (fx < 0 || fx > UINT_MAX) return MPI_ERR_CONVERSION;
  if (cv->kind == K_NONE || cv->nsize == 0) {
    if (PMPI_Type_size(t, &size) != MPI_SUCCESS || size <= 0 || size > 255) return MPI_ERR_TYPE;
    *cv = (pario_ext32_conv){K_COPY, (unsigned char)size, (unsigned char)size, 1};
  }
  *xsize = (unsigned)fx;
  return MPI_SUCCESS;
}

static void leaf(MPI_Datatype t, node *b) {
  pario_ext32_conv cv;
  const pair *p;
  memset(&cv, 0, sizeof cv);
  int rc = resolve(t, &cv, &p);
  if (rc == MPI_ERR_UNSUPPORTED_DATAREP && b->sz && !p) rc = MPI_SUCCESS, cv.kind = K_NONE;
  if (rc != MPI_SUCCESS) {
    b->err = rc == MPI_ERR_UNSUPPORTED_DATAREP ? unsupported(t) : rc;
    return;
  }
  pario_ext32_run proto;
  memset(&proto, 0, sizeof proto);
  MPI_Offset eoff = 0;
  for (int m = 0; m < (p ? 2 : 1); m++) {
    MPI_Datatype bt = p ? (m ? p->b : p->a) : t;
    if (p) {
      const pair *unused;
      resolve(bt, &cv, &unused);
    }
    proto.type = bt;
    proto.cv = cv;
    proto.isize = (unsigned char)(cv.nsize * cv.nper);
    proto.xsize = (unsigned)(cv.esize * cv.nper);
    if (b->sz) {
      if ((rc = sized_leaf(bt, b, &proto.cv, &proto.xsize)) != MPI_SUCCESS) {
        b->err = rc;
        return;
      }
      proto.isize = (unsigned char)(proto.cv.nsize * proto.cv.nper);
    }
    add_run(b, p && m ? p->off : 0, eoff, 1, &proto);
    eoff += proto.xsize;
  }
  b->elb = 0;
  b->eextent = eoff;
}

/* Element blocks per dimension of a subarray or darray: block k of dimension d is elements
 * [start[k], start[k] + len[k]) of that dimension. */
typedef struct dims {
  MPI_Offset *start, *len;
  MPI_Offset n;
} dims;

/* Emit the blocks of dimensions d.. (ord[0] slowest) at element index base. */
static void nd_emit(node *b, const node *c, const dims *dm, const int *ord, int nd, const MPI_Offset *stride,
                    int d, MPI_Offset base) {
  const dims *x = &dm[ord[d]];
  for (MPI_Offset k = 0; k < x->n && !b->err; k++) {
    if (d == nd - 1) {
      MPI_Offset i0 = base + x->start[k] * stride[d];
      copies(b, c, i0 * c->nextent, i0 * c->eextent, x->len[k]);
      continue;
    }
    for (MPI_Offset i = 0; i < x->len[k] && !b->err; i++)
      nd_emit(b, c, dm, ord, nd, stride, d + 1, base + (x->start[k] + i) * stride[d]);
  }
}

/* Subarray and darray: blocks over an array of sizes[] elements of c, C or Fortran order;
 * the result's bounds are the array's, scaled to external32. */
static void nd_array(node *b, const node *c, int nd, const MPI_Offset *sizes, const dims *dm, int fortran) {
  int *ord = malloc(sizeof(int) * (size_t)nd);
  MPI_Offset *stride = malloc(sizeof(MPI_Offset) * (size_t)nd);
  if (!ord || !stride) {
    b->err = MPI_ERR_NO_MEM;
  } else {
    MPI_Offset s = 1;
    for (int i = nd - 1; i >= 0; i--) {
      ord[i] = fortran ? nd - 1 - i : i;
      stride[i] = s;
      s *= sizes[ord[i]];
    }
    nd_emit(b, c, dm, ord, nd, stride, 0, 0);
  }
  free(ord);
  free(stride);
}

/* Room for maxn[i] blocks in dimension i (one block each when maxn is NULL). */
static int dims_alloc(dims *dm, int nd, const MPI_Offset *maxn) {
  for (int i = 0; i < nd; i++) {
    size_t room = (size_t)(maxn ? maxn[i] : 1) + 1;
    dm[i].n = 0;
    dm[i].start = malloc(sizeof(MPI_Offset) * room);
    dm[i].len = malloc(sizeof(MPI_Offset) * room);
    if (!dm[i].start || !dm[i].len) return MPI_ERR_NO_MEM;
  }
  return MPI_SUCCESS;
}

static void dims_free(dims *dm, int nd) {
  for (int i = 0; dm && i < nd; i++) {
    free(dm[i].start);
    free(dm[i].len);
  }
  free(dm);
}

static void subarray(node *b, const node *c, const MPI_Offset *I) {
  int nd = (int)I[0];
  const MPI_Offset *sizes = I + 1, *sub = I + 1 + nd, *st = I + 1 + 2 * nd;
  dims *dm = calloc((size_t)nd, sizeof *dm);
  int rc = dm ? dims_alloc(dm, nd, NULL) : MPI_ERR_NO_MEM;
  for (int i = 0; rc == MPI_SUCCESS && i < nd; i++) {
    dm[i].start[0] = st[i];
    dm[i].len[0] = sub[i];
    dm[i].n = 1;
  }
  if (rc == MPI_SUCCESS) nd_array(b, c, nd, sizes, dm, I[1 + 3 * nd] == MPI_ORDER_FORTRAN);
  else b->err = rc;
  dims_free(dm, nd);
}

static void darray(node *b, const node *c, const MPI_Offset *I) {
  int rank = (int)I[1], nd = (int)I[2];
  const MPI_Offset *gs = I + 3, *dist = I + 3 + nd, *darg = I + 3 + 2 * nd, *ps = I + 3 + 3 * nd;
  dims *dm = calloc((size_t)nd, sizeof *dm);
  MPI_Offset *maxn = malloc(sizeof(MPI_Offset) * (size_t)nd), *coord = malloc(sizeof(MPI_Offset) * (size_t)nd);
  int rc = dm && maxn && coord ? MPI_SUCCESS : MPI_ERR_NO_MEM;
  /* process coordinates: the grid is row-major whatever the array order */
  for (int i = nd - 1, r = rank; rc == MPI_SUCCESS && i >= 0; i--) {
    coord[i] = r % ps[i];
    r /= (int)ps[i];
  }
  for (int i = 0; rc == MPI_SUCCESS && i < nd; i++) {
    MPI_Offset bs = darg[i] == MPI_DISTRIBUTE_DFLT_DARG || darg[i] < 1 ? 1 : darg[i];
    maxn[i] = dist[i] == MPI_DISTRIBUTE_CYCLIC ? gs[i] / bs + 1 : 1;
  }
  if (rc == MPI_SUCCESS) rc = dims_alloc(dm, nd, maxn);
  for (int i = 0; rc == MPI_SUCCESS && i < nd; i++) {
    dims *x = &dm[i];
    if (dist[i] == MPI_DISTRIBUTE_NONE) {
      x->start[0] = 0, x->len[0] = gs[i], x->n = 1;
    } else if (dist[i] == MPI_DISTRIBUTE_BLOCK) {
      MPI_Offset bs = darg[i] == MPI_DISTRIBUTE_DFLT_DARG ? (gs[i] + ps[i] - 1) / ps[i] : darg[i];
      MPI_Offset s = coord[i] * bs, e = PARIO_MIN(gs[i], s + bs);
      x->start[0] = s, x->len[0] = e > s ? e - s : 0, x->n = 1;
    } else if (dist[i] == MPI_DISTRIBUTE_CYCLIC) {
      MPI_Offset bs = darg[i] == MPI_DISTRIBUTE_DFLT_DARG ? 1 : darg[i];
      for (MPI_Offset s = coord[i] * bs; s < gs[i]; s += bs * ps[i]) {
        x->start[x->n] = s;
        x->len[x->n++] = PARIO_MIN(bs, gs[i] - s);
      }
    } else {
      rc = MPI_ERR_TYPE;
    }
  }
  if (rc == MPI_SUCCESS) nd_array(b, c, nd, gs, dm, I[3 + 4 * nd] == MPI_ORDER_FORTRAN);
  else b->err = rc;
  free(maxn);
  free(coord);
  dims_free(dm, nd);
}

static void node_free(node *c) { free(c->r); }

static void derived(const args *a, node *b) {
  const MPI_Offset *I = a->I, *A = a->A;
  node c;
  int nchild = a->comb == MPI_COMBINER_STRUCT ? 0 : 1;
  memset(&c, 0, sizeof c);
  c.sz = b->sz;
  if (nchild) {
    walk(a->T[0], &c);
    if (c.err) {
      b->err = c.err;
      node_free(&c);
      return;
    }
  }
  MPI_Offset n = a->comb == MPI_COMBINER_DUP || a->comb == MPI_COMBINER_RESIZED ? 0 : I[0];
  switch (a->comb) {
    case MPI_COMBINER_DUP:
      copies(b, &c, 0, 0, 1);
      break;
    case MPI_COMBINER_RESIZED: /* bounds in bytes, as given */
      copies(b, &c, 0, 0, 1);
      b->bounded = 1, b->elo = A[0], b->ehi = A[0] + A[1];
      break;
    case MPI_COMBINER_CONTIGUOUS:
      copies(b, &c, 0, 0, n);
      break;
    case MPI_COMBINER_VECTOR: /* count, blocklength, stride in extents */
      for (MPI_Offset i = 0; i < n; i++) copies(b, &c, i * I[2] * c.nextent, i * I[2] * c.eextent, I[1]);
      break;
    case MPI_COMBINER_HVECTOR: /* stride in bytes */
      for (MPI_Offset i = 0; i < n; i++) copies(b, &c, i * A[0], i * A[0], I[1]);
      break;
    case MPI_COMBINER_INDEXED: /* count, blocklengths[], displacements[] in extents */
      for (MPI_Offset i = 0; i < n; i++) copies(b, &c, I[1 + n + i] * c.nextent, I[1 + n + i] * c.eextent, I[1 + i]);
      break;
    case MPI_COMBINER_HINDEXED:
      for (MPI_Offset i = 0; i < n; i++) copies(b, &c, A[i], A[i], I[1 + i]);
      break;
    case MPI_COMBINER_INDEXED_BLOCK: /* count, blocklength, displacements[] in extents */
      for (MPI_Offset i = 0; i < n; i++) copies(b, &c, I[2 + i] * c.nextent, I[2 + i] * c.eextent, I[1]);
      break;
    case MPI_COMBINER_HINDEXED_BLOCK:
      for (MPI_Offset i = 0; i < n; i++) copies(b, &c, A[i], A[i], I[1]);
      break;
    case MPI_COMBINER_STRUCT: /* count, blocklengths[] | displacements[] in bytes | types[] */
      for (MPI_Offset i = 0; i < n && !b->err; i++) {
        node s;
        memset(&s, 0, sizeof s);
        s.sz = b->sz;
        walk(a->T[i], &s);
        if (s.err) b->err = s.err;
        else copies(b, &s, A[i], A[i], I[1 + i]);
        node_free(&s);
      }
      break;
    case MPI_COMBINER_SUBARRAY:
      subarray(b, &c, I);
      break;
    case MPI_COMBINER_DARRAY:
      darray(b, &c, I);
      break;
    default:
      b->err = MPI_ERR_TYPE;
  }
  if (!b->err && (a->comb == MPI_COMBINER_SUBARRAY || a->comb == MPI_COMBINER_DARRAY)) {
    /* The array's bounds, a whole number of old-type extents: scale them. */
    if (c.nextent == 0 || b->nlb % c.nextent || b->nextent % c.nextent) {
      b->err = MPI_ERR_TYPE;
    } else {
      b->bounded = 1;
      b->elo = b->nlb / c.nextent * c.eextent;
      b->ehi = b->elo + b->nextent / c.nextent * c.eextent;
    }
  }
  if (a->comb == MPI_COMBINER_DUP) b->bounded = 1, b->elo = c.elb, b->ehi = c.elb + c.eextent;
  b->elb = b->bounded ? b->elo : 0;
  b->eextent = b->bounded ? b->ehi - b->elo : 0;
  node_free(&c);
}

static void walk(MPI_Datatype t, node *b) {
  MPI_Count lb, extent;
  if (PMPI_Type_get_extent_x(t, &lb, &extent) != MPI_SUCCESS) {
    b->err = MPI_ERR_TYPE;
    return;
  }
  b->nlb = lb;
  b->nextent = extent;
  args a;
  int rc = args_get(t, &a);
  if (rc != MPI_SUCCESS) b->err = rc;
  else if (a.comb == MPI_COMBINER_NAMED || is_f90(a.comb)) leaf(t, b);
  else derived(&a, b);
  args_free(&a);
}

void pario_ext32_map_free(pario_ext32_map *m) {
  if (!m) return;
  free(m->runs);
  free(m->ecum);
  free(m);
}

int pario_ext32_map_build(MPI_Datatype type, pario_ext32_map **out) {
  return pario_ext32_map_build_sized(type, NULL, out);
}

int pario_ext32_map_build_sized(MPI_Datatype type, const pario_ext32_sizer *sz, pario_ext32_map **out) {
  node b;
  memset(&b, 0, sizeof b);
  b.sz = sz;
  *out = NULL;
  if (type == MPI_DATATYPE_NULL) return MPI_ERR_TYPE;
  walk(type, &b);
  if (b.err) {
    node_free(&b);
    return b.err;
  }
  pario_ext32_map *m = calloc(1, sizeof *m);
  MPI_Count size;
  if (!m || !(m->ecum = malloc(sizeof(MPI_Offset) * (b.n + 1)))) {
    free(m);
    node_free(&b);
    return MPI_ERR_NO_MEM;
  }
  m->runs = b.r;
  m->nruns = b.n;
  m->ecum[0] = 0;
  for (size_t i = 0; i < b.n; i++) {
    m->ecum[i + 1] = m->ecum[i] + b.r[i].count * b.r[i].xsize;
    m->nsize += b.r[i].count * b.r[i].isize;
  }
  m->esize = m->ecum[b.n];
  m->nlb = b.nlb;
  m->nextent = b.nextent;
  m->elb = b.elb;
  m->eextent = b.eextent;
  m->nstream = b.n == 1 && b.r[0].count * b.r[0].isize == b.nextent;
  PMPI_Type_size_x(type, &size);
  if (m->nsize != size) { /* the walk disagrees with the MPI library: refuse the type */
    pario_ext32_map_free(m);
    return MPI_ERR_TYPE;
  }
  *out = m;
  return MPI_SUCCESS;
}

int pario_ext32_typemap(const pario_ext32_map *m, pario_typemap **out) {
  pario_typemap *tm = calloc(1, sizeof *tm);
  *out = NULL;
  if (!tm || !(tm->runs = malloc(sizeof(pario_run) * (m->nruns + 1))) ||
      !(tm->cum = malloc(sizeof(MPI_Offset) * (m->nruns + 1)))) {
    pario_typemap_free(tm);
    return MPI_ERR_NO_MEM;
  }
  size_t n = 0;
  for (size_t i = 0; i < m->nruns; i++) {
    MPI_Offset off = m->runs[i].eoff, len = m->runs[i].count * m->runs[i].xsize;
    if (n && tm->runs[n - 1].off + tm->runs[n - 1].len == off) {
      tm->runs[n - 1].len += len;
    } else {
      tm->runs[n].off = off;
      tm->runs[n++].len = len;
    }
  }
  tm->nruns = n;
  tm->size = m->esize;
  tm->lb = m->elb;
  tm->extent = m->eextent;
  tm->monotonic = tm->ordered = tm->nonneg = tm->committed = 1;
  tm->cum[0] = 0;
  for (size_t i = 0; i < n; i++) {
    tm->cum[i + 1] = tm->cum[i] + tm->runs[i].len;
    if (tm->runs[i].off < 0) tm->nonneg = 0;
    if (i && tm->runs[i].off < tm->runs[i - 1].off + tm->runs[i - 1].len) tm->monotonic = 0;
    if (i && tm->runs[i].off < tm->runs[i - 1].off) tm->ordered = 0;
  }
  tm->dense = n == 1 && tm->runs[0].off == tm->lb && tm->runs[0].len == tm->extent;
  *out = tm;
  return MPI_SUCCESS;
}

/* ---- cursors ---- */

/* Native address of item k of the current run of the current copy. */
static inline unsigned char *item_at(const pario_ext32_cursor *c, MPI_Offset k) {
  const pario_ext32_run *r = &c->m->runs[c->run];
  return (unsigned char *)c->buf + c->copy * c->m->nextent + r->noff + k * r->isize;
}

/* n items of a run. Runs of a few plain values (same size both sides, byte reversal or copy:
 * most of a struct's members) are converted inline; a call chain per value costs more than
 * the value. */
static inline size_t run_items(const pario_ext32_run *r, const unsigned char *from, unsigned char *to, size_t n,
                               int enc) {
  const pario_ext32_conv *cv = &r->cv;
  size_t ns = n * cv->nper;
  if (HOST_LE && ns <= 4 && cv->nsize <= 8 && !(cv->nsize & (cv->nsize - 1)) && cv->nsize == cv->esize &&
      cv->kind != K_BOOL && cv->kind != K_X87) {
    for (size_t i = 0; i < ns; i++) {
      switch (cv->nsize) {
        case 1: to[i] = from[i]; break;
        case 2: { uint16_t v; memcpy(&v, from + 2 * i, 2); v = __builtin_bswap16(v); memcpy(to + 2 * i, &v, 2); break; }
        case 4: { uint32_t v; memcpy(&v, from + 4 * i, 4); v = __builtin_bswap32(v); memcpy(to + 4 * i, &v, 4); break; }
        default: { uint64_t v; memcpy(&v, from + 8 * i, 8); v = __builtin_bswap64(v); memcpy(to + 8 * i, &v, 8); break; }
      }
    }
    return 0;
  }
  return enc ? encode_items(cv, from, to, n) : decode_items(cv, from, to, n);
}

void pario_ext32_cursor_init(pario_ext32_cursor *c, const pario_ext32_map *m, const void *buf, MPI_Offset pos) {
  memset(c, 0, sizeof *c);
  c->m = m;
  c->buf = (char *)buf;
  c->pos = pos;
  if (m->esize == 0 || m->nruns == 0) return;
  if (m->nstream) { /* one run, copies adjacent: the stream is that run, endless */
    c->into = pos;
  } else {
    c->copy = pos / m->esize;
    MPI_Offset rem = pos % m->esize;
    size_t lo = 0, hi = m->nruns; /* ecum[lo] <= rem < ecum[hi] */
    while (hi - lo > 1) {
      size_t mid = lo + (hi - lo) / 2;
      if (m->ecum[mid] <= rem) lo = mid; else hi = mid;
    }
    c->run = lo;
    c->into = rem - m->ecum[lo];
  }
  const pario_ext32_run *r = &m->runs[c->run];
  c->npart = (int)(c->into % r->xsize);
  if (c->npart) /* mid-item: its first bytes are the value in memory, encoded */
    c->narrowed += run_items(r, item_at(c, c->into / r->xsize), c->part, 1, 1);
}

static void advance(pario_ext32_cursor *c, MPI_Offset n) {
  const pario_ext32_map *m = c->m;
  c->pos += n;
  c->into += n;
  if (!m->nstream && c->into == m->runs[c->run].count * m->runs[c->run].xsize) {
    c->into = 0;
    if (++c->run == m->nruns) {
      c->run = 0;
      c->copy++;
    }
  }
}

static int stream(pario_ext32_cursor *c, unsigned char *ext, MPI_Offset n, int enc) {
  const pario_ext32_map *m = c->m;
  if (n <= 0) return MPI_SUCCESS;
  if (m->esize == 0 || m->nruns == 0) return MPI_ERR_ARG;
  while (n > 0) {
    const pario_ext32_run *r = &m->runs[c->run];
    MPI_Offset xs = r->xsize;
    if (c->into == 0 && !m->nstream && n >= r->count * xs) { /* a whole run: no division */
      MPI_Offset take = r->count * xs;
      if (enc) c->narrowed += run_items(r, item_at(c, 0), ext, (size_t)r->count, 1);
      else c->narrowed += run_items(r, ext, item_at(c, 0), (size_t)r->count, 0);
      ext += take;
      n -= take;
      c->pos += take;
      if (++c->run == m->nruns) {
        c->run = 0;
        c->copy++;
      }
      continue;
    }
    MPI_Offset k = c->into / xs, part = c->into % xs;
    MPI_Offset avail = m->nstream ? n : r->count * xs - c->into;
    MPI_Offset take = PARIO_MIN(avail, n);
    if (part || take < xs) { /* a piece of one item */
      unsigned char tmp[PARIO_EXT32_MAXITEM];
      take = PARIO_MIN(take, xs - part);
      if (enc) {
        c->narrowed += run_items(r, item_at(c, k), tmp, 1, 1);
        memcpy(ext, tmp + part, (size_t)take);
      } else {
        memcpy(c->part + part, ext, (size_t)take);
        if (part + take == xs) c->narrowed += run_items(r, c->part, item_at(c, k), 1, 0);
      }
      c->npart = (int)((part + take) % xs);
    } else {
      MPI_Offset items = take / xs;
      take = items * xs;
      if (enc) c->narrowed += run_items(r, item_at(c, k), ext, (size_t)items, 1);
      else c->narrowed += run_items(r, ext, item_at(c, k), (size_t)items, 0);
    }
    ext += take;
    n -= take;
    advance(c, take);
  }
  return MPI_SUCCESS;
}

int pario_ext32_pack(pario_ext32_cursor *c, void *out, MPI_Offset n) { return stream(c, out, n, 1); }

int pario_ext32_unpack(pario_ext32_cursor *c, const void *in, MPI_Offset n) {
  return stream(c, (unsigned char *)(uintptr_t)in, n, 0);
}

/* A piece that ended inside an item: the item's other bytes are those of the value in memory,
 * encoded, so the item can be stored now and a later piece (another cursor) completes it. */
int pario_ext32_flush(pario_ext32_cursor *c) {
  if (!c->npart || c->m->esize == 0) return MPI_SUCCESS;
  const pario_ext32_run *r = &c->m->runs[c->run];
  unsigned char tmp[PARIO_EXT32_MAXITEM];
  MPI_Offset k = c->into / r->xsize;
  c->narrowed += run_items(r, item_at(c, k), tmp, 1, 1);
  memcpy(c->part + c->npart, tmp + c->npart, r->xsize - (size_t)c->npart);
  c->narrowed += run_items(r, c->part, item_at(c, k), 1, 0);
  return MPI_SUCCESS;
}

void pario_ext32_locate(const pario_ext32_map *m, MPI_Offset epos, MPI_Offset *native, MPI_Offset *items) {
  MPI_Offset nat = 0, it = 0, copy = m->esize ? epos / m->esize : 0, rem = m->esize ? epos % m->esize : 0;
  MPI_Offset per = 0; /* items of one copy */
  for (size_t i = 0; i < m->nruns; i++) per += m->runs[i].count;
  nat = copy * m->nsize;
  it = copy * per;
  for (size_t i = 0; i < m->nruns && rem > 0; i++) {
    const pario_ext32_run *r = &m->runs[i];
    MPI_Offset len = r->count * r->xsize, whole = PARIO_MIN(rem, len) / r->xsize;
    nat += whole * r->isize;
    it += whole;
    rem -= len;
  }
  *native = nat;
  if (items) *items = it;
}
