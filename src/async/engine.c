/* Worker threads and a FIFO of jobs. A job runs pario_access on a worker and completes its
 * generalized request; the application thread never has to call into MPI for progress.
 * Without MPI_THREAD_MULTIPLE the job runs inside the call instead (correct, no overlap). */
#include "async/engine.h"
#include "collective/collective.h"

#include <stdlib.h>

typedef struct pario_job job;
struct pario_job {
  struct pario_job *next;
  pario_file *f;
  const char *op;
  int rw;
  MPI_Offset pos;
  void *buf;
  MPI_Count count, bytes;
  MPI_Datatype type; /* our duplicate when derived */
  int owned_type;
  int code;
  int done;        /* jobs without a request: set when finished, under q_lock */
  int detached;    /* neither request nor handle: nobody waits, the engine frees it */
  MPI_Request req; /* MPI_REQUEST_NULL for jobs waited with pario_engine_wait */
  pario_coll_ctx *coll; /* nonblocking collective: its context, and its place in the order */
  unsigned ticket;
};

static pthread_mutex_t q_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t q_cond = PTHREAD_COND_INITIALIZER;
static pthread_cond_t drain_cond = PTHREAD_COND_INITIALIZER;
static job *head, *tail;
static int nworkers;

/* The worker publishes a job's results under q_lock before completing its request, so the
 * hand-off does not depend on how the MPI library orders memory internally. */
static int query_fn(void *extra, MPI_Status *status) {
  job *j = extra;
  pthread_mutex_lock(&q_lock);
  MPI_Count bytes = j->bytes;
  int code = j->code;
  pthread_mutex_unlock(&q_lock);
  PMPI_Status_set_elements_x(status, MPI_BYTE, bytes);
  PMPI_Status_set_cancelled(status, 0);
  status->MPI_SOURCE = MPI_UNDEFINED;
  status->MPI_TAG = MPI_UNDEFINED;
  status->MPI_ERROR = code;
  return code;
}

static void job_free(job *j) {
  if (j->owned_type) PMPI_Type_free(&j->type);
  free(j);
}

static int free_fn(void *extra) {
  pthread_mutex_lock(&q_lock); /* the worker's last touch of the job was under this lock */
  pthread_mutex_unlock(&q_lock);
  job_free(extra);
  return MPI_SUCCESS;
}

/* A started operation cannot be cancelled: MPI_Test_cancelled reports false. */
static int cancel_fn(void *extra, int complete) {
  (void)extra;
  (void)complete;
  return MPI_SUCCESS;
}

static void run(job *j) {
  MPI_Count bytes = 0;
  int code;
  if (j->coll) { /* collectives of one file run in the order they started, on every rank */
    pthread_mutex_lock(&q_lock);
    while (j->f->coll_turn != j->ticket) pthread_cond_wait(&drain_cond, &q_lock);
    pthread_mutex_unlock(&q_lock);
    code = pario_coll_access(j->coll, j->op, j->rw, j->pos, j->buf, j->count, j->type, &bytes);
  } else {
    code = pario_access(j->f, j->op, j->rw, j->pos, j->buf, j->count, j->type, &bytes);
  }
  if (j->owned_type) { /* not in free_fn: MPI may not be called from a grequest callback */
    PMPI_Type_free(&j->type);
    j->owned_type = 0;
  }
  pthread_mutex_lock(&q_lock);
  MPI_Request req = j->req;
  int detached = j->detached; /* a waiter may free j once the lock is released */
  j->bytes = bytes;
  j->code = code;
  --j->f->pending;
  if (j->coll) j->f->coll_turn++;
  j->done = 1;
  pthread_cond_broadcast(&drain_cond);
  pthread_mutex_unlock(&q_lock);
  if (req != MPI_REQUEST_NULL) PMPI_Grequest_complete(req); /* j may be freed from here on */
  else if (detached) job_free(j);
}

static void *worker(void *arg) {
  (void)arg;
  for (;;) {
    pthread_mutex_lock(&q_lock);
    while (!head) pthread_cond_wait(&q_cond, &q_lock);
    job *j = head;
    head = j->next;
    if (!head) tail = NULL;
    pthread_mutex_unlock(&q_lock);
    run(j);
  }
  return NULL;
}

int pario_engine_async(void) {
  int provided = MPI_THREAD_SINGLE;
  PMPI_Query_thread(&provided);
  return provided == MPI_THREAD_MULTIPLE;
}

/* Grow the pool to want threads (the pario_io_threads hint); called with q_lock held. */
static void ensure_workers(int want) {
  while (nworkers < want) {
    pthread_t t;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&t, &a, worker, NULL);
    pthread_attr_destroy(&a);
    if (rc) break;
    nworkers++;
  }
}

static int submit(pario_file *f, const char *op, int rw, MPI_Offset pos, void *buf, MPI_Count count,
                  MPI_Datatype type, MPI_Request *req, pario_job **handle, pario_coll_ctx *coll) {
  job *j = calloc(1, sizeof *j);
  if (!j) return pario_err(MPI_ERR_NO_MEM, op, f->filename, 0, "out of memory");
  j->f = f;
  j->op = op;
  j->rw = rw;
  j->pos = pos;
  j->buf = buf;
  j->count = count;
  j->type = type;
  if (!pario_type_is_named(type) && PMPI_Type_dup(type, &j->type) == MPI_SUCCESS) j->owned_type = 1;
  j->req = MPI_REQUEST_NULL;
  if (req) {
    int rc = PMPI_Grequest_start(query_fn, free_fn, cancel_fn, j, &j->req);
    if (rc != MPI_SUCCESS) {
      job_free(j);
      return pario_err(MPI_ERR_INTERN, op, f->filename, 0, "cannot start a generalized request");
    }
    *req = j->req;
  } else if (handle) {
    *handle = j;
  } else {
    j->detached = 1;
  }
  j->coll = coll;
  pthread_mutex_lock(&q_lock);
  f->pending++;
  if (coll) j->ticket = f->coll_ticket++;
  if (!pario_engine_async()) {
    pthread_mutex_unlock(&q_lock);
    run(j); /* no MPI_THREAD_MULTIPLE: complete inside the call */
    return MPI_SUCCESS;
  }
  ensure_workers(f->hints.io_threads);
  j->next = NULL;
  if (tail) tail->next = j; else head = j;
  tail = j;
  pthread_cond_signal(&q_cond);
  pthread_mutex_unlock(&q_lock);
  return MPI_SUCCESS;
}

int pario_engine_submit(pario_file *f, const char *op, int rw, MPI_Offset pos, void *buf,
                        MPI_Count count, MPI_Datatype type, MPI_Request *req, pario_job **handle) {
  return submit(f, op, rw, pos, buf, count, type, req, handle, NULL);
}

int pario_engine_submit_coll(pario_file *f, const char *op, int rw, MPI_Offset pos, void *buf,
                             MPI_Count count, MPI_Datatype type, MPI_Request *req, pario_job **handle) {
  pario_coll_ctx *c = pario_coll_ctx_get(f, 1);
  if (!c) return pario_err(MPI_ERR_NO_MEM, op, f->filename, 0, "out of memory");
  return submit(f, op, rw, pos, buf, count, type, req, handle, c);
}

int pario_engine_wait(pario_job *j, MPI_Count *bytes) {
  pthread_mutex_lock(&q_lock);
  while (!j->done) pthread_cond_wait(&drain_cond, &q_lock);
  pthread_mutex_unlock(&q_lock);
  int code = j->code;
  *bytes = j->bytes;
  job_free(j);
  return code;
}

void pario_engine_drain(pario_file *f) {
  pthread_mutex_lock(&q_lock);
  while (f->pending > 0) pthread_cond_wait(&drain_cond, &q_lock);
  pthread_mutex_unlock(&q_lock);
}
