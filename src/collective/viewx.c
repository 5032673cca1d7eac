/* The view exchange: at the first aggregated call under a new view, every rank learns every
 * rank's view (a header each, then the runs in strided groups, runs.h). From then on both
 * sides of the data exchange compute every message size themselves, and no offset lists are
 * sent. A context keeps the views with the generation they were exchanged for. */
#include "collective/internal.h"
#include "collective/runs.h"

#include <stdlib.h>

void coll_views_forget(pario_coll_ctx *c) {
  for (int r = 0; c->maps && r < c->np; r++) {
    free(c->maps[r].runs);
    free(c->maps[r].cum);
    c->maps[r].runs = NULL;
    c->maps[r].cum = NULL;
  }
  c->views_ok = 0;
}

/* Everyone learns everyone's header; words < 0 says that rank cannot go on. */
static void gather_headers(pario_coll_ctx *c, const pario_view *v, long long words) {
  const pario_typemap *t = v->ftm;
  struct coll_view_hdr h = {v->disp, v->esize, v->contiguous, (long long)t->nruns, t->lb, t->extent,
                            t->size, words};
  MPI_Request rq;
  MPI_Status st;
  PMPI_Iallgather(&h, COLL_VHDR_WORDS, MPI_LONG_LONG, c->hdrs, COLL_VHDR_WORDS, MPI_LONG_LONG, c->comm, &rq);
  pario_wait_all(1, &rq, &st);
}

/* The allgatherv's counts and displacements from the headers: 0 when some rank cannot go on
 * or the total does not fit. */
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
static int install(pario_coll_ctx *c, int r, const long long *words) {
  const struct coll_view_hdr *h = &c->hdrs[r];
  pario_typemap *m = &c->maps[r];
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
  c->views[r] = (pario_view){.disp = h->disp, .esize = h->esize, .contiguous = (int)h->contiguous, .ftm = m};
  return MPI_SUCCESS;
}

int coll_views_exchange(pario_coll_ctx *c, const pario_view *mine) {
  size_t nw = coll_runs_words(mine->ftm);
  long long *enc = nw < INT32_MAX / 2 ? malloc(sizeof(long long) * nw) : NULL, *all = NULL, total = 0;
  if (enc) coll_runs_encode(mine->ftm, enc);
  gather_headers(c, mine, enc ? (long long)nw : -1);
  size_t cap = 0;
  int bad = !layout(c, &total), anybad = 1, rc = MPI_SUCCESS;
  if (!bad && !coll_grow(c, COLL_SITE_VIEWS, &all, &cap, sizeof(long long) * (size_t)(total ? total : 1)))
    bad = 1;
  /* whether every rank can take the runs: nobody enters the allgatherv otherwise */
  if (pario_allreduce_max(&bad, &anybad, 1, MPI_INT, c->comm) != MPI_SUCCESS || anybad) {
    rc = MPI_ERR_NO_MEM;
    goto out;
  }
  MPI_Request rq;
  MPI_Status st;
  PMPI_Iallgatherv(enc, c->cnt[c->rank], MPI_LONG_LONG, all, c->cnt, c->dsp, MPI_LONG_LONG, c->comm, &rq);
  pario_wait_all(1, &rq, &st);
  coll_views_forget(c);
  for (int r = 0; r < c->np && rc == MPI_SUCCESS; r++)
    if (r != c->rank) rc = install(c, r, all + c->dsp[r]);
  c->views_ok = rc == MPI_SUCCESS;
  c->views_gen = mine->gen;
out:
  free(enc);
  free(all);
  return rc;
}
