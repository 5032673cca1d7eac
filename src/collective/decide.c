/* Whether a collective call aggregates or lets every rank access on its own, and why. Every
 * rank decides from the same data (the hints every rank adopted from rank 0, and every rank's
 * access from the call's allgather), so every rank reaches the same decision. */
#include "collective/plan.h"

#include <stdint.h>
#include <stdlib.h>

#include "core/common.h"
#include "core/hints.h"

/* Below this mean piece size an interleaved access aggregates (automatic mode). */
#define SMALL_PIECE (1LL << 20)

static const char *const why_names[COLL_WHY_COUNT] = {
    [COLL_WHY_ENABLED] = "aggregated: enabled by hint",
    [COLL_WHY_INTERLEAVED] = "aggregated: interleaved small pieces",
    [COLL_WHY_ONE_NODE_READ] = "independent: automatic read on one node, reading little more alone",
    [COLL_WHY_NOTHING] = "independent: nothing to access",
    [COLL_WHY_DISABLED] = "independent: disabled by hint",
    [COLL_WHY_ATOMIC] = "independent: atomic mode",
    [COLL_WHY_WRITE_ONLY] = "independent: a rank cannot read",
    [COLL_WHY_ONE_RANK] = "independent: one rank accesses",
    [COLL_WHY_DISJOINT] = "independent: disjoint byte ranges",
    [COLL_WHY_LARGE_PIECES] = "independent: large pieces",
    [COLL_WHY_USER_DATAREP] = "independent: user-defined data representation",
    [COLL_WHY_IRREGULAR] = "independent: file offsets not in data order",
};

const char *coll_why_name(coll_why w) { return w >= 0 && w < COLL_WHY_COUNT ? why_names[w] : "?"; }

/* Ranks on one node through the page cache share one cache: aggregating reads saves no storage
 * traffic, while independent reads (with data sieving) run on every core and aggregators work
 * alone and copy the data once more. But a rank that sieves reads its whole span, holes and
 * the other ranks' data included: np times the file where ranks interleave (HPIO at 8 ranks
 * read 40 times what it asked for), and the aggregated read, the union once, catches up with
 * the copies as np grows. So these reads decide with the volumes (coll_decide). A cb_nodes
 * given by the user keeps aggregation. Only hints every rank adopted from rank 0 decide here
 * (pario_direct_io is per rank: it cannot). */
int coll_shared_cache_read(int write, int hint, int nodes, int cb_nodes_given) {
  return !write && hint == PARIO_AUTO && nodes == 1 && !cb_nodes_given;
}

static int by_first(const void *a, const void *b) {
  const coll_range *x = a, *y = b;
  return (x->first > y->first) - (x->first < y->first);
}

/* Ranks whose ranges follow each other in rank order (block decompositions) are told apart in
 * one pass; any other order is sorted first (disjoint ranges out of rank order used to be
 * compared pair by pair: quadratic in the ranks). */
int coll_interleaved(const struct coll_info *info, int np, coll_range *scratch) {
  long long end = 0;
  int sorted = 1, seen = 0, n = 0;
  for (int r = 0; r < np && sorted; r++) {
    if (info[r].n == 0) continue;
    sorted = !seen || info[r].first >= end;
    end = info[r].last;
    seen = 1;
  }
  if (sorted) return 0;
  for (int r = 0; r < np; r++)
    if (info[r].n > 0) scratch[n++] = (coll_range){info[r].first, info[r].last};
  qsort(scratch, (size_t)n, sizeof *scratch, by_first);
  end = n > 0 ? scratch[0].last : 0; /* sorted by first: overlap iff one starts before an earlier one ends */
  for (int i = 1; i < n; i++) {
    if (scratch[i].first < end) return 1;
    end = PARIO_MAX(end, scratch[i].last);
  }
  return 0;
}

void coll_read_volume(const struct coll_info *info, int np, coll_range *scratch, long long *alone, long long *aggr) {
  int n = 0;
  long long own = 0; /* bytes of the ranks that read only their pieces */
  *alone = 0;
  for (int r = 0; r < np; r++) {
    if (info[r].n == 0) continue;
    if (info[r].through) {
      scratch[n++] = (coll_range){info[r].first, info[r].last};
      *alone += info[r].last - info[r].first;
    } else {
      own += info[r].n;
    }
  }
  *alone += own;
  qsort(scratch, (size_t)n, sizeof *scratch, by_first);
  long long merged = 0, s = 0, e = -1; /* the current merged range [s, e) */
  for (int i = 0; i < n; i++) {
    if (scratch[i].first > e) {
      merged += e > s ? e - s : 0;
      s = scratch[i].first;
      e = scratch[i].last;
    } else if (scratch[i].last > e) {
      e = scratch[i].last;
    }
  }
  *aggr = merged + (e > s ? e - s : 0) + own;
}

/* Automatic mode: aggregate when the ranks' byte ranges interleave and some rank's mean
 * contiguous piece is small; large disjoint (or large-piece) accesses go straight to the file. */
static coll_why automatic(const struct coll_info *info, int np, coll_range *scratch) {
  long long minpiece = INT64_MAX;
  for (int r = 0; r < np; r++)
    if (info[r].n > 0 && info[r].avg_piece < minpiece) minpiece = info[r].avg_piece;
  if (!coll_interleaved(info, np, scratch)) return COLL_WHY_DISJOINT;
  return minpiece < SMALL_PIECE ? COLL_WHY_INTERLEAVED : COLL_WHY_LARGE_PIECES;
}

coll_why coll_decide(int write, int hint, int atomic, int shared_cache, const struct coll_info *info, int np,
                     coll_range *scratch) {
  int active = 0;
  for (int r = 0; r < np; r++) active += info[r].n > 0;
  if (active == 0) return COLL_WHY_NOTHING;
  if (hint == PARIO_DISABLE) return COLL_WHY_DISABLED;
  if (atomic) return COLL_WHY_ATOMIC; /* atomic accesses are locked, each on its own */
  for (int r = 0; r < np; r++) /* the plan cuts each rank's data by file offset */
    if (info[r].irregular) return COLL_WHY_IRREGULAR;
  for (int r = 0; r < np && write; r++)
    if (!info[r].can_read) return COLL_WHY_WRITE_ONLY; /* a window with holes is read first */
  if (hint == PARIO_ENABLE) return COLL_WHY_ENABLED;
  if (active == 1) return COLL_WHY_ONE_RANK;
  if (shared_cache) {
    long long alone, aggr;
    coll_read_volume(info, np, scratch, &alone, &aggr);
    if (alone <= COLL_READ_RATIO * aggr) return COLL_WHY_ONE_NODE_READ;
  }
  return automatic(info, np, scratch);
}
