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
