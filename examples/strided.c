/* strided: independent strided I/O with MPI-IO. The file is a sequence of blocks dealt out to
 * the ranks in turn: rank r owns blocks r, r+P, r+2P, ... It writes them with independent
 * MPI_File_write calls through a vector file view (or with MPI_File_write_at at explicit
 * offsets), reads them back independently, verifies them, and checks the file's bytes with
 * stdio. Standard MPI only. */
#define _GNU_SOURCE
#include <mpi.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  int block, count, per_call, offsets, keep;
  const char *file, *expect;
} opts_t;

static int me, np;

static void usage(void)
{
  if (me) return;
  printf("usage: strided [--block BYTES] [--count N] [--per-call K] [--offsets] [--file PATH]\n"
         "               [--keep] [--expect pario|native]\n"
         "Each of the P ranks writes N blocks (default 4096 blocks of 1024 bytes): rank r owns\n"
         "blocks r, r+P, r+2P, ... of the file. By default through a vector file view\n"
         "(MPI_Type_vector(N, BYTES, P*BYTES, MPI_BYTE) at displacement r*BYTES) with independent\n"
         "MPI_File_write calls of K blocks each (default 64); with --offsets, one\n"
         "MPI_File_write_at per block at its explicit offset. Then reads the blocks back the\n"
         "same way, verifies them, and checks the whole file with stdio. The file (default\n"
         "strided.dat) is removed after a successful run unless --keep is given. --expect\n"
         "checks which library serves MPI_File_open (pario or the MPI library).\n");
}

static int parse(int argc, char **argv, opts_t *o)
{
  o->block = 1024;
  o->count = 4096;
  o->per_call = 64;
  o->offsets = 0;
  o->keep = 0;
  o->file = "strided.dat";
  o->expect = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--block") && v) { o->block = atoi(v); i++; }
    else if (!strcmp(a, "--count") && v) { o->count = atoi(v); i++; }
    else if (!strcmp(a, "--per-call") && v) { o->per_call = atoi(v); i++; }
    else if (!strcmp(a, "--file") && v) { o->file = v; i++; }
    else if (!strcmp(a, "--expect") && v) { o->expect = v; i++; }
    else if (!strcmp(a, "--offsets")) o->offsets = 1;
    else if (!strcmp(a, "--keep")) o->keep = 1;
    else if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(); return 1; }
    else { usage(); return 2; }
  }
  if (o->block < 1 || o->count < 0 || o->per_call < 1 ||
      (double)o->block * o->count > 1e9 || (double)o->block * o->per_call > 2e9) {
    if (!me) fprintf(stderr, "strided: bad sizes\n");
    return 2;
  }
  return 0;
}

/* Which shared object provides MPI_File_open in this process (pario, or the MPI library). */
static int check_provider(const char *expect)
{
  Dl_info info;
  int (*fp)(MPI_Comm, const char *, int, MPI_Info, MPI_File *) = MPI_File_open;
  void *addr;
  memcpy(&addr, &fp, sizeof addr);
  const char *obj = dladdr(addr, &info) && info.dli_fname ? info.dli_fname : "?";
  int pario = strstr(obj, "pario") != NULL;
  if (!me) printf("MPI-IO served by %s\n", obj);
  if (expect && ((!strcmp(expect, "pario") && !pario) || (!strcmp(expect, "native") && pario))) {
    if (!me) fprintf(stderr, "strided: expected MPI-IO from %s\n", expect);
    return 1;
  }
  return 0;
}

/* Byte i of global block g. */
static unsigned char content(long g, long i)
{
  return (unsigned char)(g * 131 + (g >> 8) * 17 + i * 7 + 1);
}

static int check_mpi(int rc, const char *what)
{
  if (rc == MPI_SUCCESS) return 0;
  char s[MPI_MAX_ERROR_STRING];
  int l;
  MPI_Error_string(rc, s, &l);
  fprintf(stderr, "strided[%d]: %s: %s\n", me, what, s);
  return 1;
}

/* Move this rank's blocks (buf holds them back to back) with independent calls. */
static int transfer(const opts_t *o, MPI_File fh, char *buf, int write)
{
  int bad = 0;
  MPI_Status st;
  if (o->offsets) {
    for (long k = 0; k < o->count && !bad; k++) {
      MPI_Offset off = ((MPI_Offset)k * np + me) * o->block;
      char *b = buf + k * o->block;
      bad |= check_mpi(write ? MPI_File_write_at(fh, off, b, o->block, MPI_BYTE, &st)
                             : MPI_File_read_at(fh, off, b, o->block, MPI_BYTE, &st),
                       write ? "write_at" : "read_at");
    }
    return bad;
  }
  bad |= check_mpi(MPI_File_seek(fh, 0, MPI_SEEK_SET), "seek");
  for (long k = 0; k < o->count && !bad; k += o->per_call) {
    long nblk = o->count - k < o->per_call ? o->count - k : o->per_call;
    int n = (int)(nblk * o->block), got;
    char *b = buf + k * o->block;
    bad |= check_mpi(write ? MPI_File_write(fh, b, n, MPI_BYTE, &st)
                           : MPI_File_read(fh, b, n, MPI_BYTE, &st), write ? "write" : "read");
    MPI_Get_count(&st, MPI_BYTE, &got);
    if (!bad && got != n) {
      fprintf(stderr, "strided[%d]: %s moved %d of %d bytes\n", me, write ? "write" : "read",
              got, n);
      bad = 1;
    }
  }
  return bad;
}

/* Open, set the view (vector of this rank's blocks, or the default byte view for offsets),
 * transfer, close. Returns the time taken. */
static int phase(const opts_t *o, char *buf, int write, double *t)
{
  MPI_File fh;
  int bad = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  int amode = write ? MPI_MODE_CREATE | MPI_MODE_WRONLY : MPI_MODE_RDONLY;
  if (check_mpi(MPI_File_open(MPI_COMM_WORLD, o->file, amode, MPI_INFO_NULL, &fh), "open"))
    return 1;
  if (!o->offsets) {
    MPI_Datatype ft;
    MPI_Type_vector(o->count ? o->count : 1, o->block, o->block * np, MPI_BYTE, &ft);
    MPI_Type_commit(&ft);
    bad |= check_mpi(MPI_File_set_view(fh, (MPI_Offset)me * o->block, MPI_BYTE, ft, "native",
                                       MPI_INFO_NULL), "set_view");
    MPI_Type_free(&ft);   /* the view keeps what it needs */
  }
  if (!bad) bad |= transfer(o, fh, buf, write);
  bad |= check_mpi(MPI_File_close(&fh), "close");
  *t = MPI_Wtime() - t0;
  return bad;
}

/* Rank 0 checks every byte of the file with stdio. */
static int check_file(const opts_t *o)
{
  if (me) return 0;
  FILE *f = fopen(o->file, "rb");
  if (!f) { perror("strided: fopen"); return 1; }
  long wrong = 0, nblocks = (long)o->count * np;
  unsigned char *b = malloc((size_t)o->block);
  for (long g = 0; g < nblocks && !wrong; g++) {
    if (fread(b, 1, (size_t)o->block, f) != (size_t)o->block) { wrong++; break; }
    for (long i = 0; i < o->block; i++) wrong += b[i] != content(g, i);
  }
  if (fgetc(f) != EOF) wrong++;
  fclose(f);
  free(b);
  if (wrong) fprintf(stderr, "strided: the file's bytes are wrong\n");
  return wrong != 0;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  opts_t o;
  int rc = parse(argc, argv, &o);
  if (rc) { MPI_Finalize(); return rc == 1 ? 0 : 2; }
  if (check_provider(o.expect)) { MPI_Finalize(); return 3; }
  size_t n = (size_t)o.block * (size_t)o.count;
  char *buf = malloc(n + 1), *back = malloc(n + 1);
  if (!buf || !back) { fprintf(stderr, "strided: out of memory\n"); MPI_Abort(MPI_COMM_WORLD, 1); }
  for (long k = 0; k < o.count; k++)
    for (long i = 0; i < o.block; i++) buf[k * o.block + i] = (char)content(k * np + me, i);
  memset(back, 0, n);
  if (!me) MPI_File_delete(o.file, MPI_INFO_NULL);   /* may not exist */
  double tw = 0, tr = 0;
  int bad = phase(&o, buf, 1, &tw);
  bad |= phase(&o, back, 0, &tr);
  if (memcmp(buf, back, n)) { fprintf(stderr, "strided[%d]: read back wrong data\n", me); bad = 1; }
  MPI_Barrier(MPI_COMM_WORLD);
  bad |= check_file(&o);
  MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &tw, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &tr, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  if (!me) {
    double mb = (double)n * np / 1e6;
    printf("strided: %d ranks x %d blocks of %d bytes (%.1f MB), %s, file %s\n", np, o.count,
           o.block, mb, o.offsets ? "MPI_File_write_at/read_at per block at explicit offsets"
                                  : "vector view, MPI_File_write/read", o.file);
    printf("write %.6f s (%.1f MB/s), read %.6f s (%.1f MB/s), %s\n", tw, tw > 0 ? mb / tw : 0.0,
           tr, tr > 0 ? mb / tr : 0.0, bad ? "VERIFY FAILED" : "verified");
    printf("elapsed %.6f s\n", tw + tr);
    if (!o.keep && !bad) MPI_File_delete(o.file, MPI_INFO_NULL);
  }
  free(buf);
  free(back);
  MPI_Finalize();
  return bad ? 1 : 0;
}
