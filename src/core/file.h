/* The pario file object and the core operations behind the API: open/close protocol,
 * the handle registry (validation, c2f/f2c), errhandlers, views and data access. */
#ifndef PARIO_FILE_H
#define PARIO_FILE_H

#include <pthread.h>

#include "core/common.h"
#include "core/hints.h"
#include "driver/driver.h"
#include "view/view.h"

typedef struct pario_file {
  uint64_t magic;
  MPI_Comm comm;       /* private duplicate of the user's communicator */
  MPI_Comm ehcomm;     /* holds a reference to the file's errhandler (never communicates) */
  MPI_Errhandler eh;   /* the file errhandler (reference held by ehcomm) */
  int rank, nprocs;
  char *filename;      /* as the user gave it, for messages and get_info */
  const char *path;    /* inside filename, past any "ufs:" style prefix */
  int amode;
  const pario_driver *drv;
  void *dh;
  pario_hints hints;
  pario_view view;
  MPI_Offset fp_ind;   /* individual file pointer, in etypes of the view */
  int atomic;
  int fint;            /* Fortran handle */
  int pending;         /* operations still executing in the async engine (under its lock) */
  struct pario_job *split_job; /* the split collective in progress */
  /* Shared file pointer: component chosen on first use, its state, the collective base. */
  const struct pario_sharedfp_component *sfp;
  void *sfp_state;
  MPI_Offset sfp_base;
  int sfp_ordered;        /* ordered calls use the component's hook: 0 not known yet, 1 yes, -1 no */
  int sfp_err;            /* why the component set up at open failed (reported on use) */
  unsigned long long uid; /* agreed at open: names the pointer's storage */
  int nodes;              /* nodes spanned by the communicator */
  int split_rw;
  pthread_mutex_t lock; /* file pointer and view, for threads sharing one handle */
  /* Collective and sieving state (collective/): contexts for blocking and nonblocking
   * collectives, whether byte-range locks work (0 unknown, 1 yes, -1 no), the order in which
   * the engine runs nonblocking collectives, and a lock that keeps this process's other
   * writes out of a read-modify-write (held exclusively by those, shared by plain writes). */
  struct pario_coll_ctx *coll[2];
  int locks_work;
  int oflags;   /* open(2) access flags in use: O_RDWR for MPI_MODE_WRONLY where allowed */
  unsigned coll_ticket, coll_turn;
  pthread_rwlock_t rmw_lock;
} pario_file;

#define PARIO_FILE_MAGIC 0x706172696f66696cULL

static inline MPI_File pario_handle(pario_file *f) { return (MPI_File)(void *)f; }
static inline pario_file *pario_file_of(MPI_File fh) { return (pario_file *)(void *)fh; }

/* Registry of open files: validation of handles and Fortran integer handles. */
int pario_registry_add(pario_file *f);
void pario_registry_remove(pario_file *f);
int pario_registry_valid(MPI_File fh);
MPI_File pario_registry_f2c(int fint);

/* Errhandlers. pario_file_error invokes the handler of fh (MPI_FILE_NULL: the default
 * for opens) with code and returns code. */
int pario_file_error(MPI_File fh, int code);
int pario_eh_set(pario_file *f, MPI_Errhandler eh);
int pario_eh_get(pario_file *f, MPI_Errhandler *eh);
int pario_eh_default_set(MPI_Errhandler eh);
int pario_eh_default_get(MPI_Errhandler *eh);
int pario_eh_create(MPI_File_errhandler_function *fn, MPI_Errhandler *eh);

/* Validate a handle for operation op: on failure returns an error code (already passed
 * through the default errhandler) and *out is NULL. */
int pario_file_check(MPI_File fh, const char *op, pario_file **out);

/* Open/close protocol (core/open.c). */
int pario_open(MPI_Comm comm, const char *filename, int amode, MPI_Info info, pario_file **out);
int pario_close(pario_file *f);
int pario_delete(const char *filename);
/* Switch the file to direct I/O when its pario_direct_io hint asks for it and the storage
 * allows; otherwise clear the hint so get_info reports what is in effect. */
void pario_direct_io_apply(pario_file *f);

/* Views (core/setview.c). */
int pario_set_view(pario_file *f, const char *op, MPI_Offset disp, MPI_Datatype etype,
                   MPI_Datatype filetype, const char *datarep, MPI_Info info);
void pario_view_default(pario_view *v);
void pario_view_release(pario_view *v);

/* Data access (core/io.c). pos is a byte position in the view's data stream. */
enum { PARIO_READ = 0, PARIO_WRITE = 1 };
int pario_access(pario_file *f, const char *op, int rw, MPI_Offset pos, void *buf,
                 MPI_Count count, MPI_Datatype type, MPI_Count *bytes);
/* The same; lock_writes: every write segment holds a byte-range write lock, for a write that
 * runs beside other processes' data-sieving writes (a collective write done independently
 * where some rank sieves). */
int pario_access_ex(pario_file *f, const char *op, int rw, MPI_Offset pos, void *buf,
                    MPI_Count count, MPI_Datatype type, MPI_Count *bytes, int lock_writes);
/* 1 when a write of n bytes through the current view would use data sieving. */
int pario_sieves_write(const pario_file *f, MPI_Offset n);
/* Check arguments of a data access; returns an error code or MPI_SUCCESS. */
int pario_access_check(pario_file *f, const char *op, int rw, const void *buf, MPI_Count count,
                       MPI_Datatype type, const pario_typemap **tm);
/* pario_access_check plus the rules of the explicit-offset and individual-pointer calls
 * (no negative offset, none of them on MPI_MODE_SEQUENTIAL files). */
int pario_access_args(pario_file *f, const char *op, int rw, int explicit_off, MPI_Offset offset,
                      const void *buf, MPI_Count count, MPI_Datatype type, const pario_typemap **tm);
void pario_status_set(MPI_Status *status, MPI_Count bytes);
/* pario_file_check for a query with one output pointer, which must not be NULL. */
int pario_file_check_out(MPI_File fh, const char *op, const void *out, pario_file **f);

/* MPI_Waitall that sleeps between polls after a short spin (see open.c). */
void pario_wait_all(int n, MPI_Request *reqs, MPI_Status *st);
/* The same for small collectives whose latency matters: polls yield the core for a while
 * before the wait starts to sleep. */
void pario_wait_all_short(int n, MPI_Request *reqs, MPI_Status *st);
/* Agreement among the ranks of f->comm: returns the worst error class seen anywhere
 * (MPI_SUCCESS when all succeeded). */
int pario_agree(MPI_Comm comm, int local_code);
/* CLOCK_MONOTONIC in nanoseconds (for the polite waits' yield phases). */
long pario_mono_ns(void);
/* MPI_ERR_NOT_SAME (as a code naming op) unless every rank passed the same value. */
int pario_check_same(pario_file *f, const char *op, const char *what, long long value);

#endif
