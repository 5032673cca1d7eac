/* pario-disk-writers: does a second direct writer add bandwidth on this disk? Threads each
 * write one block with a single O_DIRECT pwrite, all at once after a barrier, in five cases,
 * alternating within each round with sync and a pause before every run: one writer alone; two
 * into one fresh file (adjacent blocks, as pario-bench overlap's two ranks write); two into two
 * separate fresh files; two into one file preallocated with fallocate; two into blocks already
 * written (overwrite). Prints per case the median (min-max) aggregate GB/s: the bytes over the
 * slowest writer's time. docs/measuring.md ("Is the 2-rank limit the file's or the disk's?")
 * has the figures. No MPI: plain system calls, to bound what any MPI-IO can get. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { ONE, ONEFILE, TWOFILES, PREALLOC, OVERWRITE, NCASES };
static const char *const names[NCASES] = {"one", "onefile", "twofiles", "prealloc", "overwrite"};

static size_t blk = 64 << 20;
static char *buf, paths[2][4096];
static int fds[2];
static pthread_barrier_t start;
static double t0, tend[2];
static volatile sig_atomic_t stop;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void die(const char *what, const char *path) {
  fprintf(stderr, "pario-disk-writers: %s %s: %s\n", what, path, strerror(errno));
  unlink(paths[0]);
  unlink(paths[1]);
  exit(1);
}

typedef struct { int fd; off_t off; int i; } job;

static void *writer(void *a) {
  job *j = a;
  pthread_barrier_wait(&start);
  if (j->i == 0) t0 = now();
  pthread_barrier_wait(&start);
  if (pwrite(j->fd, buf, blk, j->off) != (ssize_t)blk) die("pwrite", paths[j->fd == fds[1]]);
  tend[j->i] = now();
  return NULL;
}

static int open_direct(const char *p) {
  int fd = open(p, O_WRONLY | O_CREAT | O_DIRECT | O_CLOEXEC, 0644);
  if (fd < 0) die("open (O_DIRECT)", p);
  return fd;
}

/* One run of case c: the aggregate GB/s. */
static double run(int c) {
  unlink(paths[0]);
  unlink(paths[1]);
  fds[0] = open_direct(paths[0]);
  fds[1] = c == TWOFILES ? open_direct(paths[1]) : fds[0];
  if (c == PREALLOC && fallocate(fds[0], 0, 0, (off_t)(2 * blk)) != 0) die("fallocate", paths[0]);
  if (c == OVERWRITE)
    for (int k = 0; k < 2; k++)
      if (pwrite(fds[0], buf, blk, (off_t)(k * blk)) != (ssize_t)blk) die("pwrite", paths[0]);
  sync();
  sleep(1);
  int n = c == ONE ? 1 : 2;
  job jobs[2] = {{fds[0], 0, 0}, {fds[1], c == TWOFILES ? 0 : (off_t)blk, 1}};
  pthread_t th[2];
  pthread_barrier_init(&start, NULL, (unsigned)n);
  for (int i = 0; i < n; i++) pthread_create(&th[i], NULL, writer, &jobs[i]);
  for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
  pthread_barrier_destroy(&start);
  double t = tend[0] - t0;
  if (n == 2 && tend[1] - t0 > t) t = tend[1] - t0;
  close(fds[0]);
  if (fds[1] != fds[0]) close(fds[1]);
  return (double)n * (double)blk / t / 1e9;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void on_signal(int s) {
  (void)s;
  stop = 1;
}

static const char usage[] =
    "usage: pario-disk-writers [-d DIR] [-r ROUNDS] [-s MIB]\n"
    "Does a second O_DIRECT writer add bandwidth on the disk under DIR? Five cases per round\n"
    "(one writer; two into one fresh file; two into separate fresh files; two into a file\n"
    "preallocated with fallocate; two over written blocks), sync and 1 s before each run;\n"
    "prints each case's median (min-max) aggregate GB/s.\n"
    "  -d, --dir DIR      where the files go (default .; removed afterwards)\n"
    "  -r, --rounds N     rounds (default 5)\n"
    "  -s, --size MIB     block per writer in MiB (default 64)\n"
    "  -h, --help         this help\n"
    "      --version      the version\n";

int main(int argc, char **argv) {
  const char *dir = ".";
  int rounds = 5;
  static const struct option lo[] = {{"dir", required_argument, 0, 'd'}, {"rounds", required_argument, 0, 'r'},
                                     {"size", required_argument, 0, 's'}, {"help", no_argument, 0, 'h'},
                                     {"version", no_argument, 0, 'V'},   {0, 0, 0, 0}};
  for (int o; (o = getopt_long(argc, argv, "d:r:s:h", lo, NULL)) != -1;) {
    switch (o) {
      case 'd': dir = optarg; break;
      case 'r': rounds = atoi(optarg); break;
      case 's': blk = (size_t)atol(optarg) << 20; break;
      case 'h': fputs(usage, stdout); return 0;
      case 'V': puts("pario-disk-writers (pario)"); return 0;
      default: fputs("pario-disk-writers: bad option (try --help)\n", stderr); return 2;
    }
  }
  if (rounds < 1 || rounds > 1000 || blk < (1 << 20) || blk > ((size_t)1 << 32)) {
    fputs("pario-disk-writers: rounds 1..1000, size 1..4096 MiB\n", stderr);
    return 2;
  }
  snprintf(paths[0], sizeof paths[0], "%s/.pario-disk-writers.%d.0", dir, (int)getpid());
  snprintf(paths[1], sizeof paths[1], "%s/.pario-disk-writers.%d.1", dir, (int)getpid());
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  if (posix_memalign((void **)&buf, 4096, blk) != 0) {
    fputs("pario-disk-writers: out of memory\n", stderr);
    return 1;
  }
  memset(buf, 7, blk);
  double *v = calloc((size_t)(NCASES * rounds), sizeof *v);
  int done = 0;
  for (int r = 0; r < rounds && !stop; r++, done++) {
    for (int c = 0; c < NCASES && !stop; c++) v[c * rounds + r] = run(c);
    fprintf(stderr, "round %d of %d\n", r + 1, rounds);
  }
  unlink(paths[0]);
  unlink(paths[1]);
  if (stop) {
    fputs("pario-disk-writers: interrupted\n", stderr);
    return 130;
  }
  for (int c = 0; c < NCASES; c++) {
    double *x = v + c * rounds;
    qsort(x, (size_t)done, sizeof *x, cmp);
    double med = done % 2 ? x[done / 2] : (x[done / 2 - 1] + x[done / 2]) / 2;
    printf("%-10s GB/s %.2f (%.2f-%.2f)\n", names[c], med, x[0], x[done - 1]);
  }
  free(v);
  free(buf);
  return 0;
}
