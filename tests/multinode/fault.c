/* A fault in the middle of a collective write across namespace nodes (fault.sh drives it).
 *   nsfault FILE ROUNDS   phase 1: every rank writes its 64 KiB block of a known pattern at
 *                         rank * 64 KiB with MPI_File_write_at_all, MPI_File_sync, a barrier;
 *                         rank 0 then writes FILE.phase1 ("NP SERVED": served 1 when pario
 *                         serves the run). Phase 2: ROUNDS aggregated collective writes
 *                         (romio_cb_write enable, a 4 KiB collective buffer: many exchange
 *                         rounds per call, aggregators on every node) after phase 1's region;
 *                         rank 0 writes the round number to FILE.progress after each. fault.sh
 *                         kills a node or pulls a link during phase 2. A rank whose call fails
 *                         prints "nsfault: rank R round N CALL: class C (message)" and calls
 *                         MPI_Abort (the launcher tears the job down; a rank MPI_Abort has not
 *                         ended within 5 s exits 3 by itself: die_on); a phase 2 that ends
 *                         without a fault exits 2 (the fault came too late).
 *   PARIO_NS_FAULT_PHASE2=shared: the file is opened with pario_sharedfp=addproc and phase 2
 *                         is 64-byte write_shared records after phase 1's region (seek_shared
 *                         there first); rank 0 also checks that addproc's requests travel over
 *                         TCP and writes its PID as FILE.phase1's 4th field; fault.sh "server"
 *                         kills that process, the pointer server, alone.
 *   nsfault verify FILE NP   no MPI: phase 1's NP blocks hold the pattern (exit 0), else one
 *                         line naming the first wrong byte (exit 1). */
#include <errno.h>
#include <signal.h>
#include <unistd.h>

#include "../mpi/harness.h"

enum { B = 64 * 1024, B2 = 16 * 1024 };

static unsigned char pat(long long o) { return (unsigned char)((o * 2654435761ULL) >> 13 ^ 0x5a); }

static int verify(const char *file, int np) {
  FILE *f = fopen(file, "rb");
  if (!f) {
    fprintf(stderr, "nsfault verify: cannot open %s: %s\n", file, strerror(errno));
    return 1;
  }
  long long o = 0;
  int c;
  for (; o < (long long)np * B && (c = getc(f)) != EOF; o++)
    if (c != pat(o)) {
      fprintf(stderr, "nsfault verify: %s byte %lld is %d, phase 1 wrote %d (synced before the fault)\n", file, o, c,
              pat(o));
      fclose(f);
      return 1;
    }
  fclose(f);
  if (o < (long long)np * B) {
    fprintf(stderr, "nsfault verify: %s has %lld bytes, phase 1 synced %lld\n", file, o, (long long)np * B);
    return 1;
  }
  printf("nsfault verify: %s: phase 1's %lld bytes intact\n", file, o);
  return 0;
}

static int rank;

static void abort_overdue(int sig) {
  (void)sig;
  _exit(3);
}

/* A failed call: say so, and MPI_Abort. A rank cut off from the launcher (MPICH 4.0.2's hydra,
 * node2 with its link pulled: the proxy there cannot reach mpiexec) waits in MPI_Abort for
 * ever, for an answer that never comes; so an alarm first: a process that MPI_Abort has not
 * ended within ABORT_GRACE s ends itself (_exit 3), as a user's program should. */
enum { ABORT_GRACE = 5 };
static void die_on(int rc, int round, const char *call) {
  if (rc == MPI_SUCCESS) return;
  fprintf(stderr, "nsfault: rank %d round %d %s: class %d (%s)\n", rank, round, call, err_class(rc), err_text(rc));
  fflush(stderr);
  signal(SIGALRM, abort_overdue);
  alarm(ABORT_GRACE);
  MPI_Abort(MPI_COMM_WORLD, 3);
  _exit(3); /* MPI_Abort returned (it should not) */
}

static void note(const char *file, const char *suffix, const char *text) {
  char p[4200], tmp[4300];
  snprintf(p, sizeof p, "%s.%s", file, suffix);
  snprintf(tmp, sizeof tmp, "%s.tmp", p);
  FILE *f = fopen(tmp, "w");
  if (f) {
    fputs(text, f);
    fclose(f);
    rename(tmp, p);
  }
}

int main(int argc, char **argv) {
  if (argc == 4 && !strcmp(argv[1], "verify")) return verify(argv[2], atoi(argv[3]));
  if (argc != 3) {
    fprintf(stderr, "usage: nsfault FILE ROUNDS | nsfault verify FILE NP\n");
    return 2;
  }
  start(&argc, &argv);
  int np, rounds = atoi(argv[2]);
  const char *file = argv[1];
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  static unsigned char w[B], r[B];
  MPI_Offset at = (MPI_Offset)rank * B;
  for (int i = 0; i < B; i++) w[i] = pat(at + i);
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "romio_cb_write", "enable");
  MPI_Info_set(info, "cb_buffer_size", "4096");
  const char *p2 = getenv("PARIO_NS_FAULT_PHASE2");
  int shared = p2 && !strcmp(p2, "shared");
  if (shared) MPI_Info_set(info, "pario_sharedfp", "addproc");
  MPI_File fh;
  die_on(MPI_File_open(MPI_COMM_WORLD, file, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh), 0, "MPI_File_open");
  MPI_Info_free(&info);
  die_on(MPI_File_write_at_all(fh, at, w, B, MPI_BYTE, MPI_STATUS_IGNORE), 0, "MPI_File_write_at_all");
  die_on(MPI_File_sync(fh), 0, "MPI_File_sync");
  die_on(MPI_Barrier(MPI_COMM_WORLD), 0, "MPI_Barrier");
  die_on(MPI_File_read_at(fh, at, r, B, MPI_BYTE, MPI_STATUS_IGNORE), 0, "MPI_File_read_at");
  CHECK(!memcmp(r, w, B), "phase 1 read back differs from what rank %d wrote", rank);
  char tr[16], host[MPI_MAX_PROCESSOR_NAME] = "", host0[MPI_MAX_PROCESSOR_NAME] = "";
  int hl = 0;
  MPI_Get_processor_name(host, &hl);
  memcpy(host0, host, sizeof host);
  MPI_Bcast(host0, (int)sizeof host0, MPI_CHAR, 0, MPI_COMM_WORLD);
  /* the channel under test: addproc's lease over TCP (rank 0's server hands S from rank to
   * rank); without the lease (PARIO_ADDPROC_LEASE=0) requests over TCP to rank 0's server from
   * the ranks of other nodes, while the other ranks of rank 0's node add in its segment */
  const char *nl = getenv("PARIO_ADDPROC_LEASE");
  const char *want = !(nl && !strcmp(nl, "0")) ? "lease" : rank != 0 && !strcmp(host, host0) ? "shm" : "tcp";
  if (shared && pario_serves())
    CHECK(pario_info_str(fh, "pario_addproc_transport", tr, sizeof tr) && !strcmp(tr, want),
          "rank %d: pario_addproc_transport=%s, want %s", rank, tr, want);
  int fails = 0;
  MPI_Allreduce(&t_fail, &fails, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) {
    char s[64];
    snprintf(s, sizeof s, "%d %d %d %ld\n", np, pario_serves(), fails, (long)getpid());
    note(file, "phase1", s);
  }
  /* phase 2: the faulted one */
  if (shared) die_on(MPI_File_seek_shared(fh, (MPI_Offset)np * B, MPI_SEEK_SET), 0, "MPI_File_seek_shared");
  for (int k = 1; k <= rounds; k++) {
    memset(w, k & 0xff, B2);
    MPI_Offset at2 = (MPI_Offset)np * B + (MPI_Offset)(k % 8) * np * B2 + (MPI_Offset)rank * B2;
    if (shared)
      die_on(MPI_File_write_shared(fh, w, 64, MPI_BYTE, MPI_STATUS_IGNORE), k, "MPI_File_write_shared");
    else
      die_on(MPI_File_write_at_all(fh, at2, w, B2, MPI_BYTE, MPI_STATUS_IGNORE), k, "MPI_File_write_at_all");
    if (rank == 0) {
      char s[32];
      snprintf(s, sizeof s, "%d\n", k);
      note(file, "progress", s);
    }
  }
  if (rank == 0) fprintf(stderr, "nsfault: phase 2 ended (%d rounds) without a fault\n", rounds);
  MPI_File_close(&fh);
  MPI_Finalize();
  return 2;
}
