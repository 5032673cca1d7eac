/* Choosing a shared file pointer component per file. The pario_sharedfp hint forces one;
 * auto takes the highest priority that can run: sm (one node), rma, addproc, lockedfile;
 * individual only when named. Every rank sees the same hint, node count, amode and thread
 * level, so every rank makes the same choice without communicating. (The hint must be the
 * same on every rank; open does not check it. Carrying rank 0's value in open's broadcast
 * would make that unnecessary.)
 *
 * When: sm, lockedfile and individual attach lazily on a rank's first shared-pointer call,
 * so a program that never uses shared pointers pays nothing. rma (a window) and addproc (a
 * server thread on a private communicator) need every rank to set them up, but the first
 * shared-pointer call may be an independent write_shared on one rank while the others sit in
 * an unrelated collective: waiting for them there would deadlock. The only collective call
 * certain to come before it is MPI_File_open, so these two are set up there, and only when
 * the file asked for them: pario_sharedfp=rma|addproc, or auto on several nodes with
 * MPI_MODE_SEQUENTIAL (such a file can only be accessed through shared pointers). Otherwise
 * auto across nodes takes lockedfile, the best lazy component there. */
#include "sharedfp/sharedfp.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static const pario_sharedfp_component *const all[] = {
    &pario_sharedfp_sm, &pario_sharedfp_rma, &pario_sharedfp_addproc, &pario_sharedfp_lockedfile,
    &pario_sharedfp_individual};
enum { NCOMP = sizeof all / sizeof all[0] };

static int named(const pario_file *f, const char *name) { return !strcmp(f->hints.sharedfp, name); }

/* The component to set up inside MPI_File_open, or NULL (identical on all ranks). */
static const pario_sharedfp_component *at_open(pario_file *f) {
  if (named(f, "rma")) return &pario_sharedfp_rma;
  if (named(f, "addproc")) return &pario_sharedfp_addproc;
  if (named(f, "auto") && f->nodes > 1 && (f->amode & MPI_MODE_SEQUENTIAL))
    return pario_sharedfp_rma.query(f) >= 0 ? &pario_sharedfp_rma : &pario_sharedfp_addproc;
  return NULL;
}

void pario_sharedfp_open(pario_file *f) {
  static const char op[] = "MPI_File_open";
  const pario_sharedfp_component *c = at_open(f);
  if (!c) return;
  void *st = NULL;
  /* The query must hold everywhere before anyone enters the collective setup. */
  if (pario_agree(f->comm, c->query(f) >= 0 ? MPI_SUCCESS : MPI_ERR_OTHER) != MPI_SUCCESS) {
    f->sfp_err = pario_err(MPI_ERR_UNSUPPORTED_OPERATION, op, f->filename, 0,
                           "the %s shared file pointer cannot run here%s", c->name,
                           c == &pario_sharedfp_addproc ? " (it needs MPI_THREAD_MULTIPLE)" : "");
    return;
  }
  int e = c->setup(f, &st); /* collective; the same result on every rank */
  if (e) {
    f->sfp_err = pario_err(pario_errno_class(e), op, f->filename, e, "cannot set up the %s shared file pointer", c->name);
    return;
  }
  f->sfp = c;
  f->sfp_state = st;
}

static int choose(pario_file *f, const char *op) {
  const pario_sharedfp_component *best = NULL;
  int bestp = -1;
  if (f->sfp_err) return f->sfp_err; /* the component asked for failed at open */
  for (int i = 0; i < NCOMP; i++) {
    int forced = named(f, all[i]->name);
    if (!named(f, "auto") && !forced) continue;
    if (!all[i]->attach || (all[i]->forced_only && !forced)) continue; /* set up at open only */
    int p = all[i]->query(f);
    if (p > bestp) best = all[i], bestp = p;
  }
  if (!best)
    return pario_err(MPI_ERR_UNSUPPORTED_OPERATION, op, f->filename, 0,
                     "no shared file pointer component can run here (pario_sharedfp=%s)%s", f->hints.sharedfp,
                     named(f, "auto") ? "; pario_sharedfp=rma or addproc sets one up at open" : "");
  int e = best->attach(f, &f->sfp_state);
  if (e) return pario_err(pario_errno_class(e), op, f->filename, e, "cannot set up the %s shared file pointer", best->name);
  f->sfp = best;
  return MPI_SUCCESS;
}

static int ready(pario_file *f, const char *op) {
  return f->sfp ? MPI_SUCCESS : choose(f, op);
}

int pario_sharedfp_defers(pario_file *f) { return named(f, "individual"); }

int pario_sharedfp_check(pario_file *f, const char *op, int rw) {
  if (rw == PARIO_READ && pario_sharedfp_defers(f))
    return pario_err(MPI_ERR_UNSUPPORTED_OPERATION, op, f->filename, 0,
                     "reads through the shared file pointer are not supported by the write-only "
                     "individual component (pario_sharedfp=individual)");
  return MPI_SUCCESS;
}

int pario_sharedfp_write(pario_file *f, const char *op, const void *buf, MPI_Count count,
                         MPI_Datatype type, MPI_Offset n) {
  int rc = ready(f, op);
  return rc != MPI_SUCCESS ? rc : f->sfp->write(f, f->sfp_state, op, buf, count, type, n);
}

int pario_sharedfp_merge(pario_file *f, const char *op) {
  if (!pario_sharedfp_defers(f)) return MPI_SUCCESS;
  ready(f, op); /* a rank that failed to attach takes part with no state; merge reports it */
  return pario_sharedfp_individual.merge(f, f->sfp ? f->sfp_state : NULL, op);
}

static int update_failed(pario_file *f, const char *op, int e) {
  return pario_err(pario_errno_class(e), op, f->filename, e, "shared file pointer update failed");
}

int pario_sharedfp_fetch_add(pario_file *f, const char *op, MPI_Offset n, MPI_Offset *pos) {
  MPI_Offset old = 0;
  int rc = ready(f, op);
  if (rc != MPI_SUCCESS) return rc;
  int e = f->sfp->fetch_add(f->sfp_state, n, &old);
  if (e) return update_failed(f, op, e);
  *pos = f->sfp_base + old;
  return MPI_SUCCESS;
}

int pario_sharedfp_ordered(pario_file *f, const char *op, MPI_Offset n, MPI_Offset *pos) {
  int rc = pario_sharedfp_merge(f, op), repl = pario_sharedfp_defers(f);
  if (rc != MPI_SUCCESS) return rc; /* merge agrees: every rank returns here together */
  if (!f->sfp_ordered) { /* first ordered call: the hook only if every rank has it */
    int ok = !repl && ready(f, op) == MPI_SUCCESS && f->sfp->ordered;
    f->sfp_ordered = pario_agree(f->comm, ok ? MPI_SUCCESS : MPI_ERR_OTHER) == MPI_SUCCESS ? 1 : -1;
  }
  if (f->sfp_ordered > 0) {
    MPI_Offset before = 0, old = 0;
    int e = f->sfp->ordered(f->sfp_state, n, &before, &old);
    if (e) return update_failed(f, op, e);
    *pos = f->sfp_base + old + before;
    return MPI_SUCCESS;
  }
  long long mine = n, before = 0, v[3] = {0, 0, 0};
  MPI_Request r;
  PMPI_Iexscan(&mine, &before, 1, MPI_LONG_LONG, MPI_SUM, f->comm, &r);
  pario_wait_all_short(1, &r, MPI_STATUSES_IGNORE); /* politely: see wait_polite in core/open.c */
  if (f->rank == 0) before = 0; /* Exscan leaves rank 0's result undefined */
  int last = f->nprocs - 1;
  MPI_Offset base = 0;
  if (f->rank == last) {
    v[2] = before + mine;
    if (!repl) rc = pario_sharedfp_fetch_add(f, op, v[2], &base); /* one update for all */
    v[0] = rc != MPI_SUCCESS;
    v[1] = base;
  }
  PMPI_Ibcast(v, 3, MPI_LONG_LONG, last, f->comm, &r);
  pario_wait_all_short(1, &r, MPI_STATUSES_IGNORE);
  if (v[0]) return rc != MPI_SUCCESS ? rc : pario_err(MPI_ERR_OTHER, op, f->filename, 0, "shared file pointer unavailable");
  base = v[1];
  if (repl) { /* a replica on every rank, equal after the merge: every rank advances its own */
    rc = pario_sharedfp_fetch_add(f, op, v[2], &base);
    if (rc != MPI_SUCCESS) return rc;
  }
  *pos = base + before;
  return MPI_SUCCESS;
}

int pario_sharedfp_position(pario_file *f, const char *op, MPI_Offset *pos) {
  return pario_sharedfp_fetch_add(f, op, 0, pos);
}

int pario_sharedfp_set(pario_file *f, const char *op, MPI_Offset target) {
  /* Everyone's earlier shared accesses are done; rank 0 reads S once for all. */
  MPI_Offset s = 0;
  int rc = pario_sharedfp_merge(f, op);
  if (rc != MPI_SUCCESS) return rc;
  MPI_Request r;
  PMPI_Ibarrier(f->comm, &r);
  pario_wait_all_short(1, &r, MPI_STATUSES_IGNORE);
  if (f->rank == 0) {
    rc = pario_sharedfp_position(f, op, &s);
    s -= f->sfp_base;
  }
  long long v[2] = {rc != MPI_SUCCESS, s};
  PMPI_Ibcast(v, 2, MPI_LONG_LONG, 0, f->comm, &r);
  pario_wait_all_short(1, &r, MPI_STATUSES_IGNORE);
  if (v[0]) return rc != MPI_SUCCESS ? rc : pario_err(MPI_ERR_OTHER, op, f->filename, 0, "shared file pointer unavailable on rank 0");
  f->sfp_base = target - v[1];
  return MPI_SUCCESS;
}

void pario_sharedfp_close(pario_file *f) {
  if (f->sfp) f->sfp->detach(f->sfp_state); /* collective for rma and addproc: all have them */
  f->sfp = NULL;
  PMPI_Barrier(f->comm); /* all detached before the storage goes */
  if (f->rank == 0)
    for (int i = 0; i < NCOMP; i++)
      if (all[i]->remove) all[i]->remove(f);
}

const char *pario_sharedfp_name(const pario_file *f) { return f->sfp ? f->sfp->name : f->hints.sharedfp; }

void pario_sharedfp_hidden_path(const pario_file *f, const char *suffix, char *buf, size_t n) {
  const char *slash = strrchr(f->path, '/');
  int dirlen = slash ? (int)(slash - f->path + 1) : 0;
  snprintf(buf, n, "%.*s.%s.pario-sfp-%llx%s", dirlen, f->path, slash ? slash + 1 : f->path, f->uid, suffix);
}
