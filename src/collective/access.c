/* A collective data access: every rank's access is allgathered, every rank decides alike
 * whether to aggregate (decide.c); then either each rank accesses the file on its own (with
 * data sieving) or all run two-phase I/O: views exchanged unless cached (viewx.c), aggregators and
 * plan, buffers, one agreement that every rank is ready, the rounds. Every path ends with one
 * agreement on the outcome: any rank's failure is every rank's error; ranks never abort. */
#include "collective/internal.h"
#include "core/rep.h"
#include "trace/trace.h"

#include <fcntl.h>

/* The tag of part k of the current call: the same on every rank (every rank counts the same
 * collective calls of the context), different for every call, part and file open (uid), with
 * its low 16 bits free for the request's number (driver/driver.h). */
pario_drv_coll coll_tag(const pario_coll_ctx *c, long long k, int n) {
  if (!c->f->drv->remote || n < 2) return (pario_drv_coll){0, 0, 0};
  uint64_t x = c->f->uid ^ ((uint64_t)c->nb << 63) ^ c->calls * 0x9E3779B97F4A7C15ull ^
               (uint64_t)(k + 1) * 0xD6E8FEB86659FD93ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull; /* splitmix64's finaliser */
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  x = (x ^ (x >> 31)) & ~(uint64_t)PARIO_COLL_SEQ_MAX;
  return (pario_drv_coll){x ? x : PARIO_COLL_SEQ_MAX + 1ull, (uint32_t)n, 0};
}

/* The call's outcome, the same class on every rank: rc where this rank failed, else an error
 * naming the rank that failed, else success. The last communication of every path, so a rank
 * that failed cannot leave the others for their next collective call (docs/collective.md). */
static int coll_outcome(pario_coll_ctx *c, const char *op, int rw, int rc, int quick) {
  return pario_agree_call(c->comm, rc, op, c->f->filename, rw == PARIO_WRITE ? "collective write" : "collective read",
                          quick);
}

/* Every rank on its own: the independent path (with data sieving), then one agreement on the
 * outcome (the path has no other collective after the I/O). lock_writes: some rank sieves, so
 * every write holds byte-range locks. tag: the driver's tag of the ranks' accesses, or NULL. */
static int independently(pario_coll_ctx *c, const pario_snap *s, const char *op, int rw, MPI_Offset pos,
                         void *buf, MPI_Count count, MPI_Datatype type, const pario_typemap *tm,
                         MPI_Count *bytes, int lock_writes, pario_drv_coll *tag) {
  MPI_Count b = 0;
  int rc = tm ? pario_access_ex(c->f, s, op, rw, pos, buf, count, type, &b, lock_writes, tag) : MPI_SUCCESS;
  uint64_t t0 = PARIO_TRACE_T0();
  rc = coll_outcome(c, op, rw, rc, 1); /* a tiny access would wait out a nap (docs/collective.md#errors) */
  PARIO_TRACE_SPAN(PARIO_TC_COLL, "wait_done", t0, PARIO_TA("rc", rc));
  *bytes = b;
  return rc;
}

/* Bytes of the access that lie before end of file (reads), the same on every rank. */
static MPI_Offset readable(pario_file *f, const pario_view *v, int rw, MPI_Offset pos, MPI_Offset n) {
  off_t size = 0;
  if (rw != PARIO_READ || n == 0 || pario_view_irregular(v, pos, n) || f->drv->size(f->dh, &size) != 0)
    return n; /* an irregular access goes alone: its reads stop at end of file by themselves */
  return pario_view_data_before_in(v, size, pos, n) - pos;
}

static struct coll_info describe(const pario_file *f, const pario_view *v, int rw, MPI_Offset pos, MPI_Offset n) {
  struct coll_info in = {.pos = pos, .n = n, .can_read = (f->oflags & O_ACCMODE) != O_WRONLY,
                         .sieves = rw == PARIO_WRITE && pario_sieves_write(f, v, n),
                         .irregular = pario_view_irregular(v, pos, n)};
  /* a read alone sieves through holes up to pario_read_max_gap, and so does an aggregator */
  in.through = rw == PARIO_READ && (v->contiguous || (pario_sieves_read(f, v, n) &&
                                                      v->widest_hole <= f->hints.read_max_gap));
  if (n > 0) {
    MPI_Offset first, last;
    pario_view_extent_of(v, pos, n, &first, &last);
    in.first = first;
    in.last = last;
    in.avg_piece = v->contiguous ? n : v->ftm->size / (MPI_Offset)v->ftm->nruns;
  }
  return in;
}

/* Aggregators (when cb_nodes changed: then the cached views go too, as only the aggregators
 * hold other ranks' views), the plan, the views (each aggregator gets the parts its domain
 * needs and lacks, viewx.c) and the buffers of an aggregated call x; this rank's result. */
static int prepare(pario_coll_ctx *c, coll_call *x) {
  pario_file *f = c->f;
  if (c->aggr_for != f->hints.cb_nodes) {
    c->naggr = coll_aggregators(f->hints.cb_nodes, c->np, c->nnodes, c->node_of, c->rank_in_node, c->aggr);
    c->aggr_for = f->hints.cb_nodes;
    coll_views_forget(c);
  }
  MPI_Offset lo, hi;
  coll_span(c->info, c->np, &lo, &hi);
  x->plan = (coll_plan){.naggr = c->naggr, .bound = c->bound,
                        .align = coll_plan_align(f->hints.striping_unit, f->hints.cb_block_size),
                        .cb = coll_window_size(f->hints.cb_buffer_size, f->drv->remote, f->hints.coll_window_max)};
  coll_plan_make(&x->plan, lo, hi);
  x->me_aggr = -1;
  for (int i = 0; i < c->naggr; i++)
    if (c->aggr[i] == c->rank) x->me_aggr = i;
  int rc = coll_views_use(c, x); /* each aggregator gets the parts of the views its domain needs */
  if (rc != MPI_SUCCESS)
    return pario_err(rc, x->op, f->filename, 0, "cannot exchange the views (%s)",
                     rc == MPI_ERR_NO_MEM ? "out of memory" : "bad data");
  return coll_buffers(c, x);
}

/* Two-phase I/O of call x; every rank's result. */
static int two_phase(pario_coll_ctx *c, coll_call *x) {
  const char *what = x->rw == PARIO_WRITE ? "write" : "read";
  uint64_t t0 = PARIO_TRACE_T0();
  int rc = prepare(c, x);
  PARIO_TRACE_SPAN(PARIO_TC_COLL, "plan", t0, PARIO_TA("naggr", x->plan.naggr), PARIO_TA("me_aggr", x->me_aggr),
                   PARIO_TA("rounds", x->plan.rounds), PARIO_TA("cb", x->plan.cb), PARIO_TA("bytes", x->n));
  /* Nobody starts the rounds unless everybody is ready: a rank without its buffers would
   * leave the others waiting for its messages. */
  t0 = PARIO_TRACE_T0();
  int worst = pario_agree(c->comm, rc);
  PARIO_TRACE_SPAN(PARIO_TC_COLL, "wait_ready", t0, PARIO_TA("rc", worst));
  if (worst != MPI_SUCCESS) {
    coll_views_forget(c); /* every rank starts afresh next time */
    c->aggr_for = 0;
  } else {
    rc = coll_rounds(c, x);
    /* Any rank's failure is every rank's: an aggregator's failed write, and a failed read,
     * which the tags told only the ranks it served. */
    t0 = PARIO_TRACE_T0();
    rc = coll_outcome(c, x->op, x->rw, rc, 0); /* aggregators may still be writing: nap */
    PARIO_TRACE_SPAN(PARIO_TC_COLL, "wait_done", t0, PARIO_TA("rc", rc));
    return rc;
  }
  if (pario_wait_stuck_ms()) return pario_comm_err(x->op, c->f->filename); /* pario_timeout expired */
  if (rc == MPI_SUCCESS)
    rc = pario_err(worst, x->op, c->f->filename, 0, "the collective %s failed on another rank", what);
  return rc;
}

int pario_coll_access(pario_coll_ctx *c, const pario_snap *s, const char *op, int rw, MPI_Offset pos,
                      void *buf, MPI_Count count, MPI_Datatype type, MPI_Count *bytes) {
  pario_file *f = c->f;
  const pario_typemap *tm;
  *bytes = 0;
  MPI_Offset want = 0; /* bytes of the view's data stream, in the file's representation */
  const pario_ext32_map *xm = NULL;
  if (pario_wait_stuck_ms()) return pario_comm_err(op, f->filename); /* pario_timeout expired: no new messages */
  c->calls++; /* every rank, every call, before any branch: the tags of a call agree */
  if (pario_typemap_get(type, &tm) != MPI_SUCCESS ||
      pario_rep_data_size(s->view, type, tm, count, &want, op, f->filename) != MPI_SUCCESS)
    count = 0, tm = NULL, want = 0;
  if (tm && s->view->rep && pario_rep_map(s->view->rep, type, tm, &xm, op, f->filename) != MPI_SUCCESS)
    count = 0, tm = NULL, want = 0; /* the checks at the call refused it already */
  if (s->view->rep && s->view->rep->kind != PARIO_REP_EXT32) {
    /* A user-defined representation's functions convert whole items from the start of the
     * buffer; the exchange cuts the data stream anywhere. Every rank's view has the same
     * representation, so every rank takes this branch. Without the allgather no rank knows
     * whether another sieves, so every write holds byte-range locks. */
    c->why = COLL_WHY_USER_DATAREP;
    return independently(c, s, op, rw, pos, buf, count, type, tm, bytes, 1, NULL);
  }
  MPI_Offset n = readable(f, s->view, rw, pos, want);
  struct coll_info mine = describe(f, s->view, rw, pos, n);
  c->nvsets = f->hints.coll_view_cache; /* a shared hint: the same on every rank */
  mine.disp = s->view->disp;
  mine.vhit = coll_views_probe(c, s->view);
  pario_view_defer_words(f, s, mine.vdef);
  MPI_Request rq;
  MPI_Status st;
  uint64_t t0 = PARIO_TRACE_T0();
  PMPI_Iallgather(&mine, COLL_INFO_WORDS, MPI_LONG_LONG, c->info, COLL_INFO_WORDS, MPI_LONG_LONG, c->comm, &rq);
  int wrc = pario_wait_all(1, &rq, &st);
  PARIO_TRACE_SPAN(PARIO_TC_COLL, "wait_allgather", t0, PARIO_TA("bytes", n));
  if (wrc != MPI_SUCCESS && pario_wait_stuck_ms()) return pario_comm_err(op, f->filename); /* c->info is not there */
  /* earlier set_views' agreement: a difference fails the call on every rank, before any I/O */
  int vrc = pario_view_defer_settle(f, s, op, c->comm, c->info[0].vdef, COLL_INFO_WORDS, c->np, !c->nb);
  if (vrc != MPI_SUCCESS) return vrc;
  /* every rank reaches the same decision from the same data */
  int hint = rw == PARIO_WRITE ? f->hints.romio_cb_write : f->hints.romio_cb_read;
  int shared = coll_shared_cache_read(rw == PARIO_WRITE, f->hints.romio_cb_read, f->nodes, f->hints.cb_nodes_given);
  c->why = coll_decide(rw == PARIO_WRITE, hint, s->atomic, shared, c->info, c->np, c->ranges);
  PARIO_TRACE_INSTANT(PARIO_TC_COLL, "decide", "why", coll_why_name(c->why), PARIO_TA("file", f->uid),
                      PARIO_TA("aggregate", coll_why_aggregates(c->why)), PARIO_TA("np", c->np));
  __atomic_fetch_add(&f->coll_calls, 1ull, __ATOMIC_RELAXED);
  if (!coll_why_aggregates(c->why)) {
    int sieving = 0, senders = 0; /* some rank rewrites windows around others' data: every write locks */
    for (int r = 0; r < c->np; r++) sieving |= c->info[r].sieves != 0, senders += c->info[r].n > 0;
    pario_drv_coll tag = coll_tag(c, -1, senders); /* the ranks' requests: one access for a forwarder */
    return independently(c, s, op, rw, pos, buf, count, type, tm, bytes, sieving, &tag);
  }
  coll_call x = {.op = op, .rw = rw, .view = s->view, .pos = pos, .n = n, .buf = buf, .tm = tm,
                 .type = type, .count = count,
                 .contig = n > 0 && !xm ? pario_mcursor_contig(buf, tm, count) : NULL};
  if (rw == PARIO_READ) pario_io_count_request(f, want); /* the bytes read are counted by the driver calls */
  __atomic_fetch_add(&f->coll_aggregated, 1ull, __ATOMIC_RELAXED); /* get_info: two-phase ran */
  int rc = two_phase(c, &x);
  if (rc == MPI_SUCCESS) *bytes = n;
  return rc;
}
