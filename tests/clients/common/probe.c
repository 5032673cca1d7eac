/* Which MPI-IO served a program we cannot change (HDF5, netCDF, h5py): preloaded first
 * (LD_PRELOAD="probe.so" natively, "probe.so libpario.so" under pario), it interposes
 * MPI_File_open (and PMPI_File_open, for programs that call that name) and forwards it to the
 * next definition in the search order, which is the one the program would have called without
 * the probe: pario's when pario is preloaded, the
 * MPI library's otherwise. For every open it appends one line to
 * $PARIO_CLIENTS_PROBE_DIR/probe.<pid>:
 *
 *   open rank=R by=OBJECT sharedfp=VALUE|none rc=RC FILE
 *
 * by= is the object that defined the MPI_File_open that served the call (dladdr), sharedfp=
 * the value of the key pario_sharedfp in MPI_File_get_info of the new handle: pario reports it
 * for every file, the native MPI-IOs never do. So a line proves both where the call went and
 * that the handle behaves as pario's. check-probe.sh reads the lines. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#define EXPORT __attribute__((visibility("default")))

typedef int (*open_fn)(MPI_Comm, const char *, int, MPI_Info, MPI_File *);
typedef int (*get_info_fn)(MPI_File, MPI_Info *);

static void note(const char *line) {
  const char *dir = getenv("PARIO_CLIENTS_PROBE_DIR");
  if (dir == NULL || dir[0] == '\0') return;
  char path[4096];
  snprintf(path, sizeof path, "%s/probe.%ld", dir, (long)getpid());
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0) return;
  size_t len = strlen(line);
  if (write(fd, line, len) != (ssize_t)len) { /* nothing to do: the checker sees a short line */ }
  close(fd);
}

/* The open through the next definition of sym (MPI_File_open, or PMPI_File_open for programs
 * that call the profiling name themselves, as ROMIO's psimple test does). */
static int probed_open(const char *sym, MPI_Comm comm, const char *filename, int amode, MPI_Info info,
                       MPI_File *fh) {
  open_fn next = (open_fn)dlsym(RTLD_NEXT, sym);
  if (next == NULL) {
    note("open rank=-1 by=(unresolved) sharedfp=none rc=-1 ?\n");
    return MPI_ERR_OTHER;
  }
  Dl_info where;
  const char *by = "(unknown)";
  if (dladdr((void *)next, &where) != 0 && where.dli_fname != NULL) by = where.dli_fname;

  int rc = next(comm, filename, amode, info, fh);

  char sharedfp[MPI_MAX_INFO_VAL + 1] = "none";
  if (rc == MPI_SUCCESS) {
    /* Through RTLD_NEXT too: the MPI_File_get_info the program would reach. */
    get_info_fn get_info = (get_info_fn)dlsym(RTLD_NEXT, "MPI_File_get_info");
    MPI_Info got = MPI_INFO_NULL;
    if (get_info != NULL && get_info(*fh, &got) == MPI_SUCCESS && got != MPI_INFO_NULL) {
      int flag = 0;
      char val[MPI_MAX_INFO_VAL + 1];
      PMPI_Info_get(got, "pario_sharedfp", MPI_MAX_INFO_VAL, val, &flag);
      if (flag) snprintf(sharedfp, sizeof sharedfp, "%s", val);
      PMPI_Info_free(&got);
    }
  }
  int rank = -1, up = 0;
  PMPI_Initialized(&up);
  if (up) PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  char line[8192];
  snprintf(line, sizeof line, "open rank=%d by=%s sharedfp=%s rc=%d %s\n", rank, by, sharedfp, rc,
           filename ? filename : "(null)");
  note(line);
  return rc;
}

EXPORT int MPI_File_open(MPI_Comm comm, const char *filename, int amode, MPI_Info info,
                         MPI_File *fh) {
  return probed_open("MPI_File_open", comm, filename, amode, info, fh);
}

EXPORT int PMPI_File_open(MPI_Comm comm, const char *filename, int amode, MPI_Info info,
                          MPI_File *fh) {
  return probed_open("PMPI_File_open", comm, filename, amode, info, fh);
}
