/* Shared file pointers, per component (argv[1]: sm | rma | addproc | lockedfile | individual
 * | server | auto; argv[2]: stress records): a write_shared stress with every record checked exactly
 * once; a work queue served with read_shared (individual: reads refused, writes ordered by
 * time instead); write_ordered in rank order; seek_shared/get_position_shared agreeing across
 * ranks and with the data; long runs of ordered calls with independent writes between them
 * in an exact layout, and one beside a large send still waiting for its receiver; set_view resetting the pointer; get_info naming the component;
 * rank 0 computing without MPI calls while the others use the pointer; and no storage left
 * behind (nor created by a program that never uses shared pointers). */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <time.h>

#include "harness.h"

static int rank, np;
static char path[512], dir[600];
static const char *auto_comp = "sm"; /* what auto takes: sm on one node, else lockedfile */
static int multi_node;               /* MPI_COMM_TYPE_SHARED splits the ranks (tests/multinode) */

typedef struct { int rank, seq; long long check; } rec;

static int count_hidden(void) { /* files of pario's lockedfile component beside the data file */
  DIR *d = opendir(dir);
  int n = 0;
  struct dirent *e;
  const char *base = strrchr(test_local(path), '/') + 1; /* only this test's file: tests run in parallel */
  while (d && (e = readdir(d)))
    if (strstr(e->d_name, "pario-sfp") && strstr(e->d_name, base)) n++;
  if (d) closedir(d);
  return n;
}

static MPI_File open_with(const char *comp, int amode) {
  MPI_Info info;
  MPI_File fh;
  MPI_Info_create(&info);
  MPI_Info_set(info, "pario_sharedfp", comp);
  int rc = MPI_File_open(MPI_COMM_WORLD, path, amode, info, &fh);
  CHECK(rc == MPI_SUCCESS, "open: %s", err_text(rc));
  MPI_Info_free(&info);
  return fh;
}

static void stress(const char *comp, int total) {
  MPI_File fh = open_with(comp, MPI_MODE_CREATE | MPI_MODE_RDWR);
  MPI_File_set_size(fh, 0);
  MPI_Datatype rt;
  MPI_Type_contiguous(sizeof(rec), MPI_BYTE, &rt);
  MPI_Type_commit(&rt);
  MPI_File_set_view(fh, 0, rt, rt, "native", MPI_INFO_NULL);
  int mine = total / np + (rank < total % np);
  for (int i = 0; i < mine; i++) {
    rec r = {rank, i, (long long)rank * 1000003 + i};
    if (MPI_File_write_shared(fh, &r, 1, rt, MPI_STATUS_IGNORE) != MPI_SUCCESS) { CHECK(0, "write_shared"); break; }
  }
  MPI_File_sync(fh); /* individual places the kept records here */
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_File_sync(fh);
  MPI_Offset pos;
  MPI_File_get_position_shared(fh, &pos);
  CHECK(pos == total, "shared pointer after %d records: %lld", total, (long long)pos);
  MPI_Info used;
  char v[64] = "";
  int flag;
  MPI_File_get_info(fh, &used);
  MPI_Info_get(used, "pario_sharedfp", 63, v, &flag);
  CHECK(!strcmp(v, strcmp(comp, "auto") ? comp : auto_comp), "get_info pario_sharedfp=%s", v);
  const char *form = getenv("PARIO_TEST_RMA_FORM"); /* rma's form, where the test knows it */
  if (form && !strcmp(v, "rma") && np > 1) {
    char got[16] = "";
    CHECK(pario_info_str(fh, "pario_rma_form", got, sizeof got) && !strcmp(got, form), "get_info pario_rma_form=%s, want %s",
          got, form);
  }
  const char *tr = getenv("PARIO_ADDPROC_TRANSPORT"); /* the transport asked for is the one used */
  if (tr && !strcmp(v, "addproc") && np > 1) {
    CHECK(pario_info_str(fh, "pario_addproc_transport", v, sizeof v) && !strcmp(v, tr),
          "get_info pario_addproc_transport=%s, want %s", v, tr);
    /* with a transport forced the ranks other than 0 send requests: where there are several
     * they combine them (one node) when PARIO_ADDPROC_COMBINE=1; with the lease none does */
    const char *k = getenv("PARIO_ADDPROC_COMBINE");
    const char *want = strcmp(tr, "shm") && strcmp(tr, "lease") && rank != 0 && np > 2 && k && !strcmp(k, "1") ? "true" : "false";
    CHECK(pario_info_str(fh, "pario_addproc_combine", v, sizeof v) && !strcmp(v, want),
          "get_info pario_addproc_combine=%s, want %s", v, want);
  }
  MPI_Info_free(&used);
  if (rank == 0) { /* every record present exactly once, intact */
    rec *all = malloc(sizeof(rec) * (size_t)total);
    MPI_File_read_at(fh, 0, all, total, rt, MPI_STATUS_IGNORE);
    char *seen = calloc((size_t)total, 1);
    long bad = 0;
    for (int i = 0; i < total; i++) {
      rec *r = &all[i];
      int owner_n = total / np + (r->rank < total % np), idx = 0;
      for (int q = 0; q < r->rank; q++) idx += total / np + (q < total % np);
      if (r->rank < 0 || r->rank >= np || r->seq < 0 || r->seq >= owner_n ||
          r->check != (long long)r->rank * 1000003 + r->seq || seen[idx + r->seq]++) bad++;
    }
    CHECK(bad == 0, "%s: %ld of %d records lost, duplicated or torn", comp, bad, total);
    free(all);
    free(seen);
  }
  MPI_Type_free(&rt);
  MPI_File_close(&fh);
}

/* seek_shared is collective and everyone agrees. */
static void check_seek(MPI_File fh, MPI_Offset size) {
  MPI_Offset pos;
  MPI_File_seek_shared(fh, 10, MPI_SEEK_SET);
  MPI_File_get_position_shared(fh, &pos);
  long long p[2] = {pos, -pos}, r[2];
  MPI_Allreduce(p, r, 2, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
  CHECK(pos == 10 && r[0] == -r[1], "seek_shared agreement");
  MPI_File_seek_shared(fh, -3, MPI_SEEK_END);
  MPI_File_get_position_shared(fh, &pos);
  CHECK(pos == size - 3, "seek_shared END: %lld", (long long)pos);
  MPI_File_seek_shared(fh, 2, MPI_SEEK_CUR);
  MPI_File_get_position_shared(fh, &pos);
  CHECK(pos == size - 1, "seek_shared CUR: %lld", (long long)pos);
}

/* write_ordered places the ranks' parts in rank order at the pointer, and moves it past all. */
static void check_write_ordered(MPI_File fh, int at) {
  int v[2] = {1000 + rank, 2000 + rank}, n = 1 + (rank % 2), got[8];
  MPI_Status st;
  MPI_File_seek_shared(fh, at, MPI_SEEK_SET);
  MPI_File_write_ordered(fh, v, n, MPI_INT, &st);
  MPI_File_sync(fh);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_File_sync(fh);
  int k = 0, total = 0;
  for (int q = 0; q < np; q++) total += 1 + q % 2;
  MPI_Offset pos;
  MPI_File_get_position_shared(fh, &pos);
  CHECK(pos == at + total, "pointer after write_ordered: %lld", (long long)pos);
  MPI_File_read_at(fh, at, got, total < 8 ? total : 8, MPI_INT, &st);
  for (int q = 0; q < np && k < 8; q++)
    for (int j = 0; j <= q % 2 && k < 8; j++, k++)
      CHECK(got[k] == (j ? 2000 : 1000) + q, "write_ordered element %d: %d", k, got[k]);
}

/* Many ordered calls in a row, of sizes that differ by rank and round (zero included), some
 * split, with one rank's independent write_shared between two of them now and then. Every
 * rank enters an ordered call after its own earlier writes, so the file's layout is exact:
 * per round the independent record, then the round's block in rank order. Catches a
 * generation mix-up in a component's own ordered protocol (sm's segment) and lost records. */
enum { ROUNDS = 600 };
static int ord_n(int q, int r) { return (q * 7 + r * 3) % 4; }
static long long ord_val(int r, int q, int k) { return ((long long)r << 20) | (q << 8) | k; }
static int ord_indep(int r) { return r % 5 == 2 ? (r / 5) % np : -1; } /* who writes one, or -1 */

static void ordered_stress(const char *comp) {
  MPI_File fh = open_with(comp, MPI_MODE_CREATE | MPI_MODE_RDWR);
  MPI_File_set_size(fh, 0);
  MPI_File_set_view(fh, 0, MPI_LONG_LONG, MPI_LONG_LONG, "native", MPI_INFO_NULL);
  long long v[4], total = 0;
  MPI_Status st;
  for (int r = 0; r < ROUNDS; r++) {
    if (ord_indep(r) == rank) {
      long long x = ((long long)r << 20) | (1 << 19) | rank;
      CHECK(MPI_File_write_shared(fh, &x, 1, MPI_LONG_LONG, &st) == MPI_SUCCESS, "write_shared round %d", r);
    }
    int n = ord_n(rank, r), got = -1, rc;
    for (int k = 0; k < n; k++) v[k] = ord_val(r, rank, k);
    if (r % 3 == 1) {
      rc = MPI_File_write_ordered_begin(fh, v, n, MPI_LONG_LONG);
      if (rc == MPI_SUCCESS) rc = MPI_File_write_ordered_end(fh, v, &st);
    } else {
      rc = MPI_File_write_ordered(fh, v, n, MPI_LONG_LONG, &st);
    }
    MPI_Get_count(&st, MPI_LONG_LONG, &got);
    CHECK(rc == MPI_SUCCESS && got == n, "%s round %d: write_ordered %s, count %d of %d", comp, r, err_text(rc), got, n);
    total += ord_indep(r) >= 0;
    for (int q = 0; q < np; q++) total += ord_n(q, r);
  }
  MPI_File_sync(fh);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_File_sync(fh);
  MPI_Offset pos;
  MPI_File_get_position_shared(fh, &pos);
  CHECK(pos == total, "%s: pointer after %d ordered rounds %lld, want %lld", comp, ROUNDS, (long long)pos, total);
  if (rank == 0) {
    long long *want = malloc(sizeof(long long) * (size_t)total), *have = calloc((size_t)total, sizeof(long long));
    long long i = 0;
    for (int r = 0; r < ROUNDS; r++) {
      if (ord_indep(r) >= 0) want[i++] = ((long long)r << 20) | (1 << 19) | ord_indep(r);
      for (int q = 0; q < np; q++)
        for (int k = 0; k < ord_n(q, r); k++) want[i++] = ord_val(r, q, k);
    }
    MPI_File_read_at(fh, 0, have, (int)total, MPI_LONG_LONG, &st);
    for (i = 0; i < total && have[i] == want[i]; i++) continue;
    CHECK(i == total, "%s: ordered layout differs at element %lld: %#llx, want %#llx", comp, i,
          i < total ? have[i] : 0, i < total ? want[i] : 0);
    free(want);
    free(have);
  }
  MPI_File_close(&fh);
}

/* A rank that has not reached an ordered call yet may be blocked sending to one that is
 * already waiting in it: a large message to a receive posted before the call, which many
 * MPIs complete only while the receiver makes progress. The wait must keep that going. */
static void ordered_progress(const char *comp) {
  if (np < 2) return;
  enum { BIG = 8 << 20 };
  char *msg = calloc(BIG, 1);
  MPI_File fh = open_with(comp, MPI_MODE_CREATE | MPI_MODE_RDWR);
  MPI_Request req = MPI_REQUEST_NULL;
  MPI_Status st;
  int v = rank, got = -1;
  MPI_File_write_ordered(fh, &v, 1, MPI_INT, &st); /* the first call may agree through MPI */
  if (rank == 0) MPI_Irecv(msg, BIG, MPI_CHAR, 1, 7, MPI_COMM_WORLD, &req);
  if (rank == 1) MPI_Send(msg, BIG, MPI_CHAR, 0, 7, MPI_COMM_WORLD);
  int rc = MPI_File_write_ordered(fh, &v, 1, MPI_INT, &st);
  MPI_Wait(&req, MPI_STATUS_IGNORE);
  MPI_Get_count(&st, MPI_INT, &got);
  CHECK(rc == MPI_SUCCESS && got == 1, "%s: write_ordered beside a large send: %s", comp, err_text(rc));
  MPI_File_close(&fh);
  free(msg);
}

/* individual: reads are refused naming op and file; writes land in time order (here made
 * causal with a token passed from rank to rank); nothing is lost at close. */
static void individual_checks(void) {
  MPI_File fh = open_with("individual", MPI_MODE_CREATE | MPI_MODE_RDWR);
  int item = 0, rc;
  MPI_Status st;
  MPI_Request req;
  MPI_File_set_size(fh, 0);
  MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL);
  CHECK_ERR(MPI_File_read_shared(fh, &item, 1, MPI_INT, &st), MPI_ERR_UNSUPPORTED_OPERATION, "MPI_File_read_shared", path);
  CHECK_ERR(MPI_File_iread_shared(fh, &item, 1, MPI_INT, &req), MPI_ERR_UNSUPPORTED_OPERATION, "MPI_File_iread_shared", path);
  CHECK_ERR(MPI_File_read_ordered(fh, &item, 1, MPI_INT, &st), MPI_ERR_UNSUPPORTED_OPERATION, "MPI_File_read_ordered", path);
  for (int round = 0; round < 3; round++) { /* token ring: rank order, three times */
    if (rank > 0) MPI_Recv(&item, 1, MPI_INT, rank - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    else if (round > 0 && np > 1) MPI_Recv(&item, 1, MPI_INT, np - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    item = round * np + rank;
    if (round == 1) {
      rc = MPI_File_iwrite_shared(fh, &item, 1, MPI_INT, &req);
      if (rc == MPI_SUCCESS) rc = MPI_Wait(&req, &st);
    } else {
      rc = MPI_File_write_shared(fh, &item, 1, MPI_INT, &st);
    }
    int n = -1;
    MPI_Get_count(&st, MPI_INT, &n);
    CHECK(rc == MPI_SUCCESS && n == 1, "write_shared kept: %s, count %d", err_text(rc), n);
    if (np > 1) MPI_Send(&item, 1, MPI_INT, (rank + 1) % np, 0, MPI_COMM_WORLD);
  }
  if (np > 1 && rank == 0) MPI_Recv(&item, 1, MPI_INT, np - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  check_seek(fh, 3 * np); /* seek_shared merges first: the file has all 3 * np items */
  int got[64];
  MPI_File_read_at(fh, 0, got, 3 * np, MPI_INT, &st);
  /* Across nodes time order rests on the clock offsets measured at the first merge, good to
   * within an error bound pario reports: writes closer in time than that may swap. Without
   * the writes' times this test cannot tell such a swap from a wrong order, so there it
   * checks the order only with PARIO_TEST_CLOCK_ORDER=1 (tests/multinode/nodes.c checks it
   * against the bound), and every item present once either way. */
  const char *strict = getenv("PARIO_TEST_CLOCK_ORDER");
  int seen[64] = {0};
  for (int i = 0; i < 3 * np; i++) {
    if (got[i] >= 0 && got[i] < 3 * np) seen[got[i]]++;
    if (!multi_node || (strict && *strict == '1')) CHECK(got[i] == i, "individual: item %d is %d (time order)", i, got[i]);
  }
  for (int i = 0; i < 3 * np; i++) CHECK(seen[i] == 1, "individual: item %d present %d times", i, seen[i]);
  check_write_ordered(fh, 3 * np);
  item = 77;
  MPI_File_write_shared(fh, &item, 1, MPI_INT, &st); /* placed by close */
  MPI_File_close(&fh);
  fh = open_with("auto", MPI_MODE_RDONLY);
  MPI_Offset size;
  MPI_File_get_size(fh, &size);
  CHECK(size == (MPI_Offset)sizeof(int) * (3 * np + (np / 2 + np) + np), "individual: size after close %lld", (long long)size);
  MPI_File_close(&fh);
}

/* Rank 0 computes without entering MPI while the others use the pointer: no component may
 * need rank 0's help (rma progress, addproc's server). They tell rank 0 through a file. */
static void busy_owner(const char *comp) {
  if (np < 2) return;
  char flag[600];
  snprintf(flag, sizeof flag, "%s.done", path);
  MPI_Comm others;
  MPI_Comm_split(MPI_COMM_WORLD, rank == 0, 0, &others);
  MPI_File fh = open_with(comp, MPI_MODE_CREATE | MPI_MODE_RDWR);
  int seen = 1;
  if (rank == 0) {
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do clock_gettime(CLOCK_MONOTONIC, &t);
    while (access(test_local(flag), F_OK) != 0 && (seen = t.tv_sec - t0.tv_sec < 60));
  } else {
    for (int i = 0; i < 200; i++) MPI_File_write_shared(fh, &i, 1, MPI_INT, MPI_STATUS_IGNORE);
    MPI_Barrier(others);
    if (rank == 1) fclose(fopen(test_local(flag), "w"));
  }
  CHECK(seen, "%s: the others did not finish while rank 0 computed", comp);
  MPI_File_sync(fh);
  MPI_Offset pos;
  MPI_File_get_position_shared(fh, &pos);
  CHECK(pos == 200 * (MPI_Offset)sizeof(int) * (np - 1), "%s busy owner: pointer %lld", comp, (long long)pos);
  MPI_File_close(&fh);
  MPI_Comm_free(&others);
  if (rank == 0) unlink(test_local(flag));
}

static void work_queue(const char *comp) {
  enum { ITEMS = 997 };
  MPI_File fh = open_with(comp, MPI_MODE_CREATE | MPI_MODE_RDWR);
  if (rank == 0) {
    int items[ITEMS];
    for (int i = 0; i < ITEMS; i++) items[i] = i;
    MPI_File_write_at(fh, 0, items, ITEMS, MPI_INT, MPI_STATUS_IGNORE);
  }
  MPI_File_set_size(fh, ITEMS * sizeof(int));
  MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL); /* pointer back to 0 */
  int got = 0, item, n;
  long long sum = 0;
  MPI_Status st;
  for (;;) {
    MPI_File_read_shared(fh, &item, 1, MPI_INT, &st);
    MPI_Get_count(&st, MPI_INT, &n);
    if (n == 0) break;
    got++;
    sum += item;
  }
  long long tot[2] = {got, sum}, all[2];
  MPI_Allreduce(tot, all, 2, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  CHECK(all[0] == ITEMS && all[1] == (long long)ITEMS * (ITEMS - 1) / 2, "%s work queue: %lld items, sum %lld", comp, all[0], all[1]);
  check_seek(fh, ITEMS);
  MPI_File_seek_shared(fh, 5, MPI_SEEK_SET);
  MPI_File_read_ordered(fh, &item, 1, MPI_INT, &st);
  CHECK(item == 5 + rank, "read_ordered in rank order: %d", item);
  check_write_ordered(fh, ITEMS);
  MPI_File_close(&fh);
}

int main(int argc, char **argv) {
  start(&argc, &argv);
  rank = t_rank;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  MPI_Comm node; /* several nodes: MPICH's virtual nodes, tests/multinode */
  int nsize;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Comm_size(node, &nsize);
  MPI_Comm_free(&node);
  multi_node = nsize < np;
  /* Several nodes: sm where they share one kernel (MPICH's virtual nodes), unless the test
   * makes pario take them for separate machines. */
  const char *ok = getenv("PARIO_TEST_ONE_KERNEL");
  if (multi_node) auto_comp = ok && *ok == '0' ? "lockedfile" : "sm";
  if (getenv("PARIO_TEST_URL")) auto_comp = "server"; /* a file on a pario-server */
  const char *comp = argc > 1 ? argv[1] : "auto";
  int records = argc > 2 ? atoi(argv[2]) : 1000000;
  test_path(path, sizeof path, "pario-shared");
  const char *lp = test_local(path);
  snprintf(dir, sizeof dir, "%.*s", (int)(strrchr(lp, '/') - lp), lp);
  /* A program that never uses shared pointers leaves nothing behind. */
  MPI_File fh;
  MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
  MPI_File_write_at(fh, rank, "x", 1, MPI_CHAR, MPI_STATUS_IGNORE);
  CHECK(count_hidden() == 0, "no shared-pointer storage without a shared-pointer call");
  MPI_File_close(&fh);
  stress(comp, records);
  ordered_stress(comp);
  ordered_progress(comp);
  if (strcmp(comp, "individual")) work_queue(comp);
  else individual_checks();
  busy_owner(comp);
  MPI_Barrier(MPI_COMM_WORLD);
  CHECK(count_hidden() == 0, "shared-pointer storage removed at close");
  if (rank == 0) MPI_File_delete(path, MPI_INFO_NULL);
  return finish("shared");
}
