/* MPI_File_set_view behind the API: argument and filetype rules of the standard, agreement
 * among ranks on datarep and etype size, and ownership of the view's datatypes. */
#include "collective/collective.h"
#include "core/file.h"
#include "sharedfp/sharedfp.h"

#include <stdio.h>
#include <limits.h>
#include <string.h>

/* Our own reference to a datatype: the user may free theirs after set_view. */
static MPI_Datatype keep(MPI_Datatype t) {
  MPI_Datatype d = t;
  if (!pario_type_is_named(t) && PMPI_Type_dup(t, &d) != MPI_SUCCESS) d = t;
  return d;
}

void pario_view_default(pario_view *v) {
  memset(v, 0, sizeof *v);
  v->etype = v->filetype = MPI_BYTE;
  pario_typemap_get(MPI_BYTE, &v->ftm);
  v->esize = 1;
  v->contiguous = 1;
  snprintf(v->datarep, sizeof v->datarep, "native");
}

void pario_view_release(pario_view *v) {
  if (v->etype != MPI_DATATYPE_NULL && !pario_type_is_named(v->etype)) PMPI_Type_free(&v->etype);
  if (v->filetype != MPI_DATATYPE_NULL && !pario_type_is_named(v->filetype)) PMPI_Type_free(&v->filetype);
  v->etype = v->filetype = MPI_DATATYPE_NULL;
}

static unsigned long hash_str(const char *s) {
  unsigned long h = 5381;
  while (*s) h = h * 33 + (unsigned char)*s++;
  return h & 0x3fffffff;
}

/* Local checks; returns an error code naming the problem or MPI_SUCCESS. */
static int check_view(pario_file *f, const char *op, MPI_Offset disp, MPI_Datatype etype,
                      MPI_Datatype filetype, const char *datarep, const pario_typemap **etm,
                      const pario_typemap **ftm) {
  const char *fn = f->filename;
  if (disp == MPI_DISPLACEMENT_CURRENT && !(f->amode & MPI_MODE_SEQUENTIAL))
    return pario_err(MPI_ERR_ARG, op, fn, 0, "MPI_DISPLACEMENT_CURRENT requires MPI_MODE_SEQUENTIAL");
  if (disp < 0 && disp != MPI_DISPLACEMENT_CURRENT)
    return pario_err(MPI_ERR_ARG, op, fn, 0, "negative displacement %lld", (long long)disp);
  if (!datarep) return pario_err(MPI_ERR_ARG, op, fn, 0, "null data representation");
  if (strcmp(datarep, "native") && strcmp(datarep, "internal"))
    return pario_err(MPI_ERR_UNSUPPORTED_DATAREP, op, fn, 0,
                     "data representation \"%s\" is not supported (native and internal are)", datarep);
  if (pario_typemap_get(etype, etm) != MPI_SUCCESS)
    return pario_err(MPI_ERR_TYPE, op, fn, 0, "invalid etype");
  if (pario_typemap_get(filetype, ftm) != MPI_SUCCESS)
    return pario_err(MPI_ERR_TYPE, op, fn, 0, "invalid filetype");
  const pario_typemap *e = *etm, *t = *ftm;
  if (e->size <= 0) return pario_err(MPI_ERR_TYPE, op, fn, 0, "etype has size 0");
  if (t->size == 0) return MPI_SUCCESS; /* a view with no data (a darray piece left empty) */
  if (t->extent <= 0) return pario_err(MPI_ERR_TYPE, op, fn, 0, "filetype has a non-positive extent");
  if (t->size % e->size)
    return pario_err(MPI_ERR_TYPE, op, fn, 0, "filetype (%lld bytes) is not made of etypes (%lld bytes)",
                     (long long)t->size, (long long)e->size);
  if (!t->nonneg) return pario_err(MPI_ERR_TYPE, op, fn, 0, "filetype has negative displacements");
  const pario_run *last = &t->runs[t->nruns - 1];
  if (!t->monotonic || last->off + last->len > t->extent + t->runs[0].off)
    return pario_err(MPI_ERR_TYPE, op, fn, 0,
                     "filetype displacements are not monotonically nondecreasing (or copies overlap)");
  return MPI_SUCCESS;
}

int pario_set_view(pario_file *f, const char *op, MPI_Offset disp, MPI_Datatype etype,
                   MPI_Datatype filetype, const char *datarep, MPI_Info info) {
  const pario_typemap *etm = NULL, *ftm = NULL;
  int code = check_view(f, op, disp, etype, filetype, datarep, &etm, &ftm);
  /* v[6..]: the shared hints as this view's info leaves them, rank 0's taken everywhere */
  long long v[6 + PARIO_HINTS_SHARED] = {code != MPI_SUCCESS, 0, 0, 0, 0, f->sfp != NULL}, r[6 + PARIO_HINTS_SHARED];
  pario_hints nh = f->hints;
  pario_hints_update(&nh, info);
  pario_hints_shared_pack(&nh, v + 6);
  for (int i = 6; f->rank != 0 && i < 6 + PARIO_HINTS_SHARED; i++) v[i] = LLONG_MIN;
  if (code == MPI_SUCCESS) {
    v[1] = etm->size;
    v[2] = -etm->size;
    v[3] = (long long)hash_str(datarep);
    v[4] = -v[3];
  }
  if (PMPI_Allreduce(v, r, 6 + PARIO_HINTS_SHARED, MPI_LONG_LONG, MPI_MAX, f->comm) != MPI_SUCCESS && code == MPI_SUCCESS)
    code = pario_err(MPI_ERR_OTHER, op, f->filename, 0, "agreement among ranks failed");
  if (code != MPI_SUCCESS) return code;
  if (r[0]) return pario_err(MPI_ERR_ARG, op, f->filename, 0, "invalid view arguments on another rank");
  if (r[1] != -r[2]) return pario_err(MPI_ERR_NOT_SAME, op, f->filename, 0, "etype size differs between ranks");
  if (r[3] != -r[4]) return pario_err(MPI_ERR_NOT_SAME, op, f->filename, 0, "datarep differs between ranks");

  if (disp == MPI_DISPLACEMENT_CURRENT) { /* sequential files: where the shared pointer is */
    MPI_Offset sp = 0;
    int rc = pario_sharedfp_position(f, op, &sp);
    if (rc != MPI_SUCCESS) return rc;
    disp = pario_view_file_offset(&f->view, sp * f->view.esize);
  }
  /* The shared pointer restarts at 0 in the new view; its storage is read only if some rank
   * ever used it (r[5]), otherwise it is still zero. */
  if (r[5]) {
    int rc = pario_sharedfp_set(f, op, 0);
    if (rc != MPI_SUCCESS) return rc;
  } else {
    f->sfp_base = 0;
  }
  pthread_mutex_lock(&f->lock);
  pario_view_release(&f->view);
  pario_view *nv = &f->view;
  nv->disp = disp;
  nv->etype = keep(etype);
  nv->filetype = keep(filetype);
  if (pario_typemap_get(nv->filetype, &nv->ftm) != MPI_SUCCESS) nv->ftm = ftm;
  nv->esize = etm->size;
  nv->contiguous = nv->ftm->dense;
  snprintf(nv->datarep, sizeof nv->datarep, "%s", datarep);
  f->fp_ind = 0;
  pario_hints_update(&f->hints, info);
  pario_hints_shared_unpack(&f->hints, r + 6);
  pario_coll_hints_fix(f);
  pario_coll_view_changed(f);
  pthread_mutex_unlock(&f->lock);
  return MPI_SUCCESS;
}
