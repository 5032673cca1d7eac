/* The view exchange and the view cache. An aggregator computes the other ranks' pieces of its
 * windows from their views; it needs of each rank's filetype only the runs that meet its file
 * domain (a range of the filetype's tile, coll_hold in runs.h), and no other rank needs any
 * other rank's view. So at an aggregated call, once the plan (and so every domain) is known,
 * each rank sends each aggregator whose domain its access meets a header and the runs there
 * (strided groups, runs.h), unless that aggregator holds them already from an earlier call
 * under the same views; both sides decide alike from the same numbers (the allgather's and
 * what was sent before), so no collective is needed and a rank that sends nothing posts
 * nothing. From then on both sides of the data exchange compute every message size
 * themselves, and no offset lists are sent. The context keeps the last few such sets of views
 * (hint pario_coll_view_cache), by content: each rank tells in the call's allgather which sets
 * hold its own view (coll_info.vhit), and when one set holds every rank's, the call uses it and
 * sends only the parts that domains reach for the first time. Every rank sees the same bits, so
 * every rank makes the same choice (hit or a new set, and which set it replaces). The
 * displacement is not part of a set: it travels in every call's allgather, and parts are
 * ranges of the tile, so a client that moves the same filetype along the file (HDF5 writing one
 * selection at a new address) sends nothing. On remote storage every aggregator holds every
 * rank's whole filetype (each counts the aggregators with data in each round, coll_tag). */
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
  for (int r = 0; s->held && r < c->np; r++) s->held[r] = (coll_hold){0};
  for (int i = 0; s->sent && i < c->np; i++) s->sent[i] = (coll_hold){0};
  s->ok = 0;
  s->own_gen = 0;
}

void coll_views_forget(pario_coll_ctx *c) {
  for (int i = 0; i < COLL_VSETS_MAX; i++) {
    vset_clear(c, &c->vsets[i]);
    free(c->vsets[i].views);
    free(c->vsets[i].maps);
    free(c->vsets[i].held);
    free(c->vsets[i].sent);
    c->vsets[i].views = NULL;
    c->vsets[i].maps = NULL;
    c->vsets[i].held = NULL;
    c->vsets[i].sent = NULL;
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


/* A map m of h->nruns runs, given (runs) or decoded from words (not NULL), cum from h->cum0
 * on; the view v (its displacement set per call). */
static int install(pario_typemap *m, pario_view *v, const struct coll_view_hdr *h, const pario_run *runs,
                   const long long *words, int nwords) {
  free(m->runs);
  free(m->cum);
  *m = (pario_typemap){.nruns = (size_t)h->nruns, .lb = h->lb, .extent = h->extent, .size = h->size,
                       .dense = (int)h->contiguous, .monotonic = 1, .nonneg = 1, .refs = 1};
  m->runs = malloc(sizeof(pario_run) * (m->nruns ? m->nruns : 1));
  m->cum = malloc(sizeof(MPI_Offset) * (m->nruns + 1));
  if (!m->runs || !m->cum) return MPI_ERR_NO_MEM;
  if (words && !coll_runs_decode(words, nwords, m->runs, m->nruns)) return MPI_ERR_INTERN;
  if (!words && m->nruns) memcpy(m->runs, runs, sizeof(pario_run) * m->nruns);
  m->cum[0] = h->cum0;
  for (size_t i = 0; i < m->nruns; i++) m->cum[i + 1] = m->cum[i] + m->runs[i].len;
  *v = (pario_view){.esize = h->esize, .contiguous = (int)h->contiguous, .ftm = m};
  return MPI_SUCCESS;
}

/* The header of view v's part h (runs [i0, i1) of its filetype). */
static struct coll_view_hdr header(const pario_view *v, const coll_hold *h, size_t i0, size_t i1) {
  const pario_typemap *t = v->ftm;
  return (struct coll_view_hdr){v->esize, v->contiguous, t->lb, t->extent, t->size, h->off0, h->whole, h->a, h->b,
                                t->cum[i0], (long long)(i1 - i0), 0};
}

/* Set s emptied for this call's views: this rank's own view in full (to compare with). */
static int fresh(pario_coll_ctx *c, coll_vset *s, const pario_view *mine) {
  size_t n = (size_t)c->np;
  vset_clear(c, s);
  if (c->nomem_site == COLL_SITE_VIEWS && c->rank == c->nomem_rank) return MPI_ERR_NO_MEM; /* tests */
  if (!s->views) s->views = calloc(n, sizeof *s->views);
  if (!s->maps) s->maps = calloc(n, sizeof *s->maps);
  if (!s->held) s->held = calloc(n, sizeof *s->held);
  if (!s->sent) s->sent = calloc(n, sizeof *s->sent);
  if (!s->views || !s->maps || !s->held || !s->sent) return MPI_ERR_NO_MEM;
  const pario_typemap *t = mine->ftm;
  coll_hold all = {.whole = 1};
  struct coll_view_hdr h = header(mine, &all, 0, t->nruns);
  int rc = install(&s->maps[c->rank], &s->views[c->rank], &h, t->runs, NULL, 0);
  if (rc != MPI_SUCCESS) return rc;
  s->ok = 1;
  s->key = view_key(&s->views[c->rank]);
  s->own_gen = mine->gen;
  return MPI_SUCCESS;
}

/* Whether aggregator i lacks a part of rank r's filetype that call x needs (held: what it
 * holds; known: the filetype's geometry is in *need's off0 and whole, and extent): then *need
 * is what is sent, the part needed joined with the part held. Rank r and the aggregator both
 * compute it from the same numbers; an aggregator that holds nothing of r yet learns the
 * geometry with the part. */
static int lacks(const pario_coll_ctx *c, const coll_call *x, int r, int i, const coll_hold *held, int known,
                 MPI_Offset extent, coll_hold *need) {
  const struct coll_info *in = &c->info[r];
  MPI_Offset lo = PARIO_MAX(in->first, x->plan.bound[i]), hi = PARIO_MIN(in->last, x->plan.bound[i + 1]);
  if (c->f->drv->remote) lo = in->first, hi = in->last, need->whole = 1; /* every rank's, whole */
  if (in->n == 0 || lo >= hi) return 0;
  if (known) coll_part_need(need, extent, in->disp, lo, hi);
  if (!held->have) return 1;
  if (coll_part_covers(held, need)) return 0;
  coll_part_join(need, held);
  return 1;
}

enum { TAG_VHDR = 11, TAG_VRUNS = 12 }; /* received before the rounds start */

/* This rank's side: a header and the runs of the part each aggregator lacks, posted into
 * c->reqs from *nreq on, encoded one after the other in c->venc. s NULL: this rank could not
 * make its set, and tells each aggregator it would have sent to (words -1, no runs). */
static int send_parts(pario_coll_ctx *c, const coll_call *x, coll_vset *s, int *nreq) {
  const pario_view *v = x->view;
  const pario_typemap *t = v->ftm;
  struct coll_view_hdr *out = c->hdrs + c->np;
  size_t total = 0, i0, i1;
  int rc = s ? MPI_SUCCESS : MPI_ERR_NO_MEM;
  for (int i = 0; i < c->naggr; i++) {
    coll_hold need = {.off0 = t->nruns ? t->runs[0].off : 0, .whole = coll_part_whole(t, v->contiguous)}, none = {0};
    out[i].words = -2; /* nothing to send */
    if (c->aggr[i] == c->rank || !lacks(c, x, c->rank, i, s ? &s->sent[i] : &none, 1, t->extent, &need)) continue;
    coll_part_select(t, &need, &i0, &i1);
    out[i] = header(v, &need, i0, i1);
    pario_typemap part = {.runs = t->runs + i0, .nruns = i1 - i0};
    out[i].words = (long long)coll_runs_words(&part);
    total += (size_t)out[i].words;
    if (s) s->sent[i] = need;
  }
  if (rc == MPI_SUCCESS &&
      (total >= INT32_MAX / 2 || !coll_grow(c, COLL_SITE_NONE, &c->venc, &c->vecap, sizeof(long long) * total)))
    rc = MPI_ERR_NO_MEM;
  long long *w = c->venc;
  for (int i = 0; i < c->naggr; i++) {
    if (out[i].words == -2) continue;
    long long nw = out[i].words;
    if (rc != MPI_SUCCESS) out[i].words = -1; /* no runs follow */
    PMPI_Isend(&out[i], COLL_VHDR_WORDS, MPI_LONG_LONG, c->aggr[i], TAG_VHDR, c->comm, &c->reqs[(*nreq)++]);
    if (rc != MPI_SUCCESS) continue;
    coll_part_select(t, &s->sent[i], &i0, &i1);
    pario_typemap part = {.runs = t->runs + i0, .nruns = i1 - i0};
    coll_runs_encode(&part, w);
    PMPI_Isend(w, (int)nw, MPI_LONG_LONG, c->aggr[i], TAG_VRUNS, c->comm, &c->reqs[(*nreq)++]);
    w += nw;
  }
  return rc;
}

/* An aggregator's side: the headers and runs of the parts it lacks, installed into s (s NULL:
 * this rank could not make its set; it takes the messages all the same, so that nobody waits
 * and none is left for a later call). */
static int take_parts(pario_coll_ctx *c, const coll_call *x, coll_vset *s, int *nreq) {
  int rc = s ? MPI_SUCCESS : MPI_ERR_NO_MEM, n0 = *nreq, nexp = 0;
  long long total = 0;
  for (int r = 0; r < c->np; r++) {
    coll_hold none = {0}, *held = s ? &s->held[r] : &none, need = *held;
    c->cnt[r] = -2; /* nothing comes */
    if (r == c->rank || !lacks(c, x, r, x->me_aggr, held, held->have, s ? s->maps[r].extent : 0, &need)) continue;
    c->cnt[r] = 0;
    PMPI_Irecv(&c->hdrs[r], COLL_VHDR_WORDS, MPI_LONG_LONG, r, TAG_VHDR, c->comm, &c->reqs[(*nreq)++]);
    nexp++;
  }
  if (!nexp) return rc;
  int lost = pario_wait_all(*nreq - n0, c->reqs + n0, MPI_STATUSES_IGNORE) != MPI_SUCCESS && pario_wait_stuck_ms();
  *nreq = n0;
  if (lost) return MPI_ERR_OTHER; /* pario_timeout expired: the headers are not there */
  for (int r = 0; r < c->np; r++) {
    if (c->cnt[r] == -2) continue;
    long long wds = c->hdrs[r].words;
    if (wds < 0 || total + wds >= INT32_MAX) { /* the rank sends no runs (out of memory), or too many */
      if (rc == MPI_SUCCESS) rc = MPI_ERR_NO_MEM;
      c->cnt[r] = -2;
      continue;
    }
    c->cnt[r] = (int)wds;
    c->dsp[r] = (int)total;
    total += wds;
  }
  int room = s && coll_grow(c, COLL_SITE_VIEWS, &c->vbuf, &c->vbcap, sizeof(long long) * (size_t)(total ? total : 1));
  for (int r = 0; r < c->np && room; r++)
    if (c->cnt[r] >= 0)
      PMPI_Irecv(c->vbuf + c->dsp[r], c->cnt[r], MPI_LONG_LONG, r, TAG_VRUNS, c->comm, &c->reqs[(*nreq)++]);
  lost = pario_wait_all(*nreq - n0, c->reqs + n0, MPI_STATUSES_IGNORE) != MPI_SUCCESS && pario_wait_stuck_ms();
  *nreq = n0;
  if (lost) return MPI_ERR_OTHER; /* the runs are not there */
  for (int r = 0; r < c->np; r++) {
    if (c->cnt[r] < 0) continue;
    if (!room) { /* no memory: take the message all the same (truncated to nothing) */
      long long nothing;
      PMPI_Recv(&nothing, 0, MPI_LONG_LONG, r, TAG_VRUNS, c->comm, MPI_STATUS_IGNORE);
      if (rc == MPI_SUCCESS) rc = MPI_ERR_NO_MEM;
      continue;
    }
    const struct coll_view_hdr *h = &c->hdrs[r];
    int e = install(&s->maps[r], &s->views[r], h, NULL, c->vbuf + c->dsp[r], c->cnt[r]);
    s->held[r] = (coll_hold){.a = h->a, .b = h->b, .off0 = h->off0, .whole = (int)h->whole, .have = e == MPI_SUCCESS};
    s->views[r].disp = c->info[r].disp;
    if (rc == MPI_SUCCESS) rc = e;
  }
  return rc;
}

int coll_views_use(pario_coll_ctx *c, const coll_call *x) {
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
    rc = fresh(c, &c->vsets[i], x->view);
  }
  coll_vset *s = rc == MPI_SUCCESS ? &c->vsets[i] : NULL;
  c->vset = i;
  for (int r = 0; s && r < c->np; r++) s->views[r].disp = c->info[r].disp;
  if (s) s->used = c->calls;
  /* A rank that could not make its set still tells and takes every message it would have:
   * its failure is agreed after this. */
  int nreq = 0, e = send_parts(c, x, s, &nreq);
  if (x->me_aggr >= 0) rc = take_parts(c, x, s, &nreq);
  pario_wait_all(nreq, c->reqs, MPI_STATUSES_IGNORE);
  return rc == MPI_SUCCESS ? e : rc;
}

MPI_Offset coll_view_before_in(const pario_coll_ctx *c, const coll_call *x, int r, MPI_Offset fileoff, MPI_Offset pos,
                               MPI_Offset n) {
  const coll_vset *s = &c->vsets[c->vset];
  if (r == c->rank || s->held[r].whole) return pario_view_data_before_in(r == c->rank ? x->view : &s->views[r], fileoff, pos, n);
  if (n <= 0) return pos;
  return PARIO_MIN(pos + n, PARIO_MAX(pos, coll_part_before(&s->views[r], &s->held[r], fileoff)));
}

void coll_view_cursor(const pario_coll_ctx *c, const coll_call *x, int r, pario_fcursor *fc, MPI_Offset pos) {
  const coll_vset *s = &c->vsets[c->vset];
  if (r == c->rank || s->held[r].whole) pario_fcursor_init(fc, r == c->rank ? x->view : &s->views[r], pos);
  else coll_part_cursor(fc, &s->views[r], pos);
}
