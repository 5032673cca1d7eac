/* The view exchange and the view cache. At an aggregated call under views not seen before,
 * every aggregator learns every rank's view (a header each, then the runs in strided groups,
 * runs.h); the other ranks need only their own, as only an aggregator computes other ranks'
 * pieces. From then on both sides of the data exchange compute every message size
 * themselves, and no offset lists are sent. The context keeps the last few such sets of views
 * (hint pario_coll_view_cache), by content: each rank tells in the call's allgather which sets
 * hold its own view (coll_info.vhit), and when one set holds every rank's, the call uses it and
 * nothing more is sent. Every rank sees the same bits, so every rank makes the same choice
 * (hit or exchange, and which set an exchange replaces) without a collective of its own. The
 * displacement is not part of a set: it travels in every call's allgather, so a client that
 * moves the same filetype along the file (HDF5 writing one selection at a new address) hits. */
#include "collective/internal.h"
#include "collective/runs.h"

#include <stdlib.h>
#include <string.h>

static void vset_clear(pario_coll_ctx *c, coll_vset *s) {
  for (int r = 0; s->maps && r < c->np; r++) {
    free(s->maps[r].runs);
    free(s->maps[r].cum);
    s->maps[r].runs = NULL;
    s->maps[r].cum = NULL;
  }
  s->ok = 0;
  s->own_gen = 0;
}

void coll_views_forget(pario_coll_ctx *c) {
  for (int i = 0; i < COLL_VSETS_MAX; i++) {
    vset_clear(c, &c->vsets[i]);
    free(c->vsets[i].views);
    free(c->vsets[i].maps);
    c->vsets[i].views = NULL;
    c->vsets[i].maps = NULL;
  }
}

/* A hash (FNV-1a over words) of what a set keeps of a view: etype size, density, the
 * filetype's bounds and runs (under external32 the file representation's, as exchanged). */
static unsigned long long view_key(const pario_view *v) {
  const pario_typemap *t = v->ftm;
  long long w[] = {v->esize, v->contiguous, t->lb, t->extent, t->size, (long long)t->nruns};
  unsigned long long h = 1469598103934665603ull;
  for (size_t i = 0; i < sizeof w / sizeof *w; i++) h = (h ^ (unsigned long long)w[i]) * 1099511628211ull;
  for (size_t i = 0; i < t->nruns; i++)
    h = ((h ^ (unsigned long long)t->runs[i].off) * 1099511628211ull ^ (unsigned long long)t->runs[i].len) *
        1099511628211ull;
  return h;
}

/* Whether set s's entry for this rank is v (exactly: the key only rules out). */
static int same_view(const pario_coll_ctx *c, const coll_vset *s, const pario_view *v, unsigned long long key) {
  const pario_view *e = &s->views[c->rank];
  const pario_typemap *a = e->ftm, *b = v->ftm;
  return s->key == key && e->esize == v->esize && e->contiguous == v->contiguous && a->lb == b->lb &&
         a->extent == b->extent && a->size == b->size && a->nruns == b->nruns &&
         (!a->nruns || !memcmp(a->runs, b->runs, sizeof *a->runs * a->nruns));
}

long long coll_views_probe(pario_coll_ctx *c, const pario_view *v) {
  long long bits = 0;
  unsigned long long key = 0;
  int keyed = 0;
  for (int i = 0; i < c->nvsets; i++) {
    coll_vset *s = &c->vsets[i];
    if (!s->ok) continue;
    if (v->gen && s->own_gen == v->gen) { /* this view object matched before */
      bits |= 1LL << i;
      continue;
    }
    if (!keyed) key = view_key(v), keyed = 1;
    if (same_view(c, s, v, key)) {
      s->own_gen = v->gen;
      bits |= 1LL << i;
    }
  }
  return bits;
}


/* Where each rank's runs go in an aggregator's vbuf, from the headers: 0 when some rank cannot
 * go on or the total does not fit. */
static int layout(pario_coll_ctx *c, long long *total) {
  *total = 0;
  for (int r = 0; r < c->np; r++) {
    long long w = c->hdrs[r].words;
    if (w < 0 || *total + w >= INT32_MAX) return 0;
    c->cnt[r] = (int)w;
    c->dsp[r] = (int)*total;
    *total += w;
  }
  return 1;
}

/* Rank r's view from its header and its encoded runs. */
static int install(pario_coll_ctx *c, coll_vset *s, int r, const long long *words) {
  const struct coll_view_hdr *h = &c->hdrs[r];
  pario_typemap *m = &s->maps[r];
  if (h->nruns < 0) return MPI_ERR_INTERN;
  m->nruns = (size_t)h->nruns;
  m->runs = malloc(sizeof(pario_run) * (m->nruns ? m->nruns : 1));
  m->cum = malloc(sizeof(MPI_Offset) * (m->nruns + 1));
  if (!m->runs || !m->cum) return MPI_ERR_NO_MEM;
  if (!coll_runs_decode(words, c->cnt[r], m->runs, m->nruns)) return MPI_ERR_INTERN;
  m->cum[0] = 0;
  for (size_t i = 0; i < m->nruns; i++) m->cum[i + 1] = m->cum[i] + m->runs[i].len;
  m->lb = h->lb;
  m->extent = h->extent;
  m->size = h->size;
  m->dense = (int)h->contiguous;
  m->monotonic = m->nonneg = 1;
  m->refs = 1;
  s->views[r] = (pario_view){.disp = h->disp, .esize = h->esize, .contiguous = (int)h->contiguous, .ftm = m};
  return MPI_SUCCESS;
}

/* Whether this rank is one of the call's aggregators (prepare made c->aggr). */
static int aggregates(const pario_coll_ctx *c) {
  for (int i = 0; i < c->naggr; i++)
    if (c->aggr[i] == c->rank) return 1;
  return 0;
}

/* Send one message to every other aggregator, or (aggregator) receive one from every other
 * rank: buf(r) the buffer of rank r's, n(r) its words; then wait for all of it. */
static void to_aggregators(pario_coll_ctx *c, long long *mine, int nmine, long long *(*buf)(pario_coll_ctx *, int),
                           int (*n)(const pario_coll_ctx *, int)) {
  enum { TAG_VIEW = 11 }; /* every message is received before the rounds start */
  int nreq = 0;
  for (int i = 0; i < c->naggr; i++)
    if (c->aggr[i] != c->rank)
      PMPI_Isend(mine, nmine, MPI_LONG_LONG, c->aggr[i], TAG_VIEW, c->comm, &c->reqs[nreq++]);
  for (int r = 0; aggregates(c) && r < c->np; r++)
    if (r != c->rank) PMPI_Irecv(buf(c, r), n(c, r), MPI_LONG_LONG, r, TAG_VIEW, c->comm, &c->reqs[nreq++]);
  pario_wait_all(nreq, c->reqs, c->st);
}

static long long *hdr_buf(pario_coll_ctx *c, int r) { return (long long *)&c->hdrs[r]; }
static int hdr_words(const pario_coll_ctx *c, int r) { return (void)c, (void)r, COLL_VHDR_WORDS; }
static long long *run_buf(pario_coll_ctx *c, int r) { return (long long *)c->vbuf + c->dsp[r]; }
static int run_words(const pario_coll_ctx *c, int r) { return c->cnt[r]; }

/* Exchange the views into set s (collective over c->comm): each rank sends its header to
 * every aggregator; one allreduce checks that every aggregator can take the runs (nobody
 * sends them otherwise); each rank sends its runs to every aggregator. An aggregator installs
 * every rank's view, the others their own. */
static int exchange(pario_coll_ctx *c, coll_vset *s, const pario_view *mine) {
  size_t nw = coll_runs_words(mine->ftm), n = (size_t)c->np;
  long long *enc = nw < INT32_MAX / 2 ? malloc(sizeof(long long) * nw) : NULL, total = 0;
  int agg = aggregates(c), bad = !enc, anybad = 1, rc = MPI_SUCCESS;
  if (enc) coll_runs_encode(mine->ftm, enc);
  vset_clear(c, s);
  if (!s->views) s->views = calloc(n, sizeof *s->views);
  if (!s->maps) s->maps = calloc(n, sizeof *s->maps);
  bad |= !s->views || !s->maps;
  const pario_typemap *t = mine->ftm;
  c->hdrs[c->rank] = (struct coll_view_hdr){mine->disp, mine->esize, mine->contiguous, (long long)t->nruns,
                                            t->lb, t->extent, t->size, bad ? -1 : (long long)nw};
  to_aggregators(c, (long long *)&c->hdrs[c->rank], COLL_VHDR_WORDS, hdr_buf, hdr_words);
  if (!agg) { /* only this rank's own view: from its own header and runs */
    c->cnt[c->rank] = (int)nw;
    c->dsp[c->rank] = 0;
  } else if (!layout(c, &total) ||
             !coll_grow(c, COLL_SITE_VIEWS, &c->vbuf, &c->vbcap, sizeof(long long) * (size_t)(total ? total : 1))) {
    bad = 1;
  }
  /* whether every aggregator can take the runs: nobody sends them otherwise */
  if (pario_allreduce_max(&bad, &anybad, 1, MPI_INT, c->comm) != MPI_SUCCESS || anybad) {
    rc = MPI_ERR_NO_MEM;
    goto out;
  }
  to_aggregators(c, enc, (int)nw, run_buf, run_words);
  if (agg) memcpy(run_buf(c, c->rank), enc, sizeof(long long) * nw);
  for (int r = 0; r < c->np && rc == MPI_SUCCESS; r++)
    if (agg || r == c->rank) rc = install(c, s, r, agg ? run_buf(c, r) : enc);
  if (rc == MPI_SUCCESS) {
    s->ok = 1;
    s->key = view_key(&s->views[c->rank]);
    s->own_gen = mine->gen;
  }
out:
  free(enc);
  return rc;
}

int coll_views_use(pario_coll_ctx *c, const pario_view *mine) {
  long long hit = -1;
  for (int r = 0; r < c->np; r++) hit &= c->info[r].vhit;
  for (int i = 0; i < COLL_VSETS_MAX; i++) /* sets forgotten since the probe (new aggregators) */
    if (!c->vsets[i].ok) hit &= ~(1LL << i);
  int i = 0, rc = MPI_SUCCESS;
  if (hit && c->nvsets > 0) {
    while (!(hit & (1LL << i))) i++;
  } else { /* every rank picks the same set: an empty one, else the least recently used */
    for (int k = 1; k < PARIO_MAX(c->nvsets, 1); k++)
      if (c->vsets[i].ok && (!c->vsets[k].ok || c->vsets[k].used < c->vsets[i].used)) i = k;
    rc = exchange(c, &c->vsets[i], mine);
    if (rc != MPI_SUCCESS) return rc;
  }
  coll_vset *s = &c->vsets[i];
  s->used = c->calls;
  c->vset = i;
  for (int r = 0; r < c->np; r++) s->views[r].disp = c->info[r].disp;
  return MPI_SUCCESS;
}
