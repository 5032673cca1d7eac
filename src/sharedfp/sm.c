/* sm: the shared pointer in a POSIX shared-memory segment that every rank of the (single)
 * node maps (or of several nodes of the MPI that share one kernel, select.c's one_kernel),
 * advanced with an atomic fetch-add: no locks, no messages. The segment is created by
 * whichever rank needs it first (a new segment reads as zero) and removed at close.
 *
 * Ordered calls meet in the same segment instead of in MPI_Exscan + MPI_Bcast: each rank
 * posts its size and counts itself in; the last to arrive sums the sizes, advances the
 * pointer once for all and opens the next generation; the others sleep on a futex on the
 * generation word and then add up the sizes of the ranks below them (the exclusive scan).
 * MPI_Exscan + MPI_Bcast are several message hops between ranks that may have given up the
 * CPU (ranks outnumbering cores); here there is one wake-up. Sizes and bases
 * are kept for two generations: a rank can enter call k+1 only after call k's generation is
 * open, and call k+1 cannot complete while a rank still reads call k's sizes, so call k+2
 * (which reuses call k's slots) cannot start writing them before every rank is done. */
#include "sharedfp/sharedfp.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

typedef struct sm_seg {
  int64_t value[PARIO_VDEF_SLOTS]; /* S, one counter per slot (sharedfp.h) */
  uint32_t gen;    /* ordered calls completed (futex word) */
  uint32_t arrived;
  int64_t base[2]; /* S before each of the last two ordered calls */
  int64_t size[];  /* [2][nprocs]: each rank's etypes in the last two ordered calls */
} sm_seg;

typedef struct sm_state {
  sm_seg *seg;
  size_t len;
  int rank, nprocs;
  MPI_Comm comm; /* the file's, for progress while waiting */
  uint32_t gen; /* ordered calls this rank has completed */
} sm_state;

static void seg_name(const pario_file *f, char *buf, size_t n) {
  snprintf(buf, n, "/pario-sfp-%llx", f->uid);
}

static int sm_query(pario_file *f) { return f->nodes == 1 || pario_sharedfp_one_kernel(f) ? 30 : -1; }

static int sm_attach(pario_file *f, void **state) {
  char name[64];
  size_t len = sizeof(sm_seg) + 2 * (size_t)f->nprocs * sizeof(int64_t);
  seg_name(f, name, sizeof name);
  int fd = shm_open(name, O_RDWR | O_CREAT, 0600);
  if (fd < 0) return errno;
  if (ftruncate(fd, (off_t)len) != 0) { /* every rank asks for the same length; zero-filled */
    int e = errno;
    close(fd);
    return e;
  }
  void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int e = p == MAP_FAILED ? errno : 0;
  close(fd);
  if (e) return e;
  sm_state *s = malloc(sizeof *s);
  if (!s) {
    munmap(p, len);
    return ENOMEM;
  }
  *s = (sm_state){.seg = p, .len = len, .rank = f->rank, .nprocs = f->nprocs, .comm = f->comm, .gen = 0};
  *state = s;
  return 0;
}

static int sm_fetch_add(void *state, int slot, MPI_Offset n, MPI_Offset *old) {
  sm_state *s = state;
  *old = __atomic_fetch_add(&s->seg->value[slot], (int64_t)n, __ATOMIC_SEQ_CST);
  return 0;
}

/* Until *gen moves past old. First a short spin, then sched_yield for up to 100 us: with
 * small records the others arrive within microseconds, and a futex sleep and wake-up per
 * call cost more than the call (docs/sharedfp.md has the figures). Then sleeps of at most 1 ms, each followed by
 * an MPI_Iprobe: the rank is inside an MPI call, and a rank that has not arrived yet may be
 * blocked in a send to this one that completes only while this rank's MPI makes progress (a
 * large message to a receive posted before the ordered call; MPICH without a progress
 * thread). */
enum { YIELD_NS = 100000 };
static void wait_gen(uint32_t *gen, uint32_t old, MPI_Comm comm) {
  long t0 = 0;
  for (int spin = 0; __atomic_load_n(gen, __ATOMIC_ACQUIRE) == old; spin++) {
    if (spin < 100) {
      pario_cpu_relax();
      continue;
    }
    if (!t0) t0 = pario_mono_ns();
    if (pario_mono_ns() - t0 < YIELD_NS) {
      sched_yield();
      continue;
    }
    /* Sleeps only while *gen is still old; EINTR, EAGAIN and the timeout just loop. */
    struct timespec ms = {0, 1000000};
    syscall(SYS_futex, gen, FUTEX_WAIT, old, &ms, NULL, 0);
    int flag;
    if (__atomic_load_n(gen, __ATOMIC_ACQUIRE) == old)
      PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag, MPI_STATUS_IGNORE);
  }
}

static int sm_ordered(void *state, int vslot, MPI_Offset n, MPI_Offset *before, MPI_Offset *old) {
  sm_state *s = state;
  sm_seg *g = s->seg;
  uint32_t k = s->gen, slot = k & 1;
  int64_t *size = g->size + (size_t)slot * (size_t)s->nprocs;
  __atomic_store_n(&size[s->rank], (int64_t)n, __ATOMIC_RELAXED);
  if (__atomic_add_fetch(&g->arrived, 1, __ATOMIC_ACQ_REL) == (uint32_t)s->nprocs) {
    int64_t total = 0;
    for (int i = 0; i < s->nprocs; i++) total += __atomic_load_n(&size[i], __ATOMIC_RELAXED);
    g->base[slot] = __atomic_fetch_add(&g->value[vslot], total, __ATOMIC_SEQ_CST); /* every rank's vslot */
    __atomic_store_n(&g->arrived, 0, __ATOMIC_RELAXED); /* published by the release below */
    __atomic_store_n(&g->gen, k + 1, __ATOMIC_RELEASE);
    syscall(SYS_futex, &g->gen, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
  } else {
    wait_gen(&g->gen, k, s->comm);
  }
  int64_t sum = 0;
  for (int i = 0; i < s->rank; i++) sum += __atomic_load_n(&size[i], __ATOMIC_RELAXED);
  *before = sum;
  *old = g->base[slot];
  s->gen = k + 1;
  return 0;
}

static void sm_detach(void *state) {
  sm_state *s = state;
  munmap(s->seg, s->len);
  free(s);
}

static void sm_remove(pario_file *f) {
  char name[64];
  seg_name(f, name, sizeof name);
  shm_unlink(name);
}

const pario_sharedfp_component pario_sharedfp_sm = {
    .name = "sm", .query = sm_query, .attach = sm_attach, .fetch_add = sm_fetch_add,
    .ordered = sm_ordered, .detach = sm_detach, .remove = sm_remove};
