/* Blocking data access entry points: individual file pointer and explicit offset, independent
 * and collective, with their MPI-4 large-count twins. Collective calls go to the collective/
 * layer, which aggregates or lets each rank access independently. */
#include "api/calltrace.h"
#include "collective/collective.h"
#include "core/file.h"
#include "core/rep.h"

/* coll: a collective call, which every rank must join even with bad arguments (it then
 * takes part with nothing to access) so that nobody waits for it. */
static int rw_body(MPI_File fh, const char *op, int rw, int coll, int explicit_off, MPI_Offset offset,
                   void *buf, MPI_Count count, MPI_Datatype type, MPI_Status *status, pario_call_data *d) {
  pario_file *f;
  const pario_typemap *tm;
  MPI_Count bytes = 0;
  pario_snap s;
  pario_status_set(status, 0);
  int rc = pario_file_check(fh, op, &f);
  if (rc != MPI_SUCCESS) return rc;
  pario_snap_take(f, &s);
  const MPI_Offset es = s.view->esize;
  rc = pario_access_args(f, s.view, op, rw, explicit_off, offset, buf, count, type, &tm);
  pario_coll_ctx *c = NULL;
  if (coll && !(c = pario_coll_ctx_get(f, 0)) && rc == MPI_SUCCESS)
    rc = pario_coll_ctx_err(f, op);
  if (rc != MPI_SUCCESS) {
    if (c) pario_coll_access(c, &s, op, rw, 0, NULL, 0, MPI_BYTE, &bytes);
    pario_snap_drop(&s);
    return pario_file_error(fh, rc);
  }
  MPI_Offset pos = offset * es;
  if (!explicit_off) {
    pthread_mutex_lock(&f->lock);
    pos = f->fp_ind * es;
    if (!c) { /* independent: the pointer stays locked for the access */
      rc = pario_access(f, &s, op, rw, pos, buf, count, type, &bytes);
      f->fp_ind += bytes / es;
    }
    pthread_mutex_unlock(&f->lock);
  }
  if (c) {
    rc = pario_coll_access(c, &s, op, rw, pos, buf, count, type, &bytes);
    if (!explicit_off) {
      pthread_mutex_lock(&f->lock);
      f->fp_ind = pos / es + bytes / es;
      pthread_mutex_unlock(&f->lock);
    }
  } else if (explicit_off) {
    rc = pario_access(f, &s, op, rw, pos, buf, count, type, &bytes);
  }
  pario_status_set(status, pario_rep_native_bytes(s.view, type, count, bytes));
  pario_snap_drop(&s);
  d->pos = pos;
  d->bytes = bytes;
  return pario_file_error(fh, rc);
}

static int rw_common(MPI_File fh, const char *op, int rw, int coll, int explicit_off, MPI_Offset offset,
                     void *buf, MPI_Count count, MPI_Datatype type, MPI_Status *status) {
  uint64_t t0 = PARIO_TRACE_T0();
  pario_call_data d = {-1, count, 0, type, coll};
  int rc = rw_body(fh, op, rw, coll, explicit_off, offset, buf, count, type, status, &d);
  if (PARIO_TRACING()) pario_api_trace(op, t0, fh, rc, &d);
  return rc;
}

#define DEF_FP(name, rw, coll, cq, ct)                                                            \
  PARIO_EXPORT int P##name(MPI_File fh, cq void *buf, ct count, MPI_Datatype datatype,       \
                           MPI_Status *status) {                                             \
    return rw_common(fh, #name, rw, coll, 0, 0, (void *)buf, count, datatype, status);             \
  }                                                                                          \
  PARIO_WEAK_ALIAS(name)

#define DEF_AT(name, rw, coll, cq, ct)                                                            \
  PARIO_EXPORT int P##name(MPI_File fh, MPI_Offset offset, cq void *buf, ct count,           \
                           MPI_Datatype datatype, MPI_Status *status) {                      \
    return rw_common(fh, #name, rw, coll, 1, offset, (void *)buf, count, datatype, status);        \
  }                                                                                          \
  PARIO_WEAK_ALIAS(name)

#define NOCONST

/* The family once, for each count type: suffix sfx ("" or _c) and count type ct. */
#define DEF_FAMILY(sfx, ct)                                  \
  DEF_FP(MPI_File_read##sfx, PARIO_READ, 0, NOCONST, ct)     \
  DEF_FP(MPI_File_write##sfx, PARIO_WRITE, 0, const, ct)     \
  DEF_FP(MPI_File_read_all##sfx, PARIO_READ, 1, NOCONST, ct) \
  DEF_FP(MPI_File_write_all##sfx, PARIO_WRITE, 1, const, ct) \
  DEF_AT(MPI_File_read_at##sfx, PARIO_READ, 0, NOCONST, ct)  \
  DEF_AT(MPI_File_write_at##sfx, PARIO_WRITE, 0, const, ct)  \
  DEF_AT(MPI_File_read_at_all##sfx, PARIO_READ, 1, NOCONST, ct) \
  DEF_AT(MPI_File_write_at_all##sfx, PARIO_WRITE, 1, const, ct)

DEF_FAMILY(, int)
#ifdef PARIO_HAVE_LARGE_COUNT
DEF_FAMILY(_c, MPI_Count)
#endif
