/* The data exchange of two-phase I/O. Views are legal filetypes (monotonic), so the part of a
 * rank's access inside a file window [lo, hi) is one contiguous range of its data stream,
 * [data_before(lo), data_before(hi)); with every rank's view known (viewx.c), both sides of
 * every message compute its size. In round k, aggregator i owns window k of its file domain:
 * ranks send it their range straight from the user's buffer when that is contiguous (packed
 * otherwise). The aggregator receives each range straight into its place in the window's
 * buffer, with a datatype of the range's file intervals, reads what the data leaves as holes,
 * and writes; reads run the other way (only the union of the pieces is read, holes wider than
 * pario_read_max_gap split it; each range is sent from its place). Pipelined, the aggregator
 * has two windows: round k's storage access runs in a thread (pipeline.c) while round k+1's
 * messages use the other. Pieces that overlap are staged and copied in chunks instead. The
 * exchange is nonblocking point-to-point: each rank talks only to the aggregators whose
 * windows it touches, and ranks with nothing to do skip the rounds (an MPI_Alltoallv would
 * need every rank in every round). docs/collective.md#the-data-exchange and #pipeline. */
#include "collective/internal.h"
#include "core/rep.h"
#include "rio/window.h"
#include "trace/trace.h"

#include <errno.h>
#include <stdlib.h>
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
  *s = coll_view_before_in(c, x, r, lo, in->pos, in->n);
  *e = coll_view_before_in(c, x, r, hi, in->pos, in->n);
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

/* Bytes of every rank's data in window [lo, hi). */
static size_t window_bytes(const pario_coll_ctx *c, const coll_call *x, MPI_Offset lo, MPI_Offset hi) {
  size_t sum = 0;
  for (int r = 0; r < c->np; r++) {
    MPI_Offset s, e;
    if (piece_in(c, x, r, lo, hi, &s, &e)) sum += (size_t)(e - s);
  }
  return sum;
}

/* Whether this aggregator's windows go directly into place (hint pario_coll_direct), and
 * whether two of them are in flight (hint pario_coll_pipeline, and local storage: on remote
 * storage a round is one tagged access that forwarders merge across aggregators; more than
 * one round; MPI_THREAD_MULTIPLE, as the storage thread's errors are made with MPI calls).
 * Local decisions: the messages are the same either way. Both off by default: measured
 * slower on one node (docs/collective.md#pipeline). */
static int direct_ok(const pario_coll_ctx *c) { return c->f->hints.coll_direct; }
static int pipelined(const pario_coll_ctx *c, const coll_call *x) {
  int lvl = MPI_THREAD_SINGLE;
  if (!c->f->hints.coll_pipeline || c->f->drv->remote || x->me_aggr < 0 || x->plan.rounds < 2) return 0;
  PMPI_Query_thread(&lvl);
  return lvl == MPI_THREAD_MULTIPLE;
}

/* The np-sized arrays of window w, once. */
static int win_arrays(pario_coll_ctx *c, coll_win *w) {
  size_t n = (size_t)c->np, sz[] = {n * sizeof(coll_piece), 2 * n * sizeof(coll_cursor), n * sizeof(coll_hent),
                                    n * sizeof(MPI_Request), n * sizeof(MPI_Datatype)};
  size_t at[5], total = 0;
  for (int i = 0; i < 5; i++) at[i] = total, total += (sz[i] + 15) & ~(size_t)15;
  if (w->arcap >= total) return 1;
  if (!coll_grow(c, COLL_SITE_STAGE, &w->arrays, &w->arcap, total)) return 0;
  char *p = w->arrays;
  w->pc = (coll_piece *)(p + at[0]);
  w->cur = (coll_cursor *)(p + at[1]);
  w->heap = (coll_hent *)(p + at[2]);
  w->rq = (MPI_Request *)(p + at[3]);
  w->ty = (MPI_Datatype *)(p + at[4]);
  return 1;
}

void coll_wins_free(pario_coll_ctx *c) {
  for (int i = 0; i < 2; i++) {
    free(c->win[i].arrays);
    free(c->win[i].buf);
    free(c->win[i].iv);
  }
  free(c->tblen);
  free(c->tdisp);
}

int coll_buffers(pario_coll_ctx *c, const coll_call *x) {
  size_t pack = 0, stage = 0;
  int packs = !x->contig && x->n > 0 && (size_t)x->n > c->pkcap; /* a round packs at most n */
  for (MPI_Offset k = 0; k < x->plan.rounds && (packs || x->me_aggr >= 0); k++) {
    MPI_Offset lo, hi;
    if (packs) pack = PARIO_MAX(pack, own_bytes(c, x, k));
    if (x->me_aggr < 0) continue;
    coll_plan_window(&x->plan, x->me_aggr, k, &lo, &hi);
    if (lo >= hi) continue;
    /* staged: every piece, one after the other; direct: the span of the window */
    size_t all = window_bytes(c, x, lo, hi);
    if (all > 0) stage = PARIO_MAX(stage, direct_ok(c) ? PARIO_MAX(all, (size_t)(hi - lo)) : all);
  }
  const char *f = c->f->filename;
  if (!coll_grow(c, COLL_SITE_PACK, &c->pack, &c->pkcap, pack))
    return pario_err(MPI_ERR_NO_MEM, x->op, f, 0, "out of memory for %zu bytes of packed data", pack);
  int ok = x->me_aggr < 0 || coll_grow(c, COLL_SITE_STAGE, &c->cbuf, &c->cbcap, (size_t)chunk_size(c, x));
  for (int i = 0, nwin = pipelined(c, x) ? 2 : 1; i < nwin && ok && x->me_aggr >= 0; i++)
    ok = win_arrays(c, &c->win[i]) && coll_grow(c, COLL_SITE_STAGE, &c->win[i].buf, &c->win[i].cap, stage);
  if (!ok) return pario_err(MPI_ERR_NO_MEM, x->op, f, 0, "out of memory for %zu staged bytes", stage);
  return MPI_SUCCESS;
}

/* ---- one round ---- */

typedef struct round {
  int npc;     /* this rank's pieces, in c->mine_pc */
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
 * (write) or received (read) in place when the memory is contiguous, else through c->pack.
 * Its own window's piece is a message to itself when windows are direct or pipelined, and
 * otherwise stays where it is (c->self) for the aggregator's copy, as other ranks' pieces
 * are staged. */
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
    if (q->peer == c->rank && c->self_local) {
      c->self = q->ptr; /* its window takes it from here */
    } else if (x->rw == PARIO_WRITE) {
      PMPI_Isend(q->ptr, len, MPI_BYTE, q->peer, TAG, c->comm, &c->reqs[rd->nreq++]);
    } else {
      PMPI_Irecv(q->ptr, len, MPI_BYTE, q->peer, MPI_ANY_TAG, c->comm, &c->reqs[rd->nreq++]);
      rd->nrecv++;
    }
  }
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

/* ---- an aggregator's window ---- */

/* Append the file intervals of data [s, e) of rank r's view to w->iv from *n on, merging adjacent
 * ones; 0 when out of memory. */
static int intervals(const pario_coll_ctx *c, coll_win *w, int r, MPI_Offset s, MPI_Offset e, size_t *n) {
  pario_fcursor fc;
  coll_view_cursor(c, w->x, r, &fc, s);
  MPI_Offset left = e - s;
  size_t k = *n, first = *n;
  while (left > 0) {
    MPI_Offset off, len = pario_fcursor_next(&fc, left, &off);
    left -= len;
    if (k > first && w->iv[k - 1].off + w->iv[k - 1].len == off) {
      w->iv[k - 1].len += len;
      continue;
    }
    if (k == w->ivcap / sizeof(pario_run) &&
        !coll_grow(c, COLL_SITE_NONE, &w->iv, &w->ivcap, PARIO_MAX(w->ivcap * 2, 1024 * sizeof(pario_run))))
      return 0;
    w->iv[k].off = off;
    w->iv[k++].len = len;
  }
  *n = k;
  return 1;
}

/* The file intervals of the window's pieces; [w->from, w->to) is their span. */
static int window_intervals(const pario_coll_ctx *c, const coll_call *x, coll_win *w) {
  size_t niv = 0;
  w->from = INT64_MAX;
  w->to = 0;
  for (int i = 0; i < w->npc; i++) {
    coll_piece *q = &w->pc[i];
    q->iv0 = niv;
    if (!intervals(c, w, q->peer, q->s, q->e, &niv))
      return pario_err(MPI_ERR_NO_MEM, x->op, c->f->filename, 0, "out of memory");
    q->iv1 = niv;
    if (q->iv1 > q->iv0) {
      const pario_run *l = &w->iv[q->iv1 - 1];
      w->from = PARIO_MIN(w->from, w->iv[q->iv0].off);
      w->to = PARIO_MAX(w->to, l->off + l->len);
    }
  }
  return MPI_SUCCESS;
}

/* The pieces' cursors that have intervals left, in a heap by the start of their next one. */
static void heap_of(const coll_win *w, const coll_cursor *cur, coll_heap *q) {
  *q = (coll_heap){w->heap, 0};
  for (int i = 0; i < w->npc; i++)
    if (cur[i].k < w->pc[i].iv1) coll_heap_push(q, w->iv[cur[i].k].off + cur[i].skip, i);
}

/* The lowest next interval of all the pieces (q's top; q not empty): its cursor moves past it. */
static const pario_run *heap_take(const coll_win *w, coll_cursor *cur, coll_heap *q) {
  coll_cursor *u = &cur[q->h[0].item];
  const pario_run *r = &w->iv[u->k++];
  u->skip = 0;
  if (u->k < w->pc[q->h[0].item].iv1) coll_heap_retop(q, w->iv[u->k].off);
  else coll_heap_pop(q);
  return r;
}

/* Every piece's cursor at its first interval, from cur[npc] on a copy to move. */
static coll_cursor *cursors(coll_win *w, int copy) {
  coll_cursor *cur = w->cur + (copy ? w->npc : 0);
  for (int i = 0; i < w->npc; i++) cur[i] = (coll_cursor){w->pc[i].iv0, 0, w->pc[i].ptr};
  return cur;
}

/* 1 when two pieces' intervals overlap (two ranks access one byte): they cannot both be
 * received in place. */
static int overlapping(coll_win *w) {
  coll_cursor *cur = cursors(w, 1);
  coll_heap q;
  MPI_Offset end = INT64_MIN;
  heap_of(w, cur, &q);
  while (q.n > 0) {
    const pario_run *r = heap_take(w, cur, &q);
    if (r->off < end) return 1;
    end = r->off + r->len;
  }
  return 0;
}

/* A datatype for every piece of several intervals, placing its bytes in the window's buffer
 * (relative to its first interval); MPI_DATATYPE_NULL for a piece of one interval (its bytes
 * are contiguous there). 0, with none left, when one cannot be made. */
static int make_types(pario_coll_ctx *c, coll_win *w) {
  int i;
  for (i = 0; i < w->npc; i++) {
    const coll_piece *q = &w->pc[i];
    const pario_run *r = &w->iv[q->iv0];
    size_t n = q->iv1 - q->iv0;
    w->ty[i] = MPI_DATATYPE_NULL;
    if (n == 1) continue;
    if (n > INT32_MAX || !coll_grow(c, COLL_SITE_NONE, &c->tblen, &c->tbcap, n * sizeof(int)) ||
        !coll_grow(c, COLL_SITE_NONE, &c->tdisp, &c->tdcap, n * sizeof(MPI_Aint)))
      break;
    for (size_t j = 0; j < n; j++) c->tblen[j] = (int)r[j].len, c->tdisp[j] = (MPI_Aint)(r[j].off - r[0].off);
    if (PMPI_Type_create_hindexed((int)n, c->tblen, c->tdisp, MPI_BYTE, &w->ty[i]) != MPI_SUCCESS) break;
    if (PMPI_Type_commit(&w->ty[i]) != MPI_SUCCESS) {
      PMPI_Type_free(&w->ty[i]);
      break;
    }
  }
  if (i == w->npc) return 1;
  while (i-- > 0)
    if (w->ty[i] != MPI_DATATYPE_NULL) PMPI_Type_free(&w->ty[i]);
  return 0;
}

/* Window w's messages, each piece at its place: a write's receives, a read's sends (tag: TAG,
 * or TAG_ERR + class where the read failed). */
static void win_post(pario_coll_ctx *c, const coll_call *x, coll_win *w, int tag) {
  uint64_t t0 = PARIO_TRACE_T0();
  for (int i = 0; i < w->npc; i++) {
    const coll_piece *q = &w->pc[i];
    if (q->peer == c->rank && c->self_local) continue; /* this rank's own data, in place */
    int one = w->direct && w->ty[i] != MPI_DATATYPE_NULL, n = one ? 1 : (int)(q->e - q->s);
    MPI_Datatype t = one ? w->ty[i] : MPI_BYTE;
    if (x->rw == PARIO_WRITE) PMPI_Irecv(q->ptr, n, t, q->peer, tag, c->comm, &w->rq[w->nrq++]);
    else PMPI_Isend(q->ptr, n, t, q->peer, tag, c->comm, &w->rq[w->nrq++]);
    if (one) PMPI_Type_free(&w->ty[i]); /* MPI keeps it while the message is pending */
  }
  PARIO_TRACE_SPAN(PARIO_TC_COLL, "post", t0, PARIO_TA("round", w->k), PARIO_TA("direct", w->direct));
}

/* Window k of this aggregator into w: every rank's piece, their intervals, direct or staged;
 * a write posts its receives. A read's sends from w's previous round complete first. */
static void win_open(pario_coll_ctx *c, const coll_call *x, coll_win *w, MPI_Offset k) {
  pario_wait_all(w->nrq, w->rq, c->st + c->np);
  *w = (coll_win){.c = c, .x = x, .k = k, .rc = MPI_SUCCESS, .pc = w->pc, .cur = w->cur, .heap = w->heap,
                  .rq = w->rq, .ty = w->ty, .arrays = w->arrays, .arcap = w->arcap, .buf = w->buf, .cap = w->cap,
                  .iv = w->iv, .ivcap = w->ivcap};
  coll_plan_window(&x->plan, x->me_aggr, k, &w->lo, &w->hi);
  size_t at = 0;
  for (int r = 0; r < c->np && w->lo < w->hi; r++) {
    MPI_Offset s, e;
    if (!piece_in(c, x, r, w->lo, w->hi, &s, &e)) continue;
    int self = r == c->rank && c->self_local;
    w->pc[w->npc++] = (coll_piece){r, s, e, self ? c->self : w->buf + at, 0, 0}; /* staged: one after another */
    if (!self) at += (size_t)(e - s);
  }
  if (w->npc == 0) return;
  w->rc = window_intervals(c, x, w);
  w->direct = w->rc == MPI_SUCCESS && direct_ok(c) && !overlapping(w) && make_types(c, w);
  for (int i = 0; i < w->npc && w->direct; i++) w->pc[i].ptr = w->buf + (w->iv[w->pc[i].iv0].off - w->from);
  if (x->rw == PARIO_WRITE) win_post(c, x, w, TAG);
}

/* ---- the aggregator's chunks ---- */

enum { MEASURE, FILL, EMPTY };

/* Go over the parts of the pieces' intervals inside [cs, ce), advancing the cursors: MEASURE
 * only counts, FILL copies the data into buf, EMPTY copies it out of buf (buf holds the file
 * from offset base). Returns the bytes seen; [*lo, *hi) receives their span. */
static MPI_Offset chunk_pass(const coll_win *w, coll_cursor *cur, MPI_Offset cs, MPI_Offset ce, int mode,
                             char *buf, MPI_Offset base, MPI_Offset *lo, MPI_Offset *hi) {
  MPI_Offset bytes = 0;
  *lo = ce;
  *hi = cs;
  for (int i = 0; i < w->npc; i++) {
    coll_cursor *u = &cur[i];
    while (u->k < w->pc[i].iv1) {
      const pario_run *r = &w->iv[u->k];
      MPI_Offset s = r->off + u->skip, e = r->off + r->len;
      if (s >= ce) break;
      MPI_Offset take = PARIO_MIN(e, ce) - s;
      if (mode == FILL) memcpy(buf + (s - base), u->p, (size_t)take);
      else if (mode == EMPTY) memcpy(u->p, buf + (s - base), (size_t)take);
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

/* 1 when the pieces' intervals from the cursors on cover [lo, hi) without a hole (the
 * intervals of one piece are sorted; pieces may overlap). Moves the cursors. */
static int covered(const coll_win *w, coll_cursor *cur, MPI_Offset lo, MPI_Offset hi) {
  coll_heap q;
  MPI_Offset at = lo;
  heap_of(w, cur, &q);
  while (at < hi) {
    if (q.n == 0 || q.h[0].key > at) return 0;
    const pario_run *r = heap_take(w, cur, &q);
    at = PARIO_MAX(at, r->off + r->len);
  }
  return 1;
}

/* A direct write chunk [lo, hi) that the data leaves holes in, whose file bytes are in
 * c->cbuf: copy the holes' bytes into the window's buffer (the data is already there). */
static void fill_holes(const pario_coll_ctx *c, const coll_win *w, coll_cursor *cur, MPI_Offset lo, MPI_Offset hi) {
  coll_heap q;
  MPI_Offset at = lo;
  heap_of(w, cur, &q);
  while (at < hi) {
    MPI_Offset next = q.n > 0 ? PARIO_MAX(PARIO_MIN(q.h[0].key, hi), at) : hi;
    if (next > at) memcpy(w->buf + (at - w->from), c->cbuf + (at - lo), (size_t)(next - at));
    if (next >= hi) break;
    const pario_run *r = heap_take(w, cur, &q);
    at = PARIO_MAX(next, r->off + r->len);
  }
}

static int io_error(const pario_coll_ctx *c, const char *op, int rw, int e, MPI_Offset len, MPI_Offset off) {
  return pario_err(pario_errno_class(e), op, c->f->filename, e, "collective %s of %lld bytes at offset %lld failed",
                   rw == PARIO_WRITE ? "write" : "read", (long long)len, (long long)off);
}

/* One storage access of len bytes at off from or into p, tagged as part of its round's
 * collective access: an errno value, or 0. */
static int xfer(pario_coll_ctx *c, int rw, char *p, MPI_Offset len, MPI_Offset off, size_t *got, pario_drv_coll *tag) {
  struct iovec v = {p, (size_t)len};
  *got = 0;
  if (c->eio_rank == c->rank && (c->eio_after < 0 || c->eio_seen++ == c->eio_after))
    return EIO; /* tests: this rank's aggregation fails (all, or its access number eio_after) */
  return pario_drv_xfer(c->f, rw, &v, 1, (off_t)off, got, tag);
}

/* Read [rs, re) into mem, which holds the file from base; past end of file reads as zeros. */
static int read_run(pario_coll_ctx *c, coll_win *w, char *mem, MPI_Offset base, MPI_Offset rs, MPI_Offset re) {
  const coll_call *x = w->x;
  size_t got;
  int e = xfer(c, PARIO_READ, mem + (rs - base), re - rs, rs, &got, &w->tag);
  if (e) return io_error(c, x->op, PARIO_READ, e, re - rs, rs);
  memset(mem + (rs - base) + got, 0, (size_t)(re - rs - (MPI_Offset)got));
  return MPI_SUCCESS;
}

/* A read chunk whose data lies in [lo, hi), into mem (the file from base): only the union of
 * the pieces' intervals is read, in one read per run of intervals whose holes are at most
 * pario_read_max_gap wide; a wider hole splits the read and its bytes are never read (nobody
 * copies or sends them). The cursors are a copy and move. */
static int read_union(pario_coll_ctx *c, coll_win *w, coll_cursor *cur, MPI_Offset lo,
                      MPI_Offset hi, char *mem, MPI_Offset base) {
  rio_window rw = {0};
  int have = 0;
  coll_heap q;
  heap_of(w, cur, &q);
  while (q.n > 0 && q.h[0].key < hi) {
    MPI_Offset s = PARIO_MAX(q.h[0].key, lo);
    const pario_run *r = heap_take(w, cur, &q);
    MPI_Offset e = PARIO_MAX(PARIO_MIN(r->off + r->len, hi), s);
    if (have && rio_window_merge(&rw, (uint64_t)s, (uint64_t)(e - s))) continue;
    if (have) {
      int rc = read_run(c, w, mem, base, (MPI_Offset)rw.lo, (MPI_Offset)rw.end);
      if (rc != MPI_SUCCESS) return rc;
    }
    rw = rio_window_open((uint64_t)s, (uint64_t)(e - s), UINT64_MAX, (uint64_t)c->f->hints.read_max_gap);
    have = 1;
  }
  return have ? read_run(c, w, mem, base, (MPI_Offset)rw.lo, (MPI_Offset)rw.end) : MPI_SUCCESS;
}

/* Chunk [cs, ce) of the window: read where the data leaves holes (a read: the union of the
 * data, read_union), copy the data in or out (staged windows; a direct one has it in place),
 * write. A chunk with nobody's data is not touched. */
static int one_chunk(pario_coll_ctx *c, const coll_call *x, coll_win *w, MPI_Offset cs, MPI_Offset ce) {
  coll_cursor *cur = w->cur, *tmp = w->cur + w->npc;
  MPI_Offset lo, hi;
  size_t got;
  memcpy(tmp, cur, sizeof(coll_cursor) * (size_t)w->npc);
  if (chunk_pass(w, tmp, cs, ce, MEASURE, NULL, 0, &lo, &hi) == 0) return MPI_SUCCESS;
  char *mem = w->direct ? w->buf : c->cbuf; /* the chunk's file bytes, from base */
  MPI_Offset base = w->direct ? w->from : lo;
  int e, rc;
  memcpy(tmp, cur, sizeof(coll_cursor) * (size_t)w->npc);
  if (x->rw == PARIO_READ) {
    if ((rc = read_union(c, w, tmp, lo, hi, mem, base)) != MPI_SUCCESS) return rc;
  } else if (!covered(w, tmp, lo, hi)) { /* keep the bytes nobody writes */
    uint64_t t0 = PARIO_TRACE_T0();
    e = xfer(c, PARIO_READ, c->cbuf, hi - lo, lo, &got, &w->tag);
    PARIO_TRACE_SPAN(PARIO_TC_COLL, "read_before_write", t0, PARIO_TA("offset", lo), PARIO_TA("len", hi - lo));
    if (e) return io_error(c, x->op, PARIO_READ, e, hi - lo, lo);
    memset(c->cbuf + got, 0, (size_t)(hi - lo - (MPI_Offset)got)); /* past end of file */
    if (w->direct) {
      memcpy(tmp, cur, sizeof(coll_cursor) * (size_t)w->npc);
      fill_holes(c, w, tmp, lo, hi);
    }
  }
  chunk_pass(w, cur, cs, ce, w->direct ? MEASURE : x->rw == PARIO_WRITE ? FILL : EMPTY, mem, base, &lo, &hi);
  if (x->rw == PARIO_WRITE && (e = xfer(c, PARIO_WRITE, mem + (lo - base), hi - lo, lo, &got, &w->tag)))
    return io_error(c, x->op, PARIO_WRITE, e, hi - lo, lo);
  return MPI_SUCCESS;
}

/* The window's storage accesses, chunk by chunk (the pipeline's background job). A write
 * holds the file's read-modify-write lock (no write of this process lands inside it while
 * its holes are read and it is written); no lock is held across a message. */
static int window_io(coll_win *w) {
  pario_coll_ctx *c = w->c;
  const coll_call *x = w->x;
  int rc = MPI_SUCCESS;
  cursors(w, 0);
  MPI_Offset chunk = chunk_size(c, x);
  uint64_t t0 = PARIO_TRACE_T0();
  if (x->rw == PARIO_WRITE) pthread_rwlock_wrlock(&c->f->rmw_lock);
  for (MPI_Offset cs = w->from; cs < w->to && rc == MPI_SUCCESS; cs += chunk)
    rc = one_chunk(c, x, w, cs, PARIO_MIN(cs + chunk, w->to));
  if (x->rw == PARIO_WRITE) pthread_rwlock_unlock(&c->f->rmw_lock);
  PARIO_TRACE_SPAN(PARIO_TC_COLL, "window_io", t0, PARIO_TA("round", w->k), PARIO_TA("direct", w->direct),
                   PARIO_TA("rc", rc));
  return rc;
}

/* Start window w's storage access (in the background when async); nothing to do for an
 * empty window or one that failed already (its failure is w->rc). */
static void win_io_start(pario_coll_ctx *c, const coll_call *x, coll_win *w, coll_bg *bg, int async) {
  if (w->npc == 0 || w->rc != MPI_SUCCESS) return;
  /* Within a round an aggregator's storage accesses wait for nobody else's (its data arrived
   * before the first), so a forwarder may hold them until every aggregator's access of the
   * same number is there; across rounds they would. */
  w->tag = coll_tag(c, w->k, round_senders(c, x, w->k));
  coll_bg_start(bg, async, window_io, w);
}

/* The result of window w's storage access started last. */
static int win_io_join(coll_win *w, coll_bg *bg) {
  int rc = coll_bg_join(bg);
  return rc != MPI_SUCCESS ? rc : w->rc;
}

/* Aggregator, write, round k: window k's data arrives; pipelined, the write of round k-1 is
 * joined, round k+1's receives go into the buffer it freed, and window k is written in the
 * background while the next round's messages flow. No write after a failed one. */
static int write_round(pario_coll_ctx *c, const coll_call *x, MPI_Offset k, int pipe, coll_bg *bg, int *failed) {
  coll_win *w = &c->win[pipe ? k % 2 : 0];
  if (k == 0 || !pipe) win_open(c, x, w, k);
  uint64_t t0 = PARIO_TRACE_T0();
  int lost = pario_wait_all(w->nrq, w->rq, c->st + c->np) != MPI_SUCCESS && pario_wait_stuck_ms();
  PARIO_TRACE_SPAN(PARIO_TC_COLL, "exchange", t0, PARIO_TA("requests", w->nrq));
  w->nrq = 0;
  int rc = pipe && k > 0 ? win_io_join(&c->win[(k + 1) % 2], bg) : MPI_SUCCESS;
  if (lost && rc == MPI_SUCCESS) rc = pario_comm_err(x->op, c->f->filename); /* the window lacks data: no write */
  if (rc != MPI_SUCCESS) *failed = 1;
  if (pipe && k + 1 < x->plan.rounds) win_open(c, x, &c->win[(k + 1) % 2], k + 1);
  if (*failed) return rc;
  win_io_start(c, x, w, bg, pipe);
  if (pipe && k + 1 < x->plan.rounds) return rc;
  rc = win_io_join(w, bg); /* unpipelined, or the last round */
  if (rc != MPI_SUCCESS) *failed = 1;
  return rc;
}

/* Aggregator, read, round k: window k has been read (pipelined: in the background during
 * round k-1); round k+1's window is read in the background into the other buffer, whose
 * sends of round k-1 complete first, and window k's pieces go back. */
static int read_round(pario_coll_ctx *c, const coll_call *x, MPI_Offset k, int pipe, coll_bg *bg) {
  coll_win *w = &c->win[pipe ? k % 2 : 0];
  if (k == 0 || !pipe) {
    win_open(c, x, w, k);
    win_io_start(c, x, w, bg, 0);
  }
  int rc = win_io_join(w, bg);
  if (pipe && k + 1 < x->plan.rounds) {
    coll_win *n = &c->win[(k + 1) % 2];
    win_open(c, x, n, k + 1);
    win_io_start(c, x, n, bg, 1);
  }
  win_post(c, x, w, rc == MPI_SUCCESS ? TAG : TAG_ERR + pario_err_class(rc));
  return rc;
}

/* ---- the rounds ---- */

/* The round's messages complete; a read learns from the tags whether its aggregators
 * succeeded, and unpacks into non-contiguous memory. */
static int finish_round(pario_coll_ctx *c, const coll_call *x, const round *rd) {
  int rc = MPI_SUCCESS;
  uint64_t t0 = PARIO_TRACE_T0();
  if (pario_wait_all(rd->nreq, c->reqs, c->st) != MPI_SUCCESS && pario_wait_stuck_ms())
    return pario_comm_err(x->op, c->f->filename); /* statuses and pieces are not there */
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

int coll_rounds(pario_coll_ctx *c, const coll_call *x) {
  int rc = MPI_SUCCESS, failed = 0, pipe = pipelined(c, x);
  coll_bg bg = {0};
  /* Staged, one round at a time, this rank's own piece stays where it is (user memory or the
   * pack buffer) for the round; otherwise it is a message to itself, landing in the window. */
  c->self_local = !pipe && !direct_ok(c);
  /* A rank with no data and no domain has nothing to do in any round. */
  MPI_Offset rounds = x->n > 0 || x->me_aggr >= 0 ? x->plan.rounds : 0;
  for (MPI_Offset k = 0; k < rounds; k++) {
    round rd = {0};
    uint64_t t0 = PARIO_TRACE_T0();
    own_pieces(c, x, k, &rd);
    MPI_Offset lo = 0, hi = 0;
    if (x->me_aggr >= 0) {
      coll_plan_window(&x->plan, x->me_aggr, k, &lo, &hi);
      int e = x->rw == PARIO_WRITE ? write_round(c, x, k, pipe, &bg, &failed) : read_round(c, x, k, pipe, &bg);
      if (rc == MPI_SUCCESS) rc = e;
    }
    int e = finish_round(c, x, &rd);
    if (rc == MPI_SUCCESS) rc = e;
    if (PARIO_TRACING()) trace_round(c, x, k, &rd, lo, hi, t0);
  }
  int e = coll_bg_end(&bg); /* no job runs here any more; the thread ends */
  if (rc == MPI_SUCCESS) rc = e;
  for (int i = 0; i < 2 && x->me_aggr >= 0; i++) { /* a read's last sends */
    pario_wait_all(c->win[i].nrq, c->win[i].rq, c->st + c->np);
    c->win[i].nrq = 0;
  }
  return rc;
}
