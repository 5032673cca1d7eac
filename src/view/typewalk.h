/* The one decoder of derived datatypes: a type's constructor and arguments (envelope and
 * contents queries), and the blocks its typemap is made of, each constructor's rule (vector,
 * indexed, struct, subarray, darray, resized, ...) written once. typemap.c builds the native
 * byte runs on it, datarep.c the typed runs of the external32 and user-defined layouts. */
#ifndef PARIO_VIEW_TYPEWALK_H
#define PARIO_VIEW_TYPEWALK_H

#include <mpi.h>

/* The combiner of a datatype (MPI_COMBINER_NAMED for predefined types), or -1 when the
 * handle is not a valid datatype. Works for large-count datatypes on MPI-4 hosts. */
int pario_type_combiner(MPI_Datatype type);
/* 1 for predefined (named) types, which are never freed or duplicated. */
int pario_type_is_named(MPI_Datatype type);
/* 1 for the combiners of the types with no parts to decode: named types and the
 * MPI_Type_create_f90_* types (predefined too: never freed). */
int pario_comb_is_leaf(int comb);

/* A datatype's constructor arguments in the layout of the MPI-3 (int) constructors, with
 * every integer widened, so types built with MPI-4 large-count constructors decode alike.
 * A leaf (pario_comb_is_leaf) has only comb. */
typedef struct pario_decoded {
  int comb, ni, na, nd;
  MPI_Offset *ints;
  MPI_Offset *addrs;
  MPI_Datatype *types; /* the constructor's old types (nd): freed by pario_decoded_free */
} pario_decoded;

/* MPI_SUCCESS, MPI_ERR_TYPE (not a datatype, or the queries failed) or MPI_ERR_NO_MEM;
 * pario_decoded_free is due whatever the result. */
int pario_type_decode(MPI_Datatype t, pario_decoded *d);
void pario_decoded_free(pario_decoded *d);

/* One block of a derived type's typemap: count consecutive copies of the old type
 * types[child] (each one extent of it after the one before), the first at units extents of
 * that old type plus bytes bytes from the type's origin. Constructors that count
 * displacements in extents of the old type (contiguous, vector, indexed, indexed_block,
 * subarray, darray) give units; those that give bytes (hvector, hindexed, hindexed_block,
 * struct) give bytes; dup and resized are one copy at 0. A consumer scales units by its own
 * extent of the old type: native for typemaps, external32's for the file layouts. */
typedef struct pario_block {
  int child;
  MPI_Offset units, bytes, count;
} pario_block;

/* Calls fn on every block of a decoded derived type, in typemap order, blocks of zero copies
 * too (a struct's every member is visited). Stops at the first nonzero return of fn and
 * returns it; else MPI_SUCCESS, or MPI_ERR_TYPE for a combiner or distribution it does not
 * know, MPI_ERR_NO_MEM. */
typedef int (*pario_block_fn)(const pario_block *blk, void *ctx);
int pario_type_blocks(const pario_decoded *d, pario_block_fn fn, void *ctx);

#endif
