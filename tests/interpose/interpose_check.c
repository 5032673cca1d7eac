/* Inside a running rank, ask the dynamic linker which object serves each MPI-IO symbol the host's
 * mpi.h declares (MPI_ and PMPI_ names, list generated at build time). Under pario every one must
 * come from libpario: a missing definition falls through to the native MPI-IO, which would then
 * be handed a pario handle. Run natively, the same program asserts the opposite (all from libmpi).
 *
 * usage: interpose_check [--expect=pario|native|auto] [--verbose]
 *   auto (default): pario if pario_version is resolvable in the process, native otherwise.
 * Built twice: plain (for LD_PRELOAD and native runs) and with PARIO_INTERPOSE_LINKED, linked
 * against libpario (the -lpario-before--lmpi mode). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "mpiio_symbols.h"
#ifdef PARIO_INTERPOSE_LINKED
#include "pario.h"
#endif

#define NSYMS (sizeof pario_mpiio_symbols / sizeof pario_mpiio_symbols[0])
#define NAMELEN 96

enum expect { EXPECT_AUTO, EXPECT_PARIO, EXPECT_NATIVE };

/* Where one name resolved: the object's load base identifies it, the file name is for humans. */
struct served {
  char name[NAMELEN];
  const void *base; /* NULL when the name does not resolve at all */
  const char *file;
};

static int resolve(const char *name, struct served *s) {
  Dl_info info;
  snprintf(s->name, sizeof s->name, "%s", name);
  s->base = NULL;
  s->file = "(undefined)";
  void *addr = dlsym(RTLD_DEFAULT, name);
  if (addr == NULL) return 0;
  if (dladdr(addr, &info) == 0 || info.dli_fname == NULL) {
    s->file = "(no object found by dladdr)";
    return 0;
  }
  s->base = info.dli_fbase;
  s->file = info.dli_fname[0] ? info.dli_fname : "(main program)";
  return 1;
}

static int parse_args(int argc, char **argv, enum expect *expect, int *verbose) {
  *expect = EXPECT_AUTO;
  *verbose = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--expect=pario") == 0) *expect = EXPECT_PARIO;
    else if (strcmp(argv[i], "--expect=native") == 0) *expect = EXPECT_NATIVE;
    else if (strcmp(argv[i], "--expect=auto") == 0) *expect = EXPECT_AUTO;
    else if (strcmp(argv[i], "--verbose") == 0 || strcmp(argv[i], "-v") == 0) *verbose = 1;
    else {
      fprintf(stderr, "usage: %s [--expect=pario|native|auto] [--verbose]\n", argv[0]);
      return -1;
    }
  }
  return 0;
}

/* Print the offending names grouped by the object that serves them, so a report reads
 * "served by libmpi.so.40 (12): MPI_File_iread ..." rather than a bare count. */
static void report_groups(const struct served *bad, int nbad) {
  char *done = calloc((size_t)nbad + 1, 1);
  for (int i = 0; i < nbad; i++) {
    if (done[i]) continue;
    int n = 0;
    for (int j = i; j < nbad; j++)
      if (!done[j] && bad[j].base == bad[i].base && strcmp(bad[j].file, bad[i].file) == 0) n++;
    printf("  served by %s (%d):", bad[i].file, n);
    int col = 0, prev = 0;
    for (int j = i; j < nbad; j++) {
      if (done[j] || bad[j].base != bad[i].base || strcmp(bad[j].file, bad[i].file) != 0) continue;
      if (col++ % 3 == 0) printf("\n    ");
      else printf("%*s", prev < 36 ? 37 - prev : 1, "");
      prev = printf("%s", bad[j].name);
      done[j] = 1;
    }
    printf("\n");
  }
  free(done);
}

/* Environment checks for the mode under test; returns the number of problems found. */
static int check_setup(int rank, enum expect expect, const struct served *pario,
                       const struct served *mpi) {
  int problems = 0;
  if (expect == EXPECT_PARIO && pario->base == NULL) {
    if (rank == 0) printf("FAIL: pario_version does not resolve in this process: pario is not loaded\n");
    problems++;
  }
  if (expect == EXPECT_NATIVE && pario->base != NULL) {
    if (rank == 0) printf("FAIL: native run, but pario is loaded from %s\n", pario->file);
    problems++;
  }
  if (mpi->base == NULL) {
    if (rank == 0) printf("FAIL: MPI_Comm_rank does not resolve\n");
    problems++;
  }
  if (expect == EXPECT_PARIO && pario->base != NULL && pario->base == mpi->base) {
    if (rank == 0) printf("FAIL: pario and MPI_Comm_rank come from the same object %s\n", pario->file);
    problems++;
  }
#ifdef PARIO_INTERPOSE_LINKED
  /* This binary exists to test the link-time mode; a preload would hide what it should show. */
  const char *pre = getenv("LD_PRELOAD");
  if (pre != NULL && strstr(pre, "pario") != NULL) {
    if (rank == 0) printf("FAIL: link-mode test run with LD_PRELOAD=%s\n", pre);
    problems++;
  }
  if (expect == EXPECT_PARIO && pario->base != NULL) {
    const char *flav = pario_mpi_flavour();
    if (strcmp(flav, PARIO_TEST_FLAVOUR) != 0) {
      if (rank == 0) printf("FAIL: pario built for %s, test built for %s\n", flav, PARIO_TEST_FLAVOUR);
      problems++;
    }
  }
#else
  if (expect == EXPECT_PARIO && pario->base != NULL) {
    const char *(*flavour)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "pario_mpi_flavour");
    const char *flav = flavour ? flavour() : "(pario_mpi_flavour missing)";
    if (strcmp(flav, PARIO_TEST_FLAVOUR) != 0) {
      if (rank == 0) printf("FAIL: pario built for %s, test built for %s\n", flav, PARIO_TEST_FLAVOUR);
      problems++;
    }
  }
#endif
  return problems;
}

int main(int argc, char **argv) {
  enum expect expect;
  int verbose, rank, size;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (parse_args(argc, argv, &expect, &verbose) != 0) MPI_Abort(MPI_COMM_WORLD, 2);

  struct served pario, mpi;
  resolve("pario_version", &pario);
  resolve("MPI_Comm_rank", &mpi);
  if (expect == EXPECT_AUTO) expect = pario.base ? EXPECT_PARIO : EXPECT_NATIVE;
  const struct served *want = expect == EXPECT_PARIO ? &pario : &mpi;

  if (rank == 0) {
#ifdef PARIO_INTERPOSE_LINKED
    const char *how = "linked";
#else
    const char *how = getenv("LD_PRELOAD") && strstr(getenv("LD_PRELOAD"), "pario") ? "preload" : "plain";
#endif
    printf("interpose_check: %s binary, %d rank(s), expecting %s; MPI from %s; pario %s%s\n", how, size,
           expect == EXPECT_PARIO ? "pario" : "native", mpi.file, pario.base ? "from " : "not loaded",
           pario.base ? pario.file : "");
  }
  int problems = check_setup(rank, expect, &pario, &mpi);

  size_t total = 2 * NSYMS;
  struct served *bad = calloc(total, sizeof *bad);
  int nbad = 0;
  for (size_t i = 0; i < total; i++) {
    char name[NAMELEN];
    const char *api = pario_mpiio_symbols[i / 2];
    snprintf(name, sizeof name, "%s%s", i % 2 ? "P" : "", api);
    struct served s;
    resolve(name, &s);
    if (verbose && rank == 0) printf("  %-40s %s\n", name, s.file);
    if (s.base == NULL || want->base == NULL || s.base != want->base) bad[nbad++] = s;
  }

  int counts[2] = {nbad, problems}, max[2], nbad0 = nbad;
  MPI_Allreduce(counts, max, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Bcast(&nbad0, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    printf("interpose_check: %zu MPI-IO symbols (%zu MPI_ + %zu PMPI_ from mpi.h) checked\n", total,
           (size_t)NSYMS, (size_t)NSYMS);
    if (nbad > 0) {
      printf("FAIL: %d symbol(s) not served by %s:\n", nbad,
             expect == EXPECT_PARIO ? "libpario" : "the MPI library");
      report_groups(bad, nbad);
    }
  } else if (nbad != nbad0) {
    /* Ranks run the same binary, so they should agree; say so if one does not. */
    printf("rank %d: %d symbol(s) not served as expected (rank 0: %d)\n", rank, nbad, nbad0);
    if (nbad > 0) report_groups(bad, nbad);
  }
  int ok = max[0] == 0 && max[1] == 0;
  if (rank == 0) printf("interpose_check: %s\n", ok ? "PASS" : "FAIL");
  free(bad);
  MPI_Finalize();
  return ok ? 0 : 1;
}
