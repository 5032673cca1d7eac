/* Whether a collective call aggregates or lets every rank access on its own, and why. Every
 * rank decides from the same data (the hints every rank adopted from rank 0, and every rank's
 * access from the call's allgather), so every rank reaches the same decision. */
#include "collective/plan.h"

#include <stdint.h>

#include "core/hints.h"

/* Below this mean piece size an interleaved access aggregates (automatic mode). */
#define SMALL_PIECE (1LL << 20)

static const char *const why_names[COLL_WHY_COUNT] = {
    [COLL_WHY_ENABLED] = "aggregated: enabled by hint",
    [COLL_WHY_INTERLEAVED] = "aggregated: interleaved small pieces",
    [COLL_WHY_ONE_NODE_READ] = "independent: automatic read on one node",
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
 * alone and copy the data once more. A cb_nodes given by the user keeps aggregation. Only hints
 * every rank adopted from rank 0 decide (pario_direct_io is per rank, so it cannot: a rank
 * that skipped the allgather would leave the others waiting in it). */
int coll_reads_alone(int write, int hint, int nodes, int cb_nodes_given) {
  return !write && hint == PARIO_AUTO && nodes == 1 && !cb_nodes_given;
}

/* 1 when the byte ranges of two accessing ranks overlap. Ranks whose ranges follow each other
 * in rank order (block decompositions) are told apart in one pass. */
static int interleaved(const struct coll_info *info, int np) {
  long long end = 0;
  int sorted = 1, seen = 0;
  for (int r = 0; r < np && sorted; r++) {
    if (info[r].n == 0) continue;
    sorted = !seen || info[r].first >= end;
    end = info[r].last;
    seen = 1;
  }
  if (sorted) return 0;
  for (int r = 0; r < np; r++) {
    const struct coll_info *a = &info[r];
    for (int q = r + 1; q < np && a->n > 0; q++) {
      const struct coll_info *b = &info[q];
      if (b->n > 0 && a->first < b->last && b->first < a->last) return 1;
    }
  }
  return 0;
}

/* Automatic mode: aggregate when the ranks' byte ranges interleave and some rank's mean
 * contiguous piece is small; large disjoint (or large-piece) accesses go straight to the file. */
static coll_why automatic(const struct coll_info *info, int np) {
  long long minpiece = INT64_MAX;
  for (int r = 0; r < np; r++)
    if (info[r].n > 0 && info[r].avg_piece < minpiece) minpiece = info[r].avg_piece;
  if (!interleaved(info, np)) return COLL_WHY_DISJOINT;
  return minpiece < SMALL_PIECE ? COLL_WHY_INTERLEAVED : COLL_WHY_LARGE_PIECES;
}

coll_why coll_decide(int write, int hint, int atomic, const struct coll_info *info, int np) {
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
  return automatic(info, np);
}
