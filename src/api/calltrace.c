/* The entry points' trace records (calltrace.h): file id, position, bytes, and the datatype
 * summarized as size, extent, contiguous runs and whether it is a named type. */
#include "api/calltrace.h"

#include "view/typemap.h"

static void record(const char *op, uint64_t t0, unsigned long long file, int rc, const pario_call_data *d) {
  if (!d) {
    PARIO_TRACE_SPAN(PARIO_TC_API, op, t0, PARIO_TA("file", file), PARIO_TA("rc", rc));
    return;
  }
  const pario_typemap *tm = NULL;
  int named = pario_type_combiner(d->type) == MPI_COMBINER_NAMED;
  if (pario_typemap_get(d->type, &tm) != MPI_SUCCESS) tm = NULL;
  PARIO_TRACE_SPAN(PARIO_TC_API, op, t0, PARIO_TA("file", file), PARIO_TA("rc", rc), PARIO_TA("coll", d->coll),
                   PARIO_TA("pos", d->pos), PARIO_TA("bytes", d->bytes), PARIO_TA("count", d->count),
                   PARIO_TA("type_size", tm ? tm->size : -1), PARIO_TA("type_extent", tm ? tm->extent : -1),
                   PARIO_TA("type_runs", tm ? (long long)tm->nruns : -1), PARIO_TA("type_named", named));
}

void pario_api_trace(const char *op, uint64_t t0, MPI_File fh, int rc, const pario_call_data *d) {
  unsigned long long id = fh != MPI_FILE_NULL && pario_registry_valid(fh) ? pario_file_of(fh)->uid : 0;
  record(op, t0, id, rc, d);
}

void pario_api_trace_id(const char *op, uint64_t t0, unsigned long long file, int rc) {
  record(op, t0, file, rc, NULL);
}
