/* pario-bench: the parallel I/O experiments of pario's seed papers as one MPI program with
 * subcommands (overlap, cfs, noncontig, sharedfp, btio, remote, datarep, viewswitch,
 * metascale). Uses only the standard MPI-IO API, so the same binary measures the native
 * MPI-IO and pario (LD_PRELOAD=libpario.so). */
#include "bench.h"

#include <ctype.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const char *name, *what;
  int (*run)(int, char **);
  const char *usage;
} suite_entry;

static const suite_entry suites[] = {
    {"overlap", "nonblocking vs blocking writes with calibrated compute (Buettner 2007)", overlap_main, overlap_usage},
    {"cfs", "broadcast/partitioned/interleaved read and write (Nitzberg 1992)", cfs_main, cfs_usage},
    {"noncontig", "HPIO noncontiguous patterns, independent vs collective (PIOviz)", noncontig_main, noncontig_usage},
    {"sharedfp", "shared file pointer writes with a record checker (Vanegas 2013)", sharedfp_main, sharedfp_usage},
    {"btio", "BTIO-style 3-D field checkpoints: blocking, nonblocking, stage (RIO)", btio_main, btio_usage},
    {"remote", "transfer rate against clients and servers, blocking and pipelined (RIO)", remote_main, remote_usage},
    {"datarep", "doubles through native and external32 views: the cost of conversion (RIO)", datarep_main, datarep_usage},
    {"viewswitch", "HDF5-like collective writes with a view set and reset around each", viewswitch_main, viewswitch_usage},
    {"metascale", "bytes received per set_view and per collective write, and peak memory, against ranks", metascale_main,
     metascale_usage},
};
#define NSUITES (int)(sizeof suites / sizeof suites[0])

static void top_help(void) {
  printf("usage: pario-bench SUBCOMMAND [OPTIONS]   (launch with mpiexec; see bench/README.md)\n\n"
         "Parallel I/O experiments through the standard MPI-IO API: the same binary measures\n"
         "the native MPI-IO and pario (LD_PRELOAD=libpario.so).\n\nsubcommands:\n");
  for (int i = 0; i < NSUITES; i++) printf("  %-10s %s\n", suites[i].name, suites[i].what);
  printf("\n'pario-bench SUBCOMMAND --help' lists a subcommand's options;\n"
         "'pario-bench --version' prints pario's version and the MPI it was built for.\n");
}

#ifndef PARIO_BENCH_VERSION
#define PARIO_BENCH_VERSION "unknown"
#endif

/* --version: pario's version (the build's PROJECT_VERSION) and the MPI whose mpi.h this binary
 * was compiled with, e.g. "pario-bench 0.1.0 (built for MPICH 4.0.2)". Needs no MPI launch. */
static void print_version(void) {
  char mpi[64];
#if defined(OMPI_MAJOR_VERSION)
  snprintf(mpi, sizeof mpi, "Open MPI %d.%d.%d", OMPI_MAJOR_VERSION, OMPI_MINOR_VERSION,
           OMPI_RELEASE_VERSION);
#elif defined(I_MPI_VERSION)
  snprintf(mpi, sizeof mpi, "Intel MPI %s", I_MPI_VERSION);
#elif defined(MPICH_VERSION)
  snprintf(mpi, sizeof mpi, "MPICH %s", MPICH_VERSION);
#elif defined(MPI_ABI_VERSION) /* names no implementation: any MPI of the ABI runs it */
  snprintf(mpi, sizeof mpi, "the MPI standard ABI %d.%d", MPI_ABI_VERSION, MPI_ABI_SUBVERSION);
#else
  snprintf(mpi, sizeof mpi, "an MPI-%d.%d library", MPI_VERSION, MPI_SUBVERSION);
#endif
  printf("pario-bench %s (built for %s)\n", PARIO_BENCH_VERSION, mpi);
}

static const suite_entry *find_suite(const char *name) {
  for (int i = 0; i < NSUITES; i++)
    if (strcmp(name, suites[i].name) == 0) return &suites[i];
  return NULL;
}

/* Help does not need MPI: print it from the first process only (or when not launched). */
static int env_rank0(void) {
  const char *vars[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"};
  for (int i = 0; i < 3; i++) {
    const char *v = getenv(vars[i]);
    if (v) return atoi(v) == 0;
  }
  return 1;
}

static int wants_help(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) return 1;
  return 0;
}

/* overlap --api thread calls MPI from a second thread (the thesis's E_MPI_File_iwrite). */
static int thread_level_needed(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "overlap") != 0) return MPI_THREAD_FUNNELED;
  for (int i = 2; i < argc; i++)
    if (strcmp(argv[i], "--api=thread") == 0 ||
        (strcmp(argv[i], "--api") == 0 && i + 1 < argc && strcmp(argv[i + 1], "thread") == 0))
      return MPI_THREAD_MULTIPLE;
  return MPI_THREAD_FUNNELED;
}

/* "Open MPI v4.1.4, package: ..." -> "4.1.4"; "MPICH Version: 4.0.2" -> "4.0.2". */
static void short_version(const char *line, char *out, size_t n) {
  for (const char *p = line; *p; p++) {
    const char *q = (*p == 'v' || *p == 'V') ? p + 1 : p;
    if ((p == line || !isalnum((unsigned char)p[-1])) && isdigit((unsigned char)*q)) {
      size_t k = strspn(q, "0123456789.abcrgh");
      if (memchr(q, '.', k)) { snprintf(out, n, "%.*s", (int)k, q); return; }
    }
  }
  snprintf(out, n, "%.*s", (int)n - 1, line);
}

static void detect_impl(void) {
  const char *(*ver)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "pario_version");
  snprintf(B.impl, sizeof B.impl, "%s", ver ? "pario" : "native");
  snprintf(B.impl_version, sizeof B.impl_version, "%s", ver ? ver() : "");
  char lib[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(lib, &len);
  lib[strcspn(lib, "\r\n")] = 0;
  size_t o = 0; /* first line, whitespace runs collapsed */
  for (const char *p = lib; *p && o + 1 < sizeof B.mpi_version; p++)
    if (!isspace((unsigned char)*p) || (o > 0 && B.mpi_version[o - 1] != ' '))
      B.mpi_version[o++] = isspace((unsigned char)*p) ? ' ' : *p;
  B.mpi_version[o] = 0;
#ifdef PARIO_BENCH_FLAVOUR /* the flavour built for (bench/CMakeLists.txt) */
  snprintf(B.mpi, sizeof B.mpi, "%s", PARIO_BENCH_FLAVOUR);
#else
  snprintf(B.mpi, sizeof B.mpi, "%s", strstr(lib, "Open MPI") ? "openmpi"
                                      : strstr(lib, "MPICH")  ? "mpich"
                                                              : "unknown");
#endif
  if (!ver) short_version(B.mpi_version, B.impl_version, sizeof B.impl_version);
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--version") == 0) {
    if (env_rank0()) print_version();
    return 0;
  }
  const suite_entry *s = argc > 1 ? find_suite(argv[1]) : NULL;
  if (argc < 2 || (!s && wants_help(argc, argv))) {
    if (env_rank0()) top_help();
    return argc < 2 ? 2 : 0;
  }
  if (!s) {
    if (env_rank0()) fprintf(stderr, "pario-bench: unknown subcommand '%s' (try --help)\n", argv[1]);
    return 2;
  }
  if (wants_help(argc, argv)) {
    if (env_rank0()) fputs(s->usage, stdout);
    return 0;
  }
  int provided = 0, need = thread_level_needed(argc, argv);
  MPI_Init_thread(&argc, &argv, need, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &B.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &B.size);
  MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN);
  detect_impl();
  int rc = 0;
  if (need == MPI_THREAD_MULTIPLE && provided < MPI_THREAD_MULTIPLE) {
    say("pario-bench: overlap --api thread needs MPI_THREAD_MULTIPLE (got level %d)\n", provided);
    rc = 1;
  } else {
    rc = s->run(argc - 1, argv + 1);
  }
  if (rc == 0 && B.failures) rc = 1;
  if (B.failures) say("pario-bench: %d measurement(s) FAILED\n", B.failures);
  MPI_Finalize();
  return rc;
}
