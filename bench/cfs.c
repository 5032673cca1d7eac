/* pario-bench cfs: Nitzberg's iPSC/860 Concurrent File System tests (seed 002): broadcast read,
 * partitioned and interleaved read/write with block sizes 4 KiB-1 MiB, the section 4 timing
 * method (best of --repeat, maximum over ranks), preallocation, and section 7's grouping. */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { BCAST_READ, PART_READ, PART_WRITE, INTER_READ, INTER_WRITE, NTESTS };
static const char *const test_names[NTESTS] = {"broadcast-read", "partitioned-read",
                                               "partitioned-write", "interleaved-read",
                                               "interleaved-write"};
static const char *const api_names[] = {"mpiio", "posix"};
#define MAX_BS 32

typedef struct {
  int tests, nbs, groups, posix, prealloc, repeat;
  long long bs[MAX_BS], file_size;
} cfs_opts;

const char cfs_usage[] =
    "usage: pario-bench cfs [OPTIONS]\n"
    "Nitzberg's CFS tests (seed 002): broadcast-read, partitioned-read/-write,\n"
    "interleaved-read/-write. Time = open + I/O + close between barriers, maximum over ranks,\n"
    "best of --repeat runs.\n\n"
    "  -t, --test LIST        tests (default all: broadcast-read,partitioned-read,\n"
    "                         partitioned-write,interleaved-read,interleaved-write)\n"
    "  -b, --block-size LIST  bytes per I/O call (default 4K,64K,1M)\n"
    "  -s, --file-size SIZE   file size (default 64M)\n"
    "  -g, --groups G         at most one rank per group has I/O in flight (default 0 = off)\n"
    "      --api A            mpiio (default) or posix\n"
    "      --preallocate      preallocate files before write tests (untimed)\n"
    "  -r, --repeat N         runs per measurement, best reported (default 3)\n" COMMON_HELP;

enum { O_API = OPT_SUITE0, O_PREALLOC };

static int cfs_option(int c, const char *arg, void *ctx) {
  cfs_opts *o = ctx;
  long long v;
  switch (c) {
    case 't':
      if ((o->tests = parse_choice_list(arg, test_names, NTESTS)) < 0)
        return usage_error("cfs", "bad test list '%s'", arg);
      return 0;
    case 'b':
      if ((o->nbs = parse_size_list(arg, o->bs, MAX_BS)) < 0)
        return usage_error("cfs", "bad block size list '%s'", arg);
      return 0;
    case 's':
      if ((o->file_size = parse_size(arg)) <= 0) return usage_error("cfs", "bad file size '%s'", arg);
      return 0;
    case 'g':
      if (parse_int(arg, 0, 1 << 20, &v)) return usage_error("cfs", "bad group count '%s'", arg);
      o->groups = (int)v;
      return 0;
    case 'r':
      if (parse_int(arg, 1, 1000, &v)) return usage_error("cfs", "bad repeat count '%s'", arg);
      o->repeat = (int)v;
      return 0;
    case O_API:
      if ((o->posix = choice_index(arg, api_names, 2)) < 0)
        return usage_error("cfs", "bad api '%s' (mpiio or posix)", arg);
      return 0;
    case O_PREALLOC: o->prealloc = 1; return 0;
    default: return usage_error("cfs", "unknown option");
  }
}

/* ---- which blocks a rank touches -------------------------------------------------------- */

static long long my_ops(int test, long long nb) {
  long long p = B.size, r = B.rank;
  if (test == BCAST_READ) return nb;
  if (test == PART_READ || test == PART_WRITE) return nb * (r + 1) / p - nb * r / p;
  return r < nb ? (nb - r + p - 1) / p : 0;
}

static long long block_of(int test, long long i, long long nb) {
  long long p = B.size, r = B.rank;
  if (test == BCAST_READ) return i;
  if (test == PART_READ || test == PART_WRITE) return nb * r / p + i;
  return r + i * p;
}

static int is_write(int test) { return test == PART_WRITE || test == INTER_WRITE; }

/* ---- groups: a token ring per group limits the I/O calls in flight (section 7) ----------- */

typedef struct { MPI_Comm comm; int idx, n; } group;

static void group_init(group *g, int groups) {
  g->comm = MPI_COMM_NULL;
  g->idx = 0;
  g->n = 1;
  if (groups <= 0 || groups >= B.size) return;
  MPI_Comm_split(MPI_COMM_WORLD, B.rank % groups, B.rank, &g->comm);
  MPI_Comm_rank(g->comm, &g->idx);
  MPI_Comm_size(g->comm, &g->n);
}

static void group_free(group *g) {
  if (g->comm != MPI_COMM_NULL) MPI_Comm_free(&g->comm);
}

static long long group_max(const group *g, long long ops) {
  long long m = ops;
  if (g->comm != MPI_COMM_NULL) MPI_Allreduce(&ops, &m, 1, MPI_LONG_LONG, MPI_MAX, g->comm);
  return m;
}

static void token_wait(const group *g, long long i) {
  if (g->n > 1 && (i > 0 || g->idx > 0))
    MPI_Recv(NULL, 0, MPI_BYTE, (g->idx + g->n - 1) % g->n, 5, g->comm, MPI_STATUS_IGNORE);
}

static void token_pass(const group *g, long long i, long long maxops) {
  if (g->n > 1 && !(i == maxops - 1 && g->idx == g->n - 1))
    MPI_Send(NULL, 0, MPI_BYTE, (g->idx + 1) % g->n, 5, g->comm);
}

/* ---- the I/O back ends: MPI-IO or POSIX ------------------------------------------------- */

typedef struct { int posix, fd; MPI_File fh; } cfs_io;

static void io_open(result *r, cfs_io *io, const char *path, int write) {
  io->fd = -1;
  io->fh = MPI_FILE_NULL;
  if (!io->posix) {
    int amode = write ? MPI_MODE_CREATE | MPI_MODE_WRONLY : MPI_MODE_RDONLY;
    res_mpi(r, file_open_hinted(MPI_COMM_WORLD, path, amode, NULL, NULL, &io->fh), "MPI_File_open");
    return;
  }
  io->fd = open(path, write ? O_WRONLY | O_CREAT : O_RDONLY, 0644);
  if (io->fd < 0) res_fail(r, "open %s: %s", path, strerror(errno));
}

static void io_close(result *r, cfs_io *io) {
  if (!io->posix) {
    file_close(r, &io->fh, "MPI_File_close");
  } else if (io->fd >= 0) {
    if (close(io->fd) != 0) res_fail(r, "close: %s", strerror(errno));
    io->fd = -1;
  }
}

static void io_xfer(result *r, cfs_io *io, MPI_Offset off, unsigned char *buf, size_t len, int write) {
  if (io->posix) {
    if (io->fd >= 0) posix_xfer(r, io->fd, off, buf, len, write);
    return;
  }
  if (io->fh == MPI_FILE_NULL) return;
  MPI_Status st;
  int rc = write ? MPI_File_write_at(io->fh, off, buf, (int)len, MPI_BYTE, &st)
                 : MPI_File_read_at(io->fh, off, buf, (int)len, MPI_BYTE, &st);
  if (res_mpi(r, rc, write ? "MPI_File_write_at" : "MPI_File_read_at")) return;
  int got = 0;
  MPI_Get_count(&st, MPI_BYTE, &got);
  if (got != (int)len) res_fail(r, "short %s at %lld: %d of %zu bytes", write ? "write" : "read",
                                (long long)off, got, len);
}

/* ---- one measurement -------------------------------------------------------------------- */

typedef struct {
  const cfs_opts *o;
  int test, check; /* check: verify every block read (the untimed verification pass) */
  long long bs, nb;
  const char *path;
  unsigned char *buf;
  group g;
} cfs_run;

/* The blocks of this rank, in order, within the group's token ring. */
static void run_blocks(result *r, cfs_run *c, cfs_io *io) {
  long long ops = my_ops(c->test, c->nb), maxops = group_max(&c->g, ops);
  int write = is_write(c->test);
  MPI_Offset prev = -1;
  for (long long i = 0; i < maxops; i++) {
    token_wait(&c->g, i);
    if (i < ops && r->status == ST_OK) {
      MPI_Offset off = (MPI_Offset)block_of(c->test, i, c->nb) * c->bs;
      if (write) pat_prepare(c->buf, off, (size_t)c->bs, &prev);
      io_xfer(r, io, off, c->buf, (size_t)c->bs, write);
      long long bad = c->check && r->status == ST_OK ? pat_check(c->buf, off, (size_t)c->bs) : -1;
      if (bad >= 0) res_mismatch(r, "%s: wrong data read at offset %lld", c->path, (long long)(off + bad));
    }
    token_pass(&c->g, i, maxops);
  }
}

/* Section 4: synchronise, start, open, I/O, close, synchronise, stop; max over ranks. */
static double timed_run(result *r, cfs_run *c) {
  cfs_io io = {.posix = c->o->posix};
  bench_barrier();
  double t0 = now();
  io_open(r, &io, c->path, is_write(c->test));
  run_blocks(r, c, &io);
  io_close(r, &io);
  bench_barrier();
  return max_all(now() - t0);
}

static void preallocate(result *r, const cfs_run *c) {
  MPI_Offset size = (MPI_Offset)(c->nb * c->bs);
  if (!c->o->posix) {
    MPI_File fh;
    if (res_mpi(r, file_open_hinted(MPI_COMM_WORLD, c->path, MPI_MODE_CREATE | MPI_MODE_WRONLY,
                                    NULL, NULL, &fh), "MPI_File_open (preallocate)"))
      return;
    res_mpi(r, MPI_File_preallocate(fh, size), "MPI_File_preallocate");
    file_close(r, &fh, "MPI_File_close (preallocate)");
    return;
  }
  if (B.rank == 0) {
    int fd = open(c->path, O_WRONLY | O_CREAT, 0644), err = fd < 0 ? errno : 0;
    if (fd >= 0) err = posix_fallocate(fd, 0, (off_t)size);
    if (fd >= 0) close(fd);
    if (err) res_fail(r, "posix_fallocate %s: %s", c->path, strerror(err));
  }
  bench_barrier();
}

/* Best of --repeat timed runs; write tests start each run from a fresh (or preallocated) file. */
static double best_of(result *r, cfs_run *c, double *worst) {
  double best = -1;
  *worst = 0;
  for (int k = 0; k < c->o->repeat; k++) {
    if (is_write(c->test)) {
      file_remove(c->path);
      if (c->o->prealloc) preallocate(r, c);
    }
    double t = r->status == ST_OK ? timed_run(r, c) : 0;
    if (!res_ok_everywhere(r)) return -1;
    if (best < 0 || t < best) best = t;
    if (t > *worst) *worst = t;
  }
  return best;
}

static void verify(result *r, cfs_run *c) {
  MPI_Offset size = (MPI_Offset)(c->nb * c->bs);
  if (B.inject) corrupt_byte(c->path, size / 2 + 13);
  if (is_write(c->test)) {
    pat_verify_file(r, c->path, size, NULL, NULL);
    return;
  }
  c->check = 1; /* read tests: the same access pattern once more, untimed, checking each block */
  timed_run(r, c);
  c->check = 0;
  if (r->status == ST_OK) res_verified(r);
}

static void set_params(result *r, const cfs_run *c) {
  char b1[32], b2[32];
  const cfs_opts *o = c->o;
  jo_str(&r->params, "test", test_names[c->test]);
  jo_int(&r->params, "block_size", c->bs);
  jo_int(&r->params, "file_size", c->nb * c->bs);
  jo_int(&r->params, "groups", o->groups);
  jo_str(&r->params, "api", api_names[o->posix]);
  jo_bool(&r->params, "preallocate", o->prealloc);
  jo_int(&r->params, "repeat", o->repeat);
  res_common_params(r);
  snprintf(r->label, sizeof r->label, "bs=%s file=%s groups=%d %s%s", size_str(c->bs, b1, sizeof b1),
           size_str(c->nb * c->bs, b2, sizeof b2), o->groups, api_names[o->posix],
           o->prealloc && is_write(c->test) ? " prealloc" : "");
}

static void measure(cfs_run *c) {
  result r;
  res_init(&r, "cfs", test_names[c->test]);
  set_params(&r, c);
  if (!is_write(c->test)) pat_write_file(&r, c->path, (MPI_Offset)(c->nb * c->bs));
  double worst = 0, best = res_ok_everywhere(&r) ? best_of(&r, c, &worst) : -1;
  if (best >= 0 && B.verify) verify(&r, c);
  res_agree(&r);
  if (r.status == ST_OK) {
    double bytes = (double)(c->nb * c->bs) * (c->test == BCAST_READ ? B.size : 1);
    r.seconds = best;
    r.mbps = bytes / best / 1e6;
    jo_num(&r.metrics, "seconds", best);
    jo_num(&r.metrics, "mb_per_s", r.mbps);
    jo_int(&r.metrics, "bytes", (long long)bytes);
    jo_num(&r.metrics, "worst_seconds", worst);
  }
  res_emit(&r);
  if (!B.keep) file_remove(c->path);
}

int cfs_main(int argc, char **argv) {
  cfs_opts o = {.tests = (1 << NTESTS) - 1, .nbs = 3, .bs = {4096, 65536, 1048576},
                .file_size = 64LL << 20, .repeat = 3};
  static const struct option longopts[] = {
      {"test", required_argument, 0, 't'},      {"block-size", required_argument, 0, 'b'},
      {"file-size", required_argument, 0, 's'}, {"groups", required_argument, 0, 'g'},
      {"repeat", required_argument, 0, 'r'},    {"api", required_argument, 0, O_API},
      {"preallocate", no_argument, 0, O_PREALLOC}, COMMON_LONG_OPTS, {0, 0, 0, 0}};
  int rc = parse_options("cfs", argc, argv, COMMON_SHORT "t:b:s:g:r:", longopts, cfs_option, &o);
  if (rc) return rc;
  for (int i = 0; i < o.nbs; i++)
    if (o.bs[i] > (1LL << 30) || o.bs[i] > o.file_size)
      return usage_error("cfs", "block size %lld must be at most 1G and the file size", o.bs[i]);
  char path[4096];
  test_path(path, sizeof path, "cfs.dat");
  for (int b = 0; b < o.nbs; b++) {
    for (int t = 0; t < NTESTS; t++) {
      if (!(o.tests & (1 << t))) continue;
      cfs_run c = {.o = &o, .test = t, .bs = o.bs[b], .nb = o.file_size / o.bs[b], .path = path};
      c.buf = xalloc((size_t)c.bs);
      group_init(&c.g, o.groups);
      measure(&c);
      group_free(&c.g);
      free(c.buf);
    }
  }
  return 0;
}
