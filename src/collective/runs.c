/* The strided-group encoding of a view's runs (runs.h): each rank's view travels once per
 * set_view to every rank, so a regular filetype should cost a few words, not one pair per run. */
#include "collective/runs.h"

#include "core/common.h"

/* The end of the group that starts at run i: runs of i's length at one stride. */
static size_t group_end(const pario_typemap *t, size_t i, MPI_Offset *stride) {
  size_t j = i + 1;
  *stride = 0;
  if (j < t->nruns && t->runs[j].len == t->runs[i].len) {
    *stride = t->runs[j].off - t->runs[i].off;
    while (j + 1 < t->nruns && t->runs[j + 1].len == t->runs[i].len &&
           t->runs[j + 1].off - t->runs[j].off == *stride)
      j++;
    j++;
  }
  return j;
}

static size_t groups(const pario_typemap *t) {
  size_t g = 0;
  MPI_Offset stride;
  for (size_t i = 0; i < t->nruns; i = group_end(t, i, &stride)) g++;
  return g;
}

/* Groups take 4 words each, pairs 2: groups when they are shorter. */
static int grouped(const pario_typemap *t, size_t g) { return 4 * g < 2 * t->nruns; }

size_t coll_runs_words(const pario_typemap *t) {
  size_t g = groups(t);
  return 1 + (grouped(t, g) ? 4 * g : 2 * t->nruns);
}

void coll_runs_encode(const pario_typemap *t, long long *w) {
  int grp = grouped(t, groups(t));
  *w++ = grp;
  for (size_t i = 0; i < t->nruns && !grp; i++) {
    *w++ = t->runs[i].off;
    *w++ = t->runs[i].len;
  }
  MPI_Offset stride;
  for (size_t i = 0, j; i < t->nruns && grp; i = j) {
    j = group_end(t, i, &stride);
    *w++ = (long long)(j - i);
    *w++ = t->runs[i].off;
    *w++ = t->runs[i].len;
    *w++ = stride;
  }
}

int coll_runs_decode(const long long *w, long long n, pario_run *runs, size_t nruns) {
  size_t k = 0;
  if (n < 1 || (w[0] != 0 && w[0] != 1)) return 0;
  long long step = w[0] ? 4 : 2;
  for (long long i = 1; i + step <= n; i += step) {
    long long cnt = w[0] ? w[i] : 1;
    const long long *g = w[0] ? w + i + 1 : w + i;
    for (long long j = 0; j < cnt; j++) {
      if (k >= nruns) return 0;
      runs[k].off = g[0] + j * (w[0] ? g[2] : 0);
      runs[k++].len = g[1];
    }
  }
  return k == nruns;
}

/* ---- parts of a filetype ---- */

int coll_part_whole(const pario_typemap *t, int contiguous) {
  if (contiguous || t->size == 0 || t->nruns == 0 || t->extent <= 0) return 1;
  const pario_run *z = &t->runs[t->nruns - 1];
  return z->off + z->len - t->runs[0].off > t->extent;
}

void coll_part_need(coll_hold *h, MPI_Offset extent, MPI_Offset disp, MPI_Offset lo, MPI_Offset hi) {
  h->have = 1;
  if (h->whole) {
    h->a = h->off0;
    h->b = h->off0 + extent;
    return;
  }
  MPI_Offset x = lo - disp - h->off0, tile = x >= 0 ? x / extent : -((-x + extent - 1) / extent);
  h->a = lo - disp - tile * extent;
  h->b = hi - disp - tile * extent;
  if (h->b > h->off0 + extent) h->a = h->off0, h->b = h->off0 + extent;
}

int coll_part_covers(const coll_hold *held, const coll_hold *need) {
  return held->have && (held->whole || (held->a <= need->a && need->b <= held->b));
}

void coll_part_join(coll_hold *held, const coll_hold *need) {
  if (!held->have) {
    *held = *need;
    return;
  }
  held->a = PARIO_MIN(held->a, need->a);
  held->b = PARIO_MAX(held->b, need->b);
}

/* The first run of t from which pred(run, x) holds (runs sorted, pred monotonic). */
static size_t first_run(const pario_typemap *t, MPI_Offset x, int end) {
  size_t lo = 0, hi = t->nruns;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if ((end ? t->runs[mid].off + t->runs[mid].len : t->runs[mid].off) <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

void coll_part_select(const pario_typemap *t, const coll_hold *h, size_t *i0, size_t *i1) {
  if (h->whole) {
    *i0 = 0;
    *i1 = t->nruns;
    return;
  }
  *i0 = first_run(t, h->a, 1);     /* the first ending after a */
  *i1 = first_run(t, h->b - 1, 0); /* the first starting at or after b */
  if (*i1 < *i0) *i1 = *i0;
}

MPI_Offset coll_part_before(const pario_view *v, const coll_hold *h, MPI_Offset fileoff) {
  const pario_typemap *t = v->ftm;
  MPI_Offset rel = fileoff - v->disp, x = rel - h->off0;
  if (x <= 0) return 0;
  MPI_Offset tile = x / t->extent, within = rel - tile * t->extent, data = tile * t->size;
  if (within <= h->off0) return data; /* the start of a tile (the end of the range, b = off0 + extent) */
  size_t lo = first_run(t, within - 1, 0); /* the first held run starting at or after within */
  if (lo == 0) return data + t->cum[0];
  const pario_run *r = &t->runs[lo - 1];
  return data + t->cum[lo - 1] + PARIO_MIN(r->len, within - r->off);
}

void coll_part_cursor(pario_fcursor *fc, const pario_view *v, MPI_Offset pos) {
  const pario_typemap *t = v->ftm;
  MPI_Offset within = pos % t->size;
  size_t lo = 0, hi = t->nruns; /* the last held run with cum[lo] <= within (cum is absolute) */
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    if (t->cum[mid] <= within) lo = mid;
    else hi = mid;
  }
  fc->v = v;
  fc->r = (pario_rcursor){.tm = t, .copy = pos / t->size, .run = lo, .into = within - t->cum[lo]};
}
