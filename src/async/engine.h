/* The asynchronous engine: I/O worker threads execute nonblocking operations while the
 * application computes, and complete them as MPI generalized requests, so MPI_Wait/Test and
 * friends work on any mix of pario and MPI requests. Its per-file state (operations in
 * flight, the order of nonblocking collectives, the active split collective) hangs off the
 * file through core's lifecycle hooks; close, sync, set_info and set_atomicity drain it. */
#ifndef PARIO_ENGINE_H
#define PARIO_ENGINE_H

#include "core/file.h"

typedef struct pario_job pario_job;

/* Start a data access (as pario_access, under snapshot s, which the job copies) in the
 * background. With req, *req becomes a generalized request whose status carries the byte
 * count and whose error is the access's error code; without, *handle is waited for with
 * pario_engine_wait (split collectives). The datatype is duplicated, so the caller may free
 * its own handle at once. */
int pario_engine_submit(pario_file *f, const pario_snap *s, const char *op, int rw, MPI_Offset pos,
                        void *buf, MPI_Count count, MPI_Datatype type, MPI_Request *req, pario_job **handle);

/* The same for a nonblocking collective: it runs pario_coll_access on the file's nonblocking
 * context (created here, in the application's thread), and the engine runs the collectives of
 * one file in the order they were started, as on every other rank. With neither req nor
 * handle, nobody waits for the job (a rank taking part in a collective whose arguments were
 * wrong on this rank). */
int pario_engine_submit_coll(pario_file *f, const pario_snap *s, const char *op, int rw, MPI_Offset pos,
                             void *buf, MPI_Count count, MPI_Datatype type, MPI_Request *req,
                             pario_job **handle);

/* Wait for a job started without a request; returns its error code, frees it. */
int pario_engine_wait(pario_job *j, MPI_Count *bytes);

/* Split collectives: at most one per file at a time. kind tells which end matches it. */
int pario_engine_split_active(pario_file *f);
void pario_engine_split_start(pario_file *f, pario_job *j, int kind);
/* The active split collective if it is of this kind (it is no longer active), else NULL. */
pario_job *pario_engine_split_take(pario_file *f, int kind);

/* MPI_Wait and friends, before the host MPI polls: when r is a request of pario's, wait for
 * its job without spinning (a job no worker has taken yet runs in the caller), so that the
 * host's wait only collects the result; any other request returns at once. */
void pario_engine_wait_request(MPI_Request r);
/* MPI_Waitany/Waitsome: when every active request in reqs is pario's and none has finished,
 * sleep until one finishes; otherwise return at once. */
void pario_engine_wait_some(int n, const MPI_Request *reqs);

/* Tracing: when r is a request of pario's, its job's trace id (the `job` of its queued and job
 * events) and its file's id, and 1; else 0. Look it up before the host frees the request. */
int pario_engine_request_job(MPI_Request r, uint64_t *job_id, unsigned long long *file);

#endif
