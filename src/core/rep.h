/* Data representations (MPI-4.1 section 14.5): the process-wide registry of the built-in
 * names and of MPI_Register_datarep's, the file-side layout of a datatype under one of them,
 * and a conversion session that turns a (buf, count, datatype) request into the bytes of the
 * file representation chunk by chunk, through a buffer the caller bounds. "native" and
 * "internal" (pario stores internal as native) have no pario_rep: a NULL rep is native. */
#ifndef PARIO_REP_H
#define PARIO_REP_H

#include <mpi.h>

#include "core/common.h"
#include "view/datarep.h"
#include "view/view.h"

enum { PARIO_REP_EXT32 = 1, PARIO_REP_USER = 2 };

typedef struct pario_rep {
  char name[MPI_MAX_DATAREP_STRING];
  int kind;
  int large; /* registered with MPI_Register_datarep_c: the _c conversion functions */
  MPI_Datarep_conversion_function *rd, *wr;
#ifdef PARIO_HAVE_LARGE_COUNT
  MPI_Datarep_conversion_function_c *rd_c, *wr_c;
#endif
  MPI_Datarep_extent_function *extent;
  void *extra;
} pario_rep;

/* The representation named name: *rep NULL for native and internal. MPI_SUCCESS, or a code
 * of class MPI_ERR_UNSUPPORTED_DATAREP naming it. */
int pario_rep_lookup(const char *name, const pario_rep **rep, const char *op, const char *file);
/* MPI_Register_datarep(_c): a copy of proto enters the registry (never leaves it before the
 * process ends); MPI_ERR_DUP_DATAREP for a name already known, MPI_ERR_ARG for a bad one. */
int pario_rep_register(const pario_rep *proto, const char *op);

/* The layout of type under rep (typed runs with file sizes), cached on the type's typemap tm:
 * valid while the type lives. Errors name the type and the representation. */
int pario_rep_map(const pario_rep *rep, MPI_Datatype type, const pario_typemap *tm,
                  const pario_ext32_map **m, const char *op, const char *file);
/* The file-representation typemap of an etype or filetype (the caller frees it). */
int pario_rep_typemap(const pario_rep *rep, MPI_Datatype type, const pario_typemap *tm,
                      pario_typemap **out, const char *op, const char *file);

/* Bytes of the view's data stream that count copies of type occupy (the view's
 * representation), or an error naming the type when it has no form in it. */
int pario_rep_data_size(const pario_view *v, MPI_Datatype type, const pario_typemap *tm, MPI_Count count,
                        MPI_Offset *n, const char *op, const char *file);
/* The native bytes of the whole items among the first fbytes bytes of the view's data stream
 * of a (count, type) access: what a status reports. fbytes itself for native views. */
MPI_Count pario_rep_native_bytes(const pario_view *v, MPI_Datatype type, MPI_Count count, MPI_Count fbytes);

/* One access's conversion between the user's memory and file-representation bytes. */
typedef struct pario_conv {
  const pario_rep *rep;
  const pario_ext32_map *m;
  void *buf;
  MPI_Datatype type;
  const pario_typemap *tm;
  const char *op, *file;
  pario_ext32_cursor cur;   /* external32 (and user representations without a conversion
                             * function in this direction: bytes copied as they are) */
  MPI_Offset pos;           /* file-representation stream position */
  MPI_Offset item;          /* user: data items done (the conversion function's position) */
  size_t run;               /* user: where item is: run, item in the run */
  MPI_Offset k;
  MPI_Offset maxitem;       /* the largest item in file bytes */
} pario_conv;

/* Start at file-representation stream position pos (0 for a whole access; external32 also
 * anywhere else, for the collective exchange's pieces). */
int pario_conv_init(pario_conv *c, const pario_rep *rep, void *buf, MPI_Datatype type, const pario_typemap *tm,
                    MPI_Offset pos, const char *op, const char *file);
/* Bytes of the next chunk, at most max (and at least one item when max allows): user
 * representations convert whole items only. */
MPI_Offset pario_conv_chunk(const pario_conv *c, MPI_Offset max);
/* Memory -> the next n file bytes (n from pario_conv_chunk); file bytes -> memory: n may stop
 * short of the chunk (end of file), then only whole items are stored. A conversion
 * function's error becomes an error of class MPI_ERR_CONVERSION. */
int pario_conv_pack(pario_conv *c, void *out, MPI_Offset n);
int pario_conv_unpack(pario_conv *c, const void *in, MPI_Offset n);

#endif
