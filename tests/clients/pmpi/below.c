/* A PMPI tool below pario: it defines the PMPI_ names of MPI's collective operations (and the
 * communicator constructors, which are collective too), counts each call and forwards it to
 * the MPI library's (dlsym RTLD_NEXT). pario calls the PMPI_ names itself, so preloaded beside
 * it (LD_PRELOAD="libpario.so below.so") the tool sees every collective pario makes, and none
 * of the application's MPI_ calls (those reach the MPI library's MPI_ names directly).
 * viewloop.c asks for the counts with pario_below_count. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <string.h>

#include <mpi.h>

#define EXPORT __attribute__((visibility("default")))

#define CALLS(X)                                                                                        \
  X(Allreduce, (const void *a, void *b, int n, MPI_Datatype t, MPI_Op o, MPI_Comm c), (a, b, n, t, o, c))  \
  X(Iallreduce, (const void *a, void *b, int n, MPI_Datatype t, MPI_Op o, MPI_Comm c, MPI_Request *r),  \
    (a, b, n, t, o, c, r))                                                                              \
  X(Allgather, (const void *a, int n, MPI_Datatype t, void *b, int m, MPI_Datatype u, MPI_Comm c),      \
    (a, n, t, b, m, u, c))                                                                              \
  X(Iallgather,                                                                                         \
    (const void *a, int n, MPI_Datatype t, void *b, int m, MPI_Datatype u, MPI_Comm c, MPI_Request *r), \
    (a, n, t, b, m, u, c, r))                                                                           \
  X(Allgatherv,                                                                                         \
    (const void *a, int n, MPI_Datatype t, void *b, const int *m, const int *d, MPI_Datatype u,         \
     MPI_Comm c),                                                                                       \
    (a, n, t, b, m, d, u, c))                                                                           \
  X(Iallgatherv,                                                                                        \
    (const void *a, int n, MPI_Datatype t, void *b, const int *m, const int *d, MPI_Datatype u,         \
     MPI_Comm c, MPI_Request *r),                                                                       \
    (a, n, t, b, m, d, u, c, r))                                                                        \
  X(Bcast, (void *a, int n, MPI_Datatype t, int root, MPI_Comm c), (a, n, t, root, c))                  \
  X(Ibcast, (void *a, int n, MPI_Datatype t, int root, MPI_Comm c, MPI_Request *r), (a, n, t, root, c, r)) \
  X(Barrier, (MPI_Comm c), (c))                                                                         \
  X(Ibarrier, (MPI_Comm c, MPI_Request *r), (c, r))                                                     \
  X(Gather, (const void *a, int n, MPI_Datatype t, void *b, int m, MPI_Datatype u, int root, MPI_Comm c), \
    (a, n, t, b, m, u, root, c))                                                                        \
  X(Gatherv,                                                                                            \
    (const void *a, int n, MPI_Datatype t, void *b, const int *m, const int *d, MPI_Datatype u,         \
     int root, MPI_Comm c),                                                                             \
    (a, n, t, b, m, d, u, root, c))                                                                     \
  X(Scatterv,                                                                                           \
    (const void *a, const int *n, const int *d, MPI_Datatype t, void *b, int m, MPI_Datatype u,         \
     int root, MPI_Comm c),                                                                             \
    (a, n, d, t, b, m, u, root, c))                                                                     \
  X(Iscatter,                                                                                           \
    (const void *a, int n, MPI_Datatype t, void *b, int m, MPI_Datatype u, int root, MPI_Comm c,        \
     MPI_Request *r),                                                                                   \
    (a, n, t, b, m, u, root, c, r))                                                                     \
  X(Alltoall, (const void *a, int n, MPI_Datatype t, void *b, int m, MPI_Datatype u, MPI_Comm c),       \
    (a, n, t, b, m, u, c))                                                                              \
  X(Alltoallv,                                                                                          \
    (const void *a, const int *n, const int *d, MPI_Datatype t, void *b, const int *m, const int *e,    \
     MPI_Datatype u, MPI_Comm c),                                                                       \
    (a, n, d, t, b, m, e, u, c))                                                                        \
  X(Reduce, (const void *a, void *b, int n, MPI_Datatype t, MPI_Op o, int root, MPI_Comm c),            \
    (a, b, n, t, o, root, c))                                                                           \
  X(Comm_dup, (MPI_Comm c, MPI_Comm *d), (c, d))                                                        \
  X(Comm_split, (MPI_Comm c, int color, int key, MPI_Comm *d), (c, color, key, d))                      \
  X(Comm_split_type, (MPI_Comm c, int type, int key, MPI_Info i, MPI_Comm *d), (c, type, key, i, d))

#define ENUM(name, params, args) C_##name,
enum { CALLS(ENUM) NCALLS };
#define NAME(name, params, args) #name,
static const char *const names[NCALLS] = {CALLS(NAME)};
static atomic_long counts[NCALLS];

/* Calls of NAME ("Iallreduce") so far in this process; "total": all of them; -1: not wrapped. */
EXPORT long pario_below_count(const char *name) {
  long sum = 0;
  for (int i = 0; i < NCALLS; i++) {
    if (!strcmp(name, names[i])) return atomic_load(&counts[i]);
    sum += atomic_load(&counts[i]);
  }
  return strcmp(name, "total") ? -1 : sum;
}

/* The name of wrapped call i (NULL past the last), for a program that lists them. */
EXPORT const char *pario_below_name(int i) { return i >= 0 && i < NCALLS ? names[i] : NULL; }

#define WRAP(name, params, args)                                                     \
  EXPORT int PMPI_##name params {                                                    \
    static int(*next) params;                                                        \
    if (!next) *(void **)&next = dlsym(RTLD_NEXT, "PMPI_" #name);                    \
    atomic_fetch_add(&counts[C_##name], 1);                                          \
    return next args;                                                                \
  }
CALLS(WRAP)
