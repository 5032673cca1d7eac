/* core's data path inside core: what io.c (argument checks, the walk, plain transfers, the
 * choice of path, conversion), sieve.c (data sieving) and listio.c (list transfers of remote
 * drivers) share. Nothing outside src/core includes it. */
#ifndef PARIO_CORE_XFER_H
#define PARIO_CORE_XFER_H

#include "core/file.h"

#define PARIO_MAXIOV 64 /* iovecs per driver transfer of one segment */

/* The error of a failed driver transfer of len bytes at off, naming op and the file. */
int pario_xfer_error(pario_file *f, const char *op, int rw, int e, MPI_Offset len, MPI_Offset off);
/* Move one file segment (seg bytes at off) between the file and the memory cursor; *eof set
 * when a read stopped at end of file; lockw: hold a byte-range write lock over the segment. */
int pario_xfer_seg(pario_file *f, const char *op, int rw, pario_mcursor *mc, MPI_Offset off, MPI_Offset seg,
                   MPI_Offset *done, int *eof, int lockw);
/* Move n bytes between the file at the cursor and memory, segment by segment. */
int pario_xfer_walk(pario_file *f, const char *op, int rw, pario_fcursor *fc, pario_mcursor *mc, MPI_Offset n,
                    MPI_Offset *done, int lockw);
/* Count bytes read from storage (the read-volume counters of pario_io_counters_info). */
void pario_io_count_read(pario_file *f, size_t got);

/* Data sieving (sieve.c); last: where the access's extent ends (windows stop there). */
int pario_sieve_read(pario_file *f, const char *op, pario_fcursor *fc, pario_mcursor *mc, MPI_Offset n,
                     MPI_Offset *done, MPI_Offset last);
int pario_sieve_read_scatter(pario_file *f, const char *op, pario_fcursor *fc, pario_mcursor *mc, MPI_Offset n,
                             MPI_Offset *done, MPI_Offset last);
int pario_sieve_write(pario_file *f, int atomic, const char *op, pario_fcursor *fc, pario_mcursor *mc,
                      MPI_Offset n, MPI_Offset *done, MPI_Offset last);
/* Whether the access's pieces lie far enough apart that a scattering read pays. */
int pario_sieve_scatters(pario_fcursor c, MPI_Offset n);

/* List transfers (listio.c): one list request per window, several in flight. */
int pario_list_access(pario_file *f, const char *op, int rw, pario_fcursor *fc, pario_mcursor *mc, MPI_Offset n,
                      MPI_Offset *done, pario_drv_coll *coll);

#endif
