/* A PMPI tool below pario: it defines the PMPI_ names of MPI's collective operations (and the
 * communicator constructors, which are collective too), counts each call and forwards it to
 * the MPI library's (dlsym RTLD_NEXT). pario calls the PMPI_ names itself, so preloaded beside
 * it (LD_PRELOAD="libpario.so below.so") the tool sees every collective pario makes, and none
 * of the application's MPI_ calls (those reach the MPI library's MPI_ names directly). It
 * wraps the point-to-point calls too, for the bytes pario receives (pario_below_bytes).
 * viewloop.c asks for the counts with pario_below_count; tests/multinode/scale.c also for the
 * bytes of pario's point-to-point sends (pario_below_sent). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <string.h>

#include <mpi.h>

#define EXPORT __attribute__((visibility("default")))

#define CALLS(X) \
  X(Allreduce, (const void *a, void *b, int n, MPI_Datatype t, MPI_Op o, MPI_Comm c), (a, b, n, t, o, c), sz(t, n)) \
  X(Iallreduce, (const void *a, void *b, int n, MPI_Datatype t, MPI_Op o, MPI_Comm c, MPI_Request *r), (a, b, n, t, o, c, r), sz(t, n)) \
  X(Allgather, (const void *a, int n, MPI_Datatype t, void *b, int m, MPI_Datatype u, MPI_Comm c), (a, n, t, b, m, u, c), sz(u, m) * np_of(c)) \
  X(Iallgather, (const void *a, int n, MPI_Datatype t, void *b, int m, MPI_Datatype u, MPI_Comm c, MPI_Request *r), (a, n, t, b, m, u, c, r), sz(u, m) * np_of(c)) \
  X(Allgatherv, (const void *a, int n, MPI_Datatype t, void *b, const int *m, const int *d, MPI_Datatype u, MPI_Comm c), (a, n, t, b, m, d, u, c), sum(m, c, u)) \
  X(Iallgatherv, (const void *a, int n, MPI_Datatype t, void *b, const int *m, const int *d, MPI_Datatype u, MPI_Comm c, MPI_Request *r), (a, n, t, b, m, d, u, c, r), sum(m, c, u)) \
  X(Bcast, (void *a, int n, MPI_Datatype t, int root, MPI_Comm c), (a, n, t, root, c), sz(t, n)) \
  X(Ibcast, (void *a, int n, MPI_Datatype t, int root, MPI_Comm c, MPI_Request *r), (a, n, t, root, c, r), sz(t, n)) \
  X(Barrier, (MPI_Comm c), (c), 0) \
  X(Ibarrier, (MPI_Comm c, MPI_Request *r), (c, r), 0) \
  X(Gather, (const void *a, int n, MPI_Datatype t, void *b, int m, MPI_Datatype u, int root, MPI_Comm c), (a, n, t, b, m, u, root, c), 0) \
  X(Gatherv, (const void *a, int n, MPI_Datatype t, void *b, const int *m, const int *d, MPI_Datatype u, int root, MPI_Comm c), (a, n, t, b, m, d, u, root, c), 0) \
  X(Scatterv, (const void *a, const int *n, const int *d, MPI_Datatype t, void *b, int m, MPI_Datatype u, int root, MPI_Comm c), (a, n, d, t, b, m, u, root, c), 0) \
  X(Iscatter, (const void *a, int n, MPI_Datatype t, void *b, int m, MPI_Datatype u, int root, MPI_Comm c,              MPI_Request *r), (a, n, t, b, m, u, root, c, r), 0) \
  X(Alltoall, (const void *a, int n, MPI_Datatype t, void *b, int m, MPI_Datatype u, MPI_Comm c), (a, n, t, b, m, u, c), sz(u, m) * np_of(c)) \
  X(Alltoallv, (const void *a, const int *n, const int *d, MPI_Datatype t, void *b, const int *m, const int *e, MPI_Datatype u, MPI_Comm c), (a, n, d, t, b, m, e, u, c), 0) \
  X(Reduce, (const void *a, void *b, int n, MPI_Datatype t, MPI_Op o, int root, MPI_Comm c), (a, b, n, t, o, root, c), 0) \
  X(Comm_dup, (MPI_Comm c, MPI_Comm *d), (c, d), 0) \
  X(Comm_split, (MPI_Comm c, int color, int key, MPI_Comm *d), (c, color, key, d), 0) \
  X(Comm_split_type, (MPI_Comm c, int type, int key, MPI_Info i, MPI_Comm *d), (c, type, key, i, d), 0) \
  X(Send, (const void *a, int n, MPI_Datatype t, int dest, int tag, MPI_Comm c), (a, n, t, dest, tag, c), out(t, n)) \
  X(Isend, (const void *a, int n, MPI_Datatype t, int dest, int tag, MPI_Comm c, MPI_Request *r), (a, n, t, dest, tag, c, r), out(t, n)) \
  X(Recv, (void *a, int n, MPI_Datatype t, int src, int tag, MPI_Comm c, MPI_Status *st), (a, n, t, src, tag, c, st), sz(t, n)) \
  X(Irecv, (void *a, int n, MPI_Datatype t, int src, int tag, MPI_Comm c, MPI_Request *r), (a, n, t, src, tag, c, r), sz(t, n))

#define ENUM(name, params, args, bytes) C_##name,
enum { CALLS(ENUM) NCALLS };
#define NAME(name, params, args, bytes) #name,
static const char *const names[NCALLS] = {CALLS(NAME)};
static atomic_long counts[NCALLS], sent[NCALLS];

/* Bytes of n items of t. */
static long sz(MPI_Datatype t, int n) {
  int s = 0;
  PMPI_Type_size(t, &s);
  return (long)s * n;
}

static long np_of(MPI_Comm c) {
  int n = 0;
  PMPI_Comm_size(c, &n);
  return n;
}

/* Bytes pario passed to point-to-point sends (pario_below_sent); 0 for the received bytes. */
static atomic_long sent_p2p;
static long out(MPI_Datatype t, int n) {
  atomic_fetch_add(&sent_p2p, sz(t, n));
  return 0;
}

EXPORT long pario_below_sent(void) { return atomic_load(&sent_p2p); }

/* Bytes of a v-collective's receive counts. */
static long sum(const int *m, MPI_Comm c, MPI_Datatype u) {
  long n = 0, p = np_of(c);
  for (long i = 0; i < p; i++) n += m[i];
  return sz(u, (int)n);
}

/* Calls of NAME ("Iallreduce") so far in this process; "total": all of them but the
 * point-to-point calls (Send, Isend, Recv, Irecv, wrapped last); -1: not wrapped. */
EXPORT long pario_below_count(const char *name) {
  long sum = 0;
  for (int i = 0; i < NCALLS; i++) {
    if (!strcmp(name, names[i])) return atomic_load(&counts[i]);
    if (i < C_Send) sum += atomic_load(&counts[i]);
  }
  return strcmp(name, "total") ? -1 : sum;
}

/* Bytes this rank received so far: the receive buffers of the all-to-all collectives
 * (allreduce, allgather(v), bcast, alltoall) and of point-to-point receives, as posted (the
 * rooted ones and Alltoallv are not counted: 0). */
EXPORT long pario_below_bytes(void) {
  long sum = 0;
  for (int i = 0; i < NCALLS; i++) sum += atomic_load(&sent[i]);
  return sum;
}

/* The name of wrapped call i (NULL past the last), for a program that lists them. */
EXPORT const char *pario_below_name(int i) { return i >= 0 && i < NCALLS ? names[i] : NULL; }

#define WRAP(name, params, args, bytes)                                              \
  EXPORT int PMPI_##name params {                                                    \
    static int(*next) params;                                                        \
    if (!next) *(void **)&next = dlsym(RTLD_NEXT, "PMPI_" #name);                    \
    atomic_fetch_add(&counts[C_##name], 1);                                          \
    atomic_fetch_add(&sent[C_##name], bytes);                                        \
    return next args;                                                                \
  }
CALLS(WRAP)
