/* Nonblocking and split collective data access: the call checks its arguments, reserves its
 * part of the file (the individual pointer moves at the call, as the standard says) and hands
 * the transfer to the async engine. Collective forms run the two-phase exchange on the
 * engine's thread, in the order they were started (the same on every rank). */
#include "api/calltrace.h"
#include "async/engine.h"
#include "core/rep.h"

/* Checks the arguments under the view the operation starts with (*s, taken here; the caller
 * drops it) and reserves its part of the file: *pos is where it starts. */
static int nb_prepare(MPI_File fh, const char *op, int rw, int explicit_off, MPI_Offset offset,
                      const void *buf, MPI_Count count, MPI_Datatype type, pario_file *f,
                      pario_snap *s, MPI_Offset *pos) {
  const pario_typemap *tm;
  MPI_Offset n = 0;
  int rc = pario_access_args(f, s->view, op, rw, explicit_off, offset, buf, count, type, &tm);
  if (rc == MPI_SUCCESS) rc = pario_rep_data_size(s->view, type, tm, count, &n, op, f->filename);
  if (rc != MPI_SUCCESS) return pario_file_error(fh, rc);
  const MPI_Offset es = s->view->esize;
  if (explicit_off) {
    *pos = offset * es;
  } else {
    pthread_mutex_lock(&f->lock);
    *pos = f->fp_ind * es;
    f->fp_ind += n / es;
    pthread_mutex_unlock(&f->lock);
  }
  return MPI_SUCCESS;
}

/* A collective whose arguments were wrong on this rank still takes part (with nothing to
 * access), so that the other ranks' collective completes; the caller gets the error. */
static void coll_take_part(pario_file *f, const pario_snap *s, const char *op, int rw) {
  pario_engine_submit_coll(f, s, op, rw, 0, NULL, 0, MPI_BYTE, NULL, NULL);
}

static int nb_body(MPI_File fh, const char *op, int rw, int coll, int explicit_off, MPI_Offset offset,
                   void *buf, MPI_Count count, MPI_Datatype type, MPI_Request *req, MPI_Offset *at) {
  pario_file *f;
  pario_snap s;
  MPI_Offset pos = 0;
  if (req) *req = MPI_REQUEST_NULL;
  int rc = pario_file_check(fh, op, &f);
  if (rc != MPI_SUCCESS) return rc; /* no file: nothing to take part in */
  pario_snap_take(f, &s);
  rc = req ? nb_prepare(fh, op, rw, explicit_off, offset, buf, count, type, f, &s, &pos)
           : pario_file_error(fh, pario_err(MPI_ERR_REQUEST, op, f->filename, 0, "null request pointer"));
  if (rc != MPI_SUCCESS) {
    if (coll) coll_take_part(f, &s, op, rw);
    pario_snap_drop(&s);
    return rc;
  }
  rc = coll ? pario_engine_submit_coll(f, &s, op, rw, pos, buf, count, type, req, NULL)
            : pario_engine_submit(f, &s, op, rw, pos, buf, count, type, req, NULL);
  pario_snap_drop(&s);
  *at = pos;
  return pario_file_error(fh, rc);
}

/* The call's span covers queuing only; the job's own spans (cat async) show the transfer. */
static int nb_start(MPI_File fh, const char *op, int rw, int coll, int explicit_off, MPI_Offset offset,
                    void *buf, MPI_Count count, MPI_Datatype type, MPI_Request *req) {
  uint64_t t0 = PARIO_TRACE_T0();
  pario_call_data d = {-1, count, 0, type, coll};
  int rc = nb_body(fh, op, rw, coll, explicit_off, offset, buf, count, type, req, &d.pos);
  if (PARIO_TRACING()) pario_api_trace(op, t0, fh, rc, &d);
  return rc;
}

/* Split collectives: one per file at a time; begin starts it, end waits for it. An active
 * one is checked first, so an erroneous second begin moves no file pointer. */
static int begin_body(MPI_File fh, const char *op, int rw, int explicit_off, MPI_Offset offset,
                      void *buf, MPI_Count count, MPI_Datatype type, MPI_Offset *at) {
  pario_file *f;
  pario_snap s;
  MPI_Offset pos = 0;
  int rc = pario_file_check(fh, op, &f);
  if (rc != MPI_SUCCESS) return rc;
  if (pario_engine_split_active(f)) /* erroneous program: the active one is the collective that matches */
    return pario_file_error(fh, pario_err(MPI_ERR_OTHER, op, f->filename, 0,
                                          "a split collective operation is already active on this file"));
  pario_snap_take(f, &s);
  rc = nb_prepare(fh, op, rw, explicit_off, offset, buf, count, type, f, &s, &pos);
  pario_job *j = NULL;
  if (rc != MPI_SUCCESS) {
    coll_take_part(f, &s, op, rw);
  } else {
    rc = pario_file_error(fh, pario_engine_submit_coll(f, &s, op, rw, pos, buf, count, type, NULL, &j));
    if (rc == MPI_SUCCESS) pario_engine_split_start(f, j, rw);
  }
  pario_snap_drop(&s);
  *at = pos;
  return rc;
}

static int split_begin(MPI_File fh, const char *op, int rw, int explicit_off, MPI_Offset offset,
                       void *buf, MPI_Count count, MPI_Datatype type) {
  uint64_t t0 = PARIO_TRACE_T0();
  pario_call_data d = {-1, count, 0, type, 1};
  int rc = begin_body(fh, op, rw, explicit_off, offset, buf, count, type, &d.pos);
  if (PARIO_TRACING()) pario_api_trace(op, t0, fh, rc, &d);
  return rc;
}

static int end_body(MPI_File fh, const char *op, int rw, MPI_Status *status, MPI_Count *moved) {
  pario_file *f;
  MPI_Count bytes = 0;
  pario_status_set(status, 0);
  int rc = pario_file_check(fh, op, &f);
  if (rc != MPI_SUCCESS) return rc;
  pario_job *j = pario_engine_split_take(f, rw);
  if (!j)
    return pario_file_error(fh, pario_err(MPI_ERR_OTHER, op, f->filename, 0,
                                          "no matching split collective operation is active on this file"));
  rc = pario_engine_wait(j, &bytes);
  pario_status_set(status, bytes);
  *moved = bytes;
  return pario_file_error(fh, rc);
}

static int split_end(MPI_File fh, const char *op, int rw, MPI_Status *status) {
  uint64_t t0 = PARIO_TRACE_T0();
  pario_call_data d = {-1, 0, 0, MPI_BYTE, 1};
  int rc = end_body(fh, op, rw, status, &d.bytes);
  if (PARIO_TRACING()) pario_api_trace(op, t0, fh, rc, &d);
  return rc;
}

#define NOCONST
#define DEF_I(name, rw, coll, cq, ct)                                                                  \
  PARIO_EXPORT int P##name(MPI_File fh, cq void *buf, ct count, MPI_Datatype datatype,           \
                           MPI_Request *request) {                                               \
    return nb_start(fh, #name, rw, coll, 0, 0, (void *)buf, count, datatype, request);                 \
  }                                                                                              \
  PARIO_WEAK_ALIAS(name)
#define DEF_I_AT(name, rw, coll, cq, ct)                                                               \
  PARIO_EXPORT int P##name(MPI_File fh, MPI_Offset offset, cq void *buf, ct count,               \
                           MPI_Datatype datatype, MPI_Request *request) {                        \
    return nb_start(fh, #name, rw, coll, 1, offset, (void *)buf, count, datatype, request);            \
  }                                                                                              \
  PARIO_WEAK_ALIAS(name)
#define DEF_BEGIN(name, rw, cq, ct)                                                              \
  PARIO_EXPORT int P##name(MPI_File fh, cq void *buf, ct count, MPI_Datatype datatype) {         \
    return split_begin(fh, #name, rw, 0, 0, (void *)buf, count, datatype);                       \
  }                                                                                              \
  PARIO_WEAK_ALIAS(name)
#define DEF_BEGIN_AT(name, rw, cq, ct)                                                           \
  PARIO_EXPORT int P##name(MPI_File fh, MPI_Offset offset, cq void *buf, ct count,               \
                           MPI_Datatype datatype) {                                              \
    return split_begin(fh, #name, rw, 1, offset, (void *)buf, count, datatype);                  \
  }                                                                                              \
  PARIO_WEAK_ALIAS(name)
#define DEF_END(name, rw, cq)                                                                    \
  PARIO_EXPORT int P##name(MPI_File fh, cq void *buf, MPI_Status *status) {                      \
    (void)buf;                                                                                   \
    return split_end(fh, #name, rw, status);                                                     \
  }                                                                                              \
  PARIO_WEAK_ALIAS(name)

/* The family once, for each count type: suffix sfx ("" or _c) and count type ct. The split
 * collectives' end calls take no count: they are defined once, below. */
#define DEF_FAMILY(sfx, ct)                                                \
  DEF_I(MPI_File_iread##sfx, PARIO_READ, 0, NOCONST, ct)                   \
  DEF_I(MPI_File_iwrite##sfx, PARIO_WRITE, 0, const, ct)                   \
  DEF_I(MPI_File_iread_all##sfx, PARIO_READ, 1, NOCONST, ct)               \
  DEF_I(MPI_File_iwrite_all##sfx, PARIO_WRITE, 1, const, ct)               \
  DEF_I_AT(MPI_File_iread_at##sfx, PARIO_READ, 0, NOCONST, ct)             \
  DEF_I_AT(MPI_File_iwrite_at##sfx, PARIO_WRITE, 0, const, ct)             \
  DEF_I_AT(MPI_File_iread_at_all##sfx, PARIO_READ, 1, NOCONST, ct)         \
  DEF_I_AT(MPI_File_iwrite_at_all##sfx, PARIO_WRITE, 1, const, ct)         \
  DEF_BEGIN(MPI_File_read_all_begin##sfx, PARIO_READ, NOCONST, ct)         \
  DEF_BEGIN(MPI_File_write_all_begin##sfx, PARIO_WRITE, const, ct)         \
  DEF_BEGIN_AT(MPI_File_read_at_all_begin##sfx, PARIO_READ, NOCONST, ct)   \
  DEF_BEGIN_AT(MPI_File_write_at_all_begin##sfx, PARIO_WRITE, const, ct)

DEF_FAMILY(, int)
DEF_END(MPI_File_read_all_end, PARIO_READ, NOCONST)
DEF_END(MPI_File_write_all_end, PARIO_WRITE, const)
DEF_END(MPI_File_read_at_all_end, PARIO_READ, NOCONST)
DEF_END(MPI_File_write_at_all_end, PARIO_WRITE, const)

#ifdef PARIO_HAVE_LARGE_COUNT
DEF_FAMILY(_c, MPI_Count)
#endif
