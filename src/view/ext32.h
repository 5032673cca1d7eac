/* Inside view/: what external32's scalar conversion (ext32conv.c) gives the typed runs and
 * cursors of derived types (datarep.c). Not for other layers: datarep.h is the interface. */
#ifndef PARIO_VIEW_EXT32_H
#define PARIO_VIEW_EXT32_H

#include <mpi.h>
#include <stddef.h>

#include "view/datarep.h"

#if !defined(__BYTE_ORDER__) || (__BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__ && __BYTE_ORDER__ != __ORDER_BIG_ENDIAN__)
#error "pario: unknown byte order"
#endif
#define HOST_LE (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__)

/* pario_ext32_conv's kinds */
enum { K_COPY, K_INT, K_UINT, K_BOOL, K_FLOAT, K_X87, K_NONE };

/* The MINLOC/MAXLOC pairs: two members, the second at native offset off. */
typedef struct pario_ext32_pair {
  MPI_Datatype type, a, b;
  MPI_Offset off;
  int ok;
} pario_ext32_pair;

/* A basic type's conversion (*pp NULL), or the pair it is (*pp): MPI_SUCCESS,
 * MPI_ERR_UNSUPPORTED_DATAREP (no external32 form here) or MPI_ERR_TYPE. */
int pario_ext32_resolve(MPI_Datatype t, pario_ext32_conv *cv, const pario_ext32_pair **pp);
/* items of one basic type from native (s) to external32 (d), or back (decode): the count of
 * integer values that did not fit the destination's size (the caller says how they end). */
size_t pario_ext32_encode_items(const pario_ext32_conv *cv, const unsigned char *s, unsigned char *d, size_t items);
size_t pario_ext32_decode_items(const pario_ext32_conv *cv, const unsigned char *s, unsigned char *d, size_t items);

#endif
