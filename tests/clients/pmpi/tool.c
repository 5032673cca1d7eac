/* A PMPI tool, as Darshan or a profiler is one: it defines MPI_File_* names, counts each call
 * and forwards it to the PMPI_File_* name. Preloaded ahead of pario
 * (LD_PRELOAD="tool.so libpario.so") the application's MPI_File_* calls reach the tool and its
 * PMPI_File_* calls reach pario, whose MPI_File_* names are only weak aliases of them. Natively
 * (LD_PRELOAD=tool.so) they reach the MPI library's.
 *
 * pmpi_app asks the tool for its counts (pario_clients_tool_count) and for the object that
 * serves the tool's PMPI_File_open (pario_clients_tool_pmpi_object). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <string.h>

#include <mpi.h>

#define EXPORT __attribute__((visibility("default")))

enum {
  T_OPEN, T_CLOSE, T_DELETE, T_SET_VIEW, T_GET_VIEW, T_SET_INFO, T_GET_INFO, T_SET_SIZE,
  T_GET_SIZE, T_SYNC, T_SEEK, T_READ, T_WRITE, T_READ_AT, T_WRITE_AT, T_READ_ALL, T_WRITE_ALL,
  T_READ_AT_ALL, T_WRITE_AT_ALL, T_IREAD_AT, T_IWRITE_AT, T_IREAD, T_IWRITE, T_WRITE_SHARED,
  T_READ_SHARED, T_SET_ATOMICITY, T_NCALLS
};
static const char *const names[T_NCALLS] = {
  "MPI_File_open", "MPI_File_close", "MPI_File_delete", "MPI_File_set_view",
  "MPI_File_get_view", "MPI_File_set_info", "MPI_File_get_info", "MPI_File_set_size",
  "MPI_File_get_size", "MPI_File_sync", "MPI_File_seek", "MPI_File_read", "MPI_File_write",
  "MPI_File_read_at", "MPI_File_write_at", "MPI_File_read_all", "MPI_File_write_all",
  "MPI_File_read_at_all", "MPI_File_write_at_all", "MPI_File_iread_at", "MPI_File_iwrite_at",
  "MPI_File_iread", "MPI_File_iwrite", "MPI_File_write_shared", "MPI_File_read_shared",
  "MPI_File_set_atomicity"};
static atomic_int counts[T_NCALLS];

#define COUNT(t) atomic_fetch_add(&counts[t], 1)

/* Number of calls of NAME seen so far in this process; -1 for a name the tool does not wrap. */
EXPORT int pario_clients_tool_count(const char *name) {
  for (int i = 0; i < T_NCALLS; i++)
    if (strcmp(name, names[i]) == 0) return atomic_load(&counts[i]);
  return -1;
}
/* The name of the i-th wrapped function (NULL past the end). */
EXPORT const char *pario_clients_tool_name(int i) { return i >= 0 && i < T_NCALLS ? names[i] : NULL; }
/* The object that defines the PMPI_File_open the tool forwards to. */
EXPORT const char *pario_clients_tool_pmpi_object(void) {
  Dl_info info;
  void *p = dlsym(RTLD_NEXT, "PMPI_File_open");
  if (p == NULL || dladdr(p, &info) == 0 || info.dli_fname == NULL) return "(unresolved)";
  return info.dli_fname;
}

EXPORT int MPI_File_open(MPI_Comm comm, const char *filename, int amode, MPI_Info info, MPI_File *fh) {
  COUNT(T_OPEN);
  return PMPI_File_open(comm, filename, amode, info, fh);
}
EXPORT int MPI_File_close(MPI_File *fh) { COUNT(T_CLOSE); return PMPI_File_close(fh); }
EXPORT int MPI_File_delete(const char *filename, MPI_Info info) {
  COUNT(T_DELETE);
  return PMPI_File_delete(filename, info);
}
EXPORT int MPI_File_set_view(MPI_File fh, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype,
                             const char *datarep, MPI_Info info) {
  COUNT(T_SET_VIEW);
  return PMPI_File_set_view(fh, disp, etype, filetype, datarep, info);
}
EXPORT int MPI_File_get_view(MPI_File fh, MPI_Offset *disp, MPI_Datatype *etype, MPI_Datatype *filetype,
                             char *datarep) {
  COUNT(T_GET_VIEW);
  return PMPI_File_get_view(fh, disp, etype, filetype, datarep);
}
EXPORT int MPI_File_set_info(MPI_File fh, MPI_Info info) { COUNT(T_SET_INFO); return PMPI_File_set_info(fh, info); }
EXPORT int MPI_File_get_info(MPI_File fh, MPI_Info *info) { COUNT(T_GET_INFO); return PMPI_File_get_info(fh, info); }
EXPORT int MPI_File_set_size(MPI_File fh, MPI_Offset size) { COUNT(T_SET_SIZE); return PMPI_File_set_size(fh, size); }
EXPORT int MPI_File_get_size(MPI_File fh, MPI_Offset *size) { COUNT(T_GET_SIZE); return PMPI_File_get_size(fh, size); }
EXPORT int MPI_File_sync(MPI_File fh) { COUNT(T_SYNC); return PMPI_File_sync(fh); }
EXPORT int MPI_File_seek(MPI_File fh, MPI_Offset offset, int whence) {
  COUNT(T_SEEK);
  return PMPI_File_seek(fh, offset, whence);
}
EXPORT int MPI_File_set_atomicity(MPI_File fh, int flag) { COUNT(T_SET_ATOMICITY); return PMPI_File_set_atomicity(fh, flag); }
EXPORT int MPI_File_read(MPI_File fh, void *buf, int count, MPI_Datatype t, MPI_Status *st) {
  COUNT(T_READ);
  return PMPI_File_read(fh, buf, count, t, st);
}
EXPORT int MPI_File_write(MPI_File fh, const void *buf, int count, MPI_Datatype t, MPI_Status *st) {
  COUNT(T_WRITE);
  return PMPI_File_write(fh, buf, count, t, st);
}
EXPORT int MPI_File_read_at(MPI_File fh, MPI_Offset off, void *buf, int count, MPI_Datatype t, MPI_Status *st) {
  COUNT(T_READ_AT);
  return PMPI_File_read_at(fh, off, buf, count, t, st);
}
EXPORT int MPI_File_write_at(MPI_File fh, MPI_Offset off, const void *buf, int count, MPI_Datatype t,
                             MPI_Status *st) {
  COUNT(T_WRITE_AT);
  return PMPI_File_write_at(fh, off, buf, count, t, st);
}
EXPORT int MPI_File_read_all(MPI_File fh, void *buf, int count, MPI_Datatype t, MPI_Status *st) {
  COUNT(T_READ_ALL);
  return PMPI_File_read_all(fh, buf, count, t, st);
}
EXPORT int MPI_File_write_all(MPI_File fh, const void *buf, int count, MPI_Datatype t, MPI_Status *st) {
  COUNT(T_WRITE_ALL);
  return PMPI_File_write_all(fh, buf, count, t, st);
}
EXPORT int MPI_File_read_at_all(MPI_File fh, MPI_Offset off, void *buf, int count, MPI_Datatype t,
                                MPI_Status *st) {
  COUNT(T_READ_AT_ALL);
  return PMPI_File_read_at_all(fh, off, buf, count, t, st);
}
EXPORT int MPI_File_write_at_all(MPI_File fh, MPI_Offset off, const void *buf, int count, MPI_Datatype t,
                                 MPI_Status *st) {
  COUNT(T_WRITE_AT_ALL);
  return PMPI_File_write_at_all(fh, off, buf, count, t, st);
}
EXPORT int MPI_File_iread_at(MPI_File fh, MPI_Offset off, void *buf, int count, MPI_Datatype t,
                             MPI_Request *req) {
  COUNT(T_IREAD_AT);
  return PMPI_File_iread_at(fh, off, buf, count, t, req);
}
EXPORT int MPI_File_iwrite_at(MPI_File fh, MPI_Offset off, const void *buf, int count, MPI_Datatype t,
                              MPI_Request *req) {
  COUNT(T_IWRITE_AT);
  return PMPI_File_iwrite_at(fh, off, buf, count, t, req);
}
EXPORT int MPI_File_iread(MPI_File fh, void *buf, int count, MPI_Datatype t, MPI_Request *req) {
  COUNT(T_IREAD);
  return PMPI_File_iread(fh, buf, count, t, req);
}
EXPORT int MPI_File_iwrite(MPI_File fh, const void *buf, int count, MPI_Datatype t, MPI_Request *req) {
  COUNT(T_IWRITE);
  return PMPI_File_iwrite(fh, buf, count, t, req);
}
EXPORT int MPI_File_write_shared(MPI_File fh, const void *buf, int count, MPI_Datatype t, MPI_Status *st) {
  COUNT(T_WRITE_SHARED);
  return PMPI_File_write_shared(fh, buf, count, t, st);
}
EXPORT int MPI_File_read_shared(MPI_File fh, void *buf, int count, MPI_Datatype t, MPI_Status *st) {
  COUNT(T_READ_SHARED);
  return PMPI_File_read_shared(fh, buf, count, t, st);
}
