/* pario-bench noncontig: the HPIO noncontiguous access patterns used in the PIOviz study
 * (seed 001): region size / count / spacing, memory and file each contiguous or not,
 * independent vs collective, write and read, optional MPI_File_sync, hints; HPIO's trimmed mean. */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const layout_names[] = {"contig", "noncontig"};
static const char *const access_names[] = {"independent", "collective"};
static const char *const op_names[] = {"write", "read"};
#define MAX_SIZES 32
#define SENTINEL 0xEE

typedef struct {
  long long sizes[MAX_SIZES], count, spacing, iters;
  int nsizes, mem, file, access, op, sync, cold; /* mem..op: bit masks over the name tables */
} nc_opts;

const char noncontig_usage[] =
    "usage: pario-bench noncontig [OPTIONS]\n"
    "HPIO noncontiguous patterns (seed 001, PIOviz): each rank accesses COUNT regions of SIZE\n"
    "bytes; in a noncontiguous file the ranks' regions interleave with SPACING-byte gaps.\n"
    "Time per iteration = maximum over ranks; reported: mean without highest and lowest.\n\n"
    "      --region-size LIST     bytes per region (default 32,1024)\n"
    "      --region-count N       regions per rank (default 32768)\n"
    "      --region-spacing BYTES gap between regions in file and memory (default 128)\n"
    "      --mem LIST             contig,noncontig memory layout (default contig)\n"
    "      --file LIST            contig,noncontig file layout (default noncontig)\n"
    "      --access LIST          independent,collective (default both)\n"
    "      --op LIST              write,read (default both)\n"
    "      --sync                 MPI_File_sync after each write, inside the timing\n"
    "      --cold                 reads from storage: before each timed read (and the device\n"
    "                             pass's read) every rank drops the file's pages from the\n"
    "                             page cache (fsync + POSIX_FADV_DONTNEED), untimed\n"
    "  -i, --iterations N         timed iterations (default 10)\n"
    "Collective measurements also measure the limit: the same useful bytes as one contiguous\n"
    "share per rank with plain pwrite/pread of 8 MiB blocks (fsync with --sync); metrics\n"
    "device_mb_per_s and share = mb_per_s / device_mb_per_s (local files only: not for x-rio://).\n"
    "Reads under pario also report bytes_read_file, bytes_requested (all ranks, the last run)\n"
    "and read_amplification = bytes_read_file / bytes_requested (pario's own count).\n"
    "Every read reports device_read_amplification: the growth of /proc/self/io read_bytes\n"
    "(bytes fetched from storage, page cache hits excluded) during the timed reads, summed\n"
    "over ranks, / bytes requested; the median over --repeat runs. Without --cold it is near 0\n"
    "(a cached file); on tmpfs always 0. Omitted where /proc/self/io is absent.\n" REPEAT_HELP COMMON_HELP;

enum { O_RSIZE = OPT_SUITE0, O_RCOUNT, O_RSPACE, O_MEM, O_FILE, O_ACCESS, O_OP, O_SYNC_EACH, O_COLD };

static int nc_list(const char *arg, const char *const *names, int n, int *mask, const char *what) {
  if ((*mask = parse_choice_list(arg, names, n)) < 0)
    return usage_error("noncontig", "bad %s list '%s'", what, arg);
  return 0;
}

static int nc_option(int c, const char *arg, void *ctx) {
  nc_opts *o = ctx;
  switch (c) {
    case O_RSIZE:
      if ((o->nsizes = parse_size_list(arg, o->sizes, MAX_SIZES)) < 0)
        return usage_error("noncontig", "bad region size list '%s'", arg);
      return 0;
    case O_RCOUNT:
      if (parse_int(arg, 1, INT_MAX, &o->count)) return usage_error("noncontig", "bad region count '%s'", arg);
      return 0;
    case O_RSPACE:
      if ((o->spacing = parse_size(arg)) < 0) return usage_error("noncontig", "bad spacing '%s'", arg);
      return 0;
    case 'i':
      if (parse_int(arg, 1, 100000, &o->iters)) return usage_error("noncontig", "bad iterations '%s'", arg);
      return 0;
    case O_MEM: return nc_list(arg, layout_names, 2, &o->mem, "memory layout");
    case O_FILE: return nc_list(arg, layout_names, 2, &o->file, "file layout");
    case O_ACCESS: return nc_list(arg, access_names, 2, &o->access, "access");
    case O_OP: return nc_list(arg, op_names, 2, &o->op, "op");
    case O_SYNC_EACH: o->sync = 1; return 0;
    case O_COLD: o->cold = 1; return 0;
    default: return usage_error("noncontig", "unknown option");
  }
}

/* ---- one configuration: layouts, offsets, datatypes ------------------------------------- */

typedef struct {
  const nc_opts *o;
  long long size;                 /* region size */
  int mem_nc, file_nc, coll, read;
  const char *path;
  unsigned char *buf;
  size_t buflen;
  MPI_Datatype memtype, filetype; /* memtype: one instance covers the buffer */
  MPI_Offset disp, fsize;
  long long vol_file, vol_req;    /* pario's read-volume counters of the last run, all ranks */
  long long dev_read;             /* this rank's storage reads (read_bytes) in the run's timed reads; -1: unknown */
} nc_run;

static long long period(const nc_run *c) { return c->size + c->o->spacing; }

static MPI_Offset file_off(const nc_run *c, long long i) {
  if (c->file_nc) return (MPI_Offset)((i * B.size + B.rank) * period(c));
  return (MPI_Offset)((B.rank * c->o->count + i) * c->size);
}

static size_t mem_off(const nc_run *c, long long i) {
  return (size_t)(i * (c->mem_nc ? period(c) : c->size));
}

static void make_types(nc_run *c) {
  long long n = c->o->count, p = B.size;
  if (c->mem_nc) {
    MPI_Type_create_hvector((int)n, (int)c->size, (MPI_Aint)period(c), MPI_BYTE, &c->memtype);
    c->buflen = (size_t)((n - 1) * period(c) + c->size);
  } else {
    MPI_Type_contiguous((int)(n * c->size), MPI_BYTE, &c->memtype);
    c->buflen = (size_t)(n * c->size);
  }
  MPI_Type_commit(&c->memtype);
  if (c->file_nc) {
    MPI_Type_create_hvector((int)n, (int)c->size, (MPI_Aint)(p * period(c)), MPI_BYTE, &c->filetype);
    MPI_Type_commit(&c->filetype);
    c->disp = (MPI_Offset)(B.rank * period(c));
    c->fsize = (MPI_Offset)(p * n * period(c) - c->o->spacing);
  } else {
    c->filetype = MPI_BYTE;
    c->disp = (MPI_Offset)(B.rank * n * c->size);
    c->fsize = (MPI_Offset)(p * n * c->size);
  }
}

static void free_types(nc_run *c) {
  MPI_Type_free(&c->memtype);
  if (c->filetype != MPI_BYTE) MPI_Type_free(&c->filetype);
}

/* The write buffer: each region holds the pattern of its file offset; memory gaps a sentinel. */
static void fill_buffer(nc_run *c) {
  memset(c->buf, SENTINEL, c->buflen);
  for (long long i = 0; i < c->o->count; i++)
    pat_fill(c->buf + mem_off(c, i), file_off(c, i), (size_t)c->size);
}

/* After a read: regions must hold the file's pattern, memory gaps the untouched sentinel. */
static void check_buffer(result *r, const nc_run *c) {
  for (long long i = 0; i < c->o->count && r->status == ST_OK; i++) {
    long long bad = pat_check(c->buf + mem_off(c, i), file_off(c, i), (size_t)c->size);
    if (bad >= 0) res_mismatch(r, "wrong data read at file offset %lld", (long long)file_off(c, i) + bad);
    size_t g0 = mem_off(c, i) + (size_t)c->size, g1 = i + 1 < c->o->count ? mem_off(c, i + 1) : g0;
    for (size_t k = g0; k < g1 && r->status == ST_OK; k++)
      if (c->buf[k] != SENTINEL) res_mismatch(r, "read wrote into memory gap at buffer byte %zu", k);
  }
}

/* Pattern inside regions; the gaps of a noncontiguous file keep the background written before. */
static size_t nc_span(MPI_Offset off, size_t len, const void *ctx, int *want) {
  const nc_run *c = ctx;
  long long per = period(c), q = (long long)(off % per);
  size_t n = (size_t)(q < c->size ? c->size - q : per - q);
  *want = q < c->size ? SPAN_PATTERN : SPAN_GAP;
  return n < len ? n : len;
}

/* ---- timing ----------------------------------------------------------------------------- */

static void one_access(result *r, nc_run *c, MPI_File fh) {
  MPI_Status st;
  int rc;
  if (res_mpi(r, MPI_File_seek(fh, 0, MPI_SEEK_SET), "MPI_File_seek")) return;
  if (c->read)
    rc = c->coll ? MPI_File_read_all(fh, c->buf, 1, c->memtype, &st)
                 : MPI_File_read(fh, c->buf, 1, c->memtype, &st);
  else
    rc = c->coll ? MPI_File_write_all(fh, c->buf, 1, c->memtype, &st)
                 : MPI_File_write(fh, c->buf, 1, c->memtype, &st);
  static const char *const what[2][2] = {{"MPI_File_write", "MPI_File_write_all"},
                                         {"MPI_File_read", "MPI_File_read_all"}};
  if (res_mpi(r, rc, what[c->read][c->coll])) return;
  int got = 0;
  MPI_Get_count(&st, c->memtype, &got);
  if (got != 1) res_fail(r, "%s transferred less than the whole buffer", what[c->read][c->coll]);
  if (!c->read && c->o->sync) res_mpi(r, MPI_File_sync(fh), "MPI_File_sync");
}

/* --cold: every rank drops the file's pages (untimed; the barrier that follows orders it
 * before every rank's read). */
static void drop_pages(result *r, const char *path) {
  int e = drop_cache(path);
  if (e) res_fail(r, "--cold: dropping the page cache of %s: %s", path, strerror(e));
}

/* Iterations between barriers; t[k] = maximum over ranks. Reads check the buffer untimed and
 * add this rank's storage reads during the timed access to c->dev_read. */
static void iterate(result *r, nc_run *c, MPI_File fh, double *t) {
  c->dev_read = 0;
  for (long long k = 0; k < c->o->iters; k++) {
    if (c->read) memset(c->buf, SENTINEL, c->buflen);
    if (c->read && c->o->cold && r->status == ST_OK) drop_pages(r, c->path);
    bench_barrier();
    long long rb0 = c->read ? storage_read_bytes() : -1;
    double t0 = now();
    if (r->status == ST_OK) one_access(r, c, fh);
    bench_barrier();
    long long rb1 = c->read ? storage_read_bytes() : -1;
    c->dev_read = rb0 < 0 || rb1 < 0 || c->dev_read < 0 ? -1 : c->dev_read + rb1 - rb0;
    t[k] = max_all(now() - t0);
    if (c->read && B.verify && r->status == ST_OK) check_buffer(r, c);
    if (!res_ok_everywhere(r)) return;
  }
}

static long long info_ll(MPI_Info info, const char *key) {
  char v[64];
  int flag = 0;
  MPI_Info_get(info, key, (int)sizeof v - 1, v, &flag);
  return flag ? atoll(v) : 0;
}

/* pario's read-volume counters of fh (MPI_File_get_info: bytes read from the file and bytes
 * the reads asked for, since open), summed over the ranks; 0 and 0 under a native MPI-IO.
 * With them the storage reads of the timed reads (c->dev_read), summed: -1 where a rank could
 * not count them. */
static void read_volume(nc_run *c, MPI_File fh) {
  long long v[4] = {0, 0, c->dev_read < 0 ? 0 : c->dev_read, c->dev_read < 0}, sum[4];
  MPI_Info info;
  if (MPI_File_get_info(fh, &info) == MPI_SUCCESS) {
    v[0] = info_ll(info, "pario_bytes_read_file");
    v[1] = info_ll(info, "pario_bytes_requested");
    MPI_Info_free(&info);
  }
  MPI_Allreduce(v, sum, 4, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  c->vol_file = sum[0];
  c->vol_req = sum[1];
  c->dev_read = sum[3] ? -1 : sum[2];
}

static void run_measure(result *r, nc_run *c, double *t) {
  if (c->read) {
    pat_write_file(r, c->path, c->fsize);
    if (B.inject) corrupt_byte(c->path, file_off(c, 0) + (c->size > 5 ? 5 : 0));
  } else { /* MPI leaves never-written bytes undefined, so the gaps get a known background */
    if (c->file_nc) gap_write_file(r, c->path, c->fsize);
    else file_remove(c->path);
    fill_buffer(c);
  }
  if (!res_ok_everywhere(r)) return;
  MPI_File fh;
  int amode = c->read ? MPI_MODE_RDONLY : MPI_MODE_CREATE | MPI_MODE_WRONLY;
  if (res_mpi(r, file_open_hinted(MPI_COMM_WORLD, c->path, amode, NULL, NULL, &fh), "MPI_File_open") ||
      !res_ok_everywhere(r)) {
    file_close(r, &fh, "MPI_File_close");
    return;
  }
  int rc = MPI_File_set_view(fh, c->disp, MPI_BYTE, c->filetype, "native", MPI_INFO_NULL);
  if (!res_mpi(r, rc, "MPI_File_set_view") && res_ok_everywhere(r)) iterate(r, c, fh, t);
  if (c->read) read_volume(c, fh);
  file_close(r, &fh, "MPI_File_close");
  if (!res_ok_everywhere(r) || c->read) {
    if (c->read && B.verify && r->status == ST_OK) res_verified(r);
    return;
  }
  if (B.inject) corrupt_byte(c->path, c->size > 5 ? 5 : 0);
  if (B.verify) pat_verify_file(r, c->path, c->fsize, c->file_nc ? nc_span : NULL, c);
}

static void set_params(result *r, const nc_run *c) {
  const nc_opts *o = c->o;
  char b[32];
  jo_int(&r->params, "region_size", c->size);
  jo_int(&r->params, "region_count", o->count);
  jo_int(&r->params, "region_spacing", o->spacing);
  jo_str(&r->params, "mem", layout_names[c->mem_nc]);
  jo_str(&r->params, "file", layout_names[c->file_nc]);
  jo_str(&r->params, "access", access_names[c->coll]);
  jo_str(&r->params, "op", op_names[c->read]);
  jo_bool(&r->params, "sync", o->sync);
  jo_bool(&r->params, "cold", o->cold && c->read);
  jo_int(&r->params, "iterations", o->iters);
  res_common_params(r);
  snprintf(r->label, sizeof r->label, "region=%s x%lld gap=%lld mem=%s file=%s%s%s",
           size_str(c->size, b, sizeof b), o->count, o->spacing, c->mem_nc ? "nc" : "c",
           c->file_nc ? "nc" : "c", o->sync && !c->read ? " sync" : "", o->cold && c->read ? " cold" : "");
}

/* ---- the limit for collective I/O: the device's bandwidth for the same bytes ------------- */

/* The useful bytes of the pattern (every rank's regions) moved as one contiguous share per rank
 * with plain pwrite/pread of large blocks, in the same regime (--sync: fsync inside the timing).
 * A collective access cannot beat this; share = measured MB/s / device MB/s. */
#define DEV_BLOCK ((size_t)8 << 20)

/* The device pass follows the measurement's regime: synced with --sync; cold reads with
 * --cold; direct (O_DIRECT) when the hint pario_direct_io=true is given and each rank's share
 * is a multiple of 4 KiB. */
static int dev_direct(size_t len) {
  for (int i = 0; i < B.hints->n; i++)
    if (strcmp(B.hints->key[i], "pario_direct_io") == 0 && strcmp(B.hints->val[i], "true") == 0)
      return len % 4096 == 0 ? 1 : -1;
  return 0;
}

static double dev_pass(result *r, const nc_run *c, const char *path, int rd, unsigned char *buf, size_t len) {
  off_t base = (off_t)len * B.rank;
  int fd = open(path, (rd ? O_RDONLY : O_WRONLY | O_CREAT) | (dev_direct(len) > 0 ? O_DIRECT : 0), 0644);
  if (fd < 0) res_fail(r, "device pass: open %s: %s", path, strerror(errno));
  int e = fd >= 0 && rd && c->o->cold ? drop_cache_fd(fd) : 0; /* the measurement's regime */
  if (e) res_fail(r, "device pass: --cold: dropping the page cache of %s: %s", path, strerror(e));
  bench_barrier();
  double t0 = now();
  for (size_t done = 0; fd >= 0 && done < len && r->status == ST_OK;) {
    size_t n = len - done < DEV_BLOCK ? len - done : DEV_BLOCK;
    ssize_t got = rd ? pread(fd, buf + done, n, base + (off_t)done) : pwrite(fd, buf + done, n, base + (off_t)done);
    if (got <= 0) res_fail(r, "device pass: %s %s: %s", rd ? "pread" : "pwrite", path, got < 0 ? strerror(errno) : "end of file");
    else done += (size_t)got;
  }
  if (fd >= 0 && !rd && c->o->sync && fsync(fd) != 0) res_fail(r, "device pass: fsync %s: %s", path, strerror(errno));
  bench_barrier();
  double t = max_all(now() - t0);
  if (fd >= 0) close(fd);
  return t;
}

/* One run: `iters` write passes (and read passes, reading back and checking what was written);
 * returns the trimmed mean of the op's passes, like the measured figure. */
static double dev_run(result *r, const nc_run *c) {
  char path[4200];
  size_t len = (size_t)(c->o->count * c->size);
  unsigned char *buf = xalloc(len);
  double *t = calloc((size_t)c->o->iters, sizeof *t);
  snprintf(path, sizeof path, "%s.device", c->path);
  file_remove(path);
  for (long long k = 0; k < c->o->iters && res_ok_everywhere(r); k++) {
    pat_fill(buf, (MPI_Offset)len * B.rank, len);
    double tw = dev_pass(r, c, path, 0, buf, len);
    if (!res_ok_everywhere(r)) break;
    memset(buf, 0, len);
    double tr = dev_pass(r, c, path, 1, buf, len);
    long long bad = r->status == ST_OK ? pat_check(buf, (MPI_Offset)len * B.rank, len) : -1;
    if (bad >= 0) res_mismatch(r, "device pass read wrong data at offset %lld", (long long)len * B.rank + bad);
    t[k] = c->read ? tr : tw;
  }
  double m = trimmed_mean(t, (int)c->o->iters);
  free(t);
  free(buf);
  if (!B.keep) file_remove(path);
  return m;
}

static void put_limit(result *r, const nc_run *c, const double *mb, int n) {
  double *dev = calloc((size_t)n, sizeof *dev), bytes = (double)B.size * c->o->count * c->size;
  for (int k = 0; k < n && res_ok_everywhere(r); k++) dev[k] = bytes / dev_run(r, c) / 1e6;
  res_agree(r);
  size_t len = (size_t)(c->o->count * c->size);
  static const char *const regimes[] = {"cached", "synced", "direct", "cold"};
  int regime = dev_direct(len) > 0 ? 2 : c->o->sync && !c->read ? 1 : c->o->cold && c->read ? 3 : 0;
  jo_str(&r->params, "device_regime", regimes[regime]);
  if (dev_direct(len) < 0)
    jo_str(&r->params, "limit_reason", "device pass not direct: share per rank not a multiple of 4 KiB");
  if (r->status == ST_OK) {
    double d = jo_spread(&r->metrics, "device_mb_per_s", dev, n), m = median_of(mb, n, NULL, NULL);
    jo_num(&r->metrics, "share", m / d);
    snprintf(r->note, sizeof r->note, "device %.1f MB/s, share %.2f", d, m / d);
  }
  free(dev);
}

/* ---- one measurement: B.repeat runs of `iters` iterations ---------------------------------- */

static void measure(nc_run *c) {
  result r;
  char test[64];
  snprintf(test, sizeof test, "%s-%s", access_names[c->coll], op_names[c->read]);
  res_init(&r, "noncontig", test);
  set_params(&r, c);
  int n = B.repeat;
  double *t = calloc((size_t)c->o->iters, sizeof *t), *secs = calloc((size_t)n, sizeof *secs),
         *mb = calloc((size_t)n, sizeof *mb), *devamp = calloc((size_t)n, sizeof *devamp), lo = 0, hi = 0;
  double bytes = (double)B.size * (double)c->o->count * (double)c->size;
  int dev_known = 1;
  c->buf = xalloc(c->buflen);
  for (int k = 0; k < n && r.status == ST_OK; k++) {
    c->dev_read = -1;
    run_measure(&r, c, t);
    res_agree(&r);
    dev_known &= c->dev_read >= 0;
    devamp[k] = (double)c->dev_read / (bytes * (double)c->o->iters);
    secs[k] = trimmed_mean(t, (int)c->o->iters);
    mb[k] = bytes / secs[k] / 1e6;
    for (long long i = 0; i < c->o->iters; i++) {
      lo = (k == 0 && i == 0) || t[i] < lo ? t[i] : lo;
      hi = (k == 0 && i == 0) || t[i] > hi ? t[i] : hi;
    }
  }
  if (r.status == ST_OK) {
    r.seconds = jo_spread(&r.metrics, "seconds", secs, n);
    r.mbps = jo_spread(&r.metrics, "mb_per_s", mb, n);
    jo_int(&r.metrics, "bytes", (long long)bytes);
    jo_num(&r.metrics, "min_seconds", lo);
    jo_num(&r.metrics, "max_seconds", hi);
    if (c->coll && !strstr(c->path, "://")) put_limit(&r, c, mb, n);
    else if (c->coll) /* pwrite/pread cannot reach a remote file (x-rio://) */
      jo_str(&r.params, "limit_reason", "device pass needs a local file");
    if (c->read && c->vol_req > 0) { /* pario only: what the reads cost in file bytes */
      jo_int(&r.metrics, "bytes_read_file", c->vol_file);
      jo_int(&r.metrics, "bytes_requested", c->vol_req);
      jo_num(&r.metrics, "read_amplification", (double)c->vol_file / (double)c->vol_req);
      size_t k = strlen(r.note);
      snprintf(r.note + k, sizeof r.note - k, "%sread %.2fx", k ? ", " : "", (double)c->vol_file / (double)c->vol_req);
    }
    if (c->read && dev_known) { /* what the storage delivered, whichever MPI-IO read */
      double d = jo_spread(&r.metrics, "device_read_amplification", devamp, n);
      size_t k = strlen(r.note);
      snprintf(r.note + k, sizeof r.note - k, "%sstorage %.2fx", k ? ", " : "", d);
    } else if (c->read) {
      jo_str(&r.params, "device_read_reason", "/proc/self/io not readable: storage reads not counted");
    }
  }
  jo_int(&r.params, "repeat", n);
  res_emit(&r);
  free(c->buf);
  free(t);
  free(secs);
  free(mb);
  free(devamp);
  if (!B.keep) file_remove(c->path);
}

static void run_all(const nc_opts *o, const char *path) {
  for (int s = 0; s < o->nsizes; s++)
    for (int m = 0; m < 2; m++)
      for (int f = 0; f < 2; f++)
        for (int a = 0; a < 2; a++)
          for (int op = 0; op < 2; op++) {
            if (!(o->mem >> m & 1) || !(o->file >> f & 1) || !(o->access >> a & 1) || !(o->op >> op & 1))
              continue;
            nc_run c = {.o = o, .size = o->sizes[s], .mem_nc = m, .file_nc = f, .coll = a,
                        .read = op, .path = path};
            make_types(&c);
            measure(&c);
            free_types(&c);
          }
}

int noncontig_main(int argc, char **argv) {
  nc_opts o = {.sizes = {32, 1024}, .nsizes = 2, .count = 32768, .spacing = 128, .iters = 10,
               .mem = 1, .file = 2, .access = 3, .op = 3};
  static const struct option longopts[] = {
      {"region-size", required_argument, 0, O_RSIZE}, {"region-count", required_argument, 0, O_RCOUNT},
      {"region-spacing", required_argument, 0, O_RSPACE}, {"mem", required_argument, 0, O_MEM},
      {"file", required_argument, 0, O_FILE},   {"access", required_argument, 0, O_ACCESS},
      {"op", required_argument, 0, O_OP},       {"sync", no_argument, 0, O_SYNC_EACH},
      {"cold", no_argument, 0, O_COLD},
      {"iterations", required_argument, 0, 'i'}, REPEAT_LONG_OPT, COMMON_LONG_OPTS, {0, 0, 0, 0}};
  int rc = parse_options("noncontig", argc, argv, COMMON_SHORT "i:", longopts, nc_option, &o);
  if (rc) return rc;
  for (int s = 0; s < o.nsizes; s++)
    if ((o.sizes[s] + o.spacing) * o.count * B.size > (long long)INT_MAX)
      return usage_error("noncontig", "region size %lld x count x ranks exceeds 2 GiB", o.sizes[s]);
  char path[4096];
  run_all(&o, test_path(path, sizeof path, "noncontig.dat"));
  return 0;
}
