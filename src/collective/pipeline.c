/* The pipeline's background storage jobs: an aggregator writes round k's window (or reads
 * round k+1's) in a thread while its calling thread goes on with the next round's messages
 * (exchange.c, docs/collective.md#pipeline). One thread per call, made at its first job and
 * ended with the call; one job at a time, started and joined by the calling thread. A job
 * makes no MPI call of its own beyond what pario_err does (pario asks for
 * MPI_THREAD_MULTIPLE, api/init.c). Where no thread can be made, jobs run at once: the
 * pipeline only loses its overlap. */
#include "collective/internal.h"

static void *bg_main(void *arg) {
  coll_bg *b = arg;
  pthread_mutex_lock(&b->mu);
  for (;;) {
    while (!b->busy && !b->quit) pthread_cond_wait(&b->cv, &b->mu);
    if (!b->busy) break;
    pthread_mutex_unlock(&b->mu);
    int rc = b->fn(b->w);
    pthread_mutex_lock(&b->mu);
    b->rc = rc;
    b->busy = 0;
    pthread_cond_broadcast(&b->cv);
  }
  pthread_mutex_unlock(&b->mu);
  return NULL;
}

static int bg_thread(coll_bg *b) {
  if (b->started) return 1;
  if (pthread_mutex_init(&b->mu, NULL) != 0) return 0;
  if (pthread_cond_init(&b->cv, NULL) != 0) {
    pthread_mutex_destroy(&b->mu);
    return 0;
  }
  b->busy = b->quit = 0;
  if (pthread_create(&b->th, NULL, bg_main, b) != 0) {
    pthread_cond_destroy(&b->cv);
    pthread_mutex_destroy(&b->mu);
    return 0;
  }
  return b->started = 1;
}

void coll_bg_start(coll_bg *b, int async, int (*fn)(coll_win *), coll_win *w) {
  if (!async || !bg_thread(b)) {
    b->rc = fn(w);
    return;
  }
  pthread_mutex_lock(&b->mu);
  b->fn = fn;
  b->w = w;
  b->busy = 1;
  pthread_cond_broadcast(&b->cv);
  pthread_mutex_unlock(&b->mu);
}

int coll_bg_join(coll_bg *b) {
  if (b->started) {
    pthread_mutex_lock(&b->mu);
    while (b->busy) pthread_cond_wait(&b->cv, &b->mu);
    pthread_mutex_unlock(&b->mu);
  }
  int rc = b->rc;
  b->rc = MPI_SUCCESS;
  return rc;
}

int coll_bg_end(coll_bg *b) {
  int rc = coll_bg_join(b);
  if (!b->started) return rc;
  pthread_mutex_lock(&b->mu);
  b->quit = 1;
  pthread_cond_broadcast(&b->cv);
  pthread_mutex_unlock(&b->mu);
  pthread_join(b->th, NULL);
  pthread_cond_destroy(&b->cv);
  pthread_mutex_destroy(&b->mu);
  b->started = 0;
  return rc;
}
