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

/* Diagnostics level from PARIO_LOG (0 = silent, default); messages go to stderr. */
int pario_log_level(void);
void pario_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
