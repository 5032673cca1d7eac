/* MPI_File_set_view behind the API: argument and filetype rules of the standard, agreement
 * among ranks on datarep and etype size, and views as reference-counted objects shared by the
 * file and the operations started under them. */
#include "core/file.h"
#include "core/rep.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Our own reference to a datatype: the user may free theirs after set_view. Whether it is
 * ours is remembered, so freeing needs no MPI query: the last drop may run inside a
 * generalized request's free callback, where MPICH 4.0's MPI_Type_get_envelope_c aborts. */
static MPI_Datatype keep(MPI_Datatype t, unsigned char *owned) {
  MPI_Datatype d = t;
  *owned = !pario_type_is_named(t) && PMPI_Type_dup(t, &d) == MPI_SUCCESS;
  return *owned ? d : t;
}

static void view_free(pario_view *v) {
  pario_typemap_free(v->ftm_own);
  if (v->owned[0]) PMPI_Type_free(&v->etype);
  if (v->owned[1]) PMPI_Type_free(&v->filetype);
  free(v);
}

/* The widest hole between consecutive runs of a filetype, from one tile to the next too. */
static MPI_Offset widest_hole(const pario_typemap *t) {
  MPI_Offset w = 0;
  if (t->dense || t->nruns == 0) return 0;
  for (size_t i = 1; i < t->nruns; i++) w = PARIO_MAX(w, t->runs[i].off - (t->runs[i - 1].off + t->runs[i - 1].len));
  const pario_run *a = &t->runs[0], *z = &t->runs[t->nruns - 1];
  return PARIO_MAX(w, t->extent + a->off - (z->off + z->len));
}

pario_view *pario_view_new(void) {
  pario_view *v = calloc(1, sizeof *v);
  if (!v) return NULL;
  v->etype = v->filetype = MPI_BYTE;
  pario_typemap_get(MPI_BYTE, &v->ftm);
  v->esize = 1;
  v->contiguous = 1;
  snprintf(v->datarep, sizeof v->datarep, "native");
  v->refs = 1;
  return v;
}

static void view_hold(pario_view *v) { __atomic_add_fetch(&v->refs, 1, __ATOMIC_RELAXED); }

/* The last holder frees the view (a worker thread may, when a job outlives set_view). */
void pario_view_drop(pario_view *v) {
  if (v && __atomic_sub_fetch(&v->refs, 1, __ATOMIC_ACQ_REL) == 0) view_free(v);
}

void pario_snap_take(pario_file *f, pario_snap *s) {
  pthread_mutex_lock(&f->lock);
  s->view = f->view;
  view_hold(s->view);
  s->atomic = f->atomic;
  s->vdef[0] = (long long)f->vdef.chk;
  s->vdef[1] = f->vdef.errs;
  s->vdef[2] = f->vdef.flags;
  pthread_mutex_unlock(&f->lock);
}

void pario_snap_copy(const pario_snap *from, pario_snap *to) {
  *to = *from;
  view_hold(to->view);
}

void pario_snap_drop(pario_snap *s) {
  pario_view_drop(s->view);
  s->view = NULL;
}

/* The default cb_nodes: one aggregator per node, except on a single host with local storage,
 * where the aggregators share one page cache and the work of a window (read it, fill it,
 * write it) is memory copies that one rank does on one core: there as many as the host has
 * online CPUs, up to the ranks (4 ranks on 2 cores, a collective write of 32 B regions,
 * medians of 5: Open MPI 706 -> 1352 MB/s, MPICH 179 -> 223 MB/s timed with MPI_Barrier,
 * docs/measuring.md "Issue 21 figures"). sysconf, not the affinity mask:
 * every rank must compute the same number, and bound ranks see one CPU each. */
static int default_cb_nodes(const pario_file *f) {
  int nodes = f->nodes > 0 ? f->nodes : 1;
  if (nodes != 1 || f->drv->remote) return PARIO_MIN(nodes, f->nprocs);
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  return (int)PARIO_MAX(1, PARIO_MIN(cpus, (long)f->nprocs));
}

/* cb_nodes within the rank count (default_cb_nodes above), the collective buffer
 * small enough for one message per window, the driver's default pario_io_threads and list
 * window (ind_rd/wr_buffer_size where the user gave none), and write
 * sieving off where its read-modify-write cannot be made safe: it needs byte-range locks and
 * read access. */
void pario_hints_settle(pario_file *f) {
  pario_hints *h = &f->hints;
  if (h->cb_nodes <= 0) h->cb_nodes = default_cb_nodes(f);
  if (h->cb_nodes > f->nprocs) h->cb_nodes = f->nprocs;
  if (h->cb_buffer_size > (1LL << 30)) h->cb_buffer_size = 1LL << 30;
  if (!h->io_threads_given && f->drv->io_threads > 0) h->io_threads = f->drv->io_threads; /* remote storage */
  if (f->drv->list_window > 0) { /* remote storage: a list request per window, so large windows */
    if (!(h->ind_given & 1)) h->ind_rd_buffer_size = f->drv->list_window;
    if (!(h->ind_given & 2)) h->ind_wr_buffer_size = f->drv->list_window;
  }
  if (h->romio_ds_write != PARIO_DISABLE && !(f->amode & MPI_MODE_RDONLY)) {
    if (f->locks_work == 0)
      f->locks_work = f->drv->lock_probe && f->drv->lock_probe(f->dh, PARIO_LOCK_WRITE) == 0 ? 1 : -1;
    if (f->locks_work < 0 || (f->oflags & O_ACCMODE) == O_WRONLY) h->romio_ds_write = PARIO_DISABLE;
  }
  pario_wait_tune(h->wait_mode, h->wait_nap_max_us, h->wait_yield_us);
  pario_wait_timeout(h->timeout_ms);
}

static unsigned long hash_str(const char *s) {
  unsigned long h = 5381;
  while (*s) h = h * 33 + (unsigned char)*s++;
  return h & 0x3fffffff;
}

void pario_hints_install(pario_file *f, const pario_hints *nh) {
  pthread_mutex_lock(&f->lock);
  f->hints = *nh;
  pario_hints_settle(f);
  pario_direct_io_apply(f);
  pthread_mutex_unlock(&f->lock);
  pario_layers_set_info(f);
}

/* Install view nv (set_view's last step) with hints nh, new ones where changed (the layers
 * hear of them after). */
static void view_install(pario_file *f, pario_view *nv, const pario_hints *nh, int changed) {
  pthread_mutex_lock(&f->lock);
  pario_view *old = f->view;
  f->view = nv;
  f->view_gen = nv->gen;
  f->fp_ind = 0;
  pthread_mutex_unlock(&f->lock);
  pario_view_drop(old);
  if (changed) pario_hints_install(f, nh);
}

/* ---- the deferred agreement (pario_vdefer in core/file.h) ---- */

/* One set_view in pario_vdefer.chk: its number and, where it succeeded here, its etype size
 * and datarep (esize -1: it failed here). A sum of these, so a settle that reported a
 * difference can start afresh (base) and the order of the set_views still counts. */
static unsigned long long vdef_hash(unsigned long gen, long long esize, const char *datarep) {
  unsigned long long x = (unsigned long long)gen * 0x9E3779B97F4A7C15ull ^ (unsigned long long)esize * 0xD6E8FEB86659FD93ull ^
                         (datarep ? hash_str(datarep) : 0x5bd1e995ull);
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull; /* splitmix64's finaliser */
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

void pario_view_defer_words(pario_file *f, const pario_snap *s, long long w[PARIO_VDEF_WORDS]) {
  long long votes[PARIO_SLOTS];
  pario_layers_view_votes(f, votes);
  pthread_mutex_lock(&f->lock);
  w[0] = (long long)((unsigned long long)s->vdef[0] - f->vdef.base);
  w[1] = s->vdef[1] - f->vdef.ebase;
  w[2] = s->vdef[2];
  pthread_mutex_unlock(&f->lock);
  for (int i = 0; i < PARIO_SLOTS; i++)
    if (votes[i]) w[2] |= PARIO_VDEF_VOTES;
}

/* The deferred set_views' hints reach every rank: rank 0's shared ones win (as in set_view). */
static int vdef_hints(pario_file *f, const char *op, MPI_Comm comm) {
  pario_hints nh;
  pthread_mutex_lock(&f->lock);
  memcpy(&nh, &f->hints, sizeof nh);
  pthread_mutex_unlock(&f->lock);
  if (pario_hints_agree(comm, &nh, NULL, 0) != MPI_SUCCESS)
    return pario_err(MPI_ERR_OTHER, op, f->filename, 0, "agreement on the hints of an earlier set_view failed");
  pario_hints_install(f, &nh);
  return MPI_SUCCESS;
}

int pario_view_defer_settle(pario_file *f, const pario_snap *s, const char *op, MPI_Comm comm, const long long *all,
                            size_t stride, int np, int may_switch) {
  long long flags = 0;
  int differ = 0, failed = -1, rc = MPI_SUCCESS;
  for (int r = 0; r < np; r++) {
    const long long *w = all + (size_t)r * stride;
    flags |= w[2];
    differ |= w[0] != all[0];
    if (w[1] != all[1] && failed < 0) failed = w[1] > all[1] ? r : 0;
  }
  if (flags & PARIO_VDEF_HINTS) rc = vdef_hints(f, op, comm);
  pthread_mutex_lock(&f->lock);
  /* Deferral turns on only here, at a blocking collective data call in which no rank's layer
   * votes, and never again on a file whose shared pointer was used (its deferred set_views
   * reset the pointer through the counter slots, of which there are few; mpi4py's tests move
   * the pointer between set_views with no collective data access). Where no rank has used the
   * shared pointer, every counter is still 0 and the slots start over; only at a blocking
   * call, which every rank makes at the same point of its sequence of set_views. */
  if (flags & PARIO_VDEF_VOTES) f->vdef.never = 1;
  if (may_switch) {
    f->vdef.on = !f->vdef.never && f->hints.view_defer && !(f->amode & MPI_MODE_SEQUENTIAL);
    if (!(flags & PARIO_VDEF_VOTES)) f->vdef.slot = 0;
  }
  f->vdef.flags &= ~s->vdef[2];
  if (failed >= 0 || differ) f->vdef.base = (unsigned long long)s->vdef[0], f->vdef.ebase = s->vdef[1];
  pthread_mutex_unlock(&f->lock);
  if (rc != MPI_SUCCESS) return rc;
  if (failed >= 0)
    return pario_err(MPI_ERR_ARG, op, f->filename, 0,
                     "an earlier set_view failed on rank %d (its agreement was deferred to this call)", failed);
  if (differ)
    return pario_err(MPI_ERR_NOT_SAME, op, f->filename, 0,
                     "an earlier set_view's etype size or datarep differed between ranks (its agreement was "
                     "deferred to this call)");
  return MPI_SUCCESS;
}

int pario_view_defer_close(pario_file *f, const char *op, int code) {
  pario_snap s;
  long long w[PARIO_VDEF_WORDS];
  pario_snap_take(f, &s);
  pario_view_defer_words(f, &s, w);
  pario_snap_drop(&s);
  long long v[4] = {w[0], -w[0], w[1], -w[1]}, r[4];
  if (pario_allreduce_max(v, r, 4, MPI_LONG_LONG, f->comm) != MPI_SUCCESS) /* after pario_timeout: at once */
    return code != MPI_SUCCESS ? code : pario_comm_err(op, f->filename);
  if (code != MPI_SUCCESS) return code;
  if (r[2] != -r[3]) return pario_err(MPI_ERR_ARG, op, f->filename, 0, "an earlier set_view failed on another rank (its agreement was deferred)");
  if (r[0] != -r[1])
    return pario_err(MPI_ERR_NOT_SAME, op, f->filename, 0,
                     "an earlier set_view's etype size or datarep differed between ranks (its agreement was deferred)");
  return MPI_SUCCESS;
}

/* What check_view found: the native typemaps, and under a representation other than native
 * the etype's file size and the filetype's file-representation typemap (owned). */
typedef struct view_args {
  const pario_typemap *etm, *ftm;
  const pario_rep *rep;
  pario_typemap *fown;
  MPI_Offset esize;
} view_args;

/* The etype and filetype in the file representation: the typemaps the checks and the view
 * arithmetic use (the native ones for native and internal). */
static int file_layout(pario_file *f, const char *op, MPI_Datatype etype, MPI_Datatype filetype,
                       view_args *a, const pario_typemap **e, const pario_typemap **t) {
  *e = a->etm;
  *t = a->ftm;
  a->esize = a->etm->size;
  if (!a->rep) return MPI_SUCCESS;
  pario_typemap *etf = NULL;
  int rc = pario_rep_typemap(a->rep, etype, a->etm, &etf, op, f->filename);
  if (rc == MPI_SUCCESS) rc = pario_rep_typemap(a->rep, filetype, a->ftm, &a->fown, op, f->filename);
  if (rc == MPI_SUCCESS) {
    a->esize = etf->size;
    *t = a->fown;
  }
  pario_typemap_free(etf);
  return rc;
}

/* Local checks; returns an error code naming the problem or MPI_SUCCESS. Under a
 * representation other than native, sizes, extents and displacements are the file
 * representation's (MPI-4.1 14.5.1: the view is laid out in the file's representation). */
static int check_view(pario_file *f, const char *op, MPI_Offset disp, MPI_Datatype etype,
                      MPI_Datatype filetype, const char *datarep, view_args *a) {
  const char *fn = f->filename;
  if (disp == MPI_DISPLACEMENT_CURRENT && !(f->amode & MPI_MODE_SEQUENTIAL))
    return pario_err(MPI_ERR_ARG, op, fn, 0, "MPI_DISPLACEMENT_CURRENT requires MPI_MODE_SEQUENTIAL");
  if (disp < 0 && disp != MPI_DISPLACEMENT_CURRENT)
    return pario_err(MPI_ERR_ARG, op, fn, 0, "negative displacement %lld", (long long)disp);
  if (!datarep) return pario_err(MPI_ERR_ARG, op, fn, 0, "null data representation");
  int rc = pario_rep_lookup(datarep, &a->rep, op, fn);
  if (rc != MPI_SUCCESS) return rc;
  if (pario_typemap_get(etype, &a->etm) != MPI_SUCCESS)
    return pario_err(MPI_ERR_TYPE, op, fn, 0, "invalid etype");
  if (pario_typemap_get(filetype, &a->ftm) != MPI_SUCCESS)
    return pario_err(MPI_ERR_TYPE, op, fn, 0, "invalid filetype");
  if (!pario_type_committed(etype, a->etm)) return pario_err(MPI_ERR_TYPE, op, fn, 0, "etype is not committed");
  if (!pario_type_committed(filetype, a->ftm)) return pario_err(MPI_ERR_TYPE, op, fn, 0, "filetype is not committed");
  const pario_typemap *e, *t;
  if ((rc = file_layout(f, op, etype, filetype, a, &e, &t)) != MPI_SUCCESS) return rc;
  if (e->size <= 0) return pario_err(MPI_ERR_TYPE, op, fn, 0, "etype has size 0");
  if (t->size == 0) return MPI_SUCCESS; /* a view with no data (a darray piece left empty) */
  if (t->extent <= 0) return pario_err(MPI_ERR_TYPE, op, fn, 0, "filetype has a non-positive extent");
  if (t->size % a->esize)
    return pario_err(MPI_ERR_TYPE, op, fn, 0, "filetype (%lld bytes) is not made of etypes (%lld bytes)",
                     (long long)t->size, (long long)a->esize);
  /* A typemap the standard forbids in a filetype (negative, decreasing, or on a writable file
   * overlapping displacements) is MPI_ERR_IO, as in ROMIO, whose tests and MPICH's check that
   * class (the standard names none; OMPIO says MPI_ERR_TYPE). */
  if (!t->nonneg) return pario_err(MPI_ERR_IO, op, fn, 0, "filetype has negative displacements");
  /* The standard forbids overlapping filetypes only on files opened for writing; on a
   * read-only file the displacements need only be nondecreasing. Whether the filetype's
   * copies overlap (its data reaching past lb + extent) is not checked: HDF5 builds such
   * filetypes on Open MPI and never reaches the second copy, and both native MPI-IOs accept
   * them. */
  if (f->amode & MPI_MODE_RDONLY) {
    if (!t->ordered)
      return pario_err(MPI_ERR_IO, op, fn, 0, "filetype displacements are not monotonically nondecreasing");
  } else if (!t->monotonic) {
    return pario_err(MPI_ERR_IO, op, fn, 0,
                     "filetype overlaps itself on a file open for writing, or its displacements "
                     "are not monotonically nondecreasing");
  }
  return MPI_SUCCESS;
}

/* Agreement on the arguments: the worst local error, etype size, datarep, whether any rank's
 * info changes a hint (new_hints: whether this rank's does), what deferred set_views left
 * (pario_vdefer: it is settled here), and one value per layer (core/layer.h). 0 or an error
 * code. Later set_views defer when no layer voted. */
static int view_agree(pario_file *f, const char *op, int code, MPI_Offset esize,
                      const char *datarep, int new_hints, long long votes[PARIO_SLOTS], int *any_info) {
  enum { N = 10 };
  pario_snap s;
  long long w[PARIO_VDEF_WORDS];
  pario_snap_take(f, &s);
  pario_view_defer_words(f, &s, w);
  pario_snap_drop(&s);
  long long v[N + PARIO_SLOTS] = {code != MPI_SUCCESS, 0, 0, 0, 0, new_hints || (w[2] & PARIO_VDEF_HINTS), w[0], -w[0],
                                  w[1], -w[1]},
            r[N + PARIO_SLOTS];
  pario_layers_view_votes(f, v + N);
  if (code == MPI_SUCCESS) {
    v[1] = esize;
    v[2] = -esize;
    v[3] = (long long)hash_str(datarep);
    v[4] = -v[3];
  }
  if (pario_allreduce_max(v, r, N + PARIO_SLOTS, MPI_LONG_LONG, f->comm) != MPI_SUCCESS && code == MPI_SUCCESS)
    code = pario_err(MPI_ERR_OTHER, op, f->filename, 0, "agreement among ranks failed");
  long long voted = 0;
  for (int i = 0; i < PARIO_SLOTS; i++) voted |= r[N + i];
  int earlier = r[6] != -r[7] || r[8] != -r[9];
  pthread_mutex_lock(&f->lock);
  if (voted) f->vdef.never = 1, f->vdef.on = 0; /* an agreeing set_view turns it off, never on */
  else f->vdef.slot = 0; /* nobody used the shared pointer: every counter is still 0 */
  f->vdef.flags &= ~s.vdef[2];
  if (earlier) f->vdef.base = (unsigned long long)s.vdef[0], f->vdef.ebase = s.vdef[1];
  pthread_mutex_unlock(&f->lock);
  if (code != MPI_SUCCESS) return code;
  if (r[8] != -r[9])
    return pario_err(MPI_ERR_ARG, op, f->filename, 0, "an earlier set_view failed on another rank (its agreement was deferred)");
  if (r[6] != -r[7])
    return pario_err(MPI_ERR_NOT_SAME, op, f->filename, 0, "an earlier set_view's etype size or datarep differed between ranks (its agreement was deferred)");
  if (r[0]) return pario_err(MPI_ERR_ARG, op, f->filename, 0, "invalid view arguments on another rank");
  if (r[1] != -r[2]) return pario_err(MPI_ERR_NOT_SAME, op, f->filename, 0, "etype size differs between ranks");
  if (r[3] != -r[4]) return pario_err(MPI_ERR_NOT_SAME, op, f->filename, 0, "datarep differs between ranks");
  memcpy(votes, r + N, sizeof(long long) * PARIO_SLOTS);
  *any_info = r[5] != 0;
  return MPI_SUCCESS;
}

static pario_view *view_make(pario_file *f, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype,
                             const char *datarep, view_args *a) {
  pario_view *nv = calloc(1, sizeof *nv);
  if (!nv) return NULL;
  nv->disp = disp;
  nv->etype = keep(etype, &nv->owned[0]);
  nv->filetype = keep(filetype, &nv->owned[1]);
  if (pario_typemap_get(nv->filetype, &nv->ftm) != MPI_SUCCESS) nv->ftm = a->ftm;
  nv->rep = a->rep;
  if (a->fown) { /* the file representation's layout: the view owns it */
    nv->ftm = nv->ftm_own = a->fown;
    a->fown = NULL;
  }
  nv->esize = a->esize;
  nv->contiguous = nv->ftm->dense;
  nv->widest_hole = widest_hole(nv->ftm);
  snprintf(nv->datarep, sizeof nv->datarep, "%s", datarep);
  nv->gen = f->view_gen + 1; /* every rank counts the same successful set_views */
  nv->refs = 1;
  return nv;
}

/* set_view while the agreement is deferred: no collective. Hints this rank's info changes
 * apply here at once (after this rank's operations finished) and reach the others at the next
 * settle. The shared pointer moves to the next counter slot (pario_vdefer.slot), untouched so
 * far, and layers are told that no rank voted: the pointer restarts at 0 in the new view, on
 * every rank, whether or not some rank used it in the old one. A failure here is this rank's
 * error now and every rank's at the next settle. */
static int view_deferred(pario_file *f, const char *op, int code, MPI_Offset disp, MPI_Datatype etype,
                         MPI_Datatype filetype, const char *datarep, view_args *a, const pario_hints *nh) {
  long long votes[PARIO_SLOTS] = {0};
  int new_hints = code == MPI_SUCCESS && memcmp(nh, &f->hints, sizeof *nh) != 0;
  pthread_mutex_lock(&f->lock);
  f->vdef.slot++; /* every rank, failed here or not: the slots stay equal (below the last, pario_set_view) */
  pthread_mutex_unlock(&f->lock);
  if (new_hints) pario_layers_quiesce(f);
  int rc = code == MPI_SUCCESS ? pario_layers_set_view(f, op, &disp, votes) : code;
  pario_view *nv = rc == MPI_SUCCESS ? view_make(f, disp, etype, filetype, datarep, a) : NULL;
  pario_typemap_free(a->fown);
  if (rc == MPI_SUCCESS && !nv) rc = pario_err(MPI_ERR_NO_MEM, op, f->filename, 0, "out of memory");
  pthread_mutex_lock(&f->lock);
  if (rc != MPI_SUCCESS) {
    f->view_gen++; /* every rank counts every set_view */
    f->vdef.chk += vdef_hash(f->view_gen, -1, NULL);
    f->vdef.errs++;
    pthread_mutex_unlock(&f->lock);
    return rc;
  }
  f->vdef.chk += vdef_hash(nv->gen, nv->esize, datarep);
  if (new_hints) f->vdef.flags |= PARIO_VDEF_HINTS;
  pthread_mutex_unlock(&f->lock);
  view_install(f, nv, nh, new_hints);
  return MPI_SUCCESS;
}

int pario_set_view(pario_file *f, const char *op, MPI_Offset disp, MPI_Datatype etype,
                   MPI_Datatype filetype, const char *datarep, MPI_Info info) {
  view_args a = {0};
  long long votes[PARIO_SLOTS];
  int any_info = 0;
  if (pario_wait_stuck_ms()) return pario_comm_err(op, f->filename); /* a deferred view would not communicate */
  int code = check_view(f, op, disp, etype, filetype, datarep, &a);
  /* An info that changes no hint here (HDF5 passes its file's info at every set_view) is as
   * good as none: when no rank's changes one, set_view costs its one agreement and nothing
   * more (no quiescing, no hints broadcast). f->hints changes only in collective calls. */
  pario_hints nh;
  memcpy(&nh, &f->hints, sizeof nh); /* padding too: the comparison is bytewise */
  if (info != MPI_INFO_NULL) pario_hints_update(&nh, info);
  pthread_mutex_lock(&f->lock);
  int defer = f->vdef.on && f->vdef.slot < PARIO_VDEF_SLOTS - 1; /* the same on every rank */
  pthread_mutex_unlock(&f->lock);
  if (defer) return view_deferred(f, op, code, disp, etype, filetype, datarep, &a, &nh);
  code = view_agree(f, op, code, a.esize, datarep, memcmp(&nh, &f->hints, sizeof nh) != 0, votes, &any_info);
  if (code != MPI_SUCCESS) {
    pario_typemap_free(a.fown);
    return code;
  }
  if (any_info) { /* hints change: nothing in flight may see it, and rank 0's shared ones win */
    pario_layers_quiesce(f);
    if (pario_hints_agree(f->comm, &nh, NULL, 0) != MPI_SUCCESS) {
      pario_typemap_free(a.fown);
      return pario_err(MPI_ERR_OTHER, op, f->filename, 0, "agreement on hints failed");
    }
  }
  /* Layers act before the view changes (the shared pointer's layer resolves
   * MPI_DISPLACEMENT_CURRENT in the old view and restarts the pointer). */
  int rc = pario_layers_set_view(f, op, &disp, votes);
  pario_view *nv = rc == MPI_SUCCESS ? view_make(f, disp, etype, filetype, datarep, &a) : NULL;
  pario_typemap_free(a.fown); /* still ours when no view took it */
  if (rc != MPI_SUCCESS) return rc;
  if (!nv) return pario_err(MPI_ERR_NO_MEM, op, f->filename, 0, "out of memory");
  view_install(f, nv, &nh, any_info);
  return MPI_SUCCESS;
}
