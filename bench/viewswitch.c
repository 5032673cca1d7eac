/* pario-bench viewswitch: a client that changes the view around every collective access, as
 * HDF5's MPI-IO driver does (issue 34): "set a derived view, MPI_File_write_at_all, reset the
 * view to bytes", against the same writes with the view set once. Each rank writes `piece`
 * bytes per iteration, in blocks of `block` bytes interleaved with the other ranks' (a
 * hyperslab of a 2-D dataset); iteration i writes the i-th such slab. Both loops write the
 * same bytes, and the file is checked after each. The runs alternate (once, reset, once, ...)
 * so that both see the same machine; the figure is the time per iteration. */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const mode_names[] = {"once", "reset"};

typedef struct {
  long long iters, piece, block;
  int modes, info; /* info: pass the open's hints at every set_view (HDF5 passes its info) */
} vs_opts;

const char viewswitch_usage[] =
    "usage: pario-bench viewswitch [OPTIONS]\n"
    "An HDF5-like loop of collective writes (issue 34): 'reset' sets a derived view before\n"
    "every MPI_File_write_at_all and resets it to bytes after, 'once' sets the view once and\n"
    "writes at moving offsets. Every rank writes PIECE bytes per iteration in blocks of BLOCK\n"
    "bytes interleaved with the other ranks'; both loops write the same bytes.\n\n"
    "  -i, --iterations N   writes per loop (default 200)\n"
    "  -p, --piece BYTES    bytes per rank per write (default 1K)\n"
    "  -b, --block BYTES    contiguous bytes per rank in the file (default 64)\n"
    "      --mode LIST      once,reset (default both)\n"
    "      --no-info        pass MPI_INFO_NULL to set_view (default: the -H hints, as HDF5\n"
    "                       passes its file's info; an empty info when there are none)\n"
    "metrics: seconds (loop), us_per_iter, mb_per_s.\n" REPEAT_HELP COMMON_HELP;

enum { O_MODE = OPT_SUITE0, O_NOINFO };

static int vs_option(int c, const char *arg, void *ctx) {
  vs_opts *o = ctx;
  long long v;
  switch (c) {
    case 'i':
      if (parse_int(arg, 1, 1000000, &v)) return usage_error("viewswitch", "bad iteration count '%s'", arg);
      o->iters = v;
      return 0;
    case 'p':
      if ((o->piece = parse_size(arg)) < 1) return usage_error("viewswitch", "bad piece size '%s'", arg);
      return 0;
    case 'b':
      if ((o->block = parse_size(arg)) < 1) return usage_error("viewswitch", "bad block size '%s'", arg);
      return 0;
    case O_MODE:
      if ((o->modes = parse_choice_list(arg, mode_names, 2)) <= 0) return usage_error("viewswitch", "bad mode list '%s'", arg);
      return 0;
    case O_NOINFO: o->info = 0; return 0;
    default: return usage_error("viewswitch", "unknown option");
  }
}

typedef struct {
  const vs_opts *o;
  const char *path;
  MPI_Datatype ftype; /* this rank's blocks of one slab, extent one slab */
  long long slab;     /* bytes of one iteration, all ranks */
  unsigned char *buf; /* iters * piece: what this rank writes, iteration by iteration */
} vs_run;

/* The filetype: piece/block blocks of `block` bytes, one every np blocks, resized to a slab. */
static void make_type(vs_run *c) {
  MPI_Datatype v;
  int n = (int)(c->o->piece / c->o->block);
  MPI_Type_vector(n, (int)c->o->block, (int)(c->o->block * B.size), MPI_BYTE, &v);
  MPI_Type_create_resized(v, 0, (MPI_Aint)c->slab, &c->ftype);
  MPI_Type_commit(&c->ftype);
  MPI_Type_free(&v);
}

/* This rank's bytes: the verification pattern of the file offsets they land on. */
static void fill(vs_run *c) {
  long long n = c->o->piece / c->o->block;
  for (long long i = 0; i < c->o->iters; i++)
    for (long long j = 0; j < n; j++) {
      MPI_Offset off = i * c->slab + (j * B.size + B.rank) * c->o->block;
      pat_fill(c->buf + i * c->o->piece + j * c->o->block, off, (size_t)c->o->block);
    }
}

/* One timed loop; returns the seconds (the slowest rank's). */
static double loop(result *r, vs_run *c, int mode, MPI_Info info) {
  MPI_File fh = MPI_FILE_NULL;
  MPI_Offset mine = (MPI_Offset)B.rank * c->o->block;
  double t = 0;
  file_remove(c->path);
  if (res_mpi(r, file_open_hinted(MPI_COMM_WORLD, c->path, MPI_MODE_CREATE | MPI_MODE_RDWR, NULL, NULL, &fh),
              "MPI_File_open"))
    return 0;
  if (mode == 0 && res_mpi(r, MPI_File_set_view(fh, mine, MPI_BYTE, c->ftype, "native", info), "MPI_File_set_view")) {
    file_close(r, &fh, "MPI_File_close");
    return 0;
  }
  bench_barrier();
  double t0 = now();
  for (long long i = 0; i < c->o->iters && r->status == ST_OK; i++) {
    void *b = c->buf + i * c->o->piece;
    int n = (int)c->o->piece;
    if (mode == 0) {
      res_mpi(r, MPI_File_write_at_all(fh, i * c->o->piece, b, n, MPI_BYTE, MPI_STATUS_IGNORE), "MPI_File_write_at_all");
      continue;
    }
    if (res_mpi(r, MPI_File_set_view(fh, i * c->slab + mine, MPI_BYTE, c->ftype, "native", info), "MPI_File_set_view") ||
        res_mpi(r, MPI_File_write_at_all(fh, 0, b, n, MPI_BYTE, MPI_STATUS_IGNORE), "MPI_File_write_at_all"))
      break;
    res_mpi(r, MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", info), "MPI_File_set_view (reset)");
  }
  t = max_all(now() - t0);
  file_close(r, &fh, "MPI_File_close");
  return t;
}

static void set_params(result *r, const vs_run *c, int mode, int n) {
  char p[32], b[32];
  res_init(r, "viewswitch", mode_names[mode]);
  jo_int(&r->params, "iterations", c->o->iters);
  jo_int(&r->params, "piece", c->o->piece);
  jo_int(&r->params, "block", c->o->block);
  jo_bool(&r->params, "info", c->o->info);
  jo_int(&r->params, "repeat", n);
  res_common_params(r);
  snprintf(r->label, sizeof r->label, "%-5s %lld x %s in %s blocks", mode_names[mode], c->o->iters,
           size_str(c->o->piece, p, sizeof p), size_str(c->o->block, b, sizeof b));
}

/* The figures of n runs (medians, with their spread), then the row. */
static void report(result *r, const vs_run *c, const double *secs, int n) {
  res_agree(r);
  if (r->status == ST_OK) {
    double us[MAX_REPEAT], mb[MAX_REPEAT];
    for (int k = 0; k < n; k++) {
      us[k] = secs[k] / (double)c->o->iters * 1e6;
      mb[k] = (double)c->slab * (double)c->o->iters / secs[k] / 1e6;
    }
    r->seconds = jo_spread(&r->metrics, "seconds", secs, n);
    jo_spread(&r->metrics, "us_per_iter", us, n);
    r->mbps = jo_spread(&r->metrics, "mb_per_s", mb, n);
    snprintf(r->note, sizeof r->note, "%.1f us/iter", median_of(us, n, NULL, NULL));
  }
  res_emit(r);
}

int viewswitch_main(int argc, char **argv) {
  vs_opts o = {.iters = 200, .piece = 1024, .block = 64, .modes = 3, .info = 1};
  static const struct option longopts[] = {
      {"iterations", required_argument, 0, 'i'}, {"piece", required_argument, 0, 'p'},
      {"block", required_argument, 0, 'b'},      {"mode", required_argument, 0, O_MODE},
      {"no-info", no_argument, 0, O_NOINFO},     REPEAT_LONG_OPT, COMMON_LONG_OPTS, {0, 0, 0, 0}};
  int rc = parse_options("viewswitch", argc, argv, COMMON_SHORT "i:p:b:", longopts, vs_option, &o);
  if (rc) return rc;
  if (o.piece % o.block) return usage_error("viewswitch", "piece (%lld) is not a multiple of block (%lld)", o.piece, o.block);
  if (o.block * B.size > (1LL << 30) || o.piece * o.iters > (1LL << 30))
    return usage_error("viewswitch", "piece, block and iterations too large");
  char path[4096];
  vs_run c = {.o = &o, .path = test_path(path, sizeof path, "viewswitch.dat"), .slab = o.piece * B.size};
  c.buf = xalloc((size_t)(o.piece * o.iters));
  make_type(&c);
  fill(&c);
  MPI_Info info = o.info ? hints_info(B.hints) : MPI_INFO_NULL;
  if (o.info && info == MPI_INFO_NULL) MPI_Info_create(&info); /* HDF5's info is never null */
  int n = B.repeat;
  static double secs[2][MAX_REPEAT];
  result r[2];
  for (int m = 0; m < 2; m++) set_params(&r[m], &c, m, n);
  for (int k = 0; k < n; k++)
    for (int m = 0; m < 2; m++) { /* alternate: once, reset, once, ... */
      if (!(o.modes >> m & 1) || !res_ok_everywhere(&r[m])) continue;
      secs[m][k] = loop(&r[m], &c, m, info);
      if (res_ok_everywhere(&r[m]) && B.verify) {
        if (B.inject) corrupt_byte(c.path, c.slab / 2);
        pat_verify_file(&r[m], c.path, c.slab * o.iters, NULL, NULL);
      }
    }
  for (int m = 0; m < 2; m++) {
    if (o.modes >> m & 1) report(&r[m], &c, secs[m], n);
    else jo_free(&r[m].params), jo_free(&r[m].metrics);
  }
  if (o.info) info_free(&info);
  MPI_Type_free(&c.ftype);
  free(c.buf);
  if (!B.keep) file_remove(c.path);
  return 0;
}
