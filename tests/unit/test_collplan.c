/* Unit tests of the pure parts of two-phase I/O (collective/plan.c, decide.c, runs.c) against
 * hand-computed cases: node maps, aggregator placement (cb_nodes below, at and above the node
 * and rank counts), file domains with and without striping_unit alignment, windows and rounds,
 * empty ranks, one rank, the aggregate-or-not decision and the view runs' encoding. No MPI
 * calls: the functions communicate with nobody. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collective/plan.h"
#include "collective/runs.h"
#include "core/hints.h"
#include "check.h"


static int same_ints(const int *a, const int *b, int n) { return !memcmp(a, b, sizeof(int) * (size_t)n); }

static void node_map(void) {
  /* ranks 0,1,4 on node 0 (leader 0), 2,3 on node 1 (leader 2), 5 alone (node 2) */
  int lead[6] = {0, 0, 2, 2, 0, 5}, node[6], place[6];
  int want_node[6] = {0, 0, 1, 1, 0, 2}, want_place[6] = {0, 1, 0, 1, 2, 0};
  CHECK(coll_node_map(6, lead, node, place) == 3, "three nodes");
  CHECK(same_ints(node, want_node, 6), "node of each rank");
  CHECK(same_ints(place, want_place, 6), "place of each rank on its node");
  int one[1] = {0};
  CHECK(coll_node_map(1, one, node, place) == 1 && node[0] == 0 && place[0] == 0, "one rank");
  int bogus[3] = {0, 2, 7}; /* leaders after the rank, or outside: each its own node */
  CHECK(coll_node_map(3, bogus, node, place) == 3 && place[1] == 0 && place[2] == 0, "nonsense leaders");
}

static void aggregators(void) {
  int lead[6] = {0, 0, 2, 2, 0, 5}, node[6], place[6], a[6];
  int nn = coll_node_map(6, lead, node, place);
  /* fewer than the nodes: nodes i * 3 / k, their first ranks */
  CHECK(coll_aggregators(1, 6, nn, node, place, a) == 1 && a[0] == 0, "k=1");
  CHECK(coll_aggregators(2, 6, nn, node, place, a) == 2 && a[0] == 0 && a[1] == 2, "k=2: nodes 0 and 1");
  int three[3] = {0, 2, 5};
  CHECK(coll_aggregators(3, 6, nn, node, place, a) == 3 && same_ints(a, three, 3), "k=3: one per node");
  /* more: round robin over the nodes, one more rank of each per turn */
  int five[5] = {0, 2, 5, 1, 3}, six[6] = {0, 2, 5, 1, 3, 4};
  CHECK(coll_aggregators(5, 6, nn, node, place, a) == 5 && same_ints(a, five, 5), "k=5");
  CHECK(coll_aggregators(6, 6, nn, node, place, a) == 6 && same_ints(a, six, 6), "k=6: every rank");
  /* cb_nodes above the rank count, or below 1: clamped */
  CHECK(coll_aggregators(64, 6, nn, node, place, a) == 6 && same_ints(a, six, 6), "k=64 > nprocs");
  CHECK(coll_aggregators(0, 6, nn, node, place, a) == 1 && a[0] == 0, "k=0");
  /* no node map: the first k ranks */
  CHECK(coll_aggregators(4, 6, 1, NULL, NULL, a) == 4 && a[3] == 3, "no node map");
  /* one node of four ranks, two aggregators: ranks 0 and 1 */
  int lead4[4] = {0, 0, 0, 0};
  nn = coll_node_map(4, lead4, node, place);
  CHECK(coll_aggregators(2, 4, nn, node, place, a) == 2 && a[0] == 0 && a[1] == 1, "one node, k=2");
  /* one rank */
  CHECK(coll_aggregators(3, 1, 1, NULL, NULL, a) == 1 && a[0] == 0, "one rank");
}

/* The windows of domain i over every round, as [lo, hi) pairs (empty ones included). */
static void windows(const coll_plan *p, int i, MPI_Offset *w) {
  for (MPI_Offset k = 0; k < p->rounds; k++) coll_plan_window(p, i, k, &w[2 * k], &w[2 * k + 1]);
}

static int same_offs(const MPI_Offset *a, const MPI_Offset *b, int n) {
  return !memcmp(a, b, sizeof(MPI_Offset) * (size_t)n);
}

static void plans(void) {
  MPI_Offset bound[8], w[16];
  CHECK(coll_plan_align(0, 0) == 1 && coll_plan_align(4096, 512) == 4096 && coll_plan_align(0, 512) == 512,
        "alignment unit");
  CHECK(coll_window_size(0, 0, 0) == COLL_WINDOW_MAX && coll_window_size(1000, 0, 0) == 1000 &&
            coll_window_size(64 << 20, 0, 0) == COLL_WINDOW_MAX, "window size");
  CHECK(coll_window_size(64 << 20, 0, 8 << 20) == 8 << 20 && coll_window_size(0, 0, 1 << 20) == 1 << 20 &&
            coll_window_size(1000, 0, 1 << 20) == 1000, "window size under pario_coll_window_max");
  CHECK(coll_window_size(0, 1, 0) == COLL_CB_DEFAULT && coll_window_size(1000, 1, 0) == 1000 &&
            coll_window_size(64 << 20, 1, 1 << 20) == 64 << 20, "window size on remote storage");
  /* one aggregator over [100, 1100), windows of 256: four rounds */
  coll_plan p = {.naggr = 1, .bound = bound, .align = 1, .cb = 256};
  coll_plan_make(&p, 100, 1100);
  CHECK(p.rounds == 4 && bound[0] == 100 && bound[1] == 1100, "one domain: %lld rounds", (long long)p.rounds);
  windows(&p, 0, w);
  MPI_Offset w1[8] = {100, 356, 356, 612, 612, 868, 868, 1100};
  CHECK(same_offs(w, w1, 8), "one domain's windows");
  /* three aggregators over [10, 1000), striping_unit 64: boundaries 340 and 670 move down to
   * 320 and 640; windows start at multiples of 64 below each domain (0, 320, 640) */
  p = (coll_plan){.naggr = 3, .bound = bound, .align = 64, .cb = 100};
  coll_plan_make(&p, 10, 1000);
  MPI_Offset b3[4] = {10, 320, 640, 1000};
  CHECK(same_offs(bound, b3, 4), "aligned domains %lld %lld %lld %lld", (long long)bound[0], (long long)bound[1],
        (long long)bound[2], (long long)bound[3]);
  CHECK(p.rounds == 4, "aligned: %lld rounds", (long long)p.rounds);
  windows(&p, 0, w);
  MPI_Offset w30[8] = {10, 100, 100, 200, 200, 300, 300, 320};
  CHECK(same_offs(w, w30, 8), "domain 0's windows");
  windows(&p, 2, w);
  MPI_Offset w32[8] = {640, 740, 740, 840, 840, 940, 940, 1000};
  CHECK(same_offs(w, w32, 8), "domain 2's windows");
  /* the same without alignment: equal cuts at 340 and 670 */
  p.align = 1;
  coll_plan_make(&p, 10, 1000);
  MPI_Offset b3u[4] = {10, 340, 670, 1000};
  CHECK(same_offs(bound, b3u, 4) && p.rounds == 4, "unaligned domains");
  /* alignment unit above the span: every boundary falls to the start, the last aggregator
   * gets everything, and its first window (from 0, below the span) is empty */
  p = (coll_plan){.naggr = 4, .bound = bound, .align = 4096, .cb = 64};
  coll_plan_make(&p, 100, 200);
  MPI_Offset b4[5] = {100, 100, 100, 100, 200};
  CHECK(same_offs(bound, b4, 5) && p.rounds == 4, "collapsed domains, %lld rounds", (long long)p.rounds);
  windows(&p, 3, w);
  MPI_Offset w43[8] = {100, 64, 100, 128, 128, 192, 192, 200};
  CHECK(same_offs(w, w43, 8), "collapsed domain's windows");
  MPI_Offset lo, hi;
  coll_plan_window(&p, 0, 0, &lo, &hi);
  CHECK(lo >= hi, "an empty domain has empty windows");
  /* more aggregators than bytes: some domains empty, rounds from the others */
  p = (coll_plan){.naggr = 4, .bound = bound, .align = 1, .cb = 1};
  coll_plan_make(&p, 0, 2);
  CHECK(bound[0] == 0 && bound[1] == 1 && bound[2] == 2 && bound[3] == 2 && bound[4] == 2 && p.rounds == 1,
        "tiny span");
}

static struct coll_info acc(long long first, long long last, long long piece) {
  return (struct coll_info){.pos = 0, .n = last - first, .first = first, .last = last, .avg_piece = piece,
                            .can_read = 1};
}

/* HPIO's read: np ranks, count pieces of size bytes each, every spacing bytes apart, the ranks'
 * pieces interleaved; through: their holes (np * (size + spacing) - size) are read through. */
static void hpio(struct coll_info *in, int np, long long size, long long spacing, long long count, int through) {
  long long period = size + spacing;
  for (int r = 0; r < np; r++) {
    in[r] = acc(r * period, ((count - 1) * np + r) * period + size, size);
    in[r].n = count * size;
    in[r].through = through;
  }
}

/* One-node reads: independent unless that reads more than COLL_READ_RATIO times an
 * aggregated read (volumes estimated from the ranks' ranges). */
static void read_volumes(void) {
  struct coll_info in[8];
  coll_range sc[8];
  long long alone, aggr;
  for (int np = 2; np <= 8; np *= 2) { /* 32-byte pieces, 128-byte gaps: 5 x np alone, 5 aggregated */
    hpio(in, np, 32, 128, 1000, 1);
    coll_read_volume(in, np, sc, &alone, &aggr);
    long long span = (1000LL * np - 1) * 160 + 32, wantalone = 0;
    for (int r = 0; r < np; r++) wantalone += in[r].last - in[r].first;
    CHECK(alone == wantalone && aggr == span, "hpio np %d: alone %lld (want %lld), aggregated %lld (want %lld)", np,
          alone, wantalone, aggr, span);
    coll_why w = coll_decide(0, PARIO_AUTO, 0, 1, in, np, sc);
    CHECK(w == (np == 2 ? COLL_WHY_ONE_NODE_READ : COLL_WHY_INTERLEAVED), "hpio np %d: %s", np, coll_why_name(w));
    CHECK(coll_decide(0, PARIO_AUTO, 0, 0, in, np, sc) == COLL_WHY_INTERLEAVED, "across nodes np %d aggregates", np);
    hpio(in, np, 32, 128, 1000, 0); /* holes too wide to read through: every path reads the pieces */
    coll_read_volume(in, np, sc, &alone, &aggr);
    CHECK(alone == np * 32000LL && aggr == alone, "wide holes np %d: %lld %lld", np, alone, aggr);
    CHECK(coll_decide(0, PARIO_AUTO, 0, 1, in, np, sc) == COLL_WHY_ONE_NODE_READ, "wide holes np %d alone", np);
  }
  /* blocks, out of rank order, with a gap, one rank empty (its stale range counts for nothing),
   * one rank that reads only its pieces (its bytes, in both) */
  struct coll_info b[5] = {acc(300, 400, 1), acc(0, 100, 1), {.first = 0, .last = 1 << 30}, acc(100, 250, 1),
                           acc(1000, 5000, 1)};
  for (int r = 0; r < 5; r++) b[r].through = r != 4;
  b[4].n = 10;
  coll_read_volume(b, 5, sc, &alone, &aggr);
  CHECK(alone == 100 + 100 + 150 + 10 && aggr == alone, "blocks: alone %lld, aggregated %lld", alone, aggr);
  /* nested and overlapping ranges merge: [0, 1000) holds [10, 20); [900, 1200) extends it */
  struct coll_info o[3] = {acc(10, 20, 1), acc(0, 1000, 1), acc(900, 1200, 1)};
  for (int r = 0; r < 3; r++) o[r].through = 1;
  coll_read_volume(o, 3, sc, &alone, &aggr);
  CHECK(alone == 10 + 1000 + 300 && aggr == 1200, "nested: alone %lld, aggregated %lld", alone, aggr);
  CHECK(coll_decide(0, PARIO_AUTO, 0, 1, o, 3, sc) == COLL_WHY_ONE_NODE_READ, "1310 <= 2 x 1200: alone");
  CHECK(coll_decide(0, PARIO_ENABLE, 0, 1, o, 3, sc) == COLL_WHY_ENABLED, "enable still aggregates");
  CHECK(coll_decide(0, PARIO_DISABLE, 0, 1, o, 3, sc) == COLL_WHY_DISABLED, "disable");
}

static void span_and_decision(void) {
  coll_range sc[4];
  /* rank 1 accesses nothing: its (stale) range counts for nothing */
  struct coll_info in[4] = {acc(100, 200, 10), {.first = 0, .last = 5000, .can_read = 1}, acc(150, 300, 10),
                            acc(400, 500, 10)};
  MPI_Offset lo, hi;
  coll_span(in, 4, &lo, &hi);
  CHECK(lo == 100 && hi == 500, "span skips empty ranks: [%lld, %lld)", (long long)lo, (long long)hi);
  struct coll_info none[2] = {{.can_read = 1}, {.can_read = 1}};
  coll_span(none, 2, &lo, &hi);
  CHECK(lo >= hi, "nobody accesses anything: empty span");
  CHECK(coll_decide(1, PARIO_ENABLE, 0, 0, none, 2, sc) == COLL_WHY_NOTHING, "nothing");
  CHECK(coll_decide(1, PARIO_AUTO, 0, 0, in, 4, sc) == COLL_WHY_INTERLEAVED, "interleaved small pieces");
  CHECK(coll_decide(1, PARIO_DISABLE, 0, 0, in, 4, sc) == COLL_WHY_DISABLED, "disabled");
  CHECK(coll_decide(1, PARIO_ENABLE, 1, 0, in, 4, sc) == COLL_WHY_ATOMIC, "atomic");
  in[1].can_read = 0; /* even an empty rank that cannot read stops an aggregated write */
  CHECK(coll_decide(1, PARIO_ENABLE, 0, 0, in, 4, sc) == COLL_WHY_WRITE_ONLY, "write-only rank");
  CHECK(coll_decide(0, PARIO_ENABLE, 0, 0, in, 4, sc) == COLL_WHY_ENABLED, "reads need no read access");
  in[1].can_read = 1;
  struct coll_info blocks[3] = {acc(0, 100, 1), acc(100, 200, 1), acc(200, 300, 1)};
  CHECK(coll_decide(1, PARIO_AUTO, 0, 0, blocks, 3, sc) == COLL_WHY_DISJOINT, "blocks in rank order");
  struct coll_info shuffled[3] = {acc(200, 300, 1), acc(0, 100, 1), acc(100, 200, 1)};
  CHECK(coll_decide(1, PARIO_AUTO, 0, 0, shuffled, 3, sc) == COLL_WHY_DISJOINT, "blocks out of rank order");
  CHECK(coll_decide(1, PARIO_ENABLE, 0, 0, shuffled, 3, sc) == COLL_WHY_ENABLED, "enabled");
  struct coll_info big[2] = {acc(0, 8 << 20, 1 << 20), acc(4 << 20, 12 << 20, 2 << 20)};
  CHECK(coll_decide(1, PARIO_AUTO, 0, 0, big, 2, sc) == COLL_WHY_LARGE_PIECES, "large pieces");
  big[1].avg_piece = 1000;
  CHECK(coll_decide(1, PARIO_AUTO, 0, 0, big, 2, sc) == COLL_WHY_INTERLEAVED, "one rank's small pieces");
  struct coll_info one[2] = {acc(0, 100, 1), {.can_read = 1}};
  CHECK(coll_decide(1, PARIO_AUTO, 0, 0, one, 2, sc) == COLL_WHY_ONE_RANK, "one active rank");
  CHECK(coll_decide(1, PARIO_AUTO, 0, 0, one, 1, sc) == COLL_WHY_ONE_RANK, "one rank");
  CHECK(coll_shared_cache_read(0, PARIO_AUTO, 1, 0) && !coll_shared_cache_read(1, PARIO_AUTO, 1, 0) &&
            !coll_shared_cache_read(0, PARIO_AUTO, 2, 0) && !coll_shared_cache_read(0, PARIO_AUTO, 1, 1) &&
            !coll_shared_cache_read(0, PARIO_ENABLE, 1, 0), "reads on one node share a cache");
  CHECK(coll_why_aggregates(COLL_WHY_ENABLED) && coll_why_aggregates(COLL_WHY_INTERLEAVED) &&
            !coll_why_aggregates(COLL_WHY_DISJOINT), "which reasons aggregate");
  for (int w = 0; w < COLL_WHY_COUNT; w++) CHECK(strcmp(coll_why_name((coll_why)w), "?"), "reason %d named", w);
}

/* Encode, check the word count and form, decode, compare. */
static void roundtrip(const char *name, pario_run *runs, size_t n, size_t want_words, int want_grouped) {
  pario_typemap t = {.runs = runs, .nruns = n};
  size_t nw = coll_runs_words(&t);
  long long *w = malloc(sizeof(long long) * nw);
  coll_runs_encode(&t, w);
  CHECK(nw == want_words && w[0] == want_grouped, "%s: %zu words, form %lld", name, nw, w[0]);
  pario_run *back = malloc(sizeof(pario_run) * (n ? n : 1));
  CHECK(coll_runs_decode(w, (long long)nw, back, n), "%s: decodes", name);
  CHECK(!n || !memcmp(back, runs, sizeof(pario_run) * n), "%s: same runs", name);
  if (n) CHECK(!coll_runs_decode(w, (long long)nw, back, n - 1), "%s: too many runs refused", name);
  CHECK(!coll_runs_decode(w, (long long)nw, back, n + 1), "%s: too few runs refused", name);
  free(w);
  free(back);
}

static void runs_codec(void) {
  pario_run vec[100];
  for (int i = 0; i < 100; i++) vec[i] = (pario_run){3 + 40 * i, 5};
  roundtrip("vector", vec, 100, 5, 1); /* one group */
  pario_run irregular[3] = {{0, 1}, {5, 2}, {9, 3}};
  roundtrip("irregular", irregular, 3, 7, 0); /* pairs */
  pario_run two[4] = {{0, 4}, {10, 4}, {20, 4}, {100, 8}};
  roundtrip("mixed", two, 4, 9, 0); /* two groups (8 words) no shorter than four pairs */
  pario_run sub[12]; /* 2 planes of 3 rows of 2 bytes: rows stride 10, planes stride 100 */
  for (int i = 0; i < 12; i++) sub[i] = (pario_run){(i / 3) * 100 + (i % 3) * 10, 2};
  roundtrip("subarray", sub, 12, 17, 1); /* 4 groups of 3 */
  roundtrip("empty", NULL, 0, 1, 0);
  long long bad[3] = {7, 1, 2};
  pario_run r;
  CHECK(!coll_runs_decode(bad, 3, &r, 1), "unknown form refused");
}

/* A small deterministic generator (the tests repeat exactly). */
static unsigned long long rng = 88172645463325252ull;
static long long rnd(long long n) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (long long)(rng % (unsigned long long)n);
}

static double seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

/* The pairwise definition the sort-based test must agree with. */
static int overlap_brute(const struct coll_info *in, int np) {
  for (int r = 0; r < np; r++)
    for (int q = r + 1; q < np; q++)
      if (in[r].n > 0 && in[q].n > 0 && in[r].first < in[q].last && in[q].first < in[r].last) return 1;
  return 0;
}

static void interleaving(void) {
  enum { BIG = 1 << 18 };
  struct coll_info *in = calloc(BIG, sizeof *in);
  coll_range *sc = malloc(BIG * sizeof *sc);
  /* random small cases, disjoint and not, empty ranks among them, against the definition */
  for (int t = 0; t < 20000; t++) {
    int np = 1 + (int)rnd(9);
    long long at = 0;
    for (int r = 0; r < np; r++) { /* disjoint blocks (some touching), then shuffled */
      at += rnd(3);
      long long len = 1 + rnd(5);
      in[r] = acc(at, at + len, 1);
      at += len;
      if (rnd(4) == 0) in[r].n = 0, in[r].first = rnd(40), in[r].last = in[r].first + 100; /* stale range */
    }
    for (int r = np - 1; r > 0; r--) {
      int q = (int)rnd(r + 1);
      struct coll_info x = in[r];
      in[r] = in[q], in[q] = x;
    }
    if (t % 2 && np > 1) { /* half the cases: stretch one range, maybe over another */
      int r = (int)rnd(np);
      if (in[r].n > 0) in[r].last += rnd(8);
    }
    int want = overlap_brute(in, np), got = coll_interleaved(in, np, sc);
    if (got != want) {
      CHECK(0, "case %d: interleaved %d, pairwise %d", t, got, want);
      break;
    }
  }
  /* adversarial orders at scale: disjoint blocks in reverse rank order, and every other rank
   * swapped, took np^2/2 comparisons (3.4e10 here) before the sort */
  for (int r = 0; r < BIG; r++) in[r] = acc((long long)(BIG - 1 - r) * 10, (long long)(BIG - r) * 10, 1);
  double t0 = seconds();
  int rev = coll_interleaved(in, BIG, sc);
  for (int r = 0; r + 1 < BIG; r += 2) in[r] = acc((long long)(r + 1) * 10, (long long)(r + 2) * 10, 1),
                                       in[r + 1] = acc((long long)r * 10, (long long)(r + 1) * 10, 1);
  int swapped = coll_interleaved(in, BIG, sc);
  double dt = seconds() - t0;
  CHECK(!rev && !swapped, "disjoint blocks out of order: interleaved %d, %d", rev, swapped);
  CHECK(dt < 2.0, "%d disjoint ranges out of rank order took %.2f s (quadratic?)", BIG, dt);
  /* an overlap that only the last pair shows, and one range that contains all others */
  in[BIG - 1].last += 5; /* [(BIG-2)*10, (BIG-1)*10 + 5) reaches into rank BIG-2's range */
  CHECK(coll_interleaved(in, BIG, sc), "overlap of one pair among %d", BIG);
  in[0] = acc(0, (long long)BIG * 10, 1);
  CHECK(coll_interleaved(in, BIG, sc), "one range over all others");
  free(in);
  free(sc);
}

/* The merge heap against a sort: lists of sorted keys merged by always taking the smallest. */
static void merging(void) {
  enum { LISTS = 3000, MAXLEN = 20 };
  long long *key = malloc(sizeof(long long) * LISTS * MAXLEN), *out = malloc(sizeof(long long) * LISTS * MAXLEN);
  int len[LISTS], at[LISTS];
  coll_hent *h = malloc(sizeof *h * LISTS);
  for (int shape = 0; shape < 4; shape++) {
    long long total = 0;
    for (int i = 0; i < LISTS; i++) {
      len[i] = shape == 2 ? (i == 0 ? MAXLEN : 1) : (int)rnd(MAXLEN + 1);
      long long k = shape == 1 ? (long long)(LISTS - i) * 1000 : rnd(50); /* lists in reverse order */
      for (int j = 0; j < len[i]; j++) {
        k += shape == 3 ? 0 : rnd(30); /* shape 3: every key equal within a list */
        key[i * MAXLEN + j] = k;
      }
      total += len[i];
    }
    coll_heap q = {h, 0};
    for (int i = 0; i < LISTS; i++)
      if ((at[i] = 0) < len[i]) coll_heap_push(&q, key[i * MAXLEN], i);
    long long n = 0, sorted = 1, last = -1, prev_item = -1;
    while (q.n > 0) {
      int i = q.h[0].item;
      long long k = q.h[0].key;
      sorted &= k > last || (k == last && i > prev_item) || (k == last && i == prev_item);
      last = k, prev_item = i;
      out[n++] = k;
      if (++at[i] < len[i]) coll_heap_retop(&q, key[i * MAXLEN + at[i]]);
      else coll_heap_pop(&q);
    }
    long long sum_in = 0, sum_out = 0;
    for (int i = 0; i < LISTS; i++)
      for (int j = 0; j < len[i]; j++) sum_in += key[i * MAXLEN + j];
    for (long long j = 0; j < n; j++) sum_out += out[j];
    CHECK(n == total && sum_in == sum_out, "shape %d: merged %lld of %lld keys", shape, n, total);
    CHECK(sorted, "shape %d: keys (then lists) not taken in order", shape);
  }
  free(key);
  free(out);
  free(h);
}

/* ---- parts of a filetype (runs.c): an aggregator's share of another rank's runs ---- */

/* Data bytes of the view (disp, runs, extent) before file offset f, by brute force. */
static long long ref_before(long long disp, const pario_run *r, size_t n, long long extent, long long f) {
  long long d = 0;
  for (long long k = 0; k < 64; k++)
    for (size_t i = 0; i < n; i++) {
      long long s = disp + k * extent + r[i].off, e = s + r[i].len;
      d += e <= f ? r[i].len : s < f ? f - s : 0;
    }
  return d;
}

/* Random filetypes, displacements and file ranges: the part a range needs gives exactly the
 * whole filetype's answers (data before an offset, the file offset of a data position) for
 * every offset of the range and every data position whose byte is in it. */
static void parts(void) {
  long long bad_before = 0, bad_cursor = 0, smaller = 0, total = 0;
  for (int trial = 0; trial < 400; trial++) {
    pario_run runs[40];
    MPI_Offset cum[41] = {0};
    size_t n = 1 + (size_t)rnd(40);
    long long at = rnd(5);
    for (size_t i = 0; i < n; i++) {
      runs[i] = (pario_run){at, 1 + rnd(6)};
      at += runs[i].len + 1 + rnd(7);
      cum[i + 1] = cum[i] + runs[i].len;
    }
    long long extent = at + rnd(4), disp = rnd(50);
    pario_typemap full = {.runs = runs, .nruns = n, .cum = cum, .size = cum[n], .extent = extent};
    CHECK(!coll_part_whole(&full, 0) && coll_part_whole(&full, 1), "trial %d: whole only when contiguous", trial);
    long long lo = disp + runs[0].off + rnd(3 * extent), hi = lo + 1 + rnd(extent);
    coll_hold need = {.off0 = runs[0].off};
    coll_part_need(&need, extent, disp, lo, hi);
    size_t i0, i1;
    coll_part_select(&full, &need, &i0, &i1);
    smaller += i1 - i0 < n;
    total++;
    MPI_Offset pcum[41];
    for (size_t i = i0; i <= i1; i++) pcum[i - i0] = cum[i];
    pario_typemap part = {.runs = runs + i0, .nruns = i1 - i0, .cum = pcum, .size = cum[n], .extent = extent};
    pario_view v = {.disp = disp, .ftm = &part};
    for (long long f = lo; f <= hi; f++)
      bad_before += coll_part_before(&v, &need, f) != ref_before(disp, runs, n, extent, f);
    for (long long p = ref_before(disp, runs, n, extent, lo); p < ref_before(disp, runs, n, extent, hi); p++) {
      pario_fcursor fc;
      MPI_Offset off, want = disp + (p / cum[n]) * extent;
      size_t k = 0;
      while (cum[k + 1] <= p % cum[n]) k++;
      want += runs[k].off + p % cum[n] - cum[k];
      coll_part_cursor(&fc, &v, p);
      pario_fcursor_next(&fc, 1, &off);
      bad_cursor += off != want;
    }
  }
  CHECK(bad_before == 0, "parts: data before an offset of the range: %lld wrong", bad_before);
  CHECK(bad_cursor == 0, "parts: file offsets of data in the range: %lld wrong", bad_cursor);
  CHECK(smaller > total / 4, "parts: most ranges need part of the runs (%lld of %lld)", smaller, total);
  /* what is held, joined and covered */
  coll_hold h = {0}, a = {.a = 10, .b = 20, .off0 = 2, .have = 1}, b = {.a = 15, .b = 30, .off0 = 2, .have = 1};
  CHECK(!coll_part_covers(&h, &a), "nothing held covers nothing");
  coll_part_join(&h, &a);
  CHECK(coll_part_covers(&h, &a) && !coll_part_covers(&h, &b), "held [10, 20) covers itself, not [15, 30)");
  coll_part_join(&h, &b);
  CHECK(h.a == 10 && h.b == 30 && coll_part_covers(&h, &b), "joined: [10, 30)");
  coll_hold w = {.whole = 1, .have = 1};
  CHECK(coll_part_covers(&w, &b), "the whole filetype covers any range");
  coll_hold t = {.off0 = 2};
  coll_part_need(&t, 100, 1000, 1250, 1290); /* tile 2 is [1202, 1302): [50, 90) in the tile's offsets */
  CHECK(t.a == 50 && t.b == 90, "need in tile 2: [%lld, %lld)", t.a, t.b);
  coll_part_need(&t, 100, 1000, 1250, 1320); /* into tile 3: the whole tile */
  CHECK(t.a == 2 && t.b == 102, "need across tiles: [%lld, %lld)", t.a, t.b);
}

int main(void) {
  node_map();
  aggregators();
  plans();
  span_and_decision();
  read_volumes();
  runs_codec();
  interleaving();
  merging();
  parts();
  printf("collplan: %d checks, %d failures\n", checks, failures);
  return failures != 0;
}
