/* The pario file object and the core operations behind the API: open/close protocol,
 * the handle registry (validation, c2f/f2c), errhandlers, views and data access. */
#ifndef PARIO_FILE_H
#define PARIO_FILE_H

#include <pthread.h>

#include "core/comm.h"
#include "core/common.h"
#include "core/layer.h"
#include "core/hints.h"
#include "driver/driver.h"
#include "view/view.h"

/* set_view's deferred agreement (setview.c, docs/collective.md "Deferred set_view"): while
 * `on` (the same on every rank: set only where ranks agree), set_view checks its arguments
 * locally and makes no collective; what the agreement would compare travels with the next
 * collective data access (its allgather), a set_view that agrees, or close: chk sums a hash of
 * (number, etype size, datarep) of every set_view (of (number, failure) for one that failed
 * here), errs counts those that failed here; base and ebase are both at the last settle that
 * reported a difference. flags: what a deferred set_view left for the next settle.
 * slot: which of the shared pointer's PARIO_VDEF_SLOTS counters the shared-pointer operations
 * of the current view use (sharedfp/select.c). Each deferred set_view moves every rank to the
 * next slot, which no operation has touched yet: the new view's pointer starts at 0 there
 * without any rank waiting for the others, and a rank still in the old view keeps counting in
 * the old slot. Back to slot 0 at a settle where no rank has used the shared pointer yet (every
 * counter still 0); never past the last: the set_view that would go there agrees instead. */
enum { PARIO_VDEF_HINTS = 1, /* its info changed a hint here (applied here only) */
       PARIO_VDEF_VOTES = 4  /* (in a settle's words) a layer votes here now */ };
enum { PARIO_VDEF_WORDS = 3, PARIO_VDEF_SLOTS = 8 };
typedef struct pario_vdefer {
  int on;
  int never; /* a layer voted once (the shared pointer was used): no deferral on this file again */
  int slot;  /* the shared pointer's counter in use, 0..PARIO_VDEF_SLOTS-1, equal on every rank */
  unsigned long long chk, base;
  long long errs, ebase, flags;
} pario_vdefer;

typedef struct pario_file {
  uint64_t magic;
  MPI_Comm comm;       /* private duplicate of the user's communicator */
  MPI_Comm ehcomm;     /* holds a reference to the file's errhandler (never communicates) */
  MPI_Errhandler eh;   /* the file errhandler (reference held by ehcomm) */
  int rank, nprocs;
  char *filename;      /* as the user gave it, for messages and get_info */
  const char *path;    /* inside filename, past any "ufs:" style prefix */
  int amode;
  int fint;            /* Fortran handle */
  const pario_driver *drv;
  void *dh;
  int oflags;          /* open(2) access flags in use: O_RDWR for MPI_MODE_WRONLY where allowed */
  unsigned long long uid; /* agreed at open: names storage that belongs to this open file */
  int nodes;           /* nodes spanned by the communicator (0: not counted yet) */
  /* Changed only by collective calls, after the layers quiesced (no operation in flight). */
  pario_hints hints;
  int atomic;
  /* The current view (held); an operation holds the view it started with (pario_snap). */
  pario_view *view;
  unsigned long view_gen; /* set_view calls so far: equal on every rank for the same view */
  MPI_Offset fp_ind;   /* individual file pointer, in etypes of the view */
  pthread_mutex_t lock; /* file pointer, view and hints, for threads sharing one handle */
  /* The data path's read-modify-write discipline (sieving writes here, collective buffers in
   * collective/): whether byte-range locks work (0 unknown, 1 yes, -1 no), and a lock that
   * keeps this process's other writes out of a read-modify-write (held exclusively by those,
   * shared by plain writes). */
  int locks_work;
  pthread_rwlock_t rmw_lock;
  /* Read volume, this rank's since open (MPI_File_get_info's pario_bytes_read_file and
   * pario_bytes_requested): bytes read from the driver for any purpose, and bytes asked for
   * by read calls. Atomic adds: the engine's threads read too. */
  unsigned long long bytes_read_file, bytes_requested;
  /* Collective data calls since open and those that aggregated (two-phase): get_info's
   * pario_coll_calls and pario_coll_aggregated (tests prove which path ran). Atomic adds. */
  unsigned long long coll_calls, coll_aggregated;
  void *layer_state[PARIO_SLOTS]; /* each upper layer's per-file state (core/layer.h) */
  pario_vdefer vdef;              /* set_view's deferred agreement (setview.c), under lock */
} pario_file;

/* What one access runs under, fixed when the operation starts: nonblocking and split
 * operations carry it, so a later set_view or set_atomicity never changes an operation in
 * flight. (Hints need no copy: set_info quiesces the file first.) */
typedef struct pario_snap {
  pario_view *view; /* held */
  int atomic;
  long long vdef[PARIO_VDEF_WORDS]; /* the deferred agreement as of the start (setview.c) */
} pario_snap;

void pario_snap_take(pario_file *f, pario_snap *s);
void pario_snap_copy(const pario_snap *from, pario_snap *to);
void pario_snap_drop(pario_snap *s);

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
/* Frees the default handler's holder and the function table (at MPI_Finalize). */
void pario_eh_finalize(void);

/* The read-volume counters (bytes_read_file, bytes_requested) and the collective calls
 * (coll_calls, coll_aggregated) as info keys. */
void pario_io_counters_info(pario_file *f, MPI_Info info);
/* Count n bytes asked for by a read call whose data moves without pario_access_ex (an
 * aggregated collective read). */
void pario_io_count_request(pario_file *f, MPI_Offset n);

/* Validate a handle for operation op: on failure returns an error code (already passed
 * through the default errhandler) and *out is NULL. */
int pario_file_check(MPI_File fh, const char *op, pario_file **out);

/* The driver's transfers and sync for the data path (core/io.c): every caller that moves data
 * goes through these, so tracing sees each driver operation in one place. coll: the collective
 * access the transfer is part of (driver/driver.h, pario_drv_coll), NULL for independent I/O. */
int pario_drv_xfer(pario_file *f, int rw, const struct iovec *iov, int cnt, off_t off, size_t *got,
                   pario_drv_coll *coll);
int pario_drv_sync(pario_file *f);

/* Process-wide finalize hook (core/finalize.c): armed once, at the first open. */
void pario_finalize_arm(void);

/* Open/close protocol (core/open.c). */
int pario_open(MPI_Comm comm, const char *filename, int amode, MPI_Info info, pario_file **out);
int pario_close(pario_file *f);
int pario_delete(const char *filename, MPI_Info info);
/* Switch the file to direct I/O when its pario_direct_io hint asks for it and the storage
 * allows; otherwise clear the hint so get_info reports what is in effect. */
void pario_direct_io_apply(pario_file *f);

/* File-control protocols (core/filectl.c), collective except pario_get_size; each returns this
 * rank's error code (not yet passed through the errhandler), the same class on every rank.
 * pario_resize: MPI_File_set_size (preallocate 0) or _preallocate (1); bad is this rank's
 * verdict on its arguments (MPI_SUCCESS or the error), agreed with the size; rank 0 acts. */
int pario_resize(pario_file *f, const char *op, MPI_Offset size, int preallocate, int bad);
int pario_get_size(pario_file *f, const char *op, MPI_Offset *size);
/* The seek position of the end of file under view v (MPI_SEEK_END): the etypes of the view's
 * data before the file's size, a partial one counted. */
int pario_eof_position(pario_file *f, const pario_view *v, const char *op, MPI_Offset *pos);
/* The layers' sync hooks, then the storage's sync (not for MPI_MODE_RDONLY), then agreement. */
int pario_sync(pario_file *f, const char *op);
/* Quiesce the layers, agree on the new hints (rank 0's where they must agree), apply them. */
int pario_set_info(pario_file *f, const char *op, MPI_Info info);
/* Agree on the flag; byte-range locks proved before atomic mode is promised; then quiesce. */
int pario_set_atomicity(pario_file *f, const char *op, int flag);

/* Views (core/setview.c). */
int pario_set_view(pario_file *f, const char *op, MPI_Offset disp, MPI_Datatype etype,
                   MPI_Datatype filetype, const char *datarep, MPI_Info info);
/* Views are shared by the file and the operations started under them: reference counted. */
pario_view *pario_view_new(void); /* the default view (etype and filetype MPI_BYTE), held once */
void pario_view_drop(pario_view *v);
/* Make the hints say what is in effect (cb_nodes within the rank count, write sieving off
 * where byte-range locks do not work); after open, set_info and set_view. */
void pario_hints_settle(pario_file *f);
/* New hints nh in effect (under f->lock: settled, direct I/O applied), then the layers' set_info
 * hooks; the caller made them agree and quiesced where needed. */
void pario_hints_install(pario_file *f, const pario_hints *nh);
/* set_view's deferred agreement (pario_vdefer). pario_view_defer_words: what this rank sends
 * with a collective call that settles it (s: the call's snapshot). pario_view_defer_settle,
 * with every rank's words (all: rank 0's, stride words apart) over comm, at the same call on
 * every rank: the same result everywhere, MPI_ERR_NOT_SAME or MPI_ERR_ARG naming op where an
 * earlier set_view differed between ranks or failed on one (the call then does nothing);
 * reconciles hints a deferred set_view changed (collective over comm, only then); decides
 * whether later set_views defer where may_switch (a call the caller's thread makes: one the
 * engine runs may still be running on another rank at that rank's next set_view). pario_view_defer_close: the same at close (collective over
 * f->comm; every rank has closed when it returns), code the close's own result so far. */
void pario_view_defer_words(pario_file *f, const pario_snap *s, long long w[PARIO_VDEF_WORDS]);
int pario_view_defer_settle(pario_file *f, const pario_snap *s, const char *op, MPI_Comm comm, const long long *all,
                            size_t stride, int np, int may_switch);
int pario_view_defer_close(pario_file *f, const char *op, int code);

/* Data access (core/io.c). pos is a byte position in the data stream of the snapshot's view. */
enum { PARIO_READ = 0, PARIO_WRITE = 1 };
int pario_access(pario_file *f, const pario_snap *s, const char *op, int rw, MPI_Offset pos, void *buf,
                 MPI_Count count, MPI_Datatype type, MPI_Count *bytes);
/* *bytes receives the bytes of the view's data stream moved: in the file's representation
 * (pario_rep_native_bytes turns them into what a status reports). Under a representation
 * other than native, memory is converted on the way.
 * The _ex form's flags: 1 (lock_writes): every write segment holds a byte-range write lock, for
 * a write that runs beside other processes' data-sieving writes (a collective write done
 * independently where some rank sieves); PARIO_ACCESS_RAW: buf holds (MPI_BYTE) data already
 * in the file's representation, moved without conversion. coll: the collective access this one
 * is this rank's part of (its driver requests carry the tag, driver/driver.h), or NULL. */
#define PARIO_ACCESS_RAW 2
int pario_access_ex(pario_file *f, const pario_snap *s, const char *op, int rw, MPI_Offset pos, void *buf,
                    MPI_Count count, MPI_Datatype type, MPI_Count *bytes, int lock_writes, pario_drv_coll *coll);
/* The same access started on the driver's submission path (driver.h submit), without a thread
 * and without waiting: 1 when started, then done(arg, code, bytes) follows exactly once (from
 * any thread; code as pario_access returns it, bytes as its *bytes); 0 when the access must
 * run as pario_access instead (the driver has no submit or declined, atomic mode, a
 * representation to convert, nothing to move, or no memory for the lists). */
int pario_access_submit(pario_file *f, const pario_snap *s, const char *op, int rw, MPI_Offset pos, void *buf,
                        MPI_Count count, MPI_Datatype type, void (*done)(void *arg, int code, MPI_Count bytes),
                        void *arg);
/* 1 when a read of n bytes through view v would use data sieving. */
int pario_sieves_read(const pario_file *f, const pario_view *v, MPI_Offset n);
/* 1 when a write of n bytes through view v would use data sieving. */
int pario_sieves_write(const pario_file *f, const pario_view *v, MPI_Offset n);
/* Check arguments of a data access against view v; returns an error code or MPI_SUCCESS. */
int pario_access_check(pario_file *f, const pario_view *v, const char *op, int rw, const void *buf,
                       MPI_Count count, MPI_Datatype type, const pario_typemap **tm);
/* pario_access_check plus the rules of the explicit-offset and individual-pointer calls
 * (no negative offset, none of them on MPI_MODE_SEQUENTIAL files). */
int pario_access_args(pario_file *f, const pario_view *v, const char *op, int rw, int explicit_off,
                      MPI_Offset offset, const void *buf, MPI_Count count, MPI_Datatype type,
                      const pario_typemap **tm);
void pario_status_set(MPI_Status *status, MPI_Count bytes);
/* pario_file_check for a query with one output pointer, which must not be NULL. */
int pario_file_check_out(MPI_File fh, const char *op, const void *out, pario_file **f);

#endif
