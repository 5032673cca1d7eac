/* The code paths that need more than one node, on MPICH's virtual nodes (README.md here):
 * run with MPIR_CVAR_NUM_CLIQUES=K and libpario-vnode.so preloaded ahead of libpario;
 * argv[1] is the number of nodes expected (default 2), argv[2] "clock" runs only individual's
 * clock and time-order check, three times over with 100 items per rank; "ns" runs every check
 * on namespace nodes (nsnodes.sh: separate /dev/shm, network and host names, one kernel), on
 * either MPI: there is no one-kernel case, and rma is checked where the MPI can make a window
 * across the nodes, else it must be refused cleanly on every rank (auto falls back). Checks, each against
 * a node map the test makes itself from MPI_Comm_split_type:
 *  - the set-up: the split gives that many nodes and the processor names follow it;
 *  - hints: cb_nodes defaults to one per node, cb_config_list "*:1" (and "*:*" beyond);
 *  - aggregator placement across nodes (the default cb_nodes, 1, nodes + 1, np): with one
 *    rank's aggregated accesses failing (PARIO_TEST_COLL_EIO), exactly the ranks whose block
 *    lies in that rank's file domain (and that rank) get the error, so every aggregator sits
 *    where the plan says;
 *  - an automatic collective read of interleaved pieces aggregates (on one node it would
 *    read independently), and collective writes and reads move the right bytes;
 *  - shared pointers, the nodes taken for separate machines (PARIO_TEST_ONE_KERNEL=0): auto
 *    gives lockedfile for a normal file, and for an MPI_MODE_SEQUENTIAL one rma on a network
 *    file system with a CPU per rank on rank 0's host, else lockedfile; sm is refused; as they
 *    are (one kernel under both virtual nodes): auto gives sm for both kinds of file, with
 *    nothing set up at open, and sm forced runs; rma takes its multi-node form (rank 0 runs
 *    its progress thread); rma, lockedfile, addproc, individual and sm place every rank's
 *    write_shared records exactly once; individual's clock offsets lie within the error bounds pario
 *    reports, and causally related writes of different nodes are placed in time order
 *    wherever those bounds can tell them apart. */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <dirent.h>
#include <dlfcn.h>
#include <sched.h>
#include <time.h>

#include "../mpi/harness.h"

static int rank, np, nn, want_nodes; /* rank: in fcomm */
static int *node_of, *place; /* per rank of fcomm: node index (nodes by lowest rank), place on it */
static MPI_Comm fcomm;       /* the communicator files are opened on */
static const char *layout = "MPI_COMM_WORLD";
static int ns_mode;     /* namespace nodes: no shared memory between the nodes */
static int rma_works;   /* the MPI makes a window across the nodes (a native probe) */
static char path[512];

/* A fresh file name per case: the cases run one after another in one directory. */
static const char *fname(const char *what) {
  static char p[600];
  snprintf(p, sizeof p, "%s.%s", path, what);
  return p;
}

/* Open files on c from now on; its node map, made here as pario makes its own. */
static void use_comm(MPI_Comm c, const char *name) {
  MPI_Comm node;
  fcomm = c;
  layout = name;
  MPI_Comm_rank(c, &rank);
  int lead = rank, *leads = malloc(sizeof(int) * (size_t)np);
  MPI_Comm_split_type(c, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Allreduce(&rank, &lead, 1, MPI_INT, MPI_MIN, node);
  MPI_Comm_free(&node);
  MPI_Allgather(&lead, 1, MPI_INT, leads, 1, MPI_INT, c);
  free(node_of);
  free(place);
  node_of = malloc(sizeof(int) * (size_t)np);
  place = malloc(sizeof(int) * (size_t)np);
  nn = 0;
  for (int r = 0; r < np; r++) {
    node_of[r] = leads[r] == r ? nn++ : node_of[leads[r]];
    place[r] = 0;
    for (int q = leads[r]; q < r; q++) place[r] += leads[q] == leads[r];
  }
  free(leads);
}

/* The set-up works: MPICH splits the ranks into the virtual nodes, the shim names them,
 * and pario serves the file calls. Returns 0 if the rest cannot mean anything. */
static int setup_ok(void) {
  char name[MPI_MAX_PROCESSOR_NAME + 1] = "", *all;
  int len = 0, ok = 1;
  CHECK(nn == want_nodes, "MPI_COMM_TYPE_SHARED gives %d nodes, want %d (MPIR_CVAR_NUM_CLIQUES?)", nn, want_nodes);
  MPI_Get_processor_name(name, &len);
  all = calloc((size_t)np, sizeof name);
  MPI_Allgather(name, sizeof name, MPI_CHAR, all, sizeof name, MPI_CHAR, MPI_COMM_WORLD);
  for (int r = 0; r < np; r++)
    for (int q = 0; q < np; q++)
      ok &= (node_of[r] == node_of[q]) == !strcmp(all + r * sizeof name, all + q * sizeof name);
  CHECK(ok, "processor names do not follow the nodes (%s on rank %d): is libpario-vnode.so preloaded (virtual nodes)?", name, rank);
  free(all);
  CHECK(dlsym(RTLD_DEFAULT, "pario_version") != NULL, "pario is not loaded");
  int good = nn == want_nodes && ok, all_good;
  MPI_Allreduce(&good, &all_good, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all_good;
}

static unsigned char pattern(long off) { return (unsigned char)(off * 131 + 7); }
static unsigned char datum(int r, long i) { return (unsigned char)(r * 37 + i * 11 + 1); }

static void prefill(const char *p, long len) {
  if (rank == 0) {
    FILE *fp = fopen(p, "wb");
    for (long i = 0; i < len; i++) fputc(pattern(i), fp);
    fclose(fp);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

static void check_info(MPI_File fh, const char *key, const char *want) {
  MPI_Info used;
  char v[MPI_MAX_INFO_VAL + 1] = "";
  int flag = 0;
  MPI_File_get_info(fh, &used);
  MPI_Info_get(used, key, MPI_MAX_INFO_VAL, v, &flag);
  CHECK(flag && !strcmp(v, want), "get_info %s = '%s', want '%s'", key, flag ? v : "(none)", want);
  MPI_Info_free(&used);
}

static MPI_File open_hints(const char *p, int amode, const char *const *kv) {
  MPI_Info info;
  MPI_File fh = MPI_FILE_NULL;
  MPI_Info_create(&info);
  for (; kv && kv[0]; kv += 2) MPI_Info_set(info, kv[0], kv[1]);
  int rc = MPI_File_open(fcomm, p, amode, info, &fh);
  CHECK(rc == MPI_SUCCESS, "open %s: %s", p, err_text(rc));
  MPI_Info_free(&info);
  return fh;
}

/* cb_nodes is one per node by default, and cb_config_list says so. */
static void hints(void) {
  char v[16];
  MPI_File fh = open_hints(fname("hints"), MPI_MODE_CREATE | MPI_MODE_RDWR, NULL);
  snprintf(v, sizeof v, "%d", nn);
  check_info(fh, "cb_nodes", v);
  check_info(fh, "cb_config_list", "*:1");
  MPI_File_close(&fh);
  if (np > nn) {
    snprintf(v, sizeof v, "%d", np);
    const char *kv[] = {"cb_nodes", v, NULL};
    fh = open_hints(fname("hints"), MPI_MODE_RDWR, kv);
    check_info(fh, "cb_nodes", v);
    check_info(fh, "cb_config_list", "*:*");
    MPI_File_close(&fh);
  }
  if (rank == 0) remove(fname("hints"));
}

/* The aggregators of cb_nodes = k, as docs/collective.md (The plan) places them: k <= nodes,
 * node i * nodes / k's first rank; more, the nodes' ranks in turn. */
static int aggregators(int k, int *aggr) {
  int n = 0;
  k = k < 1 ? 1 : k > np ? np : k;
  if (k <= nn) {
    for (int i = 0; i < k; i++)
      for (int r = 0; r < np; r++)
        if (node_of[r] == (int)((long long)i * nn / k) && place[r] == 0) aggr[n++] = r;
  } else {
    for (int turn = 0; n < k && turn < np; turn++)
      for (int node = 0; node < nn && n < k; node++)
        for (int r = 0; r < np; r++)
          if (node_of[r] == node && place[r] == turn && n < k) aggr[n++] = r;
  }
  return n;
}

/* cb_nodes = k (0: the default), one block of B bytes per rank read collectively, rank F's
 * aggregated accesses failing: when F aggregates every rank fails with MPI_ERR_IO, and the
 * ranks whose block does not meet F's domains still read the file's bytes; otherwise all read
 * them. Domains: the span cut in equal parts. */
enum { B = 1000 };
static void placement_case(int k, int F) {
  char v[16];
  snprintf(v, sizeof v, "%d", k);
  const char *kv[] = {"romio_cb_read", "enable", k ? "cb_nodes" : NULL, v, NULL};
  const char *p = fname("place");
  MPI_File fh = open_hints(p, MPI_MODE_RDONLY, kv);
  int aggr[64], na = aggregators(k ? k : nn, aggr);
  snprintf(v, sizeof v, "%d", na);
  check_info(fh, "cb_nodes", v);
  long span = (long)np * B, each = (span + na - 1) / na;
  int want_fail = 0, any_fail = 0;
  for (int i = 0; i < na; i++) {
    any_fail |= aggr[i] == F;
    if (aggr[i] == F && (rank == F || ((long)rank * B < (i + 1) * each && (long)(rank + 1) * B > i * each))) want_fail = 1;
  }
  unsigned char buf[B];
  memset(buf, 0, sizeof buf);
  snprintf(v, sizeof v, "%d", F);
  setenv("PARIO_TEST_COLL_EIO", v, 1); /* read when the file's collective context is made */
  int rc = MPI_File_read_at_all(fh, (MPI_Offset)rank * B, buf, B, MPI_BYTE, MPI_STATUS_IGNORE);
  unsetenv("PARIO_TEST_COLL_EIO");
  /* Collective errors reach every rank alike (docs/collective.md#errors): when an aggregator
   * fails every rank returns MPI_ERR_IO; a rank it did not serve still has its bytes, and its
   * message names the failing rank (in the file's communicator). */
  if (any_fail) {
    CHECK(err_class(rc) == MPI_ERR_IO, "%s, cb_nodes=%d, rank %d's aggregation failing: rank %d read %s, want MPI_ERR_IO",
          layout, k, F, rank, err_text(rc));
    if (!want_fail) {
      int same = 1;
      for (long i = 0; same && i < B; i++) same = buf[i] == pattern((long)rank * B + i);
      CHECK(same && strstr(err_text(rc), "failed on rank"), "%s, cb_nodes=%d, rank %d's aggregation failing: rank %d (not served "
            "by it) read %s%s", layout, k, F, rank, err_text(rc), same ? "" : " with wrong data");
    }
  } else {
    int same = rc == MPI_SUCCESS;
    for (long i = 0; same && i < B; i++) same = buf[i] == pattern((long)rank * B + i);
    CHECK(same, "%s, cb_nodes=%d, rank %d (no aggregator) failing: rank %d read %s%s", layout, k, F, rank,
          err_text(rc), rc == MPI_SUCCESS ? " with wrong data" : "");
  }
  MPI_File_close(&fh);
}

/* Every aggregator of cb_nodes = k in turn made to fail, and one rank that is none (opens
 * and first collective calls across nodes cost two MPI_Comm_split_type, about 0.1-0.3 s
 * with more ranks than cores: the cases are few). */
static void placement_pass(const int *ks, int nk) {
  for (int i = 0; i < nk; i++) {
    int aggr[64], na = aggregators(ks[i] ? ks[i] : nn, aggr), other = -1;
    for (int r = np - 1; r >= 0; r--) {
      int is = 0;
      for (int j = 0; j < na; j++) is |= aggr[j] == r;
      if (!is) other = r;
    }
    for (int j = 0; j < na; j++) placement_case(ks[i], aggr[j]);
    if (other >= 0) placement_case(ks[i], other);
  }
}

/* On MPI_COMM_WORLD (MPICH deals the ranks to its cliques in turn: node i's first rank is
 * rank i, so the aggregators come out in rank order as on one node) the default; on a
 * communicator with the ranks sorted by node (nodes are blocks of ranks, and the placement
 * differs from one node's: cb_nodes 2 at 4 ranks takes ranks 0 and 2) the default, fewer
 * aggregators than nodes, more, and one per rank. */
static void placement(void) {
  MPI_Comm by_node;
  int def[] = {0}, ks[] = {0, 1, nn + 1, np};
  prefill(fname("place"), (long)np * B);
  placement_pass(def, 1);
  MPI_Comm_split(MPI_COMM_WORLD, 0, node_of[rank] * np + rank, &by_node);
  use_comm(by_node, "ranks sorted by node");
  placement_pass(ks, np > nn ? 4 : 2);
  use_comm(MPI_COMM_WORLD, "MPI_COMM_WORLD");
  MPI_Comm_free(&by_node);
  if (rank == 0) remove(fname("place"));
}

/* Interleaved pieces of P bytes, N per rank: rank r's piece j at (j * np + r) * P. */
enum { P = 24, N = 300 };
static MPI_Datatype interleaved(void) {
  MPI_Datatype v, t;
  MPI_Type_vector(1, P, 1, MPI_BYTE, &v);
  MPI_Type_create_resized(v, 0, (MPI_Aint)np * P, &t);
  MPI_Type_free(&v);
  MPI_Type_commit(&t);
  return t;
}

/* romio_cb_read=automatic with no cb_nodes: on one node pario reads independently; across
 * nodes interleaved small pieces aggregate, so with rank 0's aggregated accesses failing
 * every rank (each has data in rank 0's domain) gets MPI_ERR_IO. Then the same read right. */
static void automatic_read(void) {
  const char *p = fname("auto");
  long len = (long)np * N * P;
  prefill(p, len);
  MPI_Datatype ft = interleaved();
  unsigned char *buf = malloc((size_t)N * P);
  for (int fail = 1; fail >= 0; fail--) {
    MPI_File fh = open_hints(p, MPI_MODE_RDONLY, NULL);
    MPI_File_set_view(fh, (MPI_Offset)rank * P, MPI_BYTE, ft, "native", MPI_INFO_NULL);
    memset(buf, 0, (size_t)N * P);
    if (fail) setenv("PARIO_TEST_COLL_EIO", "0", 1);
    int rc = MPI_File_read_all(fh, buf, N * P, MPI_BYTE, MPI_STATUS_IGNORE);
    unsetenv("PARIO_TEST_COLL_EIO");
    if (fail) {
      CHECK(err_class(rc) == MPI_ERR_IO, "automatic read_all across nodes did not aggregate: %s", err_text(rc));
    } else {
      int same = rc == MPI_SUCCESS;
      for (long i = 0; same && i < (long)N * P; i++) same = buf[i] == pattern(((i / P) * np + rank) * P + i % P);
      CHECK(same, "automatic read_all across nodes: %s%s", err_text(rc), rc == MPI_SUCCESS ? ", wrong data" : "");
    }
    MPI_File_close(&fh);
  }
  free(buf);
  MPI_Type_free(&ft);
  if (rank == 0) remove(p);
}

/* Collective write then read, aggregated (enable, and automatic: interleaved small pieces),
 * several rounds (cb_buffer_size 4096); the whole file checked with stdio. */
static void write_read(const char *mode) {
  const char *p = fname("wr");
  long len = (long)np * N * P + 17;
  prefill(p, len);
  const char *kv[] = {"romio_cb_write", mode, "romio_cb_read", mode, "cb_buffer_size", "4096", NULL};
  MPI_File fh = open_hints(p, MPI_MODE_RDWR, kv);
  MPI_Datatype ft = interleaved();
  MPI_File_set_view(fh, (MPI_Offset)rank * P, MPI_BYTE, ft, "native", MPI_INFO_NULL);
  unsigned char *out = malloc((size_t)N * P), *in = malloc((size_t)N * P);
  int n = rank == np - 1 ? N * P - 5 : N * P; /* the last rank stops short of its last piece */
  for (long i = 0; i < N * P; i++) out[i] = datum(rank, i);
  int rc = MPI_File_write_all(fh, out, n, MPI_BYTE, MPI_STATUS_IGNORE);
  CHECK(rc == MPI_SUCCESS, "write_all (%s) across nodes: %s", mode, err_text(rc));
  MPI_File_sync(fh);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_File_sync(fh);
  memset(in, 0, (size_t)N * P);
  rc = MPI_File_read_at_all(fh, 0, in, n, MPI_BYTE, MPI_STATUS_IGNORE);
  CHECK(rc == MPI_SUCCESS && !memcmp(in, out, (size_t)n), "read_at_all (%s) across nodes: %s", mode, err_text(rc));
  MPI_File_close(&fh);
  if (rank == 0) {
    FILE *fp = fopen(p, "rb");
    unsigned char *all = malloc((size_t)len);
    long got = (long)fread(all, 1, (size_t)len, fp), bad = -1;
    fclose(fp);
    for (long o = 0; o < len && bad < 0; o++) {
      long slot = o / P, j = slot / np, i = j * P + o % P;
      int r = (int)(slot % np), nr = r == np - 1 ? N * P - 5 : N * P;
      unsigned char w = o < (long)np * N * P && i < nr ? datum(r, i) : pattern(o);
      if (o >= got || all[o] != w) bad = o;
    }
    CHECK(got == len && bad < 0, "collective write (%s) across nodes: length %ld of %ld, first wrong byte %ld", mode, got, len, bad);
    free(all);
    remove(p);
  }
  free(out);
  free(in);
  MPI_Type_free(&ft);
  MPI_Barrier(MPI_COMM_WORLD);
}

/* ---- shared file pointers ---- */

typedef struct { int rank, seq; long long check; } rec;
static long long rec_check(int r, int s) { return (long long)r * 1000003 + s * 7 + 1; }

static const char *sharedfp_used(MPI_File fh) {
  static char v[64];
  MPI_Info used;
  int flag = 0;
  v[0] = 0;
  MPI_File_get_info(fh, &used);
  MPI_Info_get(used, "pario_sharedfp", sizeof v - 1, v, &flag);
  MPI_Info_free(&used);
  return v;
}

/* Rank 0: the file holds every rank's records 0..per-1 exactly once, intact. */
static void check_records(const char *p, const char *what, int per) {
  if (rank != 0) return;
  long total = (long)np * per;
  rec *all = malloc(sizeof(rec) * (size_t)(total + 1));
  char *seen = calloc((size_t)total, 1);
  FILE *fp = fopen(p, "rb");
  long got = fp ? (long)fread(all, sizeof(rec), (size_t)total + 1, fp) : -1, bad = 0;
  if (fp) fclose(fp);
  for (long i = 0; i < got && i < total; i++) {
    rec *r = &all[i];
    if (r->rank < 0 || r->rank >= np || r->seq < 0 || r->seq >= per || r->check != rec_check(r->rank, r->seq) ||
        seen[(long)r->rank * per + r->seq]++)
      bad++;
  }
  CHECK(got == total && bad == 0, "%s: %ld records in the file (want %ld), %ld lost, duplicated or torn", what, got,
        total, bad);
  free(all);
  free(seen);
}

/* write_shared of per records from every rank; the component in use must be comp. */
static void records(const char *hint, const char *comp, int amode, int per) {
  char what[64];
  snprintf(what, sizeof what, "pario_sharedfp=%s%s", hint, amode & MPI_MODE_SEQUENTIAL ? " (sequential)" : "");
  const char *p = fname(hint);
  if (rank == 0) remove(p);
  MPI_Barrier(MPI_COMM_WORLD);
  const char *kv[] = {"pario_sharedfp", hint, NULL};
  MPI_File fh = open_hints(p, MPI_MODE_CREATE | amode, kv);
  for (int i = 0; i < per; i++) {
    rec r = {rank, i, rec_check(rank, i)};
    int rc = MPI_File_write_shared(fh, &r, sizeof r, MPI_BYTE, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) {
      CHECK(0, "%s: write_shared: %s", what, err_text(rc));
      break;
    }
  }
  CHECK(!strcmp(sharedfp_used(fh), comp), "%s: get_info pario_sharedfp=%s, want %s", what, sharedfp_used(fh), comp);
  if (!strcmp(comp, "addproc")) {
    /* across nodes every rank holds the lease in turn (lease.c) unless PARIO_ADDPROC_LEASE=0:
     * then rank 0's node maps its segment and the others ask over TCP; on one kernel every
     * rank maps the segment */
    int remote = 0;
    for (int r = 0; r < np; r++) remote |= ns_mode && node_of[r] != node_of[0];
    const char *nl = getenv("PARIO_ADDPROC_LEASE");
    int lease = remote && !(nl && !strcmp(nl, "0"));
    const char *want = lease ? "lease"
                       : rank == 0 ? (remote ? "tcp" : "shm")
                       : ns_mode && node_of[rank] != node_of[0] ? "tcp" : "shm";
    char tr[16] = "";
    CHECK(pario_info_str(fh, "pario_addproc_transport", tr, sizeof tr) && !strcmp(tr, want),
          "%s: rank %d: pario_addproc_transport=%s, want %s", what, rank, tr, want);
    int mates = 0; /* the other ranks of this rank's node: they combine their requests if they send, when asked */
    for (int r = 0; r < np; r++) mates += r != rank && node_of[r] == node_of[rank];
    const char *k = getenv("PARIO_ADDPROC_COMBINE");
    const char *comb = !strcmp(want, "tcp") && rank != 0 && mates && k && !strcmp(k, "1") ? "true" : "false";
    CHECK(pario_info_str(fh, "pario_addproc_combine", tr, sizeof tr) && !strcmp(tr, comb),
          "%s: rank %d: pario_addproc_combine=%s, want %s", what, rank, tr, comb);
  }
  MPI_File_sync(fh); /* individual places the kept records here */
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_File_sync(fh);
  MPI_Offset pos = -1;
  MPI_File_get_position_shared(fh, &pos);
  CHECK(pos == (MPI_Offset)np * per * (MPI_Offset)sizeof(rec), "%s: shared pointer %lld after %d records", what,
        (long long)pos, np * per);
  MPI_File_close(&fh);
  check_records(p, what, per);
  if (rank == 0) remove(p);
  MPI_Barrier(MPI_COMM_WORLD);
}

/* Whether the MPI itself makes a window across these ranks (errors returned, not fatal): on
 * namespace nodes Open MPI's one-sided components cannot (ob1 over TCP), and then pario's
 * rma must be refused cleanly. The same answer on every rank. */
static int window_works(void) {
  MPI_Comm c;
  MPI_Win win;
  void *mem;
  MPI_Comm_dup(MPI_COMM_WORLD, &c);
  MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
  int ok = MPI_Win_allocate(8, 8, MPI_INFO_NULL, c, &mem, &win) == MPI_SUCCESS, all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, c);
  if (ok) MPI_Win_free(&win);
  MPI_Comm_free(&c);
  if (rank == 0 && !all) printf("nodes: the MPI makes no window across these nodes: rma must be refused\n");
  return all;
}

/* Threads of this process other than pario's I/O workers. */
static int threads(void) {
  DIR *d = opendir("/proc/self/task");
  struct dirent *e;
  int n = 0;
  while (d && (e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char p[300], comm[32] = "";
    snprintf(p, sizeof p, "/proc/self/task/%s/comm", e->d_name);
    FILE *fp = fopen(p, "r");
    if (fp) {
      if (!fgets(comm, sizeof comm, fp)) comm[0] = 0;
      fclose(fp);
    }
    n += strncmp(comm, "pario-io", 8) != 0;
  }
  if (d) closedir(d);
  return n;
}

/* rma across nodes (MPI_THREAD_MULTIPLE) is the lease (rmalease.c): an agent thread on every
 * rank and rank 0's progress thread; without it MPI_Rget_accumulate on a window of rank 0, no
 * thread; on one node it would be a shared-memory atomic, no thread. */
static void rma_form(void) {
  if (!rma_works) { /* forced: opens, every shared-pointer call fails cleanly, file untouched */
    const char *p = fname("rmarefused");
    const char *kv[] = {"pario_sharedfp", "rma", NULL};
    MPI_File fh = open_hints(p, MPI_MODE_CREATE | MPI_MODE_RDWR, kv);
    int x = rank, rc = MPI_File_write_shared(fh, &x, 1, MPI_INT, MPI_STATUS_IGNORE);
    CHECK_ERR(rc, MPI_ERR_UNSUPPORTED_OPERATION, "MPI_File_write_shared", p);
    rc = MPI_File_write_ordered(fh, &x, 1, MPI_INT, MPI_STATUS_IGNORE);
    CHECK(rc != MPI_SUCCESS, "write_ordered with rma refused: succeeded");
    MPI_Offset size = -1;
    MPI_File_get_size(fh, &size);
    CHECK(size == 0, "rma refused: the file holds %lld bytes, want 0", (long long)size);
    rc = MPI_File_close(&fh);
    CHECK(rc == MPI_SUCCESS, "close after rma was refused: %s", err_text(rc));
    if (rank == 0) remove(p);
    return;
  }
  int provided = 0, before = threads();
  MPI_Query_thread(&provided);
  const char *kv[] = {"pario_sharedfp", "rma", NULL};
  MPI_File fh = open_hints(fname("rmaform"), MPI_MODE_CREATE | MPI_MODE_RDWR, kv);
  int multiple = provided == MPI_THREAD_MULTIPLE;
  int added = threads() - before, want = multiple ? 1 + (rank == 0) : 0;
  CHECK(added == want, "rma: %d more threads while the file is open on rank %d, want %d (the lease's agent, rank 0's progress thread)",
        added, rank, want);
  char form[16] = "";
  CHECK(pario_info_str(fh, "pario_rma_form", form, sizeof form) && !strcmp(form, multiple ? "lease" : "atomics"),
        "rma across nodes: rank %d: pario_rma_form=%s, want %s", rank, form, multiple ? "lease" : "atomics");
  MPI_File_close(&fh);
  if (rank == 0) remove(fname("rmaform"));
}

/* sm needs one node: forced, the first shared-pointer call fails and the file stays usable. */
static void sm_refused(void) {
  const char *p = fname("sm");
  const char *kv[] = {"pario_sharedfp", "sm", NULL};
  MPI_File fh = open_hints(p, MPI_MODE_CREATE | MPI_MODE_RDWR, kv);
  int x = rank, rc = MPI_File_write_shared(fh, &x, 1, MPI_INT, MPI_STATUS_IGNORE);
  CHECK_ERR(rc, MPI_ERR_UNSUPPORTED_OPERATION, "MPI_File_write_shared", p);
  rc = MPI_File_write_at(fh, rank * (MPI_Offset)sizeof x, &x, 1, MPI_INT, MPI_STATUS_IGNORE);
  CHECK(rc == MPI_SUCCESS, "write_at after sm was refused: %s", err_text(rc));
  rc = MPI_File_close(&fh);
  CHECK(rc == MPI_SUCCESS, "close after sm was refused: %s", err_text(rc));
  if (rank == 0) remove(p);
}

/* auto on a normal file: nothing chosen until the first shared-pointer call, then lockedfile. */
static void auto_normal(void) {
  const char *kv[] = {"pario_sharedfp", "auto", NULL};
  MPI_File fh = open_hints(fname("autonormal"), MPI_MODE_CREATE | MPI_MODE_RDWR, kv);
  CHECK(!strcmp(sharedfp_used(fh), "auto"), "auto before use: get_info pario_sharedfp=%s", sharedfp_used(fh));
  MPI_File_close(&fh);
  if (rank == 0) remove(fname("autonormal"));
  records("auto", "lockedfile", MPI_MODE_RDWR, 200);
}

/* auto on a sequential file: rma set up at open (get_info names it before any use) where
 * the file system is a network one and rank 0's host has a CPU for every rank, else lockedfile
 * (docs/sharedfp.md). PARIO_TEST_NETWORK_FS tells pario which kind of file system to assume. */
static void auto_sequential_on(const char *fs) {
  cpu_set_t set;
  int cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1, on0 = 0, provided = 0;
  MPI_Bcast(&cpus, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Query_thread(&provided);
  for (int r = 0; r < np; r++) on0 += !ns_mode || node_of[r] == node_of[0]; /* ranks on rank 0's host */
  char lib[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0, mpich = MPI_Get_library_version(lib, &len) == MPI_SUCCESS && strstr(lib, "MPICH");
  /* addproc wherever it can run (MPI_THREAD_MULTIPLE: its lease beats lockedfile across
   * nodes); else rma unless the file system is local or MPICH's rank 0 (which serves the
   * atomics) has more ranks on its host than CPUs, or the MPI makes no window */
  int multiple = provided == MPI_THREAD_MULTIPLE;
  const char *want = multiple ? "addproc" : fs[0] == '1' && (!mpich || on0 <= cpus) && rma_works ? "rma" : "lockedfile";
  setenv("PARIO_TEST_NETWORK_FS", fs, 1);
  const char *kv[] = {"pario_sharedfp", "auto", NULL};
  const char *p = fname("autoseq");
  MPI_File fh = open_hints(p, MPI_MODE_CREATE | MPI_MODE_WRONLY | MPI_MODE_SEQUENTIAL, kv);
  const char *used = sharedfp_used(fh);
  CHECK(!strcmp(used, strcmp(want, "lockedfile") ? want : "auto"),
        "auto, sequential file, network fs %s, at open: get_info pario_sharedfp=%s", fs, used);
  MPI_File_close(&fh);
  if (rank == 0) remove(p);
  records("auto", want, MPI_MODE_WRONLY | MPI_MODE_SEQUENTIAL, 200);
  unsetenv("PARIO_TEST_NETWORK_FS");
}

static void auto_sequential(void) {
  auto_sequential_on("0");
  auto_sequential_on("1");
}

/* The virtual nodes share one kernel, which pario finds at open: auto takes sm for a normal
 * and for a sequential file (nothing set up at open: get_info says auto until the first use),
 * and sm forced runs. */
static void one_kernel(void) {
  const char *kv[] = {"pario_sharedfp", "auto", NULL};
  const char *p = fname("onekernel");
  MPI_File fh = open_hints(p, MPI_MODE_CREATE | MPI_MODE_WRONLY | MPI_MODE_SEQUENTIAL, kv);
  CHECK(!strcmp(sharedfp_used(fh), "auto"), "one kernel, sequential file, at open: get_info pario_sharedfp=%s",
        sharedfp_used(fh));
  MPI_File_close(&fh);
  if (rank == 0) remove(p);
  records("auto", "sm", MPI_MODE_WRONLY | MPI_MODE_SEQUENTIAL, 200);
  records("auto", "sm", MPI_MODE_RDWR, 200);
  records("sm", "sm", MPI_MODE_RDWR, 300);
}

/* ---- individual's clock offsets ---- */

typedef struct { long long off, err; } clk; /* as pario reports them (ns) */

static long long mono_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* This rank's offset to rank 0 and its error bound, from get_info after a merge. */
static clk clock_info(MPI_File fh) {
  clk c = {0, -1};
  MPI_Info used;
  char v[64];
  int f1 = 0, f2 = 0;
  MPI_File_get_info(fh, &used);
  MPI_Info_get(used, "pario_sharedfp_clock_offset_ns", sizeof v - 1, v, &f1);
  if (f1) c.off = atoll(v);
  MPI_Info_get(used, "pario_sharedfp_clock_error_ns", sizeof v - 1, v, &f2);
  if (f2) c.err = atoll(v);
  MPI_Info_free(&used);
  CHECK(f1 && f2, "individual: get_info reports no clock offset after a merge");
  return c;
}

/* Rank 0: the virtual nodes share one clock, so the true offset is 0 and pario's offset is
 * its error: within the bound it reports. Ranks of one node share their leader's result, and
 * rank 0's node gets 0 exactly (one clock, nothing measured). */
static void check_offsets(const clk *c, long long *worst_off, long long *worst_err) {
  *worst_off = *worst_err = 0;
  for (int r = 0; r < np; r++) {
    int lead = 0;
    while (node_of[lead] != node_of[r]) lead++;
    CHECK(c[r].err >= 0 && llabs(c[r].off) <= c[r].err,
          "rank %d: clock offset %lld ns outside its error bound %lld ns (one clock here: the true offset is 0)", r,
          c[r].off, c[r].err);
    CHECK(node_of[r] != node_of[0] || (c[r].off == 0 && c[r].err == 0),
          "rank %d on rank 0's node: clock offset %lld ns, bound %lld ns (want 0 and 0)", r, c[r].off, c[r].err);
    CHECK(c[r].off == c[lead].off && c[r].err == c[lead].err,
          "rank %d: clock offset %lld+-%lld ns, its node's first rank %d %lld+-%lld ns", r, c[r].off, c[r].err, lead,
          c[lead].off, c[lead].err);
    if (llabs(c[r].off) > *worst_off) *worst_off = llabs(c[r].off);
    if (c[r].err > *worst_err) *worst_err = c[r].err;
  }
}

/* Rank 0: got[p] is the item at place p; item i was written by rank i % np between the
 * times ab[2i] and ab[2i+1] (this test's clock around the call), after item i-1 (a token).
 * pario may place item j before an earlier item i only where the writes were closer in time
 * than the two ranks' error bounds together: pario_stamp(i) + off(i) cannot be told from
 * pario_stamp(j) + off(j) then. Anything else is a wrong order. Returns how many
 * consecutive items were that close (the order of those rests on luck). */
static int check_order(const int *got, int n, const long long *ab, const clk *c, int *misplaced) {
  int close_pairs = 0, bad = 0;
  *misplaced = 0;
  for (int i = 0; i + 1 < n; i++)
    close_pairs += ab[2 * (i + 1)] - ab[2 * i + 1] < c[i % np].err + c[(i + 1) % np].err;
  for (int p = 0; p < n; p++) {
    *misplaced += got[p] != p;
    for (int q = p + 1; q < n; q++) {
      int i = got[q], j = got[p]; /* j placed before i */
      if (j <= i) continue;
      long long gap = ab[2 * j] - ab[2 * i + 1], tol = c[i % np].err + c[j % np].err;
      if (gap >= tol && bad++ == 0)
        CHECK(0, "individual: item %d (rank %d) placed before item %d (rank %d) although written %lld ns after it; "
              "error bounds %lld + %lld ns", j, j % np, i, i % np, gap, c[j % np].err, c[i % np].err);
    }
  }
  CHECK(bad == 0, "individual: %d pairs of items out of time order beyond the clocks' error bounds", bad);
  return close_pairs;
}

/* individual keeps writes and orders them by time at merges; across nodes pario measures
 * each node's clock offset to rank 0 at the first merge and reports it and its error bound
 * through get_info. A token passed round the ranks makes the writes causal (item i is
 * written after item i-1, one message apart, on the next rank, so the other node): every
 * item must be in the file once, the offsets within their bounds, and the order the
 * writes' order wherever the bounds can tell them apart. */
static void individual_time_order(int rounds) {
  int n = rounds * np, *got = malloc(sizeof(int) * (size_t)(n + 1)), m = -1;
  long long *mine = malloc(sizeof(long long) * 2 * (size_t)rounds), *ab = malloc(sizeof(long long) * 2 * (size_t)n);
  clk c, *all = malloc(sizeof(clk) * (size_t)np);
  const char *p = fname("order");
  if (rank == 0) remove(p);
  MPI_Barrier(MPI_COMM_WORLD);
  const char *kv[] = {"pario_sharedfp", "individual", NULL};
  MPI_File fh = open_hints(p, MPI_MODE_CREATE | MPI_MODE_RDWR, kv);
  int item = 0;
  for (int round = 0; round < rounds; round++) {
    if (rank > 0) MPI_Recv(&item, 1, MPI_INT, rank - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    else if (round > 0) MPI_Recv(&item, 1, MPI_INT, np - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    item = round * np + rank;
    mine[2 * round] = mono_ns();
    int rc = MPI_File_write_shared(fh, &item, 1, MPI_INT, MPI_STATUS_IGNORE);
    mine[2 * round + 1] = mono_ns();
    CHECK(rc == MPI_SUCCESS, "individual write_shared: %s", err_text(rc));
    MPI_Send(&item, 1, MPI_INT, (rank + 1) % np, 0, MPI_COMM_WORLD);
  }
  if (rank == 0) MPI_Recv(&item, 1, MPI_INT, np - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  MPI_File_sync(fh); /* the first merge: clocks measured, kept writes placed */
  c = clock_info(fh);
  MPI_File_close(&fh);
  MPI_Gather(&c, 2, MPI_LONG_LONG, all, 2, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  MPI_Gather(mine, 2 * rounds, MPI_LONG_LONG, ab, 2 * rounds, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    long long *t = malloc(sizeof(long long) * 2 * (size_t)n), wo, we; /* by item, not by rank */
    for (int r = 0; r < np; r++)
      for (int k = 0; k < rounds; k++) memcpy(&t[2 * (k * np + r)], &ab[2 * (r * rounds + k)], 2 * sizeof *t);
    FILE *fp = fopen(p, "rb");
    m = fp ? (int)fread(got, sizeof(int), (size_t)n + 1, fp) : -1;
    if (fp) fclose(fp);
    char *seen = calloc((size_t)n, 1);
    int dup = 0, misplaced = 0;
    for (int i = 0; i < m; i++) dup += got[i] < 0 || got[i] >= n || seen[got[i]]++;
    CHECK(m == n && dup == 0, "individual across nodes: %d items (want %d), %d bad or repeated", m, n, dup);
    check_offsets(all, &wo, &we);
    int close_pairs = m == n && !dup ? check_order(got, n, t, all, &misplaced) : 0;
    printf("nodes: individual clock at %d ranks: worst |offset| %lld ns (the error: one clock), worst bound %lld ns; "
           "%d of %d items misplaced, %d consecutive writes closer than their bounds\n",
           np, wo, we, misplaced, n, close_pairs);
    remove(p);
    free(seen);
    free(t);
  }
  free(got), free(mine), free(ab), free(all);
  MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv) {
  start(&argc, &argv);
  rank = t_rank;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  want_nodes = argc > 1 ? atoi(argv[1]) : 2;
  const char *mode = argc > 2 ? argv[2] : "all";
  test_path(path, sizeof path, "pario-nodes");
  use_comm(MPI_COMM_WORLD, "MPI_COMM_WORLD");
  CHECK(np <= 64, "at most 64 ranks");
  ns_mode = !strcmp(mode, "ns");
  rma_works = window_works();
  int ok = np <= 64 && setup_ok(); /* the same on every rank */
  if (ok && !strcmp(mode, "clock")) {
    for (int rep = 0; rep < 3; rep++) individual_time_order(100); /* a new measurement each */
  } else if (ok) {
    hints();
    placement();
    automatic_read();
    write_read("enable");
    write_read("automatic");
    setenv("PARIO_TEST_ONE_KERNEL", "0", 1); /* the nodes as separate machines */
    auto_sequential();
    auto_normal();
    sm_refused();
    unsetenv("PARIO_TEST_ONE_KERNEL");
    if (!ns_mode) one_kernel(); /* namespace nodes have no shared memory between them */
    rma_form();
    const char *forced[] = {"rma", "lockedfile", "addproc", "individual"};
    for (int i = !rma_works; i < 4; i++) records(forced[i], forced[i], MPI_MODE_RDWR, 300);
    if (rma_works) { /* rma again without the lease: every update an atomic on rank 0's word */
      setenv("PARIO_RMA_LEASE", "0", 1);
      records("rma", "rma", MPI_MODE_RDWR, 300);
      unsetenv("PARIO_RMA_LEASE");
    }
    /* addproc again without the lease: requests to rank 0, one by one and combined per node */
    setenv("PARIO_ADDPROC_LEASE", "0", 1);
    records("addproc", "addproc", MPI_MODE_RDWR, 300);
    setenv("PARIO_ADDPROC_COMBINE", "1", 1);
    records("addproc", "addproc", MPI_MODE_RDWR, 300);
    unsetenv("PARIO_ADDPROC_COMBINE");
    unsetenv("PARIO_ADDPROC_LEASE");
    individual_time_order(25);
  }
  free(node_of);
  free(place);
  return finish("nodes");
}
