/* A view's flattened filetype as the view exchange sends it: strided groups {count, offset,
 * length, stride} (a vector or subarray filetype becomes a few groups), or plainly
 * {offset, length} pairs where that is shorter; and the part of it that one aggregator needs
 * (the runs that meet one range of the tile, coll_part_*), with the view arithmetic on such a
 * part. Pure functions, unit-tested. */
#ifndef PARIO_COLL_RUNS_H
#define PARIO_COLL_RUNS_H

#include <stddef.h>

#include "view/typemap.h"
#include "view/view.h"

/* Words of t's encoding (at least 1). */
size_t coll_runs_words(const pario_typemap *t);
/* Encode t into w (coll_runs_words(t) words): a leading 0 (pairs) or 1 (groups), then those. */
void coll_runs_encode(const pario_typemap *t, long long *w);
/* Decode n words into runs[0..nruns): 1 when they make exactly nruns runs, else 0. */
int coll_runs_decode(const long long *w, long long n, pario_run *runs, size_t nruns);

/* ---- parts of a filetype ---- */

/* A range of a filetype's tile, in the tile's coordinates (offsets from the origin of one
 * copy, as its runs'): the runs that meet [a, b). whole: every run (the view is contiguous,
 * its copies interleave, or the range is the whole tile). */
typedef struct coll_hold {
  long long a, b;
  long long off0; /* the filetype's first run's offset: tile k holds [k extent + off0, ...) */
  int whole;      /* every run */
  int have;       /* 0: nothing held (yet) */
} coll_hold;

/* Whether file bytes of a view of t cannot be cut by tile range: contiguous, no data, or
 * copies that interleave (a run reaching past off0 + extent). */
int coll_part_whole(const pario_typemap *t, int contiguous);
/* The range of the tile that file bytes [lo, hi) (lo < hi) of a view at disp meet: from the
 * copy holding lo; the whole tile when they reach into the next copy. h->off0 and h->whole
 * are the filetype's (set by the caller); sets h->a, h->b (and h->whole when the whole tile is
 * needed). extent > 0. */
void coll_part_need(coll_hold *h, MPI_Offset extent, MPI_Offset disp, MPI_Offset lo, MPI_Offset hi);
/* Whether held covers need (both of the same filetype). */
int coll_part_covers(const coll_hold *held, const coll_hold *need);
/* held grown to cover need too (the smallest range holding both). */
void coll_part_join(coll_hold *held, const coll_hold *need);
/* The runs of t that meet h: [*i0, *i1). */
void coll_part_select(const pario_typemap *t, const coll_hold *h, size_t *i0, size_t *i1);
/* For a view whose map holds part h of a filetype that is not whole (runs: those that meet
 * h; cum absolute, cum[0] the data of a tile before the first of them; size and extent the
 * whole filetype's): pario_view_data_before and pario_fcursor_init, exact for file offsets
 * and data positions inside the range held. Below it coll_part_before may answer more than
 * pario_view_data_before and above it less, but never past an access's own bytes when they
 * are all inside the range (the caller clamps to them). */
MPI_Offset coll_part_before(const pario_view *v, const coll_hold *h, MPI_Offset fileoff);
void coll_part_cursor(pario_fcursor *fc, const pario_view *v, MPI_Offset pos);

#endif
