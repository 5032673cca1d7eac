/* Communication helpers every layer uses: agreement on a result, checking that ranks passed
 * the same value, waits that do not spin while other ranks need the core, and the clock.
 * They sit in core beneath every layer, so calling them is always a call down. */
#ifndef PARIO_COMM_H
#define PARIO_COMM_H

#include "core/common.h"

/* MPI_Waitall that sleeps between polls after a short spin (bulk exchanges). */
void pario_wait_all(int n, MPI_Request *reqs, MPI_Status *st);
/* The same for small collectives whose latency matters: polls yield the core for a while
 * before the wait starts to sleep. */
void pario_wait_all_short(int n, MPI_Request *reqs, MPI_Status *st);
/* Agreement among the ranks of comm: returns the worst error class seen anywhere
 * (MPI_SUCCESS when all succeeded). */
int pario_agree(MPI_Comm comm, int local_code);
/* Polite MPI_MAX allreduce of n values (MPI_SUCCESS or MPI_ERR_OTHER). */
int pario_allreduce_max(void *in, void *out, int n, MPI_Datatype type, MPI_Comm comm);
/* MPI_ERR_NOT_SAME (as a code naming op and file) unless every rank passed the same value. */
int pario_check_same(MPI_Comm comm, const char *op, const char *file, const char *what, long long value);
/* CLOCK_MONOTONIC in nanoseconds. */
long pario_mono_ns(void);

#endif
