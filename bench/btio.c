/* pario-bench btio: the BTIO experiment of the RIO paper (seed 004, sec. 4.3): an N^3 x 5 field
 * in a 3-D block decomposition, written every k of I iterations through a subarray view, in
 * blocking, nonblocking (overlapping the next compute steps) and staged (local file + copy) modes;
 * with --gather the seed's optimised variant: the ranks gather the whole field and each writes
 * one contiguous block of it from that temporary array. */
#include "bench.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const mode_names[] = {"blocking", "nonblocking", "stage"};
static const char *const nbapi_names[] = {"iwrite_all", "begin_end"};
enum { BLOCKING, NONBLOCKING, STAGE };

typedef struct {
  long long n, iters, every;
  int modes, nbapi, gather, wall;
  double cost;
  const char *stage_dir;
} bt_opts;

const char btio_usage[] =
    "usage: pario-bench btio [OPTIONS]\n"
    "BTIO checkpoints (seed 004, RIO, sec. 4.3): an N^3 grid of 5 doubles per point, 3-D block\n"
    "decomposition, written every K of I iterations through a subarray view (collective).\n\n"
    "  -n, --n N                  grid points per dimension (default 32)\n"
    "  -i, --iterations I         iterations (default 40)\n"
    "  -k, --write-every K        write every K iterations (default 5)\n"
    "      --mode LIST            blocking,nonblocking,stage (default all three)\n"
    "      --compute-cost SECONDS synthetic compute per iteration (default 0.01)\n"
    "      --nonblocking-api A    iwrite_all (default) or begin_end (split collective)\n"
    "      --compute-wall         each compute step lasts --compute-cost seconds of wall time\n"
    "                             (units in slices until then), however loaded the machine;\n"
    "                             default: the units calibrated at start-up\n"
    "      --gather               the seed's optimised BTIO: every step the ranks allgather the\n"
    "                             field and each writes one contiguous block of it (write_at,\n"
    "                             iwrite_at) from that temporary array\n"
    "      --stage-dir DIR        node-local directory of the stage mode\n"
    "                             (default DIR/pario-bench-stage)\n" REPEAT_HELP COMMON_HELP;

enum { O_MODE = OPT_SUITE0, O_COST, O_NBAPI, O_STAGEDIR, O_GATHER, O_WALL };

static int bt_option(int c, const char *arg, void *ctx) {
  bt_opts *o = ctx;
  switch (c) {
    case 'n':
      if (parse_int(arg, 1, 4096, &o->n)) return usage_error("btio", "bad grid size '%s'", arg);
      return 0;
    case 'i':
      if (parse_int(arg, 1, 1 << 30, &o->iters)) return usage_error("btio", "bad iterations '%s'", arg);
      return 0;
    case 'k':
      if (parse_int(arg, 1, 1 << 30, &o->every)) return usage_error("btio", "bad write interval '%s'", arg);
      return 0;
    case O_MODE:
      if ((o->modes = parse_choice_list(arg, mode_names, 3)) < 0)
        return usage_error("btio", "bad mode list '%s'", arg);
      return 0;
    case O_COST:
      if (parse_double(arg, 0, 3600, &o->cost)) return usage_error("btio", "bad compute cost '%s'", arg);
      return 0;
    case O_NBAPI:
      if ((o->nbapi = choice_index(arg, nbapi_names, 2)) < 0)
        return usage_error("btio", "bad nonblocking api '%s'", arg);
      return 0;
    case O_STAGEDIR: o->stage_dir = arg; return 0;
    case O_GATHER: o->gather = 1; return 0;
    case O_WALL: o->wall = 1; return 0;
    default: return usage_error("btio", "unknown option");
  }
}

/* ---- decomposition and field ------------------------------------------------------------ */

typedef struct {
  const bt_opts *o;
  int mode;
  long long lo[3], sz[3]; /* x, y, z: first index and extent of this rank's block */
  long long lcount;       /* doubles per rank per write step */
  long long steps;
  double *field, *out;
  double *full;           /* --gather: the whole field in file order (the seed's temporary array) */
  double *blocks;         /* --gather: every rank's block, as allgathered */
  int *counts, *displs;   /* --gather: the Alltoallv counts (2 np) and displacements (2 np, in counts) */
  long long (*box)[6];    /* --gather: each rank's lo[3], sz[3] */
  long long g0, gcount;   /* --gather: this rank's contiguous share of a step, in doubles */
  MPI_Datatype filetype;
  const char *path;
  char local[4096];
  double compute_s, io_s, total_s, units;
  MPI_File fh, lfh;
  MPI_Request req;
  int pending;
} bt_run;

/* Rank rank's block: lo[3], sz[3] (x, y, z). */
static void block_of(const bt_run *c, int rank, long long lo[3], long long sz[3]) {
  int dims[3] = {0, 0, 0}, rest = rank;
  MPI_Dims_create(B.size, 3, dims); /* dims[0] varies slowest: z, y, x */
  int coord[3]; /* z, y, x */
  for (int d = 2; d >= 0; d--) coord[d] = rest % dims[d], rest /= dims[d];
  for (int d = 0; d < 3; d++) { /* lo/sz index 0 = x = dims[2] */
    int k = 2 - d;
    long long n = c->o->n;
    lo[d] = n * coord[k] / dims[k];
    sz[d] = n * (coord[k] + 1) / dims[k] - lo[d];
  }
}

static void decompose(bt_run *c) {
  block_of(c, B.rank, c->lo, c->sz);
  c->lcount = c->sz[0] * c->sz[1] * c->sz[2] * 5;
  int sizes[4] = {(int)c->o->n, (int)c->o->n, (int)c->o->n, 5};
  int sub[4] = {(int)c->sz[2], (int)c->sz[1], (int)c->sz[0], 5};
  int start[4] = {(int)c->lo[2], (int)c->lo[1], (int)c->lo[0], 0};
  MPI_Type_create_subarray(4, sizes, sub, start, MPI_ORDER_C, MPI_DOUBLE, &c->filetype);
  MPI_Type_commit(&c->filetype);
}

/* Value of component cc at point (x, y, z) after write step s: its index in the file + 0.5. */
static double value(long long n, long long s, long long z, long long y, long long x, int cc) {
  return (double)((((s * n + z) * n + y) * n + x) * 5 + cc) + 0.5;
}

static void fill_field(bt_run *c, long long s) {
  double *p = c->field;
  for (long long z = 0; z < c->sz[2]; z++)
    for (long long y = 0; y < c->sz[1]; y++)
      for (long long x = 0; x < c->sz[0]; x++)
        for (int cc = 0; cc < 5; cc++)
          *p++ = value(c->o->n, s, c->lo[2] + z, c->lo[1] + y, c->lo[0] + x, cc);
}

/* ---- --gather: the seed's optimised variant ----------------------------------------------- */

static int complete_pending(bt_run *c);

static void gather_setup(bt_run *c) {
  long long total = c->o->n * c->o->n * c->o->n * 5;
  c->g0 = total * B.rank / B.size;
  c->gcount = total * (B.rank + 1) / B.size - c->g0;
  c->full = xalloc(sizeof(double) * (size_t)(c->gcount + 1));
  c->blocks = xalloc(sizeof(double) * (size_t)(c->lcount + c->gcount + 1)); /* sent, then received */
  c->counts = xalloc(sizeof(int) * 4 * (size_t)B.size);
  c->displs = c->counts + 2 * B.size;
  c->box = xalloc(sizeof *c->box * (size_t)B.size);
  for (int r = 0; r < B.size; r++) block_of(c, r, c->box[r], c->box[r] + 3);
}

/* Walk rank r's rows (x runs of its block, in file order) cut at the ranks' shares: fn gets
 * each piece's file offset, length and owner, in order. */
static void walk_rows(const bt_run *c, int r, void (*fn)(void *, long long, long long, int), void *arg) {
  long long n = c->o->n, total = n * n * n * 5;
  const long long *lo = c->box[r], *sz = c->box[r] + 3;
  for (long long z = 0; z < sz[2]; z++)
    for (long long y = 0; y < sz[1]; y++) {
      long long off = (((lo[2] + z) * n + lo[1] + y) * n + lo[0]) * 5, left = sz[0] * 5;
      while (left > 0) {
        int q = (int)(off * B.size / total); /* the share holding off */
        while (q + 1 < B.size && total * (q + 1) / B.size <= off) q++;
        while (q > 0 && total * q / B.size > off) q--;
        long long end = total * (q + 1) / B.size, take = end - off < left ? end - off : left;
        fn(arg, off, take, q);
        off += take, left -= take;
      }
    }
}

typedef struct {
  bt_run *c;
  int *count; /* doubles per owner so far */
  const double *src;
  double *dst;
} walk_ctx;

static void count_piece(void *a, long long off, long long len, int q) {
  (void)off;
  ((walk_ctx *)a)->count[q] += (int)len;
}

static void pack_piece(void *a, long long off, long long len, int q) { /* my rows, in order */
  walk_ctx *w = a;
  (void)off;
  memcpy(w->dst + w->c->displs[q] + w->count[q], w->src, sizeof(double) * (size_t)len);
  w->src += len, w->count[q] += (int)len;
}

static void place_piece(void *a, long long off, long long len, int q) { /* rank r's rows */
  walk_ctx *w = a;
  if (q != B.rank) return;
  memcpy(w->c->full + (off - w->c->g0), w->src, sizeof(double) * (size_t)len);
  w->src += len;
}

/* The field redistributed so that each rank holds its contiguous share of the file (one
 * MPI_Alltoallv: every double moves once), the seed's temporary array. */
static void gather_field(bt_run *c) {
  int np = B.size, *scount = c->counts, *rcount = c->counts + np, *sdispl = c->displs, *rdispl = c->displs + np;
  int *per = xalloc(sizeof(int) * (size_t)np);
  walk_ctx w = {c, scount, NULL, NULL};
  memset(scount, 0, sizeof(int) * (size_t)np);
  walk_rows(c, B.rank, count_piece, &w);
  for (int r = 0; r < np; r++) { /* what rank r sends me: its pieces inside my share */
    memset(per, 0, sizeof(int) * (size_t)np);
    w.count = per;
    walk_rows(c, r, count_piece, &w);
    rcount[r] = per[B.rank];
  }
  for (int r = 0; r < np; r++) {
    sdispl[r] = r ? sdispl[r - 1] + scount[r - 1] : 0;
    rdispl[r] = r ? rdispl[r - 1] + rcount[r - 1] : 0;
  }
  double *recv = c->blocks + c->lcount;
  memset(per, 0, sizeof(int) * (size_t)np);
  w = (walk_ctx){c, per, c->field, c->blocks};
  walk_rows(c, B.rank, pack_piece, &w);
  MPI_Alltoallv(c->blocks, scount, sdispl, MPI_DOUBLE, recv, rcount, rdispl, MPI_DOUBLE, MPI_COMM_WORLD);
  for (int r = 0; r < np; r++) {
    w.src = recv + rdispl[r];
    walk_rows(c, r, place_piece, &w);
  }
  free(per);
}

/* Step s of the --gather variant: this rank's contiguous share, from the whole field. */
static void write_gathered(result *r, bt_run *c, long long s) {
  long long total = c->o->n * c->o->n * c->o->n * 5;
  MPI_Offset at = (MPI_Offset)((s * total + c->g0) * 8);
  int n = (int)c->gcount;
  const double *from = c->full;
  if (c->mode == NONBLOCKING && res_mpi(r, complete_pending(c), "MPI_Wait")) return;
  gather_field(c); /* the temporary array is free again: the previous write completed */
  if (c->mode == BLOCKING)
    res_mpi(r, MPI_File_write_at(c->fh, at, from, n, MPI_DOUBLE, MPI_STATUS_IGNORE), "MPI_File_write_at");
  else if (c->mode == STAGE)
    res_mpi(r, MPI_File_write_at(c->lfh, at, from, n, MPI_DOUBLE, MPI_STATUS_IGNORE), "MPI_File_write_at (stage)");
  else if (!res_mpi(r, MPI_File_iwrite_at(c->fh, at, from, n, MPI_DOUBLE, &c->req), "MPI_File_iwrite_at"))
    c->pending = 1;
}

/* ---- the three ways of writing a step --------------------------------------------------- */

static int complete_pending(bt_run *c) {
  if (!c->pending) return MPI_SUCCESS;
  c->pending = 0;
  MPI_Status st;
  if (c->o->nbapi == 0 || c->o->gather) return MPI_Wait(&c->req, &st);
  return MPI_File_write_at_all_end(c->fh, c->out, &st);
}

static void write_step(result *r, bt_run *c, long long s) {
  if (c->o->gather) {
    write_gathered(r, c, s);
    return;
  }
  MPI_Offset off = (MPI_Offset)(s * c->lcount); /* etypes within the view: the s-th tile */
  int n = (int)c->lcount, rc;
  if (c->mode == BLOCKING) {
    res_mpi(r, MPI_File_write_at_all(c->fh, off, c->field, n, MPI_DOUBLE, MPI_STATUS_IGNORE),
            "MPI_File_write_at_all");
  } else if (c->mode == STAGE) {
    res_mpi(r, MPI_File_write_at(c->lfh, off * 8, c->field, n, MPI_DOUBLE, MPI_STATUS_IGNORE),
            "MPI_File_write_at (stage)");
  } else {
    if (res_mpi(r, complete_pending(c), c->o->nbapi ? "MPI_File_write_at_all_end" : "MPI_Wait")) return;
    memcpy(c->out, c->field, sizeof(double) * (size_t)c->lcount);
    rc = c->o->nbapi ? MPI_File_write_at_all_begin(c->fh, off, c->out, n, MPI_DOUBLE)
                     : MPI_File_iwrite_at_all(c->fh, off, c->out, n, MPI_DOUBLE, &c->req);
    if (!res_mpi(r, rc, c->o->nbapi ? "MPI_File_write_at_all_begin" : "MPI_File_iwrite_at_all"))
      c->pending = 1;
  }
}

/* stage: after the run, copy each rank's node-local file into the destination (the "ftp"). */
static void copy_stage(result *r, bt_run *c) {
  int rc = file_open_hinted(MPI_COMM_WORLD, c->path, MPI_MODE_CREATE | MPI_MODE_WRONLY, NULL, NULL, &c->fh);
  if (res_mpi(r, rc, "MPI_File_open") ||
      (!c->o->gather && res_mpi(r, MPI_File_set_view(c->fh, 0, MPI_DOUBLE, c->filetype, "native", MPI_INFO_NULL),
                                "MPI_File_set_view")))
    return; /* --gather writes byte offsets through the default view */
  long long total = c->o->n * c->o->n * c->o->n * 5;
  for (long long s = 0; s < c->steps && r->status == ST_OK && c->o->gather; s++) {
    MPI_Offset at = (MPI_Offset)((s * total + c->g0) * 8); /* the contiguous share, as it was kept */
    if (!res_mpi(r, MPI_File_read_at(c->lfh, at, c->full, (int)c->gcount, MPI_DOUBLE, MPI_STATUS_IGNORE),
                 "MPI_File_read_at (stage)"))
      res_mpi(r, MPI_File_write_at(c->fh, at, c->full, (int)c->gcount, MPI_DOUBLE, MPI_STATUS_IGNORE),
              "MPI_File_write_at (copy)");
  }
  for (long long s = 0; s < c->steps && r->status == ST_OK && !c->o->gather; s++) {
    MPI_Offset off = (MPI_Offset)(s * c->lcount);
    int n = (int)c->lcount;
    if (res_mpi(r, MPI_File_read_at(c->lfh, off * 8, c->out, n, MPI_DOUBLE, MPI_STATUS_IGNORE),
                "MPI_File_read_at (stage)"))
      break;
    res_mpi(r, MPI_File_write_at_all(c->fh, off, c->out, n, MPI_DOUBLE, MPI_STATUS_IGNORE),
            "MPI_File_write_at_all (copy)");
  }
}

static void open_files(result *r, bt_run *c) {
  if (c->mode == STAGE) {
    int rc = file_open(MPI_COMM_SELF, c->local, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &c->lfh);
    res_mpi(r, rc, "MPI_File_open (stage)");
    return;
  }
  int rc = file_open_hinted(MPI_COMM_WORLD, c->path, MPI_MODE_CREATE | MPI_MODE_WRONLY, NULL, NULL, &c->fh);
  if (!res_mpi(r, rc, "MPI_File_open") && !c->o->gather)
    res_mpi(r, MPI_File_set_view(c->fh, 0, MPI_DOUBLE, c->filetype, "native", MPI_INFO_NULL),
            "MPI_File_set_view");
}

static void close_files(result *r, bt_run *c) {
  if (c->pending) res_mpi(r, complete_pending(c), "completing the last write");
  if (c->mode == STAGE && r->status == ST_OK) copy_stage(r, c);
  file_close(r, &c->lfh, "MPI_File_close (stage)");
  file_close(r, &c->fh, "MPI_File_close");
}

/* ---- the run ---------------------------------------------------------------------------- */

/* One compute step: the calibrated units, or (--compute-wall) units in slices until the step's
 * wall time is over, so a loaded machine cannot shorten it below what the link needs. */
static void compute_step(const bt_run *c) {
  if (!c->o->wall) {
    compute_units((long long)c->units);
    return;
  }
  double end = now() + c->o->cost;
  long long slice = (long long)(c->units / 50) + 1;
  while (now() < end) compute_units(slice);
}

static void iterate(result *r, bt_run *c) {
  long long s = 0;
  for (long long it = 0; it < c->o->iters; it++) {
    int writes = (it + 1) % c->o->every == 0;
    double t = now();
    compute_step(c);
    if (writes) fill_field(c, s);
    c->compute_s += now() - t;
    if (!writes || r->status != ST_OK) continue;
    t = now();
    write_step(r, c, s++);
    c->io_s += now() - t;
  }
}

static void run(result *r, bt_run *c) {
  c->fh = c->lfh = MPI_FILE_NULL;
  bench_barrier();
  double t0 = now(), t;
  open_files(r, c);
  c->io_s = now() - t0;
  iterate(r, c);
  t = now();
  close_files(r, c);
  c->io_s += now() - t;
  bench_barrier();
  c->total_s = max_all(now() - t0);
  c->io_s = max_all(c->io_s);
  c->compute_s = max_all(c->compute_s);
}

/* Every double of the file must be its index + 0.5 (ranks check contiguous shares). */
static void verify(result *r, bt_run *c) {
  long long total = c->steps * c->o->n * c->o->n * c->o->n * 5;
  MPI_File fh;
  MPI_Offset fsize = 0;
  if (B.inject) corrupt_byte(c->path, total * 4 + 3);
  if (res_mpi(r, file_open(MPI_COMM_WORLD, c->path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh), "MPI_File_open (verify)"))
    return;
  if (!res_mpi(r, MPI_File_get_size(fh, &fsize), "MPI_File_get_size") && fsize != total * 8)
    res_mismatch(r, "%s has %lld bytes, expected %lld", c->path, (long long)fsize, total * 8);
  long long lo = total * B.rank / B.size, hi = total * (B.rank + 1) / B.size, chunk = 1 << 20;
  double *buf = xalloc(sizeof(double) * (size_t)chunk);
  for (long long i = lo; i < hi && r->status == ST_OK; i += chunk) {
    long long n = hi - i < chunk ? hi - i : chunk;
    if (res_mpi(r, read_full_at(fh, i * 8, buf, (size_t)n * 8), "MPI_File_read_at (verify)")) break;
    for (long long k = 0; k < n; k++)
      if (buf[k] != (double)(i + k) + 0.5) {
        res_mismatch(r, "%s: wrong field value at offset %lld", c->path, (i + k) * 8);
        break;
      }
  }
  free(buf);
  file_close(r, &fh, "MPI_File_close (verify)");
  if (r->status == ST_OK) res_verified(r);
}

static void set_params(result *r, const bt_run *c) {
  const bt_opts *o = c->o;
  jo_int(&r->params, "n", o->n);
  jo_int(&r->params, "iterations", o->iters);
  jo_int(&r->params, "write_every", o->every);
  jo_str(&r->params, "mode", mode_names[c->mode]);
  jo_num(&r->params, "compute_cost", o->cost);
  jo_str(&r->params, "nonblocking_api", o->gather ? "iwrite_at" : nbapi_names[o->nbapi]);
  jo_int(&r->params, "gather", o->gather);
  jo_int(&r->params, "compute_wall", o->wall);
  res_common_params(r);
  snprintf(r->label, sizeof r->label, "N=%lld I=%lld k=%lld cost=%gs%s%s%s", o->n, o->iters, o->every,
           o->cost, c->mode == NONBLOCKING ? " " : "",
           c->mode == NONBLOCKING ? (o->gather ? "iwrite_at" : nbapi_names[o->nbapi]) : "", o->gather ? " gather" : "");
}

/* Each figure: the median of the B.repeat runs, with _min and _max. */
static void report(result *r, const bt_run *c, double (*t)[3], int n) {
  double bytes = (double)c->steps * (double)(c->o->n * c->o->n * c->o->n) * 40;
  double *v = calloc((size_t)n, sizeof *v);
  static const char *const keys[3] = {"compute_s", "io_s", "total_s"};
  double med[3];
  for (int j = 0; j < 3; j++) {
    for (int k = 0; k < n; k++) v[k] = t[k][j];
    med[j] = jo_spread(&r->metrics, keys[j], v, n);
  }
  for (int k = 0; k < n; k++) v[k] = bytes / t[k][2] / 1e6;
  r->seconds = med[2];
  r->mbps = jo_spread(&r->metrics, "mb_per_s", v, n);
  for (int k = 0; k < n; k++) v[k] = t[k][1] > 0 ? bytes / t[k][1] / 1e6 : 0;
  jo_spread(&r->metrics, "io_mb_per_s", v, n);
  jo_int(&r->metrics, "bytes", (long long)bytes);
  snprintf(r->note, sizeof r->note, "compute %.3fs io %.3fs", med[0], med[1]);
  free(v);
}

static void measure(bt_run *c) {
  result r;
  res_init(&r, "btio", mode_names[c->mode]);
  set_params(&r, c);
  double (*t)[3] = calloc((size_t)B.repeat, sizeof *t);
  for (int k = 0; k < B.repeat && r.status == ST_OK; k++) {
    c->compute_s = c->io_s = 0;
    c->pending = 0;
    file_remove(c->path);
    run(&r, c);
    if (res_ok_everywhere(&r) && B.verify) verify(&r, c);
    res_agree(&r);
    t[k][0] = c->compute_s, t[k][1] = c->io_s, t[k][2] = c->total_s;
  }
  if (r.status == ST_OK) report(&r, c, t, B.repeat);
  jo_int(&r.params, "repeat", B.repeat);
  res_emit(&r);
  free(t);
  if (c->mode == STAGE && !B.keep) MPI_File_delete(c->local, MPI_INFO_NULL);
  if (!B.keep) file_remove(c->path);
}

static const char *stage_dir(const bt_opts *o, char *buf, size_t n) {
  if (o->stage_dir) return o->stage_dir;
  test_path(buf, n, "stage");
  if (mkdir(buf, 0755) != 0 && errno != EEXIST) fprintf(stderr, "pario-bench btio: mkdir %s: %s\n", buf, strerror(errno));
  return buf;
}

int btio_main(int argc, char **argv) {
  bt_opts o = {.n = 32, .iters = 40, .every = 5, .modes = 7, .cost = 0.01};
  static const struct option longopts[] = {
      {"n", required_argument, 0, 'n'},          {"iterations", required_argument, 0, 'i'},
      {"write-every", required_argument, 0, 'k'}, {"mode", required_argument, 0, O_MODE},
      {"compute-cost", required_argument, 0, O_COST}, {"nonblocking-api", required_argument, 0, O_NBAPI},
      {"stage-dir", required_argument, 0, O_STAGEDIR}, {"gather", no_argument, 0, O_GATHER}, {"compute-wall", no_argument, 0, O_WALL}, REPEAT_LONG_OPT, COMMON_LONG_OPTS, {0, 0, 0, 0}};
  int rc = parse_options("btio", argc, argv, COMMON_SHORT "n:i:k:", longopts, bt_option, &o);
  if (rc) return rc;
  if (o.iters / o.every < 1) return usage_error("btio", "no write: iterations < write interval");
  if ((double)o.n * o.n * o.n * 5 > 2e9) return usage_error("btio", "grid too large");
  char path[4096], sdir[4096];
  bt_run c = {.o = &o, .steps = o.iters / o.every, .path = test_path(path, sizeof path, "btio.dat")};
  decompose(&c);
  long long least = c.lcount;
  MPI_Allreduce(&c.lcount, &least, 1, MPI_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
  if (least == 0) {
    MPI_Type_free(&c.filetype);
    return usage_error("btio", "grid of %lld is too small for %d ranks", o.n, B.size);
  }
  c.units = o.cost * compute_rate_all();
  c.field = xalloc(sizeof(double) * (size_t)c.lcount);
  c.out = xalloc(sizeof(double) * (size_t)c.lcount);
  if (o.gather) gather_setup(&c);
  snprintf(c.local, sizeof c.local, "%.4000s/btio-local.%d", stage_dir(&o, sdir, sizeof sdir), B.rank);
  for (c.mode = 0; c.mode < 3; c.mode++)
    if (o.modes & (1 << c.mode)) measure(&c);
  MPI_Type_free(&c.filetype);
  free(c.field);
  free(c.out);
  free(c.full), free(c.blocks), free(c.counts), free(c.box); /* displs lies inside counts */
  bench_barrier();
  if (!o.stage_dir && !B.keep && B.rank == 0) rmdir(sdir);
  return 0;
}
