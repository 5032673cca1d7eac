/* addproc over TCP while a stranger attacks its listener (tcpattack.sh runs this beside
 * tests/mpi/tcpstranger.c). usage: tcpattack EXPECT HOLD_MS OPENED DONE
 * Opens a file with pario_sharedfp=addproc (PARIO_ADDPROC_TRANSPORT=tcp, rank 0 waits HOLD_MS
 * in the open while the stranger gets there first), creates OPENED, then writes rounds of
 * records with write_shared (a round every ROUND_MS at most) until the stranger has created DONE. Checks: the open took at most
 * HOLD_MS + OPEN_SLACK_MS (a stranger costs the ranks no wait), every rank reports transport
 * EXPECT (tcp, or mpi where the stranger took a rank's place: every rank falls back; any: the
 * same one on every rank), no
 * update took longer than UPDATE_MS, the shared pointer is exactly the records' total, and
 * every record is in the file exactly once, intact. */
#define _POSIX_C_SOURCE 200809L
#include <time.h>

#include "harness.h"

enum { PER_ROUND = 100, ROUND_MS = 5, MAX_S = 40, OPEN_SLACK_MS = 2500, UPDATE_MS = 2000 };

typedef struct { int rank, round, i, pad; long long check; } rec;

static long long sig(int rank, int round, int i) { return ((long long)rank << 40) ^ ((long long)round << 16) ^ i ^ 0x5eed; }

int main(int argc, char **argv) {
  start(&argc, &argv);
  int rank = t_rank, np;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  if (argc != 5) {
    if (rank == 0) fprintf(stderr, "usage: tcpattack EXPECT HOLD_MS OPENED DONE\n");
    MPI_Finalize();
    return 2;
  }
  const char *expect = argv[1], *opened = argv[3], *done = argv[4];
  double hold = atof(argv[2]) / 1000;
  char path[512], v[64];
  test_path(path, sizeof path, "pario-tcpattack");
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "pario_sharedfp", "addproc");
  MPI_File fh;
  double t = MPI_Wtime();
  int rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
  double open_s = MPI_Wtime() - t;
  MPI_Info_free(&info);
  CHECK(rc == MPI_SUCCESS, "open: %s", err_text(rc));
  if (rc != MPI_SUCCESS) return finish("tcpattack");
  CHECK(open_s <= hold + OPEN_SLACK_MS / 1000.0, "open took %.2f s, the hold %.2f s + %.1f s at most", open_s, hold,
        OPEN_SLACK_MS / 1000.0);
  MPI_Offset pos = -1; /* before set_view (which resets it): nothing a stranger sent counted */
  MPI_File_get_position_shared(fh, &pos);
  CHECK(pos == 0, "shared pointer %lld after the open", (long long)pos);
  pario_info_str(fh, "pario_addproc_transport", v, sizeof v);
  char v0[64];
  memcpy(v0, v, sizeof v);
  MPI_Bcast(v0, sizeof v0, MPI_CHAR, 0, MPI_COMM_WORLD);
  CHECK(!strcmp(v, v0), "get_info pario_addproc_transport=%s, rank 0's %s", v, v0);
  CHECK(!strcmp(v, expect) || (!strcmp(expect, "any") && (!strcmp(v, "tcp") || !strcmp(v, "mpi"))),
        "get_info pario_addproc_transport=%s, want %s", v, expect);
  MPI_Datatype rt;
  MPI_Type_contiguous(sizeof(rec), MPI_BYTE, &rt);
  MPI_Type_commit(&rt);
  MPI_File_set_view(fh, 0, rt, rt, "native", MPI_INFO_NULL);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    FILE *o = fopen(opened, "w");
    CHECK(o && fclose(o) == 0, "cannot create %s", opened);
  }
  int rounds = 0, more = 1;
  double worst = 0, began = MPI_Wtime();
  while (more) { /* rounds of records until the stranger is done */
    for (int i = 0; i < PER_ROUND; i++) {
      rec r = {rank, rounds, i, 0, sig(rank, rounds, i)};
      double t0 = MPI_Wtime();
      rc = MPI_File_write_shared(fh, &r, 1, rt, MPI_STATUS_IGNORE);
      double dt = MPI_Wtime() - t0;
      worst = dt > worst ? dt : worst;
      if (rc != MPI_SUCCESS) {
        CHECK(0, "write_shared round %d: %s", rounds, err_text(rc));
        break;
      }
    }
    rounds++;
    while (MPI_Wtime() - began < rounds * ROUND_MS / 1000.0) {
      struct timespec z = {0, 1000000};
      nanosleep(&z, NULL);
    }
    more = MPI_Wtime() - began < MAX_S && access(done, F_OK) != 0;
    MPI_Bcast(&more, 1, MPI_INT, 0, MPI_COMM_WORLD);
  }
  CHECK(worst * 1000 <= UPDATE_MS, "an update took %.0f ms (at most %d)", worst * 1000, UPDATE_MS);
  CHECK(rank || access(done, F_OK) == 0, "the stranger did not finish in %d s", MAX_S);
  MPI_File_sync(fh);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_File_sync(fh);
  long long total = (long long)rounds * np * PER_ROUND;
  MPI_File_get_position_shared(fh, &pos);
  CHECK(pos == total, "shared pointer %lld after %lld records", (long long)pos, total);
  if (rank == 0) { /* every record exactly once, intact */
    rec *all = calloc((size_t)total, sizeof *all);
    char *seen = calloc((size_t)total, 1);
    MPI_Status st;
    int got = 0;
    MPI_File_read_at(fh, 0, all, (int)total, rt, &st);
    MPI_Get_count(&st, rt, &got);
    long bad = got == total ? 0 : 1;
    for (long long k = 0; k < got && all && seen; k++) {
      rec *r = &all[k];
      int ok = r->rank >= 0 && r->rank < np && r->round >= 0 && r->round < rounds && r->i >= 0 && r->i < PER_ROUND &&
               r->check == sig(r->rank, r->round, r->i);
      if (!ok || seen[((long long)r->round * np + r->rank) * PER_ROUND + r->i]++) bad++;
    }
    CHECK(all && seen && bad == 0, "%ld of %lld records lost, duplicated or torn (read %d)", bad, total, got);
    printf("tcpattack: transport %s, open %.2f s (hold %.2f s), %lld records in %d rounds, slowest update %.1f ms\n", v,
           open_s, hold, total, rounds, worst * 1000);
    free(all);
    free(seen);
  }
  MPI_Type_free(&rt);
  MPI_File_close(&fh);
  if (rank == 0) MPI_File_delete(path, MPI_INFO_NULL);
  return finish("tcpattack");
}
