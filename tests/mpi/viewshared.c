/* Shared file pointers across set_views whose agreement is deferred (docs/collective.md
 * "Deferred set_view"), one component forced (argv[1]: sm | lockedfile | rma | addproc |
 * individual | auto); argv[2]: seed; argv[3]: steps of the random sequence (0: none); argv[4]
 * (optional): the path of the random sequence's file, kept for the comparison with the native
 * MPI-IO (viewshared-diff.sh), else a scratch file that is removed.
 *  1. The sequence that failed with MPI_ERR_OTHER: a collective access (deferral on), the
 *     file's first shared-pointer call, a set_view: the pointer is 0 after it on every rank,
 *     the next collective access succeeds everywhere, and the bytes land where the standard
 *     says.
 *  2. A random sequence (the seed's, the same on every rank) of set_view (alone and in runs
 *     longer than the counter slots), write_shared bursts by one rank, write_ordered,
 *     write_at_all, seek_shared and get_position_shared, checked against a model: every
 *     position, and the file byte for byte at the end. Nothing synchronizes a burst with the
 *     set_view after it, so a rank still writing in the old view meets ranks already in the
 *     new one. The file is opened anew every few steps, so pario's deferral starts again. Each view's shared writes have their own part of the file (disp 4 KiB apart)
 *     and collective writes go above 8 MiB, so the bytes do not depend on timing.
 * VIEWSHARED_TRACE=1 prints each step on every rank. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>

#include "harness.h"

static int rank, np;
static const char *comp;
static int kept; /* individual: writes kept until a merge, which is where the pointer moves */

static MPI_File open_with(const char *path) {
  MPI_Info info;
  MPI_File fh = MPI_FILE_NULL;
  MPI_Info_create(&info);
  MPI_Info_set(info, "pario_sharedfp", comp);
  int rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
  CHECK(rc == MPI_SUCCESS, "open %s: %s", path, err_text(rc));
  MPI_Info_free(&info);
  return fh;
}

/* The whole file as rank 0 sees it (stdio), compared with want[0, n). */
static void check_file(const char *path, const unsigned char *want, long n) {
  if (rank != 0) return;
  FILE *fp = fopen(test_local(path), "rb");
  CHECK(fp != NULL, "cannot open %s", path);
  if (!fp) return;
  unsigned char *got = calloc((size_t)n + 1, 1);
  long len = (long)fread(got, 1, (size_t)n + 1, fp);
  fclose(fp);
  CHECK(len == n, "file size %ld, want %ld", len, n);
  long bad = -1;
  for (long i = 0; i < n && i < len && bad < 0; i++)
    if (got[i] != want[i]) bad = i;
  CHECK(bad < 0, "byte %ld is %d, want %d", bad, bad < 0 ? 0 : got[bad], bad < 0 ? 0 : want[bad]);
  free(got);
}

static void check_pos(MPI_File fh, MPI_Offset want, const char *when) {
  MPI_Offset sp = -1;
  int rc = MPI_File_get_position_shared(fh, &sp);
  CHECK(rc == MPI_SUCCESS && sp == want, "%s: get_position_shared %lld (%s), want %lld", when, (long long)sp,
        err_text(rc), (long long)want);
}

/* 1. The exact sequence. */
static void exact(void) {
  char path[512];
  test_path(path, sizeof path, "viewshared_exact");
  MPI_File fh = open_with(path);
  char b[8];
  MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
  memset(b, 'a' + rank, 4);
  CHECK_ERR(MPI_File_write_at_all(fh, 100 + 4 * rank, b, 4, MPI_BYTE, MPI_STATUS_IGNORE), MPI_SUCCESS,
            "MPI_File_write_at_all", path);
  if (rank == 0) CHECK_ERR(MPI_File_write_shared(fh, "SHARED01", 8, MPI_BYTE, MPI_STATUS_IGNORE), MPI_SUCCESS,
                           "MPI_File_write_shared", path);
  CHECK_ERR(MPI_File_set_view(fh, 1000, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL), MPI_SUCCESS, "MPI_File_set_view",
            path);
  check_pos(fh, 0, "after the set_view");
  MPI_Barrier(MPI_COMM_WORLD); /* every rank read 0 before the last rank moves it */
  if (rank == np - 1) {
    CHECK_ERR(MPI_File_write_shared(fh, "new!", 4, MPI_BYTE, MPI_STATUS_IGNORE), MPI_SUCCESS, "MPI_File_write_shared", path);
    if (!kept) check_pos(fh, 4, "after a write_shared in the new view");
  }
  memset(b, 'A' + rank, 4);
  int rc = MPI_File_write_at_all(fh, 200 + 4 * rank, b, 4, MPI_BYTE, MPI_STATUS_IGNORE), bad = rc != MPI_SUCCESS, nbad;
  MPI_Allreduce(&bad, &nbad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  CHECK(nbad == 0, "the collective access after the set_view failed on %d ranks (%s)", nbad, err_text(rc));
  if (!kept) check_pos(fh, 4, "after the next collective access");
  CHECK_ERR(MPI_File_close(&fh), MPI_SUCCESS, "MPI_File_close", path);
  MPI_Barrier(MPI_COMM_WORLD);
  long n = 1200 + 4L * np;
  unsigned char *want = calloc((size_t)n, 1);
  memcpy(want, "SHARED01", 8);
  memcpy(want + 1000, "new!", 4);
  for (int r = 0; r < np; r++) {
    memset(want + 100 + 4 * r, 'a' + r, 4);
    memset(want + 1200 + 4 * r, 'A' + r, 4);
  }
  check_file(path, want, n);
  free(want);
  if (rank == 0) MPI_File_delete(path, MPI_INFO_NULL);
}

/* ---- 2. the random sequence ---- */

static uint64_t S; /* splitmix64, the same stream on every rank */
static uint64_t next(void) {
  uint64_t z = (S += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static int pick(int n) { return (int)(next() % (uint64_t)n); }

enum { PHASE = 4096, HI = 8 << 20, IMG = HI + (1 << 20) };
typedef struct { MPI_Offset disp; int es, blk, stride; } view;
static view V;
static int owner, phase, steps_done;
static MPI_Offset sp; /* the model's shared pointer, etypes */
static unsigned char *img;
static long img_len;

static MPI_Offset map(MPI_Offset p) { return V.disp + (p / V.blk) * V.stride * V.es + (p % V.blk) * V.es; }

static void fill(unsigned char *b, int len, int tag) {
  for (int i = 0; i < len; i++) b[i] = (unsigned char)(tag * 131 + i * 7 + 1);
}

/* The model: n etypes of b written at position p of the current view. */
static void model_write(MPI_Offset p, int n, const unsigned char *b) {
  for (int e = 0; e < n; e++) {
    MPI_Offset at = map(p + e);
    memcpy(img + at, b + (size_t)e * V.es, (size_t)V.es);
    if (at + V.es > img_len) img_len = (long)(at + V.es);
  }
}

static void new_view(MPI_File fh) {
  if (phase + 1 >= HI / PHASE) return; /* out of room: keep the view */
  phase++;
  V.disp = (MPI_Offset)phase * PHASE + pick(16);
  V.es = 1 + pick(4);
  V.blk = 1 + pick(3);
  V.stride = V.blk + pick(3);
  MPI_Datatype et, blk, ft;
  MPI_Type_contiguous(V.es, MPI_BYTE, &et);
  MPI_Type_contiguous(V.blk, et, &blk);
  MPI_Type_create_resized(blk, 0, (MPI_Aint)V.stride * V.es, &ft);
  MPI_Type_commit(&et);
  MPI_Type_commit(&ft);
  int rc = MPI_File_set_view(fh, V.disp, et, ft, "native", MPI_INFO_NULL);
  CHECK(rc == MPI_SUCCESS, "step %d: set_view: %s", steps_done, err_text(rc));
  MPI_Type_free(&et);
  MPI_Type_free(&blk);
  MPI_Type_free(&ft);
  sp = 0;
  owner = pick(np);
}

/* The owner's write_shared burst: nobody else moves the pointer meanwhile. */
static void burst(MPI_File fh) {
  int k = 1 + pick(4);
  for (int i = 0; i < k; i++) {
    int n = 1 + pick(4);
    unsigned char b[64];
    fill(b, n * V.es, steps_done * 64 + i);
    if (rank == owner) {
      int rc = MPI_File_write_shared(fh, b, n * V.es, MPI_BYTE, MPI_STATUS_IGNORE);
      CHECK(rc == MPI_SUCCESS, "step %d: write_shared: %s", steps_done, err_text(rc));
    }
    model_write(sp, n, b);
    sp += n;
    if (rank == owner) check_pos(fh, sp, "after write_shared");
  }
}

static void ordered(MPI_File fh) {
  int c[64], total = 0;
  for (int r = 0; r < np; r++) c[r] = pick(5);
  unsigned char b[64 * 4];
  for (int r = 0; r < np; r++) {
    fill(b, c[r] * V.es, steps_done * 64 + 32 + r);
    model_write(sp + total, c[r], b);
    total += c[r];
  }
  fill(b, c[rank] * V.es, steps_done * 64 + 32 + rank);
  int rc = MPI_File_write_ordered(fh, b, c[rank] * V.es, MPI_BYTE, MPI_STATUS_IGNORE);
  CHECK(rc == MPI_SUCCESS, "step %d: write_ordered: %s", steps_done, err_text(rc));
  sp += total;
  check_pos(fh, sp, "after write_ordered");
  MPI_Barrier(MPI_COMM_WORLD); /* every rank read the position before the next burst moves it */
}

static void at_all(MPI_File fh) {
  MPI_Offset base = ((HI - V.disp) / ((MPI_Offset)V.stride * V.es) + 1) * V.blk + pick(4096);
  int c[64];
  unsigned char b[64];
  for (int r = 0; r < np; r++) c[r] = 1 + pick(8);
  for (int r = 0; r < np; r++) {
    fill(b, c[r] * V.es, steps_done * 64 + 16 + r);
    model_write(base + 8 * r, c[r], b);
  }
  fill(b, c[rank] * V.es, steps_done * 64 + 16 + rank);
  int rc = MPI_File_write_at_all(fh, base + 8 * rank, b, c[rank] * V.es, MPI_BYTE, MPI_STATUS_IGNORE);
  CHECK(rc == MPI_SUCCESS, "step %d: write_at_all: %s", steps_done, err_text(rc));
}

static void seek(MPI_File fh) {
  int cur = pick(2);
  MPI_Offset off = cur ? pick(9) : pick(32);
  int rc = MPI_File_seek_shared(fh, off, cur ? MPI_SEEK_CUR : MPI_SEEK_SET);
  CHECK(rc == MPI_SUCCESS, "step %d: seek_shared: %s", steps_done, err_text(rc));
  sp = cur ? sp + off : off;
  check_pos(fh, sp, "after seek_shared");
  MPI_Barrier(MPI_COMM_WORLD);
}

/* One open of the file: a view, a collective access (pario's set_view defers from here: no
 * rank has used the shared pointer yet), every rank asks for the shared pointer (ROMIO's
 * set_view synchronizes only the ranks that have used it: without this, the native MPI-IO
 * itself lets a rank write in a new view before another's reset), then random steps. */
static void epoch(const char *path, int steps) {
  MPI_File fh = open_with(path);
  sp = 0;
  new_view(fh);
  at_all(fh);
  check_pos(fh, 0, "at open");
  MPI_Barrier(MPI_COMM_WORLD);
  for (int i = 0; i < steps; i++, steps_done++) {
    int op = pick(100);
    if (sp > 100) op = 85; /* keep each view's shared writes within its part of the file */
    if (getenv("VIEWSHARED_TRACE"))
      fprintf(stderr, "rank %d step %d op %d sp %lld owner %d view %lld/%d/%d/%d\n", rank, steps_done, op, (long long)sp, owner,
              (long long)V.disp, V.es, V.blk, V.stride);
    if (op < 20) new_view(fh);
    else if (op < 28) { /* a run of set_views, longer than the slots at times, a burst in each */
      for (int k = 2 + pick(9); k > 0; k--) {
        new_view(fh);
        if (pick(3)) burst(fh);
      }
    } else if (op < 53) burst(fh);
    else if (op < 65) ordered(fh);
    else if (op < 80) at_all(fh);
    else if (op < 90) seek(fh);
    else if (rank == owner) check_pos(fh, sp, "get_position_shared");
  }
  CHECK_ERR(MPI_File_close(&fh), MPI_SUCCESS, "MPI_File_close", path);
}

static void random_sequence(unsigned long long seed, int steps, const char *keep) {
  char path[512];
  if (keep) snprintf(path, sizeof path, "%s", keep);
  else test_path(path, sizeof path, "viewshared_random");
  if (rank == 0) remove(test_local(path));
  MPI_Barrier(MPI_COMM_WORLD);
  S = seed;
  img = calloc(IMG, 1);
  img_len = 0;
  phase = 0;
  steps_done = 0;
  while (steps_done < steps) epoch(path, 4 + pick(12));
  MPI_Barrier(MPI_COMM_WORLD);
  check_file(path, img, img_len);
  free(img);
  if (!keep && rank == 0) MPI_File_delete(path, MPI_INFO_NULL);
}

int main(int argc, char **argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided); /* addproc needs it */
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  t_rank = rank;
  if (argc < 4 || np > 64) {
    if (rank == 0) fprintf(stderr, "usage: mpi_viewshared COMPONENT SEED STEPS [KEEP-PATH] (at most 64 ranks)\n");
    MPI_Finalize();
    return 2;
  }
  comp = argv[1];
  kept = !strcmp(comp, "individual");
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN);
  exact();
  int steps = atoi(argv[3]);
  if (steps > 0) random_sequence(strtoull(argv[2], NULL, 10), steps, argc > 4 ? argv[4] : NULL);
  return finish("viewshared");
}
