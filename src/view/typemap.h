/* Flattened datatypes: a typemap reduced to (offset, length) runs in typemap order, adjacent
 * runs merged and zero-length ones dropped. Cached on derived datatypes through an attribute
 * whose delete callback frees it; named types use a table freed at MPI_Finalize. */
#ifndef PARIO_TYPEMAP_H
#define PARIO_TYPEMAP_H

#include <mpi.h>
#include <stddef.h>

#include "view/typewalk.h" /* pario_type_combiner, pario_type_is_named */

typedef struct pario_run {
  MPI_Offset off; /* byte displacement relative to the buffer / tile origin */
  MPI_Offset len; /* bytes */
} pario_run;

typedef struct pario_typemap {
  pario_run *runs;
  size_t nruns;
  MPI_Offset *cum;   /* cum[i] = data bytes before run i (nruns + 1 entries) */
  MPI_Offset size;   /* data bytes (MPI_Type_size) */
  MPI_Offset lb;     /* MPI_Type_get_extent */
  MPI_Offset extent;
  int monotonic;     /* offsets nondecreasing and runs disjoint: legal as a filetype */
  int ordered;       /* run starts nondecreasing (runs may overlap): legal on read-only files */
  int committed;     /* known committed (set once pario_type_committed saw it so) */
  int nonneg;        /* no negative offsets */
  int dense;         /* one run that fills [lb, lb+extent): count copies are one run */
  int refs;          /* datatypes sharing this map (MPI_Type_dup copies the attribute) */
  /* The type's layouts in other data representations, made on first use and freed with the
   * map (view/datarep.h): external32's, and one per user-defined representation it met (a
   * list that only grows; core/rep.c guards it with its lock). */
  struct pario_ext32_map *x32;
  struct pario_ext32_keyed *xuser;
} pario_typemap;

/* The flattened form of a datatype. Returns MPI_SUCCESS or an MPI error class (MPI_ERR_TYPE
 * for an invalid or unsupported datatype). The result stays valid while the type lives. */
int pario_typemap_get(MPI_Datatype type, const pario_typemap **out);

/* Build a fresh typemap (not cached). Exposed for unit tests. */
int pario_typemap_build(MPI_Datatype type, pario_typemap **out);
void pario_typemap_free(pario_typemap *tm);

/* Index of the run holding data byte pos (0 <= pos < size), by binary search over cum. */
size_t pario_typemap_find(const pario_typemap *tm, MPI_Offset pos);

/* 1 when type is committed (named types always are), 0 when not or not a datatype. There
 * is no MPI query for it: MPI_Pack of zero elements, on a private duplicate of
 * MPI_COMM_SELF that returns errors, fails with MPI_ERR_TYPE exactly for uncommitted types
 * on both MPICH and Open MPI. tm is the type's map (pario_typemap_get); a positive answer
 * is kept in it. */
int pario_type_committed(MPI_Datatype type, const pario_typemap *tm);

/* Frees the named types' maps and the cache keyval (at MPI_Finalize; derived types' maps go
 * with their types). */
void pario_typemap_finalize(void);

#endif
