/* Collective I/O and data sieving: every access is checked by reading the whole file back
 * with stdio, on a file pre-filled with a pattern, so that bytes outside every view must keep
 * the pattern. Sweeps cb_nodes (1..ranks), cb_buffer_size (tiny: many rounds) and
 * romio_cb_write/read (enable, automatic), with ranks that access nothing, memory types with
 * holes, uneven sizes and reads past end of file; checks the hints get_info reports; runs
 * independent sieving writes from every rank and from two threads per rank at once, and
 * beside another rank's plain writes into the same windows; writes and reads through
 * PnetCDF's views (rank 0's copies interleave); returns to cached views, with nonblocking
 * writes in flight across set_view; and checks that a rank with bad arguments gets its error while the others complete, and that a
 * failing aggregator's error reaches exactly the ranks it served. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>

#include "harness.h"

static int rank, np, one_node; /* one_node: MPI_COMM_TYPE_SHARED holds every rank */
static char path[4096];

#define PARIO_TEST_CLAMP(x, lo, hi) ((x) < (lo) ? (lo) : (x) > (hi) ? (hi) : (x))
static unsigned char pattern(long off) { return (unsigned char)(off * 131 + 7); }
static unsigned char datum(int r, long i) { return (unsigned char)(r * 37 + i * 11 + 1); }

/* The file, bytes 0..len-1, pre-filled with the pattern (rank 0, stdio), then everyone syncs. */
static void prefill(long len) {
  if (rank == 0) {
    FILE *fp = fopen(test_local(path), "wb");
    for (long i = 0; i < len; i++) fputc(pattern(i), fp);
    fclose(fp);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

static unsigned char *slurp(long *len) {
  FILE *fp = fopen(test_local(path), "rb");
  fseek(fp, 0, SEEK_END);
  *len = ftell(fp);
  rewind(fp);
  unsigned char *b = malloc((size_t)*len + 1);
  if (fread(b, 1, (size_t)*len, fp) != (size_t)*len) *len = -1;
  fclose(fp);
  return b;
}

/* Interleaved strided view: rank r owns blocks of BLK bytes at (k * np + r) * STRIDE, k =
 * 0..nblk-1, after a displacement; the rest of each stride is nobody's. */
enum { BLK = 5, STRIDE = 8, DISP = 3 };

static MPI_Datatype filetype_for(int r) {
  MPI_Datatype v, t;
  MPI_Type_vector(1, BLK, 1, MPI_BYTE, &v);
  MPI_Type_create_resized(v, 0, (MPI_Aint)np * STRIDE, &t);
  MPI_Type_free(&v);
  (void)r;
  MPI_Type_commit(&t);
  return t;
}

/* Where data byte i of rank r lands in the file. */
static long file_off(int r, long i) { return DISP + ((i / BLK) * np + r) * STRIDE + i % BLK; }

static void one_config(int cb_nodes, const char *cbsize, const char *cbmode, long nblk) {
  long n = rank == np - 1 && np > 2 ? 0 : nblk * BLK - rank; /* uneven; the last rank of 3+ empty */
  if (n < 0) n = 0;
  long filelen = DISP + nblk * np * STRIDE + 11;
  prefill(filelen);
  MPI_Info info;
  MPI_Info_create(&info);
  char v[32];
  snprintf(v, sizeof v, "%d", cb_nodes);
  MPI_Info_set(info, "cb_nodes", v);
  if (cbsize) MPI_Info_set(info, "cb_buffer_size", cbsize);
  MPI_Info_set(info, "romio_cb_write", cbmode);
  MPI_Info_set(info, "romio_cb_read", cbmode);
  MPI_File fh;
  int rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR, info, &fh);
  CHECK(rc == MPI_SUCCESS, "open: %s", err_text(rc));
  MPI_Datatype ft = filetype_for(rank);
  MPI_File_set_view(fh, DISP + rank * STRIDE, MPI_BYTE, ft, "native", MPI_INFO_NULL);
  /* odd ranks: memory with a hole after every byte */
  int holey = rank % 2;
  unsigned char *mem = malloc((size_t)(2 * n + 2));
  MPI_Datatype mt = MPI_BYTE;
  if (holey) {
    MPI_Type_create_resized(MPI_BYTE, 0, 2, &mt);
    MPI_Type_commit(&mt);
  }
  for (long i = 0; i < n; i++) mem[holey ? 2 * i : i] = datum(rank, i);
  MPI_Status st;
  rc = MPI_File_write_all(fh, mem, (int)n, mt, &st);
  int cnt = -1;
  MPI_Get_count(&st, mt, &cnt);
  CHECK(rc == MPI_SUCCESS && cnt == n, "write_all cb_nodes=%d cb=%s %s: rc %s count %d of %ld", cb_nodes,
        cbsize ? cbsize : "default", cbmode, err_text(rc), cnt, n);
  MPI_File_sync(fh);
  MPI_Barrier(MPI_COMM_WORLD);
  /* the whole file, every rank's data or the pattern */
  long len;
  unsigned char *all = slurp(&len);
  unsigned char *want = malloc((size_t)filelen);
  for (long o = 0; o < filelen; o++) want[o] = pattern(o);
  for (int r = 0; r < np; r++) {
    long nr = r == np - 1 && np > 2 ? 0 : nblk * BLK - r;
    for (long i = 0; i < nr; i++) want[file_off(r, i)] = datum(r, i);
  }
  long bad = -1;
  for (long o = 0; o < filelen && bad < 0; o++)
    if (o >= len || all[o] != want[o]) bad = o;
  CHECK(len == filelen && bad < 0, "cb_nodes=%d cb=%s %s: file length %ld (want %ld), first wrong byte %ld",
        cb_nodes, cbsize ? cbsize : "default", cbmode, len, filelen, bad);
  /* read back collectively, asking for more than there is: the count stops at end of file */
  memset(mem, 0xee, (size_t)(2 * n + 2));
  MPI_File_seek(fh, 0, MPI_SEEK_SET);
  long ask = n + (rank == 0 ? 3 * BLK : 0); /* rank 0 reads past the end */
  unsigned char *back = malloc((size_t)(2 * ask + 2));
  memset(back, 0xee, (size_t)(2 * ask + 2));
  rc = MPI_File_read_all(fh, back, (int)ask, mt, &st);
  MPI_Get_count(&st, mt, &cnt);
  long avail = ask;
  if (rank == 0) { /* data bytes of rank 0's view before end of file */
    avail = 0;
    while (avail < ask && file_off(0, avail) < filelen) avail++;
  }
  CHECK(rc == MPI_SUCCESS && cnt == avail, "read_all: rc %s count %d want %ld", err_text(rc), cnt, avail);
  for (long i = 0; i < avail && i < n; i++)
    if (back[holey ? 2 * i : i] != datum(rank, i)) {
      CHECK(0, "read_all byte %ld: %d want %d", i, back[holey ? 2 * i : i], datum(rank, i));
      break;
    }
  if (holey && ask > 0) CHECK(back[1] == 0xee, "read_all wrote a memory hole");
  /* which path ran: both calls aggregated (two-phase) with enable, neither with disable */
  long long calls = pario_info_ll(fh, "pario_coll_calls"), aggr = pario_info_ll(fh, "pario_coll_aggregated");
  long long want_aggr = !strcmp(cbmode, "enable") ? 2 : !strcmp(cbmode, "disable") ? 0 : aggr;
  CHECK(calls == 2 && aggr == want_aggr, "cb_nodes=%d %s: %lld collective calls, %lld aggregated (want 2, %lld)",
        cb_nodes, cbmode, calls, aggr, want_aggr);
  MPI_File_close(&fh);
  MPI_Info_free(&info);
  MPI_Type_free(&ft);
  if (holey) MPI_Type_free(&mt);
  free(mem);
  free(back);
  free(all);
  free(want);
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

static void hints(void) {
  MPI_Info info;
  MPI_File fh;
  MPI_Info_create(&info);
  MPI_Info_set(info, "cb_nodes", "1000");
  MPI_Info_set(info, "cb_buffer_size", "65536");
  MPI_Info_set(info, "romio_cb_write", "enable");
  MPI_Info_set(info, "romio_ds_write", "disable");
  MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE, info, &fh);
  char npv[16];
  snprintf(npv, sizeof npv, "%d", np);
  check_info(fh, "cb_nodes", npv); /* at most one aggregator per rank */
  check_info(fh, "cb_buffer_size", "65536");
  check_info(fh, "romio_cb_write", "enable");
  check_info(fh, "romio_cb_read", "automatic");
  check_info(fh, "romio_ds_write", "disable");
  check_info(fh, "romio_ds_read", "automatic");
  MPI_Info_set(info, "cb_nodes", "1");
  MPI_Info_set(info, "romio_ds_write", "enable");
  MPI_File_set_info(fh, info);
  check_info(fh, "cb_nodes", "1");
  check_info(fh, "romio_ds_write", "enable"); /* locks work on the test's file system */
  MPI_Info_free(&info);
  MPI_Info_create(&info);
  MPI_Info_set(info, "romio_cb_read", "disable");
  MPI_Info_set(info, "cb_buffer_size", "1048576");
  MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", info);
  check_info(fh, "romio_cb_read", "disable");
  check_info(fh, "cb_buffer_size", "1048576");
  /* the tuning hints: defaults, then values given, then out-of-range values ignored */
  check_info(fh, "pario_coll_view_cache", "4");
  check_info(fh, "pario_coll_chunk", "524288");
  check_info(fh, "pario_coll_window_max", "4194304");
  check_info(fh, "pario_wait", "auto");
  check_info(fh, "pario_wait_nap_max", "200");
  check_info(fh, "pario_wait_yield", "2000");
  MPI_Info_free(&info);
  MPI_Info_create(&info);
  MPI_Info_set(info, "pario_coll_view_cache", "16");
  MPI_Info_set(info, "pario_coll_chunk", "64k");
  MPI_Info_set(info, "pario_coll_window_max", "1m");
  MPI_Info_set(info, "pario_wait", "spin");
  MPI_Info_set(info, "pario_wait_nap_max", "50");
  MPI_Info_set(info, "pario_wait_yield", "0");
  MPI_Info_set(info, "pario_view_defer", "false");
  MPI_File_set_info(fh, info);
  check_info(fh, "pario_view_defer", "false");
  check_info(fh, "pario_coll_view_cache", "16");
  check_info(fh, "pario_coll_chunk", "65536");
  check_info(fh, "pario_coll_window_max", "1048576");
  check_info(fh, "pario_wait", "spin");
  check_info(fh, "pario_wait_nap_max", "50");
  check_info(fh, "pario_wait_yield", "0");
  MPI_Info_set(info, "pario_coll_view_cache", "17");
  MPI_Info_set(info, "pario_coll_chunk", "100");
  MPI_Info_set(info, "pario_wait", "sometimes");
  MPI_File_set_info(fh, info);
  check_info(fh, "pario_coll_view_cache", "16");
  check_info(fh, "pario_coll_chunk", "65536");
  check_info(fh, "pario_wait", "spin");
  MPI_Info_set(info, "pario_wait", "auto"); /* the waits are process-wide: back to the default */
  MPI_File_set_info(fh, info);
  MPI_File_close(&fh);
  MPI_Info_free(&info);
}

/* Ranks that pass different collective-buffering hints all use rank 0's (at open, set_info
 * and set_view), so their two-phase plans match: a collective write and read complete and
 * move the right bytes. */
static void hints_differ(void) {
  char v[32];
  MPI_Info info;
  MPI_File fh;
  MPI_Info_create(&info);
  snprintf(v, sizeof v, "%d", 64 + 1000 * rank);
  MPI_Info_set(info, "cb_buffer_size", v);
  snprintf(v, sizeof v, "%d", rank + 1);
  MPI_Info_set(info, "cb_nodes", v);
  MPI_Info_set(info, "romio_cb_write", rank == 0 ? "enable" : "disable");
  MPI_Info_set(info, "romio_cb_read", rank == 0 ? "enable" : "automatic");
  MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE, info, &fh);
  check_info(fh, "cb_buffer_size", "64");
  check_info(fh, "cb_nodes", "1");
  check_info(fh, "romio_cb_write", "enable");
  check_info(fh, "romio_cb_read", "enable");
  enum { N = 700 };
  unsigned char out[N], in[N];
  for (int i = 0; i < N; i++) out[i] = datum(rank, i);
  MPI_Datatype ft;
  MPI_Type_vector(N, 1, np, MPI_BYTE, &ft);
  MPI_Type_commit(&ft);
  MPI_File_set_view(fh, rank, MPI_BYTE, ft, "native", MPI_INFO_NULL);
  int rc = MPI_File_write_all(fh, out, N, MPI_BYTE, MPI_STATUS_IGNORE);
  CHECK(rc == MPI_SUCCESS, "write_all with differing hints: %s", err_text(rc));
  snprintf(v, sizeof v, "%d", 100 + rank);
  MPI_Info_set(info, "cb_buffer_size", v);
  MPI_File_set_info(fh, info);
  check_info(fh, "cb_buffer_size", "100");
  memset(in, 0, sizeof in);
  rc = MPI_File_read_at_all(fh, 0, in, N, MPI_BYTE, MPI_STATUS_IGNORE);
  CHECK(rc == MPI_SUCCESS && !memcmp(in, out, N), "read_at_all with differing hints: %s", err_text(rc));
  snprintf(v, sizeof v, "%d", 200 + rank);
  MPI_Info_set(info, "cb_buffer_size", v);
  MPI_File_set_view(fh, rank, MPI_BYTE, ft, "native", info);
  memset(in, 0, sizeof in);
  rc = MPI_File_read_all(fh, in, N, MPI_BYTE, MPI_STATUS_IGNORE);
  CHECK(rc == MPI_SUCCESS && !memcmp(in, out, N), "read_all after set_view with differing hints: %s", err_text(rc));
  /* rank 0's wins by the next collective access (set_view's agreement may be deferred to it) */
  check_info(fh, "cb_buffer_size", "200");
  MPI_Type_free(&ft);
  MPI_File_close(&fh);
  MPI_Info_free(&info);
}

/* Independent writes through the interleaved view with a tiny sieving buffer: every rank at
 * once, each in two threads sharing the handle (thread t writes the blocks 2j+t, two blocks
 * a call, so every call sieves). */
typedef struct { MPI_File fh; int t; long nblk; } tharg;

static void *sieve_thread(void *p) {
  tharg *a = p;
  unsigned char buf[2 * BLK];
  for (long j = a->t; j < a->nblk / 2; j += 2) {
    for (int i = 0; i < 2 * BLK; i++) buf[i] = datum(rank, 2 * j * BLK + i);
    int rc = MPI_File_write_at(a->fh, 2 * j * BLK, buf, 2 * BLK, MPI_BYTE, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) {
      CHECK(0, "write_at in thread %d: %s", a->t, err_text(rc));
      break;
    }
  }
  return NULL;
}

static void sieving(int threads) {
  long nblk = 400, filelen = DISP + nblk * np * STRIDE + 11;
  prefill(filelen);
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "ind_wr_buffer_size", "37");
  MPI_Info_set(info, "romio_ds_write", "enable");
  MPI_File fh;
  MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_WRONLY, info, &fh);
  MPI_Datatype ft = filetype_for(rank);
  MPI_File_set_view(fh, DISP + rank * STRIDE, MPI_BYTE, ft, "native", MPI_INFO_NULL);
  int provided;
  MPI_Query_thread(&provided);
  if (threads && provided == MPI_THREAD_MULTIPLE) {
    pthread_t th[2];
    tharg a[2] = {{fh, 0, nblk}, {fh, 1, nblk}};
    for (int t = 0; t < 2; t++) pthread_create(&th[t], NULL, sieve_thread, &a[t]);
    for (int t = 0; t < 2; t++) pthread_join(th[t], NULL);
  } else {
    unsigned char *buf = malloc((size_t)(nblk * BLK));
    for (long i = 0; i < nblk * BLK; i++) buf[i] = datum(rank, i);
    int rc = MPI_File_write(fh, buf, (int)(nblk * BLK), MPI_BYTE, MPI_STATUS_IGNORE);
    CHECK(rc == MPI_SUCCESS, "sieving write: %s", err_text(rc));
    free(buf);
  }
  MPI_File_close(&fh);
  MPI_Barrier(MPI_COMM_WORLD);
  long len, bad = -1;
  unsigned char *all = slurp(&len);
  for (long o = 0; o < filelen && bad < 0; o++) {
    long q = o - DISP, slot = q / STRIDE, in = q % STRIDE;
    int r = (int)(slot % np);
    long k = slot / np;
    unsigned char w = q >= 0 && in < BLK && k < nblk ? datum(r, k * BLK + in) : pattern(o);
    if (all[o] != w) bad = o;
  }
  CHECK(len == filelen && bad < 0, "sieving%s: length %ld want %ld, first wrong byte %ld",
        threads ? " (threads)" : "", len, filelen, bad);
  free(all);
  MPI_Type_free(&ft);
  MPI_Info_free(&info);
  MPI_Barrier(MPI_COMM_WORLD); /* everyone has checked before the file is filled again */
}

/* Data sieving beside plain writes: ranks 0..np-2 write blocks through a strided view with
 * one sieving window over the whole file, so each read-modify-write covers the last rank's
 * blocks too; the last rank writes one block a round, without sieving of its own, at the
 * same time (collectively with romio_cb_write=disable and the default view: the collective
 * layer makes its write take a byte-range lock; independently through the strided view: one
 * segment, written straight but locked). A window written back with stale bytes would put
 * the previous round's data over the last rank's block. */
enum { SB = 64, SNB = 4, SROUNDS = 150 };
static unsigned char sdatum(int t, int r, long i) { return (unsigned char)(t * 13 + r * 37 + i * 7 + 1); }

static void sieving_beside_plain(int coll) {
  if (np < 2) return;
  long filelen = (long)np * SB * SNB;
  prefill(filelen);
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "ind_wr_buffer_size", "65536");
  MPI_Info_set(info, "romio_ds_write", "enable");
  MPI_Info_set(info, "romio_cb_write", "disable");
  MPI_File fh;
  MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR, info, &fh);
  MPI_Datatype blk, ft;
  MPI_Type_contiguous(SB, MPI_BYTE, &blk);
  MPI_Type_create_resized(blk, 0, (MPI_Aint)np * SB, &ft);
  MPI_Type_commit(&ft);
  int last = rank == np - 1;
  if (last && coll) MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
  else MPI_File_set_view(fh, (MPI_Offset)rank * SB, MPI_BYTE, ft, "native", MPI_INFO_NULL);
  unsigned char buf[SB * SNB];
  long bad = -1;
  int badt = -1, rc = MPI_SUCCESS;
  for (int t = 1; t <= SROUNDS && bad < 0 && rc == MPI_SUCCESS; t++) {
    int kb = t % SNB; /* the last rank's block this round */
    int n = last ? SB : SB * SNB;
    for (long i = 0; i < n; i++) buf[i] = sdatum(t, rank, last ? kb * SB + i : i);
    MPI_Offset off = last ? (coll ? ((MPI_Offset)kb * np + rank) * SB : (MPI_Offset)kb * SB) : 0;
    MPI_Barrier(MPI_COMM_WORLD);
    rc = coll ? MPI_File_write_at_all(fh, off, buf, n, MPI_BYTE, MPI_STATUS_IGNORE)
              : MPI_File_write_at(fh, off, buf, n, MPI_BYTE, MPI_STATUS_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
      long len;
      unsigned char *all = slurp(&len);
      for (long o = 0; o < filelen && bad < 0; o++) {
        long slot = o / SB, k = slot / np, in = o % SB;
        int r = (int)(slot % np);
        int tk = r < np - 1 ? t : t - (int)(((t - k) % SNB + SNB) % SNB); /* block k's last round */
        unsigned char w = tk >= 1 ? sdatum(tk, r, k * SB + in) : pattern(o);
        if (all[o] != w) bad = o, badt = t;
      }
      free(all);
    }
    long b[2] = {bad, rc};
    MPI_Bcast(b, 2, MPI_LONG, 0, MPI_COMM_WORLD);
    bad = b[0];
  }
  CHECK(rc == MPI_SUCCESS, "sieving beside plain writes (%s): %s", coll ? "collective" : "independent", err_text(rc));
  if (rank == 0)
    CHECK(bad < 0, "sieving beside plain writes (%s): round %d, byte %ld lost (a stale window came back)",
          coll ? "collective" : "independent", badt, bad);
  MPI_File_close(&fh);
  MPI_Type_free(&ft);
  MPI_Type_free(&blk);
  MPI_Info_free(&info);
  MPI_Barrier(MPI_COMM_WORLD);
}

/* A rank with a bad argument gets its error; the others' collective completes. */
/* Independent sieving reads, every rank on its own: pieces of len bytes every pitch bytes
 * (pitches below and above the 1 KiB where pario switches from copying out of one window
 * buffer to scattering with preadv), read into contiguous or strided memory, with windows
 * (ind_rd_buffer_size) that cut pieces, and a file that ends inside the view (in a gap and
 * inside a piece): every byte read must be the file's, the memory gaps untouched and the
 * count exactly the bytes before end of file. */
static void sieving_reads(void) {
  static const long lens[] = {3, 40, 700, 1500}, pitches[] = {8, 300, 1024, 5000};
  static const char *bufs[] = {"4096", "5000", "1000000"};
  enum { N = 200, MGAP = 3 };
  for (int li = 0; li < 4; li++)
    for (int pi = 0; pi < 4; pi++) {
      long len = lens[li], pitch = pitches[pi] < len ? len + 9 : pitches[pi];
      long span = (N - 1) * pitch + len;
      long cut = rank % 3 == 0 ? span : rank % 3 == 1 ? (N / 2) * pitch + len / 2 : (N / 3) * pitch + len + 1;
      char mine[4200];
      snprintf(mine, sizeof mine, "%s.r%d", path, rank);
      FILE *fp = fopen(test_local(mine), "wb");
      for (long i = 0; i < cut; i++) fputc(pattern(i), fp);
      fclose(fp);
      long expect = 0;
      for (long i = 0; i < N; i++) expect += PARIO_TEST_CLAMP(cut - i * pitch, 0, len);
      MPI_Datatype ft, mt;
      MPI_Type_create_hvector(N, (int)len, pitch, MPI_BYTE, &ft);
      MPI_Type_commit(&ft);
      MPI_Type_create_hvector(N, (int)len, len + MGAP, MPI_BYTE, &mt);
      MPI_Type_commit(&mt);
      for (int b = 0; b < 3; b++)
        for (int strided = 0; strided < 2; strided++) {
          MPI_Info info;
          MPI_Info_create(&info);
          MPI_Info_set(info, "romio_ds_read", "enable");
          MPI_Info_set(info, "ind_rd_buffer_size", bufs[b]);
          MPI_File fh;
          int rc = MPI_File_open(MPI_COMM_SELF, mine, MPI_MODE_RDONLY, info, &fh);
          CHECK(rc == MPI_SUCCESS, "open %s", err_text(rc));
          MPI_Info_free(&info);
          MPI_File_set_view(fh, 0, MPI_BYTE, ft, "native", MPI_INFO_NULL);
          long mlen = strided ? N * (len + MGAP) : N * len;
          unsigned char *m = malloc((size_t)mlen);
          memset(m, 0xEE, (size_t)mlen);
          MPI_Status st;
          rc = strided ? MPI_File_read_at(fh, 0, m, 1, mt, &st) : MPI_File_read_at(fh, 0, m, (int)(N * len), MPI_BYTE, &st);
          CHECK(rc == MPI_SUCCESS, "read %s", err_text(rc));
          MPI_Count got = -1;
          MPI_Get_elements_x(&st, MPI_BYTE, &got);
          CHECK(got == expect, "len %ld pitch %ld buf %s: read %lld bytes, want %ld", len, pitch, bufs[b], (long long)got, expect);
          int bad = 0;
          for (long i = 0, d = 0; i < N && !bad; i++)
            for (long j = 0; j < len + (strided ? MGAP : 0) && !bad; j++) {
              unsigned char *p = m + (strided ? i * (len + MGAP) : i * len) + j;
              if (j >= len) bad = *p != 0xEE;
              else if (d++ < expect) bad = *p != pattern(i * pitch + j);
              else bad = *p != 0xEE;
              if (bad) CHECK(0, "len %ld pitch %ld buf %s strided %d: byte %ld of piece %ld is %d", len, pitch, bufs[b], strided, j, i, *p);
            }
          free(m);
          MPI_File_close(&fh);
        }
      MPI_Type_free(&ft);
      MPI_Type_free(&mt);
      remove(test_local(mine));
    }
}

static void bad_rank(void) {
  MPI_File fh;
  MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE, MPI_INFO_NULL, &fh);
  MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN);
  char buf[64];
  memset(buf, rank, sizeof buf);
  int rc = MPI_File_write_at_all(fh, rank == 0 ? -1 : rank * 64, buf, 64, MPI_BYTE, MPI_STATUS_IGNORE);
  if (rank == 0) CHECK_ERR(rc, MPI_ERR_ARG, "MPI_File_write_at_all", path);
  else CHECK(rc == MPI_SUCCESS, "write_at_all beside a bad rank: %s", err_text(rc));
  MPI_Request r;
  rc = MPI_File_iwrite_at_all(fh, rank == 0 ? -1 : rank * 64, buf, 64, MPI_BYTE, &r);
  if (rank == 0) CHECK_ERR(rc, MPI_ERR_ARG, "MPI_File_iwrite_at_all", path);
  else {
    CHECK(rc == MPI_SUCCESS, "iwrite_at_all beside a bad rank: %s", err_text(rc));
    MPI_Wait(&r, MPI_STATUS_IGNORE);
  }
  MPI_File_close(&fh);
}

/* An aggregator whose file access fails (PARIO_TEST_COLL_EIO=1 makes rank 1's fail with EIO):
 * a collective read or write fails on every rank with MPI_ERR_IO (docs/collective.md#errors),
 * the ranks the failing aggregator did not serve still get their data and an error that names
 * rank 1; a nonblocking collective delivers the error through MPI_Wait. */
static void aggregator_fails(void) {
  enum { B = 4096 };
  if (np < 2) return;
  prefill((long)np * B);
  MPI_Info info;
  MPI_Info_create(&info);
  char v[16];
  snprintf(v, sizeof v, "%d", np);
  MPI_Info_set(info, "cb_nodes", v);
  MPI_Info_set(info, "romio_cb_write", "enable");
  MPI_Info_set(info, "romio_cb_read", "enable");
  MPI_File fh;
  MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR, info, &fh);
  MPI_Info_free(&info);
  MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN);
  unsigned char buf[B];
  setenv("PARIO_TEST_COLL_EIO", "1", 1);
  /* one block per rank, one domain per block */
  memset(buf, 0, sizeof buf);
  int rc = MPI_File_read_at_all(fh, (MPI_Offset)rank * B, buf, B, MPI_BYTE, MPI_STATUS_IGNORE);
  CHECK_ERR(rc, MPI_ERR_IO, "MPI_File_read_at_all", path);
  /* Rank 1 aggregates one block's domain. On one node aggregator i is rank i, so that block
   * is rank 1's own; across nodes (tests/multinode) the aggregators take turns between the
   * nodes and the block may be another rank's. The others read their data all the same, and
   * their error names the failing rank. */
  if (rank != 1 && one_node) {
    CHECK(strstr(err_text(rc), "failed on rank 1") != NULL, "read_at_all beside a failing aggregator: %s",
          err_text(rc));
    int same = 1;
    for (long i = 0; i < B; i++) same &= buf[i] == pattern((long)rank * B + i);
    CHECK(same, "read_at_all beside a failing aggregator returned wrong data");
  }
  /* interleaved bytes: every rank's data lies in every domain */
  MPI_Datatype ft;
  MPI_Type_vector(B, 1, np, MPI_BYTE, &ft);
  MPI_Type_commit(&ft);
  MPI_File_set_view(fh, rank, MPI_BYTE, ft, "native", MPI_INFO_NULL);
  memset(buf, rank, sizeof buf);
  rc = MPI_File_write_all(fh, buf, B / np, MPI_BYTE, MPI_STATUS_IGNORE);
  CHECK_ERR(rc, MPI_ERR_IO, "MPI_File_write_all", path);
  rc = MPI_File_read_all(fh, buf, B / np, MPI_BYTE, MPI_STATUS_IGNORE);
  CHECK_ERR(rc, MPI_ERR_IO, "MPI_File_read_all", path);
  MPI_Request r;
  rc = MPI_File_iread_at_all(fh, 0, buf, B / np, MPI_BYTE, &r);
  CHECK(rc == MPI_SUCCESS, "iread_at_all start: %s", err_text(rc));
  if (rc == MPI_SUCCESS) { /* MPI_Wait's errors go to MPI_COMM_WORLD's handler */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    rc = MPI_Wait(&r, MPI_STATUS_IGNORE);
    CHECK(err_class(rc) == MPI_ERR_IO, "iread_at_all from a failing aggregator via MPI_Wait: %s", err_text(rc));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  }
  MPI_Type_free(&ft);
  unsetenv("PARIO_TEST_COLL_EIO");
  MPI_File_close(&fh);
  if (rank == 0) { /* the good aggregators wrote their domains: each byte is its writer's or
                      still the pattern, nothing else */
    long len;
    unsigned char *back = slurp(&len);
    int kept = len == (long)np * B;
    for (long i = 0; kept && i < len; i++) kept = back[i] == pattern(i) || back[i] == (unsigned char)(i % np);
    CHECK(kept, "a failed collective write left bytes that nobody wrote");
    free(back);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

/* PnetCDF's views (ncmpio_file_set_view): rank 0 sees the file's header and then its part of a
 * variable through one struct at displacement 0 and accesses it from just after the header;
 * the other ranks see their part at the variable's offset. Open MPI keeps the subarray's
 * bounds in the struct, so its copies interleave (data from byte 0, extent the subarray's);
 * resized here to the same bounds on every MPI. Rank r owns columns 2r, 2r+1 of a 4 x 2np int
 * variable at VAR; the header (HDR bytes) is nobody's: it must keep the pattern. (Natively
 * OMPIO passes this; MPICH 4.0's ROMIO writes rank 0's part wrongly, the flattening of
 * resized(T, lb, extent) with lb != 0 that tests/diff/README.md lists.) */
static void header_view(const char *cbmode, int cb_nodes) {
  enum { HDR = 100, VAR = 128, ROWS = 4 };
  int sizes[2] = {ROWS, 2 * np}, sub[2] = {ROWS, 2}, start[2] = {0, 2 * rank};
  long varlen = (long)ROWS * 2 * np * 4;
  prefill(VAR + varlen + 16);
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "romio_cb_write", cbmode);
  MPI_Info_set(info, "romio_cb_read", cbmode);
  char cbn[16];
  snprintf(cbn, sizeof cbn, "%d", cb_nodes);
  MPI_Info_set(info, "cb_nodes", cbn);
  MPI_File fh;
  int rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR, info, &fh);
  CHECK(rc == MPI_SUCCESS, "open: %s", err_text(rc));
  MPI_Datatype ft, view;
  MPI_Type_create_subarray(2, sizes, sub, start, MPI_ORDER_C, MPI_INT, &ft);
  MPI_Offset off = 0;
  if (rank == 0) {
    int bl[2] = {HDR, 1};
    MPI_Aint d[2] = {0, VAR};
    MPI_Datatype ts[2] = {MPI_BYTE, ft}, st;
    MPI_Type_create_struct(2, bl, d, ts, &st);
    MPI_Type_create_resized(st, VAR, (MPI_Aint)varlen, &view);
    MPI_Type_free(&st);
    MPI_Type_commit(&view);
    rc = MPI_File_set_view(fh, 0, MPI_BYTE, view, "native", info);
    off = HDR;
  } else {
    MPI_Type_commit(&ft);
    view = ft;
    rc = MPI_File_set_view(fh, VAR, MPI_BYTE, ft, "native", info);
  }
  CHECK(rc == MPI_SUCCESS, "header view: set_view: %s", err_text(rc));
  int mine[ROWS * 2], back[ROWS * 2], cnt = -1;
  for (int i = 0; i < ROWS * 2; i++) mine[i] = 1000 * (rank + 1) + i;
  MPI_Status st;
  rc = MPI_File_write_at_all(fh, off, mine, ROWS * 2, MPI_INT, &st);
  MPI_Get_count(&st, MPI_INT, &cnt);
  CHECK(rc == MPI_SUCCESS && cnt == ROWS * 2, "header view %s cb_nodes=%d: write_at_all rc %s count %d", cbmode,
        cb_nodes, err_text(rc), cnt);
  MPI_File_sync(fh);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_File_sync(fh);
  memset(back, 0, sizeof back);
  rc = MPI_File_read_at_all(fh, off, back, ROWS * 2, MPI_INT, &st);
  CHECK(rc == MPI_SUCCESS && !memcmp(back, mine, sizeof back), "header view %s cb_nodes=%d: read_at_all rc %s, data %s",
        cbmode, cb_nodes, err_text(rc), rc == MPI_SUCCESS ? "differs" : "-");
  MPI_File_close(&fh);
  MPI_Info_free(&info);
  if (view != ft) MPI_Type_free(&view);
  MPI_Type_free(&ft);
  if (rank == 0) {
    long len;
    unsigned char *f = slurp(&len);
    long bad = -1;
    for (long i = 0; i < len && bad < 0; i++) {
      long v = i - VAR, row = v / (2 * np * 4), col = v % (2 * np * 4) / 4;
      int want = pattern(i);
      if (v >= 0 && v < varlen) {
        int x = 1000 * ((int)col / 2 + 1) + (int)row * 2 + (int)col % 2;
        want = ((unsigned char *)&x)[v % 4];
      }
      if (f[i] != want) bad = i;
    }
    CHECK(len == VAR + varlen + 16 && bad < 0, "header view %s cb_nodes=%d: file byte %ld wrong (length %ld)", cbmode,
          cb_nodes, bad, len);
    free(f);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

/* The view cache (collective/viewx.c): collective writes under three filetypes in turn, with
 * a cache of two sets (every third change evicts), moved displacements (the same filetype
 * elsewhere: a hit), and nonblocking collective writes left in flight across set_view (pario
 * keeps each operation's view; the nonblocking context has a cache of its own). Every byte of
 * the file is checked against a model. */
enum { VC_N = 60, VC_REGION = 256 };
static const int vc_blk[3] = {5, 3, 7}, vc_stride[3] = {8, 4, 16};

static MPI_Datatype vc_type(int k) {
  MPI_Datatype v, t;
  MPI_Type_vector(1, vc_blk[k], 1, MPI_BYTE, &v);
  MPI_Type_create_resized(v, 0, (MPI_Aint)np * vc_stride[k], &t);
  MPI_Type_free(&v);
  MPI_Type_commit(&t);
  return t;
}

static unsigned char vc_val(int t, int r, long i) { return (unsigned char)(t * 29 + r * 37 + i * 11 + 3); }

/* Step t under filetype k: its region's displacement; the model gets every rank's bytes. */
static MPI_Offset vc_step(unsigned char *model, int t, int k) {
  MPI_Offset base = DISP + (MPI_Offset)t * VC_REGION * np;
  for (int r = 0; r < np; r++)
    for (long i = 0; i < VC_N; i++)
      model[base + (MPI_Offset)r * vc_stride[k] + (i / vc_blk[k]) * np * vc_stride[k] + i % vc_blk[k]] = vc_val(t, r, i);
  return base + (MPI_Offset)rank * vc_stride[k];
}

static void view_cache(void) {
  static const int blocking[] = {0, 1, 2, 0, 1, 0, 0}, inflight[] = {2, 1, 2, 0};
  enum { NB = sizeof blocking / sizeof *blocking, NI = sizeof inflight / sizeof *inflight };
  long filelen = DISP + (long)(NB + NI) * VC_REGION * np + 5;
  unsigned char *model = malloc((size_t)filelen), buf[NI][VC_N];
  for (long i = 0; i < filelen; i++) model[i] = pattern(i);
  prefill(filelen);
  MPI_Datatype ft[3] = {vc_type(0), vc_type(1), vc_type(2)};
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "romio_cb_write", "enable");
  MPI_Info_set(info, "cb_buffer_size", "64");
  MPI_Info_set(info, "pario_coll_view_cache", "2");
  MPI_Info_set(info, "pario_coll_chunk", "4096"); /* the smallest the hints take */
  MPI_File fh;
  int rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR, info, &fh);
  CHECK(rc == MPI_SUCCESS, "view cache: open: %s", err_text(rc));
  check_info(fh, "pario_coll_view_cache", "2");
  for (int t = 0; t < NB; t++) {
    int k = blocking[t];
    MPI_Offset d = vc_step(model, t, k);
    for (long i = 0; i < VC_N; i++) buf[0][i] = vc_val(t, rank, i);
    rc = MPI_File_set_view(fh, d, MPI_BYTE, ft[k], "native", info); /* an info that changes nothing */
    CHECK(rc == MPI_SUCCESS, "view cache: set_view %d: %s", t, err_text(rc));
    rc = MPI_File_write_at_all(fh, 0, buf[0], VC_N, MPI_BYTE, MPI_STATUS_IGNORE);
    CHECK(rc == MPI_SUCCESS, "view cache: write %d: %s", t, err_text(rc));
    rc = MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
    CHECK(rc == MPI_SUCCESS, "view cache: reset %d: %s", t, err_text(rc));
  }
  MPI_Request rq[NI];
  for (int j = 0; j < NI; j++) { /* each write still in flight when the next set_view comes */
    int t = NB + j, k = inflight[j];
    MPI_Offset d = vc_step(model, t, k);
    for (long i = 0; i < VC_N; i++) buf[j][i] = vc_val(t, rank, i);
    rc = MPI_File_set_view(fh, d, MPI_BYTE, ft[k], "native", MPI_INFO_NULL);
    CHECK(rc == MPI_SUCCESS, "view cache: set_view in flight %d: %s", j, err_text(rc));
    rc = MPI_File_iwrite_at_all(fh, 0, buf[j], VC_N, MPI_BYTE, &rq[j]);
    CHECK(rc == MPI_SUCCESS, "view cache: iwrite %d: %s", j, err_text(rc));
  }
  MPI_Status st[NI];
  rc = MPI_Waitall(NI, rq, st);
  CHECK(rc == MPI_SUCCESS, "view cache: waitall: %s", err_text(rc));
  MPI_File_close(&fh);
  MPI_Barrier(MPI_COMM_WORLD);
  long len;
  unsigned char *got = slurp(&len);
  CHECK(len == filelen, "view cache: file has %ld bytes, want %ld", len, filelen);
  for (long i = 0; i < len && i < filelen; i++)
    if (got[i] != model[i]) {
      CHECK(0, "view cache: byte %ld is %d, want %d", i, got[i], model[i]);
      break;
    }
  free(got);
  free(model);
  MPI_Info_free(&info);
  for (int k = 0; k < 3; k++) MPI_Type_free(&ft[k]);
  MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  t_rank = rank;
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Comm_size(node, &one_node);
  one_node = one_node == np;
  MPI_Comm_free(&node);
  test_path(path, sizeof path, "pario-collective");
  hints();
  hints_differ();
  const char *sizes[] = {"64", "1000", NULL};
  for (int cbn = 1; cbn <= np; cbn++)
    for (int s = 0; s < 3; s++) {
      one_config(cbn, sizes[s], "enable", s == 0 ? 40 : 300); /* cb 64: many rounds */
      one_config(cbn, sizes[s], "automatic", 7);
    }
  one_config(1, NULL, "disable", 300);
  for (int cbn = 1; cbn <= np; cbn++) {
    header_view("enable", cbn);
    header_view("automatic", cbn);
  }
  header_view("disable", 1);
  sieving(0);
  sieving(1);
  sieving_beside_plain(1);
  sieving_beside_plain(0);
  sieving_reads();
  bad_rank();
  aggregator_fails();
  view_cache();
  if (rank == 0) remove(path);
  return finish("collective");
}
