/* pario_timeout (core/comm.h): a collective call whose ranks wait for one that does not come.
 *   mpi_timeout HOW SECONDS LATE   HOW: info (the hint in MPI_File_open's info) or env (a
 *                                  PARIO_HINTS file this program writes); SECONDS: the hint's
 *                                  value (0: off); LATE: how long the last rank sleeps before
 *                                  it calls; nb: phases 1 and 2 are iwrite_at_all and
 *                                  MPI_Wait (phase 2 times out in the engine's thread);
 *                                  nbfirst: phase 2 only, the file's first nonblocking
 *                                  collective (its context's MPI_Comm_idup times out);
 *                                  ordered: phase 2 is MPI_File_write_ordered (lockedfile: the
 *                                  ranks' exclusive scan and broadcast), whose ranks on time
 *                                  must not write at a place they never learned (the shared
 *                                  pointer is 0: phase 1's bytes would be overwritten).
 * Phase 1: every rank writes its block with write_at_all (all on time: it must succeed) and
 * the bytes are read back. Phase 2: the last rank sleeps LATE s, then every rank calls an
 * aggregated write_at_all (romio_cb_write enable, a 4 KiB buffer).
 * With the timeout off, phase 2 succeeds on every rank and its bytes read back.
 * With it on (LATE > SECONDS): the ranks on time return MPI_ERR_OTHER, naming the call, the
 * file and pario_timeout, within SECONDS + 3 s (a loaded machine), not before SECONDS; the
 * late rank, which finds the others gone, returns the same error SECONDS after its own call
 * began (its first messages meet the others' pending ones, the next never come); a second
 * write_at_all, a set_view and a sync return MPI_ERR_OTHER at once (no new communication);
 * close returns the same error within 2 s; the file holds phase 1's bytes and none of phase
 * 2's (checked with POSIX reads, as pario's collective calls stay refused in this process:
 * an open on MPI_COMM_SELF fails at once too).
 * MPI_Finalize then returns (every rank reaches it; both MPIs). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "harness.h"

enum { B = 16 * 1024 };

static unsigned char pat(long long o, int k) { return (unsigned char)((o * 2654435761ULL) >> 11 ^ (k * 0x35)); }

static int timed_out(int rc, const char *op, const char *path) {
  return err_class(rc) == MPI_ERR_OTHER && strstr(err_text(rc), "pario_timeout") && strstr(err_text(rc), op) &&
         names_file(err_text(rc), path);
}

int main(int argc, char **argv) {
  start(&argc, &argv);
  int rank, np;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN); /* MPI_Wait's errors return */
  if (argc < 4 || argc > 5 || (strcmp(argv[1], "info") && strcmp(argv[1], "env")) ||
      (argc == 5 && strcmp(argv[4], "nb") && strcmp(argv[4], "nbfirst") && strcmp(argv[4], "ordered"))) {
    if (rank == 0) fprintf(stderr, "usage: mpi_timeout info|env SECONDS LATE [nb|nbfirst|ordered]\n");
    MPI_Finalize();
    return 2;
  }
  double sec = atof(argv[2]), late = atof(argv[3]);
  int ord = argc == 5 && !strcmp(argv[4], "ordered");
  int on = sec > 0, last = rank == np - 1, nb = argc == 5 && !ord, nb1 = nb && !strcmp(argv[4], "nb");
  const char *op2 = nb ? "MPI_File_iwrite_at_all" : ord ? "MPI_File_write_ordered" : "MPI_File_write_at_all";
  char path[4096], hints[4200];
  test_path(path, sizeof path, "timeout.dat");
  snprintf(hints, sizeof hints, "%s.hints.%d", path, rank);
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "romio_cb_write", "enable");
  MPI_Info_set(info, "cb_buffer_size", "4096");
  if (ord) MPI_Info_set(info, "pario_sharedfp", "lockedfile");
  if (!strcmp(argv[1], "info")) {
    MPI_Info_set(info, "pario_timeout", argv[2]);
  } else { /* each rank its own file: the ranks need not share /tmp */
    FILE *h = fopen(hints, "w");
    CHECK(h != NULL, "cannot write %s", hints);
    if (h) fprintf(h, "pario_timeout %s\n", argv[2]), fclose(h);
    setenv("PARIO_HINTS", hints, 1);
  }
  if (rank == 0) MPI_File_delete(path, MPI_INFO_NULL);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_File fh;
  int rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
  MPI_Info_free(&info);
  CHECK(rc == MPI_SUCCESS, "rank %d: open: %s", rank, err_text(rc));
  if (rc != MPI_SUCCESS) return finish("timeout");
  if (pario_serves()) {
    char v[32] = "";
    CHECK(pario_info_str(fh, "pario_timeout", v, sizeof v) && atof(v) == sec, "rank %d: pario_timeout is '%s', set %s",
          rank, v, argv[2]);
  }
  static unsigned char w[B], r[B];
  MPI_Offset at = (MPI_Offset)rank * B, at2 = (MPI_Offset)(np + rank) * B;
  for (int i = 0; i < B; i++) w[i] = pat(at + i, 1);
  if (nb1) { /* the nonblocking context exists before phase 2: its call times out in flight */
    MPI_Request rq;
    rc = MPI_File_iwrite_at_all(fh, at, w, B, MPI_BYTE, &rq);
    if (rc == MPI_SUCCESS) rc = MPI_Wait(&rq, MPI_STATUS_IGNORE);
  } else {
    rc = MPI_File_write_at_all(fh, at, w, B, MPI_BYTE, MPI_STATUS_IGNORE);
  }
  CHECK(rc == MPI_SUCCESS, "rank %d: phase 1 write: %s", rank, err_text(rc));
  rc = MPI_File_read_at(fh, at, r, B, MPI_BYTE, MPI_STATUS_IGNORE);
  CHECK(rc == MPI_SUCCESS && !memcmp(r, w, B), "rank %d: phase 1 read back: %s", rank, err_text(rc));
  MPI_Barrier(MPI_COMM_WORLD);
  /* phase 2: the last rank is late */
  if (last) usleep((useconds_t)(late * 1e6));
  for (int i = 0; i < B; i++) w[i] = pat(at2 + i, 2);
  double t0 = MPI_Wtime();
  if (nb) { /* the engine's thread runs the call; the error comes through MPI_Wait */
    MPI_Request rq;
    rc = MPI_File_iwrite_at_all(fh, at2, w, B, MPI_BYTE, &rq);
    if (rc == MPI_SUCCESS) rc = MPI_Wait(&rq, MPI_STATUS_IGNORE);
  } else if (ord) {
    rc = MPI_File_write_ordered(fh, w, B, MPI_BYTE, MPI_STATUS_IGNORE);
  } else {
    rc = MPI_File_write_at_all(fh, at2, w, B, MPI_BYTE, MPI_STATUS_IGNORE);
  }
  double dt = MPI_Wtime() - t0;
  printf("timeout: rank %d%s: %s returned after %.2f s: %s\n", rank, last ? " (late)" : "", op2, dt,
         rc == MPI_SUCCESS ? "success" : err_text(rc));
  if (!on || !pario_serves()) { /* off (or native): the late rank is waited for */
    CHECK(rc == MPI_SUCCESS, "rank %d: phase 2 write_at_all without a timeout: %s", rank, err_text(rc));
    CHECK(last || dt >= late * 0.9, "rank %d: phase 2 returned after %.2f s, before the late rank called", rank, dt);
    rc = MPI_File_read_at(fh, at2, r, B, MPI_BYTE, MPI_STATUS_IGNORE);
    CHECK(rc == MPI_SUCCESS && !memcmp(r, w, B), "rank %d: phase 2 read back: %s", rank, err_text(rc));
    rc = MPI_File_close(&fh);
    CHECK(rc == MPI_SUCCESS, "rank %d: close: %s", rank, err_text(rc));
  } else {
    CHECK(timed_out(rc, op2, path), "rank %d: phase 2: want MPI_ERR_OTHER naming "
          "pario_timeout, the call and the file: %s", rank, rc == MPI_SUCCESS ? "success" : err_text(rc));
    CHECK(dt >= sec * 0.9 && dt <= sec + 3, "rank %d: phase 2 failed after %.2f s, want %.1f to %.1f s", rank, dt,
          sec * 0.9, sec + 3);
    t0 = MPI_Wtime(); /* the file refuses collective calls at once from now on */
    rc = MPI_File_write_at_all(fh, at2, w, B, MPI_BYTE, MPI_STATUS_IGNORE);
    int rc2 = MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
    int rc3 = MPI_File_sync(fh);
    dt = MPI_Wtime() - t0;
    CHECK(timed_out(rc, "MPI_File_write_at_all", path), "rank %d: a second write_at_all: %s", rank,
          rc == MPI_SUCCESS ? "success" : err_text(rc));
    CHECK(err_class(rc2) == MPI_ERR_OTHER, "rank %d: set_view after the timeout: %s", rank,
          rc2 == MPI_SUCCESS ? "success" : err_text(rc2));
    CHECK(err_class(rc3) == MPI_ERR_OTHER, "rank %d: sync after the timeout: %s", rank,
          rc3 == MPI_SUCCESS ? "success" : err_text(rc3));
    CHECK(dt < 0.5, "rank %d: the calls after the timeout took %.2f s", rank, dt);
    t0 = MPI_Wtime();
    rc = MPI_File_close(&fh);
    dt = MPI_Wtime() - t0;
    printf("timeout: rank %d: close returned after %.2f s: %s\n", rank, dt,
           rc == MPI_SUCCESS ? "success" : err_text(rc));
    CHECK(dt < 2, "rank %d: close took %.2f s", rank, dt);
    CHECK(timed_out(rc, "MPI_File_close", path), "rank %d: close after the timeout: %s", rank,
          rc == MPI_SUCCESS ? "success" : err_text(rc));
    /* the process opens no file any more, not even alone: the latch is process-wide */
    MPI_File f2;
    t0 = MPI_Wtime();
    rc = MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &f2);
    dt = MPI_Wtime() - t0;
    CHECK(err_class(rc) == MPI_ERR_OTHER && dt < 0.5, "rank %d: open after the timeout: %s after %.2f s", rank,
          rc == MPI_SUCCESS ? "success" : err_text(rc), dt);
    if (rc == MPI_SUCCESS) MPI_File_close(&f2);
    /* phase 1's bytes intact, phase 2's not written (every aggregator lacked data) */
    int fd = open(path, O_RDONLY);
    CHECK(fd >= 0, "rank %d: cannot open %s", rank, path);
    for (int i = 0; i < B; i++) w[i] = pat(at + i, 1);
    CHECK(fd >= 0 && pread(fd, r, B, at) == B && !memcmp(r, w, B), "rank %d: phase 1's bytes changed", rank);
    for (int i = 0; i < B; i++) w[i] = pat(at2 + i, 2);
    CHECK(fd >= 0 && (pread(fd, r, B, at2) < B || memcmp(r, w, B)), "rank %d: phase 2's bytes were written", rank);
    if (fd >= 0) close(fd);
  }
  if (!strcmp(argv[1], "env")) unlink(hints);
  return finish("timeout");
}
