/* pario-bench sharedfp: Vanegas's shared file pointer write benchmark (seed 003, sec. 5.1):
 * modes 1-4 (write_shared, write_ordered, iwrite_shared, write_ordered_begin/end) and, as a
 * baseline, mode 5 (the same layout as write_ordered through individual pointers), variability,
 * per-process or per-group sizing; every record is self-describing and a checker proves the file. */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const mode_names[] = {"write_shared", "write_ordered", "iwrite_shared",
                                         "write_ordered_begin", "write_individual"};
static const char *const sizing_names[] = {"per-group", "per-process"};
#define REC_MAGIC 0x50524543u /* "PREC" */
#define HDR 32

typedef struct {
  const char *file;
  long long data_size, loops;
  double variability;
  int modes, per_process;
} sf_opts;

/* The 32-byte record header; the checksum covers header (with sum = 0) and payload. */
typedef struct {
  uint32_t magic, rank;
  uint64_t seq, len, sum;
} rec_hdr;

const char sharedfp_usage[] =
    "usage: pario-bench sharedfp [OPTIONS]\n"
    "Shared file pointer writes (seed 003, Vanegas, sec. 5.1). Each loop every rank writes one\n"
    "record (rank, sequence, length, checksum); a checker then proves every record is present\n"
    "once, intact, without holes, and in rank order per call for the ordered modes.\n\n"
    "  -f FILE                  output file (default DIR/pario-bench-sharedfp.dat)\n"
    "  -d, --data-size SIZE     iteration data size (default 2M)\n"
    "  -i, --loops N            loops (default 64)\n"
    "  -m, --mode LIST          1 write_shared, 2 write_ordered, 3 iwrite_shared,\n"
    "                           4 write_ordered_begin/end (default 1,2,3,4),\n"
    "                           5 write_individual: mode 2's layout through individual\n"
    "                           pointers (seek + MPI_File_write), the baseline\n"
    "  -v, --variability PCT    record length varies by +-PCT %% (default 0)\n"
    "      --per-process        each rank writes SIZE per loop (test series 4)\n"
    "      --per-group          the ranks together write SIZE per loop (series 2, default)\n"
    "      --sizing S           per-process or per-group\n"
    "Modes 1 and 3 also measure the machine's limit: plain processes sharing one atomic\n"
    "counter (MPI-3 shared-memory window) with one pwrite per record; metrics\n"
    "limit_records_per_s and share = records_per_s / limit.\n" REPEAT_HELP COMMON_HELP;

enum { O_PERPROC = OPT_SUITE0, O_PERGROUP, O_SIZING };

static int parse_modes(const char *arg) {
  char tmp[128];
  snprintf(tmp, sizeof tmp, "%s", arg);
  int mask = 0;
  for (char *save = NULL, *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    long long m;
    if (parse_int(t, 1, 5, &m)) return -1;
    mask |= 1 << (m - 1);
  }
  return mask ? mask : -1;
}

static int sf_option(int c, const char *arg, void *ctx) {
  sf_opts *o = ctx;
  switch (c) {
    case 'f': o->file = arg; return 0;
    case 'd':
      if ((o->data_size = parse_size(arg)) <= 0 || o->data_size > INT_MAX / 4)
        return usage_error("sharedfp", "bad data size '%s'", arg);
      return 0;
    case 'i':
      if (parse_int(arg, 1, 1LL << 30, &o->loops)) return usage_error("sharedfp", "bad loops '%s'", arg);
      return 0;
    case 'm':
      if ((o->modes = parse_modes(arg)) < 0) return usage_error("sharedfp", "bad mode list '%s' (1-5)", arg);
      return 0;
    case 'v':
      if (parse_double(arg, 0, 100, &o->variability)) return usage_error("sharedfp", "bad variability '%s'", arg);
      return 0;
    case O_PERPROC: o->per_process = 1; return 0;
    case O_PERGROUP: o->per_process = 0; return 0;
    case O_SIZING:
      if ((o->per_process = choice_index(arg, sizing_names, 2)) < 0)
        return usage_error("sharedfp", "bad sizing '%s'", arg);
      return 0;
    default: return usage_error("sharedfp", "unknown option");
  }
}

/* ---- records ---------------------------------------------------------------------------- */

static uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/* Length of record (rank, seq): nominal +- variability, drawn deterministically. */
static size_t rec_len(const sf_opts *o, uint64_t rank, uint64_t seq) {
  double n = (double)(o->per_process ? o->data_size : o->data_size / B.size);
  double u = (double)(mix64(rank * 0x9E3779B97F4A7C15ULL + seq + 1) >> 11) * 0x1p-53;
  long long len = llround(n + (2 * u - 1) * n * o->variability / 100);
  return len < HDR ? HDR : (size_t)len;
}

static size_t rec_max(const sf_opts *o) {
  double n = (double)(o->per_process ? o->data_size : o->data_size / B.size);
  return (size_t)(n * (1 + o->variability / 100)) + HDR + 8;
}

/* A weighted sum of the record's 64-bit words (word i times 2i+1, the tail zero-padded). The
 * checker compares every byte with the regenerated record as well, so this only has to be
 * cheap and position-sensitive: it runs inside the timed loop. */
static uint64_t checksum(const unsigned char *p, size_t n) {
  uint64_t h = 0, w;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    memcpy(&w, p + i, 8);
    h += w * (i / 4 + 1);
  }
  if (i < n) {
    w = 0;
    memcpy(&w, p + i, n - i);
    h += w * (i / 4 + 1);
  }
  return mix64(h ^ n);
}

/* Payload word i of record (rank, seq) is base[i] + c(rank, seq), where base is drawn once
 * per rank: one pass of additions per record, so records differ in every word (a torn or
 * misplaced record shows) while the timed loop measures I/O rather than the generator.
 * (Drawing every word with mix64 took 184 us per 512 KiB record, as long as the write
 * itself, and put that computation on the critical path of every ordered call.) */
static const uint64_t *rank_base(uint64_t rank, size_t words) {
  static uint64_t *base, have_rank = UINT64_MAX;
  static size_t have;
  if (rank != have_rank || words > have) {
    if (words > have) {
      free(base);
      base = xalloc(words * 8);
      have = words;
    }
    for (size_t i = 0; i < have; i++) base[i] = mix64((rank << 40) ^ (i * 0x9E3779B97F4A7C15ULL) ^ 0xA5A5A5A5ULL);
    have_rank = rank;
  }
  return base;
}

static void payload(unsigned char *p, size_t n, uint64_t rank, uint64_t seq) {
  const uint64_t *base = rank_base(rank, (n + 7) / 8);
  uint64_t c = mix64((rank << 40) ^ seq ^ 0x5A5A5A5AULL), w;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    w = base[i / 8] + c;
    memcpy(p + i, &w, 8);
  }
  if (i < n) {
    w = base[i / 8] + c;
    memcpy(p + i, &w, n - i);
  }
}

static void make_record(unsigned char *buf, size_t len, uint64_t rank, uint64_t seq) {
  rec_hdr h = {REC_MAGIC, (uint32_t)rank, seq, len, 0};
  memcpy(buf, &h, HDR);
  payload(buf + HDR, len - HDR, rank, seq);
  h.sum = checksum(buf, len);
  memcpy(buf, &h, HDR);
}

/* ---- the checker (rank 0) --------------------------------------------------------------- */

typedef struct {
  MPI_File fh;
  MPI_Offset size, wbeg, wend;
  unsigned char *win, *scratch;
  size_t wcap;
} reader;

/* Makes [off, off+n) available in the window; returns a pointer or NULL (error in r). */
static const unsigned char *fetch(result *r, reader *rd, MPI_Offset off, size_t n) {
  if (off >= rd->wbeg && off + (MPI_Offset)n <= rd->wend) return rd->win + (off - rd->wbeg);
  size_t want = rd->wcap < (size_t)(rd->size - off) ? rd->wcap : (size_t)(rd->size - off);
  if (res_mpi(r, read_full_at(rd->fh, off, rd->win, want), "MPI_File_read_at (check)")) return NULL;
  rd->wbeg = off;
  rd->wend = off + (MPI_Offset)want;
  return rd->win;
}

/* Checks the record at off; returns its length, or 0 after recording what is wrong. */
static size_t check_record(result *r, reader *rd, const sf_opts *o, MPI_Offset off, long long k,
                           int ordered, unsigned char *seen) {
  if (off + HDR > rd->size) {
    res_mismatch(r, "%lld stray bytes at the end (offset %lld)", (long long)(rd->size - off),
                 (long long)off);
    return 0;
  }
  const unsigned char *p = fetch(r, rd, off, HDR);
  if (!p) return 0;
  rec_hdr h;
  memcpy(&h, p, HDR);
  if (h.magic != REC_MAGIC || h.rank >= (uint32_t)B.size || h.seq >= (uint64_t)o->loops ||
      h.len != rec_len(o, h.rank, h.seq) || off + (MPI_Offset)h.len > rd->size) {
    res_mismatch(r, "no valid record at offset %lld (record #%lld): hole, garbage or truncation",
                 (long long)off, k);
    return 0;
  }
  size_t len = (size_t)h.len;
  if (!(p = fetch(r, rd, off, len))) return 0;
  memcpy(rd->scratch, p, len);
  memset(rd->scratch + 24, 0, 8);
  make_record(rd->scratch + len, len, h.rank, h.seq); /* scratch holds two records */
  if (checksum(rd->scratch, len) != h.sum || memcmp(p, rd->scratch + len, len) != 0) {
    res_mismatch(r, "record rank %u seq %llu at offset %lld is damaged (checksum)", h.rank,
                 (unsigned long long)h.seq, (long long)off);
    return 0;
  }
  size_t id = (size_t)h.seq * (size_t)B.size + h.rank;
  if (seen[id]) res_mismatch(r, "record rank %u seq %llu written twice (again at offset %lld)",
                             h.rank, (unsigned long long)h.seq, (long long)off);
  else if (ordered && (long long)id != k)
    res_mismatch(r, "record #%lld at offset %lld is rank %u seq %llu: not in rank order", k,
                 (long long)off, h.rank, (unsigned long long)h.seq);
  seen[id] = 1;
  return r->status == ST_OK ? len : 0;
}

static void report_missing(result *r, const unsigned char *seen, long long n) {
  long long missing = 0, first = -1;
  for (long long i = 0; i < n; i++)
    if (!seen[i]) missing++, first = first < 0 ? i : first;
  if (missing)
    res_mismatch(r, "%lld of %lld records missing (first: rank %lld seq %lld)", missing, n,
                 first % B.size, first / B.size);
}

static void check_file(result *r, const sf_opts *o, const char *path, int ordered) {
  reader rd = {.wcap = rec_max(o) * 2 + (8 << 20), .wbeg = 0, .wend = 0};
  if (res_mpi(r, file_open(MPI_COMM_SELF, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &rd.fh),
              "MPI_File_open (check)"))
    return;
  long long n = o->loops * B.size, k = 0;
  unsigned char *seen = calloc((size_t)n, 1);
  rd.win = xalloc(rd.wcap);
  rd.scratch = xalloc(2 * rec_max(o));
  MPI_File_get_size(rd.fh, &rd.size);
  for (MPI_Offset off = 0; off < rd.size && r->status == ST_OK; k++) {
    size_t len = check_record(r, &rd, o, off, k, ordered, seen);
    off += (MPI_Offset)len;
  }
  if (r->status == ST_OK) report_missing(r, seen, n);
  if (r->status == ST_OK) res_verified(r);
  free(seen);
  free(rd.win);
  free(rd.scratch);
  file_close(r, &rd.fh, "MPI_File_close (check)");
}

/* ---- the timed run ---------------------------------------------------------------------- */

/* Mode 5: where this rank's record of loop seq starts in write_ordered's layout; *base
 * advances past the loop (every rank knows every length, so no communication). */
static MPI_Offset layout_offset(const sf_opts *o, long long seq, MPI_Offset *base) {
  MPI_Offset off = *base;
  for (int q = 0; q < B.size; q++) {
    MPI_Offset len = (MPI_Offset)rec_len(o, (uint64_t)q, (uint64_t)seq);
    if (q < B.rank) off += len;
    *base += len;
  }
  return off;
}

static int write_record(MPI_File fh, int mode, unsigned char *buf, int len, MPI_Offset off, const char **what) {
  MPI_Status st;
  MPI_Request req;
  int rc;
  static const char *const calls[] = {"MPI_File_write_shared", "MPI_File_write_ordered",
                                      "MPI_File_iwrite_shared", "MPI_File_write_ordered_begin",
                                      "MPI_File_seek"};
  *what = calls[mode - 1];
  switch (mode) {
    case 1: return MPI_File_write_shared(fh, buf, len, MPI_BYTE, &st);
    case 2: return MPI_File_write_ordered(fh, buf, len, MPI_BYTE, &st);
    case 3:
      rc = MPI_File_iwrite_shared(fh, buf, len, MPI_BYTE, &req);
      if (rc != MPI_SUCCESS) return rc;
      *what = "MPI_Wait (iwrite_shared)";
      return MPI_Wait(&req, &st);
    case 4:
      rc = MPI_File_write_ordered_begin(fh, buf, len, MPI_BYTE);
      if (rc != MPI_SUCCESS) return rc;
      *what = "MPI_File_write_ordered_end";
      return MPI_File_write_ordered_end(fh, buf, &st);
    default:
      rc = MPI_File_seek(fh, off, MPI_SEEK_SET);
      if (rc != MPI_SUCCESS) return rc;
      *what = "MPI_File_write";
      return MPI_File_write(fh, buf, len, MPI_BYTE, &st);
  }
}

/* The shared file pointer component in use, where the MPI-IO reports one (pario's
 * pario_sharedfp in get_info, known after the first shared-pointer call). */
static void note_component(result *r, MPI_File fh) {
  MPI_Info used;
  char v[64];
  int flag = 0;
  if (MPI_File_get_info(fh, &used) != MPI_SUCCESS) return;
  MPI_Info_get(used, "pario_sharedfp", sizeof v - 1, v, &flag);
  MPI_Info_free(&used);
  jo_str(&r->params, "sharedfp_component", flag ? v : NULL);
}

/* `first`: the first run of a measurement, which records the component in params. */
static double timed_run(result *r, const sf_opts *o, int mode, const char *path, unsigned char *buf,
                        int first) {
  MPI_File fh;
  bench_barrier();
  double t0 = now();
  MPI_Offset base = 0;
  int rc = file_open_hinted(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, NULL, NULL, &fh);
  for (long long i = 0; i < o->loops && !res_mpi(r, rc, "MPI_File_open"); i++) {
    size_t len = rec_len(o, (uint64_t)B.rank, (uint64_t)i);
    const char *what;
    MPI_Offset off = mode == 5 ? layout_offset(o, i, &base) : 0;
    make_record(buf, len, (uint64_t)B.rank, (uint64_t)i);
    rc = write_record(fh, mode, buf, (int)len, off, &what);
    if (res_mpi(r, rc, what)) break;
  }
  if (rc == MPI_SUCCESS && mode != 5 && first) note_component(r, fh);
  file_close(r, &fh, "MPI_File_close");
  bench_barrier();
  return max_all(now() - t0);
}

static void set_params(result *r, const sf_opts *o, int mode) {
  char b[32];
  jo_int(&r->params, "mode", mode);
  jo_int(&r->params, "data_size", o->data_size);
  jo_int(&r->params, "loops", o->loops);
  jo_num(&r->params, "variability", o->variability);
  jo_str(&r->params, "sizing", sizing_names[o->per_process]);
  res_common_params(r);
  snprintf(r->label, sizeof r->label, "mode=%d d=%s loops=%lld v=%g%% %s", mode,
           size_str(o->data_size, b, sizeof b), o->loops, o->variability, sizing_names[o->per_process]);
}

/* ---- the machine's limit for write_shared ---------------------------------------------- */

/* What the shared-pointer write could cost at best on this node: plain processes share one
 * atomic counter (an MPI-3 shared-memory window, C11 fetch-and-add) and do one pwrite per
 * record at the offset they took, with the same records as the measured modes. */
typedef struct {
  int state;             /* 0 not measured yet, 1 measured, -1 not measurable (reason) */
  char reason[160];
  double *rps;           /* records/s of each of the B.repeat runs */
} sf_limit;

static double limit_run(result *r, const sf_opts *o, const char *path, _Atomic uint64_t *ctr,
                        unsigned char *buf) {
  if (B.rank == 0) {
    atomic_store(ctr, 0);
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    if (fd < 0) res_fail(r, "limit: create %s: %s", path, strerror(errno));
    else close(fd);
  }
  bench_barrier();
  double t0 = now();
  int fd = open(path, O_WRONLY);
  if (fd < 0) res_fail(r, "limit: open %s: %s", path, strerror(errno));
  for (long long i = 0; i < o->loops && fd >= 0 && r->status == ST_OK; i++) {
    size_t len = rec_len(o, (uint64_t)B.rank, (uint64_t)i);
    make_record(buf, len, (uint64_t)B.rank, (uint64_t)i);
    uint64_t off = atomic_fetch_add_explicit(ctr, len, memory_order_relaxed);
    ssize_t n = pwrite(fd, buf, len, (off_t)off);
    if (n != (ssize_t)len) res_fail(r, "limit: pwrite %s: %s", path, n < 0 ? strerror(errno) : "short write");
  }
  if (fd >= 0 && close(fd) != 0) res_fail(r, "limit: close %s: %s", path, strerror(errno));
  bench_barrier();
  return max_all(now() - t0);
}

/* Only where every rank shares the node's memory (one window over MPI_COMM_WORLD). */
static int limit_window(sf_limit *lim, MPI_Win *win, _Atomic uint64_t **ctr) {
  MPI_Comm node;
  int nsize = 0, all = 0;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Comm_size(node, &nsize);
  MPI_Comm_free(&node);
  int one = nsize == B.size;
  MPI_Allreduce(&one, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all) {
    snprintf(lim->reason, sizeof lim->reason, "ranks do not share one node (MPI_COMM_TYPE_SHARED)");
    return 0;
  }
  void *base = NULL;
  MPI_Aint sz = 0;
  int disp = 0;
  if (MPI_Win_allocate_shared(B.rank == 0 ? 64 : 0, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, win) !=
      MPI_SUCCESS) {
    snprintf(lim->reason, sizeof lim->reason, "MPI_Win_allocate_shared failed");
    return 0;
  }
  MPI_Win_shared_query(*win, 0, &sz, &disp, &base);
  *ctr = base;
  return 1;
}

static void limit_measure(sf_limit *lim, const sf_opts *o, const char *path) {
  char lpath[4200];
  result r;
  MPI_Win win;
  _Atomic uint64_t *ctr = NULL;
  snprintf(lpath, sizeof lpath, "%s.limit", path);
  lim->state = -1;
  if (!limit_window(lim, &win, &ctr)) return;
  res_init(&r, "sharedfp", "limit");
  unsigned char *buf = xalloc(rec_max(o));
  lim->rps = calloc((size_t)B.repeat, sizeof *lim->rps);
  for (int k = 0; k < B.repeat && r.status == ST_OK; k++) {
    double t = limit_run(&r, o, lpath, ctr, buf);
    lim->rps[k] = (double)(o->loops * B.size) / t;
    if (res_ok_everywhere(&r) && B.verify && B.rank == 0) check_file(&r, o, lpath, 0);
    res_ok_everywhere(&r);
  }
  res_agree(&r);
  free(buf);
  MPI_Win_free(&win);
  if (!B.keep) file_remove(lpath);
  lim->state = r.status == ST_OK ? 1 : -1;
  if (r.status != ST_OK) snprintf(lim->reason, sizeof lim->reason, "%.150s", r.error);
  jo_free(&r.params);
  jo_free(&r.metrics);
}

/* limit_records_per_s (median, _min, _max) and share = records/s / limit, for modes 1 and 3. */
static void limit_metrics(result *r, sf_limit *lim, const sf_opts *o, const char *path, double rps) {
  if (lim->state == 0) limit_measure(lim, o, path);
  if (lim->state < 0) {
    jo_raw(&r->metrics, "limit_records_per_s", "null");
    jo_raw(&r->metrics, "share", "null");
    jo_str(&r->params, "limit_reason", lim->reason);
    return;
  }
  double l = jo_spread(&r->metrics, "limit_records_per_s", lim->rps, B.repeat);
  jo_num(&r->metrics, "share", rps / l);
  size_t n = strlen(r->note);
  snprintf(r->note + n, sizeof r->note - n, ", limit %.0f/s, share %.2f", l, rps / l);
}

/* ---- one measurement: B.repeat timed runs, each verified -------------------------------- */

static void timed_runs(result *r, const sf_opts *o, int mode, const char *path, double bytes, double *t) {
  unsigned char *buf = xalloc(rec_max(o));
  for (int k = 0; k < B.repeat && r->status == ST_OK; k++) {
    file_remove(path);
    t[k] = timed_run(r, o, mode, path, buf, k == 0);
    if (res_ok_everywhere(r) && B.verify) {
      if (B.inject && k == B.repeat - 1) corrupt_byte(path, (MPI_Offset)(bytes / 2) + HDR + 5);
      if (B.rank == 0) check_file(r, o, path, mode == 2 || mode == 4 || mode == 5);
    }
    res_ok_everywhere(r);
  }
  free(buf);
}

static void measure(const sf_opts *o, int mode, const char *path, sf_limit *lim) {
  result r;
  res_init(&r, "sharedfp", mode_names[mode - 1]);
  set_params(&r, o, mode);
  double mine = 0, bytes = 0;
  for (long long i = 0; i < o->loops; i++) mine += (double)rec_len(o, (uint64_t)B.rank, (uint64_t)i);
  MPI_Allreduce(&mine, &bytes, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  double *t = calloc((size_t)B.repeat, sizeof *t), *mb = calloc((size_t)B.repeat, sizeof *mb),
         *rps = calloc((size_t)B.repeat, sizeof *rps);
  timed_runs(&r, o, mode, path, bytes, t);
  res_agree(&r);
  if (r.status == ST_OK) {
    double recs = (double)(o->loops * B.size);
    for (int k = 0; k < B.repeat; k++) mb[k] = bytes / t[k] / 1e6, rps[k] = recs / t[k];
    r.seconds = jo_spread(&r.metrics, "seconds", t, B.repeat);
    r.mbps = jo_spread(&r.metrics, "mb_per_s", mb, B.repeat);
    double rate = jo_spread(&r.metrics, "records_per_s", rps, B.repeat);
    jo_int(&r.metrics, "records", (long long)recs);
    jo_int(&r.metrics, "bytes", (long long)bytes);
    snprintf(r.note, sizeof r.note, "%.0f records/s", rate);
    if (mode == 1 || mode == 3) limit_metrics(&r, lim, o, path, rate);
  }
  jo_int(&r.params, "repeat", B.repeat);
  res_emit(&r);
  free(t);
  free(mb);
  free(rps);
  if (!B.keep) file_remove(path);
}

/* One untimed pass of the baseline (individual pointers, the same bytes) before the measured
 * modes: the first large write of a process pays for faulting in its buffers and for the
 * file system's first allocations, which would otherwise land on whichever mode runs first
 * (with 2 MiB records, write_shared measured 0.4-0.8x of the baseline when first, 1.0x
 * after). A shared-pointer component's own set-up stays inside each mode's timing. */
static void warm_up(const sf_opts *o, const char *path) {
  result r;
  res_init(&r, "sharedfp", "warm-up");
  unsigned char *buf = xalloc(rec_max(o));
  file_remove(path);
  timed_run(&r, o, 5, path, buf, 0);
  free(buf);
  file_remove(path);
  jo_free(&r.params);
  jo_free(&r.metrics);
}

int sharedfp_main(int argc, char **argv) {
  sf_opts o = {.data_size = 2LL << 20, .loops = 64, .modes = 15};
  static const struct option longopts[] = {
      {"data-size", required_argument, 0, 'd'}, {"loops", required_argument, 0, 'i'},
      {"mode", required_argument, 0, 'm'},      {"variability", required_argument, 0, 'v'},
      {"per-process", no_argument, 0, O_PERPROC}, {"per-group", no_argument, 0, O_PERGROUP},
      {"sizing", required_argument, 0, O_SIZING}, REPEAT_LONG_OPT, COMMON_LONG_OPTS, {0, 0, 0, 0}};
  int rc = parse_options("sharedfp", argc, argv, COMMON_SHORT "f:d:i:m:v:", longopts, sf_option, &o);
  if (rc) return rc;
  if ((double)o.loops * B.size > 1e9) return usage_error("sharedfp", "too many records");
  char path[4096];
  if (!o.file) o.file = test_path(path, sizeof path, "sharedfp.dat");
  warm_up(&o, o.file);
  sf_limit lim = {0};
  for (int m = 1; m <= 5; m++)
    if (o.modes & (1 << (m - 1))) measure(&o, m, o.file, &lim);
  free(lim.rps);
  return 0;
}
