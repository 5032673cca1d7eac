/* Choosing a shared file pointer component per file. The pario_sharedfp hint forces one;
 * auto takes the highest priority that can run: server (the storage's own counter, for
 * files on a pario-server), sm (one node, or several nodes of the MPI on one kernel: checked
 * at open, one_kernel), rma, addproc, lockedfile; individual only when
 * named. lockedfile and individual keep files beside the data file: never for remote files.
 * Every rank sees the same hint, node count, amode and thread level (open's hint agreement,
 * core/hints.c, gives every rank rank 0's pario_sharedfp), so every rank makes the same
 * choice without communicating.
 *
 * When: server, sm, lockedfile and individual attach lazily on a rank's first shared-pointer call,
 * so a program that never uses shared pointers pays nothing. rma (a window) and addproc (a
 * server thread on a private communicator) need every rank to set them up, but the first
 * shared-pointer call may be an independent write_shared on one rank while the others sit in
 * an unrelated collective: waiting for them there would deadlock. The only collective call
 * certain to come before it is MPI_File_open, so these two are set up there, and only when
 * the file asked for them: pario_sharedfp=rma|addproc, or auto on several nodes with
 * MPI_MODE_SEQUENTIAL (such a file can only be accessed through shared pointers) unless the
 * file is on a server: addproc (its lease across nodes) with MPI_THREAD_MULTIPLE, else rma
 * unless lockedfile serves it better (seq_lockedfile: a local file system, or, with MPICH,
 * rank 0's host oversubscribed). Otherwise auto across nodes takes lockedfile, the best lazy
 * component there: addproc would beat it, but it needs every rank at open, and a server
 * thread, a connection per rank and an agent thread per rank at every open of every file
 * across nodes is too much to pay for the programs that never move a shared pointer
 * (pario_sharedfp=addproc asks for it). docs/sharedfp.md has the measurements behind the rule. */
#include "sharedfp/sharedfp.h"
#include "trace/trace.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <unistd.h>

/* The layer's per-file state (core keeps it in the file's SHAREDFP slot). */
typedef struct sfp_file {
  const pario_sharedfp_component *comp; /* chosen on first use (or at open), then fixed */
  void *cstate;                         /* the component's state */
  MPI_Offset base;  /* the pointer is base + S (etypes); equal on all ranks */
  int ordered;      /* ordered calls use the component's hook: 0 not known yet, 1 yes, -1 no */
  int err;          /* the class of the failure of the component set up at open (reported on use) */
  char why[160];    /* and why, for the message of each shared-pointer call */
  int one_kernel;   /* several nodes of the MPI, one kernel (one_kernel): sm can run */
  pthread_mutex_t attach_lock; /* threads of one rank attach once */
} sfp_file;

static sfp_file *st(const pario_file *f) { return pario_layer_state(f, PARIO_SLOT_SHAREDFP); }

static const pario_sharedfp_component *const all[] = {
    &pario_sharedfp_server, &pario_sharedfp_sm, &pario_sharedfp_rma, &pario_sharedfp_addproc, &pario_sharedfp_lockedfile,
    &pario_sharedfp_individual};
enum { NCOMP = sizeof all / sizeof all[0] };

static int named(const pario_file *f, const char *name) { return !strcmp(f->hints.sharedfp, name); }

/* Whether the file lives on a file system served over a network (statfs magic numbers of
 * NFS, Lustre, GPFS, CIFS/SMB2, Ceph, BeeGFS, OrangeFS, 9p, AFS, FUSE, OCFS2, GFS2); unknown
 * counts as network. Tests: PARIO_TEST_NETWORK_FS=1 makes every file count as on a network
 * file system, =0 as on a local one. */
static int network_fs(const pario_file *f) {
  static const unsigned long magic[] = {0x6969,     0x0BD00BD0, 0x47504653, 0xFF534D42, 0xFE534D42, 0x00C36400,
                                        0x19830326, 0x20030528, 0x01021997, 0x5346414F, 0x65735546, 0x7461636F,
                                        0x01161970};
  const char *t = getenv("PARIO_TEST_NETWORK_FS");
  struct statfs sb;
  if (t && (*t == '0' || *t == '1')) return *t == '1';
  if (f->drv->remote || statfs(f->path, &sb) != 0) return 1;
  for (size_t i = 0; i < sizeof magic / sizeof magic[0]; i++)
    if ((unsigned long)(unsigned)sb.f_type == magic[i]) return 1;
  return 0;
}

/* A hash of gethostname: the host, which MPICH's cliques do not divide (the MPI's node view
 * and its processor names may). */
static long long host_hash(void) {
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  return pario_name_hash(host, strlen(host));
}

/* Collective: 1 when rank 0's host runs more of the file's ranks than rank 0 may use CPUs
 * (sched_getaffinity): rank 0 then serves rma's remote atomics only when the scheduler gives
 * it (or its progress thread) a turn. Hosts are told apart by gethostname, not by the MPI's
 * node split (which MPICH's cliques divide). */
static int rank0_oversubscribed(pario_file *f) {
  cpu_set_t set;
  long long h = host_hash(), v[2] = {h, sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1};
  PMPI_Bcast(v, 2, MPI_LONG_LONG, 0, f->comm);
  int mine = h == v[0], there = 0;
  PMPI_Allreduce(&mine, &there, 1, MPI_INT, MPI_SUM, f->comm);
  return there > v[1];
}

/* Collective, at open on several nodes of the MPI: 1 when every rank runs on one kernel after
 * all (MPICH's cliques; an MPI whose node split is not the machine's), so that POSIX shared
 * memory reaches them all and sm, the fastest component, can run. The host names must agree,
 * and a segment rank 0 makes must hold, for every rank, the file's id that rank 0 wrote: two
 * machines of one name, or containers with their own /dev/shm, fail there. Tests:
 * PARIO_TEST_ONE_KERNEL=0 (on every rank) makes the ranks count as on separate machines. */
static int one_kernel(pario_file *f) {
  const char *t = getenv("PARIO_TEST_ONE_KERNEL");
  if (t && *t == '0') return 0;
  int same = 0;
  if (pario_same_everywhere(f->comm, host_hash(), &same) != MPI_SUCCESS || !same) return 0;
  char name[64];
  snprintf(name, sizeof name, "/pario-sfp-%llx-probe", f->uid);
  unsigned long long id = f->uid;
  int ok = 1, all_ok = 0;
  if (f->rank == 0) {
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    ok = fd >= 0 && pwrite(fd, &id, sizeof id, 0) == (ssize_t)sizeof id;
    if (fd >= 0) close(fd);
  }
  PMPI_Bcast(&ok, 1, MPI_INT, 0, f->comm);
  if (ok && f->rank != 0) {
    int fd = shm_open(name, O_RDONLY, 0);
    id = 0;
    ok = fd >= 0 && pread(fd, &id, sizeof id, 0) == (ssize_t)sizeof id && id == f->uid;
    if (fd >= 0) close(fd);
  }
  PMPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, f->comm);
  if (f->rank == 0) shm_unlink(name);
  return all_ok;
}

int pario_sharedfp_one_kernel(const pario_file *f) {
  const sfp_file *sf = st(f);
  return sf && sf->one_kernel;
}

/* Whether the MPI serves rma's remote atomics in software at rank 0: MPICH 4.0 (ch4:ucx) runs
 * them as active messages there; Open MPI's one-sided components complete them without the
 * target (measured: rma's multi-node form kept pace with lockedfile at 4 ranks on 2 cores,
 * docs/sharedfp.md). Asked of the MPI at run time (one job runs one MPI, so every rank
 * answers alike). */
static int atomics_wait_for_rank0(void) { return pario_host_mpi() == PARIO_HOST_MPICH; }

/* auto across nodes for a sequential file (collective; the same answer on every rank):
 * lockedfile instead of rma where its locks work and either the file system is local (the
 * "nodes" share one host: an fcntl lock is a kernel call, while rma's atomics wait for rank
 * 0 to make progress) or rank 0 must serve the atomics and its host is oversubscribed (they
 * starve). */
static int seq_lockedfile(pario_file *f) {
  int v[2] = {pario_sharedfp_lockedfile.query(f) >= 0, !network_fs(f)}, every[2];
  PMPI_Allreduce(v, every, 2, MPI_INT, MPI_MIN, f->comm);
  if (!every[0]) return 0;
  return every[1] || (atomics_wait_for_rank0() && rank0_oversubscribed(f));
}

/* The component to set up inside MPI_File_open, or NULL (identical on all ranks). */
static const pario_sharedfp_component *at_open(pario_file *f, const sfp_file *sf) {
  if (named(f, "rma")) return &pario_sharedfp_rma;
  if (named(f, "addproc")) return &pario_sharedfp_addproc;
  if (named(f, "auto") && f->nodes > 1 && (f->amode & MPI_MODE_SEQUENTIAL) && pario_sharedfp_server.query(f) < 0 &&
      !sf->one_kernel) {
    /* addproc's lease makes an update a memory add on the rank holding it: 1.8-3.4x lockedfile
     * across namespace nodes (docs/sharedfp.md "The lease"), on any file system */
    if (pario_sharedfp_addproc.query(f) >= 0) return &pario_sharedfp_addproc;
    if (pario_sharedfp_rma.query(f) >= 0 && !seq_lockedfile(f)) return &pario_sharedfp_rma;
  }
  return NULL;
}

/* Collective: set up c (its query must hold on every rank first). MPI_SUCCESS, or the error
 * class (the same on every rank: the setups agree) with sf->why saying why. */
static int try_setup(pario_file *f, sfp_file *sf, const pario_sharedfp_component *c) {
  void *cs = NULL;
  if (pario_agree(f->comm, c->query(f) >= 0 ? MPI_SUCCESS : MPI_ERR_OTHER) != MPI_SUCCESS) {
    snprintf(sf->why, sizeof sf->why, "the %s shared file pointer cannot run here%s", c->name,
             c == &pario_sharedfp_addproc ? " (it needs MPI_THREAD_MULTIPLE)" : "");
    return MPI_ERR_UNSUPPORTED_OPERATION;
  }
  int e = c->setup(f, &cs); /* collective; the same result on every rank */
  if (e == ENOTSUP) { /* the MPI cannot do it here (rma: no window across these nodes) */
    snprintf(sf->why, sizeof sf->why, "the %s shared file pointer could not be set up at MPI_File_open (the MPI refused its %s)",
             c->name, c == &pario_sharedfp_rma ? "window" : "communicator or thread");
    return MPI_ERR_UNSUPPORTED_OPERATION;
  }
  if (e) {
    snprintf(sf->why, sizeof sf->why, "the %s shared file pointer could not be set up at MPI_File_open: %s", c->name,
             strerror(e));
    return pario_errno_class(e);
  }
  sf->comp = c;
  sf->cstate = cs;
  return MPI_SUCCESS;
}

/* Collective, inside MPI_File_open: set up rma or addproc when this file will use one. A
 * forced component that cannot be set up (an MPI whose one-sided components do not work
 * between these nodes: MPI_Win_allocate fails, which pario's communicators return instead of
 * aborting) leaves its error for the shared-pointer calls; auto falls back to addproc, then
 * to the lazy components (lockedfile). */
static void setup_at_open(pario_file *f, sfp_file *sf) {
  if (f->nodes > 1 && (named(f, "auto") || named(f, "sm")) && !f->drv->remote) sf->one_kernel = one_kernel(f);
  const pario_sharedfp_component *c = at_open(f, sf);
  if (!c) return;
  int rc = try_setup(f, sf, c);
  if (rc == MPI_SUCCESS || !named(f, "auto")) {
    sf->err = rc;
    return;
  }
  pario_log(1, "%s: the %s shared file pointer cannot be set up here; trying the next", f->filename, c->name);
  if (c == &pario_sharedfp_rma && try_setup(f, sf, &pario_sharedfp_addproc) == MPI_SUCCESS) return;
  /* sf->err stays 0: the first shared-pointer call chooses among the lazy components */
}

static int choose(pario_file *f, sfp_file *sf, const char *op) {
  const pario_sharedfp_component *best = NULL;
  int bestp = -1;
  if (sf->err) return pario_err(sf->err, op, f->filename, 0, "%s", sf->why); /* the one asked for failed at open */
  for (int i = 0; i < NCOMP; i++) {
    int forced = named(f, all[i]->name);
    if (!named(f, "auto") && !forced) continue;
    if (!all[i]->attach || (all[i]->forced_only && !forced)) continue; /* set up at open only */
    int p = all[i]->query(f);
    if (p > bestp) best = all[i], bestp = p;
  }
  if (!best)
    return pario_err(MPI_ERR_UNSUPPORTED_OPERATION, op, f->filename, 0,
                     "no shared file pointer component can run here (pario_sharedfp=%s)%s%s", f->hints.sharedfp,
                     f->drv->remote ? "; lockedfile and individual keep files beside the data file, which a remote file does not have" : "",
                     named(f, "auto") ? "; pario_sharedfp=rma or addproc sets one up at open" : "");
  void *cs = NULL;
  int e = best->attach(f, &cs);
  if (e) return pario_err(pario_errno_class(e), op, f->filename, e, "cannot set up the %s shared file pointer", best->name);
  sf->cstate = cs;
  __atomic_store_n(&sf->comp, best, __ATOMIC_RELEASE);
  return MPI_SUCCESS;
}

/* The component, attached on first use; threads of one rank race here, so attaching is
 * done once under the state's lock (a component is never attached twice). */
static int ready(pario_file *f, const char *op) {
  sfp_file *sf = st(f);
  if (__atomic_load_n(&sf->comp, __ATOMIC_ACQUIRE)) return MPI_SUCCESS;
  pthread_mutex_lock(&sf->attach_lock);
  int rc = sf->comp ? MPI_SUCCESS : choose(f, sf, op);
  pthread_mutex_unlock(&sf->attach_lock);
  return rc;
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
  return rc != MPI_SUCCESS ? rc : st(f)->comp->write(f, st(f)->cstate, op, buf, count, type, n);
}

int pario_sharedfp_merge(pario_file *f, const char *op) {
  if (!pario_sharedfp_defers(f)) return MPI_SUCCESS;
  sfp_file *sf = st(f);
  ready(f, op); /* a rank that failed to attach takes part with no state; merge reports it */
  return pario_sharedfp_individual.merge(f, sf->comp ? sf->cstate : NULL, op, sf->base);
}

static int update_failed(pario_file *f, const char *op, int e) {
  return pario_err(pario_errno_class(e), op, f->filename, e, "shared file pointer update failed");
}

/* The counter slot of the current view (core/file.h pario_vdefer.slot): ranks that have not
 * reached a deferred set_view yet count in the old view's slot, those past it in the new one.
 * Only the lazy components keep several counters (sharedfp.h): a slot past 0 on a file of
 * another one would be a broken promise of setview.c, reported rather than miscounted. */
static int view_slot(pario_file *f, const char *op, int *slot) {
  pthread_mutex_lock(&f->lock);
  *slot = f->vdef.slot;
  pthread_mutex_unlock(&f->lock);
  const pario_sharedfp_component *c = __atomic_load_n(&st(f)->comp, __ATOMIC_ACQUIRE);
  if (*slot == 0 || (c->attach && !c->write)) return MPI_SUCCESS;
  return pario_err(MPI_ERR_INTERN, op, f->filename, 0, "set_view was deferred on a file whose %s shared file pointer keeps one counter",
                   c->name);
}

int pario_sharedfp_fetch_add(pario_file *f, const char *op, MPI_Offset n, MPI_Offset *pos) {
  MPI_Offset old = 0;
  int slot = 0, rc = ready(f, op);
  if (rc == MPI_SUCCESS) rc = view_slot(f, op, &slot);
  if (rc != MPI_SUCCESS) return rc;
  sfp_file *sf = st(f);
  uint64_t t0 = PARIO_TRACE_T0();
  int e = sf->comp->fetch_add(sf->cstate, slot, n, &old);
  PARIO_TRACE_SPANX(PARIO_TC_SFP, "fetch_add", t0, 0, "component", sf->comp->name, PARIO_TA("file", f->uid),
                    PARIO_TA("n", n), PARIO_TA("old", old), PARIO_TA("err", e));
  if (e) return update_failed(f, op, e);
  *pos = sf->base + old;
  return MPI_SUCCESS;
}

static int ordered_place(pario_file *f, const char *op, MPI_Offset n, MPI_Offset *pos);

/* The ordered call's wait: from the call until this rank's place is known (all ranks met). */
int pario_sharedfp_ordered(pario_file *f, const char *op, MPI_Offset n, MPI_Offset *pos) {
  uint64_t t0 = PARIO_TRACE_T0();
  int rc = ordered_place(f, op, n, pos);
  sfp_file *sf = st(f);
  const pario_sharedfp_component *c = PARIO_TRACING() ? __atomic_load_n(&sf->comp, __ATOMIC_ACQUIRE) : NULL;
  PARIO_TRACE_SPANX(PARIO_TC_SFP, "ordered_wait", t0, 0, "component", c ? c->name : "none",
                    PARIO_TA("file", f->uid), PARIO_TA("n", n), PARIO_TA("pos", rc == MPI_SUCCESS ? *pos : -1),
                    PARIO_TA("rc", rc));
  return rc;
}

static int ordered_place(pario_file *f, const char *op, MPI_Offset n, MPI_Offset *pos) {
  sfp_file *sf = st(f);
  int rc = pario_sharedfp_merge(f, op), repl = pario_sharedfp_defers(f);
  if (rc != MPI_SUCCESS) return rc; /* merge agrees: every rank returns here together */
  if (pario_wait_stuck_ms()) return pario_comm_err(op, f->filename); /* a pario_timeout: post nothing */
  if (!sf->ordered) { /* first ordered call: the hook only if every rank has it */
    int ok = !repl && ready(f, op) == MPI_SUCCESS && sf->comp->ordered;
    sf->ordered = pario_agree(f->comm, ok ? MPI_SUCCESS : MPI_ERR_OTHER) == MPI_SUCCESS ? 1 : -1;
    if (pario_wait_stuck_ms()) return pario_comm_err(op, f->filename); /* the agreement gave up */
  }
  if (sf->ordered > 0) {
    MPI_Offset before = 0, old = 0;
    int slot = 0;
    if ((rc = view_slot(f, op, &slot)) != MPI_SUCCESS) return rc; /* never fails: sm keeps slots */
    int e = sf->comp->ordered(sf->cstate, slot, n, &before, &old);
    if (e) return update_failed(f, op, e);
    *pos = sf->base + old + before;
    return MPI_SUCCESS;
  }
  long long mine = n, before = 0, v[3] = {0, 0, 0};
  MPI_Request r;
  /* A wait that gave up (pario_timeout) leaves the results unknown: no place to write at. */
  PMPI_Iexscan(&mine, &before, 1, MPI_LONG_LONG, MPI_SUM, f->comm, &r);
  if (pario_wait_all_short(1, &r, MPI_STATUSES_IGNORE) != MPI_SUCCESS) return pario_comm_err(op, f->filename);
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
  if (pario_wait_all_short(1, &r, MPI_STATUSES_IGNORE) != MPI_SUCCESS) return pario_comm_err(op, f->filename);
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
  if (pario_wait_stuck_ms()) return pario_comm_err(op, f->filename); /* a pario_timeout: post nothing */
  MPI_Request r;
  PMPI_Ibarrier(f->comm, &r);
  if (pario_wait_all_short(1, &r, MPI_STATUSES_IGNORE) != MPI_SUCCESS) return pario_comm_err(op, f->filename);
  if (f->rank == 0) {
    rc = pario_sharedfp_position(f, op, &s);
    s -= st(f)->base;
  }
  long long v[2] = {rc != MPI_SUCCESS, s};
  PMPI_Ibcast(v, 2, MPI_LONG_LONG, 0, f->comm, &r);
  if (pario_wait_all_short(1, &r, MPI_STATUSES_IGNORE) != MPI_SUCCESS) return pario_comm_err(op, f->filename);
  if (v[0]) return rc != MPI_SUCCESS ? rc : pario_err(MPI_ERR_OTHER, op, f->filename, 0, "shared file pointer unavailable on rank 0");
  st(f)->base = target - v[1];
  return MPI_SUCCESS;
}

void pario_sharedfp_hidden_path(const pario_file *f, const char *suffix, char *buf, size_t n) {
  const char *slash = strrchr(f->path, '/');
  int dirlen = slash ? (int)(slash - f->path + 1) : 0;
  snprintf(buf, n, "%.*s.%s.pario-sfp-%llx%s", dirlen, f->path, slash ? slash + 1 : f->path, f->uid, suffix);
}

/* ---- lifecycle hooks (core/layer.h) ---- */

static int hook_open(pario_file *f, void **state) {
  sfp_file *sf = calloc(1, sizeof *sf);
  if (!sf) return pario_err(MPI_ERR_NO_MEM, "MPI_File_open", f->filename, 0, "out of memory");
  pthread_mutex_init(&sf->attach_lock, NULL);
  *state = sf;
  setup_at_open(f, sf); /* collective: rma and addproc only for files that asked */
  if (f->amode & MPI_MODE_APPEND) { /* the shared pointer starts at the end too */
    off_t size = 0;
    if (f->drv->size(f->dh, &size) == 0) sf->base = size; /* core reports a failing size() */
  }
  return MPI_SUCCESS;
}

/* Whether any rank ever used the pointer: otherwise its storage still holds zero. The
 * individual component votes always: its kept writes are placed at a collective merge, which a
 * deferred set_view does not make, so set_view never defers on its files. */
static long long hook_view_vote(pario_file *f, void *state) {
  return ((sfp_file *)state)->comp != NULL || pario_sharedfp_defers(f);
}

/* set_view: MPI_DISPLACEMENT_CURRENT (sequential files) is where the shared pointer is, in
 * the old view; the pointer restarts at 0 in the new view. */
static int hook_set_view(pario_file *f, void *state, const char *op, MPI_Offset *disp, long long used) {
  sfp_file *sf = state;
  if (*disp == MPI_DISPLACEMENT_CURRENT) {
    MPI_Offset sp = 0;
    int rc = pario_sharedfp_position(f, op, &sp);
    if (rc != MPI_SUCCESS) return rc;
    pthread_mutex_lock(&f->lock);
    *disp = pario_view_file_offset(f->view, sp * f->view->esize);
    pthread_mutex_unlock(&f->lock);
  }
  if (used) return pario_sharedfp_set(f, op, 0);
  sf->base = 0;
  return MPI_SUCCESS;
}

static void hook_get_info(pario_file *f, void *state, MPI_Info info) {
  sfp_file *sf = state;
  const pario_sharedfp_component *c = __atomic_load_n(&sf->comp, __ATOMIC_ACQUIRE);
  PMPI_Info_set(info, "pario_sharedfp", c ? c->name : f->hints.sharedfp);
  if (c && c->get_info) c->get_info(sf->cstate, info);
}

/* sync and close: the writes the individual component kept reach the file. */
static int hook_merge(pario_file *f, void *state, const char *op) {
  (void)state;
  return pario_sharedfp_merge(f, op);
}

/* After every rank closed: release, and on rank 0 remove, the component's storage. */
static void hook_release(pario_file *f, void *state) {
  sfp_file *sf = state;
  if (!sf) return;
  if (sf->comp) sf->comp->detach(sf->cstate); /* collective for rma and addproc: all have them */
  PMPI_Barrier(f->comm); /* all detached before the storage goes */
  if (f->rank == 0)
    for (int i = 0; i < NCOMP; i++)
      if (all[i]->remove) all[i]->remove(f);
  pthread_mutex_destroy(&sf->attach_lock);
  free(sf);
}

static const pario_layer sharedfp_layer = {
    .name = "sharedfp",
    .open = hook_open,
    .view_vote = hook_view_vote,
    .set_view = hook_set_view,
    .get_info = hook_get_info,
    .sync = hook_merge,
    .close = hook_merge,
    .release = hook_release,
};

__attribute__((constructor)) static void sharedfp_register(void) {
  pario_layer_register(PARIO_SLOT_SHAREDFP, &sharedfp_layer);
}
