/* Shared file pointer data access: read/write_shared (blocking and nonblocking) take their
 * place with one atomic fetch-add; ordered calls and their split forms reserve every rank's
 * place in one collective step of the component (sharedfp/select.c); seek_shared is
 * collective. A collective call with bad arguments on one rank still takes part, with
 * nothing to access, so the other ranks never wait for it. */
#include "api/calltrace.h"
#include "async/engine.h"
#include "core/rep.h"
#include "sharedfp/sharedfp.h"

#include <stdlib.h>

/* Checks for a shared-pointer access under the view in s; *n receives its size in etypes. */
static int shared_args(pario_file *f, const pario_snap *s, const char *op, int rw, const void *buf,
                       MPI_Count count, MPI_Datatype type, MPI_Offset *n) {
  const pario_typemap *tm;
  int rc = pario_access_check(f, s->view, op, rw, buf, count, type, &tm);
  if (rc == MPI_SUCCESS) rc = pario_sharedfp_check(f, op, rw);
  MPI_Offset bytes = 0;
  if (rc == MPI_SUCCESS) rc = pario_rep_data_size(s->view, type, tm, count, &bytes, op, f->filename);
  *n = rc == MPI_SUCCESS ? bytes / s->view->esize : 0;
  return rc;
}

/* A request that is already complete with bytes transferred (writes the individual
 * component keeps): a generalized request completed before it is returned. */
static int done_query(void *extra, MPI_Status *status) {
  pario_status_set(status, *(MPI_Count *)extra);
  status->MPI_SOURCE = MPI_UNDEFINED;
  status->MPI_TAG = MPI_UNDEFINED;
  return MPI_SUCCESS;
}
static int done_free(void *extra) {
  free(extra);
  return MPI_SUCCESS;
}
static int done_cancel(void *extra, int complete) {
  (void)extra, (void)complete;
  return MPI_SUCCESS;
}

static int done_request(pario_file *f, const char *op, MPI_Count bytes, MPI_Request *req) {
  MPI_Count *b = malloc(sizeof *b);
  if (!b) return pario_err(MPI_ERR_NO_MEM, op, f->filename, 0, "out of memory");
  *b = bytes;
  if (PMPI_Grequest_start(done_query, done_free, done_cancel, b, req) != MPI_SUCCESS) {
    free(b);
    return pario_err(MPI_ERR_INTERN, op, f->filename, 0, "cannot start a generalized request");
  }
  PMPI_Grequest_complete(*req);
  return MPI_SUCCESS;
}

static int shared_rw_body(MPI_File fh, const char *op, int rw, void *buf, MPI_Count count,
                          MPI_Datatype type, MPI_Status *status, MPI_Request *req, pario_call_data *d) {
  pario_file *f;
  pario_snap s;
  MPI_Offset n, pos = 0;
  MPI_Count bytes = 0;
  if (req) *req = MPI_REQUEST_NULL;
  pario_status_set(status, 0);
  int rc = pario_file_check(fh, op, &f);
  if (rc != MPI_SUCCESS) return rc;
  pario_snap_take(f, &s);
  const MPI_Offset es = s.view->esize;
  rc = shared_args(f, &s, op, rw, buf, count, type, &n);
  if (rc == MPI_SUCCESS && pario_sharedfp_defers(f)) { /* kept until the next merge: complete at once */
    rc = pario_sharedfp_write(f, op, buf, count, type, n);
    bytes = rc == MPI_SUCCESS ? pario_rep_native_bytes(s.view, type, count, (MPI_Count)(n * es)) : 0;
    if (rc == MPI_SUCCESS && req) rc = done_request(f, op, bytes, req);
  } else if (rc == MPI_SUCCESS) {
    rc = pario_sharedfp_fetch_add(f, op, n, &pos);
    if (rc == MPI_SUCCESS && req)
      rc = pario_engine_submit(f, &s, op, rw, pos * es, buf, count, type, req, NULL);
    else if (rc == MPI_SUCCESS)
      rc = pario_access(f, &s, op, rw, pos * es, buf, count, type, &bytes);
    d->pos = pos * es;
    bytes = pario_rep_native_bytes(s.view, type, count, bytes);
  }
  pario_snap_drop(&s);
  pario_status_set(status, bytes);
  d->bytes = bytes;
  return pario_file_error(fh, rc);
}

/* The outcome of an ordered call on every rank (after each rank's own access, which no
 * collective follows): any rank's failure is every rank's error (docs/collective.md#errors). */
static int ordered_outcome(pario_file *f, const char *op, int rw, int rc) {
  return pario_agree_call(f->comm, rc, op, f->filename, rw == PARIO_WRITE ? "ordered write" : "ordered read", 1);
}

/* Ordered calls are collective: a rank whose arguments are bad still reserves nothing in the
 * collective step (n = 0) and takes part in the agreement on the outcome, so the others
 * complete, and then returns its error. */
static int ordered_rw_body(MPI_File fh, const char *op, int rw, void *buf, MPI_Count count,
                           MPI_Datatype type, MPI_Status *status, pario_call_data *d) {
  pario_file *f;
  pario_snap s;
  MPI_Offset n, pos = 0;
  MPI_Count bytes = 0;
  pario_status_set(status, 0);
  int rc = pario_file_check(fh, op, &f);
  if (rc != MPI_SUCCESS) return rc;
  pario_snap_take(f, &s);
  int bad = shared_args(f, &s, op, rw, buf, count, type, &n);
  rc = pario_sharedfp_ordered(f, op, n, &pos);
  if (bad == MPI_SUCCESS && rc == MPI_SUCCESS)
    rc = pario_access(f, &s, op, rw, pos * s.view->esize, buf, count, type, &bytes);
  rc = ordered_outcome(f, op, rw, bad == MPI_SUCCESS ? rc : MPI_SUCCESS);
  if (bad != MPI_SUCCESS) rc = bad;
  if (rc == MPI_SUCCESS) d->pos = pos * s.view->esize;
  pario_status_set(status, pario_rep_native_bytes(s.view, type, count, bytes));
  pario_snap_drop(&s);
  d->bytes = bytes;
  return pario_file_error(fh, rc);
}

static int ordered_begin_body(MPI_File fh, const char *op, int rw, void *buf, MPI_Count count, MPI_Datatype type) {
  pario_file *f;
  pario_snap s;
  MPI_Offset n, pos = 0;
  int rc = pario_file_check(fh, op, &f);
  if (rc != MPI_SUCCESS) return rc;
  if (pario_engine_split_active(f))
    return pario_file_error(fh, pario_err(MPI_ERR_OTHER, op, f->filename, 0,
                                          "a split collective operation is already active on this file"));
  pario_snap_take(f, &s);
  int bad = shared_args(f, &s, op, rw, buf, count, type, &n);
  rc = pario_sharedfp_ordered(f, op, n, &pos); /* every rank takes part, see ordered_rw */
  pario_job *j = NULL;
  /* The access runs as a collective job at the place found, so the job agrees on the outcome
   * (as write_at_all_begin's does); a rank that cannot access still takes part with nothing,
   * since it calls no end. */
  if (bad == MPI_SUCCESS && rc == MPI_SUCCESS)
    rc = pario_engine_submit_coll(f, &s, op, rw, pos * s.view->esize, buf, count, type, NULL, &j);
  else
    pario_engine_submit_coll(f, &s, op, rw, 0, NULL, 0, MPI_BYTE, NULL, NULL);
  if (bad != MPI_SUCCESS) rc = bad;
  if (rc == MPI_SUCCESS) pario_engine_split_start(f, j, rw + 2); /* ended only by an ordered end */
  pario_snap_drop(&s);
  return pario_file_error(fh, rc);
}

static int ordered_end_body(MPI_File fh, const char *op, int rw, MPI_Status *status) {
  pario_file *f;
  MPI_Count bytes = 0;
  pario_status_set(status, 0);
  int rc = pario_file_check(fh, op, &f);
  if (rc != MPI_SUCCESS) return rc;
  pario_job *j = pario_engine_split_take(f, rw + 2);
  if (!j)
    return pario_file_error(fh, pario_err(MPI_ERR_OTHER, op, f->filename, 0,
                                          "no matching ordered split collective is active on this file"));
  rc = pario_engine_wait(j, &bytes); /* the collective job agreed on the outcome */
  pario_status_set(status, bytes);
  return pario_file_error(fh, rc);
}

/* The entry points' spans (calltrace.h): the bodies above, timed. */
static int shared_rw(MPI_File fh, const char *op, int rw, void *buf, MPI_Count count, MPI_Datatype type,
                     MPI_Status *status, MPI_Request *req) {
  uint64_t t0 = PARIO_TRACE_T0();
  pario_call_data d = {-1, count, 0, type, 0};
  int rc = shared_rw_body(fh, op, rw, buf, count, type, status, req, &d);
  if (PARIO_TRACING()) pario_api_trace(op, t0, fh, rc, &d);
  return rc;
}
static int ordered_rw(MPI_File fh, const char *op, int rw, void *buf, MPI_Count count, MPI_Datatype type,
                      MPI_Status *status) {
  uint64_t t0 = PARIO_TRACE_T0();
  pario_call_data d = {-1, count, 0, type, 1};
  int rc = ordered_rw_body(fh, op, rw, buf, count, type, status, &d);
  if (PARIO_TRACING()) pario_api_trace(op, t0, fh, rc, &d);
  return rc;
}
static int ordered_begin(MPI_File fh, const char *op, int rw, void *buf, MPI_Count count, MPI_Datatype type) {
  uint64_t t0 = PARIO_TRACE_T0();
  int rc = ordered_begin_body(fh, op, rw, buf, count, type);
  pario_call_data d = {-1, count, 0, type, 1};
  if (PARIO_TRACING()) pario_api_trace(op, t0, fh, rc, &d);
  return rc;
}
static int ordered_end(MPI_File fh, const char *op, int rw, MPI_Status *status) {
  PARIO_API_TRACED(op, fh, ordered_end_body(fh, op, rw, status));
}

#define NOCONST
#define DEF_SH(name, rw, cq, ct)                                                                  \
  PARIO_EXPORT int P##name(MPI_File fh, cq void *buf, ct count, MPI_Datatype datatype, MPI_Status *status) { \
    return shared_rw(fh, #name, rw, (void *)buf, count, datatype, status, NULL);                    \
  }                                                                                               \
  PARIO_WEAK_ALIAS(name)
#define DEF_ISH(name, rw, cq, ct)                                                                 \
  PARIO_EXPORT int P##name(MPI_File fh, cq void *buf, ct count, MPI_Datatype datatype, MPI_Request *request) { \
    if (!request) return pario_file_error(fh, pario_err(MPI_ERR_REQUEST, #name, NULL, 0, "null request pointer")); \
    return shared_rw(fh, #name, rw, (void *)buf, count, datatype, MPI_STATUS_IGNORE, request);     \
  }                                                                                               \
  PARIO_WEAK_ALIAS(name)
#define DEF_ORD(name, rw, cq, ct)                                                                 \
  PARIO_EXPORT int P##name(MPI_File fh, cq void *buf, ct count, MPI_Datatype datatype, MPI_Status *status) { \
    return ordered_rw(fh, #name, rw, (void *)buf, count, datatype, status);                       \
  }                                                                                               \
  PARIO_WEAK_ALIAS(name)
#define DEF_ORD_BEGIN(name, rw, cq, ct)                                                           \
  PARIO_EXPORT int P##name(MPI_File fh, cq void *buf, ct count, MPI_Datatype datatype) {          \
    return ordered_begin(fh, #name, rw, (void *)buf, count, datatype);                            \
  }                                                                                               \
  PARIO_WEAK_ALIAS(name)
#define DEF_ORD_END(name, rw, cq)                                                                 \
  PARIO_EXPORT int P##name(MPI_File fh, cq void *buf, MPI_Status *status) {                       \
    (void)buf;                                                                                    \
    return ordered_end(fh, #name, rw, status);                                                    \
  }                                                                                               \
  PARIO_WEAK_ALIAS(name)

/* The family once, for each count type: suffix sfx ("" or _c) and count type ct. The ordered
 * split collectives' end calls take no count: they are defined once, below. */
#define DEF_FAMILY(sfx, ct)                                               \
  DEF_SH(MPI_File_read_shared##sfx, PARIO_READ, NOCONST, ct)              \
  DEF_SH(MPI_File_write_shared##sfx, PARIO_WRITE, const, ct)              \
  DEF_ISH(MPI_File_iread_shared##sfx, PARIO_READ, NOCONST, ct)            \
  DEF_ISH(MPI_File_iwrite_shared##sfx, PARIO_WRITE, const, ct)            \
  DEF_ORD(MPI_File_read_ordered##sfx, PARIO_READ, NOCONST, ct)            \
  DEF_ORD(MPI_File_write_ordered##sfx, PARIO_WRITE, const, ct)            \
  DEF_ORD_BEGIN(MPI_File_read_ordered_begin##sfx, PARIO_READ, NOCONST, ct) \
  DEF_ORD_BEGIN(MPI_File_write_ordered_begin##sfx, PARIO_WRITE, const, ct)

DEF_FAMILY(, int)
DEF_ORD_END(MPI_File_read_ordered_end, PARIO_READ, NOCONST)
DEF_ORD_END(MPI_File_write_ordered_end, PARIO_WRITE, const)
#ifdef PARIO_HAVE_LARGE_COUNT
DEF_FAMILY(_c, MPI_Count)
#endif

static int seek_shared(MPI_File fh, MPI_Offset offset, int whence) {
  static const char op[] = "MPI_File_seek_shared";
  pario_file *f;
  int rc = pario_file_check(fh, op, &f);
  if (rc != MPI_SUCCESS) return rc;
  int bad = whence != MPI_SEEK_SET && whence != MPI_SEEK_CUR && whence != MPI_SEEK_END;
  rc = pario_check_same(f->comm, op, f->filename, "offset and whence", bad ? -1 : offset * 4 + whence);
  if (rc == MPI_SUCCESS && bad) rc = pario_err(MPI_ERR_ARG, op, f->filename, 0, "invalid whence %d", whence);
  MPI_Offset base = 0;
  if (rc == MPI_SUCCESS) rc = pario_sharedfp_merge(f, op); /* kept writes first (collective) */
  if (rc == MPI_SUCCESS && whence == MPI_SEEK_CUR) rc = pario_sharedfp_position(f, op, &base);
  if (rc == MPI_SUCCESS && whence == MPI_SEEK_END) {
    pario_snap s;
    pario_snap_take(f, &s);
    rc = pario_eof_position(f, s.view, op, &base);
    pario_snap_drop(&s);
  }
  int worst = pario_agree(f->comm, rc); /* CUR reads the pointer: all must read before it moves */
  if (worst == MPI_SUCCESS && base + offset < 0)
    worst = MPI_ERR_ARG, rc = pario_err(MPI_ERR_ARG, op, f->filename, 0, "seek to negative position %lld", (long long)(base + offset));
  if (worst == MPI_SUCCESS) rc = pario_sharedfp_set(f, op, base + offset);
  else if (rc == MPI_SUCCESS) rc = pario_err(worst, op, f->filename, 0, "seek_shared failed on another rank");
  return pario_file_error(fh, rc);
}
PARIO_EXPORT int PMPI_File_seek_shared(MPI_File fh, MPI_Offset offset, int whence) {
  PARIO_API_TRACED("MPI_File_seek_shared", fh, seek_shared(fh, offset, whence));
}
PARIO_WEAK_ALIAS(MPI_File_seek_shared)

static int get_position_shared(MPI_File fh, MPI_Offset *offset) {
  static const char op[] = "MPI_File_get_position_shared";
  pario_file *f;
  int rc = pario_file_check_out(fh, op, offset, &f);
  if (rc != MPI_SUCCESS) return rc;
  return pario_file_error(fh, pario_sharedfp_position(f, op, offset));
}
PARIO_EXPORT int PMPI_File_get_position_shared(MPI_File fh, MPI_Offset *offset) {
  PARIO_API_TRACED("MPI_File_get_position_shared", fh, get_position_shared(fh, offset));
}
PARIO_WEAK_ALIAS(MPI_File_get_position_shared)
