/* PARIO_LOG=1 lines of several ranks (and threads) writing to one stderr stay whole: every
 * rank's stderr goes to one O_APPEND file, each rank raises argv[1] (default 300) errors
 * from two threads at once (MPI_File_read_at at a negative offset), and rank 0 checks that
 * the file holds exactly one line per error, each "pario: MPI_File_read_at: ..." with the
 * prefix once. (A line written in pieces let another process's pieces in between:
 * "pario: pario: MPI_File_set_view: ..." in a client's log.) */
#define _GNU_SOURCE /* setenv */
#include <fcntl.h>
#include <pthread.h>

#include "harness.h"

static MPI_File fh;
static int per_thread;

static void *raise_errors(void *arg) {
  char buf[4];
  (void)arg;
  for (int i = 0; i < per_thread; i++) MPI_File_read_at(fh, -1, buf, 1, MPI_BYTE, MPI_STATUS_IGNORE);
  return NULL;
}

/* Rank 0: every line of the log is one whole message, and all are there. */
static void check_log(const char *log, int want) {
  FILE *fp = fopen(log, "r");
  char line[4096];
  int n = 0, bad = 0;
  CHECK(fp != NULL, "cannot read %s", log);
  while (fp && fgets(line, sizeof line, fp)) {
    n++;
    int whole = !strncmp(line, "pario: MPI_File_read_at: ", 25) && strstr(line + 7, "pario: ") == NULL &&
                strchr(line, '\n') == line + strlen(line) - 1;
    if (!whole && bad++ < 3) CHECK(0, "log line %d not one whole message: %s", n, line);
  }
  if (fp) fclose(fp);
  CHECK(bad == 0, "%d of %d log lines broken", bad, n);
  CHECK(n == want, "%d log lines, want %d (one per error)", n, want);
}

int main(int argc, char **argv) {
  int provided, np;
  char path[512], log[600];
  setenv("PARIO_LOG", "1", 1);
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &t_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  per_thread = argc > 1 ? atoi(argv[1]) : 300;
  int threads = provided == MPI_THREAD_MULTIPLE ? 2 : 1;
  test_path(path, sizeof path, "pario-log");
  snprintf(log, sizeof log, "%s.stderr", path);
  if (t_rank == 0) remove(log);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &fh);
  int saved = dup(2), fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
  CHECK(fd >= 0 && saved >= 0, "cannot open %s", log);
  dup2(fd, 2);
  pthread_t th[2];
  for (int i = 0; i < threads; i++) pthread_create(&th[i], NULL, raise_errors, NULL);
  for (int i = 0; i < threads; i++) pthread_join(th[i], NULL);
  dup2(saved, 2);
  close(fd), close(saved);
  int all_threads = 0;
  MPI_Reduce(&threads, &all_threads, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (t_rank == 0) check_log(log, all_threads * per_thread);
  MPI_Barrier(MPI_COMM_WORLD);
  if (t_rank == 0) remove(log);
  MPI_File_close(&fh);
  return finish("log");
}
