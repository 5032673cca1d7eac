/* pario-bench remote: the transfer-rate experiments of the RIO paper (seed 004, sec. 4.1-4.2,
 * Figures 3 and 4): every rank streams its own file to or from a server (ranks spread over the
 * servers given), blocking one request at a time or nonblocking with a queue of requests in
 * flight; with small blocks the same loop measures the request rate (pipelined against one
 * round trip at a time); collective mode: the ranks of a server share one file, each call
 * writes one block per rank, rank-interleaved (what a forwarder merges into one request).
 * Through the standard MPI-IO API, so local paths work as well. */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { BLOCKING, NONBLOCKING, COLLECTIVE };
enum { OP_WRITE, OP_READ };
static const char *const mode_names[] = {"blocking", "nonblocking", "collective"};
static const char *const op_names[] = {"write", "read"};
#define MAX_BS 16
#define MAX_SERVERS 16
#define MAX_DEPTH 1024

typedef struct {
  int modes, ops, nservers, repeat;
  long long size, depth, nbs, bs[MAX_BS];
  char *servers[MAX_SERVERS];
  char *server_list;
} rm_opts;

const char remote_usage[] =
    "usage: pario-bench remote [OPTIONS]\n"
    "Transfer rate against clients and servers (seed 004, RIO, Figures 3-4): each rank writes\n"
    "or reads its own file of SIZE bytes on server (rank mod #servers), in blocks, blocking\n"
    "(one request at a time) or nonblocking (DEPTH requests in flight). Time = open + I/O +\n"
    "close between barriers, maximum over ranks; median of --repeat runs, with min and max.\n\n"
    "  --servers LIST         comma-separated directories or x-rio://host:port/dir prefixes\n"
    "                         (default: --dir)\n"
    "  -s, --size SIZE        bytes per rank (default 64M)\n"
    "  -b, --block-size LIST  bytes per request (default 1M; 4K measures the request rate)\n"
    "      --mode LIST        blocking,nonblocking,collective (default the first two);\n"
    "                         collective: the ranks of a server share one file, block i of\n"
    "                         rank r at (i * ranks + r) * block, one write_at_all per block\n"
    "      --op LIST          write,read (default both)\n"
    "  -q, --depth Q          nonblocking requests in flight per rank (default 16)\n"
    "  -r, --repeat N         runs per measurement (default 3)\n" COMMON_HELP;

enum { O_SERVERS = OPT_SUITE0, O_MODE, O_OP };

static int split_servers(rm_opts *o, const char *arg) {
  free(o->server_list);
  o->server_list = strdup(arg);
  o->nservers = 0;
  for (char *save = NULL, *t = strtok_r(o->server_list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (o->nservers == MAX_SERVERS) return -1;
    o->servers[o->nservers++] = t;
  }
  return o->nservers > 0 ? 0 : -1;
}

static int rm_option(int c, const char *arg, void *ctx) {
  rm_opts *o = ctx;
  long long v;
  switch (c) {
    case O_SERVERS:
      if (split_servers(o, arg)) return usage_error("remote", "bad server list '%s' (1-%d entries)", arg, MAX_SERVERS);
      return 0;
    case 's':
      if ((o->size = parse_size(arg)) <= 0) return usage_error("remote", "bad size '%s'", arg);
      return 0;
    case 'b':
      if ((o->nbs = parse_size_list(arg, o->bs, MAX_BS)) <= 0) return usage_error("remote", "bad block size list '%s'", arg);
      return 0;
    case O_MODE:
      if ((o->modes = parse_choice_list(arg, mode_names, 3)) <= 0) return usage_error("remote", "bad mode list '%s'", arg);
      return 0;
    case O_OP:
      if ((o->ops = parse_choice_list(arg, op_names, 2)) <= 0) return usage_error("remote", "bad op list '%s'", arg);
      return 0;
    case 'q':
      if (parse_int(arg, 1, MAX_DEPTH, &o->depth)) return usage_error("remote", "bad depth '%s' (1-%d)", arg, MAX_DEPTH);
      return 0;
    case 'r':
      if (parse_int(arg, 1, 1000, &v)) return usage_error("remote", "bad repeat count '%s'", arg);
      o->repeat = (int)v;
      return 0;
    default: return usage_error("remote", "unknown option");
  }
}

typedef struct {
  const rm_opts *o;
  int mode, op;
  MPI_Comm comm; /* the ranks of this rank's server (collective mode) */
  int grank, gsize;
  long long bs, nb;
  char path[4200];
  unsigned char **buf; /* depth buffers (1 when blocking) */
  MPI_Offset *prev;    /* the offset whose content each buffer holds (-1: none), so that a
                        * reused buffer is only re-stamped, not filled again (pat_prepare) */
  int nbuf;
} rm_run;

/* Issue block i from slot s: blocking or as a nonblocking request into *req. */
static int xfer(rm_run *c, MPI_File fh, long long i, int s, MPI_Request *req) {
  MPI_Offset off = (MPI_Offset)((c->mode == COLLECTIVE ? i * c->gsize + c->grank : i) * c->bs);
  int n = (int)c->bs;
  if (c->op == OP_WRITE) pat_prepare(c->buf[s], off, (size_t)c->bs, &c->prev[s]);
  if (c->mode == COLLECTIVE)
    return c->op == OP_WRITE ? MPI_File_write_at_all(fh, off, c->buf[s], n, MPI_BYTE, MPI_STATUS_IGNORE)
                             : MPI_File_read_at_all(fh, off, c->buf[s], n, MPI_BYTE, MPI_STATUS_IGNORE);
  if (c->mode == BLOCKING)
    return c->op == OP_WRITE ? MPI_File_write_at(fh, off, c->buf[s], n, MPI_BYTE, MPI_STATUS_IGNORE)
                             : MPI_File_read_at(fh, off, c->buf[s], n, MPI_BYTE, MPI_STATUS_IGNORE);
  return c->op == OP_WRITE ? MPI_File_iwrite_at(fh, off, c->buf[s], n, MPI_BYTE, req)
                           : MPI_File_iread_at(fh, off, c->buf[s], n, MPI_BYTE, req);
}

/* The blocks of this rank in order; nonblocking keeps up to depth requests in flight, waiting
 * for the oldest before reusing its buffer. */
static void run_blocks(result *r, rm_run *c, MPI_File fh) {
  MPI_Request req[MAX_DEPTH];
  for (int s = 0; s < c->nbuf; s++) req[s] = MPI_REQUEST_NULL;
  for (long long i = 0; i < c->nb && r->status == ST_OK; i++) {
    int s = (int)(i % c->nbuf);
    if (req[s] != MPI_REQUEST_NULL && res_mpi(r, MPI_Wait(&req[s], MPI_STATUS_IGNORE), "MPI_Wait")) break;
    res_mpi(r, xfer(c, fh, i, s, &req[s]), c->op == OP_WRITE ? "MPI_File_write_at" : "MPI_File_read_at");
  }
  for (int s = 0; s < c->nbuf; s++)
    if (req[s] != MPI_REQUEST_NULL) res_mpi(r, MPI_Wait(&req[s], MPI_STATUS_IGNORE), "MPI_Wait");
}

static double timed_run(result *r, rm_run *c) {
  MPI_File fh = MPI_FILE_NULL;
  int amode = c->op == OP_WRITE ? MPI_MODE_CREATE | MPI_MODE_WRONLY : MPI_MODE_RDONLY;
  bench_barrier();
  double t0 = now();
  if (!res_mpi(r, file_open_hinted(c->mode == COLLECTIVE ? c->comm : MPI_COMM_SELF, c->path, amode, NULL, NULL, &fh),
               "MPI_File_open"))
    run_blocks(r, c, fh);
  file_close(r, &fh, "MPI_File_close");
  bench_barrier();
  return max_all(now() - t0);
}

/* This rank's file must hold the pattern for [0, size): read back and compare (untimed). */
static void verify_own(result *r, rm_run *c) {
  MPI_File fh = MPI_FILE_NULL;
  MPI_Offset size = (MPI_Offset)(c->nb * c->bs) * (c->mode == COLLECTIVE ? c->gsize : 1), fsize = 0;
  if (c->mode == COLLECTIVE && c->grank != 0) { /* the server's rank 0 checks the shared file */
    res_verified(r);
    return;
  }
  if (B.inject) corrupt_byte(c->path, size / 2 + 7); /* collective: rank 0 damages its own file */
  if (res_mpi(r, file_open(MPI_COMM_SELF, c->path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh), "MPI_File_open (verify)")) return;
  if (!res_mpi(r, MPI_File_get_size(fh, &fsize), "MPI_File_get_size") && fsize != size)
    res_mismatch(r, "%s has %lld bytes, expected %lld", c->path, (long long)fsize, (long long)size);
  size_t chunk = 4 << 20;
  unsigned char *buf = xalloc(chunk);
  for (MPI_Offset off = 0; off < size && r->status == ST_OK; off += (MPI_Offset)chunk) {
    size_t n = (size_t)(size - off) < chunk ? (size_t)(size - off) : chunk;
    if (res_mpi(r, read_full_at(fh, off, buf, n), "MPI_File_read_at (verify)")) break;
    long long bad = pat_check(buf, off, n);
    if (bad >= 0) res_mismatch(r, "%s: wrong data at offset %lld", c->path, (long long)(off + bad));
  }
  free(buf);
  file_close(r, &fh, "MPI_File_close (verify)");
  if (r->status == ST_OK) res_verified(r);
}

/* Read tests need this rank's file in place: written once, untimed. */
static void prepare_own(result *r, rm_run *c) {
  rm_run w = *c;
  w.op = OP_WRITE;
  w.mode = c->mode == COLLECTIVE ? COLLECTIVE : BLOCKING;
  timed_run(r, &w);
}

static void set_params(result *r, const rm_run *c) {
  char b1[32], b2[32];
  jo_str(&r->params, "test", op_names[c->op]);
  jo_str(&r->params, "mode", mode_names[c->mode]);
  jo_int(&r->params, "block_size", c->bs);
  jo_int(&r->params, "size_per_rank", c->nb * c->bs);
  jo_int(&r->params, "depth", c->mode == NONBLOCKING ? c->o->depth : 1);
  jo_int(&r->params, "servers", c->o->nservers);
  jo_int(&r->params, "repeat", c->o->repeat);
  res_common_params(r);
  snprintf(r->label, sizeof r->label, "%s bs=%s size=%s servers=%d depth=%lld", mode_names[c->mode],
           size_str(c->bs, b1, sizeof b1), size_str(c->nb * c->bs, b2, sizeof b2), c->o->nservers,
           c->mode == NONBLOCKING ? c->o->depth : 1);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void measure(rm_run *c) {
  result r;
  double t[1000];
  int n = 0;
  res_init(&r, "remote", op_names[c->op]);
  set_params(&r, c);
  if (c->op == OP_READ) prepare_own(&r, c);
  for (int k = 0; k < c->o->repeat && res_ok_everywhere(&r); k++) t[n++] = timed_run(&r, c);
  if (res_ok_everywhere(&r) && B.verify) verify_own(&r, c);
  res_agree(&r);
  if (r.status == ST_OK && n > 0) {
    qsort(t, (size_t)n, sizeof t[0], cmp_double);
    double bytes = (double)(c->nb * c->bs) * B.size, med = n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
    r.seconds = med;
    r.mbps = bytes / med / 1e6;
    jo_num(&r.metrics, "seconds", med);
    jo_num(&r.metrics, "mb_per_s", r.mbps);
    jo_num(&r.metrics, "mb_per_s_min", bytes / t[n - 1] / 1e6);
    jo_num(&r.metrics, "mb_per_s_max", bytes / t[0] / 1e6);
    jo_num(&r.metrics, "requests_per_s", (double)c->nb * B.size / med);
    jo_int(&r.metrics, "bytes", (long long)bytes);
    snprintf(r.note, sizeof r.note, "%.0f req/s", (double)c->nb * B.size / med);
  }
  res_emit(&r);
  if (!B.keep) {
    if (c->mode != COLLECTIVE || c->grank == 0) MPI_File_delete(c->path, MPI_INFO_NULL);
    bench_barrier();
  }
}

int remote_main(int argc, char **argv) {
  rm_opts o = {.modes = 3, .ops = 3, .repeat = 3, .size = 64LL << 20, .depth = 16, .nbs = 1, .bs = {1 << 20}};
  static const struct option longopts[] = {
      {"servers", required_argument, 0, O_SERVERS}, {"size", required_argument, 0, 's'},
      {"block-size", required_argument, 0, 'b'},    {"mode", required_argument, 0, O_MODE},
      {"op", required_argument, 0, O_OP},           {"depth", required_argument, 0, 'q'},
      {"repeat", required_argument, 0, 'r'},        COMMON_LONG_OPTS, {0, 0, 0, 0}};
  int rc = parse_options("remote", argc, argv, COMMON_SHORT "s:b:q:r:", longopts, rm_option, &o);
  if (rc) return rc;
  if (!o.nservers) split_servers(&o, B.dir);
  for (int i = 0; i < o.nbs; i++)
    if (o.bs[i] > (1LL << 30) || o.bs[i] > o.size) {
      free(o.server_list);
      return usage_error("remote", "block size %lld must be at most 1G and the size per rank", o.bs[i]);
    }
  for (int b = 0; b < o.nbs; b++)
    for (int op = 0; op < 2; op++)
      for (int m = 0; m < 3; m++) {
        if (!(o.ops & (1 << op)) || !(o.modes & (1 << m))) continue;
        rm_run c = {.o = &o, .mode = m, .op = op, .bs = o.bs[b], .nb = o.size / o.bs[b]};
        c.nbuf = m == NONBLOCKING ? (int)o.depth : 1;
        MPI_Comm_split(MPI_COMM_WORLD, B.rank % o.nservers, B.rank, &c.comm);
        MPI_Comm_rank(c.comm, &c.grank);
        MPI_Comm_size(c.comm, &c.gsize);
        if (m == COLLECTIVE)
          snprintf(c.path, sizeof c.path, "%.4000s/pario-bench-remote.shared", o.servers[B.rank % o.nservers]);
        else
          snprintf(c.path, sizeof c.path, "%.4000s/pario-bench-remote.%d", o.servers[B.rank % o.nservers], B.rank);
        c.buf = calloc((size_t)c.nbuf, sizeof *c.buf);
        c.prev = malloc(sizeof *c.prev * (size_t)c.nbuf);
        for (int s = 0; s < c.nbuf; s++) c.buf[s] = xalloc((size_t)c.bs), c.prev[s] = -1;
        measure(&c);
        MPI_Comm_free(&c.comm);
        for (int s = 0; s < c.nbuf; s++) free(c.buf[s]);
        free(c.buf);
        free(c.prev);
      }
  free(o.server_list);
  return 0;
}
