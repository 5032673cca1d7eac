/* The pipeline's background storage job: an aggregator writes round k's window (or reads
 * round k+1's) in a thread of its own while its calling thread goes on with the next round's
 * messages (exchange.c, docs/collective.md#pipeline). One job at a time per call, started and
 * joined by the calling thread; the job makes no MPI call of its own beyond what pario_err
 * does (pario asks for MPI_THREAD_MULTIPLE, api/init.c). A thread that cannot be started
 * leaves the job to run at once: the pipeline only loses its overlap. */
#include "collective/internal.h"

static void *bg_main(void *arg) {
  coll_bg *b = arg;
  b->rc = b->fn(b->w);
  return NULL;
}

void coll_bg_start(coll_bg *b, int async, int (*fn)(coll_win *), coll_win *w) {
  b->fn = fn;
  b->w = w;
  b->rc = MPI_SUCCESS;
  if (async && pthread_create(&b->th, NULL, bg_main, b) == 0) {
    b->running = 1;
    return;
  }
  b->rc = fn(w);
}

int coll_bg_join(coll_bg *b) {
  if (b->running) pthread_join(b->th, NULL);
  b->running = 0;
  int rc = b->rc;
  b->rc = MPI_SUCCESS;
  return rc;
}
