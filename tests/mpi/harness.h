/* Tiny harness for pario's MPI tests: CHECK records a failure with its location on the rank
 * that saw it; finish() agrees on the result across ranks and returns the exit status. A run
 * proves which MPI-IO served it: pario where the launcher preloaded libpario (LD_PRELOAD names
 * libpario.so), the native one elsewhere; and a run that made no check at all fails. */
#ifndef PARIO_TEST_HARNESS_H
#define PARIO_TEST_HARNESS_H

#include <dlfcn.h>
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

/* The MPI library's version string, asked at run time: which implementation runs a test is
 * not in the header of the MPI standard ABI build. */
static inline const char *mpi_library(void) {
  static char v[MPI_MAX_LIBRARY_VERSION_STRING + 1];
  int len = 0;
  MPI_Get_library_version(v, &len);
  v[len >= 0 && len <= MPI_MAX_LIBRARY_VERSION_STRING ? len : 0] = 0;
  return v;
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

/* The libpario.so (or .so.N) entry of LD_PRELOAD, copied into buf: 1, or 0 when there is none. */
static inline int pario_preloaded(char *buf, size_t len) {
  const char *pre = getenv("LD_PRELOAD");
  for (const char *p = pre ? pre : ""; *p;) {
    size_t n = strcspn(p, " :");
    const char *base = p;
    for (const char *q = p; q < p + n; q++)
      if (*q == '/') base = q + 1;
    if ((size_t)(p + n - base) >= 11 && !strncmp(base, "libpario.so", 11) && (p + n - base == 11 || base[11] == '.')) {
      snprintf(buf, len, "%.*s", (int)n, p);
      return 1;
    }
    p += n;
    p += strspn(p, " :");
  }
  return 0;
}

/* Whether pario serves this process's MPI-IO: its own symbol is there, and (preloaded) the
 * MPI_File_open the program calls is the one of the preloaded libpario. POSIX dl calls only. */
static inline int pario_serves(void) {
  void *all = dlopen(NULL, RTLD_LAZY);
  int yes = all && dlsym(all, "pario_version") != NULL;
  char path[4096];
  if (yes && pario_preloaded(path, sizeof path)) {
    void *lib = dlopen(path, RTLD_LAZY);
    yes = lib && dlsym(lib, "MPI_File_open") == dlsym(all, "MPI_File_open");
    if (lib) dlclose(lib);
  }
  if (all) dlclose(all);
  return yes;
}

/* A string info key of fh's get_info into v (n bytes): 1, or 0 with v "(not set)". */
static inline int pario_info_str(MPI_File fh, const char *key, char *v, int n) {
  MPI_Info info;
  int flag = 0;
  MPI_File_get_info(fh, &info);
  MPI_Info_get(info, key, n - 1, v, &flag);
  MPI_Info_free(&info);
  if (!flag) snprintf(v, (size_t)n, "(not set)");
  return flag;
}

/* An integer info key of fh's get_info (pario's counters: pario_bytes_read_file,
 * pario_coll_aggregated, ...); a missing key fails a check and reads -1. */
static inline long long pario_info_ll(MPI_File fh, const char *key) {
  char v[64];
  int flag = pario_info_str(fh, key, v, (int)sizeof v);
  CHECK(flag, "get_info has no %s", key);
  return flag ? atoll(v) : -1;
}

/* Whether this run is meant to be pario's: the launcher preloaded it, or the program was linked
 * with -lpario (PARIO_TEST_LINKED=1). */
static inline int pario_expected(void) {
  const char *linked = getenv("PARIO_TEST_LINKED");
  char path[4096];
  return (linked && *linked == '1') || pario_preloaded(path, sizeof path);
}

static inline int finish(const char *name) {
  int checks = t_checks, all_checks = 0, total = 0, want = pario_expected();
  MPI_Allreduce(&checks, &all_checks, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (all_checks == 0 && t_rank == 0) {
    t_fail++;
    fprintf(stderr, "rank 0 FAIL %s: no check was made on any rank\n", name);
  }
  CHECK(pario_serves() == want, "%s: MPI-IO served by %s, but the launcher %s pario (LD_PRELOAD=%s)", name,
        pario_serves() ? "pario" : "the native MPI-IO", want ? "preloaded" : "did not preload",
        getenv("LD_PRELOAD") ? getenv("LD_PRELOAD") : "");
  MPI_Allreduce(&t_fail, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (t_rank == 0)
    printf("%s: %d checks on rank 0, %d failures on all ranks (MPI-IO: %s)\n", name, t_checks, total,
           want ? "pario" : "native");
  MPI_Finalize();
  return total != 0;
}

static inline void start(int *argc, char ***argv) {
  MPI_Init(argc, argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &t_rank);
}

#endif
