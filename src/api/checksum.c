/* pario_file_checksum (pario.h): Adler-32 or CRC32C of a range of an open file, asked of the
 * server for a remote file (the driver's checksum op, rio CHECKSUM) and computed here by
 * reading through the driver otherwise. Not collective: any rank may call it. */
#include <errno.h>
#include <stdlib.h>

#include "core/file.h"
#include "pario.h"
#include "rio/checksum.h"

#define SUM_CHUNK (1 << 20) /* read and summed at a time by the local fallback */

/* Read len bytes from offset (len 0: to the end of file) through the driver and sum them. */
static int sum_local(pario_file *f, unsigned algo, off_t offset, off_t len, uint32_t *value, off_t *bytes) {
  char *buf = malloc(SUM_CHUNK);
  if (!buf) return ENOMEM;
  uint32_t v = rio_sum_start(algo);
  off_t done = 0;
  int e = 0;
  while (!e && (len == 0 || done < len)) {
    size_t want = len == 0 || len - done > SUM_CHUNK ? SUM_CHUNK : (size_t)(len - done), got = 0;
    struct iovec iov = {buf, want};
    e = f->drv->preadv(f->dh, &iov, 1, offset + done, &got, NULL);
    if (e) break;
    v = rio_sum_update(algo, v, buf, got);
    done += (off_t)got;
    if (got < want) break; /* end of file */
  }
  free(buf);
  *value = v, *bytes = done;
  return e;
}

static int checksum_body(MPI_File fh, const char *algo, MPI_Offset offset, MPI_Offset len, unsigned long *value,
                         MPI_Offset *bytes) {
  static const char op[] = "pario_file_checksum";
  pario_file *f;
  int rc = pario_file_check(fh, op, &f);
  if (rc != MPI_SUCCESS) return rc;
  unsigned a = rio_sum_algo(algo);
  int bad = !value || !bytes ? pario_err(MPI_ERR_ARG, op, f->filename, 0, "null output pointer")
          : !a ? pario_err(MPI_ERR_ARG, op, f->filename, 0, "unknown checksum algorithm \"%s\" (adler32 or crc32c)",
                           algo ? algo : "(null)")
          : offset < 0 || len < 0 ? pario_err(MPI_ERR_ARG, op, f->filename, 0, "negative offset or length")
          : (f->amode & MPI_MODE_WRONLY) ? pario_err(MPI_ERR_ACCESS, op, f->filename, 0, "file opened MPI_MODE_WRONLY")
          : MPI_SUCCESS;
  if (bad != MPI_SUCCESS) return pario_file_error(fh, bad);
  uint32_t v = 0;
  off_t n = 0;
  int e = f->drv->checksum ? f->drv->checksum(f->dh, a, (off_t)offset, (off_t)len, &v, &n)
                           : sum_local(f, a, (off_t)offset, (off_t)len, &v, &n);
  if (e) return pario_file_error(fh, pario_err(pario_errno_class(e), op, f->filename, e, "cannot compute %s from offset %lld",
                                               rio_sum_name(a), (long long)offset));
  *value = v, *bytes = n;
  return MPI_SUCCESS;
}

__attribute__((visibility("default"))) int pario_file_checksum(MPI_File fh, const char *algo, MPI_Offset offset,
                                                               MPI_Offset len, unsigned long *value, MPI_Offset *bytes) {
  return checksum_body(fh, algo, offset, len, value, bytes);
}
