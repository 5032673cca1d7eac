/* The HDF5-like loop of issue 34 under the collective-counting tool below pario (below.c):
 * every H5Dwrite of HDF5's MPI-IO driver sets a derived view (with the file's info), calls
 * MPI_File_write_at_all and resets the view to bytes. Each rank writes 1 KiB per iteration in
 * 64-byte blocks interleaved with the other ranks' (one slab per iteration), first with the
 * view reset around every write, then with one view set once; the tool's counts give the
 * collectives pario made per iteration (after warm-up iterations). Under pario the reset loop
 * must make at most LIMIT per iteration. Then rank 0 reads the file back: every byte must be
 * the pattern both loops wrote. With "fresh", every iteration of the reset loop uses a filetype
 * not seen before (its extent differs; the bytes it writes do not), so every one exchanges
 * views: the metadata figures of issue 34 (bytes received per iteration and peak memory, the
 * maximum and mean over ranks).
 * usage: viewloop pario|native FILE ITERATIONS LIMIT [fresh] */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/resource.h>

#include <mpi.h>

enum { BLOCK = 64, PIECE = 1024, WARM = 3 };
static int me, np;

static void die(const char *what, int rc) {
  char s[MPI_MAX_ERROR_STRING];
  int n = 0;
  MPI_Error_string(rc, s, &n);
  fprintf(stderr, "viewloop[%d]: %s: %s\n", me, what, s);
  MPI_Abort(MPI_COMM_WORLD, 1);
}
#define CHK(what, call)                      \
  do {                                       \
    int rc_ = (call);                        \
    if (rc_ != MPI_SUCCESS) die(what, rc_);  \
  } while (0)

static unsigned char byte_at(long long off, int loop) { return (unsigned char)(off * 131 + off / 251 + loop * 7); }

static long (*count)(const char *), (*bytes)(void);
static int fresh;
static const char *(*cname)(int);

/* This rank's bytes of iteration i, for loop (0 reset, 1 once). */
static void fill(unsigned char *b, long long i, int loop) {
  for (int j = 0; j < PIECE / BLOCK; j++)
    for (int k = 0; k < BLOCK; k++)
      b[j * BLOCK + k] = byte_at(i * PIECE * np + ((long long)j * np + me) * BLOCK + k, loop);
}

/* Runs iterations [from, to) of a loop; returns the collectives pario made in them. */
static long run(MPI_File fh, MPI_Datatype ft, MPI_Info info, int loop, long long from, long long to, long *per) {
  unsigned char b[PIECE];
  long before[64];
  for (int i = 0; cname && cname(i) && i < 64; i++) before[i] = count(cname(i));
  long t0 = count ? count("total") : 0;
  for (long long i = from; i < to; i++) {
    fill(b, i, loop);
    MPI_Offset mine = (MPI_Offset)me * BLOCK;
    MPI_Datatype t = ft;
    if (fresh && loop == 0) /* one tile's data is the write: the extent moves no byte */
      MPI_Type_create_resized(ft, 0, (MPI_Aint)PIECE * np + 64 * (i + 1), &t), MPI_Type_commit(&t);
    if (loop == 0) {
      CHK("set_view", MPI_File_set_view(fh, i * PIECE * np + mine, MPI_BYTE, t, "native", info));
      if (t != ft) MPI_Type_free(&t);
      CHK("write_at_all", MPI_File_write_at_all(fh, 0, b, PIECE, MPI_BYTE, MPI_STATUS_IGNORE));
      CHK("set_view (reset)", MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", info));
    } else {
      CHK("write_at_all", MPI_File_write_at_all(fh, i * PIECE, b, PIECE, MPI_BYTE, MPI_STATUS_IGNORE));
    }
  }
  for (int i = 0; cname && cname(i) && i < 64; i++) per[i] = count(cname(i)) - before[i];
  return count ? count("total") - t0 : 0;
}

static void show(const char *what, long total, const long *per, long long n) {
  if (me != 0) return;
  printf("viewloop: %s: %.2f collectives per iteration (", what, (double)total / (double)n);
  for (int i = 0; cname && cname(i); i++)
    if (per[i]) printf(" %s %.2f", cname(i), (double)per[i] / (double)n);
  printf(" )\n");
}

int main(int argc, char **argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  if (argc != 5 && !(argc == 6 && !strcmp(argv[5], "fresh"))) {
    if (me == 0) fprintf(stderr, "usage: viewloop pario|native FILE ITERATIONS LIMIT [fresh]\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int pario = !strcmp(argv[1], "pario");
  long long n = atoll(argv[3]);
  double limit = atof(argv[4]);
  *(void **)&count = dlsym(RTLD_DEFAULT, "pario_below_count");
  *(void **)&cname = dlsym(RTLD_DEFAULT, "pario_below_name");
  *(void **)&bytes = dlsym(RTLD_DEFAULT, "pario_below_bytes");
  fresh = argc == 6;
  if (!count || !cname) {
    if (me == 0) fprintf(stderr, "viewloop: the counting tool (below.so) is not preloaded\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (pario != (dlsym(RTLD_DEFAULT, "pario_version") != NULL)) {
    if (me == 0) fprintf(stderr, "viewloop: pario %s loaded, mode %s\n", pario ? "is not" : "is", argv[1]);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Datatype v, ft;
  MPI_Type_vector(PIECE / BLOCK, BLOCK, BLOCK * np, MPI_BYTE, &v);
  MPI_Type_create_resized(v, 0, (MPI_Aint)PIECE * np, &ft);
  MPI_Type_commit(&ft);
  MPI_Type_free(&v);
  MPI_Info info; /* HDF5 passes its file's info at every set_view: here a hint at its default */
  MPI_Info_create(&info);
  MPI_Info_set(info, "cb_buffer_size", "16777216");
  MPI_File fh;
  long per[2][64] = {{0}}, tot[2];
  const char *names[2] = {"reset", "once"};
  for (int loop = 0; loop < 2; loop++) {
    char path[4096];
    snprintf(path, sizeof path, "%s.%s", argv[2], names[loop]);
    CHK("open", MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh));
    if (loop == 1) CHK("set_view", MPI_File_set_view(fh, (MPI_Offset)me * BLOCK, MPI_BYTE, ft, "native", info));
    run(fh, ft, info, loop, 0, WARM, per[loop]);
    long b0 = bytes ? bytes() : 0;
    tot[loop] = run(fh, ft, info, loop, WARM, WARM + n, per[loop]);
    double got[2] = {bytes ? (double)(bytes() - b0) / (double)n : 0, 0}, mx, sum;
    CHK("close", MPI_File_close(&fh));
    show(names[loop], tot[loop], per[loop], n);
    MPI_Reduce(&got[0], &mx, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&got[0], &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (me == 0)
      printf("viewloop: %s%s: bytes received per iteration per rank: max %.0f, mean %.0f\n", names[loop],
             fresh && loop == 0 ? " (fresh views)" : "", mx, sum / np);
    /* rank 0 reads the file back */
    int bad = 0;
    if (me == 0) {
      long long size = (WARM + n) * PIECE * np;
      unsigned char *all = malloc((size_t)size);
      CHK("open (check)", MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
      CHK("read", MPI_File_read_at(fh, 0, all, (int)size, MPI_BYTE, MPI_STATUS_IGNORE));
      CHK("close (check)", MPI_File_close(&fh));
      for (long long k = 0; k < size && !bad; k++)
        if (all[k] != byte_at(k, loop)) {
          fprintf(stderr, "viewloop: %s: byte %lld is %u, want %u\n", names[loop], k, all[k], byte_at(k, loop));
          bad = 1;
        }
      free(all);
      MPI_File_delete(path, MPI_INFO_NULL);
    }
    MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (bad) MPI_Abort(MPI_COMM_WORLD, 1);
  }
  double got = (double)tot[0] / (double)n;
  if (me == 0) printf("viewloop: data checked; reset loop %.2f collectives per iteration%s\n", got,
                      pario ? "" : " (native: what the MPI's own MPI-IO calls through PMPI_ names)");
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  long rss = ru.ru_maxrss, rmax, rsum;
  MPI_Reduce(&rss, &rmax, 1, MPI_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
  MPI_Reduce(&rss, &rsum, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (me == 0) printf("viewloop: peak RSS per rank: max %ld KiB, mean %ld KiB\n", rmax, rsum / np);
  int fail = pario && !fresh && got > limit;
  if (fail && me == 0) fprintf(stderr, "viewloop: %.2f collectives per iteration, limit %.2f\n", got, limit);
  MPI_Info_free(&info);
  MPI_Type_free(&ft);
  MPI_Finalize();
  return fail;
}
