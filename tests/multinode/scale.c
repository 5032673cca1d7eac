/* Many ranks across namespace nodes (issue 35, item 5): NODES nodes x 4-16 ranks, tiny data.
 * The collective, nonblocking collective and shared-pointer paths must move the right bytes
 * (rank 0 reads every file back with stdio after close), and with the PMPI counter below
 * pario preloaded (tests/clients/pmpi/below.c: LD_PRELOAD="libpario.so below.so"), each
 * rank's count of what pario asks of the MPI per collective call and per view change is
 * printed: collective calls (communicator constructors included), point-to-point sends and
 * their bytes, and the bytes received by the all-to-all collectives and receives, the maximum
 * and mean over ranks (docs/collective.md, "Across nodes and many ranks").
 *  1. write_all through an interleaved view (16 bytes per rank per call), automatic (pario's
 *     default) and then aggregated (romio_cb_write/read enable): one warm-up call, then K
 *     counted, each; read_at_all of what was written;
 *  2. V view changes, each to a filetype not seen before (its extent differs), each followed
 *     by a write_at_all of 8 bytes per rank;
 *  3. two iwrite_at_all outstanding at once, MPI_Waitall, then two iread_at_all;
 *  4. write_shared (R records per rank) and write_ordered (2 rounds) with the default
 *     pario_sharedfp (auto): every record once, each ordered round in rank order.
 * usage: mpi_scale NODES [count]   ("count": the counter must be preloaded) */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <dlfcn.h>
#include <stdint.h>

#include "../mpi/harness.h"

enum { B = 16, K = 4, V = 3, R = 20, SB = 8 };
static int me, np;
static long (*cnt)(const char *), (*rbytes)(void), (*sbytes)(void);

static unsigned char val(long long off, int phase) { return (unsigned char)(off * 37 + off / 253 + phase * 11 + 1); }

/* What pario asked of the MPI so far: collective calls, sends, bytes sent, bytes received. */
static void snap(double *v) {
  v[0] = cnt ? cnt("total") : 0;
  v[1] = cnt ? cnt("Send") + cnt("Isend") : 0;
  v[2] = sbytes ? sbytes() : 0;
  v[3] = rbytes ? rbytes() : 0;
}

/* Adds the difference since before[] to acc[]. */
static void since(const double *before, double *acc) {
  double now[4];
  snap(now);
  for (int i = 0; i < 4; i++) acc[i] += now[i] - before[i];
}

/* Rank 0 prints acc / calls, max and mean over the ranks; returns the max of calls + sends. */
static double report(const char *what, const double *acc, int calls, int nodes) {
  double per[4], mx[4], sum[4];
  for (int i = 0; i < 4; i++) per[i] = acc[i] / calls;
  MPI_Allreduce(per, mx, 4, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(per, sum, 4, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  if (me == 0 && cnt)
    printf("scale counts np=%d nodes=%d %-16s colls %.1f/%.1f sends %.1f/%.1f sent %.0f/%.0f B recv %.0f/%.0f B"
           " (max/mean per rank per call)\n",
           np, nodes, what, mx[0], sum[0] / np, mx[1], sum[1] / np, mx[2], sum[2] / np, mx[3], sum[3] / np);
  return mx[0] + mx[1];
}

/* Contiguous n bytes resized to extent ext. */
static MPI_Datatype strided(int n, MPI_Aint ext) {
  MPI_Datatype c, t;
  MPI_Type_contiguous(n, MPI_BYTE, &c);
  MPI_Type_create_resized(c, 0, ext, &t);
  MPI_Type_commit(&t);
  MPI_Type_free(&c);
  return t;
}

static int count_nodes(void) {
  MPI_Comm node;
  int lr = 0, leaders = 0;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &lr);
  lr = lr == 0;
  MPI_Allreduce(&lr, &leaders, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Comm_free(&node);
  return leaders;
}

/* Rank 0, after close: bytes [from, from + n) of the file must be val(off, phase). */
static void check_region(FILE *fp, long long from, long long n, int phase, const char *what) {
  unsigned char b[4096];
  long long bad = -1;
  for (long long done = 0; done < n && bad < 0;) {
    size_t k = (size_t)(n - done < (long long)sizeof b ? n - done : (long long)sizeof b);
    if (fseek(fp, (long)(from + done), SEEK_SET) != 0 || fread(b, 1, k, fp) != k) {
      bad = from + done;
      break;
    }
    for (size_t i = 0; i < k; i++)
      if (b[i] != val(from + done + (long long)i, phase)) {
        bad = from + done + (long long)i;
        break;
      }
    done += (long long)k;
  }
  CHECK(bad < 0, "%s: the file differs at byte %lld", what, bad);
}

static void fill(unsigned char *b, long long off, int n, int phase) {
  for (int i = 0; i < n; i++) b[i] = val(off + i, phase);
}

/* Parts 1-3 on one file; returns the regions' ends for the check. */
static void collective(const char *path, int nodes, int counting) {
  MPI_File fh;
  unsigned char buf[B], rd[2 * (K + 1) * B];
  double acc[4] = {0}, before[4], t0 = MPI_Wtime();
  long long stride = (long long)np * B;
  int rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
  CHECK(rc == MPI_SUCCESS, "open %s: %s", path, err_text(rc));
  if (rc != MPI_SUCCESS) return;
  MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN);
  /* 1. write_all: call k writes bytes [(k * np + me) * B, + B); calls 0..K automatic (the
   * pario default), K+1..2K+1 aggregated (romio_cb_write/read enable); call 0 and K+1 warm up */
  MPI_Datatype ft = strided(B, stride);
  rc = MPI_File_set_view(fh, (MPI_Offset)me * B, MPI_BYTE, ft, "native", MPI_INFO_NULL);
  CHECK(rc == MPI_SUCCESS, "set_view: %s", err_text(rc));
  for (int cb = 0; cb < 2; cb++) {
    if (cb) {
      MPI_Info info;
      MPI_Info_create(&info);
      MPI_Info_set(info, "romio_cb_write", "enable");
      MPI_Info_set(info, "romio_cb_read", "enable");
      rc = MPI_File_set_info(fh, info);
      CHECK(rc == MPI_SUCCESS, "set_info: %s", err_text(rc));
      MPI_Info_free(&info);
    }
    memset(acc, 0, sizeof acc);
    for (int k = cb * (K + 1); k <= cb * (K + 1) + K; k++) {
      fill(buf, k * stride + (long long)me * B, B, 1);
      snap(before);
      rc = MPI_File_write_all(fh, buf, B, MPI_BYTE, MPI_STATUS_IGNORE);
      if (k > cb * (K + 1)) since(before, acc);
      CHECK(rc == MPI_SUCCESS, "write_all %d: %s", k, err_text(rc));
    }
    double most = report(cb ? "write_all cb" : "write_all auto", acc, K, nodes);
    if (counting) CHECK(most >= 1, "no MPI call counted for a collective write across %d nodes", nodes);
    /* the blocks written so far, read back collectively */
    int n = (cb + 1) * (K + 1);
    memset(acc, 0, sizeof acc);
    snap(before);
    rc = MPI_File_read_at_all(fh, 0, rd, n * B, MPI_BYTE, MPI_STATUS_IGNORE);
    since(before, acc);
    report(cb ? "read_at_all cb" : "read_at_all auto", acc, 1, nodes);
    CHECK(rc == MPI_SUCCESS, "read_at_all: %s", err_text(rc));
    for (int k = 0; k < n && rc == MPI_SUCCESS; k++) {
      fill(buf, k * stride + (long long)me * B, B, 1);
      CHECK(!memcmp(rd + k * B, buf, B), "read_at_all: block %d differs", k);
    }
  }
  MPI_Type_free(&ft);
  /* 2. view changes, each to a new filetype, then 8 bytes per rank at base2 + v * np * SB */
  long long base2 = 2 * (K + 1) * stride;
  memset(acc, 0, sizeof acc);
  for (int v = 0; v < V; v++) {
    MPI_Datatype t = strided(SB, (MPI_Aint)np * SB + (MPI_Aint)(v + 1) * SB);
    long long at = base2 + (long long)v * np * SB + (long long)me * SB;
    snap(before);
    rc = MPI_File_set_view(fh, at, MPI_BYTE, t, "native", MPI_INFO_NULL);
    since(before, acc);
    CHECK(rc == MPI_SUCCESS, "set_view %d: %s", v, err_text(rc));
    fill(buf, at, SB, 2);
    rc = MPI_File_write_at_all(fh, 0, buf, SB, MPI_BYTE, MPI_STATUS_IGNORE);
    CHECK(rc == MPI_SUCCESS, "write_at_all after view %d: %s", v, err_text(rc));
    MPI_Type_free(&t);
  }
  report("set_view", acc, V, nodes);
  /* 3. nonblocking collectives: two iwrite_at_all outstanding, then two iread_at_all */
  long long base3 = base2 + (long long)V * np * SB;
  ft = strided(B, stride);
  rc = MPI_File_set_view(fh, base3 + (long long)me * B, MPI_BYTE, ft, "native", MPI_INFO_NULL);
  CHECK(rc == MPI_SUCCESS, "set_view (nonblocking): %s", err_text(rc));
  unsigned char w[2][B], r2[2][B];
  MPI_Request req[2];
  MPI_Status sts[2]; /* not MPI_STATUSES_IGNORE: GCC 12 takes it for a 0-byte array (-Wstringop-overflow) */
  memset(acc, 0, sizeof acc);
  snap(before);
  for (int k = 0; k < 2; k++) {
    fill(w[k], base3 + k * stride + (long long)me * B, B, 3);
    rc = MPI_File_iwrite_at_all(fh, (MPI_Offset)k * B, w[k], B, MPI_BYTE, &req[k]);
    CHECK(rc == MPI_SUCCESS, "iwrite_at_all %d: %s", k, err_text(rc));
    if (rc != MPI_SUCCESS) req[k] = MPI_REQUEST_NULL;
  }
  rc = MPI_Waitall(2, req, sts);
  since(before, acc);
  report("iwrite_at_all", acc, 2, nodes);
  CHECK(rc == MPI_SUCCESS, "Waitall (iwrite_at_all): %s", err_text(rc));
  for (int k = 0; k < 2; k++) {
    rc = MPI_File_iread_at_all(fh, (MPI_Offset)k * B, r2[k], B, MPI_BYTE, &req[k]);
    CHECK(rc == MPI_SUCCESS, "iread_at_all %d: %s", k, err_text(rc));
    if (rc != MPI_SUCCESS) req[k] = MPI_REQUEST_NULL;
  }
  rc = MPI_Waitall(2, req, sts);
  CHECK(rc == MPI_SUCCESS && !memcmp(w, r2, sizeof w), "iread_at_all: %s, data %s", err_text(rc),
        memcmp(w, r2, sizeof w) ? "differs" : "right");
  MPI_Type_free(&ft);
  rc = MPI_File_close(&fh);
  CHECK(rc == MPI_SUCCESS, "close: %s", err_text(rc));
  MPI_Barrier(MPI_COMM_WORLD);
  if (me == 0) {
    FILE *fp = fopen(test_local(path), "rb");
    CHECK(fp != NULL, "cannot read %s back", path);
    if (fp) {
      check_region(fp, 0, base2, 1, "write_all");
      for (int v = 0; v < V; v++) check_region(fp, base2 + (long long)v * np * SB, (long long)np * SB, 2, "write_at_all");
      check_region(fp, base3, 2 * stride, 3, "iwrite_at_all");
      fclose(fp);
    }
    printf("scale: collective, view changes and nonblocking at %d ranks on %d nodes: %.2f s\n", np, nodes,
           MPI_Wtime() - t0);
  }
}

typedef struct {
  uint32_t magic, rank;
  uint64_t seq;
} rec;
#define MAGIC 0x5343414cu /* "SCAL" */

/* 4. shared pointers with the default component. */
static void shared(const char *path, int nodes) {
  MPI_File fh;
  double t0 = MPI_Wtime();
  int rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
  CHECK(rc == MPI_SUCCESS, "open %s: %s", path, err_text(rc));
  if (rc != MPI_SUCCESS) return;
  MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN);
  for (int i = 0; i < R + 2; i++) {
    rec x = {MAGIC, (uint32_t)me, (uint64_t)i};
    rc = i < R ? MPI_File_write_shared(fh, &x, sizeof x, MPI_BYTE, MPI_STATUS_IGNORE)
               : MPI_File_write_ordered(fh, &x, sizeof x, MPI_BYTE, MPI_STATUS_IGNORE);
    CHECK(rc == MPI_SUCCESS, "%s %d: %s", i < R ? "write_shared" : "write_ordered", i, err_text(rc));
  }
  MPI_Info used;
  char comp[64] = "?";
  int flag = 0;
  MPI_File_get_info(fh, &used);
  MPI_Info_get(used, "pario_sharedfp", sizeof comp - 1, comp, &flag);
  MPI_Info_free(&used);
  rc = MPI_File_close(&fh);
  CHECK(rc == MPI_SUCCESS, "close: %s", err_text(rc));
  MPI_Barrier(MPI_COMM_WORLD);
  if (me != 0) return;
  long long n = (long long)np * (R + 2);
  rec *all = calloc((size_t)n + 1, sizeof *all);
  char *seen = calloc((size_t)n, 1);
  FILE *fp = fopen(test_local(path), "rb");
  size_t got = fp && all ? fread(all, sizeof *all, (size_t)n + 1, fp) : 0;
  if (fp) fclose(fp);
  CHECK(got == (size_t)n, "shared: %zu records in the file, want %lld", got, n);
  int dup = 0, bad = 0;
  for (size_t i = 0; i < got && seen; i++) {
    rec x = all[i];
    if (x.magic != MAGIC || x.rank >= (uint32_t)np || x.seq >= R + 2) {
      bad++;
      continue;
    }
    char *s = &seen[x.rank * (R + 2) + x.seq];
    dup += *s;
    *s = 1;
  }
  CHECK(!bad && !dup, "shared: %d bad and %d duplicate records", bad, dup);
  /* each ordered round: np consecutive records in rank order, after all write_shared ones */
  for (int o = 0; o < 2 && got == (size_t)n; o++)
    for (int k = 0; k < np; k++) {
      rec x = all[(long long)np * R + (long long)o * np + k];
      CHECK(x.rank == (uint32_t)k && x.seq == (uint64_t)(R + o), "write_ordered round %d: place %d holds rank %u item %llu",
            o, k, x.rank, (unsigned long long)x.seq);
    }
  printf("scale: %d write_shared + 2 write_ordered records per rank at %d ranks on %d nodes (%s): %.2f s\n", R, np,
         nodes, flag ? comp : "?", MPI_Wtime() - t0);
  free(all);
  free(seen);
}

int main(int argc, char **argv) {
  start(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  int want = argc > 1 ? atoi(argv[1]) : 0, counting = argc > 2 && !strcmp(argv[2], "count");
  *(void **)&cnt = dlsym(RTLD_DEFAULT, "pario_below_count");
  *(void **)&rbytes = dlsym(RTLD_DEFAULT, "pario_below_bytes");
  *(void **)&sbytes = dlsym(RTLD_DEFAULT, "pario_below_sent");
  if (counting) CHECK(cnt && rbytes && sbytes, "count: the PMPI counter (pario_clients_below) is not preloaded");
  int nodes = count_nodes();
  CHECK(want <= 0 || nodes == want, "%d nodes, want %d", nodes, want);
  char path[4200], spath[4200];
  test_path(path, sizeof path, "scale");
  test_path(spath, sizeof spath, "scale-sfp");
  collective(path, nodes, counting);
  shared(spath, nodes);
  if (me == 0) {
    remove(test_local(path));
    remove(test_local(spath));
  }
  return finish("scale");
}
