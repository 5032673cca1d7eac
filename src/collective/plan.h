/* The pure parts of two-phase I/O, on plain structs and without communication (unit-tested in
 * tests/unit/test_collplan.c): what each rank accesses, whether a call aggregates and why,
 * where the aggregators sit, and how the accessed span is cut into file domains and windows. */
#ifndef PARIO_COLL_PLAN_H
#define PARIO_COLL_PLAN_H

#include <mpi.h>

/* One rank's access, as every rank learns it from the call's allgather (sent as
 * COLL_INFO_WORDS MPI_LONG_LONGs). */
struct coll_info {
  long long pos;         /* data position of the access (bytes of its view's data stream) */
  long long n;           /* bytes accessed; 0: nothing */
  long long first, last; /* the file bytes [first, last) it touches (when n > 0) */
  long long avg_piece;   /* mean contiguous piece: the filetype's bytes over its runs (n when
                            the view is contiguous) */
  long long can_read;    /* its handle can read (an aggregated write may read a window first) */
  long long sieves;      /* a write it did on its own would use data sieving */
  long long irregular;   /* its file offsets may not grow with its data (pario_view_irregular) */
  long long through;     /* a read of it, alone or aggregated, reads through its holes: its
                            view is contiguous or its holes are at most pario_read_max_gap (a
                            sieving read of it would read all of [first, last)) */
  long long disp;        /* its view's displacement (the view cache keeps the rest, viewx.c) */
  long long vhit;        /* the view cache's sets whose entry for this rank is its view (bits) */
  long long vdef[3];     /* set_view's deferred agreement (pario_view_defer_words, core/file.h) */
};
enum { COLL_INFO_WORDS = sizeof(struct coll_info) / sizeof(long long) };
_Static_assert(sizeof(struct coll_info) == COLL_INFO_WORDS * sizeof(long long), "coll_info is words");

/* The file bytes [first, last) of one accessing rank, for sorting. */
typedef struct coll_range {
  long long first, last;
} coll_range;

/* ---- the decision (decide.c) ---- */

/* Why a collective call aggregates or lets every rank access on its own (for a tracer). */
typedef enum coll_why {
  COLL_WHY_ENABLED,        /* aggregate: romio_cb_read/write = enable */
  COLL_WHY_INTERLEAVED,    /* aggregate: automatic, byte ranges interleave, small pieces */
  COLL_WHY_ONE_NODE_READ,  /* alone: automatic read on one node, cb_nodes not given, reading
                              alone reads at most COLL_READ_RATIO times an aggregated read */
  COLL_WHY_NOTHING,        /* alone: no rank accesses anything */
  COLL_WHY_DISABLED,       /* alone: romio_cb_read/write = disable */
  COLL_WHY_ATOMIC,         /* alone: atomic mode (every access locked) */
  COLL_WHY_WRITE_ONLY,     /* alone: a write where some rank cannot read */
  COLL_WHY_ONE_RANK,       /* alone: automatic, one rank accesses */
  COLL_WHY_DISJOINT,       /* alone: automatic, no two ranks' byte ranges interleave */
  COLL_WHY_LARGE_PIECES,   /* alone: automatic, every rank's pieces are 1 MiB or more */
  COLL_WHY_USER_DATAREP,   /* alone: a user-defined data representation converts whole items */
  COLL_WHY_IRREGULAR,      /* alone: some rank's file offsets do not grow with its data */
  COLL_WHY_COUNT
} coll_why;

static inline int coll_why_aggregates(coll_why w) { return w == COLL_WHY_ENABLED || w == COLL_WHY_INTERLEAVED; }
const char *coll_why_name(coll_why w);

/* From hints every rank adopted from rank 0: an automatic collective read on one node, without
 * a cb_nodes from the user, shares one page cache, and goes independent unless that would read
 * much more of the file (coll_read_volume). hint: romio_cb_read (PARIO_AUTO/ENABLE/DISABLE);
 * nodes: nodes the file spans. */
int coll_shared_cache_read(int write, int hint, int nodes, int cb_nodes_given);
/* A shared-cache read aggregates when reading alone would read more than this many times the
 * file bytes an aggregated read reads. */
enum { COLL_READ_RATIO = 2 };
/* Estimated file bytes a read of every rank's access reads: *alone with each rank reading
 * on its own (sieving through its holes: [first, last); else its bytes), *aggr with
 * aggregators reading the union (the ranges of the ranks that read through, merged, plus the
 * bytes of the others). scratch: np entries. */
void coll_read_volume(const struct coll_info *info, int np, coll_range *scratch, long long *alone, long long *aggr);
/* 1 when the byte ranges of two accessing ranks overlap. O(np log np) in any rank order: the
 * ranges are sorted by first byte into scratch (np entries), then each compared with the
 * furthest end before it. */
int coll_interleaved(const struct coll_info *info, int np, coll_range *scratch);
/* The decision from every rank's access (the same on every rank). write: 1 for writes;
 * hint: romio_cb_write or romio_cb_read; atomic: the call's atomic mode; shared_cache:
 * coll_shared_cache_read; scratch: np entries. */
coll_why coll_decide(int write, int hint, int atomic, int shared_cache, const struct coll_info *info, int np,
                     coll_range *scratch);

/* ---- aggregators, file domains, windows (plan.c) ---- */

/* Node of each rank from each rank's node leader lead[r] (the lowest rank on its node): nodes
 * are numbered in the order of their leaders; rank_in_node[r] is r's place among its node's
 * ranks. Returns the number of nodes. */
int coll_node_map(int np, const int *lead, int *node_of, int *rank_in_node);
/* The aggregators for cb_nodes k (clamped to 1..np) into aggr (room for np): fewer than the
 * nodes, spread evenly over them; more, round robin over the nodes, one more rank of each per
 * turn; node_of NULL (no node map): the first k ranks. Returns how many. */
int coll_aggregators(int k, int np, int nnodes, const int *node_of, const int *rank_in_node, int *aggr);

/* Largest window (the default of hint pario_coll_window_max): bigger rounds only push the staged data out of the CPU cache, while
 * cb_buffer_size still bounds the memory an aggregator stages. Remote storage takes the whole
 * cb_buffer_size: there a round costs a network round trip, which outweighs the cache. */
enum { COLL_WINDOW_MAX = 4 << 20, COLL_CB_DEFAULT = 16 << 20 };

typedef struct coll_plan {
  int naggr;
  MPI_Offset *bound;  /* domain i is [bound[i], bound[i+1]): naggr + 1 entries, caller's memory */
  MPI_Offset align;   /* window starts are multiples of it, domain boundaries too where they can be */
  MPI_Offset cb;      /* file bytes per window */
  MPI_Offset rounds;  /* windows of the largest domain */
} coll_plan;

/* The alignment unit: striping_unit, else cb_block_size, else 1 (0 means not given). */
MPI_Offset coll_plan_align(long long striping_unit, long long cb_block_size);
/* Window size for cb_buffer_size (0: not given), on remote storage or not; window_max: the
 * largest on local storage (hint pario_coll_window_max; 0: COLL_WINDOW_MAX). */
MPI_Offset coll_window_size(long long cb_buffer_size, int remote, long long window_max);
/* The file span [*lo, *hi) the ranks access; *lo >= *hi when nobody accesses anything. */
void coll_span(const struct coll_info *info, int np, MPI_Offset *lo, MPI_Offset *hi);
/* Cut [lo, hi) into p->naggr domains of equal size, inner boundaries moved down to multiples
 * of p->align (never below the previous one), and count the rounds. Needs naggr, bound, align
 * and cb set. */
void coll_plan_make(coll_plan *p, MPI_Offset lo, MPI_Offset hi);
/* Window of domain i in round k: [*lo, *hi), empty when *lo >= *hi. */
void coll_plan_window(const coll_plan *p, int i, MPI_Offset k, MPI_Offset *lo, MPI_Offset *hi);

/* ---- merging sorted lists (plan.c) ---- */

/* A binary min-heap of (key, item), ordered by key then item: the exchange merges its pieces'
 * sorted file intervals with it, taking the lowest next interval in O(log pieces) instead of
 * scanning every piece. h: room for as many entries as items. */
typedef struct coll_hent {
  long long key;
  int item;
} coll_hent;
typedef struct coll_heap {
  coll_hent *h; /* h[0] is the smallest when n > 0 */
  int n;
} coll_heap;
void coll_heap_push(coll_heap *q, long long key, int item);
/* The smallest entry's key becomes key (not smaller than it was: its list is sorted). */
void coll_heap_retop(coll_heap *q, long long key);
/* Remove the smallest entry. */
void coll_heap_pop(coll_heap *q);

#endif
