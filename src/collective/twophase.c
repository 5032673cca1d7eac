/* Two-phase collective I/O. One allgather tells every rank what everyone accesses: (data
 * position, bytes, first and last file offset). Views are legal filetypes (monotonic), so the
 * part of a rank's access that falls in a file window [lo, hi) is one contiguous range of its
 * data stream, [data_before(lo), data_before(hi)): with every rank's view cached here (sent
 * once per set_view), both sides of the exchange compute every message size without sending
 * offset lists. Each round, aggregator a owns one window of at most cb_buffer_size bytes of its
 * file domain; ranks send it their range straight from the user's buffer when that is
 * contiguous (packed otherwise), and the aggregator scatters the data into its buffer by
 * walking the sender's view, reading the window first only where the data leaves holes, then
 * writes it with one call. Reads run the other way. Ranks with nothing to access and no
 * domain leave after the allgather. The exchange is nonblocking point-to-point: each rank
 * talks only to the aggregators whose windows it touches, and ranks with nothing to do skip
 * the rounds (an MPI_Alltoallv would need every rank in every round). */
#include "collective/collective.h"

#include <fcntl.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* GCC takes MPICH's MPI_STATUSES_IGNORE (a constant address) for a zero-size array. */
#pragma GCC diagnostic ignored "-Wstringop-overflow"

/* info: pos, n, first, last, smallest piece, can read, sieves its write. Read data from an
 * aggregator that failed carries the tag TAG_ERR + error class, so no agreement is needed
 * after a read. */
enum { TAG = 7, TAG_ERR = 1000, NINFO = 7, ROUND_MAX = 4 << 20 };

struct pario_coll_ctx {
  pario_file *f;
  MPI_Comm comm;     /* private duplicate: the exchange's messages meet nothing else */
  int views_ok;      /* views[] match the current views */
  pario_view *views; /* every rank's view; views[rank] is unused (f->view is current) */
  pario_typemap *maps;
  int *node_of, *rank_in_node, nnodes;
  int *aggr, naggr, aggr_for; /* aggregator ranks, built for cb_nodes == aggr_for */
  char *cbuf;                 /* the aggregator's collective buffer */
  size_t cbcap;
  char *stage, *mine;         /* received (aggregator) and packed (own) data */
  size_t stcap, mncap;
  pario_run *iv;              /* the current window's file intervals, rank by rank */
  size_t ivcap;
};

/* ---- contexts ---- */

static void ctx_views_free(pario_coll_ctx *c) {
  if (c->maps)
    for (int r = 0; r < c->f->nprocs; r++) {
      free(c->maps[r].runs);
      free(c->maps[r].cum);
    }
  free(c->maps);
  free(c->views);
  c->maps = NULL;
  c->views = NULL;
  c->views_ok = 0;
}

/* Which node each rank is on (nodes numbered by their lowest rank), for aggregator placement. */
static int ctx_nodes(pario_coll_ctx *c) {
  int np = c->f->nprocs, me = c->f->rank, leader = me;
  MPI_Comm node;
  if (c->f->nodes == 1) { /* one host (open found out): no collectives needed */
    c->node_of = calloc((size_t)np, sizeof(int));
    c->rank_in_node = malloc(sizeof(int) * (size_t)np);
    if (!c->node_of || !c->rank_in_node) return 0;
    for (int r = 0; r < np; r++) c->rank_in_node[r] = r;
    c->nnodes = 1;
    return 1;
  }
  if (PMPI_Comm_split_type(c->comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
    PMPI_Allreduce(&me, &leader, 1, MPI_INT, MPI_MIN, node);
    PMPI_Comm_free(&node);
  }
  int *lead = malloc(sizeof(int) * (size_t)np);
  c->node_of = malloc(sizeof(int) * (size_t)np);
  c->rank_in_node = malloc(sizeof(int) * (size_t)np);
  if (!lead || !c->node_of || !c->rank_in_node) {
    free(lead);
    return 0;
  }
  PMPI_Allgather(&leader, 1, MPI_INT, lead, 1, MPI_INT, c->comm);
  c->nnodes = 0;
  for (int r = 0; r < np; r++) {
    if (lead[r] == r) { /* a node's lowest rank: the node gets the next number */
      c->node_of[r] = c->nnodes++;
      c->rank_in_node[r] = 0;
    } else {
      c->node_of[r] = c->node_of[lead[r]];
      c->rank_in_node[r] = 0;
      for (int q = 0; q < r; q++) c->rank_in_node[r] += lead[q] == lead[r];
    }
  }
  free(lead);
  return 1;
}

pario_coll_ctx *pario_coll_ctx_get(pario_file *f, int nb) {
  if (f->coll[nb]) return f->coll[nb];
  pario_coll_ctx *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->f = f;
  if (PMPI_Comm_dup(f->comm, &c->comm) != MPI_SUCCESS) {
    free(c);
    return NULL;
  }
  if (!ctx_nodes(c)) { /* never leaves ranks disagreeing: every rank created the dup */
    c->nnodes = 1;
    free(c->node_of);
    free(c->rank_in_node);
    c->node_of = c->rank_in_node = NULL;
  }
  f->coll[nb] = c;
  return c;
}

void pario_coll_view_changed(pario_file *f) {
  for (int i = 0; i < 2; i++)
    if (f->coll[i]) f->coll[i]->views_ok = 0;
}

void pario_coll_free(pario_file *f) {
  for (int i = 0; i < 2; i++) {
    pario_coll_ctx *c = f->coll[i];
    if (!c) continue;
    ctx_views_free(c);
    PMPI_Comm_free(&c->comm);
    free(c->node_of);
    free(c->rank_in_node);
    free(c->aggr);
    free(c->cbuf);
    free(c->stage);
    free(c->mine);
    free(c->iv);
    free(c);
    f->coll[i] = NULL;
  }
}

void pario_coll_hints_fix(pario_file *f) {
  pario_hints *h = &f->hints;
  if (h->cb_nodes <= 0) h->cb_nodes = PARIO_MIN(f->nodes > 0 ? f->nodes : 1, f->nprocs);
  if (h->cb_nodes > f->nprocs) h->cb_nodes = f->nprocs;
  if (h->cb_buffer_size > (1LL << 30)) h->cb_buffer_size = 1LL << 30; /* one message per window */
  if (h->romio_ds_write != PARIO_DISABLE && !(f->amode & MPI_MODE_RDONLY)) {
    if (f->locks_work == 0)
      f->locks_work = f->drv->lock_probe && f->drv->lock_probe(f->dh, PARIO_LOCK_WRITE) == 0 ? 1 : -1;
    if (f->locks_work < 0 || (f->oflags & O_ACCMODE) == O_WRONLY)
      h->romio_ds_write = PARIO_DISABLE; /* read-modify-write needs locks and read access */
  }
}

static int grow(void *pp, size_t *cap, size_t need) {
  if (need <= *cap) return 1;
  void *p = realloc(*(void **)pp, need);
  if (!p) return 0;
  *(void **)pp = p;
  *cap = need;
  return 1;
}

/* ---- every rank's view ---- */

/* A view's runs travel compressed: strided groups {count, off, len, stride} (a vector or
 * subarray filetype becomes a few groups), or plainly {off, len} where that is shorter. The
 * encoding is the words after a leading 0 (plain) or 1 (grouped). */
static size_t runs_groups(const pario_typemap *t) {
  size_t g = 0;
  for (size_t i = 0; i < t->nruns; g++) {
    size_t j = i + 1;
    if (j < t->nruns && t->runs[j].len == t->runs[i].len) {
      MPI_Offset stride = t->runs[j].off - t->runs[i].off;
      while (j + 1 < t->nruns && t->runs[j + 1].len == t->runs[i].len &&
             t->runs[j + 1].off - t->runs[j].off == stride)
        j++;
      j++;
    }
    i = j;
  }
  return g;
}

static void runs_encode(const pario_typemap *t, size_t groups, long long *w) {
  int grouped = 4 * groups < 2 * t->nruns;
  *w++ = grouped;
  for (size_t i = 0; i < t->nruns && !grouped; i++) {
    *w++ = t->runs[i].off;
    *w++ = t->runs[i].len;
  }
  for (size_t i = 0; i < t->nruns && grouped;) {
    size_t j = i + 1;
    MPI_Offset stride = 0;
    if (j < t->nruns && t->runs[j].len == t->runs[i].len) {
      stride = t->runs[j].off - t->runs[i].off;
      while (j + 1 < t->nruns && t->runs[j + 1].len == t->runs[i].len &&
             t->runs[j + 1].off - t->runs[j].off == stride)
        j++;
      j++;
    }
    *w++ = (long long)(j - i);
    *w++ = t->runs[i].off;
    *w++ = t->runs[i].len;
    *w++ = stride;
    i = j;
  }
}

static size_t runs_words(const pario_typemap *t, size_t groups) {
  return 1 + PARIO_MIN(4 * groups, 2 * t->nruns);
}

/* Decodes n words into m->runs (m->nruns runs); 0 if the words do not make that many. */
static int runs_decode(const long long *w, long long n, pario_typemap *m) {
  size_t k = 0;
  if (n < 1) return 0;
  long long step = w[0] ? 4 : 2;
  for (long long i = 1; i + step <= n; i += step) {
    long long cnt = w[0] ? w[i] : 1;
    const long long *g = w[0] ? w + i + 1 : w + i;
    for (long long j = 0; j < cnt; j++) {
      if (k >= m->nruns) return 0;
      m->runs[k].off = g[0] + j * (w[0] ? g[2] : 0);
      m->runs[k++].len = g[1];
    }
  }
  return k == m->nruns;
}

/* Every rank learns every rank's view: a header each (allgather), then the encoded runs
 * (allgatherv), with polite waits. A failure on any rank is every rank's. */
static int exchange_views(pario_coll_ctx *c) {
  enum { NH = 8 };
  pario_file *f = c->f;
  int np = f->nprocs, rc = MPI_SUCCESS;
  const pario_view *v = &f->view;
  const pario_typemap *t = v->ftm;
  size_t groups = runs_groups(t), words = runs_words(t, groups);
  long long *hdrs = malloc(sizeof(long long) * NH * (size_t)np);
  int *cnt = malloc(sizeof(int) * (size_t)np), *dsp = malloc(sizeof(int) * (size_t)np);
  long long *all = NULL, *mine = malloc(sizeof(long long) * words);
  int ok = hdrs && cnt && dsp && mine && words < (size_t)INT32_MAX / 2;
  if (ok) runs_encode(t, groups, mine);
  long long hdr[NH] = {v->disp, v->esize, v->contiguous, (long long)t->nruns, t->lb, t->extent, t->size,
                       ok ? (long long)words : -1};
  MPI_Request rq;
  if (!hdrs) { /* 64 bytes a rank: the others would wait forever */
    pario_log(0, "%s: out of memory exchanging the views; aborting", f->filename);
    PMPI_Abort(c->comm, MPI_ERR_NO_MEM);
  }
  /* everyone learns whether everyone can go on, then the encoded runs */
  PMPI_Iallgather(hdr, NH, MPI_LONG_LONG, hdrs, NH, MPI_LONG_LONG, c->comm, &rq);
  pario_wait_all(1, &rq, MPI_STATUSES_IGNORE);
  long long total = 0;
  int bad = !ok;
  for (int r = 0; r < np && ok; r++) {
    bad |= hdrs[NH * r + 7] < 0;
    cnt[r] = (int)(hdrs[NH * r + 7] < 0 ? 0 : hdrs[NH * r + 7]);
    dsp[r] = (int)PARIO_MIN(total, INT32_MAX);
    total += cnt[r];
  }
  if (!bad) {
    all = total < INT32_MAX ? malloc(sizeof(long long) * (size_t)(total ? total : 1)) : NULL;
    bad = !all;
  }
  int anybad = 0;
  PMPI_Iallreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, c->comm, &rq);
  pario_wait_all(1, &rq, MPI_STATUSES_IGNORE);
  if (anybad) {
    rc = MPI_ERR_NO_MEM;
    goto out;
  }
  PMPI_Iallgatherv(mine, cnt[f->rank], MPI_LONG_LONG, all, cnt, dsp, MPI_LONG_LONG, c->comm, &rq);
  pario_wait_all(1, &rq, MPI_STATUSES_IGNORE);
  ctx_views_free(c);
  c->views = calloc((size_t)np, sizeof *c->views);
  c->maps = calloc((size_t)np, sizeof *c->maps);
  if (!c->views || !c->maps) {
    rc = MPI_ERR_NO_MEM;
    goto out;
  }
  for (int r = 0; r < np; r++) {
    if (r == f->rank) continue;
    const long long *h = hdrs + NH * r;
    pario_typemap *m = &c->maps[r];
    m->nruns = (size_t)h[3];
    m->runs = malloc(sizeof(pario_run) * (m->nruns ? m->nruns : 1));
    m->cum = malloc(sizeof(MPI_Offset) * (m->nruns + 1));
    if (!m->runs || !m->cum) {
      rc = MPI_ERR_NO_MEM;
      goto out;
    }
    if (!runs_decode(all + dsp[r], cnt[r], m)) {
      rc = MPI_ERR_INTERN;
      goto out;
    }
    m->cum[0] = 0;
    for (size_t i = 0; i < m->nruns; i++) m->cum[i + 1] = m->cum[i] + m->runs[i].len;
    m->lb = h[4];
    m->extent = h[5];
    m->size = h[6];
    m->dense = (int)h[2];
    m->monotonic = m->nonneg = 1;
    m->refs = 1;
    c->views[r].disp = h[0];
    c->views[r].esize = h[1];
    c->views[r].contiguous = (int)h[2];
    c->views[r].ftm = m;
  }
  c->views_ok = 1;
out:
  free(hdrs);
  free(cnt);
  free(dsp);
  free(all);
  free(mine);
  return rc;
}

static const pario_view *view_of(pario_coll_ctx *c, int r) {
  return r == c->f->rank ? &c->f->view : &c->views[r];
}

/* ---- aggregators and file domains ---- */

/* cb_nodes aggregators: fewer than the nodes, spread evenly over them; more, round robin
 * over the nodes, one more rank of each per turn. */
static int aggregators(pario_coll_ctx *c) {
  pario_file *f = c->f;
  int k = f->hints.cb_nodes, np = f->nprocs;
  if (k < 1) k = 1;
  if (k > np) k = np;
  if (c->aggr && c->aggr_for == k) return 1;
  free(c->aggr);
  c->aggr = malloc(sizeof(int) * (size_t)k);
  if (!c->aggr) return 0;
  c->naggr = 0;
  if (!c->node_of) { /* no node map: the first k ranks */
    for (int i = 0; i < k; i++) c->aggr[c->naggr++] = i;
  } else if (k <= c->nnodes) {
    for (int i = 0; i < k; i++) {
      int node = (int)((long long)i * c->nnodes / k);
      for (int r = 0; r < np; r++)
        if (c->node_of[r] == node && c->rank_in_node[r] == 0) {
          c->aggr[c->naggr++] = r;
          break;
        }
    }
  } else {
    for (int turn = 0; c->naggr < k && turn < np; turn++)
      for (int node = 0; node < c->nnodes && c->naggr < k; node++)
        for (int r = 0; r < np; r++)
          if (c->node_of[r] == node && c->rank_in_node[r] == turn) {
            c->aggr[c->naggr++] = r;
            break;
          }
  }
  c->aggr_for = k;
  return c->naggr > 0;
}

typedef struct plan {
  MPI_Offset *bound; /* domain i is [bound[i], bound[i+1]) */
  MPI_Offset align, cb;
  MPI_Offset rounds;
} plan;

/* File domains: the accessed span cut into naggr equal parts, boundaries moved down to the
 * alignment unit (striping_unit or cb_block_size) when one is given. */
static int make_plan(pario_coll_ctx *c, MPI_Offset gmin, MPI_Offset gmax, plan *p) {
  const pario_hints *h = &c->f->hints;
  int na = c->naggr;
  p->bound = malloc(sizeof(MPI_Offset) * (size_t)(na + 1));
  if (!p->bound) return 0;
  p->align = h->striping_unit > 0 ? h->striping_unit : h->cb_block_size > 0 ? h->cb_block_size : 1;
  /* cb_buffer_size bounds what an aggregator stages in a round; rounds larger than 4 MiB of
   * file only push the staged data out of cache (pario-bench noncontig, MPICH, 1 KiB
   * regions: collective write 15-20 % slower with 64 MiB rounds than with 4 MiB ones). */
  p->cb = PARIO_MIN(h->cb_buffer_size > 0 ? h->cb_buffer_size : 16 << 20, ROUND_MAX);
  MPI_Offset span = gmax - gmin, each = (span + na - 1) / na;
  p->bound[0] = gmin;
  p->bound[na] = gmax;
  for (int i = 1; i < na; i++) {
    MPI_Offset b = gmin + i * each;
    b -= b % p->align;
    p->bound[i] = PARIO_MIN(PARIO_MAX(b, p->bound[i - 1]), gmax);
  }
  p->rounds = 0;
  for (int i = 0; i < na; i++) {
    if (p->bound[i + 1] <= p->bound[i]) continue;
    MPI_Offset base = p->bound[i] - p->bound[i] % p->align;
    MPI_Offset r = (p->bound[i + 1] - base + p->cb - 1) / p->cb;
    if (r > p->rounds) p->rounds = r;
  }
  return 1;
}

/* Window of domain i in round k (empty when lo >= hi). */
static void window(const plan *p, int i, MPI_Offset k, MPI_Offset *lo, MPI_Offset *hi) {
  MPI_Offset base = p->bound[i] - p->bound[i] % p->align;
  *lo = PARIO_MAX(p->bound[i], base + k * p->cb);
  *hi = PARIO_MIN(p->bound[i + 1], base + (k + 1) * p->cb);
}

/* The range [*s, *e) of data positions of an access (pos, n) through view v inside [lo, hi). */
static int range_in(const pario_view *v, MPI_Offset pos, MPI_Offset n, MPI_Offset lo,
                    MPI_Offset hi, MPI_Offset *s, MPI_Offset *e) {
  *s = PARIO_MAX(pos, pario_view_data_before(v, lo));
  *e = PARIO_MIN(pos + n, pario_view_data_before(v, hi));
  return *e > *s;
}

/* ---- the aggregator's window ---- */

typedef struct piece {
  int peer;          /* the other rank (the aggregator, or the sender) */
  MPI_Offset s, e;   /* data positions */
  char *ptr;         /* where its bytes are (user memory, or a staging area) */
  size_t iv0, iv1;   /* its file intervals in c->iv (aggregator side) */
} piece;

/* Append the file intervals of data [s, e) of view v, merging adjacent ones. */
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
        !grow(&c->iv, &c->ivcap, PARIO_MAX(c->ivcap * 2, 1024 * sizeof(pario_run))))
      return 0;
    c->iv[k].off = off;
    c->iv[k++].len = len;
  }
  *n = k;
  return 1;
}

/* The window is handled in chunks small enough to stay in the CPU cache while they are read,
 * filled and written. A cursor walks one piece's intervals and its data. */
enum { CHUNK = 512 << 10 };

typedef struct cursor {
  size_t k;        /* current interval in c->iv */
  MPI_Offset skip; /* bytes of it already done (it straddled the previous chunk) */
  char *p;         /* the piece's data at that point */
} cursor;

/* Go over the parts of the pieces' intervals inside [cs, ce), advancing the cursors:
 * mode 0 only measures, 1 copies the data into buf, 2 copies it out of buf (buf holds the
 * file from offset base). Returns the bytes seen; [*lo, *hi) receives their span. */
static MPI_Offset chunk_pass(const pario_coll_ctx *c, const piece *pc, int npc, cursor *cur,
                             MPI_Offset cs, MPI_Offset ce, int mode, char *buf, MPI_Offset base,
                             MPI_Offset *lo, MPI_Offset *hi) {
  MPI_Offset bytes = 0;
  *lo = ce;
  *hi = cs;
  for (int i = 0; i < npc; i++) {
    cursor *u = &cur[i];
    while (u->k < pc[i].iv1) {
      const pario_run *r = &c->iv[u->k];
      MPI_Offset s = r->off + u->skip, e = r->off + r->len;
      if (s >= ce) break;
      MPI_Offset take = PARIO_MIN(e, ce) - s;
      if (mode == 1) memcpy(buf + (s - base), u->p, (size_t)take);
      else if (mode == 2) memcpy(u->p, buf + (s - base), (size_t)take);
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
 * intervals of one piece are sorted; pieces may overlap). Uses cur as scratch. */
static int covered(const pario_coll_ctx *c, const piece *pc, int npc, cursor *cur, MPI_Offset lo,
                   MPI_Offset hi) {
  MPI_Offset at = lo;
  while (at < hi) {
    int best = -1;
    MPI_Offset bs = 0;
    for (int i = 0; i < npc; i++) {
      if (cur[i].k >= pc[i].iv1) continue;
      MPI_Offset s = c->iv[cur[i].k].off + cur[i].skip;
      if (best < 0 || s < bs) best = i, bs = s;
    }
    if (best < 0 || bs > at) return 0;
    const pario_run *r = &c->iv[cur[best].k++];
    cur[best].skip = 0;
    at = PARIO_MAX(at, r->off + r->len);
  }
  return 1;
}

static int io_error(pario_file *f, const char *op, int rw, int e, MPI_Offset len, MPI_Offset off) {
  return pario_err(pario_errno_class(e), op, f->filename, e, "collective %s of %lld bytes at offset %lld failed",
                   rw == PARIO_WRITE ? "write" : "read", (long long)len, (long long)off);
}

static int xfer(pario_file *f, int rw, void *p, MPI_Offset len, MPI_Offset off, size_t *got) {
  struct iovec v = {p, (size_t)len};
  *got = 0;
  const char *fail = getenv("PARIO_TEST_COLL_EIO"); /* tests: this rank's aggregation fails */
  if (fail && atoi(fail) == f->rank) return EIO;
  return rw == PARIO_WRITE ? f->drv->pwritev(f->dh, &v, 1, (off_t)off, got)
                           : f->drv->preadv(f->dh, &v, 1, (off_t)off, got);
}

/* Out of memory for the staging area: still match every message of the round, one at a time
 * (the data is lost; the call fails through the final agreement, or the error tag for reads). */
static void drain(pario_coll_ctx *c, int rw, const piece *pc, int npc, int err) {
  for (int i = 0; i < npc; i++) {
    if (pc[i].peer == c->f->rank) continue;
    int len = (int)(pc[i].e - pc[i].s);
    char *tmp = calloc(1, (size_t)len);
    if (!tmp) {
      pario_log(0, "%s: out of memory in a collective exchange; aborting", c->f->filename);
      PMPI_Abort(c->comm, MPI_ERR_NO_MEM);
    }
    if (rw == PARIO_WRITE) PMPI_Recv(tmp, len, MPI_BYTE, pc[i].peer, TAG, c->comm, MPI_STATUS_IGNORE);
    else PMPI_Send(tmp, len, MPI_BYTE, pc[i].peer, TAG_ERR + err, c->comm);
    free(tmp);
  }
}

/* Aggregator side of one round for window [lo, hi): the pieces of every rank in it. */
static int aggregate_window(pario_coll_ctx *c, const char *op, int rw, const long long *info,
                            MPI_Offset lo, MPI_Offset hi, char *selfptr, MPI_Request *reqs, int *nreq) {
  pario_file *f = c->f;
  int np = f->nprocs, npc = 0, rc = MPI_SUCCESS;
  piece *pc = malloc(sizeof(piece) * (size_t)np);
  if (!pc) return pario_err(MPI_ERR_NO_MEM, op, f->filename, 0, "out of memory");
  size_t staged = 0, niv = 0;
  for (int r = 0; r < np; r++) {
    const long long *in = info + NINFO * r;
    MPI_Offset s, e;
    if (in[1] == 0 || in[3] <= lo || in[2] >= hi || !range_in(view_of(c, r), in[0], in[1], lo, hi, &s, &e))
      continue;
    pc[npc++] = (piece){r, s, e, NULL, 0, 0};
    if (r != f->rank) staged += (size_t)(e - s);
  }
  if (npc == 0) goto done;
  if (!grow(&c->stage, &c->stcap, staged)) {
    rc = pario_err(MPI_ERR_NO_MEM, op, f->filename, 0, "out of memory for %zu staged bytes", staged);
    drain(c, rw, pc, npc, MPI_ERR_NO_MEM);
    goto done;
  }
  staged = 0;
  for (int i = 0; i < npc; i++) {
    if (pc[i].peer == f->rank) {
      pc[i].ptr = selfptr;
      continue;
    }
    pc[i].ptr = c->stage + staged;
    staged += (size_t)(pc[i].e - pc[i].s);
    if (rw == PARIO_WRITE) /* post the receives before the intervals are worked out */
      PMPI_Irecv(pc[i].ptr, (int)(pc[i].e - pc[i].s), MPI_BYTE, pc[i].peer, TAG, c->comm, &reqs[(*nreq)++]);
  }
  MPI_Offset minoff = hi, maxend = lo;
  for (int i = 0; i < npc && rc == MPI_SUCCESS; i++) {
    pc[i].iv0 = niv;
    if (!intervals(c, view_of(c, pc[i].peer), pc[i].s, pc[i].e, &niv))
      rc = pario_err(MPI_ERR_NO_MEM, op, f->filename, 0, "out of memory");
    pc[i].iv1 = niv;
    if (pc[i].iv1 > pc[i].iv0) {
      minoff = PARIO_MIN(minoff, c->iv[pc[i].iv0].off);
      const pario_run *l = &c->iv[pc[i].iv1 - 1];
      maxend = PARIO_MAX(maxend, l->off + l->len);
    }
  }
  cursor *cur = malloc(sizeof(cursor) * 2 * (size_t)npc), *tmp = cur + npc;
  if (rc == MPI_SUCCESS && (!cur || !grow(&c->cbuf, &c->cbcap, CHUNK)))
    rc = pario_err(MPI_ERR_NO_MEM, op, f->filename, 0, "out of memory for the collective buffer");
  for (int i = 0; cur && i < npc; i++) cur[i] = (cursor){pc[i].iv0, 0, pc[i].ptr};
  if (rw == PARIO_WRITE) {
    pario_wait_all(*nreq, reqs, MPI_STATUSES_IGNORE);
    *nreq = 0;
    pthread_rwlock_wrlock(&f->rmw_lock); /* no write of this process inside a read-modify-write */
  }
  for (MPI_Offset cs = minoff; cs < maxend && rc == MPI_SUCCESS; cs += CHUNK) {
    MPI_Offset ce = PARIO_MIN(cs + CHUNK, maxend), lo, hi;
    size_t got;
    memcpy(tmp, cur, sizeof(cursor) * (size_t)npc);
    MPI_Offset bytes = chunk_pass(c, pc, npc, tmp, cs, ce, 0, NULL, 0, &lo, &hi);
    if (bytes == 0) continue; /* nobody's data here: the chunk is not touched */
    int e = 0, holes = 1;
    if (rw == PARIO_WRITE && bytes >= hi - lo) {
      memcpy(tmp, cur, sizeof(cursor) * (size_t)npc);
      holes = !covered(c, pc, npc, tmp, lo, hi);
    }
    if (holes) { /* keep the bytes nobody writes; for reads, what the ranks asked for */
      e = xfer(f, PARIO_READ, c->cbuf, hi - lo, lo, &got);
      if (e) rc = io_error(f, op, PARIO_READ, e, hi - lo, lo);
      else memset(c->cbuf + got, 0, (size_t)(hi - lo - (MPI_Offset)got)); /* past end of file */
    }
    if (rc != MPI_SUCCESS) break;
    chunk_pass(c, pc, npc, cur, cs, ce, rw == PARIO_WRITE ? 1 : 2, c->cbuf, lo, &lo, &hi);
    if (rw == PARIO_WRITE && (e = xfer(f, PARIO_WRITE, c->cbuf, hi - lo, lo, &got)))
      rc = io_error(f, op, PARIO_WRITE, e, hi - lo, lo);
  }
  free(cur);
  if (rw == PARIO_WRITE) {
    pthread_rwlock_unlock(&f->rmw_lock);
  } else { /* the tag tells the reader whether its data is good */
    int tag = rc == MPI_SUCCESS ? TAG : TAG_ERR + pario_err_class(rc);
    for (int i = 0; i < npc; i++)
      if (pc[i].peer != f->rank)
        PMPI_Isend(pc[i].ptr, (int)(pc[i].e - pc[i].s), MPI_BYTE, pc[i].peer, tag, c->comm, &reqs[(*nreq)++]);
  }
done:
  free(pc);
  return rc;
}

/* ---- the collective call ---- */

/* Automatic collective reads on one node through the page cache go independent, decided from
 * the hints alone (the same on every rank) so the call needs no communication at all: the
 * ranks share one cache, aggregation saves no storage traffic, and independent reads (with
 * data sieving) run on every core while aggregators work alone and copy the data once more
 * (pario-bench noncontig, 2 and 4 ranks: aggregated reads 1.3-3x slower than independent
 * ones under either MPI). A cb_nodes given by the user keeps aggregation. Only hints every
 * rank adopted from rank 0 decide (pario_direct_io is per rank, so it cannot: a rank that
 * skipped the allgather would leave the others waiting in it). */
static int reads_alone(const pario_file *f, int rw) {
  return rw == PARIO_READ && f->hints.romio_cb_read == PARIO_AUTO && f->nodes == 1 &&
         !f->hints.cb_nodes_given;
}

/* Aggregate, or let every rank access independently? */
static int want_aggregation(const pario_coll_ctx *c, int rw, const long long *info) {
  const pario_file *f = c->f;
  int hint = rw == PARIO_WRITE ? f->hints.romio_cb_write : f->hints.romio_cb_read, np = f->nprocs;
  int active = 0;
  for (int r = 0; r < np; r++) active += info[NINFO * r + 1] > 0;
  if (active == 0 || hint == PARIO_DISABLE || f->atomic) return 0; /* atomic: locked accesses */
  for (int r = 0; r < np && rw == PARIO_WRITE; r++)
    if (!info[NINFO * r + 5]) return 0; /* a window with holes could not be read first */
  if (hint == PARIO_ENABLE) return 1;
  if (active == 1) return 0;
  /* automatic: aggregate when the ranks' byte ranges interleave and some rank's contiguous
   * pieces are small; large disjoint (or large-piece) accesses go straight to the file. */
  long long minpiece = INT64_MAX;
  int interleaved = 0;
  for (int r = 0; r < np; r++) {
    const long long *a = info + NINFO * r;
    if (a[1] == 0) continue;
    minpiece = PARIO_MIN(minpiece, a[4]);
    for (int q = r + 1; q < np; q++) {
      const long long *b = info + NINFO * q;
      if (b[1] > 0 && a[2] < b[3] && b[2] < a[3]) interleaved = 1;
    }
  }
  return interleaved && minpiece < (1LL << 20);
}

/* This rank's side of one round: its pieces for every aggregator whose window it touches. */
static int own_pieces(pario_coll_ctx *c, const plan *p, MPI_Offset k, int rw, MPI_Offset pos,
                      MPI_Offset n, void *buf, const pario_typemap *tm, MPI_Count count,
                      piece *pc, int *npc, char **selfptr, MPI_Request *reqs, int *nreq) {
  pario_file *f = c->f;
  char *contig = pario_mcursor_contig(buf, tm, count);
  size_t need = 0;
  *npc = 0;
  *selfptr = NULL;
  for (int i = 0; i < c->naggr && n > 0; i++) {
    MPI_Offset lo, hi, s, e;
    window(p, i, k, &lo, &hi);
    if (lo >= hi || !range_in(&f->view, pos, n, lo, hi, &s, &e)) continue;
    pc[(*npc)++] = (piece){c->aggr[i], s, e, NULL, 0, 0};
    need += (size_t)(e - s);
  }
  if (!contig && !grow(&c->mine, &c->mncap, need)) return 0;
  size_t at = 0;
  for (int i = 0; i < *npc; i++) {
    piece *q = &pc[i];
    MPI_Offset len = q->e - q->s;
    if (contig) {
      q->ptr = contig + (q->s - pos);
    } else {
      q->ptr = c->mine + at;
      at += (size_t)len;
      if (rw == PARIO_WRITE) {
        pario_mcursor mc;
        pario_mcursor_init_at(&mc, buf, tm, q->s - pos);
        pario_mcursor_pack(&mc, q->ptr, len);
      }
    }
    if (q->peer == f->rank) *selfptr = q->ptr;
    else if (rw == PARIO_WRITE) PMPI_Isend(q->ptr, (int)len, MPI_BYTE, q->peer, TAG, c->comm, &reqs[(*nreq)++]);
    else PMPI_Irecv(q->ptr, (int)len, MPI_BYTE, q->peer, MPI_ANY_TAG, c->comm, &reqs[(*nreq)++]);
  }
  return 1;
}

static int two_phase(pario_coll_ctx *c, const char *op, int rw, const long long *info,
                     MPI_Offset pos, MPI_Offset n, void *buf, const pario_typemap *tm, MPI_Count count) {
  pario_file *f = c->f;
  int np = f->nprocs, rc = MPI_SUCCESS;
  MPI_Offset gmin = INT64_MAX, gmax = 0;
  for (int r = 0; r < np; r++)
    if (info[NINFO * r + 1] > 0) {
      gmin = PARIO_MIN(gmin, info[NINFO * r + 2]);
      gmax = PARIO_MAX(gmax, info[NINFO * r + 3]);
    }
  plan p = {0};
  if (!make_plan(c, gmin, gmax, &p)) return pario_err(MPI_ERR_NO_MEM, op, f->filename, 0, "out of memory");
  int me_aggr = -1;
  for (int i = 0; i < c->naggr; i++)
    if (c->aggr[i] == f->rank) me_aggr = i;
  piece *pc = malloc(sizeof(piece) * (size_t)c->naggr);
  MPI_Request *reqs = malloc(sizeof(MPI_Request) * (size_t)(c->naggr + np));
  MPI_Status *st = malloc(sizeof(MPI_Status) * (size_t)(c->naggr + np));
  if (!pc || !reqs || !st) {
    free(pc);
    free(reqs);
    free(st);
    return pario_err(MPI_ERR_NO_MEM, op, f->filename, 0, "out of memory");
  }
  int contig = n == 0 || pario_mcursor_contig(buf, tm, count) != NULL;
  /* A rank with no data and no domain has nothing to do in any round. */
  MPI_Offset rounds = n > 0 || me_aggr >= 0 ? p.rounds : 0;
  for (MPI_Offset k = 0; k < rounds; k++) {
    int npc = 0, nreq = 0;
    char *selfptr = NULL;
    if (!own_pieces(c, &p, k, rw, pos, n, buf, tm, count, pc, &npc, &selfptr, reqs, &nreq)) {
      /* cannot stage our data: still take part, with the error, so nobody waits forever */
      if (rc == MPI_SUCCESS) rc = pario_err(MPI_ERR_NO_MEM, op, f->filename, 0, "out of memory");
      npc = 0;
    }
    int nrecv = rw == PARIO_READ ? nreq : 0; /* own_pieces posted the receives first */
    if (me_aggr >= 0) {
      MPI_Offset lo, hi;
      window(&p, me_aggr, k, &lo, &hi);
      if (lo < hi) {
        int e = aggregate_window(c, op, rw, info, lo, hi, selfptr, reqs, &nreq);
        if (rc == MPI_SUCCESS) rc = e;
      }
    }
    pario_wait_all(nreq, reqs, st);
    for (int i = 0; i < nrecv && rc == MPI_SUCCESS; i++)
      if (st[i].MPI_TAG != TAG)
        rc = pario_err(st[i].MPI_TAG > TAG_ERR ? st[i].MPI_TAG - TAG_ERR : MPI_ERR_OTHER, op, f->filename, 0,
                       "the collective read failed on aggregator rank %d", st[i].MPI_SOURCE);
    if (rw == PARIO_READ && !contig)
      for (int i = 0; i < npc; i++) {
        pario_mcursor mc;
        pario_mcursor_init_at(&mc, buf, tm, pc[i].s - pos);
        pario_mcursor_unpack(&mc, pc[i].ptr, pc[i].e - pc[i].s);
      }
  }
  free(pc);
  free(reqs);
  free(st);
  free(p.bound);
  return rc;
}

/* Every rank on its own: the independent path (with data sieving). */
static int independently(pario_file *f, const char *op, int rw, MPI_Offset pos, void *buf,
                         MPI_Count count, MPI_Datatype type, const pario_typemap *tm, MPI_Count *bytes,
                         int lock_writes) {
  MPI_Count b = 0;
  int rc = tm ? pario_access_ex(f, op, rw, pos, buf, count, type, &b, lock_writes) : MPI_SUCCESS;
  *bytes = b;
  return rc;
}

int pario_coll_access(pario_coll_ctx *c, const char *op, int rw, MPI_Offset pos, void *buf,
                      MPI_Count count, MPI_Datatype type, MPI_Count *bytes) {
  pario_file *f = c->f;
  const pario_typemap *tm;
  *bytes = 0;
  if (pario_typemap_get(type, &tm) != MPI_SUCCESS) count = 0, tm = NULL;
  if (reads_alone(f, rw)) return independently(f, op, rw, pos, buf, count, type, tm, bytes, 0);
  MPI_Offset n = tm ? (MPI_Offset)count * tm->size : 0;
  if (rw == PARIO_READ && n > 0) { /* what lies before end of file, the same for every rank */
    off_t size = 0;
    if (f->drv->size(f->dh, &size) == 0)
      n = PARIO_MAX(0, PARIO_MIN(n, pario_view_data_before(&f->view, size) - pos));
  }
  long long mine[NINFO] = {pos, n, 0, 0, 0, (f->oflags & O_ACCMODE) != O_WRONLY,
                           rw == PARIO_WRITE && pario_sieves_write(f, n)};
  if (n > 0) {
    MPI_Offset first, last;
    pario_view_extent_of(&f->view, pos, n, &first, &last);
    mine[2] = first;
    mine[3] = last;
    const pario_typemap *ft = f->view.ftm;
    mine[4] = f->view.contiguous ? n : ft->size / (MPI_Offset)ft->nruns;
  }
  long long *info = malloc(sizeof(long long) * NINFO * (size_t)f->nprocs);
  int rc = MPI_SUCCESS;
  if (!info) { /* 48 bytes a rank: nothing sensible is left to do, and others would wait */
    pario_log(0, "%s: %s: out of memory; aborting", f->filename, op);
    PMPI_Abort(c->comm, MPI_ERR_NO_MEM);
  }
  MPI_Request r;
  PMPI_Iallgather(mine, NINFO, MPI_LONG_LONG, info, NINFO, MPI_LONG_LONG, c->comm, &r);
  pario_wait_all(1, &r, MPI_STATUSES_IGNORE);
  /* every rank reaches the same decision from the same data */
  if (!want_aggregation(c, rw, info)) {
    int sieving = 0; /* some rank rewrites windows around others' data: every write locks */
    for (int r = 0; r < f->nprocs; r++) sieving |= info[NINFO * r + 6] != 0;
    free(info);
    return independently(f, op, rw, pos, buf, count, type, tm, bytes, sieving);
  }
  /* Views and aggregators are the same on every rank; a failure there is everyone's. Once
   * both are known (every rank keeps them from the same agreed call), nothing can fail. */
  int fresh = !c->views_ok || c->aggr_for != f->hints.cb_nodes, worst = MPI_SUCCESS;
  if (!c->views_ok) rc = exchange_views(c);
  if (rc != MPI_SUCCESS) rc = pario_err(rc, op, f->filename, 0, "cannot exchange the views (%s)", rc == MPI_ERR_NO_MEM ? "out of memory" : "bad data");
  else if (!aggregators(c)) rc = pario_err(MPI_ERR_NO_MEM, op, f->filename, 0, "out of memory");
  if (fresh) worst = pario_agree(c->comm, rc);
  if (worst != MPI_SUCCESS) c->views_ok = 0, c->aggr_for = 0; /* all start afresh next time */
  if (worst == MPI_SUCCESS) {
    rc = two_phase(c, op, rw, info, pos, n, buf, tm, count);
    /* A write fails everywhere if any aggregator failed; a reader learnt from the tags
     * whether the aggregators that served it succeeded, and that is all it needs. */
    worst = rw == PARIO_WRITE ? pario_agree(c->comm, rc) : rc;
  }
  free(info);
  if (rc == MPI_SUCCESS && worst != MPI_SUCCESS)
    rc = pario_err(worst, op, f->filename, 0, "the collective %s failed on another rank",
                   rw == PARIO_WRITE ? "write" : "read");
  if (rc == MPI_SUCCESS) *bytes = n;
  return rc;
}
