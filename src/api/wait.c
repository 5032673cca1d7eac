/* MPI_Wait, MPI_Waitall, MPI_Waitany, MPI_Waitsome in front of the host MPI's. MPI libraries
 * busy-poll in their waits; for a file request that only burns the CPU the I/O thread needs
 * (with more ranks than cores, a waiting rank made nonblocking I/O slower than blocking
 * I/O; docs/async.md). For pario's requests the wait sleeps on the job instead, or runs a job no
 * worker has taken yet, and then lets the host MPI collect the finished request. Every other
 * request goes straight to the host, after one atomic load. Only the MPI_ names are defined:
 * a PMPI tool that wraps MPI_Wait still reaches the host's PMPI_Wait.
 * Tracing on, a wait or test that completes pario requests is a span (cat api) naming the job
 * of the first one (the `job` of its queued and job events), its file and how many there were;
 * MPI_Test* are defined for that alone and go straight to the host when tracing is off. */
#include <stdlib.h>

#include "async/engine.h"
#include "trace/trace.h"

/* Jobs of the pario requests among reqs, looked up before the host frees them (job 0: not
 * pario's). NULL when none is pario's or memory is short (the call is then not traced). */
static uint64_t *jobs_of(int n, const MPI_Request *reqs, unsigned long long *files) {
  if (!reqs || n <= 0) return NULL;
  uint64_t *jobs = calloc((size_t)n, sizeof *jobs);
  int any = 0;
  for (int i = 0; jobs && i < n; i++) {
    files[i] = 0;
    any |= pario_engine_request_job(reqs[i], &jobs[i], &files[i]);
  }
  if (!any) free(jobs);
  return any ? jobs : NULL;
}

/* The span of a call that completed the pario requests at idx[0..k) (all of them: idx NULL). */
static void completed(const char *op, uint64_t t0, int rc, int n, const uint64_t *jobs,
                      const unsigned long long *files, const int *idx, int k) {
  int first = -1, count = 0;
  for (int i = 0; i < (idx ? k : n); i++) {
    int at = idx ? idx[i] : i;
    if (at < 0 || at >= n || !jobs[at]) continue;
    if (first < 0) first = at;
    count++;
  }
  if (count)
    PARIO_TRACE_SPAN(PARIO_TC_API, op, t0, PARIO_TA("file", files[first]), PARIO_TA("rc", rc),
                     PARIO_TA("job", jobs[first]), PARIO_TA("requests", count));
}

/* Tracing on: look the requests up, make the call, record what it completed. */
#define TRACED_COMPLETION(op, n, reqs, call, is_done, idx, k)                 \
  do {                                                                        \
    uint64_t t0_ = pario_trace_now();                                         \
    unsigned long long *files_ = calloc((size_t)((n) > 0 ? (n) : 1), sizeof *files_); \
    uint64_t *jobs_ = files_ ? jobs_of((n), (reqs), files_) : NULL;           \
    int rc_ = (call);                                                         \
    if (jobs_ && (is_done)) completed((op), t0_, rc_, (n), jobs_, files_, (idx), (k)); \
    free(jobs_);                                                              \
    free(files_);                                                             \
    return rc_;                                                               \
  } while (0)

static int wait_one(MPI_Request *request, MPI_Status *status) {
  if (request) pario_engine_wait_request(*request);
  return PMPI_Wait(request, status);
}

PARIO_EXPORT int MPI_Wait(MPI_Request *request, MPI_Status *status) {
  if (PARIO_TRACING() && request)
    TRACED_COMPLETION("MPI_Wait", 1, request, wait_one(request, status), 1, NULL, 0);
  return wait_one(request, status);
}

static int wait_all(int count, MPI_Request requests[], MPI_Status statuses[]) {
  for (int i = 0; requests && i < count; i++) pario_engine_wait_request(requests[i]);
  return PMPI_Waitall(count, requests, statuses);
}

PARIO_EXPORT int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
  if (PARIO_TRACING()) TRACED_COMPLETION("MPI_Waitall", count, requests, wait_all(count, requests, statuses), 1, NULL, 0);
  return wait_all(count, requests, statuses);
}

static int wait_any(int count, MPI_Request requests[], int *index, MPI_Status *status) {
  if (requests && count > 0) pario_engine_wait_some(count, requests);
  return PMPI_Waitany(count, requests, index, status);
}

PARIO_EXPORT int MPI_Waitany(int count, MPI_Request requests[], int *index, MPI_Status *status) {
  if (PARIO_TRACING() && index)
    TRACED_COMPLETION("MPI_Waitany", count, requests, wait_any(count, requests, index, status), 1, index, 1);
  return wait_any(count, requests, index, status);
}

static int wait_some(int incount, MPI_Request requests[], int *outcount, int indices[], MPI_Status statuses[]) {
  if (requests && incount > 0) pario_engine_wait_some(incount, requests);
  return PMPI_Waitsome(incount, requests, outcount, indices, statuses);
}

PARIO_EXPORT int MPI_Waitsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                              MPI_Status statuses[]) {
  if (PARIO_TRACING() && outcount && indices)
    TRACED_COMPLETION("MPI_Waitsome", incount, requests, wait_some(incount, requests, outcount, indices, statuses),
                      *outcount != MPI_UNDEFINED, indices, *outcount);
  return wait_some(incount, requests, outcount, indices, statuses);
}

/* The tests: a span only when a pario request completed (a polling loop leaves no trail). */
PARIO_EXPORT int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status) {
  if (PARIO_TRACING() && request && flag)
    TRACED_COMPLETION("MPI_Test", 1, request, PMPI_Test(request, flag, status), *flag, NULL, 0);
  return PMPI_Test(request, flag, status);
}

PARIO_EXPORT int MPI_Testall(int count, MPI_Request requests[], int *flag, MPI_Status statuses[]) {
  if (PARIO_TRACING() && flag)
    TRACED_COMPLETION("MPI_Testall", count, requests, PMPI_Testall(count, requests, flag, statuses), *flag, NULL, 0);
  return PMPI_Testall(count, requests, flag, statuses);
}

PARIO_EXPORT int MPI_Testany(int count, MPI_Request requests[], int *index, int *flag, MPI_Status *status) {
  if (PARIO_TRACING() && index && flag)
    TRACED_COMPLETION("MPI_Testany", count, requests, PMPI_Testany(count, requests, index, flag, status),
                      *flag && *index != MPI_UNDEFINED, index, 1);
  return PMPI_Testany(count, requests, index, flag, status);
}

PARIO_EXPORT int MPI_Testsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                              MPI_Status statuses[]) {
  if (PARIO_TRACING() && outcount && indices)
    TRACED_COMPLETION("MPI_Testsome", incount, requests, PMPI_Testsome(incount, requests, outcount, indices, statuses),
                      *outcount != MPI_UNDEFINED && *outcount > 0, indices, *outcount);
  return PMPI_Testsome(incount, requests, outcount, indices, statuses);
}
