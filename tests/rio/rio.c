/* x-rio:// files (tests/rio/CMakeLists.txt runs each mode under with-server.sh or fault.sh):
 *   basic URL      every file operation, get_info keys, hint over environment, errors naming
 *                  host and file, MPI_File_delete
 *   noncontig URL  an HPIO-like write and read of 32 B regions: one request per window (the
 *                  pario_rio_requests count), the bytes checked
 *   hpio URL       only that write (count.sh checks the server's count of WRITE requests)
 *   lazy URL       collective write with one aggregator: the other ranks never reach the server
 *   split URL      requests cut at the server's limits (server run with --max-request 1M)
 *   inflight URL [N SIZE]  N blocking, then N nonblocking writes in flight: times printed
 *   submit URL [N] N nonblocking 4 KiB writes, then N reads, in flight at once through the
 *                  engine's submission path (no I/O thread started), the bytes read back; reads
 *                  across the end of file; two 3 MiB writes (the sender thread's); close with N
 *                  writes still in flight
 *   gen NAME       a fixed mix of contiguous, noncontiguous, collective, nonblocking and
 *                  shared-pointer writes, for comparing a server's file with a local one
 *   collw NAME HOW a collective strided write (CALLS calls of STRIDES 1 KiB pieces per rank,
 *                  rank-interleaved), read back with read_all; HOW indep (romio_cb_write
 *                  disable: each rank writes its window) or twophase (cb_nodes = ranks), either
 *                  with a -nb suffix: nonblocking (iwrite_at_all, iread_at_all: the engine's
 *                  threads run them); rank 0 prints the WRITE requests the ranks sent
 *                  (forward.sh: merged by a forwarder)
 *   fault URL DIR  collective writes until the server (stopped or killed by fault.sh) fails
 *                  them: every rank gets MPI_ERR_IO naming the file; after DIR/restarted
 *                  appears, a new open works
 *   fault_nb URL DIR  the same with rounds of 512 nonblocking 4 KiB writes in flight: the
 *                  error arrives at MPI_Wait
 *   perm URL DIR   the hint file_perm 4777 on a created file: the server (its root DIR)
 *                  makes it without setuid/setgid/sticky bits
 *   readonly URL DIR  run with PARIO_RIO_USER naming a read-only credential (cred-e2e.sh):
 *                  reading works, opening for writing and deleting fail with MPI_ERR_ACCESS */
#define _POSIX_C_SOURCE 200809L
#include <sys/stat.h>
#include <time.h>

#include "../mpi/harness.h"

static int rank, np;

static const char *info_get(MPI_File fh, const char *key, char *v, int n) {
  MPI_Info info;
  int flag = 0;
  v[0] = 0;
  MPI_File_get_info(fh, &info);
  MPI_Info_get(info, key, n - 1, v, &flag);
  MPI_Info_free(&info);
  return flag ? v : "";
}

static long long requests(MPI_File fh) {
  char v[64];
  return atoll(info_get(fh, "pario_rio_requests", v, sizeof v));
}

static unsigned char pat(long long off) { return (unsigned char)(off * 131 + 17); }

static void basic(const char *url) {
  char path[1024], v[1024], host[300];
  snprintf(path, sizeof path, "%s/basic.%d", url, (int)getpid());
  MPI_Bcast(path, sizeof path, MPI_CHAR, 0, MPI_COMM_WORLD);
  snprintf(host, sizeof host, "%.*s", (int)(strchr(url + 8, '/') ? strchr(url + 8, '/') - (url + 8) : (long)strlen(url + 8)), url + 8);
  MPI_File fh;
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "pario_rio_timeout", "20");
  int rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR, info, &fh);
  CHECK_ERR(rc, MPI_ERR_NO_SUCH_FILE, "MPI_File_open", path);
  rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
  CHECK(rc == MPI_SUCCESS, "open: %s", err_text(rc));
  if (rc != MPI_SUCCESS) return;
  CHECK(!strcmp(info_get(fh, "pario_rio_server", v, sizeof v), host), "pario_rio_server %s, want %s", v, host);
  CHECK(!strcmp(info_get(fh, "pario_rio_protocol", v, sizeof v), "2"), "pario_rio_protocol %s", v);
  CHECK(!strcmp(info_get(fh, "pario_rio_timeout", v, sizeof v), "20"), "pario_rio_timeout %s", v);
  CHECK(!strcmp(info_get(fh, "pario_rio_secret_file", v, sizeof v), getenv("PARIO_RIO_SECRET_FILE")),
        "pario_rio_secret_file %s", v);
  CHECK(!strcmp(info_get(fh, "pario_sharedfp", v, sizeof v), "auto"), "pario_sharedfp before use %s", v);
  enum { B = 100000 };
  unsigned char *w = malloc(B), *r = malloc(B);
  for (int i = 0; i < B; i++) w[i] = pat((long long)rank * B + i);
  MPI_Status st;
  int count = 0;
  rc = MPI_File_write_at(fh, (MPI_Offset)rank * B, w, B, MPI_BYTE, &st);
  MPI_Get_count(&st, MPI_BYTE, &count);
  CHECK(rc == MPI_SUCCESS && count == B, "write_at: %s, %d bytes", err_text(rc), count);
  MPI_File_sync(fh);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_File_sync(fh);
  int peer = (rank + 1) % np;
  memset(r, 0, B);
  rc = MPI_File_read_at(fh, (MPI_Offset)peer * B, r, B, MPI_BYTE, &st);
  MPI_Get_count(&st, MPI_BYTE, &count);
  long bad = 0;
  for (int i = 0; i < B; i++) bad += r[i] != pat((long long)peer * B + i);
  CHECK(rc == MPI_SUCCESS && count == B && bad == 0, "read_at peer: %s, %d bytes, %ld wrong", err_text(rc), count, bad);
  /* a read across the end of file stops there */
  rc = MPI_File_read_at(fh, (MPI_Offset)np * B - 10, r, 100, MPI_BYTE, &st);
  MPI_Get_count(&st, MPI_BYTE, &count);
  CHECK(rc == MPI_SUCCESS && count == 10, "read at EOF: %s, %d bytes", err_text(rc), count);
  MPI_Offset size = 0;
  MPI_File_get_size(fh, &size);
  CHECK(size == (MPI_Offset)np * B, "size %lld", (long long)size);
  rc = MPI_File_set_size(fh, 1000);
  MPI_File_get_size(fh, &size);
  CHECK(rc == MPI_SUCCESS && size == 1000, "set_size: %s, %lld", err_text(rc), (long long)size);
  rc = MPI_File_preallocate(fh, 5000);
  MPI_File_get_size(fh, &size);
  CHECK(rc == MPI_SUCCESS && size == 5000, "preallocate: %s, %lld", err_text(rc), (long long)size);
  rc = MPI_File_set_atomicity(fh, 1);
  CHECK(rc == MPI_SUCCESS, "atomic mode: %s", err_text(rc));
  rc = MPI_File_write_at_all(fh, rank, &w[rank], 1, MPI_BYTE, &st);
  CHECK(rc == MPI_SUCCESS, "atomic write: %s", err_text(rc));
  MPI_File_set_atomicity(fh, 0);
  unsigned char c = 0;
  MPI_File_read_at_all(fh, peer, &c, 1, MPI_BYTE, &st);
  CHECK(c == pat((long long)peer * B + peer), "atomic write read back: %u", c);
  rc = MPI_File_close(&fh);
  CHECK(rc == MPI_SUCCESS, "close: %s", err_text(rc));
  /* the hint wins over PARIO_RIO_SECRET_FILE: a missing secret file fails the open */
  MPI_Info_set(info, "pario_rio_secret_file", "/nonexistent/pario-secret");
  rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR, info, &fh);
  CHECK_ERR(rc, MPI_ERR_ACCESS, "MPI_File_open", path);
  MPI_Info_set(info, "pario_rio_secret_file", getenv("PARIO_RIO_SECRET_FILE"));
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    rc = MPI_File_delete(path, info);
    CHECK(rc == MPI_SUCCESS, "delete: %s", err_text(rc));
    rc = MPI_File_delete(path, info);
    CHECK_ERR(rc, MPI_ERR_NO_SUCH_FILE, "MPI_File_delete", path);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, info, &fh);
  CHECK_ERR(rc, MPI_ERR_NO_SUCH_FILE, "MPI_File_open", path);
  /* an unreachable server: an I/O error naming host and file, within the timeout */
  char dead[1100];
  snprintf(dead, sizeof dead, "x-rio://127.0.0.1:1/basic");
  MPI_Info_set(info, "pario_rio_timeout", "2");
  rc = MPI_File_open(MPI_COMM_WORLD, dead, MPI_MODE_RDONLY, info, &fh);
  CHECK_ERR(rc, MPI_ERR_IO, "MPI_File_open", dead);
  MPI_Info_free(&info);
  free(w);
  free(r);
}

/* HPIO-like: each rank writes REGIONS regions of 32 B, rank-interleaved with a 32 B gap. */
enum { REG = 32, REGIONS = 4096, WINDOW = 64 << 10 };

/* Open NAME.<pid> under url with 64 KiB sieving/list windows and the rank-interleaved HPIO
 * view (ft: its filetype, freed by the caller); 0 on success, the open's error checked. */
static int open_hpio(const char *url, const char *name, int amode, char *path, size_t pathlen, MPI_Info *info,
                     MPI_File *fh, MPI_Datatype *ft) {
  snprintf(path, pathlen, "%s/%s.%d", url, name, (int)getpid());
  MPI_Bcast(path, (int)pathlen, MPI_CHAR, 0, MPI_COMM_WORLD);
  MPI_Info_create(info);
  MPI_Info_set(*info, "ind_wr_buffer_size", "65536");
  MPI_Info_set(*info, "ind_rd_buffer_size", "65536");
  int rc = MPI_File_open(MPI_COMM_WORLD, path, amode, *info, fh);
  CHECK(rc == MPI_SUCCESS, "open: %s", err_text(rc));
  if (rc != MPI_SUCCESS) return MPI_Info_free(info), 1;
  MPI_Type_create_hvector(REGIONS, REG, (MPI_Aint)np * 2 * REG, MPI_BYTE, ft);
  MPI_Type_commit(ft);
  MPI_File_set_view(*fh, (MPI_Offset)rank * 2 * REG, MPI_BYTE, *ft, "native", MPI_INFO_NULL);
  return 0;
}

/* The windows of one access in flight together (more of them than go at once: 32 windows of
 * 4 KiB), then an access that runs past the end of file: the bytes up to it, in order. */
static void noncontig_windows(MPI_File fh, MPI_Info info, const unsigned char *w, unsigned char *r, long n) {
  MPI_Info_set(info, "ind_rd_buffer_size", "4096");
  MPI_File_set_info(fh, info);
  memset(r, 0, (size_t)n);
  long long before = requests(fh);
  int rc = MPI_File_read_at(fh, 0, r, (int)n, MPI_BYTE, MPI_STATUS_IGNORE);
  long long reads = requests(fh) - before;
  CHECK(rc == MPI_SUCCESS && !memcmp(r, w, (size_t)n), "read in 4 KiB windows: %s", err_text(rc));
  CHECK(reads == n / 4096, "read in 4 KiB windows: %lld requests, want %ld", reads, n / 4096);
  MPI_Status st;
  MPI_Offset size = 0;
  int count = -1;
  long want = 0; /* this rank's view bytes from n / 2 that lie before the end of file */
  MPI_File_get_size(fh, &size);
  long extent = (long)(REGIONS - 1) * np * 2 * REG + REG; /* the filetype's: it tiles from there */
  for (long k = n / 2 / REG; k < n / 2 / REG + n / REG; k++) {
    long off = (long)rank * 2 * REG + k / REGIONS * extent + k % REGIONS * np * 2 * REG;
    if (off >= size) break;
    want += size - off < REG ? size - off : REG;
  }
  memset(r, 0, (size_t)n);
  rc = MPI_File_read_at(fh, n / 2, r, (int)n, MPI_BYTE, &st); /* its second half lies past the end */
  MPI_Get_count(&st, MPI_BYTE, &count);
  CHECK(rc == MPI_SUCCESS && count == want && want >= n / 2 && !memcmp(r, w + n / 2, (size_t)(n / 2)),
        "read across the end of file in windows: %d bytes, want %ld: %s", count, want, err_text(rc));
  MPI_Info_set(info, "ind_rd_buffer_size", "65536");
  MPI_File_set_info(fh, info);
}

static void noncontig(const char *url) {
  char path[1024];
  MPI_Info info;
  MPI_File fh;
  MPI_Datatype ft;
  if (open_hpio(url, "noncontig", MPI_MODE_CREATE | MPI_MODE_RDWR, path, sizeof path, &info, &fh, &ft)) return;
  int rc;
  long n = (long)REG * REGIONS;
  unsigned char *w = malloc((size_t)n), *r = malloc((size_t)n);
  for (long i = 0; i < n; i++) w[i] = (unsigned char)(rank * 7 + i * 3 + 1);
  long long before = requests(fh);
  rc = MPI_File_write(fh, w, (int)n, MPI_BYTE, MPI_STATUS_IGNORE);
  long long writes = requests(fh) - before, windows = (n + WINDOW - 1) / WINDOW;
  CHECK(rc == MPI_SUCCESS, "noncontiguous write: %s", err_text(rc));
  CHECK(writes == windows, "noncontiguous write of %d pieces: %lld requests, want %lld (one per window)", REGIONS,
        writes, windows);
  MPI_File_sync(fh);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_File_sync(fh);
  MPI_File_seek(fh, 0, MPI_SEEK_SET);
  before = requests(fh);
  rc = MPI_File_read(fh, r, (int)n, MPI_BYTE, MPI_STATUS_IGNORE);
  long long reads = requests(fh) - before;
  CHECK(rc == MPI_SUCCESS && !memcmp(r, w, (size_t)n), "noncontiguous read back: %s", err_text(rc));
  CHECK(reads == windows, "noncontiguous read: %lld requests, want %lld", reads, windows);
  if (rank == 0) printf("noncontig: %d pieces of %d B per rank: %lld write and %lld read requests\n", REGIONS, REG,
                        writes, reads);
  noncontig_windows(fh, info, w, r, n);
  /* the whole file, holes included, through the default view */
  MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
  long total = (long)np * 2 * REG * REGIONS;
  unsigned char *all = malloc((size_t)total);
  MPI_Status st;
  int count = 0;
  MPI_File_read_at_all(fh, 0, all, (int)total, MPI_BYTE, &st);
  MPI_Get_count(&st, MPI_BYTE, &count);
  long bad = 0;
  for (long k = 0; k < total; k++) {
    long blk = k / REG, owner = (blk / 2) % np, i = (blk / 2 / np) * REG + k % REG;
    unsigned char want = blk % 2 ? 0 : (unsigned char)(owner * 7 + i * 3 + 1);
    if (k >= total - REG) continue; /* the last gap lies past the end of file */
    bad += all[k] != want;
  }
  CHECK(count >= total - REG && bad == 0, "file bytes: %d read, %ld wrong", count, bad);
  MPI_File_close(&fh);
  MPI_Type_free(&ft);
  MPI_Info_free(&info);
  if (rank == 0) MPI_File_delete(path, MPI_INFO_NULL);
  free(w);
  free(r);
  free(all);
}

/* Only the HPIO-like write of noncontig: the server's own count of WRITE requests is then
 * checked by count.sh (one per window and rank). */
static void hpio(const char *url) {
  char path[1024];
  MPI_Info info;
  MPI_File fh;
  MPI_Datatype ft;
  if (open_hpio(url, "hpio", MPI_MODE_CREATE | MPI_MODE_WRONLY, path, sizeof path, &info, &fh, &ft)) return;
  int rc;
  long n = (long)REG * REGIONS;
  unsigned char *w = malloc((size_t)n);
  memset(w, 'a' + rank, (size_t)n);
  rc = MPI_File_write(fh, w, (int)n, MPI_BYTE, MPI_STATUS_IGNORE);
  CHECK(rc == MPI_SUCCESS, "noncontiguous write: %s", err_text(rc));
  if (rank == 0) printf("hpio: %d ranks, %d pieces of %d B each, %ld windows of %d B each\n", np, REGIONS, REG,
                        (n + WINDOW - 1) / WINDOW, WINDOW);
  MPI_File_close(&fh);
  MPI_Type_free(&ft);
  MPI_Info_free(&info);
  free(w);
}

static void lazy(const char *url) {
  char path[1024], v[64];
  snprintf(path, sizeof path, "%s/lazy.%d", url, (int)getpid());
  MPI_Bcast(path, sizeof path, MPI_CHAR, 0, MPI_COMM_WORLD);
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "cb_nodes", "1");
  MPI_Info_set(info, "romio_cb_write", "enable");
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN); /* MPI_Wait's errors come back */
  MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  MPI_File fh;
  int rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, info, &fh);
  CHECK(rc == MPI_SUCCESS, "open: %s", err_text(rc));
  if (rc != MPI_SUCCESS) return;
  enum { B = 4096 };
  unsigned char buf[B];
  memset(buf, 'a' + rank, B);
  rc = MPI_File_write_at_all(fh, (MPI_Offset)rank * B, buf, B, MPI_BYTE, MPI_STATUS_IGNORE);
  CHECK(rc == MPI_SUCCESS, "collective write: %s", err_text(rc));
  long long mine = requests(fh), all = 0;
  int connected = !strcmp(info_get(fh, "pario_rio_connected", v, sizeof v), "true"), nconn = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&connected, &nconn, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  CHECK(all >= 1, "the aggregator wrote: %lld requests", all);
  CHECK(nconn == 1, "%d ranks reached the server, want 1 (the aggregator, rank 0)", nconn);
  CHECK(rank != 0 || connected, "rank 0 opened the file on the server");
  MPI_File_close(&fh);
  rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
  unsigned char r[B];
  MPI_File_read_at(fh, (MPI_Offset)((rank + 1) % np) * B, r, B, MPI_BYTE, MPI_STATUS_IGNORE);
  CHECK(r[0] == 'a' + (rank + 1) % np && r[B - 1] == r[0], "collective data read back");
  MPI_File_close(&fh);
  if (rank == 0) MPI_File_delete(path, MPI_INFO_NULL);
  MPI_Info_free(&info);
}

/* The same calls on any name, each checked: its bytes are compared by the caller (compare.sh:
 * the native MPI-IO on a local file against pario on the server's). */
static void gen(const char *name) {
  MPI_File fh;
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "pario_sharedfp", getenv("PARIO_TEST_SHAREDFP") ? getenv("PARIO_TEST_SHAREDFP") : "auto");
  int rc = MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
  CHECK(rc == MPI_SUCCESS, "open %s: %s", name, err_text(rc));
  if (rc != MPI_SUCCESS) return;
  rc = MPI_File_set_size(fh, 0);
  CHECK(rc == MPI_SUCCESS, "set_size %s: %s", name, err_text(rc));
  enum { B = 10000, N = 64 };
  unsigned char buf[B];
  for (int i = 0; i < B; i++) buf[i] = (unsigned char)(rank * 13 + i);
  rc = MPI_File_write_at(fh, (MPI_Offset)rank * B, buf, B, MPI_BYTE, MPI_STATUS_IGNORE); /* contiguous */
  CHECK(rc == MPI_SUCCESS, "write_at %s: %s", name, err_text(rc));
  MPI_Offset base = (MPI_Offset)np * B;
  MPI_Datatype vt, ft, mt;
  /* noncontiguous file, collective; resized to N whole strides so that the independent write
   * below tiles after it (a bare vector's extent stops at its last block: the next instance
   * would overlap another rank's last piece, a conflicting access whose outcome the standard
   * leaves undefined and OMPIO's collective write races on) */
  MPI_Type_vector(N, 3, 3 * np, MPI_INT, &vt);
  MPI_Type_create_resized(vt, 0, (MPI_Aint)N * 3 * np * (MPI_Aint)sizeof(int), &ft);
  MPI_Type_free(&vt);
  MPI_Type_commit(&ft);
  MPI_Type_vector(N, 3, 5, MPI_INT, &mt); /* noncontiguous memory */
  MPI_Type_commit(&mt);
  int ints[5 * N];
  for (int i = 0; i < 5 * N; i++) ints[i] = rank * 100000 + i;
  rc = MPI_File_set_view(fh, base + rank * 3 * (MPI_Offset)sizeof(int), MPI_INT, ft, "native", MPI_INFO_NULL);
  CHECK(rc == MPI_SUCCESS, "set_view %s: %s", name, err_text(rc));
  rc = MPI_File_write_all(fh, ints, 1, mt, MPI_STATUS_IGNORE);
  CHECK(rc == MPI_SUCCESS, "write_all %s: %s", name, err_text(rc));
  rc = MPI_File_write(fh, ints, 1, mt, MPI_STATUS_IGNORE); /* independent, the next N pieces */
  CHECK(rc == MPI_SUCCESS, "write %s: %s", name, err_text(rc));
  MPI_Offset after = base + 2LL * N * 3 * np * (MPI_Offset)sizeof(int);
  rc = MPI_File_set_view(fh, after, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
  CHECK(rc == MPI_SUCCESS, "set_view %s: %s", name, err_text(rc));
  MPI_Request req[4];
  MPI_Status sts[4];
  for (int k = 0; k < 4; k++) { /* nonblocking, several in flight */
    rc = MPI_File_iwrite_at(fh, ((MPI_Offset)k * np + rank) * 1000, buf + k * 1000, 1000, MPI_BYTE, &req[k]);
    CHECK(rc == MPI_SUCCESS, "iwrite_at %s: %s", name, err_text(rc));
  }
  rc = MPI_Waitall(4, req, sts);
  CHECK(rc == MPI_SUCCESS, "waitall %s: %s", name, err_text(rc));
  rc = MPI_File_set_view(fh, after + 4000LL * np, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
  CHECK(rc == MPI_SUCCESS, "set_view %s: %s", name, err_text(rc));
  rc = MPI_File_write_ordered(fh, buf, 100 + rank, MPI_BYTE, MPI_STATUS_IGNORE); /* shared pointer */
  CHECK(rc == MPI_SUCCESS, "write_ordered %s: %s", name, err_text(rc));
  rc = MPI_File_write_ordered(fh, buf + 7, 50, MPI_BYTE, MPI_STATUS_IGNORE);
  CHECK(rc == MPI_SUCCESS, "write_ordered %s: %s", name, err_text(rc));
  rc = MPI_File_close(&fh);
  CHECK(rc == MPI_SUCCESS, "close %s: %s", name, err_text(rc));
  MPI_Type_free(&ft);
  MPI_Type_free(&mt);
  MPI_Info_free(&info);
}

/* A collective strided write through a forwarder (forward.sh): every call, every rank writes
 * STRIDES pieces of PIECE bytes, rank-interleaved, so the ranks' requests of one call join into
 * one contiguous range; then read back collectively and checked. */
enum { PIECE = 1024, STRIDES = 16, CALLS = 8 };

static void collw(const char *name, const char *how) {
  MPI_Info info;
  MPI_Info_create(&info);
  const int nb = strstr(how, "-nb") != NULL;
  if (!strncmp(how, "indep", 5)) {
    MPI_Info_set(info, "romio_cb_write", "disable");
    MPI_Info_set(info, "romio_cb_read", "disable");
  } else {
    char n[16];
    snprintf(n, sizeof n, "%d", np);
    MPI_Info_set(info, "romio_cb_write", "enable");
    MPI_Info_set(info, "romio_cb_read", "enable");
    MPI_Info_set(info, "cb_nodes", n);
  }
  MPI_File fh;
  int rc = MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
  CHECK(rc == MPI_SUCCESS, "open %s: %s", name, err_text(rc));
  if (rc != MPI_SUCCESS) return;
  MPI_Datatype v, ft; /* the pieces, tiled every STRIDES rounds of all ranks' pieces */
  MPI_Type_vector(STRIDES, PIECE, PIECE * np, MPI_BYTE, &v);
  MPI_Type_create_resized(v, 0, (MPI_Aint)PIECE * np * STRIDES, &ft);
  MPI_Type_free(&v);
  MPI_Type_commit(&ft);
  MPI_File_set_view(fh, (MPI_Offset)rank * PIECE, MPI_BYTE, ft, "native", MPI_INFO_NULL);
  enum { N = PIECE * STRIDES };
  unsigned char *w = malloc(N), *r = malloc(N);
  long long before = requests(fh);
  for (int k = 0; k < CALLS; k++) {
    for (int i = 0; i < N; i++) w[i] = (unsigned char)(rank * 31 + k * 7 + i);
    MPI_Request rq;
    rc = nb ? MPI_File_iwrite_at_all(fh, (MPI_Offset)k * N, w, N, MPI_BYTE, &rq)
            : MPI_File_write_at_all(fh, (MPI_Offset)k * N, w, N, MPI_BYTE, MPI_STATUS_IGNORE);
    if (nb && rc == MPI_SUCCESS) rc = MPI_Wait(&rq, MPI_STATUS_IGNORE);
    CHECK(rc == MPI_SUCCESS, "write_at_all %d (%s): %s", k, how, err_text(rc));
  }
  long long mine = requests(fh) - before, all = 0;
  MPI_Reduce(&mine, &all, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_File_sync(fh);
  for (int k = 0; k < CALLS; k++) {
    MPI_Request rq;
    memset(r, 0, N);
    rc = nb ? MPI_File_iread_at_all(fh, (MPI_Offset)k * N, r, N, MPI_BYTE, &rq)
            : MPI_File_read_at_all(fh, (MPI_Offset)k * N, r, N, MPI_BYTE, MPI_STATUS_IGNORE);
    if (nb && rc == MPI_SUCCESS) rc = MPI_Wait(&rq, MPI_STATUS_IGNORE);
    for (int i = 0; i < N; i++) w[i] = (unsigned char)(rank * 31 + k * 7 + i);
    CHECK(rc == MPI_SUCCESS && !memcmp(r, w, N), "read_at_all %d back: %s", k, err_text(rc));
  }
  if (rank == 0) printf("collw %s: %d ranks x %d calls: %lld WRITE requests sent\n", how, np, CALLS, all);
  rc = MPI_File_close(&fh);
  CHECK(rc == MPI_SUCCESS, "close: %s", err_text(rc));
  MPI_Type_free(&ft);
  MPI_Info_free(&info);
  free(w), free(r);
}

/* Requests cut at the server's limits (run against --max-request 1M): a 5 MiB contiguous
 * write and read, and a noncontiguous window of 4 MiB in 32 B pieces (131072 segments, over
 * both max_segments and max_request), each byte checked. */
static void split(const char *url) {
  char path[1024];
  snprintf(path, sizeof path, "%s/split.%d", url, (int)getpid());
  MPI_Bcast(path, sizeof path, MPI_CHAR, 0, MPI_COMM_WORLD);
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "ind_wr_buffer_size", "4194304");
  MPI_Info_set(info, "ind_rd_buffer_size", "4194304");
  MPI_File fh;
  int rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
  CHECK(rc == MPI_SUCCESS, "open: %s", err_text(rc));
  if (rc != MPI_SUCCESS) return;
  long n = 5L << 20;
  unsigned char *w = malloc((size_t)n), *r = malloc(8 << 20);
  for (long i = 0; i < n; i++) w[i] = pat(i * (rank + 3));
  MPI_Status st;
  int count = 0;
  long long before = requests(fh);
  rc = MPI_File_write_at(fh, (MPI_Offset)rank * n, w, (int)n, MPI_BYTE, &st);
  MPI_Get_count(&st, MPI_BYTE, &count);
  CHECK(rc == MPI_SUCCESS && count == n, "5 MiB write: %s, %d", err_text(rc), count);
  CHECK(requests(fh) - before >= 5, "5 MiB in requests of at most 1 MiB: %lld", requests(fh) - before);
  rc = MPI_File_read_at(fh, (MPI_Offset)rank * n, r, (int)n, MPI_BYTE, &st);
  MPI_Get_count(&st, MPI_BYTE, &count);
  CHECK(rc == MPI_SUCCESS && count == n && !memcmp(r, w, (size_t)n), "5 MiB read back: %s, %d", err_text(rc), count);
  MPI_Barrier(MPI_COMM_WORLD);
  /* 32 B pieces, every other 32 B of this rank's 8 MiB: one window of 4 MiB of data */
  enum { P = 32 };
  long pieces = (4L << 20) / P;
  MPI_Datatype ft;
  MPI_Type_create_hvector((int)pieces, P, 2 * P, MPI_BYTE, &ft);
  MPI_Type_commit(&ft);
  MPI_Offset disp = (MPI_Offset)np * n + (MPI_Offset)rank * pieces * 2 * P;
  MPI_File_set_view(fh, disp, MPI_BYTE, ft, "native", MPI_INFO_NULL);
  rc = MPI_File_write(fh, w, (int)(pieces * P), MPI_BYTE, &st);
  MPI_Get_count(&st, MPI_BYTE, &count);
  CHECK(rc == MPI_SUCCESS && count == pieces * P, "131072-piece write: %s, %d", err_text(rc), count);
  MPI_File_seek(fh, 0, MPI_SEEK_SET);
  memset(r, 0, (size_t)n);
  rc = MPI_File_read(fh, r, (int)(pieces * P), MPI_BYTE, &st);
  MPI_Get_count(&st, MPI_BYTE, &count);
  CHECK(rc == MPI_SUCCESS && count == pieces * P && !memcmp(r, w, (size_t)(pieces * P)), "131072-piece read: %s, %d",
        err_text(rc), count);
  MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
  rc = MPI_File_read_at(fh, disp, r, (int)(pieces * 2 * P), MPI_BYTE, &st); /* the same bytes, plainly */
  long bad = 0;
  for (long k = 0; k < pieces * 2 * P - P; k++) bad += r[k] != ((k / P) % 2 ? 0 : w[(k / (2 * P)) * P + k % P]);
  CHECK(rc == MPI_SUCCESS && bad == 0, "the file under the pieces: %ld bytes wrong", bad);
  MPI_Type_free(&ft);
  MPI_File_close(&fh);
  MPI_Info_free(&info);
  free(w);
  free(r);
}

/* N writes of SIZE bytes, blocking one after the other, then nonblocking all at once (in
 * flight together up to pario_io_threads); the times are printed (docs/remote.md, measured
 * against pario-server --emulate net_latency=...), the bytes of both checked. */
static void inflight(const char *url, int n, int size) {
  char path[1024];
  snprintf(path, sizeof path, "%s/inflight.%d.%d", url, (int)getpid(), rank);
  MPI_File fh;
  int rc = MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &fh);
  CHECK(rc == MPI_SUCCESS, "open: %s", err_text(rc));
  if (rc != MPI_SUCCESS) return;
  unsigned char *buf = malloc((size_t)n * size), *r = malloc((size_t)n * size);
  MPI_Request *req = malloc(sizeof *req * (size_t)n);
  MPI_Status *st = malloc(sizeof *st * (size_t)n);
  double t[3];
  for (int pass = 0; pass < 2; pass++) {
    for (long i = 0; i < (long)n * size; i++) buf[i] = (unsigned char)(i * 7 + pass + 1);
    MPI_File_write_at(fh, 0, buf, 1, MPI_BYTE, MPI_STATUS_IGNORE); /* connected before timing */
    t[pass] = MPI_Wtime();
    for (int i = 0; i < n; i++) {
      MPI_Offset off = (MPI_Offset)i * size;
      if (pass == 0) MPI_File_write_at(fh, off, buf + off, size, MPI_BYTE, MPI_STATUS_IGNORE);
      else MPI_File_iwrite_at(fh, off, buf + off, size, MPI_BYTE, &req[i]);
    }
    if (pass == 1) MPI_Waitall(n, req, st);
    t[pass] = MPI_Wtime() - t[pass];
    MPI_File_read_at(fh, 0, r, n * size, MPI_BYTE, MPI_STATUS_IGNORE);
    CHECK(!memcmp(r, buf, (size_t)n * size), "%s writes read back", pass ? "nonblocking" : "blocking");
  }
  printf("inflight: rank %d, %d writes of %d B: blocking %.3f s, nonblocking %.3f s\n", rank, n, size, t[0], t[1]);
  MPI_File_close(&fh);
  free(buf), free(r), free(req), free(st);
}

/* Threads of this process named pario-io: the engine's I/O workers. */
static int io_workers(void) {
  char cmd[128], line[64];
  snprintf(cmd, sizeof cmd, "cat /proc/%d/task/*/comm 2>/dev/null", (int)getpid());
  FILE *p = popen(cmd, "r");
  int n = 0;
  while (p && fgets(line, sizeof line, p)) n += !strncmp(line, "pario-io", 8);
  if (p) pclose(p);
  return n;
}

static void waitall_counts(int n, MPI_Request *req, MPI_Status *st, int want, const char *what) {
  int rc = MPI_Waitall(n, req, st), bad = 0;
  for (int i = 0; i < n && rc == MPI_SUCCESS; i++) {
    int c = -1;
    MPI_Get_count(&st[i], MPI_BYTE, &c);
    bad += c != want;
  }
  CHECK(rc == MPI_SUCCESS && bad == 0, "%d %s: %s, %d with a wrong count", n, what, err_text(rc), bad);
}

static void submit(const char *url, int n) {
  enum { S = 4096 };
  char path[1024];
  snprintf(path, sizeof path, "%s/submit.%d.%d", url, (int)getpid(), rank);
  MPI_File fh;
  int rc = MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh), provided;
  CHECK(rc == MPI_SUCCESS, "open: %s", err_text(rc));
  if (rc != MPI_SUCCESS) return;
  MPI_Query_thread(&provided);
  size_t total = (size_t)n * S;
  unsigned char *buf = malloc(total), *back = calloc(1, total);
  MPI_Request *req = malloc(sizeof *req * (size_t)n);
  MPI_Status *st = malloc(sizeof *st * (size_t)n);
  for (size_t i = 0; i < total; i++) buf[i] = pat((long long)i + rank);
  for (int i = 0; i < n; i++) { /* every block in flight at once, in a scattered order */
    MPI_Offset off = (MPI_Offset)((i * 37L) % n) * S;
    MPI_File_iwrite_at(fh, off, buf + off, S, MPI_BYTE, &req[i]);
  }
  waitall_counts(n, req, st, S, "nonblocking writes");
  for (int i = 0; i < n; i++) MPI_File_iread_at(fh, (MPI_Offset)i * S, back + (size_t)i * S, S, MPI_BYTE, &req[i]);
  waitall_counts(n, req, st, S, "nonblocking reads");
  CHECK(!memcmp(back, buf, total), "nonblocking reads return the bytes of the nonblocking writes");
  if (provided == MPI_THREAD_MULTIPLE)
    CHECK(io_workers() == 0, "no engine I/O thread: %d of them (the operations were not submitted)", io_workers());
  /* across the end of file: the bytes up to it, then none */
  int c[2] = {-1, -1};
  MPI_File_iread_at(fh, (MPI_Offset)total - 100, back, S, MPI_BYTE, &req[0]);
  MPI_File_iread_at(fh, (MPI_Offset)total + 10, back + S, S, MPI_BYTE, &req[1]);
  rc = MPI_Waitall(2, req, st);
  MPI_Get_count(&st[0], MPI_BYTE, &c[0]);
  MPI_Get_count(&st[1], MPI_BYTE, &c[1]);
  CHECK(rc == MPI_SUCCESS && c[0] == 100 && c[1] == 0, "reads across the end of file: %d and %d bytes (%s)", c[0], c[1],
        err_text(rc));
  CHECK(!memcmp(back, buf + total - 100, 100), "the bytes before the end of file");
  /* two large writes (the connection's sender thread sends them) and their read */
  enum { BIG = (3 << 20) + 5 };
  unsigned char *big = malloc(2 * (size_t)BIG), *bigback = calloc(2, BIG);
  for (size_t i = 0; i < 2 * (size_t)BIG; i++) big[i] = pat((long long)i * 5 + rank);
  MPI_File_iwrite_at(fh, (MPI_Offset)total, big, BIG, MPI_BYTE, &req[0]);
  MPI_File_iwrite_at(fh, (MPI_Offset)total + BIG, big + BIG, BIG, MPI_BYTE, &req[1]);
  waitall_counts(2, req, st, BIG, "large nonblocking writes");
  MPI_File_iread_at(fh, (MPI_Offset)total, bigback, 2 * BIG, MPI_BYTE, &req[0]);
  waitall_counts(1, req, st, 2 * BIG, "large nonblocking read");
  CHECK(!memcmp(big, bigback, 2 * (size_t)BIG), "the large writes read back");
  free(big), free(bigback);
  if (provided == MPI_THREAD_MULTIPLE) CHECK(io_workers() == 0, "still no engine I/O thread: %d", io_workers());
  /* close with every write still in flight: close waits for them, their data is not lost */
  for (size_t i = 0; i < total; i++) buf[i] = pat((long long)i * 3 + rank + 1);
  for (int i = 0; i < n; i++) MPI_File_iwrite_at(fh, (MPI_Offset)i * S, buf + (size_t)i * S, S, MPI_BYTE, &req[i]);
  rc = MPI_File_close(&fh);
  CHECK(rc == MPI_SUCCESS, "close with %d writes in flight: %s", n, err_text(rc));
  waitall_counts(n, req, st, S, "writes in flight at close");
  rc = MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
  CHECK(rc == MPI_SUCCESS, "open again: %s", err_text(rc));
  if (rc == MPI_SUCCESS) {
    memset(back, 0, total);
    rc = MPI_File_read_at(fh, 0, back, (int)total, MPI_BYTE, MPI_STATUS_IGNORE);
    CHECK(rc == MPI_SUCCESS && !memcmp(back, buf, total), "the writes in flight at close reached the file");
    MPI_File_close(&fh);
  }
  MPI_File_delete(path, MPI_INFO_NULL);
  free(buf), free(back), free(req), free(st);
}

static int exists(const char *p) { return access(p, F_OK) == 0; }

/* A round of nonblocking writes in flight (fault_nb): the first error MPI_Wait gives. */
static int nb_round(MPI_File fh, const char *buf, int it) {
  enum { N = 512, S = 4096 };
  MPI_Request req[N];
  int first = MPI_SUCCESS;
  for (int i = 0; i < N; i++) {
    MPI_Offset off = (((MPI_Offset)it * np + rank) * N + i) * S;
    int rc = MPI_File_iwrite_at(fh, off, buf, S, MPI_BYTE, &req[i]);
    if (rc != MPI_SUCCESS && first == MPI_SUCCESS) first = rc;
  }
  for (int i = 0; i < N; i++) {
    int rc = MPI_Wait(&req[i], MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS && first == MPI_SUCCESS) first = rc;
  }
  return first;
}

static void fault(const char *url, const char *dir, int nb) {
  char path[1024], flag[1100];
  snprintf(path, sizeof path, "%s/fault.%d", url, (int)getpid());
  MPI_Bcast(path, sizeof path, MPI_CHAR, 0, MPI_COMM_WORLD);
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "pario_rio_timeout", "3");
  MPI_Info_set(info, "romio_cb_write", "enable");
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN); /* MPI_Wait's errors come back */
  MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  MPI_File fh;
  int rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, info, &fh);
  CHECK(rc == MPI_SUCCESS, "open: %s", err_text(rc));
  if (rc != MPI_SUCCESS) return;
  enum { B = 1 << 20 };
  char *buf = malloc(B);
  memset(buf, 'a' + rank, B);
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int it = 0;
  for (;; it++) { /* the server goes away while this runs */
    rc = nb ? nb_round(fh, buf, it)
            : MPI_File_write_at_all(fh, ((MPI_Offset)it * np + rank) * B, buf, B, MPI_BYTE, MPI_STATUS_IGNORE);
    int failed = rc != MPI_SUCCESS, any = 0;
    /* a collective fails on every rank at once; independent rounds go on until each rank has
     * seen its own error (a rank may finish a round just before the server goes) */
    MPI_Allreduce(&failed, &any, 1, MPI_INT, nb ? MPI_MIN : MPI_MAX, MPI_COMM_WORLD);
    if (it == 0 && rank == 0) { /* tell fault.sh to stop or kill the server now */
      snprintf(flag, sizeof flag, "%s/ready", dir);
      fclose(fopen(flag, "w"));
    }
    clock_gettime(CLOCK_MONOTONIC, &t);
    if (any || t.tv_sec - t0.tv_sec > 90) break;
  }
  CHECK_ERR(rc, MPI_ERR_IO, nb ? "MPI_File_iwrite_at" : "MPI_File_write_at_all", path);
  if (rank == 0) printf("fault: write %d failed on rank 0: %s\n", it, err_text(rc));
  MPI_File_close(&fh); /* may fail too: the server is gone */
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    snprintf(flag, sizeof flag, "%s/failed", dir);
    fclose(fopen(flag, "w"));
  }
  snprintf(flag, sizeof flag, "%s/restarted", dir);
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do clock_gettime(CLOCK_MONOTONIC, &t);
  while (!exists(flag) && t.tv_sec - t0.tv_sec < 60 && !nanosleep(&(struct timespec){0, 20000000}, NULL));
  CHECK(exists(flag), "the server came back");
  MPI_Barrier(MPI_COMM_WORLD);
  strcat(path, ".again");
  rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
  CHECK(rc == MPI_SUCCESS, "open after the restart: %s", err_text(rc));
  if (rc == MPI_SUCCESS) {
    char r[16];
    MPI_File_write_at_all(fh, rank * 16, buf, 16, MPI_BYTE, MPI_STATUS_IGNORE);
    rc = MPI_File_read_at_all(fh, rank * 16, r, 16, MPI_BYTE, MPI_STATUS_IGNORE);
    CHECK(rc == MPI_SUCCESS && !memcmp(r, buf, 16), "write and read after the restart: %s", err_text(rc));
    MPI_File_close(&fh);
  }
  MPI_Info_free(&info);
  free(buf);
}

/* A client asks for a setuid file (file_perm 4777): pario-server never makes one (issue 31). */
static void perm(const char *url, const char *dir) {
  char path[1024], local[1024];
  snprintf(path, sizeof path, "%s/perm.%d", url, (int)getpid());
  MPI_Bcast(path, sizeof path, MPI_CHAR, 0, MPI_COMM_WORLD);
  snprintf(local, sizeof local, "%s/%s", dir, strrchr(path, '/') + 1);
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "file_perm", "4777");
  MPI_File fh;
  int rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
  CHECK(rc == MPI_SUCCESS, "open %s with file_perm 4777", path);
  if (rc == MPI_SUCCESS) MPI_File_close(&fh);
  MPI_Info_free(&info);
  struct stat st;
  if (rank == 0) {
    CHECK(stat(local, &st) == 0, "%s exists", local);
    CHECK((st.st_mode & 07000) == 0 && (st.st_mode & 0700) == 0700, "created as %o: no setuid/setgid/sticky",
          (unsigned)(st.st_mode & 07777));
    unlink(local);
  }
}

/* A read-only credential (pario_rio_user / PARIO_RIO_USER) through libpario (issue 31 item 4). */
static void readonly(const char *url, const char *dir) {
  char path[1024], local[1024];
  snprintf(path, sizeof path, "%s/ro.dat", url);
  snprintf(local, sizeof local, "%s/ro.dat", dir);
  if (rank == 0) {
    FILE *f = fopen(local, "w");
    CHECK(f && fputs("read me", f) >= 0 && fclose(f) == 0, "made %s", local);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_File fh;
  char buf[8] = {0};
  MPI_Status st;
  int rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
  CHECK(rc == MPI_SUCCESS, "read-only open: %s", err_text(rc));
  if (rc == MPI_SUCCESS) {
    rc = MPI_File_read_at_all(fh, 0, buf, 7, MPI_CHAR, &st);
    CHECK(rc == MPI_SUCCESS && !memcmp(buf, "read me", 7), "read: %s", err_text(rc));
    MPI_File_close(&fh);
  }
  rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
  CHECK_ERR(rc, MPI_ERR_ACCESS, "MPI_File_open", path); /* for writing */
  if (rank == 0) /* the rank that reached the server says why in the error string */
    CHECK(strstr(err_text(rc), "open for writing refused: credential reader (pario_rio_user) is read-only"),
          "no reason in the error string: %s", err_text(rc));
  if (rc == MPI_SUCCESS) MPI_File_close(&fh);
  snprintf(path, sizeof path, "%s/new.dat", url);
  rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
  CHECK_ERR(rc, MPI_ERR_ACCESS, "MPI_File_open", path); /* to create */
  if (rc == MPI_SUCCESS) MPI_File_close(&fh);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    snprintf(path, sizeof path, "%s/ro.dat", url);
    rc = MPI_File_delete(path, MPI_INFO_NULL);
    CHECK_ERR(rc, MPI_ERR_ACCESS, "MPI_File_delete", path);
    CHECK(strstr(err_text(rc), "delete refused: credential reader (pario_rio_user) is read-only"),
          "no reason in the error string: %s", err_text(rc));
    CHECK(access(local, F_OK) == 0, "%s still there", local);
    unlink(local);
  }
}

int main(int argc, char **argv) {
  start(&argc, &argv);
  rank = t_rank;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  const char *mode = argc > 2 ? argv[1] : "";
  if (!strcmp(mode, "basic")) basic(argv[2]);
  else if (!strcmp(mode, "noncontig")) noncontig(argv[2]);
  else if (!strcmp(mode, "lazy")) lazy(argv[2]);
  else if (!strcmp(mode, "hpio")) hpio(argv[2]);
  else if (!strcmp(mode, "gen")) gen(argv[2]);
  else if (!strcmp(mode, "split")) split(argv[2]);
  else if (!strcmp(mode, "inflight")) inflight(argv[2], argc > 3 ? atoi(argv[3]) : 64, argc > 4 ? atoi(argv[4]) : 65536);
  else if (!strcmp(mode, "submit")) submit(argv[2], argc > 3 ? atoi(argv[3]) : 2000);
  else if (!strcmp(mode, "fault") && argc > 3) fault(argv[2], argv[3], 0);
  else if (!strcmp(mode, "fault_nb") && argc > 3) fault(argv[2], argv[3], 1);
  else if (!strcmp(mode, "collw") && argc > 3) collw(argv[2], argv[3]);
  else if (!strcmp(mode, "perm") && argc > 3) perm(argv[2], argv[3]);
  else if (!strcmp(mode, "readonly") && argc > 3) readonly(argv[2], argv[3]);
  else CHECK(0, "usage: rio basic|noncontig|hpio|lazy|gen|split|inflight|submit|fault|fault_nb|collw URL [DIR|HOW]");
  return finish("rio");
}
