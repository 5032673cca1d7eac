/* server: the shared file pointer is an atomic counter kept by the storage itself (a
 * pario-server's COUNTER request, the driver's counter op), keyed by the file's open id so
 * two jobs that open the same file do not share a pointer. One round trip per update, any
 * number of nodes, no thread and nothing beside the data file. auto prefers it for every
 * file whose driver has a counter (x-rio://). */
#include "sharedfp/sharedfp.h"

#include <errno.h>
#include <stdlib.h>

typedef struct sv_state {
  pario_file *f;
} sv_state;

static int sv_query(pario_file *f) { return f->drv->counter ? 40 : -1; }

static int sv_attach(pario_file *f, void **state) {
  sv_state *s = malloc(sizeof *s);
  if (!s) return ENOMEM;
  s->f = f;
  *state = s;
  return 0;
}

/* Slot k is the counter of key uid ^ k << 56 (an open id's top byte is 0: core/open.c). */
static int sv_fetch_add(void *state, int slot, MPI_Offset n, MPI_Offset *old) {
  sv_state *s = state;
  int64_t prev = 0;
  uint64_t key = (uint64_t)s->f->uid ^ (uint64_t)slot << 56;
  int e = s->f->drv->counter(s->f->dh, key, n ? PARIO_CTR_ADD : PARIO_CTR_GET, (int64_t)n, &prev);
  if (!e) *old = (MPI_Offset)prev;
  return e;
}

static void sv_detach(void *state) { free(state); }

const pario_sharedfp_component pario_sharedfp_server = {
    .name = "server", .query = sv_query, .attach = sv_attach, .fetch_add = sv_fetch_add, .detach = sv_detach};
