/* Node-local combining (combine.h). The segment: a lock word, a generation word that moves
 * after every combined request (the futex the waiters sleep on), a token, and one slot per
 * rank of the node {amount, result, state}. A rank posts (amount, then state POSTED with
 * release), then either takes the lock and combines, or sleeps on the generation until its
 * slot is DONE or the lock is free again. The combiner collects every POSTED slot (its own
 * included) in slot order, sends one request for the sum, gives slot j old + the amounts
 * before it, marks each DONE (or FAILED) with release, bumps the generation and wakes every
 * sleeper. The serialisation is the combiner's: slots of one batch are consecutive in S, and
 * S moves by exactly the sum of the amounts taken, so every update gets its own range. */
#include "sharedfp/combine.h"
#include "sharedfp/shmshare.h"

#include "core/comm.h"
#include "core/common.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum { IDLE = 0, POSTED, TAKEN, DONE, FAILED };

typedef struct slot {
  int64_t amount, result;
  uint32_t state, err;
} slot;

typedef struct seg {
  uint64_t token; /* shmshare.h */
  uint32_t lock, gen;
  slot s[];
} seg;

struct pario_combiner {
  seg *g;
  size_t len;
  int me, n;
  int64_t *sum_before; /* scratch for the combiner: the taken slots */
  int *taken;
  pthread_mutex_t lock; /* one slot per process: its threads post one at a time */
};

static size_t seg_len(int n) { return sizeof(seg) + (size_t)n * sizeof(slot); }

int pario_combiner_open(MPI_Comm node, unsigned long long uid, pario_combiner **out) {
  int me = 0, n = 1, ok = 0, all = 0;
  PMPI_Comm_rank(node, &me);
  PMPI_Comm_size(node, &n);
  *out = NULL;
  char name[64];
  snprintf(name, sizeof name, "/pario-sfp-%llx-comb", uid);
  size_t len = seg_len(n);
  void *g = NULL;
  pario_shm_share(node, 1, name, len, &g);
  pario_combiner *c = g ? calloc(1, sizeof *c) : NULL;
  if (c) {
    c->g = g, c->len = len, c->me = me, c->n = n;
    c->sum_before = malloc(sizeof(int64_t) * (size_t)n);
    c->taken = malloc(sizeof(int) * (size_t)n);
    pthread_mutex_init(&c->lock, NULL);
  }
  ok = c && c->sum_before && c->taken;
  PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, node);
  if (all) {
    *out = c;
    return 0;
  }
  if (c) pario_combiner_close(c);
  else if (g) munmap(g, len);
  return ENOTSUP;
}

static void futex_wait(uint32_t *w, uint32_t old, long ns) {
  struct timespec t = {ns / 1000000000L, ns % 1000000000L};
  syscall(SYS_futex, w, FUTEX_WAIT, old, &t, NULL, 0);
}

/* Holding the lock: serve every posted slot with one request. */
static void combine(pario_combiner *c, pario_combine_remote remote, void *arg) {
  seg *g = c->g;
  int k = 0;
  int64_t sum = 0;
  for (int j = 0; j < c->n; j++) {
    uint32_t posted = POSTED; /* taken, so that a poster that gave up cannot leave a hole */
    if (__atomic_compare_exchange_n(&g->s[j].state, &posted, TAKEN, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
      c->taken[k] = j;
      c->sum_before[k++] = sum;
      sum += g->s[j].amount;
    }
  }
  if (!k) return;
  int64_t old = 0;
  int e = remote(arg, sum, &old);
  for (int i = 0; i < k; i++) {
    slot *s = &g->s[c->taken[i]];
    s->result = old + c->sum_before[i];
    s->err = (uint32_t)e;
    __atomic_store_n(&s->state, e ? FAILED : DONE, __ATOMIC_RELEASE);
  }
}

int pario_combiner_fetch_add(pario_combiner *c, int64_t n, int64_t *old, pario_combine_remote remote, void *arg,
                             int timeout_s) {
  seg *g = c->g;
  slot *mine = &g->s[c->me];
  pthread_mutex_lock(&c->lock);
  mine->amount = n;
  __atomic_store_n(&mine->state, POSTED, __ATOMIC_RELEASE);
  long t0 = pario_mono_ns(), deadline = t0 + (long)timeout_s * 1000000000L;
  int spins = pario_wait_spins();
  for (;;) {
    uint32_t st = __atomic_load_n(&mine->state, __ATOMIC_ACQUIRE);
    if (st == DONE || st == FAILED) break;
    uint32_t gen = __atomic_load_n(&g->gen, __ATOMIC_ACQUIRE), unlocked = 0;
    if (__atomic_compare_exchange_n(&g->lock, &unlocked, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
      combine(c, remote, arg); /* this rank's own slot is POSTED: it is taken */
      __atomic_add_fetch(&g->gen, 1, __ATOMIC_RELEASE);
      __atomic_store_n(&g->lock, 0, __ATOMIC_RELEASE);
      syscall(SYS_futex, &g->gen, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
      continue;
    }
    long now = pario_mono_ns();
    if (now > deadline) { /* a combiner that never answers (its process gone): give up */
      uint32_t posted = POSTED;
      if (__atomic_compare_exchange_n(&mine->state, &posted, IDLE, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        pthread_mutex_unlock(&c->lock);
        return EIO;
      } /* taken meanwhile: its answer comes (the request in flight has its own timeout) */
    }
    if (spins && now - t0 < 100000) /* dedicated cores: the batch in flight ends within a round trip */
      pario_cpu_relax();
    else if (gen == __atomic_load_n(&g->gen, __ATOMIC_ACQUIRE))
      futex_wait(&g->gen, gen, 1000000); /* woken at the end of the batch in flight */
  }
  int e = __atomic_load_n(&mine->state, __ATOMIC_ACQUIRE) == FAILED ? (int)mine->err : 0;
  *old = mine->result;
  __atomic_store_n(&mine->state, IDLE, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&c->lock);
  return e;
}

void pario_combiner_close(pario_combiner *c) {
  if (!c) return;
  if (c->g) munmap(c->g, c->len);
  pthread_mutex_destroy(&c->lock);
  free(c->sum_before);
  free(c->taken);
  free(c);
}
