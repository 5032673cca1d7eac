/* MPI_Wait, MPI_Waitall, MPI_Waitany, MPI_Waitsome in front of the host MPI's. MPI libraries
 * busy-poll in their waits; for a file request that only burns the CPU the I/O thread needs
 * (with more ranks than cores, a waiting rank made nonblocking I/O slower than blocking
 * I/O; docs/async.md). For pario's requests the wait sleeps on the job instead, or runs a job no
 * worker has taken yet, and then lets the host MPI collect the finished request. Every other
 * request goes straight to the host, after one atomic load. Only the MPI_ names are defined:
 * a PMPI tool that wraps MPI_Wait still reaches the host's PMPI_Wait. */
#include "async/engine.h"

PARIO_EXPORT int MPI_Wait(MPI_Request *request, MPI_Status *status) {
  if (request) pario_engine_wait_request(*request);
  return PMPI_Wait(request, status);
}

PARIO_EXPORT int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
  for (int i = 0; requests && i < count; i++) pario_engine_wait_request(requests[i]);
  return PMPI_Waitall(count, requests, statuses);
}

PARIO_EXPORT int MPI_Waitany(int count, MPI_Request requests[], int *index, MPI_Status *status) {
  if (requests && count > 0) pario_engine_wait_some(count, requests);
  return PMPI_Waitany(count, requests, index, status);
}

PARIO_EXPORT int MPI_Waitsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                              MPI_Status statuses[]) {
  if (requests && incount > 0) pario_engine_wait_some(incount, requests);
  return PMPI_Waitsome(incount, requests, outcount, indices, statuses);
}
