/* The two-phase plan: where the aggregators sit (one per node by default), how the accessed
 * span is cut into their file domains, and the windows each handles round by round. Pure
 * functions on plain arrays: every rank computes the same plan from the same inputs. */
#include "collective/plan.h"

#include <stdint.h>

#include "core/common.h"

/* r leads its node: its leader is itself (or the map names no earlier leader for it). */
static int leads(const int *lead, int r) {
  int l = lead[r];
  return l < 0 || l >= r || lead[l] != l;
}

/* Leaders come first on their node (lead[r] <= r), so one pass numbers the nodes and counts
 * each node's ranks; the count runs in the leader's rank_in_node until the end. */
int coll_node_map(int np, const int *lead, int *node_of, int *rank_in_node) {
  int nnodes = 0;
  for (int r = 0; r < np; r++) {
    if (leads(lead, r)) {
      node_of[r] = nnodes++;
      rank_in_node[r] = 1; /* the node's next place */
    } else {
      node_of[r] = node_of[lead[r]];
      rank_in_node[r] = rank_in_node[lead[r]]++;
    }
  }
  for (int r = 0; r < np; r++)
    if (leads(lead, r)) rank_in_node[r] = 0;
  return nnodes;
}

/* The rank with place turn on node (or -1). */
static int rank_at(int np, const int *node_of, const int *rank_in_node, int node, int turn) {
  for (int r = 0; r < np; r++)
    if (node_of[r] == node && rank_in_node[r] == turn) return r;
  return -1;
}

int coll_aggregators(int k, int np, int nnodes, const int *node_of, const int *rank_in_node, int *aggr) {
  int n = 0;
  k = PARIO_MAX(1, PARIO_MIN(k, np));
  if (!node_of || nnodes < 1) {
    for (int i = 0; i < k; i++) aggr[n++] = i;
  } else if (k <= nnodes) { /* spread evenly: node i * nnodes / k, its first rank */
    for (int i = 0; i < k; i++) {
      int r = rank_at(np, node_of, rank_in_node, (int)((long long)i * nnodes / k), 0);
      if (r >= 0) aggr[n++] = r;
    }
  } else {
    for (int turn = 0; n < k && turn < np; turn++)
      for (int node = 0; node < nnodes && n < k; node++) {
        int r = rank_at(np, node_of, rank_in_node, node, turn);
        if (r >= 0) aggr[n++] = r;
      }
  }
  return n;
}

MPI_Offset coll_plan_align(long long striping_unit, long long cb_block_size) {
  return striping_unit > 0 ? striping_unit : cb_block_size > 0 ? cb_block_size : 1;
}

MPI_Offset coll_window_size(long long cb_buffer_size, int remote, long long window_max) {
  MPI_Offset cb = cb_buffer_size > 0 ? cb_buffer_size : COLL_CB_DEFAULT;
  return remote ? cb : PARIO_MIN(cb, window_max > 0 ? window_max : COLL_WINDOW_MAX);
}

void coll_span(const struct coll_info *info, int np, MPI_Offset *lo, MPI_Offset *hi) {
  *lo = INT64_MAX;
  *hi = 0;
  for (int r = 0; r < np; r++)
    if (info[r].n > 0) {
      *lo = PARIO_MIN(*lo, info[r].first);
      *hi = PARIO_MAX(*hi, info[r].last);
    }
}

/* Where domain i's windows start: its first byte moved down to the alignment unit. */
static MPI_Offset window_base(const coll_plan *p, int i) { return p->bound[i] - p->bound[i] % p->align; }

void coll_plan_make(coll_plan *p, MPI_Offset lo, MPI_Offset hi) {
  int na = p->naggr;
  MPI_Offset each = (hi - lo + na - 1) / na;
  p->bound[0] = lo;
  p->bound[na] = hi;
  for (int i = 1; i < na; i++) {
    MPI_Offset b = lo + i * each;
    b -= b % p->align;
    p->bound[i] = PARIO_MIN(PARIO_MAX(b, p->bound[i - 1]), hi);
  }
  p->rounds = 0;
  for (int i = 0; i < na; i++) {
    if (p->bound[i + 1] <= p->bound[i]) continue;
    MPI_Offset r = (p->bound[i + 1] - window_base(p, i) + p->cb - 1) / p->cb;
    p->rounds = PARIO_MAX(p->rounds, r);
  }
}

void coll_plan_window(const coll_plan *p, int i, MPI_Offset k, MPI_Offset *lo, MPI_Offset *hi) {
  MPI_Offset base = window_base(p, i);
  *lo = PARIO_MAX(p->bound[i], base + k * p->cb);
  *hi = PARIO_MIN(p->bound[i + 1], base + (k + 1) * p->cb);
}

/* ---- the merge heap ---- */

static int before(const coll_hent *a, const coll_hent *b) {
  return a->key < b->key || (a->key == b->key && a->item < b->item);
}

static void swap_ent(coll_hent *a, coll_hent *b) {
  coll_hent t = *a;
  *a = *b;
  *b = t;
}

static void sift_down(coll_heap *q, int i) {
  for (;;) {
    int l = 2 * i + 1, m = i;
    if (l < q->n && before(&q->h[l], &q->h[m])) m = l;
    if (l + 1 < q->n && before(&q->h[l + 1], &q->h[m])) m = l + 1;
    if (m == i) return;
    swap_ent(&q->h[i], &q->h[m]);
    i = m;
  }
}

void coll_heap_push(coll_heap *q, long long key, int item) {
  int i = q->n++;
  q->h[i] = (coll_hent){key, item};
  while (i > 0 && before(&q->h[i], &q->h[(i - 1) / 2])) {
    swap_ent(&q->h[i], &q->h[(i - 1) / 2]);
    i = (i - 1) / 2;
  }
}

void coll_heap_retop(coll_heap *q, long long key) {
  q->h[0].key = key;
  sift_down(q, 0);
}

void coll_heap_pop(coll_heap *q) {
  q->h[0] = q->h[--q->n];
  sift_down(q, 0);
}
