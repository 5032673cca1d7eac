/* The open/close protocol: collective open where rank 0 alone creates the file (so EXCL
 * cannot race) before the others open it, agreement on failure so every rank returns an
 * error together, the layers' lifecycle hooks (core/layer.h) at fixed points, and
 * DELETE_ON_CLOSE after all ranks have closed. */
#include "core/file.h"

#include <errno.h>
#include <fcntl.h>
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

static int access_flags(int amode) {
  return (amode & MPI_MODE_RDONLY) ? O_RDONLY : (amode & MPI_MODE_WRONLY) ? O_WRONLY : O_RDWR;
}

/* Open with the access flags of the amode, except that a write-only file is opened for
 * reading too where permissions allow: data sieving and collective writes read before they
 * write. pario itself refuses reads on MPI_MODE_WRONLY files. */
static int drv_open1(pario_file *f, int flags, char *why) {
  if (!f->drv->open_ex) return f->drv->open(f->path, flags, f->hints.file_perm, &f->dh);
  /* Only rank 0 (which creates the file) must reach the storage now (driver/driver.h). */
  pario_drv_args a = {pario_hints_drv, &f->hints, f->rank != 0, why, PARIO_DRV_WHY};
  return f->drv->open_ex(f->path, flags, f->hints.file_perm, &a, &f->dh);
}

/* why: the driver's one line on a failure ("" if it gave none). */
static int drv_open(pario_file *f, int flags, char *why) {
  int acc = access_flags(f->amode), e = EACCES;
  why[0] = '\0';
  if (acc == O_WRONLY) e = drv_open1(f, (flags & ~O_ACCMODE) | O_RDWR, why);
  f->oflags = e ? acc : O_RDWR;
  return e ? drv_open1(f, flags, why) : 0;
}

/* The error of a failed driver call: the driver's reason where it gave one, else the errno's. */
static int drv_err(const char *op, const char *filename, int e, const char *why, const char *what) {
  return why[0] ? pario_err(pario_errno_class(e), op, filename, 0, "%s", why)
                : pario_err(pario_errno_class(e), op, filename, e, "%s", what);
}

/* Open the file on every rank; rank 0 creates it first. Returns this rank's error code. */
static int open_all(pario_file *f, const char *op) {
  int flags = access_flags(f->amode), e = 0;
  char why[PARIO_DRV_WHY] = "";
  static unsigned long long opens;
  long long agreed[2] = {0, 0}; /* rank 0's result and the file's id, with rank 0's hints */
  if (f->rank == 0) {
    int cflags = flags;
    if (f->amode & MPI_MODE_CREATE) cflags |= O_CREAT;
    if (f->amode & MPI_MODE_EXCL) cflags |= O_CREAT | O_EXCL;
    agreed[0] = drv_open(f, cflags, why);
    agreed[1] = (long long)(((unsigned long long)getpid() << 24) ^ (unsigned long long)time(NULL) << 1 ^
                            __atomic_add_fetch(&opens, 1, __ATOMIC_RELAXED));
  }
  if (pario_hints_agree(f->comm, &f->hints, agreed, 2) != MPI_SUCCESS) {
    if (f->rank == 0 && !agreed[0]) f->drv->close(f->dh);
    f->dh = NULL;
    return pario_err(MPI_ERR_OTHER, op, f->filename, 0, "agreement among ranks failed");
  }
  int e0 = (int)agreed[0];
  f->uid = (unsigned long long)agreed[1];
  if (e0) /* rank 0's failure is everyone's: the same class and system error (rank 0 says why) */
    return drv_err(op, f->filename, e0, why, "cannot open");
  if (f->rank != 0) e = drv_open(f, flags, why);
  int code = e ? drv_err(op, f->filename, e, why, "cannot open") : MPI_SUCCESS;
  /* The agreement also tells whether all ranks run on one host: then the node count needs
   * no MPI_Comm_split_type (each collective costs milliseconds on oversubscribed nodes). */
  long long host = pario_host_id(), v[3] = {code == MPI_SUCCESS ? 0 : pario_err_class(code), host, -host}, r[3];
  int worst = pario_allreduce_max(v, r, 3, MPI_LONG_LONG, f->comm) == MPI_SUCCESS ? (int)r[0] : MPI_ERR_OTHER;
  f->nodes = worst == MPI_SUCCESS && r[1] == -r[2] ? 1 : 0; /* 0: count them later */
  if (worst != MPI_SUCCESS && code == MPI_SUCCESS) {
    f->drv->close(f->dh);
    f->dh = NULL;
    code = pario_err(worst, op, f->filename, 0, "open failed on another rank");
  }
  return code;
}

/* The number of nodes the communicator spans, when open could not tell it is one. */
static void count_nodes(pario_file *f) {
  MPI_Comm node;
  int nrank = 0, leader, nodes = 1;
  if (f->nodes == 1) return;
  if (PMPI_Comm_split_type(f->comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
    PMPI_Comm_rank(node, &nrank);
    PMPI_Comm_free(&node);
  }
  leader = nrank == 0;
  PMPI_Allreduce(&leader, &nodes, 1, MPI_INT, MPI_SUM, f->comm);
  f->nodes = nodes;
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
  pario_view_drop(f->view);
  if (f->ehcomm != MPI_COMM_NULL) PMPI_Comm_free(&f->ehcomm);
  /* after pario_timeout expired, requests may be pending on it (Open MPI's progress of a
   * nonblocking collective on a freed communicator crashes): left allocated */
  if (f->comm != MPI_COMM_NULL && !pario_wait_stuck_ms()) PMPI_Comm_free(&f->comm);
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
  f->view = pario_view_new();
  f->filename = strdup(filename);
  if (!f->filename || !f->view) return MPI_ERR_NO_MEM;
  f->drv = pario_driver_for(f->filename, &f->path);
  f->amode = amode;
  pario_hints_init(&f->hints, info);
  int rc = pario_comm_dup_private(comm, &f->comm); /* errors return: never the user's handler */
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

/* Arguments every rank must agree on before anything is opened. */
static int open_args(MPI_Comm comm, const char *filename, int amode, const char *op) {
  int inter = 0, v[3], r[3];
  if (comm == MPI_COMM_NULL || PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter)
    return pario_err(MPI_ERR_COMM, op, filename, 0, "invalid or inter-communicator");
  if (!filename || !*filename) return pario_err(MPI_ERR_BAD_FILE, op, NULL, 0, "empty file name");
  const char *why = amode_problem(amode);
  v[0] = why != NULL; /* every rank takes part in the agreement, valid amode or not */
  v[1] = amode;
  v[2] = -amode;
  if (pario_allreduce_max(v, r, 3, MPI_INT, comm) != MPI_SUCCESS)
    return pario_err(MPI_ERR_OTHER, op, filename, 0, "agreement among ranks failed");
  if (why) return pario_err(MPI_ERR_AMODE, op, filename, 0, "%s", why);
  if (r[0]) return pario_err(MPI_ERR_AMODE, op, filename, 0, "invalid access mode on another rank");
  if (r[1] != -r[2]) return pario_err(MPI_ERR_NOT_SAME, op, filename, 0, "access mode differs between ranks");
  return MPI_SUCCESS;
}

/* After the storage is open everywhere: the layers' open hooks, the individual pointer of
 * an MPI_MODE_APPEND file, and the registry. Any failure on any rank is everyone's, and
 * whatever the layers set up is released again on every rank. */
static int finish_open(pario_file *f, const char *op) {
  int code = pario_layers_open(f), registered = 0;
  if (code == MPI_SUCCESS && (f->amode & MPI_MODE_APPEND)) {
    off_t size = 0;
    int e = f->drv->size(f->dh, &size);
    if (e) code = pario_err(pario_errno_class(e), op, f->filename, e, "cannot get the size for MPI_MODE_APPEND");
    else f->fp_ind = size; /* the default view: etype MPI_BYTE */
  }
  if (code == MPI_SUCCESS) {
    code = pario_registry_add(f);
    registered = code == MPI_SUCCESS;
    if (!registered) code = pario_err(MPI_ERR_NO_MEM, op, f->filename, 0, "out of memory");
  }
  int worst = pario_agree(f->comm, code);
  if (worst == MPI_SUCCESS) return MPI_SUCCESS;
  if (registered) pario_registry_remove(f);
  pario_layers_release(f); /* collective: every rank is here */
  f->drv->close(f->dh);
  f->dh = NULL;
  return code != MPI_SUCCESS ? code : pario_err(worst, op, f->filename, 0, "open failed on another rank");
}

int pario_open(MPI_Comm comm, const char *filename, int amode, MPI_Info info, pario_file **out) {
  static const char op[] = "MPI_File_open";
  *out = NULL;
  int rc = open_args(comm, filename, amode, op);
  if (rc != MPI_SUCCESS) return rc;
  pario_finalize_arm();
  pario_file *f = calloc(1, sizeof *f);
  if (!f) return pario_err(MPI_ERR_NO_MEM, op, filename, 0, "out of memory");
  rc = setup(f, comm, filename, amode, info);
  if (rc != MPI_SUCCESS) {
    file_free(f);
    return pario_err(pario_err_class(rc), op, filename, 0, "cannot set up the file object");
  }
  rc = open_all(f, op);
  if (rc == MPI_SUCCESS) {
    count_nodes(f);
    pario_hints_settle(f);
    pario_direct_io_apply(f);
    rc = finish_open(f, op);
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
  /* Layers finish first: operations still pending (erroneous, but their data must not be
   * lost) complete, kept shared-pointer writes reach the file. */
  int code = pario_layers_close(f, op);
  int e = f->drv->close(f->dh);
  f->dh = NULL;
  if (e && code == MPI_SUCCESS) code = pario_err(pario_errno_class(e), op, f->filename, e, "close failed");
  /* Everyone has closed before anything shared goes away: the agreement deferred by earlier
   * set_views is settled in the same step. */
  code = pario_view_defer_close(f, op, code);
  pario_layers_release(f);
  if ((f->amode & MPI_MODE_DELETE_ON_CLOSE) && f->rank == 0) {
    char why[PARIO_DRV_WHY] = "";
    pario_drv_args a = {pario_hints_drv, &f->hints, 0, why, sizeof why};
    e = f->drv->unlink_ex ? f->drv->unlink_ex(f->path, &a) : f->drv->unlink(f->path);
    if (e == ENOENT) e = 0; /* already gone, as asked (ROMIO ignores it too) */
    if (e && code == MPI_SUCCESS) code = drv_err(op, f->filename, e, why, "delete on close failed");
  }
  if ((f->amode & MPI_MODE_DELETE_ON_CLOSE) && !pario_wait_stuck_ms()) /* gone for everyone on return */
    PMPI_Barrier(f->comm);
  /* The file's own errhandler sees a failed close, while its handle is still valid. */
  code = pario_file_error(pario_handle(f), code);
  pario_registry_remove(f);
  file_free(f);
  return code;
}

int pario_delete(const char *filename, MPI_Info info) {
  static const char op[] = "MPI_File_delete";
  if (!filename || !*filename) return pario_err(MPI_ERR_BAD_FILE, op, NULL, 0, "empty file name");
  const char *path;
  const pario_driver *drv = pario_driver_for(filename, &path);
  int e;
  char why[PARIO_DRV_WHY] = "";
  if (drv->unlink_ex) { /* a remote driver needs its hints (the secret) to reach the storage */
    pario_hints h;
    pario_hints_init(&h, info);
    pario_drv_args a = {pario_hints_drv, &h, 0, why, sizeof why};
    e = drv->unlink_ex(path, &a);
  } else {
    e = drv->unlink(path);
  }
  return e ? drv_err(op, filename, e, why, "cannot delete") : MPI_SUCCESS;
}
