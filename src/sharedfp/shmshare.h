/* A POSIX shared-memory segment shared by the ranks that can reach it (addproc's segment on
 * rank 0's node, combine.c's per node). */
#ifndef PARIO_SHAREDFP_SHMSHARE_H
#define PARIO_SHAREDFP_SHMSHARE_H

#include <mpi.h>
#include <stddef.h>

/* Collective over comm. Its rank 0 makes segment name (len bytes, zero but for a random token
 * in the first 8) when make is set there; every rank that can open and map it and finds the
 * token there (a segment of that name made by anyone else is never taken) gets the mapping in
 * *out, the others NULL (ranks of other machines, with a /dev/shm of their own). The name is
 * removed once every rank has tried: the mappings stay, a crash leaves nothing behind.
 * Returns 1 on every rank when every rank mapped it, else 0. Unmap with munmap(*out, len). */
int pario_shm_share(MPI_Comm comm, int make, const char *name, size_t len, void **out);

#endif
