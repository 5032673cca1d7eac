/* Worker threads and a FIFO of jobs. A job runs pario_access on a worker and completes its
 * generalized request; the application thread never has to call into MPI for progress.
 * Without MPI_THREAD_MULTIPLE the job runs inside the call instead (correct, no overlap). */
#include "async/engine.h"
#include "collective/collective.h"

#include <sched.h>
#include <stdatomic.h>
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
  int completed;   /* MPI_Grequest_complete has returned (MPICH's MPI_Waitall asserts on an
                    * incomplete generalized request when the array holds MPI_REQUEST_NULL) */
  int refs;        /* a job with a request: the worker's and the request's, under q_lock */
  struct pario_job *lnext, *lprev; /* the live list: jobs whose request is not freed yet */
};

static pthread_mutex_t q_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t q_cond = PTHREAD_COND_INITIALIZER;
static pthread_cond_t drain_cond = PTHREAD_COND_INITIALIZER;
static job *head, *tail;
static int nworkers;
static job *live;            /* jobs with a generalized request, until MPI frees it */
static atomic_int nlive;     /* their number, read without the lock by every MPI_Wait */

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

static void live_remove(job *j) { /* under q_lock */
  if (j->lprev) j->lprev->lnext = j->lnext; else live = j->lnext;
  if (j->lnext) j->lnext->lprev = j->lprev;
  atomic_fetch_sub(&nlive, 1);
}

static int free_fn(void *extra) {
  job *j = extra;
  pthread_mutex_lock(&q_lock);
  live_remove(j);
  int last = --j->refs == 0; /* else the worker still marks it completed, then frees it */
  pthread_mutex_unlock(&q_lock);
  if (last) job_free(j);
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
  if (req != MPI_REQUEST_NULL) {
    PMPI_Grequest_complete(req);
    pthread_mutex_lock(&q_lock);
    __atomic_store_n(&j->completed, 1, __ATOMIC_RELEASE); /* also read by a spinning waiter */
    pthread_cond_broadcast(&drain_cond);
    int last = --j->refs == 0; /* the request was freed already */
    pthread_mutex_unlock(&q_lock);
    if (last) job_free(j);
  } else if (detached) {
    job_free(j);
  }
}

static void *worker(void *arg) {
  (void)arg;
  struct sched_param sp = {0};
  pthread_setschedparam(pthread_self(), SCHED_BATCH, &sp);
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
  if (j->req != MPI_REQUEST_NULL) {
    j->refs = 2;
    j->lnext = live;
    if (live) live->lprev = j;
    live = j;
    atomic_fetch_add(&nlive, 1);
  }
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

/* Takes j off the queue when it is next in line and no worker has it yet, so that its waiter
 * runs it: no hand-off to a worker and back. Collectives keep to their workers (their order
 * across ranks is the engine's). Under q_lock. */
static int take_if_next(job *j) {
  if (j != head || j->coll) return 0;
  head = j->next;
  if (!head) tail = NULL;
  return 1;
}

int pario_engine_wait(pario_job *j, MPI_Count *bytes) {
  pthread_mutex_lock(&q_lock);
  if (take_if_next(j)) {
    pthread_mutex_unlock(&q_lock);
    run(j);
    pthread_mutex_lock(&q_lock);
  }
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

/* The job behind request r, or NULL when r is not one of pario's; under q_lock. */
static job *live_find(MPI_Request r) {
  for (job *j = live; j; j = j->lnext)
    if (j->req == r) return j;
  return NULL;
}

void pario_engine_wait_request(MPI_Request r) {
  if (r == MPI_REQUEST_NULL || atomic_load_explicit(&nlive, memory_order_relaxed) == 0) return;
  pthread_mutex_lock(&q_lock);
  job *j = live_find(r);
  if (!j) {
    pthread_mutex_unlock(&q_lock);
    return;
  }
  if (take_if_next(j)) {
    pthread_mutex_unlock(&q_lock);
    run(j);
    return;
  }
  pthread_mutex_unlock(&q_lock);
  /* j stays valid: its request is freed only by the host's wait that follows. A short spin
   * first: where a core is free, a finished job is seen without a sleeping thread's wake-up. */
  for (int spin = 0; spin < 4096 && !__atomic_load_n(&j->completed, __ATOMIC_ACQUIRE); spin++)
    pario_cpu_relax();
  pthread_mutex_lock(&q_lock);
  while (!j->completed) pthread_cond_wait(&drain_cond, &q_lock);
  pthread_mutex_unlock(&q_lock);
}

void pario_engine_wait_some(int n, const MPI_Request *reqs) {
  if (atomic_load_explicit(&nlive, memory_order_relaxed) == 0) return;
  pthread_mutex_lock(&q_lock);
  for (;;) {
    int active = 0;
    for (int i = 0; i < n; i++) {
      if (reqs[i] == MPI_REQUEST_NULL) continue;
      job *j = live_find(reqs[i]);
      if (!j || j->completed) { /* not pario's (MPI must poll it), or finished already */
        pthread_mutex_unlock(&q_lock);
        return;
      }
      active++;
    }
    if (!active) break;
    pthread_cond_wait(&drain_cond, &q_lock);
  }
  pthread_mutex_unlock(&q_lock);
}
