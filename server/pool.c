/* pario-server's worker pool: a FIFO of requests whose bodies are in memory, served by N
 * threads, so one connection can have many requests in flight and a slow one (a large READ,
 * a SYNC) does not hold up the others. With 0 threads a job runs in the caller (fuzzing). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "server.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static srv_job *head, *tail;
static int stop, nthreads;
static pthread_t *threads;

static void *worker(void *arg) {
  char name[16];
  snprintf(name, sizeof name, "worker %d", (int)(intptr_t)arg);
  srv_trace_thread(name);
  pthread_mutex_lock(&mu);
  for (;;) {
    while (!head && !stop) pthread_cond_wait(&cv, &mu);
    if (!head) break;
    srv_job *j = head;
    head = j->next;
    if (!head) tail = NULL;
    pthread_mutex_unlock(&mu);
    srv_handle_job(j);
    pthread_mutex_lock(&mu);
  }
  pthread_mutex_unlock(&mu);
  return NULL;
}

int srv_pool_start(int n) {
  threads = calloc((size_t)(n > 0 ? n : 1), sizeof *threads);
  if (!threads) return -1;
  for (nthreads = 0; nthreads < n; nthreads++)
    if (pthread_create(&threads[nthreads], NULL, worker, (void *)(intptr_t)nthreads) != 0) return -1;
  return 0;
}

void srv_pool_stop(void) {
  pthread_mutex_lock(&mu);
  stop = 1;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
  for (int i = 0; i < nthreads; i++) pthread_join(threads[i], NULL);
  free(threads);
  threads = NULL;
  nthreads = 0;
}

void srv_pool_submit(srv_job *j) {
  if (nthreads == 0) return srv_handle_job(j);
  j->next = NULL;
  pthread_mutex_lock(&mu);
  if (tail) tail->next = j;
  else head = j;
  tail = j;
  pthread_cond_signal(&cv);
  pthread_mutex_unlock(&mu);
}
