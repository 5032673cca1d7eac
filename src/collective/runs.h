/* A view's flattened filetype as the view exchange sends it: strided groups {count, offset,
 * length, stride} (a vector or subarray filetype becomes a few groups), or plainly
 * {offset, length} pairs where that is shorter. Pure functions, unit-tested. */
#ifndef PARIO_COLL_RUNS_H
#define PARIO_COLL_RUNS_H

#include <stddef.h>

#include "view/typemap.h"

/* Words of t's encoding (at least 1). */
size_t coll_runs_words(const pario_typemap *t);
/* Encode t into w (coll_runs_words(t) words): a leading 0 (pairs) or 1 (groups), then those. */
void coll_runs_encode(const pario_typemap *t, long long *w);
/* Decode n words into runs[0..nruns): 1 when they make exactly nruns runs, else 0. */
int coll_runs_decode(const long long *w, long long n, pario_run *runs, size_t nruns);

#endif
