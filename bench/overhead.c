/* pario-overhead: the cost of the MPI-IO layer itself on one rank. Large contiguous
 * MPI_File_write_at/read_at throughput against pwrite/pread on the same file (page cache, best of
 * several repeats), and the per-call cost of a small write_at/read_at against the system call. */
#include "bench.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
  long long size, block, small, calls, repeat;
  const char *file;
  int keep;
} oh_opts;

typedef struct {
  MPI_File fh;
  int fd;
  unsigned char *buf;
  const oh_opts *o;
} oh_files;

static const char usage[] =
    "usage: pario-overhead [OPTIONS]   (one rank: mpiexec -n 1, or LD_PRELOAD=libpario.so)\n"
    "The cost of the MPI-IO layer against plain system calls on the same file.\n\n"
    "  -s, --size SIZE        bytes written and read per large pass (default 1G)\n"
    "  -b, --block SIZE       bytes per large call (default 8M)\n"
    "  -r, --repeat N         passes per measurement, best reported (default 5)\n"
    "      --small SIZE       bytes per small call (default 64)\n"
    "  -n, --calls N          small calls per pass (default 200000)\n"
    "  -f, --file PATH        test file (default ./pario-overhead.dat)\n"
    "      --keep             keep the test file\n"
    "  -h, --help             this help\n";

static int parse_args(int argc, char **argv, oh_opts *o) {
  static const struct option lo[] = {
      {"size", required_argument, 0, 's'}, {"block", required_argument, 0, 'b'},
      {"repeat", required_argument, 0, 'r'}, {"small", required_argument, 0, 'S'},
      {"calls", required_argument, 0, 'n'}, {"file", required_argument, 0, 'f'},
      {"keep", no_argument, 0, 'k'},      {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
  int c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "s:b:r:n:f:h", lo, NULL)) != -1) {
    int bad = 0;
    switch (c) {
      case 's': bad = (o->size = parse_size(optarg)) <= 0; break;
      case 'b': bad = (o->block = parse_size(optarg)) <= 0 || o->block > (1LL << 30); break;
      case 'S': bad = (o->small = parse_size(optarg)) <= 0 || o->small > (1 << 20); break;
      case 'r': bad = parse_int(optarg, 1, 1000, &o->repeat); break;
      case 'n': bad = parse_int(optarg, 1, 1LL << 32, &o->calls); break;
      case 'f': o->file = optarg; break;
      case 'k': o->keep = 1; break;
      case 'h': fputs(usage, stdout); return 1;
      default: bad = 1;
    }
    if (bad) {
      fprintf(stderr, "pario-overhead: bad option or value near '%s' (try --help)\n", argv[optind - 1]);
      return 2;
    }
  }
  if (o->block > o->size) o->block = o->size;
  return 0;
}

static void die(const char *what, int rc) {
  char text[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  if (rc != MPI_SUCCESS) MPI_Error_string(rc, text, &len);
  fprintf(stderr, "pario-overhead: %s failed: %s\n", what, rc != MPI_SUCCESS ? text : strerror(errno));
  MPI_Abort(MPI_COMM_WORLD, 1);
}

/* ---- the passes: one function per (layer, direction); each returns seconds ---------------- */

static double pass_mpi(oh_files *f, long long len, long long n, long long stride, int write) {
  double t0 = now();
  for (long long i = 0; i < n; i++) {
    MPI_Offset off = (MPI_Offset)((i * len) % stride);
    int rc = write ? MPI_File_write_at(f->fh, off, f->buf, (int)len, MPI_BYTE, MPI_STATUS_IGNORE)
                   : MPI_File_read_at(f->fh, off, f->buf, (int)len, MPI_BYTE, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) die(write ? "MPI_File_write_at" : "MPI_File_read_at", rc);
  }
  return now() - t0;
}

static double pass_posix(oh_files *f, long long len, long long n, long long stride, int write) {
  double t0 = now();
  for (long long i = 0; i < n; i++) {
    off_t off = (off_t)((i * len) % stride);
    ssize_t got = write ? pwrite(f->fd, f->buf, (size_t)len, off) : pread(f->fd, f->buf, (size_t)len, off);
    if (got != (ssize_t)len) die(write ? "pwrite" : "pread", MPI_SUCCESS);
  }
  return now() - t0;
}

/* Best of --repeat for MPI-IO and POSIX, alternating so that drift hits both alike. */
static void best_pair(oh_files *f, long long len, long long n, long long stride, int write, double best[2]) {
  best[0] = best[1] = 1e30;
  for (long long k = 0; k < f->o->repeat; k++) {
    double m = pass_mpi(f, len, n, stride, write), p = pass_posix(f, len, n, stride, write);
    best[0] = m < best[0] ? m : best[0];
    best[1] = p < best[1] ? p : best[1];
  }
}

static void check_content(oh_files *f) {
  unsigned char *want = malloc((size_t)f->o->block);
  if (!want) die("malloc", MPI_SUCCESS);
  memcpy(want, f->buf, (size_t)f->o->block);
  memset(f->buf, 0, (size_t)f->o->block);
  pass_mpi(f, f->o->block, 1, f->o->size, 0);
  if (memcmp(want, f->buf, (size_t)f->o->block) != 0) {
    fprintf(stderr, "pario-overhead: MPI_File_read_at returned other data than written\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  free(want);
}

static void large(oh_files *f) {
  const oh_opts *o = f->o;
  long long n = o->size / o->block;
  double w[2], r[2], mb = (double)(n * o->block) / 1e6;
  char b1[32], b2[32];
  best_pair(f, o->block, n, n * o->block, 1, w);
  check_content(f);
  best_pair(f, o->block, n, n * o->block, 0, r);
  printf("%-28s %14s %14s %12s\n", "large contiguous", "MPI-IO MB/s", "POSIX MB/s", "MPI/POSIX");
  printf("  write_at vs pwrite %6s x%-5lld %14.1f %14.1f %12.3f\n", size_str(o->block, b1, sizeof b1), n,
         mb / w[0], mb / w[1], w[1] / w[0]);
  printf("  read_at  vs pread  %6s x%-5lld %14.1f %14.1f %12.3f\n", size_str(o->block, b2, sizeof b2), n,
         mb / r[0], mb / r[1], r[1] / r[0]);
}

static void small(oh_files *f) {
  const oh_opts *o = f->o;
  long long stride = o->small * 4096; /* small calls cycle over a few cached pages */
  double w[2], r[2], k = 1e9 / (double)o->calls;
  best_pair(f, o->small, o->calls, stride, 1, w);
  best_pair(f, o->small, o->calls, stride, 0, r);
  printf("\n%-28s %14s %14s %12s\n", "small calls", "MPI-IO ns/call", "POSIX ns/call", "diff ns");
  printf("  write_at vs pwrite %6lld B x%-8lld %11.0f %14.0f %12.0f\n", o->small, o->calls, w[0] * k,
         w[1] * k, (w[0] - w[1]) * k);
  printf("  read_at  vs pread  %6lld B x%-8lld %11.0f %14.0f %12.0f\n", o->small, o->calls, r[0] * k,
         r[1] * k, (r[0] - r[1]) * k);
}

static void header(const oh_opts *o) {
  const char *(*ver)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "pario_version");
  char lib[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(lib, &len);
  lib[strcspn(lib, "\r\n")] = 0;
  printf("pario-overhead: impl %s%s%s, %s\nfile %s, best of %lld passes\n\n", ver ? "pario" : "native",
         ver ? " " : "", ver ? ver() : "", lib, o->file, o->repeat);
}

int main(int argc, char **argv) {
  oh_opts o = {.size = 1LL << 30, .block = 8LL << 20, .small = 64, .calls = 200000, .repeat = 5,
               .file = "pario-overhead.dat"};
  int rc = parse_args(argc, argv, &o);
  if (rc) return rc == 1 ? 0 : rc;
  MPI_Init(&argc, &argv);
  MPI_Comm_size(MPI_COMM_WORLD, &B.size);
  if (B.size != 1) {
    fprintf(stderr, "pario-overhead: run with one rank\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  oh_files f = {.o = &o, .buf = xalloc((size_t)(o.block > o.small ? o.block : o.small))};
  pat_fill(f.buf, 0, (size_t)o.block);
  MPI_File_delete(o.file, MPI_INFO_NULL);
  rc = file_open(MPI_COMM_SELF, o.file, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &f.fh);
  if (rc != MPI_SUCCESS) die("MPI_File_open", rc);
  if ((f.fd = open(o.file, O_RDWR)) < 0) die("open", MPI_SUCCESS);
  header(&o);
  large(&f);
  small(&f);
  close(f.fd);
  MPI_File_close(&f.fh);
  if (!o.keep) MPI_File_delete(o.file, MPI_INFO_NULL);
  free(f.buf);
  MPI_Finalize();
  return 0;
}
