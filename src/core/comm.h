/* Communication helpers every layer uses: agreement on a result, checking that ranks passed
 * the same value, waits that do not spin while other ranks need the core, and the clock.
 * They sit in core beneath every layer, so calling them is always a call down. */
#ifndef PARIO_COMM_H
#define PARIO_COMM_H

#include "core/common.h"

/* The polite waits' settings, process-wide (every file's hints set them, the last one wins):
 * mode PARIO_AUTO, PARIO_WAIT_SPIN or PARIO_WAIT_NAP (core/hints.h), the longest nap and how
 * long short waits yield before napping, in microseconds. PARIO_AUTO spins (polls that yield
 * the core to whatever else is runnable, for up to 20 ms before a nap) when this node's ranks
 * of the job do not outnumber its online CPUs and its load average does not exceed them, and
 * naps otherwise; the count comes from the launcher's environment (OMPI_COMM_WORLD_LOCAL_SIZE,
 * MPI_LOCALNRANKS, PMI_LOCAL_SIZE), unknown counts nap; decided at the first wait. Until a
 * file sets them, the defaults with PARIO_AUTO. */
void pario_wait_tune(int mode, long long nap_max_us, long long yield_us);
/* Whether the waits spin now (dedicated cores; sharedfp/addproc.c naps where they do not). */
int pario_wait_spins(void);
/* pario_timeout, process-wide like the settings above (every file's hints set it, the last
 * one wins): how long, in ms, every wait below may last (0: for ever, the default). A wait
 * that reaches it returns MPI_ERR_OTHER with its requests left pending, and latches the
 * process: from then on every wait fails at once and the agreements post nothing, so no
 * collective call of pario starts new communication among ranks that may have lost a peer. */
void pario_wait_timeout(long long ms);
/* The latch: the timeout (ms) that expired in a wait of this process, 0 while none did. */
long long pario_wait_stuck_ms(void);
/* An MPI_ERR_OTHER code naming op and file: after the latch, "no answer from the other ranks
 * within S s (pario_timeout)..."; else a failed communication among the ranks. */
int pario_comm_err(const char *op, const char *file);
/* MPI_Waitall that sleeps between polls after a short spin (bulk exchanges); returns the
 * tests' error code, or MPI_ERR_OTHER when pario_timeout expired (the latch is then set). */
int pario_wait_all(int n, MPI_Request *reqs, MPI_Status *st);
/* The same for small collectives whose latency matters: polls yield the core for a while
 * before the wait starts to sleep. */
int pario_wait_all_short(int n, MPI_Request *reqs, MPI_Status *st);
/* One request, napping between polls at once (after the short spin); returns the test's
 * error code, and stops at the first error. */
int pario_wait_nap(MPI_Request *r);
/* Agreement among the ranks of comm: returns the worst error class seen anywhere
 * (MPI_SUCCESS when all succeeded; MPI_ERR_OTHER at once after the latch). */
int pario_agree(MPI_Comm comm, int local_code);
/* The outcome of a collective call on every rank (one small allreduce): MPI_SUCCESS when every
 * rank succeeded; else every rank returns the worst class seen: local_code where it has that
 * class, otherwise a new code whose message says "the <what> failed on rank N" (the lowest
 * rank with that class) and names op and file. quick: the agreement's latency is the call's
 * cost (small accesses), so the wait yields before it naps (pario_wait_all_short); else it
 * naps at once, leaving the core to ranks still moving data (pario_wait_all). After the
 * latch (a wait gave up, here or before): pario_comm_err's timeout error, without posting. */
int pario_agree_call(MPI_Comm comm, int local_code, const char *op, const char *file, const char *what, int quick);
/* Polite MPI_MAX allreduce of n values (MPI_SUCCESS or MPI_ERR_OTHER). */
int pario_allreduce_max(void *in, void *out, int n, MPI_Datatype type, MPI_Comm comm);
/* Collective: *same = 1 when every rank passed the same value (MPI_SUCCESS or MPI_ERR_OTHER). */
int pario_same_everywhere(MPI_Comm comm, long long value, int *same);
/* MPI_ERR_NOT_SAME (as a code naming op and file) unless every rank passed the same value. */
int pario_check_same(MPI_Comm comm, const char *op, const char *file, const char *what, long long value);
/* Collective: MPI_Comm_dup of comm for pario's own use, with MPI_ERRORS_RETURN set on the
 * duplicate, so that a failure inside pario (a window that cannot be made, a lost node)
 * returns a code to pario instead of running the user's (often fatal) handler: every
 * internal communicator comes from here. MPI_Comm_idup and a polite wait (pario_timeout
 * bounds it). *out is MPI_COMM_NULL on failure. */
int pario_comm_dup_private(MPI_Comm comm, MPI_Comm *out);
/* CLOCK_MONOTONIC in nanoseconds. */
long pario_mono_ns(void);
/* A non-negative hash (FNV-1a) of n bytes of a name. */
long long pario_name_hash(const char *s, size_t n);
/* This host's identity: a hash of MPI_Get_processor_name, non-negative. Equal names mean one
 * kernel, hence one CLOCK_MONOTONIC. */
long long pario_host_id(void);

/* Clock alignment to rank 0 (collective over comm; docs/design.md#clock-alignment).
 * On return, pario_mono_ns() + *offset_ns estimates rank 0's pario_mono_ns() at the same
 * instant, to within +-*err_ns (a bound, not a statistic: the true offset at the time of the
 * call lies in that interval whenever messages cannot arrive before they are sent). Rank 0
 * drives: one peer at a time, batches of PARIO_CLOCK_ROUNDS round trips (2 to
 * PARIO_CLOCK_BATCHES, until a batch hardly helps), keeping the intersection of the intervals
 * each round trip allows (at most the shortest round trip's; Cristian's algorithm).
 * With by_host (the normal case), ranks with the same processor name share one clock: ranks on
 * rank 0's host get 0 exactly, without messages, and only the lowest rank of every other host
 * is measured; its result is every rank of that host's. by_host 0 measures every rank but 0 on
 * its own (tests; hosts whose names do not identify a clock). Waiting ranks nap instead of
 * spinning, so the measured pair keeps the cores. Uses point-to-point messages with tag
 * PARIO_CLOCK_TAG on comm: the caller must not receive that tag on comm meanwhile.
 * Returns MPI_SUCCESS, MPI_ERR_NO_MEM (on every rank) or MPI_ERR_OTHER (an MPI call failed). */
enum { PARIO_CLOCK_TAG = 0x5043, PARIO_CLOCK_ROUNDS = 16, PARIO_CLOCK_BATCHES = 8 };
int pario_clock_offset(MPI_Comm comm, int by_host, long long *offset_ns, long long *err_ns);

#endif
