/* Storage driver interface: byte-range operations only. A driver never sees a datatype or a
 * view. Every operation returns 0 or an errno value; transfers report the bytes done. */
#ifndef PARIO_DRIVER_H
#define PARIO_DRIVER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

enum { PARIO_LOCK_READ = 1, PARIO_LOCK_WRITE = 2, PARIO_UNLOCK = 3 };
enum { PARIO_CTR_ADD = 1, PARIO_CTR_SET = 2, PARIO_CTR_GET = 3 };

/* One file segment of a list transfer. */
typedef struct pario_seg {
  off_t off, len;
} pario_seg;

/* What open_ex and unlink_ex receive besides the name: the file's driver hints (the keys
 * that start with the driver's hint_prefix, from the info or the PARIO_HINTS file), and
 * whether this rank may put off reaching the storage until the handle's first operation
 * (every rank but the one that creates or validates the file at MPI_File_open). */
typedef struct pario_drv_args {
  const char *(*hint)(const void *ctx, const char *key); /* the hint's value, or NULL */
  const void *ctx;
  int defer;
  char *why;     /* on a failure the driver may put here one line saying what to do (the MPI */
  size_t whylen; /* error string then carries it); NULL: nowhere */
} pario_drv_args;
enum { PARIO_DRV_WHY = 256 };

/* The collective access a transfer belongs to, handed to the driver's transfer calls by the
 * collective layer (through core's pario_drv_xfer / pario_access_ex; NULL for independent I/O).
 * A remote driver tags its requests with it so that a forwarder can merge the parts of one
 * collective access into one I/O (src/rio/PROTOCOL.md, coll_id); posix ignores it. base has
 * its low 16 bits 0 and is the same on every rank for the same collective access; n is the
 * number of ranks that send requests in it. The caller owns it for the whole access and the
 * driver counts the requests it sends under it in seq: the k-th carries coll_id base + k, so
 * the k-th requests of the n ranks form one group. */
typedef struct pario_drv_coll {
  uint64_t base;
  uint32_t n, seq;
} pario_drv_coll;

enum { PARIO_COLL_SEQ_MAX = 0xffff };

/* The tag of the next request sent under coll (*id 0: none, an independent request), as the
 * io header of the rio protocol takes it. */
static inline void pario_drv_coll_next(pario_drv_coll *c, uint64_t *id, uint32_t *n) {
  *id = 0, *n = 0;
  if (!c || !c->base || c->n < 2 || c->seq >= PARIO_COLL_SEQ_MAX) return;
  *id = c->base | c->seq++;
  *n = c->n;
}

typedef struct pario_driver {
  const char *name;
  /* flags are open(2) flags; perm the creation mode. *handle receives the driver's state. */
  int (*open)(const char *path, int flags, unsigned perm, void **handle);
  int (*close)(void *handle);
  /* Transfer exactly the iovecs at offset, looping over short transfers and EINTR.
   * preadv stops early only at end of file: *done says how many bytes arrived. coll: the
   * collective access the transfer is part of (above), NULL for independent I/O. */
  int (*preadv)(void *handle, const struct iovec *iov, int iovcnt, off_t offset, size_t *done, pario_drv_coll *coll);
  int (*pwritev)(void *handle, const struct iovec *iov, int iovcnt, off_t offset, size_t *done, pario_drv_coll *coll);
  int (*sync)(void *handle);
  int (*truncate)(void *handle, off_t size);
  int (*allocate)(void *handle, off_t offset, off_t len);
  int (*size)(void *handle, off_t *size);
  /* Byte-range lock: op is PARIO_LOCK_READ/WRITE (blocking) or PARIO_UNLOCK. len 0 = to EOF. */
  int (*lock)(void *handle, int op, off_t offset, off_t len);
  /* Try a lock without blocking and release it: 0 if byte-range locks work on this file. */
  int (*lock_probe)(void *handle, int op);
  int (*unlink)(const char *path);
  /* Route transfers through direct I/O (O_DIRECT) from now on; 0, or an errno value
   * (for instance EINVAL where the file system has no direct I/O) leaving buffered I/O. */
  int (*set_direct)(void *handle, const char *path, int flags);

  /* Optional (NULL in posix), for storage behind a server (driver/rio.c). */
  int remote;              /* files are not local paths: nothing may be kept beside them */
  const char *hint_prefix; /* hints handed to open_ex / unlink_ex ("pario_rio_") */
  int io_threads;          /* default pario_io_threads of its files (0: core's): how many
                              nonblocking operations of a file the engine keeps in flight */
  long long list_window;   /* default ind_rd/wr_buffer_size of its files (0: core's): the data
                              bytes of one preadl/pwritel, so one request, of an access */
  /* Used instead of open / unlink when set. */
  int (*open_ex)(const char *path, int flags, unsigned perm, const pario_drv_args *a, void **handle);
  int (*unlink_ex)(const char *path, const pario_drv_args *a);
  /* List transfer: the nseg file segments in order, their bytes gathered from or scattered
   * to the memory iovecs, as one request (no sieving, no read-modify-write). preadl stops
   * early only at end of file: *done counts the bytes that arrived, in segment order. coll as
   * for preadv. */
  int (*preadl)(void *handle, const pario_seg *segs, int nseg, const struct iovec *mem, int memcnt, size_t *done,
                pario_drv_coll *coll);
  int (*pwritel)(void *handle, const pario_seg *segs, int nseg, const struct iovec *mem, int memcnt, size_t *done,
                 pario_drv_coll *coll);
  /* An atomic 64-bit counter per (file, key) shared by every handle of the file on the
   * storage (shared file pointers): op PARIO_CTR_ADD/SET/GET; *old the value before. */
  int (*counter)(void *handle, uint64_t key, int op, int64_t value, int64_t *old);
  /* Submission without a thread (the async engine's path for nonblocking operations): start
   * the list transfer of preadl (rw 0) or pwritel (rw 1) and return at once; done(arg, err, bytes) is called
   * exactly once when the last reply has arrived (from any thread, perhaps before submit
   * returns), with the errno and the bytes done as preadl/pwritel would give them. The driver
   * copies segs and mem; the memory they point to must stay valid until done. A nonzero return
   * means nothing was started and done is never called (EOPNOTSUPP: the driver declines this
   * one, e.g. a large write whose data would keep the caller sending): run it as preadl/pwritel.
   * coll as for preadv: read (its requests numbered) before submit returns. */
  int (*submit)(void *handle, int rw, const pario_seg *segs, int nseg, const struct iovec *mem, int memcnt,
                pario_drv_coll *coll, void (*done)(void *arg, int err, size_t bytes), void *arg);
  /* Checksum computed where the data lies (pario_file_checksum): algo as rio/checksum.h,
   * len bytes from offset (len 0: to the end of file); *bytes summed, fewer only at the end of
   * file. NULL: the caller reads through preadv and sums itself. */
  int (*checksum)(void *handle, unsigned algo, off_t offset, off_t len, uint32_t *value, off_t *bytes);
} pario_driver;

extern const pario_driver pario_driver_posix;

/* The driver serving a file name: the one registered for its prefix ("ufs:", "x-rio://"),
 * else posix. The prefix is stripped into *path_out. */
const pario_driver *pario_driver_for(const char *filename, const char **path_out);
/* Register a driver for names starting with prefix (from a constructor: before main). A new
 * driver is added this way, without touching core. */
void pario_driver_register(const char *prefix, const pario_driver *drv);
/* 1 when key starts with the hint_prefix of a registered driver (core keeps such hints for
 * open_ex and unlink_ex). */
int pario_driver_hint_key(const char *key);

#endif
