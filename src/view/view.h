/* File views: displacement + etype + filetype, and the arithmetic between positions in the
 * view's data stream (bytes of data seen through the view) and absolute file offsets.
 * Memory cursors walk a (buffer, count, datatype) triple as a stream of contiguous pieces. */
#ifndef PARIO_VIEW_H
#define PARIO_VIEW_H

#include <sys/uio.h>
#include "view/typemap.h"

typedef struct pario_view {
  MPI_Offset disp;
  MPI_Datatype etype;     /* our own reference (dup) when derived */
  MPI_Datatype filetype;  /* our own reference (dup) when derived */
  const pario_typemap *ftm;
  unsigned char owned[2]; /* etype, filetype are our dups (freed with the view) */
  MPI_Offset esize;       /* etype size in bytes */
  int contiguous;         /* filetype dense: data position p is file offset disp + lb + p */
  MPI_Offset widest_hole; /* the widest hole between consecutive pieces of the filetype,
                             tile to tile included (0 for a dense one): sieving reads need
                             no look-ahead for holes when it is within pario_read_max_gap */
  char datarep[MPI_MAX_DATAREP_STRING];
  /* A representation other than native (core/rep.h; NULL for native and internal, which
   * pario stores as native): then ftm and esize are the file representation's, in ftm_own. */
  const struct pario_rep *rep;
  pario_typemap *ftm_own;
  unsigned long gen;      /* which set_view made it: equal on every rank for the same view */
  int refs;               /* holders: the file and each operation started under the view */
} pario_view;

/* A walk over consecutive copies of a typemap, piece by contiguous piece. */
typedef struct pario_rcursor {
  const pario_typemap *tm;
  MPI_Offset copy;  /* current copy (filetype tile, or memory datatype element) */
  size_t run;       /* current run in the typemap */
  MPI_Offset into;  /* bytes already consumed of that run */
} pario_rcursor;

/* The next contiguous piece of at most max bytes; *rel is its offset from the origin of copy
 * 0. A dense typemap is one run filling its extent, so its copies form a single stream.
 * Inline: the sieving loops call it once per piece, and pieces may be a few bytes. */
static inline MPI_Offset pario_rcursor_next(pario_rcursor *c, MPI_Offset max, MPI_Offset *rel) {
  const pario_typemap *t = c->tm;
  if (t->dense) {
    *rel = t->runs[0].off + c->copy * t->extent + c->into;
    c->into += max;
    return max;
  }
  const pario_run *r = &t->runs[c->run];
  MPI_Offset n = r->len - c->into < max ? r->len - c->into : max;
  *rel = c->copy * t->extent + r->off + c->into;
  c->into += n;
  if (c->into == r->len) {
    c->into = 0;
    if (++c->run == t->nruns) {
      c->run = 0;
      c->copy++;
    }
  }
  return n;
}

/* A file cursor: data position -> successive file segments. */
typedef struct pario_fcursor {
  const pario_view *v;
  pario_rcursor r;
} pario_fcursor;

void pario_fcursor_init(pario_fcursor *c, const pario_view *v, MPI_Offset pos);
/* Next file segment of at most max bytes: returns its length, *off its absolute offset. */
static inline MPI_Offset pario_fcursor_next(pario_fcursor *c, MPI_Offset max, MPI_Offset *off) {
  MPI_Offset rel, n = pario_rcursor_next(&c->r, max, &rel);
  *off = c->v->disp + rel;
  return n;
}

/* Absolute file offset of data position pos. */
MPI_Offset pario_view_file_offset(const pario_view *v, MPI_Offset pos);
/* Data bytes of the view that lie before absolute file offset fileoff. */
MPI_Offset pario_view_data_before(const pario_view *v, MPI_Offset fileoff);
/* The first data position p of [pos, pos + n) whose byte lies at or after absolute file offset
 * fileoff (pos + n when none does): the data of an access before fileoff is [pos, p). Right
 * also for filetypes whose copies interleave (data reaching past lb + extent, as PnetCDF's and
 * HDF5's views have), where pario_view_data_before's tile arithmetic does not hold, as long as
 * the access's file offsets grow with its data positions. */
/* 1 when the file offsets of data positions [pos, pos + n) may not grow with the positions: the
 * filetype's copies interleave and the access reaches into more than one of them. Such an
 * access is transferred piece by piece in data order (no sieving, no aggregation). */
int pario_view_irregular(const pario_view *v, MPI_Offset pos, MPI_Offset n);
MPI_Offset pario_view_data_before_in(const pario_view *v, MPI_Offset fileoff, MPI_Offset pos, MPI_Offset n);
/* Absolute byte range [*first, *last) touched by data positions [pos, pos+n), n > 0. */
void pario_view_extent_of(const pario_view *v, MPI_Offset pos, MPI_Offset n, MPI_Offset *first,
                          MPI_Offset *last);

/* A memory cursor over count copies of a datatype starting at buf. */
typedef struct pario_mcursor {
  char *buf;
  pario_rcursor r;
} pario_mcursor;

void pario_mcursor_init(pario_mcursor *c, void *buf, const pario_typemap *tm);
/* The same, positioned pos bytes into the data stream. */
void pario_mcursor_init_at(pario_mcursor *c, void *buf, const pario_typemap *tm, MPI_Offset pos);
/* Where the data stream of (buf, count, tm) starts when it is one contiguous piece of
 * memory (data position p is at the result + p), else NULL. */
char *pario_mcursor_contig(void *buf, const pario_typemap *tm, MPI_Count count);
/* Fill up to maxiov iovecs with the next n bytes (or fewer if iovecs run out); returns bytes. */
MPI_Offset pario_mcursor_iov(pario_mcursor *c, MPI_Offset n, struct iovec *iov, int maxiov,
                             int *iovcnt);

/* Copy n bytes between a contiguous buffer and the memory described by a cursor. */
void pario_mcursor_pack(pario_mcursor *c, void *dst, MPI_Offset n);
void pario_mcursor_unpack(pario_mcursor *c, const void *src, MPI_Offset n);

#endif
