/* The "external32" data representation of the MPI standard (MPI-4.1 section 14.5.2, MPI-3.1
 * 13.5.2): sizes of the predefined datatypes, conversion of their values between native memory
 * and external32 bytes, and the external32 layout of derived datatypes (typed runs), with a
 * cursor that converts a bounded chunk of a data stream at a time.
 *
 * external32, as the standard defines it:
 *  - integers are two's complement, big-endian; C _Bool, C++ bool and Fortran LOGICAL are 0 for
 *    false and nonzero for true (every byte counts); characters are ISO 8859-1 bytes, MPI_WCHAR
 *    is 2 bytes of Unicode (UCS-2: a code point above U+FFFF does not fit);
 *  - floating point values are big-endian IEEE binary32, binary64 and binary128 ("Double
 *    Extended": 16 bytes, 15 exponent bits, bias 16383, 112 fraction bits); complex values are
 *    a pair of them (real, imaginary);
 *  - MPI_PACKED and MPI_BYTE are bytes, never converted;
 *  - every value is byte aligned, so a derived type has no alignment padding in external32.
 * Sizes are the standard's tables ("external32 sizes of predefined/optional/C++ datatypes");
 * MPI_Type_create_f90_{real,complex,integer} types follow its rules on (p, r). The MINLOC/MAXLOC
 * pair types, which the tables do not list, are their two members in order, without padding
 * (MPI_DOUBLE_INT: 8 + 4 = 12 bytes).
 *
 * Policies pario chose where the standard leaves room:
 *  - Integers whose sizes differ (MPI_LONG: 8 native bytes, 4 in external32) are sign or zero
 *    extended when widened and truncated to their least significant bytes when narrowed, which
 *    is the standard's advice to implementors (and what ROMIO and OMPIO do): values in range
 *    convert exactly, a value out of range is not an error. The conversion counts such values
 *    (`narrowed`) so a caller may report them.
 *  - long double on x86 (the x87 80-bit extended format in 16 bytes of memory) is widened to
 *    binary128 exactly: sign and 15-bit exponent are kept (same bias), the 63 fraction bits
 *    after the explicit integer bit become the top of the 112-bit fraction; denormals keep
 *    exponent field 0 (the two formats have the same minimum exponent), a pseudo-denormal
 *    (exponent 0, integer bit set) becomes the normal number it equals, infinities stay
 *    infinities, NaNs keep sign, quiet bit and payload; unnormals and pseudo-infinities
 *    (which no x87 since the 80387 produces or accepts) become a quiet NaN. Reading binary128
 *    into x87 rounds the fraction to 63 bits, to nearest with ties to even (a carry moves to
 *    the next binade, and at the top to infinity); NaN payloads are truncated (a NaN whose
 *    payload would vanish becomes quiet). Where long double is binary128 it is only byte
 *    swapped; any other long double (double-double, or long double == double) has no
 *    conversion here (MPI_ERR_UNSUPPORTED_DATAREP).
 *  - Bool values are normalised: true is written as 1 and read back as 1.
 *
 * Errors are MPI error classes: MPI_ERR_TYPE for a handle that is not a datatype (or, for the
 * per-type functions, not a predefined one), MPI_ERR_UNSUPPORTED_DATAREP for a predefined type
 * with no external32 form on this host (a Fortran type the MPI library did not build, an F90
 * type whose external32 representation the standard leaves undefined, ...); map building
 * returns, for that class, a pario error code whose message names the type. */
#ifndef PARIO_DATAREP_H
#define PARIO_DATAREP_H

#include <mpi.h>
#include <stddef.h>

#include "view/typemap.h"

/* The largest external32 item: MPI_C_LONG_DOUBLE_COMPLEX (2 * 16 bytes). */
#define PARIO_EXT32_MAXITEM 32

/* external32 bytes of one item of a predefined datatype (the pair types included). */
int pario_ext32_size(MPI_Datatype named, MPI_Offset *size);

/* Convert count items of a predefined datatype: native holds them at the type's native
 * extent (MPI_DOUBLE_INT: 16 bytes apart), ext holds them packed (12 bytes apart). native and
 * ext must not overlap. The _ex form adds, when narrowed is not NULL, the number of values
 * that did not fit their destination and were truncated. */
int pario_ext32_encode(MPI_Datatype named, const void *native, void *ext, size_t count);
int pario_ext32_decode(MPI_Datatype named, const void *ext, void *native, size_t count);
int pario_ext32_encode_ex(MPI_Datatype named, const void *native, void *ext, size_t count,
                          size_t *narrowed);

/* How one item of a basic type converts (internal to datarep.c; stored in the runs). */
typedef struct pario_ext32_conv {
  unsigned char kind;  /* copy, signed, unsigned, bool, IEEE float, x87 long double */
  unsigned char nsize; /* native bytes of one scalar */
  unsigned char esize; /* external32 bytes of one scalar */
  unsigned char nper;  /* scalars per item: 2 for complex types, else 1 */
} pario_ext32_conv;

/* A typed run: count items of one basic type, contiguous in memory and in external32. */
typedef struct pario_ext32_run {
  MPI_Offset noff;   /* native byte offset from the origin of the copy */
  MPI_Offset eoff;   /* external32 byte offset from the origin of the copy (file layout) */
  MPI_Offset count;  /* items */
  MPI_Datatype type; /* the basic type: a predefined type (a pair type's member) or F90 type */
  pario_ext32_conv cv;
  unsigned char isize; /* native bytes per item (nsize * nper) */
  unsigned xsize;       /* external32 bytes per item (esize * nper; a sizer's file size) */
} pario_ext32_run;

/* A datatype flattened into typed runs in typemap order, with both of its layouts.
 *
 * The external32 layout is the one the standard's "Datatypes for File Interoperability"
 * describes for an etype or filetype in a non-native representation: each basic item takes
 * its external32 size; displacements the constructors count in extents of the old type
 * (contiguous, vector, indexed, indexed_block, subarray, darray) are scaled to the old type's
 * external32 extent; displacements given in bytes (hvector, hindexed, hindexed_block, struct)
 * and the bounds of MPI_Type_create_resized are taken as they are ("no scaling will be
 * done"); a type's lb and extent come from its constructor with the children's external32
 * bounds, without alignment padding (external32 data is byte aligned). elb and eextent are
 * what MPI_File_get_type_extent answers for an external32 view. The packed data stream
 * (MPI_Pack_external's output for count copies) is the runs' items in order, esize bytes per
 * copy. */
typedef struct pario_ext32_map {
  pario_ext32_run *runs;
  size_t nruns;
  MPI_Offset *ecum;    /* ecum[i] = external32 data bytes before run i (nruns + 1 entries) */
  MPI_Offset nsize;    /* native data bytes of one copy (MPI_Type_size) */
  MPI_Offset esize;    /* external32 data bytes of one copy (MPI_Pack_external_size of 1) */
  MPI_Offset nlb, nextent; /* native bounds (MPI_Type_get_extent) */
  MPI_Offset elb, eextent; /* external32 bounds */
  int nstream;         /* one run filling the native extent: copies form one native stream */
} pario_ext32_map;

/* Build the map of any committed or uncommitted datatype, predefined or derived. Returns
 * MPI_SUCCESS, MPI_ERR_TYPE, MPI_ERR_NO_MEM, or a code of class MPI_ERR_UNSUPPORTED_DATAREP
 * naming the basic type that has no external32 form (compare with pario_err_class). */
int pario_ext32_map_build(MPI_Datatype type, pario_ext32_map **out);

/* The same layout rules with other file sizes for the basic types: size(basic, &bytes, ctx)
 * gives one item's file size (a user-defined representation's extent callback), an error
 * from it fails the build with that code. A basic type external32 cannot convert is kept
 * with its native size (kind copy): the sizer's owner converts, not the cursors. A pair type
 * is its two members, each sized alone. */
typedef struct pario_ext32_sizer {
  int (*size)(MPI_Datatype basic, MPI_Offset *bytes, void *ctx);
  void *ctx;
} pario_ext32_sizer;
int pario_ext32_map_build_sized(MPI_Datatype type, const pario_ext32_sizer *sz, pario_ext32_map **out);
void pario_ext32_map_free(pario_ext32_map *m);

/* A map kept for a key (a user-defined representation) in a list on a typemap. */
typedef struct pario_ext32_keyed {
  const void *key;
  pario_ext32_map *m;
  struct pario_ext32_keyed *next;
} pario_ext32_keyed;

/* The external32 layout as byte runs (offset eoff, length count * xsize), adjacent runs
 * merged, with size esize, lb elb and extent eextent: the file-side typemap of an etype or
 * filetype under an external32 view, for the view arithmetic of view.h. Free it with
 * pario_typemap_free. */
int pario_ext32_typemap(const pario_ext32_map *m, pario_typemap **out);

/* A position in the data stream of consecutive copies of a map's type over a native buffer:
 * byte pos of the external32 stream is item k of run r of copy c. Chunks may end anywhere,
 * in the middle of an item too: pack converts that item again and copies the part asked
 * for; unpack keeps the part received and converts the item once it is whole. */
typedef struct pario_ext32_cursor {
  const pario_ext32_map *m;
  char *buf;          /* native buffer: origin of copy 0 */
  MPI_Offset pos;     /* external32 stream position */
  MPI_Offset copy;    /* current copy (with nstream: always 0, items count on) */
  size_t run;         /* current run */
  MPI_Offset into;    /* external32 bytes done of that run in this copy */
  size_t narrowed;    /* values truncated so far (see the policy above) */
  int npart;          /* unpack: bytes of the current item received so far */
  unsigned char part[PARIO_EXT32_MAXITEM];
} pario_ext32_cursor;

/* Start a cursor at external32 stream position pos (0 <= pos; a map with esize 0 has no
 * stream). An unpack cursor that starts inside an item fills the item's first bytes from
 * the value in memory, so the bytes it receives replace only the rest. */
void pario_ext32_cursor_init(pario_ext32_cursor *c, const pario_ext32_map *m, const void *buf,
                             MPI_Offset pos);
/* Native memory -> the next n external32 bytes of the stream, into out. */
int pario_ext32_pack(pario_ext32_cursor *c, void *out, MPI_Offset n);
/* The next n external32 bytes of the stream, from in -> native memory. */
int pario_ext32_unpack(pario_ext32_cursor *c, const void *in, MPI_Offset n);
/* After unpack stopped inside an item: store that item now, its missing bytes taken from
 * the value in memory (so pieces of one item unpacked by different cursors, in any order,
 * make the whole value). */
int pario_ext32_flush(pario_ext32_cursor *c);

/* Native data bytes and items of the whole items that lie before stream position epos of
 * consecutive copies of the map's type (an item cut at epos is not counted). */
void pario_ext32_locate(const pario_ext32_map *m, MPI_Offset epos, MPI_Offset *native, MPI_Offset *items);

#endif
