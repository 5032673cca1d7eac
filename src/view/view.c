/* View arithmetic: data positions (bytes of data seen through a view) <-> absolute file
 * offsets, and memory cursors that turn (buffer, count, datatype) into contiguous pieces. */
#include "view/view.h"
#include "core/common.h"

#include <stdint.h>
#include <string.h>

/* ---- the shared walk (pario_rcursor_next is inline in view.h) ---- */

static void rinit(pario_rcursor *c, const pario_typemap *t, MPI_Offset pos) {
  c->tm = t;
  c->copy = pos / t->size;
  MPI_Offset within = pos % t->size;
  c->run = pario_typemap_find(t, within);
  c->into = within - t->cum[c->run];
}

/* ---- file side ---- */

void pario_fcursor_init(pario_fcursor *c, const pario_view *v, MPI_Offset pos) {
  c->v = v;
  rinit(&c->r, v->ftm, pos);
}

MPI_Offset pario_view_file_offset(const pario_view *v, MPI_Offset pos) {
  if (v->ftm->size == 0) return v->disp; /* a view with no data */
  pario_fcursor c;
  MPI_Offset off;
  pario_fcursor_init(&c, v, pos);
  pario_fcursor_next(&c, 1, &off);
  return off;
}

MPI_Offset pario_view_data_before(const pario_view *v, MPI_Offset fileoff) {
  const pario_typemap *t = v->ftm;
  MPI_Offset rel = fileoff - v->disp;
  if (t->size == 0) return 0;
  if (v->contiguous) {
    MPI_Offset d = rel - t->runs[0].off;
    return d > 0 ? d : 0;
  }
  /* A legal filetype keeps the data of tile k inside [k*extent + off0, (k+1)*extent + off0)
   * with runs in increasing order, so: the tile by division, the run by binary search. */
  MPI_Offset x = rel - t->runs[0].off;
  if (x <= 0) return 0;
  MPI_Offset tile = x / t->extent, within = rel - tile * t->extent;
  size_t lo = 0, hi = t->nruns; /* first run starting at or after within */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (t->runs[mid].off < within) lo = mid + 1; else hi = mid;
  }
  MPI_Offset data = tile * t->size;
  if (lo == 0) return data;
  const pario_run *r = &t->runs[lo - 1];
  return data + t->cum[lo - 1] + PARIO_MIN(r->len, within - r->off);
}

/* A tile's data reaches into the next tile's: tile arithmetic by division does not hold. */
static int tiles_interleave(const pario_typemap *t) {
  const pario_run *a = &t->runs[0], *z = &t->runs[t->nruns - 1];
  return z->off + z->len - a->off > t->extent;
}

int pario_view_irregular(const pario_view *v, MPI_Offset pos, MPI_Offset n) {
  const pario_typemap *t = v->ftm;
  return n > 0 && !v->contiguous && t->size > 0 && tiles_interleave(t) && pos / t->size != (pos + n - 1) / t->size;
}

MPI_Offset pario_view_data_before_in(const pario_view *v, MPI_Offset fileoff, MPI_Offset pos, MPI_Offset n) {
  const pario_typemap *t = v->ftm;
  if (n <= 0) return pos;
  if (v->contiguous || t->size == 0 || !tiles_interleave(t))
    return PARIO_MIN(pos + n, PARIO_MAX(pos, pario_view_data_before(v, fileoff)));
  MPI_Offset lo = pos, hi = pos + n; /* the first p with file offset >= fileoff, by bisection */
  while (lo < hi) {
    MPI_Offset mid = lo + (hi - lo) / 2;
    if (pario_view_file_offset(v, mid) < fileoff) lo = mid + 1; else hi = mid;
  }
  return lo;
}

void pario_view_extent_of(const pario_view *v, MPI_Offset pos, MPI_Offset n, MPI_Offset *first,
                          MPI_Offset *last) {
  const pario_typemap *t = v->ftm;
  *first = pario_view_file_offset(v, pos);
  if (v->contiguous) {
    *last = *first + n;
    return;
  }
  MPI_Offset end = pos + n - 1; /* last data byte */
  MPI_Offset tile = end / t->size;
  size_t r = pario_typemap_find(t, end % t->size);
  *last = v->disp + tile * t->extent + t->runs[r].off + (end % t->size - t->cum[r]) + 1;
  if (pario_view_irregular(v, pos, n)) { /* copies interleave: the copies in between bound it too */
    MPI_Offset k0 = pos / t->size, zend = t->runs[t->nruns - 1].off + t->runs[t->nruns - 1].len;
    *first = PARIO_MIN(*first, v->disp + (k0 + 1) * t->extent + t->runs[0].off);
    *last = PARIO_MAX(*last, v->disp + (tile - 1) * t->extent + zend);
  }
}

/* ---- memory side ---- */

void pario_mcursor_init(pario_mcursor *c, void *buf, const pario_typemap *tm) {
  pario_mcursor_init_at(c, buf, tm, 0);
}

void pario_mcursor_init_at(pario_mcursor *c, void *buf, const pario_typemap *tm, MPI_Offset pos) {
  c->buf = buf;
  rinit(&c->r, tm, pos);
}

char *pario_mcursor_contig(void *buf, const pario_typemap *tm, MPI_Count count) {
  if (tm->size == 0) return buf;
  if (tm->dense || (tm->nruns == 1 && count <= 1)) return (char *)buf + tm->runs[0].off;
  return NULL;
}

static MPI_Offset mnext(pario_mcursor *c, MPI_Offset max, char **p) {
  MPI_Offset rel, n = pario_rcursor_next(&c->r, max, &rel);
  *p = c->buf + rel;
  return n;
}

MPI_Offset pario_mcursor_iov(pario_mcursor *c, MPI_Offset n, struct iovec *iov, int maxiov,
                             int *iovcnt) {
  MPI_Offset done = 0;
  int k = 0;
  while (done < n && k < maxiov) {
    char *p;
    MPI_Offset m = mnext(c, n - done, &p);
    if (k && (char *)iov[k - 1].iov_base + iov[k - 1].iov_len == p) {
      iov[k - 1].iov_len += (size_t)m;
    } else {
      iov[k].iov_base = p;
      iov[k].iov_len = (size_t)m;
      k++;
    }
    done += m;
  }
  *iovcnt = k;
  return done;
}

/* n bytes between the cursor's memory and the packed buffer ext: into ext (pack) or out. */
static void mcopy(pario_mcursor *c, char *ext, MPI_Offset n, int unpack) {
  while (n > 0) {
    char *p;
    MPI_Offset m = mnext(c, n, &p);
    if (unpack) memcpy(p, ext, (size_t)m); else memcpy(ext, p, (size_t)m);
    ext += m;
    n -= m;
  }
}

void pario_mcursor_pack(pario_mcursor *c, void *dst, MPI_Offset n) { mcopy(c, dst, n, 0); }

void pario_mcursor_unpack(pario_mcursor *c, const void *src, MPI_Offset n) { mcopy(c, (char *)(uintptr_t)src, n, 1); }
