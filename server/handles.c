/* pario-server's handle table: each connection's open files in slots with a generation (a
 * stale handle value never reaches a reused slot), the references that requests in flight hold
 * on them (CLOSE answers when the last one ends), the descriptor budget of the whole server,
 * and the end of a job (srv_job_done). The requests that open and use handles are in ops.c
 * (OPEN and the others), read.c (READ) and write.c (WRITE). */
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "server.h"

/* The descriptors that handles may hold, all connections together: RLIMIT_NOFILE less what the
 * rest of the server needs (FD_RESERVE: listener, signalfd, stdio, root, trace; per connection
 * slot its socket and splice pipe; one per worker, which may have opened a file just before its
 * handle is counted). Past it an OPEN is refused, so a new client can always connect. */
#define FD_RESERVE 64
#define FD_PER_CONN 3
static pthread_once_t budget_once = PTHREAD_ONCE_INIT;

static void budget_init(void) {
  struct rlimit rl;
  long long lim = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ? (long long)rl.rlim_cur : 1 << 20;
  long long reserve = FD_RESERVE + FD_PER_CONN * (long long)srv->cfg.max_conns + srv->cfg.threads;
  long long b = lim - reserve;
  srv->fd_budget = b < 0 ? 0 : b > INT32_MAX ? INT32_MAX : (int)b;
  srv_log(b < 16 ? LOG_WARN : LOG_INFO, "descriptor budget for open files: %d (RLIMIT_NOFILE %lld, %lld reserved "
          "for %d connections)", srv->fd_budget, lim, reserve, srv->cfg.max_conns);
}

/* Whether this connection and the server may hold one more handle: 0, or refused (EBUSY, with
 * a message) and 1. Checked before the file is opened. The last quarter of the budget is kept
 * for connections that hold fewer than FEW_HANDLES: clients that open many files cannot take
 * every descriptor from a newcomer. */
#define FEW_HANDLES 4
static int budget_spent(uint32_t open) {
  int used = __atomic_load_n(&srv->fds_open, __ATOMIC_RELAXED);
  return used >= srv->fd_budget || (open >= FEW_HANDLES && used >= srv->fd_budget - srv->fd_budget / 4);
}

int srv_handle_room(srv_job *j) {
  pthread_once(&budget_once, budget_init);
  srv_conn *c = j->c;
  pthread_mutex_lock(&c->mu);
  uint32_t open = 0;
  for (uint32_t i = 0; i < c->nhandles; i++) open += c->handles[i] != NULL;
  pthread_mutex_unlock(&c->mu);
  char msg[96];
  if (open >= (uint32_t)srv->cfg.max_handles)
    snprintf(msg, sizeof msg, "too many open handles on this connection (max %d)", srv->cfg.max_handles);
  else if (budget_spent(open))
    snprintf(msg, sizeof msg, "server descriptor budget exhausted");
  else
    return 0;
  srv_log(LOG_DEBUG, "conn %llu (%s): open refused: %s", (unsigned long long)c->serial, c->peer, msg);
  srv_reply_error(c, j->h.id, RIO_EBUSY, msg);
  return 1;
}

static uint64_t handle_value(uint32_t slot, uint32_t gen) { return ((uint64_t)gen << 32) | (slot + 1); }

int srv_handle_new(srv_conn *c, int fd, uint32_t acc, const struct stat *st, const char *path, uint32_t pl,
                   uint64_t *value) {
  srv_handle *hd = calloc(1, sizeof *hd);
  struct srv_file *f = hd ? srv_file_ref(st->st_dev, st->st_ino) : NULL;
  if (!f) return free(hd), RIO_ENOMEM;
  hd->fd = fd, hd->acc = acc, hd->dev = st->st_dev, hd->ino = st->st_ino, hd->file = f;
  struct statfs sf;
  hd->memfs = fstatfs(fd, &sf) == 0 && (sf.f_type == TMPFS_MAGIC || sf.f_type == RAMFS_MAGIC);
  snprintf(hd->name, sizeof hd->name, "%.*s", (int)(pl < 95 ? pl : 95), path);
  pthread_mutex_lock(&c->mu);
  uint32_t i = 0;
  while (i < c->nhandles && c->handles[i]) i++;
  if (i == c->nhandles) {
    if (c->nhandles >= (uint32_t)srv->cfg.max_handles) goto full; /* a concurrent OPEN took the room */
    if (c->nhandles == c->cap_handles) {
      uint32_t cap = c->cap_handles ? 2 * c->cap_handles : 16;
      srv_handle **h = realloc(c->handles, cap * sizeof *h);
      if (!h) goto full;
      c->handles = h, c->cap_handles = cap;
    }
    c->handles[c->nhandles++] = NULL;
  }
  hd->gen = ++c->next_gen ? c->next_gen : ++c->next_gen; /* never 0 */
  c->handles[i] = hd;
  *value = handle_value(i, hd->gen);
  pthread_mutex_unlock(&c->mu);
  __atomic_add_fetch(&srv->fds_open, 1, __ATOMIC_RELAXED);
  return RIO_OK;
full:
  pthread_mutex_unlock(&c->mu);
  srv_file_unref(f);
  free(hd);
  return RIO_EBUSY;
}

srv_handle *srv_handle_get(srv_conn *c, uint64_t value, int *status) {
  uint32_t slot = (uint32_t)value - 1, gen = (uint32_t)(value >> 32);
  srv_handle *hd = NULL;
  pthread_mutex_lock(&c->mu);
  if ((uint32_t)value != 0 && slot < c->nhandles && c->handles[slot] && c->handles[slot]->gen == gen &&
      !c->handles[slot]->closing) {
    hd = c->handles[slot];
    hd->refs++;
  }
  pthread_mutex_unlock(&c->mu);
  *status = hd ? RIO_OK : RIO_EBADF;
  return hd;
}

static void handle_release(srv_handle *hd) {
  close(hd->fd); /* drops the handle's OFD locks */
  __atomic_sub_fetch(&srv->fds_open, 1, __ATOMIC_RELAXED);
  srv_file_unref(hd->file);
  free(hd);
  srv_lock_kick();
}

/* Drop a request's reference; the last one of a closing handle closes it and answers CLOSE. */
void srv_handle_put(srv_conn *c, srv_handle *hd) {
  pthread_mutex_lock(&c->mu);
  int last = --hd->refs == 0 && hd->closing;
  if (last)
    for (uint32_t i = 0; i < c->nhandles; i++)
      if (c->handles[i] == hd) c->handles[i] = NULL;
  pthread_mutex_unlock(&c->mu);
  if (!last) return;
  uint64_t id = hd->close_id;
  handle_release(hd);
  srv_reply(c, RIO_T_CLOSE, id, RIO_OK, NULL, 0);
}

void srv_conn_close_all(srv_conn *c) {
  for (uint32_t i = 0; i < c->nhandles; i++)
    if (c->handles[i]) {
      handle_release(c->handles[i]);
      c->handles[i] = NULL;
    }
}

void srv_job_done(srv_job *j) {
  srv_conn *c = j->c;
  uint64_t n = j->n;
  if (j->hd) srv_handle_put(c, j->hd);
  free(j->body);
  free(j);
  srv_conn_release(c, n);
}
