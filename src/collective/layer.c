/* The collective layer's per-file state and its contexts: registered with core's lifecycle
 * hooks (core/layer.h), created on first use (collectively, with every rank agreeing that it
 * has one), released at close. A context holds everything an aggregated call needs whose size
 * depends only on the rank count, so that later steps never stop half way for memory. */
#include "collective/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Both contexts of a file: blocking calls (0), nonblocking ones (1). */
typedef struct coll_state {
  pario_coll_ctx *ctx[2];
} coll_state;

int coll_grow(const pario_coll_ctx *c, int site, void *pp, size_t *cap, size_t need) {
  if (need <= *cap) return 1;
  if (site != COLL_SITE_NONE && site == c->nomem_site && c->rank == c->nomem_rank) return 0;
  void *p = realloc(*(void **)pp, need);
  if (!p) return 0;
  *(void **)pp = p;
  *cap = need;
  return 1;
}

static void knobs_read(pario_coll_ctx *c) {
  static const char *const sites[] = {[COLL_SITE_CONTEXT] = "context", [COLL_SITE_VIEWS] = "views",
                                      [COLL_SITE_STAGE] = "stage", [COLL_SITE_PACK] = "pack"};
  const char *eio = getenv("PARIO_TEST_COLL_EIO"), *nomem = getenv("PARIO_TEST_COLL_NOMEM");
  char site[16] = "";
  c->eio_rank = -1;
  c->eio_after = -1;
  if (eio && sscanf(eio, "%d:%lld", &c->eio_rank, &c->eio_after) < 1) c->eio_rank = -1;
  c->nomem_rank = -1;
  c->nomem_site = COLL_SITE_NONE;
  if (!nomem || sscanf(nomem, "%d:%15s", &c->nomem_rank, site) != 2) return;
  for (int i = COLL_SITE_CONTEXT; i <= COLL_SITE_PACK; i++)
    if (!strcmp(site, sites[i])) c->nomem_site = i;
  if (c->nomem_site == COLL_SITE_NONE) c->nomem_rank = -1;
}

static void ctx_free(pario_coll_ctx *c) {
  if (!c) return;
  coll_views_forget(c);
  coll_wins_free(c);
  if (c->comm != MPI_COMM_NULL) PMPI_Comm_free(&c->comm);
  void *arrays[] = {c->node_of, c->rank_in_node, c->aggr, c->info, c->hdrs, c->cnt, c->dsp, c->bound,
                    c->mine_pc, c->reqs, c->st, c->ranges, c->cbuf, c->pack, c->vbuf, c->venc};
  for (size_t i = 0; i < sizeof arrays / sizeof *arrays; i++) free(arrays[i]);
  free(c);
}

/* The context and its rank-count arrays (lead: np ints of scratch for the node map), or
 * NULL when out of memory. */
static pario_coll_ctx *ctx_alloc(pario_file *f, int **lead) {
  pario_coll_ctx *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  size_t n = (size_t)f->nprocs;
  c->f = f;
  c->comm = MPI_COMM_NULL;
  c->rank = f->rank;
  c->np = f->nprocs;
  knobs_read(c);
  c->node_of = malloc(n * sizeof(int));
  c->rank_in_node = malloc(n * sizeof(int));
  c->aggr = malloc(n * sizeof(int));
  c->info = malloc(n * sizeof *c->info);
  c->hdrs = malloc(2 * n * sizeof *c->hdrs);
  c->cnt = malloc(n * sizeof(int));
  c->dsp = malloc(n * sizeof(int));
  c->bound = malloc((n + 1) * sizeof(MPI_Offset));
  c->mine_pc = malloc(n * sizeof(coll_piece));
  c->reqs = malloc(3 * n * sizeof(MPI_Request));
  c->st = malloc(2 * n * sizeof(MPI_Status));
  c->ranges = malloc(n * sizeof(coll_range));
  *lead = malloc(n * sizeof(int));
  if (!c->node_of || !c->rank_in_node || !c->aggr || !c->info || !c->hdrs ||
      !c->cnt || !c->dsp || !c->bound || !c->mine_pc || !c->reqs || !c->st ||
      !c->ranges ||
      !*lead || (c->nomem_site == COLL_SITE_CONTEXT && c->rank == c->nomem_rank)) {
    free(*lead);
    *lead = NULL;
    ctx_free(c);
    return NULL;
  }
  return c;
}

/* Which node each rank is on (nodes numbered by their lowest rank), for aggregator
 * placement. Collective over c->comm unless the file spans one node. */
static void ctx_nodes(pario_coll_ctx *c, int *lead) {
  int me = c->rank, leader = me;
  if (c->f->nodes == 1) { /* one host (open counted the nodes): nothing to exchange */
    for (int r = 0; r < c->np; r++) lead[r] = 0;
  } else {
    MPI_Comm node;
    if (PMPI_Comm_split_type(c->comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
      PMPI_Allreduce(&me, &leader, 1, MPI_INT, MPI_MIN, node);
      PMPI_Comm_free(&node);
    }
    PMPI_Allgather(&leader, 1, MPI_INT, lead, 1, MPI_INT, c->comm);
  }
  c->nnodes = coll_node_map(c->np, lead, c->node_of, c->rank_in_node);
}

/* Create a context: collective over f->comm. Every rank allocates first (have_state: the
 * layer's state exists to keep it in) and duplicates the communicator, then all agree, so
 * either every rank has the context or none has. */
static pario_coll_ctx *ctx_create(pario_file *f, int have_state) {
  int *lead = NULL;
  pario_coll_ctx *c = ctx_alloc(f, &lead);
  MPI_Comm comm = MPI_COMM_NULL;
  int rc = pario_comm_dup_private(f->comm, &comm) == MPI_SUCCESS ? MPI_SUCCESS : MPI_ERR_OTHER;
  if ((!c || !have_state) && rc == MPI_SUCCESS) rc = MPI_ERR_NO_MEM;
  if (pario_agree(f->comm, rc) != MPI_SUCCESS) {
    if (comm != MPI_COMM_NULL) PMPI_Comm_free(&comm);
    ctx_free(c);
    free(lead);
    return NULL;
  }
  c->comm = comm;
  ctx_nodes(c, lead);
  free(lead);
  return c;
}

pario_coll_ctx *pario_coll_ctx_get(pario_file *f, int nb) {
  coll_state *st = pario_layer_state(f, PARIO_SLOT_COLL);
  if (st && st->ctx[nb]) return st->ctx[nb];
  /* Every rank gets here at the same call, so the contexts are the same on every rank. */
  if (!st && (st = calloc(1, sizeof *st))) pario_layer_set_state(f, PARIO_SLOT_COLL, st);
  pario_coll_ctx *c = ctx_create(f, st != NULL);
  if (c) st->ctx[nb] = c, c->nb = nb;
  return c;
}

int pario_coll_ctx_err(const pario_file *f, const char *op) {
  if (pario_wait_stuck_ms()) return pario_comm_err(op, f->filename);
  return pario_err(MPI_ERR_NO_MEM, op, f->filename, 0, "cannot make the collective context (out of memory)");
}

/* At close, after every rank closed: both contexts (freeing a communicator is collective). */
static void coll_release(pario_file *f, void *state) {
  coll_state *st = state;
  (void)f;
  if (!st) return;
  ctx_free(st->ctx[0]);
  ctx_free(st->ctx[1]);
  free(st);
}

static const pario_layer coll_layer = {.name = "collective", .release = coll_release};

__attribute__((constructor)) static void reg(void) { pario_layer_register(PARIO_SLOT_COLL, &coll_layer); }
