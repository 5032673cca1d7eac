/* Internal definitions shared by every layer of pario: export/alias macros, the error
 * helper, and small utilities. Everything declared here has hidden visibility. */
#ifndef PARIO_COMMON_H
#define PARIO_COMMON_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#define PARIO_EXPORT __attribute__((visibility("default")))
/* MPI_File_x is a weak alias of PMPI_File_x, so PMPI tools layered above pario still work. */
#define PARIO_WEAK_ALIAS(name) \
  extern __typeof__(P##name) name __attribute__((weak, alias("P" #name))) PARIO_EXPORT;

/* The header declares the MPI-4 large-count (_c) functions: pario then exports its own _c
 * MPI-IO functions. Whether the host library has the _c datatype queries pario calls itself
 * is decided at run time (pario_type_envelope, core/hostmpi.c). */
#if MPI_VERSION >= 4
#define PARIO_HAVE_LARGE_COUNT 1
#endif

#define PARIO_MIN(a, b) ((a) < (b) ? (a) : (b))
#define PARIO_MAX(a, b) ((a) > (b) ? (a) : (b))

/* One iteration of a short busy-wait: tells the CPU we spin (x86 pause). */
static inline void pario_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/* Create an MPI error code of class errclass whose MPI_Error_string reads
 * "<op>: <formatted message>[: <strerror(syserr)>][: <path>]": the cause first, the path last
 * with its middle elided where the whole would pass 255 characters. syserr 0 means none. */
int pario_err(int errclass, const char *op, const char *path, int syserr, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* The message of an error code pario created: 1 and the text if code is pario's, else 0. */
int pario_err_lookup(int code, char *buf, int *len);
/* Frees the message ring (at MPI_Finalize). */
void pario_err_finalize(void);

/* MPI error class for an errno value from the storage layer. */
int pario_errno_class(int syserr);

/* Error class of any code (pario's or the host MPI's). */
int pario_err_class(int code);

/* The host MPI, decided at run time (core/hostmpi.c), so that one libpario serves every MPI
 * its build can be loaded with (the MPI standard ABI build serves several). */
enum { PARIO_HOST_OTHER, PARIO_HOST_OPENMPI, PARIO_HOST_MPICH, PARIO_HOST_IMPI };
/* Which implementation MPI_Get_library_version names (callable before MPI_Init). */
int pario_host_mpi(void);
/* Its name as pario.h's pario_mpi_host() gives it: "openmpi", "mpich", "impi" or "other". */
const char *pario_host_mpi_name(void);
/* MPI_Type_get_envelope / MPI_Type_get_contents with every count an MPI_Count: the
 * large-count queries where the host has them (nc: the number of large counts), else the
 * MPI-3 ones (nc is 0). contents takes the counts envelope gave and fills counts[0..nc). */
int pario_type_envelope(MPI_Datatype t, MPI_Count *ni, MPI_Count *na, MPI_Count *nc, MPI_Count *nd, int *comb);
int pario_type_contents(MPI_Datatype t, MPI_Count ni, MPI_Count na, MPI_Count nc, MPI_Count nd, int *ints,
                        MPI_Aint *addrs, MPI_Count *counts, MPI_Datatype *types);

/* Diagnostics from PARIO_LOG (0 = silent, default) at level or above go to stderr. */
void pario_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
