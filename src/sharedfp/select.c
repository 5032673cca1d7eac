/* Choosing a shared file pointer component per file, on first use: the pario_sharedfp hint
 * forces one; otherwise the highest priority that can run. Every rank sees the same hint,
 * node count and file system, so every rank makes the same choice without communicating. */
#include "sharedfp/sharedfp.h"

#include <string.h>

static const pario_sharedfp_component *const all[] = {&pario_sharedfp_sm, &pario_sharedfp_lockedfile};
enum { NCOMP = sizeof all / sizeof all[0] };

static int choose(pario_file *f, const char *op) {
  const pario_sharedfp_component *best = NULL;
  int bestp = -1;
  for (int i = 0; i < NCOMP; i++) {
    int forced = !strcmp(f->hints.sharedfp, all[i]->name);
    if (strcmp(f->hints.sharedfp, "auto") && !forced) continue;
    int p = all[i]->query(f);
    if (p > bestp) best = all[i], bestp = p;
  }
  if (!best)
    return pario_err(MPI_ERR_UNSUPPORTED_OPERATION, op, f->filename, 0,
                     "no shared file pointer component can run here (pario_sharedfp=%s)", f->hints.sharedfp);
  int e = best->attach(f, &f->sfp_state);
  if (e) return pario_err(pario_errno_class(e), op, f->filename, e, "cannot set up the %s shared file pointer", best->name);
  f->sfp = best;
  return MPI_SUCCESS;
}

static int ready(pario_file *f, const char *op) {
  return f->sfp ? MPI_SUCCESS : choose(f, op);
}

int pario_sharedfp_fetch_add(pario_file *f, const char *op, MPI_Offset n, MPI_Offset *pos) {
  MPI_Offset old = 0;
  int rc = ready(f, op);
  if (rc != MPI_SUCCESS) return rc;
  int e = f->sfp->fetch_add(f->sfp_state, n, &old);
  if (e) return pario_err(pario_errno_class(e), op, f->filename, e, "shared file pointer update failed");
  *pos = f->sfp_base + old;
  return MPI_SUCCESS;
}

int pario_sharedfp_position(pario_file *f, const char *op, MPI_Offset *pos) {
  return pario_sharedfp_fetch_add(f, op, 0, pos);
}

int pario_sharedfp_set(pario_file *f, const char *op, MPI_Offset target) {
  /* Everyone's earlier shared accesses are done; rank 0 reads S once for all. */
  MPI_Offset s = 0;
  int rc = MPI_SUCCESS;
  PMPI_Barrier(f->comm);
  if (f->rank == 0) {
    rc = pario_sharedfp_position(f, op, &s);
    s -= f->sfp_base;
  }
  long long v[2] = {rc != MPI_SUCCESS, s};
  PMPI_Bcast(v, 2, MPI_LONG_LONG, 0, f->comm);
  if (v[0]) return rc != MPI_SUCCESS ? rc : pario_err(MPI_ERR_OTHER, op, f->filename, 0, "shared file pointer unavailable on rank 0");
  f->sfp_base = target - v[1];
  return MPI_SUCCESS;
}

void pario_sharedfp_close(pario_file *f) {
  if (f->sfp) f->sfp->detach(f->sfp_state);
  f->sfp = NULL;
  PMPI_Barrier(f->comm); /* all detached before the storage goes */
  if (f->rank == 0)
    for (int i = 0; i < NCOMP; i++) all[i]->remove(f);
}

const char *pario_sharedfp_name(const pario_file *f) { return f->sfp ? f->sfp->name : f->hints.sharedfp; }
