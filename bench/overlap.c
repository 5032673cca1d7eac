/* pario-bench overlap: Büttner's non-blocking I/O benchmark (seed 000, ch. 5-6): calibrate a
 * compute workload against concurrent writes (calibrate), fill the storage's write cache,
 * then time iwrite + compute + wait against write then compute, and report the thesis's fields. */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const scenario_names[] = {"equal", "io-bound", "compute-bound"};
static const char *const api_names[] = {"native", "thread"};
static const char *const regime_names[] = {"cached", "synced", "direct"};
enum { EQUAL, IO_BOUND, COMPUTE_BOUND };
enum { API_NATIVE, API_THREAD };
enum { CACHED, SYNCED, DIRECT };
#define SLICES 64

typedef struct {
  const char *file, *fill, *tsv;
  long long iters, elements, fill_iters, fill_elements, min_tries, max_tries;
  double margin, ratio;
  int scenario, api, regime, ratio_set, verbose, collective;
} ov_opts;

const char overlap_usage[] =
    "usage: pario-bench overlap [OPTIONS]\n"
    "Nonblocking vs blocking writes with a compute workload calibrated to the I/O time\n"
    "(seed 000, Buettner, ch. 5-6). Options as in the thesis (Figure 6.6) plus scenarios.\n\n"
    "  -f FILE                   test file (default DIR/pario-bench-overlap.dat)\n"
    "  -F FILE                   fill file (default DIR/pario-bench-overlap.fill)\n"
    "  -d                        delete files on close (the default here; see --keep)\n"
    "  -i, --iterations N        iterations of each measured phase (default 10)\n"
    "  -s, --elements BYTES      bytes per write per rank (default 10485760)\n"
    "  -I, --fill-iterations N   fill writes per rank before each phase (default 10; 0 = none)\n"
    "  -e, --fill-elements BYTES bytes per fill write (default 104857600)\n"
    "  -m, --margin SECONDS      calibration margin (default 2 percent of a blocking write's time,\n"
    "                            at least 0.001, at most 0.02)\n"
    "      --min-tries N         calibration tries at least (default 10)\n"
    "      --max-tries N         calibration tries at most (default 100)\n"
    "      --scenario S          equal (default), io-bound or compute-bound (section 5.3)\n"
    "      --ratio R             I/O:compute time ratio (default 1, 2 or 0.5 by scenario)\n"
    "      --collective          collective writes: MPI_File_iwrite_all / MPI_File_write_all\n"
    "      --api A               native (MPI_File_iwrite, default) or thread (E_MPI_File_iwrite:\n"
    "                            a POSIX thread calling MPI_File_write; needs THREAD_MULTIPLE)\n"
    "      --sync-each           MPI_File_sync after every write (regime synced)\n"
    "      --direct              hint pario_direct_io=true (regime direct)\n"
    "      --regime R            cached (default), synced or direct\n"
    "      --tsv FILE            append the thesis's tab-separated line here (default\n"
    "                            results.txt; - for stdout)\n"
    "      --verbose             print every calibration try (rank 0)\n"
    "The limit: ideal_ratio = max(io, calc) / (io + calc) from the blocking phase's times;\n"
    "share = ideal_ratio / ratio (1: the overlap is perfect). limit_ratio: the same with each\n"
    "rank's time for a plain pwrite of its block while all ranks write at once (O_DIRECT when\n"
    "direct) as the I/O, the best the nonblocking phase can do on this device; limit_share =\n"
    "limit_ratio / ratio.\n" REPEAT_HELP COMMON_HELP;

enum { O_MINT = OPT_SUITE0, O_MAXT, O_SCEN, O_RATIO, O_API, O_SYNCEACH, O_DIRECTIO, O_REGIME, O_TSV, O_COLL,
       O_VERBOSE };

static int ov_count(const char *arg, long long lo, long long hi, long long *out, const char *what) {
  if (parse_int(arg, lo, hi, out)) return usage_error("overlap", "bad %s '%s'", what, arg);
  return 0;
}

static int ov_bytes(const char *arg, long long *out, const char *what) {
  if ((*out = parse_size(arg)) <= 0 || *out > (1LL << 31) - 4096)
    return usage_error("overlap", "bad %s '%s' (1 byte to 2 GiB)", what, arg);
  return 0;
}

static int ov_choice(const char *arg, const char *const *names, int n, int *out, const char *what) {
  if ((*out = choice_index(arg, names, n)) < 0) return usage_error("overlap", "bad %s '%s'", what, arg);
  return 0;
}

static int ov_option(int c, const char *arg, void *ctx) {
  ov_opts *o = ctx;
  switch (c) {
    case 'f': o->file = arg; return 0;
    case 'F': o->fill = arg; return 0;
    case 'd': return 0;
    case 'i': return ov_count(arg, 1, 1 << 30, &o->iters, "iterations");
    case 's': return ov_bytes(arg, &o->elements, "elements");
    case 'I': return ov_count(arg, 0, 1 << 30, &o->fill_iters, "fill iterations");
    case 'e': return ov_bytes(arg, &o->fill_elements, "fill elements");
    case 'm':
      if (parse_double(arg, 0, 3600, &o->margin)) return usage_error("overlap", "bad margin '%s'", arg);
      return 0;
    case O_MINT: return ov_count(arg, 1, 1 << 20, &o->min_tries, "min tries");
    case O_MAXT: return ov_count(arg, 1, 1 << 20, &o->max_tries, "max tries");
    case O_SCEN: return ov_choice(arg, scenario_names, 3, &o->scenario, "scenario");
    case O_RATIO:
      if (parse_double(arg, 1e-6, 1e6, &o->ratio)) return usage_error("overlap", "bad ratio '%s'", arg);
      o->ratio_set = 1;
      return 0;
    case O_API: return ov_choice(arg, api_names, 2, &o->api, "api");
    case O_SYNCEACH: o->regime = SYNCED; return 0;
    case O_DIRECTIO: o->regime = DIRECT; return 0;
    case O_REGIME: return ov_choice(arg, regime_names, 3, &o->regime, "regime");
    case O_TSV: o->tsv = arg; return 0;
    case O_VERBOSE: o->verbose = 1; return 0;
    case O_COLL: o->collective = 1; return 0;
    default: return usage_error("overlap", "unknown option");
  }
}

/* The scenario fixes the ratio's default and its side of 1. */
static int check_ratio(ov_opts *o) {
  static const double dflt[] = {1, 2, 0.5};
  if (!o->ratio_set) o->ratio = dflt[o->scenario];
  if ((o->scenario == EQUAL && o->ratio != 1) || (o->scenario == IO_BOUND && o->ratio <= 1) ||
      (o->scenario == COMPUTE_BOUND && o->ratio >= 1))
    return usage_error("overlap", "ratio %g does not fit scenario %s (equal: 1, io-bound: > 1, "
                       "compute-bound: < 1)", o->ratio, scenario_names[o->scenario]);
  if (o->min_tries > o->max_tries) return usage_error("overlap", "min tries exceed max tries");
  return 0;
}

/* ---- one iteration: nonblocking (native or thread emulation) or blocking ----------------- */

typedef struct {
  const ov_opts *o;
  MPI_File fh;
  unsigned char *buf;
  double units;  /* the calibrated workload per iteration */
  double margin; /* the calibration's margin in effect (-m, or margin_for's) */
} ov_ctx;

typedef struct { double io, calc; } ov_times;

/* The thesis's E_MPIO_Request: the thread, its status and the time of the blocking write. */
typedef struct {
  pthread_t th;
  MPI_File fh;
  void *buf;
  int count, sync, rc;
  double t0, io_time;
} e_request;

static void *e_write_thread(void *arg) {
  e_request *q = arg;
  q->rc = MPI_File_write(q->fh, q->buf, q->count, MPI_BYTE, MPI_STATUS_IGNORE);
  if (q->rc == MPI_SUCCESS && q->sync) q->rc = MPI_File_sync(q->fh);
  q->io_time = now() - q->t0;
  return NULL;
}

static int e_iwrite(e_request *q) {
  q->t0 = now();
  return pthread_create(&q->th, NULL, e_write_thread, q) == 0 ? MPI_SUCCESS : MPI_ERR_OTHER;
}

static int e_wait(e_request *q) {
  pthread_join(q->th, NULL);
  return q->rc;
}

static void iter_thread(result *r, ov_ctx *c, ov_times *t) {
  e_request q = {.fh = c->fh, .buf = c->buf, .count = (int)c->o->elements, .sync = c->o->regime == SYNCED};
  if (res_mpi(r, e_iwrite(&q), "pthread_create (E_MPI_File_iwrite)")) return;
  double tc = now();
  compute_units((long long)c->units);
  t->calc = now() - tc;
  res_mpi(r, e_wait(&q), q.sync ? "MPI_File_write/MPI_File_sync (thread)" : "MPI_File_write (thread)");
  t->io = q.io_time;
}

/* Native: compute in slices with MPI_Test between them, so the completion time is observed. */
static void iter_native(result *r, ov_ctx *c, ov_times *t) {
  MPI_Request req;
  double t0 = now(), done = -1;
  int rc = c->o->collective ? MPI_File_iwrite_all(c->fh, c->buf, (int)c->o->elements, MPI_BYTE, &req)
                            : MPI_File_iwrite(c->fh, c->buf, (int)c->o->elements, MPI_BYTE, &req);
  if (res_mpi(r, rc, c->o->collective ? "MPI_File_iwrite_all" : "MPI_File_iwrite")) return;
  double tc = now();
  long long per = (long long)c->units / SLICES;
  for (int k = 0; k < SLICES; k++) {
    compute_units(k == SLICES - 1 ? (long long)c->units - per * (SLICES - 1) : per);
    int flag = 1;
    if (done < 0 && res_mpi(r, MPI_Test(&req, &flag, MPI_STATUS_IGNORE), "MPI_Test")) return;
    if (done < 0 && flag) done = now() - t0;
  }
  t->calc = now() - tc;
  if (done < 0 && !res_mpi(r, MPI_Wait(&req, MPI_STATUS_IGNORE), "MPI_Wait")) done = now() - t0;
  if (c->o->regime == SYNCED && !res_mpi(r, MPI_File_sync(c->fh), "MPI_File_sync")) done = now() - t0;
  t->io = done;
}

static void iter_blocking(result *r, ov_ctx *c, ov_times *t) {
  double t0 = now();
  int rc = c->o->collective ? MPI_File_write_all(c->fh, c->buf, (int)c->o->elements, MPI_BYTE, MPI_STATUS_IGNORE)
                            : MPI_File_write(c->fh, c->buf, (int)c->o->elements, MPI_BYTE, MPI_STATUS_IGNORE);
  if (res_mpi(r, rc, c->o->collective ? "MPI_File_write_all" : "MPI_File_write")) return;
  if (c->o->regime == SYNCED && res_mpi(r, MPI_File_sync(c->fh), "MPI_File_sync")) return;
  t->io = now() - t0;
  double tc = now();
  compute_units((long long)c->units);
  t->calc = now() - tc;
}

static void iteration(result *r, ov_ctx *c, int nonblocking, ov_times *t) {
  t->io = t->calc = 0;
  if (!nonblocking) iter_blocking(r, c, t);
  else if (c->o->api == API_THREAD) iter_thread(r, c, t);
  else iter_native(r, c, t);
}

/* ---- files ------------------------------------------------------------------------------ */

/* Opens path afresh with each rank's blocks of `block` bytes interleaved (individual pointers). */
static int open_blocks(result *r, const ov_opts *o, const char *path, long long block, MPI_File *fh) {
  file_remove(path);
  int direct = o->regime == DIRECT;
  int rc = file_open_hinted(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY,
                            direct ? "pario_direct_io" : NULL, direct ? "true" : NULL, fh);
  if (res_mpi(r, rc, "MPI_File_open")) return 0;
  MPI_Datatype blk, ft;
  MPI_Type_contiguous((int)block, MPI_BYTE, &blk);
  MPI_Type_create_resized(blk, 0, (MPI_Aint)(block * B.size), &ft);
  MPI_Type_commit(&ft);
  rc = MPI_File_set_view(*fh, (MPI_Offset)(block * B.rank), MPI_BYTE, ft, "native", MPI_INFO_NULL);
  MPI_Type_free(&ft);
  MPI_Type_free(&blk);
  return !res_mpi(r, rc, "MPI_File_set_view");
}

/* write_fill_buffer: -I writes of -e bytes per rank, so the later writes meet a full cache. */
static void fill_phase(result *r, const ov_opts *o) {
  if (o->fill_iters == 0) return;
  MPI_File fh = MPI_FILE_NULL;
  unsigned char *buf = xalloc((size_t)o->fill_elements);
  memset(buf, 0x33, (size_t)o->fill_elements);
  if (open_blocks(r, o, o->fill, o->fill_elements, &fh))
    for (long long i = 0; i < o->fill_iters && r->status == ST_OK; i++)
      res_mpi(r, MPI_File_write(fh, buf, (int)o->fill_elements, MPI_BYTE, MPI_STATUS_IGNORE),
              "MPI_File_write (fill)");
  file_close(r, &fh, "MPI_File_close (fill)");
  free(buf);
}

/* ---- calibrate (the thesis's get_workload) --------------------------------------------- */

/* The workload of one blocking write's time; *io gets that time. */
static double initial_workload(result *r, ov_ctx *c, double rate, double *io) {
  ov_times t;
  double keep = c->units;
  c->units = 0;
  iteration(r, c, 0, &t);
  c->units = keep;
  *io = t.io;
  return fmax(1000, rate * t.io / c->o->ratio);
}

/* Without -m: 2 % of a blocking write's time, between 1 ms and the thesis's 0.02 s. A fixed
 * 0.02 s is 2 % of the thesis's writes but half of a 64 MiB direct write here (30-40 ms), so
 * calibrations ended anywhere between half and one and a half of the I/O time. */
static double margin_for(const ov_opts *o, double io) {
  return o->margin > 0 ? o->margin : fmin(0.02, fmax(0.001, 0.02 * io));
}

#define CAL_BLOCK 10

/* A fresh calibration file in the measured phases' layout; cal_close closes, removes and
 * settles it, so that every block of tries starts as a measured phase does. */
static int cal_open(result *r, ov_ctx *c) {
  int ok = open_blocks(r, c->o, c->o->file, c->o->elements, &c->fh);
  return res_ok_everywhere(r) && ok;
}

static void cal_close(result *r, ov_ctx *c) {
  file_close(r, &c->fh, "MPI_File_close");
  if (!B.keep) file_remove(c->o->file);
  bench_settle();
}

/* Finds the workload whose compute time matches the nonblocking I/O time / ratio. Tries run in
 * blocks of ten at one workload, each block into a fresh file after a settle step, as the
 * measured phases run (one file growing by 100 tries x ranks x -s bytes wrote 12.8 GB in
 * calibration at 2 ranks and 64 MiB, and the device slowed down under it). Each try says what
 * workload would have matched its own I/O time (need = units x target / calc); the next block's
 * workload lies halfway between the block's and the mean need of its tries, averaged over the
 * ranks. Done when that moves the compute by less than the margin on every rank (after
 * --min-tries); at --max-tries the mean need of the later half of the blocks. A single try's
 * I/O time swings by up to 3x here (two ranks' direct writes on one disk), so chasing every
 * try, as the thesis does, stops wherever the last lucky try left the workload. Returns the
 * tries made. */
static long long calibrate(result *r, ov_ctx *c) {
  const ov_opts *o = c->o;
  double io0 = 0;
  if (!cal_open(r, c)) {
    cal_close(r, c);
    return 0;
  }
  c->units = initial_workload(r, c, compute_rate(), &io0);
  cal_close(r, c);
  double margin = c->margin = margin_for(o, io0), need[CAL_BLOCK], calc[CAL_BLOCK];
  long long tr = 0, blocks = (o->max_tries + CAL_BLOCK - 1) / CAL_BLOCK, b = 0;
  double late_sum = 0; /* the mean needs of the second half of the blocks, late_n of them */
  int late_n = 0;
  int settled = 0;
  while (tr < o->max_tries) {
    if (!cal_open(r, c)) {
      cal_close(r, c);
      break;
    }
    int n = 0;
    bench_barrier();
    for (; n < CAL_BLOCK && tr < o->max_tries; n++, tr++) {
      ov_times t = {0, 0};
      if (r->status == ST_OK) iteration(r, c, 1, &t);
      double target = t.io / o->ratio;
      need[n] = t.calc > 0 ? c->units * target / t.calc : c->units;
      calc[n] = t.calc;
      if (o->verbose)
        say("calibration try %lld: workload %.0f units, io %.6fs, calc %.6fs, target %.6fs%s\n", tr + 1,
            c->units, t.io, t.calc, target, fabs(target - t.calc) < margin ? " (within margin)" : "");
    }
    cal_close(r, c);
    /* halfway to the mean need (the measured phase's figures are means over iterations, and the
     * I/O times have a long tail): the I/O time itself moves with the workload (with more
     * compute the ranks' writes drift apart and collide less), and a full step swings */
    double mean = 0;
    for (int k = 0; k < n; k++) mean += need[k] / n;
    if (b++ >= blocks / 2) {
      late_sum += mean;
      late_n++;
    }
    double next = fmax(100, (c->units + mean) / 2);
    double typical = median_of(calc, n, NULL, NULL);
    int ok = c->units > 0 && fabs(next - c->units) / c->units * typical < margin, all = 0;
    c->units = avg_all(next);
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (o->verbose)
      say("calibration: block of %d tries, workload now %.0f units%s\n", n, c->units,
          all ? " (settled on every rank)" : "");
    settled = all;
    if (!res_ok_everywhere(r) || (all && tr >= o->min_tries)) break;
  }
  /* never settled (--max-tries): the mean need of the later half of the blocks, which averages
   * the device's swings that one block's mean still follows */
  if (!settled && late_n > 0) c->units = avg_all(fmax(100, late_sum / late_n));
  return tr;
}

/* ---- the measured phases ---------------------------------------------------------------- */

typedef struct { double time, io, calc, diff; } ov_sums;

static void phase_iterations(result *r, ov_ctx *c, int nonblocking, ov_sums *s) {
  MPI_Offset prev = -1;
  for (long long i = 0; i < c->o->iters && r->status == ST_OK; i++) {
    MPI_Offset off = (MPI_Offset)((i * B.size + B.rank) * c->o->elements);
    pat_prepare(c->buf, off, (size_t)c->o->elements, &prev); /* not timed */
    ov_times t;
    double t0 = now();
    iteration(r, c, nonblocking, &t);
    s->time += now() - t0;
    s->io += t.io;
    s->calc += t.calc;
    s->diff += fabs(t.io - c->o->ratio * t.calc);
  }
}

/* Fill, then the iterations into a fresh test file, then verification of that file. */
static void run_phase(result *r, ov_ctx *c, int nonblocking, ov_sums *s) {
  const ov_opts *o = c->o;
  memset(s, 0, sizeof *s);
  fill_phase(r, o);
  if (res_ok_everywhere(r) && open_blocks(r, o, o->file, o->elements, &c->fh) && res_ok_everywhere(r)) {
    bench_barrier();
    phase_iterations(r, c, nonblocking, s);
  }
  file_close(r, &c->fh, "MPI_File_close");
  if (res_ok_everywhere(r) && B.verify) {
    MPI_Offset size = (MPI_Offset)(o->iters * B.size * o->elements);
    if (B.inject) corrupt_byte(o->file, size / 2 + 7);
    pat_verify_file(r, o->file, size, NULL, NULL);
  }
  if (!B.keep) {
    file_remove(o->file);
    if (o->fill_iters) file_remove(o->fill);
  }
  bench_settle(); /* the next phase starts on a quiet device */
}

/* ---- the machine's limit: plain writes by every rank at once ---------------------------- */

#define PLAIN_ITERS 3

/* Every rank writes its block with pwrite (O_DIRECT in the direct regime, fdatasync after it in
 * the synced one) into a fresh test file, all ranks at once after a barrier, at the measured
 * phases' first offsets, PLAIN_ITERS times. Returns this rank's median time from the common start
 * to the end of its own write: what its write takes while the other ranks' writes share the
 * device (on one disk and one ext4 inode they largely take turns). NAN where the file cannot be
 * opened so (an x-rio:// file, O_DIRECT on tmpfs). */
static double plain_write_time(result *r, const ov_ctx *c) {
  const ov_opts *o = c->o;
  file_remove(o->file);
  int fd = open(o->file, O_WRONLY | O_CREAT | O_CLOEXEC | (o->regime == DIRECT ? O_DIRECT : 0), 0644);
  int bad = fd < 0, any = 0;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  double t[PLAIN_ITERS];
  for (int i = 0; i < PLAIN_ITERS && !any; i++) {
    bench_barrier();
    double t0 = now();
    posix_xfer(r, fd, (MPI_Offset)((i * B.size + B.rank) * o->elements), c->buf, (size_t)o->elements, 1);
    if (r->status == ST_OK && o->regime == SYNCED && fdatasync(fd) != 0)
      res_fail(r, "fdatasync %s: %s", o->file, strerror(errno));
    t[i] = now() - t0;
    any = !res_ok_everywhere(r);
  }
  if (fd >= 0) close(fd);
  file_remove(o->file);
  bench_settle(); /* the next run's phases start on a quiet device */
  return any ? NAN : median_of(t, PLAIN_ITERS, NULL, NULL);
}

/* ---- results ---------------------------------------------------------------------------- */

typedef struct {
  double p_time, s_time, ps_time, ratio, p_calc, s_calc, p_io, s_io, p_diff, s_diff, quality;
  double limit; /* limit_ratio: the nonblocking phase's best ratio with plain writes (put_limit) */
} ov_fields;

static void reduce_fields(const ov_opts *o, const ov_sums *p, const ov_sums *s, ov_fields *f) {
  double n = (double)o->iters;
  f->p_time = avg_all(p->time);
  f->s_time = avg_all(s->time);
  f->ps_time = avg_all(p->time - s->time);
  f->ratio = f->p_time / f->s_time;
  f->p_calc = avg_all(p->calc / n);
  f->s_calc = avg_all(s->calc / n);
  f->p_io = avg_all(p->io / n);
  f->s_io = avg_all(s->io / n);
  f->p_diff = avg_all(p->diff / n);
  f->s_diff = avg_all(s->diff / n);
  f->quality = f->p_io > 0 ? f->p_diff / f->p_io : NAN;
}

static void write_tsv(const ov_opts *o, const ov_fields *f) {
  if (B.rank != 0) return;
  int is_stdout = strcmp(o->tsv, "-") == 0;
  struct stat st;
  int fresh = !is_stdout && (stat(o->tsv, &st) != 0 || st.st_size == 0);
  FILE *out = is_stdout ? stdout : fopen(o->tsv, "a");
  if (!out) { perror(o->tsv); return; }
  if (fresh)
    fprintf(out, "# reduce_p_time\treduce_s_time\treduce_ps_time\tratio\tp_avg_calc\ts_avg_calc\t"
                 "p_avg_io\ts_avg_io\tavg_time_diff\ts_avg_time_diff\tsize\telements\titerations\t"
                 "fill_elements\tfill_iterations\tquality\tscenario\tapi\tregime\timpl\tmpi\n");
  fprintf(out, "%.6f\t%.6f\t%.6f\t%.6f\t%.6f\t%.6f\t%.6f\t%.6f\t%.6f\t%.6f\t%d\t%lld\t%lld\t%lld\t%lld\t"
               "%.6f\t%s\t%s\t%s\t%s\t%s\n", f->p_time, f->s_time, f->ps_time, f->ratio, f->p_calc,
          f->s_calc, f->p_io, f->s_io, f->p_diff, f->s_diff, B.size, o->elements, o->iters,
          o->fill_elements, o->fill_iters, f->quality, scenario_names[o->scenario],
          api_names[o->api], regime_names[o->regime], B.impl, B.mpi);
  if (!is_stdout) fclose(out);
}

static void put_metrics(result *r, const ov_opts *o, const ov_fields *f, double units, long long tries) {
  jobj *m = &r->metrics;
  jo_num(m, "reduce_p_time", f->p_time);
  jo_num(m, "reduce_s_time", f->s_time);
  jo_num(m, "ratio", f->ratio);
  jo_num(m, "reduce_ps_time", f->ps_time);
  jo_num(m, "p_avg_calc", f->p_calc);
  jo_num(m, "p_avg_io", f->p_io);
  jo_num(m, "s_avg_calc", f->s_calc);
  jo_num(m, "s_avg_io", f->s_io);
  jo_num(m, "avg_time_diff", f->p_diff);
  jo_num(m, "s_avg_time_diff", f->s_diff);
  jo_num(m, "quality", f->quality);
  jo_num(m, "workload", units);
  jo_int(m, "calibration_tries", tries);
  r->seconds = f->p_time;
  r->mbps = (double)o->iters * o->elements * B.size / f->p_time / 1e6;
  jo_num(m, "seconds", r->seconds);
  jo_num(m, "mb_per_s", r->mbps);
  snprintf(r->note, sizeof r->note, "ratio %.3f (p %.3fs / s %.3fs) quality %.3f%s", f->ratio,
           f->p_time, f->s_time, f->quality, f->quality < 0.11 ? "" : " (>= 0.11: inexact)");
}

/* The best ratio the nonblocking phase can reach here: each rank's iteration takes at least
 * its compute (the blocking phase's, undisturbed) and at least its plain write beside the other
 * ranks' (plain_write_time); that over the blocking phase's time per iteration. NAN without
 * the plain writes. */
static double limit_ratio(const ov_opts *o, const ov_sums *s, double plain, const ov_fields *f) {
  double n = (double)o->iters;
  return avg_all(isnan(plain) ? NAN : fmax(s->calc / n, plain)) * n / f->s_time;
}

/* ---- --repeat: medians of the runs' fields, the spread of the headline ones ------------- */

#define NFIELDS (sizeof(ov_fields) / sizeof(double))
_Static_assert(sizeof(ov_fields) == NFIELDS * sizeof(double), "ov_fields holds doubles only");

/* Field j of every run into v[n]. */
static void field_values(const ov_fields *f, int n, size_t j, double *v) {
  for (int k = 0; k < n; k++) {
    double d[NFIELDS];
    memcpy(d, &f[k], sizeof d);
    v[k] = d[j];
  }
}

/* Every field: the median over the runs (each field on its own; the TSV line gets these). */
static void median_fields(const ov_fields *f, int n, ov_fields *out) {
  double d[NFIELDS], *v = calloc((size_t)n, sizeof *v);
  for (size_t j = 0; j < NFIELDS; j++) {
    field_values(f, n, j, v);
    d[j] = median_of(v, n, NULL, NULL);
  }
  memcpy(out, d, sizeof d);
  free(v);
}

static void put_spread(result *r, const ov_opts *o, const ov_fields *f, int n) {
  double *v = calloc((size_t)n, sizeof *v);
  static const struct { const char *key; size_t off; } shown[] = {
      {"ratio", offsetof(ov_fields, ratio)}, {"reduce_p_time", offsetof(ov_fields, p_time)},
      {"reduce_s_time", offsetof(ov_fields, s_time)}, {"s_avg_io", offsetof(ov_fields, s_io)},
      {"s_avg_calc", offsetof(ov_fields, s_calc)}, {"seconds", offsetof(ov_fields, p_time)}};
  char key[64];
  for (size_t i = 0; i < sizeof shown / sizeof shown[0]; i++) {
    double lo, hi;
    field_values(f, n, shown[i].off / sizeof(double), v);
    median_of(v, n, &lo, &hi);
    snprintf(key, sizeof key, "%s_min", shown[i].key);
    jo_num(&r->metrics, key, lo);
    snprintf(key, sizeof key, "%s_max", shown[i].key);
    jo_num(&r->metrics, key, hi);
  }
  for (int k = 0; k < n; k++) v[k] = (double)o->iters * o->elements * B.size / f[k].p_time / 1e6;
  double lo, hi;
  median_of(v, n, &lo, &hi);
  jo_num(&r->metrics, "mb_per_s_min", lo);
  jo_num(&r->metrics, "mb_per_s_max", hi);
  free(v);
}

/* The limit: perfect overlap hides the shorter of I/O and compute, so the best ratio is
 * max(io, calc) / (io + calc), from the blocking phase's measured write and compute times
 * per iteration (the direct-I/O write time in the direct regime). share = ideal / ratio:
 * 1 when the nonblocking phase reaches the ideal. Median over the runs, with the spread. */
static void put_limit(result *r, const ov_fields *f, int n) {
  double *ideal = calloc((size_t)n, sizeof *ideal), *share = calloc((size_t)n, sizeof *share);
  for (int k = 0; k < n; k++) {
    double io = f[k].s_io, calc = f[k].s_calc;
    ideal[k] = io + calc > 0 ? fmax(io, calc) / (io + calc) : NAN;
    share[k] = ideal[k] / f[k].ratio;
  }
  double i = jo_spread(&r->metrics, "ideal_ratio", ideal, n);
  double sh = jo_spread(&r->metrics, "share", share, n);
  size_t len = strlen(r->note);
  snprintf(r->note + len, sizeof r->note - len, " ideal %.3f share %.2f", i, sh);
  for (int k = 0; k < n; k++) {
    ideal[k] = f[k].limit;
    share[k] = f[k].limit / f[k].ratio;
  }
  if (!isnan(median_of(ideal, n, NULL, NULL))) {
    double l = jo_spread(&r->metrics, "limit_ratio", ideal, n);
    double ls = jo_spread(&r->metrics, "limit_share", share, n);
    len = strlen(r->note);
    snprintf(r->note + len, sizeof r->note - len, " limit %.3f (share %.2f)", l, ls);
  }
  free(ideal);
  free(share);
}

static void set_params(result *r, const ov_opts *o) {
  char b[32];
  jobj *p = &r->params;
  jo_int(p, "size", B.size);
  jo_int(p, "elements", o->elements);
  jo_int(p, "iterations", o->iters);
  jo_int(p, "fill_elements", o->fill_elements);
  jo_int(p, "fill_iterations", o->fill_iters);
  jo_str(p, "scenario", scenario_names[o->scenario]);
  jo_num(p, "io_ratio", o->ratio);
  jo_str(p, "api", api_names[o->api]);
  jo_bool(p, "collective", o->collective);
  jo_str(p, "regime", regime_names[o->regime]);
  jo_num(p, "margin", o->margin); /* 0: the default, 2 % of a blocking write (metric calibration_margin) */
  jo_int(p, "min_tries", o->min_tries);
  jo_int(p, "max_tries", o->max_tries);
  res_common_params(r);
  snprintf(r->label, sizeof r->label, "s=%s i=%lld fill=%lldx%s R=%g %s %s",
           size_str(o->elements, b, sizeof b), o->iters, o->fill_iters,
           size_str(o->fill_elements, b + 16, 16), o->ratio, api_names[o->api], regime_names[o->regime]);
}

/* Says when the fill is too small to push later writes past the kernel's dirty-page limit. */
static void fill_note(const ov_opts *o) {
  if (B.rank != 0 || o->fill_iters == 0) return;
  long long dirty_bytes = 0, ratio = 20, mem_kb = 0;
  FILE *f = fopen("/proc/sys/vm/dirty_bytes", "r");
  if (f) { if (fscanf(f, "%lld", &dirty_bytes) != 1) dirty_bytes = 0; fclose(f); }
  if ((f = fopen("/proc/sys/vm/dirty_ratio", "r"))) { if (fscanf(f, "%lld", &ratio) != 1) ratio = 20; fclose(f); }
  if ((f = fopen("/proc/meminfo", "r"))) { if (fscanf(f, "MemTotal: %lld kB", &mem_kb) != 1) mem_kb = 0; fclose(f); }
  double limit = dirty_bytes ? (double)dirty_bytes : (double)mem_kb * 1024 * (double)ratio / 100;
  double fill = (double)B.size * o->fill_iters * o->fill_elements;
  if (limit > 0 && fill < limit)
    printf("note: overlap fill %.0f MB < kernel dirty limit ~%.0f MB: writes may stay in the page cache\n",
           fill / 1e6, limit / 1e6);
}

int overlap_main(int argc, char **argv) {
  char path[4096], fill[4096];
  ov_opts o = {.iters = 10, .elements = 10485760, .fill_iters = 10, .fill_elements = 104857600,
               .min_tries = 10, .max_tries = 100, .margin = 0, .tsv = "results.txt"};
  static const struct option longopts[] = {
      {"iterations", required_argument, 0, 'i'},   {"elements", required_argument, 0, 's'},
      {"fill-iterations", required_argument, 0, 'I'}, {"fill-elements", required_argument, 0, 'e'},
      {"margin", required_argument, 0, 'm'},       {"min-tries", required_argument, 0, O_MINT},
      {"max-tries", required_argument, 0, O_MAXT}, {"scenario", required_argument, 0, O_SCEN},
      {"ratio", required_argument, 0, O_RATIO},    {"io-ratio", required_argument, 0, O_RATIO},
      {"api", required_argument, 0, O_API},        {"sync-each", no_argument, 0, O_SYNCEACH},
      {"direct", no_argument, 0, O_DIRECTIO},        {"regime", required_argument, 0, O_REGIME},
      {"tsv", required_argument, 0, O_TSV},        {"verbose", no_argument, 0, O_VERBOSE},
      {"collective", no_argument, 0, O_COLL},
      REPEAT_LONG_OPT, COMMON_LONG_OPTS, {0, 0, 0, 0}};
  int rc = parse_options("overlap", argc, argv, COMMON_SHORT "f:F:di:s:I:e:m:", longopts, ov_option, &o);
  if (rc || (rc = check_ratio(&o))) return rc;
  if (!o.file) o.file = test_path(path, sizeof path, "overlap.dat"); /* after --dir is known */
  if (!o.fill) o.fill = test_path(fill, sizeof fill, "overlap.fill");
  fill_note(&o);
  result r;
  res_init(&r, "overlap", scenario_names[o.scenario]);
  set_params(&r, &o);
  ov_ctx c = {.o = &o, .fh = MPI_FILE_NULL, .buf = xalloc((size_t)o.elements)};
  memset(c.buf, 0, (size_t)o.elements);
  long long tries = calibrate(&r, &c);
  ov_fields *f = calloc((size_t)B.repeat, sizeof *f);
  for (int k = 0; k < B.repeat && res_ok_everywhere(&r); k++) {
    ov_sums p, s;
    run_phase(&r, &c, 1, &p);
    if (res_ok_everywhere(&r)) run_phase(&r, &c, 0, &s);
    double plain = res_ok_everywhere(&r) ? plain_write_time(&r, &c) : NAN;
    if (res_ok_everywhere(&r)) {
      reduce_fields(&o, &p, &s, &f[k]);
      f[k].limit = limit_ratio(&o, &s, plain, &f[k]);
    }
  }
  res_agree(&r);
  if (r.status == ST_OK) {
    ov_fields med;
    median_fields(f, B.repeat, &med);
    put_metrics(&r, &o, &med, c.units, tries);
    jo_num(&r.metrics, "calibration_margin", c.margin);
    put_spread(&r, &o, f, B.repeat);
    put_limit(&r, f, B.repeat);
    write_tsv(&o, &med);
  }
  jo_int(&r.params, "repeat", B.repeat);
  res_emit(&r);
  free(f);
  free(c.buf);
  return 0;
}
