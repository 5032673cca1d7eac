/* Storage driver interface: byte-range operations only. A driver never sees a datatype or a
 * view. Every operation returns 0 or an errno value; transfers report the bytes done. */
#ifndef PARIO_DRIVER_H
#define PARIO_DRIVER_H

#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

enum { PARIO_LOCK_READ = 1, PARIO_LOCK_WRITE = 2, PARIO_UNLOCK = 3 };

typedef struct pario_driver {
  const char *name;
  /* flags are open(2) flags; perm the creation mode. *handle receives the driver's state. */
  int (*open)(const char *path, int flags, unsigned perm, void **handle);
  int (*close)(void *handle);
  /* Transfer exactly the iovecs at offset, looping over short transfers and EINTR.
   * preadv stops early only at end of file: *done says how many bytes arrived. */
  int (*preadv)(void *handle, const struct iovec *iov, int iovcnt, off_t offset, size_t *done);
  int (*pwritev)(void *handle, const struct iovec *iov, int iovcnt, off_t offset, size_t *done);
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
} pario_driver;

extern const pario_driver pario_driver_posix;

/* The driver serving a file name: the one registered for its prefix ("ufs:", and later
 * "x-rio://"), else posix. The prefix is stripped into *path_out. */
const pario_driver *pario_driver_for(const char *filename, const char **path_out);
/* Register a driver for names starting with prefix (from a constructor: before main). A new
 * driver is added this way, without touching core. */
void pario_driver_register(const char *prefix, const pario_driver *drv);

#endif
