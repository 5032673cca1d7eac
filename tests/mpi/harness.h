/* Tiny harness for pario's MPI tests: CHECK records a failure with its location on the rank
 * that saw it; finish() agrees on the result across ranks and returns the exit status. */
#ifndef PARIO_TEST_HARNESS_H
#define PARIO_TEST_HARNESS_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int t_fail, t_checks, t_rank;

#define CHECK(cond, ...)                                                  \
  do {                                                                    \
    t_checks++;                                                           \
    if (!(cond)) {                                                        \
      t_fail++;                                                           \
      fprintf(stderr, "rank %d FAIL %s:%d: ", t_rank, __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                                       \
      fprintf(stderr, "\n");                                              \
    }                                                                     \
  } while (0)

static inline int err_class(int code) {
  int c = code;
  if (code != MPI_SUCCESS) MPI_Error_class(code, &c);
  return c;
}

static inline const char *err_text(int code) {
  static char s[MPI_MAX_ERROR_STRING];
  int len = 0;
  s[0] = 0;
  MPI_Error_string(code, s, &len);
  return s;
}

static inline int names_file(const char *msg, const char *path) { return !path || strstr(msg, path) != NULL; }

/* The call failed with class cls and its message names op and (if given) path. */
#define CHECK_ERR(code, cls, op, path)                                                          \
  do {                                                                                          \
    int c_ = (code);                                                                            \
    CHECK(err_class(c_) == (cls), "%s: class %d, want %d (%s)", op, err_class(c_), (cls), err_text(c_)); \
    if (c_ != MPI_SUCCESS) {                                                                    \
      const char *m_ = err_text(c_);                                                            \
      CHECK(strstr(m_, op) != NULL, "message does not name %s: %s", op, m_);                   \
      CHECK(names_file(m_, path), "message does not name the file: %s", m_);                   \
    }                                                                                           \
  } while (0)

/* A per-run scratch path: $PARIO_TEST_DIR (or /tmp)/name.<pid of rank 0>. With
 * PARIO_TEST_URL set (x-rio://HOST:PORT of a pario-server whose root is $PARIO_TEST_DIR,
 * tests/rio/with-server.sh), the same file named on the server: $PARIO_TEST_URL/name.<pid>. */
static inline void test_path(char *buf, size_t n, const char *name) {
  const char *dir = getenv("PARIO_TEST_DIR"), *url = getenv("PARIO_TEST_URL");
  int pid = (int)getpid();
  MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
  snprintf(buf, n, "%s/%s.%d", url && *url ? url : dir && *dir ? dir : "/tmp", name, pid);
}

/* The local path of a test path, for checks that look at the file with stdio or stat: the
 * path itself, or below $PARIO_TEST_DIR for a name on the test's server. */
static inline const char *test_local(const char *path) {
  static char bufs[4][4200];
  static int next;
  const char *dir = getenv("PARIO_TEST_DIR"), *url = getenv("PARIO_TEST_URL");
  size_t ul = url ? strlen(url) : 0;
  if (!ul || strncmp(path, url, ul) != 0) return path;
  char *b = bufs[next++ % 4];
  snprintf(b, sizeof bufs[0], "%s%s", dir && *dir ? dir : "/tmp", path + ul);
  return b;
}

static inline int finish(const char *name) {
  int total = 0;
  MPI_Allreduce(&t_fail, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (t_rank == 0) printf("%s: %d checks on rank 0, %d failures on all ranks\n", name, t_checks, total);
  MPI_Finalize();
  return total != 0;
}

static inline void start(int *argc, char ***argv) {
  MPI_Init(argc, argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &t_rank);
}

#endif
