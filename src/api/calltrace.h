/* Trace points of the entry points: one span per MPI_File call, with the file, the position,
 * the bytes moved and a summary of the datatype. Cheap when tracing is off (the callers test
 * PARIO_TRACING() first; src/trace/trace.h). */
#ifndef PARIO_API_CALLTRACE_H
#define PARIO_API_CALLTRACE_H

#include "core/file.h"
#include "trace/trace.h"

/* What a data-access call moved. pos: byte position in the view's data stream (-1: none). */
typedef struct pario_call_data {
  MPI_Offset pos;
  MPI_Count count, bytes;
  MPI_Datatype type;
  int coll;
} pario_call_data;

/* The span of call op on file fh (which may be invalid or MPI_FILE_NULL), begun at t0, that
 * returned rc; d may be NULL for calls that move no data. */
void pario_api_trace(const char *op, uint64_t t0, MPI_File fh, int rc, const pario_call_data *d);
/* The same for a file given by its id (MPI_File_close, after the handle is gone). */
void pario_api_trace_id(const char *op, uint64_t t0, unsigned long long file, int rc);

/* PARIO_API_TRACED(op, fh, expr): evaluate expr (the call's int result), record its span, return it. */
#define PARIO_API_TRACED(op, fh, expr)                      \
  do {                                                      \
    uint64_t t0_ = PARIO_TRACE_T0();                        \
    int rc_ = (expr);                                       \
    if (PARIO_TRACING()) pario_api_trace((op), t0_, (fh), rc_, NULL); \
    return rc_;                                             \
  } while (0)

#endif
