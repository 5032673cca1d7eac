/* checkpoint2d: checkpoint and restart of a 2-D block-decomposed array of doubles with MPI-IO.
 * Each rank owns a block with ghost cells in memory; a subarray memory type picks the interior,
 * a subarray file view places it in the global row-major array after a small header, and
 * MPI_File_write_all / MPI_File_read_all move it. Standard MPI only. */
#define _GNU_SOURCE
#include <mpi.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { HEADER = 64 };   /* bytes: magic, NX, NY, then zeros */

typedef struct {
  long nx, ny;
  int ghost;
  const char *file;
  int keep;
  const char *expect;   /* "pario", "native" or NULL */
} opts_t;

static int me, np;

static void usage(void)
{
  if (me) return;
  printf("usage: checkpoint2d [--nx N] [--ny N] [--ghost G] [--file PATH] [--keep]\n"
         "                    [--expect pario|native]\n"
         "Writes a global NX x NY array of doubles (default 1024 x 1024), decomposed over an\n"
         "MPI_Dims_create process grid, with MPI_File_write_all through subarray types (memory:\n"
         "the block inside its G ghost cells, default 1; file: the block in the global array,\n"
         "after a %d-byte header), reads it back with MPI_File_read_all into a fresh array and\n"
         "verifies it, ghosts included, and checks the file's bytes with stdio. The file\n"
         "(default checkpoint2d.dat) is removed after a successful run unless --keep is given.\n"
         "--expect checks which library serves MPI_File_open (pario or the MPI library).\n",
         HEADER);
}

static int parse(int argc, char **argv, opts_t *o)
{
  o->nx = o->ny = 1024;
  o->ghost = 1;
  o->file = "checkpoint2d.dat";
  o->keep = 0;
  o->expect = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--nx") && v) { o->nx = atol(v); i++; }
    else if (!strcmp(a, "--ny") && v) { o->ny = atol(v); i++; }
    else if (!strcmp(a, "--ghost") && v) { o->ghost = atoi(v); i++; }
    else if (!strcmp(a, "--file") && v) { o->file = v; i++; }
    else if (!strcmp(a, "--expect") && v) { o->expect = v; i++; }
    else if (!strcmp(a, "--keep")) o->keep = 1;
    else if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(); return 1; }
    else { usage(); return 2; }
  }
  if (o->nx < 1 || o->ny < 1 || o->ghost < 0 || o->nx > (1L << 30) || o->ny > (1L << 30)) {
    if (!me) fprintf(stderr, "checkpoint2d: bad sizes\n");
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
    if (!me) fprintf(stderr, "checkpoint2d: expected MPI-IO from %s\n", expect);
    return 1;
  }
  return 0;
}

/* The value of global element (i, j): exact in a double. */
static double value(long i, long j, long ny) { return (double)(i * ny + j); }

/* Block of n elements over p parts: part c starts at *start and has *len elements. */
static void split(long n, int p, int c, long *start, long *len)
{
  long q = n / p, r = n % p;
  *len = q + (c < r);
  *start = c * q + (c < r ? c : r);
}

static int check_mpi(int rc, const char *what)
{
  if (rc == MPI_SUCCESS) return 0;
  char s[MPI_MAX_ERROR_STRING];
  int l;
  MPI_Error_string(rc, s, &l);
  fprintf(stderr, "checkpoint2d[%d]: %s: %s\n", me, what, s);
  return 1;
}

typedef struct {
  long sx, sy, lx, ly;     /* block start and size in the global array */
  int mx, my;              /* memory array with ghosts */
  MPI_Datatype memtype, filetype;
} layout_t;

static void make_layout(const opts_t *o, layout_t *L, int dims[2])
{
  int coords[2] = {me / dims[1], me % dims[1]};
  split(o->nx, dims[0], coords[0], &L->sx, &L->lx);
  split(o->ny, dims[1], coords[1], &L->sy, &L->ly);
  L->mx = (int)L->lx + 2 * o->ghost;
  L->my = (int)L->ly + 2 * o->ghost;
  int msz[2] = {L->mx, L->my}, sub[2] = {(int)L->lx, (int)L->ly}, mst[2] = {o->ghost, o->ghost};
  MPI_Type_create_subarray(2, msz, sub, mst, MPI_ORDER_C, MPI_DOUBLE, &L->memtype);
  MPI_Type_commit(&L->memtype);
  int fsz[2] = {(int)o->nx, (int)o->ny}, fst[2] = {(int)L->sx, (int)L->sy};
  MPI_Type_create_subarray(2, fsz, sub, fst, MPI_ORDER_C, MPI_DOUBLE, &L->filetype);
  MPI_Type_commit(&L->filetype);
}

/* Write the header (rank 0) and every block (collective). */
static int write_checkpoint(const opts_t *o, const layout_t *L, const double *a, double *t)
{
  MPI_File fh;
  MPI_Status st;
  int bad = 0;
  MPI_File_delete(o->file, MPI_INFO_NULL);   /* may not exist */
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  if (check_mpi(MPI_File_open(MPI_COMM_WORLD, o->file, MPI_MODE_CREATE | MPI_MODE_WRONLY,
                              MPI_INFO_NULL, &fh), "open for writing"))
    return 1;
  if (!me) {
    int64_t h[HEADER / 8] = {0x32444b4843ULL, o->nx, o->ny};   /* "CHKD2" */
    bad |= check_mpi(MPI_File_write_at(fh, 0, h, HEADER, MPI_BYTE, &st), "write header");
  }
  bad |= check_mpi(MPI_File_set_view(fh, HEADER, MPI_DOUBLE, L->filetype, "native",
                                     MPI_INFO_NULL), "set_view");
  bad |= check_mpi(MPI_File_write_all(fh, a, 1, L->memtype, &st), "write_all");
  int count;
  MPI_Get_count(&st, L->memtype, &count);
  if (!bad && count != 1) { fprintf(stderr, "checkpoint2d[%d]: write_all count %d\n", me, count); bad = 1; }
  bad |= check_mpi(MPI_File_close(&fh), "close");
  *t = MPI_Wtime() - t0;
  return bad;
}

/* Read every block back into a fresh array whose ghosts hold a sentinel, and check it. */
static int read_checkpoint(const opts_t *o, const layout_t *L, double *b, double *t)
{
  MPI_File fh;
  MPI_Status st;
  int bad = 0;
  for (long k = 0; k < (long)L->mx * L->my; k++) b[k] = -2.0;
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  if (check_mpi(MPI_File_open(MPI_COMM_WORLD, o->file, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh),
                "open for reading"))
    return 1;
  bad |= check_mpi(MPI_File_set_view(fh, HEADER, MPI_DOUBLE, L->filetype, "native",
                                     MPI_INFO_NULL), "set_view");
  bad |= check_mpi(MPI_File_read_all(fh, b, 1, L->memtype, &st), "read_all");
  bad |= check_mpi(MPI_File_close(&fh), "close");
  *t = MPI_Wtime() - t0;
  long wrong = 0;
  for (int i = 0; i < L->mx; i++)
    for (int j = 0; j < L->my; j++) {
      int in = i >= o->ghost && i < o->ghost + L->lx && j >= o->ghost && j < o->ghost + L->ly;
      double want = in ? value(L->sx + i - o->ghost, L->sy + j - o->ghost, o->ny) : -2.0;
      wrong += b[(long)i * L->my + j] != want;
    }
  if (wrong) fprintf(stderr, "checkpoint2d[%d]: %ld values wrong after read_all\n", me, wrong);
  return bad || wrong;
}

/* Rank 0 checks the file's bytes with plain stdio: header, then the global array row-major.
 * A remote name (x-rio://host:port/path) is not a local file: read_all's check stands alone. */
static int check_file(const opts_t *o)
{
  if (me || strstr(o->file, "://")) return 0;
  FILE *f = fopen(o->file, "rb");
  if (!f) { perror("checkpoint2d: fopen"); return 1; }
  int64_t h[HEADER / 8];
  long wrong = 0;
  if (fread(h, 1, HEADER, f) != HEADER || h[1] != o->nx || h[2] != o->ny) wrong++;
  double *row = malloc(sizeof(double) * (size_t)o->ny);
  for (long i = 0; i < o->nx && !wrong; i++) {
    if (fread(row, sizeof(double), (size_t)o->ny, f) != (size_t)o->ny) { wrong++; break; }
    for (long j = 0; j < o->ny; j++) wrong += row[j] != value(i, j, o->ny);
  }
  if (fgetc(f) != EOF) wrong++;
  fclose(f);
  free(row);
  if (wrong) fprintf(stderr, "checkpoint2d: the file's bytes are wrong (%ld)\n", wrong);
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
  int dims[2] = {0, 0};
  MPI_Dims_create(np, 2, dims);
  if (o.nx < dims[0] || o.ny < dims[1]) {   /* every rank needs a nonempty block */
    if (!me) fprintf(stderr, "checkpoint2d: a %d x %d process grid needs NX >= %d, NY >= %d\n",
                     dims[0], dims[1], dims[0], dims[1]);
    MPI_Finalize();
    return 2;
  }
  layout_t L;
  make_layout(&o, &L, dims);
  size_t n = (size_t)L.mx * (size_t)L.my;
  double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
  if (!a || !b) { fprintf(stderr, "checkpoint2d: out of memory\n"); MPI_Abort(MPI_COMM_WORLD, 1); }
  for (int i = 0; i < L.mx; i++)        /* interior: its global values; ghosts: -1 */
    for (int j = 0; j < L.my; j++) {
      int in = i >= o.ghost && i < o.ghost + L.lx && j >= o.ghost && j < o.ghost + L.ly;
      a[(long)i * L.my + j] = in ? value(L.sx + i - o.ghost, L.sy + j - o.ghost, o.ny) : -1.0;
    }
  double tw = 0, tr = 0;
  int bad = write_checkpoint(&o, &L, a, &tw);
  bad |= read_checkpoint(&o, &L, b, &tr);
  MPI_Barrier(MPI_COMM_WORLD);
  bad |= check_file(&o);
  MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &tw, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &tr, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  if (!me) {
    double mb = (double)o.nx * (double)o.ny * 8 / 1e6;
    printf("checkpoint2d: %ld x %ld doubles (%.1f MB) on %d ranks, process grid %d x %d, "
           "ghost %d, file %s\n", o.nx, o.ny, mb, np, dims[0], dims[1], o.ghost, o.file);
    printf("write_all %.6f s (%.1f MB/s), read_all %.6f s (%.1f MB/s), %s\n", tw,
           tw > 0 ? mb / tw : 0.0, tr, tr > 0 ? mb / tr : 0.0, bad ? "VERIFY FAILED" : "verified");
    printf("elapsed %.6f s\n", tw + tr);
  }
  if (!o.keep && !me && !bad) MPI_File_delete(o.file, MPI_INFO_NULL);
  MPI_Type_free(&L.memtype);
  MPI_Type_free(&L.filetype);
  free(a);
  free(b);
  MPI_Finalize();
  return bad ? 1 : 0;
}
