/* sm: the shared pointer in a POSIX shared-memory segment that every rank of the (single)
 * node maps, advanced with an atomic fetch-add: no locks, no messages. The segment is created
 * by whichever rank needs it first (a new segment reads as zero) and removed at close. */
#include "sharedfp/sharedfp.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

typedef struct sm_state {
  int64_t *value;
} sm_state;

static void seg_name(const pario_file *f, char *buf, size_t n) {
  snprintf(buf, n, "/pario-sfp-%llx", f->uid);
}

static int sm_query(pario_file *f) { return f->nodes == 1 ? 30 : -1; }

static int sm_attach(pario_file *f, void **state) {
  char name[64];
  seg_name(f, name, sizeof name);
  int fd = shm_open(name, O_RDWR | O_CREAT, 0600);
  if (fd < 0) return errno;
  if (ftruncate(fd, sizeof(int64_t)) != 0) { /* growing to 8 bytes zero-fills; never shrinks */
    int e = errno;
    close(fd);
    return e;
  }
  void *p = mmap(NULL, sizeof(int64_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int e = p == MAP_FAILED ? errno : 0;
  close(fd);
  if (e) return e;
  sm_state *s = malloc(sizeof *s);
  if (!s) {
    munmap(p, sizeof(int64_t));
    return ENOMEM;
  }
  s->value = p;
  *state = s;
  return 0;
}

static int sm_fetch_add(void *state, MPI_Offset n, MPI_Offset *old) {
  sm_state *s = state;
  *old = __atomic_fetch_add(s->value, (int64_t)n, __ATOMIC_SEQ_CST);
  return 0;
}

static void sm_detach(void *state) {
  sm_state *s = state;
  munmap(s->value, sizeof(int64_t));
  free(s);
}

static void sm_remove(pario_file *f) {
  char name[64];
  seg_name(f, name, sizeof name);
  shm_unlink(name);
}

const pario_sharedfp_component pario_sharedfp_sm = {
    .name = "sm", .query = sm_query, .attach = sm_attach, .fetch_add = sm_fetch_add,
    .detach = sm_detach, .remove = sm_remove};
