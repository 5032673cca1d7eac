/* Worker threads and a FIFO of jobs. A job runs pario_access on a worker and completes its
 * generalized request; the application thread never has to call into MPI for progress.
 * Without MPI_THREAD_MULTIPLE the job runs inside the call instead (correct, no overlap).
 * The pool is process-wide; each file's pario_io_threads hint bounds how many of that file's
 * jobs run at once, and the pool grows to the largest bound any file asked for. Where the
 * file's driver can submit (driver.h), an independent job is sent by the calling thread and
 * completed from the driver's callback instead: no worker, no bound in flight. */
#include "async/engine.h"
#include "collective/collective.h"
#include "core/rep.h"
#include "trace/trace.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

/* The engine's per-file state (core keeps it in the file's ASYNC slot). Under q_lock. */
typedef struct engine_file {
  int pending;             /* jobs of the file not finished yet */
  int running;             /* of those, run by workers now */
  int limit;               /* pario_io_threads: jobs of the file a worker may run at once */
  unsigned coll_ticket, coll_turn; /* nonblocking collectives run in the order they started */
  struct pario_job *split; /* the active split collective, and which end matches it */
  int split_kind;
} engine_file;

static engine_file *state_of(const pario_file *f) { return pario_layer_state(f, PARIO_SLOT_ASYNC); }
/* 1 when operations really run in the background (the MPI provides MPI_THREAD_MULTIPLE). */
static int engine_async(void);

typedef struct pario_job job;
struct pario_job {
  struct pario_job *next;
  pario_file *f;
  engine_file *ef;
  pario_snap snap; /* the view and atomic mode the operation started under */
  int by_worker;   /* counted in ef->running */
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
  uint64_t trace_id, queued_at; /* tracing: the job's number and when it was queued */
  unsigned long long file_uid;
  int submitted;        /* on the driver's submission path: no worker runs it */
  uint64_t started_at;  /* tracing: when it was submitted */
  struct pario_job *lnext, *lprev; /* the live list: jobs whose request is not freed yet */
};

static pthread_mutex_t q_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t q_cond = PTHREAD_COND_INITIALIZER;
static pthread_cond_t drain_cond = PTHREAD_COND_INITIALIZER;
static job *head, *tail;
static long qdepth; /* jobs queued, not yet taken (a trace counter) */
static int nworkers, stopping;
static pthread_t *workers;
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
  pario_snap_drop(&j->snap);
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

/* The end of a job, on whichever thread finished it: its result published, its request
 * completed, the file's drain and the waiters told. */
static void finish(job *j, int code, MPI_Count bytes, uint64_t t0) {
  engine_file *ef = j->ef;
  PARIO_TRACE_SPANX(PARIO_TC_ASYNC, "job", t0, 0, "op", j->op, PARIO_TA("job", j->trace_id),
                    PARIO_TA("file", j->f->uid), PARIO_TA("pos", j->pos), PARIO_TA("bytes", bytes),
                    PARIO_TA("coll", j->coll != NULL), PARIO_TA("queued_ns", t0 ? t0 - j->queued_at : 0),
                    PARIO_TA("submitted", j->submitted), PARIO_TA("rc", code));
  bytes = pario_rep_native_bytes(j->snap.view, j->type, j->count, bytes); /* what the status reports */
  /* Not in free_fn: MPI may not be called from a grequest callback (MPICH 4.0 aborts). The
   * snapshot goes too: after a set_view it may hold the view's last reference, whose drop
   * frees the view's datatypes. */
  if (j->owned_type) {
    PMPI_Type_free(&j->type);
    j->owned_type = 0;
  }
  pario_snap_drop(&j->snap);
  pthread_mutex_lock(&q_lock);
  MPI_Request req = j->req;
  int detached = j->detached; /* a waiter may free j once the lock is released */
  j->bytes = bytes;
  j->code = code;
  --ef->pending;
  if (j->by_worker) --ef->running;
  if (j->coll) ef->coll_turn++;
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

static void run(job *j) {
  MPI_Count bytes = 0;
  int code;
  engine_file *ef = j->ef;
  uint64_t t0 = PARIO_TRACE_T0();
  if (j->coll) { /* collectives of one file run in the order they started, on every rank */
    pthread_mutex_lock(&q_lock);
    while (ef->coll_turn != j->ticket) pthread_cond_wait(&drain_cond, &q_lock);
    pthread_mutex_unlock(&q_lock);
    code = pario_coll_access(j->coll, &j->snap, j->op, j->rw, j->pos, j->buf, j->count, j->type, &bytes);
  } else {
    code = pario_access(j->f, &j->snap, j->op, j->rw, j->pos, j->buf, j->count, j->type, &bytes);
  }
  finish(j, code, bytes, t0);
}

/* A job on the driver's submission path completes here, on the thread that saw its last reply. */
static void submitted_done(void *arg, int code, MPI_Count bytes) {
  job *j = arg;
  finish(j, code, bytes, j->started_at);
}

/* The driver's submission path (driver.h submit): an independent operation with a request is
 * sent by the calling thread now and completed by the driver when its replies arrive, with no
 * worker thread and no bound on how many are in flight. 1 when started. */
static int try_submit(job *j) {
  if (!j->f->drv->submit || j->coll || j->req == MPI_REQUEST_NULL || !engine_async()) return 0;
  j->submitted = 1;
  j->started_at = PARIO_TRACE_T0();
  if (pario_access_submit(j->f, &j->snap, j->op, j->rw, j->pos, j->buf, j->count, j->type, submitted_done, j))
    return 1;
  j->submitted = 0;
  return 0;
}

/* The first queued job whose file may run one more job on a worker; unlinked. Under q_lock. */
static job *take_runnable(void) {
  for (job *prev = NULL, *j = head; j; prev = j, j = j->next) {
    if (j->ef->running >= j->ef->limit) continue;
    if (prev) prev->next = j->next; else head = j->next;
    if (tail == j) tail = prev;
    qdepth--;
    PARIO_TRACE_COUNTER("queue_depth", qdepth);
    j->ef->running++;
    j->by_worker = 1;
    return j;
  }
  return NULL;
}

/* The workers' scheduling policy, chosen by the job being queued (under q_lock). SCHED_BATCH
 * for writes through the page cache: a worker that needs the CPU for memory copies does not
 * preempt the thread that woke it, so an _end or wait right after the start runs the job
 * itself with no hand-off (docs/async.md). SCHED_OTHER for direct I/O and remote files: the
 * worker needs the CPU only for moments (start a transfer or a message, complete the request)
 * between waits for the device or the network, and with the
 * computing ranks holding every core a SCHED_BATCH worker waits for their time slices at both
 * ends (0.1-4 ms to start in a trace of 2 ranks on 2 cores; the overlap ratio moved within the
 * noise on a quiet machine, docs/async.md). */
static int pool_policy = SCHED_BATCH;

static void set_pool_policy(int policy) {
  if (policy == pool_policy) return;
  struct sched_param sp = {0};
  for (int i = 0; i < nworkers; i++) pthread_setschedparam(workers[i], policy, &sp);
  pool_policy = policy;
}

static void *worker(void *arg) {
  (void)arg;
  struct sched_param sp = {0};
  pthread_mutex_lock(&q_lock);
  pthread_setschedparam(pthread_self(), pool_policy, &sp);
  pthread_mutex_unlock(&q_lock);
  pthread_setname_np(pthread_self(), "pario-io"); /* for ps/top, and tests that count them */
  for (;;) {
    pthread_mutex_lock(&q_lock);
    job *j;
    while (!(j = take_runnable()) && !stopping) pthread_cond_wait(&q_cond, &q_lock);
    pthread_mutex_unlock(&q_lock);
    if (!j) return NULL; /* MPI_Finalize: the queue is empty (files are closed) */
    run(j);
    pthread_mutex_lock(&q_lock); /* a slot of j's file is free: another job may be runnable */
    if (head) pthread_cond_signal(&q_cond);
    pthread_mutex_unlock(&q_lock);
  }
  return NULL;
}

/* The thread level cannot change after MPI_Init: asked once, not per submit. */
static int engine_async(void) {
  static int level = -1;
  int l = __atomic_load_n(&level, __ATOMIC_RELAXED);
  if (l < 0) {
    l = MPI_THREAD_SINGLE;
    PMPI_Query_thread(&l);
    __atomic_store_n(&level, l, __ATOMIC_RELAXED);
  }
  return l == MPI_THREAD_MULTIPLE;
}

/* Grow the pool to want threads (the largest pario_io_threads of any file); under q_lock. */
static void ensure_workers(int want) {
  enum { MAXWORKERS = 64 }; /* the hint's upper bound */
  if (!workers && !(workers = calloc(MAXWORKERS, sizeof *workers))) return;
  while (nworkers < want && nworkers < MAXWORKERS) {
    if (pthread_create(&workers[nworkers], NULL, worker, NULL)) break;
    nworkers++;
  }
}

static int submit(pario_file *f, const pario_snap *s, const char *op, int rw, MPI_Offset pos, void *buf,
                  MPI_Count count, MPI_Datatype type, MPI_Request *req, pario_job **handle, pario_coll_ctx *coll) {
  engine_file *ef = state_of(f);
  job *j = calloc(1, sizeof *j);
  if (!j || !ef) {
    free(j);
    return pario_err(MPI_ERR_NO_MEM, op, f->filename, 0, "out of memory");
  }
  j->f = f;
  j->file_uid = f->uid; /* the request may outlive the file (a close with requests pending) */
  j->ef = ef;
  pario_snap_copy(s, &j->snap);
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
  if (PARIO_TRACING()) {
    j->trace_id = pario_trace_flow_new();
    j->queued_at = pario_trace_now();
    PARIO_TRACE_INSTANT(PARIO_TC_ASYNC, "queued", "op", op, PARIO_TA("job", j->trace_id), PARIO_TA("file", f->uid),
                        PARIO_TA("pos", pos), PARIO_TA("coll", coll != NULL));
  }
  pthread_mutex_lock(&q_lock);
  if (j->req != MPI_REQUEST_NULL) {
    j->refs = 2;
    j->lnext = live;
    if (live) live->lprev = j;
    live = j;
    atomic_fetch_add(&nlive, 1);
  }
  ef->pending++;
  if (coll) j->ticket = ef->coll_ticket++;
  if (!engine_async()) {
    pthread_mutex_unlock(&q_lock);
    run(j); /* no MPI_THREAD_MULTIPLE: complete inside the call */
    return MPI_SUCCESS;
  }
  if (j->req != MPI_REQUEST_NULL && !coll && f->drv->submit) {
    pthread_mutex_unlock(&q_lock); /* the driver may complete it before it returns */
    if (try_submit(j)) return MPI_SUCCESS;
    pthread_mutex_lock(&q_lock);
  }
  ef->limit = f->hints.io_threads; /* set_info quiesced the file before changing it */
  ensure_workers(ef->limit);
  set_pool_policy(f->hints.direct_io || f->drv->remote ? SCHED_OTHER : SCHED_BATCH);
  j->next = NULL;
  if (tail) tail->next = j; else head = j;
  tail = j;
  qdepth++;
  PARIO_TRACE_COUNTER("queue_depth", qdepth);
  pthread_cond_signal(&q_cond);
  pthread_mutex_unlock(&q_lock);
  return MPI_SUCCESS;
}

int pario_engine_submit(pario_file *f, const pario_snap *s, const char *op, int rw, MPI_Offset pos,
                        void *buf, MPI_Count count, MPI_Datatype type, MPI_Request *req, pario_job **handle) {
  return submit(f, s, op, rw, pos, buf, count, type, req, handle, NULL);
}

int pario_engine_submit_coll(pario_file *f, const pario_snap *s, const char *op, int rw, MPI_Offset pos,
                             void *buf, MPI_Count count, MPI_Datatype type, MPI_Request *req,
                             pario_job **handle) {
  pario_coll_ctx *c = pario_coll_ctx_get(f, 1);
  if (!c) return pario_coll_ctx_err(f, op);
  return submit(f, s, op, rw, pos, buf, count, type, req, handle, c);
}

/* Takes j off the queue when it is next in line and no worker has it yet, so that its waiter
 * runs it: no hand-off to a worker and back. Collectives keep to their workers (their order
 * across ranks is the engine's). Under q_lock. */
static int take_if_next(job *j) {
  if (j != head || j->coll) return 0;
  head = j->next;
  if (!head) tail = NULL;
  qdepth--;
  PARIO_TRACE_COUNTER("queue_depth", qdepth);
  return 1;
}

int pario_engine_split_active(pario_file *f) {
  engine_file *ef = state_of(f);
  return ef && ef->split != NULL;
}

void pario_engine_split_start(pario_file *f, pario_job *j, int kind) {
  engine_file *ef = state_of(f);
  ef->split = j;
  ef->split_kind = kind;
}

pario_job *pario_engine_split_take(pario_file *f, int kind) {
  engine_file *ef = state_of(f);
  if (!ef || !ef->split || ef->split_kind != kind) return NULL;
  pario_job *j = ef->split;
  ef->split = NULL;
  return j;
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

/* Wait until no operation of the file is still executing (quiesce, sync, close). */
static void drain(engine_file *ef) {
  pthread_mutex_lock(&q_lock);
  while (ef->pending > 0) pthread_cond_wait(&drain_cond, &q_lock);
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

int pario_engine_request_job(MPI_Request r, uint64_t *job_id, unsigned long long *file) {
  if (r == MPI_REQUEST_NULL || atomic_load_explicit(&nlive, memory_order_relaxed) == 0) return 0;
  pthread_mutex_lock(&q_lock);
  job *j = live_find(r);
  if (j) {
    *job_id = j->trace_id;
    *file = j->file_uid;
  }
  pthread_mutex_unlock(&q_lock);
  return j != NULL;
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

/* ---- lifecycle hooks (core/layer.h) ---- */

static int hook_open(pario_file *f, void **state) {
  engine_file *ef = calloc(1, sizeof *ef);
  if (!ef) return pario_err(MPI_ERR_NO_MEM, "MPI_File_open", f->filename, 0, "out of memory");
  ef->limit = f->hints.io_threads;
  *state = ef;
  return MPI_SUCCESS;
}

static void hook_quiesce(pario_file *f, void *state) {
  (void)f;
  if (state) drain(state);
}

static int hook_sync(pario_file *f, void *state, const char *op) {
  (void)f, (void)op;
  drain(state); /* operations already started reach storage too */
  return MPI_SUCCESS;
}

/* Requests still pending at close are erroneous, but their data must not be lost. */
static int hook_close(pario_file *f, void *state, const char *op) {
  engine_file *ef = state;
  (void)f, (void)op;
  if (ef->split) {
    MPI_Count ignored;
    pario_engine_wait(ef->split, &ignored);
    ef->split = NULL;
  }
  drain(ef);
  return MPI_SUCCESS;
}

static void hook_release(pario_file *f, void *state) {
  (void)f;
  free(state);
}

/* MPI_Finalize: every file is closed, so the queue is empty; the workers end and are joined. */
static void hook_finalize(void) {
  pthread_mutex_lock(&q_lock);
  stopping = 1;
  pthread_cond_broadcast(&q_cond);
  int n = nworkers;
  pthread_mutex_unlock(&q_lock);
  for (int i = 0; i < n; i++) pthread_join(workers[i], NULL);
  pthread_mutex_lock(&q_lock);
  nworkers = 0;
  stopping = 0;
  free(workers);
  workers = NULL;
  pthread_mutex_unlock(&q_lock);
}

static const pario_layer engine_layer = {
    .name = "async",
    .open = hook_open,
    .quiesce = hook_quiesce,
    .sync = hook_sync,
    .close = hook_close,
    .release = hook_release,
    .finalize = hook_finalize,
};

__attribute__((constructor)) static void engine_register(void) { pario_layer_register(PARIO_SLOT_ASYNC, &engine_layer); }
