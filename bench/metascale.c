/* pario-bench metascale: what the views of a collective access cost in messages and memory as
 * the rank count grows (issue 34, item 2). The HDF5-like loop of viewswitch, with a filetype
 * not seen before at every iteration ('fresh': every write_at_all exchanges views; the extent
 * moves no byte), against the view set once ('once': data and call descriptions only). Each
 * rank's filetype has RUNS blocks of BLOCK bytes interleaved with the other ranks'.
 * The bytes are counted by a PMPI tool below the MPI-IO (tests/clients/pmpi/below.c, preloaded
 * beside libpario.so, or alone for the MPI's own MPI-IO): bytes this rank received through the
 * collectives and point-to-point calls the MPI-IO made, per set_view and per write_at_all,
 * mean and maximum over ranks; peak memory is each rank's getrusage maximum RSS. Without the
 * tool the byte metrics are null. Open MPI's OMPIO calls its collectives and point-to-point
 * operations below the PMPI layer: the tool sees none of them (its figures read 0). */
#include "bench.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/resource.h>

static const char *const mode_names[] = {"once", "fresh"};

typedef struct {
  long long iters, runs, block;
  int modes, irregular; /* irregular: every other block half as long (no strided encoding) */
} ms_opts;

const char metascale_usage[] =
    "usage: pario-bench metascale [OPTIONS]\n"
    "Metadata of collective writes against the rank count (issue 34): 'fresh' sets a filetype\n"
    "not seen before, MPI_File_write_at_all and resets the view to bytes at every iteration\n"
    "(every write exchanges views), 'once' sets one view and writes. Every rank's filetype has\n"
    "RUNS blocks of BLOCK bytes interleaved with the other ranks'. Preload the counting tool\n"
    "below the MPI-IO (libpario_clients_below.so, after libpario.so) for the byte metrics.\n\n"
    "  -i, --iterations N   writes per loop (default 10)\n"
    "  -n, --runs N         blocks per rank per write (default 16)\n"
    "  -b, --block BYTES    bytes per block (default 64)\n"
    "      --mode LIST      once,fresh (default both)\n"
    "      --irregular      every other block half as long: runs no encoding can fold\n"
    "metrics: recv_per_view_mean/_max and recv_per_call_mean/_max (bytes a rank received per\n"
    "set_view and per write_at_all), peak_rss_kib_mean/_max, us_per_iter.\n" COMMON_HELP;

enum { O_MODE = OPT_SUITE0, O_IRREGULAR };

static int ms_option(int c, const char *arg, void *ctx) {
  ms_opts *o = ctx;
  long long v;
  switch (c) {
    case 'i':
      if (parse_int(arg, 1, 100000, &v)) return usage_error("metascale", "bad iteration count '%s'", arg);
      o->iters = v;
      return 0;
    case 'n':
      if (parse_int(arg, 1, 1 << 20, &v)) return usage_error("metascale", "bad run count '%s'", arg);
      o->runs = v;
      return 0;
    case 'b':
      if ((o->block = parse_size(arg)) < 1) return usage_error("metascale", "bad block size '%s'", arg);
      return 0;
    case O_MODE:
      if ((o->modes = parse_choice_list(arg, mode_names, 2)) <= 0) return usage_error("metascale", "bad mode list '%s'", arg);
      return 0;
    case O_IRREGULAR: o->irregular = 1; return 0;
    default: return usage_error("metascale", "unknown option");
  }
}

typedef struct {
  const ms_opts *o;
  const char *path;
  long long piece, slab; /* bytes per rank per write, of all ranks per write */
  MPI_Datatype vec;      /* this rank's blocks of one slab (extent set per iteration) */
  unsigned char *buf;
  long (*bytes)(void);   /* the counting tool's, or NULL */
  double view_b, call_b; /* bytes received in set_views and in write_at_alls, this rank */
  long long nviews, ncalls;
} ms_run;

static long counted(const ms_run *c) { return c->bytes ? c->bytes() : 0; }

/* The filetype of iteration i: fresh ones differ in extent only (one tile is one write). */
static MPI_Datatype ftype(const ms_run *c, int mode, long long i) {
  MPI_Datatype t;
  MPI_Type_create_resized(c->vec, 0, (MPI_Aint)(c->slab + (mode ? 64 * (i + 1) : 0)), &t);
  MPI_Type_commit(&t);
  return t;
}

static int set_view(result *r, ms_run *c, MPI_File fh, MPI_Offset disp, MPI_Datatype t) {
  long b0 = counted(c);
  int bad = res_mpi(r, MPI_File_set_view(fh, disp, MPI_BYTE, t, "native", MPI_INFO_NULL), "MPI_File_set_view");
  c->view_b += (double)(counted(c) - b0);
  c->nviews++;
  return bad;
}

/* One loop: returns the seconds (the slowest rank's). */
static double loop(result *r, ms_run *c, int mode) {
  MPI_File fh = MPI_FILE_NULL;
  MPI_Offset mine = (MPI_Offset)B.rank * c->o->block;
  file_remove(c->path);
  if (res_mpi(r, file_open_hinted(MPI_COMM_WORLD, c->path, MPI_MODE_CREATE | MPI_MODE_RDWR, NULL, NULL, &fh),
              "MPI_File_open"))
    return 0;
  MPI_Datatype once = ftype(c, 0, 0);
  if (mode == 0) set_view(r, c, fh, mine, once);
  bench_barrier();
  double t0 = now();
  for (long long i = 0; i < c->o->iters && r->status == ST_OK; i++) {
    unsigned char *b = c->buf + i * c->piece;
    if (mode == 1) {
      MPI_Datatype t = ftype(c, 1, i);
      int bad = set_view(r, c, fh, i * c->slab + mine, t);
      MPI_Type_free(&t);
      if (bad) break;
    }
    long b0 = counted(c);
    res_mpi(r, MPI_File_write_at_all(fh, mode ? 0 : i * c->piece, b, (int)c->piece, MPI_BYTE, MPI_STATUS_IGNORE),
            "MPI_File_write_at_all");
    c->call_b += (double)(counted(c) - b0);
    c->ncalls++;
    if (mode == 1 && set_view(r, c, fh, 0, MPI_BYTE)) break;
  }
  double t = max_all(now() - t0);
  MPI_Type_free(&once);
  file_close(r, &fh, "MPI_File_close");
  return t;
}

/* Bytes of block j. */
static long long blen(const ms_opts *o, long long j) { return o->irregular && (j & 1) ? (o->block + 1) / 2 : o->block; }

/* This rank's blocks of one slab: block j at (j * ranks + rank) * block in the slab. */
static void make_vec(ms_run *c) {
  const ms_opts *o = c->o;
  int n = (int)o->runs, *len = xalloc(sizeof(int) * (size_t)n), *dsp = xalloc(sizeof(int) * (size_t)n);
  c->piece = 0;
  for (int j = 0; j < n; j++) {
    len[j] = (int)blen(o, j);
    dsp[j] = (int)(((long long)j * B.size) * o->block);
    c->piece += len[j];
  }
  MPI_Type_indexed(n, len, dsp, MPI_BYTE, &c->vec);
  free(len);
  free(dsp);
}

/* The blocks of iteration i: the verification pattern of the file offsets they land on. */
static void fill(ms_run *c) {
  for (long long i = 0; i < c->o->iters; i++) {
    unsigned char *b = c->buf + i * c->piece;
    for (long long j = 0; j < c->o->runs; j++) {
      MPI_Offset off = i * c->slab + (j * B.size + B.rank) * c->o->block;
      pat_fill(b, off, (size_t)blen(c->o, j));
      b += blen(c->o, j);
    }
  }
}

/* For the checker: a block's bytes hold the pattern, the rest of its slot (irregular) nothing
 * known (holes read as zeros, or what an earlier loop left). */
static size_t span(MPI_Offset off, size_t len, const void *ctx, int *want) {
  const ms_run *c = ctx;
  long long b = c->o->block, slot = (off % c->slab) / b, j = slot / B.size, in = off % b, n = blen(c->o, j);
  *want = in < n ? SPAN_PATTERN : SPAN_SKIP;
  long long left = (in < n ? n : b) - in;
  return (size_t)(left < (long long)len ? left : (long long)len);
}

/* Mean and maximum over ranks of v, as metrics name_mean and name_max. */
static void spread_all(result *r, const char *name, double v, int have) {
  char k[64];
  double mx = max_all(v), mean = avg_all(v);
  snprintf(k, sizeof k, "%s_mean", name);
  jo_num(&r->metrics, k, have ? mean : NAN);
  snprintf(k, sizeof k, "%s_max", name);
  jo_num(&r->metrics, k, have ? mx : NAN);
}

static void report(result *r, ms_run *c, int mode, double secs) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  res_agree(r);
  int have = c->bytes != NULL;
  if (r->status == ST_OK) {
    double per_view = c->nviews ? c->view_b / (double)c->nviews : 0, per_call = c->ncalls ? c->call_b / (double)c->ncalls : 0;
    r->seconds = secs;
    jo_num(&r->metrics, "seconds", secs);
    jo_num(&r->metrics, "us_per_iter", secs / (double)c->o->iters * 1e6);
    spread_all(r, "recv_per_view", per_view, have && c->nviews);
    spread_all(r, "recv_per_call", per_call, have);
    spread_all(r, "peak_rss_kib", (double)ru.ru_maxrss, 1);
    double call_max = max_all(per_call), view_max = max_all(per_view);
    if (have)
      snprintf(r->note, sizeof r->note, "max B/rank: %.0f per call, %.0f per set_view%s", call_max, view_max,
               mode ? "" : " (set once)");
    else
      snprintf(r->note, sizeof r->note, "no counting tool preloaded: bytes not measured");
  }
  res_emit(r);
}

int metascale_main(int argc, char **argv) {
  ms_opts o = {.iters = 10, .runs = 16, .block = 64, .modes = 3};
  static const struct option longopts[] = {
      {"iterations", required_argument, 0, 'i'}, {"runs", required_argument, 0, 'n'},
      {"block", required_argument, 0, 'b'},      {"mode", required_argument, 0, O_MODE},
      {"irregular", no_argument, 0, O_IRREGULAR}, COMMON_LONG_OPTS, {0, 0, 0, 0}};
  int rc = parse_options("metascale", argc, argv, COMMON_SHORT "i:n:b:", longopts, ms_option, &o);
  if (rc) return rc;
  if (o.block * o.runs * B.size > (1LL << 30) || o.block * o.runs * o.iters > (1LL << 30))
    return usage_error("metascale", "runs, block and iterations too large");
  char path[4096];
  ms_run c = {.o = &o, .path = test_path(path, sizeof path, "metascale.dat")};
  c.slab = o.runs * o.block * B.size;
  *(void **)&c.bytes = dlsym(RTLD_DEFAULT, "pario_below_bytes");
  make_vec(&c);
  c.buf = xalloc((size_t)(c.piece * o.iters));
  fill(&c);
  for (int m = 0; m < 2; m++) {
    if (!(o.modes >> m & 1)) continue;
    result r;
    char b[32];
    res_init(&r, "metascale", mode_names[m]);
    jo_str(&r.params, "mode", mode_names[m]);
    jo_int(&r.params, "ranks", B.size);
    jo_int(&r.params, "iterations", o.iters);
    jo_int(&r.params, "runs", o.runs);
    jo_int(&r.params, "block", o.block);
    jo_bool(&r.params, "counted", c.bytes != NULL);
    jo_bool(&r.params, "irregular", o.irregular);
    res_common_params(&r);
    snprintf(r.label, sizeof r.label, "%-5s %d ranks, %lld runs of %s%s", mode_names[m], B.size, o.runs,
             size_str(o.block, b, sizeof b), o.irregular ? " (irregular)" : "");
    c.view_b = c.call_b = 0;
    c.nviews = c.ncalls = 0;
    double secs = loop(&r, &c, m);
    if (res_ok_everywhere(&r) && B.verify) {
      if (B.inject) corrupt_byte(c.path, c.slab / 2);
      long long last = o.runs - 1, size = (o.iters - 1) * c.slab + (last * B.size + B.size - 1) * o.block + blen(&o, last);
      pat_verify_file(&r, c.path, size, span, &c);
    }
    report(&r, &c, m, secs);
  }
  MPI_Type_free(&c.vec);
  free(c.buf);
  if (!B.keep) file_remove(c.path);
  return 0;
}
