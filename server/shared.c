/* State shared by every connection of pario-server: the per-file counters (COUNTER, keyed by
 * (dev, ino, key), dropped with the file's last handle) and the LOCK requests that wait. A
 * waiting lock is parked, never slept on: it is retried on every unlock and close, and every
 * 50 ms for locks held by other processes, so it never blocks other work. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server.h"

#define MAX_KEYS 1024 /* counters per file */

struct srv_file {
  dev_t dev;
  ino_t ino;
  int opens;
  uint32_t nkeys;
  struct { uint64_t key; int64_t value; } *keys;
  struct srv_file *next;
};

static pthread_mutex_t files_mu = PTHREAD_MUTEX_INITIALIZER;
static struct srv_file *files;

struct srv_file *srv_file_ref(dev_t dev, ino_t ino) {
  pthread_mutex_lock(&files_mu);
  struct srv_file *f = files;
  while (f && !(f->dev == dev && f->ino == ino)) f = f->next;
  if (!f && (f = calloc(1, sizeof *f)) != NULL) {
    f->dev = dev, f->ino = ino;
    f->next = files;
    files = f;
  }
  if (f) f->opens++;
  pthread_mutex_unlock(&files_mu);
  return f;
}

void srv_file_unref(struct srv_file *f) {
  pthread_mutex_lock(&files_mu);
  if (--f->opens == 0) {
    struct srv_file **p = &files;
    while (*p != f) p = &(*p)->next;
    *p = f->next;
    free(f->keys);
    free(f);
  }
  pthread_mutex_unlock(&files_mu);
}

int srv_counter_op(struct srv_file *f, uint64_t key, uint32_t op, int64_t value, int64_t *old) {
  pthread_mutex_lock(&files_mu);
  uint32_t i = 0;
  while (i < f->nkeys && f->keys[i].key != key) i++;
  int st = RIO_OK;
  if (i == f->nkeys) {
    void *k = f->nkeys < MAX_KEYS ? realloc(f->keys, (f->nkeys + 1) * sizeof f->keys[0]) : NULL;
    if (!k) {
      st = f->nkeys < MAX_KEYS ? RIO_ENOMEM : RIO_ETOOBIG;
      goto out;
    }
    f->keys = k;
    f->keys[f->nkeys].key = key;
    f->keys[f->nkeys++].value = 0;
  }
  *old = f->keys[i].value;
  if (op == RIO_CTR_ADD) f->keys[i].value = (int64_t)((uint64_t)*old + (uint64_t)value); /* wraps, no UB */
  else if (op == RIO_CTR_SET) f->keys[i].value = value;
out:
  pthread_mutex_unlock(&files_mu);
  return st;
}

/* ---- byte-range locks ------------------------------------------------------------------------- */
static pthread_mutex_t park_mu = PTHREAD_MUTEX_INITIALIZER;
static srv_job *parked;
static pthread_mutex_t kick_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t kick_cv = PTHREAD_COND_INITIALIZER;
static int kicked, lock_stop, lock_running;
static pthread_t lock_thread;

/* Try the job's LOCK once: 1 if it is answered (granted, released or failed), 0 if it must wait. */
int srv_lock_try(srv_job *j) {
  rio_lock_req m;
  if (rio_decode_lock(j->body, j->n, &m) != 0) return srv_job_done(j), 1; /* decoded before parking */
  struct flock fl;
  memset(&fl, 0, sizeof fl);
  fl.l_type = m.op == RIO_LOCK_READ ? F_RDLCK : m.op == RIO_LOCK_WRITE ? F_WRLCK : F_UNLCK;
  fl.l_whence = SEEK_SET;
  fl.l_start = (off_t)m.offset;
  fl.l_len = (off_t)m.len;
  int st = RIO_OK;
  if (fcntl(j->hd->fd, F_OFD_SETLK, &fl) != 0) {
    if ((errno == EAGAIN || errno == EACCES) && m.op != RIO_UNLOCK) return 0;
    st = rio_status_from_errno(errno);
  }
  srv_reply(j->c, RIO_T_LOCK, j->h.id, st, NULL, 0);
  srv_job_done(j);
  if (m.op == RIO_UNLOCK) srv_lock_kick();
  return 1;
}

void srv_lock_park(srv_job *j) {
  pthread_mutex_lock(&park_mu);
  j->next = parked;
  parked = j;
  pthread_mutex_unlock(&park_mu);
  srv_log(LOG_DEBUG, "conn %llu: LOCK %llu waits", (unsigned long long)j->c->serial, (unsigned long long)j->h.id);
  srv_lock_kick(); /* an unlock may have happened between the try and the park */
}

void srv_lock_kick(void) {
  pthread_mutex_lock(&kick_mu);
  kicked = 1;
  pthread_cond_signal(&kick_cv);
  pthread_mutex_unlock(&kick_mu);
}

static void retry_all(void) {
  pthread_mutex_lock(&park_mu);
  for (srv_job **p = &parked; *p;) {
    srv_job *j = *p;
    srv_job *next = j->next;
    *p = next; /* unlink first: srv_lock_try may free j */
    if (!srv_lock_try(j)) {
      j->next = next;
      *p = j;
      p = &j->next;
    }
  }
  pthread_mutex_unlock(&park_mu);
}

void srv_lock_cancel(srv_conn *c, srv_handle *hd) {
  srv_job *gone = NULL;
  pthread_mutex_lock(&park_mu);
  for (srv_job **p = &parked; *p;) {
    srv_job *j = *p;
    if (j->c == c && (!hd || j->hd == hd)) {
      *p = j->next;
      j->next = gone;
      gone = j;
    } else {
      p = &j->next;
    }
  }
  pthread_mutex_unlock(&park_mu);
  while (gone) {
    srv_job *j = gone;
    gone = j->next;
    srv_reply_error(c, j->h.id, RIO_EBADF, "the handle was closed while the lock waited");
    srv_job_done(j);
  }
}

static void *lock_main(void *arg) {
  (void)arg;
  pthread_mutex_lock(&kick_mu);
  while (!lock_stop) {
    if (!kicked) {
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      ts.tv_nsec += 50000000;
      if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
      pthread_cond_timedwait(&kick_cv, &kick_mu, &ts);
    }
    kicked = 0;
    pthread_mutex_unlock(&kick_mu);
    retry_all();
    pthread_mutex_lock(&kick_mu);
  }
  pthread_mutex_unlock(&kick_mu);
  return NULL;
}

int srv_lock_start(void) {
  lock_stop = 0;
  if (pthread_create(&lock_thread, NULL, lock_main, NULL) != 0) return -1;
  lock_running = 1;
  return 0;
}

void srv_lock_stop(void) {
  if (!lock_running) return;
  pthread_mutex_lock(&kick_mu);
  lock_stop = 1;
  pthread_cond_signal(&kick_cv);
  pthread_mutex_unlock(&kick_mu);
  pthread_join(lock_thread, NULL);
  lock_running = 0;
}
