/* Filtering at record time (PARIO_TRACE_FILTER or the hint pario_trace_filter): which calls and
 * files are traced, one data call in N, and a size cap on the trace file, so that a long job can
 * be traced within a budget. Decisions only; the recorder (trace.c) drops what they refuse. */
#ifndef PARIO_TRACE_FILTER_H
#define PARIO_TRACE_FILTER_H

#include <stddef.h>
#include <stdint.h>

/* Parse "calls=GLOB,GLOB;files=GLOB,...;tools=GLOB,...;sample=N;max_size=SIZE" (any subset, in any order) and
 * make it the filter, unless one is set already (the first wins). 0, or -1 with why set (the
 * filter is then left unset). */
int pario_trace_filter_set(const char *spec, char *why, size_t whylen);
int pario_trace_filter_active(void);
const char *pario_trace_filter_spec(void);
/* A file opened: 1 if its events are traced, 0 if the files filter excludes it (its id is
 * remembered, and every later event naming it is refused). */
int pario_trace_filter_file(uint64_t id, const char *name);
int pario_trace_filter_file_muted(uint64_t id);
/* A call (an MPI_File_* span, or a nonblocking job named by its call) on file id: 1 to record
 * it, 0 to drop it with everything its thread recorded during it. */
int pario_trace_filter_call(const char *name, uint64_t file_id);
/* Whether a file is a tool's own (a PMPI tool above pario writing its log through it, such as
 * Darshan's *.darshan_partial): its calls are traced but marked, and kept out of the totals.
 * Key tools=GLOB,... (empty: none); the default is Darshan's log names. */
int pario_trace_filter_tool_file(const char *name);
/* Bytes the trace file may reach (0: no cap). */
uint64_t pario_trace_filter_max_size(void);

#endif
