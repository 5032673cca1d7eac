/* The data exchange of two-phase I/O. Views are legal filetypes (monotonic), so the part of a
 * rank's access inside a file window [lo, hi) is one contiguous range of its data stream,
 * [data_before(lo), data_before(hi)); with every rank's view known (viewx.c), both sides of
 * every message compute its size. In round k, aggregator i owns window k of its file domain:
 * ranks send it their range straight from the user's buffer when that is contiguous (packed
 * otherwise), and the aggregator scatters the data into a chunk of its buffer by walking the
 * sender's view, reading the chunk first only where the data leaves holes, then writes it.
 * Reads run the other way, reading only the union of the pieces (holes wider than
 * pario_read_max_gap split the read). The exchange is nonblocking point-to-point: each rank talks only to
 * the aggregators whose windows it touches, and ranks with nothing to do skip the rounds (an
 * MPI_Alltoallv would need every rank in every round). */
#include "collective/internal.h"
#include "core/rep.h"
#include "rio/window.h"
#include "trace/trace.h"

#include <errno.h>
#include <string.h>
#include <sys/uio.h>

/* Read data from an aggregator that failed carries the tag TAG_ERR + error class, so no
 * agreement is needed after a read. */
enum { TAG = 7, TAG_ERR = 1000 };
/* The window is handled in chunks small enough to stay in the CPU cache while they are read,
 * filled and written (hint pario_coll_chunk, 512 KiB by default); on remote storage in one
 * piece, as each storage access is a network round trip (the driver pipelines a large access
 * in requests of its own). */
static MPI_Offset chunk_size(const pario_coll_ctx *c, const coll_call *x) {
  MPI_Offset chunk = (MPI_Offset)c->f->hints.coll_chunk;
  return c->f->drv->remote ? PARIO_MAX(x->plan.cb, chunk) : chunk;
}

/* Rank r's data in file window [lo, hi): data positions [*s, *e). Both sides of a message
 * compute it with this function, from the same numbers. */
static int piece_in(const pario_coll_ctx *c, const coll_call *x, int r, MPI_Offset lo, MPI_Offset hi,
                    MPI_Offset *s, MPI_Offset *e) {
  const struct coll_info *in = &c->info[r];
  if (in->n == 0 || in->last <= lo || in->first >= hi) return 0;
  const pario_view *v = coll_view_of(c, x, r);
  *s = pario_view_data_before_in(v, lo, in->pos, in->n);
  *e = pario_view_data_before_in(v, hi, in->pos, in->n);
  return *e > *s;
}

/* ---- buffers, sized before the rounds ---- */

/* Bytes of this rank's data in the windows of round k. */
static size_t own_bytes(const pario_coll_ctx *c, const coll_call *x, MPI_Offset k) {
  size_t sum = 0;
  for (int i = 0; i < c->naggr; i++) {
    MPI_Offset lo, hi, s, e;
    coll_plan_window(&x->plan, i, k, &lo, &hi);
    if (lo < hi && piece_in(c, x, c->rank, lo, hi, &s, &e)) sum += (size_t)(e - s);
  }
  return sum;
}

/* Bytes of the other ranks' data in window [lo, hi). */
static size_t others_bytes(const pario_coll_ctx *c, const coll_call *x, MPI_Offset lo, MPI_Offset hi) {
  size_t sum = 0;
  for (int r = 0; r < c->np; r++) {
    MPI_Offset s, e;
    if (r != c->rank && piece_in(c, x, r, lo, hi, &s, &e)) sum += (size_t)(e - s);
  }
  return sum;
}

int coll_buffers(pario_coll_ctx *c, const coll_call *x) {
  size_t pack = 0, stage = 0;
  int packs = !x->contig && x->n > 0 && (size_t)x->n > c->pkcap; /* a round packs at most n */
  for (MPI_Offset k = 0; k < x->plan.rounds && (packs || x->me_aggr >= 0); k++) {
    MPI_Offset lo, hi;
    if (packs) pack = PARIO_MAX(pack, own_bytes(c, x, k));
    if (x->me_aggr < 0) continue;
    coll_plan_window(&x->plan, x->me_aggr, k, &lo, &hi);
    if (lo < hi) stage = PARIO_MAX(stage, others_bytes(c, x, lo, hi));
  }
  const char *f = c->f->filename;
  if (!coll_grow(c, COLL_SITE_PACK, &c->pack, &c->pkcap, pack))
    return pario_err(MPI_ERR_NO_MEM, x->op, f, 0, "out of memory for %zu bytes of packed data", pack);
  if (!coll_grow(c, COLL_SITE_STAGE, &c->stage, &c->stcap, stage) ||
      (x->me_aggr >= 0 && !coll_grow(c, COLL_SITE_STAGE, &c->cbuf, &c->cbcap, (size_t)chunk_size(c, x))))
    return pario_err(MPI_ERR_NO_MEM, x->op, f, 0, "out of memory for %zu staged bytes", stage);
  return MPI_SUCCESS;
}

/* ---- one round ---- */

typedef struct round {
  int npc;     /* this rank's pieces, in c->mine_pc */
  char *self;  /* its piece for its own window, if any */
  int nreq;    /* requests in c->reqs */
  int nrecv;   /* the first nrecv are this rank's receives of read data */
} round;

/* This rank's data [q->s, q->e) into the piece's buffer: under external32 converted, so the
 * aggregators receive, and write, file-representation bytes. The conversion map was built
 * when the call started, so nothing here can fail. */
static void pack_piece(const pario_coll_ctx *c, const coll_call *x, coll_piece *q, int len) {
  if (x->view->rep) {
    pario_conv cv;
    if (pario_conv_init(&cv, x->view->rep, x->buf, x->type, x->tm, q->s - x->pos, x->op, c->f->filename) == MPI_SUCCESS)
      pario_conv_pack(&cv, q->ptr, len);
    return;
  }
  pario_mcursor mc;
  pario_mcursor_init_at(&mc, x->buf, x->tm, q->s - x->pos);
  pario_mcursor_pack(&mc, q->ptr, len);
}

/* This rank's side of round k: a piece for every aggregator whose window it touches, sent
 * (write) or received (read) in place when the memory is contiguous, else through c->pack. */
static void own_pieces(pario_coll_ctx *c, const coll_call *x, MPI_Offset k, round *rd) {
  size_t at = 0;
  for (int i = 0; i < c->naggr && x->n > 0; i++) {
    MPI_Offset lo, hi, s, e;
    coll_plan_window(&x->plan, i, k, &lo, &hi);
    if (lo >= hi || !piece_in(c, x, c->rank, lo, hi, &s, &e)) continue;
    coll_piece *q = &c->mine_pc[rd->npc++];
    *q = (coll_piece){c->aggr[i], s, e, x->contig ? x->contig + (s - x->pos) : c->pack + at, 0, 0};
    int len = (int)(e - s);
    if (!x->contig) {
      at += (size_t)len;
      if (x->rw == PARIO_WRITE) pack_piece(c, x, q, len);
    }
    if (q->peer == c->rank) {
      rd->self = q->ptr;
    } else if (x->rw == PARIO_WRITE) {
      PMPI_Isend(q->ptr, len, MPI_BYTE, q->peer, TAG, c->comm, &c->reqs[rd->nreq++]);
    } else {
      PMPI_Irecv(q->ptr, len, MPI_BYTE, q->peer, MPI_ANY_TAG, c->comm, &c->reqs[rd->nreq++]);
      rd->nrecv++;
    }
  }
}

/* Every rank's piece of window [lo, hi) into c->aggr_pc, with where its bytes are: the
 * staging area, or this rank's own piece. A write posts the receives. Returns the count. */
static int window_pieces(pario_coll_ctx *c, const coll_call *x, MPI_Offset lo, MPI_Offset hi, round *rd) {
  int npc = 0;
  size_t at = 0;
  for (int r = 0; r < c->np; r++) {
    MPI_Offset s, e;
    if (!piece_in(c, x, r, lo, hi, &s, &e)) continue;
    coll_piece *q = &c->aggr_pc[npc++];
    *q = (coll_piece){r, s, e, r == c->rank ? rd->self : c->stage + at, 0, 0};
    if (r == c->rank) continue;
    at += (size_t)(e - s);
    if (x->rw == PARIO_WRITE)
      PMPI_Irecv(q->ptr, (int)(e - s), MPI_BYTE, r, TAG, c->comm, &c->reqs[rd->nreq++]);
  }
  return npc;
}

/* Append the file intervals of data [s, e) of view v to c->iv from *n on, merging adjacent
 * ones; 0 when out of memory. */
static int intervals(pario_coll_ctx *c, const pario_view *v, MPI_Offset s, MPI_Offset e, size_t *n) {
  pario_fcursor fc;
  pario_fcursor_init(&fc, v, s);
  MPI_Offset left = e - s;
  size_t k = *n, first = *n;
  while (left > 0) {
    MPI_Offset off, len = pario_fcursor_next(&fc, left, &off);
    left -= len;
    if (k > first && c->iv[k - 1].off + c->iv[k - 1].len == off) {
      c->iv[k - 1].len += len;
      continue;
    }
    if (k == c->ivcap / sizeof(pario_run) &&
        !coll_grow(c, COLL_SITE_NONE, &c->iv, &c->ivcap, PARIO_MAX(c->ivcap * 2, 1024 * sizeof(pario_run))))
      return 0;
    c->iv[k].off = off;
    c->iv[k++].len = len;
  }
  *n = k;
  return 1;
}

/* The file intervals of the window's pieces; [*from, *to) is their span. */
static int window_intervals(pario_coll_ctx *c, const coll_call *x, int npc, MPI_Offset *from, MPI_Offset *to) {
  size_t niv = 0;
  *from = INT64_MAX;
  *to = 0;
  for (int i = 0; i < npc; i++) {
    coll_piece *q = &c->aggr_pc[i];
    q->iv0 = niv;
    if (!intervals(c, coll_view_of(c, x, q->peer), q->s, q->e, &niv))
      return pario_err(MPI_ERR_NO_MEM, x->op, c->f->filename, 0, "out of memory");
    q->iv1 = niv;
    if (q->iv1 > q->iv0) {
      const pario_run *l = &c->iv[q->iv1 - 1];
      *from = PARIO_MIN(*from, c->iv[q->iv0].off);
      *to = PARIO_MAX(*to, l->off + l->len);
    }
  }
  return MPI_SUCCESS;
}

/* ---- the aggregator's chunks ---- */

enum { MEASURE, FILL, EMPTY };

/* Go over the parts of the pieces' intervals inside [cs, ce), advancing the cursors: MEASURE
 * only counts, FILL copies the data into buf, EMPTY copies it out of buf (buf holds the file
 * from offset base). Returns the bytes seen; [*lo, *hi) receives their span. */
static MPI_Offset chunk_pass(const pario_coll_ctx *c, int npc, coll_cursor *cur, MPI_Offset cs,
                             MPI_Offset ce, int mode, MPI_Offset base, MPI_Offset *lo, MPI_Offset *hi) {
  MPI_Offset bytes = 0;
  *lo = ce;
  *hi = cs;
  for (int i = 0; i < npc; i++) {
    coll_cursor *u = &cur[i];
    while (u->k < c->aggr_pc[i].iv1) {
      const pario_run *r = &c->iv[u->k];
      MPI_Offset s = r->off + u->skip, e = r->off + r->len;
      if (s >= ce) break;
      MPI_Offset take = PARIO_MIN(e, ce) - s;
      if (mode == FILL) memcpy(c->cbuf + (s - base), u->p, (size_t)take);
      else if (mode == EMPTY) memcpy(u->p, c->cbuf + (s - base), (size_t)take);
      u->p += take;
      bytes += take;
      *lo = PARIO_MIN(*lo, s);
      *hi = PARIO_MAX(*hi, s + take);
      if (s + take < e) {
        u->skip += take;
        break;
      }
      u->k++;
      u->skip = 0;
    }
  }
  return bytes;
}

/* The pieces' cursors that have intervals left, in a heap by the start of their next one. */
static void heap_of(pario_coll_ctx *c, int npc, const coll_cursor *cur, coll_heap *q) {
  *q = (coll_heap){c->heap, 0};
  for (int i = 0; i < npc; i++)
    if (cur[i].k < c->aggr_pc[i].iv1) coll_heap_push(q, c->iv[cur[i].k].off + cur[i].skip, i);
}

/* The lowest next interval of all the pieces (q's top; q not empty): its cursor moves past it. */
static const pario_run *heap_take(const pario_coll_ctx *c, coll_cursor *cur, coll_heap *q) {
  coll_cursor *u = &cur[q->h[0].item];
  const pario_run *r = &c->iv[u->k++];
  u->skip = 0;
  if (u->k < c->aggr_pc[q->h[0].item].iv1) coll_heap_retop(q, c->iv[u->k].off);
  else coll_heap_pop(q);
  return r;
}

/* 1 when the pieces' intervals from the cursors on cover [lo, hi) without a hole (the
 * intervals of one piece are sorted; pieces may overlap). Moves the cursors. */
static int covered(pario_coll_ctx *c, int npc, coll_cursor *cur, MPI_Offset lo, MPI_Offset hi) {
  coll_heap q;
  MPI_Offset at = lo;
  heap_of(c, npc, cur, &q);
  while (at < hi) {
    if (q.n == 0 || q.h[0].key > at) return 0;
    const pario_run *r = heap_take(c, cur, &q);
    at = PARIO_MAX(at, r->off + r->len);
  }
  return 1;
}

static int io_error(const pario_coll_ctx *c, const char *op, int rw, int e, MPI_Offset len, MPI_Offset off) {
  return pario_err(pario_errno_class(e), op, c->f->filename, e, "collective %s of %lld bytes at offset %lld failed",
                   rw == PARIO_WRITE ? "write" : "read", (long long)len, (long long)off);
}

/* One storage access of len bytes at off, at offset at of the collective buffer, tagged as
 * part of the round's collective access: an errno value, or 0. */
static int xfer(pario_coll_ctx *c, int rw, MPI_Offset at, MPI_Offset len, MPI_Offset off, size_t *got) {
  struct iovec v = {c->cbuf + at, (size_t)len};
  *got = 0;
  if (c->eio_rank == c->rank) return EIO; /* tests: this rank's aggregation fails */
  return pario_drv_xfer(c->f, rw, &v, 1, (off_t)off, got, &c->tag);
}

/* Read [rs, re) into the buffer that holds the chunk from lo; past end of file reads as zeros. */
static int read_run(pario_coll_ctx *c, const coll_call *x, MPI_Offset lo, MPI_Offset rs, MPI_Offset re) {
  size_t got;
  int e = xfer(c, PARIO_READ, rs - lo, re - rs, rs, &got);
  if (e) return io_error(c, x->op, PARIO_READ, e, re - rs, rs);
  memset(c->cbuf + (rs - lo) + got, 0, (size_t)(re - rs - (MPI_Offset)got));
  return MPI_SUCCESS;
}

/* A read chunk whose data lies in [lo, hi): only the union of the pieces' intervals is read,
 * in one read per run of intervals whose holes are at most pario_read_max_gap wide; a wider
 * hole splits the read and its bytes are never read (nobody copies them out). The intervals
 * of one piece are sorted, pieces may overlap; the cursors are a copy and move. */
static int read_union(pario_coll_ctx *c, const coll_call *x, int npc, coll_cursor *cur, MPI_Offset lo, MPI_Offset hi) {
  rio_window w = {0};
  int have = 0;
  coll_heap q;
  heap_of(c, npc, cur, &q);
  while (q.n > 0 && q.h[0].key < hi) {
    MPI_Offset s = PARIO_MAX(q.h[0].key, lo);
    const pario_run *r = heap_take(c, cur, &q);
    MPI_Offset e = PARIO_MAX(PARIO_MIN(r->off + r->len, hi), s);
    if (have && rio_window_merge(&w, (uint64_t)s, (uint64_t)(e - s))) continue;
    if (have) {
      int rc = read_run(c, x, lo, (MPI_Offset)w.lo, (MPI_Offset)w.end);
      if (rc != MPI_SUCCESS) return rc;
    }
    w = rio_window_open((uint64_t)s, (uint64_t)(e - s), UINT64_MAX, (uint64_t)c->f->hints.read_max_gap);
    have = 1;
  }
  return have ? read_run(c, x, lo, (MPI_Offset)w.lo, (MPI_Offset)w.end) : MPI_SUCCESS;
}

/* Chunk [cs, ce) of the window: read where the data leaves holes (a read: the union of the
 * data, read_union), copy the data in or out, write. A chunk with nobody's data is not
 * touched. */
static int one_chunk(pario_coll_ctx *c, const coll_call *x, int npc, MPI_Offset cs, MPI_Offset ce) {
  coll_cursor *cur = c->cur, *tmp = c->cur + npc;
  MPI_Offset lo, hi;
  size_t got;
  memcpy(tmp, cur, sizeof(coll_cursor) * (size_t)npc);
  if (chunk_pass(c, npc, tmp, cs, ce, MEASURE, 0, &lo, &hi) == 0) return MPI_SUCCESS;
  int e, rc;
  memcpy(tmp, cur, sizeof(coll_cursor) * (size_t)npc);
  if (x->rw == PARIO_READ) {
    if ((rc = read_union(c, x, npc, tmp, lo, hi)) != MPI_SUCCESS) return rc;
  } else if (!covered(c, npc, tmp, lo, hi)) { /* keep the bytes nobody writes */
    uint64_t t0 = PARIO_TRACE_T0();
    e = xfer(c, PARIO_READ, 0, hi - lo, lo, &got);
    PARIO_TRACE_SPAN(PARIO_TC_COLL, "read_before_write", t0, PARIO_TA("offset", lo), PARIO_TA("len", hi - lo));
    if (e) return io_error(c, x->op, PARIO_READ, e, hi - lo, lo);
    memset(c->cbuf + got, 0, (size_t)(hi - lo - (MPI_Offset)got)); /* past end of file */
  }
  chunk_pass(c, npc, cur, cs, ce, x->rw == PARIO_WRITE ? FILL : EMPTY, lo, &lo, &hi);
  if (x->rw == PARIO_WRITE && (e = xfer(c, PARIO_WRITE, 0, hi - lo, lo, &got)))
    return io_error(c, x->op, PARIO_WRITE, e, hi - lo, lo);
  return MPI_SUCCESS;
}

static int window_io(pario_coll_ctx *c, const coll_call *x, int npc, MPI_Offset from, MPI_Offset to) {
  int rc = MPI_SUCCESS;
  for (int i = 0; i < npc; i++) c->cur[i] = (coll_cursor){c->aggr_pc[i].iv0, 0, c->aggr_pc[i].ptr};
  MPI_Offset chunk = chunk_size(c, x);
  for (MPI_Offset cs = from; cs < to && rc == MPI_SUCCESS; cs += chunk)
    rc = one_chunk(c, x, npc, cs, PARIO_MIN(cs + chunk, to));
  return rc;
}

/* Aggregator side of one round, window [lo, hi). A write holds the file's read-modify-write
 * lock (no write of this process lands inside it); a read sends every piece back, its tag
 * saying whether the data is good. */
static int aggregate_window(pario_coll_ctx *c, const coll_call *x, MPI_Offset lo, MPI_Offset hi, round *rd) {
  pario_file *f = c->f;
  int npc = window_pieces(c, x, lo, hi, rd);
  if (npc == 0) return MPI_SUCCESS;
  MPI_Offset from, to;
  int rc = window_intervals(c, x, npc, &from, &to);
  if (x->rw == PARIO_WRITE) {
    uint64_t t0 = PARIO_TRACE_T0();
    pario_wait_all(rd->nreq, c->reqs, c->st); /* the data, and this rank's own sends */
    PARIO_TRACE_SPAN(PARIO_TC_COLL, "exchange", t0, PARIO_TA("requests", rd->nreq));
    rd->nreq = 0;
    pthread_rwlock_wrlock(&f->rmw_lock);
  }
  if (rc == MPI_SUCCESS) rc = window_io(c, x, npc, from, to);
  if (x->rw == PARIO_WRITE) {
    pthread_rwlock_unlock(&f->rmw_lock);
    return rc;
  }
  int tag = rc == MPI_SUCCESS ? TAG : TAG_ERR + pario_err_class(rc);
  for (int i = 0; i < npc; i++) {
    const coll_piece *q = &c->aggr_pc[i];
    if (q->peer != c->rank)
      PMPI_Isend(q->ptr, (int)(q->e - q->s), MPI_BYTE, q->peer, tag, c->comm, &c->reqs[rd->nreq++]);
  }
  return rc;
}

/* The round's messages complete; a read learns from the tags whether its aggregators
 * succeeded, and unpacks into non-contiguous memory. */
static int finish_round(pario_coll_ctx *c, const coll_call *x, const round *rd) {
  int rc = MPI_SUCCESS;
  uint64_t t0 = PARIO_TRACE_T0();
  pario_wait_all(rd->nreq, c->reqs, c->st);
  PARIO_TRACE_SPAN(PARIO_TC_COLL, "exchange", t0, PARIO_TA("requests", rd->nreq));
  for (int i = 0; i < rd->nrecv && rc == MPI_SUCCESS; i++) {
    const MPI_Status *s = &c->st[i];
    if (s->MPI_TAG != TAG)
      rc = pario_err(s->MPI_TAG > TAG_ERR ? s->MPI_TAG - TAG_ERR : MPI_ERR_OTHER, x->op, c->f->filename, 0,
                     "the collective read failed on aggregator rank %d", s->MPI_SOURCE);
  }
  for (int i = 0; x->rw == PARIO_READ && !x->contig && i < rd->npc; i++) {
    const coll_piece *q = &c->mine_pc[i];
    if (x->view->rep) { /* external32: the piece's bytes convert into memory */
      pario_conv cv;
      int e = pario_conv_init(&cv, x->view->rep, x->buf, x->type, x->tm, q->s - x->pos, x->op, c->f->filename);
      if (e == MPI_SUCCESS) e = pario_conv_unpack(&cv, q->ptr, q->e - q->s);
      if (e == MPI_SUCCESS) e = pario_ext32_flush(&cv.cur); /* an item cut here: the next piece completes it */
      if (rc == MPI_SUCCESS) rc = e;
      continue;
    }
    pario_mcursor mc;
    pario_mcursor_init_at(&mc, x->buf, x->tm, q->s - x->pos);
    pario_mcursor_unpack(&mc, q->ptr, q->e - q->s);
  }
  return rc;
}

/* The round's span: this rank's window as aggregator (aggr -1: none), the bytes it sends to
 * other ranks and receives from them (a write's data goes to the aggregators, a read's comes
 * back). The round's waits are its "exchange" spans, its storage accesses driver spans. */
static void trace_round(const pario_coll_ctx *c, const coll_call *x, MPI_Offset k, const round *rd,
                        MPI_Offset lo, MPI_Offset hi, uint64_t t0) {
  long long mine = 0, theirs = 0;
  for (int i = 0; i < rd->npc; i++)
    if (c->mine_pc[i].peer != c->rank) mine += c->mine_pc[i].e - c->mine_pc[i].s;
  for (MPI_Offset i = 0; x->me_aggr >= 0 && lo < hi && i < (MPI_Offset)c->np; i++) {
    MPI_Offset s, e;
    if ((int)i != c->rank && piece_in(c, x, (int)i, lo, hi, &s, &e)) theirs += e - s;
  }
  long long sent = x->rw == PARIO_WRITE ? mine : theirs, recv = x->rw == PARIO_WRITE ? theirs : mine;
  PARIO_TRACE_SPAN(PARIO_TC_COLL, "round", t0, PARIO_TA("round", k), PARIO_TA("aggr", x->me_aggr),
                   PARIO_TA("lo", lo), PARIO_TA("hi", hi), PARIO_TA("sent", sent), PARIO_TA("recv", recv));
}

/* Aggregators with data in their window of round k: the ranks whose storage accesses form
 * the round's collective access (only remote storage is tagged, so only it pays for this). */
static int round_senders(const pario_coll_ctx *c, const coll_call *x, MPI_Offset k) {
  int n = 0;
  for (int i = 0; i < c->naggr && c->f->drv->remote; i++) {
    MPI_Offset lo, hi, s, e;
    coll_plan_window(&x->plan, i, k, &lo, &hi);
    for (int r = 0; lo < hi && r < c->np; r++)
      if (piece_in(c, x, r, lo, hi, &s, &e)) {
        n++;
        break;
      }
  }
  return n;
}

int coll_rounds(pario_coll_ctx *c, const coll_call *x) {
  int rc = MPI_SUCCESS;
  /* A rank with no data and no domain has nothing to do in any round. */
  MPI_Offset rounds = x->n > 0 || x->me_aggr >= 0 ? x->plan.rounds : 0;
  for (MPI_Offset k = 0; k < rounds; k++) {
    round rd = {0};
    uint64_t t0 = PARIO_TRACE_T0();
    own_pieces(c, x, k, &rd);
    MPI_Offset lo = 0, hi = 0;
    if (x->me_aggr >= 0) {
      coll_plan_window(&x->plan, x->me_aggr, k, &lo, &hi);
      /* Within a round an aggregator's storage accesses wait for nobody else's (its data
       * arrived before the first), so a forwarder may hold them until every aggregator's
       * access of the same number is there; across rounds they would. */
      c->tag = coll_tag(c, k, lo < hi ? round_senders(c, x, k) : 0);
      int e = lo < hi ? aggregate_window(c, x, lo, hi, &rd) : MPI_SUCCESS;
      c->tag = (pario_drv_coll){0, 0, 0};
      if (rc == MPI_SUCCESS) rc = e;
    }
    int e = finish_round(c, x, &rd);
    if (rc == MPI_SUCCESS) rc = e;
    if (PARIO_TRACING()) trace_round(c, x, k, &rd, lo, hi, t0);
  }
  return rc;
}
