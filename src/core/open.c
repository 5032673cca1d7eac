/* The open/close protocol: collective open where rank 0 alone creates the file (so EXCL
 * cannot race) before the others open it, agreement on failure so every rank returns an
 * error together, and DELETE_ON_CLOSE after all ranks have closed. */
#include "async/engine.h"
#include "collective/collective.h"
#include "sharedfp/sharedfp.h"
#include "core/file.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define AMODE_KNOWN                                                                     \
  (MPI_MODE_RDONLY | MPI_MODE_RDWR | MPI_MODE_WRONLY | MPI_MODE_CREATE | MPI_MODE_EXCL | \
   MPI_MODE_DELETE_ON_CLOSE | MPI_MODE_UNIQUE_OPEN | MPI_MODE_SEQUENTIAL | MPI_MODE_APPEND)

/* NULL if amode is legal, else why not. */
static const char *amode_problem(int amode) {
  int n = !!(amode & MPI_MODE_RDONLY) + !!(amode & MPI_MODE_RDWR) + !!(amode & MPI_MODE_WRONLY);
  if (amode & ~AMODE_KNOWN) return "unknown bits in the access mode";
  if (n != 1) return "exactly one of MPI_MODE_RDONLY, MPI_MODE_RDWR, MPI_MODE_WRONLY is required";
  if ((amode & MPI_MODE_RDONLY) && (amode & (MPI_MODE_CREATE | MPI_MODE_EXCL)))
    return "MPI_MODE_CREATE and MPI_MODE_EXCL are invalid with MPI_MODE_RDONLY";
  if ((amode & MPI_MODE_RDWR) && (amode & MPI_MODE_SEQUENTIAL))
    return "MPI_MODE_SEQUENTIAL is invalid with MPI_MODE_RDWR";
  return NULL;
}

long pario_mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/* Wait for requests without spinning: ranks waiting for others would otherwise take the CPU
 * those need whenever ranks outnumber cores (MPI libraries busy-poll in MPI_Wait; with 4
 * MPICH ranks on 2 cores a blocking MPI_Barrier costs ~8 ms). A short spin keeps latency
 * low; then, for up to yield_ns, every poll gives the core away (sched_yield: whoever else
 * is runnable here runs first, and a free core polls again at once); after that the wait
 * sleeps between polls, up to 200 us. */
static void wait_polite(int n, MPI_Request *reqs, MPI_Status *st, long yield_ns) {
  int done = 0;
  long nap = 0, t0 = 0;
  for (int spin = 0; n > 0; spin++) {
    PMPI_Testall(n, reqs, &done, st);
    if (done) return;
    if (spin < 64) continue;
    if (yield_ns && !t0) t0 = pario_mono_ns();
    if (yield_ns && pario_mono_ns() - t0 < yield_ns) {
      sched_yield();
      continue;
    }
    nap = nap ? PARIO_MIN(nap * 2, 200000) : 2000;
    struct timespec ts = {0, nap};
    nanosleep(&ts, NULL);
  }
}

/* Collective I/O: the exchange moves megabytes, and yielding waiters still took time from
 * the aggregator (collective writes of 32-byte regions at 4 ranks: ~10 % slower), so it
 * naps at once. */
void pario_wait_all(int n, MPI_Request *reqs, MPI_Status *st) { wait_polite(n, reqs, st, 0); }

/* Small collectives whose latency is the cost (shared-pointer ordered calls of every
 * component but sm, which meets in its segment; seek): a nap cost up to 200 us per message
 * (measured when sm still used this path, write_ordered with 2 MiB records at 4 ranks:
 * 0.45-0.8x of individual-pointer writes; 0.7-1.0x when the wait yields for up to 2 ms
 * first; commit 5181410 has the command). */
void pario_wait_all_short(int n, MPI_Request *reqs, MPI_Status *st) { wait_polite(n, reqs, st, 2000000L); }

/* MAX-allreduce of n values, waiting politely. */
static int allreduce_max(void *in, void *out, int n, MPI_Datatype type, MPI_Comm comm) {
  MPI_Request r;
  if (PMPI_Iallreduce(in, out, n, type, MPI_MAX, comm, &r) != MPI_SUCCESS) return MPI_ERR_OTHER;
  pario_wait_all(1, &r, MPI_STATUSES_IGNORE);
  return MPI_SUCCESS;
}

int pario_agree(MPI_Comm comm, int local_code) {
  int mine = local_code == MPI_SUCCESS ? 0 : pario_err_class(local_code), worst = mine;
  if (allreduce_max(&mine, &worst, 1, MPI_INT, comm) != MPI_SUCCESS) return MPI_ERR_OTHER;
  return worst;
}

int pario_check_same(pario_file *f, const char *op, const char *what, long long value) {
  long long v[2] = {value, -value}, r[2];
  if (allreduce_max(v, r, 2, MPI_LONG_LONG, f->comm) != MPI_SUCCESS)
    return pario_err(MPI_ERR_OTHER, op, f->filename, 0, "agreement among ranks failed");
  if (r[0] != -r[1])
    return pario_err(MPI_ERR_NOT_SAME, op, f->filename, 0, "%s differs between ranks", what);
  return MPI_SUCCESS;
}

static int access_flags(int amode) {
  return (amode & MPI_MODE_RDONLY) ? O_RDONLY : (amode & MPI_MODE_WRONLY) ? O_WRONLY : O_RDWR;
}

/* Open with the access flags of the amode, except that a write-only file is opened for
 * reading too where permissions allow: data sieving and collective writes read before they
 * write. pario itself refuses reads on MPI_MODE_WRONLY files. */
static int drv_open(pario_file *f, int flags) {
  int acc = access_flags(f->amode), e = EACCES;
  if (acc == O_WRONLY) e = f->drv->open(f->path, (flags & ~O_ACCMODE) | O_RDWR, f->hints.file_perm, &f->dh);
  f->oflags = e ? acc : O_RDWR;
  return e ? f->drv->open(f->path, flags, f->hints.file_perm, &f->dh) : 0;
}

/* This host's identity: a hash of MPI_Get_processor_name, non-negative. */
static long long host_id(void) {
  char name[MPI_MAX_PROCESSOR_NAME + 1] = "";
  int len = 0;
  unsigned long long h = 1469598103934665603ull;
  if (PMPI_Get_processor_name(name, &len) != MPI_SUCCESS) len = 0;
  for (int i = 0; i < len; i++) h = (h ^ (unsigned char)name[i]) * 1099511628211ull;
  return (long long)(h >> 1);
}

/* Open the file on every rank; rank 0 creates it first. Returns this rank's error code. */
static int open_all(pario_file *f, const char *op) {
  int flags = access_flags(f->amode), e = 0, e0 = 0;
  static unsigned long long opens;
  unsigned long long agreed[2 + PARIO_HINTS_SHARED] = {0};
  if (f->rank == 0) {
    int cflags = flags;
    if (f->amode & MPI_MODE_CREATE) cflags |= O_CREAT;
    if (f->amode & MPI_MODE_EXCL) cflags |= O_CREAT | O_EXCL;
    e0 = drv_open(f, cflags);
    agreed[0] = (unsigned long long)e0;
    agreed[1] = ((unsigned long long)getpid() << 24) ^ (unsigned long long)time(NULL) << 1 ^ __atomic_add_fetch(&opens, 1, __ATOMIC_RELAXED);
    pario_hints_shared_pack(&f->hints, (long long *)&agreed[2]);
  }
  /* One broadcast carries rank 0's result, the file's id (names shared-pointer storage) and
   * rank 0's hints that all ranks must share (a rank given others would plan differently). */
  PMPI_Bcast(agreed, 2 + PARIO_HINTS_SHARED, MPI_UNSIGNED_LONG_LONG, 0, f->comm);
  e0 = (int)agreed[0];
  f->uid = agreed[1];
  pario_hints_shared_unpack(&f->hints, (const long long *)&agreed[2]);
  if (e0) /* rank 0's failure is everyone's: the same class and system error */
    return pario_err(pario_errno_class(e0), op, f->filename, e0, "cannot open");
  if (f->rank != 0) e = drv_open(f, flags);
  int code = e ? pario_err(pario_errno_class(e), op, f->filename, e, "cannot open") : MPI_SUCCESS;
  /* The agreement also tells whether all ranks run on one host: then the node count needs
   * no MPI_Comm_split_type (each collective costs milliseconds on oversubscribed nodes). */
  long long host = host_id(), v[3] = {code == MPI_SUCCESS ? 0 : pario_err_class(code), host, -host}, r[3];
  int worst = PMPI_Allreduce(v, r, 3, MPI_LONG_LONG, MPI_MAX, f->comm) == MPI_SUCCESS ? (int)r[0] : MPI_ERR_OTHER;
  f->nodes = worst == MPI_SUCCESS && r[1] == -r[2] ? 1 : 0; /* 0: count them later */
  if (worst != MPI_SUCCESS && code == MPI_SUCCESS) {
    f->drv->close(f->dh);
    f->dh = NULL;
    code = pario_err(worst, op, f->filename, 0, "open failed on another rank");
  }
  return code;
}

/* Effective cb_nodes: one aggregator per node unless the hint says fewer. */
static void default_cb_nodes(pario_file *f) {
  MPI_Comm node;
  int nrank = 0, leader, nodes = 1;
  if (f->nodes == 1) { /* one host, known from the open agreement */
    pario_coll_hints_fix(f);
    return;
  }
  if (PMPI_Comm_split_type(f->comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
    PMPI_Comm_rank(node, &nrank);
    PMPI_Comm_free(&node);
  }
  leader = nrank == 0;
  PMPI_Allreduce(&leader, &nodes, 1, MPI_INT, MPI_SUM, f->comm);
  f->nodes = nodes;
  pario_coll_hints_fix(f);
}

void pario_direct_io_apply(pario_file *f) {
  if (!f->hints.direct_io || !f->drv->set_direct) return;
  int e = f->drv->set_direct(f->dh, f->path, f->oflags);
  if (e) { /* no direct I/O here: stay buffered and say so through get_info */
    f->hints.direct_io = 0;
    pario_log(1, "%s: direct I/O unavailable (%d), using the page cache", f->filename, e);
  }
}

static void file_free(pario_file *f) {
  if (!f) return;
  pario_view_release(&f->view);
  if (f->ehcomm != MPI_COMM_NULL) PMPI_Comm_free(&f->ehcomm);
  if (f->comm != MPI_COMM_NULL) PMPI_Comm_free(&f->comm);
  pthread_mutex_destroy(&f->lock);
  pthread_rwlock_destroy(&f->rmw_lock);
  f->magic = 0;
  free(f->filename);
  free(f);
}

static int setup(pario_file *f, MPI_Comm comm, const char *filename, int amode, MPI_Info info) {
  f->magic = PARIO_FILE_MAGIC;
  f->comm = f->ehcomm = MPI_COMM_NULL;
  pthread_mutex_init(&f->lock, NULL);
  pthread_rwlock_init(&f->rmw_lock, NULL);
  pario_view_default(&f->view);
  f->filename = strdup(filename);
  if (!f->filename) return MPI_ERR_NO_MEM;
  f->drv = pario_driver_for(f->filename, &f->path);
  f->amode = amode;
  pario_hints_init(&f->hints, info);
  int rc = PMPI_Comm_dup(comm, &f->comm);
  if (rc != MPI_SUCCESS) return rc;
  PMPI_Comm_rank(f->comm, &f->rank);
  PMPI_Comm_size(f->comm, &f->nprocs);
  MPI_Errhandler eh;
  rc = pario_eh_default_get(&eh);
  if (rc == MPI_SUCCESS) {
    rc = pario_eh_set(f, eh);
    PMPI_Errhandler_free(&eh);
  }
  return rc;
}

int pario_open(MPI_Comm comm, const char *filename, int amode, MPI_Info info, pario_file **out) {
  static const char op[] = "MPI_File_open";
  int inter = 0, v[3], r[3];
  *out = NULL;
  if (comm == MPI_COMM_NULL || PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter)
    return pario_err(MPI_ERR_COMM, op, filename, 0, "invalid or inter-communicator");
  if (!filename || !*filename) return pario_err(MPI_ERR_BAD_FILE, op, NULL, 0, "empty file name");
  const char *why = amode_problem(amode);
  v[0] = why != NULL; /* every rank takes part in the agreement, valid amode or not */
  v[1] = amode;
  v[2] = -amode;
  PMPI_Allreduce(v, r, 3, MPI_INT, MPI_MAX, comm);
  if (why) return pario_err(MPI_ERR_AMODE, op, filename, 0, "%s", why);
  if (r[0]) return pario_err(MPI_ERR_AMODE, op, filename, 0, "invalid access mode on another rank");
  if (r[1] != -r[2]) return pario_err(MPI_ERR_NOT_SAME, op, filename, 0, "access mode differs between ranks");

  pario_file *f = calloc(1, sizeof *f);
  if (!f) return pario_err(MPI_ERR_NO_MEM, op, filename, 0, "out of memory");
  int rc = setup(f, comm, filename, amode, info);
  if (rc != MPI_SUCCESS) {
    file_free(f);
    return pario_err(pario_err_class(rc), op, filename, 0, "cannot set up the file object");
  }
  rc = open_all(f, op);
  if (rc == MPI_SUCCESS) {
    default_cb_nodes(f);
    pario_direct_io_apply(f);
    pario_sharedfp_open(f); /* collective set-up only for files that asked for rma/addproc */
    if (amode & MPI_MODE_APPEND) {
      off_t size = 0;
      f->drv->size(f->dh, &size);
      f->fp_ind = f->sfp_base = size; /* default view: etype MPI_BYTE */
    }
    if (pario_registry_add(f) != MPI_SUCCESS) {
      f->drv->close(f->dh);
      rc = pario_err(MPI_ERR_NO_MEM, op, filename, 0, "out of memory");
    }
  }
  if (rc != MPI_SUCCESS) {
    file_free(f);
    return rc;
  }
  *out = f;
  return MPI_SUCCESS;
}

int pario_close(pario_file *f) {
  static const char op[] = "MPI_File_close";
  /* Requests still pending are erroneous, but their data must not be lost: let them finish. */
  if (f->split_job) {
    MPI_Count ignored;
    pario_engine_wait(f->split_job, &ignored);
    f->split_job = NULL;
  }
  pario_engine_drain(f);
  int code = pario_sharedfp_merge(f, op); /* writes the individual component kept */
  int e = f->drv->close(f->dh);
  f->dh = NULL;
  if (e && code == MPI_SUCCESS) code = pario_err(pario_errno_class(e), op, f->filename, e, "close failed");
  pario_registry_remove(f);
  /* Everyone has closed before the file goes away. */
  PMPI_Barrier(f->comm);
  pario_sharedfp_close(f); /* after the barrier: nobody uses the pointer any more */
  pario_coll_free(f);
  if ((f->amode & MPI_MODE_DELETE_ON_CLOSE) && f->rank == 0) {
    e = f->drv->unlink(f->path);
    if (e && code == MPI_SUCCESS)
      code = pario_err(pario_errno_class(e), op, f->filename, e, "delete on close failed");
  }
  if (f->amode & MPI_MODE_DELETE_ON_CLOSE) PMPI_Barrier(f->comm); /* gone for everyone on return */
  file_free(f);
  return code;
}

int pario_delete(const char *filename) {
  static const char op[] = "MPI_File_delete";
  if (!filename || !*filename) return pario_err(MPI_ERR_BAD_FILE, op, NULL, 0, "empty file name");
  const char *path;
  const pario_driver *drv = pario_driver_for(filename, &path);
  int e = drv->unlink(path);
  return e ? pario_err(pario_errno_class(e), op, filename, e, "cannot delete") : MPI_SUCCESS;
}
