/* Internals of the collective layer shared by its files: the context (one per file and kind,
 * see collective.h), one call's description, and the steps of an aggregated call: the view
 * exchange (viewx.c), then the data exchange (exchange.c), driven by access.c. */
#ifndef PARIO_COLL_INTERNAL_H
#define PARIO_COLL_INTERNAL_H

#include "collective/collective.h"
#include "collective/plan.h"
#include "collective/runs.h"

_Static_assert(sizeof(((struct coll_info *)0)->vdef) == PARIO_VDEF_WORDS * sizeof(long long),
               "coll_info carries set_view's deferred agreement");

/* What one rank sends an aggregator of its view when the aggregator lacks part of it
 * (viewx.c): the view, its filetype's geometry and the part sent (the runs that meet [a, b) of
 * the tile, coll_hold), as COLL_VHDR_WORDS MPI_LONG_LONGs before the runs. */
struct coll_view_hdr {
  long long esize, contiguous, lb, extent, size; /* the view and its filetype */
  long long off0, whole, a, b;                   /* the part (coll_hold) */
  long long cum0, nruns;                         /* data of a tile before its first run; its runs */
  long long words;                               /* words of their encoding; -1: this rank cannot send them */
};
enum { COLL_VHDR_WORDS = sizeof(struct coll_view_hdr) / sizeof(long long) };
_Static_assert(sizeof(struct coll_view_hdr) == COLL_VHDR_WORDS * sizeof(long long), "coll_view_hdr is words");

/* One set of every rank's view as the view exchanges brought them: this rank's own in full
 * (views[rank], maps[rank], to compare with), and of every other rank the part of its
 * filetype that this rank's file domains have needed since the set was made (held; nothing on
 * a rank that is no aggregator). Displacements are not part of it: every call's allgather
 * brings them (coll_info.disp). */
enum { COLL_VSETS_MAX = 16, COLL_VSETS_DEFAULT = 4 };
typedef struct coll_vset {
  int ok;                  /* holds views (else empty) */
  unsigned long long used; /* the context's call count when last used: the oldest goes first */
  unsigned long long key;  /* hash of this rank's entry (coll_view_key) */
  unsigned long own_gen;   /* a view generation known to equal this rank's entry (0: none) */
  pario_view *views;       /* np */
  pario_typemap *maps;     /* np: runs and cum of the part held (cum absolute: cum[0] its cum0) */
  coll_hold *held;         /* np: the part of each rank's filetype held */
  coll_hold *sent;         /* np, by aggregator index: the part of this rank's own sent to it */
} coll_vset;

/* A contiguous range of one rank's data stream that one aggregator handles in one round. */
typedef struct coll_piece {
  int peer;        /* the other rank (the aggregator, or the rank whose data it is) */
  MPI_Offset s, e; /* data positions [s, e) */
  char *ptr;       /* its bytes: user memory or the pack buffer (this rank's side); its slot
                      of the window's buffer when the window is staged (aggregator side) */
  size_t iv0, iv1; /* its file intervals in the window's iv (aggregator side) */
} coll_piece;

/* Walks one piece's file intervals and its data. */
typedef struct coll_cursor {
  size_t k;        /* current interval in the window's iv */
  MPI_Offset skip; /* bytes of it already done (it straddled the previous chunk) */
  char *p;         /* the piece's data at that point (staged windows) */
} coll_cursor;

/* One window of an aggregator in flight (two when the rounds are pipelined, exchange.c):
 * every rank's piece of it, their file intervals, its buffer and its messages. A direct
 * window's buffer is the file's bytes [from, to): the pieces are received into their places
 * (writes) and sent from them (reads) with a datatype each; a staged one holds the pieces one
 * after the other and the chunk buffer c->cbuf is filled from them (pieces that overlap, or no
 * datatype could be made, or pario_coll_direct=false). */
typedef struct coll_win {
  struct pario_coll_ctx *c;
  const struct coll_call *x;
  MPI_Offset k, lo, hi;  /* round k's window [lo, hi) */
  MPI_Offset from, to;   /* the span of its pieces' intervals */
  int npc, direct, nrq;
  int rc;                /* its failure: intervals out of memory, or its storage access */
  coll_piece *pc;        /* np */
  coll_cursor *cur;      /* 2 np */
  coll_hent *heap;       /* np */
  MPI_Request *rq;       /* np: its receives (write) or sends (read) */
  MPI_Datatype *ty;      /* np: each piece's place in a direct buffer */
  void *arrays;          /* the np-sized arrays above, one allocation */
  size_t arcap;
  char *buf;
  size_t cap;
  pario_run *iv; /* the pieces' file intervals, piece by piece */
  size_t ivcap;
  pario_drv_coll tag; /* its storage accesses' part in the collective access (coll_tag) */
} coll_win;

/* The storage jobs of one call's pipeline (pipeline.c): a thread of their own, made at the
 * first job, one job at a time. Zero-initialised before the call's first job. */
typedef struct coll_bg {
  pthread_t th;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int started, busy, quit, rc;
  int (*fn)(coll_win *);
  coll_win *w;
} coll_bg;
/* Run fn(w): in the thread when async (at once when none can be made), else now. */
void coll_bg_start(coll_bg *b, int async, int (*fn)(coll_win *), coll_win *w);
/* Wait for the job started last; its result (MPI_SUCCESS when there was none). */
int coll_bg_join(coll_bg *b);
/* Join, and end the thread; the last job's result. */
int coll_bg_end(coll_bg *b);

/* Test knobs, read once when a context is created: PARIO_TEST_COLL_EIO=R makes rank R's
 * aggregated file accesses fail with EIO, R:N only its N-th (counted from 0 since the context
 * was made); PARIO_TEST_COLL_NOMEM=R:site makes rank R's
 * allocation at that site fail (context, views, stage, pack). */
enum { COLL_SITE_NONE, COLL_SITE_CONTEXT, COLL_SITE_VIEWS, COLL_SITE_STAGE, COLL_SITE_PACK };

struct pario_coll_ctx {
  pario_file *f;
  MPI_Comm comm; /* private duplicate: the exchange's messages meet nothing else */
  int rank, np;
  /* The view cache (viewx.c): the last few sets of every rank's view, kept by content; vset is
   * the set of the call in progress. */
  coll_vset vsets[COLL_VSETS_MAX];
  int nvsets, vset;
  long long *vbuf; /* an aggregator's received runs (grown, kept) */
  size_t vbcap;
  long long *venc; /* this rank's runs, encoded part by part for the aggregators (grown, kept) */
  size_t vecap;
  /* Nodes (node_of NULL: unknown) and the aggregators chosen for cb_nodes == aggr_for. */
  int nnodes, *node_of, *rank_in_node;
  int *aggr, naggr, aggr_for;
  coll_why why; /* the last call's decision */
  int nb;                   /* the nonblocking context (1) or the blocking one (0) */
  unsigned long long calls; /* collective calls made on it: the same count on every rank */
  /* Scratch sized by the rank count, allocated with the context so that no step between
   * collective calls needs memory it might not get. */
  struct coll_info *info;      /* np: every rank's access in this call */
  struct coll_view_hdr *hdrs;  /* 2 np: received from each rank (first np), sent to each aggregator */
  int *cnt, *dsp;              /* np: words and offsets of each rank's runs in vbuf */
  MPI_Offset *bound;           /* np + 1: the plan's domains */
  coll_piece *mine_pc;         /* np: this rank's pieces */
  MPI_Request *reqs;           /* 3 np (the view exchange: 2 per aggregator sent to, 1 per rank received from) */
  MPI_Status *st;              /* 2 np: this rank's pieces' (first np), a window's (last np) */
  coll_range *ranges;          /* np: the decision's sorted byte ranges */
  /* Data buffers, grown before the rounds start. */
  char *cbuf, *pack; /* the aggregator's chunk, this rank's packed data */
  size_t cbcap, pkcap;
  coll_win win[2];   /* an aggregator's windows (exchange.c) */
  int self_local;    /* this call's own piece is not a message (staged, unpipelined) */
  char *self;        /* its bytes in the current round */
  int *tblen;        /* scratch of a window's datatypes (main thread) */
  MPI_Aint *tdisp;
  size_t tbcap, tdcap;
  int eio_rank, nomem_rank, nomem_site; /* test knobs (-1, COLL_SITE_NONE: off) */
  long long eio_after, eio_seen;        /* the EIO knob's one access (-1: all) and the count */
};

/* One aggregated call, as this rank sees it. */
typedef struct coll_call {
  const char *op;
  int rw;
  const pario_view *view; /* this rank's view (the call's snapshot) */
  MPI_Offset pos, n;      /* this rank's access: data positions [pos, pos + n) */
  void *buf;
  const pario_typemap *tm;
  MPI_Datatype type;      /* under external32 the pieces are converted (core/rep.h) */
  MPI_Count count;
  char *contig;           /* its data when it is one piece of memory (at data position pos) */
  coll_plan plan;
  int me_aggr;            /* this rank's domain, or -1 */
} coll_call;

/* Grow *pp to need bytes (*cap tracks its size); 0 when out of memory. site names the
 * allocation for the PARIO_TEST_COLL_NOMEM knob. */
int coll_grow(const pario_coll_ctx *c, int site, void *pp, size_t *cap, size_t need);

/* viewx.c: the view cache. coll_views_probe: the sets (bits) whose entry for this rank equals
 * its view v, sent in the call's allgather (coll_info.vhit). coll_views_use, after the
 * allgather and the plan (every rank at the same call): the set every rank found its view in,
 * else the oldest set is emptied for the call's views; then every rank's displacement from
 * c->info, and each rank sends each aggregator whose domain its access meets the part of its
 * filetype there, unless the aggregator holds it already (point-to-point, no collective: both
 * sides compute alike whether a message comes). A failure is only this rank's; the caller's
 * agreement makes it everyone's (then every rank forgets every set). */
long long coll_views_probe(pario_coll_ctx *c, const pario_view *v);
int coll_views_use(pario_coll_ctx *c, const coll_call *x);
void coll_views_forget(pario_coll_ctx *c);
/* Rank r's view in call x, as pario_view_data_before_in and pario_fcursor_init: for another
 * rank through the part held, so only for file bytes of this rank's domain. */
MPI_Offset coll_view_before_in(const pario_coll_ctx *c, const coll_call *x, int r, MPI_Offset fileoff, MPI_Offset pos,
                               MPI_Offset n);
void coll_view_cursor(const pario_coll_ctx *c, const coll_call *x, int r, pario_fcursor *fc, MPI_Offset pos);

/* exchange.c: grow the buffers that the rounds of x need (before the agreement that starts
 * them), then run the rounds. Once every rank has its buffers, the rounds leave no peer
 * waiting: an I/O error fails a write through the caller's agreement and travels to the
 * readers in the data message's tag. */
int coll_buffers(pario_coll_ctx *c, const coll_call *x);
int coll_rounds(pario_coll_ctx *c, const coll_call *x);
/* Free the windows' memory (the context goes). */
void coll_wins_free(pario_coll_ctx *c);

/* access.c: the tag of part k of the current collective call, made by n ranks, that the file
 * accesses of that part hand to the driver (driver/driver.h, pario_drv_coll: drivers of remote
 * storage send it with their requests); base 0 (no tag) for local storage or fewer than 2. */
pario_drv_coll coll_tag(const pario_coll_ctx *c, long long k, int n);

#endif
